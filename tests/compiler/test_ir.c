/*
 * test_ir — the graph container and shape inference.
 *
 * Graphs are built by hand with ir_graph_add (leaves given dtype and shape
 * directly, as the loader would), with sizes drawn at random each run, and
 * the expected shapes are written from the op table of docs/model-yaml.md,
 * not from ir.c.  Every inference rule has an error case that breaks
 * exactly that rule on a node with a random line:col, and the message must
 * carry the file:line:col, the node's name and the words of the rule.
 */
#include <stdio.h>

#include "check.h"
#include "ir.h"

#define T_FILE "model.yaml"

/* A source text with enough lines that any line:col we set has a caret. */
static char t_src[64 * 200];
static size_t t_src_len;

static void t_src_init(void) {
    if (t_src_len) return;
    for (int l = 1; l <= 200; l++)
        t_src_len += (size_t)snprintf(t_src + t_src_len, sizeof t_src - t_src_len,
                                      "  - {op: something, out: node%03d, x: a_fairly_long_tail}\n", l);
}

static int t_input(ir_graph *g, const char *name) {
    int i = ir_graph_add(g, IR_OP_INPUT, name, NULL, 0);
    ir_node *n = &g->nodes[i];
    n->dtype = IR_DTYPE_I32;
    n->ndim = 1;
    n->shape[0] = IR_DIM_SEQ;
    n->line = (int)check_rng_range(1, 150);
    n->col = (int)check_rng_range(1, 40);
    return i;
}

static int t_weight(ir_graph *g, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1) {
    int i = ir_graph_add(g, IR_OP_WEIGHT, name, NULL, 0);
    ir_node *n = &g->nodes[i];
    n->dtype = dt;
    n->ndim = ndim;
    n->shape[0] = d0;
    n->shape[1] = d1;
    char w[128];
    snprintf(w, sizeof w, "file.%s", name);
    n->weight = strdup(w);
    n->line = (int)check_rng_range(1, 150);
    n->col = (int)check_rng_range(1, 40);
    return i;
}

static ir_dtype t_float_dtype(void) {
    static const ir_dtype f[3] = {IR_DTYPE_F32, IR_DTYPE_F16, IR_DTYPE_BF16};
    return f[check_rng_range(0, 2)];
}

/* An op node; a, b, c are source indices, -1 for none. */
static int t_op(ir_graph *g, ir_op op, const char *name, int a, int b, int c) {
    int src[3] = {a, b, c}, n = 0;
    while (n < 3 && src[n] >= 0) n++;
    int i = ir_graph_add(g, op, name, src, n);
    g->nodes[i].line = (int)check_rng_range(1, 150);
    g->nodes[i].col = (int)check_rng_range(1, 40);
    return i;
}

static void t_set_shape(ir_node *n, int ndim, const int64_t *dims) {
    n->ndim = ndim;
    for (int d = 0; d < ndim; d++) n->shape[d] = dims[d];
}

static void t_set_perm(ir_node *n, int len, const int *perm) {
    n->ndim = len;  /* the loader leaves the perm's length in ndim */
    for (int d = 0; d < len; d++) n->perm[d] = perm[d];
}

static int t_shape_is(const ir_node *n, int ndim, const int64_t *dims) {
    if (n->ndim != ndim) return 0;
    for (int d = 0; d < ndim; d++)
        if (n->shape[d] != dims[d]) return 0;
    return 1;
}

#define S IR_DIM_SEQ

#define CHECK_SHAPE(g, idx, dt, ...)                                                    \
    do {                                                                                \
        const int64_t want_[] = {__VA_ARGS__};                                          \
        const ir_node *n_ = &(g)->nodes[idx];                                           \
        char b_[96];                                                                    \
        CHECK(t_shape_is(n_, (int)(sizeof want_ / sizeof want_[0]), want_),             \
              "%s: shape %s", n_->name, ir_shape_str(n_, b_, sizeof b_));               \
        CHECK(n_->dtype == (dt), "%s: dtype %s, expected %s", n_->name,                 \
              ir_dtype_name(n_->dtype), ir_dtype_name(dt));                             \
    } while (0)

static int t_infer(ir_graph *g, diag *d) {
    t_src_init();
    diag_init(d);
    return ir_graph_infer(g, T_FILE, t_src, t_src_len, d);
}

/* ---- successful inference ------------------------------------------------ */

static void test_infer_embeddings(void) {
    int64_t V = check_rng_range(5, 300), P = check_rng_range(8, 64), D = check_rng_range(2, 200);
    ir_graph g;
    ir_graph_init(&g);
    int ids = t_input(&g, "input_ids");
    int types = t_input(&g, "token_type_ids");
    int wt = t_weight(&g, "word", t_float_dtype(), 2, V, D);
    int pt = t_weight(&g, "pos", t_float_dtype(), 2, P, D);
    int tt = t_weight(&g, "type", t_float_dtype(), 2, 2, D);
    int gam = t_weight(&g, "gamma", t_float_dtype(), 1, D, 0);
    int bet = t_weight(&g, "beta", t_float_dtype(), 1, D, 0);
    int pos = t_op(&g, IR_OP_ARANGE, "position_ids", ids, -1, -1);
    int we = t_op(&g, IR_OP_GATHER, "word_emb", wt, ids, -1);
    int pe = t_op(&g, IR_OP_GATHER, "pos_emb", pt, pos, -1);
    int te = t_op(&g, IR_OP_GATHER, "type_emb", tt, types, -1);
    int s0 = t_op(&g, IR_OP_ADD, "sum0", we, pe, -1);
    int s1 = t_op(&g, IR_OP_ADD, "sum", s0, te, -1);
    int h0 = t_op(&g, IR_OP_LAYER_NORM, "h0", s1, gam, bet);
    g.nodes[h0].eps = 1e-12f;
    ir_dtype wdt = g.nodes[wt].dtype;
    diag d;
    CHECK(t_infer(&g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&g, pos, IR_DTYPE_I32, S);
    CHECK_SHAPE(&g, we, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&g, pe, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&g, te, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&g, s1, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&g, h0, IR_DTYPE_F32, S, D);
    /* Weights keep the type they are stored in. */
    CHECK_SHAPE(&g, wt, wdt, V, D);
    CHECK(ir_graph_find(&g, "type_emb") == te, "find type_emb");
    CHECK(ir_graph_find(&g, "nope") == -1, "find nope");
    ir_graph_free(&g);
}

static void test_infer_attention(void) {
    int64_t NH = check_rng_range(1, 8), HD = check_rng_range(1, 24), H = NH * HD;
    ir_graph g;
    ir_graph_init(&g);
    int ids = t_input(&g, "input_ids");
    int am = t_input(&g, "attention_mask");
    int tab = t_weight(&g, "table", t_float_dtype(), 2, 50, H);
    int wq = t_weight(&g, "wq", t_float_dtype(), 2, H, H);
    int bq = t_weight(&g, "bq", t_float_dtype(), 1, H, 0);
    int h = t_op(&g, IR_OP_GATHER, "h", tab, ids, -1);
    int qm = t_op(&g, IR_OP_MATMUL, "q_mm", h, wq, -1);
    int q = t_op(&g, IR_OP_BIAS_ADD, "q", qm, bq, -1);
    int qr = t_op(&g, IR_OP_RESHAPE, "q_r", q, -1, -1);
    t_set_shape(&g.nodes[qr], 3, (int64_t[]){S, NH, HD});
    int qh = t_op(&g, IR_OP_TRANSPOSE, "q_h", qr, -1, -1);
    t_set_perm(&g.nodes[qh], 3, (int[]){1, 0, 2});
    int sc = t_op(&g, IR_OP_BATCHED_MATMUL, "scores", qh, qh, -1);
    g.nodes[sc].transpose_b = 1;
    int ss = t_op(&g, IR_OP_SCALE, "scores_s", sc, -1, -1);
    g.nodes[ss].scale = 0.25f;
    int sm = t_op(&g, IR_OP_MASK, "scores_m", ss, am, -1);
    int pr = t_op(&g, IR_OP_SOFTMAX, "probs", sm, -1, -1);
    int cx = t_op(&g, IR_OP_BATCHED_MATMUL, "ctx_h", pr, qh, -1);
    int ct = t_op(&g, IR_OP_TRANSPOSE, "ctx_t", cx, -1, -1);
    t_set_perm(&g.nodes[ct], 3, (int[]){1, 0, 2});
    int c2 = t_op(&g, IR_OP_RESHAPE, "ctx", ct, -1, -1);
    t_set_shape(&g.nodes[c2], 2, (int64_t[]){S, H});
    int ac = t_op(&g, IR_OP_ACTIVATION, "act", c2, -1, -1);
    g.nodes[ac].act = (ir_act)check_rng_range(0, IR_ACT_COUNT - 1);
    diag d;
    CHECK(t_infer(&g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&g, qm, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&g, q, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&g, qr, IR_DTYPE_F32, S, NH, HD);
    CHECK_SHAPE(&g, qh, IR_DTYPE_F32, NH, S, HD);
    CHECK_SHAPE(&g, sc, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&g, ss, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&g, sm, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&g, pr, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&g, cx, IR_DTYPE_F32, NH, S, HD);
    CHECK_SHAPE(&g, ct, IR_DTYPE_F32, S, NH, HD);
    CHECK_SHAPE(&g, c2, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&g, ac, IR_DTYPE_F32, S, H);
    ir_graph_free(&g);
}

/* matmul to a different width, batched matmul without transpose_b and with
 * unequal M/K/N, a 4-D transpose, slices and the pooler's reshape. */
static void test_infer_shapes_misc(void) {
    int64_t K = check_rng_range(1, 64), N = check_rng_range(1, 64);
    int64_t B = check_rng_range(1, 5), M = check_rng_range(1, 9), K2 = check_rng_range(1, 9);
    int64_t N2 = check_rng_range(1, 9);
    ir_graph g;
    ir_graph_init(&g);
    int ids = t_input(&g, "input_ids");
    int tab = t_weight(&g, "table", IR_DTYPE_F32, 2, 10, K);
    int w = t_weight(&g, "w", IR_DTYPE_BF16, 2, N, K);
    int x = t_op(&g, IR_OP_GATHER, "x", tab, ids, -1);
    int y = t_op(&g, IR_OP_MATMUL, "y", x, w, -1);
    int cls = t_op(&g, IR_OP_SLICE, "cls", y, -1, -1);
    g.nodes[cls].axis = 0;
    g.nodes[cls].start = 0;
    g.nodes[cls].len = 1;
    int64_t st = check_rng_range(0, N - 1);
    int cols = t_op(&g, IR_OP_SLICE, "cols", y, -1, -1);
    g.nodes[cols].axis = 1;
    g.nodes[cols].start = st;
    g.nodes[cols].len = check_rng_range(1, N - st);
    int pooled = t_op(&g, IR_OP_RESHAPE, "pooled", cls, -1, -1);
    t_set_shape(&g.nodes[pooled], 1, (int64_t[]){N});
    /* Batched operands made by reshaping 2-D weights. */
    int t3 = t_weight(&g, "t3", IR_DTYPE_F16, 2, B * M, K2);
    int t4 = t_weight(&g, "t4", IR_DTYPE_F32, 2, B * K2, N2);
    int a3 = t_op(&g, IR_OP_RESHAPE, "a3", t3, -1, -1);
    t_set_shape(&g.nodes[a3], 3, (int64_t[]){B, M, K2});
    int b3 = t_op(&g, IR_OP_RESHAPE, "b3", t4, -1, -1);
    t_set_shape(&g.nodes[b3], 3, (int64_t[]){B, K2, N2});
    int bmm = t_op(&g, IR_OP_BATCHED_MATMUL, "bmm", a3, b3, -1);
    int r4 = t_op(&g, IR_OP_RESHAPE, "r4", bmm, -1, -1);
    t_set_shape(&g.nodes[r4], 4, (int64_t[]){B, 1, M, N2});
    int tr4 = t_op(&g, IR_OP_TRANSPOSE, "tr4", r4, -1, -1);
    t_set_perm(&g.nodes[tr4], 4, (int[]){3, 1, 0, 2});
    diag d;
    CHECK(t_infer(&g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&g, y, IR_DTYPE_F32, S, N);
    CHECK_SHAPE(&g, cls, IR_DTYPE_F32, 1, N);
    CHECK_SHAPE(&g, cols, IR_DTYPE_F32, S, g.nodes[cols].len);
    CHECK_SHAPE(&g, pooled, IR_DTYPE_F32, N);
    CHECK_SHAPE(&g, a3, IR_DTYPE_F32, B, M, K2);
    CHECK_SHAPE(&g, bmm, IR_DTYPE_F32, B, M, N2);
    CHECK_SHAPE(&g, tr4, IR_DTYPE_F32, N2, 1, B, M);
    ir_graph_free(&g);
}

/* Data movement on ids keeps them int32; a slice of an S axis is legal at
 * any start (checked at run time). */
static void test_infer_int_movement(void) {
    ir_graph g;
    ir_graph_init(&g);
    int ids = t_input(&g, "input_ids");
    int r = t_op(&g, IR_OP_RESHAPE, "r", ids, -1, -1);
    t_set_shape(&g.nodes[r], 2, (int64_t[]){1, S});
    int t = t_op(&g, IR_OP_TRANSPOSE, "t", r, -1, -1);
    t_set_perm(&g.nodes[t], 2, (int[]){1, 0});
    int sl = t_op(&g, IR_OP_SLICE, "sl", t, -1, -1);
    g.nodes[sl].axis = 0;
    g.nodes[sl].start = check_rng_range(0, 1000);
    g.nodes[sl].len = check_rng_range(1, 1000);
    int ar = t_op(&g, IR_OP_ARANGE, "ar", t, -1, -1);
    diag d;
    CHECK(t_infer(&g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&g, r, IR_DTYPE_I32, 1, S);
    CHECK_SHAPE(&g, t, IR_DTYPE_I32, S, 1);
    CHECK_SHAPE(&g, sl, IR_DTYPE_I32, g.nodes[sl].len, 1);
    CHECK_SHAPE(&g, ar, IR_DTYPE_I32, S);
    ir_graph_free(&g);
}

/* ---- names, numbers, dump ------------------------------------------------ */

static void test_names(void) {
    static const char *const ops[IR_OP_COUNT] = {
        "input", "weight", "arange", "gather", "add", "bias_add", "layer_norm", "matmul",
        "activation", "reshape", "transpose", "batched_matmul", "scale", "mask", "softmax",
        "slice", "pool", "l2_normalize", "const", "concat", "linear", "attention", "add_ln", "embed_ln"};
    for (int i = 0; i < IR_OP_COUNT; i++)
        CHECK(strcmp(ir_op_name((ir_op)i), ops[i]) == 0, "op %d is '%s'", i, ir_op_name((ir_op)i));
    CHECK(strcmp(ir_act_name(IR_ACT_GELU_ERF), "gelu") == 0, "gelu");
    CHECK(strcmp(ir_act_name(IR_ACT_GELU_TANH), "gelu_tanh") == 0, "gelu_tanh");
    CHECK(strcmp(ir_act_name(IR_ACT_RELU), "relu") == 0, "relu");
    CHECK(strcmp(ir_act_name(IR_ACT_TANH), "tanh") == 0, "tanh");
    CHECK(strcmp(ir_dtype_name(IR_DTYPE_F32), "float32") == 0, "f32");
    CHECK(strcmp(ir_dtype_name(IR_DTYPE_F16), "float16") == 0, "f16");
    CHECK(strcmp(ir_dtype_name(IR_DTYPE_BF16), "bfloat16") == 0, "bf16");
    CHECK(strcmp(ir_dtype_name(IR_DTYPE_I32), "int32") == 0, "i32");
    CHECK(ir_op_name(IR_OP_COUNT) != NULL && ir_act_name(IR_ACT_COUNT) != NULL &&
              ir_dtype_name(IR_DTYPE_COUNT) != NULL, "out-of-range names are not NULL");
}

static void test_shape_str_and_numel(void) {
    ir_node n;
    memset(&n, 0, sizeof n);
    int64_t a = check_rng_range(1, 99999), b = check_rng_range(1, 99);
    n.ndim = 3;
    n.shape[0] = IR_DIM_SEQ;
    n.shape[1] = a;
    n.shape[2] = b;
    char buf[96], want[96];
    snprintf(want, sizeof want, "[S, %lld, %lld]", (long long)a, (long long)b);
    CHECK(strcmp(ir_shape_str(&n, buf, sizeof buf), want) == 0, "'%s' vs '%s'", buf, want);
    int64_t s = check_rng_range(1, 512);
    CHECK(ir_node_numel(&n, s) == s * a * b, "numel");
    CHECK(ir_dim_bind(IR_DIM_SEQ, s) == s && ir_dim_bind(a, s) == a, "dim_bind");
    n.ndim = 0;
    CHECK(strcmp(ir_shape_str(&n, buf, sizeof buf), "[]") == 0, "scalar '%s'", buf);
    CHECK(ir_node_numel(&n, s) == 1, "scalar numel");
    /* A short buffer truncates, never overflows. */
    n.ndim = 3;
    char tiny[6];
    ir_shape_str(&n, tiny, sizeof tiny);
    CHECK(strlen(tiny) < sizeof tiny, "truncated '%s'", tiny);
}

static void test_graph_grow_and_outputs(void) {
    ir_graph g;
    ir_graph_init(&g);
    int count = (int)check_rng_range(100, 400);
    char name[32];
    for (int i = 0; i < count; i++) {
        snprintf(name, sizeof name, "n%d", i);
        int src[2] = {i - 1, i / 2};
        int idx = ir_graph_add(&g, i ? IR_OP_ADD : IR_OP_INPUT, name, src, i ? 2 : 0);
        CHECK(idx == i, "add returned %d for node %d", idx, i);
    }
    CHECK(g.count == count, "count %d", g.count);
    int probe = (int)check_rng_range(1, count - 1);
    snprintf(name, sizeof name, "n%d", probe);
    CHECK(ir_graph_find(&g, name) == probe, "find %s", name);
    CHECK(g.nodes[probe].nsrc == 2 && g.nodes[probe].src[0] == probe - 1 &&
              g.nodes[probe].src[1] == probe / 2, "sources of %s", name);
    CHECK(ir_graph_add_output(&g, "first", 0) == 0, "output 0");
    CHECK(ir_graph_add_output(&g, "last", count - 1) == 1, "output 1");
    CHECK(g.noutputs == 2 && strcmp(g.outputs[1].name, "last") == 0 &&
              g.outputs[1].node == count - 1, "outputs recorded");
    CHECK(ir_graph_add(&g, IR_OP_ADD, "bad", (int[]){0, 0, 0, 0, 0}, IR_MAX_SRCS + 1) == -1,
          "too many sources refused");
    /* Names and strings are owned (ASan reports a leak otherwise). */
    g.name = strdup("x");
    g.tokenizer.cls_token = strdup("[CLS]");
    ir_graph_free(&g);
    CHECK(g.count == 0 && g.nodes == NULL, "freed graph is empty");
}

static void test_dump(void) {
    ir_graph g;
    ir_graph_init(&g);
    int64_t H = check_rng_range(2, 500);
    int ids = t_input(&g, "input_ids");
    int tab = t_weight(&g, "emb.table", IR_DTYPE_F16, 2, 30, H);
    int x = t_op(&g, IR_OP_GATHER, "word_emb", tab, ids, -1);
    int ln = t_op(&g, IR_OP_SCALE, "scaled", x, -1, -1);
    g.nodes[ln].scale = 0.125f;
    ir_graph_add_output(&g, "last_hidden_state", ln);
    diag d;
    CHECK(t_infer(&g, &d) == 0, "infer: %s", d.text);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_graph_dump(&g, f);
    fclose(f);
    char want[160];
    snprintf(want, sizeof want, "word_emb = gather(emb.table, input_ids) float32 [S, %lld]",
             (long long)H);
    CHECK(text && strstr(text, want), "dump lacks '%s':\n%s", want, text ? text : "");
    snprintf(want, sizeof want, "float16 [30, %lld] weight=file.emb.table", (long long)H);
    CHECK(text && strstr(text, want), "dump lacks '%s':\n%s", want, text ? text : "");
    CHECK(text && strstr(text, "by=0.125"), "dump lacks the scale");
    CHECK(text && strstr(text, "output last_hidden_state = scaled"), "dump lacks the output");
    int lines = 0;
    for (size_t i = 0; text && i < len; i++) lines += text[i] == '\n';
    CHECK(lines == g.count + g.noutputs, "%d lines for %d nodes", lines, g.count);
    free(text);
    (void)x;
    ir_graph_free(&g);
}

/* ---- errors: one case per rule ------------------------------------------- */

/*
 * Run inference and demand an error at the node `bad` that mentions its
 * name, its place and the given phrase.
 */
static void t_expect_error(ir_graph *g, int bad, const char *phrase) {
    diag d;
    int rc = t_infer(g, &d);
    const ir_node *n = &g->nodes[bad];
    char where[64], quoted[160];
    snprintf(where, sizeof where, T_FILE ":%d:%d: ", n->line, n->col);
    snprintf(quoted, sizeof quoted, "'%s'", n->name);
    CHECK(rc == -1, "node '%s': no error for '%s'", n->name, phrase);
    if (rc != -1) return;
    CHECK(d.code == DIAG_CODE_INPUT, "code %d", (int)d.code);
    CHECK(strncmp(d.text, where, strlen(where)) == 0, "'%s' does not start with '%s'", d.text, where);
    CHECK(strstr(d.text, quoted) != NULL, "'%s' does not name %s", d.text, quoted);
    CHECK(strstr(d.text, phrase) != NULL, "'%s' lacks '%s'", d.text, phrase);
    CHECK(strchr(d.text, '^') != NULL, "'%s' has no caret", d.text);
}

/* The usual start of an error graph: ids, mask and x = gather(table, ids) [S, H]. */
typedef struct t_base {
    ir_graph g;
    int ids, mask, table, x;
    int64_t H;
} t_base;

static void t_base_init(t_base *b) {
    ir_graph_init(&b->g);
    b->H = check_rng_range(4, 64);
    b->ids = t_input(&b->g, "input_ids");
    b->mask = t_input(&b->g, "attention_mask");
    b->table = t_weight(&b->g, "table", t_float_dtype(), 2, 20, b->H);
    b->x = t_op(&b->g, IR_OP_GATHER, "x", b->table, b->ids, -1);
}

static void test_error_order_and_arity(void) {
    t_base b;
    t_base_init(&b);
    int y = t_op(&b.g, IR_OP_ADD, "y", b.x, b.x, -1);
    int z = t_op(&b.g, IR_OP_SCALE, "z", y, -1, -1);
    b.g.nodes[y].src[1] = z;  /* a forward reference */
    t_expect_error(&b.g, y, "does not come before it");
    ir_graph_free(&b.g);

    t_base_init(&b);
    int w = t_op(&b.g, IR_OP_ADD, "w", b.x, -1, -1);
    t_expect_error(&b.g, w, "has 1 operand (expected 2)");
    ir_graph_free(&b.g);
}

static void test_error_leaves(void) {
    ir_graph g;
    ir_graph_init(&g);
    int ids = t_input(&g, "input_ids");
    g.nodes[ids].dtype = IR_DTYPE_F32;
    t_expect_error(&g, ids, "expected int32");
    ir_graph_free(&g);

    ir_graph_init(&g);
    int w = t_weight(&g, "w", IR_DTYPE_I32, 2, 3, 3);
    t_expect_error(&g, w, "expected float32, float16 or bfloat16");
    ir_graph_free(&g);

    ir_graph_init(&g);
    w = t_weight(&g, "w", IR_DTYPE_F32, 2, 3, IR_DIM_SEQ);
    t_expect_error(&g, w, "invalid dimension 1");
    ir_graph_free(&g);
}

static void test_error_arange(void) {
    t_base b;
    t_base_init(&b);
    int t = t_op(&b.g, IR_OP_TRANSPOSE, "t", b.x, -1, -1);
    t_set_perm(&b.g.nodes[t], 2, (int[]){1, 0});
    int a = t_op(&b.g, IR_OP_ARANGE, "pos", t, -1, -1);
    char want[96];
    snprintf(want, sizeof want, "like 't' is [%lld, S] (expected [S, ...])", (long long)b.H);
    t_expect_error(&b.g, a, want);
    ir_graph_free(&b.g);
}

static void test_error_gather(void) {
    t_base b;
    t_base_init(&b);
    int g1 = t_op(&b.g, IR_OP_GATHER, "g1", b.x, b.x, -1);  /* index is float */
    t_expect_error(&b.g, g1, "index 'x' is float32 (expected int32)");
    ir_graph_free(&b.g);

    t_base_init(&b);
    int v = t_weight(&b.g, "vec", IR_DTYPE_F32, 1, 7, 0);
    int g2 = t_op(&b.g, IR_OP_GATHER, "g2", v, b.ids, -1);
    t_expect_error(&b.g, g2, "table 'vec' is [7] (expected a 2-D table [V, D])");
    ir_graph_free(&b.g);

    t_base_init(&b);
    int r = t_op(&b.g, IR_OP_RESHAPE, "r", b.ids, -1, -1);
    t_set_shape(&b.g.nodes[r], 2, (int64_t[]){S, 1});
    int g3 = t_op(&b.g, IR_OP_GATHER, "g3", b.table, r, -1);
    t_expect_error(&b.g, g3, "index 'r' is [S, 1] (expected a 1-D index [S])");
    ir_graph_free(&b.g);
}

static void test_error_add(void) {
    t_base b;
    t_base_init(&b);
    int other = t_weight(&b.g, "other", IR_DTYPE_F32, 2, 20, b.H + 1);
    int x2 = t_op(&b.g, IR_OP_GATHER, "x2", other, b.ids, -1);
    int a = t_op(&b.g, IR_OP_ADD, "sum", b.x, x2, -1);
    char want[128];
    snprintf(want, sizeof want, "a 'x' is [S, %lld] but b 'x2' is [S, %lld] (expected the same shape)",
             (long long)b.H, (long long)b.H + 1);
    t_expect_error(&b.g, a, want);
    ir_graph_free(&b.g);

    t_base_init(&b);
    int a2 = t_op(&b.g, IR_OP_ADD, "sum2", b.x, b.ids, -1);
    t_expect_error(&b.g, a2, "b 'input_ids' is int32 (expected a floating-point tensor)");
    ir_graph_free(&b.g);
}

static void test_error_bias_add(void) {
    t_base b;
    t_base_init(&b);
    int64_t wrong = b.H + check_rng_range(1, 5);
    int bias = t_weight(&b.g, "bias", t_float_dtype(), 1, wrong, 0);
    int y = t_op(&b.g, IR_OP_BIAS_ADD, "y", b.x, bias, -1);
    char want[128];
    snprintf(want, sizeof want, "bias 'bias' is [%lld] but x 'x' is [S, %lld] (expected [%lld])",
             (long long)wrong, (long long)b.H, (long long)b.H);
    t_expect_error(&b.g, y, want);
    ir_graph_free(&b.g);
}

static void test_error_layer_norm(void) {
    for (int which = 0; which < 3; which++) {
        t_base b;
        t_base_init(&b);
        int gam = t_weight(&b.g, "gamma", t_float_dtype(), which == 0 ? 2 : 1, b.H, b.H);
        int bet = t_weight(&b.g, "beta", t_float_dtype(), 1, which == 1 ? b.H - 1 : b.H, 0);
        int ln = t_op(&b.g, IR_OP_LAYER_NORM, "ln", b.x, gam, bet);
        b.g.nodes[ln].eps = which == 2 ? -(float)check_rng_uniform() : 1e-5f;
        char want[128];
        if (which == 0)
            snprintf(want, sizeof want, "gamma 'gamma' is [%lld, %lld] but x 'x' is [S, %lld] (expected [%lld])",
                     (long long)b.H, (long long)b.H, (long long)b.H, (long long)b.H);
        else if (which == 1)
            snprintf(want, sizeof want, "beta 'beta' is [%lld]", (long long)b.H - 1);
        else
            snprintf(want, sizeof want, "(expected a positive number)");
        t_expect_error(&b.g, ln, want);
        ir_graph_free(&b.g);
    }
}

static void test_error_matmul(void) {
    t_base b;
    t_base_init(&b);
    int64_t N = check_rng_range(1, 100), K = b.H + check_rng_range(1, 9);
    int w = t_weight(&b.g, "encoder.layer.0.attention.self.query.weight", t_float_dtype(), 2, N, K);
    int q = t_op(&b.g, IR_OP_MATMUL, "q_mm", b.x, w, -1);
    char want[256];
    snprintf(want, sizeof want,
             "matmul 'q_mm': weight 'encoder.layer.0.attention.self.query.weight' is [%lld, %lld] but x 'x' is [S, %lld] (expected [N, %lld])",
             (long long)N, (long long)K, (long long)b.H, (long long)b.H);
    t_expect_error(&b.g, q, want);
    ir_graph_free(&b.g);

    t_base_init(&b);
    int r = t_op(&b.g, IR_OP_RESHAPE, "r3", b.x, -1, -1);
    t_set_shape(&b.g.nodes[r], 3, (int64_t[]){S, 1, b.H});
    int w2 = t_weight(&b.g, "w", IR_DTYPE_F32, 2, 3, b.H);
    int q2 = t_op(&b.g, IR_OP_MATMUL, "m2", r, w2, -1);
    t_expect_error(&b.g, q2, "(expected a 2-D [M, K])");
    ir_graph_free(&b.g);
}

static void test_error_elementwise(void) {
    t_base b;
    t_base_init(&b);
    int a = t_op(&b.g, IR_OP_ACTIVATION, "act", b.x, -1, -1);
    b.g.nodes[a].act = IR_ACT_COUNT;
    t_expect_error(&b.g, a, "unknown activation");
    ir_graph_free(&b.g);

    static const ir_op ops[3] = {IR_OP_ACTIVATION, IR_OP_SCALE, IR_OP_SOFTMAX};
    for (int k = 0; k < 3; k++) {
        t_base_init(&b);
        int e = t_op(&b.g, ops[k], "elt", b.ids, -1, -1);
        t_expect_error(&b.g, e, "x 'input_ids' is int32 (expected a floating-point tensor)");
        ir_graph_free(&b.g);
    }
}

static void test_error_reshape(void) {
    t_base b;
    t_base_init(&b);
    int r = t_op(&b.g, IR_OP_RESHAPE, "r", b.x, -1, -1);
    t_set_shape(&b.g.nodes[r], 3, (int64_t[]){S, 2, b.H});
    char want[160];
    snprintf(want, sizeof want, "x 'x' is [S, %lld] but the shape is [S, 2, %lld] (expected the same number of elements)",
             (long long)b.H, (long long)b.H);
    t_expect_error(&b.g, r, want);
    ir_graph_free(&b.g);

    /* Same element count for no S but S gone: refused. */
    t_base_init(&b);
    r = t_op(&b.g, IR_OP_RESHAPE, "flat", b.x, -1, -1);
    t_set_shape(&b.g.nodes[r], 1, (int64_t[]){b.H});
    t_expect_error(&b.g, r, "S must stay a whole dimension");
    ir_graph_free(&b.g);

    t_base_init(&b);
    r = t_op(&b.g, IR_OP_RESHAPE, "zero", b.x, -1, -1);
    t_set_shape(&b.g.nodes[r], 3, (int64_t[]){S, 0, b.H});
    t_expect_error(&b.g, r, "invalid dimension 1");
    ir_graph_free(&b.g);
}

static void test_error_transpose(void) {
    t_base b;
    t_base_init(&b);
    int t = t_op(&b.g, IR_OP_TRANSPOSE, "t", b.x, -1, -1);
    int dup = (int)check_rng_range(0, 1);
    t_set_perm(&b.g.nodes[t], 2, (int[]){dup, dup});
    char want[128];
    snprintf(want, sizeof want, "perm [%d, %d] is not a permutation of 0..1", dup, dup);
    t_expect_error(&b.g, t, want);
    ir_graph_free(&b.g);

    /* A perm of the wrong length (the loader keeps its length in ndim). */
    t_base_init(&b);
    t = t_op(&b.g, IR_OP_TRANSPOSE, "t3", b.x, -1, -1);
    t_set_perm(&b.g.nodes[t], 3, (int[]){1, 0, 2});
    snprintf(want, sizeof want, "perm [1, 0, 2] has 3 entries but x 'x' is [S, %lld] (expected 2)",
             (long long)b.H);
    t_expect_error(&b.g, t, want);
    ir_graph_free(&b.g);

    t_base_init(&b);
    t = t_op(&b.g, IR_OP_TRANSPOSE, "t2", b.x, -1, -1);
    t_set_perm(&b.g.nodes[t], 2, (int[]){0, 2});
    t_expect_error(&b.g, t, "perm [0, 2] is not a permutation");
    ir_graph_free(&b.g);
}

static void test_error_batched_matmul(void) {
    for (int which = 0; which < 4; which++) {
        t_base b;
        t_base_init(&b);
        int64_t B = check_rng_range(1, 4), K = check_rng_range(1, 6);
        int64_t Bb = which == 0 ? B + 1 : B, Kb = which == 1 || which == 2 ? K + 1 : K;
        int a = t_weight(&b.g, "wa", IR_DTYPE_F32, 2, B * 3, K);
        int bw = t_weight(&b.g, "wb", IR_DTYPE_F32, 2, Bb * 5, Kb);
        int a3 = t_op(&b.g, IR_OP_RESHAPE, "a3", a, -1, -1);
        t_set_shape(&b.g.nodes[a3], 3, (int64_t[]){B, 3, K});
        int b3 = t_op(&b.g, IR_OP_RESHAPE, "b3", bw, -1, -1);
        /* transpose_b: b is [B, N=5, K]; without it [B, K, N=5]. */
        int tb = which != 2;
        if (tb) t_set_shape(&b.g.nodes[b3], 3, (int64_t[]){Bb, 5, Kb});
        else t_set_shape(&b.g.nodes[b3], 3, (int64_t[]){Bb, Kb, 5});
        int src_b = b3;
        if (which == 3) src_b = b.x;  /* 2-D b */
        int m = t_op(&b.g, IR_OP_BATCHED_MATMUL, "bmm", a3, src_b, -1);
        b.g.nodes[m].transpose_b = tb;
        char want[160];
        if (which == 3)
            snprintf(want, sizeof want, "b 'x' is [S, %lld] (expected a 3-D [B, N, K])", (long long)b.H);
        else if (tb)
            snprintf(want, sizeof want, "b 'b3' is [%lld, 5, %lld] but a 'a3' is [%lld, 3, %lld] (expected [%lld, N, %lld] since transpose_b is true)",
                     (long long)Bb, (long long)Kb, (long long)B, (long long)K, (long long)B, (long long)K);
        else
            snprintf(want, sizeof want, "b 'b3' is [%lld, %lld, 5] but a 'a3' is [%lld, 3, %lld] (expected [%lld, %lld, N] since transpose_b is false)",
                     (long long)Bb, (long long)Kb, (long long)B, (long long)K, (long long)B, (long long)K);
        t_expect_error(&b.g, m, want);
        ir_graph_free(&b.g);
    }
}

static void test_error_mask(void) {
    t_base b;
    t_base_init(&b);
    int m = t_op(&b.g, IR_OP_MASK, "m", b.x, b.mask, -1);  /* last dim H, mask [S] */
    char want[128];
    snprintf(want, sizeof want, "mask 'attention_mask' is [S] but x 'x' is [S, %lld] (expected [%lld])",
             (long long)b.H, (long long)b.H);
    t_expect_error(&b.g, m, want);
    ir_graph_free(&b.g);

    t_base_init(&b);
    int t = t_op(&b.g, IR_OP_TRANSPOSE, "xt", b.x, -1, -1);
    t_set_perm(&b.g.nodes[t], 2, (int[]){1, 0});
    m = t_op(&b.g, IR_OP_MASK, "m2", t, t, -1);  /* float mask */
    t_expect_error(&b.g, m, "mask 'xt' is float32 (expected int32)");
    ir_graph_free(&b.g);
}

static void test_error_slice(void) {
    for (int which = 0; which < 4; which++) {
        t_base b;
        t_base_init(&b);
        int s = t_op(&b.g, IR_OP_SLICE, "sl", b.x, -1, -1);
        ir_node *n = &b.g.nodes[s];
        n->axis = 1;
        n->start = 0;
        n->len = 1;
        const char *want = NULL;
        char buf[128];
        switch (which) {
        case 0:
            n->axis = check_rng_range(0, 1) ? 2 : -1;
            want = "is out of range for x 'x'";
            break;
        case 1: n->start = -check_rng_range(1, 5); want = "(expected >= 0)"; break;
        case 2: n->len = -check_rng_range(0, 5); want = "(expected >= 1)"; break;
        default:
            n->start = check_rng_range(0, b.H - 1);
            n->len = b.H - n->start + check_rng_range(1, 3);
            snprintf(buf, sizeof buf, "[%lld, %lld) along axis 1 runs past the end of x 'x'",
                     (long long)n->start, (long long)(n->start + n->len));
            want = buf;
        }
        t_expect_error(&b.g, s, want);
        ir_graph_free(&b.g);
    }
}

static void test_error_bad_output(void) {
    t_base b;
    t_base_init(&b);
    ir_graph_add_output(&b.g, "out", b.g.count + 3);
    diag d;
    CHECK(t_infer(&b.g, &d) == -1, "no error");
    CHECK(strstr(d.text, "output 'out'") != NULL, "'%s'", d.text);
    ir_graph_free(&b.g);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_infer_embeddings);
    CHECK_CASE(test_infer_attention);
    CHECK_CASE(test_infer_shapes_misc);
    CHECK_CASE(test_infer_int_movement);
    CHECK_CASE(test_names);
    CHECK_CASE(test_shape_str_and_numel);
    CHECK_CASE(test_graph_grow_and_outputs);
    CHECK_CASE(test_dump);
    CHECK_CASE(test_error_order_and_arity);
    CHECK_CASE(test_error_leaves);
    CHECK_CASE(test_error_arange);
    CHECK_CASE(test_error_gather);
    CHECK_CASE(test_error_add);
    CHECK_CASE(test_error_bias_add);
    CHECK_CASE(test_error_layer_norm);
    CHECK_CASE(test_error_matmul);
    CHECK_CASE(test_error_elementwise);
    CHECK_CASE(test_error_reshape);
    CHECK_CASE(test_error_transpose);
    CHECK_CASE(test_error_batched_matmul);
    CHECK_CASE(test_error_mask);
    CHECK_CASE(test_error_slice);
    CHECK_CASE(test_error_bad_output);
    return check_summary();
}
