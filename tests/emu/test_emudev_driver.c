/*
 * test_emudev_driver — the emulated device's CUDA driver half, called the
 * way the runtime calls the real driver.
 *
 * The cases follow the promises runtime/emu/emudev_driver.c makes: CUDA's
 * error codes for bad arguments and states; work that stays queued until a
 * synchronisation point (so a result read early is the fill byte); kernel
 * arguments copied at launch and at capture; graphs replayed with their
 * frozen arguments; the stream-capture interaction rules of each mode,
 * across threads; sticky errors after a faulting kernel and recovery by
 * releasing the primary context; failure injection; the null device; and
 * counters that return to zero.  Several threads with their own streams
 * run at once and must each get their own correct answers.
 *
 * The library is linked statically (its state is this process's), except
 * for the export check, which dlopens build/libbertc_emudev.so as the
 * runtime does.  Every case starts from a freshly retained context and
 * ends by releasing it, checking that nothing is left alive.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "kimage.h"
#include "emu_build.h"
#include "device.h"
#include "emu.h"
#include "emudev.h"

static const char kernels_src[] =
    "extern \"C\" __global__ void k_set(int *out, int value, int n) {\n"
    "    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
    "    if (i < n) out[i] = value + i;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_set)\n"
    "\n"
    "extern \"C\" __global__ void k_add(int *out, int value, int n) {\n"
    "    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
    "    if (i < n) out[i] += value;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_add)\n"
    "\n"
    "extern \"C\" __global__ void k_axpy(float *y, const float *x, float a, int n) {\n"
    "    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_axpy)\n"
    "\n"
    "extern \"C\" __global__ void k_smem_copy(int *out, const int *in) {\n"
    "    BERTC_DYNAMIC_SMEM(int, s);\n"
    "    unsigned t = threadIdx.x;\n"
    "    s[t] = in[t];\n"
    "    __syncthreads();\n"
    "    out[t] = s[blockDim.x - 1 - t];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_smem_copy)\n";

/* Programmatic dependent launch and L2 prefetch, through the driver. */
static const char pdl_src[] =
    "extern \"C\" __global__ void k_produce(float *buf, const float *in) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float v = in[g] * 2.0f;\n"
    "    cudaTriggerProgrammaticLaunchCompletion();\n"
    "    buf[g] = v;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_produce)\n"
    "\n"
    "extern \"C\" __global__ void k_consume(float *out, const float *buf, const float *w) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float mine = w[g] * 3.0f;\n"
    "    cudaGridDependencySynchronize();\n"
    "    out[g] = buf[g] + mine;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_consume)\n"
    "\n"
    "extern \"C\" __global__ void k_consume_early(float *out, const float *buf, const float *w) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float b = buf[g];\n"
    "    cudaGridDependencySynchronize();\n"
    "    out[g] = b + w[g] * 3.0f;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_consume_early)\n"
    "\n"
    "extern \"C\" __global__ void k_prefetch_out(int *out) {\n"
    "    if (threadIdx.x == 0) bertc_emu_prefetch_l2(out, 256);\n"
    "    if (threadIdx.x == 1) bertc_emu_prefetch_l2(out + 60, 32);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_prefetch_out)\n";

static char *image;          /* the EMU image's bytes */
static size_t image_size;
static char image_error[4096];

#define NEED_IMAGE() CHECK_REQUIRE(image, "no kernel image: %s", image_error)

#define CU(call) CHECK((call) == CUDA_SUCCESS, "%s failed: %s", #call, bertc_emudev_last_error())
#define CU_IS(call, code)                                                                                        \
    do {                                                                                                         \
        CUresult r_ = (call);                                                                                    \
        CHECK(r_ == (code), "%s returned %d, expected %s (%d); last error: %s", #call, (int)r_, #code, (int)(code), \
              bertc_emudev_last_error());                                                                        \
    } while (0)

static CUcontext ctx_up(void) {
    CUcontext ctx = NULL;
    CU(cuInit(0));
    CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU(cuCtxSetCurrent(ctx));
    return ctx;
}

/* Releases the context after checking that the case destroyed everything it made. */
static void ctx_down(void) {
    bertc_emudev_stats st;
    bertc_emudev_get_stats(&st);
    CHECK(st.live_allocations == 0 && st.live_host_allocations == 0 && st.live_bytes == 0 && st.live_modules == 0 &&
              st.live_streams == 0 && st.live_events == 0 && st.live_graphs == 0 && st.live_graph_execs == 0,
          "objects left alive: alloc %ld host %ld bytes %ld modules %ld streams %ld events %ld graphs %ld execs %ld",
          st.live_allocations, st.live_host_allocations, st.live_bytes, st.live_modules, st.live_streams,
          st.live_events, st.live_graphs, st.live_graph_execs);
    CU(cuCtxSetCurrent(NULL));
    CU(cuDevicePrimaryCtxRelease(0));
    bertc_emudev_get_stats(&st);
    CHECK(st.live_primary_retains == 0, "%ld primary retains left", st.live_primary_retains);
}

static CUmodule module_load(void) {
    CUmodule m = NULL;
    CU(cuModuleLoadData(&m, image));
    return m;
}

static CUfunction function_get(CUmodule m, const char *name) {
    CUfunction f = NULL;
    CU(cuModuleGetFunction(&f, m, name));
    return f;
}

static CUresult launch_int(CUfunction f, CUstream s, CUdeviceptr out, int value, int n) {
    void *args[] = {&out, &value, &n};
    return cuLaunchKernel(f, (unsigned)(n + 63) / 64, 1, 1, 64, 1, 1, 0, s, args, NULL);
}

/* What most cases start from: a retained context, the image loaded as a
 * module, one of its kernels and a stream. */
typedef struct drv {
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUstream s;
} drv;

/* NEED_IMAGE, ctx_up, the module, kernel `kernel` and (flags >= 0) a stream
 * created with flags: 0, or -1 (CHECKed) when there is no image. */
static int drv_up(drv *dv, const char *kernel, int flags) {
    memset(dv, 0, sizeof *dv);
    CHECK(image != NULL, "no kernel image: %s", image_error);
    if (!image) return -1;
    dv->ctx = ctx_up();
    dv->m = module_load();
    dv->f = function_get(dv->m, kernel);
    if (flags >= 0) CU(cuStreamCreate(&dv->s, (unsigned)flags));
    return 0;
}

/* The module unloaded and the context released (ctx_down's checks). */
static void drv_down(drv *dv) {
    CU(cuModuleUnload(dv->m));
    ctx_down();
}

/* ------------------------------------------------------------ cases */

static void test_before_init(void) {
    int n = -1;
    CU_IS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CUdeviceptr p;
    CU_IS(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    CUcontext c;
    CU_IS(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_NOT_INITIALIZED);
    CU_IS(cuStreamSynchronize(NULL), CUDA_ERROR_NOT_INITIALIZED);
    /* these two work before cuInit in the driver too */
    int v = 0;
    CU(cuDriverGetVersion(&v));
    CHECK(v == 13000, "driver version %d", v);
    const char *s = NULL;
    CU(cuGetErrorString(CUDA_ERROR_NOT_INITIALIZED, &s));
    CHECK(s && strcmp(s, "initialization error") == 0, "string '%s'", s ? s : "(null)");
}

static void test_device_queries(void) {
    CU_IS(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CU(cuInit(0));
    int n = 0;
    CU(cuDeviceGetCount(&n));
    CHECK(n == 1, "%d devices", n);
    CUdevice d = -1;
    CU(cuDeviceGet(&d, 0));
    CHECK(d == 0, "device %d", d);
    CU_IS(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    static const struct {
        CUdevice_attribute a;
        int v;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        int v = -1;
        CU(cuDeviceGetAttribute(&v, attrs[i].a, 0));
        CHECK(v == attrs[i].v, "attribute %d is %d, expected %d", (int)attrs[i].a, v, attrs[i].v);
    }
    int sms = 0;
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(sms > 0, "%d multiprocessors", sms);
    int v;
    CU_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3), CUDA_ERROR_INVALID_DEVICE);
    CU_IS(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_ERROR_INVALID_VALUE);

    bertc_emudev_set_arch(8, 6);
    int major = 0, minor = 0;
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    CHECK(major == 8 && minor == 6, "capability %d.%d after set_arch(8, 6)", major, minor);
    char arch[16];
    device_arch_name(major, minor, arch, sizeof arch);
    CHECK(strcmp(arch, "sm_86") == 0, "arch %s", arch);
    bertc_emudev_set_arch(0, 0);

    char name[64];
    CU(cuDeviceGetName(name, sizeof name, 0));
    CHECK(strcmp(name, "bertc emulated device") == 0, "name '%s'", name);
    CU(cuDeviceGetName(name, 6, 0));
    CHECK(strcmp(name, "bertc") == 0, "truncated name '%s'", name);
    CU_IS(cuDeviceGetName(NULL, 10, 0), CUDA_ERROR_INVALID_VALUE);

    const char *s = NULL;
    CU(cuGetErrorString(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s));
    CHECK(s && strcmp(s, "operation not permitted when stream is capturing") == 0, "'%s'", s ? s : "(null)");
    CU(cuGetErrorString(CUDA_ERROR_LAUNCH_FAILED, &s));
    CHECK(s && strcmp(s, "unspecified launch failure") == 0, "'%s'", s ? s : "(null)");
    CU_IS(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK(s == NULL, "unknown code gives a string");
}

static void test_context(void) {
    CU(cuInit(0));
    CU(cuCtxSetCurrent(NULL));
    CUdeviceptr p;
    CU_IS(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext a = NULL, b = NULL, cur = (CUcontext)1;
    CU(cuCtxGetCurrent(&cur));
    CHECK(cur == NULL, "a current context before any was set");
    CU(cuDevicePrimaryCtxRetain(&a, 0));
    CU(cuDevicePrimaryCtxRetain(&b, 0));
    CHECK(a && a == b, "primary context retains differ: %p %p", (void *)a, (void *)b);
    CU_IS(cuDevicePrimaryCtxRetain(&a, 1), CUDA_ERROR_INVALID_DEVICE);
    bertc_emudev_stats st;
    bertc_emudev_get_stats(&st);
    CHECK(st.live_primary_retains == 2, "%ld retains", st.live_primary_retains);
    CU_IS(cuCtxSetCurrent((CUcontext)&st), CUDA_ERROR_INVALID_CONTEXT);
    CU(cuCtxSetCurrent(a));
    CU(cuCtxGetCurrent(&cur));
    CHECK(cur == a, "current context %p, expected %p", (void *)cur, (void *)a);
    CU(cuMemAlloc(&p, 16));
    CU(cuMemFree(p));
    CU(cuDevicePrimaryCtxRelease(0));
    CU(cuMemAlloc(&p, 16));   /* one retain is left: still alive */
    CU(cuMemFree(p));
    CU(cuDevicePrimaryCtxRelease(0));
    CU_IS(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CU(cuCtxSetCurrent(NULL));
}

static void test_memory(void) {
    ctx_up();
    CUdeviceptr p = 0, q = 0;
    CU(cuMemAlloc(&p, 1000));
    CHECK(p % 256 == 0, "allocation 0x%llx is not 256-byte aligned", (unsigned long long)p);
    const unsigned char *b = (const unsigned char *)(uintptr_t)p;
    int all_ff = 1;
    for (int i = 0; i < 1000; i++) all_ff &= b[i] == 0xff;
    CHECK(all_ff, "new memory is not filled with 0xff");
    bertc_emudev_set_fill(0x00);
    CU(cuMemAlloc(&q, 64));
    const unsigned char *c = (const unsigned char *)(uintptr_t)q;
    CHECK(c[0] == 0 && c[63] == 0, "fill 0x00 not applied");
    bertc_emudev_set_fill(0xff);
    bertc_emudev_stats st;
    bertc_emudev_get_stats(&st);
    CHECK(st.live_allocations == 2 && st.live_bytes == 1064, "%ld allocations, %ld bytes", st.live_allocations,
          st.live_bytes);

    CU_IS(cuMemAlloc(&q, 0), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemAlloc(NULL, 8), CUDA_ERROR_INVALID_VALUE);
    int src[250];
    for (int i = 0; i < 250; i++) src[i] = (int)check_rng_range(-1000000, 1000000);
    CU(cuMemcpyHtoD(p, src, sizeof src));
    CHECK(memcmp(b, src, sizeof src) == 0, "synchronous copy did not land");
    CU_IS(cuMemcpyHtoD(p + 8, src, 1000), CUDA_ERROR_INVALID_VALUE);
    CHECK(strstr(bertc_emudev_last_error(), "not inside one live allocation") != NULL, "message: %s",
          bertc_emudev_last_error());
    CU_IS(cuMemcpyHtoD(p - 8, src, 8), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemcpyHtoD(q + 60, src, 8), CUDA_ERROR_INVALID_VALUE);   /* spans the end of q */
    CU(cuMemcpyHtoD(q + 56, src, 8));

    int *pinned = NULL;
    CU(cuMemHostAlloc((void **)&pinned, sizeof src, 0));
    CU_IS(cuMemHostAlloc((void **)&pinned, 16, 0x80), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemcpyDtoHAsync(pinned, p, sizeof src, NULL));
    CU(cuStreamSynchronize(NULL));
    CHECK(memcmp(pinned, src, sizeof src) == 0, "device-to-host copy did not land");
    CU_IS(cuMemcpyDtoHAsync(pinned, p + 1000, 4, NULL), CUDA_ERROR_INVALID_VALUE);

    CU_IS(cuMemFree(p + 16), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuMemFreeHost(src), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFreeHost(pinned));
    CU(cuMemFree(p));
    CU_IS(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFree(q));
    ctx_down();
}

static void test_deferred_execution(void) {
    drv dv;
    if (drv_up(&dv, "k_set", 0)) return;
    int n = 100;
    CUdeviceptr out;
    CU(cuMemAlloc(&out, (size_t)n * 4));
    const int *view = (const int *)(uintptr_t)out;
    CU(launch_int(dv.f, dv.s, out, 7, n));
    CHECK(view[0] == -1 && view[n - 1] == -1, "the kernel ran before a synchronisation: %d", view[0]);
    int *pinned;
    CU(cuMemHostAlloc((void **)&pinned, (size_t)n * 4, 0));
    CU(cuMemcpyDtoHAsync(pinned, out, (size_t)n * 4, dv.s));
    CHECK(pinned[5] == -1, "a pinned copy completed before a synchronisation");
    CU(cuStreamSynchronize(dv.s));
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= view[i] == 7 + i && pinned[i] == 7 + i;
    CHECK(ok, "wrong results after synchronisation: %d %d", view[3], pinned[3]);

    /* pageable device-to-host returns only when done; pageable host-to-device reads at the call */
    CU(launch_int(dv.f, dv.s, out, 100, n));
    int pageable[100];
    memset(pageable, 0, sizeof pageable);
    CU(cuMemcpyDtoHAsync(pageable, out, sizeof pageable, dv.s));
    CHECK(pageable[10] == 110, "pageable device-to-host copy did not complete at return: %d", pageable[10]);
    int staged[100];
    for (int i = 0; i < n; i++) staged[i] = 3 * i;
    CU(cuMemcpyHtoDAsync(out, staged, sizeof staged, dv.s));
    staged[10] = -5;
    CU(cuStreamSynchronize(dv.s));
    CHECK(view[10] == 30, "pageable host-to-device copy read the buffer late: %d", view[10]);

    /* the synchronous copy drains the legacy stream, which waits for blocking streams */
    CU(launch_int(dv.f, dv.s, out, 1, n));
    CU(cuMemcpyHtoD(out, staged, 4));
    CHECK(view[0] == 3 * 0 && view[1] == 2, "cuMemcpyHtoD did not order after queued work: %d %d", view[0], view[1]);

    bertc_emudev_stats st;
    bertc_emudev_get_stats(&st);
    CHECK(st.live_streams == 1 && st.live_modules == 1, "streams %ld modules %ld", st.live_streams, st.live_modules);
    CU(launch_int(dv.f, dv.s, out, 9, n));
    CU(cuStreamDestroy(dv.s));   /* runs what is queued */
    CHECK(view[2] == 11, "cuStreamDestroy dropped queued work: %d", view[2]);
    CU_IS(cuStreamSynchronize(dv.s), CUDA_ERROR_INVALID_HANDLE);
    CU(cuMemFreeHost(pinned));
    CU(cuMemFree(out));
    drv_down(&dv);
}

static void test_arguments_copied(void) {
    drv dv;
    if (drv_up(&dv, "k_axpy", CU_STREAM_NON_BLOCKING)) return;
    enum { N = 333 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)check_rng_uniform() * 4.0f - 2.0f;
        y[i] = (float)check_rng_uniform() * 4.0f - 2.0f;
    }
    CUdeviceptr dx, dy;
    CU(cuMemAlloc(&dx, sizeof x));
    CU(cuMemAlloc(&dy, sizeof y));
    CU(cuMemcpyHtoDAsync(dx, x, sizeof x, dv.s));
    CU(cuMemcpyHtoDAsync(dy, y, sizeof y, dv.s));
    float a = 2.5f;
    int n = N;
    void *args[] = {&dy, &dx, &a, &n};
    CU(cuLaunchKernel(dv.f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, dv.s, args, NULL));
    const float a_used = a;
    const CUdeviceptr dy_used = dy;
    a = -100.0f;   /* after the launch: none of this may reach the kernel */
    n = 1;
    dy = dx;
    float r[N];
    CU(cuMemcpyDtoHAsync(r, dy_used, sizeof r, dv.s));   /* pageable: complete at return */
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= fabsf(r[i] - (a_used * x[i] + y[i])) <= 1e-6f;
    CHECK(ok, "dv.f used changed arguments: r[300] = %g, expected %g", r[300], a_used * x[300] + y[300]);
    CHECK(memcmp((const void *)(uintptr_t)dx, x, sizeof x) == 0, "x was written");
    CU(cuMemFree(dx));
    CU(cuMemFree(dy_used));
    CU(cuStreamDestroy(dv.s));
    drv_down(&dv);
}

static void test_graph_replay(void) {
    drv dv;
    if (drv_up(&dv, "k_add", 0)) return;
    enum { N = 200 };
    CUdeviceptr out;
    CU(cuMemAlloc(&out, N * 4));
    int zeros[N] = {0};
    CU(cuMemcpyHtoD(out, zeros, sizeof zeros));
    bertc_emudev_stats before, after;
    bertc_emudev_get_stats(&before);

    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    int v = 7;
    void *args[] = {&out, &v, &(int){N}};
    CU(cuLaunchKernel(dv.f, 4, 1, 1, 64, 1, 1, 0, dv.s, args, NULL));
    v = 1000;   /* frozen at capture: the node keeps 7 */
    CU(launch_int(dv.f, dv.s, out, 1, N));
    CUgraph g = NULL;
    CU(cuStreamEndCapture(dv.s, &g));
    CHECK(g != NULL, "no graph");
    CU(cuStreamSynchronize(dv.s));
    const int *view = (const int *)(uintptr_t)out;
    CHECK(view[0] == 0, "captured work ran: %d", view[0]);

    CUgraphExec x = NULL;
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuGraphDestroy(g));   /* the exec is a deep copy */
    CU_IS(cuGraphDestroy(g), CUDA_ERROR_INVALID_HANDLE);
    for (int i = 0; i < 3; i++) CU(cuGraphLaunch(x, dv.s));
    CHECK(view[N - 1] == 0, "graph launches ran before a synchronisation");
    CU(cuStreamSynchronize(dv.s));
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= view[i] == 24;
    CHECK(ok, "after 3 replays of (+7, +1): %d %d, expected 24", view[0], view[N - 1]);
    bertc_emudev_get_stats(&after);
    CHECK(after.graph_launches - before.graph_launches == 3, "%ld graph launches",
          after.graph_launches - before.graph_launches);
    CHECK(after.kernel_launches - before.kernel_launches == 6, "%ld kernel launches",
          after.kernel_launches - before.kernel_launches);

    /* an empty capture is a valid graph too; launching onto the legacy stream works */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU(cuStreamEndCapture(dv.s, &g));
    CU(cuGraphDestroy(g));
    CU(cuGraphLaunch(x, NULL));
    CU(cuStreamSynchronize(NULL));
    CHECK(view[0] == 32, "graph launch on the legacy stream: %d", view[0]);
    CU(cuGraphExecDestroy(x));
    CU_IS(cuGraphLaunch(x, dv.s), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CU_IS(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    /* memory freed under a graph: the copy node reports it instead of touching freed memory */
    CUdeviceptr tmp;
    CU(cuMemAlloc(&tmp, 64));
    int host[16];
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuMemcpyDtoHAsync(host, tmp, sizeof host, dv.s));
    CU(cuStreamEndCapture(dv.s, &g));
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuMemFree(tmp));
    CU(cuGraphLaunch(x, dv.s));
    CU_IS(cuStreamSynchronize(dv.s), CUDA_ERROR_ILLEGAL_ADDRESS);
    CU(cuGraphExecDestroy(x));
    CU(cuGraphDestroy(g));
    CU(cuStreamDestroy(dv.s));
    CU(cuMemFree(out));
    drv_down(&dv);   /* also clears the sticky error */
}

typedef struct capture_peer {
    void (*job)(struct capture_peer *);   /* what its thread does */
    CUcontext ctx;
    CUstream stream;
    pthread_barrier_t *barrier;
    CUresult alloc_rc, end_rc, begin_rc;
    CUgraph graph;
    CUfunction f;
    CUdeviceptr out;
} capture_peer;

/* A peer's thread: the context made current, then the peer's job. */
static void *peer_thread(void *arg) {
    capture_peer *p = arg;
    cuCtxSetCurrent(p->ctx);
    p->job(p);
    return NULL;
}

/* Runs the jobs of n (<= 2) peers on threads of their own, at once, and waits for them. */
static void peers_run(capture_peer *p, int n) {
    pthread_t t[2];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, peer_thread, &p[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

/* One cuMemAlloc (and free) while the main thread captures. */
static void peer_alloc(capture_peer *p) {
    CUdeviceptr q = 0;
    p->alloc_rc = cuMemAlloc(&q, 32);
    if (p->alloc_rc == CUDA_SUCCESS) cuMemFree(q);
}

static void peer_end(capture_peer *p) { p->end_rc = cuStreamEndCapture(p->stream, &p->graph); }

/* The same allocation with the thread's interaction mode set to thread-local
 * (then put back): another thread's global-mode capture no longer concerns it. */
static void peer_alloc_thread_local(capture_peer *p) {
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    p->begin_rc = cuThreadExchangeStreamCaptureMode(&m);
    peer_alloc(p);
    CUstreamCaptureMode back = m;
    cuThreadExchangeStreamCaptureMode(&back);
    if (m != CU_STREAM_CAPTURE_MODE_GLOBAL || back != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) p->begin_rc = CUDA_ERROR_UNKNOWN;
}

/* Both threads capture in thread-local mode at once; each one's own alloc fails, the other's capture is no obstacle. */
static void peer_thread_local(capture_peer *p) {
    p->begin_rc = cuStreamBeginCapture(p->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    launch_int(p->f, p->stream, p->out, 5, 16);
    pthread_barrier_wait(p->barrier);   /* both capturing now */
    peer_alloc(p);                      /* own capture: prohibited */
    pthread_barrier_wait(p->barrier);
    peer_end(p);
}

static void test_capture_rules(void) {
    drv dv;
    if (drv_up(&dv, "k_set", 0)) return;
    CUstream s2;
    CU(cuStreamCreate(&s2, 0));
    CUdeviceptr out, out2, q;
    CU(cuMemAlloc(&out, 256));
    CU(cuMemAlloc(&out2, 256));
    CUgraph g = (CUgraph)1;

    /* global mode: an allocation on this thread fails and invalidates the capture */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(launch_int(dv.f, dv.s, out, 1, 16));
    CU_IS(cuMemAlloc(&q, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(launch_int(dv.f, dv.s, out, 1, 16), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL, "an invalidated capture gave a graph");
    CU(launch_int(dv.f, dv.s, out, 1, 16));   /* the stream works normally again */
    CU(cuStreamSynchronize(dv.s));

    /* global mode: any other thread's unsafe call fails too */
    capture_peer peer = {.job = peer_alloc, .ctx = dv.ctx, .stream = dv.s};
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    peers_run(&peer, 1);
    CHECK(peer.alloc_rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "other thread's alloc during global capture: %d",
          (int)peer.alloc_rc);
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* ... unless that thread's own interaction mode is thread-local (or relaxed) */
    capture_peer tl = {.job = peer_alloc_thread_local, .ctx = dv.ctx, .stream = dv.s};
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(launch_int(dv.f, dv.s, out, 1, 16));
    peers_run(&tl, 1);
    CHECK(tl.begin_rc == CUDA_SUCCESS && tl.alloc_rc == CUDA_SUCCESS,
          "a thread-local thread's alloc during another's global capture: exchange %d, alloc %d", (int)tl.begin_rc,
          (int)tl.alloc_rc);
    CU(cuStreamEndCapture(dv.s, &g));   /* not invalidated */
    CU(cuGraphDestroy(g));
    CUstreamCaptureMode bad = (CUstreamCaptureMode)7;
    CU_IS(cuThreadExchangeStreamCaptureMode(&bad), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
    /* this thread in relaxed mode: even its own global capture does not stop it */
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU(cuThreadExchangeStreamCaptureMode(&m));
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuMemAlloc(&q, 64));
    CU(cuMemFree(q));
    CU(cuStreamEndCapture(dv.s, &g));
    CU(cuGraphDestroy(g));
    CU(cuThreadExchangeStreamCaptureMode(&m));
    CHECK(m == CU_STREAM_CAPTURE_MODE_RELAXED, "the exchange gave back %d", (int)m);

    /* thread-local mode: other threads may allocate */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    peers_run(&peer, 1);
    CHECK(peer.alloc_rc == CUDA_SUCCESS, "other thread's alloc during a thread-local capture: %d", (int)peer.alloc_rc);
    CU_IS(cuMemHostAlloc((void **)&q, 64, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);   /* but not this one */
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* relaxed mode tolerates unsafe calls */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU(cuMemAlloc(&q, 64));
    CU(cuMemFree(q));
    CU(launch_int(dv.f, dv.s, out, 1, 16));
    CU(cuStreamEndCapture(dv.s, &g));
    CU(cuGraphDestroy(g));

    /* two threads capturing in thread-local mode at once */
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    capture_peer ab[2] = {{.job = peer_thread_local, .ctx = dv.ctx, .stream = dv.s, .barrier = &barrier, .f = dv.f, .out = out},
                          {.job = peer_thread_local, .ctx = dv.ctx, .stream = s2, .barrier = &barrier, .f = dv.f, .out = out2}};
    peers_run(ab, 2);
    pthread_barrier_destroy(&barrier);
    const capture_peer a = ab[0], b = ab[1];
    CHECK(a.begin_rc == CUDA_SUCCESS && b.begin_rc == CUDA_SUCCESS, "begin: %d %d", (int)a.begin_rc, (int)b.begin_rc);
    CHECK(a.alloc_rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && b.alloc_rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
          "own alloc during thread-local capture: %d %d", (int)a.alloc_rc, (int)b.alloc_rc);
    CHECK(a.end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && b.end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
          "end after own unsafe call: %d %d", (int)a.end_rc, (int)b.end_rc);

    /* ... and without the unsafe call both graphs come out, independent of each other */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(launch_int(dv.f, dv.s, out, 40, 16));
    capture_peer c = {.job = peer_end, .ctx = dv.ctx, .stream = s2};
    CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU(launch_int(dv.f, s2, out2, 50, 16));
    /* wrong thread: a non-relaxed capture ends on the thread that began it */
    peers_run(&c, 1);
    CHECK(c.end_rc == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "end from another thread: %d", (int)c.end_rc);
    CUgraph g1, g2;
    CU(cuStreamEndCapture(s2, &g2));
    CU(cuStreamEndCapture(dv.s, &g1));
    CUgraphExec x1, x2;
    CU(cuGraphInstantiate(&x1, g1, 0));
    CU(cuGraphInstantiate(&x2, g2, 0));
    CU(cuGraphLaunch(x1, dv.s));
    CU(cuGraphLaunch(x2, s2));
    CU(cuStreamSynchronize(dv.s));
    CU(cuStreamSynchronize(s2));
    CHECK(((int *)(uintptr_t)out)[3] == 43 && ((int *)(uintptr_t)out2)[3] == 53, "graphs gave %d %d",
          ((int *)(uintptr_t)out)[3], ((int *)(uintptr_t)out2)[3]);
    CU(cuGraphExecDestroy(x1));
    CU(cuGraphExecDestroy(x2));
    CU(cuGraphDestroy(g1));
    CU(cuGraphDestroy(g2));

    /* a relaxed capture may be ended elsewhere */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_RELAXED));
    c.stream = dv.s;
    c.graph = NULL;
    peers_run(&c, 1);
    CHECK(c.end_rc == CUDA_SUCCESS && c.graph, "relaxed end from another thread: %d", (int)c.end_rc);
    if (c.graph) CU(cuGraphDestroy(c.graph));

    /* synchronising a capturing stream, and legacy-stream work while a blocking stream captures */
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_IS(cuStreamSynchronize(dv.s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_RELAXED));
    int one = 1;
    CU_IS(cuMemcpyHtoD(out, &one, 4), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CU_IS(cuStreamEndCapture(dv.s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CUstream nb;
    CU(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CU(cuStreamBeginCapture(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU(cuMemcpyHtoD(out, &one, 4));   /* non-blocking streams do not synchronise with the legacy stream */
    CU(cuStreamEndCapture(nb, &g));
    CU(cuGraphDestroy(g));

    /* an event recorded in a capture cannot be waited for */
    CUevent e;
    CU(cuEventCreate(&e, 0));
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(cuEventRecord(e, dv.s));
    CU_IS(cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
    CU(cuStreamEndCapture(dv.s, &g));
    CU(cuGraphDestroy(g));
    CU(cuEventDestroy(e));

    CU(cuStreamDestroy(nb));
    CU(cuStreamDestroy(dv.s));
    CU(cuStreamDestroy(s2));
    CU(cuMemFree(out));
    CU(cuMemFree(out2));
    drv_down(&dv);
}

static void test_events(void) {
    drv dv;
    if (drv_up(&dv, "k_add", 0)) return;
    enum { N = 1 << 16 };
    CUdeviceptr out;
    CU(cuMemAlloc(&out, N * 4));
    CUevent a, b, nt, never;
    CU(cuEventCreate(&a, 0));
    CU(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    CU(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    CU(cuEventCreate(&never, 0));
    CU_IS(cuEventCreate(&a, 0x40), CUDA_ERROR_INVALID_VALUE);
    float ms = -1;
    CU_IS(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);   /* never recorded */
    CU(cuEventSynchronize(never));
    CU(cuEventRecord(a, dv.s));
    for (int i = 0; i < 20; i++) CU(launch_int(dv.f, dv.s, out, 1, N));
    CU(cuEventRecord(b, dv.s));
    CU(cuEventRecord(nt, dv.s));
    CU_IS(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    CU(cuEventSynchronize(b));
    CU(cuEventElapsedTime(&ms, a, b));
    CHECK(ms > 0.0f && ms < 60000.0f, "elapsed %g ms for 20 launches", ms);
    CU_IS(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuEventElapsedTime(&ms, a, never), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
    /* re-recording makes the event pending again */
    CU(cuEventRecord(a, dv.s));
    CU_IS(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    CU(cuEventSynchronize(a));
    CU(cuEventElapsedTime(&ms, b, a));
    CHECK(ms >= 0.0f, "elapsed %g", ms);
    /* an event destroyed with its record still queued is released after the record runs */
    CUevent late;
    CU(cuEventCreate(&late, 0));
    CU(cuEventRecord(late, dv.s));
    CU(cuEventDestroy(late));
    CU_IS(cuEventRecord(late, dv.s), CUDA_ERROR_INVALID_HANDLE);
    CU(cuStreamSynchronize(dv.s));
    CU(cuEventDestroy(a));
    CU(cuEventDestroy(b));
    CU(cuEventDestroy(nt));
    CU(cuEventDestroy(never));
    CU(cuStreamDestroy(dv.s));
    CU(cuMemFree(out));
    drv_down(&dv);
}

static void sticky_after(const char *kernel, CUresult expect, const char *text) {
    ctx_up();
    CUmodule m = module_load();
    CUfunction bad = function_get(m, kernel), set = function_get(m, "k_set");
    CUstream s, other;
    CU(cuStreamCreate(&s, 0));
    CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUdeviceptr out;
    CU(cuMemAlloc(&out, 256));
    void *args[] = {&out};
    CU(cuLaunchKernel(bad, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
    CU(launch_int(set, s, out, 1, 64));   /* queued behind the fault: never runs */
    CU_IS(cuStreamSynchronize(s), expect);
    CHECK(strstr(bertc_emudev_last_error(), text) != NULL, "message: %s", bertc_emudev_last_error());
    CHECK(((int *)(uintptr_t)out)[10] != 11, "work after the fault ran");
    CU_IS(cuStreamSynchronize(s), expect);
    CU_IS(cuStreamSynchronize(other), expect);   /* the context, not just the stream */
    CU_IS(launch_int(set, other, out, 1, 64), expect);
    CUdeviceptr q;
    CU_IS(cuMemAlloc(&q, 64), expect);
    /* destroying still works, and the last release resets the context */
    CU(cuStreamDestroy(s));
    CU(cuStreamDestroy(other));
    CU(cuMemFree(out));
    CU(cuModuleUnload(m));
    ctx_down();
    ctx_up();
    CU(cuMemAlloc(&q, 64));
    CU(cuMemFree(q));
    ctx_down();
}

static void test_sticky_errors(void) {
    NEED_IMAGE();
    fprintf(stderr, "info: the next two kernel failures are expected\n");
    sticky_after("k_trap", CUDA_ERROR_LAUNCH_FAILED, "__trap");
    sticky_after("k_divergent", CUDA_ERROR_LAUNCH_FAILED, "divergent __syncthreads");
}

static void test_launch_validation(void) {
    NEED_IMAGE();
    ctx_up();
    CUmodule m = module_load();
    CUfunction set = function_get(m, "k_set"), smem = function_get(m, "k_smem_copy");
    CUfunction again = NULL;
    CU(cuModuleGetFunction(&again, m, "k_set"));
    CHECK(again == set, "the same name gives different handles");
    CU_IS(cuModuleGetFunction(&again, m, "k_nope"), CUDA_ERROR_NOT_FOUND);
    CU_IS(cuModuleGetFunction(&again, (CUmodule)&again, "k_set"), CUDA_ERROR_INVALID_HANDLE);
    CUdeviceptr out, in;
    CU(cuMemAlloc(&out, 4096 * 4));
    CU(cuMemAlloc(&in, 4096 * 4));
    int v = 0, n = 1;
    void *args[] = {&out, &v, &n};
    CU_IS(cuLaunchKernel(set, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(set, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(set, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(set, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(set, 1, 1, 1, 32, 1, 1, 0, NULL, args, args), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuLaunchKernel(set, 1, 1, 1, 32, 1, 1, 0, (CUstream)&v, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuLaunchKernel((CUfunction)&v, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);

    /* dynamic shared memory: 48 KiB without opt-in */
    int host[1024];
    for (int i = 0; i < 1024; i++) host[i] = (int)check_rng_range(0, 1 << 30);
    CU(cuMemcpyHtoD(in, host, sizeof host));
    void *sargs[] = {&out, &in};
    CU_IS(cuLaunchKernel(smem, 1, 1, 1, 1024, 1, 1, 65536, NULL, sargs, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300000), CUDA_ERROR_INVALID_VALUE);
    CU_IS(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_NUM_REGS, 1), CUDA_ERROR_INVALID_VALUE);
    CU(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536));
    CU(cuLaunchKernel(smem, 1, 1, 1, 1024, 1, 1, 65536, NULL, sargs, NULL));
    int back[1024];
    CU(cuMemcpyDtoHAsync(back, out, sizeof back, NULL));
    CHECK(back[0] == host[1023] && back[1023] == host[0], "shared-memory reversal: %d vs %d", back[0], host[1023]);

    /* modules: bad images, unload, stale handles */
    CUmodule bad = NULL;
    CU_IS(cuModuleLoadData(&bad, "this is not a module"), CUDA_ERROR_INVALID_IMAGE);
    CU_IS(cuModuleLoadData(&bad, NULL), CUDA_ERROR_INVALID_VALUE);
    CU(cuModuleUnload(m));
    CU_IS(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(launch_int(set, NULL, out, 1, 1), CUDA_ERROR_INVALID_HANDLE);
    CU(cuMemFree(out));
    CU(cuMemFree(in));
    ctx_down();
}

/* Claimed GPU architectures: CUBIN/PTX modules bind to twin kernels, EMU images are refused. */
static void test_twins(void) {
    NEED_IMAGE();
    ctx_up();
    static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .entry k_set(\n\t.param .u64 p0, .param .u32 p1, .param .u32 p2\n)\n{\n\tret;\n}\n"
                              ".visible .entry k_orphan()\n{\n\tret;\n}\n";
    CUmodule m = NULL;
    CU_IS(cuModuleLoadData(&m, ptx), CUDA_ERROR_NO_BINARY_FOR_GPU);   /* arch emu */
    bertc_emudev_set_arch(8, 6);
    CU_IS(cuModuleLoadData(&m, image), CUDA_ERROR_NO_BINARY_FOR_GPU);
    CHECK(bertc_emudev_add_twins("junk", 4) == -1, "junk accepted as twins");
    CHECK(bertc_emudev_add_twins(image, image_size) == 0, "twins refused");
    CU(cuModuleLoadData(&m, ptx));
    CUfunction f = NULL;
    CU(cuModuleGetFunction(&f, m, "k_set"));
    CU_IS(cuModuleGetFunction(&f, m, "k_add"), CUDA_ERROR_NOT_FOUND);      /* a twin, but not in the PTX */
    CU_IS(cuModuleGetFunction(&f, m, "k_orphan"), CUDA_ERROR_NOT_FOUND);   /* in the PTX, but no twin */
    CU(cuModuleGetFunction(&f, m, "k_set"));
    CUdeviceptr out;
    CU(cuMemAlloc(&out, 64 * 4));
    CU(launch_int(f, NULL, out, 1000, 64));
    CU(cuStreamSynchronize(NULL));
    CHECK(((int *)(uintptr_t)out)[63] == 1063, "twin kernel gave %d", ((int *)(uintptr_t)out)[63]);
    bertc_emudev_set_arch(7, 5);
    CUmodule m2;
    CU_IS(cuModuleLoadData(&m2, ptx), CUDA_ERROR_NO_BINARY_FOR_GPU);   /* sm_80 PTX on 7.5 */
    CU(cuMemFree(out));
    CU(cuModuleUnload(m));
    ctx_down();
    bertc_emudev_reset();
    int major = -1;
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(major == 0, "reset left capability %d", major);
}

/* ------------------------------------------------------------ programmatic dependent launch */

typedef struct pdl {
    CUmodule m;
    CUfunction produce, consume, early;
    CUdeviceptr in, w, buf, out;
    float hin[256], hw[256];
} pdl;

/* A claimed sm_90 whose module (PTX for sm_90) binds to the test's kernels. */
static void pdl_up(pdl *p) {
    static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry k_produce()\n{\n\tret;\n}\n"
                              ".visible .entry k_consume()\n{\n\tret;\n}\n"
                              ".visible .entry k_consume_early()\n{\n\tret;\n}\n";
    ctx_up();
    bertc_emudev_set_arch(9, 0);
    CHECK(bertc_emudev_add_twins(image, image_size) == 0, "twins refused");
    CU(cuModuleLoadData(&p->m, ptx));
    p->produce = function_get(p->m, "k_produce");
    p->consume = function_get(p->m, "k_consume");
    p->early = function_get(p->m, "k_consume_early");
    for (int i = 0; i < 256; i++) {
        p->hin[i] = (float)check_rng_uniform() * 4.0f - 2.0f;
        p->hw[i] = (float)check_rng_uniform() * 4.0f - 2.0f;
    }
    CU(cuMemAlloc(&p->in, sizeof p->hin));
    CU(cuMemAlloc(&p->w, sizeof p->hw));
    CU(cuMemcpyHtoD(p->in, p->hin, sizeof p->hin));
    CU(cuMemcpyHtoD(p->w, p->hw, sizeof p->hw));
}

/* A fresh (NaN-filled) producer buffer and output. */
static void pdl_fresh(pdl *p) {
    if (p->buf) CU(cuMemFree(p->buf));
    if (p->out) CU(cuMemFree(p->out));
    CU(cuMemAlloc(&p->buf, 256 * 4));
    CU(cuMemAlloc(&p->out, 256 * 4));
}

static void pdl_down(pdl *p) {
    CU(cuMemFree(p->in));
    CU(cuMemFree(p->w));
    CU(cuMemFree(p->buf));
    CU(cuMemFree(p->out));
    CU(cuModuleUnload(p->m));
    ctx_down();
    bertc_emudev_reset();
}

/* Producer then `consumer` on s (4 blocks of 64), the consumer launched
 * with the attribute when `programmatic`. */
static void pdl_enqueue(pdl *p, CUstream s, CUfunction consumer, int programmatic) {
    void *pa[] = {&p->buf, &p->in}, *ca[] = {&p->out, &p->buf, &p->w};
    CU(cuLaunchKernel(p->produce, 4, 1, 1, 64, 1, 1, 0, s, pa, NULL));
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    at.value.programmaticStreamSerializationAllowed = programmatic;
    CUlaunchConfig c = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                        .blockDimZ = 1, .hStream = s, .attrs = &at, .numAttrs = 1};
    CU(cuLaunchKernelEx(&c, consumer, ca, NULL));
}

/* Outputs that are not 2 in + 3 w. */
static int pdl_wrong(const pdl *p) {
    float got[256];
    CU(cuMemcpyDtoHAsync(got, p->out, sizeof got, NULL));
    CU(cuStreamSynchronize(NULL));
    int bad = 0;
    for (int i = 0; i < 256; i++) bad += got[i] != p->hin[i] * 2.0f + p->hw[i] * 3.0f;
    return bad;
}

/* The attribute's rules: sm_90 and newer only, known attributes only. */
static void test_launch_kernel_ex(void) {
    NEED_IMAGE();
    ctx_up();
    CUmodule m = module_load();
    CUfunction set = function_get(m, "k_set");
    CUdeviceptr out;
    CU(cuMemAlloc(&out, 64 * 4));
    int v = 7, n = 64;
    void *args[] = {&out, &v, &n};
    CUlaunchAttribute at[2] = {{.id = CU_LAUNCH_ATTRIBUTE_IGNORE}, {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE}};
    CUlaunchConfig c = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1, .blockDimZ = 1};
    CU_IS(cuLaunchKernelEx(NULL, set, args, NULL), CUDA_ERROR_INVALID_VALUE);
    c.numAttrs = 1;
    CU_IS(cuLaunchKernelEx(&c, set, args, NULL), CUDA_ERROR_INVALID_VALUE);   /* attrs NULL */
    c.attrs = at;
    c.numAttrs = 2;
    CU_IS(cuLaunchKernelEx(&c, set, args, NULL), CUDA_ERROR_INVALID_VALUE);   /* cooperative: not emulated */
    at[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at[1].value.programmaticStreamSerializationAllowed = 1;
    CU_IS(cuLaunchKernelEx(&c, set, args, NULL), CUDA_ERROR_NOT_SUPPORTED);   /* the emu arch is no sm_90 */
    CHECK(strstr(bertc_emudev_last_error(), "9.0"), "message: %s", bertc_emudev_last_error());
    at[1].value.programmaticStreamSerializationAllowed = 0;
    c.gridDimX = 0;
    CU_IS(cuLaunchKernelEx(&c, set, args, NULL), CUDA_ERROR_INVALID_VALUE);
    c.gridDimX = 1;
    CU(cuLaunchKernelEx(&c, set, args, NULL));   /* the attribute off, and IGNORE: a plain launch */
    CU(cuStreamSynchronize(NULL));
    CHECK(((int *)(uintptr_t)out)[63] == 70, "cuLaunchKernelEx ran k_set to %d", ((int *)(uintptr_t)out)[63]);
    CU(cuMemFree(out));
    CU(cuModuleUnload(m));
    ctx_down();
}

/* A programmatic edge between two kernels, captured and eager: the
 * consumer's pre-wait part runs before the producer, so the correct
 * consumer is right and the one that reads before its wait is wrong in
 * the held block; after a copy (no kernel to overlap) or after the same
 * kernel the launch runs in order. */
static void test_programmatic_edges(void) {
    NEED_IMAGE();
    pdl p = {0};
    pdl_up(&p);
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    bertc_emudev_stats a, b;
    for (int captured = 0; captured < 2; captured++)
        for (int wrong = 0; wrong < 2; wrong++) {
            pdl_fresh(&p);
            bertc_emudev_get_stats(&a);
            CUgraph g = NULL;
            CUgraphExec x = NULL;
            if (captured) CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
            pdl_enqueue(&p, s, wrong ? p.early : p.consume, 1);
            if (captured) {
                CU(cuStreamEndCapture(s, &g));
                CU(cuGraphInstantiate(&x, g, 0));
                CU(cuGraphLaunch(x, s));
            }
            CU(cuStreamSynchronize(s));
            bertc_emudev_get_stats(&b);
            int bad = pdl_wrong(&p);
            CHECK(wrong ? bad == 64 : bad == 0, "%s, %s consumer: %d wrong outputs", captured ? "graph" : "stream",
                  wrong ? "early-reading" : "correct", bad);
            CHECK(b.programmatic_overlapped - a.programmatic_overlapped == 1 && b.parked_waits - a.parked_waits == 64 &&
                      b.dependency_waits - a.dependency_waits == 256 && b.triggers - a.triggers == 4,
                  "%s: %ld overlapped, %ld waits (%ld parked), %ld triggers", captured ? "graph" : "stream",
                  b.programmatic_overlapped - a.programmatic_overlapped, b.dependency_waits - a.dependency_waits,
                  b.parked_waits - a.parked_waits, b.triggers - a.triggers);
            if (x) CU(cuGraphExecDestroy(x));
            if (g) CU(cuGraphDestroy(g));
        }
    /* Without the attribute, after a copy, and after the same kernel: in order. */
    pdl_fresh(&p);
    bertc_emudev_get_stats(&a);
    pdl_enqueue(&p, s, p.early, 0);
    CU(cuStreamSynchronize(s));
    CHECK(pdl_wrong(&p) == 0, "without the attribute the early read saw the producer's output late");
    float nan[256];
    memset(nan, 0xff, sizeof nan);
    CU(cuMemcpyHtoDAsync(p.buf, p.hin, sizeof nan, s));
    void *ca[] = {&p.out, &p.buf, &p.w}, *pa[] = {&p.buf, &p.in};
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    at.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig c = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                        .blockDimZ = 1, .hStream = s, .attrs = &at, .numAttrs = 1};
    CU(cuLaunchKernelEx(&c, p.early, ca, NULL));   /* after a copy */
    CU(cuLaunchKernel(p.produce, 4, 1, 1, 64, 1, 1, 0, s, pa, NULL));
    CU(cuLaunchKernelEx(&c, p.produce, pa, NULL)); /* after the same kernel */
    CU(cuStreamSynchronize(s));
    bertc_emudev_get_stats(&b);
    CHECK(b.programmatic_overlapped == a.programmatic_overlapped && b.programmatic_serialised - a.programmatic_serialised == 1,
          "%ld overlapped, %ld serialised", b.programmatic_overlapped - a.programmatic_overlapped,
          b.programmatic_serialised - a.programmatic_serialised);
    /* an older GPU refuses the attribute */
    bertc_emudev_set_arch(8, 6);
    CU_IS(cuLaunchKernelEx(&c, p.consume, ca, NULL), CUDA_ERROR_NOT_SUPPORTED);
    CU(cuStreamDestroy(s));
    pdl_down(&p);
}

/* The capture's state as cuStreamGetCaptureInfo reports it, and a copy
 * node of an instantiated graph resized by cuGraphExecMemcpyNodeSetParams
 * within the documented rules. */
static void test_capture_info_and_copy_update(void) {
    NEED_IMAGE();
    CUcontext ctx = ctx_up();
    CUmodule m = module_load();
    CUfunction set = function_get(m, "k_set");
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr dev;
    CU(cuMemAlloc(&dev, 256 * 4));
    int *host = NULL;
    CU(cuMemHostAlloc((void **)&host, 256 * 4, 0));
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CU(cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE, "status %d before a capture", (int)st);
    CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    const CUgraphNode *deps = NULL;
    size_t ndeps = 9;
    cuuint64_t id = 0;
    CUgraph g = NULL;
    CU(cuStreamGetCaptureInfo(s, &st, &id, NULL, &deps, NULL, &ndeps));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id && ndeps == 0, "at the start: status %d, id %llu, %zu deps",
          (int)st, (unsigned long long)id, ndeps);
    CU_IS(cuStreamGetCaptureInfo(s, &st, NULL, &g, NULL, NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
    CU(launch_int(set, s, dev, 5, 256));
    CU(cuStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &ndeps));
    CUgraphNode kernel_node = ndeps == 1 ? deps[0] : NULL;
    CU(cuMemcpyDtoHAsync(host, dev, 256 * 4, s));
    CU(cuStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &ndeps));
    CUgraphNode copy_node = ndeps == 1 ? deps[0] : NULL;
    CHECK(kernel_node && copy_node && kernel_node != copy_node, "capture nodes %p %p", (void *)kernel_node,
          (void *)copy_node);
    CU(cuStreamEndCapture(s, &g));
    CUgraphExec x = NULL;
    CU(cuGraphInstantiate(&x, g, 0));
    /* the node's parameters as the graph recorded them: UNIFIED on both sides */
    CUDA_MEMCPY3D p, rec;
    CU_IS(cuGraphMemcpyNodeGetParams(kernel_node, &rec), CUDA_ERROR_INVALID_VALUE);   /* not a copy */
    CU_IS(cuGraphMemcpyNodeGetParams((CUgraphNode)&rec, &rec), CUDA_ERROR_INVALID_VALUE);   /* not a node */
    CU(cuGraphMemcpyNodeGetParams(copy_node, &rec));
    CHECK(rec.srcMemoryType == CU_MEMORYTYPE_UNIFIED && rec.dstMemoryType == CU_MEMORYTYPE_UNIFIED &&
              rec.srcDevice == dev && rec.dstDevice == (CUdeviceptr)(uintptr_t)host && rec.WidthInBytes == 256 * 4 &&
              rec.Height == 1 && rec.Depth == 1,
          "recorded copy: types %d %d, width %zu", (int)rec.srcMemoryType, (int)rec.dstMemoryType, rec.WidthInBytes);
    p = rec;
    p.WidthInBytes = 10 * 4;
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, kernel_node, &p, ctx), CUDA_ERROR_INVALID_VALUE);   /* not a copy */
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, (CUcontext)&p), CUDA_ERROR_INVALID_CONTEXT);
    p.Height = 2;
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx), CUDA_ERROR_INVALID_VALUE);     /* 2-D */
    p.Height = 1, p.WidthInBytes = 0;
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx), CUDA_ERROR_INVALID_VALUE);     /* empty */
    p.WidthInBytes = 257 * 4;
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx), CUDA_ERROR_INVALID_VALUE);     /* past the allocation */
    /* a descriptor made by hand (DEVICE -> HOST) changes the node's memory types */
    CUDA_MEMCPY3D hand;
    memset(&hand, 0, sizeof hand);
    hand.srcMemoryType = CU_MEMORYTYPE_DEVICE, hand.srcDevice = dev;
    hand.dstMemoryType = CU_MEMORYTYPE_HOST, hand.dstHost = host;
    hand.WidthInBytes = 10 * 4, hand.Height = hand.Depth = 1;
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &hand, ctx), CUDA_ERROR_INVALID_VALUE);  /* the memory types */
    p.WidthInBytes = 10 * 4;
    CU(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx));
    memset(host, 0, 256 * 4);
    bertc_emudev_stats a, b;
    bertc_emudev_get_stats(&a);
    CU(cuGraphLaunch(x, s));
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx), CUDA_ERROR_NOT_SUPPORTED);     /* a launch pending */
    CU(cuStreamSynchronize(s));
    bertc_emudev_get_stats(&b);
    CHECK(b.bytes_to_host - a.bytes_to_host == 40 && host[9] == 14 && host[10] == 0,
          "%ld bytes back, host[9] %d host[10] %d", b.bytes_to_host - a.bytes_to_host, host[9], host[10]);
    CU(cuGraphDestroy(g));
    CU_IS(cuGraphExecMemcpyNodeSetParams(x, copy_node, &p, ctx), CUDA_ERROR_INVALID_VALUE);     /* its graph is gone */
    CU_IS(cuGraphMemcpyNodeGetParams(copy_node, &rec), CUDA_ERROR_INVALID_VALUE);
    CU(cuGraphExecDestroy(x));
    CU(cuMemFreeHost(host));
    CU(cuMemFree(dev));
    CU(cuStreamDestroy(s));
    CU(cuModuleUnload(m));
    ctx_down();
}

/* A prefetch outside every allocation faults like a bad address would. */
static void test_prefetch_checked(void) {
    NEED_IMAGE();
    fprintf(stderr, "info: the next kernel failure is expected\n");
    sticky_after("k_prefetch_out", CUDA_ERROR_LAUNCH_FAILED, "outside device memory");
}

static void test_failure_injection(void) {
    NEED_IMAGE();
    ctx_up();
    CUdeviceptr p, q, r;
    bertc_emudev_fail("cuMemAlloc", 2, CUDA_ERROR_OUT_OF_MEMORY);
    bertc_emudev_fail("cuStreamCreate", 1, CUDA_ERROR_UNKNOWN);
    CU(cuMemAlloc(&p, 16));
    CU_IS(cuMemAlloc(&q, 16), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(bertc_emudev_last_error(), "injected") != NULL, "message: %s", bertc_emudev_last_error());
    CU(cuMemAlloc(&r, 16));
    CUstream s;
    CU_IS(cuStreamCreate(&s, 0), CUDA_ERROR_UNKNOWN);
    CU(cuStreamCreate(&s, 0));
    /* removal, and a launch that fails once: nothing is queued for it */
    bertc_emudev_fail("cuMemFree", 1, CUDA_ERROR_INVALID_VALUE);
    bertc_emudev_fail("cuMemFree", 0, 0);
    CUmodule m = module_load();
    CUfunction set = function_get(m, "k_set");
    bertc_emudev_fail("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    bertc_emudev_stats a, b;
    bertc_emudev_get_stats(&a);
    CU_IS(launch_int(set, s, p, 1, 4), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CU(launch_int(set, s, p, 1, 4));
    CU(cuStreamSynchronize(s));
    bertc_emudev_get_stats(&b);
    CHECK(b.kernel_launches - a.kernel_launches == 1, "%ld launches ran", b.kernel_launches - a.kernel_launches);
    CU(cuStreamDestroy(s));
    CU(cuModuleUnload(m));
    CU(cuMemFree(p));
    CU(cuMemFree(r));
    bertc_emudev_fail("cuDevicePrimaryCtxRelease", 1, CUDA_ERROR_INVALID_CONTEXT);
    CU_IS(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    ctx_down();
}

static void test_null_mode(void) {
    drv dv;
    if (drv_up(&dv, "k_set", -1)) return;
    CUdeviceptr out;
    CU(cuMemAlloc(&out, 64 * 4));
    bertc_emudev_set_null(1);
    bertc_emudev_stats a, b;
    bertc_emudev_get_stats(&a);
    CU(launch_int(dv.f, NULL, out, 1, 64));
    int host[64];
    CU(cuMemcpyDtoHAsync(host, out, sizeof host, NULL));
    bertc_emudev_get_stats(&b);
    bertc_emudev_set_null(0);
    CHECK(host[5] == -1, "the null device ran a kernel: %d", host[5]);
    CHECK(b.kernel_launches - a.kernel_launches == 1 && b.copies - a.copies == 1, "counted %ld launches, %ld copies",
          b.kernel_launches - a.kernel_launches, b.copies - a.copies);
    CU(cuLaunchKernel(dv.f, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE ? CUDA_SUCCESS
                                                                                                   : CUDA_ERROR_UNKNOWN);
    CU(cuMemFree(out));
    drv_down(&dv);
}

/* The last release destroys whatever the user left behind, as the driver does. */
static void test_release_destroys(void) {
    drv dv;
    if (drv_up(&dv, "k_set", 0)) return;
    CUdeviceptr out;
    CU(cuMemAlloc(&out, 256));
    void *pinned;
    CU(cuMemHostAlloc(&pinned, 64, 0));
    CUevent e;
    CU(cuEventCreate(&e, 0));
    CU(cuStreamBeginCapture(dv.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU(launch_int(dv.f, dv.s, out, 1, 16));
    CUgraph g;
    CU(cuStreamEndCapture(dv.s, &g));
    CUgraphExec x;
    CU(cuGraphInstantiate(&x, g, 0));
    CU(cuGraphLaunch(x, dv.s));
    CU(cuEventRecord(e, dv.s));
    CU(cuCtxSetCurrent(NULL));
    CU(cuDevicePrimaryCtxRelease(0));
    bertc_emudev_stats st;
    bertc_emudev_get_stats(&st);
    CHECK(st.live_allocations == 0 && st.live_host_allocations == 0 && st.live_modules == 0 && st.live_streams == 0 &&
              st.live_events == 0 && st.live_graphs == 0 && st.live_graph_execs == 0 && st.live_bytes == 0,
          "context destruction left objects alive");
    ctx_up();
    CU_IS(cuStreamSynchronize(dv.s), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuModuleUnload(dv.m), CUDA_ERROR_INVALID_HANDLE);
    CU_IS(cuMemFree(out), CUDA_ERROR_INVALID_VALUE);
    ctx_down();
}

typedef struct worker {
    CUcontext ctx;
    CUfunction axpy;
    pthread_barrier_t *barrier;
    int index, failures;
    long ms;
} worker;

static void *worker_run(void *arg) {
    worker *w = arg;
    if (cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    enum { N = 4096, ROUNDS = 30 };
    CUstream s;
    CUdeviceptr dx, dy;
    float *x = NULL, *y = NULL;
    if (cuStreamCreate(&s, 0) || cuMemAlloc(&dx, N * 4) || cuMemAlloc(&dy, N * 4) ||
        cuMemHostAlloc((void **)&x, N * 4, 0) || cuMemHostAlloc((void **)&y, N * 4, 0)) {
        w->failures++;
        return NULL;
    }
    pthread_barrier_wait(w->barrier);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++) {
            x[i] = (float)(i % 97) * 0.25f;
            y[i] = (float)w->index;
        }
        float a = (float)(w->index + round);
        int n = N;
        void *args[] = {&dy, &dx, &a, &n};
        int bad = cuMemcpyHtoDAsync(dx, x, N * 4, s) || cuMemcpyHtoDAsync(dy, y, N * 4, s);
        for (int k = 0; k < 3 && !bad; k++) bad = cuLaunchKernel(w->axpy, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL);
        bad = bad || cuMemcpyDtoHAsync(y, dy, N * 4, s) || cuStreamSynchronize(s);
        for (int i = 0; i < N && !bad; i++) {
            float expect = (float)w->index;
            for (int k = 0; k < 3; k++) expect = a * ((float)(i % 97) * 0.25f) + expect;
            bad = y[i] != expect;
        }
        w->failures += bad;
    }
    cuMemFreeHost(x);
    cuMemFreeHost(y);
    cuMemFree(dx);
    cuMemFree(dy);
    cuStreamDestroy(s);
    return NULL;
}

static void test_threads(void) {
    NEED_IMAGE();
    CUcontext ctx = ctx_up();
    CUmodule m = module_load();
    enum { T = 4 };
    worker w[T];
    pthread_t t[T];
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, T);
    for (int i = 0; i < T; i++) {
        w[i] = (worker){.ctx = ctx, .axpy = function_get(m, "k_axpy"), .barrier = &barrier, .index = i + 1};
        pthread_create(&t[i], NULL, worker_run, &w[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < T; i++) CHECK(w[i].failures == 0, "thread %d: %d failed rounds", i, w[i].failures);
    CU(cuModuleUnload(m));
    ctx_down();
}

/* The shared library exports every name the runtime's device table looks up. */
static void test_exports(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/libbertc_emudev.so", check_build_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
    if (!h) return;
#define EXPORT_STR2(x) #x
#define EXPORT_STR(x) EXPORT_STR2(x)
#define EXPORT_CHECK(name) CHECK(dlsym(h, EXPORT_STR(name)) != NULL, "%s does not export %s", path, EXPORT_STR(name));
    DEVICE_DRIVER_FUNCTIONS(EXPORT_CHECK)
    CHECK(dlsym(h, "bertc_emudev_get_stats") && dlsym(h, "bertc_emudev_last_error"), "control API not exported");
    CHECK(dlsym(h, "emudev_submit") == NULL, "internal names are exported");
    int blaslt = dlsym(h, "cublasLtMatmul") != NULL;
    dlclose(h);
    if (blaslt) {
        device_table tab;
        diag d;
        diag_init(&d);
        CHECK(device_table_open(&tab, DEVICE_KIND_EMU, path, path, &d) == 0, "device table: %s", d.text);
        device_table_close(&tab);
    } else {
        printf("info: the cuBLASLt half is not built yet; device_table_open not tried\n");
    }
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
    check_init(argc, argv);
    diag d;
    diag_init(&d);
    image = kimage_build_bytes("emudev_driver.so", (const char *const[]){kernels_src, kimage_faulting_src, pdl_src},
                               3, &image_size, &d);
    if (!image) snprintf(image_error, sizeof image_error, "%s", d.text);

    CHECK_CASE(test_before_init);
    CHECK_CASE(test_device_queries);
    CHECK_CASE(test_context);
    CHECK_CASE(test_memory);
    CHECK_CASE(test_deferred_execution);
    CHECK_CASE(test_arguments_copied);
    CHECK_CASE(test_graph_replay);
    CHECK_CASE(test_capture_rules);
    CHECK_CASE(test_events);
    CHECK_CASE(test_sticky_errors);
    CHECK_CASE(test_launch_validation);
    CHECK_CASE(test_twins);
    CHECK_CASE(test_launch_kernel_ex);
    CHECK_CASE(test_programmatic_edges);
    CHECK_CASE(test_prefetch_checked);
    CHECK_CASE(test_capture_info_and_copy_update);
    CHECK_CASE(test_failure_injection);
    CHECK_CASE(test_null_mode);
    CHECK_CASE(test_release_destroys);
    CHECK_CASE(test_threads);
    CHECK_CASE(test_exports);
    free(image);
    return check_summary();
}
