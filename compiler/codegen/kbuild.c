/*
 * kbuild — the driver (kbuild.h has the design): distinct kernels, PTX
 * targets, the job graph, the result.
 *
 * The graph.  Jobs are, in priority order: the front end per target
 * (lowest first: compute_75 is the slowest), then ptxas per architecture,
 * each needing its target's PTX.  Each worker takes the first job whose
 * input is done; the calling thread works too.  A job writes only its own
 * record, so the one lock guards the bookkeeping, not the work.  After a
 * failure no job starts; the message is the first failure in the graph's
 * fixed order (targets, then architectures), so it does not depend on
 * scheduling either.
 *
 * Targets.  kbuild_arch_bounds reads every `__CUDA_ARCH__` comparison in
 * the kernel texts; a threshold N means code for archs >= N/10 may differ
 * from code below.  An architecture compiles from the lowest target at or
 * above every threshold it passes (and at or above the lowest architecture
 * asked for).  The toolkit headers' own tests of __CUDA_ARCH__ choose
 * between implementations of the same operation and are not read.
 */
#include "kbuild.h"

#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "kbuild_internal.h"
#include "plan.h"

#ifndef BERTC_CUDA_HOME
#define BERTC_CUDA_HOME "/usr/local/cuda"
#endif

#define KBUILD_MAX_BOUNDS 64

static uint64_t kbuild_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* ------------------------------------------------------------ distinct kernels */

static void kbuild_work_free(kbuild_work *w) {
    if (w->labels)
        for (int i = 0; i < w->nunits; i++) free(w->labels[i]);
    free(w->labels);
    free(w->distinct_idx);
    memset(w, 0, sizeof *w);
}

/* Dedupes the units by content (a unit's lists join its twin's). */
static int kbuild_work_prepare(kbuild_work *w, kbuild_unit *units, int nunits, int *distinct_of) {
    w->units = units;
    w->nunits = nunits;
    w->distinct_idx = malloc(sizeof(int) * (size_t)nunits);
    w->labels = calloc((size_t)nunits, sizeof(char *));
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)nunits);
    int ok = w->distinct_idx && w->labels && hashes;
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
        if (ok && distinct_of[i] == i) w->distinct_idx[w->ndistinct++] = i;
        else if (ok && units[i].lists && units[distinct_of[i]].lists) units[distinct_of[i]].lists |= units[i].lists;
        else if (ok) units[distinct_of[i]].lists = 0; /* one of them runs everywhere */
    }
    free(hashes);
    return ok ? 0 : -1;
}

/* One program of the distinct units wanted by `lists`, each behind its
 * #line directive (malloc'd; NULL out of memory). */
static char *kbuild_program(const kbuild_work *w, uint64_t lists) {
    size_t total = 1, len = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        int u = w->distinct_idx[k];
        if (kbuild_unit_wanted(w, u, lists)) total += strlen(w->labels[u]) + strlen(w->units[u].text) + 32;
    }
    char *src = malloc(total);
    if (!src) return NULL;
    for (int k = 0; k < w->ndistinct; k++) {
        int u = w->distinct_idx[k];
        if (!kbuild_unit_wanted(w, u, lists)) continue;
        size_t tl = strlen(w->units[u].text);
        len += (size_t)sprintf(src + len, "#line 1 \"%s.cu\"\n", w->labels[u]);
        memcpy(src + len, w->units[u].text, tl);
        len += tl;
        if (tl == 0 || w->units[u].text[tl - 1] != '\n') src[len++] = '\n';
    }
    src[len] = '\0';
    return src;
}

/* ------------------------------------------------------------ targets */

/* The thresholds after `__CUDA_ARCH__` at p (the text after the macro):
 * "OP N" adds its boundaries; returns how many (0: not a comparison). */
static int kbuild_arch_compare(const char *p, int *b) {
    while (*p == ' ' || *p == '\t') p++;
    int len = (p[0] == '>' || p[0] == '<' || p[0] == '=' || p[0] == '!') && p[1] == '=' ? 2
              : (p[0] == '>' || p[0] == '<')                                          ? 1
                                                                                      : 0;
    if (!len) return 0;
    const char *q = p + len;
    while (*q == ' ' || *q == '\t') q++;
    if (*q < '0' || *q > '9') return 0;
    int v = atoi(q);
    if (!strncmp(p, ">=", 2) || !strncmp(p, "<", len)) b[0] = v; /* >= N, < N */
    else b[0] = v + 1;                                           /* > N, <= N */
    if (!strncmp(p, "==", 2) || !strncmp(p, "!=", 2)) {
        b[0] = v;
        b[1] = v + 1;
        return 2;
    }
    return 1;
}

/* Whether the macro at s[i] is the operand of defined / #ifdef / #ifndef. */
static int kbuild_arch_defined_test(const char *s, size_t i) {
    size_t j = i;
    while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t' || s[j - 1] == '(')) j--;
    static const char *const words[] = {"defined", "#ifdef", "#ifndef"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(words[k]);
        if (j >= n && !strncmp(s + j - n, words[k], n)) return 1;
    }
    return 0;
}

/* Every boundary of every distinct text into b; their count, or -1 when a
 * use of the architecture macros is not a plain comparison. */
static int kbuild_arch_bounds(const kbuild_work *w, int *b, int cap) {
    int n = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        const char *s = w->units[w->distinct_idx[k]].text;
        for (const char *p = strstr(s, "__CUDA_ARCH"); p; p = strstr(p + 1, "__CUDA_ARCH")) {
            if (strncmp(p, "__CUDA_ARCH__", 13) != 0) return -1; /* __CUDA_ARCH_LIST__, _FEAT_, ... */
            int got[2], m = kbuild_arch_compare(p + 13, got);
            if (m == 0 && !kbuild_arch_defined_test(s, (size_t)(p - s))) return -1;
            for (int i = 0; i < m; i++) {
                int seen = 0;
                for (int j = 0; j < n; j++) seen |= b[j] == got[i];
                if (seen) continue;
                if (n == cap) return -1;
                b[n++] = got[i];
            }
        }
    }
    return n;
}

/* The lowest supported architecture whose __CUDA_ARCH__ reaches v; 0 if none. */
static int kbuild_arch_level(int v) {
    for (int i = 0; arch_supported_name(i); i++)
        if (arch_number(arch_supported_name(i)) * 10 >= v) return arch_number(arch_supported_name(i));
    return 0;
}

/* The levels of the `//@sm_NN ` markers in the distinct texts (kbuild.h:
 * derived targets) into levels; their count (at most cap). */
static int kbuild_marker_levels(const kbuild_work *w, int *levels, int cap) {
    int n = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        const char *s = w->units[w->distinct_idx[k]].text;
        for (const char *p = strstr(s, KBUILD_MARKER); p; p = strstr(p + 1, KBUILD_MARKER)) {
            int v = kbuild_marker_level(p);
            int seen = v <= 0;
            for (int j = 0; j < n; j++) seen |= levels[j] == v;
            if (!seen && n < cap) levels[n++] = v;
        }
    }
    return n;
}

/* The target number of each arch (arch_target[a]); the distinct targets,
 * ascending, into numbers, and for each the front-end target it is derived
 * from (source[t], 0 for a front end); returns their count. */
static int kbuild_targets(const kbuild_work *w, const char *const *archs, int narchs, int *arch_target,
                          int *numbers, int *source) {
    int bounds[KBUILD_MAX_BOUNDS], nb = kbuild_arch_bounds(w, bounds, KBUILD_MAX_BOUNDS), lowest = 1 << 30, n = 0;
    int marks[KBUILD_MAX_BOUNDS], nm = kbuild_marker_levels(w, marks, KBUILD_MAX_BOUNDS), from[ARCH_MAX];
    for (int a = 0; a < narchs; a++)
        if (arch_number(archs[a]) < lowest) lowest = arch_number(archs[a]);
    for (int a = 0; a < narchs; a++) {
        int sm = arch_number(archs[a]), t = nb < 0 ? sm : lowest, raised = 0;
        for (int i = 0; i < nb; i++) {
            int level = bounds[i] <= sm * 10 ? kbuild_arch_level(bounds[i]) : 0;
            if (level > t) t = level;
        }
        for (int i = 0; i < nm; i++)
            if (marks[i] <= sm && marks[i] > t && marks[i] > raised) raised = marks[i];
        arch_target[a] = raised ? raised : t;
        from[a] = raised ? t : 0;
    }
    for (int v = 1; v <= 1000; v++) { /* every target an arch takes, and every target one is derived from */
        int a = 0, b = 0;
        while (a < narchs && arch_target[a] != v) a++;
        while (b < narchs && from[b] != v) b++;
        if (a == narchs && b == narchs) continue;
        source[n] = a < narchs ? from[a] : 0;
        numbers[n++] = v;
    }
    return n;
}

/* ------------------------------------------------------------ the graph */

typedef struct kbuild_graph {
    const kbuild_work *w;
    kbuild_tools tools;
    int ntargets, narchs;
    kbuild_target targets[KBUILD_MAX_TARGETS];
    kbuild_sass sass[ARCH_MAX];
    /* scheduling: job j < ntargets is targets[j], then sass[j - ntargets] */
    int njobs, started[KBUILD_MAX_TARGETS + ARCH_MAX], done[KBUILD_MAX_TARGETS + ARCH_MAX], failed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} kbuild_graph;

static int kbuild_job_ready(const kbuild_graph *g, int j) {
    if (j < g->ntargets) return g->targets[j].source < 0 || g->done[g->targets[j].source];
    return g->done[g->sass[j - g->ntargets].target - g->targets];
}

static int kbuild_job_failed(const kbuild_graph *g, int j) {
    return j < g->ntargets ? g->targets[j].failed : g->sass[j - g->ntargets].failed;
}

static void kbuild_job_run(kbuild_graph *g, int j) {
    if (j >= g->ntargets) kbuild_sass_run(&g->tools, &g->sass[j - g->ntargets]);
    else if (g->targets[j].source >= 0) kbuild_front_derive(&g->targets[g->targets[j].source], &g->targets[j]);
    else kbuild_front_run(g->w, &g->tools, &g->targets[j]);
}

static void *kbuild_worker(void *arg) {
    kbuild_graph *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        int pick = -1, pending = 0, running = 0;
        for (int j = 0; j < g->njobs; j++) {
            running += g->started[j] && !g->done[j];
            if (g->started[j]) continue;
            pending = 1;
            if (pick < 0 && !g->failed && kbuild_job_ready(g, j)) pick = j;
        }
        if (pick < 0) {
            if (!pending || g->failed || !running) break;
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        g->started[pick] = 1;
        pthread_mutex_unlock(&g->mu);
        kbuild_job_run(g, pick);
        pthread_mutex_lock(&g->mu);
        g->done[pick] = 1;
        if (kbuild_job_failed(g, pick)) g->failed = 1;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Runs the graph on up to `threads` threads (the caller's included). */
static int kbuild_graph_run(kbuild_graph *g, int threads) {
    pthread_t tids[KBUILD_MAX_TARGETS + ARCH_MAX];
    if (threads > g->njobs) threads = g->njobs;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tids[t], NULL, kbuild_worker, g) != 0) break;
        started++;
    }
    kbuild_worker(g);
    for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    return 0;
}

/*
 * The plan's PTX is for GPUs newer than every CUBIN, so it must be the
 * tensor-core path (a Blackwell GPU JIT-compiling compute_75 PTX would lose
 * the tensor cores): when the kernels tell compute_80 apart (a threshold at
 * 800) and no listed architecture compiles from it, compute_80 is added as
 * a target of its own, for its PTX alone (a Turing-only plan still runs the
 * tensor cores on an A100).  Returns the new count of numbers (ascending).
 */
static int kbuild_add_tensor_target(const kbuild_work *w, int *numbers, int *source, int n) {
    int bounds[KBUILD_MAX_BOUNDS], nb = kbuild_arch_bounds(w, bounds, KBUILD_MAX_BOUNDS), tells80 = 0, has80 = 0;
    for (int i = 0; i < nb; i++) tells80 |= bounds[i] == 800;
    for (int t = 0; t < n; t++) has80 |= numbers[t] == 80;
    if (!tells80 || has80 || n == KBUILD_MAX_TARGETS) return n;
    int t = n;
    while (t > 0 && numbers[t - 1] > 80) numbers[t] = numbers[t - 1], source[t] = source[t - 1], t--;
    numbers[t] = 80;
    source[t] = 0;
    return n + 1;
}

/* Whether target t's PTX goes into the plan: every target of 80 or more;
 * a lower one only when it is the only one (sm_75 has its own CUBIN, and
 * PTX below the tensor-core path would only mislead a newer GPU). */
static int kbuild_ptx_wanted(const kbuild_graph *g, int t, int all) {
    return all || g->targets[t].number >= 80 || g->targets[g->ntargets - 1].number < 80;
}

/* The targets and one ptxas job per architecture. */
static void kbuild_graph_plan(kbuild_graph *g, const char *const *archs, int narchs) {
    int numbers[KBUILD_MAX_TARGETS], source[KBUILD_MAX_TARGETS], target_of[ARCH_MAX];
    g->narchs = narchs;
    g->ntargets = kbuild_targets(g->w, archs, narchs, target_of, numbers, source);
    g->ntargets = kbuild_add_tensor_target(g->w, numbers, source, g->ntargets);
    for (int t = 0; t < g->ntargets; t++) {
        g->targets[t].number = numbers[t];
        g->targets[t].source = -1;
        for (int u = 0; u < t; u++)
            if (source[t] && numbers[u] == source[t]) g->targets[t].source = u;
        snprintf(g->targets[t].name, sizeof g->targets[t].name, "compute_%d", numbers[t]);
        diag_init(&g->targets[t].d);
    }
    for (int a = 0; a < narchs; a++) {
        int t = 0;
        while (numbers[t] != target_of[a]) t++;
        g->sass[a] = (kbuild_sass){.target = &g->targets[t], .arch = archs[a]};
        diag_init(&g->sass[a].d);
    }
    g->njobs = g->ntargets + narchs;
}

/* ------------------------------------------------------------ kernels per image */

/*
 * With several step lists (kbuild_options.nlists) an image holds only the
 * kernels of the lists its devices run: the plan's own rule says which
 * (plan_image_serves_range, over the images this build makes), and an
 * image no device selects (compute_80 PTX beside CUBINs for every 8.x)
 * takes the newest list's, the one for GPUs newer than any listed.  A
 * front end compiles what its CUBINs, its PTX and the targets derived from
 * it need; ptxas builds an architecture's entries only (-e) when its
 * target's program holds more.
 */
static uint64_t kbuild_image_lists(const plan *images, int i, const kbuild_options *opt) {
    uint64_t lists = 0;
    for (int v = 0; v < opt->nlists; v++)
        if (plan_image_serves_range(images, i, opt->list_cc_min[v], opt->list_cc_max[v])) lists |= (uint64_t)1 << v;
    return lists ? lists : (uint64_t)1 << (opt->nlists - 1);
}

/* The step lists of every image: CUBINs in arch order, then the PTX the
 * plan carries (kbuild_collect's order), into the jobs. */
static void kbuild_graph_image_lists(kbuild_graph *g, const kbuild_options *opt) {
    plan_image ims[ARCH_MAX + KBUILD_MAX_TARGETS];
    int owner[ARCH_MAX + KBUILD_MAX_TARGETS], n = 0;
    for (int a = 0; a < g->narchs; a++, n++) {
        ims[n] = (plan_image){.kind = PLAN_IMAGE_CUBIN};
        snprintf(ims[n].arch, sizeof ims[n].arch, "%s", g->sass[a].arch);
        owner[n] = -1;
    }
    for (int t = 0; !opt->no_ptx && t < g->ntargets; t++) {
        if (!kbuild_ptx_wanted(g, t, opt->all_ptx)) continue;
        ims[n] = (plan_image){.kind = PLAN_IMAGE_PTX};
        snprintf(ims[n].arch, sizeof ims[n].arch, "%s", g->targets[t].name);
        owner[n++] = t;
    }
    plan view;
    plan_init(&view);
    view.nimages = n;
    view.images = ims;
    for (int i = 0; i < n; i++) {
        uint64_t lists = opt->nlists > 1 ? kbuild_image_lists(&view, i, opt) : UINT64_MAX;
        if (owner[i] < 0) g->sass[i].lists = lists;
        else g->targets[owner[i]].lists |= lists;
    }
}

/* s->entries: the comma-separated entries of s's lists when its target's
 * program holds more, else NULL (the whole module).  -1 out of memory. */
static int kbuild_sass_entries(const kbuild_work *w, kbuild_sass *s) {
    size_t total = 1;
    int extra = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        int u = w->distinct_idx[k];
        if (!kbuild_unit_wanted(w, u, s->target->lists)) continue;
        if (!kbuild_unit_wanted(w, u, s->lists)) extra = 1;
        else if (!w->units[u].entry) return 0; /* an unnamed unit: no -e */
        else total += strlen(w->labels[u]) + 1;
    }
    if (!extra) return 0;
    if (!(s->entries = malloc(total))) return -1;
    size_t len = 0;
    for (int k = 0; k < w->ndistinct; k++) {
        int u = w->distinct_idx[k];
        if (kbuild_unit_wanted(w, u, s->target->lists) && kbuild_unit_wanted(w, u, s->lists))
            len += (size_t)sprintf(s->entries + len, "%s%s", len ? "," : "", w->labels[u]);
    }
    return 0;
}

/* Each target's lists (its images', its CUBINs', its derived targets'),
 * each front end's program and each architecture's entries. */
static int kbuild_graph_lists(kbuild_graph *g, const kbuild_options *opt) {
    kbuild_graph_image_lists(g, opt);
    for (int a = 0; a < g->narchs; a++) ((kbuild_target *)g->sass[a].target)->lists |= g->sass[a].lists;
    for (int t = g->ntargets - 1; t >= 0; t--) /* a derived target is newer than its source */
        if (g->targets[t].source >= 0) g->targets[g->targets[t].source].lists |= g->targets[t].lists;
    for (int t = 0; t < g->ntargets; t++) {
        kbuild_target *tg = &g->targets[t];
        if (tg->source >= 0) tg->lists = g->targets[tg->source].lists; /* its PTX is its source's, raised */
        else if (!(tg->program = kbuild_program(g->w, tg->lists))) return -1;
    }
    for (int a = 0; a < g->narchs; a++)
        if (kbuild_sass_entries(g->w, &g->sass[a])) return -1;
    return 0;
}

/* ------------------------------------------------------------ results */

/* Which units an image built for `lists` holds (a unit as its twin). */
static int kbuild_carries(const kbuild_work *w, const kbuild_result *r, uint64_t lists, kbuild_image *im) {
    if (!(im->carries = malloc((size_t)w->nunits))) return -1;
    for (int i = 0; i < w->nunits; i++) im->carries[i] = (unsigned char)kbuild_unit_wanted(w, r->distinct_of[i], lists);
    return 0;
}

/* One CUBIN per arch in the order given, then the PTX the plan carries
 * (kbuild_ptx_wanted), ascending. */
static int kbuild_collect(kbuild_graph *g, kbuild_result *r, int no_ptx, int all_ptx) {
    const kbuild_work *w = g->w;
    int nptx = 0;
    for (int t = 0; !no_ptx && t < g->ntargets; t++) nptx += kbuild_ptx_wanted(g, t, all_ptx);
    r->nimages = g->narchs + nptx;
    r->images = calloc((size_t)r->nimages, sizeof *r->images);
    if (!r->images) return -1;
    for (int a = 0; a < g->narchs; a++) {
        kbuild_image *im = &r->images[a];
        kbuild_sass *s = &g->sass[a];
        snprintf(im->arch, sizeof im->arch, "%s", s->arch);
        im->data = s->cubin;
        im->size = s->cubin_size;
        s->cubin = NULL;
        im->seconds = s->seconds;
        if (!(im->stats = malloc(sizeof(kbuild_stats) * (size_t)w->nunits))) return -1;
        for (int i = 0; i < w->nunits; i++) im->stats[i] = (kbuild_stats){-1, -1, -1, -1, -1};
        if (s->log) kbuild_sass_stats(s->log, w, im->stats);
        for (int i = 0; i < w->nunits; i++) im->stats[i] = im->stats[r->distinct_of[i]];
        if (kbuild_carries(w, r, s->entries ? s->lists : s->target->lists, im)) return -1;
    }
    for (int t = 0, k = g->narchs; !no_ptx && t < g->ntargets; t++) {
        if (!kbuild_ptx_wanted(g, t, all_ptx)) continue;
        kbuild_image *im = &r->images[k++];
        snprintf(im->arch, sizeof im->arch, "%s", g->targets[t].name);
        im->is_ptx = 1;
        im->data = (unsigned char *)g->targets[t].ptx;
        im->size = g->targets[t].ptx_size;
        im->seconds = g->targets[t].seconds;
        g->targets[t].ptx = NULL;
        if (kbuild_carries(w, r, g->targets[t].lists, im)) return -1;
    }
    return 0;
}

static void kbuild_graph_free(kbuild_graph *g) {
    for (int t = 0; t < g->ntargets; t++) {
        free(g->targets[t].ptx);
        free(g->targets[t].program);
    }
    for (int a = 0; a < g->narchs; a++) {
        free(g->sass[a].cubin);
        free(g->sass[a].log);
        free(g->sass[a].entries);
    }
}

/* The first failure in the graph's order into d. */
static int kbuild_graph_error(const kbuild_graph *g, diag *d) {
    for (int j = 0; j < g->njobs; j++)
        if (kbuild_job_failed(g, j)) {
            *d = j < g->ntargets ? g->targets[j].d : g->sass[j - g->ntargets].d;
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------ driver */

void kbuild_result_free(kbuild_result *r) {
    if (!r) return;
    for (int i = 0; i < r->nimages; i++) {
        free(r->images[i].data);
        free(r->images[i].stats);
        free(r->images[i].carries);
    }
    free(r->images);
    free(r->distinct_of);
    memset(r, 0, sizeof *r);
}

static int kbuild_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The toolkit and a private folder for ptxas. */
static int kbuild_tools_open(kbuild_tools *t, const kbuild_options *opt, diag *d) {
    const char *home = opt->cuda_home;
    if (!home || !*home) home = getenv("CUDA_HOME");
    if (!home || !*home) home = BERTC_CUDA_HOME;
    if (strlen(home) > KBUILD_PATH - 64) return diag_set(d, DIAG_CODE_USAGE, "CUDA_HOME is too long");
    t->extra = opt->extra_options;
    t->nextra = opt->nextra;
    t->cache = opt->cache;
    if (kbuild_front_tools(t, home, d)) return -1;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > KBUILD_PATH - 64) tmp = "/tmp";
    snprintf(t->tmpdir, sizeof t->tmpdir, "%s/bertc-ptxas-XXXXXX", tmp);
    if (!mkdtemp(t->tmpdir)) {
        t->tmpdir[0] = '\0';
        return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: cannot create a folder under %s", tmp);
    }
    return kbuild_sass_tools(t, home, d);
}

static int kbuild_check(const kbuild_unit *units, int nunits, const char *const *archs, int narchs,
                        const kbuild_options *opt, diag *d) {
    if (arch_list_check(archs, narchs, d)) return -1;
    if (nunits < 1) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: no kernels to compile");
    if (opt->nlists > 64 || (opt->nlists > 1 && (!opt->list_cc_min || !opt->list_cc_max)))
        return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: %d step lists (at most 64, each with its capabilities)",
                        opt->nlists);
    for (int i = 0; i < nunits; i++)
        if (!units[i].text) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: kernel %d has no source", i);
    return 0;
}

/* Builds the graph over the prepared work and runs it; fills r's images. */
static int kbuild_build(kbuild_graph *g, const char *const *archs, int narchs, const kbuild_options *opt,
                        kbuild_result *r, diag *d) {
    kbuild_graph_plan(g, archs, narchs);
    if (kbuild_graph_lists(g, opt)) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory");
    kbuild_graph_run(g, opt->jobs);
    if (kbuild_graph_error(g, d)) return -1;
    for (int t = 0; t < g->ntargets; t++) r->nderived += g->targets[t].source >= 0;
    r->ntargets = g->ntargets - r->nderived;
    r->njobs = g->njobs - r->nderived;
    for (int t = 0; t < g->ntargets; t++) r->cached_jobs += g->targets[t].cached;
    for (int a = 0; a < narchs; a++) r->cached_jobs += g->sass[a].cached;
    if (kbuild_collect(g, r, opt->no_ptx, opt->all_ptx)) return diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory");
    return 0;
}

int kbuild_compile(const kbuild_unit *units, int nunits, const char *const *archs, int narchs,
                   const kbuild_options *opt, kbuild_result *r, diag *d) {
    double t0 = kbuild_clock();
    memset(r, 0, sizeof *r);
    kbuild_options defaults = {0};
    if (!opt) opt = &defaults;
    if (kbuild_check(units, nunits, archs, narchs, opt, d)) return -1;
    kbuild_work w;
    memset(&w, 0, sizeof w);
    kbuild_graph *g = calloc(1, sizeof *g);
    kbuild_unit *own = malloc(sizeof *own * (size_t)nunits); /* the lists of twins are joined */
    r->nunits = nunits;
    r->distinct_of = malloc(sizeof(int) * (size_t)nunits);
    if (own) memcpy(own, units, sizeof *own * (size_t)nunits);
    for (int i = 0; own && opt->nlists <= 1 && i < nunits; i++) own[i].lists = 0;
    int rc = !g || !own || !r->distinct_of || kbuild_work_prepare(&w, own, nunits, r->distinct_of)
                 ? diag_set(d, DIAG_CODE_INTERNAL, "kbuild: out of memory")
                 : 0;
    r->ndistinct = w.ndistinct;
    if (!rc) {
        g->w = &w;
        rc = kbuild_tools_open(&g->tools, opt, d);
    }
    if (!rc) rc = kbuild_build(g, archs, narchs, opt, r, d);
    if (g && g->tools.tmpdir[0]) nftw(g->tools.tmpdir, kbuild_rm, 16, FTW_DEPTH | FTW_PHYS);
    if (g) kbuild_graph_free(g);
    free(g);
    kbuild_work_free(&w);
    free(own);
    if (rc) kbuild_result_free(r);
    else r->seconds = kbuild_clock() - t0;
    return rc;
}
