/*
 * attention.cuh — fused multi-head self-attention for one request:
 *   ctx[s, h] = softmax_k(scale * q_h[s] . k_h[k] + maskbias[k]) . v_h
 *
 * Grid (heads, query tiles), keys streamed through shared memory in tiles
 * of KT with an online softmax (running max and sum per row, accumulators
 * rescaled when the max grows), so a block's shared memory is fixed by
 * (query tile, KT, head_dim) and never by the bucket: a 512-token bucket
 * with head_dim 128 fits in the 48 KiB every architecture grants without
 * an opt-in.  Exponentials are exp2 of (score * scale * log2 e) minus the
 * running max, all in float.
 *
 * Two paths.
 *
 * Tensor cores (16-bit storage, head_dim % 16 == 0, 16-byte aligned
 * slices; sm_80+ and the emulator): NW warps, 16 query rows each, Q held
 * in registers as mma A fragments for the whole kernel.  Per key tile,
 * S = Q K^T by mma.sync m16n8k16 (K fragments by ldmatrix from a padded
 * tile), the softmax on the accumulator fragments (a row lives in the four
 * lanes of a quad), then P is repacked in registers as the A operand of
 * O += P V (V fragments by ldmatrix.trans).  K and V tiles are
 * double-buffered with cp.async.  On sm_75 the same geometry runs the SIMT
 * path in four passes of four rows per warp.
 *
 * SIMT (float storage, other head sizes): four warps, QT / 4 query rows
 * per warp.  Scores: lane j of a warp owns key j of each 32-key chunk and
 * computes the full dot product against the warp's query rows (q read as
 * a broadcast, K rows padded to an odd number of 32-bit words so the 32
 * lanes hit 32 banks).  P . V: lanes own pairs of output columns; when
 * head_dim / 2 < 32 the warp splits into G groups taking interleaved keys,
 * summed by shuffles at the end.
 *
 * Masking follows Hugging Face exactly.  Keys k >= len never enter a sum:
 * the SIMT loops stop at len, and in the tensor-core path (which works 16
 * keys at a time) rows of K and V past len are zero-filled in shared
 * memory — written zeros, not stale memory — and their probabilities are
 * a selected 0, so no product ever touches unwritten memory.  A key with
 * attention_mask 0 gets the score -FLT_MAX (HF adds torch.finfo(float32)
 * .min, which swamps any finite score) and the running max starts at
 * -FLT_MAX rather than -inf: a row with some visible key gives masked keys
 * exp2(-FLT_MAX - max) = 0, and a row whose keys are all masked sees equal
 * scores everywhere and averages V uniformly over all k < len — what HF
 * computes.  No inf - inf arises, hence no NaN from masking.
 *
 * An optional additive score bias (MPNet's relative-position bias, one
 * [heads, BLD, BLD] table of the plan shared by every layer and bucket:
 * the bias depends on key - query only, so a bucket's [S, S] block is the
 * table's top-left corner) is added to the scaled score of every visible
 * key: score = scale * q.k + bias[h][q][k], in the log2 domain as
 * bias * log2 e.  BLD is the table's row length; 0 means no bias and the
 * pointer is not read.
 *
 * BERTC_ATTENTION_FORCE_SIMT selects the SIMT fallback of the tensor-core
 * geometry everywhere (the emulator checks the sm_75 path with it).
 */
#ifndef BERTC_ATTENTION_CUH
#define BERTC_ATTENTION_CUH

/*
 * SIMT pass over query rows [q0, q0 + QT) of head h with NW warps (QT / NW
 * rows per warp), keys streamed in tiles of KT.  `smem` holds Q [QT][D]
 * float, K [KT][KS] and V [KT][D].  Every thread of the block calls it
 * with the same q0 (it synchronises).
 */
#define BERTC_LOG2E 1.4426950408889634f

/* The bias of (row, key) in the log2 domain; rows past len read row len - 1. */
template <typename T, int BLD>
BERTC_INLINE float bertc_attention_bias(const T *__restrict__ bias, int h, int row, int key, int len) {
    if constexpr (BLD == 0) {
        return 0.0f;
    } else {
        const int r = row < len ? row : len - 1;
        return bertc_to_float<T>(bias[((size_t)h * BLD + r) * BLD + key]) * BERTC_LOG2E;
    }
}

template <typename T, int BUCKET, int D, int LD, int QO, int KO, int VO, int CLD, int NW, int QT, int KT, int VEC,
          int BLD>
BERTC_INLINE void bertc_attention_simt(T *__restrict__ ctx, const int *__restrict__ req, const T *__restrict__ qkv,
                                       const T *__restrict__ bias, float scale_log2e, unsigned char *smem, int h,
                                       int q0, int len) {
    constexpr int R = QT / NW;                         /* query rows per warp */
    constexpr int KW = D * (int)sizeof(T) / 4;         /* 32-bit words in a K row */
    constexpr int KS = (KW | 1) * 4 / (int)sizeof(T);  /* padded K row, elements */
    constexpr int NP = D / 2;                          /* output column pairs */
    constexpr int LPG = NP >= 32 ? 32 : bertc_pow2_ceil(NP);  /* lanes per key group */
    constexpr int G = 32 / LPG;                        /* key groups in P . V */
    constexpr int PPL = (NP + LPG - 1) / LPG;          /* column pairs per lane */
    constexpr int CH = KT / 32;                        /* 32-key chunks per tile */
    constexpr int DV = D / VEC;                        /* vectors per row */
    static_assert(QT % NW == 0 && KT % 32 == 0 && D % 2 == 0 && D % VEC == 0, "attention geometry");

    float *qs = reinterpret_cast<float *>(smem);              /* [QT][D] */
    T *ks = reinterpret_cast<T *>(smem + QT * D * 4);         /* [KT][KS] */
    T *vs = ks + KT * KS;                                     /* [KT][D] */
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int *mask = req + BERTC_REQ_ATTENTION_MASK(BUCKET);

    __syncthreads(); /* a previous pass may still read the buffers */
    for (int i = tid; i < QT * DV; i += NW * 32) {
        const int r = i / DV, c = (i - r * DV) * VEC;
        float f[VEC];
        if (q0 + r < len) {
            bertc_load_vec<T, VEC>(qkv + (size_t)(q0 + r) * LD + QO + h * D + c, f);
#pragma unroll
            for (int j = 0; j < VEC; ++j) f[j] *= scale_log2e;
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) f[j] = 0.0f;
        }
#pragma unroll
        for (int j = 0; j < VEC; ++j) qs[r * D + c + j] = f[j];
    }

    const int g = lane / LPG, c = lane % LPG;
    float m[R], l[R], acc[R][PPL][2];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m[r] = BERTC_FLT_LOWEST;
        l[r] = 0.0f;
#pragma unroll
        for (int pp = 0; pp < PPL; ++pp) acc[r][pp][0] = acc[r][pp][1] = 0.0f;
    }
    const float *qw = qs + warp * R * D;

    for (int k0 = 0; k0 < len; k0 += KT) {
        const int kn = min(KT, len - k0);
        __syncthreads(); /* Q staged / the previous tile consumed */
        for (int i = tid; i < kn * DV; i += NW * 32) {
            const int r = i / DV, cc = (i - r * DV) * VEC;
            const T *src = qkv + (size_t)(k0 + r) * LD + h * D + cc;
            bertc_copy_to_smem<T, VEC>(ks + r * KS + cc, src + KO);
            bertc_copy_to_smem<T, VEC>(vs + r * D + cc, src + VO);
        }
        __syncthreads();

        /* scores, in the log2 domain */
        float sc[R][CH];
#pragma unroll
        for (int ch = 0; ch < CH; ++ch) {
            const int j = ch * 32 + lane;
#pragma unroll
            for (int r = 0; r < R; ++r) sc[r][ch] = BERTC_FLT_LOWEST;
            if (j < kn) {
                float s[R];
#pragma unroll
                for (int r = 0; r < R; ++r) s[r] = 0.0f;
                const T *krow = ks + j * KS;
#pragma unroll 8
                for (int p = 0; p < NP; ++p) {
                    const float2 kv = bertc_load2(krow + 2 * p);
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        const float2 qv = *reinterpret_cast<const float2 *>(qw + r * D + 2 * p);
                        s[r] += qv.x * kv.x;
                        s[r] += qv.y * kv.y;
                    }
                }
                if (mask[k0 + j] != 0) {
#pragma unroll
                    for (int r = 0; r < R; ++r)
                        sc[r][ch] = s[r] + bertc_attention_bias<T, BLD>(bias, h, q0 + warp * R + r, k0 + j, len);
                }
            }
        }

        /* online softmax: new max, rescale, probabilities */
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float mx = sc[r][0];
#pragma unroll
            for (int ch = 1; ch < CH; ++ch) mx = fmaxf(mx, sc[r][ch]);
            mx = bertc_warp_max(mx);
            const float mn = fmaxf(m[r], mx);
            const float corr = exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= corr;
#pragma unroll
            for (int pp = 0; pp < PPL; ++pp) {
                acc[r][pp][0] *= corr;
                acc[r][pp][1] *= corr;
            }
#pragma unroll
            for (int ch = 0; ch < CH; ++ch) {
                const float p = ch * 32 + lane < kn ? exp2f(sc[r][ch] - mn) : 0.0f;
                sc[r][ch] = p;
                l[r] += p;
            }
        }

        /* P . V */
#pragma unroll
        for (int ch = 0; ch < CH; ++ch) {
            if (ch * 32 < kn) { /* uniform over the block: every lane shuffles */
#pragma unroll 4
                for (int i = 0; i < 32 / G; ++i) {
                    const int kk = i * G + g;
                    float p[R];
#pragma unroll
                    for (int r = 0; r < R; ++r) p[r] = __shfl_sync(BERTC_FULL_MASK, sc[r][ch], kk);
                    const int j = ch * 32 + kk;
                    if (j < kn) {
                        const T *vrow = vs + j * D;
#pragma unroll
                        for (int pp = 0; pp < PPL; ++pp) {
                            const int col = pp * LPG + c;
                            if (PPL * LPG == NP || col < NP) {
                                const float2 v = bertc_load2a(vrow + 2 * col);
#pragma unroll
                                for (int r = 0; r < R; ++r) {
                                    acc[r][pp][0] += p[r] * v.x;
                                    acc[r][pp][1] += p[r] * v.y;
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /* combine the key groups and the lanes' partial sums; store */
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float inv = __fdividef(1.0f, bertc_warp_sum(l[r])); /* sum >= 1: in range */
#pragma unroll
        for (int pp = 0; pp < PPL; ++pp) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float a = acc[r][pp][e];
#pragma unroll
                for (int o = LPG; o < 32; o <<= 1) a += __shfl_xor_sync(BERTC_FULL_MASK, a, o);
                acc[r][pp][e] = a * inv;
            }
        }
        const int row = q0 + warp * R + r;
        if (row < len && g == 0) {
#pragma unroll
            for (int pp = 0; pp < PPL; ++pp) {
                const int col = pp * LPG + c;
                if (PPL * LPG == NP || col < NP)
                    bertc_store2<T>(ctx + (size_t)row * CLD + h * D + 2 * col, acc[r][pp][0], acc[r][pp][1]);
            }
        }
    }
}

/* K and V rows [k0, k0 + KT) of head h into one stage ([KT][D + 8] each);
 * rows at or past len are zero-filled (cp.async's zero-fill on the GPU). */
template <typename T, int D, int LD, int KO, int VO, int NW, int KT>
BERTC_INLINE void bertc_attention_tc_fill(T *__restrict__ kdst, T *__restrict__ vdst, const T *__restrict__ qkv, int h,
                                          int k0, int len, int tid) {
    constexpr int DP = D + 8, CPR = D / 8; /* 16-byte chunks per row */
    for (int i = tid; i < KT * CPR; i += NW * 32) {
        const int r = i / CPR, c = (i - r * CPR) * 8;
        const bool ok = k0 + r < len;
        const T *src = qkv + (ok ? (size_t)(k0 + r) * LD + h * D + c : (size_t)0);
        bertc_cp_async16(kdst + r * DP + c, src + (ok ? KO : 0), ok);
        bertc_cp_async16(vdst + r * DP + c, src + (ok ? VO : 0), ok);
    }
}

/*
 * Tensor-core pass: NW warps, rows [q0 + 16 w, q0 + 16 w + 16) for warp w.
 * `smem` holds two stages of K and V tiles, [2][KT][D + 8] each (rows
 * padded by 16 bytes: the 8 rows of an ldmatrix hit distinct banks).
 */
template <typename T, int BUCKET, int D, int LD, int QO, int KO, int VO, int CLD, int NW, int KT, int BLD>
BERTC_INLINE void bertc_attention_tc(T *__restrict__ ctx, const int *__restrict__ req, const T *__restrict__ qkv,
                                     const T *__restrict__ bias, float scale_log2e, unsigned char *smem, int h,
                                     int q0, int len) {
    constexpr int DP = D + 8;          /* padded tile row, elements */
    constexpr int ND = D / 16;         /* k-steps of S = Q K^T */
    constexpr int NT = KT / 8;         /* n8 tiles of S */
    constexpr int NO = D / 8;          /* n8 tiles of O */
    static_assert(D % 16 == 0 && KT % 16 == 0, "tensor-core attention geometry");

    T *ks = reinterpret_cast<T *>(smem); /* [2][KT][DP] */
    T *vs = ks + 2 * KT * DP;            /* [2][KT][DP] */
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int *mask = req + BERTC_REQ_ATTENTION_MASK(BUCKET);

    /* Q as A fragments: rows r0 = q0 + 16w + g and r0 + 8 */
    const int r0 = q0 + warp * 16 + g, r1 = r0 + 8;
    unsigned qa[ND][4];
    {
        const T *p0 = qkv + (size_t)r0 * LD + QO + h * D + 2 * t;
        const T *p1 = qkv + (size_t)r1 * LD + QO + h * D + 2 * t;
#pragma unroll
        for (int kd = 0; kd < ND; ++kd) {
            qa[kd][0] = r0 < len ? *reinterpret_cast<const unsigned *>(p0 + kd * 16) : 0u;
            qa[kd][1] = r1 < len ? *reinterpret_cast<const unsigned *>(p1 + kd * 16) : 0u;
            qa[kd][2] = r0 < len ? *reinterpret_cast<const unsigned *>(p0 + kd * 16 + 8) : 0u;
            qa[kd][3] = r1 < len ? *reinterpret_cast<const unsigned *>(p1 + kd * 16 + 8) : 0u;
        }
    }

    float o[NO][4];
#pragma unroll
    for (int i = 0; i < NO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m0 = BERTC_FLT_LOWEST, m1 = BERTC_FLT_LOWEST, l0 = 0.0f, l1 = 0.0f;

    const int ntiles = (len + KT - 1) / KT;
    bertc_attention_tc_fill<T, D, LD, KO, VO, NW, KT>(ks, vs, qkv, h, 0, len, tid);
    bertc_cp_async_commit();

    for (int it = 0; it < ntiles; ++it) {
        const int k0 = it * KT, kn = min(KT, len - k0), st = it & 1;
        if (it + 1 < ntiles) {
            /* the other stage was consumed in the previous iteration (barrier at its end) */
            bertc_attention_tc_fill<T, D, LD, KO, VO, NW, KT>(ks + (st ^ 1) * KT * DP, vs + (st ^ 1) * KT * DP, qkv, h,
                                                              k0 + KT, len, tid);
            bertc_cp_async_commit();
            bertc_cp_async_wait<1>();
        } else {
            bertc_cp_async_wait<0>();
        }
        __syncthreads();
        const T *K = ks + st * KT * DP, *V = vs + st * KT * DP;

        /* S = Q K^T: K rows are the n index, d contiguous (ldmatrix, no transpose) */
        float s[NT][4];
#pragma unroll
        for (int i = 0; i < NT; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
        for (int kd = 0; kd < ND; ++kd) {
#pragma unroll
            for (int nt = 0; nt < NT; nt += 2) {
                unsigned q[4];
                bertc_ldmatrix_x4(q, K + (nt * 8 + (lane & 7) + (lane >> 4) * 8) * DP + kd * 16 + ((lane >> 3) & 1) * 8);
                const unsigned b0[2] = {q[0], q[1]}, b1[2] = {q[2], q[3]};
                bertc_mma_16816<T>(s[nt], qa[kd], b0);
                bertc_mma_16816<T>(s[nt + 1], qa[kd], b1);
            }
        }

        /* scale, mask, new row maxima (a row's 8 x 2 x 4 values sit in one quad) */
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int key = nt * 8 + 2 * t + e;
                const bool keep = key < kn && mask[k0 + key] != 0;
                s[nt][e] = keep ? s[nt][e] * scale_log2e + bertc_attention_bias<T, BLD>(bias, h, r0, k0 + key, len)
                                : BERTC_FLT_LOWEST;
                s[nt][2 + e] = keep ? s[nt][2 + e] * scale_log2e + bertc_attention_bias<T, BLD>(bias, h, r1, k0 + key, len)
                                    : BERTC_FLT_LOWEST;
                mx0 = fmaxf(mx0, s[nt][e]);
                mx1 = fmaxf(mx1, s[nt][2 + e]);
            }
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(BERTC_FULL_MASK, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(BERTC_FULL_MASK, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(BERTC_FULL_MASK, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(BERTC_FULL_MASK, mx1, 2));
        const float c0 = exp2f(m0 - mx0), c1 = exp2f(m1 - mx1);
        m0 = mx0;
        m1 = mx1;
        l0 *= c0;
        l1 *= c1;
#pragma unroll
        for (int i = 0; i < NO; ++i) {
            o[i][0] *= c0;
            o[i][1] *= c0;
            o[i][2] *= c1;
            o[i][3] *= c1;
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const bool in = nt * 8 + 2 * t + e < kn;
                s[nt][e] = in ? exp2f(s[nt][e] - m0) : 0.0f;
                s[nt][2 + e] = in ? exp2f(s[nt][2 + e] - m1) : 0.0f;
                l0 += s[nt][e];
                l1 += s[nt][2 + e];
            }
        }

        /* O += P V: P's accumulator fragments are the A fragments of k16
         * steps over the keys; V rows are k, so ldmatrix transposes */
#pragma unroll
        for (int kk = 0; kk < KT / 16; ++kk) {
            const unsigned pa[4] = {bertc_pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                                    bertc_pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                                    bertc_pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                    bertc_pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int nd = 0; nd < NO; nd += 2) {
                unsigned q[4];
                bertc_ldmatrix_x4_trans(q, V + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * DP + nd * 8 +
                                               (lane >> 4) * 8);
                const unsigned b0[2] = {q[0], q[1]}, b1[2] = {q[2], q[3]};
                bertc_mma_16816<T>(o[nd], pa, b0);
                bertc_mma_16816<T>(o[nd + 1], pa, b1);
            }
        }
        __syncthreads(); /* stage st is refilled in the next iteration */
    }

    l0 += __shfl_xor_sync(BERTC_FULL_MASK, l0, 1);
    l0 += __shfl_xor_sync(BERTC_FULL_MASK, l0, 2);
    l1 += __shfl_xor_sync(BERTC_FULL_MASK, l1, 1);
    l1 += __shfl_xor_sync(BERTC_FULL_MASK, l1, 2);
    const float inv0 = __fdividef(1.0f, l0), inv1 = __fdividef(1.0f, l1); /* sums >= 1 */
#pragma unroll
    for (int nd = 0; nd < NO; ++nd) {
        const int col = h * D + nd * 8 + 2 * t;
        if (r0 < len) bertc_store2<T>(ctx + (size_t)r0 * CLD + col, o[nd][0] * inv0, o[nd][1] * inv0);
        if (r1 < len) bertc_store2<T>(ctx + (size_t)r1 * CLD + col, o[nd][2] * inv1, o[nd][3] * inv1);
    }
}

/*
 * Entry: block (h, query tile).  TC: NW warps and 16 * NW rows per block
 * (tensor cores where available, else four SIMT passes); otherwise four
 * warps and QT rows, SIMT.
 */
template <typename T, int BUCKET, int D, int LD, int QO, int KO, int VO, int CLD, bool TC, int NW, int QT, int KT,
          int VEC, int BLD>
BERTC_INLINE void bertc_attention(T *__restrict__ ctx, const int *__restrict__ req, const T *__restrict__ qkv,
                                  const T *__restrict__ bias, float scale_log2e) {
    BERTC_DYNAMIC_SMEM(unsigned char, smem);
    const int len = bertc_req_len<BUCKET>(req);
    const int h = (int)blockIdx.x;
    const int q0 = (int)blockIdx.y * QT;
    if (q0 >= len) return;
    if constexpr (TC) {
        static_assert(QT == 16 * NW, "one 16-row mma tile per warp");
#if defined(BERTC_ATTENTION_FORCE_SIMT)
        constexpr bool MMA = false;
#else
        constexpr bool MMA = BERTC_HAS_MMA16816 != 0;
#endif
        if constexpr (MMA) {
            bertc_attention_tc<T, BUCKET, D, LD, QO, KO, VO, CLD, NW, KT, BLD>(ctx, req, qkv, bias, scale_log2e, smem,
                                                                              h, q0, len);
        } else {
#pragma unroll 1
            for (int pass = 0; pass < 4; ++pass) {
                const int qp = q0 + pass * 4 * NW;
                if (qp < len)
                    bertc_attention_simt<T, BUCKET, D, LD, QO, KO, VO, CLD, NW, 4 * NW, KT, VEC, BLD>(
                        ctx, req, qkv, bias, scale_log2e, smem, h, qp, len);
            }
        }
    } else {
        bertc_attention_simt<T, BUCKET, D, LD, QO, KO, VO, CLD, NW, QT, KT, VEC, BLD>(ctx, req, qkv, bias, scale_log2e,
                                                                                      smem, h, q0, len);
    }
}

#endif /* BERTC_ATTENTION_CUH */
