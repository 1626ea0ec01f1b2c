/*
 * bench_tokenizer — tokenizer throughput through the public API.
 *
 *     build/tools/bench_tokenizer PLAN TEXTS [THREADS ...]
 *
 * TEXTS holds one text per line.  Prints, for bertc_encode one text at a
 * time on the calling thread and for bertc_encode_batch on each THREADS
 * count (default 1 and the online CPUs), the texts, tokens and bytes per
 * second over as many rounds of the whole file as fit in about a second
 * (after one warm-up round), as one line "key=value ..." per run, which
 * tools/bench_tokenizer.sh puts next to Hugging Face's numbers
 * (docs/performance.md).  A benchmark, never a test: nothing here is
 * checked but that every text encodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bertc.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The file's lines, NUL-terminated in place. */
static char **read_lines(const char *path, size_t *n, size_t *bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[len] = 0;
    size_t cap = 1;
    for (long i = 0; i < len; i++) cap += buf[i] == '\n';
    char **lines = malloc(cap * sizeof *lines);
    *n = 0;
    *bytes = (size_t)len;
    for (char *p = buf; p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        if (nl) *nl = 0;
        lines[(*n)++] = p;
        p = nl ? nl + 1 : buf + len;
    }
    return lines;
}

/* One run: threads 0 = bertc_encode one by one. */
static int run(bertc_plan *pl, char **texts, size_t n, size_t bytes, bertc_encoding **encs, int threads) {
    char err[1024];
    bertc_batch_options o;
    bertc_batch_options_init(&o);
    o.threads = threads;
    double t0 = 0, t1 = 0;
    long rounds = -1;   /* the first round warms up */
    size_t tokens = 0;
    for (; rounds < 1 || t1 - t0 < 1.0; rounds++) {
        if (rounds == 0) t0 = now();
        tokens = 0;
        if (threads == 0) {
            for (size_t i = 0; i < n; i++)
                if (bertc_encode(pl, encs[0], texts[i], NULL, 0, err, sizeof err) != BERTC_STATUS_OK) {
                    fprintf(stderr, "bench_tokenizer: text %zu: %s\n", i, err);
                    return -1;
                } else {
                    tokens += (size_t)bertc_encoding_len(encs[0]);
                }
        } else {
            if (bertc_encode_batch(pl, encs, (const char *const *)texts, NULL, n, &o, err, sizeof err) != BERTC_STATUS_OK) {
                fprintf(stderr, "bench_tokenizer: %s\n", err);
                return -1;
            }
            for (size_t i = 0; i < n; i++) tokens += (size_t)bertc_encoding_len(encs[i]);
        }
        t1 = now();
    }
    double s = (t1 - t0) / (double)rounds;
    printf("bertc %s threads=%d texts=%zu tokens=%zu texts_per_s=%.0f tokens_per_s=%.0f mb_per_s=%.2f\n",
           threads ? "batch" : "single", threads ? threads : 1, n, tokens, n / s, tokens / s, bytes / s / 1e6);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer PLAN TEXTS [THREADS ...]\n");
        return 1;
    }
    char err[1024];
    bertc_plan *pl;
    if (bertc_plan_open(argv[1], &pl, err, sizeof err) != BERTC_STATUS_OK) {
        fprintf(stderr, "bench_tokenizer: %s\n", err);
        return 2;
    }
    size_t n, bytes;
    char **texts = read_lines(argv[2], &n, &bytes);
    if (!texts || !n) {
        fprintf(stderr, "bench_tokenizer: cannot read texts from %s\n", argv[2]);
        return 2;
    }
    bertc_encoding **encs = calloc(n, sizeof *encs);
    for (size_t i = 0; i < n; i++) encs[i] = bertc_encoding_create();
    int rc = run(pl, texts, n, bytes, encs, 0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int defaults[2] = {1, (int)(cpus > 1 ? cpus : 2)};
    for (int i = 3; !rc && i < argc; i++) rc = run(pl, texts, n, bytes, encs, atoi(argv[i]));
    for (int i = 0; !rc && argc == 3 && i < 2; i++) rc = run(pl, texts, n, bytes, encs, defaults[i]);
    for (size_t i = 0; i < n; i++) bertc_encoding_free(encs[i]);
    free(encs);
    free(texts[0]);
    free(texts);
    bertc_plan_close(pl);
    return rc ? 3 : 0;
}
