/*
 * cuda_bf16.h — the emulated device's stand-in for the CUDA toolkit header.
 *
 * The bfloat16 twin of cuda_fp16.h here: __nv_bfloat16 and __nv_bfloat162
 * with implicit float conversions and operators, the conversion intrinsics,
 * and the __h* arithmetic overloads CUDA provides for bfloat16 too.  Float
 * to bfloat16 rounds to nearest even with NaN -> 0x7fff (the GPU's
 * cvt.rn.bf16.f32); bfloat16 to float is exact.
 */
#ifndef BERTC_EMU_CUDA_BF16_H
#define BERTC_EMU_CUDA_BF16_H

#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};

struct __nv_bfloat162_raw {
    unsigned short x, y;
};

struct __align__(2) __nv_bfloat16 {
    unsigned short __x;

    __nv_bfloat16() = default;
    __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(bertc_emu::f32_to_bf16(f)) {}
    __nv_bfloat16(double d) : __x(bertc_emu::f64_to_bf16(d)) {}
    __nv_bfloat16(int i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16(unsigned i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16(long long i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16(unsigned long long i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16(short i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16(unsigned short i) : __x(bertc_emu::f64_to_bf16((double)i)) {}
    __nv_bfloat16 &operator=(const __nv_bfloat16_raw &r) { __x = r.x; return *this; }
    operator float() const { return bertc_emu::bf16_to_f32(__x); }
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
};

struct __align__(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;

    __nv_bfloat162() = default;
    __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw &r) { x.__x = r.x; y.__x = r.y; }
    operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static inline __nv_bfloat16 bertc_emu_bf16_from_bits(unsigned short b) {
    __nv_bfloat16 h;
    h.__x = b;
    return h;
}

/* ---- conversions */
static inline __nv_bfloat16 __float2bfloat16(float f) { return bertc_emu_bf16_from_bits(bertc_emu::f32_to_bf16(f)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return bertc_emu_bf16_from_bits(bertc_emu::f64_to_bf16(d)); }
static inline float __bfloat162float(__nv_bfloat16 h) { return bertc_emu::bf16_to_f32(h.__x); }
static inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __double2bfloat16((double)i); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return bertc_emu_bf16_from_bits(b); }
static inline __nv_bfloat16 __short_as_bfloat16(short b) { return bertc_emu_bf16_from_bits((unsigned short)b); }

static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) {
    return __nv_bfloat162(__float2bfloat16(f), __float2bfloat16(f));
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b));
}
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }

/* ---- arithmetic: the __h* names are overloaded for bfloat16 as in CUDA */
static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(__bfloat162float(a) + __bfloat162float(b));
}
static inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(__bfloat162float(a) - __bfloat162float(b));
}
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(__bfloat162float(a) * __bfloat162float(b));
}
static inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(__bfloat162float(a) / __bfloat162float(b));
}
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __double2bfloat16((double)__bfloat162float(a) * (double)__bfloat162float(b) +
                             (double)__bfloat162float(c));
}
static inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return bertc_emu_bf16_from_bits((unsigned short)(a.__x ^ 0x8000u)); }
static inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return bertc_emu_bf16_from_bits((unsigned short)(a.__x & 0x7fffu)); }
static inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
static inline int __hisinf(__nv_bfloat16 a) {
    return (a.__x & 0x7fffu) == 0x7f80u ? ((a.__x & 0x8000u) ? -1 : 1) : 0;
}
static inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
    if (__hisnan(a)) return __hisnan(b) ? bertc_emu_bf16_from_bits(0x7fffu) : b;
    if (__hisnan(b)) return a;
    return __bfloat162float(a) >= __bfloat162float(b) ? a : b;
}
static inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
    if (__hisnan(a)) return __hisnan(b) ? bertc_emu_bf16_from_bits(0x7fffu) : b;
    if (__hisnan(b)) return a;
    return __bfloat162float(a) <= __bfloat162float(b) ? a : b;
}
static inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) == __bfloat162float(b); }
static inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) != __bfloat162float(b); }
static inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) < __bfloat162float(b); }
static inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) <= __bfloat162float(b); }
static inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) > __bfloat162float(b); }
static inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) >= __bfloat162float(b); }

static inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) {
    return __nv_bfloat162(__hadd(a.x, b.x), __hadd(a.y, b.y));
}
static inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) {
    return __nv_bfloat162(__hsub(a.x, b.x), __hsub(a.y, b.y));
}
static inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) {
    return __nv_bfloat162(__hmul(a.x, b.x), __hmul(a.y, b.y));
}
static inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}
static inline __nv_bfloat162 __hmax2(__nv_bfloat162 a, __nv_bfloat162 b) {
    return __nv_bfloat162(__hmax(a.x, b.x), __hmax(a.y, b.y));
}

/* ---- operators */
static inline __nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hadd(a, b); }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hsub(a, b); }
static inline __nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hmul(a, b); }
static inline __nv_bfloat16 operator/(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hdiv(a, b); }
static inline __nv_bfloat16 &operator+=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hadd(a, b); }
static inline __nv_bfloat16 &operator-=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hsub(a, b); }
static inline __nv_bfloat16 &operator*=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hmul(a, b); }
static inline __nv_bfloat16 &operator/=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hdiv(a, b); }
static inline __nv_bfloat16 operator+(const __nv_bfloat16 &a) { return a; }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a) { return __hneg(a); }
static inline bool operator==(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __heq(a, b); }
static inline bool operator!=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hne(a, b); }
static inline bool operator<(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hlt(a, b); }
static inline bool operator<=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hle(a, b); }
static inline bool operator>(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hgt(a, b); }
static inline bool operator>=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hge(a, b); }

static inline __nv_bfloat162 operator+(const __nv_bfloat162 &a, const __nv_bfloat162 &b) { return __hadd2(a, b); }
static inline __nv_bfloat162 operator*(const __nv_bfloat162 &a, const __nv_bfloat162 &b) { return __hmul2(a, b); }

#endif
