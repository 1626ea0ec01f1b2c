/*
 * images — a plan's kernel images: the generated kernels compiled for each
 * target, stored in the plan (the pipeline's "build images" step).
 *
 * For the GPU architectures of the target list, NVRTC builds a CUBIN per
 * architecture and the PTX of the lowest (kbuild.h); for "emu", the host
 * C++ compiler builds the emulated device's image (emu_build.h).  Each
 * CUBIN carries ptxas's per-kernel report (registers, spills, static
 * shared memory) in the plan's kernel order, which `bertc inspect` shows.
 */
#ifndef BERTC_IMAGES_H
#define BERTC_IMAGES_H

#include "arch.h"
#include "diag.h"
#include "plan.h"

/* Appends the images for `targets` to p (whose kernels have their sources);
 * `jobs` architectures compile at once. */
int images_build(plan *p, const arch_list *targets, int jobs, diag *d);

#endif
