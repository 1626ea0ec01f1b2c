/*
 * tokmap — token text to id (see tokmap.c): an open-addressing table over
 * texts the caller keeps, the last of equal texts winning.
 */
#ifndef BERTC_TOKMAP_H
#define BERTC_TOKMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokmap {
    int32_t *slot_id;           /* -1 = empty */
    uint32_t *slot_hash;
    uint32_t mask;
    const char *const *text;    /* id -> text (not copied) */
    const uint32_t *len;        /* id -> bytes */
} tokmap;

#define TOKMAP_FNV_BASIS 2166136261u
static inline uint32_t tokmap_hash(uint32_t h, const void *s, size_t n) {
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Ids 0..n-1 inserted in order, so a later equal text wins.  -1: out of memory. */
int tokmap_init(tokmap *t, const char *const *text, const uint32_t *len, int32_t n);
void tokmap_free(tokmap *t);
/* Id of the text prefix[0..plen) + s[0..n), whose FNV-1a hash (from TOKMAP_FNV_BASIS) is h; -1 if absent. */
int32_t tokmap_find(const tokmap *t, uint32_t h, const char *prefix, size_t plen, const char *s, size_t n);
int32_t tokmap_get(const tokmap *t, const char *s, size_t n);

#endif
