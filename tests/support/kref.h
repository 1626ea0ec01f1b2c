/*
 * kref — one plain C reference per kernel kind (runtime/plan/plan_types.h:
 * EMBED_LN, ADD_LN, ATTENTION, GEMM, POOL), which every kernel test checks
 * the generated kernels against.
 *
 * Each reference is the formula of the kernel catalogue, written again in
 * double precision from the stored (rounded) inputs: straight loops, a
 * two-pass variance, a softmax with the maximum subtracted, HF's additive
 * mask of float32's lowest value.  They share nothing with the kernels'
 * code (no tiles, no vector loads, no online softmax), so agreeing with
 * them means computing the formula, not copying a mistake.
 *
 * Two ways in:
 *   kref_kernel(spec, req, in)  what one launch must produce: `in` is the
 *       kernel's argument list after (out, req), read with the spec's
 *       leading dimensions exactly as the kernel reads them.
 *   kref_<kind>(spec, req, ...) the same formula over kref_mat operands, so
 *       a fused kernel's reference can be composed from these: a GEMM with
 *       a bias + residual + LayerNorm epilogue is kref_gemm into doubles,
 *       then kref_add_ln reading them through kref_f64; a split-K GEMM is
 *       kref_gemm.  A new kind adds its function here and a case to
 *       kref_kernel.
 * Every output is a fresh double array of kref_rows x kref_cols (free it):
 * rows [0, len) of a [bucket, *] kernel (padding rows are not the
 * reference's business), one row for POOL.  `req` is the kernel's request
 * block (KERNEL_REQ_HEADER_WORDS words, then ids, types and mask of
 * `bucket` entries each); len is its word 0, the bucket length word 1.
 *
 * Also here, because every kernel test needs them and they must not come
 * from the code under test: loading and storing one element of a buffer in
 * a storage dtype (float16 through the compiler's _Float16, bfloat16 by
 * bits, rounding to nearest even), and the tolerance of a block relative to
 * its largest |reference| (docs/testing.md).
 */
#ifndef BERTC_TEST_KREF_H
#define BERTC_TEST_KREF_H

#include <stddef.h>
#include <stdint.h>

#include "plan_types.h"

/* An operand as a reference reads it: element (r, c) is p[r * ld + c],
 * stored as dtype, or a double (a reference's own output). */
typedef struct kref_mat {
    const void *p;              /* NULL: absent (an optional operand the spec does not read) */
    plan_dtype dtype;
    size_t ld;
    int f64;
} kref_mat;

kref_mat kref_stored(plan_dtype dtype, const void *p, size_t ld);
kref_mat kref_f64(const double *p, size_t ld);
double kref_at(kref_mat m, size_t r, size_t c);

/* ---- storage ----------------------------------------------------------- */

size_t kref_dtype_size(plan_dtype dt);
float kref_load(plan_dtype dt, const void *p, size_t i);
/* Rounds to nearest even; a NaN stays a NaN. */
void kref_store(plan_dtype dt, void *p, size_t i, float v);
/* The tolerance relative to the largest |reference| of a compared block:
 * float32 1e-5, float16 2e-3, bfloat16 1.6e-2. */
double kref_tolerance(plan_dtype dt);

/* ---- pieces ------------------------------------------------------------ */

/* The activation of the catalogue (erf GELU, tanh GELU, ReLU, tanh). */
double kref_act(plan_act a, double x);
/* out[c] = (x[c] - mean) / sqrt(var + eps) * gamma[c] + beta[c], c < n. */
void kref_layernorm(const double *x, int n, double eps, kref_mat gamma, kref_mat beta, double *out);

/* ---- the kinds --------------------------------------------------------- */

size_t kref_rows(const kernel_spec *s, const int32_t *req);
size_t kref_cols(const kernel_spec *s);

/* LayerNorm(sum_g tables[g][index_g(s)]) with ids clamped to each table. */
double *kref_embed_ln(const kernel_spec *s, const int32_t *req, const kref_mat *tables, kref_mat gamma,
                      kref_mat beta);
/* LayerNorm(x (+ bias) (+ residual)). */
double *kref_add_ln(const kernel_spec *s, const int32_t *req, kref_mat x, kref_mat bias, kref_mat res,
                    kref_mat gamma, kref_mat beta);
/* softmax(scale * q.k + mask) . v per head, keys k < len. */
/* bias: [heads][bias_ld][bias_ld] (read when s->bias_ld), added to the scaled scores */
double *kref_attention(const kernel_spec *s, const int32_t *req, kref_mat qkv, kref_mat bias);
/* act(x . w^T (+ bias) (+ residual)). */
double *kref_gemm(const kernel_spec *s, const int32_t *req, kref_mat x, kref_mat w, kref_mat bias, kref_mat res);
/* cls or masked mean of x's rows [+ L2 normalisation]. */
double *kref_pool(const kernel_spec *s, const int32_t *req, kref_mat x);

/* What one launch of kernel s must write: in[] are its arguments after
 * (out, req), stored as s->dtype; NULL for the absent optional ones. */
double *kref_kernel(const kernel_spec *s, const int32_t *req, const void *const *in);

#endif
