/*
 * test_emudev_gemm — the emulated device's matmul arithmetic
 * (emudev_gemm_compute) against a plain double-precision reference.
 *
 * Operands are drawn at random (non-zero values, rounded to their storage
 * type here, so the reference sees exactly the numbers the GEMM sees), in
 * cuBLASLt's column-major layouts with leading dimensions larger than
 * needed and strided batches with gaps.  Every byte the GEMM must not read
 * (the ld padding, the gaps between batches, C when beta is 0) holds NaN,
 * so reading one shows up in the result; every byte of D it must not write
 * holds a sentinel that is checked afterwards.
 *
 * Tolerance, once for all cases: with scale = max over the outputs of
 * |alpha*sum| + |beta*C| + |bias| (the magnitude float32 arithmetic works
 * at), an output may differ from the double reference by
 *     float32 D:            1e-5 * scale
 *     float16 / bfloat16 D: 2 ulps of the output type at |ref|, plus 1e-5 * scale
 * (the 16-bit formats round the float32 result once, half an ulp; the
 * float32 sums add a little more near cancellation).
 *
 * Beyond the reference: the three code paths (AVX2, baseline, direct) must
 * agree bit for bit, rounding to the 16-bit types is checked on exact
 * halfway cases, NaN propagates through relu, and a benchmark prints the
 * GFLOP/s of the BERT-sized products (information, not an assertion).
 */
#include <math.h>
#include <time.h>

#include "check.h"
#include "emudev_internal.h"

/* ------------------------------------------------------------ typed buffers */

static size_t tsize(emudev_type t) { return t == EMUDEV_TYPE_F32 ? 4 : 2; }

static const char *tname(emudev_type t) {
    return t == EMUDEV_TYPE_F32 ? "f32" : t == EMUDEV_TYPE_F16 ? "f16" : "bf16";
}

/* Independent of the library's converters: bf16 by float32 RNE done in double. */
static uint16_t to_bf16(float f) {
    if (isnan(f)) return 0x7fc0;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t lo = u & 0xffff, hi = u >> 16;
    if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) hi++;
    return (uint16_t)hi;
}

static void put(void *buf, size_t i, emudev_type t, double v) {
    if (t == EMUDEV_TYPE_F32) {
        float f = (float)v;
        memcpy((char *)buf + i * 4, &f, 4);
    } else if (t == EMUDEV_TYPE_F16) {
        _Float16 h = (_Float16)(float)v;
        memcpy((char *)buf + i * 2, &h, 2);
    } else {
        uint16_t h = to_bf16((float)v);
        memcpy((char *)buf + i * 2, &h, 2);
    }
}

static double get(const void *buf, size_t i, emudev_type t) {
    if (t == EMUDEV_TYPE_F32) {
        float f;
        memcpy(&f, (const char *)buf + i * 4, 4);
        return f;
    }
    if (t == EMUDEV_TYPE_F16) {
        _Float16 h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        return (double)h;
    }
    uint16_t h;
    memcpy(&h, (const char *)buf + i * 2, 2);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double rnd_nonzero(void) {
    double u = 0.25 + 0.75 * check_rng_uniform();
    return check_rng_u64() & 1 ? u : -u;
}

/* ------------------------------------------------------------ one matrix in a cuBLASLt layout */

typedef struct mat {
    emudev_type t;
    int64_t rows, cols, ld, stride;
    int batch;
    size_t elems;     /* of the buffer */
    void *p;
} mat;

/* rows x cols per batch; ld >= rows with `extra_ld` more; stride >= ld*cols
 * plus `gap` (or 0: every batch is the same matrix).  Everything is NaN first;
 * the matrices proper are then random or `fill_nan` stays. */
static void mat_make(mat *x, emudev_type t, int64_t rows, int64_t cols, int64_t extra_ld, int batch, int64_t gap,
                     int broadcast, int random_values) {
    x->t = t;
    x->rows = rows;
    x->cols = cols;
    x->ld = (rows > 0 ? rows : 1) + extra_ld;
    x->batch = batch;
    x->stride = broadcast ? 0 : x->ld * cols + gap;
    x->elems = (size_t)((batch - 1) * x->stride + x->ld * cols);
    if (x->elems == 0) x->elems = 1;
    x->p = malloc(x->elems * tsize(t));
    for (size_t i = 0; i < x->elems; i++) put(x->p, i, t, NAN);
    if (!random_values) return;
    for (int b = 0; b < (broadcast ? 1 : batch); b++)
        for (int64_t c = 0; c < cols; c++)
            for (int64_t r = 0; r < rows; r++) put(x->p, (size_t)(b * x->stride + r + c * x->ld), t, rnd_nonzero());
}

static double mat_at(const mat *x, int b, int64_t r, int64_t c) {
    return get(x->p, (size_t)(b * x->stride + r + c * x->ld), x->t);
}

static void mat_free(mat *x) {
    free(x->p);
    x->p = NULL;
}

/* ------------------------------------------------------------ a problem and its check */

typedef struct problem {
    int transa, transb;
    int64_t m, n, k;
    emudev_type ab, cd;
    int batch;
    float alpha, beta;
    int epilogue;
    int c_is_d;          /* beta != 0: C aliases D (same layout); else a separate C */
    int broadcast_a, broadcast_b;
    int64_t extra_ld[4], gap[4];
} problem;

static char describe_buf[256];

static const char *problem_describe(const problem *q) {
    snprintf(describe_buf, sizeof describe_buf,
             "%s%s m=%lld n=%lld k=%lld %s->%s batch=%d alpha=%g beta=%g epi=%d c_is_d=%d bcast=%d%d",
             q->transa ? "T" : "N", q->transb ? "T" : "N", (long long)q->m, (long long)q->n, (long long)q->k,
             tname(q->ab), tname(q->cd), q->batch, (double)q->alpha, (double)q->beta, q->epilogue, q->c_is_d,
             q->broadcast_a, q->broadcast_b);
    return describe_buf;
}

typedef struct operands {
    mat a, b, c, d, d0;   /* d0: D before the call (the C values when C aliases D) */
    void *bias;
    emudev_gemm_args g;
} operands;

static void operands_make(operands *o, const problem *q) {
    memset(o, 0, sizeof *o);
    mat_make(&o->a, q->ab, q->transa ? q->k : q->m, q->transa ? q->m : q->k, q->extra_ld[0], q->batch, q->gap[0],
             q->broadcast_a, 1);
    mat_make(&o->b, q->ab, q->transb ? q->n : q->k, q->transb ? q->k : q->n, q->extra_ld[1], q->batch, q->gap[1],
             q->broadcast_b, 1);
    int c_values = q->beta != 0.0f;
    if (q->c_is_d) {
        mat_make(&o->d, q->cd, q->m, q->n, q->extra_ld[3], q->batch, q->gap[3], 0, c_values);
    } else {
        /* beta == 0: C stays NaN everywhere, so reading it would show. */
        mat_make(&o->c, q->cd, q->m, q->n, q->extra_ld[2], q->batch, q->gap[2], 0, c_values);
        mat_make(&o->d, q->cd, q->m, q->n, q->extra_ld[3], q->batch, q->gap[3], 0, 0);
        /* D's sentinel: a finite value no result equals by chance. */
        for (size_t i = 0; i < o->d.elems; i++) put(o->d.p, i, q->cd, 1234.0);
    }
    o->d0 = o->d;
    o->d0.p = malloc(o->d.elems * tsize(q->cd));
    memcpy(o->d0.p, o->d.p, o->d.elems * tsize(q->cd));
    o->bias = malloc((size_t)(q->m > 0 ? q->m : 1) * tsize(q->cd));
    for (int64_t i = 0; i < q->m; i++) put(o->bias, (size_t)i, q->cd, rnd_nonzero());
    const mat *c = q->c_is_d ? &o->d : &o->c;
    o->g = (emudev_gemm_args){
        .transa = q->transa, .transb = q->transb, .m = q->m, .n = q->n, .k = q->k,
        .a_type = q->ab, .b_type = q->ab, .c_type = q->cd, .d_type = q->cd, .bias_type = q->cd,
        .a = o->a.p, .b = o->b.p, .c = c->p, .d = o->d.p, .bias = (q->epilogue & 4) ? o->bias : NULL,
        .lda = o->a.ld, .ldb = o->b.ld, .ldc = c->ld, .ldd = o->d.ld,
        .batch_count = q->batch,
        .stride_a = o->a.stride, .stride_b = o->b.stride, .stride_c = c->stride, .stride_d = o->d.stride,
        .alpha = q->alpha, .beta = q->beta, .epilogue = q->epilogue,
    };
}

static void operands_free(operands *o) {
    mat_free(&o->a);
    mat_free(&o->b);
    mat_free(&o->c);
    mat_free(&o->d);
    mat_free(&o->d0);
    free(o->bias);
}

static double ulp_of(double x, emudev_type t) {
    int e;
    frexp(fabs(x), &e);   /* |x| in [2^(e-1), 2^e) */
    if (t == EMUDEV_TYPE_F16) return ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    if (t == EMUDEV_TYPE_BF16) return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 7);
    return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

/* Runs the GEMM on o and checks every element of D's buffer; returns the worst error in tolerances. */
static double problem_check(const problem *q, operands *o) {
    emudev_gemm_compute(&o->g);
    const mat *cm = q->c_is_d ? &o->d0 : &o->c;
    size_t count = (size_t)(q->batch * q->m * q->n);
    double *ref = malloc((count ? count : 1) * sizeof *ref);
    double scale = 0.0;
    for (int bt = 0; bt < q->batch; bt++)
        for (int64_t j = 0; j < q->n; j++)
            for (int64_t i = 0; i < q->m; i++) {
                double s = 0.0;
                for (int64_t p = 0; p < q->k; p++) {
                    double a = q->transa ? mat_at(&o->a, bt, p, i) : mat_at(&o->a, bt, i, p);
                    double b = q->transb ? mat_at(&o->b, bt, j, p) : mat_at(&o->b, bt, p, j);
                    s += a * b;
                }
                double v = (double)q->alpha * s, mag = fabs(v);
                if (q->beta != 0.0f) {
                    double c = (double)q->beta * mat_at(cm, bt, i, j);
                    v += c;
                    mag += fabs(c);
                }
                if (q->epilogue & 4) {
                    double bias = get(o->bias, (size_t)i, q->cd);
                    v += bias;
                    mag += fabs(bias);
                }
                if ((q->epilogue & 2) && v < 0) v = 0;
                ref[(size_t)((bt * q->n + j) * q->m + i)] = v;
                if (mag > scale) scale = mag;
            }
    double worst = 0.0;
    int reported = 0;
    /* Every element of D's buffer: inside a matrix it is the reference, outside the sentinel. */
    char *inside = calloc(o->d.elems, 1);
    for (int bt = 0; bt < q->batch; bt++)
        for (int64_t j = 0; j < q->n; j++)
            for (int64_t i = 0; i < q->m; i++) {
                size_t at = (size_t)(bt * o->d.stride + i + j * o->d.ld);
                inside[at] = 1;
                double want = ref[(size_t)((bt * q->n + j) * q->m + i)];
                double got = get(o->d.p, at, q->cd);
                double tol = 1e-5 * scale + (q->cd == EMUDEV_TYPE_F32 ? 0.0 : 2.0 * ulp_of(want, q->cd));
                double err = fabs(got - want);
                if (!(err <= tol)) {
                    if (!reported++)
                        CHECK(0, "%s: D[b%d](%lld,%lld) = %.9g, reference %.9g (tolerance %.3g)", problem_describe(q),
                              bt, (long long)i, (long long)j, got, want, tol);
                    worst = INFINITY;
                } else if (tol > 0 && err / tol > worst) {
                    worst = err / tol;
                }
            }
    for (size_t e = 0; e < o->d.elems; e++) {
        if (inside[e]) continue;
        size_t sz = tsize(q->cd);
        if (memcmp((char *)o->d.p + e * sz, (char *)o->d0.p + e * sz, sz)) {
            if (!reported++) CHECK(0, "%s: D element %zu outside the matrices was written", problem_describe(q), e);
            break;
        }
    }
    free(inside);
    free(ref);
    return worst;
}

static const emudev_type combos[5][2] = {
    {EMUDEV_TYPE_F32, EMUDEV_TYPE_F32},  {EMUDEV_TYPE_F16, EMUDEV_TYPE_F16}, {EMUDEV_TYPE_BF16, EMUDEV_TYPE_BF16},
    {EMUDEV_TYPE_F16, EMUDEV_TYPE_F32},  {EMUDEV_TYPE_BF16, EMUDEV_TYPE_F32},
};
static const int epilogues[4] = {1, 2, 4, 6};

static int64_t rnd_dim(void) {
    switch (check_rng_range(0, 5)) {
    case 0: return 1;
    case 1: return check_rng_range(2, 9);
    default: return check_rng_range(1, 75);
    }
}

static problem problem_random(void) {
    problem q;
    memset(&q, 0, sizeof q);
    q.transa = (int)check_rng_range(0, 1);
    q.transb = (int)check_rng_range(0, 1);
    q.m = rnd_dim();
    q.n = rnd_dim();
    q.k = rnd_dim();
    int combo = (int)check_rng_range(0, 4);
    q.ab = combos[combo][0];
    q.cd = combos[combo][1];
    q.batch = check_rng_range(0, 2) ? 1 : (int)check_rng_range(2, 4);
    q.alpha = check_rng_range(0, 1) ? 1.0f : (float)(0.5 + check_rng_uniform());
    switch (check_rng_range(0, 2)) {
    case 0: q.beta = 0.0f; break;
    case 1: q.beta = 1.0f; q.c_is_d = 1; break;
    default: q.beta = (float)(check_rng_uniform() - 0.5); q.c_is_d = (int)check_rng_range(0, 1); break;
    }
    if (q.beta == 0.0f) q.c_is_d = 0;
    q.epilogue = epilogues[check_rng_range(0, 3)];
    if (q.batch > 1) {
        q.broadcast_a = check_rng_range(0, 3) == 0;
        q.broadcast_b = !q.broadcast_a && check_rng_range(0, 3) == 0;
    }
    for (int i = 0; i < 4; i++) {
        q.extra_ld[i] = check_rng_range(0, 1) ? 0 : check_rng_range(1, 5);
        q.gap[i] = check_rng_range(0, 7);
    }
    return q;
}

static void problem_run(const problem *q) {
    operands o;
    operands_make(&o, q);
    problem_check(q, &o);
    operands_free(&o);
}

/* ------------------------------------------------------------ cases */

static void test_random_shapes(void) {
    for (int it = 0; it < 120; it++) {
        problem q = problem_random();
        problem_run(&q);
    }
}

static void test_all_transposes_and_types(void) {
    for (int combo = 0; combo < 5; combo++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                problem q = problem_random();
                q.transa = ta;
                q.transb = tb;
                q.m = 37;
                q.n = 19;
                q.k = 53;
                q.ab = combos[combo][0];
                q.cd = combos[combo][1];
                q.extra_ld[0] = 3;
                q.extra_ld[1] = 1;
                problem_run(&q);
            }
}

static void test_every_epilogue_batched(void) {
    for (int e = 0; e < 4; e++)
        for (int combo = 0; combo < 5; combo++) {
            problem q = problem_random();
            q.epilogue = epilogues[e];
            q.ab = combos[combo][0];
            q.cd = combos[combo][1];
            q.batch = 3;
            q.broadcast_a = q.broadcast_b = 0;
            q.m = 13;
            q.n = 11;
            q.k = 29;
            problem_run(&q);
        }
}

/* beta == 0 must not read C: C is all NaN, and then not even a valid pointer. */
static void test_beta_zero_never_reads_c(void) {
    for (int combo = 0; combo < 5; combo++) {
        problem q = problem_random();
        q.beta = 0.0f;
        q.c_is_d = 0;
        q.ab = combos[combo][0];
        q.cd = combos[combo][1];
        problem_run(&q);
        operands o;
        operands_make(&o, &q);
        o.g.c = NULL;
        problem_check(&q, &o);
        operands_free(&o);
    }
}

/* In place: D = A B + D, batched, for every type. */
static void test_beta_one_c_aliases_d(void) {
    for (int combo = 0; combo < 5; combo++) {
        problem q = problem_random();
        q.beta = 1.0f;
        q.c_is_d = 1;
        q.ab = combos[combo][0];
        q.cd = combos[combo][1];
        q.batch = 2;
        q.epilogue = 6;
        problem_run(&q);
    }
}

static void test_size_one_everything(void) {
    for (int combo = 0; combo < 5; combo++)
        for (int e = 0; e < 4; e++) {
            problem q = problem_random();
            q.m = q.n = q.k = 1;
            q.ab = combos[combo][0];
            q.cd = combos[combo][1];
            q.epilogue = epilogues[e];
            problem_run(&q);
        }
}

/* The AVX2, baseline and direct paths compute the same sums in the same order. */
static void test_paths_bit_identical(void) {
    const char *paths[] = {"generic", "direct"};
    const char *env = getenv("BERTC_EMU_GEMM_PATH");
    char *saved = env ? strdup(env) : NULL;
    for (int combo = 0; combo < 5; combo++) {
        problem q = problem_random();
        q.m = 45;
        q.n = 33;
        q.k = 77;
        q.ab = combos[combo][0];
        q.cd = combos[combo][1];
        q.batch = 2;
        q.broadcast_a = q.broadcast_b = 0;
        operands o;
        operands_make(&o, &q);
        setenv("BERTC_EMU_GEMM_PATH", "default", 1);
        emudev_gemm_compute(&o.g);
        size_t bytes = o.d.elems * tsize(q.cd);
        void *first = malloc(bytes);
        memcpy(first, o.d.p, bytes);
        for (int p = 0; p < 2; p++) {
            memcpy(o.d.p, o.d0.p, bytes);   /* C may alias D */
            setenv("BERTC_EMU_GEMM_PATH", paths[p], 1);
            emudev_gemm_compute(&o.g);
            CHECK(!memcmp(first, o.d.p, bytes), "%s: path %s differs from the default path", problem_describe(&q),
                  paths[p]);
        }
        free(first);
        operands_free(&o);
    }
    /* The benchmark below runs the path the environment asked for. */
    if (saved)
        setenv("BERTC_EMU_GEMM_PATH", saved, 1);
    else
        unsetenv("BERTC_EMU_GEMM_PATH");
    free(saved);
}

/* One product, D = x * 1: the only rounding is the final one, checked on halfway cases. */
static float one_product(float x, emudev_type dt, int epilogue, float bias_value, uint16_t *bits16, float *f32) {
    float one = 1.0f, dval[2] = {0, 0};
    char bias[4];
    put(bias, 0, dt, bias_value);
    emudev_gemm_args g = {
        .m = 1, .n = 1, .k = 1, .a_type = EMUDEV_TYPE_F32, .b_type = EMUDEV_TYPE_F32, .c_type = dt,
        .d_type = dt, .bias_type = dt, .a = &x, .b = &one, .d = dval, .bias = bias, .lda = 1, .ldb = 1,
        .ldc = 1, .ldd = 1, .batch_count = 1, .alpha = 1.0f, .beta = 0.0f, .epilogue = epilogue,
    };
    emudev_gemm_compute(&g);
    if (bits16) memcpy(bits16, dval, 2);
    if (f32) memcpy(f32, dval, 4);
    return (float)get(dval, 0, dt);
}

static void test_rounding_to_storage(void) {
    uint16_t h;
    /* bfloat16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1); 1 + 3*2^-8 ties up. */
    one_product(1.0f + 0x1p-8f, EMUDEV_TYPE_BF16, 1, 0, &h, NULL);
    CHECK(h == 0x3f80, "bf16(1 + 2^-8) = 0x%04x, expected 0x3f80", h);
    one_product(1.0f + 0x3p-8f, EMUDEV_TYPE_BF16, 1, 0, &h, NULL);
    CHECK(h == 0x3f82, "bf16(1 + 3*2^-8) = 0x%04x, expected 0x3f82", h);
    one_product(1.0f + 0x1p-8f + 0x1p-20f, EMUDEV_TYPE_BF16, 1, 0, &h, NULL);
    CHECK(h == 0x3f81, "bf16(just above halfway) = 0x%04x, expected 0x3f81", h);
    one_product(3.4e38f, EMUDEV_TYPE_BF16, 1, 0, &h, NULL);
    CHECK(h == 0x7f80, "bf16(3.4e38) = 0x%04x, expected +inf 0x7f80", h);
    one_product(NAN, EMUDEV_TYPE_BF16, 1, 0, &h, NULL);
    CHECK((h & 0x7f80) == 0x7f80 && (h & 0x7f), "bf16(NaN) = 0x%04x is not a NaN", h);
    /* float16: 1 + 2^-11 ties to 1, 1 + 3*2^-11 ties up; 65520 (halfway to 2^16) overflows to inf. */
    one_product(1.0f + 0x1p-11f, EMUDEV_TYPE_F16, 1, 0, &h, NULL);
    CHECK(h == 0x3c00, "f16(1 + 2^-11) = 0x%04x, expected 0x3c00", h);
    one_product(1.0f + 0x3p-11f, EMUDEV_TYPE_F16, 1, 0, &h, NULL);
    CHECK(h == 0x3c02, "f16(1 + 3*2^-11) = 0x%04x, expected 0x3c02", h);
    one_product(65519.0f, EMUDEV_TYPE_F16, 1, 0, &h, NULL);
    CHECK(h == 0x7bff, "f16(65519) = 0x%04x, expected 65504 (0x7bff)", h);
    one_product(65520.0f, EMUDEV_TYPE_F16, 1, 0, &h, NULL);
    CHECK(h == 0x7c00, "f16(65520) = 0x%04x, expected +inf", h);
    one_product(0x1p-25f * 3.0f, EMUDEV_TYPE_F16, 1, 0, &h, NULL);
    CHECK(h == 0x0002, "f16(3*2^-25) (subnormal tie) = 0x%04x, expected 0x0002", h);
    /* relu: negative to +0, NaN stays NaN (IEEE maximum), bias added before relu. */
    float f;
    one_product(-2.0f, EMUDEV_TYPE_F32, 2, 0, NULL, &f);
    CHECK(f == 0.0f && !signbit(f), "relu(-2) = %g", (double)f);
    one_product(NAN, EMUDEV_TYPE_F32, 2, 0, NULL, &f);
    CHECK(isnan(f), "relu(NaN) = %g, expected NaN", (double)f);
    one_product(-2.0f, EMUDEV_TYPE_F32, 6, 3.0f, NULL, &f);
    CHECK(f == 1.0f, "relu(-2 + bias 3) = %g, expected 1", (double)f);
    one_product(-2.0f, EMUDEV_TYPE_F32, 6, 1.0f, NULL, &f);
    CHECK(f == 0.0f, "relu(-2 + bias 1) = %g, expected 0", (double)f);
    CHECK(one_product(-2.0f, EMUDEV_TYPE_F16, 4, 0.5f, NULL, NULL) == -1.5f, "bias epilogue in f16");
}

/* NaN or inf in one row of A reaches exactly that row of D (IEEE propagation). */
static void test_nan_and_inf_propagate(void) {
    problem q = problem_random();
    q.transa = 1;
    q.transb = 0;
    q.m = 9;
    q.n = 7;
    q.k = 21;
    q.ab = q.cd = EMUDEV_TYPE_F32;
    q.beta = 0.0f;
    q.c_is_d = 0;
    q.batch = 1;
    q.epilogue = 2;
    operands o;
    operands_make(&o, &q);
    put(o.a.p, (size_t)(5 + 3 * o.a.ld), EMUDEV_TYPE_F32, NAN);        /* op(A)(3, 5) */
    put(o.a.p, (size_t)(2 + 6 * o.a.ld), EMUDEV_TYPE_F32, INFINITY);   /* op(A)(6, 2) */
    emudev_gemm_compute(&o.g);
    for (int64_t j = 0; j < q.n; j++) {
        double d3 = get(o.d.p, (size_t)(3 + j * o.d.ld), EMUDEV_TYPE_F32);
        double d6 = get(o.d.p, (size_t)(6 + j * o.d.ld), EMUDEV_TYPE_F32);
        double d4 = get(o.d.p, (size_t)(4 + j * o.d.ld), EMUDEV_TYPE_F32);
        CHECK(isnan(d3), "row with a NaN gave %g (relu must keep NaN)", d3);
        CHECK(isinf(d6) || d6 == 0.0, "row with an inf gave %g (inf, or 0 after relu of -inf)", d6);
        CHECK(isfinite(d4), "a clean row gave %g", d4);
    }
    operands_free(&o);
}

/* k == 0: the empty sum is +0, D = beta*C (+ bias). */
static void test_k_zero(void) {
    float c[4] = {1, -2, 3, -4}, d[4] = {9, 9, 9, 9}, a = NAN, b = NAN;
    emudev_gemm_args g = {
        .m = 2, .n = 2, .k = 0, .a_type = EMUDEV_TYPE_F32, .b_type = EMUDEV_TYPE_F32, .c_type = EMUDEV_TYPE_F32,
        .d_type = EMUDEV_TYPE_F32, .bias_type = EMUDEV_TYPE_F32, .a = &a, .b = &b, .c = c, .d = d, .lda = 2,
        .ldb = 1, .ldc = 2, .ldd = 2, .batch_count = 1, .alpha = 1.0f, .beta = 2.0f, .epilogue = 1,
    };
    emudev_gemm_compute(&g);
    for (int i = 0; i < 4; i++) CHECK(d[i] == 2.0f * c[i], "k=0: D[%d] = %g, expected %g", i, (double)d[i], 2.0 * c[i]);
    g.beta = 0.0f;
    emudev_gemm_compute(&g);
    for (int i = 0; i < 4; i++) CHECK(d[i] == 0.0f && !signbit(d[i]), "k=0, beta 0: D[%d] = %g", i, (double)d[i]);
}

/* ------------------------------------------------------------ benchmark (information only) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_benchmark_bert_shapes(void) {
    static const int64_t shapes[2][3] = {{1152, 512, 384}, {384, 512, 1536}};
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < 3; t++) {
            problem q;
            memset(&q, 0, sizeof q);
            q.transa = 1;
            q.m = shapes[s][0];
            q.n = shapes[s][1];
            q.k = shapes[s][2];
            q.ab = q.cd = combos[t][0];
            q.batch = 1;
            q.alpha = 1.0f;
            q.epilogue = 4;
            operands o;
            operands_make(&o, &q);
            double best = 1e30;
            for (int rep = 0; rep < 2; rep++) {
                double t0 = now_s();
                emudev_gemm_compute(&o.g);
                double dt = now_s() - t0;
                if (dt < best) best = dt;
            }
            double d00 = get(o.d.p, 0, q.cd);
            CHECK(isfinite(d00), "benchmark result is not finite");
            const char *path = getenv("BERTC_EMU_GEMM_PATH");
            printf("info: gemm TN m=%lld n=%lld k=%lld %s (path %s): %.1f ms, %.2f GFLOP/s\n", (long long)q.m,
                   (long long)q.n, (long long)q.k, tname(q.ab), path ? path : "default", best * 1e3,
                   2.0 * (double)(q.m * q.n * q.k) / best * 1e-9);
            operands_free(&o);
        }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_random_shapes);
    CHECK_CASE(test_all_transposes_and_types);
    CHECK_CASE(test_every_epilogue_batched);
    CHECK_CASE(test_beta_zero_never_reads_c);
    CHECK_CASE(test_beta_one_c_aliases_d);
    CHECK_CASE(test_size_one_everything);
    CHECK_CASE(test_paths_bit_identical);
    CHECK_CASE(test_rounding_to_storage);
    CHECK_CASE(test_nan_and_inf_propagate);
    CHECK_CASE(test_k_zero);
    CHECK_CASE(test_benchmark_bert_shapes);
    return check_summary();
}
