/* testreq — see testreq.h. */
#include "testreq.h"

#include "check.h"

void testreq_random(testreq *r, const bertc_plan *pl, int64_t len, int with_types, int with_mask) {
    int64_t vocab = bertc_plan_vocab_size(pl), nt = bertc_plan_type_vocab_size(pl);
    for (int64_t i = 0; i < len; i++) {
        r->ids[i] = (int32_t)check_rng_range(0, vocab - 1);
        r->types[i] = nt > 0 ? (int32_t)check_rng_range(0, nt - 1) : 0;
        r->mask[i] = check_rng_range(0, 3) ? 1 : 0;
    }
    r->mask[0] = 1;
    r->rq.input_ids = r->ids;
    r->rq.token_type_ids = with_types && nt > 0 ? r->types : NULL;
    r->rq.attention_mask = with_mask ? r->mask : NULL;
    r->rq.len = len;
}

void testreq_copy(testreq *dst, const testreq *src) {
    *dst = *src;
    dst->rq.input_ids = dst->ids;
    dst->rq.token_type_ids = src->rq.token_type_ids ? dst->types : NULL;
    dst->rq.attention_mask = src->rq.attention_mask ? dst->mask : NULL;
}

const char *testreq_plan_path(const char *name) {
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/plans/%s.plan", check_build_dir(), name);
    return p;
}

bertc_plan *testreq_plan_open(const char *name) {
    bertc_plan *pl = NULL;
    char err[1024];
    bertc_status st = bertc_plan_open(testreq_plan_path(name), &pl, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "opening %s: %s", name, err);
    return pl;
}
