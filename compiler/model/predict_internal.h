/*
 * predict_internal — what the model's core (predict.c) and its tables
 * (predict_kinds.c) share: the work of one step, as the core turns it into
 * time.
 */
#ifndef BERTC_PREDICT_INTERNAL_H
#define BERTC_PREDICT_INTERNAL_H

#include "plan_kernels.h"
#include "predict.h"

/* One step's work, as the core needs it. */
typedef struct predict_work {
    double flops;                /* the step's FLOPs (the plan's number) */
    double cta_flops;            /* FLOPs one CTA does, padding included (0: flops / ctas) */
    predict_unit unit;
    double weight_bytes;         /* of the step's minimum bytes, those in the weight blob */
    double act_bytes;            /* the rest: activations, the request block */
    double extra_bytes;          /* DRAM traffic beyond the minimum (split-K partial sums) */
    double l2_bytes;             /* bytes the CTAs pull from the L2 in all (a GEMM's operand slices, read
                                    once per tile that needs them; 0: not modelled for the kind) */
    double serial_bytes;         /* bytes one CTA moves after the parallel phase, alone (a split-K
                                    reduction by the last CTA to arrive, a LayerNorm tail) */
    long ctas;
    int threads;                 /* per CTA */
    int registers;               /* per thread; -1: unknown (no limit from registers) */
    int smem;                    /* shared memory per CTA, static + dynamic */
    int launches;                /* dependent launches (1, or 2 with a separate reduction) */
    int tile_m, tile_n, split_k;
    double smem_flops_per_byte;  /* tensor-core GEMMs: FLOPs per byte a warp reads from shared memory, from its
                                    warp tile (2 wm wn / ((wm + wn) es)); 0: no such limit modelled */
} predict_work;

/*
 * One row per kernel kind (predict_kinds.c).  What a new kind must supply:
 *
 *   unit    the arithmetic unit its kernels use when the image that runs
 *           was built for `image_sm` (75 for sm_75 or compute_75): the
 *           template's own choice, e.g. tensor cores only from 80 on and
 *           only for 16-bit storage;
 *   adjust  (may be NULL) work the step record does not show: per-CTA
 *           FLOPs with a tile's padding, partial-sum traffic of a split-K
 *           reduction, a second dependent phase, serial work after the
 *           parallel phase (serial_bytes: a last-arriver reduction, a
 *           LayerNorm tail).
 *
 * Everything else is generic and comes from the plan: CTAs, block size and
 * dynamic shared memory from the launch, registers and static shared
 * memory from ptxas's report, FLOPs and bytes from the step record, which
 * bytes are weights from the argument references.
 */
typedef struct predict_kind {
    predict_unit (*unit)(const kernel_spec *s, const kernel_geometry *g, int image_sm);
    void (*adjust)(const kernel_spec *s, const kernel_geometry *g, predict_work *w);
} predict_kind;

/* CTAs of `threads` threads, `registers` per thread (-1: unknown) and
 * `smem` bytes of shared memory that fit one SM (0: not even one). */
int predict_ctas_per_sm(const predict_gpu *g, int threads, int registers, int smem);

/* The row of a kind; NULL for a kind without one (predict_plan refuses it). */
const predict_kind *predict_kind_of(kernel_kind kind);

/* cuBLASLt's candidates: tiles of the column-major product (bm along m,
 * bn along n) with their warps, and split-K factors. */
typedef struct predict_tile {
    int bm, bn, warps;
} predict_tile;

int predict_gemm_tiles(const predict_tile **tiles);
int predict_gemm_splits(const int **splits);
/* The work of a cuBLASLt step under one candidate (tile, split). */
void predict_gemm_work(const sched_gemm *g, const predict_tile *t, int split, int image_sm, const predict_gpu *gpu,
                       predict_work *w);

#endif
