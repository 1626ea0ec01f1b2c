/*
 * fileutil — see fileutil.h.
 *
 * Every file operation of import and compile goes through the few
 * functions here (the reads of file_read_all and file_map, the writes of
 * file_atomic), and each of them through one door, fu_fail, so a test can
 * make the nth operation from now fail — a short read or write, ENOSPC,
 * EIO — and check that every path out of it gives a clear message, leaves
 * no temporary file and frees what it took (tests/ and docs/testing.md).
 * The door is a countdown, not a branch on "are we testing".
 */
#include "fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ failure injection */

static atomic_long fu_countdown;
static atomic_int fu_errno = EIO;

void file_debug_fail(long nth, int err) {
    atomic_store(&fu_errno, err ? err : EIO);
    atomic_store(&fu_countdown, nth);
}

long file_debug_pending(void) { return atomic_load(&fu_countdown); }

/* 1 (errno set) if this operation is the one chosen to fail. */
static int fu_fail(void) {
    long v = atomic_load(&fu_countdown);
    while (v > 0)
        if (atomic_compare_exchange_weak(&fu_countdown, &v, v - 1)) {
            if (v != 1) return 0;
            errno = atomic_load(&fu_errno);
            return 1;
        }
    return 0;
}

/* fwrite that may be told to stop half way. */
static size_t fu_fwrite(const void *data, size_t len, FILE *f) {
    if (fu_fail()) {
        int e = errno;
        size_t half = fwrite(data, 1, len / 2, f);
        errno = e;
        return half;
    }
    return fwrite(data, 1, len, f);
}

/* fread that may be told to come back short. */
static size_t fu_fread(void *buf, size_t len, FILE *f) {
    if (fu_fail()) {
        int e = errno;
        size_t half = fread(buf, 1, len / 2, f);
        errno = e;
        return half;
    }
    return fread(buf, 1, len, f);
}

static diag_code fu_open_code(int e) {
    return e == ENOMEM || e == EIO || e == ENOSPC || e == EMFILE || e == ENFILE ? DIAG_CODE_INTERNAL : DIAG_CODE_INPUT;
}

/* ------------------------------------------------------------ outputs */

int file_atomic_open(file_atomic *fa, const char *path, diag *d) {
    memset(fa, 0, sizeof fa[0]);
    size_t n = strlen(path) + 16;
    fa->path = malloc(strlen(path) + 1);
    fa->tmp_path = malloc(n);
    if (!fa->path || !fa->tmp_path) {
        file_atomic_abort(fa);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", path);
    }
    strcpy(fa->path, path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        file_atomic_abort(fa);
        return diag_set(d, DIAG_CODE_INPUT, "%s: cannot write: it is a directory", path);
    }
    snprintf(fa->tmp_path, n, "%s.tmp.XXXXXX", path);
    int fd = fu_fail() ? -1 : mkstemp(fa->tmp_path);
    if (fd >= 0 && !(fa->f = fdopen(fd, "wb"))) close(fd);
    if (!fa->f) {
        int e = errno;
        if (fd >= 0) unlink(fa->tmp_path);
        free(fa->tmp_path);
        fa->tmp_path = NULL;
        file_atomic_abort(fa);
        return diag_set(d, fu_open_code(e), "%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

void file_atomic_abort(file_atomic *fa) {
    if (fa->f) fclose(fa->f);
    if (fa->tmp_path) unlink(fa->tmp_path);
    free(fa->path);
    free(fa->tmp_path);
    memset(fa, 0, sizeof fa[0]);
}

int file_atomic_write(file_atomic *fa, const void *data, size_t len) {
    return len == 0 || fu_fwrite(data, len, fa->f) == len ? 0 : -1;
}

/* The temporary complete on disk, with the mode a new file would get. */
static int file_atomic_finish(file_atomic *fa, int ok, diag *d) {
    int e = 0;
    if (!ok || ferror(fa->f)) e = errno ? errno : EIO;
    if (!e && (fflush(fa->f) != 0 || (fu_fail() || fsync(fileno(fa->f)) != 0))) e = errno ? errno : EIO;
    mode_t mask = umask(0);
    umask(mask);
    if (!e && fchmod(fileno(fa->f), 0666 & ~mask) != 0) e = errno ? errno : EIO;
    int closed = fclose(fa->f);
    fa->f = NULL;
    if (!e && closed != 0) e = errno ? errno : EIO;
    if (e) return diag_set(d, DIAG_CODE_INTERNAL, "%s: write failed: %s", fa->path, strerror(e));
    fa->finished = 1;
    return 0;
}

static int file_atomic_publish(file_atomic *fa, diag *d) {
    if (fu_fail() || rename(fa->tmp_path, fa->path) != 0) {
        int e = errno;
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: write failed: %s", fa->path, strerror(e));
    }
    free(fa->path);
    free(fa->tmp_path);
    memset(fa, 0, sizeof fa[0]);
    return 0;
}

int file_atomic_commit_all(file_atomic *fas, int n, int ok, diag *d) {
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if (fas[i].tmp_path) rc = file_atomic_finish(&fas[i], ok, d);
    if (!ok && !rc) rc = -1;
    for (int i = 0; i < n && !rc; i++)
        if (fas[i].tmp_path) rc = file_atomic_publish(&fas[i], d);
    for (int i = 0; i < n; i++)
        if (fas[i].tmp_path) file_atomic_abort(&fas[i]);
    return rc ? -1 : 0;
}

int file_atomic_commit(file_atomic *fa, int ok, diag *d) {
    if (!ok) {
        int e = errno ? errno : EIO;
        diag_set(d, DIAG_CODE_INTERNAL, "%s: write failed: %s", fa->path, strerror(e));
        file_atomic_abort(fa);
        return -1;
    }
    return file_atomic_commit_all(fa, 1, 1, d);
}

/* ------------------------------------------------------------ outputs vs inputs */

/* Identity of a path: its device and inode if it exists, else the real
 * path of its folder and its name. */
typedef struct fu_id {
    int exists;
    dev_t dev;
    ino_t ino;
    char where[PATH_MAX + NAME_MAX + 2];
} fu_id;

static void fu_identify(const char *path, fu_id *id) {
    struct stat st;
    memset(id, 0, sizeof *id);
    if (stat(path, &st) == 0) {
        id->exists = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        return;
    }
    char *a = strdup(path), *b = strdup(path), dir[PATH_MAX];
    if (a && b && realpath(dirname(a), dir)) snprintf(id->where, sizeof id->where, "%s/%s", dir, basename(b));
    else snprintf(id->where, sizeof id->where, "%s", path);
    free(a);
    free(b);
}

static int fu_same(const fu_id *a, const fu_id *b) {
    if (a->exists != b->exists) return 0;
    return a->exists ? a->dev == b->dev && a->ino == b->ino : !strcmp(a->where, b->where);
}

int file_outputs_check(const char *const *outputs, const char *const *what, int nout, const char *const *inputs,
                       int nin, diag *d) {
    for (int i = 0; i < nout; i++) {
        if (!outputs[i]) continue;
        fu_id o, x;
        fu_identify(outputs[i], &o);
        for (int k = 0; k < nin; k++) {
            if (!inputs[k]) continue;
            fu_identify(inputs[k], &x);
            if (fu_same(&o, &x))
                return diag_set(d, DIAG_CODE_USAGE, "%s %s is also an input of the command (%s): it would be destroyed",
                                what[i], outputs[i], inputs[k]);
        }
        for (int k = 0; k < i; k++) {
            if (!outputs[k]) continue;
            fu_identify(outputs[k], &x);
            if (fu_same(&o, &x))
                return diag_set(d, DIAG_CODE_USAGE, "%s %s and %s %s name the same file", what[k], outputs[k], what[i],
                                outputs[i]);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ inputs */

char *file_read_all(const char *path, size_t *len, size_t max_len, diag *d) {
    struct stat st;
    FILE *f = fu_fail() ? NULL : fopen(path, "rb");
    if (!f) {
        int e = errno;
        diag_set(d, fu_open_code(e), "%s: cannot open: %s", path, strerror(e));
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        diag_set(d, DIAG_CODE_INPUT, "%s: not a regular file", path);
        return NULL;
    }
    if ((size_t)st.st_size > max_len) {
        fclose(f);
        diag_set(d, DIAG_CODE_INPUT, "%s: %lld bytes is larger than the %zu allowed", path, (long long)st.st_size,
                 max_len);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", path);
        return NULL;
    }
    if (fu_fread(buf, n, f) != n) {
        int e = ferror(f) && errno ? errno : EIO;
        free(buf);
        fclose(f);
        diag_set(d, DIAG_CODE_INTERNAL, "%s: read error (%s; the file may have changed while being read)", path,
                 strerror(e));
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int file_map(const char *path, file_mapping *m, diag *d) {
    memset(m, 0, sizeof *m);
    m->fd = fu_fail() ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (m->fd < 0) {
        int e = errno;
        return diag_set(d, fu_open_code(e), "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    if (fu_fail() || fstat(m->fd, &st) != 0) {
        int e = errno;
        file_unmap(m);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        file_unmap(m);
        return diag_set(d, DIAG_CODE_INPUT, "%s: not a regular file (%s)", path,
                        S_ISDIR(st.st_mode) ? "a directory" : "a special file");
    }
    m->len = (size_t)st.st_size;
    if (m->len == 0) return 0;
    void *p = fu_fail() ? MAP_FAILED : mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, m->fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        size_t len = m->len;
        file_unmap(m);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: cannot map %zu bytes: %s", path, len, strerror(e));
    }
    m->data = p;
    return 0;
}

void file_unmap(file_mapping *m) {
    if (m->data) munmap(m->data, m->len);
    if (m->fd >= 0) close(m->fd);
    memset(m, 0, sizeof *m);
    m->fd = -1;
}
