/*
 * test_sentences_golden — the sentence-embedding golden file and its reader.
 *
 * tests/golden/all-MiniLM-L6-v2-sentences.bsen (tools/make_sentence_goldens.py)
 * holds, per sentence, sentence-transformers' token ids, mean-pooled vector
 * and normalised embedding for all-MiniLM-L6-v2.  Before bertc's own
 * sentence embeddings are compared with it, this test makes sure the file
 * means what it says: it loads, the header names the checkpoint in
 * build/hf/ (SHA-256 of model.safetensors, computed here), every embedding
 * has unit norm within 1e-5, L2-normalising mean_pooled gives the embedding
 * within 1e-6 per component, the ids are [CLS] ... [SEP] within
 * max_seq_length and at least one sentence was truncated to exactly
 * max_seq_length; and bertc's own tokenizer (runtime/tokenizer.h, the
 * MiniLM vocabulary, truncation to max_seq_length, the text unstripped)
 * gives exactly the recorded ids.  And the reader is safe: every prefix of the first few
 * hundred bytes, of the first two cases and around every case boundary,
 * a seeded sample of other prefixes, plus corrupted fields, are rejected
 * with a message (under ASan an over-read would abort).
 */
#include <math.h>

#include "check.h"
#include "diag.h"
#include "golden.h"
#include "sha256.h"
#include "tokenizer.h"

#define SENT_PATH "tests/golden/all-MiniLM-L6-v2-sentences.bsen"
#define SENT_MODEL "all-MiniLM-L6-v2"
#define SENT_CLS 101
#define SENT_SEP 102
#define SENT_NORM_TOL 1e-5
#define SENT_RENORM_TOL 1e-6

static int header_int(const golden_file *s, const char *key, long *out) {
    char v[64], *end;
    if (golden_header_value(s, key, v, sizeof v)) return -1;
    *out = strtol(v, &end, 10);
    return end != v && *end == '\0' ? 0 : -1;
}

static void test_load_and_header(void) {
    golden_file s;
    char err[512], v[128];
    int rc = golden_load(&s, SENT_PATH, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", SENT_PATH, err);
    if (rc) return;
    CHECK(s.count >= 20, "only %d cases", s.count);
    CHECK(golden_header_value(&s, "format", v, sizeof v) == 0 && strcmp(v, "BSEN 1") == 0, "format line");
    CHECK(golden_header_value(&s, "model", v, sizeof v) == 0 && strcmp(v, SENT_MODEL) == 0, "model line");
    long max_seq = 0, dim = 0;
    CHECK(header_int(&s, "max_seq_length", &max_seq) == 0 && max_seq == 256, "max_seq_length %ld", max_seq);
    CHECK(header_int(&s, "dim", &dim) == 0 && dim == 384, "dim %ld", dim);
    int truncated = 0, one_word = 0;
    for (int i = 0; i < s.count; i++) {
        const sentences_case *k = &s.sentences[i];
        CHECK(k->dim == dim, "case #%d dim %d", i, k->dim);
        CHECK(k->n_ids >= 2 && k->n_ids <= max_seq, "case #%d: %d ids", i, k->n_ids);
        if (k->n_ids < 2) continue;
        CHECK(k->ids[0] == SENT_CLS && k->ids[k->n_ids - 1] == SENT_SEP, "case #%d: not [CLS] ... [SEP]", i);
        for (int j = 1; j < k->n_ids - 1; j++)
            CHECK(k->ids[j] != SENT_CLS && k->ids[j] != SENT_SEP && k->ids[j] < 30522, "case #%d id[%d] = %d", i, j,
                  (int)k->ids[j]);
        truncated += k->n_ids == max_seq;
        one_word += k->n_ids == 3;
        CHECK(strlen(k->text) == k->text_len, "case #%d text length", i);
    }
    CHECK(truncated >= 1, "no case truncated to max_seq_length");
    CHECK(one_word >= 1, "no one-word case");
    golden_free(&s);
    golden_free(&s); /* safe twice */
}

static void test_unit_norm_and_renormalise(void) {
    golden_file s;
    char err[512];
    int rc = golden_load(&s, SENT_PATH, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", SENT_PATH, err);
    if (rc) return;
    double worst_norm = 0, worst_renorm = 0;
    for (int i = 0; i < s.count; i++) {
        const sentences_case *k = &s.sentences[i];
        double n2 = 0, p2 = 0;
        for (int j = 0; j < k->dim; j++) {
            n2 += (double)k->embedding[j] * k->embedding[j];
            p2 += (double)k->mean_pooled[j] * k->mean_pooled[j];
        }
        double norm = sqrt(n2), pnorm = sqrt(p2);
        CHECK(fabs(norm - 1.0) <= SENT_NORM_TOL, "case #%d: |embedding| = %.9f", i, norm);
        CHECK(pnorm > 0.1, "case #%d: |mean_pooled| = %g", i, pnorm);
        double d = 0;
        for (int j = 0; j < k->dim; j++) {
            double e = fabs((double)k->mean_pooled[j] / pnorm - (double)k->embedding[j]);
            if (!(e <= d)) d = e; /* NaN propagates */
        }
        CHECK(d <= SENT_RENORM_TOL, "case #%d: normalise(mean_pooled) vs embedding max diff %.3g", i, d);
        if (fabs(norm - 1.0) > worst_norm) worst_norm = fabs(norm - 1.0);
        if (!(d <= worst_renorm)) worst_renorm = d;
    }
    printf("  %d cases: max ||e|| - 1| = %.2e, max |normalise(mean_pooled) - e| = %.2e\n", s.count, worst_norm,
           worst_renorm);
    golden_free(&s);
}

static void test_model_sha256(void) {
    char hex[65], want[128], err[512], path[512];
    /* Known answers first, so a broken SHA-256 is not mistaken for a wrong model. */
    sha256_hex("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "sha256('') %s",
          hex);
    sha256_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "sha256(abc) %s",
          hex);
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m448, strlen(m448), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0, "sha256(448) %s",
          hex);
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha256_hex(million, sizeof million, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "sha256(1M a) %s",
          hex);

    golden_file s;
    int rc = golden_load(&s, SENT_PATH, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", SENT_PATH, err);
    if (rc) return;
    CHECK(golden_header_value(&s, "model_sha256", want, sizeof want) == 0 && strlen(want) == 64,
          "no model_sha256 in the header");
    snprintf(path, sizeof path, "%s/hf/%s/model.safetensors", check_build_dir(), SENT_MODEL);
    rc = golden_sha256_file(path, hex, err, sizeof err);
    CHECK(rc == 0, "%s (make fixtures builds it)", err);
    if (rc == 0) CHECK(strcmp(hex, want) == 0, "%s has sha256 %s, the golden was made from %s", path, hex, want);
    CHECK(golden_sha256_file("/nonexistent/bertc/model.safetensors", hex, err, sizeof err) == -1 && err[0],
          "missing file accepted");
    golden_free(&s);
}

/* bertc's tokenizer on the unstripped text, capped at max_seq_length, must
 * give the ids sentence-transformers used (it strips first; whitespace is
 * dropped by the tokenizer anyway). */
static void test_bertc_tokenizer_ids(void) {
    golden_file s;
    char err[512], vpath[512];
    int rc = golden_load(&s, SENT_PATH, err, sizeof err);
    CHECK(rc == 0, "cannot load %s: %s", SENT_PATH, err);
    if (rc) return;
    long max_seq = 0;
    CHECK(header_int(&s, "max_seq_length", &max_seq) == 0, "no max_seq_length");
    snprintf(vpath, sizeof vpath, "%s/hf/%s/vocab.txt", check_build_dir(), SENT_MODEL);
    size_t vlen = 0;
    char *vocab = check_read_file(vpath, &vlen);
    CHECK(vocab != NULL, "cannot read %s (make fixtures builds it)", vpath);
    if (!vocab || max_seq <= 0) {
        free(vocab);
        golden_free(&s);
        return;
    }
    tokdesc cfg;   /* all-MiniLM-L6-v2's tokenizer_config.json: do_lower_case true */
    tokenizer t;
    diag d;
    diag_init(&d);
    rc = tokdesc_from_vocab_txt(&cfg, vocab, vlen, 1, -1, 1, NULL, &d);
    cfg.model_max_length = 512;
    if (rc == 0 && (rc = tokenizer_init(&t, &cfg, &d))) tokdesc_free(&cfg);
    CHECK(rc == 0, "tokenizer_init: %s", d.text);
    if (rc == 0) {
        tokenizer_output o;
        tokenizer_output_init(&o);
        for (int i = 0; i < s.count; i++) {
            const sentences_case *k = &s.sentences[i];
            diag_init(&d);
            if (tokenizer_encode(&t, k->text, k->text_len, NULL, 0, max_seq, &o, &d)) {
                CHECK(0, "case #%d: tokenizer_encode: %s", i, d.text);
                continue;
            }
            int same = o.len == (size_t)k->n_ids;
            for (size_t j = 0; same && j < o.len; j++) same = o.ids[j] == k->ids[j];
            CHECK(same, "case #%d (%.40s): bertc gives %zu ids, sentence-transformers %d%s", i, k->text, o.len,
                  k->n_ids, o.len == (size_t)k->n_ids ? " (values differ)" : "");
        }
        tokenizer_output_free(&o);
        tokenizer_free(&t);
        tokdesc_free(&cfg);
    }
    free(vocab);
    golden_free(&s);
}

/* Loads a damaged image; it must fail with a message and leave *s empty. */
static void expect_reject(const void *data, size_t len, const char *what) {
    golden_file s;
    char err[512];
    memset(err, 'x', sizeof err);
    int rc = golden_load_memory(&s, data, len, what, err, sizeof err);
    CHECK(rc == -1, "%s (%zu bytes): accepted", what, len);
    CHECK(memchr(err, '\0', sizeof err) && err[0] != '\0', "%s: no message", what);
    CHECK(s.count == 0 && s.sentences == NULL && s.cases == NULL && s.header == NULL, "%s: struct not left empty",
          what);
    if (rc == 0) golden_free(&s);
}

static void test_truncated_and_corrupt(void) {
    size_t len = 0;
    char *data = check_read_file(SENT_PATH, &len);
    CHECK(data != NULL, "cannot read %s", SENT_PATH);
    if (!data) return;
    char what[64], err[512];
    golden_file s;
    int rc = golden_load_memory(&s, data, len, "whole", err, sizeof err);
    CHECK(rc == 0, "whole image: %s", err);
    if (rc) {
        free(data);
        return;
    }
    /* Where each case starts, from the parsed file (layout in support/golden.c). */
    uint32_t hlen;
    memcpy(&hlen, data + 8, 4); /* the file is little-endian; so are the test machines */
    size_t *starts = calloc((size_t)s.count + 1, sizeof *starts);
    CHECK(starts != NULL, "out of memory");
    if (!starts) {
        golden_free(&s);
        free(data);
        return;
    }
    starts[0] = 16 + (size_t)hlen;
    for (int i = 0; i < s.count; i++)
        starts[i + 1] = starts[i] + 12 + s.sentences[i].text_len + 4 * (size_t)s.sentences[i].n_ids +
                        8 * (size_t)s.sentences[i].dim;
    CHECK(starts[s.count] == len, "layout: cases end at %zu, file has %zu bytes", starts[s.count], len);
    /* Truncated copies: every prefix of the first 600 bytes (magic, version,
     * header), every prefix from just before the first case to the start of
     * the third, the 16 bytes either side of every case boundary, a seeded
     * sample of the rest (1 in 200) and the last 16.  Each prefix is a fresh
     * allocation of exactly that size so ASan sees any over-read. */
    size_t tried = 0;
    for (size_t n = 0; n < len; n++) {
        int take = n < 600 || n + 16 >= len || check_rng_range(0, 199) == 0;
        if (n + 16 >= starts[0] && s.count > 2 && n < starts[2]) take = 1;
        for (int i = 0; !take && i <= s.count; i++) take = n + 16 >= starts[i] && n <= starts[i] + 16;
        if (!take) continue;
        char *copy = malloc(n ? n : 1);
        if (!copy) break;
        memcpy(copy, data, n);
        snprintf(what, sizeof what, "prefix %zu", n);
        expect_reject(copy, n, what);
        free(copy);
        tried++;
    }
    free(starts);
    golden_free(&s);
    /* One prefix through the file path too. */
    const char *p = check_write_temp("sentences-truncated.bsen", data, len / 2);
    CHECK(p != NULL, "cannot write a temp file");
    if (p) {
        rc = golden_load(&s, p, err, sizeof err);
        CHECK(rc == -1 && strstr(err, "truncated"), "file truncated to %zu bytes: rc %d, '%s'", len / 2, rc, err);
        if (rc == 0) golden_free(&s);
        remove(p);
    }
    /* A byte too many. */
    char *longer = malloc(len + 1);
    if (longer) {
        memcpy(longer, data, len);
        longer[len] = 0;
        expect_reject(longer, len + 1, "one extra byte");
        free(longer);
    }
    /* Corrupt fields (offsets from the layout: magic 0, version 4, header_len 8). */
    size_t ncases_off = 12 + hlen, case0 = ncases_off + 4;
    struct {
        size_t off;
        uint32_t value;
        const char *what;
    } bad[] = {
        {0, 0x4e455342u ^ 1u, "magic"},
        {4, 2, "version 2"},
        {8, 0xffffffffu, "header_len huge"},
        {ncases_off, 0xffffffffu, "ncases huge"},
        {ncases_off, 1000, "ncases too many"},
        {ncases_off, 1, "ncases too few"},
        {case0, 0x7fffffffu, "text_len huge"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *copy = malloc(len);
        if (!copy) break;
        memcpy(copy, data, len);
        unsigned char b[4] = {(unsigned char)bad[i].value, (unsigned char)(bad[i].value >> 8),
                              (unsigned char)(bad[i].value >> 16), (unsigned char)(bad[i].value >> 24)};
        memcpy(copy + bad[i].off, b, 4);
        expect_reject(copy, len, bad[i].what);
        free(copy);
    }
    /* Fields inside the first case: n_ids 0, dim 0, dim mismatched in case #1,
     * a negative id, a NUL and invalid UTF-8 in the text. */
    uint32_t tlen;
    memcpy(&tlen, data + case0, 4);
    size_t nids_off = case0 + 4 + tlen;
    uint32_t nids;
    memcpy(&nids, data + nids_off, 4);
    size_t dim_off = nids_off + 4 + 4 * (size_t)nids;
    uint32_t dim;
    memcpy(&dim, data + dim_off, 4);
    size_t case1 = dim_off + 4 + 8 * (size_t)dim;
    CHECK(case1 < len, "layout arithmetic");
    if (case1 < len && tlen > 0) {
        struct {
            size_t off;
            uint32_t value;
            int bytes;
            const char *what;
        } bad2[] = {
            {nids_off, 0, 4, "n_ids 0"},
            {nids_off + 4, 0xffffffffu, 4, "negative id"},
            {dim_off, 0, 4, "dim 0"},
            {dim_off, 0x7fffffffu, 4, "dim huge"},
            {case0 + 4, 0, 1, "NUL in text"},
            {case0 + 4, 0xff, 1, "invalid UTF-8 in text"},
            {12, 0xc0, 1, "invalid UTF-8 in header"},
        };
        for (size_t i = 0; i < sizeof bad2 / sizeof bad2[0]; i++) {
            char *copy = malloc(len);
            if (!copy) break;
            memcpy(copy, data, len);
            for (int j = 0; j < bad2[i].bytes; j++) copy[bad2[i].off + (size_t)j] = (char)(bad2[i].value >> (8 * j));
            expect_reject(copy, len, bad2[i].what);
            free(copy);
        }
        /* case #1 with another dim: shorten nothing, just change the field. */
        uint32_t tlen1;
        memcpy(&tlen1, data + case1, 4);
        size_t nids1_off = case1 + 4 + tlen1;
        uint32_t nids1;
        memcpy(&nids1, data + nids1_off, 4);
        size_t dim1_off = nids1_off + 4 + 4 * (size_t)nids1;
        if (dim1_off + 4 <= len) {
            char *copy = malloc(len);
            if (copy) {
                memcpy(copy, data, len);
                copy[dim1_off] = (char)(dim - 1);
                expect_reject(copy, len, "dim differs in case #1");
                free(copy);
            }
        }
    }
    /* Edge inputs of the API. */
    expect_reject(NULL, 0, "NULL data");
    CHECK(golden_load(&s, "/nonexistent/bertc.bsen", err, sizeof err) == -1 && err[0], "missing file accepted");
    CHECK(golden_load_memory(&s, data, 3, "no err buffer", NULL, 0) == -1, "no-err-buffer call accepted");
    printf("  %zu truncated prefixes of %zu bytes rejected\n", tried, len);
    free(data);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_load_and_header);
    CHECK_CASE(test_unit_norm_and_renormalise);
    CHECK_CASE(test_model_sha256);
    CHECK_CASE(test_bertc_tokenizer_ids);
    CHECK_CASE(test_truncated_and_corrupt);
    return check_summary();
}
