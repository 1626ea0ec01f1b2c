/*
 * diag — see diag.h.  Messages are truncated at 4 KiB, which is far more than
 * any single diagnostic needs; truncation is marked with "..." so it is never
 * silent.
 */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void diag_init(diag *d) {
    d->code = DIAG_CODE_OK;
    d->text[0] = '\0';
}

static void diag_mark_truncation(diag *d, int n) {
    if (n >= (int)sizeof d->text) memcpy(d->text + sizeof d->text - 4, "...", 4);
}

int diag_set(diag *d, diag_code code, const char *fmt, ...) {
    if (!d) return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->text, sizeof d->text, fmt, ap);
    va_end(ap);
    diag_mark_truncation(d, n);
    d->code = code;
    return -1;
}

int diag_set_at(diag *d, diag_code code, const char *file, const char *src,
                size_t src_len, int line, int col, const char *fmt, ...) {
    if (!d) return -1;
    size_t cap = sizeof d->text, n = 0;
    int k = snprintf(d->text, cap, "%s:%d:%d: ", file ? file : "<input>", line, col);
    if (k > 0) n = (size_t)k < cap ? (size_t)k : cap - 1;
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(d->text + n, cap - n, fmt, ap);
    va_end(ap);
    if (k > 0) n = n + (size_t)k < cap ? n + (size_t)k : cap - 1;
    /* Show the source line with a caret under the column. */
    if (src && line >= 1) {
        size_t pos = 0;
        int l = 1;
        for (; l < line && pos < src_len; pos++)
            if (src[pos] == '\n') l++;
        size_t end = pos;
        while (end < src_len && src[end] != '\n' && src[end] != '\r') end++;
        if (l == line) { /* the line exists (it may be the empty one after the last newline) */
            int len = (int)(end - pos);
            if (len > 200) len = 200;
            k = snprintf(d->text + n, cap - n, "\n    %.*s\n    ", len, src + pos);
            if (k > 0) n = n + (size_t)k < cap ? n + (size_t)k : cap - 1;
            for (int c = 1; c < col && c <= len && n + 2 < cap; c++)
                d->text[n++] = src[pos + (size_t)c - 1] == '\t' ? '\t' : ' ';
            if (n + 2 < cap) { d->text[n++] = '^'; d->text[n] = '\0'; }
        }
    }
    diag_mark_truncation(d, (int)n + 1);
    d->code = code;
    return -1;
}

void diag_prefix(diag *d, const char *fmt, ...) {
    char head[512], tmp[sizeof d->text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    int n = snprintf(tmp, sizeof tmp, "%s%s", head, d->text);
    memcpy(d->text, tmp, sizeof tmp);
    diag_mark_truncation(d, n);
}
