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
 * passes_run() is the pipeline `bertc compile` uses, in this order (why in
 * docs/passes.md): dce, fuse_linear, merge_qkv, fuse_attention,
 * fuse_add_ln, fuse_embed_ln, fuse_pool_normalize, fold_constants, dce.  After it, one BERT
 * encoder layer is exactly LINEAR(qkv, bias) -> ATTENTION -> LINEAR(bias)
 * -> ADD_LN(residual) -> LINEAR(bias, act) -> LINEAR(bias) ->
 * ADD_LN(residual), the embeddings one EMBED_LN (its position index an
 * ARANGE node, which lowers to no work), the pooler SLICE -> LINEAR(bias,
 * tanh) -> RESHAPE, a sentence-transformers head one POOL (normalize set
 * when an l2_normalize follows).
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

/* Removes every node no graph output depends on.  Declared INPUT nodes are
 * kept (they are the request's interface) and flagged `unused` when nothing
 * reads them; the lowering need not copy them. */
int pass_dce(ir_graph *g, diag *d);

/* matmul [+ bias_add (compile-time bias)] [+ add (residual)] [+ activation]
 * -> LINEAR.  Every matmul becomes a LINEAR, with or without an epilogue.
 * An add whose only consumer is a layer_norm is left for fuse_add_ln. */
int pass_fuse_linear(ir_graph *g, diag *d);

/* LINEARs reading the same x with compile-time weights (and biases), no
 * activation and no residual -> one LINEAR over CONCAT(weights) and
 * CONCAT(biases); the old nodes become column SLICEs of it. */
int pass_merge_qkv(ir_graph *g, diag *d);

/* reshape/transpose of q, k, v -> batched_matmul(transpose_b) [-> scale]
 * [-> mask] -> softmax -> batched_matmul -> transpose -> reshape
 * -> ATTENTION (column slices of q, k, v become offsets). */
int pass_fuse_attention(ir_graph *g, diag *d);

/* layer_norm([bias_add](add(a, b))) -> ADD_LN; a plain layer_norm becomes
 * an ADD_LN with neither bias nor residual.  A layer_norm over embedding
 * gathers is left for fuse_embed_ln. */
int pass_fuse_add_ln(ir_graph *g, diag *d);

/* layer_norm over a tree of adds of 1..3 gathers (indices: request inputs
 * or arange) -> EMBED_LN. */
int pass_fuse_embed_ln(ir_graph *g, diag *d);

/* l2_normalize(pool(x [, mask])), the pool read by it alone -> POOL with
 * `normalize` set: the sentence embedding in one kernel. */
int pass_fuse_pool_normalize(ir_graph *g, diag *d);

/* Evaluates every node whose sources are all WEIGHT or CONST nodes with the
 * reference executor's code and replaces it by a CONST, so no layout work
 * (concat, transpose, reshape, scale of weights) runs at inference. */
int pass_fold_constants(ir_graph *g, const weights *weights, diag *d);

/* ---- the pipeline --------------------------------------------------------- */

#define PASSES_MAX_STEPS 9

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

/* All passes in order; r (may be NULL) receives the counts around each.
 * `weights` is the model's weights file (constant folding reads it). */
int passes_run(ir_graph *g, const weights *weights, passes_report *r, diag *d);

/* One line per pass: "fuse_linear: 412 -> 331 nodes (matmul -19, linear +19, ...)". */
void passes_report_write(const passes_report *r, void *file /* FILE* */);

#endif
