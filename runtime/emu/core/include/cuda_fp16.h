/*
 * cuda_fp16.h — the emulated device's stand-in for the CUDA toolkit header.
 *
 * Kernel text written for NVRTC says `#include <cuda_fp16.h>`; the emulator
 * compiles it with -I pointing here, so this file answers instead of the
 * toolkit's (which needs nvcc's built-ins and cannot go through g++).  It
 * provides the part of the API that device code uses — the __half and
 * __half2 types with their implicit float conversions and operators, and
 * the conversion and arithmetic intrinsics — with the GPU's rounding
 * (see bertc_emu_half.h for how and why).  Anything not here fails to
 * compile loudly rather than behave differently.
 */
#ifndef BERTC_EMU_CUDA_FP16_H
#define BERTC_EMU_CUDA_FP16_H

#include "bertc_emu_half.h"

#ifndef BERTC_EMU_PRELUDE_H
#error "cuda_fp16.h stand-in: compile with -include cuda_prelude.h"
#endif

struct __half_raw {
    unsigned short x;
};

struct __half2_raw {
    unsigned short x, y;
};

struct __align__(2) __half {
    unsigned short __x;

    __half() = default;
    __half(const __half_raw &r) : __x(r.x) {}
    __half(float f) : __x(bertc_emu::f32_to_f16(f)) {}
    __half(double d) : __x(bertc_emu::f64_to_f16(d)) {}
    __half(int i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half(unsigned i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half(long long i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half(unsigned long long i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half(short i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half(unsigned short i) : __x(bertc_emu::f64_to_f16((double)i)) {}
    __half &operator=(const __half_raw &r) { __x = r.x; return *this; }
    operator float() const { return bertc_emu::f16_to_f32(__x); }
    operator __half_raw() const { return __half_raw{__x}; }
};

struct __align__(4) __half2 {
    __half x, y;

    __half2() = default;
    __half2(const __half &a, const __half &b) : x(a), y(b) {}
    __half2(const __half2_raw &r) { x.__x = r.x; y.__x = r.y; }
    operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};

typedef __half half;
typedef __half2 half2;

static inline __half bertc_emu_half_from_bits(unsigned short b) {
    __half h;
    h.__x = b;
    return h;
}

/* ---- conversions */
static inline __half __float2half(float f) { return bertc_emu_half_from_bits(bertc_emu::f32_to_f16(f)); }
static inline __half __float2half_rn(float f) { return __float2half(f); }
static inline __half __double2half(double d) { return bertc_emu_half_from_bits(bertc_emu::f64_to_f16(d)); }
static inline float __half2float(__half h) { return bertc_emu::f16_to_f32(h.__x); }
static inline __half __int2half_rn(int i) { return __double2half((double)i); }
static inline __half __uint2half_rn(unsigned i) { return __double2half((double)i); }
static inline int __half2int_rz(__half h) { return (int)__half2float(h); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short b) { return bertc_emu_half_from_bits(b); }
static inline __half __short_as_half(short b) { return bertc_emu_half_from_bits((unsigned short)b); }

static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __low2half2(__half2 h) { return __half2(h.x, h.x); }
static inline __half2 __high2half2(__half2 h) { return __half2(h.y, h.y); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }

/* ---- arithmetic: in float (double for fma), one rounding */
static inline __half __hadd(__half a, __half b) { return __float2half(__half2float(a) + __half2float(b)); }
static inline __half __hsub(__half a, __half b) { return __float2half(__half2float(a) - __half2float(b)); }
static inline __half __hmul(__half a, __half b) { return __float2half(__half2float(a) * __half2float(b)); }
static inline __half __hdiv(__half a, __half b) { return __float2half(__half2float(a) / __half2float(b)); }
static inline __half __hfma(__half a, __half b, __half c) {
    return __double2half((double)__half2float(a) * (double)__half2float(b) + (double)__half2float(c));
}
static inline __half __hneg(__half a) { return bertc_emu_half_from_bits((unsigned short)(a.__x ^ 0x8000u)); }
static inline __half __habs(__half a) { return bertc_emu_half_from_bits((unsigned short)(a.__x & 0x7fffu)); }
static inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
static inline int __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u ? ((a.__x & 0x8000u) ? -1 : 1) : 0; }
static inline __half __hmax(__half a, __half b) {
    if (__hisnan(a)) return __hisnan(b) ? bertc_emu_half_from_bits(0x7fffu) : b;
    if (__hisnan(b)) return a;
    return __half2float(a) >= __half2float(b) ? a : b;
}
static inline __half __hmin(__half a, __half b) {
    if (__hisnan(a)) return __hisnan(b) ? bertc_emu_half_from_bits(0x7fffu) : b;
    if (__hisnan(b)) return a;
    return __half2float(a) <= __half2float(b) ? a : b;
}
static inline bool __heq(__half a, __half b) { return __half2float(a) == __half2float(b); }
static inline bool __hne(__half a, __half b) { return __half2float(a) != __half2float(b); }
static inline bool __hlt(__half a, __half b) { return __half2float(a) < __half2float(b); }
static inline bool __hle(__half a, __half b) { return __half2float(a) <= __half2float(b); }
static inline bool __hgt(__half a, __half b) { return __half2float(a) > __half2float(b); }
static inline bool __hge(__half a, __half b) { return __half2float(a) >= __half2float(b); }

static inline __half2 __hadd2(__half2 a, __half2 b) { return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
static inline __half2 __hsub2(__half2 a, __half2 b) { return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
static inline __half2 __hmul2(__half2 a, __half2 b) { return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
static inline __half2 __h2div(__half2 a, __half2 b) { return __half2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }
static inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
static inline __half2 __hneg2(__half2 a) { return __half2(__hneg(a.x), __hneg(a.y)); }
static inline __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
static inline __half2 __hmax2(__half2 a, __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
static inline __half2 __hmin2(__half2 a, __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }

/* ---- math (computed in float; the GPU's approximate versions differ in the last bit) */
static inline __half hexp(__half a) { return __float2half(__builtin_expf(__half2float(a))); }
static inline __half hlog(__half a) { return __float2half(__builtin_logf(__half2float(a))); }
static inline __half hsqrt(__half a) { return __float2half(__builtin_sqrtf(__half2float(a))); }
static inline __half hrsqrt(__half a) { return __float2half(1.0f / __builtin_sqrtf(__half2float(a))); }
static inline __half hrcp(__half a) { return __float2half(1.0f / __half2float(a)); }
static inline __half htanh(__half a) { return __float2half(__builtin_tanhf(__half2float(a))); }

/* ---- operators (CUDA defines these for device code) */
static inline __half operator+(const __half &a, const __half &b) { return __hadd(a, b); }
static inline __half operator-(const __half &a, const __half &b) { return __hsub(a, b); }
static inline __half operator*(const __half &a, const __half &b) { return __hmul(a, b); }
static inline __half operator/(const __half &a, const __half &b) { return __hdiv(a, b); }
static inline __half &operator+=(__half &a, const __half &b) { return a = __hadd(a, b); }
static inline __half &operator-=(__half &a, const __half &b) { return a = __hsub(a, b); }
static inline __half &operator*=(__half &a, const __half &b) { return a = __hmul(a, b); }
static inline __half &operator/=(__half &a, const __half &b) { return a = __hdiv(a, b); }
static inline __half operator+(const __half &a) { return a; }
static inline __half operator-(const __half &a) { return __hneg(a); }
static inline bool operator==(const __half &a, const __half &b) { return __heq(a, b); }
static inline bool operator!=(const __half &a, const __half &b) { return __hne(a, b); }
static inline bool operator<(const __half &a, const __half &b) { return __hlt(a, b); }
static inline bool operator<=(const __half &a, const __half &b) { return __hle(a, b); }
static inline bool operator>(const __half &a, const __half &b) { return __hgt(a, b); }
static inline bool operator>=(const __half &a, const __half &b) { return __hge(a, b); }

static inline __half2 operator+(const __half2 &a, const __half2 &b) { return __hadd2(a, b); }
static inline __half2 operator-(const __half2 &a, const __half2 &b) { return __hsub2(a, b); }
static inline __half2 operator*(const __half2 &a, const __half2 &b) { return __hmul2(a, b); }
static inline __half2 operator/(const __half2 &a, const __half2 &b) { return __h2div(a, b); }
static inline __half2 &operator+=(__half2 &a, const __half2 &b) { return a = __hadd2(a, b); }
static inline __half2 &operator*=(__half2 &a, const __half2 &b) { return a = __hmul2(a, b); }
static inline __half2 operator-(const __half2 &a) { return __hneg2(a); }

#endif
