/*
 * cli_run — `bertc run`: one request through a compiled plan (the runtime
 * library, on a GPU or the emulated device) or through a model YAML (the
 * reference executor), ids in or text in, outputs to .npy or stdout.
 *
 * Both paths fill the same run_outputs (float32 arrays by output name), so
 * writing and printing are shared; with --text the plan's tokenizer makes
 * the ids and the embedding is chosen (or pooled here) as --pooling says.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fileutil.h"
#include "inspect.h"
#include "model.h"
#include "npy.h"
#include "ref.h"

static const char USAGE_RUN[] =
    "usage: bertc run PLAN [--device cuda|emu] (--ids \"101 7592 102\" | --ids-file F)\n"
    "                 [--types \"0 0 0\"] [--mask \"1 1 1\"]\n"
    "                 [--output OUT.npy] [--pooled-output P.npy] [--expect-sha256 HEX]\n"
    "       bertc run MODEL.yaml [--device ref] ...\n"
    "       bertc run PLAN --text \"...\" ...   (text in: bertc run --text x --help)\n"
    "       bertc run PLAN (--ids-file F | --text-file F) ...   (an input a line, packed\n"
    "                 batches: bertc run --text-file x --help)\n"
    "\n"
    "Runs one request. A compiled plan runs on a GPU (--device cuda, the\n"
    "default) or on the emulated device (--device emu: the same driver and\n"
    "cuBLASLt calls executed on the CPU; the plan needs --arch ...,emu). A\n"
    "model YAML runs on the reference executor (--device ref: float32, double\n"
    "accumulation). Ids, types and mask are whitespace- or comma-separated\n"
    "integers of equal count; mask is Hugging Face's attention_mask (1 = attend,\n"
    "0 = masked). --output writes the model's first output as float32 .npy:\n"
    "logits for a classification head ([labels], or [len, labels] per token),\n"
    "else last_hidden_state [len, hidden]; --pooled-output writes pooler_output\n"
    "[hidden]; without them a summary is printed on stdout.\n";

static const char USAGE_RUN_TEXT[] =
    "usage: bertc run PLAN --text \"...\" [--text-pair \"...\"] [--device cuda|emu] [--max-len N]\n"
    "                 [--pooling cls|mean|pooler] [--normalize] [--json]\n"
    "                 [--output OUT.npy] [--embedding-output E.npy] [--expect-sha256 HEX]\n"
    "\n"
    "Tokenizes the text with the plan's tokenizer, runs it, and prints the\n"
    "tokens, ids and, for a classification head, the scores by label (a\n"
    "cross-encoder's one score; per token, each token's best label), else the\n"
    "embedding (--json: one JSON object). The embedding is\n"
    "the plan's sentence_embedding output when the model has a pooling head\n"
    "(sentence-transformers models), else pooler_output, else the [CLS] row;\n"
    "--pooling chooses instead: cls (row 0 of last_hidden_state), mean (mean\n"
    "of its rows: every token of a text is attended), pooler (pooler_output).\n"
    "--normalize divides it by its L2 norm. --output writes the model's first\n"
    "output (logits or last_hidden_state), --embedding-output the embedding,\n"
    "as float32 .npy.\n";

/* The outputs `run` knows by name, in this order. */
#define RUN_NOUT 4
enum { RUN_OUT_HIDDEN, RUN_OUT_POOLER, RUN_OUT_SENTENCE, RUN_OUT_LOGITS };
static const char *const run_output_names[RUN_NOUT] = {"last_hidden_state", "pooler_output", "sentence_embedding",
                                                       "logits"};

typedef struct run_outputs {
    ref_result res;        /* reference executor */
    int owned;             /* data[] was malloc'd here (runtime), not borrowed from res */
    float *data[RUN_NOUT]; /* NULL where the model lacks the output */
    int64_t shape[RUN_NOUT][2];
    int ndim[RUN_NOUT];
    int first;             /* the slot of the model's first output (what --output writes) */
} run_outputs;

/* The slot of output `name`, RUN_OUT_HIDDEN if `run` does not know it. */
static int run_output_slot(const char *name) {
    for (int i = 0; i < RUN_NOUT; i++)
        if (name && !strcmp(name, run_output_names[i])) return i;
    return RUN_OUT_HIDDEN;
}

static void run_outputs_free(run_outputs *o) {
    if (o->owned)
        for (int i = 0; i < RUN_NOUT; i++) free(o->data[i]);
    ref_result_free(&o->res);
    memset(o, 0, sizeof *o);
}

/* Reads output i of the last request into o (runtime path). */
static int run_read_output(bertc_context *ctx, bertc_plan *pl, int i, int64_t len, run_outputs *o) {
    int idx = bertc_plan_output_index(pl, run_output_names[i]);
    if (idx < 0) return 0;
    bertc_output_info info;
    bertc_plan_output_info(pl, idx, &info);
    int64_t rows = info.per_token ? len : 1;
    o->data[i] = malloc((size_t)(rows * info.cols) * sizeof(float));
    if (!o->data[i]) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    bertc_status st = bertc_output_read(ctx, idx, o->data[i], (size_t)(rows * info.cols));
    if (st != BERTC_STATUS_OK) return cli_runtime_fail(st, bertc_context_error(ctx));
    o->ndim[i] = info.per_token ? 2 : 1;
    o->shape[i][0] = info.per_token ? rows : info.cols;
    o->shape[i][1] = info.cols;
    return 0;
}

/* Runs the request on an open plan through the runtime library; fills o->data. */
static int run_plan(bertc_plan *pl, bertc_device_kind kind, const ref_request *req, run_outputs *o) {
    char err[1024];
    bertc_context *ctx = NULL;
    bertc_context_options opt;
    bertc_context_options_init(&opt);
    opt.device = kind;
    opt.capture_on_first_use = 1; /* one request: capture only its bucket */
    bertc_status st = bertc_context_create(pl, &opt, &ctx, err, sizeof err);
    if (st != BERTC_STATUS_OK) return cli_runtime_fail(st, err);
    bertc_request rq = {req->input_ids, req->token_type_ids, req->attention_mask, req->len};
    o->owned = 1;
    int rc = 0;
    st = bertc_infer(ctx, &rq);
    if (st != BERTC_STATUS_OK) rc = cli_runtime_fail(st, bertc_context_error(ctx));
    for (int i = 0; i < RUN_NOUT && !rc; i++) rc = run_read_output(ctx, pl, i, req->len, o);
    bertc_output_info first;
    o->first = bertc_plan_output_info(pl, 0, &first) == BERTC_STATUS_OK ? run_output_slot(first.name) : RUN_OUT_HIDDEN;
    bertc_context_destroy(ctx);
    return rc;
}

/* Opens a plan and runs one request on it. */
static int run_plan_file(const char *path, const char *pin, bertc_device_kind kind, const ref_request *req,
                         run_outputs *o) {
    bertc_plan *pl = NULL;
    int rc = cli_plan_open(path, pin, &pl);
    if (rc) return rc;
    rc = run_plan(pl, kind, req, o);
    bertc_plan_close(pl);
    return rc;
}

/* Runs the request on a loaded model YAML with the reference executor. */
static int run_reference(const model *m, const ref_request *req, run_outputs *o, diag *d) {
    if (ref_run(&m->graph, &m->weights, req, &o->res, d)) return -1;
    o->first = run_output_slot(o->res.count ? o->res.outputs[0].name : NULL);
    for (int i = 0; i < RUN_NOUT; i++) {
        const ref_tensor *t = ref_result_find(&o->res, run_output_names[i]);
        if (!t) continue;
        o->data[i] = t->data;
        o->ndim[i] = t->ndim;
        for (int k = 0; k < t->ndim && k < 2; k++) o->shape[i][k] = t->shape[k];
    }
    return 0;
}

static void run_print_summary(const char *name, const float *data, int ndim, const int64_t *shape) {
    printf("%s [", name);
    for (int k = 0; k < ndim; k++) printf("%s%lld", k ? ", " : "", (long long)shape[k]);
    printf("]\n");
    int64_t rows = ndim > 1 ? shape[0] : 1, cols = ndim > 1 ? shape[ndim - 1] : shape[0];
    for (int64_t r = 0; r < rows; r++) {
        printf("  %4lld:", (long long)r);
        for (int64_t c = 0; c < cols && c < 6; c++) printf(" %+.6f", data[r * cols + c]);
        printf("%s\n", cols > 6 ? " ..." : "");
        if (r == 7 && rows > 9) {
            printf("  ... (%lld more rows)\n", (long long)(rows - 8));
            break;
        }
    }
}

/* ------------------------------------------------------------ ids in */

typedef struct run_args {
    const char *file, *device, *ids, *ids_file, *types, *mask, *out, *pooled_out, *pin;
} run_args;

static int run_read_args(int argc, char **argv, run_args *a) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], **slot = NULL;
        if (cli_is_help(arg)) {
            fputs(USAGE_RUN, stdout);
            return -1;
        }
        if (!strcmp(arg, "--device")) slot = &a->device;
        else if (!strcmp(arg, "--ids")) slot = &a->ids;
        else if (!strcmp(arg, "--ids-file")) slot = &a->ids_file;
        else if (!strcmp(arg, "--types")) slot = &a->types;
        else if (!strcmp(arg, "--mask")) slot = &a->mask;
        else if (!strcmp(arg, "--output")) slot = &a->out;
        else if (!strcmp(arg, "--pooled-output")) slot = &a->pooled_out;
        else if (!strcmp(arg, "--expect-sha256")) slot = &a->pin;
        else if (arg[0] == '-' && arg[1]) return cli_usage_error(USAGE_RUN, "run: unknown option '%s'", arg);
        else if (!a->file) { a->file = arg; continue; }
        else return cli_usage_error(USAGE_RUN, "run: unexpected argument '%s'", arg);
        if (++i >= argc) return cli_usage_error(USAGE_RUN, "%s needs a value", arg);
        *slot = argv[i];
    }
    return 0;
}

/* Which executor runs the file: a plan on cuda/emu, a YAML on ref. */
static int run_choose_device(run_args *a, int is_plan, bertc_device_kind *kind) {
    if (!a->device) a->device = is_plan ? "cuda" : "ref";
    *kind = BERTC_DEVICE_CUDA;
    if (strcmp(a->device, "ref") && cli_parse_device(a->device, kind))
        return cli_usage_error(USAGE_RUN, "run: unknown device '%s' (expected cuda, emu or ref)", a->device);
    if (!strcmp(a->device, "ref") && is_plan) {
        fprintf(stderr, "bertc: error: %s is a compiled plan; the reference executor (--device ref) runs the model YAML "
                        "it was compiled from\n", a->file);
        return DIAG_CODE_USAGE;
    }
    if (strcmp(a->device, "ref") && !is_plan) {
        char hint[160];
        snprintf(hint, sizeof hint, "--device %s runs plans; compile it with bertc compile, or use --device ref for "
                                    "a model YAML", a->device);
        return cli_require_plan(a->file, hint);
    }
    if (!a->ids == !a->ids_file) return cli_usage_error(USAGE_RUN, "run: give exactly one of --ids and --ids-file%s", "");
    return 0;
}

/* The request's arrays (freed by run_request_free). */
typedef struct run_request {
    int32_t *ids, *types, *mask;
    char *file_text;
    ref_request req;
} run_request;

static void run_request_free(run_request *r) {
    free(r->ids);
    free(r->types);
    free(r->mask);
    free(r->file_text);
}

static int run_request_parse(const run_args *a, run_request *r, diag *d) {
    int64_t n_ids = 0, n_types = 0, n_mask = 0;
    const char *ids = a->ids;
    if (a->ids_file) {
        size_t len;
        if (!(r->file_text = file_read_all(a->ids_file, &len, (size_t)16 << 20, d))) return -1;
        const char *nul = memchr(r->file_text, 0, len);
        if (nul)
            return diag_set(d, DIAG_CODE_INPUT, "%s: byte %zu is a NUL (expected whitespace- or comma-separated integers)",
                            a->ids_file, (size_t)(nul - r->file_text));
        ids = r->file_text;
    }
    if (cli_parse_ints(a->ids_file ? a->ids_file : "--ids", ids, &r->ids, &n_ids, d) ||
        (a->types && cli_parse_ints("--types", a->types, &r->types, &n_types, d)) ||
        (a->mask && cli_parse_ints("--mask", a->mask, &r->mask, &n_mask, d)))
        return -1;
    if (n_ids == 0) return diag_set(d, DIAG_CODE_INPUT, "no token ids given (expected at least one)");
    if ((a->types && n_types != n_ids) || (a->mask && n_mask != n_ids)) {
        int types_off = a->types && n_types != n_ids;
        return diag_set(d, DIAG_CODE_INPUT, "%s has %lld values but there are %lld ids (expected equal counts)",
                        types_off ? "--types" : "--mask", (long long)(types_off ? n_types : n_mask), (long long)n_ids);
    }
    r->req = (ref_request){.len = n_ids, .input_ids = r->ids, .token_type_ids = r->types, .attention_mask = r->mask};
    return 0;
}

/* The command's output files, opened before the work so a path that cannot
 * be written fails first, and committed together after it. */
typedef struct run_files {
    file_atomic fa[2];
    int n;
} run_files;

static int run_files_open(run_files *f, const char *const *paths, const char *const *what, const char *const *inputs,
                          int nin, diag *d) {
    memset(f, 0, sizeof *f);
    if (file_outputs_check(paths, what, 2, inputs, nin, d)) return -1;
    for (int i = 0; i < 2; i++)
        if (paths[i] && file_atomic_open(&f->fa[i], paths[i], d)) return -1;
    f->n = 2;
    return 0;
}

static void run_files_abort(run_files *f) {
    for (int i = 0; i < 2; i++)
        if (f->fa[i].tmp_path) file_atomic_abort(&f->fa[i]);
}

/* --output / --pooled-output, or a summary of every output on stdout. */
static int run_write(const run_args *a, const run_outputs *o, run_files *f, diag *d) {
    int k = o->first;
    if (a->out && !o->data[k]) return diag_set(d, DIAG_CODE_INPUT, "%s has no output '%s'", a->file, run_output_names[k]);
    if (a->pooled_out && !o->data[RUN_OUT_POOLER])
        return diag_set(d, DIAG_CODE_INPUT, "%s has no output 'pooler_output' (the model has no pooler)", a->file);
    int ok = (!a->out || npy_write_f32_to(&f->fa[0], o->data[k], o->ndim[k], o->shape[k]) == 0) &&
             (!a->pooled_out || npy_write_f32_to(&f->fa[1], o->data[1], o->ndim[1], o->shape[1]) == 0);
    if (file_atomic_commit_all(f->fa, 2, ok, d)) return -1;
    if (!a->out && !a->pooled_out) /* the first output first */
        for (int j = 0; j < RUN_NOUT; j++) {
            int i = j == 0 ? k : j <= k ? j - 1 : j;
            if (o->data[i]) run_print_summary(run_output_names[i], o->data[i], o->ndim[i], o->shape[i]);
        }
    return 0;
}

int cmd_run(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--text")) return cmd_run_text(argc, argv);
    if (cli_run_is_batch(argc, argv)) return cmd_run_batch(argc, argv);
    run_args a;
    memset(&a, 0, sizeof a);
    int rc = run_read_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (!a.file) return cli_usage_error(USAGE_RUN, "run: missing PLAN or MODEL.yaml%s", "");
    int is_plan = cli_file_is_plan(a.file);
    bertc_device_kind kind;
    if ((rc = run_choose_device(&a, is_plan, &kind))) return rc;
    diag d;
    diag_init(&d);
    run_request r;
    memset(&r, 0, sizeof r);
    run_outputs o;
    memset(&o, 0, sizeof o);
    run_files f;
    memset(&f, 0, sizeof f);
    model m;
    memset(&m, 0, sizeof m);
    const char *outs[2] = {a.out, a.pooled_out}, *what[2] = {"--output", "--pooled-output"};
    /* a YAML's weights are inputs too: load it first */
    if (!is_plan && model_load(&m, a.file, &d)) {
        rc = cli_fail(&d);
        goto done;
    }
    const char *ins[3] = {a.file, a.ids_file, is_plan ? NULL : m.graph.weights_path};
    if (run_files_open(&f, outs, what, ins, 3, &d) || run_request_parse(&a, &r, &d)) rc = cli_fail(&d);
    else if (is_plan) rc = run_plan_file(a.file, a.pin, kind, &r.req, &o);
    else if (run_reference(&m, &r.req, &o, &d)) rc = cli_fail(&d);
    if (!rc && run_write(&a, &o, &f, &d)) rc = cli_fail(&d);
done:
    run_files_abort(&f);
    model_free(&m);
    run_outputs_free(&o);
    run_request_free(&r);
    return rc;
}

/* ------------------------------------------------------------ text in */

typedef struct run_text_args {
    const char *path, *text, *pair, *device, *pooling, *out, *emb_out, *pin;
    long max_len;
    int json, normalize;
} run_text_args;

static int run_text_read_args(int argc, char **argv, run_text_args *a) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], **slot = NULL;
        if (cli_is_help(arg)) {
            fputs(USAGE_RUN_TEXT, stdout);
            return -1;
        }
        if (!strcmp(arg, "--json")) { a->json = 1; continue; }
        if (!strcmp(arg, "--normalize")) { a->normalize = 1; continue; }
        if (!strcmp(arg, "--text")) slot = &a->text;
        else if (!strcmp(arg, "--text-pair")) slot = &a->pair;
        else if (!strcmp(arg, "--device")) slot = &a->device;
        else if (!strcmp(arg, "--pooling")) slot = &a->pooling;
        else if (!strcmp(arg, "--output")) slot = &a->out;
        else if (!strcmp(arg, "--embedding-output")) slot = &a->emb_out;
        else if (!strcmp(arg, "--expect-sha256")) slot = &a->pin;
        else if (!strcmp(arg, "--max-len")) {
            if (++i >= argc || cli_parse_count(argv[i], 1, &a->max_len))
                return cli_usage_error(USAGE_RUN_TEXT, "--max-len needs a positive count%s", "");
            continue;
        } else if (!strcmp(arg, "--ids") || !strcmp(arg, "--ids-file") || !strcmp(arg, "--types") ||
                   !strcmp(arg, "--mask") || !strcmp(arg, "--pooled-output"))
            return cli_usage_error(USAGE_RUN_TEXT, "run: %s cannot be combined with --text", arg);
        else if (arg[0] == '-' && arg[1]) return cli_usage_error(USAGE_RUN_TEXT, "run: unknown option '%s'", arg);
        else if (!a->path) { a->path = arg; continue; }
        else return cli_usage_error(USAGE_RUN_TEXT, "run: unexpected argument '%s'", arg);
        if (++i >= argc) return cli_usage_error(USAGE_RUN_TEXT, "%s needs a value", arg);
        *slot = argv[i];
    }
    return 0;
}

/* Checks the arguments; 0 or the exit status. */
static int run_text_check(const run_text_args *a, bertc_device_kind *kind) {
    if (!a->path) return cli_usage_error(USAGE_RUN_TEXT, "run: missing PLAN%s", "");
    if (!a->text) return cli_usage_error(USAGE_RUN_TEXT, "run: missing --text%s", "");
    if (cli_parse_device(a->device, kind))
        return cli_usage_error(USAGE_RUN_TEXT, "run: --text needs --device cuda or emu, not '%s'", a->device);
    if (a->pooling && strcmp(a->pooling, "cls") && strcmp(a->pooling, "mean") && strcmp(a->pooling, "pooler"))
        return cli_usage_error(USAGE_RUN_TEXT, "--pooling: '%s' is not one of cls, mean, pooler", a->pooling);
    return cli_require_plan(a->path, "--text runs plans, whose tokenizer travels inside them");
}

/* The embedding (E values) as --pooling says ("model": the plan's
 * sentence_embedding, whose width a Dense module may make E != H),
 * L2-normalised when asked. */
static void run_text_embedding(const char *pooling, const run_outputs *o, int64_t n, int64_t H, int64_t E,
                               int normalize, float *emb) {
    for (int64_t c = 0; c < E; c++) {
        if (!strcmp(pooling, "model")) emb[c] = o->data[RUN_OUT_SENTENCE][c];
        else if (!strcmp(pooling, "pooler")) emb[c] = o->data[RUN_OUT_POOLER][c];
        else if (!strcmp(pooling, "cls")) emb[c] = o->data[RUN_OUT_HIDDEN][c];
        else {
            double sum = 0; /* mean: a text's tokens are all attended */
            for (int64_t r = 0; r < n; r++) sum += o->data[RUN_OUT_HIDDEN][r * H + c];
            emb[c] = (float)(sum / (double)n);
        }
    }
    if (!normalize) return;
    double ss = 0;
    for (int64_t c = 0; c < E; c++) ss += (double)emb[c] * emb[c];
    double nrm = sqrt(ss);
    if (nrm < 1e-12) nrm = 1e-12;
    for (int64_t c = 0; c < E; c++) emb[c] = (float)(emb[c] / nrm);
}

static void run_text_print(const run_text_args *a, const bertc_encoding *e, const char *pname, const float *emb,
                           int64_t H) {
    if (a->json) {
        printf("{");
        cli_print_encoding(e, 1);
        printf(", \"pooling\": \"%s\", \"normalized\": %s, \"embedding\": [", pname, a->normalize ? "true" : "false");
        for (int64_t c = 0; c < H; c++) printf("%s%.9g", c ? ", " : "", emb[c]);
        printf("]}\n");
        return;
    }
    cli_print_encoding(e, 0);
    printf("embedding (%s%s) [%lld]:", pname, a->normalize ? ", L2-normalised" : "", (long long)H);
    for (int64_t c = 0; c < H && c < 8; c++) printf(" %+.6f", emb[c]);
    printf("%s\n", H > 8 ? " ..." : "");
}

/* A classification head's answer: the logit of every label (one label: the
 * score), or per token the best label and its logit. */
static void run_text_print_logits(const run_text_args *a, bertc_plan *pl, const bertc_encoding *e,
                                  const run_outputs *o) {
    const float *lg = o->data[RUN_OUT_LOGITS];
    int per_token = o->ndim[RUN_OUT_LOGITS] == 2;
    int64_t nl = o->shape[RUN_OUT_LOGITS][per_token ? 1 : 0], rows = per_token ? bertc_encoding_len(e) : 1;
    if (a->json) {
        printf("{");
        cli_print_encoding(e, 1);
        printf(", \"labels\": [");
        for (int64_t k = 0; k < nl; k++) {
            printf("%s", k ? ", " : "");
            inspect_json_str(stdout, bertc_plan_label(pl, (int)k) ? bertc_plan_label(pl, (int)k) : "");
        }
        printf("], \"logits\": [");
        for (int64_t i = 0; i < rows * nl; i++) printf("%s%.9g", i ? ", " : "", lg[i]);
        printf("]}\n");
        return;
    }
    cli_print_encoding(e, 0);
    for (int64_t r = 0; r < rows; r++) {
        const float *row = lg + r * nl;
        int64_t best = 0;
        for (int64_t k = 1; k < nl; k++) best = row[k] > row[best] ? k : best;
        const char *name = bertc_plan_label(pl, (int)best);
        if (per_token)
            printf("token %lld %s: %s (%+.6f)\n", (long long)r, bertc_encoding_token(e, r), name ? name : "?",
                   row[best]);
        else if (nl == 1)
            printf("score%s%s: %+.6f\n", name ? " " : "", name ? name : "", row[0]);
        else
            for (int64_t k = 0; k < nl; k++)
                printf("%s %s: %+.6f\n", k == best ? "*" : " ", bertc_plan_label(pl, (int)k) ? bertc_plan_label(pl, (int)k) : "?",
                       row[k]);
    }
}

/* Runs the encoded text and prints or writes its embedding. */
static int run_text_go(run_text_args *a, bertc_plan *pl, bertc_device_kind kind, const bertc_encoding *e,
                       run_outputs *o, run_files *f, float **emb) {
    int64_t n = bertc_encoding_len(e), H = bertc_plan_hidden(pl);
    ref_request req = {.len = n, .input_ids = bertc_encoding_ids(e), .token_type_ids = bertc_encoding_type_ids(e)};
    int rc = run_plan(pl, kind, &req, o);
    if (rc) return rc;
    int classify = o->data[RUN_OUT_LOGITS] && !a->pooling && !a->emb_out;
    if (!a->pooling) a->pooling = o->data[RUN_OUT_SENTENCE] ? "model" : o->data[RUN_OUT_POOLER] ? "pooler" : "cls";
    if (!strcmp(a->pooling, "pooler") && !o->data[RUN_OUT_POOLER]) {
        fprintf(stderr, "bertc: error: %s has no pooler_output (the model has no pooler); use --pooling cls or mean\n",
                a->path);
        return DIAG_CODE_INPUT;
    }
    const int ks = RUN_OUT_SENTENCE;
    int64_t E = !strcmp(a->pooling, "model") ? o->shape[ks][o->ndim[ks] - 1] : H;
    if (!(*emb = calloc((size_t)E, sizeof **emb))) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    run_text_embedding(a->pooling, o, n, H, E, a->normalize, *emb);
    diag d;
    diag_init(&d);
    int64_t eshape[1] = {E};
    int k = o->first;
    int ok = (!a->out || npy_write_f32_to(&f->fa[0], o->data[k], o->ndim[k], o->shape[k]) == 0) &&
             (!a->emb_out || npy_write_f32_to(&f->fa[1], *emb, 1, eshape) == 0);
    if (file_atomic_commit_all(f->fa, 2, ok, &d)) return cli_fail(&d);
    if (classify)
        run_text_print_logits(a, pl, e, o);
    else
        run_text_print(a, e, !strcmp(a->pooling, "model") ? "sentence_embedding" : a->pooling, *emb, E);
    return 0;
}

int cmd_run_text(int argc, char **argv) {
    run_text_args a = {.device = "cuda"};
    bertc_device_kind kind;
    int rc = run_text_read_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = run_text_check(&a, &kind))) return rc;
    run_files f;
    const char *outs[2] = {a.out, a.emb_out}, *what[2] = {"--output", "--embedding-output"}, *ins[1] = {a.path};
    diag d;
    diag_init(&d);
    if (run_files_open(&f, outs, what, ins, 1, &d)) {
        run_files_abort(&f);
        return cli_fail(&d);
    }
    bertc_plan *pl = NULL;
    if ((rc = cli_plan_open(a.path, a.pin, &pl))) {
        run_files_abort(&f);
        return rc;
    }
    bertc_encoding *e = NULL;
    run_outputs o;
    memset(&o, 0, sizeof o);
    float *emb = NULL;
    rc = cli_encode_text(pl, a.text, a.pair, a.max_len, &e);
    if (!rc) rc = run_text_go(&a, pl, kind, e, &o, &f, &emb);
    run_files_abort(&f);
    run_outputs_free(&o);
    free(emb);
    bertc_encoding_free(e);
    bertc_plan_close(pl);
    return rc;
}
