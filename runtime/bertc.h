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
 * and a request is exactly one cuGraphLaunch.  A plan with token buckets
 * also runs many requests of mixed lengths as one packed batch, one launch
 * for all of them (bertc_infer_batch).
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
/* Token buckets (packed batches, bertc_infer_batch), ascending by total
 * tokens; 0 when the plan was compiled without --batch-tokens. */
int bertc_plan_token_bucket_count(const bertc_plan *plan);
int bertc_plan_token_bucket_tokens(const bertc_plan *plan, int bucket);
/* The requests a token bucket takes at most (min(--max-batch, its tokens)). */
int bertc_plan_token_bucket_max_batch(const bertc_plan *plan, int bucket);
/* The largest batch bertc_infer_batch takes: requests (0: no token buckets)
 * and tokens (the largest token bucket's). */
int bertc_plan_max_batch(const bertc_plan *plan);
int64_t bertc_plan_max_batch_tokens(const bertc_plan *plan);

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
    int pdl;                      /* 1 (default): where the GPU is of compute capability 9.0
                                     or newer and runs an image built for sm_90 or newer,
                                     each of bertc's kernels that follows another starts
                                     early by programmatic dependent launch; 0: never */
    int time_algorithms;          /* 1 (default): at create, time cuBLASLt's candidates
                                     (up to 8) for each GEMM and keep the fastest (the
                                     plan's contexts on a device share the choice,
                                     docs/runtime.md); 0: keep the heuristic's first */
    const char *outputs;          /* NULL (default): copy every output back after each
                                     request; else a comma-separated list of output
                                     names, the only ones copied (and readable) */
    const char *driver_library;   /* NULL: the default for the device kind */
    const char *blaslt_library;   /* NULL: the default for the device kind */
} bertc_context_options;

/* The defaults: CUDA device 0, capture at create, 4 MiB workspace, no
 * request timing, programmatic dependent launch where possible, cuBLASLt
 * algorithms timed, every output copied back. */
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
/* 1 if the context's graphs launch each of bertc's kernels that follows
 * another programmatically (options.pdl, a 9.0+ GPU, an sm_90+ image). */
int bertc_context_programmatic_launch(const bertc_context *ctx);

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
 * values for a per-token output, cols otherwise; `count` must be that.  Only
 * the outputs the context copies back (options.outputs) can be read; of a
 * per-token output only the request's len rows cross the bus. */
bertc_status bertc_output_read(bertc_context *ctx, int output, float *dst, size_t count);

/*
 * Packed batches.  A plan compiled with --batch-tokens has token buckets:
 * bertc_infer_batch runs n requests of any lengths as one packed batch,
 * their tokens end to end with no padding between them, in the smallest
 * token bucket that holds their total tokens and their number — one CUDA
 * Graph launch for the whole batch, then a wait.  Each request's outputs
 * equal the outputs it gets alone from bertc_infer (docs/runtime.md says
 * where bit for bit).  A batch of more requests than bertc_plan_max_batch
 * or more tokens than bertc_plan_max_batch_tokens is BERTC_STATUS_BAD_REQUEST
 * saying which (the caller splits it); so is any request that bertc_infer
 * would refuse ("request 3: input_ids[7] = ..."), and then nothing runs.
 * Without token buckets it is BERTC_STATUS_INVALID_ARGUMENT (use
 * bertc_infer).  The outputs stay in the context until its next request.
 */
bertc_status bertc_infer_batch(bertc_context *ctx, const bertc_request *requests, size_t n);

/* Output `output` of request `request` (< n) of the last batch as float32:
 * requests[request].len * cols values for a per-token output, cols
 * otherwise; `count` must be that. */
bertc_status bertc_batch_output_read(bertc_context *ctx, int output, size_t request, float *dst, size_t count);
/* The same, the output named `name` (bertc_plan_output_index). */
bertc_status bertc_batch_output_read_named(bertc_context *ctx, const char *name, size_t request, float *dst,
                                           size_t count);
/* The whole output of the last batch: [total tokens, cols], the requests'
 * rows in order, for a per-token output; [n, cols] otherwise. */
bertc_status bertc_batch_output_read_all(bertc_context *ctx, int output, float *dst, size_t count);
/* The last batch's requests and total tokens (0 and 0 if the last call
 * was not a successful batch). */
size_t bertc_batch_count(const bertc_context *ctx);
int64_t bertc_batch_tokens(const bertc_context *ctx);

/* With options.timing: device time of the last request's graph, from CUDA
 * events recorded around its launch. */
bertc_status bertc_context_last_device_ms(bertc_context *ctx, float *ms);

/* -------------------------------------------------------------------- text */

/*
 * Text to token ids with the plan's own tokenizer (its description travels
 * inside the plan; docs/tokenizer.md): WordPiece (BERT), byte-level BPE
 * (RoBERTa) or SentencePiece Unigram (XLM-RoBERTa), identical to Hugging
 * Face's fast tokenizers (AutoTokenizer): the model's special tokens around
 * the text (and pair), its token types, 'longest_first' truncation, and each
 * token's byte span in the text it came from.  An encoding holds its
 * buffers between calls, so encoding into the same one again allocates
 * nothing once it has grown; use one per thread.  The plan's tokenizer is
 * built on first use and is shared read-only.
 */
typedef struct bertc_encoding bertc_encoding;

/* 1 if the plan carries a tokenizer (its model directory had tokenizer files). */
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
const char *bertc_encoding_token(const bertc_encoding *enc, int64_t i); /* "[CLS]", "hello", "##s", "Ġworld", ... */
int bertc_encoding_truncated(const bertc_encoding *enc);             /* 1 if tokens were dropped */
/* [2 * len]: token i covers bytes [offsets[2i], offsets[2i+1]) of the text
 * (or of the pair: see sequence_ids); the template's special tokens have
 * (0, 0).  As Hugging Face's return_offsets_mapping, in bytes. */
const int64_t *bertc_encoding_offsets(const bertc_encoding *enc);
/* [len]: 0 for a token of the text, 1 of the pair, -1 for a special token of the template. */
const int32_t *bertc_encoding_sequence_ids(const bertc_encoding *enc);

/* Batched encoding, on several threads. */
typedef struct bertc_batch_options {
    int threads;                    /* 0: one per online CPU (at most 64); 1: the calling thread only */
    int64_t max_len;                /* as bertc_encode's, for every text */
} bertc_batch_options;

void bertc_batch_options_init(bertc_batch_options *opt);   /* threads 0, max_len 0 */

/*
 * Encodes texts[i] (and pairs[i] when pairs is not NULL; a NULL or "" entry
 * is no pair) into encs[i], for i < n, spreading the texts over threads.
 * Each encoding is as bertc_encode would make it, whatever the thread
 * count.  On failure the status and message are those of the lowest failing
 * index ("text 12: ..."); the other encodings are complete and the failed
 * ones empty (length 0).  opt may be NULL (defaults).
 */
bertc_status bertc_encode_batch(bertc_plan *plan, bertc_encoding *const *encs, const char *const *texts,
                                const char *const *pairs, size_t n, const bertc_batch_options *opt, char *err,
                                size_t err_cap);

#ifdef __cplusplus
}
#endif

#endif
