/*
 * predict — the performance model's core (predict.h has the equations):
 * which image a GPU runs, occupancy from ptxas's numbers, a step's work
 * turned into time, buckets as sums.
 *
 * Occupancy follows the CUDA occupancy rules: registers are allocated per
 * warp in units of 256 (a thread's count rounded up to 8), shared memory
 * per CTA in units of 128 bytes plus what the system reserves per CTA, and
 * the SM's limits on CTAs and threads apply.  A step whose CTA does not fit
 * at all is reported as an error, not timed.
 *
 * The memory side charges DRAM only: the weights a step reads, less the
 * share of the request's weights the L2 can keep from one request to the
 * next (at best its capacity beyond the activation arena, over the
 * weights: an optimal cache's hit rate on a cyclic stream), and the
 * activations only when the arena does not fit in the L2 (the share that
 * does not).  Bandwidth is shared by the SMs a step occupies: a grid of
 * fewer CTAs than SMs gets that fraction of it.
 */
#include "predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_kernels.h"
#include "predict_internal.h"

/* Fitted by tools/fit_perf_model.py (docs/performance-model.md). */
#define PREDICT_LAUNCH_CYCLES 4600.0
#define PREDICT_EFFICIENCY 0.34
/* Not fitted: the bytes per clock one SM draws from the L2, the A100's
 * published L2 read bandwidth (5120 bytes per clock, Ampere GA100
 * whitepaper) shared by its 108 SMs; used for the serial tail of a step
 * and, times the SMs a step occupies, for the L2 traffic of a GEMM's
 * tiles (every GPU: no other vendor figure is published). */
#define PREDICT_L2_BYTES_PER_CLK_SM (5120.0 / 108.0)
/* Not fitted: shared memory delivers 32 banks x 4 bytes per clock per SM
 * (CUDA C++ Programming Guide, every architecture from Volta on). */
#define PREDICT_SMEM_BYTES_PER_CLK 128.0

void predict_constants_default(predict_constants *k) {
    k->launch_cycles = PREDICT_LAUNCH_CYCLES;
    k->efficiency = PREDICT_EFFICIENCY;
    k->tensor_units = 0;
}

int predict_constants_parse(const char *s, predict_constants *k, diag *d) {
    char *copy = strdup(s ? s : ""), *save = NULL;
    if (!copy) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : 0.0;
        if (!strcmp(tok, "units=plan") || !strcmp(tok, "units=tensor")) k->tensor_units = tok[6] == 't';
        else if (!eq || end == eq + 1 || *end || !isfinite(v) || v < 0)
            rc = diag_set(d, DIAG_CODE_USAGE, "--model-constants: '%s' is not NAME=NUMBER (a number >= 0)", tok);
        else if (!strncmp(tok, "launch_cycles=", 14)) k->launch_cycles = v;
        else if (!strncmp(tok, "efficiency=", 11) && v > 0 && v <= 1) k->efficiency = v;
        else
            rc = diag_set(d, DIAG_CODE_USAGE,
                          "--model-constants: '%s': expected launch_cycles=N, efficiency=X (0 < X <= 1), "
                          "units=plan or units=tensor", tok);
    }
    free(copy);
    return rc;
}

const char *predict_unit_name(predict_unit u) {
    return u == PREDICT_UNIT_TENSOR ? "tensor" : u == PREDICT_UNIT_WARP_MMA ? "warp_mma" : "simt";
}

const char *predict_step_template(const plan *p, const sched_step *s) {
    return s->kind == SCHED_STEP_GEMM ? "cublaslt" : plan_kernel_kind_name(p->kernels[s->launch.kernel].spec.kind);
}

/* ------------------------------------------------------------ images */

/* The image the GPU runs, and the CUBIN whose ptxas numbers stand for it:
 * its own when it runs a CUBIN, else the newest CUBIN not newer than the
 * GPU (what its JIT'd code most resembles), else the oldest one. */
static void predict_images(const plan *p, const predict_gpu *g, int *image, int *stats, int *image_sm) {
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", g->major, g->minor);
    *image = plan_image_select(p, arch, g->major, g->minor, NULL, 0);
    *stats = -1;
    *image_sm = 0;
    if (*image >= 0) {
        const plan_image *im = &p->images[*image];
        *image_sm = plan_arch_number(im->arch, im->kind == PLAN_IMAGE_PTX ? "compute_" : "sm_");
        if (im->kind == PLAN_IMAGE_CUBIN) *stats = *image;
    }
    int cc = g->major * 10 + g->minor, best = -1, oldest = -1;
    for (int i = 0; *stats < 0 && i < p->nimages; i++) {
        int sm = p->images[i].kind == PLAN_IMAGE_CUBIN ? plan_arch_number(p->images[i].arch, "sm_") : -1;
        if (sm < 0) continue;
        if (sm <= cc && (best < 0 || sm > plan_arch_number(p->images[best].arch, "sm_"))) best = i;
        if (oldest < 0 || sm < plan_arch_number(p->images[oldest].arch, "sm_")) oldest = i;
    }
    if (*stats < 0) *stats = best >= 0 ? best : oldest;
}

/* ------------------------------------------------------------ occupancy */

int predict_ctas_per_sm(const predict_gpu *g, int threads, int registers, int smem) {
    int warps = (threads + 31) / 32, r = g->max_ctas_per_sm;
    if (warps * 32 > g->max_threads_per_sm) return 0;
    if (g->max_threads_per_sm / (warps * 32) < r) r = g->max_threads_per_sm / (warps * 32);
    if (registers > 0) {
        int per_warp = ((registers + 7) / 8 * 8 * 32 + 255) / 256 * 256;
        int by_regs = g->regs_per_sm / per_warp / warps;
        if (by_regs < r) r = by_regs;
    }
    int cta_smem = (smem + 127) / 128 * 128 + g->smem_reserved_per_cta;
    if (cta_smem > g->smem_reserved_per_cta && g->smem_per_sm / cta_smem < r) r = g->smem_per_sm / cta_smem;
    return r;
}

/* ------------------------------------------------------------ time */

/* Where a step runs: the GPU, the constants, the image and what the L2
 * holds.  A plan's bucket fills it from the plan; the lowering's question
 * (predict_candidate_step) from its own. */
typedef struct predict_ctx {
    const plan *p;               /* NULL: a candidate, before any plan exists */
    const predict_gpu *g;
    const predict_constants *k;
    int image_sm, stats;
    int seq_len;                 /* the bucket being modelled */
    double l2_share;             /* share of weight bytes served by the L2 */
    double act_dram;             /* share of activation bytes that go to DRAM */
} predict_ctx;

/* The unit's peak per SM; a tensor-core GEMM's is also bounded by what its
 * warps' operand reads from shared memory can feed (a warp tile of wm x wn
 * reads (wm + wn) elements per k for 2 wm wn FLOPs; 16 x 16 warp tiles
 * feed half of an A100's tensor cores).  Not for the library's path on a
 * GPU whose full rate needs warpgroup instructions (Hopper's wgmma,
 * Blackwell's tcgen05 read their operands from shared memory once per
 * warpgroup tile, not per warp). */
static double predict_peak_per_sm(const predict_gpu *g, const predict_work *w) {
    double tensor = g->tensor_tflops * 1e12 / g->sms, peak;
    if (w->unit == PREDICT_UNIT_SIMT) return g->fp32_lanes * 2.0 * g->clock_mhz * 1e6;
    peak = w->unit == PREDICT_UNIT_TENSOR ? tensor : tensor * g->warp_mma_share;
    double feed = w->smem_flops_per_byte * PREDICT_SMEM_BYTES_PER_CLK * g->clock_mhz * 1e6;
    int warpgroup = w->unit == PREDICT_UNIT_TENSOR && g->warp_mma_share < 1.0;
    return w->smem_flops_per_byte > 0 && !warpgroup && feed < peak ? feed : peak;
}

/* The work of a step turned into time; -1 if a CTA does not fit. */
static int predict_time(const predict_ctx *c, const predict_work *w, predict_step *out) {
    const predict_gpu *g = c->g;
    int r = predict_ctas_per_sm(g, w->threads, w->registers, w->smem);
    if (r < 1 || w->ctas < 1) return -1;
    long per_sm = (w->ctas + g->sms - 1) / g->sms;
    int reff = per_sm < r ? (int)per_sm : r, warps = (w->threads + 31) / 32;
    long waves = (w->ctas + (long)g->sms * reff - 1) / ((long)g->sms * reff);
    double cta_flops = w->cta_flops > 0 ? w->cta_flops : w->flops / (double)w->ctas;
    double busy = reff * warps / 4.0;
    double math = (double)waves * reff * cta_flops /
                  (predict_peak_per_sm(g, w) * c->k->efficiency * (busy < 1.0 ? busy : 1.0));
    double dram = w->weight_bytes * (1.0 - c->l2_share) + w->act_bytes * c->act_dram + w->extra_bytes;
    double share = (double)w->ctas / g->sms;
    double memory = dram / (g->dram_gbs * 1e9 * (share < 1.0 ? share : 1.0));
    double l2 = w->l2_bytes / (PREDICT_L2_BYTES_PER_CLK_SM * g->clock_mhz * 1e6 * g->sms * (share < 1.0 ? share : 1.0));
    if (l2 > memory) memory = l2;
    *out = (predict_step){.launch_us = w->launches * c->k->launch_cycles / g->clock_mhz,
                          .math_us = math * 1e6,
                          .memory_us = memory * 1e6,
                          .serial_us = w->serial_bytes / (PREDICT_L2_BYTES_PER_CLK_SM * g->clock_mhz),
                          .launches = w->launches,
                          .ctas = w->ctas,
                          .threads = w->threads,
                          .ctas_per_sm = r,
                          .waves = (int)waves,
                          .occupancy = (double)r * warps * 32 / g->max_threads_per_sm,
                          .unit = w->unit,
                          .flops = w->flops,
                          .dram_bytes = dram,
                          .weight_bytes = w->weight_bytes,
                          .registers = w->registers,
                          .tile_m = w->tile_m,
                          .tile_n = w->tile_n,
                          .split_k = w->split_k};
    if (out->occupancy > 1.0) out->occupancy = 1.0;
    out->us = out->launch_us + (out->math_us > out->memory_us ? out->math_us : out->memory_us) + out->serial_us;
    return 0;
}

/* ------------------------------------------------------------ steps */

/* Bytes of the weight blob a step reads (kernel: its arguments in WEIGHTS,
 * by the launch contract's extents; GEMM: its operands there), at most its
 * minimum bytes. */
static double predict_weight_bytes(const plan *p, const sched_step *s, int seq_len) {
    double w = 0;
    if (s->kind == SCHED_STEP_GEMM) {
        const sched_gemm *g = &s->gemm;
        double es = plan_dtype_size(g->ab_type);
        if (g->a.buf == SCHED_BUF_WEIGHTS) w += (double)g->m * (double)g->k * es * g->batch_count;
        if (g->b.buf == SCHED_BUF_WEIGHTS) w += (double)g->k * (double)g->n * es * g->batch_count;
        if (g->bias.buf == SCHED_BUF_WEIGHTS) w += (double)g->m * plan_dtype_size(g->bias_type);
    } else {
        kernel_arg a[KERNEL_MAX_ARGS];
        memset(a, 0, sizeof a);
        kernel_args_of(&p->kernels[s->launch.kernel].spec, seq_len, a);
        for (int i = 0; i < s->launch.nargs; i++)
            if (s->launch.args[i].buf == SCHED_BUF_WEIGHTS) w += (double)a[i].bytes;
    }
    return w < (double)s->min_hbm_bytes ? w : (double)s->min_hbm_bytes;
}

/* The work of one of bertc's kernels: its kind's row, its launch, its
 * ptxas numbers (registers < 0: unknown), its FLOPs and bytes. */
static int predict_kernel_work(const predict_ctx *c, const kernel_spec *spec, const kernel_launch_dims *dm,
                               int registers, int smem_static, const predict_work *base, predict_work *w, diag *d) {
    const predict_kind *row = predict_kind_of(spec->kind);
    kernel_geometry geo;
    if (!row) return diag_set(d, DIAG_CODE_INTERNAL, "the performance model has no row for kernel kind %s",
                              plan_kernel_kind_name(spec->kind));
    if (kernel_geometry_of(spec, &geo, d)) return -1;
    *w = *base;
    w->unit = row->unit(spec, &geo, c->image_sm);
    if (c->k->tensor_units && row->unit(spec, &geo, 1000) != PREDICT_UNIT_SIMT) w->unit = PREDICT_UNIT_TENSOR;
    w->ctas = (long)dm->grid[0] * dm->grid[1] * dm->grid[2];
    w->threads = (int)(dm->block[0] * dm->block[1] * dm->block[2]);
    w->registers = registers > 0 ? registers : -1;
    w->smem = (int)dm->shared_bytes + smem_static;
    w->launches = 1;
    if (row->adjust) row->adjust(spec, &geo, w);
    return 0;
}

static int predict_kernel_time(const predict_ctx *c, const char *name, const predict_work *w, predict_step *out,
                               diag *d) {
    if (predict_time(c, w, out))
        return diag_set(d, DIAG_CODE_INPUT, "step %s: a CTA of %d threads, %d registers, %d bytes of shared memory "
                        "does not fit an SM of the %s", name, w->threads, w->registers, w->smem, c->g->part);
    return 0;
}

static int predict_kernel_step(const predict_ctx *c, const sched_step *s, predict_step *out, diag *d) {
    const plan_kernel *pk = &c->p->kernels[s->launch.kernel];
    const plan_kernel_stats *st = c->stats >= 0 ? &c->p->images[c->stats].stats[s->launch.kernel] : NULL;
    predict_work base = {.flops = s->flops}, w;
    base.weight_bytes = predict_weight_bytes(c->p, s, c->seq_len);
    base.act_bytes = (double)s->min_hbm_bytes - base.weight_bytes;
    if (predict_kernel_work(c, &pk->spec, &s->launch.dims, st ? st->registers : -1, st ? st->shared_static : 0,
                            &base, &w, d))
        return -1;
    return predict_kernel_time(c, s->name, &w, out, d);
}

/* The best of cuBLASLt's plausible candidates. */
static int predict_gemm_best(const predict_ctx *c, const char *name, const sched_gemm *gm, double flops,
                             double weights, double min_bytes, predict_step *out, diag *d) {
    const predict_tile *tiles;
    const int *splits;
    int nt = predict_gemm_tiles(&tiles), ns = predict_gemm_splits(&splits), found = 0;
    for (int t = 0; t < nt; t++)
        for (int k = 0; k < ns; k++) {
            if (splits[k] > 1 && gm->k / splits[k] < 64) continue;
            predict_work w = {.flops = flops, .weight_bytes = weights, .act_bytes = min_bytes - weights};
            predict_gemm_work(gm, &tiles[t], splits[k], c->image_sm, c->g, &w);
            predict_step cand;
            if (predict_time(c, &w, &cand)) continue;
            if (!found || cand.us < out->us) *out = cand;
            found = 1;
        }
    if (!found) return diag_set(d, DIAG_CODE_INTERNAL, "step %s: no cuBLASLt tile fits the %s", name, c->g->part);
    return 0;
}

static int predict_gemm_step(const predict_ctx *c, const sched_step *s, predict_step *out, diag *d) {
    return predict_gemm_best(c, s->name, &s->gemm, s->flops, predict_weight_bytes(c->p, s, c->seq_len),
                             (double)s->min_hbm_bytes, out, d);
}

/* ------------------------------------------------------------ candidates */

int predict_candidate_step(const predict_gpu *g, const predict_constants *k, const predict_candidate *cand,
                           predict_step *out, diag *d) {
    predict_ctx c = {.g = g, .k = k, .image_sm = cand->image_sm, .stats = -1, .l2_share = cand->l2_share};
    double weights = cand->weight_bytes < cand->min_bytes ? cand->weight_bytes : cand->min_bytes;
    memset(out, 0, sizeof *out);
    if (!cand->spec)
        return predict_gemm_best(&c, "candidate", cand->gemm, cand->flops, weights, cand->min_bytes, out, d);
    predict_work base = {.flops = cand->flops, .weight_bytes = weights, .act_bytes = cand->min_bytes - weights}, w;
    if (predict_kernel_work(&c, cand->spec, &cand->dims, cand->registers, cand->smem_static, &base, &w, d))
        return -1;
    return predict_kernel_time(&c, plan_kernel_kind_name(cand->spec->kind), &w, out, d);
}

/* ------------------------------------------------------------ buckets */

double predict_l2_share(const predict_gpu *g, double weights, double arena) {
    double l2 = g->l2_mb * 1e6, share = weights > 0 && l2 > arena ? (l2 - arena) / weights : 0.0;
    return share > 1.0 ? 1.0 : share;
}

static int predict_bucket_run(predict_ctx *c, const sched_bucket *b, predict_bucket *out, diag *d) {
    const predict_gpu *g = c->g;
    double weights = 0, l2 = g->l2_mb * 1e6, arena = (double)b->arena_bytes;
    c->seq_len = b->seq_len;
    for (int i = 0; i < b->nsteps; i++) weights += predict_weight_bytes(c->p, &b->steps[i], c->seq_len);
    c->l2_share = predict_l2_share(g, weights, arena);
    c->act_dram = arena > l2 ? (arena - l2) / arena : 0.0;
    out->seq_len = b->seq_len;
    out->max_seqs = b->max_seqs;
    out->l2_weight_share = c->l2_share;
    out->floor_us = weights * (1.0 - c->l2_share) / (g->dram_gbs * 1e9) * 1e6;
    out->steps = calloc((size_t)b->nsteps + 1, sizeof *out->steps);
    if (!out->steps) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (int i = 0; i < b->nsteps; i++) {
        const sched_step *s = &b->steps[i];
        predict_step *ps = &out->steps[out->nsteps];
        int rc = s->kind == SCHED_STEP_GEMM ? predict_gemm_step(c, s, ps, d) : predict_kernel_step(c, s, ps, d);
        if (rc) return -1;
        out->nsteps++;
        out->us += ps->us;
        out->launches += ps->launches;
        out->launch_us += ps->launch_us;
        if (ps->math_us > ps->memory_us) out->math_bound_us += ps->math_us;
        else out->memory_bound_us += ps->memory_us;
    }
    return 0;
}

int predict_plan(const plan *p, const predict_gpu *g, const predict_constants *k, predict_result *r, diag *d) {
    memset(r, 0, sizeof *r);
    r->gpu = g;
    r->k = *k;
    predict_ctx c = {.p = p, .g = g, .k = &r->k};
    predict_images(p, g, &r->image, &c.stats, &c.image_sm);
    r->stats_image = c.stats;
    if (r->image < 0) {
        char why[512], arch[16];
        snprintf(arch, sizeof arch, "sm_%d%d", g->major, g->minor);
        plan_image_select(p, arch, g->major, g->minor, why, sizeof why);
        return diag_set(d, DIAG_CODE_INPUT, "the %s would not run this plan: %s", g->part, why);
    }
    r->variant = plan_variant_for(p, g->major, g->minor);
    r->sched = plan_variant_buckets(p, r->variant);
    r->buckets = calloc((size_t)p->nbuckets + 1, sizeof *r->buckets);
    if (!r->buckets) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (int b = 0; b < p->nbuckets; b++) {
        int rc = predict_bucket_run(&c, &r->sched[b], &r->buckets[r->nbuckets++], d);
        if (rc) {
            predict_result_free(r);
            return -1;
        }
    }
    return 0;
}

void predict_result_free(predict_result *r) {
    for (int b = 0; r->buckets && b < r->nbuckets; b++) free(r->buckets[b].steps);
    free(r->buckets);
    r->buckets = NULL;
    r->nbuckets = 0;
}
