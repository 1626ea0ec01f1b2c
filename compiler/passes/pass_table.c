/*
 * pass_table — the pass pipeline (the order of the passes) and its report.
 *
 * The order (docs/passes.md has the full argument):
 *
 *   dce             so no pattern is matched in dead code;
 *   fuse_linear     first, because later patterns are written in terms of
 *                   LINEAR (merge_qkv merges LINEARs, fuse_add_ln expects
 *                   the bias already inside the GEMM);
 *   merge_qkv       before fuse_attention, which absorbs the slices it
 *                   creates into q/k/v offsets;
 *   fuse_attention
 *   fuse_add_ln     after fuse_linear has declined the residual adds that
 *                   feed a LayerNorm; skips embedding sums;
 *   fuse_embed_ln   takes the embedding sums fuse_add_ln left alone;
 *   fuse_linear_ln  (default level) a dense layer + its add_ln, after
 *                   fuse_add_ln made every residual LayerNorm an ADD_LN;
 *   fuse_pool_normalize  folds a sentence head's l2_normalize into its pool
 *                   (independent of the others; after them so it sees the
 *                   final graph's pools);
 *   fold_constants  last of the rewrites, so it sees every CONCAT the
 *                   fusions created;
 *   dce             removes the weights folding left unread.
 *
 * Each pass belongs to a fusion level: the baseline level runs the
 * passes that make TensorRT's seven launches per layer, the default level
 * adds the ones that fuse past it (`bertc compile --fusion`).
 *
 * The report is a count of nodes per op before and after each pass: what
 * `bertc compile -v` and `bertc inspect` show, and what the tests read to
 * check that a pass did exactly its job.
 */
#include <stdio.h>
#include <string.h>

#include "passes.h"

void passes_count_ops(const ir_graph *g, int *counts) {
    memset(counts, 0, IR_OP_COUNT * sizeof *counts);
    for (int i = 0; i < g->count; i++)
        if ((unsigned)g->nodes[i].op < IR_OP_COUNT) counts[g->nodes[i].op]++;
}

/*
 * The pipeline, in order: one line per step, with the lowest fusion level
 * that runs it.  A pass may appear twice (dce does); PASSES_ORDER also
 * declares each descriptor, since a repeated `extern` declaration is
 * harmless in C.
 */
#define PASSES_ORDER(X)                          \
    X(dce, PASSES_LEVEL_BASELINE)                \
    X(fuse_linear, PASSES_LEVEL_BASELINE)        \
    X(merge_qkv, PASSES_LEVEL_BASELINE)          \
    X(fuse_attention, PASSES_LEVEL_BASELINE)     \
    X(fuse_add_ln, PASSES_LEVEL_BASELINE)        \
    X(fuse_embed_ln, PASSES_LEVEL_BASELINE)      \
    X(fuse_linear_ln, PASSES_LEVEL_DEFAULT)      \
    X(fuse_pool_normalize, PASSES_LEVEL_BASELINE) \
    X(fold_constants, PASSES_LEVEL_BASELINE)     \
    X(dce, PASSES_LEVEL_BASELINE)

#define PASSES_DECLARE(n, level) extern const pass_desc pass_##n;
PASSES_ORDER(PASSES_DECLARE)
#define PASSES_REF(n, level) &pass_##n,
static const pass_desc *const passes_order[] = {PASSES_ORDER(PASSES_REF)};
#define PASSES_LEVEL_OF(n, level) level,
static const passes_level passes_levels[] = {PASSES_ORDER(PASSES_LEVEL_OF)};
#define PASSES_ORDER_COUNT ((int)(sizeof passes_order / sizeof passes_order[0]))
_Static_assert(sizeof passes_order / sizeof passes_order[0] <= PASSES_MAX_STEPS,
               "the report holds at most PASSES_MAX_STEPS steps");

const pass_desc *passes_find(const char *name) {
    for (int k = 0; k < PASSES_ORDER_COUNT; k++)
        if (!strcmp(passes_order[k]->name, name)) return passes_order[k];
    return NULL;
}

int passes_run_one(const char *name, ir_graph *g, const weights *weights, diag *d) {
    const pass_desc *p = passes_find(name);
    if (!p) return diag_set(d, DIAG_CODE_INTERNAL, "passes: no pass called '%s'", name);
    pass_ctx ctx = {weights};
    return p->run(g, &ctx, d);
}

int passes_run(ir_graph *g, const weights *weights, passes_report *r, diag *d) {
    return passes_run_level(g, weights, PASSES_LEVEL_DEFAULT, r, d);
}

int passes_run_level(ir_graph *g, const weights *weights, passes_level level, passes_report *r, diag *d) {
    pass_ctx ctx = {weights};
    if (r) memset(r, 0, sizeof *r);
    for (int k = 0; k < PASSES_ORDER_COUNT; k++) {
        if (passes_levels[k] > level) continue;
        passes_step *step = r ? &r->steps[r->nsteps++] : NULL;
        if (step) {
            step->name = passes_order[k]->name;
            step->nodes_before = g->count;
            passes_count_ops(g, step->ops_before);
        }
        if (passes_order[k]->run(g, &ctx, d)) return -1;
        if (step) {
            step->nodes_after = g->count;
            passes_count_ops(g, step->ops_after);
        }
    }
    return 0;
}

void passes_report_write(const passes_report *r, void *file) {
    FILE *f = file;
    for (int k = 0; k < r->nsteps; k++) {
        const passes_step *s = &r->steps[k];
        fprintf(f, "%s: %d -> %d nodes", s->name, s->nodes_before, s->nodes_after);
        int any = 0;
        for (int op = 0; op < IR_OP_COUNT; op++) {
            int delta = s->ops_after[op] - s->ops_before[op];
            if (!delta) continue;
            fprintf(f, "%s%s %+d", any ? ", " : " (", ir_op_name((ir_op)op), delta);
            any = 1;
        }
        fprintf(f, "%s\n", any ? ")" : "");
    }
}
