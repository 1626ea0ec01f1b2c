/*
 * kbuild — compiles a plan's generated kernels for a set of GPU
 * architectures with NVRTC.
 *
 * Compile time is the user-visible cost of `bertc compile` (engine builds
 * that take minutes are what users of other engines complain about), so
 * the shape of the work matters more than anything inside it:
 *
 *  - identical texts are compiled once: units are deduplicated by content
 *    (a 64-bit hash, confirmed by comparing the bytes), since a 12-layer
 *    model asks for the same dozen kernels twelve times;
 *  - all distinct kernels go into ONE NVRTC program per architecture (the
 *    front end parses the shared headers once; this halves compile time
 *    against one program per kernel), each unit preceded by a `#line 1
 *    "<entry>.cu"` directive so NVRTC's messages name the kernel and the
 *    line within its own text;
 *  - the architectures compile in parallel on up to `jobs` threads (NVRTC
 *    programs are independent).
 *
 * Each architecture yields a CUBIN (-arch=sm_XX); the PTX the plan carries
 * for newer GPUs than any listed (arch_plan_ptx, arch.h: compute_80 and,
 * with an architecture of sm_90 or newer, compute_90) comes from the job
 * of that very architecture when it is listed, else from a PTX-only job
 * (-arch=compute_XX).  ptxas runs
 * verbose, and its report is parsed per entry point into kbuild_stats:
 * registers, spill bytes, static shared memory — `bertc inspect` shows
 * them, and the tests assert "no spills".
 *
 * A failed compile returns a diagnostic holding NVRTC's log and, for each
 * line an error points at, the surrounding lines of the generated text,
 * numbered, so the user sees the kernel that failed and not just a line
 * number.  Nothing here prints.
 */
#ifndef BERTC_KBUILD_H
#define BERTC_KBUILD_H

#include <stddef.h>

#include "diag.h"

/* One kernel to compile: its complete source and its extern "C" entry. */
typedef struct kbuild_unit {
    const char *text;
    const char *entry;         /* names the unit in messages and stats; may be NULL */
} kbuild_unit;

/* ptxas's report for one entry point on one architecture (-1: not reported). */
typedef struct kbuild_stats {
    int registers;
    int spill_stores, spill_loads;   /* bytes */
    int shared_static;               /* bytes of static shared memory */
    int stack_frame;                 /* bytes */
} kbuild_stats;

typedef struct kbuild_image {
    char arch[16];             /* "sm_80"; "compute_75" for the PTX image */
    int is_ptx;
    unsigned char *data;       /* CUBIN (ELF) or PTX text (NUL-terminated, size excludes it) */
    size_t size;
    kbuild_stats *stats;       /* [nunits] in the caller's order (duplicates repeat their
                                  twin's numbers); NULL for PTX */
    double seconds;            /* wall time of this architecture's NVRTC compile */
} kbuild_image;

typedef struct kbuild_result {
    int nunits;
    int ndistinct;             /* distinct texts actually compiled */
    int *distinct_of;          /* [nunits]: the first unit with the same text */
    int nimages;               /* one CUBIN per arch in the order given, then the PTX, ascending */
    kbuild_image *images;
    double seconds;            /* wall time of the whole call */
} kbuild_result;

typedef struct kbuild_options {
    const char *cuda_home;     /* toolkit root for -I<root>/include; NULL: $CUDA_HOME,
                                  else the build's CUDA_HOME (/usr/local/cuda) */
    int jobs;                  /* architectures compiled at once; < 1 means 1 */
    int no_ptx;                /* skip the PTX images */
    const int *ptx_targets;    /* the PTX to build (80 for compute_80, ...); NULL: the plan's, arch_plan_ptx */
    int nptx_targets;
    const char *const *extra_options;   /* more NVRTC options (e.g. "-lineinfo") */
    int nextra;
} kbuild_options;

/*
 * Compiles `units` for `archs` ("sm_75", ... ; checked by arch_list_check, arch.h).
 * opt may be NULL (defaults).  On success fills *r (free it with
 * kbuild_result_free) and returns 0; on failure returns -1 with *r empty
 * and the diagnostic set: an unknown arch (DIAG_CODE_USAGE, listing the
 * supported ones), a compile error (DIAG_CODE_INTERNAL, with the log and
 * numbered source lines), or NVRTC itself failing.
 */
int kbuild_compile(const kbuild_unit *units, int nunits, const char *const *archs, int narchs,
                   const kbuild_options *opt, kbuild_result *r, diag *d);
void kbuild_result_free(kbuild_result *r);

/* NVRTC's version (plan provenance); -1 with the diagnostic set on failure. */
int kbuild_nvrtc_version(int *major, int *minor, diag *d);

#endif
