/*
 * kernel_attention — the text of attention.cuh's instantiations.
 *
 * The template streams keys through shared memory with an online softmax
 * (see its comment); the path (tensor cores or SIMT), the query tile and
 * its split over the warps, the key tiles and the shared memory are the
 * launch contract's choices (runtime/plan/plan_kernels.c) from the spec,
 * whose query tile the compiler picked for the bucket.  Here they become
 * template arguments, with the launch bounds that let ptxas keep the
 * tensor-core path's state in registers.  The text does not depend on the
 * bucket, so the entry name carries the query tile instead.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

/*
 * Launch bounds: 128 threads and as many blocks per SM as shared memory
 * allows anyway (three of ~40 KiB on an A100), which lets ptxas use up to
 * 170 registers — the S tile, the O accumulators (head_dim / 2 per lane)
 * and Q's fragments (head_dim / 4) are all live across the key loop.  At
 * head_dim 128 two blocks (255 registers): O alone is 64 per lane.  A score
 * bias (MPNet) adds a table read per score, whose loads ptxas hoists: two
 * blocks there too (sm_75's pairs of m16n8k8 spilled at 170 registers with
 * a 64-row query tile).
 */
static int kernel_attention_min_blocks(const kernel_spec *s, const kernel_geometry *g) {
    return g->tc ? (s->head_dim > 64 || s->bias_ld ? 2 : 3) : kernel_min_blocks(32 * g->nw);
}

static int kernel_attention_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    char tile[64];
    if (s->packed)
        snprintf(tile, sizeof tile, "p%d_%d_%d_%d", s->seq_qtile[0], s->seq_qtile[1], s->seq_qtile[2], s->seq_qtile[3]);
    else
        snprintf(tile, sizeof tile, "t%d", s->qtile);
    if (kernel_entry_printf(buf, cap, "attention", d, "bertc_attention_%s_%s_h%d_d%d_c%08x_ld%d_q%d_k%d_v%d_o%d",
                            kernel_dtype_tag(s->dtype), tile, s->heads, s->head_dim, kernel_float_bits(s->scale),
                            s->qkv_ld, s->q_off, s->k_off, s->v_off, s->ctx_ld))
        return -1;
    size_t n = strlen(buf);
    return s->bias_ld ? kernel_entry_printf(buf + n, cap - n, "attention", d, "_b%d", s->bias_ld) : 0;
}

/* The template arguments of bertc_attention / bertc_attention_rows after
 * CLD for the geometry g: TC, QT, WQ, STAGES, PT, SKT, VEC, OV. */
static void kernel_attention_targs(const kernel_geometry *g, int ov, char *buf, size_t cap) {
    snprintf(buf, cap, "%s, %d, %d, %d, %d, %d, %d, %d", g->tc ? "true" : "false", g->qt, g->tc ? g->wq : 1,
             g->tc ? g->stages : 1, g->pt, g->skt, g->vec, ov);
}

/* A packed kernel's body: its block's work from the request block, then
 * the variant of the work's tile. */
static int kernel_attention_packed_body(const kernel_spec *s, const kernel_geometry *g, int ov, kernel_text *t,
                                        diag *d) {
    const char *ty = kernel_dtype_cxx(s->dtype);
    char head[64] = ""; /* the head's bias table (none: the NULL pointer as it is) */
    if (s->bias_ld) snprintf(head, sizeof head, " + (size_t)blockIdx.x * %d", s->bias_ld * s->bias_ld);
    kernel_text_printf(t,
                       "    BERTC_DYNAMIC_SMEM(unsigned char, smem);\n"
                       "    const bertc_req_lens rl = bertc_req_read(req);\n"
                       "    const bertc_attention_work w = bertc_attention_find_work<%d, %d, %d, %d, %d>(req, rl, "
                       "(int)blockIdx.y);\n"
                       "    if (w.tile == 0) return;\n"
                       "    const int *mask = req + BERTC_REQ_ATTENTION_MASK(rl.bucket) + w.start;\n"
                       "    const bool vec4 = (rl.bucket & 1) == 0 && (w.start & 3) == 0;\n"
                       "    const %s *q = qkv + (size_t)w.start * %d;\n"
                       "    %s *c = ctx + (size_t)w.start * %d;\n"
                       "    const %s *hb = bias%s;\n"
                       "    bertc_grid_dependency_wait();\n"
                       "    switch (w.tile) {\n",
                       s->seq_qtile[0], s->seq_qtile[1], s->seq_qtile[2], s->seq_qtile[3], g->qtiles[g->nqtiles - 1], ty,
                       s->qkv_ld, ty, s->ctx_ld, ty, head);
    for (int i = 0; i < g->nqtiles; i++) {
        kernel_spec vs = kernel_attention_variant(s, g->qtiles[i]);
        kernel_geometry vg;
        char targs[128];
        if (kernel_geometry_of(&vs, &vg, d)) return -1;
        kernel_attention_targs(&vg, ov, targs, sizeof targs);
        /* the largest tile is also the default: a length past seq_qtile[3] */
        if (i + 1 < g->nqtiles) kernel_text_printf(t, "    case %d:", g->qtiles[i]);
        else kernel_text_printf(t, "    default:");
        kernel_text_printf(t,
                           " bertc_attention_rows<%s, %d, %d, %d, %d, %d, %d, %s, %d>(c, mask, vec4, q, hb, "
                           "__int_as_float((int)0x%08xu), smem, (int)blockIdx.x, w.q0, w.len); break;\n",
                           ty, s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off, s->ctx_ld, targs, s->bias_ld,
                           kernel_float_bits((float)((double)s->scale * 1.4426950408889634074)));
    }
    kernel_text_printf(t, "    }\n");
    return 0;
}

static int kernel_attention_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t scale_log2e = kernel_float_bits((float)((double)s->scale * 1.4426950408889634074));
    int ov_of[2] = {s->ctx_ld, s->head_dim};
    int ov = kernel_vec_elems(plan_dtype_size(s->dtype), ov_of, 2);

    if (s->packed)
        kernel_text_printf(t,
                           "// bertc template=attention dtype=%s bucket=any packed=1 seq_qtile=%d,%d,%d,%d heads=%d "
                           "head_dim=%d scale=%.9g qkv_ld=%d q_off=%d k_off=%d v_off=%d ctx_ld=%d bias_ld=%d\n",
                           plan_dtype_name(s->dtype), s->seq_qtile[0], s->seq_qtile[1], s->seq_qtile[2],
                           s->seq_qtile[3], s->heads, s->head_dim, (double)s->scale, s->qkv_ld, s->q_off, s->k_off,
                           s->v_off, s->ctx_ld, s->bias_ld);
    else
        kernel_text_printf(t,
                           "// bertc template=attention dtype=%s bucket=any qtile=%d heads=%d head_dim=%d scale=%.9g "
                           "qkv_ld=%d q_off=%d k_off=%d v_off=%d ctx_ld=%d bias_ld=%d\n",
                           plan_dtype_name(s->dtype), s->qtile, s->heads, s->head_dim, (double)s->scale, s->qkv_ld,
                           s->q_off, s->k_off, s->v_off, s->ctx_ld, s->bias_ld);
    if (s->packed) {
        kernel_text_printf(t, "// geometry: packed batches, a block per (head, query tile of one sequence); tiles");
        for (int i = 0; i < g.nqtiles; i++) kernel_text_printf(t, " %d", g.qtiles[i]);
        kernel_text_printf(t, ", each its one-request geometry; %u bytes of dynamic shared memory\n", g.smem);
    } else if (g.tc)
        kernel_text_printf(t,
                           "// geometry: tensor cores (m16n8k16 sm_80+, m16n8k8 float16 on sm_75, else SIMT), 4 warps "
                           "= %d query groups x %d key slices, %d query rows x %d-key tiles in %d stage(s); %u bytes of "
                           "dynamic shared memory\n",
                           g.wq, g.wk, g.qt, g.kt, g.stages, g.smem);
    else
        kernel_text_printf(t,
                           "// geometry: SIMT, 4 warps, %d query rows in passes of %d x %d-key tiles, %u bytes of "
                           "dynamic shared memory, %d-element loads\n",
                           g.qt, g.pt, g.skt, g.smem, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "attention.cuh", d)) return -1;
    if (s->packed) {
        kernel_text_printf(t,
                           "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *ctx, const int *req, "
                           "const %s *qkv, const %s *bias" KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL,
                           32 * g.nw, kernel_attention_min_blocks(s, &g), name, ty, ty, ty);
        if (kernel_attention_packed_body(s, &g, ov, t, d)) return -1;
        kernel_text_printf(t, "}\nBERTC_KERNEL_EXPORT(%s)\n", name);
        return 0;
    }
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *ctx, const int *req, "
                       "const %s *qkv, const %s *bias" KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL
                       "    bertc_attention<%s, %d, %d, %d, %d, %d, %d, %s, %d, %d, %d, %d, %d, %d, %d, %d>(ctx, req, qkv, "
                       "bias, __int_as_float((int)0x%08xu));\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       32 * g.nw, kernel_attention_min_blocks(s, &g), name, ty, ty, ty, ty, s->head_dim, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld, g.tc ? "true" : "false", g.qt, g.tc ? g.wq : 1,
                       g.tc ? g.stages : 1, g.pt, g.skt, g.vec, ov, s->bias_ld, scale_log2e, name);
    return 0;
}

/* bertc_attention's choice: tensor cores where the architecture has an mma
 * for T (m16n8k16 from sm_80, m16n8k8 for float16 on sm_75), else SIMT. */
static const char *kernel_attention_path(const kernel_spec *s, int sm) {
    kernel_geometry g;
    diag d;
    diag_init(&d);
    if (kernel_geometry_of(s, &g, &d) || !g.tc) return "simt";
    return sm >= 80 ? "mma.m16n8k16" : sm >= 75 && s->dtype == PLAN_DTYPE_F16 ? "mma.m16n8k8" : "simt";
}

const kernel_kind_desc kernel_attention_desc = {
    .kind = KERNEL_KIND_ATTENTION,
    .name = "attention",
    .entry = kernel_attention_entry,
    .source = kernel_attention_source,
    .path = kernel_attention_path,
};
