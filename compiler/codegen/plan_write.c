/*
 * plan_write — serialise a plan into the file format of docs/plan-format.md.
 *
 * The writer encodes field by field, never by dumping a struct: every value
 * goes through a little-endian put of an explicit width, so the bytes do not
 * depend on the host's struct layout, padding or byte order, and every pad
 * or reserved byte is one the writer put there as zero.  Parts of the
 * in-memory plan that the format does not carry (the inactive half of a
 * step's launch/gemm union, argument slots past nargs) are never read, so
 * whatever they hold cannot leak into the file.  That, a string table built
 * in first-use order along one fixed walk of the plan, and the absence of
 * timestamps or paths make the output a pure function of the plan: the same
 * plan always gives the same bytes.
 *
 * The small sections are built in memory; the weights and the image bytes
 * (the bulk of a plan) are written straight from the plan's own buffers, and
 * their checksums computed over them in place, so writing never holds a
 * second copy of a gigabyte of weights.  Every section starts on a 256-byte
 * boundary and the gaps are zeros; kernel texts go back to back and images
 * each at the next 256-byte boundary — the one layout the reader accepts.
 *
 * Atomicity and trust: the file is written to a temporary beside the
 * destination (fileutil's file_atomic), then — before the rename — read back
 * with plan_read, the runtime's own validator.  So a plan that the runtime
 * would reject (a kernel index out of range, a ref outside its buffer, a
 * missing argument) is refused at compile time with the reader's message,
 * and on any failure nothing is left at the path (an older file there is
 * kept).  Only what cannot be encoded at all is checked here first: NULL
 * pointers, negative counts, more than eight launch arguments.
 */
#include "plan_write.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "fileutil.h"
#include "plan_format.h"

/* ---- a growable little-endian byte buffer -------------------------------- */

typedef struct pw_buf {
    uint8_t *data;
    size_t len, cap;
    int oom;
} pw_buf;

static void pw_put(pw_buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    if (src) memcpy(b->data + b->len, src, n);
    else memset(b->data + b->len, 0, n);
    b->len += n;
}

static void pw_u8(pw_buf *b, uint8_t v) { pw_put(b, &v, 1); }
static void pw_u16(pw_buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    pw_put(b, x, 2);
}
static void pw_u32(pw_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    pw_put(b, x, 4);
}
static void pw_u64(pw_buf *b, uint64_t v) {
    pw_u32(b, (uint32_t)v);
    pw_u32(b, (uint32_t)(v >> 32));
}
static void pw_i32(pw_buf *b, int32_t v) { pw_u32(b, (uint32_t)v); }
static void pw_i64(pw_buf *b, int64_t v) { pw_u64(b, (uint64_t)v); }
static void pw_f32(pw_buf *b, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    pw_u32(b, u);
}
static void pw_f64(pw_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    pw_u64(b, u);
}
static void pw_zero(pw_buf *b, size_t n) { pw_put(b, NULL, n); }

/* Bucket records: every variant's (plan.h). */
static int pw_records(const plan *p) { return plan_variant_count(p) * p->nbuckets; }

/* ---- the string table: deduplicated, in first-use order ------------------ */

typedef struct pw_strtab {
    pw_buf bytes;
    uint32_t *slot;              /* open addressing: offset + 1, 0 = empty */
    size_t nslots, count;
    int oom;
} pw_strtab;

static uint64_t pw_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static int pw_strtab_grow(pw_strtab *t) {
    size_t n = t->nslots ? t->nslots * 2 : 64;
    uint32_t *slot = calloc(n, sizeof slot[0]);
    if (!slot) return -1;
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slot[i]) continue;
        size_t j = pw_hash((const char *)t->bytes.data + t->slot[i] - 1) & (n - 1);
        while (slot[j]) j = (j + 1) & (n - 1);
        slot[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = slot;
    t->nslots = n;
    return 0;
}

/* Index of s in the table (added on first use); PLAN_STR_NONE for NULL. */
static uint32_t pw_str(pw_strtab *t, const char *s) {
    if (!s) return PLAN_STR_NONE;
    if (t->oom) return 0;
    if ((t->count + 1) * 2 > t->nslots && pw_strtab_grow(t)) {
        t->oom = 1;
        return 0;
    }
    size_t j = pw_hash(s) & (t->nslots - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslots - 1))
        if (strcmp((const char *)t->bytes.data + t->slot[j] - 1, s) == 0) return t->slot[j] - 1;
    size_t n = strlen(s) + 1;
    if (t->bytes.len + n >= PLAN_STR_NONE) {
        t->oom = 1;
        return 0;
    }
    uint32_t off = (uint32_t)t->bytes.len;
    pw_put(&t->bytes, s, n);
    if (t->bytes.oom) {
        t->oom = 1;
        return 0;
    }
    t->slot[j] = off + 1;
    t->count++;
    return off;
}

/* ---- sections: pieces of bytes, NULL data meaning zeros ------------------ */

typedef struct pw_piece {
    const uint8_t *data;
    uint64_t len;
} pw_piece;

typedef struct pw_section {
    uint32_t kind;
    pw_buf buf;                  /* owned bytes of the small sections */
    pw_piece *pieces;
    int npieces, cap;
    uint64_t size, off;
    uint32_t crc, name;
    int present;
} pw_section;

static int pw_section_add(pw_section *s, const uint8_t *data, uint64_t len) {
    if (s->npieces == s->cap) {
        int cap = s->cap ? s->cap * 2 : 4;
        pw_piece *p = realloc(s->pieces, (size_t)cap * sizeof p[0]);
        if (!p) return -1;
        s->pieces = p;
        s->cap = cap;
    }
    s->pieces[s->npieces++] = (pw_piece){data, len};
    s->size += len;
    return 0;
}

static const uint8_t pw_zeros[PLAN_SECTION_ALIGN];

static uint32_t pw_section_crc(const pw_section *s) {
    uint32_t crc = 0;
    for (int i = 0; i < s->npieces; i++) {
        const pw_piece *pc = &s->pieces[i];
        if (pc->data) crc = crc32c_update(crc, pc->data, (size_t)pc->len);
        else
            for (uint64_t left = pc->len; left;) {
                size_t n = left < sizeof pw_zeros ? (size_t)left : sizeof pw_zeros;
                crc = crc32c_update(crc, pw_zeros, n);
                left -= n;
            }
    }
    return crc;
}

static int pw_write_zeros(file_atomic *fa, uint64_t n) {
    while (n) {
        size_t k = n < sizeof pw_zeros ? (size_t)n : sizeof pw_zeros;
        if (file_atomic_write(fa, pw_zeros, k)) return -1;
        n -= k;
    }
    return 0;
}

/* ---- structural checks: what could not even be encoded ------------------- */

__attribute__((format(printf, 3, 4))) static int pw_fail(diag *d, const char *path, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return diag_set(d, DIAG_CODE_INTERNAL, "%s: cannot write the plan: %s", path, msg);
}

/* The description must be one the reader accepts, and its strings fit the string table's rules. */
static int pw_tokenizer_check(const plan_tokenizer *t, const char *path, diag *d) {
    diag td;
    diag_init(&td);
    if (tokdesc_check(t, &td)) return pw_fail(d, path, "the tokenizer: %s", td.text);
    if (t->continuing_subword_prefix && strlen(t->continuing_subword_prefix) > PLAN_MAX_STRING)
        return pw_fail(d, path, "the tokenizer's continuing-subword prefix is too long");
    for (int i = 0; i < t->nadded; i++)
        if (strlen(t->added[i].content) > PLAN_MAX_STRING)
            return diag_set(d, DIAG_CODE_INPUT, "%s: cannot write the plan: added token %d is %zu bytes long (a plan "
                            "holds at most %d)", path, i, strlen(t->added[i].content), PLAN_MAX_STRING);
    if (t->vocab_text_len > UINT32_MAX / 2)
        return diag_set(d, DIAG_CODE_INPUT, "%s: cannot write the plan: the vocabulary's text is %zu bytes", path,
                        t->vocab_text_len);
    return 0;
}

static int pw_check(const plan *p, const char *path, diag *d) {
    if (!p->model_name) return pw_fail(d, path, "it has no model name");
    if (!p->producer) return pw_fail(d, path, "it has no producer");
    if (p->weights_size && !p->weights) return pw_fail(d, path, "%llu bytes of weights but no data",
                                                      (unsigned long long)p->weights_size);
    if (p->nkernels < 0 || (p->nkernels && !p->kernels)) return pw_fail(d, path, "bad kernel table (%d)", p->nkernels);
    for (int i = 0; i < p->nkernels; i++) {
        const plan_kernel *k = &p->kernels[i];
        if (!k->entry || !k->source) return pw_fail(d, path, "kernel %d has no %s", i, k->entry ? "source" : "entry name");
    }
    if (p->nimages < 0 || (p->nimages && !p->images)) return pw_fail(d, path, "bad image table (%d)", p->nimages);
    for (int i = 0; i < p->nimages; i++) {
        const plan_image *im = &p->images[i];
        if (!memchr(im->arch, 0, sizeof im->arch))
            return pw_fail(d, path, "image %d: arch is not NUL-terminated within %zu bytes", i, sizeof im->arch);
        if (im->size && !im->data) return pw_fail(d, path, "image %d (%s) has %zu bytes but no data", i, im->arch, im->size);
    }
    if (p->nbuckets < 0 || (p->nbuckets && !p->buckets)) return pw_fail(d, path, "bad bucket table (%d)", p->nbuckets);
    if (p->nvariants < 0) return pw_fail(d, path, "bad variant count (%d)", p->nvariants);
    for (int i = 0; i < pw_records(p); i++) {
        const sched_bucket *b = &p->buckets[i];
        if (b->nsteps < 0 || (b->nsteps && !b->steps)) return pw_fail(d, path, "bucket %d: bad step list", i);
        if (b->noutputs < 0 || (b->noutputs && !b->outputs)) return pw_fail(d, path, "bucket %d: bad output list", i);
        for (int j = 0; j < b->nsteps; j++) {
            const sched_step *st = &b->steps[j];
            if (!st->name) return pw_fail(d, path, "bucket %d step %d has no name", i, j);
            if (st->kind == SCHED_STEP_KERNEL && (st->launch.nargs < 0 || st->launch.nargs > KERNEL_MAX_ARGS))
                return pw_fail(d, path, "bucket %d step %d (%s): %d launch arguments (at most %d)", i, j, st->name,
                               st->launch.nargs, KERNEL_MAX_ARGS);
        }
        for (int j = 0; j < b->noutputs; j++)
            if (!b->outputs[j].name) return pw_fail(d, path, "bucket %d output %d has no name", i, j);
    }
    const plan_tokenizer *t = &p->tokenizer;
    if (t->present && pw_tokenizer_check(t, path, d)) return -1;
    return 0;
}

/* ---- encoders, one per record of the specification ----------------------- */

static void pw_ref(pw_buf *b, sched_ref r) {
    pw_u32(b, (uint32_t)r.buf);
    pw_u32(b, 0);
    pw_u64(b, r.offset);
}

static void pw_signature(pw_buf *b, pw_strtab *st, const plan *p) {
    pw_u32(b, pw_str(st, p->model_name));
    pw_u32(b, (uint32_t)p->precision);
    pw_i64(b, p->max_seq_len);
    pw_i64(b, p->hidden);
    pw_i64(b, p->vocab_size);
    pw_i64(b, p->type_vocab_size);
    pw_u32(b, (uint32_t)p->has_token_type_ids);
    pw_u32(b, (uint32_t)p->has_attention_mask);
    pw_i32(b, p->token_type_default);
    pw_i32(b, p->attention_mask_default);
    pw_u64(b, p->arena_bytes);
    pw_u32(b, (uint32_t)p->nkernels);
    pw_u32(b, (uint32_t)p->nimages);
    pw_u32(b, (uint32_t)pw_records(p));
    pw_u32(b, (uint32_t)p->fusion);
}

static void pw_kernel(pw_buf *b, pw_strtab *st, const plan_kernel *k, uint64_t src_off, uint64_t src_len) {
    const kernel_spec *s = &k->spec;
    pw_u32(b, pw_str(st, k->entry));
    pw_u32(b, (uint32_t)k->nargs);
    pw_u64(b, src_off);
    pw_u64(b, src_len);
    pw_u32(b, (uint32_t)s->kind);
    pw_u32(b, (uint32_t)s->dtype);
    pw_i32(b, s->bucket);
    pw_i32(b, s->hidden);
    pw_f32(b, s->eps);
    pw_i32(b, s->ngathers);
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++) pw_u32(b, (uint32_t)s->gather_index[g]);
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++) pw_i32(b, s->table_rows[g]);
    pw_u32(b, (uint32_t)s->has_bias);
    pw_u32(b, (uint32_t)s->has_residual);
    pw_i32(b, s->heads);
    pw_i32(b, s->head_dim);
    pw_f32(b, s->scale);
    pw_i32(b, s->qkv_ld);
    pw_i32(b, s->q_off);
    pw_i32(b, s->k_off);
    pw_i32(b, s->v_off);
    pw_i32(b, s->ctx_ld);
    pw_i32(b, s->n);
    pw_i32(b, s->k);
    pw_i32(b, s->x_ld);
    pw_i32(b, s->out_ld);
    pw_i32(b, s->res_ld);
    pw_u32(b, (uint32_t)s->has_act);
    pw_u32(b, (uint32_t)s->act);
    pw_u32(b, (uint32_t)s->pool_mode);
    pw_u32(b, (uint32_t)s->normalize);
    pw_i32(b, s->qtile);
    pw_i32(b, s->pad_id); /* format 6 (the families) */
    pw_i32(b, s->bias_ld);
    /* format 7: the GEMM family's tile and split, then token buckets */
    pw_i32(b, s->tile_m);
    pw_i32(b, s->tile_n);
    pw_i32(b, s->splits);
    pw_u32(b, (uint32_t)s->packed);
    for (int i = 0; i < 4; i++) pw_i32(b, s->seq_qtile[i]);
}

static void pw_step(pw_buf *b, pw_strtab *st, const sched_step *s) {
    pw_u32(b, (uint32_t)s->kind);
    pw_u32(b, pw_str(st, s->name));
    pw_f64(b, s->flops);
    pw_u64(b, s->min_hbm_bytes);
    if (s->kind == SCHED_STEP_GEMM) {
        const sched_gemm *g = &s->gemm;
        pw_u32(b, (uint32_t)g->transa);
        pw_u32(b, (uint32_t)g->transb);
        pw_i64(b, g->m);
        pw_i64(b, g->n);
        pw_i64(b, g->k);
        pw_i64(b, g->lda);
        pw_i64(b, g->ldb);
        pw_i64(b, g->ldc);
        pw_i64(b, g->ldd);
        pw_i64(b, g->stride_a);
        pw_i64(b, g->stride_b);
        pw_i64(b, g->stride_c);
        pw_i64(b, g->stride_d);
        pw_i32(b, g->batch_count);
        pw_u32(b, (uint32_t)g->ab_type);
        pw_u32(b, (uint32_t)g->cd_type);
        pw_u32(b, (uint32_t)g->bias_type);
        pw_f32(b, g->alpha);
        pw_f32(b, g->beta);
        pw_u32(b, (uint32_t)g->epilogue);
        pw_u32(b, 0);
        pw_ref(b, g->a);
        pw_ref(b, g->b);
        pw_ref(b, g->c);
        pw_ref(b, g->d);
        pw_ref(b, g->bias);
        pw_zero(b, PLAN_STEP_PAYLOAD_SIZE - PLAN_GEMM_PAYLOAD_USED);
    } else {
        /* Any other kind value is written as a launch; the read-back rejects it. */
        const sched_launch *l = &s->launch;
        pw_u32(b, (uint32_t)l->kernel);
        for (int i = 0; i < 3; i++) pw_u32(b, l->dims.grid[i]);
        for (int i = 0; i < 3; i++) pw_u32(b, l->dims.block[i]);
        pw_u32(b, l->dims.shared_bytes);
        pw_u32(b, (uint32_t)l->nargs);
        pw_u32(b, 0);
        for (int i = 0; i < KERNEL_MAX_ARGS; i++) {
            if (i < l->nargs) pw_ref(b, l->args[i]);
            else pw_zero(b, PLAN_REF_SIZE);
        }
        pw_zero(b, PLAN_STEP_PAYLOAD_SIZE - 40 - KERNEL_MAX_ARGS * PLAN_REF_SIZE);
    }
}

static void pw_output(pw_buf *b, pw_strtab *st, const sched_output *o) {
    pw_u32(b, pw_str(st, o->name));
    pw_u32(b, (uint32_t)o->dtype);
    pw_ref(b, o->ref);
    pw_u32(b, (uint32_t)o->rows_are_seq);
    pw_u32(b, (uint32_t)o->per_seq);
    pw_i64(b, o->cols);
    pw_i64(b, o->row_stride);
}

/* TOKENIZER (docs/plan-format.md): the record, then the description's arrays in a fixed order. */
static void pw_tokenizer(pw_buf *b, pw_strtab *st, const plan_tokenizer *t) {
    uint32_t data_bytes = 0;
    for (int i = 0; i < t->nnormalizers; i++) data_bytes += t->normalizers[i].data_len;
    pw_u32(b, (uint32_t)t->model);
    pw_u32(b, t->flags);
    pw_i64(b, t->model_max_length);
    pw_i32(b, t->unk_id);
    pw_i32(b, t->pad_id);
    pw_u32(b, t->max_input_chars_per_word);
    pw_u32(b, pw_str(st, t->continuing_subword_prefix));
    pw_u32(b, (uint32_t)t->nvocab);
    pw_u32(b, (uint32_t)t->nmerges);
    pw_u64(b, (uint64_t)t->vocab_text_len);
    pw_u32(b, (uint32_t)t->nnormalizers);
    pw_u32(b, (uint32_t)t->npretokenizers);
    pw_u32(b, (uint32_t)t->nadded);
    pw_u32(b, (uint32_t)t->nsingle);
    pw_u32(b, (uint32_t)t->npair);
    pw_u32(b, data_bytes);
    pw_zero(b, 8);
    pw_put(b, t->vocab_text, t->vocab_text_len);
    pw_zero(b, (8 - t->vocab_text_len % 8) % 8);
    for (int32_t i = 0; t->scores && i < t->nvocab; i++) pw_f64(b, t->scores[i]);
    for (int32_t i = 0; i < 3 * t->nmerges; i++) pw_i32(b, t->merges[i]);
    for (int i = 0; i < t->nnormalizers; i++) {
        const tokdesc_normalizer *n = &t->normalizers[i];
        pw_u32(b, (uint32_t)n->kind);
        for (int k = 0; k < 4; k++) pw_i32(b, n->p[k]);
        pw_u32(b, pw_str(st, n->pattern));
        pw_u32(b, pw_str(st, n->content));
        pw_u32(b, n->data_len);
    }
    for (int i = 0; i < t->npretokenizers; i++) {
        const tokdesc_pretokenizer *p = &t->pretokenizers[i];
        pw_u32(b, (uint32_t)p->kind);
        pw_u32(b, (uint32_t)p->add_prefix_space);
        pw_u32(b, (uint32_t)p->trim_offsets);
        pw_u32(b, (uint32_t)p->use_regex);
        pw_u32(b, p->replacement);
        pw_u32(b, (uint32_t)p->prepend_scheme);
        pw_u32(b, (uint32_t)p->split);
        pw_zero(b, 4);
    }
    for (int i = 0; i < t->nadded; i++) {
        pw_i32(b, t->added[i].id);
        pw_u32(b, pw_str(st, t->added[i].content));
        pw_u32(b, t->added[i].flags);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? t->npair : t->nsingle); i++) {
            const tokdesc_item *it = k ? &t->pair[i] : &t->single[i];
            pw_u32(b, (uint32_t)it->kind);
            pw_i32(b, it->id);
            pw_i32(b, it->type_id);
        }
    for (int i = 0; i < t->nnormalizers; i++) pw_put(b, t->normalizers[i].data, t->normalizers[i].data_len);
}

/* ---- the header ---------------------------------------------------------- */

static void pw_header(pw_buf *b, uint64_t file_size, uint64_t table_off, uint32_t nsections, uint32_t producer) {
    pw_put(b, PLAN_MAGIC, 8);
    pw_u32(b, PLAN_FORMAT_VERSION);
    pw_u32(b, PLAN_ENDIAN_PROBE);
    pw_u64(b, file_size);
    pw_u32(b, PLAN_HEADER_SIZE);
    pw_u32(b, 0); /* the checksum, filled in last */
    pw_u64(b, table_off);
    pw_u32(b, nsections);
    pw_u32(b, producer);
    static const uint8_t scalar[8] = {1, 2, 4, 8, 4, 8, 0, 0};
    for (int i = 0; i < 8; i++) pw_u8(b, scalar[i]);
    for (int i = 0; i < PLAN_RECORD_COUNT; i++) pw_u16(b, (uint16_t)plan_record_size((plan_record)i));
    pw_f32(b, 1.5f);
    pw_u32(b, 0);
    pw_f64(b, -2.5);
    pw_zero(b, PLAN_HEADER_SIZE - PLAN_HDR_RESERVED1);
}

/* ---- plan_write ---------------------------------------------------------- */

typedef struct pw_state {
    pw_strtab st;
    pw_section sec[PLAN_SECTION_KIND_END];
    pw_buf sources;              /* KERNEL_SOURCES */
    pw_buf head;                 /* header + section table */
    uint32_t producer;           /* string index */
} pw_state;

static void pw_state_free(pw_state *w) {
    free(w->st.bytes.data);
    free(w->st.slot);
    for (int k = 0; k < PLAN_SECTION_KIND_END; k++) {
        free(w->sec[k].buf.data);
        free(w->sec[k].pieces);
    }
    free(w->sources.data);
    free(w->head.data);
}

static uint64_t pw_align(uint64_t v) { return (v + PLAN_SECTION_ALIGN - 1) / PLAN_SECTION_ALIGN * PLAN_SECTION_ALIGN; }

/* Encode every section; the string table fills up along the way. */
static int pw_encode(pw_state *w, const plan *p) {
    /* Section names and the producer come first in the string table. */
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        pw_section *s = &w->sec[k];
        s->kind = k;
        s->present = k == PLAN_SECTION_TOKENIZER ? p->tokenizer.present : k == PLAN_SECTION_LABELS ? p->nlabels > 0 : 1;
        if (s->present) s->name = pw_str(&w->st, plan_section_kind_name(k));
    }
    w->producer = pw_str(&w->st, p->producer);

    pw_signature(&w->sec[PLAN_SECTION_SIGNATURE].buf, &w->st, p);

    pw_buf *kb = &w->sec[PLAN_SECTION_KERNELS].buf;
    for (int i = 0; i < p->nkernels; i++) {
        const plan_kernel *k = &p->kernels[i];
        uint64_t off = w->sources.len, len = strlen(k->source);
        pw_put(&w->sources, k->source, (size_t)len + 1);
        pw_kernel(kb, &w->st, k, off, len);
    }

    pw_buf *ib = &w->sec[PLAN_SECTION_IMAGES].buf;
    pw_section *idata = &w->sec[PLAN_SECTION_IMAGE_DATA];
    uint64_t data_off = 0;
    for (int i = 0; i < p->nimages; i++) {
        const plan_image *im = &p->images[i];
        uint8_t arch[sizeof im->arch] = {0};
        memcpy(arch, im->arch, strlen(im->arch)); /* zero after the NUL, whatever the struct held */
        pw_put(ib, arch, sizeof arch);
        pw_u32(ib, (uint32_t)im->kind);
        pw_u32(ib, 0);
        uint64_t pad = pw_align(data_off) - data_off;
        if (pad && pw_section_add(idata, NULL, pad)) return -1;
        data_off += pad;
        pw_u64(ib, data_off);
        pw_u64(ib, im->size);
        if (im->size && pw_section_add(idata, im->data, im->size)) return -1;
        data_off += im->size;
    }
    for (int i = 0; i < p->nimages; i++)
        for (int k = 0; k < p->nkernels; k++) {
            const plan_kernel_stats *s = p->images[i].stats ? &p->images[i].stats[k] : NULL;
            pw_i32(ib, s ? s->registers : 0);
            pw_i32(ib, s ? s->spill_stores : 0);
            pw_i32(ib, s ? s->spill_loads : 0);
            pw_i32(ib, s ? s->shared_static : 0);
        }

    pw_buf *sb = &w->sec[PLAN_SECTION_SCHEDULES].buf;
    int one = plan_variant_count(p) == 1; /* then its range is every capability */
    for (int i = 0; i < pw_records(p); i++) {
        const sched_bucket *b = &p->buckets[i];
        pw_u32(sb, (uint32_t)b->seq_len);
        pw_u32(sb, (uint32_t)b->nsteps);
        pw_u32(sb, (uint32_t)b->noutputs);
        pw_u32(sb, (uint32_t)b->max_seqs);
        pw_u64(sb, b->arena_bytes);
        pw_u32(sb, b->counter_bytes); /* format 7 */
        pw_u16(sb, one ? 0 : b->cc_min); /* format 8 */
        pw_u16(sb, one ? PLAN_CC_MAX : b->cc_max);
    }
    for (int i = 0; i < pw_records(p); i++) {
        const sched_bucket *b = &p->buckets[i];
        for (int j = 0; j < b->nsteps; j++) pw_step(sb, &w->st, &b->steps[j]);
        for (int j = 0; j < b->noutputs; j++) pw_output(sb, &w->st, &b->outputs[j]);
    }

    if (p->tokenizer.present) pw_tokenizer(&w->sec[PLAN_SECTION_TOKENIZER].buf, &w->st, &p->tokenizer);
    for (int i = 0; i < p->nlabels; i++) pw_u32(&w->sec[PLAN_SECTION_LABELS].buf, pw_str(&w->st, p->labels[i]));

    /* Attach the byte pieces. */
    if (w->st.oom || w->sources.oom) return -1;
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        pw_section *s = &w->sec[k];
        if (s->buf.oom) return -1;
        const pw_buf *src = k == PLAN_SECTION_STRINGS          ? &w->st.bytes
                          : k == PLAN_SECTION_KERNEL_SOURCES ? &w->sources
                                                             : &s->buf;
        if (k == PLAN_SECTION_IMAGE_DATA) continue;
        if (k == PLAN_SECTION_WEIGHTS) {
            if (p->weights_size && pw_section_add(s, p->weights, p->weights_size)) return -1;
        } else if (s->present && src->len && pw_section_add(s, src->data, src->len)) {
            return -1;
        }
    }
    return 0;
}

/* Section offsets, checksums, and the header with its table and CRC. */
static int pw_layout(pw_state *w) {
    uint32_t nsections = 0;
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) nsections += (uint32_t)w->sec[k].present;
    uint64_t table_off = PLAN_HEADER_SIZE, pos = table_off + (uint64_t)nsections * PLAN_SECTION_ENTRY_SIZE;
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        pw_section *s = &w->sec[k];
        if (!s->present) continue;
        s->off = pw_align(pos);
        s->crc = pw_section_crc(s);
        pos = s->off + s->size;
    }
    pw_header(&w->head, pos, table_off, nsections, w->producer);
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        const pw_section *s = &w->sec[k];
        if (!s->present) continue;
        pw_u32(&w->head, k);
        pw_u32(&w->head, s->name);
        pw_u64(&w->head, s->off);
        pw_u64(&w->head, s->size);
        pw_u32(&w->head, s->crc);
        pw_u32(&w->head, 0);
    }
    if (w->head.oom) return -1;
    uint32_t crc = crc32c_update(0, w->head.data, w->head.len);
    for (int i = 0; i < 4; i++) w->head.data[PLAN_HDR_CRC + i] = (uint8_t)(crc >> (8 * i));
    return 0;
}

/* The header, then each section at its offset with zeros between. */
static int pw_emit(const pw_state *w, file_atomic *fa) {
    if (file_atomic_write(fa, w->head.data, w->head.len)) return -1;
    uint64_t pos = w->head.len;
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        const pw_section *s = &w->sec[k];
        if (!s->present) continue;
        if (pw_write_zeros(fa, s->off - pos)) return -1;
        for (int i = 0; i < s->npieces; i++) {
            const pw_piece *pc = &s->pieces[i];
            if (pc->data ? file_atomic_write(fa, pc->data, (size_t)pc->len) : pw_write_zeros(fa, pc->len)) return -1;
        }
        pos = s->off + s->size;
    }
    return fflush(fa->f) == 0 ? 0 : -1;
}

int plan_write_to(const plan *p, file_atomic *fa, diag *d) {
    const char *path = fa->path;
    if (pw_check(p, path, d)) return -1;
    pw_state w;
    memset(&w, 0, sizeof w);
    if (pw_encode(&w, p) || pw_layout(&w)) {
        pw_state_free(&w);
        return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory while writing the plan", path);
    }
    int rc = pw_emit(&w, fa);
    pw_state_free(&w);
    if (rc) return diag_set(d, DIAG_CODE_INTERNAL, "%s: write failed: %s", path, strerror(errno ? errno : EIO));

    /* Read it back with the runtime's validator before it takes the name. */
    plan back;
    if (plan_read(&back, fa->tmp_path, d)) {
        diag_prefix(d, "%s: refusing to write an inconsistent plan: ", path);
        d->code = DIAG_CODE_INTERNAL;
        return -1;
    }
    plan_free(&back);
    return 0;
}

int plan_write(const plan *p, const char *path, diag *d) {
    file_atomic fa;
    if (file_atomic_open(&fa, path, d)) return -1;
    if (plan_write_to(p, &fa, d)) {
        file_atomic_abort(&fa);
        return -1;
    }
    return file_atomic_commit(&fa, 1, d);
}
