/*
 * lower_gemm — the compiler's choices for bertc's own GEMMs, in one place
 * (lower.h): whether a dense layer runs on cuBLASLt or on a generated
 * kernel, and the tile and split-K of a generated one.  Both are asked of
 * the performance model (compiler/model/predict.h), the same equations
 * `bertc inspect --predict` applies to the finished plan, so what the
 * compiler chose and what the report says can be checked against each
 * other.
 *
 * Which GPUs.  A plan serves every GPU of the architectures it is built
 * for, of a newer minor of one (the runtime's rule), and — on its
 * compute_90 PTX — of a newer major than all of them.  The chooser models
 * each such GPU of the model's table (the default architectures: T4, A10,
 * L4, L40S, A100, H100, H200, and the B200 on the PTX); a plan with no
 * CUBIN (the emulated device only, PTX only) is modelled on the A100 and
 * H100, the two reference GPUs.  Where one choice serves several
 * of them, a candidate's score is the sum over those GPUs of its
 * modelled µs over the best candidate's µs on the same GPU — 1.0 per GPU
 * where it is the best there — so no GPU's time dominates because it is
 * slow, and the winner is the candidate that loses least across them.
 * Ties (1e-9): the fewer splits, then the larger tile.  By default
 * (`bertc compile --tune all`) lower.c lowers once per compute capability
 * among those GPUs with a chooser for that capability's GPUs alone (plus
 * the compromise for the capabilities below the first, the emulated
 * device's among them): a step list per capability, the device picking
 * its own at run time, so no GPU pays for another's tiling.  `--tune
 * GPU,...` narrows the set to the GPUs named (each must run one of the
 * plan's architectures: lower_gemm_tune_check); `--tune none` keeps one
 * step list, the compromise, for every GPU.  Each list's tilings are
 * kernels of their own only where they differ in tile: the split count
 * and the load ring's depth are the launch's (kernel_gemm_splitk.c), so
 * the lists cost the cold compile a few texts, not one per choice.  A
 * plan runs everywhere its images do whatever it was tuned for.  A tuned
 * chooser also charges a candidate's FP32 partial sums their
 * DRAM round trip on a GPU where they would fill more than
 * LOWER_GEMM_L2_PARTIALS of its L2: the model takes a step's activations
 * to live in the L2, and without the charge L4 + L40S (one capability,
 * 48 and 96 MB of L2) got an s384 QKV split 12 ways, 42 MB of partials,
 * that the finished plan's model put at 4.6x the L4's own choice.  The
 * untuned compromise (--tune none) keeps to the model as it is: there
 * the T4's 4 MB would veto the splits that give the A100 and H100 their
 * full wave.  Each GPU's L2 is
 * taken to keep the share of the model's weights it would keep of a
 * request's (performance model, predict_l2_share): a small model's weights
 * stay in a large L2, and then a serial tail costs more than a short grid.
 *
 * The rule for the implementation (lower_steps.c applies it):
 *   - an epilogue cuBLASLt cannot compute with documented math (GELU erf or
 *     tanh, tanh) runs on a generated kernel at every fusion level: at the
 *     default level the better scored of GEMM_SPLITK's best tiling and the
 *     GEMM kind (whole-K tiles, its own choice), per bucket;
 *   - a LINEAR_LN (dense layer + residual + LayerNorm, default fusion only)
 *     runs on GEMM_LN when the model scores it at most as the chain it
 *     replaces, a cuBLASLt GEMM (the best of cuBLASLt's plausible tiles)
 *     and an ADD_LN kernel, over the same GPUs; otherwise on that chain, in
 *     this bucket only (`bertc inspect` shows each bucket's steps);
 *   - a dense layer cuBLASLt computes whole (no activation, or relu)
 *     stays there unless, at the default level without activation, the
 *     model scores GEMM_SPLITK's best tiling strictly better (the QKV
 *     projection at s128 on the A100s and Ampere/Ada GPUs: cuBLASLt's
 *     tiles leave SMs idle; on Hopper its wgmma is faster, and the sum
 *     over the plan's GPUs decides);
 *   - in a plan with token buckets every bucket keeps one implementation
 *     (GEMM_SPLITK, GEMM_LN, unsplit), so a request rounds alike alone and
 *     in a packed batch; the model chooses only the tiles there.
 *
 * Registers.  ptxas has not run when the lowering chooses, so a kernel's
 * registers are estimated from its tile: the FP32 accumulators per thread
 * (tile_m x tile_n x its k-groups over 128 threads) twice over — fragments and addresses
 * grow with the tile — plus 32; gemm_ln keeps at least 88 for its
 * LayerNorm tail.  Against ptxas on sm_80 (docs/performance.md's table)
 * the estimate is within 8 of every kernel bertc builds today;
 * `bertc inspect --predict` uses ptxas's numbers.  Static shared memory
 * is the family's declared bound (KERNEL_GSK_SMEM_STATIC): without it a
 * 40 KB ring looked like four CTAs per A100 SM, and the plan got three
 * and a second wave.
 *
 * Choices are remembered per spec (a lower_gemm_chooser lives for one
 * lowering): every layer asks the same question, and each answer costs
 * some thousands of model evaluations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"
#include "plan_kernels.h"
#include "predict.h"

#define GEMM_MAX_SPLITS 32
#define GEMM_TIE 1e-9

/* The architecture of the image g runs among `sms` (the newest of its
 * major, no newer minor), or -1 when none serves it.  A GPU of a newer
 * major than every architecture listed, sm_90 or newer among them, runs
 * the plan's compute_90 PTX (arch_plan_ptx, the runtime's image rule):
 * Blackwell on a plan for the default architectures, modelled on the
 * newest listed (predict.c: the numbers of the newest CUBIN below it). */
static int lower_gemm_served(const predict_gpu *g, const int *sms, int nsms) {
    int best = -1, newest = -1;
    for (int a = 0; a < nsms; a++) {
        if (sms[a] / 10 == g->major && sms[a] % 10 <= g->minor && sms[a] > best) best = sms[a];
        if (sms[a] > newest) newest = sms[a];
    }
    if (best < 0 && newest >= 90 && g->major > newest / 10) best = newest;
    return best;
}

/* Whether `name` is one of the comma-separated names of `list`. */
static int lower_gemm_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *at = list;; at++) {
        if (!strncmp(at, name, n) && (at[n] == ',' || at[n] == '\0')) return 1;
        if (!(at = strchr(at, ','))) return 0;
    }
}

void lower_gemm_chooser_init(lower_gemm_chooser *c, const int *sms, int nsms, const char *tune, double weight_bytes) {
    memset(c, 0, sizeof *c);
    c->charge_partials = tune != NULL;
    if (tune && !strcmp(tune, "all")) tune = NULL;
    predict_constants_default(&c->k);
    for (int i = 0; i < predict_gpu_count() && c->ngpus < LOWER_GEMM_MAX_GPUS; i++) {
        const predict_gpu *g = predict_gpu_at(i);
        int best = lower_gemm_served(g, sms, nsms);
        if (tune ? !lower_gemm_listed(tune, g->name) || (nsms > 0 && best < 0)
                 : nsms > 0 ? best < 0 : strcmp(g->name, "a100") && strcmp(g->name, "h100"))
            continue;
        c->gpus[c->ngpus] = g;
        c->l2_share[c->ngpus] = weight_bytes > 0 ? predict_l2_share(g, weight_bytes, 0.0) : 0.0;
        c->image_sm[c->ngpus++] = best >= 0 ? best : g->major * 10 + g->minor;
    }
}

void lower_gemm_chooser_keep_cc(lower_gemm_chooser *c, int cc) {
    int n = 0;
    for (int g = 0; g < c->ngpus; g++) {
        if (c->gpus[g]->major * 10 + c->gpus[g]->minor != cc) continue;
        c->gpus[n] = c->gpus[g];
        c->image_sm[n] = c->image_sm[g];
        c->l2_share[n++] = c->l2_share[g];
    }
    c->ngpus = n;
    c->nmemo = c->next = 0; /* the answers were for the GPUs before */
}

int lower_gemm_tune_check(const char *tune, const int *sms, int nsms, diag *d) {
    if (!tune || !strcmp(tune, "all")) return 0;
    const char *at = tune;
    for (;;) {
        const char *end = strchr(at, ',');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        char name[32];
        if (n == 0 || n >= sizeof name)
            return diag_set(d, DIAG_CODE_USAGE, "--tune: '%s' is not a comma-separated list of GPUs (known: %s)", tune,
                            predict_gpu_names());
        memcpy(name, at, n);
        name[n] = '\0';
        const predict_gpu *g = predict_gpu_find(name);
        if (!g) return diag_set(d, DIAG_CODE_USAGE, "--tune: '%s' is not a GPU of the performance model (known: %s)", name,
                                predict_gpu_names());
        if (lower_gemm_listed(end ? end + 1 : "", name))
            return diag_set(d, DIAG_CODE_USAGE, "--tune: %s is listed twice", name);
        if (nsms > 0 && lower_gemm_served(g, sms, nsms) < 0)
            return diag_set(d, DIAG_CODE_USAGE,
                            "--tune: %s (compute capability %d.%d) runs none of the plan's architectures (--arch): "
                            "add sm_%d%d",
                            name, g->major, g->minor, g->major, g->minor);
        if (!end) return 0;
        at = end + 1;
    }
}

/* The estimate the file's essay states (the tile from the geometry: the
 * GEMM kind chooses its own). */
static int lower_gemm_registers(const kernel_spec *s) {
    kernel_geometry g;
    diag quiet;
    diag_init(&quiet);
    if (kernel_geometry_of(s, &g, &quiet)) return -1;
    int r = 32 + 2 * (g.bm * g.bn * g.kgroups / 128);
    if (s->kind == KERNEL_KIND_GEMM_LN && r < 88) r = 88;
    return r > 255 ? 255 : r;
}

/* FLOPs, weight bytes and minimum bytes of a GEMM_SPLITK / GEMM_LN spec,
 * as lower_steps.c records them for the step. */
static void lower_gemm_work(const kernel_spec *s, double *flops, double *weights, double *min_bytes) {
    double es = plan_dtype_size(s->dtype), M = s->bucket, N = s->n, K = s->k;
    double ln = s->kind == KERNEL_KIND_GEMM_LN ? 2.0 : 0.0;
    *flops = 2.0 * M * N * K + (ln > 0 ? 8.0 * M * N : 0.0);
    *weights = es * (N * K + (s->has_bias ? N : 0) + ln * N);
    *min_bytes = *weights + es * (M * K + M * N + (s->has_residual ? M * N : 0));
}

/* Modelled µs of a tiled spec on every GPU of the chooser; -1 if a CTA
 * does not fit one of them or the contract refuses the launch. */
static int lower_gemm_times(const lower_gemm_chooser *c, const kernel_spec *s, double *us) {
    predict_candidate cand = {.spec = s, .registers = lower_gemm_registers(s), .smem_static = KERNEL_GSK_SMEM_STATIC};
    diag quiet;
    diag_init(&quiet);
    if (kernel_launch_dims_of(s, s->bucket, &cand.dims, &quiet)) return -1;
    lower_gemm_work(s, &cand.flops, &cand.weight_bytes, &cand.min_bytes);
    double partials = c->charge_partials ? predict_partial_bytes(s) : 0.0;
    for (int g = 0; g < c->ngpus; g++) {
        predict_step st;
        cand.image_sm = c->image_sm[g];
        cand.l2_share = c->l2_share[g];
        if (predict_candidate_step(c->gpus[g], &c->k, &cand, &st, &quiet)) return -1;
        us[g] = st.us;
        /* The model takes a candidate's partials to stay in the L2 (the
         * arena's place); past half of it they would crowd out the rest
         * of the arena and the weights, so a tuned choice makes them pay
         * their DRAM round trip — or an L4 (48 MB) is handed an L40S's
         * 42 MB of partials.  The default compromise does not: there the
         * T4's 4 MB would veto the splits that give the A100 and H100 a
         * full wave at s128 (the file's essay). */
        if (partials > c->gpus[g]->l2_mb * 1e6 * LOWER_GEMM_L2_PARTIALS)
            us[g] += 2.0 * partials / (c->gpus[g]->dram_gbs * 1e9) * 1e6;
    }
    return 0;
}

/* The candidate tilings of s (kept: those the contract accepts and every
 * GPU fits), with their times; their count. */
static int lower_gemm_candidates(const lower_gemm_chooser *c, const kernel_spec *s, kernel_spec *cands,
                                 double (*us)[LOWER_GEMM_MAX_GPUS], int cap) {
    static const int tms[] = {16, 32, 64, 128}, tns[] = {32, 64, 128};
    int ktiles = (s->k + 64 / plan_dtype_size(s->dtype) - 1) / (64 / plan_dtype_size(s->dtype)), n = 0;
    /* a caller may cap the splits (s->splits > 0 on entry): a plan with
     * token buckets asks for 1 (lower_steps.c, gemm_spec_of), and there
     * every tile must also sum a dot product in the same order — one
     * k-group of warps (kernel_gsk_kgroups) — or a sequence would round
     * differently alone and in a batch */
    int max_splits = s->splits > 0 && s->splits < GEMM_MAX_SPLITS ? s->splits : GEMM_MAX_SPLITS;
    int one_order = s->splits == 1;
    for (int a = 0; a < 4; a++) {
        /* a tile far taller than the rows only adds idle warps — unless
         * no shorter one is allowed (one summation order: no 16-row tile) */
        if (a > 0 && tms[a - 1] >= s->bucket && n > 0) break;
        for (int b = 0; b < 3; b++)
            for (int sp = 1; sp <= max_splits && sp <= ktiles && n < cap; sp++) {
                if (one_order && kernel_gsk_kgroups(tms[a], tns[b]) > 1) continue;
                kernel_spec t = *s;
                t.tile_m = tms[a];
                t.tile_n = tns[b];
                t.splits = sp;
                diag quiet;
                diag_init(&quiet);
                if (kernel_spec_check(&t, &quiet) || lower_gemm_times(c, &t, us[n])) continue;
                cands[n++] = t;
            }
    }
    return n;
}

/* Sum over the GPUs of us[g] / best[g] (the essay's score). */
static double lower_gemm_score(const lower_gemm_chooser *c, const double *us, const double *best) {
    double score = 0;
    for (int g = 0; g < c->ngpus; g++) score += us[g] / best[g];
    return score;
}

/* The winner among the candidates i with known(i) == only (all of them
 * when only < 0) by the essay's rule, its score in *score; -1 if none. */
static int lower_gemm_best(const lower_gemm_chooser *c, const kernel_spec *cands,
                           double (*us)[LOWER_GEMM_MAX_GPUS], const double *best, const char *known, int n, int only,
                           double *score_out) {
    int pick = -1;
    double pick_score = 0;
    for (int i = 0; i < n; i++) {
        if (only >= 0 && known[i] != only) continue;
        double score = lower_gemm_score(c, us[i], best);
        const kernel_spec *t = &cands[i], *b = pick >= 0 ? &cands[pick] : NULL;
        int better = !b || score < pick_score - GEMM_TIE ||
                     (fabs(score - pick_score) <= GEMM_TIE &&
                      (t->splits < b->splits ||
                       (t->splits == b->splits && t->tile_m * t->tile_n > b->tile_m * b->tile_n)));
        if (better) pick = i, pick_score = score;
    }
    *score_out = pick_score;
    return pick;
}

/* The winner among n candidates (the essay's rule, then LOWER_GEMM_SHARE:
 * the best of the texts the plan has, unless a new one is clearly
 * better); its index. */
static int lower_gemm_pick(const lower_gemm_chooser *c, const kernel_spec *cands, double (*us)[LOWER_GEMM_MAX_GPUS],
                           int n) {
    double best[LOWER_GEMM_MAX_GPUS], any_score, known_score;
    for (int g = 0; g < c->ngpus; g++) {
        best[g] = us[0][g];
        for (int i = 1; i < n; i++) best[g] = fmin(best[g], us[i][g]);
    }
    char *known = calloc((size_t)n, 1);
    int pick = lower_gemm_best(c, cands, us, best, known, n, -1, &any_score);
    if (known && c->known) {
        for (int i = 0; i < n; i++) known[i] = (char)(c->known(c->known_ctx, &cands[i]) != 0);
        int k = lower_gemm_best(c, cands, us, best, known, n, 1, &known_score);
        if (k >= 0 && known_score <= any_score * (1.0 + LOWER_GEMM_SHARE)) pick = k;
    }
    free(known);
    return pick;
}

static int lower_gemm_tiling_run(const lower_gemm_chooser *c, kernel_spec *s, double *us_out, diag *d) {
    enum { CAP = 4 * 3 * GEMM_MAX_SPLITS };
    kernel_spec *cands = malloc(CAP * sizeof *cands);
    double(*us)[LOWER_GEMM_MAX_GPUS] = malloc(CAP * sizeof *us);
    int n = cands && us ? lower_gemm_candidates(c, s, cands, us, CAP) : -1, rc = 0;
    if (n < 0) rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    else if (n == 0)
        rc = diag_set(d, DIAG_CODE_INPUT, "no tiling of %s fits its launch contract", plan_kernel_kind_name(s->kind));
    else {
        int pick = lower_gemm_pick(c, cands, us, n);
        *s = cands[pick];
        memcpy(us_out, us[pick], sizeof(double) * (size_t)c->ngpus);
    }
    free(cands);
    free(us);
    return rc;
}

int lower_gemm_tiling(lower_gemm_chooser *c, kernel_spec *s, double *us, diag *d) {
    for (int i = 0; i < c->nmemo; i++)
        if (!memcmp(&c->memo[i].in, s, sizeof *s)) {
            *s = c->memo[i].out;
            if (us) memcpy(us, c->memo[i].us, sizeof(double) * (size_t)c->ngpus);
            return 0;
        }
    kernel_spec in = *s, t = *s;
    double times[LOWER_GEMM_MAX_GPUS];
    if (lower_gemm_tiling_run(c, &t, times, d)) return -1;
    lower_gemm_memo *m = &c->memo[c->nmemo < LOWER_GEMM_MEMO ? c->nmemo++ : (c->next++ % LOWER_GEMM_MEMO)];
    m->in = in;
    m->out = t;
    memcpy(m->us, times, sizeof times);
    *s = t;
    if (us) memcpy(us, times, sizeof(double) * (size_t)c->ngpus);
    return 0;
}

/* ------------------------------------------------------------ GEMM_LN or the chain */

/* Modelled µs on GPU g of s's product on cuBLASLt (the best of its
 * plausible tiles), with s's bias and, unless `no_res`, its residual in
 * the epilogue; -1 if no tile fits. */
static int lower_gemm_cublas_us(const lower_gemm_chooser *c, int g, const kernel_spec *s, int no_res, double *us) {
    /* the same product as a plain GEMM_SPLITK: its FLOPs and bytes */
    kernel_spec plain = *s;
    plain.kind = KERNEL_KIND_GEMM_SPLITK;
    plain.has_residual = s->has_residual && !no_res;
    sched_gemm gm = {.m = s->n, .n = s->bucket, .k = s->k, .batch_count = 1, .ab_type = s->dtype};
    predict_candidate gemm = {.gemm = &gm, .image_sm = c->image_sm[g], .l2_share = c->l2_share[g]};
    lower_gemm_work(&plain, &gemm.flops, &gemm.weight_bytes, &gemm.min_bytes);
    predict_step st;
    diag quiet;
    diag_init(&quiet);
    if (predict_candidate_step(c->gpus[g], &c->k, &gemm, &st, &quiet)) return -1;
    *us = st.us;
    return 0;
}

/* Modelled µs of the chain a GEMM_LN replaces (a cuBLASLt GEMM with its
 * bias, an ADD_LN with the residual) on GPU g; -1 if it does not fit. */
static int lower_gemm_chain_us(const lower_gemm_chooser *c, int g, const kernel_spec *ln, double *us) {
    double es = plan_dtype_size(ln->dtype), M = ln->bucket, N = ln->n;
    kernel_spec a;
    memset(&a, 0, sizeof a);
    a.kind = KERNEL_KIND_ADD_LN;
    a.dtype = ln->dtype;
    a.hidden = ln->n;
    a.eps = ln->eps;
    a.has_residual = ln->has_residual;
    predict_candidate add = {.spec = &a, .registers = 64, .image_sm = c->image_sm[g], .flops = 8.0 * M * N,
                             .l2_share = c->l2_share[g]};
    add.weight_bytes = es * 2.0 * N;
    add.min_bytes = add.weight_bytes + es * M * N * (2.0 + ln->has_residual);
    predict_step s2;
    double gemm_us;
    diag quiet;
    diag_init(&quiet);
    if (lower_gemm_cublas_us(c, g, ln, 1, &gemm_us) || kernel_launch_dims_of(&a, ln->bucket, &add.dims, &quiet) ||
        predict_candidate_step(c->gpus[g], &c->k, &add, &s2, &quiet))
        return -1;
    *us = gemm_us + s2.us;
    return 0;
}

/* The essay's score of option a against option b (each modelled per GPU):
 * a's sum of ratios to the better of the two, minus b's. */
static double lower_gemm_versus(const lower_gemm_chooser *c, const double *a, const double *b) {
    double d = 0;
    for (int g = 0; g < c->ngpus; g++) d += (a[g] - b[g]) / fmin(a[g], b[g]);
    return d;
}

int lower_gemm_plain_wins(const lower_gemm_chooser *c, const kernel_spec *plain, const double *splitk_us) {
    double us[LOWER_GEMM_MAX_GPUS];
    if (lower_gemm_times(c, plain, us)) return 0;
    return lower_gemm_versus(c, us, splitk_us) < -GEMM_TIE;
}

int lower_gemm_own_wins(const lower_gemm_chooser *c, const kernel_spec *s, const double *own_us) {
    double lt[LOWER_GEMM_MAX_GPUS];
    for (int g = 0; g < c->ngpus; g++)
        if (lower_gemm_cublas_us(c, g, s, 0, &lt[g])) return 1;
    return lower_gemm_versus(c, own_us, lt) < -GEMM_TIE;
}

int lower_gemm_fuse_ln(const lower_gemm_chooser *c, const kernel_spec *ln, const double *fused_us) {
    double chain[LOWER_GEMM_MAX_GPUS];
    for (int g = 0; g < c->ngpus; g++)
        if (lower_gemm_chain_us(c, g, ln, &chain[g])) return 1;
    return lower_gemm_versus(c, fused_us, chain) <= GEMM_TIE;
}
