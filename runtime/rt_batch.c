/*
 * rt_batch — packed batches: bertc_infer_batch and the batch's outputs.
 *
 * A plan compiled with --batch-tokens carries token buckets after its
 * length buckets (plan_types.h): a token bucket of B tokens and N
 * sequences runs up to N requests whose lengths add up to at most B, their
 * tokens end to end, in one CUDA Graph launch.  Everything that makes that
 * exact lives in the plan — the row-wise kernels run over the batch's rows
 * unchanged, the packed kernels find each sequence from the request block
 * — so the runtime's share is small and is all here: check every request
 * as bertc_infer would (nothing runs unless all are good), pick the
 * smallest token bucket that holds the batch's tokens and requests, write
 * the packed request block (ids, token types and masks end to end, each
 * token's position in its own sequence, every sequence's first row), size
 * the graph's output copies to the batch (total tokens for a per-token
 * output, requests for a per-sequence one), launch, wait.
 *
 * Why the caller splits and not the runtime.  A batch bigger than the
 * largest token bucket could be run as several launches here, but the
 * caller is the one who knows whether it would rather send the overflow
 * to another context, another GPU or the next batch; so it is an error
 * that says by how much, and the limits are in the plan's API
 * (bertc_plan_max_batch, bertc_plan_max_batch_tokens).
 *
 * The staging block is the context's one (sized at create for the largest
 * bucket of either kind); only the batch's rows and N + 1 offsets are
 * written, and the rows past the batch keep what they held, which no
 * kernel reads into a real row (the tests poison them).  The row offsets
 * are also kept on the host, so a request's outputs are found without
 * looking at the block again.
 */
#include <stdio.h>
#include <string.h>

#include "rt.h"

/* The smallest token bucket that takes `tokens` tokens in n requests, or -1. */
static int rt_batch_bucket(const plan *p, int64_t tokens, size_t n) {
    for (int b = plan_length_buckets(p); b < p->nbuckets; b++)
        if (p->buckets[b].seq_len >= tokens && (size_t)p->buckets[b].max_seqs >= n) return b;
    return -1;
}

/* Every request as bertc_infer checks it, and the batch against the
 * plan's token buckets: the bucket in *bucket and the total in *tokens. */
static bertc_status rt_batch_check(bertc_context *c, const bertc_request *q, size_t n, int *bucket, int64_t *tokens) {
    const plan *p = &c->plan->p;
    if (p->nbuckets == plan_length_buckets(p))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_infer_batch: the plan has no token buckets (compile it with --batch-tokens), send the "
                        "requests one at a time with bertc_infer");
    int most = bertc_plan_max_batch(c->plan);
    if (n > (size_t)most)
        return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                        "a batch of %zu requests is more than the plan's token buckets take (at most %d, --max-batch): "
                        "split it",
                        n, most);
    *tokens = 0;
    for (size_t i = 0; i < n; i++) {
        int b;
        bertc_status st = rt_request_check(c, &q[i], &b);
        if (st) {
            char why[RT_ERR_CAP];
            snprintf(why, sizeof why, "%s", c->err);
            return rt_error(st, c->err, sizeof c->err, "request %zu: %s", i, why);
        }
        *tokens += q[i].len;
    }
    if ((*bucket = rt_batch_bucket(p, *tokens, n)) < 0)
        return rt_error(BERTC_STATUS_BAD_REQUEST, c->err, sizeof c->err,
                        "a batch of %lld tokens in %zu requests is more than the largest token bucket takes (%d tokens): "
                        "split it",
                        (long long)*tokens, n, p->buckets[p->nbuckets - 1].seq_len);
    return BERTC_STATUS_OK;
}

/* The packed request block (plan_types.h) of n requests in bucket b. */
static void rt_batch_stage(bertc_context *c, const bertc_request *q, size_t n, int b, int64_t tokens) {
    const sched_bucket *bk = &c->dev->buckets[b];
    int B = bk->seq_len, N = bk->max_seqs;
    int32_t *hdr = c->staging, *ids = hdr + KERNEL_REQ_HEADER_WORDS, *types = ids + B, *mask = types + B;
    int32_t *pos = mask + B, *start = pos + B;
    hdr[KERNEL_REQ_LEN] = (int32_t)tokens;
    hdr[KERNEL_REQ_BUCKET] = B;
    hdr[KERNEL_REQ_NSEQ] = (int32_t)n;
    hdr[KERNEL_REQ_MAX_SEQS] = N;
    int64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t len = q[i].len;
        memcpy(ids + at, q[i].input_ids, (size_t)len * sizeof *ids);
        if (q[i].token_type_ids) memcpy(types + at, q[i].token_type_ids, (size_t)len * sizeof *types);
        else for (int64_t k = 0; k < len; k++) types[at + k] = c->plan->p.token_type_default;
        if (q[i].attention_mask) memcpy(mask + at, q[i].attention_mask, (size_t)len * sizeof *mask);
        else for (int64_t k = 0; k < len; k++) mask[at + k] = 1;
        for (int64_t k = 0; k < len; k++) pos[at + k] = (int32_t)k;
        start[i] = (int32_t)at;
        c->batch_start[i] = at;
        at += len;
    }
    for (int i = (int)n; i <= N; i++) start[i] = (int32_t)tokens;
    c->batch_start[n] = tokens;
}

bertc_status bertc_infer_batch(bertc_context *c, const bertc_request *q, size_t n) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    rt_results_forget(c);
    if (!q || n == 0)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_infer_batch: %s", q ? "an empty batch (n is 0)" : "requests is NULL");
    int b;
    int64_t tokens;
    bertc_status st = rt_batch_check(c, q, n, &b, &tokens);
    if (st) return st;
    CUcontext prev;
    CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
    if (r != CUDA_SUCCESS) return rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
    if (!(st = rt_bucket_ready(c, b)) && !(st = rt_graph_set_rows(c, b, tokens, (int64_t)n))) {
        rt_batch_stage(c, q, n, b, tokens);
        st = rt_bucket_launch(c, b);
    }
    rt_ctx_leave(c->t, c->dev->ctx, prev);
    if (st) return st;
    c->last_bucket = b;
    c->last_len = tokens;
    c->batch_n = n;
    return BERTC_STATUS_OK;
}

size_t bertc_batch_count(const bertc_context *c) { return c && c->last_bucket >= 0 ? c->batch_n : 0; }

int64_t bertc_batch_tokens(const bertc_context *c) { return c && c->last_bucket >= 0 && c->batch_n ? c->last_len : 0; }

/* Output i of the last batch can be read; *o is it. */
static bertc_status rt_batch_output(bertc_context *c, int i, const char *fn, const sched_output **o) {
    if (c->last_bucket >= 0 && !c->batch_n)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "%s: the last request was not a batch (read it with bertc_output_read)", fn);
    bertc_status st = rt_output_check(c, i, fn);
    if (!st) *o = &c->dev->buckets[c->last_bucket].outputs[i];
    return st;
}

bertc_status bertc_batch_output_read(bertc_context *c, int i, size_t request, float *dst, size_t count) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    const sched_output *o;
    bertc_status st = rt_batch_output(c, i, "bertc_batch_output_read", &o);
    if (st) return st;
    if (request >= c->batch_n)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "bertc_batch_output_read: request %zu of a batch of %zu", request, c->batch_n);
    int64_t first = o->rows_are_seq ? c->batch_start[request] : (int64_t)request;
    int64_t rows = o->rows_are_seq ? c->batch_start[request + 1] - first : 1;
    if (!dst || count != (size_t)(rows * o->cols))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "output %s holds %lld values for request %zu, the buffer %zu", o->name,
                        (long long)(rows * o->cols), request, dst ? count : 0);
    rt_output_copy(c, i, first, rows, dst);
    return BERTC_STATUS_OK;
}

bertc_status bertc_batch_output_read_named(bertc_context *c, const char *name, size_t request, float *dst,
                                           size_t count) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    int i = bertc_plan_output_index(c->plan, name);
    if (i < 0)
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err, "the plan has no output '%s'",
                        name ? name : "(null)");
    return bertc_batch_output_read(c, i, request, dst, count);
}

bertc_status bertc_batch_output_read_all(bertc_context *c, int i, float *dst, size_t count) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    const sched_output *o;
    bertc_status st = rt_batch_output(c, i, "bertc_batch_output_read_all", &o);
    if (st) return st;
    int64_t rows = o->rows_are_seq ? c->last_len : (int64_t)c->batch_n;
    if (!dst || count != (size_t)(rows * o->cols))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, c->err, sizeof c->err,
                        "output %s holds %lld values for this batch, the buffer %zu", o->name,
                        (long long)(rows * o->cols), dst ? count : 0);
    rt_output_copy(c, i, 0, rows, dst);
    return BERTC_STATUS_OK;
}
