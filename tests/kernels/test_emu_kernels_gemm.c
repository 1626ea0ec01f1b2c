/*
 * test_emu_kernels_gemm — bertc's GEMM family (gemm_splitk, gemm_ln:
 * kernels_templates/gemm_splitk.cuh) on the emulated device, against the
 * C references of support/kref.c (kref_gemm; kref_gemm_ln = kref_gemm then
 * kref_add_ln, in double, sharing nothing with the kernels).
 *
 * What a split-K kernel with a last-arriver reduction can get wrong, and
 * how each is caught:
 *  - the arithmetic: every spec at several request lengths (1, just past a
 *    row tile, odd, the bucket), every split count of a K for each kind,
 *    tile edges (N and K not multiples of the tile, N = 100/120/65, K = 97
 *    /200), hidden sizes that are not multiples of 64 (96, 80), padded
 *    leading dimensions, every dtype, with and without bias and residual,
 *    each activation, compared per dtype (kref_tolerance);
 *  - determinism: each launch runs under four schedules (warp-greedy, two
 *    random seeds, reverse warp-greedy) whose block orders differ (the
 *    emulator runs blocks in a seeded permutation under the random
 *    schedule and in reverse under the reverse one), so a different block
 *    arrives last each time; the outputs must be bit-identical;
 *  - the counters: they start at zero and must be zero again after every
 *    launch (the next replay counts on it); the workspace starts as NaN
 *    (0xff bytes, as the emulated device fills new allocations), so a
 *    partial that is read before it is written shows;
 *  - padding: x and the residual hold NaN in rows >= len, the output
 *    starts NaN and its rows >= len must stay NaN; a canary after the
 *    output catches writes past its end;
 *  - the other paths of the same text: 16-bit specs again with
 *    BERTC_GEMM_FORCE_SIMT (float storage's path, and bf16 on sm_75), and
 *    fp16 specs with BERTC_EMU_SM75 (the emulator offers what sm_75 offers:
 *    the tensor-core path takes each k16 step as two m16n8k8, and the tile
 *    loads go without cp.async).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emu.h"
#include "kernels.h"
#include "kimage.h"
#include "kref.h"
#include "plan_kernels.h"

#define MAX_CASES 32
#define CANARY 64
#define CANARY_BYTE 0x5a

static kimage_case cases[MAX_CASES];
static int ncases;
static char build_error[4400];

/* ------------------------------------------------------------ specs */

static kernel_spec *gspec(kernel_kind kind, plan_dtype dt, int bucket, int n, int k, int tm, int tn, int splits) {
    if (ncases == MAX_CASES) abort();
    kimage_case *c = &cases[ncases++];
    memset(c, 0, sizeof *c);
    kernel_spec *s = &c->spec;
    c->bucket = bucket; /* the GEMM family keeps its rows: launched in its own bucket */
    *s = kimage_gemm_spec(kind, dt, bucket, n, k);
    s->res_ld = n; /* also read when a case turns the residual on */
    s->tile_m = tm;
    s->tile_n = tn;
    s->splits = splits;
    return s;
}

static void act(kernel_spec *s, plan_act a) {
    s->has_act = 1;
    s->act = a;
}

static void make_cases(void) {
    const plan_dtype F32 = PLAN_DTYPE_F32, F16 = PLAN_DTYPE_F16, BF16 = PLAN_DTYPE_BF16;
    kernel_spec *s;
    /* gemm_ln: tiny-bert's output projection (96 x 96: three fp16 k-tiles),
     * every split: one text whose launches take rings of 4, 3 and 2 stages,
     * one of them unsplit (the split count and the ring are the grid's) */
    for (int p = 1; p <= 3; p++) gspec(KERNEL_KIND_GEMM_LN, F16, 64, 96, 96, 16, 64, p);
    s = gspec(KERNEL_KIND_GEMM_LN, F32, 32, 80, 200, 32, 32, 4);        /* FC2 of hidden 80, intermediate 200 */
    s->res_ld = 88;
    s = gspec(KERNEL_KIND_GEMM_LN, BF16, 48, 64, 160, 32, 64, 2);       /* hidden 64, intermediate 160 */
    s->x_ld = 168;
    s->out_ld = 72;
    s = gspec(KERNEL_KIND_GEMM_LN, F16, 128, 256, 384, 64, 64, 3);      /* several tiles per row block */
    s = gspec(KERNEL_KIND_GEMM_LN, BF16, 40, 100, 97, 16, 64, 2);       /* ragged N, K; scalar pieces */
    s->out_ld = 104;
    s = gspec(KERNEL_KIND_GEMM_LN, F16, 32, 120, 64, 32, 128, 1);       /* no bias, no residual */
    s->has_bias = s->has_residual = 0;
    s = gspec(KERNEL_KIND_GEMM_LN, F32, 64, 96, 96, 128, 32, 6);        /* a tile taller than the bucket */

    /* gemm_splitk: tiny-bert's FC1 + GELU, every split of its three k-tiles (one text) */
    for (int p = 1; p <= 3; p++) act(gspec(KERNEL_KIND_GEMM_SPLITK, F16, 64, 200, 96, 32, 64, p), PLAN_ACT_GELU_ERF);
    s = gspec(KERNEL_KIND_GEMM_SPLITK, F32, 32, 160, 80, 16, 64, 5);    /* every k-tile its own split */
    act(s, PLAN_ACT_TANH);
    s->has_residual = 1;
    s->res_ld = 168;
    act(gspec(KERNEL_KIND_GEMM_SPLITK, BF16, 1, 96, 96, 16, 64, 3), PLAN_ACT_TANH);  /* a pooler: one row */
    s = gspec(KERNEL_KIND_GEMM_SPLITK, F16, 128, 120, 64, 64, 128, 2);  /* N = 120: unaligned chunks */
    act(s, PLAN_ACT_GELU_TANH);
    s = gspec(KERNEL_KIND_GEMM_SPLITK, BF16, 256, 256, 128, 128, 64, 2);
    act(s, PLAN_ACT_GELU_ERF);
    s->has_residual = 1;
    s = gspec(KERNEL_KIND_GEMM_SPLITK, F32, 64, 65, 97, 32, 32, 2);     /* odd everything */
    act(s, PLAN_ACT_RELU);
    s->x_ld = 101;
    s = gspec(KERNEL_KIND_GEMM_SPLITK, F16, 64, 200, 96, 16, 128, 1);   /* split 1: the direct epilogue */
    s->has_bias = 0;
    gspec(KERNEL_KIND_GEMM_SPLITK, F16, 128, 288, 96, 64, 64, 3);      /* a QKV projection: bias, no activation */
    /* two k-groups of warps (kernel_gsk_kgroups): 64 x 32 and 32 x 32 in
     * 16-bit (the 16-row and 32 x 64 tiles above have them too) */
    act(gspec(KERNEL_KIND_GEMM_SPLITK, F16, 96, 160, 192, 64, 32, 2), PLAN_ACT_GELU_ERF);
    gspec(KERNEL_KIND_GEMM_LN, BF16, 64, 96, 128, 32, 32, 1);
    /* one text, several launches: the bucket and the split count are the
     * grid's (a plan's buckets share these kernels), so each group below is
     * one kernel run at other row-block counts and k-splits — the first
     * with the text's deepest ring (6 stages), then 6 again, then 2 */
    gspec(KERNEL_KIND_GEMM_LN, F16, 48, 128, 768, 16, 64, 3);
    gspec(KERNEL_KIND_GEMM_LN, F16, 96, 128, 768, 16, 64, 4);
    gspec(KERNEL_KIND_GEMM_LN, F16, 64, 128, 768, 16, 64, 24);
    act(gspec(KERNEL_KIND_GEMM_SPLITK, BF16, 32, 192, 512, 32, 64, 2), PLAN_ACT_GELU_ERF);
    act(gspec(KERNEL_KIND_GEMM_SPLITK, BF16, 96, 192, 512, 32, 64, 3), PLAN_ACT_GELU_ERF);
}

/* The pairs of cases above that share a text: the three of each tiny-bert
 * group, the three of the 768-deep gemm_ln, the bf16 pair. */
static int shared_texts(void) {
    int pairs = 0;
    for (int i = 0; i < ncases; i++)
        for (int j = i + 1; j < ncases; j++)
            pairs += cases[i].text && cases[j].text && !strcmp(cases[i].text, cases[j].text);
    return pairs;
}

/* ------------------------------------------------------------ buffers */

static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 256, n ? n : 1)) abort();
    return p;
}

/* rows x ld of dtype: random in rows < live and columns < cols, NaN elsewhere. */
static void *tensor(plan_dtype dt, size_t rows, size_t ld, size_t live, size_t cols, double scale) {
    size_t es = kref_dtype_size(dt);
    void *p = xalloc(rows * ld * es + CANARY);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < ld; c++) {
            double m = 0.05 + 0.95 * check_rng_uniform();
            float v = r < live && c < cols ? (float)((check_rng_u64() & 1 ? m : -m) * scale) : NAN;
            kref_store(dt, p, r * ld + c, v);
        }
    memset((char *)p + rows * ld * es, CANARY_BYTE, CANARY);
    return p;
}

static int canary_ok(const void *p, size_t body) {
    for (size_t i = 0; i < CANARY; i++)
        if (((const unsigned char *)p)[body + i] != CANARY_BYTE) return 0;
    return 1;
}

/* ------------------------------------------------------------ one spec at one length */

typedef struct run_bufs {
    void *x, *w, *bias, *res, *gamma, *beta, *out;
    float *ws;
    int32_t *counters, *req;
    size_t out_body, ws_bytes, cnt_bytes;
} run_bufs;

static void bufs_make(const kernel_spec *s, int len, run_bufs *b) {
    size_t S = (size_t)s->bucket, N = (size_t)s->n, K = (size_t)s->k, L = (size_t)len;
    b->x = tensor(s->dtype, S, (size_t)s->x_ld, L, K, 1.0);
    b->w = tensor(s->dtype, N, K, N, K, 2.0 / sqrt((double)K));
    b->bias = tensor(s->dtype, 1, N, 1, N, 0.5);
    b->res = tensor(s->dtype, S, (size_t)s->res_ld, L, N, 1.0);
    b->gamma = tensor(s->dtype, 1, N, 1, N, 1.5);
    b->beta = tensor(s->dtype, 1, N, 1, N, 0.5);
    b->out = tensor(s->dtype, S, (size_t)s->out_ld, 0, 0, 1.0); /* all NaN */
    b->out_body = S * (size_t)s->out_ld * kref_dtype_size(s->dtype);
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_of(s, s->bucket, a);
    int wi = s->kind == KERNEL_KIND_GEMM_LN ? 8 : 6;
    b->ws_bytes = a[wi].bytes;
    b->cnt_bytes = a[wi + 1].bytes;
    b->ws = a[wi].use == KERNEL_ARG_UNUSED ? NULL : xalloc(b->ws_bytes);
    b->counters = a[wi + 1].use == KERNEL_ARG_UNUSED ? NULL : xalloc(b->cnt_bytes);
    if (b->counters) memset(b->counters, 0, b->cnt_bytes);
    b->req = calloc((size_t)KERNEL_REQ_HEADER_WORDS + 3 * S, 4);
    b->req[KERNEL_REQ_LEN] = len;
    b->req[KERNEL_REQ_BUCKET] = s->bucket;
    b->req[2] = b->req[3] = 0x7eadbeef; /* reserved: never read */
}

static void bufs_free(run_bufs *b) {
    void *all[] = {b->x, b->w, b->bias, b->res, b->gamma, b->beta, b->out, b->ws, b->counters, b->req};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static int counters_zero(const run_bufs *b) {
    for (size_t i = 0; b->counters && i < b->cnt_bytes / 4; i++)
        if (b->counters[i] != 0) return 0;
    return 1;
}

/* got (rows < len) against the reference; rows >= len must still be NaN. */
static void compare(const char *what, const kernel_spec *s, const run_bufs *b, const double *want, int len) {
    size_t N = (size_t)s->n, ld = (size_t)s->out_ld;
    double maxw = 0;
    for (size_t i = 0; i < (size_t)len * N; i++)
        if (fabs(want[i]) > maxw) maxw = fabs(want[i]);
    double tol = kref_tolerance(s->dtype) * (maxw > 0 ? maxw : 1.0) * (s->kind == KERNEL_KIND_GEMM_LN ? 2.0 : 1.0);
    size_t bad = 0, pad = 0;
    char first[200] = "";
    for (size_t r = 0; r < (size_t)s->bucket; r++)
        for (size_t c = 0; c < N; c++) {
            float g = kref_load(s->dtype, b->out, r * ld + c);
            if (r >= (size_t)len) {
                pad += !isnan(g);
                continue;
            }
            double w = want[r * N + c];
            if (!isfinite(g) || fabs(g - w) > tol) {
                if (bad++ == 0) snprintf(first, sizeof first, "[%zu,%zu] = %.7g, want %.7g", r, c, (double)g, w);
            }
        }
    CHECK(bad == 0, "%s: %zu of %zu values off (tol %.3g); first %s", what, bad, (size_t)len * N, tol, first);
    CHECK(pad == 0, "%s: %zu padding values written", what, pad);
    CHECK(canary_ok(b->out, b->out_body), "%s: wrote past the end of its output", what);
}

#define NRUNS 4
static const emu_schedule run_sched[NRUNS] = {EMU_SCHEDULE_WARP_GREEDY, EMU_SCHEDULE_RANDOM, EMU_SCHEDULE_RANDOM,
                                              EMU_SCHEDULE_WARP_GREEDY_REVERSE};

/* One spec at one length; with seq > 0 the request block then says a
 * sequence of seq tokens in a bucket of seq (a pooler's one row runs in a
 * request of the whole sequence): the kernel must still touch only the
 * spec's rows, which its text or its grid bounds, never the request. */
static void run_len(emu_image *img, const kimage_case *kc, int len, const char *path, int seq) {
    const kernel_spec *s = &kc->spec;
    run_bufs b;
    bufs_make(s, len, &b);
    const void *in[6] = {b.x, b.w, s->has_bias ? b.bias : NULL, s->has_residual ? b.res : NULL, b.gamma, b.beta};
    double *want = kref_kernel(s, b.req, in);
    if (seq) b.req[KERNEL_REQ_LEN] = b.req[KERNEL_REQ_BUCKET] = seq;
    void *vals[KERNEL_MAX_ARGS] = {b.out, b.req, b.x, b.w, (void *)in[2], (void *)in[3]};
    int nv = kernel_arg_count(s->kind), own = nv - KERNEL_PREFETCH_ARGS;
    if (s->kind == KERNEL_KIND_GEMM_LN) {
        vals[6] = b.gamma;
        vals[7] = b.beta;
    }
    vals[own - 2] = b.ws;
    vals[own - 1] = b.counters;
    /* the prefetch pair: the weights' first and last byte (a next step's) */
    vals[own] = b.w;
    vals[own + 1] = (char *)b.w + (size_t)s->n * (size_t)s->k * kref_dtype_size(s->dtype) - 1;
    void *args[KERNEL_MAX_ARGS];
    for (int i = 0; i < nv; i++) args[i] = &vals[i];
    diag d;
    diag_init(&d);
    emu_kernel *k = emu_image_kernel(img, kc->entry, &d);
    CHECK(k != NULL, "%s: %s", kc->entry, d.text);
    void *first = xalloc(b.out_body);
    for (int r = 0; k && r < NRUNS; r++) {
        if (b.ws) memset(b.ws, 0xff, b.ws_bytes);
        memset(b.out, 0xff, b.out_body);
        diag_init(&d);
        emu_status st = emu_kernel_launch(k, kc->dims.grid, kc->dims.block, kc->dims.shared_bytes, args, run_sched[r],
                                          check_rng_u64(), &d);
        char what[400];
        snprintf(what, sizeof what, "%s%s (len %d%s, %s)", kc->entry, path, len, seq ? ", a longer request" : "",
                 emu_schedule_name(run_sched[r]));
        CHECK(st == EMU_STATUS_OK, "%s: %s", what, d.text);
        if (st != EMU_STATUS_OK) break;
        CHECK(counters_zero(&b), "%s: arrival counters not back to zero", what);
        if (r == 0) {
            compare(what, s, &b, want, len);
            memcpy(first, b.out, b.out_body);
        } else {
            CHECK(memcmp(first, b.out, b.out_body) == 0, "%s: differs from the warp-greedy run (block order)", what);
        }
    }
    free(first);
    free(want);
    bufs_free(&b);
}

/* The lengths a launch must serve: 1, just past the first row tile, an odd
 * one inside, the bucket. */
static int lens_of(const kernel_spec *s, int *lens) {
    int cand[4] = {1, s->tile_m + 1, s->bucket / 2 + 3, s->bucket}, n = 0;
    for (int i = 0; i < 4; i++) {
        int v = cand[i] > s->bucket ? s->bucket : cand[i], dup = 0;
        for (int j = 0; j < n; j++) dup |= lens[j] == v;
        if (!dup) lens[n++] = v;
    }
    return n;
}

/* ------------------------------------------------------------ images */

static emu_image *img, *img_simt, *img_1688;

static void *image_load(const char *path, diag *d) { return emu_image_load(path, d); }

static int path_takes(const kernel_spec *s, int which) {
    if (which == 1) return s->dtype != PLAN_DTYPE_F32 && s->bucket <= 64;   /* SIMT twin of 16-bit specs */
    if (which == 2) return s->dtype == PLAN_DTYPE_F16;                      /* sm_75's m16n8k8 */
    return 1;
}

static emu_image *build_variant(int which, const char *name, const char *prefix) {
    char *texts[MAX_CASES];
    int n = 0;
    for (int i = 0; i < ncases; i++) {
        int twin = 0; /* a shared text is built once: its entry is defined once */
        for (int j = 0; j < i; j++) twin |= path_takes(&cases[j].spec, which) && !strcmp(cases[j].text, cases[i].text);
        if (path_takes(&cases[i].spec, which) && !twin) texts[n++] = kimage_prefixed(prefix, cases[i].text);
    }
    diag d;
    diag_init(&d);
    emu_image *im = kimage_build(name, (const char *const *)texts, n, image_load, &d);
    if (!im) snprintf(build_error, sizeof build_error, "%s: %s", name, d.text);
    for (int i = 0; i < n; i++) free(texts[i]);
    return im;
}

static int build_images(void) {
    if (kimage_cases_generate(cases, ncases, build_error, sizeof build_error)) return -1;
    img = build_variant(0, "emu_gemm.so", "");
    img_simt = build_variant(1, "emu_gemm_simt.so", "#define BERTC_GEMM_FORCE_SIMT 1\n");
    img_1688 = build_variant(2, "emu_gemm_1688.so", "#define BERTC_EMU_SM75 1\n");
    return img && img_simt && img_1688 ? 0 : -1;
}

static void run_variant(emu_image *im, int which, kernel_kind kind, const char *path) {
    CHECK_REQUIRE(im != NULL, "no image: %s", build_error);
    int ran = 0;
    for (int i = 0; i < ncases; i++) {
        const kimage_case *kc = &cases[i];
        if (kc->spec.kind != kind || !path_takes(&kc->spec, which)) continue;
        int lens[4], nl = lens_of(&kc->spec, lens);
        for (int j = 0; j < nl; j++) run_len(im, kc, lens[j], path, 0);
        if (which == 0) run_len(im, kc, kc->spec.bucket, path, 2 * kc->spec.bucket + 2 * kc->spec.tile_m + 8);
        ran++;
    }
    CHECK(ran > 0, "no %s case for %s", kernel_kind_name(kind), path);
}

/* ------------------------------------------------------------ cases */

static void test_gemm_ln(void) { run_variant(img, 0, KERNEL_KIND_GEMM_LN, ""); }
static void test_gemm_splitk(void) { run_variant(img, 0, KERNEL_KIND_GEMM_SPLITK, ""); }

static void test_simt_path(void) {
    run_variant(img_simt, 1, KERNEL_KIND_GEMM_LN, " [simt]");
    run_variant(img_simt, 1, KERNEL_KIND_GEMM_SPLITK, " [simt]");
}

static void test_mma1688_path(void) {
    run_variant(img_1688, 2, KERNEL_KIND_GEMM_LN, " [m16n8k8]");
    run_variant(img_1688, 2, KERNEL_KIND_GEMM_SPLITK, " [m16n8k8]");
}

/* The geometry the contract derives: a split per block of z, the grid's
 * tiles, the workspace and counters the arguments name. */
static void test_geometry(void) {
    CHECK(shared_texts() == 10, "%d pairs of cases share a kernel text, expected 10", shared_texts());
    for (int i = 0; i < ncases; i++) {
        const kernel_spec *s = &cases[i].spec;
        const kernel_launch_dims *dm = &cases[i].dims;
        CHECK(dm->grid[0] == (unsigned)((s->n + s->tile_n - 1) / s->tile_n) &&
                  dm->grid[1] == (unsigned)((s->bucket + s->tile_m - 1) / s->tile_m) && dm->grid[2] == (unsigned)s->splits,
              "%s: grid (%u, %u, %u)", cases[i].entry, dm->grid[0], dm->grid[1], dm->grid[2]);
        kernel_arg a[KERNEL_MAX_ARGS];
        kernel_args_of(s, s->bucket, a);
        CHECK(a[kernel_arg_count(s->kind) - 1].use == KERNEL_ARG_PREFETCH &&
                  a[kernel_arg_count(s->kind) - 2].use == KERNEL_ARG_PREFETCH,
              "%s: the prefetch pair ends the arguments", cases[i].entry);
        int wi = s->kind == KERNEL_KIND_GEMM_LN ? 8 : 6;
        int split = s->splits > 1;
        CHECK((a[wi].use == KERNEL_ARG_WRITE) == (split || s->kind == KERNEL_KIND_GEMM_LN),
              "%s: workspace use %d", cases[i].entry, (int)a[wi].use);
        CHECK((a[wi + 1].use == KERNEL_ARG_COUNTERS) == (split || s->kind == KERNEL_KIND_GEMM_LN),
              "%s: counters use %d", cases[i].entry, (int)a[wi + 1].use);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    make_cases();
    int built = build_images() == 0;
    if (!built) fprintf(stderr, "build: %s\n", build_error);
    CHECK_CASE(test_geometry);
    CHECK_CASE(test_gemm_ln);
    CHECK_CASE(test_gemm_splitk);
    CHECK_CASE(test_simt_path);
    CHECK_CASE(test_mma1688_path);
    kimage_cases_free(cases, ncases);
    if (img) emu_image_free(img);
    if (img_simt) emu_image_free(img_simt);
    if (img_1688) emu_image_free(img_1688);
    return check_summary();
}
