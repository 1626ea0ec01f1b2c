/*
 * bertc.h — the bertc runtime: load a compiled plan, answer requests on a GPU.
 *
 * This is the one public header of libbertc (static libbertc.a, shared
 * libbertc.so, `pkg-config --cflags --libs bertc`).  It has no CUDA types:
 * the runtime reaches the CUDA driver and cuBLASLt only through dlopen, so a
 * service links nothing of CUDA and starts (and says why it cannot run) on a
 * machine without a driver.
 *
 * The life of a service:
 *
 *     bertc_plan *plan;                      // once: map and check the file
 *     bertc_plan_open("model.plan", &plan, err, sizeof err);
 *     bertc_context *ctx;                    // once per thread: device state
 *     bertc_context_create(plan, NULL, &ctx, err, sizeof err);
 *     for (;;) {                             // per request: one graph launch
 *         bertc_request rq = {ids, NULL, NULL, len};
 *         bertc_infer(ctx, &rq);
 *         bertc_output_read(ctx, 0, out, len * hidden);
 *     }
 *     bertc_context_destroy(ctx);
 *     bertc_plan_close(plan);
 *
 * docs/runtime.md has the complete example the tests compile and run.
 *
 * Plans.  bertc_plan_open maps the file and checks every field before use
 * (magic, format version, type-size probe, section bounds and checksums,
 * every index and offset); a failure names the file, the byte offset and the
 * field.  An open plan is immutable and may be shared by any number of
 * threads and contexts.
 *
 * Contexts.  A context is one request at a time on one device: its own
 * stream, activation arena, cuBLASLt workspace and one CUDA Graph per
 * sequence-length bucket.  The plan's weights and kernel module are uploaded
 * once per device and shared, read-only, by every context of the plan on
 * that device.  Contexts are independent: use one per thread (a context
 * must not be used by two threads at once; it may move between threads).
 * Contexts use the device's primary CUDA context, so they coexist with
 * other CUDA users of the process.
 *
 * Requests.  A request of length L runs in the smallest bucket >= L; the
 * real length reaches the kernels through device memory that the graph's
 * first node fills, so one captured graph serves every length of its bucket
 * and a request is exactly one cuGraphLaunch.
 *
 * Errors.  Every function returns a bertc_status; the message of the most
 * recent failure of a context is bertc_context_error(ctx).  Functions that
 * create something take a caller buffer for the message instead.  The
 * library never prints and never exits.
 */
#ifndef BERTC_H
#define BERTC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BERTC_VERSION_MAJOR 0
#define BERTC_VERSION_MINOR 1

typedef enum bertc_status {
    BERTC_STATUS_OK = 0,
    BERTC_STATUS_INVALID_ARGUMENT = 1, /* API misuse: NULL where a value is needed, bad option */
    BERTC_STATUS_BAD_PLAN = 2,         /* unreadable, damaged or unsupported plan file */
    BERTC_STATUS_BAD_REQUEST = 3,      /* length 0 or beyond the largest bucket, id out of range, ... */
    BERTC_STATUS_NO_DEVICE = 4,        /* no driver, no such device, or no kernel image for it */
    BERTC_STATUS_DEVICE = 5,           /* a CUDA driver or cuBLASLt call failed */
    BERTC_STATUS_OUT_OF_MEMORY = 6,    /* host or device allocation failed */
} bertc_status;

/* "ok", "bad plan", ... */
const char *bertc_status_name(bertc_status s);

/* ------------------------------------------------------------------ plans */

typedef struct bertc_plan bertc_plan;

/* Maps and validates a plan.  On failure *out is NULL and err (if not NULL)
 * holds "FILE: offset 0x..: where: problem". */
bertc_status bertc_plan_open(const char *path, bertc_plan **out, char *err, size_t err_cap);

/*
 * A plan is code: its kernel images run on the GPU, and on the emulated
 * device its image is a shared object this process loads (docs/security.md).
 * A service that deploys plans should pin them: with expected_sha256 set,
 * the file's SHA-256 is computed over the mapped bytes before anything in
 * them is used, and a plan with another digest is refused (BAD_PLAN).
 */
typedef struct bertc_plan_options {
    const char *expected_sha256;  /* 64 hex digits, or NULL: no pin */
} bertc_plan_options;

void bertc_plan_options_init(bertc_plan_options *opt);
/* bertc_plan_open with options (NULL: the defaults). */
bertc_status bertc_plan_open_with(const char *path, const bertc_plan_options *opt, bertc_plan **out, char *err,
                                  size_t err_cap);
/* The plan file's SHA-256 as 64 lowercase hex digits (what `bertc inspect`
 * prints and expected_sha256 pins); computed on the first call. */
const char *bertc_plan_sha256(bertc_plan *plan);
/* Releases the caller's reference; the plan lives on until its last context
 * is destroyed.  NULL is allowed. */
void bertc_plan_close(bertc_plan *plan);

const char *bertc_plan_model_name(const bertc_plan *plan);
int64_t bertc_plan_hidden(const bertc_plan *plan);
int64_t bertc_plan_vocab_size(const bertc_plan *plan);
int64_t bertc_plan_type_vocab_size(const bertc_plan *plan); /* 0: the model has no token types */
/* Sequence-length buckets, ascending; the last is the longest request. */
int bertc_plan_bucket_count(const bertc_plan *plan);
int bertc_plan_bucket_len(const bertc_plan *plan, int bucket);

/* Outputs ("last_hidden_state", "pooler_output", ...). */
typedef struct bertc_output_info {
    const char *name;
    int per_token;   /* 1: [len, cols]; 0: [cols] */
    int64_t cols;
} bertc_output_info;
int bertc_plan_output_count(const bertc_plan *plan);
bertc_status bertc_plan_output_info(const bertc_plan *plan, int output, bertc_output_info *info);
/* Index of the output called `name`, or -1. */
int bertc_plan_output_index(const bertc_plan *plan, const char *name);

/* The class names of a classification head's output "logits" (the model's
 * id2label), in label order: count 0 when the plan has none; a name is
 * NULL for an index outside 0 .. count - 1. */
int bertc_plan_label_count(const bertc_plan *plan);
const char *bertc_plan_label(const bertc_plan *plan, int label);

/* --------------------------------------------------------------- contexts */

typedef enum bertc_device_kind {
    BERTC_DEVICE_CUDA = 0,      /* libcuda.so.1 and libcublasLt.so.13 */
    BERTC_DEVICE_EMULATED = 1,  /* libbertc_emudev.so: the same calls, executed on the CPU */
} bertc_device_kind;

typedef struct bertc_context_options {
    bertc_device_kind device;
    int device_ordinal;           /* CUDA device number */
    int capture_on_first_use;     /* 0 (default): capture every bucket's graph at create;
                                     1: capture a bucket when its first request comes */
    size_t workspace_bytes;       /* cuBLASLt workspace (default 4 MiB) */
    int timing;                   /* 1: time each request with CUDA events
                                     (bertc_context_last_device_ms) */
    const char *driver_library;   /* NULL: the default for the device kind */
    const char *blaslt_library;   /* NULL: the default for the device kind */
} bertc_context_options;

/* The defaults: CUDA device 0, capture at create, 4 MiB workspace, no timing. */
void bertc_context_options_init(bertc_context_options *opt);

typedef struct bertc_context bertc_context;

/* Creates a context on a device; opt may be NULL (defaults).  Takes a
 * reference to the plan.  On failure *out is NULL, err holds why, and
 * nothing is left allocated on the host or the device. */
bertc_status bertc_context_create(bertc_plan *plan, const bertc_context_options *opt, bertc_context **out,
                                  char *err, size_t err_cap);
/* Frees everything the context holds (and the device's shared state with
 * its last context).  NULL is allowed. */
void bertc_context_destroy(bertc_context *ctx);

/* Message of the context's most recent failure ("" if none). */
const char *bertc_context_error(const bertc_context *ctx);
/* "sm_86", "emu", ...: the kernel image the context runs, and its kind ("cubin", "ptx", "emu"). */
const char *bertc_context_image_arch(const bertc_context *ctx);
const char *bertc_context_image_kind(const bertc_context *ctx);

/* ---------------------------------------------------------------- requests */

typedef struct bertc_request {
    const int32_t *input_ids;       /* [len], each in [0, vocab_size) */
    const int32_t *token_type_ids;  /* [len] or NULL: the model's default (0) */
    const int32_t *attention_mask;  /* [len] of 0/1 or NULL: all ones */
    int64_t len;                    /* 1 .. the longest bucket */
} bertc_request;

/* Runs one request: one CUDA Graph launch, then waits for it.  The outputs
 * stay in the context until the next request. */
bertc_status bertc_infer(bertc_context *ctx, const bertc_request *req);

/* Copies output `output` of the last request as float32 into dst: len * cols
 * values for a per-token output, cols otherwise; `count` must be that. */
bertc_status bertc_output_read(bertc_context *ctx, int output, float *dst, size_t count);

/* With options.timing: device time of the last request's graph, from CUDA
 * events recorded around its launch. */
bertc_status bertc_context_last_device_ms(bertc_context *ctx, float *ms);

/* -------------------------------------------------------------------- text */

/*
 * Text to token ids with the plan's own WordPiece tokenizer (vocabulary and
 * settings travel inside the plan), identical to Hugging Face's
 * BertTokenizerFast: [CLS] text [SEP] (pair [SEP]), token types 0 then 1,
 * 'longest_first' truncation.  An encoding holds its buffers between calls,
 * so encoding into the same one again allocates nothing once it has grown;
 * use one per thread.  The plan's tokenizer is built on first use and is
 * shared read-only.
 */
typedef struct bertc_encoding bertc_encoding;

/* 1 if the plan carries a tokenizer (its model had a vocab.txt). */
int bertc_plan_has_tokenizer(const bertc_plan *plan);

bertc_encoding *bertc_encoding_create(void);   /* NULL: out of memory */
void bertc_encoding_free(bertc_encoding *enc);  /* NULL is allowed */

/* Encodes UTF-8 `text` (NUL-terminated) and `pair` (NULL or "": none).
 * max_len > 0 truncates to that many tokens (specials included); 0 uses the
 * model's maximum length, capped at the plan's longest bucket.  Invalid
 * UTF-8 is BERTC_STATUS_BAD_REQUEST naming the byte offset. */
bertc_status bertc_encode(bertc_plan *plan, bertc_encoding *enc, const char *text, const char *pair, int64_t max_len,
                          char *err, size_t err_cap);
int64_t bertc_encoding_len(const bertc_encoding *enc);
const int32_t *bertc_encoding_ids(const bertc_encoding *enc);        /* [len] */
const int32_t *bertc_encoding_type_ids(const bertc_encoding *enc);   /* [len] */
const char *bertc_encoding_token(const bertc_encoding *enc, int64_t i); /* "[CLS]", "hello", "##s", ... */
int bertc_encoding_truncated(const bertc_encoding *enc);             /* 1 if tokens were dropped */

#ifdef __cplusplus
}
#endif

#endif
