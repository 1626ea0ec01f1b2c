/*
 * weights — lookups and conversions over any weights source (weights.h).
 * The conversions are the hot loop of lowering (every parameter of the
 * model passes through here once), so each dtype has its own loop over a
 * run of elements instead of a per-element switch.
 */
#include "weights.h"

#include <math.h>
#include <string.h>

#include "half.h"

const weights_tensor *weights_find(const weights *w, const char *name) {
    return w && w->find && name ? w->find(w->impl, name) : NULL;
}

int64_t weights_tensor_numel(const weights_tensor *t) {
    /* A zero dimension first: [2^62, 2^62, 0] is a legal empty tensor, and
     * multiplying left to right would overflow before reaching the 0. */
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] == 0) return 0;
    int64_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= t->shape[k];
    return n;
}

int weights_dtype_is_float(weights_dtype t) {
    return t == WEIGHTS_DTYPE_F32 || t == WEIGHTS_DTYPE_F16 || t == WEIGHTS_DTYPE_BF16 || t == WEIGHTS_DTYPE_F64;
}

void weights_tensor_read_f32(const weights_tensor *t, int64_t first, int64_t n, float *out) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case WEIGHTS_DTYPE_F32:
        memcpy(out, p + (size_t)first * 4, (size_t)n * 4);
        return;
    case WEIGHTS_DTYPE_F16:
    case WEIGHTS_DTYPE_BF16: {
        p += (size_t)first * 2;
        int f16 = t->dtype == WEIGHTS_DTYPE_F16;
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + (size_t)i * 2, 2);
            out[i] = f16 ? half_f16_to_f32(h) : half_bf16_to_f32(h);
        }
        return;
    }
    case WEIGHTS_DTYPE_F64:
        p += (size_t)first * 8;
        for (int64_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, p + (size_t)i * 8, 8);
            out[i] = (float)v;
        }
        return;
    default:
        for (int64_t i = 0; i < n; i++) out[i] = NAN;
    }
}

float weights_tensor_get_f32(const weights_tensor *t, int64_t i) {
    if (!t || i < 0 || i >= weights_tensor_numel(t) || !weights_dtype_is_float(t->dtype)) return NAN;
    float v;
    weights_tensor_read_f32(t, i, 1, &v);
    return v;
}

static const weights_tensor *weights_table_find(const void *impl, const char *name) {
    const weights_table *tb = impl;
    for (int i = 0; i < tb->count; i++)
        if (!strcmp(tb->tensors[i].name, name)) return &tb->tensors[i];
    return NULL;
}

void weights_table_bind(weights *w, const weights_table *table, const char *path) {
    w->path = path;
    w->impl = table;
    w->find = weights_table_find;
}
