/* emuctl — see emuctl.h. */
#include "emuctl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const emuctl *emuctl_get(void) {
    static emuctl c;
    static int done, ok;
    if (done) return ok ? &c : NULL;
    done = 1;
    const char *path = getenv("BERTC_EMU_DEVICE");
    void *h = dlopen(path && *path ? path : "libbertc_emudev.so", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        fprintf(stderr, "emuctl: %s\n", dlerror());
        return NULL;
    }
    ok = 1;
#define EMUCTL_SYM(field, name)                                         \
    if (!(*(void **)&c.field = dlsym(h, name))) {                       \
        fprintf(stderr, "emuctl: the emulated device lacks %s\n", name); \
        ok = 0;                                                         \
    }
    EMUCTL_SYM(set_arch, "bertc_emudev_set_arch")
    EMUCTL_SYM(add_twins, "bertc_emudev_add_twins")
    EMUCTL_SYM(fail, "bertc_emudev_fail")
    EMUCTL_SYM(stray_write, "bertc_emudev_stray_write")
    EMUCTL_SYM(set_fill, "bertc_emudev_set_fill")
    EMUCTL_SYM(set_null, "bertc_emudev_set_null")
    EMUCTL_SYM(set_algorithms, "bertc_emudev_set_algorithms")
    EMUCTL_SYM(set_algorithm_delay, "bertc_emudev_set_algorithm_delay")
    EMUCTL_SYM(set_driver_version, "bertc_emudev_set_driver_version")
    EMUCTL_SYM(set_schedule, "bertc_emudev_set_schedule")
    EMUCTL_SYM(reset, "bertc_emudev_reset")
    EMUCTL_SYM(get_stats, "bertc_emudev_get_stats")
    EMUCTL_SYM(last_error, "bertc_emudev_last_error")
#undef EMUCTL_SYM
    return ok ? &c : NULL;
}

const emuctl *emuctl_open(void) {
    const emuctl *e = emuctl_get();
    if (!e) {
        printf("FAIL emulated_device: libbertc_emudev.so or its controls are missing\n");
        return NULL;
    }
    e->reset();
    return e;
}
