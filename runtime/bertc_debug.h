/*
 * bertc_debug.h — diagnostics of libbertc outside its stable API.
 *
 * bertc.h is the contract a service is built on; this header is for tools
 * that look inside a request (`bertc bench --per-step`,
 * tools/gpu_validate.sh), and what it declares may change between versions.
 * It is a separate header rather than internal symbols because bertc's
 * command line links the runtime only through its exported bertc_* names
 * (docs/architecture.md), exactly as a service would.
 */
#ifndef BERTC_DEBUG_H
#define BERTC_DEBUG_H

#include "bertc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step of a bucket, timed on its own. */
typedef struct bertc_step_time {
    const char *name;        /* the plan's step name ("layer0/attention") */
    const char *kind;        /* "kernel" or "gemm" */
    const char *what;        /* the kernel's entry name, or "cublasLt" */
    double us_median;        /* device time per run between two events, median over the runs */
    double us_min;
    int candidates;          /* gemm: cuBLASLt candidates the context considered; 0 for kernels */
    int algorithm;           /* gemm: the one kept (0: the heuristic's first); -1 for kernels */
} bertc_step_time;

/* Steps of the bucket that serves a request of length len on the
 * context's device (0 if none does): a plan built with `--tune` may run
 * other steps on other devices. */
int bertc_debug_step_count(const bertc_context *ctx, int64_t len);
/* The plan's step list (variant, runtime/plan/plan.h) the context's
 * device runs: 0 .. variants - 1, by its compute capability. */
int bertc_debug_variant(const bertc_context *ctx);

/*
 * Runs req's bucket outside its graph, one step at a time on the context's
 * stream, each between two CUDA events with a synchronisation after it:
 * one untimed pass, then `reps` timed ones; out[i] describes step i
 * (nsteps must be bertc_debug_step_count(ctx, req->len)).  Kernels are
 * launched plainly (no step overlaps another), so the times are each
 * step's own, launch gaps excluded.  On the emulated device they are CPU
 * times.  Afterwards the context has no readable outputs (the graph did
 * not run); the next bertc_infer is unaffected.
 */
bertc_status bertc_debug_time_steps(bertc_context *ctx, const bertc_request *req, int reps, bertc_step_time *out,
                                    int nsteps);

/*
 * Runs req's bucket outside its graph, one step at a time, and checks that
 * each step touched only the memory its launch contract grants it
 * (runtime/rt_check.c): no arena byte outside its arguments written (they
 * are poisoned while it runs, so a read of one shows in the outputs), no
 * byte it only reads changed, the request block unchanged, the arrival
 * counters zero before and after; over the bucket, the weights unchanged.
 * BERTC_STATUS_BAD_PLAN names the first step that broke a rule, the
 * offset and what it did.  On success the outputs the context copies back
 * are readable as after bertc_infer (bertc_output_read), and should equal
 * its bit for bit.  After a failure the context's arena and arrival
 * counters may hold anything the failing step left: destroy the context.
 * Copies the arena twice per step: for tests and tools.
 */
bertc_status bertc_debug_check_steps(bertc_context *ctx, const bertc_request *req);

#ifdef __cplusplus
}
#endif

#endif
