/*
 * cli_soak — `bertc bench PLAN --soak SECONDS --threads N`: a service's
 * life, compressed.  N threads share one open plan; each owns its own
 * contexts, sends requests of random lengths, ids, token types, masks and
 * texts, and now and then throws its context away and makes a new one, or
 * opens the plan a second time and closes it again.  What a long-running
 * service would notice is reported: requests served, requests refused as
 * they should be, anything else that failed, resident memory at start and
 * end, and (on the emulated device) the device's live-object counters,
 * which must come back to where they started.
 *
 * Two phases.  The checked phase runs for real: before it, one context on
 * the main thread answers a fixed set of seeded requests, and during it
 * every thread replays requests from that set and compares every output,
 * bit for bit, with the single-threaded answer — a race, a shared buffer
 * or a schedule-dependent reduction shows up as a mismatch.  On the
 * emulated device, whose kernels run on the CPU, that phase gets a quarter
 * of the time and the rest is the volume phase on the null device (every
 * launch and matmul checked but not executed), which is what lets the
 * host-side code see hundreds of thousands of requests, invalid ones
 * included: ids past the vocabulary, length 0 or past the longest bucket,
 * mask values other than 0/1 must be refused as bad requests and the
 * context must go on serving.  On a GPU the whole time is checked.
 *
 * The null switch and the counters are the emulated device's control
 * surface (runtime/emu/device/emudev.h), found in the library the runtime
 * loaded; nothing here changes how the runtime runs.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "emudev.h"

#define SOAK_NREF 16          /* requests in the checked set */
#define SOAK_CHURN_CONTEXT 48 /* requests between context re-creations */
#define SOAK_CHURN_PLAN 160   /* requests between extra plan opens */

typedef struct soak_ref {
    int32_t *ids, *types, *mask;
    int64_t len;
    float **want;             /* [noutputs] the single-threaded answer */
    size_t *count;            /* [noutputs] */
} soak_ref;

typedef struct soak_emu {
    void (*set_null)(int on);
    void (*get_stats)(bertc_emudev_stats *out);
} soak_emu;

typedef struct soak {
    const char *path, *pin;
    bertc_device_kind kind;
    double seconds;
    int threads;
    uint64_t seed;
    bertc_plan *plan;
    int noutputs, maxlen, longest, has_text;  /* maxlen: requests drawn up to it; longest: the plan's */
    int64_t vocab, ntypes;
    soak_ref ref[SOAK_NREF];
    soak_emu emu;             /* NULL members: not the emulated device */
    double deadline;
    int checked;              /* the phase running: 1 checked, 0 volume */
    atomic_long requests[2], texts, refused, errors, mismatches, contexts, plan_opens;
    pthread_mutex_t lock;
    char first_error[512];
} soak;

typedef struct soak_worker {
    soak *s;
    uint64_t rng;
    bertc_context *ctx;
    bertc_encoding *enc;
    int32_t *ids, *types, *mask;
    float *out;
    size_t out_cap;
    long served;
} soak_worker;

static uint64_t soak_rand(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t soak_range(uint64_t *x, int64_t lo, int64_t hi) {
    return lo + (int64_t)(soak_rand(x) % (uint64_t)(hi - lo + 1));
}

/* Counts an error; the first one's "what: detail" is kept for the report. */
static void soak_error(soak *s, const char *what, const char *detail) {
    atomic_fetch_add(&s->errors, 1);
    pthread_mutex_lock(&s->lock);
    if (!s->first_error[0]) snprintf(s->first_error, sizeof s->first_error, "%.100s: %.380s", what, detail);
    pthread_mutex_unlock(&s->lock);
}

/* Resident set size in KiB (0 if /proc is not there). */
static long soak_rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ------------------------------------------------ the emulated device's controls */

static int soak_find_emudev(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
    if (slash && !strcmp(slash + 1, "libbertc_emudev.so")) {
        snprintf((char *)data, 4096, "%s", n);
        return 1;
    }
    return 0;
}

/* The control surface of the emulated device the runtime loaded (call it
 * while a context exists, so the library is loaded). */
static void soak_emu_find(soak *s) {
    char path[4096] = "";
    dl_iterate_phdr(soak_find_emudev, path);
    void *h = path[0] ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (!h) return;
    *(void **)&s->emu.set_null = dlsym(h, "bertc_emudev_set_null");
    *(void **)&s->emu.get_stats = dlsym(h, "bertc_emudev_get_stats");
    if (!s->emu.set_null || !s->emu.get_stats) memset(&s->emu, 0, sizeof s->emu);
    dlclose(h); /* the runtime's own reference keeps it loaded (RTLD_NODELETE) */
}

/* ------------------------------------------------ requests */

/* Appends the UTF-8 of a random code point from scripts a tokenizer meets. */
static size_t soak_utf8(uint64_t *x, char *p) {
    static const uint32_t ranges[][2] = {{0x61, 0x7a}, {0x41, 0x5a}, {0x30, 0x39}, {0x20, 0x2f}, {0xc0, 0x17f},
                                         {0x391, 0x3c9}, {0x410, 0x44f}, {0x5d0, 0x5ea}, {0x627, 0x64a},
                                         {0x905, 0x939}, {0x3041, 0x3093}, {0x4e00, 0x9fff}, {0x1f600, 0x1f64f}};
    const uint32_t *r = ranges[soak_rand(x) % (sizeof ranges / sizeof ranges[0])];
    uint32_t c = r[0] + (uint32_t)(soak_rand(x) % (r[1] - r[0] + 1));
    if (c < 0x80) return (size_t)(p[0] = (char)c, 1);
    if (c < 0x800) return p[0] = (char)(0xc0 | c >> 6), p[1] = (char)(0x80 | (c & 0x3f)), 2;
    if (c < 0x10000)
        return p[0] = (char)(0xe0 | c >> 12), p[1] = (char)(0x80 | ((c >> 6) & 0x3f)), p[2] = (char)(0x80 | (c & 0x3f)), 3;
    p[0] = (char)(0xf0 | c >> 18), p[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    p[2] = (char)(0x80 | ((c >> 6) & 0x3f)), p[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* A random valid request of length 1..maxlen into ids/types/mask. */
static bertc_request soak_random_request(const soak *s, uint64_t *x, int32_t *ids, int32_t *types, int32_t *mask,
                                         int64_t maxlen) {
    int64_t len = soak_range(x, 1, maxlen);
    for (int64_t i = 0; i < len; i++) {
        ids[i] = (int32_t)soak_range(x, 0, s->vocab - 1);
        types[i] = s->ntypes > 0 ? (int32_t)soak_range(x, 0, s->ntypes - 1) : 0;
        mask[i] = i == 0 || soak_range(x, 0, 4) ? 1 : 0;
    }
    bertc_request rq = {ids, soak_rand(x) & 1 ? types : NULL, soak_rand(x) & 1 ? mask : NULL, len};
    return rq;
}

/* Text of up to 3 * maxlen code points through the plan's tokenizer. */
static int soak_text_request(soak_worker *w, bertc_request *rq) {
    char text[4 * 3 * 512 + 1];
    size_t n = 0, cps = (size_t)soak_range(&w->rng, 0, 3 * (w->s->maxlen < 512 ? w->s->maxlen : 512));
    for (size_t i = 0; i < cps; i++) n += soak_utf8(&w->rng, text + n);
    text[n] = '\0';
    char err[256];
    bertc_status st = bertc_encode(w->s->plan, w->enc, text, NULL, 0, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        soak_error(w->s, "bertc_encode", err);
        return -1;
    }
    rq->input_ids = bertc_encoding_ids(w->enc);
    rq->token_type_ids = bertc_encoding_type_ids(w->enc);
    rq->attention_mask = NULL;
    rq->len = bertc_encoding_len(w->enc);
    atomic_fetch_add(&w->s->texts, 1);
    return 0;
}

/* Breaks a valid request in one of the ways a request must be refused. */
static void soak_spoil(const soak *s, uint64_t *x, bertc_request *rq, int32_t *ids, int32_t *mask) {
    switch (soak_rand(x) % 4) {
    case 0: ids[soak_range(x, 0, rq->len - 1)] = (int32_t)(soak_rand(x) & 1 ? s->vocab : -1); break;
    case 1: rq->len = 0; break;
    case 2: rq->len = s->longest + soak_range(x, 1, 64); break;
    default:
        mask[soak_range(x, 0, rq->len - 1)] = 2;
        rq->attention_mask = mask;
        break;
    }
}

/* ------------------------------------------------ contexts */

static int soak_context_new(soak_worker *w, bertc_plan *pl, bertc_context **ctx) {
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = w->s->kind;
    char err[512];
    bertc_status st = bertc_context_create(pl, &opt, ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        soak_error(w->s, "bertc_context_create", err);
        return -1;
    }
    atomic_fetch_add(&w->s->contexts, 1);
    return 0;
}

/* Every so often: a new context, or the plan opened again beside the shared one. */
static int soak_churn(soak_worker *w) {
    soak *s = w->s;
    if (w->served % SOAK_CHURN_PLAN == SOAK_CHURN_PLAN - 1) {
        bertc_plan_options po;
        bertc_plan_options_init(&po);
        po.expected_sha256 = s->pin;
        bertc_plan *pl = NULL;
        char err[512];
        bertc_context *ctx = NULL;
        if (bertc_plan_open_with(s->path, &po, &pl, err, sizeof err) != BERTC_STATUS_OK) {
            soak_error(s, "bertc_plan_open", err);
            return -1;
        }
        atomic_fetch_add(&s->plan_opens, 1);
        int rc = soak_context_new(w, pl, &ctx);
        bertc_plan_close(pl); /* the context holds the plan now */
        bertc_context_destroy(ctx);
        if (rc) return -1;
    }
    if (w->served % SOAK_CHURN_CONTEXT == SOAK_CHURN_CONTEXT - 1) {
        bertc_context_destroy(w->ctx);
        w->ctx = NULL;
        return soak_context_new(w, s->plan, &w->ctx);
    }
    return 0;
}

/* ------------------------------------------------ outputs */

static size_t soak_output_count(const soak *s, int o, int64_t len) {
    bertc_output_info info;
    bertc_plan_output_info(s->plan, o, &info);
    return (size_t)(info.per_token ? len : 1) * (size_t)info.cols;
}

static float *soak_out_buffer(soak_worker *w, size_t n) {
    if (n > w->out_cap) {
        float *p = realloc(w->out, n * sizeof *p);
        if (!p) return NULL;
        w->out = p;
        w->out_cap = n;
    }
    return w->out;
}

/* One checked request: replay reference r and compare every output. */
static void soak_checked_one(soak_worker *w, const soak_ref *r) {
    soak *s = w->s;
    bertc_request rq = {r->ids, r->types, r->mask, r->len};
    bertc_status st = bertc_infer(w->ctx, &rq);
    atomic_fetch_add(&s->requests[1], 1);
    if (st != BERTC_STATUS_OK) {
        soak_error(s, "bertc_infer (checked)", bertc_context_error(w->ctx));
        return;
    }
    for (int o = 0; o < s->noutputs; o++) {
        float *got = soak_out_buffer(w, r->count[o]);
        if (!got || bertc_output_read(w->ctx, o, got, r->count[o]) != BERTC_STATUS_OK) {
            soak_error(s, "bertc_output_read", bertc_context_error(w->ctx));
            return;
        }
        if (memcmp(got, r->want[o], r->count[o] * sizeof *got)) {
            atomic_fetch_add(&s->mismatches, 1);
            return;
        }
    }
}

/* One volume request: valid (ids or text), or spoiled and refused. */
static void soak_volume_one(soak_worker *w) {
    soak *s = w->s;
    bertc_request rq = soak_random_request(s, &w->rng, w->ids, w->types, w->mask, s->maxlen);
    int spoil = soak_range(&w->rng, 0, 9) == 0;
    if (!spoil && s->has_text && soak_range(&w->rng, 0, 3) == 0 && soak_text_request(w, &rq)) return;
    if (spoil) soak_spoil(s, &w->rng, &rq, w->ids, w->mask);
    bertc_status st = bertc_infer(w->ctx, &rq);
    atomic_fetch_add(&s->requests[0], 1);
    if (spoil && st == BERTC_STATUS_BAD_REQUEST) atomic_fetch_add(&s->refused, 1);
    else if (spoil) soak_error(s, "a bad request was answered with", bertc_status_name(st));
    else if (st != BERTC_STATUS_OK) soak_error(s, "bertc_infer", bertc_context_error(w->ctx));
}

static void *soak_thread(void *arg) {
    soak_worker *w = arg;
    soak *s = w->s;
    size_t n = (size_t)s->longest + 64;
    w->ids = malloc(n * sizeof *w->ids);
    w->types = malloc(n * sizeof *w->types);
    w->mask = malloc(n * sizeof *w->mask);
    w->enc = bertc_encoding_create();
    if (!w->ids || !w->types || !w->mask || !w->enc) soak_error(s, "soak", "out of memory");
    else if (!soak_context_new(w, s->plan, &w->ctx)) {
        while (cli_now() < s->deadline && w->ctx) {
            if (s->checked) soak_checked_one(w, &s->ref[soak_rand(&w->rng) % SOAK_NREF]);
            else soak_volume_one(w);
            w->served++;
            if (soak_churn(w)) break;
        }
    }
    bertc_context_destroy(w->ctx);
    bertc_encoding_free(w->enc);
    free(w->ids);
    free(w->types);
    free(w->mask);
    free(w->out);
    return NULL;
}

/* ------------------------------------------------ the phases */

static int soak_phase(soak *s, int checked, double seconds) {
    soak_worker *w = calloc((size_t)s->threads, sizeof *w);
    pthread_t *t = calloc((size_t)s->threads, sizeof *t);
    if (!w || !t) {
        free(w);
        free(t);
        return -1;
    }
    s->checked = checked;
    s->deadline = cli_now() + seconds;
    int started = 0;
    for (int i = 0; i < s->threads; i++) {
        w[i].s = s;
        w[i].rng = s->seed ^ (0x51ed270b2ull * (uint64_t)(i + 1 + 64 * checked));
        if (pthread_create(&t[i], NULL, soak_thread, &w[i]) == 0) started++;
        else break;
    }
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(w);
    free(t);
    return started == s->threads ? 0 : -1;
}

static void soak_ref_free(soak *s) {
    for (int i = 0; i < SOAK_NREF; i++) {
        soak_ref *r = &s->ref[i];
        for (int o = 0; r->want && o < s->noutputs; o++) free(r->want[o]);
        free(r->want);
        free(r->count);
        free(r->ids);
        free(r->types);
        free(r->mask);
    }
}

/* The checked set: seeded requests and their answers from one context on
 * this thread.  Leaves the emulated device's controls found. */
static int soak_ref_make(soak *s) {
    soak_worker w = {.s = s, .rng = s->seed};
    if (soak_context_new(&w, s->plan, &w.ctx)) return -1;
    soak_emu_find(s);
    int rc = 0;
    for (int i = 0; i < SOAK_NREF && !rc; i++) {
        soak_ref *r = &s->ref[i];
        size_t n = (size_t)s->maxlen;
        r->ids = malloc(n * sizeof *r->ids);
        r->types = malloc(n * sizeof *r->types);
        r->mask = malloc(n * sizeof *r->mask);
        r->want = calloc((size_t)s->noutputs, sizeof *r->want);
        r->count = calloc((size_t)s->noutputs, sizeof *r->count);
        if (!r->ids || !r->types || !r->mask || !r->want || !r->count) { rc = -1; break; }
        bertc_request rq = soak_random_request(s, &w.rng, r->ids, r->types, r->mask, s->maxlen);
        r->len = rq.len;
        if (!rq.token_type_ids) free(r->types), r->types = NULL;
        if (!rq.attention_mask) free(r->mask), r->mask = NULL;
        if (bertc_infer(w.ctx, &rq) != BERTC_STATUS_OK) {
            soak_error(s, "bertc_infer (reference)", bertc_context_error(w.ctx));
            rc = -1;
        }
        for (int o = 0; o < s->noutputs && !rc; o++) {
            r->count[o] = soak_output_count(s, o, r->len);
            r->want[o] = malloc(r->count[o] * sizeof(float));
            if (!r->want[o] || bertc_output_read(w.ctx, o, r->want[o], r->count[o]) != BERTC_STATUS_OK) rc = -1;
        }
    }
    bertc_context_destroy(w.ctx);
    return rc;
}

/* ------------------------------------------------ report */

static void soak_print_stats(const char *when, const bertc_emudev_stats *a) {
    printf("  device objects %-5s allocations %ld (%ld bytes), host allocations %ld, modules %ld, streams %ld, "
           "events %ld, graphs %ld, graph execs %ld, primary retains %ld, cuBLASLt objects %ld\n",
           when, a->live_allocations, a->live_bytes, a->live_host_allocations, a->live_modules, a->live_streams,
           a->live_events, a->live_graphs, a->live_graph_execs, a->live_primary_retains, a->live_blaslt_objects);
}

static int soak_stats_equal(const bertc_emudev_stats *a, const bertc_emudev_stats *b) {
    return a->live_allocations == b->live_allocations && a->live_bytes == b->live_bytes &&
           a->live_host_allocations == b->live_host_allocations && a->live_modules == b->live_modules &&
           a->live_streams == b->live_streams && a->live_events == b->live_events &&
           a->live_graphs == b->live_graphs && a->live_graph_execs == b->live_graph_execs &&
           a->live_primary_retains == b->live_primary_retains && a->live_blaslt_objects == b->live_blaslt_objects;
}

static int soak_report(soak *s, double checked_s, double volume_s, long rss0, long rss1,
                       const bertc_emudev_stats *e0, const bertc_emudev_stats *e1) {
    long req1 = atomic_load(&s->requests[1]), req0 = atomic_load(&s->requests[0]);
    long errors = atomic_load(&s->errors), mism = atomic_load(&s->mismatches);
    printf("  checked phase  %.1f s: %ld requests (%.0f/s) replaying %d seeded requests, %ld mismatches against "
           "the single-threaded answers\n", checked_s, req1, req1 / (checked_s > 0 ? checked_s : 1), SOAK_NREF, mism);
    if (volume_s > 0)
        printf("  volume phase   %.1f s on the null device: %ld requests (%.0f/s), %ld from text, %ld bad requests "
               "refused as they should be\n", volume_s, req0, req0 / volume_s, atomic_load(&s->texts),
               atomic_load(&s->refused));
    printf("  churn          %ld contexts created and destroyed, %ld extra plan opens and closes\n",
           atomic_load(&s->contexts), atomic_load(&s->plan_opens));
    printf("  resident memory start %.1f MiB, end %.1f MiB\n", rss0 / 1024.0, rss1 / 1024.0);
    int leaked = 0;
    if (s->emu.get_stats) {
        soak_print_stats("start", e0);
        soak_print_stats("end", e1);
        leaked = !soak_stats_equal(e0, e1);
    }
    printf("  errors         %ld%s%s\n", errors, errors ? ", the first: " : "", s->first_error);
    int ok = !errors && !mism && !leaked && req1 > 0;
    printf("soak: %s\n", ok ? "ok" : leaked ? "FAILED (device objects leaked)" : "FAILED");
    return ok ? 0 : DIAG_CODE_INTERNAL;
}

/* The soak proper, on an open plan. */
static int soak_run(soak *s) {
    s->noutputs = bertc_plan_output_count(s->plan);
    s->longest = bertc_plan_bucket_len(s->plan, bertc_plan_bucket_count(s->plan) - 1);
    if (!s->maxlen || s->maxlen > s->longest) s->maxlen = s->longest;
    s->vocab = bertc_plan_vocab_size(s->plan);
    s->ntypes = bertc_plan_type_vocab_size(s->plan);
    s->has_text = bertc_plan_has_tokenizer(s->plan);
    int rc = soak_ref_make(s);
    bertc_emudev_stats e0, e1;
    memset(&e0, 0, sizeof e0);
    memset(&e1, 0, sizeof e1);
    if (s->emu.get_stats) s->emu.get_stats(&e0);
    long rss0 = soak_rss_kib();
    double checked_s = s->emu.set_null ? s->seconds / 4 : s->seconds, volume_s = s->seconds - checked_s;
    printf("soak: plan %s on %s, %d threads, %.0f s, lengths 1..%d\n", s->path,
           s->kind == BERTC_DEVICE_CUDA ? "cuda" : "the emulated device", s->threads, s->seconds, s->maxlen);
    if (!rc) rc = soak_phase(s, 1, checked_s);
    if (!rc && volume_s > 0) {
        s->emu.set_null(1);
        rc = soak_phase(s, 0, volume_s);
        s->emu.set_null(0);
    }
    if (s->emu.get_stats) s->emu.get_stats(&e1);
    long rss1 = soak_rss_kib();
    if (rc && !atomic_load(&s->errors)) soak_error(s, "soak", "could not start its threads");
    return soak_report(s, checked_s, volume_s > 0 ? volume_s : 0, rss0, rss1, &e0, &e1);
}

int cli_soak(const char *path, const char *pin, bertc_device_kind kind, double seconds, int threads, int max_len,
             uint64_t seed) {
    soak *s = calloc(1, sizeof *s);
    if (!s) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    s->path = path;
    s->pin = pin;
    s->kind = kind;
    s->seconds = seconds;
    s->threads = threads;
    s->seed = seed;
    s->maxlen = max_len;
    pthread_mutex_init(&s->lock, NULL);
    int rc = cli_plan_open(path, pin, &s->plan);
    if (!rc) rc = soak_run(s);
    soak_ref_free(s);
    bertc_plan_close(s->plan);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return rc;
}
