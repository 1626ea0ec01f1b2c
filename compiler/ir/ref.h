/*
 * ref — the reference executor: runs an ir_graph op by op on the CPU.
 *
 * It is the yardstick every other executor (generated kernels, emulated
 * device, GPU) is compared against, so it favours being obviously right over
 * being fast: every tensor is float32 (int32 for ids), weights are widened
 * to float32 from their stored type, and every reduction and GEMM dot
 * product accumulates in double.  One function per op, no fusion, no
 * cleverness in the loops beyond a cache-friendly order.
 */
#ifndef BERTC_REF_H
#define BERTC_REF_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"
#include "weights.h"

typedef struct ref_request {
    int64_t len;                     /* sequence length S, >= 1 */
    const int32_t *input_ids;        /* [len], required */
    const int32_t *token_type_ids;   /* [len] or NULL (input's default) */
    const int32_t *attention_mask;   /* [len] or NULL (input's default) */
} ref_request;

typedef struct ref_tensor {
    char *name;                      /* the graph output's name */
    int ndim;
    int64_t shape[IR_MAX_DIMS];      /* S already bound */
    float *data;
} ref_tensor;

typedef struct ref_result {
    int count;
    ref_tensor *outputs;             /* in the graph's output order */
} ref_result;

int ref_run(const ir_graph *g, const weights *weights, const ref_request *req,
            ref_result *res, diag *d);
void ref_result_free(ref_result *res);
const ref_tensor *ref_result_find(const ref_result *res, const char *name);

/*
 * Compile-time evaluation of one node whose sources are all WEIGHT or CONST
 * nodes (or which is itself a WEIGHT), with the executor's own op code:
 * *data receives a malloc'd float32 array of the node's elements.  This is
 * what constant folding (pass_fold_constants) runs.  The node must not
 * depend on S.
 */
int ref_eval_static(const ir_graph *g, const weights *weights, int node, float **data, diag *d);

/*
 * The position helpers the reference ops are made of, shared with the
 * lowering (which writes the same values into the plan's weight blob).
 * ref_pad_positions: RoBERTa's position ids of `ids` (pad_positions op).
 * ref_rel_pos_bucket: MPNet's bucket of the relative position key - query.
 * ref_rel_pos_bias_fill: out[h][q][k] = table[bucket(k - q)][h] for q, k <
 *   seq, rows of ld elements and heads of ld rows (ld >= seq); table is
 *   [buckets, heads].
 * ref_sinusoid_value: DistilBERT's sinusoidal table at (pos, j) for width dim.
 */
void ref_pad_positions(const int32_t *ids, int64_t len, int32_t pad, int32_t *out);
int ref_rel_pos_bucket(int64_t rel, int buckets, int max_distance);
void ref_rel_pos_bias_fill(const float *table, int heads, int buckets, int max_distance, int64_t seq, int64_t ld,
                           float *out);
float ref_sinusoid_value(int64_t pos, int64_t j, int64_t dim);

#endif
