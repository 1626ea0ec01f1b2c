/*
 * tok_unigram — SentencePiece's Unigram, as tokenizers' encode_optimized.
 *
 * Viterbi over the word's characters: from each character boundary, every
 * vocabulary entry that continues the text is an edge scored with its log
 * probability; a character that starts no one-character entry also gets an
 * edge to the next boundary with the unknown token, scored min_score - 10.
 * Ties keep the earlier edge (a strictly greater score replaces), in the
 * order HF visits them: starts left to right, shorter entries first.  The
 * best path is read backwards; consecutive unknown pieces are fused into
 * one, and every piece is looked up by its text again (so a fused run, not
 * a vocabulary entry, becomes "<0xXX>" byte tokens with byte_fallback, or
 * the unknown token).  HF's trie walk is bounded by the entries that really
 * continue the text; a hash set of every entry's prefixes gives the same
 * bound here, so a long word costs what its matches cost.
 */
#include "tokenizer.h"

typedef struct tok_node {
    double score;
    int32_t id;
    int32_t from;           /* character index the best edge starts at; -1: none yet */
} tok_node;

static int tok_prefix_has(const tokenizer *t, uint32_t h) {
    if (!h) h = 1;
    for (uint32_t i = h & t->prefix_mask; t->prefix_hash[i]; i = (i + 1) & t->prefix_mask)
        if (t->prefix_hash[i] == h) return 1;
    return 0;
}

static void tok_viterbi_update(tok_node *n, double score, int32_t id, int32_t from) {
    if (n->from < 0 || score > n->score) {
        n->score = score;
        n->id = id;
        n->from = from;
    }
}

/* The edges from character ci; 0, or -1 when an unknown is needed and there is none. */
static int tok_viterbi_from(const tokenizer *t, const tok_scratch *s, tok_node *node, size_t ci, size_t n) {
    double best = node[ci].score;
    int single = 0;
    uint32_t h = TOKMAP_FNV_BASIS;
    const char *base = s->bytes + s->at[ci];
    for (size_t ej = ci + 1; ej <= n; ej++) {
        size_t blen = s->at[ej] - s->at[ci];
        if (blen > t->max_token_bytes) break;
        h = tokmap_hash(h, s->bytes + s->at[ej - 1], s->at[ej] - s->at[ej - 1]);
        if (!tok_prefix_has(t, h)) break;
        int32_t id = tokmap_find(&t->vocab, h, NULL, 0, base, blen);
        if (id < 0) continue;
        tok_viterbi_update(&node[ej], t->desc->scores[id] + best, id, (int32_t)ci);
        if (ej == ci + 1) single = 1;
    }
    if (single) return 0;
    if (t->unk_id < 0) return -1;
    tok_viterbi_update(&node[ci + 1], t->min_score - 10.0 + best, t->unk_id, (int32_t)ci);
    return 0;
}

/* A piece of the best path: its id by text again, or byte tokens, or the unknown. */
static int tok_unigram_piece(const tokenizer *t, const tok_scratch *s, const tok_unit *u, const tok_span *w,
                             size_t cb, size_t ce, tok_pieces *out) {
    const char *p = s->bytes + s->at[cb];
    size_t blen = s->at[ce] - s->at[cb];
    uint32_t start = u[w->b + cb].start, end = u[w->b + ce - 1].end;
    int32_t id = tokmap_get(&t->vocab, p, blen);
    if (id >= 0) return tok_pieces_push(out, id, start, end);
    if (t->desc->flags & TOKDESC_FLAG_BYTE_FALLBACK) {
        size_t k = 0;
        while (k < blen && t->byte_id[(uint8_t)p[k]] >= 0) k++;
        if (k == blen) {
            for (k = 0; k < blen; k++)
                if (tok_pieces_push(out, t->byte_id[(uint8_t)p[k]], start, end)) return -1;
            return 0;
        }
    }
    return tok_pieces_push(out, t->unk_id, start, end);
}

int tok_unigram_word(const tokenizer *t, tok_scratch *s, const tok_unit *u, const tok_span *w, tok_pieces *out,
                     diag *d) {
    size_t n = w->e - w->b;
    if (!n) return 0;
    if (tok_reserve((void **)&s->bytes, &s->bytes_cap, 4 * n + 4, 1) ||
        tok_reserve((void **)&s->at, &s->at_cap, n + 1, sizeof *s->at) ||
        tok_reserve((void **)&s->node, &s->node_cap, n + 1, sizeof(tok_node)) ||
        tok_reserve((void **)&s->seg, &s->seg_cap, 3 * n + 3, sizeof *s->seg))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        s->at[i] = (uint32_t)at;
        at += tok_utf8_encode(u[w->b + i].c, s->bytes + at);
    }
    s->at[n] = (uint32_t)at;
    tok_node *node = s->node;
    for (size_t i = 0; i <= n; i++) node[i] = (tok_node){0.0, -1, -1};
    for (size_t ci = 0; ci < n; ci++)
        if (tok_viterbi_from(t, s, node, ci, n))
            return diag_set(d, DIAG_CODE_INPUT, "tokenizer: the Unigram model has no piece for the character "
                            "U+%04X and no unknown token", (unsigned)u[w->b + ci].c);
    /* Backwards: pieces as (start, end, unknown) character triples, consecutive unknowns fused. */
    size_t ns = 0;
    for (size_t e = n; e > 0;) {
        size_t b = (size_t)node[e].from;
        uint32_t unk = t->unk_id >= 0 && node[e].id == t->unk_id;
        if (ns && unk && s->seg[3 * ns - 1]) {
            s->seg[3 * ns - 3] = (uint32_t)b;
        } else {
            s->seg[3 * ns] = (uint32_t)b;
            s->seg[3 * ns + 1] = (uint32_t)e;
            s->seg[3 * ns + 2] = unk;
            ns++;
        }
        e = b;
    }
    for (size_t k = ns; k-- > 0;)
        if (tok_unigram_piece(t, s, u, w, s->seg[3 * k], s->seg[3 * k + 1], out))
            return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    return 0;
}
