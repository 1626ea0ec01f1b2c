/*
 * cli_import — `bertc import HF_DIR -o MODEL.yaml`: a Hugging Face
 * checkpoint directory to the graph description (frontend/hf_import.h).
 */
#include <string.h>

#include "cli.h"
#include "hf_import.h"

static const char USAGE_IMPORT[] =
    "usage: bertc import HF_DIR -o MODEL.yaml\n"
    "\n"
    "Reads HF_DIR/config.json, HF_DIR/model.safetensors and, when present,\n"
    "HF_DIR/vocab.txt and HF_DIR/tokenizer_config.json of a BERT checkpoint\n"
    "(model_type bert) and writes the op-level graph description\n"
    "(docs/model-yaml.md). Weights are not copied: the YAML refers to the\n"
    "safetensors file by a path relative to the YAML.\n";

int cmd_import(int argc, char **argv) {
    const char *dir = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (cli_is_help(argv[i])) { fputs(USAGE_IMPORT, stdout); return 0; }
        if (!strcmp(argv[i], "-o")) {
            if (++i >= argc) return cli_usage_error(USAGE_IMPORT, "%s needs a file name", "-o");
            out = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(USAGE_IMPORT, "import: unknown option '%s'", argv[i]);
        } else if (!dir) {
            dir = argv[i];
        } else {
            return cli_usage_error(USAGE_IMPORT, "import: unexpected argument '%s'", argv[i]);
        }
    }
    if (!dir) return cli_usage_error(USAGE_IMPORT, "import: missing HF_DIR%s", "");
    if (!out) return cli_usage_error(USAGE_IMPORT, "import: missing -o MODEL.yaml%s", "");
    diag d;
    diag_init(&d);
    if (hf_import_run(dir, out, &d)) return cli_fail(&d);
    fprintf(stderr, "bertc: wrote %s\n", out);
    return 0;
}

