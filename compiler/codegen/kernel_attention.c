/*
 * kernel_attention — the text of attention.cuh's instantiations.
 *
 * The template streams keys through shared memory with an online softmax
 * (see its comment); the path (tensor cores or SIMT), the query and key
 * tiles and the shared memory are the launch contract's choices
 * (runtime/plan/plan_kernels.c).  Here they become template arguments, with
 * the launch bounds that let ptxas keep the tensor-core path's state in
 * registers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

/*
 * Launch bounds of the tensor-core path: 256 threads' worth of blocks per
 * SM, so ptxas may use up to 255 registers — the S tile (32 floats), the
 * O accumulators (head_dim / 2) and Q's fragments (head_dim / 4) are all
 * live across the key loop, and at 128 registers head_dim 64 spills.
 */
static int kernel_attention_tc_min_blocks(int nw) { return 256 / (32 * nw); }

static int kernel_attention_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    if (kernel_entry_printf(buf, cap, "attention", d, "bertc_attention_%s_s%d_h%d_d%d_c%08x_ld%d_q%d_k%d_v%d_o%d",
                            kernel_dtype_tag(s->dtype), s->bucket, s->heads, s->head_dim,
                            kernel_float_bits(s->scale), s->qkv_ld, s->q_off, s->k_off, s->v_off, s->ctx_ld))
        return -1;
    size_t n = strlen(buf);
    return s->bias_ld ? kernel_entry_printf(buf + n, cap - n, "attention", d, "_b%d", s->bias_ld) : 0;
}

static int kernel_attention_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_geometry g;
    if (kernel_geometry_of(s, &g, d)) return -1;
    const char *ty = kernel_dtype_cxx(s->dtype);
    uint32_t scale_log2e = kernel_float_bits((float)((double)s->scale * 1.4426950408889634074));

    kernel_text_printf(t,
                       "// bertc template=attention dtype=%s bucket=%d heads=%d head_dim=%d scale=%.9g qkv_ld=%d "
                       "q_off=%d k_off=%d v_off=%d ctx_ld=%d bias_ld=%d\n",
                       plan_dtype_name(s->dtype), s->bucket, s->heads, s->head_dim, (double)s->scale, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld, s->bias_ld);
    kernel_text_printf(t,
                       "// geometry: %s, %d warps, %d query rows x %d-key tiles per block, %u bytes of dynamic "
                       "shared memory, %d-element loads\n",
                       g.tc ? "tensor cores (SIMT passes on sm_75)" : "SIMT", g.nw, g.qt, g.kt, g.smem, g.vec);
    if (kernel_text_template(t, "bertc_device.cuh", d)) return -1;
    if (kernel_text_template(t, "attention.cuh", d)) return -1;
    kernel_text_printf(t,
                       "\nextern \"C\" __global__ void __launch_bounds__(%d, %d) %s(%s *ctx, const int *req, "
                       "const %s *qkv, const %s *bias) {\n"
                       "    bertc_attention<%s, %d, %d, %d, %d, %d, %d, %d, %s, %d, %d, %d, %d, %d>(ctx, req, qkv, bias, "
                       "__int_as_float((int)0x%08xu));\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       32 * g.nw, g.tc ? kernel_attention_tc_min_blocks(g.nw) : kernel_min_blocks(32 * g.nw), name, ty, ty, ty, ty, s->bucket, s->head_dim, s->qkv_ld,
                       s->q_off, s->k_off, s->v_off, s->ctx_ld, g.tc ? "true" : "false", g.nw, g.qt, g.kt, g.vec,
                       s->bias_ld, scale_log2e, name);
    return 0;
}

const kernel_kind_desc kernel_attention_desc = {
    .kind = KERNEL_KIND_ATTENTION,
    .name = "attention",
    .entry = kernel_attention_entry,
    .source = kernel_attention_source,
};
