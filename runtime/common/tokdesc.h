/*
 * tokdesc — the description of a tokenizer, as the plan carries it.
 *
 * Hugging Face describes a tokenizer as a pipeline of components in
 * tokenizer.json: added tokens (matched in the raw text before anything
 * else), a normaliser, a pre-tokeniser, a model (WordPiece, BPE or
 * Unigram) and a post-processor (the special tokens around the sequences).
 * This header is that description, reduced to the components bertc runs,
 * in one plain structure that every part of bertc shares: the importer and
 * the compiler fill it (compiler/frontend/hf_tokenizer.c from tokenizer.json,
 * vocab.json + merges.txt or vocab.txt), the plan writer and reader move it
 * through the file (docs/plan-format.md, TOKENIZER), and the runtime builds
 * its tokenizer from it (runtime/tokenizer.h).  It lives in runtime/common
 * because all of them may include it and none of them owns it.
 *
 * The vocabulary is the model's: ids 0..nvocab-1, each token's text
 * NUL-terminated in `vocab_text` at `vocab_off[id]`.  Added tokens carry
 * their own ids, which are either a vocabulary id (the same text) or follow
 * the vocabulary densely (nvocab, nvocab+1, ...), as Hugging Face numbers
 * them.  Everything is owned by the description (tokdesc_free frees it).
 */
#ifndef BERTC_TOKDESC_H
#define BERTC_TOKDESC_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

/* Numbers are part of the plan format (docs/plan-format.md). */
typedef enum tokdesc_model {
    TOKDESC_MODEL_WORDPIECE = 0,
    TOKDESC_MODEL_BPE = 1,
    TOKDESC_MODEL_UNIGRAM = 2,
    TOKDESC_MODEL_COUNT,
} tokdesc_model;

typedef enum tokdesc_norm_kind {
    TOKDESC_NORM_BERT = 0,         /* p[0] clean_text, p[1] handle_chinese_chars, p[2] strip_accents (-1: follow
                                      lowercase), p[3] lowercase */
    TOKDESC_NORM_PRECOMPILED = 1,  /* data: SentencePiece's compiled character map */
    TOKDESC_NORM_REPLACE = 2,      /* pattern -> content; p[0] 0: pattern is literal text, n >= 2: pattern is
                                      one character repeated n or more times (the regex "c{n,}") */
    TOKDESC_NORM_LOWERCASE = 3,
    TOKDESC_NORM_STRIP = 4,        /* p[0] left, p[1] right */
    TOKDESC_NORM_COUNT,
} tokdesc_norm_kind;

typedef enum tokdesc_pre_kind {
    TOKDESC_PRE_BERT = 0,          /* whitespace split, punctuation isolated */
    TOKDESC_PRE_BYTE_LEVEL = 1,    /* add_prefix_space, use_regex (GPT-2's split), trim_offsets; bytes to chars */
    TOKDESC_PRE_METASPACE = 2,     /* replacement, prepend_scheme, split */
    TOKDESC_PRE_WHITESPACE_SPLIT = 3,
    TOKDESC_PRE_COUNT,
} tokdesc_pre_kind;

typedef enum tokdesc_prepend {
    TOKDESC_PREPEND_ALWAYS = 0,
    TOKDESC_PREPEND_FIRST = 1,
    TOKDESC_PREPEND_NEVER = 2,
} tokdesc_prepend;

/* Template items: a special token, or one of the two sequences. */
typedef enum tokdesc_item_kind {
    TOKDESC_ITEM_SPECIAL = 0,
    TOKDESC_ITEM_SEQ_A = 1,
    TOKDESC_ITEM_SEQ_B = 2,
} tokdesc_item_kind;

/* Flags of an added token. */
enum {
    TOKDESC_ADDED_SINGLE_WORD = 1,
    TOKDESC_ADDED_LSTRIP = 2,
    TOKDESC_ADDED_RSTRIP = 4,
    TOKDESC_ADDED_NORMALIZED = 8,
    TOKDESC_ADDED_SPECIAL = 16,
    TOKDESC_ADDED_ALL = 31,
};

/* Model flags. */
enum {
    TOKDESC_FLAG_BYTE_FALLBACK = 1,  /* BPE, Unigram: unknown characters as <0xXX> byte tokens */
    TOKDESC_FLAG_FUSE_UNK = 2,       /* BPE: consecutive unknowns become one */
    TOKDESC_FLAG_IGNORE_MERGES = 4,  /* BPE: a word that is a vocabulary entry is taken whole */
    TOKDESC_FLAG_TRIM_OFFSETS = 8,   /* post-processor: offsets exclude surrounding whitespace (RoBERTa) */
    TOKDESC_FLAG_PREFIX_SPACE = 16,  /* post-processor: add_prefix_space (a first token's one space is kept) */
    TOKDESC_FLAG_ALL = 31,
};

typedef struct tokdesc_normalizer {
    tokdesc_norm_kind kind;
    int32_t p[4];
    char *pattern, *content;        /* REPLACE (NUL-terminated, no NUL inside) */
    uint8_t *data;                  /* PRECOMPILED */
    uint32_t data_len;
} tokdesc_normalizer;

typedef struct tokdesc_pretokenizer {
    tokdesc_pre_kind kind;
    int add_prefix_space, trim_offsets, use_regex;   /* BYTE_LEVEL */
    uint32_t replacement;                            /* METASPACE: a code point */
    tokdesc_prepend prepend_scheme;                  /* METASPACE */
    int split;                                       /* METASPACE */
} tokdesc_pretokenizer;

typedef struct tokdesc_added {
    int32_t id;
    char *content;                  /* non-empty, no NUL */
    uint32_t flags;                 /* TOKDESC_ADDED_* */
} tokdesc_added;

typedef struct tokdesc_item {
    tokdesc_item_kind kind;
    int32_t id;                     /* SPECIAL: the token's id */
    int32_t type_id;
} tokdesc_item;

typedef struct tokdesc {
    int present;
    tokdesc_model model;
    int64_t model_max_length;       /* 0: none */
    int32_t unk_id;                 /* -1: none */
    int32_t pad_id;                 /* -1: none (for padded batches) */
    uint32_t flags;                 /* TOKDESC_FLAG_* */
    uint32_t max_input_chars_per_word;   /* WordPiece */
    char *continuing_subword_prefix;     /* WordPiece ("##"); NULL for the others */

    int32_t nvocab;
    char *vocab_text;               /* nvocab NUL-terminated texts, back to back */
    size_t vocab_text_len;
    uint32_t *vocab_off;            /* [nvocab] */
    double *scores;                 /* Unigram: [nvocab] log probabilities; else NULL */
    int32_t nmerges;
    int32_t *merges;                /* BPE: [3 * nmerges] left, right, merged id, by rank */

    int nnormalizers;
    tokdesc_normalizer *normalizers;
    int npretokenizers;
    tokdesc_pretokenizer *pretokenizers;
    int nadded;
    tokdesc_added *added;
    int nsingle, npair;
    tokdesc_item *single, *pair;    /* the post-processor's templates */
} tokdesc;

void tokdesc_init(tokdesc *t);
void tokdesc_free(tokdesc *t);

/* Ids the description can produce: the vocabulary and the added tokens after it. */
int32_t tokdesc_id_count(const tokdesc *t);

/*
 * Text of an id: a vocabulary entry or an added token (NULL outside).
 */
const char *tokdesc_id_text(const tokdesc *t, int32_t id);

/*
 * Checks everything the runtime relies on: counts, ids in range, the
 * vocabulary offsets, merges, templates, added tokens (ids unique, dense
 * after the vocabulary), the enums and flags.  The plan reader and the
 * importer call it; the message names the field.
 */
int tokdesc_check(const tokdesc *t, diag *d);

/* 1 if s[0..n) is strict UTF-8. */
int tokdesc_utf8_valid(const uint8_t *s, size_t n);
/* The structure of a Precompiled (SentencePiece) character map. */
int tokdesc_check_charsmap(const uint8_t *data, uint32_t len, diag *d);

/*
 * Sets the vocabulary from `n` texts (copied; a text may not hold NUL).
 */
int tokdesc_set_vocab(tokdesc *t, const char *const *texts, const size_t *lens, int32_t n, diag *d);

/*
 * The description today's vocab.txt directories get, exactly
 * BertTokenizerFast's: BertNormalizer (clean, chinese, strip, lower as
 * given; -1 = unspecified), BertPreTokenizer, WordPiece ("##", 100), the
 * BERT template, and the special tokens that are lines of the vocabulary
 * as added tokens.  Token strings NULL take the defaults ("[UNK]", ...).
 * Lines lose only their '\n' (a '\r' stays); a later duplicate wins.
 */
int tokdesc_from_vocab_txt(tokdesc *t, const char *vocab, size_t len, int lower, int strip, int chinese,
                           const char *const tokens[5], diag *d);

#endif
