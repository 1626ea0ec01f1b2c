/*
 * emudev_memory — device and pinned host memory, and the copies between
 * host and device.
 *
 * Device pointers are host addresses: an allocation is a posix_memalign
 * block of exactly the size asked for (so AddressSanitizer sees an
 * overrun), filled with the fill byte (0xff by default: NaN in every float
 * type, so a result read before it is written is loud), and entered in a
 * sorted table of live ranges.  The table is what makes the device
 * stricter than a GPU where a GPU would fault silently or late: every copy
 * and every matmul operand must lie inside one live allocation, both when
 * the work is enqueued and again when it runs (graph nodes may outlive the
 * memory they name), and the second check fails like a faulting kernel,
 * with the sticky CUDA_ERROR_ILLEGAL_ADDRESS.  Frees synchronise the
 * device first, as cuMemFree does on a GPU, so queued work never touches
 * freed memory.
 *
 * Copies keep CUDA's documented quirks for pageable memory: host-to-device
 * reads the host buffer at the call (the bytes are staged), device-to-host
 * returns only when the copy is done; copies from or to pinned memory
 * (cuMemHostAlloc) are truly asynchronous, and so are copies recorded into
 * a capture, which a graph replays from the buffers themselves.
 */
#include <stdlib.h>
#include <string.h>

#include "emudev_internal.h"

#define EMUDEV_ALIGN 256u

/* ------------------------------------------------------------ tables of live allocations (under emudev_g.mem_mu) */

/* Index of the range holding [p, p + bytes) in a sorted table, or -1. */
static long emudev_ranges_find(const emudev_ranges *r, uintptr_t p, size_t bytes) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {   /* first base > p */
        size_t mid = (lo + hi) / 2;
        if (r->v[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const emudev_range *e = &r->v[lo - 1];
    if (p - e->base > e->size || bytes > e->size - (p - e->base)) return -1;
    return (long)(lo - 1);
}

static int emudev_ranges_add(emudev_ranges *r, uintptr_t base, size_t size) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        emudev_range *v = realloc(r->v, cap * sizeof *v);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    size_t i = r->n;
    while (i > 0 && r->v[i - 1].base > base) i--;
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
    r->v[i] = (emudev_range){base, size};
    r->n++;
    return 0;
}

/* Removes the range starting exactly at base; its size, or 0 if none. */
static size_t emudev_ranges_remove(emudev_ranges *r, uintptr_t base) {
    long i = emudev_ranges_find(r, base, 0);
    if (i < 0 || r->v[i].base != base) return 0;
    size_t size = r->v[i].size;
    memmove(&r->v[i], &r->v[i + 1], (r->n - (size_t)i - 1) * sizeof *r->v);
    r->n--;
    return size;
}

int emudev_mem_valid(CUdeviceptr p, size_t bytes) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.dev, (uintptr_t)p, bytes);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return i >= 0;
}

static int emudev_host_pinned(const void *p, size_t bytes) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.host, (uintptr_t)p, bytes);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return i >= 0;
}

/* Whether an allocation of table r starts exactly at p. */
static int emudev_memory_known(const emudev_ranges *r, uintptr_t p) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(r, p, 0);
    int known = i >= 0 && r->v[i].base == p;
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return known;
}

/* A new allocation of `bytes`, filled and entered in table r. */
static CUresult emudev_memory_alloc(const char *name, emudev_ranges *r, size_t bytes, size_t align, void **out) {
    void *p = NULL;
    if (posix_memalign(&p, align, bytes) != 0)   /* exact size: ASan sees overruns */
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "%s: %zu bytes: out of memory", name, bytes);
    memset(p, atomic_load(&emudev_g.fill), bytes);
    pthread_mutex_lock(&emudev_g.mem_mu);
    int bad = emudev_ranges_add(r, (uintptr_t)p, bytes);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (bad) {
        free(p);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    *out = p;
    return CUDA_SUCCESS;
}

/* Waits for all queued work (device copies and kernels, pinned copies in
 * flight, may use the allocation), then takes the allocation at p out of
 * table r: its size, 0 if another thread freed it meanwhile. */
static size_t emudev_memory_retire(emudev_ranges *r, uintptr_t p) {
    emudev_streams_drain(0);
    pthread_mutex_lock(&emudev_g.mem_mu);
    size_t size = emudev_ranges_remove(r, p);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return size;
}

void emudev_memory_free_all(void) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    for (size_t i = 0; i < emudev_g.dev.n; i++) free((void *)emudev_g.dev.v[i].base);
    for (size_t i = 0; i < emudev_g.host.n; i++) free((void *)emudev_g.host.v[i].base);
    free(emudev_g.dev.v);
    free(emudev_g.host.v);
    memset(&emudev_g.dev, 0, sizeof emudev_g.dev);
    memset(&emudev_g.host, 0, sizeof emudev_g.host);
    pthread_mutex_unlock(&emudev_g.mem_mu);
}

/* ------------------------------------------------------------ memory */

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    CUresult rc = emudev_enter_result("cuMemAlloc", 1, dptr);
    if (rc) return rc;
    if (bytesize == 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc: 0 bytes");
    if ((rc = emudev_capture_unsafe("cuMemAlloc")) || (rc = emudev_sticky("cuMemAlloc"))) return rc;
    void *p;
    if ((rc = emudev_memory_alloc("cuMemAlloc", &emudev_g.dev, bytesize, EMUDEV_ALIGN, &p))) return rc;
    emudev_stat_add(EMUDEV_STAT_ALLOCATIONS, 1);
    emudev_stat_add(EMUDEV_STAT_BYTES, (long)bytesize);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    CUresult rc = emudev_enter("cuMemFree", 1);
    if (rc) return rc;
    if ((rc = emudev_capture_unsafe("cuMemFree"))) return rc;
    if (!dptr) return CUDA_SUCCESS;
    if (!emudev_memory_known(&emudev_g.dev, (uintptr_t)dptr))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx is not the start of a live allocation",
                          (unsigned long long)dptr);
    size_t size = emudev_memory_retire(&emudev_g.dev, (uintptr_t)dptr);
    if (!size) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx was freed concurrently", (unsigned long long)dptr);
    free(emudev_host_ptr(dptr));
    emudev_stat_add(EMUDEV_STAT_ALLOCATIONS, -1);
    emudev_stat_add(EMUDEV_STAT_BYTES, -(long)size);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
    CUresult rc = emudev_enter_result("cuMemHostAlloc", 1, pp);
    if (rc) return rc;
    if (bytesize == 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: 0 bytes");
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: unknown flags 0x%x", flags);
    if ((rc = emudev_capture_unsafe("cuMemHostAlloc")) || (rc = emudev_sticky("cuMemHostAlloc"))) return rc;
    void *p;
    if ((rc = emudev_memory_alloc("cuMemHostAlloc", &emudev_g.host, bytesize, 4096, &p))) return rc;
    emudev_stat_add(EMUDEV_STAT_HOST_ALLOCATIONS, 1);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
    CUresult rc = emudev_enter("cuMemFreeHost", 1);
    if (rc) return rc;
    if ((rc = emudev_capture_unsafe("cuMemFreeHost"))) return rc;
    if (!p || !emudev_memory_known(&emudev_g.host, (uintptr_t)p))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost: %p is not a live cuMemHostAlloc allocation", p);
    size_t size = emudev_memory_retire(&emudev_g.host, (uintptr_t)p);
    if (!size) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost: %p was freed concurrently", p);
    free(p);
    emudev_stat_add(EMUDEV_STAT_HOST_ALLOCATIONS, -1);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ copies */

typedef struct emudev_copy_work {
    emudev_work w;
    int to_device;
    void *dst;
    const void *src;
    size_t bytes;
    void *staged;   /* pageable host-to-device: the bytes as they were at the call */
} emudev_copy_work;

static CUresult emudev_copy_run(emudev_work *w) {
    emudev_copy_work *c = (emudev_copy_work *)w;
    const void *dev = c->to_device ? c->dst : c->src;
    /* graph nodes may outlive the memory they name */
    if (!emudev_mem_valid((CUdeviceptr)(uintptr_t)dev, c->bytes))
        return EMUDEV_ERR(CUDA_ERROR_ILLEGAL_ADDRESS, "%s of %zu bytes: device range at %p is no longer allocated",
                          w->ops->what, c->bytes, dev);
    memcpy(c->dst, c->staged ? c->staged : c->src, c->bytes);
    emudev_stat_add(EMUDEV_STAT_COPIES, 1);
    emudev_stat_add(c->to_device ? EMUDEV_STAT_BYTES_TO_DEVICE : EMUDEV_STAT_BYTES_TO_HOST, (long)c->bytes);
    return CUDA_SUCCESS;
}

static void emudev_copy_free(emudev_work *w) {
    free(((emudev_copy_work *)w)->staged);
    free(w);
}

/* A staged copy keeps its own staged bytes. */
static emudev_work *emudev_copy_clone(const emudev_work *w) {
    const emudev_copy_work *c = (const emudev_copy_work *)w;
    emudev_copy_work *n = (emudev_copy_work *)emudev_work_copy(w, sizeof *n);
    if (n && c->staged) {
        if (!(n->staged = malloc(c->bytes))) {
            free(n);
            return NULL;
        }
        memcpy(n->staged, c->staged, c->bytes);
    }
    return n ? &n->w : NULL;
}

/*
 * A copy node's parameters, as cuGraphMemcpyNodeGetParams reports them:
 * one-dimensional, both sides CU_MEMORYTYPE_UNIFIED with their addresses
 * in srcDevice and dstDevice.  That is how the driver records a copy made
 * by stream capture (a captured cuMemcpyAsync reads back UNIFIED on both
 * sides, NVIDIA/cuda-python#2649), and since an update may not change the
 * memory types, a runtime that writes DEVICE and HOST into its update
 * instead of starting from the node's own parameters fails here as it
 * could on a GPU.
 */
static void emudev_copy_params(const emudev_work *w, void *out) {
    const emudev_copy_work *c = (const emudev_copy_work *)w;
    CUDA_MEMCPY3D *p = out;
    memset(p, 0, sizeof *p);
    p->srcMemoryType = p->dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p->srcDevice = (CUdeviceptr)(uintptr_t)c->src;
    p->dstDevice = (CUdeviceptr)(uintptr_t)c->dst;
    p->WidthInBytes = c->bytes;
    p->Height = p->Depth = 1;
}

/*
 * A copy node of an instantiated graph takes new parameters as
 * cuGraphExecMemcpyNodeSetParams documents them: one-dimensional, the
 * memory types the node has (UNIFIED, above: "changing either the source
 * or destination memory type ... is not supported"), non-zero, the device
 * side inside one live allocation.  A staged (pageable host-to-device)
 * copy keeps the bytes of its call and cannot be re-aimed.
 */
static CUresult emudev_copy_update(emudev_work *w, const void *params) {
    emudev_copy_work *c = (emudev_copy_work *)w;
    const CUDA_MEMCPY3D *p = params;
    static const char fn[] = "cuGraphExecMemcpyNodeSetParams";
    if (p->Height != 1 || p->Depth != 1 || p->srcXInBytes || p->srcY || p->srcZ || p->srcLOD || p->dstXInBytes ||
        p->dstY || p->dstZ || p->dstLOD || p->srcArray || p->dstArray || p->reserved0 || p->reserved1)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: only one-dimensional copies are supported", fn);
    if (p->srcMemoryType != CU_MEMORYTYPE_UNIFIED || p->dstMemoryType != CU_MEMORYTYPE_UNIFIED)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                          "%s: memory types %d -> %d, but the node's are UNIFIED -> UNIFIED (an update may not change "
                          "them: start from cuGraphMemcpyNodeGetParams)",
                          fn, (int)p->srcMemoryType, (int)p->dstMemoryType);
    if (p->WidthInBytes == 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: zero-length copies are not supported", fn);
    if (c->staged) return EMUDEV_ERR(CUDA_ERROR_NOT_SUPPORTED, "%s: a copy from pageable memory keeps its bytes", fn);
    CUdeviceptr dev = c->to_device ? p->dstDevice : p->srcDevice;
    const void *host = emudev_host_ptr(c->to_device ? p->srcDevice : p->dstDevice);
    if (!host || !emudev_mem_valid(dev, p->WidthInBytes))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: device range [0x%llx, +%zu) is not inside one live allocation",
                          fn, (unsigned long long)dev, p->WidthInBytes);
    c->dst = emudev_host_ptr(p->dstDevice);
    c->src = emudev_host_ptr(p->srcDevice);
    c->bytes = p->WidthInBytes;
    return CUDA_SUCCESS;
}

static const emudev_work_ops emudev_htod_ops = {"cuMemcpyHtoDAsync", emudev_copy_run,  emudev_copy_clone,
                                                emudev_copy_free,    NULL,            NULL,
                                                emudev_copy_update,  emudev_copy_params};
static const emudev_work_ops emudev_dtoh_ops = {"cuMemcpyDtoHAsync", emudev_copy_run,  emudev_copy_clone,
                                                emudev_copy_free,    NULL,            NULL,
                                                emudev_copy_update,  emudev_copy_params};

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
    CUresult rc = emudev_enter("cuMemcpyHtoD", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    rc = emudev_capture_unsafe_locked("cuMemcpyHtoD");
    if (!rc) rc = emudev_capture_legacy_locked("cuMemcpyHtoD");
    pthread_mutex_unlock(&emudev_g.mu);
    if (rc || bytes == 0) return rc;
    if (!src) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD: NULL source");
    if (!emudev_mem_valid(dst, bytes))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD: [0x%llx, +%zu) is not inside one live allocation",
                          (unsigned long long)dst, bytes);
    emudev_streams_drain(1);   /* the legacy stream waits for every blocking stream */
    if ((rc = emudev_sticky("cuMemcpyHtoD"))) return rc;
    memcpy(emudev_host_ptr(dst), src, bytes);
    emudev_stat_add(EMUDEV_STAT_COPIES, 1);
    emudev_stat_add(EMUDEV_STAT_BYTES_TO_DEVICE, (long)bytes);
    return CUDA_SUCCESS;
}

static CUresult emudev_copy_async(const char *name, int to_device, void *dst, const void *src, size_t bytes,
                                  CUstream hs) {
    CUresult rc = emudev_enter(name, 1);
    if (rc || bytes == 0) return rc;
    CUdeviceptr dev = (CUdeviceptr)(uintptr_t)(to_device ? dst : src);
    const void *host = to_device ? src : dst;
    if (!host) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: NULL host pointer", name);
    if (!emudev_mem_valid(dev, bytes))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: device range [0x%llx, +%zu) is not inside one live allocation",
                          name, (unsigned long long)dev, bytes);
    emudev_stream *s;
    if ((rc = emudev_stream_resolve(hs, name, &s))) return rc;
    int pageable = !emudev_host_pinned(host, bytes) && !emudev_stream_capturing(s);
    emudev_copy_work *c = calloc(1, sizeof *c);
    if (!c || (pageable && to_device && !(c->staged = malloc(bytes)))) {
        free(c);
        emudev_obj_put(&s->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    c->w.ops = to_device ? &emudev_htod_ops : &emudev_dtoh_ops;
    c->to_device = to_device;
    c->dst = dst;
    c->src = src;
    c->bytes = bytes;
    if (c->staged) memcpy(c->staged, src, bytes);
    rc = emudev_submit_named(hs, &c->w, name);
    /* device-to-pageable returns only once the copy is done, as the driver documents */
    if (rc == CUDA_SUCCESS && pageable && !to_device) {
        emudev_stream_sync(s);
        rc = emudev_sticky(name);
    }
    emudev_obj_put(&s->o);
    return rc;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
    return emudev_copy_async("cuMemcpyHtoDAsync", 1, emudev_host_ptr(dst), src, bytes, s);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
    return emudev_copy_async("cuMemcpyDtoHAsync", 0, dst, emudev_host_ptr(src), bytes, s);
}

