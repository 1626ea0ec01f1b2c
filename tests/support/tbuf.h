/*
 * tbuf — a growable byte buffer and formatted strings for the tests.
 *
 * Tests build texts (YAML models, JSON documents, config files, safetensors
 * headers) piece by piece; this is the one buffer they use.  The contents
 * are always NUL-terminated after the last byte written, so a buffer of
 * text can be handed to anything that wants a C string, and a buffer of
 * bytes may hold NULs (n counts them).  Out of memory aborts the test:
 * there is nothing sensible to test after it.
 */
#ifndef BERTC_TEST_TBUF_H
#define BERTC_TEST_TBUF_H

#include <stddef.h>

#define TBUF_PRINTF(f, a) __attribute__((format(printf, f, a)))

typedef struct tbuf {
    char *p;            /* NULL until the first write; then NUL-terminated */
    size_t n, cap;      /* bytes written (without the NUL); allocated */
} tbuf;

/* Appends n bytes (which may include NULs). */
void tbuf_put(tbuf *b, const void *data, size_t n);
/* Appends formatted text of any length. */
void tbuf_printf(tbuf *b, const char *fmt, ...) TBUF_PRINTF(2, 3);
/* Frees the contents and empties b. */
void tbuf_free(tbuf *b);

/* A fresh formatted string (free it). */
char *tbuf_format(const char *fmt, ...) TBUF_PRINTF(1, 2);
/* A fresh copy of text with its first `from` replaced by `to`, or NULL if
 * text does not contain `from`. */
char *tbuf_replace(const char *text, const char *from, const char *to);

#endif
