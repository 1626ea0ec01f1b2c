/*
 * json — see json.h.
 *
 * The reader is a plain recursive-descent parser over a byte range that is
 * not NUL-terminated, so every look at a byte goes through one bounds check
 * (json_parser_peek); nothing ever indexes past `len`.  Recursion depth is
 * capped (JSON_MAX_DEPTH), which keeps a hostile "[[[[..." from blowing the
 * stack, and the same cap bounds the recursion of json_free.
 *
 * Strictness, and the few choices RFC 8259 leaves open:
 *   - Only RFC 8259 grammar: no comments, no trailing commas, no leading
 *     zeros, no NaN/Infinity, whitespace is space/tab/CR/LF only.  A UTF-8
 *     byte order mark at the very start is skipped (the RFC allows this, and
 *     editors on some systems add one to config.json).
 *   - Strings must be valid UTF-8 (no overlong forms, no encoded surrogates,
 *     nothing above U+10FFFF); control characters must be escaped; \u
 *     escapes of surrogates must come in high+low pairs and become one 4-byte
 *     UTF-8 sequence.
 *   - Duplicate keys in one object are rejected.  The safetensors header must
 *     reject them anyway, and for config.json silently picking one of two
 *     values is worse than an error.  The check runs when the object closes
 *     (sort the keys, compare neighbours: O(n log n) even for a hostile
 *     header with a million keys) and points at the second occurrence.
 *     Because of this, json_get can return the only match.
 *   - Keys are C strings (the `keys` array has no lengths), so a key that
 *     decodes to a string containing U+0000 is rejected; string *values* may
 *     contain it and carry their length.
 *   - Numbers are converted with strtod, which is correctly rounded in glibc
 *     and reads '.' as the decimal point in the "C" locale (bertc never calls
 *     setlocale).  A literal whose magnitude overflows a double is an error;
 *     one that underflows becomes 0 or a subnormal.  Integers are converted
 *     separately, digit by digit with an overflow check, so an integer literal
 *     that does not fit int64 is still a valid number with number_is_int = 0.
 *
 * Errors report the byte offset of the first byte that cannot be accepted,
 * plus line and column (1-based, column counted in bytes) computed only when
 * an error happens.  Escape errors point at the backslash that starts the
 * escape, except a bad hex digit, which is pointed at directly.
 */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct json_parser {
    const unsigned char *s;
    size_t len;
    size_t pos;
    const char *name;
    char *err;
    size_t err_cap;
    int depth;
} json_parser;

/* The byte at `off`, or -1 past the end. */
static int json_parser_peek(const json_parser *p, size_t off) {
    return off < p->len ? p->s[off] : -1;
}

/* "end of input", "'x'" or "byte 0xNN" for the byte at `off`. */
static void json_parser_describe(const json_parser *p, size_t off, char *buf, size_t cap) {
    int c = json_parser_peek(p, off);
    if (c < 0)
        snprintf(buf, cap, "end of input");
    else if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)c);
}

void json_line_col(const char *text, size_t len, size_t off, size_t *line, size_t *col) {
    *line = *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

__attribute__((format(printf, 3, 4)))
static int json_parser_fail(json_parser *p, size_t off, const char *fmt, ...) {
    if (!p->err || p->err_cap == 0) return -1;
    size_t line, col;
    json_line_col((const char *)p->s, p->len, off, &line, &col);
    int n = snprintf(p->err, p->err_cap, "%s: byte %zu (line %zu, column %zu): ",
                     p->name ? p->name : "<json>", off, line, col);
    if (n >= 0 && (size_t)n < p->err_cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->err_cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int json_parser_oom(json_parser *p, size_t off) {
    return json_parser_fail(p, off, "out of memory");
}

static void json_parser_skip_space(json_parser *p) {
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static void json_value_free(json_value *v) {
    if (v->type == JSON_TYPE_STRING) {
        free(v->string);
    } else if (v->type == JSON_TYPE_ARRAY || v->type == JSON_TYPE_OBJECT) {
        for (size_t i = 0; i < v->count; i++) {
            json_value_free(&v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

static int json_parse_value(json_parser *p, json_value *out);

/* ---- strings ---------------------------------------------------------- */

static int json_hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Read the four hex digits of a \u escape whose backslash is at `at`. */
static int json_parse_hex4(json_parser *p, size_t at, unsigned *cp) {
    unsigned v = 0;
    for (size_t k = 2; k < 6; k++) {
        int h = json_hex_value(json_parser_peek(p, at + k));
        if (h < 0) {
            char what[32];
            json_parser_describe(p, at + k, what, sizeof what);
            return json_parser_fail(p, at + k, "expected a hex digit in \\u escape, found %s", what);
        }
        v = v * 16 + (unsigned)h;
    }
    *cp = v;
    return 0;
}

static size_t json_utf8_put(unsigned char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/*
 * Length of the well-formed UTF-8 sequence starting at `at` (lead byte
 * >= 0x80), or 0 with an error naming the first bad byte.  Table 3-7 of the
 * Unicode standard: the second byte's range depends on the lead byte.
 */
static size_t json_utf8_check(json_parser *p, size_t at) {
    int c = p->s[at];
    int lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        json_parser_fail(p, at, "invalid UTF-8 lead byte 0x%02x in string", (unsigned)c);
        return 0;
    }
    for (size_t k = 1; k < n; k++) {
        int b = json_parser_peek(p, at + k);
        int blo = k == 1 ? lo : 0x80, bhi = k == 1 ? hi : 0xbf;
        if (b < blo || b > bhi) {
            if (b < 0)
                json_parser_fail(p, at + k, "truncated UTF-8 sequence in string, found end of input");
            else
                json_parser_fail(p, at + k,
                                 "invalid UTF-8 in string: expected a continuation byte in "
                                 "0x%02x..0x%02x after lead byte 0x%02x, found 0x%02x",
                                 (unsigned)blo, (unsigned)bhi, (unsigned)c, (unsigned)b);
            return 0;
        }
    }
    return n;
}

/*
 * Parse the string whose opening quote is at p->pos into a fresh
 * NUL-terminated buffer.  A first pass finds the closing quote (or the end of
 * input) so the buffer can be sized once: decoding never produces more bytes
 * than it consumes.
 */
static int json_parse_string(json_parser *p, char **out, size_t *out_len) {
    size_t start = p->pos + 1, end = start;
    while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end > p->len) end = p->len;
    unsigned char *buf = malloc(end - start + 1);
    if (!buf) return json_parser_oom(p, p->pos);
    size_t o = 0, i = start;
    while (i < end) {
        unsigned char c = p->s[i];
        if (c == '\\') {
            int e = json_parser_peek(p, i + 1);
            unsigned cp;
            switch (e) {
            case '"': buf[o++] = '"'; i += 2; continue;
            case '\\': buf[o++] = '\\'; i += 2; continue;
            case '/': buf[o++] = '/'; i += 2; continue;
            case 'b': buf[o++] = '\b'; i += 2; continue;
            case 'f': buf[o++] = '\f'; i += 2; continue;
            case 'n': buf[o++] = '\n'; i += 2; continue;
            case 'r': buf[o++] = '\r'; i += 2; continue;
            case 't': buf[o++] = '\t'; i += 2; continue;
            case 'u':
                if (json_parse_hex4(p, i, &cp) < 0) goto fail;
                if (cp >= 0xdc00 && cp <= 0xdfff) {
                    json_parser_fail(p, i, "unpaired low surrogate \\u%04X in string", cp);
                    goto fail;
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo = 0;
                    if (json_parser_peek(p, i + 6) != '\\' || json_parser_peek(p, i + 7) != 'u') {
                        json_parser_fail(p, i,
                                         "unpaired high surrogate \\u%04X in string (expected a "
                                         "\\uDC00-\\uDFFF escape right after it)",
                                         cp);
                        goto fail;
                    }
                    if (json_parse_hex4(p, i + 6, &lo) < 0) goto fail;
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        json_parser_fail(p, i,
                                         "unpaired high surrogate \\u%04X in string (expected a "
                                         "\\uDC00-\\uDFFF escape after it, found \\u%04X)",
                                         cp, lo);
                        goto fail;
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                }
                o += json_utf8_put(buf + o, cp);
                i += 6;
                continue;
            case -1:
                json_parser_fail(p, p->len, "unterminated string: expected '\"', found end of input");
                goto fail;
            default: {
                char what[32];
                json_parser_describe(p, i + 1, what, sizeof what);
                json_parser_fail(p, i,
                                 "invalid escape: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r "
                                 "\\t \\u after the backslash, found %s",
                                 what);
                goto fail;
            }
            }
        } else if (c < 0x20) {
            json_parser_fail(p, i, "control character 0x%02x in string (expected it escaped)",
                             (unsigned)c);
            goto fail;
        } else if (c < 0x80) {
            buf[o++] = c;
            i++;
        } else {
            size_t n = json_utf8_check(p, i);
            if (n == 0) goto fail;
            memcpy(buf + o, p->s + i, n);
            o += n;
            i += n;
        }
    }
    if (end >= p->len) {
        json_parser_fail(p, p->len, "unterminated string: expected '\"', found end of input");
        goto fail;
    }
    buf[o] = '\0';
    *out = (char *)buf;
    *out_len = o;
    p->pos = end + 1;
    return 0;
fail:
    free(buf);
    return -1;
}

/* ---- numbers ---------------------------------------------------------- */

static int json_is_digit(int c) { return c >= '0' && c <= '9'; }

static int json_parse_number(json_parser *p, json_value *out) {
    size_t start = p->pos, i = start;
    int is_int = 1, negative = 0;
    char what[32];
    if (json_parser_peek(p, i) == '-') {
        negative = 1;
        i++;
    }
    if (json_parser_peek(p, i) == '0') {
        i++;
        if (json_is_digit(json_parser_peek(p, i)))
            return json_parser_fail(p, i, "leading zeros are not allowed in a number");
    } else if (json_is_digit(json_parser_peek(p, i))) {
        while (json_is_digit(json_parser_peek(p, i))) i++;
    } else {
        json_parser_describe(p, i, what, sizeof what);
        return json_parser_fail(p, i, "expected a digit, found %s", what);
    }
    size_t int_end = i;
    if (json_parser_peek(p, i) == '.') {
        is_int = 0;
        i++;
        if (!json_is_digit(json_parser_peek(p, i))) {
            json_parser_describe(p, i, what, sizeof what);
            return json_parser_fail(p, i, "expected a digit after '.', found %s", what);
        }
        while (json_is_digit(json_parser_peek(p, i))) i++;
    }
    if (json_parser_peek(p, i) == 'e' || json_parser_peek(p, i) == 'E') {
        is_int = 0;
        i++;
        if (json_parser_peek(p, i) == '+' || json_parser_peek(p, i) == '-') i++;
        if (!json_is_digit(json_parser_peek(p, i))) {
            json_parser_describe(p, i, what, sizeof what);
            return json_parser_fail(p, i, "expected a digit in the exponent, found %s", what);
        }
        while (json_is_digit(json_parser_peek(p, i))) i++;
    }

    /* strtod needs a NUL-terminated copy; the grammar is already checked. */
    size_t n = i - start;
    char small[64];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) return json_parser_oom(p, start);
    memcpy(tmp, p->s + start, n);
    tmp[n] = '\0';
    double v = strtod(tmp, NULL);
    if (tmp != small) free(tmp);
    if (isinf(v))
        return json_parser_fail(p, start, "number is out of the range of a double");

    out->type = JSON_TYPE_NUMBER;
    out->number = v;
    out->number_is_int = 0;
    out->integer = 0;
    if (is_int) {
        /* Magnitude limit: 2^63 - 1, or 2^63 for a negative number. */
        uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        uint64_t mag = 0;
        int fits = 1;
        for (size_t k = start + (size_t)negative; k < int_end; k++) {
            uint64_t d = (uint64_t)(p->s[k] - '0');
            if (mag > (limit - d) / 10) {
                fits = 0;
                break;
            }
            mag = mag * 10 + d;
        }
        if (fits) {
            out->number_is_int = 1;
            out->integer = negative ? (int64_t)(0 - mag) : (int64_t)mag;
            if (negative && mag == (uint64_t)INT64_MAX + 1) out->integer = INT64_MIN;
        }
    }
    p->pos = i;
    return 0;
}

/* ---- literals, arrays, objects ---------------------------------------- */

static int json_parse_literal(json_parser *p, const char *word) {
    size_t n = strlen(word);
    for (size_t k = 0; k < n; k++) {
        if (json_parser_peek(p, p->pos + k) != (unsigned char)word[k]) {
            char what[32];
            json_parser_describe(p, p->pos + k, what, sizeof what);
            return json_parser_fail(p, p->pos + k, "expected '%s', found %s", word, what);
        }
    }
    p->pos += n;
    return 0;
}

static int json_enter(json_parser *p) {
    if (p->depth >= JSON_MAX_DEPTH)
        return json_parser_fail(p, p->pos, "nesting deeper than %d levels", JSON_MAX_DEPTH);
    p->depth++;
    return 0;
}

/* Grow items (and keys, when `keys` is non-NULL) to hold one more. */
static int json_grow(json_value *v, size_t *cap, int with_keys) {
    if (v->count < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 4;
    json_value *items = realloc(v->items, ncap * sizeof *items);
    if (!items) return -1;
    v->items = items;
    if (with_keys) {
        char **keys = realloc(v->keys, ncap * sizeof *keys);
        if (!keys) return -1;
        v->keys = keys;
    }
    *cap = ncap;
    return 0;
}

static int json_parse_array(json_parser *p, json_value *out) {
    if (json_enter(p) < 0) return -1;
    out->type = JSON_TYPE_ARRAY;
    size_t cap = 0;
    p->pos++;
    json_parser_skip_space(p);
    if (json_parser_peek(p, p->pos) == ']') {
        p->pos++;
        p->depth--;
        return 0;
    }
    for (;;) {
        json_value item;
        memset(&item, 0, sizeof item);
        if (json_parse_value(p, &item) < 0) {
            json_value_free(&item);
            return -1;
        }
        if (json_grow(out, &cap, 0) < 0) {
            json_value_free(&item);
            return json_parser_oom(p, item.offset);
        }
        out->items[out->count++] = item;
        json_parser_skip_space(p);
        int c = json_parser_peek(p, p->pos);
        if (c == ',') {
            p->pos++;
            continue;
        }
        if (c == ']') {
            p->pos++;
            break;
        }
        char what[32];
        json_parser_describe(p, p->pos, what, sizeof what);
        return json_parser_fail(p, p->pos, "expected ',' or ']' after array element, found %s",
                                what);
    }
    p->depth--;
    return 0;
}

/* Keep the side array of key offsets as long as the object's items. */
static int json_grow_offsets(size_t **offsets, size_t *cap, size_t want) {
    if (*cap >= want) return 0;
    size_t *n = realloc(*offsets, want * sizeof *n);
    if (!n) return -1;
    *offsets = n;
    *cap = want;
    return 0;
}

typedef struct json_key_ref {
    const char *key;
    size_t index;
} json_key_ref;

static int json_key_ref_compare(const void *a, const void *b) {
    const json_key_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Reject duplicate keys; `key_offsets[i]` is where key i's quote is. */
static int json_check_duplicates(json_parser *p, const json_value *obj,
                                 const size_t *key_offsets) {
    if (obj->count < 2) return 0;
    json_key_ref *refs = malloc(obj->count * sizeof *refs);
    if (!refs) return json_parser_oom(p, obj->offset);
    for (size_t i = 0; i < obj->count; i++) {
        refs[i].key = obj->keys[i];
        refs[i].index = i;
    }
    qsort(refs, obj->count, sizeof *refs, json_key_ref_compare);
    /* Report the repeat that comes first in the document. */
    size_t worst = obj->count, first = 0;
    for (size_t i = 1; i < obj->count; i++) {
        if (strcmp(refs[i].key, refs[i - 1].key) != 0) continue;
        /* refs[i-1] is the earliest of its run only if the run starts there. */
        if (i < 2 || strcmp(refs[i - 2].key, refs[i].key) != 0) {
            if (refs[i].index < worst) {
                worst = refs[i].index;
                first = refs[i - 1].index;
            }
        }
    }
    free(refs);
    if (worst == obj->count) return 0;
    return json_parser_fail(p, key_offsets[worst],
                            "duplicate key \"%.200s\" in object (first at byte %zu); "
                            "expected each key once",
                            obj->keys[worst], key_offsets[first]);
}

static int json_parse_object(json_parser *p, json_value *out) {
    if (json_enter(p) < 0) return -1;
    out->type = JSON_TYPE_OBJECT;
    size_t cap = 0, off_cap = 0;
    size_t *key_offsets = NULL;
    p->pos++;
    json_parser_skip_space(p);
    if (json_parser_peek(p, p->pos) == '}') {
        p->pos++;
        p->depth--;
        return 0;
    }
    for (;;) {
        json_parser_skip_space(p);
        char what[32];
        size_t key_at = p->pos;
        if (json_parser_peek(p, key_at) != '"') {
            json_parser_describe(p, key_at, what, sizeof what);
            json_parser_fail(p, key_at, "expected a string key%s, found %s",
                             out->count == 0 ? " or '}'" : "", what);
            goto fail;
        }
        char *key = NULL;
        size_t key_len = 0;
        if (json_parse_string(p, &key, &key_len) < 0) goto fail;
        if (strlen(key) != key_len) {
            free(key);
            json_parser_fail(p, key_at, "object key contains U+0000 (\\u0000), which keys may not");
            goto fail;
        }
        json_parser_skip_space(p);
        if (json_parser_peek(p, p->pos) != ':') {
            free(key);
            json_parser_describe(p, p->pos, what, sizeof what);
            json_parser_fail(p, p->pos, "expected ':' after object key, found %s", what);
            goto fail;
        }
        p->pos++;
        json_value item;
        memset(&item, 0, sizeof item);
        if (json_parse_value(p, &item) < 0) {
            free(key);
            json_value_free(&item);
            goto fail;
        }
        if (json_grow(out, &cap, 1) < 0 || json_grow_offsets(&key_offsets, &off_cap, cap) < 0) {
            free(key);
            json_value_free(&item);
            json_parser_oom(p, key_at);
            goto fail;
        }
        out->keys[out->count] = key;
        out->items[out->count] = item;
        key_offsets[out->count] = key_at;
        out->count++;
        json_parser_skip_space(p);
        int c = json_parser_peek(p, p->pos);
        if (c == ',') {
            p->pos++;
            continue;
        }
        if (c == '}') {
            p->pos++;
            break;
        }
        json_parser_describe(p, p->pos, what, sizeof what);
        json_parser_fail(p, p->pos, "expected ',' or '}' after object member, found %s", what);
        goto fail;
    }
    if (json_check_duplicates(p, out, key_offsets) < 0) goto fail;
    free(key_offsets);
    p->depth--;
    return 0;
fail:
    free(key_offsets);
    return -1;
}

static int json_parse_value(json_parser *p, json_value *out) {
    json_parser_skip_space(p);
    out->offset = p->pos;
    int c = json_parser_peek(p, p->pos);
    switch (c) {
    case '{': return json_parse_object(p, out);
    case '[': return json_parse_array(p, out);
    case '"':
        if (json_parse_string(p, &out->string, &out->string_len) < 0) return -1;
        out->type = JSON_TYPE_STRING;
        return 0;
    case 't':
    case 'f':
        if (json_parse_literal(p, c == 't' ? "true" : "false") < 0) return -1;
        out->type = JSON_TYPE_BOOL;
        out->boolean = c == 't';
        return 0;
    case 'n':
        if (json_parse_literal(p, "null") < 0) return -1;
        out->type = JSON_TYPE_NULL;
        return 0;
    default:
        if (c == '-' || json_is_digit(c)) return json_parse_number(p, out);
        {
            char what[32];
            json_parser_describe(p, p->pos, what, sizeof what);
            return json_parser_fail(p, p->pos,
                                    "expected a value (object, array, string, number, true, "
                                    "false or null), found %s",
                                    what);
        }
    }
}

/* ---- public ----------------------------------------------------------- */

int json_parse(json_doc *doc, const char *text, size_t len, const char *name,
               char *err, size_t err_cap) {
    memset(doc, 0, sizeof *doc);
    if (err && err_cap) err[0] = '\0';
    json_parser p = {
        .s = (const unsigned char *)text,
        .len = text ? len : 0,
        .pos = 0,
        .name = name,
        .err = err,
        .err_cap = err_cap,
        .depth = 0,
    };
    if (p.len >= 3 && p.s[0] == 0xef && p.s[1] == 0xbb && p.s[2] == 0xbf) p.pos = 3;
    if (json_parse_value(&p, &doc->root) < 0) {
        json_value_free(&doc->root);
        return -1;
    }
    json_parser_skip_space(&p);
    if (p.pos != p.len) {
        char what[32];
        json_parser_describe(&p, p.pos, what, sizeof what);
        json_parser_fail(&p, p.pos, "expected end of input after the JSON value, found %s", what);
        json_value_free(&doc->root);
        return -1;
    }
    return 0;
}

void json_free(json_doc *doc) {
    if (doc) json_value_free(&doc->root);
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_TYPE_OBJECT || !key) return NULL;
    for (size_t i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

const char *json_type_name(json_type t) {
    switch (t) {
    case JSON_TYPE_NULL: return "null";
    case JSON_TYPE_BOOL: return "boolean";
    case JSON_TYPE_NUMBER: return "number";
    case JSON_TYPE_STRING: return "string";
    case JSON_TYPE_ARRAY: return "array";
    case JSON_TYPE_OBJECT: return "object";
    }
    return "unknown";
}
