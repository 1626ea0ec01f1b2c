/*
 * lower_weights — the plan's weight blob: every WEIGHT or CONST node a
 * step reads, converted to the plan precision once, each tensor 256-byte
 * aligned (what cuBLASLt and 16-byte vector loads want), in graph order so
 * the same graph always gives the same bytes.
 *
 * A rel_pos_bias (MPNet's relative-position score bias) is stored here too,
 * as a [heads, L, L] table for the longest bucket L computed with the
 * reference executor's own code: it depends on key - query only, so every
 * shorter bucket reads its top-left corner, and every layer the same table.
 *
 * Conversion runs at memory speed, because it touches every parameter of
 * the model (110 M for BERT-base) on every compile, cached or not:
 *
 *   - a tensor already stored in the plan precision is copied as it is
 *     (float16 into a float16 plan, and so on: the common case);
 *   - a 16-bit tensor into a float32 plan is widened in one exact loop;
 *   - anything else goes a run of elements at a time through the weights
 *     interface (float16/bfloat16/float64 widened exactly to float32), then
 *     is rounded once to the plan precision (runtime/common/half.h, ties to
 *     even), with the normal-range case of float -> float16 inline.
 *
 * The copy keeps a stored value's bits exactly, where the round trip
 * through float32 used to turn a signalling NaN into a quiet one; weights
 * holding signalling NaNs are broken either way.
 */
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "lower_internal.h"
#include "ref.h"

#define LOWER_WEIGHTS_RUN 4096 /* elements converted per step */

static int64_t lower_numel(const ir_node *n, int longest) {
    if (n->op == IR_OP_REL_POS_BIAS) return n->shape[0] * (int64_t)longest * longest;
    int64_t e = 1;
    for (int k = 0; k < n->ndim; k++) e *= n->shape[k];
    return e;
}

static int lower_is_param(const ir_node *n) {
    return n->op == IR_OP_WEIGHT || n->op == IR_OP_CONST || n->op == IR_OP_REL_POS_BIAS;
}

/* float -> float16.  A run whose every value gives a normal half (the
 * common case) takes a loop without branches, the arithmetic of
 * half_f32_to_f16_finite, which the compiler vectorises; any other run
 * goes value by value through the full rule. */
static void lower_store_f16(uint8_t *dst, const float *v, int64_t n) {
    uint32_t odd = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t a = half_f32_bits(v[i]) & 0x7fffffffu;
        odd |= (uint32_t)(a - 0x38800000u >= 0x477ff000u - 0x38800000u);
    }
    if (odd) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = half_f32_to_f16(v[i]);
            memcpy(dst + (size_t)i * 2, &h, 2);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = half_f32_bits(v[i]), m = (u & 0x7fffffffu) - 0x38000000u;
        m += 0xfffu + ((m >> 13) & 1u);
        uint16_t h = (uint16_t)(((u >> 16) & 0x8000u) | (m >> 13));
        memcpy(dst + (size_t)i * 2, &h, 2);
    }
}

/* n float32 values to the plan precision at dst. */
static void lower_store(uint8_t *dst, plan_dtype t, const float *v, int64_t n) {
    if (t == PLAN_DTYPE_F32) {
        memcpy(dst, v, (size_t)n * 4);
    } else if (t == PLAN_DTYPE_F16) {
        lower_store_f16(dst, v, n);
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = half_f32_to_bf16(v[i]);
            memcpy(dst + (size_t)i * 2, &h, 2);
        }
    }
}

/* The source dtype that is already the plan precision, bit for bit. */
static int lower_same_dtype(weights_dtype src, plan_dtype t) {
    return (src == WEIGHTS_DTYPE_F32 && t == PLAN_DTYPE_F32) || (src == WEIGHTS_DTYPE_F16 && t == PLAN_DTYPE_F16) ||
           (src == WEIGHTS_DTYPE_BF16 && t == PLAN_DTYPE_BF16);
}

/* 16-bit source values widened straight into a float32 blob. */
static void lower_widen(uint8_t *dst, const weights_tensor *t, int64_t n) {
    const uint8_t *src = t->data;
    int f16 = t->dtype == WEIGHTS_DTYPE_F16;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + (size_t)i * 2, 2);
        float f = f16 ? half_f16_to_f32(h) : half_bf16_to_f32(h);
        memcpy(dst + (size_t)i * 4, &f, 4);
    }
}

/* Offsets of the parameters some other node reads; the blob's size. */
static uint64_t lower_weights_layout(const ir_graph *g, size_t es, int longest, int64_t *offset, char *used) {
    for (int i = 0; i < g->count; i++) {
        offset[i] = -1;
        if (lower_is_param(&g->nodes[i])) continue;
        for (int k = 0; k < g->nodes[i].nsrc; k++) used[g->nodes[i].src[k]] = 1;
    }
    uint64_t size = 0;
    for (int i = 0; i < g->count; i++) {
        if (!used[i] || !lower_is_param(&g->nodes[i])) continue;
        offset[i] = (int64_t)size;
        size = lower_align_up(size + (uint64_t)lower_numel(&g->nodes[i], longest) * es);
    }
    return size;
}

/* The [heads, longest, longest] score bias of a rel_pos_bias node. */
static int lower_rel_pos_bias(const ir_graph *g, const ir_node *n, const weights *w, plan_dtype precision,
                              int longest, uint8_t *dst, diag *d) {
    float *table = NULL, *vals = NULL;
    int64_t numel = lower_numel(n, longest);
    if (ref_eval_static(g, w, n->src[0], &table, d)) return -1;
    if (!(vals = malloc((size_t)numel * sizeof *vals))) {
        free(table);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory for the %s table", n->name);
    }
    ref_rel_pos_bias_fill(table, (int)n->shape[0], n->buckets, n->max_distance, longest, longest, vals);
    lower_store(dst, precision, vals, numel);
    free(table);
    free(vals);
    return 0;
}

/* Converts one parameter into the blob. */
static int lower_weights_fill(const ir_graph *g, const ir_node *n, const weights *w, plan_dtype precision, int longest,
                              uint8_t *dst, diag *d) {
    int64_t numel = lower_numel(n, longest);
    size_t es = (size_t)plan_dtype_size(precision);
    if (n->op == IR_OP_CONST) {
        lower_store(dst, precision, n->data, numel);
        return 0;
    }
    if (n->op == IR_OP_REL_POS_BIAS) return lower_rel_pos_bias(g, n, w, precision, longest, dst, d);
    const weights_tensor *t = weights_find(w, n->weight);
    if (!t || weights_tensor_numel(t) != numel || !weights_dtype_is_float(t->dtype))
        return diag_set(d, DIAG_CODE_INPUT, "%s: weight '%s' is missing or changed size", w ? w->path : "weights",
                        n->weight);
    if (lower_same_dtype(t->dtype, precision)) {
        memcpy(dst, t->data, (size_t)numel * es);
        return 0;
    }
    if (precision == PLAN_DTYPE_F32 && (t->dtype == WEIGHTS_DTYPE_F16 || t->dtype == WEIGHTS_DTYPE_BF16)) {
        lower_widen(dst, t, numel);
        return 0;
    }
    float run[LOWER_WEIGHTS_RUN];
    for (int64_t e = 0; e < numel; e += LOWER_WEIGHTS_RUN) {
        int64_t k = numel - e < LOWER_WEIGHTS_RUN ? numel - e : LOWER_WEIGHTS_RUN;
        weights_tensor_read_f32(t, e, k, run);
        lower_store(dst + (size_t)e * es, precision, run, k);
    }
    return 0;
}

int lower_weights_build(const ir_graph *g, const weights *w, plan_dtype precision, int longest, lower_weights *out,
                        diag *d) {
    memset(out, 0, sizeof *out);
    out->count = g->count;
    out->offset = malloc((size_t)(g->count ? g->count : 1) * sizeof *out->offset);
    char *used = calloc((size_t)(g->count ? g->count : 1), 1);
    if (!out->offset || !used) {
        free(used);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    }
    out->size = lower_weights_layout(g, (size_t)plan_dtype_size(precision), longest, out->offset, used);
    free(used);
    out->blob = calloc(out->size ? out->size : 1, 1);
    if (!out->blob)
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory for %llu bytes of weights",
                        (unsigned long long)out->size);
    for (int i = 0; i < g->count; i++)
        if (out->offset[i] >= 0 &&
            lower_weights_fill(g, &g->nodes[i], w, precision, longest, out->blob + out->offset[i], d))
            return -1;
    return 0;
}

void lower_weights_free(lower_weights *w) {
    free(w->blob);
    free(w->offset);
    memset(w, 0, sizeof *w);
}
