/*
 * tgraph — the tests' one graph builder: IR graphs written node by node,
 * as the YAML loader would leave them, plus (optionally) the weights they
 * read as an in-memory safetensors image.
 *
 * Every node gets a random source position (line 1..TGRAPH_MAX_LINE,
 * column 1..TGRAPH_MAX_COL), so an error message that names "the node's
 * place" is checked against a place the test did not pick.  Leaves are
 * inputs (int32 [S], required or optional with a default), weights (a
 * dtype and shape; with values or without) and CONSTs (random data); ops
 * take their sources as a list, and the ops whose attributes are shapes or
 * axes have helpers.  Anything else is a field of the node: set it on
 * t.g.nodes[i] after the call.
 *
 * A weight made with values keeps them (tgraph_values) and goes into the
 * image, written by stimage.c with its exact float16 / bfloat16 encoders:
 * tgraph_rand_exact draws values the storage type holds exactly, so a
 * test's own arithmetic on tgraph_values uses the very numbers the library
 * reads back.  tgraph_open_weights turns the image into the `weights` the
 * reference executor and the passes read.
 *
 * Adding an op to the IR usually needs nothing here (tgraph_op and a field
 * or two); an op with a structural attribute gets a helper next to
 * tgraph_reshape.
 */
#ifndef BERTC_TEST_TGRAPH_H
#define BERTC_TEST_TGRAPH_H

#include "diag.h"
#include "ir.h"
#include "safetensors.h"
#include "stimage.h"

#define TGRAPH_MAX_LINE 150
#define TGRAPH_MAX_COL 40

typedef struct tgraph {
    ir_graph g;
    const char *weight_prefix;  /* a weight's file name is prefix + node name ("" by default) */
    int round_values;           /* weights' values are rounded to their dtype, not required exact */
    stimage image;              /* the weights made with values, in the order they were made */
    float **values;             /* per node: the values of a weight made with values, else NULL */
    int values_cap;
    st_file st;                 /* after tgraph_open_weights: the image, opened */
    int st_open;
    weights w;                  /* ... and seen through the weights interface */
} tgraph;

void tgraph_init(tgraph *t);
/* Frees the graph, the values, the image and the opened file. */
void tgraph_free(tgraph *t);

/* ---- leaves --------------------------------------------------------------- */

/* An int32 [S] input: required, or optional with a default value. */
int tgraph_input(tgraph *t, const char *name);
int tgraph_input_opt(tgraph *t, const char *name, int32_t def);
/* A weight of dtype and shape [d0] (ndim 1) or [d0, d1] (ndim 2), no values. */
int tgraph_weight(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1);
/* The same with values v (numel of them, copied): kept, and added to the
 * image; each must be exact in dt (else the test aborts, naming it), or
 * with round_values set is rounded to dt first (and kept rounded). */
int tgraph_weight_values(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1,
                         const float *v);
/* The same with random values tgraph_rand_exact(dt, scale). */
int tgraph_weight_rand(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1, float scale);
/* A CONST of dtype and shape holding random values in [0, 1). */
int tgraph_const(tgraph *t, const char *name, ir_dtype dt, int ndim, int64_t d0, int64_t d1);

/* ---- ops -------------------------------------------------------------------- */

/* An op reading the nsrc nodes src. */
int tgraph_op_srcs(tgraph *t, ir_op op, const char *name, const int *src, int nsrc);
/* tgraph_op(t, op, name, a, b, ...): an op reading the listed nodes. */
#define tgraph_op(t, op, name, ...) \
    tgraph_op_srcs(t, op, name, (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))
/* RESHAPE of x to dims (IR_DIM_SEQ for S). */
int tgraph_reshape(tgraph *t, const char *name, int x, int ndim, const int64_t *dims);
/* TRANSPOSE of x by perm (len entries: the loader keeps the length in ndim). */
int tgraph_transpose(tgraph *t, const char *name, int x, int len, const int *perm);
/* SLICE of x: [start, start + len) along axis. */
int tgraph_slice(tgraph *t, const char *name, int x, int axis, int64_t start, int64_t len);

/* ---- weights ---------------------------------------------------------------- */

/* A random value in (-2, 2) * scale that dt holds exactly (multiples of
 * 2^-10 for float16 and 2^-7 for bfloat16 below 2; any float for float32);
 * scale a power of two keeps it exact. */
float tgraph_rand_exact(ir_dtype dt, float scale);
/* The values of weight node i, or NULL. */
const float *tgraph_values(const tgraph *t, int node);
/* The image opened as t->st / t->w under `name` (messages name it): 0, or
 * -1 with d set. */
int tgraph_open_weights(tgraph *t, const char *name, diag *d);
/* The storage type of an IR float dtype. */
st_dtype tgraph_st_dtype(ir_dtype dt);

#endif
