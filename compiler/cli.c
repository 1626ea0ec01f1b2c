/*
 * cli — the command line's shared helpers (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "inspect.h"
#include "plan.h"

int cli_fail(const diag *d) {
    fprintf(stderr, "bertc: error: %s\n", d->text);
    return d->code ? (int)d->code : DIAG_CODE_INTERNAL;
}

int cli_usage_error(const char *usage, const char *fmt, const char *arg) {
    fprintf(stderr, "bertc: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return DIAG_CODE_USAGE;
}

int cli_is_help(const char *a) { return !strcmp(a, "-h") || !strcmp(a, "--help"); }

int cli_parse_count(const char *s, long lo, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1000000) return -1;
    *out = v;
    return 0;
}

int cli_parse_device(const char *s, bertc_device_kind *kind) {
    if (!strcmp(s, "cuda")) *kind = BERTC_DEVICE_CUDA;
    else if (!strcmp(s, "emu")) *kind = BERTC_DEVICE_EMULATED;
    else return -1;
    return 0;
}

static int cli_is_separator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; }

int cli_parse_ints(const char *what, const char *text, int32_t **out, int64_t *count, diag *d) {
    size_t cap = 64, n = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (const char *p = text;;) {
        while (cli_is_separator(*p)) p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX || (*end && !cli_is_separator(*end))) {
            int len = 0;
            while (p[len] && p[len] != ' ' && p[len] != ',' && p[len] != '\n' && len < 40) len++;
            free(v);
            return diag_set(d, DIAG_CODE_INPUT, "%s: item %zu ('%.*s') is not a 32-bit integer", what, n + 1, len, p);
        }
        if (n == cap) {
            int32_t *t = realloc(v, (cap *= 2) * sizeof *v);
            if (!t) {
                free(v);
                return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
            }
            v = t;
        }
        v[n++] = (int32_t)x;
        p = end;
    }
    *out = v;
    *count = (int64_t)n;
    return 0;
}

int cli_status_exit(bertc_status st) {
    switch (st) {
    case BERTC_STATUS_OK: return 0;
    case BERTC_STATUS_BAD_PLAN:
    case BERTC_STATUS_BAD_REQUEST: return DIAG_CODE_INPUT;
    default: return DIAG_CODE_INTERNAL;
    }
}

int cli_runtime_fail(bertc_status st, const char *msg) {
    fprintf(stderr, "bertc: error: %s\n", msg);
    return cli_status_exit(st);
}

/* Whether f's first bytes are the plan magic. */
static int cli_plan_magic(FILE *f) {
    char m[8];
    return fread(m, 1, 8, f) == 8 && !memcmp(m, PLAN_MAGIC, 8);
}

int cli_file_is_plan(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int yes = cli_plan_magic(f);
    fclose(f);
    return yes;
}

int cli_require_plan(const char *path, const char *hint) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bertc: error: %s: cannot open: %s\n", path, strerror(errno));
        return DIAG_CODE_INPUT;
    }
    int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode), plan = regular && cli_plan_magic(f);
    fclose(f);
    if (!plan) {
        if (regular) fprintf(stderr, "bertc: error: %s is not a compiled plan (%s)\n", path, hint);
        else fprintf(stderr, "bertc: error: %s: not a regular file\n", path);
        return DIAG_CODE_INPUT;
    }
    return 0;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void cli_print_ids(const char *sep, const int32_t *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) printf("%s%d", i ? sep : "", v[i]);
}

/* Byte offsets: JSON [[start, end], ...] or "start-end" words; specials are "-" in text. */
static void cli_print_offsets(const bertc_encoding *e, int json) {
    int64_t n = bertc_encoding_len(e);
    const int64_t *o = bertc_encoding_offsets(e);
    const int32_t *seq = bertc_encoding_sequence_ids(e);
    printf(json ? ", \"offsets\": [" : "offsets:");
    for (int64_t i = 0; i < n; i++) {
        if (json) printf("%s[%lld, %lld]", i ? ", " : "", (long long)o[2 * i], (long long)o[2 * i + 1]);
        else if (seq[i] < 0) printf(" -");
        else printf(" %s%lld-%lld", seq[i] ? "pair:" : "", (long long)o[2 * i], (long long)o[2 * i + 1]);
    }
    if (json) {
        printf("], \"sequence_ids\": [");
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", seq[i]);
        printf("]");
    } else {
        printf("\n");
    }
}

void cli_print_encoding_offsets(const bertc_encoding *e, int json, int offsets) {
    cli_print_encoding(e, json);
    if (offsets) cli_print_offsets(e, json);
}

void cli_print_encoding(const bertc_encoding *e, int json) {
    int64_t n = bertc_encoding_len(e);
    if (json) {
        printf("\"tokens\": [");
        for (int64_t i = 0; i < n; i++) {
            printf("%s", i ? ", " : "");
            inspect_json_str(stdout, bertc_encoding_token(e, i));
        }
        printf("], \"ids\": [");
        cli_print_ids(", ", bertc_encoding_ids(e), n);
        printf("], \"type_ids\": [");
        cli_print_ids(", ", bertc_encoding_type_ids(e), n);
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

int cli_encode_text(bertc_plan *pl, const char *text, const char *pair, long max_len, bertc_encoding **out) {
    char err[1024];
    *out = bertc_encoding_create();
    if (!*out) return cli_runtime_fail(BERTC_STATUS_OUT_OF_MEMORY, "out of memory");
    bertc_status st = bertc_encode(pl, *out, text, pair, max_len, err, sizeof err);
    if (st != BERTC_STATUS_OK) {
        fprintf(stderr, "bertc: error: %s%s\n", st == BERTC_STATUS_BAD_REQUEST ? "--text: " : "", err);
        return cli_status_exit(st);
    }
    return 0;
}

int cli_plan_open(const char *path, const char *sha256, bertc_plan **pl) {
    char err[1024];
    bertc_plan_options opt;
    bertc_plan_options_init(&opt);
    opt.expected_sha256 = sha256;
    bertc_status st = bertc_plan_open_with(path, &opt, pl, err, sizeof err);
    if (st == BERTC_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "bertc: error: --expect-sha256: '%s' is not a SHA-256 (64 hex digits)\n", sha256);
        return DIAG_CODE_USAGE;
    }
    return st == BERTC_STATUS_OK ? 0 : cli_runtime_fail(st, err);
}
