/*
 * tok_bpe — BPE by merge rank, as tokenizers' BPE::merge_word + merge_all.
 *
 * A word starts as one symbol per character (its one-character token;
 * byte-level words are made of the 256 byte characters, all in a RoBERTa
 * vocabulary).  A character without a token becomes "<0xXX>" byte tokens
 * with byte_fallback, else the unknown token (consecutive unknowns fused
 * with fuse_unk), else nothing — and HF's order is kept exactly: a pending
 * unknown is only written when the next known character (or the word's
 * end) arrives, after any byte tokens in between.  Then the adjacent pair
 * of lowest merge rank (the leftmost of equals) is merged until no pair has
 * a merge: a min-heap of (rank, position) with stale entries skipped, as
 * HF's merge_all, so a hostile 100,000-character word costs n log n, not n².
 *
 * ignore_merges: a word that is itself a vocabulary entry is one token.
 */
#include <stdlib.h>

#include "tokenizer.h"

typedef struct tok_sym {
    int32_t id;
    uint32_t len;           /* bytes of the normalised word it covers */
    int32_t prev, next;     /* -1: none */
    int live;
} tok_sym;

typedef struct tok_cand {
    uint64_t key;           /* rank << 32 | position: the smallest first */
    int32_t id;             /* the merged id when it was queued (HF checks this, not the rank) */
} tok_cand;

/* ---- the merge table: (left, right) -> (rank, merged id), a later equal pair wins ---- */

static uint32_t tok_merge_slot(const tok_merge_table *m, uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & m->mask;
}

int tok_merges_build(tok_merge_table *m, const tokdesc *d) {
    size_t n = 16;
    while (n < (size_t)d->nmerges * 2) n *= 2;
    m->key = calloc(n, sizeof *m->key);
    m->rank = malloc(n * sizeof *m->rank);
    m->id = malloc(n * sizeof *m->id);
    if (!m->key || !m->rank || !m->id) return -1;
    m->mask = (uint32_t)(n - 1);
    for (int32_t r = 0; r < d->nmerges; r++) {
        uint64_t key = ((uint64_t)(uint32_t)d->merges[3 * r] << 32 | (uint32_t)d->merges[3 * r + 1]) + 1;
        uint32_t i = tok_merge_slot(m, key);
        while (m->key[i] && m->key[i] != key) i = (i + 1) & m->mask;
        m->key[i] = key;
        m->rank[i] = r;
        m->id[i] = d->merges[3 * r + 2];
    }
    return 0;
}

void tok_merges_free(tok_merge_table *m) {
    free(m->key);
    free(m->rank);
    free(m->id);
    m->key = NULL;
    m->rank = m->id = NULL;
}

/* Rank of merging (a, b), -1 if there is none; *id the result. */
static int32_t tok_merge_find(const tok_merge_table *m, int32_t a, int32_t b, int32_t *id) {
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (uint32_t i = tok_merge_slot(m, key); m->key[i]; i = (i + 1) & m->mask)
        if (m->key[i] == key) {
            *id = m->id[i];
            return m->rank[i];
        }
    return -1;
}

/* ---- the heap of candidate merges ---- */

static void tok_heap_push(tok_cand *h, size_t *n, uint64_t key, int32_t id) {
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2].key > key) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = (tok_cand){key, id};
}

static tok_cand tok_heap_pop(tok_cand *h, size_t *n) {
    tok_cand top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1].key < h[c].key) c++;
        if (h[c].key >= v.key) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = v;
    return top;
}

static int tok_sym_add(tok_scratch *s, size_t *n, int32_t id, uint32_t len) {
    if (tok_reserve((void **)&s->sym, &s->sym_cap, *n + 1, sizeof *s->sym)) return -1;
    s->sym[*n] = (tok_sym){id, len, (int32_t)*n - 1, -1, 1};
    if (*n) s->sym[*n - 1].next = (int32_t)*n;
    (*n)++;
    return 0;
}

/* merge_word's first half: the word's symbols, with HF's unknown and byte-fallback rules. */
static int tok_bpe_symbols(const tokenizer *t, tok_scratch *s, const tok_unit *u, const tok_span *w, size_t *n) {
    int pending = 0;        /* an unknown of unk_len bytes waits for the next known character */
    uint32_t unk_len = 0;
    int fuse = (t->desc->flags & TOKDESC_FLAG_FUSE_UNK) != 0;
    *n = 0;
    for (size_t i = w->b; i < w->e; i++) {
        char b[4];
        uint32_t nb = (uint32_t)tok_utf8_encode(u[i].c, b);
        int32_t id = u[i].c < 0x800 ? t->char_id[u[i].c] : tokmap_get(&t->vocab, b, nb);
        if (id >= 0) {
            if (pending && tok_sym_add(s, n, t->unk_id, unk_len)) return -1;
            pending = 0;
            if (tok_sym_add(s, n, id, nb)) return -1;
            continue;
        }
        if (t->desc->flags & TOKDESC_FLAG_BYTE_FALLBACK) {
            uint32_t k = 0;
            while (k < nb && t->byte_id[(uint8_t)b[k]] >= 0) k++;
            if (k == nb) {
                for (k = 0; k < nb; k++)
                    if (tok_sym_add(s, n, t->byte_id[(uint8_t)b[k]], 1)) return -1;
                continue;
            }
        }
        if (t->unk_id < 0) continue;
        if (pending && fuse) {
            unk_len += nb;
            continue;
        }
        if (pending && tok_sym_add(s, n, t->unk_id, unk_len)) return -1;
        pending = 1;
        unk_len = nb;
    }
    if (pending && tok_sym_add(s, n, t->unk_id, unk_len)) return -1;
    return 0;
}

/* merge_all. */
static int tok_bpe_merge(const tokenizer *t, tok_scratch *s, size_t n) {
    if (tok_reserve((void **)&s->heap, &s->heap_cap, 3 * n + 2, sizeof(tok_cand))) return -1;
    tok_cand *h = (tok_cand *)s->heap;
    size_t hn = 0;
    int32_t id;
    for (size_t i = 0; i + 1 < n; i++) {
        int32_t r = tok_merge_find(&t->merges, s->sym[i].id, s->sym[i + 1].id, &id);
        if (r >= 0) tok_heap_push(h, &hn, (uint64_t)r << 32 | i, id);
    }
    while (hn) {
        tok_cand top = tok_heap_pop(h, &hn);
        size_t pos = (size_t)(uint32_t)top.key;
        tok_sym *a = &s->sym[pos];
        if (!a->live || a->next < 0) continue;
        tok_sym *b = &s->sym[a->next];
        if (tok_merge_find(&t->merges, a->id, b->id, &id) < 0 || id != top.id) continue;   /* stale */
        a->id = id;
        a->len += b->len;
        a->next = b->next;
        b->live = 0;
        if (a->next >= 0) s->sym[a->next].prev = (int32_t)pos;
        int32_t r;
        if (a->prev >= 0 && (r = tok_merge_find(&t->merges, s->sym[a->prev].id, a->id, &id)) >= 0)
            tok_heap_push(h, &hn, (uint64_t)r << 32 | (uint32_t)a->prev, id);
        if (a->next >= 0 && (r = tok_merge_find(&t->merges, a->id, s->sym[a->next].id, &id)) >= 0)
            tok_heap_push(h, &hn, (uint64_t)r << 32 | pos, id);
    }
    return 0;
}

/* The tokens, with HF's offsets: running byte positions in the word, mapped back to units. */
static int tok_bpe_emit(const tok_scratch *s, size_t n, const tok_unit *u, const tok_span *w, tok_pieces *out) {
    size_t unit = w->b;          /* the unit holding byte `pos` */
    uint32_t pos = 0, ustart = 0;
    char b[4];
    for (size_t i = 0; i < n; i++) {
        const tok_sym *y = &s->sym[i];
        if (!y->live || !y->len) continue;
        uint32_t end = pos + y->len;
        while (unit + 1 < w->e && ustart + tok_utf8_encode(u[unit].c, b) <= pos) ustart += (uint32_t)tok_utf8_encode(u[unit++].c, b);
        size_t first = unit, last = unit;
        uint32_t ls = ustart;
        while (last + 1 < w->e && ls + tok_utf8_encode(u[last].c, b) <= end - 1) ls += (uint32_t)tok_utf8_encode(u[last++].c, b);
        if (tok_pieces_push(out, y->id, u[first].start, u[last].end)) return -1;
        pos = end;
    }
    return 0;
}

int tok_bpe_word(const tokenizer *t, tok_scratch *s, const tok_unit *u, const tok_span *w, tok_pieces *out) {
    if (w->e == w->b) return 0;
    if (t->desc->flags & TOKDESC_FLAG_IGNORE_MERGES) {
        char buf[256];
        size_t bl = 0, i;
        for (i = w->b; i < w->e && bl + 4 <= sizeof buf; i++) bl += tok_utf8_encode(u[i].c, buf + bl);
        int32_t id = i == w->e ? tokmap_get(&t->vocab, buf, bl) : -1;
        if (id >= 0) return tok_pieces_push(out, id, u[w->b].start, u[w->e - 1].end);
    }
    size_t n;
    if (tok_bpe_symbols(t, s, u, w, &n) || tok_bpe_merge(t, s, n)) return -1;
    return tok_bpe_emit(s, n, u, w, out);
}
