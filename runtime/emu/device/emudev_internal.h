/*
 * emudev_internal — what the emulated device's files share:
 *
 *   emudev_driver.c  the CUDA driver API subset (memory, modules, launches,
 *                    streams, events, capture, graphs) and the control API
 *   emudev_blaslt.c  the cuBLASLt subset (handles, descriptors, heuristics,
 *                    cublasLtMatmul as a unit of stream work)
 *   emudev_gemm.c    the arithmetic of one matmul (float32 from storage types)
 *   emudev_image.c   what a module image is: EMU shared object, CUBIN, PTX
 *
 * Work model.  Every asynchronous operation becomes an `emudev_work`
 * handed to emudev_submit(): on a stream in capture it is recorded into the
 * capture's graph; otherwise it is queued on the stream and runs at the next
 * synchronisation point (cuStreamSynchronize, cuEventSynchronize, a
 * synchronous copy).  Deferring is deliberate: a runtime that reads a
 * result before synchronising reads the fill byte, not the answer.
 */
#ifndef BERTC_EMUDEV_INTERNAL_H
#define BERTC_EMUDEV_INTERNAL_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "emudev.h"

/* ------------------------------------------------------------ work */

typedef struct emudev_work emudev_work;

typedef struct emudev_work_ops {
    const char *what;                              /* "kernel bertc_x", "matmul", ... */
    /* Executes the work; CUDA_SUCCESS, or an error that becomes the stream's
     * (and the context's) sticky error, with bertc_emudev_last_error set. */
    CUresult (*run)(emudev_work *w);
    /* A deep copy (graph instantiation copies every node). NULL: no memory. */
    emudev_work *(*clone)(const emudev_work *w);
    void (*free)(emudev_work *w);
} emudev_work_ops;

/* Embedded as the first member of every concrete work record. */
struct emudev_work {
    const emudev_work_ops *ops;
    emudev_work *next;                             /* queue / node list link, owned by the driver */
};

/* Queues w on stream s (NULL = the legacy default stream), or records it
 * when s is capturing.  Takes ownership of w whatever it returns. */
CUresult emudev_submit(CUstream s, emudev_work *w);

/* ------------------------------------------------------------ driver services */

/* Device pointers are host addresses. */
static inline void *emudev_host_ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* 1 if [p, p + bytes) lies inside one live cuMemAlloc allocation. */
int emudev_mem_valid(CUdeviceptr p, size_t bytes);

/* Failure injection (bertc_emudev_fail): 1 if this call of `name` must
 * fail, with *code set to the armed code. Call once at the top of every
 * emulated function. */
int emudev_should_fail(const char *name, int *code);

/* Records the calling thread's last error message (printf-style); returns code. */
int emudev_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Null-device mode (bertc_emudev_set_null). */
int emudev_null(void);

/* Adjusts a live-object counter of bertc_emudev_stats by delta. */
typedef enum emudev_counter {
    EMUDEV_COUNTER_BLASLT_OBJECTS,
    EMUDEV_COUNTER_MATMULS,
} emudev_counter;
void emudev_count(emudev_counter c, long delta);

/* ------------------------------------------------------------ matmul arithmetic */

typedef enum emudev_type {
    EMUDEV_TYPE_F32,
    EMUDEV_TYPE_F16,
    EMUDEV_TYPE_BF16,
} emudev_type;

/*
 * D = epilogue(alpha * op(A) op(B) + beta * C), column-major (cuBLASLt's
 * convention), batch_count times with the given element strides.  op(A) is
 * m x k (A is k x m with lda >= k when transa, else m x k with lda >= m);
 * op(B) is k x n likewise.  Products and sums in float32 (the compute type
 * the plans use); C is read in its storage type; the result is rounded
 * once to D's type, round-to-nearest-even.  Epilogue (cublasLtEpilogue_t
 * values): 1 none, 2 relu, 4 bias, 6 relu+bias; bias[i] (length m, of
 * bias_type) is added to row i before relu.  C may alias D (in place).
 * beta == 0 never reads C (C may be NULL then), as cuBLASLt.
 */
typedef struct emudev_gemm_args {
    int transa, transb;
    int64_t m, n, k;
    emudev_type a_type, b_type, c_type, d_type, bias_type;
    const void *a, *b, *c;
    void *d;
    const void *bias;
    int64_t lda, ldb, ldc, ldd;
    int batch_count;
    int64_t stride_a, stride_b, stride_c, stride_d;
    float alpha, beta;
    int epilogue;
} emudev_gemm_args;

void emudev_gemm_compute(const emudev_gemm_args *g);

/* ------------------------------------------------------------ module images */

typedef enum emudev_image_kind {
    EMUDEV_IMAGE_UNKNOWN,
    EMUDEV_IMAGE_EMU,     /* x86-64 ELF shared object with bertc_emu_image_abi */
    EMUDEV_IMAGE_CUBIN,   /* ELF, e_machine EM_CUDA (190) */
    EMUDEV_IMAGE_PTX,     /* PTX text (.version, .target, .entry) */
} emudev_image_kind;

typedef struct emudev_image_info {
    emudev_image_kind kind;
    int sm;               /* CUBIN: the SM it was built for (80 = sm_80); PTX: the .target (75); EMU: 0 */
    int nentries;         /* CUBIN/PTX: kernel entry points */
    char **entries;       /* malloc'd names */
    char why[256];        /* UNKNOWN: why the bytes are not a usable image */
} emudev_image_info;

/* Classifies `size` bytes at `data`; never reads outside them.  Returns 0
 * (info filled, kind may be UNKNOWN with `why`) or -1 out of memory. */
int emudev_image_inspect(const void *data, size_t size, emudev_image_info *info);
void emudev_image_info_free(emudev_image_info *info);
/* Whether code for `sm` (CUBIN: binary; PTX: JIT) runs on capability major.minor. */
int emudev_image_runs_on(emudev_image_kind kind, int sm, int major, int minor);

#endif
