/*
 * safetensors — read-only access to a .safetensors file by mmap.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON mapping
 * tensor names to {dtype, shape, data_offsets:[begin,end]} (offsets relative
 * to the end of the header), optional "__metadata__", then the data.
 * Everything in the header is checked before any tensor is handed out: the
 * header fits the file, the JSON is well formed, every dtype is known, the
 * byte size implied by dtype × shape equals end − begin, every range lies
 * inside the data section, and no two ranges overlap.  A hostile file gets
 * an error naming the file, the tensor and the offset, never a crash.
 */
#ifndef BERTC_SAFETENSORS_H
#define BERTC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "weights.h"

#define ST_MAX_DIMS WEIGHTS_MAX_DIMS

typedef enum st_dtype {
    ST_DTYPE_F32,
    ST_DTYPE_F16,
    ST_DTYPE_BF16,
    ST_DTYPE_F64,
    ST_DTYPE_I64,
    ST_DTYPE_I32,
    ST_DTYPE_I16,
    ST_DTYPE_I8,
    ST_DTYPE_U8,
    ST_DTYPE_BOOL,
    ST_DTYPE_COUNT,
} st_dtype;

typedef struct st_tensor {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end;      /* relative to the data section */
    const void *data;         /* points into the mapping */
    weights_tensor view;      /* the same tensor through the weights interface */
} st_tensor;

typedef struct st_file {
    char *path;
    int fd;
    void *map;
    size_t map_len;
    size_t header_len;
    size_t count;
    st_tensor *tensors;       /* sorted by name */
} st_file;

int st_file_open(st_file *f, const char *path, diag *d);
/* Same checks on an in-memory image (used by tests and fuzzing). */
int st_file_open_memory(st_file *f, const void *buf, size_t len, const char *name, diag *d);
void st_file_close(st_file *f);

const st_tensor *st_file_find(const st_file *f, const char *name);

const char *st_dtype_name(st_dtype t);   /* "F32", "F16", ... */
size_t st_dtype_size(st_dtype t);
int64_t st_tensor_numel(const st_tensor *t);

/* The file as a weights source (weights.h), valid while f is open. */
void st_file_weights(const st_file *f, weights *w);

#endif
