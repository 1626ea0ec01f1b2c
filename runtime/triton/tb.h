/*
 * tb — the bertc Triton backend's internals, shared by its files:
 *
 *   tb_model.c    the entry points Triton calls to load and unload: backend
 *                 (API version), model (config + plan), instance (context)
 *   tb_config.c   the model configuration Triton hands over as JSON: the
 *                 backend's settings, and its inputs and outputs checked
 *                 against the plan
 *   tb_request.c  one request's inputs -> rows of token ids (TEXT through
 *                 the plan's tokenizer, or INPUT_IDS / ATTENTION_MASK /
 *                 TOKEN_TYPE_IDS), every check a bad request can fail
 *   tb_execute.c  TRITONBACKEND_ModelInstanceExecute: read every request,
 *                 run the batch, answer and release every request
 *   tb_util.c     error objects with formatted messages, logging, growable
 *                 scratch arrays, the clock
 *
 * Objects.  A model (tb_model) owns one bertc_plan, opened and pinned to
 * its SHA-256 at load and shared by all instances.  An instance
 * (tb_instance) owns one bertc_context on its device — Triton never calls
 * Execute for one instance from two threads at once, which is exactly the
 * runtime's one-context-per-thread rule — plus its tokenizer encoding and
 * the scratch arrays an Execute reuses, so a steady-state request
 * allocates nothing in the backend.
 *
 * A batch.  Execute turns each request into a tb_job: its rows (each one
 * bertc_request: ids, token types, mask, length, stored as offsets into
 * the instance's token pool), its requested outputs with the buffers
 * Triton gave for them, and its response.  A request that fails a check
 * gets its error here and takes no further part.  tb_batch_run then runs
 * every row of every remaining job — the one place that knows how rows
 * reach the device: as packed batches when the plan has token buckets,
 * else one bertc_infer per row (tb_execute.c).
 */
#ifndef BERTC_TB_H
#define BERTC_TB_H

#include <stddef.h>
#include <stdint.h>

#include "bertc.h"
#include "triton_api.h"

#define TB_NAME_CAP 256
#define TB_NONE ((size_t)-1)

/* What the instance kind and the `device` parameter select (tb_config.c). */
typedef enum tb_device_mode {
    TB_DEVICE_AUTO,   /* KIND_GPU -> CUDA on the instance's GPU, KIND_CPU -> the emulated device */
    TB_DEVICE_CUDA,   /* CUDA; KIND_GPU instance groups only */
    TB_DEVICE_EMU,    /* the emulated device (libbertc_emudev.so beside the backend) */
} tb_device_mode;

/* The backend's settings from the model configuration. */
typedef struct tb_config {
    int64_t max_batch;            /* max_batch_size; 0: inputs carry no batch dimension */
    tb_device_mode device;        /* parameter "device": auto | cuda | emu */
    char plan_file[TB_NAME_CAP];  /* parameter "plan": a file name in the version folder */
    char sha256[65];              /* parameter "sha256": the plan's pin, "" for none */
} tb_config;

typedef struct tb_model {
    tb_config cfg;
    char *name;
    char *plan_path;
    bertc_plan *plan;
    int64_t max_len;              /* the longest bucket */
} tb_model;

/* One sequence: what one bertc_request needs, as offsets into the token pool. */
typedef struct tb_row {
    size_t ids, types, mask;      /* TB_NONE: absent (the model's default) */
    int64_t len;
} tb_row;

/* One output a request asked for, written straight into Triton's buffer. */
typedef struct tb_output {
    const char *name;             /* the plan's (lives as long as the plan) */
    int index;                    /* plan output */
    int per_token;
    int64_t cols;
    float *dst;                   /* rows x width x cols (per token) or rows x cols */
} tb_output;

typedef struct tb_job {
    TRITONBACKEND_Request *request;
    TRITONBACKEND_Response *response;   /* NULL if it could not be made */
    TRITONSERVER_Error *error;          /* the request's failure; NULL: fine so far */
    size_t first_row, nrows;            /* in the instance's row table */
    int64_t width;                      /* longest row: dimension 1 of per-token outputs */
    int text;                           /* the rows came from TEXT */
    int truncated;                      /* a TEXT row was cut to the model's maximum */
    size_t first_output, noutputs;      /* in the instance's output table */
} tb_job;

/* A growable array of fixed-size items (tb_util.c). */
typedef struct tb_vec {
    void *data;
    size_t len, cap, item;
} tb_vec;

typedef struct tb_instance {
    tb_model *model;
    char *name;
    bertc_context *ctx;
    bertc_encoding *enc;
    tb_vec tokens;                /* int32: ids, types, masks of every row of the batch */
    tb_vec rows;                  /* tb_row */
    tb_vec outputs;               /* tb_output */
    tb_vec jobs;                  /* tb_job */
    tb_vec text, pair, bytes;     /* char: staging of TEXT, TEXT_PAIR and other inputs */
    tb_vec packed;                /* bertc_request: the rows of one packed batch (token buckets) */
    tb_vec packed_at;             /* tb_packed_row: whose rows they are */
} tb_instance;

/* Row `row` of job `job`: where a packed batch's request k came from. */
typedef struct tb_packed_row {
    size_t job, row;
} tb_packed_row;

/* ---- tb_util.c */
/* A server error object with a formatted message (never NULL's message). */
TRITONSERVER_Error *tb_error(TRITONSERVER_Error_Code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tb_log_at(TRITONSERVER_LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define tb_log(level, ...) tb_log_at(level, __FILE__, __LINE__, __VA_ARGS__)
/* Logs and deletes a server error that has nowhere else to go (NULL: nothing). */
void tb_log_error(TRITONSERVER_Error *err, const char *what);
/* Monotonic clock in nanoseconds (what Triton's statistics expect). */
uint64_t tb_now_ns(void);
char *tb_strdup(const char *s);

void tb_vec_init(tb_vec *v, size_t item);
void tb_vec_free(tb_vec *v);
/* Room for n more items; returns a pointer to the first of them (len is not
 * changed), or NULL when out of memory.  Pointers into the array stay valid
 * only until the next reserve. */
void *tb_vec_reserve(tb_vec *v, size_t n);
#define TB_AT(v, type, i) (((type *)(v)->data)[i])

/* ---- tb_config.c */
/* Reads the settings from the configuration's JSON; the message names
 * `where` (the config file) and the setting. */
int tb_config_parse(const char *json, size_t len, const char *where, tb_config *cfg, char *err, size_t cap);
/* Checks the configuration's inputs and outputs against the plan: known
 * names, their data types, output dims equal to the plan's. */
int tb_config_check(const char *json, size_t len, const char *where, bertc_plan *plan, char *err, size_t cap);

/* ---- tb_request.c */
/* Reads a request's inputs into rows of the instance's tables and sets
 * job->first_row, nrows, width and truncated; NULL, or the error naming
 * what is wrong with the request. */
TRITONSERVER_Error *tb_request_read(tb_instance *in, tb_job *job);
/* The plan outputs the request asked for (job->first_output, noutputs). */
TRITONSERVER_Error *tb_request_outputs(tb_instance *in, tb_job *job);

#endif
