/*
 * attention.cuh — fused multi-head self-attention for one request:
 *   ctx[s, h] = softmax_k(scale * q_h[s] . k_h[k] + maskbias[k]) . v_h
 *
 * Grid (heads, query tiles of QT rows), four warps per block, QT / 4 query
 * rows per warp.  Keys are streamed through shared memory in tiles of KT
 * with an online softmax (running max and sum per row, accumulators
 * rescaled when the max grows), so the shared memory a block needs is
 * fixed by (QT, KT, head_dim) and not by the bucket: a 512-token bucket
 * with head_dim 128 runs on every architecture within the 48 KiB that
 * needs no opt-in, and the runtime never has to raise a kernel's limit.
 * Q of the tile is staged once in float, pre-multiplied by
 * scale * log2(e) so the exponentials are exp2 of a difference.
 *
 * Scores: lane j of a warp owns key j of each 32-key chunk and computes
 * the full dot product against the warp's query rows (q read as broadcast,
 * K rows padded to an odd number of 32-bit words so the 32 lanes hit 32
 * different banks).  P . V: lanes own pairs of output columns; when
 * head_dim / 2 < 32 the warp splits into G groups that take interleaved
 * keys, summed by shuffles at the end; each key's probability reaches the
 * lanes by a shuffle from the lane that computed it.
 *
 * Masking follows Hugging Face exactly.  Keys k >= len are never loaded
 * and never visited: the loop bound excludes them, and a probability that
 * reaches them is a selected 0, not a product with shared memory that was
 * never written.  A key with attention_mask 0 gets the score -FLT_MAX
 * (HF adds torch.finfo(float32).min, which swamps any finite score), and
 * the running max starts at -FLT_MAX instead of -inf: so a row with some
 * visible key gives masked keys exp2(-FLT_MAX - max) = 0, and a row whose
 * keys are all masked sees equal scores everywhere and averages V
 * uniformly over all k < len, which is what HF computes.  No inf - inf can
 * arise, hence no NaN from masking.
 */
#ifndef BERTC_ATTENTION_CUH
#define BERTC_ATTENTION_CUH

template <typename T, int BUCKET, int D, int LD, int QO, int KO, int VO, int CLD, int QT, int KT, int VEC>
BERTC_INLINE void bertc_attention(T *__restrict__ ctx, const int *__restrict__ req, const T *__restrict__ qkv,
                                  float scale_log2e) {
    constexpr int NW = 4;                              /* warps per block */
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

    BERTC_DYNAMIC_SMEM(unsigned char, smem);
    float *qs = reinterpret_cast<float *>(smem);              /* [QT][D] */
    T *ks = reinterpret_cast<T *>(smem + QT * D * 4);         /* [KT][KS] */
    T *vs = ks + KT * KS;                                     /* [KT][D] */

    const int len = bertc_req_len<BUCKET>(req);
    const int h = (int)blockIdx.x;
    const int q0 = (int)blockIdx.y * QT;
    if (q0 >= len) return;
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int *mask = req + BERTC_REQ_ATTENTION_MASK(BUCKET);

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
                    for (int r = 0; r < R; ++r) sc[r][ch] = s[r];
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

#endif /* BERTC_ATTENTION_CUH */
