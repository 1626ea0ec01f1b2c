/*
 * predict — the performance model: how long each step of a plan would take
 * on a given GPU, from the GPU's published specifications and what the
 * plan records, with two constants fitted once against TensorRT's
 * published BERT latencies (docs/performance-model.md has the whole model,
 * its inputs, the fit and its limits; `bertc inspect PLAN --predict GPU`
 * prints it).
 *
 * Per step, with C CTAs of w warps, R CTAs resident per SM (from the
 * registers and shared memory ptxas recorded for the image that GPU runs,
 * and the block size), on a GPU of S SMs at clock f:
 *
 *     waves   = ceil(C / (S * R'))          R' = min(R, ceil(C / S))
 *     math    = waves * R' * (F / C) / (peak_per_SM * eta * min(1, R' * w / 4))
 *     memory  = B_dram / (bandwidth * min(1, C / S))
 *     serial  = B_serial / (L2_per_SM * f)
 *     step    = K / f + max(math, memory) + serial
 *
 * F is the step's FLOPs on the unit it uses (tensor cores, the warp-level
 * mma.sync rate, or the CUDA cores), B_dram the bytes it must take from
 * DRAM: its weights, less the share the L2 can keep across requests, and
 * its activations only when the bucket's arena does not fit in the L2.
 * B_serial is what one CTA moves alone after the parallel phase (the
 * last-arriver reduction of a split-K kernel, a LayerNorm tail over whole
 * rows), at one SM's share of the L2 bandwidth.
 * K (cycles per dependent launch: the launch gap, the first loads and the
 * tail) and eta (the share of the peak a full tile reaches) are the two
 * fitted constants.  cuBLASLt picks its algorithm at run time, so a
 * cuBLASLt step is modelled as the best of a table of plausible tiles and
 * split-K factors (predict_kinds.c); bertc's own kernels are modelled from
 * their recorded launch geometry through a table with one row per kernel
 * kind (predict_kinds.c says what a new kind must supply).
 *
 * A bucket's prediction is the sum of its steps: the device time of one
 * request, excluding the host-device copies (TensorRT's published figures
 * exclude them too).
 */
#ifndef BERTC_PREDICT_H
#define BERTC_PREDICT_H

#include <stdio.h>

#include "diag.h"
#include "plan.h"

/* A GPU as the model sees it: published specifications (predict_gpus.c). */
typedef struct predict_gpu {
    const char *name;            /* "a100": what --predict takes */
    const char *part;            /* "A100-SXM4-40GB" */
    int major, minor;            /* compute capability: which image it runs */
    int sms;
    double clock_mhz;            /* boost clock */
    double dram_gbs;             /* DRAM bandwidth, GB/s */
    double l2_mb;
    double tensor_tflops;        /* dense FP16/BF16 with FP32 accumulation */
    double warp_mma_share;       /* share of tensor_tflops that mma.sync reaches (wgmma/tcgen05 GPUs < 1) */
    int bf16_tensor;             /* BF16 on the tensor cores */
    int fp32_lanes;              /* FP32 lanes per SM */
    int regs_per_sm;
    int smem_per_sm;             /* bytes CTAs may use */
    int smem_reserved_per_cta;   /* bytes the system keeps per CTA */
    int max_ctas_per_sm, max_threads_per_sm;
    const char *sources;         /* where the numbers come from */
} predict_gpu;

/* The fitted constants (tools/fit_perf_model.py fits them), and the one
 * assumption the calibration changes. */
typedef struct predict_constants {
    double launch_cycles;        /* K: cycles of the boost clock per dependent launch */
    double efficiency;           /* eta: share of the peak a full tile reaches */
    int tensor_units;            /* 1: every kernel that has a tensor-core path anywhere runs its FLOPs on the
                                    tensor cores at the full rate, on every GPU — how TensorRT's kernels run,
                                    which the calibration against its figures assumes; 0: the plan's own */
} predict_constants;

typedef enum predict_unit {
    PREDICT_UNIT_TENSOR,         /* the library's tensor-core path: the full dense peak */
    PREDICT_UNIT_WARP_MMA,       /* mma.sync: warp_mma_share of the peak */
    PREDICT_UNIT_SIMT,           /* FP32 CUDA cores */
} predict_unit;

typedef struct predict_step {
    double us;                   /* launch_us + max(math_us, memory_us) + serial_us */
    double launch_us, math_us, memory_us;
    double serial_us;            /* work one CTA does alone after the parallel phase (0 for most kinds) */
    int launches;                /* dependent launches (a split-K reduction adds one) */
    long ctas;
    int threads;
    int ctas_per_sm;             /* R: resident CTAs per SM the resources allow */
    int waves;
    double occupancy;            /* resident warps / the SM's maximum, at R */
    predict_unit unit;
    double flops, dram_bytes, weight_bytes;
    int registers;               /* per thread (-1: no report for this GPU's image) */
    int tile_m, tile_n, split_k; /* cuBLASLt: the tile modelled; bertc's GEMM family: its own; others 0 */
} predict_step;

typedef struct predict_bucket {
    int seq_len;                 /* a length bucket's rows; a token bucket's tokens */
    int max_seqs;                /* 0: a length bucket (one request); else a token bucket's requests at most */
    int nsteps;
    predict_step *steps;
    double us;                   /* sum over the steps */
    double floor_us;             /* the DRAM bytes of the weights at full bandwidth */
    double launch_us, memory_bound_us, math_bound_us;   /* how the sum splits */
    int launches;
    double l2_weight_share;      /* share of the weights the L2 keeps across requests */
} predict_bucket;

typedef struct predict_result {
    const predict_gpu *gpu;
    predict_constants k;
    int image;                   /* the plan's image this GPU runs (-1: none) */
    int stats_image;             /* the CUBIN whose ptxas numbers are used (-1: none) */
    int variant;                 /* the plan's step list this GPU runs (plan_variant_for) */
    const sched_bucket *sched;   /* its buckets: buckets[b] models sched[b] */
    int nbuckets;
    predict_bucket *buckets;
} predict_result;

/* ---- the GPU table (predict_gpus.c) */
int predict_gpu_count(void);
const predict_gpu *predict_gpu_at(int i);
/* By name ("a100"); NULL if unknown. */
const predict_gpu *predict_gpu_find(const char *name);
/* "t4, a10, l4, l40s, a100, h100, h200, b200" */
const char *predict_gpu_names(void);

/* ---- the model (predict.c) */
void predict_constants_default(predict_constants *k);
/* "launch_cycles=N,efficiency=X,units=plan|tensor" over the defaults; -1
 * with d set if malformed. */
int predict_constants_parse(const char *s, predict_constants *k, diag *d);
int predict_plan(const plan *p, const predict_gpu *g, const predict_constants *k, predict_result *r, diag *d);
void predict_result_free(predict_result *r);
const char *predict_unit_name(predict_unit u);
/* A step's template name: the kernel kind's, or "cublaslt". */
const char *predict_step_template(const plan *p, const sched_step *s);

/*
 * One step the lowering is weighing, before any plan exists: one of
 * bertc's kernels (`spec`, launched with `dims`) or a cuBLASLt GEMM
 * (`spec` NULL, `gemm`), with its FLOPs and minimum bytes, on a GPU that
 * runs the image of `image_sm`.  ptxas has not run yet, so `registers` is
 * the caller's estimate (<= 0: no limit from registers) and so is
 * `smem_static`, the static shared memory the kernel's template declares.  The L2 is taken to hold the step's
 * activations and the share `l2_share` of its weights (predict_l2_share
 * of the model's weights: what a plan's bucket gets, less its arena) —
 * the same for every candidate of a step, so candidates compare on what
 * differs: launches, tiles, waves, partial sums, serial tails.
 */
typedef struct predict_candidate {
    const kernel_spec *spec;
    kernel_launch_dims dims;
    int registers;
    int smem_static;             /* bytes of static shared memory (the template's bound) */
    const sched_gemm *gemm;
    int image_sm;                /* 75 for sm_75, ... */
    double flops, weight_bytes, min_bytes;
    double l2_share;             /* share of the weight bytes the L2 serves (0 ... 1) */
} predict_candidate;

/* The share of `weights` bytes (a request's) the GPU's L2 keeps from one
 * request to the next while `arena` bytes of activations live there too. */
double predict_l2_share(const predict_gpu *g, double weights, double arena);

/* Bytes of FP32 partial sums (and gemm_ln's pre-LayerNorm sums) a tiled
 * GEMM_SPLITK / GEMM_LN spec keeps in the arena while it runs (0 for any
 * other kind): what the model counts, written and read, as activations. */
double predict_partial_bytes(const kernel_spec *s);

/* The modelled step; -1 with d set if a CTA does not fit the GPU. */
int predict_candidate_step(const predict_gpu *g, const predict_constants *k, const predict_candidate *c,
                           predict_step *out, diag *d);

/* ---- output (predict_out.c, predict_svg.c) */
/* One JSON object for one GPU (bucket < 0: every bucket, else that seq_len). */
void predict_write_json(FILE *f, const plan *p, const predict_result *r, int bucket);
void predict_write_text(FILE *f, const plan *p, const predict_result *r, int bucket);
/* The modelled timeline of one bucket as an SVG picture, atomically to path. */
int predict_write_svg(const char *path, const plan *p, const predict_result *r, int bucket, diag *d);

#endif
