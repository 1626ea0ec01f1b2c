/*
 * tok_internal — what the tokenizer's files share (runtime/tok_*.c and
 * tokenizer.c); nothing here is public.
 *
 * The text travels through the pipeline as *units*: one character of the
 * current (normalised, pre-tokenised) string together with the byte span of
 * the input text it came from — Hugging Face's NormalizedString alignments,
 * one per character instead of one per byte.  Every stage maps units to
 * units the way HF's `transform` maps alignments, so a token's offsets are
 * simply (first unit's start, last unit's end).  Words are spans of units;
 * tokens are ids with their byte spans.
 *
 * The files, each a stage (docs/tokenizer.md has the pipeline):
 *   tok_unicode.c     character classes as tokenizers 0.21 sees them, UTF-8
 *   tok_added.c       added tokens: leftmost-longest matching with the
 *                     single_word / lstrip / rstrip rules
 *   tok_normalize.c   BertNormalizer, Lowercase, Strip, Replace, HF's transform
 *   tok_precompiled.c SentencePiece's compiled character map (Precompiled)
 *   tok_pretok.c      BertPreTokenizer, WhitespaceSplit, Metaspace
 *   tok_bytelevel.c   ByteLevel: GPT-2's split as a scanner, bytes to chars
 *   tok_wordpiece.c, tok_bpe.c, tok_unigram.c   the models
 *   tokenizer.c       building from a description, the per-text pipeline,
 *                     truncation and the post-processor's template
 */
#ifndef BERTC_TOK_INTERNAL_H
#define BERTC_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokdesc.h"
#include "tokmap.h"

typedef struct tok_unit {
    uint32_t c;                 /* the character (a code point) */
    uint32_t start, end;        /* its bytes in the input text */
} tok_unit;

typedef struct tok_change {
    uint32_t c;
    int32_t change;             /* HF's transform: 0 replaces, 1 inserts, -n replaces and removes n more */
} tok_change;

typedef struct tok_span {
    size_t b, e;                /* units [b, e) */
    uint32_t orig;              /* where the piece starts in the input (Metaspace's "first" asks) */
} tok_span;

typedef struct tok_piece {
    int32_t id;
    uint32_t start, end;        /* bytes of the input text */
} tok_piece;

/* Growable arrays: `n` used of `cap`; *_push return -1 when memory runs out. */
typedef struct tok_units {
    tok_unit *u;
    size_t n, cap;
} tok_units;

typedef struct tok_pieces {
    tok_piece *p;
    size_t n, cap;
} tok_pieces;

typedef struct tok_spans {
    tok_span *s;
    size_t n, cap;
} tok_spans;

int tok_reserve(void **p, size_t *cap, size_t need, size_t elem);
int tok_units_push(tok_units *v, uint32_t c, uint32_t start, uint32_t end);
int tok_pieces_push(tok_pieces *v, int32_t id, uint32_t start, uint32_t end);
int tok_spans_push(tok_spans *v, size_t b, size_t e, uint32_t orig);

/* ---- tok_unicode.c ---- */

enum { TOK_CLS_REMOVED = 1, TOK_CLS_SPACE = 2, TOK_CLS_PUNCT = 4 };
/* BertNormalizer's clean-up and BertPreTokenizer's classes of a character. */
uint8_t tok_bert_class(uint32_t c);
int tok_is_mn(uint32_t c);              /* a nonspacing mark to strip_accents */
int tok_is_chinese(uint32_t c);         /* BertNormalizer's CJK ranges */
int tok_combining_class(uint32_t c);
int tok_lower(uint32_t c, uint32_t out[3]);     /* Rust's char::to_lowercase; returns the count */
int tok_nfd(uint32_t c, uint32_t *out, int cap);/* canonical decomposition as HF's NFD; the count */
int tok_is_whitespace(uint32_t c);      /* Rust's char::is_whitespace */
int tok_is_word(uint32_t c);            /* the regex class \w */
enum { TOK_G_OTHER = 0, TOK_G_LETTER = 1, TOK_G_NUMBER = 2, TOK_G_SPACE = 3 };
int tok_gpt2_class(uint32_t c);         /* GPT-2's split: \p{L}, \p{N}, \s, other */
/* 1 if a grapheme cluster boundary lies between two characters (state starts at 0). */
int tok_grapheme_break(uint32_t a, uint32_t b, int32_t *state);
/* Strict UTF-8: length 1..4 of the sequence at s[i] and its code point, 0 if invalid. */
size_t tok_utf8_decode(const uint8_t *s, size_t n, size_t i, uint32_t *cp);
size_t tok_utf8_encode(uint32_t c, char out[4]);

/* ---- tok_added.c ---- */

typedef struct tok_added_set {
    int n;
    uint32_t **pat;             /* [n] the tokens' characters */
    size_t *len;                /* [n] characters */
    int32_t *id;
    uint32_t *flags;
    uint8_t first[256];         /* a pattern starts with a character whose low byte is this */
} tok_added_set;

int tok_added_build(tok_added_set *s, const tokdesc *d, int normalized, const tok_units *norm_patterns);
void tok_added_free(tok_added_set *s);
/* Splits units [b, e) at the added tokens: each piece is a span, with id -1 for text. */
int tok_added_split(const tok_added_set *s, const tok_unit *u, size_t b, size_t e, tok_spans *spans,
                    int32_t **ids, size_t *ids_cap);

/* ---- tok_normalize.c, tok_precompiled.c ---- */

typedef struct tok_scratch tok_scratch;
/* Runs normalizer k of d over *io (replaced; `tmp` is scratch of the same type). */
int tok_normalize_one(const tokdesc_normalizer *n, tok_units *io, tok_units *tmp, tok_change **ch,
                      size_t *ch_cap);
/* HF's NormalizedString::transform: old units + (char, change) list -> new units. */
int tok_transform(const tok_unit *old, size_t nold, const tok_change *ch, size_t nch, size_t initial_offset,
                  tok_units *out);
int tok_precompiled_apply(const uint8_t *data, uint32_t len, const tok_units *in, tok_units *out, tok_change **ch,
                          size_t *ch_cap);

/* ---- tok_pretok.c, tok_bytelevel.c ---- */

/* Splits every word of *words (spans into *u) by pre-tokenizer p, rewriting the units where it
 * changes characters (*u and *words are replaced; tmp and tmpw are scratch). */
int tok_pretok_one(const tokdesc_pretokenizer *p, tok_units *u, tok_units *tmp, tok_spans *words,
                   tok_spans *tmpw);
int tok_bytelevel(const tokdesc_pretokenizer *p, tok_units *u, tok_units *tmp, tok_spans *words, tok_spans *tmpw);
/* The code point GPT-2's byte-to-unicode map gives byte b. */
uint32_t tok_byte_char(uint8_t b);

#endif
