/*
 * pass_fuse_pool_normalize — a sentence embedding in one launch.
 *
 * sentence-transformers models end in Pooling and, often, Normalize: the
 * graph says pool(x, mask) -> l2_normalize.  Unfused, that is two kernels,
 * the second reading back one row the first has just written; the pooled
 * row is tiny, so the cost is almost all launch latency, which is what a
 * single-request engine cannot afford.  The POOL kernel already holds the
 * pooled row in registers when it finishes, and the norm is one more block
 * reduction over it, so the pass folds the l2_normalize into the pool it
 * follows: the l2_normalize node becomes POOL(x [, mask]) with the pool's
 * mode and `normalize` set, and the pool node goes.
 *
 * Rules as in every pass: the pool must be read by the l2_normalize alone
 * and not be a graph output (else the un-normalised row is still needed and
 * both stay); a pool that already normalises is not fused twice (x/|x| of a
 * unit vector is not bit-identical to the vector).  The reference executor
 * computes the fused node as the chain — the pooled row rounded to float,
 * then the normalize row code — so the bits do not change.
 */
#include "pass_rewrite.h"
#include "passes.h"

static int pass_fuse_pool_normalize_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    for (int i = 0; i < u.count; i++) {
        ir_node *n = &g->nodes[i];
        if (n->op != IR_OP_L2_NORMALIZE || u.taken[i]) continue;
        int p = n->src[0];
        const ir_node *pool = &g->nodes[p];
        if (pool->op != IR_OP_POOL || pool->normalize || !pass_absorbable(&u, g, p, &i, 1)) continue;
        int src[2] = {pool->src[0], pool->src[1]}, nsrc = pool->nsrc;
        ir_pool_mode mode = pool->pool_mode;
        pass_node_become(n, IR_OP_POOL, src, nsrc);
        n->pool_mode = mode;
        n->normalize = 1;
        u.taken[i] = 1;
        u.taken[p] = u.dead[p] = 1;
    }
    int rc = pass_commit(g, u.dead, u.count, "fuse_pool_normalize", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_pool_normalize = {"fuse_pool_normalize", pass_fuse_pool_normalize_run};
