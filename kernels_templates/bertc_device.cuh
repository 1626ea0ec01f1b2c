/*
 * bertc_device.cuh — the device helpers every generated kernel is built on.
 *
 * One text, two compilers.  Each generated kernel is compiled by NVRTC for
 * every GPU architecture and by g++ for the emulated device (BERTC_EMU
 * defined, runtime/emu/cuda_prelude.h force-included).  So nothing here or
 * in the templates may need more than both sides offer: no <math.h> (the
 * float-min constant is spelt through __int_as_float), no identifier that
 * the prelude maps by macro (exp, log, round, abs, fma, ...), no inline
 * assembly in a kernel body.  The few instructions C++ cannot say (mma.sync,
 * cp.async) live in named helpers below, each with a GPU body (one asm
 * statement), an emulator body (BERTC_EMU) and a portable body for the
 * GPUs that lack the instruction (compiled there, never called: the paths
 * that use them need BERTC_HAS_MMA16816).  The emulator body rebuilds the
 * tensor-core fragments from one warp exchange (every lane's registers, or
 * row addresses, gathered to every lane with bertc_emu_warp_allgather), so
 * the very indexing the GPU path relies on is what the emulator checks, at
 * the cost of one exchange per instruction; the portable body does the same
 * with warp shuffles, one exchange per register.
 *
 * Values travel as float.  Storage is float, __half or __nv_bfloat16
 * (`T` everywhere); loads widen to float, stores round once
 * (round-to-nearest-even), and every sum is a float sum.  Vector loads move
 * up to 16 bytes as raw 32-bit words and unpack them here, which gives
 * single 128-bit memory instructions on the GPU whatever T is; the lower
 * indexed 16-bit element is the low half of a word on both devices.
 * Callers choose the vector width at generation time from the sizes and
 * leading dimensions, and every base pointer handed to a kernel must be
 * 16-byte aligned (the runtime's arena and the plan's weight blob are).
 *
 * The guard makes the header safe to repeat: a plan's kernels are
 * concatenated into one NVRTC program per architecture, and each kernel's
 * text carries the header.
 */
#ifndef BERTC_DEVICE_CUH
#define BERTC_DEVICE_CUH

#include <cuda_fp16.h>
#include <cuda_bf16.h>

/* The emulator defines both to hook kernels and shared memory; on the GPU
 * an export is nothing and dynamic shared memory is the usual extern array. */
#ifndef BERTC_KERNEL_EXPORT
#define BERTC_KERNEL_EXPORT(entry)
#endif
#ifndef BERTC_DYNAMIC_SMEM
#define BERTC_DYNAMIC_SMEM(T, name) extern __shared__ __align__(16) T name[]
#endif

#define BERTC_INLINE __device__ __forceinline__
#define BERTC_FULL_MASK 0xffffffffu
/* -FLT_MAX: what Hugging Face adds to a masked score (torch.finfo(float32).min). */
#define BERTC_FLT_LOWEST __int_as_float((int)0xff7fffffu)

/* Tensor cores (mma.sync m16n8k16, cp.async) from sm_80; the emulator runs
 * the same path through the portable helpers. */
#if defined(BERTC_EMU) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
#define BERTC_HAS_MMA16816 1
#else
#define BERTC_HAS_MMA16816 0
#endif
/* mma.sync m16n8k8 and ldmatrix exist from sm_75 (Turing): fp16 only there,
 * bf16 mma needs sm_80. */
#if defined(BERTC_EMU) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750)
#define BERTC_HAS_MMA1688 1
#else
#define BERTC_HAS_MMA1688 0
#endif

/* ------------------------------------------------------------ scalar conversions */

template <typename T> struct bertc_type;

template <> struct bertc_type<float> {
    static constexpr bool IS_HALF = false;
    static BERTC_INLINE float to_float(float v) { return v; }
    static BERTC_INLINE float from_float(float v) { return v; }
};

template <> struct bertc_type<__half> {
    static constexpr bool IS_HALF = true;
    static BERTC_INLINE float to_float(__half v) { return __half2float(v); }
    static BERTC_INLINE __half from_float(float v) { return __float2half_rn(v); }
    static BERTC_INLINE float bits_to_float(unsigned b) {
        return __half2float(__ushort_as_half((unsigned short)(b & 0xffffu)));
    }
    static BERTC_INLINE unsigned float_to_bits(float v) {
        return (unsigned)__half_as_ushort(__float2half_rn(v));
    }
};

template <> struct bertc_type<__nv_bfloat16> {
    static constexpr bool IS_HALF = false;
    static BERTC_INLINE float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
    static BERTC_INLINE __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
    static BERTC_INLINE float bits_to_float(unsigned b) { return __uint_as_float((b & 0xffffu) << 16); }
    static BERTC_INLINE unsigned float_to_bits(float v) {
        return (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v));
    }
};

template <typename T> BERTC_INLINE float bertc_to_float(T v) { return bertc_type<T>::to_float(v); }
template <typename T> BERTC_INLINE T bertc_from_float(float v) { return bertc_type<T>::from_float(v); }

/* ------------------------------------------------------------ words <-> floats */

/* Element i of N elements of T packed little-endian into 32-bit words. */
template <typename T, int N> BERTC_INLINE void bertc_words_to_float(const unsigned *w, float *out) {
    if constexpr (sizeof(T) == 4) {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = __uint_as_float(w[i]);
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = bertc_type<T>::bits_to_float(w[i / 2] >> (16 * (i & 1)));
    }
}

template <typename T, int N> BERTC_INLINE void bertc_float_to_words(const float *in, unsigned *w) {
    if constexpr (sizeof(T) == 4) {
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __float_as_uint(in[i]);
    } else {
#pragma unroll
        for (int i = 0; i < N / 2; ++i)
            w[i] = bertc_type<T>::float_to_bits(in[2 * i]) | (bertc_type<T>::float_to_bits(in[2 * i + 1]) << 16);
    }
}

/* ------------------------------------------------------------ vector loads and stores */

/*
 * N elements of T at p (aligned to N * sizeof(T) when that is 4, 8 or 16
 * bytes) widened to float.  Any other width goes element by element.
 */
template <typename T, int N> BERTC_INLINE void bertc_load_vec(const T *p, float *out) {
    constexpr int B = N * (int)sizeof(T);
    if constexpr (B == 16) {
        const uint4 r = *reinterpret_cast<const uint4 *>(p);
        const unsigned w[4] = {r.x, r.y, r.z, r.w};
        bertc_words_to_float<T, N>(w, out);
    } else if constexpr (B == 8) {
        const uint2 r = *reinterpret_cast<const uint2 *>(p);
        const unsigned w[2] = {r.x, r.y};
        bertc_words_to_float<T, N>(w, out);
    } else if constexpr (B == 4) {
        const unsigned w[1] = {*reinterpret_cast<const unsigned *>(p)};
        bertc_words_to_float<T, N>(w, out);
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = bertc_to_float(p[i]);
    }
}

/* The store twin of bertc_load_vec: rounds each value once to T. */
template <typename T, int N> BERTC_INLINE void bertc_store_vec(T *p, const float *in) {
    constexpr int B = N * (int)sizeof(T);
    if constexpr (B == 16) {
        unsigned w[4];
        bertc_float_to_words<T, N>(in, w);
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (B == 8) {
        unsigned w[2];
        bertc_float_to_words<T, N>(in, w);
        *reinterpret_cast<uint2 *>(p) = make_uint2(w[0], w[1]);
    } else if constexpr (B == 4) {
        unsigned w[1];
        bertc_float_to_words<T, N>(in, w);
        *reinterpret_cast<unsigned *>(p) = w[0];
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) p[i] = bertc_from_float<T>(in[i]);
    }
}

/*
 * Copies N elements from global to shared memory without widening.  The
 * global side is read as one vector; the shared side is written in 32-bit
 * words (or elements, below 4 bytes), so a destination row may be padded
 * to an odd number of words to keep lanes off each other's banks.
 */
template <typename T, int N> BERTC_INLINE void bertc_copy_to_smem(T *dst, const T *src) {
    constexpr int B = N * (int)sizeof(T);
    if constexpr (B == 16) {
        const uint4 r = *reinterpret_cast<const uint4 *>(src);
        unsigned *d = reinterpret_cast<unsigned *>(dst);
        d[0] = r.x;
        d[1] = r.y;
        d[2] = r.z;
        d[3] = r.w;
    } else if constexpr (B == 8) {
        const uint2 r = *reinterpret_cast<const uint2 *>(src);
        unsigned *d = reinterpret_cast<unsigned *>(dst);
        d[0] = r.x;
        d[1] = r.y;
    } else if constexpr (B == 4) {
        *reinterpret_cast<unsigned *>(dst) = *reinterpret_cast<const unsigned *>(src);
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) dst[i] = src[i];
    }
}

/* Two adjacent elements as float2: one 32-bit load for 16-bit types, two
 * scalar loads for float (p need only be element-aligned then). */
template <typename T> BERTC_INLINE float2 bertc_load2(const T *p) {
    if constexpr (sizeof(T) == 4) {
        return make_float2(bertc_to_float(p[0]), bertc_to_float(p[1]));
    } else {
        const unsigned w = *reinterpret_cast<const unsigned *>(p);
        return make_float2(bertc_type<T>::bits_to_float(w), bertc_type<T>::bits_to_float(w >> 16));
    }
}

/* The same from a pointer aligned to 2 * sizeof(T): one 64-bit load for float. */
template <typename T> BERTC_INLINE float2 bertc_load2a(const T *p) {
    if constexpr (sizeof(T) == 4) {
        return *reinterpret_cast<const float2 *>(p);
    } else {
        return bertc_load2(p);
    }
}

/* Two floats rounded to 16-bit T and packed into one word (low = a). */
template <typename T> BERTC_INLINE unsigned bertc_pack2(float a, float b) {
    return bertc_type<T>::float_to_bits(a) | (bertc_type<T>::float_to_bits(b) << 16);
}

/* Two adjacent elements stored from floats; p aligned to 2 * sizeof(T). */
template <typename T> BERTC_INLINE void bertc_store2(T *p, float a, float b) {
    if constexpr (sizeof(T) == 4) {
        *reinterpret_cast<float2 *>(p) = make_float2(a, b);
    } else {
        *reinterpret_cast<unsigned *>(p) = bertc_type<T>::float_to_bits(a) | (bertc_type<T>::float_to_bits(b) << 16);
    }
}

/* Smallest power of two >= n (compile-time geometry). */
__host__ __device__ constexpr int bertc_pow2_ceil(int n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

/* ------------------------------------------------------------ reductions */

/* Butterfly sums: every lane ends with the full warp's value. */
BERTC_INLINE float bertc_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(BERTC_FULL_MASK, v, o);
    return v;
}

BERTC_INLINE float bertc_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(BERTC_FULL_MASK, v, o));
    return v;
}

/*
 * Sum over a block of NWARPS full warps; every thread gets the result.
 * `scratch` is NWARPS floats of shared memory; the leading barrier lets a
 * caller reduce twice in a row with the same scratch.
 */
template <int NWARPS> BERTC_INLINE float bertc_block_sum(float v, float *scratch) {
    v = bertc_warp_sum(v);
    if constexpr (NWARPS == 1) {
        return v;
    } else {
        const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
        __syncthreads();
        if (lane == 0) scratch[warp] = v;
        __syncthreads();
        float t = lane < NWARPS ? scratch[lane] : 0.0f;
        return bertc_warp_sum(t);
    }
}

/* ------------------------------------------------------------ request block */

/* Layout of compiler/kernels.h: int32 len, 3 reserved words, then
 * input_ids[bucket], token_type_ids[bucket], attention_mask[bucket]. */
#define BERTC_REQ_HEADER_WORDS 4
#define BERTC_REQ_INPUT_IDS(bucket) (BERTC_REQ_HEADER_WORDS)
#define BERTC_REQ_TOKEN_TYPES(bucket) (BERTC_REQ_HEADER_WORDS + (bucket))
#define BERTC_REQ_ATTENTION_MASK(bucket) (BERTC_REQ_HEADER_WORDS + 2 * (bucket))

/* Real sequence length, clamped to the bucket (the runtime guarantees
 * 1 <= len <= bucket; the clamp keeps a bad request inside the buffers). */
template <int BUCKET> BERTC_INLINE int bertc_req_len(const int *req) {
    const int len = req[0];
    return len < 0 ? 0 : (len > BUCKET ? BUCKET : len);
}

/* ------------------------------------------------------------ tensor cores */

/*
 * D += A * B for one m16n8k16 tile with float accumulators; A and B hold
 * 16-bit T (__half or __nv_bfloat16) packed two per register, in the PTX
 * ISA's fragment layout (g = lane / 4, t = lane % 4):
 *   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..]   a[2] = A[g][2t+8..]   a[3] = A[g+8][2t+8..]
 *   b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
 *   d[0..1] = D[g][2t..2t+1] d[2..3] = D[g+8][2t..2t+1]
 * The emulator body widens each lane's fragment registers to float and
 * gathers them in one warp exchange, picks the rows of A and the columns of
 * B it needs from the owning lanes and sums in float; the portable body fetches the same words
 * with 64-bit shuffles.  All 32 lanes must call it together.
 */
/*
 * The arithmetic of both non-asm mma bodies below: D[r][c] += the k-ordered
 * float sum of A row r times B column c.  One function, so the emulator and
 * the sm_75 shuffle path cannot drift into different summation orders.
 */
BERTC_INLINE void bertc_mma_rows_cols(float *d, const float (*arow)[16], const float (*bcol)[16]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < 16; ++k) s += arow[r][k] * bcol[c][k];
            d[2 * r + c] += s;
        }
    }
}

template <typename T>
BERTC_INLINE void bertc_mma_16816(float *d, const unsigned *a, const unsigned *b) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (bertc_type<T>::IS_HALF) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
#elif defined(BERTC_EMU)
    const int lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    /* One exchange gives every lane all 32 fragments, widened to float by
     * their owners (each element once, not once per reader): per lane
     * a[0..3] then b[0..1], low half first.  Row g of A is spread over lanes
     * 4g..4g+3 (a[0], a[2]), row g+8 over the same lanes (a[1], a[3]),
     * column n of B over lanes 4n..4n+3. */
    float mine[12];
#pragma unroll
    for (int i = 0; i < 6; ++i) {
        const unsigned w = i < 4 ? a[i] : b[i - 4];
        mine[2 * i] = bertc_type<T>::bits_to_float(w);
        mine[2 * i + 1] = bertc_type<T>::bits_to_float(w >> 16);
    }
    float all[32][12];
    bertc_emu_warp_allgather(BERTC_FULL_MASK, mine, all, (unsigned)sizeof mine);
    float arow[2][16], bcol[2][16];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const float *la = all[4 * g + s], *l0 = all[4 * (2 * t) + s], *l1 = all[4 * (2 * t + 1) + s];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            /* register a[2*half] (a[2*half+1], b[half]) holds k = 2s + 8*half and the next */
            const int k = 2 * s + 8 * half;
            arow[0][k] = la[4 * half];
            arow[0][k + 1] = la[4 * half + 1];
            arow[1][k] = la[4 * half + 2];
            arow[1][k + 1] = la[4 * half + 3];
            bcol[0][k] = l0[8 + 2 * half];
            bcol[0][k + 1] = l0[8 + 2 * half + 1];
            bcol[1][k] = l1[8 + 2 * half];
            bcol[1][k + 1] = l1[8 + 2 * half + 1];
        }
    }
    bertc_mma_rows_cols(d, arow, bcol);
#else
    const int lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    /* Row g of A is spread over lanes 4g..4g+3 (a[0], a[2]); row g+8 over
     * the same lanes (a[1], a[3]).  Column n of B over lanes 4n..4n+3. */
    const unsigned long long a02 = (unsigned long long)a[0] | ((unsigned long long)a[2] << 32);
    const unsigned long long a13 = (unsigned long long)a[1] | ((unsigned long long)a[3] << 32);
    const unsigned long long b01 = (unsigned long long)b[0] | ((unsigned long long)b[1] << 32);
    float arow[2][16], bcol[2][16];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const unsigned long long lo = __shfl_sync(BERTC_FULL_MASK, a02, 4 * g + s);
        const unsigned long long hi = __shfl_sync(BERTC_FULL_MASK, a13, 4 * g + s);
        const unsigned long long c0 = __shfl_sync(BERTC_FULL_MASK, b01, 4 * (2 * t) + s);
        const unsigned long long c1 = __shfl_sync(BERTC_FULL_MASK, b01, 4 * (2 * t + 1) + s);
        const unsigned wl[2] = {(unsigned)lo, (unsigned)(lo >> 32)};
        const unsigned wh[2] = {(unsigned)hi, (unsigned)(hi >> 32)};
        const unsigned w0[2] = {(unsigned)c0, (unsigned)(c0 >> 32)};
        const unsigned w1[2] = {(unsigned)c1, (unsigned)(c1 >> 32)};
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            /* word `half` holds k = 2s + 8*half and 2s + 8*half + 1 */
            const int k = 2 * s + 8 * half;
            arow[0][k] = bertc_type<T>::bits_to_float(wl[half]);
            arow[0][k + 1] = bertc_type<T>::bits_to_float(wl[half] >> 16);
            arow[1][k] = bertc_type<T>::bits_to_float(wh[half]);
            arow[1][k + 1] = bertc_type<T>::bits_to_float(wh[half] >> 16);
            bcol[0][k] = bertc_type<T>::bits_to_float(w0[half]);
            bcol[0][k + 1] = bertc_type<T>::bits_to_float(w0[half] >> 16);
            bcol[1][k] = bertc_type<T>::bits_to_float(w1[half]);
            bcol[1][k + 1] = bertc_type<T>::bits_to_float(w1[half] >> 16);
        }
    }
    bertc_mma_rows_cols(d, arow, bcol);
#endif
}

/* mma m16n8k8 */
/*
 * D += A * B for one m16n8k8 tile (Turing's tensor-core shape) with float
 * accumulators; A 16x8 row-major and B 8x8 column-major, 16-bit T packed
 * two per register, in the PTX ISA's fragment layout (g = lane / 4,
 * t = lane % 4):
 *   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]    b[0] = B[2t..2t+1][g]
 *   c[0..1] = D[g][2t..2t+1] c[2..3] = D[g+8][2t..2t+1]
 * So the k16 fragments of bertc_mma_16816 are two of these: {a[0], a[1]}
 * with b[0] (k 0-7), then {a[2], a[3]} with b[1] (k 8-15).  The GPU body
 * needs sm_75 for __half and sm_80 for bf16 (Turing has no bf16 mma); the
 * emulator body gathers the fragments in one warp exchange like
 * bertc_mma_16816's, the portable body with shuffles.  All 32 lanes call it.
 */
/* The emulator's and the portable arithmetic of bertc_mma_1688: the same
 * fragments gathered (one warp exchange, or shuffles), k summed in order. */
template <typename T>
BERTC_INLINE void bertc_mma_1688_exchange(float c[4], const unsigned a[2], const unsigned b[1]) {
    const int lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    float arow[2][8], bcol[2][8];
#if defined(BERTC_EMU)
    /* per lane: a[0], a[1], b[0], low half first */
    float mine[6];
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const unsigned w = i < 2 ? a[i] : b[0];
        mine[2 * i] = bertc_type<T>::bits_to_float(w);
        mine[2 * i + 1] = bertc_type<T>::bits_to_float(w >> 16);
    }
    float all[32][6];
    bertc_emu_warp_allgather(BERTC_FULL_MASK, mine, all, (unsigned)sizeof mine);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const float *la = all[4 * g + s], *l0 = all[4 * (2 * t) + s], *l1 = all[4 * (2 * t + 1) + s];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            arow[0][2 * s + e] = la[e];
            arow[1][2 * s + e] = la[2 + e];
            bcol[0][2 * s + e] = l0[4 + e];
            bcol[1][2 * s + e] = l1[4 + e];
        }
    }
#else
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const unsigned lo = __shfl_sync(BERTC_FULL_MASK, a[0], 4 * g + s);
        const unsigned hi = __shfl_sync(BERTC_FULL_MASK, a[1], 4 * g + s);
        const unsigned c0 = __shfl_sync(BERTC_FULL_MASK, b[0], 4 * (2 * t) + s);
        const unsigned c1 = __shfl_sync(BERTC_FULL_MASK, b[0], 4 * (2 * t + 1) + s);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            arow[0][2 * s + e] = bertc_type<T>::bits_to_float(lo >> (16 * e));
            arow[1][2 * s + e] = bertc_type<T>::bits_to_float(hi >> (16 * e));
            bcol[0][2 * s + e] = bertc_type<T>::bits_to_float(c0 >> (16 * e));
            bcol[1][2 * s + e] = bertc_type<T>::bits_to_float(c1 >> (16 * e));
        }
    }
#endif
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int cc = 0; cc < 2; ++cc) {
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; ++k) sum += arow[r][k] * bcol[cc][k];
            c[2 * r + cc] += sum;
        }
    }
}

template <typename T> BERTC_INLINE void bertc_mma_1688(float c[4], const unsigned a[2], const unsigned b[1]) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    if constexpr (bertc_type<T>::IS_HALF) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]));
    } else {
#if __CUDA_ARCH__ >= 800
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]));
#else
        bertc_mma_1688_exchange<T>(c, a, b);
#endif
    }
#else
    bertc_mma_1688_exchange<T>(c, a, b);
#endif
}

/*
 * ldmatrix .x4 of 16-bit elements: lane i passes the shared-memory address
 * of row i % 8 of matrix i / 8 (16 bytes, 16-byte aligned); r[j] receives
 * the word of matrix j holding row lane / 4, elements 2 * (lane % 4) and
 * the next — exactly one mma fragment register.  The emulator body gathers
 * the 32 row addresses in one warp exchange (the portable body fetches each
 * with a shuffle) and reads the words itself (shared memory is ordinary
 * memory there).  All 32 lanes call it.
 */
BERTC_INLINE void bertc_ldmatrix_x4(unsigned *r, const void *row) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    const unsigned s = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
#elif defined(BERTC_EMU)
    const int lane = (int)threadIdx.x & 31;
    const void *rows[32];
    bertc_emu_warp_allgather(BERTC_FULL_MASK, &row, rows, (unsigned)sizeof row);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const void *a = rows[8 * j + (lane >> 2)];
        r[j] = *reinterpret_cast<const unsigned *>(reinterpret_cast<const unsigned char *>(a) + 4 * (lane & 3));
    }
#else
    const int lane = (int)threadIdx.x & 31;
    const unsigned long long mine = reinterpret_cast<unsigned long long>(row);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const unsigned long long a = __shfl_sync(BERTC_FULL_MASK, mine, 8 * j + (lane >> 2));
        r[j] = *reinterpret_cast<const unsigned *>(reinterpret_cast<const unsigned char *>(a) + 4 * (lane & 3));
    }
#endif
}

/*
 * ldmatrix .x4 .trans: the same row addresses, but each matrix arrives
 * transposed — r[j] holds M_j[2 * (lane % 4)][lane / 4] in its low half and
 * M_j[2 * (lane % 4) + 1][lane / 4] in its high half: the B fragment of an
 * mma whose k runs down the rows of a row-major tile (V in P . V).
 */
BERTC_INLINE void bertc_ldmatrix_x4_trans(unsigned *r, const void *row) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    const unsigned s = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
#elif defined(BERTC_EMU)
    const int lane = (int)threadIdx.x & 31;
    const void *rows[32];
    bertc_emu_warp_allgather(BERTC_FULL_MASK, &row, rows, (unsigned)sizeof row);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const void *a0 = rows[8 * j + 2 * (lane & 3)];
        const void *a1 = rows[8 * j + 2 * (lane & 3) + 1];
        const unsigned short lo = reinterpret_cast<const unsigned short *>(a0)[lane >> 2];
        const unsigned short hi = reinterpret_cast<const unsigned short *>(a1)[lane >> 2];
        r[j] = (unsigned)lo | ((unsigned)hi << 16);
    }
#else
    const int lane = (int)threadIdx.x & 31;
    const unsigned long long mine = reinterpret_cast<unsigned long long>(row);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const unsigned long long a0 = __shfl_sync(BERTC_FULL_MASK, mine, 8 * j + 2 * (lane & 3));
        const unsigned long long a1 = __shfl_sync(BERTC_FULL_MASK, mine, 8 * j + 2 * (lane & 3) + 1);
        const unsigned short lo = reinterpret_cast<const unsigned short *>(a0)[lane >> 2];
        const unsigned short hi = reinterpret_cast<const unsigned short *>(a1)[lane >> 2];
        r[j] = (unsigned)lo | ((unsigned)hi << 16);
    }
#endif
}

/*
 * Asynchronous 16-byte global -> shared copy (cp.async.cg, sm_80+): when
 * `valid` is false the destination is zero-filled and nothing is read.
 * Elsewhere it is an ordinary load and store.  Pair with
 * bertc_cp_async_commit / bertc_cp_async_wait<N> (no-ops there).
 */
BERTC_INLINE void bertc_cp_async16(void *smem, const void *gmem, bool valid) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    const int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
#else
    *reinterpret_cast<uint4 *>(smem) = valid ? *reinterpret_cast<const uint4 *>(gmem) : make_uint4(0u, 0u, 0u, 0u);
#endif
}

BERTC_INLINE void bertc_cp_async_commit() {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most N committed groups are still in flight. */
template <int N> BERTC_INLINE void bertc_cp_async_wait() {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* ------------------------------------------------------------ LayerNorm of a row in registers */

/*
 * A row of H elements held by THREADS threads (a warp, or a whole block),
 * VEC elements per vector, vector i of the row owned by thread i % THREADS
 * (consecutive threads read consecutive 16-byte pieces: coalesced).  Values
 * stay in registers from the first load to the store: two passes over
 * registers (mean, then the mean of squared deviations) rather than the
 * E[x^2] - E[x]^2 shortcut, which cancels badly and, in 16-bit storage,
 * would not need to overflow to be wrong.
 */
template <int H, int VEC, int THREADS> struct bertc_row_shape {
    static constexpr int NV = H / VEC;                          /* vectors per row */
    static constexpr int ITEMS = (NV + THREADS - 1) / THREADS;  /* vectors per thread */
    static constexpr bool EXACT = NV % THREADS == 0;            /* no thread idles in the last item */
};

/* Whether item i of thread `tid` lies inside the row. */
template <int H, int VEC, int THREADS> BERTC_INLINE bool bertc_row_has(int i, int tid) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    return S::EXACT || i < S::ITEMS - 1 || (S::ITEMS - 1) * THREADS + tid < S::NV;
}

/*
 * Normalises the row in v (float, [ITEMS][VEC] flattened) and stores
 * LayerNorm(v) * gamma + beta to out_row.  `scratch`: THREADS / 32 floats
 * of shared memory when THREADS > 32 (a block per row), unused for a warp.
 */
template <typename T, int H, int VEC, int THREADS>
BERTC_INLINE void bertc_layer_norm_store(float *v, int tid, const T *__restrict__ gamma,
                                         const T *__restrict__ beta, T *__restrict__ out_row,
                                         float eps, float *scratch) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum += v[i * VEC + j];
        }
    }
    const float mean = bertc_block_sum<THREADS / 32>(sum, scratch) / (float)H;
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const float dev = v[i * VEC + j] - mean;
                sq += dev * dev;
            }
        }
    }
    const float var = bertc_block_sum<THREADS / 32>(sq, scratch) / (float)H;
    const float rstd = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
            const int col = (i * THREADS + tid) * VEC;
            float gm[VEC], bt[VEC], o[VEC];
            bertc_load_vec<T, VEC>(gamma + col, gm);
            bertc_load_vec<T, VEC>(beta + col, bt);
#pragma unroll
            for (int j = 0; j < VEC; ++j) o[j] = (v[i * VEC + j] - mean) * rstd * gm[j] + bt[j];
            bertc_store_vec<T, VEC>(out_row + col, o);
        }
    }
}

/* ------------------------------------------------------------ activations */

#define BERTC_ACT_NONE 0
#define BERTC_ACT_GELU_ERF 1
#define BERTC_ACT_GELU_TANH 2
#define BERTC_ACT_RELU 3
#define BERTC_ACT_TANH 4

/* Hugging Face's definitions, in float. */
template <int ACT> BERTC_INLINE float bertc_activate(float x) {
    if constexpr (ACT == BERTC_ACT_GELU_ERF) {
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    } else if constexpr (ACT == BERTC_ACT_GELU_TANH) {
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    } else if constexpr (ACT == BERTC_ACT_RELU) {
        return x < 0.0f ? 0.0f : x; /* NaN stays NaN, as torch.relu */
    } else if constexpr (ACT == BERTC_ACT_TANH) {
        return tanhf(x);
    } else {
        return x;
    }
}

/* overlap helpers: stubs until the overlap work lands */
/*
 * The programmatic-dependent-launch and prefetch helpers every kernel
 * calls (docs: /work/briefs/kernels-shared.md, interface 1).  The rule:
 * before bertc_grid_dependency_wait() a kernel reads only the request block
 * and weights and writes nothing; after its last read of an activation an
 * earlier step produced it may call bertc_trigger_dependents().  Until the
 * overlap work lands they do nothing.
 */
BERTC_INLINE void bertc_grid_dependency_wait() {}
BERTC_INLINE void bertc_trigger_dependents() {}
BERTC_INLINE void bertc_prefetch_l2(const void *p, unsigned bytes) {
    (void)p;
    (void)bytes;
}

#endif /* BERTC_DEVICE_CUH */
