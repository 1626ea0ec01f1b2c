/*
 * kernel_ln — the text of the two LayerNorm kernels: embed_ln (gathers +
 * LayerNorm) and add_ln (bias + residual + LayerNorm).  They share a
 * geometry, since both are one read-mostly pass over rows of `hidden`
 * elements: a block per row (a warp while each lane holds at most 24 values
 * of the row, plan_kernels.c), vectors as wide
 * as the hidden size allows (runtime/plan/plan_kernels.c chooses and
 * argues it).  Neither depends on the bucket: the text reads the lengths
 * from the request block, so the entry names carry no bucket and one
 * kernel serves every bucket of a plan.  This file names the entries and
 * writes the instantiations.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

static const char *kernel_ln_index_name(kernel_index i) {
    switch (i) {
    case KERNEL_INDEX_INPUT_IDS: return "input_ids";
    case KERNEL_INDEX_TOKEN_TYPES: return "token_type_ids";
    case KERNEL_INDEX_POSITION: return "position";
    case KERNEL_INDEX_PAD_POSITION: return "pad_position";
    default: return NULL;
    }
}

static char kernel_ln_index_letter(kernel_index i) {
    return i == KERNEL_INDEX_INPUT_IDS ? 'i' : i == KERNEL_INDEX_TOKEN_TYPES ? 't' : i == KERNEL_INDEX_POSITION ? 'p' : 'r';
}

/* The kind's name in messages: the file serves two kinds. */
static const char *kernel_ln_name(const kernel_spec *s) {
    return s->kind == KERNEL_KIND_EMBED_LN ? "embed_ln" : "add_ln";
}

static int kernel_ln_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    uint32_t eps = kernel_float_bits(s->eps);
    if (s->kind != KERNEL_KIND_EMBED_LN)
        return kernel_entry_printf(buf, cap, "add_ln", d, "bertc_add_ln_%s_h%d_e%08x_b%dr%d",
                                   kernel_dtype_tag(s->dtype), s->hidden, eps, s->has_bias ? 1 : 0,
                                   s->has_residual ? 1 : 0);
    if (kernel_entry_printf(buf, cap, "embed_ln", d, "bertc_embed_ln_%s_h%d_e%08x", kernel_dtype_tag(s->dtype),
                            s->hidden, eps))
        return -1;
    for (int i = 0; i < s->ngathers; i++) {
        size_t n = strlen(buf);
        if (kernel_entry_printf(buf + n, cap - n, "embed_ln", d, "_%c%d", kernel_ln_index_letter(s->gather_index[i]),
                                s->table_rows[i]))
            return -1;
        n = strlen(buf);
        if (s->gather_index[i] == KERNEL_INDEX_PAD_POSITION &&
            kernel_entry_printf(buf + n, cap - n, "embed_ln", d, "pad%d", s->pad_id))
            return -1;
    }
    size_t n = strlen(buf);
    return s->packed ? kernel_entry_printf(buf + n, cap - n, "embed_ln", d, "_packed") : 0;
}

static int kernel_ln_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t eps = kernel_float_bits(s->eps);
    int embed = s->kind == KERNEL_KIND_EMBED_LN;

    /* first line: the template and every parameter */
    kernel_text_printf(t, "// bertc template=%s dtype=%s bucket=any hidden=%d eps=%.9g", kernel_ln_name(s),
                       plan_dtype_name(s->dtype), s->hidden, (double)s->eps);
    if (embed) {
        kernel_text_printf(t, " packed=%d ngathers=%d", s->packed, s->ngathers);
        for (int i = 0; i < s->ngathers; i++)
            kernel_text_printf(t, " gather_index%d=%s table_rows%d=%d", i, kernel_ln_index_name(s->gather_index[i]),
                               i, s->table_rows[i]);
        kernel_text_printf(t, " pad_id=%d", s->pad_id);
    } else {
        kernel_text_printf(t, " has_bias=%d has_residual=%d", s->has_bias ? 1 : 0, s->has_residual ? 1 : 0);
    }
    kernel_text_printf(t, "\n");
    if (g.threads == 32)
        kernel_text_printf(t, "// geometry: a block of one warp per row, %d-element vectors\n", g.vec);
    else
        kernel_text_printf(t, "// geometry: a block of %d threads per row, %d-element vectors\n", g.threads, g.vec);

    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, embed ? "embed_ln.cuh" : "add_ln.cuh", d)) return -1;

    int threads = g.threads;
    if (embed) {
        int idx[KERNEL_MAX_GATHERS], rows[KERNEL_MAX_GATHERS];
        for (int i = 0; i < KERNEL_MAX_GATHERS; i++) {
            idx[i] = i < s->ngathers ? (int)s->gather_index[i] : 0;
            rows[i] = i < s->ngathers ? s->table_rows[i] : 1;
        }
        kernel_text_printf(t,
                           "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, "
                           "const %s *table0, const %s *table1, const %s *table2, const %s *gamma, const %s *beta"
                           KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL
                           "    bertc_embed_ln<%s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %s>(out, req, table0, "
                           "table1, table2, gamma, beta, __int_as_float((int)0x%08xu));\n"
                           "}\n"
                           "BERTC_KERNEL_EXPORT(%s)\n",
                           threads, kernel_min_blocks(threads), name, ty, ty, ty, ty, ty, ty, ty, s->hidden, g.vec,
                           g.threads, s->ngathers, idx[0], rows[0], idx[1], rows[1], idx[2], rows[2], s->pad_id,
                           s->packed ? "true" : "false", eps, name);
    } else {
        kernel_text_printf(t,
                           "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *out, const int *req, "
                           "const %s *x, const %s *bias, const %s *residual, const %s *gamma, const %s *beta"
                           KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL
                           "    bertc_add_ln<%s, %d, %d, %d, %s, %s>(out, req, x, bias, residual, gamma, beta, "
                           "__int_as_float((int)0x%08xu));\n"
                           "}\n"
                           "BERTC_KERNEL_EXPORT(%s)\n",
                           threads, kernel_min_blocks(threads), name, ty, ty, ty, ty, ty, ty, ty, s->hidden, g.vec,
                           g.threads, s->has_bias ? "true" : "false", s->has_residual ? "true" : "false", eps, name);
    }
    return 0;
}

const kernel_kind_desc kernel_embed_ln_desc = {
    .kind = KERNEL_KIND_EMBED_LN,
    .name = "embed_ln",
    .entry = kernel_ln_entry,
    .source = kernel_ln_source,
};

const kernel_kind_desc kernel_add_ln_desc = {
    .kind = KERNEL_KIND_ADD_LN,
    .name = "add_ln",
    .entry = kernel_ln_entry,
    .source = kernel_ln_source,
};
