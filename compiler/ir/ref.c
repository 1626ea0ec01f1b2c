/*
 * ref — the reference executor (see ref.h for its place in bertc).
 *
 * The executor walks the node array once, in order, and gives every node a
 * plain malloc'd buffer of 4-byte elements: float for floating tensors,
 * int32 for ids.  Everything is float32 in memory whatever the weights'
 * stored type, because this is the yardstick the half-precision kernels
 * are judged by; the arithmetic inside an op is done in double (every dot
 * product, every reduction, every transcendental) and rounded to float
 * once, so the reference's own error is one float rounding per op and its
 * results do not depend on summation order tricks.
 *
 * Memory: a buffer is freed right after the last node that reads it (the
 * last use of every node is computed up front), and weights are widened to
 * float32 only when an op first needs them, so a 512-token MiniLM run holds
 * one layer's activations and a few weight matrices, not the whole model
 * twice.  gather reads its table rows straight from the safetensors mapping,
 * because a 30522-row word-embedding table is by far the largest weight and
 * a request touches only S of its rows.
 *
 * Speed matters only enough that a full model runs in seconds: the GEMM
 * x·Wᵀ walks a row of x and a row of W together (both contiguous) and
 * computes a 2×4 block of outputs per pass, which gives the CPU eight
 * independent double accumulators to overlap; each output is still one
 * dot product summed in k order, exactly what the naive loop computes.
 *
 * The request is checked before anything runs (length, required inputs);
 * ids are checked by the gather that uses them, where the error can name
 * the tensor, the position, the value and the table's size.
 *
 * The fused ops (LINEAR, ATTENTION, ADD_LN, EMBED_LN, CONCAT, CONST) are
 * here too, and each is written as the unfused chain it replaces run in one
 * place: the same row helpers (dot products, LayerNorm, softmax, the mask
 * addition), the same double accumulators, and a float32 rounding exactly
 * where the unfused graph stores an intermediate tensor.  So a fused graph
 * reproduces the unfused one bit for bit, and a pass that changes a result
 * at all is a pass with a bug — which is how the pass tests judge them.
 * ref_eval_static() runs one op on compile-time operands, which is all
 * constant folding needs.
 */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_SQRT1_2 0.70710678118654752440       /* 1/sqrt(2) */
#define REF_SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2/pi) */

typedef struct ref_ctx {
    const ir_graph *g;
    const weights *weights;
    const ref_request *req;
    int64_t seq;                  /* S of this request */
    void **buf;                   /* per node: float* or int32_t*, NULL when not live */
    const weights_tensor **tensor; /* per WEIGHT node: its tensor */
    int *last_use;                /* per node: index of the last node reading it */
    diag *d;
} ref_ctx;

/* ---- errors ------------------------------------------------------------- */

/* An error about a node is reported at the YAML place that defined it. */
__attribute__((format(printf, 3, 4)))
static int ref_fail_node(ref_ctx *c, const ir_node *n, const char *fmt, ...) {
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n->line > 0)
        return diag_set_at(c->d, DIAG_CODE_INPUT, c->g->source_path, NULL, 0, n->line, n->col,
                           "%s", msg);
    return diag_set(c->d, DIAG_CODE_INPUT, "%s", msg);
}

static int ref_fail_oom(ref_ctx *c, const ir_node *n, int64_t bytes) {
    return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory allocating %lld bytes for %s '%s'",
                    (long long)bytes, ir_op_name(n->op), n->name);
}

/* ---- buffers ------------------------------------------------------------ */

/* Shape with S bound; returns the element count, or -1 if it overflows
 * what a buffer can hold. */
static int64_t ref_bind_shape(const ir_node *n, int64_t seq, int64_t *shape) {
    int64_t numel = 1;
    for (int i = 0; i < n->ndim; i++) {
        shape[i] = ir_dim_bind(n->shape[i], seq);
        if (shape[i] < 0 || __builtin_mul_overflow(numel, shape[i], &numel)) return -1;
    }
    if (numel > (int64_t)(SIZE_MAX / 8)) return -1;
    return numel;
}

static int64_t ref_numel(const ref_ctx *c, int i) {
    int64_t shape[IR_MAX_DIMS];
    return ref_bind_shape(&c->g->nodes[i], c->seq, shape);
}

/* Give node i a fresh buffer of its (bound) size. */
static void *ref_alloc(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t numel = ref_numel(c, i);
    if (numel < 0) {
        ref_fail_node(c, n, "%s '%s': tensor is too large for S = %lld", ir_op_name(n->op),
                      n->name, (long long)c->seq);
        return NULL;
    }
    /* Every element is 4 bytes (float or int32); never ask malloc for 0. */
    void *p = malloc((size_t)(numel ? numel : 1) * 4);
    if (!p) ref_fail_oom(c, n, numel * 4);
    c->buf[i] = p;
    return p;
}

/* A weight becomes a float32 buffer the first time an op reads it. */
static int ref_materialize(ref_ctx *c, int i) {
    if (c->buf[i]) return 0;
    const ir_node *n = &c->g->nodes[i];
    if (n->op != IR_OP_WEIGHT)
        return diag_set(c->d, DIAG_CODE_INTERNAL, "ref: %s '%s' read before it was computed",
                        ir_op_name(n->op), n->name);
    const weights_tensor *t = c->tensor[i];
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    weights_tensor_read_f32(t, 0, weights_tensor_numel(t), out);
    return 0;
}

static const float *ref_src_f32(ref_ctx *c, const ir_node *n, int s) {
    return c->buf[n->src[s]];
}

static const int32_t *ref_src_i32(ref_ctx *c, const ir_node *n, int s) {
    return c->buf[n->src[s]];
}

/* Last dimension and number of rows of node i with S bound: most ops work
 * row by row over the last axis. */
static void ref_rows(const ref_ctx *c, int i, int64_t *rows, int64_t *cols) {
    int64_t shape[IR_MAX_DIMS];
    const ir_node *n = &c->g->nodes[i];
    int64_t numel = ref_bind_shape(n, c->seq, shape);
    *cols = n->ndim ? shape[n->ndim - 1] : 1;
    *rows = *cols ? numel / *cols : 0;
}

/* ---- the request -------------------------------------------------------- */

static int ref_bind_input(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ref_request *r = c->req;
    const int32_t *given = NULL;
    if (strcmp(n->name, "input_ids") == 0) given = r->input_ids;
    else if (strcmp(n->name, "token_type_ids") == 0) given = r->token_type_ids;
    else if (strcmp(n->name, "attention_mask") == 0) given = r->attention_mask;
    else
        return ref_fail_node(c, n, "input '%s' is not one of input_ids, token_type_ids, attention_mask",
                             n->name);
    if (n->dtype != IR_DTYPE_I32 || n->ndim != 1 || n->shape[0] != IR_DIM_SEQ) {
        char b[96];
        return ref_fail_node(c, n, "input '%s' is %s %s (expected int32 [S])", n->name,
                             ir_dtype_name(n->dtype), ir_shape_str(n, b, sizeof b));
    }
    if (!given && !n->optional)
        return diag_set(c->d, DIAG_CODE_INPUT,
                        "request: input '%s' is required but was not given", n->name);
    int32_t *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < c->seq; k++) out[k] = given ? given[k] : n->default_value;
    return 0;
}

static int ref_check_request(ref_ctx *c) {
    const ref_request *r = c->req;
    if (r->len < 1)
        return diag_set(c->d, DIAG_CODE_INPUT, "request: length is %lld (expected at least 1 token)",
                        (long long)r->len);
    if (c->g->max_seq_len > 0 && r->len > c->g->max_seq_len)
        return diag_set(c->d, DIAG_CODE_INPUT,
                        "request: length %lld exceeds the model's max_seq_len %lld",
                        (long long)r->len, (long long)c->g->max_seq_len);
    if (!r->input_ids)
        return diag_set(c->d, DIAG_CODE_INPUT, "request: input_ids is required but was not given");
    /* Hugging Face's mask is 0/1; the runtime refuses anything else, and so
     * does its yardstick (other values would mean something different to
     * each executor: a mean pool counts any non-zero, the extended mask
     * scales by it). */
    for (int64_t k = 0; r->attention_mask && k < r->len; k++)
        if (r->attention_mask[k] != 0 && r->attention_mask[k] != 1)
            return diag_set(c->d, DIAG_CODE_INPUT, "request: attention_mask[%lld] = %d (expected 0 or 1)", (long long)k,
                            r->attention_mask[k]);
    /* Required inputs are checked before any op runs, so a bad request
     * costs nothing. */
    for (int i = 0; i < c->g->count; i++) {
        const ir_node *n = &c->g->nodes[i];
        if (n->op != IR_OP_INPUT || n->optional) continue;
        if (strcmp(n->name, "token_type_ids") == 0 && !r->token_type_ids)
            return diag_set(c->d, DIAG_CODE_INPUT,
                            "request: input 'token_type_ids' is required but was not given");
        if (strcmp(n->name, "attention_mask") == 0 && !r->attention_mask)
            return diag_set(c->d, DIAG_CODE_INPUT,
                            "request: input 'attention_mask' is required but was not given");
    }
    return 0;
}

static int ref_bind_weight(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const char *wname = n->weight ? n->weight : n->name;
    if (!c->weights)
        return ref_fail_node(c, n, "weight '%s': no weights file was given", wname);
    const weights_tensor *t = weights_find(c->weights, wname);
    if (!t)
        return ref_fail_node(c, n, "weight '%s': no such tensor in %s", wname,
                             c->weights->path ? c->weights->path : "the weights file");
    if (t->dtype != WEIGHTS_DTYPE_F32 && t->dtype != WEIGHTS_DTYPE_F16 && t->dtype != WEIGHTS_DTYPE_BF16)
        return ref_fail_node(c, n, "weight '%s' is stored as %s (expected F32, F16 or BF16)",
                             wname, t->dtype_name);
    int same = t->ndim == n->ndim;
    for (int k = 0; same && k < n->ndim; k++) same = t->shape[k] == n->shape[k];
    if (!same) {
        char b[96], f[160];
        size_t len = 0;
        f[len++] = '[';
        for (int k = 0; k < t->ndim && len < sizeof f - 24; k++)
            len += (size_t)snprintf(f + len, sizeof f - len, "%s%lld", k ? ", " : "",
                                    (long long)t->shape[k]);
        snprintf(f + len, sizeof f - len, "]");
        return ref_fail_node(c, n, "weight '%s' is %s in the weights file but %s in the graph",
                             wname, f, ir_shape_str(n, b, sizeof b));
    }
    c->tensor[i] = t;
    return 0;
}

/* ---- ops ---------------------------------------------------------------- */

static int ref_op_arange(ref_ctx *c, int i) {
    int32_t *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < c->seq; k++) out[k] = (int32_t)k;
    return 0;
}

/* RoBERTa's create_position_ids_from_input_ids, one request. */
static int ref_op_pad_positions(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const int32_t *ids = ref_src_i32(c, n, 0);
    int32_t *out = ref_alloc(c, i);
    if (!out) return -1;
    ref_pad_positions(ids, c->seq, n->pad_id, out);
    return 0;
}

void ref_pad_positions(const int32_t *ids, int64_t len, int32_t pad, int32_t *out) {
    int64_t count = 0;
    for (int64_t s = 0; s < len; s++) {
        count += ids[s] != pad;
        out[s] = ids[s] != pad ? (int32_t)(pad + count) : pad;
    }
}

/*
 * MPNet's relative_position_bucket (T5's bidirectional form) for the
 * relative position rel = key - query, reproduced operation by operation:
 * half the buckets for each direction (keys before the query first), exact
 * buckets for |rel| < buckets/4, then a log scale up to max_distance.
 * transformers computes the log branch in float32 — log of n / max_exact,
 * divided by log(max_distance / max_exact) (a double, rounded to float32 by
 * the division), times the bucket span, truncated — so this does too; the
 * tests check every |rel| up to 1100 against transformers' buckets.
 */
int ref_rel_pos_bucket(int64_t rel, int buckets, int max_distance) {
    int64_t n = -rel;
    int half = buckets / 2, ret = n < 0 ? half : 0;
    n = n < 0 ? -n : n;
    int max_exact = half / 2;
    if (n < max_exact) return ret + (int)n;
    float l = logf((float)n / (float)max_exact) / (float)log((double)max_distance / (double)max_exact);
    int64_t large = max_exact + (int64_t)(l * (float)(half - max_exact));
    return ret + (int)(large < half - 1 ? large : half - 1);
}

void ref_rel_pos_bias_fill(const float *table, int heads, int buckets, int max_distance, int64_t seq, int64_t ld,
                           float *out) {
    for (int64_t q = 0; q < seq; q++)
        for (int64_t k = 0; k < seq; k++) {
            const float *row = table + (size_t)ref_rel_pos_bucket(k - q, buckets, max_distance) * (size_t)heads;
            for (int h = 0; h < heads; h++) out[((size_t)h * (size_t)ld + (size_t)q) * (size_t)ld + (size_t)k] = row[h];
        }
}

static int ref_op_rel_pos_bias(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *table = ref_src_f32(c, n, 0);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    ref_rel_pos_bias_fill(table, (int)n->shape[0], n->buckets, n->max_distance, c->seq, c->seq, out);
    return 0;
}

/*
 * DistilBERT's create_sinusoidal_embeddings: pos / 10000^(2 (j / 2) / dim)
 * in double, sin for even j and cos for odd j, rounded to float32 (numpy
 * computes in float64, torch.FloatTensor rounds).
 */
float ref_sinusoid_value(int64_t pos, int64_t j, int64_t dim) {
    double a = (double)pos / pow(10000.0, (double)(2 * (j / 2)) / (double)dim);
    return (float)(j % 2 ? cos(a) : sin(a));
}

static int ref_op_sinusoid(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t p = 0; p < n->shape[0]; p++)
        for (int64_t j = 0; j < n->shape[1]; j++) out[p * n->shape[1] + j] = ref_sinusoid_value(p, j, n->shape[1]);
    return 0;
}

/* Every id of source `index_src` of node n must be a row of the table in
 * source `table_src`. */
static int ref_check_ids(ref_ctx *c, const ir_node *n, int table_src, int index_src) {
    const ir_node *table = &c->g->nodes[n->src[table_src]], *index = &c->g->nodes[n->src[index_src]];
    int64_t rows = table->shape[0];
    int64_t count = ir_dim_bind(index->shape[0], c->seq);
    const int32_t *ids = ref_src_i32(c, n, index_src);
    for (int64_t k = 0; k < count; k++)
        if (ids[k] < 0 || ids[k] >= rows)
            return ref_fail_node(c, n, "%s '%s': %s[%lld] = %d is out of range (table '%s' has %lld rows)",
                                 ir_op_name(n->op), n->name, index->name, (long long)k, (int)ids[k],
                                 table->op == IR_OP_WEIGHT && table->weight ? table->weight
                                                                            : table->name,
                                 (long long)rows);
    return 0;
}

/* Row `row` of the table node `t` into dst[dim]: from its float32 buffer if
 * it has one, else straight from the weights file. */
static void ref_table_row(const ref_ctx *c, int t, int64_t row, int64_t dim, float *dst) {
    const float *tab = c->buf[t];
    if (tab) {
        memcpy(dst, tab + row * dim, (size_t)dim * sizeof *dst);
        return;
    }
    weights_tensor_read_f32(c->tensor[t], row * dim, dim, dst);
}

static int ref_op_gather(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ir_node *table = &c->g->nodes[n->src[0]], *index = &c->g->nodes[n->src[1]];
    int64_t dim = table->shape[1];
    int64_t count = ir_dim_bind(index->shape[0], c->seq);
    const int32_t *ids = ref_src_i32(c, n, 1);
    if (ref_check_ids(c, n, 0, 1)) return -1;
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < count; k++) ref_table_row(c, n->src[0], ids[k], dim, out + k * dim);
    return 0;
}

static int ref_op_add(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *a = ref_src_f32(c, n, 0), *b = ref_src_f32(c, n, 1);
    int64_t numel = ref_numel(c, i);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < numel; k++) out[k] = a[k] + b[k];
    return 0;
}

static int ref_op_bias_add(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0), *bias = ref_src_f32(c, n, 1);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) out[r * cols + k] = x[r * cols + k] + bias[k];
    return 0;
}

/* One row of LayerNorm; layer_norm, add_ln and embed_ln all come here. */
static void ref_ln_row(const float *xr, int64_t cols, const float *gamma, const float *beta,
                       float eps, float *out) {
    double sum = 0.0;
    for (int64_t k = 0; k < cols; k++) sum += xr[k];
    double mean = sum / (double)cols;
    /* Two passes: the variance of centred values, never E[x²] − mean². */
    double sq = 0.0;
    for (int64_t k = 0; k < cols; k++) {
        double dev = xr[k] - mean;
        sq += dev * dev;
    }
    double sd = sqrt(sq / (double)cols + (double)eps);
    for (int64_t k = 0; k < cols; k++) out[k] = (float)((xr[k] - mean) / sd * gamma[k] + beta[k]);
}

static int ref_op_layer_norm(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    const float *gamma = ref_src_f32(c, n, 1), *beta = ref_src_f32(c, n, 2);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t r = 0; r < rows; r++) ref_ln_row(x + r * cols, cols, gamma, beta, n->eps, out + r * cols);
    return 0;
}

static double ref_dot(const float *a, const float *b, int64_t k) {
    double s = 0.0;
    for (int64_t j = 0; j < k; j++) s += (double)a[j] * b[j];
    return s;
}

/*
 * c[M, N] = a[M, K] · b[N, K]ᵀ.  Two rows of a against four rows of b per
 * pass: eight independent sums that the CPU can pipeline.  Each sum still
 * runs over k in order, so every output equals ref_dot() of its two rows.
 */
static void ref_gemm_nt(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K) {
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
        const float *a0 = a + m * K, *a1 = a0 + K;
        int64_t n = 0;
        for (; n + 4 <= N; n += 4) {
            const float *b0 = b + n * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
            double s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
            for (int64_t k = 0; k < K; k++) {
                double x0 = a0[k], x1 = a1[k];
                double w0 = b0[k], w1 = b1[k], w2 = b2[k], w3 = b3[k];
                s00 += x0 * w0; s01 += x0 * w1; s02 += x0 * w2; s03 += x0 * w3;
                s10 += x1 * w0; s11 += x1 * w1; s12 += x1 * w2; s13 += x1 * w3;
            }
            float *c0 = c + m * N + n, *c1 = c0 + N;
            c0[0] = (float)s00; c0[1] = (float)s01; c0[2] = (float)s02; c0[3] = (float)s03;
            c1[0] = (float)s10; c1[1] = (float)s11; c1[2] = (float)s12; c1[3] = (float)s13;
        }
        for (; n < N; n++) {
            c[m * N + n] = (float)ref_dot(a0, b + n * K, K);
            c[(m + 1) * N + n] = (float)ref_dot(a1, b + n * K, K);
        }
    }
    for (; m < M; m++)
        for (int64_t n = 0; n < N; n++) c[m * N + n] = (float)ref_dot(a + m * K, b + n * K, K);
}

/*
 * c[M, N] = a[M, K] · b[K, N].  Row by row: a double row of N sums, into
 * which each row of b is added scaled by a[m, k] — both walks contiguous,
 * and again each output is summed over k in order.
 */
static void ref_gemm_nn(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K,
                        double *acc) {
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) acc[n] = 0.0;
        for (int64_t k = 0; k < K; k++) {
            double av = a[m * K + k];
            const float *br = b + k * N;
            for (int64_t n = 0; n < N; n++) acc[n] += av * br[n];
        }
        for (int64_t n = 0; n < N; n++) c[m * N + n] = (float)acc[n];
    }
}

static int ref_op_matmul(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ir_node *x = &c->g->nodes[n->src[0]], *w = &c->g->nodes[n->src[1]];
    int64_t M = ir_dim_bind(x->shape[0], c->seq), K = ir_dim_bind(x->shape[1], c->seq);
    int64_t N = ir_dim_bind(w->shape[0], c->seq);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    ref_gemm_nt(ref_src_f32(c, n, 0), ref_src_f32(c, n, 1), out, M, N, K);
    return 0;
}

static int ref_op_batched_matmul(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t sa[IR_MAX_DIMS], sb[IR_MAX_DIMS];
    ref_bind_shape(&c->g->nodes[n->src[0]], c->seq, sa);
    ref_bind_shape(&c->g->nodes[n->src[1]], c->seq, sb);
    int64_t B = sa[0], M = sa[1], K = sa[2];
    int64_t N = n->transpose_b ? sb[1] : sb[2];
    const float *a = ref_src_f32(c, n, 0), *b = ref_src_f32(c, n, 1);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    double *acc = NULL;
    if (!n->transpose_b) {
        acc = malloc((size_t)(N ? N : 1) * sizeof *acc);
        if (!acc) return ref_fail_oom(c, n, N * (int64_t)sizeof *acc);
    }
    for (int64_t bi = 0; bi < B; bi++) {
        const float *ab = a + bi * M * K, *bb = b + bi * K * N;
        float *ob = out + bi * M * N;
        if (n->transpose_b) ref_gemm_nt(ab, bb, ob, M, N, K);
        else ref_gemm_nn(ab, bb, ob, M, N, K, acc);
    }
    free(acc);
    return 0;
}

static double ref_activation(ir_act act, double x) {
    switch (act) {
    case IR_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x * REF_SQRT1_2));
    case IR_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(REF_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case IR_ACT_RELU: return x < 0.0 ? 0.0 : x;   /* NaN passes through, as in PyTorch */
    case IR_ACT_TANH: return tanh(x);
    default: return NAN;
    }
}

static int ref_op_activation(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    int64_t numel = ref_numel(c, i);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < numel; k++) out[k] = (float)ref_activation(n->act, x[k]);
    return 0;
}

static float ref_scale_value(float x, float by) { return (float)((double)x * (double)by); }

static int ref_op_scale(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    int64_t numel = ref_numel(c, i);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t k = 0; k < numel; k++) out[k] = ref_scale_value(x[k], n->scale);
    return 0;
}

/* Reshape copies: a view would save little and complicate who frees what. */
static int ref_op_reshape(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t numel = ref_numel(c, i);
    void *out = ref_alloc(c, i);
    if (!out) return -1;
    memcpy(out, c->buf[n->src[0]], (size_t)numel * 4);
    return 0;
}

static int ref_op_transpose(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ir_node *x = &c->g->nodes[n->src[0]];
    int64_t in_shape[IR_MAX_DIMS], in_stride[IR_MAX_DIMS];
    ref_bind_shape(x, c->seq, in_shape);
    int nd = x->ndim;
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        in_stride[d] = stride;
        stride *= in_shape[d];
    }
    /* Pad to four dims of size 1 so one loop nest handles every rank; out
     * dim d walks the input along its dim perm[d]. */
    int64_t od[IR_MAX_DIMS], os[IR_MAX_DIMS];
    for (int d = 0; d < IR_MAX_DIMS; d++) {
        int pd = d - (IR_MAX_DIMS - nd);
        od[d] = pd >= 0 ? in_shape[n->perm[pd]] : 1;
        os[d] = pd >= 0 ? in_stride[n->perm[pd]] : 0;
    }
    const char *in = c->buf[n->src[0]];
    char *out = ref_alloc(c, i);
    if (!out) return -1;
    int64_t o = 0;
    for (int64_t i0 = 0; i0 < od[0]; i0++)
        for (int64_t i1 = 0; i1 < od[1]; i1++)
            for (int64_t i2 = 0; i2 < od[2]; i2++)
                for (int64_t i3 = 0; i3 < od[3]; i3++, o++) {
                    int64_t src = i0 * os[0] + i1 * os[1] + i2 * os[2] + i3 * os[3];
                    memcpy(out + o * 4, in + src * 4, 4);
                }
    return 0;
}

/*
 * Hugging Face's extended attention mask, in float32 arithmetic on purpose:
 * (1 − m) · finfo(float32).min is added to the score in float, so a masked
 * score becomes exactly −FLT_MAX (the score vanishes in the rounding) and
 * every masked entry of a row is the same number — which is what makes an
 * all-masked row a uniform softmax, as in transformers.
 */
static float ref_mask_value(float x, int32_t m) {
    float add = (1.0f - (float)m) * -FLT_MAX;
    return x + add;
}

static int ref_op_mask(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    const int32_t *m = ref_src_i32(c, n, 1);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) out[r * cols + k] = ref_mask_value(x[r * cols + k], m[k]);
    return 0;
}

/* One softmax row in place-safe form (xr and out may be the same); e is
 * scratch of cols doubles. */
static void ref_softmax_row(const float *xr, int64_t cols, double *e, float *out) {
    float max = xr[0];
    for (int64_t k = 1; k < cols; k++)
        if (xr[k] > max) max = xr[k];
    double sum = 0.0;
    for (int64_t k = 0; k < cols; k++) {
        e[k] = exp((double)xr[k] - (double)max);
        sum += e[k];
    }
    for (int64_t k = 0; k < cols; k++) out[k] = (float)(e[k] / sum);
}

static int ref_op_softmax(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    double *e = malloc((size_t)(cols ? cols : 1) * sizeof *e);
    if (!e) return ref_fail_oom(c, n, cols * (int64_t)sizeof *e);
    for (int64_t r = 0; r < rows; r++) ref_softmax_row(x + r * cols, cols, e, out + r * cols);
    free(e);
    return 0;
}

static int ref_op_slice(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ir_node *x = &c->g->nodes[n->src[0]];
    int64_t shape[IR_MAX_DIMS];
    ref_bind_shape(x, c->seq, shape);
    int64_t dim = shape[n->axis];
    /* For a constant axis infer already checked this; an S axis is known
     * only now. */
    if (n->start > dim || n->len > dim - n->start)
        return ref_fail_node(c, n, "slice '%s': [%lld, %lld) along axis %d runs past the end of '%s' (length %lld for S = %lld)",
                             n->name, (long long)n->start, (long long)(n->start + n->len),
                             n->axis, x->name, (long long)dim, (long long)c->seq);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < n->axis; d++) outer *= shape[d];
    for (int d = n->axis + 1; d < x->ndim; d++) inner *= shape[d];
    const char *in = c->buf[n->src[0]];
    char *out = ref_alloc(c, i);
    if (!out) return -1;
    for (int64_t o = 0; o < outer; o++)
        memcpy(out + o * n->len * inner * 4, in + (o * dim + n->start) * inner * 4,
               (size_t)(n->len * inner) * 4);
    return 0;
}

/* ---- fused and compile-time ops ------------------------------------------ */

static int ref_op_const(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    if (!n->data)
        return diag_set(c->d, DIAG_CODE_INTERNAL, "ref: const '%s' has no values", n->name);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    memcpy(out, n->data, (size_t)ref_numel(c, i) * sizeof *out);
    return 0;
}

static int ref_op_concat(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t shape[IR_MAX_DIMS];
    ref_bind_shape(n, c->seq, shape);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < n->axis; d++) outer *= shape[d];
    for (int d = n->axis + 1; d < n->ndim; d++) inner *= shape[d];
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    int64_t row = shape[n->axis] * inner, at = 0;
    for (int s = 0; s < n->nsrc; s++) {
        int64_t ps[IR_MAX_DIMS];
        ref_bind_shape(&c->g->nodes[n->src[s]], c->seq, ps);
        int64_t part = ps[n->axis] * inner;
        const float *x = ref_src_f32(c, n, s);
        for (int64_t o = 0; o < outer; o++)
            memcpy(out + o * row + at, x + o * part, (size_t)part * sizeof *out);
        at += part;
    }
    return 0;
}

/*
 * The GEMM and then its epilogue, element by element with the unfused
 * chain's roundings: the product is rounded to float (matmul's result),
 * the bias added in float (bias_add), the residual added in float (add;
 * float addition commutes exactly, so operand order does not matter), the
 * activation computed in double and rounded (activation).
 */
static int ref_op_linear(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const ir_node *x = &c->g->nodes[n->src[0]], *w = &c->g->nodes[n->src[1]];
    int64_t M = ir_dim_bind(x->shape[0], c->seq), K = ir_dim_bind(x->shape[1], c->seq);
    int64_t N = ir_dim_bind(w->shape[0], c->seq);
    const float *bias = n->has_bias ? ref_src_f32(c, n, 2) : NULL;
    const float *res = n->has_residual ? ref_src_f32(c, n, 2 + !!n->has_bias) : NULL;
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    ref_gemm_nt(ref_src_f32(c, n, 0), ref_src_f32(c, n, 1), out, M, N, K);
    if (!bias && !res && !n->has_act) return 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < N; k++) {
            float t = out[m * N + k];
            if (bias) t = t + bias[k];
            if (res) t = t + res[m * N + k];
            if (n->has_act) t = (float)ref_activation(n->act, t);
            out[m * N + k] = t;
        }
    return 0;
}

/*
 * Per head and query row, the unfused chain in one pass over the keys:
 * scores rounded to float as batched_matmul stores them, then scale, then
 * the bias (an add in float, as the unfused add stores it), then the mask
 * addition, the softmax row, and the probabilities times v summed
 * over keys in key order in double (batched_matmul without transpose_b);
 * the result lands at columns [h·D, (h+1)·D) of its row, which is what the
 * transpose [1, 0, 2] and the reshape to [S, heads·D] did.
 */
static int ref_op_attention(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t sq[IR_MAX_DIMS], sk[IR_MAX_DIMS], sv[IR_MAX_DIMS];
    ref_bind_shape(&c->g->nodes[n->src[0]], c->seq, sq);
    ref_bind_shape(&c->g->nodes[n->src[1]], c->seq, sk);
    ref_bind_shape(&c->g->nodes[n->src[2]], c->seq, sv);
    int64_t rows = sq[0], keys = sk[0], H = n->heads, D = n->head_dim, width = H * D;
    const float *q = ref_src_f32(c, n, 0), *k = ref_src_f32(c, n, 1), *v = ref_src_f32(c, n, 2);
    const int32_t *mask = ir_attention_has_mask(n) ? ref_src_i32(c, n, 3) : NULL;
    const float *bias = n->has_bias ? ref_src_f32(c, n, n->nsrc - 1) : NULL;
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    size_t nk = (size_t)(keys ? keys : 1);
    float *scores = malloc(nk * sizeof *scores);
    double *e = malloc(nk * sizeof *e), *acc = malloc((size_t)(D ? D : 1) * sizeof *acc);
    if (!scores || !e || !acc) {
        free(scores);
        free(e);
        free(acc);
        return ref_fail_oom(c, n, (int64_t)(nk * (sizeof *scores + sizeof *e)));
    }
    for (int64_t h = 0; h < H; h++)
        for (int64_t s = 0; s < rows; s++) {
            const float *qr = q + s * sq[1] + n->q_off + h * D;
            for (int64_t t = 0; t < keys; t++) {
                float sc = (float)ref_dot(qr, k + t * sk[1] + n->k_off + h * D, D);
                if (n->scale != 1.0f) sc = ref_scale_value(sc, n->scale);
                if (bias) sc = sc + bias[(h * rows + s) * keys + t];
                if (mask) sc = ref_mask_value(sc, mask[t]);
                scores[t] = sc;
            }
            ref_softmax_row(scores, keys, e, scores);
            for (int64_t d = 0; d < D; d++) acc[d] = 0.0;
            for (int64_t t = 0; t < keys; t++) {
                double p = scores[t];
                const float *vr = v + t * sv[1] + n->v_off + h * D;
                for (int64_t d = 0; d < D; d++) acc[d] += p * vr[d];
            }
            for (int64_t d = 0; d < D; d++) out[s * width + h * D + d] = (float)acc[d];
        }
    free(scores);
    free(e);
    free(acc);
    return 0;
}

/* ((x + bias) + residual) in float, as bias_add and add store it, then the
 * LayerNorm row. */
static int ref_op_add_ln(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    const float *gamma = ref_src_f32(c, n, 1), *beta = ref_src_f32(c, n, 2);
    const float *res = n->has_residual ? ref_src_f32(c, n, 3) : NULL;
    const float *bias = n->has_bias ? ref_src_f32(c, n, 3 + !!n->has_residual) : NULL;
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    float *t = malloc((size_t)(cols ? cols : 1) * sizeof *t);
    if (!t) return ref_fail_oom(c, n, cols * (int64_t)sizeof *t);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t k = 0; k < cols; k++) {
            float v = x[r * cols + k];
            if (bias) v = v + bias[k];
            if (res) v = v + res[r * cols + k];
            t[k] = v;
        }
        ref_ln_row(t, cols, gamma, beta, n->eps, out + r * cols);
    }
    free(t);
    return 0;
}

/* The gathered rows summed left to right in float (((g0 + g1) + g2), the
 * order pass_fuse_embed_ln lists the gathers in), then the LayerNorm row. */
static int ref_op_embed_ln(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *gamma = ref_src_f32(c, n, 0), *beta = ref_src_f32(c, n, 1);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    for (int g = 0; g < n->ngathers; g++)
        if (ref_check_ids(c, n, 2 + 2 * g, 3 + 2 * g)) return -1;
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    float *t = malloc((size_t)(cols ? cols : 1) * 2 * sizeof *t);
    if (!t) return ref_fail_oom(c, n, cols * 2 * (int64_t)sizeof *t);
    float *row = t + cols;
    for (int64_t r = 0; r < rows; r++) {
        for (int g = 0; g < n->ngathers; g++) {
            const int32_t *ids = ref_src_i32(c, n, 3 + 2 * g);
            ref_table_row(c, n->src[2 + 2 * g], ids[r], cols, g ? row : t);
            if (g)
                for (int64_t k = 0; k < cols; k++) t[k] = t[k] + row[k];
        }
        ref_ln_row(t, cols, gamma, beta, n->eps, out + r * cols);
    }
    free(t);
    return 0;
}

/* x / max(||x||_2, 1e-12) in place, as torch.nn.functional.normalize: the
 * squares summed in double, the norm in double, each quotient rounded once. */
static void ref_l2_normalize_row(float *x, int64_t n) {
    double ss = 0.0;
    for (int64_t k = 0; k < n; k++) ss += (double)x[k] * (double)x[k];
    double norm = sqrt(ss);
    if (norm < 1e-12) norm = 1e-12;
    for (int64_t k = 0; k < n; k++) x[k] = (float)((double)x[k] / norm);
}

static int ref_op_l2_normalize(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const float *x = ref_src_f32(c, n, 0);
    int64_t rows, cols;
    ref_rows(c, i, &rows, &cols);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    memcpy(out, x, (size_t)(rows * cols) * sizeof *out);
    for (int64_t r = 0; r < rows; r++) ref_l2_normalize_row(out + r * cols, cols);
    return 0;
}

/*
 * sentence-transformers' Pooling: cls takes row 0; mean is
 * sum(x[s] * mask[s]) / clamp(sum(mask), min = 1e-9) with the mask read as
 * 0 or 1 (a row counts when mask[s] != 0), summed in double and rounded once
 * — so an all-zero mask gives 0 / 1e-9 = 0 in every column, exactly as
 * sentence-transformers.  A fused normalize (fuse_pool_normalize) then runs
 * l2_normalize's row code on the rounded pooled row, which is what the
 * unfused chain stores in between: the same bits either way.
 */
static int ref_op_pool(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    int64_t shape[IR_MAX_DIMS];
    ref_bind_shape(&c->g->nodes[n->src[0]], c->seq, shape);
    int64_t rows = shape[0], cols = shape[1];
    const float *x = ref_src_f32(c, n, 0);
    float *out = ref_alloc(c, i);
    if (!out) return -1;
    if (n->pool_mode == IR_POOL_CLS) {
        if (rows < 1) return ref_fail_node(c, n, "pool '%s': no row 0 to take", n->name);
        memcpy(out, x, (size_t)cols * sizeof *out);
    } else {
        const int32_t *mask = ref_src_i32(c, n, 1);
        double *acc = calloc((size_t)(cols ? cols : 1), sizeof *acc);
        if (!acc) return ref_fail_oom(c, n, cols * (int64_t)sizeof *acc);
        int64_t count = 0;
        for (int64_t s = 0; s < rows; s++) {
            if (!mask[s]) continue;
            count++;
            for (int64_t k = 0; k < cols; k++) acc[k] += x[s * cols + k];
        }
        double denom = count > 0 ? (double)count : 1e-9;
        for (int64_t k = 0; k < cols; k++) out[k] = (float)(acc[k] / denom);
        free(acc);
    }
    if (n->normalize) ref_l2_normalize_row(out, cols);
    return 0;
}

/* Sources read row by row from the weights file rather than widened whole:
 * gather's table and embed_ln's tables (the word table is the largest
 * weight and a request touches S of its rows). */
static int ref_src_is_table(const ir_node *n, int s) {
    if (n->op == IR_OP_GATHER) return s == 0;
    if (n->op == IR_OP_EMBED_LN) return s >= 2 && s % 2 == 0;
    return 0;
}

static int ref_run_node(ref_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    /* Sources first: weights are widened on first use (gather excepted, it
     * reads its table rows from the file). */
    for (int s = 0; s < n->nsrc; s++) {
        if (ref_src_is_table(n, s)) continue;
        if (ref_materialize(c, n->src[s])) return -1;
    }
    switch (n->op) {
    case IR_OP_INPUT: return ref_bind_input(c, i);
    case IR_OP_WEIGHT: return 0;  /* bound up front, widened on first use */
    case IR_OP_ARANGE: return ref_op_arange(c, i);
    case IR_OP_PAD_POSITIONS: return ref_op_pad_positions(c, i);
    case IR_OP_REL_POS_BIAS: return ref_op_rel_pos_bias(c, i);
    case IR_OP_SINUSOID: return ref_op_sinusoid(c, i);
    case IR_OP_GATHER: return ref_op_gather(c, i);
    case IR_OP_ADD: return ref_op_add(c, i);
    case IR_OP_BIAS_ADD: return ref_op_bias_add(c, i);
    case IR_OP_LAYER_NORM: return ref_op_layer_norm(c, i);
    case IR_OP_MATMUL: return ref_op_matmul(c, i);
    case IR_OP_ACTIVATION: return ref_op_activation(c, i);
    case IR_OP_RESHAPE: return ref_op_reshape(c, i);
    case IR_OP_TRANSPOSE: return ref_op_transpose(c, i);
    case IR_OP_BATCHED_MATMUL: return ref_op_batched_matmul(c, i);
    case IR_OP_SCALE: return ref_op_scale(c, i);
    case IR_OP_MASK: return ref_op_mask(c, i);
    case IR_OP_SOFTMAX: return ref_op_softmax(c, i);
    case IR_OP_SLICE: return ref_op_slice(c, i);
    case IR_OP_POOL: return ref_op_pool(c, i);
    case IR_OP_L2_NORMALIZE: return ref_op_l2_normalize(c, i);
    case IR_OP_CONST: return ref_op_const(c, i);
    case IR_OP_CONCAT: return ref_op_concat(c, i);
    case IR_OP_LINEAR: return ref_op_linear(c, i);
    case IR_OP_ATTENTION: return ref_op_attention(c, i);
    case IR_OP_ADD_LN: return ref_op_add_ln(c, i);
    case IR_OP_EMBED_LN: return ref_op_embed_ln(c, i);
    default:
        return ref_fail_node(c, n, "node '%s': the reference executor does not know op %d",
                             n->name, (int)n->op);
    }
}

/* ---- results ------------------------------------------------------------ */

void ref_result_free(ref_result *res) {
    if (!res) return;
    for (int i = 0; i < res->count; i++) {
        free(res->outputs[i].name);
        free(res->outputs[i].data);
    }
    free(res->outputs);
    res->outputs = NULL;
    res->count = 0;
}

const ref_tensor *ref_result_find(const ref_result *res, const char *name) {
    for (int i = 0; i < res->count; i++)
        if (strcmp(res->outputs[i].name, name) == 0) return &res->outputs[i];
    return NULL;
}

static int ref_collect_outputs(ref_ctx *c, ref_result *res) {
    const ir_graph *g = c->g;
    res->outputs = calloc((size_t)(g->noutputs ? g->noutputs : 1), sizeof *res->outputs);
    if (!res->outputs) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    for (int o = 0; o < g->noutputs; o++) {
        int j = g->outputs[o].node;
        const ir_node *n = &g->nodes[j];
        if (ref_materialize(c, j)) return -1;
        ref_tensor *t = &res->outputs[res->count++];
        size_t name_len = strlen(g->outputs[o].name) + 1;
        t->name = malloc(name_len);
        t->ndim = n->ndim;
        int64_t numel = ref_bind_shape(n, c->seq, t->shape);
        t->data = malloc((size_t)(numel ? numel : 1) * sizeof *t->data);
        if (!t->name || !t->data) return ref_fail_oom(c, n, numel * 4);
        memcpy(t->name, g->outputs[o].name, name_len);
        if (n->dtype == IR_DTYPE_I32) {
            const int32_t *src = c->buf[j];
            for (int64_t k = 0; k < numel; k++) t->data[k] = (float)src[k];
        } else {
            memcpy(t->data, c->buf[j], (size_t)numel * sizeof *t->data);
        }
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------ */

static int ref_check_graph(ref_ctx *c) {
    const ir_graph *g = c->g;
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        for (int s = 0; s < n->nsrc; s++)
            if (n->src[s] < 0 || n->src[s] >= i)
                return diag_set(c->d, DIAG_CODE_INTERNAL,
                                "ref: node '%s' reads node %d, which does not come before it",
                                n->name, n->src[s]);
    }
    for (int o = 0; o < g->noutputs; o++)
        if (g->outputs[o].node < 0 || g->outputs[o].node >= g->count)
            return diag_set(c->d, DIAG_CODE_INTERNAL, "ref: output '%s' refers to no node",
                            g->outputs[o].name);
    return 0;
}

int ref_run(const ir_graph *g, const weights *weights, const ref_request *req,
            ref_result *res, diag *d) {
    res->count = 0;
    res->outputs = NULL;
    if (!req) return diag_set(d, DIAG_CODE_INPUT, "request: no request given");
    ref_ctx c = {.g = g, .weights = weights, .req = req, .seq = req->len, .d = d};
    if (ref_check_graph(&c) || ref_check_request(&c)) return -1;

    int count = g->count ? g->count : 1;
    c.buf = calloc((size_t)count, sizeof *c.buf);
    c.tensor = calloc((size_t)count, sizeof *c.tensor);
    c.last_use = malloc((size_t)count * sizeof *c.last_use);
    int rc = -1;
    if (!c.buf || !c.tensor || !c.last_use) {
        diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        goto done;
    }
    /* A node lives until the last node that reads it; outputs live to the
     * end.  A node nobody reads is freed right after it is computed. */
    for (int i = 0; i < g->count; i++) {
        c.last_use[i] = i;
        for (int s = 0; s < g->nodes[i].nsrc; s++) c.last_use[g->nodes[i].src[s]] = i;
    }
    for (int o = 0; o < g->noutputs; o++) c.last_use[g->outputs[o].node] = g->count;
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == IR_OP_WEIGHT && ref_bind_weight(&c, i)) goto done;

    for (int i = 0; i < g->count; i++) {
        if (ref_run_node(&c, i)) goto done;
        const ir_node *n = &g->nodes[i];
        for (int s = 0; s < n->nsrc; s++) {
            int j = n->src[s];
            if (c.last_use[j] == i) {
                free(c.buf[j]);
                c.buf[j] = NULL;
            }
        }
        if (c.last_use[i] == i) {
            free(c.buf[i]);
            c.buf[i] = NULL;
        }
    }
    rc = ref_collect_outputs(&c, res);

done:
    if (c.buf)
        for (int i = 0; i < g->count; i++) free(c.buf[i]);
    free(c.buf);
    free(c.tensor);
    free(c.last_use);
    if (rc) ref_result_free(res);
    return rc;
}

/* ---- compile-time evaluation -------------------------------------------- */

int ref_eval_static(const ir_graph *g, const weights *weights, int node, float **data, diag *d) {
    *data = NULL;
    if (node < 0 || node >= g->count)
        return diag_set(d, DIAG_CODE_INTERNAL, "ref: node %d does not exist", node);
    const ir_node *n = &g->nodes[node];
    if (n->dtype == IR_DTYPE_I32)
        return diag_set(d, DIAG_CODE_INTERNAL, "ref: %s '%s' is int32, not a compile-time float tensor",
                        ir_op_name(n->op), n->name);
    for (int k = 0; k < n->ndim; k++)
        if (n->shape[k] == IR_DIM_SEQ)
            return diag_set(d, DIAG_CODE_INTERNAL, "ref: %s '%s' depends on S", ir_op_name(n->op),
                            n->name);
    for (int s = 0; s < n->nsrc; s++) {
        int j = n->src[s];
        if (j < 0 || j >= node || (g->nodes[j].op != IR_OP_WEIGHT && g->nodes[j].op != IR_OP_CONST))
            return diag_set(d, DIAG_CODE_INTERNAL,
                            "ref: %s '%s' reads something other than a weight or a constant",
                            ir_op_name(n->op), n->name);
    }
    if (n->op == IR_OP_INPUT)
        return diag_set(d, DIAG_CODE_INTERNAL, "ref: input '%s' has no compile-time value", n->name);
    ref_request req = {.len = 1};
    ref_ctx c = {.g = g, .weights = weights, .req = &req, .seq = 1, .d = d};
    c.buf = calloc((size_t)g->count, sizeof *c.buf);
    c.tensor = calloc((size_t)g->count, sizeof *c.tensor);
    int rc = -1;
    if (!c.buf || !c.tensor) {
        diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        goto done;
    }
    for (int s = 0; s < n->nsrc; s++) {
        int j = n->src[s];
        if (c.buf[j] || c.tensor[j]) continue;  /* the same source twice */
        if (g->nodes[j].op == IR_OP_WEIGHT ? ref_bind_weight(&c, j) : ref_op_const(&c, j)) goto done;
    }
    if (n->op == IR_OP_WEIGHT) {
        if (ref_bind_weight(&c, node) || ref_materialize(&c, node)) goto done;
    } else if (ref_run_node(&c, node)) {
        goto done;
    }
    *data = c.buf[node];
    c.buf[node] = NULL;
    rc = 0;
done:
    if (c.buf)
        for (int i = 0; i < g->count; i++) free(c.buf[i]);
    free(c.buf);
    free(c.tensor);
    return rc;
}
