/*
 * hf_internal — the Hugging Face importer's parts and what they share.
 *
 * `bertc import` is three files: hf_util.c (text, YAML scalars, JSON files
 * with positions, single-field and single-weight checks), hf_family.c (what
 * each model family is: its config.json fields, its tensor names, its task
 * heads, and the graph text of its embeddings, layers and heads) and
 * hf_import.c (the directory: tokenizer files, sentence-transformers
 * modules, paths, the header of the YAML, the atomic write).  hf_import
 * calls the other two; hf_family calls hf_util; nothing calls back.
 */
#ifndef BERTC_HF_INTERNAL_H
#define BERTC_HF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"
#include "json.h"
#include "safetensors.h"

/* ---- hf_util.c */

/* A growing string; an allocation failure is remembered and reported once. */
typedef struct hf_text {
    char *p;
    size_t len, cap;
    int oom;
} hf_text;

void hf_text_init(hf_text *t);
void hf_text_free(hf_text *t);
void hf_text_append(hf_text *t, const char *s, size_t n);
void hf_text_printf(hf_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

char *hf_strdup(const char *s);
/* dir + "/" + name; NULL on allocation failure. */
char *hf_path_join(const char *dir, const char *name);
int hf_oom(diag *d);
int hf_is_regular_file(const char *path);
/* Shortest "%.Ng" spelling that reads back as the same float32. */
void hf_float_format(char *buf, size_t cap, float v);
/* The code point of the well-formed UTF-8 sequence at s (length in *n), or -1. */
long hf_utf8_decode(const unsigned char *s, size_t *n);
/* A double-quoted YAML scalar; a byte that is not UTF-8 becomes U+FFFD and sets *lossy. */
void hf_yaml_quoted_lossy(hf_text *t, const char *s, int *lossy);
void hf_yaml_quoted(hf_text *t, const char *s);
/* Plain when that reads back as the same string, quoted otherwise. */
void hf_yaml_scalar(hf_text *t, const char *s);

/* config.json and tokenizer_config.json are a few KiB; anything huge is not one. */
#define HF_JSON_MAX ((size_t)16 << 20)

/* A JSON document together with the file it came from, for diagnostics. */
typedef struct hf_json_file {
    char *path;
    char *text;
    size_t len;
    json_doc doc;
    int parsed;
} hf_json_file;

void hf_json_file_init(hf_json_file *f);
void hf_json_file_free(hf_json_file *f);
/* Loads dir/name, whose top-level value must be of type `want`. */
int hf_json_file_load_as(hf_json_file *f, const char *dir, const char *name, json_type want, diag *d);
int hf_json_file_load(hf_json_file *f, const char *dir, const char *name, diag *d);
/* An error at a value of a JSON file: FILE:LINE:COL, the line and a caret. */
int hf_json_error(const hf_json_file *f, const json_value *v, diag *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A short rendering of a JSON value for messages ('roberta', true, 1e-12 as written). */
const char *hf_json_show(const hf_json_file *f, const json_value *v, char *buf, size_t cap);
/* A positive integer field; `def` (> 0) when absent, or 0 if required. */
int hf_config_int(const hf_json_file *f, const char *key, int64_t def, int64_t *out, diag *d);
/* A field that must be absent or false (is_decoder, add_cross_attention). */
int hf_config_false(const hf_json_file *f, const char *key, diag *d);
/* "[2, 96]" into buf. */
const char *hf_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap);
/* The tensor `name` exists, is F32/F16/BF16 and has shape [d0] (ndim 1) or [d0, d1]. */
int hf_weight_check(const st_file *st, const char *name, int ndim, int64_t d0, int64_t d1, diag *d);

/* ---- hf_family.c */

typedef enum hf_family {
    HF_FAMILY_BERT,
    HF_FAMILY_ROBERTA,
    HF_FAMILY_XLM_ROBERTA,
    HF_FAMILY_DISTILBERT,
    HF_FAMILY_ELECTRA,
    HF_FAMILY_MPNET,
} hf_family;

/* The task head config.json's `architectures` names. */
typedef enum hf_task {
    HF_TASK_NONE,                /* XModel, XForPreTraining, XForMaskedLM: the encoder */
    HF_TASK_SEQUENCE,            /* XForSequenceClassification: logits [num_labels] */
    HF_TASK_TOKEN,               /* XForTokenClassification: logits [S, num_labels] */
} hf_task;

#define HF_MAX_LABELS 4096

typedef struct hf_config {
    hf_family family;
    const char *model_type;      /* config.json's spelling */
    int64_t hidden, heads, layers, intermediate, vocab, max_pos, type_vocab; /* type_vocab 0: no token types */
    int64_t embedding;           /* ELECTRA's embedding_size (== hidden elsewhere) */
    int64_t pad_positions;       /* RoBERTa-style position ids after this pad id; -1: positions 0..S-1 */
    int sinusoidal;              /* DistilBERT's sinusoid position table */
    int64_t buckets;             /* MPNet's relative-position buckets (0: none) */
    float eps;
    ir_act act;
    hf_task task;
    const char *architecture;    /* borrowed from the JSON document; NULL when absent */
    int64_t num_labels;
    const char **labels;         /* [num_labels] id2label, borrowed; NULL: none given */
    int sigmoid_score;           /* a CrossEncoder whose default activation is Sigmoid */
} hf_config;

/* How the checkpoint spells its tensor names (hf_weights_check fills it). */
typedef struct hf_names {
    const char *prefix;          /* "", "bert.", "roberta.", "distilbert.", "electra.", "mpnet." */
    const char *ln_gamma;        /* "weight" or "gamma" */
    const char *ln_beta;         /* "bias" or "beta" */
    int has_pooler;              /* the encoder's pooler (an output of a bare model) */
    int has_pos_table;           /* DistilBERT: the sinusoid table is stored (else computed) */
} hf_names;

/* config.json (its model_type chooses the family) -> c; labels are borrowed from f. */
int hf_config_read(const hf_json_file *f, hf_config *c, diag *d);
void hf_config_free(hf_config *c);
/* Every tensor the graph will name: present, floating point, the shape the config implies. */
int hf_weights_check(const st_file *st, const hf_config *c, hf_names *nm, diag *d);
/* The longest request the position table serves. */
int64_t hf_family_max_seq(const hf_config *c);
/* The family reads token_type_ids. */
int hf_family_has_types(const hf_config *c);
/* The graph: embeddings, layers, the pooler and the task head.  The encoder's
 * last hidden state is "h{layers}"; the head's result is "logits". */
void hf_family_yaml(hf_text *t, const hf_config *c, const hf_names *nm);

#endif
