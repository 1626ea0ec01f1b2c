/*
 * test_e2e — the whole chain, import -> compile -> run, on the emulated
 * device, against Hugging Face transformers (the committed goldens) and the
 * reference executor.
 *
 * The plans are made by `make plans` with the real CLI (bertc import, bertc
 * compile --arch emu; see the Makefile): every tiny variant and MiniLM, in
 * fp32, fp16 and bf16, at the default fusion level (five launches per
 * encoder layer: GEMM_LN and GEMM_SPLITK), and tiny-bert, tiny-bert-tanh
 * and MiniLM again at the baseline level (`-baseline` plans: seven
 * launches, cuBLASLt and separate LayerNorm kernels).  Each plan answers:
 *
 *   - every golden case of its model (lengths 1, 7, 9, 13, the maximum;
 *     token types; masks with zeros at the tail, in the middle, everywhere;
 *     MiniLM's real sentences and a 512-token request);
 *   - fresh random requests at lengths 1, each bucket edge, edge + 1 and the
 *     maximum, with random token types and masks, against the reference
 *     executor run on the model YAML the plan was compiled from;
 *   - the same request before and after the bucket's padding rows were
 *     filled by a longer request, and on a device whose memory starts as
 *     NaN or as large finite numbers: bit-identical outputs, so nothing of
 *     the padding reaches a real row.
 *
 * Tolerances, relative to max |want| per output and case (docs/numerics.md
 * says why these numbers): fp32 plans 1e-4; fp16 and bf16 plans 5e-2 (bf16)
 * / 1.5e-2 (fp16) and a cosine similarity of at least 0.999 for every real
 * row.  Rows of masked query positions are compared too: transformers
 * computes them, and so must bertc.
 */
#include <math.h>

#include "bertc.h"
#include "check.h"
#include "emuctl.h"
#include "golden.h"
#include "model.h"
#include "ref.h"
#include "testreq.h"

static const emuctl *E;

/*
 * Under AddressSanitizer the emulated kernels run about 13 times slower (a
 * MiniLM request of 128 tokens takes 25 s), so the sanitizer build runs
 * MiniLM only up to 64 tokens; the normal build runs every case.  Memory
 * errors do not need long requests to show: every kernel, GEMM and copy of
 * the plan runs at every length.
 */
static int minilm_max_len(void) { return check_sanitized() ? 64 : 1 << 30; }

typedef golden_tol tol;

/* prec: the plan name's precision part, "fp16" or "fp16-baseline". */
static tol tolerance(const char *prec) { return golden_tolerance(prec); }

static int compare(const char *what, const float *got, const float *want, int64_t rows, int64_t cols, tol t) {
    return golden_compare(what, got, want, rows, cols, t, 0);
}

static const char *build_path(const char *fmt, const char *a) {
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    char tmp[256];
    snprintf(tmp, sizeof tmp, fmt, a);
    snprintf(p, 512, "%s/%s", check_build_dir(), tmp);
    return p;
}

typedef struct run {
    float *lhs, *pool, *sent;   /* sent: sentence_embedding, when the plan has one */
} run;

static int run_plan(bertc_context *c, bertc_plan *pl, const bertc_request *rq, run *out) {
    memset(out, 0, sizeof *out);
    bertc_status st = bertc_infer(c, rq);
    CHECK(st == BERTC_STATUS_OK, "infer len %lld: %s", (long long)rq->len, bertc_context_error(c));
    if (st) return -1;
    int64_t H = bertc_plan_hidden(pl);
    out->lhs = malloc((size_t)(rq->len * H) * sizeof(float));
    st = bertc_output_read(c, bertc_plan_output_index(pl, "last_hidden_state"), out->lhs, (size_t)(rq->len * H));
    CHECK(st == BERTC_STATUS_OK, "read: %s", bertc_context_error(c));
    int pi = bertc_plan_output_index(pl, "pooler_output");
    if (pi >= 0) {
        out->pool = malloc((size_t)H * sizeof(float));
        st = bertc_output_read(c, pi, out->pool, (size_t)H);
        CHECK(st == BERTC_STATUS_OK, "read pooler: %s", bertc_context_error(c));
    }
    int si = bertc_plan_output_index(pl, "sentence_embedding");
    if (si >= 0) {
        out->sent = malloc((size_t)H * sizeof(float));
        st = bertc_output_read(c, si, out->sent, (size_t)H);
        CHECK(st == BERTC_STATUS_OK, "read sentence_embedding: %s", bertc_context_error(c));
    }
    return 0;
}

static void run_free(run *r) {
    free(r->lhs);
    free(r->pool);
    free(r->sent);
}

/* sentence-transformers' mean pooling + Normalize of transformers' own
 * last_hidden_state (the golden), in double: what the MiniLM plans'
 * sentence_embedding must be. */
static void st_mean_normalize(const float *lhs, const int32_t *mask, int64_t len, int64_t H, float *out) {
    double *acc = calloc((size_t)H, sizeof *acc), cnt = 0, ss = 0;
    for (int64_t s = 0; s < len; s++) {
        if (mask && !mask[s]) continue;
        cnt += 1;
        for (int64_t k = 0; k < H; k++) acc[k] += lhs[s * H + k];
    }
    for (int64_t k = 0; k < H; k++) {
        acc[k] /= cnt > 0 ? cnt : 1e-9;
        ss += acc[k] * acc[k];
    }
    double norm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
    for (int64_t k = 0; k < H; k++) out[k] = (float)(acc[k] / norm);
    free(acc);
}

/* The emulated device, or a GPU when BERTC_TEST_DEVICE=cuda (tools/gpu_validate.sh
 * runs this suite so, on plans compiled for the GPU's arch as well). */
static bertc_device_kind test_device(void) {
    const char *e = getenv("BERTC_TEST_DEVICE");
    return e && !strcmp(e, "cuda") ? BERTC_DEVICE_CUDA : BERTC_DEVICE_EMULATED;
}

static bertc_context *emu_context(bertc_plan *pl) {
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = test_device();
    o.capture_on_first_use = 1;
    bertc_context *c = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "context: %s", err);
    return c;
}

/* ------------------------------------------------------------ against transformers */

static void check_goldens(const char *model, const char *prec) {
    char name[128];
    snprintf(name, sizeof name, "%s-%s", model, prec);
    golden_file g;
    char err[512];
    char gpath[512];
    snprintf(gpath, sizeof gpath, "tests/golden/%s.bgld", model);
    if (golden_load(&g, gpath, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    bertc_plan *pl = NULL;
    if (bertc_plan_open(build_path("plans/%s.plan", name), &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        golden_free(&g);
        return;
    }
    bertc_context *c = emu_context(pl);
    tol t = tolerance(prec);
    int limit = strncmp(model, "all-MiniLM", 10) ? 1 << 30 : minilm_max_len();
    for (int i = 0; c && i < g.count; i++) {
        const golden_case *gc = &g.cases[i];
        if (gc->len > limit) {
            printf("  (%s %s: %d tokens, skipped under the sanitizer)\n", name, gc->name, gc->len);
            continue;
        }
        bertc_request rq = {gc->input_ids, gc->token_type_ids, gc->attention_mask, gc->len};
        run r;
        if (run_plan(c, pl, &rq, &r)) continue;
        char what[256];
        snprintf(what, sizeof what, "%s %s last_hidden_state vs transformers", name, gc->name);
        compare(what, r.lhs, gc->last_hidden_state, gc->len, gc->hidden, t);
        if (gc->pooler_output) {
            CHECK(r.pool != NULL, "%s has no pooler_output", name);
            snprintf(what, sizeof what, "%s %s pooler_output vs transformers", name, gc->name);
            if (r.pool) compare(what, r.pool, gc->pooler_output, 1, gc->hidden, t);
        }
        if (r.sent) {
            float *want = malloc((size_t)gc->hidden * sizeof *want);
            st_mean_normalize(gc->last_hidden_state, gc->attention_mask, gc->len, gc->hidden, want);
            snprintf(what, sizeof what, "%s %s sentence_embedding vs mean pooling of transformers", name, gc->name);
            compare(what, r.sent, want, 1, gc->hidden, t);
            free(want);
        }
        CHECK(!r.sent == !!strncmp(model, "all-MiniLM", 10), "%s: sentence_embedding only in MiniLM", name);
        run_free(&r);
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    golden_free(&g);
}

#define GOLDEN_CASE(fn, model, prec) \
    static void fn(void) { check_goldens(model, prec); }
GOLDEN_CASE(golden_tiny_bert_fp32, "tiny-bert", "fp32")
GOLDEN_CASE(golden_tiny_bert_fp16, "tiny-bert", "fp16")
GOLDEN_CASE(golden_tiny_bert_bf16, "tiny-bert", "bf16")
GOLDEN_CASE(golden_tiny_bert_prefixed_fp16, "tiny-bert-prefixed", "fp16")
GOLDEN_CASE(golden_tiny_bert_relu_fp32, "tiny-bert-relu", "fp32")
GOLDEN_CASE(golden_tiny_bert_relu_bf16, "tiny-bert-relu", "bf16")
GOLDEN_CASE(golden_tiny_bert_tanh_fp32, "tiny-bert-tanh", "fp32")
GOLDEN_CASE(golden_minilm_fp32, "all-MiniLM-L6-v2", "fp32")
GOLDEN_CASE(golden_minilm_fp16, "all-MiniLM-L6-v2", "fp16")
GOLDEN_CASE(golden_minilm_bf16, "all-MiniLM-L6-v2", "bf16")
GOLDEN_CASE(golden_tiny_bert_fp32_baseline, "tiny-bert", "fp32-baseline")
GOLDEN_CASE(golden_tiny_bert_fp16_baseline, "tiny-bert", "fp16-baseline")
GOLDEN_CASE(golden_tiny_bert_bf16_baseline, "tiny-bert", "bf16-baseline")
GOLDEN_CASE(golden_tiny_bert_tanh_fp32_baseline, "tiny-bert-tanh", "fp32-baseline")
GOLDEN_CASE(golden_minilm_fp16_baseline, "all-MiniLM-L6-v2", "fp16-baseline")

/* ------------------------------------------------------------ against the reference executor */

static void check_reference(const char *mname, const char *prec) {
    char name[128], err[1024];
    snprintf(name, sizeof name, "%s-%s", mname, prec);
    model m;
    memset(&m, 0, sizeof m);
    diag d;
    diag_init(&d);
    if (model_load(&m, build_path("plans/%s.yaml", mname), &d)) {
        CHECK(0, "%s", d.text);
        return;
    }
    bertc_plan *pl = NULL;
    if (bertc_plan_open(build_path("plans/%s.plan", name), &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        model_free(&m);
        return;
    }
    bertc_context *c = emu_context(pl);
    /* 1, every edge and edge + 1, the maximum */
    int lens[32], n = 0;
    lens[n++] = 1;
    for (int b = 0; b < bertc_plan_bucket_count(pl); b++) {
        int e = bertc_plan_bucket_len(pl, b);
        lens[n++] = e;
        if (b + 1 < bertc_plan_bucket_count(pl)) lens[n++] = e + 1;
    }
    /* the reference executor is slow in double, and the sanitizer build slower still */
    int maxlen = !strncmp(mname, "all-MiniLM", 10) ? (minilm_max_len() < 129 ? minilm_max_len() : 129) : 1 << 30;
    tol t = tolerance(prec);
    for (int i = 0; c && i < n; i++) {
        if (lens[i] > maxlen) continue;
        testreq r;
        testreq_random(&r, pl, lens[i], 1, 1);
        ref_request rr = {.len = lens[i], .input_ids = r.ids, .token_type_ids = r.rq.token_type_ids,
                          .attention_mask = r.mask};
        ref_result res;
        memset(&res, 0, sizeof res);
        if (ref_run(&m.graph, &m.weights, &rr, &res, &d)) {
            CHECK(0, "reference: %s", d.text);
            continue;
        }
        run got;
        if (!run_plan(c, pl, &r.rq, &got)) {
            char what[256];
            snprintf(what, sizeof what, "%s len %d last_hidden_state vs the reference executor", name, lens[i]);
            const ref_tensor *lhs = ref_result_find(&res, "last_hidden_state");
            compare(what, got.lhs, lhs->data, lens[i], bertc_plan_hidden(pl), t);
            const ref_tensor *pool = ref_result_find(&res, "pooler_output");
            if (pool && got.pool) {
                snprintf(what, sizeof what, "%s len %d pooler_output vs the reference executor", name, lens[i]);
                compare(what, got.pool, pool->data, 1, bertc_plan_hidden(pl), t);
            }
            CHECK(!pool == !got.pool, "%s: pooler_output present in one executor only", name);
            const ref_tensor *sent = ref_result_find(&res, "sentence_embedding");
            if (sent && got.sent) {
                snprintf(what, sizeof what, "%s len %d sentence_embedding vs the reference executor", name, lens[i]);
                compare(what, got.sent, sent->data, 1, bertc_plan_hidden(pl), t);
            }
            CHECK(!sent == !got.sent, "%s: sentence_embedding present in one executor only", name);
            run_free(&got);
        }
        ref_result_free(&res);
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    model_free(&m);
}

#define REF_CASE(fn, model, prec) \
    static void fn(void) { check_reference(model, prec); }
REF_CASE(reference_tiny_bert_fp32, "tiny-bert", "fp32")
REF_CASE(reference_tiny_bert_fp16, "tiny-bert", "fp16")
REF_CASE(reference_tiny_bert_bf16, "tiny-bert", "bf16")
REF_CASE(reference_tiny_bert_prefixed_fp16, "tiny-bert-prefixed", "fp16")
REF_CASE(reference_tiny_bert_relu_fp32, "tiny-bert-relu", "fp32")
REF_CASE(reference_tiny_bert_tanh_fp32, "tiny-bert-tanh", "fp32")
REF_CASE(reference_minilm_fp16, "all-MiniLM-L6-v2", "fp16")
REF_CASE(reference_tiny_bert_fp16_baseline, "tiny-bert", "fp16-baseline")

/* ------------------------------------------------------------ padding */

/* The output of a request must not depend on what the bucket's padding
 * rows (activations, request block) hold: first run on fresh memory (every
 * byte NaN), then after a full-bucket request filled the padding, then on a
 * device whose fresh memory holds large finite numbers. */
static void check_padding(const char *name) {
    char err[1024];
    bertc_plan *pl = NULL;
    if (bertc_plan_open(build_path("plans/%s.plan", name), &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    int b = bertc_plan_bucket_count(pl) > 1 ? 1 : 0;
    if (bertc_plan_bucket_len(pl, b) > (strncmp(name, "all-MiniLM", 10) ? 1 << 30 : minilm_max_len())) b = 0;
    int lo = b ? bertc_plan_bucket_len(pl, b - 1) : 0, hi = bertc_plan_bucket_len(pl, b);
    int64_t H = bertc_plan_hidden(pl);
    int64_t len = check_rng_range(lo + 1, hi - 1);
    testreq r, full;
    testreq_random(&r, pl, len, 1, 1);
    testreq_random(&full, pl, hi, 1, 1);
    run a, bb, cc;
    E->set_fill(0xff);
    bertc_context *c = emu_context(pl);
    if (!c || run_plan(c, pl, &r.rq, &a)) goto out;
    run tmp;
    if (run_plan(c, pl, &full.rq, &tmp)) goto out;
    run_free(&tmp);
    if (run_plan(c, pl, &r.rq, &bb)) goto out;
    CHECK(!memcmp(a.lhs, bb.lhs, (size_t)(len * H) * sizeof(float)),
          "%s len %lld: the output changed after a longer request filled the padding", name, (long long)len);
    bertc_context_destroy(c);
    c = NULL;
    if (test_device() != BERTC_DEVICE_EMULATED) { /* only the emulated device can choose what fresh memory holds */
        run_free(&bb);
        run_free(&a);
        goto out;
    }
    E->set_fill(0x7f); /* 0x7f7f7f7f: 3.4e38 in fp32, 0x7f7f = 3.4e38 in bf16, NaN in fp16 */
    c = emu_context(pl);
    if (!c || run_plan(c, pl, &r.rq, &cc)) goto out;
    CHECK(!memcmp(a.lhs, cc.lhs, (size_t)(len * H) * sizeof(float)),
          "%s len %lld: the output depends on the initial contents of device memory", name, (long long)len);
    run_free(&bb);
    run_free(&cc);
    run_free(&a);
out:
    E->set_fill(0xff);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

static void padding_tiny_bert_fp32(void) { check_padding("tiny-bert-fp32"); }
static void padding_tiny_bert_fp16(void) { check_padding("tiny-bert-fp16"); }
static void padding_tiny_bert_relu_bf16(void) { check_padding("tiny-bert-relu-bf16"); }
static void padding_minilm_fp16(void) { check_padding("all-MiniLM-L6-v2-fp16"); }

/* Every schedule of the fibers gives the same bits (a race would not). */
static void schedules_agree(void) {
    char err[1024];
    bertc_plan *pl = NULL;
    if (bertc_plan_open(build_path("plans/%s.plan", "tiny-bert-fp16"), &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    testreq r;
    testreq_random(&r, pl, check_rng_range(17, 64), 1, 1);
    float *first = NULL;
    for (int s = 0; s < (test_device() == BERTC_DEVICE_EMULATED ? 4 : 2); s++) {
        E->set_schedule(s, check_rng_u64());
        bertc_context *c = emu_context(pl);
        run x;
        if (c && !run_plan(c, pl, &r.rq, &x)) {
            if (!first) first = x.lhs, x.lhs = NULL;
            else CHECK(!memcmp(first, x.lhs, (size_t)(r.rq.len * 96) * sizeof(float)), "schedule %d differs", s);
            run_free(&x);
        }
        bertc_context_destroy(c);
    }
    E->set_schedule(1, 0);
    free(first);
    bertc_plan_close(pl);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(E = emuctl_open())) return 1;
    CHECK_CASE(golden_tiny_bert_fp32);
    CHECK_CASE(golden_tiny_bert_fp16);
    CHECK_CASE(golden_tiny_bert_bf16);
    CHECK_CASE(golden_tiny_bert_prefixed_fp16);
    CHECK_CASE(golden_tiny_bert_relu_fp32);
    CHECK_CASE(golden_tiny_bert_relu_bf16);
    CHECK_CASE(golden_tiny_bert_tanh_fp32);
    CHECK_CASE(golden_minilm_fp32);
    CHECK_CASE(golden_minilm_fp16);
    CHECK_CASE(golden_minilm_bf16);
    CHECK_CASE(golden_tiny_bert_fp32_baseline);
    CHECK_CASE(golden_tiny_bert_fp16_baseline);
    CHECK_CASE(golden_tiny_bert_bf16_baseline);
    CHECK_CASE(golden_tiny_bert_tanh_fp32_baseline);
    CHECK_CASE(golden_minilm_fp16_baseline);
    CHECK_CASE(reference_tiny_bert_fp32);
    CHECK_CASE(reference_tiny_bert_fp16);
    CHECK_CASE(reference_tiny_bert_bf16);
    CHECK_CASE(reference_tiny_bert_prefixed_fp16);
    CHECK_CASE(reference_tiny_bert_relu_fp32);
    CHECK_CASE(reference_tiny_bert_tanh_fp32);
    CHECK_CASE(reference_minilm_fp16);
    CHECK_CASE(reference_tiny_bert_fp16_baseline);
    CHECK_CASE(padding_tiny_bert_fp32);
    CHECK_CASE(padding_tiny_bert_fp16);
    CHECK_CASE(padding_tiny_bert_relu_bf16);
    CHECK_CASE(padding_minilm_fp16);
    CHECK_CASE(schedules_agree);
    return check_summary();
}
