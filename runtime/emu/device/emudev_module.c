/*
 * emudev_module — modules: loading an image, its functions, and kernel
 * launches.
 *
 * A module is whichever of the three images emudev_image.c recognises.
 * Before loading anything the device decides, as the driver does, whether
 * the image can run on the compute capability it claims: a CUBIN for
 * another GPU fails with CUDA_ERROR_NO_BINARY_FOR_GPU, and so does an EMU
 * image while the device claims a real architecture, or a CUBIN or PTX
 * module while it claims "emu".  An EMU image is then loaded (dlopen from
 * a memfd) and its kernels run; a CUBIN or PTX image cannot run on a CPU,
 * so the module keeps only its entry names and binds each kernel, by name,
 * to a twin: an EMU image built from the same kernel text and registered
 * with bertc_emudev_add_twins.  That way the runtime's image selection
 * runs on real images, and cuModuleGetFunction of a name the image lacks
 * is CUDA_ERROR_NOT_FOUND even when a twin has it.
 *
 * Functions are made on the first cuModuleGetFunction of a name and owned
 * by their module: cuModuleUnload invalidates the module's handle and all
 * its functions' handles at once, while queued launches keep the module
 * alive by reference until they have run.
 *
 * A launch checks its configuration against the device's limits and the
 * function's dynamic shared memory limit (cuFuncSetAttribute), and copies
 * the argument values at once, as the driver does: the record, argv and
 * the values are one block, so a graph node is a memcpy with argv rebased.
 * When the launch runs, a kernel failure is printed on stderr (a GPU
 * prints device-side assertions on the console too) and becomes the
 * sticky CUDA_ERROR_LAUNCH_FAILED, or CUDA_ERROR_LAUNCH_TIMEOUT for a
 * deadlocked block.
 *
 * cuLaunchKernelEx takes the same launch with attributes; the one emulated
 * is programmatic stream serialization (refused below a claimed compute
 * capability 9.0, where CUDA offers no programmatic dependent launch).  A
 * kernel launched with it may start before its stream predecessor
 * finishes if that predecessor is a kernel: whoever executes the sequence
 * (a stream's drain, a graph's launch) calls start_early on it before
 * running the predecessor, and it runs the pre-wait part of one block
 * then (emu_kernel_launch_dependent), which is the worst case CUDA allows
 * and makes a read before griddepcontrol.wait see stale memory.  After a
 * copy, a matmul or an event record it waits as usual (captured: an
 * ordinary edge), and after the very same kernel too (static __shared__
 * memory belongs to the kernel).  The counters say which happened.
 *
 * bertc_prefetch_l2's range check asks the allocation table
 * (emudev_mem_valid), which the core learns at load (emu_set_mem_check).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ module images */

/*
 * cuModuleLoadData gets no size, so the extent is read from the image
 * itself, as the driver does: an ELF file ends at the furthest of its
 * headers, sections and segments; anything else is NUL-terminated text.
 */
static size_t emudev_image_extent(const void *image) {
    const unsigned char *p = image;
    if (memcmp(p, ELFMAG, SELFMAG) != 0) return strlen(image) + 1;
    if (p[EI_CLASS] != ELFCLASS64) return EI_NIDENT;
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    size_t end = sizeof eh;
#define EMUDEV_EXTEND(x) \
    do {                 \
        size_t x_ = (x); \
        if (x_ > end) end = x_; \
    } while (0)
    EMUDEV_EXTEND(eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize);
    EMUDEV_EXTEND(eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize);
    if (eh.e_shoff && eh.e_shentsize >= sizeof(Elf64_Shdr))
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh;
            memcpy(&sh, p + eh.e_shoff + (size_t)i * eh.e_shentsize, sizeof sh);
            if (sh.sh_type != SHT_NOBITS) EMUDEV_EXTEND(sh.sh_offset + sh.sh_size);
        }
    if (eh.e_phoff && eh.e_phentsize >= sizeof(Elf64_Phdr))
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, p + eh.e_phoff + (size_t)i * eh.e_phentsize, sizeof ph);
            EMUDEV_EXTEND(ph.p_offset + ph.p_filesz);
        }
#undef EMUDEV_EXTEND
    return end;
}

/*
 * EMU images are loaded from a memfd through /proc/self/fd/N, so no file
 * is left behind.  dlopen recognises an already loaded object by that name
 * string: if an image cannot really be unloaded (g++ marks objects with
 * STB_GNU_UNIQUE symbols undeletable), its fd number stays taken forever,
 * so a later image never gets the same name and the stale object.
 */
emu_image *emudev_image_load(const void *data, size_t size, int *fd_out, char *why, size_t cap) {
    int fd = memfd_create("bertc-emu-image", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, cap, "memfd_create: %s", strerror(errno));
        return NULL;
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, (const char *)data + off, size - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(why, cap, "writing the image to a memfd: %s", strerror(errno));
            close(fd);
            return NULL;
        }
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    diag d;
    diag_init(&d);
    emu_image *im = emu_image_load(path, &d);
    if (!im) {
        emudev_text_copy(why, cap, d.text);
        close(fd);
        return NULL;
    }
    *fd_out = fd;
    return im;
}

void emudev_image_release(emu_image *im, int fd) {
    emu_image_free(im);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        return;   /* still mapped: keep the fd, and with it the name, taken */
    }
    close(fd);
}

/* ------------------------------------------------------------ modules */

/* A module owns its functions: they die with it. */
static void emudev_module_free(emudev_obj *o) {
    emudev_module *m = (emudev_module *)o;
    for (emudev_function *f = m->functions, *next; f; f = next) {
        next = f->next;
        free(f->name);
        free(f);
    }
    if (m->image) emudev_image_release(m->image, m->fd);
    for (int i = 0; i < m->nentries; i++) free(m->entries[i]);
    free(m->entries);
    free(m);
}

/* Whether the image can run on the capability the device claims, as the driver decides before loading. */
static CUresult emudev_module_check(const emudev_image_info *info) {
    int major = atomic_load(&emudev_g.arch_major), minor = atomic_load(&emudev_g.arch_minor);
    if (info->kind == EMUDEV_IMAGE_UNKNOWN)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: not a module image: %s", info->why);
    if (info->kind == EMUDEV_IMAGE_EMU && !emudev_image_runs_on(info->kind, info->sm, major, minor))
        return EMUDEV_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                          "cuModuleLoadData: an EMU (x86-64) image does not run on the claimed sm_%d%d", major, minor);
    if (!emudev_image_runs_on(info->kind, info->sm, major, minor))
        return EMUDEV_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadData: %s for sm_%d does not run on %s%d.%d",
                          info->kind == EMUDEV_IMAGE_CUBIN ? "CUBIN" : "PTX", info->sm,
                          major || minor ? "compute capability " : "the emulated device, capability ", major, minor);
    return CUDA_SUCCESS;
}

/* An EMU image is loaded; a CUBIN or PTX image leaves its entry names, to be bound to twins. */
static CUresult emudev_module_fill(emudev_module *m, const void *image, size_t size, const emudev_image_info *info) {
    if (info->kind == EMUDEV_IMAGE_EMU) {
        char why[512] = "";
        if (!(m->image = emudev_image_load(image, size, &m->fd, why, sizeof why)))
            return EMUDEV_ERR(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why);
        return CUDA_SUCCESS;
    }
    if (info->nentries > 0 && !(m->entries = calloc((size_t)info->nentries, sizeof *m->entries)))
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    for (int i = 0; i < info->nentries; i++) {
        m->entries[i] = strdup(info->entries[i]);
        m->nentries = i + 1;
        if (!m->entries[i]) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
    CUresult rc = emudev_enter("cuModuleLoadData", 1);
    if (rc) return rc;
    if (!module || !image) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData: NULL pointer");
    if ((rc = emudev_sticky("cuModuleLoadData"))) return rc;
    size_t size = emudev_image_extent(image);
    emudev_image_info info;
    memset(&info, 0, sizeof info);
    if (emudev_image_inspect(image, size, &info) != 0)
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    emudev_module *m = emudev_obj_new(sizeof *m, EMUDEV_KIND_MODULE, emudev_module_free);
    if (!m) {
        rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    } else {
        m->kind = info.kind;
        if (!(rc = emudev_module_check(&info))) rc = emudev_module_fill(m, image, size, &info);
    }
    emudev_image_info_free(&info);
    if (!rc && emudev_obj_register(&m->o) != 0) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleLoadData: out of memory");
    if (rc) {
        if (m) emudev_obj_free(&m->o);
        return rc;
    }
    emudev_stat_add(EMUDEV_STAT_MODULES, 1);
    *module = m;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
    CUresult rc = emudev_enter("cuModuleUnload", 1);
    if (rc) return rc;
    pthread_mutex_lock(&emudev_g.mu);
    emudev_module *m = (emudev_module *)emudev_reg_get(hmod, EMUDEV_KIND_MODULE);
    if (m) {
        emudev_reg_remove(m);
        for (emudev_function *f = m->functions; f; f = f->next) emudev_reg_remove(f);
    }
    pthread_mutex_unlock(&emudev_g.mu);
    if (!m) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload: %p is not a loaded module", (void *)hmod);
    emudev_stat_add(EMUDEV_STAT_MODULES, -1);
    emudev_obj_put(&m->o);
    return CUDA_SUCCESS;
}

/* The kernel serving `name`: from the module's own EMU image, or for CUBIN/PTX from a registered twin. */
static emu_kernel *emudev_module_kernel(emudev_module *m, const char *name, char *why, size_t cap) {
    diag d;
    diag_init(&d);
    if (m->image) {
        emu_kernel *k = emu_image_kernel(m->image, name, &d);
        if (!k) emudev_text_copy(why, cap, d.text);
        return k;
    }
    int listed = 0;
    for (int i = 0; i < m->nentries && !listed; i++) listed = strcmp(m->entries[i], name) == 0;
    if (!listed) {
        snprintf(why, cap, "no entry '%s' in the %s module", name, m->kind == EMUDEV_IMAGE_CUBIN ? "CUBIN" : "PTX");
        return NULL;
    }
    emu_kernel *k = NULL;
    pthread_mutex_lock(&emudev_g.mu);
    for (emudev_twin *t = emudev_g.twins; t && !k; t = t->next) k = emu_image_kernel(t->image, name, &d);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!k) snprintf(why, cap, "entry '%s' has no twin kernel (bertc_emudev_add_twins)", name);
    /* twins are shared by modules: the per-function limit is checked at launch instead */
    else emu_kernel_set_max_dynamic_smem(k, EMU_SMEM_OPTIN_LIMIT, &d);
    return k;
}

/* A new function of m serving `name` with kernel k, registered and linked
 * into m; or the one another thread added meanwhile; NULL out of memory. */
static emudev_function *emudev_function_add(emudev_module *m, const char *name, emu_kernel *k) {
    emudev_function *f = emudev_obj_new(sizeof *f, EMUDEV_KIND_FUNCTION, NULL);
    if (!f || !(f->name = strdup(name))) {
        free(f);
        return NULL;
    }
    f->module = m;
    f->kernel = k;
    f->nargs = emu_kernel_arg_count(k);
    f->arg_sizes = emu_kernel_arg_sizes(k);
    atomic_init(&f->max_dynamic_smem, EMU_SMEM_DEFAULT_LIMIT);
    pthread_mutex_lock(&emudev_g.mu);
    emudev_function *again = m->functions;   /* another thread may have added it meanwhile */
    while (again && again->kernel != k) again = again->next;
    if (again || emudev_reg_add(&f->o) != 0) {
        free(f->name);
        free(f);
        f = again;
    } else {
        f->next = m->functions;
        m->functions = f;
    }
    pthread_mutex_unlock(&emudev_g.mu);
    return f;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    CUresult rc = emudev_enter("cuModuleGetFunction", 1);
    if (rc) return rc;
    if (!hfunc || !name) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunction: NULL pointer");
    emudev_module *m = (emudev_module *)emudev_obj_ref(hmod, EMUDEV_KIND_MODULE);
    if (!m) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction: %p is not a loaded module", (void *)hmod);
    pthread_mutex_lock(&emudev_g.mu);
    emudev_function *f = m->functions;
    while (f && strcmp(f->name, name) != 0) f = f->next;
    pthread_mutex_unlock(&emudev_g.mu);
    if (!f) {
        char why[1024];
        emu_kernel *k = emudev_module_kernel(m, name, why, sizeof why);
        if (!k) rc = EMUDEV_ERR(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction: %s", why);
        else if (!(f = emudev_function_add(m, name, k)))
            rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuModuleGetFunction: out of memory");
    }
    emudev_obj_put(&m->o);
    if (rc) return rc;
    *hfunc = f;
    return CUDA_SUCCESS;
}

/* A function handle and a reference to its module (which owns it). */
static emudev_function *emudev_function_ref(CUfunction h) {
    pthread_mutex_lock(&emudev_g.mu);
    emudev_function *f = (emudev_function *)emudev_reg_get(h, EMUDEV_KIND_FUNCTION);
    if (f) emudev_obj_get(&f->module->o);
    pthread_mutex_unlock(&emudev_g.mu);
    return f;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    CUresult rc = emudev_enter("cuFuncSetAttribute", 1);
    if (rc) return rc;
    emudev_function *f = emudev_function_ref(hfunc);
    if (!f) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuFuncSetAttribute: %p is not a live function", (void *)hfunc);
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        diag d;
        diag_init(&d);
        if (value < 0 || (unsigned)value > EMU_SMEM_OPTIN_LIMIT)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                            "cuFuncSetAttribute: %d bytes of dynamic shared memory (the device allows up to %u)", value,
                            EMU_SMEM_OPTIN_LIMIT);
        else if (f->module->image && emu_kernel_set_max_dynamic_smem(f->kernel, (unsigned)value, &d) != EMU_STATUS_OK)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: %s", d.text);
        else atomic_store(&f->max_dynamic_smem, (unsigned)value);
    } else if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        /* a hint on a GPU; nothing to emulate, but the same range check */
        if (value < -1 || value > 100)
            rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: carveout %d is not -1..100", value);
    } else {
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: attribute %d is not emulated", (int)attrib);
    }
    emudev_obj_put(&f->module->o);
    return rc;
}

/* ------------------------------------------------------------ kernel launches */

typedef struct emudev_kernel_work {
    emudev_work w;
    emudev_function *f;      /* its module is referenced */
    unsigned grid[3], block[3], smem;
    int programmatic;        /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION was set */
    emu_grid *held;          /* started early (its pre-wait part ran); run() finishes it */
    size_t bytes;            /* of this record, with argv and the argument values after it */
    void **argv;
} emudev_kernel_work;

/* Device memory for bertc_prefetch_l2's range check (the core asks). */
static int emudev_prefetch_valid(const void *p, unsigned long long bytes) {
    return emudev_mem_valid((CUdeviceptr)(uintptr_t)p, (size_t)bytes);
}

__attribute__((constructor)) static void emudev_module_init(void) { emu_set_mem_check(emudev_prefetch_valid); }

/* A kernel's result: its griddepcontrol and prefetch counts into the
 * device's, and a failure printed (a GPU prints device-side assertions on
 * the console too) and turned into the sticky CUDA error. */
static CUresult emudev_kernel_result(const emudev_kernel_work *kw, emu_status st, const diag *d) {
    emu_launch_stats ls;
    emu_last_launch_stats(&ls);
    emudev_stat_add(EMUDEV_STAT_DEPENDENCY_WAITS, (long)ls.waits);
    emudev_stat_add(EMUDEV_STAT_PARKED_WAITS, (long)ls.parked);
    emudev_stat_add(EMUDEV_STAT_TRIGGERS, (long)ls.triggers);
    emudev_stat_add(EMUDEV_STAT_PREFETCHES, (long)ls.prefetches);
    if (st == EMU_STATUS_OK) return CUDA_SUCCESS;
    fprintf(stderr, "bertc emulated device: kernel %s failed (%s): %s\n", kw->f->name, emu_status_name(st), d->text);
    return EMUDEV_ERR(st == EMU_STATUS_DEADLOCK ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_ERROR_LAUNCH_FAILED, "kernel %s: %s",
                      kw->f->name, d->text);
}

/* After each kernel run: the stray byte bertc_emudev_stray_write armed
 * (emudev_control.c), when this is its launch. */
static void emudev_stray_apply(void *const *argv, const unsigned *sizes, unsigned nargs) {
    pthread_mutex_lock(&emudev_g.fail_mu);
    int now = emudev_g.stray_remaining > 0 && --emudev_g.stray_remaining == 0;
    int arg = emudev_g.stray_arg;
    long long off = emudev_g.stray_offset;
    pthread_mutex_unlock(&emudev_g.fail_mu);
    if (!now || arg < 0 || (unsigned)arg >= nargs || sizes[arg] != sizeof(CUdeviceptr)) return;
    CUdeviceptr base;
    memcpy(&base, argv[arg], sizeof base);
    CUdeviceptr at = base + (CUdeviceptr)off;
    if (base && emudev_mem_valid(at, 1)) *(unsigned char *)(uintptr_t)at ^= 0xff;
}

static CUresult emudev_kernel_run(emudev_work *w) {
    emudev_kernel_work *kw = (emudev_kernel_work *)w;
    emudev_stat_add(EMUDEV_STAT_KERNEL_LAUNCHES, 1);
    if (emudev_null()) return CUDA_SUCCESS;
    diag d;
    diag_init(&d);
    emu_status st;
    if (kw->held) {
        emu_grid *g = kw->held;
        kw->held = NULL;
        st = emu_grid_finish(g, &d);
    } else {
        st = emu_kernel_launch(kw->f->kernel, kw->grid, kw->block, kw->smem, kw->argv,
                               (emu_schedule)atomic_load(&emudev_g.schedule), atomic_load(&emudev_g.seed), &d);
    }
    if (st == EMU_STATUS_OK) emudev_stray_apply(kw->argv, kw->f->arg_sizes, kw->f->nargs);
    return emudev_kernel_result(kw, st, &d);
}

static const emudev_work_ops emudev_kernel_ops;

/*
 * A programmatic dependent of the kernel `prev` runs its pre-wait part now,
 * before prev (emu.h says why that is the worst case CUDA allows).  Only a
 * kernel after a kernel overlaps: after a copy, a matmul or an event record
 * the attribute has no kernel to overlap with and the launch waits as usual
 * (in a captured graph: an ordinary edge, since programmatic edges join
 * kernel nodes only).  After the very same kernel it also runs in order:
 * static __shared__ memory belongs to the kernel, so its held block would
 * share it with the predecessor's blocks.
 */
static CUresult emudev_kernel_start_early(emudev_work *w, const emudev_work *prev) {
    emudev_kernel_work *kw = (emudev_kernel_work *)w;
    if (!kw->programmatic || kw->held || !prev || prev->ops != &emudev_kernel_ops) return CUDA_SUCCESS;
    if (((const emudev_kernel_work *)prev)->f->kernel == kw->f->kernel) {
        emudev_stat_add(EMUDEV_STAT_PROGRAMMATIC_SERIALISED, 1);
        return CUDA_SUCCESS;
    }
    emudev_stat_add(EMUDEV_STAT_PROGRAMMATIC_OVERLAPPED, 1);
    if (emudev_null()) return CUDA_SUCCESS;
    diag d;
    diag_init(&d);
    emu_status st = emu_kernel_launch_dependent(kw->f->kernel, kw->grid, kw->block, kw->smem, kw->argv,
                                                (emu_schedule)atomic_load(&emudev_g.schedule),
                                                atomic_load(&emudev_g.seed), &kw->held, &d);
    return st == EMU_STATUS_OK ? CUDA_SUCCESS : emudev_kernel_result(kw, st, &d);
}

static void emudev_kernel_drop_early(emudev_work *w) {
    emudev_kernel_work *kw = (emudev_kernel_work *)w;
    emu_grid_abandon(kw->held);
    kw->held = NULL;
}

static void emudev_kernel_free(emudev_work *w) {
    emudev_kernel_drop_early(w);
    emudev_work_free_holding(w, &((emudev_kernel_work *)w)->f->module->o);
}

/* One block holds the record, argv and the values, so a clone is a copy with argv rebased. */
static emudev_work *emudev_kernel_clone(const emudev_work *w) {
    const emudev_kernel_work *kw = (const emudev_kernel_work *)w;
    emudev_kernel_work *n = (emudev_kernel_work *)emudev_work_copy_holding(w, kw->bytes, &kw->f->module->o);
    if (!n) return NULL;
    n->held = NULL;
    n->argv = (void **)((char *)n + ((const char *)kw->argv - (const char *)kw));
    for (unsigned i = 0; i < kw->f->nargs; i++) n->argv[i] = (char *)n + ((const char *)kw->argv[i] - (const char *)kw);
    return &n->w;
}

static const emudev_work_ops emudev_kernel_ops = {"cuLaunchKernel",         emudev_kernel_run,
                                                  emudev_kernel_clone,      emudev_kernel_free,
                                                  emudev_kernel_start_early, emudev_kernel_drop_early,
                                                  NULL,                     NULL};

/* A launch's geometry and arguments against the device's and the function's limits. */
static CUresult emudev_launch_check(const char *fn, emudev_function *f, const unsigned g[3], const unsigned b[3],
                                    unsigned smem, void **params, void **extra) {
    const char *name = f->name;
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    if (extra) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s %s: `extra` is not emulated; pass kernelParams", fn, name);
    if (!g[0] || !g[1] || !g[2] || g[0] > 0x7fffffffu || g[1] > 65535u || g[2] > 65535u)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s %s: grid (%u,%u,%u) is invalid", fn, name, g[0], g[1], g[2]);
    if (!b[0] || !b[1] || !b[2] || b[0] > 1024u || b[1] > 1024u || b[2] > 64u || threads > EMU_MAX_BLOCK_THREADS)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s %s: block (%u,%u,%u) is invalid (at most 1024 threads)", fn,
                          name, b[0], b[1], b[2]);
    if (smem > atomic_load(&f->max_dynamic_smem))
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                          "%s %s: %u bytes of dynamic shared memory exceed the function's limit of %u "
                          "(raise it with cuFuncSetAttribute)",
                          fn, name, smem, atomic_load(&f->max_dynamic_smem));
    if (f->nargs && !params)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s %s: kernelParams is NULL but the kernel takes %u arguments", fn,
                          name, f->nargs);
    for (unsigned i = 0; i < f->nargs; i++)
        if (!params[i]) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s %s: kernelParams[%u] is NULL", fn, name, i);
    return CUDA_SUCCESS;
}

/* The launch's record, its argument values copied now as the driver copies
 * them (the launch, or the captured node, owns them), queued or recorded. */
static CUresult emudev_launch(const char *fn, emudev_function *f, const unsigned g[3], const unsigned b[3],
                              unsigned smem, CUstream hs, void **params, void **extra, int programmatic) {
    CUresult rc = emudev_launch_check(fn, f, g, b, smem, params, extra);
    size_t head = (sizeof(emudev_kernel_work) + (size_t)f->nargs * sizeof(void *) + 15u) & ~(size_t)15u, bytes = head;
    for (unsigned i = 0; i < f->nargs; i++) bytes += (f->arg_sizes[i] + 15u) & ~15u;
    emudev_kernel_work *kw = rc ? NULL : malloc(bytes);
    if (!rc && !kw) rc = EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "%s %s: out of memory", fn, f->name);
    if (rc) {
        emudev_obj_put(&f->module->o);
        return rc;
    }
    *kw = (emudev_kernel_work){{&emudev_kernel_ops, NULL}, f, {g[0], g[1], g[2]}, {b[0], b[1], b[2]}, smem,
                               programmatic, NULL, bytes, NULL};
    kw->argv = (void **)(kw + 1);
    char *at = (char *)kw + head;
    for (unsigned i = 0; i < f->nargs; i++) {
        memcpy(at, params[i], f->arg_sizes[i]);
        kw->argv[i] = at;
        at += (f->arg_sizes[i] + 15u) & ~15u;
    }
    return emudev_submit_named(hs, &kw->w, fn);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction hf, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int smem, CUstream hs, void **params,
                                void **extra) {
    CUresult rc = emudev_enter("cuLaunchKernel", 1);
    if (rc) return rc;
    emudev_function *f = emudev_function_ref(hf);
    if (!f) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: %p is not a live function", (void *)hf);
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return emudev_launch("cuLaunchKernel", f, g, b, smem, hs, params, extra, 0);
}

/*
 * The attributes a launch may carry.  Programmatic stream serialization
 * (programmatic dependent launch) exists from compute capability 9.0 (the
 * CUDA programming guide); the device refuses it below that, so a runtime
 * that would set it on an older GPU fails here rather than relying on a
 * driver ignoring it.  Other attributes are not emulated and refused by
 * name.
 */
static CUresult emudev_launch_attrs(const CUlaunchConfig *c, const char *name, int *programmatic) {
    *programmatic = 0;
    if (c->numAttrs && !c->attrs)
        return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx %s: %u attributes but attrs is NULL", name,
                          c->numAttrs);
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_IGNORE) continue;
        if (a->id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx %s: launch attribute %d is not emulated", name,
                              (int)a->id);
        int major = atomic_load(&emudev_g.arch_major);
        if (a->value.programmaticStreamSerializationAllowed && major < 9)
            return EMUDEV_ERR(CUDA_ERROR_NOT_SUPPORTED,
                              "cuLaunchKernelEx %s: programmatic stream serialization needs compute capability 9.0 "
                              "(the device is %d.%d)",
                              name, major, atomic_load(&emudev_g.arch_minor));
        *programmatic = a->value.programmaticStreamSerializationAllowed != 0;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction hf, void **params, void **extra) {
    CUresult rc = emudev_enter("cuLaunchKernelEx", 1);
    if (rc) return rc;
    if (!config) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernelEx: config is NULL");
    emudev_function *f = emudev_function_ref(hf);
    if (!f) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernelEx: %p is not a live function", (void *)hf);
    int programmatic = 0;
    if ((rc = emudev_launch_attrs(config, f->name, &programmatic))) {
        emudev_obj_put(&f->module->o);
        return rc;
    }
    const unsigned g[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned b[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return emudev_launch("cuLaunchKernelEx", f, g, b, config->sharedMemBytes, config->hStream, params, extra,
                         programmatic);
}
