/*
 * emu_async — the in-flight cp.async copies of one CUDA thread
 * (emu_async.h has the design).
 */
#include "emu_async.h"

#include <stdlib.h>
#include <string.h>

void emu_async_reset(emu_async_queue *q) {
    q->n = 0;
    q->committed = 0;
}

int emu_async_issue(emu_async_queue *q, void *dst, const void *src, unsigned bytes) {
    if (q->n == q->cap) {
        unsigned cap = q->cap ? 2u * q->cap : 32u;
        emu_async_copy *c = realloc(q->copies, (size_t)cap * sizeof *c);
        if (!c) return -1;
        q->copies = c;
        q->cap = cap;
    }
    q->copies[q->n++] = (emu_async_copy){dst, src, bytes, q->committed};
    q->issued++;
    memset(dst, 0xff, bytes);
    return 0;
}

void emu_async_commit(emu_async_queue *q) { q->committed++; }

/* Lands the copies of groups below `group`, keeps the others in order. */
static void emu_async_land_below(emu_async_queue *q, unsigned group) {
    unsigned keep = 0;
    for (unsigned i = 0; i < q->n; i++) {
        emu_async_copy *c = &q->copies[i];
        if (c->group < group) {
            if (c->src) memcpy(c->dst, c->src, c->bytes);
            else memset(c->dst, 0, c->bytes);
            q->landed++;
        } else {
            q->copies[keep++] = *c;
        }
    }
    q->n = keep;
}

void emu_async_wait(emu_async_queue *q, unsigned n) {
    if (n < q->committed) emu_async_land_below(q, q->committed - n);
}

void emu_async_drain(emu_async_queue *q) { emu_async_land_below(q, ~0u); }

void emu_async_free(emu_async_queue *q) {
    free(q->copies);
    q->copies = NULL;
    q->n = q->cap = 0;
}
