/*
 * lower — the fused graph to per-bucket schedules (schedule.h).
 *
 * Lowering is the last step that knows about the graph.  It does three
 * things, each in one place:
 *
 *   weights   every WEIGHT/CONST node the schedule reads is converted to the
 *             plan precision and laid out in one blob, each tensor 256-byte
 *             aligned, in graph order (deterministic).  Linear weights stay
 *             [N, K] row-major, which is exactly what a transa = T cuBLASLt
 *             GEMM (and the GEMM kernel) wants: nothing is transposed at
 *             inference.
 *   steps     each remaining op becomes one kernel launch or one cuBLASLt
 *             GEMM; reshapes and slices become *views* (a buffer, an offset
 *             and a row stride) and cost nothing.  An op with no kernel is
 *             an error naming the node and its YAML line.
 *   arena     activation buffers get offsets in one arena from their live
 *             ranges (first fit, 256-byte aligned, deterministic); outputs
 *             live to the end.
 *
 * Kernels are collected in a `lower_kernels` table shared by all buckets;
 * specs with the same generated text (the same entry name) share an entry,
 * so e.g. the LayerNorm kernel of every bucket is compiled once.
 */
#ifndef BERTC_LOWER_H
#define BERTC_LOWER_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"
#include "kernels.h"
#include "plan.h"
#include "weights.h"

typedef struct lower_weights {
    uint8_t *blob;
    uint64_t size;
    int64_t *offset;             /* per graph node: byte offset in blob, or -1 */
    int count;                   /* graph nodes */
    uint64_t streamed_bytes;     /* bytes a request reads from the blob (gather tables count 0 here) */
} lower_weights;

typedef struct lower_kernels {
    int count, cap;
    kernel_spec *specs;
    char **entries;
    char **sources;
} lower_kernels;

typedef struct lower_info {
    int64_t hidden;
    int64_t vocab_size;          /* rows of the table gathered with input_ids */
    int64_t type_vocab_size;     /* rows of the table gathered with token_type_ids (0 if none) */
    int uses_token_types, uses_mask;
} lower_info;

int lower_weights_build(const ir_graph *g, const weights *w, plan_dtype precision, lower_weights *out, diag *d);
void lower_weights_free(lower_weights *w);

void lower_kernels_init(lower_kernels *k);
void lower_kernels_free(lower_kernels *k);

int lower_bucket(const ir_graph *g, const lower_weights *w, plan_dtype precision, int bucket, lower_kernels *k,
                 sched_bucket *out, diag *d);

/* Signature facts the runtime needs (vocabulary bounds, inputs read). */
int lower_info_get(const ir_graph *g, lower_info *info, diag *d);

#endif
