/*
 * pass_fuse_linear_ln — a dense layer, its residual add and its LayerNorm,
 * one op (the default fusion level only).
 *
 * Pattern, from each add_ln:
 *
 *     ADD_LN(x = LINEAR(x', w [, b]), gamma, beta [, residual] [, c])
 *         -> LINEAR_LN(x', w, gamma, beta [, b or c] [, residual])
 *
 * where the LINEAR has no activation and no residual of its own, is read
 * by this add_ln alone and is not a graph output, and at most one of the
 * two has a bias.  LINEAR_LN computes LayerNorm(((x'·wᵀ) + bias) +
 * residual)·gamma + beta, which is the chain's own order: LINEAR rounds
 * the product to float and adds its bias in float, ADD_LN adds its bias
 * (x + c) and then the residual in float — so with the bias on either
 * side the fused node computes the chain's values bit for bit in the
 * reference executor (compiler/ir/ref.c).  With both biases present the
 * chain adds two vectors in sequence, which one bias cannot say, and an
 * add_ln bias computed at run time is no GEMM bias: both left unfused.
 *
 * Why a pass of its own after fuse_add_ln, not a wider fuse_linear:
 * fuse_linear deliberately leaves the residual add that feeds a
 * layer_norm to fuse_add_ln (see pass_fuse_linear.c), so by now a BERT
 * layer's output projection and FC2 are exactly LINEAR(bias) -> ADD_LN(
 * residual), and the baseline fusion level, which stops there, keeps the
 * GEMM + LayerNorm-kernel structure unchanged.  This pass then turns each
 * pair into one node, which lowers to one GEMM_LN launch (bias, residual
 * and LayerNorm in the GEMM's epilogue, docs/passes.md).
 */
#include "pass_rewrite.h"
#include "passes.h"

static void pass_linear_ln_fuse_one(ir_graph *g, pass_uses *u, int ln) {
    ir_node *n = &g->nodes[ln];
    int lin = n->src[0];
    const ir_node *l = &g->nodes[lin];
    if (l->op != IR_OP_LINEAR || l->has_act || l->has_residual || !pass_single_use(u, lin) || u->taken[lin]) return;
    int ln_bias = -1, res = -1, at = 3;
    if (n->has_residual) res = n->src[at++];
    if (n->has_bias) ln_bias = n->src[at++];
    /* two biases in a row, or a bias computed at run time (the GEMM's
     * epilogue reads compile-time biases only), stay unfused */
    if ((l->has_bias && ln_bias >= 0) || (ln_bias >= 0 && !u->is_static[ln_bias])) return;
    int bias = l->has_bias ? l->src[2] : ln_bias;
    int src[6] = {l->src[0], l->src[1], n->src[1], n->src[2]}, nsrc = 4;
    if (bias >= 0) src[nsrc++] = bias;
    if (res >= 0) src[nsrc++] = res;
    float eps = n->eps;
    pass_node_become(n, IR_OP_LINEAR_LN, src, nsrc);
    n->eps = eps;
    n->has_bias = bias >= 0;
    n->has_residual = res >= 0;
    u->taken[ln] = u->taken[lin] = 1;
    u->dead[lin] = 1;
}

static int pass_fuse_linear_ln_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    for (int i = 0; i < u.count; i++)
        if (g->nodes[i].op == IR_OP_ADD_LN && !u.taken[i]) pass_linear_ln_fuse_one(g, &u, i);
    int rc = pass_commit(g, u.dead, u.count, "fuse_linear_ln", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_linear_ln = {"fuse_linear_ln", pass_fuse_linear_ln_run};
