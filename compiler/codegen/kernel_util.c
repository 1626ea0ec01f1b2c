/*
 * kernel_util — the helpers every kernel generator shares (kernel_util.h).
 */
#include "kernel_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

uint32_t kernel_float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int kernel_min_blocks(int threads) { return threads >= 512 ? 1 : 512 / threads; }

int kernel_entry_printf(char *buf, size_t cap, const char *kind, diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) return diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: entry name too long", kind);
    return 0;
}
