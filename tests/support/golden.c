/*
 * golden — reader for the .bgld files in tests/golden/ (see golden.h).
 *
 * Design.  The file is read whole into memory and parsed by a cursor that
 * knows how many bytes remain; every read goes through one function that
 * refuses to step past the end and records what it was reading, so the error
 * for a damaged file says "truncated at offset N reading case 'x'
 * last_hidden_state" instead of crashing.  Array sizes are computed in
 * size_t with explicit overflow checks before they are compared with the
 * remaining bytes, and the case count is bounded by the smallest possible
 * case size before anything is allocated, so a hostile length field cannot
 * provoke a huge allocation.  Integers and floats are assembled from bytes
 * in little-endian order, so the reader does not depend on the host's byte
 * order or alignment.  On any error everything allocated so far is freed
 * and the caller's struct is left zeroed.
 *
 * Format, version 1 (little-endian; written by tools/make_goldens.py):
 *     "BGLD"  u32 version=1  u32 header_len  header bytes (UTF-8 text)
 *     u32 ncases
 *     per case: u32 name_len, name bytes; u32 len (S); u32 hidden;
 *               u32 flags (bit0 token_type_ids, bit1 attention_mask,
 *               bit2 pooler_output; other bits must be 0);
 *               i32 input_ids[S]; [i32 token_type_ids[S]];
 *               [i32 attention_mask[S]]; f32 last_hidden_state[S*hidden];
 *               [f32 pooler_output[hidden]]
 *     nothing after the last case.
 */
#include "golden.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_FLAG_TYPES 1u
#define GOLDEN_FLAG_MASK 2u
#define GOLDEN_FLAG_POOLER 4u
#define GOLDEN_FLAGS_KNOWN 7u
/* Smallest encoded case: name_len, len, hidden, flags, one input id, one float. */
#define GOLDEN_MIN_CASE_BYTES 24u

typedef struct cursor {
    const unsigned char *p;
    size_t len, off;
    const char *name;
    char *err;
    size_t cap;
    int failed;
} cursor;

static void cur_error(cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cur_error(cursor *c, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = 1;
    if (!c->err || c->cap == 0) return;
    int n = snprintf(c->err, c->cap, "%s: offset %zu: ", c->name, c->off);
    if (n < 0 || (size_t)n >= c->cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->cap - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Pointer to the next n bytes, or NULL (with an error) if fewer remain. */
static const unsigned char *cur_take(cursor *c, size_t n, const char *what, const char *case_name) {
    if (c->failed) return NULL;
    if (n > c->len - c->off) {
        if (case_name)
            cur_error(c, "truncated reading case '%s' %s (%zu bytes needed, %zu left)", case_name, what, n,
                      c->len - c->off);
        else
            cur_error(c, "truncated reading %s (%zu bytes needed, %zu left)", what, n, c->len - c->off);
        return NULL;
    }
    const unsigned char *q = c->p + c->off;
    c->off += n;
    return q;
}

static uint32_t le32(const unsigned char *q) {
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

static int cur_u32(cursor *c, uint32_t *out, const char *what, const char *case_name) {
    const unsigned char *q = cur_take(c, 4, what, case_name);
    if (!q) return -1;
    *out = le32(q);
    return 0;
}

/* n = a * b * elem with overflow check. */
static int mul_size(size_t a, size_t b, size_t elem, size_t *n) {
    if (a != 0 && b > SIZE_MAX / a) return -1;
    size_t ab = a * b;
    if (elem != 0 && ab > SIZE_MAX / elem) return -1;
    *n = ab * elem;
    return 0;
}

static int32_t *read_i32s(cursor *c, size_t count, const char *what, const char *case_name) {
    size_t bytes;
    if (mul_size(count, 1, 4, &bytes)) {
        cur_error(c, "case '%s' %s: size overflows", case_name, what);
        return NULL;
    }
    const unsigned char *q = cur_take(c, bytes, what, case_name);
    if (!q) return NULL;
    int32_t *out = malloc(count ? count * sizeof *out : 1);
    if (!out) {
        cur_error(c, "out of memory reading case '%s' %s", case_name, what);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) out[i] = (int32_t)le32(q + 4 * i);
    return out;
}

static float *read_f32s(cursor *c, size_t count, const char *what, const char *case_name) {
    size_t bytes;
    if (mul_size(count, 1, 4, &bytes)) {
        cur_error(c, "case '%s' %s: size overflows", case_name, what);
        return NULL;
    }
    const unsigned char *q = cur_take(c, bytes, what, case_name);
    if (!q) return NULL;
    float *out = malloc(count ? count * sizeof *out : 1);
    if (!out) {
        cur_error(c, "out of memory reading case '%s' %s", case_name, what);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        uint32_t u = le32(q + 4 * i);
        memcpy(&out[i], &u, sizeof u);
    }
    return out;
}

static char *copy_text(cursor *c, size_t n, const char *what) {
    const unsigned char *q = cur_take(c, n, what, NULL);
    if (!q) return NULL;
    if (memchr(q, '\0', n)) {
        cur_error(c, "%s contains a NUL byte", what);
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        cur_error(c, "out of memory reading %s", what);
        return NULL;
    }
    memcpy(s, q, n);
    s[n] = '\0';
    return s;
}

static void free_case(golden_case *k) {
    free(k->name);
    free(k->input_ids);
    free(k->token_type_ids);
    free(k->attention_mask);
    free(k->last_hidden_state);
    free(k->pooler_output);
    memset(k, 0, sizeof *k);
}

static int read_case(cursor *c, golden_case *k, int index) {
    char label[32];
    snprintf(label, sizeof label, "#%d", index);
    uint32_t name_len, len, hidden, flags;
    if (cur_u32(c, &name_len, "name length", label)) return -1;
    if (name_len == 0) {
        cur_error(c, "case %s has an empty name", label);
        return -1;
    }
    k->name = copy_text(c, name_len, "case name");
    if (!k->name) return -1;
    const char *nm = k->name;
    if (cur_u32(c, &len, "len", nm) || cur_u32(c, &hidden, "hidden", nm) || cur_u32(c, &flags, "flags", nm))
        return -1;
    if (len == 0 || len > (uint32_t)INT32_MAX) {
        cur_error(c, "case '%s': invalid len %u", nm, len);
        return -1;
    }
    if (hidden == 0 || hidden > (uint32_t)INT32_MAX) {
        cur_error(c, "case '%s': invalid hidden %u", nm, hidden);
        return -1;
    }
    if (flags & ~GOLDEN_FLAGS_KNOWN) {
        cur_error(c, "case '%s': unknown flag bits 0x%x", nm, flags & ~GOLDEN_FLAGS_KNOWN);
        return -1;
    }
    k->len = (int)len;
    k->hidden = (int)hidden;
    size_t lhs_count;
    if (mul_size(len, hidden, 1, &lhs_count)) {
        cur_error(c, "case '%s': len * hidden overflows", nm);
        return -1;
    }
    k->input_ids = read_i32s(c, len, "input_ids", nm);
    if (!k->input_ids) return -1;
    if (flags & GOLDEN_FLAG_TYPES) {
        k->token_type_ids = read_i32s(c, len, "token_type_ids", nm);
        if (!k->token_type_ids) return -1;
    }
    if (flags & GOLDEN_FLAG_MASK) {
        k->attention_mask = read_i32s(c, len, "attention_mask", nm);
        if (!k->attention_mask) return -1;
    }
    k->last_hidden_state = read_f32s(c, lhs_count, "last_hidden_state", nm);
    if (!k->last_hidden_state) return -1;
    if (flags & GOLDEN_FLAG_POOLER) {
        k->pooler_output = read_f32s(c, hidden, "pooler_output", nm);
        if (!k->pooler_output) return -1;
    }
    return 0;
}

int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    if (err && cap) err[0] = '\0';
    cursor c = {.p = data, .len = data ? len : 0, .name = name ? name : "<memory>", .err = err, .cap = cap};
    const unsigned char *magic = cur_take(&c, 4, "magic", NULL);
    if (!magic) return -1;
    if (memcmp(magic, "BGLD", 4) != 0) {
        c.off = 0;
        cur_error(&c, "not a golden file (magic is not \"BGLD\")");
        return -1;
    }
    uint32_t version, header_len, ncases;
    if (cur_u32(&c, &version, "version", NULL)) return -1;
    if (version != 1) {
        c.off -= 4;
        cur_error(&c, "unsupported version %u (expected 1)", version);
        return -1;
    }
    if (cur_u32(&c, &header_len, "header length", NULL)) return -1;
    char *header = copy_text(&c, header_len, "header");
    if (!header) return -1;
    if (cur_u32(&c, &ncases, "case count", NULL)) {
        free(header);
        return -1;
    }
    size_t rest = c.len - c.off;
    if (ncases > (uint32_t)INT32_MAX || ncases > rest / GOLDEN_MIN_CASE_BYTES) {
        c.off -= 4;
        cur_error(&c, "case count %u does not fit in the %zu bytes that follow", ncases, rest);
        free(header);
        return -1;
    }
    golden_case *cases = calloc(ncases ? ncases : 1, sizeof *cases);
    if (!cases) {
        cur_error(&c, "out of memory for %u cases", ncases);
        free(header);
        return -1;
    }
    golden_file tmp = {.header = header, .count = 0, .cases = cases};
    for (uint32_t i = 0; i < ncases; i++) {
        tmp.count = (int)i + 1;
        if (read_case(&c, &cases[i], (int)i)) {
            golden_free(&tmp);
            return -1;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(cases[j].name, cases[i].name) == 0) {
                cur_error(&c, "case name '%s' appears twice", cases[i].name);
                golden_free(&tmp);
                return -1;
            }
        }
    }
    if (c.off != c.len) {
        cur_error(&c, "%zu unexpected bytes after the last case", c.len - c.off);
        golden_free(&tmp);
        return -1;
    }
    *g = tmp;
    return 0;
}

int golden_load(golden_file *g, const char *path, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    if (err && cap) err[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && cap) snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t size = 0, cap_buf = 1 << 16;
    unsigned char *buf = malloc(cap_buf);
    int rc = -1;
    if (!buf) {
        if (err && cap) snprintf(err, cap, "%s: out of memory", path);
        goto done;
    }
    for (;;) {
        if (size == cap_buf) {
            if (cap_buf > SIZE_MAX / 2) {
                if (err && cap) snprintf(err, cap, "%s: file too large", path);
                goto done;
            }
            unsigned char *nb = realloc(buf, cap_buf * 2);
            if (!nb) {
                if (err && cap) snprintf(err, cap, "%s: out of memory", path);
                goto done;
            }
            buf = nb;
            cap_buf *= 2;
        }
        size_t n = fread(buf + size, 1, cap_buf - size, f);
        size += n;
        if (n == 0) break;
    }
    if (ferror(f)) {
        if (err && cap) snprintf(err, cap, "%s: read error", path);
        goto done;
    }
    rc = golden_load_memory(g, buf, size, path, err, cap);
done:
    free(buf);
    fclose(f);
    return rc;
}

void golden_free(golden_file *g) {
    if (!g) return;
    if (g->cases)
        for (int i = 0; i < g->count; i++) free_case(&g->cases[i]);
    free(g->cases);
    free(g->header);
    memset(g, 0, sizeof *g);
}

const golden_case *golden_find(const golden_file *g, const char *name) {
    for (int i = 0; g && name && i < g->count; i++)
        if (strcmp(g->cases[i].name, name) == 0) return &g->cases[i];
    return NULL;
}

int golden_header_value(const golden_file *g, const char *key, char *out, size_t cap) {
    if (!g || !g->header || !key || !out || cap == 0) return -1;
    size_t klen = strlen(key);
    const char *line = g->header;
    while (*line) {
        const char *eol = strchr(line, '\n');
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        if (llen >= klen + 2 && memcmp(line, key, klen) == 0 && line[klen] == ':' && line[klen + 1] == ' ') {
            size_t vlen = llen - klen - 2;
            if (vlen >= cap) return -1;
            memcpy(out, line + klen + 2, vlen);
            out[vlen] = '\0';
            return 0;
        }
        if (!eol) break;
        line = eol + 1;
    }
    return -1;
}

double golden_max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)x[i]);
        if (isnan(v)) return NAN;
        if (v > m) m = v;
    }
    return m;
}

double golden_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)a[i] - (double)b[i]);
        if (isnan(v)) return NAN;
        if (v > m) m = v;
    }
    return m;
}
