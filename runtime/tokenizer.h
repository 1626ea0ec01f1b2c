/*
 * tokenizer — BERT WordPiece tokenization, identical to Hugging Face's
 * BertTokenizerFast (the `tokenizers` 0.21 Rust pipeline), from the
 * vocabulary and settings a plan carries (plan.h `plan_tokenizer`).
 *
 * The pipeline is HF's, step for step (docs/tokenizer.md has the details):
 *
 *   1. special tokens written literally in the text ("[SEP]", "[MASK]", ...)
 *      are cut out first and map straight to their ids, as HF's added-token
 *      matcher does (exact bytes, not normalised, leftmost-longest);
 *   2. BertNormalizer on the rest: drop U+0000, U+FFFD and "other" characters
 *      (Cc, Cf, Co — but not unassigned ones), map whitespace to ' ', put
 *      spaces around CJK ideographs, then if stripping accents NFD and drop
 *      nonspacing marks, then if lowercasing, lowercase;
 *   3. BertPreTokenizer: split on whitespace, isolate punctuation;
 *   4. WordPiece: greedy longest-match-first with "##" continuations, [UNK]
 *      for a word of more than 100 code points or with no match;
 *   5. [CLS] A [SEP] (B [SEP]), token types 0 for the first part, 1 for B,
 *      and truncation by HF's 'longest_first' rule.
 *
 * Unicode facts come from utf8proc, corrected by small tables where the
 * Unicode versions inside `tokenizers` (an old category table, Rust's own
 * newer case tables) disagree with it; an exhaustive code-point sweep in the
 * tests (tests/golden/tokenizer-sweep.bin) proves the two agree everywhere.
 *
 * Input text must be valid UTF-8 (no surrogates, overlongs or code points
 * above U+10FFFF); anything else is a DIAG_CODE_INPUT error naming the byte
 * offset.  HF never sees such text: Python strings cannot hold it.
 *
 * A tokenizer is immutable after tokenizer_init, so one may serve many
 * threads, each with its own tokenizer_output (which also holds the scratch
 * buffers, so steady-state encoding allocates nothing).
 */
#ifndef BERTC_TOKENIZER_H
#define BERTC_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "plan.h"

#define TOKENIZER_MAX_INPUT_CHARS_PER_WORD 100
#define TOKENIZER_NSPECIAL 5                  /* unk, cls, sep, pad, mask */

typedef struct tokenizer {
    int lower, strip, chinese;                /* resolved settings, 0 or 1 */
    int64_t model_max_length;                 /* 0 = none */
    char *text;                               /* the vocabulary, one NUL-terminated token per line */
    const char **tok;                         /* [nvocab] id -> token text (into text) */
    uint32_t *tok_len;                        /* [nvocab] bytes */
    int32_t nvocab;
    int32_t *slot_id;                         /* open-addressing table, -1 = empty */
    uint32_t *slot_hash;
    uint32_t slot_mask;
    size_t max_token_bytes;                   /* longest vocabulary entry */
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id;   /* pad/mask -1 when absent */
    const char *special[TOKENIZER_NSPECIAL];  /* literal special tokens matched in text */
    size_t special_len[TOKENIZER_NSPECIAL];
    int32_t special_id[TOKENIZER_NSPECIAL];
    int nspecial;
    uint8_t special_first[256];               /* first bytes of the special tokens */
} tokenizer;

typedef struct tokenizer_output {
    int32_t *ids;                             /* [len] */
    int32_t *type_ids;                        /* [len] 0 for [CLS] A [SEP], 1 for B [SEP] */
    const char **tokens;                      /* [len] into the tokenizer; valid until tokenizer_free */
    size_t len;
    size_t len_a, len_b;                      /* tokens kept of text and pair (no specials) */
    size_t full_a, full_b;                    /* their counts before truncation */
    int truncated;
    /* scratch reused between calls */
    size_t cap;                               /* of ids */
    size_t aux_cap;                           /* of type_ids and tokens */
    int32_t *pair_ids;
    size_t pair_cap;
    uint32_t *cps;
    size_t cps_cap;
    char *words;                              /* tokenizer_split_words' result */
    size_t words_len, words_cap;
} tokenizer_output;

/*
 * Build from plan settings: token -> id is the line number of vocab.txt (a
 * later duplicate wins, lines lose only their '\n', as HF reads them).
 * [UNK], [CLS] and [SEP] (or the configured strings) must be in the
 * vocabulary.  Unspecified settings take HF's defaults: do_lower_case true,
 * tokenize_chinese_chars true, strip_accents = do_lower_case.
 */
int tokenizer_init(tokenizer *t, const plan_tokenizer *cfg, diag *d);
void tokenizer_free(tokenizer *t);

void tokenizer_output_init(tokenizer_output *o);
void tokenizer_output_free(tokenizer_output *o);

/*
 * Encode `text` (and `pair` unless NULL) into out, replacing its contents.
 * max_len > 0 truncates the whole sequence (special tokens included) to that
 * many tokens; 0 uses the model_max_length when there is one; < 0 never
 * truncates.  A max_len smaller than the special tokens (2, or 3 with a
 * pair) is an error (HF silently ignores it).  Invalid UTF-8 is an error.
 */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, const char *pair,
                     size_t pair_len, int64_t max_len, tokenizer_output *out, diag *d);

/* Token text of an id ("" for an id outside the vocabulary). */
const char *tokenizer_id_to_token(const tokenizer *t, int32_t id);
/* Id of a token, -1 if absent. */
int32_t tokenizer_token_to_id(const tokenizer *t, const char *token, size_t len);

/*
 * Normalise and pre-tokenize only (steps 1-3): out->words gets the words
 * joined by single spaces (NUL-terminated, words_len bytes), exactly HF's
 * `pre_tokenize_str(normalize_str(text))` words.  For tests and debugging.
 */
int tokenizer_split_words(const tokenizer *t, const char *text, size_t len, tokenizer_output *out,
                          diag *d);

#endif
