/*
 * emudev_context — cuInit, the one device, the primary context, and what
 * the context's destruction destroys.
 *
 * The device is one GPU, ordinal 0, whose compute capability is whatever
 * the device is told to claim (BERTC_EMU_ARCH, bertc_emudev_set_arch;
 * "emu", 0.0, by default) and whose limits are the ones the kernels are
 * checked against (emu.h).  There is one context, the primary one; a
 * thread uses it after cuCtxSetCurrent, as with the real driver, and every
 * call that needs a context checks for it (emudev_state.c).
 *
 * The last primary-context release destroys everything created in it, as
 * the driver does: queued work is dropped unrun, every handle becomes
 * invalid, all device and pinned memory is freed, and the sticky error is
 * cleared, which is how a process recovers from a kernel fault on a GPU.
 * Twins (bertc_emudev_add_twins) are not the context's and survive it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "emudev_internal.h"

#define EMUDEV_DEVICE_NAME "bertc emulated device"
#define EMUDEV_MULTIPROCESSORS 8

/* ------------------------------------------------------------ init and the device */

CUresult CUDAAPI cuInit(unsigned int flags) {
    int code;
    if (emudev_should_fail("cuInit", &code)) return (CUresult)code;
    if (flags != 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0, not %u", flags);
    atomic_store(&emudev_g.initialized, 1);
    return CUDA_SUCCESS;
}

/* As in the driver, this one and cuGetErrorString work before cuInit. */
CUresult CUDAAPI cuDriverGetVersion(int *version) {
    int code;
    if (emudev_should_fail("cuDriverGetVersion", &code)) return (CUresult)code;
    if (!version) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion: NULL pointer");
    *version = atomic_load(&emudev_g.driver_version);
    return CUDA_SUCCESS;
}

typedef struct emudev_code_text {
    CUresult code;
    const char *text;
} emudev_code_text;

static const emudev_code_text emudev_code_texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "file not found"},
    {CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"},
    {CUDA_ERROR_ASSERT, "device-side assert triggered"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_TIMEOUT, "wait operation timed out"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str) {
    int code;
    if (emudev_should_fail("cuGetErrorString", &code)) return (CUresult)code;
    if (!str) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString: NULL pointer");
    for (size_t i = 0; i < sizeof emudev_code_texts / sizeof *emudev_code_texts; i++)
        if (emudev_code_texts[i].code == error) {
            *str = emudev_code_texts[i].text;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString: unknown code %d", (int)error);
}

static CUresult emudev_device_check(const char *name, CUdevice dev) {
    if (dev != 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_DEVICE, "%s: device %d does not exist (one device, 0)", name, dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    CUresult rc = emudev_enter_result("cuDeviceGetCount", 0, count);
    if (rc) return rc;
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult rc = emudev_enter_result("cuDeviceGet", 0, device);
    if (rc) return rc;
    if ((rc = emudev_device_check("cuDeviceGet", ordinal))) return rc;
    *device = 0;
    return CUDA_SUCCESS;
}

/* The L2 the device claims: that of a typical part of the architecture
 * (T4 4 MiB, A100 40, A10 6, L4 48, H100 50), and an A100's for the emu
 * arch, so that code sizing work by the L2 runs as on a data-centre GPU. */
static int emudev_l2_bytes(int major, int minor) {
    int mib = major == 7 ? 4 : major == 8 && minor == 6 ? 6 : major == 8 && minor == 9 ? 48 : major >= 9 ? 50 : 40;
    return mib << 20;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    CUresult rc = emudev_enter_result("cuDeviceGetAttribute", 0, pi);
    if (rc) return rc;
    if ((rc = emudev_device_check("cuDeviceGetAttribute", dev))) return rc;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = atomic_load(&emudev_g.arch_major); break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = atomic_load(&emudev_g.arch_minor); break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = EMUDEV_MULTIPROCESSORS; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)EMU_MAX_BLOCK_THREADS; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *pi = (int)EMU_SMEM_DEFAULT_LIMIT; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = (int)EMU_SMEM_OPTIN_LIMIT; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *pi = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *pi = 65535; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *pi = emudev_l2_bytes(atomic_load(&emudev_g.arch_major), atomic_load(&emudev_g.arch_minor));
        break;
    default:
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute: attribute %d is not emulated", (int)attrib);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult rc = emudev_enter("cuDeviceGetName", 0);
    if (rc) return rc;
    if (!name || len <= 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName: NULL buffer or length %d", len);
    if ((rc = emudev_device_check("cuDeviceGetName", dev))) return rc;
    snprintf(name, (size_t)len, "%s", EMUDEV_DEVICE_NAME);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ context destruction */

/* Drops every queued and captured work item unrun, then the objects' handle
 * references in an order that frees holders before what they hold. */
static void emudev_context_free_objects(void) {
    pthread_mutex_lock(&emudev_g.mu);
    size_t n;
    emudev_obj **objs = emudev_reg_take_all_locked(&n);
    emudev_g.streams = NULL;
    pthread_mutex_unlock(&emudev_g.mu);

    /* Queues and captures first: their work holds references to the other objects. */
    emudev_work_list_free(emudev_stream_queue_take(&emudev_legacy));
    for (size_t i = 0; i < n; i++)
        if (objs[i]->kind == EMUDEV_KIND_STREAM) {
            emudev_stream *s = (emudev_stream *)objs[i];
            emudev_work_list_free(emudev_stream_queue_take(s));
            emudev_work_list_free(emudev_stream_capture_take(s));
        }
    static const emudev_kind order[] = {EMUDEV_KIND_STREAM, EMUDEV_KIND_EXEC, EMUDEV_KIND_GRAPH, EMUDEV_KIND_EVENT,
                                        EMUDEV_KIND_MODULE};
    /* kinds are read before any put: a put may free an object another one still lists */
    emudev_kind *kinds = n ? malloc(n * sizeof *kinds) : NULL;
    for (size_t i = 0; kinds && i < n; i++) kinds[i] = objs[i]->kind;
    for (size_t k = 0; kinds && k < sizeof order / sizeof *order; k++)
        for (size_t i = 0; i < n; i++)
            if (kinds[i] == order[k]) emudev_obj_put(objs[i]);
    free(kinds);
    free(objs);
}

/* The last primary-context release (see the top of this file). */
static void emudev_context_destroy(void) {
    emudev_context_free_objects();
    emudev_memory_free_all();
    static const emudev_stat cleared[] = {EMUDEV_STAT_ALLOCATIONS, EMUDEV_STAT_HOST_ALLOCATIONS, EMUDEV_STAT_BYTES,
                                          EMUDEV_STAT_MODULES,     EMUDEV_STAT_STREAMS,          EMUDEV_STAT_EVENTS,
                                          EMUDEV_STAT_GRAPHS,      EMUDEV_STAT_GRAPH_EXECS};
    for (size_t i = 0; i < sizeof cleared / sizeof *cleared; i++) atomic_store(&emudev_g.stats[cleared[i]], 0);
    pthread_mutex_lock(&emudev_g.mu);
    atomic_store(&emudev_g.sticky, 0);
    emudev_g.sticky_text[0] = '\0';
    pthread_mutex_unlock(&emudev_g.mu);
}

/* ------------------------------------------------------------ the primary context */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    CUresult rc = emudev_enter_result("cuDevicePrimaryCtxRetain", 0, pctx);
    if (rc) return rc;
    if ((rc = emudev_device_check("cuDevicePrimaryCtxRetain", dev))) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    atomic_fetch_add(&emudev_g.primary_refs, 1);
    pthread_mutex_unlock(&emudev_g.mu);
    emudev_stat_add(EMUDEV_STAT_PRIMARY_RETAINS, 1);
    *pctx = &emudev_primary;
    return CUDA_SUCCESS;
}

/* The last release destroys the context and everything in it, as the driver does; it also clears a sticky error. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    CUresult rc = emudev_enter("cuDevicePrimaryCtxRelease", 0);
    if (rc) return rc;
    if ((rc = emudev_device_check("cuDevicePrimaryCtxRelease", dev))) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    long refs = atomic_load(&emudev_g.primary_refs);
    if (refs > 0) atomic_store(&emudev_g.primary_refs, refs - 1);
    pthread_mutex_unlock(&emudev_g.mu);
    if (refs == 0)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease: the primary context is not retained");
    emudev_stat_add(EMUDEV_STAT_PRIMARY_RETAINS, -1);
    if (refs == 1) emudev_context_destroy();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    CUresult rc = emudev_enter("cuCtxSetCurrent", 0);
    if (rc) return rc;
    if (ctx && ctx != &emudev_primary)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent: %p is not the primary context", (void *)ctx);
    emudev_tls_ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
    CUresult rc = emudev_enter_result("cuCtxGetCurrent", 0, pctx);
    if (rc) return rc;
    *pctx = emudev_tls_ctx;
    return CUDA_SUCCESS;
}

