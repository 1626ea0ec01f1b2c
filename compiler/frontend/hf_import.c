/*
 * hf_import — a Hugging Face BERT checkpoint directory to a model YAML.
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
 * Activations: "gelu" and "gelu_python" are the erf form; "gelu_new",
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
#include "hf_tokenizer.h"
#include "ir.h"
#include "json.h"
#include "model.h"
#include "safetensors.h"

/* ------------------------------------------------------------ text buffer */

/* A growing string; an allocation failure is remembered and reported once. */
typedef struct hf_text {
    char *p;
    size_t len, cap;
    int oom;
} hf_text;

static void hf_text_init(hf_text *t) {
    t->p = NULL;
    t->len = t->cap = 0;
    t->oom = 0;
}

static void hf_text_free(hf_text *t) {
    free(t->p);
    hf_text_init(t);
}

static void hf_text_reserve(hf_text *t, size_t extra) {
    if (t->oom || t->len + extra + 1 <= t->cap) return;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + extra + 1) cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->oom = 1;
        return;
    }
    t->p = p;
    t->cap = cap;
}

static void hf_text_append(hf_text *t, const char *s, size_t n) {
    hf_text_reserve(t, n);
    if (t->oom) return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void hf_text_printf(hf_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hf_text_printf(hf_text *t, const char *fmt, ...) {
    if (t->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = 1;
        return;
    }
    hf_text_reserve(t, (size_t)n);
    if (t->oom) return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* ----------------------------------------------------------- small helpers */

static char *hf_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* dir + "/" + name; NULL on allocation failure. */
static char *hf_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t total = n + 1 + strlen(name) + 1;
    char *p = malloc(total);
    if (!p) return NULL;
    if (n == 1 && dir[0] == '/')
        snprintf(p, total, "/%s", name);
    else
        snprintf(p, total, "%.*s/%s", (int)n, dir, name);
    return p;
}

static int hf_oom(diag *d) { return diag_set(d, DIAG_CODE_INTERNAL, "bertc import: out of memory"); }

static int hf_is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Shortest "%.Ng" spelling (N <= 9) that reads back as the same float32.
 * Nine significant digits always suffice, so the loop always ends in a
 * round-trip.
 */
static void hf_float_format(char *buf, size_t cap, float v) {
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, cap, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v) return;
    }
}

/* ------------------------------------------------------------ YAML scalars */

/*
 * Can s be written as a plain YAML scalar, in block and in flow context, and
 * read back as the same string (not a number, bool or null)?  Deliberately
 * conservative: anything beyond [A-Za-z0-9_./+-] gets quotes.
 */
static int hf_yaml_plain_ok(const char *s) {
    if (!*s || s[0] == '-' || s[0] == '+') return 0;             /* "- x" is a list item */
    if (s[0] == '.' && s[1] != '.' && s[1] != '/') return 0;      /* .inf, .nan; "../x" is fine */
    if (s[0] >= '0' && s[0] <= '9') return 0;                    /* 0x1f, 1_000, 12e3 ... */
    for (const char *c = s; *c; c++) {
        unsigned char ch = (unsigned char)*c;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == '/' || ch == '-' || ch == '+'))
            return 0;
    }
    static const char *const special[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n",
                                           "inf", "nan", "infinity", NULL};
    for (const char *const *w = special; *w; w++)
        if (!strcasecmp(s, *w)) return 0;
    return 1;
}

/*
 * The code point of the well-formed UTF-8 sequence at s (its length in *n),
 * or -1 (*n = 1) for a byte that starts none: overlong forms, surrogates
 * and values past U+10FFFF are not well-formed.
 */
static long hf_utf8_decode(const unsigned char *s, size_t *n) {
    unsigned c = s[0];
    *n = 1;
    if (c < 0x80) return (long)c;
    int len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (!len || (len == 3 && c > 0xef)) return -1;
    long cp = (long)(c & (0x7f >> len));
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const long min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    *n = (size_t)len;
    return cp;
}

/*
 * May code point cp stand as itself inside a YAML double-quoted scalar?
 * YAML's printable set is TAB, LF, CR, 0x20-0x7E, NEL and 0xA0-0xD7FF,
 * 0xE000-0xFFFD, 0x10000 up; of those, the line breaks (LF, CR, NEL,
 * U+2028, U+2029) would be folded by a reader, and a BOM is taken as an
 * encoding mark.  Everything else is escaped.
 */
static int hf_yaml_literal_ok(long cp) {
    if (cp == 0x85 || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff) return 0;
    return (cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) ||
           cp >= 0x10000;
}

/*
 * A double-quoted YAML scalar.  Quotes and backslashes are escaped, so are
 * code points YAML does not allow or would fold (hf_yaml_literal_ok);
 * well-formed UTF-8 otherwise passes through.  A byte that is not UTF-8
 * cannot be said in YAML at all: it is written as U+FFFD and *lossy set,
 * so a caller for whom the exact bytes matter can refuse.
 */
static void hf_yaml_quoted_lossy(hf_text *t, const char *s, int *lossy) {
    hf_text_append(t, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t n;
        long cp = hf_utf8_decode(c, &n);
        if (cp < 0) {
            hf_text_append(t, "\\uFFFD", 6);
            if (lossy) *lossy = 1;
        } else if (cp == '"' || cp == '\\') {
            char esc[2] = {'\\', (char)cp};
            hf_text_append(t, esc, 2);
        } else if (cp == '\n') {
            hf_text_append(t, "\\n", 2);
        } else if (cp == '\t') {
            hf_text_append(t, "\\t", 2);
        } else if (!hf_yaml_literal_ok(cp)) {
            if (cp <= 0xff) hf_text_printf(t, "\\x%02lx", cp);
            else if (cp <= 0xffff) hf_text_printf(t, "\\u%04lX", cp);
            else hf_text_printf(t, "\\U%08lX", cp);
        } else {
            hf_text_append(t, (const char *)c, n);
        }
        c += n;
    }
    hf_text_append(t, "\"", 1);
}

static void hf_yaml_quoted(hf_text *t, const char *s) { hf_yaml_quoted_lossy(t, s, NULL); }

static void hf_yaml_scalar(hf_text *t, const char *s) {
    if (hf_yaml_plain_ok(s))
        hf_text_append(t, s, strlen(s));
    else
        hf_yaml_quoted(t, s);
}

/* ------------------------------------------------------------------ config */

typedef struct hf_config {
    int64_t hidden, heads, layers, intermediate, vocab, max_pos, type_vocab;
    float eps;
    ir_act act;
} hf_config;

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

static void hf_json_file_init(hf_json_file *f) {
    memset(f, 0, sizeof *f);
}

static void hf_json_file_free(hf_json_file *f) {
    if (f->parsed) json_free(&f->doc);
    free(f->text);
    free(f->path);
    hf_json_file_init(f);
}

/* Loads dir/name, whose top-level value must be of type `want`. */
static int hf_json_file_load_as(hf_json_file *f, const char *dir, const char *name, json_type want, diag *d) {
    if (!(f->path = hf_path_join(dir, name))) return hf_oom(d);
    if (!(f->text = file_read_all(f->path, &f->len, HF_JSON_MAX, d))) return -1;
    char err[1024];
    if (json_parse(&f->doc, f->text, f->len, f->path, err, sizeof err))
        return diag_set(d, DIAG_CODE_INPUT, "%s", err);
    f->parsed = 1;
    if (f->doc.root.type != want)
        return diag_set(d, DIAG_CODE_INPUT, "%s: expected a JSON %s at the top level, got %s", f->path,
                        want == JSON_TYPE_ARRAY ? "array" : "object", json_type_name(f->doc.root.type));
    return 0;
}

static int hf_json_file_load(hf_json_file *f, const char *dir, const char *name, diag *d) {
    return hf_json_file_load_as(f, dir, name, JSON_TYPE_OBJECT, d);
}

/* An error at a value of a JSON file: FILE:LINE:COL, the line and a caret. */
static int hf_json_error(const hf_json_file *f, const json_value *v, diag *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int hf_json_error(const hf_json_file *f, const json_value *v, diag *d, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = 1, col = 1;
    size_t end = v->offset < f->len ? v->offset : f->len;
    for (size_t i = 0; i < end; i++) {
        if (f->text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return diag_set_at(d, DIAG_CODE_INPUT, f->path, f->text, f->len, line, col, "%s", msg);
}

/*
 * A short rendering of a JSON value for messages: 'roberta', true, null, and
 * numbers exactly as written in the file (-1e-12 stays -1e-12).
 */
static const char *hf_json_show(const hf_json_file *f, const json_value *v, char *buf, size_t cap) {
    switch (v->type) {
    case JSON_TYPE_STRING: snprintf(buf, cap, "'%.200s'", v->string); break;
    case JSON_TYPE_NUMBER: {
        size_t n = 0;
        while (v->offset + n < f->len && n < 64 && strchr("+-0123456789.eE", f->text[v->offset + n]) &&
               f->text[v->offset + n] != '\0')
            n++;
        snprintf(buf, cap, "%.*s", (int)n, f->text + v->offset);
        break;
    }
    case JSON_TYPE_BOOL: snprintf(buf, cap, "%s", v->boolean ? "true" : "false"); break;
    case JSON_TYPE_NULL: snprintf(buf, cap, "null"); break;
    default: snprintf(buf, cap, "%s", json_type_name(v->type)); break;
    }
    return buf;
}

/* A positive integer field; `def` (> 0) when absent, or 0 if required. */
static int hf_config_int(const hf_json_file *f, const char *key, int64_t def, int64_t *out, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    if (!v) {
        if (def > 0) {
            *out = def;
            return 0;
        }
        return diag_set(d, DIAG_CODE_INPUT, "%s: missing required field '%s' (expected a positive integer)",
                        f->path, key);
    }
    char shown[256];
    if (v->type != JSON_TYPE_NUMBER || !v->number_is_int)
        return hf_json_error(f, v, d, "%s must be a positive integer, got %s", key,
                             hf_json_show(f, v, shown, sizeof shown));
    if (v->integer < 1 || v->integer > INT32_MAX)
        return hf_json_error(f, v, d, "%s must be a positive integer below 2^31, got %lld", key,
                             (long long)v->integer);
    *out = v->integer;
    return 0;
}

/* A field that must be absent or false (is_decoder, add_cross_attention). */
static int hf_config_false(const hf_json_file *f, const char *key, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    if (!v || (v->type == JSON_TYPE_BOOL && !v->boolean)) return 0;
    char shown[256];
    return hf_json_error(f, v, d, "%s %s is not supported (expected false: bertc imports encoders only)", key,
                         hf_json_show(f, v, shown, sizeof shown));
}

static const struct {
    const char *hf;
    ir_act act;
} hf_activations[] = {
    {"gelu", IR_ACT_GELU_ERF},          {"gelu_python", IR_ACT_GELU_ERF},
    {"gelu_new", IR_ACT_GELU_TANH},     {"gelu_pytorch_tanh", IR_ACT_GELU_TANH},
    {"gelu_accurate", IR_ACT_GELU_TANH}, {"gelu_fast", IR_ACT_GELU_TANH},
    {"relu", IR_ACT_RELU},
};

static int hf_config_read(const hf_json_file *f, hf_config *c, diag *d) {
    const json_value *root = &f->doc.root, *v;
    char shown[256];

    if (!(v = json_get(root, "model_type")))
        return diag_set(d, DIAG_CODE_INPUT, "%s: missing field 'model_type' (expected 'bert')", f->path);
    if (v->type != JSON_TYPE_STRING || strcmp(v->string, "bert"))
        return hf_json_error(f, v, d, "model_type %s is not supported (expected 'bert')",
                             hf_json_show(f, v, shown, sizeof shown));

    if (hf_config_int(f, "hidden_size", 0, &c->hidden, d) ||
        hf_config_int(f, "num_attention_heads", 0, &c->heads, d) ||
        hf_config_int(f, "num_hidden_layers", 0, &c->layers, d) ||
        hf_config_int(f, "intermediate_size", 0, &c->intermediate, d) ||
        hf_config_int(f, "vocab_size", 0, &c->vocab, d) ||
        hf_config_int(f, "max_position_embeddings", 0, &c->max_pos, d) ||
        hf_config_int(f, "type_vocab_size", 2, &c->type_vocab, d))
        return -1;
    if (c->hidden % c->heads != 0)
        return hf_json_error(f, json_get(root, "num_attention_heads"), d,
                             "hidden_size %lld is not a multiple of num_attention_heads %lld",
                             (long long)c->hidden, (long long)c->heads);

    c->act = IR_ACT_GELU_ERF;
    if ((v = json_get(root, "hidden_act"))) {
        size_t i, n = sizeof hf_activations / sizeof hf_activations[0];
        for (i = 0; i < n; i++)
            if (v->type == JSON_TYPE_STRING && !strcmp(v->string, hf_activations[i].hf)) break;
        if (i == n)
            return hf_json_error(f, v, d,
                                 "hidden_act %s is not supported (expected 'gelu', 'gelu_python', 'gelu_new', "
                                 "'gelu_pytorch_tanh', 'gelu_accurate', 'gelu_fast' or 'relu')",
                                 hf_json_show(f, v, shown, sizeof shown));
        c->act = hf_activations[i].act;
    }

    double eps = 1e-12;
    if ((v = json_get(root, "layer_norm_eps"))) {
        if (v->type != JSON_TYPE_NUMBER)
            return hf_json_error(f, v, d, "layer_norm_eps must be a positive number, got %s",
                                 hf_json_show(f, v, shown, sizeof shown));
        eps = v->number;
        if (!(eps > 0) || !((float)eps > 0) || !isfinite((float)eps))
            return hf_json_error(f, v, d, "layer_norm_eps must be a positive float32 number, got %s",
                                 hf_json_show(f, v, shown, sizeof shown));
    }
    c->eps = (float)eps;

    if ((v = json_get(root, "position_embedding_type")) &&
        !(v->type == JSON_TYPE_STRING && !strcmp(v->string, "absolute")))
        return hf_json_error(f, v, d, "position_embedding_type %s is not supported (expected 'absolute')",
                             hf_json_show(f, v, shown, sizeof shown));
    if (hf_config_false(f, "is_decoder", d) || hf_config_false(f, "add_cross_attention", d)) return -1;
    if ((v = json_get(root, "chunk_size_feed_forward")) &&
        !(v->type == JSON_TYPE_NUMBER && v->number_is_int && v->integer == 0))
        return hf_json_error(f, v, d, "chunk_size_feed_forward %s is not supported (expected 0)",
                             hf_json_show(f, v, shown, sizeof shown));
    return 0;
}

/* ----------------------------------------------------------------- weights */

/* How the checkpoint spells its tensor names. */
typedef struct hf_names {
    const char *prefix;        /* "" or "bert." */
    const char *ln_gamma;      /* "weight" or "gamma" */
    const char *ln_beta;       /* "bias" or "beta" */
    int has_pooler;
} hf_names;

static const char *hf_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t n = 0;
    int k = snprintf(buf, cap, "[");
    if (k > 0) n = (size_t)k;
    for (int i = 0; i < ndim && n < cap; i++) {
        k = snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
        if (k > 0) n += (size_t)k;
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* The tensor `name` exists, is F32/F16/BF16 and has shape [d0] or [d0, d1]. */
static int hf_weight_check(const st_file *st, const char *name, int ndim, int64_t d0, int64_t d1, diag *d) {
    int64_t want[2] = {d0, d1};
    char ws[64], hs[256];
    hf_shape_str(want, ndim, ws, sizeof ws);
    const st_tensor *t = st_file_find(st, name);
    if (!t)
        return diag_set(d, DIAG_CODE_INPUT, "%s: no tensor '%s' (expected a float tensor of shape %s)", st->path,
                        name, ws);
    if (t->dtype != ST_DTYPE_F32 && t->dtype != ST_DTYPE_F16 && t->dtype != ST_DTYPE_BF16)
        return diag_set(d, DIAG_CODE_INPUT, "%s: tensor '%s' has dtype %s (expected F32, F16 or BF16)", st->path,
                        name, st_dtype_name(t->dtype));
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == want[i];
    if (!ok)
        return diag_set(d, DIAG_CODE_INPUT, "%s: tensor '%s' has shape %s (expected %s)", st->path, name,
                        hf_shape_str(t->shape, t->ndim, hs, sizeof hs), ws);
    return 0;
}

static int hf_weights_check(const st_file *st, const hf_config *c, hf_names *nm, diag *d) {
    if (st_file_find(st, "bert.embeddings.word_embeddings.weight"))
        nm->prefix = "bert.";
    else if (st_file_find(st, "embeddings.word_embeddings.weight"))
        nm->prefix = "";
    else
        return diag_set(d, DIAG_CODE_INPUT,
                        "%s: no tensor 'embeddings.word_embeddings.weight' or "
                        "'bert.embeddings.word_embeddings.weight' (expected a BERT checkpoint)",
                        st->path);

    /* Old TensorFlow conversions name LayerNorm parameters gamma/beta. */
    char name[512], modern[512];
    snprintf(name, sizeof name, "%sembeddings.LayerNorm.gamma", nm->prefix);
    snprintf(modern, sizeof modern, "%sembeddings.LayerNorm.weight", nm->prefix);
    int legacy = st_file_find(st, name) && !st_file_find(st, modern);
    nm->ln_gamma = legacy ? "gamma" : "weight";
    nm->ln_beta = legacy ? "beta" : "bias";

    const int64_t H = c->hidden, I = c->intermediate;
#define HF_CHECK(ndim, d0, d1, ...)                                        \
    do {                                                                   \
        snprintf(name, sizeof name, __VA_ARGS__);                          \
        if (hf_weight_check(st, name, ndim, d0, d1, d)) return -1;         \
    } while (0)
    const char *p = nm->prefix, *g = nm->ln_gamma, *b = nm->ln_beta;
    HF_CHECK(2, c->vocab, H, "%sembeddings.word_embeddings.weight", p);
    HF_CHECK(2, c->max_pos, H, "%sembeddings.position_embeddings.weight", p);
    HF_CHECK(2, c->type_vocab, H, "%sembeddings.token_type_embeddings.weight", p);
    HF_CHECK(1, H, 0, "%sembeddings.LayerNorm.%s", p, g);
    HF_CHECK(1, H, 0, "%sembeddings.LayerNorm.%s", p, b);
    for (int64_t l = 0; l < c->layers; l++) {
        static const char *const qkv[] = {"query", "key", "value"};
        for (int j = 0; j < 3; j++) {
            HF_CHECK(2, H, H, "%sencoder.layer.%lld.attention.self.%s.weight", p, (long long)l, qkv[j]);
            HF_CHECK(1, H, 0, "%sencoder.layer.%lld.attention.self.%s.bias", p, (long long)l, qkv[j]);
        }
        HF_CHECK(2, H, H, "%sencoder.layer.%lld.attention.output.dense.weight", p, (long long)l);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.attention.output.dense.bias", p, (long long)l);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.attention.output.LayerNorm.%s", p, (long long)l, g);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.attention.output.LayerNorm.%s", p, (long long)l, b);
        HF_CHECK(2, I, H, "%sencoder.layer.%lld.intermediate.dense.weight", p, (long long)l);
        HF_CHECK(1, I, 0, "%sencoder.layer.%lld.intermediate.dense.bias", p, (long long)l);
        HF_CHECK(2, H, I, "%sencoder.layer.%lld.output.dense.weight", p, (long long)l);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.output.dense.bias", p, (long long)l);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.output.LayerNorm.%s", p, (long long)l, g);
        HF_CHECK(1, H, 0, "%sencoder.layer.%lld.output.LayerNorm.%s", p, (long long)l, b);
    }
    char pw[64], pb[64];
    snprintf(pw, sizeof pw, "%spooler.dense.weight", p);
    snprintf(pb, sizeof pb, "%spooler.dense.bias", p);
    nm->has_pooler = st_file_find(st, pw) && st_file_find(st, pb);
    if (nm->has_pooler) {
        HF_CHECK(2, H, H, "%s", pw);
        HF_CHECK(1, H, 0, "%s", pb);
    }
#undef HF_CHECK
    return 0;
}

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
    if (tk->source == HF_TOK_VOCAB_TXT &&
        !(v->type == JSON_TYPE_STRING && (!strcmp(v->string, "BertTokenizer") || !strcmp(v->string, "BertTokenizerFast"))))
        return hf_json_error(f, v, d,
                             "tokenizer_class %s is not supported (expected 'BertTokenizer' or 'BertTokenizerFast')",
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
 * states exactly the common heads as ops: Transformer (the BERT itself, in
 * HF_DIR), Pooling (cls or mean, from PATH/config.json) and an optional
 * Normalize.  Anything else — another module (Dense, ...), another pooling
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
    int rc = hf_json_file_load_as(&f, hf_dir, "modules.json", JSON_TYPE_ARRAY, d);
    int seen_transformer = 0, seen_normalize = 0;
    for (size_t i = 0; !rc && i < f.doc.root.count; i++) {
        const json_value *e = &f.doc.root.items[i];
        const char *type, *path;
        char shown[256];
        if (e->type != JSON_TYPE_OBJECT) {
            rc = hf_json_error(&f, e, d, "module %zu must be an object with 'type' and 'path', got %s", i,
                               hf_json_show(&f, e, shown, sizeof shown));
            break;
        }
        if ((rc = hf_st_string(&f, e, i, "type", &type, d)) || (rc = hf_st_string(&f, e, i, "path", &path, d))) break;
        const json_value *tv = json_get(e, "type"), *pv = json_get(e, "path");
        const char *kind = strncmp(type, HF_ST_TYPE, strlen(HF_ST_TYPE)) ? "" : type + strlen(HF_ST_TYPE);
        if (!strcmp(kind, "Transformer")) {
            if (i != 0) {
                rc = hf_json_error(&f, tv, d, "type '%s' as module %zu is not supported (expected it first)", type, i);
            } else if (*path && strcmp(path, ".")) {
                rc = hf_json_error(&f, pv, d, "path '%s' of the Transformer module is not supported (expected '': "
                                              "bertc reads the transformer from %s itself)", path, hf_dir);
            }
            seen_transformer = 1;
        } else if (!strcmp(kind, "Pooling")) {
            if (!seen_transformer || head->present)
                rc = hf_json_error(&f, tv, d, "type '%s' as module %zu is not supported (expected one Pooling "
                                              "right after the Transformer)", type, i);
            else if (!(rc = hf_st_pooling_read(hf_dir, path, cfg, head, d)))
                head->present = 1;
        } else if (!strcmp(kind, "Normalize")) {
            if (!head->present || seen_normalize)
                rc = hf_json_error(&f, tv, d, "type '%s' as module %zu is not supported (expected one Normalize "
                                              "right after the Pooling)", type, i);
            seen_normalize = head->normalize = 1;
        } else {
            rc = hf_json_error(&f, tv, d, "module type '%s' is not supported (expected " HF_ST_TYPE "Transformer, "
                                          "Pooling or Normalize)", type);
        }
        if (!rc && seen_normalize && strcmp(kind, "Normalize"))
            rc = hf_json_error(&f, tv, d, "type '%s' after Normalize is not supported (expected Normalize last)", type);
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
    const hf_config *cfg;
    const hf_names *names;
    const hf_tokenizer *tok;
    const hf_head *head;
} hf_yaml_inputs;

/* The header: provenance, name, weights, sizes, inputs and outputs. */
static void hf_yaml_header(hf_text *t, const hf_yaml_inputs *in) {
    const hf_config *c = in->cfg;
    long long L = (long long)c->layers;
    hf_text_printf(t, "# generated by bertc import from ");
    for (const char *ch = in->name; *ch; ch++) /* a comment ends at a line break; printable ASCII only */
        hf_text_append(t, ((unsigned char)*ch < 0x20 || (unsigned char)*ch >= 0x7f) ? "?" : ch, 1);
    hf_text_printf(t, "\nbertc: 1\nname: ");
    hf_yaml_scalar(t, in->name);
    hf_text_printf(t, "\nweights: ");
    hf_yaml_scalar(t, in->weights_rel);
    hf_text_printf(t, "\nmax_seq_len: %lld\n", (long long)c->max_pos);
    hf_text_printf(t, "dims: {H: %lld, NH: %lld, HD: %lld}\n", (long long)c->hidden, (long long)c->heads,
                   (long long)(c->hidden / c->heads));
    hf_text_printf(t,
                   "inputs:\n"
                   "  input_ids: {dtype: int32, shape: [S]}\n"
                   "  token_type_ids: {dtype: int32, shape: [S], default: 0}\n"
                   "  attention_mask: {dtype: int32, shape: [S], default: 1}\n"
                   "outputs:\n"
                   "  last_hidden_state: h%lld\n",
                   L);
    if (in->names->has_pooler) hf_text_printf(t, "  pooler_output: pooled\n");
    if (in->head->present) hf_text_printf(t, "  sentence_embedding: sentence_embedding\n");
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
    if (tk->source != HF_TOK_VOCAB_TXT && tk->klass) {
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

/* The embeddings: three gathers, their sum and the LayerNorm. */
static void hf_yaml_embeddings(hf_text *t, const hf_yaml_inputs *in, const char *eps) {
    const char *p = in->names->prefix, *g = in->names->ln_gamma, *b = in->names->ln_beta;
    hf_text_printf(t,
                   "graph:\n"
                   "  # embeddings\n"
                   "  - {op: arange, out: position_ids, like: input_ids}\n"
                   "  - {op: gather, out: word_emb, table: %sembeddings.word_embeddings.weight, index: input_ids}\n"
                   "  - {op: gather, out: pos_emb, table: %sembeddings.position_embeddings.weight, index: position_ids}\n"
                   "  - {op: gather, out: type_emb, table: %sembeddings.token_type_embeddings.weight, index: token_type_ids}\n"
                   "  - {op: add, out: emb_sum0, a: word_emb, b: pos_emb}\n"
                   "  - {op: add, out: emb_sum, a: emb_sum0, b: type_emb}\n"
                   "  - {op: layer_norm, out: h0, x: emb_sum, gamma: %sembeddings.LayerNorm.%s, beta: %sembeddings.LayerNorm.%s, eps: %s}\n",
                   p, p, p, p, g, p, b, eps);
}

/* One encoder layer, repeated: self-attention, its output, the FFN. */
static void hf_yaml_layers(hf_text *t, const hf_yaml_inputs *in, const char *eps) {
    const hf_config *c = in->cfg;
    const char *p = in->names->prefix, *g = in->names->ln_gamma, *b = in->names->ln_beta;
    char scale[32];
    hf_float_format(scale, sizeof scale, (float)(1.0 / sqrt((double)(c->hidden / c->heads))));
    long long L = (long long)c->layers;
    hf_text_printf(t,
                   "  # encoder layers\n"
                   "  - repeat: %lld\n"
                   "    index: i\n"
                   "    ops:\n",
                   L);
    static const char *const qkv[3][2] = {{"q", "query"}, {"k", "key"}, {"v", "value"}};
    for (int j = 0; j < 3; j++) {
        const char *s = qkv[j][0], *w = qkv[j][1];
        hf_text_printf(t,
                       "      - {op: matmul, out: %s_mm, x: \"h{i}\", weight: \"%sencoder.layer.{i}.attention.self.%s.weight\"}\n"
                       "      - {op: bias_add, out: %s, x: %s_mm, bias: \"%sencoder.layer.{i}.attention.self.%s.bias\"}\n"
                       "      - {op: reshape, out: %s_r, x: %s, shape: [S, NH, HD]}\n"
                       "      - {op: transpose, out: %s_h, x: %s_r, perm: [1, 0, 2]}\n",
                       s, p, w, s, s, p, w, s, s, s, s);
    }
    hf_text_printf(t,
                   "      - {op: batched_matmul, out: scores, a: q_h, b: k_h, transpose_b: true}\n"
                   "      - {op: scale, out: scores_s, x: scores, by: %s}\n"
                   "      - {op: mask, out: scores_m, x: scores_s, mask: attention_mask}\n"
                   "      - {op: softmax, out: probs, x: scores_m}\n"
                   "      - {op: batched_matmul, out: ctx_h, a: probs, b: v_h}\n"
                   "      - {op: transpose, out: ctx_t, x: ctx_h, perm: [1, 0, 2]}\n"
                   "      - {op: reshape, out: ctx, x: ctx_t, shape: [S, H]}\n",
                   scale);
    hf_text_printf(t,
                   "      - {op: matmul, out: ao_mm, x: ctx, weight: \"%sencoder.layer.{i}.attention.output.dense.weight\"}\n"
                   "      - {op: bias_add, out: ao, x: ao_mm, bias: \"%sencoder.layer.{i}.attention.output.dense.bias\"}\n"
                   "      - {op: add, out: ao_res, a: ao, b: \"h{i}\"}\n"
                   "      - {op: layer_norm, out: attn_out, x: ao_res, gamma: \"%sencoder.layer.{i}.attention.output.LayerNorm.%s\", beta: \"%sencoder.layer.{i}.attention.output.LayerNorm.%s\", eps: %s}\n",
                   p, p, p, g, p, b, eps);
    hf_text_printf(t,
                   "      - {op: matmul, out: inter_mm, x: attn_out, weight: \"%sencoder.layer.{i}.intermediate.dense.weight\"}\n"
                   "      - {op: bias_add, out: inter_b, x: inter_mm, bias: \"%sencoder.layer.{i}.intermediate.dense.bias\"}\n"
                   "      - {op: activation, out: inter, x: inter_b, fn: %s}\n"
                   "      - {op: matmul, out: out_mm, x: inter, weight: \"%sencoder.layer.{i}.output.dense.weight\"}\n"
                   "      - {op: bias_add, out: out_b, x: out_mm, bias: \"%sencoder.layer.{i}.output.dense.bias\"}\n"
                   "      - {op: add, out: out_res, a: out_b, b: attn_out}\n"
                   "      - {op: layer_norm, out: \"h{i+1}\", x: out_res, gamma: \"%sencoder.layer.{i}.output.LayerNorm.%s\", beta: \"%sencoder.layer.{i}.output.LayerNorm.%s\", eps: %s}\n",
                   p, p, ir_act_name(c->act), p, p, p, g, p, b, eps);
}

/* The pooler and the sentence-transformers head, when the model has them. */
static void hf_yaml_heads(hf_text *t, const hf_yaml_inputs *in) {
    const char *p = in->names->prefix;
    long long L = (long long)in->cfg->layers;
    if (in->names->has_pooler)
        hf_text_printf(t,
                       "  # pooler: dense + tanh on the first ([CLS]) token\n"
                       "  - {op: slice, out: cls, x: h%lld, axis: 0, start: 0, len: 1}\n"
                       "  - {op: matmul, out: pool_mm, x: cls, weight: %spooler.dense.weight}\n"
                       "  - {op: bias_add, out: pool_b, x: pool_mm, bias: %spooler.dense.bias}\n"
                       "  - {op: activation, out: pool_t, x: pool_b, fn: tanh}\n"
                       "  - {op: reshape, out: pooled, x: pool_t, shape: [H]}\n",
                       L, p, p);

    if (in->head->present) {
        const hf_head *hd = in->head;
        const char *pool_out = hd->normalize ? "sentence_pool" : "sentence_embedding";
        hf_text_printf(t, "  # sentence-transformers head (modules.json): %s pooling%s\n",
                       ir_pool_mode_name(hd->mode), hd->normalize ? ", L2 normalisation" : "");
        if (hd->mode == IR_POOL_MEAN)
            hf_text_printf(t, "  - {op: pool, out: %s, x: h%lld, mask: attention_mask, mode: mean}\n", pool_out, L);
        else
            hf_text_printf(t, "  - {op: pool, out: %s, x: h%lld, mode: cls}\n", pool_out, L);
        if (hd->normalize) hf_text_printf(t, "  - {op: l2_normalize, out: sentence_embedding, x: %s}\n", pool_out);
    }
}

static void hf_yaml_write(hf_text *t, const hf_yaml_inputs *in) {
    char eps[32];
    hf_float_format(eps, sizeof eps, in->cfg->eps);
    hf_yaml_header(t, in);
    hf_yaml_tokenizer(t, in);
    hf_yaml_embeddings(t, in, eps);
    hf_yaml_layers(t, in, eps);
    hf_yaml_heads(t, in);
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
    char *weights_rel, *vocab_rel;             /* paths relative to the YAML */
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
    for (int i = 0; i < 3; i++) free(s->tok_rel[i]);
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
    static const char *const defaults[3] = {"[UNK]", "[CLS]", "[SEP]"};
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
    if (!rc && tk->source != HF_TOK_VOCAB_TXT && !tk->klass) tk->klass = hf_tokenizer_default_class(s);
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
    const char *names[10] = {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "modules.json",
                             "sentence_bert_config.json", s->head.present ? s->head.pool_config : NULL,
                             "tokenizer.json", "vocab.json", "merges.txt"};
    char *inputs[10] = {0};
    int rc = 0;
    for (int i = 0; i < 10 && !rc; i++)
        if (names[i] && !(inputs[i] = hf_path_join(hf_dir, names[i]))) rc = hf_oom(d);
    const char *out[1] = {out_yaml}, *what[1] = {"-o"};
    if (!rc) rc = file_outputs_check(out, what, 1, (const char *const *)inputs, 10, d);
    for (int i = 0; i < 10; i++) free(inputs[i]);
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
