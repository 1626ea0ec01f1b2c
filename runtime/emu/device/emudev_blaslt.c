/*
 * emudev_blaslt — the cuBLASLt subset of the emulated device.
 *
 * These are the functions of DEVICE_BLASLT_FUNCTIONS (runtime/device.h),
 * defined with the exact prototypes of the toolkit's cublasLt.h, which is
 * included so the compiler holds us to them.  The runtime reaches them by
 * dlsym under the real names, so everything it does with cuBLASLt on a GPU
 * runs the same way here: handle, descriptors, layouts, a preference, one
 * heuristic query, then cublasLtMatmul on a stream (or into a graph being
 * captured).
 *
 * What is emulated faithfully:
 *
 *  - The object model.  Descriptors hold exactly the attributes the
 *    runtime sets; SetAttribute enforces the documented buffer-size rule
 *    (INVALID_VALUE when buf is NULL or sizeInBytes differs from the
 *    attribute's type), and attributes or values this emulation does not
 *    implement answer NOT_SUPPORTED with a message saying which, rather
 *    than being silently ignored.  Live objects are counted
 *    (bertc_emudev_stats.live_blaslt_objects) so tests see leaks.
 *  - Which problems exist.  cublasLtMatmulAlgoGetHeuristic accepts only
 *    combinations the real library supports (blaslt_problem_check lists
 *    each rule and where it comes from) and answers NOT_SUPPORTED with no
 *    algorithm otherwise, so a plan that only runs here cannot exist.
 *  - Alignment.  An algorithm is chosen for the minimum alignments of the
 *    preference (default 256 bytes, as documented); the emulated algo
 *    records them, and cublasLtMatmul refuses pointers that are less
 *    aligned with NOT_SUPPORTED, which is what the real library answers
 *    when the pointers do not suit the algorithm.  A runtime that forgets
 *    to declare its real alignments fails here, not only on a GPU.
 *  - Asynchrony.  cublasLtMatmul validates everything, reads alpha and
 *    beta at once (host pointer mode: the caller may reuse them when the
 *    call returns), snapshots the problem into an emudev_work and hands it
 *    to emudev_submit: it runs at the stream's next synchronisation, or is
 *    recorded into the graph of a capturing stream, exactly like the
 *    kernels real cuBLASLt launches.  The arithmetic is emudev_gemm.c's.
 *
 * What is checked beyond the real library (it would fault or silently
 * compute garbage on a GPU, which CI cannot see): every operand's byte
 * range must lie inside one live cuMemAlloc allocation, both when the
 * matmul is enqueued (INVALID_VALUE) and again when it runs
 * (CUDA_ERROR_ILLEGAL_ADDRESS, sticky, as a faulting kernel would be), and
 * the batches of D must not overlap.
 *
 * Every entry point first consults failure injection (bertc_emudev_fail)
 * under its own name, and every failure records a message for
 * bertc_emudev_last_error.  There is no global state here: objects belong
 * to their callers, so any thread may use any of these functions.
 */
#include <cublasLt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ objects */

/* Magic numbers tell our objects apart from garbage and from each other. */
enum {
    BLASLT_MAGIC_HANDLE = 0x4c54484e,   /* "LTHN" */
    BLASLT_MAGIC_DESC = 0x4c544453,     /* "LTDS" */
    BLASLT_MAGIC_LAYOUT = 0x4c544c59,   /* "LTLY" */
    BLASLT_MAGIC_PREF = 0x4c545046,     /* "LTPF" */
};
#define BLASLT_MAGIC_ALGO 0x314f474c41554d45ull   /* "EMUALGO1" */

/* cublasLt.h only declares this struct: the handle is ours to define. */
struct cublasLtContext {
    uint32_t magic;
};

/* Descriptors, layouts and preferences are pointers to NVIDIA's opaque
 * structs; ours are allocated at least that large and used through these
 * types (allocated storage takes the type it is used with). */
typedef struct blaslt_desc {
    uint32_t magic;
    int32_t compute_type;
    int32_t scale_type;
    int32_t pointer_mode;
    int32_t transa, transb;
    uint32_t epilogue;
    int32_t bias_type;              /* -1: D's type (the documented default) */
    const void *bias;
} blaslt_desc;

typedef struct blaslt_layout {
    uint32_t magic;
    uint32_t type;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch_count;
    int64_t stride;                 /* elements */
} blaslt_layout;

typedef struct blaslt_pref {
    uint32_t magic;
    uint64_t max_workspace;
    uint32_t min_align[4];          /* A, B, C, D */
} blaslt_pref;

_Static_assert(sizeof(blaslt_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "descriptor larger than NVIDIA's");
_Static_assert(sizeof(blaslt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout larger than NVIDIA's");
_Static_assert(sizeof(blaslt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference larger than NVIDIA's");

/* Failure injection: emudev_should_fail records the message itself. */
#define BLASLT_INJECT(name)                                                  \
    do {                                                                     \
        int code;                                                            \
        if (emudev_should_fail(name, &code)) return (cublasStatus_t)code;    \
    } while (0)

static cublasStatus_t blaslt_fail(cublasStatus_t st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* emudev_error is printf-style without a va_list twin: format here first. */
static cublasStatus_t blaslt_fail(cublasStatus_t st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emudev_error((int)st, "%s", msg);
    return st;
}

static blaslt_desc *blaslt_desc_get(cublasLtMatmulDesc_t d) {
    blaslt_desc *x = (blaslt_desc *)(void *)d;
    return x && x->magic == BLASLT_MAGIC_DESC ? x : NULL;
}
static blaslt_layout *blaslt_layout_get(cublasLtMatrixLayout_t l) {
    blaslt_layout *x = (blaslt_layout *)(void *)l;
    return x && x->magic == BLASLT_MAGIC_LAYOUT ? x : NULL;
}
static blaslt_pref *blaslt_pref_get(cublasLtMatmulPreference_t p) {
    blaslt_pref *x = (blaslt_pref *)(void *)p;
    return x && x->magic == BLASLT_MAGIC_PREF ? x : NULL;
}
static int blaslt_handle_ok(cublasLtHandle_t h) { return h && h->magic == BLASLT_MAGIC_HANDLE; }

/* ------------------------------------------------------------ status strings */

/* The strings libcublasLt.so.13 itself returns (cuBLAS 13.1), word for word. */
const char *cublasLtGetStatusString(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the function requires an architectural feature absent from the device";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the function failed to launch on the GPU";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the requested functionality is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the license check failed";
    }
    return "unrecognized status";
}

/* ------------------------------------------------------------ handle */

cublasStatus_t cublasLtCreate(cublasLtHandle_t *lightHandle) {
    BLASLT_INJECT("cublasLtCreate");
    if (!lightHandle) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtCreate: lightHandle is NULL");
    struct cublasLtContext *h = calloc(1, sizeof *h);
    if (!h) return blaslt_fail(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate: out of host memory");
    h->magic = BLASLT_MAGIC_HANDLE;
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, 1);
    *lightHandle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
    BLASLT_INJECT("cublasLtDestroy");
    /* Documented: NOT_INITIALIZED "if the cuBLASLt handle was not initialized". */
    if (!blaslt_handle_ok(lightHandle))
        return blaslt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy: not a live cuBLASLt handle");
    lightHandle->magic = 0;
    free(lightHandle);
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, -1);
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ attribute helper */

/* Documented for every SetAttribute: INVALID_VALUE "if buf is NULL or
 * sizeInBytes doesn't match size of internal storage for selected attribute". */
static cublasStatus_t blaslt_attr_read(const char *fn, const char *attr, const void *buf, size_t size, void *out,
                                       size_t want) {
    if (!buf) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s(%s): buf is NULL", fn, attr);
    if (size != want)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s(%s): sizeInBytes %zu, the attribute is %zu bytes", fn,
                           attr, size, want);
    memcpy(out, buf, want);
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ matmul descriptor */

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
    BLASLT_INJECT("cublasLtMatmulDescCreate");
    if (!matmulDesc) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescCreate: matmulDesc is NULL");
    blaslt_desc *d = calloc(1, sizeof(cublasLtMatmulDescOpaque_t));
    if (!d) return blaslt_fail(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtMatmulDescCreate: out of host memory");
    d->magic = BLASLT_MAGIC_DESC;
    d->compute_type = (int32_t)computeType;
    d->scale_type = (int32_t)scaleType;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = CUBLAS_OP_N;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->bias_type = -1;
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, 1);
    *matmulDesc = (cublasLtMatmulDesc_t)(void *)d;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
    BLASLT_INJECT("cublasLtMatmulDescDestroy");
    if (!matmulDesc) return CUBLAS_STATUS_SUCCESS;   /* like free(NULL) */
    blaslt_desc *d = blaslt_desc_get(matmulDesc);
    if (!d) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulDescDestroy: not a live matmul descriptor");
    d->magic = 0;
    free(d);
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, -1);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t blaslt_op_check(const char *fn, const char *attr, int32_t op) {
    if (op == CUBLAS_OP_N || op == CUBLAS_OP_T) return CUBLAS_STATUS_SUCCESS;
    if (op == CUBLAS_OP_C || op == CUBLAS_OP_CONJG)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(%s): conjugate operations are not emulated", fn, attr);
    return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s(%s): %d is not a cublasOperation_t", fn, attr, (int)op);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t sizeInBytes) {
    static const char fn[] = "cublasLtMatmulDescSetAttribute";
    BLASLT_INJECT("cublasLtMatmulDescSetAttribute");
    blaslt_desc *d = blaslt_desc_get(matmulDesc);
    if (!d) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: not a live matmul descriptor", fn);
    cublasStatus_t st;
    int32_t i32 = 0;
    uint32_t u32 = 0;
    int64_t i64 = 0;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:   /* int32_t */
        if ((st = blaslt_attr_read(fn, "COMPUTE_TYPE", buf, sizeInBytes, &i32, sizeof i32))) return st;
        d->compute_type = i32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:     /* int32_t */
        if ((st = blaslt_attr_read(fn, "SCALE_TYPE", buf, sizeInBytes, &i32, sizeof i32))) return st;
        d->scale_type = i32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:   /* int32_t */
        if ((st = blaslt_attr_read(fn, "POINTER_MODE", buf, sizeInBytes, &i32, sizeof i32))) return st;
        if (i32 != CUBLASLT_POINTER_MODE_HOST)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(POINTER_MODE): only CUBLASLT_POINTER_MODE_HOST is emulated", fn);
        d->pointer_mode = i32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_TRANSA:         /* int32_t (cublasOperation_t) */
    case CUBLASLT_MATMUL_DESC_TRANSB: {
        const char *name = attr == CUBLASLT_MATMUL_DESC_TRANSA ? "TRANSA" : "TRANSB";
        if ((st = blaslt_attr_read(fn, name, buf, sizeInBytes, &i32, sizeof i32))) return st;
        if ((st = blaslt_op_check(fn, name, i32))) return st;
        if (attr == CUBLASLT_MATMUL_DESC_TRANSA)
            d->transa = i32;
        else
            d->transb = i32;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_TRANSC:         /* int32_t; documented "Currently only CUBLAS_OP_N is supported" */
        if ((st = blaslt_attr_read(fn, "TRANSC", buf, sizeInBytes, &i32, sizeof i32))) return st;
        if (i32 != CUBLAS_OP_N)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(TRANSC): only CUBLAS_OP_N is supported", fn);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_FILL_MODE:      /* int32_t */
        if ((st = blaslt_attr_read(fn, "FILL_MODE", buf, sizeInBytes, &i32, sizeof i32))) return st;
        if (i32 != CUBLAS_FILL_MODE_FULL)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(FILL_MODE): only CUBLAS_FILL_MODE_FULL is emulated", fn);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:       /* uint32_t; checked by the heuristic */
        if ((st = blaslt_attr_read(fn, "EPILOGUE", buf, sizeInBytes, &u32, sizeof u32))) return st;
        d->epilogue = u32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: { /* const void * */
        const void *p = NULL;
        if ((st = blaslt_attr_read(fn, "BIAS_POINTER", buf, sizeInBytes, &p, sizeof p))) return st;
        d->bias = p;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: /* int32_t (cudaDataType, -1 = D's) */
        if ((st = blaslt_attr_read(fn, "BIAS_DATA_TYPE", buf, sizeInBytes, &i32, sizeof i32))) return st;
        d->bias_type = i32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: /* int64_t; the emulation shares one bias across batches */
        if ((st = blaslt_attr_read(fn, "BIAS_BATCH_STRIDE", buf, sizeInBytes, &i64, sizeof i64))) return st;
        if (i64 != 0)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(BIAS_BATCH_STRIDE): only 0 is emulated", fn);
        return CUBLAS_STATUS_SUCCESS;
    default:
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: attribute %d is not emulated", fn, (int)attr);
    }
}

/* ------------------------------------------------------------ matrix layout */

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    BLASLT_INJECT("cublasLtMatrixLayoutCreate");
    if (!matLayout) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutCreate: matLayout is NULL");
    blaslt_layout *l = calloc(1, sizeof(cublasLtMatrixLayoutOpaque_t));
    if (!l) return blaslt_fail(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtMatrixLayoutCreate: out of host memory");
    l->magic = BLASLT_MAGIC_LAYOUT;
    l->type = (uint32_t)type;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->batch_count = 1;
    l->stride = 0;
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, 1);
    *matLayout = (cublasLtMatrixLayout_t)(void *)l;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
    BLASLT_INJECT("cublasLtMatrixLayoutDestroy");
    if (!matLayout) return CUBLAS_STATUS_SUCCESS;
    blaslt_layout *l = blaslt_layout_get(matLayout);
    if (!l) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutDestroy: not a live matrix layout");
    l->magic = 0;
    free(l);
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, -1);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t sizeInBytes) {
    static const char fn[] = "cublasLtMatrixLayoutSetAttribute";
    BLASLT_INJECT("cublasLtMatrixLayoutSetAttribute");
    blaslt_layout *l = blaslt_layout_get(matLayout);
    if (!l) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: not a live matrix layout", fn);
    cublasStatus_t st;
    int32_t i32 = 0;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:          /* uint32_t */
        if ((st = blaslt_attr_read(fn, "TYPE", buf, sizeInBytes, &u32, sizeof u32))) return st;
        l->type = u32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_ORDER:         /* int32_t */
        if ((st = blaslt_attr_read(fn, "ORDER", buf, sizeInBytes, &i32, sizeof i32))) return st;
        if (i32 != CUBLASLT_ORDER_COL)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(ORDER): only CUBLASLT_ORDER_COL is emulated", fn);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_ROWS:          /* uint64_t */
        if ((st = blaslt_attr_read(fn, "ROWS", buf, sizeInBytes, &u64, sizeof u64))) return st;
        l->rows = u64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_COLS:          /* uint64_t */
        if ((st = blaslt_attr_read(fn, "COLS", buf, sizeInBytes, &u64, sizeof u64))) return st;
        l->cols = u64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_LD:            /* int64_t */
        if ((st = blaslt_attr_read(fn, "LD", buf, sizeInBytes, &i64, sizeof i64))) return st;
        l->ld = i64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:   /* int32_t */
        if ((st = blaslt_attr_read(fn, "BATCH_COUNT", buf, sizeInBytes, &i32, sizeof i32))) return st;
        if (i32 < 1) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s(BATCH_COUNT): %d < 1", fn, (int)i32);
        l->batch_count = i32;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: /* int64_t, elements */
        if ((st = blaslt_attr_read(fn, "STRIDED_BATCH_OFFSET", buf, sizeInBytes, &i64, sizeof i64))) return st;
        l->stride = i64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:    /* uint32_t, 0 = strided */
        if ((st = blaslt_attr_read(fn, "BATCH_MODE", buf, sizeInBytes, &u32, sizeof u32))) return st;
        if (u32 != CUBLASLT_BATCH_MODE_STRIDED)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(BATCH_MODE): only strided batches are emulated", fn);
        return CUBLAS_STATUS_SUCCESS;
    default:
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: attribute %d is not emulated", fn, (int)attr);
    }
}

/* ------------------------------------------------------------ preference */

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    BLASLT_INJECT("cublasLtMatmulPreferenceCreate");
    if (!pref) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceCreate: pref is NULL");
    blaslt_pref *p = calloc(1, sizeof(cublasLtMatmulPreferenceOpaque_t));
    if (!p) return blaslt_fail(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtMatmulPreferenceCreate: out of host memory");
    p->magic = BLASLT_MAGIC_PREF;
    p->max_workspace = 0;   /* documented default: no workspace allowed */
    for (int i = 0; i < 4; i++) p->min_align[i] = 256;   /* documented default */
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, 1);
    *pref = (cublasLtMatmulPreference_t)(void *)p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    BLASLT_INJECT("cublasLtMatmulPreferenceDestroy");
    if (!pref) return CUBLAS_STATUS_SUCCESS;
    blaslt_pref *p = blaslt_pref_get(pref);
    if (!p) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceDestroy: not a live preference");
    p->magic = 0;
    free(p);
    emudev_count(EMUDEV_COUNTER_BLASLT_OBJECTS, -1);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t sizeInBytes) {
    static const char fn[] = "cublasLtMatmulPreferenceSetAttribute";
    BLASLT_INJECT("cublasLtMatmulPreferenceSetAttribute");
    blaslt_pref *p = blaslt_pref_get(pref);
    if (!p) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: not a live preference", fn);
    cublasStatus_t st;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:          /* uint32_t */
        if ((st = blaslt_attr_read(fn, "SEARCH_MODE", buf, sizeInBytes, &u32, sizeof u32))) return st;
        if (u32 != CUBLASLT_SEARCH_BEST_FIT)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s(SEARCH_MODE): only CUBLASLT_SEARCH_BEST_FIT is emulated", fn);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:  /* uint64_t */
        if ((st = blaslt_attr_read(fn, "MAX_WORKSPACE_BYTES", buf, sizeInBytes, &u64, sizeof u64))) return st;
        p->max_workspace = u64;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: /* uint32_t each */
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
        int which = (int)attr - (int)CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
        static const char *const names[4] = {"MIN_ALIGNMENT_A_BYTES", "MIN_ALIGNMENT_B_BYTES",
                                             "MIN_ALIGNMENT_C_BYTES", "MIN_ALIGNMENT_D_BYTES"};
        if ((st = blaslt_attr_read(fn, names[which], buf, sizeInBytes, &u32, sizeof u32))) return st;
        p->min_align[which] = u32;
        return CUBLAS_STATUS_SUCCESS;
    }
    default:
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: attribute %d is not emulated", fn, (int)attr);
    }
}

/* ------------------------------------------------------------ the problem and its rules */

typedef struct blaslt_problem {
    emudev_gemm_args g;                   /* without pointers, alpha, beta */
    int32_t types[4];                     /* cudaDataType of A, B, C, D */
    emudev_type et[4];                    /* the same, as the arithmetic's types */
    const blaslt_layout *lay[4];
    size_t es[4];                         /* element bytes of A, B, C, D */
    size_t bias_es;
} blaslt_problem;

static const char *const blaslt_operand_names[4] = {"A", "B", "C", "D"};

static int blaslt_type_map(int32_t t, emudev_type *out, size_t *es) {
    switch (t) {
    case CUDA_R_32F: *out = EMUDEV_TYPE_F32; *es = 4; return 1;
    case CUDA_R_16F: *out = EMUDEV_TYPE_F16; *es = 2; return 1;
    case CUDA_R_16BF: *out = EMUDEV_TYPE_BF16; *es = 2; return 1;
    default: return 0;
    }
}

/* The four layouts, live and of a data type the emulation has. */
static cublasStatus_t blaslt_problem_operands(const char *fn, const cublasLtMatrixLayout_t in[4], blaslt_problem *q) {
    for (int i = 0; i < 4; i++) {
        q->lay[i] = blaslt_layout_get(in[i]);
        if (!q->lay[i])
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %sdesc is not a live matrix layout", fn,
                               blaslt_operand_names[i]);
        q->types[i] = (int32_t)q->lay[i]->type;
        if (!blaslt_type_map(q->types[i], &q->et[i], &q->es[i]))
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: %s has data type %d; the emulation has R_32F, R_16F, R_16BF",
                               fn, blaslt_operand_names[i], (int)q->types[i]);
    }
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t blaslt_problem_check_types(const char *fn, const blaslt_desc *d, const blaslt_problem *q) {
    int32_t ta = q->types[0], tb = q->types[1], tc = q->types[2], td = q->types[3];
    /* cuBLAS docs, cublasLtMatmul "Datatypes supported" (regular, non-fp8, compute
     * CUBLAS_COMPUTE_32F, scale CUDA_R_32F): A and B of one type; C and D of one
     * type; R_16F -> R_16F or R_32F, R_16BF -> R_16BF or R_32F, R_32F -> R_32F. */
    if (ta != tb)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: A type %d differs from B type %d", fn, (int)ta, (int)tb);
    if (tc != td)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: C type %d differs from D type %d", fn, (int)tc, (int)td);
    if (ta == CUDA_R_32F ? td != CUDA_R_32F : (td != ta && td != CUDA_R_32F))
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: A/B type %d with C/D type %d is not a cuBLASLt combination",
                           fn, (int)ta, (int)td);
    /* Same table: CUBLAS_COMPUTE_32F (and _PEDANTIC) for all of those; the
     * FAST_16F / FAST_16BF / FAST_TF32 compute types only with R_32F A, B, C, D
     * (they are emulated at full float32, which they permit). Scale: R_32F. */
    switch (d->compute_type) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        break;
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        if (ta != CUDA_R_32F || td != CUDA_R_32F)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: compute type %d needs R_32F A, B, C and D", fn,
                               (int)d->compute_type);
        break;
    default:
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: compute type %d is not emulated (CUBLAS_COMPUTE_32F*)", fn,
                           (int)d->compute_type);
    }
    if (d->scale_type != CUDA_R_32F)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: scale type %d with compute type 32F (must be CUDA_R_32F)",
                           fn, (int)d->scale_type);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t blaslt_problem_check_epilogue(const char *fn, const blaslt_desc *d, blaslt_problem *q) {
    /* cublasLtEpilogue_t: the emulation has DEFAULT, RELU, BIAS, RELU_BIAS. */
    uint32_t e = d->epilogue;
    if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU && e != CUBLASLT_EPILOGUE_BIAS &&
        e != CUBLASLT_EPILOGUE_RELU_BIAS)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: epilogue %u is not emulated (1, 2, 4, 6 are)", fn, e);
    /* CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: "Bias vector elements are the same type as
     * the elements of output matrix (Dtype)" except IMMA and fp8 kernels; -1 = that. */
    q->bias_es = q->es[3];
    if ((e & CUBLASLT_EPILOGUE_BIAS) && d->bias_type != -1 && d->bias_type != q->types[3])
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: bias type %d with D type %d (must be D's type)", fn,
                           (int)d->bias_type, (int)q->types[3]);
    return CUBLAS_STATUS_SUCCESS;
}

/* Each layout on its own: sizes, leading dimension, batch stride. */
static cublasStatus_t blaslt_problem_check_layouts(const char *fn, const blaslt_problem *q) {
    for (int i = 0; i < 4; i++) {
        const blaslt_layout *l = q->lay[i];
        const char *name = blaslt_operand_names[i];
        /* CUBLASLT_MATRIX_LAYOUT_ROWS/COLS: "Usually only values that can be expressed as
         * int32_t are supported"; empty matrices are refused rather than guessed at. */
        if (l->rows == 0 || l->cols == 0 || l->rows > INT32_MAX || l->cols > INT32_MAX)
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: %s is %llu x %llu (1 .. INT32_MAX each)", fn, name,
                               (unsigned long long)l->rows, (unsigned long long)l->cols);
        /* CUBLASLT_MATRIX_LAYOUT_LD: "Currently only non-negative values are supported,
         * must be ... greater or equal to CUBLASLT_MATRIX_LAYOUT_ROWS in case of
         * CUBLASLT_ORDER_COL". */
        if (l->ld < (int64_t)l->rows)
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %s has ld %lld < rows %llu", fn, name,
                               (long long)l->ld, (unsigned long long)l->rows);
        if (l->stride < 0)
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %s has a negative batch stride %lld", fn, name,
                               (long long)l->stride);
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The layouts together: the shapes multiply, one batch count, D's batches apart. */
static cublasStatus_t blaslt_problem_check_shapes(const char *fn, const blaslt_desc *d, const blaslt_problem *q) {
    /* D = op(A) op(B) + C: D is m x n, C the same, op(A) m x k, op(B) k x n. */
    const blaslt_layout *A = q->lay[0], *B = q->lay[1], *C = q->lay[2], *D = q->lay[3];
    int64_t m = (int64_t)D->rows, n = (int64_t)D->cols;
    int64_t am = (int64_t)(d->transa ? A->cols : A->rows), ak = (int64_t)(d->transa ? A->rows : A->cols);
    int64_t bk = (int64_t)(d->transb ? B->cols : B->rows), bn = (int64_t)(d->transb ? B->rows : B->cols);
    if ((int64_t)C->rows != m || (int64_t)C->cols != n)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: C is %llu x %llu but D is %lld x %lld", fn,
                           (unsigned long long)C->rows, (unsigned long long)C->cols, (long long)m, (long long)n);
    if (am != m || bn != n || ak != bk)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE,
                           "%s: op(A) is %lld x %lld, op(B) %lld x %lld, D %lld x %lld: the shapes do not multiply", fn,
                           (long long)am, (long long)ak, (long long)bk, (long long)bn, (long long)m, (long long)n);
    /* CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: one count for the whole batched product. */
    int batch = D->batch_count;
    for (int i = 0; i < 3; i++)
        if (q->lay[i]->batch_count != batch)
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %s has batch count %d but D has %d", fn,
                               blaslt_operand_names[i], (int)q->lay[i]->batch_count, batch);
    /* Emulation check: overlapping D batches would race on a GPU. */
    if (batch > 1 && D->stride < D->ld * (int64_t)D->cols)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: D's batches overlap (stride %lld < ld*cols %lld)", fn,
                           (long long)D->stride, (long long)(D->ld * (int64_t)D->cols));
    return CUBLAS_STATUS_SUCCESS;
}

/*
 * The rules a matmul must satisfy; shared by the heuristic and the matmul
 * (which re-checks, as the real one does, because descriptors may change
 * in between).  Each rule names its source.  Returns SUCCESS with *q
 * filled, or the status and a message.
 */
static cublasStatus_t blaslt_problem_check(const char *fn, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                                           cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
                                           cublasLtMatrixLayout_t Ddesc, blaslt_problem *q) {
    memset(q, 0, sizeof *q);
    const blaslt_desc *d = blaslt_desc_get(desc);
    if (!d) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: computeDesc is not a live matmul descriptor", fn);
    const cublasLtMatrixLayout_t in[4] = {Adesc, Bdesc, Cdesc, Ddesc};
    cublasStatus_t st;
    if ((st = blaslt_problem_operands(fn, in, q)) || (st = blaslt_problem_check_types(fn, d, q)) ||
        (st = blaslt_problem_check_epilogue(fn, d, q)) || (st = blaslt_problem_check_layouts(fn, q)) ||
        (st = blaslt_problem_check_shapes(fn, d, q)))
        return st;
    const blaslt_layout *A = q->lay[0], *B = q->lay[1], *C = q->lay[2], *D = q->lay[3];
    q->g = (emudev_gemm_args){
        .transa = d->transa != CUBLAS_OP_N, .transb = d->transb != CUBLAS_OP_N,
        .m = (int64_t)D->rows, .n = (int64_t)D->cols, .k = (int64_t)(d->transa ? A->rows : A->cols),
        .a_type = q->et[0], .b_type = q->et[1], .c_type = q->et[2], .d_type = q->et[3], .bias_type = q->et[3],
        .lda = A->ld, .ldb = B->ld, .ldc = C->ld, .ldd = D->ld, .batch_count = D->batch_count,
        .stride_a = A->stride, .stride_b = B->stride, .stride_c = C->stride, .stride_d = D->stride,
        .epilogue = (int)d->epilogue,
    };
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ algorithms */

/*
 * The emulated algorithm, in cublasLtMatmulAlgo_t's eight words:
 *   data[0]  magic
 *   data[1]  min alignment of A | of B << 32     (bytes)
 *   data[2]  min alignment of C | of D << 32
 *   data[3]  alignment of the bias | workspace bytes needed << 32
 *   data[4]  A type | D type << 16 | epilogue << 32
 *   data[5]  compute type
 * An algorithm is only valid for the problem class it was found for.
 */
typedef struct blaslt_algo {
    uint32_t align[4];
    uint32_t bias_align;
    uint32_t workspace;
    int32_t ab_type, cd_type;
    uint32_t epilogue;
    int32_t compute_type;
    uint32_t variant;      /* which of the heuristic's candidates (they compute the same) */
} blaslt_algo;

static void blaslt_algo_encode(const blaslt_algo *a, cublasLtMatmulAlgo_t *out) {
    memset(out, 0, sizeof *out);
    out->data[0] = BLASLT_MAGIC_ALGO;
    out->data[1] = (uint64_t)a->align[0] | (uint64_t)a->align[1] << 32;
    out->data[2] = (uint64_t)a->align[2] | (uint64_t)a->align[3] << 32;
    out->data[3] = (uint64_t)a->bias_align | (uint64_t)a->workspace << 32;
    out->data[4] = (uint64_t)(uint16_t)a->ab_type | (uint64_t)(uint16_t)a->cd_type << 16 | (uint64_t)a->epilogue << 32;
    out->data[5] = (uint64_t)(uint32_t)a->compute_type | (uint64_t)a->variant << 32;
}

static int blaslt_algo_decode(const cublasLtMatmulAlgo_t *in, blaslt_algo *a) {
    if (in->data[0] != BLASLT_MAGIC_ALGO) return 0;
    a->align[0] = (uint32_t)in->data[1];
    a->align[1] = (uint32_t)(in->data[1] >> 32);
    a->align[2] = (uint32_t)in->data[2];
    a->align[3] = (uint32_t)(in->data[2] >> 32);
    a->bias_align = (uint32_t)in->data[3];
    a->workspace = (uint32_t)(in->data[3] >> 32);
    a->ab_type = (int16_t)(uint16_t)in->data[4];
    a->cd_type = (int16_t)(uint16_t)(in->data[4] >> 16);
    a->epilogue = (uint32_t)(in->data[4] >> 32);
    a->compute_type = (int32_t)(uint32_t)in->data[5];
    a->variant = (uint32_t)(in->data[5] >> 32);
    return a->variant < EMUDEV_MAX_ALGORITHMS;
}

/* Largest power of two dividing p, capped (NULL counts as the cap). */
static uint32_t blaslt_ptr_align(const void *p, uint32_t cap) {
    uintptr_t v = (uintptr_t)p;
    uint32_t a = 1;
    while (a < cap && !(v & a)) a <<= 1;
    return a;
}

/* The algorithm the heuristic hands out for problem q under preference p:
 * it requires the preference's alignments (never less than one element),
 * the bias alignment seen now (cublasLt.h: the heuristic "depend[s] on its
 * value to determine expected pointer alignment"; 16 bytes at most, the
 * widest vector access of the kernels) and no workspace. */
static void blaslt_algo_for(const blaslt_problem *q, const blaslt_desc *d, const uint32_t align[4], blaslt_algo *a) {
    memset(a, 0, sizeof *a);
    for (int i = 0; i < 4; i++) a->align[i] = align[i] > q->es[i] ? align[i] : (uint32_t)q->es[i];
    a->bias_align = blaslt_ptr_align(d->bias, 16);
    if (a->bias_align < q->bias_es) a->bias_align = (uint32_t)q->bias_es;
    a->workspace = 0;
    a->ab_type = q->types[0];
    a->cd_type = q->types[3];
    a->epilogue = d->epilogue;
    a->compute_type = d->compute_type;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int *returnAlgoCount) {
    static const char fn[] = "cublasLtMatmulAlgoGetHeuristic";
    /* No algorithm unless one is found, whatever fails (an injected failure included). */
    if (returnAlgoCount) *returnAlgoCount = 0;
    BLASLT_INJECT("cublasLtMatmulAlgoGetHeuristic");
    if (!blaslt_handle_ok(lightHandle))
        return blaslt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: not a live cuBLASLt handle", fn);
    /* Documented: INVALID_VALUE "if requestedAlgoCount is less or equal to zero". */
    if (requestedAlgoCount <= 0)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: requestedAlgoCount %d <= 0", fn, requestedAlgoCount);
    if (!heuristicResultsArray || !returnAlgoCount)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: heuristicResultsArray or returnAlgoCount is NULL", fn);
    const blaslt_pref *p = blaslt_pref_get(preference);
    if (!p) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: preference is not a live preference", fn);
    blaslt_problem q;
    cublasStatus_t st = blaslt_problem_check(fn, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &q);
    if (st) return st;
    blaslt_algo a;
    blaslt_algo_for(&q, blaslt_desc_get(operationDesc), p->min_align, &a);
    /* Documented: results use at most MAX_WORKSPACE_BYTES; ours need none,
     * so they always fit.  As many candidates as the device is set to offer
     * (bertc_emudev_set_algorithms, default one), best first like the real
     * heuristic's list; they differ only in their variant number. */
    int n = emudev_algorithms() < requestedAlgoCount ? emudev_algorithms() : requestedAlgoCount;
    for (int i = 0; i < n; i++) {
        cublasLtMatmulHeuristicResult_t *r = &heuristicResultsArray[i];
        memset(r, 0, sizeof *r);
        a.variant = (uint32_t)i;
        blaslt_algo_encode(&a, &r->algo);
        r->workspaceSize = a.workspace;
        r->state = CUBLAS_STATUS_SUCCESS;
        r->wavesCount = 1.0f;
    }
    *returnAlgoCount = n;
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------ the matmul as stream work */

typedef struct blaslt_work {
    emudev_work base;
    emudev_gemm_args g;
    size_t bytes[4];      /* extent of A, B, C (0: not given), D */
    size_t bias_bytes;    /* 0: no bias */
    int delay_us;         /* bertc_emudev_set_algorithm_delay of its algorithm, when enqueued */
} blaslt_work;

/* Bytes from the first to one past the last element of a strided batch. */
static size_t blaslt_extent(const blaslt_layout *l, size_t es) {
    int64_t last = (int64_t)(l->batch_count - 1) * l->stride + (int64_t)(l->cols - 1) * l->ld + (int64_t)l->rows;
    return (size_t)last * es;
}

static const void *blaslt_work_ptr(const emudev_gemm_args *g, int i) {
    return i == 0 ? g->a : i == 1 ? g->b : i == 2 ? g->c : (const void *)g->d;
}

/* The operands are checked again when the work runs: memory freed after
 * the enqueue (or since a graph was captured) is caught like a GPU fault. */
static CUresult blaslt_work_run(emudev_work *w) {
    blaslt_work *x = (blaslt_work *)w;
    for (int i = 0; i < 4; i++) {
        const void *p = blaslt_work_ptr(&x->g, i);
        if (x->bytes[i] && !emudev_mem_valid((CUdeviceptr)(uintptr_t)p, x->bytes[i]))
            return (CUresult)emudev_error(CUDA_ERROR_ILLEGAL_ADDRESS,
                                          "matmul: operand %s [%p, +%zu) is no longer inside a live allocation",
                                          blaslt_operand_names[i], p, x->bytes[i]);
    }
    if (x->bias_bytes && !emudev_mem_valid((CUdeviceptr)(uintptr_t)x->g.bias, x->bias_bytes))
        return (CUresult)emudev_error(CUDA_ERROR_ILLEGAL_ADDRESS,
                                      "matmul: bias [%p, +%zu) is no longer inside a live allocation", x->g.bias,
                                      x->bias_bytes);
    if (!emudev_null()) emudev_gemm_compute(&x->g);
    if (x->delay_us > 0) {
        struct timespec ts = {x->delay_us / 1000000, (long)(x->delay_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    emudev_count(EMUDEV_COUNTER_MATMULS, 1);
    return CUDA_SUCCESS;
}

static emudev_work *blaslt_work_clone(const emudev_work *w) { return emudev_work_copy(w, sizeof(blaslt_work)); }

static void blaslt_work_free(emudev_work *w) { free(w); }

static const emudev_work_ops blaslt_work_ops = {
    .what = "matmul",
    .run = blaslt_work_run,
    .clone = blaslt_work_clone,
    .free = blaslt_work_free,
};

/* The algorithm: one from the heuristic for this class of problem, or
 * none, when cuBLASLt runs its own query (documented for algo == NULL),
 * which sees the actual pointers and so requires only element alignment. */
static cublasStatus_t blaslt_matmul_algo(const char *fn, const cublasLtMatmulAlgo_t *algo, const blaslt_problem *q,
                                         const blaslt_desc *d, blaslt_algo *a) {
    if (!algo) {
        static const uint32_t ones[4] = {1, 1, 1, 1};
        blaslt_algo_for(q, d, ones, a);
        a->bias_align = (uint32_t)q->bias_es;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!blaslt_algo_decode(algo, a))
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: algo did not come from cublasLtMatmulAlgoGetHeuristic", fn);
    if (a->ab_type != q->types[0] || a->cd_type != q->types[3] || a->epilogue != d->epilogue ||
        a->compute_type != d->compute_type)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED,
                           "%s: algo was found for types %d/%d, epilogue %u, compute %d; this matmul has %d/%d, %u, %d",
                           fn, (int)a->ab_type, (int)a->cd_type, a->epilogue, (int)a->compute_type, (int)q->types[0],
                           (int)q->types[3], d->epilogue, (int)d->compute_type);
    return CUBLAS_STATUS_SUCCESS;
}

/* A, B, C (when read) and D: given, inside one live allocation, as aligned
 * as the algorithm requires; and C == D only as a true in-place product.
 * bytes[i] is each operand's extent, 0 for a C that is not read. */
static cublasStatus_t blaslt_matmul_check_operands(const char *fn, const blaslt_problem *q, const blaslt_algo *a,
                                                   const void *const ptr[4], const size_t bytes[4]) {
    for (int i = 0; i < 4; i++) {
        if (!bytes[i]) continue;
        if (!ptr[i]) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %s is NULL", fn, blaslt_operand_names[i]);
        /* Emulation check: the operand lies inside one live cuMemAlloc allocation. */
        if (!emudev_mem_valid((CUdeviceptr)(uintptr_t)ptr[i], bytes[i]))
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: %s [%p, +%zu bytes) is not inside one live allocation",
                               fn, blaslt_operand_names[i], ptr[i], bytes[i]);
        /* MIN_ALIGNMENT_*_BYTES: the algorithm was chosen for pointers this aligned. */
        if ((uintptr_t)ptr[i] % a->align[i])
            return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED,
                               "%s: %s at %p is not %u-byte aligned, as the algorithm requires (the preference's "
                               "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_%s_BYTES)",
                               fn, blaslt_operand_names[i], ptr[i], a->align[i], blaslt_operand_names[i]);
    }
    /* cublasLtMatmul docs: in-place means C == D with Cdesc equal to Ddesc. */
    if (bytes[2] && ptr[2] == ptr[3]) {
        const blaslt_layout *lc = q->lay[2], *ld = q->lay[3];
        if (lc->ld != ld->ld || (lc->batch_count > 1 && lc->stride != ld->stride))
            return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: C == D (in place) but Cdesc differs from Ddesc", fn);
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The bias of a bias epilogue: given, live, as aligned as when the
 * algorithm was chosen.  *bias_bytes: its extent, 0 without a bias. */
static cublasStatus_t blaslt_matmul_check_bias(const char *fn, const blaslt_problem *q, const blaslt_desc *d,
                                               const blaslt_algo *a, size_t *bias_bytes) {
    *bias_bytes = 0;
    if (!(q->g.epilogue & CUBLASLT_EPILOGUE_BIAS)) return CUBLAS_STATUS_SUCCESS;
    *bias_bytes = (size_t)q->g.m * q->bias_es;
    if (!d->bias) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: bias epilogue without BIAS_POINTER", fn);
    if (!emudev_mem_valid((CUdeviceptr)(uintptr_t)d->bias, *bias_bytes))
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: bias [%p, +%zu bytes) is not inside one live allocation", fn,
                           d->bias, *bias_bytes);
    if ((uintptr_t)d->bias % a->bias_align)
        return blaslt_fail(CUBLAS_STATUS_NOT_SUPPORTED,
                           "%s: bias at %p is less aligned than when the algorithm was chosen (%u bytes)", fn, d->bias,
                           a->bias_align);
    return CUBLAS_STATUS_SUCCESS;
}

/* Documented: INVALID_VALUE "when workspaceSizeInBytes is less than workspace
 * required by configured algo"; a workspace given must be device memory. */
static cublasStatus_t blaslt_matmul_check_workspace(const char *fn, const blaslt_algo *a, void *workspace,
                                                    size_t workspaceSizeInBytes) {
    if (workspaceSizeInBytes < a->workspace)
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: workspace of %zu bytes, the algorithm needs %u", fn,
                           workspaceSizeInBytes, a->workspace);
    if (workspaceSizeInBytes &&
        (!workspace || !emudev_mem_valid((CUdeviceptr)(uintptr_t)workspace, workspaceSizeInBytes)))
        return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: workspace [%p, +%zu bytes) is not inside one live allocation",
                           fn, workspace, workspaceSizeInBytes);
    return CUBLAS_STATUS_SUCCESS;
}

/* Hands the checked matmul g to emudev_submit as a work item; bytes[4] and
 * bias_bytes are the operands' extents, checked again when it runs. */
static cublasStatus_t blaslt_matmul_submit(const char *fn, const emudev_gemm_args *g, const size_t bytes[4],
                                           size_t bias_bytes, int delay_us, cudaStream_t stream) {
    blaslt_work *w = calloc(1, sizeof *w);
    if (!w) return blaslt_fail(CUBLAS_STATUS_ALLOC_FAILED, "%s: out of host memory", fn);
    w->base.ops = &blaslt_work_ops;
    w->g = *g;
    memcpy(w->bytes, bytes, sizeof w->bytes);
    w->bias_bytes = bias_bytes;
    w->delay_us = delay_us;
    /* emudev_submit owns w whatever it returns.  cublasLtMatmul's documented
     * statuses have no room for stream errors: they are EXECUTION_FAILED ("if
     * cuda reported execution error from the device"), except running out of
     * memory, which is ALLOC_FAILED. */
    CUresult r = emudev_submit((CUstream)stream, &w->base);
    if (r == CUDA_SUCCESS) return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t mapped = r == CUDA_ERROR_OUT_OF_MEMORY ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_EXECUTION_FAILED;
    return blaslt_fail(mapped, "%s: enqueueing on stream %p failed with CUresult %d (%s)", fn, (void *)stream, (int)r,
                       bertc_emudev_last_error());
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                              cudaStream_t stream) {
    static const char fn[] = "cublasLtMatmul";
    BLASLT_INJECT("cublasLtMatmul");
    /* Documented: NOT_INITIALIZED "if cuBLASLt handle has not been initialized". */
    if (!blaslt_handle_ok(lightHandle))
        return blaslt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: not a live cuBLASLt handle", fn);
    blaslt_problem q;
    cublasStatus_t st = blaslt_problem_check(fn, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &q);
    if (st) return st;
    const blaslt_desc *d = blaslt_desc_get(computeDesc);
    blaslt_algo a;
    if ((st = blaslt_matmul_algo(fn, algo, &q, d, &a))) return st;
    /* Host pointer mode: alpha and beta are read now, as the real library does. */
    if (!alpha || !beta) return blaslt_fail(CUBLAS_STATUS_INVALID_VALUE, "%s: alpha or beta is NULL", fn);
    float alpha_v, beta_v;
    memcpy(&alpha_v, alpha, sizeof alpha_v);
    memcpy(&beta_v, beta, sizeof beta_v);
    const void *const ptr[4] = {A, B, C, D};
    size_t bytes[4];
    for (int i = 0; i < 4; i++) bytes[i] = blaslt_extent(q.lay[i], q.es[i]);
    /* beta == 0: C is not an input (it may be NULL), as in every BLAS. */
    if (beta_v == 0.0f && !C) bytes[2] = 0;
    size_t bias_bytes;
    if ((st = blaslt_matmul_check_operands(fn, &q, &a, ptr, bytes)) ||
        (st = blaslt_matmul_check_bias(fn, &q, d, &a, &bias_bytes)) ||
        (st = blaslt_matmul_check_workspace(fn, &a, workspace, workspaceSizeInBytes)))
        return st;
    emudev_gemm_args g = q.g;
    g.a = A;
    g.b = B;
    g.c = bytes[2] ? C : NULL;
    g.d = D;
    g.bias = bias_bytes ? d->bias : NULL;
    g.alpha = alpha_v;
    g.beta = beta_v;
    return blaslt_matmul_submit(fn, &g, bytes, bias_bytes, algo ? emudev_algorithm_delay_us(a.variant) : 0, stream);
}
