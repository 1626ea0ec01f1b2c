/*
 * bertc_emu_half — the bit-exact 16-bit float shim behind the emulator's
 * stand-ins for cuda_fp16.h and cuda_bf16.h.
 *
 * Generated kernels store activations as __half or __nv_bfloat16 and do
 * all arithmetic in float, so what must match the GPU bit for bit is the
 * conversions: float -> half/bf16 rounds to nearest, ties to even
 * (cvt.rn), half/bf16 -> float is exact.  The conversions are written out
 * on the bit patterns (no _Float16, no F16C instructions), which makes them
 * independent of the compiler's own half support, lets the tests compare
 * them against the compiler's _Float16 as an independent reference, and
 * lets NaN follow CUDA's rule (a NaN converts to the canonical 0x7fff, and
 * a half NaN widens to 0x7fffffff) instead of the x86 payload rule.
 *
 * Arithmetic on the types (+ - * / and the __h* intrinsics) is computed in
 * float and rounded once, which equals the correctly rounded half/bf16
 * result because float has more than twice their precision plus two bits;
 * fused multiply-add goes through double, where the product is exact.
 *
 * The types are trivially default-constructible (a `__shared__ __half
 * buf[N]` must need no dynamic initialisation) and mirror the CUDA API's
 * shape: implicit conversions from and to float, operator overloads, the
 * raw structs, the x/y pairs.  This header is included by the prelude, so
 * it can rely on nothing but compiler builtins.
 */
#ifndef BERTC_EMU_HALF_H
#define BERTC_EMU_HALF_H

namespace bertc_emu {

static inline unsigned f32_bits(float f) {
    unsigned u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(unsigned u) {
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
}

/* float -> IEEE binary16, round to nearest even, NaN -> 0x7fff. */
static inline unsigned short f32_to_f16(float f) {
    unsigned u = f32_bits(f);
    unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
    unsigned a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return 0x7fffu;
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  /* >= 65520: inf */
    if (a >= 0x38800000u) {                                          /* normal half */
        unsigned m = a - 0x38000000u;                                /* rebias 127 -> 15 */
        m += 0xfffu + ((m >> 13) & 1u);
        return (unsigned short)(sign | (m >> 13));
    }
    if (a <= 0x33000000u) return sign;                               /* <= 2^-25: zero */
    unsigned e = a >> 23;
    unsigned mant = (a & 0x7fffffu) | 0x800000u;
    unsigned s = 126u - e;                                           /* 14..24 */
    unsigned k = mant >> s;
    unsigned rem = mant & ((1u << s) - 1u);
    unsigned halfway = 1u << (s - 1u);
    if (rem > halfway || (rem == halfway && (k & 1u))) k++;
    return (unsigned short)(sign | k);
}

/*
 * double -> a binary format with `ebits` exponent and `mbits` mantissa bits
 * (binary16: 5/10, bfloat16: 8/7), one rounding to nearest even, NaN ->
 * 0x7fff.  Used for double and integer sources, which are rare; the float
 * paths below are the specialised fast ones.
 */
static inline unsigned short f64_to_small(double d, int ebits, int mbits) {
    unsigned long long u;
    __builtin_memcpy(&u, &d, sizeof u);
    unsigned sign = (unsigned)(u >> 63) << (ebits + mbits);
    unsigned long long a = u & 0x7fffffffffffffffull;
    unsigned inf = ((1u << ebits) - 1u) << mbits;
    if (a > 0x7ff0000000000000ull) return 0x7fffu;
    int bias = (1 << (ebits - 1)) - 1;
    int e = (int)(a >> 52) - 1023;
    if (e > bias) return (unsigned short)(sign | inf);
    if (a < 0x0010000000000000ull) return (unsigned short)sign;      /* double subnormal: far below */
    unsigned long long mant = (a & 0xfffffffffffffull) | 0x10000000000000ull;
    int q = e >= 1 - bias ? e - mbits : 1 - bias - mbits;             /* quantum exponent */
    int s = 52 + q - e;
    if (s >= 54) return (unsigned short)sign;
    unsigned long long k = mant >> s;
    unsigned long long rem = mant & ((1ull << s) - 1ull);
    unsigned long long halfway = 1ull << (s - 1);
    if (rem > halfway || (rem == halfway && (k & 1ull))) k++;
    unsigned long long bits = k;
    if (e >= 1 - bias) bits = ((unsigned long long)(e + bias) << mbits) + (k - (1ull << mbits));
    if (bits >= inf) bits = inf;
    return (unsigned short)(sign | (unsigned)bits);
}

static inline unsigned short f64_to_f16(double d) { return f64_to_small(d, 5, 10); }
static inline unsigned short f64_to_bf16(double d) { return f64_to_small(d, 8, 7); }

/* binary16 -> float, exact; NaN -> 0x7fffffff (CUDA's canonical NaN). */
static inline float f16_to_f32(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16;
    unsigned e = (h >> 10) & 0x1fu;
    unsigned m = h & 0x3ffu;
    if (e == 0x1fu) return f32_from_bits(m ? 0x7fffffffu : (sign | 0x7f800000u));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;                  /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* float -> bfloat16, round to nearest even, NaN -> 0x7fff. */
static inline unsigned short f32_to_bf16(float f) {
    unsigned u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

static inline float bf16_to_f32(unsigned short h) { return f32_from_bits((unsigned)h << 16); }

} /* namespace bertc_emu */

#endif
