/*
 * test_emu_kernels — every generated kernel kind, run on the emulated
 * device, against the plain C reference of its kind (support/kref.c,
 * written from the catalogue in plan_types.h alone).
 *
 * The generator (compiler/kernels.c + kernels_templates/) is checked here
 * for what a GPU would compute: each kind is generated for several
 * parameter sets chosen to be awkward (hidden 96 and 80, head_dim 16 and
 * 20, buckets 32 and 64, a real length below the bucket, a length of one,
 * padded leading dimensions, every dtype), run on the emulator under two
 * schedules (warp-greedy and random, the ones that expose missing
 * barriers), and compared with double-precision C that follows the
 * catalogue's formulas.  Inputs are random and never zero; every padding
 * row (>= len) of every activation input is NaN and the attention mask is
 * 1 there, so a kernel that lets padding reach a real row fails; outputs
 * start as NaN so an unwritten real row fails; a canary after each output
 * catches writes past its end.
 *
 * Tolerances, relative to the largest |reference| of the compared block:
 * float32 1e-5, float16 2e-3, bfloat16 1.6e-2 (about four units in the
 * last place of the storage type: the kernels round their output once and
 * may round intermediates).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "emu_build.h"
#include "emu.h"
#include "kernels.h"
#include "kimage.h"
#include "kref.h"
#include "plan_kernels.h"

#define NSCHED 2
static const emu_schedule scheds[NSCHED] = {EMU_SCHEDULE_WARP_GREEDY, EMU_SCHEDULE_RANDOM};
#define CANARY 64 /* bytes after each output */

/* ------------------------------------------------------------ storage */

/* A tensor of `rows` x `ld` elements plus a canary tail. */
typedef struct tensor {
    plan_dtype dt;
    size_t rows, ld;
    void *p;
} tensor;

#define CANARY_BYTE 0x5a

static tensor tensor_new(plan_dtype dt, size_t rows, size_t ld) {
    tensor t = {dt, rows, ld, NULL};
    size_t body = rows * ld * kref_dtype_size(dt);
    t.p = malloc(body + CANARY);
    for (size_t i = 0; i < rows * ld; i++) kref_store(dt, t.p, i, NAN);
    memset((char *)t.p + body, CANARY_BYTE, CANARY);
    return t;
}

static void tensor_free(tensor *t) {
    free(t->p);
    t->p = NULL;
}

static float rnd_val(double scale) {
    double m = 0.05 + 0.95 * check_rng_uniform();
    return (float)((check_rng_u64() & 1 ? m : -m) * scale);
}

/* Random values in rows [0, live) x cols [0, cols); NaN elsewhere (padding rows, ld gap). */
static void tensor_fill(tensor *t, size_t live, size_t cols, double scale) {
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->ld; c++)
            kref_store(t->dt, t->p, r * t->ld + c, (r < live && c < cols) ? rnd_val(scale) : NAN);
}

/* A tensor of rows x ld filled with random values in rows [0, live) x cols [0, cols). */
static tensor tensor_rand(plan_dtype dt, size_t rows, size_t ld, size_t live, size_t cols, double scale) {
    tensor t = tensor_new(dt, rows, ld);
    tensor_fill(&t, live, cols, scale);
    return t;
}

static float tget(const tensor *t, size_t r, size_t c) { return kref_load(t->dt, t->p, r * t->ld + c); }

static int canary_ok(const tensor *t) {
    const unsigned char *c = (const unsigned char *)t->p + t->rows * t->ld * kref_dtype_size(t->dt);
    for (size_t i = 0; i < CANARY; i++)
        if (c[i] != CANARY_BYTE) return 0;
    return 1;
}

static void tensor_reset_output(tensor *t) {
    for (size_t i = 0; i < t->rows * t->ld; i++) kref_store(t->dt, t->p, i, NAN);
}

/* Compares rows [0, len) x cols [0, cols) of got with want (row stride cols). */
static void compare(const char *what, const tensor *got, const double *want, size_t len, size_t cols) {
    double maxw = 0;
    for (size_t i = 0; i < len * cols; i++)
        if (fabs(want[i]) > maxw) maxw = fabs(want[i]);
    double tol = kref_tolerance(got->dt) * (maxw > 0 ? maxw : 1.0);
    size_t bad = 0, first_r = 0, first_c = 0;
    double first_g = 0, first_w = 0;
    for (size_t r = 0; r < len; r++)
        for (size_t c = 0; c < cols; c++) {
            double g = tget(got, r, c), w = want[r * cols + c];
            if (!isfinite(g) || fabs(g - w) > tol) {
                if (bad++ == 0) first_r = r, first_c = c, first_g = g, first_w = w;
            }
        }
    CHECK(bad == 0, "%s: %zu of %zu values off (tol %.3g); first [%zu,%zu] = %.7g, want %.7g", what, bad, len * cols,
          tol, first_r, first_c, first_g, first_w);
    CHECK(canary_ok(got), "%s: wrote past the end of its output", what);
}

/* ------------------------------------------------------------ request block */

typedef struct request {
    int32_t *w;
    int len, bucket;
} request;

static request request_new(int bucket, int len, int vocab, int ntypes, int masked_every) {
    request q = {calloc((size_t)(KERNEL_REQ_HEADER_WORDS + 3 * bucket), 4), len, bucket};
    int32_t *ids = q.w + KERNEL_REQ_HEADER_WORDS, *types = ids + bucket, *mask = types + bucket;
    q.w[KERNEL_REQ_LEN] = len;
    q.w[KERNEL_REQ_BUCKET] = bucket;
    q.w[2] = q.w[3] = 0x7eadbeef; /* reserved: no kernel may depend on them */
    for (int s = 0; s < bucket; s++) {
        if (s < len) {
            ids[s] = (int32_t)check_rng_range(0, vocab - 1);
            types[s] = (int32_t)check_rng_range(0, ntypes - 1);
            mask[s] = (masked_every > 0 && s > 0 && s % masked_every == 0) ? 0 : 1;
        } else {
            /* padding: wild ids (clamped by the kernel), mask 1 so a kernel
             * that forgets the length lets NaN padding in */
            ids[s] = (int32_t)check_rng_range(-100000, 100000);
            types[s] = (int32_t)check_rng_range(-5, 9);
            mask[s] = 1;
        }
    }
    return q;
}

/* ------------------------------------------------------------ the image */

typedef kimage_case kcase;

static emu_image *img;       /* every case */
static emu_image *img_simt;  /* the small 16-bit GEMMs with BERTC_GEMM_FORCE_SIMT (the sm_75 path) */
static emu_image *cur_img;   /* the one run_case uses */

/* Runs the case under each schedule: vals are the kernel's arguments
 * (out, the request block, the inputs); rows < len of out are compared with
 * the case's reference (support/kref.c), computed once.  Frees the tensors. */
static void run_case(const kcase *kc, void **vals, int nvals, tensor *out, tensor *in, int nin) {
    size_t cols = kref_cols(&kc->spec);
    double *want = kref_kernel(&kc->spec, vals[1], (const void *const *)(vals + 2));
    diag d;
    diag_init(&d);
    emu_kernel *k = emu_image_kernel(cur_img, kc->entry, &d);
    CHECK(k != NULL, "%s", d.text);
    /* vals are the kind's own arguments; the prefetch pair is NULL (nothing to prefetch) */
    CHECK(!k || ((int)emu_kernel_arg_count(k) == kernel_arg_count(kc->spec.kind) &&
                 nvals + KERNEL_PREFETCH_ARGS == kernel_arg_count(kc->spec.kind)),
          "%s: %u arguments, kernels.h says %d", kc->entry, k ? emu_kernel_arg_count(k) : 0,
          kernel_arg_count(kc->spec.kind));
    for (unsigned i = 0; k && i < emu_kernel_arg_count(k); i++)
        CHECK(emu_kernel_arg_sizes(k)[i] == sizeof(void *), "%s: argument %u is %u bytes, not a pointer", kc->entry, i,
              emu_kernel_arg_sizes(k)[i]);
    if (k && kc->dims.shared_bytes > EMU_SMEM_DEFAULT_LIMIT) emu_kernel_set_max_dynamic_smem(k, kc->dims.shared_bytes, &d);
    void *args[KERNEL_MAX_ARGS], *nil = NULL;
    for (int i = 0; i < nvals; i++) args[i] = &vals[i];
    for (int i = nvals; i < KERNEL_MAX_ARGS; i++) args[i] = &nil;
    for (int s = 0; k && s < NSCHED; s++) {
        tensor_reset_output(out);
        diag_init(&d);
        emu_status st = emu_kernel_launch(k, kc->dims.grid, kc->dims.block, kc->dims.shared_bytes, args, scheds[s],
                                          check_rng_u64(), &d);
        char what[300];
        snprintf(what, sizeof what, "%s (len %d, %s)", kc->entry, kc->len, emu_schedule_name(scheds[s]));
        CHECK(st == EMU_STATUS_OK, "%s: %s", what, d.text);
        if (st == EMU_STATUS_OK) compare(what, out, want, (size_t)kc->len, cols);
    }
    free(want);
    free(vals[1]);
    tensor_free(out);
    for (int i = 0; i < nin; i++) tensor_free(&in[i]);
}

/* ---- embed_ln */

static void run_embed(const kcase *kc) {
    const kernel_spec *s = &kc->spec;
    size_t H = (size_t)s->hidden;
    request q = request_new(kc->bucket, kc->len, s->table_rows[0], 2, 0);
    /* a few out-of-range ids among the real rows: the kernel clamps them */
    if (kc->len > 2) {
        q.w[KERNEL_REQ_HEADER_WORDS + 1] = s->table_rows[0] + 7;
        q.w[KERNEL_REQ_HEADER_WORDS + 2] = -3;
    }
    tensor in[KERNEL_MAX_GATHERS + 2] = {{0}};
    void *vals[7] = {NULL};
    for (int g = 0; g < s->ngathers; g++) {
        in[g] = tensor_rand(s->dtype, (size_t)s->table_rows[g], H, (size_t)s->table_rows[g], H, 1.0);
        vals[2 + g] = in[g].p;
    }
    in[3] = tensor_rand(s->dtype, 1, H, 1, H, 1.5);
    in[4] = tensor_rand(s->dtype, 1, H, 1, H, 0.5);
    tensor out = tensor_new(s->dtype, (size_t)kc->bucket, H);
    vals[0] = out.p;
    vals[1] = q.w;
    vals[5] = in[3].p;
    vals[6] = in[4].p;
    run_case(kc, vals, 7, &out, in, 5);
}

/* ---- add_ln */

static void run_add_ln(const kcase *kc) {
    const kernel_spec *s = &kc->spec;
    size_t S = (size_t)kc->bucket, H = (size_t)s->hidden, L = (size_t)kc->len;
    request q = request_new(kc->bucket, kc->len, 100, 2, 0);
    /* x, residual, bias, gamma, beta */
    tensor in[5] = {tensor_rand(s->dtype, S, H, L, H, 2.0), tensor_rand(s->dtype, S, H, L, H, 1.0),
                    tensor_rand(s->dtype, 1, H, 1, H, 0.5), tensor_rand(s->dtype, 1, H, 1, H, 1.5),
                    tensor_rand(s->dtype, 1, H, 1, H, 0.5)};
    tensor out = tensor_new(s->dtype, S, H);
    void *vals[7] = {out.p, q.w, in[0].p, s->has_bias ? in[2].p : NULL, s->has_residual ? in[1].p : NULL,
                     in[3].p, in[4].p};
    run_case(kc, vals, 7, &out, in, 5);
}

/* ---- attention */

static void run_attention(const kcase *kc) {
    const kernel_spec *s = &kc->spec;
    size_t S = (size_t)kc->bucket;
    request q = request_new(kc->bucket, kc->len, 100, 2, 5);
    tensor qkv = tensor_rand(s->dtype, S, (size_t)s->qkv_ld, (size_t)kc->len, (size_t)s->qkv_ld, 1.0);
    /* columns that are none of q, k, v are NaN too */
    int w = s->heads * s->head_dim;
    for (size_t r = 0; r < S; r++)
        for (int c = 0; c < s->qkv_ld; c++) {
            int in_q = c >= s->q_off && c < s->q_off + w, in_k = c >= s->k_off && c < s->k_off + w;
            int in_v = c >= s->v_off && c < s->v_off + w;
            if (!in_q && !in_k && !in_v) kref_store(s->dtype, qkv.p, r * (size_t)s->qkv_ld + (size_t)c, NAN);
        }
    tensor out = tensor_new(s->dtype, S, (size_t)s->ctx_ld);
    tensor in[2] = {qkv, {0}};
    if (s->bias_ld) {
        size_t bl = (size_t)s->bias_ld;
        in[1] = tensor_rand(s->dtype, (size_t)s->heads * bl, bl, (size_t)s->heads * bl, bl, 2.0);
    }
    void *vals[4] = {out.p, q.w, qkv.p, in[1].p};
    run_case(kc, vals, 4, &out, in, s->bias_ld ? 2 : 1);
}

/* ---- gemm */

static void run_gemm(const kcase *kc) {
    const kernel_spec *s = &kc->spec;
    size_t S = (size_t)kc->bucket, L = (size_t)kc->len, N = (size_t)s->n, K = (size_t)s->k;
    request q = request_new(kc->bucket, kc->len, 100, 2, 0);
    /* x, w, bias, residual */
    tensor in[4] = {tensor_rand(s->dtype, S, (size_t)s->x_ld, L, K, 1.0),
                    tensor_rand(s->dtype, N, K, N, K, 1.0 / sqrt((double)s->k)), tensor_rand(s->dtype, 1, N, 1, N, 0.5),
                    tensor_rand(s->dtype, S, (size_t)s->res_ld, L, N, 1.0)};
    tensor out = tensor_new(s->dtype, S, (size_t)s->out_ld);
    void *vals[6] = {out.p, q.w, in[0].p, in[1].p, s->has_bias ? in[2].p : NULL, s->has_residual ? in[3].p : NULL};
    run_case(kc, vals, 6, &out, in, 4);
}

/* ------------------------------------------------------------ the parameter sets */

static kernel_spec embed_spec(plan_dtype dt, int bucket, int hidden, int ngathers, float eps) {
    kernel_spec s = kimage_spec(KERNEL_KIND_EMBED_LN, dt, bucket);
    s.hidden = hidden;
    s.eps = eps;
    s.ngathers = ngathers;
    const kernel_index order[3] = {KERNEL_INDEX_INPUT_IDS, KERNEL_INDEX_TOKEN_TYPES, KERNEL_INDEX_POSITION};
    const int rows[3] = {50, 2, bucket + 6};
    for (int g = 0; g < ngathers; g++) {
        s.gather_index[g] = order[ngathers == 2 && g == 1 ? 2 : g];
        s.table_rows[g] = rows[ngathers == 2 && g == 1 ? 2 : g];
    }
    return s;
}

static kernel_spec add_ln_spec(plan_dtype dt, int bucket, int hidden, int bias, int res) {
    kernel_spec s = kimage_spec(KERNEL_KIND_ADD_LN, dt, bucket);
    s.hidden = hidden;
    s.eps = 1e-12f;
    s.has_bias = bias;
    s.has_residual = res;
    return s;
}

static kernel_spec attention_spec(plan_dtype dt, int bucket, int heads, int head_dim, int pad) {
    kernel_spec s = kimage_spec(KERNEL_KIND_ATTENTION, dt, bucket);
    s.heads = heads;
    s.head_dim = head_dim;
    s.scale = (float)(1.0 / sqrt((double)head_dim));
    int w = heads * head_dim;
    /* q, k, v in an unusual order, with a gap: only the offsets say where they are */
    s.qkv_ld = 3 * w + pad;
    s.k_off = 0;
    s.v_off = w + pad;
    s.q_off = 2 * w + pad;
    s.ctx_ld = w + pad;
    s.qtile = kernel_attention_qtile(&s, bucket); /* what the compiler picks for the bucket */
    return s;
}

static kernel_spec gemm_spec(plan_dtype dt, int bucket, int n, int k, int bias, int res, int act, plan_act a, int pad) {
    kernel_spec s = kimage_spec(KERNEL_KIND_GEMM, dt, bucket);
    s.n = n;
    s.k = k;
    s.x_ld = k + pad;
    s.out_ld = n + pad;
    s.res_ld = n + 2 * pad;
    s.has_bias = bias;
    s.has_residual = res;
    s.has_act = act;
    s.act = a;
    return s;
}

static kcase cases[64];
static int ncases;
static char build_error[4400];

static void add_case(kernel_spec s, int bucket, int len) {
    cases[ncases++] = (kcase){.spec = s, .bucket = bucket, .len = len};
}

static void make_cases(void) {
    add_case(embed_spec(PLAN_DTYPE_F32, 32, 96, 3, 1e-12f), 32, 27);
    add_case(embed_spec(PLAN_DTYPE_F16, 64, 80, 3, 1e-5f), 64, 64);
    add_case(embed_spec(PLAN_DTYPE_BF16, 32, 96, 1, 1e-12f), 32, 1);
    add_case(embed_spec(PLAN_DTYPE_F16, 32, 80, 2, 1e-12f), 32, 13);
    add_case(embed_spec(PLAN_DTYPE_F32, 32, 1100, 3, 1e-12f), 32, 9);      /* a block per row, ragged items */

    add_case(add_ln_spec(PLAN_DTYPE_F32, 32, 96, 1, 1), 32, 27);
    add_case(add_ln_spec(PLAN_DTYPE_F16, 64, 80, 0, 1), 64, 50);
    add_case(add_ln_spec(PLAN_DTYPE_BF16, 32, 80, 1, 0), 32, 32);
    add_case(add_ln_spec(PLAN_DTYPE_F32, 64, 80, 0, 0), 64, 5);
    add_case(add_ln_spec(PLAN_DTYPE_F16, 32, 1040, 1, 1), 32, 20);         /* a block per row */

    add_case(attention_spec(PLAN_DTYPE_F32, 32, 2, 16, 0), 32, 27);
    add_case(attention_spec(PLAN_DTYPE_F16, 64, 3, 20, 4), 64, 50);
    add_case(attention_spec(PLAN_DTYPE_BF16, 32, 4, 16, 0), 32, 32);
    add_case(attention_spec(PLAN_DTYPE_F32, 64, 1, 20, 8), 64, 1);
    add_case(attention_spec(PLAN_DTYPE_F16, 32, 2, 16, 0), 32, 17);
    add_case(attention_spec(PLAN_DTYPE_F32, 128, 2, 16, 0), 128, 100);      /* two key tiles: online softmax */
    add_case(attention_spec(PLAN_DTYPE_BF16, 128, 1, 20, 4), 128, 65);      /* second tile holds one key */
    kernel_spec b = attention_spec(PLAN_DTYPE_F16, 64, 2, 16, 0);        /* MPNet's score bias, tensor cores */
    b.bias_ld = 96;
    add_case(b, 64, 41);
    b = attention_spec(PLAN_DTYPE_F32, 32, 3, 12, 0);                   /* and SIMT */
    b.bias_ld = 32;
    add_case(b, 32, 30);
    kernel_spec e = embed_spec(PLAN_DTYPE_BF16, 32, 64, 3, 1e-5f);      /* RoBERTa's position ids */
    e.gather_index[2] = KERNEL_INDEX_PAD_POSITION;
    e.table_rows[2] = 40;
    e.table_rows[0] = 6;
    e.pad_id = 2;
    add_case(e, 32, 29);

    add_case(gemm_spec(PLAN_DTYPE_F32, 32, 96, 80, 1, 0, 1, PLAN_ACT_GELU_ERF, 0), 32, 27);
    add_case(gemm_spec(PLAN_DTYPE_F16, 64, 80, 96, 1, 1, 0, PLAN_ACT_GELU_ERF, 0), 64, 50);
    add_case(gemm_spec(PLAN_DTYPE_BF16, 32, 96, 96, 1, 0, 1, PLAN_ACT_GELU_TANH, 0), 32, 32);
    add_case(gemm_spec(PLAN_DTYPE_F32, 64, 80, 80, 0, 1, 1, PLAN_ACT_RELU, 4), 64, 5);
    add_case(gemm_spec(PLAN_DTYPE_F16, 32, 48, 80, 1, 0, 1, PLAN_ACT_TANH, 8), 32, 1);
    add_case(gemm_spec(PLAN_DTYPE_BF16, 64, 80, 96, 1, 1, 0, PLAN_ACT_RELU, 0), 64, 63);
    add_case(gemm_spec(PLAN_DTYPE_BF16, 256, 2048, 40, 1, 0, 1, PLAN_ACT_GELU_ERF, 0), 256, 77); /* 64x64 tiles */
    add_case(gemm_spec(PLAN_DTYPE_F16, 512, 2000, 48, 1, 1, 0, PLAN_ACT_GELU_ERF, 8), 512, 70);  /* 64x128 tiles */
}

static void *image_load(const char *path, diag *d) { return emu_image_load(path, d); }

/* Generates every case's text, builds them into one image (one unit each,
 * compiled in parallel). */
static int build_image(void) {
    diag d;
    diag_init(&d);
    const char *texts[64];
    int ntexts = 0;
    if (kimage_cases_generate(cases, ncases, build_error, sizeof build_error)) return -1;
    /* a kernel that serves every bucket runs in several cases: one unit each */
    for (int i = 0; i < ncases; i++) {
        kcase *c = &cases[i];
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            if (strcmp(cases[j].entry, c->entry) == 0) {
                if (strcmp(cases[j].text, c->text) != 0) {
                    snprintf(build_error, sizeof build_error, "cases %d and %d: one entry %s, two texts", j, i, c->entry);
                    return -1;
                }
                dup = 1;
            }
        if (!dup) texts[ntexts++] = c->text;
    }
    if (!(img = kimage_build("emu_kernels.so", texts, ntexts, image_load, &d))) {
        snprintf(build_error, sizeof build_error, "%s", d.text);
        return -1;
    }

    /* the SIMT twin of the small 16-bit GEMMs */
    char *simt[64];
    int nsimt = 0;
    for (int i = 0; i < ncases; i++) {
        const kernel_spec *sp = &cases[i].spec;
        if (sp->kind != KERNEL_KIND_GEMM || sp->dtype == PLAN_DTYPE_F32 || cases[i].bucket > 64) continue;
        simt[nsimt++] = kimage_prefixed("#define BERTC_GEMM_FORCE_SIMT 1\n", cases[i].text);
    }
    img_simt = kimage_build("emu_kernels_simt.so", (const char *const *)simt, nsimt, image_load, &d);
    for (int i = 0; i < nsimt; i++) free(simt[i]);
    if (img_simt) return 0;
    snprintf(build_error, sizeof build_error, "SIMT image: %s", d.text);
    return -1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_kind(kernel_kind kind) {
    cur_img = img;
    if (!img) {
        CHECK(0, "no kernel image: %s", build_error);
        return;
    }
    int ran = 0;
    for (int i = 0; i < ncases; i++) {
        if (cases[i].spec.kind != kind) continue;
        ran++;
        double t0 = now_s();
        switch (kind) {
        case KERNEL_KIND_EMBED_LN: run_embed(&cases[i]); break;
        case KERNEL_KIND_ADD_LN: run_add_ln(&cases[i]); break;
        case KERNEL_KIND_ATTENTION: run_attention(&cases[i]); break;
        case KERNEL_KIND_GEMM: run_gemm(&cases[i]); break;
        default: break;
        }
        printf("info: %s (len %d): %.2f s\n", cases[i].entry, cases[i].len, now_s() - t0);
    }
    CHECK(ran > 0, "no case of kind %d", (int)kind);
}

static void test_embed_ln(void) { run_kind(KERNEL_KIND_EMBED_LN); }
static void test_add_ln(void) { run_kind(KERNEL_KIND_ADD_LN); }
static void test_attention(void) { run_kind(KERNEL_KIND_ATTENTION); }
static void test_gemm(void) { run_kind(KERNEL_KIND_GEMM); }

static void test_gemm_simt_path(void) {
    if (!img_simt) {
        CHECK(0, "no SIMT image: %s", build_error);
        return;
    }
    cur_img = img_simt;
    int ran = 0;
    for (int i = 0; i < ncases; i++) {
        const kernel_spec *sp = &cases[i].spec;
        if (sp->kind != KERNEL_KIND_GEMM || sp->dtype == PLAN_DTYPE_F32 || cases[i].bucket > 64) continue;
        run_gemm(&cases[i]);
        ran++;
    }
    CHECK(ran >= 3, "only %d SIMT cases", ran);
}

/* Equal specs give equal text and entry; any parameter change changes the entry. */
static void test_source_identity(void) {
    if (!img) {
        CHECK(0, "no kernel image: %s", build_error);
        return;
    }
    diag d;
    diag_init(&d);
    char *t2 = NULL, *e2 = NULL;
    CHECK(kernel_source(&cases[0].spec, &t2, &e2, &d) == 0, "%s", d.text);
    if (t2 && e2) {
        CHECK(strcmp(t2, cases[0].text) == 0, "same spec, different text");
        CHECK(strcmp(e2, cases[0].entry) == 0, "same spec, different entry");
    }
    free(t2);
    free(e2);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    make_cases();
    double t0 = now_s();
    if (build_image() == 0) printf("info: built %d kernel units in %.2f s\n", ncases, now_s() - t0);
    CHECK_CASE(test_embed_ln);
    CHECK_CASE(test_add_ln);
    CHECK_CASE(test_attention);
    CHECK_CASE(test_gemm);
    CHECK_CASE(test_gemm_simt_path);
    CHECK_CASE(test_source_identity);
    kimage_cases_free(cases, ncases);
    emu_image_free(img);
    emu_image_free(img_simt);
    return check_summary();
}
