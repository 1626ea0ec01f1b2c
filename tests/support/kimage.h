/*
 * kimage — the kernel tests' handle on generated kernels: a spec to start
 * from, a kernel's text, and an emulator image built from texts.
 *
 * The tests of tests/kernels (and the emulator's own tests) all generate
 * kernel text from specs (compiler/codegen, kernels.h) and compile it for
 * the emulated device (emu_build.h); this is that plumbing, once.  Loading
 * the image is left to the test (emu_image_load is the emulator core's,
 * which only those tests link: they pass it in).
 */
#ifndef BERTC_TEST_KIMAGE_H
#define BERTC_TEST_KIMAGE_H

#include <stdint.h>

#include "diag.h"
#include "kernels.h"

#define KIMAGE_MAX_SPECS 64

/*
 * A spec of `kind` for storage dtype dt launched in a bucket of `bucket`
 * rows, every other field zero: spec.bucket is the bucket for a GEMM and 0
 * for the kinds that serve any bucket (kernel_kind_bucket_free), whose
 * rows are the launch's.
 */
kernel_spec kimage_spec(kernel_kind kind, plan_dtype dt, int bucket);

/* A GEMM-family spec (GEMM, GEMM_SPLITK, GEMM_LN) of n outputs over k:
 * packed leading dimensions, a bias, a residual for GEMM_LN only, eps
 * 1e-12; no activation, tile or split (the caller sets those). */
kernel_spec kimage_gemm_spec(kernel_kind kind, plan_dtype dt, int bucket, int n, int k);

/* The list of specs a test generates and checks, each with the bucket it
 * is launched in (the rows of its [bucket, *] tensors). */
typedef struct kimage_specs {
    kernel_spec s[KIMAGE_MAX_SPECS];
    int bucket[KIMAGE_MAX_SPECS];
    int n;
} kimage_specs;

/* A new kimage_spec at the end of l (the test aborts past KIMAGE_MAX_SPECS). */
kernel_spec *kimage_specs_add(kimage_specs *l, kernel_kind kind, plan_dtype dt, int bucket);

/* A kernel the test runs: its spec, the bucket it is launched in, the
 * request length it runs at, and what kimage_cases_generate makes of it. */
typedef struct kimage_case {
    kernel_spec spec;
    int bucket, len;
    char *text, *entry;
    kernel_launch_dims dims;
} kimage_case;

/* Text, entry and launch geometry (in the case's bucket) of n cases: 0, or
 * -1 with "case <i> (<kind>): <why>" in err. */
int kimage_cases_generate(kimage_case *c, int n, char *err, size_t cap);
/* Frees the texts and entries of n cases. */
void kimage_cases_free(kimage_case *c, int n);
/* The generated text and entry of s, spec number `index` of the test
 * (kernel_source; free both): 0, or -1 after CHECK(0, "spec <index>: <why>"). */
int kimage_source(const kernel_spec *s, int index, char **text, char **entry);
/* prefix + text in a fresh string (a kernel compiled with some
 * BERTC_*_FORCE_* macros defined first); NULL when text is NULL. */
char *kimage_prefixed(const char *prefix, const char *text);
/* The n texts built into one EMU image (emu_build_image_file) under the
 * temp dir as `name`, loaded by load(path, d) (the test's wrapper of
 * emu_image_load) and the file removed: what load returned, or NULL with
 * the message in d. */
void *kimage_build(const char *name, const char *const *texts, int n, void *(*load)(const char *path, diag *d),
                   diag *d);
/* The same image as bytes (a fresh buffer of *size bytes, as
 * cuModuleLoadData takes it), or NULL with the message in d. */
char *kimage_build_bytes(const char *name, const char *const *texts, int n, size_t *size, diag *d);

/* Kernel text that faults on purpose, one unit for an emulator image:
 * k_trap(int *out) traps in thread 3, k_divergent(int *out) reaches
 * __syncthreads on two paths of one block (launch either with >= 64 threads
 * for k_divergent).  The emulator's core and its CUDA driver report them. */
extern const char kimage_faulting_src[];

/* A request block for a bucket of `bucket` rows and real length len (words
 * 0 and 1; the reserved words zero; ids, types and mask left to the
 * caller, calloc'd): free it. */
int32_t *kimage_request(int bucket, int len);

#endif
