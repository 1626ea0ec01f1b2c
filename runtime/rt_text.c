/*
 * rt_text — the public face of the tokenizer (tokenizer.h): text in, ids
 * out, with the vocabulary and settings the plan carries.
 *
 * The tokenizer is built from the plan the first time someone encodes
 * (hashing a 30k-entry vocabulary costs a few milliseconds a service that
 * only takes ids should not pay), under the plan's lock, and is immutable
 * afterwards, so encodings on any number of threads share it.  An encoding
 * wraps tokenizer_output, whose buffers persist between calls.
 */
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "tokenizer.h"

struct bertc_encoding {
    tokenizer_output out;
};

int bertc_plan_has_tokenizer(const bertc_plan *pl) { return pl && pl->p.tokenizer.present; }

bertc_encoding *bertc_encoding_create(void) {
    bertc_encoding *e = rt_calloc(1, sizeof *e);
    if (e) tokenizer_output_init(&e->out);
    return e;
}

void bertc_encoding_free(bertc_encoding *e) {
    if (!e) return;
    tokenizer_output_free(&e->out);
    free(e);
}

void rt_text_free(bertc_plan *pl) {
    if (!pl->tok) return;
    tokenizer_free(pl->tok);
    free(pl->tok);
    pl->tok = NULL;
}

/* The plan's tokenizer, built once. */
static bertc_status rt_text_tokenizer(bertc_plan *pl, const tokenizer **out, char *err, size_t cap) {
    bertc_status st = BERTC_STATUS_OK;
    pthread_mutex_lock(&pl->lock);
    if (!pl->tok) {
        tokenizer *t = rt_calloc(1, sizeof *t);
        diag d;
        diag_init(&d);
        if (!t) {
            st = rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, cap, "out of memory");
        } else if (tokenizer_init(t, &pl->p.tokenizer, &d)) {
            free(t);
            st = rt_error(d.code == DIAG_CODE_INTERNAL ? BERTC_STATUS_OUT_OF_MEMORY : BERTC_STATUS_BAD_PLAN, err, cap,
                          "%s: tokenizer: %s", pl->path, d.text);
        } else {
            pl->tok = t;
        }
    }
    *out = pl->tok;
    pthread_mutex_unlock(&pl->lock);
    return st;
}

bertc_status bertc_encode(bertc_plan *pl, bertc_encoding *e, const char *text, const char *pair, int64_t max_len,
                          char *err, size_t cap) {
    if (err && cap) err[0] = '\0';
    if (!pl || !e || !text) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "bertc_encode: NULL argument");
    e->out.len = 0;
    if (!pl->p.tokenizer.present)
        return rt_error(BERTC_STATUS_BAD_REQUEST, err, cap,
                        "%s carries no tokenizer (its model directory had no vocab.txt when it was imported)", pl->path);
    if (max_len < 0) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "max_len %lld < 0", (long long)max_len);
    const tokenizer *t;
    bertc_status st = rt_text_tokenizer(pl, &t, err, cap);
    if (st != BERTC_STATUS_OK) return st;
    int64_t longest = pl->p.buckets[pl->p.nbuckets - 1].seq_len;
    if (max_len == 0) max_len = t->model_max_length > 0 && t->model_max_length < longest ? t->model_max_length : longest;
    diag d;
    diag_init(&d);
    if (tokenizer_encode(t, text, strlen(text), pair && *pair ? pair : NULL, pair ? strlen(pair) : 0, max_len, &e->out,
                         &d)) {
        e->out.len = 0;
        return rt_error(d.code == DIAG_CODE_INTERNAL ? BERTC_STATUS_OUT_OF_MEMORY : BERTC_STATUS_BAD_REQUEST, err, cap,
                        "%s", d.text);
    }
    return BERTC_STATUS_OK;
}

int64_t bertc_encoding_len(const bertc_encoding *e) { return e ? (int64_t)e->out.len : 0; }
const int32_t *bertc_encoding_ids(const bertc_encoding *e) { return e ? e->out.ids : NULL; }
const int32_t *bertc_encoding_type_ids(const bertc_encoding *e) { return e ? e->out.type_ids : NULL; }

const char *bertc_encoding_token(const bertc_encoding *e, int64_t i) {
    return e && i >= 0 && (size_t)i < e->out.len ? e->out.tokens[i] : NULL;
}

int bertc_encoding_truncated(const bertc_encoding *e) { return e ? e->out.truncated : 0; }
