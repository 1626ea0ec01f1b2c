/*
 * cli_export_triton — `bertc export-triton PLAN REPO`: a Triton Inference
 * Server model repository entry that serves the plan with nothing else to
 * configure (docs/serving.md):
 *
 *     REPO/NAME/config.pbtxt            inputs, outputs, batching, instances,
 *                                       the backend's parameters
 *     REPO/NAME/1/model.plan            the plan
 *     REPO/NAME/1/libtriton_bertc.so    the backend (Triton looks in the
 *                                       version folder first)
 *     REPO/NAME/1/libbertc_emudev.so    the emulated device, found by the
 *                                       backend beside itself
 *
 * The configuration is derived from the plan, never hard-coded: the text
 * inputs only if the plan carries a tokenizer, TOKEN_TYPE_IDS only if the
 * model has token types, one output per plan output with the plan's name
 * and width (per-token outputs [-1, cols], per-sequence ones [cols]), and
 * the plan's SHA-256 as the backend's pin.  --device chooses the instance
 * kind: cuda -> KIND_GPU (K instances on every GPU), emu -> KIND_CPU with
 * the emulated device; the plan must carry an image for it.
 *
 * Dynamic batching's preferred batch sizes come from the plan's token
 * buckets (bertc compile --batch-tokens): the backend runs a batch's rows
 * as packed batches, so a good batch is one that fills a token bucket —
 * for each bucket, the requests of the expected mean length (--mean-len,
 * default half the longest length bucket) it holds, at most its own
 * request limit and max_batch_size, distinct and ascending; max_batch_size
 * defaults to the plan's largest packed batch.  A plan without token
 * buckets has no preferred size, and the configuration says why in a
 * comment — the batcher then hands the backend whatever queued while an
 * instance was busy, up to --max-batch (default 8), without waiting.
 *
 * Nothing half-written: the model folder is built in a temporary folder
 * beside its destination and renamed into place when complete; an
 * existing REPO/NAME is never touched (the message says how to replace it).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fileutil.h"
#include "plan.h"

static const char USAGE_EXPORT_TRITON[] =
    "usage: bertc export-triton PLAN REPO [--name N] [--device cuda|emu] [--max-batch B]\n"
    "                           [--instances K] [--ids-type int64|int32] [--backend FILE]\n"
    "\n"
    "Writes REPO/N/config.pbtxt and REPO/N/1/ (the plan, the Triton backend\n"
    "libtriton_bertc.so and the emulated device), so that\n"
    "`tritonserver --model-repository REPO` serves the plan (docs/serving.md).\n"
    "\n"
    "  --name N        the model's name in Triton (default: the plan's model name)\n"
    "  --device D      cuda: KIND_GPU instances (default); emu: KIND_CPU instances\n"
    "                  on the emulated device\n"
    "  --max-batch B   max_batch_size, the dynamic batcher's limit in rows (default: the\n"
    "                  plan's largest packed batch, 8 without token buckets; 0: no\n"
    "                  batching, inputs without a batch dimension)\n"
    "  --mean-len L    the mean request length the preferred batch sizes assume (each\n"
    "                  token bucket's tokens / L requests; at most the longest bucket,\n"
    "                  default half of it)\n"
    "  --instances K   instances per GPU (cuda) or in all (emu) (default 1)\n"
    "  --ids-type T    data type of INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS (default int64)\n"
    "  --backend FILE  the backend library (default: libtriton_bertc.so beside bertc,\n"
    "                  or in ../lib)\n";

typedef struct export_opts {
    const char *plan, *repo, *name, *backend, *ids_type;
    bertc_device_kind device;
    long max_batch, instances, mean_len;
    char name_buf[256];
} export_opts;

static int export_parse(int argc, char **argv, export_opts *o) {
    memset(o, 0, sizeof *o);
    o->device = BERTC_DEVICE_CUDA;
    o->max_batch = -1; /* the plan's (export_main) */
    o->instances = 1;
    o->ids_type = "int64";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            fputs(USAGE_EXPORT_TRITON, stdout);
            return -1;
        }
        if (a[0] != '-' || !a[1]) {
            if (o->plan && o->repo)
                return cli_usage_error(USAGE_EXPORT_TRITON, "export-triton: unexpected argument '%s'", a);
            *(o->plan ? &o->repo : &o->plan) = a;
            continue;
        }
        if (!v) return cli_usage_error(USAGE_EXPORT_TRITON, "%s needs a value", a);
        i++;
        const char *bad = NULL;
        if (!strcmp(a, "--name")) o->name = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--device")) bad = cli_parse_device(v, &o->device) ? "--device: '%s' is not cuda or emu" : NULL;
        else if (!strcmp(a, "--max-batch"))
            bad = cli_parse_count(v, 0, &o->max_batch) ? "--max-batch: '%s' is not a count" : NULL;
        else if (!strcmp(a, "--mean-len"))
            bad = cli_parse_count(v, 1, &o->mean_len) ? "--mean-len: '%s' is not a positive length" : NULL;
        else if (!strcmp(a, "--instances"))
            bad = cli_parse_count(v, 1, &o->instances) ? "--instances: '%s' is not a positive count" : NULL;
        else if (!strcmp(a, "--ids-type")) {
            o->ids_type = v;
            bad = strcmp(v, "int64") && strcmp(v, "int32") ? "--ids-type: '%s' is not int64 or int32" : NULL;
        } else return cli_usage_error(USAGE_EXPORT_TRITON, "export-triton: unknown option '%s'", a);
        if (bad) return cli_usage_error(USAGE_EXPORT_TRITON, bad, v);
    }
    if (!o->plan || !o->repo)
        return cli_usage_error(USAGE_EXPORT_TRITON, "export-triton: missing %s", o->plan ? "REPO" : "PLAN");
    return 0;
}

/* dir/name into out; -1 (and why, in d) if it does not fit. */
static int export_join(char *out, size_t cap, const char *dir, const char *name, diag *d) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) return diag_set(d, DIAG_CODE_INPUT, "%s/%s: the path is too long", dir, name);
    return 0;
}

/* A Triton model name: a folder name of letters, digits, '-', '_', '.'. */
static int export_name_ok(const char *n) {
    return n[0] && n[0] != '.' && strlen(n) < 200 && strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                              "0123456789-_.") == strlen(n);
}

/* The plan must carry an image for the chosen device. */
static int export_check_images(const char *path, bertc_device_kind device, diag *d) {
    plan p;
    plan_init(&p);
    if (plan_read(&p, path, d)) return -1;
    int found = 0, n = 0;
    char have[256] = "";
    for (int i = 0; i < p.nimages; i++) {
        found |= (p.images[i].kind == PLAN_IMAGE_EMU) == (device == BERTC_DEVICE_EMULATED);
        n += snprintf(have + n, n < (int)sizeof have ? sizeof have - (size_t)n : 0, "%s%s", i ? "," : "",
                      p.images[i].arch);
    }
    plan_free(&p);
    if (found) return 0;
    return diag_set(d, DIAG_CODE_INPUT, "%s has no kernel image for %s (it has: %s); compile it with --arch %s", path,
                    device == BERTC_DEVICE_EMULATED ? "the emulated device" : "a GPU", n ? have : "none",
                    device == BERTC_DEVICE_EMULATED ? "...,emu" : "sm_75,...");
}

/* A library the repository needs: `given`, else $env, else beside bertc, else in ../lib. */
static int export_find_lib(const char *given, const char *env, const char *file, char *out, size_t cap, diag *d) {
    const char *e = env ? getenv(env) : NULL;
    if (given || (e && *e)) {
        snprintf(out, cap, "%s", given ? given : e);
        if (access(out, R_OK) == 0) return 0;
        return diag_set(d, DIAG_CODE_INPUT, "%s: %s", out, strerror(errno));
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"", "/../lib"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            int k = snprintf(out, cap, "%s%s/%s", exe, rel[i], file);
            if (k > 0 && (size_t)k < cap && access(out, R_OK) == 0) return 0;
        }
    }
    return diag_set(d, DIAG_CODE_INPUT, "cannot find %s beside bertc or in ../lib (build it with `make triton`%s)",
                    file, given ? "" : ", or name it with --backend");
}

static void export_inputs(FILE *f, bertc_plan *pl, const export_opts *o) {
    const char *ragged = o->max_batch > 0 ? " allow_ragged_batch: true" : "";
    const char *t = !strcmp(o->ids_type, "int32") ? "TYPE_INT32" : "TYPE_INT64";
    if (bertc_plan_has_tokenizer(pl))
        fprintf(f, "# Send TEXT (one string per row, tokenised by the plan's tokenizer) or INPUT_IDS;\n");
    else
        fprintf(f, "# Send INPUT_IDS (the plan carries no tokenizer, so there is no text input);\n");
    fprintf(f, "# each input is optional on its own, the backend says what is missing.\ninput [\n");
    if (bertc_plan_has_tokenizer(pl))
        fprintf(f, "  { name: \"TEXT\" data_type: TYPE_STRING dims: [ 1 ] optional: true },\n"
                   "  { name: \"TEXT_PAIR\" data_type: TYPE_STRING dims: [ 1 ] optional: true },\n");
    fprintf(f, "  { name: \"INPUT_IDS\" data_type: %s dims: [ -1 ] optional: true%s },\n", t, ragged);
    fprintf(f, "  { name: \"ATTENTION_MASK\" data_type: %s dims: [ -1 ] optional: true%s }%s\n", t, ragged,
            bertc_plan_type_vocab_size(pl) > 0 ? "," : "");
    if (bertc_plan_type_vocab_size(pl) > 0)
        fprintf(f, "  { name: \"TOKEN_TYPE_IDS\" data_type: %s dims: [ -1 ] optional: true%s }\n", t, ragged);
    fprintf(f, "]\n");
}

static void export_outputs(FILE *f, bertc_plan *pl) {
    int n = bertc_plan_output_count(pl);
    fprintf(f, "# The plan's outputs: per token [length, width], per sequence [width].\noutput [\n");
    for (int i = 0; i < n; i++) {
        bertc_output_info oi;
        if (bertc_plan_output_info(pl, i, &oi) != BERTC_STATUS_OK) continue;
        if (oi.per_token)
            fprintf(f, "  { name: \"%s\" data_type: TYPE_FP32 dims: [ -1, %lld ] }%s\n", oi.name, (long long)oi.cols,
                    i + 1 < n ? "," : "");
        else
            fprintf(f, "  { name: \"%s\" data_type: TYPE_FP32 dims: [ %lld ] }%s\n", oi.name, (long long)oi.cols,
                    i + 1 < n ? "," : "");
    }
    fprintf(f, "]\n");
}

/* Preferred batch sizes from the plan's token buckets: per bucket, the
 * requests of mean_len tokens it holds (at most its request limit and
 * max_batch), distinct and ascending; none without token buckets. */
static int export_preferred_sizes(bertc_plan *pl, const export_opts *o, long *sizes, int cap) {
    int n = 0, longest = bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1);
    long mean = o->mean_len ? o->mean_len : (longest + 1) / 2;
    for (int b = 0; b < bertc_plan_token_bucket_count(pl) && n < cap; b++) {
        long k = bertc_plan_token_bucket_tokens(pl, b) / (mean > 0 ? mean : 1);
        long most = bertc_plan_token_bucket_max_batch(pl, b);
        k = k < 1 ? 1 : k > most ? most : k;
        k = k > o->max_batch ? o->max_batch : k;
        if (!n || k > sizes[n - 1]) sizes[n++] = k;
    }
    return n;
}

static void export_batching(FILE *f, bertc_plan *pl, const export_opts *o) {
    long sizes[16];
    int n = export_preferred_sizes(pl, o, sizes, 16);
    fprintf(f, "# Requests that queue while an instance is busy reach it together, up to\n"
               "# max_batch_size rows.  Preferred batch sizes come from the plan's token\n"
               "# buckets; ");
    if (!n) {
        fprintf(f, "this plan has none (sequence-length buckets only), so the batcher\n"
                   "# does not wait for a size and the backend runs a batch's rows one by one.\n"
                   "dynamic_batching {\n  max_queue_delay_microseconds: 0\n}\n");
        return;
    }
    fprintf(f, "each size is the requests of %ld tokens (--mean-len) that fill one, so a\n"
               "# batch of that size runs as one packed launch.\ndynamic_batching {\n  preferred_batch_size: [",
            o->mean_len ? o->mean_len : (long)(bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1) + 1) / 2);
    for (int i = 0; i < n; i++) fprintf(f, "%s %ld", i ? "," : "", sizes[i]);
    fprintf(f, " ]\n  max_queue_delay_microseconds: 100\n}\n");
}

static char *export_config(bertc_plan *pl, const export_opts *o, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) return NULL;
    int emu = o->device == BERTC_DEVICE_EMULATED;
    int nb = bertc_plan_bucket_count(pl);
    fprintf(f, "# Written by bertc export-triton (docs/serving.md) from %s:\n"
               "# model %s, hidden %lld, longest request %d tokens.\n"
               "name: \"%s\"\nbackend: \"bertc\"\nmax_batch_size: %ld\n",
            o->plan, bertc_plan_model_name(pl), (long long)bertc_plan_hidden(pl),
            nb > 0 ? bertc_plan_bucket_len(pl, nb - 1) : 0, o->name, o->max_batch);
    export_inputs(f, pl, o);
    export_outputs(f, pl);
    if (o->max_batch > 0) export_batching(f, pl, o);
    fprintf(f, "# %s\ninstance_group [\n  { count: %ld kind: %s }\n]\n",
            emu ? "The emulated device runs on the CPU (libbertc_emudev.so in the version folder)."
                : "count instances on every GPU; restrict with gpus: [ ... ].",
            o->instances, emu ? "KIND_CPU" : "KIND_GPU");
    fprintf(f, "# The backend's settings: the device, the plan's file in the version folder,\n"
               "# and its SHA-256, which the backend checks before using the plan.\n"
               "parameters { key: \"device\" value: { string_value: \"%s\" } }\n"
               "parameters { key: \"plan\" value: { string_value: \"model.plan\" } }\n"
               "parameters { key: \"sha256\" value: { string_value: \"%s\" } }\n",
            emu ? "emu" : "cuda", bertc_plan_sha256(pl));
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

/* Writes `len` bytes (or the file `src` when data is NULL) to dir/name. */
static int export_put(const char *dir, const char *name, const char *src, const void *data, size_t len, diag *d) {
    char path[PATH_MAX];
    if (export_join(path, sizeof path, dir, name, d)) return -1;
    file_mapping m = {-1, NULL, 0};
    if (!data && file_map(src, &m, d)) return -1;
    file_atomic fa;
    int rc = file_atomic_open(&fa, path, d);
    if (!rc) {
        int ok = file_atomic_write(&fa, data ? data : m.data, data ? len : m.len) == 0;
        if (!ok) diag_set(d, DIAG_CODE_INTERNAL, "%s: %s", path, strerror(errno));
        rc = file_atomic_commit(&fa, ok, d) || !ok ? -1 : 0;
    }
    if (!data) file_unmap(&m);
    return rc;
}

static void export_remove_tmp(const char *tmp) {
    static const char *const files[] = {"1/model.plan", "1/libtriton_bertc.so", "1/libbertc_emudev.so",
                                        "config.pbtxt"};
    char path[PATH_MAX];
    diag d;
    diag_init(&d);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!export_join(path, sizeof path, tmp, files[i], &d)) unlink(path);
    if (!export_join(path, sizeof path, tmp, "1", &d)) rmdir(path);
    rmdir(tmp);
}

/* The model folder, built in REPO/.NAME.tmp-XXXXXX and renamed into place. */
static int export_write(const export_opts *o, const char *config, size_t config_len, const char *backend,
                        const char *emudev, diag *d) {
    char dst[PATH_MAX], tmp[PATH_MAX], ver[PATH_MAX], tmpl[300];
    snprintf(tmpl, sizeof tmpl, ".%s.tmp-XXXXXX", o->name);   /* names are < 200 bytes */
    if (export_join(dst, sizeof dst, o->repo, o->name, d) || export_join(tmp, sizeof tmp, o->repo, tmpl, d)) return -1;
    if (mkdir(o->repo, 0777) && errno != EEXIST)
        return diag_set(d, DIAG_CODE_INPUT, "%s: %s", o->repo, strerror(errno));
    if (access(dst, F_OK) == 0)
        return diag_set(d, DIAG_CODE_INPUT, "%s exists; remove it first or choose another --name", dst);
    if (!mkdtemp(tmp)) return diag_set(d, DIAG_CODE_INPUT, "%s: %s", o->repo, strerror(errno));
    mode_t mask = umask(0);   /* mkdtemp made it 0700; a server may run as another user */
    umask(mask);
    chmod(tmp, 0777 & ~mask);
    int rc = export_join(ver, sizeof ver, tmp, "1", d);
    if (!rc && mkdir(ver, 0777)) rc = diag_set(d, DIAG_CODE_INTERNAL, "%s: %s", ver, strerror(errno));
    if (!rc) rc = export_put(ver, "model.plan", o->plan, NULL, 0, d);
    if (!rc) rc = export_put(ver, "libtriton_bertc.so", backend, NULL, 0, d);
    if (!rc) rc = export_put(ver, "libbertc_emudev.so", emudev, NULL, 0, d);
    if (!rc) rc = export_put(tmp, "config.pbtxt", NULL, config, config_len, d);
    if (!rc && rename(tmp, dst)) rc = diag_set(d, DIAG_CODE_INPUT, "%s: %s", dst, strerror(errno));
    if (rc) export_remove_tmp(tmp);
    return rc;
}

int cmd_export_triton(int argc, char **argv) {
    export_opts o;
    int rc = export_parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    diag d;
    diag_init(&d);
    bertc_plan *pl = NULL;
    if ((rc = cli_plan_open(o.plan, NULL, &pl))) return rc;
    if (o.max_batch < 0) o.max_batch = bertc_plan_max_batch(pl) > 0 ? bertc_plan_max_batch(pl) : 8;
    int longest = bertc_plan_bucket_len(pl, bertc_plan_bucket_count(pl) - 1);
    if (o.mean_len > longest) {
        bertc_plan_close(pl);
        fprintf(stderr, "bertc: error: --mean-len: %ld is longer than the plan's longest request (%d tokens)\n",
                o.mean_len, longest);
        return DIAG_CODE_USAGE;
    }
    if (!o.name) {
        snprintf(o.name_buf, sizeof o.name_buf, "%s", bertc_plan_model_name(pl));
        for (char *c = o.name_buf; *c; c++)
            if (!strchr("-_.", *c) && !(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') && !(*c >= '0' && *c <= '9'))
                *c = '_';
        o.name = o.name_buf;
    }
    char backend[PATH_MAX], emudev[PATH_MAX];
    size_t config_len = 0;
    char *config = NULL;
    if (!export_name_ok(o.name))
        rc = cli_usage_error(USAGE_EXPORT_TRITON, "--name: '%s' is not a model name (letters, digits, - _ .)", o.name);
    else if (export_check_images(o.plan, o.device, &d) ||
             export_find_lib(o.backend, NULL, "libtriton_bertc.so", backend, sizeof backend, &d) ||
             export_find_lib(NULL, "BERTC_EMU_DEVICE", "libbertc_emudev.so", emudev, sizeof emudev, &d))
        rc = cli_fail(&d);
    else if (!(config = export_config(pl, &o, &config_len)))
        rc = cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    else if (export_write(&o, config, config_len, backend, emudev, &d))
        rc = cli_fail(&d);
    else
        printf("%s/%s: config.pbtxt, 1/model.plan, 1/libtriton_bertc.so, 1/libbertc_emudev.so\n"
               "serve it: tritonserver --model-repository %s\n", o.repo, o.name, o.repo);
    free(config);
    bertc_plan_close(pl);
    return rc;
}
