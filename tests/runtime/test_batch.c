/*
 * test_batch — packed batches on the emulated device: every request of a
 * batch gives, output for output, the bits it gives alone (bertc_infer in
 * its length bucket), for mixed lengths from 1 to the longest bucket,
 * batches of 1 to the plan's --max-batch, token types and masks with
 * zeros, in fp32, fp16 and bf16; and the batch API's contract (one graph
 * launch per batch, the limits as errors that say so, a bad request that
 * stops the whole batch, outputs read per request and whole, only the
 * selected outputs copied, threads).
 *
 * Bit for bit is the right test here, not a tolerance: the plan runs the
 * same kernels over each sequence's rows with the same geometry as alone
 * (docs/runtime.md "Packed batches: what is exact"), and the emulated
 * cuBLASLt sums every element in one fixed order whatever the row count.
 * Any key of another sequence entering an attention sum, a position or a
 * mask taken from the wrong row, a pooled row over the wrong rows, would
 * change bits.  The emulated device fills fresh memory with NaN, so rows
 * past the batch and the arena's leftovers are poison that must never
 * reach a result; tests/kernels/test_emu_kernels_packed.c poisons the
 * other sequences' rows themselves.
 *
 * Plans: build/plans/tiny-bert-batch-{fp32,fp16,bf16} (length buckets 8, 16,
 * 64; token buckets 64 and 256 of at most 16 requests), MiniLM with its
 * sentence-transformers head (all-MiniLM-L6-v2-batch-fp32), and the
 * families' tiny-roberta-batch-fp16, tiny-xlmr-tokcls-batch-fp32,
 * tiny-mpnet-batch-fp32 and tiny-mpnet-seqcls-batch-bf16 (the same token
 * buckets), from `make plans`.
 */
#include <pthread.h>

#include "bertc.h"
#include "check.h"
#include "emuctl.h"
#include "rt.h"
#include "testreq.h"

static const emuctl *E;

#define MAX_BATCH 16
#define MAX_TOKENS 256


static bertc_context *make_ctx(bertc_plan *pl, const char *outputs) {
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    o.outputs = outputs;
    bertc_context *c = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "context: %s (%s)", err, bertc_status_name(st));
    return c;
}

/* The longest request of the plan: its longest length bucket. */
static int max_len(const bertc_plan *pl) { return bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1); }

/* A batch of n requests whose lengths add up to at most MAX_TOKENS: about
 * half drawn from the bucket edges (1, 8, 9, 16, 17, the longest), the rest
 * uniform; types and masks (with zeros) on some of them.  With `pads`,
 * some requests end in a run of pad ids (id 1, RoBERTa's, XLM-R's and
 * MPNet's pad: the pad positions of each sequence count its own). */
static void batch_random_pads(testreq *r, int n, const bertc_plan *pl, int pads) {
    const int longest = max_len(pl);
    const int edges[] = {1, 8, 9, 16, 17, longest};
    int64_t left = MAX_TOKENS;
    for (int i = 0; i < n; i++) {
        int64_t most = left - (n - 1 - i); /* every later request keeps a token */
        int64_t len = check_rng_range(0, 1) ? edges[check_rng_range(0, 5)] : check_rng_range(1, longest);
        if (len > most) len = most;
        if (len > longest) len = longest;
        testreq_random(&r[i], pl, len, (int)check_rng_range(0, 1), (int)check_rng_range(0, 1));
        for (int64_t k = len - (int64_t)check_rng_range(0, len / 2); pads && len > 2 && k < len; k++) r[i].ids[k] = 1;
        left -= len;
    }
}

static void batch_random(testreq *r, int n, const bertc_plan *pl) { batch_random_pads(r, n, pl, 0); }

/* Output o of request i of cb's last batch equals the same output of c1's
 * last request, bit for bit; returns the differing values. */
static int compare_output(bertc_context *cb, bertc_context *c1, const bertc_plan *pl, int o, size_t i, int64_t len,
                          const char *what) {
    bertc_output_info info;
    bertc_plan_output_info(pl, o, &info);
    size_t count = (size_t)((info.per_token ? len : 1) * info.cols);
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    int bad = 0;
    bertc_status sa = bertc_batch_output_read(cb, o, i, a, count), sb = bertc_output_read(c1, o, b, count);
    CHECK(sa == BERTC_STATUS_OK && sb == BERTC_STATUS_OK, "%s: reading %s: %s / %s", what, info.name,
          bertc_context_error(cb), bertc_context_error(c1));
    for (size_t k = 0; !sa && !sb && k < count; k++)
        if (check_f32_bits(a[k]) != check_f32_bits(b[k])) {
            if (!bad)
                CHECK(0, "%s: request %zu (len %lld) %s[%zu]: batch %.9g, alone %.9g", what, i, (long long)len,
                      info.name, k, (double)a[k], (double)b[k]);
            bad++;
        }
    free(a);
    free(b);
    return bad;
}

/* Runs the batch on cb, then each request alone on c1, and compares every
 * output (`only` >= 0: that one, the contexts copy back no other).  0 if
 * all equal. */
static int batch_vs_alone(bertc_context *cb, bertc_context *c1, const bertc_plan *pl, testreq *r, int n, int only,
                          const char *what) {
    bertc_request rq[MAX_BATCH];
    memset(rq, 0, sizeof rq);
    for (int i = 0; i < n && i < MAX_BATCH; i++) rq[i] = r[i].rq;
    bertc_status st = bertc_infer_batch(cb, rq, (size_t)n);
    CHECK(st == BERTC_STATUS_OK, "%s: batch of %d: %s", what, n, bertc_context_error(cb));
    if (st) return 1;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        st = bertc_infer(c1, &rq[i]);
        CHECK(st == BERTC_STATUS_OK, "%s: alone: %s", what, bertc_context_error(c1));
        for (int o = 0; !st && o < bertc_plan_output_count(pl); o++)
            if (only < 0 || o == only) bad += compare_output(cb, c1, pl, o, (size_t)i, rq[i].len, what);
    }
    return bad;
}

/* fp32, fp16, bf16: random batches (1..16 requests, lengths 1..the
 * longest bucket, 256 tokens at most), a full batch of short requests, one
 * full-length request, four full-length ones.  `pads`: runs of pad ids. */
static void check_plan_pads(const char *name, int trials, int pads) {
    bertc_plan *pl = testreq_plan_open(name);
    if (!pl) return;
    CHECK(bertc_plan_token_bucket_count(pl) == 2 && bertc_plan_max_batch(pl) == MAX_BATCH &&
              bertc_plan_max_batch_tokens(pl) == MAX_TOKENS && bertc_plan_bucket_count(pl) == 3,
          "%s: %d token buckets, max batch %d of %lld tokens, %d length buckets", name,
          bertc_plan_token_bucket_count(pl), bertc_plan_max_batch(pl), (long long)bertc_plan_max_batch_tokens(pl),
          bertc_plan_bucket_count(pl));
    bertc_context *cb = make_ctx(pl, NULL), *c1 = make_ctx(pl, NULL);
    static testreq r[MAX_BATCH];
    const int longest = max_len(pl);
    for (int t = 0; cb && c1 && t < trials + 3; t++) {
        int n = t == trials ? MAX_BATCH : t == trials + 1 ? 1 : t == trials + 2 ? 4 : (int)check_rng_range(1, MAX_BATCH);
        batch_random_pads(r, n, pl, pads);
        if (t == trials + 1) testreq_random(&r[0], pl, longest, 1, 1);
        for (int i = 0; t == trials + 2 && i < 4; i++) testreq_random(&r[i], pl, longest, i & 1, 1);
        char what[96];
        snprintf(what, sizeof what, "%s batch %d (%d requests)", name, t, n);
        batch_vs_alone(cb, c1, pl, r, n, -1, what);
    }
    bertc_context_destroy(cb);
    bertc_context_destroy(c1);
    bertc_plan_close(pl);
}

static void check_plan(const char *name, int trials) { check_plan_pads(name, trials, 0); }

static void test_batch_fp32(void) { check_plan("tiny-bert-batch-fp32", 5); }
static void test_batch_fp16(void) { check_plan("tiny-bert-batch-fp16", 5); }
static void test_batch_bf16(void) { check_plan("tiny-bert-batch-bf16", 4); }

/* The families (int3): RoBERTa's pad positions per sequence (fp16),
 * XLM-R's token-classification logits per token (fp32), MPNet's
 * relative-position score bias per sequence with its Dense module and a
 * lone Normalize (fp32), and MPNet's classification head, logits per
 * sequence (bf16). */
static void test_batch_roberta(void) { check_plan_pads("tiny-roberta-batch-fp16", 3, 1); }
static void test_batch_xlmr_tokcls(void) { check_plan_pads("tiny-xlmr-tokcls-batch-fp32", 2, 1); }
static void test_batch_mpnet(void) { check_plan_pads("tiny-mpnet-batch-fp32", 3, 1); }
static void test_batch_mpnet_seqcls(void) { check_plan_pads("tiny-mpnet-seqcls-batch-bf16", 2, 1); }

/* MiniLM: six layers, 12 heads of 32, its sentence-transformers head (mean
 * pooling over the mask, L2 normalisation) per sequence, from text through
 * bertc_encode_batch. */
static void test_batch_minilm_text(void) {
    bertc_plan *pl = testreq_plan_open("all-MiniLM-L6-v2-batch-fp32");
    if (!pl) return;
    static const char *texts[] = {"Hello world", "A", "", "The quick brown fox jumps over the lazy dog.",
                                  "Packed batches run many requests at once, with no padding between them."};
    enum { N = sizeof texts / sizeof texts[0] };
    bertc_encoding *enc[N];
    for (int i = 0; i < N; i++) enc[i] = bertc_encoding_create();
    char err[512];
    bertc_status st = bertc_encode_batch(pl, enc, texts, NULL, N, NULL, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "encode: %s", err);
    bertc_context *cb = make_ctx(pl, "sentence_embedding,pooler_output"), *c1 = make_ctx(pl, "sentence_embedding,pooler_output");
    testreq r[N];
    for (int i = 0; !st && cb && c1 && i < N; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].rq = (bertc_request){bertc_encoding_ids(enc[i]), bertc_encoding_type_ids(enc[i]), NULL,
                                  bertc_encoding_len(enc[i])};
    }
    if (!st && cb && c1) {
        bertc_request rq[N];
        for (int i = 0; i < N; i++) rq[i] = r[i].rq;
        CHECK(bertc_infer_batch(cb, rq, N) == BERTC_STATUS_OK, "batch: %s", bertc_context_error(cb));
        int emb = bertc_plan_output_index(pl, "sentence_embedding"), pool = bertc_plan_output_index(pl, "pooler_output");
        for (int i = 0; i < N; i++) {
            CHECK(bertc_infer(c1, &rq[i]) == BERTC_STATUS_OK, "alone: %s", bertc_context_error(c1));
            compare_output(cb, c1, pl, emb, (size_t)i, rq[i].len, "MiniLM");
            compare_output(cb, c1, pl, pool, (size_t)i, rq[i].len, "MiniLM");
        }
    }
    for (int i = 0; i < N; i++) bertc_encoding_free(enc[i]);
    bertc_context_destroy(cb);
    bertc_context_destroy(c1);
    bertc_plan_close(pl);
}

/* One graph launch per batch: the token bucket's kernels and GEMMs once,
 * the request block copied once, each output copied once; only the batch's
 * rows (per-token) and requests (per-sequence) cross the bus. */
static void test_one_launch_per_batch(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-batch-fp16");
    if (!pl) return;
    bertc_context *c = make_ctx(pl, NULL);
    static testreq r[MAX_BATCH];
    for (int t = 0; c && t < 3; t++) {
        int n = (int)check_rng_range(1, MAX_BATCH);
        batch_random(r, n, pl);
        bertc_request rq[MAX_BATCH];
        int64_t tokens = 0;
        for (int i = 0; i < n; i++) rq[i] = r[i].rq, tokens += rq[i].len;
        const plan *p = &pl->p;
        int b = plan_length_buckets(p);
        while (p->buckets[b].seq_len < tokens) b++;
        int steps = p->buckets[b].nsteps;
        bertc_emudev_stats s0, s1;
        E->get_stats(&s0);
        CHECK(bertc_infer_batch(c, rq, (size_t)n) == BERTC_STATUS_OK, "%s", bertc_context_error(c));
        E->get_stats(&s1);
        CHECK(s1.graph_launches - s0.graph_launches == 1, "%ld graph launches for one batch",
              s1.graph_launches - s0.graph_launches);
        CHECK(s1.kernel_launches - s0.kernel_launches + s1.matmuls - s0.matmuls == steps,
              "%ld kernels and %ld matmuls, the token bucket has %d steps", s1.kernel_launches - s0.kernel_launches,
              s1.matmuls - s0.matmuls, steps);
        long want = 2 * (tokens * 96 + (long)n * 96); /* fp16 last_hidden_state rows and pooler rows */
        CHECK(s1.bytes_to_host - s0.bytes_to_host == want, "%ld bytes copied back for %lld tokens in %d requests, "
              "expected %ld", s1.bytes_to_host - s0.bytes_to_host, (long long)tokens, n, want);
        CHECK(bertc_batch_count(c) == (size_t)n && bertc_batch_tokens(c) == tokens, "batch %zu requests, %lld tokens",
              bertc_batch_count(c), (long long)bertc_batch_tokens(c));
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

/* The limits and the errors: each one a clear status and message, the
 * context usable afterwards, nothing of a refused batch run. */
static void test_batch_errors(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-batch-fp32"), *single = testreq_plan_open("tiny-bert-fp32");
    if (!pl || !single) {
        bertc_plan_close(pl);
        bertc_plan_close(single);
        return;
    }
    bertc_context *c = make_ctx(pl, NULL), *cs = make_ctx(single, NULL);
    static testreq r[MAX_BATCH + 1];
    bertc_request rq[MAX_BATCH + 1];
    for (int i = 0; i <= MAX_BATCH; i++) {
        testreq_random(&r[i], pl, 8, 1, 1);
        rq[i] = r[i].rq;
    }
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    bertc_status st = bertc_infer_batch(c, rq, MAX_BATCH + 1);
    CHECK(st == BERTC_STATUS_BAD_REQUEST && strstr(bertc_context_error(c), "17 requests") &&
              strstr(bertc_context_error(c), "split"), "17 requests: %s", bertc_context_error(c));
    for (int i = 0; i < 5; i++) rq[i].len = 64; /* 320 tokens */
    st = bertc_infer_batch(c, rq, 5);
    CHECK(st == BERTC_STATUS_BAD_REQUEST && strstr(bertc_context_error(c), "320 tokens") &&
              strstr(bertc_context_error(c), "256"), "320 tokens: %s", bertc_context_error(c));
    for (int i = 0; i < 5; i++) testreq_random(&r[i], pl, 8, 1, 1), rq[i] = r[i].rq;
    r[3].ids[2] = 100000;
    st = bertc_infer_batch(c, rq, 5);
    CHECK(st == BERTC_STATUS_BAD_REQUEST && strstr(bertc_context_error(c), "request 3: input_ids[2] = 100000"),
          "bad id: %s", bertc_context_error(c));
    rq[3].len = 65;
    st = bertc_infer_batch(c, rq, 5);
    CHECK(st == BERTC_STATUS_BAD_REQUEST && strstr(bertc_context_error(c), "request 3: request length 65"),
          "too long: %s", bertc_context_error(c));
    CHECK(bertc_infer_batch(c, rq, 0) == BERTC_STATUS_INVALID_ARGUMENT, "empty batch");
    CHECK(bertc_infer_batch(c, NULL, 2) == BERTC_STATUS_INVALID_ARGUMENT, "NULL batch");
    E->get_stats(&s1);
    CHECK(s1.graph_launches == s0.graph_launches, "a refused batch launched");
    float out[96];
    CHECK(bertc_batch_output_read(c, 0, 0, out, 96) == BERTC_STATUS_INVALID_ARGUMENT &&
              strstr(bertc_context_error(c), "no successful batch"), "read after a refused batch: %s",
          bertc_context_error(c));
    /* the context still works; reading crosses no wires */
    testreq_random(&r[3], pl, 8, 1, 1);
    rq[3] = r[3].rq;
    CHECK(bertc_infer_batch(c, rq, 5) == BERTC_STATUS_OK, "after errors: %s", bertc_context_error(c));
    int lhs = bertc_plan_output_index(pl, "last_hidden_state");
    CHECK(bertc_output_read(c, lhs, out, 96) == BERTC_STATUS_INVALID_ARGUMENT &&
              strstr(bertc_context_error(c), "bertc_batch_output_read"), "single read of a batch: %s",
          bertc_context_error(c));
    CHECK(bertc_batch_output_read(c, lhs, 5, out, 96) == BERTC_STATUS_INVALID_ARGUMENT, "request 5 of 5");
    CHECK(bertc_batch_output_read(c, lhs, 0, out, 95) == BERTC_STATUS_INVALID_ARGUMENT, "short buffer");
    CHECK(bertc_batch_output_read_named(c, "nope", 0, out, 96) == BERTC_STATUS_INVALID_ARGUMENT &&
              strstr(bertc_context_error(c), "nope"), "unknown name: %s", bertc_context_error(c));
    float *all = malloc(40 * 96 * sizeof *all), one[8 * 96];
    CHECK(bertc_batch_output_read_all(c, lhs, all, 40 * 96) == BERTC_STATUS_OK, "all: %s", bertc_context_error(c));
    for (int i = 0; i < 5; i++) {
        CHECK(bertc_batch_output_read_named(c, "last_hidden_state", (size_t)i, one, 8 * 96) == BERTC_STATUS_OK, "%s",
              bertc_context_error(c));
        CHECK(!memcmp(one, all + i * 8 * 96, sizeof one), "request %d is not rows %d..%d of the whole output", i, 8 * i,
              8 * i + 7);
    }
    free(all);
    CHECK(bertc_infer(c, &rq[0]) == BERTC_STATUS_OK, "single after batch: %s", bertc_context_error(c));
    CHECK(bertc_batch_output_read(c, lhs, 0, out, 96) == BERTC_STATUS_INVALID_ARGUMENT &&
              strstr(bertc_context_error(c), "not a batch"), "batch read of a single: %s", bertc_context_error(c));
    /* a plan without token buckets */
    st = bertc_infer_batch(cs, rq, 2);
    CHECK(st == BERTC_STATUS_INVALID_ARGUMENT && strstr(bertc_context_error(cs), "--batch-tokens"),
          "no token buckets: %s", bertc_context_error(cs));
    CHECK(bertc_plan_token_bucket_count(single) == 0 && bertc_plan_max_batch(single) == 0, "single plan's batch");
    bertc_context_destroy(c);
    bertc_context_destroy(cs);
    bertc_plan_close(pl);
    bertc_plan_close(single);
}

/* options.outputs: a pooled-only context copies n rows back per batch. */
static void test_batch_selected_outputs(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-batch-bf16");
    if (!pl) return;
    bertc_context *c = make_ctx(pl, "pooler_output"), *c1 = make_ctx(pl, "pooler_output");
    static testreq r[MAX_BATCH];
    batch_random(r, 7, pl);
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    if (c && c1) batch_vs_alone(c, c1, pl, r, 7, bertc_plan_output_index(pl, "pooler_output"), "pooler_output only");
    E->get_stats(&s1);
    /* the batch's 7 rows, then 7 single requests' one row each, bfloat16 */
    CHECK(s1.bytes_to_host - s0.bytes_to_host == 2 * 7 * 96 * 2, "%ld bytes copied back",
          s1.bytes_to_host - s0.bytes_to_host);
    bertc_context_destroy(c);
    bertc_context_destroy(c1);
    bertc_plan_close(pl);
}

/* Contexts on threads, each running batches: the same bits as one thread. */
#define NTHREADS 3
typedef struct worker {
    bertc_plan *pl;
    testreq r[MAX_BATCH];
    int n;
    float *want;
    size_t count;
    int failures;
} worker;

static void *worker_run(void *arg) {
    worker *w = arg;
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    bertc_context *c = NULL;
    char err[512];
    if (bertc_context_create(w->pl, &o, &c, err, sizeof err)) {
        w->failures++;
        return NULL;
    }
    bertc_request rq[MAX_BATCH];
    for (int i = 0; i < w->n; i++) rq[i] = w->r[i].rq;
    float *got = malloc(w->count * sizeof *got);
    for (int k = 0; k < 2; k++)
        if (bertc_infer_batch(c, rq, (size_t)w->n) || bertc_batch_output_read_all(c, 0, got, w->count) ||
            memcmp(got, w->want, w->count * sizeof *got))
            w->failures++;
    free(got);
    bertc_context_destroy(c);
    return NULL;
}

static void test_batch_threads(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-batch-fp16");
    if (!pl) return;
    static worker w[NTHREADS];
    bertc_context *c = make_ctx(pl, NULL);
    for (int t = 0; c && t < NTHREADS; t++) {
        w[t].pl = pl;
        w[t].n = (int)check_rng_range(1, MAX_BATCH);
        batch_random(w[t].r, w[t].n, pl);
        bertc_request rq[MAX_BATCH];
        int64_t tokens = 0;
        for (int i = 0; i < w[t].n; i++) rq[i] = w[t].r[i].rq, tokens += rq[i].len;
        w[t].count = (size_t)(tokens * 96);
        w[t].want = malloc(w[t].count * sizeof *w[t].want);
        CHECK(bertc_infer_batch(c, rq, (size_t)w[t].n) == BERTC_STATUS_OK &&
                  bertc_batch_output_read_all(c, 0, w[t].want, w[t].count) == BERTC_STATUS_OK,
              "%s", bertc_context_error(c));
    }
    bertc_context_destroy(c);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker_run, &w[t]);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(!w[t].failures, "thread %d: %d batches differ from one thread's", t, w[t].failures);
        free(w[t].want);
    }
    bertc_plan_close(pl);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(E = emuctl_open())) return 1;
    CHECK_CASE(test_batch_fp32);
    CHECK_CASE(test_batch_fp16);
    CHECK_CASE(test_batch_bf16);
    CHECK_CASE(test_batch_roberta);
    CHECK_CASE(test_batch_xlmr_tokcls);
    CHECK_CASE(test_batch_mpnet);
    CHECK_CASE(test_batch_mpnet_seqcls);
    CHECK_CASE(test_batch_minilm_text);
    CHECK_CASE(test_one_launch_per_batch);
    CHECK_CASE(test_batch_errors);
    CHECK_CASE(test_batch_selected_outputs);
    CHECK_CASE(test_batch_threads);
    return check_summary();
}
