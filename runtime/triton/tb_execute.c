/*
 * tb_execute — TRITONBACKEND_ModelInstanceExecute: the requests Triton's
 * dynamic batcher gathered for one instance, answered in three steps.
 *
 *   1. prepare  each request becomes a tb_job: its inputs read into rows
 *               (tb_request.c), the outputs it asked for, its response
 *               and the output buffers Triton gives for them.  A request
 *               that fails here is out of the batch with its error.
 *   2. run      tb_batch_run: every row of every remaining job on the
 *               device, outputs written straight into the buffers.
 *   3. finish   each response is sent (with its error, if any), the
 *               request's statistics reported, the request released; then
 *               the batch's statistics.
 *
 * Execute itself always succeeds: every request is answered on its own,
 * so one bad request costs only its own error response and the instance
 * keeps serving the others of the batch and the batches after.  (A
 * failing Execute would hand all of its requests back to Triton to fail
 * together.)  The only exception is the instance being unable to even
 * hold the batch's bookkeeping, where failing all of them is the honest
 * answer.
 *
 * Packed batches.  When the plan has token buckets (bertc compile
 * --batch-tokens), tb_batch_run gathers the rows of every good job, in
 * order, into packed batches — as many rows as the largest token bucket
 * and bertc_plan_max_batch allow — and runs each with one
 * bertc_infer_batch: one graph launch for rows of many requests, no
 * padding between them.  The outputs are scattered with tb_row_outputs'
 * row -> buffer arithmetic (bertc_batch_output_read per row).  A packed
 * batch the runtime refuses (a bad id in one request's row refuses the
 * whole batch) is run again row by row, so the error reaches only the
 * request it belongs to, as before.  Without token buckets each row is its
 * own bertc_infer: dynamic batching still saves Triton's per-call
 * overhead and keeps the instance busy.  bertc export-triton writes the
 * token buckets' request counts as dynamic batching's preferred sizes
 * (docs/serving.md).
 */
#include <string.h>

#include "tb.h"

static TRITONSERVER_Error_Code tb_status_code(bertc_status st) {
    switch (st) {
    case BERTC_STATUS_BAD_REQUEST: return TRITONSERVER_ERROR_INVALID_ARG;
    case BERTC_STATUS_NO_DEVICE:
    case BERTC_STATUS_OUT_OF_MEMORY: return TRITONSERVER_ERROR_UNAVAILABLE;
    default: return TRITONSERVER_ERROR_INTERNAL;
    }
}

/* The response's output tensors and their buffers (host memory). */
static TRITONSERVER_Error *tb_job_buffers(tb_instance *in, tb_job *job) {
    int batched = in->model->cfg.max_batch > 0;
    for (size_t i = 0; i < job->noutputs; i++) {
        tb_output *o = &TB_AT(&in->outputs, tb_output, job->first_output + i);
        int64_t shape[3];
        uint32_t dims = 0;
        if (batched) shape[dims++] = (int64_t)job->nrows;
        if (o->per_token) shape[dims++] = job->width;
        shape[dims++] = o->cols;
        uint64_t bytes = sizeof(float) * (uint64_t)o->cols * job->nrows * (o->per_token ? (uint64_t)job->width : 1);
        TRITONBACKEND_Output *out;
        void *buf = NULL;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        TRITONSERVER_Error *e = TRITONBACKEND_ResponseOutput(job->response, &out, o->name, TRITONSERVER_TYPE_FP32,
                                                             shape, dims);
        if (!e) e = TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mid);
        if (e) return e;
        if (mt == TRITONSERVER_MEMORY_GPU)
            return tb_error(TRITONSERVER_ERROR_UNSUPPORTED, "output %s: the server offered GPU memory; bertc writes "
                            "outputs to host memory", o->name);
        o->dst = buf;
    }
    return NULL;
}

static void tb_job_prepare(tb_instance *in, tb_job *job) {
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&job->response, job->request);
    if (e) job->response = NULL;
    if (!e) e = tb_request_read(in, job);
    if (!e) e = tb_request_outputs(in, job);
    if (!e) e = tb_job_buffers(in, job);
    job->error = e;
}

/* Row r of the job's outputs, from the context's last request (k < 0) or
 * request k of its last packed batch; per-token outputs are padded with
 * zeros to the job's width. */
static TRITONSERVER_Error *tb_row_outputs(tb_instance *in, const tb_job *job, size_t r, int64_t len, long k) {
    for (size_t i = 0; i < job->noutputs; i++) {
        const tb_output *o = &TB_AT(&in->outputs, tb_output, job->first_output + i);
        size_t stride = (size_t)o->cols * (o->per_token ? (size_t)job->width : 1);
        size_t count = (size_t)o->cols * (o->per_token ? (size_t)len : 1);
        float *dst = o->dst + r * stride;
        bertc_status st = k < 0 ? bertc_output_read(in->ctx, o->index, dst, count)
                                : bertc_batch_output_read(in->ctx, o->index, (size_t)k, dst, count);
        if (st != BERTC_STATUS_OK)
            return tb_error(tb_status_code(st), "output %s: %s", o->name, bertc_context_error(in->ctx));
        if (count < stride) memset(dst + count, 0, (stride - count) * sizeof *dst);
    }
    return NULL;
}

static bertc_request tb_row_request(const tb_instance *in, const tb_job *job, size_t r) {
    const int32_t *tok = in->tokens.data;
    const tb_row *row = &TB_AT(&in->rows, tb_row, job->first_row + r);
    return (bertc_request){tok + row->ids, row->types == TB_NONE ? NULL : tok + row->types,
                           row->mask == TB_NONE ? NULL : tok + row->mask, row->len};
}

/* Row r of a job alone (bertc_infer). */
static void tb_row_run(tb_instance *in, tb_job *job, size_t r) {
    bertc_request rq = tb_row_request(in, job, r);
    bertc_status st = bertc_infer(in->ctx, &rq);
    if (st != BERTC_STATUS_OK)
        job->error = tb_error(tb_status_code(st), "%s%zu: %s", job->text ? "TEXT row " : "row ", r,
                              bertc_context_error(in->ctx));
    else job->error = tb_row_outputs(in, job, r, rq.len, -1);
}

/* The n gathered rows as one packed batch; if the runtime refuses it, row
 * by row, so a bad row fails only its own request. */
static void tb_packed_run(tb_instance *in, tb_job *jobs, size_t n) {
    const bertc_request *rq = in->packed.data;
    const tb_packed_row *at = in->packed_at.data;
    int ok = bertc_infer_batch(in->ctx, rq, n) == BERTC_STATUS_OK;
    for (size_t k = 0; k < n; k++) {
        tb_job *job = &jobs[at[k].job];
        if (job->error) continue;
        if (ok) job->error = tb_row_outputs(in, job, at[k].row, rq[k].len, (long)k);
        else tb_row_run(in, job, at[k].row);
    }
}

/* Every good row in order, cut into packed batches that fit. */
static void tb_batch_run_packed(tb_instance *in, tb_job *jobs, size_t n) {
    size_t max_n = (size_t)bertc_plan_max_batch(in->model->plan), k = 0;
    int64_t max_tokens = bertc_plan_max_batch_tokens(in->model->plan), tokens = 0;
    bertc_request *rq = tb_vec_reserve(&in->packed, max_n);
    tb_packed_row *at = tb_vec_reserve(&in->packed_at, max_n);
    for (size_t j = 0; j < n; j++)
        for (size_t r = 0; !jobs[j].error && r < jobs[j].nrows; r++) {
            if (!rq || !at) {
                jobs[j].error = tb_error(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory for a packed batch");
                break;
            }
            bertc_request one = tb_row_request(in, &jobs[j], r);
            if (k && (k == max_n || tokens + one.len > max_tokens)) {
                tb_packed_run(in, jobs, k);
                k = 0, tokens = 0;
            }
            if (jobs[j].error) break;
            if (one.len > max_tokens) { /* longer than any token bucket: alone */
                tb_row_run(in, &jobs[j], r);
                continue;
            }
            rq[k] = one;
            at[k++] = (tb_packed_row){j, r};
            tokens += one.len;
        }
    if (k) tb_packed_run(in, jobs, k);
}

/* Every row of every job that is still good, on the device: packed
 * batches when the plan has token buckets, else one request per row. */
static void tb_batch_run(tb_instance *in, tb_job *jobs, size_t n) {
    if (bertc_plan_max_batch(in->model->plan) > 0) {
        tb_batch_run_packed(in, jobs, n);
        return;
    }
    for (size_t j = 0; j < n; j++)
        for (size_t r = 0; !jobs[j].error && r < jobs[j].nrows; r++) tb_row_run(in, &jobs[j], r);
}

static void tb_job_finish(TRITONBACKEND_ModelInstance *instance, tb_instance *in, tb_job *job,
                          const uint64_t t[4]) {
    if (job->error)
        tb_log(TRITONSERVER_LOG_VERBOSE, "bertc model %s instance %s: request refused: %s", in->model->name, in->name,
               TRITONSERVER_ErrorMessage(job->error));
    if (job->response) {
        if (!job->error && job->text)
            tb_log_error(TRITONBACKEND_ResponseSetBoolParameter(job->response, "truncated", job->truncated != 0),
                         "setting the response parameter 'truncated'");
        tb_log_error(TRITONBACKEND_ResponseSend(job->response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, job->error),
                     "sending a response");
    } else {
        tb_log(TRITONSERVER_LOG_ERROR, "bertc model %s: a request got no response: %s", in->model->name,
               job->error ? TRITONSERVER_ErrorMessage(job->error) : "?");
    }
    tb_log_error(TRITONBACKEND_ModelInstanceReportStatistics(instance, job->request, job->error == NULL, t[0], t[1],
                                                             t[2], t[3]),
                 "reporting a request's statistics");
    if (job->error) TRITONSERVER_ErrorDelete(job->error);
    job->error = NULL;
    tb_log_error(TRITONBACKEND_RequestRelease(job->request, TRITONSERVER_REQUEST_RELEASE_ALL), "releasing a request");
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests, const uint32_t count) {
    uint64_t t[4];
    t[0] = tb_now_ns();
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) return e;
    tb_instance *in = state;
    in->tokens.len = in->rows.len = in->outputs.len = in->jobs.len = 0;
    tb_job *jobs = tb_vec_reserve(&in->jobs, count ? count : 1);
    if (!jobs)
        return tb_error(TRITONSERVER_ERROR_UNAVAILABLE, "bertc model %s instance %s: out of memory for %u requests",
                        in->model->name, in->name, count);
    uint64_t rows = 0;
    for (uint32_t i = 0; i < count; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].request = requests[i];
        tb_job_prepare(in, &jobs[i]);
    }
    t[1] = tb_now_ns();
    tb_batch_run(in, jobs, count);
    t[2] = tb_now_ns();
    for (uint32_t i = 0; i < count; i++) rows += jobs[i].error ? 0 : jobs[i].nrows;
    t[3] = tb_now_ns();
    for (uint32_t i = 0; i < count; i++) tb_job_finish(instance, in, &jobs[i], t);
    if (rows)
        tb_log_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, rows, t[0], t[1], t[2], t[3]),
                     "reporting the batch's statistics");
    return NULL;
}
