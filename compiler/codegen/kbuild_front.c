/*
 * kbuild_front — the NVRTC front end of kbuild (kbuild.h): one program of
 * every distinct kernel, compiled to the PTX of one target, and the
 * message a failure turns into.
 *
 * Messages.  Every unit enters the program behind `#line 1 "<entry>.cu"`,
 * so an NVRTC error reads "bertc_gemm_....cu(123): error: ..." — the
 * kernel and the line of its own text.  The excerpt below the log is cut
 * from that unit's text, lines numbered the same way, the failing line
 * marked with '>'.
 *
 * The cache key of a target's PTX holds the whole program text, the
 * target, NVRTC's version and options, bertc's version, and a stamp of the
 * toolkit headers the kernels include (their sizes and modification
 * times), since NVRTC's output depends on all of them.
 */
#include <nvrtc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kbuild_internal.h"

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

#define KBUILD_LOG_IN_DIAG 1600   /* bytes of NVRTC log quoted in a diagnostic */
#define KBUILD_MAX_EXCERPTS 3
#define KBUILD_EXCERPT_CONTEXT 2  /* lines before and after a failing line */

int kbuild_nvrtc_version(int *major, int *minor, diag *d) {
    nvrtcResult rc = nvrtcVersion(major, minor);
    if (rc != NVRTC_SUCCESS)
        return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: nvrtcVersion failed: %s", nvrtcGetErrorString(rc));
    return 0;
}

int kbuild_front_tools(kbuild_tools *t, const char *home, diag *d) {
    static const char *const headers[] = {"cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"};
    char probe[KBUILD_PATH + 32];
    snprintf(t->incopt, sizeof t->incopt, "-I%s/include", home);
    snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", home);
    if (access(probe, R_OK) != 0)
        return diag_set(d, DIAG_CODE_USAGE,
                        "CUDA toolkit headers not found: %s is missing (set CUDA_HOME to the toolkit root)", probe);
    size_t len = 0;
    for (size_t i = 0; i < sizeof headers / sizeof headers[0] && len < sizeof t->headers; i++) {
        struct stat st;
        snprintf(probe, sizeof probe, "%s/include/%s", home, headers[i]);
        long long size = -1, mtime = -1;
        if (stat(probe, &st) == 0) size = (long long)st.st_size, mtime = (long long)st.st_mtime;
        len += (size_t)snprintf(t->headers + len, sizeof t->headers - len, "%lld:%lld;", size, mtime);
    }
    return kbuild_nvrtc_version(&t->nvrtc_major, &t->nvrtc_minor, d);
}

/* ------------------------------------------------------------ error messages */

/* Appends to buf (capacity cap, current length *len), truncating. */
static void kbuild_append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void kbuild_append(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    *len += (size_t)n;
    if (*len >= cap) *len = cap - 1;
}

/* Lines first..last (1-based) of text, numbered, `mark` flagged. */
static void kbuild_excerpt(char *buf, size_t cap, size_t *len, const char *text, int mark) {
    int first = mark - KBUILD_EXCERPT_CONTEXT, last = mark + KBUILD_EXCERPT_CONTEXT;
    int ln = 1;
    for (const char *p = text; *p && ln <= last;) {
        const char *e = strchr(p, '\n');
        if (!e) e = p + strlen(p);
        if (ln >= first) {
            int w = (int)(e - p);
            if (w > 160) w = 160;
            kbuild_append(buf, cap, len, "  %c%5d | %.*s\n", ln == mark ? '>' : ' ', ln, w, p);
        }
        ln++;
        p = *e ? e + 1 : e;
    }
}

static int kbuild_label_is(const char *label, const char *s, size_t n) {
    return strlen(label) == n && memcmp(label, s, n) == 0;
}

/* The excerpt of the unit and line one "<entry>.cu(<line>): error" log
 * line points at, unless already shown; returns the number shown. */
static int kbuild_excerpt_for(char *buf, size_t cap, size_t *len, const kbuild_work *w, const char *line,
                              const char *open, int *seen_unit, int *seen_line, int shown) {
    int lineno = atoi(open);
    size_t nlen = (size_t)(open - 1 - line);
    for (int i = 0; i < w->ndistinct; i++) {
        int u = w->distinct_idx[i];
        char want[300];
        snprintf(want, sizeof want, "%s.cu", w->labels[u]);
        if (!kbuild_label_is(want, line, nlen)) continue;
        for (int s = 0; s < shown; s++)
            if (seen_unit[s] == u && seen_line[s] == lineno) return shown;
        seen_unit[shown] = u;
        seen_line[shown] = lineno;
        kbuild_append(buf, cap, len, "\nin %s, line %d of its generated source:\n", w->labels[u], lineno);
        kbuild_excerpt(buf, cap, len, w->units[u].text, lineno);
        return shown + 1;
    }
    return shown;
}

static void kbuild_front_error(kbuild_target *t, const kbuild_work *w, const char *call, nvrtcResult status,
                               const char *log) {
    char buf[sizeof t->d.text];
    size_t len = 0;
    kbuild_append(buf, sizeof buf, &len, "kernel compile for %s failed: %s: %s", t->name, call,
                  nvrtcGetErrorString(status));
    if (log && *log) {
        size_t ll = strlen(log);
        int wl = ll > KBUILD_LOG_IN_DIAG ? KBUILD_LOG_IN_DIAG : (int)ll;
        kbuild_append(buf, sizeof buf, &len, "\nNVRTC log:\n%.*s%s", wl, log, ll > KBUILD_LOG_IN_DIAG ? "\n..." : "");
        /* one excerpt per distinct (unit, line) an error points at */
        int shown = 0, seen_unit[KBUILD_MAX_EXCERPTS], seen_line[KBUILD_MAX_EXCERPTS];
        for (const char *line = log; *line && shown < KBUILD_MAX_EXCERPTS;) {
            const char *end = strchr(line, '\n');
            if (!end) end = line + strlen(line);
            const char *err = strstr(line, "): ");
            if (err && err < end && strstr(err, "error") && strstr(err, "error") < end) {
                const char *open = err;
                while (open > line && open[-1] != '(') open--;
                if (open > line)
                    shown = kbuild_excerpt_for(buf, sizeof buf, &len, w, line, open, seen_unit, seen_line, shown);
            }
            line = *end ? end + 1 : end;
        }
    }
    while (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
    t->failed = 1;
    diag_set(&t->d, DIAG_CODE_INTERNAL, "%s", buf);
}

/* ------------------------------------------------------------ the job */

/* The NVRTC log of a program (malloc'd, maybe empty) or NULL. */
static char *kbuild_front_log(nvrtcProgram prog) {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS) return NULL;
    char *log = malloc(n + 1);
    if (log && (n == 0 || nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)) log[0] = '\0';
    if (log) log[n] = '\0';
    return log;
}

/* NVRTC's options for target t; returns how many. */
static int kbuild_front_options(const kbuild_tools *tools, const kbuild_target *t, char *archopt, size_t cap,
                                const char **opts) {
    int n = 0;
    snprintf(archopt, cap, "-arch=%s", t->name);
    opts[n++] = "--std=c++17";
    opts[n++] = tools->incopt;
    for (int i = 0; i < tools->nextra && n < 60; i++) opts[n++] = tools->extra[i];
    opts[n++] = archopt;
    return n;
}

static void kbuild_front_key(const kbuild_target *t, const kbuild_tools *tools, const char *const *opts, int nopts,
                             kcache_key *k) {
    kcache_hash h;
    kcache_hash_begin(&h, "ptx");
    kcache_hash_str(&h, BERTC_VERSION);
    kcache_hash_int(&h, tools->nvrtc_major * 1000 + tools->nvrtc_minor);
    kcache_hash_str(&h, tools->headers);
    for (int i = 0; i < nopts; i++) kcache_hash_str(&h, opts[i]);
    kcache_hash_str(&h, t->program);
    kcache_hash_end(&h, k);
}

/* Compiles the program; fills t->ptx or the failure. */
static void kbuild_front_compile(const kbuild_work *w, const char *const *opts, int nopts, kbuild_target *t) {
    nvrtcProgram prog = NULL;
    char *log = NULL;
    const char *call = "nvrtcCreateProgram";
    nvrtcResult st = nvrtcCreateProgram(&prog, t->program, "bertc_kernels.cu", 0, NULL, NULL);
    if (st == NVRTC_SUCCESS) {
        call = "nvrtcCompileProgram";
        st = nvrtcCompileProgram(prog, nopts, opts);
        log = kbuild_front_log(prog);
    }
    size_t size = 0;
    if (st == NVRTC_SUCCESS && (st = nvrtcGetPTXSize(prog, &size)) == NVRTC_SUCCESS) {
        call = "nvrtcGetPTX";
        t->ptx = malloc(size + 1);
        st = t->ptx ? nvrtcGetPTX(prog, t->ptx) : NVRTC_ERROR_OUT_OF_MEMORY;
    }
    if (st == NVRTC_SUCCESS) {
        t->ptx[size] = '\0';
        t->ptx_size = strlen(t->ptx); /* the size NVRTC reports counts the terminating NUL */
    } else {
        kbuild_front_error(t, w, call, st, log);
    }
    free(log);
    if (prog) nvrtcDestroyProgram(&prog);
}

/* ------------------------------------------------------------ raising PTX */

/*
 * Raises PTX to level `number` into out (which has room for the input plus
 * a few bytes): the `.target sm_NN` directive becomes `.target sm_<number>`
 * (whatever follows the number, as ", debug", is kept) and every line
 * whose first non-blank text is a marker of that level or a lower one,
 * `//@sm_90 griddepcontrol.wait;`, loses the marker and so becomes the
 * instruction.  Markers of a higher level stay comments.  Returns the
 * length written, or 0 when the input has no `.target sm_` directive.
 */
static size_t kbuild_ptx_raise(const char *in, size_t n, int number, char *out) {
    static const char target[] = ".target sm_";
    const size_t tl = sizeof target - 1;
    size_t len = 0;
    int targets = 0;
    for (size_t i = 0; i < n;) {
        const char *line = in + i, *nl = memchr(line, '\n', n - i);
        size_t ll = nl ? (size_t)(nl - line) + 1 : n - i, ws = 0;
        int level;
        while (ws < ll && (line[ws] == ' ' || line[ws] == '\t')) ws++;
        if (ll >= tl && !memcmp(line, target, tl)) {
            size_t d = tl;
            while (d < ll && line[d] >= '0' && line[d] <= '9') d++;
            len += (size_t)sprintf(out + len, "%s%d", target, number);
            memcpy(out + len, line + d, ll - d);
            len += ll - d;
            targets++;
        } else if ((level = kbuild_marker_level(line + ws)) > 0 && level <= number) {
            const char *rest = memchr(line + ws, ' ', ll - ws) + 1; /* the level ends at a space */
            memcpy(out + len, line, ws);
            memcpy(out + len + ws, rest, (size_t)(line + ll - rest));
            len += ws + (size_t)(line + ll - rest);
        } else {
            memcpy(out + len, line, ll);
            len += ll;
        }
        i += ll;
    }
    out[len] = '\0';
    return targets == 1 ? len : 0;
}

/* t->ptx = ptx[0..n) raised to t->number, or the failure. */
static void kbuild_front_raise(kbuild_target *t, const char *ptx, size_t n, const char *from) {
    char *out = malloc(n + 16);
    size_t len = out ? kbuild_ptx_raise(ptx, n, t->number, out) : 0;
    if (!len) {
        t->failed = 1;
        diag_set(&t->d, DIAG_CODE_INTERNAL, "kbuild: %s cannot be made from the PTX of %s: %s", t->name, from,
                 out ? "it has no single .target directive" : "out of memory");
        free(out);
        out = NULL;
    }
    t->ptx = out;
    t->ptx_size = len;
}

/* The PTX's digest: what the machine-code jobs of this target key on. */
static void kbuild_front_digest(kbuild_target *t) {
    kcache_hash h;
    kcache_hash_begin(&h, "ptx text");
    kcache_hash_bytes(&h, t->ptx, t->ptx_size);
    kcache_hash_end(&h, &t->ptx_key);
}

void kbuild_front_run(const kbuild_work *w, const kbuild_tools *tools, kbuild_target *t) {
    double t0 = kbuild_clock();
    const char *opts[64];
    char archopt[48];
    int nopts = kbuild_front_options(tools, t, archopt, sizeof archopt, opts);
    kcache_key key;
    kcache_part part;
    kbuild_front_key(t, tools, opts, nopts, &key);
    if (kcache_get(tools->cache, &key, &part, 1) == 0) {
        t->ptx = (char *)part.data;
        t->ptx_size = part.size;
        t->cached = 1;
    } else {
        kbuild_front_compile(w, opts, nopts, t);
        if (!t->failed) kcache_put(tools->cache, &key, &(kcache_part){(unsigned char *)t->ptx, t->ptx_size}, 1);
        t->seconds = kbuild_clock() - t0;
    }
    if (!t->failed && strstr(t->ptx, KBUILD_MARKER)) { /* this target's own markers become instructions */
        char *ptx = t->ptx;
        kbuild_front_raise(t, ptx, t->ptx_size, t->name);
        free(ptx);
    }
    if (!t->failed) kbuild_front_digest(t);
}

void kbuild_front_derive(const kbuild_target *src, kbuild_target *t) {
    double t0 = kbuild_clock();
    kbuild_front_raise(t, src->ptx, src->ptx_size, src->name);
    t->seconds = kbuild_clock() - t0;
    if (!t->failed) kbuild_front_digest(t);
}
