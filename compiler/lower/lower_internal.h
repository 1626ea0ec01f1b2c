/*
 * lower_internal — what the lowering's files share: the weight blob, the
 * arena allocator, the views and the per-bucket context.
 */
#ifndef BERTC_LOWER_INTERNAL_H
#define BERTC_LOWER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lower.h"

#define LOWER_ALIGN 256u

static inline uint64_t lower_align_up(uint64_t x) { return (x + LOWER_ALIGN - 1) & ~(uint64_t)(LOWER_ALIGN - 1); }

/* ---- weights (lower_weights.c) */

typedef struct lower_weights {
    uint8_t *blob;
    uint64_t size;
    int64_t *offset;             /* per graph node: byte offset in blob, or -1 */
    int count;                   /* graph nodes */
} lower_weights;

/* `longest`: the longest bucket, the side of a rel_pos_bias table (which
 * depends on S and goes into the blob once, [heads, longest, longest]). */
int lower_weights_build(const ir_graph *g, const weights *w, plan_dtype precision, int longest, lower_weights *out,
                        diag *d);
void lower_weights_free(lower_weights *w);

/* ---- arena (lower_arena.c) */

/* First fit over a free list kept sorted by offset; every size is rounded
 * up to LOWER_ALIGN. */
typedef struct lower_arena {
    uint64_t *free_off, *free_len;
    int nfree, cap;
    uint64_t top;                /* bytes the bucket needs */
} lower_arena;

int lower_arena_init(lower_arena *a, int cap);
void lower_arena_free(lower_arena *a);
uint64_t lower_arena_alloc(lower_arena *a, uint64_t size);
void lower_arena_release(lower_arena *a, uint64_t off, uint64_t size);

/* ---- one bucket (lower_steps.c) */

/* Where a node's values live in the bucket: a buffer, an offset and rows. */
typedef struct lower_view {
    int valid;
    sched_ref ref;
    int root;                    /* node that owns the arena buffer, -1 for weights/request */
    int64_t rows;                /* bound rows (bucket for S) */
    int seq_rows;                /* rows are the sequence axis */
    int per_seq;                 /* token buckets: a row per sequence (max_seqs rows) */
    int64_t cols;
    int64_t ld;                  /* elements between rows */
} lower_view;

typedef struct lower_ctx {
    const ir_graph *g;
    const lower_weights *w;
    int longest;                 /* the longest bucket: rows of a score-bias table */
    plan_dtype prec;
    plan_fusion fusion;          /* which kernels the dense layers may use (lower_gemm.c) */
    size_t es;                   /* bytes per element in the plan precision */
    int bucket;
    int seqs;                    /* 0: a length bucket; else the token bucket's max_seqs */
    const lower_options *o;      /* the length buckets (packed attention follows their query tiles) */
    plan *p;                     /* its kernel table collects the kernels */
    int kernel_cap;
    diag *d;
    lower_view *v;               /* [g->count] */
    sched_bucket *out;
    int cap_steps;
    lower_arena arena;
    lower_gemm_chooser *gemm;    /* the GEMM choices (lower_gemm.c), shared by every bucket */
    /* The NVRTC front end the step list being lowered is compiled by (a
     * bit: LOWER_FRONT_*; 0 for the emulated device's list), and per
     * kernel of the plan the front ends whose lists use it: a text another
     * list of the same front end has is no new compile (LOWER_GEMM_SHARE). */
    unsigned front;
    unsigned char *kernel_fronts; /* [kernel_cap] */
} lower_ctx;

#define LOWER_FRONT_75 1u        /* compute_75: sm_75 */
#define LOWER_FRONT_80 2u        /* compute_80: sm_80 ... sm_89, and compute_90 (derived) for 9.0 on */

/* Whether node i lowers to a view of its source's buffer (a reshape or a
 * slice; in a token bucket a slice of the sequence axis is a kernel: the
 * sequences' first rows are not one strided view). */
static inline int lower_is_view(const ir_graph *g, int i, int packed) {
    const ir_node *n = &g->nodes[i];
    if (n->op == IR_OP_RESHAPE) return 1;
    if (n->op != IR_OP_SLICE) return 0;
    return !(packed && n->axis == 0 && g->nodes[n->src[0]].shape[0] == IR_DIM_SEQ);
}

/* Lowers node i (an op that runs, or a view); 0 for nodes that need no step. */
int lower_node(lower_ctx *c, int i);

/* Whether the plan of `ctx` (a lower_ctx) has a kernel of s's text already
 * (lower_gemm_chooser.known). */
int lower_kernel_text_known(void *ctx, const kernel_spec *s);
/* Once a bucket's steps are all there: each kernel step's prefetch pair
 * (plan_types.h) set to the next step's largest weight operand. */
void lower_prefetch(lower_ctx *c);


#endif
