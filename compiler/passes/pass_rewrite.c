/*
 * pass_rewrite — use counts, in-place node rewrites and the commit step
 * every pass ends with (see pass_rewrite.h for the rewriting model).
 *
 * The commit re-orders with an iterative depth-first walk in index order
 * that emits a node after its sources.  On a graph that is already in
 * order this is the identity, so a pass that only rewrites nodes in place
 * never moves anything; a node appended at the end (merge_qkv's merged
 * LINEAR and its CONCATs) is emitted the first time a reader needs it,
 * i.e. right before its first reader, which keeps the order readable in
 * `bertc inspect` and keeps producers next to consumers for the lowering.
 * The walk is iterative because an encoder chain is as deep as the model is
 * long (a few thousand nodes for large models) and recursion that deep is
 * a stack-size bet.
 *
 * Shape inference is re-run on the result: a pass that wires a fused node
 * wrongly is reported as an internal error right there, with the pass's
 * name, instead of surfacing as wrong numbers after lowering.
 */
#include "pass_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pass_uses_init(pass_uses *u, const ir_graph *g, diag *d) {
    memset(u, 0, sizeof *u);
    size_t n = (size_t)(g->count ? g->count : 1);
    u->count = g->count;
    u->uses = calloc(n, sizeof *u->uses);
    u->user = malloc(n * sizeof *u->user);
    u->is_output = calloc(n, 1);
    u->is_static = calloc(n, 1);
    u->taken = calloc(n, 1);
    u->dead = calloc(n, 1);
    if (!u->uses || !u->user || !u->is_output || !u->is_static || !u->taken || !u->dead) {
        pass_uses_free(u);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    }
    for (int i = 0; i < g->count; i++) u->user[i] = -1;
    for (int i = 0; i < g->count; i++) {
        const ir_node *nd = &g->nodes[i];
        int all_static = nd->nsrc > 0;
        for (int s = 0; s < nd->nsrc; s++) {
            int j = nd->src[s];
            if (j < 0 || j >= i) {
                pass_uses_free(u);
                return diag_set(d, DIAG_CODE_INTERNAL,
                                "passes: node '%s' reads node %d, which does not come before it",
                                nd->name, j);
            }
            u->uses[j]++;
            u->user[j] = i;
            all_static &= u->is_static[j];
        }
        if (nd->op == IR_OP_WEIGHT || nd->op == IR_OP_CONST || nd->op == IR_OP_SINUSOID) u->is_static[i] = 1;
        else if (nd->op != IR_OP_INPUT && nd->op != IR_OP_ARANGE) u->is_static[i] = (unsigned char)all_static;
    }
    for (int o = 0; o < g->noutputs; o++) {
        int j = g->outputs[o].node;
        if (j >= 0 && j < g->count) u->is_output[j] = 1;
    }
    return 0;
}

void pass_uses_free(pass_uses *u) {
    free(u->uses);
    free(u->user);
    free(u->is_output);
    free(u->is_static);
    free(u->taken);
    free(u->dead);
    memset(u, 0, sizeof *u);
}

int pass_single_use(const pass_uses *u, int j) {
    return j >= 0 && j < u->count && u->uses[j] == 1 && !u->is_output[j];
}

int pass_absorbable(const pass_uses *u, const ir_graph *g, int j, const int *pat, int npat) {
    if (j < 0 || j >= u->count || u->is_output[j] || u->taken[j]) return 0;
    int inside = 0;
    for (int p = 0; p < npat; p++) {
        int dup = 0;
        for (int q = 0; q < p; q++) dup |= pat[q] == pat[p];
        if (dup) continue;
        const ir_node *n = &g->nodes[pat[p]];
        for (int s = 0; s < n->nsrc; s++) inside += n->src[s] == j;
    }
    return inside == u->uses[j];
}

void pass_node_become(ir_node *n, ir_op op, const int *src, int nsrc) {
    ir_node keep = *n;
    free(n->weight);
    free(n->data);
    memset(n, 0, sizeof *n);
    n->op = op;
    n->name = keep.name;
    n->line = keep.line;
    n->col = keep.col;
    n->dtype = keep.dtype;
    n->ndim = keep.ndim;
    memcpy(n->shape, keep.shape, sizeof n->shape);
    n->scale = 1.0f;
    n->nsrc = nsrc;
    for (int s = 0; s < IR_MAX_SRCS; s++) n->src[s] = s < nsrc ? src[s] : -1;
}

int pass_node_append(ir_graph *g, ir_op op, const char *base, const int *src, int nsrc, diag *d) {
    char name[512];
    snprintf(name, sizeof name, "%s", base);
    for (int k = 2; ir_graph_find(g, name) >= 0; k++) snprintf(name, sizeof name, "%s#%d", base, k);
    int i = ir_graph_add(g, op, name, src, nsrc);
    if (i < 0) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory adding node '%s'", name);
    return i;
}

/* Stable topological order of the live nodes into order[]; returns the
 * number of live nodes or -1 (d filled). */
static int pass_order(const ir_graph *g, const unsigned char *dead, int ndead, int *order,
                      const char *pass, diag *d) {
    int n = g->count, norder = 0, rc = 0;
    unsigned char *state = calloc((size_t)(n ? n : 1), 1);  /* 0 new, 1 open, 2 emitted */
    int *stack = malloc((size_t)(n ? n : 1) * sizeof *stack);
    int *next = malloc((size_t)(n ? n : 1) * sizeof *next);
    if (!state || !stack || !next) {
        rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        goto done;
    }
    for (int r = 0; r < n && !rc; r++) {
        if ((r < ndead && dead && dead[r]) || state[r]) continue;
        int top = 0;
        stack[0] = r;
        next[0] = 0;
        state[r] = 1;
        while (top >= 0 && !rc) {
            int v = stack[top];
            const ir_node *nv = &g->nodes[v];
            if (next[top] < nv->nsrc) {
                int j = nv->src[next[top]++];
                if (j < 0 || j >= n) {
                    rc = diag_set(d, DIAG_CODE_INTERNAL, "pass %s: node '%s' reads node %d, which does not exist",
                                  pass, nv->name, j);
                } else if (j < ndead && dead && dead[j]) {
                    rc = diag_set(d, DIAG_CODE_INTERNAL, "pass %s: node '%s' reads '%s', which the pass removed",
                                  pass, nv->name, g->nodes[j].name);
                } else if (state[j] == 1) {
                    rc = diag_set(d, DIAG_CODE_INTERNAL, "pass %s: the rewritten graph has a cycle through '%s'",
                                  pass, g->nodes[j].name);
                } else if (state[j] == 0) {
                    state[j] = 1;
                    stack[++top] = j;
                    next[top] = 0;
                }
            } else {
                state[v] = 2;
                order[norder++] = v;
                top--;
            }
        }
    }
done:
    free(state);
    free(stack);
    free(next);
    return rc ? -1 : norder;
}

int pass_commit(ir_graph *g, const unsigned char *dead, int ndead, const char *pass, diag *d) {
    int n = g->count;
    for (int o = 0; o < g->noutputs; o++) {
        int j = g->outputs[o].node;
        if (j < 0 || j >= n || (j < ndead && dead && dead[j]))
            return diag_set(d, DIAG_CODE_INTERNAL, "pass %s: output '%s' lost its node", pass,
                            g->outputs[o].name);
    }
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int *where = malloc((size_t)(n ? n : 1) * sizeof *where);
    ir_node *nodes = malloc((size_t)(n ? n : 1) * sizeof *nodes);
    if (!order || !where || !nodes) {
        free(order);
        free(where);
        free(nodes);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    }
    int live = pass_order(g, dead, ndead, order, pass, d);
    if (live < 0) {
        free(order);
        free(where);
        free(nodes);
        return -1;
    }
    for (int i = 0; i < n; i++) where[i] = -1;
    for (int p = 0; p < live; p++) where[order[p]] = p;
    for (int p = 0; p < live; p++) {
        nodes[p] = g->nodes[order[p]];
        for (int s = 0; s < nodes[p].nsrc; s++) nodes[p].src[s] = where[nodes[p].src[s]];
    }
    for (int i = 0; i < n; i++)
        if (where[i] < 0) ir_node_release(&g->nodes[i]);
    for (int o = 0; o < g->noutputs; o++) g->outputs[o].node = where[g->outputs[o].node];
    free(g->nodes);
    g->nodes = nodes;
    g->count = live;
    g->cap = n ? n : 1;
    free(order);
    free(where);
    if (ir_graph_infer(g, g->source_path, NULL, 0, d)) {
        d->code = DIAG_CODE_INTERNAL;
        diag_prefix(d, "pass %s produced an invalid graph: ", pass);
        return -1;
    }
    return 0;
}
