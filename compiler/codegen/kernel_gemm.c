/*
 * kernel_gemm — the text of gemm.cuh's instantiations.
 *
 * The tile, the stages and the load width come from the launch contract
 * (runtime/plan/plan_kernels.c argues them: at batch 1 the GEMMs are short
 * and wide, so the tile is the largest that still fills the GPU); this
 * file writes them into the instantiation, with the activation the model
 * asks for, and names the entry after every parameter that matters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

/* Two resident blocks per SM are plenty for a tile that keeps 32 KiB in
 * flight, and leave ptxas 255 registers: the SIMT path of a 64x128 tile
 * (sm_75's 16-bit GEMM) holds 64 accumulators plus 16-bit unpacking. */
#define KERNEL_GEMM_MIN_BLOCKS 2

static const char *kernel_gemm_act_cxx(const kernel_spec *s) {
    if (!s->has_act) return "BERTC_ACT_NONE";
    switch (s->act) {
    case PLAN_ACT_GELU_ERF: return "BERTC_ACT_GELU_ERF";
    case PLAN_ACT_GELU_TANH: return "BERTC_ACT_GELU_TANH";
    case PLAN_ACT_RELU: return "BERTC_ACT_RELU";
    case PLAN_ACT_TANH: return "BERTC_ACT_TANH";
    default: return NULL;
    }
}

static int kernel_gemm_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    return kernel_entry_printf(buf, cap, "gemm", d, "bertc_gemm_%s_s%d_n%d_k%d_x%d_o%d_r%d_b%d_%s",
                               kernel_dtype_tag(s->dtype), s->bucket, s->n, s->k, s->x_ld, s->out_ld,
                               s->has_residual ? s->res_ld : 0, s->has_bias ? 1 : 0,
                               s->has_act ? plan_act_name(s->act) : "none");
}

static int kernel_gemm_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    int res_ld = s->has_residual ? s->res_ld : 0;
    const char *act = s->has_act ? plan_act_name(s->act) : "none";

    kernel_text_printf(t,
                       "// bertc template=gemm dtype=%s bucket=%d n=%d k=%d x_ld=%d out_ld=%d res_ld=%d has_bias=%d "
                       "has_residual=%d has_act=%d act=%s\n",
                       plan_dtype_name(s->dtype), s->bucket, s->n, s->k, s->x_ld, s->out_ld, res_ld,
                       s->has_bias ? 1 : 0, s->has_residual ? 1 : 0, s->has_act ? 1 : 0, act);
    kernel_text_printf(t,
                       "// geometry: %dx%d tiles, 128 threads, %d stages, %u bytes of dynamic shared memory, "
                       "%d-element loads\n",
                       g.bm, g.bn, g.stages, g.smem, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "gemm.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(128, %d) %s(%s *out, const int *req, "
                       "const %s *x, const %s *w, const %s *bias, const %s *residual" KERNEL_PREFETCH_PARAMS
                       ") {\n" KERNEL_PREFETCH_CALL
                       "    bertc_gemm<%s, %d, %d, %d, %d, %d, %d, %s, %s, %s, %d, %d, %d, %d>(out, req, x, w, bias, "
                       "residual);\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       KERNEL_GEMM_MIN_BLOCKS, name, ty, ty, ty, ty, ty, ty, s->bucket, s->n, s->k, s->x_ld, s->out_ld, res_ld,
                       s->has_bias ? "true" : "false", s->has_residual ? "true" : "false", kernel_gemm_act_cxx(s),
                       g.bm, g.bn, g.vec, g.stages, name);
    return 0;
}

/* gemm.cuh's choice: mma m16n8k16 for 16-bit storage from sm_80, else SIMT. */
static const char *kernel_gemm_path(const kernel_spec *s, int sm) {
    return sm >= 80 && s->dtype != PLAN_DTYPE_F32 ? "mma.m16n8k16" : "simt";
}

const kernel_kind_desc kernel_gemm_desc = {
    .kind = KERNEL_KIND_GEMM,
    .name = "gemm",
    .entry = kernel_gemm_entry,
    .source = kernel_gemm_source,
    .path = kernel_gemm_path,
};
