/*
 * cli — what the commands of the bertc command line share (cli_*.c): the
 * conventions of docs/cli.md in one place.  Results go to stdout or files,
 * messages to stderr; the exit status is 0 ok, 1 usage, 2 bad input, 3
 * internal or device error (diag_code's values); outputs are written
 * atomically, so a failed command leaves none behind.
 *
 * Each command is a `cmd_<name>(argc, argv)` that parses its options and
 * calls into the library (compile.h, inspect.h, the runtime's bertc.h, the
 * reference executor); none of them holds logic a library caller would
 * need.
 */
#ifndef BERTC_CLI_H
#define BERTC_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "bertc.h"
#include "diag.h"

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

int cmd_import(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_run_text(int argc, char **argv);
/* run with inputs by the line (cli_run_batch.c): --text-file, or an
 * --ids-file of more than one line; cli_run_is_batch says which run it is. */
int cmd_run_batch(int argc, char **argv);
int cli_run_is_batch(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_export_triton(int argc, char **argv);
/* bench --soak (cli_soak.c): threads, contexts and requests for `seconds`;
 * lengths up to max_len (0: the plan's longest bucket). */
int cli_soak(const char *path, const char *pin, bertc_device_kind kind, double seconds, int threads, int max_len,
             uint64_t seed);

/* bench --batch N --lengths DIST --concurrency C (cli_bench_batch.c): a
 * seeded synthetic load of batches; requests/s, tokens/s, percentiles. */
typedef struct cli_batch_load {
    int batch, concurrency, unpacked;
    const char *lengths;            /* NULL: uniform over 1..the longest bucket */
    long iters, warmup;
    uint64_t seed;
} cli_batch_load;
int cli_bench_batch(const char *path, const char *pin, bertc_device_kind kind, const cli_batch_load *load);
/* bench --per-step (cli_steps.c): each step of every bucket at its full
 * length (or of the bucket of seq_len, at seq_len) timed `reps` times;
 * with gpu, the performance model's prediction for that GPU beside it. */
int cli_bench_steps(bertc_context *ctx, const bertc_plan *pl, const char *path, const int32_t *ids, int seq_len,
                    int reps, int json, const char *gpu);
/* bench --check-steps (cli_steps.c): each bucket at its full length (or
 * the bucket of seq_len, at seq_len) run a step at a time against the
 * steps' launch contracts (bertc_debug_check_steps); its outputs against
 * the graph's.  0, or the exit status after the message. */
int cli_bench_check(bertc_context *ctx, const bertc_plan *pl, const int32_t *ids, int seq_len);

/* Prints "bertc: error: MESSAGE"; returns the exit status of the diag's code. */
int cli_fail(const diag *d);
/* Prints "bertc: " + fmt (one %s: arg) and the command's usage; returns 1. */
int cli_usage_error(const char *usage, const char *fmt, const char *arg);
int cli_is_help(const char *a);
/* A count in lo..1000000; -1 if s is not one. */
int cli_parse_count(const char *s, long lo, long *out);
/* "cuda" or "emu"; -1 otherwise. */
int cli_parse_device(const char *s, bertc_device_kind *kind);
/* Whitespace/comma separated 32-bit integers; *count receives how many. */
int cli_parse_ints(const char *what, const char *text, int32_t **out, int64_t *count, diag *d);

/* The exit status for a runtime status, and the message printed with it. */
int cli_status_exit(bertc_status st);
int cli_runtime_fail(bertc_status st, const char *msg);

/* bertc_plan_open_with the digest --expect-sha256 pinned (NULL: none);
 * 0, or the exit status after printing why. */
int cli_plan_open(const char *path, const char *sha256, bertc_plan **pl);

/* 1 if the file starts with the plan magic (a compiled plan, not a YAML). */
int cli_file_is_plan(const char *path);
/* 0 if path is a compiled plan; else prints why — it cannot be opened, is
 * not a regular file, or is no plan (then `hint` in parentheses) — and
 * returns the exit status. */
int cli_require_plan(const char *path, const char *hint);
double cli_now(void);

/* Tokens, ids and token types of an encoding, as text or as JSON members. */
void cli_print_encoding(const bertc_encoding *e, int json);
/* The same, then (offsets) every token's byte span and sequence (docs/cli.md). */
void cli_print_encoding_offsets(const bertc_encoding *e, int json, int offsets);
/* --text / --text-pair through the plan's tokenizer. */
int cli_encode_text(bertc_plan *pl, const char *text, const char *pair, long max_len, bertc_encoding **out);

#endif
