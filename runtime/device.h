/*
 * device — the runtime's only door to a GPU: a table of function pointers
 * for exactly the CUDA driver API and cuBLASLt calls the runtime makes.
 *
 * The table is filled by dlopen/dlsym, never by linking, so the runtime
 * library (and bertc) load on machines without a driver and say so.  Which
 * libraries fill it is decided in one place, device_table_open():
 *
 *   DEVICE_KIND_CUDA   libcuda.so.1 and libcublasLt.so.13 (the real ones)
 *   DEVICE_KIND_EMU    the emulated device, a shared library that exports
 *                      the same symbols and runs the plan's kernels on the
 *                      CPU (runtime/emu/device/); its path comes from
 *                      BERTC_EMU_DEVICE or the build's default
 *
 * Both go through the same dlsym code with the same versioned names (the
 * names cuda.h's macros expand to: cuMemAlloc_v2, cuStreamBeginCapture_v2,
 * ...), so every line of the CUDA path runs in CI.  The runtime has no
 * other knowledge of which device it talks to.  The one place where the
 * emulated device shows is an *architecture*: it reports compute capability
 * 0.0, which device_arch_name() names "emu", the arch of the plan's CPU
 * image; image selection itself is the same string match for every device.
 *
 * The types are the toolkit's own (cuda.h, cublasLt.h: headers only), so a
 * pointer filled by dlsym has exactly the prototype of the real function.
 *
 * The synchronous copies are left out on purpose: from pageable memory
 * cuMemcpyHtoD returns before its DMA has landed and is ordered only on the
 * legacy stream, which the runtime's non-blocking streams do not wait for
 * (rt.h's rt_upload says what is used instead).
 */
#ifndef BERTC_DEVICE_H
#define BERTC_DEVICE_H

#include <cublasLt.h>
#include <cuda.h>

#include "diag.h"

typedef enum device_kind {
    DEVICE_KIND_CUDA,
    DEVICE_KIND_EMU,
} device_kind;

/* One field per function: the name the code calls, the prototype of the real one. */
#define DEVICE_DRIVER_FUNCTIONS(X)       \
    X(cuInit)                            \
    X(cuDriverGetVersion)                \
    X(cuGetErrorString)                  \
    X(cuDeviceGetCount)                  \
    X(cuDeviceGet)                       \
    X(cuDeviceGetAttribute)              \
    X(cuDeviceGetName)                   \
    X(cuDevicePrimaryCtxRetain)          \
    X(cuDevicePrimaryCtxRelease)         \
    X(cuCtxSetCurrent)                   \
    X(cuCtxGetCurrent)                   \
    X(cuMemAlloc)                        \
    X(cuMemFree)                         \
    X(cuMemHostAlloc)                    \
    X(cuMemFreeHost)                     \
    X(cuMemcpyHtoDAsync)                 \
    X(cuMemcpyDtoHAsync)                 \
    X(cuModuleLoadData)                  \
    X(cuModuleUnload)                    \
    X(cuModuleGetFunction)               \
    X(cuFuncSetAttribute)                \
    X(cuLaunchKernel)                    \
    X(cuLaunchKernelEx)                  \
    X(cuStreamCreate)                    \
    X(cuStreamDestroy)                   \
    X(cuStreamSynchronize)               \
    X(cuStreamBeginCapture)              \
    X(cuThreadExchangeStreamCaptureMode) \
    X(cuStreamEndCapture)                \
    X(cuStreamGetCaptureInfo)            \
    X(cuGraphInstantiate)                \
    X(cuGraphMemcpyNodeGetParams)        \
    X(cuGraphExecMemcpyNodeSetParams)    \
    X(cuGraphLaunch)                     \
    X(cuGraphExecDestroy)                \
    X(cuGraphDestroy)                    \
    X(cuEventCreate)                     \
    X(cuEventRecord)                     \
    X(cuEventSynchronize)                \
    X(cuEventElapsedTime)                \
    X(cuEventDestroy)

#define DEVICE_BLASLT_FUNCTIONS(X)           \
    X(cublasLtCreate)                        \
    X(cublasLtDestroy)                       \
    X(cublasLtGetStatusString)               \
    X(cublasLtMatmulDescCreate)              \
    X(cublasLtMatmulDescDestroy)             \
    X(cublasLtMatmulDescSetAttribute)        \
    X(cublasLtMatrixLayoutCreate)            \
    X(cublasLtMatrixLayoutDestroy)           \
    X(cublasLtMatrixLayoutSetAttribute)      \
    X(cublasLtMatmulPreferenceCreate)        \
    X(cublasLtMatmulPreferenceDestroy)       \
    X(cublasLtMatmulPreferenceSetAttribute)  \
    X(cublasLtMatmulAlgoGetHeuristic)        \
    X(cublasLtMatmul)

#define DEVICE_FIELD(name) __typeof__(name) *name;

typedef struct device_table {
    device_kind kind;
    void *driver_lib;            /* dlopen handles */
    void *blaslt_lib;
    DEVICE_DRIVER_FUNCTIONS(DEVICE_FIELD)
    DEVICE_BLASLT_FUNCTIONS(DEVICE_FIELD)
} device_table;

/*
 * Fill the table for `kind`.  driver_path / blaslt_path override the
 * libraries (NULL: the defaults above; for EMU both default to the emulated
 * device library).  A missing library or symbol is a clear error naming it.
 */
int device_table_open(device_table *t, device_kind kind, const char *driver_path, const char *blaslt_path, diag *d);
void device_table_close(device_table *t);

/* "sm_86" for 8.6; "emu" for the emulated device's 0.0. */
void device_arch_name(int major, int minor, char *buf, unsigned cap);

#endif
