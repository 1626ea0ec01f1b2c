/*
 * emuctl — the tests' handle on the emulated device's controls
 * (runtime/emu/emudev.h): the same libbertc_emudev.so the runtime opens,
 * found by the same name through the test binary's RUNPATH, so settings
 * made here are the ones the runtime's device sees.
 */
#ifndef BERTC_TEST_EMUCTL_H
#define BERTC_TEST_EMUCTL_H

#include "emudev.h"

typedef struct emuctl {
    void (*set_arch)(int major, int minor);
    int (*add_twins)(const void *image, size_t size);
    void (*fail)(const char *name, int nth, int code);
    void (*stray_write)(long nth, int arg, long long offset);
    void (*set_fill)(int byte);
    void (*set_null)(int on);
    void (*set_algorithms)(int n);
    void (*set_algorithm_delay)(int variant, int microseconds);
    void (*set_driver_version)(int version);
    void (*set_schedule)(int schedule, uint64_t seed);
    void (*reset)(void);
    void (*get_stats)(bertc_emudev_stats *out);
    const char *(*last_error)(void);
} emuctl;

/* The controls, or NULL (with a message on stderr) if the library or a
 * symbol is missing. */
const emuctl *emuctl_get(void);
/* The controls reset to their defaults, for a test program that cannot run
 * without them: NULL after printing the FAIL line tests/run.sh counts (the
 * program then exits 1). */
const emuctl *emuctl_open(void);

#endif
