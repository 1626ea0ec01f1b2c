/*
 * tb_config — the model configuration, as Triton hands it over: the JSON
 * form of config.pbtxt (TRITONBACKEND_ModelConfig).
 *
 * The backend reads four things from it: max_batch_size (whether inputs
 * carry a batch dimension) and the parameters "device" (auto | cuda |
 * emu), "plan" (the plan's file name in the version folder, default
 * model.plan) and "sha256" (the plan's pin).  It then checks the inputs
 * and outputs the configuration declares against the plan, so a
 * hand-edited config that names an output the plan lacks, or gives it the
 * wrong width, fails at load with a message naming the config file and
 * the entry — not at the first request, and never as a silently different
 * answer.  An unknown parameter is an error too: a misspelt "devcie"
 * would otherwise quietly select the default.
 *
 * The JSON comes from the server (protobuf's JSON printer), so the reader
 * is a small scanner rather than a tree builder: skip a value, walk an
 * object's members or an array's items, decode a plain string, read an
 * integer (protobuf prints 64-bit integers such as dims as strings, so
 * both forms are accepted).  It never reads past the given length and
 * reports malformed text rather than guessing.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

#define TB_JSON_DEPTH 64

static const char *json_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* Just past the string that starts at p (a '"'); NULL if unterminated. */
static const char *json_string_end(const char *p, const char *e) {
    for (p++; p < e; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* Walks the members of an object or the items of an array. */
typedef struct json_iter {
    const char *p, *e;
    char close;
    int started, depth;
} json_iter;

static const char *json_skip(const char *p, const char *e, int depth);

static int json_iter_begin(json_iter *it, const char *p, const char *e, char open, int depth) {
    p = json_ws(p, e);
    if (p >= e || *p != open || depth > TB_JSON_DEPTH) return -1;
    it->p = p + 1;
    it->e = e;
    it->close = open == '{' ? '}' : ']';
    it->started = 0;
    it->depth = depth;
    return 0;
}

/* 1: one more (key/klen set for objects, *val at the value); 0: the end; -1: malformed. */
static int json_iter_next(json_iter *it, const char **key, size_t *klen, const char **val) {
    const char *p = json_ws(it->p, it->e), *e = it->e;
    if (p < e && *p == it->close) {
        it->p = p + 1;
        return 0;
    }
    if (it->started) {
        if (p >= e || *p != ',') return -1;
        p = json_ws(p + 1, e);
    }
    it->started = 1;
    if (it->close == '}') {
        const char *k = p < e && *p == '"' ? json_string_end(p, e) : NULL;
        if (!k) return -1;
        *key = p + 1;
        *klen = (size_t)(k - p - 2);
        p = json_ws(k, e);
        if (p >= e || *p != ':') return -1;
        p = json_ws(p + 1, e);
    }
    *val = p;
    it->p = json_skip(p, e, it->depth + 1);
    return it->p ? 1 : -1;
}

/* Just past the value at p; NULL if malformed. */
static const char *json_skip(const char *p, const char *e, int depth) {
    p = json_ws(p, e);
    if (p >= e || depth > TB_JSON_DEPTH) return NULL;
    if (*p == '"') return json_string_end(p, e);
    if (*p == '{' || *p == '[') {
        json_iter it;
        const char *k, *v;
        size_t kl;
        int r;
        if (json_iter_begin(&it, p, e, *p, depth)) return NULL;
        while ((r = json_iter_next(&it, &k, &kl, &v)) == 1) {}
        return r == 0 ? it.p : NULL;
    }
    const char *s = p;   /* a number, true, false or null */
    while (p < e && (isalnum((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.')) p++;
    return p > s ? p : NULL;
}

static int json_key_is(const char *key, size_t klen, const char *want) {
    return klen == strlen(want) && !memcmp(key, want, klen);
}

/* Decodes the plain string at p into out (NUL-terminated); -1 if it is not
 * a string, does not fit, or uses an escape beyond ASCII. */
static int json_string(const char *p, const char *e, char *out, size_t cap) {
    p = json_ws(p, e);
    const char *end = p < e && *p == '"' ? json_string_end(p, e) : NULL;
    if (!end) return -1;
    size_t n = 0;
    for (p++; p < end - 1; p++) {
        char c = *p;
        if (c == '\\') {
            c = *++p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'u') {
                if (end - 1 - p < 5) return -1;
                char hex[5] = {p[1], p[2], p[3], p[4], 0};
                long u = strtol(hex, NULL, 16);
                if (u <= 0 || u > 0x7f) return -1;
                c = (char)u;
                p += 4;
            } else if (c != '"' && c != '\\' && c != '/') return -1;
        }
        if (n + 1 >= cap) return -1;
        out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

/* An integer written as a number or as a string of one. */
static int json_int(const char *p, const char *e, int64_t *v) {
    char buf[32];
    p = json_ws(p, e);
    if (p < e && *p == '"') {
        if (json_string(p, e, buf, sizeof buf)) return -1;
    } else {
        const char *end = json_skip(p, e, 0);
        if (!end || (size_t)(end - p) >= sizeof buf) return -1;
        memcpy(buf, p, (size_t)(end - p));
        buf[end - p] = '\0';
    }
    char *stop;
    long long x = strtoll(buf, &stop, 10);
    if (stop == buf || *stop) return -1;
    *v = x;
    return 0;
}

/* The value of member `key` of the object at p (NULL: absent or malformed). */
static const char *json_member(const char *p, const char *e, const char *key) {
    json_iter it;
    const char *k, *v;
    size_t kl;
    if (json_iter_begin(&it, p, e, '{', 0)) return NULL;
    while (json_iter_next(&it, &k, &kl, &v) == 1)
        if (json_key_is(k, kl, key)) return v;
    return NULL;
}

/* ------------------------------------------------------------- settings */

static int config_parameter(tb_config *cfg, const char *key, size_t klen, const char *v, const char *e,
                            const char *where, char *err, size_t cap) {
    char val[TB_NAME_CAP];
    const char *sv = json_member(v, e, "string_value");
    if (!sv || json_string(sv, e, val, sizeof val)) {
        snprintf(err, cap, "%s: parameters: '%.*s' needs a string_value of at most %d bytes", where, (int)klen, key,
                 TB_NAME_CAP - 1);
        return -1;
    }
    if (json_key_is(key, klen, "device")) {
        if (!strcmp(val, "auto")) cfg->device = TB_DEVICE_AUTO;
        else if (!strcmp(val, "cuda")) cfg->device = TB_DEVICE_CUDA;
        else if (!strcmp(val, "emu")) cfg->device = TB_DEVICE_EMU;
        else {
            snprintf(err, cap, "%s: parameters: device '%s' is not one of auto, cuda, emu", where, val);
            return -1;
        }
    } else if (json_key_is(key, klen, "plan")) {
        if (!val[0] || strchr(val, '/') || !strcmp(val, ".") || !strcmp(val, "..")) {
            snprintf(err, cap, "%s: parameters: plan '%s' is not a file name (the plan lies in the version folder)",
                     where, val);
            return -1;
        }
        memcpy(cfg->plan_file, val, strlen(val) + 1);
    } else if (json_key_is(key, klen, "sha256")) {
        size_t n = strspn(val, "0123456789abcdefABCDEF");
        if (n != 64 || val[n]) {
            snprintf(err, cap, "%s: parameters: sha256 '%s' is not 64 hex digits", where, val);
            return -1;
        }
        memcpy(cfg->sha256, val, 65);
    } else {
        snprintf(err, cap, "%s: parameters: '%.*s' is not a bertc setting (known: device, plan, sha256)", where,
                 (int)klen, key);
        return -1;
    }
    return 0;
}

int tb_config_parse(const char *json, size_t len, const char *where, tb_config *cfg, char *err, size_t cap) {
    const char *e = json + len, *k, *v;
    size_t kl;
    memset(cfg, 0, sizeof *cfg);
    cfg->device = TB_DEVICE_AUTO;
    snprintf(cfg->plan_file, sizeof cfg->plan_file, "model.plan");
    json_iter it;
    int r = json_iter_begin(&it, json, e, '{', 0);
    while (!r && (r = json_iter_next(&it, &k, &kl, &v)) == 1) {
        r = 0;
        if (json_key_is(k, kl, "max_batch_size")) {
            if (json_int(v, e, &cfg->max_batch) || cfg->max_batch < 0) {
                snprintf(err, cap, "%s: max_batch_size is not a count", where);
                return -1;
            }
        } else if (json_key_is(k, kl, "parameters")) {
            json_iter pit;
            const char *pk, *pv;
            size_t pkl;
            int pr = json_iter_begin(&pit, v, e, '{', 1);
            while (!pr && (pr = json_iter_next(&pit, &pk, &pkl, &pv)) == 1) {
                pr = 0;
                if (config_parameter(cfg, pk, pkl, pv, e, where, err, cap)) return -1;
            }
            r = pr < 0 ? -1 : 0;
        }
    }
    if (r < 0) {
        snprintf(err, cap, "%s: the model configuration is not the JSON object expected", where);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------- inputs and outputs */

static const char *const TB_INPUTS[] = {"TEXT", "TEXT_PAIR", "INPUT_IDS", "ATTENTION_MASK", "TOKEN_TYPE_IDS"};

static int config_input(const char *name, const char *dtype, bertc_plan *plan, const char *where, char *err,
                        size_t cap) {
    int text = !strcmp(name, "TEXT") || !strcmp(name, "TEXT_PAIR"), known = text;
    for (size_t i = 2; i < sizeof TB_INPUTS / sizeof TB_INPUTS[0]; i++) known |= !strcmp(name, TB_INPUTS[i]);
    if (!known) {
        snprintf(err, cap, "%s: input '%s' is not a bertc input (TEXT, TEXT_PAIR, INPUT_IDS, ATTENTION_MASK, "
                 "TOKEN_TYPE_IDS)", where, name);
        return -1;
    }
    if (text && strcmp(dtype, "TYPE_STRING")) {
        snprintf(err, cap, "%s: input '%s' has data_type %s; text inputs are TYPE_STRING", where, name, dtype);
        return -1;
    }
    if (!text && strcmp(dtype, "TYPE_INT32") && strcmp(dtype, "TYPE_INT64")) {
        snprintf(err, cap, "%s: input '%s' has data_type %s; token inputs are TYPE_INT32 or TYPE_INT64", where, name,
                 dtype);
        return -1;
    }
    if (text && !bertc_plan_has_tokenizer(plan)) {
        snprintf(err, cap, "%s: input '%s' needs a tokenizer, and the plan carries none (its model had no vocab.txt)",
                 where, name);
        return -1;
    }
    if (!strcmp(name, "TOKEN_TYPE_IDS") && bertc_plan_type_vocab_size(plan) == 0) {
        snprintf(err, cap, "%s: input 'TOKEN_TYPE_IDS': the model has no token types", where);
        return -1;
    }
    return 0;
}

/* dims of a plan output in the config: [-1, cols] per token, [cols] per sequence. */
static int config_output_dims(const char *v, const char *e, const bertc_output_info *oi) {
    json_iter it;
    const char *k, *d;
    size_t kl;
    int64_t dims[4], x;
    int n = 0, r;
    if (json_iter_begin(&it, v, e, '[', 2)) return -1;
    while ((r = json_iter_next(&it, &k, &kl, &d)) == 1) {
        if (n == 4 || json_int(d, e, &x)) return -1;
        dims[n++] = x;
    }
    if (r < 0) return -1;
    if (oi->per_token) return n == 2 && dims[0] == -1 && dims[1] == oi->cols ? 0 : -1;
    return n == 1 && dims[0] == oi->cols ? 0 : -1;
}

static int config_output(const char *name, const char *dtype, const char *item, const char *e, bertc_plan *plan,
                         const char *where, char *err, size_t cap) {
    int idx = bertc_plan_output_index(plan, name);
    bertc_output_info oi;
    if (idx < 0 || bertc_plan_output_info(plan, idx, &oi) != BERTC_STATUS_OK) {
        int n = snprintf(err, cap, "%s: output '%s' is not an output of the plan (it has:", where, name);
        for (int i = 0; i < bertc_plan_output_count(plan) && n > 0 && (size_t)n < cap; i++)
            if (bertc_plan_output_info(plan, i, &oi) == BERTC_STATUS_OK)
                n += snprintf(err + n, cap - (size_t)n, "%s %s", i ? "," : "", oi.name);
        if (n > 0 && (size_t)n < cap) snprintf(err + n, cap - (size_t)n, ")");
        return -1;
    }
    if (strcmp(dtype, "TYPE_FP32")) {
        snprintf(err, cap, "%s: output '%s' has data_type %s; bertc outputs are TYPE_FP32", where, name, dtype);
        return -1;
    }
    const char *dims = json_member(item, e, "dims");
    if (!dims || config_output_dims(dims, e, &oi)) {
        if (oi.per_token)
            snprintf(err, cap, "%s: output '%s' needs dims [ -1, %lld ] (per token, %lld wide)", where, name,
                     (long long)oi.cols, (long long)oi.cols);
        else
            snprintf(err, cap, "%s: output '%s' needs dims [ %lld ]", where, name, (long long)oi.cols);
        return -1;
    }
    return 0;
}

/* Checks every item of the array member `key` ("input" or "output"). */
static int config_check_list(const char *json, const char *e, const char *key, bertc_plan *plan,
                             const char *where, int *count, char *err, size_t cap) {
    const char *list = json_member(json, e, key), *k, *item;
    size_t kl;
    json_iter it;
    int r;
    *count = 0;
    if (!list) return 0;
    if (json_iter_begin(&it, list, e, '[', 1)) goto bad;
    while ((r = json_iter_next(&it, &k, &kl, &item)) == 1) {
        char name[TB_NAME_CAP], dtype[64];
        const char *nv = json_member(item, e, "name"), *dv = json_member(item, e, "data_type");
        if (!nv || !dv || json_string(nv, e, name, sizeof name) || json_string(dv, e, dtype, sizeof dtype)) goto bad;
        if (!strcmp(key, "input") ? config_input(name, dtype, plan, where, err, cap)
                                  : config_output(name, dtype, item, e, plan, where, err, cap))
            return -1;
        (*count)++;
    }
    if (r == 0) return 0;
bad:
    snprintf(err, cap, "%s: '%s' is not a list of entries with a name and a data_type", where, key);
    return -1;
}

int tb_config_check(const char *json, size_t len, const char *where, bertc_plan *plan, char *err, size_t cap) {
    const char *e = json + len;
    int nin, nout;
    if (config_check_list(json, e, "input", plan, where, &nin, err, cap) ||
        config_check_list(json, e, "output", plan, where, &nout, err, cap))
        return -1;
    if (!nin || !nout) {
        snprintf(err, cap, "%s: the configuration declares no %s (bertc export-triton writes a complete one)", where,
                 nin ? "outputs" : "inputs");
        return -1;
    }
    return 0;
}
