/*
 * tokmap — token text to id, for every tokenizer model and for the
 * importer that checks merges and added tokens against a vocabulary.
 *
 * An open-addressing table of ids keyed by FNV-1a of the text, at most half
 * full.  Ids are inserted in increasing order and an equal text re-points
 * its slot, so the last of several equal entries wins, as a Python dict or
 * a Rust HashMap built from the file does.  Lookups can hash a prefix and
 * a piece separately (WordPiece's "##" + piece) without building the
 * string, and take the hash from the caller, who can compute the hashes of
 * all a word's prefixes in one pass.
 */
#include <stdlib.h>
#include <string.h>

#include "tokmap.h"

int tokmap_init(tokmap *t, const char *const *text, const uint32_t *len, int32_t n) {
    memset(t, 0, sizeof *t);
    size_t nslots = 16;
    while (nslots < (size_t)n * 2) nslots *= 2;
    t->slot_id = malloc(nslots * sizeof *t->slot_id);
    t->slot_hash = malloc(nslots * sizeof *t->slot_hash);
    if (!t->slot_id || !t->slot_hash) {
        tokmap_free(t);
        return -1;
    }
    memset(t->slot_id, 0xff, nslots * sizeof *t->slot_id);
    t->mask = (uint32_t)(nslots - 1);
    t->text = text;
    t->len = len;
    for (int32_t id = 0; id < n; id++) {
        uint32_t h = tokmap_hash(TOKMAP_FNV_BASIS, text[id], len[id]);
        for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
            int32_t o = t->slot_id[i];
            if (o < 0 || (t->slot_hash[i] == h && len[o] == len[id] && (len[id] == 0 || memcmp(text[o], text[id], len[id]) == 0))) {
                t->slot_id[i] = id;
                t->slot_hash[i] = h;
                break;
            }
        }
    }
    return 0;
}

void tokmap_free(tokmap *t) {
    free(t->slot_id);
    free(t->slot_hash);
    memset(t, 0, sizeof *t);
}

int32_t tokmap_find(const tokmap *t, uint32_t h, const char *prefix, size_t plen, const char *s, size_t n) {
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        int32_t id = t->slot_id[i];
        if (id < 0) return -1;
        if (t->slot_hash[i] != h || t->len[id] != plen + n) continue;
        const char *k = t->text[id];
        if ((plen == 0 || memcmp(k, prefix, plen) == 0) && (n == 0 || memcmp(k + plen, s, n) == 0)) return id;
    }
}

int32_t tokmap_get(const tokmap *t, const char *s, size_t n) {
    return tokmap_find(t, tokmap_hash(TOKMAP_FNV_BASIS, s, n), NULL, 0, s, n);
}
