/*
 * tbuf — growable buffer and formatted strings (see tbuf.h).
 *
 * Design.  Capacity doubles past what is needed, so appending byte by byte
 * stays linear; one byte more than the contents is always allocated for
 * the terminating NUL.  Formatting measures first (vsnprintf to NULL) and
 * then writes in place, so no text is ever cut at a fixed-size buffer.
 */
#include "tbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL. */
static void tbuf_reserve(tbuf *b, size_t n) {
    if (b->n + n + 1 <= b->cap) return;
    size_t cap = (b->n + n + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        fprintf(stderr, "tbuf: out of memory\n");
        abort();
    }
    b->p = p;
    b->cap = cap;
}

void tbuf_put(tbuf *b, const void *data, size_t n) {
    tbuf_reserve(b, n);
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void tbuf_vprintf(tbuf *b, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) abort();
    tbuf_reserve(b, (size_t)n);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

void tbuf_printf(tbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void tbuf_free(tbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

char *tbuf_format(const char *fmt, ...) {
    tbuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    tbuf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (!b.p) tbuf_put(&b, "", 0);
    return b.p;
}

char *tbuf_replace(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    if (!at) return NULL;
    return tbuf_format("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}
