/*
 * kernel_pool — the text of pool.cuh's instantiations: a
 * sentence-transformers head (cls or mean pooling, optionally
 * L2-normalised) as one launch of one block.
 *
 * Why one block: the result is a single row of `hidden` values, and the
 * normalisation needs every one of them, so one block owns the whole
 * output; a grid of several blocks would need a second launch (or atomics
 * and a grid-wide barrier) to meet for the norm.  The block is made as
 * wide as the reading allows instead (column threads and row groups:
 * runtime/plan/plan_kernels.c), and its partial sums meet in static
 * shared memory, so no dynamic shared memory and no opt-in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"


static int kernel_pool_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    return kernel_entry_printf(buf, cap, "pool", d, "bertc_pool_%s_h%d_%s%s%s", kernel_dtype_tag(s->dtype), s->hidden,
                               plan_pool_mode_name(s->pool_mode), s->normalize ? "_l2" : "",
                               s->packed ? "_packed" : "");
}

static int kernel_pool_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    const char *mode = plan_pool_mode_name(s->pool_mode);

    /* first line: the template and every parameter */
    kernel_text_printf(t, "// bertc template=pool dtype=%s bucket=any hidden=%d mode=%s normalize=%d packed=%d\n",
                       plan_dtype_name(s->dtype), s->hidden, mode, s->normalize ? 1 : 0, s->packed);
    kernel_text_printf(t, "// geometry: one block of %d threads%s, %d row groups of %d column threads, %d x %d-element "
                       "vectors\n", g.threads, s->packed ? " per sequence" : "", g.rg, g.ct, g.items, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "pool.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, const %s *x"
                       KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL
                       "    bertc_pool%s<%s, %d, %d, %d, %d, %d, %d, %s, %s>(out, req, x);\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       g.threads, kernel_min_blocks(g.threads), name, ty, ty, s->packed ? "_packed" : "", ty,
                       s->hidden, g.vec, g.ct, g.rg,
                       g.items, g.threads,
                       s->pool_mode == PLAN_POOL_MEAN  ? "BERTC_POOL_MEAN"
                       : s->pool_mode == PLAN_POOL_ROW ? "BERTC_POOL_ROW"
                                                       : "BERTC_POOL_CLS",
                       s->normalize ? "true" : "false", name);
    return 0;
}

const kernel_kind_desc kernel_pool_desc = {
    .kind = KERNEL_KIND_POOL,
    .name = "pool",
    .entry = kernel_pool_entry,
    .source = kernel_pool_source,
};
