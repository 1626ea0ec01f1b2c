/*
 * cli_inspect — `bertc inspect PLAN [--json] [--source KERNEL]`: what a plan
 * holds, as text or JSON (inspect.h), or one kernel's generated source.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "inspect.h"
#include "plan.h"

static const char USAGE_INSPECT[] =
    "usage: bertc inspect PLAN [--json] [--source KERNEL] [--expect-sha256 HEX]\n"
    "\n"
    "Prints the plan file's SHA-256 (what --expect-sha256 and services pin),\n"
    "the plan's buckets (per bucket the ordered steps, launches per request,\n"
    "FLOPs and minimum HBM bytes per step and summed), per arch the kernel\n"
    "images with registers/spills/shared memory, weight and arena bytes.\n"
    "--json prints the same as JSON; --source prints the generated source of\n"
    "one kernel (by entry name or index).\n";

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

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *source = NULL, *pin = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(USAGE_INSPECT, stdout);
            return 0;
        }
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
    diag d;
    diag_init(&d);
    plan p;
    plan_init(&p);
    if (plan_read_pinned(&p, path, pin, &d)) return cli_fail(&d);
    int rc = 0;
    if (source) rc = cli_inspect_source(&p, path, source);
    else if (json) inspect_write_json(stdout, &p);
    else inspect_write_text(stdout, &p, path);
    plan_free(&p);
    return rc;
}
