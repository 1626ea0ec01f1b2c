/*
 * kernels — the public face of the kernel catalogue (kernels.h): the table
 * of kinds and the entry points that dispatch through it.
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

#include "kernel_util.h"

_Static_assert(KERNEL_REQ_HEADER_WORDS == 4, "bertc_device.cuh hard-codes the request header (4 words)");
_Static_assert(PLAN_POOL_CLS == 0 && PLAN_POOL_MEAN == 1, "pool.cuh's BERTC_POOL_* follow plan_pool_mode");
_Static_assert(KERNEL_INDEX_INPUT_IDS == 0 && KERNEL_INDEX_TOKEN_TYPES == 1 && KERNEL_INDEX_POSITION == 2,
               "embed_ln.cuh's BERTC_INDEX_* follow kernel_index");

/* ------------------------------------------------------------ the kinds */

/* Adding a kind: its enum value and spec fields (plan_types.h, a format
 * change), its launch contract (runtime/plan/plan_kernels.c), a template
 * in kernels_templates/, a generator file exporting its descriptor, and
 * one line here. */
static const kernel_kind_desc *const kernel_kinds[KERNEL_KIND_COUNT] = {
    [KERNEL_KIND_EMBED_LN] = &kernel_embed_ln_desc,
    [KERNEL_KIND_ADD_LN] = &kernel_add_ln_desc,
    [KERNEL_KIND_ATTENTION] = &kernel_attention_desc,
    [KERNEL_KIND_GEMM] = &kernel_gemm_desc,
    [KERNEL_KIND_POOL] = &kernel_pool_desc,
    [KERNEL_KIND_GEMM_SPLITK] = &kernel_gemm_splitk_desc,
    [KERNEL_KIND_GEMM_LN] = &kernel_gemm_ln_desc,
};

/* The kind of a spec that passes the launch contract's checks, or NULL. */
static const kernel_kind_desc *kernel_checked(const kernel_spec *s, diag *d) {
    return kernel_spec_check(s, d) ? NULL : kernel_kinds[s->kind];
}

/* ------------------------------------------------------------ public API */

int kernel_entry(const kernel_spec *s, char **entry, diag *d) {
    *entry = NULL;
    const kernel_kind_desc *k = kernel_checked(s, d);
    char name[256];
    if (!k || k->entry(s, name, sizeof name, d)) return -1;
    if (!(*entry = strdup(name))) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    return 0;
}

int kernel_source(const kernel_spec *s, char **text, char **entry, diag *d) {
    *text = NULL;
    if (kernel_entry(s, entry, d)) return -1;
    const kernel_kind_desc *k = kernel_kinds[s->kind];
    kernel_text t = {0};
    int rc = k->source(s, *entry, &t, d);
    if (rc == 0 && t.failed)
        rc = diag_set(d, DIAG_CODE_INTERNAL, "kernel %s: out of memory generating the source", k->name);
    if (rc) {
        kernel_text_free(&t);
        free(*entry);
        *entry = NULL;
        return -1;
    }
    *text = t.buf;
    return 0;
}

int kernel_dims_in(const kernel_spec *s, int seq_len, int seqs, kernel_launch_dims *dims, diag *d) {
    memset(dims, 0, sizeof *dims);
    return kernel_spec_check(s, d) ? -1 : kernel_launch_dims_in(s, seq_len, seqs, dims, d);
}

int kernel_dims(const kernel_spec *s, int seq_len, kernel_launch_dims *dims, diag *d) {
    return kernel_dims_in(s, seq_len, 0, dims, d);
}

const char *kernel_path(const kernel_spec *s, int sm) {
    diag d;
    diag_init(&d);
    const kernel_kind_desc *k = kernel_checked(s, &d);
    return k && k->path ? k->path(s, sm) : NULL;
}

int kernel_arg_count(kernel_kind kind) { return kernel_kind_arg_count(kind); }

const char *kernel_kind_name(kernel_kind kind) {
    return (unsigned)kind < KERNEL_KIND_COUNT && kernel_kinds[kind] ? kernel_kinds[kind]->name : "unknown";
}

int kernels_generate(plan *p, diag *d) {
    for (int i = 0; i < p->nkernels; i++) {
        plan_kernel *k = &p->kernels[i];
        char *text, *entry;
        if (kernel_source(&k->spec, &text, &entry, d)) return -1;
        int same = !strcmp(entry, k->entry);
        free(entry);
        if (!same) {
            free(text);
            return diag_set(d, DIAG_CODE_INTERNAL, "kernel %d: the entry %s does not match its spec", i, k->entry);
        }
        free(k->source);
        k->source = text;
    }
    return 0;
}
