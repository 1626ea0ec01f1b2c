/*
 * test_io_failures — every file operation of import and compile, failing
 * in turn.
 *
 * fileutil routes each open, read, write, sync, rename and map of the two
 * commands through one door that a test can arm to fail the nth operation
 * from now (file_debug_fail), a read or a write half done.  Here import and
 * compile (the library calls the commands make) run once per operation
 * with that operation failing, with EIO, ENOSPC and, for the output's
 * creation, EROFS and EACCES, until a run no longer reaches the armed
 * operation.  Every run that reaches it must fail with a message naming a
 * file, in the class docs/cli.md gives (a path that cannot be written: bad
 * input; a failed read or write: internal/I-O), leave neither the output
 * nor a temporary file behind, and free what it took (the sanitizer build
 * runs this with LeakSanitizer).  A run that reaches the failure and
 * succeeds anyway would be a silently different result: a failure here.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "compile.h"
#include "fileutil.h"
#include "hf_import.h"

static char dir[512], yaml[600], plan_path[600], hf[600];

/* Files in dir whose name starts with `prefix` (the output and its temporaries). */
static int count_named(const char *prefix) {
    DIR *dd = opendir(dir);
    int n = 0;
    for (struct dirent *e; dd && (e = readdir(dd));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    if (dd) closedir(dd);
    return n;
}

typedef int (*io_command)(diag *d);

static int run_import(diag *d) { return hf_import_run(hf, plan_path, d); }

static int run_compile(diag *d) {
    compile_options o;
    compile_options_init(&o);
    o.model_path = yaml;
    o.out_path = plan_path;
    o.targets.count = 0; /* no kernel images: the file operations are the point, not NVRTC */
    compile_report r;
    return compile_model(&o, &r, d);
}

/* The command with operation n failing with err; 1 if that operation was reached. */
static int io_one(const char *name, io_command cmd, long n, int err) {
    unlink(plan_path);
    diag d;
    diag_init(&d);
    file_debug_fail(n, err);
    int rc = cmd(&d);
    int fired = file_debug_pending() == 0;
    file_debug_fail(0, 0);
    if (!fired) {
        CHECK(rc == 0, "%s with nothing failing: %s", name, d.text);
        return 0;
    }
    CHECK(rc != 0, "%s succeeded although file operation %ld failed with %s", name, n, strerror(err));
    CHECK(strchr(d.text, '/') != NULL, "%s, operation %ld: the message names no file: %s", name, n, d.text);
    CHECK(d.code == DIAG_CODE_INTERNAL || d.code == DIAG_CODE_INPUT, "%s, operation %ld: class %d: %s", name, n,
          (int)d.code, d.text);
    CHECK(count_named("out.") == 0, "%s, operation %ld (%s): the output or a temporary file is left: %s", name, n,
          strerror(err), d.text);
    return 1;
}

static void io_every_operation(const char *name, io_command cmd) {
    static const int errs[] = {EIO, ENOSPC};
    long ops = 0;
    for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++)
        for (long n = 1; n < 10000 && io_one(name, cmd, n, errs[e]); n++) ops = n > ops ? n : ops;
    CHECK(ops >= 8, "%s: only %ld file operations were failed in turn", name, ops);
    printf("info: %s: each of %ld file operations failed in turn, with EIO and ENOSPC\n", name, ops);
}

static void test_import_io(void) { io_every_operation("import", run_import); }
static void test_compile_io(void) { io_every_operation("compile", run_compile); }

/* A folder that cannot be written (read-only, no permission): bad input. */
static void test_unwritable_output(void) {
    static const int errs[] = {EROFS, EACCES};
    const char *names[2] = {"import", "compile"};
    for (int c = 0; c < 2; c++)
        for (size_t e = 0; e < 2; e++) {
            unlink(plan_path);
            diag d;
            diag_init(&d);
            /* the output is the first file a compile opens, and the last an import does */
            long n = 1;
            if (c == 0) {
                for (n = 1; n < 1000; n++) {
                    file_debug_fail(n, errs[e]);
                    diag_init(&d);
                    int rc = run_import(&d);
                    if (rc && strstr(d.text, "cannot write")) break;
                }
            } else {
                file_debug_fail(n, errs[e]);
                run_compile(&d);
            }
            file_debug_fail(0, 0);
            CHECK(d.code == DIAG_CODE_INPUT && strstr(d.text, "cannot write") && strstr(d.text, strerror(errs[e])),
                  "%s into a folder that refuses it (%s): %s", names[c], strerror(errs[e]), d.text);
            CHECK(count_named("out.") == 0, "%s: a file is left", names[c]);
        }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    snprintf(dir, sizeof dir, "%s", check_write_temp("io", "", 0));
    unlink(dir);
    if (mkdir(dir, 0700) != 0) {
        printf("FAIL setup: cannot make %s\n", dir);
        return 1;
    }
    snprintf(hf, sizeof hf, "%s/hf/tiny-bert", check_build_dir());
    snprintf(yaml, sizeof yaml, "%s/model.yaml", dir);
    snprintf(plan_path, sizeof plan_path, "%s/out.bin", dir);
    diag d;
    diag_init(&d);
    if (hf_import_run(hf, yaml, &d)) {
        printf("FAIL setup: %s\n", d.text);
        return 1;
    }
    CHECK_CASE(test_import_io);
    CHECK_CASE(test_compile_io);
    CHECK_CASE(test_unwritable_output);
    unlink(yaml);
    unlink(plan_path);
    rmdir(dir);
    return check_summary();
}
