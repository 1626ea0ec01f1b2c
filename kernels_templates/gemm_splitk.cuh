/*
 * gemm_splitk.cuh — bertc's GEMM family for batch-1 shapes: a tile of
 * out[m, n] = x[m, :] . w[n, :] (w in Linear layout [N, K]) per block, the
 * K dimension optionally split over several blocks, and two epilogues:
 *
 *   bertc_gemm_splitk  act(x.w^T (+ bias) (+ residual))           kind gemm_splitk
 *   bertc_gemm_ln      LayerNorm(x.w^T (+ bias) (+ residual))
 *                      * gamma + beta                               kind gemm_ln
 *
 * Why split K.  At batch 1 the GEMMs of an encoder layer have M = the
 * bucket (128 rows at s128) and N, K = hidden or intermediate, so a plain
 * output tiling gives the output projection 6-24 tiles for 108-132 SMs.
 * The grid is (N tiles, row blocks, splits): each block runs the shared
 * main loop of gemm.cuh (mma.sync + ldmatrix + cp.async ring on sm_80+,
 * two m16n8k8 per k16 on sm_75 for fp16, SIMT for float and bf16-on-sm_75)
 * over its slice of the k-tiles, so the launch fills the GPU.
 *
 * Why k-groups of warps.  The small-M tiles that split K uses (16 or 32
 * rows) leave four warps side by side 16 x 16 or 16 x 32 each, and a warp
 * tile that narrow reads more operand bytes from shared memory per FLOP
 * than the SM delivers to feed its tensor cores (16 x 16: half of an
 * A100's).  Those tiles take two k-groups of warps instead (WK = 2,
 * kernel_gsk_kgroups): group g does every other 16-deep step of each
 * k-tile, so each warp's tile is twice as wide; the groups' sums meet in
 * the staged tile, the last group's first, in one fixed order.  The order
 * in which a dot product is summed thus depends on the tile's k-groups,
 * which is why a plan with token buckets keeps to one-group tiles.
 *
 * Deterministic reduction by the last block to arrive.  With several splits
 * every block writes its float partial tile to a workspace (the plan's
 * arena provides it, laid out tile by tile: [split][row block][n tile]
 * [BM][BN]), then increments an arrival counter per output tile.  The block
 * that sees the count reach the split count — whichever it is — sums the
 * partials of its tile *in split order 0, 1, ...* from the workspace, so
 * the bits never depend on timing or on which block came last, and resets
 * the counter to zero for the next replay.  No block ever waits for
 * another: blocks that are not last simply exit, which is why the pattern
 * works on a GPU (no co-residency assumption) and on the emulated device,
 * which runs blocks one after another.  The counters live in the plan's
 * COUNTERS buffer, zeroed once when a context is created and returned to
 * zero by every launch that uses them (docs/plan-format.md).  Memory
 * order: each thread fences its workspace stores before the block's
 * arrival (__threadfence, then the barrier, then one atomicAdd), and the
 * last block fences again before reading the others' partials, which it
 * reads with __ldcg (L2, never a stale L1 line).
 *
 * LayerNorm needs whole rows.  gemm_ln reduces a tile as above, adds bias
 * and residual in float and stores the pre-LayerNorm sums (float, never
 * rounded to the storage type) over split 0's partial of the tile; a
 * second counter per row block counts finished tiles, and the last tile
 * of a row block to finish normalises its BM rows: a warp per row, the
 * row in registers, the two-pass mean and variance of bertc_device.cuh.
 * So a layer's output projection or FC2 plus its residual add and
 * LayerNorm is one launch, and the largest values of the layer (x +
 * residual) stay float from the accumulator to the normalisation.
 *
 * The epilogue is the same for every compute path: the accumulators are
 * staged through shared memory (the main loop's ring, drained) as a float
 * tile, then read back in row-major chunks of EV floats (16 bytes of
 * output), so bias, residual and output are 16-byte vector accesses and
 * partials float4 ones.  Rows at or past the request's length are never
 * computed, read or written (whole row blocks past it exit at once; the
 * tile loader zero-fills x's rows there); columns past N are skipped.
 *
 * Overlap (docs: kernels-shared interface 1): before the dependency wait a
 * block reads only the request block and prefetches its own slice of the
 * weights; it triggers its dependents after its last read of an earlier
 * step's activation (x in the main loop, the residual in the epilogue).
 */
#ifndef BERTC_GEMM_SPLITK_CUH
#define BERTC_GEMM_SPLITK_CUH

/* The compute path of the family: tensor cores for 16-bit storage where
 * the GPU has them for T, SIMT otherwise (and under BERTC_GEMM_FORCE_SIMT). */
template <typename T> struct bertc_gsk_path {
#ifdef BERTC_GEMM_FORCE_SIMT
    static constexpr bool MMA = false;
#else
    static constexpr bool MMA =
        sizeof(T) == 2 && (BERTC_HAS_MMA16816 || (BERTC_HAS_MMA1688_F16 && bertc_type<T>::IS_HALF));
#endif
};

/* The weights this block streams, prefetched into L2 before the
 * dependency wait (one row segment per thread). */
template <typename T, int K, int BN>
BERTC_INLINE void bertc_gsk_prefetch(const T *__restrict__ w, int n0, int nvalid, int kt0, int kt1, int tid) {
    constexpr int BK = 64 / (int)sizeof(T);
    const int k0 = kt0 * BK, k1 = kt1 * BK < K ? kt1 * BK : K;
    if (tid < BN && n0 + tid < nvalid && k1 > k0)
        bertc_prefetch_l2(w + (size_t)(n0 + tid) * K + k0, (unsigned)((k1 - k0) * (int)sizeof(T)));
}

/* The accumulators into a float tile of BM x (BN + 4) in shared memory.
 * With WK k-groups (tensor cores) the last group stores its sums, then the
 * others add theirs in turn, down to group 0: every element is summed in
 * one fixed order.  Every thread of the block calls it (it synchronises). */
template <int BM, int BN, int WM, bool MMA, int WK = 1>
BERTC_INLINE void bertc_gsk_stage(float *tile, const float *acc, int tid) {
    typedef bertc_gemm_shape<BM, BN, WM, MMA, WK> S;
    constexpr int LD = BN + 4;
    if constexpr (MMA) {
        const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
        const int wk = warp / (WM * S::WN), wmn = warp - wk * (WM * S::WN);
        const int wm = wmn / S::WN, wn = wmn - (wmn / S::WN) * S::WN;
#pragma unroll 1
        for (int q = WK - 1; q >= 0; --q) {
            if (q < WK - 1) __syncthreads(); /* group q + 1's sums are in the tile */
            if (wk != q) continue;
#pragma unroll
            for (int mi = 0; mi < S::MI; ++mi) {
#pragma unroll
                for (int ni = 0; ni < S::NI; ++ni) {
#pragma unroll
                    for (int hf = 0; hf < 2; ++hf) {
                        const int r = wm * S::WTM + mi * 16 + g + 8 * hf, c = wn * S::WTN + ni * 8 + 2 * t;
                        const float *a = acc + (mi * S::NI + ni) * 4 + 2 * hf;
                        float *d = tile + r * LD + c;
                        d[0] = q == WK - 1 ? a[0] : a[0] + d[0];
                        d[1] = q == WK - 1 ? a[1] : a[1] + d[1];
                    }
                }
            }
        }
    } else {
        const int tr = tid / S::TC, tc = tid - (tid / S::TC) * S::TC;
#pragma unroll
        for (int i = 0; i < S::TM; ++i) {
#pragma unroll
            for (int j = 0; j < S::TN; ++j) tile[(tr + i * S::TR) * LD + tc + j * S::TC] = acc[i * S::TN + j];
        }
    }
}

/* n floats from p (16-byte aligned when n % 4 == 0) through L2. */
template <int NV> BERTC_INLINE void bertc_gsk_load_cg(const float *p, float *v) {
    if constexpr (NV % 4 == 0) {
#pragma unroll
        for (int i = 0; i < NV / 4; ++i) {
            const float4 q = __ldcg(reinterpret_cast<const float4 *>(p) + i);
            v[4 * i] = q.x;
            v[4 * i + 1] = q.y;
            v[4 * i + 2] = q.z;
            v[4 * i + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < NV; ++i) v[i] = __ldcg(p + i);
    }
}

template <int NV> BERTC_INLINE void bertc_gsk_store_f(float *p, const float *v) {
    if constexpr (NV % 4 == 0) {
#pragma unroll
        for (int i = 0; i < NV / 4; ++i)
            reinterpret_cast<float4 *>(p)[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < NV; ++i) p[i] = v[i];
    }
}

/*
 * This block's arrival at `counter`, which `expect` blocks increment; true
 * in the block that arrives last (for every thread of it), which also
 * resets the counter to zero.  Every thread's earlier global stores are
 * visible to that block.  Block-uniform; all threads call it.
 */
BERTC_INLINE bool bertc_gsk_arrive(int *counter, int expect) {
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const int old = atomicAdd(counter, 1);
        last = old == expect - 1;
        if (old == expect - 1) atomicExch(counter, 0);
    }
    __syncthreads();
    const bool mine = last != 0;
    if (mine) __threadfence();
    return mine;
}

/*
 * The tile's chunks: EV consecutive columns of one row, row-major over the
 * tile, chunk i of thread tid at i * 128 + tid.  f(r, c) for each chunk
 * whose row is below `rows` and whose first column is below `cols`.
 */
template <int BM, int BN, int EV, typename F> BERTC_INLINE void bertc_gsk_chunks(int tid, int rows, int cols, F f) {
    constexpr int CPR = BN / EV, CHUNKS = BM * CPR;
#pragma unroll 1
    for (int i = tid; i < CHUNKS; i += BERTC_GEMM_THREADS) {
        const int r = i / CPR, c = (i - (i / CPR) * CPR) * EV;
        if (r < rows && c < cols) f(r, c);
    }
}

/*
 * v[0..EV) += bias[col..] and residual[row][col..] in float (the IR's
 * order: product, + bias, + residual), columns past N untouched.
 * ALIGNED: the whole chunk is inside N and 16-byte aligned in bias and
 * residual (vector loads); otherwise element by element.
 */
template <typename T, int N, int RLD, int EV, bool BIAS, bool RES, bool ALIGNED>
BERTC_INLINE void bertc_gsk_bias_res(float *v, const T *__restrict__ bias, const T *__restrict__ res, int row,
                                     int col) {
    if constexpr (ALIGNED) {
        float t[EV];
        if constexpr (BIAS) {
            bertc_load_vec<T, EV>(bias + col, t);
#pragma unroll
            for (int e = 0; e < EV; ++e) v[e] += t[e];
        }
        if constexpr (RES) {
            bertc_load_vec<T, EV>(res + (size_t)row * RLD + col, t);
#pragma unroll
            for (int e = 0; e < EV; ++e) v[e] += t[e];
        }
    } else {
#pragma unroll
        for (int e = 0; e < EV; ++e) {
            if (col + e < N) {
                if constexpr (BIAS) v[e] += bertc_to_float(bias[col + e]);
                if constexpr (RES) v[e] += bertc_to_float(res[(size_t)row * RLD + col + e]);
            }
        }
    }
}

/*
 * Block geometry and the k-range of this block's split.  The row blocks
 * and the splits are the launch's (gridDim.y, gridDim.z), not template
 * parameters: the bucket and the split count change no instruction that
 * matters (the main loop's k-range was always a run-time value), so one
 * kernel text serves every bucket and split count of a tiling, and the
 * compiler builds it once (a plan's kernel records keep their own bucket
 * and splits, which the launch contract checks: runtime/plan/plan_kernels.c).
 * The rows the kernel may touch are the grid's row blocks times BM when
 * the GEMM's rows fill them; when they do not (a pooler's one row under a
 * 16-row tile, a 32-row bucket under a 64-row tile) the text carries them
 * as ROWS, since the request's length counts the sequence, not the GEMM's
 * rows.
 * Whether there is more than one split is the launch's too (splits > 1:
 * partials in the workspace and an arrival counter; one split needs
 * neither), and so is the depth of the load ring: as many stages as the
 * text's STAGES allow and a split's k-tiles can fill, at least two
 * (kernel_gsk_geometry computes the same for the launch's shared memory).
 * Each split takes ceil(KTILES / splits) k-tiles, the last one what is
 * left (the contract refuses a split count that would leave a split
 * empty).
 */
template <typename T, int N, int K, int BM, int BN, int ROWS> struct bertc_gsk_grid {
    static constexpr int BK = 64 / (int)sizeof(T);
    static constexpr int KTILES = (K + BK - 1) / BK;
    static constexpr int NTILES = (N + BN - 1) / BN;
    static constexpr int EV = 16 / (int)sizeof(T); /* chunk: 16 bytes of output */
    static_assert(BN % EV == 0, "chunks");
    int nt, rb, split, n0, m0, kt0, kt1, kts, rowblocks, splits;
    BERTC_INLINE bertc_gsk_grid() {
        nt = (int)blockIdx.x;
        rb = (int)blockIdx.y;
        split = (int)blockIdx.z;
        rowblocks = (int)gridDim.y;
        splits = (int)gridDim.z;
        n0 = nt * BN;
        m0 = rb * BM;
        kts = (KTILES + splits - 1) / splits;
        kt0 = split * kts;
        kt1 = kt0 + kts < KTILES ? kt0 + kts : KTILES;
    }
    /* the load ring's depth for a text whose deepest is STAGES */
    template <int STAGES> BERTC_INLINE int stages() const {
        const int s = kts + 1 < STAGES ? kts + 1 : STAGES;
        return s > 2 ? s : 2;
    }
    /* the partial tile of split p in the workspace */
    BERTC_INLINE float *part(float *ws, int p) const {
        return ws + ((size_t)(p * rowblocks + rb) * NTILES + nt) * (size_t)(BM * BN);
    }
    /* the request's length, clamped into the rows the launch covers */
    BERTC_INLINE int rows(const int *req) const {
        const int len = bertc_req_read(req).len, most = ROWS ? ROWS : rowblocks * BM;
        return len < most ? len : most;
    }
};

/*
 * The product of this block's split, staged in shared memory (float, row
 * stride BN + 4), and, with several splits, also written to the workspace as
 * its partial.  Returns the tile.
 */
template <typename T, int N, int K, int XLD, int BM, int BN, int WM, int WK, int VEC, int STAGES, int ROWS>
BERTC_INLINE float *bertc_gsk_product(const bertc_gsk_grid<T, N, K, BM, BN, ROWS> &G,
                                      const T *__restrict__ x, const T *__restrict__ w, float *ws, int len,
                                      bool trigger) {
    constexpr bool MMA = bertc_gsk_path<T>::MMA;
    constexpr int BKP = 64 / (int)sizeof(T) + 16 / (int)sizeof(T), LD = BN + 4;
    BERTC_DYNAMIC_SMEM(unsigned char, smem);
    const int stages = G.template stages<STAGES>();
    T *As = reinterpret_cast<T *>(smem); /* [stages][BM][BKP] */
    T *Bs = As + stages * BM * BKP;      /* [stages][BN][BKP] */
    const int tid = (int)threadIdx.x;

    bertc_gsk_prefetch<T, K, BN>(w, G.n0, N, G.kt0, G.kt1, tid);
    bertc_grid_dependency_wait();
    float acc[bertc_gemm_shape<BM, BN, WM, MMA, WK>::ACC];
    bertc_gemm_mainloop<T, K, XLD, BM, BN, WM, VEC, STAGES, MMA, WK>(acc, As, Bs, x, w, G.m0, len, G.n0, N, G.kt0,
                                                                     G.kt1, stages, tid);
    if (trigger) bertc_trigger_dependents(); /* x was the last activation this block reads */
    bertc_cp_async_wait<0>();
    __syncthreads(); /* the ring is drained and every warp is done with it */
    float *tile = reinterpret_cast<float *>(smem);
    bertc_gsk_stage<BM, BN, WM, MMA, WK>(tile, acc, tid);
    __syncthreads();
    if (G.splits > 1) {
        float *mine = G.part(ws, G.split);
        constexpr int EV = bertc_gsk_grid<T, N, K, BM, BN, ROWS>::EV;
        bertc_gsk_chunks<BM, BN, EV>(tid, len - G.m0, N - G.n0, [&](int r, int c) {
            float v[EV];
#pragma unroll
            for (int e = 0; e < EV; ++e) v[e] = tile[r * LD + c + e];
            bertc_gsk_store_f<EV>(mine + r * BN + c, v);
        });
    }
    return tile;
}

/* The chunk (r, c) of the finished product: the staged tile, or the sum of
 * every split's partial in split order. */
template <int BN, int EV, typename G_>
BERTC_INLINE void bertc_gsk_sum(float *v, const G_ &G, const float *tile, float *ws, int r, int c) {
    if (G.splits == 1) {
#pragma unroll
        for (int e = 0; e < EV; ++e) v[e] = tile[r * (BN + 4) + c + e];
    } else {
        bertc_gsk_load_cg<EV>(G.part(ws, 0) + r * BN + c, v);
#pragma unroll 1
        for (int p = 1; p < G.splits; ++p) {
            float t[EV];
            bertc_gsk_load_cg<EV>(G.part(ws, p) + r * BN + c, t);
#pragma unroll
            for (int e = 0; e < EV; ++e) v[e] += t[e];
        }
    }
}

template <typename T, int N, int K, int XLD, int OLD, int RLD, bool BIAS, bool RES, int ACT, int BM, int BN, int WM,
          int WK, int VEC, int STAGES, int ROWS>
BERTC_INLINE void bertc_gemm_splitk(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x,
                                    const T *__restrict__ w, const T *__restrict__ bias, const T *__restrict__ res,
                                    float *ws, int *counters) {
    typedef bertc_gsk_grid<T, N, K, BM, BN, ROWS> Grid;
    constexpr int EV = Grid::EV;
    constexpr bool ALIGNED = N % EV == 0 && OLD % EV == 0 && (!RES || RLD % EV == 0);
    const Grid G;
    const int len = G.rows(req), tid = (int)threadIdx.x;
    if (G.m0 >= len) return;
    const float *tile = bertc_gsk_product<T, N, K, XLD, BM, BN, WM, WK, VEC, STAGES, ROWS>(G, x, w, ws, len, !RES);
    if (G.splits > 1) {
        const bool last = bertc_gsk_arrive(counters + G.rb * Grid::NTILES + G.nt, G.splits);
        if (!last) {
            if (RES) bertc_trigger_dependents();
            return;
        }
    }
    bertc_gsk_chunks<BM, BN, EV>(tid, len - G.m0, N - G.n0, [&](int r, int c) {
        const int row = G.m0 + r, col = G.n0 + c;
        float v[EV];
        bertc_gsk_sum<BN, EV>(v, G, tile, ws, r, c);
        bertc_gsk_bias_res<T, N, RLD, EV, BIAS, RES, ALIGNED>(v, bias, res, row, col);
#pragma unroll
        for (int e = 0; e < EV; ++e) v[e] = bertc_activate<ACT>(v[e]);
        if constexpr (ALIGNED) {
            bertc_store_vec<T, EV>(out + (size_t)row * OLD + col, v);
        } else {
#pragma unroll
            for (int e = 0; e < EV; ++e)
                if (col + e < N) out[(size_t)row * OLD + col + e] = bertc_from_float<T>(v[e]);
        }
    });
    if (RES) bertc_trigger_dependents();
}

/*
 * The LayerNorm of the row block's rows from the pre-LayerNorm sums in the
 * workspace (split 0's region of each tile): a warp per row, LNVEC-wide
 * pieces, vector i of the row held by lane i % 32.  Each warp loads its
 * slice of gamma and beta once (weights) for all the rows it normalises.
 */
template <typename T, int N, int OLD, int BM, int BN, int NTILES, int LNVEC>
BERTC_INLINE void bertc_gsk_layer_norm(T *__restrict__ out, const float *pre_rb, const T *__restrict__ gamma,
                                       const T *__restrict__ beta, float eps, int m0, int len, int tid) {
    typedef bertc_row_shape<N, LNVEC, 32> S;
    const int lane = tid & 31, warp = tid >> 5;
    if (warp >= BM || m0 + warp >= len) return;
    float gm[S::ITEMS * LNVEC], bt[S::ITEMS * LNVEC];
    bertc_row_load<T, N, LNVEC, 32>(gamma, lane, gm);
    bertc_row_load<T, N, LNVEC, 32>(beta, lane, bt);
#pragma unroll 1
    for (int r = warp; r < BM && m0 + r < len; r += BERTC_GEMM_THREADS / 32) {
        float v[S::ITEMS * LNVEC];
#pragma unroll
        for (int i = 0; i < S::ITEMS; ++i) {
#pragma unroll
            for (int j = 0; j < LNVEC; ++j) v[i * LNVEC + j] = 0.0f;
            if (bertc_row_has<N, LNVEC, 32>(i, lane)) {
                const int col = (i * 32 + lane) * LNVEC, t = col / BN;
                bertc_gsk_load_cg<LNVEC>(pre_rb + (size_t)t * (BM * BN) + r * BN + (col - t * BN), v + i * LNVEC);
            }
        }
        bertc_layer_norm_store<T, N, LNVEC, 32>(v, lane, gm, bt, out + (size_t)(m0 + r) * OLD, eps, nullptr);
    }
}

template <typename T, int N, int K, int XLD, int OLD, int RLD, bool BIAS, bool RES, int BM, int BN, int WM, int WK,
          int VEC, int STAGES, int ROWS, int LNVEC>
BERTC_INLINE void bertc_gemm_ln(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x,
                                const T *__restrict__ w, const T *__restrict__ bias, const T *__restrict__ res,
                                const T *__restrict__ gamma, const T *__restrict__ beta, float eps, float *ws,
                                int *counters) {
    typedef bertc_gsk_grid<T, N, K, BM, BN, ROWS> Grid;
    constexpr int EV = Grid::EV;
    constexpr bool ALIGNED = N % EV == 0 && (!RES || RLD % EV == 0);
    static_assert(BN % LNVEC == 0 && N % LNVEC == 0, "LayerNorm pieces stay inside a tile");
    const Grid G;
    const int len = G.rows(req), tid = (int)threadIdx.x;
    if (G.m0 >= len) return;
    const float *tile = bertc_gsk_product<T, N, K, XLD, BM, BN, WM, WK, VEC, STAGES, ROWS>(G, x, w, ws, len, !RES);
    int *row_counters = counters + (G.splits > 1 ? G.rowblocks * Grid::NTILES : 0);
    if (G.splits > 1) {
        if (!bertc_gsk_arrive(counters + G.rb * Grid::NTILES + G.nt, G.splits)) {
            if (RES) bertc_trigger_dependents();
            return;
        }
    }
    /* the tile's pre-LayerNorm sums, in place of split 0's partial */
    float *pre = G.part(ws, 0);
    bertc_gsk_chunks<BM, BN, EV>(tid, len - G.m0, N - G.n0, [&](int r, int c) {
        float v[EV];
        bertc_gsk_sum<BN, EV>(v, G, tile, ws, r, c);
        bertc_gsk_bias_res<T, N, RLD, EV, BIAS, RES, ALIGNED>(v, bias, res, G.m0 + r, G.n0 + c);
        bertc_gsk_store_f<EV>(pre + r * BN + c, v);
    });
    if (RES) bertc_trigger_dependents(); /* the residual was the last activation read */
    if (!bertc_gsk_arrive(row_counters + G.rb, Grid::NTILES)) return;
    const float *pre_rb = ws + (size_t)G.rb * Grid::NTILES * (BM * BN);
    bertc_gsk_layer_norm<T, N, OLD, BM, BN, Grid::NTILES, LNVEC>(out, pre_rb, gamma, beta, eps, G.m0, len, tid);
}

#endif /* BERTC_GEMM_SPLITK_CUH */
