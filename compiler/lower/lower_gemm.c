/*
 * lower_gemm — the compiler's choices for bertc's own GEMMs, in one place
 * (lower_internal.h): whether a dense layer runs on cuBLASLt or on a
 * generated kernel, and the tile and split-K of a generated one.  The
 * performance model (bertc inspect --predict) is meant to replace the
 * cost function below; everything else asks only lower_gemm_tiling.
 *
 * The rule for the implementation (lower_steps.c applies it):
 *   - an epilogue cuBLASLt cannot compute with documented math (GELU erf or
 *     tanh, tanh) runs on a generated kernel at every fusion level;
 *   - a LINEAR_LN (dense layer + residual + LayerNorm, default fusion only)
 *     runs on GEMM_LN whenever the contract can serve it: one launch
 *     instead of a cuBLASLt GEMM and an ADD_LN kernel, and no activation
 *     round trip between them — worth a dependent launch (~2.5-3 µs)
 *     against a reduction tail of well under a microsecond;
 *   - everything else (QKV, relu FC1, plain projections) stays on cuBLASLt,
 *     whose tuned kernels and own split-K win where nothing is fused.
 *
 * The tiling.  At batch 1 every GEMM streams its weights once from HBM and
 * re-reads its operands from L2 once per tile that needs them; what limits
 * a small grid is how many bytes each SM pulls through its L2 port, and how
 * many of them its blocks keep in flight.  For a tile BM x BN and S splits
 * over K (M rows = the bucket, es bytes per element, kslice = K/S rounded
 * up to k-tiles), on a reference GPU of GEMM_SMS SMs:
 *
 *   ctas       = ceil(M/BM) * ceil(N/BN) * S
 *   bytes/cta  = (BM + BN) * kslice * es + (S > 1 ? BM*BN*4 : 0)      x and w slices, its partial
 *   per SM     = ceil(ctas / GEMM_SMS) blocks, of which min(that, resident) at once
 *   bandwidth  = min(L2_PER_SM, at-once * in-flight / LATENCY)          Little's law: a block keeps
 *                                                                       (stages - 1) k-tiles in flight
 *   main       = max(per SM * bytes/cta / bandwidth, per SM * 2*BM*BN*kslice / MMA_PER_SM)
 *   tail       = (S > 1 ? (S + 1) * BM*BN*4 : 0) / L2_PER_SM            the last arriver's reduction
 *              + (LayerNorm ? BM * N * (4 + es) / L2_PER_SM : 0)        the row block's normalisation
 *   cost       = max(main, weights / HBM) + tail
 *
 * A tiling whose grid fills the reference GPU (ctas >= GEMM_SMS) beats one
 * that does not (idle SMs leave their share of the bandwidth unused, and
 * the issue asks every step at s128 for a full wave); among equals the
 * cheapest wins (ties: the fewer splits, then the larger tile).  The
 * constants are an H100 SXM's (132 SMs, 3 TB/s HBM, about 80 GB/s of L2
 * per SM, ~0.8 µs of loaded memory latency, half of the 989 TFLOP/s dense
 * fp16 rate as what mma.sync reaches, up to 3 resident blocks of 128
 * threads as the registers allow): the GPU with the most SMs the issue
 * targets, so a grid that fills it fills an A100 too.  The serial tail is
 * what keeps BM small for GEMM_LN (one block normalises BM whole rows) and
 * S moderate (the last arriver reads S partials).
 */
#include <math.h>
#include <string.h>

#include "lower_internal.h"
#include "plan_kernels.h"

#define GEMM_SMS 132.0
#define GEMM_HBM_BPS 3.0e12
#define GEMM_L2_PER_SM_BPS 80.0e9
#define GEMM_LATENCY_S 0.8e-6
#define GEMM_MMA_PER_SM_FLOPS (0.5 * 989.0e12 / 132.0)
#define GEMM_SMEM_PER_SM (227.0 * 1024.0)
#define GEMM_MAX_RESIDENT 3.0
#define GEMM_MAX_SPLITS 32

/* Modelled µs of a checked GEMM_SPLITK / GEMM_LN spec (the formula above). */
static double lower_gemm_cost(const kernel_spec *s) {
    kernel_geometry g;
    diag d;
    diag_init(&d);
    if (kernel_geometry_of(s, &g, &d)) return 1e30;
    double es = plan_dtype_size(s->dtype), M = s->bucket, N = s->n, K = s->k;
    double bm = s->tile_m, bn = s->tile_n, S = s->splits, bk = 64.0 / es;
    double kslice = g.kts * bk;
    double ctas = ceil(M / bm) * ceil(N / bn) * S;
    double cta_bytes = (bm + bn) * kslice * es + (S > 1 ? bm * bn * 4 : 0);
    double per_sm = ceil(ctas / GEMM_SMS);
    double resident = fmin(per_sm, fmin(GEMM_MAX_RESIDENT, floor(GEMM_SMEM_PER_SM / g.smem)));
    double inflight = (g.stages - 1) * (bm + bn) * 64.0;
    double bw = fmin(GEMM_L2_PER_SM_BPS, resident * inflight / GEMM_LATENCY_S);
    double main = fmax(per_sm * cta_bytes / bw, per_sm * 2.0 * bm * bn * kslice / GEMM_MMA_PER_SM_FLOPS);
    double tail = (S > 1 ? (S + 1) * bm * bn * 4 : 0) / GEMM_L2_PER_SM_BPS;
    if (s->kind == KERNEL_KIND_GEMM_LN) tail += bm * N * (4 + es) / GEMM_L2_PER_SM_BPS;
    return (fmax(main, N * K * es / GEMM_HBM_BPS) + tail) * 1e6;
}

static int lower_gemm_full_wave(const kernel_spec *s) {
    double ctas = ceil((double)s->bucket / s->tile_m) * ceil((double)s->n / s->tile_n) * s->splits;
    return ctas >= GEMM_SMS;
}

int lower_gemm_tiling(kernel_spec *s, double *cost_us, diag *d) {
    static const int tms[] = {16, 32, 64, 128}, tns[] = {32, 64, 128};
    int found = 0;
    kernel_spec best = *s;
    double best_cost = 0;
    int ktiles = (s->k + 64 / plan_dtype_size(s->dtype) - 1) / (64 / plan_dtype_size(s->dtype));
    /* a caller may cap the splits (s->splits > 0 on entry): a plan with
     * token buckets asks for 1 (lower_steps.c, gemm_spec_of) */
    int max_splits = s->splits > 0 && s->splits < GEMM_MAX_SPLITS ? s->splits : GEMM_MAX_SPLITS;
    for (int a = 0; a < 4; a++) {
        /* a tile far taller than the rows only adds idle warps */
        if (a > 0 && tms[a - 1] >= s->bucket) break;
        for (int b = 0; b < 3; b++)
            for (int sp = 1; sp <= max_splits && sp <= ktiles; sp++) {
                kernel_spec t = *s;
                t.tile_m = tms[a];
                t.tile_n = tns[b];
                t.splits = sp;
                diag quiet;
                diag_init(&quiet);
                if (kernel_spec_check(&t, &quiet)) continue;
                double cost = lower_gemm_cost(&t);
                int full = lower_gemm_full_wave(&t), best_full = found && lower_gemm_full_wave(&best);
                int better = !found || full > best_full ||
                             (full == best_full &&
                              (cost < best_cost - 1e-9 ||
                               (fabs(cost - best_cost) <= 1e-9 &&
                                (sp < best.splits ||
                                 (sp == best.splits && t.tile_m * t.tile_n > best.tile_m * best.tile_n)))));
                if (better) {
                    best = t;
                    best_cost = cost;
                    found = 1;
                }
            }
    }
    if (!found) return diag_set(d, DIAG_CODE_INPUT, "no tiling of %s fits its launch contract", plan_kernel_kind_name(s->kind));
    *s = best;
    if (cost_us) *cost_us = best_cost;
    return 0;
}
