/*
 * device — fills the device table (device.h) with dlopen/dlsym.
 *
 * Every symbol is looked up by the name cuda.h's macros give it
 * (cuMemAlloc -> "cuMemAlloc_v2"), through one X-macro list, so the table
 * and the lookups cannot drift apart and a toolkit whose headers rename a
 * function changes both at once.  A missing library or symbol is reported
 * by name together with dlerror()'s text; nothing is half-filled on
 * failure (the libraries are closed again).
 *
 * The kind decides only which files are opened; there is no other
 * difference between the real driver and the emulated device anywhere in
 * the runtime.
 */
#include "device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVICE_STR2(x) #x
#define DEVICE_STR(x) DEVICE_STR2(x)

#ifndef BERTC_EMU_DEVICE_PATH
#define BERTC_EMU_DEVICE_PATH "libbertc_emudev.so"
#endif

/*
 * RTLD_NODELETE: the vendor libraries keep process-wide state (libcublasLt
 * allocates its C++ runtime's emergency pool at load) and are not meant to be
 * unmapped and mapped again while a service runs; a table can be closed and
 * reopened any number of times, the library stays mapped once.
 */
static void *device_open_lib(const char *path, const char *what, diag *d) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();
        diag_set(d, DIAG_CODE_INTERNAL, "no %s: cannot load %s (%s)", what, path, e ? e : "unknown error");
    }
    return h;
}

/*
 * Where the emulated device library is: $BERTC_EMU_DEVICE, else beside the
 * object that holds this code (libbertc.so, or the executable that links
 * the runtime statically), else in ../lib from there (an installed bertc in
 * PREFIX/bin), else by name through the dynamic loader.  Looking beside
 * ourselves explicitly, rather than trusting the loader's $ORIGIN run path,
 * matters under AddressSanitizer: its dlopen interceptor makes the loader
 * search the sanitizer runtime's paths instead of the caller's.
 */
static const char *device_emu_path(char *buf, size_t cap) {
    const char *env = getenv("BERTC_EMU_DEVICE");
    if (env && *env) return env;
    Dl_info info;
    if (dladdr((void *)device_emu_path, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = (int)(slash - info.dli_fname);
        static const char *const rel[] = {"/", "/../lib/"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            int n = snprintf(buf, cap, "%.*s%s%s", dir, info.dli_fname, rel[i], BERTC_EMU_DEVICE_PATH);
            if (n > 0 && (size_t)n < cap && access(buf, R_OK) == 0) return buf;
        }
    }
    return BERTC_EMU_DEVICE_PATH;
}

int device_table_open(device_table *t, device_kind kind, const char *driver_path, const char *blaslt_path, diag *d) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    char emu_buf[4096];
    const char *emu = device_emu_path(emu_buf, sizeof emu_buf);
    if (!driver_path) driver_path = kind == DEVICE_KIND_EMU ? emu : "libcuda.so.1";
    if (!blaslt_path) blaslt_path = kind == DEVICE_KIND_EMU ? emu : "libcublasLt.so.13";
    const char *what_driver = kind == DEVICE_KIND_EMU ? "emulated device" : "CUDA driver";
    const char *what_blaslt = kind == DEVICE_KIND_EMU ? "emulated device" : "cuBLASLt";

    if (!(t->driver_lib = device_open_lib(driver_path, what_driver, d))) return -1;
    if (!(t->blaslt_lib = device_open_lib(blaslt_path, what_blaslt, d))) {
        device_table_close(t);
        return -1;
    }
    const char *missing = NULL, *missing_lib = NULL;
#define DEVICE_LOOKUP(lib, libpath, name)                                  \
    if (!missing) {                                                        \
        *(void **)&t->name = dlsym(t->lib, DEVICE_STR(name));              \
        if (!t->name) {                                                    \
            missing = DEVICE_STR(name);                                    \
            missing_lib = libpath;                                         \
        }                                                                  \
    }
#define DEVICE_LOOKUP_DRIVER(name) DEVICE_LOOKUP(driver_lib, driver_path, name)
#define DEVICE_LOOKUP_BLASLT(name) DEVICE_LOOKUP(blaslt_lib, blaslt_path, name)
    DEVICE_DRIVER_FUNCTIONS(DEVICE_LOOKUP_DRIVER)
    DEVICE_BLASLT_FUNCTIONS(DEVICE_LOOKUP_BLASLT)
#undef DEVICE_LOOKUP_DRIVER
#undef DEVICE_LOOKUP_BLASLT
#undef DEVICE_LOOKUP
    /* A driver older than the toolkit the runtime was built with lacks its
     * versioned entry points (the first one missing would be the only
     * message) and cannot run its cuBLASLt or JIT its PTX: say so first.
     * cuDriverGetVersion needs no cuInit. */
    int version = 0;
    if (t->cuDriverGetVersion && t->cuDriverGetVersion(&version) == CUDA_SUCCESS && version < CUDA_VERSION) {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "%s is CUDA driver %d.%d; bertc needs %d.%d or newer (it was built with that toolkit): update the "
                 "NVIDIA driver",
                 driver_path, version / 1000, version % 1000 / 10, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
        device_table_close(t);
        return -1;
    }
    if (missing) {
        diag_set(d, DIAG_CODE_INTERNAL, "%s does not export %s (expected a CUDA %s library)", missing_lib, missing,
                 missing_lib == driver_path ? "driver" : "cuBLASLt");
        device_table_close(t);
        return -1;
    }
    return 0;
}

void device_table_close(device_table *t) {
    /* Each successful dlopen holds a reference, also when both name the same file. */
    if (t->blaslt_lib) dlclose(t->blaslt_lib);
    if (t->driver_lib) dlclose(t->driver_lib);
    memset(t, 0, sizeof *t);
}

void device_arch_name(int major, int minor, char *buf, unsigned cap) {
    if (major == 0 && minor == 0) snprintf(buf, cap, "emu");
    else snprintf(buf, cap, "sm_%d%d", major, minor);
}
