/*
 * kimage — generated kernels for the tests (see kimage.h).
 *
 * Design.  Thin on purpose: each helper is one library call plus the
 * failure handling every caller repeated (a CHECK that names the spec, a
 * temp path, removing a half-built image), so the tests read as what they
 * generate and run.
 */
#include "kimage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emu_build.h"
#include "plan_kernels.h"
#include "tbuf.h"

kernel_spec kimage_spec(kernel_kind kind, plan_dtype dt, int bucket) {
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.dtype = dt;
    s.bucket = kernel_kind_bucket_free(kind) ? 0 : bucket;
    return s;
}

kernel_spec kimage_gemm_spec(kernel_kind kind, plan_dtype dt, int bucket, int n, int k) {
    kernel_spec s = kimage_spec(kind, dt, bucket);
    s.n = n;
    s.k = k;
    s.x_ld = k;
    s.out_ld = n;
    s.has_bias = 1;
    s.has_residual = kind == KERNEL_KIND_GEMM_LN;
    s.res_ld = s.has_residual ? n : 0;
    s.eps = 1e-12f;
    return s;
}

kernel_spec *kimage_specs_add(kimage_specs *l, kernel_kind kind, plan_dtype dt, int bucket) {
    if (l->n == KIMAGE_MAX_SPECS) {
        fprintf(stderr, "kimage_specs_add: more than %d specs\n", KIMAGE_MAX_SPECS);
        abort();
    }
    l->bucket[l->n] = bucket;
    kernel_spec *s = &l->s[l->n++];
    *s = kimage_spec(kind, dt, bucket);
    return s;
}

int kimage_cases_generate(kimage_case *c, int n, char *err, size_t cap) {
    for (int i = 0; i < n; i++) {
        diag d;
        diag_init(&d);
        if (kernel_source(&c[i].spec, &c[i].text, &c[i].entry, &d) != 0 || kernel_dims(&c[i].spec, c[i].bucket, &c[i].dims, &d) != 0) {
            snprintf(err, cap, "case %d (%s): %s", i, kernel_kind_name(c[i].spec.kind), d.text);
            return -1;
        }
    }
    return 0;
}

void kimage_cases_free(kimage_case *c, int n) {
    for (int i = 0; i < n; i++) {
        free(c[i].text);
        free(c[i].entry);
        c[i].text = c[i].entry = NULL;
    }
}

int kimage_source(const kernel_spec *s, int index, char **text, char **entry) {
    diag d;
    diag_init(&d);
    int rc = kernel_source(s, text, entry, &d);
    CHECK(rc == 0, "spec %d: %s", index, d.text);
    return rc ? -1 : 0;
}

char *kimage_prefixed(const char *prefix, const char *text) { return text ? tbuf_format("%s%s", prefix, text) : NULL; }

int32_t *kimage_request(int bucket, int len) {
    int32_t *req = calloc((size_t)KERNEL_REQ_HEADER_WORDS + 3 * (size_t)bucket, sizeof *req);
    if (!req) {
        fprintf(stderr, "kimage_request: out of memory\n");
        abort();
    }
    req[KERNEL_REQ_LEN] = len;
    req[KERNEL_REQ_BUCKET] = bucket;
    return req;
}

/* Builds the image into a temp file; its path in path[cap], or -1 with d set. */
static int kimage_build_file(const char *name, const char *const *texts, int n, char *path, size_t cap, diag *d) {
    const char *p = check_write_temp(name, "", 0);
    if (!p) return diag_set(d, DIAG_CODE_INTERNAL, "cannot write %s under the temp dir", name);
    snprintf(path, cap, "%s", p);
    return emu_build_image_file(texts, n, path, d);
}

void *kimage_build(const char *name, const char *const *texts, int n, void *(*load)(const char *path, diag *d),
                   diag *d) {
    char path[512];
    if (kimage_build_file(name, texts, n, path, sizeof path, d)) return NULL;
    void *image = load(path, d);
    unlink(path);
    return image;
}

char *kimage_build_bytes(const char *name, const char *const *texts, int n, size_t *size, diag *d) {
    char path[512];
    if (kimage_build_file(name, texts, n, path, sizeof path, d)) return NULL;
    char *bytes = check_read_file(path, size);
    if (!bytes) diag_set(d, DIAG_CODE_INTERNAL, "cannot read %s", path);
    unlink(path);
    return bytes;
}

const char kimage_faulting_src[] =
    "extern \"C\" __global__ void k_divergent(int *out) {\n"
    "    if (threadIdx.x < 32) {\n"
    "        __syncthreads();\n"
    "    } else {\n"
    "        __syncthreads();\n"
    "    }\n"
    "    out[threadIdx.x] = 1;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_divergent)\n"
    "\n"
    "extern \"C\" __global__ void k_trap(int *out) {\n"
    "    if (threadIdx.x == 3) __trap();\n"
    "    out[threadIdx.x] = 1;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_trap)\n";
