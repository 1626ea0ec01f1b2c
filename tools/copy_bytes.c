/*
 * copy_bytes — bytes a request moves between host and device, counted by
 * the emulated device (docs/performance.md, "Copying back only what the
 * caller needs").
 *
 *     build/tools/copy_bytes PLAN LEN [OUTPUTS]
 *
 * Opens PLAN on the emulated device in null mode (kernels and matmuls are
 * checked but not executed; copies still happen), runs three requests of
 * LEN random ids through a context that copies back OUTPUTS (a
 * comma-separated list; default every output) and prints the bytes copied
 * to the device and back per request, from bertc_emudev_stats — the
 * graph's copy nodes as they ran, not a formula.  Then the host's cost of
 * bertc_infer on that null device, median of 2000 requests, at LEN every
 * time and alternating LEN and LEN - 1 (each change of length resizes the
 * graph's per-token copy: one cuGraphExecMemcpyNodeSetParams).  Not a
 * test: the numbers go into docs/performance.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bertc.h"
#include "emuctl.h"

static int cmp_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median host microseconds of n requests; every other one one token shorter when alternate. */
static double host_us(bertc_context *c, bertc_request rq, int n, int alternate) {
    double *v = malloc((size_t)n * sizeof *v);
    int64_t len = rq.len;
    for (int i = 0; i < n; i++) {
        struct timespec t0, t1;
        rq.len = alternate && (i & 1) && len > 1 ? len - 1 : len;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bertc_infer(c, &rq);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        v[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_f64);
    double m = v[n / 2];
    free(v);
    return m;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s PLAN LEN [OUTPUTS]\n", argv[0]);
        return 1;
    }
    const emuctl *E = emuctl_get();
    if (!E) return 3;
    E->set_null(1);
    char err[1024];
    bertc_plan *pl = NULL;
    if (bertc_plan_open(argv[1], &pl, err, sizeof err) != BERTC_STATUS_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    o.outputs = argc > 3 ? argv[3] : NULL;
    bertc_context *c = NULL;
    if (bertc_context_create(pl, &o, &c, err, sizeof err) != BERTC_STATUS_OK) {
        fprintf(stderr, "%s\n", err);
        bertc_plan_close(pl);
        return 3;
    }
    int64_t len = atol(argv[2]);
    int32_t *ids = calloc((size_t)(len > 0 ? len : 1), sizeof *ids);
    for (int64_t i = 0; i < len; i++) ids[i] = (int32_t)(1000 + i % 1000) % (int32_t)bertc_plan_vocab_size(pl);
    bertc_request rq = {ids, NULL, NULL, len};
    bertc_emudev_stats s0, s1;
    int rc = 0;
    E->get_stats(&s0);
    for (int i = 0; i < 3 && !rc; i++)
        if (bertc_infer(c, &rq) != BERTC_STATUS_OK) {
            fprintf(stderr, "%s\n", bertc_context_error(c));
            rc = 3;
        }
    E->get_stats(&s1);
    if (!rc) {
        printf("%s len %lld outputs %s: %ld bytes to the device, %ld bytes back per request\n", argv[1],
               (long long)len, o.outputs ? o.outputs : "(all)", (s1.bytes_to_device - s0.bytes_to_device) / 3,
               (s1.bytes_to_host - s0.bytes_to_host) / 3);
        host_us(c, rq, 200, 0);
        printf("  host us per request on the null device: %.2f at one length, %.2f alternating %lld and %lld\n",
               host_us(c, rq, 2000, 0), host_us(c, rq, 2000, 1), (long long)len, (long long)(len - 1));
    }
    free(ids);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    return rc;
}
