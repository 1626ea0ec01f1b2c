/*
 * cli_steps — `bertc bench PLAN --per-step`: each step of a bucket timed on
 * its own (bertc_debug_time_steps: the graph's launches and cuBLASLt calls
 * run one by one between CUDA events), beside the whole graph's time.
 *
 * The table keeps a column for the performance model's prediction of each
 * step (`bertc inspect --predict GPU`): "-" until the model is in the
 * build, so the first GPU that runs tools/gpu_validate.sh checks the model
 * step by step.  The sum of the steps against the graph shows what the
 * graph (no launch gaps) and programmatic dependent launch (overlap) buy.
 * --json prints the same as one object.  On the emulated device all times
 * are CPU times of the emulation and say nothing about a GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "bertc_debug.h"
#include "cli.h"

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

static void steps_print_text(int len, const bertc_step_time *t, int n, double graph_us) {
    double sum = 0;
    printf("\nlength %d: %d steps\n%4s  %-28s %-6s %12s %10s %12s  %s\n", len, n, "#", "step", "kind", "measured us",
           "min us", "predicted us", "kernel / algorithm");
    for (int i = 0; i < n; i++) {
        sum += t[i].us_median;
        char what[64];
        if (t[i].algorithm >= 0) snprintf(what, sizeof what, "cublasLt, candidate %d of %d", t[i].algorithm + 1, t[i].candidates);
        else snprintf(what, sizeof what, "%.63s", t[i].what);
        printf("%4d  %-28.28s %-6s %12.2f %10.2f %12s  %s\n", i, t[i].name, t[i].kind, t[i].us_median, t[i].us_min, "-",
               what);
    }
    printf("%4s  %-28s %-6s %12.2f\n%4s  %-28s %-6s %12.2f\n", "", "sum of steps", "", sum, "", "graph (one launch)", "",
           graph_us);
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

static void steps_print_json(int len, const bertc_step_time *t, int n, double graph_us, int first) {
    double sum = 0;
    printf("%s\n    {\"len\": %d, \"steps\": [", first ? "" : ",", len);
    for (int i = 0; i < n; i++) {
        sum += t[i].us_median;
        printf("%s\n      {\"index\": %d, \"name\": ", i ? "," : "", i);
        steps_json_str(t[i].name);
        printf(", \"kind\": \"%s\", \"what\": ", t[i].kind);
        steps_json_str(t[i].what);
        printf(", \"measured_us\": %.3f, \"min_us\": %.3f, \"predicted_us\": null", t[i].us_median, t[i].us_min);
        if (t[i].algorithm >= 0) printf(", \"algorithm\": %d, \"candidates\": %d", t[i].algorithm, t[i].candidates);
        putchar('}');
    }
    printf("\n    ], \"sum_us\": %.3f, \"graph_us\": %.3f}", sum, graph_us);
}

/* One length: the steps, then the graph; 0 or the exit status. */
static int steps_one(bertc_context *ctx, const bertc_plan *pl, const int32_t *ids, int len, int reps, int json,
                     int first) {
    int n = bertc_debug_step_count(pl, len);
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
    if (json) steps_print_json(len, t, n, graph_us, first);
    else steps_print_text(len, t, n, graph_us);
    free(t);
    return 0;
}

int cli_bench_steps(bertc_context *ctx, const bertc_plan *pl, const char *path, const int32_t *ids, int seq_len,
                    int reps, int json) {
    int emu = !strcmp(bertc_context_image_kind(ctx), "emu") || !strcmp(bertc_context_image_arch(ctx), "emu");
    if (json) {
        printf("{\"plan\": ");
        steps_json_str(path);
        printf(", \"image\": \"%s\", \"programmatic_launch\": %s, \"reps\": %d, \"lengths\": [", bertc_context_image_arch(ctx),
               bertc_context_programmatic_launch(ctx) ? "true" : "false", reps);
    } else {
        printf("plan %s (image %s %s%s): each step %d times between CUDA events, median\n", path,
               bertc_context_image_arch(ctx), bertc_context_image_kind(ctx),
               bertc_context_programmatic_launch(ctx) ? ", programmatic dependent launch in the graph" : "", reps);
    }
    int rc = 0;
    for (int b = 0; b < bertc_plan_bucket_count(pl) && !rc; b++) {
        if (seq_len && b > 0) break;
        rc = steps_one(ctx, pl, ids, seq_len ? seq_len : bertc_plan_bucket_len(pl, b), reps, json, b == 0);
    }
    if (rc) return rc;
    if (json) printf("\n]}\n");
    else
        printf("(microseconds; predicted: bertc inspect --predict, not in this build%s)\n",
               emu ? "; the emulated device's times are CPU times, not a GPU's" : "");
    return 0;
}
