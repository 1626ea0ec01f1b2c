/*
 * kbuild_sass — machine code for kbuild (kbuild.h): ptxas on a target's
 * PTX for one architecture, and ptxas's report.
 *
 * ptxas compiles the whole PTX module at once ("whole program"), exactly as
 * NVRTC's built-in ptxas does for -arch=sm_XX: measured on every kernel
 * the tests build, the same registers, spills and shared memory.  (The
 * alternatives that would split one architecture's module over several
 * cores all change the code: nvJitLink's PTX input and ptxas -c compile
 * relocatable code with more registers, -ewp caps registers lower and
 * spills a float32 attention kernel, --split-compile gives different
 * bytes.  So an architecture is one job; the graph runs architectures and
 * targets side by side.)
 *
 * A CUBIN for the devices of only some of a plan's step lists holds only
 * their kernels: ptxas -e names the entries to build, and the rest of the
 * module is skipped.  An entry's machine code is the same as in the whole
 * module's CUBIN (compared byte for byte on BERT-base's sm_80 kernels).
 *
 * ptxas runs as a child (subproc.h) in kbuild's private folder, on
 * relative names; its input, output and log are removed afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileutil.h"
#include "kbuild_internal.h"
#include "subproc.h"

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

#define KBUILD_LOG_QUOTE 1500   /* bytes of a tool's log quoted in a diagnostic */

/* ------------------------------------------------------------ tools */

/* The file's text (malloc'd) or NULL. */
static char *kbuild_sass_read(const char *dir, const char *name, size_t *size) {
    char path[2 * KBUILD_PATH];
    diag d;
    diag_init(&d);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n = 0;
    char *text = file_read_all(path, &n, (size_t)1 << 30, &d);
    if (size) *size = n;
    return text;
}

int kbuild_sass_tools(kbuild_tools *t, const char *home, diag *d) {
    snprintf(t->ptxas, sizeof t->ptxas, "%s/bin/ptxas", home);
    if (access(t->ptxas, X_OK) != 0)
        return diag_set(d, DIAG_CODE_USAGE, "ptxas not found: %s is missing (set CUDA_HOME to the toolkit root)",
                        t->ptxas);
    char *argv[] = {t->ptxas, "--version", NULL};
    int status = -1, rc = subproc_run(argv, t->tmpdir, "ptxas-version.log", &status);
    char *out = rc ? NULL : kbuild_sass_read(t->tmpdir, "ptxas-version.log", NULL);
    if (rc || status != 0 || !out) {
        free(out);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s --version failed (%s)", t->ptxas, rc ? "cannot run" : "status");
    }
    snprintf(t->ptxas_version, sizeof t->ptxas_version, "%s", out);
    free(out);
    return 0;
}

/* ------------------------------------------------------------ ptxas */

static void kbuild_sass_key(const kbuild_tools *tools, const kbuild_sass *s, kcache_key *k) {
    kcache_hash h;
    kcache_hash_begin(&h, "ptxas -v");
    kcache_hash_str(&h, BERTC_VERSION);
    kcache_hash_str(&h, tools->ptxas_version);
    kcache_hash_str(&h, s->arch);
    kcache_hash_bytes(&h, s->target->ptx_key.digest, SHA256_DIGEST_SIZE);
    if (s->entries) kcache_hash_str(&h, s->entries); /* absent for a whole module: the keys of before */
    kcache_hash_end(&h, k);
}

/* Fails the job with the head of ptxas's log. */
static void kbuild_sass_fail(kbuild_sass *s, const char *what, const char *log) {
    s->failed = 1;
    diag_set(&s->d, DIAG_CODE_INTERNAL, "ptxas for %s (from %s) %s%s%.*s%s", s->arch, s->target->name, what,
             log && *log ? ":\n" : "", KBUILD_LOG_QUOTE, log ? log : "",
             log && strlen(log) > KBUILD_LOG_QUOTE ? "\n..." : "");
}

/* Writes the target's PTX for this job (each job its own file, so jobs of
 * one target never share one). */
static int kbuild_sass_input(const kbuild_tools *tools, const kbuild_sass *s, const char *in) {
    char path[KBUILD_PATH + 256];
    snprintf(path, sizeof path, "%s/%s", tools->tmpdir, in);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(s->target->ptx, 1, s->target->ptx_size, f) == s->target->ptx_size;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* Runs ptxas in the private folder. */
static void kbuild_sass_compile(const kbuild_tools *tools, kbuild_sass *s) {
    char in[96], out[96], log[96], archopt[48], path[KBUILD_PATH + 256];
    snprintf(in, sizeof in, "%s_%s.ptx", s->target->name, s->arch);
    snprintf(out, sizeof out, "%s_%s.cubin", s->target->name, s->arch);
    snprintf(log, sizeof log, "%s_%s.log", s->target->name, s->arch);
    snprintf(archopt, sizeof archopt, "-arch=%s", s->arch);
    if (kbuild_sass_input(tools, s, in)) {
        kbuild_sass_fail(s, "could not be started: cannot write its input", NULL);
        return;
    }
    char *argv[] = {(char *)tools->ptxas, archopt, "-v", "-o", out, in, NULL, NULL, NULL};
    if (s->entries) argv[6] = "-e", argv[7] = s->entries;
    int status = -1, rc = subproc_run(argv, tools->tmpdir, log, &status);
    s->log = kbuild_sass_read(tools->tmpdir, log, NULL);
    if (rc) kbuild_sass_fail(s, "could not be started", strerror(rc));
    else if (status != 0) kbuild_sass_fail(s, "failed", s->log);
    else if (!(s->cubin = (unsigned char *)kbuild_sass_read(tools->tmpdir, out, &s->cubin_size)))
        kbuild_sass_fail(s, "wrote no CUBIN", s->log);
    const char *names[3] = {in, out, log};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tools->tmpdir, names[i]);
        unlink(path);
    }
}

void kbuild_sass_run(const kbuild_tools *tools, kbuild_sass *s) {
    double t0 = kbuild_clock();
    kcache_key key;
    kcache_part parts[2];
    kbuild_sass_key(tools, s, &key);
    if (kcache_get(tools->cache, &key, parts, 2) == 0) {
        s->cubin = parts[0].data;
        s->cubin_size = parts[0].size;
        s->log = (char *)parts[1].data;
        s->cached = 1;
        return;
    }
    kbuild_sass_compile(tools, s);
    if (!s->failed) {
        kcache_part out[2] = {{s->cubin, s->cubin_size}, {(unsigned char *)s->log, s->log ? strlen(s->log) : 0}};
        kcache_put(tools->cache, &key, out, 2);
    }
    s->seconds = kbuild_clock() - t0;
}

/* ------------------------------------------------------------ ptxas report */

/* The integer that ends just before `key` in line (-1 if none). */
static int kbuild_number_before(const char *line, const char *end, const char *key) {
    const char *k = strstr(line, key);
    if (!k || k >= end) return -1;
    const char *p = k;
    while (p > line && p[-1] == ' ') p--;
    const char *q = p;
    while (q > line && q[-1] >= '0' && q[-1] <= '9') q--;
    if (q == p) return -1;
    return atoi(q);
}

/* The distinct unit whose label is s[0..n), or -1. */
static int kbuild_unit_named(const kbuild_work *w, const char *s, size_t n) {
    for (int i = 0; i < w->ndistinct; i++) {
        const char *label = w->labels[w->distinct_idx[i]];
        if (strlen(label) == n && memcmp(label, s, n) == 0) return w->distinct_idx[i];
    }
    return -1;
}

void kbuild_sass_stats(const char *log, const kbuild_work *w, kbuild_stats *stats) {
    int cur = -1;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *ce = strstr(line, "Compiling entry function '");
        if (ce && ce < end) {
            const char *nm = ce + strlen("Compiling entry function '");
            const char *q = memchr(nm, '\'', (size_t)(end - nm));
            cur = q ? kbuild_unit_named(w, nm, (size_t)(q - nm)) : -1;
        } else if (cur >= 0) {
            int v;
            if ((v = kbuild_number_before(line, end, " bytes stack frame")) >= 0) stats[cur].stack_frame = v;
            if ((v = kbuild_number_before(line, end, " bytes spill stores")) >= 0) stats[cur].spill_stores = v;
            if ((v = kbuild_number_before(line, end, " bytes spill loads")) >= 0) stats[cur].spill_loads = v;
            if ((v = kbuild_number_before(line, end, " bytes smem")) >= 0) stats[cur].shared_static = v;
            const char *u = strstr(line, "Used ");
            if (u && u < end && strstr(u, " registers") && strstr(u, " registers") < end) {
                stats[cur].registers = atoi(u + 5);
                if (stats[cur].shared_static < 0) stats[cur].shared_static = 0;
            }
        }
        line = *end ? end + 1 : end;
    }
}
