/*
 * rt_context — bertc_context: everything one request in flight needs, and
 * the request path itself.
 *
 * At create, once: a stream; the activation arena (sized for the largest
 * bucket: buckets run one at a time, so they share it); the arrival
 * counters of the split-K kernels (zeroed here, once: every launch that
 * counts on them leaves them zero, so no graph needs a memset node and
 * the emulated device's poison fill of new memory cannot leak into a
 * count); the device request block and its page-locked staging twin; a
 * page-locked area for the outputs the caller reads (options.outputs: all
 * by default); two events; the cuBLASLt handle, workspace, and for every
 * GEMM step of every bucket its descriptors and algorithm (rt_gemm.c:
 * timed among cuBLASLt's candidates unless options.time_algorithms is 0);
 * whether bertc's kernels follow each other by programmatic dependent
 * launch (the GPU is 9.0 or newer and the image was built for sm_90 or
 * newer, unless options.pdl is 0); and, unless capture is deferred, one
 * CUDA Graph per bucket (rt_graph.c).
 *
 * A request costs the host: check the ids, write them into staging, resize
 * the graph's per-token output copies if the length differs from the
 * bucket's previous request (rt_graph_set_rows), one cuGraphLaunch, one
 * synchronise.  The real length travels inside the copied block, so the
 * graph is never re-captured; kernels read it from device memory, and
 * cuBLASLt computes the bucket's padding rows, which no real row depends
 * on.
 *
 * Capture uses CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: contexts on different
 * threads may capture at the same time, and an unrelated thread's
 * allocation must not invalidate our capture.  The other way round needs
 * the calling thread's own interaction mode: create and destroy run in
 * thread-local mode (rt_capture_mode_push), so that their allocations and
 * frees are neither refused nor invalidate another thread's capture when
 * that capture is in global mode, the default of other CUDA users.
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

/* ------------------------------------------------------------ create / destroy */

void bertc_context_options_init(bertc_context_options *o) {
    memset(o, 0, sizeof *o);
    o->device = BERTC_DEVICE_CUDA;
    o->workspace_bytes = RT_DEFAULT_WORKSPACE;
    o->pdl = 1;
    o->time_algorithms = 1;
}

void bertc_context_destroy(bertc_context *c) {
    if (!c) return;
    const plan *p = &c->plan->p;
    if (c->dev) {
        const device_table *t = c->t;
        CUcontext prev;
        rt_capture_mode mode;
        rt_capture_mode_push(t, &mode);
        rt_ctx_enter(t, c->dev->ctx, &prev);
        if (c->stream) t->cuStreamSynchronize(c->stream);
        for (int b = 0; c->graphs && b < p->nbuckets; b++) rt_graph_free(c, b);
        for (int b = 0; c->gemms && b < p->nbuckets; b++) {
            for (int s = 0; c->gemms[b] && s < c->dev->buckets[b].nsteps; s++) rt_gemm_free(t, &c->gemms[b][s]);
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
        rt_capture_mode_pop(&mode);
        rt_device_release(c->plan, c->dev);
    }
    free(c->gemms);
    free(c->graphs);
    free(c->output_offset);
    free(c->copied);
    free(c->batch_start);
    bertc_plan_close(c->plan);
    free(c);
}

/* The COUNTERS buffer, zeroed once (an upload of zeros on the context's
 * stream, waited for: before any capture, so it is no graph node). */
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
    const char *call;
    r = rt_upload(t, c->counters, zeros, n, c->stream, &call);
    free(zeros);
    if (r != CUDA_SUCCESS) return rt_cu_error(t, r, c->err, sizeof c->err, "%s(zero the arrival counters)", call);
    return BERTC_STATUS_OK;
}

/* options.outputs into c->copied: every output, or the names listed. */
static bertc_status rt_outputs_select(bertc_context *c) {
    const sched_bucket *bk = &c->dev->buckets[0];
    const char *list = c->opt.outputs;
    if (!(c->copied = rt_calloc((size_t)bk->noutputs, 1)))
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    int any = 0;
    for (const char *s = list; s && *s;) {
        while (*s == ' ' || *s == ',') s++;
        size_t n = 0;
        while (s[n] && s[n] != ',' && s[n] != ' ') n++;
        if (!n) break;
        int o = 0;
        while (o < bk->noutputs && (strlen(bk->outputs[o].name) != n || strncmp(bk->outputs[o].name, s, n))) o++;
        if (o == bk->noutputs)
            return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                            "options.outputs: the plan has no output '%.*s' (it has %s%s%s)", (int)n, s,
                            bk->outputs[0].name, bk->noutputs > 1 ? ", " : "",
                            bk->noutputs > 1 ? bk->outputs[bk->noutputs - 1].name : "");
        c->copied[o] = 1;
        any = 1;
        s += n;
    }
    if (list && !any)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "options.outputs \"%s\" names no output",
                        list);
    for (int o = 0; o < bk->noutputs && !list; o++) c->copied[o] = 1;
    return BERTC_STATUS_OK;
}

/* The largest request block of the plan's buckets (the staging block and
 * the device one hold any). */
static size_t rt_request_bytes_max(const plan *p) {
    size_t most = 0;
    for (int b = 0; b < p->nbuckets; b++)
        if (rt_request_bytes(&p->buckets[b]) > most) most = rt_request_bytes(&p->buckets[b]);
    return most;
}

/* Staging, the output area, a batch's row offsets and the events. */
static bertc_status rt_context_host(bertc_context *c) {
    const plan *p = &c->plan->p;
    const device_table *t = c->t;
    size_t req = rt_request_bytes_max(p);
    void *host = NULL;
    CUresult r;
    if ((r = t->cuMemHostAlloc(&host, req, 0)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuMemHostAlloc(request staging, %zu bytes)", req);
    c->staging = host;
    bertc_status bs = rt_outputs_select(c);
    if (bs) return bs;
    int nout = p->buckets[0].noutputs;
    if (!(c->output_offset = rt_calloc((size_t)nout, sizeof *c->output_offset)))
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    size_t total = 0;
    for (int o = 0; o < nout; o++) {
        size_t most = 0;
        for (int b = 0; b < p->nbuckets && c->copied[o]; b++) {
            const sched_output *out = &c->dev->buckets[b].outputs[o];
            size_t n = rt_output_bytes(out, rt_output_rows(&c->dev->buckets[b], out));
            if (n > most) most = n;
        }
        c->output_offset[o] = total;
        total += (most + 255) & ~(size_t)255;
    }
    host = NULL;
    if ((r = t->cuMemHostAlloc(&host, total, 0)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuMemHostAlloc(outputs, %zu bytes)", total);
    c->outputs = host;
    int most = 0;
    for (int b = plan_length_buckets(p); b < p->nbuckets; b++)
        if (p->buckets[b].max_seqs > most) most = p->buckets[b].max_seqs;
    if (most && !(c->batch_start = rt_calloc((size_t)most + 1, sizeof *c->batch_start)))
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    if ((r = t->cuEventCreate(&c->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        c->ev_start = NULL;
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventCreate");
    }
    if ((r = t->cuEventCreate(&c->ev_stop, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        c->ev_stop = NULL;
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventCreate");
    }
    return BERTC_STATUS_OK;
}

/* The stream and the device buffers. */
static bertc_status rt_context_device(bertc_context *c) {
    const plan *p = &c->plan->p;
    const device_table *t = c->t;
    char *err = c->err;
    size_t cap = sizeof c->err;
    CUresult r;
    size_t req = rt_request_bytes_max(p);
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
    if ((r = t->cuMemAlloc(&c->request, req)) != CUDA_SUCCESS) {
        c->request = 0;
        return rt_cu_error(t, r, err, cap, "cuMemAlloc(request block, %zu bytes)", req);
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
    return BERTC_STATUS_OK;
}

static bertc_status rt_context_build(bertc_context *c) {
    const plan *p = &c->plan->p;
    bertc_status bs;
    if ((bs = rt_context_device(c)) || (bs = rt_context_host(c))) return bs;
    c->gemms = rt_calloc((size_t)p->nbuckets, sizeof *c->gemms);
    c->graphs = rt_calloc((size_t)p->nbuckets, sizeof *c->graphs);
    if (!c->gemms || !c->graphs) return rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    if ((bs = rt_gemms_make(c))) return bs;
    /* the image's architecture decides: only code built for sm_90+ waits */
    c->pdl = c->opt.pdl && c->dev->major >= 9 && rt_image_sm(&p->images[c->dev->image]) >= 90;
    for (int b = 0; b < p->nbuckets && !c->opt.capture_on_first_use; b++)
        if ((bs = rt_graph_capture(c, b))) return bs;
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
        rt_capture_mode mode;
        rt_capture_mode_push(c->t, &mode);
        CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
        st = r == CUDA_SUCCESS ? rt_context_build(c) : rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
        rt_ctx_leave(c->t, c->dev->ctx, prev);
        rt_capture_mode_pop(&mode);
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

int bertc_context_programmatic_launch(const bertc_context *c) { return c && c->pdl; }

/* ------------------------------------------------------------ requests */

bertc_status rt_request_check(bertc_context *c, const bertc_request *q, int *bucket) {
    const plan *p = &c->plan->p;
    int maxb = plan_max_len(p);
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
                                "token_type_ids[%lld] = %d is outside 0..%lld%s", (long long)i, v,
                                (long long)(p->type_vocab_size > 0 ? p->type_vocab_size - 1 : p->token_type_default),
                                p->type_vocab_size == 1 ? " (the model has one token type: it takes no text pairs)"
                                                        : "");
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

void rt_request_stage(bertc_context *c, const bertc_request *q, int b) {
    const plan *p = &c->plan->p;
    /* The bucket's request block layout: header, then three arrays of B. */
    int B = p->buckets[b].seq_len;
    int32_t *hdr = c->staging, *ids = hdr + KERNEL_REQ_HEADER_WORDS, *types = ids + B, *mask = types + B;
    hdr[KERNEL_REQ_LEN] = (int32_t)q->len;
    hdr[KERNEL_REQ_BUCKET] = B;
    hdr[2] = hdr[3] = 0;
    memcpy(ids, q->input_ids, (size_t)q->len * sizeof *ids);
    if (q->token_type_ids) memcpy(types, q->token_type_ids, (size_t)q->len * sizeof *types);
    else for (int64_t i = 0; i < q->len; i++) types[i] = p->token_type_default;
    if (q->attention_mask) memcpy(mask, q->attention_mask, (size_t)q->len * sizeof *mask);
    else for (int64_t i = 0; i < q->len; i++) mask[i] = 1;
}

bertc_status rt_bucket_ready(bertc_context *c, int b) {
    return c->graphs[b].exec ? BERTC_STATUS_OK : rt_graph_capture(c, b);
}

/* A token bucket's messages say so: "token bucket 512", else "bucket 128". */
static const char *rt_bucket_word(const sched_bucket *bk) { return bk->max_seqs ? "token bucket" : "bucket"; }

bertc_status rt_bucket_launch(bertc_context *c, int b) {
    const device_table *t = c->t;
    const sched_bucket *bk = &c->dev->buckets[b];
    CUresult r;
    if (c->opt.timing && (r = t->cuEventRecord(c->ev_start, c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventRecord");
    if ((r = t->cuGraphLaunch(c->graphs[b].exec, c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "%s %d: cuGraphLaunch", rt_bucket_word(bk), bk->seq_len);
    if (c->opt.timing && (r = t->cuEventRecord(c->ev_stop, c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "cuEventRecord");
    if ((r = t->cuStreamSynchronize(c->stream)) != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "%s %d: running the graph (cuStreamSynchronize)",
                           rt_bucket_word(bk), bk->seq_len);
    c->timed = c->opt.timing;
    return BERTC_STATUS_OK;
}

/* The request on the device; the caller has made our context current. */
static bertc_status rt_infer(bertc_context *c, const bertc_request *q, int b) {
    bertc_status st;
    if ((st = rt_bucket_ready(c, b)) != BERTC_STATUS_OK) return st;
    if ((st = rt_graph_set_rows(c, b, q->len, 0)) != BERTC_STATUS_OK) return st;
    rt_request_stage(c, q, b);
    if ((st = rt_bucket_launch(c, b)) != BERTC_STATUS_OK) return st;
    c->last_bucket = b;
    c->last_len = q->len;
    return BERTC_STATUS_OK;
}

void rt_results_forget(bertc_context *c) {
    c->last_bucket = -1;
    c->batch_n = 0;
    c->timed = 0;
}

bertc_status rt_request_begin(bertc_context *c, const bertc_request *q, const char *fn, int *b) {
    if (!q) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "%s: request is NULL", fn);
    rt_results_forget(c);
    return rt_request_check(c, q, b);
}

bertc_status bertc_infer(bertc_context *c, const bertc_request *q) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    int b = 0;
    bertc_status st = rt_request_begin(c, q, "bertc_infer", &b);
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

/* Output i of the last launch can be read (`fn` names the caller in the
 * message): a launch succeeded, the output exists and is copied back. */
bertc_status rt_output_check(bertc_context *c, int i, const char *fn) {
    if (c->last_bucket < 0)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "%s: no successful %s to read from", fn,
                        strcmp(fn, "bertc_output_read") ? "batch" : "request");
    const sched_bucket *bk = &c->dev->buckets[c->last_bucket];
    if (i < 0 || i >= bk->noutputs)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "output %d does not exist (the plan has %d)",
                        i, bk->noutputs);
    if (!c->copied[i])
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "output %s is not copied back by this context (options.outputs)", bk->outputs[i].name);
    return BERTC_STATUS_OK;
}

void rt_output_copy(const bertc_context *c, int i, int64_t first, int64_t rows, float *dst) {
    const sched_output *o = &c->dev->buckets[c->last_bucket].outputs[i];
    const uint8_t *src = c->outputs + c->output_offset[i];
    size_t es = (size_t)plan_dtype_size(o->dtype);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < o->cols; k++)
            dst[r * o->cols + k] = rt_load(o->dtype, src + (size_t)((first + r) * o->row_stride + k) * es);
}

bertc_status bertc_output_read(bertc_context *c, int i, float *dst, size_t count) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    if (c->batch_n)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_output_read: the last request was a packed batch (read it with bertc_batch_output_read)");
    bertc_status st = rt_output_check(c, i, "bertc_output_read");
    if (st) return st;
    const sched_output *o = &c->dev->buckets[c->last_bucket].outputs[i];
    int64_t rows = o->rows_are_seq ? c->last_len : 1;
    if (!dst || count != (size_t)(rows * o->cols))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "output %s holds %lld values for this request, the buffer %zu", o->name,
                        (long long)(rows * o->cols), dst ? count : 0);
    rt_output_copy(c, i, 0, rows, dst);
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
