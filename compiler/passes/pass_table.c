/*
 * pass_run — the pass pipeline and its report.
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
 *   fuse_pool_normalize  folds a sentence head's l2_normalize into its pool
 *                   (independent of the others; after them so it sees the
 *                   final graph's pools);
 *   fold_constants  last of the rewrites, so it sees every CONCAT the
 *                   fusions created;
 *   dce             removes the weights folding left unread.
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

typedef enum passes_id {
    PASSES_ID_DCE,
    PASSES_ID_FUSE_LINEAR,
    PASSES_ID_MERGE_QKV,
    PASSES_ID_FUSE_ATTENTION,
    PASSES_ID_FUSE_ADD_LN,
    PASSES_ID_FUSE_EMBED_LN,
    PASSES_ID_FUSE_POOL_NORMALIZE,
    PASSES_ID_FOLD_CONSTANTS,
} passes_id;

static const struct {
    passes_id id;
    const char *name;
} passes_order[] = {
    {PASSES_ID_DCE, "dce"},
    {PASSES_ID_FUSE_LINEAR, "fuse_linear"},
    {PASSES_ID_MERGE_QKV, "merge_qkv"},
    {PASSES_ID_FUSE_ATTENTION, "fuse_attention"},
    {PASSES_ID_FUSE_ADD_LN, "fuse_add_ln"},
    {PASSES_ID_FUSE_EMBED_LN, "fuse_embed_ln"},
    {PASSES_ID_FUSE_POOL_NORMALIZE, "fuse_pool_normalize"},
    {PASSES_ID_FOLD_CONSTANTS, "fold_constants"},
    {PASSES_ID_DCE, "dce"},
};

static int passes_run_one(passes_id id, ir_graph *g, const weights *weights, diag *d) {
    switch (id) {
    case PASSES_ID_DCE: return pass_dce(g, d);
    case PASSES_ID_FUSE_LINEAR: return pass_fuse_linear(g, d);
    case PASSES_ID_MERGE_QKV: return pass_merge_qkv(g, d);
    case PASSES_ID_FUSE_ATTENTION: return pass_fuse_attention(g, d);
    case PASSES_ID_FUSE_ADD_LN: return pass_fuse_add_ln(g, d);
    case PASSES_ID_FUSE_EMBED_LN: return pass_fuse_embed_ln(g, d);
    case PASSES_ID_FUSE_POOL_NORMALIZE: return pass_fuse_pool_normalize(g, d);
    case PASSES_ID_FOLD_CONSTANTS: return pass_fold_constants(g, weights, d);
    }
    return diag_set(d, DIAG_CODE_INTERNAL, "passes: unknown pass %d", (int)id);
}

int passes_run(ir_graph *g, const weights *weights, passes_report *r, diag *d) {
    int n = (int)(sizeof passes_order / sizeof passes_order[0]);
    if (r) memset(r, 0, sizeof *r);
    for (int k = 0; k < n; k++) {
        passes_step *step = r && k < PASSES_MAX_STEPS ? &r->steps[r->nsteps++] : NULL;
        if (step) {
            step->name = passes_order[k].name;
            step->nodes_before = g->count;
            passes_count_ops(g, step->ops_before);
        }
        if (passes_run_one(passes_order[k].id, g, weights, d)) return -1;
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
