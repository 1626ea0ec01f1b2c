/*
 * cli_predict — the --predict part of `bertc inspect` (cli_predict.c).
 */
#ifndef BERTC_CLI_PREDICT_H
#define BERTC_CLI_PREDICT_H

#include "plan.h"

typedef struct cli_predict_args {
    const char *gpu;             /* a name of predict_gpus.c, or "all" */
    int json;
    int bucket;                  /* 0: every bucket (the SVG: 128, else the first) */
    const char *svg;             /* NULL: no picture */
    const char *constants;       /* NULL: the fitted ones */
} cli_predict_args;

/* The exit status: 0, or 1/2/3 after printing why. */
int cli_inspect_predict(const plan *p, const cli_predict_args *a);

#endif
