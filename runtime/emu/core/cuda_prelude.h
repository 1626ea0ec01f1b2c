/*
 * cuda_prelude — what turns CUDA kernel text into C++ that g++ compiles for
 * the emulated device.  Force-included (`g++ -std=c++17 -include
 * cuda_prelude.h -I. -Iinclude -DBERTC_EMU`, in the private build folder
 * where bertc writes its embedded copy of this header and the ones it
 * includes: compiler/codegen/emu_build.c) in front of the very text NVRTC
 * compiles for the GPU, so both devices run one source.
 *
 * Design rules, each learnt the hard way (shared/notes/emulated-device.md):
 *
 * - No system header but <stdint.h>.  The prelude uses compiler builtins,
 *   so nothing it maps by macro can collide with a declaration that comes
 *   later, and a kernel unit compiles in a fraction of a second.
 * - Never define a libm name.  glibc already declares fmaxf, __expf, ... and
 *   redefining one silently replaces the C library's symbol.  Every math
 *   name device code uses is a macro onto a `bertc_emu_` function (with the
 *   float/double overloads CUDA's device math provides).
 * - The built-in variables are macros over the calling CUDA thread's record,
 *   which the emulator keeps near the top of the fiber's aligned stack
 *   window, offset by the window's colour (emu_abi.h): masking and shifting
 *   the stack pointer finds it, with no thread-local storage and no global
 *   state.
 * - __syncthreads and warp intrinsics call into the emulator, passing the
 *   source position so a deadlock or divergent barrier is reported with the
 *   kernel's file and line.  Shuffles compute their source lane here (CUDA's
 *   width/segment rules) and move the value as 64 raw bits; a lane that
 *   reads a lane outside the exchange gets all-ones bits (NaN / -1), never a
 *   plausible number.
 * - `__shared__` is `static thread_local`: static storage shared by the
 *   fibers of a block (blocks run one after another on the launching OS
 *   thread), separate per OS thread so launches on several threads do not
 *   share it.  With BERTC_EMU_SANITIZE it is plain `static`, which gives
 *   AddressSanitizer redzones around every shared array (the emulator then
 *   serialises launches of that image).  Dynamic shared memory is declared
 *   through BERTC_DYNAMIC_SMEM(type, name), a pointer to the emulator's
 *   per-block buffer; a raw `extern __shared__` does not compile here.
 * - BERTC_KERNEL_EXPORT(entry) emits the `extern "C"` descriptor
 *   `<entry>__emu` whose thunk unpacks CUDA-style kernelParams (args[i]
 *   points to argument i) using the argument types deduced from the
 *   kernel's own function type.
 */
#ifndef BERTC_EMU_PRELUDE_H
#define BERTC_EMU_PRELUDE_H

#ifndef __cplusplus
#error "cuda_prelude.h is C++ (g++ -std=c++17)"
#endif
#if !defined(__x86_64__)
#error "the emulated device's fibers are x86-64 only"
#endif

#include <stdint.h> /* NVRTC offers the fixed-width types; this C header declares no math names */

#include "emu_abi.h"

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;

/* ------------------------------------------------------------ keywords */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#ifdef BERTC_EMU_SANITIZE
#define __shared__ static
#define BERTC_EMU_KERNEL_FLAGS BERTC_EMU_KERNEL_SANITIZED
#else
#define __shared__ static thread_local
#define BERTC_EMU_KERNEL_FLAGS 0u
#endif

/* ------------------------------------------------------------ vector types */
struct uint3 { unsigned x, y, z; };
struct int3 { int x, y, z; };
struct float3 { float x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
struct __align__(8) int2 { int x, y; };
struct __align__(8) uint2 { unsigned x, y; };
struct __align__(8) float2 { float x, y; };
struct __align__(16) int4 { int x, y, z, w; };
struct __align__(16) uint4 { unsigned x, y, z, w; };
struct __align__(16) float4 { float x, y, z, w; };
struct __align__(16) double2 { double x, y; };
struct __align__(4) short2 { short x, y; };
struct __align__(4) ushort2 { unsigned short x, y; };
struct __align__(8) ushort4 { unsigned short x, y, z, w; };
struct __align__(16) longlong2 { long long x, y; };
struct __align__(16) ulonglong2 { unsigned long long x, y; };

static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }
static inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return double2{x, y}; }
static inline short2 make_short2(short x, short y) { return short2{x, y}; }
static inline ushort2 make_ushort2(unsigned short x, unsigned short y) { return ushort2{x, y}; }

/* ------------------------------------------------------------ the current thread */
static inline __attribute__((always_inline)) bertc_emu_thread *bertc_emu_self(void) {
    unsigned long sp;
    __asm__("movq %%rsp, %0" : "=r"(sp));
    return (bertc_emu_thread *)BERTC_EMU_THREAD_AT(sp);
}
static inline uint3 bertc_emu_thread_idx(void) {
    const bertc_emu_thread *t = bertc_emu_self();
    return uint3{t->tid.x, t->tid.y, t->tid.z};
}
static inline uint3 bertc_emu_block_idx(void) {
    const bertc_emu_launch *L = bertc_emu_self()->launch;
    return uint3{L->block_idx.x, L->block_idx.y, L->block_idx.z};
}
static inline dim3 bertc_emu_block_dim(void) {
    const bertc_emu_launch *L = bertc_emu_self()->launch;
    return dim3(L->block_dim.x, L->block_dim.y, L->block_dim.z);
}
static inline dim3 bertc_emu_grid_dim(void) {
    const bertc_emu_launch *L = bertc_emu_self()->launch;
    return dim3(L->grid_dim.x, L->grid_dim.y, L->grid_dim.z);
}
#define threadIdx (::bertc_emu_thread_idx())
#define blockIdx (::bertc_emu_block_idx())
#define blockDim (::bertc_emu_block_dim())
#define gridDim (::bertc_emu_grid_dim())
static constexpr int warpSize = 32;

/* Dynamic shared memory of the running block (16-byte aligned). */
#define BERTC_DYNAMIC_SMEM(T, name) \
    T *const name = reinterpret_cast<T *>(::bertc_emu_self()->launch->dyn_smem)

/* ------------------------------------------------------------ barriers, faults */
static inline void bertc_emu_syncthreads(const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->sync_threads(t, file, line);
}
[[noreturn]] static inline void bertc_emu_trap(const char *what, const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->trap(t, what, file, line);
    __builtin_unreachable();
}
#define __syncthreads() ::bertc_emu_syncthreads(__FILE__, __LINE__)
#define __trap() ::bertc_emu_trap("__trap()", __FILE__, __LINE__)
#define __brkpt() ::bertc_emu_trap("__brkpt()", __FILE__, __LINE__)
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

extern "C" int printf(const char *__restrict fmt, ...);

/* ------------------------------------------------------------ grid dependencies (sm_90's griddepcontrol)
 * Programmatic dependent launch: a kernel launched with the
 * programmatic-stream-serialization attribute may start while its stream
 * predecessor runs; griddepcontrol.wait holds the calling thread until that
 * predecessor has completed (the emulator parks the fiber), and
 * griddepcontrol.launch_dependents lets the block's dependents start.  The
 * CUDA spellings are what device code written against the runtime API
 * calls; bertc's kernels go through bertc_device.cuh. */
static inline void bertc_emu_grid_dependency_wait_at(const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->grid_dependency_wait(t, file, line);
}
static inline void bertc_emu_trigger_dependents_at(const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->trigger_dependents(t, file, line);
}
/* prefetch.global.L2: a hint on a GPU; here the range must lie in device memory. */
static inline void bertc_emu_prefetch_l2_at(const void *p, unsigned long long bytes, const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->prefetch_l2(t, p, bytes, file, line);
}
/* cp.async (sm_80's asynchronous global -> shared copy) and its groups: the
 * copy lands when the thread waits for its group, and its destination
 * reads as 0xff bytes until then (runtime/emu/core/emu_async.h). */
static inline void bertc_emu_cp_async_at(void *dst, const void *src, unsigned bytes, const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->cp_async(t, dst, src, bytes, file, line);
}
static inline void bertc_emu_cp_async_commit(void) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->cp_async_commit(t);
}
static inline void bertc_emu_cp_async_wait(unsigned n) {
    bertc_emu_thread *t = bertc_emu_self();
    t->launch->ops->cp_async_wait(t, n);
}
#define bertc_emu_cp_async(dst, src, bytes) ::bertc_emu_cp_async_at((dst), (src), (bytes), __FILE__, __LINE__)
/* CUDA's spelling (cuda_pipeline_primitives.h): size_and_align 4, 8 or 16
 * bytes, zfill 0 (copy) or all of them (zeros). */
static inline void bertc_emu_pipeline_memcpy_async_at(void *dst, const void *src, unsigned long size_and_align,
                                                      unsigned long zfill, const char *file, int line) {
    if (zfill != 0 && zfill != size_and_align)
        ::bertc_emu_trap("__pipeline_memcpy_async: a partial zero-fill is not emulated", file, line);
    ::bertc_emu_cp_async_at(dst, zfill ? nullptr : src, (unsigned)size_and_align, file, line);
}
#define __pipeline_memcpy_async(dst, src, ...) \
    ::bertc_emu_pipeline_memcpy_async_helper(__FILE__, __LINE__, (dst), (src), __VA_ARGS__)
static inline void bertc_emu_pipeline_memcpy_async_helper(const char *file, int line, void *dst, const void *src,
                                                          unsigned long size_and_align, unsigned long zfill = 0) {
    ::bertc_emu_pipeline_memcpy_async_at(dst, src, size_and_align, zfill, file, line);
}
static inline void __pipeline_commit(void) { ::bertc_emu_cp_async_commit(); }
static inline void __pipeline_wait_prior(unsigned long prior) { ::bertc_emu_cp_async_wait((unsigned)prior); }
#define bertc_emu_grid_dependency_wait() ::bertc_emu_grid_dependency_wait_at(__FILE__, __LINE__)
#define bertc_emu_trigger_dependents() ::bertc_emu_trigger_dependents_at(__FILE__, __LINE__)
#define bertc_emu_prefetch_l2(p, bytes) ::bertc_emu_prefetch_l2_at((p), (bytes), __FILE__, __LINE__)
#define cudaGridDependencySynchronize() bertc_emu_grid_dependency_wait()
#define cudaTriggerProgrammaticLaunchCompletion() bertc_emu_trigger_dependents()

/* ------------------------------------------------------------ warp intrinsics */
namespace bertc_emu {

static inline unsigned long long warp(int op, unsigned mask, unsigned long long v, int src,
                                      const char *file, int line) {
    bertc_emu_thread *t = bertc_emu_self();
    return t->launch->ops->warp(t, op, mask, v, src, file, line);
}

template <typename T> static inline unsigned long long pack(const T &v) {
    static_assert(sizeof(T) <= 8 && __is_trivially_copyable(T), "warp shuffle of a type wider than 8 bytes");
    unsigned long long u = 0;
    __builtin_memcpy(&u, &v, sizeof v);
    return u;
}

template <typename T> static inline T unpack(unsigned long long u) {
    T v;
    __builtin_memcpy(&v, &u, sizeof v);
    return v;
}

static inline unsigned segment(int width, const char *file, int line) {
    if (width <= 0 || width > 32 || (width & (width - 1)))
        bertc_emu_trap("shuffle width is not a power of two in [1, 32]", file, line);
    return bertc_emu_self()->lane & ~(unsigned)(width - 1);
}

template <typename T>
static inline T shfl_idx(const char *file, int line, unsigned mask, T var, int src_lane, int width = 32) {
    unsigned seg = segment(width, file, line);
    int src = (int)(seg + ((unsigned)src_lane & (unsigned)(width - 1)));
    return unpack<T>(warp(BERTC_EMU_WARP_SHFL, mask, pack(var), src, file, line));
}

template <typename T>
static inline T shfl_up(const char *file, int line, unsigned mask, T var, unsigned delta, int width = 32) {
    unsigned seg = segment(width, file, line);
    unsigned lane = bertc_emu_self()->lane;
    int src = (int)lane - (int)delta;
    if (delta >= 32u || src < (int)seg) src = (int)lane;
    return unpack<T>(warp(BERTC_EMU_WARP_SHFL, mask, pack(var), src, file, line));
}

template <typename T>
static inline T shfl_down(const char *file, int line, unsigned mask, T var, unsigned delta, int width = 32) {
    unsigned seg = segment(width, file, line);
    unsigned lane = bertc_emu_self()->lane;
    unsigned src = lane + delta;
    if (delta >= 32u || src >= seg + (unsigned)width) src = lane;
    return unpack<T>(warp(BERTC_EMU_WARP_SHFL, mask, pack(var), (int)src, file, line));
}

template <typename T>
static inline T shfl_xor(const char *file, int line, unsigned mask, T var, int lane_mask, int width = 32) {
    unsigned seg = segment(width, file, line);
    unsigned lane = bertc_emu_self()->lane;
    unsigned src = lane ^ (unsigned)lane_mask;
    if (src >= seg + (unsigned)width) src = lane;
    return unpack<T>(warp(BERTC_EMU_WARP_SHFL, mask, pack(var), (int)src, file, line));
}

static inline void syncwarp(const char *file, int line, unsigned mask = 0xffffffffu) {
    warp(BERTC_EMU_WARP_SYNC, mask, 0, 0, file, line);
}

static inline void allgather(const char *file, int line, unsigned mask, const void *mine, void *all, unsigned bytes) {
    bertc_emu_gather g = {mine, all, bytes};
    warp(BERTC_EMU_WARP_GATHER, mask, (unsigned long long)(uintptr_t)&g, 0, file, line);
}

} /* namespace bertc_emu */

/* Emulator-only (under BERTC_EMU): every lane's `bytes` at `mine` land at
 * all + lane * bytes, in one exchange; for CPU versions of fragment helpers. */
#define bertc_emu_warp_allgather(mask, mine, all, bytes) \
    ::bertc_emu::allgather(__FILE__, __LINE__, (mask), (mine), (all), (bytes))

#define __shfl_sync(...) ::bertc_emu::shfl_idx(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::bertc_emu::shfl_up(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::bertc_emu::shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::bertc_emu::shfl_xor(__FILE__, __LINE__, __VA_ARGS__)
#define __syncwarp(...) ::bertc_emu::syncwarp(__FILE__, __LINE__ __VA_OPT__(,) __VA_ARGS__)
#define __ballot_sync(mask, pred) \
    ((unsigned)::bertc_emu::warp(BERTC_EMU_WARP_BALLOT, (mask), (pred) ? 1u : 0u, 0, __FILE__, __LINE__))
#define __any_sync(mask, pred) \
    ((int)::bertc_emu::warp(BERTC_EMU_WARP_ANY, (mask), (pred) ? 1u : 0u, 0, __FILE__, __LINE__))
#define __all_sync(mask, pred) \
    ((int)::bertc_emu::warp(BERTC_EMU_WARP_ALL, (mask), (pred) ? 1u : 0u, 0, __FILE__, __LINE__))

/* ------------------------------------------------------------ atomics (relaxed, as CUDA's) */
#define BERTC_EMU_ATOMIC_RMW(name, T, builtin)                                            \
    static inline T name(T *p, T v) { return builtin(p, v, __ATOMIC_RELAXED); }
BERTC_EMU_ATOMIC_RMW(atomicAdd, int, __atomic_fetch_add)
BERTC_EMU_ATOMIC_RMW(atomicAdd, unsigned, __atomic_fetch_add)
BERTC_EMU_ATOMIC_RMW(atomicAdd, unsigned long long, __atomic_fetch_add)
BERTC_EMU_ATOMIC_RMW(atomicSub, int, __atomic_fetch_sub)
BERTC_EMU_ATOMIC_RMW(atomicSub, unsigned, __atomic_fetch_sub)
BERTC_EMU_ATOMIC_RMW(atomicAnd, int, __atomic_fetch_and)
BERTC_EMU_ATOMIC_RMW(atomicAnd, unsigned, __atomic_fetch_and)
BERTC_EMU_ATOMIC_RMW(atomicAnd, unsigned long long, __atomic_fetch_and)
BERTC_EMU_ATOMIC_RMW(atomicOr, int, __atomic_fetch_or)
BERTC_EMU_ATOMIC_RMW(atomicOr, unsigned, __atomic_fetch_or)
BERTC_EMU_ATOMIC_RMW(atomicOr, unsigned long long, __atomic_fetch_or)
BERTC_EMU_ATOMIC_RMW(atomicXor, int, __atomic_fetch_xor)
BERTC_EMU_ATOMIC_RMW(atomicXor, unsigned, __atomic_fetch_xor)
BERTC_EMU_ATOMIC_RMW(atomicXor, unsigned long long, __atomic_fetch_xor)
BERTC_EMU_ATOMIC_RMW(atomicExch, int, __atomic_exchange_n)
BERTC_EMU_ATOMIC_RMW(atomicExch, unsigned, __atomic_exchange_n)
BERTC_EMU_ATOMIC_RMW(atomicExch, unsigned long long, __atomic_exchange_n)
#undef BERTC_EMU_ATOMIC_RMW

namespace bertc_emu {
/* Compare-and-swap loop applying f(old) -> new on the bits of *p. */
template <typename T, typename B, typename F> static inline T atomic_update(T *p, F f) {
    static_assert(sizeof(T) == sizeof(B), "atomic_update: size");
    B *bp = reinterpret_cast<B *>(p);
    B old = __atomic_load_n(bp, __ATOMIC_RELAXED);
    for (;;) {
        T o;
        __builtin_memcpy(&o, &old, sizeof o);
        T n = f(o);
        B nb;
        __builtin_memcpy(&nb, &n, sizeof nb);
        if (__atomic_compare_exchange_n(bp, &old, nb, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
    }
}
} /* namespace bertc_emu */

static inline float atomicAdd(float *p, float v) {
    return bertc_emu::atomic_update<float, unsigned>(p, [v](float o) { return o + v; });
}
static inline double atomicAdd(double *p, double v) {
    return bertc_emu::atomic_update<double, unsigned long long>(p, [v](double o) { return o + v; });
}
static inline float atomicExch(float *p, float v) {
    return bertc_emu::atomic_update<float, unsigned>(p, [v](float) { return v; });
}
#define BERTC_EMU_ATOMIC_MINMAX(T, B)                                                          \
    static inline T atomicMax(T *p, T v) {                                                 \
        return bertc_emu::atomic_update<T, B>(p, [v](T o) { return o > v ? o : v; });       \
    }                                                                                      \
    static inline T atomicMin(T *p, T v) {                                                 \
        return bertc_emu::atomic_update<T, B>(p, [v](T o) { return o < v ? o : v; });       \
    }
BERTC_EMU_ATOMIC_MINMAX(int, int)
BERTC_EMU_ATOMIC_MINMAX(unsigned, unsigned)
BERTC_EMU_ATOMIC_MINMAX(long long, long long)
BERTC_EMU_ATOMIC_MINMAX(unsigned long long, unsigned long long)
#undef BERTC_EMU_ATOMIC_MINMAX
static inline unsigned atomicInc(unsigned *p, unsigned v) {
    return bertc_emu::atomic_update<unsigned, unsigned>(p, [v](unsigned o) { return o >= v ? 0u : o + 1u; });
}
static inline unsigned atomicDec(unsigned *p, unsigned v) {
    return bertc_emu::atomic_update<unsigned, unsigned>(
        p, [v](unsigned o) { return (o == 0u || o > v) ? v : o - 1u; });
}
#define BERTC_EMU_ATOMIC_CAS(T)                                                                \
    static inline T atomicCAS(T *p, T compare, T val) {                                    \
        __atomic_compare_exchange_n(p, &compare, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
        return compare;                                                                    \
    }
BERTC_EMU_ATOMIC_CAS(int)
BERTC_EMU_ATOMIC_CAS(unsigned)
BERTC_EMU_ATOMIC_CAS(unsigned long long)
BERTC_EMU_ATOMIC_CAS(unsigned short)
#undef BERTC_EMU_ATOMIC_CAS
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicCAS_block atomicCAS
#define atomicExch_block atomicExch

/* ------------------------------------------------------------ math */
/* Generic names: float and double overloads (an int argument goes to double). */
#define BERTC_EMU_MATH1(name, fbuiltin, dbuiltin)                                              \
    static inline float bertc_emu_##name(float x) { return fbuiltin(x); }                  \
    static inline double bertc_emu_##name(double x) { return dbuiltin(x); }                \
    static inline double bertc_emu_##name(int x) { return dbuiltin((double)x); }
#define BERTC_EMU_MATH2(name, fbuiltin, dbuiltin)                                              \
    static inline float bertc_emu_##name(float x, float y) { return fbuiltin(x, y); }      \
    static inline double bertc_emu_##name(double x, double y) { return dbuiltin(x, y); }
/* float-only names. */
#define BERTC_EMU_MATHF1(name, builtin) \
    static inline float bertc_emu_##name(float x) { return builtin(x); }
#define BERTC_EMU_MATHF2(name, builtin) \
    static inline float bertc_emu_##name(float x, float y) { return builtin(x, y); }

BERTC_EMU_MATH1(exp, __builtin_expf, __builtin_exp)
BERTC_EMU_MATH1(exp2, __builtin_exp2f, __builtin_exp2)
BERTC_EMU_MATH1(expm1, __builtin_expm1f, __builtin_expm1)
BERTC_EMU_MATH1(log, __builtin_logf, __builtin_log)
BERTC_EMU_MATH1(log2, __builtin_log2f, __builtin_log2)
BERTC_EMU_MATH1(log10, __builtin_log10f, __builtin_log10)
BERTC_EMU_MATH1(log1p, __builtin_log1pf, __builtin_log1p)
BERTC_EMU_MATH1(sqrt, __builtin_sqrtf, __builtin_sqrt)
BERTC_EMU_MATH1(cbrt, __builtin_cbrtf, __builtin_cbrt)
BERTC_EMU_MATH1(erf, __builtin_erff, __builtin_erf)
BERTC_EMU_MATH1(erfc, __builtin_erfcf, __builtin_erfc)
BERTC_EMU_MATH1(tanh, __builtin_tanhf, __builtin_tanh)
BERTC_EMU_MATH1(sinh, __builtin_sinhf, __builtin_sinh)
BERTC_EMU_MATH1(cosh, __builtin_coshf, __builtin_cosh)
BERTC_EMU_MATH1(sin, __builtin_sinf, __builtin_sin)
BERTC_EMU_MATH1(cos, __builtin_cosf, __builtin_cos)
BERTC_EMU_MATH1(tan, __builtin_tanf, __builtin_tan)
BERTC_EMU_MATH1(asin, __builtin_asinf, __builtin_asin)
BERTC_EMU_MATH1(acos, __builtin_acosf, __builtin_acos)
BERTC_EMU_MATH1(atan, __builtin_atanf, __builtin_atan)
BERTC_EMU_MATH1(fabs, __builtin_fabsf, __builtin_fabs)
BERTC_EMU_MATH1(floor, __builtin_floorf, __builtin_floor)
BERTC_EMU_MATH1(ceil, __builtin_ceilf, __builtin_ceil)
BERTC_EMU_MATH1(round, __builtin_roundf, __builtin_round)
BERTC_EMU_MATH1(trunc, __builtin_truncf, __builtin_trunc)
BERTC_EMU_MATH1(rint, __builtin_rintf, __builtin_rint)
BERTC_EMU_MATH1(nearbyint, __builtin_nearbyintf, __builtin_nearbyint)
BERTC_EMU_MATH2(pow, __builtin_powf, __builtin_pow)
BERTC_EMU_MATH2(fmax, __builtin_fmaxf, __builtin_fmax)
BERTC_EMU_MATH2(fmin, __builtin_fminf, __builtin_fmin)
BERTC_EMU_MATH2(fmod, __builtin_fmodf, __builtin_fmod)
BERTC_EMU_MATH2(atan2, __builtin_atan2f, __builtin_atan2)
BERTC_EMU_MATH2(hypot, __builtin_hypotf, __builtin_hypot)
BERTC_EMU_MATH2(copysign, __builtin_copysignf, __builtin_copysign)
static inline float bertc_emu_fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double bertc_emu_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
static inline float bertc_emu_ldexp(float x, int e) { return __builtin_ldexpf(x, e); }
static inline double bertc_emu_ldexp(double x, int e) { return __builtin_ldexp(x, e); }

BERTC_EMU_MATHF1(expf, __builtin_expf)
BERTC_EMU_MATHF1(exp2f, __builtin_exp2f)
BERTC_EMU_MATHF1(exp10f, __builtin_exp10f)
BERTC_EMU_MATHF1(expm1f, __builtin_expm1f)
BERTC_EMU_MATHF1(logf, __builtin_logf)
BERTC_EMU_MATHF1(log2f, __builtin_log2f)
BERTC_EMU_MATHF1(log10f, __builtin_log10f)
BERTC_EMU_MATHF1(log1pf, __builtin_log1pf)
BERTC_EMU_MATHF1(sqrtf, __builtin_sqrtf)
BERTC_EMU_MATHF1(cbrtf, __builtin_cbrtf)
BERTC_EMU_MATHF1(erff, __builtin_erff)
BERTC_EMU_MATHF1(erfcf, __builtin_erfcf)
BERTC_EMU_MATHF1(tanhf, __builtin_tanhf)
BERTC_EMU_MATHF1(sinhf, __builtin_sinhf)
BERTC_EMU_MATHF1(coshf, __builtin_coshf)
BERTC_EMU_MATHF1(sinf, __builtin_sinf)
BERTC_EMU_MATHF1(cosf, __builtin_cosf)
BERTC_EMU_MATHF1(tanf, __builtin_tanf)
BERTC_EMU_MATHF1(asinf, __builtin_asinf)
BERTC_EMU_MATHF1(acosf, __builtin_acosf)
BERTC_EMU_MATHF1(atanf, __builtin_atanf)
BERTC_EMU_MATHF1(fabsf, __builtin_fabsf)
BERTC_EMU_MATHF1(floorf, __builtin_floorf)
BERTC_EMU_MATHF1(ceilf, __builtin_ceilf)
BERTC_EMU_MATHF1(roundf, __builtin_roundf)
BERTC_EMU_MATHF1(truncf, __builtin_truncf)
BERTC_EMU_MATHF1(rintf, __builtin_rintf)
BERTC_EMU_MATHF1(nearbyintf, __builtin_nearbyintf)
BERTC_EMU_MATHF2(powf, __builtin_powf)
BERTC_EMU_MATHF2(fmaxf, __builtin_fmaxf)
BERTC_EMU_MATHF2(fminf, __builtin_fminf)
BERTC_EMU_MATHF2(fmodf, __builtin_fmodf)
BERTC_EMU_MATHF2(atan2f, __builtin_atan2f)
BERTC_EMU_MATHF2(hypotf, __builtin_hypotf)
BERTC_EMU_MATHF2(copysignf, __builtin_copysignf)
static inline float bertc_emu_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline float bertc_emu_ldexpf(float x, int e) { return __builtin_ldexpf(x, e); }
static inline void bertc_emu_sincosf(float x, float *s, float *c) { *s = __builtin_sinf(x); *c = __builtin_cosf(x); }
static inline float bertc_emu_rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
static inline double bertc_emu_rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
static inline float bertc_emu_rcp(float x) { return 1.0f / x; }
#undef BERTC_EMU_MATH1
#undef BERTC_EMU_MATH2
#undef BERTC_EMU_MATHF1
#undef BERTC_EMU_MATHF2

#define exp bertc_emu_exp
#define exp2 bertc_emu_exp2
#define expm1 bertc_emu_expm1
#define log bertc_emu_log
#define log2 bertc_emu_log2
#define log10 bertc_emu_log10
#define log1p bertc_emu_log1p
#define sqrt bertc_emu_sqrt
#define cbrt bertc_emu_cbrt
#define erf bertc_emu_erf
#define erfc bertc_emu_erfc
#define tanh bertc_emu_tanh
#define sinh bertc_emu_sinh
#define cosh bertc_emu_cosh
#define sin bertc_emu_sin
#define cos bertc_emu_cos
#define tan bertc_emu_tan
#define asin bertc_emu_asin
#define acos bertc_emu_acos
#define atan bertc_emu_atan
#define fabs bertc_emu_fabs
#define floor bertc_emu_floor
#define ceil bertc_emu_ceil
#define round bertc_emu_round
#define trunc bertc_emu_trunc
#define rint bertc_emu_rint
#define nearbyint bertc_emu_nearbyint
#define pow bertc_emu_pow
#define fmax bertc_emu_fmax
#define fmin bertc_emu_fmin
#define fmod bertc_emu_fmod
#define atan2 bertc_emu_atan2
#define hypot bertc_emu_hypot
#define copysign bertc_emu_copysign
#define fma bertc_emu_fma
#define ldexp bertc_emu_ldexp
#define rsqrt bertc_emu_rsqrt
#define expf bertc_emu_expf
#define exp2f bertc_emu_exp2f
#define exp10f bertc_emu_exp10f
#define expm1f bertc_emu_expm1f
#define logf bertc_emu_logf
#define log2f bertc_emu_log2f
#define log10f bertc_emu_log10f
#define log1pf bertc_emu_log1pf
#define sqrtf bertc_emu_sqrtf
#define cbrtf bertc_emu_cbrtf
#define erff bertc_emu_erff
#define erfcf bertc_emu_erfcf
#define tanhf bertc_emu_tanhf
#define sinhf bertc_emu_sinhf
#define coshf bertc_emu_coshf
#define sinf bertc_emu_sinf
#define cosf bertc_emu_cosf
#define tanf bertc_emu_tanf
#define asinf bertc_emu_asinf
#define acosf bertc_emu_acosf
#define atanf bertc_emu_atanf
#define fabsf bertc_emu_fabsf
#define floorf bertc_emu_floorf
#define ceilf bertc_emu_ceilf
#define roundf bertc_emu_roundf
#define truncf bertc_emu_truncf
#define rintf bertc_emu_rintf
#define nearbyintf bertc_emu_nearbyintf
#define powf bertc_emu_powf
#define fmaxf bertc_emu_fmaxf
#define fminf bertc_emu_fminf
#define fmodf bertc_emu_fmodf
#define atan2f bertc_emu_atan2f
#define hypotf bertc_emu_hypotf
#define copysignf bertc_emu_copysignf
#define fmaf bertc_emu_fmaf
#define ldexpf bertc_emu_ldexpf
#define sincosf bertc_emu_sincosf
#define rsqrtf bertc_emu_rsqrtf

/* CUDA's fast intrinsics: the GPU computes approximations; the emulator the
 * exact function (compare with tolerances).  glibc declares several of
 * these names itself, hence the macros. */
#define __expf bertc_emu_expf
#define __exp10f bertc_emu_exp10f
#define __logf bertc_emu_logf
#define __log2f bertc_emu_log2f
#define __log10f bertc_emu_log10f
#define __powf bertc_emu_powf
#define __sinf bertc_emu_sinf
#define __cosf bertc_emu_cosf
#define __tanf bertc_emu_tanf
#define __tanhf bertc_emu_tanhf
#define __sincosf bertc_emu_sincosf
#define __frsqrt_rn bertc_emu_rsqrtf
#define __frcp_rn bertc_emu_rcp
#define __fsqrt_rn bertc_emu_sqrtf
static inline float bertc_emu_fdividef(float a, float b) { return a / b; }
static inline float bertc_emu_fadd(float a, float b) { return a + b; }
static inline float bertc_emu_fsub(float a, float b) { return a - b; }
static inline float bertc_emu_fmul(float a, float b) { return a * b; }
static inline float bertc_emu_saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
#define __fdividef bertc_emu_fdividef
#define __fdiv_rn bertc_emu_fdividef
#define __fadd_rn bertc_emu_fadd
#define __fsub_rn bertc_emu_fsub
#define __fmul_rn bertc_emu_fmul
#define __fmaf_rn bertc_emu_fmaf
#define __saturatef bertc_emu_saturatef

/* Classification (CUDA device code has these as overloaded functions). */
static inline bool bertc_emu_isnan(float x) { return __builtin_isnan(x); }
static inline bool bertc_emu_isnan(double x) { return __builtin_isnan(x); }
static inline bool bertc_emu_isinf(float x) { return __builtin_isinf(x); }
static inline bool bertc_emu_isinf(double x) { return __builtin_isinf(x); }
static inline bool bertc_emu_isfinite(float x) { return __builtin_isfinite(x); }
static inline bool bertc_emu_isfinite(double x) { return __builtin_isfinite(x); }
static inline bool bertc_emu_signbit(float x) { return __builtin_signbit(x); }
static inline bool bertc_emu_signbit(double x) { return __builtin_signbit(x); }
#define isnan bertc_emu_isnan
#define isinf bertc_emu_isinf
#define isfinite bertc_emu_isfinite
#define signbit bertc_emu_signbit

static inline int bertc_emu_abs(int x) { return x < 0 ? -x : x; }
static inline long long bertc_emu_abs(long long x) { return x < 0 ? -x : x; }
static inline float bertc_emu_abs(float x) { return __builtin_fabsf(x); }
static inline double bertc_emu_abs(double x) { return __builtin_fabs(x); }
static inline long long bertc_emu_llabs(long long x) { return x < 0 ? -x : x; }
#define abs bertc_emu_abs
#define llabs bertc_emu_llabs

/* CUDA's global min/max overloads (not C library names). */
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return __builtin_fminf(a, b); }
static inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
static inline double min(double a, double b) { return __builtin_fmin(a, b); }
static inline double max(double a, double b) { return __builtin_fmax(a, b); }
static inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
static inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }

/* Bit reinterpretation and conversions. */
static inline float __int_as_float(int i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; __builtin_memcpy(&i, &f, 4); return i; }
static inline float __uint_as_float(unsigned i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned i; __builtin_memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double f; __builtin_memcpy(&f, &i, 8); return f; }
static inline long long __double_as_longlong(double f) { long long i; __builtin_memcpy(&i, &f, 8); return i; }
/* float -> int as the GPU's cvt: saturating, NaN -> 0. */
static inline int bertc_emu_f2i(float r) {
    if (r != r) return 0;
    if (r >= 2147483648.0f) return 2147483647;
    if (r < -2147483648.0f) return (-2147483647 - 1);
    return (int)r;
}
static inline int __float2int_rn(float x) { return bertc_emu_f2i(__builtin_rintf(x)); }
static inline int __float2int_rz(float x) { return bertc_emu_f2i(__builtin_truncf(x)); }
static inline int __float2int_rd(float x) { return bertc_emu_f2i(__builtin_floorf(x)); }
static inline int __float2int_ru(float x) { return bertc_emu_f2i(__builtin_ceilf(x)); }
static inline unsigned __float2uint_rz(float x) {
    if (!(x > 0.0f)) return 0u;
    if (x >= 4294967296.0f) return 0xffffffffu;
    return (unsigned)x;
}
static inline unsigned __float2uint_rn(float x) { return __float2uint_rz(__builtin_rintf(x)); }
static inline float __int2float_rn(int i) { return (float)i; }
static inline float __uint2float_rn(unsigned i) { return (float)i; }
static inline float __double2float_rn(double d) { return (float)d; }

/* Integer intrinsics. */
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (((s >> (4 * i)) & 7u) * 8)) & 0xffu) << (8 * i);
    return r;
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)((v << (s & 31u)) >> 32);
}
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned)(v >> (s & 31u));
}

/* Cache-hinted loads and stores are plain accesses here. */
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline T __ldca(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }
template <typename T> static inline T __ldlu(const T *p) { return *p; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
template <typename T> static inline void __stwb(T *p, T v) { *p = v; }

/* ------------------------------------------------------------ 16-bit floats */
#include "include/cuda_fp16.h"
#include "include/cuda_bf16.h"

/* ------------------------------------------------------------ kernel export */
namespace bertc_emu {

template <unsigned... I> struct index_seq {};
template <unsigned N, unsigned... I> struct make_index_seq : make_index_seq<N - 1, N - 1, I...> {};
template <unsigned... I> struct make_index_seq<0, I...> { typedef index_seq<I...> type; };

template <typename T> static inline T load_arg(void *p) {
    T v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

template <typename F> struct kernel_traits;
template <typename... A> struct kernel_traits<void (*)(A...)> {
    static constexpr unsigned nargs = sizeof...(A);
    static constexpr unsigned sizes[sizeof...(A) + 1] = {(unsigned)sizeof(A)..., 0u};
    template <void (*F)(A...), unsigned... I> static void call(void **args, index_seq<I...>) {
        (void)args;
        F(load_arg<A>(args[I])...);
    }
    template <void (*F)(A...)> static void thunk(void **args) {
        call<F>(args, typename make_index_seq<sizeof...(A)>::type{});
    }
};

} /* namespace bertc_emu */

extern "C" __attribute__((weak, visibility("default"))) const unsigned bertc_emu_image_abi =
    BERTC_EMU_ABI_VERSION;

#define BERTC_KERNEL_EXPORT(entry)                                                          \
    extern "C" __attribute__((visibility("default"))) const bertc_emu_kernel entry##__emu = { \
        BERTC_EMU_ABI_VERSION,                                                              \
        ::bertc_emu::kernel_traits<decltype(&entry)>::nargs,                                \
        #entry,                                                                             \
        ::bertc_emu::kernel_traits<decltype(&entry)>::sizes,                                \
        BERTC_EMU_KERNEL_FLAGS,                                                             \
        &::bertc_emu::kernel_traits<decltype(&entry)>::template thunk<&entry>,              \
    };

#endif
