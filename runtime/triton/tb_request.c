/*
 * tb_request — one Triton request's inputs -> rows of token ids.
 *
 * A request carries either text or token ids:
 *
 *   TEXT [, TEXT_PAIR]      BYTES, one string per batch row; tokenised by
 *                           the plan's own tokenizer (bertc_encode: [CLS]
 *                           text [SEP] [pair [SEP]], Hugging Face's ids),
 *                           cut to the model's maximum length as Hugging
 *                           Face and sentence-transformers do — and said so
 *                           in the response's "truncated" parameter;
 *   INPUT_IDS [, ATTENTION_MASK] [, TOKEN_TYPE_IDS]
 *                           INT32 or INT64, [rows, length] (with a batch
 *                           dimension) or [length]; mask and types must
 *                           have the ids' shape.
 *
 * Everything a client can get wrong is checked here, before any device
 * work and before any output is allocated, and answered with an error
 * naming the input and the place: an unknown or missing input, text and
 * ids mixed, a wrong data type, data in GPU memory, a shape with no rows
 * or no tokens, a row longer than the plan's longest bucket (the runtime
 * would refuse it too, but an absurd length must not first size an
 * output), a 64-bit value that does not fit, a string with a NUL byte or
 * invalid UTF-8, a byte count that does not match the shape.  What only
 * the model knows (an id beyond the vocabulary, a mask value other than
 * 0/1) is checked by bertc_infer, whose message then reaches the client.
 *
 * Inputs may arrive in several buffers; they are gathered into the
 * instance's staging arrays.  Rows refer to the token pool by offset, as
 * the pool may move while later requests of the batch are read.
 */
#include <stdio.h>
#include <string.h>

#include "tb.h"

typedef struct tb_tensor {
    TRITONBACKEND_Input *input;   /* NULL: absent */
    const char *name;
    TRITONSERVER_DataType dtype;
    const int64_t *shape;
    uint32_t dims;
    uint64_t byte_size;
    uint32_t buffers;
} tb_tensor;

typedef struct tb_inputs {
    tb_tensor text, pair, ids, mask, types;
} tb_inputs;

static const char *tb_dtype_name(TRITONSERVER_DataType t) {
    static const char *const names[] = {"INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                        "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

static const char *tb_shape_text(const tb_tensor *t, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < t->dims && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (n > 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "]");
    return buf;
}

static TRITONSERVER_Error *tb_inputs_read(TRITONBACKEND_Request *rq, tb_inputs *ins) {
    uint32_t count = 0;
    memset(ins, 0, sizeof *ins);
    TRITONSERVER_Error *e = TRITONBACKEND_RequestInputCount(rq, &count);
    for (uint32_t i = 0; !e && i < count; i++) {
        tb_tensor t = {0};
        e = TRITONBACKEND_RequestInputByIndex(rq, i, &t.input);
        if (!e) e = TRITONBACKEND_InputProperties(t.input, &t.name, &t.dtype, &t.shape, &t.dims, &t.byte_size,
                                                  &t.buffers);
        if (e) break;
        tb_tensor *slot = !strcmp(t.name, "TEXT")             ? &ins->text
                          : !strcmp(t.name, "TEXT_PAIR")      ? &ins->pair
                          : !strcmp(t.name, "INPUT_IDS")      ? &ins->ids
                          : !strcmp(t.name, "ATTENTION_MASK") ? &ins->mask
                          : !strcmp(t.name, "TOKEN_TYPE_IDS") ? &ins->types
                                                              : NULL;
        if (!slot)
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "input '%s' is not a bertc input (TEXT, TEXT_PAIR, "
                            "INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS)", t.name);
        *slot = t;
    }
    if (e) return e;
    if (ins->text.input && ins->ids.input)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "TEXT and INPUT_IDS are alternatives: send one of them");
    if (ins->pair.input && !ins->text.input)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "TEXT_PAIR needs TEXT");
    if ((ins->mask.input || ins->types.input) && !ins->ids.input)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s goes with INPUT_IDS; TEXT is tokenised by the model",
                        ins->mask.input ? "ATTENTION_MASK" : "TOKEN_TYPE_IDS");
    if (!ins->text.input && !ins->ids.input)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "missing input: send TEXT (strings to tokenise) or INPUT_IDS (token ids)");
    return NULL;
}

/* Rows (the batch dimension, or 1 without one) and elements per row. */
static TRITONSERVER_Error *tb_tensor_rows(const tb_model *m, const tb_tensor *t, int64_t *rows, int64_t *per_row) {
    char sb[128];
    int batched = m->cfg.max_batch > 0;
    if (t->dims < (uint32_t)(batched ? 2 : 1))
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has shape %s; expected [%slength]", t->name,
                        tb_shape_text(t, sb, sizeof sb), batched ? "rows, " : "");
    *rows = batched ? t->shape[0] : 1;
    if (*rows > m->cfg.max_batch && batched)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has %lld rows, more than max_batch_size %lld", t->name,
                        (long long)*rows, (long long)m->cfg.max_batch);
    *per_row = 1;
    for (uint32_t i = batched ? 1 : 0; i < t->dims; i++) {
        if (t->shape[i] < 0 || t->shape[i] > ((int64_t)1 << 40) / (*per_row ? *per_row : 1))
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has shape %s", t->name, tb_shape_text(t, sb, sizeof sb));
        *per_row *= t->shape[i];
    }
    if (*rows <= 0 || *per_row == 0)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s is empty (shape %s)", t->name,
                        tb_shape_text(t, sb, sizeof sb));
    return NULL;
}

/* The tensor's bytes, gathered from its buffers into `buf` (NUL-terminated). */
static TRITONSERVER_Error *tb_tensor_bytes(const tb_tensor *t, tb_vec *buf) {
    buf->len = 0;
    char *dst = tb_vec_reserve(buf, (size_t)t->byte_size + 1);
    if (!dst) return tb_error(TRITONSERVER_ERROR_INTERNAL, "%s: out of memory (%llu bytes)", t->name,
                              (unsigned long long)t->byte_size);
    uint64_t got = 0;
    for (uint32_t i = 0; i < t->buffers; i++) {
        const void *p;
        uint64_t n;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        TRITONSERVER_Error *e = TRITONBACKEND_InputBuffer(t->input, i, &p, &n, &mt, &mid);
        if (e) return e;
        if (mt == TRITONSERVER_MEMORY_GPU)
            return tb_error(TRITONSERVER_ERROR_UNSUPPORTED, "%s is in GPU memory; bertc takes inputs in host memory",
                            t->name);
        if (n > t->byte_size - got)
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s: its buffers hold more than its %llu bytes", t->name,
                            (unsigned long long)t->byte_size);
        if (n) memcpy(dst + got, p, (size_t)n);
        got += n;
    }
    if (got != t->byte_size)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s: its buffers hold %llu of its %llu bytes", t->name,
                        (unsigned long long)got, (unsigned long long)t->byte_size);
    dst[got] = '\0';
    buf->len = (size_t)got;
    return NULL;
}

/* rows x per_row integers of an INT32/INT64 tensor, appended to the token pool at *offset. */
static TRITONSERVER_Error *tb_tensor_ints(tb_instance *in, const tb_tensor *t, int64_t rows, int64_t per_row,
                                          size_t *offset) {
    size_t n = (size_t)(rows * per_row), width = t->dtype == TRITONSERVER_TYPE_INT64 ? 8 : 4;
    if (t->dtype != TRITONSERVER_TYPE_INT32 && t->dtype != TRITONSERVER_TYPE_INT64)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has data type %s; expected INT32 or INT64", t->name,
                        tb_dtype_name(t->dtype));
    if (t->byte_size != n * width)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s holds %llu bytes; its shape needs %zu", t->name,
                        (unsigned long long)t->byte_size, n * width);
    TRITONSERVER_Error *e = tb_tensor_bytes(t, &in->bytes);
    if (e) return e;
    int32_t *dst = tb_vec_reserve(&in->tokens, n);
    if (!dst) return tb_error(TRITONSERVER_ERROR_INTERNAL, "%s: out of memory", t->name);
    const char *src = in->bytes.data;
    for (size_t i = 0; i < n; i++) {
        if (width == 4) {
            memcpy(&dst[i], src + 4 * i, 4);
            continue;
        }
        int64_t v;
        memcpy(&v, src + 8 * i, 8);
        if (v < INT32_MIN || v > INT32_MAX)
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s[%lld][%lld] = %lld does not fit in 32 bits", t->name,
                            (long long)(i / (size_t)per_row), (long long)(i % (size_t)per_row), (long long)v);
        dst[i] = (int32_t)v;
    }
    *offset = in->tokens.len;
    in->tokens.len += n;
    return NULL;
}

static TRITONSERVER_Error *tb_read_ids(tb_instance *in, tb_job *job, const tb_inputs *ins) {
    int64_t rows, len, r2, l2;
    TRITONSERVER_Error *e = tb_tensor_rows(in->model, &ins->ids, &rows, &len);
    if (e) return e;
    if (ins->ids.dims != (in->model->cfg.max_batch > 0 ? 2u : 1u)) {
        char sb[128];
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "INPUT_IDS has shape %s; expected [%slength]",
                        tb_shape_text(&ins->ids, sb, sizeof sb), in->model->cfg.max_batch > 0 ? "rows, " : "");
    }
    if (len > in->model->max_len)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "INPUT_IDS: %lld tokens per row, more than this model's "
                        "longest request (%lld)", (long long)len, (long long)in->model->max_len);
    size_t off[3] = {TB_NONE, TB_NONE, TB_NONE};
    const tb_tensor *ts[3] = {&ins->ids, &ins->types, &ins->mask};
    for (int k = 0; k < 3 && !e; k++) {
        if (!ts[k]->input) continue;
        if (k) e = tb_tensor_rows(in->model, ts[k], &r2, &l2);
        if (!e && k && (ts[k]->dims != ins->ids.dims || r2 != rows || l2 != len)) {
            char a[128], b[128];
            e = tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has shape %s; it must match INPUT_IDS %s", ts[k]->name,
                         tb_shape_text(ts[k], a, sizeof a), tb_shape_text(&ins->ids, b, sizeof b));
        }
        if (!e) e = tb_tensor_ints(in, ts[k], rows, len, &off[k]);
    }
    if (e) return e;
    tb_row *row = tb_vec_reserve(&in->rows, (size_t)rows);
    if (!row) return tb_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        size_t at = (size_t)(r * len);
        row[r] = (tb_row){off[0] + at, off[1] == TB_NONE ? TB_NONE : off[1] + at,
                          off[2] == TB_NONE ? TB_NONE : off[2] + at, len};
    }
    in->rows.len += (size_t)rows;
    job->nrows = (size_t)rows;
    job->width = len;
    return NULL;
}

/* The next string of a BYTES tensor (4-byte little-endian length, then the
 * bytes), copied NUL-terminated to *out. */
static TRITONSERVER_Error *tb_next_string(const tb_tensor *t, const tb_vec *buf, size_t *at, int64_t row, char *out) {
    const unsigned char *p = (const unsigned char *)buf->data + *at;
    size_t left = buf->len - *at;
    if (left < 4) return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s: element %lld is missing", t->name, (long long)row);
    size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (n > left - 4)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s: element %lld claims %zu bytes, %zu remain", t->name,
                        (long long)row, n, left - 4);
    const char *nul = memchr(p + 4, '\0', n);
    if (nul)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s: element %lld has a NUL byte at offset %zu", t->name,
                        (long long)row, (size_t)(nul - (const char *)(p + 4)));
    memcpy(out, p + 4, n);
    out[n] = '\0';
    *at += 4 + n;
    return NULL;
}

/* One text row: tokenised, its ids and types appended to the token pool. */
static TRITONSERVER_Error *tb_encode_row(tb_instance *in, tb_job *job, const char *text, const char *pair,
                                         int64_t r) {
    char err[1024];
    bertc_status st = bertc_encode(in->model->plan, in->enc, text, pair, 0, err, sizeof err);
    if (st != BERTC_STATUS_OK)
        return tb_error(st == BERTC_STATUS_BAD_REQUEST ? TRITONSERVER_ERROR_INVALID_ARG : TRITONSERVER_ERROR_INTERNAL,
                        "TEXT row %lld: %s", (long long)r, err);
    int64_t n = bertc_encoding_len(in->enc);
    int32_t *dst = tb_vec_reserve(&in->tokens, 2 * (size_t)n);
    tb_row *row = tb_vec_reserve(&in->rows, 1);
    if (!dst || !row) return tb_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    memcpy(dst, bertc_encoding_ids(in->enc), (size_t)n * sizeof *dst);
    memcpy(dst + n, bertc_encoding_type_ids(in->enc), (size_t)n * sizeof *dst);
    *row = (tb_row){in->tokens.len, in->tokens.len + (size_t)n, TB_NONE, n};
    in->tokens.len += 2 * (size_t)n;
    in->rows.len++;
    job->nrows++;
    if (n > job->width) job->width = n;
    job->truncated |= bertc_encoding_truncated(in->enc);
    return NULL;
}

static TRITONSERVER_Error *tb_read_text(tb_instance *in, tb_job *job, const tb_inputs *ins) {
    int64_t rows = 0, per_row = 0, prows = 0, pper = 1;
    const tb_tensor *ts[2] = {&ins->text, &ins->pair};
    TRITONSERVER_Error *e = NULL;
    for (int k = 0; k < 2 && !e; k++) {
        if (!ts[k]->input) continue;
        if (ts[k]->dtype != TRITONSERVER_TYPE_BYTES)
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "%s has data type %s; expected BYTES (strings)",
                            ts[k]->name, tb_dtype_name(ts[k]->dtype));
        e = k ? tb_tensor_rows(in->model, ts[k], &prows, &pper) : tb_tensor_rows(in->model, ts[k], &rows, &per_row);
        if (!e) e = tb_tensor_bytes(ts[k], k ? &in->pair : &in->text);
    }
    if (e) return e;
    if (per_row != 1 || pper != 1 || (ins->pair.input && prows != rows))
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "TEXT%s: expected one string per row%s",
                        per_row != 1 ? "" : "_PAIR", ins->pair.input ? ", as many rows as TEXT" : "");
    size_t at = 0, pat = 0;
    for (int64_t r = 0; r < rows && !e; r++) {
        /* both strings NUL-terminated in in->bytes: text, then pair */
        char *buf = (in->bytes.len = 0, tb_vec_reserve(&in->bytes, in->text.len + in->pair.len + 2));
        if (!buf) return tb_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
        char *pair = buf + in->text.len + 1;
        e = tb_next_string(&ins->text, &in->text, &at, r, buf);
        if (!e && ins->pair.input) e = tb_next_string(&ins->pair, &in->pair, &pat, r, pair);
        if (!e) e = tb_encode_row(in, job, buf, ins->pair.input ? pair : NULL, r);
    }
    if (!e && (at != in->text.len || (ins->pair.input && pat != in->pair.len)))
        e = tb_error(TRITONSERVER_ERROR_INVALID_ARG, "TEXT%s: bytes after its last string",
                     at != in->text.len ? "" : "_PAIR");
    return e;
}

TRITONSERVER_Error *tb_request_read(tb_instance *in, tb_job *job) {
    tb_inputs ins;
    job->first_row = in->rows.len;
    job->nrows = 0;
    job->width = 0;
    job->truncated = 0;
    TRITONSERVER_Error *e = tb_inputs_read(job->request, &ins);
    job->text = !e && ins.text.input;
    if (!e) e = ins.ids.input ? tb_read_ids(in, job, &ins) : tb_read_text(in, job, &ins);
    if (e) {   /* the rows of a failed request take no part in the batch */
        in->rows.len = job->first_row;
        job->nrows = 0;
    }
    return e;
}

TRITONSERVER_Error *tb_request_outputs(tb_instance *in, tb_job *job) {
    uint32_t count = 0;
    job->first_output = in->outputs.len;
    job->noutputs = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_RequestOutputCount(job->request, &count);
    if (e) return e;
    tb_output *o = tb_vec_reserve(&in->outputs, count);
    if (count && !o) return tb_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    for (uint32_t i = 0; i < count; i++) {
        const char *name;
        bertc_output_info oi;
        if ((e = TRITONBACKEND_RequestOutputName(job->request, i, &name))) return e;
        int idx = bertc_plan_output_index(in->model->plan, name);
        if (idx < 0 || bertc_plan_output_info(in->model->plan, idx, &oi) != BERTC_STATUS_OK)
            return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "output '%s' is not an output of model %s", name,
                            in->model->name);
        o[i] = (tb_output){oi.name, idx, oi.per_token, oi.cols, NULL};
    }
    in->outputs.len += count;
    job->noutputs = count;
    return NULL;
}
