/*
 * pass_fuse_linear — GEMM epilogue fusion.
 *
 * Pattern, from each matmul, following single consumers:
 *
 *     matmul(x, w) [-> bias_add(., b)] [-> add(., r)] [-> activation]
 *
 * becomes LINEAR(x, w [, b] [, r]) with has_bias / has_residual / has_act,
 * computed as act(((x·wᵀ) + b) + r) — the unfused chain's order, so the
 * epilogue rounds where the chain stored its tensors.  Each step is taken
 * only if the node before it has exactly that one consumer and is not a
 * graph output; a matmul with no epilogue at all still becomes a LINEAR,
 * so the lowering has one GEMM op to handle, not two.
 *
 * The bias must be a compile-time tensor (a WEIGHT, a CONST, or something
 * computed from them that fold_constants will make a CONST): it goes into
 * the plan's weights and cuBLASLt's BIAS epilogue.  The residual is any
 * [M, N] tensor.
 *
 * One deliberate exception: an add whose only consumer is a layer_norm is
 * not taken as a residual.  fuse_add_ln folds that add into the LayerNorm
 * kernel instead (ADD_LN reads x and the residual and normalises in one
 * pass).  Either way the layer costs the same number of launches (one GEMM,
 * one LayerNorm kernel), but this way the GEMM keeps a pure BIAS epilogue
 * (no C operand, the cuBLASLt configuration with the best heuristics), and
 * the pre-LayerNorm sum x + residual, the largest values of the layer, is
 * formed in float32 inside the LayerNorm kernel and never stored in the
 * plan's half precision (where it would overflow first).
 */
#include <stdlib.h>

#include "pass_rewrite.h"
#include "passes.h"

/* The add `a` only feeds a layer_norm as its x: fuse_add_ln's business. */
static int pass_linear_add_feeds_ln(const ir_graph *g, const pass_uses *u, int a) {
    if (!pass_single_use(u, a)) return 0;
    const ir_node *ln = &g->nodes[u->user[a]];
    return ln->op == IR_OP_LAYER_NORM && ln->src[0] == a;
}

/* The single consumer of `cur` if it is an untaken node of op `op`. */
static int pass_linear_next(const ir_graph *g, const pass_uses *u, int cur, ir_op op) {
    if (!pass_single_use(u, cur)) return -1;
    int c = u->user[cur];
    return !u->taken[c] && g->nodes[c].op == op ? c : -1;
}

static void pass_linear_fuse_one(ir_graph *g, pass_uses *u, int mm) {
    const ir_node *m = &g->nodes[mm];
    int x = m->src[0], w = m->src[1], bias = -1, res = -1, has_act = 0;
    ir_act act = IR_ACT_GELU_ERF;
    int chain[4] = {mm}, nchain = 1, cur = mm;

    int c = pass_linear_next(g, u, cur, IR_OP_BIAS_ADD);
    if (c >= 0 && g->nodes[c].src[0] == cur && g->nodes[c].src[1] != cur &&
        u->is_static[g->nodes[c].src[1]]) {
        bias = g->nodes[c].src[1];
        chain[nchain++] = cur = c;
    }
    c = pass_linear_next(g, u, cur, IR_OP_ADD);
    if (c >= 0 && !pass_linear_add_feeds_ln(g, u, c)) {
        const ir_node *a = &g->nodes[c];
        /* add(cur, cur) is no residual: both operands are the product. */
        if ((a->src[0] == cur) != (a->src[1] == cur)) {
            res = a->src[0] == cur ? a->src[1] : a->src[0];
            chain[nchain++] = cur = c;
        }
    }
    c = pass_linear_next(g, u, cur, IR_OP_ACTIVATION);
    if (c >= 0) {
        has_act = 1;
        act = g->nodes[c].act;
        chain[nchain++] = cur = c;
    }

    int src[4] = {x, w}, nsrc = 2;
    if (bias >= 0) src[nsrc++] = bias;
    if (res >= 0) src[nsrc++] = res;
    ir_node *n = &g->nodes[cur];
    pass_node_become(n, IR_OP_LINEAR, src, nsrc);
    n->has_bias = bias >= 0;
    n->has_residual = res >= 0;
    n->has_act = has_act;
    n->act = act;
    for (int k = 0; k < nchain; k++) {
        u->taken[chain[k]] = 1;
        if (chain[k] != cur) u->dead[chain[k]] = 1;
    }
}

static int pass_fuse_linear_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    int n = g->count;
    for (int i = 0; i < n; i++)
        if (g->nodes[i].op == IR_OP_MATMUL && !u.taken[i]) pass_linear_fuse_one(g, &u, i);
    int rc = pass_commit(g, u.dead, u.count, "fuse_linear", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_linear = {"fuse_linear", pass_fuse_linear_run};
