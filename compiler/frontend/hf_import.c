/*
 * hf_import — a Hugging Face encoder checkpoint directory to a model YAML.
 *
 * This file reads the directory (config.json through hf_family.c, which
 * knows the families — BERT, RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA,
 * MPNet — and their task heads; the tokenizer files; sentence-transformers'
 * modules) and writes the YAML: its header, the family's graph, the
 * sentence head.
 *
 * The importer is a translator with a narrow contract: it recognises exactly
 * the checkpoints whose computation it can state as the op graph of
 * docs/model-yaml.md, and refuses everything else by name.  A config value
 * that would change the computation in a way the graph cannot express
 * (relative position embeddings, a decoder, an activation we do not have) is
 * an error naming the field, its value and where it sits in config.json; it
 * is never silently ignored, because a graph that loads and runs but
 * computes something else than transformers is the worst possible outcome.
 * Fields that do not touch the computation (dropout, initializer_range, ...)
 * are ignored.
 *
 * All checking happens before anything is written: the config, then every
 * weight the graph will name (present, floating point, the shape the config
 * implies), then the tokenizer files.  Only then is the YAML produced — in
 * memory, as one string — and written to OUT.tmp.PID beside OUT and renamed
 * over it, so a failure at any point leaves no file behind and an existing
 * OUT untouched (fileutil's file_atomic).
 *
 * The text is canonical: the same op order, spelling and comments as the
 * worked example of the format document, no timestamps, numbers in their
 * shortest float32 round-trip form.  Same inputs, same bytes — the committed
 * models/NAME.yaml files are checked against a fresh import by the tests.  Paths in
 * the YAML are relative to the YAML's directory, computed from the real
 * paths of the two directories (not of the files: a Hugging Face cache
 * snapshot links model.safetensors to a content-hashed blob, and the YAML
 * should keep the readable name).
 *
 * Activations (hf_family.c reads them): "gelu" and "gelu_python" are the erf form; "gelu_new",
 * "gelu_pytorch_tanh", "gelu_accurate" and "gelu_fast" are the tanh
 * approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).  gelu_fast writes
 * the same polynomial as x * 0.7978845608 * (1 + 0.044715x^2); its constant
 * is sqrt(2/pi) to 10 digits and rounds to the same float32, so it is the
 * same function.  quick_gelu (a sigmoid form), swish/silu and the rest are
 * refused.
 */
#include "hf_import.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fileutil.h"
#include "hf_internal.h"
#include "hf_tokenizer.h"
#include "model.h"

/* --------------------------------------------------------------- tokenizer */

/* Where the tokenizer's description comes from (hf_tokenizer.h). */
typedef enum hf_tok_source {
    HF_TOK_VOCAB_TXT,           /* vocab.txt alone: WordPiece as BertTokenizerFast builds it */
    HF_TOK_JSON,                /* tokenizer.json (and vocab.txt beside it for WordPiece, cross-checked) */
    HF_TOK_BPE_FILES,           /* vocab.json + merges.txt: RobertaTokenizerFast's byte-level BPE */
} hf_tok_source;

typedef struct hf_tokenizer {
    int present;                /* a tokenizer section is written */
    hf_tok_source source;
    int vocab_txt;              /* vocab.txt is named in the section */
    int do_lower_case;          /* -1 absent, 0, 1 */
    int strip_accents;          /* -2 absent, -1 null, 0, 1 */
    int tokenize_chinese_chars; /* -1 absent, 0, 1 */
    int add_prefix_space;       /* -1 absent, 0, 1 */
    int trim_offsets;           /* -1 absent, 0, 1 */
    int64_t model_max_length;   /* 0 absent */
    const char *tokens[5];      /* borrowed from the JSON document; NULL absent */
    const char *klass;          /* tokenizer_class, or the model type's class; NULL absent */
} hf_tokenizer;

static const char *const hf_token_keys[5] = {"unk_token", "cls_token", "sep_token", "pad_token", "mask_token"};

static int hf_tokenizer_bool(const hf_json_file *f, const char *key, int null_ok, int *out, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    if (!v) return 0;
    if (v->type == JSON_TYPE_BOOL) {
        *out = v->boolean;
        return 0;
    }
    if (null_ok && v->type == JSON_TYPE_NULL) {
        *out = -1;
        return 0;
    }
    char shown[256];
    return hf_json_error(f, v, d, "%s must be true or false%s, got %s", key, null_ok ? " or null" : "",
                         hf_json_show(f, v, shown, sizeof shown));
}

/* tokenizer_class: BERT's for vocab.txt alone; any class hf_tokenizer.c knows over tokenizer.json. */
static int hf_tokenizer_class(const hf_json_file *f, hf_tokenizer *tk, diag *d) {
    const json_value *v = json_get(&f->doc.root, "tokenizer_class");
    char shown[256];
    if (!v || v->type == JSON_TYPE_NULL) return 0;
    /* vocab.txt alone: the WordPiece tokenizers of BERT and those built on it
     * (DistilBERT's and ELECTRA's are BERT's; MPNet's is BERT's with <s> and
     * </s> for [CLS] and [SEP] and its own pair template, hf_tokenizer.c). */
    static const char *const classes[] = {"BertTokenizer", "DistilBertTokenizer", "ElectraTokenizer", "MPNetTokenizer"};
    int known = 0;
    if (v->type == JSON_TYPE_STRING)
        for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
            size_t n = strlen(classes[i]);
            known |= !strncmp(v->string, classes[i], n) && (!v->string[n] || !strcmp(v->string + n, "Fast"));
        }
    if (tk->source == HF_TOK_VOCAB_TXT && !known)
        return hf_json_error(f, v, d,
                             "tokenizer_class %s is not supported (expected 'BertTokenizer', 'DistilBertTokenizer', "
                             "'ElectraTokenizer' or 'MPNetTokenizer', or their Fast forms)",
                             hf_json_show(f, v, shown, sizeof shown));
    if (v->type != JSON_TYPE_STRING || !hf_tokenizer_class_known(v->string) ||
        (tk->source == HF_TOK_BPE_FILES && strncmp(v->string, "RobertaTokenizer", 16)))
        return hf_json_error(f, v, d, "tokenizer_class %s is not supported%s (see docs/tokenizer.md)",
                             hf_json_show(f, v, shown, sizeof shown),
                             tk->source == HF_TOK_BPE_FILES ? " with vocab.json + merges.txt" : "");
    tk->klass = v->string;
    return 0;
}

static int hf_tokenizer_read(const hf_json_file *f, hf_tokenizer *tk, diag *d) {
    const json_value *root = &f->doc.root, *v;
    char shown[256];
    if (hf_tokenizer_class(f, tk, d) || hf_tokenizer_bool(f, "do_lower_case", 0, &tk->do_lower_case, d) ||
        hf_tokenizer_bool(f, "strip_accents", 1, &tk->strip_accents, d) ||
        hf_tokenizer_bool(f, "tokenize_chinese_chars", 0, &tk->tokenize_chinese_chars, d) ||
        (tk->source != HF_TOK_VOCAB_TXT && (hf_tokenizer_bool(f, "add_prefix_space", 0, &tk->add_prefix_space, d) ||
                                            hf_tokenizer_bool(f, "trim_offsets", 0, &tk->trim_offsets, d))))
        return -1;
    /* Hugging Face writes 1e30 (VERY_LARGE_INTEGER) for "no limit": omit it. */
    if ((v = json_get(root, "model_max_length")) && v->type == JSON_TYPE_NUMBER && v->number_is_int &&
        v->integer >= 1 && v->integer <= INT32_MAX)
        tk->model_max_length = v->integer;
    for (int i = 0; i < 5; i++) {
        if (!(v = json_get(root, hf_token_keys[i])) || v->type == JSON_TYPE_NULL) continue;
        const json_value *s = v;
        if (v->type == JSON_TYPE_OBJECT) s = json_get(v, "content");
        if (!s || s->type != JSON_TYPE_STRING)
            return hf_json_error(f, v, d, "%s must be a string or an object with a string 'content', got %s",
                                 hf_token_keys[i], hf_json_show(f, v, shown, sizeof shown));
        if (s->string_len == 0 || strlen(s->string) != s->string_len)
            return hf_json_error(f, s, d, "%s must be a non-empty string without NUL characters",
                                 hf_token_keys[i]);
        tk->tokens[i] = s->string;
    }
    return 0;
}

/* ------------------------------------------------------------------ paths */

/*
 * The path of `target` (absolute, canonical) relative to directory `from`
 * (absolute, canonical).  Between two absolute paths a relative one always
 * exists; the absolute target is the answer only when `from` is not
 * absolute, which realpath() never gives.
 */
static char *hf_path_relative(const char *from, const char *target) {
    if (from[0] != '/' || target[0] != '/') return hf_strdup(target);
    /* Length of the common leading run of whole components. */
    size_t common = 0, i = 0;
    for (;;) {
        if (from[i] == '\0' && (target[i] == '/' || target[i] == '\0')) {
            common = i;
            break;
        }
        if (from[i] != target[i]) break;
        if (from[i] == '/') common = i;
        i++;
    }
    if (strcmp(from, "/") == 0) common = 0;
    /* Components of `from` after the common part each become "..". */
    size_t ups = 0;
    for (const char *c = from + common; *c; c++)
        if (*c == '/' && c[1] != '\0') ups++;
    const char *rest = target + common;
    while (*rest == '/') rest++;
    size_t n = ups * 3 + strlen(rest) + 1;
    char *out = malloc(n);
    if (!out) return NULL;
    out[0] = '\0';
    for (size_t k = 0; k < ups; k++) strcat(out, "../");
    strcat(out, rest);
    return out;
}

/* -------------------------------------------------- sentence-transformers */

/*
 * A sentence-transformers directory says how its sentence embedding is made
 * in modules.json: a list of modules run in order, each {type, path}.  bertc
 * states exactly the common heads as ops: Transformer (the encoder itself,
 * in HF_DIR), Pooling (cls or mean, from PATH/config.json), an optional
 * Dense (a Linear from the pooled size to out_features, with its bias and
 * a Tanh, ReLU or Identity activation; its weights are PATH/model.safetensors,
 * which the YAML names through `extra_weights` with the prefix "PATH/") and
 * an optional Normalize.  Anything else — another module, another pooling
 * mode (max, weightedmean, lasttoken, mean_sqrt_len) or several modes at once
 * (the embedding would be their concatenation) — is refused naming the file
 * and the key, for the same reason the config is checked strictly: a graph
 * that loads but computes something else than sentence-transformers is the
 * worst outcome.  Pooling's include_prompt only matters when a prompt is
 * encoded with the text, which a request to bertc never is, so it is not read.
 */
typedef struct hf_head {
    int present;                /* modules.json has a Pooling module */
    ir_pool_mode mode;
    int normalize;              /* a Normalize module follows it */
    char pool_config[512];      /* the Pooling module's config.json, relative to the directory */
    int dense;                  /* a Dense module follows the Pooling */
    char dense_dir[256];        /* its path, relative to the directory */
    int64_t dense_out;          /* out_features */
    int dense_bias;
    int dense_has_act;
    ir_act dense_act;
} hf_head;

#define HF_ST_TYPE "sentence_transformers.models."

/* A string member of a modules.json entry; error at the entry when absent. */
static int hf_st_string(const hf_json_file *f, const json_value *entry, size_t idx, const char *key,
                        const char **out, diag *d) {
    const json_value *v = json_get(entry, key);
    char shown[256];
    if (!v) return hf_json_error(f, entry, d, "module %zu has no '%s' (expected a string)", idx, key);
    if (v->type != JSON_TYPE_STRING || strlen(v->string) != v->string_len)
        return hf_json_error(f, v, d, "module %zu: %s must be a string, got %s", idx, key,
                             hf_json_show(f, v, shown, sizeof shown));
    *out = v->string;
    return 0;
}

/* PATH/config.json of a Pooling module -> head->mode. */
static int hf_st_pooling_read(const char *hf_dir, const char *path, const hf_config *cfg, hf_head *head,
                              diag *d) {
    static const struct {
        const char *key;
        int supported;
        ir_pool_mode mode;
    } modes[] = {
        {"pooling_mode_cls_token", 1, IR_POOL_CLS},
        {"pooling_mode_mean_tokens", 1, IR_POOL_MEAN},
        {"pooling_mode_max_tokens", 0, IR_POOL_CLS},
        {"pooling_mode_mean_sqrt_len_tokens", 0, IR_POOL_CLS},
        {"pooling_mode_weightedmean_tokens", 0, IR_POOL_CLS},
        {"pooling_mode_lasttoken", 0, IR_POOL_CLS},
    };
    char *rel = NULL;
    if (*path) {
        size_t n = strlen(path) + strlen("/config.json") + 1;
        if (!(rel = malloc(n))) return hf_oom(d);
        snprintf(rel, n, "%s/config.json", path);
    }
    hf_json_file f;
    hf_json_file_init(&f);
    snprintf(head->pool_config, sizeof head->pool_config, "%s", rel ? rel : "config.json");
    int rc = hf_json_file_load(&f, hf_dir, rel ? rel : "config.json", d);
    free(rel);
    const json_value *v, *first = NULL;
    const char *first_key = NULL;
    char shown[256];
    if (rc) goto done;
    if ((v = json_get(&f.doc.root, "word_embedding_dimension")) &&
        !(v->type == JSON_TYPE_NUMBER && v->number_is_int && v->integer == cfg->hidden)) {
        rc = hf_json_error(&f, v, d, "word_embedding_dimension %s does not match the model's hidden_size %lld",
                           hf_json_show(&f, v, shown, sizeof shown), (long long)cfg->hidden);
        goto done;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (!(v = json_get(&f.doc.root, modes[i].key))) continue;
        if (v->type != JSON_TYPE_BOOL) {
            rc = hf_json_error(&f, v, d, "%s must be true or false, got %s", modes[i].key,
                               hf_json_show(&f, v, shown, sizeof shown));
            goto done;
        }
        if (!v->boolean) continue;
        if (!modes[i].supported) {
            rc = hf_json_error(&f, v, d, "%s true is not supported (bertc pools with pooling_mode_cls_token or "
                                         "pooling_mode_mean_tokens only)", modes[i].key);
            goto done;
        }
        if (first) {
            rc = hf_json_error(&f, v, d, "%s and %s are both true: several pooling modes at once are not supported "
                                         "(the embedding would be their concatenation)", first_key, modes[i].key);
            goto done;
        }
        first = v;
        first_key = modes[i].key;
        head->mode = modes[i].mode;
    }
    if (!first)
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: no pooling mode is set (expected pooling_mode_cls_token or "
                                          "pooling_mode_mean_tokens true)", f.path);
done:
    hf_json_file_free(&f);
    return rc;
}

/*
 * sentence-transformers truncates to the Transformer module's
 * max_seq_length (sentence_bert_config.json), not to the tokenizer's
 * model_max_length: a plan that embeds like sentence-transformers must cut
 * where it cuts, so that length becomes the tokenizer's maximum.  Its
 * do_lower_case (lowercase the text before the tokenizer) is not modelled.
 */
static int hf_st_max_seq_read(const char *hf_dir, hf_tokenizer *tk, diag *d) {
    char *p = hf_path_join(hf_dir, "sentence_bert_config.json");
    if (!p) return hf_oom(d);
    int exists = hf_is_regular_file(p);
    free(p);
    if (!exists) return 0;
    hf_json_file f;
    hf_json_file_init(&f);
    int rc = hf_json_file_load(&f, hf_dir, "sentence_bert_config.json", d);
    const json_value *v;
    char shown[256];
    if (!rc && (v = json_get(&f.doc.root, "max_seq_length")) && v->type != JSON_TYPE_NULL) {
        if (v->type != JSON_TYPE_NUMBER || !v->number_is_int || v->integer < 1 || v->integer > INT32_MAX)
            rc = hf_json_error(&f, v, d, "max_seq_length must be a positive integer, got %s",
                               hf_json_show(&f, v, shown, sizeof shown));
        else
            tk->model_max_length = v->integer;
    }
    if (!rc && (v = json_get(&f.doc.root, "do_lower_case")) && v->type == JSON_TYPE_BOOL && v->boolean)
        rc = hf_json_error(&f, v, d, "do_lower_case true (lowercasing before the tokenizer) is not supported");
    hf_json_file_free(&f);
    return rc;
}

/* PATH/model.safetensors of a Dense module: linear.weight [out, in] (and linear.bias). */
static int hf_st_dense_weights(const char *hf_dir, const hf_config *cfg, hf_head *head, diag *d) {
    char rel[600];
    snprintf(rel, sizeof rel, "%s/model.safetensors", head->dense_dir);
    char *path = hf_path_join(hf_dir, rel);
    if (!path) return hf_oom(d);
    int rc;
    st_file st;
    if (!hf_is_regular_file(path))
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: no such file (bertc reads a Dense module's weights from safetensors; "
                                          "a pytorch_model.bin must be converted)", path);
    else if (!(rc = st_file_open(&st, path, d))) {
        rc = hf_weight_check(&st, "linear.weight", 2, head->dense_out, cfg->hidden, d) ||
             (head->dense_bias && hf_weight_check(&st, "linear.bias", 1, head->dense_out, 0, d));
        st_file_close(&st);
    }
    free(path);
    return rc ? -1 : 0;
}

/* PATH/config.json of a Dense module, and its weights. */
static int hf_st_dense_read(const char *hf_dir, const char *path, const hf_config *cfg, hf_head *head, diag *d) {
    static const struct {
        const char *name;
        int has_act;
        ir_act act;
    } acts[] = {{"torch.nn.modules.activation.Tanh", 1, IR_ACT_TANH},
                {"torch.nn.modules.activation.ReLU", 1, IR_ACT_RELU},
                {"torch.nn.modules.linear.Identity", 0, IR_ACT_TANH}};
    char rel[600], shown[256];
    if (!*path || strlen(path) >= sizeof head->dense_dir || strchr(path, '"') || strstr(path, ".."))
        return diag_set(d, DIAG_CODE_INPUT, "%s/modules.json: Dense path '%s' is not supported (expected a plain "
                                            "sub-folder such as 2_Dense)", hf_dir, path);
    snprintf(head->dense_dir, sizeof head->dense_dir, "%s", path);
    snprintf(rel, sizeof rel, "%s/config.json", path);
    hf_json_file f;
    hf_json_file_init(&f);
    int rc = hf_json_file_load(&f, hf_dir, rel, d);
    const json_value *v;
    int64_t in_features = 0;
    if (!rc) rc = hf_config_int(&f, "in_features", 0, &in_features, d) || hf_config_int(&f, "out_features", 0, &head->dense_out, d);
    if (!rc && (v = json_get(&f.doc.root, "in_features")) && v->integer != cfg->hidden)
        rc = hf_json_error(&f, v, d, "in_features %lld does not match the pooled size %lld", (long long)v->integer,
                           (long long)cfg->hidden);
    head->dense_bias = 1;
    if (!rc && (v = json_get(&f.doc.root, "bias")) && !(rc = v->type != JSON_TYPE_BOOL))
        head->dense_bias = v->boolean;
    else if (!rc && v)
        rc = hf_json_error(&f, v, d, "bias must be true or false, got %s", hf_json_show(&f, v, shown, sizeof shown));
    size_t k = sizeof acts / sizeof acts[0], i = k;
    if (!rc && (v = json_get(&f.doc.root, "activation_function")) && v->type == JSON_TYPE_STRING)
        for (i = 0; i < k && strcmp(v->string, acts[i].name); i++) {}
    if (!rc && (!v || i == k))
        rc = v ? hf_json_error(&f, v, d, "activation_function %s is not supported (expected Tanh, ReLU or Identity "
                                         "from torch.nn.modules)", hf_json_show(&f, v, shown, sizeof shown))
               : diag_set(d, DIAG_CODE_INPUT, "%s: missing field 'activation_function'", f.path);
    if (!rc) {
        head->dense_has_act = acts[i].has_act;
        head->dense_act = acts[i].act;
        head->dense = 1;
    }
    hf_json_file_free(&f);
    return rc ? -1 : hf_st_dense_weights(hf_dir, cfg, head, d);
}

/* One modules.json entry of type `kind` into head; *seen tracks the order. */
static int hf_st_module(const hf_json_file *f, const json_value *e, size_t i, const char *hf_dir,
                        const hf_config *cfg, hf_head *head, int *seen, diag *d) {
    const char *type, *path;
    if (hf_st_string(f, e, i, "type", &type, d) || hf_st_string(f, e, i, "path", &path, d)) return -1;
    const json_value *tv = json_get(e, "type"), *pv = json_get(e, "path");
    const char *kind = strncmp(type, HF_ST_TYPE, strlen(HF_ST_TYPE)) ? "" : type + strlen(HF_ST_TYPE);
    if (*seen == 3 && strcmp(kind, "Normalize"))
        return hf_json_error(f, tv, d, "type '%s' after Normalize is not supported (expected Normalize last)", type);
    if (!strcmp(kind, "Transformer")) {
        if (i != 0) return hf_json_error(f, tv, d, "type '%s' as module %zu is not supported (expected it first)", type, i);
        if (*path && strcmp(path, "."))
            return hf_json_error(f, pv, d, "path '%s' of the Transformer module is not supported (expected '': "
                                           "bertc reads the transformer from %s itself)", path, hf_dir);
        *seen = 1;
        return 0;
    }
    if (!strcmp(kind, "Pooling")) {
        if (*seen != 1)
            return hf_json_error(f, tv, d, "type '%s' as module %zu is not supported (expected one Pooling "
                                           "right after the Transformer)", type, i);
        *seen = 2;
        if (hf_st_pooling_read(hf_dir, path, cfg, head, d)) return -1;
        head->present = 1;
        return 0;
    }
    if (!strcmp(kind, "Dense")) {
        if (*seen != 2 || head->dense)
            return hf_json_error(f, tv, d, "type '%s' as module %zu is not supported (expected one Dense "
                                           "right after the Pooling)", type, i);
        return hf_st_dense_read(hf_dir, path, cfg, head, d);
    }
    if (!strcmp(kind, "Normalize")) {
        if (*seen != 2)
            return hf_json_error(f, tv, d, "type '%s' as module %zu is not supported (expected one Normalize "
                                           "after the Pooling [and Dense])", type, i);
        *seen = 3;
        head->normalize = 1;
        return 0;
    }
    return hf_json_error(f, tv, d, "module type '%s' is not supported (expected " HF_ST_TYPE "Transformer, "
                                   "Pooling, Dense or Normalize)", type);
}

/* HF_DIR/modules.json, if there is one -> head (present = 0 without it). */
static int hf_st_read(const char *hf_dir, const hf_config *cfg, hf_head *head, diag *d) {
    memset(head, 0, sizeof *head);
    char *mpath = hf_path_join(hf_dir, "modules.json");
    if (!mpath) return hf_oom(d);
    int exists = hf_is_regular_file(mpath);
    free(mpath);
    if (!exists) return 0;
    hf_json_file f;
    hf_json_file_init(&f);
    int rc = hf_json_file_load_as(&f, hf_dir, "modules.json", JSON_TYPE_ARRAY, d), seen = 0;
    for (size_t i = 0; !rc && i < f.doc.root.count; i++) {
        const json_value *e = &f.doc.root.items[i];
        char shown[256];
        if (e->type != JSON_TYPE_OBJECT)
            rc = hf_json_error(&f, e, d, "module %zu must be an object with 'type' and 'path', got %s", i,
                               hf_json_show(&f, e, shown, sizeof shown));
        else
            rc = hf_st_module(&f, e, i, hf_dir, cfg, head, &seen, d);
    }
    hf_json_file_free(&f);
    return rc;
}

/* ------------------------------------------------------------------- YAML */

typedef struct hf_yaml_inputs {
    const char *name;
    const char *weights_rel;
    const char *vocab_rel;      /* vocab.txt, NULL: not named */
    const char *tok_rel[3];     /* tokenizer.json, vocab.json, merges.txt; NULL: not named */
    const char *dense_rel;      /* the Dense module's weights, NULL if none */
    const hf_config *cfg;
    const hf_names *names;
    const hf_tokenizer *tok;
    const hf_head *head;
} hf_yaml_inputs;

/* Inputs and outputs; a head's logits first (what `bertc run --output` writes). */
static void hf_yaml_interface(hf_text *t, const hf_yaml_inputs *in) {
    const hf_config *c = in->cfg;
    hf_text_printf(t, "inputs:\n  input_ids: {dtype: int32, shape: [S]}\n");
    if (hf_family_has_types(c)) hf_text_printf(t, "  token_type_ids: {dtype: int32, shape: [S], default: 0}\n");
    hf_text_printf(t, "  attention_mask: {dtype: int32, shape: [S], default: 1}\noutputs:\n");
    if (c->task != HF_TASK_NONE) hf_text_printf(t, "  logits: logits\n");
    hf_text_printf(t, "  last_hidden_state: h%lld\n", (long long)c->layers);
    if (in->names->has_pooler) hf_text_printf(t, "  pooler_output: pooled\n");
    if (in->head->present) hf_text_printf(t, "  sentence_embedding: sentence_embedding\n");
    if (c->task == HF_TASK_NONE) return;
    hf_text_printf(t, "labels: [");
    for (int64_t i = 0; i < c->num_labels; i++) {
        if (i) hf_text_printf(t, ", ");
        if (c->labels)
            hf_yaml_quoted(t, c->labels[i]);
        else
            hf_text_printf(t, "LABEL_%lld", (long long)i);
    }
    hf_text_printf(t, "]\n");
}

/* The header: provenance, name, weights, sizes, inputs and outputs. */
static void hf_yaml_header(hf_text *t, const hf_yaml_inputs *in) {
    const hf_config *c = in->cfg;
    hf_text_printf(t, "# generated by bertc import from ");
    for (const char *ch = in->name; *ch; ch++) /* a comment ends at a line break; printable ASCII only */
        hf_text_append(t, ((unsigned char)*ch < 0x20 || (unsigned char)*ch >= 0x7f) ? "?" : ch, 1);
    hf_text_printf(t, "\nbertc: 1\nname: ");
    hf_yaml_scalar(t, in->name);
    hf_text_printf(t, "\nweights: ");
    hf_yaml_scalar(t, in->weights_rel);
    if (in->dense_rel) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/", in->head->dense_dir);
        hf_text_printf(t, "\nextra_weights: {");
        hf_yaml_quoted(t, prefix);
        hf_text_printf(t, ": ");
        hf_yaml_scalar(t, in->dense_rel);
        hf_text_printf(t, "}");
    }
    hf_text_printf(t, "\nmax_seq_len: %lld\n", (long long)hf_family_max_seq(c));
    hf_text_printf(t, "dims: {H: %lld, NH: %lld, HD: %lld}\n", (long long)c->hidden, (long long)c->heads,
                   (long long)(c->hidden / c->heads));
    hf_yaml_interface(t, in);
}

/* The tokenizer section (tokenizer_config.json's settings). */
static void hf_yaml_tokenizer(hf_text *t, const hf_yaml_inputs *in) {
    const hf_tokenizer *tk = in->tok;
    if (!tk->present) return;
    static const char *const file_keys[4] = {"json", "vocab_json", "merges", "vocab"};
    const char *files[4] = {in->tok_rel[0], in->tok_rel[1], in->tok_rel[2], tk->vocab_txt ? in->vocab_rel : NULL};
    hf_text_printf(t, "tokenizer:\n");
    for (int i = 0; i < 4; i++) {
        if (!files[i]) continue;
        hf_text_printf(t, "  %s: ", file_keys[i]);
        hf_yaml_scalar(t, files[i]);
        hf_text_printf(t, "\n");
    }
    /* Over vocab.txt only MPNet's class changes the ids (its template); BERT's is the default. */
    if (tk->klass && (tk->source != HF_TOK_VOCAB_TXT || hf_tokenizer_class_is_mpnet(tk->klass))) {
        hf_text_printf(t, "  class: ");
        hf_yaml_quoted(t, tk->klass);
        hf_text_printf(t, "\n");
    }
    if (tk->do_lower_case >= 0) hf_text_printf(t, "  do_lower_case: %s\n", tk->do_lower_case ? "true" : "false");
    if (tk->strip_accents >= -1)
        hf_text_printf(t, "  strip_accents: %s\n", tk->strip_accents < 0 ? "null" : tk->strip_accents ? "true" : "false");
    if (tk->tokenize_chinese_chars >= 0)
        hf_text_printf(t, "  tokenize_chinese_chars: %s\n", tk->tokenize_chinese_chars ? "true" : "false");
    if (tk->add_prefix_space >= 0) hf_text_printf(t, "  add_prefix_space: %s\n", tk->add_prefix_space ? "true" : "false");
    if (tk->trim_offsets >= 0) hf_text_printf(t, "  trim_offsets: %s\n", tk->trim_offsets ? "true" : "false");
    if (tk->model_max_length > 0) hf_text_printf(t, "  model_max_length: %lld\n", (long long)tk->model_max_length);
    for (int i = 0; i < 5; i++) {
        if (!tk->tokens[i]) continue;
        hf_text_printf(t, "  %s: ", hf_token_keys[i]);
        hf_yaml_quoted(t, tk->tokens[i]);
        hf_text_printf(t, "\n");
    }
}

/* The sentence-transformers head: pool [-> Dense] [-> l2_normalize]. */
static void hf_yaml_sentence(hf_text *t, const hf_yaml_inputs *in) {
    const hf_head *hd = in->head;
    if (!hd->present) return;
    long long L = (long long)in->cfg->layers;
    const char *pool_out = hd->normalize || hd->dense ? "sentence_pool" : "sentence_embedding";
    hf_text_printf(t, "  # sentence-transformers head (modules.json): %s pooling%s%s\n", ir_pool_mode_name(hd->mode),
                   hd->dense ? ", Dense" : "", hd->normalize ? ", L2 normalisation" : "");
    if (hd->mode == IR_POOL_MEAN)
        hf_text_printf(t, "  - {op: pool, out: %s, x: h%lld, mask: attention_mask, mode: mean}\n", pool_out, L);
    else
        hf_text_printf(t, "  - {op: pool, out: %s, x: h%lld, mode: cls}\n", pool_out, L);
    const char *last = pool_out;
    if (hd->dense) {
        const char *dense_out = hd->normalize ? "sentence_dense" : "sentence_embedding", *p = hd->dense_dir;
        hf_text_printf(t,
                       "  - {op: reshape, out: dense_x, x: sentence_pool, shape: [1, H]}\n"
                       "  - {op: matmul, out: dense_mm, x: dense_x, weight: \"%s/linear.weight\"}\n",
                       p);
        const char *cur = "dense_mm";
        if (hd->dense_bias) {
            hf_text_printf(t, "  - {op: bias_add, out: dense_b, x: dense_mm, bias: \"%s/linear.bias\"}\n", p);
            cur = "dense_b";
        }
        if (hd->dense_has_act) {
            hf_text_printf(t, "  - {op: activation, out: dense_act, x: %s, fn: %s}\n", cur, ir_act_name(hd->dense_act));
            cur = "dense_act";
        }
        hf_text_printf(t, "  - {op: reshape, out: %s, x: %s, shape: [%lld]}\n", dense_out, cur,
                       (long long)hd->dense_out);
        last = dense_out;
    }
    if (hd->normalize) hf_text_printf(t, "  - {op: l2_normalize, out: sentence_embedding, x: %s}\n", last);
}

static void hf_yaml_write(hf_text *t, const hf_yaml_inputs *in) {
    hf_yaml_header(t, in);
    hf_yaml_tokenizer(t, in);
    hf_family_yaml(t, in->cfg, in->names);
    hf_yaml_sentence(t, in);
}

/* ------------------------------------------------------------------ output */

/* Through OUT.tmp.PID renamed over OUT (fileutil): nothing is left on failure. */
static int hf_output_write(const char *out_yaml, const hf_text *t, diag *d) {
    file_atomic fa;
    if (file_atomic_open(&fa, out_yaml, d)) return -1;
    int ok = file_atomic_write(&fa, t->p, t->len) == 0;
    return file_atomic_commit(&fa, ok, d);
}

/* realpath() of the directory that will hold `out_yaml`. */
static char *hf_output_dir_real(const char *out_yaml, diag *d) {
    const char *slash = strrchr(out_yaml, '/');
    char *dir;
    if (!slash)
        dir = hf_strdup(".");
    else if (slash == out_yaml)
        dir = hf_strdup("/");
    else {
        size_t n = (size_t)(slash - out_yaml);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, out_yaml, n);
            dir[n] = '\0';
        }
    }
    if (!dir) {
        hf_oom(d);
        return NULL;
    }
    char *real = realpath(dir, NULL);
    if (!real) diag_set(d, DIAG_CODE_INPUT, "%s: cannot write: directory '%s' is not accessible (%s)", out_yaml, dir,
                        strerror(errno));
    free(dir);
    return real;
}

/* ------------------------------------------------------------------- entry */

/* What hf_import_run reads and makes, freed in one place. */
typedef struct hf_import_state {
    hf_json_file cfg_file, tok_file;
    hf_config cfg;
    hf_names names;
    hf_tokenizer tok;
    hf_head head;
    char *hf_real, *out_dir;                   /* the checkpoint's and the YAML folder's real paths */
    char *weights_rel, *vocab_rel, *dense_rel; /* paths relative to the YAML */
    char *tok_rel[3];                          /* tokenizer.json, vocab.json, merges.txt relative to the YAML */
    tokdesc *want_desc;                        /* hf_import_tokenizer_desc: the validated description goes here */
} hf_import_state;

static void hf_import_state_free(hf_import_state *s) {
    hf_json_file_free(&s->cfg_file);
    hf_json_file_free(&s->tok_file);
    free(s->hf_real);
    free(s->out_dir);
    free(s->weights_rel);
    free(s->vocab_rel);
    free(s->dense_rel);
    for (int i = 0; i < 3; i++) free(s->tok_rel[i]);
    hf_config_free(&s->cfg);
}

static int hf_import_check_dir(const char *hf_dir, const char *out_yaml, diag *d) {
    if (!hf_dir || !*hf_dir || !out_yaml || !*out_yaml)
        return diag_set(d, DIAG_CODE_USAGE, "bertc import: expected a model directory and an output path");
    struct stat sb;
    if (stat(hf_dir, &sb) != 0)
        return diag_set(d, DIAG_CODE_INPUT, "%s: cannot open model directory (%s)", hf_dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return diag_set(d, DIAG_CODE_INPUT, "%s: not a directory (expected a Hugging Face model directory)", hf_dir);
    return 0;
}

/* model.safetensors: present, and holding every tensor the config implies. */
static int hf_import_weights(const char *hf_dir, hf_import_state *s, diag *d) {
    char *st_path = hf_path_join(hf_dir, "model.safetensors");
    if (!st_path) return hf_oom(d);
    int rc;
    st_file st;
    if (!hf_is_regular_file(st_path))
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: no such file (bertc import reads safetensors checkpoints only)", st_path);
    else if (!(rc = st_file_open(&st, st_path, d))) {
        rc = hf_weights_check(&st, &s->cfg, &s->names, d);
        st_file_close(&st);
    }
    free(st_path);
    return rc;
}

/* 1 if `token` is a whole line of the vocabulary text (LF or CRLF lines). */
static int hf_vocab_has(const char *text, size_t len, const char *token) {
    size_t n = strlen(token);
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len, e = end;
        if (e > start && text[e - 1] == '\r') e--;
        if (e - start == n && !memcmp(text + start, token, n)) return 1;
        start = end + 1;
    }
    return 0;
}

/*
 * The vocabulary must be usable: a regular file, not empty, holding the
 * unknown, classifier and separator tokens the tokenizer needs (the
 * runtime's tokenizer refuses it otherwise, and an import that succeeded
 * would fail only at the first request).  `bertc compile` checks it again
 * with the runtime's own tokenizer.
 */
static int hf_vocab_check(const char *vocab_path, const hf_tokenizer *tok, diag *d) {
    size_t len;
    char *text = file_read_all(vocab_path, &len, (size_t)64 << 20, d);
    if (!text) return -1;
    static const char *const bert[3] = {"[UNK]", "[CLS]", "[SEP]"}, *const mpnet[3] = {"[UNK]", "<s>", "</s>"};
    const char *const *defaults = tok->klass && hf_tokenizer_class_is_mpnet(tok->klass) ? mpnet : bert;
    int rc = len == 0 ? diag_set(d, DIAG_CODE_INPUT, "%s: the vocabulary is empty", vocab_path) : 0;
    for (int i = 0; !rc && i < 3; i++) {
        const char *t = tok->tokens[i] ? tok->tokens[i] : defaults[i];
        if (!hf_vocab_has(text, len, t))
            rc = diag_set(d, DIAG_CODE_INPUT, "%s: the %s '%s'%s is not a line of the vocabulary", vocab_path,
                          hf_token_keys[i], t, tok->tokens[i] ? " (tokenizer_config.json)" : " (the default)");
    }
    free(text);
    return rc;
}

/* 1 if HF_DIR/name exists (as anything: a directory or a broken link is an error later, not "absent"). */
static int hf_exists(const char *hf_dir, const char *name, diag *d, int *err) {
    char *p = hf_path_join(hf_dir, name);
    if (!p) {
        *err = hf_oom(d);
        return 0;
    }
    struct stat sb;
    int exists = lstat(p, &sb) == 0 || errno != ENOENT;
    if (exists && !hf_is_regular_file(p))
        *err = diag_set(d, DIAG_CODE_INPUT, "%s: not a regular file", p);
    free(p);
    return exists;
}

/* The model type's tokenizer class, when tokenizer_config.json names none (AutoTokenizer's mapping). */
static const char *hf_tokenizer_default_class(const hf_import_state *s) {
    static const char *const map[][2] = {{"bert", "BertTokenizer"}, {"mpnet", "MPNetTokenizer"},
                                         {"distilbert", "DistilBertTokenizer"}, {"electra", "ElectraTokenizer"},
                                         {"roberta", "RobertaTokenizer"}, {"xlm-roberta", "XLMRobertaTokenizer"}};
    const json_value *v = json_get(&s->cfg_file.doc.root, "model_type");
    for (size_t i = 0; v && v->type == JSON_TYPE_STRING && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(v->string, map[i][0])) return map[i][1];
    return NULL;
}

/* The tokenizer as compile will read it: built once here, so what it refuses fails the import. */
static int hf_tokenizer_validate(const char *hf_dir, hf_import_state *s, diag *d) {
    static const char *const names[4] = {"tokenizer.json", "vocab.json", "merges.txt", "vocab.txt"};
    char *paths[4] = {0};
    hf_tokenizer *tk = &s->tok;
    int use[4] = {tk->source == HF_TOK_JSON, tk->source == HF_TOK_BPE_FILES, tk->source == HF_TOK_BPE_FILES,
                  tk->vocab_txt};
    int rc = 0;
    for (int i = 0; i < 4 && !rc; i++)
        if (use[i] && !(paths[i] = hf_path_join(hf_dir, names[i]))) rc = hf_oom(d);
    ir_tokenizer it = {.json_path = paths[0], .bpe_vocab_path = paths[1], .bpe_merges_path = paths[2],
                       .vocab_path = paths[3], .tokenizer_class = (char *)tk->klass,
                       .do_lower_case = tk->do_lower_case, .strip_accents = tk->strip_accents < -1 ? -1 : tk->strip_accents,
                       .tokenize_chinese_chars = tk->tokenize_chinese_chars, .add_prefix_space = tk->add_prefix_space,
                       .trim_offsets = tk->trim_offsets, .model_max_length = tk->model_max_length,
                       .unk_token = (char *)tk->tokens[0], .cls_token = (char *)tk->tokens[1],
                       .sep_token = (char *)tk->tokens[2], .pad_token = (char *)tk->tokens[3],
                       .mask_token = (char *)tk->tokens[4]};
    tokdesc desc;
    if (!rc && !(rc = hf_tokenizer_load(&it, &desc, d))) {
        /* vocab.txt beside a tokenizer.json is named only for WordPiece (and then cross-checked). */
        if (tk->source == HF_TOK_JSON && desc.model != TOKDESC_MODEL_WORDPIECE) tk->vocab_txt = 0;
        if (s->want_desc) *s->want_desc = desc;
        else tokdesc_free(&desc);
    }
    for (int i = 0; i < 4; i++) free(paths[i]);
    return rc;
}

/* tokenizer.json, else vocab.json + merges.txt, else vocab.txt; and tokenizer_config.json's settings. */
static int hf_import_tokenizer(const char *hf_dir, hf_import_state *s, diag *d) {
    int rc = 0;
    int json = hf_exists(hf_dir, "tokenizer.json", d, &rc), vj = hf_exists(hf_dir, "vocab.json", d, &rc),
        mg = hf_exists(hf_dir, "merges.txt", d, &rc), vocab = hf_exists(hf_dir, "vocab.txt", d, &rc);
    if (rc) return rc;
    hf_tokenizer *tk = &s->tok;
    tk->present = json || (vj && mg) || vocab;
    if (!tk->present) return 0;
    tk->source = json ? HF_TOK_JSON : vj && mg ? HF_TOK_BPE_FILES : HF_TOK_VOCAB_TXT;
    tk->vocab_txt = vocab && tk->source != HF_TOK_BPE_FILES;
    char *tc_path = hf_path_join(hf_dir, "tokenizer_config.json");
    if (!tc_path) return hf_oom(d);
    if (hf_is_regular_file(tc_path) &&
        (hf_json_file_load(&s->tok_file, hf_dir, "tokenizer_config.json", d) || hf_tokenizer_read(&s->tok_file, tk, d)))
        rc = -1;
    free(tc_path);
    if (!rc && !tk->klass) tk->klass = hf_tokenizer_default_class(s);
    if (!rc && tk->source == HF_TOK_VOCAB_TXT) {
        char *vocab_path = hf_path_join(hf_dir, "vocab.txt");
        rc = vocab_path ? hf_vocab_check(vocab_path, tk, d) : hf_oom(d);
        free(vocab_path);
    }
    return rc ? rc : hf_tokenizer_validate(hf_dir, s, d);
}

/* 1 if s is well-formed UTF-8. */
static int hf_utf8_valid(const char *s) {
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t n;
        if (hf_utf8_decode(c, &n) < 0) return 0;
        c += n;
    }
    return 1;
}

/* The weights' and the vocabulary's paths relative to the YAML's folder;
 * YAML text is Unicode, so a path that is not UTF-8 cannot be written. */
static int hf_import_paths(const char *hf_dir, const char *out_yaml, hf_import_state *s, diag *d) {
    char *weights_abs = NULL, *vocab_abs = NULL;
    int rc = 0;
    if (!(s->out_dir = hf_output_dir_real(out_yaml, d))) return -1;
    if (!(s->hf_real = realpath(hf_dir, NULL)))
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: cannot resolve path (%s)", hf_dir, strerror(errno));
    else if (!(weights_abs = hf_path_join(s->hf_real, "model.safetensors")) ||
             !(s->weights_rel = hf_path_relative(s->out_dir, weights_abs)))
        rc = hf_oom(d);
    else if (s->tok.present && (!(vocab_abs = hf_path_join(s->hf_real, "vocab.txt")) ||
                                !(s->vocab_rel = hf_path_relative(s->out_dir, vocab_abs))))
        rc = hf_oom(d);
    else if (!hf_utf8_valid(s->weights_rel) || (s->vocab_rel && !hf_utf8_valid(s->vocab_rel)))
        rc = diag_set(d, DIAG_CODE_INPUT,
                      "%s: the path from the graph description's folder to the checkpoint is not valid UTF-8, which "
                      "a YAML file cannot hold (rename the folders, or write the YAML elsewhere)",
                      hf_utf8_valid(s->weights_rel) ? vocab_abs : weights_abs);
    free(weights_abs);
    free(vocab_abs);
    if (!rc && s->head.dense) { /* dense_dir is checked ASCII-safe by hf_st_dense_read */
        char rel[600], *abs;
        snprintf(rel, sizeof rel, "%s/model.safetensors", s->head.dense_dir);
        if (!(abs = hf_path_join(s->hf_real, rel)) || !(s->dense_rel = hf_path_relative(s->out_dir, abs))) rc = hf_oom(d);
        else if (!hf_utf8_valid(s->dense_rel))
            rc = diag_set(d, DIAG_CODE_INPUT, "%s: the path to it is not valid UTF-8, which a YAML file cannot hold", abs);
        free(abs);
    }
    return rc;
}

/* tokenizer.json or vocab.json + merges.txt relative to the YAML's folder (beside the weights, so UTF-8 too). */
static int hf_import_tok_paths(hf_import_state *s, diag *d) {
    static const char *const names[3] = {"tokenizer.json", "vocab.json", "merges.txt"};
    int use[3] = {s->tok.present && s->tok.source == HF_TOK_JSON, s->tok.present && s->tok.source == HF_TOK_BPE_FILES,
                  s->tok.present && s->tok.source == HF_TOK_BPE_FILES};
    for (int i = 0; i < 3; i++) {
        if (!use[i]) continue;
        char *abs = hf_path_join(s->hf_real, names[i]);
        if (!abs || !(s->tok_rel[i] = hf_path_relative(s->out_dir, abs))) {
            free(abs);
            return hf_oom(d);
        }
        free(abs);
    }
    return 0;
}

/* The written text must load as the graph description it claims to be:
 * anything else is a bug here, caught before a file is written. */
static int hf_import_verify(const hf_text *text, const char *out_yaml, const hf_import_state *s, diag *d) {
    model m;
    diag md;
    diag_init(&md);
    int rc = model_load_text(&m, out_yaml, text->p, text->len, s->out_dir, &md);
    model_free(&m);
    if (rc)
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "bertc import: the graph description made for %s does not load (a bertc bug, please report "
                        "it): %s",
                        s->hf_real, md.text);
    return 0;
}

/* The output is none of the files import reads. */
static int hf_import_check_output(const char *hf_dir, const char *out_yaml, const hf_import_state *s, diag *d) {
    char dense_cfg[600], dense_st[600];
    snprintf(dense_cfg, sizeof dense_cfg, "%s/config.json", s->head.dense_dir);
    snprintf(dense_st, sizeof dense_st, "%s/model.safetensors", s->head.dense_dir);
    const char *names[12] = {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "modules.json",
                             "sentence_bert_config.json", s->head.present ? s->head.pool_config : NULL,
                             s->head.dense ? dense_cfg : NULL, s->head.dense ? dense_st : NULL,
                             "tokenizer.json", "vocab.json", "merges.txt"};
    char *inputs[12] = {0};
    int rc = 0;
    for (int i = 0; i < 12 && !rc; i++)
        if (names[i] && !(inputs[i] = hf_path_join(hf_dir, names[i]))) rc = hf_oom(d);
    const char *out[1] = {out_yaml}, *what[1] = {"-o"};
    if (!rc) rc = file_outputs_check(out, what, 1, (const char *const *)inputs, 12, d);
    for (int i = 0; i < 12; i++) free(inputs[i]);
    return rc;
}

int hf_import_tokenizer_desc(const char *hf_dir, tokdesc *out, diag *d) {
    hf_import_state s = {.tok = {.do_lower_case = -1, .strip_accents = -2, .tokenize_chinese_chars = -1,
                                 .add_prefix_space = -1, .trim_offsets = -1},
                         .want_desc = out};
    hf_json_file_init(&s.cfg_file);
    hf_json_file_init(&s.tok_file);
    tokdesc_init(out);
    int rc = hf_import_check_dir(hf_dir, hf_dir, d) || hf_import_tokenizer(hf_dir, &s, d);
    if (!rc && !s.tok.present)
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: no tokenizer files (tokenizer.json, vocab.json + merges.txt or vocab.txt)",
                      hf_dir);
    hf_import_state_free(&s);
    return rc ? -1 : 0;
}

int hf_import_run(const char *hf_dir, const char *out_yaml, diag *d) {
    hf_import_state s = {.tok = {.do_lower_case = -1, .strip_accents = -2, .tokenize_chinese_chars = -1,
                                 .add_prefix_space = -1, .trim_offsets = -1}};
    hf_json_file_init(&s.cfg_file);
    hf_json_file_init(&s.tok_file);
    hf_text text;
    hf_text_init(&text);
    int rc = -1;
    if (hf_import_check_dir(hf_dir, out_yaml, d) || hf_json_file_load(&s.cfg_file, hf_dir, "config.json", d) ||
        hf_config_read(&s.cfg_file, &s.cfg, d) || hf_import_weights(hf_dir, &s, d) ||
        hf_import_tokenizer(hf_dir, &s, d) || hf_st_read(hf_dir, &s.cfg, &s.head, d) ||
        (s.head.present && s.tok.present && hf_st_max_seq_read(hf_dir, &s.tok, d)) ||
        hf_import_paths(hf_dir, out_yaml, &s, d) || hf_import_tok_paths(&s, d))
        goto done;
    const char *base = strrchr(s.hf_real, '/');
    base = base && base[1] ? base + 1 : "model";
    hf_yaml_inputs in = {
        .name = base,
        .weights_rel = s.weights_rel,
        .vocab_rel = s.vocab_rel,
        .tok_rel = {s.tok_rel[0], s.tok_rel[1], s.tok_rel[2]},
        .dense_rel = s.dense_rel,
        .cfg = &s.cfg,
        .names = &s.names,
        .tok = &s.tok,
        .head = &s.head,
    };
    hf_yaml_write(&text, &in);
    if (text.oom) rc = hf_oom(d);
    else if (!(rc = hf_import_verify(&text, out_yaml, &s, d)) && !(rc = hf_import_check_output(hf_dir, out_yaml, &s, d)))
        rc = hf_output_write(out_yaml, &text, d);
done:
    hf_text_free(&text);
    hf_import_state_free(&s);
    return rc;
}
