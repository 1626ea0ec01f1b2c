/*
 * test_model_yaml — the YAML front end: what loads, and every error path.
 *
 * Each error case is a small YAML text and a *needle*: a unique piece of the
 * text where the error must point.  The test finds the needle's line and
 * column itself and checks that the message starts with FILE:LINE:COL, says
 * what it must say, and shows a caret — so the expected position is derived
 * from the text, not copied from the loader's output.
 */
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "ir.h"
#include "model.h"
#include "safetensors.h"
#include "stimage.h"
#include "tbuf.h"

static char weights_path[512];

/* A small safetensors file: emb [10, 8], g [8], b [8], w [4, 8], w8 [8, 8], ids64 I64 [2]. */
static void write_weights(void) {
    static const struct { const char *name; st_dtype dtype; int64_t shape[2]; int ndim; } t[] = {
        {"b", ST_DTYPE_F32, {8}, 1},          {"emb", ST_DTYPE_F32, {10, 8}, 2}, {"g", ST_DTYPE_F32, {8}, 1},
        {"ids64", ST_DTYPE_I64, {2}, 1},      {"w", ST_DTYPE_F32, {4, 8}, 2},    {"w8", ST_DTYPE_F16, {8, 8}, 2},
    };
    stimage s;
    stimage_init(&s);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) stimage_add(&s, t[i].name, t[i].dtype, t[i].ndim, t[i].shape);
    stimage_fill_random(&s, 0x3f); /* small finite values */
    size_t total;
    unsigned char *img = stimage_build(&s, &total, NULL);
    const char *p = check_write_temp("weights.safetensors", img, total);
    free(img);
    stimage_free(&s);
    snprintf(weights_path, sizeof weights_path, "%s", p ? p : "/nonexistent");
}

/* The base model, with %s for the weights path.  Edits replace one line. */
static const char *BASE =
    "bertc: 1\n"
    "name: t\n"
    "weights: %s\n"
    "max_seq_len: 16\n"
    "dims: {H: 8, NH: 2, HD: 4}\n"
    "inputs:\n"
    "  input_ids: {dtype: int32, shape: [S]}\n"
    "  attention_mask: {dtype: int32, shape: [S], default: 1}\n"
    "outputs:\n"
    "  y: y\n"
    "graph:\n"
    "  - {op: gather, out: e, table: emb, index: input_ids}\n"
    "  - {op: layer_norm, out: n, x: e, gamma: g, beta: b, eps: 1e-5}\n"
    "  - {op: matmul, out: y, x: n, weight: w}\n";

static void position_of(const char *text, const char *needle, int *line, int *col) {
    const char *p = strstr(text, needle);
    *line = 1;
    *col = 1;
    if (!p) { *line = -1; return; }
    for (const char *q = text; q < p; q++) {
        if (*q == '\n') { (*line)++; *col = 1; }
        else (*col)++;
    }
}

static int load_text(model *m, const char *text, diag *d) {
    diag_init(d);
    return model_load_text(m, "m.yaml", text, strlen(text), ".", d);
}

/* Expect an error at `needle` (or at line/col if needle is NULL) containing `msg`. */
static void expect_error(const char *text, const char *needle, int line, int col, const char *msg) {
    model m;
    diag d;
    int rc = load_text(&m, text, &d);
    CHECK(rc != 0, "expected an error containing '%s', but the model loaded", msg);
    if (needle) position_of(text, needle, &line, &col);
    CHECK(line > 0, "needle '%s' not in the text", needle ? needle : "");
    char want[64];
    snprintf(want, sizeof want, "m.yaml:%d:%d: ", line, col);
    CHECK(!strncmp(d.text, want, strlen(want)), "expected the error to start with '%s', got: %s", want, d.text);
    CHECK(strstr(d.text, msg) != NULL, "expected '%s' in: %s", msg, d.text);
    CHECK(strchr(d.text, '^') != NULL, "no caret in: %s", d.text);
    CHECK(d.code == DIAG_CODE_INPUT, "expected the input-error code, got %d", (int)d.code);
    model_free(&m);
}

/* Apply one edit to BASE and expect an error at the needle. */
static void expect_edit_error(const char *from, const char *to, const char *needle, const char *msg) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, from, to);
    CHECK(text != NULL, "edit '%s' does not apply", from);
    if (text) expect_error(text, needle, 0, 0, msg);
    free(text);
    free(base);
}

static void test_base_loads(void) {
    char *text = tbuf_format(BASE, weights_path);
    model m;
    diag d;
    int rc = load_text(&m, text, &d);
    CHECK(rc == 0, "base model failed: %s", d.text);
    if (!rc) {
        int y = m.graph.outputs[0].node;
        CHECK(m.graph.noutputs == 1 && !strcmp(m.graph.outputs[0].name, "y"), "output y missing");
        CHECK(m.graph.nodes[y].op == IR_OP_MATMUL, "y is not a matmul");
        CHECK(m.graph.nodes[y].ndim == 2 && m.graph.nodes[y].shape[0] == IR_DIM_SEQ && m.graph.nodes[y].shape[1] == 4,
              "y should be [S, 4]");
        for (int i = 0; i < m.graph.count; i++)
            for (int k = 0; k < m.graph.nodes[i].nsrc; k++)
                CHECK(m.graph.nodes[i].src[k] < i, "node %d uses a later node", i);
        int e = ir_graph_find(&m.graph, "e");
        CHECK(e >= 0 && m.graph.nodes[e].line == 12 && m.graph.nodes[e].col == 5, "node e should remember 12:5");
    }
    model_free(&m);
    free(text);
}

/* Ops written out of order are sorted; the result is the same graph. */
static void test_out_of_order(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *t1 = tbuf_replace(base, "  - {op: gather, out: e, table: emb, index: input_ids}\n", "");
    char *t2 = tbuf_format("%s  - {op: gather, out: e, table: emb, index: input_ids}\n", t1);
    model m;
    diag d;
    int rc = load_text(&m, t2, &d);
    CHECK(rc == 0, "out-of-order graph failed: %s", d.text);
    if (!rc) {
        int e = ir_graph_find(&m.graph, "e"), n = ir_graph_find(&m.graph, "n");
        CHECK(e >= 0 && n > e, "gather must come before layer_norm after sorting");
    }
    model_free(&m);
    free(base);
    free(t1);
    free(t2);
}

/* repeat: locals per iteration, templated names global, weights templated. */
static void test_repeat_scoping(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, "  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - repeat: 3\n"
                      "    index: k\n"
                      "    ops:\n"
                      "      - {op: matmul, out: t, x: \"h{k}\", weight: w8}\n"
                      "      - {op: add, out: \"h{k+1}\", a: t, b: \"h{k}\"}\n"
                      "  - {op: matmul, out: y, x: h3, weight: w}\n");
    char *t2 = tbuf_replace(text, "out: n,", "out: h0,");
    model m;
    diag d;
    int rc = load_text(&m, t2, &d);
    CHECK(rc == 0, "repeat graph failed: %s", d.text);
    if (!rc) {
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "layer%d/t", k);
            int t = ir_graph_find(&m.graph, name);
            snprintf(name, sizeof name, "h%d", k + 1);
            int h = ir_graph_find(&m.graph, name);
            snprintf(name, sizeof name, "h%d", k);
            int prev = ir_graph_find(&m.graph, name);
            CHECK(t >= 0 && h >= 0 && prev >= 0, "iteration %d tensors missing", k);
            if (t >= 0 && h >= 0 && prev >= 0) {
                CHECK(m.graph.nodes[h].src[0] == t && m.graph.nodes[h].src[1] == prev,
                      "h%d must add layer%d/t and h%d", k + 1, k, k);
                CHECK(m.graph.nodes[t].src[0] == prev, "layer%d/t must read h%d", k, k);
            }
        }
        int w8_nodes = 0;
        for (int i = 0; i < m.graph.count; i++)
            if (m.graph.nodes[i].op == IR_OP_WEIGHT && !strcmp(m.graph.nodes[i].weight, "w8")) w8_nodes++;
        CHECK(w8_nodes == 1, "a weight used three times must be one node, got %d", w8_nodes);
    }
    model_free(&m);
    free(base);
    free(text);
    free(t2);
}

/* The worked example of docs/model-yaml.md loads against the tiny fixture. */
static void test_doc_example_loads(void) {
    size_t len;
    char *doc = check_read_file("docs/model-yaml.md", &len);
    CHECK(doc != NULL, "cannot read docs/model-yaml.md");
    if (!doc) return;
    const char *start = strstr(doc, "## A worked example");
    start = start ? strstr(start, "```yaml\n") : NULL;
    const char *end = start ? strstr(start + 8, "```") : NULL;
    CHECK(start && end, "no worked example in docs/model-yaml.md");
    if (start && end) {
        start += 8;
        char *text = malloc((size_t)(end - start) + 1);
        memcpy(text, start, (size_t)(end - start));
        text[end - start] = '\0';
        char wpath[600];
        snprintf(wpath, sizeof wpath, "../%s/hf/tiny-bert/model.safetensors", check_build_dir());
        char *fixed = tbuf_replace(text, "../build/hf/tiny-bert/model.safetensors", wpath);
        model m;
        diag d;
        diag_init(&d);
        int rc = model_load_text(&m, "docs/model-yaml.md", fixed ? fixed : text, strlen(fixed ? fixed : text),
                                 "models", &d);
        CHECK(rc == 0, "the worked example does not load: %s", d.text);
        if (!rc) {
            int matmuls = 0;
            for (int i = 0; i < m.graph.count; i++) matmuls += m.graph.nodes[i].op == IR_OP_MATMUL;
            CHECK(matmuls == 3 * 6 + 1, "expected 19 matmuls, got %d", matmuls);
            CHECK(m.graph.noutputs == 2, "expected 2 outputs");
        }
        model_free(&m);
        free(fixed);
        free(text);
    }
    free(doc);
}

static void test_syntax_errors(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, "eps: 1e-5}", "eps: 1e-5");
    model m;
    diag d;
    CHECK(load_text(&m, text, &d) != 0, "unclosed flow mapping loaded");
    CHECK(!strncmp(d.text, "m.yaml:1", 8), "syntax error has no position: %s", d.text);
    CHECK(strstr(d.text, "YAML syntax error") != NULL, "not called a syntax error: %s", d.text);
    model_free(&m);
    free(text);
    expect_error("bertc: 1\nname: [unclosed\n", NULL, 3, 1, "YAML syntax error");
    expect_error("", NULL, 1, 1, "the file is empty");
    expect_error("- a\n- b\n", "- a", 0, 0, "expected a model description (a mapping)");
    free(base);
}

static void test_second_document(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *two = tbuf_format("%s---\nextra: 1\n", base);
    expect_error(two, "extra: 1", 0, 0, "a second YAML document");
    free(two);
    free(base);
}

static void test_top_level_errors(void) {
    expect_edit_error("bertc: 1\n", "bertc: 2\n", "2\nname", "format version 2 is not supported (expected 1)");
    expect_edit_error("bertc: 1\n", "bertc: 1\nextra_key: 3\n", "extra_key", "unknown key 'extra_key'");
    expect_edit_error("max_seq_len: 16\n", "max_seq_len: abc\n", "abc", "expected max_seq_len (an integer), got 'abc'");
    expect_edit_error("max_seq_len: 16\n", "max_seq_len: \"16\"\n", "\"16\"", "got a quoted string");
    expect_edit_error("max_seq_len: 16\n", "max_seq_len: 0\n", "0\ndims", "max_seq_len must be between 1");
    expect_edit_error("name: t\n", "", "bertc", "missing required key 'name'");
    expect_edit_error("dims: {H: 8, NH: 2, HD: 4}\n", "dims: {S: 8}\n", "S: 8", "'S' is the sequence length");
    expect_edit_error("dims: {H: 8, NH: 2, HD: 4}\n", "dims: {H: -8}\n", "-8}", "a dims value must be between 1");
}

static void test_input_output_errors(void) {
    expect_edit_error("  input_ids: {dtype: int32, shape: [S]}\n", "  input_ids: {dtype: float32, shape: [S]}\n",
                      "float32", "input 'input_ids' must have dtype int32, got 'float32'");
    expect_edit_error("  input_ids: {dtype: int32, shape: [S]}\n", "  input_ids: {dtype: int32, shape: [S, 4]}\n",
                      "[S, 4]", "must have shape [S]");
    expect_edit_error("  input_ids: {dtype: int32, shape: [S]}\n",
                      "  input_ids: {dtype: int32, shape: [S]}\n  position_ids: {dtype: int32, shape: [S]}\n",
                      "position_ids", "unknown key 'position_ids' in inputs");
    expect_edit_error("shape: [S], default: 1}", "shape: [S]}", "{dtype: int32, shape: [S]}\noutputs",
                      "input 'attention_mask' needs a default");
    expect_edit_error("  y: y\n", "  y: nope\n", "nope", "no tensor named 'nope'");
    expect_edit_error("  input_ids: {dtype: int32, shape: [S]}\n", "  input_ids: {dtype: int32, shape: [S], color: red}\n",
                      "color", "unknown key 'color' in input 'input_ids'");
}

static void test_op_errors(void) {
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmal, out: y, x: n, weight: w}", "matmal",
                      "unknown op 'matmal'");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmul, out: y, x: n, weight: w, bias: b}",
                      "bias: b}", "unknown key 'bias' in op 'matmul'");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmul, out: y, x: n}",
                      "{op: matmul", "missing required key 'weight' in op 'matmul'");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmul, out: y, x: nn, weight: w}", "nn",
                      "no tensor named 'nn'");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmul, out: y, x: n, weight: ww}", "ww",
                      "no tensor 'ww' in");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: matmul, out: y, x: n, weight: ids64}", "ids64",
                      "has dtype I64 (expected F32, F16 or BF16)");
    expect_edit_error("{op: matmul, out: y, x: n, weight: w}", "{op: activation, out: y, x: n, fn: swish}", "swish",
                      "unknown activation 'swish'");
    expect_edit_error("eps: 1e-5}", "eps: -1}", "-1}", "eps must be positive");
    expect_edit_error("eps: 1e-5}", "eps: tiny}", "tiny", "expected eps (a number), got 'tiny'");
    expect_edit_error("out: n,", "out: e,", "e, x: e", "tensor 'e' is defined twice (first at line 12)");
    expect_edit_error("out: n,", "out: input_ids,", "input_ids, x", "'input_ids' is already defined as an input");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: transpose, out: y, x: n, perm: [0, 0]}\n", "{op: transpose",
                      "transpose");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: reshape, out: y, x: n, shape: [S, 3, 3]}\n", "{op: reshape", "reshape");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: reshape, out: y, x: n, shape: [S, Q]}\n", "Q]", "expected a dimension");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: batched_matmul, out: y, a: n, b: n, transpose_b: maybe}\n", "maybe",
                      "expected transpose_b (true or false), got 'maybe'");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n", "  - {op: mask, out: y, x: n, mask: attention_mask}\n",
                      "{op: mask", "mask");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n", "  - [op, matmul]\n", "[op, matmul]",
                      "expected an op (a mapping), got a list");
}

/* pool and l2_normalize: the sentence-transformers head, and its mistakes. */
static void test_pool_ops(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, "{op: matmul, out: y, x: n, weight: w}",
                      "{op: pool, out: p, x: n, mask: attention_mask, mode: mean}\n"
                      "  - {op: l2_normalize, out: y, x: p}\n"
                      "  - {op: pool, out: c, x: e, mode: cls}");
    char *text2 = text ? tbuf_replace(text, "  y: y\n", "  y: y\n  c: c\n") : NULL;
    model m;
    diag d;
    int rc = text2 ? load_text(&m, text2, &d) : -1;
    CHECK(rc == 0, "pool model failed: %s", d.text);
    if (!rc) {
        int y = ir_graph_find(&m.graph, "y"), p = ir_graph_find(&m.graph, "p"), c = ir_graph_find(&m.graph, "c");
        CHECK(y >= 0 && m.graph.nodes[y].op == IR_OP_L2_NORMALIZE && m.graph.nodes[y].ndim == 1 &&
                  m.graph.nodes[y].shape[0] == 8,
              "y should be an l2_normalize [8]");
        CHECK(p >= 0 && m.graph.nodes[p].op == IR_OP_POOL && m.graph.nodes[p].pool_mode == IR_POOL_MEAN &&
                  m.graph.nodes[p].nsrc == 2 && m.graph.nodes[p].line == 15 && m.graph.nodes[p].col == 5,
              "p should be a mean pool with a mask, at 15:5");
        CHECK(c >= 0 && m.graph.nodes[c].op == IR_OP_POOL && m.graph.nodes[c].pool_mode == IR_POOL_CLS &&
                  m.graph.nodes[c].nsrc == 1,
              "c should be a cls pool without a mask");
    }
    if (text2) model_free(&m);
    free(text);
    free(text2);
    free(base);
    const char *mm = "{op: matmul, out: y, x: n, weight: w}";
    expect_edit_error(mm, "{op: pool, out: y, x: n, mask: attention_mask, mode: max}", "max}",
                      "unknown pooling mode 'max' (expected one of: cls, mean)");
    expect_edit_error(mm, "{op: pool, out: y, x: n, mask: attention_mask}", "{op: pool",
                      "missing required key 'mode' in op 'pool'");
    expect_edit_error(mm, "{op: pool, out: y, x: n, mode: mean}", "{op: pool",
                      "pool 'y': mode mean needs a mask (the attention_mask input)");
    expect_edit_error(mm, "{op: pool, out: y, x: n, mode: mean, mask: attention_mask, eps: 1}", "eps: 1}",
                      "unknown key 'eps' in op 'pool'");
    expect_edit_error(mm, "{op: pool, out: y, x: n, mode: cls, mask: n}", "{op: pool",
                      "pool 'y': mask 'n' is float32 (expected int32)");
    expect_edit_error(mm, "{op: pool, out: y, x: attention_mask, mode: cls}", "{op: pool",
                      "pool 'y': x 'attention_mask' is int32 (expected a floating-point tensor)");
    expect_edit_error(mm, "{op: l2_normalize, out: y, x: input_ids}", "{op: l2_normalize",
                      "l2_normalize 'y': x 'input_ids' is int32");
    expect_edit_error(mm, "{op: l2_normalize, out: y, x: n, axis: 0}", "axis: 0",
                      "unknown key 'axis' in op 'l2_normalize'");
}

static void test_shape_errors(void) {
    /* layer_norm gamma must match the last dim of x: w is [4, 8], not [8]. */
    expect_edit_error("gamma: g,", "gamma: w,", "{op: layer_norm", "layer_norm");
    /* matmul weight with the wrong inner dimension: emb is [10, 8], x is [S, 4]. */
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: matmul, out: y0, x: n, weight: w}\n  - {op: matmul, out: y, x: y0, weight: emb}\n",
                      "{op: matmul, out: y,", "matmul");
    /* add of [S, 8] and [S, 4] */
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: matmul, out: y0, x: n, weight: w}\n  - {op: add, out: y, a: y0, b: n}\n",
                      "{op: add", "add");
    /* gather index must be int32 */
    expect_edit_error("index: input_ids}", "index: n}", "{op: gather", "gather");
}

static void test_cycle(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, "x: e, gamma", "x: y2, gamma");
    char *t2 = tbuf_format("%s  - {op: matmul, out: y2, x: n, weight: w8}\n", text);
    model m;
    diag d;
    CHECK(load_text(&m, t2, &d) != 0, "a cycle loaded");
    CHECK(strstr(d.text, "cycle in the graph") && strstr(d.text, "n -> y2 -> n"), "cycle not spelled out: %s",
          d.text);
    CHECK(!strncmp(d.text, "m.yaml:13:5:", 12) || !strncmp(d.text, "m.yaml:15:5:", 12), "cycle position: %s", d.text);
    model_free(&m);
    free(base);
    free(text);
    free(t2);
}

static void test_repeat_errors(void) {
    const char *ops_ok = "    ops:\n      - {op: matmul, out: \"h{i+1}\", x: \"h{i}\", weight: w8}\n";
    char *body;
    body = tbuf_format("  - repeat: 0\n%s", ops_ok);
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n", body, "0\n    ops", "repeat (the number of iterations) must be between 1");
    free(body);
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - repeat: 2\n    ops:\n      - {op: matmul, out: \"h{j}\", x: n, weight: w8}\n",
                      "\"h{j}\"", "unknown template '{j}'");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - repeat: 2\n    ops:\n      - {op: matmul, out: \"h{i*2}\", x: n, weight: w8}\n",
                      "\"h{i*2}\"", "bad template '{i*2}'");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n", "  - {op: matmul, out: \"y{i}\", x: n, weight: w}\n",
                      "\"y{i}\"", "template '{i}' outside a repeat block");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - repeat: 2\n    ops:\n      - repeat: 2\n        ops: []\n", "repeat: 2\n        ops",
                      "repeat blocks do not nest");
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - repeat: 2\n    times: 3\n    ops: []\n", "times", "unknown key 'times' in a repeat block");
    /* The same global name produced by every iteration is a duplicate. */
    expect_edit_error("  - {op: matmul, out: y, x: n, weight: w}\n",
                      "  - {op: matmul, out: y, x: n, weight: w}\n  - repeat: 2\n    ops:\n"
                      "      - {op: matmul, out: \"z{i-0}\", x: n, weight: w8}\n"
                      "      - {op: matmul, out: \"zz{i}{i}\", x: n, weight: w8}\n"
                      "      - {op: matmul, out: \"h{i}x\", x: \"z{i}\", weight: w8}\n"
                      "      - {op: add, out: \"q{i}\", a: \"h{i}x\", b: \"h{i+5}x\"}\n",
                      "\"h{i+5}x\"", "no tensor named 'h5x'");
}

static void test_weights_file_errors(void) {
    char *base = tbuf_format(BASE, weights_path);
    char *text = tbuf_replace(base, weights_path, "/nonexistent/dir/model.safetensors");
    expect_error(text, "/nonexistent", 0, 0, "cannot use the weights file");
    free(text);
    free(base);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    write_weights();
    CHECK_CASE(test_base_loads);
    CHECK_CASE(test_out_of_order);
    CHECK_CASE(test_repeat_scoping);
    CHECK_CASE(test_doc_example_loads);
    CHECK_CASE(test_syntax_errors);
    CHECK_CASE(test_second_document);
    CHECK_CASE(test_top_level_errors);
    CHECK_CASE(test_input_output_errors);
    CHECK_CASE(test_op_errors);
    CHECK_CASE(test_pool_ops);
    CHECK_CASE(test_shape_errors);
    CHECK_CASE(test_cycle);
    CHECK_CASE(test_repeat_errors);
    CHECK_CASE(test_weights_file_errors);
    unlink(weights_path);
    return check_summary();
}
