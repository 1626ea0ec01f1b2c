/*
 * inspect — a read plan, described for people (text) and for tools (JSON):
 * the signature, the images with ptxas's per-kernel numbers, and per bucket
 * the ordered steps with launches, FLOPs and minimum HBM bytes.  This is
 * what `bertc inspect` prints; the JSON keys are documented in docs/cli.md
 * and read by the tests and tools.
 */
#ifndef BERTC_INSPECT_H
#define BERTC_INSPECT_H

#include <stdio.h>

#include "plan.h"

void inspect_write_text(FILE *f, const plan *p, const char *path);
void inspect_write_json(FILE *f, const plan *p);

/* A JSON string literal of s (quotes, backslashes and controls escaped). */
void inspect_json_str(FILE *f, const char *s);

/* "fp16", "bf16", "fp32" — the command line's names of the precisions. */
const char *inspect_precision_name(plan_dtype t);

#endif
