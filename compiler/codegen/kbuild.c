/*
 * kbuild — NVRTC driver: dedupe, concatenate, compile per architecture in
 * parallel, parse ptxas's report.  See kbuild.h for why it is shaped so.
 *
 * Threads.  Each worker takes the next architecture from a shared index
 * and runs one NVRTC program start to finish; nothing else is shared, so
 * the only lock is the one around the index.  Workers never touch a diag:
 * they keep NVRTC's status and log, and the calling thread turns a failure
 * into a message once every worker has finished (the first failing
 * architecture in the caller's order wins, so the message does not depend
 * on scheduling).
 *
 * Messages.  Every unit enters the program behind `#line 1 "<entry>.cu"`,
 * so an NVRTC error reads "bertc_gemm_....cu(123): error: ..." — the
 * kernel and the line of its own text.  The excerpt below the log is cut
 * from that unit's text, lines numbered the same way, the failing line
 * marked with '>'.
 */
#include "kbuild.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"

#ifndef BERTC_CUDA_HOME
#define BERTC_CUDA_HOME "/usr/local/cuda"
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

static double kbuild_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t kbuild_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* ------------------------------------------------------------ one architecture */

typedef struct kbuild_job {
    const char *arch;            /* "sm_80", or "compute_80" for a PTX-only job */
    char name[16];               /* storage for a PTX-only job's arch */
    int want_cubin, want_ptx;
    const char *source;
    const char *const *opts;     /* common options; the arch option is added */
    int nopts;
    /* results */
    nvrtcResult status;
    const char *failed_call;     /* the NVRTC call that failed, NULL if none */
    char *log;
    unsigned char *cubin;
    size_t cubin_size;
    char *ptx;
    size_t ptx_size;
    double seconds;
} kbuild_job;

typedef struct kbuild_pool {
    kbuild_job *jobs;
    int njobs, next;
    pthread_mutex_t mu;
} kbuild_pool;

static void kbuild_job_run(kbuild_job *j) {
    double t0 = kbuild_now();
    nvrtcProgram prog = NULL;
    char name[48], archopt[48];
    snprintf(name, sizeof name, "bertc_%s.cu", j->arch);
    snprintf(archopt, sizeof archopt, "-arch=%s", j->arch);
    const char *opts[64];
    int n = 0;
    for (int i = 0; i < j->nopts && n < 63; i++) opts[n++] = j->opts[i];
    opts[n++] = archopt;

    j->status = nvrtcCreateProgram(&prog, j->source, name, 0, NULL, NULL);
    if (j->status != NVRTC_SUCCESS) {
        j->failed_call = "nvrtcCreateProgram";
        goto out;
    }
    j->status = nvrtcCompileProgram(prog, n, opts);
    size_t loglen = 0;
    if (nvrtcGetProgramLogSize(prog, &loglen) == NVRTC_SUCCESS && loglen > 0) {
        j->log = malloc(loglen + 1);
        if (j->log && nvrtcGetProgramLog(prog, j->log) != NVRTC_SUCCESS) j->log[0] = '\0';
        if (j->log) j->log[loglen] = '\0';
    }
    if (j->status != NVRTC_SUCCESS) {
        j->failed_call = "nvrtcCompileProgram";
        goto out;
    }
    if (j->want_cubin) j->status = nvrtcGetCUBINSize(prog, &j->cubin_size);
    if (j->want_cubin && j->status == NVRTC_SUCCESS) {
        j->cubin = malloc(j->cubin_size ? j->cubin_size : 1);
        j->status = j->cubin ? nvrtcGetCUBIN(prog, (char *)j->cubin) : NVRTC_ERROR_OUT_OF_MEMORY;
    }
    if (j->status != NVRTC_SUCCESS) {
        j->failed_call = "nvrtcGetCUBIN";
        goto out;
    }
    if (j->want_ptx) {
        j->status = nvrtcGetPTXSize(prog, &j->ptx_size);
        if (j->status == NVRTC_SUCCESS) {
            j->ptx = malloc(j->ptx_size + 1);
            j->status = j->ptx ? nvrtcGetPTX(prog, j->ptx) : NVRTC_ERROR_OUT_OF_MEMORY;
        }
        if (j->status != NVRTC_SUCCESS) {
            j->failed_call = "nvrtcGetPTX";
            goto out;
        }
        j->ptx[j->ptx_size] = '\0';
        /* the size NVRTC reports counts the terminating NUL */
        if (j->ptx_size > 0 && j->ptx[j->ptx_size - 1] == '\0') j->ptx_size--;
    }
out:
    if (prog) nvrtcDestroyProgram(&prog);
    j->seconds = kbuild_now() - t0;
}

static void *kbuild_worker(void *arg) {
    kbuild_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->njobs) return NULL;
        kbuild_job_run(&p->jobs[i]);
    }
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

static int kbuild_label_is(const char *label, const char *s, size_t n) {
    return strlen(label) == n && memcmp(label, s, n) == 0;
}

/* Fills stats[distinct unit] from the verbose log. */
static void kbuild_parse_stats(const char *log, char *const *labels, const int *distinct_idx, int ndistinct,
                               kbuild_stats *stats) {
    int cur = -1;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *ce = strstr(line, "Compiling entry function '");
        if (ce && ce < end) {
            const char *nm = ce + strlen("Compiling entry function '");
            const char *q = memchr(nm, '\'', (size_t)(end - nm));
            cur = -1;
            for (int i = 0; q && i < ndistinct; i++)
                if (kbuild_label_is(labels[distinct_idx[i]], nm, (size_t)(q - nm))) cur = distinct_idx[i];
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

static int kbuild_compile_error(diag *d, const kbuild_job *j, const kbuild_unit *units, char *const *labels,
                                const int *distinct_idx, int ndistinct) {
    char buf[sizeof d->text];
    size_t len = 0;
    kbuild_append(buf, sizeof buf, &len, "kernel compile for %s failed: %s: %s", j->arch,
                  j->failed_call ? j->failed_call : "NVRTC", nvrtcGetErrorString(j->status));
    if (j->log && *j->log) {
        size_t ll = strlen(j->log);
        int w = ll > KBUILD_LOG_IN_DIAG ? KBUILD_LOG_IN_DIAG : (int)ll;
        kbuild_append(buf, sizeof buf, &len, "\nNVRTC log:\n%.*s%s", w, j->log, ll > KBUILD_LOG_IN_DIAG ? "\n..." : "");
        /* one excerpt per distinct (unit, line) an error points at */
        int shown = 0, seen_unit[KBUILD_MAX_EXCERPTS], seen_line[KBUILD_MAX_EXCERPTS];
        for (const char *line = j->log; *line && shown < KBUILD_MAX_EXCERPTS;) {
            const char *end = strchr(line, '\n');
            if (!end) end = line + strlen(line);
            const char *err = strstr(line, "): ");
            if (err && err < end && strstr(err, "error") && strstr(err, "error") < end) {
                const char *open = err;
                while (open > line && open[-1] != '(') open--;
                if (open > line) {
                    int lineno = atoi(open);
                    size_t nlen = (size_t)(open - 1 - line);
                    for (int i = 0; i < ndistinct; i++) {
                        int u = distinct_idx[i];
                        char want[300];
                        snprintf(want, sizeof want, "%s.cu", labels[u]);
                        if (!kbuild_label_is(want, line, nlen)) continue;
                        int dup = 0;
                        for (int s = 0; s < shown; s++)
                            if (seen_unit[s] == u && seen_line[s] == lineno) dup = 1;
                        if (dup) break;
                        seen_unit[shown] = u;
                        seen_line[shown] = lineno;
                        shown++;
                        kbuild_append(buf, sizeof buf, &len, "\nin %s, line %d of its generated source:\n", labels[u],
                                      lineno);
                        kbuild_excerpt(buf, sizeof buf, &len, units[u].text, lineno);
                        break;
                    }
                }
            }
            line = *end ? end + 1 : end;
        }
    }
    while (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
    return diag_set(d, DIAG_CODE_INTERNAL, "%s", buf);
}

/* ------------------------------------------------------------ driver */

void kbuild_result_free(kbuild_result *r) {
    if (!r) return;
    for (int i = 0; i < r->nimages; i++) {
        free(r->images[i].data);
        free(r->images[i].stats);
    }
    free(r->images);
    free(r->distinct_of);
    memset(r, 0, sizeof *r);
}

/* The toolkit's include option (-I<root>/include), its headers checked. */
static int kbuild_include_option(const kbuild_options *opt, char *incopt, size_t cap, diag *d) {
    const char *home = opt->cuda_home;
    if (!home || !*home) home = getenv("CUDA_HOME");
    if (!home || !*home) home = BERTC_CUDA_HOME;
    char probe[4200];
    snprintf(incopt, cap, "-I%s/include", home);
    snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", home);
    if (access(probe, R_OK) != 0)
        return diag_set(d, DIAG_CODE_USAGE,
                        "CUDA toolkit headers not found: %s is missing (set CUDA_HOME to the toolkit root)", probe);
    return 0;
}

/* What one compile works on: the distinct texts, their labels, one program. */
typedef struct kbuild_work {
    const kbuild_unit *units;
    int nunits;
    int ndistinct;
    int *distinct_idx;           /* [ndistinct] unit index of each distinct text */
    char **labels;               /* [nunits] entry names, or "unit<i>" */
    char *source;                /* every distinct unit behind a #line directive */
} kbuild_work;

static void kbuild_work_free(kbuild_work *w) {
    if (w->labels)
        for (int i = 0; i < w->nunits; i++) free(w->labels[i]);
    free(w->labels);
    free(w->distinct_idx);
    free(w->source);
    memset(w, 0, sizeof *w);
}

/* Dedupes the units by content and joins the distinct ones into one program. */
static int kbuild_work_prepare(kbuild_work *w, const kbuild_unit *units, int nunits, int *distinct_of) {
    w->units = units;
    w->nunits = nunits;
    w->distinct_idx = malloc(sizeof(int) * (size_t)nunits);
    w->labels = calloc((size_t)nunits, sizeof(char *));
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)nunits);
    int ok = w->distinct_idx && w->labels && hashes;
    size_t total = 1;
    for (int i = 0; ok && i < nunits; i++) {
        hashes[i] = kbuild_hash(units[i].text);
        distinct_of[i] = i;
        for (int k = 0; k < w->ndistinct; k++) {
            int u = w->distinct_idx[k];
            if (hashes[u] == hashes[i] && strcmp(units[u].text, units[i].text) == 0) {
                distinct_of[i] = u;
                break;
            }
        }
        if (units[i].entry) w->labels[i] = strdup(units[i].entry);
        else if (asprintf(&w->labels[i], "unit%d", i) < 0) w->labels[i] = NULL;
        ok = w->labels[i] != NULL;
        if (ok && distinct_of[i] == i) {
            w->distinct_idx[w->ndistinct++] = i;
            total += strlen(w->labels[i]) + strlen(units[i].text) + 32;
        }
    }
    free(hashes);
    if (ok) ok = (w->source = malloc(total)) != NULL;
    if (!ok) return -1;
    size_t len = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        int u = w->distinct_idx[k];
        size_t tl = strlen(units[u].text);
        len += (size_t)sprintf(w->source + len, "#line 1 \"%s.cu\"\n", w->labels[u]);
        memcpy(w->source + len, units[u].text, tl);
        len += tl;
        if (tl == 0 || units[u].text[tl - 1] != '\n') w->source[len++] = '\n';
    }
    w->source[len] = '\0';
    return 0;
}

/* Runs the jobs on up to `jobs` threads (the calling thread works too). */
static int kbuild_run_jobs(kbuild_job *jobs, int njobs, int nthreads) {
    kbuild_pool pool = {jobs, njobs, 0, PTHREAD_MUTEX_INITIALIZER};
    if (njobs < 1) return 0;
    if (nthreads > njobs) nthreads = njobs;
    if (nthreads < 1) nthreads = 1;
    pthread_t *threads = calloc((size_t)nthreads, sizeof *threads);
    if (!threads) return -1;
    int started = 0;
    for (int t = 1; t < nthreads; t++) {
        if (pthread_create(&threads[t], NULL, kbuild_worker, &pool) != 0) break;
        started++;
    }
    kbuild_worker(&pool);
    for (int t = 1; t <= started; t++) pthread_join(threads[t], NULL);
    free(threads);
    return 0;
}

/* The CUBIN of job a into image a, with its ptxas report per unit. */
static int kbuild_take_cubin(kbuild_result *r, const kbuild_work *w, kbuild_job *j, kbuild_image *im) {
    snprintf(im->arch, sizeof im->arch, "%s", j->arch);
    im->data = j->cubin;
    im->size = j->cubin_size;
    j->cubin = NULL;
    im->seconds = j->seconds;
    im->stats = malloc(sizeof(kbuild_stats) * (size_t)w->nunits);
    if (!im->stats) return -1;
    for (int i = 0; i < w->nunits; i++) im->stats[i] = (kbuild_stats){-1, -1, -1, -1, -1};
    if (j->log) kbuild_parse_stats(j->log, w->labels, w->distinct_idx, w->ndistinct, im->stats);
    for (int i = 0; i < w->nunits; i++) im->stats[i] = im->stats[r->distinct_of[i]];
    return 0;
}

/* One CUBIN per arch in the order given, then each PTX target's PTX
 * (ptx_job[i]: the job that made target ptx[i]). */
static int kbuild_collect(kbuild_result *r, const kbuild_work *w, kbuild_job *jobs, int narchs, const int *ptx,
                          const int *ptx_job, int nptx) {
    r->nimages = narchs + nptx;
    r->images = calloc((size_t)r->nimages, sizeof *r->images);
    if (!r->images) return -1;
    for (int a = 0; a < narchs; a++)
        if (kbuild_take_cubin(r, w, &jobs[a], &r->images[a])) return -1;
    for (int i = 0; i < nptx; i++) {
        kbuild_job *j = &jobs[ptx_job[i]];
        kbuild_image *im = &r->images[narchs + i];
        snprintf(im->arch, sizeof im->arch, "compute_%d", ptx[i]);
        im->is_ptx = 1;
        im->data = (unsigned char *)j->ptx;
        im->size = j->ptx_size;
        j->ptx = NULL;
        im->seconds = j->seconds;
    }
    return 0;
}

/* The jobs: one per architecture (its CUBIN), and for each PTX target the
 * job of that very architecture or a PTX-only job of its own; their count. */
static int kbuild_plan_jobs(kbuild_job *jobs, const char *const *archs, int narchs, const int *ptx, int nptx,
                            int *ptx_job) {
    int n = narchs;
    for (int a = 0; a < narchs; a++) jobs[a] = (kbuild_job){.arch = archs[a], .want_cubin = 1};
    for (int i = 0; i < nptx; i++) {
        ptx_job[i] = -1;
        for (int a = 0; a < narchs; a++)
            if (arch_number(archs[a]) == ptx[i]) ptx_job[i] = a;
        if (ptx_job[i] < 0) {
            ptx_job[i] = n;
            jobs[n] = (kbuild_job){0};
            snprintf(jobs[n].name, sizeof jobs[n].name, "compute_%d", ptx[i]);
            jobs[n].arch = jobs[n].name;
            n++;
        }
        jobs[ptx_job[i]].want_ptx = 1;
    }
    return n;
}

static void kbuild_jobs_free(kbuild_job *jobs, int n) {
    for (int a = 0; jobs && a < n; a++) {
        free(jobs[a].log);
        free(jobs[a].cubin);
        free(jobs[a].ptx);
    }
    free(jobs);
}

/* Compiles the prepared program for every arch; fills r's images. */
static int kbuild_compile_work(const kbuild_work *w, const char *const *archs, int narchs, const kbuild_options *opt,
                               const char *incopt, kbuild_result *r, diag *d) {
    const char *common[64];
    int ncommon = 0;
    common[ncommon++] = "--std=c++17";
    common[ncommon++] = incopt;
    common[ncommon++] = "--ptxas-options=-v";
    for (int i = 0; i < opt->nextra && ncommon < 62; i++) common[ncommon++] = opt->extra_options[i];
    int ptx[ARCH_MAX], ptx_job[ARCH_MAX], nptx = 0;
    if (opt->ptx_targets)
        for (int i = 0; i < opt->nptx_targets && i < ARCH_MAX; i++) ptx[nptx++] = opt->ptx_targets[i];
    else
        nptx = arch_plan_ptx(archs, narchs, ptx);
    if (opt->no_ptx) nptx = 0;
    kbuild_job *jobs = calloc((size_t)(narchs + nptx), sizeof *jobs);
    if (!jobs) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory");
    int njobs = kbuild_plan_jobs(jobs, archs, narchs, ptx, nptx, ptx_job);
    for (int a = 0; a < njobs; a++) {
        jobs[a].source = w->source;
        jobs[a].opts = common;
        jobs[a].nopts = ncommon;
    }
    int rc = kbuild_run_jobs(jobs, njobs, opt->jobs) ? diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory") : 0;
    for (int a = 0; !rc && a < njobs; a++)
        if (jobs[a].status != NVRTC_SUCCESS)
            rc = kbuild_compile_error(d, &jobs[a], w->units, w->labels, w->distinct_idx, w->ndistinct);
    if (!rc && kbuild_collect(r, w, jobs, narchs, ptx, ptx_job, nptx))
        rc = diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory");
    kbuild_jobs_free(jobs, njobs);
    return rc;
}

int kbuild_compile(const kbuild_unit *units, int nunits, const char *const *archs, int narchs,
                   const kbuild_options *opt, kbuild_result *r, diag *d) {
    double t0 = kbuild_now();
    memset(r, 0, sizeof *r);
    kbuild_options defaults = {0};
    if (!opt) opt = &defaults;
    if (arch_list_check(archs, narchs, d)) return -1;
    if (nunits < 1) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: no kernels to compile");
    for (int i = 0; i < nunits; i++)
        if (!units[i].text) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: kernel %d has no source", i);
    char incopt[4200];
    if (kbuild_include_option(opt, incopt, sizeof incopt, d)) return -1;

    kbuild_work w;
    memset(&w, 0, sizeof w);
    r->nunits = nunits;
    r->distinct_of = malloc(sizeof(int) * (size_t)nunits);
    int rc = !r->distinct_of || kbuild_work_prepare(&w, units, nunits, r->distinct_of)
                 ? diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory")
                 : 0;
    r->ndistinct = w.ndistinct;
    if (!rc) rc = kbuild_compile_work(&w, archs, narchs, opt, incopt, r, d);
    kbuild_work_free(&w);
    if (rc) kbuild_result_free(r);
    else r->seconds = kbuild_now() - t0;
    return rc;
}
