/*
 * test_ref_ops — the reference executor, op by op and as a whole layer.
 *
 * Each case builds a small graph by hand, writes its weights into an
 * in-memory safetensors image (with the test's own writer and its own
 * float16 / bfloat16 encoders, not the library's), draws sizes and values
 * at random, runs ref_run, and compares with a naive computation written
 * differently from ref.c: straightforward loops in long double, one-pass
 * variance, erfc / exp forms of the activations, softmax without the max
 * subtraction, index arithmetic by division instead of strides.
 *
 * Weight values are drawn so that they are exactly representable in their
 * storage type (multiples of 2^-10 below 2 for float16, of 2^-7 below 2 for
 * bfloat16): then the values the naive code uses are exactly the values the
 * executor reads back, and any difference is the executor's.
 *
 * Tolerances: copies, adds and scales must match exactly (same float
 * operations); one-op float paths within 1e-6 relative (both sides round
 * a more precise value once); the whole-layer chain within 1e-5.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "ir.h"
#include "ref.h"
#include "safetensors.h"

#define S IR_DIM_SEQ
#define T_MAX_NODES 512

/* ---- an in-memory safetensors image ------------------------------------- */

typedef struct t_blob {
    char name[128];
    ir_dtype dtype;
    int ndim;
    int64_t shape[2];
    unsigned char *bytes;
    size_t nbytes;
} t_blob;

/* Exact float16 encoding of a value known to fit (normal range, 11 bits). */
static uint16_t t_f16_bits(float v) {
    if (v == 0.0f) return signbit(v) ? 0x8000 : 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    int e;
    double m = frexp(fabs((double)v), &e);     /* v = m·2^e, m in [0.5, 1) */
    int biased = e - 1 + 15;                   /* v = 1.f·2^(e-1) */
    double frac = (m * 2.0 - 1.0) * 1024.0;
    if (biased < 1 || biased > 30 || frac != floor(frac)) {
        fprintf(stderr, "t_f16_bits: %g is not exactly representable\n", (double)v);
        abort();
    }
    return (uint16_t)(sign | (uint16_t)(biased << 10) | (uint16_t)frac);
}

/* Exact bfloat16 encoding: the top half of the float's bits, low half zero. */
static uint16_t t_bf16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if (u & 0xffffu) {
        fprintf(stderr, "t_bf16_bits: %g is not exactly representable\n", (double)v);
        abort();
    }
    return (uint16_t)(u >> 16);
}

/* Added to every float32 weight value drawn (0 but for the layer-norm case). */
static float t_offset;

/* A random value exactly representable in `dt`, in (-2, 2) times `scale`
 * (scale a power of two keeps it exact). */
static float t_rand_value(ir_dtype dt, float scale) {
    switch (dt) {
    case IR_DTYPE_F16: return (float)check_rng_range(-2047, 2047) / 1024.0f * scale;
    case IR_DTYPE_BF16: return (float)check_rng_range(-255, 255) / 128.0f * scale;
    default: return (float)(check_rng_uniform() * 4.0 - 2.0) * scale + t_offset;
    }
}

static unsigned char *t_encode(ir_dtype dt, const float *v, int64_t n, size_t *nbytes) {
    size_t es = dt == IR_DTYPE_F32 ? 4 : 2;
    unsigned char *b = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        if (dt == IR_DTYPE_F32) {
            memcpy(b + i * 4, &v[i], 4);  /* little-endian host, like the format */
        } else {
            uint16_t h = dt == IR_DTYPE_F16 ? t_f16_bits(v[i]) : t_bf16_bits(v[i]);
            b[i * 2] = (unsigned char)(h & 0xff);
            b[i * 2 + 1] = (unsigned char)(h >> 8);
        }
    }
    *nbytes = (size_t)n * es;
    return b;
}

/* ---- a test model: graph + weights + the float values of each weight ---- */

typedef struct t_model {
    ir_graph g;
    t_blob blobs[128];
    int nblobs;
    float *wvals[T_MAX_NODES];   /* per WEIGHT node: its exact values */
    st_file st;
    int st_open;
    weights w;
} t_model;

static void t_model_init(t_model *m, int64_t max_seq_len) {
    memset(m, 0, sizeof *m);
    ir_graph_init(&m->g);
    m->g.max_seq_len = max_seq_len;
    m->g.source_path = strdup("test.yaml");
}

static void t_model_free(t_model *m) {
    for (int i = 0; i < m->nblobs; i++) free(m->blobs[i].bytes);
    for (int i = 0; i < T_MAX_NODES; i++) free(m->wvals[i]);
    if (m->st_open) st_file_close(&m->st);
    ir_graph_free(&m->g);
}

static int t_line(void) { return (int)check_rng_range(1, 999); }

static int t_input(t_model *m, const char *name, int optional, int32_t def) {
    int i = ir_graph_add(&m->g, IR_OP_INPUT, name, NULL, 0);
    ir_node *n = &m->g.nodes[i];
    n->dtype = IR_DTYPE_I32;
    n->ndim = 1;
    n->shape[0] = S;
    n->optional = optional;
    n->default_value = def;
    n->line = t_line();
    n->col = 3;
    return i;
}

/* A weight node with random values stored as `dt`; values scaled by `scale`. */
static int t_weight(t_model *m, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1,
                    float scale) {
    if (m->nblobs == (int)(sizeof m->blobs / sizeof m->blobs[0]) || m->g.count >= T_MAX_NODES) {
        fprintf(stderr, "t_weight: test model too large\n");
        abort();
    }
    int i = ir_graph_add(&m->g, IR_OP_WEIGHT, name, NULL, 0);
    ir_node *n = &m->g.nodes[i];
    n->dtype = dt;
    n->ndim = ndim;
    n->shape[0] = d0;
    n->shape[1] = d1;
    char wname[128];
    snprintf(wname, sizeof wname, "w.%s", name);
    n->weight = strdup(wname);
    n->line = t_line();
    int64_t numel = ndim == 1 ? d0 : d0 * d1;
    float *v = malloc((size_t)numel * sizeof *v);
    for (int64_t k = 0; k < numel; k++) v[k] = t_rand_value(dt, scale);
    m->wvals[i] = v;
    t_blob *b = &m->blobs[m->nblobs++];
    snprintf(b->name, sizeof b->name, "%s", wname);
    b->dtype = dt;
    b->ndim = ndim;
    b->shape[0] = d0;
    b->shape[1] = d1;
    b->bytes = t_encode(dt, v, numel, &b->nbytes);
    return i;
}

static int t_op(t_model *m, ir_op op, const char *name, int a, int b, int c) {
    int src[3] = {a, b, c}, n = 0;
    while (n < 3 && src[n] >= 0) n++;
    int i = ir_graph_add(&m->g, op, name, src, n);
    m->g.nodes[i].line = t_line();
    m->g.nodes[i].col = 5;
    return i;
}

static void t_set_perm(ir_node *n, int len, const int *perm) {
    n->ndim = len;  /* the loader leaves the perm's length in ndim */
    for (int d = 0; d < len; d++) n->perm[d] = perm[d];
}

static int t_reshape(t_model *m, const char *name, int x, int ndim, const int64_t *dims) {
    int i = t_op(m, IR_OP_RESHAPE, name, x, -1, -1);
    m->g.nodes[i].ndim = ndim;
    for (int d = 0; d < ndim; d++) m->g.nodes[i].shape[d] = dims[d];
    return i;
}

static int t_transpose(t_model *m, const char *name, int x, int ndim, const int *perm) {
    int i = t_op(m, IR_OP_TRANSPOSE, name, x, -1, -1);
    t_set_perm(&m->g.nodes[i], ndim, perm);
    return i;
}

/* Write the image, open it, run inference.  Returns 0 when all went well. */
static int t_model_finish(t_model *m) {
    /* Header JSON, padded with spaces to a multiple of 8. */
    size_t cap = 256 + (size_t)m->nblobs * 256, hl = 0, off = 0;
    char *hdr = malloc(cap);
    hl += (size_t)snprintf(hdr + hl, cap - hl, "{");
    for (int i = 0; i < m->nblobs; i++) {
        const t_blob *b = &m->blobs[i];
        const char *dt = b->dtype == IR_DTYPE_F32 ? "F32" : b->dtype == IR_DTYPE_F16 ? "F16" : "BF16";
        hl += (size_t)snprintf(hdr + hl, cap - hl, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld",
                               i ? "," : "", b->name, dt, (long long)b->shape[0]);
        if (b->ndim == 2) hl += (size_t)snprintf(hdr + hl, cap - hl, ",%lld", (long long)b->shape[1]);
        hl += (size_t)snprintf(hdr + hl, cap - hl, "],\"data_offsets\":[%zu,%zu]}", off,
                               off + b->nbytes);
        off += b->nbytes;
    }
    hl += (size_t)snprintf(hdr + hl, cap - hl, "}");
    while (hl % 8) hdr[hl++] = ' ';
    size_t total = 8 + hl + off;
    unsigned char *img = malloc(total);
    for (int k = 0; k < 8; k++) img[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(img + 8, hdr, hl);
    size_t pos = 8 + hl;
    for (int i = 0; i < m->nblobs; i++) {
        memcpy(img + pos, m->blobs[i].bytes, m->blobs[i].nbytes);
        pos += m->blobs[i].nbytes;
    }
    diag d;
    diag_init(&d);
    int rc = st_file_open_memory(&m->st, img, total, "test.safetensors", &d);
    CHECK(rc == 0, "st_file_open_memory: %s", d.text);
    m->st_open = rc == 0;
    if (m->st_open) st_file_weights(&m->st, &m->w);
    free(img);
    free(hdr);
    if (rc) return -1;
    rc = ir_graph_infer(&m->g, "test.yaml", NULL, 0, &d);
    CHECK(rc == 0, "ir_graph_infer: %s", d.text);
    return rc;
}

static int t_run(t_model *m, const ref_request *req, ref_result *res, diag *d) {
    diag_init(d);
    return ref_run(&m->g, &m->w, req, res, d);
}

/* Run and demand success; returns the output `name` or NULL. */
static const ref_tensor *t_run_ok(t_model *m, const ref_request *req, ref_result *res,
                                  const char *name) {
    diag d;
    int rc = t_run(m, req, res, &d);
    CHECK(rc == 0, "ref_run: %s", d.text);
    if (rc) return NULL;
    const ref_tensor *t = ref_result_find(res, name);
    CHECK(t != NULL, "no output '%s'", name);
    return t;
}

static int32_t *t_rand_ids(int64_t n, int32_t lo, int32_t hi) {
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)check_rng_range(lo, hi);
    return ids;
}

static ir_dtype t_dtype(int k) {
    static const ir_dtype f[3] = {IR_DTYPE_F32, IR_DTYPE_F16, IR_DTYPE_BF16};
    return f[k % 3];
}

/* ---- comparison ---------------------------------------------------------- */

static int t_shape_eq(const ref_tensor *t, int ndim, const int64_t *dims) {
    if (t->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != dims[i]) return 0;
    return 1;
}

/* got[i] vs want[i] within atol + rtol·|want|; reports the first miss. */
static void t_check_close(const char *what, const float *got, const long double *want, int64_t n,
                          double rtol, double atol) {
    double worst = 0;
    int64_t bad = -1;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)((long double)got[i] - want[i]));
        double tol = atol + rtol * fabs((double)want[i]);
        if (!(err <= tol) && bad < 0) bad = i;
        if (err > worst) worst = err;
    }
    CHECK(bad < 0, "%s: element %lld is %.9g, expected %.9Lg (worst error %.3g)", what,
          (long long)bad, bad >= 0 ? (double)got[bad] : 0.0, bad >= 0 ? want[bad] : 0.0L, worst);
}

static void t_check_exact(const char *what, const float *got, const float *want, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            CHECK(0, "%s: element %lld is %.9g, expected exactly %.9g", what, (long long)i,
                  (double)got[i], (double)want[i]);
            return;
        }
}

/* ---- ops ----------------------------------------------------------------- */

/* gather from tables stored in each dtype, and arange → position rows. */
static void test_gather_dtypes_and_arange(void) {
    for (int k = 0; k < 3; k++) {
        t_model m;
        int64_t max = check_rng_range(4, 40), V = check_rng_range(2, 300), D = check_rng_range(1, 70);
        int64_t len = check_rng_range(1, max);
        t_model_init(&m, max);
        int ids = t_input(&m, "input_ids", 0, 0);
        int tab = t_weight(&m, "word", t_dtype(k), 2, V, D, 1.0f);
        int pt = t_weight(&m, "pos", t_dtype(k + 1), 2, max, D, 0.5f);
        int pos = t_op(&m, IR_OP_ARANGE, "position_ids", ids, -1, -1);
        int we = t_op(&m, IR_OP_GATHER, "word_emb", tab, ids, -1);
        int pe = t_op(&m, IR_OP_GATHER, "pos_emb", pt, pos, -1);
        ir_graph_add_output(&m.g, "word", we);
        ir_graph_add_output(&m.g, "pos", pe);
        ir_graph_add_output(&m.g, "position_ids", pos);
        if (t_model_finish(&m)) { t_model_free(&m); return; }
        int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
        ref_request req = {.len = len, .input_ids = id};
        ref_result res;
        const ref_tensor *w = t_run_ok(&m, &req, &res, "word");
        if (w) {
            CHECK(t_shape_eq(w, 2, (int64_t[]){len, D}), "word shape");
            float *want = malloc((size_t)(len * D) * sizeof *want);
            for (int64_t s = 0; s < len; s++)
                for (int64_t d = 0; d < D; d++) want[s * D + d] = m.wvals[tab][id[s] * D + d];
            t_check_exact(ir_dtype_name(t_dtype(k)), w->data, want, len * D);
            const ref_tensor *p = ref_result_find(&res, "pos");
            const ref_tensor *pi = ref_result_find(&res, "position_ids");
            CHECK(p && pi && t_shape_eq(pi, 1, (int64_t[]){len}), "position outputs");
            for (int64_t s = 0; p && pi && s < len; s++) {
                CHECK(pi->data[s] == (float)s, "position_ids[%lld] = %g", (long long)s,
                      (double)pi->data[s]);
                for (int64_t d = 0; d < D; d++) want[s * D + d] = m.wvals[pt][s * D + d];
            }
            if (p) t_check_exact("pos", p->data, want, len * D);
            free(want);
        }
        ref_result_free(&res);
        free(id);
        t_model_free(&m);
    }
}

/* x = gather(table, ids): the usual way a test gets an [S, D] activation. */
static int t_activation_in(t_model *m, const char *name, int ids, int64_t V, int64_t D, float scale) {
    char tname[64];
    snprintf(tname, sizeof tname, "%s_table", name);
    int tab = t_weight(m, tname, IR_DTYPE_F32, 2, V, D, scale);
    return t_op(m, IR_OP_GATHER, name, tab, ids, -1);
}

/* Rows of x as the naive code sees them. */
static float *t_rows(const t_model *m, int gather_node, const int32_t *ids, int64_t len) {
    const ir_node *n = &m->g.nodes[gather_node];
    const ir_node *tab = &m->g.nodes[n->src[0]];
    int64_t D = tab->shape[1];
    float *x = malloc((size_t)(len * D) * sizeof *x);
    for (int64_t s = 0; s < len; s++)
        memcpy(x + s * D, m->wvals[n->src[0]] + ids[s] * D, (size_t)D * sizeof *x);
    return x;
}

static void test_add_bias_add_scale(void) {
    t_model m;
    int64_t V = check_rng_range(2, 50), D = check_rng_range(1, 90), len = check_rng_range(1, 33);
    t_model_init(&m, 64);
    int ids = t_input(&m, "input_ids", 0, 0);
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "y", ids, V, D, 3.0f);
    int bias = t_weight(&m, "bias", IR_DTYPE_BF16, 1, D, 0, 1.0f);
    int a = t_op(&m, IR_OP_ADD, "a", x, y, -1);
    int b = t_op(&m, IR_OP_BIAS_ADD, "b", a, bias, -1);
    int sc = t_op(&m, IR_OP_SCALE, "sc", b, -1, -1);
    float by = (float)(check_rng_uniform() * 4.0 - 2.0);
    m.g.nodes[sc].scale = by;
    ir_graph_add_output(&m.g, "b", b);
    ir_graph_add_output(&m.g, "sc", sc);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    ref_request req = {.len = len, .input_ids = id};
    ref_result res;
    const ref_tensor *tb = t_run_ok(&m, &req, &res, "b");
    const ref_tensor *ts = ref_result_find(&res, "sc");
    if (tb && ts) {
        float *xs = t_rows(&m, x, id, len), *ys = t_rows(&m, y, id, len);
        float *wb = malloc((size_t)(len * D) * sizeof *wb), *ws = malloc((size_t)(len * D) * sizeof *ws);
        for (int64_t s = 0; s < len; s++)
            for (int64_t d = 0; d < D; d++) {
                float sum = xs[s * D + d] + ys[s * D + d];
                wb[s * D + d] = sum + m.wvals[bias][d];
                ws[s * D + d] = wb[s * D + d] * by;  /* a float product is rounded once */
            }
        CHECK(t_shape_eq(tb, 2, (int64_t[]){len, D}), "shape");
        t_check_exact("bias_add", tb->data, wb, len * D);
        t_check_exact("scale", ts->data, ws, len * D);
        free(xs); free(ys); free(wb); free(ws);
    }
    ref_result_free(&res);
    free(id);
    t_model_free(&m);
}

static void test_layer_norm(void) {
    t_model m;
    int64_t V = check_rng_range(2, 50), D = check_rng_range(2, 200), len = check_rng_range(1, 20);
    t_model_init(&m, 0);  /* no max_seq_len: any length */
    int ids = t_input(&m, "input_ids", 0, 0);
    /* Rows with a mean far from zero: where a careless variance loses digits. */
    t_offset = (float)check_rng_range(-20, 20);
    int x = t_activation_in(&m, "x", ids, V, D, 8.0f);
    t_offset = 0.0f;
    int gam = t_weight(&m, "gamma", IR_DTYPE_F16, 1, D, 0, 1.0f);
    int bet = t_weight(&m, "beta", IR_DTYPE_BF16, 1, D, 0, 1.0f);
    int ln = t_op(&m, IR_OP_LAYER_NORM, "ln", x, gam, bet);
    float eps = (float)pow(10.0, -check_rng_range(3, 12));
    m.g.nodes[ln].eps = eps;
    ir_graph_add_output(&m.g, "ln", ln);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    ref_request req = {.len = len, .input_ids = id};
    ref_result res;
    const ref_tensor *t = t_run_ok(&m, &req, &res, "ln");
    if (t) {
        float *xs = t_rows(&m, x, id, len);
        long double *want = malloc((size_t)(len * D) * sizeof *want);
        for (int64_t s = 0; s < len; s++) {
            long double sum = 0, sq = 0;
            for (int64_t d = 0; d < D; d++) {
                sum += xs[s * D + d];
                sq += (long double)xs[s * D + d] * xs[s * D + d];
            }
            long double mean = sum / D, var = sq / D - mean * mean;
            for (int64_t d = 0; d < D; d++)
                want[s * D + d] = (xs[s * D + d] - mean) / sqrtl(var + eps) * m.wvals[gam][d] +
                                  m.wvals[bet][d];
        }
        t_check_close("layer_norm", t->data, want, len * D, 1e-6, 1e-6);
        free(xs);
        free(want);
    }
    ref_result_free(&res);
    free(id);
    t_model_free(&m);
}

static void test_matmul_dtypes(void) {
    for (int k = 0; k < 3; k++) {
        t_model m;
        int64_t V = check_rng_range(2, 40), K = check_rng_range(1, 70), N = check_rng_range(1, 37);
        int64_t len = check_rng_range(1, 17);
        t_model_init(&m, 32);
        int ids = t_input(&m, "input_ids", 0, 0);
        int x = t_activation_in(&m, "x", ids, V, K, 1.0f);
        int w = t_weight(&m, "w", t_dtype(k), 2, N, K, 1.0f);
        int y = t_op(&m, IR_OP_MATMUL, "y", x, w, -1);
        ir_graph_add_output(&m.g, "y", y);
        if (t_model_finish(&m)) { t_model_free(&m); return; }
        int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
        ref_request req = {.len = len, .input_ids = id};
        ref_result res;
        const ref_tensor *t = t_run_ok(&m, &req, &res, "y");
        if (t) {
            CHECK(t_shape_eq(t, 2, (int64_t[]){len, N}), "shape");
            float *xs = t_rows(&m, x, id, len);
            long double *want = malloc((size_t)(len * N) * sizeof *want);
            for (int64_t i = 0; i < len; i++)
                for (int64_t j = 0; j < N; j++) {
                    long double acc = 0;
                    for (int64_t q = 0; q < K; q++) acc += (long double)xs[i * K + q] * m.wvals[w][j * K + q];
                    want[i * N + j] = acc;
                }
            t_check_close(ir_dtype_name(t_dtype(k)), t->data, want, len * N, 1e-6, 1e-9);
            free(xs);
            free(want);
        }
        ref_result_free(&res);
        free(id);
        t_model_free(&m);
    }
}

/* The activations in forms other than ref.c's: erfc, and tanh through exp. */
static long double t_tanh_exp(long double u) {
    if (u > 20) return 1;
    if (u < -20) return -1;
    long double e = expl(2 * u);
    return (e - 1) / (e + 1);
}

static long double t_act(ir_act act, long double x) {
    switch (act) {
    case IR_ACT_GELU_ERF: return x * 0.5L * erfcl(-x / sqrtl(2.0L));
    case IR_ACT_GELU_TANH: {
        long double u = sqrtl(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
        return 0.5L * x * (1 + t_tanh_exp(u));
    }
    case IR_ACT_RELU: return x > 0 ? x : 0;
    case IR_ACT_TANH: return t_tanh_exp(x);
    default: return NAN;
    }
}

static void test_activations(void) {
    for (int a = 0; a < IR_ACT_COUNT; a++) {
        t_model m;
        int64_t V = check_rng_range(2, 50), D = check_rng_range(1, 64), len = check_rng_range(1, 30);
        t_model_init(&m, 30);
        int ids = t_input(&m, "input_ids", 0, 0);
        int x = t_activation_in(&m, "x", ids, V, D, 4.0f);  /* values in (-8, 8) */
        int y = t_op(&m, IR_OP_ACTIVATION, "y", x, -1, -1);
        m.g.nodes[y].act = (ir_act)a;
        ir_graph_add_output(&m.g, "y", y);
        if (t_model_finish(&m)) { t_model_free(&m); return; }
        int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
        ref_request req = {.len = len, .input_ids = id};
        ref_result res;
        const ref_tensor *t = t_run_ok(&m, &req, &res, "y");
        if (t) {
            float *xs = t_rows(&m, x, id, len);
            long double *want = malloc((size_t)(len * D) * sizeof *want);
            for (int64_t i = 0; i < len * D; i++) want[i] = t_act((ir_act)a, xs[i]);
            /* gelu of a large negative x is a tiny number: judge it absolutely. */
            t_check_close(ir_act_name((ir_act)a), t->data, want, len * D, 1e-6, 1e-12);
            free(xs);
            free(want);
        }
        ref_result_free(&res);
        free(id);
        t_model_free(&m);
    }
}

/* reshape [S, A·B·C] -> [S, A, B, C], a random 4-D permutation, then a
 * reshape back to 2-D and a 2-D transpose; checked by index arithmetic. */
static void test_reshape_transpose(void) {
    t_model m;
    int64_t A = check_rng_range(1, 4), B = check_rng_range(1, 5), C = check_rng_range(1, 6);
    int64_t V = check_rng_range(2, 30), len = check_rng_range(1, 9), D = A * B * C;
    t_model_init(&m, 16);
    int ids = t_input(&m, "input_ids", 0, 0);
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int r4 = t_reshape(&m, "r4", x, 4, (int64_t[]){S, A, B, C});
    int perm[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        int j = (int)check_rng_range(0, i), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    int t4 = t_transpose(&m, "t4", r4, 4, perm);
    int64_t in_dims[4] = {len, A, B, C}, out_dims[4];
    for (int d = 0; d < 4; d++) out_dims[d] = in_dims[perm[d]];
    /* And the plain 2-D transpose of x. */
    int t2 = t_transpose(&m, "t2", x, 2, (int[]){1, 0});
    ir_graph_add_output(&m.g, "t4", t4);
    ir_graph_add_output(&m.g, "t2", t2);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    ref_request req = {.len = len, .input_ids = id};
    ref_result res;
    const ref_tensor *o4 = t_run_ok(&m, &req, &res, "t4");
    const ref_tensor *o2 = ref_result_find(&res, "t2");
    if (o4 && o2) {
        CHECK(t_shape_eq(o4, 4, out_dims), "4-D shape");
        CHECK(t_shape_eq(o2, 2, (int64_t[]){D, len}), "2-D shape");
        float *xs = t_rows(&m, x, id, len);
        int64_t total = len * D;
        float *want = malloc((size_t)total * sizeof *want);
        for (int64_t o = 0; o < total; o++) {
            /* Output multi-index by division, then the input element it is. */
            int64_t idx[4], rest = o, in_idx[4];
            for (int d = 3; d >= 0; d--) {
                idx[d] = rest % out_dims[d];
                rest /= out_dims[d];
            }
            for (int d = 0; d < 4; d++) in_idx[perm[d]] = idx[d];
            int64_t flat = ((in_idx[0] * A + in_idx[1]) * B + in_idx[2]) * C + in_idx[3];
            want[o] = xs[flat];
        }
        t_check_exact("transpose 4-D", o4->data, want, total);
        for (int64_t d = 0; d < D; d++)
            for (int64_t s = 0; s < len; s++) want[d * len + s] = xs[s * D + d];
        t_check_exact("transpose 2-D", o2->data, want, total);
        free(xs);
        free(want);
    }
    ref_result_free(&res);
    free(id);
    t_model_free(&m);
}

static void test_batched_matmul(void) {
    for (int tb = 0; tb < 2; tb++) {
        t_model m;
        int64_t B = check_rng_range(1, 4), M = check_rng_range(1, 9), K = check_rng_range(1, 20);
        int64_t N = check_rng_range(1, 11);
        t_model_init(&m, 8);
        t_input(&m, "input_ids", 0, 0);
        int wa = t_weight(&m, "a", t_dtype(tb), 2, B * M, K, 1.0f);
        int wb = tb ? t_weight(&m, "b", t_dtype(tb + 1), 2, B * N, K, 1.0f)
                    : t_weight(&m, "b", t_dtype(tb + 1), 2, B * K, N, 1.0f);
        int a3 = t_reshape(&m, "a3", wa, 3, (int64_t[]){B, M, K});
        int b3 = tb ? t_reshape(&m, "b3", wb, 3, (int64_t[]){B, N, K})
                    : t_reshape(&m, "b3", wb, 3, (int64_t[]){B, K, N});
        int c = t_op(&m, IR_OP_BATCHED_MATMUL, "c", a3, b3, -1);
        m.g.nodes[c].transpose_b = tb;
        ir_graph_add_output(&m.g, "c", c);
        if (t_model_finish(&m)) { t_model_free(&m); return; }
        int32_t id[1] = {0};
        ref_request req = {.len = 1, .input_ids = id};
        ref_result res;
        const ref_tensor *t = t_run_ok(&m, &req, &res, "c");
        if (t) {
            CHECK(t_shape_eq(t, 3, (int64_t[]){B, M, N}), "shape");
            const float *av = m.wvals[wa], *bv = m.wvals[wb];
            long double *want = malloc((size_t)(B * M * N) * sizeof *want);
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        long double acc = 0;
                        for (int64_t q = 0; q < K; q++) {
                            float bq = tb ? bv[(b * N + j) * K + q] : bv[(b * K + q) * N + j];
                            acc += (long double)av[(b * M + i) * K + q] * bq;
                        }
                        want[(b * M + i) * N + j] = acc;
                    }
            t_check_close(tb ? "transpose_b" : "plain", t->data, want, B * M * N, 1e-6, 1e-9);
            free(want);
        }
        ref_result_free(&res);
        t_model_free(&m);
    }
}

/* scores [D, S] masked by attention_mask then softmaxed over S. */
static void test_mask_softmax(void) {
    t_model m;
    int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 12), len = check_rng_range(1, 24);
    t_model_init(&m, 24);
    int ids = t_input(&m, "input_ids", 0, 0);
    int am = t_input(&m, "attention_mask", 1, 1);
    int x = t_activation_in(&m, "x", ids, V, D, 2.0f);
    int xt = t_transpose(&m, "xt", x, 2, (int[]){1, 0});
    int mk = t_op(&m, IR_OP_MASK, "masked", xt, am, -1);
    int sm = t_op(&m, IR_OP_SOFTMAX, "probs", mk, -1, -1);
    ir_graph_add_output(&m.g, "masked", mk);
    ir_graph_add_output(&m.g, "probs", sm);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    int32_t *mask = t_rand_ids(len, 0, 1);
    mask[check_rng_range(0, len - 1)] = 1;
    ref_request req = {.len = len, .input_ids = id, .attention_mask = mask};
    ref_result res;
    const ref_tensor *tm = t_run_ok(&m, &req, &res, "masked");
    const ref_tensor *tp = ref_result_find(&res, "probs");
    if (tm && tp) {
        float *xs = t_rows(&m, x, id, len);
        float *wm = malloc((size_t)(D * len) * sizeof *wm);
        long double *wp = malloc((size_t)(D * len) * sizeof *wp);
        for (int64_t d = 0; d < D; d++) {
            long double sum = 0;
            for (int64_t s = 0; s < len; s++) {
                /* Hugging Face: the score is lost in float32, leaving finfo.min. */
                wm[d * len + s] = mask[s] ? xs[s * D + d] : -FLT_MAX;
                if (mask[s]) sum += expl(xs[s * D + d]);
            }
            for (int64_t s = 0; s < len; s++)
                wp[d * len + s] = mask[s] ? expl(xs[s * D + d]) / sum : 0;
        }
        t_check_exact("mask", tm->data, wm, D * len);
        t_check_close("softmax", tp->data, wp, D * len, 1e-6, 1e-30);
        free(xs);
        free(wm);
        free(wp);
    }
    ref_result_free(&res);
    free(id);
    free(mask);
    t_model_free(&m);
}

/* With every key masked, transformers gives a uniform distribution. */
static void test_all_masked_row_is_uniform(void) {
    t_model m;
    int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 6), len = check_rng_range(1, 40);
    t_model_init(&m, 64);
    int ids = t_input(&m, "input_ids", 0, 0);
    int am = t_input(&m, "attention_mask", 1, 1);
    int x = t_activation_in(&m, "x", ids, V, D, 8.0f);
    int xt = t_transpose(&m, "xt", x, 2, (int[]){1, 0});
    int mk = t_op(&m, IR_OP_MASK, "masked", xt, am, -1);
    int sm = t_op(&m, IR_OP_SOFTMAX, "probs", mk, -1, -1);
    ir_graph_add_output(&m.g, "probs", sm);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    int32_t *mask = calloc((size_t)len, sizeof *mask);
    ref_request req = {.len = len, .input_ids = id, .attention_mask = mask};
    ref_result res;
    const ref_tensor *t = t_run_ok(&m, &req, &res, "probs");
    if (t) {
        float uniform = (float)(1.0 / (double)len);
        for (int64_t i = 0; i < D * len; i++)
            if (t->data[i] != uniform) {
                CHECK(0, "probs[%lld] = %.9g, expected exactly 1/%lld = %.9g", (long long)i,
                      (double)t->data[i], (long long)len, (double)uniform);
                break;
            }
    }
    ref_result_free(&res);
    free(id);
    free(mask);
    t_model_free(&m);
}

/* slice along a constant axis, and along S (checked at run time). */
static void test_slice(void) {
    t_model m;
    int64_t V = check_rng_range(2, 30), D = check_rng_range(1, 40), len = check_rng_range(4, 20);
    t_model_init(&m, 20);
    int ids = t_input(&m, "input_ids", 0, 0);
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int sc = t_op(&m, IR_OP_SLICE, "cols", x, -1, -1);
    int64_t cstart = check_rng_range(0, D - 1), clen = check_rng_range(1, D - cstart);
    m.g.nodes[sc].axis = 1;
    m.g.nodes[sc].start = cstart;
    m.g.nodes[sc].len = clen;
    int sr = t_op(&m, IR_OP_SLICE, "rows", x, -1, -1);
    int64_t rstart = check_rng_range(1, 2), rlen = check_rng_range(1, 2);
    m.g.nodes[sr].axis = 0;
    m.g.nodes[sr].start = rstart;
    m.g.nodes[sr].len = rlen;
    ir_graph_add_output(&m.g, "cols", sc);
    ir_graph_add_output(&m.g, "rows", sr);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    ref_request req = {.len = len, .input_ids = id};
    ref_result res;
    const ref_tensor *tc = t_run_ok(&m, &req, &res, "cols");
    const ref_tensor *tr = ref_result_find(&res, "rows");
    if (tc && tr) {
        float *xs = t_rows(&m, x, id, len);
        float *want = malloc((size_t)(len * D) * sizeof *want);
        CHECK(t_shape_eq(tc, 2, (int64_t[]){len, clen}) && t_shape_eq(tr, 2, (int64_t[]){rlen, D}),
              "slice shapes");
        for (int64_t s = 0; s < len; s++)
            for (int64_t j = 0; j < clen; j++) want[s * clen + j] = xs[s * D + cstart + j];
        t_check_exact("cols", tc->data, want, len * clen);
        t_check_exact("rows", tr->data, xs + rstart * D, rlen * D);
        free(xs);
        free(want);
    }
    ref_result_free(&res);
    /* A request too short for the S slice is refused at the slice. */
    req.len = rstart + rlen - 1;  /* >= 1 since rstart >= 1 */
    {
        diag d;
        int rc = t_run(&m, &req, &res, &d);
        CHECK(rc == -1, "short request not refused");
        CHECK(strstr(d.text, "slice 'rows'") && strstr(d.text, "runs past the end"), "'%s'", d.text);
        char where[32];
        snprintf(where, sizeof where, ":%d:", m.g.nodes[sr].line);
        CHECK(strstr(d.text, where) != NULL, "'%s' lacks the node's line %s", d.text, where);
        CHECK(res.count == 0 && res.outputs == NULL, "result left empty on error");
    }
    free(id);
    t_model_free(&m);
}

/* ---- sentence-transformers heads: pool and l2_normalize ------------------- */

/* Hand computations in long double, written from sentence-transformers'
 * Pooling (sum(x * mask) / clamp(sum(mask), min=1e-9)) and
 * torch.nn.functional.normalize (x / max(||x||_2, 1e-12)). */
static void t_want_mean(const float *xs, const int32_t *mask, int64_t len, int64_t D, long double *want) {
    long double count = 0;
    for (int64_t d = 0; d < D; d++) want[d] = 0;
    for (int64_t s = 0; s < len; s++) {
        long double m = mask[s] != 0 ? 1.0L : 0.0L;
        count += m;
        if (m != 0)
            for (int64_t d = 0; d < D; d++) want[d] += (long double)xs[s * D + d] * m;
    }
    long double denom = count < 1e-9L ? 1e-9L : count;
    for (int64_t d = 0; d < D; d++) want[d] /= denom;
}

static void t_want_normalize(const long double *x, int64_t D, long double *want) {
    long double ss = 0;
    for (int64_t d = 0; d < D; d++) ss += x[d] * x[d];
    long double norm = sqrtl(ss);
    if (norm < 1e-12L) norm = 1e-12L;
    for (int64_t d = 0; d < D; d++) want[d] = x[d] / norm;
}

/*
 * pool (cls and mean, over a mask with zeros) and l2_normalize (of the
 * pooled rows and row by row of a matrix), against the hand computations;
 * a POOL with `normalize` set (what fuse_pool_normalize makes) gives the
 * chain's bits exactly.
 */
static void test_pool_l2_normalize(void) {
    for (int round = 0; round < 6; round++) {
        t_model m;
        int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 70), len = check_rng_range(1, 30);
        t_model_init(&m, 32);
        int ids = t_input(&m, "input_ids", 0, 0);
        int am = t_input(&m, "attention_mask", 1, 1);
        int x = t_activation_in(&m, "x", ids, V, D, 2.0f);
        int mean = t_op(&m, IR_OP_POOL, "mean", x, am, -1);
        m.g.nodes[mean].pool_mode = IR_POOL_MEAN;
        int cls = t_op(&m, IR_OP_POOL, "cls", x, -1, -1);
        m.g.nodes[cls].pool_mode = IR_POOL_CLS;
        int mean_n = t_op(&m, IR_OP_L2_NORMALIZE, "mean_n", mean, -1, -1);
        int cls_n = t_op(&m, IR_OP_L2_NORMALIZE, "cls_n", cls, -1, -1);
        int rows_n = t_op(&m, IR_OP_L2_NORMALIZE, "rows_n", x, -1, -1);
        int fused = t_op(&m, IR_OP_POOL, "fused", x, am, -1);
        m.g.nodes[fused].pool_mode = IR_POOL_MEAN;
        m.g.nodes[fused].normalize = 1;
        const char *outs[6] = {"mean", "cls", "mean_n", "cls_n", "rows_n", "fused"};
        int nodes[6] = {mean, cls, mean_n, cls_n, rows_n, fused};
        for (int k = 0; k < 6; k++) ir_graph_add_output(&m.g, outs[k], nodes[k]);
        if (t_model_finish(&m)) { t_model_free(&m); return; }
        CHECK(m.g.nodes[mean].ndim == 1 && m.g.nodes[mean].shape[0] == D && m.g.nodes[rows_n].ndim == 2,
              "pool infers [H], l2_normalize keeps the shape");
        int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
        int32_t *mask = malloc((size_t)len * sizeof *mask);
        /* rounds 0-3: zeros at random; round 4: one kept row; round 5: all
         * zero (a mask value other than 0/1 is refused: hardening.sh) */
        for (int64_t s = 0; s < len; s++)
            mask[s] = round == 5 ? 0 : round == 4 ? s == len - 1 : (int32_t)check_rng_range(0, 1);
        if (round < 4) mask[check_rng_range(0, len - 1)] = 1; /* some row kept: the all-zero case is round 5 */
        ref_request req = {.len = len, .input_ids = id, .attention_mask = mask};
        ref_result res;
        const ref_tensor *t[6] = {t_run_ok(&m, &req, &res, "mean")};
        for (int k = 1; t[0] && k < 6; k++) t[k] = ref_result_find(&res, outs[k]);
        if (t[0] && t[5]) {
            float *xs = t_rows(&m, x, id, len);
            long double *w = malloc((size_t)(len * D + 4 * D) * sizeof *w), *wn = w + D, *wc = wn + D, *wcn = wc + D,
                        *wr = wcn + D;
            t_want_mean(xs, mask, len, D, w);
            t_want_normalize(w, D, wn);
            for (int64_t d = 0; d < D; d++) wc[d] = xs[d];
            t_want_normalize(wc, D, wcn);
            for (int64_t s = 0; s < len; s++) {
                long double row[80];
                for (int64_t d = 0; d < D; d++) row[d] = xs[s * D + d];
                t_want_normalize(row, D, wr + s * D);
            }
            CHECK(t_shape_eq(t[0], 1, (int64_t[]){D}) && t_shape_eq(t[1], 1, (int64_t[]){D}) &&
                      t_shape_eq(t[4], 2, (int64_t[]){len, D}),
                  "output shapes");
            t_check_close("mean pool", t[0]->data, w, D, 1e-6, 1e-30);
            t_check_exact("cls pool", t[1]->data, xs, D);
            t_check_close("mean pool, normalized", t[2]->data, wn, D, 1e-6, 1e-30);
            t_check_close("cls pool, normalized", t[3]->data, wcn, D, 1e-6, 1e-30);
            t_check_close("rows normalized", t[4]->data, wr, len * D, 1e-6, 1e-30);
            t_check_exact("pool with normalize = pool -> l2_normalize", t[5]->data, t[2]->data, D);
            if (round == 5) {
                /* sentence-transformers: 0 / clamp(0, 1e-9) = 0, then 0 / 1e-12 = 0 */
                for (int64_t d = 0; d < D; d++)
                    CHECK(t[0]->data[d] == 0.0f && t[2]->data[d] == 0.0f && !signbit(t[2]->data[d]),
                          "all-zero mask: element %lld is %g / %g, expected 0", (long long)d, (double)t[0]->data[d],
                          (double)t[2]->data[d]);
            } else {
                double ss = 0;
                for (int64_t d = 0; d < D; d++) ss += (double)t[2]->data[d] * t[2]->data[d];
                CHECK(fabs(ss - 1.0) < 1e-5, "normalized norm^2 %.9g", ss);
            }
            free(xs);
            free(w);
        }
        ref_result_free(&res);
        free(id);
        free(mask);
        t_model_free(&m);
    }
}

/* Shapes the ops refuse, each at the node's line. */
static void test_pool_shape_errors(void) {
    for (int k = 0; k < 3; k++) {
        t_model m;
        t_model_init(&m, 16);
        int ids = t_input(&m, "input_ids", 0, 0);
        int am = t_input(&m, "attention_mask", 1, 1);
        int x = t_activation_in(&m, "x", ids, 5, 8, 1.0f);
        int bad;
        const char *want;
        if (k == 0) {
            int p = t_op(&m, IR_OP_POOL, "p", x, am, -1);
            m.g.nodes[p].pool_mode = IR_POOL_MEAN;
            bad = t_op(&m, IR_OP_POOL, "pp", p, -1, -1); /* a pool of a pooled row */
            want = "pool 'pp': x 'p' is [8] (expected a 2-D [S, H])";
        } else if (k == 1) {
            bad = t_op(&m, IR_OP_POOL, "nomask", x, -1, -1);
            m.g.nodes[bad].pool_mode = IR_POOL_MEAN;
            want = "pool 'nomask': mode mean needs a mask";
        } else {
            bad = t_op(&m, IR_OP_POOL, "fmask", x, x, -1);
            m.g.nodes[bad].pool_mode = IR_POOL_MEAN;
            want = "pool 'fmask': mask 'x' is float32 (expected int32)";
        }
        ir_graph_add_output(&m.g, "out", bad);
        diag d;
        diag_init(&d);
        /* t_model_finish runs infer and CHECKs it; call infer ourselves */
        int rc = ir_graph_infer(&m.g, "test.yaml", NULL, 0, &d);
        char where[32];
        snprintf(where, sizeof where, "test.yaml:%d:", m.g.nodes[bad].line);
        CHECK(rc != 0 && strstr(d.text, want) && strstr(d.text, where), "case %d: '%s'", k, d.text);
        t_model_free(&m);
    }
}

/* ---- requests ------------------------------------------------------------ */

static void test_request_errors(void) {
    t_model m;
    int64_t V = check_rng_range(5, 100), D = check_rng_range(1, 8), max = check_rng_range(4, 32);
    t_model_init(&m, max);
    int ids = t_input(&m, "input_ids", 0, 0);
    int tt = t_input(&m, "token_type_ids", 0, 0);  /* required in this graph */
    int x = t_activation_in(&m, "word_emb", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "type_emb", tt, 2, D, 1.0f);
    int a = t_op(&m, IR_OP_ADD, "sum", x, y, -1);
    ir_graph_add_output(&m.g, "sum", a);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int64_t len = check_rng_range(2, max);
    int32_t *id = t_rand_ids(max + 1, 0, (int32_t)V - 1);
    int32_t *types = t_rand_ids(max + 1, 0, 1);
    ref_result res;
    diag d;

    ref_request req = {.len = 0, .input_ids = id, .token_type_ids = types};
    CHECK(t_run(&m, &req, &res, &d) == -1 && strstr(d.text, "length is 0"), "len 0: '%s'", d.text);
    CHECK(d.code == DIAG_CODE_INPUT, "len 0 code");

    req.len = max + check_rng_range(1, 5);
    char want[160];
    snprintf(want, sizeof want, "length %lld exceeds the model's max_seq_len %lld",
             (long long)req.len, (long long)max);
    CHECK(t_run(&m, &req, &res, &d) == -1 && strstr(d.text, want), "too long: '%s'", d.text);

    req.len = len;
    req.input_ids = NULL;
    CHECK(t_run(&m, &req, &res, &d) == -1 && strstr(d.text, "input_ids is required"),
          "no ids: '%s'", d.text);

    req.input_ids = id;
    req.token_type_ids = NULL;
    CHECK(t_run(&m, &req, &res, &d) == -1 && strstr(d.text, "'token_type_ids' is required"),
          "no required types: '%s'", d.text);

    req.token_type_ids = types;
    /* The first id past the table, one far past it, and a negative one. */
    int32_t bad_ids[3] = {(int32_t)V, (int32_t)(V + check_rng_range(1, 100000)),
                          -(int32_t)check_rng_range(1, 9)};
    for (int k = 0; k < 3; k++) {
        int64_t pos = check_rng_range(0, len - 1);
        int32_t saved = id[pos];
        id[pos] = bad_ids[k];
        snprintf(want, sizeof want, "input_ids[%lld] = %d is out of range (table 'w.word_emb_table' has %lld rows)",
                 (long long)pos, (int)id[pos], (long long)V);
        CHECK(t_run(&m, &req, &res, &d) == -1 && strstr(d.text, want), "bad id: '%s' lacks '%s'",
              d.text, want);
        CHECK(d.code == DIAG_CODE_INPUT && res.count == 0, "bad id code/result");
        id[pos] = saved;
    }

    /* And the same request with good ids runs. */
    CHECK(t_run(&m, &req, &res, &d) == 0, "good request: %s", d.text);
    ref_result_free(&res);
    free(id);
    free(types);
    t_model_free(&m);
}

static void test_missing_weight(void) {
    t_model m;
    t_model_init(&m, 8);
    int ids = t_input(&m, "input_ids", 0, 0);
    int x = t_activation_in(&m, "x", ids, 4, 3, 1.0f);
    ir_graph_add_output(&m.g, "x", x);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int tab = m.g.nodes[x].src[0];
    free(m.g.nodes[tab].weight);
    m.g.nodes[tab].weight = strdup("no.such.tensor");
    int32_t id[2] = {1, 2};
    ref_request req = {.len = 2, .input_ids = id};
    ref_result res;
    diag d;
    CHECK(t_run(&m, &req, &res, &d) == -1, "missing weight not refused");
    CHECK(strstr(d.text, "'no.such.tensor'") && strstr(d.text, "test.safetensors"), "'%s'", d.text);
    t_model_free(&m);
}

/* Omitted optional inputs read as their default in every position. */
static void test_optional_defaults(void) {
    t_model m;
    int64_t V = check_rng_range(2, 30), T = check_rng_range(2, 4), D = check_rng_range(1, 10);
    int64_t len = check_rng_range(1, 16);
    int32_t tdef = (int32_t)check_rng_range(0, T - 1);
    t_model_init(&m, 16);
    int ids = t_input(&m, "input_ids", 0, 0);
    int tt = t_input(&m, "token_type_ids", 1, tdef);
    int am = t_input(&m, "attention_mask", 1, 1);
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "y", tt, T, D, 1.0f);
    int a = t_op(&m, IR_OP_ADD, "a", x, y, -1);
    int at = t_transpose(&m, "at", a, 2, (int[]){1, 0});
    int mk = t_op(&m, IR_OP_MASK, "mk", at, am, -1);
    ir_graph_add_output(&m.g, "mk", mk);
    ir_graph_add_output(&m.g, "types", tt);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    int32_t *types = malloc((size_t)len * sizeof *types), *ones = malloc((size_t)len * sizeof *ones);
    for (int64_t s = 0; s < len; s++) {
        types[s] = tdef;
        ones[s] = 1;
    }
    ref_request omitted = {.len = len, .input_ids = id};
    ref_request explicit_ = {.len = len, .input_ids = id, .token_type_ids = types, .attention_mask = ones};
    ref_result r1, r2;
    const ref_tensor *t1 = t_run_ok(&m, &omitted, &r1, "mk");
    const ref_tensor *t2 = t_run_ok(&m, &explicit_, &r2, "mk");
    if (t1 && t2) {
        t_check_exact("defaults", t1->data, t2->data, len * D);
        /* And against the naive sum: no position is masked. */
        float *want = malloc((size_t)(len * D) * sizeof *want);
        for (int64_t d = 0; d < D; d++)
            for (int64_t s = 0; s < len; s++)
                want[d * len + s] = m.wvals[m.g.nodes[x].src[0]][id[s] * D + d] +
                                    m.wvals[m.g.nodes[y].src[0]][tdef * D + d];
        t_check_exact("naive", t1->data, want, len * D);
        free(want);
        const ref_tensor *ty = ref_result_find(&r1, "types");
        CHECK(ty && ty->data[len - 1] == (float)tdef, "token_type_ids default output");
    }
    ref_result_free(&r1);
    ref_result_free(&r2);
    free(id);
    free(types);
    free(ones);
    t_model_free(&m);
}

/*
 * A table tied to a matmul weight (read by gather before and after it is
 * widened), a weight used twice, a weight and an input as graph outputs,
 * and dead nodes: the lifetime bookkeeping must keep each buffer exactly
 * as long as it is read.
 */
static void test_shared_weights_and_leaf_outputs(void) {
    t_model m;
    int64_t V = check_rng_range(2, 30), D = check_rng_range(1, 20), len = check_rng_range(1, 12);
    t_model_init(&m, 12);
    int ids = t_input(&m, "input_ids", 0, 0);
    int tab = t_weight(&m, "tied", IR_DTYPE_BF16, 2, V, D, 1.0f);
    int e1 = t_op(&m, IR_OP_GATHER, "e1", tab, ids, -1);       /* from the file */
    int lg = t_op(&m, IR_OP_MATMUL, "logits", e1, tab, -1);    /* widens the table */
    int e2 = t_op(&m, IR_OP_GATHER, "e2", tab, ids, -1);       /* from the buffer */
    int dead = t_op(&m, IR_OP_SCALE, "dead", e2, -1, -1);
    (void)dead;
    int sum = t_op(&m, IR_OP_ADD, "sum", e1, e2, -1);
    ir_graph_add_output(&m.g, "logits", lg);
    ir_graph_add_output(&m.g, "sum", sum);
    ir_graph_add_output(&m.g, "table", tab);
    ir_graph_add_output(&m.g, "ids", ids);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int32_t *id = t_rand_ids(len, 0, (int32_t)V - 1);
    ref_request req = {.len = len, .input_ids = id};
    ref_result res;
    const ref_tensor *tl = t_run_ok(&m, &req, &res, "logits");
    if (tl) {
        const float *w = m.wvals[tab];
        const ref_tensor *ts = ref_result_find(&res, "sum"), *tt = ref_result_find(&res, "table");
        const ref_tensor *ti = ref_result_find(&res, "ids");
        CHECK(ts && tt && ti, "outputs");
        CHECK(res.count == 4 && strcmp(res.outputs[2].name, "table") == 0, "output order");
        long double *want = malloc((size_t)(len * V) * sizeof *want);
        float *ws = malloc((size_t)(len * D) * sizeof *ws);
        for (int64_t s = 0; s < len; s++) {
            for (int64_t v = 0; v < V; v++) {
                long double acc = 0;
                for (int64_t k = 0; k < D; k++) acc += (long double)w[id[s] * D + k] * w[v * D + k];
                want[s * V + v] = acc;
            }
            for (int64_t k = 0; k < D; k++) ws[s * D + k] = w[id[s] * D + k] + w[id[s] * D + k];
        }
        t_check_close("tied logits", tl->data, want, len * V, 1e-6, 1e-9);
        if (ts) t_check_exact("sum", ts->data, ws, len * D);
        if (tt) {
            CHECK(t_shape_eq(tt, 2, (int64_t[]){V, D}), "table shape");
            t_check_exact("table", tt->data, w, V * D);
        }
        for (int64_t s = 0; ti && s < len; s++)
            CHECK(ti->data[s] == (float)id[s], "ids output [%lld]", (long long)s);
        free(want);
        free(ws);
    }
    ref_result_free(&res);
    free(id);
    t_model_free(&m);
}

/* ---- a whole BERT-like encoder, against a naive composition ------------- */

typedef struct t_bert {
    int64_t V, P, T, H, NH, HD, I, L;
    ir_act act;
    /* weight node indices */
    int word, pos, type, eg, eb;
    int wq[2], bq[2], wk[2], bk[2], wv[2], bv[2], wo[2], bo[2], g1[2], b1[2];
    int wi[2], bi[2], wo2[2], bo2[2], g2[2], b2[2];
    int pw, pb;
} t_bert;

static int t_named(t_model *m, ir_op op, int layer, const char *name, int a, int b, int c) {
    char full[64];
    if (layer >= 0) snprintf(full, sizeof full, "layer%d/%s", layer, name);
    else snprintf(full, sizeof full, "%s", name);
    return t_op(m, op, full, a, b, c);
}

static int t_wname(t_model *m, int layer, const char *name, int ndim, int64_t d0, int64_t d1,
                   float scale) {
    char full[64];
    snprintf(full, sizeof full, "l%d.%s", layer, name);
    return t_weight(m, full, t_dtype((int)check_rng_range(0, 2)), ndim, d0, d1, scale);
}

/* The graph of docs/model-yaml.md's worked example, node for node. */
static void t_bert_build(t_model *m, t_bert *b) {
    int ids = t_input(m, "input_ids", 0, 0);
    int tt = t_input(m, "token_type_ids", 1, 0);
    int am = t_input(m, "attention_mask", 1, 1);
    b->word = t_weight(m, "word", IR_DTYPE_F16, 2, b->V, b->H, 1.0f);
    b->pos = t_weight(m, "pos", IR_DTYPE_BF16, 2, b->P, b->H, 0.5f);
    b->type = t_weight(m, "type", IR_DTYPE_F32, 2, b->T, b->H, 0.5f);
    b->eg = t_weight(m, "emb_gamma", IR_DTYPE_F32, 1, b->H, 0, 1.0f);
    b->eb = t_weight(m, "emb_beta", IR_DTYPE_F16, 1, b->H, 0, 0.25f);
    int pid = t_named(m, IR_OP_ARANGE, -1, "position_ids", ids, -1, -1);
    int we = t_named(m, IR_OP_GATHER, -1, "word_emb", b->word, ids, -1);
    int pe = t_named(m, IR_OP_GATHER, -1, "pos_emb", b->pos, pid, -1);
    int te = t_named(m, IR_OP_GATHER, -1, "type_emb", b->type, tt, -1);
    int s0 = t_named(m, IR_OP_ADD, -1, "emb_sum0", we, pe, -1);
    int s1 = t_named(m, IR_OP_ADD, -1, "emb_sum", s0, te, -1);
    int h = t_named(m, IR_OP_LAYER_NORM, -1, "h0", s1, b->eg, b->eb);
    m->g.nodes[h].eps = 1e-12f;
    float ws = 0.125f;  /* keeps activations O(1) for H up to ~64 */
    for (int l = 0; l < b->L; l++) {
        int proj[3];
        int *wts[3] = {b->wq, b->wk, b->wv}, *bs[3] = {b->bq, b->bk, b->bv};
        const char *nm[3] = {"q", "k", "v"};
        for (int p = 0; p < 3; p++) {
            char n1[16], n2[16], n3[16], n4[16];
            snprintf(n1, sizeof n1, "%s_mm", nm[p]);
            snprintf(n2, sizeof n2, "%s", nm[p]);
            snprintf(n3, sizeof n3, "%s_r", nm[p]);
            snprintf(n4, sizeof n4, "%s_h", nm[p]);
            wts[p][l] = t_wname(m, l, n1, 2, b->H, b->H, ws);
            bs[p][l] = t_wname(m, l, n2, 1, b->H, 0, 0.25f);
            int mm = t_named(m, IR_OP_MATMUL, l, n1, h, wts[p][l], -1);
            int ba = t_named(m, IR_OP_BIAS_ADD, l, n2, mm, bs[p][l], -1);
            int r = t_named(m, IR_OP_RESHAPE, l, n3, ba, -1, -1);
            m->g.nodes[r].ndim = 3;
            memcpy(m->g.nodes[r].shape, (int64_t[]){S, b->NH, b->HD}, 3 * sizeof(int64_t));
            proj[p] = t_named(m, IR_OP_TRANSPOSE, l, n4, r, -1, -1);
            t_set_perm(&m->g.nodes[proj[p]], 3, (int[]){1, 0, 2});
        }
        int sc = t_named(m, IR_OP_BATCHED_MATMUL, l, "scores", proj[0], proj[1], -1);
        m->g.nodes[sc].transpose_b = 1;
        int ss = t_named(m, IR_OP_SCALE, l, "scores_s", sc, -1, -1);
        m->g.nodes[ss].scale = (float)(1.0 / sqrt((double)b->HD));
        int sm = t_named(m, IR_OP_MASK, l, "scores_m", ss, am, -1);
        int pr = t_named(m, IR_OP_SOFTMAX, l, "probs", sm, -1, -1);
        int ch = t_named(m, IR_OP_BATCHED_MATMUL, l, "ctx_h", pr, proj[2], -1);
        int ct = t_named(m, IR_OP_TRANSPOSE, l, "ctx_t", ch, -1, -1);
        t_set_perm(&m->g.nodes[ct], 3, (int[]){1, 0, 2});
        int cx = t_named(m, IR_OP_RESHAPE, l, "ctx", ct, -1, -1);
        m->g.nodes[cx].ndim = 2;
        memcpy(m->g.nodes[cx].shape, (int64_t[]){S, b->H}, 2 * sizeof(int64_t));
        b->wo[l] = t_wname(m, l, "ao_w", 2, b->H, b->H, ws);
        b->bo[l] = t_wname(m, l, "ao_b", 1, b->H, 0, 0.25f);
        b->g1[l] = t_wname(m, l, "ln1_g", 1, b->H, 0, 1.0f);
        b->b1[l] = t_wname(m, l, "ln1_b", 1, b->H, 0, 0.25f);
        int aom = t_named(m, IR_OP_MATMUL, l, "ao_mm", cx, b->wo[l], -1);
        int ao = t_named(m, IR_OP_BIAS_ADD, l, "ao", aom, b->bo[l], -1);
        int ar = t_named(m, IR_OP_ADD, l, "ao_res", ao, h, -1);
        int at = t_named(m, IR_OP_LAYER_NORM, l, "attn_out", ar, b->g1[l], b->b1[l]);
        m->g.nodes[at].eps = 1e-12f;
        b->wi[l] = t_wname(m, l, "inter_w", 2, b->I, b->H, ws);
        b->bi[l] = t_wname(m, l, "inter_b", 1, b->I, 0, 0.25f);
        b->wo2[l] = t_wname(m, l, "out_w", 2, b->H, b->I, ws);
        b->bo2[l] = t_wname(m, l, "out_b", 1, b->H, 0, 0.25f);
        b->g2[l] = t_wname(m, l, "ln2_g", 1, b->H, 0, 1.0f);
        b->b2[l] = t_wname(m, l, "ln2_b", 1, b->H, 0, 0.25f);
        int im = t_named(m, IR_OP_MATMUL, l, "inter_mm", at, b->wi[l], -1);
        int ib = t_named(m, IR_OP_BIAS_ADD, l, "inter_b", im, b->bi[l], -1);
        int ia = t_named(m, IR_OP_ACTIVATION, l, "inter", ib, -1, -1);
        m->g.nodes[ia].act = b->act;
        int om = t_named(m, IR_OP_MATMUL, l, "out_mm", ia, b->wo2[l], -1);
        int ob = t_named(m, IR_OP_BIAS_ADD, l, "out_b", om, b->bo2[l], -1);
        int orr = t_named(m, IR_OP_ADD, l, "out_res", ob, at, -1);
        char hn[16];
        snprintf(hn, sizeof hn, "h%d", l + 1);
        h = t_named(m, IR_OP_LAYER_NORM, -1, hn, orr, b->g2[l], b->b2[l]);
        m->g.nodes[h].eps = 1e-12f;
    }
    b->pw = t_weight(m, "pool_w", IR_DTYPE_BF16, 2, b->H, b->H, 0.125f);
    b->pb = t_weight(m, "pool_b", IR_DTYPE_F32, 1, b->H, 0, 0.25f);
    int cls = t_named(m, IR_OP_SLICE, -1, "cls", h, -1, -1);
    m->g.nodes[cls].axis = 0;
    m->g.nodes[cls].start = 0;
    m->g.nodes[cls].len = 1;
    int pm = t_named(m, IR_OP_MATMUL, -1, "pool_mm", cls, b->pw, -1);
    int pbn = t_named(m, IR_OP_BIAS_ADD, -1, "pool_b", pm, b->pb, -1);
    int pt = t_named(m, IR_OP_ACTIVATION, -1, "pool_t", pbn, -1, -1);
    m->g.nodes[pt].act = IR_ACT_TANH;
    int pooled = t_named(m, IR_OP_RESHAPE, -1, "pooled", pt, -1, -1);
    m->g.nodes[pooled].ndim = 1;
    m->g.nodes[pooled].shape[0] = b->H;
    ir_graph_add_output(&m->g, "last_hidden_state", h);
    ir_graph_add_output(&m->g, "pooler_output", pooled);
}

/* Naive pieces, rounding to float where the graph has a tensor. */
static void n_layer_norm(float *x, int64_t rows, int64_t n, const float *g, const float *b) {
    for (int64_t r = 0; r < rows; r++) {
        float *xr = x + r * n;
        long double sum = 0, sq = 0;
        for (int64_t k = 0; k < n; k++) {
            sum += xr[k];
            sq += (long double)xr[k] * xr[k];
        }
        long double mean = sum / n, var = sq / n - mean * mean;
        for (int64_t k = 0; k < n; k++)
            xr[k] = (float)((xr[k] - mean) / sqrtl(var + 1e-12L) * g[k] + b[k]);
    }
}

/* y[M, N] = x[M, K]·Wᵀ + b, the matmul and the bias add as separate tensors. */
static float *n_linear(const float *x, int64_t M, int64_t K, const float *w, const float *b, int64_t N) {
    float *y = malloc((size_t)(M * N) * sizeof *y);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            long double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += (long double)x[i * K + k] * w[j * K + k];
            y[i * N + j] = (float)acc + b[j];
        }
    return y;
}

static void t_bert_naive(const t_model *m, const t_bert *b, const int32_t *ids, const int32_t *types,
                         const int32_t *mask, int64_t S_, float *out_h, float *out_pool) {
    int64_t H = b->H, HD = b->HD;
    float *h = malloc((size_t)(S_ * H) * sizeof *h);
    for (int64_t s = 0; s < S_; s++)
        for (int64_t k = 0; k < H; k++)
            h[s * H + k] = (m->wvals[b->word][ids[s] * H + k] + m->wvals[b->pos][s * H + k]) +
                           m->wvals[b->type][types[s] * H + k];
    n_layer_norm(h, S_, H, m->wvals[b->eg], m->wvals[b->eb]);
    float scale = (float)(1.0 / sqrt((double)HD));
    float *p = malloc((size_t)S_ * sizeof *p);
    for (int l = 0; l < b->L; l++) {
        float *q = n_linear(h, S_, H, m->wvals[b->wq[l]], m->wvals[b->bq[l]], H);
        float *k = n_linear(h, S_, H, m->wvals[b->wk[l]], m->wvals[b->bk[l]], H);
        float *v = n_linear(h, S_, H, m->wvals[b->wv[l]], m->wvals[b->bv[l]], H);
        float *ctx = malloc((size_t)(S_ * H) * sizeof *ctx);
        /* Heads addressed directly in [S, H]: no reshapes, no transposes. */
        for (int64_t hd = 0; hd < b->NH; hd++)
            for (int64_t i = 0; i < S_; i++) {
                long double sum = 0;
                for (int64_t j = 0; j < S_; j++) {
                    long double dot = 0;
                    for (int64_t d = 0; d < HD; d++)
                        dot += (long double)q[i * H + hd * HD + d] * k[j * H + hd * HD + d];
                    float sc = (float)dot * scale;
                    p[j] = mask[j] ? sc : -FLT_MAX;
                }
                float mx = -INFINITY;
                for (int64_t j = 0; j < S_; j++) mx = p[j] > mx ? p[j] : mx;
                long double e[64];
                for (int64_t j = 0; j < S_; j++) sum += e[j] = expl((long double)p[j] - mx);
                for (int64_t j = 0; j < S_; j++) p[j] = (float)(e[j] / sum);
                for (int64_t d = 0; d < HD; d++) {
                    long double acc = 0;
                    for (int64_t j = 0; j < S_; j++) acc += (long double)p[j] * v[j * H + hd * HD + d];
                    ctx[i * H + hd * HD + d] = (float)acc;
                }
            }
        float *ao = n_linear(ctx, S_, H, m->wvals[b->wo[l]], m->wvals[b->bo[l]], H);
        for (int64_t x = 0; x < S_ * H; x++) ao[x] += h[x];
        n_layer_norm(ao, S_, H, m->wvals[b->g1[l]], m->wvals[b->b1[l]]);
        float *in = n_linear(ao, S_, H, m->wvals[b->wi[l]], m->wvals[b->bi[l]], b->I);
        for (int64_t x = 0; x < S_ * b->I; x++) in[x] = (float)t_act(b->act, in[x]);
        float *o = n_linear(in, S_, b->I, m->wvals[b->wo2[l]], m->wvals[b->bo2[l]], H);
        for (int64_t x = 0; x < S_ * H; x++) o[x] += ao[x];
        n_layer_norm(o, S_, H, m->wvals[b->g2[l]], m->wvals[b->b2[l]]);
        memcpy(h, o, (size_t)(S_ * H) * sizeof *h);
        free(q); free(k); free(v); free(ctx); free(ao); free(in); free(o);
    }
    memcpy(out_h, h, (size_t)(S_ * H) * sizeof *h);
    float *pl = n_linear(h, 1, H, m->wvals[b->pw], m->wvals[b->pb], H);
    for (int64_t x = 0; x < H; x++) out_pool[x] = (float)t_tanh_exp(pl[x]);
    free(pl);
    free(p);
    free(h);
}

static void test_bert_chain(void) {
    t_model m;
    t_bert b;
    memset(&b, 0, sizeof b);
    b.NH = check_rng_range(1, 4);
    b.HD = check_rng_range(2, 12);
    b.H = b.NH * b.HD;
    b.I = check_rng_range(b.H, 3 * b.H);
    b.V = check_rng_range(10, 120);
    b.P = check_rng_range(8, 40);
    b.T = 2;
    b.L = check_rng_range(1, 2);
    b.act = check_rng_range(0, 1) ? IR_ACT_GELU_ERF : IR_ACT_GELU_TANH;
    t_model_init(&m, b.P);
    t_bert_build(&m, &b);
    if (t_model_finish(&m)) { t_model_free(&m); return; }
    int64_t len = check_rng_range(1, b.P);
    int32_t *ids = t_rand_ids(len, 0, (int32_t)b.V - 1);
    int32_t *types = t_rand_ids(len, 0, 1);
    int32_t *mask = t_rand_ids(len, 0, 1);
    mask[0] = 1;
    ref_request req = {.len = len, .input_ids = ids, .token_type_ids = types, .attention_mask = mask};
    ref_result res;
    const ref_tensor *th = t_run_ok(&m, &req, &res, "last_hidden_state");
    const ref_tensor *tp = ref_result_find(&res, "pooler_output");
    if (th && tp) {
        CHECK(t_shape_eq(th, 2, (int64_t[]){len, b.H}) && t_shape_eq(tp, 1, (int64_t[]){b.H}),
              "output shapes");
        float *wh = malloc((size_t)(len * b.H) * sizeof *wh), *wp = malloc((size_t)b.H * sizeof *wp);
        t_bert_naive(&m, &b, ids, types, mask, len, wh, wp);
        long double *lh = malloc((size_t)(len * b.H) * sizeof *lh), *lp = malloc((size_t)b.H * sizeof *lp);
        for (int64_t i = 0; i < len * b.H; i++) lh[i] = wh[i];
        for (int64_t i = 0; i < b.H; i++) lp[i] = wp[i];
        t_check_close("last_hidden_state", th->data, lh, len * b.H, 1e-5, 1e-5);
        t_check_close("pooler_output", tp->data, lp, b.H, 1e-5, 1e-5);
        free(wh); free(wp); free(lh); free(lp);
    }
    ref_result_free(&res);
    free(ids);
    free(types);
    free(mask);
    t_model_free(&m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_gather_dtypes_and_arange);
    CHECK_CASE(test_add_bias_add_scale);
    CHECK_CASE(test_layer_norm);
    CHECK_CASE(test_matmul_dtypes);
    CHECK_CASE(test_activations);
    CHECK_CASE(test_reshape_transpose);
    CHECK_CASE(test_batched_matmul);
    CHECK_CASE(test_mask_softmax);
    CHECK_CASE(test_all_masked_row_is_uniform);
    CHECK_CASE(test_slice);
    CHECK_CASE(test_pool_l2_normalize);
    CHECK_CASE(test_pool_shape_errors);
    CHECK_CASE(test_request_errors);
    CHECK_CASE(test_missing_weight);
    CHECK_CASE(test_optional_defaults);
    CHECK_CASE(test_shared_weights_and_leaf_outputs);
    CHECK_CASE(test_bert_chain);
    return check_summary();
}
