/*
 * pass_merge_qkv — one GEMM for the LINEARs that share their input.
 *
 * Pattern: two or more LINEARs reading the same x, each with a
 * compile-time weight [N_i, K] (and, if they have one, a compile-time
 * bias), none with an activation or a residual, all with or all without a
 * bias.  In BERT these are the query, key and value projections.  They
 * become
 *
 *     W = CONCAT(W_0, W_1, ...) along axis 0      [sum N_i, K]
 *     b = CONCAT(b_0, b_1, ...) along axis 0      [sum N_i]
 *     y = LINEAR(x, W, b)                         [M, sum N_i]
 *
 * and each old LINEAR becomes SLICE(y, axis 1, offset_i, N_i) in place, so
 * its readers are untouched; fuse_attention then absorbs those slices into
 * its q/k/v column offsets, and fold_constants turns the CONCATs into
 * CONST weights, so at inference this is one GEMM with N = 3H instead of
 * three with N = H (a better-shaped GEMM at batch 1, and two launches fewer
 * per layer).  Every output column is the same dot product as before, so
 * the result is bit-identical.
 *
 * Why an activation or residual excludes a LINEAR: its epilogue would have
 * to differ per column block, which no single GEMM epilogue does.  Groups
 * are formed in graph order (the slices' offsets follow it: q, k, v) and
 * hold at most IR_MAX_SRCS members, the most a CONCAT reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_rewrite.h"
#include "passes.h"

/* A LINEAR that may join a group: plain epilogue, compile-time operands. */
static int pass_qkv_candidate(const ir_graph *g, const pass_uses *u, int i) {
    const ir_node *n = &g->nodes[i];
    if (n->op != IR_OP_LINEAR || n->has_act || n->has_residual || u->taken[i]) return 0;
    if (!u->is_static[n->src[1]]) return 0;
    return !n->has_bias || u->is_static[n->src[2]];
}

/* "layer0/q+k+v": the members' names after their common "dir/" prefix. */
static void pass_qkv_name(const ir_graph *g, const int *member, int count, char *buf, size_t cap) {
    const char *first = g->nodes[member[0]].name;
    size_t prefix = 0;
    for (size_t k = 0; first[k]; k++) {
        if (first[k] != '/') continue;
        int all = 1;
        for (int m = 1; m < count; m++) all &= strncmp(g->nodes[member[m]].name, first, k + 1) == 0;
        if (all) prefix = k + 1;
    }
    size_t len = (size_t)snprintf(buf, cap, "%.*s", (int)prefix, first);
    for (int m = 0; m < count && len < cap; m++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", m ? "+" : "",
                                g->nodes[member[m]].name + prefix);
}

static int pass_qkv_merge(ir_graph *g, pass_uses *u, const int *member, int count, diag *d) {
    char name[400], part[480];
    pass_qkv_name(g, member, count, name, sizeof name);
    int has_bias = g->nodes[member[0]].has_bias, x = g->nodes[member[0]].src[0];
    int line = g->nodes[member[0]].line, col = g->nodes[member[0]].col;
    int ws[IR_MAX_SRCS], bs[IR_MAX_SRCS];
    int64_t offset[IR_MAX_SRCS], width[IR_MAX_SRCS], total = 0;
    for (int m = 0; m < count; m++) {
        const ir_node *n = &g->nodes[member[m]];
        ws[m] = n->src[1];
        bs[m] = has_bias ? n->src[2] : -1;
        offset[m] = total;
        width[m] = n->shape[1];
        total += width[m];
    }
    snprintf(part, sizeof part, "%s.weight", name);
    int wcat = pass_node_append(g, IR_OP_CONCAT, part, ws, count, d);
    if (wcat < 0) return -1;
    int src[3] = {x, wcat, -1};
    if (has_bias) {
        snprintf(part, sizeof part, "%s.bias", name);
        int bcat = pass_node_append(g, IR_OP_CONCAT, part, bs, count, d);
        if (bcat < 0) return -1;
        src[2] = bcat;
    }
    int merged = pass_node_append(g, IR_OP_LINEAR, name, src, has_bias ? 3 : 2, d);
    if (merged < 0) return -1;
    g->nodes[merged].has_bias = has_bias;
    for (int k = merged - (has_bias ? 2 : 1); k <= merged; k++) {
        g->nodes[k].line = line;
        g->nodes[k].col = col;
    }
    for (int m = 0; m < count; m++) {
        ir_node *n = &g->nodes[member[m]];
        pass_node_become(n, IR_OP_SLICE, &merged, 1);
        n->axis = 1;
        n->start = offset[m];
        n->len = width[m];
        u->taken[member[m]] = 1;
    }
    return 0;
}

static int pass_merge_qkv_run(ir_graph *g, const pass_ctx *ctx, diag *d) {
    (void)ctx;
    pass_uses u;
    if (pass_uses_init(&u, g, d)) return -1;
    int n = g->count, rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (!pass_qkv_candidate(g, &u, i)) continue;
        const ir_node *first = &g->nodes[i];
        int member[IR_MAX_SRCS] = {i}, count = 1;
        for (int j = i + 1; j < n && count < IR_MAX_SRCS; j++) {
            const ir_node *o = &g->nodes[j];
            if (pass_qkv_candidate(g, &u, j) && o->src[0] == first->src[0] &&
                o->has_bias == first->has_bias &&
                g->nodes[o->src[1]].shape[1] == g->nodes[first->src[1]].shape[1])
                member[count++] = j;
        }
        if (count >= 2) rc = pass_qkv_merge(g, &u, member, count, d);
    }
    if (!rc) rc = pass_commit(g, NULL, 0, "merge_qkv", d);
    pass_uses_free(&u);
    return rc;
}

const pass_desc pass_merge_qkv = {"merge_qkv", pass_merge_qkv_run};
