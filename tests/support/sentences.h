/*
 * sentences — reader for the sentence-embedding goldens (tests/golden/, .bsen).
 *
 * A .bsen file (written by tools/make_sentence_goldens.py; format in
 * sentences.c and docs/testing.md "Sentence-embedding goldens") holds a text
 * header and, per sentence, the UTF-8 text, the token ids the model's own
 * tokenizer produced (already truncated to max_seq_length), the mean-pooled
 * vector (sentence-transformers' Pooling module output, before Normalize)
 * and the final embedding (after Normalize), as sentence-transformers
 * computed them in float32.  sentences_load reads the whole file into owned
 * arrays, checking every length against the bytes that remain, so a
 * truncated or corrupt file is an error message, never an over-read.
 *
 * Also here, for checking the header's model_sha256 against the checkpoint
 * in build/hf/: the SHA-256 of a file (bertc's runtime/common/sha256.h).
 */
#ifndef BERTC_TESTS_SENTENCES_H
#define BERTC_TESTS_SENTENCES_H

#include <stddef.h>
#include <stdint.h>

typedef struct sentences_case {
    char *text;                 /* NUL-terminated UTF-8 (contains no NUL) */
    size_t text_len;            /* bytes, without the terminator */
    int n_ids;
    int32_t *ids;               /* [n_ids], [CLS] ... [SEP] */
    int dim;
    float *mean_pooled;         /* [dim], before L2 normalisation */
    float *embedding;           /* [dim], after L2 normalisation */
} sentences_case;

typedef struct sentences_file {
    char *header;               /* NUL-terminated "key: value" lines */
    int count;
    sentences_case *cases;
} sentences_file;

/* Returns 0 on success.  On failure returns -1, writes a message naming the
 * file and the offset into err (if cap > 0) and leaves *s empty. */
int sentences_load(sentences_file *s, const char *path, char *err, size_t cap);
/* Same checks on an in-memory image; `name` is used in messages. */
int sentences_load_memory(sentences_file *s, const void *data, size_t len, const char *name, char *err,
                          size_t cap);
/* Frees everything and zeroes *s; safe on a zeroed or already freed struct. */
void sentences_free(sentences_file *s);

/* The value of header line "key: value" copied into out (NUL-terminated);
 * returns 0, or -1 if there is no such line or it does not fit. */
int sentences_header_value(const sentences_file *s, const char *key, char *out, size_t cap);

/* SHA-256 of a whole file as 64 lowercase hex digits + NUL in hex[65];
 * returns 0, or -1 (with a message in err) if the file cannot be read. */
int sentences_sha256_file(const char *path, char hex[65], char *err, size_t cap);

#endif
