/*
 * rt_device — what a plan needs on one device, made once and shared by
 * every context of the plan on that device: the device table (dlopen), the
 * device's primary context, the kernel module and its functions, and the
 * weights.
 *
 * Weights are the bulk of a plan (a BERT-base plan is 220 MB in fp16) and
 * read-only at inference, so uploading them per context would multiply
 * device memory and load time by the number of threads for nothing.  The
 * primary context is what lets contexts on different threads share these
 * device pointers, and what lets bertc live beside other CUDA users of the
 * process.
 *
 * The state is built under the plan's lock, so two contexts created at
 * once on one device do not upload twice; a build that fails releases
 * what it made in reverse order (rt_device_free accepts any prefix of the
 * construction) and leaves no entry behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define RT_SMEM_NO_OPTIN 49152u

CUresult rt_ctx_enter(const device_table *t, CUcontext ctx, CUcontext *prev) {
    if (t->cuCtxGetCurrent(prev) != CUDA_SUCCESS) *prev = NULL;
    return *prev == ctx ? CUDA_SUCCESS : t->cuCtxSetCurrent(ctx);
}

void rt_ctx_leave(const device_table *t, CUcontext ctx, CUcontext prev) {
    if (prev != ctx) t->cuCtxSetCurrent(prev);
}

CUresult rt_upload(const device_table *t, CUdeviceptr dst, const void *src, size_t n, CUstream s, const char **call) {
    *call = "cuMemcpyHtoDAsync";
    CUresult r = n ? t->cuMemcpyHtoDAsync(dst, src, n, s) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS || !n) return r;
    *call = "cuStreamSynchronize";
    return t->cuStreamSynchronize(s);
}

void rt_capture_mode_push(const device_table *t, rt_capture_mode *m) {
    m->exchange = NULL;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    if (t->cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS) {   /* every table entry is filled */
        m->exchange = t->cuThreadExchangeStreamCaptureMode;
        m->prev = mode;
    }
}

void rt_capture_mode_pop(rt_capture_mode *m) {
    if (m->exchange) m->exchange(&m->prev);
    m->exchange = NULL;
}

static void rt_device_free(rt_device *d) {
    if (!d) return;
    device_table *t = &d->t;
    if (d->ctx) {
        CUcontext prev;
        rt_capture_mode mode;
        rt_capture_mode_push(t, &mode);
        rt_ctx_enter(t, d->ctx, &prev);
        if (d->weights) t->cuMemFree(d->weights);
        if (d->module) t->cuModuleUnload(d->module);
        /* the primary context may outlive this release (other users); leave the
         * thread as it was, the primary context current if the caller had made it
         * so (then the caller holds a reference of its own: the release below
         * only drops bertc's, and pops nothing, as the driver documents) */
        rt_ctx_leave(t, d->ctx, prev);
        t->cuDevicePrimaryCtxRelease(d->dev);
        rt_capture_mode_pop(&mode);
    }
    free(d->functions);
    free(d->algos);
    if (t->driver_lib) device_table_close(t);
    free(d);
}

/* Loads the chosen image.  PTX text is handed over NUL-terminated (the
 * driver reads it as a C string; in the plan it is followed by whatever
 * comes next). */
static bertc_status rt_device_load_module(rt_device *d, const plan *p, char *err, size_t cap) {
    const plan_image *im = &p->images[d->image];
    CUresult r;
    if (im->kind == PLAN_IMAGE_PTX) {
        char *text = rt_malloc(im->size + 1);
        if (!text) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory copying the PTX image");
        memcpy(text, im->data, im->size);
        text[im->size] = '\0';
        r = d->t.cuModuleLoadData(&d->module, text);
        free(text);
    } else {
        r = d->t.cuModuleLoadData(&d->module, im->data);
    }
    if (r != CUDA_SUCCESS) {
        d->module = NULL;
        return rt_cu_error(&d->t, r, err, cap, "cuModuleLoadData(%s image %s, %zu bytes)",
                           im->kind == PLAN_IMAGE_PTX ? "PTX" : im->kind == PLAN_IMAGE_EMU ? "EMU" : "CUBIN", im->arch,
                           im->size);
    }
    return BERTC_STATUS_OK;
}

/* Whether this device's step list launches kernel k, and the most dynamic
 * shared memory a launch of it asks for. */
static int rt_device_kernel_need(const rt_device *d, const plan *p, int k, unsigned *need) {
    int used = 0;
    *need = 0;
    for (int b = 0; b < p->nbuckets; b++)
        for (int s = 0; s < d->buckets[b].nsteps; s++) {
            const sched_step *st = &d->buckets[b].steps[s];
            if (st->kind != SCHED_STEP_KERNEL || st->launch.kernel != k) continue;
            used = 1;
            if (st->launch.dims.shared_bytes > *need) *need = st->launch.dims.shared_bytes;
        }
    return used;
}

/* Functions by entry name, and the dynamic shared memory each launch
 * needs: the kernels of this device's step list only (a plan with several
 * lists gives each image only its lists' kernels; plan.h). */
static bertc_status rt_device_bind_kernels(rt_device *d, const plan *p, char *err, size_t cap) {
    d->functions = rt_calloc((size_t)p->nkernels, sizeof *d->functions);
    if (!d->functions) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
    int optin = 0;
    CUresult r = d->t.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
    if (r != CUDA_SUCCESS) return rt_cu_error(&d->t, r, err, cap, "cuDeviceGetAttribute(shared memory opt-in)");
    for (int k = 0; k < p->nkernels; k++) {
        unsigned need;
        if (!rt_device_kernel_need(d, p, k, &need)) continue;
        r = d->t.cuModuleGetFunction(&d->functions[k], d->module, p->kernels[k].entry);
        if (r != CUDA_SUCCESS)
            return rt_cu_error(&d->t, r, err, cap, "cuModuleGetFunction(%s) in image %s", p->kernels[k].entry,
                               p->images[d->image].arch);
        if (need <= RT_SMEM_NO_OPTIN) continue;
        if ((long)need > (long)optin)
            return rt_error(BERTC_STATUS_NO_DEVICE, err, cap,
                            "kernel %s needs %u bytes of shared memory per block; the device allows %d",
                            p->kernels[k].entry, need, optin);
        r = d->t.cuFuncSetAttribute(d->functions[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)need);
        if (r != CUDA_SUCCESS)
            return rt_cu_error(&d->t, r, err, cap, "cuFuncSetAttribute(%s, %u bytes of shared memory)",
                               p->kernels[k].entry, need);
    }
    return BERTC_STATUS_OK;
}

/* The weights to the device, on a stream of their own (non-blocking, like
 * the contexts': the legacy stream would wait for, and under capture
 * disturb, other CUDA users' blocking streams), waited for. */
static bertc_status rt_device_upload_weights(rt_device *d, const plan *p, char *err, size_t cap) {
    const device_table *t = &d->t;
    CUresult r = t->cuMemAlloc(&d->weights, p->weights_size);
    if (r != CUDA_SUCCESS) {
        d->weights = 0;
        return rt_cu_error(t, r, err, cap, "cuMemAlloc(weights, %llu bytes)", (unsigned long long)p->weights_size);
    }
    CUstream s;
    if ((r = t->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, err, cap, "cuStreamCreate(weights upload)");
    const char *call;
    r = rt_upload(t, d->weights, p->weights, p->weights_size, s, &call);
    t->cuStreamDestroy(s);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, err, cap, "%s(weights, %llu bytes)", call, (unsigned long long)p->weights_size);
    return BERTC_STATUS_OK;
}

static bertc_status rt_device_make(bertc_plan *pl, const bertc_context_options *opt, rt_device **out, char *err,
                                   size_t cap) {
    const plan *p = &pl->p;
    rt_device *d = rt_calloc(1, sizeof *d);
    if (!d) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
    d->kind = opt->device;
    d->ordinal = opt->device_ordinal;
    bertc_status st = BERTC_STATUS_OK;
    diag dg;
    diag_init(&dg);
    if (device_table_open(&d->t, opt->device == BERTC_DEVICE_EMULATED ? DEVICE_KIND_EMU : DEVICE_KIND_CUDA,
                          opt->driver_library, opt->blaslt_library, &dg)) {
        st = rt_error(BERTC_STATUS_NO_DEVICE, err, cap, "%s", dg.text);
        goto fail;
    }
    device_table *t = &d->t;
    CUresult r = t->cuInit(0);
    if (r != CUDA_SUCCESS) {
        st = rt_cu_error(t, r, err, cap, "cuInit");
        goto fail;
    }
    int count = 0;
    if ((r = t->cuDeviceGetCount(&count)) != CUDA_SUCCESS) {
        st = rt_cu_error(t, r, err, cap, "cuDeviceGetCount");
        goto fail;
    }
    if (d->ordinal >= count) {
        st = rt_error(BERTC_STATUS_NO_DEVICE, err, cap, "device %d does not exist (the machine has %d)", d->ordinal,
                      count);
        goto fail;
    }
    if ((r = t->cuDeviceGet(&d->dev, d->ordinal)) != CUDA_SUCCESS ||
        (r = t->cuDeviceGetAttribute(&d->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev)) !=
            CUDA_SUCCESS ||
        (r = t->cuDeviceGetAttribute(&d->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev)) !=
            CUDA_SUCCESS ||
        (r = t->cuDeviceGetAttribute(&d->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d->dev)) != CUDA_SUCCESS) {
        st = rt_cu_error(t, r, err, cap, "querying device %d", d->ordinal);
        goto fail;
    }
    device_arch_name(d->major, d->minor, d->arch, sizeof d->arch);
    char why[512];
    d->image = rt_image_select(p, d->arch, d->major, d->minor, why, sizeof why);
    if (d->image < 0) {
        st = rt_error(BERTC_STATUS_NO_DEVICE, err, cap, "%s: %s", pl->path, why);
        goto fail;
    }
    d->variant = plan_variant_for(p, d->major, d->minor);
    d->buckets = plan_variant_buckets(p, d->variant);
    if ((r = t->cuDevicePrimaryCtxRetain(&d->ctx, d->dev)) != CUDA_SUCCESS) {
        d->ctx = NULL;
        st = rt_cu_error(t, r, err, cap, "cuDevicePrimaryCtxRetain(device %d)", d->ordinal);
        goto fail;
    }
    CUcontext prev;
    if ((r = rt_ctx_enter(t, d->ctx, &prev)) != CUDA_SUCCESS) {
        st = rt_cu_error(t, r, err, cap, "cuCtxSetCurrent");
        goto fail;
    }
    rt_capture_mode mode;
    rt_capture_mode_push(t, &mode);
    st = rt_device_load_module(d, p, err, cap);
    if (st == BERTC_STATUS_OK) st = rt_device_bind_kernels(d, p, err, cap);
    if (st == BERTC_STATUS_OK && p->weights_size) st = rt_device_upload_weights(d, p, err, cap);
    rt_capture_mode_pop(&mode);
    rt_ctx_leave(t, d->ctx, prev);
    if (st != BERTC_STATUS_OK) goto fail;
    *out = d;
    return BERTC_STATUS_OK;
fail:
    rt_device_free(d);
    return st;
}

bertc_status rt_device_acquire(bertc_plan *pl, const bertc_context_options *opt, rt_device **out, char *err,
                               size_t cap) {
    *out = NULL;
    if (opt->device_ordinal < 0 || opt->device_ordinal >= RT_MAX_DEVICES)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "device ordinal %d is outside 0..%d",
                        opt->device_ordinal, RT_MAX_DEVICES - 1);
    int kind = opt->device == BERTC_DEVICE_EMULATED;
    bertc_status st = BERTC_STATUS_OK;
    pthread_mutex_lock(&pl->lock);
    rt_device *d = pl->devices[kind][opt->device_ordinal];
    if (!d) {
        st = rt_device_make(pl, opt, &d, err, cap);
        if (st == BERTC_STATUS_OK) pl->devices[kind][opt->device_ordinal] = d;
    }
    if (st == BERTC_STATUS_OK) {
        d->refs++;
        *out = d;
    }
    pthread_mutex_unlock(&pl->lock);
    return st;
}

void rt_device_release(bertc_plan *pl, rt_device *d) {
    if (!d) return;
    pthread_mutex_lock(&pl->lock);
    int last = --d->refs == 0;
    if (last) pl->devices[d->kind == BERTC_DEVICE_EMULATED][d->ordinal] = NULL;
    pthread_mutex_unlock(&pl->lock);
    if (last) rt_device_free(d);
}
