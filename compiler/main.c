/*
 * bertc — the command line.  Each command is a short pipeline over the
 * library's stages, so this file reads as the product's table of contents:
 *
 *   import   Hugging Face directory -> hf_import -> model YAML   (cli_import.c)
 *   compile  model YAML -> compile_model: load -> fuse -> lower -> generate
 *            kernels -> build images -> assemble -> write          (cli_compile.c, compile.h)
 *   inspect  plan -> plan_read -> text or JSON                     (cli_inspect.c, inspect.h)
 *   run      plan -> bertc_plan_open -> bertc_context_create (device table:
 *            CUDA or the emulated device) -> bertc_infer -> .npy / stdout;
 *            model YAML -> model_load -> ref_run -> .npy / stdout   (cli_run.c)
 *   bench    plan -> context with CUDA-event timing -> percentiles per bucket (cli_bench.c)
 *   tokenize plan -> the plan's tokenizer -> tokens and ids        (cli_tokenize.c)
 *   export-triton  plan -> a Triton model repository entry: config.pbtxt,
 *            the plan, the backend (runtime/triton)                 (cli_export_triton.c)
 *
 * Conventions (docs/cli.md, cli.h): results on stdout or in files, messages
 * on stderr, exit status 0 ok, 1 usage, 2 bad input, 3 internal or device
 * error.  Outputs are written atomically, so a failed command leaves none
 * behind.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

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
    "  export-triton PLAN REPO         a Triton Inference Server model repository entry\n"
    "\n"
    "options:\n"
    "  -h, --help       this help (bertc COMMAND --help for a command's)\n"
    "  --version        print the version\n"
    "\n"
    "exit status: 0 ok, 1 usage error, 2 bad input, 3 internal or device error\n";

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} cli_commands[] = {
    {"import", cmd_import}, {"compile", cmd_compile}, {"inspect", cmd_inspect},
    {"run", cmd_run},       {"bench", cmd_bench},     {"tokenize", cmd_tokenize},
    {"export-triton", cmd_export_triton},
};

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(USAGE, stderr);
        return DIAG_CODE_USAGE;
    }
    const char *cmd = argv[1];
    if (cli_is_help(cmd)) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("bertc %s\n", BERTC_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cli_commands / sizeof cli_commands[0]; i++)
        if (!strcmp(cmd, cli_commands[i].name)) return cli_commands[i].run(argc - 2, argv + 2);
    return cli_usage_error(USAGE, "unknown command '%s'", cmd);
}
