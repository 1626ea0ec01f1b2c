/*
 * emudev_stream — streams: the queue of deferred work and its drain,
 * submission, and stream capture with its interaction rules.
 *
 * Work is deferred.  Launches, copies, event records and matmuls become
 * `emudev_work` items queued on their stream and executed, in order, only
 * at a synchronisation point, by the thread that synchronises.  A runtime
 * that reads a result before synchronising reads the fill byte (NaN), not a
 * lucky answer; one that changes a kernel argument after the launch changes
 * nothing, because argument values are copied at launch (and at capture),
 * as the driver copies them (emudev_module.c).  Synchronisation follows the
 * driver's ordering: the legacy stream waits for every blocking stream, and
 * a blocking stream for the legacy stream's earlier work.
 *
 * Stream capture enforces the documented interaction rules (global,
 * thread-local and relaxed modes; the legacy stream's implicit
 * synchronisation with blocking streams), because those are exactly the
 * rules a runtime breaks without noticing until a graph is captured on a
 * GPU under load.  A prohibited call invalidates the captures it offends,
 * as the driver does, and cuStreamEndCapture then answers
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.  Captured work becomes the node
 * list of a graph: emudev_stream_capture_end hands it to cuStreamEndCapture
 * in emudev_graph.c, so that streams need not know graphs (graphs are
 * launched on streams, and the files must not call each other).
 *
 * cuStreamGetCaptureInfo reports a capture's state the CUDA 12.3 way:
 * status, sequence id, and the node the next captured work will depend on
 * (the last one recorded; a capture here is one stream's linear list).
 *
 * Threads: capture state and the stream list are under emudev_g.mu; each
 * stream has its own mutex for its queue and a `draining` flag so that
 * only one thread executes a stream's queue at a time, while different
 * streams execute concurrently on their own threads.  No lock is held
 * while work runs, and a thread never waits for a second stream's drain
 * while holding the first, so draining cannot deadlock.
 */
#include <stdlib.h>
#include <string.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ capture rules (under emudev_g.mu) */

static const char *emudev_mode_name(CUstreamCaptureMode m) {
    return m == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread-local"
                                                                                                    : "relaxed";
}

/* The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode). */
static _Thread_local CUstreamCaptureMode emudev_thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    CUresult rc = emudev_enter("cuThreadExchangeStreamCaptureMode", 0);
    if (rc) return rc;
    if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuThreadExchangeStreamCaptureMode: not a capture mode");
    CUstreamCaptureMode old = emudev_thread_mode;
    emudev_thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/*
 * A potentially unsafe call (one that may synchronise implicitly) is
 * prohibited as cuThreadExchangeStreamCaptureMode documents it, by the
 * calling thread's mode: in global mode (the default) while the thread
 * has a capture of its own that is not relaxed or any other thread has a
 * global-mode capture; in thread-local mode only while it has one of its
 * own; never in relaxed mode.  The offending captures are invalidated, as
 * the driver invalidates them.
 */
CUresult emudev_capture_unsafe_locked(const char *name) {
    pthread_t self = pthread_self();
    CUstreamCaptureMode tm = emudev_thread_mode;
    const char *mode = NULL;
    for (emudev_stream *s = emudev_g.streams; s; s = s->next) {
        if (!s->capturing || tm == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
        int own = pthread_equal(s->cap_thread, self);
        if ((own && s->cap_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!own && tm == CU_STREAM_CAPTURE_MODE_GLOBAL && s->cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            s->cap_invalid = 1;
            mode = emudev_mode_name(s->cap_mode);
        }
    }
    if (!mode) return CUDA_SUCCESS;
    return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                      "%s: potentially unsafe call while a %s-mode stream capture is active; the capture is invalidated",
                      name, mode);
}

CUresult emudev_capture_unsafe(const char *name) {
    pthread_mutex_lock(&emudev_g.mu);
    CUresult rc = emudev_capture_unsafe_locked(name);
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

/* Work on the legacy stream waits for every blocking stream: not allowed while one captures (any mode). */
CUresult emudev_capture_legacy_locked(const char *name) {
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

int emudev_stream_capturing(emudev_stream *s) {
    pthread_mutex_lock(&emudev_g.mu);
    int c = s->capturing;
    pthread_mutex_unlock(&emudev_g.mu);
    return c;
}

/* Ends s's capture, if any, and takes the work it recorded (the caller
 * frees it); under emudev_g.mu wherever other threads can see s. */
emudev_work *emudev_stream_capture_take(emudev_stream *s) {
    emudev_work *w = s->cap_head;
    s->cap_head = s->cap_tail = NULL;
    s->capturing = 0;
    return w;
}

/* ------------------------------------------------------------ streams: queue and drain */

/* Resolves a stream handle under emudev_g.mu, taking a reference. */
CUresult emudev_stream_resolve_locked(CUstream h, const char *name, emudev_stream **out) {
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

CUresult emudev_stream_resolve(CUstream h, const char *name, emudev_stream **out) {
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
void emudev_stream_drain(emudev_stream *s) {
    pthread_mutex_lock(&s->mu);
    while (s->draining) pthread_cond_wait(&s->cv, &s->mu);
    s->draining = 1;
    emudev_work *w;
    while ((w = s->head)) {
        s->head = w->next;
        if (!s->head) s->tail = NULL;
        /* the next item stays queued (only the drainer takes items out);
         * a programmatic dependent starts early (emudev_work_ops) */
        emudev_work *next = s->head;
        pthread_mutex_unlock(&s->mu);
        w->next = NULL;
        if (!atomic_load(&emudev_g.sticky)) {
            CUresult rc = next && next->ops->start_early ? next->ops->start_early(next, w) : CUDA_SUCCESS;
            if (rc == CUDA_SUCCESS) rc = w->ops->run(w);
            if (rc != CUDA_SUCCESS) emudev_sticky_set(rc);
        }
        w->ops->free(w);
        pthread_mutex_lock(&s->mu);
    }
    s->draining = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Under s->mu, so that it cannot race a drain. */
emudev_work *emudev_stream_queue_take(emudev_stream *s) {
    pthread_mutex_lock(&s->mu);
    emudev_work *w = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    return w;
}

/* Drains every stream (blocking_only: those the legacy stream synchronises with), then the legacy stream. */
void emudev_streams_drain(int blocking_only) {
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
void emudev_stream_sync(emudev_stream *s) {
    if (s == &emudev_legacy) {
        emudev_streams_drain(1);
        return;
    }
    if (!(s->flags & CU_STREAM_NON_BLOCKING)) emudev_stream_drain(&emudev_legacy);
    emudev_stream_drain(s);
}

/* Queues or records w; the caller has run emudev_should_fail for its own name. */
CUresult emudev_submit_named(CUstream h, emudev_work *w, const char *name) {
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

/* ------------------------------------------------------------ streams */

static void emudev_stream_free(emudev_obj *o) {
    emudev_stream *s = (emudev_stream *)o;
    emudev_work_list_free(s->head);
    emudev_work_list_free(s->cap_head);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags) {
    CUresult rc = emudev_enter_result("cuStreamCreate", 1, ph);
    if (rc) return rc;
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuStreamCreate: flags 0x%x", flags);
    if ((rc = emudev_sticky("cuStreamCreate"))) return rc;
    emudev_stream *s = emudev_obj_new(sizeof *s, EMUDEV_KIND_STREAM, emudev_stream_free);
    if (!s) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate: out of memory");
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
        captured = emudev_stream_capture_take(s);
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
        static uint64_t capture_ids;   /* under emudev_g.mu */
        s->capturing = 1;
        s->cap_id = ++capture_ids;
        s->cap_invalid = 0;
        s->cap_mode = mode;
        s->cap_thread = pthread_self();
        s->cap_head = s->cap_tail = NULL;
        s->cap_count = 0;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

CUresult emudev_stream_capture_end(CUstream hs, emudev_work **nodes, size_t *count, int *invalid) {
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_stream *s = (emudev_stream *)emudev_reg_get(hs, EMUDEV_KIND_STREAM);
    if (!s) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuStreamEndCapture: %p is not a live stream", (void *)hs);
    else if (!s->capturing) rc = EMUDEV_ERR(CUDA_ERROR_ILLEGAL_STATE, "cuStreamEndCapture: the stream is not capturing");
    else if (s->cap_mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(s->cap_thread, pthread_self()))
        rc = EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                        "cuStreamEndCapture: a %s-mode capture must be ended by the thread that began it",
                        emudev_mode_name(s->cap_mode));
    else {
        *count = s->cap_count;
        *invalid = s->cap_invalid;
        *nodes = emudev_stream_capture_take(s);
        s->cap_count = 0;
        s->cap_invalid = 0;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    return rc;
}

/*
 * The capture state of a stream, CUDA 12.3's form.  A capture here is one
 * stream's linear list, so the captured work's dependencies are the last
 * node recorded (none right after the capture began), with ordinary edges.
 * The graph being captured comes into existence only at
 * cuStreamEndCapture, so graph_out is refused rather than answered wrong.
 */
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hs, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                        const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps) {
    static const char fn[] = "cuStreamGetCaptureInfo";
    CUresult rc = emudev_enter_result(fn, 1, status);
    if (rc) return rc;
    if (graph) return EMUDEV_ERR(CUDA_ERROR_NOT_SUPPORTED, "%s: graph_out is not emulated; pass NULL", fn);
    if (edges && !deps) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: edgeData_out without dependencies_out", fn);
    emudev_stream *s = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    rc = emudev_stream_resolve_locked(hs, fn, &s);
    if (!rc && s == &emudev_legacy) rc = emudev_capture_legacy_locked(fn);
    if (!rc) {
        *status = !s->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
                  : s->cap_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (*status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            s->cap_dep = (CUgraphNode)s->cap_tail;
            memset(&s->cap_edge, 0, sizeof s->cap_edge);
            if (id) *id = s->cap_id;
            if (deps) *deps = &s->cap_dep;
            if (edges) *edges = &s->cap_edge;
            if (ndeps) *ndeps = s->cap_tail ? 1 : 0;
        }
    }
    pthread_mutex_unlock(&emudev_g.mu);
    emudev_obj_put(s ? &s->o : NULL);
    return rc;
}
