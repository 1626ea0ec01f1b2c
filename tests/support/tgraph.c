/*
 * tgraph — the tests' graph builder (see tgraph.h).
 *
 * Design.  A tgraph is an ir_graph plus what the tests need beside it:
 * the values of the weights they made (indexed by node, grown with the
 * graph) and a stimage holding the same values as the weights file.  The
 * builder fills exactly the fields the YAML loader fills (op, name,
 * sources, line and column; for leaves dtype and shape; for RESHAPE the
 * target shape, for TRANSPOSE the perm with its length in ndim) and
 * nothing inference computes, so a test of ir_graph_infer sees the
 * loader's input.  The weights file is only built when asked for, from
 * the values as they were given, so a test may still rename or drop a
 * weight node before opening it.
 */
#include "tgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void tgraph_init(tgraph *t) {
    memset(t, 0, sizeof *t);
    ir_graph_init(&t->g);
    t->weight_prefix = "";
    stimage_init(&t->image);
}

void tgraph_free(tgraph *t) {
    for (int i = 0; i < t->values_cap; i++) free(t->values[i]);
    free(t->values);
    if (t->st_open) st_file_close(&t->st);
    stimage_free(&t->image);
    ir_graph_free(&t->g);
    memset(t, 0, sizeof *t);
}

/* A node with a random place; aborts if the graph refuses it. */
static int tgraph_add(tgraph *t, ir_op op, const char *name, const int *src, int nsrc) {
    int i = ir_graph_add(&t->g, op, name, src, nsrc);
    if (i < 0) {
        fprintf(stderr, "tgraph: cannot add %s '%s' with %d sources\n", ir_op_name(op), name, nsrc);
        abort();
    }
    t->g.nodes[i].line = (int)check_rng_range(1, TGRAPH_MAX_LINE);
    t->g.nodes[i].col = (int)check_rng_range(1, TGRAPH_MAX_COL);
    return i;
}

static int tgraph_leaf(tgraph *t, ir_op op, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1) {
    int i = tgraph_add(t, op, name, NULL, 0);
    ir_node *n = &t->g.nodes[i];
    n->dtype = dt;
    n->ndim = ndim;
    n->shape[0] = d0;
    n->shape[1] = ndim > 1 ? d1 : 0;
    return i;
}

int tgraph_input_opt(tgraph *t, const char *name, int32_t def) {
    int i = tgraph_leaf(t, IR_OP_INPUT, name, IR_DTYPE_I32, 1, IR_DIM_SEQ, 0);
    t->g.nodes[i].optional = 1;
    t->g.nodes[i].default_value = def;
    return i;
}

int tgraph_input(tgraph *t, const char *name) { return tgraph_leaf(t, IR_OP_INPUT, name, IR_DTYPE_I32, 1, IR_DIM_SEQ, 0); }

int tgraph_weight(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1) {
    int i = tgraph_leaf(t, IR_OP_WEIGHT, name, dt, ndim, d0, d1);
    size_t n = strlen(t->weight_prefix) + strlen(name) + 1;
    char *w = malloc(n);
    if (!w) abort();
    snprintf(w, n, "%s%s", t->weight_prefix, name);
    t->g.nodes[i].weight = w;
    return i;
}

static int64_t tgraph_numel(int ndim, int64_t d0, int64_t d1) { return ndim == 1 ? d0 : d0 * d1; }

st_dtype tgraph_st_dtype(ir_dtype dt) {
    return dt == IR_DTYPE_F16 ? ST_DTYPE_F16 : dt == IR_DTYPE_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
}

int tgraph_weight_values(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1,
                         const float *v) {
    int i = tgraph_weight(t, name, dt, ndim, d0, d1);
    if (i >= t->values_cap) {
        int cap = t->values_cap ? 2 * t->values_cap : 64;
        while (cap <= i) cap *= 2;
        float **nv = realloc(t->values, (size_t)cap * sizeof *nv);
        if (!nv) abort();
        memset(nv + t->values_cap, 0, (size_t)(cap - t->values_cap) * sizeof *nv);
        t->values = nv;
        t->values_cap = cap;
    }
    size_t n = (size_t)tgraph_numel(ndim, d0, d1);
    t->values[i] = malloc((n ? n : 1) * sizeof(float));
    if (!t->values[i]) abort();
    for (size_t k = 0; k < n; k++) t->values[i][k] = t->round_values ? stimage_round(tgraph_st_dtype(dt), v[k]) : v[k];
    const int64_t shape[2] = {d0, d1};
    stimage_add_floats(&t->image, t->g.nodes[i].weight, tgraph_st_dtype(dt), ndim, shape, t->values[i], 0);
    return i;
}

float tgraph_rand_exact(ir_dtype dt, float scale) {
    switch (dt) {
    case IR_DTYPE_F16: return (float)check_rng_range(-2047, 2047) / 1024.0f * scale;
    case IR_DTYPE_BF16: return (float)check_rng_range(-255, 255) / 128.0f * scale;
    default: return (float)(check_rng_uniform() * 4.0 - 2.0) * scale;
    }
}

int tgraph_weight_rand(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1, float scale) {
    int64_t n = tgraph_numel(ndim, d0, d1);
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) abort();
    for (int64_t k = 0; k < n; k++) v[k] = tgraph_rand_exact(dt, scale);
    int i = tgraph_weight_values(t, name, dt, ndim, d0, d1, v);
    free(v);
    return i;
}

int tgraph_const(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1) {
    int i = tgraph_leaf(t, IR_OP_CONST, name, dt, ndim, d0, d1);
    int64_t n = tgraph_numel(ndim, d0, d1);
    float *data = malloc((size_t)(n ? n : 1) * sizeof *data);
    if (!data) abort();
    for (int64_t k = 0; k < n; k++) data[k] = (float)check_rng_uniform();
    t->g.nodes[i].data = data;
    return i;
}

int tgraph_op_srcs(tgraph *t, ir_op op, const char *name, const int *src, int nsrc) {
    return tgraph_add(t, op, name, src, nsrc);
}

int tgraph_reshape(tgraph *t, const char *name, int x, int ndim, const int64_t *dims) {
    int i = tgraph_op(t, IR_OP_RESHAPE, name, x);
    t->g.nodes[i].ndim = ndim;
    for (int d = 0; d < ndim; d++) t->g.nodes[i].shape[d] = dims[d];
    return i;
}

int tgraph_transpose(tgraph *t, const char *name, int x, int len, const int *perm) {
    int i = tgraph_op(t, IR_OP_TRANSPOSE, name, x);
    t->g.nodes[i].ndim = len;   /* the loader leaves the perm's length in ndim */
    for (int d = 0; d < len; d++) t->g.nodes[i].perm[d] = perm[d];
    return i;
}

int tgraph_slice(tgraph *t, const char *name, int x, int axis, int64_t start, int64_t len) {
    int i = tgraph_op(t, IR_OP_SLICE, name, x);
    t->g.nodes[i].axis = axis;
    t->g.nodes[i].start = start;
    t->g.nodes[i].len = len;
    return i;
}

const float *tgraph_values(const tgraph *t, int node) {
    return node >= 0 && node < t->values_cap ? t->values[node] : NULL;
}

int tgraph_open_weights(tgraph *t, const char *name, diag *d) {
    size_t len;
    unsigned char *img = stimage_build(&t->image, &len, NULL);
    diag_init(d);
    int rc = st_file_open_memory(&t->st, img, len, name, d);
    free(img);
    t->st_open = rc == 0;
    if (t->st_open) st_file_weights(&t->st, &t->w);
    return rc;
}
