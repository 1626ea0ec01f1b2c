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
 * What changes with packed batches.  Today a plan has sequence-length
 * buckets only, and the runtime answers one request at a time
 * (bertc_infer), so tb_batch_run runs the batch's rows one after another:
 * dynamic batching already saves Triton's per-call overhead and keeps the
 * instance busy, but each row is its own graph launch.  When plans carry
 * token buckets and the runtime has the packed-batch API (issue 14,
 * bertc_infer_batch), tb_batch_run is the one function to change: gather
 * the rows of every good job (they are already in one table, with their
 * lengths), run them as packed batches, and scatter the outputs with the
 * same row -> buffer arithmetic as tb_row_outputs.  Nothing before or after
 * it needs to know.  bertc export-triton then writes the token buckets as
 * dynamic batching's preferred sizes (docs/serving.md).
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

/* Row r of the job's outputs, from the context's last request; per-token
 * outputs are padded with zeros to the job's width. */
static TRITONSERVER_Error *tb_row_outputs(tb_instance *in, const tb_job *job, size_t r, int64_t len) {
    for (size_t i = 0; i < job->noutputs; i++) {
        const tb_output *o = &TB_AT(&in->outputs, tb_output, job->first_output + i);
        size_t stride = (size_t)o->cols * (o->per_token ? (size_t)job->width : 1);
        size_t count = (size_t)o->cols * (o->per_token ? (size_t)len : 1);
        float *dst = o->dst + r * stride;
        bertc_status st = bertc_output_read(in->ctx, o->index, dst, count);
        if (st != BERTC_STATUS_OK)
            return tb_error(tb_status_code(st), "output %s: %s", o->name, bertc_context_error(in->ctx));
        if (count < stride) memset(dst + count, 0, (stride - count) * sizeof *dst);
    }
    return NULL;
}

/* Every row of every job that is still good, on the device.  The one place
 * that knows how rows reach the runtime: see the top of this file for what
 * packed batches change here. */
static void tb_batch_run(tb_instance *in, tb_job *jobs, size_t n) {
    const int32_t *tok = in->tokens.data;
    for (size_t j = 0; j < n; j++) {
        tb_job *job = &jobs[j];
        for (size_t r = 0; !job->error && r < job->nrows; r++) {
            const tb_row *row = &TB_AT(&in->rows, tb_row, job->first_row + r);
            bertc_request rq = {tok + row->ids, row->types == TB_NONE ? NULL : tok + row->types,
                                row->mask == TB_NONE ? NULL : tok + row->mask, row->len};
            bertc_status st = bertc_infer(in->ctx, &rq);
            if (st != BERTC_STATUS_OK)
                job->error = tb_error(tb_status_code(st), "%s%zu: %s", job->text ? "TEXT row " : "row ", r,
                                      bertc_context_error(in->ctx));
            else job->error = tb_row_outputs(in, job, r, row->len);
        }
    }
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
