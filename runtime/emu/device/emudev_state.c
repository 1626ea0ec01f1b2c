/*
 * emudev_state — the common life of the emulated device's objects: the
 * global state, the handle registry, reference counting, the settings,
 * failure injection, and the checks every CUDA function enters through.
 *
 * Handles are checked: every object is registered in a hash set, so a
 * destroyed or foreign handle answers CUDA_ERROR_INVALID_HANDLE instead of
 * reading freed memory.  Objects are reference-counted because queued work
 * and graph nodes outlive the handle the user destroys (CUDA releases such
 * resources "once the device has completed all work"); the last reference
 * frees the object through the function the file of its kind gave it
 * (emudev_obj.free), so this file needs to know no kind's insides and
 * calls no other file of the device.
 *
 * Errors are sticky for the context, as a kernel fault is on a GPU: after a
 * failed work item nothing else runs, every synchronisation and every
 * enqueue answers the first error, and only releasing the primary context
 * to zero (which destroys everything in it, as the driver does; see
 * emudev_context.c) clears it.  Destroy calls stay allowed so that a
 * runtime can clean up.  The sticky error keeps the message of the failure
 * that set it, so a later call can say what broke the context.
 *
 * Threads: one global mutex (emudev_g.mu) guards the registry, the stream
 * list, all capture state, the twins and the sticky error's text; the
 * memory tables and the failure injections have their own mutexes
 * (mem_mu, fail_mu), held only around their own tables.  Counters,
 * settings and the sticky code are atomics, read without a lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ global state */

emudev_state emudev_g = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .mem_mu = PTHREAD_MUTEX_INITIALIZER,
    .fail_mu = PTHREAD_MUTEX_INITIALIZER,
};

emudev_ctx emudev_primary;
emudev_stream emudev_legacy = {
    .o = {EMUDEV_KIND_STREAM, 1},
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};
_Thread_local emudev_ctx *emudev_tls_ctx;
_Thread_local char emudev_tls_error[2048];

void emudev_stat_add(emudev_stat s, long d) { atomic_fetch_add(&emudev_g.stats[s], d); }

/* Copies text into a buffer of cap bytes, truncating. */
void emudev_text_copy(char *dst, size_t cap, const char *src) {
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ------------------------------------------------------------ services (emudev_internal.h) */

int emudev_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(emudev_tls_error, sizeof emudev_tls_error, fmt, ap);
    va_end(ap);
    return code;
}

int emudev_null(void) { return atomic_load(&emudev_g.null_mode); }

int emudev_algorithms(void) { return atomic_load(&emudev_g.algorithms); }

int emudev_algorithm_delay_us(unsigned v) {
    return v < EMUDEV_MAX_ALGORITHMS ? atomic_load(&emudev_g.algorithm_delay_us[v]) : 0;
}

void emudev_count(emudev_counter c, long delta) {
    emudev_stat_add(c == EMUDEV_COUNTER_MATMULS ? EMUDEV_STAT_MATMULS : EMUDEV_STAT_BLASLT_OBJECTS, delta);
}

int emudev_should_fail(const char *name, int *code) {
    if (atomic_load(&emudev_g.armed) == 0) return 0;
    int fire = 0;
    pthread_mutex_lock(&emudev_g.fail_mu);
    for (int i = 0; i < EMUDEV_MAX_INJECTIONS; i++) {
        emudev_injection *in = &emudev_g.inj[i];
        if (!in->remaining || strcmp(in->name, name) != 0) continue;
        if (--in->remaining == 0) {
            fire = 1;
            *code = in->code;
            atomic_fetch_sub(&emudev_g.armed, 1);
        }
        break;
    }
    pthread_mutex_unlock(&emudev_g.fail_mu);
    if (fire) emudev_error(*code, "%s: injected failure (code %d)", name, *code);
    return fire;
}

/* ------------------------------------------------------------ handle registry (under emudev_g.mu) */

static size_t emudev_reg_hash(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static long emudev_reg_slot(const void *p) {
    if (!emudev_g.reg_cap || !p) return -1;
    for (size_t i = emudev_reg_hash(p, emudev_g.reg_cap);; i = (i + 1) & (emudev_g.reg_cap - 1)) {
        if (!emudev_g.reg[i]) return -1;
        if ((const void *)emudev_g.reg[i] == p) return (long)i;
    }
}

int emudev_reg_add(emudev_obj *o) {
    if ((emudev_g.reg_n + 1) * 2 > emudev_g.reg_cap) {
        size_t cap = emudev_g.reg_cap ? emudev_g.reg_cap * 2 : 256;
        emudev_obj **v = calloc(cap, sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < emudev_g.reg_cap; i++) {
            if (!emudev_g.reg[i]) continue;
            size_t j = emudev_reg_hash(emudev_g.reg[i], cap);
            while (v[j]) j = (j + 1) & (cap - 1);
            v[j] = emudev_g.reg[i];
        }
        free(emudev_g.reg);
        emudev_g.reg = v;
        emudev_g.reg_cap = cap;
    }
    size_t j = emudev_reg_hash(o, emudev_g.reg_cap);
    while (emudev_g.reg[j]) j = (j + 1) & (emudev_g.reg_cap - 1);
    emudev_g.reg[j] = o;
    emudev_g.reg_n++;
    return 0;
}

/* Linear probing needs backward-shift deletion so later probes still find their keys. */
void emudev_reg_remove(const void *p) {
    long at = emudev_reg_slot(p);
    if (at < 0) return;
    size_t mask = emudev_g.reg_cap - 1, i = (size_t)at, j = i;
    emudev_g.reg[i] = NULL;
    for (;;) {
        j = (j + 1) & mask;
        if (!emudev_g.reg[j]) break;
        size_t k = emudev_reg_hash(emudev_g.reg[j], emudev_g.reg_cap);
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
        emudev_g.reg[i] = emudev_g.reg[j];
        emudev_g.reg[j] = NULL;
        i = j;
    }
    emudev_g.reg_n--;
}

emudev_obj *emudev_reg_get(const void *p, emudev_kind kind) {
    long i = emudev_reg_slot(p);
    return i >= 0 && emudev_g.reg[i]->kind == kind ? emudev_g.reg[i] : NULL;
}

/* Under emudev_g.mu; the caller owns the objects' references now. */
emudev_obj **emudev_reg_take_all_locked(size_t *n) {
    emudev_obj **objs = emudev_g.reg_n ? malloc(emudev_g.reg_n * sizeof *objs) : NULL;
    *n = 0;
    for (size_t i = 0; objs && i < emudev_g.reg_cap; i++)
        if (emudev_g.reg[i]) objs[(*n)++] = emudev_g.reg[i];
    free(emudev_g.reg);
    emudev_g.reg = NULL;
    emudev_g.reg_cap = emudev_g.reg_n = 0;
    return objs;
}

/* ------------------------------------------------------------ reference counting */

void emudev_obj_put(emudev_obj *o) {
    if (o && o != &emudev_legacy.o && atomic_fetch_sub(&o->refs, 1) == 1) emudev_obj_free(o);
}

void emudev_obj_get(emudev_obj *o) {
    if (o != &emudev_legacy.o) atomic_fetch_add(&o->refs, 1);
}

void emudev_work_list_free(emudev_work *w) {
    while (w) {
        emudev_work *next = w->next;
        w->ops->free(w);
        w = next;
    }
}

void emudev_obj_free(emudev_obj *o) {
    if (o->free) o->free(o);
}

/* Looks a handle up and takes a reference; NULL if it is not a live object of that kind. */
emudev_obj *emudev_obj_ref(const void *handle, emudev_kind kind) {
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(handle, kind);
    if (o) emudev_obj_get(o);
    pthread_mutex_unlock(&emudev_g.mu);
    return o;
}

void *emudev_obj_new(size_t size, emudev_kind kind, void (*free_fn)(emudev_obj *o)) {
    emudev_obj *o = calloc(1, size);
    if (!o) return NULL;
    o->kind = kind;
    atomic_init(&o->refs, 1);
    o->free = free_fn;
    return o;
}

int emudev_obj_register(emudev_obj *o) {
    pthread_mutex_lock(&emudev_g.mu);
    int rc = emudev_reg_add(o);
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

/* The handle dies at once; the object lives on while queued work or a
 * graph node still holds a reference. */
CUresult emudev_obj_destroy(const char *name, const void *handle, emudev_kind kind, const char *what,
                            emudev_stat stat) {
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(handle, kind);
    if (o) emudev_reg_remove(o);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!o) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a live %s", name, handle, what);
    emudev_stat_add(stat, -1);
    emudev_obj_put(o);
    return CUDA_SUCCESS;
}

emudev_work *emudev_work_copy(const emudev_work *w, size_t bytes) {
    emudev_work *n = malloc(bytes);
    if (!n) return NULL;
    memcpy(n, w, bytes);
    n->next = NULL;
    return n;
}

emudev_work *emudev_work_copy_holding(const emudev_work *w, size_t bytes, emudev_obj *held) {
    emudev_work *n = emudev_work_copy(w, bytes);
    if (n) emudev_obj_get(held);
    return n;
}

void emudev_work_free_holding(emudev_work *w, emudev_obj *held) {
    emudev_obj_put(held);
    free(w);
}

/* ------------------------------------------------------------ settings */

static int emudev_arch_parse(const char *s, int *major, int *minor) {
    if (strcmp(s, "emu") == 0) {
        *major = *minor = 0;
        return 0;
    }
    if (strncmp(s, "sm_", 3) != 0) return -1;
    char *end;
    long v = strtol(s + 3, &end, 10);
    if (end == s + 3 || v < 10 || v > 1000) return -1;
    *major = (int)(v / 10);
    *minor = (int)(v % 10);
    return 0;
}

void emudev_settings_from_env(void) {
    const char *e;
    int major = 0, minor = 0;
    if ((e = getenv("BERTC_EMU_ARCH")) && *e && emudev_arch_parse(e, &major, &minor) != 0) {
        fprintf(stderr, "bertc emulated device: BERTC_EMU_ARCH=%s is not 'emu' or sm_NN; using emu\n", e);
        major = minor = 0;
    }
    atomic_store(&emudev_g.arch_major, major);
    atomic_store(&emudev_g.arch_minor, minor);

    int sched = EMU_SCHEDULE_WARP_GREEDY;
    if ((e = getenv("BERTC_EMU_SCHEDULE")) && *e) {
        static const char *const names[EMU_SCHEDULE_COUNT] = {
            [EMU_SCHEDULE_ROUND_ROBIN] = "round_robin",
            [EMU_SCHEDULE_WARP_GREEDY] = "warp_greedy",
            [EMU_SCHEDULE_WARP_GREEDY_REVERSE] = "warp_greedy_reverse",
            [EMU_SCHEDULE_RANDOM] = "random",
        };
        int found = -1;
        for (int i = 0; i < EMU_SCHEDULE_COUNT; i++)
            if (strcmp(e, names[i]) == 0) found = i;
        if (found < 0) fprintf(stderr, "bertc emulated device: unknown BERTC_EMU_SCHEDULE=%s; using warp_greedy\n", e);
        else sched = found;
    }
    atomic_store(&emudev_g.schedule, sched);
    e = getenv("BERTC_EMU_SEED");
    atomic_store(&emudev_g.seed, e && *e ? strtoull(e, NULL, 0) : 0);
    e = getenv("BERTC_EMU_NULL");
    atomic_store(&emudev_g.null_mode, e && *e && strcmp(e, "0") != 0);
    e = getenv("BERTC_EMU_FILL");
    atomic_store(&emudev_g.fill, e && *e ? (int)(strtol(e, NULL, 0) & 0xff) : 0xff);
    e = getenv("BERTC_EMU_ALGORITHMS");
    long algos = e && *e ? strtol(e, NULL, 0) : 1;
    atomic_store(&emudev_g.algorithms, algos < 1 ? 1 : algos > EMUDEV_MAX_ALGORITHMS ? EMUDEV_MAX_ALGORITHMS : (int)algos);
    for (int i = 0; i < EMUDEV_MAX_ALGORITHMS; i++) atomic_store(&emudev_g.algorithm_delay_us[i], 0);
    atomic_store(&emudev_g.driver_version, CUDA_VERSION);
}

__attribute__((constructor)) static void emudev_settings_load(void) { emudev_settings_from_env(); }


/* ------------------------------------------------------------ entry checks */

/* cuInit, and (need_ctx) a live current context. */
CUresult emudev_ready(const char *name, int need_ctx) {
    if (!atomic_load(&emudev_g.initialized)) return EMUDEV_ERR(CUDA_ERROR_NOT_INITIALIZED, "%s: cuInit has not been called", name);
    if (need_ctx && (!emudev_tls_ctx || atomic_load(&emudev_g.primary_refs) == 0))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT,
                          "%s: no current context on this thread (cuDevicePrimaryCtxRetain + cuCtxSetCurrent)", name);
    return CUDA_SUCCESS;
}

/* Every CUDA function starts here: an injected failure first, then emudev_ready. */
CUresult emudev_enter(const char *name, int need_ctx) {
    int code;
    if (emudev_should_fail(name, &code)) return (CUresult)code;
    return emudev_ready(name, need_ctx);
}

CUresult emudev_enter_result(const char *name, int need_ctx, const void *result) {
    CUresult rc = emudev_enter(name, need_ctx);
    if (rc == CUDA_SUCCESS && !result) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: NULL pointer", name);
    return rc;
}

void emudev_sticky_set(CUresult code) {
    pthread_mutex_lock(&emudev_g.mu);
    if (atomic_load(&emudev_g.sticky) == 0) {
        emudev_text_copy(emudev_g.sticky_text, sizeof emudev_g.sticky_text, emudev_tls_error);
        atomic_store(&emudev_g.sticky, (int)code);
    }
    pthread_mutex_unlock(&emudev_g.mu);
}

/* The context's sticky error, with the message of the failure that set it. */
CUresult emudev_sticky(const char *name) {
    int code = atomic_load(&emudev_g.sticky);
    if (!code) return CUDA_SUCCESS;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_error(code, "%s: the context is unusable after an earlier failure: %s", name, emudev_g.sticky_text);
    pthread_mutex_unlock(&emudev_g.mu);
    return (CUresult)code;
}

