/*
 * npy — write float32 arrays as NumPy .npy files (format 1.0), atomically:
 * the data goes to a temporary file in the same directory that is renamed
 * over the destination only when every byte is written.
 */
#ifndef BERTC_NPY_H
#define BERTC_NPY_H

#include <stdint.h>

#include "diag.h"
#include "fileutil.h"

int npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, diag *d);
/* The same into an open output (one of several a command commits together);
 * -1 (errno set) on a write failure. */
int npy_write_f32_to(file_atomic *fa, const float *data, int ndim, const int64_t *shape);

#endif
