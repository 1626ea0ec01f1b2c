/*
 * lower — the fused graph to a plan: its signature, its weights and one
 * schedule per sequence-length bucket (plan_types.h).
 *
 * Lowering is the last step that knows about the graph, and the place
 * where the IR's vocabulary is mapped onto the plan's own (ir_dtype,
 * ir_act, ir_pool_mode -> plan_dtype, plan_act, plan_pool_mode), so the
 * runtime never sees the IR.  It does four things, each in one file:
 *
 *   weights   (lower_weights.c) every WEIGHT/CONST node the schedule reads
 *             is converted to the plan precision and laid out in one blob,
 *             each tensor 256-byte aligned, in graph order (deterministic).
 *             Linear weights stay [N, K] row-major, which is exactly what a
 *             transa = T cuBLASLt GEMM (and the GEMM kernel) wants: nothing
 *             is transposed at inference.
 *   steps     (lower_steps.c) each remaining op becomes one kernel launch or
 *             one cuBLASLt GEMM; reshapes and slices become *views* (a
 *             buffer, an offset and a row stride) and cost nothing.  An op
 *             with no kernel is an error naming the node and its YAML line.
 *   arena     (lower_arena.c) activation buffers get offsets in one arena
 *             from their live ranges (first fit, 256-byte aligned,
 *             deterministic); outputs live to the end.
 *   signature (lower.c) what the runtime checks requests against: hidden
 *             size, vocabulary bounds, which inputs the graph reads and the
 *             defaults of the optional ones.
 *
 * Token buckets (packed batches, plan_types.h) are lowered from the same
 * graph with the sequence axis bound to the bucket's total tokens: every
 * row-wise op lowers exactly as in a length bucket, and the few that see
 * sequences take their packed forms (embed_ln's positions, attention per
 * sequence, pool per sequence; a slice of the first token becomes a cls
 * pool, one row per sequence).  Activations that hold one row per request
 * alone (the [CLS] row, a pooled vector, the pooler's GEMM on it) have a
 * row per sequence in a token bucket: max_seqs rows.
 *
 * Kernels are collected in the plan's kernel table, shared by all buckets:
 * specs with the same entry name share an entry, so e.g. the LayerNorm
 * kernel of every bucket is compiled once.  Lowering records each kernel's
 * entry name and spec only; its source is written by the next stage
 * (kernels_generate).
 */
#ifndef BERTC_LOWER_H
#define BERTC_LOWER_H

#include "diag.h"
#include "ir.h"
#include "plan.h"
#include "predict.h"
#include "weights.h"

typedef struct lower_options {
    plan_dtype precision;        /* storage of weights and activations: F32, F16 or BF16 */
    plan_fusion fusion;          /* BASELINE: cuBLASLt + the GEMM kind as before; DEFAULT: GEMM_LN,
                                    GEMM_SPLITK (lower_gemm.c) */
    const int *buckets;          /* ascending sequence lengths, each <= the graph's max_seq_len */
    int nbuckets;
    const int *token_buckets;    /* ascending total tokens of packed batches (none: ntoken_buckets 0) */
    int ntoken_buckets;
    int max_batch;               /* sequences per packed batch at most (each token bucket: min(this, tokens)) */
    const int *sms;              /* the plan's CUBIN architectures (75 for sm_75, ...): the GPUs the GEMM
                                    choices are modelled on (lower_gemm.c); none: the A100 and the H100 */
    int nsms;
    const char *tune;            /* comma-separated GPUs of the model's table (--tune) the GEMM choices are
                                    for, each served by `sms` (lower_gemm_tune_check), or "all" of those:
                                    a step list per compute capability among them (lower.c; plan.h,
                                    variants); NULL: one list, the compromise over all `sms` serve */
} lower_options;

/*
 * Lowers the fused graph `g` (weights from `w`) into `p`, which must be
 * plan_init'ed: signature, precision, max_seq_len, weights (owned), the
 * kernel table (entry, spec, nargs; no source yet), one bucket per length
 * and the largest arena.  On failure p may hold part of it; plan_free
 * releases that.
 */
int lower_model(const ir_graph *g, const weights *w, const lower_options *o, plan *p, diag *d);

/*
 * The compiler's choices for bertc's own GEMMs (lower_gemm.c), asked of
 * the performance model over the GPUs a plan serves.  A chooser lives for
 * one lowering and remembers its answers.
 */
#define LOWER_GEMM_MAX_GPUS 16
/* The share of a GPU's L2 a candidate's FP32 partial sums may fill before
 * a tuned chooser (--tune) charges them their DRAM round trip on that GPU. */
#define LOWER_GEMM_L2_PARTIALS 0.5
/* A tiling whose kernel text the plan has already (another bucket's,
 * another step list's) wins over a new text unless the new one scores
 * more than this much better: a new text is a new kernel to compile. */
#define LOWER_GEMM_SHARE 0.03
#define LOWER_GEMM_MEMO 32

typedef struct lower_gemm_memo {
    kernel_spec in, out;
    double us[LOWER_GEMM_MAX_GPUS];
} lower_gemm_memo;

typedef struct lower_gemm_chooser {
    predict_constants k;
    int ngpus;
    const predict_gpu *gpus[LOWER_GEMM_MAX_GPUS];
    int image_sm[LOWER_GEMM_MAX_GPUS];   /* the architecture of the image each runs (75, 80, 86, 90, ...) */
    double l2_share[LOWER_GEMM_MAX_GPUS];   /* share of the model's weights each one's L2 keeps */
    int charge_partials;         /* --tune: partials past LOWER_GEMM_L2_PARTIALS of a GPU's L2 pay DRAM there */
    /* Whether a tiled spec's kernel text is in the plan already (lower.c;
     * NULL: none is): see LOWER_GEMM_SHARE. */
    int (*known)(void *ctx, const kernel_spec *s);
    void *known_ctx;
    lower_gemm_memo memo[LOWER_GEMM_MEMO];
    int nmemo, next;
} lower_gemm_chooser;

/* The GPUs of the model's table that run one of the architectures `sms`
 * (75 for sm_75, ...; none: the A100 and the H100) — of them only those
 * `tune` names, when it is not NULL (checked by lower_gemm_tune_check) —
 * for a model of `weight_bytes` bytes of weights (0: taken as too large
 * for any L2). */
void lower_gemm_chooser_init(lower_gemm_chooser *c, const int *sms, int nsms, const char *tune, double weight_bytes);
/* Keeps of c's GPUs those of compute capability cc (major * 10 + minor):
 * --tune's step list for that capability (lower.c). */
void lower_gemm_chooser_keep_cc(lower_gemm_chooser *c, int cc);
/* --tune LIST: every name a GPU of the model's table, none twice, each
 * run by one of the architectures `sms` (any, when nsms is 0: a plan for
 * the emulated device only); 0, or -1 with d saying which name and why. */
int lower_gemm_tune_check(const char *tune, const int *sms, int nsms, diag *d);
/*
 * The tiling of a GEMM_SPLITK or GEMM_LN spec (every other field set; a
 * positive `splits` on entry caps the splits) that the launch contract
 * accepts and the model scores best, written into s, with its modelled µs
 * per GPU of the chooser into us (may be NULL); -1 with d set when none is
 * accepted (the caller falls back).
 */
int lower_gemm_tiling(lower_gemm_chooser *c, kernel_spec *s, double *us, diag *d);
/* 1 when a GEMM-kind spec scores better than the best GEMM_SPLITK tiling
 * of the same product (modelled at splitk_us per GPU). */
int lower_gemm_plain_wins(const lower_gemm_chooser *c, const kernel_spec *plain, const double *splitk_us);
/* 1 when a tiled GEMM_SPLITK without activation (modelled at own_us per
 * GPU) scores strictly better than the same product on cuBLASLt. */
int lower_gemm_own_wins(const lower_gemm_chooser *c, const kernel_spec *s, const double *own_us);
/* 1 when a tiled GEMM_LN (modelled at fused_us per GPU) scores at most as
 * the chain it replaces, a cuBLASLt GEMM and an ADD_LN; 0 when the chain wins. */
int lower_gemm_fuse_ln(const lower_gemm_chooser *c, const kernel_spec *ln, const double *fused_us);

#endif
