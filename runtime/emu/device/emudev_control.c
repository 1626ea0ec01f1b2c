/*
 * emudev_control — the control API of emudev.h: what tests and tools use
 * to set the device up (the architecture it claims, twins, injected
 * failures, the fill byte, the null device, the fiber schedule) and to
 * read its counters and last error.  None of it is CUDA; the runtime never
 * calls it.
 *
 * Each setting is an atomic in emudev_g that the emulated functions read
 * when they need it, so a change applies from the next call on, from any
 * thread.  bertc_emudev_reset returns to the environment's settings
 * (emudev_state.c reads them at load) and forgets injections and twins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emudev_internal.h"

void bertc_emudev_set_arch(int major, int minor) {
    atomic_store(&emudev_g.arch_major, major);
    atomic_store(&emudev_g.arch_minor, minor);
}

int bertc_emudev_add_twins(const void *image, size_t size) {
    emudev_image_info info;
    memset(&info, 0, sizeof info);
    if (!image || emudev_image_inspect(image, size, &info) != 0) return -1;
    emudev_image_kind kind = info.kind;
    emudev_image_info_free(&info);
    if (kind != EMUDEV_IMAGE_EMU) return -1;
    emudev_twin *t = calloc(1, sizeof *t);
    char why[512];
    if (!t || !(t->image = emudev_image_load(image, size, &t->fd, why, sizeof why))) {
        free(t);
        return -1;
    }
    pthread_mutex_lock(&emudev_g.mu);
    t->next = emudev_g.twins;
    emudev_g.twins = t;
    pthread_mutex_unlock(&emudev_g.mu);
    return 0;
}

void bertc_emudev_fail(const char *name, int nth, int code) {
    if (!name) return;
    pthread_mutex_lock(&emudev_g.fail_mu);
    emudev_injection *slot = NULL;
    for (int i = 0; i < EMUDEV_MAX_INJECTIONS; i++) {
        emudev_injection *in = &emudev_g.inj[i];
        if (in->remaining && strcmp(in->name, name) == 0) {
            slot = in;
            break;
        }
        if (!in->remaining && !slot) slot = in;
    }
    if (slot) {
        int was = slot->remaining != 0, now = nth > 0;
        snprintf(slot->name, sizeof slot->name, "%s", name);
        slot->remaining = now ? nth : 0;
        slot->code = code;
        atomic_fetch_add(&emudev_g.armed, now - was);
    }
    pthread_mutex_unlock(&emudev_g.fail_mu);
}

void bertc_emudev_stray_write(long nth, int arg, long long offset) {
    pthread_mutex_lock(&emudev_g.fail_mu);
    emudev_g.stray_remaining = nth > 0 ? nth : 0;
    emudev_g.stray_arg = arg;
    emudev_g.stray_offset = offset;
    pthread_mutex_unlock(&emudev_g.fail_mu);
}

void bertc_emudev_set_fill(int byte) { atomic_store(&emudev_g.fill, byte & 0xff); }

void bertc_emudev_set_null(int on) { atomic_store(&emudev_g.null_mode, on != 0); }

void bertc_emudev_set_algorithms(int n) {
    atomic_store(&emudev_g.algorithms, n < 1 ? 1 : n > EMUDEV_MAX_ALGORITHMS ? EMUDEV_MAX_ALGORITHMS : n);
}

void bertc_emudev_set_algorithm_delay(int variant, int microseconds) {
    if (variant >= 0 && variant < EMUDEV_MAX_ALGORITHMS)
        atomic_store(&emudev_g.algorithm_delay_us[variant], microseconds < 0 ? 0 : microseconds);
}

void bertc_emudev_set_driver_version(int version) {
    atomic_store(&emudev_g.driver_version, version > 0 ? version : CUDA_VERSION);
}

void bertc_emudev_set_schedule(int schedule, uint64_t seed) {
    if (schedule >= 0 && schedule < EMU_SCHEDULE_COUNT) atomic_store(&emudev_g.schedule, schedule);
    atomic_store(&emudev_g.seed, seed);
}

/* Twins are freed: only call this when no module bound to them is loaded. */
void bertc_emudev_reset(void) {
    emudev_settings_from_env();
    pthread_mutex_lock(&emudev_g.fail_mu);
    memset(emudev_g.inj, 0, sizeof emudev_g.inj);
    atomic_store(&emudev_g.armed, 0);
    emudev_g.stray_remaining = 0;
    pthread_mutex_unlock(&emudev_g.fail_mu);
    pthread_mutex_lock(&emudev_g.mu);
    emudev_twin *t = emudev_g.twins;
    emudev_g.twins = NULL;
    pthread_mutex_unlock(&emudev_g.mu);
    while (t) {
        emudev_twin *next = t->next;
        emudev_image_release(t->image, t->fd);
        free(t);
        t = next;
    }
}

void bertc_emudev_get_stats(bertc_emudev_stats *out) {
    if (!out) return;
    long v[EMUDEV_STAT_COUNT];
    for (int i = 0; i < EMUDEV_STAT_COUNT; i++) v[i] = atomic_load(&emudev_g.stats[i]);
    *out = (bertc_emudev_stats){
        .live_allocations = v[EMUDEV_STAT_ALLOCATIONS],
        .live_host_allocations = v[EMUDEV_STAT_HOST_ALLOCATIONS],
        .live_bytes = v[EMUDEV_STAT_BYTES],
        .live_modules = v[EMUDEV_STAT_MODULES],
        .live_streams = v[EMUDEV_STAT_STREAMS],
        .live_events = v[EMUDEV_STAT_EVENTS],
        .live_graphs = v[EMUDEV_STAT_GRAPHS],
        .live_graph_execs = v[EMUDEV_STAT_GRAPH_EXECS],
        .live_primary_retains = v[EMUDEV_STAT_PRIMARY_RETAINS],
        .live_blaslt_objects = v[EMUDEV_STAT_BLASLT_OBJECTS],
        .kernel_launches = v[EMUDEV_STAT_KERNEL_LAUNCHES],
        .matmuls = v[EMUDEV_STAT_MATMULS],
        .graph_launches = v[EMUDEV_STAT_GRAPH_LAUNCHES],
        .copies = v[EMUDEV_STAT_COPIES],
        .bytes_to_device = v[EMUDEV_STAT_BYTES_TO_DEVICE],
        .bytes_to_host = v[EMUDEV_STAT_BYTES_TO_HOST],
        .programmatic_overlapped = v[EMUDEV_STAT_PROGRAMMATIC_OVERLAPPED],
        .programmatic_serialised = v[EMUDEV_STAT_PROGRAMMATIC_SERIALISED],
        .dependency_waits = v[EMUDEV_STAT_DEPENDENCY_WAITS],
        .parked_waits = v[EMUDEV_STAT_PARKED_WAITS],
        .triggers = v[EMUDEV_STAT_TRIGGERS],
        .prefetches = v[EMUDEV_STAT_PREFETCHES],
    };
}

const char *bertc_emudev_last_error(void) { return emudev_tls_error; }
