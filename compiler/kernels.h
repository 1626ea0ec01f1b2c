/*
 * kernels — the catalogue of generated kernels: what each kernel computes,
 * its parameters, its argument ABI, and how its source text is produced.
 *
 * A kernel is a CUDA C++ template in kernels_templates/ specialised by
 * compile-time constants.  A `kernel_spec` says which template and which
 * constants; kernel_source() turns it into one self-contained translation
 * unit: a first comment naming the template and every parameter, the device
 * helper header, the template text, and an `extern "C"` entry point whose
 * name encodes the parameters (so equal specs give equal names and equal
 * text, and the compile cache can dedupe by content).  The same text is
 * compiled by NVRTC for every GPU architecture and by the host compiler for
 * the emulated device (with BERTC_EMU defined and the emulator prelude
 * force-included), so there is exactly one kernel source of truth.
 *
 * Every kernel receives the *request block* (`const int *req`), device
 * memory laid out as
 *
 *     int32 len;                 real sequence length L, 1 <= L <= bucket
 *     int32 reserved[3];
 *     int32 input_ids[bucket];
 *     int32 token_type_ids[bucket];
 *     int32 attention_mask[bucket];
 *
 * which the runtime fills with one host-to-device copy per request.  The
 * bucket length is a compile-time constant of each kernel; the real length
 * is read from device memory, so one captured CUDA Graph serves every
 * length of its bucket.  Rows >= L are padding: kernels may skip them, and
 * no output row < L may depend on what padding rows hold.
 *
 * Activations and weights are stored in the plan precision `dtype`
 * (float32, float16 or bfloat16); every kernel accumulates in float32.
 * Matrices are row-major with the leading dimension given explicitly.
 */
#ifndef BERTC_KERNELS_H
#define BERTC_KERNELS_H

#include <stddef.h>

#include "diag.h"
#include "ir.h"

#define KERNEL_REQ_HEADER_WORDS 4
#define KERNEL_MAX_GATHERS 3

typedef enum kernel_kind {
    /*
     * out[s, :] = LayerNorm(sum_g table_g[index_g(s), :]) * gamma + beta
     * args: (T *out, const int *req, const T *table0, const T *table1,
     *        const T *table2, const T *gamma, const T *beta)
     * index_g(s) is input_ids[s], token_type_ids[s] or s (position),
     * per gather_index[g]; unused tables are NULL.  Ids are clamped to the
     * table (the runtime validates them before the launch).
     */
    KERNEL_KIND_EMBED_LN,
    /*
     * out[s, :] = LayerNorm(x[s, :] (+ bias) (+ residual[s, :])) * gamma + beta
     * args: (T *out, const int *req, const T *x, const T *bias,
     *        const T *residual, const T *gamma, const T *beta)
     */
    KERNEL_KIND_ADD_LN,
    /*
     * Fused multi-head attention for one request:
     *   ctx[s, h*D:(h+1)*D] = softmax_k(scale * q_h[s] . k_h[k] + maskbias[k]) . v_h
     * with maskbias[k] = float32 min where attention_mask[k] == 0, and keys
     * k >= L excluded.  q, k, v are column blocks of the row-major matrix
     * qkv (leading dimension qkv_ld) at column offsets q_off, k_off, v_off.
     * args: (T *ctx, const int *req, const T *qkv)
     */
    KERNEL_KIND_ATTENTION,
    /*
     * out[m, n] = act(sum_k x[m, k] * w[n, k] (+ bias[n]) (+ residual[m, n]))
     * for m < L (rows of padding are skipped).  w is in Linear layout [N, K].
     * args: (T *out, const int *req, const T *x, const T *w, const T *bias,
     *        const T *residual)
     */
    KERNEL_KIND_GEMM,
    /*
     * A sentence embedding (sentence-transformers' Pooling [+ Normalize]):
     *   pool_mode CLS:  p = x[0, :]
     *   pool_mode MEAN: p = sum_{s < L, attention_mask[s] != 0} x[s, :] / max(count, 1e-9)
     *   out[:] = normalize ? p / max(||p||_2, 1e-12) : p
     * x is [bucket, hidden] with contiguous rows; out is one row [hidden].
     * Rows >= L and masked rows are never read.  One block.
     * args: (T *out, const int *req, const T *x)
     */
    KERNEL_KIND_POOL,
    KERNEL_KIND_COUNT,
} kernel_kind;

typedef enum kernel_index {
    KERNEL_INDEX_INPUT_IDS,
    KERNEL_INDEX_TOKEN_TYPES,
    KERNEL_INDEX_POSITION,
} kernel_index;

typedef struct kernel_spec {
    kernel_kind kind;
    ir_dtype dtype;              /* storage type: F32, F16 or BF16 */
    int bucket;                  /* sequence-length bucket (rows of every [S, *] tensor) */

    /* EMBED_LN, ADD_LN, POOL */
    int hidden;
    float eps;
    int ngathers;                /* EMBED_LN: 1..3 */
    kernel_index gather_index[KERNEL_MAX_GATHERS];
    int table_rows[KERNEL_MAX_GATHERS];
    int has_bias, has_residual;  /* ADD_LN, GEMM */

    /* ATTENTION */
    int heads, head_dim;
    float scale;
    int qkv_ld, q_off, k_off, v_off;
    int ctx_ld;

    /* GEMM */
    int n, k;                    /* M is the bucket */
    int x_ld, out_ld, res_ld;
    int has_act;
    ir_act act;

    /* POOL */
    ir_pool_mode pool_mode;
    int normalize;
} kernel_spec;

typedef struct kernel_launch_dims {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_bytes;       /* dynamic shared memory */
} kernel_launch_dims;

/*
 * Generated source for one kernel: *text (malloc'd, NUL-terminated) and
 * *entry (malloc'd entry-point name).  The text needs only cuda_fp16.h and
 * cuda_bf16.h from the toolkit (or the emulator's stand-ins).
 */
int kernel_source(const kernel_spec *s, char **text, char **entry, diag *d);
/* Grid, block and dynamic shared memory for a spec (bucket-sized grid). */
int kernel_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
/* Number of pointer arguments of a kind (all arguments are pointers). */
int kernel_arg_count(kernel_kind kind);
const char *kernel_kind_name(kernel_kind kind);   /* "embed_ln", ... = template file stem */

#endif
