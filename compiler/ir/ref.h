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

#endif
