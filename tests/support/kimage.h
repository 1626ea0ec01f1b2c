/*
 * kimage — the kernel tests' handle on generated kernels: a spec to start
 * from, a kernel's text, and an emulator image built from texts.
 *
 * The tests of tests/kernels (and the emulator's own tests) all generate
 * kernel text from specs (compiler/codegen, kernels.h) and compile it for
 * the emulated device (emu_build.h); this is that plumbing, once.  Loading
 * the image is left to the test (emu_image_load is the emulator core's,
 * which only those tests link).
 */
#ifndef BERTC_TEST_KIMAGE_H
#define BERTC_TEST_KIMAGE_H

#include "diag.h"
#include "kernels.h"

/* A spec of `kind` for storage dtype dt and bucket, every other field zero. */
kernel_spec kimage_spec(kernel_kind kind, plan_dtype dt, int bucket);
/* The generated text and entry of s, spec number `index` of the test
 * (kernel_source; free both): 0, or -1 after CHECK(0, "spec <index>: <why>"). */
int kimage_source(const kernel_spec *s, int index, char **text, char **entry);
/* prefix + text in a fresh string (a kernel compiled with some
 * BERTC_*_FORCE_* macros defined first); NULL when text is NULL. */
char *kimage_prefixed(const char *prefix, const char *text);
/* The n texts built into one EMU image (emu_build_image_file) under the
 * temp dir as `name`: its path (static buffer; unlink it when loaded), or
 * NULL with the message in d. */
const char *kimage_build(const char *name, const char *const *texts, int n, diag *d);

#endif
