/*
 * test_emu_kernels_pdl — every kernel template follows the rule of
 * programmatic dependent launch (kernels_templates/bertc_device.cuh):
 * before bertc_grid_dependency_wait() it reads only the request block and
 * weights and writes nothing.
 *
 * Each kernel runs as the programmatic dependent of a producer kernel that
 * writes the kernel's activation inputs, in the emulator's order for such
 * an edge (runtime/emu/core/emu.h): the dependent's held block runs up to
 * its wait before the producer has run at all, when the activation buffers
 * still hold NaN; then the producer; then the rest.  A kernel that obeys
 * the rule computes its reference's answer; the same kernel compiled with
 * BERTC_DEPENDENCY_WAIT_DISABLED (its wait a no-op, i.e. it reads its
 * producer's output without waiting) must not — which is what shows the
 * first half of the test can fail.  The held block parks in the wait
 * (counted by the core), so a template that dropped its wait would be
 * seen too.  One spec per kind (and the families' RoBERTa positions and MPNet score bias), in the three dtypes between them, under
 * two schedules; the kernels' numerics in general are test_emu_kernels'.
 *
 * Every kernel also ends with the prefetch pair (the next step's weights,
 * runtime/plan/plan_types.h): here it names a weight operand of the
 * kernel's own, every prefetch is checked against the buffers the test
 * made, and a range one byte too long must fault.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emu.h"
#include "kernels.h"
#include "kimage.h"
#include "kref.h"
#include "plan_kernels.h"

/* The producer: copies up to two activation buffers into place (32-bit words, grid-strided). */
static const char producer_src[] =
    "extern \"C\" __global__ void k_produce2(unsigned *d0, const unsigned *s0, unsigned *d1, const unsigned *s1,\n"
    "                                        const int *words) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;\n"
    "    for (unsigned k = i; k < (unsigned)words[0]; k += n) d0[k] = s0[k];\n"
    "    for (unsigned k = i; k < (unsigned)words[1]; k += n) d1[k] = s1[k];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_produce2)\n";

#define NSPECS 8
static kernel_spec specs[NSPECS];
/* The bucket each spec is launched in (most kinds serve every bucket: their
 * spec says 0, the launch and the request block say the rows). */
static const int rows_of[NSPECS] = {16, 16, 32, 24, 32, 16, 24, 40};
static char *entries[NSPECS];
static emu_image *images[2];   /* [0] as generated, [1] with BERTC_DEPENDENCY_WAIT_DISABLED */

static void specs_init(void) {
    kernel_spec *s = &specs[0];
    *s = kimage_spec(KERNEL_KIND_ADD_LN, PLAN_DTYPE_F16, 16);
    s->hidden = 96, s->eps = 1e-5f, s->has_bias = 1, s->has_residual = 1;
    s = &specs[1];
    *s = kimage_spec(KERNEL_KIND_EMBED_LN, PLAN_DTYPE_F32, 16);
    s->hidden = 64, s->eps = 1e-12f, s->ngathers = 2;
    s->gather_index[0] = KERNEL_INDEX_INPUT_IDS, s->table_rows[0] = 40;
    s->gather_index[1] = KERNEL_INDEX_POSITION, s->table_rows[1] = 16;
    s = &specs[2];
    *s = kimage_spec(KERNEL_KIND_ATTENTION, PLAN_DTYPE_F16, 32);
    s->heads = 2, s->head_dim = 32, s->scale = 1.0f / sqrtf(32.0f);
    s->qkv_ld = 192, s->q_off = 0, s->k_off = 64, s->v_off = 128, s->ctx_ld = 64;
    s->qtile = kernel_attention_qtile(s, rows_of[2]);
    s = &specs[3];
    *s = kimage_spec(KERNEL_KIND_ATTENTION, PLAN_DTYPE_F32, 24);
    s->heads = 2, s->head_dim = 20, s->scale = 1.0f / sqrtf(20.0f);
    s->qkv_ld = 120, s->q_off = 0, s->k_off = 40, s->v_off = 80, s->ctx_ld = 40;
    s->qtile = kernel_attention_qtile(s, rows_of[3]);
    s = &specs[4];
    *s = kimage_spec(KERNEL_KIND_GEMM, PLAN_DTYPE_BF16, 32);
    s->n = 64, s->k = 96, s->x_ld = 96, s->out_ld = 64, s->res_ld = 64;
    s->has_bias = 1, s->has_residual = 1, s->has_act = 1, s->act = PLAN_ACT_GELU_ERF;
    s = &specs[5];
    *s = kimage_spec(KERNEL_KIND_POOL, PLAN_DTYPE_F16, 16);
    s->hidden = 96, s->pool_mode = PLAN_POOL_MEAN, s->normalize = 1;
    /* the families' additions: RoBERTa's position ids (request data, read
     * before the wait) and MPNet's score bias (a weight) */
    s = &specs[6];
    *s = kimage_spec(KERNEL_KIND_EMBED_LN, PLAN_DTYPE_BF16, 24);
    s->hidden = 48, s->eps = 1e-5f, s->ngathers = 2, s->pad_id = 1;
    s->gather_index[0] = KERNEL_INDEX_INPUT_IDS, s->table_rows[0] = 40;
    s->gather_index[1] = KERNEL_INDEX_PAD_POSITION, s->table_rows[1] = 30;
    s = &specs[7];
    *s = kimage_spec(KERNEL_KIND_ATTENTION, PLAN_DTYPE_F16, 40);
    s->heads = 2, s->head_dim = 16, s->scale = 0.25f, s->bias_ld = 48;
    s->qkv_ld = 96, s->q_off = 0, s->k_off = 32, s->v_off = 64, s->ctx_ld = 32;
    s->qtile = kernel_attention_qtile(s, rows_of[7]);
}

static void *image_load(const char *path, diag *d) { return emu_image_load(path, d); }

static emu_image *image(int broken) {
    static int tried[2];
    if (tried[broken]) return images[broken];
    tried[broken] = 1;
    const char *texts[NSPECS + 1];
    char *owned[NSPECS] = {0};
    int ok = 1;
    for (int i = 0; i < NSPECS && ok; i++) {
        char *text = NULL, *entry = NULL;
        ok = kimage_source(&specs[i], i, &text, &entry) == 0;
        if (!ok) break;
        owned[i] = broken ? kimage_prefixed("#define BERTC_DEPENDENCY_WAIT_DISABLED 1\n", text) : text;
        if (broken) free(text);
        if (!entries[i]) entries[i] = entry;
        else free(entry);
        texts[i] = owned[i];
    }
    texts[NSPECS] = producer_src;
    if (ok) {
        diag d;
        diag_init(&d);
        images[broken] = kimage_build(broken ? "emu_pdl_broken.so" : "emu_pdl.so", texts, NSPECS + 1, image_load, &d);
        CHECK(images[broken] != NULL, "image: %s", d.text);
    }
    for (int i = 0; i < NSPECS; i++) free(owned[i]);
    return images[broken];
}

/* ------------------------------------------------------------ buffers */

typedef struct operand {
    void *p;            /* what the kernel reads */
    void *src;          /* activations: the values the producer writes; NULL for weights */
    size_t bytes;
} operand;

/* Every buffer the kernels get is recorded, so that the core can check
 * each prefetch against them (emu_set_mem_check), as the emulated device
 * checks against its allocations. */
#define MAX_LIVE 64
static struct { const char *p; size_t n; } live[MAX_LIVE];

static void *xalloc(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 256, n ? n : 1)) abort();
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live[i].p) {
            live[i].p = p, live[i].n = n;
            break;
        }
    return p;
}

static void xfree(void *p) {
    for (int i = 0; p && i < MAX_LIVE; i++)
        if (live[i].p == p) live[i].p = NULL;
    free(p);
}

static int in_live_buffer(const void *p, unsigned long long bytes) {
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i].p && (const char *)p >= live[i].p && bytes <= live[i].n &&
            (size_t)((const char *)p - live[i].p) <= live[i].n - bytes)
            return 1;
    return 0;
}

/* n random values; an activation starts as NaN and gets them from the producer. */
static operand fill(plan_dtype t, size_t n, double scale, double offset, int activation) {
    operand o = {xalloc(n * kref_dtype_size(t)), NULL, n * kref_dtype_size(t)};
    for (size_t i = 0; i < n; i++) kref_store(t, o.p, i, (float)(offset + scale * (2.0 * check_rng_uniform() - 1.0)));
    if (activation) {
        o.src = xalloc(o.bytes);
        memcpy(o.src, o.p, o.bytes);
        memset(o.p, 0xff, o.bytes);
    }
    return o;
}

/* The kernel's operands after (out, req), as kref_kernel lists them; the
 * count in *n, the output's element count in *out_elems. */
static void operands(const kernel_spec *s, int rows, operand *in, int *n, size_t *out_elems) {
    plan_dtype t = s->dtype;
    size_t S = (size_t)rows, H = (size_t)s->hidden;
    memset(in, 0, 6 * sizeof *in);
    switch (s->kind) {
    case KERNEL_KIND_ADD_LN:
        in[0] = fill(t, S * H, 2, 0.5, 1), in[1] = fill(t, H, 0.5, 0, 0), in[2] = fill(t, S * H, 1, 0, 1);
        in[3] = fill(t, H, 0.2, 1, 0), in[4] = fill(t, H, 0.3, 0, 0);
        *n = 5, *out_elems = S * H;
        break;
    case KERNEL_KIND_EMBED_LN:
        for (int g = 0; g < 3; g++)
            if (g < s->ngathers) in[g] = fill(t, (size_t)s->table_rows[g] * H, 0.5, 0, 0);
        in[3] = fill(t, H, 0.2, 1, 0), in[4] = fill(t, H, 0.3, 0, 0);
        *n = 5, *out_elems = S * H;
        break;
    case KERNEL_KIND_ATTENTION:
        in[0] = fill(t, S * (size_t)s->qkv_ld, 1.5, 0, 1);
        if (s->bias_ld) in[1] = fill(t, (size_t)s->heads * s->bias_ld * s->bias_ld, 2, 0, 0);
        *n = 2, *out_elems = S * (size_t)s->ctx_ld;
        break;
    case KERNEL_KIND_GEMM:
        in[0] = fill(t, S * (size_t)s->x_ld, 1, 0, 1), in[1] = fill(t, (size_t)s->n * s->k, 1.0 / sqrt(s->k), 0, 0);
        in[2] = fill(t, (size_t)s->n, 0.5, 0, 0), in[3] = fill(t, S * (size_t)s->res_ld, 1, 0, 1);
        *n = 4, *out_elems = S * (size_t)s->out_ld;
        break;
    default:
        in[0] = fill(t, S * H, 1, 0.2, 1);
        *n = 1, *out_elems = H;
        break;
    }
}

static int *request(int B, int len) {
    int *req = xalloc((size_t)(KERNEL_REQ_HEADER_WORDS + 3 * B) * 4);
    req[KERNEL_REQ_LEN] = len;
    req[KERNEL_REQ_BUCKET] = B;
    req[2] = req[3] = 0;
    for (int i = 0; i < B; i++) {
        req[KERNEL_REQ_HEADER_WORDS + i] = (int)check_rng_range(0, 39);
        req[KERNEL_REQ_HEADER_WORDS + B + i] = 0;
        req[KERNEL_REQ_HEADER_WORDS + 2 * B + i] = i % 5 == 3 ? 0 : 1;
    }
    return req;
}

/* ------------------------------------------------------------ one edge */

/* Values of out (rows < len) off the reference by more than the dtype's
 * tolerance, NaN included. */
static int count_wrong(const kernel_spec *s, const int *req, const void *out, const operand *in) {
    const void *ptrs[6];
    for (int i = 0; i < 6; i++) ptrs[i] = in[i].p;
    double *ref = kref_kernel(s, req, ptrs);
    size_t rows = kref_rows(s, req), cols = kref_cols(s);
    size_t ld = s->kind == KERNEL_KIND_GEMM ? (size_t)s->out_ld
                : s->kind == KERNEL_KIND_ATTENTION ? (size_t)s->ctx_ld
                                                   : cols;
    double maxw = 0;
    for (size_t i = 0; i < rows * cols; i++) maxw = fmax(maxw, fabs(ref[i]));
    double tol = kref_tolerance(s->dtype) * (maxw > 0 ? maxw : 1);
    int bad = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double g = kref_load(s->dtype, out, r * ld + c);
            bad += !(fabs(g - ref[r * cols + c]) <= tol);
        }
    free(ref);
    return bad;
}

/* Kernel i of `im` as the programmatic dependent of the producer; the
 * wrong outputs, and the held block's parked threads in *parked. */
static int run_edge(emu_image *im, int i, int len, emu_schedule sched, uint64_t *parked) {
    const kernel_spec *s = &specs[i];
    operand in[6];
    int n = 0;
    size_t out_elems = 0;
    operands(s, rows_of[i], in, &n, &out_elems);
    void *out = xalloc(out_elems * kref_dtype_size(s->dtype));
    memset(out, 0xff, out_elems * kref_dtype_size(s->dtype));
    int *req = request(rows_of[i], len);
    void *vals[KERNEL_MAX_ARGS] = {out, req}, *args[KERNEL_MAX_ARGS];
    for (int k = 0; k < n; k++) vals[2 + k] = in[k].p;
    /* the prefetch pair: the first weight operand, as a plan would name the next step's */
    for (int k = 0; k < n && !vals[2 + n]; k++)
        if (in[k].p && !in[k].src) vals[2 + n] = in[k].p, vals[3 + n] = (char *)in[k].p + in[k].bytes - 1;
    for (int k = 0; k < KERNEL_MAX_ARGS; k++) args[k] = &vals[k];
    /* the producer: the first two activation buffers */
    void *pv[4] = {NULL, NULL, NULL, NULL};
    int words[2] = {0, 0}, na = 0;
    for (int k = 0; k < n && na < 2; k++)
        if (in[k].src) pv[2 * na] = in[k].p, pv[2 * na + 1] = in[k].src, words[na++] = (int)(in[k].bytes / 4);
    int *wp = words;
    void *pargs[5] = {&pv[0], &pv[1], &pv[2], &pv[3], &wp};
    kernel_launch_dims dm;
    diag d;
    diag_init(&d);
    kernel_dims(s, rows_of[i], &dm, &d);
    emu_kernel *k = emu_image_kernel(im, entries[i], &d), *kp = emu_image_kernel(im, "k_produce2", &d);
    int bad = -1;
    if (k && kp) {
        if (dm.shared_bytes > EMU_SMEM_DEFAULT_LIMIT) emu_kernel_set_max_dynamic_smem(k, dm.shared_bytes, &d);
        emu_grid *g = NULL;
        const unsigned pg[3] = {4, 1, 1}, pb[3] = {128, 1, 1};
        emu_status st = emu_kernel_launch_dependent(k, dm.grid, dm.block, dm.shared_bytes, args, sched, check_rng_u64(),
                                                    &g, &d);
        if (st == EMU_STATUS_OK) st = emu_kernel_launch(kp, pg, pb, 0, pargs, sched, check_rng_u64(), &d);
        if (st == EMU_STATUS_OK) st = emu_grid_finish(g, &d);
        else emu_grid_abandon(g);
        emu_launch_stats ls;
        emu_last_launch_stats(&ls);
        *parked = ls.parked;
        CHECK(st == EMU_STATUS_OK, "%s: %s", entries[i], d.text);
        if (st == EMU_STATUS_OK) bad = count_wrong(s, req, out, in);
    } else {
        CHECK(0, "%s", d.text);
    }
    for (int q = 0; q < n; q++) xfree(in[q].p), xfree(in[q].src);
    xfree(out);
    xfree(req);
    return bad;
}

/* ------------------------------------------------------------ cases */

static const emu_schedule scheds[2] = {EMU_SCHEDULE_WARP_GREEDY, EMU_SCHEDULE_RANDOM};

/* The templates as generated: right answers, and the held block waited. */
static void test_templates_wait(void) {
    emu_image *im = image(0);
    CHECK_REQUIRE(im, "no image");
    for (int i = 0; i < NSPECS; i++)
        for (int si = 0; si < 2; si++) {
            int lens[2] = {rows_of[i], rows_of[i] / 2 + 1};
            for (int li = 0; li < 2; li++) {
                uint64_t parked = 0;
                int bad = run_edge(im, i, lens[li], scheds[si], &parked);
                CHECK(bad == 0, "%s (len %d, %s): %d outputs wrong after a programmatic edge", entries[i], lens[li],
                      emu_schedule_name(scheds[si]), bad);
                /* a full-length request has no padding block, so the held block is real and waits */
                if (li == 0)
                    CHECK(parked > 0, "%s (%s): the held block never waited", entries[i], emu_schedule_name(scheds[si]));
            }
        }
}

/* Without the wait, every kernel that reads an activation reads NaN in
 * its held block; embed_ln reads none and stays right. */
static void test_missing_wait_caught(void) {
    emu_image *im = image(1);
    CHECK_REQUIRE(im, "no image");
    for (int i = 0; i < NSPECS; i++)
        for (int si = 0; si < 2; si++) {
            uint64_t parked = 0;
            int bad = run_edge(im, i, rows_of[i], scheds[si], &parked);
            if (specs[i].kind == KERNEL_KIND_EMBED_LN)
                CHECK(bad == 0, "%s without its wait: %d wrong (it reads no activation)", entries[i], bad);
            else
                CHECK(bad > 0, "%s without its wait (%s): the early read went unnoticed", entries[i],
                      emu_schedule_name(scheds[si]));
            CHECK(parked == 0, "%s: %llu threads parked with the wait disabled", entries[i], (unsigned long long)parked);
        }
}

/* The prefetch pair each kernel ends with: a range inside a buffer is
 * prefetched (once per line, spread over the grid) and passes the check; a
 * range one byte past its buffer faults naming the kernel. */
static void test_prefetch_pair(void) {
    emu_image *im = image(0);
    CHECK_REQUIRE(im, "no image");
    const kernel_spec *s = &specs[0]; /* add_ln */
    operand in[6];
    int n = 0;
    size_t out_elems = 0;
    operands(s, rows_of[0], in, &n, &out_elems);
    memcpy(in[0].p, in[0].src, in[0].bytes);
    memcpy(in[2].p, in[2].src, in[2].bytes);
    void *out = xalloc(out_elems * kref_dtype_size(s->dtype)), *w = xalloc(5000);
    int *req = request(rows_of[0], rows_of[0]);
    kernel_launch_dims dm;
    diag d;
    diag_init(&d);
    kernel_dims(s, rows_of[0], &dm, &d);
    for (int past = 0; past < 2; past++) {
        void *vals[KERNEL_MAX_ARGS] = {out, req, in[0].p, in[1].p, in[2].p, in[3].p, in[4].p, w,
                                       (char *)w + 4999 + past};
        void *args[KERNEL_MAX_ARGS];
        for (int k = 0; k < KERNEL_MAX_ARGS; k++) args[k] = &vals[k];
        diag_init(&d);
        emu_status st = emu_launch(im, entries[0], dm.grid, dm.block, dm.shared_bytes, args, EMU_SCHEDULE_WARP_GREEDY,
                                   1, &d);
        emu_launch_stats ls;
        emu_last_launch_stats(&ls);
        /* w is 256-aligned: 40 lines of 128 bytes, one thread each (the grid has more) */
        unsigned threads = dm.grid[0] * dm.grid[1] * dm.block[0], lines = (5000 + 127) / 128;
        if (!past)
            CHECK(st == EMU_STATUS_OK && threads > lines && ls.prefetches == lines, "%s: %s, %llu prefetches",
                  entries[0], d.text, (unsigned long long)ls.prefetches);
        else
            CHECK(st == EMU_STATUS_FAULT && strstr(d.text, "outside device memory") && strstr(d.text, entries[0]),
                  "a prefetch past its buffer: %s (%s)", emu_status_name(st), d.text);
    }
    for (int q = 0; q < n; q++) xfree(in[q].p), xfree(in[q].src);
    xfree(out), xfree(w), xfree(req);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    specs_init();
    emu_set_mem_check(in_live_buffer);
    CHECK_CASE(test_templates_wait);
    CHECK_CASE(test_missing_wait_caught);
    CHECK_CASE(test_prefetch_pair);
    for (int i = 0; i < 2; i++)
        if (images[i]) emu_image_free(images[i]);
    for (int i = 0; i < NSPECS; i++) free(entries[i]);
    return check_summary();
}
