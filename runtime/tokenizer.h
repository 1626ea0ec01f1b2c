/*
 * tokenizer — Hugging Face tokenization from a plan's tokenizer description
 * (tokdesc.h): WordPiece (BERT), byte-level BPE (RoBERTa) and SentencePiece
 * Unigram (XLM-RoBERTa), identical to the fast tokenizers `AutoTokenizer`
 * loads (the Rust `tokenizers` pipeline), ids, token types and offsets.
 *
 * The pipeline is HF's, stage for stage (docs/tokenizer.md has the details,
 * tok_internal.h the files):
 *
 *   1. added tokens that are matched in the raw text ("[SEP]", "<mask>", ...)
 *      are cut out first, with their single_word / lstrip / rstrip rules;
 *   2. each piece between them is normalised (BertNormalizer, Precompiled,
 *      Replace, Lowercase, Strip, in the described order), then split at the
 *      added tokens that are matched in normalised text;
 *   3. pre-tokenised into words (BertPreTokenizer, WhitespaceSplit,
 *      Metaspace, ByteLevel);
 *   4. each word through the model (WordPiece, BPE by merge rank, Unigram by
 *      Viterbi);
 *   5. the sequences truncated by 'longest_first' and put into the
 *      post-processor's template ([CLS] A [SEP] B [SEP], <s> A </s></s> B </s>,
 *      ...), with its token types.
 *
 * Every token carries the byte span of the input text it came from (HF's
 * offsets, in bytes; special tokens of the template get (0, 0)).
 *
 * Input text must be valid UTF-8 (no surrogates, overlongs or code points
 * above U+10FFFF) and shorter than 4 GiB; anything else is a
 * DIAG_CODE_INPUT error naming the byte offset.  HF never sees such text:
 * Python strings cannot hold it.
 *
 * A tokenizer is immutable after tokenizer_init, so one may serve many
 * threads, each with its own tokenizer_output (which also holds the scratch
 * buffers, so steady-state encoding allocates nothing).  It points into the
 * description it was built from, which must outlive it.
 */
#ifndef BERTC_TOKENIZER_H
#define BERTC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "diag.h"
#include "tok_internal.h"
#include "tokdesc.h"

typedef struct tok_merge_table {
    uint64_t *key;                            /* (left << 32 | right) + 1; 0 = empty */
    int32_t *rank, *id;
    uint32_t mask;
} tok_merge_table;

typedef struct tokenizer {
    const tokdesc *desc;
    tokdesc_model model;
    int64_t model_max_length;                 /* 0 = none */
    int32_t nids;                             /* vocabulary + added tokens past it */
    const char **id_text;                     /* [nids] */
    uint32_t *id_len;                         /* [nids] */
    tokmap vocab;                          /* the model's vocabulary */
    size_t max_token_bytes;                   /* longest vocabulary entry */
    int32_t unk_id;
    int32_t char_id[0x800];                   /* id of the one-character token of a code point below U+0800 */
    uint32_t *prefix_hash;                    /* Unigram: hashes of the vocabulary's prefixes, 0 = empty */
    uint32_t prefix_mask;
    tok_merge_table merges;                   /* BPE */
    int32_t byte_id[256];                     /* "<0xXX>" tokens for byte fallback, -1 if absent */
    double min_score;                         /* Unigram */
    tok_added_set raw, norm;                  /* added tokens matched in the raw / normalised text */
    uint32_t **norm_pat_text;                 /* scratch the normalised patterns were built in */
    int trim_offsets, trim_prefix_space;      /* RobertaProcessing's offset trimming */
} tokenizer;

typedef struct tokenizer_output {
    int32_t *ids;                             /* [len] */
    int32_t *type_ids;                        /* [len] */
    const char **tokens;                      /* [len] into the tokenizer; valid until tokenizer_free */
    int64_t *offsets;                         /* [2 * len] byte start, end in the input text (specials 0, 0) */
    uint8_t *special;                         /* [len] 1 for the template's special tokens */
    int32_t *seq;                             /* [len] 0 text, 1 pair, -1 the template's specials */
    size_t len;
    size_t len_a, len_b;                      /* tokens kept of text and pair (template tokens excluded) */
    size_t full_a, full_b;                    /* their counts before truncation */
    int truncated;
    size_t cap;                               /* of the arrays above */
    struct tok_scratch *scratch;              /* the stages' buffers, reused between calls */
    char *words;                              /* tokenizer_split_words' result */
    size_t words_len, words_cap;
} tokenizer_output;

/*
 * Build from a description (tokdesc_check must accept it; the plan reader
 * and the importer ensure that).  Fails only for memory or for what
 * tokdesc_check does not look at (added tokens and Replace patterns that are
 * not UTF-8, a Precompiled map whose structure is broken).
 */
int tokenizer_init(tokenizer *t, const tokdesc *desc, diag *d);
void tokenizer_free(tokenizer *t);

void tokenizer_output_init(tokenizer_output *o);
void tokenizer_output_free(tokenizer_output *o);

/*
 * Encode `text` (and `pair` unless NULL) into out, replacing its contents.
 * max_len > 0 truncates the whole sequence (special tokens included) to that
 * many tokens; 0 uses the model_max_length when there is one; < 0 never
 * truncates.  A max_len smaller than the template's special tokens is an
 * error (HF silently ignores it).  Invalid UTF-8 is an error.
 */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, const char *pair, size_t pair_len,
                     int64_t max_len, tokenizer_output *out, diag *d);

/* Token text of an id ("" for an id outside the tokenizer). */
const char *tokenizer_id_to_token(const tokenizer *t, int32_t id);
/* Id of a vocabulary entry or added token, -1 if absent. */
int32_t tokenizer_token_to_id(const tokenizer *t, const char *token, size_t len);
/* Special tokens the template adds for one text (pair 0) or a pair (pair 1). */
size_t tokenizer_num_special(const tokenizer *t, int pair);

/*
 * Normalise and pre-tokenize only (stages 1-3): out->words gets the words
 * joined by single spaces (NUL-terminated, words_len bytes), exactly HF's
 * `pre_tokenize_str(normalize_str(text))` words (ByteLevel words in their
 * byte characters), added tokens as themselves.  For tests and debugging.
 */
int tokenizer_split_words(const tokenizer *t, const char *text, size_t len, tokenizer_output *out, diag *d);

/* ---- the models (tok_wordpiece.c, tok_bpe.c, tok_unigram.c) ---- */

struct tok_scratch;
/* Tokens of one word (units [w->b, w->e) of u) appended to out. */
int tok_wordpiece_word(const tokenizer *t, struct tok_scratch *s, const tok_unit *u, const tok_span *w, tok_pieces *out);
int tok_bpe_word(const tokenizer *t, struct tok_scratch *s, const tok_unit *u, const tok_span *w, tok_pieces *out);
int tok_unigram_word(const tokenizer *t, struct tok_scratch *s, const tok_unit *u, const tok_span *w,
                     tok_pieces *out, diag *d);
int tok_merges_build(tok_merge_table *m, const tokdesc *d);
void tok_merges_free(tok_merge_table *m);

/* The scratch every stage draws on (one per tokenizer_output). */
typedef struct tok_scratch {
    tok_units raw;                            /* the input's characters */
    tok_units u, tmp;                         /* a piece being normalised, and its scratch */
    tok_units pu, ptmp;                       /* a piece being pre-tokenised, and its scratch */
    tok_spans pieces, words, tmpw, npieces;
    int32_t *piece_ids, *npiece_ids;
    size_t piece_ids_cap, npiece_ids_cap;
    tok_change *ch;
    size_t ch_cap;
    tok_pieces seq[2];                        /* the tokens of text and pair */
    /* BPE */
    struct tok_sym *sym;
    size_t sym_cap;
    void *heap;                               /* BPE's candidate merges */
    size_t heap_cap;
    /* Unigram */
    struct tok_node *node;
    size_t node_cap;
    char *bytes;
    size_t bytes_cap;
    uint32_t *at;
    size_t at_cap;
    uint32_t *seg;                            /* Unigram's best path: (start, end, id) per piece */
    size_t seg_cap;
} tok_scratch;

#endif
