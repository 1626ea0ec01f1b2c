/*
 * rt_plan — bertc_plan: a read plan shared by contexts, and the small
 * services every runtime file uses (host allocation, error messages).
 *
 * A plan is reference-counted rather than "close after your contexts":
 * services tear down in whatever order their shutdown code runs, and a
 * context outliving the handle its creator dropped must not find its
 * weights unmapped.  The opener holds one reference, each context one.
 *
 * Host allocations go through rt_malloc so that a test can make the nth of
 * them fail and check that every failure path frees what came before it;
 * the hook is a counter, not a branch on "are we testing".
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* ------------------------------------------------------------ host memory */

static atomic_long rt_fail_countdown;

void rt_debug_fail_host_alloc(long nth) { atomic_store(&rt_fail_countdown, nth); }

static int rt_alloc_should_fail(void) {
    long v = atomic_load(&rt_fail_countdown);
    while (v > 0) {
        if (atomic_compare_exchange_weak(&rt_fail_countdown, &v, v - 1)) return v == 1;
    }
    return 0;
}

void *rt_malloc(size_t n) { return rt_alloc_should_fail() ? NULL : malloc(n ? n : 1); }

void *rt_calloc(size_t n, size_t size) { return rt_alloc_should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1); }

/* ------------------------------------------------------------ messages */

static void rt_vformat(char *err, size_t cap, const char *fmt, va_list ap, const char *tail) {
    if (!err || !cap) return;
    int n = vsnprintf(err, cap, fmt, ap);
    if (tail && n >= 0 && (size_t)n < cap) snprintf(err + n, cap - (size_t)n, "%s", tail);
}

bertc_status rt_error(bertc_status s, char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, NULL);
    va_end(ap);
    return s;
}

bertc_status rt_cu_error(const device_table *t, CUresult r, char *err, size_t cap, const char *fmt, ...) {
    const char *text = NULL;
    if (t && t->cuGetErrorString && t->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
    char tail[256];
    snprintf(tail, sizeof tail, " failed: CUDA error %d (%s)", (int)r, text ? text : "unknown error");
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, tail);
    va_end(ap);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return BERTC_STATUS_OUT_OF_MEMORY;
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_INVALID_DEVICE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
        r == CUDA_ERROR_STUB_LIBRARY)
        return BERTC_STATUS_NO_DEVICE;
    return BERTC_STATUS_DEVICE;
}

bertc_status rt_blaslt_error(const device_table *t, cublasStatus_t s, char *err, size_t cap, const char *fmt, ...) {
    const char *text = t && t->cublasLtGetStatusString ? t->cublasLtGetStatusString(s) : NULL;
    char tail[256];
    snprintf(tail, sizeof tail, " failed: cuBLASLt status %d (%s)", (int)s, text ? text : "unknown status");
    va_list ap;
    va_start(ap, fmt);
    rt_vformat(err, cap, fmt, ap, tail);
    va_end(ap);
    return s == CUBLAS_STATUS_ALLOC_FAILED ? BERTC_STATUS_OUT_OF_MEMORY : BERTC_STATUS_DEVICE;
}

const char *bertc_status_name(bertc_status s) {
    switch (s) {
    case BERTC_STATUS_OK: return "ok";
    case BERTC_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case BERTC_STATUS_BAD_PLAN: return "bad plan";
    case BERTC_STATUS_BAD_REQUEST: return "bad request";
    case BERTC_STATUS_NO_DEVICE: return "no device";
    case BERTC_STATUS_DEVICE: return "device error";
    case BERTC_STATUS_OUT_OF_MEMORY: return "out of memory";
    }
    return "unknown status";
}

/* ------------------------------------------------------------ plans */

bertc_status bertc_plan_open(const char *path, bertc_plan **out, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (err && err_cap) err[0] = '\0';
    if (!path || !out) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, err_cap, "bertc_plan_open: NULL argument");
    bertc_plan *pl = rt_calloc(1, sizeof *pl);
    size_t n = strlen(path) + 1;
    char *copy = rt_malloc(n);
    if (!pl || !copy) {
        free(pl);
        free(copy);
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, err_cap, "%s: out of memory", path);
    }
    memcpy(copy, path, n);
    diag d;
    diag_init(&d);
    if (plan_read(&pl->p, path, &d)) {
        free(pl);
        free(copy);
        return rt_error(d.code == DIAG_CODE_INTERNAL && strstr(d.text, "out of memory") ? BERTC_STATUS_OUT_OF_MEMORY
                                                                                      : BERTC_STATUS_BAD_PLAN,
                        err, err_cap, "%s", d.text);
    }
    pl->path = copy;
    pl->refs = 1;
    pthread_mutex_init(&pl->lock, NULL);
    *out = pl;
    return BERTC_STATUS_OK;
}

void rt_plan_retain(bertc_plan *pl) {
    pthread_mutex_lock(&pl->lock);
    pl->refs++;
    pthread_mutex_unlock(&pl->lock);
}

void bertc_plan_close(bertc_plan *pl) {
    if (!pl) return;
    pthread_mutex_lock(&pl->lock);
    int last = --pl->refs == 0;
    pthread_mutex_unlock(&pl->lock);
    if (!last) return;
    pthread_mutex_destroy(&pl->lock);
    rt_text_free(pl);
    plan_free(&pl->p);
    free(pl->path);
    free(pl);
}

const char *bertc_plan_model_name(const bertc_plan *pl) { return pl ? pl->p.model_name : NULL; }
int64_t bertc_plan_hidden(const bertc_plan *pl) { return pl ? pl->p.hidden : 0; }
int64_t bertc_plan_vocab_size(const bertc_plan *pl) { return pl ? pl->p.vocab_size : 0; }
int64_t bertc_plan_type_vocab_size(const bertc_plan *pl) { return pl ? pl->p.type_vocab_size : 0; }
int bertc_plan_bucket_count(const bertc_plan *pl) { return pl ? pl->p.nbuckets : 0; }

int bertc_plan_bucket_len(const bertc_plan *pl, int b) {
    return pl && b >= 0 && b < pl->p.nbuckets ? pl->p.buckets[b].seq_len : 0;
}

/* Every bucket lists the same outputs in the same order (one graph, lowered
 * per bucket); bucket 0 speaks for all. */
int bertc_plan_output_count(const bertc_plan *pl) { return pl && pl->p.nbuckets ? pl->p.buckets[0].noutputs : 0; }

bertc_status bertc_plan_output_info(const bertc_plan *pl, int i, bertc_output_info *info) {
    if (!pl || !info || i < 0 || i >= bertc_plan_output_count(pl)) return BERTC_STATUS_INVALID_ARGUMENT;
    const sched_output *o = &pl->p.buckets[0].outputs[i];
    info->name = o->name;
    info->per_token = o->rows_are_seq;
    info->cols = o->cols;
    return BERTC_STATUS_OK;
}

int bertc_plan_output_index(const bertc_plan *pl, const char *name) {
    if (!pl || !name) return -1;
    for (int i = 0; i < bertc_plan_output_count(pl); i++)
        if (!strcmp(pl->p.buckets[0].outputs[i].name, name)) return i;
    return -1;
}
