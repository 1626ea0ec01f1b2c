/*
 * test_kernels_compile — every generated kernel kind goes through NVRTC.
 *
 * The kernels' numbers are checked on the emulated device; this test
 * checks what only the real toolchain can: that the text the generators
 * produce for a representative spread of parameters (hidden 96..4096 and
 * awkward 80/97, head_dim 16/20/32/64/128, buckets 32..512, each storage
 * dtype, with and without bias and residual, each activation, N = 200 and
 * K = 96) compiles for every default architecture, that ptxas neither
 * spills nor exceeds the registers a launch of the reported block size
 * can have, and that the text and names behave as kernels.h promises
 * (first line naming the template and every parameter, names equal iff
 * specs equal, launch dims sized for the bucket), and that the 16-bit
 * GEMM and attention really take the tensor-core path (mma.sync,
 * ldmatrix, cp.async in the PTX) from sm_80 on, float16 attention on
 * sm_75 too (mma m16n8k8 and ldmatrix; no cp.async there), bfloat16
 * attention and the GEMM not on sm_75.  It also
 * checks the compile driver itself: dedupe by content, a broken kernel's
 * message carries NVRTC's words and the numbered source line, an unknown
 * architecture is refused.
 *
 * All kernels are compiled as one program per PTX target, then ptxas per
 * architecture, two jobs at a time: the test's run time is dominated by
 * that single kbuild_compile call (printed).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "arch.h"
#include "kbuild.h"
#include "kernels.h"
#include "kimage.h"
#include "lower.h"
#include "plan_kernels.h"

#define T_MAX_SPECS KIMAGE_MAX_SPECS

static kimage_specs t_list;

static kernel_spec *t_new(kernel_kind kind, plan_dtype dt, int bucket) { return kimage_specs_add(&t_list, kind, dt, bucket); }

static void t_embed(plan_dtype dt, int bucket, int hidden, int ngathers) {
    static const kernel_index order[3] = {KERNEL_INDEX_INPUT_IDS, KERNEL_INDEX_POSITION, KERNEL_INDEX_TOKEN_TYPES};
    static const int rows[3] = {30522, 512, 2};
    kernel_spec *s = t_new(KERNEL_KIND_EMBED_LN, dt, bucket);
    s->hidden = hidden;
    s->eps = 1e-12f;
    s->ngathers = ngathers;
    for (int g = 0; g < ngathers; g++) {
        s->gather_index[g] = order[g];
        s->table_rows[g] = rows[g];
    }
}

static void t_add_ln(plan_dtype dt, int bucket, int hidden, int bias, int res) {
    kernel_spec *s = t_new(KERNEL_KIND_ADD_LN, dt, bucket);
    s->hidden = hidden;
    s->eps = 1e-5f;
    s->has_bias = bias;
    s->has_residual = res;
}

/* qtile 0: the compiler's choice for the bucket */
static void t_attention(plan_dtype dt, int bucket, int heads, int head_dim, int qtile) {
    kernel_spec *s = t_new(KERNEL_KIND_ATTENTION, dt, bucket);
    int h = heads * head_dim;
    s->heads = heads;
    s->head_dim = head_dim;
    s->scale = 1.0f / (float)head_dim;
    s->qkv_ld = 3 * h;
    s->q_off = 0;
    s->k_off = h;
    s->v_off = 2 * h;
    s->ctx_ld = h;
    s->qtile = qtile ? qtile : kernel_attention_qtile(s, bucket);
}

static void t_gemm(plan_dtype dt, int bucket, int n, int k, int bias, int res, int has_act, plan_act act) {
    kernel_spec *s = t_new(KERNEL_KIND_GEMM, dt, bucket);
    s->n = n;
    s->k = k;
    s->x_ld = k;
    s->out_ld = n;
    s->res_ld = res ? n : 0;
    s->has_bias = bias;
    s->has_residual = res;
    s->has_act = has_act;
    s->act = act;
}

/* A gemm_splitk / gemm_ln spec tiled as the compiler tiles it (lower_gemm_tiling). */
static void t_gsk(kernel_kind kind, plan_dtype dt, int bucket, int n, int k, int has_act, plan_act act) {
    kernel_spec *s = t_new(kind, dt, bucket);
    *s = kimage_gemm_spec(kind, dt, bucket, n, k);
    s->has_act = has_act;
    s->act = act;
    static lower_gemm_chooser chooser;
    static const int sms[] = {75, 80, 86, 89, 90}; /* the default architectures */
    if (chooser.ngpus == 0) lower_gemm_chooser_init(&chooser, sms, 5, NULL, 0);
    diag d;
    diag_init(&d);
    CHECK(lower_gemm_tiling(&chooser, s, NULL, &d) == 0, "no tiling of %s n %d k %d: %s", kernel_kind_name(kind), n, k, d.text);
}

static void t_pool(plan_dtype dt, int bucket, int hidden, plan_pool_mode mode, int normalize) {
    kernel_spec *s = t_new(KERNEL_KIND_POOL, dt, bucket);
    s->hidden = hidden;
    s->pool_mode = mode;
    s->normalize = normalize;
}

/* The representative set; the first entries of each kind are "main" configs. */
static void t_specs_init(void) {
    if (t_list.n) return;
    const plan_dtype F32 = PLAN_DTYPE_F32, F16 = PLAN_DTYPE_F16, BF16 = PLAN_DTYPE_BF16;
    t_embed(F32, 128, 96, 3);
    t_embed(F16, 128, 384, 3);
    t_embed(BF16, 512, 768, 2);
    t_embed(F32, 64, 1024, 1);
    t_embed(F16, 256, 2048, 3);  /* a block per row */
    t_embed(BF16, 32, 97, 3);    /* odd: scalar loads */
    t_embed(F16, 512, 768, 3);   /* RoBERTa: position ids after the pad id */
    kernel_spec *r = &t_list.s[t_list.n - 1];
    r->gather_index[1] = KERNEL_INDEX_PAD_POSITION;
    r->table_rows[0] = 50265;
    r->table_rows[1] = 514;
    r->table_rows[2] = 1;
    r->pad_id = 1;

    t_add_ln(F32, 128, 96, 1, 1);
    t_add_ln(F16, 384, 384, 1, 1);
    t_add_ln(BF16, 128, 768, 1, 1);
    t_add_ln(F16, 512, 1024, 0, 1);
    t_add_ln(F32, 32, 384, 1, 0);
    t_add_ln(BF16, 64, 4096, 1, 1); /* a block per row */
    t_add_ln(F16, 128, 80, 0, 0);

    t_attention(F32, 32, 6, 16, 0);
    t_attention(BF16, 32, 4, 16, 0);
    t_attention(F16, 64, 4, 20, 0);
    t_attention(BF16, 128, 12, 32, 0);  /* MiniLM */
    t_attention(F16, 128, 12, 64, 0);   /* BERT-base s128: tile 8 */
    t_attention(F16, 256, 12, 64, 0);   /* 16 */
    t_attention(F16, 384, 12, 64, 0);   /* 32 */
    t_attention(F16, 512, 16, 64, 64);
    t_attention(BF16, 256, 16, 64, 64);
    t_attention(F32, 384, 12, 64, 0);
    t_attention(F32, 512, 8, 128, 0);
    t_attention(F16, 512, 8, 128, 32);  /* one stage */
    t_attention(BF16, 128, 8, 128, 8);
    t_attention(F16, 512, 12, 32, 64);
    /* MPNet: the relative-position score bias (a table for the longest bucket) on
     * the SIMT path, tensor cores at query tiles 8 and 64, and one stage */
    t_attention(F16, 128, 12, 64, 0);
    t_list.s[t_list.n - 1].bias_ld = 512;
    t_attention(F32, 64, 12, 64, 0);
    t_list.s[t_list.n - 1].bias_ld = 64;
    t_attention(F16, 512, 16, 64, 64);
    t_list.s[t_list.n - 1].bias_ld = 512;
    t_attention(BF16, 512, 8, 128, 32);
    t_list.s[t_list.n - 1].bias_ld = 514;

    t_gemm(F16, 128, 2304, 768, 1, 0, 0, PLAN_ACT_GELU_ERF);   /* QKV */
    t_gemm(F16, 128, 3072, 768, 1, 0, 1, PLAN_ACT_GELU_ERF);   /* FC1 + gelu */
    t_gemm(F16, 128, 768, 3072, 1, 1, 0, PLAN_ACT_GELU_ERF);   /* FC2 + residual */
    t_gemm(BF16, 512, 768, 768, 1, 1, 0, PLAN_ACT_GELU_ERF);
    t_gemm(F32, 128, 1536, 384, 1, 0, 1, PLAN_ACT_GELU_TANH);
    t_gemm(F32, 32, 200, 96, 1, 1, 1, PLAN_ACT_RELU);          /* tiny-bert FC1 sizes */
    t_gemm(BF16, 64, 200, 96, 1, 0, 1, PLAN_ACT_TANH);
    t_gemm(F16, 512, 1024, 4096, 1, 1, 1, PLAN_ACT_GELU_ERF);
    t_gemm(F32, 32, 65, 97, 1, 1, 0, PLAN_ACT_RELU);           /* odd everything */
    t_gemm(F16, 64, 30, 100, 0, 0, 1, PLAN_ACT_TANH);

    t_pool(F16, 128, 384, PLAN_POOL_MEAN, 1);                   /* all-MiniLM-L6-v2 */
    t_pool(BF16, 512, 768, PLAN_POOL_MEAN, 1);
    t_pool(F32, 32, 384, PLAN_POOL_MEAN, 0);
    t_pool(F16, 512, 4096, PLAN_POOL_MEAN, 1);                  /* two vectors per thread */
    t_pool(F32, 64, 1100, PLAN_POOL_MEAN, 1);                   /* five */
    t_pool(BF16, 32, 97, PLAN_POOL_MEAN, 1);                    /* odd: scalar loads */
    t_pool(F16, 128, 768, PLAN_POOL_CLS, 1);
    t_pool(F32, 8, 96, PLAN_POOL_CLS, 0);

    const kernel_kind LN = KERNEL_KIND_GEMM_LN, SK = KERNEL_KIND_GEMM_SPLITK;
    t_gsk(LN, F16, 128, 768, 768, 0, PLAN_ACT_GELU_ERF);          /* BERT-base output projection + LN, s128 */
    t_gsk(SK, F16, 128, 3072, 768, 1, PLAN_ACT_GELU_ERF);         /* FC1 + GELU */
    t_gsk(LN, F16, 128, 768, 3072, 0, PLAN_ACT_GELU_ERF);         /* FC2 + LN */
    t_gsk(LN, BF16, 384, 1024, 4096, 0, PLAN_ACT_GELU_ERF);       /* BERT-large FC2, s384 */
    t_gsk(SK, BF16, 384, 4096, 1024, 1, PLAN_ACT_GELU_TANH);
    t_gsk(LN, F32, 512, 1024, 1024, 0, PLAN_ACT_GELU_ERF);
    t_gsk(SK, F32, 32, 1536, 384, 1, PLAN_ACT_GELU_ERF);          /* MiniLM */
    t_gsk(SK, F16, 1, 768, 768, 1, PLAN_ACT_TANH);                /* the pooler: one row */
    t_gsk(LN, F16, 64, 96, 200, 0, PLAN_ACT_GELU_ERF);            /* tiny-bert */
    t_gsk(LN, BF16, 32, 80, 97, 0, PLAN_ACT_GELU_ERF);            /* odd K */
    t_gsk(SK, F16, 64, 200, 96, 1, PLAN_ACT_RELU);
    t_gsk(LN, F16, 512, 2048, 512, 0, PLAN_ACT_GELU_ERF);         /* the widest row gemm_ln holds */
}

static int t_gsk_kind(kernel_kind k) { return k == KERNEL_KIND_GEMM_SPLITK || k == KERNEL_KIND_GEMM_LN; }
static int t_gemm_family(kernel_kind k) { return k == KERNEL_KIND_GEMM || t_gsk_kind(k); }

static const char *t_first_line(const char *text, char *buf, size_t cap) {
    const char *e = strchr(text, '\n');
    size_t n = e ? (size_t)(e - text) : strlen(text);
    if (n >= cap) n = cap - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return buf;
}

/* Whether the space-separated token `tok` occurs in line. */
static int t_has_token(const char *line, const char *tok) {
    size_t n = strlen(tok);
    for (const char *p = strstr(line, tok); p; p = strstr(p + 1, tok))
        if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

static int t_has_kv(const char *line, const char *key, int value) {
    char tok[96];
    snprintf(tok, sizeof tok, "%s=%d", key, value);
    return t_has_token(line, tok);
}

static int t_has_key(const char *line, const char *key) {
    char tok[64];
    snprintf(tok, sizeof tok, " %s=", key);
    return strstr(line, tok) != NULL;
}

/* ------------------------------------------------------------ cases */

static void test_kinds(void) {
    CHECK(strcmp(kernel_kind_name(KERNEL_KIND_EMBED_LN), "embed_ln") == 0, "embed_ln name");
    CHECK(strcmp(kernel_kind_name(KERNEL_KIND_ADD_LN), "add_ln") == 0, "add_ln name");
    CHECK(strcmp(kernel_kind_name(KERNEL_KIND_ATTENTION), "attention") == 0, "attention name");
    CHECK(strcmp(kernel_kind_name(KERNEL_KIND_GEMM), "gemm") == 0, "gemm name");
    CHECK(strcmp(kernel_kind_name(KERNEL_KIND_POOL), "pool") == 0, "pool name");
    /* each kind's own, and the prefetch pair every kernel ends with */
    CHECK(kernel_arg_count(KERNEL_KIND_POOL) == 3 + 2, "pool args");
    CHECK(kernel_arg_count(KERNEL_KIND_EMBED_LN) == 7 + 2, "embed_ln args %d", kernel_arg_count(KERNEL_KIND_EMBED_LN));
    CHECK(kernel_arg_count(KERNEL_KIND_ADD_LN) == 7 + 2, "add_ln args");
    CHECK(kernel_arg_count(KERNEL_KIND_ATTENTION) == 4 + 2, "attention args");
    CHECK(kernel_arg_count(KERNEL_KIND_GEMM) == 6 + 2, "gemm args");
    /* the entry point takes exactly kernel_arg_count pointers */
    t_specs_init();
    for (int i = 0; i < t_list.n; i++) {
        char *text, *entry;
        if (kimage_source(&t_list.s[i], i, &text, &entry) != 0) continue;
        const char *sig = strstr(text, entry);
        int stars = 0;
        for (const char *p = sig; p && *p && *p != ')'; p++) stars += *p == '*';
        CHECK(stars == kernel_arg_count(t_list.s[i].kind), "%s: %d pointer arguments", entry, stars);
        free(text);
        free(entry);
    }
}

static void test_first_line(void) {
    t_specs_init();
    for (int i = 0; i < t_list.n; i++) {
        const kernel_spec *s = &t_list.s[i];
        char *text, *entry, line[1024], tok[128];
        if (kimage_source(s, i, &text, &entry) != 0) continue;
        t_first_line(text, line, sizeof line);
        snprintf(tok, sizeof tok, "template=%s", kernel_kind_name(s->kind));
        CHECK(strncmp(line, "// ", 3) == 0, "%s: first line is not a comment: %s", entry, line);
        CHECK(t_has_token(line, tok), "%s: first line does not name the template: %s", entry, line);
        snprintf(tok, sizeof tok, "dtype=%s", plan_dtype_name(s->dtype));
        CHECK(t_has_token(line, tok), "%s: dtype missing: %s", entry, line);
        int any_bucket = s->kind == KERNEL_KIND_GEMM_SPLITK || s->kind == KERNEL_KIND_GEMM_LN; /* off the grid */
        if (s->bucket && !any_bucket)
            CHECK(t_has_kv(line, "bucket", s->bucket), "%s: bucket missing: %s", entry, line);
        else
            CHECK(t_has_token(line, "bucket=any"), "%s: bucket=any missing: %s", entry, line);
        switch (s->kind) {
        case KERNEL_KIND_EMBED_LN:
        case KERNEL_KIND_ADD_LN:
            CHECK(t_has_kv(line, "hidden", s->hidden), "%s: hidden: %s", entry, line);
            CHECK(t_has_key(line, "eps"), "%s: eps: %s", entry, line);
            if (s->kind == KERNEL_KIND_EMBED_LN) {
                CHECK(t_has_kv(line, "ngathers", s->ngathers), "%s: ngathers: %s", entry, line);
                for (int g = 0; g < s->ngathers; g++) {
                    char key[32];
                    snprintf(key, sizeof key, "gather_index%d", g);
                    CHECK(t_has_key(line, key), "%s: %s: %s", entry, key, line);
                    snprintf(key, sizeof key, "table_rows%d", g);
                    CHECK(t_has_kv(line, key, s->table_rows[g]), "%s: %s: %s", entry, key, line);
                }
                CHECK(t_has_kv(line, "pad_id", s->pad_id), "%s: pad_id: %s", entry, line);
            } else {
                CHECK(t_has_kv(line, "has_bias", s->has_bias), "%s: has_bias: %s", entry, line);
                CHECK(t_has_kv(line, "has_residual", s->has_residual), "%s: has_residual: %s", entry, line);
            }
            break;
        case KERNEL_KIND_ATTENTION:
            CHECK(t_has_kv(line, "qtile", s->qtile) && t_has_kv(line, "heads", s->heads) &&
                      t_has_kv(line, "head_dim", s->head_dim) &&
                      t_has_key(line, "scale") && t_has_kv(line, "qkv_ld", s->qkv_ld) &&
                      t_has_kv(line, "q_off", s->q_off) && t_has_kv(line, "k_off", s->k_off) &&
                      t_has_kv(line, "v_off", s->v_off) && t_has_kv(line, "ctx_ld", s->ctx_ld) &&
                      t_has_kv(line, "bias_ld", s->bias_ld),
                  "%s: attention parameters: %s", entry, line);
            break;
        case KERNEL_KIND_GEMM:
            CHECK(t_has_kv(line, "n", s->n) && t_has_kv(line, "k", s->k) && t_has_kv(line, "x_ld", s->x_ld) &&
                      t_has_kv(line, "out_ld", s->out_ld) && t_has_kv(line, "res_ld", s->res_ld) &&
                      t_has_kv(line, "has_bias", s->has_bias) && t_has_kv(line, "has_residual", s->has_residual) &&
                      t_has_kv(line, "has_act", s->has_act) && t_has_key(line, "act"),
                  "%s: gemm parameters: %s", entry, line);
            if (s->has_act) {
                snprintf(tok, sizeof tok, "act=%s", plan_act_name(s->act));
                CHECK(t_has_token(line, tok), "%s: act: %s", entry, line);
            }
            break;
        case KERNEL_KIND_GEMM_SPLITK:
        case KERNEL_KIND_GEMM_LN:
            CHECK(t_has_kv(line, "n", s->n) && t_has_kv(line, "k", s->k) && t_has_kv(line, "x_ld", s->x_ld) &&
                      t_has_kv(line, "out_ld", s->out_ld) && t_has_kv(line, "res_ld", s->res_ld) &&
                      t_has_kv(line, "has_bias", s->has_bias) && t_has_kv(line, "has_residual", s->has_residual) &&
                      t_has_kv(line, "tile_m", s->tile_m) && t_has_kv(line, "tile_n", s->tile_n) &&
                      t_has_token(line, "splits=any") &&
                      t_has_kv(line, "rows", s->bucket % s->tile_m ? s->bucket : 0),
                  "%s: gemm family parameters: %s", entry, line);
            CHECK(s->kind == KERNEL_KIND_GEMM_LN ? t_has_key(line, "eps") : t_has_kv(line, "has_act", s->has_act),
                  "%s: epilogue parameters: %s", entry, line);
            break;
        case KERNEL_KIND_POOL:
            snprintf(tok, sizeof tok, "mode=%s", plan_pool_mode_name(s->pool_mode));
            CHECK(t_has_kv(line, "hidden", s->hidden) && t_has_token(line, tok) &&
                      t_has_kv(line, "normalize", s->normalize),
                  "%s: pool parameters: %s", entry, line);
            break;
        default: break;
        }
        /* one self-contained unit: header, extern "C" entry, export */
        CHECK(strstr(text, "#ifndef BERTC_DEVICE_CUH") != NULL, "%s: device header missing", entry);
        snprintf(tok, sizeof tok, "BERTC_KERNEL_EXPORT(%s)", entry);
        CHECK(strstr(text, tok) != NULL, "%s: no export line", entry);
        CHECK(strstr(text, "extern \"C\" __global__") != NULL, "%s: no extern \"C\" entry", entry);
        free(text);
        free(entry);
    }
}

static void test_names(void) {
    t_specs_init();
    char *texts[T_MAX_SPECS] = {0}, *entries[T_MAX_SPECS] = {0};
    diag d;
    diag_init(&d);
    for (int i = 0; i < t_list.n; i++) kimage_source(&t_list.s[i], i, &texts[i], &entries[i]);
    for (int i = 0; i < t_list.n; i++) {
        if (!entries[i]) continue;
        for (int j = 0; j < i; j++) {
            if (!entries[j]) continue;
            CHECK(strcmp(entries[i], entries[j]) != 0, "specs %d and %d share the name %s", i, j, entries[i]);
        }
        /* an equal spec — with fields the kind does not read changed — gives equal name and text */
        kernel_spec s = t_list.s[i];
        if (s.kind != KERNEL_KIND_ATTENTION) s.heads = 99, s.head_dim = 7, s.scale = 3.0f, s.qtile = 5;
        if (!t_gemm_family(s.kind)) s.n = 5, s.k = 9, s.has_act = 1;
        if (t_gemm_family(s.kind) && !s.has_residual) s.res_ld = 12345;
        if (!t_gsk_kind(s.kind)) s.tile_m = 3, s.tile_n = 5, s.splits = 7;
        if (s.kind != KERNEL_KIND_EMBED_LN && s.kind != KERNEL_KIND_ADD_LN && s.kind != KERNEL_KIND_GEMM_LN)
            s.eps = 0.5f;
        if (s.kind != KERNEL_KIND_EMBED_LN && s.kind != KERNEL_KIND_ADD_LN && s.kind != KERNEL_KIND_POOL) s.hidden = 17;
        if (s.kind != KERNEL_KIND_POOL) s.pool_mode = PLAN_POOL_MEAN, s.normalize = 1;
        char *t2, *e2;
        if (kernel_source(&s, &t2, &e2, &d) != 0) {
            CHECK(0, "spec %d again: %s", i, d.text);
            continue;
        }
        CHECK(strcmp(e2, entries[i]) == 0, "equal specs, different names %s / %s", e2, entries[i]);
        CHECK(strcmp(t2, texts[i]) == 0, "equal specs, different texts for %s", e2);
        free(t2);
        free(e2);
        /* the GEMM family's split count (and with it the ring's depth and
         * whether partials are reduced) is the launch's: the same text */
        s = t_list.s[i];
        s.splits = s.splits > 1 ? 1 : 2;
        diag quiet;
        diag_init(&quiet);
        if (t_gsk_kind(s.kind) && kernel_spec_check(&s, &quiet) == 0) {
            if (kernel_source(&s, &t2, &e2, &d) == 0) {
                CHECK(strcmp(e2, entries[i]) == 0 && strcmp(t2, texts[i]) == 0, "%d splits changed the text of %s",
                      s.splits, entries[i]);
                free(t2);
                free(e2);
            } else {
                CHECK(0, "spec %d with %d splits: %s", i, s.splits, d.text);
            }
        }
        /* one relevant field changed: a different name */
        s = t_list.s[i];
        switch (s.kind) {
        case KERNEL_KIND_EMBED_LN: s.table_rows[s.ngathers - 1] += 1; break;
        case KERNEL_KIND_ADD_LN: s.eps *= 2.0f; break;
        case KERNEL_KIND_ATTENTION:
            if (i % 3 == 0) s.scale *= 0.5f;
            else if (i % 3 == 1) s.qtile = s.qtile == 8 ? 16 : 8;
            else s.bias_ld = s.bias_ld ? 0 : 512;
            break;
        case KERNEL_KIND_POOL: s.normalize = !s.normalize; break;
        case KERNEL_KIND_GEMM_LN: s.eps *= 2.0f; break;
        default: s.has_act = !s.has_act; break;
        }
        if (kernel_source(&s, &t2, &e2, &d) == 0) {
            CHECK(strcmp(e2, entries[i]) != 0, "a changed spec kept the name %s", e2);
            free(t2);
            free(e2);
        } else {
            CHECK(0, "changed spec %d: %s", i, d.text);
        }
    }
    for (int i = 0; i < t_list.n; i++) {
        free(texts[i]);
        free(entries[i]);
    }
}

static void test_dims(void) {
    t_specs_init();
    for (int i = 0; i < t_list.n; i++) {
        const kernel_spec *s = &t_list.s[i];
        kernel_launch_dims dm;
        diag d;
        diag_init(&d);
        int bucket = t_list.bucket[i];
        if (kernel_dims(s, bucket, &dm, &d) != 0) {
            CHECK(0, "spec %d: %s", i, d.text);
            continue;
        }
        unsigned threads = dm.block[0] * dm.block[1] * dm.block[2];
        CHECK(threads >= 32 && threads <= 1024 && threads % 32 == 0, "spec %d: block of %u threads", i, threads);
        CHECK(dm.shared_bytes <= 48u * 1024u, "spec %d: %u bytes of dynamic shared memory need an opt-in", i,
              dm.shared_bytes);
        CHECK(dm.grid[0] >= 1 && dm.grid[1] >= 1 && dm.grid[2] >= 1, "spec %d: empty grid", i);
        switch (s->kind) {
        case KERNEL_KIND_EMBED_LN:
        case KERNEL_KIND_ADD_LN: {
            /* a block per row of the bucket: a warp while each lane holds at
             * most 24 values of the row, more threads past that */
            kernel_geometry g;
            int per_lane = kernel_geometry_of(s, &g, &d) ? -1 : (s->hidden / g.vec + 31) / 32 * g.vec;
            CHECK(dm.grid[0] == (unsigned)bucket && per_lane > 0 && (threads == 32) == (per_lane <= 24),
                  "spec %d: grid %u x %u threads for bucket %d, hidden %d", i, dm.grid[0], threads, bucket, s->hidden);
            CHECK(dm.shared_bytes == 0, "spec %d: LayerNorm uses dynamic shared memory", i);
            break;
        }
        case KERNEL_KIND_ATTENTION:
            CHECK(dm.grid[0] == (unsigned)s->heads, "spec %d: grid.x %u != heads", i, dm.grid[0]);
            CHECK(dm.grid[1] == (unsigned)((bucket + s->qtile - 1) / s->qtile),
                  "spec %d: %u query tiles of %d for bucket %d", i, dm.grid[1], s->qtile, bucket);
            CHECK(threads == 128, "spec %d: attention with %u threads (four warps)", i, threads);
            CHECK(dm.shared_bytes > 0, "spec %d: attention without shared memory", i);
            break;
        case KERNEL_KIND_GEMM:
            CHECK(dm.grid[0] * 128 >= (unsigned)s->n && (dm.grid[0] - 1) * 32 < (unsigned)s->n,
                  "spec %d: grid.x %u for n %d", i, dm.grid[0], s->n);
            CHECK(dm.grid[1] * 64 >= (unsigned)bucket && (dm.grid[1] - 1) * 32 < (unsigned)bucket,
                  "spec %d: grid.y %u for bucket %d", i, dm.grid[1], bucket);
            break;
        case KERNEL_KIND_GEMM_SPLITK:
        case KERNEL_KIND_GEMM_LN:
            /* the tile and the split the spec names, exactly */
            CHECK(dm.grid[0] == (unsigned)((s->n + s->tile_n - 1) / s->tile_n) &&
                      dm.grid[1] == (unsigned)((s->bucket + s->tile_m - 1) / s->tile_m) &&
                      dm.grid[2] == (unsigned)s->splits && threads == 128 && dm.shared_bytes > 0,
                  "spec %d: grid (%u, %u, %u) for %d x %d tiles of %d x %d, %d splits", i, dm.grid[0], dm.grid[1],
                  dm.grid[2], s->tile_m, s->tile_n, s->bucket, s->n, s->splits);
            break;
        case KERNEL_KIND_POOL:
            /* one output row: one block, static shared memory only */
            CHECK(dm.grid[0] == 1 && dm.grid[1] == 1 && dm.grid[2] == 1 && dm.shared_bytes == 0 && threads <= 256,
                  "spec %d: pool launch %ux%u, %u threads, %u bytes", i, dm.grid[0], dm.grid[1], threads,
                  dm.shared_bytes);
            break;
        default: break;
        }
    }
}

static void test_invalid_specs(void) {
    diag d;
    char *text, *entry;
    kernel_spec s = kimage_spec(KERNEL_KIND_ATTENTION, PLAN_DTYPE_F16, 128);
    s.heads = 4;
    s.head_dim = 63;
    s.scale = 0.125f;
    s.qkv_ld = 3 * 252;
    s.k_off = 252;
    s.v_off = 504;
    s.ctx_ld = 252;
    diag_init(&d);
    CHECK(kernel_source(&s, &text, &entry, &d) != 0 && strstr(d.text, "head_dim 63"), "odd head_dim: %s", d.text);
    CHECK(text == NULL && entry == NULL, "outputs not cleared on failure");
    s.head_dim = 256;
    diag_init(&d);
    kernel_launch_dims dm;
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "head_dim 256"), "head_dim 256: %s", d.text);
    s.head_dim = 64;
    s.qkv_ld = 768;
    s.k_off = 256;
    s.v_off = 512;
    s.ctx_ld = 256;
    s.qtile = 12;
    diag_init(&d);
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "query tile 12"), "qtile 12: %s", d.text);
    s.heads = 2;
    s.head_dim = 128;
    s.qtile = 64; /* a 64-row tile of head_dim 128 does not fit 48 KiB */
    diag_init(&d);
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "does not fit"), "qtile 64, head_dim 128: %s", d.text);
    s.qtile = 8;
    s.bucket = 128; /* attention serves every bucket */
    diag_init(&d);
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "bucket 128"), "attention bucket: %s", d.text);
    s.bucket = 0;
    s.bias_ld = 100; /* the score-bias table serves buckets up to its rows: the launch's is checked */
    diag_init(&d);
    CHECK(kernel_dims(&s, 100, &dm, &d) == 0, "bias_ld 100, bucket 100: %s", d.text);
    diag_init(&d);
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "score-bias table of 100 rows cannot serve a bucket of 128"),
          "bias_ld 100, bucket 128: %s", d.text);
    s.bias_ld = 5000;
    diag_init(&d);
    CHECK(kernel_dims(&s, 128, &dm, &d) != 0 && strstr(d.text, "score-bias table of 5000 rows"), "bias_ld 5000: %s",
          d.text);

    /* RoBERTa's positions: the pad id's row and pad_id + bucket must be rows of the table */
    s = kimage_spec(KERNEL_KIND_EMBED_LN, PLAN_DTYPE_F16, 64);
    s.hidden = 64;
    s.eps = 1e-5f;
    s.ngathers = 2;
    s.gather_index[0] = KERNEL_INDEX_INPUT_IDS;
    s.table_rows[0] = 100;
    s.gather_index[1] = KERNEL_INDEX_PAD_POSITION;
    s.table_rows[1] = 66;
    s.pad_id = 1;
    diag_init(&d);
    CHECK(kernel_dims(&s, 64, &dm, &d) == 0, "pad 1 + bucket 64 < 66 rows: %s", d.text);
    diag_init(&d);
    CHECK(kernel_dims(&s, 65, &dm, &d) != 0 && strstr(d.text, "reach 66 in a bucket of 65, past its 66 rows"),
          "pad 1 + bucket 65: %s", d.text);
    s.pad_id = 66;
    diag_init(&d);
    CHECK(kernel_dims(&s, 8, &dm, &d) != 0 && strstr(d.text, "pad id 66 is not a row"), "pad 66: %s", d.text);
    s.pad_id = 1;
    s.gather_index[1] = KERNEL_INDEX_POSITION; /* a pad id without the gather that reads it */
    diag_init(&d);
    CHECK(kernel_dims(&s, 8, &dm, &d) != 0 && strstr(d.text, "without a pad-position gather"), "stray pad id: %s",
          d.text);

    s = kimage_spec(KERNEL_KIND_ADD_LN, PLAN_DTYPE_I32, 32);
    s.hidden = 64;
    diag_init(&d);
    CHECK(kernel_source(&s, &text, &entry, &d) != 0 && strstr(d.text, "int32"), "int32 storage: %s", d.text);
    s.dtype = PLAN_DTYPE_F32;
    s.hidden = 0;
    diag_init(&d);
    CHECK(kernel_source(&s, &text, &entry, &d) != 0 && strstr(d.text, "hidden"), "hidden 0: %s", d.text);

    s = kimage_spec(KERNEL_KIND_GEMM, PLAN_DTYPE_BF16, 64);
    s.n = 100;
    s.k = 64;
    s.x_ld = 32;
    s.out_ld = 100;
    diag_init(&d);
    CHECK(kernel_source(&s, &text, &entry, &d) != 0 && strstr(d.text, "x_ld 32"), "x_ld < k: %s", d.text);
    s.kind = (kernel_kind)42;
    diag_init(&d);
    CHECK(kernel_dims(&s, 64, &dm, &d) != 0 && strstr(d.text, "42"), "bad kind: %s", d.text);
}

static void test_compile_all_archs(void) {
    t_specs_init();
    /* every spec, plus the first three again: kbuild must compile them once */
    int n = t_list.n + 3;
    char *texts[T_MAX_SPECS + 3] = {0}, *entries[T_MAX_SPECS + 3] = {0};
    kbuild_unit units[T_MAX_SPECS + 3];
    diag d;
    diag_init(&d);
    for (int i = 0; i < n; i++) {
        const kernel_spec *s = &t_list.s[i < t_list.n ? i : i - t_list.n];
        if (kimage_source(s, i, &texts[i], &entries[i]) != 0) goto out;
        units[i].text = texts[i];
        units[i].entry = entries[i];
    }
    kbuild_options opt = {0};
    opt.jobs = 2;
    kbuild_result r;
    arch_list defaults;
    arch_list_default(&defaults);
    const char *default_archs[ARCH_MAX];
    for (int a = 0; a < defaults.count; a++) default_archs[a] = defaults.names[a];
    const int default_arch_count = defaults.count;
    if (kbuild_compile(units, n, default_archs, default_arch_count, &opt, &r, &d) != 0) {
        CHECK(0, "compile failed: %s", d.text);
        goto out;
    }
    printf("    %d kernels (%d distinct), %d archs: %.1f s wall\n", n, r.ndistinct, default_arch_count,
           r.seconds);
    CHECK(r.nunits == n && r.ndistinct == t_list.n, "%d distinct of %d (expected %d)", r.ndistinct, n, t_list.n);
    for (int i = t_list.n; i < n; i++)
        CHECK(r.distinct_of[i] == i - t_list.n, "unit %d is a copy of %d, not %d", i, i - t_list.n, r.distinct_of[i]);
    /* the templates tell 750, 800 and 900 apart: sm_75 compiles from compute_75,
     * sm_80/86/89 from compute_80, sm_90 from compute_90; the PTX for newer GPUs
     * is the tensor-core path (compute_80) and sm_90's (compute_90), never
     * compute_75.  Two front ends: compute_90 is derived from compute_80's PTX
     * (sm_90's instructions are marked comments there), and every kernel waits
     * for its producer with sm_90's instruction, which compute_80 only names */
    CHECK(r.ntargets == 2 && r.nderived == 1 && r.nimages == default_arch_count + 2,
          "%d images, %d PTX targets, %d derived", r.nimages, r.ntargets, r.nderived);
    int spills = 0;
    for (int a = 0; a < r.nimages; a++) {
        const kbuild_image *im = &r.images[a];
        if (im->is_ptx) {
            const char *want = a == default_arch_count ? "compute_80" : "compute_90";
            char target[32];
            snprintf(target, sizeof target, ".target sm_%s", want + 8);
            CHECK(strcmp(im->arch, want) == 0, "PTX image %d for %s, expected %s", a, im->arch, want);
            CHECK(im->size > 0 && strstr((const char *)im->data, target) != NULL, "%s PTX without %s", im->arch, target);
            int waits = 0, marked = 0;
            for (const char *q = strstr((const char *)im->data, "griddepcontrol.wait;"); q;
                 q = strstr(q + 1, "griddepcontrol.wait;"))
                waits++, marked += q - (const char *)im->data >= 9 && !strncmp(q - 9, "//@sm_90 ", 9);
            CHECK(waits > 0 && marked == (a == default_arch_count ? waits : 0),
                  "%s PTX: %d dependency waits, %d of them comments", im->arch, waits, marked);
            for (int i = 0; i < t_list.n; i++) {
                char vis[300];
                snprintf(vis, sizeof vis, ".entry %s(", entries[i]);
                CHECK(strstr((const char *)im->data, vis) != NULL, "PTX lacks %s", entries[i]);
            }
            continue;
        }
        CHECK(strcmp(im->arch, default_archs[a]) == 0, "image %d is %s", a, im->arch);
        CHECK(im->size > 64 && memcmp(im->data, "\177ELF", 4) == 0, "%s: CUBIN is not ELF", im->arch);
        CHECK(im->seconds > 0.0, "%s: no compile time recorded", im->arch);
        int maxreg = 0;
        for (int i = 0; i < n; i++) {
            const kbuild_stats *st = &im->stats[i];
            kernel_launch_dims dm;
            int u = i < t_list.n ? i : i - t_list.n;
            kernel_dims(&t_list.s[u], t_list.bucket[u], &dm, &d);
            int threads = (int)(dm.block[0] * dm.block[1] * dm.block[2]);
            /* the entry's __launch_bounds__(max threads, min blocks) */
            int lb_threads = 0, lb_blocks = 1;
            const char *lb = strstr(texts[i], "__launch_bounds__(");
            CHECK(lb && sscanf(lb, "__launch_bounds__(%d, %d)", &lb_threads, &lb_blocks) >= 1,
                  "%s: no launch bounds", entries[i]);
            CHECK(lb_threads == threads, "%s: launch bounds %d, launched with %d threads", entries[i], lb_threads,
                  threads);
            CHECK(st->registers > 0, "%s %s: no register count from ptxas", im->arch, entries[i]);
            CHECK(st->registers <= 255 && st->registers * threads * lb_blocks <= 65536,
                  "%s %s: %d registers x %d threads x %d blocks", im->arch, entries[i], st->registers, threads,
                  lb_blocks);
            CHECK(st->spill_stores == 0 && st->spill_loads == 0 && st->stack_frame == 0,
                  "%s %s spills: %d bytes stored, %d loaded, %d-byte stack frame", im->arch, entries[i],
                  st->spill_stores, st->spill_loads, st->stack_frame);
            if (st->spill_stores || st->spill_loads) {
                printf("    SPILL %s %s: %d/%d bytes\n", im->arch, entries[i], st->spill_stores, st->spill_loads);
                spills++;
            }
            CHECK(!t_gsk_kind(t_list.s[u].kind) || st->shared_static <= KERNEL_GSK_SMEM_STATIC,
                  "%s %s: %d bytes of static shared memory (the lowering counts %d)", im->arch, entries[i],
                  st->shared_static, KERNEL_GSK_SMEM_STATIC);
            if (st->registers > maxreg) maxreg = st->registers;
        }
        printf("    %s: %.1f s, %zu-byte CUBIN, at most %d registers\n", im->arch, im->seconds, im->size, maxreg);
    }
    CHECK(spills == 0, "%d kernels spill", spills);
    kbuild_result_free(&r);
out:
    for (int i = 0; i < n; i++) {
        free(texts[i]);
        free(entries[i]);
    }
}

static void test_broken_kernel(void) {
    static const char broken[] =
        "#include <cuda_fp16.h>\n"
        "extern \"C\" __global__ void broken_kernel(float *o) {\n"
        "    float a = 1.0f;\n"
        "    o[threadIdx.x] = a + undeclared_thing;\n"
        "}\n";
    static const char fine[] = "extern \"C\" __global__ void fine_kernel(float *o) { o[threadIdx.x] = 2.0f; }\n";
    kbuild_unit units[2] = {{fine, "fine_kernel", 0}, {broken, "broken_kernel", 0}};
    const char *arch[1] = {"sm_80"};
    kbuild_result r;
    diag d;
    diag_init(&d);
    int rc = kbuild_compile(units, 2, arch, 1, NULL, &r, &d);
    CHECK(rc != 0, "a broken kernel compiled");
    CHECK(r.nimages == 0 && r.images == NULL, "result not empty after a failure");
    CHECK(strstr(d.text, "compute_80") != NULL, "no target in: %s", d.text);
    CHECK(strstr(d.text, "\"undeclared_thing\" is undefined") != NULL, "NVRTC's message missing: %s", d.text);
    CHECK(strstr(d.text, "broken_kernel.cu(4)") != NULL, "the log does not name the kernel and line: %s", d.text);
    CHECK(strstr(d.text, ">    4 |     o[threadIdx.x] = a + undeclared_thing;") != NULL, "no marked line: %s",
          d.text);
    CHECK(strstr(d.text, "     3 |     float a = 1.0f;") != NULL, "no context line: %s", d.text);
    CHECK(strstr(d.text, "fine_kernel(") == NULL, "the excerpt shows the wrong kernel: %s", d.text);

    /* a generated kernel broken in its instantiation line */
    kernel_spec s = kimage_spec(KERNEL_KIND_ADD_LN, PLAN_DTYPE_F16, 64);
    s.hidden = 384;
    s.eps = 1e-12f;
    s.has_residual = 1;
    char *text, *entry;
    if (kernel_source(&s, &text, &entry, &d) != 0) {
        CHECK(0, "add_ln: %s", d.text);
        return;
    }
    char *call = strstr(text, "    bertc_add_ln<");
    CHECK(call != NULL, "no instantiation line");
    if (call) {
        memcpy(call + 4, "bertc_add_lX", 12);
        int line = 1;
        for (const char *p = text; p < call; p++) line += *p == '\n';
        kbuild_unit u = {text, entry, 0};
        diag_init(&d);
        CHECK(kbuild_compile(&u, 1, arch, 1, NULL, &r, &d) != 0, "a broken generated kernel compiled");
        char want[64];
        snprintf(want, sizeof want, ">%5d |     bertc_add_lX<", line);
        CHECK(strstr(d.text, want) != NULL, "no marked line %d: %s", line, d.text);
        CHECK(strstr(d.text, entry) != NULL, "the kernel is not named: %s", d.text);
    }
    free(text);
    free(entry);
}

static void test_dedupe_and_args(void) {
    static const char k1[] = "extern \"C\" __global__ void dd_one(float *o) { o[threadIdx.x] = 1.0f; }\n";
    static const char k2[] = "extern \"C\" __global__ void dd_two(float *o) { o[threadIdx.x] = 2.0f; }\n";
    char k1copy[sizeof k1];
    memcpy(k1copy, k1, sizeof k1); /* equal content, different pointer */
    kbuild_unit units[4] = {{k1, "dd_one", 0}, {k2, "dd_two", 0}, {k1copy, "dd_one", 0}, {k2, "dd_two", 0}};
    const char *arch[2] = {"sm_86", "sm_120"};
    kbuild_options opt = {0};
    opt.jobs = 2;
    kbuild_result r;
    diag d;
    diag_init(&d);
    if (kbuild_compile(units, 4, arch, 2, &opt, &r, &d) != 0) {
        CHECK(0, "compile: %s", d.text);
    } else {
        CHECK(r.ndistinct == 2, "%d distinct", r.ndistinct);
        CHECK(r.distinct_of[0] == 0 && r.distinct_of[1] == 1 && r.distinct_of[2] == 0 && r.distinct_of[3] == 1,
              "distinct_of %d %d %d %d", r.distinct_of[0], r.distinct_of[1], r.distinct_of[2], r.distinct_of[3]);
        /* kernels that test no architecture compile once, from the lowest
         * listed (compute_86), whose PTX serves every newer GPU */
        CHECK(r.nimages == 3 && r.ntargets == 1 && !strcmp(r.images[2].arch, "compute_86") && r.images[2].is_ptx &&
                  !r.images[2].stats && strstr((const char *)r.images[2].data, ".target sm_86") &&
                  strstr((const char *)r.images[2].data, "dd_two"),
              "PTX compute_86 expected, got %d images, the third %s", r.nimages,
              r.nimages > 2 ? r.images[2].arch : "?");
        CHECK(r.images[1].stats[2].registers == r.images[1].stats[0].registers && r.images[1].stats[0].registers > 0,
              "duplicate's stats");
        kbuild_result_free(&r);
    }

    const char *bad[2] = {"sm_80", "sm_61"};
    diag_init(&d);
    CHECK(kbuild_compile(units, 1, bad, 2, NULL, &r, &d) != 0, "sm_61 accepted");
    CHECK(d.code == DIAG_CODE_USAGE && strstr(d.text, "sm_61") && strstr(d.text, "sm_75 sm_80 sm_86 sm_89 sm_90"),
          "unknown arch message: %s", d.text);
    CHECK(!arch_supported("compute_80") && arch_supported("sm_120"), "arch table");
    const char *twice[2] = {"sm_80", "sm_80"};
    diag_init(&d);
    CHECK(kbuild_compile(units, 1, twice, 2, NULL, &r, &d) != 0 && strstr(d.text, "twice"), "arch twice: %s", d.text);
    opt.cuda_home = "/nonexistent/cuda";
    diag_init(&d);
    CHECK(kbuild_compile(units, 1, arch, 1, &opt, &r, &d) != 0 && strstr(d.text, "/nonexistent/cuda/include"),
          "missing toolkit: %s", d.text);
    int major = 0, minor = 0;
    CHECK(kbuild_nvrtc_version(&major, &minor, &d) == 0 && major >= 11, "NVRTC version %d.%d", major, minor);
}

/* The 16-bit GEMM and attention take the tensor-core path (mma.sync,
 * ldmatrix, cp.async) from sm_80 on; on sm_75 float16 attention has
 * mma m16n8k8 and ldmatrix (no cp.async), bfloat16 attention and the GEMM
 * none of them; float attention stays SIMT everywhere.  The PTX of each
 * architecture's own target is looked at (kbuild's all_ptx). */
static void test_tensor_core_path(void) {
    kernel_spec s[4];
    s[0] = kimage_spec(KERNEL_KIND_GEMM, PLAN_DTYPE_BF16, 64);
    s[0].n = 128;
    s[0].k = 256;
    s[0].x_ld = 256;
    s[0].out_ld = 128;
    s[0].has_bias = 1;
    static const plan_dtype adt[3] = {PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_F32};
    for (int i = 1; i < 4; i++) {
        s[i] = kimage_spec(KERNEL_KIND_ATTENTION, adt[i - 1], 128);
        s[i].heads = 4;
        s[i].head_dim = 64;
        s[i].scale = 0.125f;
        s[i].qkv_ld = 768;
        s[i].k_off = 256;
        s[i].v_off = 512;
        s[i].ctx_ld = 256;
        s[i].qtile = 16;
    }
    /* per spec, per arch (sm_80, sm_75): mma, ldmatrix, cp.async expected */
    static const int want[4][2][3] = {{{1, 1, 1}, {0, 0, 0}}, {{1, 1, 1}, {1, 1, 0}}, {{1, 1, 1}, {0, 0, 0}},
                                      {{0, 0, 0}, {0, 0, 0}}};
    static const char *const mma_insn[4][2] = {
        {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync"},
        {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"},
        {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync"},
        {"mma.sync", "mma.sync"}};
    /* what inspect reports (kernel_path) is what the PTX shows */
    static const char *const path[4][2] = {{"mma.m16n8k16", "simt"},
                                           {"mma.m16n8k16", "mma.m16n8k8"},
                                           {"mma.m16n8k16", "simt"},
                                           {"simt", "simt"}};
    for (int i = 0; i < 4; i++)
        for (int a = 0; a < 2; a++) {
            const char *p = kernel_path(&s[i], a ? 75 : 80);
            CHECK(p && !strcmp(p, path[i][a]), "spec %d on sm_%d: path %s, expected %s", i, a ? 75 : 80, p ? p : "NULL",
                  path[i][a]);
        }
    kernel_spec ln = kimage_spec(KERNEL_KIND_ADD_LN, PLAN_DTYPE_F16, 64);
    ln.hidden = 64;
    CHECK(kernel_path(&ln, 80) == NULL, "add_ln has no path to choose");
    for (int i = 0; i < 4; i++) {
        char *text, *entry;
        if (kimage_source(&s[i], i, &text, &entry) != 0) continue;
        kbuild_unit u = {text, entry, 0};
        diag d;
        const char *archs[2][1] = {{"sm_80"}, {"sm_75"}};
        static const char *const ptx[2] = {"compute_80", "compute_75"};
        for (int a = 0; a < 2; a++) {
            kbuild_options o = {.all_ptx = 1};
            kbuild_result r;
            if (kbuild_compile(&u, 1, archs[a], 1, &o, &r, &d) != 0) {
                CHECK(0, "%s: %s", archs[a][0], d.text);
                continue;
            }
            const char *code = NULL;
            for (int k = 0; k < r.nimages; k++)
                if (r.images[k].is_ptx && !strcmp(r.images[k].arch, ptx[a])) code = (const char *)r.images[k].data;
            if (!code) {
                CHECK(0, "%s: no %s PTX", archs[a][0], ptx[a]);
                kbuild_result_free(&r);
                continue;
            }
            int mma = strstr(code, mma_insn[i][a]) != NULL;
            int ldm = strstr(code, "ldmatrix.sync.aligned.m8n8.x4") != NULL;
            int cp = strstr(code, "cp.async.cg.shared.global") != NULL;
            CHECK(mma == want[i][a][0] && ldm == want[i][a][1] && cp == want[i][a][2],
                  "%s on %s: mma %d, ldmatrix %d, cp.async %d (expected %d %d %d)", entry, archs[a][0], mma, ldm, cp,
                  want[i][a][0], want[i][a][1], want[i][a][2]);
            kbuild_result_free(&r);
        }
        free(text);
        free(entry);
    }
}

/* PTX of one spec for one arch (sm_NN): which tensor-core instructions
 * the arch's own front-end target (compute_NN, kbuild's all_ptx; a plan
 * carries compute_80 only) holds. */
static void t_ptx_insns(const kernel_spec *s, const char *arch, int *mma16816, int *mma1688, int *ldm, int *cp) {
    char *text, *entry;
    *mma16816 = *mma1688 = *ldm = *cp = -1;
    if (kimage_source(s, 0, &text, &entry) != 0) return;
    kbuild_unit u = {text, entry, 0};
    const char *archs[1] = {arch};
    char target[16];
    snprintf(target, sizeof target, "compute_%s", arch + 3);
    kbuild_options o = {.all_ptx = 1};
    kbuild_result r;
    diag d;
    if (kbuild_compile(&u, 1, archs, 1, &o, &r, &d) != 0) {
        CHECK(0, "%s %s: %s", entry, arch, d.text);
    } else {
        const char *ptx = NULL;
        for (int k = 0; k < r.nimages; k++)
            if (r.images[k].is_ptx && !strcmp(r.images[k].arch, target)) ptx = (const char *)r.images[k].data;
        CHECK(ptx != NULL, "%s %s: no %s PTX", entry, arch, target);
        if (!ptx) ptx = "";
        *mma16816 = strstr(ptx, "mma.sync.aligned.m16n8k16") != NULL;
        *mma1688 = strstr(ptx, "mma.sync.aligned.m16n8k8") != NULL;
        *ldm = strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4") != NULL;
        *cp = strstr(ptx, "cp.async.cg.shared.global") != NULL;
        kbuild_result_free(&r);
    }
    free(text);
    free(entry);
}

/* The GEMM family's paths: m16n8k16 + ldmatrix + cp.async from sm_80; on
 * sm_75 fp16 as two m16n8k8 with ldmatrix (no cp.async there), bf16 SIMT
 * (Turing has no bf16 mma); float SIMT everywhere. */
static void test_gemm_family_paths(void) {
    static const plan_dtype dts[3] = {PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_F32};
    for (int i = 0; i < 3; i++) {
        kernel_spec s = kimage_spec(KERNEL_KIND_GEMM_LN, dts[i], 128);
        s.n = 256;
        s.k = 256;
        s.x_ld = s.out_ld = s.res_ld = 256;
        s.has_bias = s.has_residual = 1;
        s.eps = 1e-5f;
        s.tile_m = 32;
        s.tile_n = 64;
        s.splits = 2;
        int a, b, l, c;
        t_ptx_insns(&s, "sm_80", &a, &b, &l, &c);
        int tc = dts[i] != PLAN_DTYPE_F32;
        CHECK(a == tc && b == 0 && l == tc && c == 1, "%s sm_80: m16n8k16 %d, m16n8k8 %d, ldmatrix %d, cp.async %d",
              plan_dtype_name(dts[i]), a, b, l, c);
        t_ptx_insns(&s, "sm_75", &a, &b, &l, &c);
        int t75 = dts[i] == PLAN_DTYPE_F16;
        CHECK(a == 0 && b == t75 && l == t75 && c == 0, "%s sm_75: m16n8k16 %d, m16n8k8 %d, ldmatrix %d, cp.async %d",
              plan_dtype_name(dts[i]), a, b, l, c);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_kinds);
    CHECK_CASE(test_first_line);
    CHECK_CASE(test_names);
    CHECK_CASE(test_dims);
    CHECK_CASE(test_invalid_specs);
    CHECK_CASE(test_dedupe_and_args);
    CHECK_CASE(test_broken_kernel);
    CHECK_CASE(test_tensor_core_path);
    CHECK_CASE(test_gemm_family_paths);
    CHECK_CASE(test_compile_all_archs);
    return check_summary();
}
