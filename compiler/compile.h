/*
 * compile — the compiler's pipeline, in one place:
 *
 *     load -> fuse -> lower -> generate kernels -> build images -> assemble -> write
 *
 *   load       the graph description and its weights (frontend/model.h)
 *   fuse       the fusion passes (passes/passes.h)
 *   lower      signature, weights and one schedule per bucket into a plan
 *              (lower/lower.h)
 *   generate   the source of every distinct kernel (codegen/kernels.h)
 *   build      CUBIN/PTX per GPU architecture and the emulated device's
 *              image (codegen/images.h)
 *   assemble   what the plan carries besides the program: model name,
 *              producer, the tokenizer and its vocabulary
 *   write      the plan file, atomically (codegen/plan_write.c)
 *
 * compile_model() runs the pipeline and reports per stage (counts and
 * seconds); it prints nothing — the command line decides what to show,
 * through the `stage` callback, which is called after each stage.
 */
#ifndef BERTC_COMPILE_H
#define BERTC_COMPILE_H

#include "arch.h"
#include "diag.h"
#include "images.h"
#include "passes.h"
#include "plan_types.h"

#define COMPILE_MAX_BUCKETS 64
/* `--batch-tokens default` and `--max-batch`'s default (docs/runtime.md argues them). */
#define COMPILE_DEFAULT_TOKEN_BUCKETS {256, 512, 1024, 2048, 4096}
#define COMPILE_DEFAULT_MAX_BATCH 64

typedef enum compile_stage {
    COMPILE_STAGE_LOAD,
    COMPILE_STAGE_FUSE,
    COMPILE_STAGE_LOWER,
    COMPILE_STAGE_GENERATE,
    COMPILE_STAGE_BUILD,
    COMPILE_STAGE_ASSEMBLE,
    COMPILE_STAGE_WRITE,
    COMPILE_STAGE_COUNT,
} compile_stage;

typedef struct compile_report {
    passes_report passes;            /* node counts around each fusion pass */
    int nbuckets, nkernels, nimages;
    int ntoken_buckets;              /* of nbuckets; fewer than asked when defaults no batch reaches were left out */
    images_report images;            /* CUBINs built, jobs, cache hits */
    double seconds[COMPILE_STAGE_COUNT];
    double total_seconds;
} compile_report;

typedef struct compile_options {
    const char *model_path;          /* the graph description (YAML) */
    const char *out_path;            /* the plan */
    plan_dtype precision;            /* F32, F16 or BF16 */
    plan_fusion fusion;              /* BASELINE (7 launches per encoder layer) or DEFAULT (5) */
    int buckets[COMPILE_MAX_BUCKETS];/* ascending multiples of 8; nbuckets 0: the defaults */
    int nbuckets;
    int token_buckets[COMPILE_MAX_BUCKETS]; /* packed batches' total tokens, ascending; 0 of them: none */
    int ntoken_buckets;
    int token_buckets_default;       /* they are --batch-tokens default: those a batch never reaches are dropped,
                                        where a listed one is an error (compile.c) */
    int max_batch;                   /* sequences per packed batch at most (COMPILE_DEFAULT_MAX_BATCH) */
    arch_list targets;               /* GPU architectures and/or the emulated device */
    int jobs;                        /* compile threads (>= 1) */
    int no_cache;                    /* bypass the compile cache (kcache.h) */
    const char *tune;                /* --tune: the GPUs the GEMM tilings are chosen for, a step list per
                                        compute capability among them; "all" (the default): every GPU
                                        the architectures serve; NULL: one step list, the compromise
                                        over them (--tune none); lower_gemm.c, lower.c */
    /* Called after each stage with the report so far (may be NULL). */
    void (*stage)(void *user, compile_stage stage, const compile_report *r);
    void *user;
} compile_options;

/* Defaults: fp16, default fusion, the default buckets and architectures, no token buckets, one job. */
void compile_options_init(compile_options *o);

int compile_model(const compile_options *o, compile_report *r, diag *d);

#endif
