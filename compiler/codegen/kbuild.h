/*
 * kbuild — compiles a plan's generated kernels for a set of GPU
 * architectures: NVRTC for the front end, ptxas for machine code.
 *
 * Compile time is the user-visible cost of `bertc compile` (engine builds
 * that take minutes are what users of other engines complain about), so
 * the shape of the work matters more than anything inside it (measured on
 * BERT-base's 25 kernels: the front end costs 1.5-2.1 s of CPU per target,
 * ptxas about 1.1 s per architecture):
 *
 *  - identical texts are compiled once: units are deduplicated by content
 *    (a 64-bit hash, confirmed by comparing the bytes), since a 12-layer
 *    model asks for the same dozen kernels twelve times;
 *  - the front end runs once per PTX target, not once per architecture.
 *    NVRTC parses and optimises all distinct kernels as ONE program (the
 *    shared headers once), each unit behind `#line 1 "<entry>.cu"` so its
 *    messages name the kernel and the line within its own text, and emits
 *    PTX.  An architecture takes the PTX of the lowest target its kernels
 *    cannot tell apart from it: the kernel texts are scanned for
 *    `__CUDA_ARCH__` comparisons, and only their thresholds split targets
 *    (today's templates compare with 800, so sm_80 ... sm_90 all compile
 *    from compute_80 and sm_75 from compute_75; a template that tests
 *    `>= 900` makes sm_90 a target of its own).  Any other use of the
 *    macro gives every architecture its own target, as before;
 *  - a target may be derived instead of compiled.  An instruction only a
 *    newer GPU has is written in a template as a PTX comment marked with
 *    the first architecture that has it, `//@sm_90 griddepcontrol.wait;`
 *    inside an asm statement (bertc_device.cuh's overlap helpers): NVRTC
 *    copies asm text verbatim and treats it as opaque, so the comment sits
 *    exactly where the instruction would, under the same compiler barrier.
 *    An architecture at or above a marked level whose front-end target is
 *    below it takes a derived target of that level: its front-end
 *    target's PTX with `.target` raised and the markers up to the level
 *    removed (kbuild_front_raise), a text edit of milliseconds instead of
 *    a front end of seconds.  For today's kernels the derived compute_90
 *    PTX is NVRTC's own compute_90 output but for one unused global of
 *    the toolkit's atomics header; for a marked kernel without headers it
 *    is the same bytes (tests/kernels/test_kbuild_cache.c).  Derived
 *    targets are not cached (their input is) and are not counted as jobs;
 *  - ptxas compiles each architecture's CUBIN from its target's PTX as a
 *    whole program — the code NVRTC's own ptxas run gives (kbuild_sass.c
 *    says why nothing finer-grained is used);
 *  - an image holds the kernels its devices run.  A plan with several
 *    step lists (`--tune`) says which lists launch each unit
 *    (kbuild_unit.lists) and each list's compute capabilities; the
 *    plan's own rule (plan_image_serves_range) says which lists each
 *    image serves, so a front end compiles only the units of its CUBINs,
 *    its PTX and the targets derived from it, and ptxas builds only an
 *    architecture's entries (-e) when its target's program holds more.
 *    An image no device selects takes the newest list.  Each image says
 *    what it carries (kbuild_image.carries), which the plan records.
 *    With one list (or none given) every image holds every unit, and the
 *    programs and cache keys are those of before;
 *  - all of it is one job graph run on up to `jobs` threads: a job starts
 *    when its input exists, so the cores stay busy across targets and
 *    architectures (BERT-base on two cores: compute_75 and compute_80
 *    side by side, compute_90 derived, then three ptxas runs);
 *  - with a cache (kcache.h) every job first looks for its output under a
 *    key made of its inputs, so an unchanged recompile runs no compiler.
 *
 * The result is one CUBIN per architecture asked for, in the order given,
 * then the PTX the plan carries for GPUs newer than any listed (they JIT
 * it): that of every target of compute_80 or newer, ascending — the
 * tensor-core path; compute_80 is compiled for its PTX alone when the
 * kernels tell it apart and no listed architecture compiles from it; a
 * lower target's PTX only when it is the only target.  ptxas runs verbose, and its report is parsed per
 * entry point into kbuild_stats: registers, spill bytes, static shared
 * memory — `bertc inspect` shows them, and the tests assert "no spills".
 *
 * ptxas is the toolkit's program ($CUDA_HOME/bin/ptxas, the same release
 * as NVRTC); it runs in a private temporary folder that is removed
 * afterwards.  Outputs do not depend on the number of jobs, the order jobs
 * happen to run in, or whether they came from the cache: the bytes are the
 * same (tests/kernels/test_kbuild_cache.c).
 *
 * A failed compile returns a diagnostic holding NVRTC's log and, for each
 * line an error points at, the surrounding lines of the generated text,
 * numbered, so the user sees the kernel that failed and not just a line
 * number.  Nothing here prints.
 */
#ifndef BERTC_KBUILD_H
#define BERTC_KBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "kcache.h"

/* One kernel to compile: its complete source, its extern "C" entry, and
 * the step lists that launch it (kbuild_options.nlists). */
typedef struct kbuild_unit {
    const char *text;
    const char *entry;         /* names the unit in messages and stats; may be NULL */
    uint64_t lists;            /* bit v: step list v launches it; 0: every list */
} kbuild_unit;

/* ptxas's report for one entry point on one architecture (-1: not reported). */
typedef struct kbuild_stats {
    int registers;
    int spill_stores, spill_loads;   /* bytes */
    int shared_static;               /* bytes of static shared memory */
    int stack_frame;                 /* bytes */
} kbuild_stats;

typedef struct kbuild_image {
    char arch[16];             /* "sm_80"; "compute_75" for a PTX image */
    int is_ptx;
    unsigned char *data;       /* CUBIN (ELF) or PTX text (NUL-terminated, size excludes it) */
    size_t size;
    kbuild_stats *stats;       /* [nunits] in the caller's order (duplicates repeat their
                                  twin's numbers); NULL for PTX */
    unsigned char *carries;    /* [nunits]: 1 where the image holds the unit's entry */
    double seconds;            /* thread time of the jobs that made it (0 from the cache) */
} kbuild_image;

typedef struct kbuild_result {
    int nunits;
    int ndistinct;             /* distinct texts actually compiled */
    int *distinct_of;          /* [nunits]: the first unit with the same text */
    int nimages;               /* one CUBIN per arch in the order given, then the plan's PTX, ascending */
    kbuild_image *images;
    int ntargets;              /* PTX targets the front end ran for */
    int nderived;              /* PTX targets derived from another's PTX (no front end) */
    int njobs, cached_jobs;    /* compiler runs in the graph; of them, taken from the cache */
    double seconds;            /* wall time of the whole call */
} kbuild_result;

typedef struct kbuild_options {
    const char *cuda_home;     /* toolkit root for -I<root>/include and <root>/bin/ptxas; NULL:
                                  $CUDA_HOME, else the build's CUDA_HOME (/usr/local/cuda) */
    int jobs;                  /* threads; < 1 means 1 */
    int no_ptx;                /* skip the PTX images */
    int all_ptx;               /* every target's PTX, not only what a plan carries (tests) */
    const char *const *extra_options;   /* more NVRTC options (e.g. "-lineinfo") */
    int nextra;
    kcache *cache;             /* NULL: no cache */
    int nlists;                /* step lists (0 or 1: one, every image carries every unit) */
    const int *list_cc_min;    /* [nlists]: list v runs on capabilities list_cc_min[v] .. */
    const int *list_cc_max;    /* .. list_cc_max[v] (plan.h, variants) */
} kbuild_options;

/*
 * Compiles `units` for `archs` ("sm_75", ... ; checked by arch_list_check, arch.h).
 * opt may be NULL (defaults).  On success fills *r (free it with
 * kbuild_result_free) and returns 0; on failure returns -1 with *r empty
 * and the diagnostic set: an unknown arch (DIAG_CODE_USAGE, listing the
 * supported ones), a compile error (DIAG_CODE_INTERNAL, with the log and
 * numbered source lines), or a tool itself failing.
 */
int kbuild_compile(const kbuild_unit *units, int nunits, const char *const *archs, int narchs,
                   const kbuild_options *opt, kbuild_result *r, diag *d);
void kbuild_result_free(kbuild_result *r);

/* NVRTC's version (plan provenance); -1 with the diagnostic set on failure. */
int kbuild_nvrtc_version(int *major, int *minor, diag *d);

#endif
