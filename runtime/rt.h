/*
 * rt — the runtime's internals, shared by its files:
 *
 *   rt_util.c     host allocation through one door, error messages
 *   rt_plan.c     bertc_plan: the read plan, its reference count, queries
 *   rt_device.c   per-device state shared by a plan's contexts: device
 *                 table, primary context, module and functions, weights
 *   rt_context.c  bertc_context: stream, arena, cuBLASLt objects, one CUDA
 *                 Graph per bucket, requests and outputs
 *   rt_image.c    which kernel image of a plan runs on a device
 *   rt_text.c     bertc_encode: the plan's tokenizer behind the public API
 *
 * Ownership is a tree: a plan owns its device states (created by the first
 * context on a device, destroyed with the last), a context owns everything
 * it allocated.  Every object is built by a function that, on failure,
 * frees what it had made and leaves the object in its zero state, so the
 * destroy functions accept half-built objects and "no leak on any failure"
 * is one code path.
 */
#ifndef BERTC_RT_H
#define BERTC_RT_H

#include <pthread.h>

#include "bertc.h"
#include "device.h"
#include "plan.h"

#define RT_MAX_DEVICES 16
#define RT_ERR_CAP 1024

typedef struct rt_device rt_device;

struct bertc_plan {
    plan p;
    char *path;
    pthread_mutex_t lock;          /* refs and devices */
    int refs;                      /* the opener's + one per context */
    rt_device *devices[2][RT_MAX_DEVICES];   /* [bertc_device_kind][ordinal] */
    struct tokenizer *tok;         /* built on first bertc_encode (under lock) */
    char sha256[65];               /* the file's digest, computed on first ask (under lock) */
};

/* What a plan needs on one device, shared by its contexts there. */
struct rt_device {
    int refs;                      /* contexts using it (under the plan's lock) */
    device_table t;
    bertc_device_kind kind;
    int ordinal;
    CUdevice dev;
    CUcontext ctx;                 /* the device's primary context (retained) */
    int major, minor;
    char arch[16];                 /* the device's arch name ("sm_86", "emu") */
    int image;                     /* index of the plan image in use */
    CUmodule module;
    CUfunction *functions;         /* [nkernels] */
    CUdeviceptr weights;
};

/* Host allocation through one door, so tests can make each one fail. */
void *rt_malloc(size_t n);
void *rt_calloc(size_t n, size_t size);
/* Test hook: the nth host allocation from now fails (0: none). Not public. */
void rt_debug_fail_host_alloc(long nth);

/* Formats "what failed: CUDA_ERROR_X (text)" for a driver result; returns the status it maps to. */
bertc_status rt_cu_error(const device_table *t, CUresult r, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bertc_status rt_blaslt_error(const device_table *t, cublasStatus_t s, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bertc_status rt_error(bertc_status s, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Device state of `plan` on (kind, ordinal): found or made, reference taken. */
bertc_status rt_device_acquire(bertc_plan *plan, const bertc_context_options *opt, rt_device **out, char *err,
                               size_t cap);
void rt_device_release(bertc_plan *plan, rt_device *d);

/* The image of `p` that runs on capability major.minor named `arch`: an
 * image of exactly that arch (CUBIN or EMU), else the newest CUBIN of the
 * same major and no newer minor, else the newest PTX not newer than the
 * device.  -1 with `why` listing what the plan has. */
int rt_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap);

void rt_plan_retain(bertc_plan *plan);

/*
 * Every entry point makes the device's primary context current and, on the
 * way out, gives the thread back whatever context it had: a service's own
 * CUDA code on the same thread must not find bertc's context in its place.
 */
CUresult rt_ctx_enter(const device_table *t, CUcontext ctx, CUcontext *prev);
void rt_ctx_leave(const device_table *t, CUcontext ctx, CUcontext prev);
/* Frees the plan's tokenizer (rt_text.c), at the plan's end. */
void rt_text_free(bertc_plan *plan);

#endif
