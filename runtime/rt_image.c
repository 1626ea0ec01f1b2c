/*
 * rt_image — which of a plan's kernel images runs on a device.  The rule
 * is runtime/plan/plan_image.c's (the compiler applies the same one when
 * it decides which CUBINs a plan needs and what a GPU would run); this is
 * the runtime's name for it.
 */
#include "rt.h"

/* The SM number an image's code was built for ("sm_90" -> 90,
 * "compute_80" -> 80); 0 for the emulated device's image. */
int rt_image_sm(const plan_image *im) {
    int sm = plan_arch_number(im->arch, im->kind == PLAN_IMAGE_PTX ? "compute_" : "sm_");
    return sm < 0 ? 0 : sm;
}

int rt_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap) {
    return plan_image_select(p, arch, major, minor, why, cap);
}
