/*
 * emu_image — a loaded kernel image of the emulated device.
 *
 * An image is an ordinary shared object built at compile time by bertc
 * (compiler/codegen/emu_build.c) from the generated CUDA text with
 * cuda_prelude.h force-included.  Loading dlopens the object (RTLD_LOCAL:
 * images never see each other), checks the ABI version the prelude stamped
 * into it, and resolves kernels by their `<entry>__emu` descriptors on
 * first use.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

/* ------------------------------------------------------------ load */

emu_image *emu_image_load(const char *so_path, diag *d) {
    size_t n = strlen(so_path);
    emu_image *im = calloc(1, sizeof *im);
    char *path = malloc(n + 3);
    if (!im || !path) {
        free(im);
        free(path);
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: out of memory");
        return NULL;
    }
    /* dlopen searches the library path for a name without a slash */
    snprintf(path, n + 3, "%s%s", strchr(so_path, '/') ? "" : "./", so_path);
    int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef EMU_ASAN
    /* AddressSanitizer never forgets an instrumented module's globals: its
     * UnregisterGlobal leaves them in the list it searches when it describes
     * a bad address, so a report that comes after an image was unloaded
     * reads the unmapped descriptors and dies ("nested bug") instead of
     * reporting — about one run in three, as address randomisation decides
     * where the next image lands.  Sanitizer builds keep images mapped. */
    flags |= RTLD_NODELETE;
#endif
    void *h = dlopen(path, flags);
    if (!h) {
        const char *e = dlerror();
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot load %s: %s", so_path, e ? e : "dlopen failed");
        free(im);
        free(path);
        return NULL;
    }
    const unsigned *abi = dlsym(h, "bertc_emu_image_abi");
    if (!abi || *abi != BERTC_EMU_ABI_VERSION) {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated device: %s is not a kernel image of ABI version %u (was it compiled with cuda_prelude.h?)",
                 so_path, BERTC_EMU_ABI_VERSION);
        dlclose(h);
        free(im);
        free(path);
        return NULL;
    }
    im->handle = h;
    im->path = path;
    pthread_mutex_init(&im->lock, NULL);
    /* recursive: a held grid keeps it while its predecessor, perhaps of this
     * image, runs on the same thread (emu_sched.c) */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&im->launch_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    return im;
}

void emu_image_free(emu_image *im) {
    if (!im) return;
    for (emu_kernel *k = im->kernels, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    dlclose(im->handle);
    pthread_mutex_destroy(&im->lock);
    pthread_mutex_destroy(&im->launch_lock);
    free(im->path);
    free(im);
}

emu_kernel *emu_image_kernel(emu_image *im, const char *entry, diag *d) {
    pthread_mutex_lock(&im->lock);
    for (emu_kernel *k = im->kernels; k; k = k->next)
        if (strcmp(k->desc->name, entry) == 0) {
            pthread_mutex_unlock(&im->lock);
            return k;
        }
    char sym[512];
    const bertc_emu_kernel *desc = NULL;
    if (snprintf(sym, sizeof sym, "%s__emu", entry) < (int)sizeof sym) desc = dlsym(im->handle, sym);
    if (!desc || desc->abi_version != BERTC_EMU_ABI_VERSION || !desc->name || strcmp(desc->name, entry) != 0 ||
        !desc->thunk) {
        pthread_mutex_unlock(&im->lock);
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated device: no kernel '%s' in %s (is it exported with BERTC_KERNEL_EXPORT(%s)?)", entry,
                 im->path, entry);
        return NULL;
    }
    emu_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        pthread_mutex_unlock(&im->lock);
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: out of memory");
        return NULL;
    }
    k->desc = desc;
    k->image = im;
    k->max_dynamic_smem = EMU_SMEM_DEFAULT_LIMIT;
    k->next = im->kernels;
    im->kernels = k;
    pthread_mutex_unlock(&im->lock);
    return k;
}

unsigned emu_kernel_arg_count(const emu_kernel *k) { return k->desc->nargs; }

const unsigned *emu_kernel_arg_sizes(const emu_kernel *k) { return k->desc->arg_sizes; }

int emu_kernel_is_sanitized(const emu_kernel *k) { return (k->desc->flags & BERTC_EMU_KERNEL_SANITIZED) != 0; }

emu_status emu_kernel_set_max_dynamic_smem(emu_kernel *k, unsigned bytes, diag *d) {
    if (bytes > EMU_SMEM_OPTIN_LIMIT) {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated device: kernel %s: %u bytes of dynamic shared memory exceed the device's %u", k->desc->name,
                 bytes, EMU_SMEM_OPTIN_LIMIT);
        return EMU_STATUS_INVALID;
    }
    k->max_dynamic_smem = bytes;
    return EMU_STATUS_OK;
}

emu_status emu_launch(emu_image *im, const char *entry, const unsigned grid[3], const unsigned block[3],
                      unsigned shared_bytes, void **args, emu_schedule sched, uint64_t seed, diag *d) {
    emu_kernel *k = emu_image_kernel(im, entry, d);
    if (!k) return EMU_STATUS_NOT_FOUND;
    return emu_kernel_launch(k, grid, block, shared_bytes, args, sched, seed, d);
}
