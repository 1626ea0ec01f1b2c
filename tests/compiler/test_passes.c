/*
 * test_passes — the fusion passes, one by one and as the pipeline.
 *
 * Every case has the same two halves.  Structure: the pass is run on a
 * graph (a small hand-written YAML loaded with model_load_text, a graph
 * built node by node, or an imported fixture) and the result is read back
 * — op counts before and after, and the fused node's sources (by name) and
 * parameters.  Semantics: the reference executor runs the original graph
 * and the rewritten one on the same random requests (random lengths
 * including 1 and the maximum, random ids and token types, attention masks
 * with zeros, an all-zero mask, omitted optional inputs) and the outputs
 * must be bit-identical: ref.c computes each fused op with the rounding
 * points of the chain it replaces, and docs/passes.md argues why each
 * rewrite keeps every bit, so any difference at all is a bug.
 *
 * Negative cases break one pattern at a time — an extra consumer, a graph
 * output in the middle, the wrong op order, a fourth gather — and check
 * that exactly that fusion does not happen while the result stays right.
 * The pipeline cases run passes_run on every fixture (MiniLM included),
 * demand the exact per-layer op sequence, and compare with transformers'
 * goldens at the reference tolerance (1e-5 relative).
 *
 * Weights are drawn at random for every run (values and, except for the
 * tables whose sums must round to show an ordering bug, storage dtypes);
 * the YAMLs are generated from a few switches (token types, mask, scale,
 * pooler, activation, operand order) so one generator covers the variants
 * the fixtures do not have.
 */
#include <math.h>
#include <stdarg.h>
#include <unistd.h>

#include "check.h"
#include "half.h"
#include "golden.h"
#include "hf_import.h"
#include "ir.h"
#include "model.h"
#include "passes.h"
#include "ref.h"
#include "safetensors.h"
#include "stimage.h"
#include "tbuf.h"
#include "tgraph.h"

#define S IR_DIM_SEQ

/* ---- weights: a safetensors image written by the tests' writer --------- */

static ir_dtype tp_rand_dtype(void) {
    static const ir_dtype f[3] = {IR_DTYPE_F32, IR_DTYPE_F16, IR_DTYPE_BF16};
    return f[check_rng_range(0, 2)];
}

/* Random values offset + (-1, 1)·amp for a [d0] or [d0, d1] tensor (free them). */
static float *tp_values(int ndim, int64_t d0, int64_t d1, float amp, float offset) {
    int64_t n = ndim == 2 ? d0 * d1 : d0;
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t k = 0; k < n; k++) v[k] = offset + (float)(check_rng_uniform() * 2.0 - 1.0) * amp;
    return v;
}

/* A tensor of such values, stored as dt (rounded: both graphs a case
 * compares read the same stored values). */
static void tp_add(stimage *w, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1, float amp,
                   float offset) {
    float *v = tp_values(ndim, d0, d1, amp, offset);
    stimage_add_floats(w, name, tgraph_st_dtype(dt), ndim, (const int64_t[]){d0, d1}, v, 1);
    free(v);
}

/* The same as a weight node of a hand-built graph (tg->round_values set). */
static int tp_weight(tgraph *tg, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1, float amp,
                     float offset) {
    float *v = tp_values(ndim, d0, d1, amp, offset);
    int i = tgraph_weight_values(tg, name, dt, ndim, d0, d1, v);
    free(v);
    return i;
}

/* ---- a model under test --------------------------------------------------- */

typedef struct tp_model {
    model m;                 /* graph and weights (a YAML model or a fixture) */
    ir_graph g;              /* the graph under test: a copy, rewritten (tp_clone_pass) */
    const weights *w;        /* what both read: &m.weights, or a hand-built graph's */
    int64_t max_len;         /* requests are at most this long */
    int64_t vocab;           /* ids are drawn from [0, vocab) */
    int types;               /* token types from [0, types); 0: never passed */
    int mask;                /* requests carry masks with zeros */
} tp_model;

/* Load `yaml` (with "%s" where the weights path goes) over the weights w,
 * which are freed.  0, or -1 (CHECKed) with t empty. */
static int tp_load(tp_model *t, const char *yaml, stimage *w, int64_t vocab, int types, int mask) {
    memset(t, 0, sizeof *t);
    t->vocab = vocab;
    t->types = types;
    t->mask = mask;
    size_t len;
    unsigned char *img = stimage_build(w, &len, NULL);
    stimage_free(w);
    char name[64];
    snprintf(name, sizeof name, "passes-%llx.safetensors", (unsigned long long)(check_rng_u64() & 0xffffff));
    const char *p = check_write_temp(name, img, len);
    free(img);
    CHECK(p != NULL, "cannot write the weights");
    if (!p) return -1;
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    char *text = tbuf_format(yaml, path);
    diag d;
    diag_init(&d);
    int rc = model_load_text(&t->m, "test.yaml", text, strlen(text), ".", &d);
    CHECK(rc == 0, "model_load_text: %s", d.text);
    free(text);
    unlink(path);  /* the mapping stays valid */
    t->w = &t->m.weights;
    t->max_len = t->m.graph.max_seq_len;
    return rc;
}

static void tp_free(tp_model *t) {
    ir_graph_free(&t->g);
    model_free(&t->m);
}

/* One pass by name, as the pipeline runs it (weights: for fold_constants). */
static int tp_pass(const char *name, ir_graph *g, const weights *w, diag *d) {
    return passes_run_one(name, g, w, d);
}

/* The model's graph copied into t->g and run through one pass. */
static int tp_clone_pass(tp_model *t, const char *pass) {
    diag d;
    diag_init(&d);
    int rc = ir_graph_clone(&t->g, &t->m.graph);
    CHECK(rc == 0, "ir_graph_clone failed");
    if (rc) return -1;
    rc = tp_pass(pass, &t->g, t->w, &d);
    CHECK(rc == 0, "pass failed: %s", d.text);
    return rc;
}

/* tp_load, then tp_clone_pass: 0 when both went well. */
static int tp_load_pass(tp_model *t, const char *yaml, stimage *w, int64_t vocab, int types, int mask,
                        const char *pass) {
    return tp_load(t, yaml, w, vocab, types, mask) == 0 && tp_clone_pass(t, pass) == 0 ? 0 : -1;
}

/* ---- graph queries --------------------------------------------------------- */

static int tp_count(const ir_graph *g, ir_op op) {
    int n = 0;
    for (int i = 0; i < g->count; i++) n += g->nodes[i].op == op;
    return n;
}

static const ir_node *tp_node(const ir_graph *g, const char *name) {
    int i = ir_graph_find(g, name);
    CHECK(i >= 0, "no node '%s'", name);
    return i >= 0 ? &g->nodes[i] : NULL;
}

/* The nth node (0-based) of op `op`, or NULL. */
static const ir_node *tp_nth(const ir_graph *g, ir_op op, int nth) {
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == op && nth-- == 0) return &g->nodes[i];
    return NULL;
}

static const char *tp_src(const ir_graph *g, const ir_node *n, int s) {
    if (!n || s >= n->nsrc || n->src[s] < 0 || n->src[s] >= g->count) return "?";
    const ir_node *x = &g->nodes[n->src[s]];
    return x->op == IR_OP_WEIGHT && x->weight ? x->weight : x->name;
}

/* Node n reads exactly the named sources, in order (weights by file name). */
static void tp_check_srcs(const ir_graph *g, const ir_node *n, int nsrc, ...) {
    if (!n) {
        CHECK(0, "node missing");
        return;
    }
    CHECK(n->nsrc == nsrc, "%s '%s' has %d sources, expected %d", ir_op_name(n->op), n->name, n->nsrc, nsrc);
    va_list ap;
    va_start(ap, nsrc);
    for (int s = 0; s < nsrc && s < n->nsrc; s++) {
        const char *want = va_arg(ap, const char *);
        CHECK(strcmp(tp_src(g, n, s), want) == 0, "%s '%s' source %d is '%s', expected '%s'",
              ir_op_name(n->op), n->name, s, tp_src(g, n, s), want);
    }
    va_end(ap);
}

/* ---- running both graphs ------------------------------------------------- */

typedef struct tp_request {
    ref_request r;
    int32_t ids[600], types[600], mask[600];
} tp_request;

/* Request number k of a series: k 0 is length 1, k 1 the longest, k 2 has
 * every key masked, the rest are random; some omit the optional inputs. */
static void tp_request_make(const tp_model *t, int k, tp_request *q) {
    int64_t max = t->max_len;
    if (max > 600) max = 600;
    int64_t len = k == 0 ? 1 : k == 1 ? max : check_rng_range(2, max);
    memset(&q->r, 0, sizeof q->r);
    q->r.len = len;
    q->r.input_ids = q->ids;
    for (int64_t s = 0; s < len; s++) {
        q->ids[s] = (int32_t)check_rng_range(0, t->vocab - 1);
        q->types[s] = t->types ? (int32_t)check_rng_range(0, t->types - 1) : 0;
        q->mask[s] = k == 2 ? 0 : check_rng_uniform() < 0.7;
    }
    if (t->types && k % 4 != 3) q->r.token_type_ids = q->types;
    if (t->mask && k % 5 != 4) q->r.attention_mask = q->mask;
}

/* Run a and b (same weights) on nreq requests; every output bit-identical. */
static void tp_check_same(const char *what, const tp_model *t, const ir_graph *a, const ir_graph *b,
                          int nreq) {
    for (int k = 0; k < nreq; k++) {
        tp_request q;
        tp_request_make(t, k, &q);
        ref_result ra, rb;
        diag d;
        diag_init(&d);
        int rc = ref_run(a, t->w, &q.r, &ra, &d);
        CHECK(rc == 0, "%s: original graph: %s", what, d.text);
        if (rc) return;
        rc = ref_run(b, t->w, &q.r, &rb, &d);
        CHECK(rc == 0, "%s: rewritten graph: %s", what, d.text);
        if (rc) {
            ref_result_free(&ra);
            return;
        }
        CHECK(ra.count == rb.count, "%s: %d outputs vs %d", what, ra.count, rb.count);
        for (int o = 0; o < ra.count && o < rb.count; o++) {
            const ref_tensor *x = &ra.outputs[o], *y = ref_result_find(&rb, x->name);
            CHECK(y != NULL, "%s: output '%s' missing after the pass", what, x->name);
            if (!y) continue;
            int same_shape = x->ndim == y->ndim;
            for (int dd = 0; same_shape && dd < x->ndim; dd++) same_shape = x->shape[dd] == y->shape[dd];
            CHECK(same_shape, "%s: output '%s' changed shape", what, x->name);
            if (!same_shape) continue;
            int64_t n = 1;
            for (int dd = 0; dd < x->ndim; dd++) n *= x->shape[dd];
            if (memcmp(x->data, y->data, (size_t)n * sizeof *x->data) != 0) {
                double scale = golden_max_abs(x->data, (size_t)n);
                double diff = golden_max_abs_diff(x->data, y->data, (size_t)n);
                CHECK(0, "%s: output '%s' (len %lld) differs: max |diff| %.3g, relative %.3g (expected bit-identical)",
                      what, x->name, (long long)q.r.len, diff, scale > 0 ? diff / scale : diff);
            }
        }
        ref_result_free(&ra);
        ref_result_free(&rb);
    }
}

/* ---- a generated BERT ------------------------------------------------------ */

typedef struct tp_bert {
    int H, NH, HD, I, layers, vocab, maxpos;
    int types;           /* token-type table rows; 0: no token types at all */
    int mask, scale;     /* the mask and scale ops are present */
    int pooler;
    const char *act;     /* gelu, gelu_tanh, relu, tanh */
    int swap;            /* write adds with their operands swapped */
    int late_scale;      /* scale after mask (a chain fuse_attention must refuse) */
    float eps;
} tp_bert;

static tp_bert tp_bert_random(void) {
    tp_bert b;
    b.NH = (int)check_rng_range(1, 4);
    b.HD = (int)check_rng_range(2, 9);
    b.H = b.NH * b.HD;
    b.I = (int)check_rng_range(b.H, 3 * b.H);
    b.layers = (int)check_rng_range(1, 2);
    b.vocab = (int)check_rng_range(20, 90);
    b.maxpos = (int)check_rng_range(6, 24);
    b.types = (int)check_rng_range(1, 3);
    b.mask = b.scale = b.pooler = 1;
    static const char *const acts[4] = {"gelu", "gelu_tanh", "relu", "tanh"};
    b.act = acts[check_rng_range(0, 3)];
    b.swap = (int)check_rng_range(0, 1);
    b.late_scale = 0;
    b.eps = check_rng_uniform() < 0.5 ? 1e-12f : 1e-5f;
    return b;
}

/* 1/sqrt(head_dim) as float; printed with 9 digits it reads back exactly. */
static float tp_scale_of(int hd) { return (float)(1.0 / sqrt((double)hd)); }

/* The YAML of b (weights path left as "%s") and its weights. */
static char *tp_bert_yaml(const tp_bert *b, stimage *w) {
    tbuf y = {0};
    int H = b->H, I = b->I;
    tbuf_printf(&y, "bertc: 1\nname: gen\nweights: \"%%s\"\nmax_seq_len: %d\n", b->maxpos);
    tbuf_printf(&y, "dims: {H: %d, NH: %d, HD: %d}\n", H, b->NH, b->HD);
    tbuf_printf(&y, "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n");
    if (b->types) tbuf_printf(&y, "  token_type_ids: {dtype: int32, shape: [S], default: 0}\n");
    if (b->mask) tbuf_printf(&y, "  attention_mask: {dtype: int32, shape: [S], default: 1}\n");
    tbuf_printf(&y, "outputs:\n  last_hidden_state: h%d\n", b->layers);
    if (b->pooler) tbuf_printf(&y, "  pooler_output: pooled\n");
    tbuf_printf(&y, "graph:\n");
    tbuf_printf(&y, "  - {op: arange, out: position_ids, like: input_ids}\n");
    tbuf_printf(&y, "  - {op: gather, out: word, table: emb.word, index: input_ids}\n");
    tbuf_printf(&y, "  - {op: gather, out: pos, table: emb.pos, index: position_ids}\n");
    /* float32 word and position tables, so the embedding sum rounds. */
    tp_add(w, "emb.word", IR_DTYPE_F32, 2, b->vocab, H, 1.0f, 0.0f);
    tp_add(w, "emb.pos", IR_DTYPE_F32, 2, b->maxpos, H, 0.5f, 0.0f);
    const char *sum = "emb_sum0";
    tbuf_printf(&y, "  - {op: add, out: emb_sum0, a: %s, b: %s}\n", b->swap ? "pos" : "word", b->swap ? "word" : "pos");
    if (b->types) {
        tbuf_printf(&y, "  - {op: gather, out: type, table: emb.type, index: token_type_ids}\n");
        tbuf_printf(&y, "  - {op: add, out: emb_sum, a: %s, b: %s}\n", b->swap ? "type" : "emb_sum0",
                  b->swap ? "emb_sum0" : "type");
        tp_add(w, "emb.type", tp_rand_dtype(), 2, b->types, H, 0.5f, 0.0f);
        sum = "emb_sum";
    }
    tbuf_printf(&y, "  - {op: layer_norm, out: h0, x: %s, gamma: emb.ln.g, beta: emb.ln.b, eps: %g}\n", sum,
              (double)b->eps);
    tp_add(w, "emb.ln.g", tp_rand_dtype(), 1, H, 0, 0.2f, 1.0f);
    tp_add(w, "emb.ln.b", tp_rand_dtype(), 1, H, 0, 0.2f, 0.0f);
    tbuf_printf(&y, "  - repeat: %d\n    ops:\n", b->layers);
    const char *qkv[3] = {"q", "k", "v"};
    for (int p = 0; p < 3; p++) {
        tbuf_printf(&y, "      - {op: matmul, out: %s_mm, x: \"h{i}\", weight: \"l{i}.%s.w\"}\n", qkv[p], qkv[p]);
        tbuf_printf(&y, "      - {op: bias_add, out: %s, x: %s_mm, bias: \"l{i}.%s.b\"}\n", qkv[p], qkv[p], qkv[p]);
        tbuf_printf(&y, "      - {op: reshape, out: %s_r, x: %s, shape: [S, NH, HD]}\n", qkv[p], qkv[p]);
        tbuf_printf(&y, "      - {op: transpose, out: %s_h, x: %s_r, perm: [1, 0, 2]}\n", qkv[p], qkv[p]);
    }
    tbuf_printf(&y, "      - {op: batched_matmul, out: scores, a: q_h, b: k_h, transpose_b: true}\n");
    const char *sc = "scores";
    if (b->scale && !b->late_scale) {
        tbuf_printf(&y, "      - {op: scale, out: scores_s, x: scores, by: %.9g}\n", (double)tp_scale_of(b->HD));
        sc = "scores_s";
    }
    if (b->mask) {
        tbuf_printf(&y, "      - {op: mask, out: scores_m, x: %s, mask: attention_mask}\n", sc);
        sc = "scores_m";
    }
    if (b->scale && b->late_scale) {
        tbuf_printf(&y, "      - {op: scale, out: scores_s, x: %s, by: %.9g}\n", sc, (double)tp_scale_of(b->HD));
        sc = "scores_s";
    }
    tbuf_printf(&y, "      - {op: softmax, out: probs, x: %s}\n", sc);
    tbuf_printf(&y, "      - {op: batched_matmul, out: ctx_h, a: probs, b: v_h}\n");
    tbuf_printf(&y, "      - {op: transpose, out: ctx_t, x: ctx_h, perm: [1, 0, 2]}\n");
    tbuf_printf(&y, "      - {op: reshape, out: ctx, x: ctx_t, shape: [S, H]}\n");
    tbuf_printf(&y, "      - {op: matmul, out: ao_mm, x: ctx, weight: \"l{i}.o.w\"}\n");
    tbuf_printf(&y, "      - {op: bias_add, out: ao, x: ao_mm, bias: \"l{i}.o.b\"}\n");
    tbuf_printf(&y, "      - {op: add, out: ao_res, a: %s, b: %s}\n", b->swap ? "\"h{i}\"" : "ao",
              b->swap ? "ao" : "\"h{i}\"");
    tbuf_printf(&y, "      - {op: layer_norm, out: attn_out, x: ao_res, gamma: \"l{i}.ln1.g\", beta: \"l{i}.ln1.b\", eps: %g}\n",
              (double)b->eps);
    tbuf_printf(&y, "      - {op: matmul, out: fc1_mm, x: attn_out, weight: \"l{i}.fc1.w\"}\n");
    tbuf_printf(&y, "      - {op: bias_add, out: fc1_b, x: fc1_mm, bias: \"l{i}.fc1.b\"}\n");
    tbuf_printf(&y, "      - {op: activation, out: inter, x: fc1_b, fn: %s}\n", b->act);
    tbuf_printf(&y, "      - {op: matmul, out: fc2_mm, x: inter, weight: \"l{i}.fc2.w\"}\n");
    tbuf_printf(&y, "      - {op: bias_add, out: fc2_b, x: fc2_mm, bias: \"l{i}.fc2.b\"}\n");
    tbuf_printf(&y, "      - {op: add, out: out_res, a: %s, b: %s}\n", b->swap ? "attn_out" : "fc2_b",
              b->swap ? "fc2_b" : "attn_out");
    tbuf_printf(&y, "      - {op: layer_norm, out: \"h{i+1}\", x: out_res, gamma: \"l{i}.ln2.g\", beta: \"l{i}.ln2.b\", eps: %g}\n",
              (double)b->eps);
    float wamp = (float)(1.5 / sqrt((double)H));
    for (int l = 0; l < b->layers; l++) {
        char n[64];
#define TP_W(fmt, nd, d0, d1, amp, off)                        \
    do {                                                       \
        snprintf(n, sizeof n, fmt, l);                         \
        tp_add(w, n, tp_rand_dtype(), nd, d0, d1, amp, off);   \
    } while (0)
        for (int p = 0; p < 3; p++) {
            char f[32];
            snprintf(f, sizeof f, "l%%d.%s.w", qkv[p]);
            TP_W(f, 2, H, H, wamp * 2.0f, 0.0f);
            snprintf(f, sizeof f, "l%%d.%s.b", qkv[p]);
            TP_W(f, 1, H, 0, 0.3f, 0.0f);
        }
        TP_W("l%d.o.w", 2, H, H, wamp, 0.0f);
        TP_W("l%d.o.b", 1, H, 0, 0.3f, 0.0f);
        TP_W("l%d.ln1.g", 1, H, 0, 0.2f, 1.0f);
        TP_W("l%d.ln1.b", 1, H, 0, 0.2f, 0.0f);
        TP_W("l%d.fc1.w", 2, I, H, wamp, 0.0f);
        TP_W("l%d.fc1.b", 1, I, 0, 0.3f, 0.0f);
        TP_W("l%d.fc2.w", 2, H, I, (float)(1.5 / sqrt((double)I)), 0.0f);
        TP_W("l%d.fc2.b", 1, H, 0, 0.3f, 0.0f);
        TP_W("l%d.ln2.g", 1, H, 0, 0.2f, 1.0f);
        TP_W("l%d.ln2.b", 1, H, 0, 0.2f, 0.0f);
#undef TP_W
    }
    if (b->pooler) {
        tbuf_printf(&y, "  - {op: slice, out: cls, x: h%d, axis: 0, start: 0, len: 1}\n", b->layers);
        tbuf_printf(&y, "  - {op: matmul, out: pool_mm, x: cls, weight: pool.w}\n");
        tbuf_printf(&y, "  - {op: bias_add, out: pool_b, x: pool_mm, bias: pool.b}\n");
        tbuf_printf(&y, "  - {op: activation, out: pool_t, x: pool_b, fn: tanh}\n");
        tbuf_printf(&y, "  - {op: reshape, out: pooled, x: pool_t, shape: [H]}\n");
        tp_add(w, "pool.w", tp_rand_dtype(), 2, H, H, wamp, 0.0f);
        tp_add(w, "pool.b", tp_rand_dtype(), 1, H, 0, 0.3f, 0.0f);
    }
    return y.p;
}

static int tp_bert_load(tp_model *t, const tp_bert *b) {
    stimage w = {0};
    char *yaml = tp_bert_yaml(b, &w);
    int rc = tp_load(t, yaml, &w, b->vocab, b->types, b->mask);
    free(yaml);
    return rc;
}

/* ---- pipeline structure ---------------------------------------------------- */

/* What the whole pipeline must leave of a BERT-shaped graph. */
typedef struct tp_expect {
    int layers, hidden, heads, head_dim;
    int ngathers;        /* EMBED_LN's gathers */
    int mask;            /* ATTENTION reads the mask */
    float scale;         /* ATTENTION's scale */
    ir_act act;          /* the intermediate activation */
    int pooler;
    int head;            /* BERT's sequence classification: a linear on the pooler's row, then [labels] */
    int sentence;        /* a sentence-transformers head: mean pool + l2_normalize, fused */
} tp_expect;

/* The compute ops of g in order (leaves left out). */
static int tp_ops(const ir_graph *g, int *ops, int cap, int *node) {
    int n = 0;
    for (int i = 0; i < g->count && n < cap; i++) {
        ir_op op = g->nodes[i].op;
        if (op == IR_OP_INPUT || op == IR_OP_WEIGHT || op == IR_OP_CONST) continue;
        node[n] = i;
        ops[n++] = (int)op;
    }
    return n;
}

static void tp_check_pipeline_shape(const char *what, const ir_graph *g, const tp_expect *e) {
    int ops[512], node[512];
    int n = tp_ops(g, ops, 512, node);
    int want[512], nw = 0;
    want[nw++] = IR_OP_ARANGE;
    want[nw++] = IR_OP_EMBED_LN;
    static const int layer[7] = {IR_OP_LINEAR, IR_OP_ATTENTION, IR_OP_LINEAR, IR_OP_ADD_LN,
                                 IR_OP_LINEAR, IR_OP_LINEAR, IR_OP_ADD_LN};
    for (int l = 0; l < e->layers; l++)
        for (int k = 0; k < 7; k++) want[nw++] = layer[k];
    if (e->pooler) {
        want[nw++] = IR_OP_SLICE;
        want[nw++] = IR_OP_LINEAR;
        want[nw++] = IR_OP_RESHAPE;
    }
    if (e->head) {
        want[nw++] = IR_OP_LINEAR;
        want[nw++] = IR_OP_RESHAPE;
    }
    if (e->sentence) want[nw++] = IR_OP_POOL;
    int same = n == nw;
    for (int k = 0; same && k < n; k++) same = ops[k] == want[k];
    if (!same) {
        char got[4096] = "";
        size_t len = 0;
        for (int k = 0; k < n && len < sizeof got - 32; k++)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s ", ir_op_name((ir_op)ops[k]));
        CHECK(0, "%s: op sequence after the passes is: %s", what, got);
        return;
    }
    if (e->sentence) {
        const ir_node *pool = &g->nodes[node[nw - 1]];
        CHECK(pool->pool_mode == IR_POOL_MEAN && pool->normalize && pool->nsrc == 2 &&
                  pool->src[0] == node[1 + 7 * e->layers] && strcmp(tp_src(g, pool, 1), "attention_mask") == 0 &&
                  tp_count(g, IR_OP_L2_NORMALIZE) == 0,
              "%s: the sentence head is not one normalising mean pool over the last layer", what);
    }
    /* Only compile-time leaves and the request remain besides these. */
    CHECK(tp_count(g, IR_OP_CONCAT) == 0 && tp_count(g, IR_OP_MATMUL) == 0, "%s: leftovers", what);
    const ir_node *emb = &g->nodes[node[1]];
    CHECK(emb->ngathers == e->ngathers, "%s: embed_ln has %d gathers, expected %d", what, emb->ngathers,
          e->ngathers);
    int has_ids = 0, has_pos = 0, has_types = 0;
    for (int k = 0; k < emb->ngathers && k < IR_MAX_GATHERS; k++) {
        const ir_node *ix = &g->nodes[emb->src[3 + 2 * k]];
        has_ids += strcmp(ix->name, "input_ids") == 0;
        has_pos += ix->op == IR_OP_ARANGE;
        has_types += strcmp(ix->name, "token_type_ids") == 0;
    }
    CHECK(has_ids == 1 && has_pos == 1 && has_types == (e->ngathers == 3), "%s: embed_ln indices", what);
    int prev = node[1];
    for (int l = 0; l < e->layers; l++) {
        const int *L = node + 2 + 7 * l;
        const ir_node *qkv = &g->nodes[L[0]], *at = &g->nodes[L[1]], *o = &g->nodes[L[2]];
        const ir_node *ln1 = &g->nodes[L[3]], *fc1 = &g->nodes[L[4]], *fc2 = &g->nodes[L[5]];
        const ir_node *ln2 = &g->nodes[L[6]];
        int H = e->hidden;
        CHECK(qkv->src[0] == prev && qkv->has_bias && !qkv->has_act && !qkv->has_residual &&
                  qkv->shape[1] == 3 * H && g->nodes[qkv->src[1]].op == IR_OP_CONST &&
                  g->nodes[qkv->src[2]].op == IR_OP_CONST,
              "%s: layer %d qkv linear", what, l);
        CHECK(at->src[0] == L[0] && at->src[1] == L[0] && at->src[2] == L[0] && at->q_off == 0 &&
                  at->k_off == H && at->v_off == 2 * H && at->heads == e->heads &&
                  at->head_dim == e->head_dim && at->scale == e->scale && (at->nsrc == 4) == !!e->mask,
              "%s: layer %d attention: heads %d head_dim %d scale %g offsets %d %d %d nsrc %d", what, l,
              at->heads, at->head_dim, (double)at->scale, at->q_off, at->k_off, at->v_off, at->nsrc);
        if (e->mask && at->nsrc == 4)
            CHECK(strcmp(tp_src(g, at, 3), "attention_mask") == 0, "%s: mask source", what);
        CHECK(o->src[0] == L[1] && o->has_bias && !o->has_act && !o->has_residual, "%s: layer %d output linear", what, l);
        CHECK(ln1->src[0] == L[2] && ln1->has_residual && !ln1->has_bias && ln1->src[3] == prev,
              "%s: layer %d add_ln 1", what, l);
        CHECK(fc1->src[0] == L[3] && fc1->has_bias && fc1->has_act && fc1->act == e->act && !fc1->has_residual,
              "%s: layer %d fc1 (act %s, expected %s)", what, l, ir_act_name(fc1->act), ir_act_name(e->act));
        CHECK(fc2->src[0] == L[4] && fc2->has_bias && !fc2->has_act && !fc2->has_residual, "%s: layer %d fc2", what, l);
        CHECK(ln2->src[0] == L[5] && ln2->has_residual && !ln2->has_bias && ln2->src[3] == L[3],
              "%s: layer %d add_ln 2", what, l);
        prev = L[6];
    }
    if (e->pooler) {
        int end = nw - !!e->sentence - 2 * !!e->head;
        const ir_node *sl = &g->nodes[node[end - 3]], *lin = &g->nodes[node[end - 2]];
        CHECK(sl->src[0] == prev && sl->axis == 0 && sl->start == 0 && sl->len == 1, "%s: pooler slice", what);
        CHECK(lin->has_bias && lin->has_act && lin->act == IR_ACT_TANH && !lin->has_residual, "%s: pooler linear", what);
        if (e->head) { /* the classifier reads the pooler's [1, H] row: one more GEMM, nothing else */
            const ir_node *cl = &g->nodes[node[end]];
            CHECK(cl->src[0] == node[end - 2] && cl->has_bias && !cl->has_act && !cl->has_residual,
                  "%s: classifier linear", what);
        }
    }
}

/* ======================================================================= */
/* IR: the fused ops themselves                                             */
/* ======================================================================= */

static void tp_expect_infer_error(ir_graph *g, const char *needle) {
    diag d;
    diag_init(&d);
    int rc = ir_graph_infer(g, "fused.yaml", NULL, 0, &d);
    CHECK(rc != 0, "infer accepted a graph that should fail with '%s'", needle);
    CHECK(rc == 0 || strstr(d.text, needle), "'%s' lacks '%s'", d.text, needle);
}

/* Shapes of valid fused nodes, and one broken rule per op. */
static void test_ir_fused_infer(void) {
    int64_t K = check_rng_range(1, 20), N = check_rng_range(1, 20);
    int heads = (int)check_rng_range(1, 4), hd = (int)check_rng_range(1, 8), extra = (int)check_rng_range(0, 5);
    int64_t cols = (int64_t)heads * hd * 3 + extra, V = check_rng_range(2, 30);
    for (int bad = -1; bad < 6; bad++) {
        tgraph tg;
        tgraph_init(&tg);
        int ids = tgraph_input(&tg, "input_ids");
        int tab = tgraph_weight(&tg, "tab", IR_DTYPE_F16, 2, V, K);
        int gam = tgraph_const(&tg, "gamma", IR_DTYPE_F32, 1, bad == 0 ? K + 1 : K, 0);
        int bet = tgraph_weight(&tg, "beta", IR_DTYPE_F32, 1, K, 0);
        int emb = tgraph_op(&tg, IR_OP_EMBED_LN, "emb", gam, bet, tab, ids);
        tg.g.nodes[emb].ngathers = 1;
        tg.g.nodes[emb].eps = 1e-5f;
        int w = tgraph_weight(&tg, "w", IR_DTYPE_BF16, 2, N, K);
        int b = tgraph_const(&tg, "b", IR_DTYPE_F32, 1, bad == 1 ? N + 1 : N, 0);
        int lin = tgraph_op(&tg, IR_OP_LINEAR, "lin", emb, w, b);
        tg.g.nodes[lin].has_bias = 1;
        tg.g.nodes[lin].has_act = 1;
        tg.g.nodes[lin].act = IR_ACT_RELU;
        int w2 = tgraph_weight(&tg, "w2", IR_DTYPE_F32, 2, cols, K);
        int w3 = tgraph_weight(&tg, "w3", IR_DTYPE_F32, 2, 1, bad == 3 ? K + 1 : K);
        int cat = tgraph_op(&tg, IR_OP_CONCAT, "cat", w2, w3);
        int qkv = tgraph_op(&tg, IR_OP_LINEAR, "qkv", emb, cat);
        int am = tgraph_input(&tg, "attention_mask");
        int at = tgraph_op(&tg, IR_OP_ATTENTION, "att", qkv, qkv, qkv, am);
        ir_node *a = &tg.g.nodes[at];
        a->heads = heads;
        a->head_dim = hd;
        a->scale = 0.5f;
        a->q_off = 0;
        a->k_off = heads * hd;
        a->v_off = 2 * heads * hd + extra + (bad == 2 ? 2 : 1);  /* qkv has cols + 1 columns */
        int g2 = tgraph_weight(&tg, "g2", IR_DTYPE_F32, 1, heads * hd, 0);
        int res = tgraph_op(&tg, IR_OP_SLICE, "res", qkv);
        tg.g.nodes[res].axis = 1;
        tg.g.nodes[res].start = 0;
        tg.g.nodes[res].len = heads * hd + (bad == 4);
        int ln = tgraph_op(&tg, IR_OP_ADD_LN, "ln", at, g2, g2, res, g2);
        tg.g.nodes[ln].has_residual = tg.g.nodes[ln].has_bias = 1;
        tg.g.nodes[ln].eps = bad == 5 ? 0.0f : 1e-6f;
        ir_graph_add_output(&tg.g, "y", ln);
        ir_graph_add_output(&tg.g, "lin", lin);
        switch (bad) {
        case -1: {
            diag d;
            diag_init(&d);
            int rc = ir_graph_infer(&tg.g, "fused.yaml", NULL, 0, &d);
            CHECK(rc == 0, "valid fused graph refused: %s", d.text);
            if (rc) break;
            CHECK(tg.g.nodes[emb].ndim == 2 && tg.g.nodes[emb].shape[0] == S && tg.g.nodes[emb].shape[1] == K, "embed_ln shape");
            CHECK(tg.g.nodes[lin].shape[0] == S && tg.g.nodes[lin].shape[1] == N && tg.g.nodes[lin].dtype == IR_DTYPE_F32,
                  "linear shape");
            CHECK(tg.g.nodes[cat].shape[0] == cols + 1 && tg.g.nodes[cat].shape[1] == K, "concat shape");
            CHECK(tg.g.nodes[at].shape[0] == S && tg.g.nodes[at].shape[1] == heads * hd, "attention shape");
            CHECK(tg.g.nodes[ln].shape[0] == S && tg.g.nodes[ln].shape[1] == heads * hd, "add_ln shape");
            break;
        }
        case 0: tp_expect_infer_error(&tg.g, "embed_ln 'emb': beta 'beta'"); break;
        case 1: tp_expect_infer_error(&tg.g, "linear 'lin': bias 'b'"); break;
        case 2: tp_expect_infer_error(&tg.g, "attention 'att': v 'qkv'"); break;
        case 3: tp_expect_infer_error(&tg.g, "concat 'cat': part 'w3'"); break;
        case 4: tp_expect_infer_error(&tg.g, "add_ln 'ln': residual 'res'"); break;
        case 5: tp_expect_infer_error(&tg.g, "add_ln 'ln': eps"); break;
        }
        tgraph_free(&tg);
    }
    /* A CONST with no values, and an EMBED_LN with no gathers. */
    tgraph tg;
    tgraph_init(&tg);
    int c = tgraph_const(&tg, "c", IR_DTYPE_F32, 1, 4, 0);
    free(tg.g.nodes[c].data);
    tg.g.nodes[c].data = NULL;
    tp_expect_infer_error(&tg.g, "const 'c': has no values");
    tgraph_free(&tg);
    tgraph_init(&tg);
    int gm = tgraph_weight(&tg, "g", IR_DTYPE_F32, 1, 4, 0);
    int e = tgraph_op(&tg, IR_OP_EMBED_LN, "e", gm, gm);
    tg.g.nodes[e].eps = 1e-5f;
    tp_expect_infer_error(&tg.g, "embed_ln 'e': has 0 gathers");
    tgraph_free(&tg);
}

/* fuse_pool_normalize: l2_normalize(pool) becomes one POOL with normalize
 * set; a pool read elsewhere or an output stays, and so does its normalize. */
static void test_fuse_pool_normalize(void) {
    for (int v = 0; v < 3; v++) {
        tgraph tg;
        tgraph_init(&tg);
        int x = tgraph_weight(&tg, "x", IR_DTYPE_F32, 2, 4, 6);
        int am = tgraph_input(&tg, "attention_mask");
        /* x must be [S, H]: a gather by ids stands in for the encoder */
        int ids = tgraph_input(&tg, "input_ids");
        int h = tgraph_op(&tg, IR_OP_GATHER, "h", x, ids);
        int p = tgraph_op(&tg, IR_OP_POOL, "p", h, am);
        tg.g.nodes[p].pool_mode = IR_POOL_MEAN;
        int n = tgraph_op(&tg, IR_OP_L2_NORMALIZE, "sentence_embedding", p);
        ir_graph_add_output(&tg.g, "sentence_embedding", n);
        if (v == 1) ir_graph_add_output(&tg.g, "pooled", p);           /* shared: not fused */
        if (v == 2) tgraph_op(&tg, IR_OP_L2_NORMALIZE, "again", n);   /* a chain: only the first fuses */
        diag d;
        diag_init(&d);
        CHECK(ir_graph_infer(&tg.g, "t.yaml", NULL, 0, &d) == 0, "infer: %s", d.text);
        CHECK(tp_pass("fuse_pool_normalize", &tg.g, NULL, &d) == 0, "pass: %s", d.text);
        const ir_node *se = tp_node(&tg.g, "sentence_embedding");
        if (v == 1) {
            CHECK(se && se->op == IR_OP_L2_NORMALIZE && tp_count(&tg.g, IR_OP_POOL) == 1, "shared pool fused");
        } else {
            CHECK(se && se->op == IR_OP_POOL && se->normalize && se->pool_mode == IR_POOL_MEAN && se->nsrc == 2 &&
                      strcmp(tp_src(&tg.g, se, 0), "h") == 0 && strcmp(tp_src(&tg.g, se, 1), "attention_mask") == 0,
                  "variant %d: not one normalising pool", v);
            CHECK(ir_graph_find(&tg.g, "p") < 0 && tp_count(&tg.g, IR_OP_POOL) == 1, "variant %d: the pool remains", v);
            CHECK(tp_count(&tg.g, IR_OP_L2_NORMALIZE) == (v == 2), "variant %d: l2_normalize count", v);
        }
        tgraph_free(&tg);
    }
}

/* ======================================================================= */
/* fixtures                                                                 */
/* ======================================================================= */

typedef struct tp_fixture {
    const char *name;
    int types;      /* token types in the table */
    int64_t vocab;
} tp_fixture;

static const tp_fixture tp_fixtures[] = {
    {"tiny-bert", 2, 1000},     {"tiny-bert-prefixed", 2, 1000}, {"tiny-bert-relu", 1, 500},
    {"tiny-bert-tanh", 3, 700}, {"all-MiniLM-L6-v2", 2, 30522},
};

static int tp_fixture_load(tp_model *t, const tp_fixture *f) {
    char hf[512], yaml[600];
    memset(t, 0, sizeof *t);
    snprintf(hf, sizeof hf, "%s/hf/%s", check_build_dir(), f->name);
    snprintf(yaml, sizeof yaml, "%s/test-passes-%d-%s.yaml", check_build_dir(), (int)getpid(), f->name);
    diag d;
    diag_init(&d);
    int rc = hf_import_run(hf, yaml, &d);
    CHECK(rc == 0, "import %s: %s", hf, d.text);
    if (!rc) {
        rc = model_load(&t->m, yaml, &d);
        CHECK(rc == 0, "load %s: %s", yaml, d.text);
    }
    unlink(yaml);
    t->w = &t->m.weights;
    t->max_len = t->m.graph.max_seq_len;
    t->vocab = f->vocab;
    t->types = f->types;
    t->mask = 1;
    return rc;
}

/* Cloned, dumped, freed: the copy is deep and dumps the new ops' params. */
static void test_ir_clone_and_dump(void) {
    tp_model t;
    if (tp_fixture_load(&t, &tp_fixtures[0])) return;
    ir_graph a, b;
    diag d;
    diag_init(&d);
    int rc = ir_graph_clone(&a, &t.m.graph);
    CHECK(rc == 0, "clone");
    if (!rc) rc = passes_run(&a, &t.m.weights, NULL, &d);
    CHECK(rc == 0, "passes_run: %s", d.text);
    if (!rc && !(rc = ir_graph_clone(&b, &a))) {
        char *ta = NULL, *tb = NULL;
        size_t la = 0, lb = 0;
        FILE *fa = open_memstream(&ta, &la), *fb = open_memstream(&tb, &lb);
        ir_graph_dump(&a, fa);
        fclose(fa);
        const ir_node *c = tp_nth(&a, IR_OP_CONST, 0);
        int ci = c ? (int)(c - a.nodes) : -1;
        CHECK(ci >= 0 && b.nodes[ci].data != a.nodes[ci].data &&
                  memcmp(b.nodes[ci].data, a.nodes[ci].data, (size_t)ir_node_numel(c, 1) * 4) == 0,
              "const data is copied");
        ir_graph_free(&a);  /* the clone must not share anything with it */
        ir_graph_dump(&b, fb);
        fclose(fb);
        CHECK(la == lb && memcmp(ta, tb, la) == 0, "the clone dumps differently");
        const char *needles[] = {
            "= linear(h0, layer0/q+k+v.weight, layer0/q+k+v.bias) float32 [S, 288] bias=yes residual=no act=none",
            "= attention(layer0/q+k+v, layer0/q+k+v, layer0/q+k+v, attention_mask) float32 [S, 96] heads=6 head_dim=16 scale=0.25 q_off=0 k_off=96 v_off=192 mask=yes",
            "act=gelu",
            "residual=yes",
            "h0 = embed_ln(embeddings.LayerNorm.weight, embeddings.LayerNorm.bias, embeddings.word_embeddings.weight, input_ids",
            "eps=1e-12 gathers=3",
            "layer0/q+k+v.weight = const() float32 [288, 96] values=27648",
        };
        for (size_t k = 0; k < sizeof needles / sizeof needles[0]; k++)
            CHECK(tb && strstr(tb, needles[k]), "dump lacks '%s'", needles[k]);
        free(ta);
        free(tb);
        ir_graph_free(&b);
    } else if (!rc) {
        ir_graph_free(&a);
    }
    tp_free(&t);
}

/* ======================================================================= */
/* pass_dce                                                                 */
/* ======================================================================= */

static void test_dce(void) {
    int64_t V = check_rng_range(5, 50), D = check_rng_range(2, 20), N = check_rng_range(1, 9);
    stimage w = {0};
    tp_add(&w, "emb", tp_rand_dtype(), 2, V, D, 1.0f, 0.0f);
    tp_add(&w, "w", tp_rand_dtype(), 2, N, D, 1.0f, 0.0f);
    tp_add(&w, "w_dead", tp_rand_dtype(), 2, N, D, 1.0f, 0.0f);
    tp_add(&w, "never_read", tp_rand_dtype(), 1, D, 0, 1.0f, 0.0f);
    tp_add(&w, "g", tp_rand_dtype(), 1, D, 0, 0.2f, 1.0f);
    tp_add(&w, "b", tp_rand_dtype(), 1, D, 0, 0.2f, 0.0f);
    static const char *yaml =
        "bertc: 1\nname: dce\nweights: \"%s\"\nmax_seq_len: 12\n"
        "inputs:\n"
        "  input_ids: {dtype: int32, shape: [S]}\n"
        "  token_type_ids: {dtype: int32, shape: [S], default: 0}\n"
        "  attention_mask: {dtype: int32, shape: [S], default: 1}\n"
        "outputs:\n  y: y\n  ids: input_ids\n"
        "graph:\n"
        "  - {op: gather, out: e, table: emb, index: input_ids}\n"
        "  - {op: gather, out: e_dead, table: emb, index: token_type_ids}\n"
        "  - {op: matmul, out: dead_mm, x: e_dead, weight: w_dead}\n"
        "  - {op: activation, out: dead_act, x: dead_mm, fn: relu}\n"
        "  - {op: layer_norm, out: n, x: e, gamma: g, beta: b, eps: 1e-5}\n"
        "  - {op: matmul, out: y, x: n, weight: w}\n";
    tp_model t;
    int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "dce");
    ir_graph *g = &t.g;
    if (rc == 0) {
        const ir_graph *o = &t.m.graph;
        CHECK(o->count == 14, "original has %d nodes", o->count);
        CHECK(g->count == 10, "dce left %d nodes, expected 10", g->count);
        CHECK(ir_graph_find(g, "e_dead") < 0 && ir_graph_find(g, "dead_mm") < 0 &&
                  ir_graph_find(g, "dead_act") < 0 && ir_graph_find(g, "w_dead") < 0,
              "dead nodes remain");
        const ir_node *tt = tp_node(g, "token_type_ids"), *am = tp_node(g, "attention_mask");
        const ir_node *ids = tp_node(g, "input_ids");
        CHECK(tt && tt->op == IR_OP_INPUT && tt->unused, "token_type_ids kept and flagged unused");
        CHECK(am && am->op == IR_OP_INPUT && am->unused && am->optional, "attention_mask kept and flagged");
        CHECK(ids && !ids->unused, "input_ids is used");
        CHECK(g->noutputs == 2 && strcmp(g->nodes[g->outputs[1].node].name, "input_ids") == 0 &&
                  strcmp(g->nodes[g->outputs[0].node].name, "y") == 0,
              "outputs remapped");
        t.mask = 1;  /* requests may carry inputs the graph ignores */
        tp_check_same("dce", &t, o, g, 4);
        /* A second run changes nothing. */
        ir_graph g2;
        if (ir_graph_clone(&g2, g) == 0) {
            diag d;
            diag_init(&d);
            CHECK(tp_pass("dce", &g2, NULL, &d) == 0 && g2.count == g->count, "dce is not idempotent");
            ir_graph_free(&g2);
        }
    }
    tp_free(&t);
}

/* ======================================================================= */
/* pass_fuse_linear                                                         */
/* ======================================================================= */

/* x -> matmul -> bias_add -> [add(residual)] -> activation, as the output;
 * `ln_after` puts the add under a layer_norm instead (not a residual then). */
static const char *tp_linear_yaml =
    "bertc: 1\nname: lin\nweights: \"%s\"\nmax_seq_len: 10\n"
    "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
    "outputs:\n  y: y\n  z: z\n"
    "graph:\n"
    "  - {op: gather, out: x, table: emb, index: input_ids}\n"
    "  - {op: gather, out: r, table: emb2, index: input_ids}\n"
    /* chain 1: bias + act */
    "  - {op: matmul, out: a_mm, x: x, weight: wa}\n"
    "  - {op: bias_add, out: a_b, x: a_mm, bias: ba}\n"
    "  - {op: activation, out: a, x: a_b, fn: %s}\n"
    /* chain 2: bias + residual (either operand order) + act */
    "  - {op: matmul, out: b_mm, x: a, weight: wb}\n"
    "  - {op: bias_add, out: b_b, x: b_mm, bias: bb}\n"
    "  - {op: add, out: b_r, a: %s, b: %s}\n"
    "  - {op: activation, out: y, x: b_r, fn: %s}\n"
    /* chain 3: residual add that only feeds a layer_norm: not absorbed */
    "  - {op: matmul, out: c_mm, x: x, weight: wc}\n"
    "  - {op: bias_add, out: c_b, x: c_mm, bias: bc}\n"
    "  - {op: add, out: c_r, a: c_b, b: r}\n"
    "  - {op: layer_norm, out: z, x: c_r, gamma: g, beta: be, eps: 1e-6}\n";

static void test_fuse_linear_epilogues(void) {
    static const char *const acts[4] = {"gelu", "gelu_tanh", "relu", "tanh"};
    static const ir_act act_ids[4] = {IR_ACT_GELU_ERF, IR_ACT_GELU_TANH, IR_ACT_RELU, IR_ACT_TANH};
    for (int round = 0; round < 3; round++) {
        int a1 = (int)check_rng_range(0, 3), a2 = (int)check_rng_range(0, 3), swap = round % 2;
        int64_t V = check_rng_range(3, 40), K = check_rng_range(1, 24), N = check_rng_range(1, 24);
        stimage w = {0};
        tp_add(&w, "emb", tp_rand_dtype(), 2, V, K, 1.0f, 0.0f);
        tp_add(&w, "emb2", IR_DTYPE_F32, 2, V, N, 1.0f, 0.0f);
        tp_add(&w, "wa", tp_rand_dtype(), 2, N, K, 1.0f, 0.0f);
        tp_add(&w, "ba", tp_rand_dtype(), 1, N, 0, 1.0f, 0.0f);
        tp_add(&w, "wb", tp_rand_dtype(), 2, N, N, 1.0f, 0.0f);
        tp_add(&w, "bb", tp_rand_dtype(), 1, N, 0, 1.0f, 0.0f);
        tp_add(&w, "wc", tp_rand_dtype(), 2, N, K, 1.0f, 0.0f);
        tp_add(&w, "bc", tp_rand_dtype(), 1, N, 0, 1.0f, 0.0f);
        tp_add(&w, "g", tp_rand_dtype(), 1, N, 0, 0.2f, 1.0f);
        tp_add(&w, "be", tp_rand_dtype(), 1, N, 0, 0.2f, 0.0f);
        char *yaml = tbuf_format(tp_linear_yaml, "%s", acts[a1], swap ? "r" : "b_b", swap ? "b_b" : "r", acts[a2]);
        tp_model t;
        int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "fuse_linear");
        free(yaml);
        ir_graph *g = &t.g;
        if (rc == 0) {
            CHECK(tp_count(g, IR_OP_MATMUL) == 0 && tp_count(g, IR_OP_BIAS_ADD) == 0 &&
                      tp_count(g, IR_OP_ACTIVATION) == 0 && tp_count(g, IR_OP_LINEAR) == 3,
                  "op counts after fuse_linear");
            CHECK(tp_count(g, IR_OP_ADD) == 1 && tp_count(g, IR_OP_LAYER_NORM) == 1, "the LN's add stays");
            const ir_node *a = tp_node(g, "a"), *y = tp_node(g, "y"), *c = tp_node(g, "c_b");
            tp_check_srcs(g, a, 3, "x", "wa", "ba");
            CHECK(a && a->op == IR_OP_LINEAR && a->has_bias && !a->has_residual && a->has_act &&
                      a->act == act_ids[a1],
                  "chain 1 params");
            tp_check_srcs(g, y, 4, "a", "wb", "bb", "r");
            CHECK(y && y->op == IR_OP_LINEAR && y->has_bias && y->has_residual && y->has_act &&
                      y->act == act_ids[a2],
                  "chain 2 params");
            tp_check_srcs(g, c, 3, "x", "wc", "bc");
            CHECK(c && c->op == IR_OP_LINEAR && c->has_bias && !c->has_residual && !c->has_act, "chain 3 params");
            tp_check_srcs(g, tp_node(g, "c_r"), 2, "c_b", "r");
            tp_check_same("fuse_linear", &t, &t.m.graph, g, 5);
        }
        tp_free(&t);
    }
}

/* A matmul that is also an output keeps its bias_add outside; a bias_add
 * read twice keeps the activation outside; a matmul fed to two ops. */
static void test_fuse_linear_extra_consumers(void) {
    int64_t V = check_rng_range(3, 40), K = check_rng_range(1, 24), N = check_rng_range(1, 24);
    stimage w = {0};
    tp_add(&w, "emb", tp_rand_dtype(), 2, V, K, 1.0f, 0.0f);
    tp_add(&w, "w1", tp_rand_dtype(), 2, N, K, 1.0f, 0.0f);
    tp_add(&w, "w2", tp_rand_dtype(), 2, N, K, 1.0f, 0.0f);
    tp_add(&w, "w3", tp_rand_dtype(), 2, N, K, 1.0f, 0.0f);
    tp_add(&w, "b", tp_rand_dtype(), 1, N, 0, 1.0f, 0.0f);
    static const char *yaml =
        "bertc: 1\nname: lin2\nweights: \"%s\"\nmax_seq_len: 9\n"
        "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
        "outputs:\n  mm1: mm1\n  y1: y1\n  y2: y2\n  y2b: y2b\n  y3: y3\n"
        "graph:\n"
        "  - {op: gather, out: x, table: emb, index: input_ids}\n"
        "  - {op: matmul, out: mm1, x: x, weight: w1}\n"      /* an output */
        "  - {op: bias_add, out: y1, x: mm1, bias: b}\n"
        "  - {op: matmul, out: mm2, x: x, weight: w2}\n"
        "  - {op: bias_add, out: b2, x: mm2, bias: b}\n"     /* read twice */
        "  - {op: activation, out: y2, x: b2, fn: gelu}\n"
        "  - {op: scale, out: y2b, x: b2, by: 0.5}\n"
        "  - {op: matmul, out: mm3, x: x, weight: w3}\n"     /* read by add twice: no residual */
        "  - {op: add, out: y3, a: mm3, b: mm3}\n";
    tp_model t;
    int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "fuse_linear");
    ir_graph *g = &t.g;
    if (rc == 0) {
        const ir_node *mm1 = tp_node(g, "mm1"), *y1 = tp_node(g, "y1"), *b2 = tp_node(g, "b2");
        const ir_node *y2 = tp_node(g, "y2"), *mm3 = tp_node(g, "mm3"), *y3 = tp_node(g, "y3");
        CHECK(mm1 && mm1->op == IR_OP_LINEAR && !mm1->has_bias, "output matmul: plain LINEAR");
        CHECK(y1 && y1->op == IR_OP_BIAS_ADD, "its bias_add stays");
        CHECK(b2 && b2->op == IR_OP_LINEAR && b2->has_bias && !b2->has_act, "bias absorbed, act not");
        CHECK(y2 && y2->op == IR_OP_ACTIVATION, "shared activation stays");
        CHECK(mm3 && mm3->op == IR_OP_LINEAR && !mm3->has_residual, "mm3 plain");
        CHECK(y3 && y3->op == IR_OP_ADD, "add(mm3, mm3) stays");
        CHECK(tp_count(g, IR_OP_MATMUL) == 0 && tp_count(g, IR_OP_LINEAR) == 3, "counts");
        tp_check_same("fuse_linear negatives", &t, &t.m.graph, g, 4);
    }
    tp_free(&t);
}

/* ======================================================================= */
/* pass_merge_qkv                                                           */
/* ======================================================================= */

static void test_merge_qkv(void) {
    int64_t V = check_rng_range(3, 40), K = check_rng_range(1, 20);
    int64_t N[6];
    for (int k = 0; k < 6; k++) N[k] = check_rng_range(1, 17);
    stimage w = {0};
    tp_add(&w, "emb", tp_rand_dtype(), 2, V, K, 1.0f, 0.0f);
    char nm[16];
    for (int k = 0; k < 6; k++) {
        snprintf(nm, sizeof nm, "w%d", k);
        tp_add(&w, nm, tp_rand_dtype(), 2, N[k], K, 1.0f, 0.0f);
        snprintf(nm, sizeof nm, "b%d", k);
        tp_add(&w, nm, tp_rand_dtype(), 1, N[k], 0, 1.0f, 0.0f);
    }
    /* p0, p1, p3 merge (bias, plain); p2 has an act; p4 has no bias and
     * p5 reads another x: each stays alone. */
    static const char *yaml =
        "bertc: 1\nname: qkv\nweights: \"%s\"\nmax_seq_len: 11\n"
        "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
        "outputs:\n  p0: p0\n  p1: p1\n  p2: p2\n  p3: p3\n  p4: p4\n  p5: p5\n"
        "graph:\n"
        "  - {op: gather, out: x, table: emb, index: input_ids}\n"
        "  - {op: gather, out: x2, table: emb, index: input_ids}\n"
        "  - {op: matmul, out: m0, x: x, weight: w0}\n"
        "  - {op: bias_add, out: p0, x: m0, bias: b0}\n"
        "  - {op: matmul, out: m1, x: x, weight: w1}\n"
        "  - {op: bias_add, out: p1, x: m1, bias: b1}\n"
        "  - {op: matmul, out: m2, x: x, weight: w2}\n"
        "  - {op: bias_add, out: m2b, x: m2, bias: b2}\n"
        "  - {op: activation, out: p2, x: m2b, fn: relu}\n"
        "  - {op: matmul, out: m3, x: x, weight: w3}\n"
        "  - {op: bias_add, out: p3, x: m3, bias: b3}\n"
        "  - {op: matmul, out: p4, x: x, weight: w4}\n"
        "  - {op: matmul, out: m5, x: x2, weight: w5}\n"
        "  - {op: bias_add, out: p5, x: m5, bias: b5}\n";
    tp_model t;
    int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "fuse_linear");
    ir_graph *g = &t.g;
    if (rc == 0) {
        ir_graph before;
        int ok = ir_graph_clone(&before, g) == 0;
        diag d;
        diag_init(&d);
        rc = tp_pass("merge_qkv", g, NULL, &d);
        CHECK(rc == 0, "merge_qkv: %s", d.text);
        if (ok && rc == 0) {
            CHECK(tp_count(&before, IR_OP_LINEAR) == 6 && tp_count(g, IR_OP_LINEAR) == 4,
                  "linears %d -> %d", tp_count(&before, IR_OP_LINEAR), tp_count(g, IR_OP_LINEAR));
            CHECK(tp_count(g, IR_OP_CONCAT) == 2 && tp_count(g, IR_OP_SLICE) == 3, "concats/slices");
            const ir_node *m = tp_node(g, "p0+p1+p3");
            tp_check_srcs(g, m, 3, "x", "p0+p1+p3.weight", "p0+p1+p3.bias");
            CHECK(m && m->op == IR_OP_LINEAR && m->has_bias && m->shape[1] == N[0] + N[1] + N[3], "merged linear");
            const ir_node *wc = tp_node(g, "p0+p1+p3.weight"), *bc = tp_node(g, "p0+p1+p3.bias");
            tp_check_srcs(g, wc, 3, "w0", "w1", "w3");
            tp_check_srcs(g, bc, 3, "b0", "b1", "b3");
            CHECK(wc && wc->axis == 0 && bc && bc->axis == 0, "concat axes");
            int64_t off[3] = {0, N[0], N[0] + N[1]}, len[3] = {N[0], N[1], N[3]};
            const char *names[3] = {"p0", "p1", "p3"};
            for (int k = 0; k < 3; k++) {
                const ir_node *s = tp_node(g, names[k]);
                tp_check_srcs(g, s, 1, "p0+p1+p3");
                CHECK(s && s->op == IR_OP_SLICE && s->axis == 1 && s->start == off[k] && s->len == len[k],
                      "slice %s: start %lld len %lld", names[k], s ? (long long)s->start : -1LL,
                      s ? (long long)s->len : -1LL);
            }
            const char *alone[3] = {"p2", "p4", "p5"};
            for (int k = 0; k < 3; k++) {
                const ir_node *s = tp_node(g, alone[k]);
                CHECK(s && s->op == IR_OP_LINEAR, "%s stays a LINEAR", alone[k]);
            }
            /* Merged nodes come right before the first slice. */
            int mi = ir_graph_find(g, "p0+p1+p3"), si = ir_graph_find(g, "p0");
            CHECK(mi >= 0 && si == mi + 1, "merged linear at %d, first slice at %d", mi, si);
            tp_check_same("merge_qkv", &t, &t.m.graph, g, 4);
            /* Folding the concats keeps every bit too. */
            rc = tp_pass("fold_constants", g, &t.m.weights, &d);
            CHECK(rc == 0 && tp_count(g, IR_OP_CONCAT) == 0 && tp_count(g, IR_OP_CONST) == 2,
                  "fold after merge: %s", d.text);
            tp_check_same("merge_qkv + fold", &t, &t.m.graph, g, 3);
        }
        if (ok) ir_graph_free(&before);
    }
    tp_free(&t);
}

/* More than IR_MAX_SRCS candidates: groups of at most 8. */
static void test_merge_qkv_many(void) {
    int count = (int)check_rng_range(IR_MAX_SRCS + 1, 2 * IR_MAX_SRCS + 1);
    int64_t V = check_rng_range(3, 40), K = check_rng_range(1, 12);
    stimage w = {0};
    tbuf y = {0};
    tp_add(&w, "emb", tp_rand_dtype(), 2, V, K, 1.0f, 0.0f);
    tbuf_printf(&y, "bertc: 1\nname: many\nweights: \"%%s\"\nmax_seq_len: 7\n"
                  "inputs:\n  input_ids: {dtype: int32, shape: [S]}\noutputs:\n");
    for (int k = 0; k < count; k++) tbuf_printf(&y, "  o%d: o%d\n", k, k);
    tbuf_printf(&y, "graph:\n  - {op: gather, out: x, table: emb, index: input_ids}\n");
    for (int k = 0; k < count; k++) {
        char nm[16];
        snprintf(nm, sizeof nm, "w%d", k);
        tp_add(&w, nm, tp_rand_dtype(), 2, check_rng_range(1, 6), K, 1.0f, 0.0f);
        tbuf_printf(&y, "  - {op: matmul, out: o%d, x: x, weight: w%d}\n", k, k);
    }
    tp_model t;
    int rc = tp_load_pass(&t, y.p, &w, V, 0, 0, "fuse_linear");
    tbuf_free(&y);
    ir_graph *g = &t.g;
    if (rc == 0) {
        diag d;
        diag_init(&d);
        CHECK(tp_pass("merge_qkv", g, NULL, &d) == 0, "merge: %s", d.text);
        int groups = (count + IR_MAX_SRCS - 1) / IR_MAX_SRCS;
        int singles = count % IR_MAX_SRCS == 1;  /* a last group of one is not merged */
        CHECK(tp_count(g, IR_OP_CONCAT) == groups - singles, "%d concats for %d linears",
              tp_count(g, IR_OP_CONCAT), count);
        CHECK(tp_count(g, IR_OP_LINEAR) == groups, "%d linears", tp_count(g, IR_OP_LINEAR));
        tp_check_same("merge_qkv many", &t, &t.m.graph, g, 3);
    }
    tp_free(&t);
}

/* ======================================================================= */
/* pass_fuse_attention                                                      */
/* ======================================================================= */

/* Each generated variant, through fuse_linear [+ merge_qkv] + attention. */
static void test_fuse_attention_variants(void) {
    for (int v = 0; v < 6; v++) {
        tp_bert b = tp_bert_random();
        b.scale = v != 1 && v != 3;
        b.mask = v != 2 && v != 3;
        int merge = v >= 4 || v == 0;
        tp_model t;
        ir_graph *g = &t.g;
        if (tp_bert_load(&t, &b) == 0 && tp_clone_pass(&t, "fuse_linear") == 0) {
            diag d;
            diag_init(&d);
            int rc = merge ? tp_pass("merge_qkv", g, NULL, &d) : 0;
            if (!rc) rc = tp_pass("fuse_attention", g, NULL, &d);
            CHECK(rc == 0, "passes: %s", d.text);
            char what[64];
            snprintf(what, sizeof what, "attention variant %d (scale %d, mask %d, merged %d)", v, b.scale,
                     b.mask, merge);
            CHECK(tp_count(g, IR_OP_ATTENTION) == b.layers && tp_count(g, IR_OP_BATCHED_MATMUL) == 0 &&
                      tp_count(g, IR_OP_SOFTMAX) == 0 && tp_count(g, IR_OP_MASK) == 0 &&
                      tp_count(g, IR_OP_SCALE) == 0 && tp_count(g, IR_OP_TRANSPOSE) == 0 &&
                      tp_count(g, IR_OP_SLICE) == b.pooler && tp_count(g, IR_OP_RESHAPE) == b.pooler,
                  "%s: op counts", what);
            for (int l = 0; l < b.layers; l++) {
                const ir_node *a = tp_nth(g, IR_OP_ATTENTION, l);
                if (!a) break;
                char q[32], k[32], vv[32];
                snprintf(q, sizeof q, "layer%d/q", l);
                snprintf(k, sizeof k, "layer%d/k", l);
                snprintf(vv, sizeof vv, "layer%d/v", l);
                if (merge) {
                    char m[32];
                    snprintf(m, sizeof m, "layer%d/q+k+v", l);
                    if (b.mask) tp_check_srcs(g, a, 4, m, m, m, "attention_mask");
                    else tp_check_srcs(g, a, 3, m, m, m);
                    CHECK(a->q_off == 0 && a->k_off == b.H && a->v_off == 2 * b.H, "%s: offsets", what);
                } else {
                    if (b.mask) tp_check_srcs(g, a, 4, q, k, vv, "attention_mask");
                    else tp_check_srcs(g, a, 3, q, k, vv);
                    CHECK(a->q_off == 0 && a->k_off == 0 && a->v_off == 0, "%s: offsets", what);
                }
                float want = b.scale ? tp_scale_of(b.HD) : 1.0f;
                CHECK(a->heads == b.NH && a->head_dim == b.HD && a->scale == want,
                      "%s: heads %d head_dim %d scale %g", what, a->heads, a->head_dim, (double)a->scale);
                CHECK(a->shape[0] == S && a->shape[1] == b.H, "%s: shape", what);
            }
            tp_check_same(what, &t, &t.m.graph, g, 5);
        }
        tp_free(&t);
    }
}

/* Replace the first `from` in *text by `to`; 0 if `from` is missing. */
static int tp_edit(char **text, const char *from, const char *to) {
    char *s = tbuf_replace(*text, from, to);
    if (!s) return 0;
    free(*text);
    *text = s;
    return 1;
}

/* One broken rule per run: the attention chain must not fuse (or, for a
 * shared slice, fuse without absorbing it), and the graph must still
 * compute the same. */
static void test_fuse_attention_negative(void) {
    static const char *const breaks[] = {
        "probs is also an output",
        "scale after mask",
        "q_h is also an output",
        "k pre-transposed (perm [1, 2, 0], no transpose_b)",
        "merged q slice is an output",
        "probs also read by another op",
        "merged v slice also read by another op",
    };
    for (int k = 0; k < (int)(sizeof breaks / sizeof breaks[0]); k++) {
        tp_bert b = tp_bert_random();
        b.layers = 1;
        b.scale = b.mask = 1;
        b.late_scale = k == 1;
        stimage w = {0};
        char *yaml = tp_bert_yaml(&b, &w);
        int edited = 1;
        switch (k) {
        case 0: edited = tp_edit(&yaml, "outputs:\n", "outputs:\n  p: layer0/probs\n"); break;
        case 2: edited = tp_edit(&yaml, "outputs:\n", "outputs:\n  qh: layer0/q_h\n"); break;
        case 3:
            edited = tp_edit(&yaml, "out: k_h, x: k_r, perm: [1, 0, 2]", "out: k_h, x: k_r, perm: [1, 2, 0]") &&
                     tp_edit(&yaml, "b: k_h, transpose_b: true", "b: k_h, transpose_b: false");
            break;
        case 4: edited = tp_edit(&yaml, "outputs:\n", "outputs:\n  q: layer0/q\n"); break;
        case 5:
        case 6:
            edited = tp_edit(&yaml, "      - {op: batched_matmul, out: ctx_h,",
                             k == 5 ? "      - {op: scale, out: extra, x: probs, by: 2.0}\n"
                                      "      - {op: batched_matmul, out: ctx_h,"
                                    : "      - {op: scale, out: extra, x: v, by: 2.0}\n"
                                      "      - {op: batched_matmul, out: ctx_h,") &&
                     tp_edit(&yaml, "outputs:\n", "outputs:\n  extra: layer0/extra\n");
            break;
        }
        CHECK(edited, "cannot edit the YAML for '%s'", breaks[k]);
        tp_model t;
        int rc = tp_load_pass(&t, yaml, &w, b.vocab, b.types, b.mask, "fuse_linear");
        free(yaml);
        ir_graph *g = &t.g;
        if (rc == 0) {
            diag d;
            diag_init(&d);
            rc = tp_pass("merge_qkv", g, NULL, &d);
            if (!rc) rc = tp_pass("fuse_attention", g, NULL, &d);
            CHECK(rc == 0, "%s: %s", breaks[k], d.text);
            if (k == 4 || k == 6) {
                /* Fuses, but reads the shared slice itself at offset 0. */
                const ir_node *a = tp_nth(g, IR_OP_ATTENTION, 0);
                CHECK(a != NULL, "%s: attention not fused", breaks[k]);
                if (a && k == 4) {
                    tp_check_srcs(g, a, 4, "layer0/q", "layer0/q+k+v", "layer0/q+k+v", "attention_mask");
                    CHECK(a->q_off == 0 && a->k_off == b.H && a->v_off == 2 * b.H, "%s: offsets", breaks[k]);
                }
                if (a && k == 6) {
                    tp_check_srcs(g, a, 4, "layer0/q+k+v", "layer0/q+k+v", "layer0/v", "attention_mask");
                    CHECK(a->q_off == 0 && a->k_off == b.H && a->v_off == 0, "%s: offsets", breaks[k]);
                }
                CHECK(tp_count(g, IR_OP_SLICE) == 1 + b.pooler, "%s: one slice kept", breaks[k]);
            } else {
                CHECK(tp_count(g, IR_OP_ATTENTION) == 0 && tp_count(g, IR_OP_SOFTMAX) == 1 &&
                          tp_count(g, IR_OP_BATCHED_MATMUL) == 2,
                      "%s: fused anyway", breaks[k]);
            }
            tp_check_same(breaks[k], &t, &t.m.graph, g, 4);
        }
        tp_free(&t);
    }
}

/* ======================================================================= */
/* pass_fuse_add_ln                                                         */
/* ======================================================================= */

static void test_fuse_add_ln_forms(void) {
    int64_t V = check_rng_range(3, 40), D = check_rng_range(2, 30);
    stimage w = {0};
    /* float32 tables: sums of full-precision values round, so a wrong
     * order of additions shows; half-precision ones would add exactly. */
    tp_add(&w, "e1", IR_DTYPE_F32, 2, V, D, 2.0f, 0.0f);
    tp_add(&w, "e2", IR_DTYPE_F32, 2, V, D, 2.0f, 0.5f);
    tp_add(&w, "bias", tp_rand_dtype(), 1, D, 0, 1.0f, 0.0f);
    tp_add(&w, "g", tp_rand_dtype(), 1, D, 0, 0.2f, 1.0f);
    tp_add(&w, "be", tp_rand_dtype(), 1, D, 0, 0.2f, 0.0f);
    /* The inputs are scale ops so none of this is an embedding sum. */
    static const char *yaml =
        "bertc: 1\nname: addln\nweights: \"%s\"\nmax_seq_len: 13\n"
        "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
        "outputs:\n  n1: n1\n  n2: n2\n  n3: n3\n  n4: n4\n  n5: n5\n  n6: n6\n  s6: s6\n"
        "graph:\n"
        "  - {op: gather, out: g1, table: e1, index: input_ids}\n"
        "  - {op: gather, out: g2, table: e2, index: input_ids}\n"
        "  - {op: scale, out: a, x: g1, by: 1.5}\n"
        "  - {op: scale, out: b, x: g2, by: -0.75}\n"
        "  - {op: add, out: s1, a: a, b: b}\n"
        "  - {op: layer_norm, out: n1, x: s1, gamma: g, beta: be, eps: 1e-5}\n"
        "  - {op: bias_add, out: ab, x: a, bias: bias}\n"
        "  - {op: add, out: s2, a: ab, b: b}\n"
        "  - {op: layer_norm, out: n2, x: s2, gamma: g, beta: be, eps: 1e-6}\n"
        "  - {op: bias_add, out: bb, x: b, bias: bias}\n"
        "  - {op: add, out: s3, a: a, b: bb}\n"
        "  - {op: layer_norm, out: n3, x: s3, gamma: g, beta: be, eps: 1e-7}\n"
        "  - {op: bias_add, out: b4, x: a, bias: bias}\n"
        "  - {op: layer_norm, out: n4, x: b4, gamma: g, beta: be, eps: 1e-8}\n"
        "  - {op: layer_norm, out: n5, x: b, gamma: g, beta: be, eps: 1e-9}\n"
        "  - {op: add, out: s6, a: a, b: b}\n"          /* also an output */
        "  - {op: layer_norm, out: n6, x: s6, gamma: g, beta: be, eps: 1e-10}\n";
    tp_model t;
    int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "fuse_add_ln");
    ir_graph *g = &t.g;
    if (rc == 0) {
        CHECK(tp_count(g, IR_OP_LAYER_NORM) == 0 && tp_count(g, IR_OP_ADD_LN) == 6, "all layer_norms fused");
        CHECK(tp_count(g, IR_OP_ADD) == 1 && tp_count(g, IR_OP_BIAS_ADD) == 0, "adds left: %d",
              tp_count(g, IR_OP_ADD));
        struct {
            const char *name;
            int res, bias;
            float eps;
        } want[6] = {{"n1", 1, 0, 1e-5f}, {"n2", 1, 1, 1e-6f}, {"n3", 1, 1, 1e-7f},
                     {"n4", 0, 1, 1e-8f}, {"n5", 0, 0, 1e-9f}, {"n6", 0, 0, 1e-10f}};
        for (int k = 0; k < 6; k++) {
            const ir_node *n = tp_node(g, want[k].name);
            CHECK(n && n->op == IR_OP_ADD_LN && n->has_residual == want[k].res && n->has_bias == want[k].bias &&
                      n->eps == want[k].eps,
                  "%s: residual %d bias %d eps %g", want[k].name, n ? n->has_residual : -1,
                  n ? n->has_bias : -1, n ? (double)n->eps : 0.0);
        }
        tp_check_srcs(g, tp_node(g, "n1"), 4, "b", "g", "be", "a");  /* b is the later operand */
        tp_check_srcs(g, tp_node(g, "n2"), 5, "a", "g", "be", "b", "bias");
        tp_check_srcs(g, tp_node(g, "n3"), 5, "b", "g", "be", "a", "bias");
        tp_check_srcs(g, tp_node(g, "n4"), 4, "a", "g", "be", "bias");
        tp_check_srcs(g, tp_node(g, "n5"), 3, "b", "g", "be");
        tp_check_srcs(g, tp_node(g, "n6"), 3, "s6", "g", "be");
        tp_check_same("fuse_add_ln", &t, &t.m.graph, g, 5);
    }
    tp_free(&t);
}

/* ======================================================================= */
/* pass_fuse_embed_ln                                                       */
/* ======================================================================= */

/* Sums of 1..3 gathers in every tree shape and operand order; then the
 * cases that must not fuse. */
static void test_fuse_embed_ln_trees(void) {
    static const struct {
        const char *graph;      /* the sum's ops; the LN reads `sum` */
        const char *order;      /* expected table order in EMBED_LN */
    } shapes[] = {
        {"  - {op: add, out: s0, a: gw, b: gp}\n  - {op: add, out: sum, a: s0, b: gt}\n", "w p t"},
        {"  - {op: add, out: s0, a: gw, b: gp}\n  - {op: add, out: sum, a: gt, b: s0}\n", "w p t"},
        {"  - {op: add, out: s0, a: gp, b: gt}\n  - {op: add, out: sum, a: gw, b: s0}\n", "p t w"},
        {"  - {op: add, out: s0, a: gt, b: gw}\n  - {op: add, out: sum, a: s0, b: gp}\n", "t w p"},
        {"  - {op: add, out: sum, a: gp, b: gw}\n", "p w"},
        {"  - {op: add, out: sum, a: gw, b: gt}\n", "w t"},
        {"  - {op: scale, out: sum, x: gw, by: 1.0}\n", NULL},           /* not a gather tree */
        {"  - {op: add, out: sum, a: gw, b: gw}\n", NULL},               /* the same gather twice */
    };
    int64_t V = check_rng_range(3, 60), D = check_rng_range(2, 40), P = check_rng_range(4, 20);
    int T = (int)check_rng_range(1, 3);
    for (int k = 0; k < (int)(sizeof shapes / sizeof shapes[0]) + 1; k++) {
        stimage w = {0};
        tp_add(&w, "tw", IR_DTYPE_F32, 2, V, D, 1.0f, 0.0f);  /* float32: the sums round */
        tp_add(&w, "tp", IR_DTYPE_F32, 2, P, D, 1.0f, 0.0f);
        tp_add(&w, "tt", IR_DTYPE_F32, 2, T, D, 1.0f, 0.0f);
        tp_add(&w, "g", tp_rand_dtype(), 1, D, 0, 0.2f, 1.0f);
        tp_add(&w, "be", tp_rand_dtype(), 1, D, 0, 0.2f, 0.0f);
        int single = k == (int)(sizeof shapes / sizeof shapes[0]);
        char *yaml = tbuf_format(
            "bertc: 1\nname: emb\nweights: \"%%s\"\nmax_seq_len: %lld\n"
            "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
            "  token_type_ids: {dtype: int32, shape: [S], default: 0}\n"
            "outputs:\n  h: h\n"
            "graph:\n"
            "  - {op: arange, out: pos, like: input_ids}\n"
            "  - {op: gather, out: gw, table: tw, index: input_ids}\n"
            "  - {op: gather, out: gp, table: tp, index: pos}\n"
            "  - {op: gather, out: gt, table: tt, index: token_type_ids}\n"
            "%s"
            "  - {op: layer_norm, out: h, x: %s, gamma: g, beta: be, eps: 1e-12}\n",
            (long long)P, single ? "" : shapes[k].graph, single ? "gt" : "sum");
        tp_model t;
        int rc = tp_load_pass(&t, yaml, &w, V, T, 0, "dce");
        free(yaml);
        ir_graph *g = &t.g;
        if (rc == 0) {
            diag d;
            diag_init(&d);
            ir_graph dced;
            int ok = ir_graph_clone(&dced, g) == 0;
            rc = tp_pass("fuse_add_ln", g, NULL, &d);
            if (!rc) rc = tp_pass("fuse_embed_ln", g, NULL, &d);
            CHECK(rc == 0, "passes: %s", d.text);
            const char *order = single ? "t" : shapes[k].order;
            const ir_node *h = tp_node(g, "h");
            if (order && h) {
                int n = (int)(strlen(order) + 1) / 2;
                CHECK(h->op == IR_OP_EMBED_LN && h->ngathers == n, "shape %d: %s with %d gathers", k,
                      ir_op_name(h->op), h->ngathers);
                CHECK(tp_count(g, IR_OP_GATHER) == 0 && tp_count(g, IR_OP_ADD) == 0, "shape %d: leftovers", k);
                for (int j = 0; h->op == IR_OP_EMBED_LN && j < n && j < h->ngathers; j++) {
                    char tab[4] = {'t', order[2 * j], 0};
                    const char *idx = order[2 * j] == 'w' ? "input_ids" : order[2 * j] == 'p' ? "pos" : "token_type_ids";
                    CHECK(strcmp(tp_src(g, h, 2 + 2 * j), tab) == 0 && strcmp(tp_src(g, h, 3 + 2 * j), idx) == 0,
                          "shape %d: gather %d is %s[%s], expected %s[%s]", k, j, tp_src(g, h, 2 + 2 * j),
                          tp_src(g, h, 3 + 2 * j), tab, idx);
                }
                CHECK(strcmp(tp_src(g, h, 0), "g") == 0 && strcmp(tp_src(g, h, 1), "be") == 0 && h->eps == 1e-12f,
                      "shape %d: gamma/beta/eps", k);
            } else if (h) {
                CHECK(h->op == IR_OP_ADD_LN, "shape %d: %s, expected add_ln", k, ir_op_name(h->op));
            }
            /* The fused graph against the unfused one, types and all. */
            if (ok) tp_check_same("fuse_embed_ln", &t, &dced, g, 5);
            if (ok) ir_graph_free(&dced);
        }
        tp_free(&t);
    }
}

/* A gather read elsewhere, an output inside the tree, four gathers, an
 * index that is neither an input nor an arange: no EMBED_LN, and
 * fuse_add_ln takes the layer_norm instead. */
static void test_fuse_embed_ln_negative(void) {
    static const struct {
        const char *what, *outputs, *graph;
    } variants[] = {
        {"gather is an output", "  gw: gw\n",
         "  - {op: add, out: sum, a: gw, b: gp}\n"},
        {"partial sum is an output", "  s0: s0\n",
         "  - {op: add, out: s0, a: gw, b: gp}\n"
         "  - {op: add, out: sum, a: s0, b: gx}\n"},
        {"four gathers", "",
         "  - {op: gather, out: gy, table: tp, index: pos}\n"
         "  - {op: add, out: s0, a: gw, b: gp}\n"
         "  - {op: add, out: s1, a: s0, b: gx}\n"
         "  - {op: add, out: sum, a: s1, b: gy}\n"},
        {"computed index", "",
         "  - {op: reshape, out: pos2, x: pos, shape: [S]}\n"
         "  - {op: gather, out: gq, table: tp, index: pos2}\n"
         "  - {op: add, out: sum, a: gw, b: gq}\n"},
        {"gather read twice", "",
         "  - {op: add, out: s0, a: gw, b: gp}\n"
         "  - {op: add, out: sum, a: s0, b: gw}\n"},
    };
    for (int k = 0; k < (int)(sizeof variants / sizeof variants[0]); k++) {
        int64_t V = check_rng_range(3, 60), D = check_rng_range(2, 40);
        stimage w = {0};
        tp_add(&w, "tw", tp_rand_dtype(), 2, V, D, 1.0f, 0.0f);
        tp_add(&w, "tp", tp_rand_dtype(), 2, 16, D, 1.0f, 0.0f);
        tp_add(&w, "tx", tp_rand_dtype(), 2, V, D, 1.0f, 0.0f);
        tp_add(&w, "g", tp_rand_dtype(), 1, D, 0, 0.2f, 1.0f);
        tp_add(&w, "be", tp_rand_dtype(), 1, D, 0, 0.2f, 0.0f);
        char *yaml = tbuf_format(
            "bertc: 1\nname: emb\nweights: \"%%s\"\nmax_seq_len: 16\n"
            "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n"
            "outputs:\n  h: h\n%s"
            "graph:\n"
            "  - {op: arange, out: pos, like: input_ids}\n"
            "  - {op: gather, out: gw, table: tw, index: input_ids}\n"
            "  - {op: gather, out: gp, table: tp, index: pos}\n"
            "  - {op: gather, out: gx, table: tx, index: input_ids}\n"
            "%s"
            "  - {op: layer_norm, out: h, x: sum, gamma: g, beta: be, eps: 1e-12}\n",
            variants[k].outputs, variants[k].graph);
        tp_model t;
        int rc = tp_load_pass(&t, yaml, &w, V, 0, 0, "dce");
        free(yaml);
        ir_graph *g = &t.g;
        if (rc == 0) {
            diag d;
            diag_init(&d);
            ir_graph dced;
            int ok = ir_graph_clone(&dced, g) == 0;
            rc = tp_pass("fuse_add_ln", g, NULL, &d);
            if (!rc) rc = tp_pass("fuse_embed_ln", g, NULL, &d);
            CHECK(rc == 0, "%s: %s", variants[k].what, d.text);
            const ir_node *h = tp_node(g, "h");
            CHECK(h && h->op == IR_OP_ADD_LN, "%s: h is %s, expected add_ln", variants[k].what,
                  h ? ir_op_name(h->op) : "?");
            CHECK(tp_count(g, IR_OP_EMBED_LN) == 0, "%s: embed_ln fused", variants[k].what);
            if (ok) tp_check_same(variants[k].what, &t, &dced, g, 4);
            if (ok) ir_graph_free(&dced);
        }
        tp_free(&t);
    }
}

/* ======================================================================= */
/* pass_fold_constants                                                      */
/* ======================================================================= */

/* A graph built node by node (the YAML cannot apply ops to weights):
 * matmul(x, transpose(wt)), bias = scale(slice(concat(b1, b2))), a reshape
 * of a weight as the LayerNorm gamma. */
static void test_fold_constants(void) {
    int64_t V = check_rng_range(3, 30), K = check_rng_range(2, 16), N = check_rng_range(2, 16);
    int64_t N1 = check_rng_range(1, N - 1);
    tgraph tg;
    tgraph_init(&tg);
    tg.round_values = 1;
    ir_graph *g = &tg.g;
    g->max_seq_len = 9;
    g->source_path = strdup("fold.yaml");
    int emb = tp_weight(&tg, "emb", tp_rand_dtype(), 2, V, K, 1.0f, 0.0f);
    int wt = tp_weight(&tg, "wt", tp_rand_dtype(), 2, K, N, 1.0f, 0.0f);   /* stored transposed */
    int b1 = tp_weight(&tg, "b1", tp_rand_dtype(), 1, N1, 0, 1.0f, 0.0f);
    int b2 = tp_weight(&tg, "b2", tp_rand_dtype(), 1, N - N1 + 3, 0, 1.0f, 0.0f);
    int g2 = tp_weight(&tg, "g2", tp_rand_dtype(), 2, 1, N, 0.2f, 1.0f);   /* gamma as [1, N] */
    int be = tp_weight(&tg, "be", tp_rand_dtype(), 1, N, 0, 0.2f, 0.0f);
    int ids = tgraph_input(&tg, "input_ids");
    int x = tgraph_op(&tg, IR_OP_GATHER, "x", emb, ids);
    int wtr = tgraph_transpose(&tg, "w", wt, 2, (int[]){1, 0});
    int cat = tgraph_op(&tg, IR_OP_CONCAT, "bcat", b1, b2);
    int sl = tgraph_slice(&tg, "bsl", cat, 0, 2, N);
    int sc = tgraph_op(&tg, IR_OP_SCALE, "bias", sl);
    g->nodes[sc].scale = -0.3f;
    int mm = tgraph_op(&tg, IR_OP_MATMUL, "mm", x, wtr);
    int ba = tgraph_op(&tg, IR_OP_BIAS_ADD, "y", mm, sc);
    int gam = tgraph_reshape(&tg, "gamma", g2, 1, (int64_t[]){N});
    int ln = tgraph_op(&tg, IR_OP_LAYER_NORM, "z", ba, gam, be);
    g->nodes[ln].eps = 1e-5f;
    ir_graph_add_output(g, "y", ba);
    ir_graph_add_output(g, "z", ln);
    diag d;
    int rc = tgraph_open_weights(&tg, "fold.safetensors", &d);
    CHECK(rc == 0, "open weights: %s", d.text);
    if (!rc) {
        rc = ir_graph_infer(g, "fold.yaml", NULL, 0, &d);
        CHECK(rc == 0, "infer: %s", d.text);
    }
    tp_model t = {.w = &tg.w, .max_len = g->max_seq_len, .vocab = V};
    ir_graph f;
    if (!rc && ir_graph_clone(&f, g) == 0) {
        rc = tp_pass("fold_constants", &f, t.w, &d);
        CHECK(rc == 0, "fold: %s", d.text);
        if (!rc) {
            CHECK(tp_count(&f, IR_OP_TRANSPOSE) == 0 && tp_count(&f, IR_OP_CONCAT) == 0 &&
                      tp_count(&f, IR_OP_SLICE) == 0 && tp_count(&f, IR_OP_SCALE) == 0 &&
                      tp_count(&f, IR_OP_RESHAPE) == 0,
                  "layout ops remain");
            /* Every foldable node folds, intermediate ones included. */
            CHECK(tp_count(&f, IR_OP_CONST) == 5, "%d consts, expected 5 (w, bcat, bsl, bias, gamma)",
                  tp_count(&f, IR_OP_CONST));
            const ir_node *wc = tp_node(&f, "w"), *bc = tp_node(&f, "bias"), *gc = tp_node(&f, "gamma");
            CHECK(wc && wc->op == IR_OP_CONST && wc->ndim == 2 && wc->shape[0] == N && wc->shape[1] == K &&
                      wc->dtype == IR_DTYPE_F32,
                  "w folded");
            CHECK(bc && bc->op == IR_OP_CONST && bc->ndim == 1 && bc->shape[0] == N, "bias folded");
            CHECK(gc && gc->op == IR_OP_CONST && gc->ndim == 1, "gamma folded");
            /* The folded values are the transposed weight, element by element. */
            const weights_tensor *wt = weights_find(t.w, "wt");
            int exact = wc && wc->data && wt;
            for (int64_t i = 0; exact && i < N; i++)
                for (int64_t j = 0; j < K; j++)
                    exact &= wc->data[i * K + j] == weights_tensor_get_f32(wt, j * N + i);
            CHECK(exact, "folded transpose values");
            /* The unread weights go with dce; the rest computes the same. */
            rc = tp_pass("dce", &f, NULL, &d);
            CHECK(rc == 0 && tp_count(&f, IR_OP_WEIGHT) == 2 && tp_count(&f, IR_OP_CONST) == 3,
                  "dce after fold: %d weights, %d consts left (%s)", tp_count(&f, IR_OP_WEIGHT),
                  tp_count(&f, IR_OP_CONST), d.text);
            tp_check_same("fold_constants", &t, g, &f, 4);
            /* And the pipeline makes the bias part of the GEMM. */
            ir_graph p;
            if (ir_graph_clone(&p, g) == 0) {
                rc = passes_run(&p, t.w, NULL, &d);
                CHECK(rc == 0, "passes_run: %s", d.text);
                const ir_node *y = tp_node(&p, "y");
                CHECK(y && y->op == IR_OP_LINEAR && y->has_bias, "bias computed from weights absorbed");
                tp_check_srcs(&p, y, 3, "x", "w", "bias");
                tp_check_same("fold pipeline", &t, g, &p, 3);
                ir_graph_free(&p);
            }
        }
        ir_graph_free(&f);
    }
    tgraph_free(&tg);
}

/* ======================================================================= */
/* the pipeline                                                             */
/* ======================================================================= */

static void tp_pipeline_fixture(const tp_fixture *f, int heads, int head_dim, int hidden, int layers,
                                ir_act act, int pooler) {
    tp_model t;
    if (tp_fixture_load(&t, f)) return;
    char gold[512], err[512];
    snprintf(gold, sizeof gold, "tests/golden/%s.bgld", f->name);
    golden_file gf;
    int rc = golden_load(&gf, gold, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", gold, err);
    ir_graph g;
    passes_report r;
    diag d;
    diag_init(&d);
    if (!rc && ir_graph_clone(&g, &t.m.graph) == 0) {
        rc = passes_run(&g, &t.m.weights, &r, &d);
        CHECK(rc == 0, "%s: passes_run: %s", f->name, d.text);
        if (!rc) {
            tp_expect e = {.layers = layers, .hidden = hidden, .heads = heads, .head_dim = head_dim,
                           .ngathers = 3, .mask = 1, .scale = (float)(1.0 / sqrt((double)head_dim)),
                           .act = act, .pooler = pooler, .head = !strcmp(f->name, "tiny-bert-tanh"),
                           .sentence = !strcmp(f->name, "all-MiniLM-L6-v2")};
            tp_check_pipeline_shape(f->name, &g, &e);
            CHECK(r.nsteps == 9 && strcmp(r.steps[0].name, "dce") == 0 &&
                      strcmp(r.steps[7].name, "fold_constants") == 0 && r.steps[8].nodes_after == g.count,
                  "%s: report", f->name);
            int ran = 0;
            for (int c = 0; c < gf.count; c++) {
                const golden_case *gc = &gf.cases[c];
                ref_request req = {.len = gc->len, .input_ids = gc->input_ids,
                                   .token_type_ids = gc->token_type_ids, .attention_mask = gc->attention_mask};
                ref_result res;
                if (ref_run(&g, &t.m.weights, &req, &res, &d)) {
                    CHECK(0, "%s/%s: %s", f->name, gc->name, d.text);
                    continue;
                }
                const ref_tensor *last = ref_result_find(&res, "last_hidden_state");
                size_t n = (size_t)gc->len * (size_t)gc->hidden;
                if (last && last->ndim == 2 && last->shape[0] == gc->len && last->shape[1] == gc->hidden) {
                    double scale = golden_max_abs(gc->last_hidden_state, n);
                    double diff = golden_max_abs_diff(last->data, gc->last_hidden_state, n);
                    CHECK(diff <= 1e-5 * scale, "%s/%s: last_hidden_state off by %.3g (scale %.3g)", f->name,
                          gc->name, diff, scale);
                } else {
                    CHECK(0, "%s/%s: last_hidden_state missing or misshapen", f->name, gc->name);
                }
                const ref_tensor *pooled = ref_result_find(&res, "pooler_output");
                CHECK(!pooled == !gc->pooler_output, "%s/%s: pooler presence", f->name, gc->name);
                if (pooled && gc->pooler_output && pooled->shape[0] == gc->hidden) {
                    double scale = golden_max_abs(gc->pooler_output, (size_t)gc->hidden);
                    double diff = golden_max_abs_diff(pooled->data, gc->pooler_output, (size_t)gc->hidden);
                    CHECK(diff <= 1e-5 * scale, "%s/%s: pooler_output off by %.3g", f->name, gc->name, diff);
                }
                ref_result_free(&res);
                ran++;
            }
            CHECK(ran >= 5, "%s: %d golden cases ran", f->name, ran);
            /* And bit for bit against the unfused graph on random requests. */
            tp_check_same(f->name, &t, &t.m.graph, &g, f->vocab > 5000 ? 2 : 5);
        }
        ir_graph_free(&g);
    }
    golden_free(&gf);  /* safe on the empty struct a failed load leaves */
    tp_free(&t);
}

static void test_pipeline_tiny_bert(void) { tp_pipeline_fixture(&tp_fixtures[0], 6, 16, 96, 3, IR_ACT_GELU_ERF, 1); }
static void test_pipeline_tiny_bert_prefixed(void) {
    tp_pipeline_fixture(&tp_fixtures[1], 6, 16, 96, 3, IR_ACT_GELU_TANH, 1);
}
static void test_pipeline_tiny_bert_relu(void) { tp_pipeline_fixture(&tp_fixtures[2], 4, 16, 64, 2, IR_ACT_RELU, 0); }
static void test_pipeline_tiny_bert_tanh(void) {
    tp_pipeline_fixture(&tp_fixtures[3], 4, 20, 80, 2, IR_ACT_GELU_TANH, 1);
}
static void test_pipeline_minilm(void) { tp_pipeline_fixture(&tp_fixtures[4], 12, 32, 384, 6, IR_ACT_GELU_ERF, 1); }

/* The passes one at a time on the tiny fixtures: after each, the graph
 * still computes every bit of the original, and the pass did its part. */
static void test_each_pass_on_fixtures(void) {
    static const struct {
        const char *name;
    } steps[] = {{"dce"}, {"fuse_linear"}, {"merge_qkv"}, {"fuse_attention"},
                 {"fuse_add_ln"}, {"fuse_embed_ln"}, {"fold_constants"}};
    for (int f = 0; f < 4; f++) {
        tp_model t;
        if (tp_fixture_load(&t, &tp_fixtures[f])) continue;
        int layers = tp_count(&t.m.graph, IR_OP_SOFTMAX);
        int pooler = tp_count(&t.m.graph, IR_OP_SLICE);
        int dense = tp_count(&t.m.graph, IR_OP_MATMUL) - 6 * layers; /* the pooler's and a head's */
        ir_graph g;
        if (ir_graph_clone(&g, &t.m.graph) == 0) {
            for (int k = 0; k < (int)(sizeof steps / sizeof steps[0]); k++) {
                diag d;
                diag_init(&d);
                int rc = tp_pass(steps[k].name, &g, &t.m.weights, &d);
                CHECK(rc == 0, "%s: %s: %s", tp_fixtures[f].name, steps[k].name, d.text);
                if (rc) break;
                int ok = 1;
                switch (k) {
                case 1: ok = tp_count(&g, IR_OP_MATMUL) == 0 && tp_count(&g, IR_OP_BIAS_ADD) == 0 &&
                             tp_count(&g, IR_OP_LINEAR) == 6 * layers + dense; break;
                case 2: ok = tp_count(&g, IR_OP_CONCAT) == 2 * layers && tp_count(&g, IR_OP_LINEAR) == 4 * layers + dense;
                    break;
                case 3: ok = tp_count(&g, IR_OP_ATTENTION) == layers && tp_count(&g, IR_OP_SLICE) == pooler; break;
                case 4: ok = tp_count(&g, IR_OP_ADD_LN) == 2 * layers && tp_count(&g, IR_OP_LAYER_NORM) == 1; break;
                case 5: ok = tp_count(&g, IR_OP_EMBED_LN) == 1 && tp_count(&g, IR_OP_LAYER_NORM) == 0; break;
                case 6: ok = tp_count(&g, IR_OP_CONCAT) == 0 && tp_count(&g, IR_OP_CONST) == 2 * layers; break;
                }
                CHECK(ok, "%s: after %s the op counts are off", tp_fixtures[f].name, steps[k].name);
                char what[96];
                snprintf(what, sizeof what, "%s after %s", tp_fixtures[f].name, steps[k].name);
                tp_check_same(what, &t, &t.m.graph, &g, 2);
            }
            ir_graph_free(&g);
        }
        tp_free(&t);
    }
}

/*
 * The other families fuse as BERT does: one EMBED_LN (RoBERTa's and MPNet's
 * pad_positions index and DistilBERT's sinusoid table — folded to a
 * constant — absorbed), one ATTENTION per layer (MPNet's with the shared
 * rel_pos_bias as its score bias), no batched_matmul or softmax left; the
 * heads are LINEARs; and everything bit for bit as the unfused graph.
 */
static void test_pipeline_families(void) {
    static const struct {
        tp_fixture f;
        int layers, bias, heads_linear;  /* LINEARs of the pooler and the task head */
    } fam[] = {{{"tiny-roberta", 1, 300}, 2, 0, 2},      {{"tiny-xlmr-tokcls", 1, 250}, 2, 0, 1},
               {{"tiny-distilbert", 0, 400}, 2, 0, 2},   {{"tiny-electra", 2, 350}, 2, 0, 3},
               {{"tiny-mpnet", 0, 320}, 2, 1, 2},        {{"tiny-mpnet-seqcls", 0, 200}, 1, 1, 2},
               {{"tiny-cross-encoder", 2, 500}, 2, 0, 2}};
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        tp_model t;
        if (tp_fixture_load(&t, &fam[i].f)) continue;
        ir_graph g;
        passes_report r;
        diag d;
        diag_init(&d);
        if (ir_graph_clone(&g, &t.m.graph) == 0) {
            int rc = passes_run(&g, &t.m.weights, &r, &d);
            CHECK(rc == 0, "%s: passes_run: %s", fam[i].f.name, d.text);
            int L = fam[i].layers, biased = 0;
            for (int n = 0; !rc && n < g.count; n++)
                biased += g.nodes[n].op == IR_OP_ATTENTION && g.nodes[n].has_bias &&
                          g.nodes[g.nodes[n].src[g.nodes[n].nsrc - 1]].op == IR_OP_REL_POS_BIAS;
            CHECK(rc || (tp_count(&g, IR_OP_EMBED_LN) == 1 && tp_count(&g, IR_OP_ATTENTION) == L &&
                         tp_count(&g, IR_OP_SOFTMAX) == 0 && tp_count(&g, IR_OP_BATCHED_MATMUL) == 0 &&
                         tp_count(&g, IR_OP_ADD_LN) == 2 * L && tp_count(&g, IR_OP_SINUSOID) == 0 &&
                         tp_count(&g, IR_OP_LINEAR) == 4 * L + fam[i].heads_linear &&
                         tp_count(&g, IR_OP_REL_POS_BIAS) == fam[i].bias && biased == fam[i].bias * L),
                  "%s: not BERT's fused structure (%d linears, %d attentions, %d biased)", fam[i].f.name,
                  tp_count(&g, IR_OP_LINEAR), tp_count(&g, IR_OP_ATTENTION), biased);
            if (!rc) tp_check_same(fam[i].f.name, &t, &t.m.graph, &g, 4);
            ir_graph_free(&g);
        }
        tp_free(&t);
    }
}

/* The generated variants the fixtures lack: no token types, no mask op,
 * no scale, no pooler, every activation, swapped add operands. */
static void test_pipeline_variants(void) {
    for (int v = 0; v < 6; v++) {
        tp_bert b = tp_bert_random();
        if (v == 0) b.types = 0;
        if (v == 1) b.mask = 0;
        if (v == 2) b.scale = 0;
        if (v == 3) b.pooler = 0;
        if (v == 4) b.types = 0, b.mask = 0, b.pooler = 0, b.scale = 0;
        tp_model t;
        if (tp_bert_load(&t, &b)) return;
        ir_graph g;
        diag d;
        diag_init(&d);
        if (ir_graph_clone(&g, &t.m.graph) == 0) {
            int rc = passes_run(&g, &t.m.weights, NULL, &d);
            CHECK(rc == 0, "variant %d: %s", v, d.text);
            if (!rc) {
                ir_act act = strcmp(b.act, "gelu") == 0 ? IR_ACT_GELU_ERF
                             : strcmp(b.act, "gelu_tanh") == 0 ? IR_ACT_GELU_TANH
                             : strcmp(b.act, "relu") == 0 ? IR_ACT_RELU : IR_ACT_TANH;
                tp_expect e = {.layers = b.layers, .hidden = b.H, .heads = b.NH, .head_dim = b.HD,
                               .ngathers = b.types ? 3 : 2, .mask = b.mask,
                               .scale = b.scale ? tp_scale_of(b.HD) : 1.0f, .act = act,
                               .pooler = b.pooler};
                char what[96];
                snprintf(what, sizeof what, "variant %d (types %d mask %d scale %d pooler %d act %s swap %d)", v,
                         b.types, b.mask, b.scale, b.pooler, b.act, b.swap);
                tp_check_pipeline_shape(what, &g, &e);
                /* Swapped adds list the gathers in the swapped sum order. */
                const ir_node *emb = tp_nth(&g, IR_OP_EMBED_LN, 0);
                if (emb && b.types)
                    CHECK(strcmp(tp_src(&g, emb, 7), "token_type_ids") == 0, "%s: type gather", what);
                if (emb)
                    CHECK(strcmp(tp_src(&g, emb, b.swap ? 5 : 3), "input_ids") == 0, "%s: word gather", what);
                const ir_node *tt = tp_node(&g, "input_ids");
                CHECK(tt && !tt->unused, "%s: input_ids used", what);
                tp_check_same(what, &t, &t.m.graph, &g, 6);
            }
            ir_graph_free(&g);
        }
        tp_free(&t);
    }
}

/* The report adds up, and each pass's count changes are its own. */
static void test_passes_report(void) {
    tp_model t;
    if (tp_fixture_load(&t, &tp_fixtures[3])) return;
    ir_graph g;
    passes_report r;
    diag d;
    diag_init(&d);
    if (ir_graph_clone(&g, &t.m.graph) == 0) {
        int rc = passes_run(&g, &t.m.weights, &r, &d);
        CHECK(rc == 0, "passes_run: %s", d.text);
        static const char *const names[9] = {"dce",           "fuse_linear",         "merge_qkv",
                                             "fuse_attention", "fuse_add_ln",        "fuse_embed_ln",
                                             "fuse_pool_normalize", "fold_constants", "dce"};
        CHECK(r.nsteps == 9, "%d steps", r.nsteps);
        for (int k = 0; !rc && k < r.nsteps && k < 9; k++) {
            const passes_step *s = &r.steps[k];
            CHECK(strcmp(s->name, names[k]) == 0, "step %d is %s", k, s->name);
            int before = 0, after = 0;
            for (int op = 0; op < IR_OP_COUNT; op++) {
                before += s->ops_before[op];
                after += s->ops_after[op];
            }
            CHECK(before == s->nodes_before && after == s->nodes_after, "step %s: counts do not add up", s->name);
            if (k) CHECK(s->nodes_before == r.steps[k - 1].nodes_after, "step %s: chain broken", s->name);
        }
        const passes_step *fl = &r.steps[1], *fa = &r.steps[3], *fo = &r.steps[7], *last = &r.steps[8];
        /* tiny-bert-tanh: 2 layers of 6 dense layers, the pooler and the classifier. */
        CHECK(fl->ops_before[IR_OP_MATMUL] == 14 && fl->ops_after[IR_OP_MATMUL] == 0 &&
                  fl->ops_after[IR_OP_LINEAR] == 14,
              "fuse_linear: matmul %d -> %d", fl->ops_before[IR_OP_MATMUL], fl->ops_after[IR_OP_MATMUL]);
        CHECK(fa->ops_after[IR_OP_ATTENTION] == 2 && fa->ops_after[IR_OP_SOFTMAX] == 0, "fuse_attention counts");
        CHECK(fo->ops_after[IR_OP_CONST] == 4 && fo->ops_after[IR_OP_CONCAT] == 0, "fold counts");
        CHECK(last->ops_after[IR_OP_WEIGHT] < last->ops_before[IR_OP_WEIGHT], "final dce removed weights");
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        passes_report_write(&r, f);
        fclose(f);
        CHECK(text && strstr(text, "fuse_linear: ") && strstr(text, "matmul -14") && strstr(text, "linear +14"),
              "report text:\n%s", text ? text : "");
        free(text);
        ir_graph_free(&g);
    }
    tp_free(&t);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_ir_fused_infer);
    CHECK_CASE(test_ir_clone_and_dump);
    CHECK_CASE(test_dce);
    CHECK_CASE(test_fuse_linear_epilogues);
    CHECK_CASE(test_fuse_linear_extra_consumers);
    CHECK_CASE(test_merge_qkv);
    CHECK_CASE(test_merge_qkv_many);
    CHECK_CASE(test_fuse_attention_variants);
    CHECK_CASE(test_fuse_attention_negative);
    CHECK_CASE(test_fuse_add_ln_forms);
    CHECK_CASE(test_fuse_embed_ln_trees);
    CHECK_CASE(test_fuse_embed_ln_negative);
    CHECK_CASE(test_fold_constants);
    CHECK_CASE(test_fuse_pool_normalize);
    CHECK_CASE(test_each_pass_on_fixtures);
    CHECK_CASE(test_pipeline_tiny_bert);
    CHECK_CASE(test_pipeline_tiny_bert_prefixed);
    CHECK_CASE(test_pipeline_tiny_bert_relu);
    CHECK_CASE(test_pipeline_tiny_bert_tanh);
    CHECK_CASE(test_pipeline_minilm);
    CHECK_CASE(test_pipeline_variants);
    CHECK_CASE(test_pipeline_families);
    CHECK_CASE(test_passes_report);
    return check_summary();
}
