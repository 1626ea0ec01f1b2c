/*
 * rt_debug — bertc_debug.h: a bucket's steps one by one between events.
 *
 * The graph runs a request as one unit, which is what a service wants and
 * what hides where the time goes.  Here the same steps (rt_step_enqueue:
 * the graph's kernels and cublasLtMatmul calls with the graph's arguments)
 * run eagerly on the context's stream, each bracketed by the context's two
 * events and followed by a synchronisation, so each measured time is one
 * step's device time alone.  The request is staged and copied to the
 * device request block as the graph's first node would, so kernels see a
 * real length and real ids.  `bertc bench --per-step` prints these beside
 * the performance model's prediction for the same steps.
 */
#include <stdlib.h>
#include <string.h>

#include "bertc_debug.h"
#include "rt.h"

int bertc_debug_step_count(const bertc_context *c, int64_t len) {
    if (!c || !c->dev) return 0;
    for (int b = 0; b < plan_length_buckets(&c->plan->p); b++)
        if (c->dev->buckets[b].seq_len >= len && len >= 1) return c->dev->buckets[b].nsteps;
    return 0;
}

int bertc_debug_variant(const bertc_context *c) { return c && c->dev ? c->dev->variant : -1; }

static int rt_debug_cmp(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Step s of bucket b between the events: its time in *ms. */
static bertc_status rt_debug_time_step(bertc_context *c, int b, int s, float *ms) {
    const device_table *t = c->t;
    CUresult r = t->cuEventRecord(c->ev_start, c->stream);
    if (r != CUDA_SUCCESS) return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventRecord");
    bertc_status st = rt_step_enqueue(c, b, s);
    if (st) return st;
    if ((r = t->cuEventRecord(c->ev_stop, c->stream)) == CUDA_SUCCESS && (r = t->cuEventSynchronize(c->ev_stop)) == CUDA_SUCCESS)
        r = t->cuEventElapsedTime(ms, c->ev_start, c->ev_stop);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "step %s: timing it", c->dev->buckets[b].steps[s].name);
    return BERTC_STATUS_OK;
}

/* The request on the device, then 1 + reps passes over the steps. */
static bertc_status rt_debug_run(bertc_context *c, const bertc_request *q, int b, int reps, float *ms) {
    const sched_bucket *bk = &c->dev->buckets[b];
    rt_request_stage(c, q, b);
    const char *call;
    CUresult r = rt_upload(c->t, c->request, c->staging, (size_t)kernel_request_bytes(bk->seq_len), c->stream, &call);
    if (r != CUDA_SUCCESS) return rt_cu_error(c->t, r, c->err, sizeof c->err, "%s(request block)", call);
    float scratch;
    for (int rep = -1; rep < reps; rep++)
        for (int s = 0; s < bk->nsteps; s++) {
            bertc_status st = rt_debug_time_step(c, b, s, rep < 0 ? &scratch : &ms[(size_t)s * (size_t)reps + (size_t)rep]);
            if (st) return st;
        }
    return BERTC_STATUS_OK;
}

bertc_status bertc_debug_time_steps(bertc_context *c, const bertc_request *q, int reps, bertc_step_time *out,
                                    int nsteps) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    if (!q || !out || reps < 1)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_debug_time_steps: NULL request or output, or reps < 1");
    rt_results_forget(c); /* its steps overwrite the last request's outputs */
    int b = 0;
    bertc_status st = rt_request_check(c, q, &b);
    if (st) return st;
    const sched_bucket *bk = &c->dev->buckets[b];
    if (nsteps != bk->nsteps)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_debug_time_steps: the bucket of %d has %d steps, the buffer %d", bk->seq_len,
                        bk->nsteps, nsteps);
    float *ms = rt_calloc((size_t)nsteps * (size_t)reps, sizeof *ms);
    if (!ms) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    CUcontext prev;
    CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
    st = r == CUDA_SUCCESS ? rt_debug_run(c, q, b, reps, ms) : rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
    rt_ctx_leave(c->t, c->dev->ctx, prev);
    for (int s = 0; s < nsteps && st == BERTC_STATUS_OK; s++) {
        const sched_step *step = &bk->steps[s];
        float *v = &ms[(size_t)s * (size_t)reps];
        qsort(v, (size_t)reps, sizeof *v, rt_debug_cmp);
        int gemm = step->kind == SCHED_STEP_GEMM;
        out[s] = (bertc_step_time){step->name, gemm ? "gemm" : "kernel",
                                   gemm ? "cublasLt" : c->plan->p.kernels[step->launch.kernel].entry,
                                   (reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2])) * 1e3, v[0] * 1e3,
                                   gemm ? c->gemms[b][s].candidates : 0, gemm ? c->gemms[b][s].chosen : -1};
    }
    free(ms);
    return st;
}
