/*
 * kernels_internal — what the per-kind kernel generators share.
 *
 * kernels.c owns the public entry points (kernels.h) and dispatches on the
 * kind; kernel_ln.c, kernel_attention.c, kernel_gemm.c and kernel_pool.c
 * each know one template: which spec fields matter, the launch geometry they derive from
 * them, and the instantiation they emit.  Geometry and text come from one
 * function per kind (`*_geom`), so kernel_dims and kernel_source can never
 * disagree about a tile size.
 *
 * Generators write into a kernel_text, a growable buffer whose printf
 * remembers an allocation failure instead of reporting it at every call;
 * the caller checks once at the end.  The template files themselves are
 * embedded at build time (the Makefile runs tools/embed_text over
 * the .cuh files of kernels_templates/ into build/gen/kernel_templates.c), so bertc
 * needs no side files at run time.
 */
#ifndef BERTC_KERNELS_INTERNAL_H
#define BERTC_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "embed.h"
#include "kernels.h"

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
#define KERNEL_SMEM_NO_OPTIN 49152u /* dynamic shared memory usable without cuFuncSetAttribute */

const char *kernel_dtype_cxx(plan_dtype t);     /* "float", "__half", "__nv_bfloat16" */
const char *kernel_dtype_tag(plan_dtype t);     /* "f32", "f16", "bf16" */
int kernel_dtype_size(plan_dtype t);            /* 4 or 2; 0 if not a storage type */
uint32_t kernel_float_bits(float f);
/* The widest vector for elements of `size` bytes: the largest power of two
 * v with v * size <= 16 that divides each of the n values (at least 1). */
int kernel_vec_elems(int size, const int *vals, int n);
int kernel_ceil_div(int a, int b);
/*
 * The minBlocksPerMultiprocessor of an entry's __launch_bounds__: enough
 * blocks for 512 threads, which caps ptxas at 128 registers per thread.
 * Given only the block size, ptxas picks its own (lower) register target
 * on some architectures and spills rather than exceed it; an explicit
 * pair makes the budget ours and the same on every arch.
 */
int kernel_min_blocks(int threads);
/* Checks dtype and bucket, common to every kind. */
int kernel_check_common(const kernel_spec *s, diag *d);

/* ---- per kind: geometry and source.  `s` has been checked by the common
 * check; each *_source emits everything after the device header. */
typedef struct kernel_ln_geom {
    int vec;                       /* elements per vector */
    int threads;                   /* threads per row: 32 (a warp) or a block */
    int rows;                      /* rows per block */
} kernel_ln_geom;

int kernel_ln_geom_of(const kernel_spec *s, kernel_ln_geom *g, diag *d);
int kernel_ln_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
int kernel_ln_source(const kernel_spec *s, kernel_text *t, char **entry, diag *d);

typedef struct kernel_attention_geom {
    int tc;                        /* tensor-core path (16-bit, head_dim % 16 == 0, aligned) */
    int nw;                        /* warps per block */
    int qt, kt;                    /* query rows per block, keys per shared-memory tile */
    int vec;                       /* elements per global load */
    unsigned smem;                 /* dynamic shared memory bytes */
} kernel_attention_geom;

int kernel_attention_geom_of(const kernel_spec *s, kernel_attention_geom *g, diag *d);
int kernel_attention_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
int kernel_attention_source(const kernel_spec *s, kernel_text *t, char **entry, diag *d);

typedef struct kernel_gemm_geom {
    int bm, bn;                    /* block tile */
    int vec;                       /* elements per global load */
    int stages;                    /* shared-memory ring depth */
    unsigned smem;
} kernel_gemm_geom;

int kernel_gemm_geom_of(const kernel_spec *s, kernel_gemm_geom *g, diag *d);
int kernel_gemm_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
int kernel_gemm_source(const kernel_spec *s, kernel_text *t, char **entry, diag *d);

typedef struct kernel_pool_geom {
    int vec;                       /* elements per vector */
    int ct;                        /* column threads: vectors of a row read side by side */
    int rg;                        /* row groups: rows read at once (1 for cls) */
    int items;                     /* vectors per column thread */
    int threads;                   /* block size, a multiple of 32 */
} kernel_pool_geom;

int kernel_pool_geom_of(const kernel_spec *s, kernel_pool_geom *g, diag *d);
int kernel_pool_dims(const kernel_spec *s, kernel_launch_dims *dims, diag *d);
int kernel_pool_source(const kernel_spec *s, kernel_text *t, char **entry, diag *d);

#endif
