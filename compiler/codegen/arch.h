/*
 * arch — the target architectures of a compile: which GPU architectures
 * bertc builds kernels for, and whether the emulated device's image is
 * wanted too.  Every list of architectures, from the command line or from
 * a caller of kbuild, is checked here and only here.
 */
#ifndef BERTC_ARCH_H
#define BERTC_ARCH_H

#include "diag.h"

#define ARCH_MAX 16

typedef struct arch_list {
    int count;
    char names[ARCH_MAX][16];    /* "sm_75", ... in the order given */
    int emu;                     /* "emu" was listed: build the emulated device's image */
} arch_list;

/* The default targets: sm_75 sm_80 sm_86 sm_89 sm_90, no emu. */
void arch_list_default(arch_list *l);
/*
 * Adds one name ("sm_80" or "emu") to l: an unknown architecture, a name
 * listed twice, or more than ARCH_MAX are usage errors (DIAG_CODE_USAGE)
 * whose message starts with `what` (e.g. "--arch").
 */
int arch_list_add(arch_list *l, const char *name, const char *what, diag *d);
/* Checks a list of GPU architectures as arch_list_add does ("emu" is not one). */
int arch_list_check(const char *const *names, int count, diag *d);

/* Whether `arch` is one bertc builds for ("sm_75" ... "sm_120"). */
int arch_supported(const char *arch);
/* "sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120" */
const char *arch_supported_list(void);
/* The i-th supported architecture ("sm_75" ... "sm_120"), NULL past the last. */
const char *arch_supported_name(int i);
/* 75 for "sm_75" or "compute_75"; -1 otherwise. */
int arch_number(const char *arch);

/*
 * PTX: which virtual architecture each GPU generation's code comes from,
 * and which PTX a plan carries for GPUs it has no CUBIN for.
 *
 * The kernel templates tell architectures apart only at 750, 800 and 900
 * (bertc_device.cuh's BERTC_HAS_* macros and the overlap helpers): Turing,
 * the tensor-core path of sm_80 and newer, and the grid-dependency
 * instructions of sm_90 and newer.  So an architecture compiles from the
 * PTX target of its generation — 75 for sm_75, 80 for sm_80, sm_86 and
 * sm_89, 90 for sm_90 and newer.  The front end runs for 75 and 80 only:
 * sm_90's instructions are marked comments in compute_80's PTX, and
 * compute_90's PTX is derived from it (kbuild.h).
 *
 * The plan carries PTX so that a GPU newer than every CUBIN still runs,
 * JIT-compiling the newest PTX not newer than itself.  That PTX must be
 * the tensor-core path: a Blackwell GPU JIT-compiling compute_75 PTX would
 * lose the tensor cores.  So the plan carries the PTX of every target of
 * 80 or more its architectures compile from, and compute_80 even when
 * none does (a Turing-only plan still runs well on an A100); never
 * compute_75: sm_75 is the only Turing architecture and has its CUBIN.
 */
int arch_ptx_target(int sm);
/* The PTX targets a plan for `archs` carries, ascending, into out
 * (ARCH_MAX entries); their count. */
int arch_plan_ptx(const char *const *archs, int narchs, int *out);

#endif
