/*
 * plan_types — the vocabulary of a compiled plan: what the compiler writes
 * and the runtime reads, and nothing else.
 *
 * This header depends on nothing but <stdint.h>.  It is the contract
 * between the two halves of bertc: the compiler's lowering maps its own IR
 * (compiler/ir/ir.h) onto these types, the plan writer serialises them, the
 * plan reader (plan_read.c) checks and decodes them, and the runtime
 * replays them.  The runtime never sees the IR, so the IR can change
 * without touching a byte of the format, and a change here is a format
 * change (docs/plan-format.md: every enum value below is a number in the
 * file; plan_read.c pins them with static assertions).
 *
 * Three families of names live here:
 *
 *   plan_*     storage types, activations, pooling modes: the scalar
 *              vocabulary every record uses;
 *   kernel_*   what a generated kernel is (its kind and the compile-time
 *              constants that specialise its template) and how it is
 *              launched: the request block every kernel reads, the
 *              argument ABI per kind;
 *   sched_*    the lowered program per sequence-length bucket: steps
 *              (kernel launches and cuBLASLt GEMMs) over position-
 *              independent buffer references, and where each output lives.
 *
 * The request block.  Every kernel receives `const int *req`, device
 * memory laid out as
 *
 *     int32 len;                 rows in use L, 1 <= L <= B: the request's
 *                                length, or a batch's total tokens
 *     int32 bucket;              the bucket length B (the arrays' length)
 *     int32 nseq;                0 in a length bucket; a batch's sequences n
 *     int32 max_seqs;            0 in a length bucket; the token bucket's N
 *     int32 input_ids[B];
 *     int32 token_type_ids[B];
 *     int32 attention_mask[B];
 *   and in a token bucket (max_seqs N >= 1) only:
 *     int32 position[B];         each token's position in its sequence
 *     int32 seq_start[N + 1];    sequence i is rows [seq_start[i],
 *                                seq_start[i + 1]); seq_start[0] = 0 and
 *                                seq_start[i] = L for every i >= n
 *
 * which the runtime fills with one host-to-device copy per request (the
 * first node of the bucket's CUDA Graph).  Both lengths are read from
 * device memory, so one captured graph serves every length of its bucket
 * and a kernel whose text does not depend on the bucket (spec.bucket 0
 * below) serves every bucket: it finds the token types and the mask at
 * 4 + B and 4 + 2B words.  Rows >= L are padding: kernels may skip them,
 * and no output row < L may depend on what padding rows hold.
 *
 * Token buckets (packed batches).  A bucket with max_seqs N >= 1 runs up
 * to N requests at once, their rows end to end with no padding between
 * them: L is the sum of their lengths.  Every row-wise kernel (LayerNorm,
 * GEMM) runs unchanged over the L rows, knowing nothing of sequences.
 * The kinds that look across rows or at a row's position are `packed` in
 * a token bucket (spec.packed): embed_ln reads each row's position from
 * position[], attention works per sequence from seq_start[] (a query
 * tile of one sequence per block, never a key of another), pool writes
 * one row per sequence.  A per-sequence activation (a pooled or [CLS]
 * row) has N rows, of which the first n are real.
 *
 * Buckets and kernels.  spec.bucket is the number of rows a kernel's text
 * is built for, or 0 for a kernel that serves any bucket: its rows are
 * then the launching bucket's B (kernel_spec_rows).  The LayerNorm family,
 * pooling and attention are bucket-free (attention's query tile, chosen
 * per bucket by the compiler, is spec.qtile instead); a GEMM's tile shape
 * depends on its rows, so it keeps them (the pooler GEMM's one row too).
 *
 * Buffer references.  Every pointer a step uses is a `sched_ref`: a buffer
 * kind plus a byte offset, so the schedule is position-independent and the
 * runtime turns refs into device addresses once, when it captures the
 * bucket's graph:
 *
 *   SCHED_BUF_WEIGHTS   the plan's weight blob, uploaded once per device
 *   SCHED_BUF_ARENA     the activation arena (offsets from buffer liveness;
 *                       one arena per context, sized for the largest bucket)
 *   SCHED_BUF_REQUEST   the request block above
 *   SCHED_BUF_COUNTERS  int32 arrival counters of the split-K kernels: one
 *                       buffer per context, zeroed when the context is
 *                       created; every launch that counts on them leaves
 *                       them zero again (the last block to arrive resets
 *                       its counter), so steps and buckets share them
 *   SCHED_BUF_NONE      a NULL pointer (an absent optional operand)
 *
 * GEMMs use cuBLASLt's column-major convention.  A row-major activation
 * X [M, K] is, seen column-major, X^T [K, M]; a Linear weight W [N, K] is
 * W^T [K, N].  So Y = X W^T (row-major [M, N]) is computed as the
 * column-major product Y^T [N, M] = op(W^T) X^T with transa = T on the
 * weight and transb = N on the activation: both operands are read
 * K-contiguous and no transpose kernel ever runs.
 *
 * The schedule also carries the cost model that `bertc inspect` reports:
 * FLOPs and the minimum HBM bytes per step (every operand read once, every
 * result written once, in the plan precision).
 */
#ifndef BERTC_PLAN_TYPES_H
#define BERTC_PLAN_TYPES_H

#include <stdint.h>

/* ---- scalars ------------------------------------------------------------ */

typedef enum plan_dtype {
    PLAN_DTYPE_F32,
    PLAN_DTYPE_F16,
    PLAN_DTYPE_BF16,
    PLAN_DTYPE_I32,
    PLAN_DTYPE_COUNT,
} plan_dtype;

typedef enum plan_act {
    PLAN_ACT_GELU_ERF,    /* x/2 (1 + erf(x/sqrt 2)) — Hugging Face "gelu" */
    PLAN_ACT_GELU_TANH,   /* tanh approximation — "gelu_new", "gelu_pytorch_tanh" */
    PLAN_ACT_RELU,
    PLAN_ACT_TANH,
    PLAN_ACT_COUNT,
} plan_act;

/* Which fusion built a plan (bertc compile --fusion): BASELINE keeps the
 * seven launches per encoder layer of TensorRT's structure (cuBLASLt for
 * the dense layers, separate add + LayerNorm kernels); DEFAULT fuses the
 * residual + LayerNorm into the output projection and FC2 (GEMM_LN) and
 * runs FC1 + GELU and the pooler on GEMM_SPLITK: five per layer. */
typedef enum plan_fusion {
    PLAN_FUSION_BASELINE,
    PLAN_FUSION_DEFAULT,
    PLAN_FUSION_COUNT,
} plan_fusion;

static inline const char *plan_fusion_name(plan_fusion f) {
    static const char *const names[] = {"baseline", "default"};
    return (unsigned)f < PLAN_FUSION_COUNT ? names[f] : "?";
}

/* How a POOL kernel turns [S, H] into [H] (sentence-transformers' Pooling modes). */
typedef enum plan_pool_mode {
    PLAN_POOL_CLS,        /* row 0, the [CLS] token; the mask is not read */
    PLAN_POOL_MEAN,       /* mean over the rows the attention mask keeps */
    /* format 7, packed only: row i of a row-per-sequence input (a lone
     * l2_normalize after a Dense module; alone that is a cls pool of its one row) */
    PLAN_POOL_ROW,
    PLAN_POOL_COUNT,
} plan_pool_mode;

/* Bytes of one element; 0 for a value outside the enum. */
static inline int plan_dtype_size(plan_dtype t) {
    return t == PLAN_DTYPE_F32 || t == PLAN_DTYPE_I32 ? 4 : t == PLAN_DTYPE_F16 || t == PLAN_DTYPE_BF16 ? 2 : 0;
}

/* The names the graph description (docs/model-yaml.md) spells them with. */
static inline const char *plan_dtype_name(plan_dtype t) {
    static const char *const names[] = {"float32", "float16", "bfloat16", "int32"};
    return (unsigned)t < PLAN_DTYPE_COUNT ? names[t] : "?";
}

static inline const char *plan_act_name(plan_act a) {
    static const char *const names[] = {"gelu", "gelu_tanh", "relu", "tanh"};
    return (unsigned)a < PLAN_ACT_COUNT ? names[a] : "?";
}

static inline const char *plan_pool_mode_name(plan_pool_mode m) {
    static const char *const names[] = {"cls", "mean", "row"};
    return (unsigned)m < PLAN_POOL_COUNT ? names[m] : "?";
}

/* ---- kernels ------------------------------------------------------------ */

#define KERNEL_REQ_HEADER_WORDS 4
#define KERNEL_REQ_LEN 0             /* header word: the real length L (a batch: its total tokens) */
#define KERNEL_REQ_BUCKET 1          /* header word: the bucket length B */
#define KERNEL_REQ_NSEQ 2            /* header word: a batch's sequences n (0: a length bucket) */
#define KERNEL_REQ_MAX_SEQS 3        /* header word: the token bucket's N (0: a length bucket) */
#define KERNEL_MAX_SEQS 1024         /* the most sequences a token bucket may hold */
#define KERNEL_MAX_BUCKET 65536      /* the most rows a bucket (or a kernel's text) may have */
#define KERNEL_MAX_GATHERS 3
/* The most pointer arguments a launch passes: GEMM_LN's ten and the
 * prefetch pair (format 7; 8 + 2 in formats 5 and 6). */
#define KERNEL_MAX_ARGS 12
/*
 * Every kernel launch ends with two more pointer arguments after its
 * kind's own (below): prefetch_first and prefetch_last, the first and the
 * last byte of the range of the weight blob that the *next* step of the
 * schedule reads (its largest weight operand), or both NONE.  The kernel
 * asks every 128-byte line of the range into L2 as it starts
 * (bertc_prefetch_l2_grid, sm_80+; nothing below), so the next step's
 * weights are on their way while this step runs and during the launch gap
 * after it (docs/performance.md).
 */
#define KERNEL_PREFETCH_ARGS 2

/* Bytes of the request block of a bucket of `bucket` rows and `seqs`
 * sequences (0: a length bucket: header and three arrays; else a token
 * bucket: header, four arrays and seq_start[seqs + 1]). */
static inline uint64_t kernel_request_bytes_in(int64_t bucket, int64_t seqs) {
    if (seqs <= 0) return 4 * ((uint64_t)KERNEL_REQ_HEADER_WORDS + 3 * (uint64_t)bucket);
    return 4 * ((uint64_t)KERNEL_REQ_HEADER_WORDS + 4 * (uint64_t)bucket + (uint64_t)seqs + 1);
}

/* Bytes of the request block of a length bucket of `bucket` rows. */
static inline uint64_t kernel_request_bytes(int64_t bucket) { return kernel_request_bytes_in(bucket, 0); }

typedef enum kernel_kind {
    /*
     * out[s, :] = LayerNorm(sum_g table_g[index_g(s), :]) * gamma + beta
     * args: (T *out, const int *req, const T *table0, const T *table1,
     *        const T *table2, const T *gamma, const T *beta)
     * index_g(s) is input_ids[s], token_type_ids[s], s (position) or
     * RoBERTa's position id (pad_id where input_ids[s] == pad_id, else
     * pad_id + the count of non-pad ids in [0, s]), per gather_index[g];
     * unused tables are NULL.  Ids are clamped to the
     * table (the runtime validates them before the launch).  Packed: the
     * position is position[s], s's place in its own sequence, and the
     * pad-position count runs over s's own sequence only.
     */
    KERNEL_KIND_EMBED_LN,
    /*
     * out[s, :] = LayerNorm(x[s, :] (+ bias) (+ residual[s, :])) * gamma + beta
     * args: (T *out, const int *req, const T *x, const T *bias,
     *        const T *residual, const T *gamma, const T *beta)
     */
    KERNEL_KIND_ADD_LN,
    /*
     * Fused multi-head attention for one request:
     *   ctx[s, h*D:(h+1)*D] = softmax_k(scale * q_h[s] . k_h[k] + maskbias[k]) . v_h
     * with maskbias[k] = float32 min where attention_mask[k] == 0, and keys
     * k >= L excluded.  q, k, v are column blocks of the row-major matrix
     * qkv (leading dimension qkv_ld) at column offsets q_off, k_off, v_off.
     * With bias_ld > 0, bias[h][s][k] (a [heads, bias_ld, bias_ld] table,
     * bias_ld >= bucket) is added to the scaled score of every visible key.
     * Packed: the same per sequence of seq_start[], over its own rows and
     * keys only (s and k the places in the sequence, so bias_ld >= the
     * longest sequence, not the token count), each sequence with the query
     * tile its length takes alone (seq_qtile), so its rows come out as they
     * would alone.
     * args: (T *ctx, const int *req, const T *qkv, const T *bias)
     */
    KERNEL_KIND_ATTENTION,
    /*
     * out[m, n] = act(sum_k x[m, k] * w[n, k] (+ bias[n]) (+ residual[m, n]))
     * for m < L (rows of padding are skipped).  w is in Linear layout [N, K].
     * args: (T *out, const int *req, const T *x, const T *w, const T *bias,
     *        const T *residual)
     */
    KERNEL_KIND_GEMM,
    /*
     * A sentence embedding (sentence-transformers' Pooling [+ Normalize]):
     *   pool_mode CLS:  p = x[0, :]
     *   pool_mode MEAN: p = sum_{s < L, attention_mask[s] != 0} x[s, :] / max(count, 1e-9)
     *   out[:] = normalize ? p / max(||p||_2, 1e-12) : p
     * x is [bucket, hidden] with contiguous rows; out is one row [hidden].
     * Rows >= L and masked rows are never read.  One block.  Packed: block
     * i pools sequence i's rows into out[i, :], for i < n; pool_mode ROW
     * (packed only) takes x's row i instead, of an x with a row per
     * sequence (a lone Normalize: alone, cls of a one-row x).
     * args: (T *out, const int *req, const T *x)
     */
    KERNEL_KIND_POOL,
    /*
     * bertc's GEMM with an explicit tile and split-K (gemm_splitk.cuh):
     *   out[m, n] = act(sum_k x[m, k] * w[n, k] (+ bias[n]) (+ residual[m, n]))
     * for m < L, like GEMM, on a tile_m x tile_n tile per block and the
     * k-tiles split over `splits` blocks.  With splits > 1 each block writes
     * a float partial to `workspace` and the last block of a tile to arrive
     * (an arrival counter per tile in `counters`, returned to zero) sums the
     * partials in split order, so the result never depends on timing.
     * args: (T *out, const int *req, const T *x, const T *w, const T *bias,
     *        const T *residual, float *workspace, int *counters);
     *        workspace and counters NULL when splits == 1.  Like every
     *        kind, the prefetch pair follows (10 pointers in all).
     */
    KERNEL_KIND_GEMM_SPLITK,
    /*
     * The same GEMM with a LayerNorm epilogue over whole rows of n = hidden:
     *   out[m, :] = LayerNorm(x[m, :] . w^T (+ bias) (+ residual[m, :])) * gamma + beta
     * (eps from the spec).  Partials are reduced as in GEMM_SPLITK; the
     * pre-LayerNorm sums (float) go to the workspace and the last tile of a
     * row block to finish (a second counter per row block) normalises it.
     * args: (T *out, const int *req, const T *x, const T *w, const T *bias,
     *        const T *residual, const T *gamma, const T *beta,
     *        float *workspace, int *counters), then the prefetch pair
     *        (12 pointers: KERNEL_MAX_ARGS)
     */
    KERNEL_KIND_GEMM_LN,
    KERNEL_KIND_COUNT,
} kernel_kind;

/* The kind's name: "embed_ln", "add_ln", "attention", "gemm", "pool",
 * "gemm_splitk", "gemm_ln". */
static inline const char *plan_kernel_kind_name(kernel_kind k) {
    static const char *const names[] = {"embed_ln", "add_ln", "attention", "gemm", "pool", "gemm_splitk", "gemm_ln"};
    return (unsigned)k < KERNEL_KIND_COUNT ? names[k] : "unknown";
}

typedef enum kernel_index {
    KERNEL_INDEX_INPUT_IDS,
    KERNEL_INDEX_TOKEN_TYPES,
    KERNEL_INDEX_POSITION,
    KERNEL_INDEX_PAD_POSITION,
} kernel_index;

/* The compile-time constants of one kernel; each kind reads only its own
 * fields, the others are zero. */
typedef struct kernel_spec {
    kernel_kind kind;
    plan_dtype dtype;            /* storage type: F32, F16 or BF16 */
    int bucket;                  /* rows the text is built for; 0: any bucket (the launch's B) */

    /* EMBED_LN, ADD_LN, POOL */
    int hidden;
    float eps;
    int ngathers;                /* EMBED_LN: 1..3 */
    kernel_index gather_index[KERNEL_MAX_GATHERS];
    int table_rows[KERNEL_MAX_GATHERS];
    int pad_id;                  /* EMBED_LN: the pad id of a PAD_POSITION gather, else 0 */
    int has_bias, has_residual;  /* ADD_LN, GEMM */

    /* ATTENTION */
    int heads, head_dim;
    float scale;
    int qkv_ld, q_off, k_off, v_off;
    int ctx_ld;
    int qtile;                   /* query rows per block: 8, 16, 32 or 64 (kernel_attention_qtile); 0 packed */
    int bias_ld;                 /* 0: no score bias; else rows (and heads' row count) of the bias table */
    /* format 7: packed ATTENTION: a sequence of length <= seq_qtile[0] takes
     * query tiles of 8 rows, <= [1] of 16, <= [2] of 32, <= [3] of 64
     * (ascending; equal neighbours leave a tile out; a longer one takes the
     * largest tile in use): the tile its length bucket's kernel uses alone */
    int seq_qtile[4];

    /* GEMM */
    int n, k;                    /* M is the bucket */
    int x_ld, out_ld, res_ld;
    int has_act;
    plan_act act;

    /* POOL */
    plan_pool_mode pool_mode;
    int normalize;

    /* GEMM_SPLITK, GEMM_LN (with n, k, the leading dimensions, has_bias,
     * has_residual, has_act / act (GEMM_SPLITK), eps (GEMM_LN)): the block
     * tile and the number of blocks the k-tiles are split over, chosen by
     * the compiler (compiler/lower/lower_gemm.c), checked by the contract */
    int tile_m, tile_n;
    int splits;
    /* EMBED_LN, ATTENTION, POOL: 1 in a token bucket (the request block's
     * positions and seq_start; the launch's sequences), 0 in a length one */
    int packed;
} kernel_spec;

/* The rows a launch of s covers in a bucket of seq_len rows: its own rows,
 * or the bucket's for a kernel that serves any bucket. */
static inline int kernel_spec_rows(const kernel_spec *s, int seq_len) { return s->bucket ? s->bucket : seq_len; }

typedef struct kernel_launch_dims {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_bytes;       /* dynamic shared memory */
} kernel_launch_dims;

/* ---- schedules ---------------------------------------------------------- */

typedef enum sched_buf {
    SCHED_BUF_NONE,
    SCHED_BUF_WEIGHTS,
    SCHED_BUF_ARENA,
    SCHED_BUF_REQUEST,
    SCHED_BUF_COUNTERS,          /* int32 arrival counters, zero between launches */
    SCHED_BUF_COUNT,
} sched_buf;

typedef struct sched_ref {
    sched_buf buf;
    uint64_t offset;             /* bytes from the buffer's base */
} sched_ref;

/* cuBLASLt epilogues bertc uses (values of cublasLtEpilogue_t). */
typedef enum sched_epilogue {
    SCHED_EPILOGUE_DEFAULT = 1,
    SCHED_EPILOGUE_RELU = 2,
    SCHED_EPILOGUE_BIAS = 4,
    SCHED_EPILOGUE_RELU_BIAS = 6,
} sched_epilogue;

typedef struct sched_gemm {
    int transa, transb;          /* 1 = transposed (CUBLAS_OP_T) */
    int64_t m, n, k;             /* of the column-major product D = op(A) op(B) */
    int64_t lda, ldb, ldc, ldd;
    int batch_count;             /* 1 for plain GEMMs */
    int64_t stride_a, stride_b, stride_c, stride_d;   /* elements, for batched */
    plan_dtype ab_type;          /* storage of A and B */
    plan_dtype cd_type;          /* storage of C and D */
    plan_dtype bias_type;
    float alpha, beta;           /* scale type float32, compute type float32 */
    sched_epilogue epilogue;
    sched_ref a, b, c, d, bias;  /* c may equal d; bias NONE unless a BIAS epilogue */
} sched_gemm;

typedef struct sched_launch {
    int kernel;                  /* index into the plan's kernel table */
    kernel_launch_dims dims;
    int nargs;                   /* the kind's arguments + KERNEL_PREFETCH_ARGS */
    sched_ref args[KERNEL_MAX_ARGS];   /* every kernel argument is a pointer */
} sched_launch;

typedef enum sched_step_kind {
    SCHED_STEP_KERNEL,
    SCHED_STEP_GEMM,
} sched_step_kind;

typedef struct sched_step {
    sched_step_kind kind;
    char *name;                  /* e.g. "layer0/qkv" (the IR node it came from) */
    sched_launch launch;         /* SCHED_STEP_KERNEL */
    sched_gemm gemm;             /* SCHED_STEP_GEMM */
    double flops;
    uint64_t min_hbm_bytes;
} sched_step;

/* A graph output: where it lives after the last step, and its shape. */
typedef struct sched_output {
    char *name;                  /* last_hidden_state, pooler_output, ... */
    sched_ref ref;
    plan_dtype dtype;
    int rows_are_seq;            /* 1: [len, cols] (rows beyond len are padding); 0: [cols] */
    int per_seq;                 /* token buckets: 1: [n, cols], a row per sequence (rows_are_seq 0) */
    int64_t cols;
    int64_t row_stride;          /* elements between rows */
} sched_output;

/*
 * A bucket is a length bucket (max_seqs 0: one request of up to seq_len
 * tokens) or a token bucket (max_seqs N >= 1: a packed batch of up to N
 * requests whose lengths add up to at most seq_len).  A plan lists its
 * length buckets first, then its token buckets, each group ascending.
 */
typedef struct sched_bucket {
    int seq_len;                 /* bucket length B: the rows of every [B, *] activation */
    int max_seqs;                /* 0: a length bucket; N >= 1: a token bucket of at most N sequences */
    int nsteps;
    sched_step *steps;
    int noutputs;
    sched_output *outputs;
    uint64_t arena_bytes;        /* arena this bucket needs */
    uint32_t counter_bytes;      /* COUNTERS this bucket's launches use (from offset 0) */
    /* The devices this record's steps are for, as compute capabilities
     * major * 10 + minor (the emulated device's "emu" is 0): cc_min ..
     * cc_max.  A plan has one or more step lists (plan.h, variants); every
     * record of one variant has the same range. */
    uint16_t cc_min, cc_max;
} sched_bucket;

#endif
