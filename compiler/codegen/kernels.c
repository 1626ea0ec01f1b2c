/*
 * kernels — the public face of the kernel catalogue (kernels.h) and the
 * helpers the per-kind generators share.
 *
 * A kernel's source is assembled, not written: a first comment line that
 * names the template and every parameter (so a dumped plan or an NVRTC
 * error shows what was asked for), the device header, the kind's
 * template, and a few lines that instantiate the template with the spec's
 * constants behind an `extern "C"` entry point.  Everything that varies is
 * a compile-time constant of the instantiation, so the compiler sees fixed
 * trip counts and fixed strides.  Entry names spell out every parameter
 * that matters (floats by their bit patterns), which makes equal specs
 * give byte-identical text — the compile step dedupes by content — and
 * distinct specs distinct names, so a plan's kernels can share one NVRTC
 * program and one emulator image.
 *
 * Parameters that do not apply to a kind (heads of a GEMM, res_ld without
 * a residual) are left out of both the name and the text, so they cannot
 * split two equal kernels apart.
 */
#include "kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_internal.h"

_Static_assert(KERNEL_REQ_HEADER_WORDS == 4, "bertc_device.cuh hard-codes the request header (4 words)");
_Static_assert(PLAN_POOL_CLS == 0 && PLAN_POOL_MEAN == 1, "pool.cuh's BERTC_POOL_* follow plan_pool_mode");
_Static_assert(KERNEL_INDEX_INPUT_IDS == 0 && KERNEL_INDEX_TOKEN_TYPES == 1 && KERNEL_INDEX_POSITION == 2,
               "embed_ln.cuh's BERTC_INDEX_* follow kernel_index");

/* ------------------------------------------------------------ text buffer */

void kernel_text_printf(kernel_text *t, const char *fmt, ...) {
    if (t->failed) return;
    for (;;) {
        size_t room = t->cap - t->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if (t->buf && (size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->failed = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
}

int kernel_text_template(kernel_text *t, const char *name, diag *d) {
    for (int i = 0; i < kernel_template_count; i++) {
        if (strcmp(kernel_template_files[i].name, name) == 0) {
            kernel_text_printf(t, "%s", (const char *)kernel_template_files[i].text);
            if (kernel_template_files[i].len && kernel_template_files[i].text[kernel_template_files[i].len - 1] != '\n')
                kernel_text_printf(t, "\n");
            return 0;
        }
    }
    return diag_set(d, DIAG_CODE_INTERNAL, "kernels: template %s is not embedded in this build", name);
}

void kernel_text_free(kernel_text *t) {
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
    t->failed = 0;
}

/* ------------------------------------------------------------ shared helpers */

const char *kernel_dtype_cxx(plan_dtype t) {
    switch (t) {
    case PLAN_DTYPE_F32: return "float";
    case PLAN_DTYPE_F16: return "__half";
    case PLAN_DTYPE_BF16: return "__nv_bfloat16";
    default: return NULL;
    }
}

const char *kernel_dtype_tag(plan_dtype t) {
    switch (t) {
    case PLAN_DTYPE_F32: return "f32";
    case PLAN_DTYPE_F16: return "f16";
    case PLAN_DTYPE_BF16: return "bf16";
    default: return NULL;
    }
}

int kernel_dtype_size(plan_dtype t) {
    switch (t) {
    case PLAN_DTYPE_F32: return 4;
    case PLAN_DTYPE_F16:
    case PLAN_DTYPE_BF16: return 2;
    default: return 0;
    }
}

uint32_t kernel_float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int kernel_vec_elems(int size, const int *vals, int n) {
    int v = 16 / size;
    for (;;) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (vals[i] % v != 0) ok = 0;
        if (ok || v == 1) return v;
        v /= 2;
    }
}

int kernel_ceil_div(int a, int b) { return (a + b - 1) / b; }

int kernel_min_blocks(int threads) { return threads >= 512 ? 1 : 512 / threads; }

int kernel_check_common(const kernel_spec *s, diag *d) {
    if ((int)s->kind < 0 || s->kind >= KERNEL_KIND_COUNT)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernels: unknown kernel kind %d", (int)s->kind);
    if (!kernel_dtype_cxx(s->dtype))
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: dtype %s is not a storage type (float32, float16, bfloat16)",
                        kernel_kind_name(s->kind), plan_dtype_name(s->dtype));
    if (s->bucket < 1 || s->bucket > 65536)
        return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: bucket %d outside 1..65536", kernel_kind_name(s->kind),
                        s->bucket);
    return 0;
}

/* ------------------------------------------------------------ public API */

int kernel_source(const kernel_spec *s, char **text, char **entry, diag *d) {
    *text = NULL;
    *entry = NULL;
    if (kernel_check_common(s, d)) return -1;
    kernel_text t = {0};
    int rc;
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
    case KERNEL_KIND_ADD_LN: rc = kernel_ln_source(s, &t, entry, d); break;
    case KERNEL_KIND_ATTENTION: rc = kernel_attention_source(s, &t, entry, d); break;
    case KERNEL_KIND_GEMM: rc = kernel_gemm_source(s, &t, entry, d); break;
    case KERNEL_KIND_POOL: rc = kernel_pool_source(s, &t, entry, d); break;
    default: rc = diag_set(d, DIAG_CODE_INTERNAL, "kernels: unknown kernel kind %d", (int)s->kind); break;
    }
    if (rc == 0 && (t.failed || !*entry))
        rc = diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: out of memory generating the source", kernel_kind_name(s->kind));
    if (rc) {
        kernel_text_free(&t);
        free(*entry);
        *entry = NULL;
        return -1;
    }
    *text = t.buf;
    return 0;
}

int kernel_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d) {
    memset(dims, 0, sizeof *dims);
    if (kernel_check_common(s, d)) return -1;
    switch (s->kind) {
    case KERNEL_KIND_EMBED_LN:
    case KERNEL_KIND_ADD_LN: return kernel_ln_dims(s, dims, d);
    case KERNEL_KIND_ATTENTION: return kernel_attention_dims(s, dims, d);
    case KERNEL_KIND_GEMM: return kernel_gemm_dims(s, dims, d);
    case KERNEL_KIND_POOL: return kernel_pool_dims(s, dims, d);
    default: return diag_set(d, DIAG_CODE_INTERNAL, "kernels: unknown kernel kind %d", (int)s->kind);
    }
}

int kernel_arg_count(kernel_kind kind) {
    switch (kind) {
    case KERNEL_KIND_EMBED_LN: return 7;
    case KERNEL_KIND_ADD_LN: return 7;
    case KERNEL_KIND_ATTENTION: return 3;
    case KERNEL_KIND_GEMM: return 6;
    case KERNEL_KIND_POOL: return 3;
    default: return 0;
    }
}

const char *kernel_kind_name(kernel_kind kind) {
    switch (kind) {
    case KERNEL_KIND_EMBED_LN: return "embed_ln";
    case KERNEL_KIND_ADD_LN: return "add_ln";
    case KERNEL_KIND_ATTENTION: return "attention";
    case KERNEL_KIND_GEMM: return "gemm";
    case KERNEL_KIND_POOL: return "pool";
    default: return "unknown";
    }
}
