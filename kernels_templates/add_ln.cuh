/*
 * add_ln.cuh — out[s] = LayerNorm(x[s] (+ bias) (+ residual[s])) * gamma + beta.
 *
 * The residual-plus-LayerNorm that closes each half of an encoder layer.
 * It is pure bandwidth (three or four row reads, one write, a few flops per
 * element), so the design is about memory and latency.  A row of up to
 * 1024 elements belongs to one warp, which is the whole block (THREADS =
 * 32): it reduces with shuffles alone and never touches shared memory or a
 * block barrier, and there are as many blocks as rows.  A longer row
 * belongs to a block (THREADS > 32) with one small block reduction per
 * pass.  Each thread loads its 16-byte vectors once, adds in float in the
 * IR's order ((x + bias) + residual), keeps the sums in registers for both
 * LayerNorm passes and writes the row once.
 *
 * Latency.  Everything that does not depend on the previous step is
 * issued first and together: the request's two lengths and the weights
 * (gamma, beta, bias) before the grid-dependency wait, where on sm_90 they
 * overlap the previous kernel's tail; after the wait only the x and
 * residual rows remain, one round trip.  Rows at or past the request's
 * length are padding: their blocks exit before reading any activation.
 * The text does not depend on the bucket (the lengths are read from the
 * request block), so one kernel serves every bucket.
 */
#ifndef BERTC_ADD_LN_CUH
#define BERTC_ADD_LN_CUH

template <typename T, int H, int VEC, int THREADS, bool BIAS, bool RES>
BERTC_INLINE void bertc_add_ln(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x,
                               const T *__restrict__ bias, const T *__restrict__ res,
                               const T *__restrict__ gamma, const T *__restrict__ beta, float eps) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    constexpr int N = S::ITEMS * VEC;
    __shared__ float scratch[32];
    const int tid = (int)threadIdx.x, row = (int)blockIdx.x;
    const bertc_req_lens rl = bertc_req_read(req);
    float gm[N], bt[N], bs[N];
    bertc_row_load<T, H, VEC, THREADS>(gamma, tid, gm);
    bertc_row_load<T, H, VEC, THREADS>(beta, tid, bt);
    if constexpr (BIAS) bertc_row_load<T, H, VEC, THREADS>(bias, tid, bs);
    bertc_grid_dependency_wait();
    if (row >= rl.len) return;

    const size_t base = (size_t)row * H;
    float v[N], r[N];
    bertc_row_load<T, H, VEC, THREADS>(x + base, tid, v);
    if constexpr (RES) bertc_row_load<T, H, VEC, THREADS>(res + base, tid, r);
    bertc_trigger_dependents();
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if constexpr (BIAS) v[j] += bs[j];
        if constexpr (RES) v[j] += r[j];
    }
    bertc_layer_norm_store<T, H, VEC, THREADS>(v, tid, gm, bt, out + base, eps, scratch);
}

#endif /* BERTC_ADD_LN_CUH */
