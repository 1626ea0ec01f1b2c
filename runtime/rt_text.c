/*
 * rt_text — the public face of the tokenizer (tokenizer.h): text in, ids
 * and offsets out, with the tokenizer description the plan carries.
 *
 * The tokenizer is built from the plan the first time someone encodes
 * (hashing a 250k-entry vocabulary costs milliseconds a service that only
 * takes ids should not pay), under the plan's lock, and is immutable
 * afterwards, so encodings on any number of threads share it.  An encoding
 * wraps tokenizer_output, whose buffers persist between calls.
 *
 * bertc_encode_batch hands the texts to worker threads through one atomic
 * counter, a few texts at a time, so a long text does not hold up a whole
 * share; each text goes to its own encoding, so the threads share nothing
 * writable but the counter and the first-failure record.  The result does
 * not depend on the thread count (tests/runtime/test_tokenizer_families.c
 * checks one thread against many bit for bit).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The checks every encode makes, the tokenizer, and the effective max_len. */
static bertc_status rt_text_begin(bertc_plan *pl, int64_t *max_len, const tokenizer **t, char *err, size_t cap) {
    if (!pl->p.tokenizer.present)
        return rt_error(BERTC_STATUS_BAD_REQUEST, err, cap,
                        "%s carries no tokenizer (its model directory had no tokenizer files when it was imported)",
                        pl->path);
    if (*max_len < 0) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "max_len %lld < 0", (long long)*max_len);
    bertc_status st = rt_text_tokenizer(pl, t, err, cap);
    if (st != BERTC_STATUS_OK) return st;
    int64_t longest = plan_max_len(&pl->p); /* the length buckets' longest: token buckets come after them */
    if (*max_len == 0)
        *max_len = (*t)->model_max_length > 0 && (*t)->model_max_length < longest ? (*t)->model_max_length : longest;
    return BERTC_STATUS_OK;
}

/* One text into one encoding; on failure the encoding is empty. */
static bertc_status rt_text_one(const tokenizer *t, bertc_encoding *e, const char *text, const char *pair,
                                int64_t max_len, char *err, size_t cap) {
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

bertc_status bertc_encode(bertc_plan *pl, bertc_encoding *e, const char *text, const char *pair, int64_t max_len,
                          char *err, size_t cap) {
    if (err && cap) err[0] = '\0';
    if (!pl || !e || !text) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "bertc_encode: NULL argument");
    e->out.len = 0;
    const tokenizer *t;
    bertc_status st = rt_text_begin(pl, &max_len, &t, err, cap);
    return st != BERTC_STATUS_OK ? st : rt_text_one(t, e, text, pair, max_len, err, cap);
}

void bertc_batch_options_init(bertc_batch_options *opt) {
    if (opt) memset(opt, 0, sizeof *opt);
}

/* What the workers of one bertc_encode_batch share. */
typedef struct rt_batch {
    const tokenizer *t;
    bertc_encoding *const *encs;
    const char *const *texts, *const *pairs;
    size_t n;
    int64_t max_len;
    atomic_size_t next;             /* the next unclaimed text */
    pthread_mutex_t lock;           /* guards the first failure */
    size_t fail_at;                 /* lowest failing index, n if none */
    bertc_status fail_status;
    char fail_msg[1100];
} rt_batch;

#define RT_BATCH_CHUNK 8

static void *rt_batch_worker(void *arg) {
    rt_batch *b = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&b->next, RT_BATCH_CHUNK);
        if (i >= b->n) return NULL;
        for (size_t e = i + RT_BATCH_CHUNK < b->n ? i + RT_BATCH_CHUNK : b->n; i < e; i++) {
            char msg[1000];
            bertc_status st = rt_text_one(b->t, b->encs[i], b->texts[i], b->pairs ? b->pairs[i] : NULL, b->max_len, msg,
                                          sizeof msg);
            if (st == BERTC_STATUS_OK) continue;
            pthread_mutex_lock(&b->lock);
            if (i < b->fail_at) {
                b->fail_at = i;
                b->fail_status = st;
                snprintf(b->fail_msg, sizeof b->fail_msg, "text %zu: %.999s", i, msg);
            }
            pthread_mutex_unlock(&b->lock);
        }
    }
}

static int rt_batch_threads(const bertc_batch_options *opt, size_t n) {
    long want = opt && opt->threads > 0 ? opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (want < 1) want = 1;
    if (want > 64) want = 64;
    size_t chunks = (n + RT_BATCH_CHUNK - 1) / RT_BATCH_CHUNK;
    return (int)((size_t)want < chunks ? (size_t)want : chunks ? chunks : 1);
}

bertc_status bertc_encode_batch(bertc_plan *pl, bertc_encoding *const *encs, const char *const *texts,
                                const char *const *pairs, size_t n, const bertc_batch_options *opt, char *err,
                                size_t cap) {
    if (err && cap) err[0] = '\0';
    if (!pl || (n && (!encs || !texts)))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "bertc_encode_batch: NULL argument");
    for (size_t i = 0; i < n; i++) {
        if (!encs[i] || !texts[i])
            return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, cap, "bertc_encode_batch: text or encoding %zu is NULL", i);
        encs[i]->out.len = 0;
    }
    int64_t max_len = opt ? opt->max_len : 0;
    rt_batch b = {.encs = encs, .texts = texts, .pairs = pairs, .n = n, .fail_at = n};
    bertc_status st = rt_text_begin(pl, &max_len, &b.t, err, cap);
    if (st != BERTC_STATUS_OK || n == 0) return st;
    b.max_len = max_len;
    atomic_init(&b.next, 0);
    pthread_mutex_init(&b.lock, NULL);
    int nt = rt_batch_threads(opt, n), started = 0;
    pthread_t tid[64];
    while (started < nt - 1 && pthread_create(&tid[started], NULL, rt_batch_worker, &b) == 0) started++;
    rt_batch_worker(&b);   /* the calling thread works too (and alone if no thread could start) */
    for (int k = 0; k < started; k++) pthread_join(tid[k], NULL);
    pthread_mutex_destroy(&b.lock);
    if (b.fail_at < n) return rt_error(b.fail_status, err, cap, "%s", b.fail_msg);
    return BERTC_STATUS_OK;
}

int64_t bertc_encoding_len(const bertc_encoding *e) { return e ? (int64_t)e->out.len : 0; }
const int32_t *bertc_encoding_ids(const bertc_encoding *e) { return e ? e->out.ids : NULL; }
const int32_t *bertc_encoding_type_ids(const bertc_encoding *e) { return e ? e->out.type_ids : NULL; }

const char *bertc_encoding_token(const bertc_encoding *e, int64_t i) {
    return e && i >= 0 && (size_t)i < e->out.len ? e->out.tokens[i] : NULL;
}

int bertc_encoding_truncated(const bertc_encoding *e) { return e ? e->out.truncated : 0; }
const int64_t *bertc_encoding_offsets(const bertc_encoding *e) { return e ? e->out.offsets : NULL; }
const int32_t *bertc_encoding_sequence_ids(const bertc_encoding *e) { return e ? e->out.seq : NULL; }
