/*
 * rt_check — bertc_debug_check_steps: does every step of a bucket touch
 * only the memory its launch contract grants it?
 *
 * The plan reader proves that every argument *reference* of every launch
 * lies inside its buffer (plan_kernels.h, the extents of kernel_args_in
 * and sched_gemm_operand_bytes).  What it cannot prove is that a kernel
 * keeps to those extents: a generator that indexes one tile too far, or a
 * kernel that runs the rows of the bucket where the text meant one row,
 * writes into whatever the arena holds next — another step's activations
 * — and the request then answers something slightly wrong, or right by
 * luck.  This runs the bucket's steps one by one, as bertc_debug_time_steps
 * does, and around each one:
 *
 *   - every arena byte outside the step's arguments is *poisoned* (0xa5)
 *     before it runs; a byte that is not poison afterwards was written
 *     where the step has no argument;
 *   - an arena byte the step only reads must be unchanged (an output that
 *     overlapped an input would destroy it);
 *   - the arrival counters are zero before and after, and the request
 *     block is unchanged;
 *   - afterwards the poisoned bytes get their values back, so the next
 *     step sees exactly what the graph would show it.
 *
 * Reads are checked too, indirectly: a step that reads an arena byte
 * outside its arguments reads poison, and its result (and the request's
 * outputs, which the check copies back like the graph: bertc_output_read
 * works afterwards) differs from bertc_infer's.  The request block is
 * compared with the staged bytes it was copied from, and the weights, once
 * after the bucket, with the plan's bytes they were uploaded from.  It
 * needs only the driver calls the graph already makes, so it runs on a GPU
 * as on the emulated device, where the tests run it over every kernel
 * family and dtype (tests/runtime/test_check_steps.c) and where
 * bertc_emudev_stray_write proves it sees a stray byte.  It copies the arena twice per step: a tool, not a service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bertc_debug.h"
#include "plan_kernels.h"
#include "rt.h"

#define RT_CHECK_POISON 0xa5

enum { RT_BYTE_FREE, RT_BYTE_READ, RT_BYTE_WRITTEN };

/* Host copies of one bucket's device buffers, and what step s may do to
 * each arena byte (RT_BYTE_*). */
typedef struct rt_check {
    bertc_context *c;
    const sched_bucket *bk;
    size_t arena, request, counters;
    uint8_t *before, *after, *use, *req, *cnt;
} rt_check;

/* On the stream and waited for (rt_upload), like the copies out. */
static bertc_status rt_check_copy_in(rt_check *k, CUdeviceptr dst, const void *src, size_t n) {
    const char *call;
    CUresult r = rt_upload(k->c->t, dst, src, n, k->c->stream, &call);
    return r == CUDA_SUCCESS ? BERTC_STATUS_OK : rt_cu_error(k->c->t, r, k->c->err, sizeof k->c->err, "%s", call);
}

/* On the stream and waited for: the device table has the asynchronous copy only. */
static bertc_status rt_check_copy_out(rt_check *k, void *dst, CUdeviceptr src, size_t n) {
    const device_table *t = k->c->t;
    CUresult r = n ? t->cuMemcpyDtoHAsync(dst, src, n, k->c->stream) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && n) r = t->cuStreamSynchronize(k->c->stream);
    return r == CUDA_SUCCESS ? BERTC_STATUS_OK : rt_cu_error(t, r, k->c->err, sizeof k->c->err, "cuMemcpyDtoHAsync");
}

/* Marks [at, at + bytes) of the arena as `use` (RT_BYTE_READ or _WRITTEN). */
static void rt_check_mark(rt_check *k, sched_ref ref, uint64_t bytes, uint8_t use) {
    if (ref.buf != SCHED_BUF_ARENA || ref.offset >= k->arena) return;
    uint64_t n = bytes > k->arena - ref.offset ? k->arena - ref.offset : bytes;
    memset(k->use + ref.offset, use, (size_t)n);
}

/* What step st may touch in the arena: its kernel's arguments, or its
 * GEMM's operands; the written ones marked last, so a byte both read and
 * written (an in-place residual) counts as written. */
static void rt_check_uses(rt_check *k, const sched_step *st) {
    memset(k->use, RT_BYTE_FREE, k->arena);
    kernel_arg a[KERNEL_MAX_ARGS];
    const sched_launch *l = &st->launch;
    if (st->kind == SCHED_STEP_KERNEL)
        kernel_args_in(&k->c->plan->p.kernels[l->kernel].spec, k->bk->seq_len, k->bk->max_seqs, a);
    for (uint8_t use = RT_BYTE_READ; use <= RT_BYTE_WRITTEN; use++) {
        if (st->kind == SCHED_STEP_GEMM) {
            for (int o = 0; o < SCHED_GEMM_OPERAND_COUNT; o++) {
                const sched_ref *ref;
                uint64_t bytes = sched_gemm_operand_bytes(&st->gemm, (sched_gemm_operand)o, &ref);
                if ((o == SCHED_GEMM_OPERAND_D) == (use == RT_BYTE_WRITTEN)) rt_check_mark(k, *ref, bytes, use);
            }
            continue;
        }
        kernel_arg_use want = use == RT_BYTE_WRITTEN ? KERNEL_ARG_WRITE : KERNEL_ARG_READ;
        for (int i = 0; i < l->nargs; i++)
            if (a[i].use == want) rt_check_mark(k, l->args[i], a[i].bytes, use);
    }
}

/* The first byte of [0, n) at which a and b differ, or n. */
static size_t rt_check_first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* The first non-zero byte of the arrival counters copied out, or k->counters. */
static size_t rt_check_counter_set(const rt_check *k) {
    size_t i = 0;
    while (i < k->counters && !k->cnt[i]) i++;
    return i;
}

/* What step st did to the arena, against what it may do. */
static bertc_status rt_check_verdict(rt_check *k, const sched_step *st) {
    const char *what = st->kind == SCHED_STEP_GEMM ? "cublasLt" : k->c->plan->p.kernels[st->launch.kernel].entry;
    size_t stray = 0, first = k->arena, input = k->arena;
    for (size_t i = 0; i < k->arena; i++) {
        if (k->use[i] == RT_BYTE_FREE && k->after[i] != RT_CHECK_POISON) {
            stray++;
            if (first == k->arena) first = i;
        } else if (k->use[i] == RT_BYTE_READ && k->after[i] != k->before[i] && input == k->arena) {
            input = i;
        }
    }
    if (stray)
        return rt_error(BERTC_STATUS_BAD_PLAN, k->c->err, sizeof k->c->err,
                        "bucket %d step %s (%s): wrote %zu arena bytes outside its arguments, the first at offset %zu",
                        k->bk->seq_len, st->name, what, stray, first);
    if (input < k->arena)
        return rt_error(BERTC_STATUS_BAD_PLAN, k->c->err, sizeof k->c->err,
                        "bucket %d step %s (%s): wrote arena offset %zu, which it only reads", k->bk->seq_len, st->name,
                        what, input);
    if (rt_check_first_diff((const uint8_t *)k->c->staging, k->req, k->request) < k->request)
        return rt_error(BERTC_STATUS_BAD_PLAN, k->c->err, sizeof k->c->err,
                        "bucket %d step %s (%s): changed the request block", k->bk->seq_len, st->name, what);
    size_t set = rt_check_counter_set(k);
    if (set < k->counters)
        return rt_error(BERTC_STATUS_BAD_PLAN, k->c->err, sizeof k->c->err,
                        "bucket %d step %s (%s): left arrival counter byte %zu non-zero", k->bk->seq_len, st->name, what,
                        set);
    return BERTC_STATUS_OK;
}

/* Step s under poison, checked, and the arena given its values back. */
static bertc_status rt_check_step(rt_check *k, int b, int s) {
    bertc_context *c = k->c;
    const sched_step *st = &k->bk->steps[s];
    rt_check_uses(k, st);
    bertc_status e;
    if ((e = rt_check_copy_out(k, k->before, c->arena, k->arena))) return e;
    memcpy(k->after, k->before, k->arena);
    for (size_t i = 0; i < k->arena; i++)
        if (k->use[i] == RT_BYTE_FREE) k->after[i] = RT_CHECK_POISON;
    if ((e = rt_check_copy_in(k, c->arena, k->after, k->arena)) || (e = rt_step_enqueue(c, b, s))) return e;
    CUresult r = c->t->cuStreamSynchronize(c->stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_error(c->t, r, c->err, sizeof c->err, "bucket %d step %s: running it", k->bk->seq_len, st->name);
    if ((e = rt_check_copy_out(k, k->after, c->arena, k->arena)) ||
        (e = rt_check_copy_out(k, k->req, c->request, k->request)) ||
        (e = rt_check_copy_out(k, k->cnt, c->counters, k->counters)) || (e = rt_check_verdict(k, st)))
        return e;
    for (size_t i = 0; i < k->arena; i++)
        if (k->use[i] == RT_BYTE_FREE) k->after[i] = k->before[i];
    return rt_check_copy_in(k, c->arena, k->after, k->arena);
}

/* The outputs this context copies back, at the request's rows, where the graph's copies put them. */
static bertc_status rt_check_outputs(rt_check *k, int64_t len) {
    for (int o = 0; o < k->bk->noutputs; o++) {
        const sched_output *out = &k->bk->outputs[o];
        if (!k->c->copied[o]) continue;
        bertc_status e = rt_check_copy_out(k, k->c->outputs + k->c->output_offset[o], rt_resolve(k->c, out->ref),
                                           rt_output_bytes(out, out->rows_are_seq ? len : 1));
        if (e) return e;
    }
    return BERTC_STATUS_OK;
}

/* The request, every step checked, the weights as the plan has them, the outputs copied back. */
static bertc_status rt_check_run(rt_check *k, const bertc_request *q, int b) {
    bertc_context *c = k->c;
    const plan *p = &c->plan->p;
    size_t wbytes = (size_t)p->weights_size;
    rt_request_stage(c, q, b);
    bertc_status e = rt_check_copy_in(k, c->request, c->staging, k->request);
    if (!e) e = rt_check_copy_out(k, k->cnt, c->counters, k->counters);
    size_t set = e ? k->counters : rt_check_counter_set(k);
    if (set < k->counters)
        e = rt_error(BERTC_STATUS_BAD_PLAN, c->err, sizeof c->err,
                     "arrival counter byte %zu is non-zero before the bucket's first step", set);
    for (int s = 0; !e && s < k->bk->nsteps; s++) e = rt_check_step(k, b, s);
    /* the device's weights were uploaded from the plan's bytes (rt_device.c) */
    uint8_t *w = e ? NULL : rt_malloc(wbytes ? wbytes : 1);
    if (!e && !w) e = rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    if (!e) e = rt_check_copy_out(k, w, c->dev->weights, wbytes);
    size_t at = e ? wbytes : rt_check_first_diff(p->weights, w, wbytes);
    if (at < wbytes)
        e = rt_error(BERTC_STATUS_BAD_PLAN, c->err, sizeof c->err,
                     "bucket %d: after its steps the device's weights differ from the plan's, first at offset %zu",
                     k->bk->seq_len, at);
    if (!e) e = rt_check_outputs(k, q->len);
    free(w);
    return e;
}

bertc_status bertc_debug_check_steps(bertc_context *c, const bertc_request *q) {
    if (!c) return BERTC_STATUS_INVALID_ARGUMENT;
    int b = 0;
    bertc_status e = rt_request_begin(c, q, "bertc_debug_check_steps", &b);
    if (e) return e;
    rt_check k = {.c = c, .bk = &c->dev->buckets[b]};
    k.arena = (size_t)k.bk->arena_bytes;
    k.request = rt_request_bytes(k.bk);
    k.counters = k.bk->counter_bytes;
    size_t a = k.arena ? k.arena : 1;
    k.before = rt_malloc(a), k.after = rt_malloc(a), k.use = rt_malloc(a);
    k.req = rt_malloc(k.request), k.cnt = rt_malloc(k.counters ? k.counters : 1);
    if (!k.before || !k.after || !k.use || !k.req || !k.cnt) {
        e = rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
    } else {
        CUcontext prev;
        CUresult r = rt_ctx_enter(c->t, c->dev->ctx, &prev);
        e = r == CUDA_SUCCESS ? rt_check_run(&k, q, b) : rt_cu_error(c->t, r, c->err, sizeof c->err, "cuCtxSetCurrent");
        rt_ctx_leave(c->t, c->dev->ctx, prev);
    }
    free(k.before), free(k.after), free(k.use), free(k.req), free(k.cnt);
    if (!e) {
        c->last_bucket = b;
        c->last_len = q->len;
    }
    return e;
}
