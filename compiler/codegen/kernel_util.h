/*
 * kernel_util — what the per-kind kernel generators share, and the shape
 * of a kind.
 *
 * Each kind lives in a file of its own (kernel_ln.c for the two LayerNorm
 * kinds, kernel_attention.c, kernel_gemm.c, kernel_pool.c,
 * kernel_gemm_splitk.c for gemm_splitk and gemm_ln) that knows one
 * template: which spec fields matter, the launch geometry derived from
 * them, the entry name and the instantiation it emits.  It exports one
 * `kernel_kind_desc`; kernels.c lists the descriptors in a table and owns
 * the public entry points (kernels.h).  Inside a kind file, geometry and
 * text come from one function (`*_geom_of`), so dims and source can never
 * disagree about a tile size.  Nothing here calls back into kernels.c: the
 * dependency runs one way, kernels.c -> kind files -> this file.
 *
 * Generators write into a kernel_text, a growable buffer whose printf
 * remembers an allocation failure instead of reporting it at every call;
 * the caller checks once at the end.  The template files themselves are
 * embedded at build time (embed.h), so bertc needs no side files at run
 * time.
 */
#ifndef BERTC_KERNEL_UTIL_H
#define BERTC_KERNEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "embed.h"
#include "kernels.h"
#include "plan_kernels.h"

/* ---- text buffer */
typedef struct kernel_text {
    char *buf;
    size_t len, cap;
    int failed;                    /* an allocation failed; buf holds what fitted */
} kernel_text;

void kernel_text_printf(kernel_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the embedded template `name`; -1 (diag set) if it is not embedded. */
int kernel_text_template(kernel_text *t, const char *name, diag *d);
void kernel_text_free(kernel_text *t);

/* ---- shared helpers */
const char *kernel_dtype_cxx(plan_dtype t);     /* "float", "__half", "__nv_bfloat16" */
const char *kernel_dtype_tag(plan_dtype t);     /* "f32", "f16", "bf16" */
uint32_t kernel_float_bits(float f);
/*
 * The minBlocksPerMultiprocessor of an entry's __launch_bounds__: enough
 * blocks for 512 threads, which caps ptxas at 128 registers per thread.
 * Given only the block size, ptxas picks its own (lower) register target
 * on some architectures and spills rather than exceed it; an explicit
 * pair makes the budget ours and the same on every arch.
 */
int kernel_min_blocks(int threads);

/* ---- the kinds ----------------------------------------------------------- */

/*
 * One kernel kind, as its generator file exports it (kernel_ln.c,
 * kernel_attention.c, kernel_gemm.c, kernel_pool.c); kernels.c lists them
 * in one table.  What a spec must satisfy, its geometry, its launch
 * dimensions and its arguments are the launch contract, which the plan
 * reader checks too (runtime/plan/plan_kernels.h); a kind's descriptor
 * holds what only the compiler knows: the entry name and the text.  Every
 * function receives a spec that has passed kernel_spec_check.
 */
typedef struct kernel_kind_desc {
    kernel_kind kind;
    const char *name;              /* the template's file stem: "gemm", "attention", ... */
    /* The entry name into buf: every parameter that matters, spelled out. */
    int (*entry)(const kernel_spec *s, char *buf, size_t cap, diag *d);
    /* The text: the first comment, the device header, the template and
     * the instantiation behind `entry`. */
    int (*source)(const kernel_spec *s, const char *entry, kernel_text *t, diag *d);
    /* The path the text takes on architecture sm (75, 80, ...: kernel_path);
     * NULL for a kind with one path everywhere. */
    const char *(*path)(const kernel_spec *s, int sm);
} kernel_kind_desc;

extern const kernel_kind_desc kernel_embed_ln_desc;
extern const kernel_kind_desc kernel_add_ln_desc;
extern const kernel_kind_desc kernel_attention_desc;
extern const kernel_kind_desc kernel_gemm_desc;
extern const kernel_kind_desc kernel_pool_desc;
extern const kernel_kind_desc kernel_gemm_splitk_desc;
extern const kernel_kind_desc kernel_gemm_ln_desc;

/*
 * The trailing prefetch pair every kernel takes (runtime/plan/plan_types.h:
 * the first and last byte of the next step's weights): what the entry
 * point's signature ends with, and the call that opens its body, before
 * the template runs (so every block takes part, padding blocks included).
 * A new kind's generator splices both into its entry point.
 */
#define KERNEL_PREFETCH_PARAMS ", const void *bertc_pf_first, const void *bertc_pf_last"
#define KERNEL_PREFETCH_CALL "    bertc_prefetch_l2_grid(bertc_pf_first, bertc_pf_last);\n"

/* snprintf into an entry-name buffer; an over-long name is an internal error. */
int kernel_entry_printf(char *buf, size_t cap, const char *kind, diag *d, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
