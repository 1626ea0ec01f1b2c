/*
 * golden — the one reader of the reference outputs in tests/golden/.
 *
 * Two formats, one reader (format of each in golden.c and docs/testing.md):
 *   .bgld  (tools/make_goldens.py) a text header and cases, each the inputs
 *          of one request and transformers' outputs for it.  Absent
 *          optional inputs/outputs are NULL: an absent token_type_ids means
 *          transformers was called without it (all 0), an absent
 *          attention_mask means all 1.
 *   .bsen  (tools/make_sentence_goldens.py) a text header and, per
 *          sentence, the UTF-8 text, the token ids the model's own
 *          tokenizer produced (already truncated to max_seq_length), the
 *          mean-pooled vector (sentence-transformers' Pooling output, before
 *          Normalize) and the final embedding (after Normalize), as
 *          sentence-transformers computed them in float32.
 * golden_load tells them apart by their magic and reads the whole file into
 * owned arrays, checking every length against the bytes that remain, so a
 * truncated or corrupt file is an error message, never an over-read.
 *
 * Also here, for the comparisons every golden test makes, the largest
 * magnitude and difference of two arrays, and for tying a golden to the
 * checkpoint in build/hf/ it was made from, the SHA-256 of a file (bertc's
 * runtime/common/sha256.h).
 */
#ifndef BERTC_TESTS_GOLDEN_H
#define BERTC_TESTS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

/* A request and transformers' outputs for it (.bgld). */
typedef struct golden_case {
    char *name;
    int len;                    /* S */
    int hidden;
    int32_t *input_ids;         /* [len] */
    int32_t *token_type_ids;    /* [len], NULL if absent */
    int32_t *attention_mask;    /* [len], NULL if absent */
    float *last_hidden_state;   /* [len * hidden], row-major */
    float *pooler_output;       /* [hidden], NULL if absent */
    int nlogits;                /* a task head's logits: [num_labels] or [S * num_labels] */
    float *logits;              /* NULL if absent */
    int nsentence;              /* sentence-transformers' embedding */
    float *sentence_embedding;  /* NULL if absent */
} golden_case;

/* A text and sentence-transformers' embedding of it (.bsen). */
typedef struct sentences_case {
    char *text;                 /* NUL-terminated UTF-8 (contains no NUL) */
    size_t text_len;            /* bytes, without the terminator */
    int n_ids;
    int32_t *ids;               /* [n_ids], [CLS] ... [SEP] */
    int dim;
    float *mean_pooled;         /* [dim], before L2 normalisation */
    float *embedding;           /* [dim], after L2 normalisation */
} sentences_case;

typedef struct golden_file {
    char *header;               /* NUL-terminated "key: value" lines */
    int count;                  /* cases of the one array that is set */
    golden_case *cases;         /* a .bgld file's, else NULL */
    sentences_case *sentences;  /* a .bsen file's, else NULL */
} golden_file;

/* Returns 0 on success.  On failure returns -1, writes a message naming the
 * file and the offset into err (if cap > 0) and leaves *g empty. */
int golden_load(golden_file *g, const char *path, char *err, size_t cap);
/* Same checks on an in-memory image; `name` is used in messages. */
int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name, char *err, size_t cap);
/* Frees everything and zeroes *g; safe on a zeroed or already freed struct. */
void golden_free(golden_file *g);

/* The .bgld case called `name`, or NULL. */
const golden_case *golden_find(const golden_file *g, const char *name);
/* The value of header line "key: value" copied into out (NUL-terminated);
 * returns 0, or -1 if there is no such line or it does not fit. */
int golden_header_value(const golden_file *g, const char *key, char *out, size_t cap);

/* max_i |x[i]|, and max_i |a[i] - b[i]|; a NaN anywhere gives NaN. */
double golden_max_abs(const float *x, size_t n);
double golden_max_abs_diff(const float *a, const float *b, size_t n);

/*
 * The plan tolerances of docs/testing.md, stated once: relative to the
 * output's largest |want| (fp32 1e-4, fp16 1.5e-2, bf16 5e-2) and a cosine
 * per row (0.999999, 0.999, 0.999).  golden_compare CHECKs one output of
 * `rows` rows of `cols` against them — a NaN fails both — with the scale
 * bounded below by `floor` (0: none; a head's logits use 1, see
 * docs/testing.md); with BERTC_E2E_VERBOSE set it prints both measures.
 * Returns 1 when within.
 */
typedef struct golden_tol {
    double rel, cos;
} golden_tol;

golden_tol golden_tolerance(const char *prec);
int golden_compare(const char *what, const float *got, const float *want, int64_t rows, int64_t cols, golden_tol t,
                   double floor);

/* SHA-256 of a whole file as 64 lowercase hex digits + NUL in hex[65];
 * returns 0, or -1 (with a message in err) if the file cannot be read. */
int golden_sha256_file(const char *path, char hex[65], char *err, size_t cap);

#endif
