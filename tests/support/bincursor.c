/*
 * bincursor — the golden files' reader: a bounds-checked little-endian
 * cursor and the frame the formats share (see bincursor.h).
 *
 * Design.  The file is read whole into memory (bincursor_read_file) and
 * parsed by a cursor that knows how many bytes remain; every read goes
 * through bincursor_take, which refuses to step past the end and records
 * what it was reading, so a damaged file gives "offset N: truncated reading
 * case #3 ids" instead of a crash.  Array sizes are checked for overflow
 * before they are compared with the remaining bytes, and an item count is
 * bounded by the smallest possible item (bincursor_count) before the reader
 * allocates anything, so a hostile length cannot provoke a huge allocation.
 * Values are assembled
 * from bytes in little-endian order, so nothing depends on the host's byte
 * order or alignment.  The first error wins: later reads fail without
 * touching the message.
 *
 * The frame.  .bgld and .bsen differ only in their cases: both open with
 * magic, version and a UTF-8 header, count their cases, and end after the
 * last one.  bincursor_frame_read does all of that once, given the format's
 * case reader, so a check added here (say, on the header) holds for every
 * golden file; test_tokenizer's .btok shares the opening (bincursor_open)
 * and reads its own vocabulary list after it.
 *
 * Each reader words its messages its own way ("case 'name' len" for .bgld,
 * "case #2 dim" for .bsen), so the description of what is read is a
 * printf format, expanded only on error.  A message is written in pieces
 * (prefix, fixed text, the description, fixed text), each continuing where
 * the last stopped and truncating at the buffer's end, which gives exactly
 * what one snprintf of the whole message would.
 */
#include "bincursor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bincursor bincursor_init(const void *data, size_t len, const char *name, char *err, size_t cap) {
    if (err && cap) err[0] = '\0';
    bincursor c = {.p = data, .len = data ? len : 0, .name = name ? name : "<memory>", .err = err, .cap = cap};
    return c;
}

#define MSG_DONE SIZE_MAX

/* Starts a message: marks the cursor failed and writes the "<name>: offset
 * <off>: " prefix.  Returns where the rest goes, or MSG_DONE if nothing more
 * is to be written (an earlier error, no buffer, or the buffer is full). */
static size_t msg_begin(bincursor *c) {
    if (c->failed) return MSG_DONE;
    c->failed = 1;
    if (!c->err || c->cap == 0) return MSG_DONE;
    int n = snprintf(c->err, c->cap, "%s: offset %zu: ", c->name, c->off);
    if (n < 0 || (size_t)n >= c->cap) return MSG_DONE;
    return (size_t)n;
}

/* Appends to the message at *pos; *pos becomes MSG_DONE once it is full. */
static void msg_vappend(bincursor *c, size_t *pos, const char *fmt, va_list ap) {
    if (*pos == MSG_DONE) return;
    size_t at = *pos;
    int n = vsnprintf(c->err + at, c->cap - at, fmt, ap);
    *pos = n < 0 || (size_t)n >= c->cap - at ? MSG_DONE : at + (size_t)n;
}

static void msg_append(bincursor *c, size_t *pos, const char *fmt, ...) BINCURSOR_PRINTF(3, 4);

static void msg_append(bincursor *c, size_t *pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    msg_vappend(c, pos, fmt, ap);
    va_end(ap);
}

/* Records before + <what_fmt expanded with ap> + after. */
static void fail_what(bincursor *c, const char *before, const char *what_fmt, va_list ap, const char *after) {
    size_t pos = msg_begin(c);
    msg_append(c, &pos, "%s", before);
    va_list aq;
    va_copy(aq, ap);
    msg_vappend(c, &pos, what_fmt, aq);
    va_end(aq);
    msg_append(c, &pos, "%s", after);
}

void bincursor_error(bincursor *c, const char *fmt, ...) {
    size_t pos = msg_begin(c);
    va_list ap;
    va_start(ap, fmt);
    msg_vappend(c, &pos, fmt, ap);
    va_end(ap);
}

static const unsigned char *vtake(bincursor *c, size_t n, const char *what_fmt, va_list ap) {
    if (c->failed) return NULL;
    if (n > c->len - c->off) {
        char tail[64];
        snprintf(tail, sizeof tail, " (%zu bytes needed, %zu left)", n, c->len - c->off);
        fail_what(c, "truncated reading ", what_fmt, ap, tail);
        return NULL;
    }
    const unsigned char *q = c->p + c->off;
    c->off += n;
    return q;
}

static const unsigned char *vtake_array(bincursor *c, size_t count, const char *what_fmt, va_list ap) {
    size_t bytes;
    if (bincursor_mul_size(count, 1, 4, &bytes)) {
        fail_what(c, "", what_fmt, ap, ": size overflows");
        return NULL;
    }
    return vtake(c, bytes, what_fmt, ap);
}

const unsigned char *bincursor_take(bincursor *c, size_t n, const char *what_fmt, ...) {
    va_list ap;
    va_start(ap, what_fmt);
    const unsigned char *q = vtake(c, n, what_fmt, ap);
    va_end(ap);
    return q;
}

int bincursor_u32(bincursor *c, uint32_t *out, const char *what_fmt, ...) {
    va_list ap;
    va_start(ap, what_fmt);
    const unsigned char *q = vtake(c, 4, what_fmt, ap);
    va_end(ap);
    if (!q) return -1;
    *out = bincursor_le32(q);
    return 0;
}

/* count 4-byte words copied bit for bit into a fresh malloc'd array of
 * 4-byte elements (int32_t or float); 1 byte for count 0. */
static void *vwords(bincursor *c, size_t count, const char *what_fmt, va_list ap) {
    const unsigned char *q = vtake_array(c, count, what_fmt, ap);
    if (!q) return NULL;
    unsigned char *out = malloc(count ? count * 4 : 1);
    if (!out) {
        fail_what(c, "out of memory reading ", what_fmt, ap, "");
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        uint32_t u = bincursor_le32(q + 4 * i);
        memcpy(out + 4 * i, &u, 4);
    }
    return out;
}

void *bincursor_words(bincursor *c, size_t count, const char *what_fmt, ...) {
    va_list ap;
    va_start(ap, what_fmt);
    void *out = vwords(c, count, what_fmt, ap);
    va_end(ap);
    return out;
}

int bincursor_magic_version(bincursor *c, const char magic[4], const char *kind, uint32_t version) {
    const unsigned char *q = bincursor_take(c, 4, "magic");
    if (!q) return -1;
    if (memcmp(q, magic, 4) != 0) {
        c->off -= 4;
        bincursor_error(c, "not %s (magic is not \"%.4s\")", kind, magic);
        return -1;
    }
    uint32_t v;
    if (bincursor_u32(c, &v, "version")) return -1;
    if (v != version) {
        c->off -= 4;
        bincursor_error(c, "unsupported version %u (expected %u)", v, version);
        return -1;
    }
    return 0;
}

int bincursor_count(bincursor *c, uint32_t *out, size_t min_item_bytes, const char *what) {
    uint32_t n;
    if (bincursor_u32(c, &n, "%s", what)) return -1;
    size_t rest = c->len - c->off;
    if (n > (uint32_t)INT32_MAX || n > rest / min_item_bytes) {
        c->off -= 4;
        bincursor_error(c, "%s %u does not fit in the %zu bytes that follow", what, n, rest);
        return -1;
    }
    *out = n;
    return 0;
}

uint32_t bincursor_le32(const unsigned char *q) {
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

int bincursor_mul_size(size_t a, size_t b, size_t elem, size_t *n) {
    if (a != 0 && b > SIZE_MAX / a) return -1;
    size_t ab = a * b;
    if (elem != 0 && ab > SIZE_MAX / elem) return -1;
    *n = ab * elem;
    return 0;
}

int bincursor_read_file(const char *path, unsigned char **data, size_t *size_out, char *err, size_t cap) {
    *data = NULL;
    *size_out = 0;
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
    *data = buf;
    *size_out = size;
    buf = NULL;
    rc = 0;
done:
    free(buf);
    fclose(f);
    return rc;
}

/* ---------------------------------------------------------------- text */

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

char *bincursor_text(bincursor *c, size_t n, const char *what_fmt, ...) {
    size_t start = c->off;
    va_list ap;
    va_start(ap, what_fmt);
    const unsigned char *q = vtake(c, n, what_fmt, ap);
    char *s = NULL;
    if (q) {
        const unsigned char *nul = memchr(q, '\0', n);
        size_t nul_at = nul ? (size_t)(nul - q) : n, valid = utf8_valid_prefix(q, n);
        if (nul_at < n || valid < n) {
            c->off = start + (nul_at < valid ? nul_at : valid);
            fail_what(c, "", what_fmt, ap, nul_at <= valid ? ": NUL byte" : ": invalid UTF-8");
        } else if (!(s = malloc(n + 1))) {
            fail_what(c, "out of memory reading ", what_fmt, ap, "");
        } else {
            memcpy(s, q, n);
            s[n] = '\0';
        }
    }
    va_end(ap);
    return s;
}

int bincursor_header_value(const char *header, const char *key, char *out, size_t cap) {
    if (!header || !key || !out || cap == 0) return -1;
    size_t klen = strlen(key);
    const char *line = header;
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

/* ---------------------------------------------------------------- the frame */

int bincursor_open(bincursor *c, const char magic[4], const char *kind, uint32_t version, char **header) {
    uint32_t header_len;
    *header = NULL;
    if (bincursor_magic_version(c, magic, kind, version) || bincursor_u32(c, &header_len, "header length"))
        return -1;
    *header = bincursor_text(c, header_len, "header");
    return *header ? 0 : -1;
}

void bincursor_frame_free(const bincursor_format *f, char *header, void *cases, int count) {
    for (int i = 0; cases && i < count; i++)
        for (int k = 0; k < f->nowned; k++) {
            void *member;
            memcpy(&member, (char *)cases + (size_t)i * f->case_size + f->owned[k], sizeof member);
            free(member);
        }
    free(cases);
    free(header);
}

int bincursor_frame_read(bincursor *c, const bincursor_format *f, char **header, void **cases, int *count) {
    *cases = NULL;
    *count = 0;
    uint32_t n;
    if (bincursor_open(c, f->magic, f->kind, f->version, header)) return -1;
    if (bincursor_count(c, &n, f->min_case_bytes, "case count")) goto fail;
    if (!(*cases = calloc(n ? n : 1, f->case_size))) {
        bincursor_error(c, "out of memory for %u cases", n);
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        *count = (int)i + 1;   /* the case being read is freed with the others */
        if (f->read_case(c, (char *)*cases + (size_t)i * f->case_size, (int)i)) goto fail;
    }
    if (c->off == c->len) return 0;
    bincursor_error(c, "%zu unexpected bytes after the last case", c->len - c->off);
fail:
    bincursor_frame_free(f, *header, *cases, *count);
    *header = NULL;
    *cases = NULL;
    *count = 0;
    return -1;
}

int bincursor_load(const char *path, void *out, char *err, size_t cap,
                   int (*parse)(void *out, const void *data, size_t len, const char *name, char *err, size_t cap)) {
    if (err && cap) err[0] = '\0';
    unsigned char *buf;
    size_t size;
    if (bincursor_read_file(path, &buf, &size, err, cap)) return -1;
    int rc = parse(out, buf, size, path, err, cap);
    free(buf);
    return rc;
}
