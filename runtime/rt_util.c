/*
 * rt_util — the small services every runtime file uses: host allocation
 * through one door, and error messages with the status they map to.  It
 * depends on nothing else of the runtime, so every other rt_*.c may call
 * it without a dependency circle.
 *
 * Host allocations go through rt_malloc so that a test can make the nth of
 * them fail and check that every failure path frees what came before it;
 * the hook is a counter, not a branch on "are we testing".
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* ------------------------------------------------------------ host memory */

static atomic_long rt_fail_countdown;

void rt_debug_fail_host_alloc(long nth) { atomic_store(&rt_fail_countdown, nth); }

static int rt_alloc_should_fail(void) {
    long v = atomic_load(&rt_fail_countdown);
    while (v > 0) {
        if (atomic_compare_exchange_weak(&rt_fail_countdown, &v, v - 1)) return v == 1;
    }
    return 0;
}

void *rt_malloc(size_t n) { return rt_alloc_should_fail() ? NULL : malloc(n ? n : 1); }

void *rt_calloc(size_t n, size_t size) { return rt_alloc_should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1); }

/* ------------------------------------------------------------ messages */

static void rt_vformat(char *err, size_t cap, const char *fmt, va_list ap, const char *tail) {
    if (!err || !cap) return;
    int n = vsnprintf(err, cap, fmt, ap);
    if (tail && n >= 0 && (size_t)n < cap) snprintf(err + n, cap - (size_t)n, "%s", tail);
}

bertc_status rt_error(bertc_status s, char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, NULL);
    va_end(ap);
    return s;
}

bertc_status rt_cu_error(const device_table *t, CUresult r, char *err, size_t cap, const char *fmt, ...) {
    const char *text = NULL;
    if (t && t->cuGetErrorString && t->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
    char tail[256];
    snprintf(tail, sizeof tail, " failed: CUDA error %d (%s)", (int)r, text ? text : "unknown error");
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, tail);
    va_end(ap);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return BERTC_STATUS_OUT_OF_MEMORY;
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
        r == CUDA_ERROR_STUB_LIBRARY)
        return BERTC_STATUS_NO_DEVICE;
    return BERTC_STATUS_DEVICE;
}

bertc_status rt_blaslt_error(const device_table *t, cublasStatus_t s, char *err, size_t cap, const char *fmt, ...) {
    const char *text = t && t->cublasLtGetStatusString ? t->cublasLtGetStatusString(s) : NULL;
    char tail[256];
    snprintf(tail, sizeof tail, " failed: cuBLASLt status %d (%s)", (int)s, text ? text : "unknown status");
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, tail);
    va_end(ap);
    return s == CUBLAS_STATUS_ALLOC_FAILED ? BERTC_STATUS_OUT_OF_MEMORY : BERTC_STATUS_DEVICE;
}

const char *bertc_status_name(bertc_status s) {
    switch (s) {
    case BERTC_STATUS_OK: return "ok";
    case BERTC_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case BERTC_STATUS_BAD_PLAN: return "bad plan";
    case BERTC_STATUS_BAD_REQUEST: return "bad request";
    case BERTC_STATUS_NO_DEVICE: return "no device";
    case BERTC_STATUS_DEVICE: return "device error";
    case BERTC_STATUS_OUT_OF_MEMORY: return "out of memory";
    }
    return "unknown status";
}
