/*
 * emudev_event — events: records as stream work, host synchronisation,
 * and elapsed time.
 *
 * An event counts the records issued (seq_recorded, at cuEventRecord) and
 * the records executed (seq_done, when the record's work item runs at the
 * stream's synchronisation); it is complete when the two agree, and its
 * time stamp is taken when the latest record runs.  Because work is
 * deferred until a synchronisation point, a runtime that asks for the time
 * between events it has not synchronised with gets CUDA_ERROR_NOT_READY,
 * here every time rather than only on a GPU under load.
 * cuEventSynchronize synchronises the stream of the latest record, in the
 * driver's order (emudev_stream.c).
 *
 * A record in a capturing stream adds no node; the event becomes a
 * "captured event", which the host can neither wait for nor time
 * (CUDA_ERROR_CAPTURED_EVENT), as the driver documents.
 */
#include <stdlib.h>
#include <time.h>

#include "emudev_internal.h"

static void emudev_event_free(emudev_obj *o) {
    emudev_event *e = (emudev_event *)o;
    emudev_obj_put(e->stream ? &e->stream->o : NULL);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

CUresult CUDAAPI cuEventCreate(CUevent *ph, unsigned int flags) {
    CUresult rc = emudev_enter_result("cuEventCreate", 1, ph);
    if (rc) return rc;
    if (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS) ||
        ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: flags 0x%x", flags);
    if ((rc = emudev_sticky("cuEventCreate"))) return rc;
    emudev_event *e = emudev_obj_new(sizeof *e, EMUDEV_KIND_EVENT, emudev_event_free);
    if (!e) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuEventCreate: out of memory");
    e->flags = flags;
    pthread_mutex_init(&e->mu, NULL);
    if (emudev_obj_register(&e->o) != 0) {
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

static void emudev_record_free(emudev_work *w) { emudev_work_free_holding(w, &((emudev_record_work *)w)->e->o); }

static emudev_work *emudev_record_clone(const emudev_work *w) {
    return emudev_work_copy_holding(w, sizeof(emudev_record_work), &((const emudev_record_work *)w)->e->o);
}

static const emudev_work_ops emudev_record_ops = {"cuEventRecord", emudev_record_run, emudev_record_clone,
                                                  emudev_record_free, NULL, NULL, NULL, NULL};

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

/* What cuEventElapsedTime needs of one event, read at one instant. */
typedef struct emudev_event_view {
    int recorded, done, captured;
    struct timespec stamp;
} emudev_event_view;

static void emudev_event_look(emudev_event *e, emudev_event_view *v) {
    pthread_mutex_lock(&e->mu);
    v->recorded = e->seq_recorded > 0;
    v->done = e->seq_done == e->seq_recorded;
    v->captured = e->captured;
    v->stamp = e->stamp;
    pthread_mutex_unlock(&e->mu);
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent hstart, CUevent hend) {
    CUresult rc = emudev_enter_result("cuEventElapsedTime", 1, ms);
    if (rc) return rc;
    emudev_event *a = (emudev_event *)emudev_obj_ref(hstart, EMUDEV_KIND_EVENT);
    emudev_event *b = (emudev_event *)emudev_obj_ref(hend, EMUDEV_KIND_EVENT);
    if (!a || !b) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: not a live event");
    else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was created with CU_EVENT_DISABLE_TIMING");
    if (!rc) {
        emudev_event_view va, vb;
        emudev_event_look(a, &va);
        emudev_event_look(b, &vb);
        struct timespec ta = va.stamp, tb = vb.stamp;
        if (va.captured || vb.captured)
            rc = EMUDEV_ERR(CUDA_ERROR_CAPTURED_EVENT, "cuEventElapsedTime: an event was last recorded in a capture");
        else if (!va.recorded || !vb.recorded)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event was never recorded");
        else if (!va.done || !vb.done)
            rc = EMUDEV_ERR(CUDA_ERROR_NOT_READY, "cuEventElapsedTime: an event has not completed yet");
        else *ms = (float)((double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e6);
    }
    emudev_obj_put(a ? &a->o : NULL);
    emudev_obj_put(b ? &b->o : NULL);
    return rc;
}

CUresult CUDAAPI cuEventDestroy(CUevent he) {
    CUresult rc = emudev_enter("cuEventDestroy", 1);
    if (rc) return rc;
    return emudev_obj_destroy("cuEventDestroy", he, EMUDEV_KIND_EVENT, "event", EMUDEV_STAT_EVENTS);
}
