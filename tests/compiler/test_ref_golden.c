/*
 * test_ref_golden — the reference executor against Hugging Face transformers.
 *
 * For every fixture model (four tiny BERT variants, the real
 * all-MiniLM-L6-v2, and the tiny models of the other families with their
 * task heads) the test imports the checkpoint with `hf_import_run`, loads
 * the YAML, runs every golden case through `ref_run` and compares
 * last_hidden_state, pooler_output, a head's logits and a
 * sentence-transformers embedding with what transformers produced
 * (tests/golden/NAME.bgld, made by tools/make_goldens.py and
 * tools/make_family_goldens.py).
 *
 * Tolerance, stated once: max |got - want| <= 1e-5 * max |want| per output
 * (float32 storage with double accumulation against PyTorch's float32).
 * The cases cover length 1, short, max_position, with and without
 * token_type_ids, masks with zeros at the end, in the middle, and all zeros.
 */
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "golden.h"
#include "hf_import.h"
#include "model.h"
#include "ref.h"

#define REF_GOLDEN_RTOL 1e-5

static void compare(const char *model_name, const char *case_name, const char *what, const float *got,
                    const float *want, size_t n) {
    double scale = golden_max_abs(want, n);
    double diff = golden_max_abs_diff(got, want, n);
    CHECK(scale > 0, "%s/%s: golden %s is all zeros", model_name, case_name, what);
    CHECK(diff <= REF_GOLDEN_RTOL * scale, "%s/%s: %s max |got - want| = %.3g > %.1g * %.3g", model_name, case_name,
          what, diff, REF_GOLDEN_RTOL, scale);
}

/* An output the golden has as a flat array: same element count, values.
 * (An output the golden lacks was not recorded — tiny-bert-tanh's logits,
 * MiniLM's sentence embedding have goldens of their own elsewhere.) */
static void compare_flat(const char *model_name, const golden_case *gc, const ref_result *res, const char *what,
                         const float *want, int n) {
    const ref_tensor *t = ref_result_find(res, what);
    if (!want) return;
    CHECK(t, "%s/%s: no output %s, transformers has one", model_name, gc->name, what);
    if (!t) return;
    int64_t numel = 1;
    for (int k = 0; k < t->ndim; k++) numel *= t->shape[k];
    CHECK(numel == n, "%s/%s: %s has %lld values, transformers %d", model_name, gc->name, what, (long long)numel, n);
    if (numel == n) compare(model_name, gc->name, what, t->data, want, (size_t)n);
}

static void compare_extra(const char *model_name, const golden_case *gc, const ref_result *res) {
    compare_flat(model_name, gc, res, "logits", gc->logits, gc->nlogits);
    compare_flat(model_name, gc, res, "sentence_embedding", gc->sentence_embedding, gc->nsentence);
}

static void run_model(const char *name) {
    char hf_dir[512], yaml[600], gold[512], err[512];
    snprintf(hf_dir, sizeof hf_dir, "%s/hf/%s", check_build_dir(), name);
    snprintf(yaml, sizeof yaml, "%s/test-ref-golden-%d-%s.yaml", check_build_dir(), (int)getpid(), name);
    snprintf(gold, sizeof gold, "tests/golden/%s.bgld", name);

    golden_file g;
    int rc = golden_load(&g, gold, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", gold, err);
    if (rc) return;
    diag d;
    diag_init(&d);
    rc = hf_import_run(hf_dir, yaml, &d);
    CHECK(rc == 0, "import %s: %s", hf_dir, d.text);
    model m;
    memset(&m, 0, sizeof m);
    if (!rc) {
        rc = model_load(&m, yaml, &d);
        CHECK(rc == 0, "load %s: %s", yaml, d.text);
    }
    int ran = 0;
    for (int c = 0; !rc && c < g.count; c++) {
        const golden_case *gc = &g.cases[c];
        ref_request req = {.len = gc->len,
                           .input_ids = gc->input_ids,
                           .token_type_ids = gc->token_type_ids,
                           .attention_mask = gc->attention_mask};
        ref_result res;
        if (ref_run(&m.graph, &m.weights, &req, &res, &d)) {
            CHECK(0, "%s/%s: ref_run failed: %s", name, gc->name, d.text);
            continue;
        }
        const ref_tensor *last = ref_result_find(&res, "last_hidden_state");
        CHECK(last && last->ndim == 2 && last->shape[0] == gc->len && last->shape[1] == gc->hidden,
              "%s/%s: last_hidden_state missing or wrong shape", name, gc->name);
        if (last && last->ndim == 2 && last->shape[0] == gc->len && last->shape[1] == gc->hidden)
            compare(name, gc->name, "last_hidden_state", last->data, gc->last_hidden_state,
                    (size_t)gc->len * (size_t)gc->hidden);
        compare_extra(name, gc, &res);
        const ref_tensor *pooled = ref_result_find(&res, "pooler_output");
        /* a *ForSequenceClassification's golden has logits, not the pooler they come from */
        CHECK(!pooled == !gc->pooler_output || (gc->logits && !gc->pooler_output),
              "%s/%s: pooler_output presence differs from transformers", name, gc->name);
        if (pooled && gc->pooler_output) {
            CHECK(pooled->ndim == 1 && pooled->shape[0] == gc->hidden, "%s/%s: pooler_output shape", name, gc->name);
            if (pooled->ndim == 1 && pooled->shape[0] == gc->hidden)
                compare(name, gc->name, "pooler_output", pooled->data, gc->pooler_output, (size_t)gc->hidden);
        }
        ref_result_free(&res);
        ran++;
    }
    CHECK(rc || ran >= 5, "%s: only %d golden cases ran", name, ran);
    model_free(&m);
    unlink(yaml);
    golden_free(&g);
}

static void test_tiny_bert(void) { run_model("tiny-bert"); }
static void test_tiny_bert_prefixed(void) { run_model("tiny-bert-prefixed"); }
static void test_tiny_bert_relu(void) { run_model("tiny-bert-relu"); }
static void test_tiny_bert_tanh(void) { run_model("tiny-bert-tanh"); }
static void test_minilm(void) { run_model("all-MiniLM-L6-v2"); }
static void test_families(void) {
    static const char *const models[] = {"tiny-roberta",    "tiny-xlmr-tokcls",  "tiny-distilbert",   "tiny-electra",
                                         "tiny-mpnet",      "tiny-mpnet-seqcls", "tiny-cross-encoder"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) run_model(models[i]);
}

/* The masked positions' inputs must not change the unmasked outputs' keys:
 * poison the ids under a zero mask and check rows stay identical. */
static void test_masked_keys_ignored(void) {
    char hf_dir[512], yaml[600];
    snprintf(hf_dir, sizeof hf_dir, "%s/hf/tiny-bert", check_build_dir());
    snprintf(yaml, sizeof yaml, "%s/test-ref-mask-%d.yaml", check_build_dir(), (int)getpid());
    diag d;
    diag_init(&d);
    model m;
    memset(&m, 0, sizeof m);
    int rc = hf_import_run(hf_dir, yaml, &d) || model_load(&m, yaml, &d);
    CHECK(rc == 0, "setup: %s", d.text);
    if (!rc) {
        int len = (int)check_rng_range(4, 30);
        int32_t ids[64], ids2[64], mask[64];
        for (int i = 0; i < len; i++) {
            ids[i] = (int32_t)check_rng_range(0, 999);
            mask[i] = check_rng_uniform() < 0.7 || i == 0;
            ids2[i] = mask[i] ? ids[i] : (int32_t)check_rng_range(0, 999);
        }
        ref_request a = {.len = len, .input_ids = ids, .attention_mask = mask};
        ref_request b = {.len = len, .input_ids = ids2, .attention_mask = mask};
        ref_result ra, rb;
        int ok = !ref_run(&m.graph, &m.weights, &a, &ra, &d);
        ok = ok && !ref_run(&m.graph, &m.weights, &b, &rb, &d);
        CHECK(ok, "run: %s", d.text);
        if (ok) {
            const ref_tensor *ta = ref_result_find(&ra, "last_hidden_state"), *tb = ref_result_find(&rb, "last_hidden_state");
            int64_t h = ta->shape[1];
            for (int i = 0; i < len; i++)
                if (mask[i])
                    CHECK(golden_max_abs_diff(ta->data + i * h, tb->data + i * h, (size_t)h) == 0,
                          "row %d changed when only masked ids changed", i);
            ref_result_free(&ra);
            ref_result_free(&rb);
        }
    }
    model_free(&m);
    unlink(yaml);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_tiny_bert);
    CHECK_CASE(test_tiny_bert_prefixed);
    CHECK_CASE(test_families);
    CHECK_CASE(test_tiny_bert_relu);
    CHECK_CASE(test_tiny_bert_tanh);
    CHECK_CASE(test_minilm);
    CHECK_CASE(test_masked_keys_ignored);
    return check_summary();
}
