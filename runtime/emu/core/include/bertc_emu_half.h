/*
 * bertc_emu_half — the bit-exact 16-bit float shim behind the emulator's
 * stand-ins for cuda_fp16.h and cuda_bf16.h.
 *
 * Generated kernels store activations as __half or __nv_bfloat16 and do
 * all arithmetic in float, so what must match the GPU bit for bit is the
 * conversions: float -> half/bf16 rounds to nearest, ties to even
 * (cvt.rn), half/bf16 -> float is exact.  The conversions are bertc's one
 * implementation (runtime/common/half.h, embedded beside this prelude),
 * in its CUDA flavour: a NaN converts to the canonical 0x7fff, and a half
 * NaN widens to 0x7fffffff, instead of the x86 payload rule.
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
 * it relies on nothing but half.h and compiler builtins.
 */
#ifndef BERTC_EMU_HALF_H
#define BERTC_EMU_HALF_H

#include "half.h"

namespace bertc_emu {

static inline unsigned short f32_to_f16(float f) { return half_f32_to_f16_cvt(f); }
static inline float f16_to_f32(unsigned short h) { return half_f16_to_f32_cvt(h); }
static inline unsigned short f32_to_bf16(float f) { return half_f32_to_bf16_cvt(f); }
static inline float bf16_to_f32(unsigned short h) { return half_bf16_to_f32(h); }
static inline unsigned short f64_to_f16(double d) { return half_f64_to_f16_cvt(d); }
static inline unsigned short f64_to_bf16(double d) { return half_f64_to_bf16_cvt(d); }

} /* namespace bertc_emu */

#endif
