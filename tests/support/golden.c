/*
 * golden — reader for the .bgld files in tests/golden/ (see golden.h).
 *
 * Design.  The file is read whole into memory and parsed by a cursor that
 * knows how many bytes remain (bincursor.c, shared with sentences.c); every read goes through one function that
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

#include "bincursor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_FLAG_TYPES 1u
#define GOLDEN_FLAG_MASK 2u
#define GOLDEN_FLAG_POOLER 4u
#define GOLDEN_FLAGS_KNOWN 7u
/* Smallest encoded case: name_len, len, hidden, flags, one input id, one float. */
#define GOLDEN_MIN_CASE_BYTES 24u

static char *copy_text(bincursor *c, size_t n, const char *what) {
    const unsigned char *q = bincursor_take(c, n, "%s", what);
    if (!q) return NULL;
    if (memchr(q, '\0', n)) {
        bincursor_error(c, "%s contains a NUL byte", what);
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        bincursor_error(c, "out of memory reading %s", what);
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

static int read_case(bincursor *c, golden_case *k, int index) {
    uint32_t name_len, len, hidden, flags;
    if (bincursor_u32(c, &name_len, "case '#%d' name length", index)) return -1;
    if (name_len == 0) {
        bincursor_error(c, "case #%d has an empty name", index);
        return -1;
    }
    k->name = copy_text(c, name_len, "case name");
    if (!k->name) return -1;
    const char *nm = k->name;
    if (bincursor_u32(c, &len, "case '%s' len", nm) || bincursor_u32(c, &hidden, "case '%s' hidden", nm) ||
        bincursor_u32(c, &flags, "case '%s' flags", nm))
        return -1;
    if (len == 0 || len > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid len %u", nm, len);
        return -1;
    }
    if (hidden == 0 || hidden > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid hidden %u", nm, hidden);
        return -1;
    }
    if (flags & ~GOLDEN_FLAGS_KNOWN) {
        bincursor_error(c, "case '%s': unknown flag bits 0x%x", nm, flags & ~GOLDEN_FLAGS_KNOWN);
        return -1;
    }
    k->len = (int)len;
    k->hidden = (int)hidden;
    size_t lhs_count;
    if (bincursor_mul_size(len, hidden, 1, &lhs_count)) {
        bincursor_error(c, "case '%s': len * hidden overflows", nm);
        return -1;
    }
    k->input_ids = bincursor_i32s(c, len, "case '%s' input_ids", nm);
    if (!k->input_ids) return -1;
    if (flags & GOLDEN_FLAG_TYPES) {
        k->token_type_ids = bincursor_i32s(c, len, "case '%s' token_type_ids", nm);
        if (!k->token_type_ids) return -1;
    }
    if (flags & GOLDEN_FLAG_MASK) {
        k->attention_mask = bincursor_i32s(c, len, "case '%s' attention_mask", nm);
        if (!k->attention_mask) return -1;
    }
    k->last_hidden_state = bincursor_f32s(c, lhs_count, "case '%s' last_hidden_state", nm);
    if (!k->last_hidden_state) return -1;
    if (flags & GOLDEN_FLAG_POOLER) {
        k->pooler_output = bincursor_f32s(c, hidden, "case '%s' pooler_output", nm);
        if (!k->pooler_output) return -1;
    }
    return 0;
}

int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    bincursor c = bincursor_init(data, len, name, err, cap);
    if (bincursor_magic_version(&c, "BGLD", "a golden file", 1)) return -1;
    uint32_t header_len, ncases;
    if (bincursor_u32(&c, &header_len, "header length")) return -1;
    char *header = copy_text(&c, header_len, "header");
    if (!header) return -1;
    if (bincursor_count(&c, &ncases, GOLDEN_MIN_CASE_BYTES, "case count")) {
        free(header);
        return -1;
    }
    golden_case *cases = calloc(ncases ? ncases : 1, sizeof *cases);
    if (!cases) {
        bincursor_error(&c, "out of memory for %u cases", ncases);
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
                bincursor_error(&c, "case name '%s' appears twice", cases[i].name);
                golden_free(&tmp);
                return -1;
            }
        }
    }
    if (c.off != c.len) {
        bincursor_error(&c, "%zu unexpected bytes after the last case", c.len - c.off);
        golden_free(&tmp);
        return -1;
    }
    *g = tmp;
    return 0;
}

int golden_load(golden_file *g, const char *path, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    if (err && cap) err[0] = '\0';
    unsigned char *buf;
    size_t size;
    if (bincursor_read_file(path, &buf, &size, err, cap)) return -1;
    int rc = golden_load_memory(g, buf, size, path, err, cap);
    free(buf);
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
