/*
 * tok_added — added tokens, found in the text before the model sees it.
 *
 * Hugging Face's AddedVocabulary keeps two sets: tokens matched in the raw
 * text (`normalized: false`, every special token of the usual checkpoints)
 * and tokens matched in the normalised text (`normalized: true`, whose
 * patterns are themselves normalised first).  Matching is Aho-Corasick's
 * leftmost-longest: the earliest position where some token starts wins,
 * the longest token there; the search resumes at the end of that match
 * whether it is kept or not.  A kept match then applies its flags:
 * single_word (no word character, regex \w, right before or after it, else
 * the match is dropped), lstrip (it swallows the whitespace before it, but
 * not past the previous match) and rstrip (the whitespace after it).  The
 * pieces between matches are text for the normaliser and the model.
 *
 * Tokens are few (a handful of specials; a few hundred at most), so a scan
 * filtered by the first character's low byte does the job of a real
 * automaton at the speed that matters.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

void tok_added_free(tok_added_set *s) {
    for (int i = 0; i < s->n; i++) free(s->pat[i]);
    free(s->pat);
    free(s->len);
    free(s->id);
    free(s->flags);
    memset(s, 0, sizeof *s);
}

/*
 * The tokens of d whose `normalized` flag equals `normalized`; patterns are
 * their texts, or (normalized) norm_patterns[i] for added token i.
 */
int tok_added_build(tok_added_set *s, const tokdesc *d, int normalized, const tok_units *norm_patterns) {
    memset(s, 0, sizeof *s);
    int n = 0;
    for (int i = 0; i < d->nadded; i++) n += !!(d->added[i].flags & TOKDESC_ADDED_NORMALIZED) == !!normalized;
    if (!n) return 0;
    s->pat = calloc((size_t)n, sizeof *s->pat);
    s->len = calloc((size_t)n, sizeof *s->len);
    s->id = calloc((size_t)n, sizeof *s->id);
    s->flags = calloc((size_t)n, sizeof *s->flags);
    if (!s->pat || !s->len || !s->id || !s->flags) goto oom;
    for (int i = 0; i < d->nadded; i++) {
        const tokdesc_added *a = &d->added[i];
        if (!!(a->flags & TOKDESC_ADDED_NORMALIZED) != !!normalized) continue;
        int k = s->n++;
        size_t m = 0, bl = strlen(a->content);
        if (normalized) m = norm_patterns[i].n;
        else
            for (size_t j = 0; j < bl; j++) m += ((uint8_t)a->content[j] & 0xC0) != 0x80;
        if (!(s->pat[k] = malloc((m ? m : 1) * sizeof **s->pat))) goto oom;
        if (normalized) {
            for (size_t j = 0; j < m; j++) s->pat[k][j] = norm_patterns[i].u[j].c;
        } else {
            size_t at = 0;
            for (size_t j = 0; j < m; j++) {
                size_t l = tok_utf8_decode((const uint8_t *)a->content, bl, at, &s->pat[k][j]);
                at += l ? l : 1;   /* contents are valid UTF-8 (checked when the tokenizer is built) */
            }
        }
        s->len[k] = m;
        s->id[k] = a->id;
        s->flags[k] = a->flags;
        if (m) s->first[s->pat[k][0] & 0xFF] = 1;
    }
    return 0;
oom:
    tok_added_free(s);
    return -1;
}

/* Longest token matching at u[i] (inside [i, e)): its index, or -1. */
static int tok_added_at(const tok_added_set *s, const tok_unit *u, size_t i, size_t e) {
    int best = -1;
    for (int k = 0; k < s->n; k++) {
        size_t m = s->len[k];
        if (!m || m > e - i || (best >= 0 && m <= s->len[best])) continue;
        size_t j = 0;
        while (j < m && u[i + j].c == s->pat[k][j]) j++;
        if (j == m) best = k;
    }
    return best;
}

/* single_word: no \w character touching the match inside [b, e). */
static int tok_added_single_ok(const tok_unit *u, size_t b, size_t e, size_t start, size_t stop) {
    if (start > b && tok_is_word(u[start - 1].c)) return 0;
    if (stop < e && tok_is_word(u[stop].c)) return 0;
    return 1;
}

static int tok_added_emit(tok_spans *spans, int32_t **ids, size_t *ids_cap, size_t b, size_t e, int32_t id) {
    if (tok_spans_push(spans, b, e, 0)) return -1;
    if (tok_reserve((void **)ids, ids_cap, spans->n, sizeof **ids)) return -1;
    (*ids)[spans->n - 1] = id;
    return 0;
}

int tok_added_split(const tok_added_set *s, const tok_unit *u, size_t b, size_t e, tok_spans *spans,
                    int32_t **ids, size_t *ids_cap) {
    size_t from = b;   /* start_offset: the end of the last kept match */
    for (size_t i = b; s->n && i < e;) {
        int k = s->first[u[i].c & 0xFF] ? tok_added_at(s, u, i, e) : -1;
        if (k < 0) {
            i++;
            continue;
        }
        size_t start = i, stop = i + s->len[k];
        i = stop;   /* the search resumes after the match, kept or not */
        if ((s->flags[k] & TOKDESC_ADDED_SINGLE_WORD) && !tok_added_single_ok(u, b, e, start, stop)) continue;
        if (s->flags[k] & TOKDESC_ADDED_LSTRIP) {
            size_t ns = start;
            while (ns > b && tok_is_whitespace(u[ns - 1].c)) ns--;
            start = ns > from ? ns : from;
        }
        if (s->flags[k] & TOKDESC_ADDED_RSTRIP)
            while (stop < e && tok_is_whitespace(u[stop].c)) stop++;
        if (from < start && tok_added_emit(spans, ids, ids_cap, from, start, -1)) return -1;
        if (tok_added_emit(spans, ids, ids_cap, start, stop, s->id[k])) return -1;
        from = stop;
    }
    if (from < e && tok_added_emit(spans, ids, ids_cap, from, e, -1)) return -1;
    return 0;
}
