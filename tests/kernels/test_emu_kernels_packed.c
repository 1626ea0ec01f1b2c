/*
 * test_emu_kernels_packed — the packed kernels of a token bucket (embed_ln,
 * attention, pool: the kinds that look across rows or at a row's place in
 * its sequence) on the emulated device, with the other sequences poisoned.
 *
 * A packed batch puts several requests' rows end to end in one arena.  The
 * danger is leakage: a key of the next sequence entering an attention sum,
 * a pad position counted from the previous sequence's ids, a pooled row
 * over a neighbour's rows, a row-per-sequence input read at the wrong row.
 * So each case runs twice, once with the even sequences' input rows NaN
 * and once with the odd ones' (and every row past the batch's tokens NaN
 * in both): each sequence is checked in the run where all its neighbours
 * are poison, and must come out finite and equal to the plain C reference
 * (support/kref.c) of that sequence alone, within the tolerance of its
 * storage type (docs/testing.md).  One NaN read from a neighbour makes
 * its row NaN, which no tolerance accepts.  Outputs start as NaN, so an
 * unwritten row fails too.
 *
 * Batches: random lengths from 1 to the longest sequence, the sequences'
 * query tiles chosen by seq_qtile (all four tiles occur), masks with zeros
 * (never at a sequence's first token), pad ids inside sequences (RoBERTa's
 * positions), fewer sequences than the bucket's max_seqs (seq_start past n
 * is the total), MPNet's score bias, and every storage type.  Bit-identity
 * of a whole plan's batch against single requests is test_batch's.
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

#define PK_TOKENS 160   /* the token bucket's rows */
#define PK_SEQS 8       /* its max_seqs */
#define PK_LONGEST 72   /* the longest sequence (a length bucket's) */
#define PK_PAD 1        /* the pad id of the pad-position gather */

/* A batch: n sequences of len[i] rows from start[i]; the request block. */
typedef struct pk_batch {
    int n, len[PK_SEQS], start[PK_SEQS + 1], total;
    int32_t *req;
} pk_batch;

static emu_image *pk_img;

static void *pk_image_load(const char *path, diag *d) { return emu_image_load(path, d); }

/* Random lengths (1..PK_LONGEST, PK_TOKENS at most in all), ids with pad
 * runs, types, masks with zeros, positions and seq_start. */
static void pk_batch_make(pk_batch *b, int vocab) {
    memset(b, 0, sizeof *b);
    b->n = (int)check_rng_range(2, PK_SEQS - 1);
    for (int i = 0; i < b->n; i++) {
        int left = PK_TOKENS - b->total - (b->n - 1 - i);
        int len = i % 3 == 0 ? (int)check_rng_range(40, PK_LONGEST) : (int)check_rng_range(1, 24);
        b->len[i] = len > left ? left : len;
        b->start[i] = b->total;
        b->total += b->len[i];
    }
    for (int i = b->n; i <= PK_SEQS; i++) b->start[i] = b->total;
    size_t B = PK_TOKENS;
    b->req = calloc(KERNEL_REQ_HEADER_WORDS + 4 * B + PK_SEQS + 1, sizeof *b->req);
    int32_t *r = b->req, *ids = r + 4, *types = ids + B, *mask = types + B, *pos = mask + B, *st = pos + B;
    r[KERNEL_REQ_LEN] = b->total;
    r[KERNEL_REQ_BUCKET] = PK_TOKENS;
    r[KERNEL_REQ_NSEQ] = b->n;
    r[KERNEL_REQ_MAX_SEQS] = PK_SEQS;
    for (int i = 0; i < b->n; i++)
        for (int s = 0; s < b->len[i]; s++) {
            int row = b->start[i] + s;
            ids[row] = s > 0 && check_rng_range(0, 5) == 0 ? PK_PAD : (int)check_rng_range(2, vocab - 1);
            types[row] = (int)check_rng_range(0, 1);
            mask[row] = s == 0 || check_rng_range(0, 3) != 0;
            pos[row] = s;
        }
    for (size_t row = (size_t)b->total; row < B; row++) ids[row] = types[row] = mask[row] = pos[row] = 0x7fff0000;
    memcpy(st, b->start, sizeof b->start);
}

/* Sequence i alone: the one-request block of its len rows. */
static int32_t *pk_alone_req(const pk_batch *b, int i) {
    int len = b->len[i], B = PK_TOKENS;
    int32_t *r = kimage_request(len, len);
    for (int a = 0; a < 3; a++) memcpy(r + 4 + a * len, b->req + 4 + a * B + b->start[i], (size_t)len * 4);
    return r;
}

/* Whether input rows of sequence i are poison in run `parity`. */
static int pk_poisoned(int i, int parity) { return (i & 1) == parity; }

/* rows x cols of dtype: sequence rows live (random) or NaN per the run;
 * per_seq: row i is sequence i's. */
static void *pk_input(const pk_batch *b, plan_dtype dt, int rows, int cols, int per_seq, int parity) {
    size_t es = kref_dtype_size(dt);
    unsigned char *x = malloc((size_t)rows * (size_t)cols * es);
    for (int row = 0; row < rows; row++) {
        int seq = -1;
        for (int i = 0; i < b->n; i++)
            if (per_seq ? row == i : row >= b->start[i] && row < b->start[i] + b->len[i]) seq = i;
        for (int c = 0; c < cols; c++) {
            float v = (float)(2.0 * check_rng_uniform() - 1.0);
            kref_store(dt, x, (size_t)row * (size_t)cols + (size_t)c, seq < 0 || pk_poisoned(seq, parity) ? NAN : v);
        }
    }
    return x;
}

/* Launches s (packed) with args and checks sequence i's rows against want. */
static emu_kernel *pk_kernel(const kernel_spec *s, char **entry, kernel_launch_dims *dims) {
    char *text = NULL;
    diag d;
    diag_init(&d);
    if (kimage_source(s, 0, &text, entry)) return NULL;
    free(text);
    CHECK(kernel_dims_in(s, PK_TOKENS, PK_SEQS, dims, &d) == 0, "%s: %s", *entry, d.text);
    emu_kernel *k = emu_image_kernel(pk_img, *entry, &d);
    CHECK(k != NULL, "%s", d.text);
    return k;
}

static int pk_launch(emu_kernel *k, const char *entry, const kernel_launch_dims *dims, void **vals, int nargs) {
    void *args[KERNEL_MAX_ARGS];
    for (int i = 0; i < nargs; i++) args[i] = &vals[i];
    diag d;
    diag_init(&d);
    emu_status st = emu_kernel_launch(k, dims->grid, dims->block, dims->shared_bytes, args, EMU_SCHEDULE_RANDOM,
                                      check_rng_u64(), &d);
    CHECK(st == EMU_STATUS_OK, "%s: %s", entry, d.text);
    return st == EMU_STATUS_OK ? 0 : -1;
}

/* out's rows [row0, row0 + rows) of cols (leading dimension ld) against
 * want (rows x cols); 0 when all are finite and within tolerance. */
static int pk_compare(const char *what, int i, plan_dtype dt, const void *out, size_t row0, size_t rows, size_t cols,
                      size_t ld, const double *want) {
    double maxw = 0;
    for (size_t k = 0; k < rows * cols; k++) maxw = fabs(want[k]) > maxw ? fabs(want[k]) : maxw;
    double tol = kref_tolerance(dt) * (maxw > 0 ? maxw : 1.0);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            double g = kref_load(dt, out, (row0 + r) * ld + c), w = want[r * cols + c];
            if (!isfinite(g) || fabs(g - w) > tol) {
                CHECK(0, "%s: sequence %d row %zu col %zu: %.7g, alone %.7g (tol %.3g)", what, i, r, c, g, w, tol);
                return -1;
            }
        }
    return 0;
}

static kernel_spec pk_attention_spec(plan_dtype dt, int head_dim, int bias_ld) {
    kernel_spec s = kimage_spec(KERNEL_KIND_ATTENTION, dt, 0);
    s.heads = 2;
    s.head_dim = head_dim;
    s.scale = (float)(1.0 / sqrt((double)head_dim));
    int w = s.heads * head_dim;
    s.qkv_ld = 3 * w + 8;
    s.k_off = 0;
    s.v_off = w + 8;
    s.q_off = 2 * w + 8;
    s.ctx_ld = w + 8;
    s.bias_ld = bias_ld;
    s.packed = 1;
    int lens[4] = {8, 24, 40, PK_LONGEST}; /* every tile in use */
    for (int t = 0; t < 4; t++) s.seq_qtile[t] = lens[t];
    return s;
}

static void pk_run_attention(const kernel_spec *s) {
    char *entry = NULL;
    kernel_launch_dims dims;
    emu_kernel *k = pk_kernel(s, &entry, &dims);
    for (int parity = 0; k && parity < 2; parity++) {
        pk_batch b;
        pk_batch_make(&b, 50);
        void *qkv = pk_input(&b, s->dtype, PK_TOKENS, s->qkv_ld, 0, parity);
        void *bias = NULL;
        if (s->bias_ld) {
            size_t nb = (size_t)s->heads * (size_t)s->bias_ld * (size_t)s->bias_ld;
            bias = malloc(nb * kref_dtype_size(s->dtype));
            for (size_t e = 0; e < nb; e++) kref_store(s->dtype, bias, e, (float)(check_rng_uniform() - 0.5));
        }
        size_t es = kref_dtype_size(s->dtype);
        void *ctx = malloc((size_t)PK_TOKENS * (size_t)s->ctx_ld * es);
        for (size_t e = 0; e < (size_t)PK_TOKENS * (size_t)s->ctx_ld; e++) kref_store(s->dtype, ctx, e, NAN);
        void *vals[6] = {ctx, b.req, qkv, bias, NULL, NULL};
        if (!pk_launch(k, entry, &dims, vals, 6)) {
            kernel_spec one = *s;
            one.packed = 0;
            one.qtile = 8;
            for (int i = 0; i < b.n; i++) {
                if (pk_poisoned(i, parity)) continue;
                int32_t *r1 = pk_alone_req(&b, i);
                const unsigned char *q1 = (const unsigned char *)qkv + (size_t)b.start[i] * (size_t)s->qkv_ld * es;
                double *want = kref_attention(&one, r1, kref_stored(s->dtype, q1, (size_t)s->qkv_ld),
                                              kref_stored(s->dtype, bias, (size_t)s->bias_ld));
                pk_compare(entry, i, s->dtype, ctx, (size_t)b.start[i], (size_t)b.len[i],
                           (size_t)(s->heads * s->head_dim), (size_t)s->ctx_ld, want);
                free(want);
                free(r1);
            }
        }
        free(ctx);
        free(bias);
        free(qkv);
        free(b.req);
    }
    free(entry);
}

static kernel_spec pk_embed_spec(plan_dtype dt) {
    kernel_spec s = kimage_spec(KERNEL_KIND_EMBED_LN, dt, 0);
    s.hidden = 64;
    s.eps = 1e-5f;
    s.ngathers = 3;
    s.gather_index[0] = KERNEL_INDEX_INPUT_IDS;
    s.gather_index[1] = KERNEL_INDEX_PAD_POSITION;
    s.gather_index[2] = KERNEL_INDEX_TOKEN_TYPES;
    s.table_rows[0] = 50;
    s.table_rows[1] = PK_LONGEST + PK_PAD + 1;
    s.table_rows[2] = 2;
    s.pad_id = PK_PAD;
    s.packed = 1;
    return s;
}

/* embed_ln reads no activation, so the poison here is in the ids: the
 * previous sequence's ids are pads in one run and not in the other, and a
 * pad count that crossed into it would differ from the sequence alone. */
static void pk_run_embed(const kernel_spec *s) {
    char *entry = NULL;
    kernel_launch_dims dims;
    emu_kernel *k = pk_kernel(s, &entry, &dims);
    size_t es = kref_dtype_size(s->dtype), H = (size_t)s->hidden;
    void *t[3], *gb[2];
    for (int g = 0; g < 3; g++) {
        t[g] = malloc((size_t)s->table_rows[g] * H * es);
        for (size_t e = 0; e < (size_t)s->table_rows[g] * H; e++)
            kref_store(s->dtype, t[g], e, (float)(check_rng_uniform() - 0.5));
    }
    for (int g = 0; g < 2; g++) {
        gb[g] = malloc(H * es);
        for (size_t e = 0; e < H; e++) kref_store(s->dtype, gb[g], e, (float)(0.5 + check_rng_uniform()));
    }
    for (int parity = 0; k && parity < 2; parity++) {
        pk_batch b;
        pk_batch_make(&b, s->table_rows[0]);
        int32_t *ids = b.req + 4;
        for (int i = 0; i < b.n; i++)
            for (int r = 0; pk_poisoned(i, parity) && r < b.len[i]; r++) ids[b.start[i] + r] = PK_PAD;
        void *out = malloc((size_t)PK_TOKENS * H * es);
        for (size_t e = 0; e < (size_t)PK_TOKENS * H; e++) kref_store(s->dtype, out, e, NAN);
        void *vals[9] = {out, b.req, t[0], t[1], t[2], gb[0], gb[1], NULL, NULL};
        if (!pk_launch(k, entry, &dims, vals, 9)) {
            kernel_spec one = *s;
            one.packed = 0;
            for (int i = 0; i < b.n; i++) {
                int32_t *r1 = pk_alone_req(&b, i);
                double *want = kref_kernel(&one, r1, (const void *const[]){t[0], t[1], t[2], gb[0], gb[1]});
                pk_compare(entry, i, s->dtype, out, (size_t)b.start[i], (size_t)b.len[i], H, H, want);
                free(want);
                free(r1);
            }
        }
        free(out);
        free(b.req);
    }
    for (int g = 0; g < 3; g++) free(t[g]);
    free(gb[0]);
    free(gb[1]);
    free(entry);
}

static kernel_spec pk_pool_spec(plan_dtype dt, plan_pool_mode mode, int normalize) {
    kernel_spec s = kimage_spec(KERNEL_KIND_POOL, dt, 0);
    s.hidden = 96;
    s.pool_mode = mode;
    s.normalize = normalize;
    s.packed = 1;
    return s;
}

static void pk_run_pool(const kernel_spec *s) {
    char *entry = NULL;
    kernel_launch_dims dims;
    emu_kernel *k = pk_kernel(s, &entry, &dims);
    size_t es = kref_dtype_size(s->dtype), H = (size_t)s->hidden;
    int row = s->pool_mode == PLAN_POOL_ROW;
    for (int parity = 0; k && parity < 2; parity++) {
        pk_batch b;
        pk_batch_make(&b, 50);
        void *x = pk_input(&b, s->dtype, row ? PK_SEQS : PK_TOKENS, (int)H, row, parity);
        void *out = malloc((size_t)PK_SEQS * H * es);
        for (size_t e = 0; e < (size_t)PK_SEQS * H; e++) kref_store(s->dtype, out, e, NAN);
        void *vals[5] = {out, b.req, x, NULL, NULL};
        if (!pk_launch(k, entry, &dims, vals, 5)) {
            kernel_spec one = *s;
            one.packed = 0;
            one.pool_mode = row ? PLAN_POOL_CLS : s->pool_mode; /* alone: the one row is row 0 */
            for (int i = 0; i < b.n; i++) {
                if (pk_poisoned(i, parity)) continue;
                int32_t *r1 = pk_alone_req(&b, i);
                const unsigned char *x1 = (const unsigned char *)x + (size_t)(row ? i : b.start[i]) * H * es;
                double *want = kref_pool(&one, r1, kref_stored(s->dtype, x1, H));
                pk_compare(entry, i, s->dtype, out, (size_t)i, 1, H, H, want);
                free(want);
                free(r1);
            }
        }
        free(out);
        free(x);
        free(b.req);
    }
    free(entry);
}

static kernel_spec pk_specs[16];
static int pk_nspecs;

static void pk_make_specs(void) {
    pk_specs[pk_nspecs++] = pk_attention_spec(PLAN_DTYPE_F32, 16, 0);
    pk_specs[pk_nspecs++] = pk_attention_spec(PLAN_DTYPE_F16, 32, 0);      /* tensor cores where there are */
    pk_specs[pk_nspecs++] = pk_attention_spec(PLAN_DTYPE_BF16, 32, PK_LONGEST); /* MPNet's score bias */
    pk_specs[pk_nspecs++] = pk_attention_spec(PLAN_DTYPE_F32, 16, PK_LONGEST + 8);
    pk_specs[pk_nspecs++] = pk_embed_spec(PLAN_DTYPE_F32);
    pk_specs[pk_nspecs++] = pk_embed_spec(PLAN_DTYPE_F16);
    pk_specs[pk_nspecs++] = pk_pool_spec(PLAN_DTYPE_F32, PLAN_POOL_MEAN, 1);
    pk_specs[pk_nspecs++] = pk_pool_spec(PLAN_DTYPE_BF16, PLAN_POOL_MEAN, 0);
    pk_specs[pk_nspecs++] = pk_pool_spec(PLAN_DTYPE_F16, PLAN_POOL_CLS, 0);
    pk_specs[pk_nspecs++] = pk_pool_spec(PLAN_DTYPE_F32, PLAN_POOL_ROW, 1);
}

static char pk_error[4400];

static int pk_build(void) {
    const char *texts[16];
    char *owned[16] = {NULL};
    int rc = 0;
    for (int i = 0; i < pk_nspecs; i++) {
        char *entry = NULL;
        if (kimage_source(&pk_specs[i], i, &owned[i], &entry)) rc = -1;
        texts[i] = owned[i] ? owned[i] : "";
        free(entry);
    }
    diag d;
    diag_init(&d);
    if (!rc && !(pk_img = kimage_build("emu_kernels_packed.so", texts, pk_nspecs, pk_image_load, &d))) {
        snprintf(pk_error, sizeof pk_error, "%s", d.text);
        rc = -1;
    }
    for (int i = 0; i < pk_nspecs; i++) free(owned[i]);
    return rc;
}

static void pk_run_kind(kernel_kind kind) {
    if (!pk_img) {
        CHECK(0, "no kernel image: %s", pk_error);
        return;
    }
    for (int i = 0; i < pk_nspecs; i++) {
        if (pk_specs[i].kind != kind) continue;
        if (kind == KERNEL_KIND_ATTENTION) pk_run_attention(&pk_specs[i]);
        if (kind == KERNEL_KIND_EMBED_LN) pk_run_embed(&pk_specs[i]);
        if (kind == KERNEL_KIND_POOL) pk_run_pool(&pk_specs[i]);
    }
}

static void test_packed_attention_no_leak(void) { pk_run_kind(KERNEL_KIND_ATTENTION); }
static void test_packed_embed_ln_no_leak(void) { pk_run_kind(KERNEL_KIND_EMBED_LN); }
static void test_packed_pool_no_leak(void) { pk_run_kind(KERNEL_KIND_POOL); }

/* The packed launch contracts: refused where they do not belong. */
static void test_packed_contracts(void) {
    diag d;
    kernel_launch_dims dims;
    kernel_spec s = pk_pool_spec(PLAN_DTYPE_F32, PLAN_POOL_ROW, 0);
    s.packed = 0;
    diag_init(&d);
    CHECK(kernel_dims_in(&s, 64, 0, &dims, &d) != 0 && strstr(d.text, "mode row in a one-request kernel"), "row alone: %s",
          d.text);
    s = pk_attention_spec(PLAN_DTYPE_F32, 16, 0);
    diag_init(&d);
    CHECK(kernel_dims_in(&s, 64, 0, &dims, &d) != 0 && strstr(d.text, "packed kernel in a length bucket"), "%s", d.text);
    s = pk_embed_spec(PLAN_DTYPE_F32);
    diag_init(&d);
    CHECK(kernel_dims_in(&s, 4096, 16, &dims, &d) == 0, "a token bucket past the position table: %s", d.text);
    CHECK(kernel_launch_check_rows(&s, PK_LONGEST + 1, &d) != 0 && strstr(d.text, "positions after pad id"),
          "the longest sequence past the table: %s", d.text);
    s = pk_attention_spec(PLAN_DTYPE_F32, 16, 40);
    diag_init(&d);
    CHECK(kernel_launch_check_rows(&s, 41, &d) != 0 && strstr(d.text, "score-bias table of 40 rows"), "%s", d.text);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    pk_make_specs();
    pk_build();
    CHECK_CASE(test_packed_contracts);
    CHECK_CASE(test_packed_attention_no_leak);
    CHECK_CASE(test_packed_embed_ln_no_leak);
    CHECK_CASE(test_packed_pool_no_leak);
    emu_image_free(pk_img);
    return check_summary();
}
