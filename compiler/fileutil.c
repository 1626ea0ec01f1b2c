/* fileutil — see fileutil.h. */
#include "fileutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_atomic_open(file_atomic *fa, const char *path, diag *d) {
    memset(fa, 0, sizeof fa[0]);
    size_t n = strlen(path) + 32;
    fa->path = malloc(strlen(path) + 1);
    fa->tmp_path = malloc(n);
    if (!fa->path || !fa->tmp_path) {
        file_atomic_abort(fa);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", path);
    }
    strcpy(fa->path, path);
    snprintf(fa->tmp_path, n, "%s.tmp.%d", path, (int)getpid());
    fa->f = fopen(fa->tmp_path, "wb");
    if (!fa->f) {
        int e = errno;
        file_atomic_abort(fa);
        return diag_set(d, DIAG_CODE_INPUT, "%s: cannot write: %s", path, strerror(e));
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

int file_atomic_commit(file_atomic *fa, int ok, diag *d) {
    if (!ok || ferror(fa->f)) {
        int e = errno;
        diag_set(d, DIAG_CODE_INPUT, "%s: write failed: %s", fa->path, strerror(e ? e : EIO));
        file_atomic_abort(fa);
        return -1;
    }
    int rc = fflush(fa->f) != 0 || fsync(fileno(fa->f)) != 0;
    rc |= fclose(fa->f) != 0;
    fa->f = NULL;
    if (rc || rename(fa->tmp_path, fa->path) != 0) {
        int e = errno;
        diag_set(d, DIAG_CODE_INPUT, "%s: write failed: %s", fa->path, strerror(e ? e : EIO));
        file_atomic_abort(fa);
        return -1;
    }
    free(fa->path);
    free(fa->tmp_path);
    memset(fa, 0, sizeof fa[0]);
    return 0;
}

char *file_read_all(const char *path, size_t *len, size_t max_len, diag *d) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_set(d, DIAG_CODE_INPUT, "%s: cannot open: %s", path, strerror(errno));
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
    if (fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        diag_set(d, DIAG_CODE_INPUT, "%s: read error", path);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}
