/*
 * kbuild_internal — what the three parts of kbuild share (kbuild.h has the
 * design):
 *
 *   kbuild.c         the driver: dedupe, targets, the job graph, results
 *   kbuild_front.c   the NVRTC front end (one program per PTX target) and
 *                    its error messages
 *   kbuild_sass.c    ptxas per architecture on its target's PTX, and
 *                    ptxas's report
 *
 * The driver calls the other two; they never call it, nor each other.
 * Every job writes only its own fields and its own diag, so jobs need no
 * lock; the driver reads them after the graph has finished.
 */
#ifndef BERTC_KBUILD_INTERNAL_H
#define BERTC_KBUILD_INTERNAL_H

#include <stddef.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "kbuild.h"
#include "kcache.h"

#define KBUILD_PATH 4200
#define KBUILD_MAX_TARGETS 16

/* The distinct kernels and the one program that holds them. */
typedef struct kbuild_work {
    const kbuild_unit *units;
    int nunits;
    int ndistinct;
    int *distinct_idx;           /* [ndistinct] unit index of each distinct text */
    char **labels;               /* [nunits] entry names, or "unit<i>" */
} kbuild_work;

/* Whether unit u belongs to an image serving the step lists of `lists`. */
static inline int kbuild_unit_wanted(const kbuild_work *w, int u, uint64_t lists) {
    return w->units[u].lists == 0 || (w->units[u].lists & lists) != 0;
}

/* Where the tools are and what they are: part of every cache key. */
typedef struct kbuild_tools {
    char incopt[KBUILD_PATH];    /* -I<home>/include */
    char ptxas[KBUILD_PATH];     /* <home>/bin/ptxas */
    char ptxas_version[512];     /* the last line of `ptxas --version` */
    char headers[256];           /* size and mtime of the toolkit headers the kernels include */
    int nvrtc_major, nvrtc_minor;
    char tmpdir[KBUILD_PATH];    /* private folder for ptxas's files ("" until made) */
    const char *const *extra;    /* extra NVRTC options */
    int nextra;
    kcache *cache;
} kbuild_tools;

/* Marks an instruction of a newer architecture in the PTX: "//@sm_90 " (kbuild.h). */
#define KBUILD_MARKER "//@sm_"

/* The level of the marker at p ("//@sm_90 ..." -> 90); 0 if p (a
 * NUL-terminated text) does not start with one. */
static inline int kbuild_marker_level(const char *p) {
    int v = 0, digits = 0;
    if (strncmp(p, KBUILD_MARKER, sizeof KBUILD_MARKER - 1)) return 0;
    for (p += sizeof KBUILD_MARKER - 1; *p >= '0' && *p <= '9' && digits < 4; p++, digits++) v = v * 10 + (*p - '0');
    return digits >= 2 && *p == ' ' ? v : 0;
}

/* One PTX target: the front end's job (or the derivation) and what it produced. */
typedef struct kbuild_target {
    int number;                  /* 80 for compute_80 */
    int source;                  /* the target whose PTX this one is derived from; -1: a front end */
    char name[16];               /* "compute_80" */
    uint64_t lists;              /* the step lists its program holds the kernels of (kbuild_unit.lists) */
    char *program;               /* a front end's program: the wanted distinct units behind #line directives */
    char *ptx;                   /* NUL-terminated */
    size_t ptx_size;
    kcache_key ptx_key;          /* digest of the PTX */
    int cached;
    double seconds;
    diag d;                      /* set when failed */
    int failed;
} kbuild_target;

/* One architecture: ptxas's CUBIN from its target's PTX, and its report. */
typedef struct kbuild_sass {
    const kbuild_target *target;
    const char *arch;            /* "sm_80" */
    uint64_t lists;              /* the step lists its devices run */
    char *entries;               /* ptxas -e: the entries to build, comma-separated; NULL: every one */
    unsigned char *cubin;
    size_t cubin_size;
    char *log;                   /* ptxas -v output */
    int cached;
    double seconds;
    diag d;
    int failed;
} kbuild_sass;

static inline double kbuild_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- kbuild_front.c */

/* The toolkit's include option, NVRTC's version and the headers' stamp. */
int kbuild_front_tools(kbuild_tools *t, const char *cuda_home, diag *d);
/* NVRTC on t->program for t->number (or the cache entry): t->ptx, raised to
 * t->number (its markers up to it removed), and its digest. */
void kbuild_front_run(const kbuild_work *w, const kbuild_tools *tools, kbuild_target *t);
/* t->ptx from src's PTX raised to t->number: `.target` and the markers
 * (kbuild.h's derived targets); and its digest. */
void kbuild_front_derive(const kbuild_target *src, kbuild_target *t);

/* ---- kbuild_sass.c */

/* ptxas's path and version line (for keys); -1 with d set if ptxas cannot run. */
int kbuild_sass_tools(kbuild_tools *t, const char *cuda_home, diag *d);
/* ptxas for one architecture (or its cache entry). */
void kbuild_sass_run(const kbuild_tools *tools, kbuild_sass *s);
/* stats[unit] from a ptxas -v log, for the units whose label it names. */
void kbuild_sass_stats(const char *log, const kbuild_work *w, kbuild_stats *stats);

#endif
