/*
 * pass_fuse_add_ln — a LayerNorm and the additions feeding it, one kernel.
 *
 * Patterns, from each layer_norm(x, gamma, beta):
 *
 *     layer_norm(add(a, b))                 -> ADD_LN(x = a, residual = b) (a the later one)
 *     layer_norm(add(bias_add(y, c), b))    -> ADD_LN(x = y, residual = b, bias = c)
 *     layer_norm(add(a, bias_add(y, c)))    -> ADD_LN(x = y, residual = a, bias = c)
 *     layer_norm(bias_add(y, c))            -> ADD_LN(x = y, bias = c)
 *     layer_norm(x)                         -> ADD_LN(x)
 *
 * ADD_LN computes LayerNorm((x + bias) + residual), which is the chain's
 * own order — (y + c) + b — and, since float addition commutes exactly,
 * also the order of add(a, bias_add(y, c)) = a + (y + c).  So every form is
 * bit-identical to the chain.  For a plain add the operand computed later
 * in the graph becomes x and the earlier one the residual (in a residual
 * block, the skip connection is the older tensor), so the fused node does
 * not depend on how the YAML ordered the add's operands.  An add or bias_add is absorbed only if the
 * node above reads it alone and it is not an output; otherwise ADD_LN reads
 * it as its x.  A plain layer_norm becomes an ADD_LN too, so the lowering
 * has one LayerNorm op.
 *
 * In BERT, fuse_linear has already put each dense layer's bias into its
 * GEMM and deliberately left the residual add (see pass_fuse_linear.c), so
 * what this pass sees is layer_norm(add(LINEAR, h)) -> ADD_LN(residual).
 * The bias forms serve graphs whose bias could not go into a GEMM.
 *
 * A layer_norm over a sum of embedding gathers is skipped: fuse_embed_ln,
 * which runs next, takes it whole (gathers included), which an ADD_LN here
 * would prevent.
 */
#include "pass_rewrite.h"
#include "passes.h"

/* A bias_add private to the add `by` (read once, by it). */
static int pass_add_ln_bias_add(const ir_graph *g, const pass_uses *u, int node, int by) {
    return g->nodes[node].op == IR_OP_BIAS_ADD && pass_single_use(u, node) && u->user[node] == by &&
           !u->taken[node];
}

static void pass_add_ln_fuse_one(ir_graph *g, pass_uses *u, int ln) {
    ir_node *n = &g->nodes[ln];
    int x = n->src[0], res = -1, bias = -1;
    int absorbed[2], nabs = 0;
    const ir_node *xn = &g->nodes[x];
    if (xn->op == IR_OP_ADD && pass_single_use(u, x) && !u->taken[x]) {
        int a = xn->src[0], b = xn->src[1];
        absorbed[nabs++] = x;
        if (a != b && pass_add_ln_bias_add(g, u, a, x)) {
            absorbed[nabs++] = a;
            bias = g->nodes[a].src[1];
            x = g->nodes[a].src[0];
            res = b;
        } else if (a != b && pass_add_ln_bias_add(g, u, b, x)) {
            absorbed[nabs++] = b;
            bias = g->nodes[b].src[1];
            x = g->nodes[b].src[0];
            res = a;
        } else {
            /* x is the operand computed last (the new value), the residual
             * the older one (the skip connection): the sum commutes, and
             * this way add(h, y) and add(y, h) fuse to the same node. */
            x = a > b ? a : b;
            res = a > b ? b : a;
        }
    } else if (xn->op == IR_OP_BIAS_ADD && pass_single_use(u, x) && !u->taken[x]) {
        absorbed[nabs++] = x;
        bias = xn->src[1];
        x = xn->src[0];
    }
    int src[5] = {x, n->src[1], n->src[2]}, nsrc = 3;
    if (res >= 0) src[nsrc++] = res;
    if (bias >= 0) src[nsrc++] = bias;
    float eps = n->eps;
    pass_node_become(n, IR_OP_ADD_LN, src, nsrc);
    n->eps = eps;
    n->has_residual = res >= 0;
    n->has_bias = bias >= 0;
    u->taken[ln] = 1;
    for (int k = 0; k < nabs; k++) u->taken[absorbed[k]] = u->dead[absorbed[k]] = 1;
}

static int pass_fuse_add_ln_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    for (int i = 0; i < u.count; i++) {
        pass_embed_match m;
        if (g->nodes[i].op != IR_OP_LAYER_NORM || u.taken[i]) continue;
        if (pass_embed_ln_match(g, &u, i, &m)) continue;
        pass_add_ln_fuse_one(g, &u, i);
    }
    int rc = pass_commit(g, u.dead, u.count, "fuse_add_ln", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_add_ln = {"fuse_add_ln", pass_fuse_add_ln_run};
