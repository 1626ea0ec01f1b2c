/*
 * lower — the fused graph to a plan: its signature, its weights and one
 * schedule per sequence-length bucket (plan_types.h).
 *
 * Lowering is the last step that knows about the graph, and the place
 * where the IR's vocabulary is mapped onto the plan's own (ir_dtype,
 * ir_act, ir_pool_mode -> plan_dtype, plan_act, plan_pool_mode), so the
 * runtime never sees the IR.  It does four things, each in one file:
 *
 *   weights   (lower_weights.c) every WEIGHT/CONST node the schedule reads
 *             is converted to the plan precision and laid out in one blob,
 *             each tensor 256-byte aligned, in graph order (deterministic).
 *             Linear weights stay [N, K] row-major, which is exactly what a
 *             transa = T cuBLASLt GEMM (and the GEMM kernel) wants: nothing
 *             is transposed at inference.
 *   steps     (lower_steps.c) each remaining op becomes one kernel launch or
 *             one cuBLASLt GEMM; reshapes and slices become *views* (a
 *             buffer, an offset and a row stride) and cost nothing.  An op
 *             with no kernel is an error naming the node and its YAML line.
 *   arena     (lower_arena.c) activation buffers get offsets in one arena
 *             from their live ranges (first fit, 256-byte aligned,
 *             deterministic); outputs live to the end.
 *   signature (lower.c) what the runtime checks requests against: hidden
 *             size, vocabulary bounds, which inputs the graph reads and the
 *             defaults of the optional ones.
 *
 * Token buckets (packed batches, plan_types.h) are lowered from the same
 * graph with the sequence axis bound to the bucket's total tokens: every
 * row-wise op lowers exactly as in a length bucket, and the few that see
 * sequences take their packed forms (embed_ln's positions, attention per
 * sequence, pool per sequence; a slice of the first token becomes a cls
 * pool, one row per sequence).  Activations that hold one row per request
 * alone (the [CLS] row, a pooled vector, the pooler's GEMM on it) have a
 * row per sequence in a token bucket: max_seqs rows.
 *
 * Kernels are collected in the plan's kernel table, shared by all buckets:
 * specs with the same entry name share an entry, so e.g. the LayerNorm
 * kernel of every bucket is compiled once.  Lowering records each kernel's
 * entry name and spec only; its source is written by the next stage
 * (kernels_generate).
 */
#ifndef BERTC_LOWER_H
#define BERTC_LOWER_H

#include "diag.h"
#include "ir.h"
#include "plan.h"
#include "weights.h"

typedef struct lower_options {
    plan_dtype precision;        /* storage of weights and activations: F32, F16 or BF16 */
    plan_fusion fusion;          /* BASELINE: cuBLASLt + the GEMM kind as before; DEFAULT: GEMM_LN,
                                    GEMM_SPLITK (lower_gemm.c) */
    const int *buckets;          /* ascending sequence lengths, each <= the graph's max_seq_len */
    int nbuckets;
    const int *token_buckets;    /* ascending total tokens of packed batches (none: ntoken_buckets 0) */
    int ntoken_buckets;
    int max_batch;               /* sequences per packed batch at most (each token bucket: min(this, tokens)) */
} lower_options;

/*
 * Lowers the fused graph `g` (weights from `w`) into `p`, which must be
 * plan_init'ed: signature, precision, max_seq_len, weights (owned), the
 * kernel table (entry, spec, nargs; no source yet), one bucket per length
 * and the largest arena.  On failure p may hold part of it; plan_free
 * releases that.
 */
int lower_model(const ir_graph *g, const weights *w, const lower_options *o, plan *p, diag *d);

/*
 * The compiler's tiling of bertc's own GEMMs (lower_gemm.c, the one cost
 * function the performance model is meant to replace): the cheapest
 * tile_m, tile_n and splits of a GEMM_SPLITK or GEMM_LN spec (every other
 * field set) that the launch contract accepts, written into s, and its
 * modelled µs; -1 with d set when none is accepted (the caller falls back).
 */
int lower_gemm_tiling(kernel_spec *s, double *cost_us, diag *d);

#endif
