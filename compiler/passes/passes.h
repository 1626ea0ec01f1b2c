/*
 * passes — the graph rewrites between the loaded model and the lowering.
 *
 * The YAML graph is deliberately made of small orthogonal ops; the GPU
 * wants few, large launches.  Each pass here finds one kind of pattern and
 * replaces it by one fused node (ir.h: LINEAR, ATTENTION, ADD_LN, EMBED_LN)
 * or by compile-time data (CONST), rewriting the graph in place and leaving
 * it topologically ordered, shape-checked and computing exactly what it
 * computed before (the reference executor gives the same bits for the
 * fused and the unfused graph; docs/passes.md argues each case).
 *
 * A pass only fuses what is private to the pattern: a node is absorbed
 * only if every consumer of it is inside the pattern and it is not a graph
 * output.  Anything a pass does not recognise is left as it was, so every
 * pass is safe on every graph; what is left unfused is the lowering's to
 * refuse or to run.
 *
 * passes_run_level() is the pipeline `bertc compile` uses, in the order of
 * pass_table.c (why in docs/passes.md): dce, fuse_linear, merge_qkv,
 * fuse_attention, fuse_add_ln, fuse_embed_ln, fuse_linear_ln (default level
 * only), fuse_pool_normalize, fold_constants, dce.  After the baseline
 * level, one BERT encoder layer is exactly LINEAR(qkv, bias) -> ATTENTION
 * -> LINEAR(bias) -> ADD_LN(residual) -> LINEAR(bias, act) -> LINEAR(bias)
 * -> ADD_LN(residual); after the default level LINEAR(qkv, bias) ->
 * ATTENTION -> LINEAR_LN(bias, residual) -> LINEAR(bias, act) ->
 * LINEAR_LN(bias, residual).  The embeddings are one EMBED_LN (its position
 * index an ARANGE node, which lowers to no work), the pooler SLICE ->
 * LINEAR(bias, tanh) -> RESHAPE, a sentence-transformers head one POOL
 * (normalize set when an l2_normalize follows).
 *
 * Every pass returns 0, or -1 with d filled: DIAG_CODE_INTERNAL when the
 * rewritten graph fails its own checks (a pass bug) or memory runs out,
 * DIAG_CODE_INPUT when folding cannot read a weight.
 */
#ifndef BERTC_PASSES_H
#define BERTC_PASSES_H

#include "diag.h"
#include "ir.h"
#include "weights.h"

/*
 * A pass is one file that exports one descriptor, `const pass_desc
 * pass_<name>`, and one line in the pipeline's order (pass_table.c):
 * adding a pass touches nothing else.  What each pass matches and why it is
 * exact is the opening essay of its file.
 */

/* What a pass may read besides the graph. */
typedef struct pass_ctx {
    const weights *weights;           /* the model's tensors (constant folding reads them); may be NULL */
} pass_ctx;

typedef struct pass_desc {
    const char *name;                 /* "dce", "fuse_linear", ... as in reports and -v */
    int (*run)(ir_graph *g, const pass_ctx *ctx, diag *d);
} pass_desc;

/* The pass called `name`, or NULL. */
const pass_desc *passes_find(const char *name);
/* Runs the pass called `name` alone (tests, tools); -1 with d filled for an
 * unknown name (DIAG_CODE_INTERNAL) or whatever the pass reports. */
int passes_run_one(const char *name, ir_graph *g, const weights *weights, diag *d);

/* ---- the pipeline --------------------------------------------------------- */

#define PASSES_MAX_STEPS 32               /* pass_table.c checks its order fits */

typedef struct passes_step {
    const char *name;                 /* "dce", "fuse_linear", ... (static) */
    int nodes_before, nodes_after;
    int ops_before[IR_OP_COUNT];      /* node count per op before the pass */
    int ops_after[IR_OP_COUNT];
} passes_step;

typedef struct passes_report {
    int nsteps;
    passes_step steps[PASSES_MAX_STEPS];
} passes_report;

/* Node count per op of g into counts[IR_OP_COUNT]. */
void passes_count_ops(const ir_graph *g, int *counts);

/*
 * Fusion levels (`bertc compile --fusion`).  BASELINE: the passes that give
 * TensorRT's structure, seven launches per encoder layer (the dense layers'
 * residual + LayerNorm stay ADD_LN).  DEFAULT: also fuse_linear_ln, which
 * folds each dense layer and its ADD_LN into one LINEAR_LN.
 */
typedef enum passes_level {
    PASSES_LEVEL_BASELINE,
    PASSES_LEVEL_DEFAULT,
} passes_level;

/* The passes of `level` in order; r (may be NULL) receives the counts
 * around each.  `weights` is the model's weights (constant folding reads
 * them). */
int passes_run_level(ir_graph *g, const weights *weights, passes_level level, passes_report *r, diag *d);
/* passes_run_level at PASSES_LEVEL_DEFAULT. */
int passes_run(ir_graph *g, const weights *weights, passes_report *r, diag *d);

/* One line per pass: "fuse_linear: 412 -> 331 nodes (matmul -19, linear +19, ...)". */
void passes_report_write(const passes_report *r, void *file /* FILE* */);

#endif
