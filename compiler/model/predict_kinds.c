/*
 * predict_kinds — the per-kernel-kind part of the performance model
 * (predict_internal.h says what a row must supply), and the model of a
 * cuBLASLt step.
 *
 * Kernel kinds.  Each row states, in the model's terms, the choice its
 * template makes: the LayerNorm family and pooling run on the CUDA cores;
 * attention and the GEMM template use mma.sync for 16-bit storage from
 * sm_80 on (attention also on sm_75 for float16, m16n8k8; the GEMM's SIMT
 * path there, and for float32 — kernels_templates/gemm.cuh, attention.cuh);
 * a GEMM CTA computes its whole BM x BN tile over K, padding included.
 * bertc's split-K GEMM family (gemm_splitk.cuh) also uses m16n8k8 on sm_75
 * for float16; its row adds the split's share of K, the partials and the
 * serial tail (a last-arriver reduction, gemm_ln's LayerNorm).  A kind added to kernel_kind without a row
 * here makes `--predict` refuse the plan (test_predict checks every kind
 * has one), so the model never silently guesses.
 *
 * cuBLASLt.  The algorithm is chosen at run time by cuBLASLt's heuristic,
 * so the model takes the best of a set of plausible tiles — the shapes of
 * CUTLASS-style tensor-core kernels, 4 or 8 warps, 4 stages of 32-deep
 * K slices from sm_80 on (2 on sm_75) — with split-K factors up to 8.  A
 * split-K candidate writes and reads back FP32 partial sums and pays one
 * more dependent launch for the reduction.  Registers are estimated as the
 * tile's FP32 accumulators per thread plus 48 for addresses and fragments.
 */
#include "predict_internal.h"

/* FLOPs per byte of shared memory a warp tile of wm x wn reads. */
static double predict_warp_feed(double wm, double wn, double es) { return 2.0 * wm * wn / ((wm + wn) * es); }

static predict_unit predict_unit_simt(const kernel_spec *s, const kernel_geometry *g, int image_sm) {
    (void)s, (void)g, (void)image_sm;
    return PREDICT_UNIT_SIMT;
}

/* kernels_templates/attention.cuh: the tensor-core path when the geometry
 * chose it (16-bit, head_dim % 16, aligned): mma m16n8k16 from sm_80 on,
 * m16n8k8 on sm_75 for float16 (bfloat16 has no Turing tensor cores). */
static predict_unit predict_unit_attention(const kernel_spec *s, const kernel_geometry *g, int image_sm) {
    int tc = g->tc && (image_sm >= 80 || (image_sm >= 75 && s->dtype == PLAN_DTYPE_F16));
    return tc ? PREDICT_UNIT_WARP_MMA : PREDICT_UNIT_SIMT;
}

/* A block of qt query rows issues mma tiles of 16 rows per query group
 * (wq groups): at qt 8 half of every tile is padding, so the tensor cores
 * do 16 * wq / qt times the useful work. */
static void predict_adjust_attention(const kernel_spec *s, const kernel_geometry *g, predict_work *w) {
    (void)s;
    if (g->tc && g->qt > 0 && g->wq > 0 && 16 * g->wq > g->qt) w->flops *= (double)(16 * g->wq) / (double)g->qt;
}

/* kernels_templates/gemm.cuh: mma.sync for 16-bit storage from sm_80 on. */
static predict_unit predict_unit_gemm(const kernel_spec *s, const kernel_geometry *g, int image_sm) {
    (void)g;
    return plan_dtype_size(s->dtype) == 2 && image_sm >= 80 ? PREDICT_UNIT_WARP_MMA : PREDICT_UNIT_SIMT;
}

/* A CTA computes its whole tile over all of K. */
static void predict_adjust_gemm(const kernel_spec *s, const kernel_geometry *g, predict_work *w) {
    w->cta_flops = 2.0 * g->bm * g->bn * s->k;
    w->l2_bytes = (double)w->ctas * (g->bm + g->bn) * (double)s->k * plan_dtype_size(s->dtype);
    w->smem_flops_per_byte = predict_warp_feed(g->bm / 2.0, g->bn / 2.0, plan_dtype_size(s->dtype)); /* 2 x 2 warps */
    w->tile_m = g->bm;
    w->tile_n = g->bn;
}

/* kernels_templates/gemm_splitk.cuh (bertc_gsk_path): mma.sync for 16-bit
 * storage from sm_80 on, m16n8k8 for float16 on sm_75, else SIMT. */
static predict_unit predict_unit_gsk(const kernel_spec *s, const kernel_geometry *g, int image_sm) {
    (void)g;
    int tc = s->dtype == PLAN_DTYPE_F16 ? image_sm >= 75 : s->dtype == PLAN_DTYPE_BF16 && image_sm >= 80;
    return tc ? PREDICT_UNIT_WARP_MMA : PREDICT_UNIT_SIMT;
}

/*
 * gemm_splitk, gemm_ln: CTAs = ceil(n / tile_n) * ceil(rows / tile_m) *
 * splits (the launch); a CTA computes its tile over its split's k-tiles,
 * padding included (the step's FLOPs are 2MNK).  With splits > 1 every
 * split writes a float partial tile and the last CTA of a tile reads them
 * all back; gemm_ln also writes and reads its pre-LayerNorm sums.  Those
 * bytes live in the arena, so they count as activations (DRAM only where
 * the arena outgrows the L2).  What runs alone after the parallel phase
 * is serial: the last arriver's reduction of one tile (splits partials
 * read, the tile written) and gemm_ln's LayerNorm of one row block (tile_m
 * whole rows of float read, written in the storage type).
 */
/* The FP32 partial tiles (and gemm_ln's pre-LayerNorm sums) of geometry g in the arena. */
static double predict_gsk_partials(const kernel_spec *s, const kernel_geometry *g) {
    double tiles = (double)g->rowblocks * g->ntiles, ln = s->kind == KERNEL_KIND_GEMM_LN;
    return tiles * g->bm * g->bn * 4.0 * ((g->splits > 1 ? g->splits : 0) + ln);
}

double predict_partial_bytes(const kernel_spec *s) {
    kernel_geometry g;
    diag quiet;
    diag_init(&quiet);
    if ((s->kind != KERNEL_KIND_GEMM_SPLITK && s->kind != KERNEL_KIND_GEMM_LN) || kernel_geometry_of(s, &g, &quiet))
        return 0.0;
    return predict_gsk_partials(s, &g);
}

static void predict_adjust_gsk(const kernel_spec *s, const kernel_geometry *g, predict_work *w) {
    double es = plan_dtype_size(s->dtype), tile = (double)g->bm * g->bn * 4.0, ln = s->kind == KERNEL_KIND_GEMM_LN;
    w->cta_flops = 2.0 * g->bm * g->bn * (double)g->kts * (64.0 / es);
    w->l2_bytes = (double)w->ctas * (g->bm + g->bn) * (double)g->kts * 64.0;
    w->smem_flops_per_byte = predict_warp_feed((double)g->bm / g->wm, (double)g->bn / (4 / (g->wm * g->kgroups)), es);
    w->tile_m = g->bm;
    w->tile_n = g->bn;
    w->split_k = g->splits;
    w->act_bytes += 2.0 * predict_gsk_partials(s, g);
    w->serial_bytes = (g->splits > 1 ? g->splits * tile + g->bm * g->bn * es : 0.0) +
                      ln * g->bm * (double)s->n * (4.0 + es);
}

static const predict_kind predict_kind_simt = {predict_unit_simt, NULL};
static const predict_kind predict_kind_attention = {predict_unit_attention, predict_adjust_attention};
static const predict_kind predict_kind_gemm = {predict_unit_gemm, predict_adjust_gemm};
static const predict_kind predict_kind_gsk = {predict_unit_gsk, predict_adjust_gsk};

/* One row per kind: a new kind adds one line (and, if its template has a
 * rule of its own, its functions above). */
static const predict_kind *const predict_kinds[KERNEL_KIND_COUNT] = {
    [KERNEL_KIND_EMBED_LN] = &predict_kind_simt,
    [KERNEL_KIND_ADD_LN] = &predict_kind_simt,
    [KERNEL_KIND_ATTENTION] = &predict_kind_attention,
    [KERNEL_KIND_GEMM] = &predict_kind_gemm,
    [KERNEL_KIND_POOL] = &predict_kind_simt,
    [KERNEL_KIND_GEMM_SPLITK] = &predict_kind_gsk,
    [KERNEL_KIND_GEMM_LN] = &predict_kind_gsk,
};

const predict_kind *predict_kind_of(kernel_kind kind) {
    return (unsigned)kind < KERNEL_KIND_COUNT ? predict_kinds[kind] : NULL;
}

/* ------------------------------------------------------------ cuBLASLt */

static const predict_tile predict_tiles[] = {
    {256, 128, 8}, {128, 256, 8}, {128, 128, 4}, {128, 64, 4}, {64, 128, 4}, {64, 64, 4},
};
static const int predict_splits[] = {1, 2, 3, 4, 6, 8};

int predict_gemm_tiles(const predict_tile **tiles) {
    *tiles = predict_tiles;
    return (int)(sizeof predict_tiles / sizeof predict_tiles[0]);
}

int predict_gemm_splits(const int **splits) {
    *splits = predict_splits;
    return (int)(sizeof predict_splits / sizeof predict_splits[0]);
}

static long predict_ceil_div(long a, long b) { return (a + b - 1) / b; }

void predict_gemm_work(const sched_gemm *g, const predict_tile *t, int split, int image_sm, const predict_gpu *gpu,
                       predict_work *w) {
    int es = plan_dtype_size(g->ab_type), stages = image_sm >= 80 ? 4 : 2;
    long kslice = predict_ceil_div((long)g->k, split);
    w->ctas = predict_ceil_div((long)g->m, t->bm) * predict_ceil_div((long)g->n, t->bn) * split * g->batch_count;
    w->threads = 32 * t->warps;
    w->registers = t->bm * t->bn / w->threads + 48;
    if (w->registers > 255) w->registers = 255;
    w->smem = stages * (t->bm + t->bn) * 32 * es;
    w->cta_flops = 2.0 * t->bm * t->bn * (double)kslice;
    w->l2_bytes = (double)w->ctas * (t->bm + t->bn) * (double)kslice * es;
    w->smem_flops_per_byte = predict_warp_feed(t->bm / 2.0, t->bn / (t->warps / 2.0), es); /* 2 x warps/2 */
    w->extra_bytes = split > 1 ? 2.0 * 4.0 * (double)g->m * (double)g->n * split * g->batch_count : 0.0;
    w->launches = split > 1 ? 2 : 1;
    w->tile_m = t->bm;
    w->tile_n = t->bn;
    w->split_k = split;
    int tensor = g->ab_type == PLAN_DTYPE_F16 || (g->ab_type == PLAN_DTYPE_BF16 && gpu->bf16_tensor);
    w->unit = tensor ? PREDICT_UNIT_TENSOR : PREDICT_UNIT_SIMT;
}
