/*
 * plan_kernels — the launch contract per kernel kind (plan_kernels.h).
 *
 * One section per kind: its checks, its geometry and its arguments.  The
 * geometry choices are argued here because they are made here:
 *
 * Buckets.  A kind whose text does not depend on the rows serves every
 * bucket (spec.bucket 0): the LayerNorm family, pooling and attention read
 * the bucket length from the request block; their grids, and the extents
 * of their arguments, are the launching bucket's (kernel_spec_rows).  Only
 * the GEMMs (gemm, gemm_splitk, gemm_ln) keep their rows, because their
 * tile shapes (and split-K workspaces and counters) are chosen from them.
 *
 * LayerNorm family (embed_ln, add_ln).  A row of up to 1024 elements
 * belongs to one warp, and the warp is the whole block: at most 32 floats
 * per lane in registers, reductions by shuffles, no shared memory and no
 * block barrier, and as many blocks as rows — 128 at s128, a full wave of
 * an A100 (108 SMs) and all but 4 of an H100's 132 (more blocks than rows
 * would split a row's reduction across blocks).  A longer row gets a block
 * of its own, sized so each thread holds about four vectors (never more
 * than 64 floats).  The vector width is the largest power of two of
 * elements, at most 16 bytes, dividing the hidden size.
 *
 * Attention.  Tensor cores when storage is 16-bit, head_dim % 16 == 0 and
 * every head's slice is 16-byte aligned (m16n8k16 from sm_80, pairs of
 * m16n8k8 for float16 on sm_75; bfloat16 has no sm_75 tensor cores and
 * runs the SIMT passes there).  A block is four warps over one head and
 * `qtile` query rows: wq warps take a 16-row query group each and the
 * wk = 4 / wq warps of a group split every 64-key tile between them,
 * their softmax states meeting in shared memory at the end in a fixed
 * order.  The query tile is chosen per bucket (kernel_attention_qtile):
 * the largest of 64, 32, 16 that still gives KERNEL_TARGET_BLOCKS blocks
 * — large tiles re-read K and V from L2 fewer times, and a bucket long
 * enough affords them — else 8 (half of an m16 tile stays empty: at the
 * buckets that need it the tensor cores are idle anyway, and the blocks
 * are what fills the GPU).  BERT-base, 12 heads: 192 blocks at s128
 * (tile 8), 192 at s256 (16), 144 at s384 (32), 192 at s512 (32).  Keys
 * are streamed in tiles of 64 through two stages when they fit the 48 KiB
 * every architecture grants without an opt-in (one stage for head_dim
 * 128, whose 64-row query tile does not fit at all).  The SIMT path (float
 * storage, other head sizes, bfloat16 on sm_75) runs four warps over
 * passes of up to 16 query rows with keys in tiles of 64 or 32; the shared
 * memory reported covers both paths.
 *
 * GEMM.  At batch 1 the GEMMs of an encoder are short and wide, so most of
 * their time is streaming the weights and what matters is keeping every SM
 * busy: the block tile is the largest of 64x128, 64x64, 32x64, 32x32 that
 * still gives at least GEMM_TARGET_BLOCKS blocks over the bucket, falling
 * back to the smallest; a bucket of 32 rows never uses 64-row tiles.  Four
 * warps per tile; a ring of stages of 80 bytes per row of x and w, as many
 * stages (2..6) as fit in 48 KiB and the k-tiles can fill.
 *
 * Pool.  One block owns the pooled row (the norm needs all of it): CT
 * column threads cover a row in vectors, the rest of a 256-thread block
 * becomes RG row groups reading different rows at once.
 *
 * GEMM_SPLITK and GEMM_LN.  The tile and the split are the compiler's
 * choice (compiler/lower/lower_gemm.c, a cost function the performance
 * model can replace), so here they are only checked: tile_m one of 16, 32,
 * 64, 128 and tile_n one of 32, 64, 128 (at most 8192 outputs, which keeps
 * the SIMT path at 64 accumulators per thread; a 16-row tile puts the four
 * warps side by side and needs 64 columns), 1..32 splits of the k-tiles
 * with none empty.  Four warps of mma tiles (1 x 4 for 16 rows, 2 x 2 for
 * 32 and 64, 4 x 1 for 128), the same 80-byte-row ring as GEMM with as many
 * stages as fit and a split's k-tiles can fill, and never less shared
 * memory than the float tile the epilogue stages (BM x (BN + 4)).  The
 * workspace holds one float tile per split, row block and n tile; the
 * counters one int per output tile when split, plus (GEMM_LN) one per row
 * block.  GEMM_LN's LayerNorm holds a row per warp: at most 64 floats per
 * lane, so hidden <= 2048 in 16-bit storage.
 *
 * Token buckets (packed batches, plan_types.h).  The row-wise kinds run
 * unchanged over the batch's rows.  Packed embed_ln keeps its one block
 * per row.  Packed pool is one block per sequence (N blocks; those past
 * the batch's n return at once).  Packed attention keeps the four warps
 * and the geometry of the tile a sequence would take alone (seq_qtile,
 * kernel_attention_packed_tile): the kernel holds one variant per tile in
 * use, its shared memory the largest of theirs, and each block finds its
 * (sequence, query tile) from seq_start[]; the grid is heads x (the most
 * tiles any batch of the bucket can need: rows / the smallest tile + N,
 * every sequence wasting at most one partial tile), and blocks past the
 * batch's tiles return before they wait for anything.
 */
#include "plan_kernels.h"

#include <math.h>
#include <string.h>

#define KERNEL_LN_MAX_HIDDEN 32768
#define KERNEL_LN_MAX_FLOATS 64 /* row values per thread */
#define KERNEL_LN_WARP_FLOATS 24 /* at most this many per thread for a warp per row */
#define KERNEL_ATTENTION_MAX_HEAD_DIM 128
#define KERNEL_ATTENTION_WARPS 4
#define KERNEL_ATTENTION_KT 64 /* keys per tensor-core tile: 16 per warp at the narrowest split */
#define KERNEL_GEMM_TARGET_BLOCKS 128
#define KERNEL_GEMM_MAX_STAGES 6
#define KERNEL_GEMM_MAX_SPLITS 32
#define KERNEL_GEMM_LN_MAX_FLOATS 64 /* row values per lane */
#define KERNEL_POOL_THREADS 256
#define KERNEL_POOL_MAX_FLOATS 64 /* values per thread */
#define KERNEL_POOL_MAX_HIDDEN 16384
#define KERNEL_ATTENTION_MAX_BIAS_LD 4096 /* rows of a score-bias table (heads x rows^2 elements) */

int kernel_vec_elems(int size, const int *vals, int n) {
    int v = 16 / size;
    for (;;) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (vals[i] % v != 0) ok = 0;
        if (ok || v == 1) return v;
        v /= 2;
    }
}

int kernel_ceil_div(int a, int b) { return (a + b - 1) / b; }

int kernel_kind_packs(kernel_kind kind) {
    return kind == KERNEL_KIND_EMBED_LN || kind == KERNEL_KIND_ATTENTION || kind == KERNEL_KIND_POOL;
}

int kernel_kind_arg_count(kernel_kind kind) {
    static const int nargs[] = {7, 7, 4, 6, 3, 8, 10};
    return (unsigned)kind < KERNEL_KIND_COUNT ? nargs[kind] + KERNEL_PREFETCH_ARGS : 0;
}

static void kernel_dims_set(kernel_launch_dims *dims, unsigned gx, unsigned gy, unsigned block, unsigned smem) {
    dims->grid[0] = gx;
    dims->grid[1] = gy;
    dims->grid[2] = 1;
    dims->block[0] = block;
    dims->block[1] = dims->block[2] = 1;
    dims->shared_bytes = smem;
}

/* ------------------------------------------------------------ LayerNorm family */

static int kernel_ln_check(const kernel_spec *s, diag *d) {
    const char *k = plan_kernel_kind_name(s->kind);
    if (s->hidden < 1 || s->hidden > KERNEL_LN_MAX_HIDDEN)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: hidden size %d is not supported (1..%d)", k, s->hidden,
                        KERNEL_LN_MAX_HIDDEN);
    if (!isfinite(s->eps) || s->eps < 0.0f)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: LayerNorm eps %g must be finite and >= 0", k, (double)s->eps);
    if (s->kind != KERNEL_KIND_EMBED_LN) return 0;
    if (s->ngathers < 1 || s->ngathers > KERNEL_MAX_GATHERS)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: %d gathers (1..%d)", s->ngathers, KERNEL_MAX_GATHERS);
    for (int g = 0; g < s->ngathers; g++) {
        if ((unsigned)s->gather_index[g] > KERNEL_INDEX_PAD_POSITION)
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: gather %d has an unknown index kind %d", g,
                            (int)s->gather_index[g]);
        /* RoBERTa's positions start at the pad id's row (the launch checks
         * that the bucket's last one, pad_id + bucket, is a row too) */
        if (s->gather_index[g] == KERNEL_INDEX_PAD_POSITION && (s->pad_id < 0 || s->pad_id >= s->table_rows[g]))
            return diag_set(d, DIAG_CODE_INPUT, "kernel embed_ln: gather %d: pad id %d is not a row of its %d", g,
                            s->pad_id, s->table_rows[g]);
        if (s->table_rows[g] < 1)
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel embed_ln: gather %d table has %d rows", g,
                            s->table_rows[g]);
    }
    return 0;
}

static int kernel_ln_geometry(const kernel_spec *s, kernel_geometry *g, diag *d) {
    int h = s->hidden;
    g->vec = kernel_vec_elems(plan_dtype_size(s->dtype), &h, 1);
    int nv = h / g->vec;
    /* A warp per row while each thread holds at most 24 values per
     * operand: the kernels keep gamma, beta, the bias, x and the residual
     * of their slice in registers across sm_90's dependency wait, and at 32
     * values each (hidden 1024 on one warp) ptxas spills there.  Longer
     * rows take a block, as few threads as keep each at 24 or fewer. */
    int per = KERNEL_LN_WARP_FLOATS / g->vec > 0 ? KERNEL_LN_WARP_FLOATS / g->vec : 1;
    if (kernel_ceil_div(nv, 32) * g->vec <= KERNEL_LN_WARP_FLOATS) {
        g->threads = 32;
    } else {
        int t = (kernel_ceil_div(nv, per) + 31) / 32 * 32;
        g->threads = t < 64 ? 64 : t > 1024 ? 1024 : t;
    }
    g->rows = 1;
    int floats = kernel_ceil_div(nv, g->threads) * g->vec;
    if (floats > KERNEL_LN_MAX_FLOATS)
        return diag_set(d, DIAG_CODE_INPUT, "kernel %s: hidden size %d needs %d values per thread (at most %d)",
                        plan_kernel_kind_name(s->kind), h, floats, KERNEL_LN_MAX_FLOATS);
    return 0;
}

static void kernel_ln_dims(const kernel_spec *s, const kernel_geometry *g, kernel_launch_dims *dims) {
    kernel_dims_set(dims, (unsigned)kernel_ceil_div(s->bucket, g->rows), 1, (unsigned)(g->threads * g->rows), 0);
}

/* ------------------------------------------------------------ attention */

static int kernel_attention_check(const kernel_spec *s, diag *d) {
    if (s->heads < 1 || s->heads > 1024)
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: %d heads (1..1024)", s->heads);
    if (s->head_dim < 2 || s->head_dim > KERNEL_ATTENTION_MAX_HEAD_DIM || s->head_dim % 2)
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: head_dim %d is not supported (even, 2..%d)",
                        s->head_dim, KERNEL_ATTENTION_MAX_HEAD_DIM);
    if (!isfinite(s->scale))
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: scale %g is not finite", (double)s->scale);
    int width = s->heads * s->head_dim;
    if (s->q_off < 0 || s->k_off < 0 || s->v_off < 0 || s->qkv_ld < 1 || s->q_off > s->qkv_ld - width ||
        s->k_off > s->qkv_ld - width || s->v_off > s->qkv_ld - width)
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "kernel attention: q/k/v columns (offsets %d, %d, %d, width %d) do not fit qkv_ld %d",
                        s->q_off, s->k_off, s->v_off, width, s->qkv_ld);
    if (s->ctx_ld < width || s->ctx_ld % 2)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: ctx_ld %d must be even and >= heads*head_dim %d",
                        s->ctx_ld, width);
    if (s->bias_ld < 0 || s->bias_ld > KERNEL_ATTENTION_MAX_BIAS_LD)
        return diag_set(d, DIAG_CODE_INPUT, "kernel attention: score-bias table of %d rows (0 for none, else up to %d)",
                        s->bias_ld, KERNEL_ATTENTION_MAX_BIAS_LD);
    if (!s->packed) {
        if (s->qtile != 8 && s->qtile != 16 && s->qtile != 32 && s->qtile != 64)
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: query tile %d (8, 16, 32 or 64)", s->qtile);
        return 0;
    }
    if (s->qtile != 0)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: query tile %d in a packed kernel (0: seq_qtile decides)",
                        s->qtile);
    for (int i = 0; i < 4; i++)
        if (s->seq_qtile[i] < (i ? s->seq_qtile[i - 1] : 0) || s->seq_qtile[i] > KERNEL_MAX_BUCKET)
            return diag_set(d, DIAG_CODE_INTERNAL,
                            "kernel attention: seq_qtile %d, %d, %d, %d (ascending lengths in 0..%d)", s->seq_qtile[0],
                            s->seq_qtile[1], s->seq_qtile[2], s->seq_qtile[3], KERNEL_MAX_BUCKET);
    if (s->seq_qtile[3] < 1)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: seq_qtile gives no sequence a query tile");
    return 0;
}

/* SIMT: Q [pt][D] float, K [kt][odd words], V [kt][D], the mask bias [kt] float */
static unsigned kernel_attention_smem_simt(const kernel_spec *s, int pt, int kt) {
    int size = plan_dtype_size(s->dtype);
    int kw = s->head_dim * size / 4;
    return (unsigned)(pt * s->head_dim * 4 + kt * (kw | 1) * 4 + kt * s->head_dim * size + kt * 4);
}

/* Tensor cores: Q [16 wq][D + 8], then per stage K and V [KT][D + 8] and
 * the mask bias [KT] float (rows padded by 16 bytes: the 8 rows of an
 * ldmatrix hit distinct banks). */
static unsigned kernel_attention_smem_tc(const kernel_spec *s, int wq, int stages) {
    unsigned dp = (unsigned)(s->head_dim + 8) * 2u;
    return 16u * (unsigned)wq * dp + (unsigned)stages * (2u * KERNEL_ATTENTION_KT * dp + KERNEL_ATTENTION_KT * 4u);
}

/* The states the warps combine, on the K/V tiles once the keys are done:
 * per warp 16 rows of O (head_dim floats) and of the running max and sum. */
static unsigned kernel_attention_scratch(const kernel_spec *s) {
    return (unsigned)(KERNEL_ATTENTION_WARPS * 16 * (s->head_dim + 2) * 4);
}

static int kernel_attention_is_tc(const kernel_spec *s, int vec) {
    return plan_dtype_size(s->dtype) == 2 && s->head_dim % 16 == 0 && vec == 8;
}

/* The tensor-core part of the geometry for query tile qt: 0, or -1 if it
 * does not fit shared memory. */
static int kernel_attention_tc_geometry(const kernel_spec *s, int qt, kernel_geometry *g) {
    g->wq = qt >= 16 ? qt / 16 : 1;
    g->wk = KERNEL_ATTENTION_WARPS / g->wq;
    g->kt = KERNEL_ATTENTION_KT;
    g->stages = kernel_attention_smem_tc(s, g->wq, 2) <= KERNEL_SMEM_NO_OPTIN ? 2 : 1;
    unsigned kv = (unsigned)g->stages * 2u * KERNEL_ATTENTION_KT * (unsigned)(s->head_dim + 8) * 2u;
    g->smem = kernel_attention_smem_tc(s, g->wq, g->stages);
    return g->smem <= KERNEL_SMEM_NO_OPTIN && kernel_attention_scratch(s) <= kv ? 0 : -1;
}

kernel_spec kernel_attention_variant(const kernel_spec *packed, int tile) {
    kernel_spec v = *packed;
    v.packed = 0;
    v.qtile = tile;
    memset(v.seq_qtile, 0, sizeof v.seq_qtile);
    return v;
}

static int kernel_attention_geometry(const kernel_spec *s, kernel_geometry *g, diag *d);

/* A packed kernel's variants: the tiles whose length ranges are not empty,
 * each with its own geometry; the kernel's shared memory is the largest. */
static int kernel_attention_packed_geometry(const kernel_spec *s, kernel_geometry *g, diag *d) {
    static const int tiles[4] = {8, 16, 32, 64};
    int ntiles = 0, used[4] = {0, 0, 0, 0};
    unsigned smem = 0;
    for (int i = 0; i < 4; i++) {
        if (s->seq_qtile[i] == (i ? s->seq_qtile[i - 1] : 0)) continue;
        kernel_spec vs = kernel_attention_variant(s, tiles[i]);
        kernel_geometry v;
        memset(&v, 0, sizeof v);
        if (kernel_attention_geometry(&vs, &v, d)) return -1;
        used[ntiles++] = tiles[i];
        if (v.smem > smem) smem = v.smem;
    }
    /* the rest of the geometry (path, vectors, warps, the grid's tile) is the smallest variant's */
    kernel_spec first = kernel_attention_variant(s, used[0]);
    memset(g, 0, sizeof *g);
    g->kind = KERNEL_KIND_ATTENTION;
    if (kernel_attention_geometry(&first, g, d)) return -1;
    g->nqtiles = ntiles;
    memcpy(g->qtiles, used, sizeof used);
    g->smem = smem;
    return 0;
}

int kernel_attention_packed_tile(const kernel_spec *s, int qtile) {
    int vals[5] = {s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off};
    int tc = kernel_attention_is_tc(s, kernel_vec_elems(plan_dtype_size(s->dtype), vals, 5));
    return tc && qtile == 8 ? 16 : qtile;
}

static int kernel_attention_geometry(const kernel_spec *s, kernel_geometry *g, diag *d) {
    if (s->packed) return kernel_attention_packed_geometry(s, g, d);
    int vals[5] = {s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off};
    g->vec = kernel_vec_elems(plan_dtype_size(s->dtype), vals, 5);
    g->nw = KERNEL_ATTENTION_WARPS;
    g->qt = s->qtile;
    g->tc = kernel_attention_is_tc(s, g->vec);
    if (g->tc && kernel_attention_tc_geometry(s, g->qt, g) != 0)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: a %d-row query tile with head_dim %d does not fit %u "
                        "bytes of shared memory", g->qt, s->head_dim, KERNEL_SMEM_NO_OPTIN);
    /* the SIMT passes: float storage, other head sizes, bfloat16 on sm_75 */
    g->pt = g->qt < 16 ? g->qt : 16;
    g->skt = 64;
    if (kernel_attention_smem_simt(s, g->pt, g->skt) > KERNEL_SMEM_NO_OPTIN) g->skt = 32;
    unsigned simt = kernel_attention_smem_simt(s, g->pt, g->skt);
    if (simt > KERNEL_SMEM_NO_OPTIN)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel attention: head_dim %d does not fit shared memory", s->head_dim);
    if (simt > g->smem) g->smem = simt;
    return 0;
}

int kernel_attention_qtile(const kernel_spec *s, int bucket) {
    static const int tiles[3] = {64, 32, 16};
    int vals[5] = {s->head_dim, s->qkv_ld, s->q_off, s->k_off, s->v_off};
    int tc = kernel_attention_is_tc(s, kernel_vec_elems(plan_dtype_size(s->dtype), vals, 5));
    for (int i = 0; i < 3; i++) {
        kernel_geometry g;
        memset(&g, 0, sizeof g);
        if (tc && kernel_attention_tc_geometry(s, tiles[i], &g) != 0) continue;
        if ((int64_t)s->heads * kernel_ceil_div(bucket, tiles[i]) >= KERNEL_TARGET_BLOCKS) return tiles[i];
    }
    return 8;
}

static void kernel_attention_dims(const kernel_spec *s, int seqs, const kernel_geometry *g, kernel_launch_dims *dims) {
    unsigned tiles = (unsigned)kernel_ceil_div(s->bucket, g->qt) + (s->packed ? (unsigned)seqs : 0u);
    kernel_dims_set(dims, (unsigned)s->heads, tiles, (unsigned)(32 * g->nw), g->smem);
}

/* ------------------------------------------------------------ GEMM */

static int kernel_gemm_check(const kernel_spec *s, diag *d) {
    if (s->n < 1 || s->k < 1 || s->n > (1 << 20) || s->k > (1 << 20))
        return diag_set(d, DIAG_CODE_INPUT, "kernel gemm: n %d, k %d outside 1..%d", s->n, s->k, 1 << 20);
    if (s->x_ld < s->k || s->out_ld < s->n || (s->has_residual && s->res_ld < s->n))
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "kernel gemm: leading dimensions x_ld %d, out_ld %d, res_ld %d too small for n %d, k %d",
                        s->x_ld, s->out_ld, s->res_ld, s->n, s->k);
    if (s->has_act && (unsigned)s->act >= PLAN_ACT_COUNT)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel gemm: unknown activation %d", (int)s->act);
    return 0;
}

static int kernel_gemm_geometry(const kernel_spec *s, kernel_geometry *g) {
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
    g->vec = kernel_vec_elems(plan_dtype_size(s->dtype), vals, 2);
    /* as many 80-byte-row stages as fit the no-opt-in shared memory, 2..6,
     * and no more than the k-tiles can fill (one more than their number) */
    int stage_bytes = (g->bm + g->bn) * 80;
    int ktiles = kernel_ceil_div(s->k, 64 / plan_dtype_size(s->dtype));
    g->stages = (int)(KERNEL_SMEM_NO_OPTIN / (unsigned)stage_bytes);
    if (g->stages > KERNEL_GEMM_MAX_STAGES) g->stages = KERNEL_GEMM_MAX_STAGES;
    if (g->stages > ktiles + 1) g->stages = ktiles + 1;
    if (g->stages < 2) g->stages = 2;
    g->smem = (unsigned)(g->stages * stage_bytes);
    return 0;
}

static void kernel_gemm_dims(const kernel_spec *s, const kernel_geometry *g, kernel_launch_dims *dims) {
    kernel_dims_set(dims, (unsigned)kernel_ceil_div(s->n, g->bn), (unsigned)kernel_ceil_div(s->bucket, g->bm), 128,
                    g->smem);
}

/* ------------------------------------------------------------ GEMM_SPLITK, GEMM_LN */

/* k-tiles of a GEMM's K: 64 bytes of K per tile. */
static int kernel_gemm_ktiles(const kernel_spec *s) { return kernel_ceil_div(s->k, 64 / plan_dtype_size(s->dtype)); }

/* Two k-groups of warps (each a 16-deep step of every k-tile, summed at
 * the end) where one would leave a warp a tile narrower than 32 columns or
 * than 16 x 64: a warp of a w_m x w_n tile reads (w_m + w_n) operand
 * elements from shared memory for 2 w_m w_n FLOPs, so the narrow tiles
 * the small-M GEMMs pick starve the tensor cores (16 x 16 feeds half an
 * A100's); the pair doubles the warp's width, and its accumulators. */
int kernel_gsk_kgroups(int bm, int bn) {
    return bm == 16 || (bm == 32 && bn <= 64) || (bm == 64 && bn == 32) ? 2 : 1;
}

static int kernel_gsk_tile_ok(int bm, int bn) {
    int m_ok = bm == 16 || bm == 32 || bm == 64 || bm == 128, n_ok = bn == 32 || bn == 64 || bn == 128;
    return m_ok && n_ok && bm * bn <= 8192 && (bm != 16 || bn >= 64);
}

/* LayerNorm pieces: the widest vector dividing the row and the output's rows. */
static int kernel_gsk_lnvec(const kernel_spec *s) {
    int vals[2] = {s->n, s->out_ld};
    return kernel_vec_elems(plan_dtype_size(s->dtype), vals, 2);
}

static int kernel_gsk_check(const kernel_spec *s, diag *d) {
    const char *k = plan_kernel_kind_name(s->kind);
    if (kernel_gemm_check(s, d)) return -1;
    if (!kernel_gsk_tile_ok(s->tile_m, s->tile_n))
        return diag_set(d, DIAG_CODE_INTERNAL,
                        "kernel %s: tile %dx%d is not one of 16/32/64/128 x 32/64/128 (at most 8192, 16 rows with "
                        ">= 64 columns)",
                        k, s->tile_m, s->tile_n);
    int kt = kernel_gemm_ktiles(s);
    if (s->splits < 1 || s->splits > KERNEL_GEMM_MAX_SPLITS || s->splits > kt)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: %d splits of %d k-tiles (1..%d, at most the k-tiles)", k,
                        s->splits, kt, KERNEL_GEMM_MAX_SPLITS);
    int kts = kernel_ceil_div(kt, s->splits);
    if ((s->splits - 1) * kts >= kt)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: %d splits of %d k-tiles leave a split empty", k, s->splits,
                        kt);
    if (kernel_ceil_div(s->bucket, s->tile_m) > 65535)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: %d rows make too many row blocks", k, s->bucket);
    if (s->kind != KERNEL_KIND_GEMM_LN) return 0;
    if (s->has_act) return diag_set(d, DIAG_CODE_INTERNAL, "kernel gemm_ln: an activation before the LayerNorm");
    if (!isfinite(s->eps) || s->eps < 0.0f)
        return diag_set(d, DIAG_CODE_INPUT, "kernel gemm_ln: LayerNorm eps %g must be finite and >= 0", (double)s->eps);
    int v = kernel_gsk_lnvec(s), floats = kernel_ceil_div(kernel_ceil_div(s->n, v), 32) * v;
    if (floats > KERNEL_GEMM_LN_MAX_FLOATS)
        return diag_set(d, DIAG_CODE_INPUT, "kernel gemm_ln: hidden size %d needs %d values per lane (at most %d)", s->n,
                        floats, KERNEL_GEMM_LN_MAX_FLOATS);
    return 0;
}

static int kernel_gsk_geometry(const kernel_spec *s, kernel_geometry *g) {
    g->bm = s->tile_m;
    g->bn = s->tile_n;
    g->wm = g->bm == 16 ? 1 : g->bm == 128 ? 4 : 2;
    g->kgroups = kernel_gsk_kgroups(g->bm, g->bn);
    g->splits = s->splits;
    g->kts = kernel_ceil_div(kernel_gemm_ktiles(s), s->splits);
    g->ntiles = kernel_ceil_div(s->n, g->bn);
    g->rowblocks = kernel_ceil_div(s->bucket, g->bm);
    int vals[2] = {s->k, s->x_ld};
    g->vec = kernel_vec_elems(plan_dtype_size(s->dtype), vals, 2);
    g->lnvec = s->kind == KERNEL_KIND_GEMM_LN ? kernel_gsk_lnvec(s) : 0;
    /* the tile's deepest ring (what fits the no-opt-in shared memory, at
     * most KERNEL_GEMM_MAX_STAGES) is the text's; a launch uses as many
     * of its stages as a split's k-tiles can fill, at least two — the
     * kernel computes the same from its grid (gemm_splitk.cuh,
     * bertc_gsk_grid::stages), so one text serves every split count */
    int stage_bytes = (g->bm + g->bn) * 80;
    g->max_stages = (int)(KERNEL_SMEM_NO_OPTIN / (unsigned)stage_bytes);
    if (g->max_stages > KERNEL_GEMM_MAX_STAGES) g->max_stages = KERNEL_GEMM_MAX_STAGES;
    if (g->max_stages < 2) g->max_stages = 2;
    g->stages = g->kts + 1 < g->max_stages ? g->kts + 1 : g->max_stages;
    if (g->stages < 2) g->stages = 2;
    unsigned ring = (unsigned)(g->stages * stage_bytes), tile = (unsigned)(g->bm * (g->bn + 4) * 4);
    g->smem = ring > tile ? ring : tile;
    return 0;
}

/* ------------------------------------------------------------ pool */

static int kernel_pool_check(const kernel_spec *s, diag *d) {
    if (s->hidden < 1 || s->hidden > KERNEL_POOL_MAX_HIDDEN)
        return diag_set(d, DIAG_CODE_INPUT, "kernel pool: hidden size %d is not supported (1..%d)", s->hidden,
                        KERNEL_POOL_MAX_HIDDEN);
    if (s->pool_mode == PLAN_POOL_ROW && !s->packed)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel pool: mode row in a one-request kernel (packed batches only)");
    if ((unsigned)s->pool_mode >= PLAN_POOL_COUNT)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel pool: unknown pooling mode %d", (int)s->pool_mode);
    if (s->normalize != 0 && s->normalize != 1)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel pool: normalize is %d (expected 0 or 1)", s->normalize);
    return 0;
}

static int kernel_pool_geometry(const kernel_spec *s, kernel_geometry *g, diag *d) {
    int h = s->hidden;
    g->vec = kernel_vec_elems(plan_dtype_size(s->dtype), &h, 1);
    int nv = h / g->vec;
    g->ct = nv < KERNEL_POOL_THREADS ? nv : KERNEL_POOL_THREADS;
    g->items = kernel_ceil_div(nv, g->ct);
    g->rg = 1;
    if (s->pool_mode == PLAN_POOL_MEAN) g->rg = KERNEL_POOL_THREADS / g->ct;
    g->threads = (g->ct * g->rg + 31) / 32 * 32;
    if (g->items * g->vec > KERNEL_POOL_MAX_FLOATS)
        return diag_set(d, DIAG_CODE_INPUT, "kernel pool: hidden size %d needs %d values per thread (at most %d)", h,
                        g->items * g->vec, KERNEL_POOL_MAX_FLOATS);
    return 0;
}

/* ------------------------------------------------------------ dispatch */

/* An embed_ln gathering RoBERTa's positions (the only reader of pad_id). */
static int kernel_spec_pad_gather(const kernel_spec *s) {
    for (int g = 0; s->kind == KERNEL_KIND_EMBED_LN && g < s->ngathers && g < KERNEL_MAX_GATHERS; g++)
        if (s->gather_index[g] == KERNEL_INDEX_PAD_POSITION) return 1;
    return 0;
}

int kernel_spec_check(const kernel_spec *s, diag *d) {
    if ((unsigned)s->kind >= KERNEL_KIND_COUNT)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernels: unknown kernel kind %d", (int)s->kind);
    const char *name = plan_kernel_kind_name(s->kind);
    if (s->packed != 0 && s->packed != 1)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: packed is %d (expected 0 or 1)", name, s->packed);
    if (s->packed && !kernel_kind_packs(s->kind))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: packed (only embed_ln, attention and pool have a packed form)",
                        name);
    if (s->dtype != PLAN_DTYPE_F32 && s->dtype != PLAN_DTYPE_F16 && s->dtype != PLAN_DTYPE_BF16)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: dtype %s is not a storage type (float32, float16, bfloat16)",
                        name, plan_dtype_name(s->dtype));
    if (kernel_kind_bucket_free(s->kind) && s->bucket != 0)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: bucket %d (the kind serves every bucket: 0)", name,
                        s->bucket);
    if (!kernel_kind_bucket_free(s->kind) && (s->bucket < 1 || s->bucket > KERNEL_MAX_BUCKET))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: bucket %d outside 1..%d", name, s->bucket, KERNEL_MAX_BUCKET);
    if (s->pad_id != 0 && !kernel_spec_pad_gather(s))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: pad id %d without a pad-position gather (expected 0)", name,
                        s->pad_id);
    if (s->bias_ld != 0 && s->kind != KERNEL_KIND_ATTENTION)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: score-bias rows %d (only attention has a bias: 0)", name,
                        s->bias_ld);
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
    case KERNEL_KIND_ADD_LN: return kernel_ln_check(s, d);
    case KERNEL_KIND_ATTENTION: return kernel_attention_check(s, d);
    case KERNEL_KIND_GEMM: return kernel_gemm_check(s, d);
    case KERNEL_KIND_GEMM_SPLITK:
    case KERNEL_KIND_GEMM_LN: return kernel_gsk_check(s, d);
    default: return kernel_pool_check(s, d);
    }
}

int kernel_geometry_of(const kernel_spec *s, kernel_geometry *g, diag *d) {
    memset(g, 0, sizeof *g);
    g->kind = s->kind;
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
    case KERNEL_KIND_ADD_LN: return kernel_ln_geometry(s, g, d);
    case KERNEL_KIND_ATTENTION: return kernel_attention_geometry(s, g, d);
    case KERNEL_KIND_GEMM: return kernel_gemm_geometry(s, g);
    case KERNEL_KIND_POOL: return kernel_pool_geometry(s, g, d);
    case KERNEL_KIND_GEMM_SPLITK:
    case KERNEL_KIND_GEMM_LN: return kernel_gsk_geometry(s, g);
    default: return diag_set(d, DIAG_CODE_INTERNAL, "kernels: unknown kernel kind %d", (int)s->kind);
    }
}

/* The GEMMs keep their rows: their tiles (and the split-K workspace and
 * counters) are chosen from them. */
int kernel_kind_bucket_free(kernel_kind kind) {
    return kind != KERNEL_KIND_GEMM && kind != KERNEL_KIND_GEMM_SPLITK && kind != KERNEL_KIND_GEMM_LN;
}

/* s with its rows for a launch in a bucket of seq_len rows: what the
 * per-kind dims and extents below read as s->bucket. */
static kernel_spec kernel_spec_at(const kernel_spec *s, int seq_len) {
    kernel_spec e = *s;
    e.bucket = kernel_spec_rows(s, seq_len);
    return e;
}

/*
 * What a bucket-free kernel's spec cannot promise alone, for sequences of
 * up to `rows` rows: RoBERTa's positions reach pad_id + rows, a row of the
 * table; the score-bias table covers the [rows, rows] corner.
 */
int kernel_launch_check_rows(const kernel_spec *e, int rows, diag *d) {
    for (int g = 0; kernel_spec_pad_gather(e) && g < e->ngathers; g++)
        if (e->gather_index[g] == KERNEL_INDEX_PAD_POSITION && (int64_t)e->pad_id + rows >= e->table_rows[g])
            return diag_set(d, DIAG_CODE_INPUT,
                            "kernel embed_ln: gather %d: positions after pad id %d reach %lld in a bucket of %d, past "
                            "its %d rows", g, e->pad_id, (long long)e->pad_id + rows, rows, e->table_rows[g]);
    if (e->kind == KERNEL_KIND_ATTENTION && e->bias_ld != 0 && e->bias_ld < rows)
        return diag_set(d, DIAG_CODE_INPUT,
                        "kernel attention: a score-bias table of %d rows cannot serve a bucket of %d (0 or bucket <= "
                        "rows <= %d)", e->bias_ld, rows, KERNEL_ATTENTION_MAX_BIAS_LD);
    return 0;
}

int kernel_launch_dims_in(const kernel_spec *s, int seq_len, int seqs, kernel_launch_dims *dims, diag *d) {
    kernel_geometry g;
    memset(dims, 0, sizeof *dims);
    kernel_spec e = kernel_spec_at(s, seq_len);
    const char *name = plan_kernel_kind_name(s->kind);
    if (e.bucket < 1 || e.bucket > KERNEL_MAX_BUCKET)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: launched for %d rows (1..%d)", name, e.bucket,
                        KERNEL_MAX_BUCKET);
    if (seqs < 0 || seqs > KERNEL_MAX_SEQS || seqs > seq_len)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: launched for %d sequences (0..%d, at most the rows)", name,
                        seqs, KERNEL_MAX_SEQS);
    if (s->packed && !seqs)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: a packed kernel in a length bucket (packed batches only)",
                        name);
    if (!s->packed && seqs && kernel_kind_packs(s->kind))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: a one-request kernel in a token bucket (it must be packed)",
                        name);
    if (kernel_geometry_of(s, &g, d)) return -1;
    /* a token bucket's sequences are bounded by the plan's longest length
     * bucket, not by its tokens: its caller checks that (kernel_launch_check_rows) */
    if (!seqs && kernel_launch_check_rows(&e, e.bucket, d)) return -1;
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
    case KERNEL_KIND_ADD_LN: kernel_ln_dims(&e, &g, dims); break;
    case KERNEL_KIND_ATTENTION: kernel_attention_dims(&e, seqs, &g, dims); break;
    case KERNEL_KIND_GEMM: kernel_gemm_dims(&e, &g, dims); break;
    case KERNEL_KIND_GEMM_SPLITK:
    case KERNEL_KIND_GEMM_LN:
        kernel_dims_set(dims, (unsigned)g.ntiles, (unsigned)g.rowblocks, 128, g.smem);
        dims->grid[2] = (unsigned)g.splits;
        break;
    default: kernel_dims_set(dims, s->packed ? (unsigned)seqs : 1u, 1, (unsigned)g.threads, 0); break;
    }
    return 0;
}

int kernel_launch_dims_of(const kernel_spec *s, int seq_len, kernel_launch_dims *dims, diag *d) {
    return kernel_launch_dims_in(s, seq_len, 0, dims, d);
}

/* ------------------------------------------------------------ arguments */

/* rows x ld elements whose last row is only `cols` wide, in bytes. */
static uint64_t kernel_rows_bytes(const kernel_spec *s, int64_t ld, int64_t cols) {
    return ((uint64_t)(s->bucket - 1) * (uint64_t)ld + (uint64_t)cols) * (uint64_t)plan_dtype_size(s->dtype);
}

static kernel_arg kernel_arg_read(uint64_t elems, const kernel_spec *s) {
    return (kernel_arg){KERNEL_ARG_READ, elems * (uint64_t)plan_dtype_size(s->dtype)};
}

/* The workspace and counters of GEMM_SPLITK (args 6, 7) and the LayerNorm
 * weights, workspace and counters of GEMM_LN (args 6..9). */
static void kernel_gsk_args(const kernel_spec *s, kernel_arg *a) {
    kernel_geometry g;
    memset(&g, 0, sizeof g);
    kernel_gsk_geometry(s, &g);
    uint64_t tiles = (uint64_t)g.rowblocks * (uint64_t)g.ntiles;
    uint64_t ws = (uint64_t)g.splits * tiles * (uint64_t)g.bm * (uint64_t)g.bn * 4;
    uint64_t tile_counters = g.splits > 1 ? tiles : 0;
    const kernel_arg unused = {KERNEL_ARG_UNUSED, 0};
    if (s->kind == KERNEL_KIND_GEMM_SPLITK) {
        a[6] = g.splits > 1 ? (kernel_arg){KERNEL_ARG_WRITE, ws} : unused;
        a[7] = g.splits > 1 ? (kernel_arg){KERNEL_ARG_COUNTERS, 4 * tile_counters} : unused;
        return;
    }
    a[6] = a[7] = kernel_arg_read((uint64_t)s->n, s);
    a[8] = (kernel_arg){KERNEL_ARG_WRITE, ws};
    a[9] = (kernel_arg){KERNEL_ARG_COUNTERS, 4 * (tile_counters + (uint64_t)g.rowblocks)};
}

void kernel_args_in(const kernel_spec *spec, int seq_len, int seqs, kernel_arg *a) {
    const kernel_arg unused = {KERNEL_ARG_UNUSED, 0};
    const kernel_spec e = kernel_spec_at(spec, seq_len), *s = &e;
    uint64_t h = (uint64_t)s->hidden, rows = (uint64_t)s->bucket;
    /* embed_ln reads ids and token types, attention and pool the mask (and,
     * packed, the positions and sequences); the LayerNorm after an add and
     * the GEMM only the length */
    int arrays = kernel_kind_packs(s->kind);
    a[1] = (kernel_arg){KERNEL_ARG_REQUEST, arrays ? kernel_request_bytes_in(s->bucket, s->packed ? seqs : 0)
                                                   : kernel_request_bytes(0)};
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
        a[0] = (kernel_arg){KERNEL_ARG_WRITE, kernel_rows_bytes(s, s->hidden, s->hidden)};
        for (int g = 0; g < KERNEL_MAX_GATHERS; g++)
            a[2 + g] = g < s->ngathers ? kernel_arg_read((uint64_t)s->table_rows[g] * h, s) : unused;
        a[5] = a[6] = kernel_arg_read(h, s);
        break;
    case KERNEL_KIND_ADD_LN:
        a[0] = (kernel_arg){KERNEL_ARG_WRITE, kernel_rows_bytes(s, s->hidden, s->hidden)};
        a[2] = kernel_arg_read(rows * h, s);
        a[3] = s->has_bias ? kernel_arg_read(h, s) : unused;
        a[4] = s->has_residual ? kernel_arg_read(rows * h, s) : unused;
        a[5] = a[6] = kernel_arg_read(h, s);
        break;
    case KERNEL_KIND_ATTENTION: {
        int hi = s->q_off > s->k_off ? s->q_off : s->k_off;
        hi = hi > s->v_off ? hi : s->v_off;
        a[0] = (kernel_arg){KERNEL_ARG_WRITE, kernel_rows_bytes(s, s->ctx_ld, s->heads * s->head_dim)};
        a[2] = (kernel_arg){KERNEL_ARG_READ, kernel_rows_bytes(s, s->qkv_ld, hi + s->heads * s->head_dim)};
        a[3] = s->bias_ld ? kernel_arg_read((uint64_t)s->heads * (uint64_t)s->bias_ld * (uint64_t)s->bias_ld, s)
                          : (kernel_arg){KERNEL_ARG_UNUSED, 0};
        break;
    }
    case KERNEL_KIND_GEMM:
    case KERNEL_KIND_GEMM_SPLITK:
    case KERNEL_KIND_GEMM_LN:
        a[0] = (kernel_arg){KERNEL_ARG_WRITE, kernel_rows_bytes(s, s->out_ld, s->n)};
        a[2] = (kernel_arg){KERNEL_ARG_READ, kernel_rows_bytes(s, s->x_ld, s->k)};
        a[3] = kernel_arg_read((uint64_t)s->n * (uint64_t)s->k, s);
        a[4] = s->has_bias ? kernel_arg_read((uint64_t)s->n, s) : unused;
        a[5] = s->has_residual ? (kernel_arg){KERNEL_ARG_READ, kernel_rows_bytes(s, s->res_ld, s->n)} : unused;
        if (s->kind != KERNEL_KIND_GEMM) kernel_gsk_args(s, a);
        break;
    default: /* POOL: cls and row read one row; packed, a row per sequence anywhere in the rows */
        a[0] = (kernel_arg){KERNEL_ARG_WRITE, (s->packed ? (uint64_t)seqs : 1u) * h * (uint64_t)plan_dtype_size(s->dtype)};
        a[2] = kernel_arg_read(s->packed && s->pool_mode != PLAN_POOL_ROW ? rows * h
                               : s->packed                               ? (uint64_t)seqs * h
                               : s->pool_mode == PLAN_POOL_MEAN          ? rows * h
                                                                         : h,
                               s);
        break;
    }
    /* the pair's extent is the distance between them (the reader checks it) */
    int n = kernel_kind_arg_count(s->kind);
    a[n - 2] = a[n - 1] = (kernel_arg){KERNEL_ARG_PREFETCH, 0};
}

void kernel_args_of(const kernel_spec *s, int seq_len, kernel_arg *a) { kernel_args_in(s, seq_len, 0, a); }

/* ------------------------------------------------------------ GEMM steps */

static uint64_t sched_matrix_bytes(int64_t rows, int64_t cols, int64_t ld, int batch, int64_t stride, plan_dtype t) {
    uint64_t e, x;
    if (__builtin_mul_overflow((uint64_t)(cols - 1), (uint64_t)ld, &e) || __builtin_add_overflow(e, (uint64_t)rows, &e) ||
        __builtin_mul_overflow((uint64_t)(batch - 1), (uint64_t)stride, &x) || __builtin_add_overflow(e, x, &e) ||
        __builtin_mul_overflow(e, (uint64_t)plan_dtype_size(t), &e))
        return 0;
    return e;
}

uint64_t sched_gemm_operand_bytes(const sched_gemm *g, sched_gemm_operand o, const sched_ref **ref) {
    int n = g->batch_count;
    switch (o) {
    case SCHED_GEMM_OPERAND_A:
        *ref = &g->a;
        return sched_matrix_bytes(g->transa ? g->k : g->m, g->transa ? g->m : g->k, g->lda, n, g->stride_a, g->ab_type);
    case SCHED_GEMM_OPERAND_B:
        *ref = &g->b;
        return sched_matrix_bytes(g->transb ? g->n : g->k, g->transb ? g->k : g->n, g->ldb, n, g->stride_b, g->ab_type);
    case SCHED_GEMM_OPERAND_C:
        *ref = &g->c;
        return sched_matrix_bytes(g->m, g->n, g->ldc, n, g->stride_c, g->cd_type);
    case SCHED_GEMM_OPERAND_D:
        *ref = &g->d;
        return sched_matrix_bytes(g->m, g->n, g->ldd, n, g->stride_d, g->cd_type);
    default:
        *ref = &g->bias;
        return sched_matrix_bytes(g->m, 1, g->m, 1, 0, g->bias_type);
    }
}

const char *sched_gemm_operand_name(sched_gemm_operand o) {
    static const char *const names[SCHED_GEMM_OPERAND_COUNT] = {"a", "b", "c", "d", "bias"};
    return (unsigned)o < SCHED_GEMM_OPERAND_COUNT ? names[o] : "?";
}
