/*
 * test_plan — the plan file format: round trips, determinism, and hostile
 * files.
 *
 * Plans here are random: random kernels (specs, sources, argument counts),
 * images with random bytes and statistics, buckets with both kinds of step,
 * refs into every buffer, outputs, weights, with and without a tokenizer.
 * The generator also fills what the format does not carry (the inactive half
 * of each step, argument slots past nargs, bytes after an arch's NUL) with
 * junk, so a writer that leaked them would produce unstable bytes.  A deep
 * comparison written here checks every field of what comes back.
 *
 * The corruption tests do not go through the writer's or reader's code to
 * find their way around a file: they parse the header and the section table
 * by the offsets given in docs/plan-format.md and recompute checksums with
 * crc32c (itself checked against the RFC 3720 vectors and a bit-at-a-time
 * reference), so a semantic corruption (a kernel index out of range, a
 * string index out of range) reaches the check it is aimed at instead of
 * stopping at a checksum.  Each corruption expects a specific message.  The
 * layout test pins a selection of fields to the documented offsets, so the
 * specification and the code cannot drift apart unnoticed.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "crc32c.h"
#include "plan.h"
#include "plan_format.h"
#include "plan_kernels.h"
#include "plan_write.h"
#include "hf_import.h"

/* ---- scratch files -------------------------------------------------------- */

static char tmp_dir[512];

static const char *tmp_path(const char *name) {
    static char paths[8][768];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tmp_dir, name);
    return p;
}

static void tmp_dir_remove(void) {
    DIR *dir = opendir(tmp_dir);
    if (dir) {
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", tmp_dir, e->d_name);
            struct stat st;
            if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) rmdir(p);
            else unlink(p);
        }
        closedir(dir);
    }
    rmdir(tmp_dir);
}

/* Number of entries in the scratch directory whose name contains `part`. */
static int tmp_count(const char *part) {
    DIR *dir = opendir(tmp_dir);
    int n = 0;
    if (!dir) return -1;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (strstr(e->d_name, part)) n++;
    closedir(dir);
    return n;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* ---- random data ---------------------------------------------------------- */

static char *xstrdup(const char *s) {
    char *t = malloc(strlen(s) + 1);
    if (!t) abort();
    return strcpy(t, s);
}

static char *rnd_ident(const char *prefix) {
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    size_t n = (size_t)check_rng_range(1, 24), k = strlen(prefix);
    char *s = malloc(k + n + 1);
    if (!s) abort();
    memcpy(s, prefix, k);
    for (size_t i = 0; i < n; i++) s[k + i] = alnum[check_rng_u64() % (sizeof alnum - 1)];
    s[k + n] = '\0';
    return s;
}

/* Text without NULs: printable ASCII, newlines, tabs and some UTF-8 bytes. */
static char *rnd_text(size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    for (size_t i = 0; i < n; i++) {
        uint64_t r = check_rng_u64() % 100;
        s[i] = r < 5 ? '\n' : r < 7 ? '\t' : r < 10 ? (char)(0x80 + check_rng_u64() % 0x40) : (char)check_rng_range(0x20, 0x7e);
    }
    s[n] = '\0';
    return s;
}

static uint8_t *rnd_bytes(size_t n) {
    uint8_t *b = malloc(n ? n : 1);
    if (!b) abort();
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)check_rng_u64();
    return b;
}

static void rnd_fill(void *p, size_t n) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)check_rng_u64();
}

static float rnd_float(double lo, double hi) { return (float)(lo + (hi - lo) * check_rng_uniform()); }

/* The request block of plan_types.h: header, three arrays of B (a token
 * bucket's four, and seq_start[N + 1]). */
static uint64_t req_bytes(int seq_len, int max_seqs) {
    return max_seqs ? 4 * (4 + 4 * (uint64_t)seq_len + (uint64_t)max_seqs + 1) : 4 * (4 + 3 * (uint64_t)seq_len);
}

static uint64_t buffer_size(const plan *p, const sched_bucket *b, sched_buf buf) {
    return buf == SCHED_BUF_WEIGHTS ? p->weights_size
         : buf == SCHED_BUF_ARENA   ? b->arena_bytes
         : buf == SCHED_BUF_REQUEST ? req_bytes(b->seq_len, b->max_seqs)
         : buf == SCHED_BUF_COUNTERS ? b->counter_bytes
                                    : 0;
}

static int dtype_size(plan_dtype t) { return t == PLAN_DTYPE_F16 || t == PLAN_DTYPE_BF16 ? 2 : 4; }

/* The other fields of a spec of a random kind, drawn until the launch
 * contract (plan_kernels.h) accepts it: the reader refuses any other. */
static void rnd_spec_fields(kernel_spec *s) {
    s->dtype = (plan_dtype)check_rng_range(0, 2);
    s->hidden = (int)check_rng_range(1, 2048);
    s->eps = rnd_float(1e-12, 1e-3);
    s->ngathers = (int)check_rng_range(1, KERNEL_MAX_GATHERS);
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++) {
        s->gather_index[g] = (kernel_index)check_rng_range(0, KERNEL_INDEX_PAD_POSITION);
        s->table_rows[g] = (int)check_rng_range(1, 50000);
    }
    s->pad_id = (int)check_rng_range(0, 3);
    s->has_bias = (int)check_rng_range(0, 1);
    s->has_residual = (int)check_rng_range(0, 1);
    s->heads = (int)check_rng_range(1, 16);
    s->head_dim = 2 * (int)check_rng_range(1, 64);
    s->scale = rnd_float(-2, 2);
    int width = s->heads * s->head_dim;
    s->q_off = (int)check_rng_range(0, 64);
    s->k_off = s->q_off + width + (int)check_rng_range(0, 64);
    s->v_off = s->k_off + width + (int)check_rng_range(0, 64);
    s->qkv_ld = s->v_off + width + (int)check_rng_range(0, 64);
    s->ctx_ld = width + 2 * (int)check_rng_range(0, 8);
    s->n = (int)check_rng_range(1, 4096);
    s->k = (int)check_rng_range(1, 4096);
    s->x_ld = s->k + (int)check_rng_range(0, 64);
    s->out_ld = s->n + (int)check_rng_range(0, 64);
    s->res_ld = s->has_residual ? s->n + (int)check_rng_range(0, 64) : (int)check_rng_range(0, 1 << 16);
    s->has_act = (int)check_rng_range(0, 1);
    s->act = (plan_act)check_rng_range(0, PLAN_ACT_COUNT - 1);
    s->pool_mode = (plan_pool_mode)check_rng_range(0, PLAN_POOL_COUNT - 1);
    s->normalize = (int)check_rng_range(0, 1);
    s->qtile = 8 << check_rng_range(0, 3);
    /* the families' fields, only where the kind reads them (else 0, which the reader demands) */
    int pad_gather = 0;
    for (int g = 0; g < s->ngathers; g++) pad_gather |= s->gather_index[g] == KERNEL_INDEX_PAD_POSITION;
    s->pad_id = s->kind == KERNEL_KIND_EMBED_LN && pad_gather ? (int)check_rng_range(0, 3) : 0;
    s->bias_ld = s->kind == KERNEL_KIND_ATTENTION && check_rng_range(0, 1) ? (int)check_rng_range(1, 600) : 0;
    static const int tms[4] = {16, 32, 64, 128}, tns[3] = {32, 64, 128};
    s->tile_m = tms[check_rng_range(0, 3)];
    s->tile_n = tns[check_rng_range(0, 2)];
    s->splits = (int)check_rng_range(1, 8);
    if (s->kind == KERNEL_KIND_GEMM_LN) s->has_act = 0, s->n = (int)check_rng_range(1, 1024);
    /* packed where the kind has the form and the bucket is a token bucket
     * (rnd_spec decides); attention's tiles by length, ascending */
    for (int i = 0; i < 4; i++) s->seq_qtile[i] = (i ? s->seq_qtile[i - 1] : 0) + (int)check_rng_range(0, 40);
    if (s->seq_qtile[3] == 0) s->seq_qtile[3] = 1;
}

/* A spec for a bucket of `bucket` rows and `seqs` sequences (a token
 * bucket; 0: a length bucket): its own rows (a GEMM) or any (0) — and then
 * launchable in the plan's longest length bucket too (RoBERTa's positions
 * and MPNet's score bias are checked against the launching bucket, and a
 * batch's sequences against the longest length bucket). */
static void rnd_spec(kernel_spec *s, int bucket, int seqs, int longest) {
    for (;;) {
        memset(s, 0, sizeof *s);
        s->kind = (kernel_kind)check_rng_range(0, KERNEL_KIND_COUNT - 1);
        s->bucket = kernel_kind_bucket_free(s->kind) ? 0 : bucket;
        rnd_spec_fields(s);
        s->packed = seqs && kernel_kind_packs(s->kind);
        if (s->packed && s->kind == KERNEL_KIND_ATTENTION) s->qtile = 0;
        kernel_launch_dims dims;
        diag d;
        diag_init(&d);
        if (!kernel_spec_check(s, &d) &&
            !kernel_launch_dims_in(s, kernel_kind_bucket_free(s->kind) && !seqs ? longest : bucket, seqs, &dims, &d) &&
            !kernel_launch_check_rows(s, longest, &d))
            return;
    }
}

/* Whether kernel s may launch in bucket b: its rows (or any) and, for a
 * kind with a packed form, packed exactly in token buckets. */
static int kernel_fits(const kernel_spec *s, const sched_bucket *b) {
    if (s->bucket != 0 && s->bucket != b->seq_len) return 0;
    return !kernel_kind_packs(s->kind) || s->packed == (b->max_seqs > 0);
}

/* A reference the reader accepts for an operand of `bytes` (0: NONE): in
 * the weights when it fits there and it is not written, else in the arena,
 * which grows to hold it. */
static sched_ref rnd_operand(const plan *p, sched_bucket *b, uint64_t bytes, int written) {
    if (!bytes) return (sched_ref){SCHED_BUF_NONE, 0};
    if (!written && p->weights_size >= bytes && check_rng_range(0, 1))
        return (sched_ref){SCHED_BUF_WEIGHTS, check_rng_u64() % (p->weights_size - bytes + 1)};
    sched_ref r = {SCHED_BUF_ARENA, (uint64_t)check_rng_range(0, 4096)};
    if (b->arena_bytes < r.offset + bytes) b->arena_bytes = r.offset + bytes;
    return r;
}

/* A kernel launch that keeps the kernel's contract. */
static void rnd_launch(const plan *p, sched_bucket *b, sched_launch *l) {
    const kernel_spec *s = &p->kernels[l->kernel].spec;
    diag d;
    diag_init(&d);
    kernel_launch_dims_in(s, b->seq_len, b->max_seqs, &l->dims, &d);
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_in(s, b->seq_len, b->max_seqs, a);
    l->nargs = p->kernels[l->kernel].nargs;
    for (int i = 0; i < KERNEL_MAX_ARGS; i++) {
        if (i >= l->nargs) rnd_fill(&l->args[i], sizeof l->args[i]);
        else if (a[i].use == KERNEL_ARG_REQUEST) l->args[i] = (sched_ref){SCHED_BUF_REQUEST, 0};
        else if (a[i].use == KERNEL_ARG_PREFETCH) l->args[i] = (sched_ref){SCHED_BUF_NONE, 0};
        else if (a[i].use == KERNEL_ARG_COUNTERS) {
            l->args[i] = (sched_ref){SCHED_BUF_COUNTERS, 4 * (uint64_t)check_rng_range(0, 64)};
            if (b->counter_bytes < l->args[i].offset + a[i].bytes)
                b->counter_bytes = (uint32_t)(l->args[i].offset + a[i].bytes);
        }
        else l->args[i] = rnd_operand(p, b, a[i].use == KERNEL_ARG_UNUSED ? 0 : a[i].bytes, a[i].use == KERNEL_ARG_WRITE);
    }
    /* the prefetch pair: nothing, or two ordered offsets into the weights */
    if (p->weights_size && check_rng_range(0, 1)) {
        uint64_t x = check_rng_u64() % p->weights_size, y = check_rng_u64() % p->weights_size;
        l->args[l->nargs - 2] = (sched_ref){SCHED_BUF_WEIGHTS, x < y ? x : y};
        l->args[l->nargs - 1] = (sched_ref){SCHED_BUF_WEIGHTS, x < y ? y : x};
    }
}

/* Elements a column-major rows x cols matrix with leading dimension ld spans, batch times. */
static uint64_t rnd_matrix_bytes(int64_t rows, int64_t cols, int64_t ld, int batch, int64_t stride, plan_dtype t) {
    return ((uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows + (uint64_t)(batch - 1) * (uint64_t)stride) *
           (uint64_t)dtype_size(t);
}

/* A GEMM's operands where its extents fit. */
static void rnd_gemm_refs(const plan *p, sched_bucket *b, sched_gemm *g) {
    int64_t ar = g->transa ? g->k : g->m, ac = g->transa ? g->m : g->k;
    int64_t br = g->transb ? g->n : g->k, bc = g->transb ? g->k : g->n;
    int n = g->batch_count;
    g->a = rnd_operand(p, b, rnd_matrix_bytes(ar, ac, g->lda, n, g->stride_a, g->ab_type), 0);
    g->b = rnd_operand(p, b, rnd_matrix_bytes(br, bc, g->ldb, n, g->stride_b, g->ab_type), 0);
    g->c = g->beta == 0.0f && check_rng_range(0, 1) ? (sched_ref){SCHED_BUF_NONE, 0}
                                                    : rnd_operand(p, b, rnd_matrix_bytes(g->m, g->n, g->ldc, n, g->stride_c, g->cd_type), 0);
    g->d = rnd_operand(p, b, rnd_matrix_bytes(g->m, g->n, g->ldd, n, g->stride_d, g->cd_type), 1);
    g->bias = g->epilogue & SCHED_EPILOGUE_BIAS ? rnd_operand(p, b, (uint64_t)g->m * (uint64_t)dtype_size(g->bias_type), 0)
                                                : (sched_ref){SCHED_BUF_NONE, 0};
}

typedef enum gen_size { GEN_SMALL, GEN_MEDIUM, GEN_RICH } gen_size;

/*
 * A random, self-consistent plan.  GEN_SMALL: one of everything (for the
 * every-length truncation); GEN_RICH: at least two buckets, and bucket 0
 * starts with a kernel step then a GEMM step (the corruption tests aim there).
 */
/*
 * A tokenizer description: a random WordPiece vocabulary with random
 * settings, or one of the trained tokenizers of tests/golden (byte-level
 * BPE with its merges, Unigram with scores and Replace/Strip normalizers,
 * SentencePiece with a Precompiled map and Metaspace) with random limits.
 */
static void gen_tokenizer(plan_tokenizer *t, int small) {
    static const char *const dirs[3] = {"tests/golden/tok-roberta", "tests/golden/tok-unigram", "tests/golden/tok-xlmr"};
    diag d;
    diag_init(&d);
    int k = small ? 3 : (int)check_rng_range(0, 3);
    if (k < 3) {
        CHECK(hf_import_tokenizer_desc(dirs[k], t, &d) == 0, "%s: %s", dirs[k], d.text);
    } else {
        char *vocab = rnd_text(small ? 30 : (size_t)check_rng_range(1, 5000));
        size_t n = strlen(vocab);
        /* The specials are lines of it, so the description exists. */
        char *v = malloc(n + 32);
        snprintf(v, n + 32, "[UNK]\n[CLS]\n[SEP]\n%s", vocab);
        CHECK(tokdesc_from_vocab_txt(t, v, strlen(v), (int)check_rng_range(-1, 1), (int)check_rng_range(-1, 1),
                                     (int)check_rng_range(-1, 1), NULL, &d) == 0, "%s", d.text);
        free(v);
        free(vocab);
    }
    t->model_max_length = check_rng_range(0, 1 << 20);
    if (t->model == TOKDESC_MODEL_BPE) t->flags ^= (uint32_t)check_rng_range(0, 3) * TOKDESC_FLAG_TRIM_OFFSETS;
}

static void gen_plan(plan *p, gen_size size, int with_tokenizer) {
    plan_init(p);
    int small = size == GEN_SMALL, rich = size == GEN_RICH;
    p->model_name = rnd_ident("model-");
    p->producer = xstrdup(check_rng_range(0, 1) ? "bertc 0.1.0" : "bertc 0.1.0-test");
    p->precision = (plan_dtype)check_rng_range(0, 2);
    p->max_seq_len = check_rng_range(rich ? 16 : 1, 512);
    p->hidden = check_rng_range(1, 4096);
    p->vocab_size = check_rng_range(1, 120000);
    p->type_vocab_size = check_rng_range(0, 4);
    p->has_token_type_ids = (int)check_rng_range(0, 1);
    p->has_attention_mask = (int)check_rng_range(0, 1);
    p->token_type_default = p->type_vocab_size ? (int32_t)check_rng_range(0, p->type_vocab_size - 1)
                                               : (int32_t)check_rng_range(-9, 9);
    p->attention_mask_default = (int32_t)check_rng_range(-3, 3);
    p->fusion = (plan_fusion)check_rng_range(0, PLAN_FUSION_COUNT - 1);

    p->weights_size = small ? (uint64_t)check_rng_range(1, 400)
                    : check_rng_range(0, 7) == 0 && !rich ? 0
                                                          : (uint64_t)check_rng_range(1, 60000);
    p->weights = rnd_bytes((size_t)p->weights_size);
    p->owns_weights = 1;

    /* Buckets: distinct ascending lengths, then maybe token buckets:
     * distinct ascending token counts, each of at most that many sequences. */
    int nlen = small ? 1 : (int)check_rng_range(rich ? 2 : 1, 4);
    if (nlen > p->max_seq_len) nlen = (int)p->max_seq_len;
    int ntok = small ? 0 : (int)check_rng_range(0, 2);
    p->nbuckets = nlen + ntok;
    p->buckets = calloc((size_t)p->nbuckets, sizeof p->buckets[0]);
    int prev = 0;
    for (int i = 0; i < nlen; i++) {
        int left = nlen - 1 - i;
        int hi = (int)p->max_seq_len - left;
        int len = (int)check_rng_range(prev + 1, prev + 1 + (hi - prev - 1) / 2);
        if (i == nlen - 1 && check_rng_range(0, 1)) len = (int)p->max_seq_len;
        p->buckets[i].seq_len = prev = len;
        p->buckets[i].arena_bytes = (uint64_t)check_rng_range(64, 1 << 20);
    }
    for (int i = nlen, tok = 0; i < p->nbuckets; i++) {
        sched_bucket *b = &p->buckets[i];
        b->seq_len = tok = tok + (int)check_rng_range(1, 700);
        b->max_seqs = (int)check_rng_range(1, tok < 64 ? tok : 64);
        b->arena_bytes = (uint64_t)check_rng_range(64, 1 << 20);
    }

    /* Kernels, each generated for one bucket (or any); kernel 0 for bucket 0. */
    p->nkernels = small ? 1 : (int)check_rng_range(rich ? 2 : 0, 6);
    p->kernels = p->nkernels ? calloc((size_t)p->nkernels, sizeof p->kernels[0]) : NULL;
    for (int i = 0; i < p->nkernels; i++) {
        plan_kernel *k = &p->kernels[i];
        kernel_spec *s = &k->spec;
        k->entry = rnd_ident("bertc_kernel_");
        k->source = rnd_text(small ? 40 : (size_t)check_rng_range(0, 3000));
        const sched_bucket *b = &p->buckets[i == 0 ? 0 : check_rng_range(0, p->nbuckets - 1)];
        rnd_spec(s, b->seq_len, b->max_seqs, p->buckets[nlen - 1].seq_len);
        k->nargs = kernel_kind_arg_count(s->kind);
    }

    /* Images: distinct architectures, junk after each arch's NUL. */
    static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "compute_75", "compute_80", "emu"};
    int narchs = (int)(sizeof archs / sizeof archs[0]);
    p->nimages = small ? 1 : (int)check_rng_range(0, 4);
    p->images = p->nimages ? calloc((size_t)p->nimages, sizeof p->images[0]) : NULL;
    int first = (int)check_rng_range(0, narchs - 1);
    for (int i = 0; i < p->nimages; i++) {
        plan_image *im = &p->images[i];
        const char *a = archs[(first + i) % narchs];
        rnd_fill(im->arch, sizeof im->arch);
        memcpy(im->arch, a, strlen(a) + 1);
        im->kind = (plan_image_kind)check_rng_range(0, 2);
        im->size = small ? 50 : (size_t)check_rng_range(0, 3000);
        im->data = rnd_bytes(im->size);
        if (check_rng_range(0, 3) && p->nkernels) {
            im->stats = calloc((size_t)p->nkernels, sizeof im->stats[0]);
            for (int k = 0; k < p->nkernels; k++) {
                im->stats[k].registers = (int)check_rng_range(0, 255);
                im->stats[k].spill_stores = (int)check_rng_range(0, 1000);
                im->stats[k].spill_loads = (int)check_rng_range(0, 1000);
                im->stats[k].shared_static = (int)check_rng_range(0, 49152);
            }
        }
    }

    for (int bi = 0; bi < p->nbuckets; bi++) {
        sched_bucket *b = &p->buckets[bi];
        /* Outputs first: they may grow the arena to fit.  Every bucket has
         * bucket 0's outputs (name, dtype, columns, rows per token or not);
         * a token bucket has a row per sequence where a length bucket has
         * one row. */
        b->noutputs = bi ? p->buckets[0].noutputs : small ? 1 : (int)check_rng_range(1, 3);
        b->outputs = calloc((size_t)b->noutputs, sizeof b->outputs[0]);
        for (int j = 0; j < b->noutputs; j++) {
            sched_output *o = &b->outputs[j];
            if (bi) {
                const sched_output *o0 = &p->buckets[0].outputs[j];
                o->name = xstrdup(o0->name);
                o->dtype = o0->dtype;
                o->rows_are_seq = o0->rows_are_seq;
                o->cols = o0->cols;
            } else {
                char prefix[32];
                snprintf(prefix, sizeof prefix, "out%d_", j);
                o->name = rnd_ident(prefix);
                o->dtype = (plan_dtype)check_rng_range(0, PLAN_DTYPE_COUNT - 1);
                o->rows_are_seq = (int)check_rng_range(0, 1);
                o->cols = check_rng_range(1, 96);
            }
            o->per_seq = b->max_seqs && !o->rows_are_seq;
            o->row_stride = o->rows_are_seq || o->per_seq ? o->cols + check_rng_range(0, 8) : check_rng_range(0, 100);
            uint64_t rows = o->rows_are_seq ? (uint64_t)b->seq_len - 1 : o->per_seq ? (uint64_t)b->max_seqs - 1 : 0;
            uint64_t extent = (rows * (uint64_t)o->row_stride + (uint64_t)o->cols) * (uint64_t)dtype_size(o->dtype);
            if (p->weights_size > extent && check_rng_range(0, 3) == 0) {
                o->ref.buf = SCHED_BUF_WEIGHTS;
                o->ref.offset = check_rng_u64() % (p->weights_size - extent + 1);
            } else {
                o->ref.buf = SCHED_BUF_ARENA;
                o->ref.offset = (uint64_t)check_rng_range(0, 4096);
                if (b->arena_bytes < o->ref.offset + extent) b->arena_bytes = o->ref.offset + extent;
            }
        }

        int kernels_here[64], nhere = 0;
        for (int k = 0; k < p->nkernels; k++)
            if (kernel_fits(&p->kernels[k].spec, b)) kernels_here[nhere++] = k;
        b->nsteps = small ? 2 : (int)check_rng_range(rich && bi == 0 ? 2 : 0, 12);
        b->steps = b->nsteps ? calloc((size_t)b->nsteps, sizeof b->steps[0]) : NULL;
        for (int j = 0; j < b->nsteps; j++) {
            sched_step *st = &b->steps[j];
            char name[64];
            snprintf(name, sizeof name, "layer%d/op%d", (int)check_rng_range(0, 23), j);
            st->name = xstrdup(name);
            int kernel = nhere && (bi == 0 && j < 2 ? j == 0 : check_rng_range(0, 1));
            st->kind = kernel ? SCHED_STEP_KERNEL : SCHED_STEP_GEMM;
            st->flops = check_rng_range(0, 4) ? floor(check_rng_uniform() * 1e12) : check_rng_uniform() * 1e3;
            st->min_hbm_bytes = check_rng_u64() >> (check_rng_u64() % 64);
            if (kernel) {
                rnd_fill(&st->gemm, sizeof st->gemm); /* junk: not part of a launch step */
                sched_launch *l = &st->launch;
                l->kernel = kernels_here[j == 0 && bi == 0 ? 0 : check_rng_range(0, nhere - 1)];
                rnd_launch(p, b, l);
            } else {
                rnd_fill(&st->launch, sizeof st->launch);
                sched_gemm *g = &st->gemm;
                g->transa = (int)check_rng_range(0, 1);
                g->transb = (int)check_rng_range(0, 1);
                g->m = check_rng_range(1, 4096);
                g->n = check_rng_range(1, 4096);
                g->k = check_rng_range(1, 4096);
                g->lda = (g->transa ? g->k : g->m) + check_rng_range(0, 64);
                g->ldb = (g->transb ? g->n : g->k) + check_rng_range(0, 64);
                g->ldc = g->m + check_rng_range(0, 64);
                g->ldd = g->m + check_rng_range(0, 64);
                g->batch_count = (int)check_rng_range(1, 4);
                g->stride_a = check_rng_range(0, 1 << 16);
                g->stride_b = check_rng_range(0, 1 << 16);
                g->stride_c = check_rng_range(0, 1 << 16);
                g->stride_d = check_rng_range(0, 1 << 16);
                g->ab_type = (plan_dtype)check_rng_range(0, 2);
                g->cd_type = (plan_dtype)check_rng_range(0, 2);
                g->bias_type = (plan_dtype)check_rng_range(0, 2);
                g->alpha = rnd_float(-4, 4);
                g->beta = check_rng_range(0, 1) ? 0.0f : rnd_float(-1, 1);
                static const sched_epilogue epis[] = {SCHED_EPILOGUE_DEFAULT, SCHED_EPILOGUE_RELU, SCHED_EPILOGUE_BIAS,
                                                      SCHED_EPILOGUE_RELU_BIAS};
                g->epilogue = epis[check_rng_range(0, 3)];
                rnd_gemm_refs(p, b, g);
            }
        }
        if (b->arena_bytes > p->arena_bytes) p->arena_bytes = b->arena_bytes;
    }

    if (with_tokenizer) {
        gen_tokenizer(&p->tokenizer, small);
        /* and a classification head's labels (the optional LABELS section) */
        p->nlabels = (int)check_rng_range(1, 5);
        p->labels = calloc((size_t)p->nlabels, sizeof *p->labels);
        for (int i = 0; i < p->nlabels; i++) p->labels[i] = rnd_ident("label-");
    }
}

/* Re-randomise everything the format does not carry. */
static void gen_rejunk(plan *p) {
    for (int i = 0; i < p->nimages; i++) {
        size_t n = strlen(p->images[i].arch);
        rnd_fill(p->images[i].arch + n + 1, sizeof p->images[i].arch - n - 1);
    }
    for (int bi = 0; bi < p->nbuckets; bi++)
        for (int j = 0; j < p->buckets[bi].nsteps; j++) {
            sched_step *st = &p->buckets[bi].steps[j];
            if (st->kind == SCHED_STEP_KERNEL) {
                rnd_fill(&st->gemm, sizeof st->gemm);
                for (int a = st->launch.nargs; a < KERNEL_MAX_ARGS; a++)
                    rnd_fill(&st->launch.args[a], sizeof st->launch.args[a]);
            } else {
                rnd_fill(&st->launch, sizeof st->launch);
            }
        }
}

/* ---- deep comparison ------------------------------------------------------ */

static char diff_why[1024];

#define DIFF(cond, ...)                                               \
    do {                                                              \
        if (cond) {                                                   \
            snprintf(diff_why, sizeof diff_why, __VA_ARGS__);         \
            return 1;                                                 \
        }                                                             \
    } while (0)

static int str_differs(const char *a, const char *b) { return (!a != !b) || (a && strcmp(a, b)); }

/* Every field of two tokenizer descriptions. */
static int tok_differs(const tokdesc *s, const tokdesc *t) {
    if (s->present != t->present) return 1;
    if (!s->present) return 0;
    if (s->model != t->model || s->model_max_length != t->model_max_length || s->unk_id != t->unk_id ||
        s->pad_id != t->pad_id || s->flags != t->flags || s->max_input_chars_per_word != t->max_input_chars_per_word ||
        str_differs(s->continuing_subword_prefix, t->continuing_subword_prefix) || s->nvocab != t->nvocab ||
        s->vocab_text_len != t->vocab_text_len || memcmp(s->vocab_text, t->vocab_text, s->vocab_text_len) ||
        memcmp(s->vocab_off, t->vocab_off, (size_t)s->nvocab * 4) || !s->scores != !t->scores ||
        (s->scores && memcmp(s->scores, t->scores, (size_t)s->nvocab * 8)) || s->nmerges != t->nmerges ||
        (s->nmerges && memcmp(s->merges, t->merges, (size_t)s->nmerges * 12)) || s->nnormalizers != t->nnormalizers ||
        s->npretokenizers != t->npretokenizers || s->nadded != t->nadded || s->nsingle != t->nsingle ||
        s->npair != t->npair || memcmp(s->single, t->single, (size_t)s->nsingle * sizeof *s->single) ||
        memcmp(s->pair, t->pair, (size_t)s->npair * sizeof *s->pair) ||
        memcmp(s->pretokenizers, t->pretokenizers, (size_t)s->npretokenizers * sizeof *s->pretokenizers))
        return 1;
    for (int i = 0; i < s->nnormalizers; i++) {
        const tokdesc_normalizer *x = &s->normalizers[i], *y = &t->normalizers[i];
        if (x->kind != y->kind || memcmp(x->p, y->p, sizeof x->p) || str_differs(x->pattern, y->pattern) ||
            str_differs(x->content, y->content) || x->data_len != y->data_len ||
            (x->data_len && memcmp(x->data, y->data, x->data_len)))
            return 1;
    }
    for (int i = 0; i < s->nadded; i++)
        if (s->added[i].id != t->added[i].id || s->added[i].flags != t->added[i].flags ||
            strcmp(s->added[i].content, t->added[i].content))
            return 1;
    return 0;
}
static int f32_differs(float a, float b) { return memcmp(&a, &b, sizeof a) != 0; }
static int f64_differs(double a, double b) { return memcmp(&a, &b, sizeof a) != 0; }
static int ref_differs(sched_ref a, sched_ref b) { return a.buf != b.buf || a.offset != b.offset; }

static int spec_diff(const kernel_spec *a, const kernel_spec *b, int i) {
    DIFF(a->kind != b->kind || a->dtype != b->dtype || a->bucket != b->bucket, "kernel %d kind/dtype/bucket", i);
    DIFF(a->hidden != b->hidden || f32_differs(a->eps, b->eps) || a->ngathers != b->ngathers, "kernel %d hidden/eps/ngathers", i);
    for (int g = 0; g < KERNEL_MAX_GATHERS; g++)
        DIFF(a->gather_index[g] != b->gather_index[g] || a->table_rows[g] != b->table_rows[g], "kernel %d gather %d", i, g);
    DIFF(a->has_bias != b->has_bias || a->has_residual != b->has_residual, "kernel %d has_bias/residual", i);
    DIFF(a->heads != b->heads || a->head_dim != b->head_dim || f32_differs(a->scale, b->scale), "kernel %d heads/scale", i);
    DIFF(a->qkv_ld != b->qkv_ld || a->q_off != b->q_off || a->k_off != b->k_off || a->v_off != b->v_off ||
             a->ctx_ld != b->ctx_ld,
         "kernel %d attention layout", i);
    DIFF(a->n != b->n || a->k != b->k || a->x_ld != b->x_ld || a->out_ld != b->out_ld || a->res_ld != b->res_ld,
         "kernel %d gemm fields", i);
    DIFF(a->has_act != b->has_act || a->act != b->act, "kernel %d act", i);
    DIFF(a->pool_mode != b->pool_mode || a->normalize != b->normalize, "kernel %d pool_mode/normalize", i);
    DIFF(a->pad_id != b->pad_id || a->bias_ld != b->bias_ld, "kernel %d pad_id/bias_ld", i);
    DIFF(a->tile_m != b->tile_m || a->tile_n != b->tile_n || a->splits != b->splits, "kernel %d tile/splits", i);
    DIFF(a->qtile != b->qtile || a->packed != b->packed || memcmp(a->seq_qtile, b->seq_qtile, sizeof a->seq_qtile),
         "kernel %d qtile/packed/seq_qtile", i);
    return 0;
}

static int gemm_diff(const sched_gemm *a, const sched_gemm *b, const char *at) {
    DIFF(a->transa != b->transa || a->transb != b->transb, "%s trans", at);
    DIFF(a->m != b->m || a->n != b->n || a->k != b->k, "%s m/n/k", at);
    DIFF(a->lda != b->lda || a->ldb != b->ldb || a->ldc != b->ldc || a->ldd != b->ldd, "%s ld", at);
    DIFF(a->batch_count != b->batch_count || a->stride_a != b->stride_a || a->stride_b != b->stride_b ||
             a->stride_c != b->stride_c || a->stride_d != b->stride_d,
         "%s batch", at);
    DIFF(a->ab_type != b->ab_type || a->cd_type != b->cd_type || a->bias_type != b->bias_type, "%s types", at);
    DIFF(f32_differs(a->alpha, b->alpha) || f32_differs(a->beta, b->beta) || a->epilogue != b->epilogue,
         "%s alpha/beta/epilogue", at);
    DIFF(ref_differs(a->a, b->a) || ref_differs(a->b, b->b) || ref_differs(a->c, b->c) || ref_differs(a->d, b->d) ||
             ref_differs(a->bias, b->bias),
         "%s refs", at);
    return 0;
}

static int plan_diff(const plan *a, const plan *b) {
    DIFF(str_differs(a->model_name, b->model_name), "model_name");
    DIFF(str_differs(a->producer, b->producer), "producer");
    DIFF(a->precision != b->precision || a->max_seq_len != b->max_seq_len || a->hidden != b->hidden, "precision/max/hidden");
    DIFF(a->vocab_size != b->vocab_size || a->type_vocab_size != b->type_vocab_size, "vocab sizes");
    DIFF(a->has_token_type_ids != b->has_token_type_ids || a->has_attention_mask != b->has_attention_mask, "input flags");
    DIFF(a->token_type_default != b->token_type_default || a->attention_mask_default != b->attention_mask_default,
         "input defaults");
    DIFF(a->weights_size != b->weights_size, "weights_size %llu vs %llu", (unsigned long long)a->weights_size,
         (unsigned long long)b->weights_size);
    DIFF(a->weights_size && memcmp(a->weights, b->weights, (size_t)a->weights_size), "weights bytes");
    DIFF(a->arena_bytes != b->arena_bytes, "arena_bytes");
    DIFF(a->fusion != b->fusion, "fusion");
    DIFF(a->nkernels != b->nkernels, "nkernels %d vs %d", a->nkernels, b->nkernels);
    for (int i = 0; i < a->nkernels; i++) {
        const plan_kernel *x = &a->kernels[i], *y = &b->kernels[i];
        DIFF(str_differs(x->entry, y->entry) || str_differs(x->source, y->source) || x->nargs != y->nargs,
             "kernel %d entry/source/nargs", i);
        if (spec_diff(&x->spec, &y->spec, i)) return 1;
    }
    DIFF(a->nimages != b->nimages, "nimages");
    for (int i = 0; i < a->nimages; i++) {
        const plan_image *x = &a->images[i], *y = &b->images[i];
        DIFF(strcmp(x->arch, y->arch) || x->kind != y->kind || x->size != y->size, "image %d header", i);
        DIFF(x->size && memcmp(x->data, y->data, x->size), "image %d bytes", i);
        for (int k = 0; k < a->nkernels; k++) {
            plan_kernel_stats zero = {0, 0, 0, 0}, sx = x->stats ? x->stats[k] : zero, sy = y->stats ? y->stats[k] : zero;
            DIFF(sx.registers != sy.registers || sx.spill_stores != sy.spill_stores || sx.spill_loads != sy.spill_loads ||
                     sx.shared_static != sy.shared_static,
                 "image %d stats %d", i, k);
        }
    }
    DIFF(a->nbuckets != b->nbuckets || plan_variant_count(a) != plan_variant_count(b), "nbuckets/variants");
    for (int i = 0; i < a->nbuckets * plan_variant_count(a); i++) {
        const sched_bucket *x = &a->buckets[i], *y = &b->buckets[i];
        DIFF(x->seq_len != y->seq_len || x->nsteps != y->nsteps || x->noutputs != y->noutputs ||
                 x->arena_bytes != y->arena_bytes || x->counter_bytes != y->counter_bytes ||
                 x->max_seqs != y->max_seqs,
             "bucket %d header", i);
        DIFF(plan_variant_count(a) > 1 && (x->cc_min != y->cc_min || x->cc_max != y->cc_max), "bucket %d range", i);
        for (int j = 0; j < x->nsteps; j++) {
            const sched_step *s = &x->steps[j], *t = &y->steps[j];
            char at[64];
            snprintf(at, sizeof at, "bucket %d step %d", i, j);
            DIFF(s->kind != t->kind || str_differs(s->name, t->name), "%s kind/name", at);
            DIFF(f64_differs(s->flops, t->flops) || s->min_hbm_bytes != t->min_hbm_bytes, "%s cost", at);
            if (s->kind == SCHED_STEP_KERNEL) {
                const sched_launch *l = &s->launch, *m = &t->launch;
                DIFF(l->kernel != m->kernel || l->nargs != m->nargs, "%s kernel/nargs", at);
                DIFF(memcmp(l->dims.grid, m->dims.grid, sizeof l->dims.grid) ||
                         memcmp(l->dims.block, m->dims.block, sizeof l->dims.block) ||
                         l->dims.shared_bytes != m->dims.shared_bytes,
                     "%s dims", at);
                for (int k = 0; k < l->nargs; k++) DIFF(ref_differs(l->args[k], m->args[k]), "%s arg %d", at, k);
            } else if (gemm_diff(&s->gemm, &t->gemm, at)) {
                return 1;
            }
        }
        for (int j = 0; j < x->noutputs; j++) {
            const sched_output *o = &x->outputs[j], *q = &y->outputs[j];
            DIFF(str_differs(o->name, q->name) || o->dtype != q->dtype || ref_differs(o->ref, q->ref) ||
                     o->rows_are_seq != q->rows_are_seq || o->per_seq != q->per_seq || o->cols != q->cols ||
                     o->row_stride != q->row_stride,
                 "bucket %d output %d", i, j);
        }
    }
    DIFF(tok_differs(&a->tokenizer, &b->tokenizer), "tokenizer");
    DIFF(a->nlabels != b->nlabels, "label count");
    for (int i = 0; i < a->nlabels && i < b->nlabels; i++) DIFF(str_differs(a->labels[i], b->labels[i]), "label %d", i);
    return 0;
}

/* ---- writing and reading helpers ------------------------------------------ */

static uint8_t *plan_bytes(const plan *p, const char *name, size_t *len) {
    diag d;
    diag_init(&d);
    const char *path = tmp_path(name);
    if (plan_write(p, path, &d)) {
        CHECK(0, "plan_write %s: %s", name, d.text);
        return NULL;
    }
    uint8_t *b = (uint8_t *)check_read_file(path, len);
    CHECK(b, "cannot read back %s", path);
    unlink(path);
    return b;
}

static uint32_t ld32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t ld64(const uint8_t *b) { return (uint64_t)ld32(b) | (uint64_t)ld32(b + 4) << 32; }
static void st32(uint8_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *b, uint64_t v) {
    st32(b, (uint32_t)v);
    st32(b + 4, (uint32_t)(v >> 32));
}

/* The section table as docs/plan-format.md lays it out (independent of plan_read.c). */
typedef struct tsec {
    uint32_t kind;
    uint64_t off, size;
    size_t entry;                /* byte offset of its table entry */
} tsec;

static int find_section(const uint8_t *b, uint32_t kind, tsec *out) {
    uint64_t toff = ld64(b + 0x20);
    uint32_t n = ld32(b + 0x28);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = b + toff + 32 * i;
        if (ld32(e) == kind) {
            *out = (tsec){kind, ld64(e + 8), ld64(e + 16), (size_t)(toff + 32 * i)};
            return 1;
        }
    }
    return 0;
}

static void fix_checksums(uint8_t *b, size_t len) {
    uint64_t toff = ld64(b + 0x20);
    uint32_t n = ld32(b + 0x28);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = b + toff + 32 * i;
        uint64_t off = ld64(e + 8), size = ld64(e + 16);
        if (off <= len && size <= len - off) st32(e + 24, crc32c_update(0, b + off, (size_t)size));
    }
    st32(b + 0x1C, 0);
    uint32_t crc = crc32c_update(0, b, 128);
    st32(b + 0x1C, crc32c_update(crc, b + toff, 32 * (size_t)n));
}

static uint8_t *dup_bytes(const uint8_t *b, size_t len) {
    uint8_t *c = malloc(len ? len : 1);
    if (!c) abort();
    memcpy(c, b, len);
    return c;
}

/* The read must fail, leave the plan empty, and say each of `must` (NULL-terminated list). */
static int expect_fail_v(const uint8_t *buf, size_t len, const char *label, const char *const *must) {
    plan q;
    diag d;
    diag_init(&d);
    int rc = plan_read_memory(&q, buf, len, "bad.plan", &d);
    if (rc == 0) {
        plan_free(&q);
        CHECK(0, "%s: the damaged plan was accepted", label);
        return 0;
    }
    int ok = 1;
    CHECK(q.map == NULL && q.model_name == NULL && q.kernels == NULL && q.buckets == NULL,
          "%s: a failed read left state behind", label);
    CHECK(d.code == DIAG_CODE_INPUT, "%s: diag code %d", label, (int)d.code);
    if (strncmp(d.text, "bad.plan: offset 0x", 19) != 0) {
        CHECK(0, "%s: message does not start with the name and offset: %s", label, d.text);
        ok = 0;
    }
    for (; *must; must++)
        if (!strstr(d.text, *must)) {
            CHECK(0, "%s: message lacks \"%s\": %s", label, *must, d.text);
            ok = 0;
        }
    return ok;
}

#define EXPECT_FAIL(buf, len, label, ...) expect_fail_v((buf), (len), (label), (const char *const[]){__VA_ARGS__, NULL})

/* ---- crc32c ---------------------------------------------------------------- */

static uint32_t crc_bitwise(const uint8_t *b, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void test_crc32c_vectors(void) {
    uint8_t buf[32];
    CHECK(crc32c_update(0, "123456789", 9) == 0xE3069283u, "check value");
    CHECK(crc32c_update_portable(0, "123456789", 9) == 0xE3069283u, "portable check value");
    CHECK(crc32c_update(0, buf, 0) == 0 && crc32c_update_portable(0, NULL, 0) == 0, "empty");
    /* RFC 3720, appendix B.4. */
    memset(buf, 0, sizeof buf);
    CHECK(crc32c_update(0, buf, 32) == 0x8A9136AAu && crc32c_update_portable(0, buf, 32) == 0x8A9136AAu, "32 zeros");
    memset(buf, 0xff, sizeof buf);
    CHECK(crc32c_update(0, buf, 32) == 0x62A8AB43u && crc32c_update_portable(0, buf, 32) == 0x62A8AB43u, "32 ones");
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK(crc32c_update(0, buf, 32) == 0x46DD794Eu && crc32c_update_portable(0, buf, 32) == 0x46DD794Eu, "ascending");
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    CHECK(crc32c_update(0, buf, 32) == 0x113FDB5Cu && crc32c_update_portable(0, buf, 32) == 0x113FDB5Cu, "descending");
    printf("# crc32c: %s\n", crc32c_hardware() ? "SSE 4.2 instruction" : "portable tables");
}

static void test_crc32c_random(void) {
    for (int iter = 0; iter < 300; iter++) {
        size_t n = (size_t)check_rng_range(0, 3000), skew = (size_t)check_rng_range(0, 7);
        uint8_t *raw = rnd_bytes(n + 8), *b = raw + skew;
        uint32_t want = crc_bitwise(b, n);
        CHECK(crc32c_update(0, b, n) == want, "len %zu skew %zu: dispatch differs from bitwise", n, skew);
        CHECK(crc32c_update_portable(0, b, n) == want, "len %zu skew %zu: portable differs from bitwise", n, skew);
        size_t cut = n ? (size_t)check_rng_range(0, (int64_t)n) : 0;
        CHECK(crc32c_update(crc32c_update(0, b, cut), b + cut, n - cut) == want, "len %zu: chaining at %zu", n, cut);
        CHECK(crc32c_update_portable(crc32c_update(0, b, cut), b + cut, n - cut) == want, "len %zu: mixed chaining", n);
        if (n) {
            size_t bit = (size_t)check_rng_range(0, (int64_t)(8 * n - 1));
            b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            CHECK(crc32c_update(0, b, n) != want, "len %zu: a flipped bit %zu went unnoticed", n, bit);
        }
        free(raw);
    }
}

/* ---- round trips ------------------------------------------------------------ */

static void check_read_plan(const plan *orig, const plan *back, const char *how, int iter) {
    if (plan_diff(orig, back)) CHECK(0, "iteration %d (%s): %s differs", iter, how, diff_why);
    CHECK(back->map != NULL && back->owns_weights == 0, "%s: reader state", how);
    CHECK(((uintptr_t)back->weights % PLAN_SECTION_ALIGN) == 0, "%s: weights not 256-aligned", how);
    for (int i = 0; i < back->nimages; i++)
        CHECK(((uintptr_t)back->images[i].data % PLAN_SECTION_ALIGN) == 0, "%s: image %d not 256-aligned", how, i);
    for (int i = 0; i < back->nimages; i++) CHECK(back->images[i].stats || !back->nkernels, "%s: stats missing", how);
}

static void test_roundtrip(void) {
    for (int iter = 0; iter < 16; iter++) {
        plan p, q, r;
        gen_plan(&p, iter % 4 == 0 ? GEN_SMALL : iter % 4 == 1 ? GEN_RICH : GEN_MEDIUM, iter % 2);
        diag d;
        diag_init(&d);
        const char *path = tmp_path("roundtrip.plan");
        if (plan_write(&p, path, &d)) {
            CHECK(0, "iteration %d: plan_write: %s", iter, d.text);
            plan_free(&p);
            continue;
        }
        if (plan_read(&q, path, &d)) {
            CHECK(0, "iteration %d: plan_read: %s", iter, d.text);
        } else {
            CHECK(q.map_heap == 0, "plan_read should map the file");
            check_read_plan(&p, &q, "file", iter);
            plan_free(&q);
            CHECK(q.map == NULL && q.kernels == NULL, "plan_free left state");
        }
        size_t len;
        uint8_t *bytes = (uint8_t *)check_read_file(path, &len);
        CHECK(bytes, "read %s", path);
        if (bytes && plan_read_memory(&r, bytes, len, "mem.plan", &d) == 0) {
            memset(bytes, 0xA5, len); /* the reader must have its own copy */
            free(bytes);
            CHECK(r.map_heap == 1, "plan_read_memory should copy");
            check_read_plan(&p, &r, "memory", iter);
            plan_free(&r);
        } else {
            CHECK(0, "iteration %d: plan_read_memory: %s", iter, d.text);
            free(bytes);
        }
        unlink(path);
        plan_free(&p);
        plan_free(&p); /* idempotent */
    }
}

static void test_deterministic(void) {
    for (int iter = 0; iter < 6; iter++) {
        plan p;
        gen_plan(&p, iter % 3 == 0 ? GEN_RICH : GEN_MEDIUM, iter % 2);
        size_t n1 = 0, n2 = 0, n3 = 0;
        uint8_t *b1 = plan_bytes(&p, "det1.plan", &n1);
        gen_rejunk(&p);
        uint8_t *b2 = plan_bytes(&p, "det2.plan", &n2);
        CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0,
              "iteration %d: the same plan (with different junk outside the format) gave different bytes", iter);
        /* Read back, write again: still the same bytes. */
        plan q;
        diag d;
        diag_init(&d);
        if (b1 && plan_read_memory(&q, b1, n1, "det.plan", &d) == 0) {
            uint8_t *b3 = plan_bytes(&q, "det3.plan", &n3);
            CHECK(b3 && n3 == n1 && memcmp(b1, b3, n1) == 0, "iteration %d: rewriting a read plan changed bytes", iter);
            free(b3);
            plan_free(&q);
        } else {
            CHECK(0, "iteration %d: %s", iter, d.text);
        }
        free(b1);
        free(b2);
        plan_free(&p);
    }
}

/* ---- the layout is the documented one ---------------------------------------- */

static void test_layout_matches_spec(void) {
    plan p;
    gen_plan(&p, GEN_RICH, 1);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "layout.plan", &len);
    if (!b) {
        plan_free(&p);
        return;
    }
    CHECK(memcmp(b, "BERTCPLN", 8) == 0, "magic");
    CHECK(ld32(b + 0x08) == PLAN_FORMAT_VERSION, "version");
    CHECK(b[0x0C] == 4 && b[0x0D] == 3 && b[0x0E] == 2 && b[0x0F] == 1, "endianness probe bytes");
    CHECK(ld64(b + 0x10) == len, "file_size");
    CHECK(ld32(b + 0x18) == 128, "header_size");
    CHECK(ld64(b + 0x20) == 128, "section table right after the header");
    CHECK(ld32(b + 0x28) == 10, "10 sections with a tokenizer and labels, got %u", ld32(b + 0x28));
    static const uint8_t scalars[8] = {1, 2, 4, 8, 4, 8, 0, 0};
    CHECK(memcmp(b + 0x30, scalars, 8) == 0, "scalar sizes");
    static const uint16_t records[12] = {128, 32, 80, 192, 40, 16, 32, 256, 48, 16, 80, 0};
    for (int i = 0; i < 12; i++)
        CHECK(b[0x38 + 2 * i] == (records[i] & 0xff) && b[0x39 + 2 * i] == records[i] >> 8, "record size %d", i);
    CHECK(ld32(b + 0x50) == 0x3FC00000u && ld64(b + 0x58) == 0xC004000000000000ull, "float probes");
    for (int i = 0x60; i < 0x80; i++) CHECK(b[i] == 0, "reserved header byte 0x%x", i);

    tsec strings, sig, kern, sched;
    CHECK(find_section(b, 1, &strings) && find_section(b, 2, &sig) && find_section(b, 3, &kern) &&
              find_section(b, 5, &sched),
          "sections by kind");
    const char *str = (const char *)b + strings.off;
    CHECK(strcmp(str + ld32(b + 0x2C), p.producer) == 0, "producer via the string table");
    /* Table entries in kind order, each naming its section, offsets 256-aligned and ascending. */
    static const char *const names[] = {"STRINGS", "SIGNATURE", "KERNELS", "IMAGES", "SCHEDULES",
                                        "TOKENIZER", "KERNEL_SOURCES", "IMAGE_DATA", "WEIGHTS", "LABELS"};
    uint64_t prev_end = 128 + 10 * 32;
    for (int i = 0; i < 10; i++) {
        const uint8_t *e = b + 128 + 32 * i;
        CHECK(ld32(e) == (uint32_t)i + 1, "entry %d kind", i);
        CHECK(strcmp(str + ld32(e + 4), names[i]) == 0, "entry %d name", i);
        CHECK(ld64(e + 8) % 256 == 0 && ld64(e + 8) >= prev_end, "entry %d offset", i);
        CHECK(ld32(e + 24) == crc32c_update(0, b + ld64(e + 8), (size_t)ld64(e + 16)), "entry %d crc", i);
        CHECK(ld32(e + 28) == 0, "entry %d reserved", i);
        prev_end = ld64(e + 8) + ld64(e + 16);
    }
    /* SIGNATURE fields. */
    const uint8_t *s = b + sig.off;
    CHECK(sig.size == 80, "signature size");
    CHECK(strcmp(str + ld32(s), p.model_name) == 0, "model_name");
    CHECK(ld32(s + 4) == (uint32_t)p.precision && (int64_t)ld64(s + 8) == p.max_seq_len, "precision/max_seq_len");
    CHECK((int64_t)ld64(s + 16) == p.hidden && (int64_t)ld64(s + 24) == p.vocab_size &&
              (int64_t)ld64(s + 32) == p.type_vocab_size,
          "sizes");
    CHECK(ld32(s + 40) == (uint32_t)p.has_token_type_ids && ld32(s + 44) == (uint32_t)p.has_attention_mask, "flags");
    CHECK((int32_t)ld32(s + 48) == p.token_type_default && (int32_t)ld32(s + 52) == p.attention_mask_default,
          "defaults");
    CHECK(ld64(s + 56) == p.arena_bytes && ld32(s + 64) == (uint32_t)p.nkernels &&
              ld32(s + 68) == (uint32_t)p.nimages && ld32(s + 72) == (uint32_t)p.nbuckets &&
              ld32(s + 76) == (uint32_t)p.fusion,
          "arena, counts and fusion");
    /* Kernel 0. */
    const uint8_t *k = b + kern.off;
    const kernel_spec *ks = &p.kernels[0].spec;
    float eps, scale;
    uint32_t u = ld32(k + 40);
    memcpy(&eps, &u, 4);
    u = ld32(k + 88);
    memcpy(&scale, &u, 4);
    CHECK(strcmp(str + ld32(k), p.kernels[0].entry) == 0 && ld32(k + 4) == (uint32_t)p.kernels[0].nargs, "kernel entry");
    CHECK(ld64(k + 16) == strlen(p.kernels[0].source), "kernel source_len");
    CHECK(ld32(k + 24) == (uint32_t)ks->kind && (int32_t)ld32(k + 32) == ks->bucket && eps == ks->eps, "kernel spec");
    CHECK((int32_t)ld32(k + 80) == ks->heads && scale == ks->scale && (int32_t)ld32(k + 128) == ks->res_ld &&
              ld32(k + 136) == (uint32_t)ks->act && ld32(k + 140) == (uint32_t)ks->pool_mode &&
              ld32(k + 144) == (uint32_t)ks->normalize && (int32_t)ld32(k + 148) == ks->qtile &&
              (int32_t)ld32(k + 152) == ks->pad_id && (int32_t)ld32(k + 156) == ks->bias_ld &&
              (int32_t)ld32(k + 160) == ks->tile_m && (int32_t)ld32(k + 164) == ks->tile_n &&
              (int32_t)ld32(k + 168) == ks->splits,
          "kernel spec tail");
    CHECK(ld32(k + 172) == (uint32_t)ks->packed && (int32_t)ld32(k + 176) == ks->seq_qtile[0] &&
              (int32_t)ld32(k + 188) == ks->seq_qtile[3],
          "kernel packed fields");
    /* Bucket 0, its first step (a launch) and second (a GEMM). */
    const uint8_t *q = b + sched.off;
    const sched_bucket *b0 = &p.buckets[0];
    CHECK((int)ld32(q) == b0->seq_len && (int)ld32(q + 4) == b0->nsteps && (int)ld32(q + 8) == b0->noutputs &&
              ld32(q + 12) == 0 && ld64(q + 16) == b0->arena_bytes && ld32(q + 24) == b0->counter_bytes &&
              ld32(q + 28) == (uint32_t)PLAN_CC_MAX << 16,
          "bucket 0 record (one variant: capabilities 0 to 65535)");
    const sched_bucket *bl = &p.buckets[p.nbuckets - 1];
    const uint8_t *ql = q + PLAN_BUCKET_RECORD_SIZE * (size_t)(p.nbuckets - 1);
    CHECK((int)ld32(ql) == bl->seq_len && (int)ld32(ql + 12) == bl->max_seqs, "last bucket's max_seqs");
    const uint8_t *st = q + PLAN_BUCKET_RECORD_SIZE * (size_t)p.nbuckets;
    const sched_launch *l = &b0->steps[0].launch;
    CHECK(ld32(st) == 0 && strcmp(str + ld32(st + 4), b0->steps[0].name) == 0, "step 0 kind/name");
    CHECK(ld64(st + 16) == b0->steps[0].min_hbm_bytes, "step 0 min_hbm_bytes");
    CHECK((int)ld32(st + 24) == l->kernel && ld32(st + 28) == l->dims.grid[0] && ld32(st + 40) == l->dims.block[0] &&
              ld32(st + 52) == l->dims.shared_bytes && (int)ld32(st + 56) == l->nargs,
          "launch fields");
    CHECK(ld32(st + 64) == (uint32_t)l->args[0].buf && ld64(st + 72) == l->args[0].offset, "launch arg 0");
    const uint8_t *g = st + 256;
    const sched_gemm *gm = &b0->steps[1].gemm;
    CHECK(ld32(g) == 1 && ld32(g + 24) == (uint32_t)gm->transa && (int64_t)ld64(g + 32) == gm->m &&
              (int64_t)ld64(g + 56) == gm->lda && (int64_t)ld64(g + 88) == gm->stride_a &&
              (int)ld32(g + 120) == gm->batch_count && ld32(g + 144) == (uint32_t)gm->epilogue,
          "gemm fields");
    CHECK(ld32(g + 152) == (uint32_t)gm->a.buf && ld64(g + 160) == gm->a.offset && ld32(g + 216) == (uint32_t)gm->bias.buf,
          "gemm refs");
    free(b);
    plan_free(&p);
}

/*
 * The worked example of docs/plan-format.md: a fixed plan whose header and
 * section table are printed in the specification.  Any change to the layout
 * changes these bytes, so the document cannot silently go stale.
 */
static void example_plan(plan *p) {
    plan_init(p);
    p->model_name = xstrdup("example");
    p->producer = xstrdup("bertc 0.1.0");
    p->precision = PLAN_DTYPE_F32;
    p->max_seq_len = 128;
    p->hidden = 4;
    p->vocab_size = 8;
    p->type_vocab_size = 2;
    p->has_token_type_ids = 1;
    p->has_attention_mask = 1;
    p->token_type_default = 0;
    p->attention_mask_default = 1;
    uint8_t *w = malloc(64);
    for (int i = 0; i < 64; i++) w[i] = (uint8_t)i;
    p->weights = w;
    p->weights_size = 64;
    p->owns_weights = 1;
    p->nkernels = 1;
    p->kernels = calloc(1, sizeof p->kernels[0]);
    p->kernels[0].entry = xstrdup("bertc_add_ln_b8");
    p->kernels[0].source = xstrdup("// add_ln\n");
    p->kernels[0].nargs = 9;
    kernel_spec *ks = &p->kernels[0].spec;
    ks->kind = KERNEL_KIND_ADD_LN;
    ks->dtype = PLAN_DTYPE_F32;
    ks->bucket = 0; /* add_ln serves any bucket */
    ks->hidden = 4;
    ks->eps = 1e-12f;
    ks->has_bias = 1;
    ks->has_residual = 1;
    p->nimages = 1;
    p->images = calloc(1, sizeof p->images[0]);
    strcpy(p->images[0].arch, "emu");
    p->images[0].kind = PLAN_IMAGE_EMU;
    uint8_t *img = malloc(16);
    memcpy(img, "\x7f" "ELF-example-img", 16);
    p->images[0].data = img;
    p->images[0].size = 16;
    p->nbuckets = 1;
    p->buckets = calloc(1, sizeof p->buckets[0]);
    sched_bucket *b = &p->buckets[0];
    b->seq_len = 8;
    b->arena_bytes = 256;
    p->arena_bytes = 256;
    b->nsteps = 2;
    b->steps = calloc(2, sizeof b->steps[0]);
    b->steps[0].kind = SCHED_STEP_GEMM;
    b->steps[0].name = xstrdup("layer0/dense");
    sched_gemm *g = &b->steps[0].gemm;
    g->transa = 1;
    g->m = 4, g->n = 8, g->k = 4;
    g->lda = 4, g->ldb = 4, g->ldc = 4, g->ldd = 4;
    g->batch_count = 1;
    g->alpha = 1.0f;
    g->epilogue = SCHED_EPILOGUE_DEFAULT;
    g->a = (sched_ref){SCHED_BUF_WEIGHTS, 0};
    g->b = (sched_ref){SCHED_BUF_ARENA, 0};
    g->c = (sched_ref){SCHED_BUF_ARENA, 128};
    g->d = (sched_ref){SCHED_BUF_ARENA, 128};
    b->steps[0].flops = 256;
    b->steps[0].min_hbm_bytes = 320;
    b->steps[1].kind = SCHED_STEP_KERNEL;
    b->steps[1].name = xstrdup("layer0/add_ln");
    sched_launch *l = &b->steps[1].launch;
    l->kernel = 0;
    l->dims = (kernel_launch_dims){{8, 1, 1}, {32, 1, 1}, 0};
    l->nargs = 9;
    sched_ref args[9] = {{SCHED_BUF_ARENA, 0},    {SCHED_BUF_REQUEST, 0},  {SCHED_BUF_ARENA, 128}, {SCHED_BUF_WEIGHTS, 16},
                         {SCHED_BUF_ARENA, 0},    {SCHED_BUF_WEIGHTS, 32}, {SCHED_BUF_WEIGHTS, 48}, {SCHED_BUF_NONE, 0},
                         {SCHED_BUF_NONE, 0}};
    memcpy(l->args, args, sizeof args);
    b->steps[1].flops = 160;
    b->steps[1].min_hbm_bytes = 448;
    b->noutputs = 1;
    b->outputs = calloc(1, sizeof b->outputs[0]);
    b->outputs[0] = (sched_output){xstrdup("last_hidden_state"), {SCHED_BUF_ARENA, 0}, PLAN_DTYPE_F32, 1, 0, 4, 4};
}

/*
 * The example plan with its add_ln step turned into a GEMM_LN launch that
 * keeps the contract: its workspace in the arena, its arrival counters in
 * the bucket's COUNTERS buffer.  The fields the split-K kernels brought in
 * (the counters buffer, tiles, fusion) are then damaged one at a time; the
 * writer's read-back must refuse each with its field named.
 */
static void counters_plan(plan *p) {
    example_plan(p);
    p->fusion = PLAN_FUSION_DEFAULT;
    kernel_spec *ks = &p->kernels[0].spec;
    memset(ks, 0, sizeof *ks);
    ks->kind = KERNEL_KIND_GEMM_LN;
    ks->dtype = PLAN_DTYPE_F32;
    ks->bucket = 8;
    ks->n = ks->k = ks->x_ld = ks->out_ld = ks->res_ld = 4;
    ks->eps = 1e-12f;
    ks->has_residual = 1;
    ks->tile_m = 16;
    ks->tile_n = 64;
    ks->splits = 1;
    p->kernels[0].nargs = kernel_kind_arg_count(KERNEL_KIND_GEMM_LN);
    sched_bucket *b = &p->buckets[0];
    sched_launch *l = &b->steps[1].launch;
    diag d;
    diag_init(&d);
    kernel_launch_dims_of(ks, 8, &l->dims, &d);
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_of(ks, 8, a);
    l->nargs = p->kernels[0].nargs;
    /* out, req, x, w (the weights' first 64 bytes), no bias, residual, gamma, beta, workspace, counters,
     * then the prefetch pair (the whole blob) */
    sched_ref args[KERNEL_MAX_ARGS] = {{SCHED_BUF_ARENA, 0},    {SCHED_BUF_REQUEST, 0}, {SCHED_BUF_ARENA, 256},
                                       {SCHED_BUF_WEIGHTS, 0},  {SCHED_BUF_NONE, 0},    {SCHED_BUF_ARENA, 512},
                                       {SCHED_BUF_WEIGHTS, 16}, {SCHED_BUF_WEIGHTS, 32}, {SCHED_BUF_ARENA, 768},
                                       {SCHED_BUF_COUNTERS, 0}, {SCHED_BUF_WEIGHTS, 0}, {SCHED_BUF_WEIGHTS, 63}};
    memcpy(l->args, args, sizeof args);
    b->arena_bytes = p->arena_bytes = 768 + a[8].bytes;
    b->counter_bytes = (uint32_t)a[9].bytes;
}

static void expect_write_fail(plan *p, const char *label, const char *needle) {
    diag d;
    diag_init(&d);
    const char *path = tmp_path("counters.plan");
    int rc = plan_write(p, path, &d);
    CHECK(rc != 0 && strstr(d.text, needle), "%s: expected '%s', got: %s", label, needle, rc ? d.text : "written");
}

static void test_counters_contract(void) {
    plan p;
    counters_plan(&p);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "counters.plan", &len);
    plan q;
    diag d;
    diag_init(&d);
    if (b && plan_read_memory(&q, b, len, "counters.plan", &d) == 0) {
        CHECK(!plan_diff(&p, &q), "counters plan: %s differs", diff_why);
        CHECK(q.counter_bytes == p.buckets[0].counter_bytes && q.fusion == PLAN_FUSION_DEFAULT, "counter_bytes %llu",
              (unsigned long long)q.counter_bytes);
        plan_free(&q);
    } else {
        CHECK(0, "counters plan: %s", d.text);
    }
    free(b);
    sched_launch *l = &p.buckets[0].steps[1].launch;
    sched_bucket *bk = &p.buckets[0];
    sched_ref keep = l->args[9];
    l->args[9] = (sched_ref){SCHED_BUF_ARENA, 0};
    expect_write_fail(&p, "counters in the arena", "argument 9 is arrival counters; it cannot be the arena buffer");
    l->args[9] = (sched_ref){SCHED_BUF_COUNTERS, 4};
    expect_write_fail(&p, "counters past the buffer", "field launch.args[9].offset: 4 lies outside the counters buffer");
    l->args[9] = keep;
    l->args[5] = (sched_ref){SCHED_BUF_COUNTERS, 0};
    expect_write_fail(&p, "residual in the counters", "argument 5 is read; it cannot be the counters buffer");
    l->args[5] = (sched_ref){SCHED_BUF_ARENA, 512};
    bk->counter_bytes -= 4;
    expect_write_fail(&p, "too few counters", "lies outside the counters buffer (0 bytes)");
    bk->counter_bytes += 4;
    l->args[3] = (sched_ref){SCHED_BUF_WEIGHTS, 16};
    expect_write_fail(&p, "weights past the blob", "touches 64 bytes from offset 16, past the end of the weights");
    l->args[3] = (sched_ref){SCHED_BUF_WEIGHTS, 0};
    bk->outputs[0].ref = (sched_ref){SCHED_BUF_COUNTERS, 0};
    expect_write_fail(&p, "output in the counters", "an output cannot live in the counters buffer");
    bk->outputs[0].ref = (sched_ref){SCHED_BUF_ARENA, 0};
    bk->steps[0].gemm.c = (sched_ref){SCHED_BUF_COUNTERS, 0};
    expect_write_fail(&p, "gemm operand in the counters", "the counters buffer cannot hold a GEMM operand");
    bk->steps[0].gemm.c = (sched_ref){SCHED_BUF_ARENA, 128};
    p.kernels[0].spec.tile_m = 48;
    expect_write_fail(&p, "tile", "tile 48x64 is not one of");
    p.kernels[0].spec.tile_m = 16;
    p.kernels[0].spec.splits = 2;
    expect_write_fail(&p, "splits", "2 splits of 1 k-tiles");
    p.kernels[0].spec.splits = 1;
    p.kernels[0].spec.has_act = 1;
    expect_write_fail(&p, "activation", "an activation before the LayerNorm");
    p.kernels[0].spec.has_act = 0;
    b = plan_bytes(&p, "counters.plan", &len);
    CHECK(b != NULL, "the repaired plan does not write");
    free(b);
    plan_free(&p);
}

static const uint8_t example_head[128 + 8 * 32] = {
    0x42, 0x45, 0x52, 0x54, 0x43, 0x50, 0x4c, 0x4e, 0x09, 0x00, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01,
    0x40, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0xf1, 0xd8, 0x1c, 0x06,
    0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x4d, 0x00, 0x00, 0x00,
    0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x00, 0x00, 0x80, 0x00, 0x20, 0x00, 0x50, 0x00, 0xc0, 0x00,
    0x28, 0x00, 0x10, 0x00, 0x20, 0x00, 0x00, 0x01, 0x30, 0x00, 0x10, 0x00, 0x50, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xc0,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x9e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xea, 0x4d, 0xb3, 0x82, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x50, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x69, 0xbe, 0x1c, 0xdb, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x6d, 0x3b, 0x57, 0xff, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x1a, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x38, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc6, 0xeb, 0x9e, 0x1c, 0x00, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x50, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x17, 0xc0, 0x2f, 0x0a, 0x00, 0x00, 0x00, 0x00,
    0x07, 0x00, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x41, 0xd3, 0xbc, 0x4a, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x3a, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb1, 0xf1, 0x2b, 0xee, 0x00, 0x00, 0x00, 0x00,
    0x09, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xeb, 0x36, 0x6d, 0xfb, 0x00, 0x00, 0x00, 0x00,
};

static void hexdump(FILE *f, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        fprintf(f, "%08zx ", i);
        for (size_t j = i; j < i + 16 && j < n; j++) fprintf(f, " %02x", b[j]);
        fprintf(f, "\n");
    }
}

static void test_spec_example(void) {
    plan p;
    example_plan(&p);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "example.plan", &len);
    if (b) {
        int same = len >= sizeof example_head && memcmp(b, example_head, sizeof example_head) == 0;
        CHECK(same, "the example plan's header and table differ from docs/plan-format.md (dump on stderr)");
        if (!same) {
            fprintf(stderr, "example plan, %zu bytes; header and table:\n", len);
            hexdump(stderr, b, len < sizeof example_head ? len : sizeof example_head);
        }
        CHECK(len == ld64(b + 0x10), "file size");
        plan q;
        diag d;
        diag_init(&d);
        if (plan_read_memory(&q, b, len, "example.plan", &d) == 0) {
            if (plan_diff(&p, &q)) CHECK(0, "example: %s differs", diff_why);
            plan_free(&q);
        } else {
            CHECK(0, "example: %s", d.text);
        }
    }
    free(b);
    plan_free(&p);
}

/* ---- hostile files --------------------------------------------------------------- */

static void test_truncation(void) {
    /* A small plan: every length. */
    plan p;
    gen_plan(&p, GEN_SMALL, 1);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "small.plan", &len);
    plan_free(&p);
    if (!b) return;
    int bad = 0;
    for (size_t n = 0; n < len && bad < 3; n++) {
        uint8_t *c = dup_bytes(b, n);
        if (!EXPECT_FAIL(c, n, "truncated small plan", "truncated")) bad++;
        free(c);
    }
    printf("# truncated a %zu-byte plan at every length\n", len);
    free(b);

    /* A bigger one: sampled lengths, and every section boundary +-1. */
    gen_plan(&p, GEN_RICH, 1);
    b = plan_bytes(&p, "big.plan", &len);
    plan_free(&p);
    if (!b) return;
    size_t cuts[400];
    int ncuts = 0;
    for (int i = 0; i < 300; i++) cuts[ncuts++] = (size_t)check_rng_range(0, (int64_t)len - 1);
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        tsec s;
        if (!find_section(b, k, &s)) continue;
        size_t edges[4] = {(size_t)s.off - 1, (size_t)s.off + 1, (size_t)(s.off + s.size) - 1, (size_t)s.off};
        for (int e = 0; e < 4; e++)
            if (edges[e] < len) cuts[ncuts++] = edges[e];
    }
    for (int i = 0; i < ncuts && bad < 6; i++) {
        uint8_t *c = dup_bytes(b, cuts[i]);
        if (!EXPECT_FAIL(c, cuts[i], "truncated plan", "truncated")) bad++;
        free(c);
    }
    /* Trailing bytes are as wrong as missing ones. */
    uint8_t *longer = malloc(len + 7);
    memcpy(longer, b, len);
    memset(longer + len, 0, 7);
    EXPECT_FAIL(longer, len + 7, "trailing bytes", "field file_size", "trailing bytes");
    free(longer);

    /* Through files and plan_read (the mmap path), including the empty file. */
    const char *path = tmp_path("cut.plan");
    for (int i = 0; i < 12; i++) {
        size_t n = i == 0 ? 0 : i == 1 ? 7 : (size_t)check_rng_range(8, (int64_t)len - 1);
        CHECK(write_file(path, b, n) == 0, "write %s", path);
        plan q;
        diag d;
        diag_init(&d);
        CHECK(plan_read(&q, path, &d) != 0 && strstr(d.text, "truncated") && strstr(d.text, path),
              "plan_read of %zu bytes: %s", n, d.text);
        CHECK(q.map == NULL, "a failed plan_read left a mapping");
    }
    unlink(path);
    free(b);
}

static void test_bit_flips(void) {
    plan p;
    gen_plan(&p, GEN_RICH, 1);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "flip.plan", &len);
    plan_free(&p);
    if (!b) return;
    uint64_t toff = ld64(b + 0x20);
    uint32_t nsec = ld32(b + 0x28);
    /* In every section: a checksum mismatch naming it. */
    for (uint32_t k = 1; k < PLAN_SECTION_KIND_END; k++) {
        tsec s;
        if (!find_section(b, k, &s)) {
            CHECK(0, "section %u missing", k);
            continue;
        }
        if (!s.size) continue;
        char want[64];
        snprintf(want, sizeof want, "section %s: checksum mismatch", plan_section_kind_name(k));
        for (int i = 0; i < 12; i++) {
            uint64_t bit = (uint64_t)check_rng_range(0, (int64_t)(8 * s.size - 1));
            b[s.off + bit / 8] ^= (uint8_t)(1u << (bit % 8));
            EXPECT_FAIL(b, len, want, want);
            b[s.off + bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
    }
    /* Every bit of the header: some header field or its checksum. */
    for (int bit = 0; bit < 8 * PLAN_HEADER_SIZE; bit++) {
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        char label[64];
        snprintf(label, sizeof label, "header bit %d", bit);
        EXPECT_FAIL(b, len, label, ": header: ");
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* The table: the header checksum covers it. */
    for (int i = 0; i < 64; i++) {
        uint64_t bit = (uint64_t)check_rng_range(0, 8 * 32 * (int64_t)nsec - 1);
        b[toff + bit / 8] ^= (uint8_t)(1u << (bit % 8));
        EXPECT_FAIL(b, len, "table bit", "checksum mismatch over the header and the section table");
        b[toff + bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* Padding between sections: not covered by a checksum, so checked to be zero. */
    tsec sig;
    if (find_section(b, PLAN_SECTION_SIGNATURE, &sig)) {
        size_t at = (size_t)(sig.off + sig.size + (uint64_t)check_rng_range(0, 256 - 80 - 1));
        b[at] ^= (uint8_t)(1u << check_rng_range(0, 7));
        EXPECT_FAIL(b, len, "padding", ": padding: ", "after SIGNATURE is not zero");
        b[at] = 0;
    }
    plan q;
    diag d;
    diag_init(&d);
    CHECK(plan_read_memory(&q, b, len, "restored.plan", &d) == 0, "the restored bytes should read: %s", d.text);
    plan_free(&q);
    free(b);
}

static void test_header_fields(void) {
    plan p;
    gen_plan(&p, GEN_MEDIUM, 0);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "hdr.plan", &len);
    plan_free(&p);
    if (!b) return;
    uint8_t *c = dup_bytes(b, len);

    memcpy(c, "BERTCPLX", 8);
    EXPECT_FAIL(c, len, "magic", "offset 0x0: header: magic is \"BERTCPLX\"", "not a bertc plan");
    static const char text[] = "name: tiny-bert\nmax_seq_len: 64\n";
    EXPECT_FAIL((const uint8_t *)text, sizeof text - 1, "text file", "not a bertc plan");
    memcpy(c, b, len);

    st32(c + 0x08, PLAN_FORMAT_VERSION + 1);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "a newer version", "offset 0x8: header: field format_version: 10 is not supported", "newer bertc",
                "recompile the model with this bertc");
    st32(c + 0x08, 8);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "version 8", "field format_version: 8 is not supported (this reader reads version 9;",
                "an older bertc wrote the plan: recompile the model with this bertc");
    st32(c + 0x08, 0);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "version 0", "field format_version: 0 is not supported");
    memcpy(c, b, len);

    c[0x0C] = 1, c[0x0D] = 2, c[0x0E] = 3, c[0x0F] = 4;
    EXPECT_FAIL(c, len, "big-endian", "offset 0xc: header: field endian_probe", "big-endian");
    st32(c + 0x0C, 0x01020305u);
    EXPECT_FAIL(c, len, "other probe", "field endian_probe: 0x01020305");
    memcpy(c, b, len);

    st32(c + 0x18, 256);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "header size", "field header_size: 256");
    memcpy(c, b, len);

    c[0x38 + 2 * PLAN_RECORD_KERNEL] = 144;
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "kernel record size",
                "offset 0x3e: header: type-size probe: the kernel record is 144 bytes in this plan, 192 in this reader");
    memcpy(c, b, len);
    c[0x33] = 4;
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "u64 size", "type-size probe: u64 is 4 bytes");
    memcpy(c, b, len);
    st32(c + 0x50, 0x3F800000u);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "f32 probe", "f32 1.5 is encoded 0x3f800000");
    memcpy(c, b, len);
    c[0x7f] = 1;
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "reserved", "offset 0x7f: header: reserved byte");
    memcpy(c, b, len);

    st32(c + 0x28, 0);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "no sections", "field section_count: 0");
    memcpy(c, b, len);
    st64(c + 0x20, (len + 8) & ~(size_t)7);
    EXPECT_FAIL(c, len, "table outside", "field section_table_offset", "runs past the end");
    st64(c + 0x20, 64);
    EXPECT_FAIL(c, len, "table in header", "field section_table_offset: 0x40");
    memcpy(c, b, len);

    c[0x1C] ^= 0x10;
    EXPECT_FAIL(c, len, "header crc", "offset 0x1c: header: checksum mismatch over the header and the section table");
    memcpy(c, b, len);
    st32(c + 0x2C, 0x7fffffffu);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "producer index", "header: field producer: string index 2147483647 is out of range");
    free(c);
    free(b);
}

static void test_section_table(void) {
    plan p;
    gen_plan(&p, GEN_MEDIUM, 1);
    for (int i = 0; i < p.nlabels; i++) free(p.labels[i]); /* WEIGHTS last: the "missing" case drops it */
    free(p.labels);
    p.labels = NULL;
    p.nlabels = 0;
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "tbl.plan", &len);
    plan_free(&p);
    if (!b) return;
    uint8_t *c = dup_bytes(b, len);
    tsec strings, sig, kern, weights;
    if (!find_section(b, PLAN_SECTION_STRINGS, &strings) || !find_section(b, PLAN_SECTION_SIGNATURE, &sig) ||
        !find_section(b, PLAN_SECTION_KERNELS, &kern) || !find_section(b, PLAN_SECTION_WEIGHTS, &weights)) {
        CHECK(0, "sections missing");
        free(c);
        free(b);
        return;
    }

    st64(c + sig.entry + 8, sig.off + 8);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "unaligned", "section table: entry 1 (SIGNATURE): field offset: ", "is not a multiple of 256");
    memcpy(c, b, len);
    st64(c + sig.entry + 16, len);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "outside", "entry 1 (SIGNATURE): field size: ", "run past the end of the file");
    memcpy(c, b, len);
    st64(c + sig.entry + 8, strings.off);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "overlap", "section table: ", " overlaps ", "SIGNATURE", "STRINGS");
    memcpy(c, b, len);
    st64(c + sig.entry + 8, 0);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "overlap with header", "SIGNATURE [0x0, ", "overlaps the header");
    memcpy(c, b, len);
    st32(c + kern.entry, PLAN_SECTION_SIGNATURE);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "duplicate", "section SIGNATURE appears twice (entries 1 and 2)");
    memcpy(c, b, len);
    st32(c + kern.entry, 42);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "unknown kind", "entry 2: field kind: unknown section kind 42");
    memcpy(c, b, len);
    st32(c + 0x28, ld32(c + 0x28) - 1); /* the last entry (WEIGHTS) drops out of the table */
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "missing", "required section WEIGHTS is missing");
    memcpy(c, b, len);
    uint32_t n1 = ld32(c + sig.entry + 4), n2 = ld32(c + kern.entry + 4);
    st32(c + sig.entry + 4, n2);
    st32(c + kern.entry + 4, n1);
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "names swapped", "entry 1 (SIGNATURE): field name: ", "is not \"SIGNATURE\"");
    memcpy(c, b, len);
    c[strings.off + strings.size - 1] = 'x';
    fix_checksums(c, len);
    EXPECT_FAIL(c, len, "unterminated strings", "section STRINGS: the last byte is 0x78, not NUL");
    memcpy(c, b, len);
    st32(c + sig.entry + 24, ld32(c + sig.entry + 24) ^ 1);
    fix_checksums(c, len);
    st32(c + sig.entry + 24, ld32(c + sig.entry + 24) ^ 1);
    st32(c + 0x1C, 0);
    st32(c + 0x1C, crc32c_update(crc32c_update(0, c, 128), c + 128, 32 * (size_t)ld32(c + 0x28)));
    EXPECT_FAIL(c, len, "section crc field", "section SIGNATURE: checksum mismatch (stored 0x");
    free(c);
    free(b);
}

/* Offsets into a written plan (by the documented layout) for the semantic corruptions. */
typedef struct tplan {
    uint8_t *b;
    size_t len;
    tsec strings, sig, kern, img, sched, tok;
    uint32_t nkernels, nimages, nbuckets;
    size_t bucket0, step0, step1, out0; /* absolute offsets of records in bucket 0 */
    size_t bucket1;
} tplan;

static int tplan_load(tplan *t, const plan *p) {
    memset(t, 0, sizeof *t);
    t->b = plan_bytes(p, "sem.plan", &t->len);
    if (!t->b) return 0;
    const uint8_t *b = t->b;
    if (!find_section(b, PLAN_SECTION_STRINGS, &t->strings) || !find_section(b, PLAN_SECTION_SIGNATURE, &t->sig) ||
        !find_section(b, PLAN_SECTION_KERNELS, &t->kern) || !find_section(b, PLAN_SECTION_IMAGES, &t->img) ||
        !find_section(b, PLAN_SECTION_SCHEDULES, &t->sched))
        return 0;
    find_section(b, PLAN_SECTION_TOKENIZER, &t->tok);
    t->nkernels = ld32(b + t->sig.off + 64);
    t->nimages = ld32(b + t->sig.off + 68);
    t->nbuckets = ld32(b + t->sig.off + 72);
    t->bucket0 = (size_t)t->sched.off;
    t->bucket1 = t->bucket0 + PLAN_BUCKET_RECORD_SIZE;
    t->step0 = (size_t)t->sched.off + PLAN_BUCKET_RECORD_SIZE * t->nbuckets;
    t->step1 = t->step0 + 256;
    t->out0 = t->step0 + 256 * (size_t)ld32(b + t->bucket0 + 4);
    return 1;
}

static void test_semantic_errors(void) {
    plan p;
    gen_plan(&p, GEN_RICH, 1);
    tplan t;
    if (!tplan_load(&t, &p)) {
        CHECK(0, "cannot lay out the test plan");
        free(t.b);
        plan_free(&p);
        return;
    }
    uint8_t *c = dup_bytes(t.b, t.len);
    size_t len = t.len;
    const plan_kernel *k0 = &p.kernels[0];
    const sched_bucket *b0 = &p.buckets[0];
    char want[256];

#define RESET() memcpy(c, t.b, len)
#define FIXED_FAIL(label, ...)               \
    do {                                     \
        fix_checksums(c, len);               \
        EXPECT_FAIL(c, len, label, __VA_ARGS__); \
        RESET();                             \
    } while (0)

    /* String index out of range. */
    st32(c + t.sig.off, (uint32_t)t.strings.size + 7);
    snprintf(want, sizeof want, "field model_name: string index %u is out of range (the string table has %llu bytes)",
             (unsigned)t.strings.size + 7, (unsigned long long)t.strings.size);
    FIXED_FAIL("string index", "section SIGNATURE: ", want);
    st32(c + t.step0 + 4, 0xFFFFFFFFu); /* NONE is not allowed for a step name */
    FIXED_FAIL("step name NONE", "section SCHEDULES: bucket 0 (seq_len", "step 0: field name: string index 4294967295");
    if (t.tok.size) {
        st32(c + t.tok.off + 80 + ((ld64(c + t.tok.off + 40) + 7) / 8 * 8) +
                 (ld32(c + t.tok.off) == TOKDESC_MODEL_UNIGRAM ? 8 * (size_t)ld32(c + t.tok.off + 32) : 0) +
                 12 * (size_t)ld32(c + t.tok.off + 36) + 32 * (size_t)ld32(c + t.tok.off + 48) +
                 32 * (size_t)ld32(c + t.tok.off + 52) + 4,
             (uint32_t)t.strings.size);
        FIXED_FAIL("token index", "section TOKENIZER: added token 0: field content: string index");
    }

    /* Kernel index out of range in a launch; nargs; dims; refs. */
    st32(c + t.step0 + 24, t.nkernels + 3);
    snprintf(want, sizeof want, "field launch.kernel: kernel index %u is out of range (the plan has %u kernels)",
             t.nkernels + 3, t.nkernels);
    FIXED_FAIL("kernel index", "section SCHEDULES: bucket 0 (seq_len ", "step 0 \"", want);
    st32(c + t.step0 + 56, (uint32_t)k0->nargs % 8 + 1);
    snprintf(want, sizeof want, "field launch.nargs: %d, but kernel 0 (%s) takes %d arguments", k0->nargs % 8 + 1,
             k0->entry, k0->nargs);
    FIXED_FAIL("nargs", want);
    st32(c + t.step0 + 32, 0);
    FIXED_FAIL("zero grid", "field launch.grid[1]: 0 (launch dimensions are at least 1)");
    st32(c + t.step0 + 48, 0);
    FIXED_FAIL("zero block", "field launch.block[2]: 0");
    st32(c + t.step0 + 64, SCHED_BUF_ARENA);
    st64(c + t.step0 + 72, b0->arena_bytes);
    snprintf(want, sizeof want, "field launch.args[0].offset: %llu lies outside the arena buffer (%llu bytes)",
             (unsigned long long)b0->arena_bytes, (unsigned long long)b0->arena_bytes);
    FIXED_FAIL("arena ref", want);
    st32(c + t.step0 + 64, SCHED_BUF_REQUEST);
    st64(c + t.step0 + 72, 16 + 12 * (uint64_t)b0->seq_len);
    FIXED_FAIL("request ref", "field launch.args[0].offset", "outside the request buffer");
    st32(c + t.step0 + 64, SCHED_BUF_WEIGHTS);
    st64(c + t.step0 + 72, p.weights_size);
    FIXED_FAIL("weights ref", "field launch.args[0].offset", "outside the weights buffer");
    st32(c + t.step0 + 64, 5);
    FIXED_FAIL("buf enum", "field launch.args[0].buf: 5 is not a buffer");
    st32(c + t.step0 + 64, SCHED_BUF_NONE);
    st64(c + t.step0 + 72, 8);
    FIXED_FAIL("none with offset", "field launch.args[0].offset: 8 lies outside the none buffer");
    if (k0->nargs < KERNEL_MAX_ARGS) {
        c[t.step0 + 64 + 16 * (size_t)k0->nargs + 3] = 1;
        FIXED_FAIL("junk in unused arg", "zero padding");
    }

    /* The launch contract (plan_kernels.h): dimensions as compiled, every
     * argument's whole extent inside a buffer it may be in. */
    st32(c + t.step0 + 28, 65535);
    st32(c + t.step0 + 32, 65535);
    st32(c + t.step0 + 36, 64);
    snprintf(want, sizeof want, "but kernel %s is launched with grid", k0->entry);
    FIXED_FAIL("grid of a hang", "field launch.grid: grid (65535, 65535, 64)", want);
    st32(c + t.step0 + 52, ld32(c + t.step0 + 52) + 16);
    FIXED_FAIL("shared memory", "field launch.grid: ", "bytes of shared memory, but kernel");
    kernel_arg a0[KERNEL_MAX_ARGS];
    kernel_args_of(&k0->spec, b0->seq_len, a0);
    st32(c + t.step0 + 64, SCHED_BUF_ARENA);
    st64(c + t.step0 + 72, b0->arena_bytes - 4);
    snprintf(want, sizeof want, "field launch.args[0]: kernel %s touches %llu bytes from offset %llu, past the end of the "
                                "arena buffer", k0->entry, (unsigned long long)a0[0].bytes, (unsigned long long)b0->arena_bytes - 4);
    FIXED_FAIL("output past the arena", want);
    st32(c + t.step0 + 64, SCHED_BUF_WEIGHTS);
    st64(c + t.step0 + 72, 0);
    FIXED_FAIL("output into the weights", "field launch.args[0]: kernel", "argument 0 is written; it cannot be the weights buffer");
    st64(c + t.step0 + 64 + 16 + 8, 4);
    FIXED_FAIL("request block offset", "field launch.args[1]: ", "argument 1 is the request block; it cannot be the request buffer at 4");
    /* the prefetch pair: weights or nothing, both the same, first <= last */
    uint8_t *pf = c + t.step0 + 64 + 16 * (k0->nargs - 2);
    st32(pf, SCHED_BUF_ARENA);
    st32(pf + 16, SCHED_BUF_ARENA);
    FIXED_FAIL("prefetch in the arena", "is a prefetch bound; it cannot be the arena buffer");
    st32(pf, SCHED_BUF_WEIGHTS);
    st64(pf + 8, 8);
    st32(pf + 16, SCHED_BUF_NONE); /* the generated pair may have been two weight offsets */
    st64(pf + 24, 0);
    FIXED_FAIL("prefetch half NONE", "the prefetch range of kernel", "two weight offsets or two NONE references");
    st32(pf, SCHED_BUF_WEIGHTS);
    st64(pf + 8, 8);
    st32(pf + 16, SCHED_BUF_WEIGHTS);
    st64(pf + 24, 4);
    FIXED_FAIL("prefetch reversed", "prefetch range starts at 8, after its last byte 4");
    st32(pf, SCHED_BUF_WEIGHTS);
    st32(pf + 16, SCHED_BUF_WEIGHTS);
    st64(pf + 24, p.weights_size);
    FIXED_FAIL("prefetch past the weights", "lies outside the weights buffer");
    st32(c + t.kern.off + 32, 70000);
    if (kernel_kind_bucket_free(k0->spec.kind))
        FIXED_FAIL("kernel bucket", "section KERNELS: kernel 0: field spec: kernel ", "bucket 70000 (the kind serves every bucket: 0)");
    else
        FIXED_FAIL("kernel bucket", "section KERNELS: kernel 0: field spec: kernel ", "bucket 70000 outside 1..65536");
    st32(c + t.kern.off + 4, (uint32_t)kernel_kind_arg_count(k0->spec.kind) % 7 + 1);
    FIXED_FAIL("kernel nargs", "section KERNELS: kernel 0: field nargs: ", "kernel takes");
    st64(c + t.step1 + 112, b0->arena_bytes); /* stride_d */
    st32(c + t.step1 + 120, 2);                /* batch_count */
    FIXED_FAIL("gemm past its buffers", "step 1 \"", "past the end of the");
    st32(c + t.step1 + 200, SCHED_BUF_WEIGHTS);
    st64(c + t.step1 + 208, 0);
    FIXED_FAIL("gemm result into the weights", "field gemm.d: the weights buffer cannot hold a GEMM result");

    /* Step kind, gemm fields. */
    st32(c + t.step0, 7);
    FIXED_FAIL("step kind", "step 0: field kind: 7 is not a step kind");
    st32(c + t.step1 + 144, 3);
    FIXED_FAIL("epilogue", "step 1 \"", "field gemm.epilogue: 3 is not an epilogue");
    const sched_gemm *g1 = &b0->steps[1].gemm;
    st64(c + t.step1 + 56, (uint64_t)(g1->transa ? g1->k : g1->m) - 1);
    FIXED_FAIL("lda", "field gemm.lda: ", "is below the minimum");
    st32(c + t.step1 + 144, g1->epilogue & SCHED_EPILOGUE_BIAS ? SCHED_EPILOGUE_DEFAULT : SCHED_EPILOGUE_BIAS);
    FIXED_FAIL("bias vs epilogue", "field gemm.bias: ");
    st32(c + t.step1 + 152, SCHED_BUF_NONE);
    st64(c + t.step1 + 160, 0);
    FIXED_FAIL("missing A", "field gemm.a.buf: the operand is required");
    st32(c + t.step1 + 132, PLAN_DTYPE_I32);
    FIXED_FAIL("bias type", "field gemm.bias_type: 3 is not a float storage type");

    /* Buckets. */
    st32(c + t.bucket1, (uint32_t)b0->seq_len);
    FIXED_FAIL("bucket order", "bucket 1: field seq_len: ", "buckets ascend strictly");
    st32(c + t.bucket0, (uint32_t)p.max_seq_len + 1);
    FIXED_FAIL("bucket > max", "bucket 0: field seq_len: ", "(max_seq_len)");
    st32(c + t.bucket0, 0);
    FIXED_FAIL("bucket 0 length", "bucket 0: field seq_len: 0 is not in 1..");
    st32(c + t.bucket0 + 4, ld32(c + t.bucket0 + 4) + 1);
    FIXED_FAIL("step count", "section SCHEDULES: ");
    st64(c + t.bucket0 + 16, p.arena_bytes + 1);
    FIXED_FAIL("arena vs signature", "section SIGNATURE: field arena_bytes: ");

    /* Outputs. */
    st64(c + t.out0 + 32, 0);
    FIXED_FAIL("output cols", "output 0: field cols: 0 is below the minimum 1");
    st64(c + t.out0 + 16, buffer_size(&p, b0, b0->outputs[0].ref.buf) - 1);
    FIXED_FAIL("output extent", "output 0: field row_stride: ", "run past the end of the");

    /* Signature fields. */
    st32(c + t.sig.off + 4, 3);
    FIXED_FAIL("precision", "section SIGNATURE: field precision: 3 is not a float storage type");
    st32(c + t.sig.off + 44, 2);
    FIXED_FAIL("flag", "field has_attention_mask: 2 is not a flag");
    st32(c + t.sig.off + 76, 2);
    FIXED_FAIL("fusion", "section SIGNATURE: field fusion: 2 is not a fusion level");
    st32(c + t.sig.off + 64, t.nkernels + 1);
    FIXED_FAIL("kernel count", "section KERNELS: the section has", "kernel records of 192 bytes");
    st32(c + t.sig.off + 72, 0);
    FIXED_FAIL("no buckets", "field nbuckets: 0");

    /* Kernel records. */
    st32(c + t.kern.off + 24, KERNEL_KIND_COUNT);
    FIXED_FAIL("kernel kind", "section KERNELS: kernel 0: field spec.kind: ", "is not a kernel kind");
    st32(c + t.kern.off + 4, KERNEL_MAX_ARGS + 1);
    FIXED_FAIL("kernel nargs", "kernel 0: field nargs: 13 is not in 1..12");
    st32(c + t.kern.off + 32, (uint32_t)k0->spec.bucket + 1);
    if (kernel_kind_bucket_free(k0->spec.kind))
        FIXED_FAIL("kernel bucket", "section KERNELS: kernel 0: field spec: kernel ", "bucket 1 (the kind serves every bucket: 0)");
    else
        FIXED_FAIL("kernel bucket", "field launch.kernel: kernel 0 (", "was generated for");
    {
        tsec src;
        find_section(c, PLAN_SECTION_KERNEL_SOURCES, &src);
        st64(c + t.kern.off + 16, src.size - ld64(c + t.kern.off + 8));
        FIXED_FAIL("source length", "kernel 0: field source_len: ");
        st64(c + t.kern.off + 16, ld64(c + t.kern.off + 16) + 1);
        FIXED_FAIL("source NUL", "kernel 0: field source_len: the text has a NUL at byte");
    }
    st64(c + t.kern.off + 8, 1);
    FIXED_FAIL("source offset", "kernel 0: field source_offset: 1, expected 0");
    if (ld64(c + t.kern.off + 16) > 0) {
        st64(c + t.kern.off + 16, ld64(c + t.kern.off + 16) - 1);
        FIXED_FAIL("source short", "kernel 0: field source_len: the text's ", "not followed by a NUL");
    }
    st32(c + t.kern.off + 136, PLAN_ACT_COUNT);
    FIXED_FAIL("act", "field spec.act: ", "is not an activation");
    st32(c + t.kern.off + 140, PLAN_POOL_COUNT);
    FIXED_FAIL("pool mode", "section KERNELS: kernel 0: field spec.pool_mode: ", "is not a pooling mode");
    st32(c + t.kern.off + 144, 2);
    FIXED_FAIL("normalize", "section KERNELS: kernel 0: field spec.normalize: 2 is not a flag");
    if (k0->spec.kind == KERNEL_KIND_ATTENTION) {
        st32(c + t.kern.off + 148, 12);
        FIXED_FAIL("query tile", "section KERNELS: kernel 0: field spec: kernel attention: query tile 12");
    }
    st32(c + t.kern.off + 152, 0xFFFFFFFFu);
    FIXED_FAIL("pad id", "section KERNELS: kernel 0: field spec.pad_id: -1");
    st32(c + t.kern.off + 156, 0xFFFFFFFFu);
    FIXED_FAIL("bias rows", "section KERNELS: kernel 0: field spec.bias_ld: -1");
    if (k0->spec.kind != KERNEL_KIND_ATTENTION) {
        st32(c + t.kern.off + 156, 64);
        FIXED_FAIL("bias rows of another kind", "section KERNELS: kernel 0: field spec: kernel ",
                   "score-bias rows 64 (only attention has a bias: 0)");
    }
    if (k0->spec.kind != KERNEL_KIND_EMBED_LN) {
        st32(c + t.kern.off + 152, 2);
        FIXED_FAIL("pad id of another kind", "section KERNELS: kernel 0: field spec: kernel ",
                   "pad id 2 without a pad-position gather (expected 0)");
    }
    st32(c + t.bucket0 + 24, 6);
    FIXED_FAIL("counter bytes", "bucket 0: field counter_bytes: 6 is not a multiple of 4");
    {
        float nan = NAN;
        uint32_t u;
        memcpy(&u, &nan, 4);
        st32(c + t.kern.off + 40, u);
        FIXED_FAIL("eps", "field spec.eps: not a finite number");
    }

    /* Image records. */
    if (t.nimages) {
        st32(c + t.img.off + 16, 3);
        FIXED_FAIL("image kind", "section IMAGES: image 0 (", "field kind: 3 is not an image kind");
        memset(c + t.img.off, 'a', 16);
        FIXED_FAIL("arch", "image 0: field arch: not NUL-terminated");
        st64(c + t.img.off + 24, 128);
        FIXED_FAIL("image alignment", "field data_offset: 128 is not a multiple of 256");
        st32(c + t.img.off + 40 * t.nimages + 4, 0x80000000u);
        FIXED_FAIL("stats", "stats of kernel 0: field spill_stores: ", "is below the minimum 0");
    }
    if (t.nimages > 1) {
        memcpy(c + t.img.off + 40, c + t.img.off, 20); /* image 1 := image 0's arch and kind */
        FIXED_FAIL("duplicate image", "image 1: a second image for arch");
        st64(c + t.img.off + 40 + 24, ld64(c + t.img.off + 40 + 24) + 256);
        FIXED_FAIL("image layout", "image 1 (", "field data_offset: ", "images follow each other in order");
    }
    if (t.nimages) {
        size_t last = t.img.off + 40 * (size_t)(t.nimages - 1);
        if (ld64(c + last + 32)) {
            st64(c + last + 32, ld64(c + last + 32) - 1);
            FIXED_FAIL("image data tail", "section IMAGE_DATA: 1 bytes after the last image");
        }
    }

    /* Tokenizer. */
    if (t.tok.size) {
        st32(c + t.tok.off, 3);
        FIXED_FAIL("model", "section TOKENIZER: field model: 3 is not a tokenizer model");
        st64(c + t.tok.off + 40, ld64(c + t.tok.off + 40) + 8);
        FIXED_FAIL("vocab_bytes", "section TOKENIZER: the section has ", "its counts make");
        st32(c + t.tok.off + 16, 0x7fffffff);
        FIXED_FAIL("unk_id", "section TOKENIZER: the tokenizer description: unk id 2147483647 outside the vocabulary");
        st32(c + t.tok.off + 80 + (uint32_t)ld64(c + t.tok.off + 40) - 1, 'x');
        FIXED_FAIL("vocab NUL", "section TOKENIZER: the vocabulary does not end with a NUL");
    }
#undef FIXED_FAIL
#undef RESET
    /* And the untouched copy still reads. */
    plan q;
    diag d;
    diag_init(&d);
    CHECK(plan_read_memory(&q, c, len, "ok.plan", &d) == 0, "pristine copy: %s", d.text);
    plan_free(&q);
    free(c);
    free(t.b);
    plan_free(&p);
}

/*
 * Token buckets (format 6) on a real plan: tiny-bert-batch-fp32 from `make
 * plans` (length buckets 8, 16, 64; token buckets of 64 and 256 tokens,
 * at most 16 requests).  Each damage is one field of a bucket, an output
 * or a packed kernel, with the checksums made good again, so the reader's
 * own check is what fires, and says which field.
 */
static void test_token_buckets(void) {
    const uint64_t BR = PLAN_BUCKET_RECORD_SIZE;
    char path[512];
    snprintf(path, sizeof path, "%s/plans/tiny-bert-batch-fp32.plan", check_build_dir());
    size_t len = 0;
    uint8_t *b = (uint8_t *)check_read_file(path, &len);
    CHECK_REQUIRE(b != NULL, "%s: not readable (make plans)", path);
    tsec sched, kern, sig;
    CHECK_REQUIRE(find_section(b, PLAN_SECTION_SCHEDULES, &sched) && find_section(b, PLAN_SECTION_KERNELS, &kern) &&
                      find_section(b, PLAN_SECTION_SIGNATURE, &sig),
                  "sections");
    uint32_t nb = ld32(b + sig.off + 72), nk = ld32(b + sig.off + 64);
    uint8_t *bk = b + sched.off; /* bucket records */
    CHECK_REQUIRE(nb == 5 && ld32(bk + 3 * BR) == 64 && ld32(bk + 3 * BR + 12) == 16 && ld32(bk + 4 * BR) == 256 &&
                      ld32(bk + 12) == 0,
                  "%s: expected buckets 8, 16, 64 and token buckets 64, 256 of 16 requests", path);
    uint8_t *c = malloc(len);
#define RESET() memcpy(c, b, len)
#define TB_FAIL(label, ...)                      \
    do {                                         \
        fix_checksums(c, len);                   \
        EXPECT_FAIL(c, len, label, __VA_ARGS__); \
        RESET();                                 \
    } while (0)
    RESET();
    uint8_t *cb = c + sched.off;
    st32(cb + 4 * BR + 12, 0);
    TB_FAIL("length after token", "bucket 4: field max_seqs: 0 after bucket 3's token bucket (length buckets come first)");
    st32(cb + 12, 4);
    TB_FAIL("token bucket first", "bucket 0: field max_seqs: 4 in bucket 0");
    st32(cb + 3 * BR + 12, 65);
    TB_FAIL("more sequences than tokens", "bucket 3: field max_seqs: 65 is not in 1..1024 and at most the bucket's 64 tokens");
    st32(cb + 4 * BR, 64);
    TB_FAIL("token buckets ascend", "bucket 4: field seq_len: 64 does not follow bucket 3's 64 (token buckets ascend");
    st32(cb + 3 * BR, 70000);
    TB_FAIL("too many tokens", "bucket 3: field seq_len: 70000 tokens is not in 1..65536");
    /* the outputs: after every bucket's steps; bucket 3's and bucket 0's */
    uint64_t at = sched.off + BR * (uint64_t)nb, out[5];
    for (uint32_t i = 0; i < nb; i++) {
        at += PLAN_STEP_RECORD_SIZE * (uint64_t)ld32(b + sched.off + BR * i + 4);
        out[i] = at;
        at += PLAN_OUTPUT_RECORD_SIZE * (uint64_t)ld32(b + sched.off + BR * i + 8);
    }
    st32(c + out[3] + 48 + 28, 0); /* pooler_output of token bucket 64 */
    TB_FAIL("token bucket one row", "field per_seq: 0 in a token bucket");
    st32(c + out[0] + 48 + 28, 1);
    TB_FAIL("length bucket per sequence", "field per_seq: 1, but the bucket is a length bucket");
    st32(c + out[3] + 28, 1); /* last_hidden_state: per token and per sequence */
    TB_FAIL("both kinds of rows", "field per_seq: 1, but rows_are_seq is 1 too");
    st64(c + out[3] + 48 + 32, 95);
    TB_FAIL("outputs differ", "bucket 3 output 1 (\"pooler_output\", 95 columns, one row per request) is not bucket 0's");
    /* the packed kernels: the attention one's tiles, every one's flag */
    int attention = -1, packed = -1;
    for (uint32_t k = 0; k < nk; k++) {
        const uint8_t *r = b + kern.off + PLAN_KERNEL_RECORD_SIZE * (uint64_t)k;
        if (ld32(r + 172) == 1 && ld32(r + 24) == KERNEL_KIND_ATTENTION) attention = (int)k;
        if (ld32(r + 172) == 1) packed = (int)k;
    }
    CHECK_REQUIRE(attention >= 0 && packed >= 0, "no packed attention kernel in %s", path);
    uint8_t *ka = c + kern.off + PLAN_KERNEL_RECORD_SIZE * (uint64_t)attention;
    st32(ka + 172, 2);
    TB_FAIL("packed 2", "field spec.packed: 2");
    st32(ka + 176, 70);
    TB_FAIL("tiles not ascending", "seq_qtile 70, 64, 64, 64 (ascending lengths");
    st32(ka + 148, 8);
    TB_FAIL("packed with a query tile", "query tile 8 in a packed kernel");
    st32(c + kern.off + PLAN_KERNEL_RECORD_SIZE * (uint64_t)packed + 172, 0);
    TB_FAIL("unpacked in a token bucket", "a one-request kernel in a token bucket (it must be packed)");
    for (uint32_t k = 0; k < nk; k++)
        if (ld32(b + kern.off + PLAN_KERNEL_RECORD_SIZE * (uint64_t)k + 24) == KERNEL_KIND_ADD_LN) {
            st32(c + kern.off + PLAN_KERNEL_RECORD_SIZE * (uint64_t)k + 172, 1);
            TB_FAIL("packed add_ln", "kernel add_ln: packed (only embed_ln, attention and pool have a packed form)");
            break;
        }
#undef TB_FAIL
#undef RESET
    free(c);
    free(b);
}

/* A deep copy of bucket b into *out (names duplicated: each is freed). */
static void bucket_copy(const sched_bucket *b, sched_bucket *out) {
    *out = *b;
    out->steps = calloc((size_t)b->nsteps + 1, sizeof *out->steps);
    out->outputs = calloc((size_t)b->noutputs + 1, sizeof *out->outputs);
    if (!out->steps || !out->outputs) abort();
    for (int j = 0; j < b->nsteps; j++) {
        out->steps[j] = b->steps[j];
        out->steps[j].name = xstrdup(b->steps[j].name);
    }
    for (int j = 0; j < b->noutputs; j++) {
        out->outputs[j] = b->outputs[j];
        out->outputs[j].name = xstrdup(b->outputs[j].name);
    }
}

/* Makes p's step lists three variants (plan.h): capabilities 0..79,
 * 80..89, 90 and newer; the second's first step named apart. */
static void gen_variants(plan *p) {
    int n = p->nbuckets;
    sched_bucket *all = calloc((size_t)(3 * n) + 1, sizeof *all);
    if (!all) abort();
    static const uint16_t lo[3] = {0, 80, 90}, hi[3] = {79, 89, PLAN_CC_MAX};
    for (int v = 0; v < 3; v++)
        for (int b = 0; b < n; b++) {
            if (v == 0) all[b] = p->buckets[b];
            else bucket_copy(&p->buckets[b], &all[v * n + b]);
            all[v * n + b].cc_min = lo[v];
            all[v * n + b].cc_max = hi[v];
        }
    if (all[n].nsteps) {
        free(all[n].steps[0].name);
        all[n].steps[0].name = xstrdup("variant-1-step");
    }
    free(p->buckets);
    p->buckets = all;
    p->nvariants = 3;
}

/* p written and read back into q (compared); the bytes, or NULL (checked)
 * when either fails. */
static uint8_t *round_trip(const plan *p, const char *name, plan *q, size_t *len) {
    uint8_t *b = plan_bytes(p, name, len);
    diag d;
    diag_init(&d);
    if (!b || plan_read_memory(q, b, *len, name, &d) != 0) {
        CHECK(0, "%s: %s", name, b ? d.text : "not written");
        free(b);
        return NULL;
    }
    if (plan_diff(p, q)) CHECK(0, "%s: %s differs", name, diff_why);
    return b;
}

/* Step lists per compute capability: written, read back, chosen by the
 * device's capability; every rule of the ranges and the buckets refused. */
static void test_variants(void) {
    const uint64_t BR = PLAN_BUCKET_RECORD_SIZE;
    for (int iter = 0; iter < 4; iter++) {
        plan p, q;
        gen_plan(&p, iter == 0 ? GEN_SMALL : iter == 1 ? GEN_MEDIUM : GEN_RICH, 0);
        gen_variants(&p);
        int n = p.nbuckets;
        size_t len = 0;
        uint8_t *b = round_trip(&p, "variants.plan", &q, &len);
        CHECK_REQUIRE(b, "variants: no round trip");
        CHECK(q.nvariants == 3 && q.nbuckets == n && plan_variant_for(&q, 0, 0) == 0 && plan_variant_for(&q, 7, 5) == 0 &&
                  plan_variant_for(&q, 8, 0) == 1 && plan_variant_for(&q, 8, 9) == 1 && plan_variant_for(&q, 9, 0) == 2 &&
                  plan_variant_for(&q, 12, 1) == 2 && plan_variant_for(&q, 6553, 9) == 2,
              "variants: %d of %d buckets; the capability does not pick its variant", q.nvariants, q.nbuckets);
        plan_free(&q);
        tsec sched;
        CHECK_REQUIRE(find_section(b, PLAN_SECTION_SCHEDULES, &sched), "no SCHEDULES");
        uint8_t *c = dup_bytes(b, len), *cb = c + sched.off;
#define V_FAIL(label, ...)                       \
    do {                                         \
        fix_checksums(c, len);                   \
        EXPECT_FAIL(c, len, label, __VA_ARGS__); \
        memcpy(c, b, len);                       \
    } while (0)
        cb[28] = 5;
        V_FAIL("first range", "field cc_min: 5 in bucket 0 (the first variant's range starts at capability 0)");
        for (int i = 2 * n; i < 3 * n; i++) cb[BR * (uint64_t)i + 30] = 0x10;
        V_FAIL("last range", "field cc_max: 65296, the last variant's range ends at 65535");
        for (int i = n; i < 2 * n; i++) cb[BR * (uint64_t)i + 28] = 81;
        V_FAIL("a gap", "field cc_min: 81 does not follow bucket", "cc_max 79");
        cb[BR * (uint64_t)n + 28] = 95;
        V_FAIL("min above max", "field cc_min: 95 is above cc_max 89");
        if (n >= 2) {
            /* variant 1's last record moved to variant 2; every variant's
             * records relabelled (a length bucket of 1, then token buckets
             * of 2, 3, ... tokens) so each stays in order on its own */
            uint8_t *last = cb + BR * (uint64_t)(2 * n - 1);
            last[28] = 90, last[30] = 0xff, last[31] = 0xff;
            for (int i = 0, k = 0; i < 3 * n; i++, k++) {
                if (i == n || i == 2 * n - 1) k = 0;
                st32(cb + BR * (uint64_t)i, (uint32_t)k + 1);
                st32(cb + BR * (uint64_t)i + 12, k ? 1 : 0);
            }
            V_FAIL("variant sizes", "variant 1 (capabilities 80..89) has", "every variant has the same buckets");
            for (int i = 0, k = 0; i < 3 * n; i++, k = (k + 1) % n) {
                st32(cb + BR * (uint64_t)i, (uint32_t)k + 1 + (i == 3 * n - 1));
                st32(cb + BR * (uint64_t)i + 12, k ? 1 : 0);
            }
            V_FAIL("other lengths", "of variant 2 is not variant 0's bucket", "every variant has the same buckets");
        }
#undef V_FAIL
        free(c);
        free(b);
        plan_free(&p);
    }
}

/* The first kernel variant v's steps launch, or -1. */
static int variant_kernel(const plan *p, int v) {
    const sched_bucket *bs = plan_variant_buckets(p, v);
    for (int b = 0; b < p->nbuckets; b++)
        for (int j = 0; j < bs[b].nsteps; j++)
            if (bs[b].steps[j].kind == SCHED_STEP_KERNEL) return bs[b].steps[j].launch.kernel;
    return -1;
}

/* Three step lists (gen_variants) whose last launches a twin record of
 * kernel k instead of k, and three images: sm_80 (list 1, lacking the
 * twin), sm_90 (list 2, lacking k) and emu (list 0, everything).  Returns
 * k, or -1 when the plan has no kernel step. */
static int gen_carried(plan *p) {
    gen_variants(p);
    int k = variant_kernel(p, 2), t = p->nkernels;
    if (k < 0) return -1;
    plan_kernel *ks = realloc(p->kernels, sizeof *ks * (size_t)(t + 1));
    if (!ks) abort();
    p->kernels = ks;
    ks[t] = ks[k];
    ks[t].entry = xstrdup(ks[k].entry);
    ks[t].source = xstrdup(ks[k].source);
    p->nkernels = t + 1;
    sched_bucket *bs = plan_variant_buckets(p, 2);
    for (int b = 0; b < p->nbuckets; b++)
        for (int j = 0; j < bs[b].nsteps; j++)
            if (bs[b].steps[j].kind == SCHED_STEP_KERNEL && bs[b].steps[j].launch.kernel == k) bs[b].steps[j].launch.kernel = t;
    for (int i = 0; i < p->nimages; i++) {
        free((void *)p->images[i].data);
        free(p->images[i].stats);
    }
    free(p->images);
    static const char *const archs[3] = {"sm_80", "sm_90", "emu"};
    static const plan_image_kind kinds[3] = {PLAN_IMAGE_CUBIN, PLAN_IMAGE_CUBIN, PLAN_IMAGE_EMU};
    p->nimages = 3;
    p->images = calloc(3, sizeof p->images[0]);
    for (int i = 0; i < 3; i++) {
        plan_image *im = &p->images[i];
        snprintf(im->arch, sizeof im->arch, "%s", archs[i]);
        im->kind = kinds[i];
        im->size = (size_t)check_rng_range(1, 500);
        im->data = rnd_bytes(im->size);
        im->stats = calloc((size_t)p->nkernels, sizeof im->stats[0]);
        for (int j = 0; j < p->nkernels; j++) im->stats[j].registers = (int)check_rng_range(1, 255);
    }
    p->images[0].stats[t] = (plan_kernel_stats){.registers = PLAN_STATS_NOT_CARRIED};
    p->images[1].stats[k] = (plan_kernel_stats){.registers = PLAN_STATS_NOT_CARRIED};
    return k;
}

/* Format 9: an image carries the kernels of the step lists its devices run
 * (records of the others say PLAN_STATS_NOT_CARRIED); the reader refuses
 * an image lacking a kernel of a list it serves, and odd records. */
static void test_carried(void) {
    for (int iter = 0, done = 0; iter < 12 && done < 3; iter++) {
        plan p, q;
        gen_plan(&p, iter % 2 ? GEN_RICH : GEN_MEDIUM, 0);
        int k = gen_carried(&p), t = p.nkernels - 1;
        if (k < 0) {
            plan_free(&p);
            continue;
        }
        done++;
        size_t len = 0;
        uint8_t *b = round_trip(&p, "carried.plan", &q, &len);
        CHECK_REQUIRE(b, "carried: no round trip");
        CHECK(!plan_image_carries(&q, 0, t) && plan_image_carries(&q, 0, k) && !plan_image_carries(&q, 1, k) &&
                  plan_image_carries(&q, 1, t) && plan_image_carries(&q, 2, k) && plan_image_carries(&q, 2, t),
              "carried: which image holds kernels %d and %d", k, t);
        CHECK(plan_image_serves(&q, 0, 1) && !plan_image_serves(&q, 0, 0) && !plan_image_serves(&q, 0, 2) &&
                  plan_image_serves(&q, 1, 2) && !plan_image_serves(&q, 1, 1) && plan_image_serves(&q, 2, 0) &&
                  !plan_image_serves(&q, 2, 1),
              "carried: the lists each image serves");
        plan_free(&q);
        tsec im;
        CHECK_REQUIRE(find_section(b, PLAN_SECTION_IMAGES, &im), "no IMAGES");
        uint8_t *c = dup_bytes(b, len);
        const uint64_t at0 = im.off + 3 * (uint64_t)PLAN_IMAGE_RECORD_SIZE;
#define STATS(i, kx) (c + at0 + ((uint64_t)(i) * (uint64_t)p.nkernels + (uint64_t)(kx)) * PLAN_STATS_RECORD_SIZE)
#define C_FAIL(label, ...)                       \
    do {                                         \
        fix_checksums(c, len);                   \
        EXPECT_FAIL(c, len, label, __VA_ARGS__); \
        memcpy(c, b, len);                       \
    } while (0)
        memset(STATS(0, k), 0, 16), st32(STATS(0, k), 0xFFFFFFFFu);
        C_FAIL("a list's kernel missing", "image 0 (sm_80) does not carry kernel", "step list 1 (capabilities 80..89)");
        memset(STATS(1, t), 0, 16), st32(STATS(1, t), 0xFFFFFFFFu);
        C_FAIL("the twin missing", "image 1 (sm_90) does not carry kernel", "step list 2 (capabilities 90..65535)");
        st32(STATS(1, k) + 8, 4);
        C_FAIL("spills of a kernel not carried", "field spill_loads: not 0 in the record of a kernel the image does "
                                                 "not carry");
        st32(STATS(2, t), 0xFFFFFFFFu);
        C_FAIL("the emulated image", "field registers: -1 is below the minimum 0");
        st32(STATS(0, k), 0xFFFFFFFEu);
        C_FAIL("registers -2", "field registers: -2 is below the minimum 0");
#undef C_FAIL
#undef STATS
        free(c);
        free(b);
        plan_free(&p);
    }
}

/* A hostile plan whose counts claim far more than the file holds must not allocate for them. */
static void test_huge_counts(void) {
    plan p;
    gen_plan(&p, GEN_MEDIUM, 0);
    tplan t;
    if (!tplan_load(&t, &p)) {
        free(t.b);
        plan_free(&p);
        return;
    }
    uint8_t *c = dup_bytes(t.b, t.len);
    st32(c + t.bucket0 + 4, 0xFFFFFFFFu);
    fix_checksums(c, t.len);
    EXPECT_FAIL(c, t.len, "huge nsteps", "field nsteps: 4294967295 step records do not fit");
    memcpy(c, t.b, t.len);
    st32(c + t.sig.off + 68, 0x7FFFFFFFu);
    fix_checksums(c, t.len);
    EXPECT_FAIL(c, t.len, "huge nimages", "section IMAGES: the section has");
    memcpy(c, t.b, t.len);
    st32(c + t.sig.off + 64, 0xFFFFFFFFu);
    fix_checksums(c, t.len);
    EXPECT_FAIL(c, t.len, "nkernels > INT_MAX", "field nkernels: 4294967295 is too large");
    free(c);
    free(t.b);
    plan_free(&p);
}

/* Random byte damage with fixed-up checksums: must fail cleanly or read, never crash. */
static void test_fuzz(void) {
    plan p;
    gen_plan(&p, GEN_RICH, 1);
    size_t len = 0;
    uint8_t *b = plan_bytes(&p, "fuzz.plan", &len);
    plan_free(&p);
    if (!b) return;
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 1500; iter++) {
        uint8_t *c = dup_bytes(b, len);
        tsec s;
        uint32_t kind = (uint32_t)check_rng_range(1, PLAN_SECTION_KIND_END - 1);
        if (!find_section(c, kind, &s) || !s.size) {
            free(c);
            continue;
        }
        int nedits = (int)check_rng_range(1, 4);
        for (int e = 0; e < nedits; e++) {
            size_t at = (size_t)(s.off + check_rng_u64() % s.size);
            c[at] = check_rng_range(0, 1) ? (uint8_t)check_rng_u64() : (uint8_t)(c[at] ^ (1u << check_rng_range(0, 7)));
        }
        fix_checksums(c, len);
        plan q;
        diag d;
        diag_init(&d);
        if (plan_read_memory(&q, c, len, "fuzz.plan", &d) == 0) {
            accepted++;
            plan_free(&q);
        } else {
            rejected++;
            CHECK(strncmp(d.text, "fuzz.plan: offset 0x", 20) == 0, "fuzz message: %s", d.text);
        }
        free(c);
    }
    printf("# fuzz: %d damaged plans rejected, %d still valid (damage in unchecked payload bytes)\n", rejected, accepted);
    CHECK(rejected > 0, "no damaged plan was rejected");
    free(b);
}

/* ---- files: writing and reading failures -------------------------------------- */

static void test_write_failures(void) {
    plan p;
    gen_plan(&p, GEN_MEDIUM, 0);
    diag d;

    /* A path under a regular file: the directory cannot exist. */
    const char *blocker = tmp_path("blocker");
    CHECK(write_file(blocker, "x", 1) == 0, "write %s", blocker);
    char path[1024];
    snprintf(path, sizeof path, "%s/out.plan", blocker);
    diag_init(&d);
    CHECK(plan_write(&p, path, &d) != 0, "writing under a regular file succeeded");
    CHECK(strstr(d.text, path) != NULL, "message should name the path: %s", d.text);
    CHECK(access(path, F_OK) != 0, "something exists at %s", path);
    snprintf(path, sizeof path, "%s/no-such-dir/out.plan", tmp_dir);
    diag_init(&d);
    CHECK(plan_write(&p, path, &d) != 0 && strstr(d.text, "cannot write"), "missing directory: %s", d.text);
    CHECK(access(path, F_OK) != 0, "something exists at %s", path);

    /* An inconsistent plan is refused; an older file at the path is kept; no temporary is left. */
    const char *target = tmp_path("keep.plan");
    static const char old[] = "previous contents";
    CHECK(write_file(target, old, sizeof old) == 0, "write %s", target);
    int saved = -1;
    for (int j = 0; j < p.buckets[0].nsteps; j++)
        if (p.buckets[0].steps[j].kind == SCHED_STEP_KERNEL) {
            saved = p.buckets[0].steps[j].launch.kernel;
            p.buckets[0].steps[j].launch.kernel = p.nkernels + 5;
            break;
        }
    if (saved < 0) { /* no launch: break a GEMM's ref instead */
        p.buckets[0].outputs[0].ref.offset = p.buckets[0].arena_bytes + p.weights_size + 1;
    }
    diag_init(&d);
    CHECK(plan_write(&p, target, &d) != 0, "an inconsistent plan was written");
    CHECK(strstr(d.text, "refusing to write an inconsistent plan") && strstr(d.text, target),
          "message: %s", d.text);
    CHECK(strstr(d.text, saved >= 0 ? "kernel index" : "lies outside"), "message should name the problem: %s", d.text);
    CHECK(d.code == DIAG_CODE_INTERNAL, "an inconsistent plan is an internal error");
    size_t n = 0;
    char *kept = check_read_file(target, &n);
    CHECK(kept && n == sizeof old && memcmp(kept, old, n) == 0, "the previous file was damaged");
    free(kept);
    CHECK(tmp_count(".tmp.") == 0, "a temporary file was left behind");

    /* What cannot be encoded at all. */
    char *name = p.model_name;
    p.model_name = NULL;
    diag_init(&d);
    const char *fresh = tmp_path("fresh.plan");
    CHECK(plan_write(&p, fresh, &d) != 0 && strstr(d.text, "no model name"), "NULL model name: %s", d.text);
    CHECK(access(fresh, F_OK) != 0, "a file was left at %s", fresh);
    p.model_name = malloc(5001);
    memset(p.model_name, 'm', 5000);
    p.model_name[5000] = '\0';
    diag_init(&d);
    CHECK(plan_write(&p, fresh, &d) != 0 && strstr(d.text, "field model_name: string ") &&
              strstr(d.text, "longer than the 4095 bytes"),
          "long model name: %s", d.text);
    CHECK(access(fresh, F_OK) != 0, "a file was left at %s", fresh);
    free(p.model_name);
    p.model_name = name;
    if (p.nbuckets && p.buckets[0].nsteps && p.buckets[0].steps[0].kind == SCHED_STEP_KERNEL) {
        int keep = p.buckets[0].steps[0].launch.nargs;
        p.buckets[0].steps[0].launch.nargs = KERNEL_MAX_ARGS + 1;
        diag_init(&d);
        CHECK(plan_write(&p, fresh, &d) != 0 && strstr(d.text, "13 launch arguments (at most 12)"), "nargs 13: %s",
              d.text);
        p.buckets[0].steps[0].launch.nargs = keep;
    }
    unlink(blocker);
    unlink(target);
    plan_free(&p);
}

static void test_read_failures(void) {
    plan q;
    diag d;
    diag_init(&d);
    const char *missing = tmp_path("missing.plan");
    CHECK(plan_read(&q, missing, &d) != 0 && strstr(d.text, missing) && strstr(d.text, "cannot open"),
          "missing file: %s", d.text);
    diag_init(&d);
    CHECK(plan_read(&q, tmp_dir, &d) != 0 && strstr(d.text, "not a regular file"), "directory: %s", d.text);
    const char *empty = tmp_path("empty.plan");
    CHECK(write_file(empty, "", 0) == 0, "write %s", empty);
    diag_init(&d);
    CHECK(plan_read(&q, empty, &d) != 0 && strstr(d.text, "offset 0x0: header: truncated: the file has 0 bytes"),
          "empty file: %s", d.text);
    diag_init(&d);
    CHECK(plan_read_memory(&q, NULL, 0, NULL, &d) != 0 && strstr(d.text, "<memory>: offset 0x0"), "empty memory: %s",
          d.text);
    unlink(empty);
    plan_init(&q);
    plan_free(&q);
    plan_free(&q);
    CHECK(q.map == NULL && q.tokenizer.unk_id == -1 && !q.tokenizer.present, "plan_free re-initialises");
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/bertc-test-plan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        printf("FAIL setup: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    CHECK_CASE(test_crc32c_vectors);
    CHECK_CASE(test_crc32c_random);
    CHECK_CASE(test_roundtrip);
    CHECK_CASE(test_deterministic);
    CHECK_CASE(test_layout_matches_spec);
    CHECK_CASE(test_spec_example);
    CHECK_CASE(test_truncation);
    CHECK_CASE(test_bit_flips);
    CHECK_CASE(test_header_fields);
    CHECK_CASE(test_section_table);
    CHECK_CASE(test_semantic_errors);
    CHECK_CASE(test_counters_contract);
    CHECK_CASE(test_token_buckets);
    CHECK_CASE(test_variants);
    CHECK_CASE(test_carried);
    CHECK_CASE(test_huge_counts);
    CHECK_CASE(test_fuzz);
    CHECK_CASE(test_write_failures);
    CHECK_CASE(test_read_failures);
    tmp_dir_remove();
    return check_summary();
}
