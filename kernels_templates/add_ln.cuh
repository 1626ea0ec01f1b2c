/*
 * add_ln.cuh — out[s] = LayerNorm(x[s] (+ bias) (+ residual[s])) * gamma + beta.
 *
 * The residual-plus-LayerNorm that closes each half of an encoder layer.
 * It is pure bandwidth (three or four row reads, one write, a few flops per
 * element), so the design is about memory: a row of up to 1024 elements
 * belongs to one warp (THREADS = 32, ROWS warps per block), which reduces
 * with shuffles alone and never touches shared memory or a block barrier;
 * a longer row belongs to a whole block (THREADS > 32) with one small
 * block reduction per pass.  Each thread loads its 16-byte vectors once,
 * adds in float in the IR's order ((x + bias) + residual), keeps the sums
 * in registers for both LayerNorm passes and writes the row once.  Rows at
 * or past the request's length are padding: their warps (or blocks) exit
 * before reading anything.
 */
#ifndef BERTC_ADD_LN_CUH
#define BERTC_ADD_LN_CUH

template <typename T, int BUCKET, int H, int VEC, int THREADS, int ROWS, bool BIAS, bool RES>
BERTC_INLINE void bertc_add_ln(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x,
                               const T *__restrict__ bias, const T *__restrict__ res,
                               const T *__restrict__ gamma, const T *__restrict__ beta, float eps) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    __shared__ float scratch[32];
    const int len = bertc_req_len<BUCKET>(req);
    const int tid = THREADS == 32 ? ((int)threadIdx.x & 31) : (int)threadIdx.x;
    const int row = THREADS == 32 ? (int)blockIdx.x * ROWS + ((int)threadIdx.x >> 5) : (int)blockIdx.x;
    if (row >= len) return;
    bertc_grid_dependency_wait(); /* x and the residual come from earlier steps */

    const size_t base = (size_t)row * H;
    float v[S::ITEMS * VEC];
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[i * VEC + j] = 0.0f;
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
            const int col = (i * THREADS + tid) * VEC;
            bertc_load_vec<T, VEC>(x + base + col, v + i * VEC);
            if constexpr (BIAS) {
                float b[VEC];
                bertc_load_vec<T, VEC>(bias + col, b);
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[i * VEC + j] += b[j];
            }
            if constexpr (RES) {
                float r[VEC];
                bertc_load_vec<T, VEC>(res + base + col, r);
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[i * VEC + j] += r[j];
            }
        }
    }
    bertc_trigger_dependents(); /* every activation this kernel reads is in registers */
    bertc_layer_norm_store<T, H, VEC, THREADS>(v, tid, gamma, beta, out + base, eps, scratch);
}

#endif /* BERTC_ADD_LN_CUH */
