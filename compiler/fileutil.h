/*
 * fileutil — whole-file reads and the way every output is written.
 *
 * An output (YAML, plan, .npy) is written through file_atomic: a
 * temporary file created beside the destination with exclusive creation
 * (mkstemp: a name nobody can predict, and an existing file or symlink is
 * never opened or followed), renamed over the destination only after the
 * last byte is written, flushed and synced.  A failed or interrupted
 * command therefore never leaves a half-written output, and never writes
 * through a link someone planted.
 *
 * A command with several outputs opens all of them before it does its work
 * (a bad path fails first, and costs nothing), checks that no output is one
 * of its inputs or another of its outputs (file_outputs_check: compared by
 * device and inode), and commits them together (file_atomic_commit_all):
 * every temporary is completed before the first rename, so an output
 * appears only if all of them could be written.
 *
 * Errors: a path that cannot be written (no such folder, not a folder,
 * permission, read-only file system) is bad input (DIAG_CODE_INPUT, exit
 * 2); a failure while writing (no space, I/O error) is DIAG_CODE_INTERNAL
 * (exit 3), as docs/cli.md says.
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
    int finished;     /* written, synced and closed; only the rename is left */
} file_atomic;

int file_atomic_open(file_atomic *fa, const char *path, diag *d);
/* Appends len bytes to the temporary; -1 (errno set) on failure. */
int file_atomic_write(file_atomic *fa, const void *data, size_t len);
/* ok != 0: flush, sync, close and rename; ok == 0 (or any failure): remove the temp. */
int file_atomic_commit(file_atomic *fa, int ok, diag *d);
/* The same for n outputs at once: all are completed, then all renamed; on
 * any failure none is renamed and every temporary is removed. */
int file_atomic_commit_all(file_atomic *fas, int n, int ok, diag *d);
void file_atomic_abort(file_atomic *fa);

/*
 * Refuses (DIAG_CODE_USAGE) an output that is one of `inputs` or another of
 * `outputs` (NULL entries are skipped): the same file when both exist
 * (device and inode), the same folder and name otherwise.  `what` names the
 * outputs' options in the message, in order (e.g. "--output").
 */
int file_outputs_check(const char *const *outputs, const char *const *what, int nout, const char *const *inputs,
                       int nin, diag *d);

/* Read a whole file; the buffer is NUL-terminated (not counted in *len). */
char *file_read_all(const char *path, size_t *len, size_t max_len, diag *d);

/* A regular file mapped read-only (data NULL for an empty file). */
typedef struct file_mapping {
    int fd;
    void *data;
    size_t len;
} file_mapping;

int file_map(const char *path, file_mapping *m, diag *d);
void file_unmap(file_mapping *m);

/* Test hook: the nth file operation from now (open, read, write, sync,
 * rename, map) fails with `err` — reads and writes half done; 0 cancels.
 * Not part of any public interface. */
void file_debug_fail(long nth, int err);
/* Operations left before the chosen one fails: 0 once it has failed (or
 * when nothing is armed). */
long file_debug_pending(void);

#endif
