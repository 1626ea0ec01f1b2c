/*
 * test_families — RoBERTa, XLM-RoBERTa, DistilBERT, ELECTRA and MPNet, with
 * their task heads, through the whole chain on the emulated device.
 *
 * The plans are made by `make plans` with the real CLI (bertc import of the
 * tiny fixtures of tools/make_tiny_family.py, bertc compile --arch emu) in
 * fp32, fp16 and bf16, buckets 8, 16 and the model's maximum.  Each plan
 * answers:
 *
 *   - every golden case of its model (tests/golden/NAME.bgld, made by
 *     tools/make_family_goldens.py with transformers' own classes): lengths
 *     1, 7, 13, the maximum, a batch-padded request whose pad ids move
 *     RoBERTa's position ids, masks with zeros at the tail, in the middle
 *     and everywhere; compared are the last hidden state, the pooler, the
 *     head's `logits` and sentence-transformers' embedding (after a Dense
 *     module for tiny-mpnet);
 *   - fresh random requests (ids across the vocabulary, the pad id among
 *     them, random masks) at lengths 1, every bucket edge and edge + 1,
 *     against the reference executor run on the plan's own YAML.
 *
 * Tolerances are test_e2e's (docs/numerics.md): relative to max |want| per
 * output and case, fp32 1e-4, fp16 1.5e-2, bf16 5e-2, and a cosine of at
 * least 0.999 (fp32 0.999999) per row (golden_compare); logits by their
 * error relative to max(max |want|, 1) alone (compare says why).  A per-token output (last hidden
 * state, token-classification logits) is compared row by row; a vector
 * output (sequence logits, embeddings) as one row — for a regression head
 * (one logit) the cosine says only its sign, the relative error the rest.
 * The labels of each head travel in the plan and are checked against the
 * config's id2label.
 */
#include <math.h>

#include "bertc.h"
#include "check.h"
#include "golden.h"
#include "model.h"
#include "ref.h"
#include "testreq.h"

typedef golden_tol tol;

static tol tolerance(const char *prec) { return golden_tolerance(prec); }

/* Logits are judged by their error against max(max |want|, 1) alone: a
 * logit is an argument of a softmax or a sigmoid, where an absolute error of
 * 1e-2 moves a probability by at most 0.25%; a regression head's single
 * logit near 0 has no scale of its own to be relative to; and the cosine of
 * a row of 1 to 5 logits says little (two near-equal logits turn it). */
static void compare(const char *what, const float *got, const float *want, int64_t rows, int64_t cols, tol t) {
    int logits = strstr(what, " logits ") != NULL;
    if (logits) t.cos = -1;
    golden_compare(what, got, want, rows, cols, t, logits ? 1.0 : 0.0);
}

static const char *plan_path(const char *model, const char *prec, const char *ext) {
    static char buf[2][512];
    static int k;
    char *p = buf[k++ & 1];
    snprintf(p, 512, "%s/plans/%s%s%s.%s", check_build_dir(), model, prec ? "-" : "", prec ? prec : "", ext);
    return p;
}

/* The emulated device, or a GPU when BERTC_TEST_DEVICE=cuda (tools/gpu_validate.sh). */
static bertc_context *emu_context(bertc_plan *pl) {
    bertc_context_options o;
    bertc_context_options_init(&o);
    const char *dev = getenv("BERTC_TEST_DEVICE");
    o.device = dev && !strcmp(dev, "cuda") ? BERTC_DEVICE_CUDA : BERTC_DEVICE_EMULATED;
    o.capture_on_first_use = 1;
    bertc_context *c = NULL;
    char err[1024];
    CHECK(bertc_context_create(pl, &o, &c, err, sizeof err) == BERTC_STATUS_OK, "context: %s", err);
    return c;
}

/* Output `name` of the last request as floats (NULL when the plan has none). */
static float *read_output(bertc_context *c, const bertc_plan *pl, const char *name, int64_t len, int64_t *rows,
                          int64_t *cols) {
    int i = bertc_plan_output_index(pl, name);
    bertc_output_info info;
    if (i < 0 || bertc_plan_output_info(pl, i, &info)) return NULL;
    *rows = info.per_token ? len : 1;
    *cols = info.cols;
    float *v = malloc((size_t)(*rows * *cols) * sizeof *v);
    bertc_status st = bertc_output_read(c, i, v, (size_t)(*rows * *cols));
    CHECK(st == BERTC_STATUS_OK, "read %s: %s", name, bertc_context_error(c));
    return v;
}

/* Every output the golden recorded, against the plan's. */
static void check_case(bertc_context *c, const bertc_plan *pl, const golden_case *gc, const char *name, tol t) {
    static const char *const outs[4] = {"last_hidden_state", "pooler_output", "logits", "sentence_embedding"};
    const float *want[4] = {gc->last_hidden_state, gc->pooler_output, gc->logits, gc->sentence_embedding};
    int64_t nwant[4] = {(int64_t)gc->len * gc->hidden, gc->hidden, gc->nlogits, gc->nsentence};
    for (int k = 0; k < 4; k++) {
        if (!want[k]) continue;
        int64_t rows, cols;
        float *got = read_output(c, pl, outs[k], gc->len, &rows, &cols);
        CHECK(got && rows * cols == nwant[k], "%s %s: output %s missing or of another size", name, gc->name, outs[k]);
        char what[256];
        snprintf(what, sizeof what, "%s %s %s vs transformers", name, gc->name, outs[k]);
        if (got && rows * cols == nwant[k]) compare(what, got, want[k], rows, cols, t);
        free(got);
    }
}

static void check_goldens(const char *model, const char *prec) {
    char name[128], err[1024], gpath[512];
    snprintf(name, sizeof name, "%s-%s", model, prec);
    snprintf(gpath, sizeof gpath, "tests/golden/%s.bgld", model);
    golden_file g;
    if (golden_load(&g, gpath, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    bertc_plan *pl = NULL;
    if (bertc_plan_open(plan_path(model, prec, "plan"), &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        golden_free(&g);
        return;
    }
    bertc_context *c = emu_context(pl);
    for (int i = 0; c && i < g.count; i++) {
        const golden_case *gc = &g.cases[i];
        bertc_request rq = {gc->input_ids, gc->token_type_ids, gc->attention_mask, gc->len};
        bertc_status st = bertc_infer(c, &rq);
        CHECK(st == BERTC_STATUS_OK, "%s %s: infer: %s", name, gc->name, bertc_context_error(c));
        if (!st) check_case(c, pl, gc, name, tolerance(prec));
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    golden_free(&g);
}

/* Every output of the plan against the reference executor's. */
static void check_against_ref(bertc_context *c, const bertc_plan *pl, const ref_result *res, const char *name, int len,
                              tol t) {
    for (int o = 0; o < bertc_plan_output_count(pl); o++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, o, &info);
        const ref_tensor *want = ref_result_find(res, info.name);
        CHECK(want != NULL, "%s: output %s is not the reference executor's", name, info.name);
        int64_t rows, cols;
        float *got = read_output(c, pl, info.name, len, &rows, &cols);
        if (want && got) {
            char what[256];
            snprintf(what, sizeof what, "%s len %d %s vs the reference executor", name, len, info.name);
            compare(what, got, want->data, rows, cols, t);
        }
        free(got);
    }
}

static void check_reference(const char *mname, const char *prec) {
    char name[128], err[1024];
    snprintf(name, sizeof name, "%s-%s", mname, prec);
    model m;
    memset(&m, 0, sizeof m);
    diag d;
    diag_init(&d);
    bertc_plan *pl = NULL;
    if (model_load(&m, plan_path(mname, NULL, "yaml"), &d) ||
        bertc_plan_open(plan_path(mname, prec, "plan"), &pl, err, sizeof err)) {
        CHECK(0, "%s%s", d.text, pl ? "" : err);
        model_free(&m);
        return;
    }
    bertc_context *c = emu_context(pl);
    int lens[16], n = 0;
    lens[n++] = 1;
    for (int b = 0; b < bertc_plan_bucket_count(pl); b++) {
        lens[n++] = bertc_plan_bucket_len(pl, b);
        if (b + 1 < bertc_plan_bucket_count(pl)) lens[n++] = bertc_plan_bucket_len(pl, b) + 1;
    }
    for (int i = 0; c && i < n; i++) {
        testreq r;
        testreq_random(&r, pl, lens[i], 1, 1);
        ref_request rr = {.len = lens[i], .input_ids = r.ids, .token_type_ids = r.rq.token_type_ids,
                          .attention_mask = r.mask};
        ref_result res;
        if (ref_run(&m.graph, &m.weights, &rr, &res, &d)) {
            CHECK(0, "%s: reference: %s", name, d.text);
            continue;
        }
        bertc_status st = bertc_infer(c, &r.rq);
        CHECK(st == BERTC_STATUS_OK, "%s len %d: infer: %s", name, lens[i], bertc_context_error(c));
        if (!st) check_against_ref(c, pl, &res, name, lens[i], tolerance(prec));
        ref_result_free(&res);
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    model_free(&m);
}

static const char *const MODELS[] = {"tiny-roberta",    "tiny-xlmr-tokcls",  "tiny-distilbert",   "tiny-electra",
                                     "tiny-mpnet",      "tiny-mpnet-seqcls", "tiny-cross-encoder"};
#define NMODELS (int)(sizeof MODELS / sizeof MODELS[0])

static void each_precision(void (*fn)(const char *, const char *)) {
    static const char *const precs[] = {"fp32", "fp16", "bf16"};
    for (int m = 0; m < NMODELS; m++)
        for (int p = 0; p < 3; p++) fn(MODELS[m], precs[p]);
}

static void goldens_all(void) { each_precision(check_goldens); }
static void reference_all(void) { each_precision(check_reference); }

/* The class names of config.json's id2label travel in the plan. */
static void labels_in_plan(void) {
    static const struct {
        const char *model;
        int n;
        const char *first, *last;
    } want[] = {{"tiny-roberta", 3, "negative", "positive"}, {"tiny-xlmr-tokcls", 5, "O", "I-LOC"},
                {"tiny-distilbert", 2, "LABEL_0", "LABEL_1"}, {"tiny-electra", 1, "score", "score"},
                {"tiny-mpnet", 0, NULL, NULL}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char err[1024];
        bertc_plan *pl = NULL;
        if (bertc_plan_open(plan_path(want[i].model, "fp16", "plan"), &pl, err, sizeof err)) {
            CHECK(0, "%s", err);
            continue;
        }
        int n = bertc_plan_label_count(pl);
        CHECK(n == want[i].n, "%s: %d labels, expected %d", want[i].model, n, want[i].n);
        if (n == want[i].n && n > 0) {
            CHECK(!strcmp(bertc_plan_label(pl, 0), want[i].first) && !strcmp(bertc_plan_label(pl, n - 1), want[i].last),
                  "%s: labels %s .. %s", want[i].model, bertc_plan_label(pl, 0), bertc_plan_label(pl, n - 1));
            CHECK(bertc_plan_label(pl, n) == NULL && bertc_plan_label(pl, -1) == NULL, "label out of range");
        }
        CHECK(bertc_plan_output_index(pl, "logits") == (n ? 0 : -1), "%s: logits is %s", want[i].model,
              n ? "not the first output" : "an output without labels");
        bertc_plan_close(pl);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(labels_in_plan);
    CHECK_CASE(goldens_all);
    CHECK_CASE(reference_all);
    return check_summary();
}
