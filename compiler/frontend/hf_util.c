/*
 * hf_util — what the Hugging Face importer's files share (hf_internal.h):
 * a growing text buffer that remembers an allocation failure, path and
 * number formatting, YAML scalars written so they read back as exactly the
 * same string, JSON files kept with their text so an error can point at
 * FILE:LINE:COL, and the checks of one config field or one weight that
 * every family's reader is made of.  No policy lives here: which fields and
 * which tensors a family has is hf_family.c's business, which files a
 * directory has hf_import.c's.
 */
#include "hf_internal.h"

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

/* ------------------------------------------------------------ text buffer */


void hf_text_init(hf_text *t) {
    t->p = NULL;
    t->len = t->cap = 0;
    t->oom = 0;
}

void hf_text_free(hf_text *t) {
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

void hf_text_append(hf_text *t, const char *s, size_t n) {
    hf_text_reserve(t, n);
    if (t->oom) return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

void hf_text_printf(hf_text *t, const char *fmt, ...) {
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

char *hf_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* dir + "/" + name; NULL on allocation failure. */
char *hf_path_join(const char *dir, const char *name) {
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

int hf_oom(diag *d) { return diag_set(d, DIAG_CODE_INTERNAL, "bertc import: out of memory"); }

int hf_is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * Shortest "%.Ng" spelling (N <= 9) that reads back as the same float32.
 * Nine significant digits always suffice, so the loop always ends in a
 * round-trip.
 */
void hf_float_format(char *buf, size_t cap, float v) {
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
long hf_utf8_decode(const unsigned char *s, size_t *n) {
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
void hf_yaml_quoted_lossy(hf_text *t, const char *s, int *lossy) {
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

void hf_yaml_quoted(hf_text *t, const char *s) { hf_yaml_quoted_lossy(t, s, NULL); }

void hf_yaml_scalar(hf_text *t, const char *s) {
    if (hf_yaml_plain_ok(s))
        hf_text_append(t, s, strlen(s));
    else
        hf_yaml_quoted(t, s);
}

#define HF_JSON_MAX ((size_t)16 << 20)


void hf_json_file_init(hf_json_file *f) {
    memset(f, 0, sizeof *f);
}

void hf_json_file_free(hf_json_file *f) {
    if (f->parsed) json_free(&f->doc);
    free(f->text);
    free(f->path);
    hf_json_file_init(f);
}

/* Loads dir/name, whose top-level value must be of type `want`. */
int hf_json_file_load_as(hf_json_file *f, const char *dir, const char *name, json_type want, diag *d) {
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

int hf_json_file_load(hf_json_file *f, const char *dir, const char *name, diag *d) {
    return hf_json_file_load_as(f, dir, name, JSON_TYPE_OBJECT, d);
}

/* An error at a value of a JSON file: FILE:LINE:COL, the line and a caret. */
int hf_json_error(const hf_json_file *f, const json_value *v, diag *d, const char *fmt, ...) {
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
const char *hf_json_show(const hf_json_file *f, const json_value *v, char *buf, size_t cap) {
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
int hf_config_int(const hf_json_file *f, const char *key, int64_t def, int64_t *out, diag *d) {
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
int hf_config_false(const hf_json_file *f, const char *key, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    if (!v || (v->type == JSON_TYPE_BOOL && !v->boolean)) return 0;
    char shown[256];
    return hf_json_error(f, v, d, "%s %s is not supported (expected false: bertc imports encoders only)", key,
                         hf_json_show(f, v, shown, sizeof shown));
}

const char *hf_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
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
int hf_weight_check(const st_file *st, const char *name, int ndim, int64_t d0, int64_t d1, diag *d) {
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
