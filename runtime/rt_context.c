/*
 * rt_context — bertc_context: everything one request in flight needs, and
 * the request path itself.
 *
 * At create, once: a stream; the activation arena (sized for the largest
 * bucket: buckets run one at a time, so they share it); the arrival
 * counters of the split-K kernels (zeroed here, once: every launch that
 * counts on them leaves them zero, so no graph needs a memset node and
 * the emulated device's poison fill of new memory cannot leak into a
 * count); the device request
 * block and its page-locked staging twin; a page-locked output area; the
 * cuBLASLt handle, workspace, and for every GEMM step of every bucket its
 * operation and matrix descriptors with the algorithm the heuristic chose
 * for this device (algorithms need a device, so the plan stores shapes and
 * the choice is made here); and, unless capture is deferred, one CUDA Graph
 * per bucket.
 *
 * A bucket's graph is, in stream order: copy the staging block to the
 * device request block (len, ids, types, mask), every step of the bucket's
 * schedule (kernel launches and cublasLtMatmul calls, whose arguments are
 * all device addresses fixed at capture), and copies of every output into
 * the page-locked output area.  A request therefore costs the host: check
 * the ids, write them into staging, one cuGraphLaunch, one synchronise.
 * The real length travels inside the copied block, so the graph is never
 * edited or re-captured; kernels read it from device memory, and cuBLASLt
 * computes the bucket's padding rows, which no real row depends on.
 *
 * Capture uses CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: contexts on different
 * threads may capture at the same time, and an unrelated thread's
 * allocation must not invalidate our capture (nor ours theirs).
 *
 * Only the first len entries of each staging array are written per
 * request; the rest keep whatever they held.  Kernels must not let padding
 * reach real rows, and the tests check that by poisoning it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "rt.h"

#define RT_DEFAULT_WORKSPACE ((size_t)4 << 20)

typedef struct rt_gemm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulAlgo_t algo;
    size_t workspace;            /* what the chosen algorithm needs */
    CUdeviceptr pa, pb, pc, pd;
} rt_gemm;

struct bertc_context {
    bertc_plan *plan;
    rt_device *dev;
    device_table *t;
    bertc_context_options opt;
    CUstream stream;
    CUdeviceptr arena, request, workspace, counters;
    int32_t *staging;            /* page-locked, the request block of the largest bucket */
    uint8_t *outputs;            /* page-locked, every output of the largest bucket */
    size_t *output_offset;       /* [noutputs] into `outputs` */
    cublasLtHandle_t lt;
    rt_gemm **gemms;             /* [nbuckets][nsteps]; zero for kernel steps */
    CUgraphExec *exec;           /* [nbuckets] */
    CUevent ev_start, ev_stop;
    int last_bucket;             /* -1 until a request succeeded */
    int64_t last_len;
    int timed;
    char err[RT_ERR_CAP];
};

static cudaDataType_t rt_cuda_type(plan_dtype t) {
    return t == PLAN_DTYPE_F16 ? CUDA_R_16F : t == PLAN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Bytes an output occupies from its first element to its last. */
static size_t rt_output_bytes(const sched_output *o, int bucket) {
    int64_t rows = o->rows_are_seq ? bucket : 1;
    return (size_t)((rows - 1) * o->row_stride + o->cols) * (size_t)plan_dtype_size(o->dtype);
}

static CUdeviceptr rt_resolve(const bertc_context *c, sched_ref r) {
    switch (r.buf) {
    case SCHED_BUF_WEIGHTS: return c->dev->weights + r.offset;
    case SCHED_BUF_ARENA: return c->arena + r.offset;
    case SCHED_BUF_REQUEST: return c->request + r.offset;
    case SCHED_BUF_COUNTERS: return c->counters + r.offset;
    default: return 0;
    }
}

/* Largest power of two (at most 256) dividing the address: what cuBLASLt
 * may assume about the operand. */
static uint32_t rt_alignment(CUdeviceptr p) {
    uint32_t a = 256;
    while (a > 1 && (p & (a - 1))) a >>= 1;
    return a;
}

/* ------------------------------------------------------------ cuBLASLt */

static bertc_status rt_layout(bertc_context *c, cublasLtMatrixLayout_t *l, plan_dtype t, int64_t rows, int64_t cols,
                              int64_t ld, int batch, int64_t stride, const char *step, const char *which) {
    cublasStatus_t s = c->t->cublasLtMatrixLayoutCreate(l, rt_cuda_type(t), (uint64_t)rows, (uint64_t)cols, ld);
    if (s != CUBLAS_STATUS_SUCCESS) {
        *l = NULL;
        return rt_blaslt_error(c->t, s, c->err, sizeof c->err, "step %s: cublasLtMatrixLayoutCreate(%s)", step, which);
    }
    if (batch > 1) {
        int32_t bc = batch;
        if ((s = c->t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc)) !=
                CUBLAS_STATUS_SUCCESS ||
            (s = c->t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof stride)) != CUBLAS_STATUS_SUCCESS)
            return rt_blaslt_error(c->t, s, c->err, sizeof c->err, "step %s: batch of layout %s", step, which);
    }
    return BERTC_STATUS_OK;
}

static void rt_gemm_free(const device_table *t, rt_gemm *g) {
    if (g->desc) t->cublasLtMatmulDescDestroy(g->desc);
    if (g->a) t->cublasLtMatrixLayoutDestroy(g->a);
    if (g->b) t->cublasLtMatrixLayoutDestroy(g->b);
    if (g->c) t->cublasLtMatrixLayoutDestroy(g->c);
    if (g->d) t->cublasLtMatrixLayoutDestroy(g->d);
    memset(g, 0, sizeof *g);
}

/* Descriptors for one GEMM step and the heuristic's first algorithm, given
 * the operands' real alignments and the workspace we have. */
static bertc_status rt_gemm_make(bertc_context *c, const sched_step *st, rt_gemm *g) {
    const sched_gemm *s = &st->gemm;
    const device_table *t = c->t;
    g->pa = rt_resolve(c, s->a);
    g->pb = rt_resolve(c, s->b);
    g->pd = rt_resolve(c, s->d);
    g->pc = s->c.buf == SCHED_BUF_NONE ? g->pd : rt_resolve(c, s->c);
    cublasStatus_t r = t->cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (r != CUBLAS_STATUS_SUCCESS) {
        g->desc = NULL;
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulDescCreate", st->name);
    }
    int32_t ta = s->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t ep = (uint32_t)s->epilogue;
    if ((r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) ||
        (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep)))
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulDescSetAttribute", st->name);
    if (s->epilogue == SCHED_EPILOGUE_BIAS || s->epilogue == SCHED_EPILOGUE_RELU_BIAS) {
        CUdeviceptr bias = rt_resolve(c, s->bias);
        int32_t bt = rt_cuda_type(s->bias_type);
        if ((r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) ||
            (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt)))
            return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: bias attributes", st->name);
    }
    bertc_status bs;
    if ((bs = rt_layout(c, &g->a, s->ab_type, s->transa ? s->k : s->m, s->transa ? s->m : s->k, s->lda,
                        s->batch_count, s->stride_a, st->name, "A")) ||
        (bs = rt_layout(c, &g->b, s->ab_type, s->transb ? s->n : s->k, s->transb ? s->k : s->n, s->ldb,
                        s->batch_count, s->stride_b, st->name, "B")) ||
        (bs = rt_layout(c, &g->c, s->cd_type, s->m, s->n, s->ldc, s->batch_count, s->stride_c, st->name, "C")) ||
        (bs = rt_layout(c, &g->d, s->cd_type, s->m, s->n, s->ldd, s->batch_count, s->stride_d, st->name, "D")))
        return bs;

    cublasLtMatmulPreference_t pref;
    if ((r = t->cublasLtMatmulPreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS)
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulPreferenceCreate", st->name);
    uint64_t ws = c->opt.workspace_bytes;
    uint32_t al[4] = {rt_alignment(g->pa), rt_alignment(g->pb), rt_alignment(g->pc), rt_alignment(g->pd)};
    static const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    r = t->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    for (int i = 0; i < 4 && r == CUBLAS_STATUS_SUCCESS; i++)
        r = t->cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof al[i]);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(&res, 0, sizeof res);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = t->cublasLtMatmulAlgoGetHeuristic(c->lt, g->desc, g->a, g->b, g->c, g->d, pref, 1, &res, &found);
    t->cublasLtMatmulPreferenceDestroy(pref);
    if (r != CUBLAS_STATUS_SUCCESS)
        return rt_blaslt_error(t, r, c->err, sizeof c->err,
                               "step %s: cublasLtMatmulAlgoGetHeuristic(m=%lld n=%lld k=%lld)", st->name,
                               (long long)s->m, (long long)s->n, (long long)s->k);
    if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS)
        return rt_error(BERTC_STATUS_DEVICE, c->err, sizeof c->err,
                        "step %s: cuBLASLt has no algorithm for m=%lld n=%lld k=%lld (%s) with a %llu-byte workspace",
                        st->name, (long long)s->m, (long long)s->n, (long long)s->k, plan_dtype_name(s->ab_type),
                        (unsigned long long)ws);
    g->algo = res.algo;
    g->workspace = res.workspaceSize;
    return BERTC_STATUS_OK;
}

/* ------------------------------------------------------------ capture */

static bertc_status rt_enqueue_step(bertc_context *c, const sched_step *st, const rt_gemm *g) {
    const device_table *t = c->t;
    if (st->kind == SCHED_STEP_GEMM) {
        const sched_gemm *s = &st->gemm;
        cublasStatus_t r = t->cublasLtMatmul(c->lt, g->desc, &s->alpha, (const void *)(uintptr_t)g->pa, g->a,
                                             (const void *)(uintptr_t)g->pb, g->b, &s->beta,
                                             (const void *)(uintptr_t)g->pc, g->c, (void *)(uintptr_t)g->pd, g->d,
                                             &g->algo, (void *)(uintptr_t)c->workspace, g->workspace, c->stream);
        if (r != CUBLAS_STATUS_SUCCESS)
            return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmul", st->name);
        return BERTC_STATUS_OK;
    }
    const sched_launch *l = &st->launch;
    CUdeviceptr vals[KERNEL_MAX_ARGS];
    void *params[KERNEL_MAX_ARGS];
    for (int i = 0; i < l->nargs; i++) {
        vals[i] = rt_resolve(c, l->args[i]);
        params[i] = &vals[i];
    }
    CUresult r = t->cuLaunchKernel(c->dev->functions[l->kernel], l->dims.grid[0], l->dims.grid[1], l->dims.grid[2],
                                   l->dims.block[0], l->dims.block[1], l->dims.block[2], l->dims.shared_bytes,
                                   c->stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "step %s: cuLaunchKernel(%s)", st->name,
                           c->plan->p.kernels[l->kernel].entry);
    return BERTC_STATUS_OK;
}

static bertc_status rt_capture(bertc_context *c, int b) {
    const device_table *t = c->t;
    const sched_bucket *bk = &c->plan->p.buckets[b];
    CUresult r = t->cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuStreamBeginCapture", bk->seq_len);
    bertc_status st = BERTC_STATUS_OK;
    r = t->cuMemcpyHtoDAsync(c->request, c->staging, (size_t)kernel_request_bytes(bk->seq_len), c->stream);
    if (r != CUDA_SUCCESS) st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuMemcpyHtoDAsync(request block)", bk->seq_len);
    for (int s = 0; s < bk->nsteps && st == BERTC_STATUS_OK; s++)
        st = rt_enqueue_step(c, &bk->steps[s], &c->gemms[b][s]);
    for (int o = 0; o < bk->noutputs && st == BERTC_STATUS_OK; o++) {
        const sched_output *out = &bk->outputs[o];
        r = t->cuMemcpyDtoHAsync(c->outputs + c->output_offset[o], rt_resolve(c, out->ref),
                                 rt_output_bytes(out, bk->seq_len), c->stream);
        if (r != CUDA_SUCCESS)
            st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuMemcpyDtoHAsync(output %s)", bk->seq_len, out->name);
    }
    /* End the capture whatever happened, so the stream is usable again. */
    CUgraph graph = NULL;
    r = t->cuStreamEndCapture(c->stream, &graph);
    if (st == BERTC_STATUS_OK && r != CUDA_SUCCESS)
        st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuStreamEndCapture", bk->seq_len);
    if (st == BERTC_STATUS_OK) {
        r = t->cuGraphInstantiate(&c->exec[b], graph, 0);
        if (r != CUDA_SUCCESS) {
            c->exec[b] = NULL;
            st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuGraphInstantiate", bk->seq_len);
        }
    }
    if (graph) t->cuGraphDestroy(graph);
    return st;
}

/* ------------------------------------------------------------ create / destroy */

void bertc_context_options_init(bertc_context_options *o) {
    memset(o, 0, sizeof *o);
    o->device = BERTC_DEVICE_CUDA;
    o->workspace_bytes = RT_DEFAULT_WORKSPACE;
}

void bertc_context_destroy(bertc_context *c) {
    if (!c) return;
    const plan *p = &c->plan->p;
    if (c->dev) {
        const device_table *t = c->t;
        CUcontext prev;
        rt_ctx_enter(t, c->dev->ctx, &prev);
        if (c->stream) t->cuStreamSynchronize(c->stream);
        for (int b = 0; c->exec && b < p->nbuckets; b++)
            if (c->exec[b]) t->cuGraphExecDestroy(c->exec[b]);
        for (int b = 0; c->gemms && b < p->nbuckets; b++) {
            for (int s = 0; c->gemms[b] && s < p->buckets[b].nsteps; s++) rt_gemm_free(t, &c->gemms[b][s]);
            free(c->gemms[b]);
        }
        if (c->lt) t->cublasLtDestroy(c->lt);
        if (c->ev_start) t->cuEventDestroy(c->ev_start);
        if (c->ev_stop) t->cuEventDestroy(c->ev_stop);
        if (c->workspace) t->cuMemFree(c->workspace);
        if (c->request) t->cuMemFree(c->request);
        if (c->counters) t->cuMemFree(c->counters);
        if (c->arena) t->cuMemFree(c->arena);
        if (c->staging) t->cuMemFreeHost(c->staging);
        if (c->outputs) t->cuMemFreeHost(c->outputs);
        if (c->stream) t->cuStreamDestroy(c->stream);
        rt_ctx_leave(t, c->dev->ctx, prev);
        rt_device_release(c->plan, c->dev);
    }
    free(c->gemms);
    free(c->exec);
    free(c->output_offset);
    bertc_plan_close(c->plan);
    free(c);
}

/* The COUNTERS buffer, zeroed once (a synchronous copy of zeros: before
 * any capture, so it is no graph node). */
static bertc_status rt_counters_create(bertc_context *c) {
    const device_table *t = c->t;
    size_t n = (size_t)c->plan->p.counter_bytes;
    if (!n) return BERTC_STATUS_OK;
    CUresult r = t->cuMemAlloc(&c->counters, n);
    if (r != CUDA_SUCCESS) {
        c->counters = 0;
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuMemAlloc(arrival counters, %zu bytes)", n);
    }
    void *zeros = rt_calloc(n, 1);
    if (!zeros) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    r = t->cuMemcpyHtoD(c->counters, zeros, n);
    free(zeros);
    if (r != CUDA_SUCCESS) return rt_cu_error(t, r, c->err, sizeof c->err, "cuMemcpyHtoD(zero the arrival counters)");
    return BERTC_STATUS_OK;
}

static bertc_status rt_context_build(bertc_context *c) {
    const plan *p = &c->plan->p;
    const device_table *t = c->t;
    char *err = c->err;
    size_t cap = sizeof c->err;
    CUresult r;
    int maxb = p->buckets[p->nbuckets - 1].seq_len;
    if ((r = t->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        c->stream = NULL;
        return rt_cu_error(t, r, err, cap, "cuStreamCreate");
    }
    if (p->arena_bytes && (r = t->cuMemAlloc(&c->arena, p->arena_bytes)) != CUDA_SUCCESS) {
        c->arena = 0;
        return rt_cu_error(t, r, err, cap, "cuMemAlloc(arena, %llu bytes)", (unsigned long long)p->arena_bytes);
    }
    bertc_status cs = rt_counters_create(c);
    if (cs != BERTC_STATUS_OK) return cs;
    if ((r = t->cuMemAlloc(&c->request, (size_t)kernel_request_bytes(maxb))) != CUDA_SUCCESS) {
        c->request = 0;
        return rt_cu_error(t, r, err, cap, "cuMemAlloc(request block, %zu bytes)", (size_t)kernel_request_bytes(maxb));
    }
    void *host = NULL;
    if ((r = t->cuMemHostAlloc(&host, (size_t)kernel_request_bytes(maxb), 0)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, err, cap, "cuMemHostAlloc(request staging, %zu bytes)", (size_t)kernel_request_bytes(maxb));
    c->staging = host;
    int nout = p->buckets[0].noutputs;
    c->output_offset = rt_calloc((size_t)nout, sizeof *c->output_offset);
    if (!c->output_offset) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
    size_t total = 0;
    for (int o = 0; o < nout; o++) {
        size_t most = 0;
        for (int b = 0; b < p->nbuckets; b++) {
            size_t n = rt_output_bytes(&p->buckets[b].outputs[o], p->buckets[b].seq_len);
            if (n > most) most = n;
        }
        c->output_offset[o] = total;
        total += (most + 255) & ~(size_t)255;
    }
    host = NULL;
    if ((r = t->cuMemHostAlloc(&host, total, 0)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, err, cap, "cuMemHostAlloc(outputs, %zu bytes)", total);
    c->outputs = host;
    if (c->opt.timing) {
        if ((r = t->cuEventCreate(&c->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            c->ev_start = NULL;
            return rt_cu_error(t, r, err, cap, "cuEventCreate");
        }
        if ((r = t->cuEventCreate(&c->ev_stop, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            c->ev_stop = NULL;
            return rt_cu_error(t, r, err, cap, "cuEventCreate");
        }
    }
    cublasStatus_t s = t->cublasLtCreate(&c->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
        c->lt = NULL;
        return rt_blaslt_error(t, s, err, cap, "cublasLtCreate");
    }
    if (c->opt.workspace_bytes && (r = t->cuMemAlloc(&c->workspace, c->opt.workspace_bytes)) != CUDA_SUCCESS) {
        c->workspace = 0;
        return rt_cu_error(t, r, err, cap, "cuMemAlloc(cuBLASLt workspace, %zu bytes)", c->opt.workspace_bytes);
    }
    c->gemms = rt_calloc((size_t)p->nbuckets, sizeof *c->gemms);
    c->exec = rt_calloc((size_t)p->nbuckets, sizeof *c->exec);
    if (!c->gemms || !c->exec) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
    for (int b = 0; b < p->nbuckets; b++) {
        const sched_bucket *bk = &p->buckets[b];
        if (!(c->gemms[b] = rt_calloc((size_t)bk->nsteps, sizeof **c->gemms)))
            return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
        for (int st = 0; st < bk->nsteps; st++) {
            if (bk->steps[st].kind != SCHED_STEP_GEMM) continue;
            bertc_status bs = rt_gemm_make(c, &bk->steps[st], &c->gemms[b][st]);
            if (bs != BERTC_STATUS_OK) return bs;
        }
    }
    if (!c->opt.capture_on_first_use)
        for (int b = 0; b < p->nbuckets; b++) {
            bertc_status bs = rt_capture(c, b);
            if (bs != BERTC_STATUS_OK) return bs;
        }
    return BERTC_STATUS_OK;
}

bertc_status bertc_context_create(bertc_plan *pl, const bertc_context_options *opt, bertc_context **out, char *err,
                                  size_t err_cap) {
    if (out) *out = NULL;
    if (err && err_cap) err[0] = '\0';
    if (!pl || !out) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, err_cap, "bertc_context_create: NULL argument");
    bertc_context_options o;
    if (opt) o = *opt;
    else bertc_context_options_init(&o);
    if (o.device != BERTC_DEVICE_CUDA && o.device != BERTC_DEVICE_EMULATED)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, err_cap, "unknown device kind %d", (int)o.device);
    bertc_context *c = rt_calloc(1, sizeof *c);
    if (!c) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, err_cap, "out of memory");
    rt_plan_retain(pl);
    c->plan = pl;
    c->opt = o;
    c->last_bucket = -1;
    bertc_status st = rt_device_acquire(pl, &o, &c->dev, c->err, sizeof c->err);
    if (st == BERTC_STATUS_OK) {
        c->t = &c->dev->t;
        CUcontext prev;
        CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
        st = r == CUDA_SUCCESS ? rt_context_build(c) : rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
        rt_ctx_leave(c->t, c->dev->ctx, prev);
    }
    if (st != BERTC_STATUS_OK) {
        rt_error(st, err, err_cap, "%s", c->err);
        bertc_context_destroy(c);
        return st;
    }
    *out = c;
    return BERTC_STATUS_OK;
}

const char *bertc_context_error(const bertc_context *c) { return c ? c->err : "no context"; }

const char *bertc_context_image_arch(const bertc_context *c) {
    return c && c->dev ? c->plan->p.images[c->dev->image].arch : "";
}

const char *bertc_context_image_kind(const bertc_context *c) {
    if (!c || !c->dev) return "";
    plan_image_kind k = c->plan->p.images[c->dev->image].kind;
    return k == PLAN_IMAGE_CUBIN ? "cubin" : k == PLAN_IMAGE_PTX ? "ptx" : "emu";
}

/* ------------------------------------------------------------ requests */

static bertc_status rt_check_request(bertc_context *c, const bertc_request *q, int *bucket) {
    const plan *p = &c->plan->p;
    int maxb = p->buckets[p->nbuckets - 1].seq_len;
    if (!q->input_ids) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "input_ids is NULL");
    if (q->len < 1 || q->len > maxb)
        return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                        "request length %lld is outside 1..%d (the plan's longest bucket)", (long long)q->len, maxb);
    for (int64_t i = 0; i < q->len; i++)
        if (q->input_ids[i] < 0 || q->input_ids[i] >= p->vocab_size)
            return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                            "input_ids[%lld] = %d is outside the vocabulary 0..%lld", (long long)i, q->input_ids[i],
                            (long long)p->vocab_size - 1);
    if (q->token_type_ids)
        for (int64_t i = 0; i < q->len; i++) {
            int32_t v = q->token_type_ids[i];
            int ok = p->type_vocab_size > 0 ? v >= 0 && v < p->type_vocab_size : v == p->token_type_default;
            if (!ok)
                return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                                "token_type_ids[%lld] = %d is outside 0..%lld", (long long)i, v,
                                (long long)(p->type_vocab_size > 0 ? p->type_vocab_size - 1 : p->token_type_default));
        }
    if (q->attention_mask)
        for (int64_t i = 0; i < q->len; i++) {
            int32_t v = q->attention_mask[i];
            if (v != 0 && v != 1)
                return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                                "attention_mask[%lld] = %d (expected 0 or 1)", (long long)i, v);
            if (v == 0 && !p->has_attention_mask)
                return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                                "attention_mask[%lld] = 0, but the model reads no attention mask", (long long)i);
        }
    int b = 0;
    while (p->buckets[b].seq_len < q->len) b++;
    *bucket = b;
    return BERTC_STATUS_OK;
}

/* The request on the device; the caller has made our context current. */
static bertc_status rt_infer(bertc_context *c, const bertc_request *q, int b) {
    const plan *p = &c->plan->p;
    const device_table *t = c->t;
    bertc_status st;
    CUresult r;
    if (!c->exec[b] && (st = rt_capture(c, b)) != BERTC_STATUS_OK) return st;

    /* The bucket's request block layout: header, then three arrays of B. */
    int B = p->buckets[b].seq_len;
    int32_t *hdr = c->staging, *ids = hdr + KERNEL_REQ_HEADER_WORDS, *types = ids + B, *mask = types + B;
    hdr[0] = (int32_t)q->len;
    hdr[1] = hdr[2] = hdr[3] = 0;
    memcpy(ids, q->input_ids, (size_t)q->len * sizeof *ids);
    if (q->token_type_ids) memcpy(types, q->token_type_ids, (size_t)q->len * sizeof *types);
    else for (int64_t i = 0; i < q->len; i++) types[i] = p->token_type_default;
    if (q->attention_mask) memcpy(mask, q->attention_mask, (size_t)q->len * sizeof *mask);
    else for (int64_t i = 0; i < q->len; i++) mask[i] = 1;

    if (c->opt.timing && (r = t->cuEventRecord(c->ev_start, c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventRecord");
    if ((r = t->cuGraphLaunch(c->exec[b], c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuGraphLaunch", B);
    if (c->opt.timing && (r = t->cuEventRecord(c->ev_stop, c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventRecord");
    if ((r = t->cuStreamSynchronize(c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: running the graph (cuStreamSynchronize)", B);
    c->last_bucket = b;
    c->last_len = q->len;
    c->timed = c->opt.timing;
    return BERTC_STATUS_OK;
}

bertc_status bertc_infer(bertc_context *c, const bertc_request *q) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    if (!q) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "bertc_infer: request is NULL");
    c->last_bucket = -1;
    c->timed = 0;
    int b = 0;
    bertc_status st = rt_check_request(c, q, &b);
    if (st != BERTC_STATUS_OK) return st;
    CUcontext prev;
    CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
    if (r != CUDA_SUCCESS) return rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
    st = rt_infer(c, q, b);
    rt_ctx_leave(c->t, c->dev->ctx, prev);
    return st;
}

static float rt_load(plan_dtype t, const uint8_t *p) {
    if (t == PLAN_DTYPE_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return t == PLAN_DTYPE_F16 ? half_f16_to_f32(h) : half_bf16_to_f32(h);
}

bertc_status bertc_output_read(bertc_context *c, int i, float *dst, size_t count) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    if (c->last_bucket < 0)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_output_read: no successful request to read from");
    const sched_bucket *bk = &c->plan->p.buckets[c->last_bucket];
    if (i < 0 || i >= bk->noutputs)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "output %d does not exist (the plan has %d)",
                        i, bk->noutputs);
    const sched_output *o = &bk->outputs[i];
    int64_t rows = o->rows_are_seq ? c->last_len : 1;
    if (!dst || count != (size_t)(rows * o->cols))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "output %s holds %lld values for this request, the buffer %zu", o->name,
                        (long long)(rows * o->cols), dst ? count : 0);
    const uint8_t *src = c->outputs + c->output_offset[i];
    size_t es = (size_t)plan_dtype_size(o->dtype);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < o->cols; k++)
            dst[r * o->cols + k] = rt_load(o->dtype, src + (size_t)(r * o->row_stride + k) * es);
    return BERTC_STATUS_OK;
}

bertc_status bertc_context_last_device_ms(bertc_context *c, float *ms) {
    if (!c || !ms) return BERTC_STATUS_INVALID_ARGUMENT;
    if (!c->timed)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "no timed request (create the context with options.timing = 1)");
    CUcontext prev;
    CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
    if (r == CUDA_SUCCESS) r = c->t->cuEventElapsedTime(ms, c->ev_start, c->ev_stop);
    rt_ctx_leave(c->t, c->dev->ctx, prev);
    if (r != CUDA_SUCCESS) return rt_cu_error(c->t, r, c->err, sizeof c->err, "cuEventElapsedTime");
    return BERTC_STATUS_OK;
}
