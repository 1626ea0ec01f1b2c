/*
 * plan_kernels — the launch contract of every kernel kind: what a
 * kernel_spec must satisfy, the geometry it is built and launched with,
 * and the memory each of its arguments touches.
 *
 * The compiler and the runtime both need this, and it must be the same
 * code for both.  The compiler's generators (compiler/codegen/kernel_*.c)
 * write each template's instantiation from kernel_geometry_of and record
 * kernel_launch_dims_of in the schedule; the plan reader recomputes both
 * from the spec it has checked and refuses a launch whose dimensions
 * differ, or whose argument references would let the kernel read or write
 * outside their buffers (a plan whose checksums are valid can still have
 * been made by someone else: docs/security.md).  A kernel only ever
 * touches the extents below — its rows are the spec's bucket, its columns
 * the spec's sizes — so checking them at load is what makes every launch
 * of a plan that reads stay inside its buffers.
 *
 * Geometry is part of the contract because the text is specialised on it:
 * a tile size in the launch must be the tile size compiled into the
 * kernel, or it would index past its shared memory.
 */
#ifndef BERTC_PLAN_KERNELS_H
#define BERTC_PLAN_KERNELS_H

#include <stdint.h>

#include "diag.h"
#include "plan_types.h"

#define KERNEL_SMEM_NO_OPTIN 49152u /* dynamic shared memory usable without cuFuncSetAttribute */
/* Static shared memory of a GEMM_SPLITK / GEMM_LN kernel, at most (the
 * arrival flag of gemm_splitk.cuh; ptxas reports 16 bytes on every arch).
 * The lowering chooses tiles before ptxas runs and counts it: at an
 * SM's limit 16 bytes round up to a 128-byte allocation unit and can cost
 * a resident CTA (4 x 40 KB rings fit an A100's 164 KB, 4 x (40 KB +
 * 128 B) do not).  tests/kernels/test_kernels_compile.c checks the bound. */
#define KERNEL_GSK_SMEM_STATIC 16

typedef struct kernel_geometry {
    kernel_kind kind;
    int vec;                       /* elements per vector load */
    /* EMBED_LN, ADD_LN */
    int threads;                   /* threads per row (LN: 32, a warp, or a block); POOL: block size */
    int rows;                      /* LN: rows per block */
    /* ATTENTION */
    int tc;                        /* tensor-core path (16-bit, head_dim % 16 == 0, aligned) */
    int nw;                        /* warps per block */
    int qt, kt;                    /* query rows per block, keys per shared-memory tile */
    int wq, wk;                    /* tensor cores: warps over 16-row query groups x over key slices */
    int pt, skt;                   /* SIMT: query rows per pass, keys per tile */
    int nqtiles;                   /* packed: query tiles in use (1..4), ascending in qtiles[] */
    int qtiles[4];                 /* packed: each a variant of its own geometry (kernel_attention_variant) */
    /* GEMM, GEMM_SPLITK, GEMM_LN */
    int bm, bn;                    /* block tile */
    int stages;                    /* shared-memory ring depth (GEMMs; attention's K/V tiles) */
    int max_stages;                /* GEMM_SPLITK, GEMM_LN: the deepest ring of the tile (the text's) */
    int wm;                        /* GEMM_SPLITK, GEMM_LN: warps along M (of 4) */
    int kgroups;                   /* GEMM_SPLITK, GEMM_LN: warp groups taking turns at a k-tile's 16-deep
                                      steps (1 or 2); 4 / (wm * kgroups) warps along N */
    int splits, kts;               /* blocks over K, k-tiles per block */
    int ntiles, rowblocks;         /* tiles along N, along M (the bucket) */
    int lnvec;                     /* GEMM_LN: elements per LayerNorm piece */
    /* POOL */
    int ct;                        /* column threads: vectors of a row read side by side */
    int rg;                        /* row groups: rows read at once (1 for cls) */
    int items;                     /* vectors per column thread */
    unsigned smem;                 /* dynamic shared memory bytes */
} kernel_geometry;

/* How a kernel uses one argument. */
typedef enum kernel_arg_use {
    KERNEL_ARG_UNUSED,             /* the reference must be NONE */
    KERNEL_ARG_REQUEST,            /* the request block, from its start */
    KERNEL_ARG_READ,               /* weights or activations, read */
    KERNEL_ARG_WRITE,              /* activations or a workspace, written (the arena only) */
    KERNEL_ARG_PREFETCH,           /* the trailing prefetch range: weights or NONE (plan_types.h) */
    KERNEL_ARG_COUNTERS,           /* arrival counters, zero before and after the launch (COUNTERS only) */
} kernel_arg_use;

typedef struct kernel_arg {
    kernel_arg_use use;
    uint64_t bytes;                /* the extent the kernel may touch from the reference */
} kernel_arg;

/* Every field of the spec its kind reads, in range: what the other
 * functions assume.  Messages name the kind and the field. */
int kernel_spec_check(const kernel_spec *s, diag *d);

/* GEMM_SPLITK, GEMM_LN: the k-groups of warps a bm x bn tile takes (1 or
 * 2; kernel_geometry.kgroups): what lower_gemm.c must know to keep one
 * summation order in a plan with token buckets. */
int kernel_gsk_kgroups(int bm, int bn);
/* The geometry of a checked spec; fails where the kind cannot serve it
 * (a row too long for the registers, shared memory exceeded).  It never
 * depends on the rows of a launch. */
int kernel_geometry_of(const kernel_spec *s, kernel_geometry *g, diag *d);
/* Grid, block and dynamic shared memory of a checked spec launched in a
 * bucket of seq_len rows (kernel_spec_rows) and, in a token bucket, `seqs`
 * sequences at most (0: a length bucket).  A packed spec launches only in
 * a token bucket, an unpacked embed_ln, attention or pool only in a length
 * bucket. */
int kernel_launch_dims_in(const kernel_spec *s, int seq_len, int seqs, kernel_launch_dims *dims, diag *d);
/* What a bucket-free spec cannot promise alone for sequences of up to
 * `rows` rows (RoBERTa's positions inside the table, the score-bias table
 * large enough).  kernel_launch_dims_in checks it for a length bucket's
 * rows; for a token bucket, whose sequences are bounded by the plan's
 * longest length bucket and not by its tokens, the caller checks it with
 * that length. */
int kernel_launch_check_rows(const kernel_spec *s, int rows, diag *d);
/* kernel_launch_dims_in in a length bucket. */
int kernel_launch_dims_of(const kernel_spec *s, int seq_len, kernel_launch_dims *dims, diag *d);
/* Pointer arguments of a kind's kernels, the prefetch pair included; 0 for
 * a value outside the enum. */
int kernel_kind_arg_count(kernel_kind kind);
/* Whether a kind's text is the same for every bucket (its spec.bucket must be 0). */
int kernel_kind_bucket_free(kernel_kind kind);
/* The use and extent of each argument of a checked spec launched in a
 * bucket of seq_len rows and `seqs` sequences (0: a length bucket)
 * (args[0 .. kernel_kind_arg_count - 1]). */
void kernel_args_in(const kernel_spec *s, int seq_len, int seqs, kernel_arg *args);
/* kernel_args_in in a length bucket. */
void kernel_args_of(const kernel_spec *s, int seq_len, kernel_arg *args);
/* Whether a kind has a packed form (it reads positions or sequences). */
int kernel_kind_packs(kernel_kind kind);
/* The unpacked attention spec a packed one runs for sequences that take
 * query tile `tile` (8, 16, 32 or 64): its geometry is that variant's. */
kernel_spec kernel_attention_variant(const kernel_spec *packed, int tile);

/* The SMs a launch should cover at least once (a full wave on an H100 SXM,
 * the GPU with the most SMs of the common ones; an A100 has 108). */
#define KERNEL_TARGET_BLOCKS 132
/*
 * Attention's query tile for a bucket: the largest of 64, 32, 16 rows that
 * still gives KERNEL_TARGET_BLOCKS blocks (heads x query tiles) and fits
 * shared memory, else 8.  `s` is a checked attention spec; its qtile is
 * ignored.
 */
int kernel_attention_qtile(const kernel_spec *s, int bucket);
/*
 * The query tile a packed attention kernel gives a sequence whose length
 * bucket takes `qtile` alone: the same where the tile decides the numbers,
 * else the one that computes the same rows with fewer idle lanes (8 -> 16
 * on the tensor-core path: both are one query group and four key slices;
 * 16-bit SIMT passes take every key tile at 64 either way).  Rows of a
 * sequence therefore come out of a batch bit for bit as they do alone.
 */
int kernel_attention_packed_tile(const kernel_spec *s, int qtile);

/* The widest vector for elements of `size` bytes: the largest power of two
 * v with v * size <= 16 that divides each of the n values (at least 1). */
int kernel_vec_elems(int size, const int *vals, int n);
int kernel_ceil_div(int a, int b);

/*
 * The operands of a cuBLASLt step (sched_gemm): A, B and C read, D written
 * (the arena only), the bias read.  sched_gemm_operand_bytes gives the
 * bytes operand `o` spans from its reference (*ref): a column-major matrix
 * of rows x cols with leading dimension ld, batch times stride elements
 * apart, is ((cols - 1) * ld + rows + (batch - 1) * stride) elements.  0 on
 * overflow (never a valid extent: every operand has an element); the
 * caller checked the sizes are positive.  The plan reader checks the spans
 * against the buffers; bertc_debug_check_steps checks what a step wrote
 * against them.
 */
typedef enum sched_gemm_operand {
    SCHED_GEMM_OPERAND_A,
    SCHED_GEMM_OPERAND_B,
    SCHED_GEMM_OPERAND_C,
    SCHED_GEMM_OPERAND_D,
    SCHED_GEMM_OPERAND_BIAS,
    SCHED_GEMM_OPERAND_COUNT,
} sched_gemm_operand;

uint64_t sched_gemm_operand_bytes(const sched_gemm *g, sched_gemm_operand o, const sched_ref **ref);
/* "a", "b", "c", "d", "bias". */
const char *sched_gemm_operand_name(sched_gemm_operand o);

#endif
