/*
 * plan_write — a plan to its file (docs/plan-format.md): serialised
 * deterministically (the same plan gives the same bytes), read back with
 * the runtime's own checking reader before it takes its name, so the
 * compiler cannot hand out a plan the runtime would refuse.  The writer
 * lives with the compiler; the reader (runtime/plan/plan_read.c) with the
 * runtime, which never writes plans.
 */
#ifndef BERTC_PLAN_WRITE_H
#define BERTC_PLAN_WRITE_H

#include "diag.h"
#include "fileutil.h"
#include "plan.h"

/* Writes p into the open temporary fa and checks it; the caller commits
 * (or aborts) fa. */
int plan_write_to(const plan *p, file_atomic *fa, diag *d);
/* The same through a temporary beside `path`, renamed into place. */
int plan_write(const plan *p, const char *path, diag *d);

#endif
