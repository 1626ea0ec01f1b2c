/*
 * rt_image — which of a plan's kernel images runs on a device.  The rule
 * is runtime/plan/plan_image.c's (the compiler applies the same one when
 * it decides which CUBINs a plan needs and what a GPU would run); this is
 * the runtime's name for it.
 */
#include "rt.h"

int rt_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap) {
    return plan_image_select(p, arch, major, minor, why, cap);
}
