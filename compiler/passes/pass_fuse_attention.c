/*
 * pass_fuse_attention — the multi-head attention chain to one ATTENTION.
 *
 * Pattern, matched backwards from its last node:
 *
 *     q2d [S, NH·HD] -> reshape [S, NH, HD] -> transpose [1, 0, 2] = qh
 *     (k2d and v2d the same way: kh, vh)
 *     batched_matmul(qh, kh, transpose_b) [-> scale] [-> add(., bias)]
 *       [-> mask(., m)] -> softmax -> batched_matmul(., vh)
 *       -> transpose [1, 0, 2] -> reshape [S, NH·HD]
 *
 * where bias is a rel_pos_bias (MPNet's relative-position bias, shared by
 * every layer, so it is read, not absorbed), becomes ATTENTION(q, k, v
 * [, m] [, bias]) with heads NH, head_dim HD, the scale
 * (1 when there is no scale op) and column offsets: when q2d (k2d, v2d) is
 * a column slice of a 2-D tensor — merge_qkv's output — and the slice is
 * read only by this pattern, the slice is absorbed and its start becomes
 * q_off (k_off, v_off) into the merged tensor.  The reshapes and
 * transposes disappear: ATTENTION reads heads as column blocks and writes
 * [S, NH·HD] directly, which is exactly the layout the chain produced.
 *
 * Matching is strict about layout: a reshape must split the columns of a
 * 2-D tensor into [rows, NH, HD] (not move S elsewhere), both transposes
 * must be [1, 0, 2], the final reshape must merge back to [rows, NH·HD],
 * and q, k, v must agree on NH and HD.  Scale must come before mask (the
 * order transformers uses, and the one ATTENTION computes).  Anything else
 * is left unfused.  Every node inside the pattern must be read only inside
 * it (q, k and v may be the same tensor, so membership is checked by
 * counting readers, not by "one consumer").
 */
#include <stdlib.h>

#include "pass_rewrite.h"
#include "passes.h"

#define PASS_ATTN_MAX 20

typedef struct pass_attn_operand {
    int head;                    /* the transpose [NH, S, HD] */
    int split;                   /* the reshape [S, NH, HD] */
    int slice;                   /* a column slice under the reshape, or -1 */
    int src;                     /* what ATTENTION reads */
    int off;
    int64_t heads, head_dim;
} pass_attn_operand;

static int pass_attn_perm102(const ir_node *n) {
    return n->op == IR_OP_TRANSPOSE && n->ndim == 3 && n->perm[0] == 1 && n->perm[1] == 0 &&
           n->perm[2] == 2;
}

/* qh/kh/vh: transpose [1,0,2] of reshape [R, NH, HD] of a 2-D [R, NH·HD]. */
static int pass_attn_operand_match(const ir_graph *g, int head, pass_attn_operand *o) {
    const ir_node *t = &g->nodes[head];
    if (!pass_attn_perm102(t)) return 0;
    int split = t->src[0];
    const ir_node *r = &g->nodes[split];
    if (r->op != IR_OP_RESHAPE || r->ndim != 3) return 0;
    const ir_node *x = &g->nodes[r->src[0]];
    if (x->ndim != 2 || x->shape[0] != r->shape[0] || x->shape[1] == IR_DIM_SEQ ||
        r->shape[1] == IR_DIM_SEQ || r->shape[2] == IR_DIM_SEQ ||
        x->shape[1] != r->shape[1] * r->shape[2] || x->dtype == IR_DTYPE_I32)
        return 0;
    o->head = head;
    o->split = split;
    o->slice = -1;
    o->src = r->src[0];
    o->off = 0;
    o->heads = r->shape[1];
    o->head_dim = r->shape[2];
    if (x->op == IR_OP_SLICE && x->axis == 1 && g->nodes[x->src[0]].ndim == 2) o->slice = r->src[0];
    return 1;
}

static void pass_attn_fuse_one(ir_graph *g, pass_uses *u, int last) {
    const ir_node *rs = &g->nodes[last];
    if (rs->op != IR_OP_RESHAPE || rs->ndim != 2 || u->taken[last]) return;
    int tr = rs->src[0];
    if (!pass_attn_perm102(&g->nodes[tr])) return;
    int pv = g->nodes[tr].src[0];
    const ir_node *bmm2 = &g->nodes[pv];
    if (bmm2->op != IR_OP_BATCHED_MATMUL || bmm2->transpose_b) return;
    int sm = bmm2->src[0], vh = bmm2->src[1];
    if (g->nodes[sm].op != IR_OP_SOFTMAX) return;
    int cur = g->nodes[sm].src[0], mask_node = -1, scale_node = -1, mask = -1, bias_node = -1, bias = -1;
    if (g->nodes[cur].op == IR_OP_MASK) {
        mask_node = cur;
        mask = g->nodes[cur].src[1];
        cur = g->nodes[cur].src[0];
    }
    if (g->nodes[cur].op == IR_OP_ADD) { /* a score bias: one side a rel_pos_bias */
        int a = g->nodes[cur].src[0], b = g->nodes[cur].src[1];
        int side = g->nodes[b].op == IR_OP_REL_POS_BIAS ? 1 : g->nodes[a].op == IR_OP_REL_POS_BIAS ? 0 : -1;
        if (side < 0) return;
        bias_node = cur;
        bias = side ? b : a;
        cur = side ? a : b;
    }
    if (g->nodes[cur].op == IR_OP_SCALE) {
        scale_node = cur;
        cur = g->nodes[cur].src[0];
    }
    int qk = cur;
    const ir_node *bmm1 = &g->nodes[qk];
    if (bmm1->op != IR_OP_BATCHED_MATMUL || !bmm1->transpose_b) return;
    pass_attn_operand op[3];
    if (!pass_attn_operand_match(g, bmm1->src[0], &op[0]) ||
        !pass_attn_operand_match(g, bmm1->src[1], &op[1]) || !pass_attn_operand_match(g, vh, &op[2]))
        return;
    for (int k = 1; k < 3; k++)
        if (op[k].heads != op[0].heads || op[k].head_dim != op[0].head_dim) return;
    /* The result [rows, NH·HD] in the transpose's row order. */
    const ir_node *t = &g->nodes[tr];
    if (rs->shape[0] != t->shape[0] || rs->shape[1] != op[0].heads * op[0].head_dim) return;

    int pat[PASS_ATTN_MAX], npat = 0;
    pat[npat++] = last;
    pat[npat++] = tr;
    pat[npat++] = pv;
    pat[npat++] = sm;
    if (mask_node >= 0) pat[npat++] = mask_node;
    if (bias_node >= 0) pat[npat++] = bias_node;
    if (scale_node >= 0) pat[npat++] = scale_node;
    pat[npat++] = qk;
    for (int k = 0; k < 3; k++) {
        pat[npat++] = op[k].head;
        pat[npat++] = op[k].split;
    }
    int inner = npat;  /* every pattern node but `last` must be private to it */
    for (int k = 1; k < inner; k++)
        if (!pass_absorbable(u, g, pat[k], pat, inner)) return;
    /* Slices are optional: absorbed when private, read as they are if not. */
    for (int k = 0; k < 3; k++) {
        if (op[k].slice < 0) continue;
        int same = -1;
        for (int j = 0; j < k; j++)
            if (op[j].slice == op[k].slice) same = j;
        if (same >= 0) {  /* one slice read as two operands: decided once */
            op[k].src = op[same].src;
            op[k].off = op[same].off;
        } else if (pass_absorbable(u, g, op[k].slice, pat, inner)) {
            const ir_node *s = &g->nodes[op[k].slice];
            op[k].src = s->src[0];
            op[k].off = (int)s->start;
            pat[npat++] = op[k].slice;
        }
    }

    int src[5] = {op[0].src, op[1].src, op[2].src}, nsrc = 3;
    if (mask >= 0) src[nsrc++] = mask;
    if (bias >= 0) src[nsrc++] = bias;
    float scale = scale_node >= 0 ? g->nodes[scale_node].scale : 1.0f;
    ir_node *n = &g->nodes[last];
    pass_node_become(n, IR_OP_ATTENTION, src, nsrc);
    n->has_bias = bias >= 0;
    n->heads = (int)op[0].heads;
    n->head_dim = (int)op[0].head_dim;
    n->scale = scale;
    n->q_off = op[0].off;
    n->k_off = op[1].off;
    n->v_off = op[2].off;
    for (int k = 0; k < npat; k++) {
        u->taken[pat[k]] = 1;
        if (pat[k] != last) u->dead[pat[k]] = 1;
    }
}

static int pass_fuse_attention_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    for (int i = 0; i < u.count; i++)
        if (g->nodes[i].op == IR_OP_RESHAPE) pass_attn_fuse_one(g, &u, i);
    int rc = pass_commit(g, u.dead, u.count, "fuse_attention", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_fuse_attention = {"fuse_attention", pass_fuse_attention_run};
