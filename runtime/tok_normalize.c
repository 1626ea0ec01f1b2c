/*
 * tok_normalize — the normalisers, one at a time over the text's units.
 *
 * BertNormalizer is HF's four steps in its order: clean-up (drop U+0000,
 * U+FFFD and Cc/Cf/Co except \t \n \r, whitespace to ' '), spaces around
 * CJK ideographs, accents stripped (NFD with canonical reordering, then
 * nonspacing marks dropped — before lowercasing), lowercase (full mapping,
 * no final-sigma rule).  Lowercase and Strip are the stand-alone versions.
 * Replace swaps every leftmost, non-overlapping match of a literal pattern
 * (or of one character repeated n or more times: the only regex form the
 * importer accepts, " {2,}" in XLM-R's tokenizer.json) for its content.
 *
 * Alignments: a character derived from another (decomposed, lowercased,
 * inserted next to it) keeps its span, a dropped one vanishes — which is
 * what HF's transform gives for these steps.  Replace gives its content
 * the span of the match's last character, as HF's replace does;
 * Precompiled has positional quirks of its own and goes through
 * tok_transform (tok_precompiled.c).
 */
#include <string.h>

#include "tok_internal.h"

/* Canonical ordering inside runs of combining marks; a mark keeps its span when it moves, as HF's
 * alignment-tracking NFD gives it. */
static void tok_canonical_order(tok_unit *u, size_t n) {
    for (size_t i = 1; i < n; i++) {
        tok_unit x = u[i];
        int cc = tok_combining_class(x.c);
        if (!cc) continue;
        size_t j = i;
        while (j > 0 && tok_combining_class(u[j - 1].c) > cc) {
            u[j] = u[j - 1];
            j--;
        }
        u[j] = x;
    }
}

/* Clean-up, CJK spacing and NFD (when stripping): one unit in, up to 6 out. */
static int tok_bert_first(const int32_t *p, int strip, const tok_units *in, tok_units *out, int *reorder) {
    out->n = 0;
    if (tok_reserve((void **)&out->u, &out->cap, 6 * in->n + 1, sizeof *out->u)) return -1;   /* 1 unit -> 6 at most */
    for (size_t i = 0; i < in->n; i++) {
        tok_unit x = in->u[i];
        if (p[0]) {
            uint8_t k = tok_bert_class(x.c);
            if (k & TOK_CLS_REMOVED) continue;
            if (k & TOK_CLS_SPACE) x.c = ' ';
        }
        int cjk = p[1] && tok_is_chinese(x.c);
        if (cjk) out->u[out->n++] = (tok_unit){' ', x.start, x.end};
        if (strip) {
            uint32_t d[4];
            int m = tok_nfd(x.c, d, 4);
            for (int k = 0; k < m; k++) out->u[out->n++] = (tok_unit){d[k], x.start, x.end};
            *reorder |= m > 1 || tok_combining_class(x.c);
        } else {
            out->u[out->n++] = x;
        }
        if (cjk) out->u[out->n++] = (tok_unit){' ', x.start, x.end};
    }
    return 0;
}

/* Marks dropped (strip) and lowercase, from in to out. */
static int tok_bert_second(int strip, int lower, const tok_units *in, tok_units *out) {
    out->n = 0;
    if (tok_reserve((void **)&out->u, &out->cap, 3 * in->n + 1, sizeof *out->u)) return -1;   /* lowercase: 3 at most */
    for (size_t i = 0; i < in->n; i++) {
        tok_unit x = in->u[i];
        if (strip && tok_is_mn(x.c)) continue;
        if (!lower) {
            out->u[out->n++] = x;
            continue;
        }
        uint32_t l[3];
        int m = tok_lower(x.c, l);
        for (int k = 0; k < m; k++) out->u[out->n++] = (tok_unit){l[k], x.start, x.end};
    }
    return 0;
}

static void tok_units_swap(tok_units *a, tok_units *b) {
    tok_units t = *a;
    *a = *b;
    *b = t;
}

static int tok_bert(const int32_t *p, tok_units *io, tok_units *tmp) {
    int lower = p[3] != 0, strip = p[2] < 0 ? lower : p[2] != 0, reorder = 0;
    if (tok_bert_first(p, strip, io, tmp, &reorder)) return -1;
    if (strip && reorder) tok_canonical_order(tmp->u, tmp->n);
    if (tok_bert_second(strip, lower, tmp, io)) return -1;
    return 0;
}

static int tok_strip(const int32_t *p, tok_units *io) {
    size_t b = 0, e = io->n;
    if (p[0])
        while (b < e && tok_is_whitespace(io->u[b].c)) b++;
    if (p[1])
        while (e > b && tok_is_whitespace(io->u[e - 1].c)) e--;
    if (b && e > b) memmove(io->u, io->u + b, (e - b) * sizeof *io->u);   /* io->u may be NULL when empty */
    io->n = e - b;
    return 0;
}

/* Length of a match of n's pattern at u[i] (0: none). */
static size_t tok_replace_match(const tokdesc_normalizer *n, const uint32_t *pat, size_t plen, const tok_unit *u,
                                size_t i, size_t len) {
    if (n->p[0] >= 2) {
        size_t j = i;
        while (j < len && u[j].c == pat[0]) j++;
        return j - i >= (size_t)n->p[0] ? j - i : 0;
    }
    if (plen > len - i) return 0;
    for (size_t k = 0; k < plen; k++)
        if (u[i + k].c != pat[k]) return 0;
    return plen;
}

static size_t tok_decode_all(const char *s, uint32_t *out, size_t cap) {
    size_t n = 0, bl = strlen(s);
    for (size_t i = 0; i < bl && n < cap;) {
        size_t l = tok_utf8_decode((const uint8_t *)s, bl, i, &out[n]);
        if (!l) break;   /* patterns are checked to be UTF-8 when the tokenizer is built */
        i += l;
        n++;
    }
    return n;
}

/*
 * Replace: HF's NormalizedString::replace transforms each match into the
 * content as insertions after removing the match, and an insertion takes
 * the span of the character before it — the match's last one.
 */
static int tok_replace(const tokdesc_normalizer *n, tok_units *io, tok_units *tmp) {
    uint32_t pat[64], con[64];
    size_t plen = tok_decode_all(n->pattern, pat, 64), clen = tok_decode_all(n->content, con, 64);
    if (!plen) return 0;
    tmp->n = 0;
    for (size_t i = 0; i < io->n;) {
        size_t m = tok_replace_match(n, pat, plen, io->u, i, io->n);
        if (!m) {
            if (tok_units_push(tmp, io->u[i].c, io->u[i].start, io->u[i].end)) return -1;
            i++;
            continue;
        }
        const tok_unit *last = &io->u[i + m - 1];
        for (size_t k = 0; k < clen; k++)
            if (tok_units_push(tmp, con[k], last->start, last->end)) return -1;
        i += m;
    }
    tok_units_swap(io, tmp);
    return 0;
}

int tok_normalize_one(const tokdesc_normalizer *n, tok_units *io, tok_units *tmp, tok_change **ch,
                      size_t *ch_cap) {
    switch (n->kind) {
    case TOKDESC_NORM_BERT:
        return tok_bert(n->p, io, tmp);
    case TOKDESC_NORM_LOWERCASE:
        if (tok_bert_second(0, 1, io, tmp)) return -1;
        tok_units_swap(io, tmp);
        return 0;
    case TOKDESC_NORM_STRIP:
        return tok_strip(n->p, io);
    case TOKDESC_NORM_REPLACE:
        return tok_replace(n, io, tmp);
    case TOKDESC_NORM_PRECOMPILED:
        if (tok_precompiled_apply(n->data, n->data_len, io, tmp, ch, ch_cap)) return -1;
        tok_units_swap(io, tmp);
        return 0;
    default:
        return 0;
    }
}
