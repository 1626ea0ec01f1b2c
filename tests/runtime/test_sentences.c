/*
 * test_sentences — text in, sentence embeddings out, against
 * sentence-transformers.
 *
 * For every sentence of tests/golden/all-MiniLM-L6-v2-sentences.bsen
 * (tools/make_sentence_goldens.py: sentence-transformers' own encode() of
 * 21 sentences — accents, CJK, emoji, Arabic, punctuation runs, empty text,
 * one cut at max_seq_length): the plan's tokenizer (bertc_encode, capped at
 * the golden's max_seq_length) must give exactly the ids sentence-
 * transformers fed its model, and the plan's `sentence_embedding` output
 * (mean pooling over the mask + L2 normalisation, computed in the plan by
 * the fused pooling kernel) must match the golden embedding: cosine
 * similarity >= 0.99999 for fp32 plans, >= 0.999 for fp16 and bf16 plans
 * (docs/numerics.md), and for fp32 also every component within 1e-4 of
 * the unit vector's largest component.
 *
 * The plans are made by `make plans` (the CLI's import of the
 * sentence-transformers directory, then compile --arch emu), at the
 * default fusion level, and the fp16 one again at the baseline level.
 *
 * With BERTC_SENTENCES_MODEL=all-mpnet-base-v2 the same checks run on the
 * real MPNet (tests/golden/all-mpnet-base-v2-sentences.bsen; its plans,
 * fp32 and fp16 at the default level, come from `make test-mpnet`, which
 * .ci/run runs: the 438 MB download and a 110 M-parameter model on the
 * emulated device are kept out of `make test`).  Its tokenizer is
 * WordPiece with <s> and </s> as [CLS] and [SEP]: the ids must match
 * sentence-transformers' too.
 */
#include <math.h>

#include "bertc.h"
#include "check.h"
#include "golden.h"

static bertc_device_kind test_device(void) {
    const char *e = getenv("BERTC_TEST_DEVICE");
    return e && !strcmp(e, "cuda") ? BERTC_DEVICE_CUDA : BERTC_DEVICE_EMULATED;
}

static const char *sentences_model(void) {
    const char *m = getenv("BERTC_SENTENCES_MODEL");
    return m && *m ? m : "all-MiniLM-L6-v2";
}

/* Under AddressSanitizer (`make sanitize`) the emulated kernels run about 13
 * times slower: there every sentence's ids are still checked, and the
 * embedding of the longest sentence of each bucket — every captured graph
 * the normal build runs, at its fullest, the cut one included (as test_e2e
 * does, memory errors do not need every length to show).  The normal build
 * checks all 21. */

static int sentences_bucket_of(const bertc_plan *pl, int64_t n) {
    for (int b = 0; b < bertc_plan_bucket_count(pl); b++)
        if (bertc_plan_bucket_len(pl, b) >= n) return b;
    return -1;
}

/* Whether sentence i's embedding is checked: always in the normal build;
 * under the sanitizer when it is its bucket's longest (the first, on a tie). */
static int sentences_runs(const bertc_plan *pl, const golden_file *g, int i) {
    if (!check_sanitized()) return 1;
    int b = sentences_bucket_of(pl, g->sentences[i].n_ids), n = g->sentences[i].n_ids;
    for (int j = 0; j < g->count; j++) {
        int m = g->sentences[j].n_ids;
        if (j != i && sentences_bucket_of(pl, m) == b && (m > n || (m == n && j < i))) return 0;
    }
    return 1;
}

static void check_plan(const char *prec, double min_cos) {
    golden_file g;
    char err[1024], gpath[512];
    const char *model = sentences_model();
    snprintf(gpath, sizeof gpath, "tests/golden/%s-sentences.bsen", model);
    if (golden_load(&g, gpath, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    char value[64];
    long max_len = 0;
    if (!golden_header_value(&g, "max_seq_length", value, sizeof value)) max_len = strtol(value, NULL, 10);
    CHECK(max_len > 0, "the golden file has no max_seq_length");
    char path[512];
    snprintf(path, sizeof path, "%s/plans/%s-%s.plan", check_build_dir(), model, prec);
    bertc_plan *pl = NULL;
    bertc_context *c = NULL;
    bertc_encoding *e = bertc_encoding_create();
    if (bertc_plan_open(path, &pl, err, sizeof err)) {
        CHECK(0, "%s", err);
        goto out;
    }
    int out_idx = bertc_plan_output_index(pl, "sentence_embedding");
    CHECK(out_idx >= 0, "%s has no sentence_embedding output (was the pooling head imported?)", path);
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = test_device();
    o.capture_on_first_use = 1;
    if (out_idx < 0 || bertc_context_create(pl, &o, &c, err, sizeof err)) {
        CHECK(out_idx < 0, "context: %s", err);
        goto out;
    }
    int64_t H = bertc_plan_hidden(pl);
    float *emb = malloc((size_t)H * sizeof *emb);
    double worst = 1;
    for (int i = 0; i < g.count; i++) {
        const sentences_case *sc = &g.sentences[i];
        if (bertc_encode(pl, e, sc->text, NULL, max_len, err, sizeof err)) {
            CHECK(0, "sentence %d: %s", i, err);
            continue;
        }
        int64_t n = bertc_encoding_len(e);
        int same = n == sc->n_ids && !memcmp(bertc_encoding_ids(e), sc->ids, (size_t)n * sizeof(int32_t));
        CHECK(same, "sentence %d (\"%.40s\"): %lld ids, sentence-transformers %d, or they differ", i, sc->text,
              (long long)n, sc->n_ids);
        if (!same || !sentences_runs(pl, &g, i)) continue;
        bertc_request rq = {bertc_encoding_ids(e), bertc_encoding_type_ids(e), NULL, n};
        if (bertc_infer(c, &rq) || bertc_output_read(c, out_idx, emb, (size_t)H)) {
            CHECK(0, "sentence %d: %s", i, bertc_context_error(c));
            continue;
        }
        double dot = 0, ng = 0, nw = 0, maxdiff = 0;
        for (int64_t k = 0; k < H; k++) {
            dot += (double)emb[k] * sc->embedding[k];
            ng += (double)emb[k] * emb[k];
            nw += (double)sc->embedding[k] * sc->embedding[k];
            double dd = fabs((double)emb[k] - sc->embedding[k]);
            if (!(dd <= maxdiff)) maxdiff = dd;
        }
        double cs = dot / sqrt(ng * nw);
        if (!(cs >= worst)) worst = cs;
        CHECK(cs >= min_cos, "%s sentence %d (\"%.40s\", %lld tokens): cosine %.7f < %.6f", prec, i, sc->text,
              (long long)n, cs, min_cos);
        CHECK(fabs(sqrt(ng) - 1) < 1e-3, "%s sentence %d: the embedding's norm is %.6f, not 1", prec, i, sqrt(ng));
        if (!strncmp(prec, "fp32", 4)) CHECK(maxdiff <= 1e-4, "fp32 sentence %d: a component differs by %.3g", i, maxdiff);
    }
    if (getenv("BERTC_E2E_VERBOSE") || strcmp(model, "all-MiniLM-L6-v2"))
        printf("  %s %s: worst cosine %.8f over %d sentences\n", model, prec, worst, g.count);
    free(emb);
out:
    bertc_encoding_free(e);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    golden_free(&g);
}

static void sentences_fp32(void) { check_plan("fp32", 0.99999); }
static void sentences_fp16(void) { check_plan("fp16", 0.999); }
static void sentences_bf16(void) { check_plan("bf16", 0.999); }
static void sentences_fp16_baseline(void) { check_plan("fp16-baseline", 0.999); }

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(sentences_fp32);
    CHECK_CASE(sentences_fp16);
    if (!strcmp(sentences_model(), "all-MiniLM-L6-v2")) {
        CHECK_CASE(sentences_bf16);
        CHECK_CASE(sentences_fp16_baseline);
    }
    return check_summary();
}
