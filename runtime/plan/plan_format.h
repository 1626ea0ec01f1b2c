/*
 * plan_format — the constants of the plan file format, version 8.
 *
 * docs/plan-format.md is the specification; this header holds only what the
 * writer (compiler/codegen/plan_write.c) and the reader (runtime/plan/plan_read.c) must
 * agree on by number: the header's fixed offsets, the section kinds and
 * their names, and the size of every fixed-width record.  The order of the
 * fields inside each record is spelled out once in each of the two files, in
 * the same order as the specification's tables; the record sizes here let
 * both sides check that a record was written or read to exactly its length,
 * and the header's type-size probe carries them, so a reader built with a
 * different idea of a record is rejected before it decodes one.
 *
 * Anything that changes a byte of the layout changes PLAN_FORMAT_VERSION
 * (plan.h); new section kinds too (readers reject kinds they do not know).
 */
#ifndef BERTC_PLAN_FORMAT_H
#define BERTC_PLAN_FORMAT_H

#include <stdint.h>

/* Header: the first 24 bytes keep this layout in every format version. */
#define PLAN_HDR_MAGIC 0x00          /* 8 bytes "BERTCPLN" */
#define PLAN_HDR_VERSION 0x08        /* u32 */
#define PLAN_HDR_ENDIAN 0x0C         /* u32 PLAN_ENDIAN_PROBE */
#define PLAN_HDR_FILE_SIZE 0x10      /* u64 */
/* The current version (6) from here on. */
#define PLAN_HDR_HEADER_SIZE 0x18    /* u32 PLAN_HEADER_SIZE */
#define PLAN_HDR_CRC 0x1C            /* u32 CRC-32C of header (this field as 0) + table */
#define PLAN_HDR_TABLE_OFFSET 0x20   /* u64 */
#define PLAN_HDR_SECTION_COUNT 0x28  /* u32 */
#define PLAN_HDR_PRODUCER 0x2C       /* u32 string index */
#define PLAN_HDR_SCALAR_SIZES 0x30   /* u8[8]: 1 2 4 8 4 8 0 0 */
#define PLAN_HDR_RECORD_SIZES 0x38   /* u16[PLAN_RECORD_COUNT] */
#define PLAN_HDR_F32_PROBE 0x50      /* f32 1.5 = 0x3FC00000 */
#define PLAN_HDR_RESERVED0 0x54      /* u32 0 */
#define PLAN_HDR_F64_PROBE 0x58      /* f64 -2.5 = 0xC004000000000000 */
#define PLAN_HDR_RESERVED1 0x60      /* 32 zero bytes up to 0x80 */
#define PLAN_HEADER_SIZE 0x80

#define PLAN_ENDIAN_PROBE 0x01020304u
#define PLAN_F32_PROBE_BITS 0x3FC00000u
#define PLAN_F64_PROBE_BITS 0xC004000000000000ull
#define PLAN_STR_NONE 0xFFFFFFFFu    /* string index of an absent optional string */
#define PLAN_MAX_SECTIONS 64         /* sanity bound on the header's section count */
/*
 * Longest string a record may name.  The reader copies each named string, so
 * the bound keeps a hostile file (a million records naming one huge string)
 * from turning into a huge allocation: copies stay within ~30x the file size.
 */
#define PLAN_MAX_STRING 4095
#define PLAN_MAX_LABELS 4096         /* class names in the LABELS section */
/* Sanity bound on a bucket's arrival counters (16 MiB: four million
 * counters, far more than any grid of a plan has tiles). */
#define PLAN_MAX_COUNTER_BYTES (16u << 20)

/* Fixed record sizes, in bytes (docs/plan-format.md gives every field). */
#define PLAN_SECTION_ENTRY_SIZE 32
#define PLAN_SIGNATURE_SIZE 80
/* Format 6 (the families): spec.pad_id and spec.bias_ld after spec.qtile
 * (152 -> 160 bytes).  Format 7 (the GEMM family and token buckets): the
 * kernel record grows from 160 to 192 bytes (spec.tile_m, tile_n, splits
 * after spec.bias_ld, then spec.packed and spec.seq_qtile[4]); a launch
 * holds 12 argument refs, so the step record grows from 232 to 256 bytes;
 * the bucket record grows from 24 to 32 bytes (max_seqs at 12, the former
 * padding; counter_bytes at 24, then 4 reserved bytes); the signature's
 * fusion takes former padding. */
#define PLAN_KERNEL_RECORD_SIZE 192  /* 144 in version 1, 152 in 2..5, 160 in 6 */
#define PLAN_IMAGE_RECORD_SIZE 40
#define PLAN_STATS_RECORD_SIZE 16
#define PLAN_BUCKET_RECORD_SIZE 32   /* 24 in versions 1..6; format 8: cc_min, cc_max (u16) at 28, were reserved */
#define PLAN_STEP_RECORD_SIZE 256    /* 232 in versions 1..5 */
#define PLAN_STEP_PAYLOAD_SIZE 232   /* launch (232 used: 12 refs) or gemm (208 + padding) */
#define PLAN_GEMM_PAYLOAD_USED 208   /* a GEMM payload's fields; zeros after them */
#define PLAN_OUTPUT_RECORD_SIZE 48
#define PLAN_REF_SIZE 16
#define PLAN_TOKENIZER_RECORD_SIZE 80  /* 56 in version 2 (a vocab.txt and BERT settings) */
/* The TOKENIZER section's arrays after the record (docs/plan-format.md). */
#define PLAN_TOK_MERGE_SIZE 12
#define PLAN_TOK_NORMALIZER_SIZE 32
#define PLAN_TOK_PRETOKENIZER_SIZE 32
#define PLAN_TOK_ADDED_SIZE 12
#define PLAN_TOK_ITEM_SIZE 12
#define PLAN_TOK_MAX_COMPONENTS 64

/* The order of the sizes in the header's type-size probe. */
typedef enum plan_record {
    PLAN_RECORD_HEADER,
    PLAN_RECORD_SECTION_ENTRY,
    PLAN_RECORD_SIGNATURE,
    PLAN_RECORD_KERNEL,
    PLAN_RECORD_IMAGE,
    PLAN_RECORD_STATS,
    PLAN_RECORD_BUCKET,
    PLAN_RECORD_STEP,
    PLAN_RECORD_OUTPUT,
    PLAN_RECORD_REF,
    PLAN_RECORD_TOKENIZER,
    PLAN_RECORD_RESERVED,            /* 0 */
    PLAN_RECORD_COUNT,
} plan_record;

static inline unsigned plan_record_size(plan_record r) {
    static const unsigned sizes[PLAN_RECORD_COUNT] = {
        PLAN_HEADER_SIZE,       PLAN_SECTION_ENTRY_SIZE, PLAN_SIGNATURE_SIZE, PLAN_KERNEL_RECORD_SIZE,
        PLAN_IMAGE_RECORD_SIZE, PLAN_STATS_RECORD_SIZE,  PLAN_BUCKET_RECORD_SIZE, PLAN_STEP_RECORD_SIZE,
        PLAN_OUTPUT_RECORD_SIZE, PLAN_REF_SIZE,          PLAN_TOKENIZER_RECORD_SIZE, 0,
    };
    return (unsigned)r < PLAN_RECORD_COUNT ? sizes[r] : 0;
}

static inline const char *plan_record_name(plan_record r) {
    static const char *const names[PLAN_RECORD_COUNT] = {
        "header", "section entry", "signature", "kernel record", "image record", "stats record",
        "bucket record", "step record", "output record", "ref", "tokenizer record", "reserved",
    };
    return (unsigned)r < PLAN_RECORD_COUNT ? names[r] : "?";
}

/* Section kinds; the writer lays sections out in this order. */
typedef enum plan_section_kind {
    PLAN_SECTION_STRINGS = 1,
    PLAN_SECTION_SIGNATURE = 2,
    PLAN_SECTION_KERNELS = 3,
    PLAN_SECTION_IMAGES = 4,
    PLAN_SECTION_SCHEDULES = 5,
    PLAN_SECTION_TOKENIZER = 6,      /* optional (and LABELS) */
    PLAN_SECTION_KERNEL_SOURCES = 7,
    PLAN_SECTION_IMAGE_DATA = 8,
    PLAN_SECTION_WEIGHTS = 9,
    PLAN_SECTION_LABELS = 10,        /* optional: u32 string indices, the class names of `logits` */
    PLAN_SECTION_KIND_END,
} plan_section_kind;

static inline const char *plan_section_kind_name(uint32_t kind) {
    static const char *const names[PLAN_SECTION_KIND_END] = {
        "?",         "STRINGS",        "SIGNATURE",  "KERNELS", "IMAGES",
        "SCHEDULES", "TOKENIZER",      "KERNEL_SOURCES", "IMAGE_DATA", "WEIGHTS",
        "LABELS",
    };
    return kind >= 1 && kind < PLAN_SECTION_KIND_END ? names[kind] : "?";
}

#endif
