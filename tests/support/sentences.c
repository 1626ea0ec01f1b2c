/*
 * sentences — reader for the .bsen files in tests/golden/ (see sentences.h).
 *
 * Design.  Same approach as golden.c: the file is read whole and parsed by a
 * cursor that knows how many bytes remain (bincursor.c, shared with golden.c); every read goes through one
 * function that refuses to step past the end and says what it was reading,
 * so a damaged file gives "offset N: truncated reading case #3 embedding"
 * instead of a crash.  Array sizes are computed with overflow checks before
 * they are compared with the remaining bytes, and the case count is bounded
 * by the smallest possible case before anything is allocated, so a hostile
 * length cannot provoke a huge allocation.  Values are assembled from bytes
 * in little-endian order (no dependence on host order or alignment).  Texts
 * and the header must be valid UTF-8 without NUL; token ids must be
 * non-negative; every case must have the same dim.  On any error everything
 * allocated so far is freed and the caller's struct is left zeroed.
 *
 * Format, version 1 (little-endian; written by tools/make_sentence_goldens.py):
 *     "BSEN"  u32 version=1  u32 header_len  header bytes (UTF-8 "key: value" lines)
 *     u32 ncases
 *     per case: u32 text_len, text bytes (UTF-8);
 *               u32 n_ids (>= 1), i32 ids[n_ids];
 *               u32 dim (>= 1), f32 mean_pooled[dim], f32 embedding[dim]
 *     nothing after the last case.
 *
 * The SHA-256 below is a plain FIPS 180-4 implementation, used only by the
 * tests to tie a golden to the checkpoint it was computed from.
 */
#include "sentences.h"

#include "bincursor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest encoded case: text_len (text empty), n_ids, one id, dim, two floats. */
#define SENTENCES_MIN_CASE_BYTES 24u

/* Length of the longest valid UTF-8 prefix of s[0..n) (== n if all valid):
 * shortest forms only, no surrogates, nothing above U+10FFFF. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        size_t k;
        uint32_t cp, min;
        if (b < 0x80) {
            i++;
            continue;
        } else if ((b & 0xe0) == 0xc0) {
            k = 1, cp = b & 0x1f, min = 0x80;
        } else if ((b & 0xf0) == 0xe0) {
            k = 2, cp = b & 0x0f, min = 0x800;
        } else if ((b & 0xf8) == 0xf0) {
            k = 3, cp = b & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (k > n - i - 1) return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return i;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += k + 1;
    }
    return n;
}

/* Copies n bytes of UTF-8 text (no NUL) into a fresh NUL-terminated string. */
static char *copy_text(bincursor *c, size_t n, const char *what, int case_index) {
    size_t start = c->off;
    const unsigned char *q = case_index >= 0 ? bincursor_take(c, n, "case #%d %s", case_index, what)
                                             : bincursor_take(c, n, "%s", what);
    if (!q) return NULL;
    const unsigned char *nul = memchr(q, '\0', n);
    size_t nul_at = nul ? (size_t)(nul - q) : n;
    size_t valid = utf8_valid_prefix(q, n);
    if (nul_at < n || valid < n) {
        const char *why = nul_at <= valid ? "NUL byte" : "invalid UTF-8";
        c->off = start + (nul_at < valid ? nul_at : valid);
        if (case_index >= 0)
            bincursor_error(c, "case #%d %s: %s", case_index, what, why);
        else
            bincursor_error(c, "%s: %s", what, why);
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

static void free_case(sentences_case *k) {
    free(k->text);
    free(k->ids);
    free(k->mean_pooled);
    free(k->embedding);
    memset(k, 0, sizeof *k);
}

static int read_case(bincursor *c, sentences_case *k, int index, int want_dim) {
    uint32_t text_len, n_ids, dim;
    if (bincursor_u32(c, &text_len, "case #%d text length", index)) return -1;
    k->text = copy_text(c, text_len, "text", index);
    if (!k->text) return -1;
    k->text_len = text_len;
    if (bincursor_u32(c, &n_ids, "case #%d id count", index)) return -1;
    if (n_ids == 0 || n_ids > (uint32_t)INT32_MAX) {
        c->off -= 4;
        bincursor_error(c, "case #%d: invalid id count %u", index, n_ids);
        return -1;
    }
    size_t ids_off = c->off;
    k->ids = bincursor_i32s(c, n_ids, "case #%d ids", index);
    if (!k->ids) return -1;
    for (uint32_t i = 0; i < n_ids; i++) {
        if (k->ids[i] < 0) {
            c->off = ids_off + 4 * (size_t)i;
            bincursor_error(c, "case #%d: negative token id %d at position %u", index, (int)k->ids[i], i);
            return -1;
        }
    }
    k->n_ids = (int)n_ids;
    if (bincursor_u32(c, &dim, "case #%d dim", index)) return -1;
    if (dim == 0 || dim > (uint32_t)INT32_MAX || (want_dim > 0 && dim != (uint32_t)want_dim)) {
        c->off -= 4;
        if (want_dim > 0 && dim != 0 && dim <= (uint32_t)INT32_MAX)
            bincursor_error(c, "case #%d: dim %u differs from the first case's %d", index, dim, want_dim);
        else
            bincursor_error(c, "case #%d: invalid dim %u", index, dim);
        return -1;
    }
    k->dim = (int)dim;
    k->mean_pooled = bincursor_f32s(c, dim, "case #%d mean_pooled", index);
    if (!k->mean_pooled) return -1;
    k->embedding = bincursor_f32s(c, dim, "case #%d embedding", index);
    if (!k->embedding) return -1;
    return 0;
}

int sentences_load_memory(sentences_file *s, const void *data, size_t len, const char *name, char *err,
                          size_t cap) {
    memset(s, 0, sizeof *s);
    bincursor c = bincursor_init(data, len, name, err, cap);
    if (bincursor_magic_version(&c, "BSEN", "a sentence-embedding golden", 1)) return -1;
    uint32_t header_len, ncases;
    if (bincursor_u32(&c, &header_len, "header length")) return -1;
    char *header = copy_text(&c, header_len, "header", -1);
    if (!header) return -1;
    if (bincursor_count(&c, &ncases, SENTENCES_MIN_CASE_BYTES, "case count")) {
        free(header);
        return -1;
    }
    sentences_case *cases = calloc(ncases ? ncases : 1, sizeof *cases);
    if (!cases) {
        bincursor_error(&c, "out of memory for %u cases", ncases);
        free(header);
        return -1;
    }
    sentences_file tmp = {.header = header, .count = 0, .cases = cases};
    for (uint32_t i = 0; i < ncases; i++) {
        tmp.count = (int)i + 1;
        if (read_case(&c, &cases[i], (int)i, i ? cases[0].dim : 0)) {
            sentences_free(&tmp);
            return -1;
        }
    }
    if (c.off != c.len) {
        bincursor_error(&c, "%zu unexpected bytes after the last case", c.len - c.off);
        sentences_free(&tmp);
        return -1;
    }
    *s = tmp;
    return 0;
}

int sentences_load(sentences_file *s, const char *path, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    if (err && cap) err[0] = '\0';
    unsigned char *buf;
    size_t size;
    if (bincursor_read_file(path, &buf, &size, err, cap)) return -1;
    int rc = sentences_load_memory(s, buf, size, path, err, cap);
    free(buf);
    return rc;
}

void sentences_free(sentences_file *s) {
    if (!s) return;
    if (s->cases)
        for (int i = 0; i < s->count; i++) free_case(&s->cases[i]);
    free(s->cases);
    free(s->header);
    memset(s, 0, sizeof *s);
}

int sentences_header_value(const sentences_file *s, const char *key, char *out, size_t cap) {
    if (!s || !s->header || !key || !out || cap == 0) return -1;
    size_t klen = strlen(key);
    const char *line = s->header;
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

/* ---------------------------------------------------------------- SHA-256 */

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;
    unsigned char buf[64];
    size_t nbuf;
} sha256_ctx;

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, unsigned n) { return x >> n | x << (32 - n); }

static void sha256_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
        uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256_init(sha256_ctx *x) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(x->h, h0, sizeof h0);
    x->total = 0;
    x->nbuf = 0;
}

static void sha256_update(sha256_ctx *x, const unsigned char *p, size_t n) {
    x->total += n;
    if (x->nbuf) {
        size_t t = 64 - x->nbuf < n ? 64 - x->nbuf : n;
        memcpy(x->buf + x->nbuf, p, t);
        x->nbuf += t, p += t, n -= t;
        if (x->nbuf < 64) return;
        sha256_block(x->h, x->buf);
        x->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64) sha256_block(x->h, p);
    memcpy(x->buf, p, n);
    x->nbuf = n;
}

static void sha256_final(sha256_ctx *x, char hex[65]) {
    uint64_t bits = x->total * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (x->nbuf < 56 ? 56 : 120) - x->nbuf;
    for (int i = 0; i < 8; i++) pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(x, pad, padlen + 8);
    for (int i = 0; i < 32; i++) {
        static const char digits[] = "0123456789abcdef";
        unsigned v = x->h[i / 4] >> (24 - 8 * (i % 4)) & 0xff;
        hex[2 * i] = digits[v >> 4];
        hex[2 * i + 1] = digits[v & 15];
    }
    hex[64] = '\0';
}

void sentences_sha256(const void *data, size_t len, char hex[65]) {
    sha256_ctx x;
    sha256_init(&x);
    sha256_update(&x, data, len);
    sha256_final(&x, hex);
}

int sentences_sha256_file(const char *path, char hex[65], char *err, size_t cap) {
    hex[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && cap) snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = malloc(1 << 20);
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
    sha256_final(&x, hex);
    return 0;
}
