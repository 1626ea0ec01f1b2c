/*
 * bertc — the command line.  Each command is a short pipeline over the
 * library's stages, so this file reads as the product's table of contents:
 *
 *   import   Hugging Face directory  -> hf_import  -> model YAML
 *   compile  model YAML -> model_load -> passes_run -> lower_bucket (per
 *            bucket) -> kernel_source -> kbuild_compile (per arch) -> plan_write
 *   inspect  plan -> plan_read -> text or JSON
 *   run      plan -> bertc_plan_open -> bertc_context_create (device table:
 *            CUDA or the emulated device) -> bertc_infer -> .npy / stdout;
 *            model YAML -> model_load -> ref_run -> .npy / stdout
 *   bench    plan -> context with CUDA-event timing -> percentiles per bucket
 *
 * Conventions (docs/cli.md): results on stdout or in files, messages on
 * stderr, exit status 0 ok, 1 usage, 2 bad input, 3 internal or device error.
 * Outputs are written atomically, so a failed command leaves none behind.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bertc.h"
#include "diag.h"
#include "emu_build.h"
#include "fileutil.h"
#include "hf_import.h"
#include "kbuild.h"
#include "kernels.h"
#include "lower.h"
#include "model.h"
#include "npy.h"
#include "passes.h"
#include "plan.h"
#include "ref.h"

#include <time.h>
#include <unistd.h>

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

static const char USAGE[] =
    "usage: bertc COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  import HF_DIR -o MODEL.yaml     Hugging Face BERT checkpoint -> graph description\n"
    "  compile MODEL.yaml -o PLAN      fuse, generate and compile kernels, write a plan\n"
    "  inspect PLAN                    buckets, steps, launches, FLOPs, bytes, kernels\n"
    "  run PLAN|MODEL.yaml ...         run one request (GPU, emulated device, or reference)\n"
    "  bench PLAN                      latency percentiles per bucket\n"
    "  tokenize PLAN --text ...        tokens and ids from the plan's tokenizer\n"
    "\n"
    "options:\n"
    "  -h, --help       this help (bertc COMMAND --help for a command's)\n"
    "  --version        print the version\n"
    "\n"
    "exit status: 0 ok, 1 usage error, 2 bad input, 3 internal or device error\n";

static const char USAGE_IMPORT[] =
    "usage: bertc import HF_DIR -o MODEL.yaml\n"
    "\n"
    "Reads HF_DIR/config.json, HF_DIR/model.safetensors and, when present,\n"
    "HF_DIR/vocab.txt and HF_DIR/tokenizer_config.json of a BERT checkpoint\n"
    "(model_type bert) and writes the op-level graph description\n"
    "(docs/model-yaml.md). Weights are not copied: the YAML refers to the\n"
    "safetensors file by a path relative to the YAML.\n";

static const char USAGE_RUN[] =
    "usage: bertc run PLAN [--device cuda|emu] (--ids \"101 7592 102\" | --ids-file F)\n"
    "                 [--types \"0 0 0\"] [--mask \"1 1 1\"]\n"
    "                 [--output OUT.npy] [--pooled-output P.npy]\n"
    "       bertc run MODEL.yaml [--device ref] ...\n"
    "       bertc run PLAN --text \"...\" ...   (text in: bertc run --text x --help)\n"
    "\n"
    "Runs one request. A compiled plan runs on a GPU (--device cuda, the\n"
    "default) or on the emulated device (--device emu: the same driver and\n"
    "cuBLASLt calls executed on the CPU; the plan needs --arch ...,emu). A\n"
    "model YAML runs on the reference executor (--device ref: float32, double\n"
    "accumulation). Ids, types and mask are whitespace- or comma-separated\n"
    "integers of equal count; mask is Hugging Face's attention_mask (1 = attend,\n"
    "0 = masked). --output writes last_hidden_state [len, hidden] as float32\n"
    ".npy, --pooled-output writes pooler_output [hidden]; without them a\n"
    "summary is printed on stdout.\n";

static const char USAGE_BENCH[] =
    "usage: bertc bench PLAN [--device cuda|emu] [--iters N] [--warmup N] [--seq-len L]\n"
    "\n"
    "Times requests of random ids, per bucket (at the bucket's full length) or\n"
    "at length L only: after the warm-up, each of N requests is timed on the\n"
    "device with CUDA events around its graph launch, and on the host around\n"
    "bertc_infer. Prints p50/p90/p99 and jitter (p99 - p50) in microseconds.\n"
    "Defaults: --iters 200 (20 on the emulated device), --warmup 20 (2).\n";

static int fail(const diag *d) {
    fprintf(stderr, "bertc: error: %s\n", d->text);
    return d->code ? (int)d->code : DIAG_CODE_INTERNAL;
}

static int usage_error(const char *usage, const char *fmt, const char *arg) {
    fprintf(stderr, "bertc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return DIAG_CODE_USAGE;
}

static int is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

/* ---------------------------------------------------------------- import */

static int cmd_import(int argc, char **argv) {
    const char *dir = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) { fputs(USAGE_IMPORT, stdout); return 0; }
        if (!strcmp(argv[i], "-o")) {
            if (++i >= argc) return usage_error(USAGE_IMPORT, "%s needs a file name", "-o");
            out = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error(USAGE_IMPORT, "import: unknown option '%s'", argv[i]);
        } else if (!dir) {
            dir = argv[i];
        } else {
            return usage_error(USAGE_IMPORT, "import: unexpected argument '%s'", argv[i]);
        }
    }
    if (!dir) return usage_error(USAGE_IMPORT, "import: missing HF_DIR%s", "");
    if (!out) return usage_error(USAGE_IMPORT, "import: missing -o MODEL.yaml%s", "");
    diag d;
    diag_init(&d);
    if (hf_import_run(dir, out, &d)) return fail(&d);
    fprintf(stderr, "bertc: wrote %s\n", out);
    return 0;
}

/* ------------------------------------------------------------------- run */

/* Parse whitespace/comma separated integers; *count receives how many. */
static int parse_ints(const char *what, const char *text, int32_t **out, int64_t *count, diag *d) {
    size_t cap = 64, n = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX ||
            (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != ',')) {
            int len = 0;
            while (p[len] && p[len] != ' ' && p[len] != ',' && p[len] != '\n' && len < 40) len++;
            free(v);
            return diag_set(d, DIAG_CODE_INPUT, "%s: item %zu ('%.*s') is not a 32-bit integer", what, n + 1, len, p);
        }
        if (n == cap) {
            int32_t *t = realloc(v, (cap *= 2) * sizeof *v);
            if (!t) { free(v); return diag_set(d, DIAG_CODE_INTERNAL, "out of memory"); }
            v = t;
        }
        v[n++] = (int32_t)x;
        p = end;
    }
    *out = v;
    *count = (int64_t)n;
    return 0;
}

static void print_summary(const ref_tensor *t) {
    printf("%s [", t->name);
    for (int k = 0; k < t->ndim; k++) printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
    printf("]\n");
    int64_t rows = t->ndim > 1 ? t->shape[0] : 1, cols = t->ndim > 1 ? t->shape[t->ndim - 1] : t->shape[0];
    for (int64_t r = 0; r < rows; r++) {
        printf("  %4lld:", (long long)r);
        for (int64_t c = 0; c < cols && c < 6; c++) printf(" %+.6f", t->data[r * cols + c]);
        printf("%s\n", cols > 6 ? " ..." : "");
        if (r == 7 && rows > 9) {
            printf("  ... (%lld more rows)\n", (long long)(rows - 8));
            break;
        }
    }
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1 if the file starts with the plan magic (a compiled plan, not a YAML). */
static int file_is_plan(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char m[8];
    int yes = fread(m, 1, 8, f) == 8 && !memcmp(m, PLAN_MAGIC, 8);
    fclose(f);
    return yes;
}

/* Exit status for a runtime status (docs/cli.md). */
static int status_exit(bertc_status st) {
    switch (st) {
    case BERTC_STATUS_OK: return 0;
    case BERTC_STATUS_BAD_PLAN:
    case BERTC_STATUS_BAD_REQUEST: return DIAG_CODE_INPUT;
    default: return DIAG_CODE_INTERNAL;
    }
}

static int runtime_fail(bertc_status st, const char *msg) {
    fprintf(stderr, "bertc: error: %s\n", msg);
    return status_exit(st);
}

static int parse_device(const char *s, bertc_device_kind *kind) {
    if (!strcmp(s, "cuda")) *kind = BERTC_DEVICE_CUDA;
    else if (!strcmp(s, "emu")) *kind = BERTC_DEVICE_EMULATED;
    else return -1;
    return 0;
}

/* The outputs `run` knows by name, in this order. */
#define RUN_NOUT 3
static const char *const run_output_names[RUN_NOUT] = {"last_hidden_state", "pooler_output", "sentence_embedding"};

typedef struct run_outputs {
    ref_result res;        /* reference executor */
    float *data[RUN_NOUT]; /* NULL where the model lacks the output */
    int64_t shape[RUN_NOUT][2];
    int ndim[RUN_NOUT];
} run_outputs;

/* Runs the request on an open plan through the runtime library; fills o->data. */
static int run_plan(bertc_plan *pl, bertc_device_kind kind, const ref_request *req, run_outputs *o) {
    char err[1024];
    bertc_context *ctx = NULL;
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = kind;
    opt.capture_on_first_use = 1;   /* one request: capture only its bucket */
    bertc_status st = bertc_context_create(pl, &opt, &ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) return runtime_fail(st, err);
    bertc_request rq = {req->input_ids, req->token_type_ids, req->attention_mask, req->len};
    int rc = 0;
    st = bertc_infer(ctx, &rq);
    if (st != BERTC_STATUS_OK) rc = runtime_fail(st, bertc_context_error(ctx));
    for (int i = 0; i < RUN_NOUT && !rc; i++) {
        int idx = bertc_plan_output_index(pl, run_output_names[i]);
        if (idx < 0) continue;
        bertc_output_info info;
        bertc_plan_output_info(pl, idx, &info);
        int64_t rows = info.per_token ? req->len : 1;
        o->data[i] = malloc((size_t)(rows * info.cols) * sizeof(float));
        if (!o->data[i]) { rc = runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory"); break; }
        st = bertc_output_read(ctx, idx, o->data[i], (size_t)(rows * info.cols));
        if (st != BERTC_STATUS_OK) { rc = runtime_fail(st, bertc_context_error(ctx)); break; }
        o->ndim[i] = info.per_token ? 2 : 1;
        o->shape[i][0] = info.per_token ? rows : info.cols;
        o->shape[i][1] = info.cols;
    }
    bertc_context_destroy(ctx);
    return rc;
}

/* Opens a plan and runs one request on it. */
static int run_plan_file(const char *path, bertc_device_kind kind, const ref_request *req, run_outputs *o) {
    char err[1024];
    bertc_plan *pl = NULL;
    bertc_status st = bertc_plan_open(path, &pl, err, sizeof err);
    if (st != BERTC_STATUS_OK) return runtime_fail(st, err);
    int rc = run_plan(pl, kind, req, o);
    bertc_plan_close(pl);
    return rc;
}

/* ------------------------------------------------------------ text */

static void json_str(FILE *f, const char *s);

/* Encodes --text/--text-pair with the plan's tokenizer. */
static int encode_text(bertc_plan *pl, const char *text, const char *pair, long max_len, bertc_encoding **out) {
    char err[1024];
    *out = bertc_encoding_create();
    if (!*out) return runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    bertc_status st = bertc_encode(pl, *out, text, pair, max_len, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        fprintf(stderr, "bertc: error: %s%s\n", st == BERTC_STATUS_BAD_REQUEST ? "--text: " : "", err);
        return status_exit(st);
    }
    return 0;
}

static void print_encoding(const bertc_encoding *e, int json) {
    int64_t n = bertc_encoding_len(e);
    if (json) {
        printf("\"tokens\": [");
        for (int64_t i = 0; i < n; i++) {
            printf("%s", i ? ", " : "");
            json_str(stdout, bertc_encoding_token(e, i));
        }
        printf("], \"ids\": [");
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", bertc_encoding_ids(e)[i]);
        printf("], \"type_ids\": [");
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", bertc_encoding_type_ids(e)[i]);
        printf("], \"truncated\": %s", bertc_encoding_truncated(e) ? "true" : "false");
        return;
    }
    printf("tokens:");
    for (int64_t i = 0; i < n; i++) printf(" %s", bertc_encoding_token(e, i));
    printf("\nids:");
    for (int64_t i = 0; i < n; i++) printf(" %d", bertc_encoding_ids(e)[i]);
    printf("\ntype_ids:");
    for (int64_t i = 0; i < n; i++) printf(" %d", bertc_encoding_type_ids(e)[i]);
    printf("\n%s", bertc_encoding_truncated(e) ? "(truncated)\n" : "");
}

static const char USAGE_TOKENIZE[] =
    "usage: bertc tokenize PLAN --text \"...\" [--text-pair \"...\"] [--max-len N] [--json]\n"
    "\n"
    "Tokenizes with the plan's own WordPiece tokenizer (identical to Hugging\n"
    "Face's BertTokenizerFast): prints the tokens, ids and token types.\n"
    "--max-len truncates (default: the model's maximum, capped at the plan's\n"
    "longest bucket).\n";

static int parse_count(const char *s, long lo, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1000000) return -1;
    *out = v;
    return 0;
}

static int cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL, *pair = NULL;
    long max_len = 0;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) { fputs(USAGE_TOKENIZE, stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        const char **slot = NULL;
        if (!strcmp(a, "--text")) slot = &text;
        else if (!strcmp(a, "--text-pair")) slot = &pair;
        else if (!strcmp(a, "--max-len")) {
            if (++i >= argc || parse_count(argv[i], 1, &max_len))
                return usage_error(USAGE_TOKENIZE, "--max-len needs a positive count%s", "");
            continue;
        } else if (a[0] == '-' && a[1]) return usage_error(USAGE_TOKENIZE, "tokenize: unknown option '%s'", a);
        else if (!path) { path = a; continue; }
        else return usage_error(USAGE_TOKENIZE, "tokenize: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_TOKENIZE, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!path) return usage_error(USAGE_TOKENIZE, "tokenize: missing PLAN%s", "");
    if (!text) return usage_error(USAGE_TOKENIZE, "tokenize: missing --text%s", "");
    char err[1024];
    bertc_plan *pl = NULL;
    bertc_status st = bertc_plan_open(path, &pl, err, sizeof err);
    if (st != BERTC_STATUS_OK) return runtime_fail(st, err);
    bertc_encoding *e = NULL;
    int rc = encode_text(pl, text, pair, max_len, &e);
    if (!rc) {
        if (json) printf("{");
        print_encoding(e, json);
        if (json) printf("}\n");
    }
    bertc_encoding_free(e);
    bertc_plan_close(pl);
    return rc;
}

static const char USAGE_RUN_TEXT[] =
    "usage: bertc run PLAN --text \"...\" [--text-pair \"...\"] [--device cuda|emu] [--max-len N]\n"
    "                 [--pooling cls|mean|pooler] [--normalize] [--json]\n"
    "                 [--output OUT.npy] [--embedding-output E.npy]\n"
    "\n"
    "Tokenizes the text with the plan's tokenizer, runs it, and prints the\n"
    "tokens, ids and the embedding (--json: one JSON object). The embedding is\n"
    "the plan's sentence_embedding output when the model has a pooling head\n"
    "(sentence-transformers models), else pooler_output, else the [CLS] row;\n"
    "--pooling chooses instead: cls (row 0 of last_hidden_state), mean (mean\n"
    "of its rows: every token of a text is attended), pooler (pooler_output).\n"
    "--normalize divides it by its L2 norm. --output writes last_hidden_state,\n"
    "--embedding-output the embedding, as float32 .npy.\n";

static int cmd_run_text(int argc, char **argv) {
    const char *path = NULL, *text = NULL, *pair = NULL, *device = "cuda", *pooling = NULL;
    const char *out = NULL, *emb_out = NULL;
    long max_len = 0;
    int json = 0, normalize = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) { fputs(USAGE_RUN_TEXT, stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--normalize")) { normalize = 1; continue; }
        const char **slot = NULL;
        if (!strcmp(a, "--text")) slot = &text;
        else if (!strcmp(a, "--text-pair")) slot = &pair;
        else if (!strcmp(a, "--device")) slot = &device;
        else if (!strcmp(a, "--pooling")) slot = &pooling;
        else if (!strcmp(a, "--output")) slot = &out;
        else if (!strcmp(a, "--embedding-output")) slot = &emb_out;
        else if (!strcmp(a, "--max-len")) {
            if (++i >= argc || parse_count(argv[i], 1, &max_len))
                return usage_error(USAGE_RUN_TEXT, "--max-len needs a positive count%s", "");
            continue;
        } else if (!strcmp(a, "--ids") || !strcmp(a, "--ids-file") || !strcmp(a, "--types") || !strcmp(a, "--mask") ||
                   !strcmp(a, "--pooled-output"))
            return usage_error(USAGE_RUN_TEXT, "run: %s cannot be combined with --text", a);
        else if (a[0] == '-' && a[1]) return usage_error(USAGE_RUN_TEXT, "run: unknown option '%s'", a);
        else if (!path) { path = a; continue; }
        else return usage_error(USAGE_RUN_TEXT, "run: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_RUN_TEXT, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!path) return usage_error(USAGE_RUN_TEXT, "run: missing PLAN%s", "");
    if (!text) return usage_error(USAGE_RUN_TEXT, "run: missing --text%s", "");
    bertc_device_kind kind;
    if (parse_device(device, &kind)) return usage_error(USAGE_RUN_TEXT, "run: --text needs --device cuda or emu, not '%s'", device);
    if (pooling && strcmp(pooling, "cls") && strcmp(pooling, "mean") && strcmp(pooling, "pooler"))
        return usage_error(USAGE_RUN_TEXT, "--pooling: '%s' is not one of cls, mean, pooler", pooling);
    if (!file_is_plan(path)) {
        fprintf(stderr, "bertc: error: %s is not a compiled plan (--text runs plans, whose tokenizer travels inside them)\n",
                path);
        return DIAG_CODE_INPUT;
    }
    char err[1024];
    bertc_plan *pl = NULL;
    bertc_status st = bertc_plan_open(path, &pl, err, sizeof err);
    if (st != BERTC_STATUS_OK) return runtime_fail(st, err);
    bertc_encoding *e = NULL;
    run_outputs o;
    memset(&o, 0, sizeof o);
    float *emb = NULL;
    diag d;
    diag_init(&d);
    int rc = encode_text(pl, text, pair, max_len, &e);
    if (rc) goto done;
    int64_t n = bertc_encoding_len(e), H = bertc_plan_hidden(pl);
    ref_request req = {.len = n, .input_ids = bertc_encoding_ids(e), .token_type_ids = bertc_encoding_type_ids(e)};
    if ((rc = run_plan(pl, kind, &req, &o))) goto done;
    if (!pooling) pooling = o.data[2] ? "model" : o.data[1] ? "pooler" : "cls";
    if (!strcmp(pooling, "pooler") && !o.data[1]) {
        fprintf(stderr, "bertc: error: %s has no pooler_output (the model has no pooler); use --pooling cls or mean\n", path);
        rc = DIAG_CODE_INPUT;
        goto done;
    }
    emb = calloc((size_t)H, sizeof *emb);
    if (!emb) { rc = runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory"); goto done; }
    for (int64_t c = 0; c < H; c++) {
        if (!strcmp(pooling, "model")) emb[c] = o.data[2][c];
        else if (!strcmp(pooling, "pooler")) emb[c] = o.data[1][c];
        else if (!strcmp(pooling, "cls")) emb[c] = o.data[0][c];
        else {
            double sum = 0; /* mean: a text's tokens are all attended */
            for (int64_t r = 0; r < n; r++) sum += o.data[0][r * H + c];
            emb[c] = (float)(sum / (double)n);
        }
    }
    if (normalize) {
        double ss = 0;
        for (int64_t c = 0; c < H; c++) ss += (double)emb[c] * emb[c];
        double nrm = sqrt(ss);
        if (nrm < 1e-12) nrm = 1e-12;
        for (int64_t c = 0; c < H; c++) emb[c] = (float)(emb[c] / nrm);
    }
    const char *pname = !strcmp(pooling, "model") ? "sentence_embedding" : pooling;
    if (out && npy_write_f32(out, o.data[0], 2, o.shape[0], &d)) { rc = fail(&d); goto done; }
    int64_t eshape[1] = {H};
    if (emb_out && npy_write_f32(emb_out, emb, 1, eshape, &d)) { rc = fail(&d); goto done; }
    if (json) {
        printf("{");
        print_encoding(e, 1);
        printf(", \"pooling\": \"%s\", \"normalized\": %s, \"embedding\": [", pname, normalize ? "true" : "false");
        for (int64_t c = 0; c < H; c++) printf("%s%.9g", c ? ", " : "", emb[c]);
        printf("]}\n");
    } else {
        print_encoding(e, 0);
        printf("embedding (%s%s) [%lld]:", pname, normalize ? ", L2-normalised" : "", (long long)H);
        for (int64_t c = 0; c < H && c < 8; c++) printf(" %+.6f", emb[c]);
        printf("%s\n", H > 8 ? " ..." : "");
    }
done:
    for (int i = 0; i < RUN_NOUT; i++) free(o.data[i]);
    free(emb);
    bertc_encoding_free(e);
    bertc_plan_close(pl);
    return rc;
}

static int cmd_run(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--text")) return cmd_run_text(argc, argv);
    const char *file = NULL, *device = NULL, *ids = NULL, *ids_file = NULL, *types = NULL, *mask = NULL;
    const char *out = NULL, *pooled_out = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (is_help(a)) { fputs(USAGE_RUN, stdout); return 0; }
        if (!strcmp(a, "--device")) slot = &device;
        else if (!strcmp(a, "--ids")) slot = &ids;
        else if (!strcmp(a, "--ids-file")) slot = &ids_file;
        else if (!strcmp(a, "--types")) slot = &types;
        else if (!strcmp(a, "--mask")) slot = &mask;
        else if (!strcmp(a, "--output")) slot = &out;
        else if (!strcmp(a, "--pooled-output")) slot = &pooled_out;
        else if (a[0] == '-' && a[1]) return usage_error(USAGE_RUN, "run: unknown option '%s'", a);
        else if (!file) { file = a; continue; }
        else return usage_error(USAGE_RUN, "run: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_RUN, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!file) return usage_error(USAGE_RUN, "run: missing PLAN or MODEL.yaml%s", "");
    int is_plan = file_is_plan(file);
    if (!device) device = is_plan ? "cuda" : "ref";
    bertc_device_kind kind = BERTC_DEVICE_CUDA;
    if (strcmp(device, "ref") && parse_device(device, &kind))
        return usage_error(USAGE_RUN, "run: unknown device '%s' (expected cuda, emu or ref)", device);
    if (!strcmp(device, "ref") && is_plan) {
        fprintf(stderr, "bertc: error: %s is a compiled plan; the reference executor (--device ref) runs the model YAML "
                        "it was compiled from\n", file);
        return DIAG_CODE_USAGE;
    }
    if (strcmp(device, "ref") && !is_plan) {
        fprintf(stderr, "bertc: error: %s is not a compiled plan (--device %s runs plans; compile it with bertc compile, "
                        "or use --device ref for a model YAML)\n", file, device);
        return DIAG_CODE_INPUT;
    }
    if (!ids == !ids_file) return usage_error(USAGE_RUN, "run: give exactly one of --ids and --ids-file%s", "");

    diag d;
    diag_init(&d);
    int32_t *id_v = NULL, *type_v = NULL, *mask_v = NULL;
    int64_t n_ids = 0, n_types = 0, n_mask = 0;
    char *file_text = NULL;
    model m;
    memset(&m, 0, sizeof m);
    run_outputs o;
    memset(&o, 0, sizeof o);
    int rc = 0;

    if (ids_file) {
        if (!(file_text = file_read_all(ids_file, NULL, (size_t)16 << 20, &d))) { rc = fail(&d); goto done; }
        ids = file_text;
    }
    if (parse_ints(ids_file ? ids_file : "--ids", ids, &id_v, &n_ids, &d) ||
        (types && parse_ints("--types", types, &type_v, &n_types, &d)) ||
        (mask && parse_ints("--mask", mask, &mask_v, &n_mask, &d))) {
        rc = fail(&d);
        goto done;
    }
    if (n_ids == 0) { diag_set(&d, DIAG_CODE_INPUT, "no token ids given (expected at least one)"); rc = fail(&d); goto done; }
    if ((types && n_types != n_ids) || (mask && n_mask != n_ids)) {
        diag_set(&d, DIAG_CODE_INPUT, "%s has %lld values but there are %lld ids (expected equal counts)",
                 types && n_types != n_ids ? "--types" : "--mask",
                 (long long)(types && n_types != n_ids ? n_types : n_mask), (long long)n_ids);
        rc = fail(&d);
        goto done;
    }

    ref_request req = {.len = n_ids, .input_ids = id_v, .token_type_ids = type_v, .attention_mask = mask_v};
    if (is_plan) {
        if ((rc = run_plan_file(file, kind, &req, &o))) goto done;
    } else {
        if (model_load(&m, file, &d)) { rc = fail(&d); goto done; }
        if (ref_run(&m.graph, &m.weights, &req, &o.res, &d)) { rc = fail(&d); goto done; }
        for (int i = 0; i < RUN_NOUT; i++) {
            const ref_tensor *t = ref_result_find(&o.res, run_output_names[i]);
            if (!t) continue;
            o.data[i] = t->data;
            o.ndim[i] = t->ndim;
            for (int k = 0; k < t->ndim && k < 2; k++) o.shape[i][k] = t->shape[k];
        }
    }
    if (out && !o.data[0]) { diag_set(&d, DIAG_CODE_INPUT, "%s has no output 'last_hidden_state'", file); rc = fail(&d); goto done; }
    if (pooled_out && !o.data[1]) {
        diag_set(&d, DIAG_CODE_INPUT, "%s has no output 'pooler_output' (the model has no pooler)", file);
        rc = fail(&d);
        goto done;
    }
    if (out && npy_write_f32(out, o.data[0], o.ndim[0], o.shape[0], &d)) { rc = fail(&d); goto done; }
    if (pooled_out && npy_write_f32(pooled_out, o.data[1], o.ndim[1], o.shape[1], &d)) { rc = fail(&d); goto done; }
    if (!out && !pooled_out) {
        for (int i = 0; i < RUN_NOUT; i++) {
            if (!o.data[i]) continue;
            ref_tensor t;
            memset(&t, 0, sizeof t);
            t.name = (char *)run_output_names[i];
            t.ndim = o.ndim[i];
            t.shape[0] = o.shape[i][0];
            t.shape[1] = o.shape[i][1];
            t.data = o.data[i];
            print_summary(&t);
        }
    }

done:
    if (is_plan)
        for (int i = 0; i < RUN_NOUT; i++) free(o.data[i]);
    ref_result_free(&o.res);
    model_free(&m);
    free(id_v);
    free(type_v);
    free(mask_v);
    free(file_text);
    return rc;
}

/* ------------------------------------------------------------------ bench */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, int n, double q) {
    int i = (int)(q * (n - 1) + 0.5);
    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int cmd_bench(int argc, char **argv) {
    const char *path = NULL, *device = "cuda";
    long iters = -1, warmup = -1, seq_len = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) { fputs(USAGE_BENCH, stdout); return 0; }
        long *num = NULL;
        if (!strcmp(a, "--device")) {
            if (++i >= argc) return usage_error(USAGE_BENCH, "%s needs a value", a);
            device = argv[i];
            continue;
        } else if (!strcmp(a, "--iters")) num = &iters;
        else if (!strcmp(a, "--warmup")) num = &warmup;
        else if (!strcmp(a, "--seq-len")) num = &seq_len;
        else if (a[0] == '-' && a[1]) return usage_error(USAGE_BENCH, "bench: unknown option '%s'", a);
        else if (!path) { path = a; continue; }
        else return usage_error(USAGE_BENCH, "bench: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_BENCH, "%s needs a value", a);
        char *end;
        *num = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end || *num < (num == &warmup ? 0 : 1) || *num > 1000000)
            return usage_error(USAGE_BENCH, "bench: '%s' is not a valid count", argv[i]);
    }
    if (!path) return usage_error(USAGE_BENCH, "bench: missing PLAN%s", "");
    bertc_device_kind kind;
    if (parse_device(device, &kind)) return usage_error(USAGE_BENCH, "bench: unknown device '%s' (expected cuda or emu)", device);
    if (iters < 0) iters = kind == BERTC_DEVICE_CUDA ? 200 : 20;
    if (warmup < 0) warmup = kind == BERTC_DEVICE_CUDA ? 20 : 2;

    char err[1024];
    bertc_plan *pl = NULL;
    bertc_context *ctx = NULL;
    bertc_status st = bertc_plan_open(path, &pl, err, sizeof err);
    if (st != BERTC_STATUS_OK) return runtime_fail(st, err);
    int maxb = bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1);
    if (seq_len > maxb) {
        bertc_plan_close(pl);
        fprintf(stderr, "bertc: error: --seq-len %ld is above the plan's longest bucket (%d)\n", seq_len, maxb);
        return DIAG_CODE_INPUT;
    }
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = kind;
    opt.timing = 1;
    st = bertc_context_create(pl, &opt, &ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        bertc_plan_close(pl);
        return runtime_fail(st, err);
    }
    int32_t *ids = malloc((size_t)maxb * sizeof *ids);
    double *dev_us = malloc((size_t)iters * sizeof *dev_us), *host_us = malloc((size_t)iters * sizeof *host_us);
    int rc = 0;
    if (!ids || !dev_us || !host_us) { rc = runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory"); goto done; }
    /* Random ids away from the special tokens; a fixed seed so runs compare. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int64_t vocab = bertc_plan_vocab_size(pl);
    for (int i = 0; i < maxb; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(vocab > 1000 ? 1000 + x % (uint64_t)(vocab - 1000) : x % (uint64_t)vocab);
    }
    printf("plan %s on %s (image %s %s): %ld warm-up + %ld timed requests per length\n", path,
           kind == BERTC_DEVICE_CUDA ? "cuda" : "the emulated device", bertc_context_image_arch(ctx),
           bertc_context_image_kind(ctx), warmup, iters);
    printf("%8s %10s %10s %10s %10s   %10s %10s %10s\n", "len", "dev p50", "dev p90", "dev p99", "jitter", "host p50",
           "host p90", "host p99");
    for (int b = 0; b < bertc_plan_bucket_count(pl); b++) {
        int len = seq_len ? (int)seq_len : bertc_plan_bucket_len(pl, b);
        if (seq_len && b > 0) break;
        bertc_request rq = {ids, NULL, NULL, len};
        for (long i = 0; i < warmup + iters; i++) {
            double t0 = now_seconds();
            st = bertc_infer(ctx, &rq);
            double t1 = now_seconds();
            float ms = 0;
            if (st == BERTC_STATUS_OK) st = bertc_context_last_device_ms(ctx, &ms);
            if (st != BERTC_STATUS_OK) { rc = runtime_fail(st, bertc_context_error(ctx)); goto done; }
            if (i >= warmup) {
                dev_us[i - warmup] = 1e3 * ms;
                host_us[i - warmup] = 1e6 * (t1 - t0);
            }
        }
        qsort(dev_us, (size_t)iters, sizeof *dev_us, cmp_double);
        qsort(host_us, (size_t)iters, sizeof *host_us, cmp_double);
        double p50 = percentile(dev_us, (int)iters, 0.5), p99 = percentile(dev_us, (int)iters, 0.99);
        printf("%8d %10.1f %10.1f %10.1f %10.1f   %10.1f %10.1f %10.1f\n", len, p50,
               percentile(dev_us, (int)iters, 0.9), p99, p99 - p50, percentile(host_us, (int)iters, 0.5),
               percentile(host_us, (int)iters, 0.9), percentile(host_us, (int)iters, 0.99));
    }
    printf("(microseconds; device: CUDA events around the graph launch; host: wall time of bertc_infer)\n");
done:
    free(ids);
    free(dev_us);
    free(host_us);
    bertc_context_destroy(ctx);
    bertc_plan_close(pl);
    return rc;
}

static const char USAGE_COMPILE[] =
    "usage: bertc compile MODEL.yaml -o PLAN [--arch LIST] [--buckets LIST]\n"
    "                     [--precision fp16|bf16|fp32] [-j N] [-v]\n"
    "\n"
    "Fuses the graph, lowers it per sequence-length bucket to generated\n"
    "kernels and cuBLASLt GEMMs, compiles the kernels with NVRTC for each\n"
    "architecture (CUBIN, plus PTX of the lowest for newer GPUs) and writes\n"
    "one self-contained plan (docs/plan-format.md).\n"
    "\n"
    "  --arch LIST       comma-separated, default sm_75,sm_80,sm_86,sm_89,sm_90;\n"
    "                    'emu' adds the emulated device's CPU image\n"
    "  --buckets LIST    comma-separated multiples of 8, ascending, each <= max_seq_len;\n"
    "                    default 32,64,128,256,384,512 capped at max_seq_len\n"
    "  --precision P     storage precision of weights and activations (default fp16)\n"
    "  -j N              architectures compiled at once (default: the number of cores)\n"
    "  -v                print what each fusion pass did\n";

static const char USAGE_INSPECT[] =
    "usage: bertc inspect PLAN [--json] [--source KERNEL]\n"
    "\n"
    "Prints the plan's buckets (per bucket the ordered steps, launches per\n"
    "request, FLOPs and minimum HBM bytes per step and summed), per arch the\n"
    "kernel images with registers/spills/shared memory, weight and arena\n"
    "bytes. --json prints the same as JSON; --source prints the generated\n"
    "source of one kernel (by entry name or index).\n";

static char *dup_str(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static int parse_precision(const char *s, plan_dtype *out) {
    if (!strcmp(s, "fp16")) *out = PLAN_DTYPE_F16;
    else if (!strcmp(s, "bf16")) *out = PLAN_DTYPE_BF16;
    else if (!strcmp(s, "fp32")) *out = PLAN_DTYPE_F32;
    else return -1;
    return 0;
}

static const char *precision_name(plan_dtype t) {
    return t == PLAN_DTYPE_F16 ? "fp16" : t == PLAN_DTYPE_BF16 ? "bf16" : t == PLAN_DTYPE_F32 ? "fp32" : "?";
}

/* Split a comma list into at most cap items (pointers into a copy). */
static int split_list(char *copy, char **items, int cap) {
    int n = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (n == cap) return -1;
        items[n++] = tok;
    }
    return n;
}

#define MAX_BUCKETS 64

static int choose_buckets(const char *list, int64_t max_seq, int *buckets, int *nb, diag *d) {
    static const int defaults[] = {32, 64, 128, 256, 384, 512};
    *nb = 0;
    if (!list) {
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
            if (defaults[i] <= max_seq) buckets[(*nb)++] = defaults[i];
        /* Serve every length up to max_seq_len: add it (rounded down to 8) as the last bucket. */
        int top = (int)(max_seq / 8 * 8);
        if (top >= 8 && (*nb == 0 || buckets[*nb - 1] < top) && top <= 512) buckets[(*nb)++] = top;
        if (*nb == 0) return diag_set(d, DIAG_CODE_INPUT, "max_seq_len %lld is below the smallest bucket (8)", (long long)max_seq);
        return 0;
    }
    char *copy = dup_str(list);
    char *items[MAX_BUCKETS];
    int n = copy ? split_list(copy, items, MAX_BUCKETS) : -1;
    if (n <= 0) {
        free(copy);
        return diag_set(d, DIAG_CODE_USAGE, "--buckets: expected a comma-separated list of at most %d lengths", MAX_BUCKETS);
    }
    for (int i = 0; i < n; i++) {
        char *end;
        long v = strtol(items[i], &end, 10);
        if (end == items[i] || *end || v < 8 || v % 8) {
            diag_set(d, DIAG_CODE_USAGE, "--buckets: '%s' is not a positive multiple of 8", items[i]);
            free(copy);
            return -1;
        }
        if (v > max_seq) {
            diag_set(d, DIAG_CODE_USAGE, "--buckets: %ld is above the model's max_seq_len %lld", v, (long long)max_seq);
            free(copy);
            return -1;
        }
        if (*nb && v <= buckets[*nb - 1]) {
            diag_set(d, DIAG_CODE_USAGE, "--buckets: %ld does not follow %d (expected ascending, distinct)", v,
                     buckets[*nb - 1]);
            free(copy);
            return -1;
        }
        buckets[(*nb)++] = (int)v;
    }
    free(copy);
    return 0;
}

static int read_vocab(plan_tokenizer *t, const ir_graph *g, diag *d) {
    const ir_tokenizer *s = &g->tokenizer;
    size_t len;
    t->vocab = file_read_all(s->vocab_path, &len, (size_t)64 << 20, d);
    if (!t->vocab) return -1;
    t->vocab_len = len;
    t->present = 1;
    t->do_lower_case = s->do_lower_case;
    t->strip_accents = s->strip_accents;
    t->tokenize_chinese_chars = s->tokenize_chinese_chars;
    t->model_max_length = s->model_max_length;
    t->unk_token = dup_str(s->unk_token);
    t->cls_token = dup_str(s->cls_token);
    t->sep_token = dup_str(s->sep_token);
    t->pad_token = dup_str(s->pad_token);
    t->mask_token = dup_str(s->mask_token);
    return 0;
}

/*
 * The emulated device's image: the same kernel texts compiled by the host
 * C++ compiler into an x86-64 shared object, stored in the plan beside the
 * CUBINs so running on the emulated device needs no compiler at run time.
 */
static int build_emu_image(const lower_kernels *k, unsigned char **bytes, size_t *size, diag *d) {
    if (emu_build_image((const char *const *)k->sources, k->count, bytes, size, d)) {
        diag_prefix(d, "building the emulated-device image: ");
        return -1;
    }
    return 0;
}

static int cmd_compile(int argc, char **argv) {
    const char *yaml = NULL, *out = NULL, *arch_list = NULL, *bucket_list = NULL, *prec = "fp16";
    int jobs = 0, verbose = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (is_help(a)) { fputs(USAGE_COMPILE, stdout); return 0; }
        if (!strcmp(a, "-o")) slot = &out;
        else if (!strcmp(a, "--arch")) slot = &arch_list;
        else if (!strcmp(a, "--buckets")) slot = &bucket_list;
        else if (!strcmp(a, "--precision")) slot = &prec;
        else if (!strcmp(a, "-v")) { verbose = 1; continue; }
        else if (!strcmp(a, "-j")) {
            if (++i >= argc) return usage_error(USAGE_COMPILE, "%s needs a value", a);
            char *end;
            long v = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end || v < 1 || v > 256)
                return usage_error(USAGE_COMPILE, "-j: '%s' is not a job count (1..256)", argv[i]);
            jobs = (int)v;
            continue;
        } else if (a[0] == '-' && a[1]) return usage_error(USAGE_COMPILE, "compile: unknown option '%s'", a);
        else if (!yaml) { yaml = a; continue; }
        else return usage_error(USAGE_COMPILE, "compile: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_COMPILE, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!yaml) return usage_error(USAGE_COMPILE, "compile: missing MODEL.yaml%s", "");
    if (!out) return usage_error(USAGE_COMPILE, "compile: missing -o PLAN%s", "");
    plan_dtype precision;
    if (parse_precision(prec, &precision))
        return usage_error(USAGE_COMPILE, "--precision: '%s' is not one of fp16, bf16, fp32", prec);

    /* Architectures. */
    char *arch_copy = NULL;
    const char *archs[KBUILD_MAX_ARCHS];
    int narchs = 0, want_emu = 0;
    if (arch_list) {
        arch_copy = dup_str(arch_list);
        char *items[KBUILD_MAX_ARCHS];
        int n = arch_copy ? split_list(arch_copy, items, KBUILD_MAX_ARCHS) : -1;
        if (n <= 0) { free(arch_copy); return usage_error(USAGE_COMPILE, "--arch: expected a comma-separated list%s", ""); }
        for (int i = 0; i < n; i++) {
            if (!strcmp(items[i], "emu")) {
                if (want_emu) {
                    fprintf(stderr, "bertc: error: --arch: 'emu' is listed twice\n");
                    free(arch_copy);
                    return DIAG_CODE_USAGE;
                }
                want_emu = 1;
                continue;
            }
            if (!kbuild_arch_supported(items[i])) {
                fprintf(stderr, "bertc: error: --arch: unknown architecture '%s' (supported: %s emu)\n", items[i],
                        kbuild_supported_archs());
                free(arch_copy);
                return DIAG_CODE_USAGE;
            }
            for (int k = 0; k < narchs; k++)
                if (!strcmp(archs[k], items[i])) {
                    fprintf(stderr, "bertc: error: --arch: '%s' is listed twice\n", items[i]);
                    free(arch_copy);
                    return DIAG_CODE_USAGE;
                }
            archs[narchs++] = items[i];
        }
    } else {
        for (int i = 0; i < kbuild_default_arch_count; i++) archs[narchs++] = kbuild_default_archs[i];
    }
    if (narchs == 0 && !want_emu) {
        free(arch_copy);
        return usage_error(USAGE_COMPILE, "--arch: no architecture given%s", "");
    }
    if (jobs == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = n > 0 ? (int)n : 1;
    }

    diag d;
    diag_init(&d);
    model m;
    memset(&m, 0, sizeof m);
    lower_weights w;
    memset(&w, 0, sizeof w);
    lower_kernels k;
    lower_kernels_init(&k);
    kbuild_result kr;
    memset(&kr, 0, sizeof kr);
    kbuild_unit *units = NULL;
    unsigned char *emu_bytes = NULL;
    size_t emu_size = 0;
    plan p;
    plan_init(&p);
    int rc = 0, buckets[MAX_BUCKETS], nb = 0;
    double t0 = now_seconds(), t_load, t_fuse, t_lower, t_kernels, t_write;

    if (model_load(&m, yaml, &d)) goto fail;
    t_load = now_seconds();
    if (choose_buckets(bucket_list, m.graph.max_seq_len, buckets, &nb, &d)) goto fail;
    passes_report rep;
    memset(&rep, 0, sizeof rep);
    if (passes_run(&m.graph, &m.weights, &rep, &d)) goto fail;
    if (verbose) passes_report_write(&rep, stderr);
    t_fuse = now_seconds();
    lower_info info;
    if (lower_info_get(&m.graph, &info, &d)) goto fail;
    if (lower_weights_build(&m.graph, &m.weights, precision, &w, &d)) goto fail;
    p.buckets = calloc((size_t)nb, sizeof *p.buckets);
    if (!p.buckets) { diag_set(&d, DIAG_CODE_INTERNAL, "out of memory"); goto fail; }
    for (int b = 0; b < nb; b++) {
        if (lower_bucket(&m.graph, &w, precision, buckets[b], &k, &p.buckets[b], &d)) goto fail;
        p.nbuckets++;
        if (p.buckets[b].arena_bytes > p.arena_bytes) p.arena_bytes = p.buckets[b].arena_bytes;
    }
    t_lower = now_seconds();
    fprintf(stderr, "bertc: %s: %d bucket%s, %d distinct kernels, compiling for %d architecture%s with NVRTC\n",
            yaml, nb, nb == 1 ? "" : "s", k.count, narchs, narchs == 1 ? "" : "s");

    units = calloc((size_t)k.count + 1, sizeof *units);
    if (!units) { diag_set(&d, DIAG_CODE_INTERNAL, "out of memory"); goto fail; }
    for (int i = 0; i < k.count; i++) {
        units[i].text = k.sources[i];
        units[i].entry = k.entries[i];
    }
    kbuild_options ko;
    memset(&ko, 0, sizeof ko);
    ko.jobs = jobs;
    if (narchs > 0 && kbuild_compile(units, k.count, archs, narchs, &ko, &kr, &d)) goto fail;
    if (want_emu && build_emu_image(&k, &emu_bytes, &emu_size, &d)) goto fail;
    t_kernels = now_seconds();

    /* Assemble the plan (it takes ownership of everything it points to). */
    p.model_name = dup_str(m.graph.name);
    char producer[64];
    snprintf(producer, sizeof producer, "bertc %s", BERTC_VERSION);
    p.producer = dup_str(producer);
    p.precision = precision;
    p.max_seq_len = m.graph.max_seq_len;
    p.hidden = info.hidden;
    p.vocab_size = info.vocab_size;
    p.type_vocab_size = info.type_vocab_size;
    p.has_token_type_ids = info.uses_token_types;
    p.has_attention_mask = info.uses_mask;
    for (int i = 0; i < m.graph.count; i++) {
        const ir_node *n = &m.graph.nodes[i];
        if (n->op != IR_OP_INPUT) continue;
        if (!strcmp(n->name, "token_type_ids")) p.token_type_default = n->default_value;
        if (!strcmp(n->name, "attention_mask")) p.attention_mask_default = n->default_value;
    }
    if (!p.has_attention_mask) p.attention_mask_default = 1;
    p.weights = w.blob;
    p.weights_size = w.size;
    p.owns_weights = 1;
    w.blob = NULL;
    p.kernels = calloc((size_t)k.count + 1, sizeof *p.kernels);
    p.images = calloc((size_t)kr.nimages + 2, sizeof *p.images);
    if (!p.model_name || !p.producer || !p.kernels || !p.images) {
        diag_set(&d, DIAG_CODE_INTERNAL, "out of memory");
        goto fail;
    }
    for (int i = 0; i < k.count; i++) {
        p.kernels[i].entry = k.entries[i];
        p.kernels[i].source = k.sources[i];
        p.kernels[i].spec = k.specs[i];
        p.kernels[i].nargs = kernel_arg_count(k.specs[i].kind);
        k.entries[i] = k.sources[i] = NULL;
        p.nkernels++;
    }
    for (int i = 0; i < kr.nimages; i++) {
        kbuild_image *ki = &kr.images[i];
        plan_image *pi = &p.images[p.nimages];
        snprintf(pi->arch, sizeof pi->arch, "%s", ki->arch);
        pi->kind = ki->is_ptx ? PLAN_IMAGE_PTX : PLAN_IMAGE_CUBIN;
        pi->data = ki->data;
        pi->size = ki->size;
        ki->data = NULL;
        pi->stats = calloc((size_t)p.nkernels + 1, sizeof *pi->stats);
        if (!pi->stats) { diag_set(&d, DIAG_CODE_INTERNAL, "out of memory"); goto fail; }
        for (int u = 0; ki->stats && u < p.nkernels; u++) {
            pi->stats[u].registers = ki->stats[u].registers;
            pi->stats[u].spill_stores = ki->stats[u].spill_stores;
            pi->stats[u].spill_loads = ki->stats[u].spill_loads;
            pi->stats[u].shared_static = ki->stats[u].shared_static;
        }
        p.nimages++;
    }
    if (emu_bytes) {
        plan_image *pi = &p.images[p.nimages];
        snprintf(pi->arch, sizeof pi->arch, "emu");
        pi->kind = PLAN_IMAGE_EMU;
        pi->data = emu_bytes;
        pi->size = emu_size;
        emu_bytes = NULL;
        pi->stats = calloc((size_t)p.nkernels + 1, sizeof *pi->stats);
        if (!pi->stats) { diag_set(&d, DIAG_CODE_INTERNAL, "out of memory"); goto fail; }
        p.nimages++;
    }
    if (m.graph.has_tokenizer && read_vocab(&p.tokenizer, &m.graph, &d)) goto fail;
    if (plan_write(&p, out, &d)) goto fail;
    t_write = now_seconds();
    fprintf(stderr,
            "bertc: wrote %s: %s, %d bucket%s, %d kernels, %d images; %.2f s (load %.2f, fuse %.2f, lower %.2f, "
            "kernels %.2f, write %.2f)\n",
            out, precision_name(precision), p.nbuckets, p.nbuckets == 1 ? "" : "s", p.nkernels, p.nimages,
            t_write - t0, t_load - t0, t_fuse - t_load, t_lower - t_fuse, t_kernels - t_lower, t_write - t_kernels);
    goto done;
fail:
    rc = fail(&d);
done:
    plan_free(&p);
    free(emu_bytes);
    kbuild_result_free(&kr);
    free(units);
    lower_kernels_free(&k);
    lower_weights_free(&w);
    model_free(&m);
    free(arch_copy);
    return rc;
}

/* ---------------------------------------------------------------- inspect */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static const char *image_kind_name(plan_image_kind k) {
    return k == PLAN_IMAGE_CUBIN ? "cubin" : k == PLAN_IMAGE_PTX ? "ptx" : "emu";
}

static void step_describe(const plan *p, const sched_step *s, char *buf, size_t cap) {
    if (s->kind == SCHED_STEP_GEMM) {
        const sched_gemm *g = &s->gemm;
        const char *ep = g->epilogue == SCHED_EPILOGUE_BIAS ? "bias" : g->epilogue == SCHED_EPILOGUE_RELU_BIAS ? "bias+relu"
                         : g->epilogue == SCHED_EPILOGUE_RELU ? "relu" : "none";
        snprintf(buf, cap, "cublasLt gemm m=%lld n=%lld k=%lld epilogue=%s%s", (long long)g->m, (long long)g->n,
                 (long long)g->k, ep, g->beta != 0 ? " +residual" : "");
    } else {
        const sched_launch *l = &s->launch;
        snprintf(buf, cap, "kernel %s grid=(%u,%u,%u) block=%u smem=%u", p->kernels[l->kernel].entry, l->dims.grid[0],
                 l->dims.grid[1], l->dims.grid[2], l->dims.block[0] * l->dims.block[1] * l->dims.block[2],
                 l->dims.shared_bytes);
    }
}

static int cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *source = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (is_help(argv[i])) { fputs(USAGE_INSPECT, stdout); return 0; }
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--source")) {
            if (++i >= argc) return usage_error(USAGE_INSPECT, "%s needs a kernel name", "--source");
            source = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) return usage_error(USAGE_INSPECT, "inspect: unknown option '%s'", argv[i]);
        else if (!path) path = argv[i];
        else return usage_error(USAGE_INSPECT, "inspect: unexpected argument '%s'", argv[i]);
    }
    if (!path) return usage_error(USAGE_INSPECT, "inspect: missing PLAN%s", "");
    diag d;
    diag_init(&d);
    plan p;
    plan_init(&p);
    if (plan_read(&p, path, &d)) return fail(&d);
    if (source) {
        int found = -1;
        char *end;
        long idx = strtol(source, &end, 10);
        if (*source && !*end && idx >= 0 && idx < p.nkernels) found = (int)idx;
        for (int i = 0; found < 0 && i < p.nkernels; i++)
            if (!strcmp(p.kernels[i].entry, source)) found = i;
        if (found < 0) {
            fprintf(stderr, "bertc: error: %s: no kernel '%s' (the plan has %d; see bertc inspect %s)\n", path, source,
                    p.nkernels, path);
            plan_free(&p);
            return DIAG_CODE_INPUT;
        }
        fputs(p.kernels[found].source, stdout);
        plan_free(&p);
        return 0;
    }
    if (json) {
        printf("{\"format_version\": %d, \"producer\": ", PLAN_FORMAT_VERSION);
        json_str(stdout, p.producer);
        printf(", \"model\": ");
        json_str(stdout, p.model_name);
        printf(", \"precision\": \"%s\", \"max_seq_len\": %lld, \"hidden\": %lld,\n", precision_name(p.precision),
               (long long)p.max_seq_len, (long long)p.hidden);
        printf(" \"archs\": [");
        int first = 1;
        for (int i = 0; i < p.nimages; i++) {
            if (p.images[i].kind != PLAN_IMAGE_CUBIN) continue;
            printf("%s", first ? "" : ", ");
            json_str(stdout, p.images[i].arch);
            first = 0;
        }
        printf("],\n \"images\": [");
        for (int i = 0; i < p.nimages; i++) {
            const plan_image *im = &p.images[i];
            printf("%s{\"arch\": ", i ? ", " : "");
            json_str(stdout, im->arch);
            printf(", \"kind\": \"%s\", \"bytes\": %zu, \"kernels\": [", image_kind_name(im->kind), im->size);
            for (int kx = 0; kx < p.nkernels; kx++)
                printf("%s{\"registers\": %d, \"spill_stores\": %d, \"spill_loads\": %d, \"shared_static\": %d}",
                       kx ? ", " : "", im->stats[kx].registers, im->stats[kx].spill_stores, im->stats[kx].spill_loads,
                       im->stats[kx].shared_static);
            printf("]}");
        }
        printf("],\n \"weights_bytes\": %llu, \"arena_bytes\": %llu,\n \"kernels\": [",
               (unsigned long long)p.weights_size, (unsigned long long)p.arena_bytes);
        for (int kx = 0; kx < p.nkernels; kx++) {
            printf("%s{\"entry\": ", kx ? ", " : "");
            json_str(stdout, p.kernels[kx].entry);
            printf(", \"template\": \"%s\"}", kernel_kind_name(p.kernels[kx].spec.kind));
        }
        printf("],\n \"buckets\": [");
        for (int b = 0; b < p.nbuckets; b++) {
            const sched_bucket *bk = &p.buckets[b];
            double flops = 0, bytes = 0;
            for (int s = 0; s < bk->nsteps; s++) {
                flops += bk->steps[s].flops;
                bytes += (double)bk->steps[s].min_hbm_bytes;
            }
            printf("%s\n  {\"seq_len\": %d, \"launches\": %d, \"flops\": %.0f, \"min_hbm_bytes\": %.0f, "
                   "\"arena_bytes\": %llu, \"steps\": [",
                   b ? "," : "", bk->seq_len, bk->nsteps, flops, bytes, (unsigned long long)bk->arena_bytes);
            for (int s = 0; s < bk->nsteps; s++) {
                const sched_step *st = &bk->steps[s];
                printf("%s\n   {\"name\": ", s ? "," : "");
                json_str(stdout, st->name);
                printf(", \"kind\": \"%s\", ", st->kind == SCHED_STEP_GEMM ? "gemm" : "kernel");
                if (st->kind == SCHED_STEP_KERNEL) {
                    printf("\"kernel\": ");
                    json_str(stdout, p.kernels[st->launch.kernel].entry);
                    printf(", ");
                }
                printf("\"flops\": %.0f, \"min_hbm_bytes\": %llu}", st->flops, (unsigned long long)st->min_hbm_bytes);
            }
            printf("]}");
        }
        printf("]}\n");
        plan_free(&p);
        return 0;
    }
    printf("plan %s: format %d, %s\n", path, PLAN_FORMAT_VERSION, p.producer);
    printf("model %s: precision %s, hidden %lld, max_seq_len %lld, vocab %lld\n", p.model_name,
           precision_name(p.precision), (long long)p.hidden, (long long)p.max_seq_len, (long long)p.vocab_size);
    printf("weights %llu bytes, arena %llu bytes (largest bucket)\n", (unsigned long long)p.weights_size,
           (unsigned long long)p.arena_bytes);
    printf("\nimages:\n");
    for (int i = 0; i < p.nimages; i++) {
        const plan_image *im = &p.images[i];
        printf("  %-11s %-5s %8zu bytes\n", im->arch, image_kind_name(im->kind), im->size);
    }
    printf("\nkernels (registers/spill bytes/static smem per CUBIN arch):\n");
    for (int kx = 0; kx < p.nkernels; kx++) {
        printf("  [%d] %s\n      ", kx, p.kernels[kx].entry);
        for (int i = 0; i < p.nimages; i++) {
            const plan_image *im = &p.images[i];
            if (im->kind != PLAN_IMAGE_CUBIN) continue;
            const plan_kernel_stats *st = &im->stats[kx];
            printf(" %s %d/%d/%d", im->arch, st->registers, st->spill_stores + st->spill_loads, st->shared_static);
        }
        printf("\n");
    }
    for (int b = 0; b < p.nbuckets; b++) {
        const sched_bucket *bk = &p.buckets[b];
        double flops = 0, bytes = 0;
        int gemms = 0;
        for (int s = 0; s < bk->nsteps; s++) {
            flops += bk->steps[s].flops;
            bytes += (double)bk->steps[s].min_hbm_bytes;
            gemms += bk->steps[s].kind == SCHED_STEP_GEMM;
        }
        printf("\nbucket %d: %d launches per request (%d kernels, %d cuBLASLt GEMMs), %.3f GFLOP, %.3f MB minimum HBM "
               "traffic, arena %llu bytes\n",
               bk->seq_len, bk->nsteps, bk->nsteps - gemms, gemms, flops * 1e-9, bytes * 1e-6,
               (unsigned long long)bk->arena_bytes);
        for (int s = 0; s < bk->nsteps; s++) {
            char desc[256];
            step_describe(&p, &bk->steps[s], desc, sizeof desc);
            printf("  %3d %-28s %10.3f MFLOP %9.3f MB  %s\n", s, bk->steps[s].name, bk->steps[s].flops * 1e-6,
                   (double)bk->steps[s].min_hbm_bytes * 1e-6, desc);
        }
    }
    plan_free(&p);
    return 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    if (argc < 2) { fputs(USAGE, stderr); return DIAG_CODE_USAGE; }
    const char *cmd = argv[1];
    if (is_help(cmd)) { fputs(USAGE, stdout); return 0; }
    if (!strcmp(cmd, "--version")) { printf("bertc %s\n", BERTC_VERSION); return 0; }
    if (!strcmp(cmd, "import")) return cmd_import(argc - 2, argv + 2);
    if (!strcmp(cmd, "compile")) return cmd_compile(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    return usage_error(USAGE, "unknown command '%s'", cmd);
}
