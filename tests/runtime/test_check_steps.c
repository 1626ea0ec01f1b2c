/*
 * test_check_steps — every step of every kernel family keeps to its launch
 * contract (bertc_debug_check_steps, runtime/rt_check.c), and the check
 * sees a step that does not.
 *
 * The plan reader proves each argument reference lies inside its buffer;
 * this proves the kernels behind them stay inside those extents.  Each
 * plan below is run at every length bucket's full length (the rows every
 * kernel touches at most) and at one short fresh length, with every arena
 * byte outside the running step's arguments poisoned.  A write outside
 * them, a write to an input, a non-zero arrival counter or changed weights
 * fail the check by name; a read outside them reads poison, so the check's
 * outputs must equal bertc_infer's of the same request bit for bit (the
 * emulated device is deterministic).  The plans cover the families, heads,
 * dtypes and fusion levels `make plans` builds, and MiniLM's real shapes
 * (split-K GEMMs with a one-row pooler under a 16-row tile).
 *
 * The check itself is tested with bertc_emudev_stray_write: a byte flipped
 * just past a step's output, and in an input it only reads, must each be
 * reported against that step; a byte flipped inside its output must not.
 */
#include <stdlib.h>
#include <string.h>

#include "bertc.h"
#include "bertc_debug.h"
#include "check.h"
#include "emuctl.h"
#include "plan.h"
#include "plan_kernels.h"
#include "testreq.h"

static const emuctl *E;

static bertc_context *open_ctx(bertc_plan *pl) {
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    o.capture_on_first_use = 1;
    bertc_context *c = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "context: %s (%s)", err, bertc_status_name(st));
    return c;
}

/* Every output of the last request, concatenated (malloc'd; NULL on failure). */
static float *read_outputs(bertc_context *c, const bertc_plan *pl, int64_t len, size_t *count) {
    size_t n = 0;
    for (int o = 0; o < bertc_plan_output_count(pl); o++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, o, &info);
        n += (size_t)((info.per_token ? len : 1) * info.cols);
    }
    float *v = malloc(n * sizeof *v), *at = v;
    for (int o = 0; v && o < bertc_plan_output_count(pl); o++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, o, &info);
        size_t k = (size_t)((info.per_token ? len : 1) * info.cols);
        bertc_status st = bertc_output_read(c, o, at, k);
        CHECK(st == BERTC_STATUS_OK, "output %s: %s", info.name, bertc_context_error(c));
        if (st) {
            free(v);
            return NULL;
        }
        at += k;
    }
    *count = n;
    return v;
}

/* One request checked step by step, and its outputs against bertc_infer's. */
static void check_request(bertc_context *c, const bertc_plan *pl, const char *name, int64_t len) {
    testreq r;
    testreq_random(&r, pl, len, 1, 1);
    bertc_status st = bertc_infer(c, &r.rq);
    CHECK(st == BERTC_STATUS_OK, "%s len %lld: infer: %s", name, (long long)len, bertc_context_error(c));
    size_t n = 0, m = 0;
    float *want = st ? NULL : read_outputs(c, pl, len, &n);
    st = bertc_debug_check_steps(c, &r.rq);
    CHECK(st == BERTC_STATUS_OK, "%s len %lld: %s", name, (long long)len, bertc_context_error(c));
    float *got = st ? NULL : read_outputs(c, pl, len, &m);
    if (want && got) {
        size_t i = 0;
        while (i < n && check_f32_bits(want[i]) == check_f32_bits(got[i])) i++;
        CHECK(m == n && i == n, "%s len %lld: the checked run's output %zu is %g, bertc_infer's %g (a read outside "
                                "a step's arguments?)",
              name, (long long)len, i, i < m ? got[i] : 0.0, i < n ? want[i] : 0.0);
    }
    free(want), free(got);
}

static void check_plan(const char *name, int max_len) {
    bertc_plan *pl = testreq_plan_open(name);
    if (!pl) return;
    bertc_context *c = open_ctx(pl);
    for (int b = 0; c && b < bertc_plan_bucket_count(pl); b++) {
        int len = bertc_plan_bucket_len(pl, b);
        if (len > max_len) break;
        check_request(c, pl, name, len);
        if (b == 0) check_request(c, pl, name, check_rng_range(1, len - 1));
    }
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

static void test_families(void) {
    static const char *const plans[] = {
        "tiny-bert-fp32",          "tiny-bert-fp16",           "tiny-bert-bf16",
        "tiny-bert-fp16-baseline", "tiny-bert-bf16-baseline",  "tiny-bert-tanh-fp32",
        "tiny-bert-relu-bf16",     "tiny-distilbert-fp16",     "tiny-roberta-bf16",
        "tiny-electra-fp32",       "tiny-mpnet-fp16",          "tiny-mpnet-seqcls-bf16",
        "tiny-cross-encoder-fp16", "tiny-xlmr-tokcls-fp32",    "tiny-bert-prefixed-fp16",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) check_plan(plans[i], 1 << 20);
}

/* MiniLM's shapes: split-K and gemm_ln tiles, the pooler's one row. */
static void test_minilm(void) {
    check_plan("all-MiniLM-L6-v2-fp16", 128);
    check_plan("all-MiniLM-L6-v2-fp32", 32);
}

/* The first kernel step of bucket b with an argument of `use` in buffer
 * `buf`: its index among the bucket's kernel launches (1-based, what
 * stray_write counts), the step and the argument; 0 if there is none. */
static int find_arg(const plan *p, int b, kernel_arg_use use, sched_buf buf, int *step, int *arg, uint64_t *bytes) {
    const sched_bucket *bk = &p->buckets[b];
    int nth = 0;
    for (int s = 0; s < bk->nsteps; s++) {
        const sched_step *st = &bk->steps[s];
        if (st->kind != SCHED_STEP_KERNEL) continue;
        nth++;
        kernel_arg a[KERNEL_MAX_ARGS];
        kernel_args_in(&p->kernels[st->launch.kernel].spec, bk->seq_len, bk->max_seqs, a);
        for (int i = 0; i < st->launch.nargs; i++) {
            const sched_ref *ref = &st->launch.args[i];
            /* a write needs room after it for the stray byte */
            if (a[i].use != use || ref->buf != buf ||
                (use == KERNEL_ARG_WRITE && ref->offset + a[i].bytes + 64 > bk->arena_bytes))
                continue;
            *step = s, *arg = i, *bytes = a[i].bytes;
            return nth;
        }
    }
    return 0;
}

/* One stray byte at step `s`'s argument `arg` + off: reported as `needle` against the step, or (NULL) not at all. */
static void expect_stray(bertc_context *c, const bertc_plan *pl, const plan *p, int b, int nth, int s, int arg,
                         long long off, const char *needle) {
    testreq r;
    testreq_random(&r, pl, p->buckets[b].seq_len, 1, 1);
    E->stray_write(nth, arg, off);
    bertc_status st = bertc_debug_check_steps(c, &r.rq);
    E->stray_write(0, 0, 0);
    const char *err = bertc_context_error(c), *step = p->buckets[b].steps[s].name;
    if (needle)
        CHECK(st == BERTC_STATUS_BAD_PLAN && strstr(err, needle) && strstr(err, step),
              "a stray byte at step %s argument %d + %lld: %s (%s), want \"%s\"", step, arg, off, bertc_status_name(st),
              err, needle);
    else
        CHECK(st == BERTC_STATUS_OK, "a byte inside step %s's output was reported: %s", step, err);
}

static void test_stray_bytes_caught(void) {
    const char *name = "tiny-bert-fp16";
    bertc_plan *pl = testreq_plan_open(name);
    plan p;
    diag d;
    diag_init(&d);
    CHECK_REQUIRE(pl && plan_read(&p, testreq_plan_path(name), &d) == 0, "%s: %s", name, d.text);
    bertc_context *c = open_ctx(pl);
    int b = 1, s = 0, arg = 0;
    uint64_t bytes = 0;
    int nth = find_arg(&p, b, KERNEL_ARG_WRITE, SCHED_BUF_ARENA, &s, &arg, &bytes);
    CHECK(nth > 0, "no kernel of bucket %d writes the arena", p.buckets[b].seq_len);
    if (c && nth > 0) {
        expect_stray(c, pl, &p, b, nth, s, arg, (long long)bytes, "outside its arguments");
        expect_stray(c, pl, &p, b, nth, s, arg, (long long)bytes - 1, NULL);
    }
    nth = find_arg(&p, b, KERNEL_ARG_READ, SCHED_BUF_ARENA, &s, &arg, &bytes);
    CHECK(nth > 0, "no kernel of bucket %d reads the arena", p.buckets[b].seq_len);
    if (c && nth > 0) expect_stray(c, pl, &p, b, nth, s, arg, 0, "which it only reads");
    nth = find_arg(&p, b, KERNEL_ARG_REQUEST, SCHED_BUF_REQUEST, &s, &arg, &bytes);
    CHECK(nth > 0, "no kernel of bucket %d reads the request block", p.buckets[b].seq_len);
    if (c && nth > 0) expect_stray(c, pl, &p, b, nth, s, arg, 0, "changed the request block");
    /* and the next request is right again */
    if (c) check_request(c, pl, name, p.buckets[b].seq_len);
    bertc_context_destroy(c);
    /* a stray counter or weight byte stays where it is: each on a context of its own, destroyed after */
    c = open_ctx(pl);
    nth = find_arg(&p, b, KERNEL_ARG_COUNTERS, SCHED_BUF_COUNTERS, &s, &arg, &bytes);
    CHECK(nth > 0, "no kernel of bucket %d uses arrival counters", p.buckets[b].seq_len);
    if (c && nth > 0) expect_stray(c, pl, &p, b, nth, s, arg, 0, "left arrival counter byte 0 non-zero");
    bertc_context_destroy(c);
    c = open_ctx(pl);
    nth = find_arg(&p, b, KERNEL_ARG_READ, SCHED_BUF_WEIGHTS, &s, &arg, &bytes);
    CHECK(nth > 0, "no kernel of bucket %d reads the weights", p.buckets[b].seq_len);
    if (c && nth > 0) {
        testreq r;
        testreq_random(&r, pl, p.buckets[b].seq_len, 1, 1);
        E->stray_write(nth, arg, 0);
        bertc_status st = bertc_debug_check_steps(c, &r.rq);
        E->stray_write(0, 0, 0);
        CHECK(st == BERTC_STATUS_BAD_PLAN && strstr(bertc_context_error(c), "the device's weights differ from the plan's"),
              "a stray byte in the weights: %s (%s)", bertc_status_name(st), bertc_context_error(c));
    }
    bertc_context_destroy(c);
    plan_free(&p);
    bertc_plan_close(pl);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(E = emuctl_open())) return 1;
    CHECK_CASE(test_stray_bytes_caught);
    CHECK_CASE(test_families);
    CHECK_CASE(test_minilm);
    return check_summary();
}
