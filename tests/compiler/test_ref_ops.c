/*
 * test_ref_ops — the reference executor, op by op and as a whole layer.
 *
 * Each case builds a small graph by hand (support/tgraph.h), writes its
 * weights into an in-memory safetensors image (with the tests' own writer
 * and its exact float16 / bfloat16 encoders, support/stimage.c, not the
 * library's), draws sizes and values
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
#include "tgraph.h"

#define S IR_DIM_SEQ

/* ---- a test model: a tgraph whose weights are named "w.<node>" ---------- */

static void t_model_init(tgraph *m, int64_t max_seq_len) {
    tgraph_init(m);
    m->weight_prefix = "w.";
    m->g.max_seq_len = max_seq_len;
    m->g.source_path = strdup("test.yaml");
}

/* Open the weights image and run inference.  0 when all went well; else
 * the failure is CHECKed and m is freed. */
static int t_model_finish(tgraph *m) {
    diag d;
    int rc = tgraph_open_weights(m, "test.safetensors", &d);
    CHECK(rc == 0, "st_file_open_memory: %s", d.text);
    if (rc == 0) {
        rc = ir_graph_infer(&m->g, "test.yaml", NULL, 0, &d);
        CHECK(rc == 0, "ir_graph_infer: %s", d.text);
    }
    if (rc) tgraph_free(m);
    return rc;
}

static int t_run(tgraph *m, const ref_request *req, ref_result *res, diag *d) {
    diag_init(d);
    return ref_run(&m->g, &m->w, req, res, d);
}

/* Run and demand success; returns the output `name` or NULL. */
static const ref_tensor *t_run_ok(tgraph *m, const ref_request *req, ref_result *res,
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

/* One request of random ids in [0, V) (a test may add types and a mask),
 * and its result. */
typedef struct t_call {
    int64_t len;
    int32_t *ids, *types, *mask;
    ref_request req;
    ref_result res;
} t_call;

static void t_call_init(t_call *c, int64_t len, int64_t V) {
    memset(c, 0, sizeof *c);
    c->len = len;
    c->ids = t_rand_ids(len, 0, (int32_t)V - 1);
    c->req.len = len;
    c->req.input_ids = c->ids;
}

/* A random 0/1 attention mask. */
static void t_call_mask(t_call *c) {
    c->mask = t_rand_ids(c->len, 0, 1);
    c->req.attention_mask = c->mask;
}

static const ref_tensor *t_call_run(tgraph *m, t_call *c, const char *name) {
    return t_run_ok(m, &c->req, &c->res, name);
}

/* Finishes the model, draws a request of len ids in [0, V) and runs it:
 * the output `name`, or NULL after a CHECK failure (a failed finish leaves
 * c empty and m freed, so t_call_done stays safe). */
static const ref_tensor *t_model_run(tgraph *m, t_call *c, int64_t len, int64_t V, const char *name) {
    memset(c, 0, sizeof *c);
    if (t_model_finish(m)) return NULL;
    t_call_init(c, len, V);
    return t_call_run(m, c, name);
}

/* Frees the request, its result and the model. */
static void t_call_done(tgraph *m, t_call *c) {
    ref_result_free(&c->res);
    free(c->ids);
    free(c->types);
    free(c->mask);
    tgraph_free(m);
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
        tgraph m;
        int64_t max = check_rng_range(4, 40), V = check_rng_range(2, 300), D = check_rng_range(1, 70);
        int64_t len = check_rng_range(1, max);
        t_model_init(&m, max);
        int ids = tgraph_input(&m, "input_ids");
        int tab = tgraph_weight_rand(&m, "word", t_dtype(k), 2, V, D, 1.0f);
        int pt = tgraph_weight_rand(&m, "pos", t_dtype(k + 1), 2, max, D, 0.5f);
        int pos = tgraph_op(&m, IR_OP_ARANGE, "position_ids", ids);
        int we = tgraph_op(&m, IR_OP_GATHER, "word_emb", tab, ids);
        int pe = tgraph_op(&m, IR_OP_GATHER, "pos_emb", pt, pos);
        ir_graph_add_output(&m.g, "word", we);
        ir_graph_add_output(&m.g, "pos", pe);
        ir_graph_add_output(&m.g, "position_ids", pos);
        t_call c;
        const ref_tensor *w = t_model_run(&m, &c, len, V, "word");
        if (w) {
            CHECK(t_shape_eq(w, 2, (int64_t[]){len, D}), "word shape");
            float *want = malloc((size_t)(len * D) * sizeof *want);
            for (int64_t s = 0; s < len; s++)
                for (int64_t d = 0; d < D; d++) want[s * D + d] = tgraph_values(&m, tab)[c.ids[s] * D + d];
            t_check_exact(ir_dtype_name(t_dtype(k)), w->data, want, len * D);
            const ref_tensor *p = ref_result_find(&c.res, "pos");
            const ref_tensor *pi = ref_result_find(&c.res, "position_ids");
            CHECK(p && pi && t_shape_eq(pi, 1, (int64_t[]){len}), "position outputs");
            for (int64_t s = 0; p && pi && s < len; s++) {
                CHECK(pi->data[s] == (float)s, "position_ids[%lld] = %g", (long long)s,
                      (double)pi->data[s]);
                for (int64_t d = 0; d < D; d++) want[s * D + d] = tgraph_values(&m, pt)[s * D + d];
            }
            if (p) t_check_exact("pos", p->data, want, len * D);
            free(want);
        }
        t_call_done(&m, &c);
    }
}

/* x = gather(table, ids): the usual way a test gets an [S, D] activation;
 * the float32 table holds offset + (-2, 2) * scale. */
static int t_activation_at(tgraph *m, const char *name, int ids, int64_t V, int64_t D, float scale, float offset) {
    char tname[64];
    snprintf(tname, sizeof tname, "%s_table", name);
    float *v = malloc((size_t)(V * D) * sizeof *v);
    for (int64_t k = 0; k < V * D; k++) v[k] = tgraph_rand_exact(IR_DTYPE_F32, scale) + offset;
    int tab = tgraph_weight_values(m, tname, IR_DTYPE_F32, 2, V, D, v);
    free(v);
    return tgraph_op(m, IR_OP_GATHER, name, tab, ids);
}

static int t_activation_in(tgraph *m, const char *name, int ids, int64_t V, int64_t D, float scale) {
    return t_activation_at(m, name, ids, V, D, scale, 0.0f);
}

/* Rows of x as the naive code sees them. */
static float *t_rows(const tgraph *m, int gather_node, const int32_t *ids, int64_t len) {
    const ir_node *n = &m->g.nodes[gather_node];
    const ir_node *tab = &m->g.nodes[n->src[0]];
    int64_t D = tab->shape[1];
    float *x = malloc((size_t)(len * D) * sizeof *x);
    for (int64_t s = 0; s < len; s++)
        memcpy(x + s * D, tgraph_values(m, n->src[0]) + ids[s] * D, (size_t)D * sizeof *x);
    return x;
}

static void test_add_bias_add_scale(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 50), D = check_rng_range(1, 90), len = check_rng_range(1, 33);
    t_model_init(&m, 64);
    int ids = tgraph_input(&m, "input_ids");
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "y", ids, V, D, 3.0f);
    int bias = tgraph_weight_rand(&m, "bias", IR_DTYPE_BF16, 1, D, 0, 1.0f);
    int a = tgraph_op(&m, IR_OP_ADD, "a", x, y);
    int b = tgraph_op(&m, IR_OP_BIAS_ADD, "b", a, bias);
    int sc = tgraph_op(&m, IR_OP_SCALE, "sc", b);
    float by = (float)(check_rng_uniform() * 4.0 - 2.0);
    m.g.nodes[sc].scale = by;
    ir_graph_add_output(&m.g, "b", b);
    ir_graph_add_output(&m.g, "sc", sc);
    t_call c;
    const ref_tensor *tb = t_model_run(&m, &c, len, V, "b");
    const ref_tensor *ts = ref_result_find(&c.res, "sc");
    if (tb && ts) {
        float *xs = t_rows(&m, x, c.ids, len), *ys = t_rows(&m, y, c.ids, len);
        float *wb = malloc((size_t)(len * D) * sizeof *wb), *ws = malloc((size_t)(len * D) * sizeof *ws);
        for (int64_t s = 0; s < len; s++)
            for (int64_t d = 0; d < D; d++) {
                float sum = xs[s * D + d] + ys[s * D + d];
                wb[s * D + d] = sum + tgraph_values(&m, bias)[d];
                ws[s * D + d] = wb[s * D + d] * by;  /* a float product is rounded once */
            }
        CHECK(t_shape_eq(tb, 2, (int64_t[]){len, D}), "shape");
        t_check_exact("bias_add", tb->data, wb, len * D);
        t_check_exact("scale", ts->data, ws, len * D);
        free(xs); free(ys); free(wb); free(ws);
    }
    t_call_done(&m, &c);
}

static void test_layer_norm(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 50), D = check_rng_range(2, 200), len = check_rng_range(1, 20);
    t_model_init(&m, 0);  /* no max_seq_len: any length */
    int ids = tgraph_input(&m, "input_ids");
    /* Rows with a mean far from zero: where a careless variance loses digits. */
    int x = t_activation_at(&m, "x", ids, V, D, 8.0f, (float)check_rng_range(-20, 20));
    int gam = tgraph_weight_rand(&m, "gamma", IR_DTYPE_F16, 1, D, 0, 1.0f);
    int bet = tgraph_weight_rand(&m, "beta", IR_DTYPE_BF16, 1, D, 0, 1.0f);
    int ln = tgraph_op(&m, IR_OP_LAYER_NORM, "ln", x, gam, bet);
    float eps = (float)pow(10.0, -check_rng_range(3, 12));
    m.g.nodes[ln].eps = eps;
    ir_graph_add_output(&m.g, "ln", ln);
    t_call c;
    const ref_tensor *t = t_model_run(&m, &c, len, V, "ln");
    if (t) {
        float *xs = t_rows(&m, x, c.ids, len);
        long double *want = malloc((size_t)(len * D) * sizeof *want);
        for (int64_t s = 0; s < len; s++) {
            long double sum = 0, sq = 0;
            for (int64_t d = 0; d < D; d++) {
                sum += xs[s * D + d];
                sq += (long double)xs[s * D + d] * xs[s * D + d];
            }
            long double mean = sum / D, var = sq / D - mean * mean;
            for (int64_t d = 0; d < D; d++)
                want[s * D + d] = (xs[s * D + d] - mean) / sqrtl(var + eps) * tgraph_values(&m, gam)[d] +
                                  tgraph_values(&m, bet)[d];
        }
        t_check_close("layer_norm", t->data, want, len * D, 1e-6, 1e-6);
        free(xs);
        free(want);
    }
    t_call_done(&m, &c);
}

static void test_matmul_dtypes(void) {
    for (int k = 0; k < 3; k++) {
        tgraph m;
        int64_t V = check_rng_range(2, 40), K = check_rng_range(1, 70), N = check_rng_range(1, 37);
        int64_t len = check_rng_range(1, 17);
        t_model_init(&m, 32);
        int ids = tgraph_input(&m, "input_ids");
        int x = t_activation_in(&m, "x", ids, V, K, 1.0f);
        int w = tgraph_weight_rand(&m, "w", t_dtype(k), 2, N, K, 1.0f);
        int y = tgraph_op(&m, IR_OP_MATMUL, "y", x, w);
        ir_graph_add_output(&m.g, "y", y);
        t_call c;
        const ref_tensor *t = t_model_run(&m, &c, len, V, "y");
        if (t) {
            CHECK(t_shape_eq(t, 2, (int64_t[]){len, N}), "shape");
            float *xs = t_rows(&m, x, c.ids, len);
            long double *want = malloc((size_t)(len * N) * sizeof *want);
            for (int64_t i = 0; i < len; i++)
                for (int64_t j = 0; j < N; j++) {
                    long double acc = 0;
                    for (int64_t q = 0; q < K; q++) acc += (long double)xs[i * K + q] * tgraph_values(&m, w)[j * K + q];
                    want[i * N + j] = acc;
                }
            t_check_close(ir_dtype_name(t_dtype(k)), t->data, want, len * N, 1e-6, 1e-9);
            free(xs);
            free(want);
        }
        t_call_done(&m, &c);
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
        tgraph m;
        int64_t V = check_rng_range(2, 50), D = check_rng_range(1, 64), len = check_rng_range(1, 30);
        t_model_init(&m, 30);
        int ids = tgraph_input(&m, "input_ids");
        int x = t_activation_in(&m, "x", ids, V, D, 4.0f);  /* values in (-8, 8) */
        int y = tgraph_op(&m, IR_OP_ACTIVATION, "y", x);
        m.g.nodes[y].act = (ir_act)a;
        ir_graph_add_output(&m.g, "y", y);
        t_call c;
        const ref_tensor *t = t_model_run(&m, &c, len, V, "y");
        if (t) {
            float *xs = t_rows(&m, x, c.ids, len);
            long double *want = malloc((size_t)(len * D) * sizeof *want);
            for (int64_t i = 0; i < len * D; i++) want[i] = t_act((ir_act)a, xs[i]);
            /* gelu of a large negative x is a tiny number: judge it absolutely. */
            t_check_close(ir_act_name((ir_act)a), t->data, want, len * D, 1e-6, 1e-12);
            free(xs);
            free(want);
        }
        t_call_done(&m, &c);
    }
}

/* reshape [S, A·B·C] -> [S, A, B, C], a random 4-D permutation, then a
 * reshape back to 2-D and a 2-D transpose; checked by index arithmetic. */
static void test_reshape_transpose(void) {
    tgraph m;
    int64_t A = check_rng_range(1, 4), B = check_rng_range(1, 5), C = check_rng_range(1, 6);
    int64_t V = check_rng_range(2, 30), len = check_rng_range(1, 9), D = A * B * C;
    t_model_init(&m, 16);
    int ids = tgraph_input(&m, "input_ids");
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int r4 = tgraph_reshape(&m, "r4", x, 4, (int64_t[]){S, A, B, C});
    int perm[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) {
        int j = (int)check_rng_range(0, i), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    int t4 = tgraph_transpose(&m, "t4", r4, 4, perm);
    int64_t in_dims[4] = {len, A, B, C}, out_dims[4];
    for (int d = 0; d < 4; d++) out_dims[d] = in_dims[perm[d]];
    /* And the plain 2-D transpose of x. */
    int t2 = tgraph_transpose(&m, "t2", x, 2, (int[]){1, 0});
    ir_graph_add_output(&m.g, "t4", t4);
    ir_graph_add_output(&m.g, "t2", t2);
    t_call c;
    const ref_tensor *o4 = t_model_run(&m, &c, len, V, "t4");
    const ref_tensor *o2 = ref_result_find(&c.res, "t2");
    if (o4 && o2) {
        CHECK(t_shape_eq(o4, 4, out_dims), "4-D shape");
        CHECK(t_shape_eq(o2, 2, (int64_t[]){D, len}), "2-D shape");
        float *xs = t_rows(&m, x, c.ids, len);
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
    t_call_done(&m, &c);
}

static void test_batched_matmul(void) {
    for (int tb = 0; tb < 2; tb++) {
        tgraph m;
        int64_t B = check_rng_range(1, 4), M = check_rng_range(1, 9), K = check_rng_range(1, 20);
        int64_t N = check_rng_range(1, 11);
        t_model_init(&m, 8);
        tgraph_input(&m, "input_ids");
        int wa = tgraph_weight_rand(&m, "a", t_dtype(tb), 2, B * M, K, 1.0f);
        int wb = tb ? tgraph_weight_rand(&m, "b", t_dtype(tb + 1), 2, B * N, K, 1.0f)
                    : tgraph_weight_rand(&m, "b", t_dtype(tb + 1), 2, B * K, N, 1.0f);
        int a3 = tgraph_reshape(&m, "a3", wa, 3, (int64_t[]){B, M, K});
        int b3 = tb ? tgraph_reshape(&m, "b3", wb, 3, (int64_t[]){B, N, K})
                    : tgraph_reshape(&m, "b3", wb, 3, (int64_t[]){B, K, N});
        int cn = tgraph_op(&m, IR_OP_BATCHED_MATMUL, "c", a3, b3);
        m.g.nodes[cn].transpose_b = tb;
        ir_graph_add_output(&m.g, "c", cn);
        t_call c;  /* one id, 0: the graph reads only weights */
        const ref_tensor *t = t_model_run(&m, &c, 1, 1, "c");
        if (t) {
            CHECK(t_shape_eq(t, 3, (int64_t[]){B, M, N}), "shape");
            const float *av = tgraph_values(&m, wa), *bv = tgraph_values(&m, wb);
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
        t_call_done(&m, &c);
    }
}

/* scores [D, S] masked by attention_mask then softmaxed over S. */
static void test_mask_softmax(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 12), len = check_rng_range(1, 24);
    t_model_init(&m, 24);
    int ids = tgraph_input(&m, "input_ids");
    int am = tgraph_input_opt(&m, "attention_mask", 1);
    int x = t_activation_in(&m, "x", ids, V, D, 2.0f);
    int xt = tgraph_transpose(&m, "xt", x, 2, (int[]){1, 0});
    int mk = tgraph_op(&m, IR_OP_MASK, "masked", xt, am);
    int sm = tgraph_op(&m, IR_OP_SOFTMAX, "probs", mk);
    ir_graph_add_output(&m.g, "masked", mk);
    ir_graph_add_output(&m.g, "probs", sm);
    if (t_model_finish(&m)) return;
    t_call c;
    t_call_init(&c, len, V);
    t_call_mask(&c);
    const int32_t *mask = c.mask;
    c.mask[check_rng_range(0, len - 1)] = 1;
    const ref_tensor *tm = t_call_run(&m, &c, "masked");
    const ref_tensor *tp = ref_result_find(&c.res, "probs");
    if (tm && tp) {
        float *xs = t_rows(&m, x, c.ids, len);
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
    t_call_done(&m, &c);
}

/* With every key masked, transformers gives a uniform distribution. */
static void test_all_masked_row_is_uniform(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 6), len = check_rng_range(1, 40);
    t_model_init(&m, 64);
    int ids = tgraph_input(&m, "input_ids");
    int am = tgraph_input_opt(&m, "attention_mask", 1);
    int x = t_activation_in(&m, "x", ids, V, D, 8.0f);
    int xt = tgraph_transpose(&m, "xt", x, 2, (int[]){1, 0});
    int mk = tgraph_op(&m, IR_OP_MASK, "masked", xt, am);
    int sm = tgraph_op(&m, IR_OP_SOFTMAX, "probs", mk);
    ir_graph_add_output(&m.g, "probs", sm);
    if (t_model_finish(&m)) return;
    t_call c;
    t_call_init(&c, len, V);
    c.req.attention_mask = c.mask = calloc((size_t)len, sizeof *c.mask);
    const ref_tensor *t = t_call_run(&m, &c, "probs");
    if (t) {
        float uniform = (float)(1.0 / (double)len);
        for (int64_t i = 0; i < D * len; i++)
            if (t->data[i] != uniform) {
                CHECK(0, "probs[%lld] = %.9g, expected exactly 1/%lld = %.9g", (long long)i,
                      (double)t->data[i], (long long)len, (double)uniform);
                break;
            }
    }
    t_call_done(&m, &c);
}

/* slice along a constant axis, and along S (checked at run time). */
static void test_slice(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 30), D = check_rng_range(1, 40), len = check_rng_range(4, 20);
    t_model_init(&m, 20);
    int ids = tgraph_input(&m, "input_ids");
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int64_t cstart = check_rng_range(0, D - 1), clen = check_rng_range(1, D - cstart);
    int sc = tgraph_slice(&m, "cols", x, 1, cstart, clen);
    int64_t rstart = check_rng_range(1, 2), rlen = check_rng_range(1, 2);
    int sr = tgraph_slice(&m, "rows", x, 0, rstart, rlen);
    ir_graph_add_output(&m.g, "cols", sc);
    ir_graph_add_output(&m.g, "rows", sr);
    t_call c;
    const ref_tensor *tc = t_model_run(&m, &c, len, V, "cols");
    const ref_tensor *tr = ref_result_find(&c.res, "rows");
    if (tc && tr) {
        float *xs = t_rows(&m, x, c.ids, len);
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
    ref_result_free(&c.res);
    /* A request too short for the S slice is refused at the slice. */
    c.req.len = rstart + rlen - 1;  /* >= 1 since rstart >= 1 */
    {
        diag d;
        int rc = t_run(&m, &c.req, &c.res, &d);
        CHECK(rc == -1, "short request not refused");
        CHECK(strstr(d.text, "slice 'rows'") && strstr(d.text, "runs past the end"), "'%s'", d.text);
        char where[32];
        snprintf(where, sizeof where, ":%d:", m.g.nodes[sr].line);
        CHECK(strstr(d.text, where) != NULL, "'%s' lacks the node's line %s", d.text, where);
        CHECK(c.res.count == 0 && c.res.outputs == NULL, "result left empty on error");
    }
    t_call_done(&m, &c);
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
        tgraph m;
        int64_t V = check_rng_range(2, 40), D = check_rng_range(1, 70), len = check_rng_range(1, 30);
        t_model_init(&m, 32);
        int ids = tgraph_input(&m, "input_ids");
        int am = tgraph_input_opt(&m, "attention_mask", 1);
        int x = t_activation_in(&m, "x", ids, V, D, 2.0f);
        int mean = tgraph_op(&m, IR_OP_POOL, "mean", x, am);
        m.g.nodes[mean].pool_mode = IR_POOL_MEAN;
        int cls = tgraph_op(&m, IR_OP_POOL, "cls", x);
        m.g.nodes[cls].pool_mode = IR_POOL_CLS;
        int mean_n = tgraph_op(&m, IR_OP_L2_NORMALIZE, "mean_n", mean);
        int cls_n = tgraph_op(&m, IR_OP_L2_NORMALIZE, "cls_n", cls);
        int rows_n = tgraph_op(&m, IR_OP_L2_NORMALIZE, "rows_n", x);
        int fused = tgraph_op(&m, IR_OP_POOL, "fused", x, am);
        m.g.nodes[fused].pool_mode = IR_POOL_MEAN;
        m.g.nodes[fused].normalize = 1;
        const char *outs[6] = {"mean", "cls", "mean_n", "cls_n", "rows_n", "fused"};
        int nodes[6] = {mean, cls, mean_n, cls_n, rows_n, fused};
        for (int k = 0; k < 6; k++) ir_graph_add_output(&m.g, outs[k], nodes[k]);
        if (t_model_finish(&m)) return;
        CHECK(m.g.nodes[mean].ndim == 1 && m.g.nodes[mean].shape[0] == D && m.g.nodes[rows_n].ndim == 2,
              "pool infers [H], l2_normalize keeps the shape");
        t_call c;
        t_call_init(&c, len, V);
        t_call_mask(&c);
        int32_t *mask = c.mask;
        /* rounds 0-3: zeros at random; round 4: one kept row; round 5: all
         * zero (a mask value other than 0/1 is refused: hardening.sh) */
        for (int64_t s = 0; round >= 4 && s < len; s++) mask[s] = round == 4 && s == len - 1;
        if (round < 4) mask[check_rng_range(0, len - 1)] = 1; /* some row kept: the all-zero case is round 5 */
        const ref_tensor *t[6] = {t_call_run(&m, &c, "mean")};
        for (int k = 1; t[0] && k < 6; k++) t[k] = ref_result_find(&c.res, outs[k]);
        if (t[0] && t[5]) {
            float *xs = t_rows(&m, x, c.ids, len);
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
        t_call_done(&m, &c);
    }
}

/* Shapes the ops refuse, each at the node's line. */
static void test_pool_shape_errors(void) {
    for (int k = 0; k < 3; k++) {
        tgraph m;
        t_model_init(&m, 16);
        int ids = tgraph_input(&m, "input_ids");
        int am = tgraph_input_opt(&m, "attention_mask", 1);
        int x = t_activation_in(&m, "x", ids, 5, 8, 1.0f);
        int bad;
        const char *want;
        if (k == 0) {
            int p = tgraph_op(&m, IR_OP_POOL, "p", x, am);
            m.g.nodes[p].pool_mode = IR_POOL_MEAN;
            bad = tgraph_op(&m, IR_OP_POOL, "pp", p); /* a pool of a pooled row */
            want = "pool 'pp': x 'p' is [8] (expected a 2-D [S, H])";
        } else if (k == 1) {
            bad = tgraph_op(&m, IR_OP_POOL, "nomask", x);
            m.g.nodes[bad].pool_mode = IR_POOL_MEAN;
            want = "pool 'nomask': mode mean needs a mask";
        } else {
            bad = tgraph_op(&m, IR_OP_POOL, "fmask", x, x);
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
        tgraph_free(&m);
    }
}

/* ---- requests ------------------------------------------------------------ */

static void test_request_errors(void) {
    tgraph m;
    int64_t V = check_rng_range(5, 100), D = check_rng_range(1, 8), max = check_rng_range(4, 32);
    t_model_init(&m, max);
    int ids = tgraph_input(&m, "input_ids");
    int tt = tgraph_input(&m, "token_type_ids");  /* required in this graph */
    int x = t_activation_in(&m, "word_emb", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "type_emb", tt, 2, D, 1.0f);
    int a = tgraph_op(&m, IR_OP_ADD, "sum", x, y);
    ir_graph_add_output(&m.g, "sum", a);
    if (t_model_finish(&m)) return;
    int64_t len = check_rng_range(2, max);
    t_call c;
    t_call_init(&c, max + 1, V);
    int32_t *id = c.ids, *types = c.types = t_rand_ids(max + 1, 0, 1);
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
    t_call_done(&m, &c);
}

static void test_missing_weight(void) {
    tgraph m;
    t_model_init(&m, 8);
    int ids = tgraph_input(&m, "input_ids");
    int x = t_activation_in(&m, "x", ids, 4, 3, 1.0f);
    ir_graph_add_output(&m.g, "x", x);
    if (t_model_finish(&m)) return;
    int tab = m.g.nodes[x].src[0];
    free(m.g.nodes[tab].weight);
    m.g.nodes[tab].weight = strdup("no.such.tensor");
    int32_t id[2] = {1, 2};
    ref_request req = {.len = 2, .input_ids = id};
    ref_result res;
    diag d;
    CHECK(t_run(&m, &req, &res, &d) == -1, "missing weight not refused");
    CHECK(strstr(d.text, "'no.such.tensor'") && strstr(d.text, "test.safetensors"), "'%s'", d.text);
    tgraph_free(&m);
}

/* Omitted optional inputs read as their default in every position. */
static void test_optional_defaults(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 30), T = check_rng_range(2, 4), D = check_rng_range(1, 10);
    int64_t len = check_rng_range(1, 16);
    int32_t tdef = (int32_t)check_rng_range(0, T - 1);
    t_model_init(&m, 16);
    int ids = tgraph_input(&m, "input_ids");
    int tt = tgraph_input_opt(&m, "token_type_ids", tdef);
    int am = tgraph_input_opt(&m, "attention_mask", 1);
    int x = t_activation_in(&m, "x", ids, V, D, 1.0f);
    int y = t_activation_in(&m, "y", tt, T, D, 1.0f);
    int a = tgraph_op(&m, IR_OP_ADD, "a", x, y);
    int at = tgraph_transpose(&m, "at", a, 2, (int[]){1, 0});
    int mk = tgraph_op(&m, IR_OP_MASK, "mk", at, am);
    ir_graph_add_output(&m.g, "mk", mk);
    ir_graph_add_output(&m.g, "types", tt);
    if (t_model_finish(&m)) return;
    t_call omitted, explicit_;
    t_call_init(&omitted, len, V);
    t_call_init(&explicit_, len, 1);
    int32_t *id = omitted.ids, *types = explicit_.types = malloc((size_t)len * sizeof *types);
    int32_t *ones = explicit_.mask = malloc((size_t)len * sizeof *ones);
    for (int64_t s = 0; s < len; s++) {
        explicit_.ids[s] = id[s];
        types[s] = tdef;
        ones[s] = 1;
    }
    explicit_.req.token_type_ids = types;
    explicit_.req.attention_mask = ones;
    const ref_tensor *t1 = t_call_run(&m, &omitted, "mk");
    const ref_tensor *t2 = t_call_run(&m, &explicit_, "mk");
    if (t1 && t2) {
        t_check_exact("defaults", t1->data, t2->data, len * D);
        /* And against the naive sum: no position is masked. */
        float *want = malloc((size_t)(len * D) * sizeof *want);
        for (int64_t d = 0; d < D; d++)
            for (int64_t s = 0; s < len; s++)
                want[d * len + s] = tgraph_values(&m, m.g.nodes[x].src[0])[id[s] * D + d] +
                                    tgraph_values(&m, m.g.nodes[y].src[0])[tdef * D + d];
        t_check_exact("naive", t1->data, want, len * D);
        free(want);
        const ref_tensor *ty = ref_result_find(&omitted.res, "types");
        CHECK(ty && ty->data[len - 1] == (float)tdef, "token_type_ids default output");
    }
    ref_result_free(&explicit_.res);
    free(explicit_.ids);
    free(types);
    free(ones);
    t_call_done(&m, &omitted);
}

/*
 * A table tied to a matmul weight (read by gather before and after it is
 * widened), a weight used twice, a weight and an input as graph outputs,
 * and dead nodes: the lifetime bookkeeping must keep each buffer exactly
 * as long as it is read.
 */
static void test_shared_weights_and_leaf_outputs(void) {
    tgraph m;
    int64_t V = check_rng_range(2, 30), D = check_rng_range(1, 20), len = check_rng_range(1, 12);
    t_model_init(&m, 12);
    int ids = tgraph_input(&m, "input_ids");
    int tab = tgraph_weight_rand(&m, "tied", IR_DTYPE_BF16, 2, V, D, 1.0f);
    int e1 = tgraph_op(&m, IR_OP_GATHER, "e1", tab, ids);       /* from the file */
    int lg = tgraph_op(&m, IR_OP_MATMUL, "logits", e1, tab);    /* widens the table */
    int e2 = tgraph_op(&m, IR_OP_GATHER, "e2", tab, ids);       /* from the buffer */
    int dead = tgraph_op(&m, IR_OP_SCALE, "dead", e2);
    (void)dead;
    int sum = tgraph_op(&m, IR_OP_ADD, "sum", e1, e2);
    ir_graph_add_output(&m.g, "logits", lg);
    ir_graph_add_output(&m.g, "sum", sum);
    ir_graph_add_output(&m.g, "table", tab);
    ir_graph_add_output(&m.g, "ids", ids);
    t_call c;
    const ref_tensor *tl = t_model_run(&m, &c, len, V, "logits");
    if (tl) {
        const float *w = tgraph_values(&m, tab);
        const ref_tensor *ts = ref_result_find(&c.res, "sum"), *tt = ref_result_find(&c.res, "table");
        const ref_tensor *ti = ref_result_find(&c.res, "ids");
        CHECK(ts && tt && ti, "outputs");
        CHECK(c.res.count == 4 && strcmp(c.res.outputs[2].name, "table") == 0, "output order");
        long double *want = malloc((size_t)(len * V) * sizeof *want);
        float *ws = malloc((size_t)(len * D) * sizeof *ws);
        for (int64_t s = 0; s < len; s++) {
            for (int64_t v = 0; v < V; v++) {
                long double acc = 0;
                for (int64_t k = 0; k < D; k++) acc += (long double)w[c.ids[s] * D + k] * w[v * D + k];
                want[s * V + v] = acc;
            }
            for (int64_t k = 0; k < D; k++) ws[s * D + k] = w[c.ids[s] * D + k] + w[c.ids[s] * D + k];
        }
        t_check_close("tied logits", tl->data, want, len * V, 1e-6, 1e-9);
        if (ts) t_check_exact("sum", ts->data, ws, len * D);
        if (tt) {
            CHECK(t_shape_eq(tt, 2, (int64_t[]){V, D}), "table shape");
            t_check_exact("table", tt->data, w, V * D);
        }
        for (int64_t s = 0; ti && s < len; s++)
            CHECK(ti->data[s] == (float)c.ids[s], "ids output [%lld]", (long long)s);
        free(want);
        free(ws);
    }
    t_call_done(&m, &c);
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

/* "layer<l>/<name>", or name for l < 0: a node name, valid until the next call. */
static const char *t_ln(int layer, const char *name) {
    static char full[64];
    if (layer >= 0) snprintf(full, sizeof full, "layer%d/%s", layer, name);
    else snprintf(full, sizeof full, "%s", name);
    return full;
}

static int t_wname(tgraph *m, int layer, const char *name, int ndim, int64_t d0, int64_t d1,
                   float scale) {
    char full[64];
    snprintf(full, sizeof full, "l%d.%s", layer, name);
    return tgraph_weight_rand(m, full, t_dtype((int)check_rng_range(0, 2)), ndim, d0, d1, scale);
}

/* The graph of docs/model-yaml.md's worked example, node for node. */
static void t_bert_build(tgraph *m, t_bert *b) {
    int ids = tgraph_input(m, "input_ids");
    int tt = tgraph_input_opt(m, "token_type_ids", 0);
    int am = tgraph_input_opt(m, "attention_mask", 1);
    b->word = tgraph_weight_rand(m, "word", IR_DTYPE_F16, 2, b->V, b->H, 1.0f);
    b->pos = tgraph_weight_rand(m, "pos", IR_DTYPE_BF16, 2, b->P, b->H, 0.5f);
    b->type = tgraph_weight_rand(m, "type", IR_DTYPE_F32, 2, b->T, b->H, 0.5f);
    b->eg = tgraph_weight_rand(m, "emb_gamma", IR_DTYPE_F32, 1, b->H, 0, 1.0f);
    b->eb = tgraph_weight_rand(m, "emb_beta", IR_DTYPE_F16, 1, b->H, 0, 0.25f);
    int pid = tgraph_op(m, IR_OP_ARANGE, t_ln(-1, "position_ids"), ids);
    int we = tgraph_op(m, IR_OP_GATHER, t_ln(-1, "word_emb"), b->word, ids);
    int pe = tgraph_op(m, IR_OP_GATHER, t_ln(-1, "pos_emb"), b->pos, pid);
    int te = tgraph_op(m, IR_OP_GATHER, t_ln(-1, "type_emb"), b->type, tt);
    int s0 = tgraph_op(m, IR_OP_ADD, t_ln(-1, "emb_sum0"), we, pe);
    int s1 = tgraph_op(m, IR_OP_ADD, t_ln(-1, "emb_sum"), s0, te);
    int h = tgraph_op(m, IR_OP_LAYER_NORM, t_ln(-1, "h0"), s1, b->eg, b->eb);
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
            int mm = tgraph_op(m, IR_OP_MATMUL, t_ln(l, n1), h, wts[p][l]);
            int ba = tgraph_op(m, IR_OP_BIAS_ADD, t_ln(l, n2), mm, bs[p][l]);
            int r = tgraph_reshape(m, t_ln(l, n3), ba, 3, (int64_t[]){S, b->NH, b->HD});
            proj[p] = tgraph_transpose(m, t_ln(l, n4), r, 3, (int[]){1, 0, 2});
        }
        int sc = tgraph_op(m, IR_OP_BATCHED_MATMUL, t_ln(l, "scores"), proj[0], proj[1]);
        m->g.nodes[sc].transpose_b = 1;
        int ss = tgraph_op(m, IR_OP_SCALE, t_ln(l, "scores_s"), sc);
        m->g.nodes[ss].scale = (float)(1.0 / sqrt((double)b->HD));
        int sm = tgraph_op(m, IR_OP_MASK, t_ln(l, "scores_m"), ss, am);
        int pr = tgraph_op(m, IR_OP_SOFTMAX, t_ln(l, "probs"), sm);
        int ch = tgraph_op(m, IR_OP_BATCHED_MATMUL, t_ln(l, "ctx_h"), pr, proj[2]);
        int ct = tgraph_transpose(m, t_ln(l, "ctx_t"), ch, 3, (int[]){1, 0, 2});
        int cx = tgraph_reshape(m, t_ln(l, "ctx"), ct, 2, (int64_t[]){S, b->H});
        b->wo[l] = t_wname(m, l, "ao_w", 2, b->H, b->H, ws);
        b->bo[l] = t_wname(m, l, "ao_b", 1, b->H, 0, 0.25f);
        b->g1[l] = t_wname(m, l, "ln1_g", 1, b->H, 0, 1.0f);
        b->b1[l] = t_wname(m, l, "ln1_b", 1, b->H, 0, 0.25f);
        int aom = tgraph_op(m, IR_OP_MATMUL, t_ln(l, "ao_mm"), cx, b->wo[l]);
        int ao = tgraph_op(m, IR_OP_BIAS_ADD, t_ln(l, "ao"), aom, b->bo[l]);
        int ar = tgraph_op(m, IR_OP_ADD, t_ln(l, "ao_res"), ao, h);
        int at = tgraph_op(m, IR_OP_LAYER_NORM, t_ln(l, "attn_out"), ar, b->g1[l], b->b1[l]);
        m->g.nodes[at].eps = 1e-12f;
        b->wi[l] = t_wname(m, l, "inter_w", 2, b->I, b->H, ws);
        b->bi[l] = t_wname(m, l, "inter_b", 1, b->I, 0, 0.25f);
        b->wo2[l] = t_wname(m, l, "out_w", 2, b->H, b->I, ws);
        b->bo2[l] = t_wname(m, l, "out_b", 1, b->H, 0, 0.25f);
        b->g2[l] = t_wname(m, l, "ln2_g", 1, b->H, 0, 1.0f);
        b->b2[l] = t_wname(m, l, "ln2_b", 1, b->H, 0, 0.25f);
        int im = tgraph_op(m, IR_OP_MATMUL, t_ln(l, "inter_mm"), at, b->wi[l]);
        int ib = tgraph_op(m, IR_OP_BIAS_ADD, t_ln(l, "inter_b"), im, b->bi[l]);
        int ia = tgraph_op(m, IR_OP_ACTIVATION, t_ln(l, "inter"), ib);
        m->g.nodes[ia].act = b->act;
        int om = tgraph_op(m, IR_OP_MATMUL, t_ln(l, "out_mm"), ia, b->wo2[l]);
        int ob = tgraph_op(m, IR_OP_BIAS_ADD, t_ln(l, "out_b"), om, b->bo2[l]);
        int orr = tgraph_op(m, IR_OP_ADD, t_ln(l, "out_res"), ob, at);
        char hn[16];
        snprintf(hn, sizeof hn, "h%d", l + 1);
        h = tgraph_op(m, IR_OP_LAYER_NORM, t_ln(-1, hn), orr, b->g2[l], b->b2[l]);
        m->g.nodes[h].eps = 1e-12f;
    }
    b->pw = tgraph_weight_rand(m, "pool_w", IR_DTYPE_BF16, 2, b->H, b->H, 0.125f);
    b->pb = tgraph_weight_rand(m, "pool_b", IR_DTYPE_F32, 1, b->H, 0, 0.25f);
    int cls = tgraph_slice(m, "cls", h, 0, 0, 1);
    int pm = tgraph_op(m, IR_OP_MATMUL, t_ln(-1, "pool_mm"), cls, b->pw);
    int pbn = tgraph_op(m, IR_OP_BIAS_ADD, t_ln(-1, "pool_b"), pm, b->pb);
    int pt = tgraph_op(m, IR_OP_ACTIVATION, t_ln(-1, "pool_t"), pbn);
    m->g.nodes[pt].act = IR_ACT_TANH;
    int pooled = tgraph_reshape(m, "pooled", pt, 1, (int64_t[]){b->H});
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

static void t_bert_naive(const tgraph *m, const t_bert *b, const int32_t *ids, const int32_t *types,
                         const int32_t *mask, int64_t S_, float *out_h, float *out_pool) {
    int64_t H = b->H, HD = b->HD;
    float *h = malloc((size_t)(S_ * H) * sizeof *h);
    for (int64_t s = 0; s < S_; s++)
        for (int64_t k = 0; k < H; k++)
            h[s * H + k] = (tgraph_values(m, b->word)[ids[s] * H + k] + tgraph_values(m, b->pos)[s * H + k]) +
                           tgraph_values(m, b->type)[types[s] * H + k];
    n_layer_norm(h, S_, H, tgraph_values(m, b->eg), tgraph_values(m, b->eb));
    float scale = (float)(1.0 / sqrt((double)HD));
    float *p = malloc((size_t)S_ * sizeof *p);
    for (int l = 0; l < b->L; l++) {
        float *q = n_linear(h, S_, H, tgraph_values(m, b->wq[l]), tgraph_values(m, b->bq[l]), H);
        float *k = n_linear(h, S_, H, tgraph_values(m, b->wk[l]), tgraph_values(m, b->bk[l]), H);
        float *v = n_linear(h, S_, H, tgraph_values(m, b->wv[l]), tgraph_values(m, b->bv[l]), H);
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
        float *ao = n_linear(ctx, S_, H, tgraph_values(m, b->wo[l]), tgraph_values(m, b->bo[l]), H);
        for (int64_t x = 0; x < S_ * H; x++) ao[x] += h[x];
        n_layer_norm(ao, S_, H, tgraph_values(m, b->g1[l]), tgraph_values(m, b->b1[l]));
        float *in = n_linear(ao, S_, H, tgraph_values(m, b->wi[l]), tgraph_values(m, b->bi[l]), b->I);
        for (int64_t x = 0; x < S_ * b->I; x++) in[x] = (float)t_act(b->act, in[x]);
        float *o = n_linear(in, S_, b->I, tgraph_values(m, b->wo2[l]), tgraph_values(m, b->bo2[l]), H);
        for (int64_t x = 0; x < S_ * H; x++) o[x] += ao[x];
        n_layer_norm(o, S_, H, tgraph_values(m, b->g2[l]), tgraph_values(m, b->b2[l]));
        memcpy(h, o, (size_t)(S_ * H) * sizeof *h);
        free(q); free(k); free(v); free(ctx); free(ao); free(in); free(o);
    }
    memcpy(out_h, h, (size_t)(S_ * H) * sizeof *h);
    float *pl = n_linear(h, 1, H, tgraph_values(m, b->pw), tgraph_values(m, b->pb), H);
    for (int64_t x = 0; x < H; x++) out_pool[x] = (float)t_tanh_exp(pl[x]);
    free(pl);
    free(p);
    free(h);
}

static void test_bert_chain(void) {
    tgraph m;
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
    if (t_model_finish(&m)) return;
    int64_t len = check_rng_range(1, b.P);
    t_call c;
    t_call_init(&c, len, b.V);
    c.req.token_type_ids = c.types = t_rand_ids(len, 0, 1);
    t_call_mask(&c);
    c.mask[0] = 1;
    const ref_tensor *th = t_call_run(&m, &c, "last_hidden_state");
    const ref_tensor *tp = ref_result_find(&c.res, "pooler_output");
    if (th && tp) {
        CHECK(t_shape_eq(th, 2, (int64_t[]){len, b.H}) && t_shape_eq(tp, 1, (int64_t[]){b.H}),
              "output shapes");
        float *wh = malloc((size_t)(len * b.H) * sizeof *wh), *wp = malloc((size_t)b.H * sizeof *wp);
        t_bert_naive(&m, &b, c.ids, c.types, c.mask, len, wh, wp);
        long double *lh = malloc((size_t)(len * b.H) * sizeof *lh), *lp = malloc((size_t)b.H * sizeof *lp);
        for (int64_t i = 0; i < len * b.H; i++) lh[i] = wh[i];
        for (int64_t i = 0; i < b.H; i++) lp[i] = wp[i];
        t_check_close("last_hidden_state", th->data, lh, len * b.H, 1e-5, 1e-5);
        t_check_close("pooler_output", tp->data, lp, b.H, 1e-5, 1e-5);
        free(wh); free(wp); free(lh); free(lp);
    }
    t_call_done(&m, &c);
}

/* ---- position ops (RoBERTa, MPNet, DistilBERT) -------------------------- */

/* RoBERTa's create_position_ids_from_input_ids, written out: a cumulative
 * count of non-pad ids, the pad id where the id is the pad. */
static void test_pad_positions(void) {
    for (int round = 0; round < 8; round++) {
        tgraph m;
        t_model_init(&m, 64);
        int32_t pad = (int32_t)check_rng_range(0, 3);
        int ids = tgraph_input(&m, "input_ids");
        int pos = tgraph_op(&m, IR_OP_PAD_POSITIONS, "pos", ids);
        m.g.nodes[pos].pad_id = pad;
        ir_graph_add_output(&m.g, "pos", pos);
        if (t_model_finish(&m)) return;
        int64_t len = check_rng_range(1, 64);
        t_call c;
        t_call_init(&c, len, 5); /* ids 0..4: the pad id is frequent */
        const ref_tensor *t = t_call_run(&m, &c, "pos");
        for (int64_t s = 0, seen = 0; t && s < len; s++) {
            seen += c.ids[s] != pad;
            int32_t want = c.ids[s] == pad ? pad : (int32_t)(pad + seen), got = (int32_t)t->data[s]; /* results are float */
            CHECK(got == want, "pad %d, position %lld: %d, expected %d", (int)pad, (long long)s, (int)got, (int)want);
        }
        t_call_done(&m, &c);
    }
}

/*
 * MPNet's bucket of a relative position, as transformers 4.44 computes it
 * (MPNetEncoder.relative_position_bucket, 32 buckets, max_distance 128),
 * for every |key - query| up to 1100: the first and last distance of each
 * log bucket, read off transformers' own output.
 */
static int want_bucket(int64_t rel) {
    static const int64_t first[8] = {8, 12, 16, 23, 32, 46, 64, 91}; /* buckets 8 .. 15 */
    int64_t n = rel < 0 ? -rel : rel;
    int b = (int)n;
    if (n >= 8)
        for (int k = 0; k < 8; k++)
            if (n >= first[k]) b = 8 + k;
    return (rel > 0 ? 16 : 0) + b; /* keys after the query use the upper half */
}

static void test_rel_pos_bucket(void) {
    for (int64_t rel = -1100; rel <= 1100; rel++)
        if (ref_rel_pos_bucket(rel, 32, 128) != want_bucket(rel)) {
            CHECK(0, "relative position %lld: bucket %d, transformers %d", (long long)rel,
                  ref_rel_pos_bucket(rel, 32, 128), want_bucket(rel));
            return;
        }
}

/* rel_pos_bias: [heads, S, S] = table[bucket(k - q)][h], in every dtype. */
static void test_rel_pos_bias(void) {
    for (int k = 0; k < 3; k++) {
        tgraph m;
        t_model_init(&m, 160);
        int64_t NH = check_rng_range(1, 6), len = k == 2 ? 150 : check_rng_range(1, 40);
        int ids = tgraph_input(&m, "input_ids");
        int table = tgraph_weight_rand(&m, "table", t_dtype(k), 2, 32, NH, 1.0f);
        int b = tgraph_op(&m, IR_OP_REL_POS_BIAS, "bias", table, ids);
        m.g.nodes[b].buckets = 32;
        m.g.nodes[b].max_distance = 128;
        ir_graph_add_output(&m.g, "bias", b);
        t_call c;
        const ref_tensor *t = t_model_run(&m, &c, len, 10, "bias");
        const int64_t dims[3] = {NH, len, len};
        CHECK(!t || t_shape_eq(t, 3, dims), "bias shape");
        const float *tv = tgraph_values(&m, table);
        for (int64_t h = 0; t && t_shape_eq(t, 3, dims) && h < NH; h++)
            for (int64_t q = 0; q < len; q++)
                for (int64_t kk = 0; kk < len; kk++) {
                    float want = tv[want_bucket(kk - q) * NH + h], got = t->data[(h * len + q) * len + kk];
                    if (got != want) {
                        CHECK(0, "head %lld, query %lld, key %lld: %g, expected %g", (long long)h, (long long)q,
                              (long long)kk, (double)got, (double)want);
                        h = NH, q = len;
                        break;
                    }
                }
        t_call_done(&m, &c);
    }
}

/* DistilBERT's sinusoid, against values numpy and torch computed
 * (create_sinusoidal_embeddings(48, 80)), bit for bit. */
static void test_sinusoid(void) {
    static const struct {
        int pos, j;
        uint32_t bits;
    } want[] = {{0, 0, 0u},          {0, 1, 1065353216u}, {1, 0, 1062693540u},  {5, 3, 3207381584u},
                {17, 40, 1043152419u}, {47, 79, 1065352922u}, {33, 12, 1063789032u}};
    tgraph m;
    t_model_init(&m, 8);
    int ids = tgraph_input(&m, "input_ids");
    int sn = tgraph_op_srcs(&m, IR_OP_SINUSOID, "table", NULL, 0);
    m.g.nodes[sn].ndim = 2;
    m.g.nodes[sn].shape[0] = 48;
    m.g.nodes[sn].shape[1] = 80;
    int g = tgraph_op(&m, IR_OP_GATHER, "rows", sn, ids);
    ir_graph_add_output(&m.g, "table", sn);
    ir_graph_add_output(&m.g, "rows", g);
    t_call c;
    const ref_tensor *t = t_model_run(&m, &c, 3, 48, "table");
    for (size_t i = 0; t && i < sizeof want / sizeof want[0]; i++) {
        uint32_t got;
        memcpy(&got, &t->data[want[i].pos * 80 + want[i].j], 4);
        CHECK(got == want[i].bits, "sinusoid (%d, %d): bits %08x, numpy %08x", want[i].pos, want[i].j, got, want[i].bits);
    }
    const ref_tensor *r = t ? ref_result_find(&c.res, "rows") : NULL;
    for (int64_t s = 0; r && s < 3; s++)
        CHECK(!memcmp(r->data + s * 80, t->data + (int64_t)c.ids[s] * 80, 80 * sizeof(float)),
              "a gather of the sinusoid reads its rows");
    t_call_done(&m, &c);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_pad_positions);
    CHECK_CASE(test_rel_pos_bucket);
    CHECK_CASE(test_rel_pos_bias);
    CHECK_CASE(test_sinusoid);
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
