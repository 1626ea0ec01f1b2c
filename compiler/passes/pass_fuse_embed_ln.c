/*
 * pass_fuse_embed_ln — the embedding sum and its LayerNorm as one kernel.
 *
 * Pattern: layer_norm(x) where x is a tree of adds whose leaves are 1..3
 * gathers, each from a compile-time table with an index that is a request
 * input, an arange or a pad_positions (position ids); every add and gather read only by its
 * parent.  It becomes EMBED_LN(gamma, beta, table_0, index_0, ...), and the
 * gathered rows never exist as tensors.
 *
 * Order of the sum: EMBED_LN adds its rows left to right in float,
 * ((g0 + g1) + g2).  Any tree of at most three leaves can be listed that
 * way exactly: at an add, one side is a single gather (else there would be
 * four leaves), and float addition commutes exactly, so add(A, leaf) and
 * add(leaf, A) are both "A's list, then the leaf".  The fused result is
 * therefore bit-identical to the tree's, whatever its shape.
 *
 * Why the index must be an input, an arange or a pad_positions: the
 * EMBED_LN kernel reads token ids, token types or the position s straight
 * from the request block (kernels.h), with no index tensor in between, and
 * computes RoBERTa's position ids from the ids there.  A table must be a weight
 * (or become a CONST) because it lives in the plan's weight blob.
 */
#include "pass_rewrite.h"
#include "passes.h"

/* Append the leaves of `node` in sum order; 0 if it is not such a tree. */
static int pass_embed_walk(const ir_graph *g, const pass_uses *u, int node, pass_embed_match *m) {
    const ir_node *n = &g->nodes[node];
    if (!pass_single_use(u, node) || u->taken[node]) return 0;
    if (n->op == IR_OP_GATHER) {
        const ir_node *ix = &g->nodes[n->src[1]];
        if (m->ngathers == IR_MAX_GATHERS || !u->is_static[n->src[0]]) return 0;
        if (ix->op != IR_OP_INPUT && ix->op != IR_OP_ARANGE && ix->op != IR_OP_PAD_POSITIONS) return 0;
        m->table[m->ngathers] = n->src[0];
        m->index[m->ngathers++] = n->src[1];
        m->absorb[m->nabsorb++] = node;
        return 1;
    }
    if (n->op != IR_OP_ADD || n->src[0] == n->src[1]) return 0;
    int a = n->src[0], b = n->src[1];
    int a_leaf = g->nodes[a].op == IR_OP_GATHER, b_leaf = g->nodes[b].op == IR_OP_GATHER;
    /* The single-gather side goes last; with two gathers, operand order. */
    int first = b_leaf ? a : a_leaf ? b : -1, second = b_leaf ? b : a;
    if (first < 0) return 0;
    if (!pass_embed_walk(g, u, first, m) || !pass_embed_walk(g, u, second, m)) return 0;
    m->absorb[m->nabsorb++] = node;
    return 1;
}

int pass_embed_ln_match(const ir_graph *g, const pass_uses *u, int ln, pass_embed_match *m) {
    m->ngathers = 0;
    m->nabsorb = 0;
    const ir_node *n = &g->nodes[ln];
    if (n->op != IR_OP_LAYER_NORM || u->taken[ln]) return 0;
    if (!pass_embed_walk(g, u, n->src[0], m)) return 0;
    return m->ngathers >= 1;
}

static int pass_fuse_embed_ln_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    for (int i = 0; i < u.count; i++) {
        pass_embed_match m;
        if (!pass_embed_ln_match(g, &u, i, &m)) continue;
        ir_node *n = &g->nodes[i];
        int src[2 + 2 * IR_MAX_GATHERS] = {n->src[1], n->src[2]}, nsrc = 2;
        for (int k = 0; k < m.ngathers; k++) {
            src[nsrc++] = m.table[k];
            src[nsrc++] = m.index[k];
        }
        float eps = n->eps;
        pass_node_become(n, IR_OP_EMBED_LN, src, nsrc);
        n->eps = eps;
        n->ngathers = m.ngathers;
        u.taken[i] = 1;
        for (int k = 0; k < m.nabsorb; k++) u.taken[m.absorb[k]] = u.dead[m.absorb[k]] = 1;
    }
    int rc = pass_commit(g, u.dead, u.count, "fuse_embed_ln", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_embed_ln = {"fuse_embed_ln", pass_fuse_embed_ln_run};
