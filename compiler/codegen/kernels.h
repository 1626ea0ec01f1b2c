/*
 * kernels — the catalogue of generated kernels: for a `kernel_spec` (the
 * plan's vocabulary, plan_types.h: which template, which constants), its
 * entry name, its launch geometry and its source text.
 *
 * A kernel is a CUDA C++ template in kernels_templates/ specialised by
 * compile-time constants.  kernel_source() turns a spec into one
 * self-contained translation unit: a first comment naming the template and
 * every parameter, the device helper header, the template text, and an
 * `extern "C"` entry point whose name encodes the parameters (so equal
 * specs give equal names and equal text, and the builds dedupe by
 * content).  The same text is compiled by NVRTC for every GPU architecture
 * and by the host compiler for the emulated device (with BERTC_EMU defined
 * and the emulator prelude force-included), so there is exactly one kernel
 * source of truth.
 *
 * The lowering asks only for names and geometry (kernel_entry,
 * kernel_dims): which kernels a plan needs is decided there, and
 * kernels_generate() writes their text afterwards, once per distinct
 * kernel — the pipeline's "generate kernels" step.
 *
 * Activations and weights are stored in the plan precision (float32,
 * float16 or bfloat16); every kernel accumulates in float32.  Matrices are
 * row-major with the leading dimension given explicitly.
 */
#ifndef BERTC_KERNELS_H
#define BERTC_KERNELS_H

#include <stddef.h>

#include "diag.h"
#include "plan.h"
#include "plan_types.h"

/* The entry-point name of a spec (malloc'd); checks the spec as kernel_source does. */
int kernel_entry(const kernel_spec *s, char **entry, diag *d);
/*
 * Generated source for one kernel: *text (malloc'd, NUL-terminated) and
 * *entry (malloc'd entry-point name).  The text needs only cuda_fp16.h and
 * cuda_bf16.h from the toolkit (or the emulator's stand-ins).
 */
int kernel_source(const kernel_spec *s, char **text, char **entry, diag *d);
/* Grid, block and dynamic shared memory for a launch of a spec in a bucket
 * of seq_len rows (a bucket-free spec's grid covers the bucket; a GEMM's
 * its own rows: kernel_spec_rows). */
int kernel_dims(const kernel_spec *s, int seq_len, kernel_launch_dims *dims, diag *d);
/* kernel_dims in a bucket that may be a token bucket of `seqs` sequences
 * (0: a length bucket). */
int kernel_dims_in(const kernel_spec *s, int seq_len, int seqs, kernel_launch_dims *dims, diag *d);
/*
 * The path a kernel's text takes on a GPU of architecture sm (75 for sm_75
 * or compute_75, ...): "mma.m16n8k16" or "mma.m16n8k8" (tensor cores) or
 * "simt" for the kinds that choose, NULL for the others (and for an
 * unchecked spec).  `bertc inspect` shows it per image: bfloat16 has no
 * tensor cores on sm_75, and the plan says so.
 */
const char *kernel_path(const kernel_spec *s, int sm);
/* Number of pointer arguments of a kind (all arguments are pointers); 0 if unknown. */
int kernel_arg_count(kernel_kind kind);
const char *kernel_kind_name(kernel_kind kind);   /* "embed_ln", ... = template file stem */

/* The source of every kernel of a lowered plan (p->kernels[i].source). */
int kernels_generate(plan *p, diag *d);

#endif
