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

/*
 * What the architecture offers, as the paths see it.  mma.sync m16n8k16
 * and cp.async need sm_80; sm_75 (Turing) has mma.sync m16n8k8 for float16
 * only (bfloat16 mma needs sm_80) and ldmatrix.  The emulator runs every
 * path through the helpers' emulator bodies; with BERTC_EMU_SM75 defined
 * before this header it offers exactly what sm_75 offers, so the kernel
 * tests run the Turing paths too.  Templates test the architecture only
 * through these macros and the helpers below, at 750 and 800 (sm_90's
 * instructions are marked comments: see the overlap helpers): the compile
 * pipeline reads those thresholds off the text (every mention of the
 * architecture macro must be such a test, or each architecture gets a
 * front end of its own: compiler/codegen/kbuild.h).
 */
#if defined(BERTC_EMU)
#if defined(BERTC_EMU_SM75)
#define BERTC_HAS_MMA16816 0
#else
#define BERTC_HAS_MMA16816 1
#endif
#define BERTC_HAS_MMA1688_F16 1
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define BERTC_HAS_MMA16816 1
#define BERTC_HAS_MMA1688_F16 1
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
#define BERTC_HAS_MMA16816 0
#define BERTC_HAS_MMA1688_F16 1
#else
#define BERTC_HAS_MMA16816 0
#define BERTC_HAS_MMA1688_F16 0
#endif

/* ------------------------------------------------------------ overlap across steps */

/*
 * Programmatic dependent launch (sm_90+).  On a GPU of compute capability
 * 9.0 or newer the runtime launches a kernel that follows another bertc
 * kernel with the programmatic-stream-serialization attribute, so it may
 * start while its predecessor still runs.  The rule every kernel follows:
 * before bertc_grid_dependency_wait() it reads only the request block
 * (written by the graph's first copy, long done) and weights (read-only),
 * and writes nothing; the wait returns once the predecessor has completed
 * and its writes are visible.  After its last read of an activation made
 * by an earlier step a kernel may call bertc_trigger_dependents(): its
 * dependents may then be scheduled (their own wait still waits for this
 * kernel's end, so the trigger is a matter of speed, never of
 * correctness).  Both are no-ops below sm_90 and in a kernel launched
 * without the attribute.
 *
 * The two instructions are written as PTX comments marked `//@sm_90 `, not
 * behind an architecture test at 900: that threshold would cost a third
 * NVRTC front end (2.4 s of CPU for BERT-base's kernels, a quarter of a
 * cold compile) for two instructions.  NVRTC copies an asm statement's text
 * into the PTX verbatim and treats it as opaque, so the compute_80 PTX
 * holds the comment exactly where the instruction goes, with the same
 * compiler barrier; kbuild derives compute_90's PTX from it by raising
 * `.target` and removing the marker (compiler/codegen/kbuild.h) — byte for
 * byte NVRTC's own compute_90 output (tests/kernels/test_kbuild_cache.c).
 * On sm_80 .. sm_89 the comment is nothing, as the instructions would be.
 * The emulator runs a dependent's pre-wait part
 * before its predecessor altogether (runtime/emu/core/emu.h), so a kernel
 * that breaks the rule computes a wrong answer in CI.
 *
 * BERTC_DEPENDENCY_WAIT_DISABLED (tests only) makes the wait a no-op: the
 * deliberately wrong kernel the emulator must catch.
 */
BERTC_INLINE void bertc_grid_dependency_wait() {
#if defined(BERTC_DEPENDENCY_WAIT_DISABLED)
#elif defined(BERTC_EMU)
    bertc_emu_grid_dependency_wait();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("//@sm_90 griddepcontrol.wait;\n" ::: "memory");
#endif
}

BERTC_INLINE void bertc_trigger_dependents() {
#if defined(BERTC_EMU)
    bertc_emu_trigger_dependents();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("//@sm_90 griddepcontrol.launch_dependents;\n" ::);
#endif
}

/*
 * L2 prefetch hint (sm_80+): every 128-byte line of [p, p + bytes) is
 * requested into L2 by the calling thread; no register waits for it.  The
 * addresses stay inside the range (the first is p, then line starts), so a
 * range that lies in one allocation is never left.  The emulator checks
 * that it does (a prefetch a GPU would drop silently is still a bug).
 */
BERTC_INLINE void bertc_prefetch_l2(const void *p, unsigned bytes) {
#if defined(BERTC_EMU)
    bertc_emu_prefetch_l2(p, bytes);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const char *a = reinterpret_cast<const char *>(p), *end = a + bytes;
    for (const char *l = a; l < end; l = reinterpret_cast<const char *>((reinterpret_cast<size_t>(l) | 127u) + 1u))
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(l));
#else
    (void)p;
    (void)bytes;
#endif
}

/*
 * The bytes first..last (inclusive: the plan's references always point
 * inside their buffer) prefetched into L2 by the whole grid, each line by
 * one thread: thread i of the grid (blocks in launch order) takes lines i,
 * i + threads, ...  What every kernel calls for the next step's weights
 * (runtime/plan/plan_types.h, docs/performance.md).  NULL does nothing.
 */
BERTC_INLINE void bertc_prefetch_l2_grid(const void *first_byte, const void *last_byte) {
    if (!first_byte || !last_byte || last_byte < first_byte) return;
    const char *b = reinterpret_cast<const char *>(first_byte), *e = reinterpret_cast<const char *>(last_byte) + 1;
    const size_t threads = (size_t)blockDim.x * blockDim.y * blockDim.z;
    const size_t block = ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const size_t me = block * threads + ((size_t)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const size_t stride = threads * gridDim.x * gridDim.y * gridDim.z;
    const size_t line0 = reinterpret_cast<size_t>(b) & ~(size_t)127u;
    const size_t lines = (reinterpret_cast<size_t>(e) - line0 + 127u) / 128u;
#if defined(BERTC_EMU)
    /* one check of this thread's span rather than one call per line */
    if (me < lines) {
        const size_t last = me + (lines - 1 - me) / stride * stride;
        const char *lo = me == 0 ? b : reinterpret_cast<const char *>(line0 + me * 128u);
        const char *hi = last == lines - 1 ? e : reinterpret_cast<const char *>(line0 + last * 128u + 128u);
        bertc_prefetch_l2(lo, (unsigned)(hi - lo));
    }
#else
    for (size_t i = me; i < lines; i += stride) {
        const char *l = i == 0 ? b : reinterpret_cast<const char *>(line0 + i * 128u);
        bertc_prefetch_l2(l, 1u);
    }
#endif
}

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

/* Layout of runtime/plan/plan_types.h: int32 len, int32 bucket, int32
 * nseq, int32 max_seqs (both 0 in a length bucket), then input_ids[bucket],
 * token_type_ids[bucket], attention_mask[bucket]; a token bucket's block
 * goes on with position[bucket] and seq_start[max_seqs + 1]. */
#define BERTC_REQ_HEADER_WORDS 4
#define BERTC_REQ_INPUT_IDS(bucket) (BERTC_REQ_HEADER_WORDS)
#define BERTC_REQ_TOKEN_TYPES(bucket) (BERTC_REQ_HEADER_WORDS + (bucket))
#define BERTC_REQ_ATTENTION_MASK(bucket) (BERTC_REQ_HEADER_WORDS + 2 * (bucket))
#define BERTC_REQ_POSITIONS(bucket) (BERTC_REQ_HEADER_WORDS + 3 * (bucket))
#define BERTC_REQ_SEQ_START(bucket) (BERTC_REQ_HEADER_WORDS + 4 * (bucket))

/* Real sequence length, clamped to the bucket (the runtime guarantees
 * 1 <= len <= bucket; the clamp keeps a bad request inside the buffers). */
template <int BUCKET> BERTC_INLINE int bertc_req_len(const int *req) {
    const int len = req[0];
    return len < 0 ? 0 : (len > BUCKET ? BUCKET : len);
}

/* The two lengths of a request, for a kernel that serves any bucket: the
 * bucket B (the arrays' length; words 1) and the real length L (word 0)
 * clamped into [0, B].  Both words are read together: one round trip. */
struct bertc_req_lens {
    int len, bucket;
};

BERTC_INLINE bertc_req_lens bertc_req_read(const int *req) {
    const int2 w = *reinterpret_cast<const int2 *>(req);
    bertc_req_lens r;
    r.bucket = w.y < 0 ? 0 : w.y;
    r.len = w.x < 0 ? 0 : (w.x > r.bucket ? r.bucket : w.x);
    return r;
}

/* A packed batch's sequence count n (word 2), clamped into [0, max_seqs]
 * (word 3), so seq_start[n] is inside the block whatever it holds. */
BERTC_INLINE int bertc_req_nseq(const int *req) {
    const int2 w = *reinterpret_cast<const int2 *>(req + 2);
    const int most = w.y < 0 ? 0 : w.y;
    return w.x < 0 ? 0 : (w.x > most ? most : w.x);
}

/* Rows [start, start + len) of sequence i < n of a packed batch, clamped
 * into the batch's rows [0, L) and never overlapping the sequence before
 * (the runtime writes exact offsets; the clamp keeps a bad block inside
 * the buffers and every sequence inside its own rows). */
struct bertc_req_seq {
    int start, len;
};

BERTC_INLINE bertc_req_seq bertc_req_seq_rows(const int *req, bertc_req_lens rl, int i) {
    const int *st = req + BERTC_REQ_SEQ_START(rl.bucket);
    int a = st[i], b = st[i + 1];
    a = a < 0 ? 0 : (a > rl.len ? rl.len : a);
    b = b < a ? a : (b > rl.len ? rl.len : b);
    bertc_req_seq r;
    r.start = a;
    r.len = b - a;
    return r;
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
template <int K> BERTC_INLINE void bertc_mma_rows_cols(float *d, const float (*arow)[K], const float (*bcol)[K]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < K; ++k) s += arow[r][k] * bcol[c][k];
            d[2 * r + c] += s;
        }
    }
}

#if defined(BERTC_EMU)
/* The emulator bodies' one warp exchange: every lane's N fragment registers,
 * widened to float by their owner (each element once, not once per
 * reader), gathered to every lane: all[lane][2 i + h] is half h (low
 * first) of register i. */
template <typename T, int N> BERTC_INLINE void bertc_emu_fragments(const unsigned *w, float (*all)[2 * N]) {
    float mine[2 * N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        mine[2 * i] = bertc_type<T>::bits_to_float(w[i]);
        mine[2 * i + 1] = bertc_type<T>::bits_to_float(w[i] >> 16);
    }
    bertc_emu_warp_allgather(BERTC_FULL_MASK, mine, all, (unsigned)sizeof mine);
}

/* Rows g and g + 8 of A and columns 2t, 2t + 1 of B for one m16n8kK tile
 * from the gathered fragments (NA A registers per lane, then the B ones):
 * element k of A's row r is in lane 4g + (k % 8) / 2, register
 * 2 (k / 8) + r, half k % 2; element k of B's column n in lane
 * 4n + (k % 8) / 2, register NA + k / 8, half k % 2 (the PTX ISA's layouts
 * of m16n8k16 and m16n8k8). */
template <int K, int NA>
BERTC_INLINE void bertc_emu_rows_cols(const float (*all)[2 * (NA + K / 8)], int g, int t, float (*arow)[K],
                                      float (*bcol)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int s = (k % 8) / 2, h = k % 2;
        arow[0][k] = all[4 * g + s][2 * (2 * (k / 8)) + h];
        arow[1][k] = all[4 * g + s][2 * (2 * (k / 8) + 1) + h];
        bcol[0][k] = all[4 * (2 * t) + s][2 * (NA + k / 8) + h];
        bcol[1][k] = all[4 * (2 * t + 1) + s][2 * (NA + k / 8) + h];
    }
}
#endif

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
    const unsigned w[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
    float all[32][12], arow[2][16], bcol[2][16];
    bertc_emu_fragments<T, 6>(w, all);
    bertc_emu_rows_cols<16, 4>(all, g, t, arow, bcol);
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
 * D += A * B for one m16n8k8 tile, float accumulators, 16-bit T packed two
 * per register in the PTX ISA's layout for mma.m16n8k8 (g = lane / 4,
 * t = lane % 4):
 *   a[0] = A[g][2t..2t+1]   a[1] = A[g+8][2t..2t+1]   b[0] = B[2t..2t+1][g]
 *   c[0..1] = C[g][2t..2t+1]  c[2..3] = C[g+8][2t..2t+1]
 * An m16n8k16 is two of them: (a[0], a[1], b[0]) then (a[2], a[3], b[1]) of
 * its fragments.  The GPU instruction exists for float16 from sm_75 and for
 * bfloat16 from sm_80; the emulator body gathers the fragments in one warp
 * exchange as bertc_mma_16816's does, the portable body (compiled where the
 * instruction is missing, never called) with shuffles.  All 32 lanes call it.
 */
template <typename T> BERTC_INLINE void bertc_mma_1688(float c[4], const unsigned a[2], const unsigned b[1]) {
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    if constexpr (bertc_type<T>::IS_HALF) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b[0]));
        return;
    }
#endif
#if !defined(BERTC_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]));
#elif defined(BERTC_EMU)
    const int lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    /* per lane a[0], a[1], b[0], low half first: row g of A spans lanes
     * 4g..4g+3, column n of B lanes 4n..4n+3 */
    const unsigned w[3] = {a[0], a[1], b[0]};
    float all[32][6], arow[2][8], bcol[2][8];
    bertc_emu_fragments<T, 3>(w, all);
    bertc_emu_rows_cols<8, 2>(all, g, t, arow, bcol);
    bertc_mma_rows_cols(c, arow, bcol);
#else
    const int lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const unsigned long long a01 = (unsigned long long)a[0] | ((unsigned long long)a[1] << 32);
    float arow[2][8], bcol[2][8];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const unsigned long long r = __shfl_sync(BERTC_FULL_MASK, a01, 4 * g + s);
        const unsigned c0 = __shfl_sync(BERTC_FULL_MASK, b[0], 4 * (2 * t) + s);
        const unsigned c1 = __shfl_sync(BERTC_FULL_MASK, b[0], 4 * (2 * t + 1) + s);
        const unsigned lo = (unsigned)r, hi = (unsigned)(r >> 32);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            arow[0][2 * s + e] = bertc_type<T>::bits_to_float(lo >> (16 * e));
            arow[1][2 * s + e] = bertc_type<T>::bits_to_float(hi >> (16 * e));
            bcol[0][2 * s + e] = bertc_type<T>::bits_to_float(c0 >> (16 * e));
            bcol[1][2 * s + e] = bertc_type<T>::bits_to_float(c1 >> (16 * e));
        }
    }
    bertc_mma_rows_cols(c, arow, bcol);
#endif
}

/*
 * One k16 step of the tensor-core attention and GEMM paths, on whatever
 * the architecture has: m16n8k16 from sm_80, two m16n8k8 on sm_75 (float16
 * only: callers check BERTC_HAS_MMA1688_F16 for bfloat16 there).
 */
template <typename T> BERTC_INLINE void bertc_mma_k16(float *d, const unsigned *a, const unsigned *b) {
    if constexpr (BERTC_HAS_MMA16816) {
        bertc_mma_16816<T>(d, a, b);
    } else {
        const unsigned a0[2] = {a[0], a[1]}, a1[2] = {a[2], a[3]};
        bertc_mma_1688<T>(d, a0, b);
        bertc_mma_1688<T>(d, a1, b + 1);
    }
}

/*
 * ldmatrix .x4 of 16-bit elements: lane i passes the shared-memory address
 * of row i % 8 of matrix i / 8 (16 bytes, 16-byte aligned); r[j] receives
 * the word of matrix j holding row lane / 4, elements 2 * (lane % 4) and
 * the next — exactly one mma fragment register.  The emulator body gathers
 * the 32 row addresses in one warp exchange (the portable body fetches each
 * with a shuffle) and reads the words itself (shared memory is ordinary
 * memory there).  All 32 lanes call it.  ldmatrix exists from sm_75.
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
 * Below sm_80 it is an ordinary load and store, and the group calls are
 * no-ops.  On the emulated device the copy lands only when the thread
 * waits for its group, and the destination reads as 0xff bytes (NaN)
 * until then (runtime/emu/core/emu_async.h): a pipeline whose wait counts
 * are wrong fails there as it may on a GPU.
 */
BERTC_INLINE void bertc_cp_async16(void *smem, const void *gmem, bool valid) {
#if defined(BERTC_EMU)
    bertc_emu_cp_async(smem, valid ? gmem : nullptr, 16u);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    const int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
#else
    *reinterpret_cast<uint4 *>(smem) = valid ? *reinterpret_cast<const uint4 *>(gmem) : make_uint4(0u, 0u, 0u, 0u);
#endif
}

BERTC_INLINE void bertc_cp_async_commit() {
#if defined(BERTC_EMU)
    bertc_emu_cp_async_commit();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most N committed groups are still in flight. */
template <int N> BERTC_INLINE void bertc_cp_async_wait() {
#if defined(BERTC_EMU)
    bertc_emu_cp_async_wait((unsigned)N);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* bertc_cp_async_wait<n> for a count known at run time, 0 <= n < MAX
 * (the instruction takes an immediate: one branch per possible count). */
template <int MAX> BERTC_INLINE void bertc_cp_async_wait_upto(int n) {
    if constexpr (MAX > 1) {
        if (n >= MAX - 1) {
            bertc_cp_async_wait<MAX - 1>();
            return;
        }
        bertc_cp_async_wait_upto<MAX - 1>(n);
    } else {
        bertc_cp_async_wait<0>();
    }
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
 * The vectors of a row that thread `tid` owns (elements of T widened to
 * float, [ITEMS][VEC] flattened); items past the row's end are zeros.
 * Loads only: a caller issues every row it needs before using any, so they
 * are in flight together.
 */
template <typename T, int H, int VEC, int THREADS>
BERTC_INLINE void bertc_row_load(const T *__restrict__ row, int tid, float *v) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
            bertc_load_vec<T, VEC>(row + (i * THREADS + tid) * VEC, v + i * VEC);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) v[i * VEC + j] = 0.0f;
        }
    }
}

/*
 * Normalises the row in v (float, [ITEMS][VEC] flattened, zeros past the
 * row's end) and stores LayerNorm(v) * gamma + beta to out_row; gm and bt
 * are gamma and beta as bertc_row_load gave them (loaded early, before
 * the dependency wait).  Sums multiply by 1/H, a compile-time constant,
 * and the inverse deviation is rsqrtf.  `scratch`: THREADS / 32 floats of
 * shared memory when THREADS > 32 (a block per row), unused for a warp.
 */
template <typename T, int H, int VEC, int THREADS>
BERTC_INLINE void bertc_layer_norm_store(const float *v, int tid, const float *gm, const float *bt,
                                         T *__restrict__ out_row, float eps, float *scratch) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    constexpr float INV_H = 1.0f / (float)H;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < S::ITEMS * VEC; ++i) sum += v[i];
    const float mean = bertc_block_sum<THREADS / 32>(sum, scratch) * INV_H;
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
    const float rstd = rsqrtf(bertc_block_sum<THREADS / 32>(sq, scratch) * INV_H + eps);
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
            float o[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) o[j] = (v[i * VEC + j] - mean) * rstd * gm[i * VEC + j] + bt[i * VEC + j];
            bertc_store_vec<T, VEC>(out_row + (i * THREADS + tid) * VEC, o);
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

#endif /* BERTC_DEVICE_CUH */
