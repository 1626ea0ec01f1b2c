/*
 * golden — reader for the Hugging Face reference outputs in tests/golden/.
 *
 * A .bgld file (written by tools/make_goldens.py; format in golden.c and
 * docs/testing.md) holds a text header and a list of cases, each the inputs
 * of one request and transformers' outputs for it.  golden_load reads the
 * whole file into owned arrays, checking every length against the bytes
 * that remain, so a truncated or corrupt file is an error message, never an
 * over-read.  Absent optional inputs/outputs are NULL: an absent
 * token_type_ids means transformers was called without it (all 0), an absent
 * attention_mask means all 1.
 */
#ifndef BERTC_TESTS_GOLDEN_H
#define BERTC_TESTS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct golden_case {
    char *name;
    int len;                    /* S */
    int hidden;
    int32_t *input_ids;         /* [len] */
    int32_t *token_type_ids;    /* [len], NULL if absent */
    int32_t *attention_mask;    /* [len], NULL if absent */
    float *last_hidden_state;   /* [len * hidden], row-major */
    float *pooler_output;       /* [hidden], NULL if absent */
} golden_case;

typedef struct golden_file {
    char *header;               /* NUL-terminated "key: value" lines */
    int count;
    golden_case *cases;
} golden_file;

/* Returns 0 on success.  On failure returns -1, writes a message naming the
 * file and the offset into err (if cap > 0) and leaves *g empty. */
int golden_load(golden_file *g, const char *path, char *err, size_t cap);
/* Same checks on an in-memory image; `name` is used in messages. */
int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name,
                       char *err, size_t cap);
/* Frees everything and zeroes *g; safe on a zeroed or already freed struct. */
void golden_free(golden_file *g);

/* The case called `name`, or NULL. */
const golden_case *golden_find(const golden_file *g, const char *name);
/* The value of header line "key: value" copied into out (NUL-terminated);
 * returns 0, or -1 if there is no such line or it does not fit. */
int golden_header_value(const golden_file *g, const char *key, char *out, size_t cap);

/* max_i |x[i]|, and max_i |a[i] - b[i]|; a NaN anywhere gives NaN. */
double golden_max_abs(const float *x, size_t n);
double golden_max_abs_diff(const float *a, const float *b, size_t n);

#endif
