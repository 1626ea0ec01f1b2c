/*
 * kernel_ln — the two LayerNorm kernels: embed_ln (gathers + LayerNorm)
 * and add_ln (bias + residual + LayerNorm).  They share a geometry, since
 * both are one read-mostly pass over rows of `hidden` elements.
 *
 * Geometry.  A row of up to 1024 elements belongs to one warp: at most 32
 * floats per lane in registers, reductions by shuffles, no shared memory
 * and no block barrier; four rows (warps) share a block of 128 threads, a
 * size every SM schedules well.  A longer row gets a block of its own,
 * sized so each thread holds about four vectors (never more than 64
 * floats).  The vector width is the largest power of two of elements, at
 * most 16 bytes, dividing the hidden size — so 768 float16 moves in
 * 16-byte pieces, 100 float32 in 16-byte pieces, 97 anything in single
 * elements — and every row and gamma/beta start stays aligned to it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

typedef struct kernel_ln_geom {
    int vec;                       /* elements per vector */
    int threads;                   /* threads per row: 32 (a warp) or a block */
    int rows;                      /* rows per block */
} kernel_ln_geom;

#define KERNEL_LN_MAX_HIDDEN 32768
#define KERNEL_LN_MAX_FLOATS 64 /* row values per thread */

static const char *kernel_ln_index_name(kernel_index i) {
    switch (i) {
    case KERNEL_INDEX_INPUT_IDS: return "input_ids";
    case KERNEL_INDEX_TOKEN_TYPES: return "token_type_ids";
    case KERNEL_INDEX_POSITION: return "position";
    default: return NULL;
    }
}

static char kernel_ln_index_letter(kernel_index i) {
    return i == KERNEL_INDEX_INPUT_IDS ? 'i' : i == KERNEL_INDEX_TOKEN_TYPES ? 't' : 'p';
}

/* The kind's name in messages: the file serves two kinds. */
static const char *kernel_ln_name(const kernel_spec *s) {
    return s->kind == KERNEL_KIND_EMBED_LN ? "embed_ln" : "add_ln";
}

static int kernel_ln_check(const kernel_spec *s, diag *d) {
    const char *k = kernel_ln_name(s);
    if (s->hidden < 1 || s->hidden > KERNEL_LN_MAX_HIDDEN)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: hidden size %d is not supported (1..%d)", k, s->hidden,
                        KERNEL_LN_MAX_HIDDEN);
    if (!isfinite(s->eps) || s->eps < 0.0f)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: LayerNorm eps %g must be finite and >= 0", k, (double)s->eps);
    if (s->kind == KERNEL_KIND_EMBED_LN) {
        if (s->ngathers < 1 || s->ngathers > KERNEL_MAX_GATHERS)
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: %d gathers (1..%d)", s->ngathers,
                            KERNEL_MAX_GATHERS);
        for (int g = 0; g < s->ngathers; g++) {
            if (!kernel_ln_index_name(s->gather_index[g]))
                return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: gather %d has an unknown index kind %d", g,
                                (int)s->gather_index[g]);
            if (s->table_rows[g] < 1)
                return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: gather %d table has %d rows", g,
                                s->table_rows[g]);
        }
    }
    return 0;
}

static int kernel_ln_geom_of(const kernel_spec *s, kernel_ln_geom *g, diag *d) {
    int h = s->hidden;
    g->vec = kernel_vec_elems(kernel_dtype_size(s->dtype), &h, 1);
    int nv = h / g->vec;
    if (h <= 1024) {
        g->threads = 32;
        g->rows = 4;
    } else {
        int t = (kernel_ceil_div(nv, 4) + 31) / 32 * 32;
        g->threads = t < 64 ? 64 : t > 1024 ? 1024 : t;
        g->rows = 1;
    }
    int floats = kernel_ceil_div(nv, g->threads) * g->vec;
    if (floats > KERNEL_LN_MAX_FLOATS)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: hidden size %d needs %d values per thread (at most %d)",
                        kernel_ln_name(s), h, floats, KERNEL_LN_MAX_FLOATS);
    return 0;
}

static int kernel_ln_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    kernel_ln_geom g;
    if (kernel_ln_geom_of(s, &g, d)) return -1;
    dims->grid[0] = (unsigned)kernel_ceil_div(s->bucket, g.rows);
    dims->grid[1] = dims->grid[2] = 1;
    dims->block[0] = (unsigned)(g.threads * g.rows);
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = 0;
    return 0;
}

static int kernel_ln_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    uint32_t eps = kernel_float_bits(s->eps);
    if (s->kind != KERNEL_KIND_EMBED_LN)
        return kernel_entry_printf(buf, cap, "add_ln", d, "bertc_add_ln_%s_s%d_h%d_e%08x_b%dr%d",
                                   kernel_dtype_tag(s->dtype), s->bucket, s->hidden, eps, s->has_bias ? 1 : 0,
                                   s->has_residual ? 1 : 0);
    if (kernel_entry_printf(buf, cap, "embed_ln", d, "bertc_embed_ln_%s_s%d_h%d_e%08x", kernel_dtype_tag(s->dtype),
                            s->bucket, s->hidden, eps))
        return -1;
    for (int i = 0; i < s->ngathers; i++) {
        size_t n = strlen(buf);
        if (kernel_entry_printf(buf + n, cap - n, "embed_ln", d, "_%c%d", kernel_ln_index_letter(s->gather_index[i]),
                                s->table_rows[i]))
            return -1;
    }
    return 0;
}

static int kernel_ln_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_ln_geom g;
    if (kernel_ln_geom_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t eps = kernel_float_bits(s->eps);
    int embed = s->kind == KERNEL_KIND_EMBED_LN;

    /* first line: the template and every parameter */
    kernel_text_printf(t, "// bertc template=%s dtype=%s bucket=%d hidden=%d eps=%.9g", kernel_ln_name(s),
                       plan_dtype_name(s->dtype), s->bucket, s->hidden, (double)s->eps);
    if (embed) {
        kernel_text_printf(t, " ngathers=%d", s->ngathers);
        for (int i = 0; i < s->ngathers; i++)
            kernel_text_printf(t, " gather_index%d=%s table_rows%d=%d", i, kernel_ln_index_name(s->gather_index[i]),
                               i, s->table_rows[i]);
    } else {
        kernel_text_printf(t, " has_bias=%d has_residual=%d", s->has_bias ? 1 : 0, s->has_residual ? 1 : 0);
    }
    kernel_text_printf(t, "\n");
    if (g.threads == 32)
        kernel_text_printf(t, "// geometry: a warp per row, %d rows per block, %d-element vectors\n", g.rows, g.vec);
    else
        kernel_text_printf(t, "// geometry: a block of %d threads per row, %d-element vectors\n", g.threads, g.vec);

    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, embed ? "embed_ln.cuh" : "add_ln.cuh", d)) return -1;

    int threads = g.threads * g.rows;
    if (embed) {
        int idx[KERNEL_MAX_GATHERS], rows[KERNEL_MAX_GATHERS];
        for (int i = 0; i < KERNEL_MAX_GATHERS; i++) {
            idx[i] = i < s->ngathers ? (int)s->gather_index[i] : 0;
            rows[i] = i < s->ngathers ? s->table_rows[i] : 1;
        }
        kernel_text_printf(t,
                           "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, "
                           "const %s *table0, const %s *table1, const %s *table2, const %s *gamma, const %s *beta) {\n"
                           "    bertc_embed_ln<%s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d>(out, req, table0, "
                           "table1, table2, gamma, beta, __int_as_float((int)0x%08xu));\n"
                           "}\n"
                           "BERTC_KERNEL_EXPORT(%s)\n",
                           threads, kernel_min_blocks(threads), name, ty, ty, ty, ty, ty, ty, ty, s->bucket, s->hidden, g.vec, g.threads, g.rows,
                           s->ngathers, idx[0], rows[0], idx[1], rows[1], idx[2], rows[2], eps, name);
    } else {
        kernel_text_printf(t,
                           "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, "
                           "const %s *x, const %s *bias, const %s *residual, const %s *gamma, const %s *beta) {\n"
                           "    bertc_add_ln<%s, %d, %d, %d, %d, %d, %s, %s>(out, req, x, bias, residual, gamma, beta, "
                           "__int_as_float((int)0x%08xu));\n"
                           "}\n"
                           "BERTC_KERNEL_EXPORT(%s)\n",
                           threads, kernel_min_blocks(threads), name, ty, ty, ty, ty, ty, ty, ty, s->bucket, s->hidden, g.vec, g.threads, g.rows,
                           s->has_bias ? "true" : "false", s->has_residual ? "true" : "false", eps, name);
    }
    return 0;
}

const kernel_kind_desc kernel_embed_ln_desc = {
    .kind = KERNEL_KIND_EMBED_LN,
    .name = "embed_ln",
    .nargs = 7,
    .check = kernel_ln_check,
    .dims = kernel_ln_dims,
    .entry = kernel_ln_entry,
    .source = kernel_ln_source,
};

const kernel_kind_desc kernel_add_ln_desc = {
    .kind = KERNEL_KIND_ADD_LN,
    .name = "add_ln",
    .nargs = 7,
    .check = kernel_ln_check,
    .dims = kernel_ln_dims,
    .entry = kernel_ln_entry,
    .source = kernel_ln_source,
};
