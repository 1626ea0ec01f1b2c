/*
 * gemm.cuh — out[m, n] = act(sum_k x[m, k] * w[n, k] (+ bias[n]) (+ residual[m, n]))
 * for m < len, with w in Linear layout [N, K].
 *
 * Both operands are K-contiguous, so one tile loader serves both: a block
 * computes a BM x BN tile of out, walking K in steps of 64 bytes (BK = 32
 * sixteen-bit or 16 float elements) through a ring of STAGES shared-memory
 * stages: while the tensor cores (or the FMA units) work on one stage, the
 * next STAGES - 1 are in flight.  At batch 1 a GEMM is a weight stream with
 * few blocks per SM, so the bytes in flight per block decide the
 * bandwidth; the generator gives each tile as many stages as fit in 48 KiB.
 * One barrier per k-tile: after it, every warp has finished the previous
 * tile, so its stage may be refilled.  A stage row is padded to 80 bytes, which keeps both the 16-byte
 * fill and the 32-bit fragment reads free of bank conflicts (rows land 20
 * words apart: 8 consecutive rows cover 32 distinct banks).  Rows of x at
 * or past len, rows of w past N and columns past K are zero-filled in
 * shared memory, so ragged edges (N = 200, K = 96, a short request) cost
 * nothing but idle lanes, and padding rows of x are never read.
 *
 * Two compute paths over the same tiles, the same four warps and the same
 * shared memory, so one launch geometry (kernel_dims) fits every arch:
 *  - tensor cores (16-bit storage, sm_80+ and the emulator): a 2 x 2 grid
 *    of warps, each a (BM/2) x (BN/2) tile of mma.sync m16n8k16 with float
 *    accumulators; fragments come from shared memory by ldmatrix.x4 (80-byte
 *    rows: the eight 16-byte rows of a matrix hit distinct banks) in the
 *    PTX fragment layout (bertc_mma_16816 documents it); the stage fill
 *    uses cp.async with zero-fill.
 *  - SIMT (float storage, and sm_75): each thread owns TM x TN outputs
 *    spread over the tile (rows tr + i*TR, columns tc + j*TC) and sums
 *    pairs of k in float.
 * The epilogue adds bias and residual in float in the IR's order, applies
 * the activation and rounds once; columns go out in pairs when the sizes
 * allow.  Defining BERTC_GEMM_FORCE_SIMT selects the SIMT path everywhere
 * (the emulator uses it to check that path too).
 *
 * The main loop (bertc_gemm_mainloop) is shared with gemm_splitk.cuh, the
 * GEMM family with an explicit tile, split-K and fused epilogues: there the
 * warps are WK k-groups of WM x WN (WM x WK x WN = 4; kernel_gsk_kgroups:
 * two k-groups of 1 x 2 warps for 16-row tiles, of 2 x 1 for 32 x 32, 32 x
 * 64 and 64 x 32, else one of 2 x 2 or 4 x 1), a k-group taking every
 * WK-th 16-deep step of each k-tile so that its warps' tiles are wide
 * enough to feed the tensor cores, the loop runs over one split's range
 * of k-tiles, and the tensor-core k-step
 * (bertc_mma_k16) is also available on sm_75 for fp16, as two m16n8k8.
 * The `gemm` kind here keeps its 2 x 2 warps, whole K and sm_80+ tensor
 * cores: it is what the baseline fusion level generates.
 */
#ifndef BERTC_GEMM_CUH
#define BERTC_GEMM_CUH

#define BERTC_GEMM_THREADS 128

/* Fills one stage: ROWS rows of BK elements from src (leading dimension
 * LDSRC) starting at row row0 and column k0; rows >= nvalid and columns
 * >= K become zeros. */
template <typename T, int ROWS, int BK, int BKP, int K, int LDSRC, int VEC, bool ASYNC>
BERTC_INLINE void bertc_gemm_fill(T *__restrict__ dst, const T *__restrict__ src, int row0, int nvalid, int k0,
                                  int tid) {
    constexpr int CPR = BK / VEC; /* chunks per row */
    constexpr int TOTAL = ROWS * CPR;
#pragma unroll
    for (int i0 = 0; i0 < TOTAL; i0 += BERTC_GEMM_THREADS) {
        const int i = i0 + tid;
        if (TOTAL % BERTC_GEMM_THREADS == 0 || i < TOTAL) {
            const int r = i / CPR, c = (i - r * CPR) * VEC;
            const int gr = row0 + r, gk = k0 + c;
            const bool ok = gr < nvalid && gk < K; /* K % VEC == 0: a chunk is all in or all out */
            T *d = dst + r * BKP + c;
            const T *s = src + (ok ? (size_t)gr * LDSRC + gk : (size_t)0);
            if constexpr (ASYNC) {
                bertc_cp_async16(d, s, ok);
            } else if (ok) {
                bertc_copy_to_smem<T, VEC>(d, s);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) d[j] = bertc_from_float<T>(0.0f);
            }
        }
    }
}

/* Bias, residual, activation, rounding and the store of out[row][col]
 * and out[row][col + 1] (PAIR: both in range and 2-aligned). */
template <typename T, int N, int OLD, int RLD, bool BIAS, bool RES, int ACT, bool PAIR>
BERTC_INLINE void bertc_gemm_store2(T *__restrict__ out, const T *__restrict__ bias, const T *__restrict__ res,
                                    int row, int col, float v0, float v1) {
    if constexpr (PAIR) {
        if (col < N) {
            if constexpr (BIAS) {
                const float2 b = bertc_load2a(bias + col);
                v0 += b.x;
                v1 += b.y;
            }
            if constexpr (RES) {
                const float2 r = bertc_load2a(res + (size_t)row * RLD + col);
                v0 += r.x;
                v1 += r.y;
            }
            bertc_store2<T>(out + (size_t)row * OLD + col, bertc_activate<ACT>(v0), bertc_activate<ACT>(v1));
        }
    } else {
        float v[2] = {v0, v1};
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int cc = col + e;
            if (cc < N) {
                float a = v[e];
                if constexpr (BIAS) a += bertc_to_float(bias[cc]);
                if constexpr (RES) a += bertc_to_float(res[(size_t)row * RLD + cc]);
                out[(size_t)row * OLD + cc] = bertc_from_float<T>(bertc_activate<ACT>(a));
            }
        }
    }
}

template <typename T, int N, int OLD, int RLD, bool BIAS, bool RES, int ACT>
BERTC_INLINE void bertc_gemm_store1(T *__restrict__ out, const T *__restrict__ bias, const T *__restrict__ res,
                                    int row, int col, float a) {
    if (col < N) {
        if constexpr (BIAS) a += bertc_to_float(bias[col]);
        if constexpr (RES) a += bertc_to_float(res[(size_t)row * RLD + col]);
        out[(size_t)row * OLD + col] = bertc_from_float<T>(bertc_activate<ACT>(a));
    }
}

/* The thread and warp layout of a BM x BN tile over the four warps: WK
 * k-groups of WM x WN warps of mma tiles (a k-group takes every WK-th
 * 16-deep step of each k-tile: two groups give each warp a tile twice as
 * wide, which reads fewer shared-memory bytes per FLOP — the narrow tiles
 * of small-M GEMMs are what the tensor cores wait for), or TR x TC threads
 * of TM x TN SIMT outputs; ACC is each thread's accumulator count. */
template <int BM, int BN, int WM, bool MMA, int WK = 1> struct bertc_gemm_shape {
    static constexpr int WN = 4 / (WM * WK), WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
    static constexpr int TN = BN >= 128 ? 8 : 4, TC = BN / TN, TR = BERTC_GEMM_THREADS / TC, TM = BM / TR;
    static constexpr int ACC = MMA ? MI * NI * 4 : TM * TN;
};

/*
 * The main loop: acc (zeroed here) += x[m0.., k] . w[n0.., k] over the
 * k-tiles [kt0, kt1), rows of x at or past mvalid and rows of w at or past
 * nvalid read as zeros.  As / Bs are the rings in shared memory, `stages`
 * deep (2 <= stages <= STAGES: a launch may give a split of few k-tiles a
 * shallower ring than the text's largest, so one text serves every split
 * count; the loops are unrolled for STAGES and the wait for the ring's
 * depth is one branch).  With WK k-groups (tensor cores only) each warp's
 * acc holds its group's share of the k-steps: the caller adds the groups.
 */
template <typename T, int K, int XLD, int BM, int BN, int WM, int VEC, int STAGES, bool MMA, int WK = 1>
BERTC_INLINE void bertc_gemm_mainloop(float *acc, T *As, T *Bs, const T *__restrict__ x, const T *__restrict__ w,
                                      int m0, int mvalid, int n0, int nvalid, int kt0, int kt1, int stages, int tid) {
    typedef bertc_gemm_shape<BM, BN, WM, MMA, WK> S;
    constexpr int BK = 64 / (int)sizeof(T);
    constexpr int BKP = BK + 16 / (int)sizeof(T);
    constexpr bool ASYNC = BERTC_HAS_MMA16816 && VEC * sizeof(T) == 16;
    static_assert(BM % 16 == 0 && BN % 32 == 0 && K % VEC == 0 && BK % VEC == 0 && STAGES >= 2, "gemm geometry");
    static_assert(WK == 1 || (MMA ? (BK / 16) % WK == 0 : true), "k-groups share a k-tile's 16-deep steps");
    static_assert(!MMA || (S::MI >= 1 && S::NI % 2 == 0), "B fragments load two n8 tiles at a time");
    static_assert(MMA || S::TM >= 1, "SIMT layout");
#pragma unroll
    for (int i = 0; i < S::ACC; ++i) acc[i] = 0.0f;

    /* prologue: tiles kt0 .. kt0+stages-2 in flight (one commit group each,
     * empty ones included, so the wait below counts the same in every
     * iteration) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < stages - 1) {
            if (kt0 + s < kt1) {
                bertc_gemm_fill<T, BM, BK, BKP, K, XLD, VEC, ASYNC>(As + s * BM * BKP, x, m0, mvalid, (kt0 + s) * BK,
                                                                   tid);
                bertc_gemm_fill<T, BN, BK, BKP, K, K, VEC, ASYNC>(Bs + s * BN * BKP, w, n0, nvalid, (kt0 + s) * BK,
                                                                  tid);
            }
            bertc_cp_async_commit();
        }
    }

    int st = 0;              /* stage holding tile kt */
    int pf = stages - 1;     /* stage receiving tile kt + stages - 1 */
    for (int kt = kt0; kt < kt1; ++kt) {
        bertc_cp_async_wait_upto<STAGES - 1>(stages - 2); /* this thread's copies of tile kt landed */
        __syncthreads();                                  /* everyone's did; everyone finished tile kt - 1 */
        if (kt + stages - 1 < kt1) {
            const int k0 = (kt + stages - 1) * BK;
            bertc_gemm_fill<T, BM, BK, BKP, K, XLD, VEC, ASYNC>(As + pf * BM * BKP, x, m0, mvalid, k0, tid);
            bertc_gemm_fill<T, BN, BK, BKP, K, K, VEC, ASYNC>(Bs + pf * BN * BKP, w, n0, nvalid, k0, tid);
        }
        bertc_cp_async_commit();
        pf = pf + 1 == stages ? 0 : pf + 1;
        const T *A = As + st * BM * BKP;
        const T *B = Bs + st * BN * BKP;
        if constexpr (MMA) {
            constexpr int MI = S::MI, NI = S::NI, WTM = S::WTM, WTN = S::WTN;
            const int lane = tid & 31, warp = tid >> 5, wk = warp / (WM * S::WN), wmn = warp - wk * (WM * S::WN);
            const int wm = wmn / S::WN, wn = wmn - (wmn / S::WN) * S::WN;
#pragma unroll
            for (int kq = 0; kq < BK / 16 / WK; ++kq) {
                const int ks = kq * WK + wk; /* this k-group's steps of the tile */
                /* A fragment: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15), in
                 * a[0..3] order; B: two n8 tiles x (k 0-7 | 8-15) per load */
                unsigned a[MI][4], b[NI][2];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
                    bertc_ldmatrix_x4(a[mi], A + (wm * WTM + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * BKP +
                                                 ks * 16 + (lane >> 4) * 8);
#pragma unroll
                for (int ni = 0; ni < NI; ni += 2) {
                    unsigned q[4];
                    bertc_ldmatrix_x4(q, B + (wn * WTN + ni * 8 + (lane & 7) + (lane >> 4) * 8) * BKP + ks * 16 +
                                             ((lane >> 3) & 1) * 8);
                    b[ni][0] = q[0];
                    b[ni][1] = q[1];
                    b[ni + 1][0] = q[2];
                    b[ni + 1][1] = q[3];
                }
#pragma unroll
                for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
                    for (int ni = 0; ni < NI; ++ni) bertc_mma_k16<T>(acc + (mi * NI + ni) * 4, a[mi], b[ni]);
                }
            }
        } else {
            constexpr int TM = S::TM, TN = S::TN, TR = S::TR, TC = S::TC;
            const int tr = tid / TC, tc = tid - (tid / TC) * TC;
#pragma unroll 4
            for (int kk = 0; kk < BK; kk += 2) {
                /* one column of w at a time keeps TM + 1 pairs live, not TM + TN */
                float2 av[TM];
#pragma unroll
                for (int i = 0; i < TM; ++i) av[i] = bertc_load2(A + (tr + i * TR) * BKP + kk);
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    const float2 bv = bertc_load2(B + (tc + j * TC) * BKP + kk);
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        acc[i * TN + j] += av[i].x * bv.x;
                        acc[i * TN + j] += av[i].y * bv.y;
                    }
                }
            }
        }
        st = st + 1 == stages ? 0 : st + 1;
    }
}

template <typename T, int BUCKET, int N, int K, int XLD, int OLD, int RLD, bool BIAS, bool RES, int ACT, int BM,
          int BN, int VEC, int STAGES>
BERTC_INLINE void bertc_gemm(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x,
                             const T *__restrict__ w, const T *__restrict__ bias, const T *__restrict__ res) {
#ifdef BERTC_GEMM_FORCE_SIMT
    constexpr bool MMA = false;
#else
    constexpr bool MMA = BERTC_HAS_MMA16816 && sizeof(T) == 2;
#endif
    constexpr int BKP = 64 / (int)sizeof(T) + 16 / (int)sizeof(T);
    constexpr int KTILES = (K + 64 / (int)sizeof(T) - 1) / (64 / (int)sizeof(T));
    constexpr bool PAIR = N % 2 == 0 && OLD % 2 == 0 && (!RES || RLD % 2 == 0);
    typedef bertc_gemm_shape<BM, BN, 2, MMA> S;
    static_assert(BM % 32 == 0, "gemm geometry");

    BERTC_DYNAMIC_SMEM(unsigned char, smem);
    T *As = reinterpret_cast<T *>(smem); /* [STAGES][BM][BKP] */
    T *Bs = As + STAGES * BM * BKP;      /* [STAGES][BN][BKP] */

    const int len = bertc_req_len<BUCKET>(req);
    const int n0 = (int)blockIdx.x * BN, m0 = (int)blockIdx.y * BM;
    if (m0 >= len) return;
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    /* Before the wait only weights may be read: this block's rows of w go
     * on their way into L2 while the previous kernel finishes (sm_90). */
    for (int r = tid; r < BN && n0 + r < N; r += BERTC_GEMM_THREADS)
        bertc_prefetch_l2(w + (size_t)(n0 + r) * K, (unsigned)(K * sizeof(T)));
    bertc_grid_dependency_wait(); /* x and the residual come from earlier steps */
    const int wm = warp >> 1, wn = warp & 1, g = lane >> 2, t = lane & 3;
    const int tr = tid / S::TC, tc = tid - (tid / S::TC) * S::TC;

    float acc[S::ACC];
    bertc_gemm_mainloop<T, K, XLD, BM, BN, 2, VEC, STAGES, MMA>(acc, As, Bs, x, w, m0, len, n0, N, 0, KTILES, STAGES,
                                                               tid);
    if constexpr (!RES) bertc_trigger_dependents(); /* x is read; a residual is read by the stores */

    if constexpr (MMA) {
        constexpr int MI = S::MI, NI = S::NI, WTM = S::WTM, WTN = S::WTN;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
            for (int hf = 0; hf < 2; ++hf) {
                const int row = m0 + wm * WTM + mi * 16 + g + 8 * hf;
                if (row < len) {
#pragma unroll
                    for (int ni = 0; ni < NI; ++ni) {
                        const int col = n0 + wn * WTN + ni * 8 + 2 * t;
                        const float *v = acc + (mi * NI + ni) * 4 + 2 * hf;
                        bertc_gemm_store2<T, N, OLD, RLD, BIAS, RES, ACT, PAIR>(out, bias, res, row, col, v[0], v[1]);
                    }
                }
            }
        }
    } else {
        constexpr int TM = S::TM, TN = S::TN, TR = S::TR, TC = S::TC;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = m0 + tr + i * TR;
            if (row < len) {
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    bertc_gemm_store1<T, N, OLD, RLD, BIAS, RES, ACT>(out, bias, res, row, n0 + tc + j * TC,
                                                                     acc[i * TN + j]);
            }
        }
    }
}

#endif /* BERTC_GEMM_CUH */
