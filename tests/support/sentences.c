/*
 * sentences — reader for the .bsen files in tests/golden/ (see sentences.h).
 *
 * Design.  Same reader as golden.c: bincursor.c owns the frame (magic,
 * version, UTF-8 header, a case count bounded by the smallest possible case
 * before anything is allocated, nothing after the last case) and a cursor
 * that refuses to step past the end and says what it was reading, so a
 * damaged file gives "offset N: truncated reading case #3 embedding"
 * instead of a crash.  This file reads one case: texts must be valid UTF-8
 * without NUL; token ids must be non-negative; every case must have the
 * same dim.  On any error everything allocated so far is freed and the
 * caller's struct is left zeroed.
 *
 * Format, version 1 (little-endian; written by tools/make_sentence_goldens.py):
 *     "BSEN"  u32 version=1  u32 header_len  header bytes (UTF-8 "key: value" lines)
 *     u32 ncases
 *     per case: u32 text_len, text bytes (UTF-8);
 *               u32 n_ids (>= 1), i32 ids[n_ids];
 *               u32 dim (>= 1), f32 mean_pooled[dim], f32 embedding[dim]
 *     nothing after the last case.
 *
 * The SHA-256 that ties a golden to the checkpoint it was computed from is
 * bertc's own (runtime/common/sha256.h, one implementation); the file
 * helper streams a checkpoint of any size through it.
 */
#include "sentences.h"

#include "bincursor.h"
#include "sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest encoded case: text_len (text empty), n_ids, one id, dim, two floats. */
#define SENTENCES_MIN_CASE_BYTES 24u

static void free_case(void *p) {
    sentences_case *k = p;
    free(k->text);
    free(k->ids);
    free(k->mean_pooled);
    free(k->embedding);
    memset(k, 0, sizeof *k);
}

/* n_ids, then the ids, each non-negative. */
static int read_ids(bincursor *c, sentences_case *k, int index) {
    uint32_t n_ids;
    if (bincursor_u32(c, &n_ids, "case #%d id count", index)) return -1;
    if (n_ids == 0 || n_ids > (uint32_t)INT32_MAX) {
        c->off -= 4;
        bincursor_error(c, "case #%d: invalid id count %u", index, n_ids);
        return -1;
    }
    size_t ids_off = c->off;
    if (!(k->ids = bincursor_i32s(c, n_ids, "case #%d ids", index))) return -1;
    for (uint32_t i = 0; i < n_ids; i++) {
        if (k->ids[i] < 0) {
            c->off = ids_off + 4 * (size_t)i;
            bincursor_error(c, "case #%d: negative token id %d at position %u", index, (int)k->ids[i], i);
            return -1;
        }
    }
    k->n_ids = (int)n_ids;
    return 0;
}

static int read_case(bincursor *c, void *p, int index) {
    sentences_case *k = p;
    int want_dim = index ? (k - index)->dim : 0;   /* every case has the first case's dim */
    uint32_t text_len, dim;
    if (bincursor_u32(c, &text_len, "case #%d text length", index)) return -1;
    if (!(k->text = bincursor_text(c, text_len, "case #%d text", index))) return -1;
    k->text_len = text_len;
    if (read_ids(c, k, index) || bincursor_u32(c, &dim, "case #%d dim", index)) return -1;
    if (dim == 0 || dim > (uint32_t)INT32_MAX || (want_dim > 0 && dim != (uint32_t)want_dim)) {
        c->off -= 4;
        if (want_dim > 0 && dim != 0 && dim <= (uint32_t)INT32_MAX)
            bincursor_error(c, "case #%d: dim %u differs from the first case's %d", index, dim, want_dim);
        else
            bincursor_error(c, "case #%d: invalid dim %u", index, dim);
        return -1;
    }
    k->dim = (int)dim;
    if (!(k->mean_pooled = bincursor_f32s(c, dim, "case #%d mean_pooled", index))) return -1;
    if (!(k->embedding = bincursor_f32s(c, dim, "case #%d embedding", index))) return -1;
    return 0;
}

static const bincursor_format sentences_format = {
    .magic = "BSEN", .kind = "a sentence-embedding golden", .version = 1,
    .min_case_bytes = SENTENCES_MIN_CASE_BYTES, .case_size = sizeof(sentences_case), .read_case = read_case,
    .free_case = free_case,
};

int sentences_load_memory(sentences_file *s, const void *data, size_t len, const char *name, char *err,
                          size_t cap) {
    bincursor c = bincursor_init(data, len, name, err, cap);
    void *cases;
    int rc = bincursor_frame_read(&c, &sentences_format, &s->header, &cases, &s->count);
    s->cases = cases;
    return rc;
}

static int parse(void *s, const void *data, size_t len, const char *name, char *err, size_t cap) {
    return sentences_load_memory(s, data, len, name, err, cap);
}

int sentences_load(sentences_file *s, const char *path, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    return bincursor_load(path, s, err, cap, parse);
}

void sentences_free(sentences_file *s) {
    if (!s) return;
    bincursor_frame_free(&sentences_format, s->header, s->cases, s->count);
    memset(s, 0, sizeof *s);
}

int sentences_header_value(const sentences_file *s, const char *key, char *out, size_t cap) {
    return s ? bincursor_header_value(s->header, key, out, cap) : -1;
}

/* ---------------------------------------------------------------- SHA-256 */

int sentences_sha256_file(const char *path, char hex[65], char *err, size_t cap) {
    hex[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && cap) snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = malloc(1 << 20), digest[SHA256_DIGEST_SIZE];
    if (!buf) {
        if (err && cap) snprintf(err, cap, "%s: out of memory", path);
        fclose(f);
        return -1;
    }
    sha256_ctx x;
    sha256_init(&x);
    size_t n;
    while ((n = fread(buf, 1, 1 << 20, f)) > 0) sha256_update(&x, buf, n);
    int bad = ferror(f);
    free(buf);
    fclose(f);
    if (bad) {
        if (err && cap) snprintf(err, cap, "%s: read error", path);
        return -1;
    }
    sha256_final(&x, digest);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}
