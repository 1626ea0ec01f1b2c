/*
 * emudev_gemm — the arithmetic of one emulated cuBLASLt matmul.
 *
 * Every cublasLtMatmul the runtime enqueues ends here, and whole BERT
 * models run through it in CI (also under ASan+UBSan at -O1), so it has to
 * be fast on one CPU thread without giving up a precise definition of what
 * it computes.  The definition, for each batch and each element (i, j):
 *
 *     s    = sum over p of float(opA(i,p)) * float(opB(p,j))      float32
 *     v    = alpha * s  [+ beta * float(C(i,j)) if beta != 0]    float32
 *     v    = v [+ float(bias[i])]  then relu if asked           float32
 *     D    = v rounded once to D's type, round-to-nearest-even
 *
 * The sum over p is always evaluated in the same association, whatever
 * the code path: eight partial sums (lane l takes the products with
 * p mod 8 == l, in increasing p), then a fixed pairwise tree over the
 * eight lanes.  Products and sums are separate IEEE float32 operations
 * (C11 mode keeps gcc from contracting them into FMAs), so the result is
 * bit-identical on every x86-64, with or without AVX2, packed or direct.
 * Each lane starts at -0.0, the exact identity of IEEE addition, so a sum
 * whose products are all -0 stays -0 and k == 0 gives +0.
 *
 * Speed comes from packing.  op(A) is converted once per batch into a
 * float32 panel Ap[m][kp] (row i = the k values of row i of op(A)) and
 * op(B) into Bp[n][kp], kp = k rounded up to 8 (padding -0 in Ap, +0 in
 * Bp: each padded product is -0, which adds nothing), rows 32-byte
 * aligned.  Every output element is then a contiguous dot product of two
 * rows, which a register-blocked micro-kernel computes MR x 2 at a time
 * with 8-lane GCC vector-extension accumulators (no intrinsics header, and
 * it vectorises at -O1 too, where the sanitizer build runs).  The loop
 * nest keeps a block of Bp rows (about 192 KiB) in L2 while the MR rows of
 * Ap in use sit in L1.  The per-batch work (packing, kernel, epilogue)
 * exists twice: compiled for AVX2+F16C with a 4 x 2 tile (8 ymm
 * accumulators, half-precision conversions in one instruction), and for
 * baseline x86-64 with a 2 x 2 tile (each accumulator two xmm halves),
 * chosen at run time with __builtin_cpu_supports.  If the panels cannot be
 * allocated the direct path computes the same sums element by element
 * from the operands, so a failed malloc costs time, never correctness (the
 * function has no way to report an error).
 *
 * The environment variable BERTC_EMU_GEMM_PATH (read per call, never
 * cached: there is no global mutable state, several threads may run
 * matmuls at once) forces a path: "generic" (no AVX2), "direct" (no
 * packing).  Tests use it to check that every path gives the same bits.
 *
 * Epilogue order follows cuBLASLt: scale and accumulate C, add the bias of
 * the row, then relu.  relu is IEEE 754-2019 maximum(v, +0) (NaN
 * propagates): a NaN from an unsynchronised read or a bad operand must not
 * be laundered into a plausible 0; -0 stays -0.
 * beta == 0 never reads C; C may alias D when their layouts match, which
 * is safe because each element of C is read just before the same element
 * of D is written, and by nothing else.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ storage types */

/* always_inline (here and below): a body inlined into the AVX2 instance is
 * compiled for that target, which turns _Float16 conversions into single
 * F16C instructions instead of libgcc calls. */
#define GEMM_INLINE static inline __attribute__((always_inline))

static inline size_t gemm_type_size(emudev_type t) { return t == EMUDEV_TYPE_F32 ? 4 : 2; }

/* bfloat16 is the high half of a float32: widening is a shift. */
GEMM_INLINE float gemm_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round-to-nearest-even on the dropped 16 bits; NaN keeps its sign and top
 * payload bits and is forced quiet (a truncated payload could be zero,
 * which would turn the NaN into an infinity). Overflow rounds to inf. */
GEMM_INLINE uint16_t gemm_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

GEMM_INLINE float gemm_load(const void *base, int64_t idx, emudev_type t) {
    switch (t) {
    case EMUDEV_TYPE_F16: {
        _Float16 h;
        memcpy(&h, (const char *)base + idx * 2, sizeof h);
        return (float)h;
    }
    case EMUDEV_TYPE_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)base + idx * 2, sizeof h);
        return gemm_bf16_to_f32(h);
    }
    default: {
        float f;
        memcpy(&f, (const char *)base + idx * 4, sizeof f);
        return f;
    }
    }
}

/* The one rounding of the result: _Float16's conversion is IEEE
 * round-to-nearest-even (libgcc's soft-fp without F16C). */
GEMM_INLINE void gemm_store(void *base, int64_t idx, emudev_type t, float v) {
    switch (t) {
    case EMUDEV_TYPE_F16: {
        _Float16 h = (_Float16)v;
        memcpy((char *)base + idx * 2, &h, sizeof h);
        break;
    }
    case EMUDEV_TYPE_BF16: {
        uint16_t h = gemm_f32_to_bf16(v);
        memcpy((char *)base + idx * 2, &h, sizeof h);
        break;
    }
    default:
        memcpy((char *)base + idx * 4, &v, sizeof v);
        break;
    }
}

/* ------------------------------------------------------------ the fixed summation order */

#define GEMM_LANES 8
#define GEMM_MR_MAX 4     /* Ap rows are padded to this; every kernel's MR divides it */
#define GEMM_NR 2         /* Bp rows are padded to this */

/* The tree over the eight lanes; every path ends its sums here. */
GEMM_INLINE float gemm_lanes_sum(float l0, float l1, float l2, float l3, float l4, float l5, float l6, float l7) {
    return ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7));
}

/* ------------------------------------------------------------ epilogue of one element */

typedef struct gemm_batch {
    const void *a, *b, *c;
    void *d;
} gemm_batch;

GEMM_INLINE void gemm_finish(const emudev_gemm_args *g, const gemm_batch *bt, int64_t i, int64_t j, float s) {
    float v = g->alpha * s;
    /* cuBLASLt contract: beta == 0 means C is not an input at all. */
    if (g->beta != 0.0f) v += g->beta * gemm_load(bt->c, i + j * g->ldc, g->c_type);
    if (g->epilogue & 4) v += gemm_load(g->bias, i, g->bias_type);
    if ((g->epilogue & 2) && v < 0.0f) v = 0.0f;   /* NaN and -0 compare false: kept */
    gemm_store(bt->d, i + j * g->ldd, g->d_type, v);
}

/* ------------------------------------------------------------ packing */

/* dst[r][p] = float(op(r, p)) for r < rows, p < k, where op's element is at
 * src[p + r * ld] when `along_k` (the k index is contiguous: op(A) with
 * transa, op(B) without transb) and at src[r + p * ld] otherwise.  Row
 * padding up to kp gets `pad`; rows from `rows` to `rows_padded` are all
 * pad.  The strided case walks 64-row strips so that both the reads (down
 * a column of the source) and the writes (one float into each of 64 rows)
 * stay within a few cache lines at a time. */
GEMM_INLINE void gemm_pack(float *dst, int64_t rows, int64_t rows_padded, int64_t k, int64_t kp, const void *src,
                      int64_t ld, emudev_type t, int along_k, float pad) {
    if (along_k) {
        for (int64_t r = 0; r < rows; r++) {
            float *row = dst + r * kp;
            int64_t base = r * ld;
            if (t == EMUDEV_TYPE_F32) {
                memcpy(row, (const char *)src + base * 4, (size_t)k * 4);
            } else {
                for (int64_t p = 0; p < k; p++) row[p] = gemm_load(src, base + p, t);
            }
        }
    } else {
        for (int64_t r0 = 0; r0 < rows; r0 += 64) {
            int64_t r1 = r0 + 64 < rows ? r0 + 64 : rows;
            for (int64_t p = 0; p < k; p++) {
                int64_t base = p * ld;
                for (int64_t r = r0; r < r1; r++) dst[r * kp + p] = gemm_load(src, base + r, t);
            }
        }
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = k; p < kp; p++) dst[r * kp + p] = pad;
    for (int64_t r = rows; r < rows_padded; r++)
        for (int64_t p = 0; p < kp; p++) dst[r * kp + p] = pad;
}

/* ------------------------------------------------------------ micro-kernels */

/* may_alias: the panels are float arrays read through the vector type. */
typedef float gemm_v8 __attribute__((vector_size(32), aligned(32), may_alias));
typedef float gemm_v4 __attribute__((vector_size(16), aligned(16), may_alias));

/*
 * The kernels: sums of rows ap[0..MR) of Ap against rows bp[0..2) of Bp
 * over kp (a multiple of 8), written to out[MR][2].  Written out by hand
 * rather than as loops over an accumulator array so the accumulators live
 * in registers at -O1 too (no complete unrolling there).  The body is the
 * same text for both ISAs; only the tile height and the target differ.
 */
#define GEMM_V8_NEG0 {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f}
#define GEMM_V8_LOAD(ptr) (*(const gemm_v8 *)(ptr))
#define GEMM_V8_SUM(v) gemm_lanes_sum((v)[0], (v)[1], (v)[2], (v)[3], (v)[4], (v)[5], (v)[6], (v)[7])
#define GEMM_V4_NEG0 {-0.0f, -0.0f, -0.0f, -0.0f}
#define GEMM_V4_LOAD(ptr) (*(const gemm_v4 *)(ptr))
#define GEMM_V4X2_SUM(l, h) gemm_lanes_sum((l)[0], (l)[1], (l)[2], (l)[3], (h)[0], (h)[1], (h)[2], (h)[3])

#define GEMM_MR_AVX2 4
#define GEMM_MR_GENERIC 2

__attribute__((target("avx2"))) static void gemm_kernel_avx2(const float *restrict ap, const float *restrict bp,
                                                             int64_t kp, float *restrict out) {
    gemm_v8 c00 = GEMM_V8_NEG0, c01 = GEMM_V8_NEG0, c10 = GEMM_V8_NEG0, c11 = GEMM_V8_NEG0;
    gemm_v8 c20 = GEMM_V8_NEG0, c21 = GEMM_V8_NEG0, c30 = GEMM_V8_NEG0, c31 = GEMM_V8_NEG0;
    const float *a0 = ap, *a1 = ap + kp, *a2 = ap + 2 * kp, *a3 = ap + 3 * kp, *b0 = bp, *b1 = bp + kp;
    for (int64_t p = 0; p < kp; p += GEMM_LANES) {
        gemm_v8 x0 = GEMM_V8_LOAD(b0 + p), x1 = GEMM_V8_LOAD(b1 + p);
        gemm_v8 y = GEMM_V8_LOAD(a0 + p);
        c00 += y * x0;
        c01 += y * x1;
        y = GEMM_V8_LOAD(a1 + p);
        c10 += y * x0;
        c11 += y * x1;
        y = GEMM_V8_LOAD(a2 + p);
        c20 += y * x0;
        c21 += y * x1;
        y = GEMM_V8_LOAD(a3 + p);
        c30 += y * x0;
        c31 += y * x1;
    }
    out[0] = GEMM_V8_SUM(c00);
    out[1] = GEMM_V8_SUM(c01);
    out[2] = GEMM_V8_SUM(c10);
    out[3] = GEMM_V8_SUM(c11);
    out[4] = GEMM_V8_SUM(c20);
    out[5] = GEMM_V8_SUM(c21);
    out[6] = GEMM_V8_SUM(c30);
    out[7] = GEMM_V8_SUM(c31);
}

/* Baseline x86-64 has 16-byte registers: each 8-lane accumulator is kept as
 * two 4-lane halves (lanes 0-3, 4-7) so that they stay in xmm registers;
 * the lanes, and so the sums, are the same as the AVX2 kernel's. */
static void gemm_kernel_generic(const float *restrict ap, const float *restrict bp, int64_t kp,
                                float *restrict out) {
    gemm_v4 c00l = GEMM_V4_NEG0, c00h = GEMM_V4_NEG0, c01l = GEMM_V4_NEG0, c01h = GEMM_V4_NEG0;
    gemm_v4 c10l = GEMM_V4_NEG0, c10h = GEMM_V4_NEG0, c11l = GEMM_V4_NEG0, c11h = GEMM_V4_NEG0;
    const float *a0 = ap, *a1 = ap + kp, *b0 = bp, *b1 = bp + kp;
    for (int64_t p = 0; p < kp; p += GEMM_LANES) {
        gemm_v4 x0l = GEMM_V4_LOAD(b0 + p), x0h = GEMM_V4_LOAD(b0 + p + 4);
        gemm_v4 x1l = GEMM_V4_LOAD(b1 + p), x1h = GEMM_V4_LOAD(b1 + p + 4);
        gemm_v4 yl = GEMM_V4_LOAD(a0 + p), yh = GEMM_V4_LOAD(a0 + p + 4);
        c00l += yl * x0l;
        c00h += yh * x0h;
        c01l += yl * x1l;
        c01h += yh * x1h;
        yl = GEMM_V4_LOAD(a1 + p);
        yh = GEMM_V4_LOAD(a1 + p + 4);
        c10l += yl * x0l;
        c10h += yh * x0h;
        c11l += yl * x1l;
        c11h += yh * x1h;
    }
    out[0] = GEMM_V4X2_SUM(c00l, c00h);
    out[1] = GEMM_V4X2_SUM(c01l, c01h);
    out[2] = GEMM_V4X2_SUM(c10l, c10h);
    out[3] = GEMM_V4X2_SUM(c11l, c11h);
}

typedef enum gemm_path {
    GEMM_PATH_AVX2,
    GEMM_PATH_GENERIC,
    GEMM_PATH_DIRECT,
} gemm_path;

static gemm_path gemm_path_choose(void) {
    const char *e = getenv("BERTC_EMU_GEMM_PATH");
    if (e && !strcmp(e, "direct")) return GEMM_PATH_DIRECT;
    if (e && !strcmp(e, "generic")) return GEMM_PATH_GENERIC;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") ? GEMM_PATH_AVX2 : GEMM_PATH_GENERIC;
}

/* ------------------------------------------------------------ the two paths */

/* Blocks of Bp rows that fit comfortably in L2 next to the Ap rows in use. */
#define GEMM_L2_BYTES (192 * 1024)

/* One batch: pack what changed, then the blocked loop nest over D. */
GEMM_INLINE void gemm_batch_packed(const emudev_gemm_args *g, const gemm_batch *bt, float *ap, float *bp, int64_t kp,
                                   int pack_a, int pack_b, int avx2) {
    int64_t k = g->k > 0 ? g->k : 0;
    /* A panel -0 times B panel +0 is -0: the padding adds nothing, not even a sign. */
    if (pack_a)
        gemm_pack(ap, g->m, (g->m + GEMM_MR_MAX - 1) / GEMM_MR_MAX * GEMM_MR_MAX, k, kp, bt->a, g->lda, g->a_type,
                  g->transa != 0, -0.0f);
    if (pack_b)
        gemm_pack(bp, g->n, (g->n + GEMM_NR - 1) / GEMM_NR * GEMM_NR, k, kp, bt->b, g->ldb, g->b_type,
                  g->transb == 0, 0.0f);
    int mr = avx2 ? GEMM_MR_AVX2 : GEMM_MR_GENERIC;
    int64_t nb = kp ? GEMM_L2_BYTES / (kp * 4) : g->n;
    nb -= nb % GEMM_NR;
    if (nb < GEMM_NR) nb = GEMM_NR;
    float out[GEMM_MR_MAX * GEMM_NR];
    for (int64_t j0 = 0; j0 < g->n; j0 += nb) {
        int64_t j1 = j0 + nb < g->n ? j0 + nb : g->n;
        for (int64_t i = 0; i < g->m; i += mr) {
            const float *arow = ap + i * kp;
            for (int64_t j = j0; j < j1; j += GEMM_NR) {
                if (avx2)
                    gemm_kernel_avx2(arow, bp + j * kp, kp, out);
                else
                    gemm_kernel_generic(arow, bp + j * kp, kp, out);
                /* k == 0: the empty sum is +0 (the lanes started at -0). */
                for (int r = 0; r < mr && i + r < g->m; r++)
                    for (int c = 0; c < GEMM_NR && j + c < g->n; c++)
                        gemm_finish(g, bt, i + r, j + c, k ? out[r * GEMM_NR + c] : 0.0f);
            }
        }
    }
}

__attribute__((target("avx2,f16c"))) static void gemm_batch_avx2(const emudev_gemm_args *g, const gemm_batch *bt,
                                                                 float *ap, float *bp, int64_t kp, int pack_a,
                                                                 int pack_b) {
    gemm_batch_packed(g, bt, ap, bp, kp, pack_a, pack_b, 1);
}

static void gemm_batch_generic(const emudev_gemm_args *g, const gemm_batch *bt, float *ap, float *bp, int64_t kp,
                               int pack_a, int pack_b) {
    gemm_batch_packed(g, bt, ap, bp, kp, pack_a, pack_b, 0);
}

/* The same sums, straight from the operands (no memory needed). */
static void gemm_batch_direct(const emudev_gemm_args *g, const gemm_batch *bt) {
    for (int64_t j = 0; j < g->n; j++) {
        for (int64_t i = 0; i < g->m; i++) {
            float l[GEMM_LANES];
            for (int q = 0; q < GEMM_LANES; q++) l[q] = -0.0f;
            for (int64_t p = 0; p < g->k; p++) {
                float a = gemm_load(bt->a, g->transa ? p + i * g->lda : i + p * g->lda, g->a_type);
                float b = gemm_load(bt->b, g->transb ? j + p * g->ldb : p + j * g->ldb, g->b_type);
                l[p % GEMM_LANES] += a * b;
            }
            float s = g->k ? gemm_lanes_sum(l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7]) : 0.0f;
            gemm_finish(g, bt, i, j, s);
        }
    }
}

/* ------------------------------------------------------------ entry point */

static float *gemm_panel_alloc(int64_t rows, int64_t kp) {
    size_t bytes;
    if (rows < 0 || kp < 0 || __builtin_mul_overflow((size_t)rows, (size_t)kp, &bytes) ||
        __builtin_mul_overflow(bytes, sizeof(float), &bytes))
        return NULL;
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

void emudev_gemm_compute(const emudev_gemm_args *g) {
    if (g->m <= 0 || g->n <= 0 || g->batch_count <= 0) return;
    gemm_path path = gemm_path_choose();
    int64_t k = g->k > 0 ? g->k : 0;
    int64_t kp = (k + GEMM_LANES - 1) / GEMM_LANES * GEMM_LANES;
    int64_t mp = (g->m + GEMM_MR_MAX - 1) / GEMM_MR_MAX * GEMM_MR_MAX;
    int64_t np = (g->n + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
    float *ap = NULL, *bp = NULL;
    if (path != GEMM_PATH_DIRECT) {
        ap = gemm_panel_alloc(mp, kp);
        bp = gemm_panel_alloc(np, kp);
        if (!ap || !bp) path = GEMM_PATH_DIRECT;
    }
    size_t as = gemm_type_size(g->a_type), bs = gemm_type_size(g->b_type);
    size_t cs = gemm_type_size(g->c_type), ds = gemm_type_size(g->d_type);
    for (int b = 0; b < g->batch_count; b++) {
        gemm_batch bt = {
            .a = (const char *)g->a + (int64_t)b * g->stride_a * (int64_t)as,
            .b = (const char *)g->b + (int64_t)b * g->stride_b * (int64_t)bs,
            /* C is only addressed when it is read (beta != 0), so NULL stays NULL. */
            .c = g->beta != 0.0f ? (const char *)g->c + (int64_t)b * g->stride_c * (int64_t)cs : NULL,
            .d = (char *)g->d + (int64_t)b * g->stride_d * (int64_t)ds,
        };
        /* A batch stride of 0 broadcasts one operand, whose panel is then packed once. */
        int pack_a = b == 0 || g->stride_a != 0, pack_b = b == 0 || g->stride_b != 0;
        if (path == GEMM_PATH_DIRECT)
            gemm_batch_direct(g, &bt);
        else if (path == GEMM_PATH_AVX2)
            gemm_batch_avx2(g, &bt, ap, bp, kp, pack_a, pack_b);
        else
            gemm_batch_generic(g, &bt, ap, bp, kp, pack_a, pack_b);
    }
    free(ap);
    free(bp);
}
