/*
 * rt_graph — a context's CUDA Graph per bucket: what is captured, and what
 * a request may change in it.
 *
 * A bucket's graph is, in stream order: copy the staging block to the
 * device request block (len, ids, types, mask), every step of the bucket's
 * schedule (kernel launches and cublasLtMatmul calls, whose arguments are
 * all device addresses fixed at capture), and a copy of each output the
 * context copies back (options.outputs) into the page-locked output area.
 * The real length travels inside the copied block, so the graph is never
 * captured again and one graph serves every length of its bucket.
 *
 * Programmatic dependent launch.  When the context runs an image built for
 * sm_90 or newer on a GPU of compute capability 9.0 or newer
 * (bertc_context.pdl, decided at create from the image's architecture,
 * never from which device this is), a kernel step that follows another
 * kernel step is launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
 * SERIALIZATION.  Stream capture turns that into a programmatic edge
 * between the two kernel nodes: the second kernel may start while the
 * first finishes, runs its prologue (request and weights only) and waits
 * in griddepcontrol.wait for the first to complete (kernels_templates/
 * bertc_device.cuh states the rule every kernel follows).  A kernel after a
 * cuBLASLt step or after the request copy is launched plainly: cuBLASLt's
 * kernels are not ours and do not signal, and programmatic edges join
 * kernel nodes only.  Images below sm_90 (a compute_80 PTX JIT-compiled on
 * an H100, say) contain no griddepcontrol.wait at all, so for them the
 * attribute would be a race, which is why the image decides.
 *
 * Copying back only what the caller needs.  Outputs the caller did not
 * select are not copied at all (a pooled-only service copies one row).
 * A per-token output's copy is captured at the bucket's full length, and
 * its node is remembered (cuStreamGetCaptureInfo right after capturing
 * it); before a launch, if the request's length differs from the rows the
 * node copies now, cuGraphExecMemcpyNodeSetParams shrinks or grows it to
 * the request's rows (padding rows never cross the bus).  The new
 * parameters are the node's own, read back from the graph after the
 * capture (cuGraphMemcpyNodeGetParams), with only the width changed: an
 * update may not change a copy's memory types, and which types the driver
 * records for a captured copy is its business (a captured cuMemcpyAsync
 * is recorded as CU_MEMORYTYPE_UNIFIED on both sides, not as the DEVICE
 * and HOST a hand-made descriptor would say, and the update then fails;
 * the emulated device records UNIFIED too).  A request of the
 * same length as the previous one in its bucket changes nothing, and the
 * graph is never re-instantiated.  A token bucket's graph is the same
 * thing for a packed batch: the request block carries the batch's total
 * tokens, sequences and offsets, its per-token copies are set to the
 * total tokens and its per-sequence copies (a pooled row per request) to
 * the batch's requests.  The graph object is kept with its exec,
 * because the copy nodes are the graph's nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* A kernel step; programmatically after the previous kernel when asked. */
static bertc_status rt_launch(bertc_context *c, const sched_step *st, int programmatic) {
    const device_table *t = c->t;
    const sched_launch *l = &st->launch;
    CUdeviceptr vals[KERNEL_MAX_ARGS];
    void *params[KERNEL_MAX_ARGS];
    for (int i = 0; i < l->nargs; i++) {
        vals[i] = rt_resolve(c, l->args[i]);
        params[i] = &vals[i];
    }
    /* The next step's weights are prefetched only if they take at most a
     * quarter of this GPU's L2: more would evict this step's own lines (an
     * A10's 6 MiB against 4.7 MiB of BERT-base FC weights) and cost a second
     * fetch instead of saving one. */
    CUdeviceptr *pf = &vals[l->nargs - KERNEL_PREFETCH_ARGS];
    if (pf[0] && pf[1] - pf[0] + 1 > (CUdeviceptr)c->dev->l2_bytes / 4) pf[0] = pf[1] = 0;
    CUfunction f = c->dev->functions[l->kernel];
    const kernel_launch_dims *d = &l->dims;
    CUresult r;
    if (!programmatic) {
        r = t->cuLaunchKernel(f, d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                              d->shared_bytes, c->stream, params, NULL);
    } else {
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2],
                              d->shared_bytes, c->stream, &at, 1};
        r = t->cuLaunchKernelEx(&cfg, f, params, NULL);
    }
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "step %s: %s(%s)", st->name,
                           programmatic ? "cuLaunchKernelEx" : "cuLaunchKernel", c->plan->p.kernels[l->kernel].entry);
    return BERTC_STATUS_OK;
}

bertc_status rt_step_enqueue(bertc_context *c, int b, int s) {
    const sched_step *st = &c->dev->buckets[b].steps[s];
    if (st->kind == SCHED_STEP_GEMM) return rt_gemm_enqueue(c, st, &c->gemms[b][s]);
    return rt_launch(c, st, 0);
}

/* The copy of output o, at the bucket's length (or sequences); the node of
 * one of several rows remembered for rt_graph_set_rows. */
static bertc_status rt_capture_output(bertc_context *c, int b, int o) {
    const device_table *t = c->t;
    const sched_bucket *bk = &c->dev->buckets[b];
    const sched_output *out = &bk->outputs[o];
    rt_graph *g = &c->graphs[b];
    int64_t rows = rt_output_rows(bk, out);
    CUresult r = t->cuMemcpyDtoHAsync(c->outputs + c->output_offset[o], rt_resolve(c, out->ref),
                                      rt_output_bytes(out, rows), c->stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuMemcpyDtoHAsync(output %s)", bk->seq_len,
                           out->name);
    if (rows == 1) return BERTC_STATUS_OK;
    CUstreamCaptureStatus status;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    r = t->cuStreamGetCaptureInfo(c->stream, &status, NULL, NULL, &deps, NULL, &ndeps);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuStreamGetCaptureInfo(output %s)", bk->seq_len,
                           out->name);
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || ndeps != 1 || !deps)
        return rt_error(BERTC_STATUS_DEVICE, c->err, sizeof c->err,
                        "bucket %d: the capture does not end in the copy of output %s", bk->seq_len, out->name);
    g->copy[o] = deps[0];
    g->rows[o] = rows;
    return BERTC_STATUS_OK;
}

/* The request copy and the steps, into a capturing stream. */
static bertc_status rt_capture_steps(bertc_context *c, int b) {
    const sched_bucket *bk = &c->dev->buckets[b];
    CUresult r = c->t->cuMemcpyHtoDAsync(c->request, c->staging, rt_request_bytes(bk), c->stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(c->t, r, c->err, sizeof c->err, "bucket %d: cuMemcpyHtoDAsync(request block)", bk->seq_len);
    bertc_status st = BERTC_STATUS_OK;
    for (int s = 0; s < bk->nsteps && st == BERTC_STATUS_OK; s++) {
        const sched_step *step = &bk->steps[s];
        if (step->kind == SCHED_STEP_GEMM) {
            st = rt_gemm_enqueue(c, step, &c->gemms[b][s]);
        } else {
            int programmatic = c->pdl && s > 0 && bk->steps[s - 1].kind == SCHED_STEP_KERNEL;
            st = rt_launch(c, step, programmatic);
        }
    }
    return st;
}

bertc_status rt_graph_capture(bertc_context *c, int b) {
    const device_table *t = c->t;
    const sched_bucket *bk = &c->dev->buckets[b];
    rt_graph *g = &c->graphs[b];
    if (!(g->copy = rt_calloc((size_t)bk->noutputs, sizeof *g->copy)) ||
        !(g->rows = rt_calloc((size_t)bk->noutputs, sizeof *g->rows)) ||
        !(g->params = rt_calloc((size_t)bk->noutputs, sizeof *g->params))) {
        rt_graph_free(c, b);
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    }
    CUresult r = t->cuStreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) {
        rt_graph_free(c, b);
        return rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuStreamBeginCapture", bk->seq_len);
    }
    bertc_status st = rt_capture_steps(c, b);
    for (int o = 0; o < bk->noutputs && st == BERTC_STATUS_OK; o++)
        if (c->copied[o]) st = rt_capture_output(c, b, o);
    /* End the capture whatever happened, so the stream is usable again. */
    r = t->cuStreamEndCapture(c->stream, &g->graph);
    if (r != CUDA_SUCCESS) g->graph = NULL;
    if (st == BERTC_STATUS_OK && r != CUDA_SUCCESS)
        st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuStreamEndCapture", bk->seq_len);
    for (int o = 0; o < bk->noutputs && st == BERTC_STATUS_OK; o++)
        if (g->copy[o] && (r = t->cuGraphMemcpyNodeGetParams(g->copy[o], &g->params[o])) != CUDA_SUCCESS)
            st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuGraphMemcpyNodeGetParams(output %s)",
                             bk->seq_len, bk->outputs[o].name);
    if (st == BERTC_STATUS_OK && (r = t->cuGraphInstantiate(&g->exec, g->graph, 0)) != CUDA_SUCCESS) {
        g->exec = NULL;
        st = rt_cu_error(t, r, c->err, sizeof c->err, "bucket %d: cuGraphInstantiate", bk->seq_len);
    }
    if (st != BERTC_STATUS_OK) rt_graph_free(c, b);
    return st;
}

bertc_status rt_graph_set_rows(bertc_context *c, int b, int64_t len, int64_t nseq) {
    const sched_bucket *bk = &c->dev->buckets[b];
    rt_graph *g = &c->graphs[b];
    for (int o = 0; o < bk->noutputs; o++) {
        const sched_output *out = &bk->outputs[o];
        int64_t rows = out->per_seq ? nseq : len;
        if (!g->copy[o] || g->rows[o] == rows) continue;
        CUDA_MEMCPY3D p = g->params[o];   /* the node's own, only its width changed */
        p.WidthInBytes = rt_output_bytes(out, rows);
        CUresult r = c->t->cuGraphExecMemcpyNodeSetParams(g->exec, g->copy[o], &p, c->dev->ctx);
        if (r != CUDA_SUCCESS)
            return rt_cu_error(c->t, r, c->err, sizeof c->err, "bucket %d: cuGraphExecMemcpyNodeSetParams(output %s)",
                               bk->seq_len, out->name);
        g->rows[o] = rows;
    }
    return BERTC_STATUS_OK;
}

void rt_graph_free(bertc_context *c, int b) {
    rt_graph *g = &c->graphs[b];
    if (g->exec) c->t->cuGraphExecDestroy(g->exec);
    if (g->graph) c->t->cuGraphDestroy(g->graph);
    free(g->copy);
    free(g->rows);
    free(g->params);
    memset(g, 0, sizeof *g);
}
