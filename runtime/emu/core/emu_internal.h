/*
 * emu_internal — what the emulator's two halves share: the image and
 * kernel records (built by emu_image.c, read by the scheduler in
 * emu_sched.c).  Kept out of emu.h so users see only handles.
 */
#ifndef BERTC_EMU_INTERNAL_H
#define BERTC_EMU_INTERNAL_H

#include <pthread.h>

#include "emu.h"
#include "emu_abi.h"

/* This library is built with AddressSanitizer (make sanitize). */
#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif

struct emu_kernel {
    const bertc_emu_kernel *desc;   /* inside the loaded image */
    emu_image *image;
    unsigned max_dynamic_smem;
    struct emu_kernel *next;
};

struct emu_image {
    void *handle;                   /* dlopen */
    char *path;
    pthread_mutex_t lock;           /* the kernel list */
    pthread_mutex_t launch_lock;    /* serialises launches of sanitized kernels (recursive) */
    emu_kernel *kernels;
};

#endif
