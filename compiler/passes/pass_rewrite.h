/*
 * pass_rewrite — what every fusion pass shares: who reads each node, and
 * how a rewritten graph is put back in order.
 *
 * The passes rewrite in place.  A fused node *is* the last node of its
 * pattern, turned into the fused op (pass_node_become): it keeps that
 * node's index, name and YAML place, so whatever read the pattern's result
 * now reads the fused node without being touched, and the outputs need no
 * remapping.  The other nodes of the pattern are flagged dead.  New nodes
 * (merge_qkv's CONCATs) are simply appended.  pass_commit() then drops the
 * dead nodes, restores a topological order (stable: a graph already in
 * order keeps its order; an appended node moves to just before its first
 * reader), remaps sources and outputs and re-runs shape inference — so a
 * pass cannot leave a broken graph behind without an internal error.
 *
 * The use information (pass_uses) is computed once per pass, before any
 * rewrite.  It stays true for every node outside the patterns rewritten so
 * far, because a pattern's inner nodes are read only inside it and its last
 * node keeps its index; passes additionally mark pattern nodes `taken` so
 * no node joins two patterns.
 */
#ifndef BERTC_PASS_REWRITE_H
#define BERTC_PASS_REWRITE_H

#include "diag.h"
#include "ir.h"

typedef struct pass_uses {
    int count;                   /* nodes when computed */
    int *uses;                   /* source slots reading node i (a node read twice counts 2) */
    int *user;                   /* the last node reading i: the only one when uses[i] == 1 */
    unsigned char *is_output;    /* i is a graph output */
    unsigned char *is_static;    /* i depends on WEIGHT and CONST nodes only */
    unsigned char *taken;        /* i is part of a pattern rewritten by this pass */
    unsigned char *dead;         /* i was absorbed; pass_commit drops it */
} pass_uses;

int pass_uses_init(pass_uses *u, const ir_graph *g, diag *d);
void pass_uses_free(pass_uses *u);

/* j is read by exactly one source slot and is not an output: its single
 * consumer is u->user[j]. */
int pass_single_use(const pass_uses *u, int j);

/*
 * j may be absorbed into a pattern made of the nodes pat[0..npat-1]: it is
 * not an output, not taken, and every source slot reading it belongs to a
 * node of the pattern (pat may list a node twice; it is counted once).
 */
int pass_absorbable(const pass_uses *u, const ir_graph *g, int j, const int *pat, int npat);

/* Turn node n into op `op`: keeps name, place, dtype and shape (infer
 * recomputes them), frees `weight` and `data`, clears every parameter
 * (scale back to 1) and sets the sources. */
void pass_node_become(ir_node *n, ir_op op, const int *src, int nsrc);

/* Append a node (sources given, everything else cleared) with a name not
 * yet in the graph, built from `base` ("base", "base#2", ...).  Returns its
 * index or -1 (out of memory, d filled).  g->nodes may move. */
int pass_node_append(ir_graph *g, ir_op op, const char *base, const int *src, int nsrc, diag *d);

/*
 * Drop nodes with dead[i] set (i < ndead; dead may be NULL), restore a
 * stable topological order, remap sources and outputs, re-infer.  A live
 * node reading a dead one, a dead output or a failed infer is an internal
 * error naming `pass`.
 */
int pass_commit(ir_graph *g, const unsigned char *dead, int ndead, const char *pass, diag *d);

/* ---- embedding sums (shared by fuse_add_ln, which leaves them alone, and
 *      fuse_embed_ln, which fuses them) ---------------------------------- */

typedef struct pass_embed_match {
    int ngathers;
    int table[IR_MAX_GATHERS], index[IR_MAX_GATHERS];  /* in left-to-right sum order */
    int nabsorb;
    int absorb[2 * IR_MAX_GATHERS];                    /* gathers and adds under the layer_norm */
} pass_embed_match;

/* Whether the layer_norm `ln` normalises a sum of 1..3 gathers that
 * fuse_embed_ln can take whole. */
int pass_embed_ln_match(const ir_graph *g, const pass_uses *u, int ln, pass_embed_match *m);

#endif
