/*
 * cli_steps — `bertc bench PLAN --per-step`: each step of a bucket timed on
 * its own (bertc_debug_time_steps: the graph's launches and cuBLASLt calls
 * run one by one between CUDA events), beside the whole graph's time.
 *
 * With --predict GPU, the performance model's prediction of each step
 * (`bertc inspect --predict GPU`, compiler/model/predict.h) stands beside the
 * measured time, so the first GPU that runs tools/gpu_validate.sh checks
 * the model step by step; without it the column says "-".  The sum of the steps against the graph shows what the
 * graph (no launch gaps) and programmatic dependent launch (overlap) buy.
 * --json prints the same as one object.  On the emulated device all times
 * are CPU times of the emulation and say nothing about a GPU.
 *
 * `bertc bench PLAN --check-steps` runs the same steps once each under
 * bertc_debug_check_steps (runtime/rt_check.c: every step against its
 * launch contract, with the arena outside its arguments poisoned) and
 * compares the outputs with the graph's bit for bit, so a GPU checks the
 * CUBINs and cuBLASLt's kernels the way CI checks the emulated device's.
 */
#include <stdlib.h>
#include <string.h>

#include "bertc_debug.h"
#include "cli.h"
#include "plan.h"
#include "predict.h"

/* The model's prediction for one GPU, when asked for. */
typedef struct steps_model {
    int on;
    plan p;
    predict_result r;
    int same;                    /* the GPU runs the context's step list (a --tune plan may have several) */
} steps_model;

/* The modelled µs of step i at length len (the bucket that serves it); < 0 if none. */
static double steps_predicted(const steps_model *m, int len, int i) {
    if (!m->on || !m->same) return -1;
    for (int b = 0; b < m->r.nbuckets; b++)
        if (m->r.buckets[b].seq_len >= len) return i < m->r.buckets[b].nsteps ? m->r.buckets[b].steps[i].us : -1;
    return -1;
}

static int cmp_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median device time of the whole graph at rq, over `reps` launches. */
static bertc_status steps_graph_us(bertc_context *ctx, const bertc_request *rq, int reps, double *us) {
    double *v = malloc((size_t)reps * sizeof *v);
    if (!v) return BERTC_STATUS_OUT_OF_MEMORY;
    bertc_status st = BERTC_STATUS_OK;
    for (int i = 0; i < reps && st == BERTC_STATUS_OK; i++) {
        float ms = 0;
        st = bertc_infer(ctx, rq);
        if (st == BERTC_STATUS_OK) st = bertc_context_last_device_ms(ctx, &ms);
        v[i] = 1e3 * ms;
    }
    qsort(v, (size_t)reps, sizeof *v, cmp_f64);
    *us = v[reps / 2];
    free(v);
    return st;
}

static void steps_print_text(const steps_model *m, int len, const bertc_step_time *t, int n, double graph_us) {
    double sum = 0, psum = 0;
    printf("\nlength %d: %d steps\n%4s  %-28s %-6s %12s %10s %12s  %s\n", len, n, "#", "step", "kind", "measured us",
           "min us", "predicted us", "kernel / algorithm");
    for (int i = 0; i < n; i++) {
        sum += t[i].us_median;
        char what[64];
        if (t[i].algorithm >= 0) snprintf(what, sizeof what, "cublasLt, candidate %d of %d", t[i].algorithm + 1, t[i].candidates);
        else snprintf(what, sizeof what, "%.63s", t[i].what);
        double pu = steps_predicted(m, len, i);
        char pred[32] = "-";
        if (pu >= 0) snprintf(pred, sizeof pred, "%.2f", pu), psum += pu;
        printf("%4d  %-28.28s %-6s %12.2f %10.2f %12s  %s\n", i, t[i].name, t[i].kind, t[i].us_median, t[i].us_min, pred,
               what);
    }
    char ps[32] = "";
    if (m->on) snprintf(ps, sizeof ps, " %10s %12.2f", "", psum);
    printf("%4s  %-28s %-6s %12.2f%s\n%4s  %-28s %-6s %12.2f\n", "", "sum of steps", "", sum, ps, "",
           "graph (one launch)", "", graph_us);
}

/* JSON string: the names here are plan step names and kernel entries. */
static void steps_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void steps_print_json(const steps_model *m, int len, const bertc_step_time *t, int n, double graph_us,
                             int first) {
    double sum = 0;
    printf("%s\n    {\"len\": %d, \"steps\": [", first ? "" : ",", len);
    for (int i = 0; i < n; i++) {
        sum += t[i].us_median;
        printf("%s\n      {\"index\": %d, \"name\": ", i ? "," : "", i);
        steps_json_str(t[i].name);
        printf(", \"kind\": \"%s\", \"what\": ", t[i].kind);
        steps_json_str(t[i].what);
        printf(", \"measured_us\": %.3f, \"min_us\": %.3f, \"predicted_us\": ", t[i].us_median, t[i].us_min);
        double pu = steps_predicted(m, len, i);
        if (pu >= 0) printf("%.3f", pu);
        else printf("null");
        if (t[i].algorithm >= 0) printf(", \"algorithm\": %d, \"candidates\": %d", t[i].algorithm, t[i].candidates);
        putchar('}');
    }
    printf("\n    ], \"sum_us\": %.3f, \"graph_us\": %.3f}", sum, graph_us);
}

/* One length: the steps, then the graph; 0 or the exit status. */
static int steps_one(const steps_model *m, bertc_context *ctx, const int32_t *ids, int len,
                     int reps, int json, int first) {
    int n = bertc_debug_step_count(ctx, len);
    bertc_step_time *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (!t) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    bertc_request rq = {ids, NULL, NULL, len};
    double graph_us = 0;
    bertc_status st = bertc_debug_time_steps(ctx, &rq, reps, t, n);
    if (st == BERTC_STATUS_OK) st = steps_graph_us(ctx, &rq, reps, &graph_us);
    if (st != BERTC_STATUS_OK) {
        free(t);
        return cli_runtime_fail(st, bertc_context_error(ctx));
    }
    if (json) steps_print_json(m, len, t, n, graph_us, first);
    else steps_print_text(m, len, t, n, graph_us);
    free(t);
    return 0;
}

/* The model for `gpu` on the plan at path (m->on stays 0 without a GPU name). */
static int steps_model_open(steps_model *m, const char *path, const char *gpu) {
    memset(m, 0, sizeof *m);
    if (!gpu) return 0;
    const predict_gpu *g = predict_gpu_find(gpu);
    if (!g) {
        fprintf(stderr, "bertc: error: --predict: unknown GPU '%s' (known: %s)\n", gpu, predict_gpu_names());
        return DIAG_CODE_USAGE;
    }
    diag d;
    diag_init(&d);
    predict_constants k;
    predict_constants_default(&k);
    if (plan_read(&m->p, path, &d)) return cli_fail(&d);
    if (predict_plan(&m->p, g, &k, &m->r, &d)) {
        plan_free(&m->p);
        return cli_fail(&d);
    }
    m->on = 1;
    return 0;
}

static void steps_model_close(steps_model *m) {
    if (!m->on) return;
    predict_result_free(&m->r);
    plan_free(&m->p);
}

int cli_bench_steps(bertc_context *ctx, const bertc_plan *pl, const char *path, const int32_t *ids, int seq_len,
                    int reps, int json, const char *gpu) {
    int emu = !strcmp(bertc_context_image_kind(ctx), "emu") || !strcmp(bertc_context_image_arch(ctx), "emu");
    steps_model m;
    int rc = steps_model_open(&m, path, gpu);
    if (rc) return rc;
    if (m.on) {
        const predict_gpu *g = predict_gpu_find(gpu);
        m.same = plan_variant_for(&m.p, g->major, g->minor) == bertc_debug_variant(ctx);
        if (!m.same)
            fprintf(stderr, "bertc: note: the plan runs other steps on %s than on this device (compiled with --tune): "
                            "no predicted column\n", gpu);
    }
    if (json) {
        printf("{\"plan\": ");
        steps_json_str(path);
        printf(", \"image\": \"%s\", \"programmatic_launch\": %s, \"reps\": %d, \"predicted_for\": ",
               bertc_context_image_arch(ctx), bertc_context_programmatic_launch(ctx) ? "true" : "false", reps);
        if (gpu) steps_json_str(gpu);
        else printf("null");
        printf(", \"lengths\": [");
    } else {
        printf("plan %s (image %s %s%s): each step %d times between CUDA events, median\n", path,
               bertc_context_image_arch(ctx), bertc_context_image_kind(ctx),
               bertc_context_programmatic_launch(ctx) ? ", programmatic dependent launch in the graph" : "", reps);
    }
    for (int b = 0; b < bertc_plan_bucket_count(pl) && !rc; b++) {
        if (seq_len && b > 0) break;
        rc = steps_one(&m, ctx, ids, seq_len ? seq_len : bertc_plan_bucket_len(pl, b), reps, json, b == 0);
    }
    steps_model_close(&m);
    if (rc) return rc;
    if (json) printf("\n]}\n");
    else if (gpu)
        printf("(microseconds; predicted: the performance model for %s, bertc inspect --predict %s%s)\n", gpu, gpu,
               emu ? "; the emulated device's times are CPU times, not a GPU's" : "");
    else
        printf("(microseconds; predicted: add --predict GPU%s)\n",
               emu ? "; the emulated device's times are CPU times, not a GPU's" : "");
    return 0;
}

/* Every output the context copies back after the last request, concatenated; NULL on failure. */
static float *steps_outputs(bertc_context *ctx, const bertc_plan *pl, int len, size_t *count) {
    size_t n = 0;
    bertc_output_info info;
    for (int o = 0; o < bertc_plan_output_count(pl); o++)
        if (bertc_plan_output_info(pl, o, &info) == BERTC_STATUS_OK) n += (size_t)((info.per_token ? len : 1) * info.cols);
    float *v = malloc((n ? n : 1) * sizeof *v), *at = v;
    for (int o = 0; v && o < bertc_plan_output_count(pl); o++) {
        if (bertc_plan_output_info(pl, o, &info) != BERTC_STATUS_OK) continue;
        size_t k = (size_t)((info.per_token ? len : 1) * info.cols);
        if (bertc_output_read(ctx, o, at, k) != BERTC_STATUS_OK) {
            free(v);
            return NULL;
        }
        at += k;
    }
    *count = n;
    return v;
}

/* One length: the graph's outputs, the checked run's, compared. */
static int steps_check_one(bertc_context *ctx, const bertc_plan *pl, const int32_t *ids, int len) {
    bertc_request rq = {ids, NULL, NULL, len};
    size_t n = 0, m = 0;
    float *want = NULL, *got = NULL;
    bertc_status st = bertc_infer(ctx, &rq);
    if (st == BERTC_STATUS_OK && !(want = steps_outputs(ctx, pl, len, &n))) st = BERTC_STATUS_OUT_OF_MEMORY;
    if (st == BERTC_STATUS_OK) st = bertc_debug_check_steps(ctx, &rq);
    if (st == BERTC_STATUS_OK && !(got = steps_outputs(ctx, pl, len, &m))) st = BERTC_STATUS_OUT_OF_MEMORY;
    size_t i = 0;
    while (st == BERTC_STATUS_OK && i < n && !memcmp(&want[i], &got[i], sizeof *got)) i++;
    free(want), free(got);
    if (st != BERTC_STATUS_OK) return cli_runtime_fail(st, bertc_context_error(ctx));
    if (i < n || m != n) {
        fprintf(stderr, "bertc: error: length %d: output value %zu of the step-by-step run differs from the graph's (a "
                        "step reads outside its arguments, or depends on timing)\n",
                len, i);
        return 1;
    }
    printf("length %d: %d steps keep to their launch contracts; %zu output values equal the graph's bit for bit\n", len,
           bertc_debug_step_count(ctx, len), n);
    return 0;
}

int cli_bench_check(bertc_context *ctx, const bertc_plan *pl, const int32_t *ids, int seq_len) {
    printf("checking each step against its launch contract (image %s %s, step list %d)\n",
           bertc_context_image_arch(ctx), bertc_context_image_kind(ctx), bertc_debug_variant(ctx) + 1);
    int rc = 0;
    for (int b = 0; b < bertc_plan_bucket_count(pl) && !rc; b++) {
        if (seq_len && b > 0) break;
        rc = steps_check_one(ctx, pl, ids, seq_len ? seq_len : bertc_plan_bucket_len(pl, b));
    }
    return rc;
}
