/*
 * npy — see npy.h.  The header is the Python dict literal NumPy expects,
 * padded with spaces so the data starts at a multiple of 64 bytes.  Data is
 * written little-endian, which is what '<f4' promises.
 */
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileutil.h"

int npy_write_f32_to(file_atomic *fa, const float *data, int ndim, const int64_t *shape) {
    char dims[256] = "";
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        char one[32];
        snprintf(one, sizeof one, ndim == 1 ? "%lld," : (i + 1 < ndim ? "%lld, " : "%lld"), (long long)shape[i]);
        strncat(dims, one, sizeof dims - strlen(dims) - 1);
        count *= (size_t)shape[i];
    }
    char header[512];
    int n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    char head[640];
    memcpy(head, pre, 10);
    memcpy(head + 10, header, (size_t)n);
    memset(head + 10 + n, ' ', pad);
    head[10 + (size_t)n + pad] = '\n';
    return file_atomic_write(fa, head, 10 + hlen) == 0 && file_atomic_write(fa, data, count * sizeof(float)) == 0 ? 0 : -1;
}

int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, diag *d) {
    file_atomic fa;
    if (file_atomic_open(&fa, path, d)) return -1;
    return file_atomic_commit(&fa, npy_write_f32_to(&fa, data, ndim, shape) == 0, d);
}
