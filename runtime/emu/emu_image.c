/*
 * emu_image — kernel text to a loaded kernel image for the emulated device.
 *
 * An image is an ordinary shared object built by the host C++ compiler from
 * the generated CUDA text with cuda_prelude.h force-included.  Building
 * runs the compiler as a child process (posix_spawn, output captured to a
 * log so a failure's diagnostic carries the compiler's own messages), in a
 * private temporary directory; the object is written under a temporary
 * name and renamed into place, so a reader never sees half an image and a
 * failed build leaves nothing behind.  Several units are compiled in
 * parallel (one compiler per core) and linked once: g++ costs about a
 * second per unit, which dominates every emulator test.
 *
 * The prelude directory comes from BERTC_EMU_INCLUDE, else from the path
 * fixed at build time (BERTC_EMU_DIR, set by the Makefile), else
 * runtime/emu relative to the working directory (BERTC_EMU_KEEP=1 keeps
 * the units of a failed build for a look).  When this library is
 * built with AddressSanitizer the images are too (with __shared__ as plain
 * statics, see the prelude), so shared-memory overflows are reported with
 * the kernel's line; BERTC_EMU_SANITIZE=0 turns that off.
 *
 * Loading dlopens the object (RTLD_LOCAL: images never see each other),
 * checks the ABI version the prelude stamped into it, and resolves kernels
 * by their `<entry>__emu` descriptors on first use.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif

#define EMU_MAX_UNITS 64
#define EMU_MAX_ARGV 40

extern char **environ;

/* ------------------------------------------------------------ build */

static int emu_file_exists(const char *dir, const char *name) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
    return access(p, R_OK) == 0;
}

static const char *emu_include_dir(diag *d) {
    const char *e = getenv("BERTC_EMU_INCLUDE");
    if (e && *e) {
        if (emu_file_exists(e, "cuda_prelude.h")) return e;
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: BERTC_EMU_INCLUDE=%s has no cuda_prelude.h", e);
        return NULL;
    }
#ifdef BERTC_EMU_DIR
    if (emu_file_exists(BERTC_EMU_DIR, "cuda_prelude.h")) return BERTC_EMU_DIR;
#endif
    if (emu_file_exists("runtime/emu", "cuda_prelude.h")) return "runtime/emu";
    diag_set(d, DIAG_CODE_INTERNAL,
             "emulated device: cannot find cuda_prelude.h (set BERTC_EMU_INCLUDE to the runtime/emu directory)");
    return NULL;
}

static int emu_build_sanitized(void) {
#ifdef EMU_ASAN
    const char *e = getenv("BERTC_EMU_SANITIZE");
    return !(e && strcmp(e, "0") == 0);
#else
    return 0;
#endif
}

/*
 * Writes unit `index` wrapped in `inline namespace bertc_unit_<index>`.
 * Names stay usable exactly as written (an inline namespace is transparent
 * to lookup) but every C++ symbol of the unit gets a mangled name of its
 * own, so two units that define the same inline helper or template with
 * different bodies (generated kernels specialise helpers by macros) cannot
 * be merged by the linker into one silently wrong copy.  `extern "C"`
 * entries keep their names; a duplicate fails the link loudly.  #line keeps
 * the compiler's line numbers those of the text.
 */
static int emu_write_unit(const char *path, const char *text, int index) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fprintf(f, "inline namespace bertc_unit_%d {\n#line 1\n", index) > 0;
    ok = ok && fwrite(text, 1, n, f) == n;
    ok = ok && fprintf(f, "\n} /* inline namespace bertc_unit_%d */\n", index) > 0;
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : -1;
}

/* Starts argv with stdout+stderr to log_path; 0 or errno. */
static int emu_spawn(char *const argv[], const char *log_path, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) return rc;
    rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!rc) rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Exit status of a child, or -1 if it did not exit normally. */
static int emu_wait(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Puts the head of a compiler log into the diagnostic. */
static void emu_fail_log(diag *d, const char *what, const char *log_path, int status) {
    FILE *f = fopen(log_path, "rb");
    char buf[3200];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    diag_set(d, DIAG_CODE_INTERNAL, "emulated device: %s failed (status %d):\n%s%s", what, status, buf,
             n == sizeof buf - 1 ? "\n[...]" : "");
}

typedef struct emu_build {
    const char *dir;               /* the caller's buffer (not inside this struct: -Wrestrict) */
    int count;
    char src[EMU_MAX_UNITS][4200];
    char obj[EMU_MAX_UNITS][4200];
    char log[EMU_MAX_UNITS][4200];
    char link_log[4200];
    char tmp_so[4200];
} emu_build;

static void emu_build_cleanup(emu_build *b) {
    for (int i = 0; i < b->count; i++) {
        unlink(b->src[i]);
        unlink(b->obj[i]);
        unlink(b->log[i]);
    }
    unlink(b->link_log);
    unlink(b->tmp_so);
    rmdir(b->dir);
}

/* Appends the compile flags shared by every unit; returns the new argc. */
static int emu_cxx_flags(char **argv, int argc, const char *inc, char *prelude, char *incdir) {
    sprintf(prelude, "%s/cuda_prelude.h", inc);
    sprintf(incdir, "-I%s/include", inc);
    argv[argc++] = "-std=c++17";
    argv[argc++] = "-O2";
    argv[argc++] = "-fPIC";
    argv[argc++] = "-fno-strict-aliasing";
    argv[argc++] = "-fno-math-errno";
    argv[argc++] = "-ffp-contract=off";
    argv[argc++] = "-fvisibility=hidden";
    argv[argc++] = "-include";
    argv[argc++] = prelude;
    argv[argc++] = incdir;
    argv[argc++] = "-DBERTC_EMU";
    if (emu_build_sanitized()) {
        argv[argc++] = "-fsanitize=address";
        argv[argc++] = "-fno-omit-frame-pointer";
        argv[argc++] = "-g1";
        argv[argc++] = "-DBERTC_EMU_SANITIZE";
    }
    return argc;
}

emu_status emu_image_build_units(const char *const *texts, int count, const char *so_path, diag *d) {
    if (count < 1 || count > EMU_MAX_UNITS || !texts || !so_path) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: build of %d units (1..%d) into %s", count, EMU_MAX_UNITS,
                 so_path ? so_path : "(null)");
        return EMU_STATUS_INVALID;
    }
    const char *inc = emu_include_dir(d);
    if (!inc) return EMU_STATUS_BUILD;
    if (strlen(inc) > 3000 || strlen(so_path) > 3000) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: path too long");
        return EMU_STATUS_INVALID;
    }
    const char *cxx = getenv("BERTC_EMU_CXX");
    if (!cxx || !*cxx) cxx = "g++";
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 3000) tmp = "/tmp";

    emu_build *b = calloc(1, sizeof *b);
    if (!b) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: out of memory");
        return EMU_STATUS_NO_MEMORY;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bertc-emu-XXXXXX", tmp);
    b->dir = dir;
    if (!mkdtemp(dir)) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot create a directory under %s: %s", tmp,
                 strerror(errno));
        free(b);
        return EMU_STATUS_BUILD;
    }
    b->count = count;
    snprintf(b->link_log, sizeof b->link_log, "%s/link.log", b->dir);
    snprintf(b->tmp_so, sizeof b->tmp_so, "%s.tmp%ld", so_path, (long)getpid());
    emu_status st = EMU_STATUS_OK;
    for (int i = 0; i < count && st == EMU_STATUS_OK; i++) {
        snprintf(b->src[i], sizeof b->src[i], "%s/unit%d.cpp", b->dir, i);
        snprintf(b->obj[i], sizeof b->obj[i], "%s/unit%d.o", b->dir, i);
        snprintf(b->log[i], sizeof b->log[i], "%s/unit%d.log", b->dir, i);
        if (!texts[i] || emu_write_unit(b->src[i], texts[i], i) != 0) {
            diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot write %s", b->src[i]);
            st = EMU_STATUS_BUILD;
        }
    }

    char prelude[4200], incdir[4200];
    char *argv[EMU_MAX_ARGV + EMU_MAX_UNITS];
    if (st == EMU_STATUS_OK && count == 1) {
        /* one unit: compile and link in one step */
        int argc = 0;
        argv[argc++] = (char *)cxx;
        argc = emu_cxx_flags(argv, argc, inc, prelude, incdir);
        argv[argc++] = "-shared";
        argv[argc++] = "-o";
        argv[argc++] = b->tmp_so;
        argv[argc++] = b->src[0];
        argv[argc++] = "-lm";
        argv[argc] = NULL;
        pid_t pid;
        int rc = emu_spawn(argv, b->log[0], &pid);
        if (rc) {
            diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot run %s: %s", cxx, strerror(rc));
            st = EMU_STATUS_BUILD;
        } else if ((rc = emu_wait(pid)) != 0) {
            emu_fail_log(d, "compiling the kernel unit", b->log[0], rc);
            st = EMU_STATUS_BUILD;
        }
    } else if (st == EMU_STATUS_OK) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        int jobs = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu;
        pid_t pids[EMU_MAX_UNITS];
        int started = 0, waited = 0, failed = -1, fail_status = 0;
        while (waited < started || (started < count && failed < 0)) {
            if (started < count && failed < 0 && started - waited < jobs) {
                int argc = 0;
                argv[argc++] = (char *)cxx;
                argc = emu_cxx_flags(argv, argc, inc, prelude, incdir);
                argv[argc++] = "-c";
                argv[argc++] = b->src[started];
                argv[argc++] = "-o";
                argv[argc++] = b->obj[started];
                argv[argc] = NULL;
                int rc = emu_spawn(argv, b->log[started], &pids[started]);
                if (rc) {
                    diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot run %s: %s", cxx, strerror(rc));
                    st = EMU_STATUS_BUILD;
                    failed = count; /* stop starting; the log below is not used */
                } else {
                    started++;
                }
                continue;
            }
            int rc = emu_wait(pids[waited]);
            if (rc != 0 && failed < 0) {
                failed = waited;
                fail_status = rc;
            }
            waited++;
        }
        if (failed >= 0 && failed < count) {
            char what[64];
            snprintf(what, sizeof what, "compiling kernel unit %d of %d", failed, count);
            emu_fail_log(d, what, b->log[failed], fail_status);
            st = EMU_STATUS_BUILD;
        }
        if (st == EMU_STATUS_OK) {
            int argc = 0;
            argv[argc++] = (char *)cxx;
            argv[argc++] = "-shared";
            if (emu_build_sanitized()) argv[argc++] = "-fsanitize=address";
            argv[argc++] = "-o";
            argv[argc++] = b->tmp_so;
            for (int i = 0; i < count; i++) argv[argc++] = b->obj[i];
            argv[argc++] = "-lm";
            argv[argc] = NULL;
            pid_t pid;
            int rc = emu_spawn(argv, b->link_log, &pid);
            if (rc) {
                diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot run %s: %s", cxx, strerror(rc));
                st = EMU_STATUS_BUILD;
            } else if ((rc = emu_wait(pid)) != 0) {
                emu_fail_log(d, "linking the kernel image", b->link_log, rc);
                st = EMU_STATUS_BUILD;
            }
        }
    }
    if (st == EMU_STATUS_OK && rename(b->tmp_so, so_path) != 0) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated device: cannot write %s: %s", so_path, strerror(errno));
        st = EMU_STATUS_BUILD;
    }
    const char *keep = getenv("BERTC_EMU_KEEP");
    if (st != EMU_STATUS_OK && keep && *keep && strcmp(keep, "0") != 0)
        diag_prefix(d, "(units kept in %s) ", dir);
    else
        emu_build_cleanup(b);
    free(b);
    return st;
}

emu_status emu_image_build(const char *source_text, const char *so_path, diag *d) {
    return emu_image_build_units(&source_text, 1, so_path, d);
}

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
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
    pthread_mutex_init(&im->launch_lock, NULL);
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
