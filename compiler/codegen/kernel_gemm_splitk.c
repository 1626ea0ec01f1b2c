/*
 * kernel_gemm_splitk — the text of gemm_splitk.cuh's two instantiations:
 * gemm_splitk (bias / residual / activation epilogue) and gemm_ln (bias +
 * residual + LayerNorm epilogue), bertc's own batch-1 GEMMs.
 *
 * The tile and the split are spec fields the compiler chose (the launch
 * contract checks them, runtime/plan/plan_kernels.c derives the warp
 * layout, the stages and the load widths from them); this file writes
 * them into the instantiation and names the entry after every parameter
 * that changes the text.  The bucket and the split count do not: the
 * kernel reads its row blocks and splits off the grid — whether there is
 * more than one split, and how deep its load ring is (a split of few
 * k-tiles fills fewer stages than the tile's deepest ring) — so the text
 * says only the tile and its deepest ring (and the rows, when they do not
 * fill the last row block: a pooler's one row).  The plan keeps one
 * kernel record per spec (its bucket and splits are what the launch
 * contract checks, and its dynamic shared memory the launch's ring), and
 * records of one tiling carry the same text, which kbuild compiles once:
 * in BERT-base, 20 GEMM records are 12 kernels to compile, and a plan
 * with a step list per compute capability no longer compiles a tiling
 * once per split count and ring depth its lists use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

/* As GEMM: two blocks per SM leave ptxas 255 registers, which the SIMT path
 * of a 64x128 tile (sm_75's bf16, float storage) needs. */
#define KERNEL_GSK_MIN_BLOCKS 2

static int kernel_gsk_is_ln(const kernel_spec *s) { return s->kind == KERNEL_KIND_GEMM_LN; }

/* The rows the text must name: the GEMM's when they do not fill the last
 * row block (gemm_splitk.cuh: ROWS), else 0 (the grid tells them). */
static int kernel_gsk_rows(const kernel_spec *s) { return s->bucket % s->tile_m ? s->bucket : 0; }

static int kernel_gsk_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    const char *kind = plan_kernel_kind_name(s->kind);
    char tail[48];
    if (kernel_gsk_is_ln(s)) snprintf(tail, sizeof tail, "e%08x", kernel_float_bits(s->eps));
    else snprintf(tail, sizeof tail, "%s", s->has_act ? plan_act_name(s->act) : "none");
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    char rows[24] = "";
    if (kernel_gsk_rows(s)) snprintf(rows, sizeof rows, "_m%d", kernel_gsk_rows(s));
    return kernel_entry_printf(buf, cap, kind, d, "bertc_%s_%s%s_n%d_k%d_x%d_o%d_r%d_b%d_t%dx%d_g%d_%s", kind,
                               kernel_dtype_tag(s->dtype), rows, s->n, s->k, s->x_ld, s->out_ld,
                               s->has_residual ? s->res_ld : 0, s->has_bias ? 1 : 0, s->tile_m, s->tile_n,
                               g.max_stages, tail);
}

/* The first two lines: the template, every parameter, the geometry (only
 * what every launch of the text shares: the records of one tiling at
 * other buckets and split counts carry these very bytes). */
static void kernel_gsk_header(const kernel_spec *s, const kernel_geometry *g, kernel_text *t) {
    kernel_text_printf(t,
                       "// bertc template=%s dtype=%s bucket=any rows=%d n=%d k=%d x_ld=%d out_ld=%d res_ld=%d "
                       "has_bias=%d has_residual=%d tile_m=%d tile_n=%d splits=any",
                       plan_kernel_kind_name(s->kind), plan_dtype_name(s->dtype), kernel_gsk_rows(s), s->n, s->k,
                       s->x_ld, s->out_ld,
                       s->has_residual ? s->res_ld : 0, s->has_bias ? 1 : 0, s->has_residual ? 1 : 0, s->tile_m,
                       s->tile_n);
    if (kernel_gsk_is_ln(s)) kernel_text_printf(t, " eps=%.9g\n", (double)s->eps);
    else kernel_text_printf(t, " has_act=%d act=%s\n", s->has_act ? 1 : 0, s->has_act ? plan_act_name(s->act) : "none");
    kernel_text_printf(t,
                       "// geometry: grid %d x row blocks x splits (n tiles; the bucket's row blocks and the "
                       "splits are the launch's), 128 threads as %d k-group%s of %dx%d warps, a ring of up to %d "
                       "stages (as many as a split's k-tiles fill, at least 2: the launch's shared memory), "
                       "%d-element loads\n",
                       g->ntiles, g->kgroups, g->kgroups > 1 ? "s" : "", g->wm, 4 / (g->wm * g->kgroups),
                       g->max_stages, g->vec);
}

static const char *kernel_gsk_act_cxx(const kernel_spec *s) {
    if (!s->has_act) return "BERTC_ACT_NONE";
    switch (s->act) {
    case PLAN_ACT_GELU_ERF: return "BERTC_ACT_GELU_ERF";
    case PLAN_ACT_GELU_TANH: return "BERTC_ACT_GELU_TANH";
    case PLAN_ACT_RELU: return "BERTC_ACT_RELU";
    default: return "BERTC_ACT_TANH";
    }
}

static int kernel_gsk_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    int res_ld = s->has_residual ? s->res_ld : 0;
    const char *bias = s->has_bias ? "true" : "false", *res = s->has_residual ? "true" : "false";
    kernel_gsk_header(s, &g, t);
    if (kernel_text_template(t, "bertc_device.cuh", d) || kernel_text_template(t, "gemm.cuh", d) ||
        kernel_text_template(t, "gemm_splitk.cuh", d))
        return -1;
    kernel_text_printf(t, "\nextern \"C\" __global__ void __launch_bounds__(128, %d) %s(%s *out, const int *req, "
                          "const %s *x, const %s *w, const %s *bias, const %s *residual, ",
                       KERNEL_GSK_MIN_BLOCKS, name, ty, ty, ty, ty, ty);
    if (kernel_gsk_is_ln(s))
        kernel_text_printf(t,
                           "const %s *gamma, const %s *beta, float *workspace, int *counters" KERNEL_PREFETCH_PARAMS
                           ") {\n" KERNEL_PREFETCH_CALL
                           "    bertc_gemm_ln<%s, %d, %d, %d, %d, %d, %s, %s, %d, %d, %d, %d, %d, %d, %d, %d>(out, "
                           "req, x, w, bias, residual, gamma, beta, __int_as_float((int)0x%08xu), workspace, "
                           "counters);\n",
                           ty, ty, ty, s->n, s->k, s->x_ld, s->out_ld, res_ld, bias, res, g.bm, g.bn, g.wm,
                           g.kgroups, g.vec, g.max_stages, kernel_gsk_rows(s), g.lnvec, kernel_float_bits(s->eps));
    else
        kernel_text_printf(t,
                           "float *workspace, int *counters" KERNEL_PREFETCH_PARAMS ") {\n" KERNEL_PREFETCH_CALL
                           "    bertc_gemm_splitk<%s, %d, %d, %d, %d, %d, %s, %s, %s, %d, %d, %d, %d, %d, %d, %d>("
                           "out, req, x, w, bias, residual, workspace, counters);\n",
                           ty, s->n, s->k, s->x_ld, s->out_ld, res_ld, bias, res, kernel_gsk_act_cxx(s), g.bm, g.bn,
                           g.wm, g.kgroups, g.vec, g.max_stages, kernel_gsk_rows(s));
    kernel_text_printf(t, "}\nBERTC_KERNEL_EXPORT(%s)\n", name);
    return 0;
}

/* gemm_splitk.cuh's choice (bertc_gsk_path): tensor cores for 16-bit
 * storage where the architecture has an mma for T (m16n8k16 from sm_80,
 * m16n8k8 for float16 on sm_75), else SIMT. */
static const char *kernel_gsk_path(const kernel_spec *s, int sm) {
    if (s->dtype == PLAN_DTYPE_F32) return "simt";
    return sm >= 80 ? "mma.m16n8k16" : sm >= 75 && s->dtype == PLAN_DTYPE_F16 ? "mma.m16n8k8" : "simt";
}

const kernel_kind_desc kernel_gemm_splitk_desc = {
    .kind = KERNEL_KIND_GEMM_SPLITK,
    .name = "gemm_splitk",
    .entry = kernel_gsk_entry,
    .source = kernel_gsk_source,
    .path = kernel_gsk_path,
};

const kernel_kind_desc kernel_gemm_ln_desc = {
    .kind = KERNEL_KIND_GEMM_LN,
    .name = "gemm_ln",
    .entry = kernel_gsk_entry,
    .source = kernel_gsk_source,
    .path = kernel_gsk_path,
};
