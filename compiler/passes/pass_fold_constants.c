/*
 * pass_fold_constants — weight layout work done once, at compile time.
 *
 * Every node whose sources are all WEIGHT or CONST nodes is evaluated now,
 * by the reference executor's own op code (ref_eval_static), and replaced
 * by a CONST holding the float32 result.  Walking the array in order makes
 * this transitive: a node whose sources were folded a moment ago is itself
 * foldable.  The typical cases are merge_qkv's CONCAT of the q/k/v weights
 * and biases, and any transpose, reshape, slice or scale of a weight a
 * hand-written graph may apply — none of which should cost a kernel launch
 * per request.
 *
 * Using ref.c rather than a second implementation is the point: the
 * folded values are exactly what the unfolded graph computes in the
 * reference executor, so folding cannot change a result.  A CONST is
 * float32 whatever it was computed from (a CONCAT of F16 weights holds
 * values F16 represents exactly, so a half-precision plan loses nothing).
 * The WEIGHT nodes a fold leaves unread are removed by the final pass_dce.
 */
#include <stdlib.h>

#include "pass_rewrite.h"
#include "passes.h"
#include "ref.h"

static int pass_fold_is_leaf_const(const ir_node *n) {
    return n->op == IR_OP_WEIGHT || n->op == IR_OP_CONST;
}

static int pass_fold_constants_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    const weights *weights = ctx ? ctx->weights : NULL;
    for (int i = 0; i < g->count; i++) {
        ir_node *n = &g->nodes[i];
        /* a sinusoid has no sources and is a compile-time table all the same */
        if ((n->nsrc == 0 && n->op != IR_OP_SINUSOID) || n->op == IR_OP_INPUT || n->op == IR_OP_ARANGE) continue;
        int foldable = 1;
        for (int s = 0; s < n->nsrc; s++)
            foldable &= pass_fold_is_leaf_const(&g->nodes[n->src[s]]);
        if (!foldable) continue;
        float *data = NULL;
        if (ref_eval_static(g, weights, i, &data, d)) {
            diag_prefix(d, "constant folding of %s '%s': ", ir_op_name(n->op), n->name);
            return -1;
        }
        pass_node_become(n, IR_OP_CONST, NULL, 0);
        n->dtype = IR_DTYPE_F32;
        n->data = data;
    }
    return pass_commit(g, NULL, 0, "fold_constants", d);
}

const pass_desc pass_fold_constants = {"fold_constants", pass_fold_constants_run};
