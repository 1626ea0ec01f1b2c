/*
 * rt — the runtime's internals, shared by its files:
 *
 *   rt_util.c     host allocation through one door, error messages
 *   rt_plan.c     bertc_plan: the read plan, its reference count, queries
 *   rt_device.c   per-device state shared by a plan's contexts: device
 *                 table, primary context, module and functions, weights
 *   rt_context.c  bertc_context: stream, arena, request staging, outputs;
 *                 create, destroy, requests
 *   rt_batch.c    packed batches: bertc_infer_batch and the batch's outputs
 *   rt_gemm.c     the context's cuBLASLt steps: descriptors, the
 *                 heuristic's candidates, timed at create
 *   rt_graph.c    one CUDA Graph per bucket: capture (programmatic
 *                 dependent launch between bertc's kernels), the copy
 *                 nodes a request resizes, single steps
 *   rt_debug.c    bertc_debug.h: steps one by one between events
 *   rt_check.c    bertc_debug.h: steps one by one against their launch contracts
 *   rt_image.c    which kernel image of a plan runs on a device
 *   rt_text.c     bertc_encode: the plan's tokenizer behind the public API
 *
 * Calls between the context's files go one way: rt_debug, rt_check, rt_batch ->
 * rt_context -> rt_graph -> rt_gemm (and every file to rt_util, rt_device,
 * rt_image).
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
    int l2_bytes;                  /* the device's L2 cache */
    char arch[16];                 /* the device's arch name ("sm_86", "emu") */
    int image;                     /* index of the plan image in use */
    int variant;                   /* the plan's step list for this device (plan_variant_for) */
    const sched_bucket *buckets;   /* [plan nbuckets] its buckets */
    CUmodule module;
    CUfunction *functions;         /* [nkernels] */
    CUdeviceptr weights;
    /* cuBLASLt algorithms chosen by timing (rt_gemm.c), under the plan's
     * lock: the first context to decide a problem decides it for every
     * context of the plan on this device, so a request's bits do not
     * depend on which context serves it. */
    struct rt_algo_choice *algos;
    int nalgos, cap_algos;
};

/* ---------------------------------------------------------------- contexts */

#define RT_MAX_ALGOS 8            /* cuBLASLt candidates considered per GEMM */

/* One cuBLASLt step of one bucket. */
typedef struct rt_gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;            /* what the chosen algorithm needs */
    CUdeviceptr pa, pb, pc, pd;
    int candidates;              /* the heuristic's results that could run */
    int chosen;                  /* index of the one kept among them (0: the heuristic's first) */
    float us;                    /* its time per run when candidates were timed, else 0 */
} rt_gemm;

/* A bucket's captured graph and what a request may change in it. */
typedef struct rt_graph {
    CUgraph graph;               /* kept: the copy nodes below are its nodes */
    CUgraphExec exec;
    CUgraphNode *copy;           /* [noutputs] copy node of each per-token (per-sequence) output copied back, else NULL */
    CUDA_MEMCPY3D *params;       /* [noutputs] each copy node's parameters as the graph recorded them */
    int64_t *rows;               /* [noutputs] the rows that node copies now */
} rt_graph;

struct bertc_context {
    bertc_plan *plan;
    rt_device *dev;
    device_table *t;
    bertc_context_options opt;
    CUstream stream;
    CUdeviceptr arena, request, workspace;
    CUdeviceptr counters;        /* the split-K arrival counters (plan.counter_bytes; 0 if none) */
    int32_t *staging;            /* page-locked, the request block of the largest bucket */
    uint8_t *outputs;            /* page-locked, every output copied back, largest bucket */
    size_t *output_offset;       /* [noutputs] into `outputs` */
    unsigned char *copied;       /* [noutputs] 1: copied back (options.outputs) */
    cublasLtHandle_t lt;
    rt_gemm **gemms;             /* [nbuckets][nsteps]; zero for kernel steps */
    rt_graph *graphs;            /* [nbuckets]; exec NULL until captured */
    int pdl;                     /* kernel-to-kernel steps launched programmatically */
    CUevent ev_start, ev_stop;
    int last_bucket;             /* -1 until a request succeeded */
    int64_t last_len;            /* the request's length, or the batch's total tokens */
    size_t batch_n;              /* requests of the last batch; 0: the last request was not one */
    int64_t *batch_start;        /* [max batch + 1]: their first rows, then the total (rt_batch.c) */
    int timed;
    char err[RT_ERR_CAP];
};

static inline CUdeviceptr rt_resolve(const bertc_context *c, sched_ref r) {
    switch (r.buf) {
    case SCHED_BUF_WEIGHTS: return c->dev->weights + r.offset;
    case SCHED_BUF_ARENA: return c->arena + r.offset;
    case SCHED_BUF_REQUEST: return c->request + r.offset;
    case SCHED_BUF_COUNTERS: return c->counters + r.offset;
    default: return 0;
    }
}

/* Bytes of an output's first `rows` rows, from its first element to the
 * last (rows is 1 for an output that is neither per token nor per
 * sequence). */
static inline size_t rt_output_bytes(const sched_output *o, int64_t rows) {
    if (!o->rows_are_seq && !o->per_seq) rows = 1;
    return (size_t)((rows - 1) * o->row_stride + o->cols) * (size_t)plan_dtype_size(o->dtype);
}

/* The rows of an output a bucket holds at most: its length, its
 * sequences (a token bucket's output per sequence), or 1. */
static inline int64_t rt_output_rows(const sched_bucket *b, const sched_output *o) {
    return o->per_seq ? b->max_seqs : o->rows_are_seq ? b->seq_len : 1;
}

/* Bytes of the request block a bucket's graph copies. */
static inline size_t rt_request_bytes(const sched_bucket *b) {
    return (size_t)kernel_request_bytes_in(b->seq_len, b->max_seqs);
}

/* rt_gemm.c: every GEMM step of every bucket (descriptors, candidates,
 * timed when options.time_algorithms and there is a choice); its enqueue;
 * its free. */
bertc_status rt_gemms_make(bertc_context *c);
bertc_status rt_gemm_enqueue(bertc_context *c, const sched_step *st, const rt_gemm *g);
void rt_gemm_free(const device_table *t, rt_gemm *g);

/* rt_graph.c: bucket b's graph captured; its per-token copies set to len
 * rows and its per-sequence ones to nseq (before a launch); freed.
 * rt_step_enqueue: step s of bucket b on the context's stream, as the
 * graph runs it but with a plain launch. */
bertc_status rt_graph_capture(bertc_context *c, int b);
bertc_status rt_graph_set_rows(bertc_context *c, int b, int64_t len, int64_t nseq);
void rt_graph_free(bertc_context *c, int b);
bertc_status rt_step_enqueue(bertc_context *c, int b, int s);

/* rt_context.c, for rt_debug.c, rt_check.c and rt_batch.c: a request checked (its
 * length bucket in *b) and written into the staging block; bucket b's
 * graph captured if it is not yet (capture_on_first_use); the staged block
 * run through it and waited for; rows [first, first + rows) of output o
 * of the last launch as float32 into dst (the caller checked the range). */
bertc_status rt_request_check(bertc_context *c, const bertc_request *q, int *b);
/* What every request entry point does first: the last request's results
 * forgotten (rt_results_forget); then, for one request, q not NULL (`fn`
 * names the entry point in the message) and rt_request_check. */
void rt_results_forget(bertc_context *c);
bertc_status rt_request_begin(bertc_context *c, const bertc_request *q, const char *fn, int *b);
void rt_request_stage(bertc_context *c, const bertc_request *q, int b);
bertc_status rt_bucket_ready(bertc_context *c, int b);
bertc_status rt_bucket_launch(bertc_context *c, int b);
bertc_status rt_output_check(bertc_context *c, int i, const char *fn);
void rt_output_copy(const bertc_context *c, int i, int64_t first, int64_t rows, float *dst);

/* "sm_90" -> 90, "compute_80" -> 80, "emu" (and anything else) -> 0. */
int rt_image_sm(const plan_image *im);

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

/*
 * The calling thread's stream-capture interaction mode, thread-local while
 * an entry point allocates or frees device or page-locked memory, then put
 * back.  A thread's mode is global by default, and in global mode such a
 * "potentially unsafe" call is prohibited while any *other* thread of the
 * process captures in global mode — the default of other CUDA users such
 * as PyTorch's graphs — and invalidates that thread's capture.  In
 * thread-local mode only the thread's own captures count, and bertc makes
 * no such call while it captures.  pop uses the function it saved, so it
 * may follow the release of the device table it came from (the libraries
 * stay loaded: device.c).
 */
typedef struct rt_capture_mode {
    CUresult (*exchange)(CUstreamCaptureMode *);   /* NULL: nothing to put back */
    CUstreamCaptureMode prev;
} rt_capture_mode;
void rt_capture_mode_push(const device_table *t, rt_capture_mode *m);
void rt_capture_mode_pop(rt_capture_mode *m);
/* n bytes of host memory (pageable or not) to the device, complete when it
 * returns: an asynchronous copy on stream s, then s synchronised.  Never
 * the synchronous cuMemcpyHtoD: from pageable memory it returns once the
 * bytes are staged, "but the DMA to final destination may not have
 * completed" (the driver API's synchronisation behaviour), and the
 * runtime's non-blocking streams are not ordered after the legacy stream
 * it runs on, so a kernel could read the old bytes.
 * *call names the call that failed. */
CUresult rt_upload(const device_table *t, CUdeviceptr dst, const void *src, size_t n, CUstream s, const char **call);
void rt_ctx_leave(const device_table *t, CUcontext ctx, CUcontext prev);
/* Frees the plan's tokenizer (rt_text.c), at the plan's end. */
void rt_text_free(bertc_plan *plan);

#endif
