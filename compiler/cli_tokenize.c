/*
 * cli_tokenize — `bertc tokenize PLAN --text ...`: the plan's own tokenizer,
 * tokens, ids and token types out.
 */
#include <string.h>

#include "cli.h"

static const char USAGE_TOKENIZE[] =
    "usage: bertc tokenize PLAN --text \"...\" [--text-pair \"...\"] [--max-len N] [--json]\n"
    "                      [--offsets] [--expect-sha256 HEX]\n"
    "\n"
    "Tokenizes with the plan's own tokenizer (WordPiece, byte-level BPE or\n"
    "Unigram, identical to Hugging Face's fast tokenizers): prints the tokens,\n"
    "ids and token types; --offsets adds each token's byte span in its text\n"
    "(\"pair:\" marks the pair's; \"-\" the special tokens). --max-len truncates\n"
    "(default: the model's maximum, capped at the plan's longest bucket).\n"
    "--expect-sha256 refuses a plan whose SHA-256 is not HEX.\n";

int cmd_tokenize(int argc, char **argv) {
    const char *path = NULL, *text = NULL, *pair = NULL, *pin = NULL;
    long max_len = 0;
    int json = 0, offsets = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) { fputs(USAGE_TOKENIZE, stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--offsets")) { offsets = 1; continue; }
        const char **slot = NULL;
        if (!strcmp(a, "--text")) slot = &text;
        else if (!strcmp(a, "--text-pair")) slot = &pair;
        else if (!strcmp(a, "--expect-sha256")) slot = &pin;
        else if (!strcmp(a, "--max-len")) {
            if (++i >= argc || cli_parse_count(argv[i], 1, &max_len))
                return cli_usage_error(USAGE_TOKENIZE, "--max-len needs a positive count%s", "");
            continue;
        } else if (a[0] == '-' && a[1]) return cli_usage_error(USAGE_TOKENIZE, "tokenize: unknown option '%s'", a);
        else if (!path) { path = a; continue; }
        else return cli_usage_error(USAGE_TOKENIZE, "tokenize: unexpected argument '%s'", a);
        if (++i >= argc) return cli_usage_error(USAGE_TOKENIZE, "%s needs a value", a);
        *slot = argv[i];
    }
    if (!path) return cli_usage_error(USAGE_TOKENIZE, "tokenize: missing PLAN%s", "");
    if (!text) return cli_usage_error(USAGE_TOKENIZE, "tokenize: missing --text%s", "");
    bertc_plan *pl = NULL;
    int rc = cli_plan_open(path, pin, &pl);
    if (rc) return rc;
    bertc_encoding *e = NULL;
    rc = cli_encode_text(pl, text, pair, max_len, &e);
    if (!rc) {
        if (json) printf("{");
        cli_print_encoding_offsets(e, json, offsets);
        if (json) printf("}\n");
    }
    bertc_encoding_free(e);
    bertc_plan_close(pl);
    return rc;
}

