/*
 * bertc — the command line.  Each command is a short pipeline over the
 * library's stages, so this file reads as the product's table of contents:
 *
 *   import   Hugging Face directory  -> hf_import  -> model YAML
 *   run      model YAML -> model_load -> ref_run  -> .npy / stdout
 *
 * Conventions (docs/cli.md): results on stdout or in files, messages on
 * stderr, exit status 0 ok, 1 usage, 2 bad input, 3 internal or device error.
 * Outputs are written atomically, so a failed command leaves none behind.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "fileutil.h"
#include "hf_import.h"
#include "model.h"
#include "npy.h"
#include "ref.h"

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

static const char USAGE[] =
    "usage: bertc COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  import HF_DIR -o MODEL.yaml     Hugging Face BERT checkpoint -> graph description\n"
    "  run MODEL.yaml --device ref ... run a request through the reference executor\n"
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
    "usage: bertc run MODEL.yaml [--device ref] (--ids \"101 7592 102\" | --ids-file F)\n"
    "                 [--types \"0 0 0\"] [--mask \"1 1 1\"]\n"
    "                 [--output OUT.npy] [--pooled-output P.npy]\n"
    "\n"
    "Runs one request. --device ref is the reference executor (float32,\n"
    "double accumulation). Ids, types and mask are whitespace- or comma-\n"
    "separated integers of equal count; mask is Hugging Face's attention_mask\n"
    "(1 = attend, 0 = masked). --output writes last_hidden_state [len, hidden]\n"
    "as float32 .npy, --pooled-output writes pooler_output [hidden]; without\n"
    "them a summary is printed on stdout.\n";

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

static int cmd_run(int argc, char **argv) {
    const char *yaml = NULL, *device = "ref", *ids = NULL, *ids_file = NULL, *types = NULL, *mask = NULL;
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
        else if (!yaml) { yaml = a; continue; }
        else return usage_error(USAGE_RUN, "run: unexpected argument '%s'", a);
        if (++i >= argc) return usage_error(USAGE_RUN, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!yaml) return usage_error(USAGE_RUN, "run: missing MODEL.yaml%s", "");
    if (strcmp(device, "ref"))
        return usage_error(USAGE_RUN, "run: unknown device '%s' (supported: ref)", device);
    if (!ids == !ids_file) return usage_error(USAGE_RUN, "run: give exactly one of --ids and --ids-file%s", "");

    diag d;
    diag_init(&d);
    int32_t *id_v = NULL, *type_v = NULL, *mask_v = NULL;
    int64_t n_ids = 0, n_types = 0, n_mask = 0;
    char *file_text = NULL;
    model m;
    memset(&m, 0, sizeof m);
    ref_result res;
    memset(&res, 0, sizeof res);
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

    if (model_load(&m, yaml, &d)) { rc = fail(&d); goto done; }
    ref_request req = {.len = n_ids, .input_ids = id_v, .token_type_ids = type_v, .attention_mask = mask_v};
    if (ref_run(&m.graph, &m.weights, &req, &res, &d)) { rc = fail(&d); goto done; }

    const ref_tensor *last = ref_result_find(&res, "last_hidden_state");
    const ref_tensor *pooled = ref_result_find(&res, "pooler_output");
    if (out && !last) { diag_set(&d, DIAG_CODE_INPUT, "%s has no output 'last_hidden_state'", yaml); rc = fail(&d); goto done; }
    if (pooled_out && !pooled) {
        diag_set(&d, DIAG_CODE_INPUT, "%s has no output 'pooler_output' (the model has no pooler)", yaml);
        rc = fail(&d);
        goto done;
    }
    if (out && npy_write_f32(out, last->data, last->ndim, last->shape, &d)) { rc = fail(&d); goto done; }
    if (pooled_out && npy_write_f32(pooled_out, pooled->data, pooled->ndim, pooled->shape, &d)) {
        rc = fail(&d);
        goto done;
    }
    if (!out && !pooled_out)
        for (int i = 0; i < res.count; i++) print_summary(&res.outputs[i]);

done:
    ref_result_free(&res);
    model_free(&m);
    free(id_v);
    free(type_v);
    free(mask_v);
    free(file_text);
    return rc;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    if (argc < 2) { fputs(USAGE, stderr); return DIAG_CODE_USAGE; }
    const char *cmd = argv[1];
    if (is_help(cmd)) { fputs(USAGE, stdout); return 0; }
    if (!strcmp(cmd, "--version")) { printf("bertc %s\n", BERTC_VERSION); return 0; }
    if (!strcmp(cmd, "import")) return cmd_import(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    return usage_error(USAGE, "unknown command '%s'", cmd);
}
