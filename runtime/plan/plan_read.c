/*
 * plan_read — map a plan file and check every byte of it before use.
 *
 * The runtime trusts a plan that reads: it turns refs into device addresses
 * and launches kernels by index without looking again.  So this file is the
 * one place where a plan is doubted, and it doubts everything, in the order
 * in which a wrong byte would otherwise be used (Lua's lundump.c is the model
 * of the approach: check each field before anything depends on it):
 *
 *   1. the header: magic, the endianness probe, then the recorded file size
 *      against the real one (a truncated file is reported as truncated, not
 *      as whatever field happens to be cut), the format version, the header
 *      size, the type-size probe (scalar widths, every record size, the
 *      float encodings), reserved bytes, the section table's bounds, and the
 *      CRC-32C of header and table together;
 *   2. the section table: known kinds only, each at most once, the required
 *      ones present, 256-aligned, inside the file, no two regions
 *      overlapping, and every byte between regions zero, so that every byte
 *      of a valid file is covered by a checksum or known to be zero;
 *   3. every section's CRC-32C, before any section is decoded, so a flipped
 *      bit is reported as a checksum mismatch of its section rather than as
 *      a strange value somewhere;
 *   4. the records, field by field: string indices inside the string table
 *      (which must end in a NUL, so every index names a terminated string,
 *      and names are at most PLAN_MAX_STRING bytes),
 *      enum values in range, booleans 0 or 1, reserved bytes zero, counts
 *      that match the section sizes exactly, kernel indices below the kernel
 *      count, launch argument counts equal to the kernel's, buckets
 *      ascending and within max_seq_len, step lists (variants) whose
 *      capability ranges cover 0..65535 in order, each with the first's
 *      buckets, launch dimensions non-zero, and
 *      every buffer reference inside its buffer where the buffer's size is
 *      known (weights, the bucket's arena, the request block, the bucket's
 *      arrival counters).
 *
 * The variable-length parts have one canonical layout (kernel texts back to
 * back in kernel order, images in order at the next 256-byte boundary, zeros
 * between, nothing after the last), which the reader insists on: no two
 * records can share bytes, so a file of N bytes never makes the reader copy
 * much more than N bytes, and a plan has exactly one valid encoding.
 *
 * Records are decoded through a cursor whose loads are bounds-checked
 * against the record being decoded, on top of the section-size checks that
 * come first; a decoder that read past its record would be a bug here, and
 * it is reported as one instead of reading out of bounds.  All loads are
 * byte-wise little-endian, so the reader neither depends on the host's byte
 * order nor on alignment.
 *
 * Messages read "FILE: offset 0xOFF: WHERE: RECORD: field F: problem", with
 * the absolute byte offset of the offending field.  Strings, tables and
 * kernel sources are copied out; the weights and the image bytes stay in the
 * mapping (or in plan_read_memory's private 256-aligned copy), which is why
 * weight sections are 256-aligned in the file.
 *
 * Dependencies: plan.h and plan_types.h (the vocabulary), plan_format.h,
 * crc32c and diag — nothing of the compiler, which is not on this file's
 * include path.
 */
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "plan_kernels.h"
#include "sha256.h"
#include "plan_format.h"

/*
 * The file stores these enums by value (docs/plan-format.md lists them).  If
 * one is renumbered or grows, old plans would be misread: that is a format
 * change, so it must fail to compile here until PLAN_FORMAT_VERSION and the
 * specification are updated with it.
 */
_Static_assert(PLAN_FORMAT_VERSION == 9, "update the enum pins below with the format");
_Static_assert(TOKDESC_MODEL_WORDPIECE == 0 && TOKDESC_MODEL_BPE == 1 && TOKDESC_MODEL_UNIGRAM == 2 &&
                   TOKDESC_MODEL_COUNT == 3,
               "tokdesc_model values are part of the plan format");
_Static_assert(TOKDESC_NORM_BERT == 0 && TOKDESC_NORM_PRECOMPILED == 1 && TOKDESC_NORM_REPLACE == 2 &&
                   TOKDESC_NORM_LOWERCASE == 3 && TOKDESC_NORM_STRIP == 4 && TOKDESC_NORM_COUNT == 5,
               "tokdesc_norm_kind values are part of the plan format");
_Static_assert(TOKDESC_PRE_BERT == 0 && TOKDESC_PRE_BYTE_LEVEL == 1 && TOKDESC_PRE_METASPACE == 2 &&
                   TOKDESC_PRE_WHITESPACE_SPLIT == 3 && TOKDESC_PRE_COUNT == 4,
               "tokdesc_pre_kind values are part of the plan format");
_Static_assert(TOKDESC_PREPEND_ALWAYS == 0 && TOKDESC_PREPEND_FIRST == 1 && TOKDESC_PREPEND_NEVER == 2 &&
                   TOKDESC_ITEM_SPECIAL == 0 && TOKDESC_ITEM_SEQ_A == 1 && TOKDESC_ITEM_SEQ_B == 2,
               "tokdesc prepend schemes and template items are part of the plan format");
_Static_assert(TOKDESC_FLAG_ALL == 31 && TOKDESC_ADDED_ALL == 31, "tokdesc flags are part of the plan format");
_Static_assert(PLAN_DTYPE_F32 == 0 && PLAN_DTYPE_F16 == 1 && PLAN_DTYPE_BF16 == 2 && PLAN_DTYPE_I32 == 3 &&
                   PLAN_DTYPE_COUNT == 4,
               "plan_dtype values are part of the plan format");
_Static_assert(PLAN_ACT_GELU_ERF == 0 && PLAN_ACT_GELU_TANH == 1 && PLAN_ACT_RELU == 2 && PLAN_ACT_TANH == 3 &&
                   PLAN_ACT_COUNT == 4,
               "plan_act values are part of the plan format");
_Static_assert(KERNEL_KIND_EMBED_LN == 0 && KERNEL_KIND_ADD_LN == 1 && KERNEL_KIND_ATTENTION == 2 &&
                   KERNEL_KIND_GEMM == 3 && KERNEL_KIND_POOL == 4 && KERNEL_KIND_GEMM_SPLITK == 5 &&
                   KERNEL_KIND_GEMM_LN == 6 && KERNEL_KIND_COUNT == 7,
               "kernel_kind values are part of the plan format");
_Static_assert(KERNEL_INDEX_INPUT_IDS == 0 && KERNEL_INDEX_TOKEN_TYPES == 1 && KERNEL_INDEX_POSITION == 2 &&
                   KERNEL_INDEX_PAD_POSITION == 3 &&
                   KERNEL_MAX_GATHERS == 3,
               "kernel_index values are part of the plan format");
_Static_assert(PLAN_POOL_CLS == 0 && PLAN_POOL_MEAN == 1 && PLAN_POOL_ROW == 2 && PLAN_POOL_COUNT == 3,
               "plan_pool_mode values are part of the plan format");
_Static_assert(PLAN_IMAGE_CUBIN == 0 && PLAN_IMAGE_PTX == 1 && PLAN_IMAGE_EMU == 2,
               "plan_image_kind values are part of the plan format");
_Static_assert(SCHED_STEP_KERNEL == 0 && SCHED_STEP_GEMM == 1, "sched_step_kind values are part of the plan format");
_Static_assert(SCHED_BUF_NONE == 0 && SCHED_BUF_WEIGHTS == 1 && SCHED_BUF_ARENA == 2 && SCHED_BUF_REQUEST == 3 &&
                   SCHED_BUF_COUNTERS == 4 && SCHED_BUF_COUNT == 5,
               "sched_buf values are part of the plan format");
_Static_assert(KERNEL_REQ_HEADER_WORDS == 4 && KERNEL_REQ_LEN == 0 && KERNEL_REQ_BUCKET == 1 && KERNEL_REQ_NSEQ == 2 &&
                   KERNEL_REQ_MAX_SEQS == 3 && KERNEL_MAX_SEQS == 1024 && KERNEL_MAX_BUCKET == 65536,
               "the request block's layout is part of the plan format");
/* Format 6: GEMM_LN's ten arguments and the prefetch pair. */
_Static_assert(KERNEL_MAX_ARGS == 12 && KERNEL_PREFETCH_ARGS == 2 &&
                   40 + KERNEL_MAX_ARGS * PLAN_REF_SIZE <= PLAN_STEP_PAYLOAD_SIZE,
               "a launch's argument slots (the prefetch pair included) are part of the plan format");
_Static_assert(PLAN_FUSION_BASELINE == 0 && PLAN_FUSION_DEFAULT == 1 && PLAN_FUSION_COUNT == 2,
               "plan_fusion values are part of the plan format");
_Static_assert(sizeof(((plan_image *)0)->arch) == 16, "the image arch field is 16 bytes in the plan format");

/* ---- plan_init / plan_free ----------------------------------------------- */

void plan_init(plan *p) {
    memset(p, 0, sizeof *p);
    tokdesc_init(&p->tokenizer);
}

void sched_bucket_free(sched_bucket *b) {
    for (int i = 0; b->steps && i < b->nsteps; i++) free(b->steps[i].name);
    for (int i = 0; b->outputs && i < b->noutputs; i++) free(b->outputs[i].name);
    free(b->steps);
    free(b->outputs);
    memset(b, 0, sizeof *b);
}

void plan_free(plan *p) {
    if (!p) return;
    int writer_side = p->map == NULL;
    free(p->model_name);
    free(p->producer);
    for (int i = 0; p->kernels && i < p->nkernels; i++) {
        free(p->kernels[i].entry);
        free(p->kernels[i].source);
    }
    free(p->kernels);
    for (int i = 0; p->images && i < p->nimages; i++) {
        if (writer_side) free((void *)p->images[i].data);
        free(p->images[i].stats);
    }
    free(p->images);
    for (int i = 0; p->buckets && i < plan_variant_count(p) * p->nbuckets; i++) sched_bucket_free(&p->buckets[i]);
    free(p->buckets);
    tokdesc_free(&p->tokenizer);
    for (int i = 0; p->labels && i < p->nlabels; i++) free(p->labels[i]);
    free(p->labels);
    if (writer_side && p->owns_weights) free((void *)p->weights);
    if (p->map) {
        if (p->map_heap) free(p->map);
        else munmap(p->map, p->map_size);
    }
    plan_init(p);
}

/* ---- the reader and its cursor ------------------------------------------- */

static uint16_t prd_ld16(const uint8_t *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t prd_ld32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t prd_ld64(const uint8_t *b) { return (uint64_t)prd_ld32(b) | (uint64_t)prd_ld32(b + 4) << 32; }

typedef struct prd_section {
    int present;
    uint32_t entry;              /* index in the section table */
    uint32_t name;               /* string index of its name */
    uint64_t off, size;
    uint32_t crc;
} prd_section;

typedef struct prd {
    const uint8_t *base;
    uint64_t len;
    const char *name;            /* the file, for messages */
    diag *d;
    const char *where;           /* "header", "section table", "padding", "section X" */
    char where_buf[64];
    char ctx[256];               /* the record being decoded, "" outside records */
    uint64_t table_off;
    uint32_t nsections;
    prd_section sec[PLAN_SECTION_KIND_END];
    uint32_t nkernels, nimages, nbuckets;
    uint64_t sig_arena_off;      /* where SIGNATURE's arena_bytes lies, for the cross-check */
    plan *p;
} prd;

typedef struct prd_cur {
    prd *r;
    uint64_t pos;                /* absolute offset of the next field */
    uint64_t at;                 /* absolute offset of the field just read */
    uint64_t end;                /* end of the record being decoded */
    int overrun;
} prd_cur;

__attribute__((format(printf, 3, 4))) static void prd_report(prd *r, uint64_t off, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_set(r->d, DIAG_CODE_INPUT, "%s: offset 0x%llx: %s: %s%s%s", r->name, (unsigned long long)off, r->where,
             r->ctx, r->ctx[0] ? ": " : "", msg);
}

/* Report and evaluate to -1 (visibly, so the compiler sees no output left unset on success). */
#define PRD_FAIL(r, off, ...) (prd_report((r), (off), __VA_ARGS__), -1)
#define CUR_FAIL(c, ...) PRD_FAIL((c)->r, (c)->at, __VA_ARGS__)

static int prd_oom(prd *r) {
    diag_set(r->d, DIAG_CODE_INTERNAL, "%s: out of memory while reading the plan", r->name);
    return -1;
}

static void prd_where_section(prd *r, uint32_t kind) {
    snprintf(r->where_buf, sizeof r->where_buf, "section %s", plan_section_kind_name(kind));
    r->where = r->where_buf;
    r->ctx[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void prd_ctx(prd *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->ctx, sizeof r->ctx, fmt, ap);
    va_end(ap);
}

/* A cursor over one record of `size` bytes at absolute offset `pos`. */
static int prd_record(prd *r, prd_cur *c, uint64_t pos, uint64_t size) {
    c->r = r;
    c->pos = c->at = pos;
    c->end = pos + size;
    c->overrun = 0;
    if (pos > r->len || size > r->len - pos)
        return PRD_FAIL(r, pos, "internal error: record of %llu bytes runs past the end of the file",
                        (unsigned long long)size);
    return 0;
}

/* The record was decoded to exactly its length (a check on this file). */
static int prd_record_done(prd_cur *c) {
    if (c->overrun || c->pos != c->end)
        return PRD_FAIL(c->r, c->at, "internal error: record decoded to 0x%llx, it ends at 0x%llx",
                        (unsigned long long)c->pos, (unsigned long long)c->end);
    return 0;
}

static const uint8_t *cur_take(prd_cur *c, unsigned n) {
    static const uint8_t zeros[16];
    c->at = c->pos;
    if (c->overrun || c->pos + n > c->end) {
        c->overrun = 1;
        return zeros;
    }
    const uint8_t *b = c->r->base + c->pos;
    c->pos += n;
    return b;
}

static uint32_t cur_u32(prd_cur *c) { return prd_ld32(cur_take(c, 4)); }
static uint64_t cur_u64(prd_cur *c) { return prd_ld64(cur_take(c, 8)); }
static int32_t cur_i32(prd_cur *c) { return (int32_t)cur_u32(c); }
static int64_t cur_i64(prd_cur *c) { return (int64_t)cur_u64(c); }

static float cur_f32(prd_cur *c) {
    uint32_t u = cur_u32(c);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double cur_f64(prd_cur *c) {
    uint64_t u = cur_u64(c);
    double f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int cur_zero(prd_cur *c, unsigned n, const char *field) {
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *b = cur_take(c, 1);
        if (*b) return CUR_FAIL(c, "field %s: byte 0x%02x where the format has zero padding", field, *b);
    }
    return 0;
}

static int cur_bool(prd_cur *c, const char *field, int *out) {
    uint32_t v = cur_u32(c);
    if (v > 1) return CUR_FAIL(c, "field %s: %u is not a flag (expected 0 or 1)", field, v);
    *out = (int)v;
    return 0;
}

/* An enum field: v < count. */
static int cur_enum(prd_cur *c, const char *field, const char *what, uint32_t count, uint32_t *out) {
    uint32_t v = cur_u32(c);
    if (v >= count) return CUR_FAIL(c, "field %s: %u is not %s (expected 0..%u)", field, v, what, count - 1);
    *out = v;
    return 0;
}

/* A storage dtype of the plan: float32, float16 or bfloat16. */
static int cur_float_dtype(prd_cur *c, const char *field, plan_dtype *out) {
    uint32_t v;
    if (cur_enum(c, field, "a float storage type (0 float32, 1 float16, 2 bfloat16)", PLAN_DTYPE_I32, &v))
        return -1;
    *out = (plan_dtype)v;
    return 0;
}

static int cur_i32_min(prd_cur *c, const char *field, int32_t lo, int *out) {
    int32_t v = cur_i32(c);
    if (v < lo) return CUR_FAIL(c, "field %s: %d is below the minimum %d", field, v, lo);
    *out = v;
    return 0;
}

static int cur_i64_min(prd_cur *c, const char *field, int64_t lo, int64_t *out) {
    int64_t v = cur_i64(c);
    if (v < lo) return CUR_FAIL(c, "field %s: %lld is below the minimum %lld", field, (long long)v, (long long)lo);
    *out = v;
    return 0;
}

static int cur_finite_f32(prd_cur *c, const char *field, float *out) {
    float v = cur_f32(c);
    if (!isfinite(v)) return CUR_FAIL(c, "field %s: not a finite number", field);
    *out = v;
    return 0;
}

static char *prd_strndup(const uint8_t *s, size_t n) {
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, s, n);
    t[n] = '\0';
    return t;
}

/* A string-table index; PLAN_STR_NONE gives NULL where `optional`. */
static int cur_str(prd_cur *c, const char *field, int optional, char **out) {
    prd *r = c->r;
    uint32_t idx = cur_u32(c);
    const prd_section *st = &r->sec[PLAN_SECTION_STRINGS];
    *out = NULL;
    if (idx == PLAN_STR_NONE && optional) return 0;
    if (idx >= st->size)
        return CUR_FAIL(c, "field %s: string index %u is out of range (the string table has %llu bytes)", field,
                        idx, (unsigned long long)st->size);
    const uint8_t *s = r->base + st->off + idx;
    /* The table ends in a NUL (checked first), so this stays inside it. */
    size_t n = strnlen((const char *)s, PLAN_MAX_STRING + 1);
    if (n > PLAN_MAX_STRING)
        return CUR_FAIL(c, "field %s: string %u is longer than the %d bytes a name may have", field, idx,
                        PLAN_MAX_STRING);
    if (!(*out = prd_strndup(s, n))) return prd_oom(r);
    return 0;
}

/* Escape a few raw bytes for a message. */
static const char *prd_escape(const uint8_t *b, size_t n, char *buf, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < cap; i++) {
        if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' && b[i] != '\\') buf[k++] = (char)b[i];
        else k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", b[i]);
    }
    buf[k] = '\0';
    return buf;
}

/* ---- 1. the header ------------------------------------------------------- */

/* The type-size probe and the reserved bytes: a reader built with another
 * idea of a record is refused before it decodes one. */
static int prd_header_probe(prd *r) {
    const uint8_t *b = r->base;
    static const uint8_t scalar[8] = {1, 2, 4, 8, 4, 8, 0, 0};
    static const char *const scalar_name[8] = {"u8", "u16", "u32", "u64", "f32", "f64", "reserved", "reserved"};
    for (int i = 0; i < 8; i++)
        if (b[PLAN_HDR_SCALAR_SIZES + i] != scalar[i])
            return PRD_FAIL(r, PLAN_HDR_SCALAR_SIZES + (uint64_t)i,
                            "type-size probe: %s is %u bytes in this plan, %u in this reader", scalar_name[i],
                            b[PLAN_HDR_SCALAR_SIZES + i], scalar[i]);
    for (int i = 0; i < PLAN_RECORD_COUNT; i++) {
        unsigned got = prd_ld16(b + PLAN_HDR_RECORD_SIZES + 2 * i), want = plan_record_size((plan_record)i);
        if (got != want)
            return PRD_FAIL(r, PLAN_HDR_RECORD_SIZES + 2 * (uint64_t)i,
                            "type-size probe: the %s is %u bytes in this plan, %u in this reader",
                            plan_record_name((plan_record)i), got, want);
    }
    if (prd_ld32(b + PLAN_HDR_F32_PROBE) != PLAN_F32_PROBE_BITS)
        return PRD_FAIL(r, PLAN_HDR_F32_PROBE, "type-size probe: f32 1.5 is encoded 0x%08x, expected 0x%08x",
                        prd_ld32(b + PLAN_HDR_F32_PROBE), PLAN_F32_PROBE_BITS);
    if (prd_ld64(b + PLAN_HDR_F64_PROBE) != PLAN_F64_PROBE_BITS)
        return PRD_FAIL(r, PLAN_HDR_F64_PROBE, "type-size probe: f64 -2.5 is encoded 0x%016llx, expected 0x%016llx",
                        (unsigned long long)prd_ld64(b + PLAN_HDR_F64_PROBE),
                        (unsigned long long)PLAN_F64_PROBE_BITS);
    for (uint64_t o = PLAN_HDR_RESERVED0; o < PLAN_HDR_RESERVED0 + 4; o++)
        if (b[o]) return PRD_FAIL(r, o, "reserved byte is 0x%02x, expected 0", b[o]);
    for (uint64_t o = PLAN_HDR_RESERVED1; o < PLAN_HEADER_SIZE; o++)
        if (b[o]) return PRD_FAIL(r, o, "reserved byte is 0x%02x, expected 0", b[o]);

    return 0;
}

/* Where the section table lies; then the checksum over header and table. */
static int prd_header_table(prd *r) {
    const uint8_t *b = r->base;
    uint64_t len = r->len;
    uint64_t toff = prd_ld64(b + PLAN_HDR_TABLE_OFFSET);
    uint32_t count = prd_ld32(b + PLAN_HDR_SECTION_COUNT);
    if (count == 0 || count > PLAN_MAX_SECTIONS)
        return PRD_FAIL(r, PLAN_HDR_SECTION_COUNT, "field section_count: %u is not in 1..%d", count, PLAN_MAX_SECTIONS);
    if (toff % 8 || toff < PLAN_HEADER_SIZE)
        return PRD_FAIL(r, PLAN_HDR_TABLE_OFFSET,
                        "field section_table_offset: 0x%llx is not a multiple of 8 at or after the header's end 0x%x",
                        (unsigned long long)toff, PLAN_HEADER_SIZE);
    uint64_t tsize = (uint64_t)count * PLAN_SECTION_ENTRY_SIZE;
    if (toff > len || tsize > len - toff)
        return PRD_FAIL(r, PLAN_HDR_TABLE_OFFSET,
                        "field section_table_offset: the table of %u entries at 0x%llx runs past the end of the "
                        "file (%llu bytes)",
                        count, (unsigned long long)toff, (unsigned long long)len);
    static const uint8_t zero4[4];
    uint32_t crc = crc32c_update(0, b, PLAN_HDR_CRC);
    crc = crc32c_update(crc, zero4, 4);
    crc = crc32c_update(crc, b + PLAN_HDR_CRC + 4, PLAN_HEADER_SIZE - PLAN_HDR_CRC - 4);
    crc = crc32c_update(crc, b + toff, (size_t)tsize);
    uint32_t stored = prd_ld32(b + PLAN_HDR_CRC);
    if (crc != stored)
        return PRD_FAIL(r, PLAN_HDR_CRC,
                        "checksum mismatch over the header and the section table (stored 0x%08x, computed 0x%08x)",
                        stored, crc);
    r->table_off = toff;
    r->nsections = count;
    return 0;
}

static int prd_header(prd *r) {
    const uint8_t *b = r->base;
    uint64_t len = r->len;
    r->where = "header";
    size_t m = len < 8 ? (size_t)len : 8;
    if (m && memcmp(b, PLAN_MAGIC, m) != 0) {
        char esc[64];
        return PRD_FAIL(r, PLAN_HDR_MAGIC, "magic is \"%s\", not \"%s\": not a bertc plan", prd_escape(b, m, esc, sizeof esc),
                        PLAN_MAGIC);
    }
    if (len < PLAN_HDR_FILE_SIZE + 8)
        return PRD_FAIL(r, len, "truncated: the file has %llu bytes, a plan header alone has %d",
                        (unsigned long long)len, PLAN_HEADER_SIZE);
    uint32_t probe = prd_ld32(b + PLAN_HDR_ENDIAN);
    if (probe == 0x04030201u)
        return PRD_FAIL(r, PLAN_HDR_ENDIAN,
                        "field endian_probe: reads 0x04030201: the plan was written big-endian "
                        "(plans are little-endian, the probe is the bytes 04 03 02 01)");
    if (probe != PLAN_ENDIAN_PROBE)
        return PRD_FAIL(r, PLAN_HDR_ENDIAN,
                        "field endian_probe: 0x%08x is not 0x01020304 (the bytes 04 03 02 01): "
                        "not a little-endian plan",
                        probe);
    uint64_t fsize = prd_ld64(b + PLAN_HDR_FILE_SIZE);
    if (fsize > len)
        return PRD_FAIL(r, len, "truncated: the header records a file of %llu bytes, the file has %llu",
                        (unsigned long long)fsize, (unsigned long long)len);
    if (fsize < len)
        return PRD_FAIL(r, PLAN_HDR_FILE_SIZE,
                        "field file_size: %llu bytes, but the file has %llu (trailing bytes after the plan)",
                        (unsigned long long)fsize, (unsigned long long)len);
    uint32_t version = prd_ld32(b + PLAN_HDR_VERSION);
    if (version != PLAN_FORMAT_VERSION)
        return PRD_FAIL(r, PLAN_HDR_VERSION,
                        "field format_version: %u is not supported (this reader reads version %d; %s)", version,
                        PLAN_FORMAT_VERSION,
                        version > PLAN_FORMAT_VERSION
                            ? "a newer bertc wrote the plan: run it with that bertc's runtime, or recompile the model "
                              "with this bertc (bertc compile)"
                            : "an older bertc wrote the plan: recompile the model with this bertc (bertc compile)");
    if (len < PLAN_HEADER_SIZE)
        return PRD_FAIL(r, len, "truncated: the file has %llu bytes, a plan header alone has %d",
                        (unsigned long long)len, PLAN_HEADER_SIZE);
    uint32_t hsize = prd_ld32(b + PLAN_HDR_HEADER_SIZE);
    if (hsize != PLAN_HEADER_SIZE)
        return PRD_FAIL(r, PLAN_HDR_HEADER_SIZE, "field header_size: %u, version %d headers have %d bytes", hsize,
                        PLAN_FORMAT_VERSION, PLAN_HEADER_SIZE);

    return prd_header_probe(r) || prd_header_table(r);
}

/* ---- 2. the section table ------------------------------------------------ */

typedef struct prd_region {
    uint64_t off, end;
    const char *label;
} prd_region;

static int prd_table(prd *r) {
    r->where = "section table";
    for (uint32_t i = 0; i < r->nsections; i++) {
        prd_cur c;
        if (prd_record(r, &c, r->table_off + (uint64_t)i * PLAN_SECTION_ENTRY_SIZE, PLAN_SECTION_ENTRY_SIZE))
            return -1;
        prd_ctx(r, "entry %u", i);
        uint32_t kind = cur_u32(&c);
        if (kind == 0 || kind >= PLAN_SECTION_KIND_END)
            return CUR_FAIL(&c, "field kind: unknown section kind %u (this reader knows 1..%d; new kinds come with a new "
                            "format version)",
                            kind, PLAN_SECTION_KIND_END - 1);
        const char *kname = plan_section_kind_name(kind);
        prd_ctx(r, "entry %u (%s)", i, kname);
        uint32_t name = cur_u32(&c);
        uint64_t off = cur_u64(&c);
        if (off % PLAN_SECTION_ALIGN)
            return CUR_FAIL(&c, "field offset: 0x%llx is not a multiple of %d", (unsigned long long)off, PLAN_SECTION_ALIGN);
        uint64_t size = cur_u64(&c);
        if (off > r->len || size > r->len - off)
            return CUR_FAIL(&c, "field size: %llu bytes at 0x%llx run past the end of the file (%llu bytes)",
                            (unsigned long long)size, (unsigned long long)off, (unsigned long long)r->len);
        uint32_t crc = cur_u32(&c);
        if (cur_zero(&c, 4, "reserved") || prd_record_done(&c)) return -1;
        prd_section *s = &r->sec[kind];
        if (s->present)
            return PRD_FAIL(r, c.end - PLAN_SECTION_ENTRY_SIZE, "section %s appears twice (entries %u and %u)", kname,
                            s->entry, i);
        s->present = 1;
        s->entry = i;
        s->name = name;
        s->off = off;
        s->size = size;
        s->crc = crc;
    }
    r->ctx[0] = '\0';
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++)
        if (!r->sec[k].present && k != PLAN_SECTION_TOKENIZER && k != PLAN_SECTION_LABELS)
            return PRD_FAIL(r, r->table_off, "required section %s is missing", plan_section_kind_name(k));

    /* Regions, sorted by offset: no overlaps, zeros in between. */
    prd_region reg[PLAN_SECTION_KIND_END + 2];
    int n = 0;
    reg[n++] = (prd_region){0, PLAN_HEADER_SIZE, "the header"};
    reg[n++] = (prd_region){r->table_off, r->table_off + (uint64_t)r->nsections * PLAN_SECTION_ENTRY_SIZE,
                            "the section table"};
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++)
        if (r->sec[k].present && r->sec[k].size)
            reg[n++] = (prd_region){r->sec[k].off, r->sec[k].off + r->sec[k].size, plan_section_kind_name(k)};
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && reg[j].off < reg[j - 1].off; j--) {
            prd_region t = reg[j];
            reg[j] = reg[j - 1];
            reg[j - 1] = t;
        }
    for (int i = 1; i < n; i++)
        if (reg[i].off < reg[i - 1].end)
            return PRD_FAIL(r, reg[i].off, "%s [0x%llx, 0x%llx) overlaps %s [0x%llx, 0x%llx)", reg[i].label,
                            (unsigned long long)reg[i].off, (unsigned long long)reg[i].end, reg[i - 1].label,
                            (unsigned long long)reg[i - 1].off, (unsigned long long)reg[i - 1].end);
    r->where = "padding";
    for (int i = 0; i < n; i++) {
        uint64_t from = reg[i].end, to = i + 1 < n ? reg[i + 1].off : r->len;
        for (uint64_t o = from; o < to; o++)
            if (r->base[o])
                return PRD_FAIL(r, o, "byte 0x%02x after %s is not zero (padding between sections is zero)",
                                r->base[o], reg[i].label);
    }
    /* 3. Every section's checksum, in file order, before any is decoded. */
    for (int i = 0; i < n; i++) {
        for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
            const prd_section *s = &r->sec[k];
            if (!s->present || s->off != reg[i].off || !s->size) continue;
            uint32_t crc = crc32c_update(0, r->base + s->off, (size_t)s->size);
            if (crc != s->crc) {
                prd_where_section(r, k);
                return PRD_FAIL(r, s->off, "checksum mismatch (stored 0x%08x, computed 0x%08x)", s->crc, crc);
            }
        }
    }
    /* Empty sections have the CRC of no bytes. */
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        const prd_section *s = &r->sec[k];
        if (s->present && !s->size && s->crc != 0) {
            prd_where_section(r, k);
            return PRD_FAIL(r, s->off, "checksum mismatch (stored 0x%08x, computed 0x00000000 for an empty section)",
                            s->crc);
        }
    }
    return 0;
}

/* ---- 4. the sections ----------------------------------------------------- */

static int prd_strings(prd *r) {
    const prd_section *s = &r->sec[PLAN_SECTION_STRINGS];
    prd_where_section(r, PLAN_SECTION_STRINGS);
    if (s->size == 0) return PRD_FAIL(r, s->off, "the string table is empty (it holds at least the section names)");
    uint8_t last = r->base[s->off + s->size - 1];
    if (last != 0)
        return PRD_FAIL(r, s->off + s->size - 1, "the last byte is 0x%02x, not NUL (every string ends inside the table)",
                        last);

    /* The producer, named by the header. */
    r->where = "header";
    prd_cur c;
    if (prd_record(r, &c, PLAN_HDR_PRODUCER, 4) || cur_str(&c, "producer", 0, &r->p->producer)) return -1;

    /* Each table entry names its section by the canonical name. */
    r->where = "section table";
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        const prd_section *e = &r->sec[k];
        if (!e->present) continue;
        prd_ctx(r, "entry %u (%s)", e->entry, plan_section_kind_name(k));
        if (prd_record(r, &c, r->table_off + (uint64_t)e->entry * PLAN_SECTION_ENTRY_SIZE + 4, 4)) return -1;
        char *name;
        if (cur_str(&c, "name", 0, &name)) return -1;
        int same = strcmp(name, plan_section_kind_name(k)) == 0;
        free(name);
        if (!same)
            return CUR_FAIL(&c, "field name: string %u is not \"%s\"", e->name, plan_section_kind_name(k));
    }
    r->ctx[0] = '\0';
    return 0;
}

static int prd_section_size(prd *r, uint32_t kind, uint64_t want, const char *why) {
    const prd_section *s = &r->sec[kind];
    if (s->size != want)
        return PRD_FAIL(r, s->off, "the section has %llu bytes, expected %llu (%s)", (unsigned long long)s->size,
                        (unsigned long long)want, why);
    return 0;
}

static int prd_signature(prd *r) {
    plan *p = r->p;
    const prd_section *s = &r->sec[PLAN_SECTION_SIGNATURE];
    prd_where_section(r, PLAN_SECTION_SIGNATURE);
    if (prd_section_size(r, PLAN_SECTION_SIGNATURE, PLAN_SIGNATURE_SIZE, "one signature record")) return -1;
    prd_cur c;
    if (prd_record(r, &c, s->off, PLAN_SIGNATURE_SIZE)) return -1;
    if (cur_str(&c, "model_name", 0, &p->model_name) || cur_float_dtype(&c, "precision", &p->precision)) return -1;
    if (cur_i64_min(&c, "max_seq_len", 1, &p->max_seq_len)) return -1;
    if (p->max_seq_len > INT_MAX) return CUR_FAIL(&c, "field max_seq_len: %lld is too large", (long long)p->max_seq_len);
    if (cur_i64_min(&c, "hidden", 1, &p->hidden) || cur_i64_min(&c, "vocab_size", 1, &p->vocab_size) ||
        cur_i64_min(&c, "type_vocab_size", 0, &p->type_vocab_size) ||
        cur_bool(&c, "has_token_type_ids", &p->has_token_type_ids) ||
        cur_bool(&c, "has_attention_mask", &p->has_attention_mask))
        return -1;
    p->token_type_default = cur_i32(&c);
    if (p->type_vocab_size > 0 && (p->token_type_default < 0 || p->token_type_default >= p->type_vocab_size))
        return CUR_FAIL(&c, "field token_type_default: %d is not a token type (the table has %lld rows)",
                        (int)p->token_type_default, (long long)p->type_vocab_size);
    p->attention_mask_default = cur_i32(&c);
    p->arena_bytes = cur_u64(&c);
    r->sig_arena_off = c.at;
    r->nkernels = cur_u32(&c);
    if (r->nkernels > INT_MAX) return CUR_FAIL(&c, "field nkernels: %u is too large", r->nkernels);
    r->nimages = cur_u32(&c);
    if (r->nimages > INT_MAX) return CUR_FAIL(&c, "field nimages: %u is too large", r->nimages);
    r->nbuckets = cur_u32(&c);
    if (r->nbuckets == 0 || r->nbuckets > INT_MAX)
        return CUR_FAIL(&c, "field nbuckets: %u (a plan has at least one bucket)", r->nbuckets);
    uint32_t fusion;
    if (cur_enum(&c, "fusion", "a fusion level (0 baseline, 1 default)", PLAN_FUSION_COUNT, &fusion) ||
        prd_record_done(&c))
        return -1;
    p->fusion = (plan_fusion)fusion;
    p->weights = r->base + r->sec[PLAN_SECTION_WEIGHTS].off;
    p->weights_size = r->sec[PLAN_SECTION_WEIGHTS].size;
    return 0;
}

/* *next_src: where this kernel's text must start (texts follow each other in kernel order). */
static int prd_kernel(prd *r, prd_cur *c, plan_kernel *k, uint64_t *next_src) {
    const prd_section *src = &r->sec[PLAN_SECTION_KERNEL_SOURCES];
    kernel_spec *s = &k->spec;
    uint32_t v;
    if (cur_str(c, "entry", 0, &k->entry)) return -1;
    v = cur_u32(c);
    if (v < 1 || v > KERNEL_MAX_ARGS) return CUR_FAIL(c, "field nargs: %u is not in 1..%d", v, KERNEL_MAX_ARGS);
    k->nargs = (int)v;
    uint64_t off = cur_u64(c);
    if (off != *next_src)
        return CUR_FAIL(c, "field source_offset: %llu, expected %llu (the texts follow each other in kernel order)",
                        (unsigned long long)off, (unsigned long long)*next_src);
    uint64_t len = cur_u64(c);
    if (off > src->size || len >= src->size - off)
        return CUR_FAIL(c, "field source_len: the text [%llu, +%llu) and its NUL do not fit in KERNEL_SOURCES (%llu bytes)",
                        (unsigned long long)off, (unsigned long long)len, (unsigned long long)src->size);
    const uint8_t *text = r->base + src->off + off;
    const uint8_t *nul = memchr(text, 0, (size_t)len + 1);
    if (!nul) return CUR_FAIL(c, "field source_len: the text's %llu bytes are not followed by a NUL", (unsigned long long)len);
    if (nul != text + len)
        return CUR_FAIL(c, "field source_len: the text has a NUL at byte %llu of its %llu", (unsigned long long)(nul - text),
                        (unsigned long long)len);
    if (!(k->source = prd_strndup(text, (size_t)len))) return prd_oom(r);
    *next_src = off + len + 1;

    if (cur_enum(c, "spec.kind", "a kernel kind", KERNEL_KIND_COUNT, &v)) return -1;
    s->kind = (kernel_kind)v;
    if (cur_float_dtype(c, "spec.dtype", &s->dtype) || cur_i32_min(c, "spec.bucket", 0, &s->bucket)) return -1;
    s->hidden = cur_i32(c);
    if (cur_finite_f32(c, "spec.eps", &s->eps)) return -1;
    s->ngathers = cur_i32(c);
    if (s->ngathers < 0 || s->ngathers > KERNEL_MAX_GATHERS)
        return CUR_FAIL(c, "field spec.ngathers: %d is not in 0..%d", s->ngathers, KERNEL_MAX_GATHERS);
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++) {
        if (cur_enum(c, "spec.gather_index",
                     "a gather index (0 input_ids, 1 token types, 2 position, 3 position after the pad id)",
                     KERNEL_INDEX_PAD_POSITION + 1, &v))
            return -1;
        s->gather_index[g] = (kernel_index)v;
    }
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++) s->table_rows[g] = cur_i32(c);
    if (cur_bool(c, "spec.has_bias", &s->has_bias) || cur_bool(c, "spec.has_residual", &s->has_residual)) return -1;
    s->heads = cur_i32(c);
    s->head_dim = cur_i32(c);
    if (cur_finite_f32(c, "spec.scale", &s->scale)) return -1;
    s->qkv_ld = cur_i32(c);
    s->q_off = cur_i32(c);
    s->k_off = cur_i32(c);
    s->v_off = cur_i32(c);
    s->ctx_ld = cur_i32(c);
    s->n = cur_i32(c);
    s->k = cur_i32(c);
    s->x_ld = cur_i32(c);
    s->out_ld = cur_i32(c);
    s->res_ld = cur_i32(c);
    if (cur_bool(c, "spec.has_act", &s->has_act) || cur_enum(c, "spec.act", "an activation", PLAN_ACT_COUNT, &v))
        return -1;
    s->act = (plan_act)v;
    if (cur_enum(c, "spec.pool_mode", "a pooling mode (0 cls, 1 mean, 2 row)", PLAN_POOL_COUNT, &v) ||
        cur_bool(c, "spec.normalize", &s->normalize))
        return -1;
    s->pool_mode = (plan_pool_mode)v;
    s->qtile = cur_i32(c);
    if (cur_i32_min(c, "spec.pad_id", 0, &s->pad_id) || cur_i32_min(c, "spec.bias_ld", 0, &s->bias_ld)) return -1;
    /* format 7: the GEMM family's tile and split (checked by the contract),
     * then token buckets */
    s->tile_m = cur_i32(c);
    s->tile_n = cur_i32(c);
    s->splits = cur_i32(c);
    if (cur_bool(c, "spec.packed", &s->packed)) return -1;
    for (int i = 0; i < 4; i++) s->seq_qtile[i] = cur_i32(c);
    /* The launch contract (plan_kernels.h): the spec is one the kind can
     * serve, so its geometry and argument extents can be computed. */
    if (k->nargs != kernel_kind_arg_count(s->kind))
        return CUR_FAIL(c, "field nargs: %d, but a %s kernel takes %d arguments", k->nargs, plan_kernel_kind_name(s->kind),
                        kernel_kind_arg_count(s->kind));
    kernel_geometry g;
    diag kd;
    diag_init(&kd);
    if (kernel_spec_check(s, &kd) || kernel_geometry_of(s, &g, &kd)) return CUR_FAIL(c, "field spec: %s", kd.text);
    return 0;
}

static int prd_kernels(prd *r) {
    plan *p = r->p;
    const prd_section *s = &r->sec[PLAN_SECTION_KERNELS];
    prd_where_section(r, PLAN_SECTION_KERNELS);
    char why[64];
    snprintf(why, sizeof why, "the signature's %u kernel records of %d bytes", r->nkernels, PLAN_KERNEL_RECORD_SIZE);
    if (prd_section_size(r, PLAN_SECTION_KERNELS, (uint64_t)r->nkernels * PLAN_KERNEL_RECORD_SIZE, why)) return -1;
    if (r->nkernels && !(p->kernels = calloc(r->nkernels, sizeof p->kernels[0]))) return prd_oom(r);
    p->nkernels = (int)r->nkernels;
    uint64_t next_src = 0;
    for (uint32_t i = 0; i < r->nkernels; i++) {
        prd_cur c;
        prd_ctx(r, "kernel %u", i);
        if (prd_record(r, &c, s->off + (uint64_t)i * PLAN_KERNEL_RECORD_SIZE, PLAN_KERNEL_RECORD_SIZE) ||
            prd_kernel(r, &c, &p->kernels[i], &next_src) || prd_record_done(&c))
            return -1;
    }
    const prd_section *src = &r->sec[PLAN_SECTION_KERNEL_SOURCES];
    if (next_src != src->size) {
        prd_where_section(r, PLAN_SECTION_KERNEL_SOURCES);
        return PRD_FAIL(r, src->off + next_src, "%llu bytes after the last kernel's text",
                        (unsigned long long)(src->size - next_src));
    }
    r->ctx[0] = '\0';
    return 0;
}

static int prd_image_cmp(const void *a, const void *b) {
    const plan_image *x = *(const plan_image *const *)a, *y = *(const plan_image *const *)b;
    int c = strcmp(x->arch, y->arch);
    return c ? c : (int)x->kind - (int)y->kind;
}

/* One stats record: counts >= 0, or registers PLAN_STATS_NOT_CARRIED and
 * zeros (format 9: the image lacks the kernel; an EMU image has them all). */
static int prd_stats(prd_cur *c, const plan_image *im, plan_kernel_stats *st) {
    int32_t reg = (int32_t)prd_ld32(c->r->base + c->pos);
    if (reg == PLAN_STATS_NOT_CARRIED && im->kind != PLAN_IMAGE_EMU) {
        st->registers = reg;
        cur_take(c, 4);
        for (int f = 0; f < 3; f++)
            if (cur_i32(c) != 0)
                return CUR_FAIL(c, "field %s: not 0 in the record of a kernel the image does not carry (registers %d)",
                                f == 0 ? "spill_stores" : f == 1 ? "spill_loads" : "shared_static", reg);
        return 0;
    }
    return cur_i32_min(c, "registers", 0, &st->registers) || cur_i32_min(c, "spill_stores", 0, &st->spill_stores) ||
                   cur_i32_min(c, "spill_loads", 0, &st->spill_loads) ||
                   cur_i32_min(c, "shared_static", 0, &st->shared_static)
               ? -1
               : 0;
}

static int prd_images(prd *r) {
    plan *p = r->p;
    const prd_section *s = &r->sec[PLAN_SECTION_IMAGES], *data = &r->sec[PLAN_SECTION_IMAGE_DATA];
    prd_where_section(r, PLAN_SECTION_IMAGES);
    uint64_t per = PLAN_IMAGE_RECORD_SIZE + (uint64_t)r->nkernels * PLAN_STATS_RECORD_SIZE, want;
    if (__builtin_mul_overflow(per, (uint64_t)r->nimages, &want)) want = UINT64_MAX;
    char why[96];
    snprintf(why, sizeof why, "the signature's %u image records of %d bytes, each with %u stats records",
             r->nimages, PLAN_IMAGE_RECORD_SIZE, r->nkernels);
    if (prd_section_size(r, PLAN_SECTION_IMAGES, want, why)) return -1;
    if (r->nimages && !(p->images = calloc(r->nimages, sizeof p->images[0]))) return prd_oom(r);
    p->nimages = (int)r->nimages;
    uint64_t end = 0; /* of the previous image's bytes */
    for (uint32_t i = 0; i < r->nimages; i++) {
        plan_image *im = &p->images[i];
        prd_cur c;
        prd_ctx(r, "image %u", i);
        if (prd_record(r, &c, s->off + (uint64_t)i * PLAN_IMAGE_RECORD_SIZE, PLAN_IMAGE_RECORD_SIZE)) return -1;
        const uint8_t *arch = cur_take(&c, sizeof im->arch);
        const uint8_t *nul = memchr(arch, 0, sizeof im->arch);
        if (!nul) return CUR_FAIL(&c, "field arch: not NUL-terminated within %zu bytes", sizeof im->arch);
        if (nul == arch) return CUR_FAIL(&c, "field arch: empty");
        for (const uint8_t *q = arch; q < nul; q++)
            if (*q <= 0x20 || *q >= 0x7f) return CUR_FAIL(&c, "field arch: byte 0x%02x is not a printable character", *q);
        for (const uint8_t *q = nul; q < arch + sizeof im->arch; q++)
            if (*q) return CUR_FAIL(&c, "field arch: byte 0x%02x after the NUL (the rest is zero padding)", *q);
        memcpy(im->arch, arch, sizeof im->arch);
        prd_ctx(r, "image %u (%s)", i, im->arch);
        uint32_t v;
        if (cur_enum(&c, "kind", "an image kind (0 cubin, 1 ptx, 2 emu)", PLAN_IMAGE_EMU + 1, &v)) return -1;
        im->kind = (plan_image_kind)v;
        if (cur_zero(&c, 4, "reserved")) return -1;
        uint64_t off = cur_u64(&c);
        if (off % PLAN_SECTION_ALIGN)
            return CUR_FAIL(&c, "field data_offset: %llu is not a multiple of %d", (unsigned long long)off,
                            PLAN_SECTION_ALIGN);
        uint64_t want = (end + PLAN_SECTION_ALIGN - 1) / PLAN_SECTION_ALIGN * PLAN_SECTION_ALIGN;
        for (uint64_t o = end; o < want && o < data->size; o++)
            if (r->base[data->off + o])
                return PRD_FAIL(r, data->off + o, "IMAGE_DATA byte %llu (0x%02x) between images is not zero",
                                (unsigned long long)o, r->base[data->off + o]);
        if (off != want)
            return CUR_FAIL(&c, "field data_offset: %llu, expected %llu (images follow each other in order, each at the "
                            "next multiple of %d)",
                            (unsigned long long)off, (unsigned long long)want, PLAN_SECTION_ALIGN);
        uint64_t size = cur_u64(&c);
        if (off > data->size || size > data->size - off)
            return CUR_FAIL(&c, "field data_size: bytes [%llu, +%llu) run past the end of IMAGE_DATA (%llu bytes)",
                            (unsigned long long)off, (unsigned long long)size, (unsigned long long)data->size);
        end = off + size;
        if (prd_record_done(&c)) return -1;
        im->data = r->base + data->off + off;
        im->size = (size_t)size;
        if (r->nkernels && !(im->stats = calloc(r->nkernels, sizeof im->stats[0]))) return prd_oom(r);
        for (uint32_t k = 0; k < r->nkernels; k++) {
            plan_kernel_stats *st = &im->stats[k];
            prd_ctx(r, "image %u (%s) stats of kernel %u", i, im->arch, k);
            uint64_t at = s->off + (uint64_t)r->nimages * PLAN_IMAGE_RECORD_SIZE +
                          ((uint64_t)i * r->nkernels + k) * PLAN_STATS_RECORD_SIZE;
            if (prd_record(r, &c, at, PLAN_STATS_RECORD_SIZE) || prd_stats(&c, im, st) || prd_record_done(&c))
                return -1;
        }
    }
    r->ctx[0] = '\0';
    if (end != data->size) {
        prd_where_section(r, PLAN_SECTION_IMAGE_DATA);
        return PRD_FAIL(r, data->off + end, "%llu bytes after the last image", (unsigned long long)(data->size - end));
    }
    if (r->nimages > 1) {
        const plan_image **order = malloc(r->nimages * sizeof order[0]);
        if (!order) return prd_oom(r);
        for (uint32_t i = 0; i < r->nimages; i++) order[i] = &p->images[i];
        qsort(order, r->nimages, sizeof order[0], prd_image_cmp);
        for (uint32_t i = 1; i < r->nimages; i++)
            if (prd_image_cmp(&order[i - 1], &order[i]) == 0) {
                const plan_image *dup = order[i] > order[i - 1] ? order[i] : order[i - 1];
                uint32_t at = (uint32_t)(dup - p->images);
                free(order);
                return PRD_FAIL(r, s->off + (uint64_t)at * PLAN_IMAGE_RECORD_SIZE,
                                "image %u: a second image for arch \"%s\" of kind %d", at, dup->arch, (int)dup->kind);
            }
        free(order);
    }
    return 0;
}


/* Size of a ref's buffer in bucket b (weights, its arena, its request block). */
static uint64_t prd_buffer_size(const plan *p, const sched_bucket *b, sched_buf buf) {
    switch (buf) {
    case SCHED_BUF_WEIGHTS: return p->weights_size;
    case SCHED_BUF_ARENA: return b->arena_bytes;
    case SCHED_BUF_REQUEST: return kernel_request_bytes_in(b->seq_len, b->max_seqs);
    case SCHED_BUF_COUNTERS: return b->counter_bytes;
    default: return 0;
    }
}

static const char *prd_buffer_name(sched_buf buf) {
    switch (buf) {
    case SCHED_BUF_WEIGHTS: return "weights";
    case SCHED_BUF_ARENA: return "arena";
    case SCHED_BUF_REQUEST: return "request";
    case SCHED_BUF_COUNTERS: return "counters";
    default: return "none";
    }
}

/* A (buf, offset) ref; NONE needs `allow_none` and offset 0. */
static int prd_ref(prd_cur *c, const char *field, const sched_bucket *b, int allow_none, sched_ref *out) {
    char f[64];
    uint32_t v;
    snprintf(f, sizeof f, "%s.buf", field);
    if (cur_enum(c, f, "a buffer (0 none, 1 weights, 2 arena, 3 request, 4 counters)", SCHED_BUF_COUNT, &v)) return -1;
    out->buf = (sched_buf)v;
    if (out->buf == SCHED_BUF_NONE && !allow_none)
        return CUR_FAIL(c, "field %s: the operand is required, the ref is NONE", f);
    snprintf(f, sizeof f, "%s.reserved", field);
    if (cur_zero(c, 4, f)) return -1;
    out->offset = cur_u64(c);
    uint64_t size = prd_buffer_size(c->r->p, b, out->buf);
    if (out->buf == SCHED_BUF_NONE ? out->offset != 0 : out->offset >= size)
        return CUR_FAIL(c, "field %s.offset: %llu lies outside the %s buffer (%llu bytes)", field,
                        (unsigned long long)out->offset, prd_buffer_name(out->buf), (unsigned long long)size);
    return 0;
}

/* The launch's dimensions are the ones its kernel was compiled for. */
static int prd_launch_dims(prd_cur *c, const sched_bucket *b, const plan_kernel *pk, const sched_launch *l,
                           uint64_t dims_at) {
    kernel_launch_dims want;
    diag kd;
    diag_init(&kd);
    if (kernel_launch_dims_in(&pk->spec, b->seq_len, b->max_seqs, &want, &kd))
        return CUR_FAIL(c, "field launch.kernel: %s", kd.text);
    /* a token bucket's sequences are at most the longest length bucket
     * (the length buckets come first, so they are read already) */
    if (b->max_seqs && kernel_launch_check_rows(&pk->spec, plan_max_len(c->r->p), &kd))
        return CUR_FAIL(c, "field launch.kernel: %s (the longest sequence of a batch)", kd.text);
    const kernel_launch_dims *g = &l->dims;
    if (!memcmp(g->grid, want.grid, sizeof want.grid) && !memcmp(g->block, want.block, sizeof want.block) &&
        g->shared_bytes == want.shared_bytes)
        return 0;
    c->at = dims_at;
    return CUR_FAIL(c,
                    "field launch.grid: grid (%u, %u, %u), block (%u, %u, %u), %u bytes of shared memory, but kernel %s "
                    "is launched with grid (%u, %u, %u), block (%u, %u, %u), %u bytes",
                    g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2], g->shared_bytes,
                    pk->entry, want.grid[0], want.grid[1], want.grid[2], want.block[0], want.block[1], want.block[2],
                    want.shared_bytes);
}

static const char *prd_arg_use_name(kernel_arg_use u) {
    return u == KERNEL_ARG_UNUSED     ? "unused"
           : u == KERNEL_ARG_REQUEST  ? "the request block"
           : u == KERNEL_ARG_READ     ? "read"
           : u == KERNEL_ARG_WRITE    ? "written"
           : u == KERNEL_ARG_PREFETCH ? "a prefetch bound"
                                      : "arrival counters";
}

/* One argument against its use: the buffer it may be in and its extent. */
static int prd_launch_arg(prd_cur *c, const sched_bucket *b, const plan_kernel *pk, int i, const sched_ref *ref,
                          const kernel_arg *a) {
    sched_buf buf = ref->buf;
    int ok = a->use == KERNEL_ARG_UNUSED     ? buf == SCHED_BUF_NONE
             : a->use == KERNEL_ARG_REQUEST  ? buf == SCHED_BUF_REQUEST && ref->offset == 0
             : a->use == KERNEL_ARG_WRITE    ? buf == SCHED_BUF_ARENA
             : a->use == KERNEL_ARG_PREFETCH ? buf == SCHED_BUF_NONE || buf == SCHED_BUF_WEIGHTS
             : a->use == KERNEL_ARG_COUNTERS ? buf == SCHED_BUF_COUNTERS
                                             : buf == SCHED_BUF_ARENA || buf == SCHED_BUF_WEIGHTS;
    if (!ok)
        return CUR_FAIL(c, "field launch.args[%d]: kernel %s's argument %d is %s; it cannot be the %s buffer at %llu", i,
                        pk->entry, i, prd_arg_use_name(a->use), prd_buffer_name(buf),
                        (unsigned long long)ref->offset);
    if (a->use == KERNEL_ARG_REQUEST && a->bytes > kernel_request_bytes(0) && pk->spec.bucket &&
        pk->spec.bucket != b->seq_len)
        return CUR_FAIL(c, "field launch.args[%d]: kernel %s reads the request block laid out for %d rows; this bucket's "
                           "has %d",
                        i, pk->entry, pk->spec.bucket, b->seq_len);
    uint64_t size = prd_buffer_size(c->r->p, b, buf);
    if (a->use != KERNEL_ARG_UNUSED && (ref->offset > size || a->bytes > size - ref->offset))
        return CUR_FAIL(c, "field launch.args[%d]: kernel %s touches %llu bytes from offset %llu, past the end of the %s "
                           "buffer (%llu bytes)",
                        i, pk->entry, (unsigned long long)a->bytes, (unsigned long long)ref->offset, prd_buffer_name(buf),
                        (unsigned long long)size);
    return 0;
}

/* Every argument stays inside its buffer for every request of the bucket. */
static int prd_launch_args(prd_cur *c, const sched_bucket *b, const plan_kernel *pk, const sched_launch *l,
                           const uint64_t *arg_at) {
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_in(&pk->spec, b->seq_len, b->max_seqs, a);
    for (int i = 0; i < l->nargs; i++) {
        c->at = arg_at[i];
        if (prd_launch_arg(c, b, pk, i, &l->args[i], &a[i])) return -1;
    }
    /* the prefetch pair: nothing, or the first and the last byte of a range
     * of the weights (each already inside the blob, prd_ref) in order */
    const sched_ref *pb = &l->args[l->nargs - 2], *pe = &l->args[l->nargs - 1];
    c->at = arg_at[l->nargs - 1];
    if (pb->buf != pe->buf)
        return CUR_FAIL(c, "field launch.args[%d]: the prefetch range of kernel %s must be two weight offsets or two "
                           "NONE references",
                        l->nargs - 1, pk->entry);
    if (pb->buf == SCHED_BUF_WEIGHTS && pb->offset > pe->offset)
        return CUR_FAIL(c, "field launch.args[%d]: kernel %s's prefetch range starts at %llu, after its last byte %llu",
                        l->nargs - 1, pk->entry, (unsigned long long)pb->offset, (unsigned long long)pe->offset);
    return 0;
}

static int prd_launch(prd *r, prd_cur *c, const sched_bucket *b, sched_launch *l) {
    const plan *p = r->p;
    uint32_t k = cur_u32(c);
    if (k >= (uint32_t)p->nkernels)
        return CUR_FAIL(c, "field launch.kernel: kernel index %u is out of range (the plan has %d kernels)", k,
                        p->nkernels);
    const plan_kernel *pk = &p->kernels[k];
    /* A kernel whose text does not depend on the bucket (LayerNorm, GEMM)
     * is generated once and shared by larger buckets; the pooler GEMM runs
     * on one row.  A kernel made for more rows than the bucket has is wrong. */
    if (pk->spec.bucket > b->seq_len)
        return CUR_FAIL(c, "field launch.kernel: kernel %u (%s) was generated for %d rows, this bucket has %d", k,
                        pk->entry, pk->spec.bucket, b->seq_len);
    l->kernel = (int)k;
    static const char *const dim_field[6] = {"launch.grid[0]",  "launch.grid[1]",  "launch.grid[2]",
                                             "launch.block[0]", "launch.block[1]", "launch.block[2]"};
    uint64_t dims_at = c->pos;
    for (int i = 0; i < 6; i++) {
        unsigned v = cur_u32(c);
        if (v == 0) return CUR_FAIL(c, "field %s: 0 (launch dimensions are at least 1)", dim_field[i]);
        if (i < 3) l->dims.grid[i] = v;
        else l->dims.block[i - 3] = v;
    }
    l->dims.shared_bytes = cur_u32(c);
    uint32_t nargs = cur_u32(c);
    if (nargs != (uint32_t)pk->nargs)
        return CUR_FAIL(c, "field launch.nargs: %u, but kernel %u (%s) takes %d arguments", nargs, k, pk->entry,
                        pk->nargs);
    l->nargs = (int)nargs;
    if (cur_zero(c, 4, "launch.reserved")) return -1;
    uint64_t arg_at[KERNEL_MAX_ARGS];
    for (int i = 0; i < KERNEL_MAX_ARGS; i++) {
        char f[32];
        snprintf(f, sizeof f, "launch.args[%d]", i);
        arg_at[i] = c->pos;
        if (i < l->nargs ? prd_ref(c, f, b, 1, &l->args[i]) : cur_zero(c, PLAN_REF_SIZE, f)) return -1;
    }
    if (cur_zero(c, PLAN_STEP_PAYLOAD_SIZE - 40 - KERNEL_MAX_ARGS * PLAN_REF_SIZE, "launch.padding")) return -1;
    return prd_launch_dims(c, b, pk, l, dims_at) || prd_launch_args(c, b, pk, l, arg_at);
}

/* One GEMM operand inside its buffer; the output only in the arena. */
static int prd_gemm_operand(prd_cur *c, const sched_bucket *b, const char *name, const sched_ref *ref, uint64_t bytes,
                            int written) {
    if (ref->buf == SCHED_BUF_NONE) return 0;
    if (ref->buf == SCHED_BUF_REQUEST || ref->buf == SCHED_BUF_COUNTERS || (written && ref->buf != SCHED_BUF_ARENA))
        return CUR_FAIL(c, "field gemm.%s: the %s buffer cannot hold a GEMM %s", name, prd_buffer_name(ref->buf),
                        written ? "result" : "operand");
    uint64_t size = prd_buffer_size(c->r->p, b, ref->buf);
    if (!bytes || ref->offset > size || bytes > size - ref->offset)
        return CUR_FAIL(c, "field gemm.%s: the operand spans %llu bytes from offset %llu, past the end of the %s buffer "
                           "(%llu bytes)",
                        name, (unsigned long long)bytes, (unsigned long long)ref->offset, prd_buffer_name(ref->buf),
                        (unsigned long long)size);
    return 0;
}

/* What cuBLASLt will read and write for D = op(A) op(B) (+ C) (+ bias). */
static int prd_gemm_extents(prd_cur *c, const sched_bucket *b, const sched_gemm *g) {
    for (int o = 0; o < SCHED_GEMM_OPERAND_COUNT; o++) {
        const sched_ref *ref;
        uint64_t bytes = sched_gemm_operand_bytes(g, (sched_gemm_operand)o, &ref);
        if (prd_gemm_operand(c, b, sched_gemm_operand_name((sched_gemm_operand)o), ref, bytes,
                             o == SCHED_GEMM_OPERAND_D))
            return -1;
    }
    return 0;
}

static int prd_gemm(prd_cur *c, const sched_bucket *b, sched_gemm *g) {
    uint32_t v;
    if (cur_bool(c, "gemm.transa", &g->transa) || cur_bool(c, "gemm.transb", &g->transb) ||
        cur_i64_min(c, "gemm.m", 1, &g->m) || cur_i64_min(c, "gemm.n", 1, &g->n) || cur_i64_min(c, "gemm.k", 1, &g->k) ||
        cur_i64_min(c, "gemm.lda", g->transa ? g->k : g->m, &g->lda) ||
        cur_i64_min(c, "gemm.ldb", g->transb ? g->n : g->k, &g->ldb) || cur_i64_min(c, "gemm.ldc", g->m, &g->ldc) ||
        cur_i64_min(c, "gemm.ldd", g->m, &g->ldd) || cur_i64_min(c, "gemm.stride_a", 0, &g->stride_a) ||
        cur_i64_min(c, "gemm.stride_b", 0, &g->stride_b) || cur_i64_min(c, "gemm.stride_c", 0, &g->stride_c) ||
        cur_i64_min(c, "gemm.stride_d", 0, &g->stride_d) || cur_i32_min(c, "gemm.batch_count", 1, &g->batch_count) ||
        cur_float_dtype(c, "gemm.ab_type", &g->ab_type) || cur_float_dtype(c, "gemm.cd_type", &g->cd_type) ||
        cur_float_dtype(c, "gemm.bias_type", &g->bias_type) || cur_finite_f32(c, "gemm.alpha", &g->alpha) ||
        cur_finite_f32(c, "gemm.beta", &g->beta))
        return -1;
    v = cur_u32(c);
    if (v != SCHED_EPILOGUE_DEFAULT && v != SCHED_EPILOGUE_RELU && v != SCHED_EPILOGUE_BIAS &&
        v != SCHED_EPILOGUE_RELU_BIAS)
        return CUR_FAIL(c, "field gemm.epilogue: %u is not an epilogue (expected 1 default, 2 relu, 4 bias, 6 relu+bias)",
                        v);
    g->epilogue = (sched_epilogue)v;
    if (cur_zero(c, 4, "gemm.reserved") || prd_ref(c, "gemm.a", b, 0, &g->a) || prd_ref(c, "gemm.b", b, 0, &g->b) ||
        prd_ref(c, "gemm.c", b, g->beta == 0.0f, &g->c) || prd_ref(c, "gemm.d", b, 0, &g->d) ||
        prd_ref(c, "gemm.bias", b, 1, &g->bias) ||
        cur_zero(c, PLAN_STEP_PAYLOAD_SIZE - PLAN_GEMM_PAYLOAD_USED, "gemm.padding"))
        return -1;
    int wants_bias = (g->epilogue & SCHED_EPILOGUE_BIAS) != 0;
    if (wants_bias != (g->bias.buf != SCHED_BUF_NONE))
        return CUR_FAIL(c, "field gemm.bias: %s", wants_bias ? "the BIAS epilogue needs a bias, the ref is NONE"
                                                             : "a bias without a BIAS epilogue (the ref must be NONE)");
    return prd_gemm_extents(c, b, g);
}

static int prd_step(prd *r, prd_cur *c, int bi, uint32_t si, const sched_bucket *b, sched_step *st) {
    uint32_t v;
    if (cur_enum(c, "kind", "a step kind (0 kernel, 1 gemm)", SCHED_STEP_GEMM + 1, &v)) return -1;
    st->kind = (sched_step_kind)v;
    if (cur_str(c, "name", 0, &st->name)) return -1;
    prd_ctx(r, "bucket %d (seq_len %d) step %u \"%.80s\"", bi, b->seq_len, si, st->name);
    st->flops = cur_f64(c);
    if (!isfinite(st->flops) || st->flops < 0) return CUR_FAIL(c, "field flops: %g is not a finite count", st->flops);
    st->min_hbm_bytes = cur_u64(c);
    if (st->kind == SCHED_STEP_KERNEL) return prd_launch(r, c, b, &st->launch);
    return prd_gemm(c, b, &st->gemm);
}

static int prd_output(prd_cur *c, const sched_bucket *b, sched_output *o) {
    uint32_t v;
    if (cur_str(c, "name", 0, &o->name)) return -1;
    if (cur_enum(c, "dtype", "a dtype (0 float32, 1 float16, 2 bfloat16, 3 int32)", PLAN_DTYPE_COUNT, &v)) return -1;
    o->dtype = (plan_dtype)v;
    if (prd_ref(c, "ref", b, 0, &o->ref)) return -1;
    if (o->ref.buf == SCHED_BUF_COUNTERS)
        return CUR_FAIL(c, "field ref.buf: an output cannot live in the %s buffer", prd_buffer_name(o->ref.buf));
    if (cur_bool(c, "rows_are_seq", &o->rows_are_seq) || cur_bool(c, "per_seq", &o->per_seq)) return -1;
    /* A token bucket's outputs have a row per token or a row per sequence;
     * a length bucket's a row per token or one row. */
    if (o->per_seq && (o->rows_are_seq || !b->max_seqs))
        return CUR_FAIL(c, "field per_seq: 1, but %s", o->rows_are_seq ? "rows_are_seq is 1 too (one or the other)"
                                                                         : "the bucket is a length bucket (max_seqs 0)");
    if (b->max_seqs && !o->rows_are_seq && !o->per_seq)
        return CUR_FAIL(c, "field per_seq: 0 in a token bucket (an output there has a row per token or per sequence)");
    if (cur_i64_min(c, "cols", 1, &o->cols) ||
        cur_i64_min(c, "row_stride", o->rows_are_seq || o->per_seq ? o->cols : 0, &o->row_stride))
        return -1;
    /* The whole output lies inside its buffer. */
    uint64_t elems, bytes;
    uint64_t rows = o->rows_are_seq ? (uint64_t)b->seq_len - 1 : o->per_seq ? (uint64_t)b->max_seqs - 1 : 0;
    uint64_t size = prd_buffer_size(c->r->p, b, o->ref.buf);
    if (__builtin_mul_overflow(rows, (uint64_t)o->row_stride, &elems) ||
        __builtin_add_overflow(elems, (uint64_t)o->cols, &elems) ||
        __builtin_mul_overflow(elems, (uint64_t)plan_dtype_size(o->dtype), &bytes) || bytes > size - o->ref.offset)
        return CUR_FAIL(c, "field row_stride: the output's %s rows of %lld columns (stride %lld) from offset %llu run "
                        "past the end of the %s buffer (%llu bytes)",
                        o->rows_are_seq ? "bucket" : o->per_seq ? "max_seqs" : "1", (long long)o->cols,
                        (long long)o->row_stride,
                        (unsigned long long)o->ref.offset, prd_buffer_name(o->ref.buf), (unsigned long long)size);
    return 0;
}

static int prd_output_cmp(const void *a, const void *b) {
    return strcmp((*(const sched_output *const *)a)->name, (*(const sched_output *const *)b)->name);
}

static int prd_outputs_unique(prd *r, const sched_bucket *b, int bi, uint64_t first) {
    if (b->noutputs < 2) return 0;
    const sched_output **order = malloc((size_t)b->noutputs * sizeof order[0]);
    if (!order) return prd_oom(r);
    for (int i = 0; i < b->noutputs; i++) order[i] = &b->outputs[i];
    qsort(order, (size_t)b->noutputs, sizeof order[0], prd_output_cmp);
    for (int i = 1; i < b->noutputs; i++)
        if (strcmp(order[i]->name, order[i - 1]->name) == 0) {
            const sched_output *dup = order[i] > order[i - 1] ? order[i] : order[i - 1];
            long at = dup - b->outputs;
            r->ctx[0] = '\0';
            int rc = PRD_FAIL(r, first + (uint64_t)at * PLAN_OUTPUT_RECORD_SIZE,
                              "bucket %d output %ld: a second output named \"%s\"", bi, at, dup->name);
            free(order);
            return rc;
        }
    free(order);
    return 0;
}

/* seq_len and max_seqs of bucket record i, the first of its variant's
 * being `first`: length buckets (max_seqs 0) first, ascending within
 * max_seq_len; then token buckets, ascending, each of at most
 * KERNEL_MAX_SEQS sequences and no more sequences than tokens. */
static int prd_bucket_len(prd *r, prd_cur *c, uint32_t i, uint32_t first, uint32_t len) {
    plan *p = r->p;
    sched_bucket *b = &p->buckets[i];
    const sched_bucket *prev = i > first ? &p->buckets[i - 1] : NULL;
    uint64_t len_at = c->at;
    c->at = len_at + 12; /* the max_seqs field */
    if (!b->max_seqs && prev && prev->max_seqs)
        return CUR_FAIL(c, "field max_seqs: 0 after bucket %u's token bucket (length buckets come first)", i - 1);
    if (b->max_seqs && !prev)
        return CUR_FAIL(c, "field max_seqs: %u in bucket %u, the first of its variant (a variant has a length bucket "
                        "first)", (unsigned)b->max_seqs, i);
    if (b->max_seqs && (b->max_seqs < 1 || b->max_seqs > KERNEL_MAX_SEQS || (uint32_t)b->max_seqs > len))
        return CUR_FAIL(c, "field max_seqs: %u is not in 1..%d and at most the bucket's %u tokens",
                        (unsigned)b->max_seqs, KERNEL_MAX_SEQS, len);
    c->at = len_at;
    if (!b->max_seqs && (len < 1 || len > (uint64_t)p->max_seq_len))
        return CUR_FAIL(c, "field seq_len: %u is not in 1..%lld (max_seq_len)", len, (long long)p->max_seq_len);
    if (b->max_seqs && (len < 1 || len > KERNEL_MAX_BUCKET))
        return CUR_FAIL(c, "field seq_len: %u tokens is not in 1..%d", len, KERNEL_MAX_BUCKET);
    if (prev && !prev->max_seqs == !b->max_seqs && len <= (uint32_t)prev->seq_len)
        return CUR_FAIL(c, "field seq_len: %u does not follow bucket %u's %d (%s buckets ascend strictly)", len, i - 1,
                        prev->seq_len, b->max_seqs ? "token" : "length");
    b->seq_len = (int)len;
    return 0;
}

/* Format 8: the capability range of bucket record i (offset 28), which
 * starts a variant when it differs from record i - 1's; *first is the
 * first record of the variant it belongs to.  The ranges ascend from 0
 * without gap or overlap. */
static int prd_bucket_cc(prd_cur *c, const plan *p, uint32_t i, uint32_t *first) {
    sched_bucket *b = &p->buckets[i];
    const sched_bucket *prev = i > 0 ? &p->buckets[i - 1] : NULL;
    b->cc_min = prd_ld16(c->r->base + c->pos + 28);
    b->cc_max = prd_ld16(c->r->base + c->pos + 30);
    c->at = c->pos + 28;
    if (b->cc_min > b->cc_max)
        return CUR_FAIL(c, "field cc_min: %u is above cc_max %u", b->cc_min, b->cc_max);
    if (prev && prev->cc_min == b->cc_min && prev->cc_max == b->cc_max) return 0;
    if (!prev && b->cc_min != 0)
        return CUR_FAIL(c, "field cc_min: %u in bucket 0 (the first variant's range starts at capability 0)", b->cc_min);
    if (prev && (unsigned)b->cc_min != (unsigned)prev->cc_max + 1)
        return CUR_FAIL(c, "field cc_min: %u does not follow bucket %u's cc_max %u (a new variant's range starts "
                        "right after the last one's)", b->cc_min, i - 1, prev->cc_max);
    *first = i;
    return 0;
}

/* The variants: each has as many records as the first, with its lengths
 * and token counts in the same order, and the last covers capability
 * PLAN_CC_MAX.  Then nbuckets counts one variant's. */
static int prd_variants(prd *r, uint64_t off, uint32_t total) {
    plan *p = r->p;
    uint32_t per = 1, nv = 1, start = 0;
    while (per < total && p->buckets[per].cc_min == p->buckets[0].cc_min) per++;
    for (uint32_t i = per; i <= total; i++) {
        if (i < total && p->buckets[i].cc_min == p->buckets[i - 1].cc_min) continue;
        if (i - start != per) /* variant nv - 1 is records start .. i - 1 */
            return PRD_FAIL(r, off + (uint64_t)start * PLAN_BUCKET_RECORD_SIZE + 28,
                            "bucket %u: variant %u (capabilities %u..%u) has %u buckets, variant 0 has %u (every variant "
                            "has the same buckets)", start, nv - 1, p->buckets[start].cc_min,
                            p->buckets[start].cc_max, i - start, per);
        if (i < total) start = i, nv++;
    }
    for (uint32_t i = per; i < total; i++) {
        const sched_bucket *b = &p->buckets[i], *b0 = &p->buckets[i % per];
        if (b->seq_len != b0->seq_len || b->max_seqs != b0->max_seqs)
            return PRD_FAIL(r, off + (uint64_t)i * PLAN_BUCKET_RECORD_SIZE,
                            "bucket %u (seq_len %d, max_seqs %d) of variant %u is not variant 0's bucket %u (seq_len %d, "
                            "max_seqs %d): every variant has the same buckets", i, b->seq_len, b->max_seqs, i / per,
                            i % per, b0->seq_len, b0->max_seqs);
    }
    if (p->buckets[total - 1].cc_max != PLAN_CC_MAX)
        return PRD_FAIL(r, off + (uint64_t)(total - 1) * PLAN_BUCKET_RECORD_SIZE + 30,
                        "bucket %u: field cc_max: %u, the last variant's range ends at %u (every device has a variant)",
                        total - 1, p->buckets[total - 1].cc_max, PLAN_CC_MAX);
    p->nbuckets = (int)per;
    p->nvariants = (int)nv;
    return 0;
}

/* Bucket i's outputs are bucket 0's, in the same order: name, dtype,
 * columns and kind of rows (a token bucket's row per sequence is a length
 * bucket's one row), so an output index means the same in every bucket. */
static int prd_outputs_match(prd *r, int i, uint64_t first) {
    const sched_bucket *b0 = &r->p->buckets[0], *b = &r->p->buckets[i];
    if (b->noutputs != b0->noutputs)
        return PRD_FAIL(r, first, "bucket %d has %d outputs, bucket 0 has %d (every bucket has the same outputs)", i,
                        b->noutputs, b0->noutputs);
    for (int j = 0; j < b->noutputs; j++) {
        const sched_output *o = &b->outputs[j], *o0 = &b0->outputs[j];
        if (strcmp(o->name, o0->name) || o->dtype != o0->dtype || o->cols != o0->cols ||
            o->rows_are_seq != o0->rows_are_seq)
            return PRD_FAIL(r, first + (uint64_t)j * PLAN_OUTPUT_RECORD_SIZE,
                            "bucket %d output %d (\"%s\", %lld columns, %s) is not bucket 0's output %d (\"%s\", %lld "
                            "columns, %s)",
                            i, j, o->name, (long long)o->cols, o->rows_are_seq ? "per token" : "one row per request", j,
                            o0->name, (long long)o0->cols, o0->rows_are_seq ? "per token" : "one row per request");
    }
    return 0;
}

static int prd_schedules(prd *r) {
    plan *p = r->p;
    const prd_section *s = &r->sec[PLAN_SECTION_SCHEDULES];
    prd_where_section(r, PLAN_SECTION_SCHEDULES);
    uint64_t used = (uint64_t)r->nbuckets * PLAN_BUCKET_RECORD_SIZE;
    if (used > s->size)
        return PRD_FAIL(r, s->off, "the section has %llu bytes, the signature's %u bucket records alone need %llu",
                        (unsigned long long)s->size, r->nbuckets, (unsigned long long)used);
    if (!(p->buckets = calloc(r->nbuckets, sizeof p->buckets[0]))) return prd_oom(r);
    p->nbuckets = (int)r->nbuckets;

    /* The bucket records: lengths, counts, arenas; the counts must fill the section exactly. */
    uint64_t max_arena = 0;
    uint32_t first = 0;
    for (uint32_t i = 0; i < r->nbuckets; i++) {
        sched_bucket *b = &p->buckets[i];
        prd_cur c;
        prd_ctx(r, "bucket %u", i);
        if (prd_record(r, &c, s->off + (uint64_t)i * PLAN_BUCKET_RECORD_SIZE, PLAN_BUCKET_RECORD_SIZE)) return -1;
        /* max_seqs (offset 12) decides what seq_len may be: read it first */
        b->max_seqs = (int)prd_ld32(r->base + c.pos + 12);
        if (prd_bucket_cc(&c, p, i, &first)) return -1;
        if (prd_bucket_len(r, &c, i, first, cur_u32(&c))) return -1;
        uint32_t nsteps = cur_u32(&c);
        if (nsteps > (s->size - used) / PLAN_STEP_RECORD_SIZE)
            return CUR_FAIL(&c, "field nsteps: %u step records do not fit in the section (%llu bytes)", nsteps,
                            (unsigned long long)s->size);
        used += (uint64_t)nsteps * PLAN_STEP_RECORD_SIZE;
        uint32_t nout = cur_u32(&c);
        if (nout == 0) return CUR_FAIL(&c, "field noutputs: 0 (a bucket has at least one output)");
        if (nout > (s->size - used) / PLAN_OUTPUT_RECORD_SIZE)
            return CUR_FAIL(&c, "field noutputs: %u output records do not fit in the section (%llu bytes)", nout,
                            (unsigned long long)s->size);
        used += (uint64_t)nout * PLAN_OUTPUT_RECORD_SIZE;
        cur_u32(&c); /* max_seqs, checked with seq_len */
        b->arena_bytes = cur_u64(&c);
        if (b->arena_bytes > max_arena) max_arena = b->arena_bytes;
        /* format 7: the GEMM family's arrival counters; format 8: the capability range */
        b->counter_bytes = cur_u32(&c);
        if (b->counter_bytes % 4 || b->counter_bytes > PLAN_MAX_COUNTER_BYTES)
            return CUR_FAIL(&c, "field counter_bytes: %u is not a multiple of 4 in 0..%u", b->counter_bytes,
                            PLAN_MAX_COUNTER_BYTES);
        if (b->counter_bytes > p->counter_bytes) p->counter_bytes = b->counter_bytes;
        cur_take(&c, 4); /* format 8: cc_min, cc_max, read first */
        if (prd_record_done(&c)) return -1;
        /* Counts become the arrays' sizes only once the arrays exist (plan_free walks them). */
        if (nsteps && !(b->steps = calloc(nsteps, sizeof b->steps[0]))) return prd_oom(r);
        b->nsteps = (int)nsteps;
        if (!(b->outputs = calloc(nout, sizeof b->outputs[0]))) return prd_oom(r);
        b->noutputs = (int)nout;
    }
    r->ctx[0] = '\0';
    if (used != s->size)
        return PRD_FAIL(r, s->off + used, "%llu bytes after the last record (the bucket counts account for %llu of %llu)",
                        (unsigned long long)(s->size - used), (unsigned long long)used, (unsigned long long)s->size);

    if (prd_variants(r, s->off, r->nbuckets)) return -1;

    /* Then per bucket: its steps, then its outputs. */
    uint64_t at = s->off + (uint64_t)r->nbuckets * PLAN_BUCKET_RECORD_SIZE;
    for (int i = 0; i < (int)r->nbuckets; i++) {
        sched_bucket *b = &p->buckets[i];
        for (int j = 0; j < b->nsteps; j++, at += PLAN_STEP_RECORD_SIZE) {
            prd_cur c;
            prd_ctx(r, "bucket %d (seq_len %d) step %d", i, b->seq_len, j);
            if (prd_record(r, &c, at, PLAN_STEP_RECORD_SIZE) || prd_step(r, &c, i, (uint32_t)j, b, &b->steps[j]) ||
                prd_record_done(&c))
                return -1;
        }
        uint64_t first = at;
        for (int j = 0; j < b->noutputs; j++, at += PLAN_OUTPUT_RECORD_SIZE) {
            prd_cur c;
            prd_ctx(r, "bucket %d (seq_len %d) output %d", i, b->seq_len, j);
            if (prd_record(r, &c, at, PLAN_OUTPUT_RECORD_SIZE) || prd_output(&c, b, &b->outputs[j]) ||
                prd_record_done(&c))
                return -1;
        }
        if (prd_outputs_unique(r, b, i, first) || (i > 0 && prd_outputs_match(r, i, first))) return -1;
    }
    r->ctx[0] = '\0';
    if (p->arena_bytes != max_arena) {
        prd_where_section(r, PLAN_SECTION_SIGNATURE);
        return PRD_FAIL(r, r->sig_arena_off, "field arena_bytes: %llu, but the largest bucket arena is %llu",
                        (unsigned long long)p->arena_bytes, (unsigned long long)max_arena);
    }
    return 0;
}

/* The record's counts, which size the rest of the section. */
typedef struct prd_tok_counts {
    uint32_t nvocab, nmerges, nnorm, npre, nadded, nsingle, npair, data_bytes;
    uint64_t vocab_bytes;
} prd_tok_counts;

static int prd_tok_record(prd *r, prd_cur *c, plan_tokenizer *t, prd_tok_counts *k) {
    uint32_t v;
    if (prd_record(r, c, r->sec[PLAN_SECTION_TOKENIZER].off, PLAN_TOKENIZER_RECORD_SIZE) ||
        cur_enum(c, "model", "a tokenizer model (0 WordPiece, 1 BPE, 2 Unigram)", TOKDESC_MODEL_COUNT, &v))
        return -1;
    t->model = (tokdesc_model)v;
    if ((t->flags = cur_u32(c)) & ~(uint32_t)TOKDESC_FLAG_ALL)
        return CUR_FAIL(c, "field flags: 0x%x has unknown bits (known: 0x%x)", t->flags, TOKDESC_FLAG_ALL);
    if (cur_i64_min(c, "model_max_length", 0, &t->model_max_length) || cur_i32_min(c, "unk_id", -1, &t->unk_id) ||
        cur_i32_min(c, "pad_id", -1, &t->pad_id))
        return -1;
    t->max_input_chars_per_word = cur_u32(c);
    if (cur_str(c, "continuing_subword_prefix", 1, &t->continuing_subword_prefix)) return -1;
    k->nvocab = cur_u32(c);
    k->nmerges = cur_u32(c);
    k->vocab_bytes = cur_u64(c);
    k->nnorm = cur_u32(c);
    k->npre = cur_u32(c);
    k->nadded = cur_u32(c);
    k->nsingle = cur_u32(c);
    k->npair = cur_u32(c);
    k->data_bytes = cur_u32(c);
    if (cur_zero(c, 8, "reserved") || prd_record_done(c)) return -1;
    if (k->nvocab < 1 || k->nvocab > INT32_MAX / 4 || k->nmerges > INT32_MAX / 4 || k->nadded > (1u << 20) ||
        k->nnorm > PLAN_TOK_MAX_COMPONENTS || k->npre > PLAN_TOK_MAX_COMPONENTS || k->nsingle < 1 ||
        k->nsingle > 64 || k->npair < 1 || k->npair > 64 || k->vocab_bytes < k->nvocab || k->vocab_bytes > UINT32_MAX)
        return PRD_FAIL(r, c->at, "the counts are out of range: %u vocabulary entries in %llu bytes, %u merges, %u "
                        "normalizers, %u pre-tokenizers, %u added tokens, templates of %u and %u items", k->nvocab,
                        (unsigned long long)k->vocab_bytes, k->nmerges, k->nnorm, k->npre, k->nadded, k->nsingle,
                        k->npair);
    return 0;
}

/* The bytes the counts imply; the section must have exactly these. */
static uint64_t prd_tok_size(const plan_tokenizer *t, const prd_tok_counts *k) {
    uint64_t n = PLAN_TOKENIZER_RECORD_SIZE + k->vocab_bytes;
    n += (8 - n % 8) % 8;
    if (t->model == TOKDESC_MODEL_UNIGRAM) n += 8ull * k->nvocab;
    n += (uint64_t)PLAN_TOK_MERGE_SIZE * k->nmerges + (uint64_t)PLAN_TOK_NORMALIZER_SIZE * k->nnorm +
         (uint64_t)PLAN_TOK_PRETOKENIZER_SIZE * k->npre + (uint64_t)PLAN_TOK_ADDED_SIZE * k->nadded +
         (uint64_t)PLAN_TOK_ITEM_SIZE * (k->nsingle + k->npair) + k->data_bytes;
    return n;
}

/* The vocabulary: nvocab NUL-terminated texts filling vocab_bytes exactly, then zeros to 8. */
static int prd_tok_vocab(prd *r, uint64_t at, plan_tokenizer *t, const prd_tok_counts *k, uint64_t *next) {
    const uint8_t *b = r->base + at;
    if (b[k->vocab_bytes - 1] != 0) return PRD_FAIL(r, at + k->vocab_bytes - 1, "the vocabulary does not end with a NUL");
    if (!(t->vocab_text = malloc(k->vocab_bytes)) || !(t->vocab_off = malloc(k->nvocab * sizeof *t->vocab_off)))
        return prd_oom(r);
    memcpy(t->vocab_text, b, k->vocab_bytes);
    t->vocab_text_len = k->vocab_bytes;
    uint32_t id = 0;
    for (uint64_t i = 0, start = 0; i < k->vocab_bytes; i++) {
        if (b[i]) continue;
        if (id == k->nvocab)
            return PRD_FAIL(r, at + i, "the vocabulary text holds more than its %u entries", k->nvocab);
        t->vocab_off[id++] = (uint32_t)start;
        start = i + 1;
    }
    if (id != k->nvocab) return PRD_FAIL(r, at, "the vocabulary text holds %u entries, the record says %u", id, k->nvocab);
    t->nvocab = (int32_t)k->nvocab;
    uint64_t end = at + k->vocab_bytes, pad = (8 - (end - r->sec[PLAN_SECTION_TOKENIZER].off) % 8) % 8;
    for (uint64_t i = 0; i < pad; i++)
        if (r->base[end + i]) return PRD_FAIL(r, end + i, "byte 0x%02x where the format has zero padding", r->base[end + i]);
    *next = end + pad;
    return 0;
}

/* Scores (Unigram) and merges. */
static int prd_tok_model(prd *r, uint64_t *at, plan_tokenizer *t, const prd_tok_counts *k) {
    prd_cur c;
    if (t->model == TOKDESC_MODEL_UNIGRAM) {
        if (!(t->scores = malloc(k->nvocab * sizeof *t->scores))) return prd_oom(r);
        if (prd_record(r, &c, *at, 8ull * k->nvocab)) return -1;
        for (uint32_t i = 0; i < k->nvocab; i++)
            if (!isfinite(t->scores[i] = cur_f64(&c))) return CUR_FAIL(&c, "the score of entry %u is not finite", i);
        *at += 8ull * k->nvocab;
    }
    if (k->nmerges) {
        if (!(t->merges = malloc(3ull * k->nmerges * sizeof *t->merges))) return prd_oom(r);
        if (prd_record(r, &c, *at, (uint64_t)PLAN_TOK_MERGE_SIZE * k->nmerges)) return -1;
        for (uint32_t i = 0; i < 3 * k->nmerges; i++) {
            t->merges[i] = cur_i32(&c);
            if (t->merges[i] < 0 || (uint32_t)t->merges[i] >= k->nvocab)
                return CUR_FAIL(&c, "merge %u: id %d outside the vocabulary (0..%u)", i / 3, (int)t->merges[i],
                                k->nvocab - 1);
        }
        t->nmerges = (int32_t)k->nmerges;
        *at += (uint64_t)PLAN_TOK_MERGE_SIZE * k->nmerges;
    }
    return 0;
}

/* Normalizer and pre-tokenizer records. */
static int prd_tok_components(prd *r, uint64_t *at, plan_tokenizer *t, const prd_tok_counts *k, uint64_t *data_sum) {
    prd_cur c;
    uint32_t v;
    t->normalizers = calloc(k->nnorm + 1, sizeof *t->normalizers);
    t->pretokenizers = calloc(k->npre + 1, sizeof *t->pretokenizers);
    if (!t->normalizers || !t->pretokenizers) return prd_oom(r);
    for (uint32_t i = 0; i < k->nnorm; i++, *at += PLAN_TOK_NORMALIZER_SIZE) {
        tokdesc_normalizer *n = &t->normalizers[i];
        prd_ctx(r, "normalizer %u", i);
        t->nnormalizers = (int)i + 1;
        if (prd_record(r, &c, *at, PLAN_TOK_NORMALIZER_SIZE) ||
            cur_enum(&c, "kind", "a normalizer (0..4)", TOKDESC_NORM_COUNT, &v))
            return -1;
        n->kind = (tokdesc_norm_kind)v;
        for (int j = 0; j < 4; j++) n->p[j] = cur_i32(&c);
        if (cur_str(&c, "pattern", 1, &n->pattern) || cur_str(&c, "content", 1, &n->content)) return -1;
        n->data_len = cur_u32(&c);
        *data_sum += n->data_len;
        if (prd_record_done(&c)) return -1;
    }
    for (uint32_t i = 0; i < k->npre; i++, *at += PLAN_TOK_PRETOKENIZER_SIZE) {
        tokdesc_pretokenizer *p = &t->pretokenizers[i];
        prd_ctx(r, "pre-tokenizer %u", i);
        t->npretokenizers = (int)i + 1;
        if (prd_record(r, &c, *at, PLAN_TOK_PRETOKENIZER_SIZE) ||
            cur_enum(&c, "kind", "a pre-tokenizer (0..3)", TOKDESC_PRE_COUNT, &v) ||
            cur_bool(&c, "add_prefix_space", &p->add_prefix_space) || cur_bool(&c, "trim_offsets", &p->trim_offsets) ||
            cur_bool(&c, "use_regex", &p->use_regex))
            return -1;
        p->kind = (tokdesc_pre_kind)v;
        p->replacement = cur_u32(&c);
        if (cur_enum(&c, "prepend_scheme", "a prepend scheme (0 always, 1 first, 2 never)", 3, &v)) return -1;
        p->prepend_scheme = (tokdesc_prepend)v;
        if (cur_bool(&c, "split", &p->split) || cur_zero(&c, 4, "reserved") || prd_record_done(&c)) return -1;
    }
    r->ctx[0] = '\0';
    return 0;
}

/* Added tokens and the two templates. */
static int prd_tok_added(prd *r, uint64_t *at, plan_tokenizer *t, const prd_tok_counts *k) {
    prd_cur c;
    uint32_t v;
    t->added = calloc(k->nadded + 1, sizeof *t->added);
    t->single = calloc(k->nsingle, sizeof *t->single);
    t->pair = calloc(k->npair, sizeof *t->pair);
    if (!t->added || !t->single || !t->pair) return prd_oom(r);
    for (uint32_t i = 0; i < k->nadded; i++, *at += PLAN_TOK_ADDED_SIZE) {
        tokdesc_added *a = &t->added[i];
        prd_ctx(r, "added token %u", i);
        t->nadded = (int)i + 1;
        if (prd_record(r, &c, *at, PLAN_TOK_ADDED_SIZE)) return -1;
        a->id = cur_i32(&c);
        if (cur_str(&c, "content", 0, &a->content)) return -1;
        a->flags = cur_u32(&c);
        if (prd_record_done(&c)) return -1;
    }
    for (uint32_t i = 0; i < k->nsingle + k->npair; i++, *at += PLAN_TOK_ITEM_SIZE) {
        int pair = i >= k->nsingle;
        tokdesc_item *it = pair ? &t->pair[i - k->nsingle] : &t->single[i];
        prd_ctx(r, "%s template item %u", pair ? "pair" : "single", pair ? i - k->nsingle : i);
        if (prd_record(r, &c, *at, PLAN_TOK_ITEM_SIZE) ||
            cur_enum(&c, "kind", "a template item (0 special, 1 $A, 2 $B)", 3, &v))
            return -1;
        it->kind = (tokdesc_item_kind)v;
        it->id = cur_i32(&c);
        it->type_id = cur_i32(&c);
        if (prd_record_done(&c)) return -1;
    }
    t->nsingle = (int)k->nsingle;
    t->npair = (int)k->npair;
    r->ctx[0] = '\0';
    return 0;
}

/* The Precompiled maps, in normalizer order. */
static int prd_tok_data(prd *r, uint64_t at, plan_tokenizer *t) {
    for (int i = 0; i < t->nnormalizers; i++) {
        tokdesc_normalizer *n = &t->normalizers[i];
        if (!n->data_len) continue;
        if (!(n->data = malloc(n->data_len))) return prd_oom(r);
        memcpy(n->data, r->base + at, n->data_len);
        at += n->data_len;
    }
    return 0;
}

/* LABELS: one string index per class, 1 .. PLAN_MAX_LABELS of them. */
static int prd_labels(prd *r) {
    const prd_section *s = &r->sec[PLAN_SECTION_LABELS];
    plan *p = r->p;
    if (!s->present) return 0;
    prd_where_section(r, PLAN_SECTION_LABELS);
    if (s->size == 0 || s->size % 4 || s->size / 4 > PLAN_MAX_LABELS)
        return PRD_FAIL(r, s->off, "the section has %llu bytes (expected 4 bytes per label, 1 to %d labels)",
                        (unsigned long long)s->size, PLAN_MAX_LABELS);
    int n = (int)(s->size / 4);
    if (!(p->labels = calloc((size_t)n, sizeof *p->labels))) return prd_oom(r);
    prd_cur c;
    if (prd_record(r, &c, s->off, s->size)) return -1;
    for (; p->nlabels < n; p->nlabels++) {
        prd_ctx(r, "label %d", p->nlabels);
        if (cur_str(&c, "name", 0, &p->labels[p->nlabels])) return -1;
    }
    return prd_record_done(&c);
}

static int prd_tokenizer(prd *r) {
    plan_tokenizer *t = &r->p->tokenizer;
    const prd_section *s = &r->sec[PLAN_SECTION_TOKENIZER];
    if (!s->present) return 0;
    prd_where_section(r, PLAN_SECTION_TOKENIZER);
    if (s->size < PLAN_TOKENIZER_RECORD_SIZE)
        return PRD_FAIL(r, s->off, "the section has %llu bytes, the tokenizer record alone needs %d",
                        (unsigned long long)s->size, PLAN_TOKENIZER_RECORD_SIZE);
    prd_cur c;
    prd_tok_counts k;
    uint64_t at, data_sum = 0;
    if (prd_tok_record(r, &c, t, &k)) return -1;
    if (prd_tok_size(t, &k) != s->size)
        return PRD_FAIL(r, s->off, "the section has %llu bytes, its counts make %llu", (unsigned long long)s->size,
                        (unsigned long long)prd_tok_size(t, &k));
    if (prd_tok_vocab(r, s->off + PLAN_TOKENIZER_RECORD_SIZE, t, &k, &at) || prd_tok_model(r, &at, t, &k) ||
        prd_tok_components(r, &at, t, &k, &data_sum) || prd_tok_added(r, &at, t, &k))
        return -1;
    if (data_sum != k.data_bytes)
        return PRD_FAIL(r, s->off, "the normalizers' data add up to %llu bytes, the record says %u",
                        (unsigned long long)data_sum, k.data_bytes);
    if (prd_tok_data(r, at, t)) return -1;
    diag td;
    diag_init(&td);
    if (tokdesc_check(t, &td)) return PRD_FAIL(r, s->off, "the tokenizer description: %s", td.text);
    t->present = 1;
    return 0;
}

/* Every kernel a step list launches is in every image whose devices run
 * that list (plan_image_serves): a device never binds a kernel its image
 * lacks.  Reported at the image's stats record of the kernel. */
static int prd_carried(prd *r) {
    const plan *p = r->p;
    prd_where_section(r, PLAN_SECTION_IMAGES);
    for (int i = 0; i < p->nimages; i++)
        for (int v = 0; v < plan_variant_count(p); v++) {
            if (!plan_image_serves(p, i, v)) continue;
            const sched_bucket *bs = plan_variant_buckets(p, v);
            for (int b = 0; b < p->nbuckets; b++)
                for (int j = 0; j < bs[b].nsteps; j++) {
                    const sched_step *st = &bs[b].steps[j];
                    int k = st->launch.kernel;
                    if (st->kind != SCHED_STEP_KERNEL || plan_image_carries(p, i, k)) continue;
                    uint64_t at = r->sec[PLAN_SECTION_IMAGES].off + (uint64_t)p->nimages * PLAN_IMAGE_RECORD_SIZE +
                                  ((uint64_t)i * (uint64_t)p->nkernels + (uint64_t)k) * PLAN_STATS_RECORD_SIZE;
                    return PRD_FAIL(r, at,
                                    "image %d (%s) does not carry kernel %d (%s), which step list %d (capabilities "
                                    "%u..%u) launches in bucket %d step %d, and devices that run that list load this "
                                    "image", i, p->images[i].arch, k, p->kernels[k].entry, v, bs[b].cc_min, bs[b].cc_max,
                                    (int)(v * p->nbuckets + b), j);
                }
        }
    return 0;
}

static int prd_parse(plan *p, const uint8_t *base, uint64_t len, const char *name, diag *d) {
    prd r;
    memset(&r, 0, sizeof r);
    r.base = base;
    r.len = len;
    r.name = name;
    r.d = d;
    r.p = p;
    r.where = "header";
    if (prd_header(&r) || prd_table(&r) || prd_strings(&r) || prd_signature(&r) || prd_kernels(&r) ||
        prd_images(&r) || prd_schedules(&r) || prd_carried(&r) || prd_tokenizer(&r) || prd_labels(&r))
        return -1;
    return 0;
}

/* ---- entry points -------------------------------------------------------- */

int plan_read_memory(plan *p, const void *buf, size_t len, const char *name, diag *d) {
    plan_init(p);
    if (!name) name = "<memory>";
    if (len == 0) return prd_parse(p, NULL, 0, name, d);
    size_t cap = (len + PLAN_SECTION_ALIGN - 1) / PLAN_SECTION_ALIGN * PLAN_SECTION_ALIGN;
    if (cap < len) return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory while reading the plan", name);
    void *copy = aligned_alloc(PLAN_SECTION_ALIGN, cap);
    if (!copy) return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory while reading the plan", name);
    memcpy(copy, buf, len);
    p->map = copy;
    p->map_size = len;
    p->map_heap = 1;
    if (prd_parse(p, copy, len, name, d)) {
        plan_free(p);
        return -1;
    }
    return 0;
}

/* The file's SHA-256 against the digest the caller pinned (hex, any case). */
static int prd_pin(const void *m, size_t len, const char *path, const char *sha256, diag *d) {
    char got[SHA256_HEX_SIZE];
    sha256_hex(m, len, got);
    if (sha256_hex_equal(got, sha256)) return 0;
    return diag_set(d, DIAG_CODE_INPUT,
                    "%s: SHA-256 %s, not the pinned %s: this is not the plan that was deployed (nothing in it was used)",
                    path, got, sha256);
}

int plan_read_pinned(plan *p, const char *path, const char *sha256, diag *d) {
    plan_init(p);
    if (sha256 && !sha256_hex_valid(sha256))
        return diag_set(d, DIAG_CODE_USAGE, "%s: the pinned digest '%.80s' is not 64 hex digits (a SHA-256)", path, sha256);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return diag_set(d, DIAG_CODE_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return diag_set(d, DIAG_CODE_INPUT, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return diag_set(d, DIAG_CODE_INPUT, "%s: not a regular file", path);
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) {
        close(fd);
        if (sha256 && prd_pin("", 0, path, sha256, d)) return -1;
        return prd_parse(p, NULL, 0, path, d);
    }
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED) return diag_set(d, DIAG_CODE_INPUT, "%s: cannot map: %s", path, strerror(e));
    p->map = m;
    p->map_size = len;
    /* The digest is over the mapped bytes, before any of them is parsed. */
    if ((sha256 && prd_pin(m, len, path, sha256, d)) || prd_parse(p, m, len, path, d)) {
        plan_free(p);
        return -1;
    }
    return 0;
}

int plan_read(plan *p, const char *path, diag *d) { return plan_read_pinned(p, path, NULL, d); }

void plan_sha256(const plan *p, char out[65]) { sha256_hex(p->map ? p->map : "", p->map ? p->map_size : 0, out); }
