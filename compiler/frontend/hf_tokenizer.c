/*
 * hf_tokenizer — tokenizer.json (and the older files) to a tokdesc.
 *
 * tokenizer.json is read strictly: every component's "type" must be one
 * bertc runs (docs/tokenizer.md lists them), and every option that would
 * change the ids must have a value bertc reproduces — BPE dropout, a
 * continuing-subword prefix or end-of-word suffix on BPE, a TemplateProcessing
 * special token of several ids, a Replace regex other than "c{n,}" are
 * errors naming the file, the line and the component.  Options that only
 * decode (the "decoder"), and the "truncation" and "padding" defaults (which
 * transformers replaces on every call), are ignored.
 *
 * Vocabularies must number their entries 0..n-1 without holes; added
 * tokens keep their ids, which must be a vocabulary entry of the same text
 * or follow the vocabulary densely.  Merges name two vocabulary entries
 * whose concatenation is one too, as HF's BPE builder demands.
 */
#include "hf_tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileutil.h"
#include "json.h"
#include "tokmap.h"

#define HF_TOK_JSON_MAX ((size_t)256 << 20)

/* A JSON file being read: its text for messages and its tree. */
typedef struct hf_tj {
    const char *path;
    char *text;
    size_t len;
    json_doc doc;
    int parsed;
} hf_tj;

__attribute__((format(printf, 4, 5))) static int hf_tj_error(const hf_tj *f, const json_value *v, diag *d,
                                                             const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t line, col;
    json_line_col(f->text, f->len, v ? v->offset : 0, &line, &col);
    return diag_set_at(d, DIAG_CODE_INPUT, f->path, f->text, f->len, (int)line, (int)col, "%s", msg);
}

static int hf_tj_load(hf_tj *f, const char *path, diag *d) {
    memset(f, 0, sizeof *f);
    f->path = path;
    if (!(f->text = file_read_all(path, &f->len, HF_TOK_JSON_MAX, d))) return -1;
    char err[1024];
    if (json_parse(&f->doc, f->text, f->len, path, err, sizeof err)) return diag_set(d, DIAG_CODE_INPUT, "%s", err);
    f->parsed = 1;
    if (f->doc.root.type != JSON_TYPE_OBJECT)
        return hf_tj_error(f, &f->doc.root, d, "expected a JSON object at the top level, got %s",
                           json_type_name(f->doc.root.type));
    return 0;
}

static void hf_tj_free(hf_tj *f) {
    if (f->parsed) json_free(&f->doc);
    free(f->text);
    memset(f, 0, sizeof *f);
}

static int hf_oom(diag *d) { return diag_set(d, DIAG_CODE_INTERNAL, "out of memory"); }

/* A boolean member: absent or null gives def. */
static int hf_tj_bool(const hf_tj *f, const json_value *o, const char *key, int def, int *out, diag *d) {
    const json_value *v = json_get(o, key);
    *out = def;
    if (!v || v->type == JSON_TYPE_NULL) return 0;
    if (v->type != JSON_TYPE_BOOL) return hf_tj_error(f, v, d, "%s must be true or false, got %s", key, json_type_name(v->type));
    *out = v->boolean;
    return 0;
}

/* A string member without NUL; absent or null gives NULL when null_ok. */
static int hf_tj_str(const hf_tj *f, const json_value *o, const char *key, int null_ok, const char **out, diag *d) {
    const json_value *v = json_get(o, key);
    *out = NULL;
    if ((!v || v->type == JSON_TYPE_NULL) && null_ok) return 0;
    if (!v) return hf_tj_error(f, o, d, "missing '%s'", key);
    if (v->type != JSON_TYPE_STRING || strlen(v->string) != v->string_len)
        return hf_tj_error(f, v, d, "%s must be a string without NUL characters", key);
    *out = v->string;
    return 0;
}

/* An integer member in [lo, hi]; absent or null gives def. */
static int hf_tj_int(const hf_tj *f, const json_value *o, const char *key, int64_t lo, int64_t hi, int64_t def,
                     int64_t *out, diag *d) {
    const json_value *v = json_get(o, key);
    *out = def;
    if (!v || v->type == JSON_TYPE_NULL) return 0;
    if (v->type != JSON_TYPE_NUMBER || !v->number_is_int || v->integer < lo || v->integer > hi)
        return hf_tj_error(f, v, d, "%s must be an integer in %lld..%lld", key, (long long)lo, (long long)hi);
    *out = v->integer;
    return 0;
}

static int hf_tj_type(const hf_tj *f, const json_value *o, const char *what, const char **type, diag *d) {
    if (o->type != JSON_TYPE_OBJECT) return hf_tj_error(f, o, d, "%s must be an object, got %s", what, json_type_name(o->type));
    if (hf_tj_str(f, o, "type", 0, type, d)) return -1;
    return 0;
}

/* ---- the vocabulary ---- */

/* {"token": id, ...} with ids exactly 0..n-1. */
static int hf_tok_vocab_object(const hf_tj *f, const json_value *v, tokdesc *t, diag *d) {
    if (!v || v->type != JSON_TYPE_OBJECT) return hf_tj_error(f, v, d, "the model's vocab must be an object of token: id");
    size_t n = v->count;
    if (n == 0 || n > INT32_MAX / 4) return hf_tj_error(f, v, d, "the model's vocab has %zu entries", n);
    const char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    int rc = texts && lens ? 0 : hf_oom(d);
    for (size_t i = 0; !rc && i < n; i++) {
        const json_value *id = &v->items[i];
        if (id->type != JSON_TYPE_NUMBER || !id->number_is_int || id->integer < 0 || (uint64_t)id->integer >= n)
            rc = hf_tj_error(f, id, d, "vocab entry '%.100s': the id must be an integer in 0..%zu (ids number the "
                             "entries without holes)", v->keys[i], n - 1);
        else if (texts[id->integer])
            rc = hf_tj_error(f, id, d, "vocab entry '%.100s': id %lld is also '%.100s'", v->keys[i],
                             (long long)id->integer, texts[id->integer]);
        else {
            texts[id->integer] = v->keys[i];
            lens[id->integer] = strlen(v->keys[i]);
        }
    }
    if (!rc) rc = tokdesc_set_vocab(t, texts, lens, (int32_t)n, d);
    free(texts);
    free(lens);
    return rc;
}

/* A text -> id map over the description's vocabulary (the last of equal texts wins). */
typedef struct hf_vmap {
    tokmap map;
    const char **text;
    uint32_t *len;
} hf_vmap;

static int hf_vmap_init(hf_vmap *m, const tokdesc *t) {
    memset(m, 0, sizeof *m);
    m->text = malloc((size_t)t->nvocab * sizeof *m->text);
    m->len = malloc((size_t)t->nvocab * sizeof *m->len);
    if (!m->text || !m->len) return -1;
    for (int32_t i = 0; i < t->nvocab; i++) {
        m->text[i] = t->vocab_text + t->vocab_off[i];
        m->len[i] = (uint32_t)strlen(m->text[i]);
    }
    return tokmap_init(&m->map, m->text, m->len, t->nvocab);
}

static void hf_vmap_free(hf_vmap *m) {
    tokmap_free(&m->map);
    free(m->text);
    free(m->len);
}

static int32_t hf_vmap_get(const hf_vmap *m, const char *s) { return tokmap_get(&m->map, s, strlen(s)); }

/* ---- models ---- */

static int hf_tok_wordpiece(const hf_tj *f, const json_value *m, tokdesc *t, const hf_vmap *vm, diag *d) {
    const char *unk, *prefix;
    int64_t maxc;
    if (hf_tj_str(f, m, "unk_token", 0, &unk, d) || hf_tj_str(f, m, "continuing_subword_prefix", 0, &prefix, d) ||
        hf_tj_int(f, m, "max_input_chars_per_word", 1, 1000, 100, &maxc, d))
        return -1;
    if ((t->unk_id = hf_vmap_get(vm, unk)) < 0)
        return hf_tj_error(f, json_get(m, "unk_token"), d, "the unknown token '%.100s' is not in the vocab", unk);
    if (!(t->continuing_subword_prefix = strdup(prefix))) return hf_oom(d);
    t->max_input_chars_per_word = (uint32_t)maxc;
    return 0;
}

/* a + b into out[cap]; -1 if it does not fit. */
static int hf_join(const char *a, const char *b, char *out, size_t cap) {
    size_t na = strlen(a), nb = strlen(b);
    if (na + nb >= cap) return -1;
    memcpy(out, a, na);
    memcpy(out + na, b, nb + 1);
    return 0;
}

/* One merge "a b" (or ["a", "b"]) to its three ids. */
static int hf_tok_merge(const hf_tj *f, const json_value *e, const hf_vmap *vm, int32_t out[3], diag *d) {
    char buf[1024];
    const char *a = NULL, *b = NULL;
    if (e->type == JSON_TYPE_STRING) {
        const char *sp = strchr(e->string, ' ');
        if (!sp || strchr(sp + 1, ' ') || e->string_len >= sizeof buf || strlen(e->string) != e->string_len)
            return hf_tj_error(f, e, d, "a merge must be two tokens separated by one space, got '%.100s'", e->string);
        memcpy(buf, e->string, e->string_len + 1);
        buf[sp - e->string] = 0;
        a = buf;
        b = buf + (sp - e->string) + 1;
    } else if (e->type == JSON_TYPE_ARRAY && e->count == 2 && e->items[0].type == JSON_TYPE_STRING &&
               e->items[1].type == JSON_TYPE_STRING) {
        a = e->items[0].string;
        b = e->items[1].string;
    } else {
        return hf_tj_error(f, e, d, "a merge must be \"a b\" or [\"a\", \"b\"]");
    }
    char joined[2048];
    if (hf_join(a, b, joined, sizeof joined)) return hf_tj_error(f, e, d, "a merge of over 2 KiB");
    out[0] = hf_vmap_get(vm, a);
    out[1] = hf_vmap_get(vm, b);
    out[2] = hf_vmap_get(vm, joined);
    if (out[0] < 0 || out[1] < 0 || out[2] < 0)
        return hf_tj_error(f, e, d, "the merge '%.100s' + '%.100s' names a token that is not in the vocab ('%.100s')",
                           a, b, out[0] < 0 ? a : out[1] < 0 ? b : joined);
    return 0;
}

static int hf_tok_bpe_options(const hf_tj *f, const json_value *m, tokdesc *t, const hf_vmap *vm, diag *d) {
    const json_value *v;
    const char *s;
    if ((v = json_get(m, "dropout")) && v->type != JSON_TYPE_NULL && !(v->type == JSON_TYPE_NUMBER && v->number == 0))
        return hf_tj_error(f, v, d, "BPE dropout is not supported (it makes tokenization random)");
    static const char *const empty_only[2] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        if (hf_tj_str(f, m, empty_only[i], 1, &s, d)) return -1;
        if (s && *s)
            return hf_tj_error(f, json_get(m, empty_only[i]), d, "BPE %s '%.50s' is not supported (only null or \"\")",
                               empty_only[i], s);
    }
    int fuse, fallback, ignore;
    if (hf_tj_bool(f, m, "fuse_unk", 0, &fuse, d) || hf_tj_bool(f, m, "byte_fallback", 0, &fallback, d) ||
        hf_tj_bool(f, m, "ignore_merges", 0, &ignore, d) || hf_tj_str(f, m, "unk_token", 1, &s, d))
        return -1;
    t->flags |= (fuse ? TOKDESC_FLAG_FUSE_UNK : 0) | (fallback ? TOKDESC_FLAG_BYTE_FALLBACK : 0) |
                (ignore ? TOKDESC_FLAG_IGNORE_MERGES : 0);
    if (s && (t->unk_id = hf_vmap_get(vm, s)) < 0)
        return hf_tj_error(f, json_get(m, "unk_token"), d, "the unknown token '%.100s' is not in the vocab", s);
    return 0;
}

static int hf_tok_bpe(const hf_tj *f, const json_value *m, tokdesc *t, const hf_vmap *vm, diag *d) {
    if (hf_tok_bpe_options(f, m, t, vm, d)) return -1;
    const json_value *ms = json_get(m, "merges");
    if (!ms || ms->type != JSON_TYPE_ARRAY) return hf_tj_error(f, ms ? ms : m, d, "a BPE model needs its merges (an array)");
    if (ms->count > INT32_MAX / 4) return hf_tj_error(f, ms, d, "too many merges");
    if (ms->count && !(t->merges = malloc(3 * ms->count * sizeof *t->merges))) return hf_oom(d);
    for (size_t i = 0; i < ms->count; i++)
        if (hf_tok_merge(f, &ms->items[i], vm, t->merges + 3 * i, d)) return -1;
    t->nmerges = (int32_t)ms->count;
    return 0;
}

/* Unigram: "vocab": [["piece", score], ...], "unk_id", "byte_fallback". */
static int hf_tok_unigram(const hf_tj *f, const json_value *m, tokdesc *t, diag *d) {
    const json_value *v = json_get(m, "vocab");
    if (!v || v->type != JSON_TYPE_ARRAY || v->count == 0 || v->count > INT32_MAX / 4)
        return hf_tj_error(f, v ? v : m, d, "a Unigram model needs its vocab: [[piece, score], ...]");
    size_t n = v->count;
    const char **texts = calloc(n, sizeof *texts);
    size_t *lens = calloc(n, sizeof *lens);
    t->scores = malloc(n * sizeof *t->scores);
    int rc = texts && lens && t->scores ? 0 : hf_oom(d);
    for (size_t i = 0; !rc && i < n; i++) {
        const json_value *e = &v->items[i];
        if (e->type != JSON_TYPE_ARRAY || e->count != 2 || e->items[0].type != JSON_TYPE_STRING ||
            e->items[1].type != JSON_TYPE_NUMBER)
            rc = hf_tj_error(f, e, d, "Unigram vocab entry %zu must be [piece, score]", i);
        else if (strlen(e->items[0].string) != e->items[0].string_len)
            rc = hf_tj_error(f, e, d, "Unigram vocab entry %zu holds a NUL character, which bertc does not support", i);
        else {
            texts[i] = e->items[0].string;
            lens[i] = e->items[0].string_len;
            t->scores[i] = e->items[1].number;
        }
    }
    if (!rc) rc = tokdesc_set_vocab(t, texts, lens, (int32_t)n, d);
    free(texts);
    free(lens);
    int64_t unk;
    int fallback;
    if (rc || hf_tj_int(f, m, "unk_id", 0, (int64_t)n - 1, -1, &unk, d) ||
        hf_tj_bool(f, m, "byte_fallback", 0, &fallback, d))
        return -1;
    t->unk_id = (int32_t)unk;
    if (fallback) t->flags |= TOKDESC_FLAG_BYTE_FALLBACK;
    return 0;
}

static int hf_tok_model(const hf_tj *f, tokdesc *t, diag *d) {
    const json_value *m = json_get(&f->doc.root, "model");
    const char *type;
    if (!m) return hf_tj_error(f, &f->doc.root, d, "no 'model'");
    if (hf_tj_type(f, m, "model", &type, d)) return -1;
    if (!strcmp(type, "Unigram")) {
        t->model = TOKDESC_MODEL_UNIGRAM;
        return hf_tok_unigram(f, m, t, d);
    }
    int wp = !strcmp(type, "WordPiece");
    if (!wp && strcmp(type, "BPE"))
        return hf_tj_error(f, json_get(m, "type"), d, "model type '%.50s' is not supported (expected WordPiece, "
                           "BPE or Unigram)", type);
    t->model = wp ? TOKDESC_MODEL_WORDPIECE : TOKDESC_MODEL_BPE;
    if (hf_tok_vocab_object(f, json_get(m, "vocab"), t, d)) return -1;
    hf_vmap vm;
    int rc = hf_vmap_init(&vm, t) ? hf_oom(d) : wp ? hf_tok_wordpiece(f, m, t, &vm, d) : hf_tok_bpe(f, m, t, &vm, d);
    hf_vmap_free(&vm);
    return rc;
}

/* ---- normalizers ---- */

/* Standard base64 (with padding) of s, into a new buffer. */
static uint8_t *hf_base64(const char *s, size_t n, uint32_t *out_len) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n % 4 || n / 4 * 3 > UINT32_MAX) return NULL;
    uint8_t *o = malloc(n / 4 * 3 + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char *p = s[i + j] ? strchr(abc, s[i + j]) : NULL;
            if (s[i + j] == '=' && i + 4 == n && j >= 2 && (j == 3 || s[i + 3] == '=')) {
                pad++;
                v <<= 6;
            } else if (p && !pad) {
                v = v << 6 | (uint32_t)(p - abc);
            } else {
                free(o);
                return NULL;
            }
        }
        o[k++] = (uint8_t)(v >> 16);
        if (pad < 2) o[k++] = (uint8_t)(v >> 8);
        if (pad < 1) o[k++] = (uint8_t)v;
    }
    *out_len = (uint32_t)k;
    return o;
}

static tokdesc_normalizer *hf_tok_norm_add(tokdesc *t, diag *d) {
    if (t->nnormalizers >= 64) {
        diag_set(d, DIAG_CODE_INPUT, "more than 64 normalizers");
        return NULL;
    }
    tokdesc_normalizer *p = realloc(t->normalizers, (size_t)(t->nnormalizers + 1) * sizeof *p);
    if (!p) {
        hf_oom(d);
        return NULL;
    }
    t->normalizers = p;
    memset(&p[t->nnormalizers], 0, sizeof *p);
    return &p[t->nnormalizers++];
}

/* Replace: a literal pattern, or the regex "c{n,}" (one character repeated n >= 2 times or more). */
static int hf_tok_replace(const hf_tj *f, const json_value *v, tokdesc_normalizer *n, diag *d) {
    const json_value *pat = json_get(v, "pattern");
    const char *content, *s = NULL;
    if (hf_tj_str(f, v, "content", 0, &content, d)) return -1;
    int regex = 0;
    if (pat && pat->type == JSON_TYPE_OBJECT && pat->count == 1 && pat->items[0].type == JSON_TYPE_STRING &&
        strlen(pat->items[0].string) == pat->items[0].string_len) {
        regex = !strcmp(pat->keys[0], "Regex");
        if (regex || !strcmp(pat->keys[0], "String")) s = pat->items[0].string;
    }
    if (!s || !*s) return hf_tj_error(f, pat ? pat : v, d, "Replace needs a pattern {\"String\": s} or {\"Regex\": r}");
    char one[8];
    int count = 0, used = 0;
    if (regex) {
        size_t cl = ((uint8_t)s[0] < 0xC0) ? 1 : ((uint8_t)s[0] < 0xE0) ? 2 : ((uint8_t)s[0] < 0xF0) ? 3 : 4;
        if (strchr(".[]()\\|*+?^$", s[0]) || strlen(s) <= cl || sscanf(s + cl, "{%d,}%n", &count, &used) != 1 ||
            s[cl + (size_t)used] || count < 2 || count > 1000)
            return hf_tj_error(f, pat, d, "Replace regex '%.50s' is not supported (only a character repeated: \"c{n,}\")", s);
        memcpy(one, s, cl);
        one[cl] = 0;
        s = one;
    }
    n->kind = TOKDESC_NORM_REPLACE;
    n->p[0] = count;
    if (!(n->pattern = strdup(s)) || !(n->content = strdup(content))) return hf_oom(d);
    return 0;
}

static int hf_tok_norm_bert(const hf_tj *f, const json_value *v, tokdesc_normalizer *n, diag *d) {
    int clean, chinese, lower;
    const json_value *sa = json_get(v, "strip_accents");
    if (hf_tj_bool(f, v, "clean_text", 1, &clean, d) || hf_tj_bool(f, v, "handle_chinese_chars", 1, &chinese, d) ||
        hf_tj_bool(f, v, "lowercase", 1, &lower, d))
        return -1;
    if (sa && sa->type != JSON_TYPE_NULL && sa->type != JSON_TYPE_BOOL)
        return hf_tj_error(f, sa, d, "strip_accents must be true, false or null");
    n->kind = TOKDESC_NORM_BERT;
    n->p[0] = clean;
    n->p[1] = chinese;
    n->p[2] = sa && sa->type == JSON_TYPE_BOOL ? sa->boolean : -1;
    n->p[3] = lower;
    return 0;
}

static int hf_tok_normalizer(const hf_tj *f, const json_value *v, tokdesc *t, int depth, diag *d) {
    const char *type;
    if (!v || v->type == JSON_TYPE_NULL) return 0;
    if (hf_tj_type(f, v, "the normalizer", &type, d)) return -1;
    if (!strcmp(type, "Sequence")) {
        const json_value *l = json_get(v, "normalizers");
        if (!l || l->type != JSON_TYPE_ARRAY || depth > 4) return hf_tj_error(f, v, d, "a Sequence needs its normalizers");
        for (size_t i = 0; i < l->count; i++)
            if (hf_tok_normalizer(f, &l->items[i], t, depth + 1, d)) return -1;
        return 0;
    }
    tokdesc_normalizer *n = hf_tok_norm_add(t, d);
    if (!n) return -1;
    if (!strcmp(type, "BertNormalizer")) return hf_tok_norm_bert(f, v, n, d);
    if (!strcmp(type, "Replace")) return hf_tok_replace(f, v, n, d);
    if (!strcmp(type, "Lowercase")) {
        n->kind = TOKDESC_NORM_LOWERCASE;
        return 0;
    }
    if (!strcmp(type, "Strip")) {
        n->kind = TOKDESC_NORM_STRIP;
        return hf_tj_bool(f, v, "strip_left", 1, &n->p[0], d) || hf_tj_bool(f, v, "strip_right", 1, &n->p[1], d) ? -1 : 0;
    }
    if (!strcmp(type, "Precompiled")) {
        const char *b64;
        if (hf_tj_str(f, v, "precompiled_charsmap", 0, &b64, d)) return -1;
        n->kind = TOKDESC_NORM_PRECOMPILED;
        if (!(n->data = hf_base64(b64, strlen(b64), &n->data_len)))
            return hf_tj_error(f, json_get(v, "precompiled_charsmap"), d, "precompiled_charsmap is not base64");
        diag cd;
        diag_init(&cd);
        if (tokdesc_check_charsmap(n->data, n->data_len, &cd))
            return hf_tj_error(f, json_get(v, "precompiled_charsmap"), d, "precompiled_charsmap: %s", cd.text);
        return 0;
    }
    return hf_tj_error(f, json_get(v, "type"), d, "normalizer type '%.50s' is not supported (expected "
                       "BertNormalizer, Precompiled, Replace, Lowercase, Strip or a Sequence of them)", type);
}

/* ---- pre-tokenizers ---- */

static int hf_tok_metaspace(const hf_tj *f, const json_value *v, tokdesc_pretokenizer *p, diag *d) {
    const char *rep, *scheme;
    if (hf_tj_str(f, v, "replacement", 0, &rep, d) || hf_tj_str(f, v, "prepend_scheme", 1, &scheme, d) ||
        hf_tj_bool(f, v, "split", 1, &p->split, d))
        return -1;
    size_t n = strlen(rep), cl = ((uint8_t)rep[0] < 0x80) ? 1 : ((uint8_t)rep[0] < 0xE0) ? 2 : ((uint8_t)rep[0] < 0xF0) ? 3 : 4;
    if (n != cl || !tokdesc_utf8_valid((const uint8_t *)rep, n))
        return hf_tj_error(f, json_get(v, "replacement"), d, "the Metaspace replacement must be one character");
    uint32_t c = (uint8_t)rep[0];
    if (n > 1) c &= 0xFF >> (n + 1);
    for (size_t i = 1; i < n; i++) c = c << 6 | ((uint8_t)rep[i] & 0x3F);
    p->kind = TOKDESC_PRE_METASPACE;
    p->replacement = c;
    if (scheme) {
        if (!strcmp(scheme, "always")) p->prepend_scheme = TOKDESC_PREPEND_ALWAYS;
        else if (!strcmp(scheme, "first")) p->prepend_scheme = TOKDESC_PREPEND_FIRST;
        else if (!strcmp(scheme, "never")) p->prepend_scheme = TOKDESC_PREPEND_NEVER;
        else return hf_tj_error(f, json_get(v, "prepend_scheme"), d, "prepend_scheme '%.20s' (always, first or never)", scheme);
    } else {
        int add;   /* tokenizers before 0.14: add_prefix_space */
        if (hf_tj_bool(f, v, "add_prefix_space", 1, &add, d)) return -1;
        p->prepend_scheme = add ? TOKDESC_PREPEND_ALWAYS : TOKDESC_PREPEND_NEVER;
    }
    return 0;
}

static int hf_tok_pretokenizer(const hf_tj *f, const json_value *v, tokdesc *t, int depth, diag *d) {
    const char *type;
    if (!v || v->type == JSON_TYPE_NULL) return 0;
    if (hf_tj_type(f, v, "the pre_tokenizer", &type, d)) return -1;
    if (!strcmp(type, "Sequence")) {
        const json_value *l = json_get(v, "pretokenizers");
        if (!l || l->type != JSON_TYPE_ARRAY || depth > 4) return hf_tj_error(f, v, d, "a Sequence needs its pretokenizers");
        for (size_t i = 0; i < l->count; i++)
            if (hf_tok_pretokenizer(f, &l->items[i], t, depth + 1, d)) return -1;
        return 0;
    }
    if (t->npretokenizers >= 64) return hf_tj_error(f, v, d, "more than 64 pre-tokenizers");
    tokdesc_pretokenizer *p = realloc(t->pretokenizers, (size_t)(t->npretokenizers + 1) * sizeof *p);
    if (!p) return hf_oom(d);
    t->pretokenizers = p;
    p = &p[t->npretokenizers++];
    memset(p, 0, sizeof *p);
    if (!strcmp(type, "BertPreTokenizer")) p->kind = TOKDESC_PRE_BERT;
    else if (!strcmp(type, "WhitespaceSplit")) p->kind = TOKDESC_PRE_WHITESPACE_SPLIT;
    else if (!strcmp(type, "Metaspace")) return hf_tok_metaspace(f, v, p, d);
    else if (!strcmp(type, "ByteLevel")) {
        p->kind = TOKDESC_PRE_BYTE_LEVEL;
        return hf_tj_bool(f, v, "add_prefix_space", 1, &p->add_prefix_space, d) ||
                       hf_tj_bool(f, v, "trim_offsets", 1, &p->trim_offsets, d) ||
                       hf_tj_bool(f, v, "use_regex", 1, &p->use_regex, d)
                   ? -1
                   : 0;
    } else
        return hf_tj_error(f, json_get(v, "type"), d, "pre_tokenizer type '%.50s' is not supported (expected "
                           "BertPreTokenizer, ByteLevel, Metaspace, WhitespaceSplit or a Sequence of them)", type);
    return 0;
}

/* ---- the post-processor ---- */

static int hf_tok_items(tokdesc_item **dst, int *n, const tokdesc_item *src, int count) {
    if (!(*dst = malloc((size_t)count * sizeof **dst))) return -1;
    memcpy(*dst, src, (size_t)count * sizeof **dst);
    *n = count;
    return 0;
}

/* A ["token", id] pair of Bert/RobertaProcessing. */
static int hf_tok_special_pair(const hf_tj *f, const json_value *v, const char *key, int32_t nids, int32_t *id, diag *d) {
    const json_value *p = json_get(v, key);
    if (!p || p->type != JSON_TYPE_ARRAY || p->count != 2 || p->items[1].type != JSON_TYPE_NUMBER ||
        !p->items[1].number_is_int || p->items[1].integer < 0 || p->items[1].integer >= nids)
        return hf_tj_error(f, p ? p : v, d, "%s must be [token, id] with an id below %d", key, (int)nids);
    *id = (int32_t)p->items[1].integer;
    return 0;
}

/* TemplateProcessing's single or pair list. */
static int hf_tok_template(const hf_tj *f, const json_value *v, const char *key, int pair, tokdesc *t, diag *d) {
    const json_value *l = json_get(v, key), *sp = json_get(v, "special_tokens");
    if (!l || l->type != JSON_TYPE_ARRAY || l->count < 1 || l->count > 64)
        return hf_tj_error(f, l ? l : v, d, "TemplateProcessing needs its %s template (1..64 items)", key);
    tokdesc_item items[64];
    for (size_t i = 0; i < l->count; i++) {
        const json_value *e = &l->items[i], *body, *idv;
        int64_t ty;
        int special = e->type == JSON_TYPE_OBJECT && e->count == 1 && !strcmp(e->keys[0], "SpecialToken");
        if (e->type != JSON_TYPE_OBJECT || e->count != 1 || (!special && strcmp(e->keys[0], "Sequence")) ||
            (body = &e->items[0])->type != JSON_TYPE_OBJECT || !(idv = json_get(body, "id")) || idv->type != JSON_TYPE_STRING ||
            hf_tj_int(f, body, "type_id", 0, INT32_MAX, 0, &ty, d))
            return hf_tj_error(f, e, d, "a template item must be {\"SpecialToken\": {id, type_id}} or {\"Sequence\": {id, type_id}}");
        items[i].type_id = (int32_t)ty;
        if (!special) {
            if (strcmp(idv->string, "A") && (strcmp(idv->string, "B") || !pair))
                return hf_tj_error(f, idv, d, "sequence '%.10s' in the %s template", idv->string, key);
            items[i].kind = idv->string[0] == 'A' ? TOKDESC_ITEM_SEQ_A : TOKDESC_ITEM_SEQ_B;
            items[i].id = 0;
            continue;
        }
        const json_value *st = json_get(sp, idv->string), *ids = st ? json_get(st, "ids") : NULL;
        if (!ids || ids->type != JSON_TYPE_ARRAY || ids->count != 1 || ids->items[0].type != JSON_TYPE_NUMBER ||
            !ids->items[0].number_is_int || ids->items[0].integer < 0 || ids->items[0].integer > INT32_MAX)
            return hf_tj_error(f, st ? st : idv, d, "special token '%.50s' must have exactly one id in special_tokens",
                               idv->string);
        items[i].kind = TOKDESC_ITEM_SPECIAL;
        items[i].id = (int32_t)ids->items[0].integer;
    }
    return pair ? hf_tok_items(&t->pair, &t->npair, items, (int)l->count)
                : hf_tok_items(&t->single, &t->nsingle, items, (int)l->count);
}

/* Bert, Roberta, ByteLevel or no post-processor: their fixed templates. */
static int hf_tok_fixed_post(const hf_tj *f, const json_value *v, const char *type, tokdesc *t, int32_t nids, diag *d) {
    int32_t cls = 0, sep = 0;
    int bert = type && !strcmp(type, "BertProcessing"), roberta = type && !strcmp(type, "RobertaProcessing");
    if ((bert || roberta) &&
        (hf_tok_special_pair(f, v, "cls", nids, &cls, d) || hf_tok_special_pair(f, v, "sep", nids, &sep, d)))
        return -1;
    if (roberta || (type && !strcmp(type, "ByteLevel"))) {
        int trim, prefix;
        if (hf_tj_bool(f, v, "trim_offsets", 1, &trim, d) || hf_tj_bool(f, v, "add_prefix_space", 1, &prefix, d)) return -1;
        t->flags |= (trim ? TOKDESC_FLAG_TRIM_OFFSETS : 0) | (prefix ? TOKDESC_FLAG_PREFIX_SPACE : 0);
    }
    const tokdesc_item none1[1] = {{TOKDESC_ITEM_SEQ_A, 0, 0}}, none2[2] = {{TOKDESC_ITEM_SEQ_A, 0, 0}, {TOKDESC_ITEM_SEQ_B, 0, 1}};
    const tokdesc_item b1[3] = {{0, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {0, sep, 0}};
    const tokdesc_item b2[5] = {{0, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {0, sep, 0}, {TOKDESC_ITEM_SEQ_B, 0, 1}, {0, sep, 1}};
    const tokdesc_item r2[6] = {{0, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {0, sep, 0}, {0, sep, 0}, {TOKDESC_ITEM_SEQ_B, 0, 0}, {0, sep, 0}};
    int rc = bert      ? hf_tok_items(&t->single, &t->nsingle, b1, 3) || hf_tok_items(&t->pair, &t->npair, b2, 5)
             : roberta ? hf_tok_items(&t->single, &t->nsingle, b1, 3) || hf_tok_items(&t->pair, &t->npair, r2, 6)
                       : hf_tok_items(&t->single, &t->nsingle, none1, 1) || hf_tok_items(&t->pair, &t->npair, none2, 2);
    return rc ? hf_oom(d) : 0;
}

static int hf_tok_post(const hf_tj *f, tokdesc *t, diag *d) {
    const json_value *v = json_get(&f->doc.root, "post_processor");
    const char *type = NULL;
    int32_t nids = tokdesc_id_count(t);
    if (v && v->type != JSON_TYPE_NULL && hf_tj_type(f, v, "the post_processor", &type, d)) return -1;
    if (type && !strcmp(type, "TemplateProcessing"))
        return hf_tok_template(f, v, "single", 0, t, d) || hf_tok_template(f, v, "pair", 1, t, d) ? -1 : 0;
    if (type && strcmp(type, "BertProcessing") && strcmp(type, "RobertaProcessing") && strcmp(type, "ByteLevel"))
        return hf_tj_error(f, json_get(v, "type"), d, "post_processor type '%.50s' is not supported (expected "
                           "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel or null)", type);
    return hf_tok_fixed_post(f, v, type, t, nids, d);
}

/* ---- added tokens ---- */

static int hf_tok_added(const hf_tj *f, tokdesc *t, diag *d) {
    const json_value *l = json_get(&f->doc.root, "added_tokens");
    if (!l || l->type == JSON_TYPE_NULL) return 0;
    if (l->type != JSON_TYPE_ARRAY || l->count > (1u << 20)) return hf_tj_error(f, l, d, "added_tokens must be an array");
    if (!(t->added = calloc(l->count + 1, sizeof *t->added))) return hf_oom(d);
    static const struct { const char *key; uint32_t flag; } flags[5] = {
        {"single_word", TOKDESC_ADDED_SINGLE_WORD}, {"lstrip", TOKDESC_ADDED_LSTRIP}, {"rstrip", TOKDESC_ADDED_RSTRIP},
        {"normalized", TOKDESC_ADDED_NORMALIZED}, {"special", TOKDESC_ADDED_SPECIAL}};
    for (size_t i = 0; i < l->count; i++) {
        const json_value *e = &l->items[i];
        const char *content;
        int64_t id;
        if (e->type != JSON_TYPE_OBJECT) return hf_tj_error(f, e, d, "an added token must be an object");
        if (hf_tj_str(f, e, "content", 0, &content, d) || hf_tj_int(f, e, "id", 0, INT32_MAX, -1, &id, d)) return -1;
        if (id < 0 || !*content) return hf_tj_error(f, e, d, "an added token needs an id and a non-empty content");
        tokdesc_added *a = &t->added[t->nadded++];
        a->id = (int32_t)id;
        if (!(a->content = strdup(content))) return hf_oom(d);
        for (int k = 0; k < 5; k++) {
            int b;
            if (hf_tj_bool(f, e, flags[k].key, k == 3, &b, d)) return -1;   /* normalized defaults to true */
            if (b) a->flags |= flags[k].flag;
        }
    }
    return 0;
}

/* ---- transformers' tokenizer classes ---- */

typedef enum hf_class_kind {
    HF_CLASS_GENERIC,       /* PreTrainedTokenizerFast, XLM-RoBERTa: tokenizer.json as it is */
    HF_CLASS_BERT,          /* BertNormalizer gets do_lower_case, strip_accents, tokenize_chinese_chars */
    HF_CLASS_MPNET,         /* BertNormalizer gets do_lower_case, strip_accents */
    HF_CLASS_ROBERTA,       /* RobertaProcessing gets add_prefix_space, trim_offsets */
} hf_class_kind;

static const struct {
    const char *name;
    hf_class_kind kind;
} hf_classes[] = {
    {"BertTokenizer", HF_CLASS_BERT},          {"DistilBertTokenizer", HF_CLASS_BERT},
    {"ElectraTokenizer", HF_CLASS_BERT},       {"MPNetTokenizer", HF_CLASS_MPNET},
    {"RobertaTokenizer", HF_CLASS_ROBERTA},    {"XLMRobertaTokenizer", HF_CLASS_GENERIC},
    {"PreTrainedTokenizer", HF_CLASS_GENERIC},
};

/* The class, with or without its "Fast"; -1 if unknown. */
static int hf_class_of(const char *name) {
    for (size_t i = 0; name && i < sizeof hf_classes / sizeof hf_classes[0]; i++) {
        size_t n = strlen(hf_classes[i].name);
        if (!strncmp(name, hf_classes[i].name, n) && (!name[n] || !strcmp(name + n, "Fast"))) return (int)hf_classes[i].kind;
    }
    return -1;
}

int hf_tokenizer_class_known(const char *name) { return hf_class_of(name) >= 0; }

int hf_tokenizer_class_is_mpnet(const char *name) { return name && hf_class_of(name) == HF_CLASS_MPNET; }

/* Which top-level components tokenizer.json has: what the classes look at. */
typedef struct hf_tok_shape {
    int norm_bert;          /* the normalizer is a BertNormalizer */
    int pre_byte_level;     /* the pre_tokenizer is a ByteLevel */
    int post_offsets;       /* the post_processor has add_prefix_space and trim_offsets (Roberta, ByteLevel) */
} hf_tok_shape;

/* What the class's __init__ does to tokenizer.json's components (transformers 4.51). */
static void hf_tok_class_apply(const ir_tokenizer *c, const hf_tok_shape *sh, tokdesc *t) {
    int kind = c->tokenizer_class ? hf_class_of(c->tokenizer_class) : HF_CLASS_GENERIC;
    if (sh->norm_bert && (kind == HF_CLASS_BERT || kind == HF_CLASS_MPNET)) {
        tokdesc_normalizer *n = &t->normalizers[0];
        n->p[3] = c->do_lower_case < 0 ? 1 : c->do_lower_case;
        n->p[2] = c->strip_accents;
        if (kind == HF_CLASS_BERT) n->p[1] = c->tokenize_chinese_chars < 0 ? 1 : c->tokenize_chinese_chars;
    }
    /* Every fast tokenizer sets a top-level ByteLevel's add_prefix_space (default false). */
    if (sh->pre_byte_level) t->pretokenizers[0].add_prefix_space = c->add_prefix_space > 0;
    if (sh->post_offsets && kind == HF_CLASS_ROBERTA) {
        t->flags &= ~(uint32_t)(TOKDESC_FLAG_TRIM_OFFSETS | TOKDESC_FLAG_PREFIX_SPACE);
        if (c->trim_offsets != 0) t->flags |= TOKDESC_FLAG_TRIM_OFFSETS;
        if (c->add_prefix_space > 0) t->flags |= TOKDESC_FLAG_PREFIX_SPACE;
    }
}

/* ---- the sources ---- */

/* A WordPiece tokenizer.json beside a vocab.txt must hold the same vocabulary, line for id. */
static int hf_tok_vocab_txt_same(const ir_tokenizer *c, const tokdesc *t, diag *d) {
    if (!c->vocab_path || t->model != TOKDESC_MODEL_WORDPIECE) return 0;
    size_t len;
    char *text = file_read_all(c->vocab_path, &len, (size_t)64 << 20, d);
    if (!text) return -1;
    tokdesc v;
    int rc = tokdesc_from_vocab_txt(&v, text, len, -1, -1, -1, NULL, d);
    free(text);
    if (rc) return diag_set(d, DIAG_CODE_INPUT, "%s: %s", c->vocab_path, d->text);
    if (v.nvocab != t->nvocab || v.vocab_text_len != t->vocab_text_len || memcmp(v.vocab_text, t->vocab_text, v.vocab_text_len))
        rc = diag_set(d, DIAG_CODE_INPUT, "%s: the vocabulary differs from %s's (%d and %d entries): the directory "
                      "describes two tokenizers", c->vocab_path, c->json_path, (int)v.nvocab, (int)t->nvocab);
    tokdesc_free(&v);
    return rc;
}

/* tokenizer_config.json beside tokenizer.json: an added_tokens_decoder entry that differs is re-added by transformers. */
static int hf_tok_added_decoder(const char *json_path, const tokdesc *t, diag *d) {
    const char *slash = strrchr(json_path, '/');
    size_t dl = slash ? (size_t)(slash - json_path + 1) : 0;
    char *p = malloc(dl + 32);
    if (!p) return hf_oom(d);
    memcpy(p, json_path, dl);
    strcpy(p + dl, "tokenizer_config.json");
    hf_tj f;
    struct stat sb;
    int rc = 0, exists = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    if (exists && !(rc = hf_tj_load(&f, p, d))) {
        const json_value *dec = json_get(&f.doc.root, "added_tokens_decoder");
        for (size_t i = 0; !rc && dec && dec->type == JSON_TYPE_OBJECT && i < dec->count; i++) {
            const json_value *e = &dec->items[i];
            const char *content;
            static const char *const keys[4] = {"single_word", "lstrip", "rstrip", "normalized"};
            if (hf_tj_str(&f, e, "content", 0, &content, d)) rc = -1;
            int k, found = 0;
            for (k = 0; !rc && k < t->nadded && !found; k++) found = !strcmp(t->added[k].content, content);
            for (int j = 0; !rc && found && j < 4; j++) {
                int b;
                if (hf_tj_bool(&f, e, keys[j], j == 3, &b, d)) rc = -1;
                else if (!!b != !!(t->added[k - 1].flags & (1u << j)))
                    rc = hf_tj_error(&f, e, d, "added token '%.50s' has %s %s here and %s in tokenizer.json: transformers "
                                     "would re-add it with these flags, which bertc does not model", content, keys[j],
                                     b ? "true" : "false", b ? "false" : "true");
            }
            if (!rc && !found)
                rc = hf_tj_error(&f, e, d, "added token '%.50s' is not in tokenizer.json: transformers would add it, "
                                 "which bertc does not model", content);
        }
    }
    if (exists) hf_tj_free(&f);
    free(p);
    return rc;
}

/* The components of a parsed tokenizer.json, and which top-level ones the classes look at. */
static int hf_tok_components(const hf_tj *f, tokdesc *t, hf_tok_shape *sh, diag *d) {
    const json_value *root = &f->doc.root, *v;
    if (hf_tok_model(f, t, d) || hf_tok_added(f, t, d) || hf_tok_normalizer(f, json_get(root, "normalizer"), t, 0, d) ||
        hf_tok_pretokenizer(f, json_get(root, "pre_tokenizer"), t, 0, d) || hf_tok_post(f, t, d))
        return -1;
    const json_value *ty;
    if ((v = json_get(root, "normalizer")) && (ty = json_get(v, "type")) && ty->type == JSON_TYPE_STRING)
        sh->norm_bert = !strcmp(ty->string, "BertNormalizer");
    if ((v = json_get(root, "pre_tokenizer")) && (ty = json_get(v, "type")) && ty->type == JSON_TYPE_STRING)
        sh->pre_byte_level = !strcmp(ty->string, "ByteLevel");
    if ((v = json_get(root, "post_processor")) && (ty = json_get(v, "type")) && ty->type == JSON_TYPE_STRING)
        sh->post_offsets = !strcmp(ty->string, "RobertaProcessing") || !strcmp(ty->string, "ByteLevel");
    diag cd;
    diag_init(&cd);
    if (tokdesc_check(t, &cd)) return hf_tj_error(f, root, d, "%s", cd.text);
    return 0;
}

int hf_tokenizer_json_parse(const char *name, const char *text, size_t len, tokdesc *t, diag *d) {
    hf_tj f;
    memset(&f, 0, sizeof f);
    f.path = name;
    f.text = (char *)text;
    f.len = len;
    tokdesc_init(t);
    char err[1024];
    hf_tok_shape sh = {0};
    int rc = json_parse(&f.doc, text, len, name, err, sizeof err) ? diag_set(d, DIAG_CODE_INPUT, "%s", err) : 0;
    f.parsed = !rc;
    if (!rc && f.doc.root.type != JSON_TYPE_OBJECT) rc = hf_tj_error(&f, &f.doc.root, d, "expected a JSON object");
    if (!rc) rc = hf_tok_components(&f, t, &sh, d);
    if (f.parsed) json_free(&f.doc);
    if (rc) tokdesc_free(t);
    else t->present = 1;
    return rc;
}

static int hf_tok_from_json(const ir_tokenizer *c, tokdesc *t, diag *d) {
    hf_tj f;
    hf_tok_shape sh = {0};
    int rc = hf_tj_load(&f, c->json_path, d);
    if (!rc) rc = hf_tok_components(&f, t, &sh, d);
    hf_tj_free(&f);
    if (!rc) hf_tok_class_apply(c, &sh, t);
    if (!rc) rc = hf_tok_vocab_txt_same(c, t, d) || hf_tok_added_decoder(c->json_path, t, d);
    return rc;
}

/* merges.txt as the slow RobertaTokenizer reads it: lines 2..n-1 (the first is "#version"), split on whitespace. */
static int hf_tok_merges_txt(const char *path, tokdesc *t, diag *d) {
    size_t len;
    char *text = file_read_all(path, &len, (size_t)256 << 20, d);
    if (!text) return -1;
    hf_vmap vm;
    int rc = hf_vmap_init(&vm, t) ? hf_oom(d) : 0;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (!rc && lines && !(t->merges = malloc(3 * lines * sizeof *t->merges))) rc = hf_oom(d);
    char *save = NULL, *line = strtok_r(text, "\n", &save);   /* the first line: skipped */
    size_t lineno = 1;
    for (line = strtok_r(NULL, "\n", &save); !rc && line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char a[1024], b[1024], joined[2048], extra;
        if (sscanf(line, " %1023s %1023s %c", a, b, &extra) != 2) {
            rc = diag_set(d, DIAG_CODE_INPUT, "%s:%zu: expected two tokens separated by a space", path, lineno);
            break;
        }
        hf_join(a, b, joined, sizeof joined);
        int32_t *m = t->merges + 3 * t->nmerges;
        m[0] = hf_vmap_get(&vm, a), m[1] = hf_vmap_get(&vm, b), m[2] = hf_vmap_get(&vm, joined);
        if (m[0] < 0 || m[1] < 0 || m[2] < 0)
            rc = diag_set(d, DIAG_CODE_INPUT, "%s:%zu: '%s' is not in the vocabulary", path, lineno,
                          m[0] < 0 ? a : m[1] < 0 ? b : joined);
        t->nmerges++;
    }
    hf_vmap_free(&vm);
    free(text);
    return rc;
}

/* The special tokens RobertaTokenizer(Fast) adds: in the vocabulary, or new ids after it in this order. */
static int hf_tok_roberta_specials(tokdesc *t, int32_t ids[5], diag *d) {
    static const char *const names[5] = {"<s>", "</s>", "<unk>", "<pad>", "<mask>"};
    hf_vmap vm;
    if (hf_vmap_init(&vm, t) || !(t->added = calloc(5, sizeof *t->added))) {
        hf_vmap_free(&vm);
        return hf_oom(d);
    }
    int32_t next = t->nvocab;
    for (int i = 0; i < 5; i++) {
        tokdesc_added *a = &t->added[t->nadded++];
        ids[i] = hf_vmap_get(&vm, names[i]);
        a->id = ids[i] >= 0 ? ids[i] : (ids[i] = next++);
        a->flags = TOKDESC_ADDED_SPECIAL | (i == 4 ? TOKDESC_ADDED_LSTRIP : 0);
        if (!(a->content = strdup(names[i]))) {
            hf_vmap_free(&vm);
            return hf_oom(d);
        }
    }
    hf_vmap_free(&vm);
    return 0;
}

/* vocab.json + merges.txt: RobertaConverter's tokenizer (ByteLevel, BPE, RobertaProcessing). */
static int hf_tok_from_bpe_files(const ir_tokenizer *c, tokdesc *t, diag *d) {
    hf_tj f;
    int rc = hf_tj_load(&f, c->bpe_vocab_path, d);
    if (!rc) rc = hf_tok_vocab_object(&f, &f.doc.root, t, d);
    hf_tj_free(&f);
    t->model = TOKDESC_MODEL_BPE;
    int32_t ids[5];
    if (rc || hf_tok_merges_txt(c->bpe_merges_path, t, d) || hf_tok_roberta_specials(t, ids, d)) return -1;
    t->pretokenizers = calloc(1, sizeof *t->pretokenizers);
    tokdesc_item s[3] = {{0, ids[0], 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {0, ids[1], 0}};
    tokdesc_item p[6] = {{0, ids[0], 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {0, ids[1], 0}, {0, ids[1], 0},
                         {TOKDESC_ITEM_SEQ_B, 0, 0}, {0, ids[1], 0}};
    if (!t->pretokenizers || hf_tok_items(&t->single, &t->nsingle, s, 3) || hf_tok_items(&t->pair, &t->npair, p, 6))
        return hf_oom(d);
    t->npretokenizers = 1;
    t->pretokenizers[0] = (tokdesc_pretokenizer){.kind = TOKDESC_PRE_BYTE_LEVEL, .add_prefix_space = c->add_prefix_space > 0,
                                                 .trim_offsets = 1, .use_regex = 1};
    t->flags = (c->trim_offsets != 0 ? TOKDESC_FLAG_TRIM_OFFSETS : 0) | (c->add_prefix_space > 0 ? TOKDESC_FLAG_PREFIX_SPACE : 0);
    t->pad_id = ids[3];
    return 0;
}

/*
 * MPNetTokenizerFast over vocab.txt (transformers' MPNetConverter): BERT's
 * WordPiece with <s>/</s>/<pad>/<mask> for the defaults, <mask> stripping
 * the space before it, and the pair template <s> A </s></s> B </s>, every
 * type id 0 as MPNetTokenizerFast's create_token_type_ids_from_sequences
 * gives them (MPNet reads no token types).
 */
static int hf_tok_mpnet_vocab(tokdesc *t, diag *d) {
    int32_t cls = t->single[0].id, sep = t->single[2].id;
    tokdesc_item p[6] = {{TOKDESC_ITEM_SPECIAL, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {TOKDESC_ITEM_SPECIAL, sep, 0},
                         {TOKDESC_ITEM_SPECIAL, sep, 0}, {TOKDESC_ITEM_SEQ_B, 0, 0}, {TOKDESC_ITEM_SPECIAL, sep, 0}};
    free(t->pair);
    t->pair = NULL;
    if (hf_tok_items(&t->pair, &t->npair, p, 6)) return hf_oom(d);
    for (int i = 0; i < t->nadded; i++)
        if (!strcmp(t->added[i].content, "<mask>")) t->added[i].flags |= TOKDESC_ADDED_LSTRIP;
    return 0;
}

static int hf_tok_from_vocab_txt(const ir_tokenizer *c, tokdesc *t, diag *d) {
    size_t len;
    char *text = file_read_all(c->vocab_path, &len, (size_t)64 << 20, d);
    if (!text) return -1;
    int mpnet = hf_tokenizer_class_is_mpnet(c->tokenizer_class);
    const char *tokens[5] = {c->unk_token, c->cls_token, c->sep_token, c->pad_token, c->mask_token};
    static const char *const mpnet_defaults[5] = {"[UNK]", "<s>", "</s>", "<pad>", "<mask>"};
    for (int i = 0; mpnet && i < 5; i++)
        if (!tokens[i]) tokens[i] = mpnet_defaults[i];
    int rc = tokdesc_from_vocab_txt(t, text, len, c->do_lower_case, c->strip_accents, c->tokenize_chinese_chars, tokens, d);
    free(text);
    if (rc) diag_prefix(d, "%s: ", c->vocab_path);
    else if (mpnet && (rc = hf_tok_mpnet_vocab(t, d))) tokdesc_free(t);
    return rc;
}

/* The padding id: the configured pad token, else "<pad>" or "[PAD]" when one is a token. */
static void hf_tok_pad(const ir_tokenizer *c, tokdesc *t) {
    const char *names[3] = {c->pad_token, "<pad>", "[PAD]"};
    int32_t n = tokdesc_id_count(t);
    for (int k = 0; k < 3 && t->pad_id < 0; k++)
        for (int32_t id = 0; names[k] && id < n && t->pad_id < 0; id++) {
            const char *s = tokdesc_id_text(t, id);
            if (s && !strcmp(s, names[k])) t->pad_id = id;
        }
}

int hf_tokenizer_load(const ir_tokenizer *c, tokdesc *t, diag *d) {
    tokdesc_init(t);
    if (c->tokenizer_class && hf_class_of(c->tokenizer_class) < 0)
        return diag_set(d, DIAG_CODE_INPUT, "tokenizer class '%s' is not supported (see docs/tokenizer.md)", c->tokenizer_class);
    int rc = c->json_path        ? hf_tok_from_json(c, t, d)
             : c->bpe_vocab_path ? hf_tok_from_bpe_files(c, t, d)
             : c->vocab_path     ? (tokdesc_free(t), hf_tok_from_vocab_txt(c, t, d))
                                 : diag_set(d, DIAG_CODE_INPUT, "the tokenizer names no file");
    if (!rc) {
        if (c->model_max_length > 0) t->model_max_length = c->model_max_length;
        hf_tok_pad(c, t);
        t->present = 1;
        diag cd;
        diag_init(&cd);
        if (tokdesc_check(t, &cd))
            rc = diag_set(d, DIAG_CODE_INPUT, "%s: %s", c->json_path ? c->json_path : c->bpe_vocab_path ? c->bpe_vocab_path : c->vocab_path, cd.text);
    }
    if (rc) tokdesc_free(t);
    return rc;
}
