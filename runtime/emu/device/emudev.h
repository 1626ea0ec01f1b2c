/*
 * emudev — the emulated device's control surface.
 *
 * libbertc_emudev.so is a CPU implementation of exactly the CUDA driver
 * API and cuBLASLt subset the runtime calls (runtime/device.h lists it).
 * It exports those functions under the names the real libraries export
 * (cuMemAlloc_v2, cublasLtMatmul, ...), so the runtime's device table is
 * filled from it by the same dlopen/dlsym code that fills it from
 * libcuda.so.1 and libcublasLt.so.13 on a GPU machine.  Kernels run from
 * the plan's EMU image (the same generated CUDA text, compiled by the host
 * compiler against cuda_prelude.h) on the fiber core of emu.h; cuBLASLt
 * matmuls are computed in float32 from the operands' storage types.
 *
 * The functions below are *not* part of CUDA: they let tests and tools set
 * up the device (which architecture it claims to be, which faults to
 * inject) and read its counters.  The runtime never calls them; a test
 * finds them with dlsym in the same library the runtime opened.  Each has
 * an environment variable that sets its initial value when the library is
 * loaded, so the command line can use them too:
 *
 *   BERTC_EMU_ARCH=sm_86     claim compute capability 8.6 (default "emu" = 0.0)
 *   BERTC_EMU_SCHEDULE=random|round_robin|warp_greedy|warp_greedy_reverse
 *   BERTC_EMU_SEED=N         seed of the random schedule
 *   BERTC_EMU_NULL=1         kernels and matmuls do nothing (host-overhead runs)
 *   BERTC_EMU_FILL=0xNN      byte that fills new allocations (default 0xff: NaN)
 *   BERTC_EMU_ALGORITHMS=N   cuBLASLt's heuristic offers N candidates (default 1)
 *
 * Thread safety: every function here and every emulated CUDA function may
 * be called from any thread.
 */
#ifndef BERTC_EMUDEV_H
#define BERTC_EMUDEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compute capability the device reports; 0.0 means "emu" (the default):
 * modules must then be EMU images.  Any other value makes the device accept
 * CUBINs (ELF, e_machine EM_CUDA, whose arch must run on that capability)
 * and PTX (whose .target must not exceed it), binding each kernel by its
 * entry name to a twin registered with bertc_emudev_add_twins. */
void bertc_emudev_set_arch(int major, int minor);

/* Registers an EMU image (bytes of the shared object) whose kernels serve
 * CUBIN/PTX modules by entry name.  0 on success, -1 if the bytes are not
 * an EMU image. Twins stay registered until bertc_emudev_reset(). */
int bertc_emudev_add_twins(const void *image, size_t size);

/* Makes the nth call from now (1-based) of the emulated function `name`
 * ("cuMemAlloc", "cublasLtMatmul", ... : the name the runtime calls, without
 * the _v2 suffix) fail with `code` (a CUresult or cublasStatus_t value,
 * depending on the function).  nth 0 removes the injection.  Several
 * functions may be armed at once. */
void bertc_emudev_fail(const char *name, int nth, int code);

/* Makes the nth kernel run from now (1-based), after it completes, flip
 * every bit of the byte `offset` bytes from its pointer argument `arg`: a
 * kernel writing where its launch contract does not let it, for testing
 * the tools that look for one (bertc_debug_check_steps).  nth 0 disarms;
 * a byte outside device memory is left alone.  Cleared by reset. */
void bertc_emudev_stray_write(long nth, int arg, long long offset);

/* Byte that fills every new device and pinned host allocation. */
void bertc_emudev_set_fill(int byte);

/* Null device: launches, graph kernel nodes and matmuls are accepted and
 * checked but not executed (copies still happen). */
void bertc_emudev_set_null(int on);

/* How many algorithms cublasLtMatmulAlgoGetHeuristic offers per problem
 * (1..16, default 1): identical computations under different variant
 * numbers, so that a runtime's code that times candidates and keeps the
 * fastest runs here too. */
void bertc_emudev_set_algorithms(int n);

/* A matmul under the heuristic's candidate `variant` (0 = its first)
 * takes `microseconds` longer when it runs (0: none; reset clears it), so
 * that a test can make one candidate slower or faster than the others
 * and see which the runtime's timing keeps. */
void bertc_emudev_set_algorithm_delay(int variant, int microseconds);

/* The version cuDriverGetVersion reports (1000 x major + 10 x minor; 0: the
 * toolkit's own, CUDA_VERSION, the default; reset restores it), so that a
 * test can pose as an older driver. */
void bertc_emudev_set_driver_version(int version);

/* The schedule of the fibers of every block (values of emu_schedule). */
void bertc_emudev_set_schedule(int schedule, uint64_t seed);

/* Back to the environment's settings; clears injections and twins. */
void bertc_emudev_reset(void);

/* Objects alive now, and work done since load. */
typedef struct bertc_emudev_stats {
    long live_allocations;       /* cuMemAlloc minus cuMemFree */
    long live_host_allocations;  /* cuMemHostAlloc minus cuMemFreeHost */
    long live_bytes;             /* device bytes allocated now */
    long live_modules, live_streams, live_events, live_graphs, live_graph_execs;
    long live_primary_retains;   /* cuDevicePrimaryCtxRetain minus Release */
    long live_blaslt_objects;    /* handles + descriptors + layouts + preferences */
    long kernel_launches;        /* executed (eagerly or as graph nodes) */
    long matmuls;                /* executed */
    long graph_launches;
    long copies;                 /* executed memcpy operations */
    long bytes_to_device, bytes_to_host;   /* their bytes, by direction */
    /* programmatic dependent launch: kernels whose pre-wait part ran before
     * their predecessor kernel (an honoured programmatic edge), and those
     * that had to run in order because the predecessor was the same kernel */
    long programmatic_overlapped, programmatic_serialised;
    long dependency_waits;       /* threads that executed griddepcontrol.wait */
    long parked_waits;           /* of them, held until the predecessor completed */
    long triggers;               /* blocks that executed griddepcontrol.launch_dependents */
    long prefetches;             /* bertc_prefetch_l2 calls, each range checked */
} bertc_emudev_stats;
void bertc_emudev_get_stats(bertc_emudev_stats *out);

/* The message of the most recent failure of an emulated function on the
 * calling thread (CUDA's codes say little: this says what and where). */
const char *bertc_emudev_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
