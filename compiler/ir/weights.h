/*
 * weights — the model's tensors as the stages after the front end see them:
 * a name gives a dtype, a shape and the bytes.
 *
 * The graph's WEIGHT nodes name tensors; everything from shape binding on
 * (the reference executor, constant folding, lowering) reads them through
 * this interface only, so none of it knows which file format they came
 * from.  The front end provides the implementation (frontend/safetensors.c
 * fills a `weights` over a mapped .safetensors file); a test can provide a
 * table of tensors in memory (weights_table).  Like a ggml backend, an
 * implementation is a struct with a function pointer: `find` maps a name
 * to a tensor that stays valid as long as the implementation lives.
 *
 * Data is the file's: little-endian, possibly unaligned, in the tensor's
 * own dtype.  Readers convert with weights_tensor_read_f32, which widens
 * float16/bfloat16 exactly (runtime/common/half.h) and narrows float64 with
 * one rounding.
 */
#ifndef BERTC_WEIGHTS_H
#define BERTC_WEIGHTS_H

#include <stdint.h>

#define WEIGHTS_MAX_DIMS 8

typedef enum weights_dtype {
    WEIGHTS_DTYPE_F32,
    WEIGHTS_DTYPE_F16,
    WEIGHTS_DTYPE_BF16,
    WEIGHTS_DTYPE_F64,
    WEIGHTS_DTYPE_OTHER,         /* integers, booleans: present, but not weights bertc can use */
} weights_dtype;

typedef struct weights_tensor {
    const char *name;
    weights_dtype dtype;
    const char *dtype_name;      /* as the source spells it ("F32", "I64"), for messages */
    int ndim;
    int64_t shape[WEIGHTS_MAX_DIMS];
    const void *data;            /* numel elements of dtype */
} weights_tensor;

typedef struct weights {
    const char *path;            /* names the source in messages */
    const void *impl;
    const weights_tensor *(*find)(const void *impl, const char *name);
} weights;

/* The tensor called `name`, or NULL. */
const weights_tensor *weights_find(const weights *w, const char *name);

int64_t weights_tensor_numel(const weights_tensor *t);
/* 1 for F32, F16, BF16 and F64: the dtypes a weight may have. */
int weights_dtype_is_float(weights_dtype t);
/* Elements [first, first + n) as float32 into out (F32/F16/BF16/F64 only). */
void weights_tensor_read_f32(const weights_tensor *t, int64_t first, int64_t n, float *out);
/* Element i as float32; NaN for an index out of range or a non-float dtype. */
float weights_tensor_get_f32(const weights_tensor *t, int64_t i);

/* An in-memory source: `count` tensors searched by name. */
typedef struct weights_table {
    const weights_tensor *tensors;
    int count;
} weights_table;

void weights_table_bind(weights *w, const weights_table *table, const char *path);

#endif
