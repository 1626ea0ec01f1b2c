/*
 * tok_pretok — the pre-tokenisers: the normalised text into words.
 *
 * BertPreTokenizer splits on whitespace and makes every punctuation
 * character (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*) a word of
 * its own; WhitespaceSplit splits on whitespace only.  Metaspace is
 * SentencePiece's view of spaces: every ' ' becomes the replacement
 * character (U+2581 "▁"), a ▁ is put in front of a word that does not
 * start with one (always; for `first`, only the word that starts the input
 * text; never), and with `split` each ▁ starts a new word (HF's
 * MergedWithNext).  ByteLevel lives in tok_bytelevel.c.
 *
 * Pre-tokenisers run in sequence, each over every word the previous one
 * left; a word is a span of units, so splitting costs no copy, and the
 * stages that change characters (Metaspace, ByteLevel) write new units.
 */
#include "tok_internal.h"

static void tok_spans_swap(tok_spans *a, tok_spans *b) {
    tok_spans t = *a;
    *a = *b;
    *b = t;
}

static void tok_units_swap2(tok_units *a, tok_units *b) {
    tok_units t = *a;
    *a = *b;
    *b = t;
}

/* BertPreTokenizer (bert = 1) or WhitespaceSplit (bert = 0) over one word. */
static int tok_split_word(const tok_unit *u, const tok_span *w, int bert, tok_spans *out) {
    size_t start = w->b;
    for (size_t i = w->b; i < w->e; i++) {
        uint32_t c = u[i].c;
        int space = tok_is_whitespace(c), punct = bert && !space && (tok_bert_class(c) & TOK_CLS_PUNCT);
        if (!space && !punct) continue;
        if (i > start && tok_spans_push(out, start, i, u[start].start)) return -1;
        if (punct && tok_spans_push(out, i, i + 1, u[i].start)) return -1;
        start = i + 1;
    }
    if (w->e > start && tok_spans_push(out, start, w->e, u[start].start)) return -1;
    return 0;
}

/* Metaspace over one word: units into out, words into outw. */
static int tok_metaspace_word(const tokdesc_pretokenizer *p, const tok_unit *u, const tok_span *w, tok_units *out,
                              tok_spans *outw) {
    if (w->e == w->b) return 0;
    size_t b = out->n;
    uint32_t r = p->replacement;
    int starts = u[w->b].c == ' ' || u[w->b].c == r;
    int prepend = !starts && (p->prepend_scheme == TOKDESC_PREPEND_ALWAYS ||
                              (p->prepend_scheme == TOKDESC_PREPEND_FIRST && w->orig == 0));
    if (prepend && tok_units_push(out, r, u[w->b].start, u[w->b].end)) return -1;
    for (size_t i = w->b; i < w->e; i++)
        if (tok_units_push(out, u[i].c == ' ' ? r : u[i].c, u[i].start, u[i].end)) return -1;
    if (!p->split) return tok_spans_push(outw, b, out->n, w->orig);
    size_t start = b;
    for (size_t i = b + 1; i < out->n; i++) {
        if (out->u[i].c != r) continue;
        if (tok_spans_push(outw, start, i, out->u[start].start)) return -1;
        start = i;
    }
    return tok_spans_push(outw, start, out->n, start == b ? w->orig : out->u[start].start);
}

int tok_pretok_one(const tokdesc_pretokenizer *p, tok_units *u, tok_units *tmp, tok_spans *words,
                   tok_spans *tmpw) {
    tmpw->n = 0;
    if (p->kind == TOKDESC_PRE_BERT || p->kind == TOKDESC_PRE_WHITESPACE_SPLIT) {
        for (size_t k = 0; k < words->n; k++)
            if (tok_split_word(u->u, &words->s[k], p->kind == TOKDESC_PRE_BERT, tmpw)) return -1;
        tok_spans_swap(words, tmpw);
        return 0;
    }
    if (p->kind == TOKDESC_PRE_BYTE_LEVEL) return tok_bytelevel(p, u, tmp, words, tmpw);
    tmp->n = 0;
    for (size_t k = 0; k < words->n; k++)
        if (tok_metaspace_word(p, u->u, &words->s[k], tmp, tmpw)) return -1;
    tok_units_swap2(u, tmp);
    tok_spans_swap(words, tmpw);
    return 0;
}
