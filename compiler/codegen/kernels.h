/*
 * kernels — the catalogue of generated kernels: what each kernel computes,
 * its parameters, its argument ABI, and how its source text is produced.
 *
 * A kernel is a CUDA C++ template in kernels_templates/ specialised by
 * compile-time constants.  A `kernel_spec` says which template and which
 * constants; kernel_source() turns it into one self-contained translation
 * unit: a first comment naming the template and every parameter, the device
 * helper header, the template text, and an `extern "C"` entry point whose
 * name encodes the parameters (so equal specs give equal names and equal
 * text, and the compile cache can dedupe by content).  The same text is
 * compiled by NVRTC for every GPU architecture and by the host compiler for
 * the emulated device (with BERTC_EMU defined and the emulator prelude
 * force-included), so there is exactly one kernel source of truth.
 *
 * Every kernel receives the *request block* (`const int *req`), device
 * memory laid out as
 *
 *     int32 len;                 real sequence length L, 1 <= L <= bucket
 *     int32 reserved[3];
 *     int32 input_ids[bucket];
 *     int32 token_type_ids[bucket];
 *     int32 attention_mask[bucket];
 *
 * which the runtime fills with one host-to-device copy per request.  The
 * bucket length is a compile-time constant of each kernel; the real length
 * is read from device memory, so one captured CUDA Graph serves every
 * length of its bucket.  Rows >= L are padding: kernels may skip them, and
 * no output row < L may depend on what padding rows hold.
 *
 * Activations and weights are stored in the plan precision `dtype`
 * (float32, float16 or bfloat16); every kernel accumulates in float32.
 * Matrices are row-major with the leading dimension given explicitly.
 */
#ifndef BERTC_KERNELS_H
#define BERTC_KERNELS_H

#include <stddef.h>

#include "diag.h"
#include "plan_types.h"

/*
 * Generated source for one kernel: *text (malloc'd, NUL-terminated) and
 * *entry (malloc'd entry-point name).  The text needs only cuda_fp16.h and
 * cuda_bf16.h from the toolkit (or the emulator's stand-ins).
 */
int kernel_source(const kernel_spec *s, char **text, char **entry, diag *d);
/* Grid, block and dynamic shared memory for a spec (bucket-sized grid). */
int kernel_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
/* Number of pointer arguments of a kind (all arguments are pointers). */
int kernel_arg_count(kernel_kind kind);
const char *kernel_kind_name(kernel_kind kind);   /* "embed_ln", ... = template file stem */

#endif
