/*
 * tok_bytelevel — GPT-2's byte-level pre-tokeniser (RoBERTa's).
 *
 * Three steps, as Hugging Face's ByteLevel runs them on each piece of text:
 *
 *   1. add_prefix_space: a piece that does not start with ' ' gets one;
 *   2. use_regex: the piece is cut where GPT-2's pattern
 *        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      cuts it (every character lands in some match).  The scanner below
 *      is that alternation, tried in order at each position: a contraction
 *      (case-sensitive, so "'S" is punctuation), an optional space with a
 *      run of letters, of numbers, or of anything else that is not
 *      whitespace; then a whitespace run that stops before the last space
 *      when something follows (the lookahead leaves that space to prefix the
 *      next word), or the whole run;
 *   3. every character becomes the characters of its UTF-8 bytes under the
 *      byte-to-unicode map (printable Latin-1 bytes map to themselves, the
 *      rest to U+0100 and up), each keeping the character's span — so a
 *      token that holds part of an emoji reports the whole emoji's bytes.
 *
 * No regex engine: the classes come from tok_unicode.c (Oniguruma's \p{L},
 * \p{N} and \s are the general categories and White_Space), and the
 * every-code-point sweep in the tests holds them to HF's.
 */
#include "tok_internal.h"

uint32_t tok_byte_char(uint8_t b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    /* The other 68 bytes take 256, 257, ... in byte order. */
    uint32_t n = 0;
    for (uint32_t x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
    return 256 + n;
}

static size_t tok_run(const tok_unit *u, size_t i, size_t e, int cls) {
    while (i < e && tok_gpt2_class(u[i].c) == cls) i++;
    return i;
}

/* Characters of the non-space, non-letter, non-number run from i. */
static size_t tok_run_other(const tok_unit *u, size_t i, size_t e) { return tok_run(u, i, e, TOK_G_OTHER); }

/* End of the match of GPT-2's pattern starting at u[i] (i < e). */
static size_t tok_gpt2_match(const tok_unit *u, size_t i, size_t e) {
    uint32_t c = u[i].c;
    if (c == '\'' && i + 1 < e) {
        uint32_t a = u[i + 1].c, b = i + 2 < e ? u[i + 2].c : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    size_t j = (c == ' ' && i + 1 < e) ? i + 1 : i;   /* the optional leading space */
    int k = tok_gpt2_class(u[j].c);
    if (j == i + 1 || k != TOK_G_SPACE) {
        if (k == TOK_G_LETTER || k == TOK_G_NUMBER) return tok_run(u, j, e, k);
        if (k == TOK_G_OTHER) return tok_run_other(u, j, e);
        /* " " followed by whitespace: the space alternatives below, from i */
    }
    size_t r = tok_run(u, i, e, TOK_G_SPACE);
    if (r == i) return i + 1;                      /* cannot happen: every class is covered */
    if (r == e || r - i == 1) return r;            /* \s+(?!\S) at the end, or \s+ */
    return r - 1;                                  /* leave the last space to the next word */
}

/* Steps 1 and 2: u/words -> out/outw, characters unchanged but for the prefixed space. */
static int tok_bytelevel_split(const tokdesc_pretokenizer *p, const tok_units *u, const tok_spans *words,
                               tok_units *out, tok_spans *outw) {
    out->n = outw->n = 0;
    for (size_t k = 0; k < words->n; k++) {
        const tok_span *w = &words->s[k];
        if (w->e == w->b) continue;
        size_t b = out->n;
        if (p->add_prefix_space && u->u[w->b].c != ' ' &&
            tok_units_push(out, ' ', u->u[w->b].start, u->u[w->b].end))
            return -1;
        for (size_t i = w->b; i < w->e; i++)
            if (tok_units_push(out, u->u[i].c, u->u[i].start, u->u[i].end)) return -1;
        for (size_t i = b; i < out->n;) {
            size_t j = p->use_regex ? tok_gpt2_match(out->u, i, out->n) : out->n;
            if (tok_spans_push(outw, i, j, out->u[i].start)) return -1;
            i = j;
        }
    }
    return 0;
}

int tok_bytelevel(const tokdesc_pretokenizer *p, tok_units *u, tok_units *tmp, tok_spans *words, tok_spans *tmpw) {
    if (tok_bytelevel_split(p, u, words, tmp, tmpw)) return -1;
    /* Step 3: tmp/tmpw -> u/words. */
    u->n = words->n = 0;
    for (size_t k = 0; k < tmpw->n; k++) {
        const tok_span *w = &tmpw->s[k];
        size_t b = u->n;
        for (size_t m = w->b; m < w->e; m++) {
            char bytes[4];
            size_t nb = tok_utf8_encode(tmp->u[m].c, bytes);
            for (size_t q = 0; q < nb; q++)
                if (tok_units_push(u, tok_byte_char((uint8_t)bytes[q]), tmp->u[m].start, tmp->u[m].end)) return -1;
        }
        if (tok_spans_push(words, b, u->n, w->orig)) return -1;
    }
    return 0;
}
