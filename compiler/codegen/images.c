/*
 * images — build a plan's kernel images (images.h).  The plan takes
 * ownership of every image's bytes; on failure what was built so far stays
 * in the plan for plan_free.
 */
#include "images.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_build.h"
#include "kbuild.h"
#include "kcache.h"

int images_archs_to_build(const arch_list *targets, const char **out) {
    int n = 0;
    for (int a = 0; a < targets->count; a++) {
        int sm = plan_arch_number(targets->names[a], "sm_"), served = 0;
        for (int b = 0; b < targets->count; b++) {
            int other = plan_arch_number(targets->names[b], "sm_");
            if (b != a && other < sm && plan_cubin_runs_on(other, sm / 10, sm % 10)) served = 1;
        }
        if (!served) out[n++] = targets->names[a];
    }
    return n;
}

/* Makes room for n more images in the plan.  The count is the builder's,
 * not an estimate from the architectures: one sm_90 alone gives three (its
 * CUBIN, and compute_80's PTX beside compute_90's, which is derived from
 * it), and an estimate once wrote past the array. */
static int images_reserve(plan *p, int n, diag *d) {
    if (n <= 0) return 0;
    plan_image *im = realloc(p->images, (size_t)(p->nimages + n) * sizeof *im);
    if (!im) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    p->images = im;
    return 0;
}

/* Moves kbuild's images into the plan, their stats in kernel order. */
static int images_take_gpu(plan *p, kbuild_result *kr, diag *d) {
    if (images_reserve(p, kr->nimages, d)) return -1;
    for (int i = 0; i < kr->nimages; i++) {
        kbuild_image *ki = &kr->images[i];
        plan_image *pi = &p->images[p->nimages];
        snprintf(pi->arch, sizeof pi->arch, "%s", ki->arch);
        pi->kind = ki->is_ptx ? PLAN_IMAGE_PTX : PLAN_IMAGE_CUBIN;
        pi->data = ki->data;
        pi->size = ki->size;
        ki->data = NULL;
        p->nimages++;
        pi->stats = calloc((size_t)p->nkernels + 1, sizeof *pi->stats);
        if (!pi->stats) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        for (int u = 0; ki->stats && u < p->nkernels; u++) {
            pi->stats[u].registers = ki->stats[u].registers;
            pi->stats[u].spill_stores = ki->stats[u].spill_stores;
            pi->stats[u].spill_loads = ki->stats[u].spill_loads;
            pi->stats[u].shared_static = ki->stats[u].shared_static;
        }
        for (int u = 0; u < p->nkernels; u++)
            if (ki->carries && !ki->carries[u])
                pi->stats[u] = (plan_kernel_stats){.registers = PLAN_STATS_NOT_CARRIED};
    }
    return 0;
}

/* The step lists that launch each kernel (bit v: list v), and each list's
 * capabilities, for kbuild: an image holds its devices' lists' kernels. */
static int images_lists(const plan *p, kbuild_unit *units, int *cc_min, int *cc_max) {
    int nv = plan_variant_count(p);
    if (nv < 2 || nv > 64) return 0; /* one list: every image holds every kernel */
    for (int v = 0; v < nv; v++) {
        const sched_bucket *bs = plan_variant_buckets(p, v);
        cc_min[v] = bs->cc_min;
        cc_max[v] = bs->cc_max;
        for (int b = 0; b < p->nbuckets; b++)
            for (int j = 0; j < bs[b].nsteps; j++)
                if (bs[b].steps[j].kind == SCHED_STEP_KERNEL) units[bs[b].steps[j].launch.kernel].lists |= (uint64_t)1 << v;
    }
    return nv;
}

static int images_build_gpu(plan *p, const arch_list *targets, const images_options *o, images_report *r,
                            diag *d) {
    kbuild_unit *units = calloc((size_t)p->nkernels + 1, sizeof *units);
    const char *archs[ARCH_MAX];
    int cc_min[64], cc_max[64];
    if (!units) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (int i = 0; i < p->nkernels; i++) units[i] = (kbuild_unit){p->kernels[i].source, p->kernels[i].entry, 0};
    int nlists = images_lists(p, units, cc_min, cc_max);
    int narchs = images_archs_to_build(targets, archs);
    kcache cache;
    kcache_open(&cache, !o->no_cache);
    kbuild_options ko = {.jobs = o->jobs, .cache = &cache, .nlists = nlists, .list_cc_min = cc_min, .list_cc_max = cc_max};
    kbuild_result kr;
    int rc = kbuild_compile(units, p->nkernels, archs, narchs, &ko, &kr, d);
    free(units);
    kcache_close(&cache);
    if (!rc) {
        r->narchs_built = narchs;
        r->njobs = kr.njobs;
        r->cached_jobs = kr.cached_jobs;
        r->ndistinct = kr.ndistinct;
        rc = images_take_gpu(p, &kr, d);
    }
    kbuild_result_free(&kr);
    return rc;
}

/* The emulated device's image: the same kernel texts compiled by the host
 * C++ compiler into an x86-64 shared object, stored beside the CUBINs so
 * running on the emulated device needs no compiler at run time. */
static int images_build_emu(plan *p, images_report *r, diag *d) {
    const char **texts = calloc((size_t)p->nkernels + 1, sizeof *texts);
    if (!texts) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    int n = 0; /* each distinct text once: records of one entry share it (an entry defined twice fails the link) */
    for (int i = 0; i < p->nkernels; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(p->kernels[j].entry, p->kernels[i].entry);
        if (!seen) texts[n++] = p->kernels[i].source;
    }
    unsigned char *bytes;
    size_t size;
    r->ndistinct = n;
    int rc = emu_build_image(texts, n, &bytes, &size, d);
    free(texts);
    if (rc) {
        diag_prefix(d, "building the emulated-device image: ");
        return -1;
    }
    if (images_reserve(p, 1, d)) {
        free(bytes);
        return -1;
    }
    plan_image *pi = &p->images[p->nimages++];
    snprintf(pi->arch, sizeof pi->arch, "emu");
    pi->kind = PLAN_IMAGE_EMU;
    pi->data = bytes;
    pi->size = size;
    pi->stats = calloc((size_t)p->nkernels + 1, sizeof *pi->stats);
    return pi->stats ? 0 : diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
}

int images_build(plan *p, const arch_list *targets, const images_options *o, images_report *r, diag *d) {
    images_report none;
    if (!r) r = &none;
    *r = (images_report){0};
    if (targets->count > 0 && images_build_gpu(p, targets, o, r, d)) return -1;
    if (targets->emu && images_build_emu(p, r, d)) return -1;
    return 0;
}
