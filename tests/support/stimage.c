/*
 * stimage — the tests' safetensors writer (see stimage.h).
 *
 * Design.  Tensors are kept as bytes; floats are encoded when they are
 * added, so everything after stimage_add is format-agnostic.  The header
 * is JSON printed field by field in the order the tensors were listed
 * (the reader must not care), data offsets count from the end of the
 * header, and the data may be written in another order with filler bytes
 * between tensors, which is how test_safetensors proves the reader honours
 * data_offsets instead of assuming back-to-back data.
 *
 * The exact encoders decompose the value with frexp and refuse any value
 * whose significand or exponent does not fit: a test that believed its
 * values exact learns otherwise at once, instead of comparing against
 * numbers the file does not hold.
 */
#include "stimage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "half.h"
#include "tbuf.h"

static void *stimage_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "stimage: out of memory\n");
        abort();
    }
    return q;
}

void stimage_init(stimage *s) { memset(s, 0, sizeof *s); }

void stimage_free(stimage *s) {
    for (int i = 0; i < s->count; i++) free(s->t[i].bytes);
    free(s->t);
    memset(s, 0, sizeof *s);
}

stimage_tensor *stimage_add(stimage *s, const char *name, st_dtype dtype, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > ST_MAX_DIMS) {
        fprintf(stderr, "stimage_add: %d dimensions\n", ndim);
        abort();
    }
    if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->t = stimage_xrealloc(s->t, (size_t)s->cap * sizeof *s->t);
    }
    stimage_tensor *t = &s->t[s->count++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        numel *= (size_t)shape[d];
    }
    t->nbytes = numel * st_dtype_size(dtype);
    t->bytes = calloc(t->nbytes ? t->nbytes : 1, 1);
    if (!t->bytes) abort();
    return t;
}

static void stimage_inexact(const char *type, float v) {
    fprintf(stderr, "stimage: %.9g is not exactly representable in %s\n", (double)v, type);
    abort();
}

uint16_t stimage_f16_exact(float v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs((double)v);
    if (a == 0) return sign;
    if (!isfinite(a)) stimage_inexact("float16", v);
    int e;
    double m = frexp(a, &e);          /* a = m * 2^e, m in [0.5, 1) */
    int biased = e - 1 + 15;          /* a = 1.f * 2^(e - 1) */
    if (biased >= 1) {
        double frac = (m * 2.0 - 1.0) * 1024.0;
        if (biased > 30 || frac != floor(frac)) stimage_inexact("float16", v);
        return (uint16_t)(sign | (uint16_t)(biased << 10) | (uint16_t)frac);
    }
    double sub = ldexp(a, 24);        /* a subnormal: sub * 2^-24, sub < 1024 */
    if (sub != floor(sub)) stimage_inexact("float16", v);
    return (uint16_t)(sign | (uint16_t)sub);
}

uint16_t stimage_bf16_exact(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if ((u & 0xffffu) || isnan(v)) stimage_inexact("bfloat16", v);
    return (uint16_t)(u >> 16);
}

float stimage_round(st_dtype dtype, float v) {
    if (dtype == ST_DTYPE_F16) return half_f16_to_f32(half_f32_to_f16(v));
    if (dtype == ST_DTYPE_BF16) return half_bf16_to_f32(half_f32_to_bf16(v));
    return v;
}

stimage_tensor *stimage_add_floats(stimage *s, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                                   const float *v, int round) {
    if (dtype != ST_DTYPE_F32 && dtype != ST_DTYPE_F16 && dtype != ST_DTYPE_BF16) {
        fprintf(stderr, "stimage_add_floats: %s is not a float type\n", st_dtype_name(dtype));
        abort();
    }
    stimage_tensor *t = stimage_add(s, name, dtype, ndim, shape);
    size_t n = t->nbytes / st_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) {
        if (dtype == ST_DTYPE_F32) {
            memcpy(t->bytes + 4 * i, &v[i], 4);   /* little-endian host, like the format */
            continue;
        }
        float x = round ? stimage_round(dtype, v[i]) : v[i];
        uint16_t h = dtype == ST_DTYPE_F16 ? stimage_f16_exact(x) : stimage_bf16_exact(x);
        t->bytes[2 * i] = (unsigned char)(h & 0xff);
        t->bytes[2 * i + 1] = (unsigned char)(h >> 8);
    }
    return t;
}

void stimage_fill_random(stimage *s, unsigned mask) {
    for (int i = 0; i < s->count; i++)
        for (size_t k = 0; k < s->t[i].nbytes; k++) s->t[i].bytes[k] = (unsigned char)(check_rng_u64() & mask);
}

st_dtype stimage_dtype(const char *name) {
    for (int d = 0; d < ST_DTYPE_COUNT; d++)
        if (strcmp(st_dtype_name((st_dtype)d), name) == 0) return (st_dtype)d;
    return ST_DTYPE_COUNT;
}

/* ---- the image ------------------------------------------------------------ */

/* The data section in s->order with each tensor's gap; sets begin/end. */
static void stimage_data(stimage *s, tbuf *data) {
    for (int k = 0; k < s->count; k++) {
        stimage_tensor *t = &s->t[s->order ? s->order[k] : k];
        for (size_t g = 0; g < t->gap; g++) tbuf_put(data, "\xee", 1);
        t->begin = data->n;
        tbuf_put(data, t->bytes, t->nbytes);
        t->end = data->n;
    }
}

unsigned char *stimage_build(stimage *s, size_t *len, size_t *header_len) {
    tbuf data = {0}, h = {0}, img = {0};
    stimage_data(s, &data);
    tbuf_printf(&h, "{");
    const char *sep = "";
    if (s->metadata) {
        tbuf_printf(&h, "\"__metadata__\":%s", s->metadata);
        sep = ",";
    }
    for (int i = 0; i < s->count; i++, sep = ",") {
        const stimage_tensor *t = &s->t[i];
        tbuf_printf(&h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", sep, t->name, st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) tbuf_printf(&h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        tbuf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)t->begin,
                       (unsigned long long)t->end);
    }
    tbuf_printf(&h, "}");
    while (h.n % 8) tbuf_put(&h, " ", 1);
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)h.n >> (8 * k));
    tbuf_put(&img, len8, 8);
    tbuf_put(&img, h.p, h.n);
    tbuf_put(&img, data.p, data.n);
    if (header_len) *header_len = h.n;
    *len = img.n;
    tbuf_free(&h);
    tbuf_free(&data);
    return (unsigned char *)img.p;
}
