/*
 * rt_image — which of a plan's kernel images runs on a device.
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* "sm_86" -> 86, "compute_75" -> 75; -1 for anything else. */
static int rt_arch_number(const char *arch, const char *prefix) {
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

int rt_image_sm(const plan_image *im) {
    int sm = rt_arch_number(im->arch, im->kind == PLAN_IMAGE_PTX ? "compute_" : "sm_");
    return sm < 0 ? 0 : sm;
}

int rt_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap) {
    int best = -1, best_sm = -1;
    for (int i = 0; i < p->nimages; i++)
        if (p->images[i].kind != PLAN_IMAGE_PTX && !strcmp(p->images[i].arch, arch)) return i;
    if (major > 0) {
        for (int i = 0; i < p->nimages; i++) {
            if (p->images[i].kind != PLAN_IMAGE_CUBIN) continue;
            int sm = rt_arch_number(p->images[i].arch, "sm_");
            if (sm < 0 || sm / 10 != major || sm % 10 > minor) continue;
            if (sm > best_sm) best = i, best_sm = sm;
        }
        if (best >= 0) return best;
        int cc = major * 10 + minor;
        for (int i = 0; i < p->nimages; i++) {
            if (p->images[i].kind != PLAN_IMAGE_PTX) continue;
            int sm = rt_arch_number(p->images[i].arch, "compute_");
            if (sm < 0 || sm > cc) continue;
            if (sm > best_sm) best = i, best_sm = sm;
        }
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
