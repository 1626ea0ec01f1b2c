/*
 * kernel_gemm — geometry and instantiation of gemm.cuh.
 *
 * At batch 1 the GEMMs of an encoder are short and wide (M = the sequence,
 * 32..512; N and K = 384..4096), so most of their time is streaming the
 * weights, and what matters is keeping every SM busy.  The block tile is
 * therefore the largest of 64x128, 64x64, 32x64, 32x32 that still gives
 * at least KERNEL_GEMM_TARGET_BLOCKS blocks over the bucket (an H100 has
 * 132 SMs, an A100 108), falling back to the smallest; a bucket of 32 rows
 * never uses 64-row tiles.  Every tile is four warps; its shared memory is
 * a ring of stages of 80 bytes per row of x and w, as many stages (2..6)
 * as fit in 48 KiB: a 32x32 tile keeps five k-tiles (20 KiB) in flight,
 * which is what streams weights at full bandwidth with one block per SM.
 *
 * The load width is the widest (<= 16 bytes) dividing K and x_ld, so the
 * 16-byte cp.async path applies whenever the sizes allow and awkward ones
 * (K = 97) still run, element by element.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_util.h"

typedef struct kernel_gemm_geom {
    int bm, bn;                    /* block tile */
    int vec;                       /* elements per global load */
    int stages;                    /* shared-memory ring depth */
    unsigned smem;
} kernel_gemm_geom;

#define KERNEL_GEMM_TARGET_BLOCKS 128
/* Two resident blocks per SM are plenty for a tile that keeps 32 KiB in
 * flight, and leave ptxas 255 registers: the SIMT path of a 64x128 tile
 * (sm_75's 16-bit GEMM) holds 64 accumulators plus 16-bit unpacking. */
#define KERNEL_GEMM_MIN_BLOCKS 2
#define KERNEL_GEMM_MAX_STAGES 6

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

static int kernel_gemm_check(const kernel_spec *s, diag *d) {
    if (s->n < 1 || s->k < 1 || s->n > (1 << 20) || s->k > (1 << 20))
        return diag_set(d, DIAG_CODE_INPUT, "kernel gemm: n %d, k %d outside 1..%d", s->n, s->k, 1 << 20);
    if (s->x_ld < s->k || s->out_ld < s->n || (s->has_residual && s->res_ld < s->n))
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "kernel gemm: leading dimensions x_ld %d, out_ld %d, res_ld %d too small for n %d, k %d",
                        s->x_ld, s->out_ld, s->res_ld, s->n, s->k);
    if (!kernel_gemm_act_cxx(s))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel gemm: unknown activation %d", (int)s->act);
    return 0;
}

static int kernel_gemm_geom_of(const kernel_spec *s, kernel_gemm_geom *g, diag *d) {
    (void)d;
    static const int tiles[][2] = {{64, 128}, {64, 64}, {32, 64}, {32, 32}};
    int ntiles = (int)(sizeof tiles / sizeof tiles[0]);
    int pick = ntiles - 1;
    for (int i = 0; i < ntiles; i++) {
        if (tiles[i][0] > 32 && s->bucket <= 32) continue;
        if (kernel_ceil_div(s->bucket, tiles[i][0]) * kernel_ceil_div(s->n, tiles[i][1]) >= KERNEL_GEMM_TARGET_BLOCKS) {
            pick = i;
            break;
        }
    }
    g->bm = tiles[pick][0];
    g->bn = tiles[pick][1];
    int vals[2] = {s->k, s->x_ld};
    g->vec = kernel_vec_elems(kernel_dtype_size(s->dtype), vals, 2);
    /* as many 80-byte-row stages as fit the no-opt-in shared memory, 2..6,
     * and no more than the k-tiles can fill (one more than their number) */
    int stage_bytes = (g->bm + g->bn) * 80;
    int ktiles = kernel_ceil_div(s->k, 64 / kernel_dtype_size(s->dtype));
    g->stages = (int)(KERNEL_SMEM_NO_OPTIN / (unsigned)stage_bytes);
    if (g->stages > KERNEL_GEMM_MAX_STAGES) g->stages = KERNEL_GEMM_MAX_STAGES;
    if (g->stages > ktiles + 1) g->stages = ktiles + 1;
    if (g->stages < 2) g->stages = 2;
    g->smem = (unsigned)(g->stages * stage_bytes);
    return 0;
}

static int kernel_gemm_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    kernel_gemm_geom g;
    if (kernel_gemm_geom_of(s, &g, d)) return -1;
    dims->grid[0] = (unsigned)kernel_ceil_div(s->n, g.bn);
    dims->grid[1] = (unsigned)kernel_ceil_div(s->bucket, g.bm);
    dims->grid[2] = 1;
    dims->block[0] = 128;
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = g.smem;
    return 0;
}

static int kernel_gemm_entry(const kernel_spec *s, char *buf, size_t cap, diag *d) {
    return kernel_entry_printf(buf, cap, "gemm", d, "bertc_gemm_%s_s%d_n%d_k%d_x%d_o%d_r%d_b%d_%s",
                               kernel_dtype_tag(s->dtype), s->bucket, s->n, s->k, s->x_ld, s->out_ld,
                               s->has_residual ? s->res_ld : 0, s->has_bias ? 1 : 0,
                               s->has_act ? plan_act_name(s->act) : "none");
}

static int kernel_gemm_source(const kernel_spec *s, const char *name, kernel_text *t, diag *d) {
    kernel_gemm_geom g;
    if (kernel_gemm_geom_of(s, &g, d)) return -1;
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
                       "const %s *x, const %s *w, const %s *bias, const %s *residual) {\n"
                       "    bertc_gemm<%s, %d, %d, %d, %d, %d, %d, %s, %s, %s, %d, %d, %d, %d>(out, req, x, w, bias, "
                       "residual);\n"
                       "}\n"
                       "BERTC_KERNEL_EXPORT(%s)\n",
                       KERNEL_GEMM_MIN_BLOCKS, name, ty, ty, ty, ty, ty, ty, s->bucket, s->n, s->k, s->x_ld, s->out_ld, res_ld,
                       s->has_bias ? "true" : "false", s->has_residual ? "true" : "false", kernel_gemm_act_cxx(s),
                       g.bm, g.bn, g.vec, g.stages, name);
    return 0;
}

const kernel_kind_desc kernel_gemm_desc = {
    .kind = KERNEL_KIND_GEMM,
    .name = "gemm",
    .nargs = 6,
    .check = kernel_gemm_check,
    .dims = kernel_gemm_dims,
    .entry = kernel_gemm_entry,
    .source = kernel_gemm_source,
};
