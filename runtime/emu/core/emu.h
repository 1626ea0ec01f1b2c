/*
 * emu — the emulated device's kernel-execution core: load a kernel image
 * built from CUDA text, launch its kernels on the CPU.
 *
 * No machine that builds or tests bertc has a GPU, yet every generated
 * kernel must run in CI.  The emulated device runs the *same* kernel text
 * NVRTC compiles for the GPU, compiled by the host C++ compiler behind a
 * prelude (cuda_prelude.h) that maps CUDA's built-ins onto this library
 * (bertc builds such images at compile time: compiler/codegen/emu_build.h),
 * and runs every CUDA thread of a block as a fiber on the calling OS thread.
 * Blocks run one after another, which is simple and deterministic; the
 * order in which a block's fibers run is a *schedule* chosen per launch,
 * because one fixed order hides races (round-robin in lane order makes a
 * kernel with a missing __syncthreads look correct).  The schedule also
 * orders the blocks: ascending, descending (reverse warp-greedy) or a
 * seeded permutation (random), so a kernel whose result depends on which
 * block arrives last shows it.
 *
 * The emulator enforces the CUDA rules a kernel can break, so a broken
 * kernel fails here rather than on a customer's GPU: block and grid limits,
 * the dynamic shared memory limit (48 KiB unless raised per kernel, as
 * cuFuncSetAttribute does), a __syncthreads reached at different places by
 * threads of one block, warp intrinsics whose lanes disagree on the mask or
 * name a lane that has exited, and deadlock (every live thread waits and no
 * barrier can complete) — reported with the block, the threads and the
 * kernel's source lines instead of hanging.
 *
 * Usage:
 *
 *     emu_build_image_file(&text, 1, "/tmp/k.so", &d);  // the compiler's, g++ ~1 s per unit
 *     emu_image *im = emu_image_load("/tmp/k.so", &d);
 *     void *args[] = {&out_ptr, &in_ptr};                 // CUDA kernelParams
 *     emu_launch(im, "my_kernel", grid, block, 0, args,
 *                EMU_SCHEDULE_WARP_GREEDY, seed, &d);
 *     emu_image_free(im);
 *
 * "Device memory" is host memory: pointers are passed as they are.
 *
 * Errors: every function fills a diag (category DIAG_CODE_INTERNAL: to the
 * bertc command a device failure is an internal/device error) and returns a
 * status that tells the cause apart, so a driver shim can map it to a CUDA
 * error code.
 */
#ifndef BERTC_EMU_H
#define BERTC_EMU_H

#include <stdint.h>

#include "diag.h"

typedef enum emu_status {
    EMU_STATUS_OK = 0,
    EMU_STATUS_INVALID,      /* bad launch configuration or argument */
    EMU_STATUS_NOT_FOUND,    /* no kernel with that entry name in the image */
    EMU_STATUS_LOAD,         /* the image cannot be loaded (dlopen, ABI version) */
    EMU_STATUS_DEADLOCK,     /* every live thread of a block waits; none can go on */
    EMU_STATUS_FAULT,        /* kernel broke a rule: divergent barrier, warp mask, __trap */
    EMU_STATUS_NO_MEMORY,
} emu_status;

typedef enum emu_schedule {
    EMU_SCHEDULE_ROUND_ROBIN,          /* each thread runs until it blocks, in thread order */
    EMU_SCHEDULE_WARP_GREEDY,          /* run one warp as far as it goes, warps ascending */
    EMU_SCHEDULE_WARP_GREEDY_REVERSE,  /* the same, warps descending; blocks descending */
    EMU_SCHEDULE_RANDOM,               /* a seeded random runnable thread at each switch; blocks permuted */
    EMU_SCHEDULE_COUNT,
} emu_schedule;

#define EMU_MAX_BLOCK_THREADS 1024u
#define EMU_SMEM_DEFAULT_LIMIT 49152u     /* dynamic shared memory without opt-in */
#define EMU_SMEM_OPTIN_LIMIT 232448u      /* the most a kernel may opt in to (sm_90) */

typedef struct emu_image emu_image;
typedef struct emu_kernel emu_kernel;

/* dlopens an image; NULL (diag set) on failure. */
emu_image *emu_image_load(const char *so_path, diag *d);
void emu_image_free(emu_image *im);

/* The kernel exported as `entry`; NULL with EMU_STATUS_NOT_FOUND's message. */
emu_kernel *emu_image_kernel(emu_image *im, const char *entry, diag *d);
unsigned emu_kernel_arg_count(const emu_kernel *k);
/* Size in bytes of each argument (deduced from the kernel's C++ type). */
const unsigned *emu_kernel_arg_sizes(const emu_kernel *k);
/* Whether the kernel's image was built with AddressSanitizer (shared
 * memory as plain statics; launches of it are serialised). */
int emu_kernel_is_sanitized(const emu_kernel *k);
/* Raises the kernel's dynamic shared memory limit (at most EMU_SMEM_OPTIN_LIMIT). */
emu_status emu_kernel_set_max_dynamic_smem(emu_kernel *k, unsigned bytes, diag *d);

/*
 * Runs a grid to completion on the calling thread.  args[i] points to the
 * value of argument i, as CUDA's kernelParams.  The dynamic shared memory
 * of each block starts filled with 0xff bytes (NaN in every float type).
 * `seed` drives EMU_SCHEDULE_RANDOM.  Launches of one image may run on
 * several threads at once.
 */
emu_status emu_kernel_launch(emu_kernel *k, const unsigned grid[3], const unsigned block[3],
                             unsigned shared_bytes, void **args, emu_schedule sched,
                             uint64_t seed, diag *d);
/*
 * Programmatic dependent launch (sm_90): a launch whose stream predecessor
 * may still be running.  It runs the grid's *early block* — block 0, or
 * under EMU_SCHEDULE_RANDOM a block drawn from `seed` — until every thread
 * of it waits in griddepcontrol.wait (bertc_grid_dependency_wait) or has
 * returned, and hands back the grid held at that point in *out.  The caller
 * then completes the predecessor and calls emu_grid_finish, which lets the
 * waits return and runs the held block and every other block to the end.
 *
 * Running the dependent's pre-wait part before any of the predecessor is
 * the worst case CUDA allows (a predecessor may trigger its dependents with
 * its first instruction), so whatever the dependent reads there that the
 * predecessor writes is stale, and whatever it writes there the predecessor
 * sees: a kernel that touches activations before its wait computes a wrong
 * answer here, as it would race on a GPU.  Only one block per grid is held
 * (its fibers' stacks and its shared memory stay alive meanwhile): static
 * __shared__ variables belong to the kernel, not to a block, so two held
 * blocks of one kernel would share them — which is also why the caller must
 * not run a held grid's own kernel before finishing it.  A held grid is
 * finished (or abandoned) on the OS thread that started it.
 */
typedef struct emu_run emu_grid;
emu_status emu_kernel_launch_dependent(emu_kernel *k, const unsigned grid[3], const unsigned block[3],
                                       unsigned shared_bytes, void **args, emu_schedule sched, uint64_t seed,
                                       emu_grid **out, diag *d);
/* The predecessor has completed: runs the rest of g and frees it. */
emu_status emu_grid_finish(emu_grid *g, diag *d);
/* Frees a held grid without running the rest (its predecessor failed). */
void emu_grid_abandon(emu_grid *g);
/* The kernel a grid runs. */
emu_kernel *emu_grid_kernel(const emu_grid *g);

/*
 * Where device memory is, for bertc_prefetch_l2's range check: fn returns
 * non-zero when [p, p + bytes) lies inside one allocation.  Process-wide;
 * NULL (the default) accepts every range.  The emulated device sets its
 * allocation table here; kernel tests may set their own.
 */
typedef int (*emu_mem_check_fn)(const void *p, unsigned long long bytes);
void emu_set_mem_check(emu_mem_check_fn fn);

/* emu_image_kernel + emu_kernel_launch. */
emu_status emu_launch(emu_image *im, const char *entry, const unsigned grid[3],
                      const unsigned block[3], unsigned shared_bytes, void **args,
                      emu_schedule sched, uint64_t seed, diag *d);

/* Counters of the calling thread's most recent launch. */
typedef struct emu_launch_stats {
    uint64_t blocks;
    uint64_t threads;         /* per block */
    uint64_t switches;        /* fiber context switches, all blocks */
    uint64_t waits;           /* threads that executed griddepcontrol.wait */
    uint64_t parked;          /* of them, held until the predecessor completed */
    uint64_t triggers;        /* blocks that executed griddepcontrol.launch_dependents */
    uint64_t prefetches;      /* bertc_prefetch_l2 calls (ranges checked) */
} emu_launch_stats;
void emu_last_launch_stats(emu_launch_stats *out);

const char *emu_schedule_name(emu_schedule s);
const char *emu_status_name(emu_status s);

#endif
