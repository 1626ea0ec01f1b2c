/*
 * pass_dce — dead-code elimination.
 *
 * A node is live if some graph output depends on it; everything else goes,
 * weights included, so neither the lowering nor the plan writer ever sees
 * a tensor nobody reads.  Liveness is one backward walk: the array is in
 * topological order, so when the walk reaches a node every reader of it has
 * already been seen.
 *
 * Request inputs are the exception: they are the model's declared
 * interface (a request may still carry token_type_ids to a model that
 * ignores them, and a required input stays required), so they stay, and
 * the ones nothing reads are flagged `unused` for the lowering, which then
 * need not copy or validate them.
 *
 * It runs first (so the fusion passes never match patterns in dead code)
 * and last (constant folding leaves the weights it folded unread).
 */
#include <stdlib.h>

#include "pass_rewrite.h"
#include "passes.h"

static int pass_dce_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    int n = g->count;
    unsigned char *live = calloc((size_t)(n ? n : 1), 1);
    unsigned char *dead = calloc((size_t)(n ? n : 1), 1);
    if (!live || !dead) {
        free(live);
        free(dead);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    }
    for (int o = 0; o < g->noutputs; o++) {
        int j = g->outputs[o].node;
        if (j >= 0 && j < n) live[j] = 1;
    }
    for (int i = n - 1; i >= 0; i--) {
        const ir_node *nd = &g->nodes[i];
        if (!live[i]) continue;
        for (int s = 0; s < nd->nsrc; s++)
            if (nd->src[s] >= 0 && nd->src[s] < i) live[nd->src[s]] = 1;
    }
    for (int i = 0; i < n; i++) {
        ir_node *nd = &g->nodes[i];
        if (nd->op == IR_OP_INPUT) nd->unused = !live[i];
        else dead[i] = !live[i];
    }
    int rc = pass_commit(g, dead, n, "dce", d);
    free(live);
    free(dead);
    return rc;
}

const pass_desc pass_dce = {"dce", pass_dce_run};
