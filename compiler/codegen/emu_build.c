/*
 * emu_build — kernel texts to the emulated device's image (emu_build.h).
 *
 * A build is a private directory under $TMPDIR holding the prelude (written
 * out of the embedded copy), one source file per unit, the objects, the
 * compiler logs and the image.  The host compiler runs as a child process
 * (subproc.h: the build directory as its working directory, stdout/stderr
 * captured to a log, so a failure's message carries the compiler's own
 * words), on relative names only — no temporary path ever
 * reaches an object file, which is what makes two builds of the same texts
 * byte-identical.  Units are compiled in parallel, one compiler per core,
 * then linked once: g++ costs about a second per unit, which dominates every
 * emulator test.  The directory is removed afterwards, whatever happened
 * (BERTC_EMU_KEEP=1 keeps a failed one for a look).
 */
#include "emu_build.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed.h"
#include "fileutil.h"
#include "subproc.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_BUILD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_BUILD_ASAN 1
#endif
#endif

#define EMU_BUILD_MAX_ARGV 48
#define EMU_BUILD_PATH 4096

typedef struct emu_build {
    char dir[EMU_BUILD_PATH];      /* absolute; everything else is relative to it */
    char prefix_map[EMU_BUILD_PATH + 32]; /* -fdebug-prefix-map=DIR=. (see emu_build_compile_argv) */
    const char *cxx;
    int sanitize;
    int count;
} emu_build;

static int emu_build_sanitized(void) {
#ifdef EMU_BUILD_ASAN
    const char *e = getenv("BERTC_EMU_SANITIZE");
    return !(e && strcmp(e, "0") == 0);
#else
    return 0;
#endif
}

/* ------------------------------------------------------------ files */

static int emu_build_path(char *buf, const emu_build *b, const char *name) {
    return snprintf(buf, EMU_BUILD_PATH, "%s/%s", b->dir, name) < EMU_BUILD_PATH ? 0 : -1;
}

/* Writes `len` bytes (plus an optional prefix and suffix) to dir/name. */
static int emu_build_write(const emu_build *b, const char *name, const char *prefix, const void *data, size_t len,
                           const char *suffix) {
    char path[EMU_BUILD_PATH];
    if (emu_build_path(path, b, name)) return -1;
    FILE *f = fopen(path, "wbx");
    if (!f) return -1;
    int ok = (!prefix || fputs(prefix, f) >= 0) && fwrite(data, 1, len, f) == len && (!suffix || fputs(suffix, f) >= 0);
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* The embedded prelude into dir/prelude/ (its include/ subfolder too). */
static int emu_build_write_prelude(const emu_build *b, diag *d) {
    char path[EMU_BUILD_PATH];
    if (emu_build_path(path, b, "prelude") || mkdir(path, 0700) ||
        emu_build_path(path, b, "prelude/include") || mkdir(path, 0700))
        return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot create %s: %s", path, strerror(errno));
    for (int i = 0; i < emu_prelude_count; i++) {
        char name[512];
        snprintf(name, sizeof name, "prelude/%s", emu_prelude_files[i].name);
        if (emu_build_write(b, name, NULL, emu_prelude_files[i].text, emu_prelude_files[i].len, NULL))
            return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot write %s/%s: %s", b->dir, name,
                            strerror(errno));
    }
    return 0;
}

/*
 * Unit `index` wrapped in `inline namespace bertc_unit_<index>`.  Names stay
 * usable exactly as written (an inline namespace is transparent to lookup)
 * but every C++ symbol of the unit gets a mangled name of its own, so two
 * units that define the same inline helper or template with different
 * bodies (generated kernels specialise helpers by macros) cannot be merged
 * by the linker into one silently wrong copy.  `extern "C"` entries keep
 * their names; a duplicate fails the link loudly.  #line keeps the
 * compiler's line numbers those of the text.
 */
static int emu_build_write_unit(const emu_build *b, int index, const char *text, diag *d) {
    char name[64], prefix[96], suffix[96];
    snprintf(name, sizeof name, "unit%d.cpp", index);
    snprintf(prefix, sizeof prefix, "inline namespace bertc_unit_%d {\n#line 1\n", index);
    snprintf(suffix, sizeof suffix, "\n} /* inline namespace bertc_unit_%d */\n", index);
    if (!text || emu_build_write(b, name, prefix, text, strlen(text), suffix))
        return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot write %s/%s", b->dir, name);
    return 0;
}

static int emu_build_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void emu_build_cleanup(const emu_build *b, int failed, diag *d) {
    const char *keep = getenv("BERTC_EMU_KEEP");
    if (failed && keep && *keep && strcmp(keep, "0") != 0) {
        diag_prefix(d, "(build kept in %s) ", b->dir);
        return;
    }
    nftw(b->dir, emu_build_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ processes */

/* Puts the head of a compiler log into the diagnostic. */
static int emu_build_fail_log(const emu_build *b, diag *d, const char *what, const char *log, int status) {
    char path[EMU_BUILD_PATH], buf[3200];
    size_t n = 0;
    FILE *f = emu_build_path(path, b, log) ? NULL : fopen(path, "rb");
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: %s failed (status %d):\n%s%s", what, status, buf,
                    n == sizeof buf - 1 ? "\n[...]" : "");
}

/* The compile command of unit i (names are relative to the build directory). */
static void emu_build_compile_argv(const emu_build *b, int i, char **argv, char *src, char *obj) {
    int argc = 0;
    sprintf(src, "unit%d.cpp", i);
    sprintf(obj, "unit%d.o", i);
    argv[argc++] = (char *)b->cxx;
    static char *const flags[] = {"-std=c++17", "-O2", "-fPIC", "-fno-strict-aliasing", "-fno-math-errno",
                                  "-ffp-contract=off", "-fvisibility=hidden", "-frandom-seed=bertc",
                                  "-include", "prelude/cuda_prelude.h", "-Iprelude", "-Iprelude/include",
                                  "-DBERTC_EMU"};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) argv[argc++] = flags[k];
    if (b->sanitize) {
        /* -g1 gives ASan's reports line numbers; its debug info would name the
         * build directory (a fresh mkdtemp name, so the image and its build-id
         * would differ from compile to compile): the prefix map writes "."
         * instead, and a sanitized bertc's plans stay byte-identical. */
        static char *const san[] = {"-fsanitize=address", "-fno-omit-frame-pointer", "-g1", "-DBERTC_EMU_SANITIZE"};
        for (size_t k = 0; k < sizeof san / sizeof san[0]; k++) argv[argc++] = san[k];
        argv[argc++] = (char *)b->prefix_map;
    }
    argv[argc++] = "-c";
    argv[argc++] = src;
    argv[argc++] = "-o";
    argv[argc++] = obj;
    argv[argc] = NULL;
}

/* Compiles every unit, at most one compiler per core at a time. */
static int emu_build_compile_units(const emu_build *b, diag *d) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu;
    pid_t *pids = malloc(sizeof *pids * (size_t)b->count);
    if (!pids) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    int started = 0, waited = 0, failed = -1, fail_status = 0, spawn_error = 0;
    while (waited < started || (started < b->count && failed < 0 && !spawn_error)) {
        if (started < b->count && failed < 0 && !spawn_error && started - waited < jobs) {
            char *argv[EMU_BUILD_MAX_ARGV], src[32], obj[32], log[32];
            emu_build_compile_argv(b, started, argv, src, obj);
            sprintf(log, "unit%d.log", started);
            if ((spawn_error = subproc_start(argv, b->dir, log, &pids[started])) == 0) started++;
            continue;
        }
        int rc = subproc_wait(pids[waited]);
        if (rc != 0 && failed < 0) {
            failed = waited;
            fail_status = rc;
        }
        waited++;
    }
    free(pids);
    if (spawn_error)
        return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot run %s: %s", b->cxx, strerror(spawn_error));
    if (failed >= 0) {
        char what[64], log[32];
        snprintf(what, sizeof what, "compiling kernel unit %d of %d", failed, b->count);
        sprintf(log, "unit%d.log", failed);
        return emu_build_fail_log(b, d, what, log, fail_status);
    }
    return 0;
}

/* Links the objects into dir/image.so. */
static int emu_build_link(const emu_build *b, diag *d) {
    char **argv = malloc(sizeof *argv * (size_t)(EMU_BUILD_MAX_ARGV + b->count));
    char(*objs)[32] = malloc(sizeof *objs * (size_t)b->count);
    if (!argv || !objs) {
        free(argv);
        free(objs);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    }
    int argc = 0;
    argv[argc++] = (char *)b->cxx;
    argv[argc++] = "-shared";
    if (b->sanitize) argv[argc++] = "-fsanitize=address";
    argv[argc++] = "-o";
    argv[argc++] = "image.so";
    for (int i = 0; i < b->count; i++) {
        sprintf(objs[i], "unit%d.o", i);
        argv[argc++] = objs[i];
    }
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    int status, rc = subproc_run(argv, b->dir, "link.log", &status);
    free(argv);
    free(objs);
    if (rc) return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot run %s: %s", b->cxx, strerror(rc));
    if (status != 0) return emu_build_fail_log(b, d, "linking the kernel image", "link.log", status);
    return 0;
}

/* ------------------------------------------------------------ public */

/* Makes the build directory and builds dir/image.so; the caller cleans up
 * (when b->dir[0] is set). */
static int emu_build_run(emu_build *b, const char *const *texts, int count, diag *d) {
    if (count < 1 || !texts)
        return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: %d units (expected at least 1)", count);
    b->cxx = getenv("BERTC_EMU_CXX");
    if (!b->cxx || !*b->cxx) b->cxx = "g++";
    b->sanitize = emu_build_sanitized();
    b->count = count;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 3000) tmp = "/tmp";
    snprintf(b->dir, sizeof b->dir, "%s/bertc-emu-XXXXXX", tmp);
    if (!mkdtemp(b->dir)) {
        int e = errno;
        b->dir[0] = '\0';
        return diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: cannot create a directory under %s: %s", tmp,
                        strerror(e));
    }
    snprintf(b->prefix_map, sizeof b->prefix_map, "-fdebug-prefix-map=%s=.", b->dir);
    if (emu_build_write_prelude(b, d)) return -1;
    for (int i = 0; i < count; i++)
        if (emu_build_write_unit(b, i, texts[i], d)) return -1;
    if (emu_build_compile_units(b, d) || emu_build_link(b, d)) return -1;
    return 0;
}

int emu_build_image(const char *const *texts, int count, unsigned char **bytes, size_t *size, diag *d) {
    emu_build b;
    memset(&b, 0, sizeof b);
    *bytes = NULL;
    *size = 0;
    int rc = emu_build_run(&b, texts, count, d);
    char path[EMU_BUILD_PATH];
    if (!rc && emu_build_path(path, &b, "image.so"))
        rc = diag_set(d, DIAG_CODE_INTERNAL, "emulated-device image: path too long");
    if (!rc) {
        *bytes = (unsigned char *)file_read_all(path, size, (size_t)1 << 30, d);
        if (!*bytes) rc = -1;
    }
    if (b.dir[0]) emu_build_cleanup(&b, rc != 0, d);
    return rc;
}

int emu_build_image_file(const char *const *texts, int count, const char *so_path, diag *d) {
    unsigned char *bytes;
    size_t size;
    if (emu_build_image(texts, count, &bytes, &size, d)) return -1;
    file_atomic fa;
    int rc = file_atomic_open(&fa, so_path, d);
    if (!rc) rc = file_atomic_commit(&fa, file_atomic_write(&fa, bytes, size) == 0, d);
    free(bytes);
    return rc;
}
