/*
 * golden — reader for the .bgld files in tests/golden/ (see golden.h).
 *
 * Design.  The file is read whole into memory and parsed by the golden
 * files' one reader, bincursor.c: it owns the frame (magic, version, UTF-8
 * header, case count bounded by the smallest possible case before anything
 * is allocated, nothing after the last case) and a cursor that refuses to
 * step past the end and records what it was reading, so the error for a
 * damaged file says "offset N: truncated reading case 'x'
 * last_hidden_state" instead of crashing.  This file only reads one case:
 * array sizes are computed in size_t with explicit overflow checks before
 * they are compared with the remaining bytes, and values are assembled from
 * bytes in little-endian order, so nothing depends on the host's byte order
 * or alignment.  On any error everything allocated so far is freed and the
 * caller's struct is left zeroed.
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

static void free_case(void *p) {
    golden_case *k = p;
    free(k->name);
    free(k->input_ids);
    free(k->token_type_ids);
    free(k->attention_mask);
    free(k->last_hidden_state);
    free(k->pooler_output);
    memset(k, 0, sizeof *k);
}

/* The fixed fields after the name: len, hidden, flags, each checked. */
static int read_sizes(bincursor *c, golden_case *k, uint32_t *flags) {
    const char *nm = k->name;
    uint32_t len, hidden;
    if (bincursor_u32(c, &len, "case '%s' len", nm) || bincursor_u32(c, &hidden, "case '%s' hidden", nm) ||
        bincursor_u32(c, flags, "case '%s' flags", nm))
        return -1;
    if (len == 0 || len > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid len %u", nm, len);
        return -1;
    }
    if (hidden == 0 || hidden > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid hidden %u", nm, hidden);
        return -1;
    }
    if (*flags & ~GOLDEN_FLAGS_KNOWN) {
        bincursor_error(c, "case '%s': unknown flag bits 0x%x", nm, *flags & ~GOLDEN_FLAGS_KNOWN);
        return -1;
    }
    k->len = (int)len;
    k->hidden = (int)hidden;
    return 0;
}

static int read_case(bincursor *c, void *p, int index) {
    golden_case *k = p;
    uint32_t name_len, flags;
    if (bincursor_u32(c, &name_len, "case '#%d' name length", index)) return -1;
    if (name_len == 0) {
        bincursor_error(c, "case #%d has an empty name", index);
        return -1;
    }
    if (!(k->name = bincursor_text(c, name_len, "case name")) || read_sizes(c, k, &flags)) return -1;
    const char *nm = k->name;
    for (const golden_case *o = k - index; o < k; o++)
        if (strcmp(o->name, nm) == 0) {
            bincursor_error(c, "case name '%s' appears twice", nm);
            return -1;
        }
    size_t lhs_count, len = (size_t)k->len, hidden = (size_t)k->hidden;
    if (bincursor_mul_size(len, hidden, 1, &lhs_count)) {
        bincursor_error(c, "case '%s': len * hidden overflows", nm);
        return -1;
    }
    if (!(k->input_ids = bincursor_i32s(c, len, "case '%s' input_ids", nm))) return -1;
    if ((flags & GOLDEN_FLAG_TYPES) && !(k->token_type_ids = bincursor_i32s(c, len, "case '%s' token_type_ids", nm)))
        return -1;
    if ((flags & GOLDEN_FLAG_MASK) && !(k->attention_mask = bincursor_i32s(c, len, "case '%s' attention_mask", nm)))
        return -1;
    if (!(k->last_hidden_state = bincursor_f32s(c, lhs_count, "case '%s' last_hidden_state", nm))) return -1;
    if ((flags & GOLDEN_FLAG_POOLER) && !(k->pooler_output = bincursor_f32s(c, hidden, "case '%s' pooler_output", nm)))
        return -1;
    return 0;
}

static const bincursor_format golden_format = {
    .magic = "BGLD", .kind = "a golden file", .version = 1, .min_case_bytes = GOLDEN_MIN_CASE_BYTES,
    .case_size = sizeof(golden_case), .read_case = read_case, .free_case = free_case,
};

int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    bincursor c = bincursor_init(data, len, name, err, cap);
    void *cases;
    int rc = bincursor_frame_read(&c, &golden_format, &g->header, &cases, &g->count);
    g->cases = cases;
    return rc;
}

static int parse(void *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    return golden_load_memory(g, data, len, name, err, cap);
}

int golden_load(golden_file *g, const char *path, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    return bincursor_load(path, g, err, cap, parse);
}

void golden_free(golden_file *g) {
    if (!g) return;
    bincursor_frame_free(&golden_format, g->header, g->cases, g->count);
    memset(g, 0, sizeof *g);
}

const golden_case *golden_find(const golden_file *g, const char *name) {
    for (int i = 0; g && name && i < g->count; i++)
        if (strcmp(g->cases[i].name, name) == 0) return &g->cases[i];
    return NULL;
}

int golden_header_value(const golden_file *g, const char *key, char *out, size_t cap) {
    return g ? bincursor_header_value(g->header, key, out, cap) : -1;
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
