/*
 * rt_plan — bertc_plan: a read plan shared by contexts, and its queries.
 *
 * A plan is reference-counted rather than "close after your contexts":
 * services tear down in whatever order their shutdown code runs, and a
 * context outliving the handle its creator dropped must not find its
 * weights unmapped.  The opener holds one reference, each context one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "sha256.h"

/* ------------------------------------------------------------ plans */

void bertc_plan_options_init(bertc_plan_options *opt) { memset(opt, 0, sizeof *opt); }

bertc_status bertc_plan_open_with(const char *path, const bertc_plan_options *opt, bertc_plan **out, char *err,
                                  size_t err_cap) {
    if (out) *out = NULL;
    if (err && err_cap) err[0] = '\0';
    if (!path || !out) return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, err_cap, "bertc_plan_open: NULL argument");
    const char *pin = opt ? opt->expected_sha256 : NULL;
    if (pin && !sha256_hex_valid(pin))
        return rt_error(BERTC_STATUS_INVALID_ARGUMENT, err, err_cap,
                        "bertc_plan_open: expected_sha256 '%.80s' is not 64 hex digits", pin);
    bertc_plan *pl = rt_calloc(1, sizeof *pl);
    size_t n = strlen(path) + 1;
    char *copy = rt_malloc(n);
    if (!pl || !copy) {
        free(pl);
        free(copy);
        return rt_error(BERTC_STATUS_OUT_OF_MEMORY, err, err_cap, "%s: out of memory", path);
    }
    memcpy(copy, path, n);
    diag d;
    diag_init(&d);
    if (plan_read_pinned(&pl->p, path, pin, &d)) {
        free(pl);
        free(copy);
        return rt_error(d.code == DIAG_CODE_INTERNAL && strstr(d.text, "out of memory") ? BERTC_STATUS_OUT_OF_MEMORY
                                                                                      : BERTC_STATUS_BAD_PLAN,
                        err, err_cap, "%s", d.text);
    }
    pl->path = copy;
    pl->refs = 1;
    pthread_mutex_init(&pl->lock, NULL);
    *out = pl;
    return BERTC_STATUS_OK;
}

bertc_status bertc_plan_open(const char *path, bertc_plan **out, char *err, size_t err_cap) {
    return bertc_plan_open_with(path, NULL, out, err, err_cap);
}

const char *bertc_plan_sha256(bertc_plan *pl) {
    if (!pl) return "";
    pthread_mutex_lock(&pl->lock);
    if (!pl->sha256[0]) plan_sha256(&pl->p, pl->sha256);
    pthread_mutex_unlock(&pl->lock);
    return pl->sha256;
}

void rt_plan_retain(bertc_plan *pl) {
    pthread_mutex_lock(&pl->lock);
    pl->refs++;
    pthread_mutex_unlock(&pl->lock);
}

void bertc_plan_close(bertc_plan *pl) {
    if (!pl) return;
    pthread_mutex_lock(&pl->lock);
    int last = --pl->refs == 0;
    pthread_mutex_unlock(&pl->lock);
    if (!last) return;
    pthread_mutex_destroy(&pl->lock);
    rt_text_free(pl);
    plan_free(&pl->p);
    free(pl->path);
    free(pl);
}

const char *bertc_plan_model_name(const bertc_plan *pl) { return pl ? pl->p.model_name : NULL; }
int64_t bertc_plan_hidden(const bertc_plan *pl) { return pl ? pl->p.hidden : 0; }
int64_t bertc_plan_vocab_size(const bertc_plan *pl) { return pl ? pl->p.vocab_size : 0; }
int64_t bertc_plan_type_vocab_size(const bertc_plan *pl) { return pl ? pl->p.type_vocab_size : 0; }
int bertc_plan_bucket_count(const bertc_plan *pl) { return pl ? plan_length_buckets(&pl->p) : 0; }

int bertc_plan_bucket_len(const bertc_plan *pl, int b) {
    return pl && b >= 0 && b < plan_length_buckets(&pl->p) ? pl->p.buckets[b].seq_len : 0;
}

/* Token buckets follow the length buckets in the plan's table. */
int bertc_plan_token_bucket_count(const bertc_plan *pl) {
    return pl ? pl->p.nbuckets - plan_length_buckets(&pl->p) : 0;
}

static const sched_bucket *rt_token_bucket(const bertc_plan *pl, int b) {
    return pl && b >= 0 && b < bertc_plan_token_bucket_count(pl) ? &pl->p.buckets[plan_length_buckets(&pl->p) + b]
                                                                   : NULL;
}

int bertc_plan_token_bucket_tokens(const bertc_plan *pl, int b) {
    const sched_bucket *bk = rt_token_bucket(pl, b);
    return bk ? bk->seq_len : 0;
}

int bertc_plan_token_bucket_max_batch(const bertc_plan *pl, int b) {
    const sched_bucket *bk = rt_token_bucket(pl, b);
    return bk ? bk->max_seqs : 0;
}

int bertc_plan_max_batch(const bertc_plan *pl) {
    int most = 0;
    for (int b = 0; b < bertc_plan_token_bucket_count(pl); b++)
        if (bertc_plan_token_bucket_max_batch(pl, b) > most) most = bertc_plan_token_bucket_max_batch(pl, b);
    return most;
}

int64_t bertc_plan_max_batch_tokens(const bertc_plan *pl) {
    return bertc_plan_token_bucket_tokens(pl, bertc_plan_token_bucket_count(pl) - 1);
}

/* Every bucket lists the same outputs in the same order (one graph, lowered
 * per bucket; the reader checks it); bucket 0 speaks for all. */
int bertc_plan_output_count(const bertc_plan *pl) { return pl && pl->p.nbuckets ? pl->p.buckets[0].noutputs : 0; }

bertc_status bertc_plan_output_info(const bertc_plan *pl, int i, bertc_output_info *info) {
    if (!pl || !info || i < 0 || i >= bertc_plan_output_count(pl)) return BERTC_STATUS_INVALID_ARGUMENT;
    const sched_output *o = &pl->p.buckets[0].outputs[i];
    info->name = o->name;
    info->per_token = o->rows_are_seq;
    info->cols = o->cols;
    return BERTC_STATUS_OK;
}

int bertc_plan_output_index(const bertc_plan *pl, const char *name) {
    if (!pl || !name) return -1;
    for (int i = 0; i < bertc_plan_output_count(pl); i++)
        if (!strcmp(pl->p.buckets[0].outputs[i].name, name)) return i;
    return -1;
}

int bertc_plan_label_count(const bertc_plan *pl) { return pl ? pl->p.nlabels : 0; }

const char *bertc_plan_label(const bertc_plan *pl, int label) {
    return pl && label >= 0 && label < pl->p.nlabels ? pl->p.labels[label] : NULL;
}
