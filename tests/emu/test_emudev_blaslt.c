/*
 * test_emudev_blaslt — the emulated device's cuBLASLt entry points, used
 * the way the runtime uses the real ones: a handle, a matmul descriptor,
 * four layouts, a preference, one heuristic query, cublasLtMatmul on a
 * stream (or into a captured graph), then a synchronisation.
 *
 * The device library is linked statically here (tests/emu/), so
 * the controls (bertc_emudev_*) are called directly and act on the same
 * copy of the device.  Results are compared bit for bit with
 * emudev_gemm_compute run on host copies of the operands, with arguments
 * the test builds from its own description of the problem: that checks the
 * translation from descriptors (transposes, leading dimensions, batches,
 * alpha/beta, bias) while test_emudev_gemm checks the arithmetic itself.
 *
 * The rest is the contract around the arithmetic: work is deferred until
 * a synchronisation, alpha and beta are read at the call, graphs re-run
 * the matmul on each launch, the heuristic refuses what real cuBLASLt
 * refuses, cublasLtMatmul refuses misaligned and out-of-allocation
 * operands, injected failures come back as the armed status, the status
 * strings are those of the real libcublasLt, and every object created is
 * counted and destroyed.
 */
#include <cublasLt.h>
#include <dlfcn.h>
#include <math.h>

#include "check.h"
#include "emudev_internal.h"

#ifndef BERTC_CUDA_HOME
#define BERTC_CUDA_HOME "/usr/local/cuda"
#endif

/* ------------------------------------------------------------ device setup */

static CUdevice dev;

static int ctx_up(void) {
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        CHECK(0, "no emulated context: %s", bertc_emudev_last_error());
        return -1;
    }
    return 0;
}

static void ctx_down(void) {
    CHECK(cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS, "release: %s", bertc_emudev_last_error());
}

static long live_blaslt(void) {
    bertc_emudev_stats s;
    bertc_emudev_get_stats(&s);
    return s.live_blaslt_objects;
}

static long matmuls_done(void) {
    bertc_emudev_stats s;
    bertc_emudev_get_stats(&s);
    return s.matmuls;
}

static void *dev_alloc(size_t bytes) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, bytes);
    CHECK(r == CUDA_SUCCESS, "cuMemAlloc(%zu): %s", bytes, bertc_emudev_last_error());
    return emudev_host_ptr(p);
}

static void dev_free(void *p) {
    if (p) CHECK(cuMemFree((CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS, "cuMemFree: %s", bertc_emudev_last_error());
}

/* ------------------------------------------------------------ types */

static size_t tsize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

static emudev_type etype(cudaDataType t) {
    return t == CUDA_R_32F ? EMUDEV_TYPE_F32 : t == CUDA_R_16F ? EMUDEV_TYPE_F16 : EMUDEV_TYPE_BF16;
}

static void put(void *buf, size_t i, cudaDataType t, float v) {
    if (t == CUDA_R_32F) {
        memcpy((char *)buf + i * 4, &v, 4);
    } else if (t == CUDA_R_16F) {
        _Float16 h = (_Float16)v;
        memcpy((char *)buf + i * 2, &h, 2);
    } else {
        uint32_t u;
        memcpy(&u, &v, 4);
        uint16_t h = (uint16_t)(u >> 16);   /* truncation: any bf16 value will do as input */
        memcpy((char *)buf + i * 2, &h, 2);
    }
}

/* ------------------------------------------------------------ one problem through the API */

typedef struct lt_problem {
    int transa, transb;
    int64_t m, n, k;
    cudaDataType ab, cd;
    int batch;
    float alpha, beta;
    uint32_t epilogue;
    int in_place;          /* C == D */
    int64_t pad;           /* added to every leading dimension */
} lt_problem;

typedef struct lt_run {
    lt_problem q;
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t lay[4];
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int64_t rows[4], cols[4], ld[4], stride[4];
    size_t bytes[4];
    void *dptr[4], *host[4];   /* A, B, C, D on the device; host copies */
    void *dbias, *hbias;
} lt_run;

static cublasStatus_t lt_layout(cublasLtMatrixLayout_t *l, cudaDataType t, int64_t rows, int64_t cols, int64_t ld,
                                int batch, int64_t stride) {
    cublasStatus_t st = cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld);
    if (st) return st;
    if (batch > 1) {
        int32_t b = batch;
        if ((st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b))) return st;
        if ((st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                   sizeof stride)))
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Creates everything for q (device operands filled at random) and runs the heuristic; returns its status. */
static cublasStatus_t lt_setup(lt_run *r, const lt_problem *q, uint32_t align) {
    memset(r, 0, sizeof *r);
    r->q = *q;
    CHECK(cublasLtCreate(&r->h) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
    CHECK(cublasLtMatmulDescCreate(&r->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS, "desc");
    int32_t ta = q->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = q->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK(!cublasLtMatmulDescSetAttribute(r->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
    CHECK(!cublasLtMatmulDescSetAttribute(r->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
    CHECK(!cublasLtMatmulDescSetAttribute(r->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &q->epilogue, sizeof q->epilogue),
          "EPILOGUE");
    r->rows[0] = q->transa ? q->k : q->m;
    r->cols[0] = q->transa ? q->m : q->k;
    r->rows[1] = q->transb ? q->n : q->k;
    r->cols[1] = q->transb ? q->k : q->n;
    r->rows[2] = r->rows[3] = q->m;
    r->cols[2] = r->cols[3] = q->n;
    for (int i = 0; i < 4; i++) {
        cudaDataType t = i < 2 ? q->ab : q->cd;
        r->ld[i] = r->rows[i] + q->pad;
        r->stride[i] = q->batch > 1 ? r->ld[i] * r->cols[i] + 3 : 0;
        r->bytes[i] = (size_t)((q->batch - 1) * r->stride[i] + r->ld[i] * r->cols[i]) * tsize(t);
        CHECK(!lt_layout(&r->lay[i], t, r->rows[i], r->cols[i], r->ld[i], q->batch, r->stride[i]), "layout %d", i);
        r->host[i] = malloc(r->bytes[i]);
        for (size_t e = 0; e < r->bytes[i] / tsize(t); e++)
            put(r->host[i], e, t, (float)(check_rng_uniform() * 2.0 - 1.0));
        if (i == 2 && q->in_place) continue;
        r->dptr[i] = dev_alloc(r->bytes[i]);
    }
    if (q->in_place) {
        r->dptr[2] = r->dptr[3];
        memcpy(r->host[2], r->host[3], r->bytes[3]);
    }
    for (int i = 0; i < 4; i++)
        if (!(i == 2 && q->in_place))
            cuMemcpyHtoD((CUdeviceptr)(uintptr_t)r->dptr[i], r->host[i], r->bytes[i]);
    size_t bias_bytes = (size_t)q->m * tsize(q->cd);
    r->hbias = malloc(bias_bytes);
    for (int64_t i = 0; i < q->m; i++) put(r->hbias, (size_t)i, q->cd, (float)(check_rng_uniform() - 0.5));
    r->dbias = dev_alloc(bias_bytes);
    cuMemcpyHtoD((CUdeviceptr)(uintptr_t)r->dbias, r->hbias, bias_bytes);
    if (q->epilogue & CUBLASLT_EPILOGUE_BIAS)
        CHECK(!cublasLtMatmulDescSetAttribute(r->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &r->dbias, sizeof r->dbias),
              "BIAS_POINTER");
    CHECK(cublasLtMatmulPreferenceCreate(&r->pref) == CUBLAS_STATUS_SUCCESS, "preference");
    uint64_t ws = 1 << 20;
    CHECK(!cublasLtMatmulPreferenceSetAttribute(r->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
          "MAX_WORKSPACE_BYTES");
    for (int i = 0; i < 4; i++)
        CHECK(!cublasLtMatmulPreferenceSetAttribute(
                  r->pref, (cublasLtMatmulPreferenceAttributes_t)(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i), &align,
                  sizeof align),
              "MIN_ALIGNMENT %d", i);
    int count = -1;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(r->h, r->desc, r->lay[0], r->lay[1], r->lay[2], r->lay[3],
                                                       r->pref, 1, &r->res, &count);
    if (st == CUBLAS_STATUS_SUCCESS)
        CHECK(count == 1 && r->res.state == CUBLAS_STATUS_SUCCESS && r->res.workspaceSize <= ws,
              "heuristic: count %d, state %d, workspace %zu", count, (int)r->res.state, r->res.workspaceSize);
    else
        CHECK(count == 0, "a failed heuristic returned %d algorithms", count);
    return st;
}

static cublasStatus_t lt_matmul(lt_run *r, const float *alpha, const float *beta, CUstream s) {
    return cublasLtMatmul(r->h, r->desc, alpha, r->dptr[0], r->lay[0], r->dptr[1], r->lay[1], beta, r->dptr[2],
                          r->lay[2], r->dptr[3], r->lay[3], &r->res.algo, NULL, 0, s);
}

/* The expected D: emudev_gemm_compute on the host copies, from the test's own description. */
static void *lt_expected(const lt_run *r, float alpha, float beta) {
    const lt_problem *q = &r->q;
    void *d = malloc(r->bytes[3]);
    memcpy(d, r->host[3], r->bytes[3]);
    emudev_gemm_args g = {
        .transa = q->transa, .transb = q->transb, .m = q->m, .n = q->n, .k = q->k,
        .a_type = etype(q->ab), .b_type = etype(q->ab), .c_type = etype(q->cd), .d_type = etype(q->cd),
        .bias_type = etype(q->cd), .a = r->host[0], .b = r->host[1], .c = q->in_place ? d : r->host[2], .d = d,
        .bias = r->hbias, .lda = r->ld[0], .ldb = r->ld[1], .ldc = r->ld[2], .ldd = r->ld[3],
        .batch_count = q->batch, .stride_a = r->stride[0], .stride_b = r->stride[1], .stride_c = r->stride[2],
        .stride_d = r->stride[3], .alpha = alpha, .beta = beta, .epilogue = (int)q->epilogue,
    };
    emudev_gemm_compute(&g);
    return d;
}

static void lt_teardown(lt_run *r) {
    CHECK(!cublasLtMatmulPreferenceDestroy(r->pref), "preference destroy");
    for (int i = 0; i < 4; i++) CHECK(!cublasLtMatrixLayoutDestroy(r->lay[i]), "layout destroy");
    CHECK(!cublasLtMatmulDescDestroy(r->desc), "desc destroy");
    CHECK(!cublasLtDestroy(r->h), "handle destroy");
    for (int i = 0; i < 4; i++) {
        if (!(i == 2 && r->q.in_place)) dev_free(r->dptr[i]);
        free(r->host[i]);
    }
    dev_free(r->dbias);
    free(r->hbias);
}

static const cudaDataType combos[5][2] = {
    {CUDA_R_32F, CUDA_R_32F},  {CUDA_R_16F, CUDA_R_16F}, {CUDA_R_16BF, CUDA_R_16BF},
    {CUDA_R_16F, CUDA_R_32F},  {CUDA_R_16BF, CUDA_R_32F},
};

static lt_problem lt_random(int combo) {
    static const uint32_t epis[4] = {1, 2, 4, 6};
    lt_problem q = {
        .transa = (int)check_rng_range(0, 1), .transb = (int)check_rng_range(0, 1),
        .m = check_rng_range(1, 40), .n = check_rng_range(1, 40), .k = check_rng_range(1, 40),
        .ab = combos[combo][0], .cd = combos[combo][1], .batch = (int)check_rng_range(1, 3),
        .alpha = (float)(0.5 + check_rng_uniform()), .epilogue = epis[check_rng_range(0, 3)],
        .pad = check_rng_range(0, 2),
    };
    q.in_place = (int)check_rng_range(0, 1);
    q.beta = q.in_place ? 1.0f : (check_rng_range(0, 1) ? 0.0f : 0.75f);
    return q;
}

/* ------------------------------------------------------------ cases */

static void test_status_strings_match_the_real_library(void) {
    CHECK(strstr(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED), "not supported"), "NOT_SUPPORTED string");
    char path[512];
    const char *home = getenv("CUDA_HOME");
    snprintf(path, sizeof path, "%s/lib64/libcublasLt.so", home && *home ? home : BERTC_CUDA_HOME);
    /* RTLD_NODELETE, as runtime/device.c: the library keeps process-wide state (libstdc++'s
     * exception pool) that must stay reachable after dlclose. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        printf("info: %s not loadable (%s); strings checked against the copy in the source only\n", path, dlerror());
        return;
    }
    const char *(*real)(cublasStatus_t);
    *(void **)&real = dlsym(lib, "cublasLtGetStatusString");
    CHECK(real != NULL, "the real library lacks cublasLtGetStatusString");
    for (int s = 0; real && s <= 20; s++) {
        const char *want = real((cublasStatus_t)s), *got = cublasLtGetStatusString((cublasStatus_t)s);
        CHECK(!strcmp(want, got), "status %d: real '%s', emulated '%s'", s, want, got);
    }
    dlclose(lib);
}

/* Random problems of every type combination: deferred until the stream is synchronised, then bit-exact. */
static void test_matmul_on_a_stream(void) {
    if (ctx_up()) return;
    long live0 = live_blaslt();
    CUstream s;
    CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS, "stream");
    for (int it = 0; it < 25; it++) {
        lt_problem q = lt_random(it % 5);
        lt_run r;
        cublasStatus_t st = lt_setup(&r, &q, 4);
        CHECK(st == CUBLAS_STATUS_SUCCESS, "heuristic %d: %s", (int)st, bertc_emudev_last_error());
        long before = matmuls_done();
        float alpha = q.alpha, beta = q.beta;
        void *d0 = malloc(r.bytes[3]);
        memcpy(d0, r.dptr[3], r.bytes[3]);
        st = lt_matmul(&r, &alpha, &beta, s);
        CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasLtMatmul %d: %s", (int)st, bertc_emudev_last_error());
        /* Deferred: nothing has happened to D before the synchronisation. */
        CHECK(!memcmp(d0, r.dptr[3], r.bytes[3]), "D changed before cuStreamSynchronize");
        CHECK(matmuls_done() == before, "a matmul ran before cuStreamSynchronize");
        CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS, "sync: %s", bertc_emudev_last_error());
        CHECK(matmuls_done() == before + 1, "matmul counter %ld, expected %ld", matmuls_done(), before + 1);
        void *want = lt_expected(&r, alpha, beta);
        CHECK(!memcmp(want, r.dptr[3], r.bytes[3]), "D differs from emudev_gemm_compute: %s%s m=%lld n=%lld k=%lld "
              "types %d/%d batch %d epi %u in_place %d", q.transa ? "T" : "N", q.transb ? "T" : "N", (long long)q.m,
              (long long)q.n, (long long)q.k, (int)q.ab, (int)q.cd, q.batch, q.epilogue, q.in_place);
        free(want);
        free(d0);
        lt_teardown(&r);
    }
    CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "stream destroy");
    CHECK(live_blaslt() == live0, "live cuBLASLt objects %ld, expected %ld", live_blaslt(), live0);
    ctx_down();
}

/* alpha and beta are host values read by the call, not at execution; algo NULL works too. */
static void test_alpha_beta_read_at_call(void) {
    if (ctx_up()) return;
    lt_problem q = {.m = 8, .n = 5, .k = 7, .ab = CUDA_R_32F, .cd = CUDA_R_32F, .batch = 1, .epilogue = 1};
    lt_run r;
    CHECK(lt_setup(&r, &q, 256) == CUBLAS_STATUS_SUCCESS, "heuristic: %s", bertc_emudev_last_error());
    float alpha = 2.0f, beta = 0.0f;
    CHECK(lt_matmul(&r, &alpha, &beta, NULL) == CUBLAS_STATUS_SUCCESS, "matmul: %s", bertc_emudev_last_error());
    alpha = 100.0f;
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    void *want = lt_expected(&r, 2.0f, 0.0f);
    CHECK(!memcmp(want, r.dptr[3], r.bytes[3]), "alpha was not read at the call");
    free(want);
    /* algo NULL: the library picks one itself. */
    alpha = 3.0f;
    CHECK(cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2],
                         r.dptr[3], r.lay[3], NULL, NULL, 0, NULL) == CUBLAS_STATUS_SUCCESS,
          "algo NULL, C NULL with beta 0: %s", bertc_emudev_last_error());
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    want = lt_expected(&r, 3.0f, 0.0f);
    CHECK(!memcmp(want, r.dptr[3], r.bytes[3]), "algo NULL result");
    free(want);
    lt_teardown(&r);
    ctx_down();
}

/* Captured into a graph, the matmul runs once per launch, on the operands' contents at that time. */
static void test_graph_capture(void) {
    if (ctx_up()) return;
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "stream");
    lt_problem q = {.transa = 1, .m = 16, .n = 9, .k = 12, .ab = CUDA_R_16F, .cd = CUDA_R_16F, .batch = 1,
                    .epilogue = 6};
    lt_run r;
    CHECK(lt_setup(&r, &q, 256) == CUBLAS_STATUS_SUCCESS, "heuristic: %s", bertc_emudev_last_error());
    float alpha = 1.0f, beta = 0.0f;
    long before = matmuls_done();
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture: %s",
          bertc_emudev_last_error());
    CHECK(lt_matmul(&r, &alpha, &beta, s) == CUBLAS_STATUS_SUCCESS, "matmul in capture: %s", bertc_emudev_last_error());
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_SUCCESS, "end capture: %s", bertc_emudev_last_error());
    CHECK(cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS, "instantiate: %s", bertc_emudev_last_error());
    CHECK(matmuls_done() == before, "capture executed the matmul");
    for (int launch = 0; launch < 2; launch++) {
        /* New A for each launch: the graph must read it then. */
        for (size_t e = 0; e < r.bytes[0] / 2; e++) put(r.host[0], e, q.ab, (float)(check_rng_uniform() - 0.5));
        CHECK(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)r.dptr[0], r.host[0], r.bytes[0]) == CUDA_SUCCESS, "upload");
        CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS, "launch: %s", bertc_emudev_last_error());
        CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS, "sync: %s", bertc_emudev_last_error());
        void *want = lt_expected(&r, 1.0f, 0.0f);
        CHECK(!memcmp(want, r.dptr[3], r.bytes[3]), "graph launch %d result", launch);
        free(want);
    }
    CHECK(matmuls_done() == before + 2, "two launches ran %ld matmuls", matmuls_done() - before);
    CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS, "graph destroy");
    CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "stream destroy");
    lt_teardown(&r);
    ctx_down();
}

/* A base problem for the rejection tests: 6x5 = op(A) 6x4 * op(B) 4x5. */
typedef struct lt_shape {
    cudaDataType t[4];
    uint64_t rows[4], cols[4];
    int64_t ld[4];
    int32_t batch[4];
    int32_t transa, transb;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    uint32_t epilogue;
    int32_t bias_type;
} lt_shape;

static lt_shape lt_shape_base(void) {
    lt_shape s = {
        .t = {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F},
        .rows = {4, 4, 6, 6}, .cols = {6, 5, 5, 5}, .ld = {4, 4, 6, 6}, .batch = {1, 1, 1, 1},
        .transa = CUBLAS_OP_T, .transb = CUBLAS_OP_N, .compute = CUBLAS_COMPUTE_32F, .scale = CUDA_R_32F,
        .epilogue = CUBLASLT_EPILOGUE_DEFAULT, .bias_type = -1,
    };
    return s;
}

static cublasStatus_t lt_heuristic(const lt_shape *s, int *count) {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t l[4];
    cublasLtMatmulPreference_t p;
    cublasLtCreate(&h);
    cublasLtMatmulDescCreate(&d, s->compute, s->scale);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &s->transa, sizeof s->transa);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &s->transb, sizeof s->transb);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &s->epilogue, sizeof s->epilogue);
    if (s->bias_type != -1)
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &s->bias_type, sizeof s->bias_type);
    for (int i = 0; i < 4; i++) {
        cublasLtMatrixLayoutCreate(&l[i], s->t[i], s->rows[i], s->cols[i], s->ld[i]);
        if (s->batch[i] != 1) {
            int64_t stride = s->ld[i] * (int64_t)s->cols[i];
            cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &s->batch[i], sizeof(int32_t));
            cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
        }
    }
    cublasLtMatmulPreferenceCreate(&p);
    cublasLtMatmulHeuristicResult_t res[2];
    *count = -1;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, d, l[0], l[1], l[2], l[3], p, 2, res, count);
    cublasLtMatmulPreferenceDestroy(p);
    for (int i = 0; i < 4; i++) cublasLtMatrixLayoutDestroy(l[i]);
    cublasLtMatmulDescDestroy(d);
    cublasLtDestroy(h);
    return st;
}

static void test_heuristic_accepts_and_rejects(void) {
    long live0 = live_blaslt();
    int count;
    lt_shape s = lt_shape_base();
    CHECK(lt_heuristic(&s, &count) == CUBLAS_STATUS_SUCCESS && count == 1, "the base problem: %s",
          bertc_emudev_last_error());
#define EXPECT(status, mutate, what)                                                                             \
    do {                                                                                                         \
        lt_shape x = lt_shape_base();                                                                            \
        mutate;                                                                                                  \
        cublasStatus_t st_ = lt_heuristic(&x, &count);                                                           \
        CHECK(st_ == (status) && (st_ != CUBLAS_STATUS_SUCCESS ? count == 0 : count == 1),                       \
              "%s: status %d (expected %d), count %d: %s", what, (int)st_, (int)(status), count,                 \
              bertc_emudev_last_error());                                                                        \
    } while (0)
    /* Accepted combinations of the cuBLASLt type table. */
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.t[2] = x.t[3] = CUDA_R_32F), "f16 -> f32");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.t[0] = x.t[1] = x.t[2] = x.t[3] = CUDA_R_16BF), "bf16 -> bf16");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.t[0] = x.t[1] = CUDA_R_16BF, x.t[2] = x.t[3] = CUDA_R_32F), "bf16 -> f32");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.t[0] = x.t[1] = x.t[2] = x.t[3] = CUDA_R_32F), "f32");
    EXPECT(CUBLAS_STATUS_SUCCESS,
           (x.t[0] = x.t[1] = x.t[2] = x.t[3] = CUDA_R_32F, x.compute = CUBLAS_COMPUTE_32F_FAST_TF32), "f32 tf32");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.epilogue = CUBLASLT_EPILOGUE_RELU_BIAS, x.bias_type = CUDA_R_16F), "bias f16");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.transa = CUBLAS_OP_N, x.rows[0] = 6, x.cols[0] = 4, x.ld[0] = 6), "NN");
    EXPECT(CUBLAS_STATUS_SUCCESS, (x.batch[0] = x.batch[1] = x.batch[2] = x.batch[3] = 3), "batched");
    /* Types cuBLASLt does not combine. */
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.t[1] = CUDA_R_32F), "A f16 with B f32");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.t[0] = x.t[1] = CUDA_R_32F), "f32 A/B with f16 C/D");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.t[2] = CUDA_R_32F), "C f32 with D f16");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.t[0] = x.t[1] = CUDA_R_16BF), "bf16 A/B with f16 C/D");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.t[0] = x.t[1] = x.t[2] = x.t[3] = CUDA_R_64F), "f64");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.compute = CUBLAS_COMPUTE_16F), "compute 16F");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.compute = CUBLAS_COMPUTE_32F_FAST_TF32), "tf32 with f16 operands");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.scale = CUDA_R_16F), "scale 16F");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.epilogue = CUBLASLT_EPILOGUE_GELU), "GELU epilogue");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.epilogue = CUBLASLT_EPILOGUE_BIAS, x.bias_type = CUDA_R_32F),
           "f32 bias with f16 D");
    /* Shapes that do not multiply. */
    EXPECT(CUBLAS_STATUS_INVALID_VALUE, (x.transa = CUBLAS_OP_N), "A not transposed: 4x6 * 4x5");
    EXPECT(CUBLAS_STATUS_INVALID_VALUE, (x.rows[1] = 3, x.ld[1] = 3), "k mismatch");
    EXPECT(CUBLAS_STATUS_INVALID_VALUE, (x.cols[2] = 4), "C shape differs from D");
    EXPECT(CUBLAS_STATUS_INVALID_VALUE, (x.ld[3] = 5), "ld < rows");
    EXPECT(CUBLAS_STATUS_INVALID_VALUE, (x.batch[3] = 2, x.batch[0] = x.batch[1] = x.batch[2] = 1 + 2),
           "batch counts differ");
    EXPECT(CUBLAS_STATUS_NOT_SUPPORTED, (x.rows[2] = x.rows[3] = 0, x.cols[0] = 0), "empty matrices");
#undef EXPECT
    /* The documented argument errors. */
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t l;
    cublasLtMatmulPreference_t p;
    cublasLtMatmulHeuristicResult_t res;
    CHECK(!cublasLtCreate(&h) && !cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) &&
              !cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 4, 4, 4) && !cublasLtMatmulPreferenceCreate(&p),
          "create");
    CHECK(cublasLtMatmulAlgoGetHeuristic(h, d, l, l, l, l, p, 0, &res, &count) == CUBLAS_STATUS_INVALID_VALUE &&
              count == 0,
          "requestedAlgoCount 0");
    CHECK(cublasLtMatmulAlgoGetHeuristic(NULL, d, l, l, l, l, p, 1, &res, &count) == CUBLAS_STATUS_NOT_INITIALIZED,
          "NULL handle");
    CHECK(cublasLtMatmulAlgoGetHeuristic(h, d, l, l, l, l, p, 1, &res, &count) == CUBLAS_STATUS_SUCCESS && count == 1,
          "square NN");
    int32_t op = CUBLAS_OP_T;
    int64_t op64 = CUBLAS_OP_T;
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &op64, sizeof op64) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "wrong sizeInBytes");
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, NULL, sizeof op) == CUBLAS_STATUS_INVALID_VALUE,
          "NULL buf");
    op = 7;
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof op) == CUBLAS_STATUS_INVALID_VALUE,
          "TRANSA 7");
    int32_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode) ==
              CUBLAS_STATUS_NOT_SUPPORTED,
          "device pointer mode");
    int32_t order = CUBLASLT_ORDER_ROW;
    CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) ==
              CUBLAS_STATUS_NOT_SUPPORTED,
          "row order");
    int32_t zero = 0;
    CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &zero, sizeof zero) ==
              CUBLAS_STATUS_INVALID_VALUE,
          "batch count 0");
    float waves = 1.0f;
    CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, &waves, sizeof waves) ==
              CUBLAS_STATUS_NOT_SUPPORTED,
          "an attribute the emulation lacks");
    CHECK(!cublasLtMatmulPreferenceDestroy(p) && !cublasLtMatrixLayoutDestroy(l) && !cublasLtMatmulDescDestroy(d) &&
              !cublasLtDestroy(h),
          "destroy");
    CHECK(cublasLtDestroy(NULL) == CUBLAS_STATUS_NOT_INITIALIZED, "destroying a NULL handle");
    CHECK(cublasLtMatmulDescDestroy(NULL) == CUBLAS_STATUS_SUCCESS, "destroying a NULL descriptor");
    CHECK(live_blaslt() == live0, "live cuBLASLt objects %ld, expected %ld", live_blaslt(), live0);
}

/* The algorithm holds the preference's alignments; the matmul refuses pointers less aligned. */
static void test_alignment_and_allocation_checks(void) {
    if (ctx_up()) return;
    lt_problem q = {.m = 8, .n = 4, .k = 8, .ab = CUDA_R_16F, .cd = CUDA_R_16F, .batch = 1, .epilogue = 4};
    float alpha = 1.0f, beta = 0.0f;
    lt_run r;
    /* Default preference alignment (256): A two bytes into its allocation is refused. */
    CHECK(lt_setup(&r, &q, 256) == CUBLAS_STATUS_SUCCESS, "heuristic");
    void *shifted = dev_alloc(r.bytes[0] + 2);
    cublasStatus_t st = cublasLtMatmul(r.h, r.desc, &alpha, (char *)shifted + 2, r.lay[0], r.dptr[1], r.lay[1], &beta,
                                       NULL, r.lay[2], r.dptr[3], r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED, "A off by 2 bytes, algo for 256: status %d", (int)st);
    CHECK(strstr(bertc_emudev_last_error(), "aligned"), "message: %s", bertc_emudev_last_error());
    dev_free(shifted);
    lt_teardown(&r);
    /* Declared 2-byte alignment: the same offset is fine, and the result right. */
    CHECK(lt_setup(&r, &q, 2) == CUBLAS_STATUS_SUCCESS, "heuristic");
    shifted = dev_alloc(r.bytes[0] + 2);
    void *a2 = (char *)shifted + 2;
    memcpy(a2, r.host[0], r.bytes[0]);   /* device memory is host memory here */
    st = cublasLtMatmul(r.h, r.desc, &alpha, a2, r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2], r.dptr[3],
                        r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "A off by 2 bytes, algo for 2: status %d: %s", (int)st,
          bertc_emudev_last_error());
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    void *want = lt_expected(&r, 1.0f, 0.0f);
    CHECK(!memcmp(want, r.dptr[3], r.bytes[3]), "result with a 2-byte-aligned A");
    free(want);
    /* Not even element-aligned: refused whatever the preference said. */
    st = cublasLtMatmul(r.h, r.desc, &alpha, (char *)shifted + 1, r.lay[0], r.dptr[1], r.lay[1], &beta, NULL,
                        r.lay[2], r.dptr[3], r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED, "A at an odd address: status %d", (int)st);
    /* Out of its allocation: D one column too wide for its buffer. */
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2],
                        (char *)r.dptr[3] + 2 * r.ld[3], r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE && strstr(bertc_emudev_last_error(), "allocation"),
          "D past its allocation: status %d: %s", (int)st, bertc_emudev_last_error());
    /* Host memory is not device memory. */
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.host[0], r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2],
                        r.dptr[3], r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "A in host memory: status %d", (int)st);
    st = cublasLtMatmul(r.h, r.desc, &alpha, NULL, r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2], r.dptr[3],
                        r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "A NULL: status %d", (int)st);
    /* beta != 0 needs C. */
    beta = 1.0f;
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, NULL, r.lay[2],
                        r.dptr[3], r.lay[3], &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "beta 1 with C NULL: status %d", (int)st);
    beta = 0.0f;
    /* The bias epilogue needs its pointer. */
    const void *nobias = NULL;
    cublasLtMatmulDescSetAttribute(r.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &nobias, sizeof nobias);
    st = lt_matmul(&r, &alpha, &beta, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "bias epilogue without bias: status %d", (int)st);
    /* An algorithm found for another epilogue or type. */
    uint32_t relu = CUBLASLT_EPILOGUE_RELU;
    cublasLtMatmulDescSetAttribute(r.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, sizeof relu);
    st = lt_matmul(&r, &alpha, &beta, NULL);
    CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED, "algo for BIAS used with RELU: status %d", (int)st);
    cublasLtMatmulAlgo_t junk;
    memset(&junk, 0x5a, sizeof junk);
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, r.dptr[2], r.lay[2],
                        r.dptr[3], r.lay[3], &junk, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "a made-up algo: status %d", (int)st);
    /* A workspace must be device memory of the size given. */
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, r.dptr[2], r.lay[2],
                        r.dptr[3], r.lay[3], NULL, r.host[0], 64, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE, "host workspace: status %d", (int)st);
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    dev_free(shifted);
    lt_teardown(&r);
    /* In place needs Cdesc == Ddesc. */
    lt_problem ip = {.m = 5, .n = 3, .k = 4, .ab = CUDA_R_32F, .cd = CUDA_R_32F, .batch = 1, .epilogue = 1,
                     .in_place = 1, .pad = 1};
    CHECK(lt_setup(&r, &ip, 4) == CUBLAS_STATUS_SUCCESS, "heuristic");
    cublasLtMatrixLayout_t wide;
    cublasLtMatrixLayoutCreate(&wide, CUDA_R_32F, 5, 3, 5);
    cublasLtMatrixLayout_t narrow;
    cublasLtMatrixLayoutCreate(&narrow, CUDA_R_32F, 5, 3, 6);
    beta = 1.0f;
    st = cublasLtMatmul(r.h, r.desc, &alpha, r.dptr[0], r.lay[0], r.dptr[1], r.lay[1], &beta, r.dptr[3], wide,
                        r.dptr[3], narrow, &r.res.algo, NULL, 0, NULL);
    CHECK(st == CUBLAS_STATUS_INVALID_VALUE && strstr(bertc_emudev_last_error(), "in place"),
          "C == D with ldc 5, ldd 6: status %d: %s", (int)st, bertc_emudev_last_error());
    cublasLtMatrixLayoutDestroy(wide);
    cublasLtMatrixLayoutDestroy(narrow);
    lt_teardown(&r);
    ctx_down();
}

static void test_failure_injection(void) {
    if (ctx_up()) return;
    long live0 = live_blaslt();
    cublasLtHandle_t h = NULL;
    bertc_emudev_fail("cublasLtCreate", 1, CUBLAS_STATUS_ALLOC_FAILED);
    CHECK(cublasLtCreate(&h) == CUBLAS_STATUS_ALLOC_FAILED, "injected cublasLtCreate failure");
    CHECK(live_blaslt() == live0, "a failed create counted an object");
    lt_problem q = {.m = 4, .n = 4, .k = 4, .ab = CUDA_R_32F, .cd = CUDA_R_32F, .batch = 1, .epilogue = 1};
    lt_run r;
    bertc_emudev_fail("cublasLtMatmulAlgoGetHeuristic", 1, CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK(lt_setup(&r, &q, 4) == CUBLAS_STATUS_NOT_SUPPORTED, "injected heuristic failure");
    int count = -1;
    CHECK(cublasLtMatmulAlgoGetHeuristic(r.h, r.desc, r.lay[0], r.lay[1], r.lay[2], r.lay[3], r.pref, 1, &r.res,
                                         &count) == CUBLAS_STATUS_SUCCESS && count == 1,
          "the next heuristic call succeeds");
    float alpha = 1.0f, beta = 0.0f;
    long before = matmuls_done();
    bertc_emudev_fail("cublasLtMatmul", 2, CUBLAS_STATUS_EXECUTION_FAILED);
    CHECK(lt_matmul(&r, &alpha, &beta, NULL) == CUBLAS_STATUS_SUCCESS, "first matmul");
    CHECK(lt_matmul(&r, &alpha, &beta, NULL) == CUBLAS_STATUS_EXECUTION_FAILED, "second matmul: injected");
    CHECK(strstr(bertc_emudev_last_error(), "cublasLtMatmul"), "message: %s", bertc_emudev_last_error());
    CHECK(lt_matmul(&r, &alpha, &beta, NULL) == CUBLAS_STATUS_SUCCESS, "third matmul");
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    CHECK(matmuls_done() == before + 2, "%ld matmuls ran, expected 2", matmuls_done() - before);
    /* Null device: accepted, counted, not computed. */
    bertc_emudev_set_null(1);
    memset(r.dptr[3], 0x7f, r.bytes[3]);
    CHECK(lt_matmul(&r, &alpha, &beta, NULL) == CUBLAS_STATUS_SUCCESS, "null-device matmul");
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "sync");
    bertc_emudev_set_null(0);
    CHECK(((unsigned char *)r.dptr[3])[0] == 0x7f, "the null device computed the matmul");
    CHECK(matmuls_done() == before + 3, "null-device matmul not counted");
    /* A stream that does not exist: the enqueue fails, as a launch would. */
    CUstream s;
    CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS, "stream");
    CHECK(cuStreamDestroy(s) == CUDA_SUCCESS, "stream destroy");
    cublasStatus_t st = lt_matmul(&r, &alpha, &beta, s);
    CHECK(st == CUBLAS_STATUS_EXECUTION_FAILED, "matmul on a destroyed stream: status %d", (int)st);
    lt_teardown(&r);
    CHECK(live_blaslt() == live0, "live cuBLASLt objects %ld, expected %ld", live_blaslt(), live0);
    ctx_down();
}

/* A graph keeps operand addresses; freeing one and launching is an illegal address, like a GPU fault. */
static void test_freed_operand_faults_in_graph(void) {
    if (ctx_up()) return;
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "stream");
    lt_problem q = {.m = 6, .n = 6, .k = 6, .ab = CUDA_R_32F, .cd = CUDA_R_32F, .batch = 1, .epilogue = 1};
    lt_run r;
    CHECK(lt_setup(&r, &q, 4) == CUBLAS_STATUS_SUCCESS, "heuristic");
    float alpha = 1.0f, beta = 0.0f;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin capture");
    CHECK(lt_matmul(&r, &alpha, &beta, s) == CUBLAS_STATUS_SUCCESS, "matmul in capture: %s", bertc_emudev_last_error());
    CHECK(cuStreamEndCapture(s, &graph) == CUDA_SUCCESS && cuGraphInstantiate(&exec, graph, 0) == CUDA_SUCCESS,
          "graph: %s", bertc_emudev_last_error());
    dev_free(r.dptr[1]);
    r.dptr[1] = NULL;
    CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS, "launch: %s", bertc_emudev_last_error());
    CUresult rc = cuStreamSynchronize(s);
    CHECK(rc == CUDA_ERROR_ILLEGAL_ADDRESS, "sync after the fault: %d (%s)", (int)rc, bertc_emudev_last_error());
    CHECK(strstr(bertc_emudev_last_error(), "operand B"), "message: %s", bertc_emudev_last_error());
    cuGraphExecDestroy(exec);
    cuGraphDestroy(graph);
    cuStreamDestroy(s);
    lt_teardown(&r);
    ctx_down();   /* the last release clears the sticky error */
    if (ctx_up()) return;
    CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS, "a fresh context is usable: %s", bertc_emudev_last_error());
    ctx_down();
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_status_strings_match_the_real_library);
    CHECK_CASE(test_matmul_on_a_stream);
    CHECK_CASE(test_alpha_beta_read_at_call);
    CHECK_CASE(test_graph_capture);
    CHECK_CASE(test_heuristic_accepts_and_rejects);
    CHECK_CASE(test_alignment_and_allocation_checks);
    CHECK_CASE(test_failure_injection);
    CHECK_CASE(test_freed_operand_faults_in_graph);
    return check_summary();
}
