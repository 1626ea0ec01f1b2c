/*
 * test_emu_kernels_edges — the kernels' edge configurations against a C
 * reference, on the emulated device (test_emu_kernels covers the common
 * parameter sets; this file the paths it does not reach).
 *
 * test_kernels_compile proves the kernel text compiles for every GPU; this
 * proves it computes the right numbers.  Specs cover each dtype, awkward
 * sizes (hidden 97/80, head_dim 20, N = 30/65, K = 97/100/388), every GEMM
 * tile shape (64x128 ... 32x32) and k-loops long enough to wrap the
 * shared-memory ring, attention with one and several key tiles (with and
 * without MPNet's relative-position score bias), RoBERTa's position ids in
 * the embedding gather, and the
 * masking cases Hugging Face defines (random zeros; a row whose keys are
 * all masked averages V over k < len; padding keys hold NaN and must not
 * leak).  Attention runs every launch configuration its geometry has:
 * query tiles of 8 (half an mma tile), 16, 32 and 64 rows (one to four
 * query groups, four to one key slices per group), one and two K/V stages,
 * head sizes 16, 32, 64, 128 on tensor cores and 20 and float storage on
 * the SIMT passes, an odd bucket (the mask read word by word) and a ctx
 * stride that forbids 16-byte stores.  Outputs start poisoned (NaN), so a
 * padding row that is written, or a real row that is not, fails.  Every
 * kernel runs under two schedules, in two images: the emulator's full
 * feature set (mma m16n8k16 / ldmatrix / cp.async through the emulator
 * bodies) and, with BERTC_EMU_SM75 (and BERTC_GEMM_FORCE_SIMT), exactly
 * what sm_75 offers: float16 attention on pairs of mma m16n8k8, bfloat16
 * attention and the GEMMs on their SIMT paths.  The
 * reference of each kind (support/kref.c, shared with the other kernel
 * tests) computes in double from the same rounded inputs; tolerances
 * are per dtype (float 2e-5, float16 2e-3, bfloat16 1.6e-2, relative to
 * |expected| + a small absolute floor).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emu_build.h"
#include "emu.h"
#include "kernels.h"
#include "kimage.h"
#include "kref.h"

/* Device buffers: 256-aligned like the runtime's arena, exact size so the
 * sanitizer sees any overrun. */
static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 256, n ? n : 1)) abort();
    return p;
}

static void *tensor(plan_dtype t, size_t n, double scale, double offset) {
    void *p = xalloc(n * kref_dtype_size(t));
    for (size_t i = 0; i < n; i++) kref_store(t, p, i, (float)(offset + scale * (2.0 * check_rng_uniform() - 1.0)));
    return p;
}

static void *poisoned(plan_dtype t, size_t n) {
    void *p = xalloc(n * kref_dtype_size(t));
    memset(p, 0xff, n * kref_dtype_size(t));
    return p;
}

static double tol_of(plan_dtype t) { return t == PLAN_DTYPE_F32 ? 2e-5 : t == PLAN_DTYPE_F16 ? 2e-3 : 1.6e-2; }


/* compare out rows < len against ref; rows >= len must stay poisoned */
static void compare(const char *what, plan_dtype t, const void *out, const double *ref, int rows, int cols, int ld_,
                    int len, double atol_scale) {
    double tol = tol_of(t), worst = 0;
    int bad = 0;
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            float v = kref_load(t, out, (size_t)r * ld_ + c);
            if (r >= len) {
                if (!isnan(v)) {
                    if (bad++ < 3) fprintf(stderr, "    %s: padding row %d col %d written (%g)\n", what, r, c, v);
                }
                continue;
            }
            double e = ref[(size_t)r * cols + c];
            double err = fabs(v - e) / (atol_scale + fabs(e));
            if (!(err <= tol)) {
                if (bad++ < 3) fprintf(stderr, "    %s: [%d,%d] got %.7g want %.7g\n", what, r, c, v, e);
            }
            if (err > worst) worst = err;
        }
    }
    CHECK(bad == 0, "%s: %d bad values (worst relative error %.2e, tolerance %.1e)", what, bad, worst, tol);
}

static void launch(emu_image *im, const kernel_spec *s, int bucket, const char *entry, void **args, int sched) {
    kernel_launch_dims dm;
    diag d;
    diag_init(&d);
    kernel_dims(s, bucket, &dm, &d);
    if (emu_launch(im, entry, dm.grid, dm.block, dm.shared_bytes, args, (emu_schedule)sched, 7, &d) != EMU_STATUS_OK) {
        CHECK(0, "launch %s: %s", entry, d.text);
    }
}

static int *request(int bucket, int len, int vocab, int ntypes, double pmask0) {
    int *req = xalloc((size_t)(4 + 3 * bucket) * 4);
    req[KERNEL_REQ_LEN] = len;
    req[KERNEL_REQ_BUCKET] = bucket;
    req[2] = req[3] = 0;
    for (int s = 0; s < bucket; s++) {
        req[4 + s] = (int)(check_rng_uniform() * vocab * 1.1) - vocab / 20; /* some out of range: clamped */
        req[4 + bucket + s] = (int)(check_rng_uniform() * ntypes);
        req[4 + 2 * bucket + s] = check_rng_uniform() < pmask0 ? 0 : 1;
    }
    return req;
}

/* ------------------------------------------------------------ add_ln */
static void check_add_ln(emu_image *im, const kernel_spec *s, int S, const char *entry, int len, double scale,
                         int sched) {
    plan_dtype t = s->dtype;
    int H = s->hidden;
    void *x = tensor(t, (size_t)S * H, scale, scale * 0.3), *bias = tensor(t, H, 0.5, 0), *res = tensor(t, (size_t)S * H, scale, 0);
    void *gm = tensor(t, H, 0.2, 1.0), *bt = tensor(t, H, 0.3, 0);
    void *out = poisoned(t, (size_t)S * H);
    int *req = request(S, len, 10, 2, 0);
    void *nil = NULL;
    void *args[9] = {&out, &req, &x, &bias, &res, &gm, &bt, &nil, &nil};
    launch(im, s, S, entry, args, sched);
    double *ref = kref_kernel(s, req, (const void *const[]){x, bias, res, gm, bt});
    char what[300];
    snprintf(what, sizeof what, "%s len %d scale %g sched %d", entry, len, scale, sched);
    compare(what, t, out, ref, S, H, H, len, 1.0);
    free(x), free(bias), free(res), free(gm), free(bt), free(out), free(req), free(ref);
}

/* ------------------------------------------------------------ embed_ln */
static void check_embed_ln(emu_image *im, const kernel_spec *s, int S, const char *entry, int len, int sched) {
    plan_dtype t = s->dtype;
    int H = s->hidden;
    void *tab[3] = {NULL, NULL, NULL};
    for (int g = 0; g < s->ngathers; g++) tab[g] = tensor(t, (size_t)s->table_rows[g] * H, 0.5, 0);
    void *gm = tensor(t, H, 0.2, 1.0), *bt = tensor(t, H, 0.3, 0);
    void *out = poisoned(t, (size_t)S * H);
    int vocab = s->table_rows[0]; /* ids drawn for the input_ids table (small ones make the pad id frequent) */
    for (int g = 0; g < s->ngathers; g++)
        if (s->gather_index[g] == KERNEL_INDEX_INPUT_IDS) vocab = s->table_rows[g];
    int *req = request(S, len, vocab, 2, 0);
    void *nil = NULL;
    void *args[9] = {&out, &req, &tab[0], &tab[1], &tab[2], &gm, &bt, &nil, &nil};
    launch(im, s, S, entry, args, sched);
    double *ref = kref_kernel(s, req, (const void *const[]){tab[0], tab[1], tab[2], gm, bt});
    char what[300];
    snprintf(what, sizeof what, "%s len %d sched %d", entry, len, sched);
    compare(what, t, out, ref, S, H, H, len, 1.0);
    for (int gg = 0; gg < 3; gg++) free(tab[gg]);
    free(gm), free(bt), free(out), free(req), free(ref);
}

/* ------------------------------------------------------------ attention */
static void check_attention(emu_image *im, const kernel_spec *s, int S, const char *entry, int len, double pmask0,
                            int all_masked, int sched) {
    plan_dtype t = s->dtype;
    void *qkv = tensor(t, (size_t)S * s->qkv_ld, 1.5, 0);
    void *ctx = poisoned(t, (size_t)S * s->ctx_ld);
    int *req = request(S, len, 10, 2, pmask0);
    int *mask = req + 4 + 2 * S;
    if (all_masked)
        for (int k = 0; k < S; k++) mask[k] = 0;
    /* padding keys may hold anything: NaN there must not leak */
    for (int k = len; k < S; k++)
        for (int c = 0; c < s->qkv_ld; c++) kref_store(t, qkv, (size_t)k * s->qkv_ld + c, NAN);
    /* the score bias: a [heads, bias_ld, bias_ld] table, the bucket its top-left corner */
    void *bias = s->bias_ld ? tensor(t, (size_t)s->heads * s->bias_ld * s->bias_ld, 2.0, 0) : NULL;
    void *nil = NULL;
    void *args[6] = {&ctx, &req, &qkv, &bias, &nil, &nil};
    launch(im, s, S, entry, args, sched);
    double *ref = kref_kernel(s, req, (const void *const[]){qkv, bias});
    char what[300];
    snprintf(what, sizeof what, "%s len %d mask0 %.2f%s sched %d", entry, len, pmask0, all_masked ? " ALL-MASKED" : "", sched);
    compare(what, t, ctx, ref, S, (int)kref_cols(s), s->ctx_ld, len, 0.5);
    free(qkv), free(ctx), free(req), free(ref), free(bias);
}

/* ------------------------------------------------------------ gemm */
static void check_gemm(emu_image *im, const kernel_spec *s, int S, const char *entry, int len, int sched) {
    plan_dtype t = s->dtype;
    int N = s->n, K = s->k;
    void *x = tensor(t, (size_t)S * s->x_ld, 1.0, 0), *w = tensor(t, (size_t)N * K, 1.0 / sqrt(K), 0);
    void *bias = tensor(t, N, 0.5, 0), *res = tensor(t, (size_t)S * (s->res_ld ? s->res_ld : 1), 1.0, 0);
    void *out = poisoned(t, (size_t)S * s->out_ld);
    for (int r = len; r < S; r++)
        for (int c = 0; c < s->x_ld; c++) kref_store(t, x, (size_t)r * s->x_ld + c, NAN);
    int *req = request(S, len, 10, 2, 0);
    void *nil = NULL;
    void *args[8] = {&out, &req, &x, &w, &bias, &res, &nil, &nil};
    launch(im, s, S, entry, args, sched);
    double *ref = kref_kernel(s, req, (const void *const[]){x, w, bias, res});
    char what[300];
    snprintf(what, sizeof what, "%s len %d sched %d", entry, len, sched);
    compare(what, t, out, ref, S, N, s->out_ld, len, 0.5);
    free(x), free(w), free(bias), free(res), free(out), free(req), free(ref);
}


/* ------------------------------------------------------------ specs and images */

#define T_MAX KIMAGE_MAX_SPECS
static kimage_specs t_list;

static kernel_spec *t_add(kernel_kind kind, plan_dtype dt, int bucket) { return kimage_specs_add(&t_list, kind, dt, bucket); }

static void t_specs_init(void) {
    static const plan_dtype DT[3] = {PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16};
    if (t_list.n) return;
    static const int hs[5] = {96, 384, 97, 80, 2048};
    for (int i = 0; i < 5; i++) {
        kernel_spec *s = t_add(KERNEL_KIND_ADD_LN, DT[i % 3], 16 + 8 * i);
        s->hidden = hs[i];
        s->eps = 1e-5f;
        s->has_bias = i % 2 == 0;
        s->has_residual = i != 3;
    }
    kernel_spec *s = t_add(KERNEL_KIND_ADD_LN, PLAN_DTYPE_F16, 8); /* large values: float16 must not overflow */
    s->hidden = 1024;
    s->eps = 1e-12f;
    s->has_bias = s->has_residual = 1;
    for (int i = 0; i < 3; i++) {
        static const kernel_index order[3] = {KERNEL_INDEX_INPUT_IDS, KERNEL_INDEX_POSITION, KERNEL_INDEX_TOKEN_TYPES};
        static const int rows[3] = {50, 24, 2};
        s = t_add(KERNEL_KIND_EMBED_LN, DT[i], 24);
        s->hidden = i == 2 ? 1536 : 96 * (i + 1);
        s->eps = 1e-12f;
        s->ngathers = 3 - i;
        for (int g = 0; g < 3; g++) s->gather_index[g] = order[g], s->table_rows[g] = rows[g];
    }
    /* RoBERTa's position ids: a vocabulary of 8 makes the pad id 1 frequent */
    s = t_add(KERNEL_KIND_EMBED_LN, PLAN_DTYPE_F16, 40);
    s->hidden = 72;
    s->eps = 1e-5f;
    s->ngathers = 3;
    s->pad_id = 1;
    static const kernel_index rorder[3] = {KERNEL_INDEX_INPUT_IDS, KERNEL_INDEX_PAD_POSITION, KERNEL_INDEX_TOKEN_TYPES};
    static const int rrows[3] = {8, 42, 1};
    for (int g = 0; g < 3; g++) s->gather_index[g] = rorder[g], s->table_rows[g] = rrows[g];
    /* and with a block per row: the prefix count is a block sum over several warps */
    s = t_add(KERNEL_KIND_EMBED_LN, PLAN_DTYPE_F32, 48);
    s->hidden = 1100;
    s->eps = 1e-5f;
    s->ngathers = 2;
    s->pad_id = 1;
    s->gather_index[0] = KERNEL_INDEX_PAD_POSITION, s->table_rows[0] = 60;
    s->gather_index[1] = KERNEL_INDEX_INPUT_IDS, s->table_rows[1] = 8;
    /* dtype, bucket, heads, head_dim, query tile: every tensor-core split
     * (8: half a tile; 16: 1 x 4 warps; 32: 2 x 2; 64: 4 x 1), one stage
     * (head_dim 128) and two, the SIMT passes (float, head_dim 20), an odd
     * bucket (97: the mask word by word); the sixth has offset columns and
     * a ctx stride of h + 2 (no 16-byte stores) */
    static const int att[12][5] = {{0, 32, 2, 16, 8},    {1, 64, 3, 20, 16},  {2, 96, 2, 32, 32},
                                   {1, 160, 2, 64, 64},  {0, 48, 1, 128, 16}, {2, 40, 2, 64, 8},
                                   {1, 32, 2, 16, 8},    {2, 300, 2, 128, 32}, {1, 200, 1, 64, 16},
                                   {2, 130, 2, 32, 64},  {1, 97, 2, 64, 32},  {1, 96, 1, 128, 8}};
    for (int i = 0; i < 12; i++) {
        s = t_add(KERNEL_KIND_ATTENTION, DT[att[i][0]], att[i][1]);
        s->heads = att[i][2];
        s->head_dim = att[i][3];
        s->qtile = att[i][4];
        s->scale = 1.0f / sqrtf((float)s->head_dim);
        int h = s->heads * s->head_dim, pad = i == 5 ? 8 : 0;
        s->qkv_ld = 3 * h + pad;
        s->q_off = pad;
        s->k_off = pad + h;
        s->v_off = pad + 2 * h;
        s->ctx_ld = h + (i == 5 ? 2 : 0);
        /* MPNet's relative-position score bias on every query tile and both
         * paths: SIMT (float, head_dim 20), tensor cores (offset columns,
         * several key tiles, the odd bucket), a table of exactly the bucket
         * and longer ones (the bucket reads its top-left corner) */
        if (i == 0 || i == 1 || i == 3 || i == 5 || i == 8 || i == 10) s->bias_ld = att[i][1] + (i == 3 ? 0 : 24);
    }
    /* dtype, bucket, n, k, bias, residual, act (-1 none) */
    static const int gm[16][7] = {{1, 64, 200, 96, 1, 1, 0},     {2, 32, 200, 96, 1, 0, 1},
                                  {0, 48, 64, 96, 1, 1, 2},      {1, 96, 256, 128, 0, 0, 3},
                                  {0, 32, 65, 97, 1, 1, -1},     {1, 40, 30, 100, 0, 1, 1},
                                  {2, 128, 160, 64, 1, 1, -1},   {1, 512, 2048, 32, 1, 1, 0},
                                  {2, 512, 1024, 48, 1, 0, -1},  {0, 256, 1024, 40, 0, 1, 3},
                                  {0, 512, 2048, 16, 1, 1, 1},   {1, 256, 1024, 96, 1, 1, -1},
                                  {1, 64, 96, 512, 1, 1, 0},     {0, 32, 64, 400, 1, 0, 2},
                                  {2, 48, 40, 1000, 0, 1, -1},   {1, 40, 24, 388, 1, 1, 1}};
    for (int i = 0; i < 16; i++) {
        s = t_add(KERNEL_KIND_GEMM, DT[gm[i][0]], gm[i][1]);
        s->n = gm[i][2];
        s->k = gm[i][3];
        s->x_ld = s->k;
        s->out_ld = s->n;
        s->has_bias = gm[i][4];
        s->has_residual = gm[i][5];
        s->res_ld = s->has_residual ? s->n : 0;
        s->has_act = gm[i][6] >= 0;
        s->act = gm[i][6] >= 0 ? (plan_act)gm[i][6] : PLAN_ACT_GELU_ERF;
    }
}

static char *t_entries[T_MAX];
static emu_image *t_images[2];   /* [0] every feature, [1] what sm_75 has */
static int t_image_failed[2];

static void *t_image_load(const char *path, diag *d) { return emu_image_load(path, d); }

static emu_image *t_image(int simt) {
    if (t_images[simt] || t_image_failed[simt]) return t_images[simt];
    t_specs_init();
    char *texts[T_MAX] = {0};
    int ok = 1;
    for (int i = 0; i < t_list.n && ok; i++) {
        char *text, *entry;
        if (kimage_source(&t_list.s[i], i, &text, &entry) != 0) {
            ok = 0;
            break;
        }
        if (simt) {
            char *forced = kimage_prefixed("#define BERTC_GEMM_FORCE_SIMT 1\n#define BERTC_EMU_SM75 1\n", text);
            free(text);
            text = forced;
        }
        texts[i] = text;
        if (!t_entries[i])
            t_entries[i] = entry;
        else
            free(entry);
    }
    if (ok) {
        diag d;
        t_images[simt] = kimage_build(simt ? "emu_kernels_sm75.so" : "emu_kernels.so", (const char *const *)texts,
                                      t_list.n, t_image_load, &d);
        CHECK(t_images[simt] != NULL, "image build: %s", d.text);
    }
    for (int i = 0; i < t_list.n; i++) free(texts[i]);
    if (!t_images[simt]) t_image_failed[simt] = 1;
    return t_images[simt];
}

/* ------------------------------------------------------------ cases */

static const emu_schedule t_scheds[2] = {EMU_SCHEDULE_WARP_GREEDY, EMU_SCHEDULE_RANDOM};

static void t_run_kind(kernel_kind kind) {
    t_specs_init();
    for (int simt = 0; simt < 2; simt++) {
        emu_image *im = t_image(simt);
        if (!im) return;
        for (int si = 0; si < 2; si++) {
            int sched = (int)t_scheds[si];
            for (int i = 0; i < t_list.n; i++) {
                const kernel_spec *s = &t_list.s[i];
                const char *e = t_entries[i];
                int S = t_list.bucket[i];
                if (s->kind != kind) continue;
                switch (kind) {
                case KERNEL_KIND_ADD_LN:
                    check_add_ln(im, s, S, e, S, s->hidden == 1024 ? 300.0 : 2.0, sched);
                    check_add_ln(im, s, S, e, S / 2 + 1, 1.0, sched);
                    break;
                case KERNEL_KIND_EMBED_LN: check_embed_ln(im, s, S, e, S - 3, sched); break;
                case KERNEL_KIND_ATTENTION:
                    check_attention(im, s, S, e, S, 0.0, 0, sched);
                    check_attention(im, s, S, e, S - 5 > 0 ? S - 5 : 1, 0.3, 0, sched);
                    check_attention(im, s, S, e, S / 2 + 3, 0.0, 1, sched);
                    check_attention(im, s, S, e, 1, 0.0, 0, sched);
                    break;
                default:
                    if (S < 256) check_gemm(im, s, S, e, S, sched);
                    check_gemm(im, s, S, e, S >= 256 ? 70 : S / 2 + 1, sched);
                    break;
                }
            }
        }
    }
}

static void test_add_ln(void) { t_run_kind(KERNEL_KIND_ADD_LN); }
static void test_embed_ln(void) { t_run_kind(KERNEL_KIND_EMBED_LN); }
static void test_attention(void) { t_run_kind(KERNEL_KIND_ATTENTION); }
static void test_gemm(void) { t_run_kind(KERNEL_KIND_GEMM); }

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_add_ln);
    CHECK_CASE(test_embed_ln);
    CHECK_CASE(test_attention);
    CHECK_CASE(test_gemm);
    for (int i = 0; i < 2; i++)
        if (t_images[i]) emu_image_free(t_images[i]);
    for (int i = 0; i < T_MAX; i++) free(t_entries[i]);
    return check_summary();
}
