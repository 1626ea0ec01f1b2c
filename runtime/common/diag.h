/*
 * diag — error reporting shared by every compiler component.
 *
 * Library code never prints and never exits: it fills a `diag` and returns a
 * failure code, and `main` decides what to print and which exit status to
 * use.  A diagnostic carries a category (which becomes the process exit
 * status, see docs/cli.md) and one finished message that already names the
 * file and the place in it — `file:line:col` for text inputs, a byte offset
 * or tensor name for binary ones — and, for text inputs, the offending source
 * line with a caret under the column (chibicc's habit: point at the user's
 * text, do not describe it).
 */
#ifndef BERTC_DIAG_H
#define BERTC_DIAG_H

#include <stddef.h>

/* Exit statuses of the bertc command; also the category of a diagnostic. */
typedef enum diag_code {
    DIAG_CODE_OK = 0,
    DIAG_CODE_USAGE = 1,    /* bad command line */
    DIAG_CODE_INPUT = 2,    /* bad input file or value */
    DIAG_CODE_INTERNAL = 3, /* internal error, out of memory, I/O, device */
} diag_code;

typedef struct diag {
    diag_code code;
    char text[4096];
} diag;

void diag_init(diag *d);

/* Record a message; returns -1 so callers can `return diag_set(...)`. */
int diag_set(diag *d, diag_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Record "FILE:LINE:COL: MESSAGE" followed by the source line and a caret.
 * `src` (may be NULL) is the whole text of FILE; line and col are 1-based.
 */
int diag_set_at(diag *d, diag_code code, const char *file, const char *src,
                size_t src_len, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* Prepend context ("while importing X: ") to an existing message. */
void diag_prefix(diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
