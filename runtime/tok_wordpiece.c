/*
 * tok_wordpiece — WordPiece, as tokenizers' WordPiece::tokenize.
 *
 * A word of more than max_input_chars_per_word characters is the unknown
 * token; otherwise greedy longest-match-first from the left, every piece
 * after the first looked up with the continuing-subword prefix ("##"), and
 * the whole word is the unknown token if some piece has no match.  The
 * vocabulary's FNV-1a hash runs forwards, so one pass over the word gives
 * the hash of every candidate end, and no candidate longer than the
 * longest vocabulary entry is tried.
 */
#include "tokenizer.h"

/* The word's UTF-8 in s->bytes and each character's start in s->at (at[n] = the length). */
static int tok_word_bytes(tok_scratch *s, const tok_unit *u, size_t b, size_t e) {
    size_t n = e - b;
    if (tok_reserve((void **)&s->bytes, &s->bytes_cap, 4 * n + 4, 1) ||
        tok_reserve((void **)&s->at, &s->at_cap, n + 1, sizeof *s->at))
        return -1;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        s->at[i] = (uint32_t)at;
        at += tok_utf8_encode(u[b + i].c, s->bytes + at);
    }
    s->at[n] = (uint32_t)at;
    return 0;
}

int tok_wordpiece_word(const tokenizer *t, tok_scratch *s, const tok_unit *u, const tok_span *w, tok_pieces *out) {
    size_t n = w->e - w->b, mark = out->n;
    if (n == 0) return 0;
    if (n > t->desc->max_input_chars_per_word) return tok_pieces_push(out, t->unk_id, u[w->b].start, u[w->e - 1].end);
    if (tok_word_bytes(s, u, w->b, w->e)) return -1;
    const char *pre = t->desc->continuing_subword_prefix;
    size_t plen = strlen(pre);
    const uint32_t pre_basis = tokmap_hash(TOKMAP_FNV_BASIS, pre, plen);
    uint32_t hs[1024];
    for (size_t si = 0; si < n;) {
        size_t start = s->at[si], extra = si ? plen : 0, ei = n;
        while (ei > si + 1 && s->at[ei] - start + extra > t->max_token_bytes) ei--;
        if (ei - si > 1023) ei = si + 1023;   /* never: max_input_chars_per_word is at most 1000 */
        uint32_t h = si ? pre_basis : TOKMAP_FNV_BASIS;
        for (size_t e = si + 1; e <= ei; e++) {
            h = tokmap_hash(h, s->bytes + s->at[e - 1], s->at[e] - s->at[e - 1]);
            hs[e - si] = h;
        }
        int32_t id = -1;
        for (; ei > si; ei--)
            if ((id = tokmap_find(&t->vocab, hs[ei - si], pre, extra, s->bytes + start, s->at[ei] - start)) >= 0)
                break;
        if (id < 0) {
            out->n = mark;
            return tok_pieces_push(out, t->unk_id, u[w->b].start, u[w->e - 1].end);
        }
        if (tok_pieces_push(out, id, u[w->b + si].start, u[w->b + ei - 1].end)) return -1;
        si = ei;
    }
    return 0;
}
