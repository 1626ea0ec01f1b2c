/*
 * cli_inspect — `bertc inspect PLAN [--json] [--source KERNEL]`: what a plan
 * holds, as text or JSON (inspect.h), or one kernel's generated source; with
 * --predict, the performance model's view of it (cli_predict.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_predict.h"
#include "inspect.h"
#include "plan.h"

static const char USAGE_INSPECT[] =
    "usage: bertc inspect PLAN [--json] [--source KERNEL] [--expect-sha256 HEX]\n"
    "       bertc inspect PLAN --predict GPU|all [--json] [--bucket N] [--svg FILE]\n"
    "                     [--model-constants launch_cycles=K,efficiency=E]\n"
    "\n"
    "Prints the plan file's SHA-256 (what --expect-sha256 and services pin),\n"
    "the plan's buckets (per bucket the ordered steps, launches per request,\n"
    "FLOPs and minimum HBM bytes per step and summed), per arch the kernel\n"
    "images with registers/spills/shared memory, which image each GPU\n"
    "architecture runs, weight and arena bytes.  --json prints the same as\n"
    "JSON; --source prints the generated source of one kernel (by entry name\n"
    "or index).\n"
    "\n"
    "--predict GPU applies the performance model (docs/performance-model.md)\n"
    "for one of t4, a10, l4, l40s, a100, h100, h200, b200 (or all: those that\n"
    "run the plan, the others named with the reason): per step\n"
    "and per bucket the modelled microseconds, what bounds each step, CTAs,\n"
    "waves and occupancy.  --bucket N shows one bucket; --svg FILE draws its\n"
    "timeline (default bucket 128, else the first); --model-constants\n"
    "replaces the fitted constants (for tools/fit_perf_model.py).\n";

/* Prints the source of the kernel named (by entry or index) `source`. */
static int cli_inspect_source(const plan *p, const char *path, const char *source) {
    int found = -1;
    char *end;
    long idx = strtol(source, &end, 10);
    if (*source && !*end && idx >= 0 && idx < p->nkernels) found = (int)idx;
    for (int i = 0; found < 0 && i < p->nkernels; i++)
        if (!strcmp(p->kernels[i].entry, source)) found = i;
    if (found < 0) {
        fprintf(stderr, "bertc: error: %s: no kernel '%s' (the plan has %d; see bertc inspect %s)\n", path, source,
                p->nkernels, path);
        return DIAG_CODE_INPUT;
    }
    fputs(p->kernels[found].source, stdout);
    return 0;
}

/* --predict's options: 1 if argv[*i] was one (its value taken), -1 on a
 * missing or bad value (usage printed, *rc set), 0 if not one. */
static int cli_inspect_predict_opt(int argc, char **argv, int *i, cli_predict_args *pa, int *rc) {
    const char *o = argv[*i];
    const char **slot = !strcmp(o, "--predict")           ? &pa->gpu
                        : !strcmp(o, "--svg")             ? &pa->svg
                        : !strcmp(o, "--model-constants") ? &pa->constants
                                                          : NULL;
    if (!slot && strcmp(o, "--bucket")) return 0;
    if (++*i >= argc) {
        *rc = cli_usage_error(USAGE_INSPECT, "%s needs a value", o);
        return -1;
    }
    if (slot) {
        *slot = argv[*i];
        return 1;
    }
    long v;
    if (cli_parse_count(argv[*i], 1, &v)) {
        *rc = cli_usage_error(USAGE_INSPECT, "--bucket: '%s' is not a sequence length", argv[*i]);
        return -1;
    }
    pa->bucket = (int)v;
    return 1;
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *source = NULL, *pin = NULL;
    int json = 0, rc = 0;
    cli_predict_args pa = {0};
    for (int i = 0; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(USAGE_INSPECT, stdout);
            return 0;
        }
        int got = cli_inspect_predict_opt(argc, argv, &i, &pa, &rc);
        if (got < 0) return rc;
        if (got) continue;
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--source")) {
            if (++i >= argc) return cli_usage_error(USAGE_INSPECT, "%s needs a kernel name", "--source");
            source = argv[i];
        } else if (!strcmp(argv[i], "--expect-sha256")) {
            if (++i >= argc) return cli_usage_error(USAGE_INSPECT, "%s needs a value", "--expect-sha256");
            pin = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error(USAGE_INSPECT, "inspect: unknown option '%s'", argv[i]);
        else if (!path) path = argv[i];
        else return cli_usage_error(USAGE_INSPECT, "inspect: unexpected argument '%s'", argv[i]);
    }
    if (!path) return cli_usage_error(USAGE_INSPECT, "inspect: missing PLAN%s", "");
    if (!pa.gpu && (pa.svg || pa.bucket || pa.constants))
        return cli_usage_error(USAGE_INSPECT, "inspect: --svg, --bucket and --model-constants go with --predict%s", "");
    if (pa.gpu && source) return cli_usage_error(USAGE_INSPECT, "inspect: --predict and --source exclude each other%s", "");
    diag d;
    diag_init(&d);
    plan p;
    plan_init(&p);
    if (plan_read_pinned(&p, path, pin, &d)) return cli_fail(&d);
    pa.json = json;
    if (pa.gpu) rc = cli_inspect_predict(&p, &pa);
    else if (source) rc = cli_inspect_source(&p, path, source);
    else if (json) inspect_write_json(stdout, &p);
    else inspect_write_text(stdout, &p, path);
    plan_free(&p);
    return rc;
}
