/*
 * attention.cuh — fused multi-head self-attention for one request:
 *   ctx[s, h] = softmax_k(scale * q_h[s] . k_h[k] + maskbias[k] [+ scorebias_h[s][k]]) . v_h
 *
 * Grid (heads, query tiles of QT rows), four warps per block, keys
 * streamed through shared memory in tiles with an online softmax (running
 * max and sum per row, accumulators rescaled when the max grows), so a
 * block's shared memory is fixed by (QT, key tile, head_dim) and never by
 * the bucket; the text does not depend on the bucket at all (the lengths
 * and the mask come from the request block), and one kernel serves every
 * bucket that picks the same query tile.  Exponentials are exp2 of
 * (score * scale * log2 e + bias) minus the running max, all in float.
 *
 * Tensor cores (16-bit storage, head_dim % 16 == 0, 16-byte aligned
 * slices).  The block's four warps are WQ query groups of 16 rows times
 * WK = 4 / WQ key slices: every 64-key tile is split between the WK warps
 * of a group (16, 32 or 64 keys each), so short buckets still give every
 * block four warps of work, and long ones (WQ = 4) re-read K and V for 64
 * query rows at once.  A query tile of 8 rows leaves half of each m16 tile
 * empty (zero rows of Q, never stored): it is chosen only where the blocks
 * matter more than the tensor cores (kernel_attention_qtile).  Q is staged
 * once by cp.async and taken into mma A fragments by ldmatrix; per key
 * tile, S = Q K^T by mma (K fragments by ldmatrix from a padded tile), the
 * softmax on the accumulator fragments (a row lives in the four lanes of a
 * quad), then P is repacked in registers as the A operand of O += P V (V
 * fragments by ldmatrix.trans).  K, V and the tile's mask bias go through
 * one or two cp.async stages.  At the end each warp leaves its running
 * max, sum and unnormalised O in shared memory and the block combines the
 * WK states of every row in a fixed order (warp 0 first), so the result
 * never depends on timing, and writes it with vector stores.  mma is
 * m16n8k16 from sm_80 and two m16n8k8 on sm_75 (float16; bfloat16 has no
 * sm_75 mma and takes the SIMT passes there).
 *
 * SIMT (float storage, other head sizes, bfloat16 on sm_75): four warps
 * over passes of PT rows (PT / 4 per warp).  Scores: lane j of a warp owns
 * key j of each 32-key chunk and computes the full dot product against
 * the warp's query rows (q read as a broadcast, K rows padded to an odd
 * number of 32-bit words so the 32 lanes hit 32 banks).  P . V: lanes own
 * pairs of output columns; when head_dim / 2 < 32 the warp splits into G
 * groups taking interleaved keys, summed by shuffles at the end.
 *
 * Masking follows Hugging Face exactly.  The mask becomes an additive bias
 * once per key and block, staged in shared memory beside the key tile with
 * 16-byte loads: 0 for a kept key, -FLT_MAX (HF adds torch.finfo(float32)
 * .min, which swamps any finite score, so every masked score is exactly
 * -FLT_MAX) for a masked one, -inf for a key >= len.  Keys >= len never
 * enter a sum: the SIMT loops stop at len, and in the tensor-core path
 * (16 keys at a time) their K and V rows are zero-filled in shared memory
 * — written zeros, not stale memory — so the score is 0 + -inf and the
 * probability exp2(-inf) = 0.  The running max starts at -FLT_MAX rather
 * than -inf and never becomes -inf, so a row with some visible key gives
 * masked keys exp2(-FLT_MAX - max) = 0, and a row whose keys are all
 * masked sees equal scores everywhere and averages V uniformly over all
 * k < len — what HF computes.  No inf - inf arises, hence no NaN from
 * masking; a warp whose slice held no key < len carries (max -FLT_MAX,
 * sum 0, O 0) into the combine, which weighs it 0 or 1 times 0.
 *
 * An optional additive score bias (MPNet's relative-position bias): one
 * [heads, BLD, BLD] table per plan, made for its longest bucket and shared
 * by every layer and bucket — the bias depends on key - query only, so a
 * bucket's [S, S] block is the table's top-left corner.  It is added to
 * the scaled score of every visible key (mask bias 0), as
 * bias[h][min(row, len - 1)][key] * log2 e; a masked key keeps exactly
 * -FLT_MAX (HF's finfo.min swamps the bias too) and a key >= len -inf, and
 * neither reads the table, so no read leaves its [len, len] corner.  BLD 0
 * means no bias: the pointer is never read.
 *
 * Dependencies: the request block (lengths, mask) is read before the
 * grid-dependency wait, Q, K and V after it; dependents are released once
 * the last key tile has landed.  The score bias is a weight: readable at
 * any time.
 *
 * Packed batches (a token bucket): a block is one query tile of one
 * sequence, found from the request block's seq_start[] before the wait
 * (bertc_attention_find_work); it runs the very code of a one-request
 * block on that sequence's rows, keys and mask, offset to its first row,
 * so no key of another sequence enters a sum.  The tile is the one the
 * sequence's length would take alone, because the tile decides how the
 * four warps split the keys and so the order of the sums: a sequence's
 * rows come out bit for bit as alone.  The kernel holds one instance of
 * the block per tile in use and switches on the work's tile.  The score
 * bias is indexed by places in the sequence, as alone (BLD covers the
 * longest length bucket, which bounds every sequence of a batch).
 */
#ifndef BERTC_ATTENTION_CUH
#define BERTC_ATTENTION_CUH

#define BERTC_NEG_INF __int_as_float((int)0xff800000u)
#define BERTC_LOG2E 1.4426950408889634f

/*
 * The score bias of (row, key) of head h's table `hb` in the log2 domain,
 * added to a score whose mask bias is `mb` only when the key is visible
 * (mb == 0: key < len, so the read stays inside the table).
 */
template <typename T, int BLD>
BERTC_INLINE float bertc_attention_score_bias(const T *__restrict__ hb, float mb, int row, int key, int len) {
    if constexpr (BLD == 0) {
        return 0.0f;
    } else {
        const int r = row < len ? row : len - 1;
        return mb == 0.0f ? bertc_to_float<T>(hb[(size_t)r * BLD + key]) * BERTC_LOG2E : 0.0f;
    }
}

/*
 * The additive mask bias of keys [k0, k0 + KT) into dst: 0 kept, -FLT_MAX
 * masked, -inf at or past len.  The mask is read 4 keys at a time with
 * one 16-byte load when `vec4` (the mask array is 16-byte aligned: an even
 * bucket) and the 4 keys are all below len; mask words past len are never
 * read.  NT threads share the work.
 */
template <int KT, int NT>
BERTC_INLINE void bertc_attention_bias(float *__restrict__ dst, const int *__restrict__ mask, bool vec4, int k0,
                                       int len, int tid) {
    for (int c = tid; c < KT / 4; c += NT) {
        const int k = k0 + 4 * c;
        int m[4];
        if (vec4 && k + 3 < len) {
            const int4 w = *reinterpret_cast<const int4 *>(mask + k);
            m[0] = w.x;
            m[1] = w.y;
            m[2] = w.z;
            m[3] = w.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) m[e] = k + e < len ? mask[k + e] : 0;
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) dst[4 * c + e] = k + e >= len ? BERTC_NEG_INF : (m[e] != 0 ? 0.0f : BERTC_FLT_LOWEST);
    }
}

/* The SIMT pass's shape: PT query rows over NW warps, KT-key tiles. */
template <typename T, int D, int NW, int PT, int KT> struct bertc_attention_simt_shape {
    static constexpr int R = PT / NW;                         /* query rows per warp */
    static constexpr int KW = D * (int)sizeof(T) / 4;         /* 32-bit words in a K row */
    static constexpr int KS = (KW | 1) * 4 / (int)sizeof(T);  /* padded K row, elements */
    static constexpr int NP = D / 2;                          /* output column pairs */
    static constexpr int LPG = NP >= 32 ? 32 : bertc_pow2_ceil(NP);  /* lanes per key group */
    static constexpr int G = 32 / LPG;                        /* key groups in P . V */
    static constexpr int PPL = (NP + LPG - 1) / LPG;          /* column pairs per lane */
    static constexpr int CH = KT / 32;                        /* 32-key chunks per tile */
    static_assert(PT % NW == 0 && KT % 32 == 0 && D % 2 == 0, "attention geometry");
};

/* Scores of the warp's rows (from row0) against the tile's keys (from
 * k0), in the log2 domain with the mask bias and head h's score bias hb:
 * lane j owns key j of each 32-key chunk (-FLT_MAX past the tile's kn
 * keys, never used). */
template <typename T, int D, int NW, int PT, int KT, int BLD, typename S = bertc_attention_simt_shape<T, D, NW, PT, KT>>
BERTC_INLINE void bertc_attention_simt_scores(const float *qw, const T *ks, const float *bs, const T *hb, int row0,
                                              int k0, int kn, int len, int lane, float (&sc)[S::R][S::CH]) {
#pragma unroll
    for (int ch = 0; ch < S::CH; ++ch) {
        const int j = ch * 32 + lane;
#pragma unroll
        for (int r = 0; r < S::R; ++r) sc[r][ch] = BERTC_FLT_LOWEST;
        if (j < kn) {
            float s[S::R];
#pragma unroll
            for (int r = 0; r < S::R; ++r) s[r] = 0.0f;
            const T *krow = ks + j * S::KS;
#pragma unroll 8
            for (int p = 0; p < S::NP; ++p) {
                const float2 kv = bertc_load2(krow + 2 * p);
#pragma unroll
                for (int r = 0; r < S::R; ++r) {
                    const float2 qv = *reinterpret_cast<const float2 *>(qw + r * D + 2 * p);
                    s[r] += qv.x * kv.x;
                    s[r] += qv.y * kv.y;
                }
            }
            const float b = bs[j];
#pragma unroll
            for (int r = 0; r < S::R; ++r)
                sc[r][ch] = s[r] + b + bertc_attention_score_bias<T, BLD>(hb, b, row0 + r, k0 + j, len);
        }
    }
}

/* The online softmax of one tile: new maxima, the state rescaled, and the
 * scores replaced by their probabilities (0 past kn). */
template <typename T, int D, int NW, int PT, int KT, typename S = bertc_attention_simt_shape<T, D, NW, PT, KT>>
BERTC_INLINE void bertc_attention_simt_softmax(float (&sc)[S::R][S::CH], float (&m)[S::R], float (&l)[S::R],
                                               float (&acc)[S::R][S::PPL][2], int kn, int lane) {
#pragma unroll
    for (int r = 0; r < S::R; ++r) {
        float mx = sc[r][0];
#pragma unroll
        for (int ch = 1; ch < S::CH; ++ch) mx = fmaxf(mx, sc[r][ch]);
        mx = bertc_warp_max(mx);
        const float mn = fmaxf(m[r], mx);
        const float corr = exp2f(m[r] - mn);
        m[r] = mn;
        l[r] *= corr;
#pragma unroll
        for (int pp = 0; pp < S::PPL; ++pp) {
            acc[r][pp][0] *= corr;
            acc[r][pp][1] *= corr;
        }
#pragma unroll
        for (int ch = 0; ch < S::CH; ++ch) {
            const float p = ch * 32 + lane < kn ? exp2f(sc[r][ch] - mn) : 0.0f;
            sc[r][ch] = p;
            l[r] += p;
        }
    }
}

/* acc += P V for the tile: lanes own column pairs; G key groups take
 * interleaved keys (summed at the store). */
template <typename T, int D, int NW, int PT, int KT, typename S = bertc_attention_simt_shape<T, D, NW, PT, KT>>
BERTC_INLINE void bertc_attention_simt_pv(const float (&sc)[S::R][S::CH], const T *vs, int kn, int lane,
                                          float (&acc)[S::R][S::PPL][2]) {
    const int g = lane / S::LPG, c = lane % S::LPG;
#pragma unroll
    for (int ch = 0; ch < S::CH; ++ch) {
        if (ch * 32 < kn) { /* uniform over the block: every lane shuffles */
#pragma unroll 4
            for (int i = 0; i < 32 / S::G; ++i) {
                const int kk = i * S::G + g;
                float p[S::R];
#pragma unroll
                for (int r = 0; r < S::R; ++r) p[r] = __shfl_sync(BERTC_FULL_MASK, sc[r][ch], kk);
                const int j = ch * 32 + kk;
                if (j < kn) {
                    const T *vrow = vs + j * D;
#pragma unroll
                    for (int pp = 0; pp < S::PPL; ++pp) {
                        const int col = pp * S::LPG + c;
                        if (S::PPL * S::LPG == S::NP || col < S::NP) {
                            const float2 v = bertc_load2a(vrow + 2 * col);
#pragma unroll
                            for (int r = 0; r < S::R; ++r) {
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

/*
 * SIMT pass over query rows [q0, q0 + PT) of head h with NW warps (PT / NW
 * rows per warp), keys streamed in tiles of KT.  `smem` holds Q [PT][D]
 * float, K [KT][KS], V [KT][D] and the bias [KT] float.  Every thread of
 * the block calls it with the same q0 (it synchronises).
 */
template <typename T, int D, int LD, int QO, int KO, int VO, int CLD, int NW, int PT, int KT, int VEC, int BLD>
BERTC_INLINE void bertc_attention_simt(T *__restrict__ ctx, const int *__restrict__ mask, bool vec4,
                                       const T *__restrict__ qkv, const T *__restrict__ hb, float scale_log2e,
                                       unsigned char *smem, int h, int q0, int len) {
    typedef bertc_attention_simt_shape<T, D, NW, PT, KT> S;
    constexpr int R = S::R, DV = D / VEC; /* vectors per row */
    static_assert(D % VEC == 0, "attention geometry");
    float *qs = reinterpret_cast<float *>(smem);              /* [PT][D] */
    T *ks = reinterpret_cast<T *>(smem + PT * D * 4);         /* [KT][KS] */
    T *vs = ks + KT * S::KS;                                  /* [KT][D] */
    float *bs = reinterpret_cast<float *>(vs + KT * D);       /* [KT] */
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;

    __syncthreads(); /* a previous pass may still read the buffers */
    for (int i = tid; i < PT * DV; i += NW * 32) {
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

    float m[R], l[R], acc[R][S::PPL][2];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m[r] = BERTC_FLT_LOWEST;
        l[r] = 0.0f;
#pragma unroll
        for (int pp = 0; pp < S::PPL; ++pp) acc[r][pp][0] = acc[r][pp][1] = 0.0f;
    }
    for (int k0 = 0; k0 < len; k0 += KT) {
        const int kn = min(KT, len - k0);
        __syncthreads(); /* Q staged / the previous tile consumed */
        for (int i = tid; i < kn * DV; i += NW * 32) {
            const int r = i / DV, cc = (i - r * DV) * VEC;
            const T *src = qkv + (size_t)(k0 + r) * LD + h * D + cc;
            bertc_copy_to_smem<T, VEC>(ks + r * S::KS + cc, src + KO);
            bertc_copy_to_smem<T, VEC>(vs + r * D + cc, src + VO);
        }
        bertc_attention_bias<KT, NW * 32>(bs, mask, vec4, k0, len, tid);
        __syncthreads();
        float sc[R][S::CH];
        bertc_attention_simt_scores<T, D, NW, PT, KT, BLD>(qs + warp * R * D, ks, bs, hb, q0 + warp * R, k0, kn, len,
                                                            lane, sc);
        bertc_attention_simt_softmax<T, D, NW, PT, KT>(sc, m, l, acc, kn, lane);
        bertc_attention_simt_pv<T, D, NW, PT, KT>(sc, vs, kn, lane, acc);
    }

    /* combine the key groups and the lanes' partial sums; store */
    const int g = lane / S::LPG, c = lane % S::LPG;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float inv = __fdividef(1.0f, bertc_warp_sum(l[r])); /* sum >= 1: in range */
#pragma unroll
        for (int pp = 0; pp < S::PPL; ++pp) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float a = acc[r][pp][e];
#pragma unroll
                for (int o = S::LPG; o < 32; o <<= 1) a += __shfl_xor_sync(BERTC_FULL_MASK, a, o);
                acc[r][pp][e] = a * inv;
            }
        }
        const int row = q0 + warp * R + r;
        if (row < len && g == 0) {
#pragma unroll
            for (int pp = 0; pp < S::PPL; ++pp) {
                const int col = pp * S::LPG + c;
                if (S::PPL * S::LPG == S::NP || col < S::NP)
                    bertc_store2<T>(ctx + (size_t)row * CLD + h * D + 2 * col, acc[r][pp][0], acc[r][pp][1]);
            }
        }
    }
}

/* The SIMT passes of a block of QT query rows from q0, PT rows at a time. */
template <typename T, int D, int LD, int QO, int KO, int VO, int CLD, int QT, int PT, int KT, int VEC, int BLD>
BERTC_INLINE void bertc_attention_simt_passes(T *__restrict__ ctx, const int *__restrict__ mask, bool vec4,
                                              const T *__restrict__ qkv, const T *__restrict__ hb, float scale_log2e,
                                              unsigned char *smem, int h, int q0, int len) {
#pragma unroll 1
    for (int qp = q0; qp < q0 + QT && qp < len; qp += PT)
        bertc_attention_simt<T, D, LD, QO, KO, VO, CLD, 4, PT, KT, VEC, BLD>(ctx, mask, vec4, qkv, hb, scale_log2e, smem,
                                                                            h, qp, len);
    bertc_trigger_dependents();
}

/*
 * K and V rows [k0, k0 + KT) of head h into one stage ([KT][D + 8] each),
 * rows at or past len zero-filled (cp.async's zero-fill on the GPU), and
 * the tile's mask bias [KT].
 */
template <typename T, int D, int LD, int KO, int VO, int KT>
BERTC_INLINE void bertc_attention_tc_fill(T *__restrict__ kdst, T *__restrict__ vdst, float *__restrict__ bdst,
                                          const T *__restrict__ qkv, const int *__restrict__ mask, bool vec4, int h,
                                          int k0, int len, int tid) {
    constexpr int DP = D + 8, CPR = D / 8; /* 16-byte chunks per row */
    for (int i = tid; i < KT * CPR; i += 128) {
        const int r = i / CPR, c = (i - r * CPR) * 8;
        const bool ok = k0 + r < len;
        const T *src = qkv + (ok ? (size_t)(k0 + r) * LD + h * D + c : (size_t)0);
        bertc_cp_async16(kdst + r * DP + c, src + (ok ? KO : 0), ok);
        bertc_cp_async16(vdst + r * DP + c, src + (ok ? VO : 0), ok);
    }
    bertc_attention_bias<KT, 128>(bdst, mask, vec4, k0, len, tid);
}

/*
 * One warp's key slice of a staged tile: S = Q K^T for its 16 rows (from
 * row0) and NT * 8 keys (from key0), the masked online-softmax update of
 * (m, l, o), O += P V.  hb: head h's score bias (BLD > 0).
 */
template <typename T, int D, int NT, int BLD>
BERTC_INLINE void bertc_attention_tc_slice(const unsigned (*qa)[4], const T *__restrict__ K, const T *__restrict__ V,
                                           const float *__restrict__ bias, const T *__restrict__ hb, int row0,
                                           int key0, int len, float scale_log2e, float (*o)[4], float *m, float *l) {
    constexpr int DP = D + 8, ND = D / 16, NO = D / 8;
    const int lane = (int)threadIdx.x & 31, t = lane & 3, r0 = row0 + (lane >> 2);
    float s[NT][4];
#pragma unroll
    for (int i = 0; i < NT; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
    /* K rows are the n index, d contiguous (ldmatrix, no transpose) */
#pragma unroll
    for (int kd = 0; kd < ND; ++kd) {
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            unsigned q[4];
            bertc_ldmatrix_x4(q, K + (nt * 8 + (lane & 7) + (lane >> 4) * 8) * DP + kd * 16 + ((lane >> 3) & 1) * 8);
            const unsigned b0[2] = {q[0], q[1]}, b1[2] = {q[2], q[3]};
            bertc_mma_k16<T>(s[nt], qa[kd], b0);
            bertc_mma_k16<T>(s[nt + 1], qa[kd], b1);
        }
    }

    /* scale and bias, new row maxima (a row's values sit in one quad) */
    float mx0 = m[0], mx1 = m[1];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int key = nt * 8 + 2 * t + e;
            const float b = bias[key];
            s[nt][e] = fmaf(s[nt][e], scale_log2e, b) + bertc_attention_score_bias<T, BLD>(hb, b, r0, key0 + key, len);
            s[nt][2 + e] =
                fmaf(s[nt][2 + e], scale_log2e, b) + bertc_attention_score_bias<T, BLD>(hb, b, r0 + 8, key0 + key, len);
            mx0 = fmaxf(mx0, s[nt][e]);
            mx1 = fmaxf(mx1, s[nt][2 + e]);
        }
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(BERTC_FULL_MASK, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(BERTC_FULL_MASK, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(BERTC_FULL_MASK, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(BERTC_FULL_MASK, mx1, 2));
    const float c0 = exp2f(m[0] - mx0), c1 = exp2f(m[1] - mx1);
    m[0] = mx0;
    m[1] = mx1;
    l[0] *= c0;
    l[1] *= c1;
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
            s[nt][e] = exp2f(s[nt][e] - mx0); /* -inf (a key >= len) gives 0 */
            s[nt][2 + e] = exp2f(s[nt][2 + e] - mx1);
            l[0] += s[nt][e];
            l[1] += s[nt][2 + e];
        }
    }

    /* O += P V: P's accumulator fragments are the A fragments of k16 steps
     * over the keys; V rows are k, so ldmatrix transposes */
#pragma unroll
    for (int kk = 0; kk < NT / 2; ++kk) {
        const unsigned pa[4] = {bertc_pack2<T>(s[2 * kk][0], s[2 * kk][1]), bertc_pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                                bertc_pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                bertc_pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int nd = 0; nd < NO; nd += 2) {
            unsigned q[4];
            bertc_ldmatrix_x4_trans(q, V + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * DP + nd * 8 +
                                           (lane >> 4) * 8);
            const unsigned b0[2] = {q[0], q[1]}, b1[2] = {q[2], q[3]};
            bertc_mma_k16<T>(o[nd], pa, b0);
            bertc_mma_k16<T>(o[nd + 1], pa, b1);
        }
    }
}

/*
 * The block's rows from the warps' states in shared memory: for each row
 * the WK warps of its group combine in a fixed order (max, then the
 * rescaled sums), and the normalised row is stored OV elements at a time.
 * so: [4][16][D] unnormalised O, sm / sl: [4][16] running max and sum.
 */
template <typename T, int D, int CLD, int QT, int WK, int OV>
BERTC_INLINE void bertc_attention_tc_store(T *__restrict__ ctx, const float *so, const float *sm, const float *sl,
                                           int h, int q0, int len, int tid) {
    constexpr int CV = D / OV;
    for (int i = tid; i < QT * CV; i += 128) {
        const int r = i / CV, c = (i - r * CV) * OV;
        if (q0 + r >= len) continue;
        const int w0 = (r / 16) * WK, rr = r % 16;
        float mx = sm[w0 * 16 + rr];
#pragma unroll
        for (int j = 1; j < WK; ++j) mx = fmaxf(mx, sm[(w0 + j) * 16 + rr]);
        float f[WK], sum = 0.0f;
#pragma unroll
        for (int j = 0; j < WK; ++j) {
            f[j] = exp2f(sm[(w0 + j) * 16 + rr] - mx);
            sum += sl[(w0 + j) * 16 + rr] * f[j];
        }
        const float inv = __fdividef(1.0f, sum); /* the max's own warp contributes >= 1 */
        float out[OV];
#pragma unroll
        for (int e = 0; e < OV; ++e) {
            float a = 0.0f;
#pragma unroll
            for (int j = 0; j < WK; ++j) a += so[((w0 + j) * 16 + rr) * D + c + e] * f[j];
            out[e] = a * inv;
        }
        bertc_store_vec<T, OV>(ctx + (size_t)(q0 + r) * CLD + h * D + c, out);
    }
}

/*
 * Tensor-core block: QT query rows from q0 of head h.  `smem`: Q [16 WQ][D
 * + 8], then per stage K and V [64][D + 8] and the bias [64] float; the
 * combine's states reuse the K/V tiles once the keys are done.
 */
template <typename T, int D, int LD, int QO, int KO, int VO, int CLD, int QT, int WQ, int STAGES, int OV, int BLD>
BERTC_INLINE void bertc_attention_tc(T *__restrict__ ctx, const int *__restrict__ mask, bool vec4,
                                     const T *__restrict__ qkv, const T *__restrict__ hb, float scale_log2e,
                                     unsigned char *smem, int h, int q0, int len) {
    constexpr int KT = 64, WK = 4 / WQ, KW = KT / WK; /* keys per warp per tile */
    constexpr int DP = D + 8, ND = D / 16, NO = D / 8, QR = 16 * WQ, CPR = D / 8;
    static_assert(D % 16 == 0 && WQ * WK == 4 && KW % 16 == 0 && (QT == 8 || QT == QR), "attention geometry");

    T *qs = reinterpret_cast<T *>(smem);                        /* [QR][DP] */
    T *ks = qs + QR * DP;                                       /* [STAGES][KT][DP] */
    T *vs = ks + STAGES * KT * DP;                              /* [STAGES][KT][DP] */
    float *bs = reinterpret_cast<float *>(vs + STAGES * KT * DP); /* [STAGES][KT] */
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wq = warp / WK, wk = warp % WK;

    /* Q rows past the tile or the length are zeros: never stored */
    for (int i = tid; i < QR * CPR; i += 128) {
        const int r = i / CPR, c = (i - r * CPR) * 8;
        const bool ok = r < QT && q0 + r < len;
        bertc_cp_async16(qs + r * DP + c, qkv + (ok ? (size_t)(q0 + r) * LD + QO + h * D + c : (size_t)0), ok);
    }
    const int ntiles = (len + KT - 1) / KT;
    bertc_attention_tc_fill<T, D, LD, KO, VO, KT>(ks, vs, bs, qkv, mask, vec4, h, 0, len, tid);
    bertc_cp_async_commit();

    unsigned qa[ND][4];
    float o[NO][4], m[2] = {BERTC_FLT_LOWEST, BERTC_FLT_LOWEST}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < NO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    for (int it = 0; it < ntiles; ++it) {
        const int st = STAGES == 2 ? it & 1 : 0;
        if (STAGES == 2 && it + 1 < ntiles) {
            /* the other stage was consumed in the previous iteration (barrier at its end) */
            bertc_attention_tc_fill<T, D, LD, KO, VO, KT>(ks + (st ^ 1) * KT * DP, vs + (st ^ 1) * KT * DP,
                                                          bs + (st ^ 1) * KT, qkv, mask, vec4, h, (it + 1) * KT, len,
                                                          tid);
            bertc_cp_async_commit();
            bertc_cp_async_wait<1>();
        } else {
            bertc_cp_async_wait<0>();
        }
        __syncthreads();
        if (it == 0) {
#pragma unroll
            for (int kd = 0; kd < ND; ++kd)
                bertc_ldmatrix_x4(qa[kd], qs + (wq * 16 + (lane & 15)) * DP + kd * 16 + (lane >> 4) * 8);
        }
        const int kb = st * KT + wk * KW;
        bertc_attention_tc_slice<T, D, KW / 8, BLD>(qa, ks + kb * DP, vs + kb * DP, bs + kb, hb, q0 + wq * 16,
                                                    it * KT + wk * KW, len, scale_log2e, o, m, l);
        __syncthreads(); /* the stage is refilled next */
        if (STAGES == 1 && it + 1 < ntiles) {
            bertc_attention_tc_fill<T, D, LD, KO, VO, KT>(ks, vs, bs, qkv, mask, vec4, h, (it + 1) * KT, len, tid);
            bertc_cp_async_commit();
        }
    }
    bertc_trigger_dependents(); /* every read of qkv has landed */

    /* each warp's state into shared memory (on the K/V tiles), then the rows */
    float *so = reinterpret_cast<float *>(ks), *sm = so + 4 * 16 * D, *sl = sm + 4 * 16;
    const int g = lane >> 2, t = lane & 3;
    l[0] += __shfl_xor_sync(BERTC_FULL_MASK, l[0], 1);
    l[0] += __shfl_xor_sync(BERTC_FULL_MASK, l[0], 2);
    l[1] += __shfl_xor_sync(BERTC_FULL_MASK, l[1], 1);
    l[1] += __shfl_xor_sync(BERTC_FULL_MASK, l[1], 2);
#pragma unroll
    for (int nd = 0; nd < NO; ++nd) {
        float *r0 = so + (warp * 16 + g) * D + nd * 8 + 2 * t, *r1 = r0 + 8 * D;
        r0[0] = o[nd][0];
        r0[1] = o[nd][1];
        r1[0] = o[nd][2];
        r1[1] = o[nd][3];
    }
    if (t == 0) {
        sm[warp * 16 + g] = m[0];
        sm[warp * 16 + g + 8] = m[1];
        sl[warp * 16 + g] = l[0];
        sl[warp * 16 + g + 8] = l[1];
    }
    __syncthreads();
    bertc_attention_tc_store<T, D, CLD, QT, WK, OV>(ctx, so, sm, sl, h, q0, len, tid);
}

/*
 * The rows [q0, q0 + QT) of head h of one sequence of len rows (ctx, qkv
 * and mask start at its first row): the tensor-core block where the
 * architecture has mma for T and TC, else SIMT passes.  Called after the
 * grid-dependency wait.
 */
template <typename T, int D, int LD, int QO, int KO, int VO, int CLD, bool TC, int QT, int WQ, int STAGES, int PT,
          int SKT, int VEC, int OV, int BLD>
BERTC_INLINE void bertc_attention_rows(T *__restrict__ ctx, const int *__restrict__ mask, bool vec4,
                                       const T *__restrict__ qkv, const T *__restrict__ hb, float scale_log2e,
                                       unsigned char *smem, int h, int q0, int len) {
    constexpr bool MMA = BERTC_HAS_MMA16816 || (BERTC_HAS_MMA1688_F16 && bertc_type<T>::IS_HALF);
    if constexpr (TC && MMA) {
        bertc_attention_tc<T, D, LD, QO, KO, VO, CLD, QT, WQ, STAGES, OV, BLD>(ctx, mask, vec4, qkv, hb, scale_log2e,
                                                                              smem, h, q0, len);
    } else {
        bertc_attention_simt_passes<T, D, LD, QO, KO, VO, CLD, QT, PT, SKT, VEC, BLD>(ctx, mask, vec4, qkv, hb,
                                                                                    scale_log2e, smem, h, q0, len);
    }
}

/* Entry for one request: block (h, query tile). */
template <typename T, int D, int LD, int QO, int KO, int VO, int CLD, bool TC, int QT, int WQ, int STAGES, int PT,
          int SKT, int VEC, int OV, int BLD>
BERTC_INLINE void bertc_attention(T *__restrict__ ctx, const int *__restrict__ req, const T *__restrict__ qkv,
                                  const T *__restrict__ bias, float scale_log2e) {
    BERTC_DYNAMIC_SMEM(unsigned char, smem);
    const bertc_req_lens rl = bertc_req_read(req);
    const int h = (int)blockIdx.x;
    const int q0 = (int)blockIdx.y * QT;
    if (q0 >= rl.len) return;
    const int *mask = req + BERTC_REQ_ATTENTION_MASK(rl.bucket);
    const bool vec4 = (rl.bucket & 1) == 0; /* the mask array starts 16-byte aligned */
    const T *hb = BLD ? bias + (size_t)h * BLD * BLD : bias;
    bertc_grid_dependency_wait();
    bertc_attention_rows<T, D, LD, QO, KO, VO, CLD, TC, QT, WQ, STAGES, PT, SKT, VEC, OV, BLD>(ctx, mask, vec4, qkv, hb,
                                                                                               scale_log2e, smem, h,
                                                                                               q0, rl.len);
}

/*
 * Packed batches.  A block's work is one query tile of one sequence: its
 * rows [start, start + len) of the batch, the tile's first row q0 (in the
 * sequence) and the tile size, which is the one the sequence's length
 * takes alone (the kernel's seq_qtile thresholds U0..U3: <= U0 rows take
 * tiles of 8, <= U1 of 16, <= U2 of 32, <= U3 of 64, longer ones TMAX,
 * the largest the kernel holds).  tile 0: the block has no work.
 */
struct bertc_attention_work {
    int start, len, q0, tile;
};

template <int U0, int U1, int U2, int U3, int TMAX> BERTC_INLINE int bertc_attention_seq_tile(int len) {
    return len <= U0 ? 8 : len <= U1 ? 16 : len <= U2 ? 32 : len <= U3 ? 64 : TMAX;
}

/*
 * Work item `item` of the batch: the sequences' tiles in order, found by
 * a block-wide prefix sum of the tile counts (128 sequences per round, a
 * warp scan by shuffles and the four warps' totals in shared memory).
 * Every thread of the block calls it; it reads only the request block.
 */
template <int U0, int U1, int U2, int U3, int TMAX>
BERTC_INLINE bertc_attention_work bertc_attention_find_work(const int *__restrict__ req, bertc_req_lens rl, int item) {
    __shared__ int found[4], wsum[4];
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int n = bertc_req_nseq(req);
    if (tid == 0) found[3] = 0;
    __syncthreads();
    for (int c0 = 0, base = 0; c0 < n && base <= item; c0 += 128) {
        const int i = c0 + tid;
        bertc_req_seq sq = {0, 0};
        int tile = 8, tiles = 0;
        if (i < n) {
            sq = bertc_req_seq_rows(req, rl, i);
            tile = bertc_attention_seq_tile<U0, U1, U2, U3, TMAX>(sq.len);
            tiles = (sq.len + tile - 1) / tile;
        }
        int x = tiles;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int y = __shfl_up_sync(BERTC_FULL_MASK, x, o);
            if (lane >= o) x += y;
        }
        if (lane == 31) wsum[warp] = x;
        __syncthreads();
        int before = base;
        for (int w = 0; w < warp; ++w) before += wsum[w];
        const int first = before + x - tiles;
        if (tiles > 0 && item >= first && item < first + tiles) {
            found[0] = sq.start;
            found[1] = sq.len;
            found[2] = (item - first) * tile;
            found[3] = tile;
        }
        base += wsum[0] + wsum[1] + wsum[2] + wsum[3];
        __syncthreads(); /* found is visible, wsum free for the next round */
    }
    bertc_attention_work w;
    w.start = found[0];
    w.len = found[1];
    w.q0 = found[2];
    w.tile = found[3];
    return w;
}

#endif /* BERTC_ATTENTION_CUH */
