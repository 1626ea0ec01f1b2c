/*
 * cli_bench — `bertc bench PLAN`: latency percentiles per bucket, measured
 * on the device with CUDA events around each graph launch and on the host
 * around bertc_infer.  With --soak, many threads and contexts for a
 * bounded time instead (cli_soak.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char USAGE_BENCH[] =
    "usage: bertc bench PLAN [--device cuda|emu] [--iters N] [--warmup N] [--seq-len L]\n"
    "                   [--no-pdl] [--expect-sha256 HEX]\n"
    "       bertc bench PLAN --per-step [--predict GPU] [--json] [--iters N] [--seq-len L]\n"
    "                   [--device cuda|emu]\n"
    "       bertc bench PLAN --check-steps [--seq-len L] [--device cuda|emu]\n"
    "       bertc bench PLAN --soak SECONDS [--threads N] [--seed S] [--seq-len L]\n"
    "                   [--device cuda|emu] [--expect-sha256 HEX]\n"
    "       bertc bench PLAN --batch N [--lengths DIST] [--concurrency C] [--unpacked]\n"
    "                   [--iters N] [--warmup N] [--seed S] [--device cuda|emu]\n"
    "\n"
    "Times requests of random ids, per bucket (at the bucket's full length) or\n"
    "at length L only: after the warm-up, each of N requests is timed on the\n"
    "device with CUDA events around its graph launch, and on the host around\n"
    "bertc_infer. Prints p50/p90/p99 and jitter (p99 - p50) in microseconds.\n"
    "Defaults: --iters 200 (20 on the emulated device), --warmup 20 (2).\n"
    "--no-pdl: no programmatic dependent launch in the graphs (to measure what\n"
    "it saves on a GPU of compute capability 9.0 or newer).\n"
    "\n"
    "--per-step: each step of each bucket (or of L's bucket, at length L) runs\n"
    "on its own between CUDA events, N times (default 20, 3 on the emulated\n"
    "device); prints the median per step, with --predict GPU (t4, a10, l4, l40s,\n"
    "a100, h100, h200, b200) the performance model's time for that GPU beside it\n"
    "(bertc inspect --predict), the sums, and the whole graph's time. --json:\n"
    "one JSON object. On the emulated device the times are CPU times.\n"
    "\n"
    "--check-steps: runs each bucket (or L's) once outside its graph, a step\n"
    "at a time, each with every arena byte outside its arguments poisoned, and\n"
    "checks that every step writes only its outputs, leaves its inputs, the\n"
    "request and the weights alone and its arrival counters zero, and that the\n"
    "outputs equal the graph's bit for bit (bertc_debug_check_steps); exits 1\n"
    "naming the first step that does not. Not a timing: copies the arena twice\n"
    "per step.\n"
    "\n"
    "--soak: N threads (default 4) share the plan, each with its own contexts,\n"
    "sending random requests of lengths 1..L (default: the longest bucket) for\n"
    "SECONDS, with context re-creation, extra plan opens and invalid requests\n"
    "mixed in; outputs are compared bit for bit with a single-threaded run. On\n"
    "the emulated device a quarter of the time runs kernels for real and the\n"
    "rest on its null device. Reports requests, errors, resident memory and\n"
    "the device's live objects; exits 3 on any error, mismatch or leak.\n"
    "\n"
    "--batch N: C client threads (--concurrency, default 1), each with its own\n"
    "context, send --iters batches (default 50, 3 on the emulated device) of N\n"
    "requests of random ids whose lengths follow DIST: fixed:L, uniform:A-B\n"
    "(default uniform:1-the longest bucket) or exp:MEAN, seeded by --seed. A\n"
    "batch runs as packed batches when the plan has token buckets (bertc compile\n"
    "--batch-tokens), else (or with --unpacked) one request at a time. Prints\n"
    "requests/s, tokens/s and the p50/p90/p99 latency of a request in ms.\n";

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, int n, double q) {
    int i = (int)(q * (n - 1) + 0.5);
    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

typedef struct bench_options {
    const char *path, *pin;
    bertc_device_kind kind;
    long iters, warmup, seq_len, soak, threads;
    uint64_t seed;
    int per_step, json, no_pdl, unpacked, check_steps;
    long batch, concurrency;
    const char *lengths;
    const char *predict;               /* --per-step: the GPU the model predicts for */
} bench_options;

/* Options into o; -1 when the command should go on, else its exit status. */
static int bench_parse(int argc, char **argv, bench_options *o) {
    const char *device = "cuda";
    *o = (bench_options){.iters = -1, .warmup = -1, .threads = 4, .seed = 1, .concurrency = 1};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) { fputs(USAGE_BENCH, stdout); return 0; }
        long *num = NULL;
        if (!strcmp(a, "--per-step") || !strcmp(a, "--json") || !strcmp(a, "--no-pdl") || !strcmp(a, "--unpacked")) {
            *(a[2] == 'p' ? &o->per_step : a[2] == 'j' ? &o->json : a[2] == 'n' ? &o->no_pdl : &o->unpacked) = 1;
            continue;
        }
        if (!strcmp(a, "--check-steps")) {
            o->check_steps = 1;
            continue;
        }
        if (!strcmp(a, "--seed")) {
            /* any 64-bit number: the tests pass BERTC_TEST_SEED */
            char *end;
            if (++i >= argc) return cli_usage_error(USAGE_BENCH, "%s needs a value", a);
            o->seed = strtoull(argv[i], &end, 0);
            if (end == argv[i] || *end || argv[i][0] == '-')
                return cli_usage_error(USAGE_BENCH, "bench: '%s' is not a valid seed", argv[i]);
            continue;
        }
        if (!strcmp(a, "--device") || !strcmp(a, "--expect-sha256") || !strcmp(a, "--predict") ||
            !strcmp(a, "--lengths")) {
            if (++i >= argc) return cli_usage_error(USAGE_BENCH, "%s needs a value", a);
            *(a[2] == 'd' ? &device : a[2] == 'e' ? &o->pin : a[2] == 'p' ? &o->predict : &o->lengths) = argv[i];
            continue;
        } else if (!strcmp(a, "--iters")) num = &o->iters;
        else if (!strcmp(a, "--warmup")) num = &o->warmup;
        else if (!strcmp(a, "--seq-len")) num = &o->seq_len;
        else if (!strcmp(a, "--soak")) num = &o->soak;
        else if (!strcmp(a, "--threads")) num = &o->threads;
        else if (!strcmp(a, "--batch")) num = &o->batch;
        else if (!strcmp(a, "--concurrency")) num = &o->concurrency;
        else if (a[0] == '-' && a[1]) return cli_usage_error(USAGE_BENCH, "bench: unknown option '%s'", a);
        else if (!o->path) { o->path = a; continue; }
        else return cli_usage_error(USAGE_BENCH, "bench: unexpected argument '%s'", a);
        if (++i >= argc) return cli_usage_error(USAGE_BENCH, "%s needs a value", a);
        char *end;
        *num = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end || *num < (num == &o->warmup ? 0 : 1) || *num > 1000000)
            return cli_usage_error(USAGE_BENCH, "bench: '%s' is not a valid count", argv[i]);
    }
    if (!o->path) return cli_usage_error(USAGE_BENCH, "bench: missing PLAN%s", "");
    if (cli_parse_device(device, &o->kind))
        return cli_usage_error(USAGE_BENCH, "bench: unknown device '%s' (expected cuda or emu)", device);
    if (o->threads > 256) return cli_usage_error(USAGE_BENCH, "bench: --threads %s is above 256", "");
    int cuda = o->kind == BERTC_DEVICE_CUDA;
    if (o->json && !o->per_step) return cli_usage_error(USAGE_BENCH, "bench: --json goes with --per-step%s", "");
    if (o->predict && !o->per_step) return cli_usage_error(USAGE_BENCH, "bench: --predict goes with --per-step%s", "");
    if (o->per_step && o->soak) return cli_usage_error(USAGE_BENCH, "bench: --per-step and --soak exclude each other%s", "");
    if (o->check_steps && (o->per_step || o->soak || o->batch || o->iters >= 0 || o->warmup >= 0 || o->no_pdl))
        return cli_usage_error(USAGE_BENCH, "bench: --check-steps goes with --seq-len and --device only%s", "");
    if (o->batch && (o->per_step || o->soak))
        return cli_usage_error(USAGE_BENCH, "bench: --batch excludes --per-step and --soak%s", "");
    if (!o->batch && (o->lengths || o->unpacked || o->concurrency != 1))
        return cli_usage_error(USAGE_BENCH, "bench: --lengths, --concurrency and --unpacked go with --batch%s", "");
    if (o->batch > 4096 || o->concurrency > 256)
        return cli_usage_error(USAGE_BENCH, "bench: --batch is at most 4096 and --concurrency 256%s", "");
    if (o->iters < 0 && o->batch) o->iters = cuda ? 50 : 3;
    if (o->warmup < 0 && o->batch) o->warmup = cuda ? 5 : 1;
    if (o->iters < 0 && o->per_step) o->iters = cuda ? 20 : 3;
    if (o->iters < 0) o->iters = cuda ? 200 : 20;
    if (o->warmup < 0) o->warmup = cuda ? 20 : 2;
    return -1;
}

int cmd_bench(int argc, char **argv) {
    bench_options o;
    int prc = bench_parse(argc, argv, &o);
    if (prc >= 0) return prc;
    if (o.soak)
        return cli_soak(o.path, o.pin, o.kind, (double)o.soak, (int)o.threads, (int)o.seq_len, (uint64_t)o.seed);
    if (o.batch) {
        cli_batch_load load = {(int)o.batch, (int)o.concurrency, o.unpacked, o.lengths, o.iters, o.warmup, o.seed};
        return cli_bench_batch(o.path, o.pin, o.kind, &load);
    }
    const char *path = o.path, *pin = o.pin;
    bertc_device_kind kind = o.kind;
    long iters = o.iters, warmup = o.warmup, seq_len = o.seq_len;
    char err[1024];
    bertc_plan *pl = NULL;
    bertc_context *ctx = NULL;
    prc = cli_plan_open(path, pin, &pl);
    if (prc) return prc;
    bertc_status st;
    int maxb = bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1);
    if (seq_len > maxb) {
        bertc_plan_close(pl);
        fprintf(stderr, "bertc: error: --seq-len %ld is above the plan's longest bucket (%d)\n", seq_len, maxb);
        return DIAG_CODE_INPUT;
    }
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = kind;
    opt.timing = 1;
    opt.pdl = !o.no_pdl;
    st = bertc_context_create(pl, &opt, &ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        bertc_plan_close(pl);
        return cli_runtime_fail(st, err);
    }
    int32_t *ids = malloc((size_t)maxb * sizeof *ids);
    double *dev_us = malloc((size_t)iters * sizeof *dev_us), *host_us = malloc((size_t)iters * sizeof *host_us);
    int rc = 0;
    if (!ids || !dev_us || !host_us) { rc = cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory"); goto done; }
    /* Random ids away from the special tokens; a fixed seed so runs compare. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int64_t vocab = bertc_plan_vocab_size(pl);
    for (int i = 0; i < maxb; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(vocab > 1000 ? 1000 + x % (uint64_t)(vocab - 1000) : x % (uint64_t)vocab);
    }
    if (o.check_steps) {
        rc = cli_bench_check(ctx, pl, ids, (int)seq_len);
        goto done;
    }
    if (o.per_step) {
        rc = cli_bench_steps(ctx, pl, path, ids, (int)seq_len, (int)iters, o.json, o.predict);
        goto done;
    }
    printf("plan %s on %s (image %s %s%s): %ld warm-up + %ld timed requests per length\n", path,
           kind == BERTC_DEVICE_CUDA ? "cuda" : "the emulated device", bertc_context_image_arch(ctx),
           bertc_context_image_kind(ctx), bertc_context_programmatic_launch(ctx) ? ", programmatic launch" : "",
           warmup, iters);
    printf("%8s %10s %10s %10s %10s   %10s %10s %10s\n", "len", "dev p50", "dev p90", "dev p99", "jitter", "host p50",
           "host p90", "host p99");
    for (int b = 0; b < bertc_plan_bucket_count(pl); b++) {
        int len = seq_len ? (int)seq_len : bertc_plan_bucket_len(pl, b);
        if (seq_len && b > 0) break;
        bertc_request rq = {ids, NULL, NULL, len};
        for (long i = 0; i < warmup + iters; i++) {
            double t0 = cli_now();
            st = bertc_infer(ctx, &rq);
            double t1 = cli_now();
            float ms = 0;
            if (st == BERTC_STATUS_OK) st = bertc_context_last_device_ms(ctx, &ms);
            if (st != BERTC_STATUS_OK) { rc = cli_runtime_fail(st, bertc_context_error(ctx)); goto done; }
            if (i >= warmup) {
                dev_us[i - warmup] = 1e3 * ms;
                host_us[i - warmup] = 1e6 * (t1 - t0);
            }
        }
        qsort(dev_us, (size_t)iters, sizeof *dev_us, cmp_double);
        qsort(host_us, (size_t)iters, sizeof *host_us, cmp_double);
        double p50 = percentile(dev_us, (int)iters, 0.5), p99 = percentile(dev_us, (int)iters, 0.99);
        printf("%8d %10.1f %10.1f %10.1f %10.1f   %10.1f %10.1f %10.1f\n", len, p50,
               percentile(dev_us, (int)iters, 0.9), p99, p99 - p50, percentile(host_us, (int)iters, 0.5),
               percentile(host_us, (int)iters, 0.9), percentile(host_us, (int)iters, 0.99));
    }
    printf("(microseconds; device: CUDA events around the graph launch; host: wall time of bertc_infer)\n");
done:
    free(ids);
    free(dev_us);
    free(host_us);
    bertc_context_destroy(ctx);
    bertc_plan_close(pl);
    return rc;
}

