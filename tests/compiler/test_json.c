/*
 * test_json — the strict JSON reader against expectations written here.
 *
 * Every document is first copied into a heap buffer of exactly its length,
 * so under ASan any read past `len` is caught (the reader is promised a
 * buffer that is not NUL-terminated).  Three kinds of evidence:
 *   - fixed documents whose every field is spelled out by hand, including
 *     escapes and their UTF-8 bytes, number edge cases and offsets;
 *   - random documents: the test builds a tree of its own, writes it out with
 *     random whitespace and random choices among equivalent escapes, parses
 *     the text and compares the two trees node by node (numbers round-trip
 *     through printf's %.17e, integers through %lld);
 *   - a table of invalid documents, each of which must fail with the exact
 *     byte offset, line and column the test computes itself, and a fuzz loop
 *     (every truncation, random byte flips) that must never crash.
 */
#include <math.h>

#include "check.h"
#include "tbuf.h"
#include "json.h"

/* ---- helpers ---------------------------------------------------------- */

static char errbuf[4096];

/* Parse a copy of text[0..len) that has no byte after it. */
static int parse_exact(json_doc *doc, const char *text, size_t len) {
    char *copy = malloc(len ? len : 1);
    if (len) memcpy(copy, text, len);
    int rc = json_parse(doc, copy, len, "doc.json", errbuf, sizeof errbuf);
    free(copy);
    return rc;
}

static int parse_str(json_doc *doc, const char *text) { return parse_exact(doc, text, strlen(text)); }

/* ---- fixed documents -------------------------------------------------- */

static void test_nested_document(void) {
    const char *text =
        "{\n"
        "  \"name\": \"bert\",\n"
        "  \"layers\": [1, -2, 3.5, 1e3, -0.25E-2, true, false, null],\n"
        "  \"inner\": {\"tab\": \"x\\ty\", \"empty\": {}, \"list\": []},\n"
        "  \"deep\": [[[{\"k\": [0]}]]]\n"
        "}";
    json_doc doc;
    int rc = parse_str(&doc, text);
    CHECK(rc == 0, "parse failed: %s", errbuf);
    if (rc != 0) return;
    const json_value *r = &doc.root;
    CHECK(r->type == JSON_TYPE_OBJECT && r->count == 4, "root: type %d count %zu", r->type, r->count);
    CHECK(r->offset == 0, "root offset %zu", r->offset);
    const json_value *name = json_get(r, "name");
    CHECK(name && name->type == JSON_TYPE_STRING && strcmp(name->string, "bert") == 0 &&
              name->string_len == 4,
          "name");
    CHECK(name && name->offset == (size_t)(strstr(text, "\"bert\"") - text), "name offset %zu",
          name ? name->offset : 0);
    CHECK(strcmp(r->keys[0], "name") == 0 && strcmp(r->keys[1], "layers") == 0 &&
              strcmp(r->keys[2], "inner") == 0 && strcmp(r->keys[3], "deep") == 0,
          "keys in document order");
    const json_value *l = json_get(r, "layers");
    CHECK(l && l->type == JSON_TYPE_ARRAY && l->count == 8, "layers");
    if (l && l->count == 8) {
        const json_value *it = l->items;
        CHECK(it[0].type == JSON_TYPE_NUMBER && it[0].number_is_int && it[0].integer == 1 &&
                  it[0].number == 1.0,
              "layers[0]");
        CHECK(it[1].number_is_int && it[1].integer == -2 && it[1].number == -2.0, "layers[1]");
        CHECK(!it[2].number_is_int && it[2].number == 3.5, "layers[2]");
        CHECK(!it[3].number_is_int && it[3].number == 1000.0, "layers[3] %g", it[3].number);
        CHECK(!it[4].number_is_int && it[4].number == -0.0025, "layers[4] %.17g", it[4].number);
        CHECK(it[5].type == JSON_TYPE_BOOL && it[5].boolean == 1, "layers[5]");
        CHECK(it[6].type == JSON_TYPE_BOOL && it[6].boolean == 0, "layers[6]");
        CHECK(it[7].type == JSON_TYPE_NULL, "layers[7]");
        CHECK(it[3].offset == (size_t)(strstr(text, "1e3") - text), "offset of 1e3");
    }
    const json_value *in = json_get(r, "inner");
    CHECK(in && in->type == JSON_TYPE_OBJECT && in->count == 3, "inner");
    const json_value *tab = json_get(in, "tab");
    CHECK(tab && tab->string_len == 3 && memcmp(tab->string, "x\ty", 4) == 0, "tab escape");
    const json_value *e = json_get(in, "empty");
    CHECK(e && e->type == JSON_TYPE_OBJECT && e->count == 0, "empty object");
    const json_value *li = json_get(in, "list");
    CHECK(li && li->type == JSON_TYPE_ARRAY && li->count == 0, "empty list");
    const json_value *d = json_get(r, "deep");
    for (int k = 0; k < 3 && d; k++) d = d->type == JSON_TYPE_ARRAY && d->count == 1 ? &d->items[0] : NULL;
    const json_value *kk = json_get(d, "k");
    CHECK(kk && kk->type == JSON_TYPE_ARRAY && kk->count == 1 && kk->items[0].number_is_int &&
              kk->items[0].integer == 0,
          "deep");
    CHECK(json_get(r, "nope") == NULL, "missing key");
    CHECK(json_get(l, "name") == NULL, "json_get on an array");
    CHECK(json_get(NULL, "name") == NULL, "json_get on NULL");
    json_free(&doc);
    CHECK(doc.root.count == 0 && doc.root.items == NULL, "json_free clears the root");
    json_free(&doc); /* twice is harmless */
}

static void test_string_escapes(void) {
    const char *text =
        "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t A=\\u0041 e=\\u00e9 E=\\u20AC smile=\\uD83D\\ude00 "
        "nul=\\u0000 raw=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 del=\x7f\"";
    const char expect[] =
        "q\" b\\ s/ \b\f\n\r\t A=A e=\xc3\xa9 E=\xe2\x82\xac smile=\xf0\x9f\x98\x80 "
        "nul=\0 raw=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 del=\x7f";
    json_doc doc;
    int rc = parse_str(&doc, text);
    CHECK(rc == 0, "parse failed: %s", errbuf);
    if (rc != 0) return;
    CHECK(doc.root.type == JSON_TYPE_STRING, "type");
    CHECK(doc.root.string_len == sizeof expect - 1, "length %zu, expected %zu", doc.root.string_len,
          sizeof expect - 1);
    CHECK(doc.root.string_len == sizeof expect - 1 &&
              memcmp(doc.root.string, expect, sizeof expect) == 0,
          "decoded bytes differ");
    json_free(&doc);

    /* Highest code point and the surrogate boundaries. */
    struct {
        const char *text;
        const char *bytes;
    } cases[] = {
        {"\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf"},
        {"\"\\uD800\\uDC00\"", "\xf0\x90\x80\x80"},
        {"\"\\uD7FF\"", "\xed\x9f\xbf"},
        {"\"\\uE000\"", "\xee\x80\x80"},
        {"\"\\u07FF\\u0800\"", "\xdf\xbf\xe0\xa0\x80"},
        {"\"\\u007f\\u0080\"", "\x7f\xc2\x80"},
        {"\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf"},
        {"\"\"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rc = parse_str(&doc, cases[i].text);
        CHECK(rc == 0, "case %zu: %s", i, errbuf);
        if (rc) continue;
        CHECK(doc.root.string_len == strlen(cases[i].bytes) &&
                  strcmp(doc.root.string, cases[i].bytes) == 0,
              "case %zu: wrong bytes", i);
        json_free(&doc);
    }
}

static void test_number_edges(void) {
    struct {
        const char *text;
        int is_int;
        int64_t integer;
        double number;
    } cases[] = {
        {"0", 1, 0, 0.0},
        {"-0", 1, 0, -0.0},
        {"7", 1, 7, 7.0},
        {"9223372036854775807", 1, INT64_MAX, 9223372036854775807.0},
        {"-9223372036854775808", 1, INT64_MIN, -9223372036854775808.0},
        {"9223372036854775808", 0, 0, 9223372036854775808.0},
        {"-9223372036854775809", 0, 0, -9223372036854775808.0},
        {"1000000000000000019884624838656", 0, 0, 1e30},
        {"0.1", 0, 0, 0.1},
        {"-0.0", 0, 0, -0.0},
        {"1E+2", 0, 0, 100.0},
        {"1e-2", 0, 0, 0.01},
        {"2.5e0", 0, 0, 2.5},
        {"10.0", 0, 0, 10.0},
        {"1e-400", 0, 0, 0.0},
        {"4.9406564584124654e-324", 0, 0, 4.9406564584124654e-324},
        {"1.7976931348623157e308", 0, 0, 1.7976931348623157e308},
        {"123456789012345678901234567890e-10", 0, 0, 12345678901234567890.1234567890},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_doc doc;
        int rc = parse_str(&doc, cases[i].text);
        CHECK(rc == 0, "%s: %s", cases[i].text, errbuf);
        if (rc) continue;
        const json_value *v = &doc.root;
        CHECK(v->type == JSON_TYPE_NUMBER, "%s: type", cases[i].text);
        CHECK(v->number_is_int == cases[i].is_int, "%s: number_is_int %d", cases[i].text,
              v->number_is_int);
        if (cases[i].is_int)
            CHECK(v->integer == cases[i].integer, "%s: integer %lld", cases[i].text,
                  (long long)v->integer);
        CHECK(v->number == cases[i].number && signbit(v->number) == signbit(cases[i].number),
              "%s: number %.17g", cases[i].text, v->number);
        json_free(&doc);
    }

    /* Random integers through %lld, random doubles through %.17e. */
    for (int k = 0; k < 2000; k++) {
        char text[64];
        int64_t want = (int64_t)check_rng_u64();
        if (k & 1) want >>= check_rng_range(0, 62);
        snprintf(text, sizeof text, "%lld", (long long)want);
        json_doc doc;
        if (parse_str(&doc, text) != 0) {
            CHECK(0, "%s: %s", text, errbuf);
            continue;
        }
        CHECK(doc.root.number_is_int && doc.root.integer == want && doc.root.number == (double)want,
              "%s parsed as %lld", text, (long long)doc.root.integer);
        json_free(&doc);

        double dv;
        do {
            uint64_t bits = check_rng_u64();
            memcpy(&dv, &bits, 8);
        } while (!isfinite(dv));
        snprintf(text, sizeof text, "%.17e", dv);
        if (parse_str(&doc, text) != 0) {
            CHECK(0, "%s: %s", text, errbuf);
            continue;
        }
        CHECK(!doc.root.number_is_int && memcmp(&doc.root.number, &dv, 8) == 0,
              "%s parsed as %.17e", text, doc.root.number);
        json_free(&doc);
    }
}

static void test_whitespace_bom_and_depth(void) {
    json_doc doc;
    const char *text = "\xef\xbb\xbf \t\r\n[ 1 ,\t2\r\n]\n ";
    CHECK(parse_str(&doc, text) == 0, "BOM + whitespace: %s", errbuf);
    CHECK(doc.root.type == JSON_TYPE_ARRAY && doc.root.count == 2 && doc.root.offset == 7,
          "array after BOM at %zu", doc.root.offset);
    json_free(&doc);

    /* 64 levels are fine; the 65th bracket is refused at its own offset. */
    for (int depth = 63; depth <= 66; depth++) {
        char buf[200];
        int n = 0;
        for (int i = 0; i < depth; i++) buf[n++] = '[';
        for (int i = 0; i < depth; i++) buf[n++] = ']';
        int rc = parse_exact(&doc, buf, (size_t)n);
        if (depth <= 64) {
            CHECK(rc == 0, "depth %d: %s", depth, errbuf);
            if (rc == 0) json_free(&doc);
        } else {
            CHECK(rc == -1 && strstr(errbuf, "doc.json: byte 64 (line 1, column 65): ") &&
                      strstr(errbuf, "nesting"),
                  "depth %d: %s", depth, errbuf);
        }
    }
    /* Objects count toward the same limit. */
    char buf[700];
    int n = 0;
    for (int i = 0; i < 65; i++) n += snprintf(buf + n, sizeof buf - (size_t)n, "{\"a\":");
    n += snprintf(buf + n, sizeof buf - (size_t)n, "1");
    for (int i = 0; i < 65; i++) buf[n++] = '}';
    CHECK(parse_exact(&doc, buf, (size_t)n) == -1 && strstr(errbuf, "nesting"), "deep objects: %s",
          errbuf);

    CHECK(strcmp(json_type_name(JSON_TYPE_OBJECT), "object") == 0 &&
              strcmp(json_type_name(JSON_TYPE_ARRAY), "array") == 0 &&
              strcmp(json_type_name(JSON_TYPE_STRING), "string") == 0 &&
              strcmp(json_type_name(JSON_TYPE_NUMBER), "number") == 0 &&
              strcmp(json_type_name(JSON_TYPE_BOOL), "boolean") == 0 &&
              strcmp(json_type_name(JSON_TYPE_NULL), "null") == 0,
          "json_type_name");
}

/* ---- random documents ------------------------------------------------- */

typedef struct tnode tnode;
struct tnode {
    json_type type;
    int boolean;
    int is_int;
    int64_t integer;
    double number;
    unsigned char *str;
    size_t str_len;
    size_t count;
    tnode *kids;
    char **keys;
};

static void tbuf_space(tbuf *b) {
    static const char ws[] = " \t\n\r";
    int n = (int)check_rng_range(-3, 2);
    for (int i = 0; i < n; i++) tbuf_put(b, &ws[check_rng_range(0, 3)], 1);
}

/* The test's own UTF-8 encoder. */
static size_t enc_utf8(unsigned char *o, uint32_t cp) {
    if (cp <= 0x7f) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp <= 0x7ff) {
        o[0] = (unsigned char)(0xc0 + cp / 64);
        o[1] = (unsigned char)(0x80 + cp % 64);
        return 2;
    }
    if (cp <= 0xffff) {
        o[0] = (unsigned char)(0xe0 + cp / 4096);
        o[1] = (unsigned char)(0x80 + cp / 64 % 64);
        o[2] = (unsigned char)(0x80 + cp % 64);
        return 3;
    }
    o[0] = (unsigned char)(0xf0 + cp / 262144);
    o[1] = (unsigned char)(0x80 + cp / 4096 % 64);
    o[2] = (unsigned char)(0x80 + cp / 64 % 64);
    o[3] = (unsigned char)(0x80 + cp % 64);
    return 4;
}

static uint32_t random_code_point(int allow_nul) {
    for (;;) {
        uint32_t cp;
        switch (check_rng_range(0, 5)) {
        case 0: cp = (uint32_t)check_rng_range(0, 0x1f); break;
        case 1: cp = (uint32_t)"\"\\/abc"[check_rng_range(0, 5)]; break;
        case 2: cp = (uint32_t)check_rng_range(0x20, 0x7f); break;
        case 3: cp = (uint32_t)check_rng_range(0x80, 0x7ff); break;
        case 4: cp = (uint32_t)check_rng_range(0x800, 0xffff); break;
        default: cp = (uint32_t)check_rng_range(0x10000, 0x10ffff); break;
        }
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        if (cp == 0 && !allow_nul) continue;
        return cp;
    }
}

static void write_u_escape(tbuf *b, uint32_t unit) {
    tbuf_printf(b, check_rng_range(0, 1) ? "\\u%04x" : "\\u%04X", (unsigned)unit);
}

/* Append a random string: expected bytes to *out, JSON text to b. */
static void gen_string(tbuf *b, tbuf *out, const char *prefix, int allow_nul) {
    tbuf_put(b, "\"", 1);
    if (prefix) {
        tbuf_put(b, prefix, strlen(prefix));
        tbuf_put(out, prefix, strlen(prefix));
    }
    int n = (int)check_rng_range(0, 12);
    for (int i = 0; i < n; i++) {
        uint32_t cp = random_code_point(allow_nul);
        unsigned char u[4];
        size_t k = enc_utf8(u, cp);
        tbuf_put(out, u, k);
        int how = (int)check_rng_range(0, 2);
        const char *shortesc = NULL;
        switch (cp) {
        case '"': shortesc = "\\\""; break;
        case '\\': shortesc = "\\\\"; break;
        case '/': shortesc = how == 0 ? "\\/" : NULL; break;
        case '\b': shortesc = "\\b"; break;
        case '\f': shortesc = "\\f"; break;
        case '\n': shortesc = "\\n"; break;
        case '\r': shortesc = "\\r"; break;
        case '\t': shortesc = "\\t"; break;
        default: break;
        }
        int must_escape = cp < 0x20 || cp == '"' || cp == '\\';
        if (shortesc && how != 2) {
            tbuf_put(b, shortesc, strlen(shortesc));
        } else if (must_escape || how == 2) {
            if (cp >= 0x10000) {
                write_u_escape(b, 0xd800 + ((cp - 0x10000) >> 10));
                write_u_escape(b, 0xdc00 + ((cp - 0x10000) & 0x3ff));
            } else {
                write_u_escape(b, cp);
            }
        } else {
            tbuf_put(b, u, k);
        }
    }
    tbuf_put(b, "\"", 1);
}

static void gen_value(tnode *t, tbuf *b, int depth) {
    memset(t, 0, sizeof *t);
    int kind = (int)check_rng_range(0, depth < 5 ? 7 : 5);
    tbuf_space(b);
    switch (kind) {
    case 0:
        t->type = JSON_TYPE_NULL;
        tbuf_printf(b, "null");
        break;
    case 1:
        t->type = JSON_TYPE_BOOL;
        t->boolean = (int)check_rng_range(0, 1);
        tbuf_printf(b, t->boolean ? "true" : "false");
        break;
    case 2:
        t->type = JSON_TYPE_NUMBER;
        t->is_int = 1;
        t->integer = (int64_t)check_rng_u64() >> check_rng_range(0, 63);
        t->number = (double)t->integer;
        tbuf_printf(b, "%lld", (long long)t->integer);
        break;
    case 3: {
        t->type = JSON_TYPE_NUMBER;
        uint64_t bits;
        do {
            bits = check_rng_u64();
            memcpy(&t->number, &bits, 8);
        } while (!isfinite(t->number));
        tbuf_printf(b, check_rng_range(0, 1) ? "%.17e" : "%.17E", t->number);
        break;
    }
    case 4:
    case 5: {
        t->type = JSON_TYPE_STRING;
        tbuf s = {0};
        gen_string(b, &s, NULL, 1);
        tbuf_put(&s, "", 0);
        t->str = (unsigned char *)s.p;
        t->str_len = s.n;
        break;
    }
    case 6:
        t->type = JSON_TYPE_ARRAY;
        t->count = (size_t)check_rng_range(0, 5);
        t->kids = calloc(t->count + 1, sizeof *t->kids);
        tbuf_put(b, "[", 1);
        for (size_t i = 0; i < t->count; i++) {
            if (i) tbuf_put(b, ",", 1);
            gen_value(&t->kids[i], b, depth + 1);
        }
        tbuf_space(b);
        tbuf_put(b, "]", 1);
        break;
    default:
        t->type = JSON_TYPE_OBJECT;
        t->count = (size_t)check_rng_range(0, 5);
        t->kids = calloc(t->count + 1, sizeof *t->kids);
        t->keys = calloc(t->count + 1, sizeof *t->keys);
        tbuf_put(b, "{", 1);
        for (size_t i = 0; i < t->count; i++) {
            if (i) tbuf_put(b, ",", 1);
            tbuf_space(b);
            /* The "N:" prefix keeps keys unique: digits never contain ':'. */
            char prefix[32];
            snprintf(prefix, sizeof prefix, "%zu:", i);
            tbuf k = {0};
            gen_string(b, &k, prefix, 0);
            tbuf_put(&k, "", 0);
            k.p[k.n] = '\0';
            t->keys[i] = k.p;
            tbuf_space(b);
            tbuf_put(b, ":", 1);
            gen_value(&t->kids[i], b, depth + 1);
        }
        tbuf_space(b);
        tbuf_put(b, "}", 1);
        break;
    }
    tbuf_space(b);
}

static void tnode_free(tnode *t) {
    for (size_t i = 0; i < t->count; i++) {
        tnode_free(&t->kids[i]);
        if (t->keys) free(t->keys[i]);
    }
    free(t->kids);
    free(t->keys);
    free(t->str);
}

static int tnode_compare(const tnode *t, const json_value *v, const char *path) {
    if ((int)t->type != (int)v->type) {
        CHECK(0, "%s: type %s, expected %s", path, json_type_name(v->type), json_type_name(t->type));
        return 0;
    }
    switch (t->type) {
    case JSON_TYPE_NULL: return 1;
    case JSON_TYPE_BOOL:
        CHECK(t->boolean == v->boolean, "%s: boolean", path);
        return t->boolean == v->boolean;
    case JSON_TYPE_NUMBER: {
        int ok = v->number_is_int == t->is_int && memcmp(&v->number, &t->number, 8) == 0 &&
                 (!t->is_int || v->integer == t->integer);
        CHECK(ok, "%s: number %.17g (int %d %lld), expected %.17g (int %d %lld)", path, v->number,
              v->number_is_int, (long long)v->integer, t->number, t->is_int, (long long)t->integer);
        return ok;
    }
    case JSON_TYPE_STRING: {
        int ok = v->string_len == t->str_len && memcmp(v->string, t->str, t->str_len) == 0 &&
                 v->string[v->string_len] == '\0';
        CHECK(ok, "%s: string of %zu bytes differs (expected %zu)", path, v->string_len, t->str_len);
        return ok;
    }
    case JSON_TYPE_ARRAY:
    case JSON_TYPE_OBJECT:
        if (v->count != t->count) {
            CHECK(0, "%s: %zu members, expected %zu", path, v->count, t->count);
            return 0;
        }
        for (size_t i = 0; i < t->count; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%.400s/%zu", path, i);
            if (t->keys) {
                if (strcmp(v->keys[i], t->keys[i]) != 0) {
                    CHECK(0, "%s: key differs", sub);
                    return 0;
                }
                if (json_get(v, t->keys[i]) != &v->items[i]) {
                    CHECK(0, "%s: json_get finds another member", sub);
                    return 0;
                }
            }
            if (!tnode_compare(&t->kids[i], &v->items[i], sub)) return 0;
        }
        return 1;
    }
    return 0;
}

static void test_random_documents(void) {
    for (int iter = 0; iter < 400; iter++) {
        tnode t;
        tbuf b = {0};
        gen_value(&t, &b, 0);
        json_doc doc;
        int rc = parse_exact(&doc, b.p, b.n);
        CHECK(rc == 0, "iteration %d: %s", iter, errbuf);
        if (rc == 0) {
            if (!tnode_compare(&t, &doc.root, "$")) iter = 1 << 30;
            json_free(&doc);
        }
        tnode_free(&t);
        free(b.p);
    }
}

/* ---- invalid documents ------------------------------------------------ */

typedef struct bad_doc {
    const char *text;
    size_t len;   /* 0: strlen */
    size_t off;   /* expected byte offset */
    const char *what;
} bad_doc;

static void test_invalid_documents(void) {
    static char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    const bad_doc cases[] = {
        {"", 0, 0, "expected a value"},
        {"   ", 0, 3, "found end of input"},
        {"{", 0, 1, "expected a string key or '}'"},
        {"[1,]", 0, 3, "expected a value"},
        {"[1 2]", 0, 3, "expected ',' or ']'"},
        {"[1,2", 0, 4, "found end of input"},
        {"{\"a\" 1}", 0, 5, "expected ':'"},
        {"{\"a\":1,}", 0, 7, "expected a string key"},
        {"{\"a\":1 \"b\":2}", 0, 7, "expected ',' or '}'"},
        {"{\"a\":}", 0, 5, "expected a value"},
        {"{1:2}", 0, 1, "expected a string key"},
        {"01", 0, 1, "leading zeros"},
        {"-", 0, 1, "expected a digit"},
        {"-a", 0, 1, "expected a digit"},
        {"1.", 0, 2, "after '.'"},
        {"1.e5", 0, 2, "after '.'"},
        {"1e", 0, 2, "exponent"},
        {"1e+", 0, 3, "exponent"},
        {"+1", 0, 0, "expected a value"},
        {".5", 0, 0, "expected a value"},
        {"1 2", 0, 2, "expected end of input"},
        {"[1]x", 0, 3, "expected end of input"},
        {"tru", 0, 3, "expected 'true'"},
        {"trux", 0, 3, "expected 'true'"},
        {"nul", 0, 3, "expected 'null'"},
        {"fals", 0, 4, "expected 'false'"},
        {"NaN", 0, 0, "expected a value"},
        {"Infinity", 0, 0, "expected a value"},
        {"1e400", 0, 0, "out of the range"},
        {"[0, -1e400]", 0, 4, "out of the range"},
        {"'a'", 0, 0, "expected a value"},
        {"\"abc", 0, 4, "unterminated string"},
        {"\"a\\", 0, 3, "unterminated string"},
        {"\"a\x01" "b\"", 0, 2, "control character 0x01"},
        {"\"\t\"", 0, 1, "control character 0x09"},
        {"\"a\\x\"", 0, 2, "invalid escape"},
        {"\"\\u12G4\"", 0, 5, "hex digit"},
        {"\"\\u12\"", 0, 5, "hex digit"},
        {"\"\\u12", 0, 5, "hex digit"},
        {"\"\\uD800\"", 0, 1, "unpaired high surrogate"},
        {"\"x\\uD800\\u0041\"", 0, 2, "unpaired high surrogate"},
        {"\"\\uD800\\uD800\"", 0, 1, "unpaired high surrogate"},
        {"\"\\uD800\\uDC0Z\"", 0, 12, "hex digit"},
        {"\"\\uDC00\"", 0, 1, "unpaired low surrogate"},
        {"\"\xff\"", 0, 1, "invalid UTF-8"},
        {"\"\x80\"", 0, 1, "invalid UTF-8"},
        {"\"\xc0\x80\"", 0, 1, "invalid UTF-8"},
        {"\"\xc1\xbf\"", 0, 1, "invalid UTF-8"},
        {"\"ab\xe0\x80\x80\"", 0, 4, "invalid UTF-8"},
        {"\"\xed\xa0\x80\"", 0, 2, "invalid UTF-8"},
        {"\"\xf4\x90\x80\x80\"", 0, 2, "invalid UTF-8"},
        {"\"\xf0\x8f\xbf\xbf\"", 0, 2, "invalid UTF-8"},
        {"\"\xf5\x80\x80\x80\"", 0, 1, "invalid UTF-8"},
        {"\"\xe2\x82\"", 0, 3, "invalid UTF-8"},
        {"\"\xe2\x82", 0, 3, "truncated UTF-8"},
        {"\"\xf0\x9f\x98\"", 0, 4, "invalid UTF-8"},
        {"{\"a\":1,\"b\":2,\"a\":3}", 0, 13, "duplicate key \"a\""},
        {"{\"a\":1,\"b\":{\"c\":1,\"c\":2},\"a\":3}", 0, 18, "duplicate key \"c\""},
        {"{\"b\":1,\"a\":1,\"b\":2,\"a\":3}", 0, 13, "duplicate key \"b\""},
        {"{\"a\":1,\"\\u0061\":2}", 0, 7, "duplicate key \"a\""},
        {"{\"a\\u0000b\":1}", 0, 1, "U+0000"},
        {deep, 0, 64, "nesting deeper than 64"},
        {"\xef\xbb\xbf", 0, 3, "expected a value"},
        {"\xef\xbb", 0, 0, "expected a value"},
        {"[1,\n  2,\n  x]", 0, 11, "expected a value"},
        {"{\r\n\"k\":\n\n tru }", 0, 13, "expected 'true'"},
        {"[1]\0", 4, 3, "expected end of input"},
        {"\"a\0b\"", 5, 2, "control character 0x00"},
        {"[\"\\u0000\"] ]", 0, 11, "expected end of input"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_doc *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->text);
        json_doc doc;
        memset(&doc, 0x5a, sizeof doc);
        int rc = parse_exact(&doc, c->text, len);
        CHECK(rc == -1, "case %zu (%.40s) parsed", i, c->text);
        if (rc != -1) {
            json_free(&doc);
            continue;
        }
        /* The test's own line/column count. */
        size_t line = 1, col = 1;
        for (size_t k = 0; k < c->off; k++) {
            if (c->text[k] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        char prefix[128];
        snprintf(prefix, sizeof prefix, "doc.json: byte %zu (line %zu, column %zu): ", c->off, line,
                 col);
        CHECK(strncmp(errbuf, prefix, strlen(prefix)) == 0, "case %zu: got \"%s\", expected prefix \"%s\"",
              i, errbuf, prefix);
        CHECK(strstr(errbuf, c->what) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, errbuf, c->what);
        CHECK(doc.root.type == JSON_TYPE_NULL && doc.root.count == 0 && doc.root.items == NULL &&
                  doc.root.string == NULL,
              "case %zu: failed parse left a non-empty doc", i);
        json_free(&doc);
    }

    /* A missing or tiny error buffer is fine; the message is truncated. */
    json_doc doc;
    CHECK(json_parse(&doc, "[", 1, "x", NULL, 0) == -1, "NULL err");
    char tiny[8];
    CHECK(json_parse(&doc, "[", 1, "x", tiny, sizeof tiny) == -1 && strlen(tiny) == 7,
          "tiny err buffer: \"%s\"", tiny);
}

/* ---- fuzz ------------------------------------------------------------- */

/* After a failed parse the message must name an offset within the input. */
static void check_clean_failure(const char *what, size_t len) {
    const char *b = strstr(errbuf, "doc.json: byte ");
    unsigned long long off = b ? strtoull(b + 15, NULL, 10) : ~0ull;
    CHECK(b == errbuf && off <= len, "%s: bad failure message \"%s\" (len %zu)", what, errbuf, len);
}

static void test_fuzz(void) {
    const char *seeds[] = {
        "{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}",
        "{\"a\": [1, -2.5e-3, true, false, null, \"x\\u00e9\\uD83D\\uDE00\\n\"], \"b\": {\"c\": {}}}",
        "[\"\xe2\x82\xac\xf0\x9f\x98\x80\", 123456789012345678901234567890, -0, 0.5E+10]",
    };
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t len = strlen(seeds[s]);
        json_doc doc;
        CHECK(parse_str(&doc, seeds[s]) == 0, "seed %zu: %s", s, errbuf);
        json_free(&doc);
        /* Every truncation of a document that is a composite must fail. */
        for (size_t n = 0; n < len; n++) {
            int rc = parse_exact(&doc, seeds[s], n);
            CHECK(rc == -1, "seed %zu truncated to %zu parsed", s, n);
            if (rc == 0) json_free(&doc);
            else check_clean_failure("truncation", n);
        }
        /* Random byte flips: parse or fail cleanly. */
        char *buf = malloc(len);
        for (int iter = 0; iter < 3000; iter++) {
            memcpy(buf, seeds[s], len);
            int flips = (int)check_rng_range(1, 4);
            for (int k = 0; k < flips; k++) {
                size_t at = (size_t)check_rng_range(0, (int64_t)len - 1);
                if (check_rng_range(0, 1))
                    buf[at] = (char)check_rng_range(0, 255);
                else
                    buf[at] = "{}[]\",:\\u0e-.tfn \xc3\xed"[check_rng_range(0, 19)];
            }
            size_t n = (size_t)check_rng_range((int64_t)len / 2, (int64_t)len);
            if (parse_exact(&doc, buf, n) == 0)
                json_free(&doc);
            else
                check_clean_failure("flip", n);
        }
        free(buf);
    }
    /* Random generated documents, truncated. */
    for (int iter = 0; iter < 50; iter++) {
        tnode t;
        tbuf b = {0};
        gen_value(&t, &b, 0);
        for (size_t n = 0; n < b.n; n++) {
            json_doc doc;
            if (parse_exact(&doc, b.p, n) == 0)
                json_free(&doc);
            else
                check_clean_failure("random truncation", n);
        }
        tnode_free(&t);
        free(b.p);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_nested_document);
    CHECK_CASE(test_string_escapes);
    CHECK_CASE(test_number_edges);
    CHECK_CASE(test_whitespace_bom_and_depth);
    CHECK_CASE(test_random_documents);
    CHECK_CASE(test_invalid_documents);
    CHECK_CASE(test_fuzz);
    return check_summary();
}
