/*
 * schedule — the lowered program: what the runtime replays per bucket.
 *
 * After fusion, the graph is lowered once per sequence-length bucket into a
 * flat list of *steps*.  A step is either a launch of a generated kernel or
 * a GEMM described for cuBLASLt; nothing else runs at inference.  Every
 * pointer a step uses is a `sched_ref`: a buffer kind plus a byte offset, so
 * the schedule is position-independent and the runtime turns refs into
 * device addresses once, when it captures the bucket's CUDA Graph:
 *
 *   SCHED_BUF_WEIGHTS   the plan's weight blob, uploaded once per device
 *   SCHED_BUF_ARENA     the activation arena of the bucket (offsets from
 *                       buffer liveness; one arena per context, sized for
 *                       the largest bucket)
 *   SCHED_BUF_REQUEST   the request block (kernels.h): len, ids, types, mask
 *   SCHED_BUF_NONE      a NULL pointer (an absent optional operand)
 *
 * GEMMs use cuBLASLt's column-major convention.  A row-major activation
 * X [M, K] is, seen column-major, X^T [K, M]; a Linear weight W [N, K] is
 * W^T [K, N].  So Y = X W^T (row-major [M, N]) is computed as the
 * column-major product Y^T [N, M] = op(W^T) X^T with transa = T on the
 * weight and transb = N on the activation: both operands are read
 * K-contiguous and no transpose kernel ever runs.
 *
 * The schedule also carries the cost model that `bertc inspect` reports:
 * FLOPs and the minimum HBM bytes per step (every operand read once, every
 * result written once, in the plan precision).
 */
#ifndef BERTC_SCHEDULE_H
#define BERTC_SCHEDULE_H

#include <stdint.h>

#include "ir.h"
#include "kernels.h"

typedef enum sched_buf {
    SCHED_BUF_NONE,
    SCHED_BUF_WEIGHTS,
    SCHED_BUF_ARENA,
    SCHED_BUF_REQUEST,
    SCHED_BUF_COUNT,
} sched_buf;

typedef struct sched_ref {
    sched_buf buf;
    uint64_t offset;             /* bytes from the buffer's base */
} sched_ref;

/* cuBLASLt epilogues bertc uses (values of cublasLtEpilogue_t). */
typedef enum sched_epilogue {
    SCHED_EPILOGUE_DEFAULT = 1,
    SCHED_EPILOGUE_RELU = 2,
    SCHED_EPILOGUE_BIAS = 4,
    SCHED_EPILOGUE_RELU_BIAS = 6,
} sched_epilogue;

typedef struct sched_gemm {
    int transa, transb;          /* 1 = transposed (CUBLAS_OP_T) */
    int64_t m, n, k;             /* of the column-major product D = op(A) op(B) */
    int64_t lda, ldb, ldc, ldd;
    int batch_count;             /* 1 for plain GEMMs */
    int64_t stride_a, stride_b, stride_c, stride_d;   /* elements, for batched */
    ir_dtype ab_type;            /* storage of A and B */
    ir_dtype cd_type;            /* storage of C and D */
    ir_dtype bias_type;
    float alpha, beta;           /* scale type float32, compute type float32 */
    sched_epilogue epilogue;
    sched_ref a, b, c, d, bias;  /* c may equal d; bias NONE unless a BIAS epilogue */
} sched_gemm;

typedef struct sched_launch {
    int kernel;                  /* index into the plan's kernel table */
    kernel_launch_dims dims;
    int nargs;
    sched_ref args[8];           /* every kernel argument is a pointer */
} sched_launch;

typedef enum sched_step_kind {
    SCHED_STEP_KERNEL,
    SCHED_STEP_GEMM,
} sched_step_kind;

typedef struct sched_step {
    sched_step_kind kind;
    char *name;                  /* e.g. "layer0/qkv" (the IR node it came from) */
    sched_launch launch;         /* SCHED_STEP_KERNEL */
    sched_gemm gemm;             /* SCHED_STEP_GEMM */
    double flops;
    uint64_t min_hbm_bytes;
} sched_step;

/* A graph output: where it lives after the last step, and its shape. */
typedef struct sched_output {
    char *name;                  /* last_hidden_state, pooler_output, ... */
    sched_ref ref;
    ir_dtype dtype;
    int rows_are_seq;            /* 1: [len, cols] (rows beyond len are padding); 0: [cols] */
    int64_t cols;
    int64_t row_stride;          /* elements between rows */
} sched_output;

typedef struct sched_bucket {
    int seq_len;                 /* bucket length B */
    int nsteps;
    sched_step *steps;
    int noutputs;
    sched_output *outputs;
    uint64_t arena_bytes;        /* arena this bucket needs */
} sched_bucket;

void sched_bucket_free(sched_bucket *b);

#endif
