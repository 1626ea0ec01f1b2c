/*
 * kernel_attention — geometry and instantiation of attention.cuh.
 *
 * The template streams keys through shared memory with an online softmax
 * (see its comment), so the only choices are the query tile QT (rows per
 * block, four warps share them) and the key tile KT.  Small buckets get
 * QT = 16 to put more blocks on the GPU (heads x bucket/16: 96 blocks for
 * 12 heads at 128 tokens); larger ones QT = 32, which halves how often K
 * and V are re-read from L2.  KT = 64 keys unless the bucket is 32; both
 * shrink until the block fits in 48 KiB of dynamic shared memory, the
 * amount every architecture grants without cuFuncSetAttribute — so the
 * runtime only passes kernel_dims' shared_bytes at launch.
 *
 * head_dim must be even (P . V works on column pairs) and at most 128;
 * ctx_ld must be even (pairs are stored as one word).  The global-load
 * width is the largest that divides head_dim, qkv_ld and the three column
 * offsets, so every head's slice stays aligned.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"

#define KERNEL_ATTENTION_MAX_HEAD_DIM 128

static int kernel_attention_check(const kernel_spec *s, diag *d) {
    int width = s->heads * s->head_dim;
    if (s->heads < 1 || s->heads > 1024)
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: %d heads (1..1024)", s->heads);
    if (s->head_dim < 2 || s->head_dim > KERNEL_ATTENTION_MAX_HEAD_DIM || s->head_dim % 2)
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: head_dim %d is not supported (even, 2..%d)",
                        s->head_dim, KERNEL_ATTENTION_MAX_HEAD_DIM);
    if (!isfinite(s->scale))
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: scale %g is not finite", (double)s->scale);
    if (s->q_off < 0 || s->k_off < 0 || s->v_off < 0 || s->qkv_ld < 1 || s->q_off + width > s->qkv_ld ||
        s->k_off + width > s->qkv_ld || s->v_off + width > s->qkv_ld)
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "kernel attention: q/k/v columns (offsets %d, %d, %d, width %d) do not fit qkv_ld %d",
                        s->q_off, s->k_off, s->v_off, width, s->qkv_ld);
    if (s->ctx_ld < width || s->ctx_ld % 2)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: ctx_ld %d must be even and >= heads*head_dim %d",
                        s->ctx_ld, width);
    return 0;
}

static unsigned kernel_attention_smem(const kernel_spec *s, int qt, int kt) {
    int size = kernel_dtype_size(s->dtype);
    int kw = s->head_dim * size / 4;
    return (unsigned)(qt * s->head_dim * 4 + kt * (kw | 1) * 4 + kt * s->head_dim * size);
}

int kernel_attention_geom_of(const kernel_spec *s, kernel_attention_geom *g, diag *d) {
    if (kernel_attention_check(s, d)) return -1;
    g->qt = s->bucket <= 128 ? 16 : 32;
    g->kt = s->bucket <= 32 ? 32 : 64;
    while (kernel_attention_smem(s, g->qt, g->kt) > KERNEL_SMEM_NO_OPTIN) {
        if (g->kt > 32)
            g->kt = 32;
        else if (g->qt > 16)
            g->qt = 16;
        else
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: head_dim %d does not fit shared memory",
                            s->head_dim);
    }
    g->smem = kernel_attention_smem(s, g->qt, g->kt);
    int vals[5] = {s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off};
    g->vec = kernel_vec_elems(kernel_dtype_size(s->dtype), vals, 5);
    return 0;
}

int kernel_attention_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    kernel_attention_geom g;
    if (kernel_attention_geom_of(s, &g, d)) return -1;
    dims->grid[0] = (unsigned)s->heads;
    dims->grid[1] = (unsigned)kernel_ceil_div(s->bucket, g.qt);
    dims->grid[2] = 1;
    dims->block[0] = 128;
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = g.smem;
    return 0;
}

int kernel_attention_source(const kernel_spec *s, kernel_text *t, char **entry, diag *d) {
    kernel_attention_geom g;
    if (kernel_attention_geom_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t scale = kernel_float_bits(s->scale);
    uint32_t scale_log2e = kernel_float_bits((float)((double)s->scale * 1.4426950408889634074));
    char name[256];
    int n = snprintf(name, sizeof name, "bertc_attention_%s_s%d_h%d_d%d_c%08x_ld%d_q%d_k%d_v%d_o%d",
                     kernel_dtype_tag(s->dtype), s->bucket, s->heads, s->head_dim, scale, s->qkv_ld, s->q_off,
                     s->k_off, s->v_off, s->ctx_ld);
    if (n < 0 || (size_t)n >= sizeof name)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: entry name too long");

    kernel_text_printf(t,
                       "// bertc template=attention dtype=%s bucket=%d heads=%d head_dim=%d scale=%.9g qkv_ld=%d "
                       "q_off=%d k_off=%d v_off=%d ctx_ld=%d\n",
                       ir_dtype_name(s->dtype), s->bucket, s->heads, s->head_dim, (double)s->scale, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld);
    kernel_text_printf(t,
                       "// geometry: %d query rows x %d-key tiles per block of 128 threads, %u bytes of dynamic "
                       "shared memory, %d-element loads\n",
                       g.qt, g.kt, g.smem, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "attention.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(128, %d) %s(%s *ctx, const int *req, "
                       "const %s *qkv) {\n"
                       "    bertc_attention<%s, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d>(ctx, req, qkv, "
                       "__int_as_float((int)0x%08xu));\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       kernel_min_blocks(128), name, ty, ty, ty, s->bucket, s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off, s->ctx_ld,
                       g.qt, g.kt, g.vec, scale_log2e, name);
    *entry = strdup(name);
    return 0;
}
