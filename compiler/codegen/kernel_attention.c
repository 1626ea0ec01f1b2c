/*
 * kernel_attention — geometry and instantiation of attention.cuh.
 *
 * The template streams keys through shared memory with an online softmax
 * (see its comment), so the choices are the path, the query tile (rows
 * per block) and the key tile KT.
 *
 * Tensor cores when storage is 16-bit, head_dim % 16 == 0 and every head's
 * slice is 16-byte aligned: one warp per 16 query rows, 1, 2 or 4 warps
 * per block as the bucket grows (a short sequence wants many blocks, a
 * long one fewer re-reads of K and V: heads x bucket/16 blocks at <= 128
 * tokens, bucket/64 at > 256).  The shared memory reported covers both
 * the double-buffered K/V tiles and the SIMT passes the same launch runs
 * on sm_75.  Otherwise SIMT with four warps: QT = 16 rows for buckets up
 * to 128 (96 blocks for 12 heads at 128 tokens), 32 above (K and V re-read
 * half as often).  KT = 64 keys unless the bucket is 32; tiles shrink
 * until the block fits in 48 KiB of dynamic shared memory, what every
 * architecture grants without cuFuncSetAttribute — so the runtime only
 * passes kernel_dims' shared_bytes at launch.
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

#include "kernel_util.h"

typedef struct kernel_attention_geom {
    int tc;                        /* tensor-core path (16-bit, head_dim % 16 == 0, aligned) */
    int nw;                        /* warps per block */
    int qt, kt;                    /* query rows per block, keys per shared-memory tile */
    int vec;                       /* elements per global load */
    unsigned smem;                 /* dynamic shared memory bytes */
} kernel_attention_geom;

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

/*
 * Launch bounds of the tensor-core path: 256 threads' worth of blocks per
 * SM, so ptxas may use up to 255 registers — the S tile (32 floats), the
 * O accumulators (head_dim / 2) and Q's fragments (head_dim / 4) are all
 * live across the key loop, and at 128 registers head_dim 64 spills.
 */
static int kernel_attention_tc_min_blocks(int nw) { return 256 / (32 * nw); }

/* SIMT: Q [qt][D] float, K [kt][odd words], V [kt][D] */
static unsigned kernel_attention_smem_simt(const kernel_spec *s, int qt, int kt) {
    int size = kernel_dtype_size(s->dtype);
    int kw = s->head_dim * size / 4;
    return (unsigned)(qt * s->head_dim * 4 + kt * (kw | 1) * 4 + kt * s->head_dim * size);
}

/* tensor cores: two stages of K and V, rows padded by 16 bytes */
static unsigned kernel_attention_smem_tc(const kernel_spec *s, int kt) {
    return (unsigned)(2 * 2 * kt * (s->head_dim + 8) * kernel_dtype_size(s->dtype));
}

static int kernel_attention_geom_of(const kernel_spec *s, kernel_attention_geom *g, diag *d) {
    int vals[5] = {s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off};
    g->vec = kernel_vec_elems(kernel_dtype_size(s->dtype), vals, 5);
    g->kt = s->bucket <= 32 ? 32 : 64;
    g->tc = kernel_dtype_size(s->dtype) == 2 && s->head_dim % 16 == 0 && g->vec == 8;
    if (g->tc) {
        /* one 16-row mma tile per warp; more warps (fewer re-reads of K and
         * V) as the bucket grows, more blocks while it is short */
        g->nw = s->bucket <= 128 ? 1 : s->bucket <= 256 ? 2 : 4;
        g->qt = 16 * g->nw;
        if (kernel_attention_smem_tc(s, g->kt) > KERNEL_SMEM_NO_OPTIN) g->kt = 32;
        unsigned tc = kernel_attention_smem_tc(s, g->kt);
        unsigned simt = kernel_attention_smem_simt(s, 4 * g->nw, g->kt); /* the sm_75 passes */
        g->smem = tc > simt ? tc : simt;
    } else {
        g->nw = 4;
        g->qt = s->bucket <= 128 ? 16 : 32;
        while (kernel_attention_smem_simt(s, g->qt, g->kt) > KERNEL_SMEM_NO_OPTIN) {
            if (g->kt > 32)
                g->kt = 32;
            else if (g->qt > 16)
                g->qt = 16;
            else
                break;
        }
        g->smem = kernel_attention_smem_simt(s, g->qt, g->kt);
    }
    if (g->smem > KERNEL_SMEM_NO_OPTIN)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: head_dim %d does not fit shared memory", s->head_dim);
    return 0;
}

static int kernel_attention_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    kernel_attention_geom g;
    if (kernel_attention_geom_of(s, &g, d)) return -1;
    dims->grid[0] = (unsigned)s->heads;
    dims->grid[1] = (unsigned)kernel_ceil_div(s->bucket, g.qt);
    dims->grid[2] = 1;
    dims->block[0] = (unsigned)(32 * g.nw);
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = g.smem;
    return 0;
}

static int kernel_attention_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    return kernel_entry_printf(buf, cap, "attention", d, "bertc_attention_%s_s%d_h%d_d%d_c%08x_ld%d_q%d_k%d_v%d_o%d",
                               kernel_dtype_tag(s->dtype), s->bucket, s->heads, s->head_dim,
                               kernel_float_bits(s->scale), s->qkv_ld, s->q_off, s->k_off, s->v_off, s->ctx_ld);
}

static int kernel_attention_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_attention_geom g;
    if (kernel_attention_geom_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t scale_log2e = kernel_float_bits((float)((double)s->scale * 1.4426950408889634074));

    kernel_text_printf(t,
                       "// bertc template=attention dtype=%s bucket=%d heads=%d head_dim=%d scale=%.9g qkv_ld=%d "
                       "q_off=%d k_off=%d v_off=%d ctx_ld=%d\n",
                       plan_dtype_name(s->dtype), s->bucket, s->heads, s->head_dim, (double)s->scale, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld);
    kernel_text_printf(t,
                       "// geometry: %s, %d warps, %d query rows x %d-key tiles per block, %u bytes of dynamic "
                       "shared memory, %d-element loads\n",
                       g.tc ? "tensor cores (SIMT passes on sm_75)" : "SIMT", g.nw, g.qt, g.kt, g.smem, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "attention.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *ctx, const int *req, "
                       "const %s *qkv) {\n"
                       "    bertc_attention<%s, %d, %d, %d, %d, %d, %d, %d, %s, %d, %d, %d, %d>(ctx, req, qkv, "
                       "__int_as_float((int)0x%08xu));\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       32 * g.nw, g.tc ? kernel_attention_tc_min_blocks(g.nw) : kernel_min_blocks(32 * g.nw), name, ty, ty, ty, s->bucket, s->head_dim, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld, g.tc ? "true" : "false", g.nw, g.qt, g.kt, g.vec,
                       scale_log2e, name);
    return 0;
}

const kernel_kind_desc kernel_attention_desc = {
    .kind = KERNEL_KIND_ATTENTION,
    .name = "attention",
    .nargs = 3,
    .check = kernel_attention_check,
    .dims = kernel_attention_dims,
    .entry = kernel_attention_entry,
    .source = kernel_attention_source,
};
