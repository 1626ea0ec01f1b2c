/*
 * kref — the kernels' C references (see kref.h).
 *
 * Design.  Each kind is one function over kref_mat operands that loops
 * over the real rows of the request and writes doubles; nothing is
 * rounded to the storage type on the way, so the only rounding a kernel
 * is compared against is its own.  The request block is read the way the
 * kernels read it (len in word 0, ids, types and mask after the header),
 * so a test builds one block and hands it to both (its bucket length is
 * header word 1, whatever the spec says).  kref_kernel maps a
 * kernel's argument list onto these functions with the spec's leading
 * dimensions; that mapping is the only place the ABI of plan_types.h is
 * spelled out here.
 *
 * float16 goes through the compiler's _Float16 (IEEE binary16, conversions
 * round to nearest even) and bfloat16 through its bits, which keeps the
 * storage helpers independent of runtime/common/half.h and of the
 * emulator's cuda_fp16.h stand-ins that the kernels themselves use.
 */
#include "kref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kref_mat kref_stored(plan_dtype dtype, const void *p, size_t ld) {
    kref_mat m = {p, dtype, ld, 0};
    return m;
}

kref_mat kref_f64(const double *p, size_t ld) {
    kref_mat m = {p, PLAN_DTYPE_F32, ld, 1};
    return m;
}

double kref_at(kref_mat m, size_t r, size_t c) {
    size_t i = r * m.ld + c;
    return m.f64 ? ((const double *)m.p)[i] : (double)kref_load(m.dtype, m.p, i);
}

/* ---- storage ------------------------------------------------------------- */

size_t kref_dtype_size(plan_dtype dt) { return dt == PLAN_DTYPE_F32 ? 4 : 2; }

float kref_load(plan_dtype dt, const void *p, size_t i) {
    if (dt == PLAN_DTYPE_F16) {
        _Float16 h;
        memcpy(&h, (const char *)p + 2 * i, 2);
        return (float)h;
    }
    if (dt == PLAN_DTYPE_BF16) {
        uint16_t b;
        memcpy(&b, (const char *)p + 2 * i, 2);
        uint32_t u = (uint32_t)b << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
}

static uint16_t kref_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void kref_store(plan_dtype dt, void *p, size_t i, float v) {
    if (dt == PLAN_DTYPE_F16) {
        _Float16 h = (_Float16)v;
        memcpy((char *)p + 2 * i, &h, 2);
    } else if (dt == PLAN_DTYPE_BF16) {
        uint16_t b = kref_bf16_bits(v);
        memcpy((char *)p + 2 * i, &b, 2);
    } else {
        memcpy((char *)p + 4 * i, &v, 4);
    }
}

double kref_tolerance(plan_dtype dt) {
    return dt == PLAN_DTYPE_F16 ? 2e-3 : dt == PLAN_DTYPE_BF16 ? 1.6e-2 : 1e-5;
}

/* ---- pieces -------------------------------------------------------------- */

double kref_act(plan_act a, double x) {
    switch (a) {
    case PLAN_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case PLAN_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case PLAN_ACT_RELU: return x > 0 ? x : 0;
    case PLAN_ACT_TANH: return tanh(x);
    default: return NAN;
    }
}

void kref_layernorm(const double *x, int n, double eps, kref_mat gamma, kref_mat beta, double *out) {
    double mean = 0, var = 0;
    for (int c = 0; c < n; c++) mean += x[c];
    mean /= n;
    for (int c = 0; c < n; c++) var += (x[c] - mean) * (x[c] - mean);
    var /= n;
    double r = 1.0 / sqrt(var + eps);
    for (int c = 0; c < n; c++) out[c] = (x[c] - mean) * r * kref_at(gamma, 0, (size_t)c) + kref_at(beta, 0, (size_t)c);
}

/* ---- the kinds ----------------------------------------------------------- */

static int kref_len(const int32_t *req) { return req[0]; }

/* Array `which` of the request block (0 ids, 1 types, 2 mask), each of the
 * block's bucket length (header word 1). */
static const int32_t *kref_row(const int32_t *req, int which) {
    return req + KERNEL_REQ_HEADER_WORDS + (size_t)which * (size_t)req[KERNEL_REQ_BUCKET];
}

size_t kref_rows(const kernel_spec *s, const int32_t *req) {
    return s->kind == KERNEL_KIND_POOL ? 1 : (size_t)kref_len(req);
}

size_t kref_cols(const kernel_spec *s) {
    switch (s->kind) {
    case KERNEL_KIND_ATTENTION: return (size_t)s->heads * (size_t)s->head_dim;
    case KERNEL_KIND_GEMM: return (size_t)s->n;
    default: return (size_t)s->hidden;
    }
}

/* n zeroed doubles; out of memory ends the test. */
static double *kref_doubles(size_t n) {
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "kref: out of memory\n");
        abort();
    }
    return p;
}

static double *kref_out(const kernel_spec *s, const int32_t *req) { return kref_doubles(kref_rows(s, req) * kref_cols(s)); }

/* RoBERTa's position id of row r: transformers' create_position_ids_from_input_ids. */
static int kref_pad_position(const int32_t *ids, int r, int pad) {
    if (ids[r] == pad) return pad;
    int n = 0;
    for (int t = 0; t <= r; t++) n += ids[t] != pad;
    return pad + n;
}

double *kref_embed_ln(const kernel_spec *s, const int32_t *req, const kref_mat *tables, kref_mat gamma,
                      kref_mat beta) {
    double *out = kref_out(s, req), *x = kref_doubles((size_t)s->hidden);
    const int32_t *ids = kref_row(req, 0), *types = kref_row(req, 1);
    for (int r = 0; r < kref_len(req); r++) {
        for (int c = 0; c < s->hidden; c++) x[c] = 0;
        for (int g = 0; g < s->ngathers; g++) {
            int idx = s->gather_index[g] == KERNEL_INDEX_INPUT_IDS     ? ids[r]
                      : s->gather_index[g] == KERNEL_INDEX_TOKEN_TYPES ? types[r]
                      : s->gather_index[g] == KERNEL_INDEX_POSITION    ? r
                                                                       : kref_pad_position(ids, r, s->pad_id);
            idx = idx < 0 ? 0 : idx >= s->table_rows[g] ? s->table_rows[g] - 1 : idx;
            for (int c = 0; c < s->hidden; c++) x[c] += kref_at(tables[g], (size_t)idx, (size_t)c);
        }
        kref_layernorm(x, s->hidden, s->eps, gamma, beta, out + (size_t)r * (size_t)s->hidden);
    }
    free(x);
    return out;
}

double *kref_add_ln(const kernel_spec *s, const int32_t *req, kref_mat x, kref_mat bias, kref_mat res,
                    kref_mat gamma, kref_mat beta) {
    double *out = kref_out(s, req), *v = kref_doubles((size_t)s->hidden);
    for (int r = 0; r < kref_len(req); r++) {
        for (int c = 0; c < s->hidden; c++) {
            v[c] = kref_at(x, (size_t)r, (size_t)c);
            if (s->has_bias) v[c] += kref_at(bias, 0, (size_t)c);
            if (s->has_residual) v[c] += kref_at(res, (size_t)r, (size_t)c);
        }
        kref_layernorm(v, s->hidden, s->eps, gamma, beta, out + (size_t)r * (size_t)s->hidden);
    }
    free(v);
    return out;
}

double *kref_attention(const kernel_spec *s, const int32_t *req, kref_mat qkv, kref_mat bias) {
    int L = kref_len(req), H = s->heads, D = s->head_dim, W = H * D;
    const int32_t *mask = kref_row(req, 2);
    double *out = kref_out(s, req), *p = kref_doubles((size_t)(L > 0 ? L : 0));
    for (int h = 0; h < H; h++)
        for (int q = 0; q < L; q++) {
            double mx = -INFINITY;
            for (int k = 0; k < L; k++) {
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += kref_at(qkv, (size_t)q, (size_t)(s->q_off + h * D + d)) *
                           kref_at(qkv, (size_t)k, (size_t)(s->k_off + h * D + d));
                p[k] = (double)s->scale * dot + (mask[k] ? 0.0 : -(double)FLT_MAX);
                if (s->bias_ld && mask[k]) p[k] += kref_at(bias, (size_t)h * (size_t)s->bias_ld + (size_t)q, (size_t)k);
                if (p[k] > mx) mx = p[k];
            }
            double sum = 0;
            for (int k = 0; k < L; k++) sum += p[k] = exp(p[k] - mx);
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int k = 0; k < L; k++) acc += p[k] * kref_at(qkv, (size_t)k, (size_t)(s->v_off + h * D + d));
                out[(size_t)q * (size_t)W + (size_t)(h * D + d)] = acc / sum;
            }
        }
    free(p);
    return out;
}

double *kref_gemm(const kernel_spec *s, const int32_t *req, kref_mat x, kref_mat w, kref_mat bias, kref_mat res) {
    double *out = kref_out(s, req);
    for (int m = 0; m < kref_len(req); m++)
        for (int n = 0; n < s->n; n++) {
            double acc = 0;
            for (int k = 0; k < s->k; k++) acc += kref_at(x, (size_t)m, (size_t)k) * kref_at(w, (size_t)n, (size_t)k);
            if (s->has_bias) acc += kref_at(bias, 0, (size_t)n);
            if (s->has_residual) acc += kref_at(res, (size_t)m, (size_t)n);
            if (s->has_act) acc = kref_act(s->act, acc);
            out[(size_t)m * (size_t)s->n + (size_t)n] = acc;
        }
    return out;
}

double *kref_pool(const kernel_spec *s, const int32_t *req, kref_mat x) {
    int H = s->hidden;
    const int32_t *mask = kref_row(req, 2);
    double *out = kref_out(s, req);
    if (s->pool_mode == PLAN_POOL_CLS) {
        for (int k = 0; k < H; k++) out[k] = kref_at(x, 0, (size_t)k);
    } else {
        double count = 0;
        for (int r = 0; r < kref_len(req); r++) {
            if (!mask[r]) continue;
            count += 1;
            for (int k = 0; k < H; k++) out[k] += kref_at(x, (size_t)r, (size_t)k);
        }
        for (int k = 0; k < H; k++) out[k] /= count > 0 ? count : 1e-9;
    }
    if (s->normalize) {
        double ss = 0;
        for (int k = 0; k < H; k++) ss += out[k] * out[k];
        double norm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
        for (int k = 0; k < H; k++) out[k] /= norm;
    }
    return out;
}

double *kref_kernel(const kernel_spec *s, const int32_t *req, const void *const *in) {
    plan_dtype dt = s->dtype;
    size_t H = (size_t)s->hidden;
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN: {
        kref_mat tables[KERNEL_MAX_GATHERS];
        for (int g = 0; g < KERNEL_MAX_GATHERS; g++) tables[g] = kref_stored(dt, in[g], H);
        return kref_embed_ln(s, req, tables, kref_stored(dt, in[3], H), kref_stored(dt, in[4], H));
    }
    case KERNEL_KIND_ADD_LN:
        return kref_add_ln(s, req, kref_stored(dt, in[0], H), kref_stored(dt, in[1], H), kref_stored(dt, in[2], H),
                           kref_stored(dt, in[3], H), kref_stored(dt, in[4], H));
    case KERNEL_KIND_ATTENTION:
        return kref_attention(s, req, kref_stored(dt, in[0], (size_t)s->qkv_ld), kref_stored(dt, in[1], (size_t)s->bias_ld));
    case KERNEL_KIND_GEMM:
        return kref_gemm(s, req, kref_stored(dt, in[0], (size_t)s->x_ld), kref_stored(dt, in[1], (size_t)s->k),
                         kref_stored(dt, in[2], (size_t)s->n), kref_stored(dt, in[3], (size_t)s->res_ld));
    case KERNEL_KIND_POOL: return kref_pool(s, req, kref_stored(dt, in[0], H));
    default:
        fprintf(stderr, "kref_kernel: no reference for kernel kind %d\n", (int)s->kind);
        abort();
    }
}
