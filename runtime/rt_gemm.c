/*
 * rt_gemm — a context's cuBLASLt steps: descriptors, the algorithm, and the
 * enqueue the graph capture (and the per-step bench) calls.
 *
 * Algorithms need a device, so the plan stores shapes and layouts and the
 * choice is made here, per context, for this GPU and these pointers (their
 * real alignments go into the preference).  cuBLASLt's heuristic ranks its
 * candidates by a model; at batch 1 and M <= 512 the model's first is
 * often not the fastest (small-M problems are where split-K and tile
 * choices matter most), so with options.time_algorithms (the default) each
 * GEMM problem is *timed*: up to RT_MAX_ALGOS candidates that fit the
 * workspace.  Every candidate first runs once untimed (lazy loading, clock
 * ramp-up and cold caches would otherwise fall on the first ones timed,
 * which are the heuristic's best), then RT_TIME_ROUNDS rounds time each in
 * turn, RT_TIME_REPS runs between two CUDA events on the context's stream,
 * and a candidate's time is its best round.  The heuristic's first is kept
 * unless another is faster by more than RT_TIME_MARGIN: a choice made on
 * noise would only make contexts disagree.  A candidate whose
 * cublasLtMatmul call fails is dropped; only a failure of the device
 * itself (an event, a synchronisation) fails the context.
 *
 * Different algorithms sum K in different orders, so two contexts that
 * chose differently would give the same request different bits.  The
 * choice is therefore the device state's (rt_device.algos), shared by
 * every context of the plan on the device: the first context to decide a
 * problem (same shapes, layouts, types, epilogue and operand alignments)
 * decides it for all — a later one takes the choice without timing, and
 * one that timed the same problem at the same time adopts the choice
 * published first.  A BERT-base plan has about four distinct problems per
 * bucket.  With a single candidate there is nothing to choose and nothing
 * is run.
 *
 * Timing runs on the arena and the weights, before any graph is captured:
 * the arena holds whatever it holds (activations are scratch), the weights
 * are only read.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define RT_TIME_REPS 5
#define RT_TIME_ROUNDS 3
#define RT_TIME_MARGIN 0.03f

static cudaDataType_t rt_cuda_type(plan_dtype t) {
    return t == PLAN_DTYPE_F16 ? CUDA_R_16F : t == PLAN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Largest power of two (at most 256) dividing the address: what cuBLASLt
 * may assume about the operand. */
static uint32_t rt_alignment(CUdeviceptr p) {
    uint32_t a = 256;
    while (a > 1 && (p & (a - 1))) a >>= 1;
    return a;
}

/* ------------------------------------------------------------ descriptors */

static bertc_status rt_layout(bertc_context *c, cublasLtMatrixLayout_t *l, plan_dtype t, int64_t rows, int64_t cols,
                              int64_t ld, int batch, int64_t stride, const char *step, const char *which) {
    cublasStatus_t s = c->t->cublasLtMatrixLayoutCreate(l, rt_cuda_type(t), (uint64_t)rows, (uint64_t)cols, ld);
    if (s != CUBLAS_STATUS_SUCCESS) {
        *l = NULL;
        return rt_blaslt_error(c->t, s, c->err, sizeof c->err, "step %s: cublasLtMatrixLayoutCreate(%s)", step, which);
    }
    if (batch > 1) {
        int32_t bc = batch;
        if ((s = c->t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc)) !=
                CUBLAS_STATUS_SUCCESS ||
            (s = c->t->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof stride)) != CUBLAS_STATUS_SUCCESS)
            return rt_blaslt_error(c->t, s, c->err, sizeof c->err, "step %s: batch of layout %s", step, which);
    }
    return BERTC_STATUS_OK;
}

void rt_gemm_free(const device_table *t, rt_gemm *g) {
    if (g->desc) t->cublasLtMatmulDescDestroy(g->desc);
    if (g->a) t->cublasLtMatrixLayoutDestroy(g->a);
    if (g->b) t->cublasLtMatrixLayoutDestroy(g->b);
    if (g->c) t->cublasLtMatrixLayoutDestroy(g->c);
    if (g->d) t->cublasLtMatrixLayoutDestroy(g->d);
    memset(g, 0, sizeof *g);
}

/* The operation descriptor: transposes, epilogue, bias. */
static bertc_status rt_gemm_desc(bertc_context *c, const sched_step *st, rt_gemm *g) {
    const sched_gemm *s = &st->gemm;
    const device_table *t = c->t;
    cublasStatus_t r = t->cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (r != CUBLAS_STATUS_SUCCESS) {
        g->desc = NULL;
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulDescCreate", st->name);
    }
    int32_t ta = s->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    uint32_t ep = (uint32_t)s->epilogue;
    if ((r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) ||
        (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep)))
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulDescSetAttribute", st->name);
    if (s->epilogue == SCHED_EPILOGUE_BIAS || s->epilogue == SCHED_EPILOGUE_RELU_BIAS) {
        CUdeviceptr bias = rt_resolve(c, s->bias);
        int32_t bt = rt_cuda_type(s->bias_type);
        if ((r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) ||
            (r = t->cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt)))
            return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: bias attributes", st->name);
    }
    return BERTC_STATUS_OK;
}

/* Descriptors and layouts of one GEMM step, operands resolved. */
static bertc_status rt_gemm_describe(bertc_context *c, const sched_step *st, rt_gemm *g) {
    const sched_gemm *s = &st->gemm;
    g->pa = rt_resolve(c, s->a);
    g->pb = rt_resolve(c, s->b);
    g->pd = rt_resolve(c, s->d);
    g->pc = s->c.buf == SCHED_BUF_NONE ? g->pd : rt_resolve(c, s->c);
    bertc_status bs = rt_gemm_desc(c, st, g);
    if (bs) return bs;
    if ((bs = rt_layout(c, &g->a, s->ab_type, s->transa ? s->k : s->m, s->transa ? s->m : s->k, s->lda,
                        s->batch_count, s->stride_a, st->name, "A")) ||
        (bs = rt_layout(c, &g->b, s->ab_type, s->transb ? s->n : s->k, s->transb ? s->k : s->n, s->ldb,
                        s->batch_count, s->stride_b, st->name, "B")) ||
        (bs = rt_layout(c, &g->c, s->cd_type, s->m, s->n, s->ldc, s->batch_count, s->stride_c, st->name, "C")) ||
        (bs = rt_layout(c, &g->d, s->cd_type, s->m, s->n, s->ldd, s->batch_count, s->stride_d, st->name, "D")))
        return bs;
    return BERTC_STATUS_OK;
}

/* The heuristic's candidates for the step (at most RT_MAX_ALGOS), given
 * the operands' real alignments and the workspace we have; those that
 * cannot run (a state other than success) are left out. */
static bertc_status rt_gemm_candidates(bertc_context *c, const sched_step *st, rt_gemm *g,
                                       cublasLtMatmulHeuristicResult_t *res, int *n) {
    const sched_gemm *s = &st->gemm;
    const device_table *t = c->t;
    cublasLtMatmulPreference_t pref;
    cublasStatus_t r = t->cublasLtMatmulPreferenceCreate(&pref);
    if (r != CUBLAS_STATUS_SUCCESS)
        return rt_blaslt_error(t, r, c->err, sizeof c->err, "step %s: cublasLtMatmulPreferenceCreate", st->name);
    uint64_t ws = c->opt.workspace_bytes;
    uint32_t al[4] = {rt_alignment(g->pa), rt_alignment(g->pb), rt_alignment(g->pc), rt_alignment(g->pd)};
    static const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    r = t->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    for (int i = 0; i < 4 && r == CUBLAS_STATUS_SUCCESS; i++)
        r = t->cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof al[i]);
    int found = 0;
    memset(res, 0, RT_MAX_ALGOS * sizeof *res);
    if (r == CUBLAS_STATUS_SUCCESS)
        r = t->cublasLtMatmulAlgoGetHeuristic(c->lt, g->desc, g->a, g->b, g->c, g->d, pref, RT_MAX_ALGOS, res, &found);
    t->cublasLtMatmulPreferenceDestroy(pref);
    if (r != CUBLAS_STATUS_SUCCESS)
        return rt_blaslt_error(t, r, c->err, sizeof c->err,
                               "step %s: cublasLtMatmulAlgoGetHeuristic(m=%lld n=%lld k=%lld)", st->name,
                               (long long)s->m, (long long)s->n, (long long)s->k);
    *n = 0;
    for (int i = 0; i < found && i < RT_MAX_ALGOS; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= ws) res[(*n)++] = res[i];
    if (*n < 1)
        return rt_error(BERTC_STATUS_DEVICE, c->err, sizeof c->err,
                        "step %s: cuBLASLt has no algorithm for m=%lld n=%lld k=%lld (%s) with a %llu-byte workspace",
                        st->name, (long long)s->m, (long long)s->n, (long long)s->k, plan_dtype_name(s->ab_type),
                        (unsigned long long)ws);
    return BERTC_STATUS_OK;
}

bertc_status rt_gemm_enqueue(bertc_context *c, const sched_step *st, const rt_gemm *g) {
    const sched_gemm *s = &st->gemm;
    cublasStatus_t r = c->t->cublasLtMatmul(c->lt, g->desc, &s->alpha, (const void *)(uintptr_t)g->pa, g->a,
                                            (const void *)(uintptr_t)g->pb, g->b, &s->beta,
                                            (const void *)(uintptr_t)g->pc, g->c, (void *)(uintptr_t)g->pd, g->d,
                                            &g->algo, (void *)(uintptr_t)c->workspace, g->workspace, c->stream);
    if (r != CUBLAS_STATUS_SUCCESS)
        return rt_blaslt_error(c->t, r, c->err, sizeof c->err, "step %s: cublasLtMatmul", st->name);
    return BERTC_STATUS_OK;
}

/* ------------------------------------------------------------ timing */

/* One run of the candidate in g: 1, or 0 when its cublasLtMatmul call
 * failed (the candidate is dropped, and its message is not the context's
 * error). */
static int rt_gemm_try(bertc_context *c, const sched_step *st, const rt_gemm *g) {
    char keep[RT_ERR_CAP];
    memcpy(keep, c->err, sizeof keep);
    int ok = rt_gemm_enqueue(c, st, g) == BERTC_STATUS_OK;
    memcpy(c->err, keep, sizeof keep);
    return ok;
}

/* RT_TIME_REPS runs of the candidate in g between the events: *ms, or
 * -1 when a cublasLtMatmul call failed; a failing event or
 * synchronisation is the device's failure. */
static bertc_status rt_gemm_time_one(bertc_context *c, const sched_step *st, const rt_gemm *g, float *ms) {
    const device_table *t = c->t;
    *ms = -1.0f;
    int ok = 1;
    CUresult r = t->cuEventRecord(c->ev_start, c->stream);
    for (int i = 0; ok && r == CUDA_SUCCESS && i < RT_TIME_REPS; i++) ok = rt_gemm_try(c, st, g);
    const char *call = "cuEventRecord";
    float elapsed = 0.0f;
    if (r == CUDA_SUCCESS) r = t->cuEventRecord(c->ev_stop, c->stream);
    if (r == CUDA_SUCCESS && (r = t->cuEventSynchronize(c->ev_stop)) != CUDA_SUCCESS) call = "cuEventSynchronize";
    if (r == CUDA_SUCCESS && (r = t->cuEventElapsedTime(&elapsed, c->ev_start, c->ev_stop)) != CUDA_SUCCESS)
        call = "cuEventElapsedTime";
    if (r != CUDA_SUCCESS)
        return rt_cu_error(t, r, c->err, sizeof c->err, "step %s: timing cuBLASLt's candidates (%s)", st->name, call);
    if (ok) *ms = elapsed;
    return BERTC_STATUS_OK;
}

/* The candidate to keep among n: each run once, then timed in
 * RT_TIME_ROUNDS rounds (best round each; -1: dropped); the heuristic's
 * first that runs unless another beats it by RT_TIME_MARGIN.  *pick and
 * *us (per run). */
static bertc_status rt_gemm_time(bertc_context *c, const sched_step *st, rt_gemm *g,
                                 const cublasLtMatmulHeuristicResult_t *res, int n, int *pick, float *us) {
    float best[RT_MAX_ALGOS];
    for (int i = 0; i < n; i++) {
        g->algo = res[i].algo;
        g->workspace = res[i].workspaceSize;
        best[i] = rt_gemm_try(c, st, g) ? FLT_MAX : -1.0f;
    }
    for (int round = 0; round < RT_TIME_ROUNDS; round++)
        for (int i = 0; i < n; i++) {
            if (best[i] < 0.0f) continue;
            g->algo = res[i].algo;
            g->workspace = res[i].workspaceSize;
            float ms;
            bertc_status bs = rt_gemm_time_one(c, st, g, &ms);
            if (bs) return bs;
            best[i] = ms < 0.0f ? -1.0f : ms < best[i] ? ms : best[i];
        }
    int first = -1, fast = -1;
    for (int i = 0; i < n; i++) {
        if (best[i] < 0.0f) continue;
        if (first < 0) first = i;
        if (fast < 0 || best[i] < best[fast]) fast = i;
    }
    if (first < 0)
        return rt_error(BERTC_STATUS_DEVICE, c->err, sizeof c->err,
                        "step %s: none of cuBLASLt's %d candidates ran (cublasLtMatmul failed for each)", st->name, n);
    *pick = best[fast] < (1.0f - RT_TIME_MARGIN) * best[first] ? fast : first;
    *us = best[*pick] * 1000.0f / RT_TIME_REPS;
    return BERTC_STATUS_OK;
}

/* Everything the choice of algorithm depends on, as bytes to compare. */
typedef struct rt_gemm_key {
    int64_t v[17];
    uint32_t align[4];
} rt_gemm_key;

static rt_gemm_key rt_gemm_key_of(const sched_gemm *s, const rt_gemm *g) {
    rt_gemm_key k;
    memset(&k, 0, sizeof k);
    int64_t v[17] = {s->transa, s->transb, s->m, s->n, s->k, s->lda, s->ldb, s->ldc, s->ldd, s->batch_count,
                     s->stride_a, s->stride_b, s->stride_c, s->stride_d,
                     (int64_t)s->ab_type | (int64_t)s->cd_type << 8 | (int64_t)s->bias_type << 16,
                     (int64_t)s->epilogue, g->pc == g->pd};
    memcpy(k.v, v, sizeof v);
    CUdeviceptr p[4] = {g->pa, g->pb, g->pc, g->pd};
    for (int i = 0; i < 4; i++) k.align[i] = rt_alignment(p[i]);
    return k;
}

/* A problem decided on a device: the algorithm kept, by key. */
struct rt_algo_choice {
    rt_gemm_key key;
    cublasLtMatmulAlgo_t algo;
    float us;
};

/* Under the plan's lock: the index among res[0..n) of the algorithm the
 * device has chosen for key k, or -1 (undecided, or not among them). */
static int rt_choice_find(const rt_device *d, const rt_gemm_key *k, const cublasLtMatmulHeuristicResult_t *res, int n,
                          float *us) {
    for (int i = 0; i < d->nalgos; i++) {
        if (memcmp(&d->algos[i].key, k, sizeof *k)) continue;
        for (int j = 0; j < n; j++)
            if (!memcmp(&res[j].algo, &d->algos[i].algo, sizeof res[j].algo)) {
                *us = d->algos[i].us;
                return j;
            }
    }
    return -1;
}

/* Under the plan's lock: records the choice (best effort: without memory
 * the next context times again). */
static void rt_choice_add(rt_device *d, const rt_gemm_key *k, const cublasLtMatmulAlgo_t *algo, float us) {
    if (d->nalgos == d->cap_algos) {
        int cap = d->cap_algos ? 2 * d->cap_algos : 16;
        struct rt_algo_choice *a = rt_calloc((size_t)cap, sizeof *a);
        if (!a) return;
        if (d->nalgos) memcpy(a, d->algos, (size_t)d->nalgos * sizeof *a);
        free(d->algos);
        d->algos = a;
        d->cap_algos = cap;
    }
    d->algos[d->nalgos++] = (struct rt_algo_choice){*k, *algo, us};
}

static void rt_gemm_take(rt_gemm *g, const cublasLtMatmulHeuristicResult_t *res, int pick, float us) {
    g->algo = res[pick].algo;
    g->workspace = res[pick].workspaceSize;
    g->chosen = pick;
    g->us = us;
}

/* One GEMM step: described, its candidates listed, one chosen (the
 * device's earlier choice, a timed one, or the heuristic's first). */
static bertc_status rt_gemm_make(bertc_context *c, const sched_step *st, rt_gemm *g) {
    cublasLtMatmulHeuristicResult_t res[RT_MAX_ALGOS];
    int n = 0;
    bertc_status bs = rt_gemm_describe(c, st, g);
    if (!bs) bs = rt_gemm_candidates(c, st, g, res, &n);
    if (bs) return bs;
    g->candidates = n;
    rt_gemm_take(g, res, 0, 0.0f);
    if (n < 2 || !c->opt.time_algorithms) return BERTC_STATUS_OK;
    rt_gemm_key k = rt_gemm_key_of(&st->gemm, g);
    float us = 0.0f;
    pthread_mutex_lock(&c->plan->lock);
    int pick = rt_choice_find(c->dev, &k, res, n, &us);
    pthread_mutex_unlock(&c->plan->lock);
    if (pick < 0) {   /* time it (unlocked: milliseconds), then publish unless another context did first */
        if ((bs = rt_gemm_time(c, st, g, res, n, &pick, &us))) return bs;
        pthread_mutex_lock(&c->plan->lock);
        float theirs;
        int other = rt_choice_find(c->dev, &k, res, n, &theirs);
        if (other >= 0) pick = other, us = theirs;
        else rt_choice_add(c->dev, &k, &res[pick].algo, us);
        pthread_mutex_unlock(&c->plan->lock);
    }
    rt_gemm_take(g, res, pick, us);
    return BERTC_STATUS_OK;
}

bertc_status rt_gemms_make(bertc_context *c) {
    const plan *p = &c->plan->p;
    bertc_status bs = BERTC_STATUS_OK;
    for (int b = 0; b < p->nbuckets && !bs; b++) {
        const sched_bucket *bk = &c->dev->buckets[b];
        if (!(c->gemms[b] = rt_calloc((size_t)bk->nsteps, sizeof **c->gemms))) {
            bs = rt_error(BERTC_STATUS_OUT_OF_MEMORY, c->err, sizeof c->err, "out of memory");
            break;
        }
        for (int st = 0; st < bk->nsteps && !bs; st++)
            if (bk->steps[st].kind == SCHED_STEP_GEMM) bs = rt_gemm_make(c, &bk->steps[st], &c->gemms[b][st]);
    }
    return bs;
}
