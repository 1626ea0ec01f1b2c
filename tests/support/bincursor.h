/*
 * bincursor — the one reader of the binary golden files in tests/golden/:
 * bounds-checked little-endian reading of an in-memory file image, and the
 * frame every format shares, used by golden.c (.bgld and .bsen) and
 * test_tokenizer.c (.btok, the .bin sweep).
 *
 * A bincursor knows the image, how far it has read and where to put an error
 * message.  Every read checks the bytes that remain; the first failure writes
 * "<name>: offset <off>: <message>" into the caller's buffer and makes every
 * later read fail quietly, so a reader can chain reads and test once.  What
 * is being read is described by a printf-style format ("case #%d ids"), only
 * expanded when there is an error.  See bincursor.c for the design.
 */
#ifndef BERTC_TESTS_BINCURSOR_H
#define BERTC_TESTS_BINCURSOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct bincursor {
    const unsigned char *p;     /* the image */
    size_t len, off;            /* its size; bytes consumed so far */
    const char *name;           /* file name for messages */
    char *err;                  /* message buffer, may be NULL */
    size_t cap;                 /* its size, may be 0 */
    int failed;                 /* set by the first error */
} bincursor;

#define BINCURSOR_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* A cursor over data[0..len) (none if data is NULL); `name` (NULL: "<memory>")
 * prefixes messages.  Clears err (if cap > 0). */
bincursor bincursor_init(const void *data, size_t len, const char *name, char *err, size_t cap);

/* Records "<name>: offset <off>: <fmt...>" unless an error is already
 * recorded; the offset is c->off now, so rewind it first to point at the
 * field at fault. */
void bincursor_error(bincursor *c, const char *fmt, ...) BINCURSOR_PRINTF(2, 3);

/* The next n bytes, or NULL after recording
 * "truncated reading <what> (N bytes needed, M left)". */
const unsigned char *bincursor_take(bincursor *c, size_t n, const char *what_fmt, ...) BINCURSOR_PRINTF(3, 4);
/* A u32 into *out: 0, or -1 as bincursor_take. */
int bincursor_u32(bincursor *c, uint32_t *out, const char *what_fmt, ...) BINCURSOR_PRINTF(3, 4);
/* count 4-byte little-endian words (int32 or float32) copied bit for bit
 * into a fresh malloc'd array of int32_t or float (never NULL for count 0);
 * NULL after "<what>: size overflows" (count * 4 does not fit in size_t),
 * as bincursor_take, or "out of memory reading <what>". */
void *bincursor_words(bincursor *c, size_t count, const char *what_fmt, ...) BINCURSOR_PRINTF(3, 4);

/* The 4-byte magic then a u32 version: 0, or -1 after recording
 * 'not <kind> (magic is not "<magic>")' at the magic or "unsupported
 * version V (expected <version>)" at the version. */
int bincursor_magic_version(bincursor *c, const char magic[4], const char *kind, uint32_t version);
/* A u32 item count into *out: 0, or -1 (as bincursor_take, or "<what> N does
 * not fit in the M bytes that follow" at the count) if it is above INT32_MAX
 * or more items of min_item_bytes each than the remaining bytes could hold,
 * so a hostile count cannot provoke a huge allocation. */
int bincursor_count(bincursor *c, uint32_t *out, size_t min_item_bytes, const char *what);

/* The u32 stored little-endian at q (no alignment needed). */
uint32_t bincursor_le32(const unsigned char *q);
/* *n = a * b * elem: 0, or -1 (and *n untouched) if it overflows size_t. */
int bincursor_mul_size(size_t a, size_t b, size_t elem, size_t *n);

/* Reads the whole file at path into a fresh malloc'd buffer (*data, *size;
 * free it).  0, or -1 with "<path>: <why>" in err (if cap > 0). */
int bincursor_read_file(const char *path, unsigned char **data, size_t *size, char *err, size_t cap);

/* ---- text ---------------------------------------------------------------- */

/* The next n bytes as a fresh NUL-terminated string (free it), or NULL as
 * bincursor_take, or after recording "<what>: NUL byte" / "<what>: invalid
 * UTF-8" at the offending byte: every text in a golden file is UTF-8 (shortest
 * forms, no surrogates, nothing above U+10FFFF) without NUL. */
char *bincursor_text(bincursor *c, size_t n, const char *what_fmt, ...) BINCURSOR_PRINTF(3, 4);
/* The value of the line "key: value" of a golden header copied into out
 * (NUL-terminated): 0, or -1 if there is no such line or it does not fit. */
int bincursor_header_value(const char *header, const char *key, char *out, size_t cap);

/* ---- the frame of a golden file ------------------------------------------ */

/*
 * Every golden file opens the same way: 4-byte magic, u32 version, u32
 * header_len, the header text.  .bgld and .bsen then hold a u32 case count
 * and the cases back to back, nothing after the last one; a format
 * describes its cases and bincursor_frame_read does the rest.
 */
typedef struct bincursor_format {
    char magic[4];
    const char *kind;           /* "a golden file": for 'not <kind>' */
    uint32_t version;
    size_t min_case_bytes;      /* bounds the case count (bincursor_count) */
    size_t case_size;           /* sizeof the format's case struct */
    /* Reads case `index` into the zeroed *k (cases [0, index) are read, at
     * k - index): 0, or -1 after an error (what it allocated stays in *k). */
    int (*read_case)(bincursor *c, void *k, int index);
    const size_t *owned;        /* offsets of the case's malloc'd pointers */
    int nowned;
} bincursor_format;

/* The magic, version, header length and header: 0 with a fresh string in
 * *header (free it), or -1. */
int bincursor_open(bincursor *c, const char magic[4], const char *kind, uint32_t version, char **header);
/* The whole frame of f from the start of the image: 0 with the header, the
 * cases (a fresh array of f->case_size elements) and their count, or -1
 * with everything freed and the outputs NULL / 0. */
int bincursor_frame_read(bincursor *c, const bincursor_format *f, char **header, void **cases, int *count);
/* Frees what bincursor_frame_read made (safe on NULL / 0). */
void bincursor_frame_free(const bincursor_format *f, char *header, void *cases, int count);
/* Reads the file at path whole and runs parse(out, image, size, path, err,
 * cap) on it: parse's result, or -1 with "<path>: <why>" if it cannot be read. */
int bincursor_load(const char *path, void *out, char *err, size_t cap,
                   int (*parse)(void *out, const void *data, size_t len, const char *name, char *err, size_t cap));

#endif
