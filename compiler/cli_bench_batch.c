/*
 * cli_bench_batch — `bertc bench PLAN --batch N --lengths DIST
 * --concurrency C`: a bounded, seeded synthetic load of batches.
 *
 * C client threads share the open plan, each with its own context (the
 * runtime's rule: a context serves one thread at a time).  Each sends
 * --warmup untimed and then --iters timed batches of N requests whose
 * lengths are drawn from DIST with the thread's own seeded generator, so
 * a run is repeatable: the same seed gives the same requests.  A batch
 * goes to bertc_infer_batch when the plan has token buckets — cut into as
 * few packed batches as fit (bertc_plan_max_batch requests and the
 * largest token bucket's tokens each) — and request by request through
 * bertc_infer otherwise or with --unpacked (the batch-1 path, the
 * baseline).  A request's latency is from its batch's start to the end of
 * the call that computed it (a request behind others in the batch-1 path
 * waits for them, as it would in a server's queue).
 *
 * Reported: requests/s and tokens/s over the timed phase's wall time (from
 * the first thread's start to the last one's end), the packed launches
 * made, and the requests' p50/p90/p99 latency in milliseconds.  On the
 * emulated device the numbers are CPU times: they compare runs of the
 * same plan, never a GPU (docs/performance.md).
 *
 * DIST: fixed:L (every request L tokens), uniform:A-B (A..B, the default
 * uniform:1-longest bucket), exp:M (exponential of mean M, rounded up and
 * clamped to 1..longest: many short requests and a tail of long ones, the
 * shape of search queries and passages).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef enum bb_dist_kind { BB_DIST_FIXED, BB_DIST_UNIFORM, BB_DIST_EXP } bb_dist_kind;

typedef struct bb_dist {
    bb_dist_kind kind;
    double a, b;
    int longest;
} bb_dist;

typedef struct bb_shared {
    bertc_plan *pl;
    bertc_device_kind kind;
    bb_dist dist;
    int batch, unpacked;
    long iters, warmup;
    uint64_t seed;
} bb_shared;

typedef struct bb_worker {
    const bb_shared *sh;
    int index;
    double *lat_ms;          /* [iters * batch] */
    int64_t tokens, launches;
    double t_start, t_end;
    int rc;
    char err[1024];
} bb_worker;

static uint64_t bb_next(uint64_t *x) {
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static double bb_uniform(uint64_t *x) { return (double)(bb_next(x) >> 11) * (1.0 / 9007199254740992.0); }

static int64_t bb_draw_len(const bb_dist *d, uint64_t *x) {
    double v = d->kind == BB_DIST_FIXED     ? d->a
               : d->kind == BB_DIST_UNIFORM ? d->a + floor(bb_uniform(x) * (d->b - d->a + 1))
                                            : ceil(-d->a * log(1.0 - bb_uniform(x)));
    return v < 1 ? 1 : v > d->longest ? d->longest : (int64_t)v;
}

/* DIST into d: 0, or an exit status after the message. */
static int bb_parse_dist(const char *s, int longest, bb_dist *d) {
    *d = (bb_dist){BB_DIST_UNIFORM, 1, longest, longest};
    char tail;
    if (!s) return 0;
    if (sscanf(s, "fixed:%lf%c", &d->a, &tail) == 1 && d->a >= 1 && d->a <= longest) d->kind = BB_DIST_FIXED;
    else if (sscanf(s, "uniform:%lf-%lf%c", &d->a, &d->b, &tail) == 2 && d->a >= 1 && d->a <= d->b && d->b <= longest)
        d->kind = BB_DIST_UNIFORM;
    else if (sscanf(s, "exp:%lf%c", &d->a, &tail) == 1 && d->a > 0 && d->a <= longest) d->kind = BB_DIST_EXP;
    else {
        fprintf(stderr,
                "bertc: error: --lengths '%s': expected fixed:L, uniform:A-B or exp:MEAN with lengths in 1..%d (the "
                "plan's longest bucket)\n", s, longest);
        return DIAG_CODE_USAGE;
    }
    return 0;
}

/* One batch of n requests (ids in rq): packed where it fits, else alone;
 * each request's latency from t0 into lat. */
static bertc_status bb_batch(bb_worker *w, bertc_context *ctx, const bertc_request *rq, int n, double t0, double *lat) {
    const bb_shared *sh = w->sh;
    size_t max_n = sh->unpacked ? 0 : (size_t)bertc_plan_max_batch(sh->pl);
    int64_t max_tokens = bertc_plan_max_batch_tokens(sh->pl);
    for (int first = 0; first < n;) {
        int k = 1;
        int64_t tokens = rq[first].len;
        while (max_n && first + k < n && (size_t)k < max_n && tokens + rq[first + k].len <= max_tokens)
            tokens += rq[first + k++].len;
        int packed = max_n > 0 && tokens <= max_tokens;
        bertc_status st = packed ? bertc_infer_batch(ctx, rq + first, (size_t)k) : bertc_infer(ctx, &rq[first]);
        if (st != BERTC_STATUS_OK) {
            snprintf(w->err, sizeof w->err, "%s", bertc_context_error(ctx));
            return st;
        }
        double t = cli_now();
        for (int i = 0; lat && i < k; i++) lat[first + i] = 1e3 * (t - t0);
        w->launches += 1;
        first += k;
    }
    return BERTC_STATUS_OK;
}

static void *bb_worker_run(void *arg) {
    bb_worker *w = arg;
    const bb_shared *sh = w->sh;
    bertc_context *ctx = NULL;
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = sh->kind;
    bertc_status st = bertc_context_create(sh->pl, &opt, &ctx, w->err, sizeof w->err);
    int longest = sh->dist.longest;
    int32_t *ids = malloc((size_t)sh->batch * (size_t)longest * sizeof *ids);
    bertc_request *rq = calloc((size_t)sh->batch, sizeof *rq);
    uint64_t x = (sh->seed + 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1)) | 1;
    int64_t vocab = bertc_plan_vocab_size(sh->pl);
    if (st == BERTC_STATUS_OK && (!ids || !rq)) st = BERTC_STATUS_OUT_OF_MEMORY;
    for (long it = 0; st == BERTC_STATUS_OK && it < sh->warmup + sh->iters; it++) {
        if (it == sh->warmup) w->t_start = cli_now(), w->launches = 0;
        for (int i = 0; i < sh->batch; i++) {
            int32_t *p = ids + (size_t)i * (size_t)longest;
            rq[i] = (bertc_request){p, NULL, NULL, bb_draw_len(&sh->dist, &x)};
            for (int64_t t = 0; t < rq[i].len; t++)
                p[t] = (int32_t)(vocab > 1000 ? 1000 + bb_next(&x) % (uint64_t)(vocab - 1000)
                                              : bb_next(&x) % (uint64_t)vocab);
            if (it >= sh->warmup) w->tokens += rq[i].len;
        }
        double *lat = it >= sh->warmup ? w->lat_ms + (size_t)(it - sh->warmup) * (size_t)sh->batch : NULL;
        st = bb_batch(w, ctx, rq, sh->batch, cli_now(), lat);
    }
    w->t_end = cli_now();
    w->rc = st == BERTC_STATUS_OK ? 0 : cli_status_exit(st);
    free(ids);
    free(rq);
    bertc_context_destroy(ctx);
    return NULL;
}

static int bb_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double bb_pct(const double *s, size_t n, double q) {
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return s[i < n ? i : n - 1];
}

/* Joins the workers' numbers into the report. */
static int bb_report(const bb_shared *sh, bb_worker *w, int c, const char *path) {
    size_t per = (size_t)sh->iters * (size_t)sh->batch, n = per * (size_t)c;
    double *all = malloc(n * sizeof *all), t0 = w[0].t_start, t1 = w[0].t_end;
    if (!all) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    int64_t tokens = 0, launches = 0;
    for (int i = 0; i < c; i++) {
        memcpy(all + (size_t)i * per, w[i].lat_ms, per * sizeof *all);
        tokens += w[i].tokens;
        launches += w[i].launches;
        t0 = w[i].t_start < t0 ? w[i].t_start : t0;
        t1 = w[i].t_end > t1 ? w[i].t_end : t1;
    }
    qsort(all, n, sizeof *all, bb_cmp);
    double secs = t1 > t0 ? t1 - t0 : 1e-9;
    int packed = !sh->unpacked && bertc_plan_max_batch(sh->pl) > 0;
    printf("plan %s on %s: %d client(s) x %ld batches of %d requests (%s), %ld warm-up batches each\n", path,
           sh->kind == BERTC_DEVICE_CUDA ? "cuda" : "the emulated device (CPU times)", c, sh->iters, sh->batch,
           packed ? "packed batches" : "one request per launch", sh->warmup);
    printf("requests/s %.1f  tokens/s %.1f  (%zu requests, %lld tokens, %lld launches, %.3f s)\n", (double)n / secs,
           (double)tokens / secs, n, (long long)tokens, (long long)launches, secs);
    printf("latency per request (ms): p50 %.3f  p90 %.3f  p99 %.3f\n", bb_pct(all, n, 0.5), bb_pct(all, n, 0.9),
           bb_pct(all, n, 0.99));
    free(all);
    return 0;
}

int cli_bench_batch(const char *path, const char *pin, bertc_device_kind kind, const cli_batch_load *load) {
    bertc_plan *pl = NULL;
    int rc = cli_plan_open(path, pin, &pl);
    if (rc) return rc;
    bb_shared sh = {.pl = pl, .kind = kind, .batch = load->batch, .unpacked = load->unpacked, .iters = load->iters,
                    .warmup = load->warmup, .seed = load->seed};
    int longest = bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1), c = load->concurrency;
    if ((rc = bb_parse_dist(load->lengths, longest, &sh.dist))) {
        bertc_plan_close(pl);
        return rc;
    }
    bb_worker *w = calloc((size_t)c, sizeof *w);
    pthread_t *t = calloc((size_t)c, sizeof *t);
    int started = 0;
    for (int i = 0; w && t && i < c; i++) {
        w[i] = (bb_worker){.sh = &sh, .index = i};
        if (!(w[i].lat_ms = calloc((size_t)sh.iters * (size_t)sh.batch, sizeof(double)))) break;
        if (pthread_create(&t[i], NULL, bb_worker_run, &w[i])) break;
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    if (started < c) rc = cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "cannot start the client threads");
    for (int i = 0; !rc && i < c; i++)
        if (w[i].rc) {
            fprintf(stderr, "bertc: error: client %d: %s\n", i, w[i].err);
            rc = w[i].rc;
        }
    if (!rc) rc = bb_report(&sh, w, c, path);
    for (int i = 0; w && i < c; i++) free(w[i].lat_ms);
    free(w);
    free(t);
    bertc_plan_close(pl);
    return rc;
}
