/*
 * kernel_pool — the POOL kernel: a sentence-transformers head (cls or mean
 * pooling, optionally L2-normalised) as one launch of one block.
 *
 * Why one block.  The result is a single row of `hidden` values, and the
 * normalisation needs every one of them, so one block owns the whole
 * output: a grid of several blocks would need a second launch (or atomics
 * and a grid-wide barrier) to meet for the norm.  The block is made as
 * wide as the reading allows instead: CT column threads cover a row in
 * vectors (at most 256 of them side by side), and the rest of a 256-thread
 * block becomes RG row groups that read different rows at the same time
 * (never more groups than the bucket has rows; a cls pool reads one row,
 * so it has one group).  Partial sums meet in static shared memory
 * (RG * CT * VEC floats, at most 8 KiB), so no dynamic shared memory and
 * no opt-in.
 *
 * Vector width: the largest power of two of elements, at most 16 bytes,
 * dividing the hidden size, as the LayerNorm kernels choose it; a thread
 * keeps ITEMS * VEC floats in registers, at most 64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

typedef struct kernel_pool_geom {
    int vec;                       /* elements per vector */
    int ct;                        /* column threads: vectors of a row read side by side */
    int rg;                        /* row groups: rows read at once (1 for cls) */
    int items;                     /* vectors per column thread */
    int threads;                   /* block size, a multiple of 32 */
} kernel_pool_geom;

#define KERNEL_POOL_THREADS 256
#define KERNEL_POOL_MAX_FLOATS 64 /* values per thread */
#define KERNEL_POOL_MAX_HIDDEN 16384

static int kernel_pool_check(const kernel_spec *s, diag *d) {
    if (s->hidden < 1 || s->hidden > KERNEL_POOL_MAX_HIDDEN)
        return diag_set(d, DIAG_CODE_INPUT, "kernel pool: hidden size %d is not supported (1..%d)", s->hidden,
                        KERNEL_POOL_MAX_HIDDEN);
    if ((unsigned)s->pool_mode >= PLAN_POOL_COUNT)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel pool: unknown pooling mode %d", (int)s->pool_mode);
    if (s->normalize != 0 && s->normalize != 1)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel pool: normalize is %d (expected 0 or 1)", s->normalize);
    return 0;
}

static int kernel_pool_geom_of(const kernel_spec *s, kernel_pool_geom *g, diag *d) {
    int h = s->hidden;
    g->vec = kernel_vec_elems(kernel_dtype_size(s->dtype), &h, 1);
    int nv = h / g->vec;
    g->ct = nv < KERNEL_POOL_THREADS ? nv : KERNEL_POOL_THREADS;
    g->items = kernel_ceil_div(nv, g->ct);
    g->rg = 1;
    if (s->pool_mode == PLAN_POOL_MEAN) {
        g->rg = KERNEL_POOL_THREADS / g->ct;
        if (g->rg > s->bucket) g->rg = s->bucket;
    }
    g->threads = (g->ct * g->rg + 31) / 32 * 32;
    if (g->items * g->vec > KERNEL_POOL_MAX_FLOATS)
        return diag_set(d, DIAG_CODE_INPUT, "kernel pool: hidden size %d needs %d values per thread (at most %d)", h,
                        g->items * g->vec, KERNEL_POOL_MAX_FLOATS);
    return 0;
}

static int kernel_pool_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    kernel_pool_geom g;
    if (kernel_pool_geom_of(s, &g, d)) return -1;
    dims->grid[0] = dims->grid[1] = dims->grid[2] = 1;
    dims->block[0] = (unsigned)g.threads;
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = 0;
    return 0;
}

static int kernel_pool_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    return kernel_entry_printf(buf, cap, "pool", d, "bertc_pool_%s_s%d_h%d_%s%s", kernel_dtype_tag(s->dtype), s->bucket,
                               s->hidden, plan_pool_mode_name(s->pool_mode), s->normalize ? "_l2" : "");
}

static int kernel_pool_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_pool_geom g;
    if (kernel_pool_geom_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    const char *mode = plan_pool_mode_name(s->pool_mode);

    /* first line: the template and every parameter */
    kernel_text_printf(t, "// bertc template=pool dtype=%s bucket=%d hidden=%d mode=%s normalize=%d\n",
                       plan_dtype_name(s->dtype), s->bucket, s->hidden, mode, s->normalize ? 1 : 0);
    kernel_text_printf(t, "// geometry: one block of %d threads, %d row groups of %d column threads, %d x %d-element vectors\n",
                       g.threads, g.rg, g.ct, g.items, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "pool.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, const %s *x) {\n"
                       "    bertc_pool<%s, %d, %d, %d, %d, %d, %d, %d, %s, %s>(out, req, x);\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       g.threads, kernel_min_blocks(g.threads), name, ty, ty, ty, s->bucket, s->hidden, g.vec, g.ct, g.rg,
                       g.items, g.threads, s->pool_mode == PLAN_POOL_MEAN ? "BERTC_POOL_MEAN" : "BERTC_POOL_CLS",
                       s->normalize ? "true" : "false", name);
    return 0;
}

const kernel_kind_desc kernel_pool_desc = {
    .kind = KERNEL_KIND_POOL,
    .name = "pool",
    .nargs = 3,
    .check = kernel_pool_check,
    .dims = kernel_pool_dims,
    .entry = kernel_pool_entry,
    .source = kernel_pool_source,
};
