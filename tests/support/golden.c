/*
 * golden — the golden files' reader (see golden.h).
 *
 * Design.  The file is read whole into memory and parsed by bincursor.c:
 * it owns the frame every golden file shares (magic, version, UTF-8
 * header, a case count bounded by the smallest possible case before
 * anything is allocated, nothing after the last case) and a cursor that
 * refuses to step past the end and records what it was reading, so the
 * error for a damaged file says "offset N: truncated reading case 'x'
 * last_hidden_state" instead of crashing.  This file only reads one case of
 * each format: array sizes are computed in size_t with explicit overflow
 * checks before they are compared with the remaining bytes, and values are
 * assembled from bytes in little-endian order, so nothing depends on the
 * host's byte order or alignment.  On any error everything allocated so
 * far is freed and the caller's struct is left zeroed.
 *
 * .bgld, version 1 (little-endian; written by tools/make_goldens.py):
 *     "BGLD"  u32 version=1  u32 header_len  header bytes (UTF-8 text)
 *     u32 ncases
 *     per case: u32 name_len, name bytes; u32 len (S); u32 hidden;
 *               u32 flags (bit0 token_type_ids, bit1 attention_mask,
 *               bit2 pooler_output, bit3 logits, bit4 sentence_embedding
 *               (tools/make_family_goldens.py); other bits must be 0);
 *               i32 input_ids[S]; [i32 token_type_ids[S]];
 *               [i32 attention_mask[S]]; f32 last_hidden_state[S*hidden];
 *               [f32 pooler_output[hidden]];
 *               [u32 n (>= 1), f32 logits[n]]; [u32 n (>= 1), f32 sentence_embedding[n]]
 *     nothing after the last case; case names unique.
 *
 * .bsen, version 1 (little-endian; written by tools/make_sentence_goldens.py):
 *     "BSEN"  u32 version=1  u32 header_len  header bytes (UTF-8 "key: value" lines)
 *     u32 ncases
 *     per case: u32 text_len, text bytes (UTF-8, no NUL);
 *               u32 n_ids (>= 1), i32 ids[n_ids] (>= 0);
 *               u32 dim (>= 1, every case the same), f32 mean_pooled[dim],
 *               f32 embedding[dim]
 *     nothing after the last case.
 *
 * The SHA-256 that ties a golden to its checkpoint is bertc's own
 * (runtime/common/sha256.h, one implementation); golden_sha256_file streams
 * a checkpoint of any size through it.
 */
#include "golden.h"

#include "bincursor.h"
#include "check.h"
#include "sha256.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_FLAG_TYPES 1u
#define GOLDEN_FLAG_MASK 2u
#define GOLDEN_FLAG_POOLER 4u
#define GOLDEN_FLAG_LOGITS 8u
#define GOLDEN_FLAG_SENTENCE 16u
#define GOLDEN_FLAGS_KNOWN 31u
/* Smallest encoded case: name_len, len, hidden, flags, one input id, one float. */
#define GOLDEN_MIN_CASE_BYTES 24u

/* What a case owns (freed by bincursor_frame_free). */
static const size_t golden_owned[] = {
    offsetof(golden_case, name),           offsetof(golden_case, input_ids),         offsetof(golden_case, token_type_ids),
    offsetof(golden_case, attention_mask), offsetof(golden_case, last_hidden_state), offsetof(golden_case, pooler_output),
    offsetof(golden_case, logits),         offsetof(golden_case, sentence_embedding),
};

/* A counted array of floats: u32 n (1 .. 2^24), then n values. */
static float *read_counted(bincursor *c, int *n, const char *nm, const char *what) {
    uint32_t count;
    if (bincursor_u32(c, &count, "case '%s' %s count", nm, what)) return NULL;
    if (count == 0 || count > (1u << 24)) {
        bincursor_error(c, "case '%s': invalid %s count %u", nm, what, count);
        return NULL;
    }
    *n = (int)count;
    return bincursor_words(c, count, "case '%s' %s", nm, what);
}

/* The fixed fields after the name: len, hidden, flags, each checked. */
static int read_sizes(bincursor *c, golden_case *k, uint32_t *flags) {
    const char *nm = k->name;
    uint32_t len, hidden;
    if (bincursor_u32(c, &len, "case '%s' len", nm) || bincursor_u32(c, &hidden, "case '%s' hidden", nm) ||
        bincursor_u32(c, flags, "case '%s' flags", nm))
        return -1;
    if (len == 0 || len > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid len %u", nm, len);
        return -1;
    }
    if (hidden == 0 || hidden > (uint32_t)INT32_MAX) {
        bincursor_error(c, "case '%s': invalid hidden %u", nm, hidden);
        return -1;
    }
    if (*flags & ~GOLDEN_FLAGS_KNOWN) {
        bincursor_error(c, "case '%s': unknown flag bits 0x%x", nm, *flags & ~GOLDEN_FLAGS_KNOWN);
        return -1;
    }
    k->len = (int)len;
    k->hidden = (int)hidden;
    return 0;
}

static int read_case(bincursor *c, void *p, int index) {
    golden_case *k = p;
    uint32_t name_len, flags;
    if (bincursor_u32(c, &name_len, "case '#%d' name length", index)) return -1;
    if (name_len == 0) {
        bincursor_error(c, "case #%d has an empty name", index);
        return -1;
    }
    if (!(k->name = bincursor_text(c, name_len, "case name")) || read_sizes(c, k, &flags)) return -1;
    const char *nm = k->name;
    for (const golden_case *o = k - index; o < k; o++)
        if (strcmp(o->name, nm) == 0) {
            bincursor_error(c, "case name '%s' appears twice", nm);
            return -1;
        }
    size_t lhs_count, len = (size_t)k->len, hidden = (size_t)k->hidden;
    if (bincursor_mul_size(len, hidden, 1, &lhs_count)) {
        bincursor_error(c, "case '%s': len * hidden overflows", nm);
        return -1;
    }
    if (!(k->input_ids = bincursor_words(c, len, "case '%s' input_ids", nm))) return -1;
    if ((flags & GOLDEN_FLAG_TYPES) && !(k->token_type_ids = bincursor_words(c, len, "case '%s' token_type_ids", nm)))
        return -1;
    if ((flags & GOLDEN_FLAG_MASK) && !(k->attention_mask = bincursor_words(c, len, "case '%s' attention_mask", nm)))
        return -1;
    if (!(k->last_hidden_state = bincursor_words(c, lhs_count, "case '%s' last_hidden_state", nm))) return -1;
    if ((flags & GOLDEN_FLAG_POOLER) && !(k->pooler_output = bincursor_words(c, hidden, "case '%s' pooler_output", nm)))
        return -1;
    if ((flags & GOLDEN_FLAG_LOGITS) && !(k->logits = read_counted(c, &k->nlogits, nm, "logits"))) return -1;
    if ((flags & GOLDEN_FLAG_SENTENCE) &&
        !(k->sentence_embedding = read_counted(c, &k->nsentence, nm, "sentence_embedding")))
        return -1;
    return 0;
}

static const bincursor_format golden_format = {
    .magic = "BGLD", .kind = "a golden file", .version = 1, .min_case_bytes = GOLDEN_MIN_CASE_BYTES,
    .case_size = sizeof(golden_case), .read_case = read_case, .owned = golden_owned,
    .nowned = sizeof golden_owned / sizeof golden_owned[0],
};

/* Smallest encoded case: text_len (text empty), n_ids, one id, dim, two floats. */
#define SENTENCES_MIN_CASE_BYTES 24u

static const size_t sentences_owned[] = {
    offsetof(sentences_case, text), offsetof(sentences_case, ids), offsetof(sentences_case, mean_pooled),
    offsetof(sentences_case, embedding),
};

/* n_ids, then the ids, each non-negative. */
static int read_ids(bincursor *c, sentences_case *k, int index) {
    uint32_t n_ids;
    if (bincursor_u32(c, &n_ids, "case #%d id count", index)) return -1;
    if (n_ids == 0 || n_ids > (uint32_t)INT32_MAX) {
        c->off -= 4;
        bincursor_error(c, "case #%d: invalid id count %u", index, n_ids);
        return -1;
    }
    size_t ids_off = c->off;
    if (!(k->ids = bincursor_words(c, n_ids, "case #%d ids", index))) return -1;
    for (uint32_t i = 0; i < n_ids; i++) {
        if (k->ids[i] < 0) {
            c->off = ids_off + 4 * (size_t)i;
            bincursor_error(c, "case #%d: negative token id %d at position %u", index, (int)k->ids[i], i);
            return -1;
        }
    }
    k->n_ids = (int)n_ids;
    return 0;
}

static int read_sentence(bincursor *c, void *p, int index) {
    sentences_case *k = p;
    int want_dim = index ? (k - index)->dim : 0;   /* every case has the first case's dim */
    uint32_t text_len, dim;
    if (bincursor_u32(c, &text_len, "case #%d text length", index)) return -1;
    if (!(k->text = bincursor_text(c, text_len, "case #%d text", index))) return -1;
    k->text_len = text_len;
    if (read_ids(c, k, index) || bincursor_u32(c, &dim, "case #%d dim", index)) return -1;
    if (dim == 0 || dim > (uint32_t)INT32_MAX || (want_dim > 0 && dim != (uint32_t)want_dim)) {
        c->off -= 4;
        if (want_dim > 0 && dim != 0 && dim <= (uint32_t)INT32_MAX)
            bincursor_error(c, "case #%d: dim %u differs from the first case's %d", index, dim, want_dim);
        else
            bincursor_error(c, "case #%d: invalid dim %u", index, dim);
        return -1;
    }
    k->dim = (int)dim;
    if (!(k->mean_pooled = bincursor_words(c, dim, "case #%d mean_pooled", index))) return -1;
    if (!(k->embedding = bincursor_words(c, dim, "case #%d embedding", index))) return -1;
    return 0;
}

static const bincursor_format sentences_format = {
    .magic = "BSEN", .kind = "a sentence-embedding golden", .version = 1,
    .min_case_bytes = SENTENCES_MIN_CASE_BYTES, .case_size = sizeof(sentences_case), .read_case = read_sentence,
    .owned = sentences_owned, .nowned = sizeof sentences_owned / sizeof sentences_owned[0],
};

int golden_load_memory(golden_file *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    int bsen = data && len >= 4 && memcmp(data, "BSEN", 4) == 0;
    bincursor c = bincursor_init(data, len, name, err, cap);
    void *cases;
    int rc = bincursor_frame_read(&c, bsen ? &sentences_format : &golden_format, &g->header, &cases, &g->count);
    if (bsen) g->sentences = cases;
    else g->cases = cases;
    return rc;
}

static int parse(void *g, const void *data, size_t len, const char *name, char *err, size_t cap) {
    return golden_load_memory(g, data, len, name, err, cap);
}

int golden_load(golden_file *g, const char *path, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    return bincursor_load(path, g, err, cap, parse);
}

void golden_free(golden_file *g) {
    if (!g) return;
    if (g->sentences) bincursor_frame_free(&sentences_format, g->header, g->sentences, g->count);
    else bincursor_frame_free(&golden_format, g->header, g->cases, g->count);
    memset(g, 0, sizeof *g);
}

const golden_case *golden_find(const golden_file *g, const char *name) {
    for (int i = 0; g && g->cases && name && i < g->count; i++)
        if (strcmp(g->cases[i].name, name) == 0) return &g->cases[i];
    return NULL;
}

int golden_header_value(const golden_file *g, const char *key, char *out, size_t cap) {
    return g ? bincursor_header_value(g->header, key, out, cap) : -1;
}

double golden_max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)x[i]);
        if (isnan(v)) return NAN;
        if (v > m) m = v;
    }
    return m;
}

double golden_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double v = fabs((double)a[i] - (double)b[i]);
        if (isnan(v)) return NAN;
        if (v > m) m = v;
    }
    return m;
}

/* ---------------------------------------------------------------- SHA-256 */

int golden_sha256_file(const char *path, char hex[65], char *err, size_t cap) {
    hex[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && cap) snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = malloc(1 << 20), digest[SHA256_DIGEST_SIZE];
    if (!buf) {
        if (err && cap) snprintf(err, cap, "%s: out of memory", path);
        fclose(f);
        return -1;
    }
    sha256_ctx x;
    sha256_init(&x);
    size_t n;
    while ((n = fread(buf, 1, 1 << 20, f)) > 0) sha256_update(&x, buf, n);
    int bad = ferror(f);
    free(buf);
    fclose(f);
    if (bad) {
        if (err && cap) snprintf(err, cap, "%s: read error", path);
        return -1;
    }
    sha256_final(&x, digest);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

/* ---- comparisons with the plan tolerances ------------------------------- */

golden_tol golden_tolerance(const char *prec) {
    if (!strcmp(prec, "fp32")) return (golden_tol){1e-4, 0.999999};
    if (!strcmp(prec, "fp16")) return (golden_tol){1.5e-2, 0.999};
    return (golden_tol){5e-2, 0.999};
}

int golden_compare(const char *what, const float *got, const float *want, int64_t rows, int64_t cols, golden_tol t,
                   double floor) {
    size_t n = (size_t)(rows * cols);
    double maxw = golden_max_abs(want, n), diff = golden_max_abs_diff(got, want, n);
    double scale = maxw > floor ? maxw : floor > 0 ? floor : 1, rel = diff / (scale > 0 ? scale : 1), worst = 1;
    int64_t worst_row = -1;
    for (int64_t r = 0; r < rows; r++) {
        double dot = 0, ng = 0, nw = 0;
        for (int64_t c = 0; c < cols; c++) {
            double g = got[r * cols + c], w = want[r * cols + c];
            dot += g * w, ng += g * g, nw += w * w;
        }
        double cs = dot / (sqrt(ng * nw) + 1e-30);
        if (!(cs >= worst)) worst = cs, worst_row = r;
    }
    int ok = rel <= t.rel && worst >= t.cos;
    CHECK(ok, "%s: relative error %.3g (limit %.3g), worst row cosine %.7f at row %lld (limit %.6f)", what, rel, t.rel,
          worst, (long long)worst_row, t.cos);
    if (getenv("BERTC_E2E_VERBOSE")) printf("  %-64s rel %.3g  min cos %.7f\n", what, rel, worst);
    return ok;
}
