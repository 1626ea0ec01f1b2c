/*
 * test_ir — the graph container and shape inference.
 *
 * Graphs are built by hand with the tests' graph builder (support/tgraph.h:
 * leaves given dtype and shape directly, as the loader would, every node at
 * a random line:col), with sizes drawn at random each run, and
 * the expected shapes are written from the op table of docs/model-yaml.md,
 * not from ir.c.  Every inference rule has an error case that breaks
 * exactly that rule on a node with a random line:col, and the message must
 * carry the file:line:col, the node's name and the words of the rule.
 */
#include <stdio.h>

#include "check.h"
#include "ir.h"
#include "tgraph.h"

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

static ir_dtype t_float_dtype(void) {
    static const ir_dtype f[3] = {IR_DTYPE_F32, IR_DTYPE_F16, IR_DTYPE_BF16};
    return f[check_rng_range(0, 2)];
}

/* A graph whose weights are named "file.<node>" in the weights file. */
static void t_init(tgraph *t) {
    tgraph_init(t);
    t->weight_prefix = "file.";
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
    tgraph t;
    t_init(&t);
    int ids = tgraph_input(&t, "input_ids");
    int types = tgraph_input(&t, "token_type_ids");
    int wt = tgraph_weight(&t, "word", t_float_dtype(), 2, V, D);
    int pt = tgraph_weight(&t, "pos", t_float_dtype(), 2, P, D);
    int tt = tgraph_weight(&t, "type", t_float_dtype(), 2, 2, D);
    int gam = tgraph_weight(&t, "gamma", t_float_dtype(), 1, D, 0);
    int bet = tgraph_weight(&t, "beta", t_float_dtype(), 1, D, 0);
    int pos = tgraph_op(&t, IR_OP_ARANGE, "position_ids", ids);
    int we = tgraph_op(&t, IR_OP_GATHER, "word_emb", wt, ids);
    int pe = tgraph_op(&t, IR_OP_GATHER, "pos_emb", pt, pos);
    int te = tgraph_op(&t, IR_OP_GATHER, "type_emb", tt, types);
    int s0 = tgraph_op(&t, IR_OP_ADD, "sum0", we, pe);
    int s1 = tgraph_op(&t, IR_OP_ADD, "sum", s0, te);
    int h0 = tgraph_op(&t, IR_OP_LAYER_NORM, "h0", s1, gam, bet);
    t.g.nodes[h0].eps = 1e-12f;
    ir_dtype wdt = t.g.nodes[wt].dtype;
    diag d;
    CHECK(t_infer(&t.g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&t.g, pos, IR_DTYPE_I32, S);
    CHECK_SHAPE(&t.g, we, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&t.g, pe, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&t.g, te, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&t.g, s1, IR_DTYPE_F32, S, D);
    CHECK_SHAPE(&t.g, h0, IR_DTYPE_F32, S, D);
    /* Weights keep the type they are stored in. */
    CHECK_SHAPE(&t.g, wt, wdt, V, D);
    CHECK(ir_graph_find(&t.g, "type_emb") == te, "find type_emb");
    CHECK(ir_graph_find(&t.g, "nope") == -1, "find nope");
    tgraph_free(&t);
}

static void test_infer_attention(void) {
    int64_t NH = check_rng_range(1, 8), HD = check_rng_range(1, 24), H = NH * HD;
    tgraph t;
    t_init(&t);
    int ids = tgraph_input(&t, "input_ids");
    int am = tgraph_input(&t, "attention_mask");
    int tab = tgraph_weight(&t, "table", t_float_dtype(), 2, 50, H);
    int wq = tgraph_weight(&t, "wq", t_float_dtype(), 2, H, H);
    int bq = tgraph_weight(&t, "bq", t_float_dtype(), 1, H, 0);
    int h = tgraph_op(&t, IR_OP_GATHER, "h", tab, ids);
    int qm = tgraph_op(&t, IR_OP_MATMUL, "q_mm", h, wq);
    int q = tgraph_op(&t, IR_OP_BIAS_ADD, "q", qm, bq);
    int qr = tgraph_reshape(&t, "q_r", q, 3, (int64_t[]){S, NH, HD});
    int qh = tgraph_transpose(&t, "q_h", qr, 3, (int[]){1, 0, 2});
    int sc = tgraph_op(&t, IR_OP_BATCHED_MATMUL, "scores", qh, qh);
    t.g.nodes[sc].transpose_b = 1;
    int ss = tgraph_op(&t, IR_OP_SCALE, "scores_s", sc);
    t.g.nodes[ss].scale = 0.25f;
    int sm = tgraph_op(&t, IR_OP_MASK, "scores_m", ss, am);
    int pr = tgraph_op(&t, IR_OP_SOFTMAX, "probs", sm);
    int cx = tgraph_op(&t, IR_OP_BATCHED_MATMUL, "ctx_h", pr, qh);
    int ct = tgraph_transpose(&t, "ctx_t", cx, 3, (int[]){1, 0, 2});
    int c2 = tgraph_reshape(&t, "ctx", ct, 2, (int64_t[]){S, H});
    int ac = tgraph_op(&t, IR_OP_ACTIVATION, "act", c2);
    t.g.nodes[ac].act = (ir_act)check_rng_range(0, IR_ACT_COUNT - 1);
    diag d;
    CHECK(t_infer(&t.g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&t.g, qm, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&t.g, q, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&t.g, qr, IR_DTYPE_F32, S, NH, HD);
    CHECK_SHAPE(&t.g, qh, IR_DTYPE_F32, NH, S, HD);
    CHECK_SHAPE(&t.g, sc, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&t.g, ss, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&t.g, sm, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&t.g, pr, IR_DTYPE_F32, NH, S, S);
    CHECK_SHAPE(&t.g, cx, IR_DTYPE_F32, NH, S, HD);
    CHECK_SHAPE(&t.g, ct, IR_DTYPE_F32, S, NH, HD);
    CHECK_SHAPE(&t.g, c2, IR_DTYPE_F32, S, H);
    CHECK_SHAPE(&t.g, ac, IR_DTYPE_F32, S, H);
    tgraph_free(&t);
}

/* matmul to a different width, batched matmul without transpose_b and with
 * unequal M/K/N, a 4-D transpose, slices and the pooler's reshape. */
static void test_infer_shapes_misc(void) {
    int64_t K = check_rng_range(1, 64), N = check_rng_range(1, 64);
    int64_t B = check_rng_range(1, 5), M = check_rng_range(1, 9), K2 = check_rng_range(1, 9);
    int64_t N2 = check_rng_range(1, 9);
    tgraph t;
    t_init(&t);
    int ids = tgraph_input(&t, "input_ids");
    int tab = tgraph_weight(&t, "table", IR_DTYPE_F32, 2, 10, K);
    int w = tgraph_weight(&t, "w", IR_DTYPE_BF16, 2, N, K);
    int x = tgraph_op(&t, IR_OP_GATHER, "x", tab, ids);
    int y = tgraph_op(&t, IR_OP_MATMUL, "y", x, w);
    int cls = tgraph_slice(&t, "cls", y, 0, 0, 1);
    int64_t st = check_rng_range(0, N - 1);
    int cols = tgraph_slice(&t, "cols", y, 1, st, check_rng_range(1, N - st));
    int pooled = tgraph_reshape(&t, "pooled", cls, 1, (int64_t[]){N});
    /* Batched operands made by reshaping 2-D weights. */
    int t3 = tgraph_weight(&t, "t3", IR_DTYPE_F16, 2, B * M, K2);
    int t4 = tgraph_weight(&t, "t4", IR_DTYPE_F32, 2, B * K2, N2);
    int a3 = tgraph_reshape(&t, "a3", t3, 3, (int64_t[]){B, M, K2});
    int b3 = tgraph_reshape(&t, "b3", t4, 3, (int64_t[]){B, K2, N2});
    int bmm = tgraph_op(&t, IR_OP_BATCHED_MATMUL, "bmm", a3, b3);
    int r4 = tgraph_reshape(&t, "r4", bmm, 4, (int64_t[]){B, 1, M, N2});
    int tr4 = tgraph_transpose(&t, "tr4", r4, 4, (int[]){3, 1, 0, 2});
    diag d;
    CHECK(t_infer(&t.g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&t.g, y, IR_DTYPE_F32, S, N);
    CHECK_SHAPE(&t.g, cls, IR_DTYPE_F32, 1, N);
    CHECK_SHAPE(&t.g, cols, IR_DTYPE_F32, S, t.g.nodes[cols].len);
    CHECK_SHAPE(&t.g, pooled, IR_DTYPE_F32, N);
    CHECK_SHAPE(&t.g, a3, IR_DTYPE_F32, B, M, K2);
    CHECK_SHAPE(&t.g, bmm, IR_DTYPE_F32, B, M, N2);
    CHECK_SHAPE(&t.g, tr4, IR_DTYPE_F32, N2, 1, B, M);
    tgraph_free(&t);
}

/* Data movement on ids keeps them int32; a slice of an S axis is legal at
 * any start (checked at run time). */
static void test_infer_int_movement(void) {
    tgraph t;
    t_init(&t);
    int ids = tgraph_input(&t, "input_ids");
    int r = tgraph_reshape(&t, "r", ids, 2, (int64_t[]){1, S});
    int tr = tgraph_transpose(&t, "t", r, 2, (int[]){1, 0});
    int sl = tgraph_slice(&t, "sl", tr, 0, check_rng_range(0, 1000), check_rng_range(1, 1000));
    int ar = tgraph_op(&t, IR_OP_ARANGE, "ar", tr);
    diag d;
    CHECK(t_infer(&t.g, &d) == 0, "infer failed: %s", d.text);
    CHECK_SHAPE(&t.g, r, IR_DTYPE_I32, 1, S);
    CHECK_SHAPE(&t.g, tr, IR_DTYPE_I32, S, 1);
    CHECK_SHAPE(&t.g, sl, IR_DTYPE_I32, t.g.nodes[sl].len, 1);
    CHECK_SHAPE(&t.g, ar, IR_DTYPE_I32, S);
    tgraph_free(&t);
}

/* ---- names, numbers, dump ------------------------------------------------ */

static void test_names(void) {
    static const char *const ops[IR_OP_COUNT] = {
        "input", "weight", "arange", "gather", "add", "bias_add", "layer_norm", "matmul",
        "activation", "reshape", "transpose", "batched_matmul", "scale", "mask", "softmax",
        "slice", "pool", "l2_normalize", "pad_positions", "rel_pos_bias", "sinusoid", "const", "concat", "linear",
        "attention", "add_ln", "embed_ln"};
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
    tgraph t;
    t_init(&t);
    int64_t H = check_rng_range(2, 500);
    int ids = tgraph_input(&t, "input_ids");
    int tab = tgraph_weight(&t, "emb.table", IR_DTYPE_F16, 2, 30, H);
    int x = tgraph_op(&t, IR_OP_GATHER, "word_emb", tab, ids);
    int ln = tgraph_op(&t, IR_OP_SCALE, "scaled", x);
    t.g.nodes[ln].scale = 0.125f;
    ir_graph_add_output(&t.g, "last_hidden_state", ln);
    diag d;
    CHECK(t_infer(&t.g, &d) == 0, "infer: %s", d.text);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_graph_dump(&t.g, f);
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
    CHECK(lines == t.g.count + t.g.noutputs, "%d lines for %d nodes", lines, t.g.count);
    free(text);
    (void)x;
    tgraph_free(&t);
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
    tgraph t;
    int ids, mask, table, x;
    int64_t H;
} t_base;

static void t_base_init(t_base *b) {
    t_init(&b->t);
    b->H = check_rng_range(4, 64);
    b->ids = tgraph_input(&b->t, "input_ids");
    b->mask = tgraph_input(&b->t, "attention_mask");
    b->table = tgraph_weight(&b->t, "table", t_float_dtype(), 2, 20, b->H);
    b->x = tgraph_op(&b->t, IR_OP_GATHER, "x", b->table, b->ids);
}

static void test_error_order_and_arity(void) {
    t_base b;
    t_base_init(&b);
    int y = tgraph_op(&b.t, IR_OP_ADD, "y", b.x, b.x);
    int z = tgraph_op(&b.t, IR_OP_SCALE, "z", y);
    b.t.g.nodes[y].src[1] = z;  /* a forward reference */
    t_expect_error(&b.t.g, y, "does not come before it");
    tgraph_free(&b.t);

    t_base_init(&b);
    int w = tgraph_op(&b.t, IR_OP_ADD, "w", b.x);
    t_expect_error(&b.t.g, w, "has 1 operand (expected 2)");
    tgraph_free(&b.t);
}

static void test_error_leaves(void) {
    tgraph t;
    t_init(&t);
    int ids = tgraph_input(&t, "input_ids");
    t.g.nodes[ids].dtype = IR_DTYPE_F32;
    t_expect_error(&t.g, ids, "expected int32");
    tgraph_free(&t);

    t_init(&t);
    int w = tgraph_weight(&t, "w", IR_DTYPE_I32, 2, 3, 3);
    t_expect_error(&t.g, w, "expected float32, float16 or bfloat16");
    tgraph_free(&t);

    t_init(&t);
    w = tgraph_weight(&t, "w", IR_DTYPE_F32, 2, 3, IR_DIM_SEQ);
    t_expect_error(&t.g, w, "invalid dimension 1");
    tgraph_free(&t);
}

static void test_error_arange(void) {
    t_base b;
    t_base_init(&b);
    int t = tgraph_transpose(&b.t, "t", b.x, 2, (int[]){1, 0});
    int a = tgraph_op(&b.t, IR_OP_ARANGE, "pos", t);
    char want[96];
    snprintf(want, sizeof want, "like 't' is [%lld, S] (expected [S, ...])", (long long)b.H);
    t_expect_error(&b.t.g, a, want);
    tgraph_free(&b.t);
}

/* pad_positions, rel_pos_bias, sinusoid: shapes and parameters. */
static void test_error_positions(void) {
    t_base b;
    t_base_init(&b);
    int p = tgraph_op(&b.t, IR_OP_PAD_POSITIONS, "pos", b.x); /* float ids */
    t_expect_error(&b.t.g, p, "ids 'x' is float32 (expected int32)");
    tgraph_free(&b.t);

    t_base_init(&b);
    p = tgraph_op(&b.t, IR_OP_PAD_POSITIONS, "pos", b.ids);
    b.t.g.nodes[p].pad_id = -1;
    t_expect_error(&b.t.g, p, "pad is -1");
    tgraph_free(&b.t);

    t_base_init(&b);
    int tab = tgraph_weight(&b.t, "rel", t_float_dtype(), 2, 16, 3);
    int r = tgraph_op(&b.t, IR_OP_REL_POS_BIAS, "bias", tab, b.ids);
    b.t.g.nodes[r].buckets = 32;
    b.t.g.nodes[r].max_distance = 128;
    t_expect_error(&b.t.g, r, "table 'rel' is [16, 3] but buckets is 32");
    tgraph_free(&b.t);

    t_base_init(&b);
    tab = tgraph_weight(&b.t, "rel", t_float_dtype(), 2, 32, 3);
    r = tgraph_op(&b.t, IR_OP_REL_POS_BIAS, "bias", tab, b.ids);
    b.t.g.nodes[r].buckets = 32;
    b.t.g.nodes[r].max_distance = 8;
    t_expect_error(&b.t.g, r, "max_distance 8 (expected more than buckets / 4 = 8)");
    tgraph_free(&b.t);

    t_base_init(&b);
    int s = tgraph_op_srcs(&b.t, IR_OP_SINUSOID, "sin", NULL, 0);
    b.t.g.nodes[s].ndim = 1;
    b.t.g.nodes[s].shape[0] = 8;
    t_expect_error(&b.t.g, s, "(expected [rows, dim], both >= 1)");
    tgraph_free(&b.t);
}

/* ATTENTION's optional score bias must be [heads, Sq, Sk]. */
static void test_error_attention_bias(void) {
    t_base b;
    t_base_init(&b);
    int tab = tgraph_weight(&b.t, "rel", t_float_dtype(), 2, 32, 3);
    int r = tgraph_op(&b.t, IR_OP_REL_POS_BIAS, "bias", tab, b.ids);
    b.t.g.nodes[r].buckets = 32;
    b.t.g.nodes[r].max_distance = 128;
    int at = tgraph_op(&b.t, IR_OP_ATTENTION, "att", b.x, b.x, b.x, b.mask, r);
    b.t.g.nodes[at].heads = 2; /* the bias has 3 heads */
    b.t.g.nodes[at].head_dim = 1;
    b.t.g.nodes[at].scale = 1.0f;
    b.t.g.nodes[at].has_bias = 1;
    t_expect_error(&b.t.g, at, "bias 'bias' is [3, S, S]");
    tgraph_free(&b.t);
}

static void test_error_gather(void) {
    t_base b;
    t_base_init(&b);
    int g1 = tgraph_op(&b.t, IR_OP_GATHER, "g1", b.x, b.x);  /* index is float */
    t_expect_error(&b.t.g, g1, "index 'x' is float32 (expected int32)");
    tgraph_free(&b.t);

    t_base_init(&b);
    int v = tgraph_weight(&b.t, "vec", IR_DTYPE_F32, 1, 7, 0);
    int g2 = tgraph_op(&b.t, IR_OP_GATHER, "g2", v, b.ids);
    t_expect_error(&b.t.g, g2, "table 'vec' is [7] (expected a 2-D table [V, D])");
    tgraph_free(&b.t);

    t_base_init(&b);
    int r = tgraph_reshape(&b.t, "r", b.ids, 2, (int64_t[]){S, 1});
    int g3 = tgraph_op(&b.t, IR_OP_GATHER, "g3", b.table, r);
    t_expect_error(&b.t.g, g3, "index 'r' is [S, 1] (expected a 1-D index [S])");
    tgraph_free(&b.t);
}

static void test_error_add(void) {
    t_base b;
    t_base_init(&b);
    int other = tgraph_weight(&b.t, "other", IR_DTYPE_F32, 2, 20, b.H + 1);
    int x2 = tgraph_op(&b.t, IR_OP_GATHER, "x2", other, b.ids);
    int a = tgraph_op(&b.t, IR_OP_ADD, "sum", b.x, x2);
    char want[128];
    snprintf(want, sizeof want, "a 'x' is [S, %lld] but b 'x2' is [S, %lld] (expected the same shape)",
             (long long)b.H, (long long)b.H + 1);
    t_expect_error(&b.t.g, a, want);
    tgraph_free(&b.t);

    t_base_init(&b);
    int a2 = tgraph_op(&b.t, IR_OP_ADD, "sum2", b.x, b.ids);
    t_expect_error(&b.t.g, a2, "b 'input_ids' is int32 (expected a floating-point tensor)");
    tgraph_free(&b.t);
}

static void test_error_bias_add(void) {
    t_base b;
    t_base_init(&b);
    int64_t wrong = b.H + check_rng_range(1, 5);
    int bias = tgraph_weight(&b.t, "bias", t_float_dtype(), 1, wrong, 0);
    int y = tgraph_op(&b.t, IR_OP_BIAS_ADD, "y", b.x, bias);
    char want[128];
    snprintf(want, sizeof want, "bias 'bias' is [%lld] but x 'x' is [S, %lld] (expected [%lld])",
             (long long)wrong, (long long)b.H, (long long)b.H);
    t_expect_error(&b.t.g, y, want);
    tgraph_free(&b.t);
}

static void test_error_layer_norm(void) {
    for (int which = 0; which < 3; which++) {
        t_base b;
        t_base_init(&b);
        int gam = tgraph_weight(&b.t, "gamma", t_float_dtype(), which == 0 ? 2 : 1, b.H, b.H);
        int bet = tgraph_weight(&b.t, "beta", t_float_dtype(), 1, which == 1 ? b.H - 1 : b.H, 0);
        int ln = tgraph_op(&b.t, IR_OP_LAYER_NORM, "ln", b.x, gam, bet);
        b.t.g.nodes[ln].eps = which == 2 ? -(float)check_rng_uniform() : 1e-5f;
        char want[128];
        if (which == 0)
            snprintf(want, sizeof want, "gamma 'gamma' is [%lld, %lld] but x 'x' is [S, %lld] (expected [%lld])",
                     (long long)b.H, (long long)b.H, (long long)b.H, (long long)b.H);
        else if (which == 1)
            snprintf(want, sizeof want, "beta 'beta' is [%lld]", (long long)b.H - 1);
        else
            snprintf(want, sizeof want, "(expected a positive number)");
        t_expect_error(&b.t.g, ln, want);
        tgraph_free(&b.t);
    }
}

static void test_error_matmul(void) {
    t_base b;
    t_base_init(&b);
    int64_t N = check_rng_range(1, 100), K = b.H + check_rng_range(1, 9);
    int w = tgraph_weight(&b.t, "encoder.layer.0.attention.self.query.weight", t_float_dtype(), 2, N, K);
    int q = tgraph_op(&b.t, IR_OP_MATMUL, "q_mm", b.x, w);
    char want[256];
    snprintf(want, sizeof want,
             "matmul 'q_mm': weight 'encoder.layer.0.attention.self.query.weight' is [%lld, %lld] but x 'x' is [S, %lld] (expected [N, %lld])",
             (long long)N, (long long)K, (long long)b.H, (long long)b.H);
    t_expect_error(&b.t.g, q, want);
    tgraph_free(&b.t);

    t_base_init(&b);
    int r = tgraph_reshape(&b.t, "r3", b.x, 3, (int64_t[]){S, 1, b.H});
    int w2 = tgraph_weight(&b.t, "w", IR_DTYPE_F32, 2, 3, b.H);
    int q2 = tgraph_op(&b.t, IR_OP_MATMUL, "m2", r, w2);
    t_expect_error(&b.t.g, q2, "(expected a 2-D [M, K])");
    tgraph_free(&b.t);
}

static void test_error_elementwise(void) {
    t_base b;
    t_base_init(&b);
    int a = tgraph_op(&b.t, IR_OP_ACTIVATION, "act", b.x);
    b.t.g.nodes[a].act = IR_ACT_COUNT;
    t_expect_error(&b.t.g, a, "unknown activation");
    tgraph_free(&b.t);

    static const ir_op ops[3] = {IR_OP_ACTIVATION, IR_OP_SCALE, IR_OP_SOFTMAX};
    for (int k = 0; k < 3; k++) {
        t_base_init(&b);
        int e = tgraph_op(&b.t, ops[k], "elt", b.ids);
        t_expect_error(&b.t.g, e, "x 'input_ids' is int32 (expected a floating-point tensor)");
        tgraph_free(&b.t);
    }
}

static void test_error_reshape(void) {
    t_base b;
    t_base_init(&b);
    int r = tgraph_reshape(&b.t, "r", b.x, 3, (int64_t[]){S, 2, b.H});
    char want[160];
    snprintf(want, sizeof want, "x 'x' is [S, %lld] but the shape is [S, 2, %lld] (expected the same number of elements)",
             (long long)b.H, (long long)b.H);
    t_expect_error(&b.t.g, r, want);
    tgraph_free(&b.t);

    /* Same element count for no S but S gone: refused. */
    t_base_init(&b);
    r = tgraph_reshape(&b.t, "flat", b.x, 1, (int64_t[]){b.H});
    t_expect_error(&b.t.g, r, "S must stay a whole dimension");
    tgraph_free(&b.t);

    t_base_init(&b);
    r = tgraph_reshape(&b.t, "zero", b.x, 3, (int64_t[]){S, 0, b.H});
    t_expect_error(&b.t.g, r, "invalid dimension 1");
    tgraph_free(&b.t);
}

static void test_error_transpose(void) {
    t_base b;
    t_base_init(&b);
    int dup = (int)check_rng_range(0, 1);
    int t = tgraph_transpose(&b.t, "t", b.x, 2, (int[]){dup, dup});
    char want[128];
    snprintf(want, sizeof want, "perm [%d, %d] is not a permutation of 0..1", dup, dup);
    t_expect_error(&b.t.g, t, want);
    tgraph_free(&b.t);

    /* A perm of the wrong length (the loader keeps its length in ndim). */
    t_base_init(&b);
    t = tgraph_transpose(&b.t, "t3", b.x, 3, (int[]){1, 0, 2});
    snprintf(want, sizeof want, "perm [1, 0, 2] has 3 entries but x 'x' is [S, %lld] (expected 2)",
             (long long)b.H);
    t_expect_error(&b.t.g, t, want);
    tgraph_free(&b.t);

    t_base_init(&b);
    t = tgraph_transpose(&b.t, "t2", b.x, 2, (int[]){0, 2});
    t_expect_error(&b.t.g, t, "perm [0, 2] is not a permutation");
    tgraph_free(&b.t);
}

static void test_error_batched_matmul(void) {
    for (int which = 0; which < 4; which++) {
        t_base b;
        t_base_init(&b);
        int64_t B = check_rng_range(1, 4), K = check_rng_range(1, 6);
        int64_t Bb = which == 0 ? B + 1 : B, Kb = which == 1 || which == 2 ? K + 1 : K;
        int a = tgraph_weight(&b.t, "wa", IR_DTYPE_F32, 2, B * 3, K);
        int bw = tgraph_weight(&b.t, "wb", IR_DTYPE_F32, 2, Bb * 5, Kb);
        int a3 = tgraph_reshape(&b.t, "a3", a, 3, (int64_t[]){B, 3, K});
        /* transpose_b: b is [B, N=5, K]; without it [B, K, N=5]. */
        int tb = which != 2;
        int b3 = tgraph_reshape(&b.t, "b3", bw, 3, tb ? (int64_t[]){Bb, 5, Kb} : (int64_t[]){Bb, Kb, 5});
        int src_b = b3;
        if (which == 3) src_b = b.x;  /* 2-D b */
        int m = tgraph_op(&b.t, IR_OP_BATCHED_MATMUL, "bmm", a3, src_b);
        b.t.g.nodes[m].transpose_b = tb;
        char want[160];
        if (which == 3)
            snprintf(want, sizeof want, "b 'x' is [S, %lld] (expected a 3-D [B, N, K])", (long long)b.H);
        else if (tb)
            snprintf(want, sizeof want, "b 'b3' is [%lld, 5, %lld] but a 'a3' is [%lld, 3, %lld] (expected [%lld, N, %lld] since transpose_b is true)",
                     (long long)Bb, (long long)Kb, (long long)B, (long long)K, (long long)B, (long long)K);
        else
            snprintf(want, sizeof want, "b 'b3' is [%lld, %lld, 5] but a 'a3' is [%lld, 3, %lld] (expected [%lld, %lld, N] since transpose_b is false)",
                     (long long)Bb, (long long)Kb, (long long)B, (long long)K, (long long)B, (long long)K);
        t_expect_error(&b.t.g, m, want);
        tgraph_free(&b.t);
    }
}

static void test_error_mask(void) {
    t_base b;
    t_base_init(&b);
    int m = tgraph_op(&b.t, IR_OP_MASK, "m", b.x, b.mask);  /* last dim H, mask [S] */
    char want[128];
    snprintf(want, sizeof want, "mask 'attention_mask' is [S] but x 'x' is [S, %lld] (expected [%lld])",
             (long long)b.H, (long long)b.H);
    t_expect_error(&b.t.g, m, want);
    tgraph_free(&b.t);

    t_base_init(&b);
    int t = tgraph_transpose(&b.t, "xt", b.x, 2, (int[]){1, 0});
    m = tgraph_op(&b.t, IR_OP_MASK, "m2", t, t);  /* float mask */
    t_expect_error(&b.t.g, m, "mask 'xt' is float32 (expected int32)");
    tgraph_free(&b.t);
}

static void test_error_slice(void) {
    for (int which = 0; which < 4; which++) {
        t_base b;
        t_base_init(&b);
        int s = tgraph_op(&b.t, IR_OP_SLICE, "sl", b.x);
        ir_node *n = &b.t.g.nodes[s];
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
        t_expect_error(&b.t.g, s, want);
        tgraph_free(&b.t);
    }
}

static void test_error_bad_output(void) {
    t_base b;
    t_base_init(&b);
    ir_graph_add_output(&b.t.g, "out", b.t.g.count + 3);
    diag d;
    CHECK(t_infer(&b.t.g, &d) == -1, "no error");
    CHECK(strstr(d.text, "output 'out'") != NULL, "'%s'", d.text);
    tgraph_free(&b.t);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_infer_embeddings);
    CHECK_CASE(test_error_positions);
    CHECK_CASE(test_error_attention_bias);
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
