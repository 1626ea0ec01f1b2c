/*
 * fuzz_request — requests are data (docs/security.md): arbitrary lengths,
 * ids, token types, masks and texts through bertc_infer on the emulated
 * device, with the micro fixture's plan (built by `make fuzz`).
 *
 * The oracle is exact: a request is valid when 1 <= len <= the longest
 * bucket, every id is below the vocabulary size, every token type below
 * the type vocabulary and every mask value 0 or 1; a valid request must
 * succeed and an invalid one must be refused as BERTC_STATUS_BAD_REQUEST,
 * with the context serving the next one either way.  Input layout: byte 0
 * selects (bit 0 run the kernels for real, else the null device; bit 1
 * token types given; bit 2 mask given; bit 3 the rest is text for the
 * plan's tokenizer; bit 4 the tokens are a packed batch), bytes 1-2 the
 * length (little-endian), then the values, 4 bytes each, read cyclically.
 * Real runs must give finite outputs.
 *
 * Packed batches (the micro plan has token buckets of 16 and 32 tokens, 4
 * requests at most): the tokens are cut into 1 + (byte 0 >> 5) requests
 * whose lengths come from the value stream (0 and past the longest bucket
 * included) and sent to bertc_infer_batch; the batch is valid when every
 * value is, every request is 1..the longest bucket long, and the batch
 * fits the plan's request and token limits — else the whole batch must be
 * refused as a bad request.
 */
#include <math.h>
#include <string.h>

#include "bertc.h"
#include "emuctl.h"
#include "fuzz.h"

#ifndef BERTC_FUZZ_DEFAULT_PLAN
#define BERTC_FUZZ_DEFAULT_PLAN "build-fuzz/plans/micro-bert.plan"
#endif

static bertc_plan *fuzz_plan;
static bertc_context *fuzz_ctx;
static bertc_encoding *fuzz_enc;
static const emuctl *fuzz_emu;

static void fuzz_setup(void) {
    const char *path = getenv("BERTC_FUZZ_PLAN");
    char err[1024];
    if (!path || !*path) path = BERTC_FUZZ_DEFAULT_PLAN;
    fuzz_require(bertc_plan_open(path, &fuzz_plan, err, sizeof err) == BERTC_STATUS_OK, err);
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = BERTC_DEVICE_EMULATED;
    fuzz_require(bertc_context_create(fuzz_plan, &opt, &fuzz_ctx, err, sizeof err) == BERTC_STATUS_OK, err);
    fuzz_require((fuzz_emu = emuctl_get()) != NULL, "the emulated device's controls (BERTC_EMU_DEVICE)");
    fuzz_require((fuzz_enc = bertc_encoding_create()) != NULL, "an encoding");
}

/* Value i of the cyclic stream of 32-bit words after the header. */
static int32_t fuzz_word(const uint8_t *v, size_t n, size_t i) {
    if (n == 0) return (int32_t)i;
    uint32_t w = 0;
    for (int b = 0; b < 4; b++) w |= (uint32_t)v[(4 * i + (size_t)b) % n] << (8 * b);
    return (int32_t)w;
}

/* Runs rq; checks the status against validity and, for real runs, the outputs. */
static void fuzz_infer(const bertc_request *rq, int valid, int real) {
    bertc_status st = bertc_infer(fuzz_ctx, rq);
    fuzz_require(st == (valid ? BERTC_STATUS_OK : BERTC_STATUS_BAD_REQUEST), bertc_context_error(fuzz_ctx));
    if (st != BERTC_STATUS_OK || !real) return;
    for (int o = 0; o < bertc_plan_output_count(fuzz_plan); o++) {
        bertc_output_info info;
        bertc_plan_output_info(fuzz_plan, o, &info);
        size_t n = (size_t)(info.per_token ? rq->len : 1) * (size_t)info.cols;
        float *out = malloc(n * sizeof *out);
        fuzz_require(out && bertc_output_read(fuzz_ctx, o, out, n) == BERTC_STATUS_OK, "reading an output");
        for (size_t i = 0; i < n; i++) fuzz_require(isfinite(out[i]), "a finite output");
        free(out);
    }
}

static void fuzz_text(const uint8_t *text, size_t n, int real) {
    char *s = malloc(n + 1);
    memcpy(s, text, n);
    s[n] = '\0';
    char err[256];
    if (bertc_encode(fuzz_plan, fuzz_enc, s, NULL, 0, err, sizeof err) == BERTC_STATUS_OK) {
        bertc_request rq = {bertc_encoding_ids(fuzz_enc), bertc_encoding_type_ids(fuzz_enc), NULL,
                            bertc_encoding_len(fuzz_enc)};
        fuzz_infer(&rq, 1, real);
    }
    free(s);
}

/* The len tokens of rq cut into requests; runs them as one packed batch. */
static void fuzz_batch(const bertc_request *rq, int valid, const uint8_t *data, const uint8_t *v, size_t nv, int real) {
    int64_t longest = bertc_plan_bucket_len(fuzz_plan, bertc_plan_bucket_count(fuzz_plan) - 1);
    size_t n = 1 + (size_t)(data[0] >> 5);
    bertc_request q[8];
    int64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t want = (int64_t)((uint32_t)fuzz_word(v, nv, 7 * i + 5) % (uint32_t)(longest + 2));
        int64_t len = i + 1 == n ? rq->len - at : (want < rq->len - at ? want : rq->len - at);
        q[i] = (bertc_request){rq->input_ids + at, rq->token_type_ids ? rq->token_type_ids + at : NULL,
                               rq->attention_mask ? rq->attention_mask + at : NULL, len};
        valid &= len >= 1 && len <= longest;
        at += len;
    }
    valid &= n <= (size_t)bertc_plan_max_batch(fuzz_plan) && rq->len <= bertc_plan_max_batch_tokens(fuzz_plan);
    bertc_status st = bertc_infer_batch(fuzz_ctx, q, n);
    fuzz_require(st == (valid ? BERTC_STATUS_OK : BERTC_STATUS_BAD_REQUEST), bertc_context_error(fuzz_ctx));
    if (st != BERTC_STATUS_OK || !real) return;
    for (int o = 0; o < bertc_plan_output_count(fuzz_plan); o++) {
        bertc_output_info info;
        bertc_plan_output_info(fuzz_plan, o, &info);
        size_t count = (size_t)(info.per_token ? rq->len : (int64_t)n) * (size_t)info.cols;
        float *out = malloc(count * sizeof *out);
        fuzz_require(out && bertc_batch_output_read_all(fuzz_ctx, o, out, count) == BERTC_STATUS_OK, "a batch output");
        for (size_t i = 0; i < count; i++) fuzz_require(isfinite(out[i]), "a finite batch output");
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_plan) fuzz_setup();
    if (size < 3) return 0;
    int real = data[0] & 1;
    fuzz_emu->set_null(!real);
    if (data[0] & 8) {
        fuzz_text(data + 3, size - 3, real);
        return 0;
    }
    int64_t len = data[1] | data[2] << 8, longest = bertc_plan_bucket_len(fuzz_plan, bertc_plan_bucket_count(fuzz_plan) - 1);
    /* real runs stay short: a request, or a batch that may pass the largest token bucket */
    int64_t real_cap = data[0] & 16 ? bertc_plan_max_batch_tokens(fuzz_plan) + 2 : longest + 2;
    if (real && len > real_cap) len %= real_cap + 1;
    size_t cap = (size_t)(len > 0 ? len : 1);
    int32_t *ids = malloc(cap * sizeof *ids), *types = malloc(cap * sizeof *types), *mask = malloc(cap * sizeof *mask);
    int64_t vocab = bertc_plan_vocab_size(fuzz_plan), ntypes = bertc_plan_type_vocab_size(fuzz_plan);
    int valid = len >= 1 && len <= longest;
    const uint8_t *v = data + 3;
    size_t nv = size - 3;
    for (int64_t i = 0; i < len; i++) {
        /* Mostly in range, so valid requests run too; the low byte decides. */
        int32_t w = fuzz_word(v, nv, (size_t)(3 * i));
        ids[i] = w & 0x100 ? w : (int32_t)((uint32_t)w % (uint32_t)vocab);
        w = fuzz_word(v, nv, (size_t)(3 * i + 1));
        types[i] = w & 0x100 ? w : (int32_t)((uint32_t)w % (uint32_t)(ntypes > 0 ? ntypes : 1));
        w = fuzz_word(v, nv, (size_t)(3 * i + 2));
        mask[i] = w & 0x100 ? w : w & 1;
        valid &= ids[i] >= 0 && ids[i] < vocab;
        if (data[0] & 2) valid &= types[i] >= 0 && types[i] < (ntypes > 0 ? ntypes : 1);
        if (data[0] & 4) valid &= mask[i] == 0 || mask[i] == 1;
    }
    bertc_request rq = {ids, data[0] & 2 ? types : NULL, data[0] & 4 ? mask : NULL, len};
    if ((data[0] & 16) && bertc_plan_max_batch(fuzz_plan) > 0) {
        /* the values' validity without the length's: the batch judges its own lengths */
        int values = 1;
        for (int64_t i = 0; i < len; i++)
            values &= ids[i] >= 0 && ids[i] < vocab &&
                      (!(data[0] & 2) || (types[i] >= 0 && types[i] < (ntypes > 0 ? ntypes : 1))) &&
                      (!(data[0] & 4) || mask[i] == 0 || mask[i] == 1);
        fuzz_batch(&rq, values, data, v, nv, real);
    } else {
        fuzz_infer(&rq, valid, real);
    }
    free(ids);
    free(types);
    free(mask);
    return 0;
}
