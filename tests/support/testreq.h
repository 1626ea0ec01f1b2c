/*
 * testreq — fresh random requests for the runtime tests (test_runtime,
 * test_e2e, test_batch): ids across the whole vocabulary, token types
 * across the type vocabulary, masks with about one zero in four (never at
 * position 0), all drawn from the seeded check_rng so a failure replays;
 * and the plans `make plans` compiled for them, by name.
 */
#ifndef BERTC_TEST_TESTREQ_H
#define BERTC_TEST_TESTREQ_H

#include "bertc.h"

#define TESTREQ_MAX 512

typedef struct testreq {
    int32_t ids[TESTREQ_MAX], types[TESTREQ_MAX], mask[TESTREQ_MAX];
    bertc_request rq;   /* points into this struct: copy with testreq_copy */
} testreq;

/* A request of `len` (<= TESTREQ_MAX) for `pl`; types only when asked and the
 * model has a type table, the mask only when asked. */
void testreq_random(testreq *r, const bertc_plan *pl, int64_t len, int with_types, int with_mask);
/* *dst = *src with dst's request pointing into dst. */
void testreq_copy(testreq *dst, const testreq *src);

/* BUILD/plans/NAME.plan (`make plans`), in one of four rotating buffers. */
const char *testreq_plan_path(const char *name);
/* That plan opened, or NULL after a failed CHECK naming it and why. */
bertc_plan *testreq_plan_open(const char *name);

#endif
