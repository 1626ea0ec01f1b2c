/*
 * lower_arena — offsets of the activation buffers in one arena per bucket.
 *
 * The lowering walks the graph in order and releases a buffer right after
 * its last reader (liveness is computed once per bucket in lower.c), so the
 * arena is a first-fit allocator over a free list kept sorted by offset,
 * with neighbours coalesced on release.  It is deterministic (the same
 * graph gives the same offsets) and, for an encoder's chain of same-sized
 * activations, reuses two or three buffers over and over: the arena of a
 * 12-layer model is a few activations, not 12 × 7 of them.
 */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

int lower_arena_init(lower_arena *a, int cap) {
    memset(a, 0, sizeof *a);
    a->cap = cap < 1 ? 1 : cap;
    a->free_off = malloc((size_t)a->cap * sizeof *a->free_off);
    a->free_len = malloc((size_t)a->cap * sizeof *a->free_len);
    return a->free_off && a->free_len ? 0 : -1;
}

void lower_arena_free(lower_arena *a) {
    free(a->free_off);
    free(a->free_len);
    memset(a, 0, sizeof *a);
}

uint64_t lower_arena_alloc(lower_arena *a, uint64_t size) {
    size = lower_align_up(size);
    for (int i = 0; i < a->nfree; i++) {
        if (a->free_len[i] >= size) {
            uint64_t off = a->free_off[i];
            a->free_off[i] += size;
            a->free_len[i] -= size;
            return off;
        }
    }
    /* Grow the top, merging with a free block that ends at the top. */
    uint64_t off;
    if (a->nfree && a->free_off[a->nfree - 1] + a->free_len[a->nfree - 1] == a->top) {
        off = a->free_off[a->nfree - 1];
        a->nfree--;
    } else {
        off = a->top;
    }
    a->top = off + size;
    return off;
}

static void lower_arena_remove(lower_arena *a, int j) {
    memmove(a->free_off + j, a->free_off + j + 1, (size_t)(a->nfree - j - 1) * sizeof *a->free_off);
    memmove(a->free_len + j, a->free_len + j + 1, (size_t)(a->nfree - j - 1) * sizeof *a->free_len);
    a->nfree--;
}

/* The free list never holds more blocks than buffers were allocated, and
 * there are at most as many buffers as graph nodes (the capacity). */
void lower_arena_release(lower_arena *a, uint64_t off, uint64_t size) {
    size = lower_align_up(size);
    int i = 0;
    while (i < a->nfree && a->free_off[i] < off) i++;
    memmove(a->free_off + i + 1, a->free_off + i, (size_t)(a->nfree - i) * sizeof *a->free_off);
    memmove(a->free_len + i + 1, a->free_len + i, (size_t)(a->nfree - i) * sizeof *a->free_len);
    a->free_off[i] = off;
    a->free_len[i] = size;
    a->nfree++;
    for (int j = 0; j + 1 < a->nfree;) {
        if (a->free_off[j] + a->free_len[j] == a->free_off[j + 1]) {
            a->free_len[j] += a->free_len[j + 1];
            lower_arena_remove(a, j + 1);
        } else {
            j++;
        }
    }
}
