/*
 * stimage — the tests' one safetensors writer: a list of tensors laid out
 * as an in-memory .safetensors image (8-byte little-endian header length,
 * the JSON header padded with spaces to a multiple of 8, the data).
 *
 * Every test that needs weights or a damaged checkpoint writes them with
 * this: the graph builder (tgraph.h) for hand-built graphs, test_passes
 * for its YAML models, test_import and test_model_yaml for checkpoints,
 * test_safetensors for the reader's own tests (data in a shuffled order
 * with gaps, a metadata entry).  The header is printed here, not by the
 * library, so the reader is judged against a second writer.
 *
 * Float tensors are encoded by this file's own float16 / bfloat16
 * encoders, which only accept values the type holds exactly: a test that
 * draws exactly representable values then knows, bit for bit, the values
 * the library reads back.  A test that only compares the library with
 * itself may ask for rounding instead (to nearest even, by runtime/common's
 * half.h).
 */
#ifndef BERTC_TEST_STIMAGE_H
#define BERTC_TEST_STIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "safetensors.h"

typedef struct stimage_tensor {
    char name[128];
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    unsigned char *bytes;       /* owned: the data, nbytes long (zeroed when added) */
    size_t nbytes;
    size_t gap;                 /* filler bytes (0xee) before the data; 0 by default */
    uint64_t begin, end;        /* its data_offsets: set by stimage_build */
} stimage_tensor;

typedef struct stimage {
    stimage_tensor *t;
    int count, cap;
    const char *metadata;       /* JSON object written first as "__metadata__"; NULL: none */
    const int *order;           /* data order, count tensor indices; NULL: as listed */
} stimage;

void stimage_init(stimage *s);
void stimage_free(stimage *s);

/* A tensor of `dtype` and shape (ndim <= ST_MAX_DIMS) with zeroed data. */
stimage_tensor *stimage_add(stimage *s, const char *name, st_dtype dtype, int ndim, const int64_t *shape);
/* A float tensor (ST_DTYPE_F32, F16 or BF16) holding the n values v.  With
 * round == 0 every value must be exact in dtype (else the test aborts,
 * naming the value); with round != 0 they are rounded to nearest even. */
stimage_tensor *stimage_add_floats(stimage *s, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                                   const float *v, int round);
/* v rounded to nearest even in a float dtype (by half.h; v itself for F32). */
float stimage_round(st_dtype dtype, float v);
/* Every tensor's data, in list order, filled with check_rng_u64() & mask
 * (small bytes: finite values in every float type for mask 0x3f). */
void stimage_fill_random(stimage *s, unsigned mask);
/* The dtype called `name` ("F32", "I64", ...), or ST_DTYPE_COUNT. */
st_dtype stimage_dtype(const char *name);

/* The image (malloc'd; *len bytes, *header_len the padded JSON's length if
 * not NULL); sets every tensor's begin/end.  Never NULL (aborts when out of
 * memory). */
unsigned char *stimage_build(stimage *s, size_t *len, size_t *header_len);

/* Exact encodings of a value the type holds exactly (the test aborts
 * otherwise): float16 (normal and subnormal), bfloat16 (the top half of
 * the float's bits). */
uint16_t stimage_f16_exact(float v);
uint16_t stimage_bf16_exact(float v);

#endif
