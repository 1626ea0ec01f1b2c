/*
 * emudev_driver — the CUDA driver API subset of the emulated device, and
 * the services its other files share (emudev_internal.h) and the control
 * API (emudev.h).
 *
 * The point of this file is to be strict where a GPU is strict, so that a
 * runtime which passes its tests here does not meet a new class of bug on
 * the first real GPU.  Three choices follow from that.
 *
 * Work is deferred.  Launches, copies, event records and matmuls become
 * `emudev_work` items queued on their stream and executed, in order, only
 * at a synchronisation point, by the thread that synchronises.  A runtime
 * that reads a result before synchronising reads the fill byte (NaN), not a
 * lucky answer; one that changes a kernel argument after the launch changes
 * nothing, because argument values are copied at launch (and at capture),
 * as the driver copies them.  Pageable copies keep CUDA's documented
 * quirks: host-to-device reads the host buffer at the call, device-to-host
 * returns only when done; pinned copies (cuMemHostAlloc memory) are truly
 * asynchronous.
 *
 * Errors are sticky for the context, as a kernel fault is on a GPU: after a
 * failed work item nothing else runs, every synchronisation and every
 * enqueue answers the first error, and only releasing the primary context
 * to zero (which destroys everything in it, as the driver does) clears it.
 * Destroy calls stay allowed so that a runtime can clean up.
 *
 * Stream capture enforces the documented interaction rules (global,
 * thread-local and relaxed modes; the legacy stream's implicit
 * synchronisation with blocking streams), because those are exactly the
 * rules a runtime breaks without noticing until a graph is captured on a
 * GPU under load.
 *
 * Handles are checked: every object is registered in a hash set, so a
 * destroyed or foreign handle answers CUDA_ERROR_INVALID_HANDLE instead of
 * reading freed memory.  Objects are reference-counted because queued work
 * and graph nodes outlive the handle the user destroys (CUDA releases such
 * resources "once the device has completed all work").
 *
 * Threads: one global mutex guards the registry, the stream list and all
 * capture state; each stream has its own mutex for its queue and a
 * `draining` flag so that only one thread executes a stream's queue at a
 * time, while different streams execute concurrently on their own threads.
 * No lock is held while work runs, and a thread never waits for a second
 * stream's drain while holding the first, so draining cannot deadlock.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "emudev_internal.h"

#define EMUDEV_ERR(code, ...) ((CUresult)emudev_error((int)(code), __VA_ARGS__))
#define EMUDEV_DEVICE_NAME "bertc emulated device"
#define EMUDEV_MULTIPROCESSORS 8
#define EMUDEV_MAX_INJECTIONS 32
#define EMUDEV_ALIGN 256u

/* ------------------------------------------------------------ objects */

typedef enum emudev_kind {
    EMUDEV_KIND_STREAM = 1,
    EMUDEV_KIND_EVENT,
    EMUDEV_KIND_MODULE,
    EMUDEV_KIND_FUNCTION,
    EMUDEV_KIND_GRAPH,
    EMUDEV_KIND_EXEC,
} emudev_kind;

typedef struct emudev_obj {
    emudev_kind kind;
    atomic_int refs;   /* the handle's reference + one per work item / node holding it */
} emudev_obj;

typedef struct CUctx_st {
    int unused;
} emudev_ctx;

typedef struct CUstream_st {
    emudev_obj o;
    unsigned flags;
    pthread_mutex_t mu;          /* queue and draining */
    pthread_cond_t cv;
    emudev_work *head, *tail;
    int draining;
    /* capture state, under emudev_g.mu */
    int capturing, cap_invalid;
    CUstreamCaptureMode cap_mode;
    pthread_t cap_thread;
    emudev_work *cap_head, *cap_tail;
    size_t cap_count;
    struct CUstream_st *next;    /* emudev_g.streams */
} emudev_stream;

typedef struct CUevent_st {
    emudev_obj o;
    unsigned flags;
    pthread_mutex_t mu;
    uint64_t seq_recorded, seq_done;   /* records issued / executed */
    struct timespec stamp;             /* of the latest record, once executed */
    int captured;                      /* last recorded in a capturing stream */
    emudev_stream *stream;             /* of the latest record (a reference) */
} emudev_event;

typedef struct CUfunc_st emudev_function;

typedef struct CUmod_st {
    emudev_obj o;
    emudev_image_kind kind;
    emu_image *image;       /* EMU images: loaded from a memfd */
    int fd;
    int nentries;           /* CUBIN/PTX: entry names, bound to twins */
    char **entries;
    emudev_function *functions;
} emudev_module;

struct CUfunc_st {
    emudev_obj o;
    emudev_module *module;
    emu_kernel *kernel;
    char *name;
    unsigned nargs;
    const unsigned *arg_sizes;
    atomic_uint max_dynamic_smem;
    emudev_function *next;
};

typedef struct CUgraph_st {
    emudev_obj o;
    emudev_work *head;
    size_t count;
} emudev_graph;

typedef struct CUgraphExec_st {
    emudev_obj o;
    pthread_mutex_t run_mu;   /* launches of one exec are ordered, never concurrent */
    size_t count;
    emudev_work **nodes;
} emudev_exec;

/* ------------------------------------------------------------ global state */

typedef struct emudev_range {
    uintptr_t base;
    size_t size;
} emudev_range;

typedef struct emudev_ranges {
    emudev_range *v;
    size_t n, cap;
} emudev_ranges;

typedef struct emudev_injection {
    char name[64];
    int remaining;
    int code;
} emudev_injection;

typedef struct emudev_twin {
    emu_image *image;
    int fd;
    struct emudev_twin *next;
} emudev_twin;

typedef enum emudev_stat {
    EMUDEV_STAT_ALLOCATIONS,
    EMUDEV_STAT_HOST_ALLOCATIONS,
    EMUDEV_STAT_BYTES,
    EMUDEV_STAT_MODULES,
    EMUDEV_STAT_STREAMS,
    EMUDEV_STAT_EVENTS,
    EMUDEV_STAT_GRAPHS,
    EMUDEV_STAT_GRAPH_EXECS,
    EMUDEV_STAT_PRIMARY_RETAINS,
    EMUDEV_STAT_BLASLT_OBJECTS,
    EMUDEV_STAT_KERNEL_LAUNCHES,
    EMUDEV_STAT_MATMULS,
    EMUDEV_STAT_GRAPH_LAUNCHES,
    EMUDEV_STAT_COPIES,
    EMUDEV_STAT_COUNT,
} emudev_stat;

static struct {
    pthread_mutex_t mu;        /* registry, streams list, captures, twins, primary refs, sticky text */
    pthread_mutex_t mem_mu;    /* dev, host */
    pthread_mutex_t fail_mu;   /* inj */
    atomic_int initialized;
    atomic_int arch_major, arch_minor, fill, null_mode, schedule;
    atomic_ullong seed;
    atomic_int armed;
    emudev_injection inj[EMUDEV_MAX_INJECTIONS];
    emudev_ranges dev, host;
    atomic_long primary_refs;
    atomic_int sticky;
    char sticky_text[1024];
    emudev_obj **reg;          /* open-addressing set of live handles */
    size_t reg_cap, reg_n;
    emudev_stream *streams;
    emudev_twin *twins;
    atomic_long stats[EMUDEV_STAT_COUNT];
} emudev_g = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .mem_mu = PTHREAD_MUTEX_INITIALIZER,
    .fail_mu = PTHREAD_MUTEX_INITIALIZER,
};

static emudev_ctx emudev_primary;
static emudev_stream emudev_legacy = {
    .o = {EMUDEV_KIND_STREAM, 1},
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};
static _Thread_local emudev_ctx *emudev_tls_ctx;
static _Thread_local char emudev_tls_error[2048];

static void emudev_stat_add(emudev_stat s, long d) { atomic_fetch_add(&emudev_g.stats[s], d); }

/* Copies text into a buffer of cap bytes, truncating. */
static void emudev_text_copy(char *dst, size_t cap, const char *src) {
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* ------------------------------------------------------------ services */

int emudev_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(emudev_tls_error, sizeof emudev_tls_error, fmt, ap);
    va_end(ap);
    return code;
}

int emudev_null(void) { return atomic_load(&emudev_g.null_mode); }

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

/* Index of the range holding [p, p + bytes) in a sorted table, or -1. */
static long emudev_ranges_find(const emudev_ranges *r, uintptr_t p, size_t bytes) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {   /* first base > p */
        size_t mid = (lo + hi) / 2;
        if (r->v[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const emudev_range *e = &r->v[lo - 1];
    if (p - e->base > e->size || bytes > e->size - (p - e->base)) return -1;
    return (long)(lo - 1);
}

static int emudev_ranges_add(emudev_ranges *r, uintptr_t base, size_t size) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        emudev_range *v = realloc(r->v, cap * sizeof *v);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    size_t i = r->n;
    while (i > 0 && r->v[i - 1].base > base) i--;
    memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
    r->v[i] = (emudev_range){base, size};
    r->n++;
    return 0;
}

/* Removes the range starting exactly at base; its size, or 0 if none. */
static size_t emudev_ranges_remove(emudev_ranges *r, uintptr_t base) {
    long i = emudev_ranges_find(r, base, 0);
    if (i < 0 || r->v[i].base != base) return 0;
    size_t size = r->v[i].size;
    memmove(&r->v[i], &r->v[i + 1], (r->n - (size_t)i - 1) * sizeof *r->v);
    r->n--;
    return size;
}

int emudev_mem_valid(CUdeviceptr p, size_t bytes) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.dev, (uintptr_t)p, bytes);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return i >= 0;
}

static int emudev_host_pinned(const void *p, size_t bytes) {
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.host, (uintptr_t)p, bytes);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    return i >= 0;
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

static int emudev_reg_add(emudev_obj *o) {
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
static void emudev_reg_remove(const void *p) {
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

static emudev_obj *emudev_reg_get(const void *p, emudev_kind kind) {
    long i = emudev_reg_slot(p);
    return i >= 0 && emudev_g.reg[i]->kind == kind ? emudev_g.reg[i] : NULL;
}

/* ------------------------------------------------------------ reference counting */

static void emudev_obj_free(emudev_obj *o);

static void emudev_obj_put(emudev_obj *o) {
    if (o && o != &emudev_legacy.o && atomic_fetch_sub(&o->refs, 1) == 1) emudev_obj_free(o);
}

static void emudev_obj_get(emudev_obj *o) {
    if (o != &emudev_legacy.o) atomic_fetch_add(&o->refs, 1);
}

static void emudev_work_list_free(emudev_work *w) {
    while (w) {
        emudev_work *next = w->next;
        w->ops->free(w);
        w = next;
    }
}

static void emudev_image_release(emu_image *im, int fd);

static void emudev_obj_free(emudev_obj *o) {
    switch (o->kind) {
    case EMUDEV_KIND_STREAM: {
        emudev_stream *s = (emudev_stream *)o;
        emudev_work_list_free(s->head);
        emudev_work_list_free(s->cap_head);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        break;
    }
    case EMUDEV_KIND_EVENT: {
        emudev_event *e = (emudev_event *)o;
        emudev_obj_put(e->stream ? &e->stream->o : NULL);
        pthread_mutex_destroy(&e->mu);
        break;
    }
    case EMUDEV_KIND_MODULE: {
        emudev_module *m = (emudev_module *)o;
        for (emudev_function *f = m->functions, *next; f; f = next) {
            next = f->next;
            free(f->name);
            free(f);
        }
        if (m->image) emudev_image_release(m->image, m->fd);
        for (int i = 0; i < m->nentries; i++) free(m->entries[i]);
        free(m->entries);
        break;
    }
    case EMUDEV_KIND_FUNCTION: return;   /* owned by its module */
    case EMUDEV_KIND_GRAPH: emudev_work_list_free(((emudev_graph *)o)->head); break;
    case EMUDEV_KIND_EXEC: {
        emudev_exec *x = (emudev_exec *)o;
        for (size_t i = 0; i < x->count; i++) x->nodes[i]->ops->free(x->nodes[i]);
        free(x->nodes);
        pthread_mutex_destroy(&x->run_mu);
        break;
    }
    }
    free(o);
}

/* Looks a handle up and takes a reference; NULL if it is not a live object of that kind. */
static emudev_obj *emudev_obj_ref(const void *handle, emudev_kind kind) {
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(handle, kind);
    if (o) emudev_obj_get(o);
    pthread_mutex_unlock(&emudev_g.mu);
    return o;
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

static void emudev_settings_from_env(void) {
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
}

__attribute__((constructor)) static void emudev_driver_load(void) { emudev_settings_from_env(); }

/* ------------------------------------------------------------ entry checks */

/* cuInit, and (need_ctx) a live current context. */
static CUresult emudev_ready(const char *name, int need_ctx) {
    if (!atomic_load(&emudev_g.initialized)) return EMUDEV_ERR(CUDA_ERROR_NOT_INITIALIZED, "%s: cuInit has not been called", name);
    if (need_ctx && (!emudev_tls_ctx || atomic_load(&emudev_g.primary_refs) == 0))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT,
                          "%s: no current context on this thread (cuDevicePrimaryCtxRetain + cuCtxSetCurrent)", name);
    return CUDA_SUCCESS;
}

/* Every CUDA function starts here: an injected failure first, then emudev_ready. */
static CUresult emudev_enter(const char *name, int need_ctx) {
    int code;
    if (emudev_should_fail(name, &code)) return (CUresult)code;
    return emudev_ready(name, need_ctx);
}

static void emudev_sticky_set(CUresult code) {
    pthread_mutex_lock(&emudev_g.mu);
    if (atomic_load(&emudev_g.sticky) == 0) {
        emudev_text_copy(emudev_g.sticky_text, sizeof emudev_g.sticky_text, emudev_tls_error);
        atomic_store(&emudev_g.sticky, (int)code);
    }
    pthread_mutex_unlock(&emudev_g.mu);
}

/* The context's sticky error, with the message of the failure that set it. */
static CUresult emudev_sticky(const char *name) {
    int code = atomic_load(&emudev_g.sticky);
    if (!code) return CUDA_SUCCESS;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_error(code, "%s: the context is unusable after an earlier failure: %s", name, emudev_g.sticky_text);
    pthread_mutex_unlock(&emudev_g.mu);
    return (CUresult)code;
}

/* ------------------------------------------------------------ capture rules (under emudev_g.mu) */

static const char *emudev_mode_name(CUstreamCaptureMode m) {
    return m == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread-local"
                                                                                                    : "relaxed";
}

/*
 * A potentially unsafe call (one that may synchronise implicitly) is
 * prohibited while any thread captures in global mode or the calling
 * thread captures in thread-local mode; the offending captures are
 * invalidated, as the driver invalidates them.
 */
static CUresult emudev_capture_unsafe_locked(const char *name) {
    pthread_t self = pthread_self();
    const char *mode = NULL;
    for (emudev_stream *s = emudev_g.streams; s; s = s->next)
        if (s->capturing && (s->cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                             (s->cap_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(s->cap_thread, self)))) {
            s->cap_invalid = 1;
            mode = emudev_mode_name(s->cap_mode);
        }
    if (!mode) return CUDA_SUCCESS;
    return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "%s: potentially unsafe call while a %s-mode stream capture is active; the capture is invalidated",
                      name, mode);
}

static CUresult emudev_capture_unsafe(const char *name) {
    pthread_mutex_lock(&emudev_g.mu);
    CUresult rc = emudev_capture_unsafe_locked(name);
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

/* Work on the legacy stream waits for every blocking stream: not allowed while one captures (any mode). */
static CUresult emudev_capture_legacy_locked(const char *name) {
    int hit = 0;
    for (emudev_stream *s = emudev_g.streams; s; s = s->next)
        if (s->capturing && !(s->flags & CU_STREAM_NON_BLOCKING)) {
            s->cap_invalid = 1;
            hit = 1;
        }
    if (!hit) return CUDA_SUCCESS;
    return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                      "%s: legacy-stream operation while a blocking stream is capturing; the capture is invalidated", name);
}

/* ------------------------------------------------------------ streams: queue and drain */

/* Resolves a stream handle under emudev_g.mu, taking a reference. */
static CUresult emudev_stream_resolve_locked(CUstream h, const char *name, emudev_stream **out) {
    if (!h || h == CU_STREAM_LEGACY) {
        *out = &emudev_legacy;
        return CUDA_SUCCESS;
    }
    if (h == CU_STREAM_PER_THREAD)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "%s: the per-thread default stream is not emulated", name);
    emudev_stream *s = (emudev_stream *)emudev_reg_get(h, EMUDEV_KIND_STREAM);
    if (!s) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a live stream", name, (void *)h);
    emudev_obj_get(&s->o);
    *out = s;
    return CUDA_SUCCESS;
}

static CUresult emudev_stream_resolve(CUstream h, const char *name, emudev_stream **out) {
    pthread_mutex_lock(&emudev_g.mu);
    CUresult rc = emudev_stream_resolve_locked(h, name, out);
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

/*
 * Executes a stream's queue on the calling thread.  Only one thread drains
 * a stream at a time (others wait for it, then find the queue empty or
 * newer work); after a failure the rest is discarded, as a faulted GPU
 * context executes nothing more.
 */
static void emudev_stream_drain(emudev_stream *s) {
    pthread_mutex_lock(&s->mu);
    while (s->draining) pthread_cond_wait(&s->cv, &s->mu);
    s->draining = 1;
    emudev_work *w;
    while ((w = s->head)) {
        s->head = w->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        w->next = NULL;
        if (!atomic_load(&emudev_g.sticky)) {
            CUresult rc = w->ops->run(w);
            if (rc != CUDA_SUCCESS) emudev_sticky_set(rc);
        }
        w->ops->free(w);
        pthread_mutex_lock(&s->mu);
    }
    s->draining = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Drains every stream (blocking_only: those the legacy stream synchronises with), then the legacy stream. */
static void emudev_streams_drain(int blocking_only) {
    pthread_mutex_lock(&emudev_g.mu);
    size_t n = 0, i = 0;
    for (emudev_stream *s = emudev_g.streams; s; s = s->next) n++;
    emudev_stream **v = n ? malloc(n * sizeof *v) : NULL;
    for (emudev_stream *s = emudev_g.streams; s && v; s = s->next)
        if (!blocking_only || !(s->flags & CU_STREAM_NON_BLOCKING)) {
            emudev_obj_get(&s->o);
            v[i++] = s;
        }
    pthread_mutex_unlock(&emudev_g.mu);
    for (size_t k = 0; k < i; k++) {
        emudev_stream_drain(v[k]);
        emudev_obj_put(&v[k]->o);
    }
    free(v);
    emudev_stream_drain(&emudev_legacy);
}

/* A synchronisation of s as the driver orders it: legacy work first for blocking streams. */
static void emudev_stream_sync(emudev_stream *s) {
    if (s == &emudev_legacy) {
        emudev_streams_drain(1);
        return;
    }
    if (!(s->flags & CU_STREAM_NON_BLOCKING)) emudev_stream_drain(&emudev_legacy);
    emudev_stream_drain(s);
}

/* Queues or records w; the caller has run emudev_should_fail for its own name. */
static CUresult emudev_submit_named(CUstream h, emudev_work *w, const char *name) {
    CUresult rc = emudev_ready(name, 1);
    if (rc == CUDA_SUCCESS) rc = emudev_sticky(name);
    if (rc != CUDA_SUCCESS) {
        w->ops->free(w);
        return rc;
    }
    emudev_stream *s = NULL;
    w->next = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    rc = emudev_stream_resolve_locked(h, name, &s);
    if (rc == CUDA_SUCCESS && s == &emudev_legacy) rc = emudev_capture_legacy_locked(name);
    if (rc == CUDA_SUCCESS && s->capturing) {
        if (s->cap_invalid) {
            rc = EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "%s: the stream's capture was invalidated", name);
        } else {
            if (s->cap_tail) s->cap_tail->next = w;
            else s->cap_head = w;
            s->cap_tail = w;
            s->cap_count++;
            w = NULL;
        }
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (rc != CUDA_SUCCESS) {
        w->ops->free(w);
        emudev_obj_put(s ? &s->o : NULL);
        return rc;
    }
    if (w) {
        pthread_mutex_lock(&s->mu);
        if (s->tail) s->tail->next = w;
        else s->head = w;
        s->tail = w;
        pthread_mutex_unlock(&s->mu);
    }
    emudev_obj_put(&s->o);
    return CUDA_SUCCESS;
}

CUresult emudev_submit(CUstream s, emudev_work *w) { return emudev_submit_named(s, w, w->ops->what); }

/* ------------------------------------------------------------ init, device, context */

CUresult CUDAAPI cuInit(unsigned int flags) {
    int code;
    if (emudev_should_fail("cuInit", &code)) return (CUresult)code;
    if (flags != 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0, not %u", flags);
    atomic_store(&emudev_g.initialized, 1);
    return CUDA_SUCCESS;
}

/* As in the driver, this one and cuGetErrorString work before cuInit. */
CUresult CUDAAPI cuDriverGetVersion(int *version) {
    int code;
    if (emudev_should_fail("cuDriverGetVersion", &code)) return (CUresult)code;
    if (!version) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion: NULL pointer");
    *version = 13000;
    return CUDA_SUCCESS;
}

typedef struct emudev_code_text {
    CUresult code;
    const char *text;
} emudev_code_text;

static const emudev_code_text emudev_code_texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"},
    {CUDA_ERROR_FILE_NOT_FOUND, "file not found"},
    {CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"},
    {CUDA_ERROR_ASSERT, "device-side assert triggered"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_TIMEOUT, "wait operation timed out"},
    {CUDA_ERROR_UNKNOWN, "unknown error"},
};

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str) {
    int code;
    if (emudev_should_fail("cuGetErrorString", &code)) return (CUresult)code;
    if (!str) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString: NULL pointer");
    for (size_t i = 0; i < sizeof emudev_code_texts / sizeof *emudev_code_texts; i++)
        if (emudev_code_texts[i].code == error) {
            *str = emudev_code_texts[i].text;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGetErrorString: unknown code %d", (int)error);
}

static CUresult emudev_device_check(const char *name, CUdevice dev) {
    if (dev != 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_DEVICE, "%s: device %d does not exist (one device, 0)", name, dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    CUresult rc = emudev_enter("cuDeviceGetCount", 0);
    if (rc) return rc;
    if (!count) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount: NULL pointer");
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult rc = emudev_enter("cuDeviceGet", 0);
    if (rc) return rc;
    if (!device) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet: NULL pointer");
    if ((rc = emudev_device_check("cuDeviceGet", ordinal))) return rc;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    CUresult rc = emudev_enter("cuDeviceGetAttribute", 0);
    if (rc) return rc;
    if (!pi) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute: NULL pointer");
    if ((rc = emudev_device_check("cuDeviceGetAttribute", dev))) return rc;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = atomic_load(&emudev_g.arch_major); break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = atomic_load(&emudev_g.arch_minor); break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = EMUDEV_MULTIPROCESSORS; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)EMU_MAX_BLOCK_THREADS; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *pi = (int)EMU_SMEM_DEFAULT_LIMIT; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = (int)EMU_SMEM_OPTIN_LIMIT; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *pi = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = 0x7fffffff; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *pi = 65535; break;
    default:
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute: attribute %d is not emulated", (int)attrib);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult rc = emudev_enter("cuDeviceGetName", 0);
    if (rc) return rc;
    if (!name || len <= 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName: NULL buffer or length %d", len);
    if ((rc = emudev_device_check("cuDeviceGetName", dev))) return rc;
    snprintf(name, (size_t)len, "%s", EMUDEV_DEVICE_NAME);
    return CUDA_SUCCESS;
}

static void emudev_context_destroy(void);

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    CUresult rc = emudev_enter("cuDevicePrimaryCtxRetain", 0);
    if (rc) return rc;
    if (!pctx) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxRetain: NULL pointer");
    if ((rc = emudev_device_check("cuDevicePrimaryCtxRetain", dev))) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    atomic_fetch_add(&emudev_g.primary_refs, 1);
    pthread_mutex_unlock(&emudev_g.mu);
    emudev_stat_add(EMUDEV_STAT_PRIMARY_RETAINS, 1);
    *pctx = &emudev_primary;
    return CUDA_SUCCESS;
}

/* The last release destroys the context and everything in it, as the driver does; it also clears a sticky error. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    CUresult rc = emudev_enter("cuDevicePrimaryCtxRelease", 0);
    if (rc) return rc;
    if ((rc = emudev_device_check("cuDevicePrimaryCtxRelease", dev))) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    long refs = atomic_load(&emudev_g.primary_refs);
    if (refs > 0) atomic_store(&emudev_g.primary_refs, refs - 1);
    pthread_mutex_unlock(&emudev_g.mu);
    if (refs == 0)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease: the primary context is not retained");
    emudev_stat_add(EMUDEV_STAT_PRIMARY_RETAINS, -1);
    if (refs == 1) emudev_context_destroy();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    CUresult rc = emudev_enter("cuCtxSetCurrent", 0);
    if (rc) return rc;
    if (ctx && ctx != &emudev_primary)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent: %p is not the primary context", (void *)ctx);
    emudev_tls_ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
    CUresult rc = emudev_enter("cuCtxGetCurrent", 0);
    if (rc) return rc;
    if (!pctx) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuCtxGetCurrent: NULL pointer");
    *pctx = emudev_tls_ctx;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ memory */

static void *emudev_alloc_filled(size_t bytes, size_t align) {
    void *p = NULL;
    if (posix_memalign(&p, align, bytes) != 0) return NULL;   /* exact size: ASan sees overruns */
    memset(p, atomic_load(&emudev_g.fill), bytes);
    return p;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    CUresult rc = emudev_enter("cuMemAlloc", 1);
    if (rc) return rc;
    if (!dptr) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc: NULL pointer");
    if (bytesize == 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc: 0 bytes");
    if ((rc = emudev_capture_unsafe("cuMemAlloc")) || (rc = emudev_sticky("cuMemAlloc"))) return rc;
    void *p = emudev_alloc_filled(bytesize, EMUDEV_ALIGN);
    if (!p) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: %zu bytes: out of memory", bytesize);
    pthread_mutex_lock(&emudev_g.mem_mu);
    int bad = emudev_ranges_add(&emudev_g.dev, (uintptr_t)p, bytesize);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (bad) {
        free(p);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_ALLOCATIONS, 1);
    emudev_stat_add(EMUDEV_STAT_BYTES, (long)bytesize);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Frees synchronise the device first (cuMemFree does on a GPU), so queued work never touches freed memory. */
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    CUresult rc = emudev_enter("cuMemFree", 1);
    if (rc) return rc;
    if ((rc = emudev_capture_unsafe("cuMemFree"))) return rc;
    if (!dptr) return CUDA_SUCCESS;
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.dev, (uintptr_t)dptr, 0);
    int known = i >= 0 && emudev_g.dev.v[i].base == (uintptr_t)dptr;
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (!known)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx is not the start of a live allocation",
                          (unsigned long long)dptr);
    emudev_streams_drain(0);
    pthread_mutex_lock(&emudev_g.mem_mu);
    size_t size = emudev_ranges_remove(&emudev_g.dev, (uintptr_t)dptr);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (!size) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx was freed concurrently", (unsigned long long)dptr);
    free(emudev_host_ptr(dptr));
    emudev_stat_add(EMUDEV_STAT_ALLOCATIONS, -1);
    emudev_stat_add(EMUDEV_STAT_BYTES, -(long)size);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
    CUresult rc = emudev_enter("cuMemHostAlloc", 1);
    if (rc) return rc;
    if (!pp) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: NULL pointer");
    if (bytesize == 0) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: 0 bytes");
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: unknown flags 0x%x", flags);
    if ((rc = emudev_capture_unsafe("cuMemHostAlloc")) || (rc = emudev_sticky("cuMemHostAlloc"))) return rc;
    void *p = emudev_alloc_filled(bytesize, 4096);
    if (!p) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc: %zu bytes: out of memory", bytesize);
    pthread_mutex_lock(&emudev_g.mem_mu);
    int bad = emudev_ranges_add(&emudev_g.host, (uintptr_t)p, bytesize);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (bad) {
        free(p);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_HOST_ALLOCATIONS, 1);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p) {
    CUresult rc = emudev_enter("cuMemFreeHost", 1);
    if (rc) return rc;
    if ((rc = emudev_capture_unsafe("cuMemFreeHost"))) return rc;
    pthread_mutex_lock(&emudev_g.mem_mu);
    long i = emudev_ranges_find(&emudev_g.host, (uintptr_t)p, 0);
    int known = p && i >= 0 && emudev_g.host.v[i].base == (uintptr_t)p;
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (!known) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost: %p is not a live cuMemHostAlloc allocation", p);
    emudev_streams_drain(0);   /* pinned copies in flight read or write it */
    pthread_mutex_lock(&emudev_g.mem_mu);
    size_t size = emudev_ranges_remove(&emudev_g.host, (uintptr_t)p);
    pthread_mutex_unlock(&emudev_g.mem_mu);
    if (!size) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost: %p was freed concurrently", p);
    free(p);
    emudev_stat_add(EMUDEV_STAT_HOST_ALLOCATIONS, -1);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ copies */

typedef struct emudev_copy_work {
    emudev_work w;
    int to_device;
    void *dst;
    const void *src;
    size_t bytes;
    void *staged;   /* pageable host-to-device: the bytes as they were at the call */
} emudev_copy_work;

static CUresult emudev_copy_run(emudev_work *w) {
    emudev_copy_work *c = (emudev_copy_work *)w;
    const void *dev = c->to_device ? c->dst : c->src;
    /* graph nodes may outlive the memory they name */
    if (!emudev_mem_valid((CUdeviceptr)(uintptr_t)dev, c->bytes))
        return EMUDEV_ERR(CUDA_ERROR_ILLEGAL_ADDRESS, "%s of %zu bytes: device range at %p is no longer allocated",
                          w->ops->what, c->bytes, dev);
    memcpy(c->dst, c->staged ? c->staged : c->src, c->bytes);
    emudev_stat_add(EMUDEV_STAT_COPIES, 1);
    return CUDA_SUCCESS;
}

static void emudev_copy_free(emudev_work *w) {
    free(((emudev_copy_work *)w)->staged);
    free(w);
}

static emudev_work *emudev_copy_clone(const emudev_work *w) {
    const emudev_copy_work *c = (const emudev_copy_work *)w;
    emudev_copy_work *n = malloc(sizeof *n);
    if (!n) return NULL;
    *n = *c;
    n->w.next = NULL;
    if (c->staged) {
        if (!(n->staged = malloc(c->bytes))) {
            free(n);
            return NULL;
        }
        memcpy(n->staged, c->staged, c->bytes);
    }
    return &n->w;
}

static const emudev_work_ops emudev_htod_ops = {"cuMemcpyHtoDAsync", emudev_copy_run, emudev_copy_clone, emudev_copy_free};
static const emudev_work_ops emudev_dtoh_ops = {"cuMemcpyDtoHAsync", emudev_copy_run, emudev_copy_clone, emudev_copy_free};

static int emudev_stream_capturing(emudev_stream *s) {
    pthread_mutex_lock(&emudev_g.mu);
    int c = s->capturing;
    pthread_mutex_unlock(&emudev_g.mu);
    return c;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
    CUresult rc = emudev_enter("cuMemcpyHtoD", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    rc = emudev_capture_unsafe_locked("cuMemcpyHtoD");
    if (!rc) rc = emudev_capture_legacy_locked("cuMemcpyHtoD");
    pthread_mutex_unlock(&emudev_g.mu);
    if (rc || bytes == 0) return rc;
    if (!src) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD: NULL source");
    if (!emudev_mem_valid(dst, bytes))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD: [0x%llx, +%zu) is not inside one live allocation",
                          (unsigned long long)dst, bytes);
    emudev_streams_drain(1);   /* the legacy stream waits for every blocking stream */
    if ((rc = emudev_sticky("cuMemcpyHtoD"))) return rc;
    memcpy(emudev_host_ptr(dst), src, bytes);
    emudev_stat_add(EMUDEV_STAT_COPIES, 1);
    return CUDA_SUCCESS;
}

static CUresult emudev_copy_async(const char *name, int to_device, void *dst, const void *src, size_t bytes,
                                  CUstream hs) {
    CUresult rc = emudev_enter(name, 1);
    if (rc || bytes == 0) return rc;
    CUdeviceptr dev = (CUdeviceptr)(uintptr_t)(to_device ? dst : src);
    const void *host = to_device ? src : dst;
    if (!host) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: NULL host pointer", name);
    if (!emudev_mem_valid(dev, bytes))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: device range [0x%llx, +%zu) is not inside one live allocation",
                          name, (unsigned long long)dev, bytes);
    emudev_stream *s;
    if ((rc = emudev_stream_resolve(hs, name, &s))) return rc;
    int pageable = !emudev_host_pinned(host, bytes) && !emudev_stream_capturing(s);
    emudev_copy_work *c = calloc(1, sizeof *c);
    if (!c || (pageable && to_device && !(c->staged = malloc(bytes)))) {
        free(c);
        emudev_obj_put(&s->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    c->w.ops = to_device ? &emudev_htod_ops : &emudev_dtoh_ops;
    c->to_device = to_device;
    c->dst = dst;
    c->src = src;
    c->bytes = bytes;
    if (c->staged) memcpy(c->staged, src, bytes);
    rc = emudev_submit_named(hs, &c->w, name);
    /* device-to-pageable returns only once the copy is done, as the driver documents */
    if (rc == CUDA_SUCCESS && pageable && !to_device) {
        emudev_stream_sync(s);
        rc = emudev_sticky(name);
    }
    emudev_obj_put(&s->o);
    return rc;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, CUstream s) {
    return emudev_copy_async("cuMemcpyHtoDAsync", 1, emudev_host_ptr(dst), src, bytes, s);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream s) {
    return emudev_copy_async("cuMemcpyDtoHAsync", 0, dst, emudev_host_ptr(src), bytes, s);
}

/* ------------------------------------------------------------ module images */

/*
 * cuModuleLoadData gets no size, so the extent is read from the image
 * itself, as the driver does: an ELF file ends at the furthest of its
 * headers, sections and segments; anything else is NUL-terminated text.
 */
static size_t emudev_image_extent(const void *image) {
    const unsigned char *p = image;
    if (memcmp(p, ELFMAG, SELFMAG) != 0) return strlen(image) + 1;
    if (p[EI_CLASS] != ELFCLASS64) return EI_NIDENT;
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    size_t end = sizeof eh;
#define EMUDEV_EXTEND(x) \
    do {                 \
        size_t x_ = (x); \
        if (x_ > end) end = x_; \
    } while (0)
    EMUDEV_EXTEND(eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize);
    EMUDEV_EXTEND(eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize);
    if (eh.e_shoff && eh.e_shentsize >= sizeof(Elf64_Shdr))
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh;
            memcpy(&sh, p + eh.e_shoff + (size_t)i * eh.e_shentsize, sizeof sh);
            if (sh.sh_type != SHT_NOBITS) EMUDEV_EXTEND(sh.sh_offset + sh.sh_size);
        }
    if (eh.e_phoff && eh.e_phentsize >= sizeof(Elf64_Phdr))
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, p + eh.e_phoff + (size_t)i * eh.e_phentsize, sizeof ph);
            EMUDEV_EXTEND(ph.p_offset + ph.p_filesz);
        }
#undef EMUDEV_EXTEND
    return end;
}

/*
 * EMU images are loaded from a memfd through /proc/self/fd/N, so no file
 * is left behind.  dlopen recognises an already loaded object by that name
 * string: if an image cannot really be unloaded (g++ marks objects with
 * STB_GNU_UNIQUE symbols undeletable), its fd number stays taken forever,
 * so a later image never gets the same name and the stale object.
 */
static emu_image *emudev_image_load(const void *data, size_t size, int *fd_out, char *why, size_t cap) {
    int fd = memfd_create("bertc-emu-image", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, cap, "memfd_create: %s", strerror(errno));
        return NULL;
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, (const char *)data + off, size - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(why, cap, "writing the image to a memfd: %s", strerror(errno));
            close(fd);
            return NULL;
        }
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    diag d;
    diag_init(&d);
    emu_image *im = emu_image_load(path, &d);
    if (!im) {
        emudev_text_copy(why, cap, d.text);
        close(fd);
        return NULL;
    }
    *fd_out = fd;
    return im;
}

static void emudev_image_release(emu_image *im, int fd) {
    emu_image_free(im);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        return;   /* still mapped: keep the fd, and with it the name, taken */
    }
    close(fd);
}

/* ------------------------------------------------------------ modules */

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
    CUresult rc = emudev_enter("cuModuleLoadData", 1);
    if (rc) return rc;
    if (!module || !image) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData: NULL pointer");
    if ((rc = emudev_sticky("cuModuleLoadData"))) return rc;
    size_t size = emudev_image_extent(image);
    emudev_image_info info;
    memset(&info, 0, sizeof info);
    if (emudev_image_inspect(image, size, &info) != 0)
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    int major = atomic_load(&emudev_g.arch_major), minor = atomic_load(&emudev_g.arch_minor);
    emudev_module *m = calloc(1, sizeof *m);
    char why[512] = "";
    if (!m) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    else if (info.kind == EMUDEV_IMAGE_UNKNOWN)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: not a module image: %s", info.why);
    else if (info.kind == EMUDEV_IMAGE_EMU && !emudev_image_runs_on(info.kind, info.sm, major, minor))
        rc = EMUDEV_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                        "cuModuleLoadData: an EMU (x86-64) image does not run on the claimed sm_%d%d", major, minor);
    else if (!emudev_image_runs_on(info.kind, info.sm, major, minor))
        rc = EMUDEV_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadData: %s for sm_%d does not run on %s%d.%d",
                        info.kind == EMUDEV_IMAGE_CUBIN ? "CUBIN" : "PTX", info.sm,
                        major || minor ? "compute capability " : "the emulated device, capability ", major, minor);
    else if (info.kind == EMUDEV_IMAGE_EMU) {
        if (!(m->image = emudev_image_load(image, size, &m->fd, why, sizeof why)))
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why);
    } else if (info.nentries > 0 && !(m->entries = calloc((size_t)info.nentries, sizeof *m->entries))) {
        rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    } else {
        for (int i = 0; i < info.nentries && !rc; i++) {
            if (!(m->entries[i] = strdup(info.entries[i])))
                rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
            m->nentries = i + 1;
        }
    }
    if (m) {
        m->o.kind = EMUDEV_KIND_MODULE;
        atomic_init(&m->o.refs, 1);
        m->kind = info.kind;
    }
    emudev_image_info_free(&info);
    if (!rc) {
        pthread_mutex_lock(&emudev_g.mu);
        if (emudev_reg_add(&m->o) != 0) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
        pthread_mutex_unlock(&emudev_g.mu);
    }
    if (rc) {
        if (m) emudev_obj_free(&m->o);
        return rc;
    }
    emudev_stat_add(EMUDEV_STAT_MODULES, 1);
    *module = m;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
    CUresult rc = emudev_enter("cuModuleUnload", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_module *m = (emudev_module *)emudev_reg_get(hmod, EMUDEV_KIND_MODULE);
    if (m) {
        emudev_reg_remove(m);
        for (emudev_function *f = m->functions; f; f = f->next) emudev_reg_remove(f);
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (!m) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload: %p is not a loaded module", (void *)hmod);
    emudev_stat_add(EMUDEV_STAT_MODULES, -1);
    emudev_obj_put(&m->o);
    return CUDA_SUCCESS;
}

/* The kernel serving `name`: from the module's own EMU image, or for CUBIN/PTX from a registered twin. */
static emu_kernel *emudev_module_kernel(emudev_module *m, const char *name, char *why, size_t cap) {
    diag d;
    diag_init(&d);
    if (m->image) {
        emu_kernel *k = emu_image_kernel(m->image, name, &d);
        if (!k) emudev_text_copy(why, cap, d.text);
        return k;
    }
    int listed = 0;
    for (int i = 0; i < m->nentries && !listed; i++) listed = strcmp(m->entries[i], name) == 0;
    if (!listed) {
        snprintf(why, cap, "no entry '%s' in the %s module", name, m->kind == EMUDEV_IMAGE_CUBIN ? "CUBIN" : "PTX");
        return NULL;
    }
    emu_kernel *k = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    for (emudev_twin *t = emudev_g.twins; t && !k; t = t->next) k = emu_image_kernel(t->image, name, &d);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!k) snprintf(why, cap, "entry '%s' has no twin kernel (bertc_emudev_add_twins)", name);
    /* twins are shared by modules: the per-function limit is checked at launch instead */
    else emu_kernel_set_max_dynamic_smem(k, EMU_SMEM_OPTIN_LIMIT, &d);
    return k;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    CUresult rc = emudev_enter("cuModuleGetFunction", 1);
    if (rc) return rc;
    if (!hfunc || !name) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunction: NULL pointer");
    emudev_module *m = (emudev_module *)emudev_obj_ref(hmod, EMUDEV_KIND_MODULE);
    if (!m) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction: %p is not a loaded module", (void *)hmod);
    pthread_mutex_lock(&emudev_g.mu);
    emudev_function *f = m->functions;
    while (f && strcmp(f->name, name) != 0) f = f->next;
    pthread_mutex_unlock(&emudev_g.mu);
    if (!f) {
        char why[1024];
        emu_kernel *k = emudev_module_kernel(m, name, why, sizeof why);
        if (!k) rc = EMUDEV_ERR(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction: %s", why);
        else if (!(f = calloc(1, sizeof *f)) || !(f->name = strdup(name))) {
            free(f);
            f = NULL;
            rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleGetFunction: out of memory");
        }
        if (!rc) {
            f->o.kind = EMUDEV_KIND_FUNCTION;
            atomic_init(&f->o.refs, 1);
            f->module = m;
            f->kernel = k;
            f->nargs = emu_kernel_arg_count(k);
            f->arg_sizes = emu_kernel_arg_sizes(k);
            atomic_init(&f->max_dynamic_smem, EMU_SMEM_DEFAULT_LIMIT);
            pthread_mutex_lock(&emudev_g.mu);
            emudev_function *again = m->functions;   /* another thread may have added it meanwhile */
            while (again && again->kernel != k) again = again->next;
            if (again || emudev_reg_add(&f->o) != 0) {
                free(f->name);
                free(f);
                f = again;
                if (!f) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleGetFunction: out of memory");
            } else {
                f->next = m->functions;
                m->functions = f;
            }
            pthread_mutex_unlock(&emudev_g.mu);
        }
    }
    emudev_obj_put(&m->o);
    if (rc) return rc;
    *hfunc = f;
    return CUDA_SUCCESS;
}

/* A function handle and a reference to its module (which owns it). */
static emudev_function *emudev_function_ref(CUfunction h) {
    pthread_mutex_lock(&emudev_g.mu);
    emudev_function *f = (emudev_function *)emudev_reg_get(h, EMUDEV_KIND_FUNCTION);
    if (f) emudev_obj_get(&f->module->o);
    pthread_mutex_unlock(&emudev_g.mu);
    return f;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    CUresult rc = emudev_enter("cuFuncSetAttribute", 1);
    if (rc) return rc;
    emudev_function *f = emudev_function_ref(hfunc);
    if (!f) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuFuncSetAttribute: %p is not a live function", (void *)hfunc);
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        diag d;
        diag_init(&d);
        if (value < 0 || (unsigned)value > EMU_SMEM_OPTIN_LIMIT)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                            "cuFuncSetAttribute: %d bytes of dynamic shared memory (the device allows up to %u)", value,
                            EMU_SMEM_OPTIN_LIMIT);
        else if (f->module->image && emu_kernel_set_max_dynamic_smem(f->kernel, (unsigned)value, &d) != EMU_STATUS_OK)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: %s", d.text);
        else atomic_store(&f->max_dynamic_smem, (unsigned)value);
    } else if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        /* a hint on a GPU; nothing to emulate, but the same range check */
        if (value < -1 || value > 100)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: carveout %d is not -1..100", value);
    } else {
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: attribute %d is not emulated", (int)attrib);
    }
    emudev_obj_put(&f->module->o);
    return rc;
}

/* ------------------------------------------------------------ kernel launches */

typedef struct emudev_kernel_work {
    emudev_work w;
    emudev_function *f;      /* its module is referenced */
    unsigned grid[3], block[3], smem;
    size_t bytes;            /* of this record, with argv and the argument values after it */
    void **argv;
} emudev_kernel_work;

static CUresult emudev_kernel_run(emudev_work *w) {
    emudev_kernel_work *kw = (emudev_kernel_work *)w;
    emudev_stat_add(EMUDEV_STAT_KERNEL_LAUNCHES, 1);
    if (emudev_null()) return CUDA_SUCCESS;
    diag d;
    diag_init(&d);
    emu_status st = emu_kernel_launch(kw->f->kernel, kw->grid, kw->block, kw->smem, kw->argv,
                                      (emu_schedule)atomic_load(&emudev_g.schedule), atomic_load(&emudev_g.seed), &d);
    if (st == EMU_STATUS_OK) return CUDA_SUCCESS;
    /* a GPU prints device-side assertions on the console too */
    fprintf(stderr, "bertc emulated device: kernel %s failed (%s): %s\n", kw->f->name, emu_status_name(st), d.text);
    return EMUDEV_ERR(st == EMU_STATUS_DEADLOCK ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_ERROR_LAUNCH_FAILED, "kernel %s: %s",
                      kw->f->name, d.text);
}

static void emudev_kernel_free(emudev_work *w) {
    emudev_obj_put(&((emudev_kernel_work *)w)->f->module->o);
    free(w);
}

/* One block holds the record, argv and the values, so a clone is a copy with argv rebased. */
static emudev_work *emudev_kernel_clone(const emudev_work *w) {
    const emudev_kernel_work *kw = (const emudev_kernel_work *)w;
    emudev_kernel_work *n = malloc(kw->bytes);
    if (!n) return NULL;
    memcpy(n, kw, kw->bytes);
    n->w.next = NULL;
    n->argv = (void **)((char *)n + ((const char *)kw->argv - (const char *)kw));
    for (unsigned i = 0; i < kw->f->nargs; i++) n->argv[i] = (char *)n + ((const char *)kw->argv[i] - (const char *)kw);
    emudev_obj_get(&n->f->module->o);
    return &n->w;
}

static const emudev_work_ops emudev_kernel_ops = {"cuLaunchKernel", emudev_kernel_run, emudev_kernel_clone,
                                                  emudev_kernel_free};

CUresult CUDAAPI cuLaunchKernel(CUfunction hf, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int smem, CUstream hs, void **params,
                                void **extra) {
    CUresult rc = emudev_enter("cuLaunchKernel", 1);
    if (rc) return rc;
    emudev_function *f = emudev_function_ref(hf);
    if (!f) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: %p is not a live function", (void *)hf);
    const char *name = f->name;
    uint64_t threads = (uint64_t)bx * by * bz;
    if (extra) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: `extra` is not emulated; pass kernelParams", name);
    else if (!gx || !gy || !gz || gx > 0x7fffffffu || gy > 65535u || gz > 65535u)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: grid (%u,%u,%u) is invalid", name, gx, gy, gz);
    else if (!bx || !by || !bz || bx > 1024u || by > 1024u || bz > 64u || threads > EMU_MAX_BLOCK_THREADS)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: block (%u,%u,%u) is invalid (at most 1024 threads)",
                        name, bx, by, bz);
    else if (smem > atomic_load(&f->max_dynamic_smem))
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                        "cuLaunchKernel %s: %u bytes of dynamic shared memory exceed the function's limit of %u "
                        "(raise it with cuFuncSetAttribute)",
                        name, smem, atomic_load(&f->max_dynamic_smem));
    else if (f->nargs && !params)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: kernelParams is NULL but the kernel takes %u arguments",
                        name, f->nargs);
    for (unsigned i = 0; !rc && i < f->nargs; i++)
        if (!params[i]) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: kernelParams[%u] is NULL", name, i);
    size_t head = (sizeof(emudev_kernel_work) + (size_t)f->nargs * sizeof(void *) + 15u) & ~(size_t)15u, bytes = head;
    for (unsigned i = 0; i < f->nargs; i++) bytes += (f->arg_sizes[i] + 15u) & ~15u;
    emudev_kernel_work *kw = rc ? NULL : malloc(bytes);
    if (!rc && !kw) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuLaunchKernel %s: out of memory", name);
    if (rc) {
        emudev_obj_put(&f->module->o);
        return rc;
    }
    /* argument values are copied now: the launch (or the captured node) owns them */
    *kw = (emudev_kernel_work){{&emudev_kernel_ops, NULL}, f, {gx, gy, gz}, {bx, by, bz}, smem, bytes, NULL};
    kw->argv = (void **)(kw + 1);
    char *at = (char *)kw + head;
    for (unsigned i = 0; i < f->nargs; i++) {
        memcpy(at, params[i], f->arg_sizes[i]);
        kw->argv[i] = at;
        at += (f->arg_sizes[i] + 15u) & ~15u;
    }
    return emudev_submit_named(hs, &kw->w, "cuLaunchKernel");
}

/* ------------------------------------------------------------ streams */

CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags) {
    CUresult rc = emudev_enter("cuStreamCreate", 1);
    if (rc) return rc;
    if (!ph) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuStreamCreate: NULL pointer");
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuStreamCreate: flags 0x%x", flags);
    if ((rc = emudev_sticky("cuStreamCreate"))) return rc;
    emudev_stream *s = calloc(1, sizeof *s);
    if (!s) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate: out of memory");
    s->o.kind = EMUDEV_KIND_STREAM;
    atomic_init(&s->o.refs, 1);
    s->flags = flags;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_lock(&emudev_g.mu);
    int bad = emudev_reg_add(&s->o);
    if (!bad) {
        s->next = emudev_g.streams;
        emudev_g.streams = s;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (bad) {
        emudev_obj_free(&s->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_STREAMS, 1);
    *ph = s;
    return CUDA_SUCCESS;
}

static void emudev_stream_unlink_locked(emudev_stream *s) {
    for (emudev_stream **p = &emudev_g.streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
}

/* Queued work still runs (the driver finishes it before releasing the stream); an open capture is dropped. */
CUresult CUDAAPI cuStreamDestroy(CUstream hs) {
    CUresult rc = emudev_enter("cuStreamDestroy", 1);
    if (rc) return rc;
    emudev_work *captured = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_stream *s = (emudev_stream *)emudev_reg_get(hs, EMUDEV_KIND_STREAM);
    if (s) {
        emudev_reg_remove(s);
        emudev_stream_unlink_locked(s);
        captured = s->cap_head;
        s->cap_head = s->cap_tail = NULL;
        s->capturing = 0;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (!s) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: %p is not a live stream", (void *)hs);
    emudev_work_list_free(captured);
    emudev_stream_drain(s);
    emudev_stat_add(EMUDEV_STAT_STREAMS, -1);
    emudev_obj_put(&s->o);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hs) {
    CUresult rc = emudev_enter("cuStreamSynchronize", 1);
    if (rc) return rc;
    emudev_stream *s = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    rc = emudev_stream_resolve_locked(hs, "cuStreamSynchronize", &s);
    if (!rc && s->capturing) {
        s->cap_invalid = 1;
        rc = EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                        "cuStreamSynchronize: the stream is capturing; the capture is invalidated");
    } else if (!rc && s == &emudev_legacy) {
        rc = emudev_capture_legacy_locked("cuStreamSynchronize");
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (rc) {
        emudev_obj_put(s ? &s->o : NULL);
        return rc;
    }
    emudev_stream_sync(s);
    emudev_obj_put(&s->o);
    return emudev_sticky("cuStreamSynchronize");
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream hs, CUstreamCaptureMode mode) {
    CUresult rc = emudev_enter("cuStreamBeginCapture", 1);
    if (rc) return rc;
    if (!hs || hs == CU_STREAM_LEGACY)
        return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamBeginCapture: the legacy stream cannot be captured");
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuStreamBeginCapture: mode %d", (int)mode);
    if ((rc = emudev_sticky("cuStreamBeginCapture"))) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_stream *s = (emudev_stream *)emudev_reg_get(hs, EMUDEV_KIND_STREAM);
    if (!s) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuStreamBeginCapture: %p is not a live stream", (void *)hs);
    else if (s->capturing) rc = EMUDEV_ERR(CUDA_ERROR_ILLEGAL_STATE, "cuStreamBeginCapture: the stream is already capturing");
    else {
        s->capturing = 1;
        s->cap_invalid = 0;
        s->cap_mode = mode;
        s->cap_thread = pthread_self();
        s->cap_head = s->cap_tail = NULL;
        s->cap_count = 0;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

static emudev_graph *emudev_graph_new(emudev_work *head, size_t count) {
    emudev_graph *gr = calloc(1, sizeof *gr);
    if (!gr) return NULL;
    gr->o.kind = EMUDEV_KIND_GRAPH;
    atomic_init(&gr->o.refs, 1);
    gr->head = head;
    gr->count = count;
    return gr;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hs, CUgraph *phGraph) {
    CUresult rc = emudev_enter("cuStreamEndCapture", 1);
    if (rc) return rc;
    if (!phGraph) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuStreamEndCapture: NULL pointer");
    emudev_work *nodes = NULL;
    size_t count = 0;
    int invalid = 0;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_stream *s = (emudev_stream *)emudev_reg_get(hs, EMUDEV_KIND_STREAM);
    if (!s) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuStreamEndCapture: %p is not a live stream", (void *)hs);
    else if (!s->capturing) rc = EMUDEV_ERR(CUDA_ERROR_ILLEGAL_STATE, "cuStreamEndCapture: the stream is not capturing");
    else if (s->cap_mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(s->cap_thread, pthread_self()))
        rc = EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                        "cuStreamEndCapture: a %s-mode capture must be ended by the thread that began it",
                        emudev_mode_name(s->cap_mode));
    else {
        nodes = s->cap_head;
        count = s->cap_count;
        invalid = s->cap_invalid;
        s->cap_head = s->cap_tail = NULL;
        s->cap_count = 0;
        s->capturing = 0;
        s->cap_invalid = 0;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (rc) return rc;
    *phGraph = NULL;
    if (invalid) {
        emudev_work_list_free(nodes);
        return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                          "cuStreamEndCapture: the capture was invalidated by an earlier prohibited call");
    }
    emudev_graph *gr = emudev_graph_new(nodes, count);
    pthread_mutex_lock(&emudev_g.mu);
    int bad = !gr || emudev_reg_add(&gr->o) != 0;
    pthread_mutex_unlock(&emudev_g.mu);
    if (bad) {
        if (gr) emudev_obj_free(&gr->o);
        else emudev_work_list_free(nodes);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamEndCapture: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_GRAPHS, 1);
    *phGraph = gr;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ graphs */

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phExec, CUgraph hGraph, unsigned long long flags) {
    CUresult rc = emudev_enter("cuGraphInstantiate", 1);
    if (rc) return rc;
    if (!phExec) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate: NULL pointer");
    const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (flags & ~known) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate: flags 0x%llx", flags);
    if ((rc = emudev_sticky("cuGraphInstantiate"))) return rc;
    emudev_graph *gr = (emudev_graph *)emudev_obj_ref(hGraph, EMUDEV_KIND_GRAPH);
    if (!gr) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphInstantiate: %p is not a live graph", (void *)hGraph);
    emudev_exec *x = calloc(1, sizeof *x);
    if (x) {
        x->o.kind = EMUDEV_KIND_EXEC;
        atomic_init(&x->o.refs, 1);
        pthread_mutex_init(&x->run_mu, NULL);
        x->nodes = gr->count ? calloc(gr->count, sizeof *x->nodes) : NULL;
        int ok = !gr->count || x->nodes;
        for (emudev_work *w = gr->head; w && ok; w = w->next)
            if ((x->nodes[x->count] = w->ops->clone(w))) x->count++;
            else ok = 0;
        pthread_mutex_lock(&emudev_g.mu);
        if (!ok || emudev_reg_add(&x->o) != 0) {
            emudev_obj_free(&x->o);
            x = NULL;
        }
        pthread_mutex_unlock(&emudev_g.mu);
    }
    emudev_obj_put(&gr->o);
    if (!x) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuGraphInstantiate: out of memory");
    emudev_stat_add(EMUDEV_STAT_GRAPH_EXECS, 1);
    *phExec = x;
    return CUDA_SUCCESS;
}

typedef struct emudev_launch_work {
    emudev_work w;
    emudev_exec *x;   /* referenced */
} emudev_launch_work;

static CUresult emudev_launch_run(emudev_work *w) {
    emudev_exec *x = ((emudev_launch_work *)w)->x;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&x->run_mu);
    for (size_t i = 0; i < x->count && rc == CUDA_SUCCESS; i++) rc = x->nodes[i]->ops->run(x->nodes[i]);
    pthread_mutex_unlock(&x->run_mu);
    emudev_stat_add(EMUDEV_STAT_GRAPH_LAUNCHES, 1);
    return rc;
}

static void emudev_launch_free(emudev_work *w) {
    emudev_obj_put(&((emudev_launch_work *)w)->x->o);
    free(w);
}

static emudev_work *emudev_launch_clone(const emudev_work *w) {
    emudev_launch_work *n = malloc(sizeof *n);
    if (!n) return NULL;
    *n = *(const emudev_launch_work *)w;
    n->w.next = NULL;
    emudev_obj_get(&n->x->o);
    return &n->w;
}

static const emudev_work_ops emudev_launch_ops = {"cuGraphLaunch", emudev_launch_run, emudev_launch_clone,
                                                  emudev_launch_free};

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hExec, CUstream hs) {
    CUresult rc = emudev_enter("cuGraphLaunch", 1);
    if (rc) return rc;
    emudev_exec *x = (emudev_exec *)emudev_obj_ref(hExec, EMUDEV_KIND_EXEC);
    if (!x) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphLaunch: %p is not a live graph exec", (void *)hExec);
    emudev_launch_work *lw = malloc(sizeof *lw);
    if (!lw) {
        emudev_obj_put(&x->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuGraphLaunch: out of memory");
    }
    *lw = (emudev_launch_work){{&emudev_launch_ops, NULL}, x};
    return emudev_submit_named(hs, &lw->w, "cuGraphLaunch");
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hExec) {
    CUresult rc = emudev_enter("cuGraphExecDestroy", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(hExec, EMUDEV_KIND_EXEC);
    if (o) emudev_reg_remove(o);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!o) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphExecDestroy: %p is not a live graph exec", (void *)hExec);
    emudev_stat_add(EMUDEV_STAT_GRAPH_EXECS, -1);
    emudev_obj_put(o);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    CUresult rc = emudev_enter("cuGraphDestroy", 0);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(hGraph, EMUDEV_KIND_GRAPH);
    if (o) emudev_reg_remove(o);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!o) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphDestroy: %p is not a live graph", (void *)hGraph);
    emudev_stat_add(EMUDEV_STAT_GRAPHS, -1);
    emudev_obj_put(o);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ events */

CUresult CUDAAPI cuEventCreate(CUevent *ph, unsigned int flags) {
    CUresult rc = emudev_enter("cuEventCreate", 1);
    if (rc) return rc;
    if (!ph) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: NULL pointer");
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS) ||
        ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: flags 0x%x", flags);
    if ((rc = emudev_sticky("cuEventCreate"))) return rc;
    emudev_event *e = calloc(1, sizeof *e);
    if (!e) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuEventCreate: out of memory");
    e->o.kind = EMUDEV_KIND_EVENT;
    atomic_init(&e->o.refs, 1);
    e->flags = flags;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_lock(&emudev_g.mu);
    int bad = emudev_reg_add(&e->o);
    pthread_mutex_unlock(&emudev_g.mu);
    if (bad) {
        emudev_obj_free(&e->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuEventCreate: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_EVENTS, 1);
    *ph = e;
    return CUDA_SUCCESS;
}

typedef struct emudev_record_work {
    emudev_work w;
    emudev_event *e;   /* referenced */
    uint64_t seq;
} emudev_record_work;

static CUresult emudev_record_run(emudev_work *w) {
    emudev_record_work *r = (emudev_record_work *)w;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&r->e->mu);
    if (r->seq > r->e->seq_done) r->e->seq_done = r->seq;
    if (r->seq == r->e->seq_recorded) r->e->stamp = now;
    pthread_mutex_unlock(&r->e->mu);
    return CUDA_SUCCESS;
}

static void emudev_record_free(emudev_work *w) {
    emudev_obj_put(&((emudev_record_work *)w)->e->o);
    free(w);
}

static emudev_work *emudev_record_clone(const emudev_work *w) {
    emudev_record_work *n = malloc(sizeof *n);
    if (!n) return NULL;
    *n = *(const emudev_record_work *)w;
    n->w.next = NULL;
    emudev_obj_get(&n->e->o);
    return &n->w;
}

static const emudev_work_ops emudev_record_ops = {"cuEventRecord", emudev_record_run, emudev_record_clone,
                                                  emudev_record_free};

/*
 * A record in a capturing stream adds no node (in CUDA it only orders
 * other captured work); the event becomes a "captured event" that cannot
 * be waited for or timed from the host.
 */
CUresult CUDAAPI cuEventRecord(CUevent he, CUstream hs) {
    CUresult rc = emudev_enter("cuEventRecord", 1);
    if (rc) return rc;
    if ((rc = emudev_sticky("cuEventRecord"))) return rc;
    emudev_event *e = (emudev_event *)emudev_obj_ref(he, EMUDEV_KIND_EVENT);
    if (!e) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord: %p is not a live event", (void *)he);
    emudev_stream *s;
    if ((rc = emudev_stream_resolve(hs, "cuEventRecord", &s))) {
        emudev_obj_put(&e->o);
        return rc;
    }
    int capturing = emudev_stream_capturing(s);
    emudev_record_work *r = capturing ? NULL : malloc(sizeof *r);
    if (!capturing && !r) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuEventRecord: out of memory");
    if (!rc) {
        pthread_mutex_lock(&e->mu);
        e->captured = capturing;
        if (!capturing) {
            emudev_obj_get(&s->o);
            emudev_obj_put(e->stream ? &e->stream->o : NULL);
            e->stream = s;
            *r = (emudev_record_work){{&emudev_record_ops, NULL}, e, ++e->seq_recorded};
            emudev_obj_get(&e->o);
        }
        pthread_mutex_unlock(&e->mu);
        if (r) {
            uint64_t seq = r->seq;
            rc = emudev_submit_named(hs, &r->w, "cuEventRecord");
            pthread_mutex_lock(&e->mu);
            if (rc && e->seq_recorded == seq) e->seq_recorded--;   /* refused: the event is as it was */
            pthread_mutex_unlock(&e->mu);
        }
    }
    emudev_obj_put(&s->o);
    emudev_obj_put(&e->o);
    return rc;
}

CUresult CUDAAPI cuEventSynchronize(CUevent he) {
    CUresult rc = emudev_enter("cuEventSynchronize", 1);
    if (rc) return rc;
    emudev_event *e = (emudev_event *)emudev_obj_ref(he, EMUDEV_KIND_EVENT);
    if (!e) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventSynchronize: %p is not a live event", (void *)he);
    pthread_mutex_lock(&e->mu);
    int captured = e->captured, pending = e->seq_done < e->seq_recorded;
    emudev_stream *s = pending ? e->stream : NULL;
    if (s) emudev_obj_get(&s->o);
    pthread_mutex_unlock(&e->mu);
    if (captured) rc = EMUDEV_ERR(CUDA_ERROR_CAPTURED_EVENT, "cuEventSynchronize: the event was last recorded in a capture");
    else if (s) emudev_stream_sync(s);
    emudev_obj_put(s ? &s->o : NULL);
    emudev_obj_put(&e->o);
    return rc ? rc : emudev_sticky("cuEventSynchronize");
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent hstart, CUevent hend) {
    CUresult rc = emudev_enter("cuEventElapsedTime", 1);
    if (rc) return rc;
    if (!ms) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuEventElapsedTime: NULL pointer");
    emudev_event *a = (emudev_event *)emudev_obj_ref(hstart, EMUDEV_KIND_EVENT);
    emudev_event *b = (emudev_event *)emudev_obj_ref(hend, EMUDEV_KIND_EVENT);
    if (!a || !b) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: not a live event");
    else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was created with CU_EVENT_DISABLE_TIMING");
    if (!rc) {
        pthread_mutex_lock(&a->mu);
        int a_rec = a->seq_recorded > 0, a_done = a->seq_done == a->seq_recorded, a_cap = a->captured;
        struct timespec ta = a->stamp;
        pthread_mutex_unlock(&a->mu);
        pthread_mutex_lock(&b->mu);
        int b_rec = b->seq_recorded > 0, b_done = b->seq_done == b->seq_recorded, b_cap = b->captured;
        struct timespec tb = b->stamp;
        pthread_mutex_unlock(&b->mu);
        if (a_cap || b_cap)
            rc = EMUDEV_ERR(CUDA_ERROR_CAPTURED_EVENT, "cuEventElapsedTime: an event was last recorded in a capture");
        else if (!a_rec || !b_rec) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was never recorded");
        else if (!a_done || !b_done) rc = EMUDEV_ERR(CUDA_ERROR_NOT_READY, "cuEventElapsedTime: an event has not completed yet");
        else *ms = (float)((double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e6);
    }
    emudev_obj_put(a ? &a->o : NULL);
    emudev_obj_put(b ? &b->o : NULL);
    return rc;
}

CUresult CUDAAPI cuEventDestroy(CUevent he) {
    CUresult rc = emudev_enter("cuEventDestroy", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_obj *o = emudev_reg_get(he, EMUDEV_KIND_EVENT);
    if (o) emudev_reg_remove(o);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!o) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy: %p is not a live event", (void *)he);
    emudev_stat_add(EMUDEV_STAT_EVENTS, -1);
    emudev_obj_put(o);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------ context destruction */

/*
 * The last primary-context release destroys everything created in it:
 * queued work is dropped unrun, every handle becomes invalid, all device
 * and pinned memory is freed, and the sticky error is cleared (this is how
 * a process recovers from a kernel fault on a GPU).
 */
static void emudev_context_destroy(void) {
    pthread_mutex_lock(&emudev_g.mu);
    size_t n = 0;
    emudev_obj **objs = emudev_g.reg_n ? malloc(emudev_g.reg_n * sizeof *objs) : NULL;
    for (size_t i = 0; objs && i < emudev_g.reg_cap; i++)
        if (emudev_g.reg[i]) objs[n++] = emudev_g.reg[i];
    free(emudev_g.reg);
    emudev_g.reg = NULL;
    emudev_g.reg_cap = emudev_g.reg_n = 0;
    emudev_g.streams = NULL;
    pthread_mutex_unlock(&emudev_g.mu);

    /* Queues and captures first: their work holds references to the other objects. */
    emudev_stream *legacy = &emudev_legacy;
    pthread_mutex_lock(&legacy->mu);
    emudev_work *lw = legacy->head;
    legacy->head = legacy->tail = NULL;
    pthread_mutex_unlock(&legacy->mu);
    emudev_work_list_free(lw);
    for (size_t i = 0; i < n; i++)
        if (objs[i]->kind == EMUDEV_KIND_STREAM) {
            emudev_stream *s = (emudev_stream *)objs[i];
            pthread_mutex_lock(&s->mu);
            emudev_work *w = s->head;
            s->head = s->tail = NULL;
            pthread_mutex_unlock(&s->mu);
            emudev_work_list_free(w);
            emudev_work_list_free(s->cap_head);
            s->cap_head = s->cap_tail = NULL;
            s->capturing = 0;
        }
    static const emudev_kind order[] = {EMUDEV_KIND_STREAM, EMUDEV_KIND_EXEC, EMUDEV_KIND_GRAPH, EMUDEV_KIND_EVENT,
                                        EMUDEV_KIND_MODULE};
    /* kinds are read before any put: a put may free an object another one still lists */
    emudev_kind *kinds = n ? malloc(n * sizeof *kinds) : NULL;
    for (size_t i = 0; kinds && i < n; i++) kinds[i] = objs[i]->kind;
    for (size_t k = 0; kinds && k < sizeof order / sizeof *order; k++)
        for (size_t i = 0; i < n; i++)
            if (kinds[i] == order[k]) emudev_obj_put(objs[i]);
    free(kinds);
    free(objs);

    pthread_mutex_lock(&emudev_g.mem_mu);
    for (size_t i = 0; i < emudev_g.dev.n; i++) free((void *)emudev_g.dev.v[i].base);
    for (size_t i = 0; i < emudev_g.host.n; i++) free((void *)emudev_g.host.v[i].base);
    free(emudev_g.dev.v);
    free(emudev_g.host.v);
    memset(&emudev_g.dev, 0, sizeof emudev_g.dev);
    memset(&emudev_g.host, 0, sizeof emudev_g.host);
    pthread_mutex_unlock(&emudev_g.mem_mu);

    static const emudev_stat cleared[] = {EMUDEV_STAT_ALLOCATIONS, EMUDEV_STAT_HOST_ALLOCATIONS, EMUDEV_STAT_BYTES,
                                          EMUDEV_STAT_MODULES,     EMUDEV_STAT_STREAMS,          EMUDEV_STAT_EVENTS,
                                          EMUDEV_STAT_GRAPHS,      EMUDEV_STAT_GRAPH_EXECS};
    for (size_t i = 0; i < sizeof cleared / sizeof *cleared; i++) atomic_store(&emudev_g.stats[cleared[i]], 0);
    pthread_mutex_lock(&emudev_g.mu);
    atomic_store(&emudev_g.sticky, 0);
    emudev_g.sticky_text[0] = '\0';
    pthread_mutex_unlock(&emudev_g.mu);
}

/* ------------------------------------------------------------ control API */

void bertc_emudev_set_arch(int major, int minor) {
    atomic_store(&emudev_g.arch_major, major);
    atomic_store(&emudev_g.arch_minor, minor);
}

int bertc_emudev_add_twins(const void *image, size_t size) {
    emudev_image_info info;
    memset(&info, 0, sizeof info);
    if (!image || emudev_image_inspect(image, size, &info) != 0) return -1;
    emudev_image_kind kind = info.kind;
    emudev_image_info_free(&info);
    if (kind != EMUDEV_IMAGE_EMU) return -1;
    emudev_twin *t = calloc(1, sizeof *t);
    char why[512];
    if (!t || !(t->image = emudev_image_load(image, size, &t->fd, why, sizeof why))) {
        free(t);
        return -1;
    }
    pthread_mutex_lock(&emudev_g.mu);
    t->next = emudev_g.twins;
    emudev_g.twins = t;
    pthread_mutex_unlock(&emudev_g.mu);
    return 0;
}

void bertc_emudev_fail(const char *name, int nth, int code) {
    if (!name) return;
    pthread_mutex_lock(&emudev_g.fail_mu);
    emudev_injection *slot = NULL;
    for (int i = 0; i < EMUDEV_MAX_INJECTIONS; i++) {
        emudev_injection *in = &emudev_g.inj[i];
        if (in->remaining && strcmp(in->name, name) == 0) {
            slot = in;
            break;
        }
        if (!in->remaining && !slot) slot = in;
    }
    if (slot) {
        int was = slot->remaining != 0, now = nth > 0;
        snprintf(slot->name, sizeof slot->name, "%s", name);
        slot->remaining = now ? nth : 0;
        slot->code = code;
        atomic_fetch_add(&emudev_g.armed, now - was);
    }
    pthread_mutex_unlock(&emudev_g.fail_mu);
}

void bertc_emudev_set_fill(int byte) { atomic_store(&emudev_g.fill, byte & 0xff); }

void bertc_emudev_set_null(int on) { atomic_store(&emudev_g.null_mode, on != 0); }

void bertc_emudev_set_schedule(int schedule, uint64_t seed) {
    if (schedule >= 0 && schedule < EMU_SCHEDULE_COUNT) atomic_store(&emudev_g.schedule, schedule);
    atomic_store(&emudev_g.seed, seed);
}

/* Twins are freed: only call this when no module bound to them is loaded. */
void bertc_emudev_reset(void) {
    emudev_settings_from_env();
    pthread_mutex_lock(&emudev_g.fail_mu);
    memset(emudev_g.inj, 0, sizeof emudev_g.inj);
    atomic_store(&emudev_g.armed, 0);
    pthread_mutex_unlock(&emudev_g.fail_mu);
    pthread_mutex_lock(&emudev_g.mu);
    emudev_twin *t = emudev_g.twins;
    emudev_g.twins = NULL;
    pthread_mutex_unlock(&emudev_g.mu);
    while (t) {
        emudev_twin *next = t->next;
        emudev_image_release(t->image, t->fd);
        free(t);
        t = next;
    }
}

void bertc_emudev_get_stats(bertc_emudev_stats *out) {
    if (!out) return;
    long v[EMUDEV_STAT_COUNT];
    for (int i = 0; i < EMUDEV_STAT_COUNT; i++) v[i] = atomic_load(&emudev_g.stats[i]);
    *out = (bertc_emudev_stats){
        .live_allocations = v[EMUDEV_STAT_ALLOCATIONS],
        .live_host_allocations = v[EMUDEV_STAT_HOST_ALLOCATIONS],
        .live_bytes = v[EMUDEV_STAT_BYTES],
        .live_modules = v[EMUDEV_STAT_MODULES],
        .live_streams = v[EMUDEV_STAT_STREAMS],
        .live_events = v[EMUDEV_STAT_EVENTS],
        .live_graphs = v[EMUDEV_STAT_GRAPHS],
        .live_graph_execs = v[EMUDEV_STAT_GRAPH_EXECS],
        .live_primary_retains = v[EMUDEV_STAT_PRIMARY_RETAINS],
        .live_blaslt_objects = v[EMUDEV_STAT_BLASLT_OBJECTS],
        .kernel_launches = v[EMUDEV_STAT_KERNEL_LAUNCHES],
        .matmuls = v[EMUDEV_STAT_MATMULS],
        .graph_launches = v[EMUDEV_STAT_GRAPH_LAUNCHES],
        .copies = v[EMUDEV_STAT_COPIES],
    };
}

const char *bertc_emudev_last_error(void) { return emudev_tls_error; }
