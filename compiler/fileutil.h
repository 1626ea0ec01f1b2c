/*
 * fileutil — whole-file reads and atomic writes.
 *
 * Every output bertc produces (YAML, plan, .npy) is written through
 * file_atomic: a temporary file beside the destination, renamed over it only
 * after the last byte is written and flushed.  A failed or interrupted run
 * therefore never leaves a half-written output behind.
 */
#ifndef BERTC_FILEUTIL_H
#define BERTC_FILEUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "diag.h"

typedef struct file_atomic {
    FILE *f;
    char *path;       /* destination */
    char *tmp_path;   /* temporary file beside it */
} file_atomic;

int file_atomic_open(file_atomic *fa, const char *path, diag *d);
/* ok != 0: flush, close and rename; ok == 0 (or any failure): remove the temp. */
int file_atomic_commit(file_atomic *fa, int ok, diag *d);
void file_atomic_abort(file_atomic *fa);

/* Read a whole file; the buffer is NUL-terminated (not counted in *len). */
char *file_read_all(const char *path, size_t *len, size_t max_len, diag *d);

#endif
