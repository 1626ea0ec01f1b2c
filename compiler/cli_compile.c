/*
 * cli_compile — `bertc compile MODEL.yaml -o PLAN`: parses the options into
 * compile_options and runs the pipeline (compile.h); the progress lines on
 * stderr come from the pipeline's stage callback.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compile.h"
#include "inspect.h"

static const char USAGE_COMPILE[] =
    "usage: bertc compile MODEL.yaml -o PLAN [--arch LIST] [--buckets LIST]\n"
    "                     [--batch-tokens LIST|default] [--max-batch N]\n"
    "                     [--precision fp16|bf16|fp32] [--fusion baseline|default]\n"
    "                     [--tune all|none|GPU,...]\n"
    "                     [-j N] [--no-cache] [-v]\n"
    "\n"
    "Fuses the graph, lowers it per sequence-length bucket to generated\n"
    "kernels and cuBLASLt GEMMs, compiles the kernels (NVRTC once per PTX\n"
    "target, ptxas per architecture: CUBINs, plus compute_80 PTX and, with an\n"
    "arch of sm_90 or newer, the PTX of the lowest such (compute_90 with sm_90),\n"
    "which GPUs without a CUBIN JIT: the tensor-core path) and writes one\n"
    "self-contained plan (docs/plan-format.md).  Built images are cached under\n"
    "$BERTC_CACHE_DIR (default ~/.cache/bertc/images-v1), so an unchanged\n"
    "recompile runs no compiler; the plan is the same either way.\n"
    "\n"
    "  --arch LIST       GPUs to serve, comma-separated, default\n"
    "                    sm_75,sm_80,sm_86,sm_89,sm_90 (an arch a lower listed\n"
    "                    one of the same major serves, as sm_80 serves sm_86,\n"
    "                    gets no CUBIN of its own); 'emu' adds the emulated\n"
    "                    device's CPU image\n"
    "  --buckets LIST    comma-separated multiples of 8, ascending, each <= max_seq_len;\n"
    "                    default 32,64,128,256,384,512 capped at max_seq_len\n"
    "  --batch-tokens LIST  token buckets for packed batches (bertc_infer_batch):\n"
    "                    total tokens, comma-separated multiples of 8, ascending;\n"
    "                    'default' = 256,512,1024,2048,4096; default: none (a\n"
    "                    plan for one request at a time, docs/runtime.md)\n"
    "  --max-batch N     requests per packed batch at most, 1..1024 (default 64)\n"
    "  --precision P     storage precision of weights and activations (default fp16)\n"
    "  --fusion F        default: residual + LayerNorm in the output projection's and\n"
    "                    FC2's GEMM (5 launches per encoder layer); baseline: the\n"
    "                    7-launch structure (cuBLASLt GEMMs, separate add + LayerNorm)\n"
    "  -j N              compile threads (default: the number of cores)\n"
    "  --no-cache        neither read nor write the compile cache\n"
    "  --tune LIST       the GPUs of the performance model bertc's GEMM tilings are\n"
    "                    chosen for: 'all' (default) of those the archs serve, or a\n"
    "                    list of t4, a10, l4, l40s, a100, h100, h200, b200, each run by\n"
    "                    a listed --arch: a step list per compute capability where\n"
    "                    their best choices differ, picked at run time by the device's\n"
    "                    capability (the emulated device and older GPUs take the best\n"
    "                    compromise over all of them); 'none': one step list, that\n"
    "                    compromise, for every GPU.  The plan runs on every listed arch\n"
    "                    either way.\n"
    "  -v                print what each fusion pass did\n";

static int cli_parse_precision(const char *s, plan_dtype *out) {
    if (!strcmp(s, "fp16")) *out = PLAN_DTYPE_F16;
    else if (!strcmp(s, "bf16")) *out = PLAN_DTYPE_BF16;
    else if (!strcmp(s, "fp32")) *out = PLAN_DTYPE_F32;
    else return -1;
    return 0;
}

/* Split a comma list into at most cap items (pointers into a copy); -1
 * when it has more, or an empty item ("32,", ",emu", "8,,16": a slip the
 * user should see, not a list read around). */
static int cli_split_list(char *copy, char **items, int cap) {
    int n = 0;
    for (char *tok = copy, *next; tok; tok = next) {
        if ((next = strchr(tok, ','))) *next++ = '\0';
        if (n == cap || !*tok) return -1;
        items[n++] = tok;
    }
    return n;
}

/* --buckets and --batch-tokens (`opt`): ascending, distinct, positive
 * multiples of 8 (the model's max_seq_len is checked by the pipeline,
 * which knows it). */
static int cli_parse_buckets(const char *opt, const char *list, int *out, int *nout) {
    char *copy = strdup(list), *items[COMPILE_MAX_BUCKETS];
    int n = copy ? cli_split_list(copy, items, COMPILE_MAX_BUCKETS) : -1, rc = 0;
    diag d;
    diag_init(&d);
    if (n <= 0)
        rc = diag_set(&d, DIAG_CODE_USAGE, "%s: '%s' is not a comma-separated list of at most %d lengths", opt,
                      list, COMPILE_MAX_BUCKETS);
    for (int i = 0; !rc && i < n; i++) {
        char *end;
        long v = strtol(items[i], &end, 10);
        if (end == items[i] || *end || v < 8 || v % 8)
            rc = diag_set(&d, DIAG_CODE_USAGE, "%s: '%s' is not a positive multiple of 8", opt, items[i]);
        else if (v > KERNEL_MAX_BUCKET)
            rc = diag_set(&d, DIAG_CODE_USAGE, "%s: %ld is longer than any model (at most %d)", opt, v,
                          KERNEL_MAX_BUCKET);
        else if (*nout && v <= out[*nout - 1])
            rc = diag_set(&d, DIAG_CODE_USAGE, "%s: %ld does not follow %d (expected ascending, distinct)", opt, v,
                          out[*nout - 1]);
        else
            out[(*nout)++] = (int)v;
    }
    free(copy);
    return rc ? cli_fail(&d) : 0;
}

/* --batch-tokens LIST|default and --max-batch N. */
static int cli_parse_batch(const char *tokens, const char *max_batch, compile_options *o) {
    static const int defaults[] = COMPILE_DEFAULT_TOKEN_BUCKETS;
    if (max_batch && !tokens)
        return cli_usage_error(USAGE_COMPILE, "--max-batch needs --batch-tokens (a plan without token buckets runs one "
                               "request at a time)%s", "");
    if (max_batch) {
        char *end;
        long v = strtol(max_batch, &end, 10);
        if (end == max_batch || *end || v < 1 || v > KERNEL_MAX_SEQS)
            return cli_usage_error(USAGE_COMPILE, "--max-batch: '%s' is not a request count (1..1024)", max_batch);
        o->max_batch = (int)v;
    }
    if (!tokens) return 0;
    if (strcmp(tokens, "default")) return cli_parse_buckets("--batch-tokens", tokens, o->token_buckets, &o->ntoken_buckets);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) o->token_buckets[o->ntoken_buckets++] = defaults[i];
    o->token_buckets_default = 1;
    return 0;
}

/* --arch: GPU architectures and/or emu, each once. */
static int cli_parse_archs(const char *list, arch_list *targets) {
    char *copy = strdup(list), *items[ARCH_MAX + 1];
    int n = copy ? cli_split_list(copy, items, ARCH_MAX + 1) : -1, rc = 0;
    memset(targets, 0, sizeof *targets);
    diag d;
    diag_init(&d);
    if (n <= 0) rc = cli_usage_error(USAGE_COMPILE, "--arch: '%s' is not a comma-separated list of architectures", list);
    for (int i = 0; !rc && i < n; i++)
        if (arch_list_add(targets, items[i], "--arch", &d)) rc = cli_fail(&d);
    if (!rc && targets->count == 0 && !targets->emu)
        rc = cli_usage_error(USAGE_COMPILE, "--arch: no architecture given%s", "");
    free(copy);
    return rc;
}

static const char *cli_plural(int n) { return n == 1 ? "" : "s"; }

typedef struct cli_compile_ctx {
    const compile_options *o;
    int verbose;
} cli_compile_ctx;

/* Progress on stderr: what -v asks for after fusion, the kernel count
 * before the long NVRTC step, and the summary with each stage's time. */
static void cli_compile_stage(void *user, compile_stage stage, const compile_report *r) {
    const cli_compile_ctx *c = user;
    const compile_options *o = c->o;
    if (stage == COMPILE_STAGE_FUSE && c->verbose) passes_report_write(&r->passes, stderr);
    if (stage == COMPILE_STAGE_LOWER)
        fprintf(stderr, "bertc: %s: %d bucket%s, %d kernels, compiling for %d architecture%s\n",
                o->model_path, r->nbuckets, cli_plural(r->nbuckets), r->nkernels, o->targets.count,
                cli_plural(o->targets.count));
    if (stage == COMPILE_STAGE_LOWER && r->ntoken_buckets)
        fprintf(stderr, "bertc: %s: of them %d token bucket%s (packed batches of up to %d requests)%s\n", o->model_path,
                r->ntoken_buckets, cli_plural(r->ntoken_buckets), o->max_batch,
                r->ntoken_buckets < o->ntoken_buckets ? "; the larger defaults are left out: no batch reaches them" : "");
    if (stage != COMPILE_STAGE_WRITE) return;
    const double *s = r->seconds;
    fprintf(stderr,
            "bertc: wrote %s: %s, %d bucket%s, %d kernels (%d texts), %d images; %.2f s (load %.2f, fuse %.2f, "
            "lower %.2f, kernels %.2f [%d of %d jobs cached], write %.2f)\n",
            o->out_path, inspect_precision_name(o->precision), r->nbuckets, cli_plural(r->nbuckets), r->nkernels,
            r->images.ndistinct, r->nimages, r->total_seconds, s[COMPILE_STAGE_LOAD], s[COMPILE_STAGE_FUSE], s[COMPILE_STAGE_LOWER],
            s[COMPILE_STAGE_GENERATE] + s[COMPILE_STAGE_BUILD], r->images.cached_jobs, r->images.njobs,
            s[COMPILE_STAGE_ASSEMBLE] + s[COMPILE_STAGE_WRITE]);
}

/* The options' raw values, checked after the whole line is read. */
typedef struct cli_compile_args {
    const char *out, *archs, *buckets, *precision, *fusion, *batch_tokens, *max_batch, *tune;
    int jobs, verbose, no_cache;
} cli_compile_args;

/* Reads argv; 0, -1 after --help, or the exit status of a usage error. */
static int cli_compile_read(int argc, char **argv, compile_options *o, cli_compile_args *a) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], **slot = NULL;
        if (cli_is_help(arg)) {
            fputs(USAGE_COMPILE, stdout);
            return -1;
        }
        if (!strcmp(arg, "-o")) slot = &a->out;
        else if (!strcmp(arg, "--arch")) slot = &a->archs;
        else if (!strcmp(arg, "--buckets")) slot = &a->buckets;
        else if (!strcmp(arg, "--precision")) slot = &a->precision;
        else if (!strcmp(arg, "--fusion")) slot = &a->fusion;
        else if (!strcmp(arg, "--batch-tokens")) slot = &a->batch_tokens;
        else if (!strcmp(arg, "--max-batch")) slot = &a->max_batch;
        else if (!strcmp(arg, "--tune")) slot = &a->tune;
        else if (!strcmp(arg, "-v")) { a->verbose = 1; continue; }
        else if (!strcmp(arg, "--no-cache")) { a->no_cache = 1; continue; }
        else if (!strcmp(arg, "-j")) {
            if (++i >= argc) return cli_usage_error(USAGE_COMPILE, "%s needs a value", arg);
            char *end;
            long v = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end || v < 1 || v > 256)
                return cli_usage_error(USAGE_COMPILE, "-j: '%s' is not a job count (1..256)", argv[i]);
            a->jobs = (int)v;
            continue;
        } else if (arg[0] == '-' && arg[1]) return cli_usage_error(USAGE_COMPILE, "compile: unknown option '%s'", arg);
        else if (!o->model_path) { o->model_path = arg; continue; }
        else return cli_usage_error(USAGE_COMPILE, "compile: unexpected argument '%s'", arg);
        if (++i >= argc) return cli_usage_error(USAGE_COMPILE, "%s needs a value", arg);
        *slot = argv[i];
    }
    return 0;
}

int cmd_compile(int argc, char **argv) {
    compile_options o;
    compile_options_init(&o);
    cli_compile_args a = {.precision = "fp16", .fusion = "default"};
    int rc = cli_compile_read(argc, argv, &o, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (!o.model_path) return cli_usage_error(USAGE_COMPILE, "compile: missing MODEL.yaml%s", "");
    if (!(o.out_path = a.out)) return cli_usage_error(USAGE_COMPILE, "compile: missing -o PLAN%s", "");
    if (cli_parse_precision(a.precision, &o.precision))
        return cli_usage_error(USAGE_COMPILE, "--precision: '%s' is not one of fp16, bf16, fp32", a.precision);
    if (!strcmp(a.fusion, "baseline")) o.fusion = PLAN_FUSION_BASELINE;
    else if (strcmp(a.fusion, "default"))
        return cli_usage_error(USAGE_COMPILE, "--fusion: '%s' is not one of baseline, default", a.fusion);
    if (a.archs && (rc = cli_parse_archs(a.archs, &o.targets))) return rc;
    if (a.buckets && (rc = cli_parse_buckets("--buckets", a.buckets, o.buckets, &o.nbuckets))) return rc;
    if ((rc = cli_parse_batch(a.batch_tokens, a.max_batch, &o))) return rc;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o.jobs = a.jobs ? a.jobs : ncpu > 0 ? (int)ncpu : 1;
    o.no_cache = a.no_cache;
    if (a.tune) o.tune = strcmp(a.tune, "none") ? a.tune : NULL;
    cli_compile_ctx ctx = {&o, a.verbose};
    o.stage = cli_compile_stage;
    o.user = &ctx;
    compile_report r;
    diag d;
    diag_init(&d);
    return compile_model(&o, &r, &d) ? cli_fail(&d) : 0;
}
