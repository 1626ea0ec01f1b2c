/*
 * plan — the in-memory form of a compiled plan, shared by the compiler
 * (which builds and writes it) and the runtime (which reads and runs it).
 *
 * The file format is specified in docs/plan-format.md.  plan_read() checks
 * the file field by field before anything is used (magic, format version,
 * endianness and type-size probe, section table bounds and alignment, each
 * section's checksum, every record's sizes and indices), in the manner of
 * Lua's lundump.c, and reports the first problem with its byte offset.  A
 * plan that reads is self-consistent: every index and offset in it points
 * inside the plan, so the runtime never re-checks.
 *
 * Reading maps the file and points into the mapping (the weight blob is
 * uploaded straight from it); strings and tables are copied out.
 */
#ifndef BERTC_PLAN_H
#define BERTC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "plan_types.h"
#include "tokdesc.h"

#define PLAN_MAGIC "BERTCPLN"       /* 8 bytes */
#define PLAN_FORMAT_VERSION 9   /* 6: the families (pad_id, bias_ld, LABELS); 7: the GEMM family and token buckets;
                                   8: step lists per compute capability (plan_format.h); 9: an image carries
                                   the kernels of the step lists it serves (PLAN_STATS_NOT_CARRIED) */
#define PLAN_SECTION_ALIGN 256
#define PLAN_MAX_ARCHS 16

typedef struct plan_kernel {
    char *entry;                     /* extern "C" name */
    char *source;                    /* the generated text (starts with its template comment) */
    kernel_spec spec;
    int nargs;                       /* pointer arguments of the entry point, 1..12: the compiler
                                        sets it from the kernel kind; every launch of the
                                        kernel passes exactly this many */
} plan_kernel;

typedef struct plan_kernel_stats {
    int registers;                   /* PLAN_STATS_NOT_CARRIED: the image lacks the kernel */
    int spill_stores, spill_loads;   /* bytes */
    int shared_static;               /* bytes */
} plan_kernel_stats;

typedef enum plan_image_kind {
    PLAN_IMAGE_CUBIN,
    PLAN_IMAGE_PTX,
    PLAN_IMAGE_EMU,                  /* shared object for the emulated device (x86-64 Linux) */
} plan_image_kind;

typedef struct plan_image {
    char arch[16];                   /* "sm_80", "compute_75" (PTX), "emu" */
    plan_image_kind kind;
    const uint8_t *data;             /* into the mapping (reader) or owned (writer) */
    size_t size;
    plan_kernel_stats *stats;        /* [nkernels], in the kernel table's order; zeros if unknown */
} plan_image;

/* The tokenizer's description (runtime/common/tokdesc.h); present = 0 without one. */
typedef tokdesc plan_tokenizer;

typedef struct plan {
    /* signature */
    char *model_name;
    char *producer;                  /* "bertc 0.1.0" */
    plan_dtype precision;            /* F32, F16 or BF16 */
    int64_t max_seq_len;
    int64_t hidden;
    int64_t vocab_size;              /* rows of the input_ids table (ids must be below) */
    int64_t type_vocab_size;         /* rows of the token-type table, 0 if none */
    int has_token_type_ids, has_attention_mask;   /* inputs the graph reads */
    int32_t token_type_default, attention_mask_default;

    /* weights in the plan precision, GEMM-ready */
    const uint8_t *weights;
    uint64_t weights_size;

    int nkernels;
    plan_kernel *kernels;
    int nimages;
    plan_image *images;
    int nbuckets;                    /* buckets per variant */
    sched_bucket *buckets;           /* [nvariants * nbuckets]: variant by variant, each its length buckets
                                        ascending, then its token buckets ascending */
    int nvariants;                   /* step lists, by device (below); 0 on the writer side means 1 */
    uint64_t arena_bytes;            /* max over buckets */
    uint64_t counter_bytes;          /* COUNTERS buffer: max over buckets (not in the file) */
    plan_fusion fusion;              /* which fusion built it (bertc compile --fusion) */
    plan_tokenizer tokenizer;
    int nlabels;                     /* class names of the output `logits` (config.json's id2label) */
    char **labels;

    /* reader state */
    void *map;                       /* the file's bytes; NULL on the writer side */
    size_t map_size;
    int map_heap;                    /* map is a private heap copy (plan_read_memory), not an mmap */
    int owns_weights;                /* writer side: weights malloc'd */
} plan;

void plan_init(plan *p);

/*
 * Variants.  A plan carries one step list per bucket for every device, or
 * — `bertc compile --tune` — several: variant v serves the devices whose
 * compute capability (major * 10 + minor; the emulated device's "emu" is
 * 0) lies in its range, the ranges ascending from 0 and covering every
 * capability up to PLAN_CC_MAX without overlap.  Every variant has the
 * same buckets (lengths, token counts) and the same outputs (names,
 * types, shapes), so what a caller sees of the plan does not depend on
 * the device; only the steps, the arena offsets and the kernels they
 * launch differ.  p->buckets begins with variant 0, so the plan-wide
 * queries below read it.  A writer-side plan with nvariants 0 has one
 * variant, its range all capabilities.
 */
#define PLAN_CC_MAX 0xFFFF
static inline int plan_variant_count(const plan *p) { return p->nvariants > 1 ? p->nvariants : 1; }
static inline sched_bucket *plan_variant_buckets(const plan *p, int v) { return p->buckets + (size_t)v * (size_t)p->nbuckets; }
/* The variant whose steps run on a device of capability major.minor (0.0: the emulated device). */
int plan_variant_for(const plan *p, int major, int minor);
/* The length buckets (max_seqs 0) are the first this many; the rest are
 * token buckets (packed batches). */
static inline int plan_length_buckets(const plan *p) {
    int n = 0;
    while (n < p->nbuckets && p->buckets[n].max_seqs == 0) n++;
    return n;
}
/* The longest request a length bucket takes (0 without one). */
static inline int plan_max_len(const plan *p) {
    int n = plan_length_buckets(p);
    return n ? p->buckets[n - 1].seq_len : 0;
}
/* Free a bucket's steps and outputs (their names too) and zero it. */
void sched_bucket_free(sched_bucket *b);
/*
 * Release everything and re-initialise.  A read plan unmaps (or frees) its
 * bytes; a writer-side plan (map NULL) frees its strings, tables, image
 * data, and the weights if owns_weights.
 */
void plan_free(plan *p);

/*
 * Map and validate; on failure the message names the offset and the field.
 * p need not be initialised; on failure it is left empty (plan_init'd).
 * plan_read_memory copies buf (256-aligned, like a mapping), so the caller
 * may free buf at once; `name` stands for the file in messages.
 */
int plan_read(plan *p, const char *path, diag *d);
/* plan_read, refusing (before any byte is used) a file whose SHA-256 is not
 * `sha256` (64 hex digits; NULL: no pin). */
int plan_read_pinned(plan *p, const char *path, const char *sha256, diag *d);
/* SHA-256 of a read plan's bytes as 64 hex digits. */
void plan_sha256(const plan *p, char out[65]);
int plan_read_memory(plan *p, const void *buf, size_t len, const char *name, diag *d);

/*
 * Kernel images and devices (plan_image.c): the image of `p` that runs on
 * capability major.minor named `arch` — an image of exactly that arch
 * (CUBIN or EMU), else the newest CUBIN of the same major and no newer
 * minor, else the newest PTX not newer than the device; -1 with `why`
 * (may be NULL) listing what the plan has.
 */
int plan_image_select(const plan *p, const char *arch, int major, int minor, char *why, size_t cap);
/* 86 for ("sm_86", "sm_"), 75 for ("compute_75", "compute_"); -1 otherwise. */
int plan_arch_number(const char *arch, const char *prefix);
/* Whether a CUBIN for sm runs on a major.minor device (same major, minor not newer). */
int plan_cubin_runs_on(int sm, int major, int minor);

/*
 * Which kernels an image carries.  A plan with several step lists gives an
 * image only the kernels of the lists its devices run: a stats record
 * whose registers are PLAN_STATS_NOT_CARRIED says the image lacks that
 * kernel (the reader checks that no list an image serves launches one).
 */
#define PLAN_STATS_NOT_CARRIED (-1)
static inline int plan_image_carries(const plan *p, int image, int kernel) {
    const plan_image *im = &p->images[image];
    return !im->stats || im->stats[kernel].registers != PLAN_STATS_NOT_CARRIED;
}
/* Whether image i runs on some device of capability cc_min..cc_max (major *
 * 10 + minor, 0 for the emulated device, named as the runtime names it:
 * "emu", "sm_86"), by plan_image_select.  Only p's images are read. */
int plan_image_serves_range(const plan *p, int i, int cc_min, int cc_max);
/* Whether image i runs on some device of variant v's capabilities. */
int plan_image_serves(const plan *p, int i, int v);

#endif
