/*
 * plan_image — which of a plan's kernel images runs on a device (plan.h).
 *
 * The rules are CUDA's compatibility rules, applied in the order that gives
 * the best code: an image built for exactly this architecture (a CUBIN
 * "sm_86" on 8.6, or the emulated device's "emu" on its 0.0); else a CUBIN
 * of the same major version and an older minor (binary compatible: sm_80
 * code runs on 8.6 and 8.9, never across majors); else PTX for a
 * capability not newer than the device's, which the driver JIT-compiles
 * (the newest such PTX, since it may use newer instructions).  The
 * emulated device is not special here: it is the architecture named "emu",
 * and only an image of that name matches it.
 *
 * The same goes for a plan's step lists (plan_variant_for): a plan built
 * with `--tune` may carry one per range of compute capabilities, and the
 * device's capability picks one, as it picks the image.
 *
 * Which lists an image serves follows from the same rule: a device of
 * capability cc runs image i and step list v when both rules pick them,
 * so image i must carry every kernel of every list whose capability range
 * holds a cc that selects it (plan_image_serves; a plan built with
 * `--tune` gives each image only those, format 9).  The selection changes
 * only at an image's own capability, the one after it and the next major
 * version, so those points and the range's start decide the question
 * without walking every capability up to PLAN_CC_MAX.
 *
 * The rule lives beside the plan's vocabulary, not in the runtime, because
 * two sides need the same answer: the runtime choosing what to load, and
 * the compiler (which CUBINs a plan needs at all, and what `bertc inspect
 * --predict` assumes a GPU runs).
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"

int plan_arch_number(const char *arch, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(arch, prefix, n)) return -1;
    const char *s = arch + n;
    if (!*s) return -1;
    int v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 10000) return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

int plan_cubin_runs_on(int sm, int major, int minor) { return sm >= 0 && sm / 10 == major && sm % 10 <= minor; }

/* The newest image of `kind` (CUBIN or PTX) that a major.minor device can run; -1 if none. */
static int plan_image_newest(const plan *p, plan_image_kind kind, int major, int minor) {
    int best = -1, best_sm = -1;
    for (int i = 0; i < p->nimages; i++) {
        if (p->images[i].kind != kind) continue;
        int sm = plan_arch_number(p->images[i].arch, kind == PLAN_IMAGE_CUBIN ? "sm_" : "compute_");
        int ok = kind == PLAN_IMAGE_CUBIN ? plan_cubin_runs_on(sm, major, minor) : sm >= 0 && sm <= major * 10 + minor;
        if (ok && sm > best_sm) best = i, best_sm = sm;
    }
    return best;
}

int plan_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap) {
    for (int i = 0; i < p->nimages; i++)
        if (p->images[i].kind != PLAN_IMAGE_PTX && !strcmp(p->images[i].arch, arch)) return i;
    if (major > 0) {
        int best = plan_image_newest(p, PLAN_IMAGE_CUBIN, major, minor);
        if (best < 0) best = plan_image_newest(p, PLAN_IMAGE_PTX, major, minor);
        if (best >= 0) return best;
    }
    if (why && cap) {
        int n = snprintf(why, cap, "the plan has no kernel image for %s (compute capability %d.%d): it carries", arch,
                         major, minor);
        for (int i = 0; i < p->nimages && n > 0 && (size_t)n < cap; i++)
            n += snprintf(why + n, cap - (size_t)n, "%s %s%s", i ? "," : "", p->images[i].arch,
                          p->images[i].kind == PLAN_IMAGE_PTX ? " (PTX)" : "");
        if (n > 0 && (size_t)n < cap)
            snprintf(why + n, cap - (size_t)n, "%s; compile it with --arch %s", p->nimages ? "" : " none",
                     major > 0 ? arch : "emu");
    }
    return -1;
}

int plan_variant_for(const plan *p, int major, int minor) {
    long cc = major > 0 || minor > 0 ? (long)major * 10 + minor : 0; /* "emu" is 0.0 */
    if (cc > PLAN_CC_MAX) cc = PLAN_CC_MAX;
    for (int v = 1; v < plan_variant_count(p); v++)
        if (cc < plan_variant_buckets(p, v)->cc_min) return v - 1;
    return plan_variant_count(p) - 1;
}

/* The image a device of capability cc picks, named as the runtime names it. */
static int plan_image_at(const plan *p, int cc) {
    char arch[24];
    if (cc == 0) snprintf(arch, sizeof arch, "emu");
    else snprintf(arch, sizeof arch, "sm_%d%d", cc / 10, cc % 10);
    return plan_image_select(p, arch, cc / 10, cc % 10, NULL, 0);
}

int plan_image_serves_range(const plan *p, int i, int cc_min, int cc_max) {
    if (cc_min > cc_max) return 0;
    if (plan_image_at(p, cc_min) == i) return 1;
    for (int j = 0; j < p->nimages; j++) {
        const plan_image *im = &p->images[j];
        int n = plan_arch_number(im->arch, im->kind == PLAN_IMAGE_PTX ? "compute_" : "sm_");
        if (n < 0) continue;
        int points[3] = {n, n + 1, (n / 10 + 1) * 10};
        for (int k = 0; k < 3; k++)
            if (points[k] > cc_min && points[k] <= cc_max && plan_image_at(p, points[k]) == i) return 1;
    }
    return 0;
}

int plan_image_serves(const plan *p, int i, int v) {
    const sched_bucket *b = plan_variant_buckets(p, v);
    if (plan_variant_count(p) == 1) return plan_image_serves_range(p, i, 0, PLAN_CC_MAX); /* the writer's one list */
    return plan_image_serves_range(p, i, b->cc_min, b->cc_max);
}
