/*
 * cli_run_batch — `bertc run PLAN --ids-file F` (several lines) and `bertc
 * run PLAN --text-file F`: many inputs, one a line, through the packed
 * batch API.
 *
 * The inputs are run as packed batches (bertc_infer_batch) when the plan
 * has token buckets — as few as fit: the lines are taken in order and a
 * batch is cut where the next line would pass bertc_plan_max_batch or the
 * largest token bucket — and one by one (bertc_infer) when it has none, so
 * the command works on every plan and its output does not depend on which.
 * That is the point of writing the outputs the way the packed API reads
 * them: `--output OUT.npy` holds the model's first output, per-token ones
 * packed as [total tokens, cols] in input order (no padding: request i's
 * rows start at the sum of the earlier lengths), per-request ones (pooled
 * rows, sentence embeddings, logits) as [n, cols]; `--pooled-output` the
 * same for pooler_output.  Without an output file a line per input and a
 * summary of each output go to stdout.
 *
 * An --ids-file line is whitespace- or comma-separated ids (the mask all
 * ones, no token types); a --text-file line is one text for the plan's
 * tokenizer (bertc_encode_batch, on every core; --max-len truncates).
 * Blank lines are skipped.  A bad line is an error naming the file and the
 * line, before anything runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fileutil.h"
#include "npy.h"

static const char USAGE_RUN_BATCH[] =
    "usage: bertc run PLAN (--ids-file F | --text-file F) [--device cuda|emu] [--max-len N]\n"
    "                 [--output OUT.npy] [--pooled-output P.npy] [--expect-sha256 HEX] [--unpacked]\n"
    "\n"
    "Runs one input per non-blank line of F (token ids, or text through the\n"
    "plan's tokenizer; lines of only spaces and tabs are skipped, so input i\n"
    "is the i-th non-blank line) as packed batches when the plan has token buckets (bertc\n"
    "compile --batch-tokens), else (or with --unpacked) one by one. --output writes the model's first\n"
    "output as float32 .npy, per-token outputs packed [total tokens, cols] in\n"
    "input order, the others [n, cols]; --pooled-output writes pooler_output [n,\n"
    "hidden]. Without them, a line per input and a summary of every output.\n";

typedef struct rb_args {
    const char *file, *device, *ids_file, *text_file, *out, *pooled_out, *pin;
    long max_len;
    int unpacked;              /* one request per launch even with token buckets */
} rb_args;

/* The inputs: n requests whose arrays point into ids/encodings here. */
typedef struct rb_inputs {
    size_t n;
    bertc_request *rq;
    int32_t **ids;             /* --ids-file: each line's ids */
    bertc_encoding **enc;      /* --text-file */
    char *text;                /* the file */
    int64_t tokens;
} rb_inputs;

/* The outputs of every request, assembled as the packed API reads them. */
typedef struct rb_outputs {
    int count;
    float **data;              /* [count] */
    int64_t *rows, *cols;
} rb_outputs;

static int rb_read_args(int argc, char **argv, rb_args *a) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], **slot = NULL;
        if (cli_is_help(arg)) {
            fputs(USAGE_RUN_BATCH, stdout);
            return -1;
        }
        if (!strcmp(arg, "--device")) slot = &a->device;
        else if (!strcmp(arg, "--ids-file")) slot = &a->ids_file;
        else if (!strcmp(arg, "--text-file")) slot = &a->text_file;
        else if (!strcmp(arg, "--output")) slot = &a->out;
        else if (!strcmp(arg, "--pooled-output")) slot = &a->pooled_out;
        else if (!strcmp(arg, "--expect-sha256")) slot = &a->pin;
        else if (!strcmp(arg, "--unpacked")) {
            a->unpacked = 1;
            continue;
        } else if (!strcmp(arg, "--max-len")) {
            if (++i >= argc || cli_parse_count(argv[i], 1, &a->max_len))
                return cli_usage_error(USAGE_RUN_BATCH, "--max-len needs a positive count%s", "");
            continue;
        } else if (arg[0] == '-' && arg[1])
            return cli_usage_error(USAGE_RUN_BATCH, "run: '%s' does not combine with --ids-file/--text-file lines", arg);
        else if (!a->file) {
            a->file = arg;
            continue;
        } else
            return cli_usage_error(USAGE_RUN_BATCH, "run: unexpected argument '%s'", arg);
        if (++i >= argc) return cli_usage_error(USAGE_RUN_BATCH, "%s needs a value", arg);
        *slot = argv[i];
    }
    if (!a->file) return cli_usage_error(USAGE_RUN_BATCH, "run: missing PLAN%s", "");
    if (!a->ids_file == !a->text_file)
        return cli_usage_error(USAGE_RUN_BATCH, "run: give exactly one of --ids-file and --text-file%s", "");
    if (a->max_len && !a->text_file) return cli_usage_error(USAGE_RUN_BATCH, "run: --max-len needs --text-file%s", "");
    return 0;
}

/* The non-blank lines of text, NUL-terminated in place; their count. */
static size_t rb_split_lines(char *text, char **lines, size_t cap) {
    size_t n = 0;
    for (char *p = text; *p;) {
        char *end = strchr(p, '\n');
        if (end) *end = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r') p[--len] = '\0';
        if (strspn(p, " \t") < len) {
            if (lines && n < cap) lines[n] = p;
            n++;
        }
        if (!end) break;
        p = end + 1;
    }
    return n;
}

/* Reads the file and splits it into lines (lines[] freed by the caller). */
static int rb_read_lines(const char *path, rb_inputs *in, char ***lines, diag *d) {
    size_t len;
    if (!(in->text = file_read_all(path, &len, (size_t)256 << 20, d))) return -1;
    if (memchr(in->text, 0, len))
        return diag_set(d, DIAG_CODE_INPUT, "%s: byte %zu is a NUL (expected lines of text)", path,
                        (size_t)((char *)memchr(in->text, 0, len) - in->text));
    char *copy = strdup(in->text);
    size_t n = copy ? rb_split_lines(copy, NULL, 0) : 0;
    free(copy);
    if (n == 0) return diag_set(d, DIAG_CODE_INPUT, "%s: no input lines (expected one input per line)", path);
    *lines = calloc(n, sizeof **lines);
    in->rq = calloc(n, sizeof *in->rq);
    if (!*lines || !in->rq) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    in->n = rb_split_lines(in->text, *lines, n);
    return 0;
}

static int rb_parse_ids(const char *path, char **lines, rb_inputs *in, diag *d) {
    if (!(in->ids = calloc(in->n, sizeof *in->ids))) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (size_t i = 0; i < in->n; i++) {
        char what[600];
        snprintf(what, sizeof what, "%s line %zu", path, i + 1);
        int64_t count = 0;
        if (cli_parse_ints(what, lines[i], &in->ids[i], &count, d)) return -1;
        in->rq[i] = (bertc_request){in->ids[i], NULL, NULL, count};
        in->tokens += count;
    }
    return 0;
}

static int rb_encode(bertc_plan *pl, const rb_args *a, char **lines, rb_inputs *in, diag *d) {
    if (!bertc_plan_has_tokenizer(pl))
        return diag_set(d, DIAG_CODE_INPUT, "%s has no tokenizer (compile it from a model directory with one, or use "
                        "--ids-file)", a->file);
    if (!(in->enc = calloc(in->n, sizeof *in->enc))) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (size_t i = 0; i < in->n; i++)
        if (!(in->enc[i] = bertc_encoding_create())) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    bertc_batch_options opt;
    bertc_batch_options_init(&opt);
    opt.max_len = a->max_len;
    char err[1024];
    bertc_status st = bertc_encode_batch(pl, in->enc, (const char *const *)lines, NULL, in->n, &opt, err, sizeof err);
    if (st != BERTC_STATUS_OK)
        return diag_set(d, DIAG_CODE_INPUT, "%s: %s (text i is the non-blank line i + 1)", a->text_file, err);
    for (size_t i = 0; i < in->n; i++) {
        in->rq[i] = (bertc_request){bertc_encoding_ids(in->enc[i]), bertc_encoding_type_ids(in->enc[i]), NULL,
                                    bertc_encoding_len(in->enc[i])};
        in->tokens += in->rq[i].len;
    }
    return 0;
}

static void rb_inputs_free(rb_inputs *in) {
    for (size_t i = 0; in->ids && i < in->n; i++) free(in->ids[i]);
    for (size_t i = 0; in->enc && i < in->n; i++) bertc_encoding_free(in->enc[i]);
    free(in->ids);
    free(in->enc);
    free(in->rq);
    free(in->text);
    memset(in, 0, sizeof *in);
}

static int rb_outputs_init(bertc_plan *pl, const rb_inputs *in, rb_outputs *o, diag *d) {
    o->count = bertc_plan_output_count(pl);
    o->data = calloc((size_t)o->count, sizeof *o->data);
    o->rows = calloc((size_t)o->count, sizeof *o->rows);
    o->cols = calloc((size_t)o->count, sizeof *o->cols);
    if (!o->data || !o->rows || !o->cols) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (int k = 0; k < o->count; k++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, k, &info);
        o->rows[k] = info.per_token ? in->tokens : (int64_t)in->n;
        o->cols[k] = info.cols;
        if (!(o->data[k] = malloc((size_t)(o->rows[k] * o->cols[k]) * sizeof(float) + 1)))
            return diag_set(d, DIAG_CODE_INTERNAL, "out of memory for output %s", info.name);
    }
    return 0;
}

static void rb_outputs_free(rb_outputs *o) {
    for (int k = 0; o->data && k < o->count; k++) free(o->data[k]);
    free(o->data);
    free(o->rows);
    free(o->cols);
    memset(o, 0, sizeof *o);
}

/* Requests [first, first + n) ran (a batch of them, or the last alone);
 * their rows go to row `row` (per token) and `first` (per request). */
static int rb_collect(bertc_context *ctx, const bertc_plan *pl, int batch, const rb_inputs *in, size_t first,
                      size_t n, int64_t row, rb_outputs *o) {
    for (int k = 0; k < o->count; k++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, k, &info);
        int64_t r = info.per_token ? row : (int64_t)first, rows = 0;
        for (size_t i = 0; i < n; i++) rows += info.per_token ? in->rq[first + i].len : 1;
        float *dst = o->data[k] + r * o->cols[k];
        size_t count = (size_t)(rows * o->cols[k]);
        bertc_status st = batch ? bertc_batch_output_read_all(ctx, k, dst, count) : bertc_output_read(ctx, k, dst, count);
        if (st != BERTC_STATUS_OK) return cli_runtime_fail(st, bertc_context_error(ctx));
    }
    return 0;
}

/* Runs every request: packed batches cut to fit, or one by one. */
static int rb_run(bertc_context *ctx, const bertc_plan *pl, int unpacked, const rb_inputs *in, rb_outputs *o,
                  int *batches) {
    size_t max_n = unpacked ? 0 : (size_t)bertc_plan_max_batch(pl);
    int64_t max_tokens = bertc_plan_max_batch_tokens(pl), row = 0;
    *batches = 0;
    for (size_t first = 0; first < in->n;) {
        size_t n = 1;
        int64_t tokens = in->rq[first].len;
        while (max_n && first + n < in->n && n < max_n && tokens + in->rq[first + n].len <= max_tokens)
            tokens += in->rq[first + n++].len;
        int batch = max_n > 0 && tokens <= max_tokens;
        bertc_status st = batch ? bertc_infer_batch(ctx, in->rq + first, n) : bertc_infer(ctx, &in->rq[first]);
        if (st != BERTC_STATUS_OK) {
            if (batch)
                fprintf(stderr, "bertc: error: inputs %zu..%zu (one packed batch; its request i is input %zu + i): %s\n",
                        first + 1, first + n, first + 1, bertc_context_error(ctx));
            else
                fprintf(stderr, "bertc: error: input %zu: %s\n", first + 1, bertc_context_error(ctx));
            return cli_status_exit(st);
        }
        if (rb_collect(ctx, pl, batch, in, first, n, row, o)) return DIAG_CODE_INTERNAL;
        *batches += 1;
        row += tokens;
        first += n;
    }
    return 0;
}

static int rb_write(const rb_args *a, bertc_plan *pl, const rb_inputs *in, const rb_outputs *o, file_atomic *fa,
                    int batches, diag *d) {
    int pool = bertc_plan_output_index(pl, "pooler_output");
    if (a->pooled_out && pool < 0)
        return diag_set(d, DIAG_CODE_INPUT, "%s has no output 'pooler_output' (the model has no pooler)", a->file);
    int64_t s0[2] = {o->rows[0], o->cols[0]}, s1[2] = {pool >= 0 ? o->rows[pool] : 0, pool >= 0 ? o->cols[pool] : 0};
    int ok = (!a->out || npy_write_f32_to(&fa[0], o->data[0], 2, s0) == 0) &&
             (!a->pooled_out || npy_write_f32_to(&fa[1], o->data[pool], 2, s1) == 0);
    if (file_atomic_commit_all(fa, 2, ok, d)) return -1;
    fprintf(stderr, "bertc: %zu inputs, %lld tokens in %d launches (%s)\n", in->n, (long long)in->tokens, batches,
            a->unpacked                ? "one request each: --unpacked"
            : bertc_plan_max_batch(pl) ? "packed batches"
                                       : "one request each: the plan has no token buckets");
    if (a->out || a->pooled_out) return 0;
    int64_t row = 0;
    for (size_t i = 0; i < in->n; i++) {
        printf("input %zu: %lld tokens, rows %lld..%lld\n", i + 1, (long long)in->rq[i].len, (long long)row,
               (long long)(row + in->rq[i].len - 1));
        row += in->rq[i].len;
    }
    for (int k = 0; k < o->count; k++) {
        bertc_output_info info;
        bertc_plan_output_info(pl, k, &info);
        printf("%s [%lld, %lld]\n", info.name, (long long)o->rows[k], (long long)o->cols[k]);
    }
    return 0;
}

/* Opens the plan and the context, reads the inputs, runs and writes. */
static int rb_main(const rb_args *a, bertc_device_kind kind, file_atomic *fa, diag *d) {
    bertc_plan *pl = NULL;
    int rc = cli_plan_open(a->file, a->pin, &pl);
    if (rc) return rc;
    rb_inputs in;
    memset(&in, 0, sizeof in);
    rb_outputs o;
    memset(&o, 0, sizeof o);
    char **lines = NULL, err[1024];
    const char *path = a->ids_file ? a->ids_file : a->text_file;
    if (rb_read_lines(path, &in, &lines, d) ||
        (a->ids_file ? rb_parse_ids(path, lines, &in, d) : rb_encode(pl, a, lines, &in, d)) ||
        rb_outputs_init(pl, &in, &o, d))
        rc = cli_fail(d);
    bertc_context *ctx = NULL;
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = kind;
    opt.capture_on_first_use = 1; /* only the buckets the inputs use */
    bertc_status st = rc ? BERTC_STATUS_OK : bertc_context_create(pl, &opt, &ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) rc = cli_runtime_fail(st, err);
    int batches = 0;
    if (!rc) rc = rb_run(ctx, pl, a->unpacked, &in, &o, &batches);
    if (!rc && rb_write(a, pl, &in, &o, fa, batches, d)) rc = cli_fail(d);
    bertc_context_destroy(ctx);
    rb_outputs_free(&o);
    rb_inputs_free(&in);
    free(lines);
    bertc_plan_close(pl);
    return rc;
}

int cmd_run_batch(int argc, char **argv) {
    rb_args a;
    memset(&a, 0, sizeof a);
    int rc = rb_read_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    bertc_device_kind kind = BERTC_DEVICE_CUDA;
    if (a.device && cli_parse_device(a.device, &kind))
        return cli_usage_error(USAGE_RUN_BATCH, "run: --ids-file/--text-file lines need --device cuda or emu, not '%s'",
                               a.device);
    if ((rc = cli_require_plan(a.file, "inputs by the line run on plans"))) return rc;
    diag d;
    diag_init(&d);
    file_atomic fa[2];
    memset(fa, 0, sizeof fa);
    const char *outs[2] = {a.out, a.pooled_out}, *what[2] = {"--output", "--pooled-output"};
    const char *ins[2] = {a.file, a.ids_file ? a.ids_file : a.text_file};
    if (file_outputs_check(outs, what, 2, ins, 2, &d)) return cli_fail(&d);
    for (int i = 0; i < 2; i++)
        if (outs[i] && file_atomic_open(&fa[i], outs[i], &d)) {
            rc = cli_fail(&d);
            break;
        }
    if (!rc) rc = rb_main(&a, kind, fa, &d);
    for (int i = 0; i < 2; i++)
        if (fa[i].tmp_path) file_atomic_abort(&fa[i]);
    return rc;
}

int cli_run_is_batch(int argc, char **argv) {
    const char *ids_file = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--text-file")) return 1;
        if (!strcmp(argv[i], "--ids-file") && i + 1 < argc) ids_file = argv[i + 1];
    }
    if (!ids_file) return 0;
    /* one line is one request as before (its outputs unbatched); more are a batch */
    diag d;
    diag_init(&d);
    size_t len;
    char *text = file_read_all(ids_file, &len, (size_t)256 << 20, &d);
    int lines = text && !memchr(text, 0, len) ? (int)rb_split_lines(text, NULL, 0) : 0;
    free(text);
    return lines > 1;
}
