/*
 * test_tokenizer_families — byte-level BPE (RoBERTa), Unigram and
 * SentencePiece Unigram (XLM-R) tokenizers, and all-mpnet-base-v2's own,
 * against Hugging Face's fast tokenizers, id for id, type for type and
 * offset for offset.
 *
 * The tokenizers are directories in tests/golden (trained by
 * tools/make_tokenizer_families.py with tokenizers' own trainers and
 * sentencepiece), read exactly as `bertc import` + `bertc compile` read
 * them (hf_import_tokenizer_desc), and run through a plan's TOKENIZER
 * section written and read back, so the format is in the loop too.  The
 * goldens (tests/golden/tokenizer-families.btk2, docs/testing.md) hold,
 * per tokenizer, a hash of every encoding of the WordPiece corpus's 4,336
 * texts (tests/golden/tokenizer-corpus.btok: its texts are not stored
 * twice), every token of about 350 byte-level edge cases, and a hash per
 * block of 256 code points of "A" c "b" for every code point c.
 * all-mpnet-base-v2 runs when tools/fetch_mpnet.sh has fetched it, GPT-2's
 * real byte-level BPE (as RoBERTa) when tools/fetch_gpt2_bpe.sh has.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bertc.h"
#include "bincursor.h"
#include "check.h"
#include "hf_import.h"
#include "plan.h"
#include "sha256.h"
#include "tokenizer.h"

#define FAM_MAX 8

typedef struct fam_case {
    int32_t max_len;
    const char *text, *pair;     /* into the file images; pair NULL: none */
    uint32_t tlen, plen;
    uint32_t n[FAM_MAX];         /* edge cases: tokens per tokenizer */
    const unsigned char *toks[FAM_MAX];   /* 14 bytes each: i32 id, u8 type, u8 seq, u32 start, u32 end */
} fam_case;

typedef struct fam_golden {
    unsigned char *img, *corpus_img;
    uint32_t ntok;
    char names[FAM_MAX][64];
    uint32_t ncorpus, nedge;
    const unsigned char *hashes;     /* [ncorpus][ntok][8] */
    fam_case *corpus, *edge;
} fam_golden;

static void fam_free(fam_golden *g) {
    free(g->img);
    free(g->corpus_img);
    free(g->corpus);
    free(g->edge);
    memset(g, 0, sizeof *g);
}

/* One case's text (and pair) at the cursor. */
static int fam_read_text(bincursor *c, fam_case *k, int with_max_len) {
    const unsigned char *h = bincursor_take(c, with_max_len ? 9 : 0, "case head");
    if (!h) return -1;
    k->max_len = (int32_t)bincursor_le32(h);
    int has_pair = h[4];
    k->tlen = bincursor_le32(h + 5);
    if (!(k->text = (const char *)bincursor_take(c, k->tlen, "text"))) return -1;
    k->pair = NULL;
    if (has_pair) {
        if (bincursor_u32(c, &k->plen, "pair length") || !(k->pair = (const char *)bincursor_take(c, k->plen, "pair")))
            return -1;
    }
    return 0;
}

/* The texts of tokenizer-corpus.btok (its expected WordPiece ids are skipped). */
static int fam_corpus_texts(fam_golden *g, char *err, size_t cap) {
    size_t n;
    if (bincursor_read_file("tests/golden/tokenizer-corpus.btok", &g->corpus_img, &n, err, cap)) return -1;
    bincursor c = bincursor_init(g->corpus_img, n, "tokenizer-corpus.btok", err, cap);
    uint32_t hl, nvocab, ncases;
    if (bincursor_magic_version(&c, "BTOK", "a tokenizer corpus", 1) || bincursor_u32(&c, &hl, "header") ||
        !bincursor_take(&c, hl, "header") || bincursor_u32(&c, &nvocab, "nvocab") || bincursor_u32(&c, &ncases, "ncases"))
        return -1;
    for (uint32_t v = 0; v < nvocab; v++) {
        uint32_t l;
        if (bincursor_u32(&c, &l, "name") || !bincursor_take(&c, l + 3, "vocabulary %u", v)) return -1;
    }
    if (!(g->corpus = calloc(ncases + 1, sizeof *g->corpus))) return -1;
    g->ncorpus = ncases;
    for (uint32_t i = 0; i < ncases; i++) {
        if (fam_read_text(&c, &g->corpus[i], 1)) return -1;
        for (uint32_t v = 0; v < nvocab; v++) {
            uint32_t m;
            if (bincursor_u32(&c, &m, "ids") || !bincursor_take(&c, (size_t)m * 3, "case %u ids", i)) return -1;
        }
    }
    return c.failed ? -1 : 0;
}

static int fam_load(fam_golden *g, const char *path, char *err, size_t cap) {
    memset(g, 0, sizeof *g);
    size_t n;
    if (fam_corpus_texts(g, err, cap) || bincursor_read_file(path, &g->img, &n, err, cap)) return -1;
    bincursor c = bincursor_init(g->img, n, path, err, cap);
    uint32_t hl;
    if (bincursor_magic_version(&c, "BTK2", "a tokenizer golden", 1) || bincursor_u32(&c, &hl, "header") ||
        !bincursor_take(&c, hl, "header") || bincursor_u32(&c, &g->ntok, "ntok"))
        return -1;
    if (g->ntok < 1 || g->ntok > FAM_MAX) return bincursor_error(&c, "%u tokenizers", g->ntok), -1;
    for (uint32_t t = 0; t < g->ntok; t++) {
        uint32_t l;
        const unsigned char *s;
        if (bincursor_u32(&c, &l, "name") || l >= sizeof g->names[t] || !(s = bincursor_take(&c, l, "name"))) return -1;
        memcpy(g->names[t], s, l);
    }
    uint32_t nc;
    if (bincursor_u32(&c, &nc, "corpus cases")) return -1;
    if (nc != g->ncorpus) return bincursor_error(&c, "%u corpus cases, the corpus has %u", nc, g->ncorpus), -1;
    if (!(g->hashes = bincursor_take(&c, (size_t)nc * g->ntok * 8, "corpus hashes")) ||
        bincursor_count(&c, &g->nedge, 9, "edge cases") || !(g->edge = calloc(g->nedge + 1, sizeof *g->edge)))
        return -1;
    for (uint32_t i = 0; i < g->nedge; i++) {
        if (fam_read_text(&c, &g->edge[i], 1)) return -1;
        for (uint32_t t = 0; t < g->ntok; t++)
            if (bincursor_u32(&c, &g->edge[i].n[t], "tokens") ||
                !(g->edge[i].toks[t] = bincursor_take(&c, (size_t)g->edge[i].n[t] * 14, "edge case %u", i)))
                return -1;
    }
    if (c.off != n) return bincursor_error(&c, "%zu trailing bytes", n - c.off), -1;
    return 0;
}

/* ---- encoding and comparing ---- */

/* Tokens as the golden packs them: i32 id, u8 type, u8 seq (255: template), u32 start, u32 end. */
static unsigned char *fam_pack(const tokenizer_output *o, size_t *n) {
    unsigned char *b = malloc(o->len * 14 + 1);
    size_t k = 0;
    for (size_t i = 0; b && i < o->len; i++) {
        uint32_t v[3] = {(uint32_t)o->ids[i], (uint32_t)o->offsets[2 * i], (uint32_t)o->offsets[2 * i + 1]};
        for (int j = 0; j < 4; j++) b[k + j] = (unsigned char)(v[0] >> (8 * j));
        b[k + 4] = (unsigned char)o->type_ids[i];
        b[k + 5] = o->seq[i] < 0 ? 255 : (unsigned char)o->seq[i];
        for (int j = 0; j < 4; j++) b[k + 6 + j] = (unsigned char)(v[1] >> (8 * j)), b[k + 10 + j] = (unsigned char)(v[2] >> (8 * j));
        k += 14;
    }
    *n = k;
    return b;
}

static void fam_sha(const void *b, size_t n, unsigned char out[32]) {
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, b, n);
    sha256_final(&c, out);
}

static void fam_print(const tokenizer *t, const char *who, const unsigned char *b, size_t n) {
    fprintf(stderr, "    %s:", who);
    for (size_t i = 0; i < n && i < 24 * 14; i += 14)
        fprintf(stderr, " %s(%u,%u,%u-%u)", tokenizer_id_to_token(t, (int32_t)bincursor_le32(b + i)), b[i + 4],
                b[i + 5], bincursor_le32(b + i + 6), bincursor_le32(b + i + 10));
    fprintf(stderr, "%s\n", n > 24 * 14 ? " ..." : "");
}

static int fam_encode(const tokenizer *t, const fam_case *k, tokenizer_output *o, diag *d) {
    return tokenizer_encode(t, k->text, k->tlen, k->pair, k->plen, k->max_len, o, d);
}

/* A max_len below the template's special tokens is an error by design (docs/tokenizer.md; HF ignores it). */
static int fam_refused_by_design(const tokenizer *t, const fam_case *k, int rc) {
    size_t ns = tokenizer_num_special(t, k->pair && k->plen);
    return rc && k->max_len > 0 && (size_t)k->max_len < ns;
}

/* The corpus: one hash per case. */
static void fam_corpus(const fam_golden *g, uint32_t ti, const tokenizer *t) {
    tokenizer_output o;
    tokenizer_output_init(&o);
    int bad = 0;
    for (uint32_t i = 0; i < g->ncorpus; i++) {
        diag d;
        diag_init(&d);
        const fam_case *k = &g->corpus[i];
        int rc = fam_encode(t, k, &o, &d);
        size_t n = 0;
        unsigned char *b = rc ? NULL : fam_pack(&o, &n), dig[32];
        if (b) fam_sha(b, n, dig);
        if (!fam_refused_by_design(t, k, rc) && (!b || memcmp(dig, g->hashes + ((size_t)i * g->ntok + ti) * 8, 8))) {
            if (bad++ < 3) {
                fprintf(stderr, "  %s: corpus case %u differs (tools/make_tokenizer_families.py --show "
                        "tests/golden/%s %u prints HF's)%s%s\n", g->names[ti], i, g->names[ti], i, rc ? ": " : "",
                        rc ? d.text : "");
                if (b) fam_print(t, "bertc", b, n);
            }
        }
        free(b);
    }
    CHECK(bad == 0, "%s: %d of %u corpus cases differ from Hugging Face", g->names[ti], bad, g->ncorpus);
    tokenizer_output_free(&o);
}

/* The edge cases: every token. */
static void fam_edges(const fam_golden *g, uint32_t ti, const tokenizer *t) {
    tokenizer_output o;
    tokenizer_output_init(&o);
    int bad = 0;
    for (uint32_t i = 0; i < g->nedge; i++) {
        diag d;
        diag_init(&d);
        const fam_case *k = &g->edge[i];
        int rc = fam_encode(t, k, &o, &d);
        size_t n = 0;
        unsigned char *b = rc ? NULL : fam_pack(&o, &n);
        if (!fam_refused_by_design(t, k, rc) && (!b || n != (size_t)k->n[ti] * 14 || memcmp(b, k->toks[ti], n))) {
            if (bad++ < 5) {
                fprintf(stderr, "  %s: edge case %u (\"%.60s\")%s%s\n", g->names[ti], i, k->text, rc ? ": " : "",
                        rc ? d.text : "");
                if (b) fam_print(t, "bertc", b, n);
                fam_print(t, "HF   ", k->toks[ti], (size_t)k->n[ti] * 14);
            }
        }
        free(b);
    }
    CHECK(bad == 0, "%s: %d of %u edge cases differ from Hugging Face", g->names[ti], bad, g->nedge);
    tokenizer_output_free(&o);
}

/* ---- the tokenizers, through a plan and back ---- */

static int fam_tokenizer(const char *dir, tokdesc *desc, tokenizer *t) {
    diag d;
    diag_init(&d);
    int rc = hf_import_tokenizer_desc(dir, desc, &d);
    CHECK(rc == 0, "%s: %s", dir, d.text);
    if (rc) return -1;
    if ((rc = tokenizer_init(t, desc, &d))) {
        CHECK(0, "%s: tokenizer_init: %s", dir, d.text);
        tokdesc_free(desc);
    }
    return rc;
}

static void fam_run(const char *golden, const char *dir_fmt, int require) {
    fam_golden g;
    char err[512];
    if (fam_load(&g, golden, err, sizeof err)) {
        CHECK(!require, "%s", err);
        if (!require) printf("info %s: skipped (%s)\n", golden, err);
        fam_free(&g);
        return;
    }
    for (uint32_t ti = 0; ti < g.ntok; ti++) {
        char dir[256];
        snprintf(dir, sizeof dir, dir_fmt, check_build_dir(), g.names[ti]);
        tokdesc desc;
        tokenizer t;
        if (!require && access(dir, F_OK)) {
            printf("info %s: skipped (%s absent: tools/fetch_%s.sh %s fetches it)\n", g.names[ti], dir,
                   strstr(g.names[ti], "gpt2") ? "gpt2_bpe" : "mpnet", dir);
            continue;
        }
        if (fam_tokenizer(dir, &desc, &t)) continue;
        double t0 = (double)clock();
        fam_corpus(&g, ti, &t);
        fam_edges(&g, ti, &t);
        printf("info %s: %u corpus and %u edge cases in %.2f s\n", g.names[ti], g.ncorpus, g.nedge,
               ((double)clock() - t0) / CLOCKS_PER_SEC);
        tokenizer_free(&t);
        tokdesc_free(&desc);
    }
    fam_free(&g);
}

/* Every code point as "A" c "b", hashed per block of 256 (tokenizer-families-sweep.bin). */
static void fam_sweep_one(const char *name, const tokenizer *t, const unsigned char *want, uint32_t nblk) {
    tokenizer_output o;
    tokenizer_output_init(&o);
    int bad = 0;
    /* Under the sanitizers (about 15 times slower) every 8th block, each still whole. */
    uint32_t step = check_sanitized() ? 8 : 1;
    for (uint32_t b = 0; b < nblk; b += step) {
        sha256_ctx h;
        sha256_init(&h);
        for (uint32_t c = b * 256; c < b * 256 + 256; c++) {
            if (c >= 0xD800 && c <= 0xDFFF) continue;
            char text[8] = "A";
            size_t len = 1 + tok_utf8_encode(c, text + 1);
            text[len++] = 'b';
            diag d;
            diag_init(&d);
            if (tokenizer_encode(t, text, len, NULL, 0, -1, &o, &d) == 0)
                for (size_t i = 0; i < o.len; i++) {
                    if (o.special[i]) continue;
                    uint32_t v[3] = {(uint32_t)o.ids[i], (uint32_t)o.offsets[2 * i], (uint32_t)o.offsets[2 * i + 1]};
                    unsigned char q[12];
                    for (int j = 0; j < 12; j++) q[j] = (unsigned char)(v[j / 4] >> (8 * (j % 4)));
                    sha256_update(&h, q, 12);
                }
            sha256_update(&h, "\n", 1);
        }
        unsigned char dig[32];
        sha256_final(&h, dig);
        if (memcmp(dig, want + 8 * (size_t)b, 8) && bad++ < 5)
            fprintf(stderr, "  %s: the sweep differs in U+%04X..U+%04X\n", name, b * 256, b * 256 + 255);
    }
    CHECK(bad == 0, "%s: %d of %u blocks of code points differ from Hugging Face", name, bad, nblk);
    tokenizer_output_free(&o);
}

static void test_families_sweep(void) {
    unsigned char *img;
    size_t n;
    char err[512];
    if (bincursor_read_file("tests/golden/tokenizer-families-sweep.bin", &img, &n, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    bincursor c = bincursor_init(img, n, "tokenizer-families-sweep.bin", err, sizeof err);
    uint32_t ntok, nblk;
    if (bincursor_magic_version(&c, "BSW2", "a tokenizer sweep", 1) || bincursor_u32(&c, &ntok, "ntok") ||
        bincursor_u32(&c, &nblk, "nblocks") || nblk != 0x110000 / 256)
        CHECK(0, "%s", c.failed ? err : "unexpected block count");
    for (uint32_t k = 0; !c.failed && k < ntok; k++) {
        uint32_t l;
        const unsigned char *name, *hashes;
        char dir[256];
        if (bincursor_u32(&c, &l, "name") || !(name = bincursor_take(&c, l, "name")) ||
            !(hashes = bincursor_take(&c, (size_t)nblk * 8, "hashes")))
            break;
        snprintf(dir, sizeof dir, "tests/golden/%.*s", (int)l, (const char *)name);
        tokdesc desc;
        tokenizer t;
        if (fam_tokenizer(dir, &desc, &t)) continue;
        double t0 = (double)clock();
        fam_sweep_one(dir, &t, hashes, nblk);
        printf("info %s: %s code points in %.1f s\n", dir, check_sanitized() ? "every 8th block of" : "all 1,112,064",
               ((double)clock() - t0) / CLOCKS_PER_SEC);
        tokenizer_free(&t);
        tokdesc_free(&desc);
    }
    CHECK(!c.failed, "%s", err);
    free(img);
}

static void test_families_corpus(void) { fam_run("tests/golden/tokenizer-families.btk2", "tests/golden/%.0s%s", 1); }

static void test_mpnet_corpus(void) { fam_run("tests/golden/tokenizer-mpnet.btk2", "%s/hf/%s", 0); }

/* GPT-2's real merges as a RoBERTa tokenizer, when tools/fetch_gpt2_bpe.sh has fetched them. */
static void test_gpt2_corpus(void) { fam_run("tests/golden/tokenizer-gpt2.btk2", "%s/hf/%s", 0); }

/* Inputs the fuzzers found (tests/fuzz/fuzz_tokenizer.c): each once a crash or a sanitizer report. */
static void test_fuzz_regressions(void) {
    tokdesc desc;
    tokenizer t;
    if (fam_tokenizer("tests/golden/tok-xlmr", &desc, &t)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    diag d;
    diag_init(&d);
    /* Controls the Precompiled map removes leave Strip an empty text (a NULL buffer). */
    /* HF: [0, 2, 2, 2] (<s> </s> </s> </s>). */
    CHECK(tokenizer_encode(&t, "\x12", 1, "\x12\x12 ", 3, 8, &o, &d) == 0 && o.len == 4 && o.ids[0] == 0 && o.ids[3] == 2,
          "%s", d.text);
    tokenizer_output_free(&o);
    tokenizer_free(&t);
    tokdesc_free(&desc);
}

/* The same encodings, ids to offsets. */
static int fam_same(const bertc_encoding *a, const bertc_encoding *b) {
    int64_t n = bertc_encoding_len(a);
    return n == bertc_encoding_len(b) && !memcmp(bertc_encoding_ids(a), bertc_encoding_ids(b), (size_t)n * 4) &&
           !memcmp(bertc_encoding_type_ids(a), bertc_encoding_type_ids(b), (size_t)n * 4) &&
           !memcmp(bertc_encoding_offsets(a), bertc_encoding_offsets(b), (size_t)n * 16) &&
           !memcmp(bertc_encoding_sequence_ids(a), bertc_encoding_sequence_ids(b), (size_t)n * 4);
}

/* bertc_encode_batch on 1 and 4 threads against bertc_encode one by one; the first failure's index. */
static void test_batch_threads(void) {
    char path[256], err[1024];
    snprintf(path, sizeof path, "%s/plans/all-MiniLM-L6-v2-fp32.plan", check_build_dir());
    bertc_plan *pl = NULL;
    if (bertc_plan_open(path, &pl, err, sizeof err) != BERTC_STATUS_OK) {
        CHECK(0, "%s (make plans)", err);
        return;
    }
    fam_golden g;
    if (fam_corpus_texts(&g, err, sizeof err)) CHECK(0, "%s", err);
    size_t n = g.ncorpus < 1500 ? g.ncorpus : 1500;
    char **texts = calloc(n, sizeof *texts), **pairs = calloc(n, sizeof *pairs);
    bertc_encoding **one = calloc(n, sizeof *one), **b1 = calloc(n, sizeof *b1), **b4 = calloc(n, sizeof *b4);
    for (size_t i = 0; i < n; i++) {
        texts[i] = strndup(g.corpus[i].text, g.corpus[i].tlen);
        pairs[i] = g.corpus[i].pair ? strndup(g.corpus[i].pair, g.corpus[i].plen) : NULL;
        one[i] = bertc_encoding_create(), b1[i] = bertc_encoding_create(), b4[i] = bertc_encoding_create();
        CHECK(bertc_encode(pl, one[i], texts[i], pairs[i], 0, err, sizeof err) == BERTC_STATUS_OK, "text %zu: %s", i, err);
    }
    bertc_batch_options o1, o4;
    bertc_batch_options_init(&o1);
    bertc_batch_options_init(&o4);
    o1.threads = 1;
    o4.threads = 4;
    CHECK(bertc_encode_batch(pl, b1, (const char *const *)texts, (const char *const *)pairs, n, &o1, err, sizeof err) ==
              BERTC_STATUS_OK, "%s", err);
    CHECK(bertc_encode_batch(pl, b4, (const char *const *)texts, (const char *const *)pairs, n, &o4, err, sizeof err) ==
              BERTC_STATUS_OK, "%s", err);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += !fam_same(one[i], b1[i]) || !fam_same(one[i], b4[i]);
    CHECK(bad == 0, "%d of %zu batched encodings differ from bertc_encode's", bad, n);
    /* Invalid UTF-8 at 700 and 37: the error names 37, and only those two are empty. */
    free(texts[700]);
    free(texts[37]);
    texts[700] = strdup("ok \xff");
    texts[37] = strdup("\xc3(");
    bertc_status st = bertc_encode_batch(pl, b4, (const char *const *)texts, (const char *const *)pairs, n, &o4, err, sizeof err);
    CHECK(st == BERTC_STATUS_BAD_REQUEST && !strncmp(err, "text 37: ", 9), "status %d, '%s'", (int)st, err);
    CHECK(bertc_encoding_len(b4[37]) == 0 && bertc_encoding_len(b4[700]) == 0 && fam_same(one[38], b4[38]),
          "failed texts are empty, the others complete");
    for (size_t i = 0; i < n; i++) {
        free(texts[i]);
        free(pairs[i]);
        bertc_encoding_free(one[i]);
        bertc_encoding_free(b1[i]);
        bertc_encoding_free(b4[i]);
    }
    free(texts), free(pairs), free(one), free(b1), free(b4);
    fam_free(&g);
    bertc_plan_close(pl);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_families_corpus);
    CHECK_CASE(test_mpnet_corpus);
    CHECK_CASE(test_gpt2_corpus);
    CHECK_CASE(test_families_sweep);
    CHECK_CASE(test_batch_threads);
    CHECK_CASE(test_fuzz_regressions);
    return check_summary();
}
