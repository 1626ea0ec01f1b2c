/*
 * images — a plan's kernel images: the generated kernels compiled for each
 * target, stored in the plan (the pipeline's "build images" step).
 *
 * For the GPU architectures of the target list, kbuild (kbuild.h) builds
 * CUBINs and the PTX of each target its front end ran for; for "emu", the
 * host C++ compiler builds the emulated device's image (emu_build.h).
 * Each CUBIN carries ptxas's per-kernel report (registers, spills, static
 * shared memory) in the plan's kernel order, which `bertc inspect` shows.
 *
 * The architectures list the GPUs the plan must serve.  A CUBIN is built
 * for each of them that no lower listed architecture of the same major
 * already serves: sm_80 code runs on 8.6 and 8.9 (the runtime's rule,
 * plan_image_select), so the default list sm_75 sm_80 sm_86 sm_89 sm_90
 * gives CUBINs for sm_75, sm_80 and sm_90, and PTX for compute_75 and
 * compute_80 (newer GPUs JIT the newest PTX they can).
 */
#ifndef BERTC_IMAGES_H
#define BERTC_IMAGES_H

#include "arch.h"
#include "diag.h"
#include "plan.h"

typedef struct images_options {
    int jobs;                    /* threads (>= 1) */
    int no_cache;                /* neither read nor write the compile cache (kcache.h) */
} images_options;

typedef struct images_report {
    int narchs_built;            /* CUBINs built (the others are served by one of them) */
    int njobs, cached_jobs;      /* kbuild's jobs; of them, taken from the cache */
    int ndistinct;               /* distinct kernel texts */
} images_report;

/* Appends the images for `targets` to p (whose kernels have their sources). */
int images_build(plan *p, const arch_list *targets, const images_options *o, images_report *r, diag *d);

/* The listed architectures that need a CUBIN of their own (the rest run a
 * lower listed one of the same major), in list order; their count. */
int images_archs_to_build(const arch_list *targets, const char **out);

#endif
