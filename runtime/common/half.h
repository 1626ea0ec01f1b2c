/*
 * half — IEEE binary16 ("half", float16) and bfloat16 conversions: the one
 * implementation every part of bertc uses.
 *
 * The compiler converts weights to the plan precision with it, the runtime
 * widens outputs with it, the emulated device's stand-ins for cuda_fp16.h
 * and cuda_bf16.h are built on it (this header is embedded into bertc with
 * the emulator's prelude and compiled into every emulated kernel image),
 * and the tests compare against it.  Header-only, C11 and C++17, no
 * dependency beyond <stdint.h>: it must compile unchanged inside a kernel
 * image.
 *
 * Rounding is to nearest, ties to even, everywhere; widening is exact.  The
 * conversions are written out on bit patterns (no _Float16, no F16C), which
 * makes them independent of the compiler's own half support and lets the
 * tests use the compiler's _Float16 as an independent reference.
 *
 * NaN is the one place where two conventions are both right, so both are
 * here, named for where they apply:
 *
 *   half_*      IEEE conversions: a NaN stays a NaN of the same sign with
 *               its top payload bits, made quiet.  Used for data (weights,
 *               cuBLASLt's outputs on the emulated device).
 *   half_*_cvt  CUDA's conversion instructions (cvt.rn): every NaN becomes
 *               the canonical 0x7fff (narrowing) or 0x7fffffff (widening a
 *               half NaN).  Used by the emulated device's __half and
 *               __nv_bfloat16, so kernels see the GPU's bits.
 */
#ifndef BERTC_HALF_H
#define BERTC_HALF_H

#include <stdint.h>

static inline uint32_t half_f32_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}

static inline float half_f32_from_bits(uint32_t u) {
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
}

/* binary16 -> float, exact; a NaN keeps its payload. */
static inline float half_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return half_f32_from_bits(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return half_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* The bits of a float narrowed to binary16, finite and infinite values only
 * (the caller has handled NaN). */
static inline uint16_t half_f32_to_f16_finite(uint32_t u) {
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520, halfway past the largest half: inf */
    if (a >= 0x38800000u) {                                  /* normal half */
        uint32_t m = a - 0x38000000u;                        /* rebias the exponent 127 -> 15 */
        m += 0xfffu + ((m >> 13) & 1u);                      /* a carry correctly bumps the exponent */
        return (uint16_t)(sign | (m >> 13));
    }
    if (a <= 0x33000000u) return sign; /* <= 2^-25: rounds to zero */
    uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t s = 126u - e; /* subnormal: value = (mant >> s) * 2^-24, s in 14..24 */
    uint32_t k = mant >> s, rem = mant & ((1u << s) - 1u), halfway = 1u << (s - 1u);
    if (rem > halfway || (rem == halfway && (k & 1u))) k++;
    return (uint16_t)(sign | k);
}

/* float -> binary16, round to nearest even; a NaN keeps sign and top payload, made quiet. */
static inline uint16_t half_f32_to_f16(float f) {
    uint32_t u = half_f32_bits(f), a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((a >> 13) & 0x3ffu));
    return half_f32_to_f16_finite(u);
}

static inline float half_bf16_to_f32(uint16_t h) { return half_f32_from_bits((uint32_t)h << 16); }

/* float -> bfloat16, round to nearest even; a NaN keeps sign and top payload,
 * made quiet (a truncated payload could be zero, turning it into inf). */
static inline uint16_t half_f32_to_bf16(float f) {
    uint32_t u = half_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- CUDA's cvt.rn: canonical NaN ---------------------------------------- */

static inline uint16_t half_f32_to_f16_cvt(float f) {
    uint32_t u = half_f32_bits(f);
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)0x7fffu : half_f32_to_f16_finite(u);
}

static inline float half_f16_to_f32_cvt(uint16_t h) {
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) ? half_f32_from_bits(0x7fffffffu) : half_f16_to_f32(h);
}

static inline uint16_t half_f32_to_bf16_cvt(float f) {
    return (half_f32_bits(f) & 0x7fffffffu) > 0x7f800000u ? (uint16_t)0x7fffu : half_f32_to_bf16(f);
}

/*
 * double -> a binary format with `ebits` exponent and `mbits` mantissa bits
 * (binary16: 5/10, bfloat16: 8/7), one rounding to nearest even (never via
 * float, which would round twice), NaN -> 0x7fff.  For double and integer
 * sources, which are rare in kernels.
 */
static inline uint16_t half_f64_to_small_cvt(double x, int ebits, int mbits) {
    uint64_t u;
    __builtin_memcpy(&u, &x, sizeof u);
    uint32_t sign = (uint32_t)(u >> 63) << (ebits + mbits);
    uint64_t a = u & 0x7fffffffffffffffull;
    uint32_t inf = ((1u << ebits) - 1u) << mbits;
    if (a > 0x7ff0000000000000ull) return 0x7fffu;
    int bias = (1 << (ebits - 1)) - 1;
    int e = (int)(a >> 52) - 1023;
    if (e > bias) return (uint16_t)(sign | inf);
    if (a < 0x0010000000000000ull) return (uint16_t)sign; /* double subnormal: far below */
    uint64_t mant = (a & 0xfffffffffffffull) | 0x10000000000000ull;
    int q = e >= 1 - bias ? e - mbits : 1 - bias - mbits; /* the quantum's exponent */
    int s = 52 + q - e;
    if (s >= 54) return (uint16_t)sign;
    uint64_t k = mant >> s, rem = mant & ((1ull << s) - 1ull), halfway = 1ull << (s - 1);
    if (rem > halfway || (rem == halfway && (k & 1ull))) k++;
    uint64_t bits = k;
    if (e >= 1 - bias) bits = ((uint64_t)(e + bias) << mbits) + (k - (1ull << mbits));
    if (bits >= inf) bits = inf;
    return (uint16_t)(sign | (uint32_t)bits);
}

static inline uint16_t half_f64_to_f16_cvt(double x) { return half_f64_to_small_cvt(x, 5, 10); }
static inline uint16_t half_f64_to_bf16_cvt(double x) { return half_f64_to_small_cvt(x, 8, 7); }

#endif
