/*
 * test_tokenizer — the C WordPiece tokenizer against Hugging Face's
 * BertTokenizerFast, id for id.
 *
 * tools/make_tokenizer_goldens.py tokenized a seeded corpus (accents, CJK,
 * emoji, Arabic/Devanagari/Thai, punctuation runs, control and zero-width
 * characters, words over 100 characters, whitespace mixes, numbers, URLs,
 * literal special tokens, unassigned code points, pairs, truncation) with
 * two vocabularies — all-MiniLM-L6-v2's uncased one (from `make fixtures`)
 * and a small cased one trained by the script and committed — and pushed
 * every code point through HF's normaliser and pre-tokenizer under four
 * settings (hashes per 256-code-point block).  Every case must match
 * exactly; the first mismatches are printed with their tokens.
 *
 * The unit cases pin down what HF cannot tell us: invalid UTF-8 is an
 * error naming the byte offset, never an over-read (random bytes under the
 * sanitizers), and a vocabulary without [UNK] is refused.  Throughput on
 * the corpus is printed for information, never asserted.
 */
#include <time.h>
#include <utf8proc.h>

#include "bincursor.h"
#include "check.h"
#include "tokenizer.h"

typedef struct tok_golden_case {
    int32_t max_len;
    int has_pair;
    const char *a, *b;
    uint32_t la, lb;
    uint32_t n[2];
    const uint8_t *ids[2];     /* u16 little-endian */
    const uint8_t *types[2];
} tok_golden_case;

typedef struct tok_golden {
    char *buf;
    size_t size;
    uint32_t nvocab, ncases;
    char names[2][32];
    int8_t settings[2][3];
    tok_golden_case *cases;
} tok_golden;

static void tok_golden_free(tok_golden *g) {
    free(g->buf);
    free(g->cases);
    memset(g, 0, sizeof *g);
}

/* One case: max_len, has_pair, the texts, then per vocabulary n, u16 ids[n], u8 types[n]. */
static int tok_golden_case_read(bincursor *c, tok_golden_case *k, uint32_t i) {
    const unsigned char *q = bincursor_take(c, 9, "case #%u", i);
    if (!q) return -1;
    k->max_len = (int32_t)bincursor_le32(q);
    k->has_pair = q[4];
    k->la = bincursor_le32(q + 5);
    if (!(k->a = (const char *)bincursor_take(c, k->la, "case #%u text", i))) return -1;
    if (k->has_pair && (bincursor_u32(c, &k->lb, "case #%u pair length", i) ||
                        !(k->b = (const char *)bincursor_take(c, k->lb, "case #%u pair", i))))
        return -1;
    for (int v = 0; v < 2; v++) {
        size_t bytes;
        if (bincursor_u32(c, &k->n[v], "case #%u vocabulary %d count", i, v) ||
            bincursor_mul_size(k->n[v], 3, 1, &bytes) ||
            !(q = bincursor_take(c, bytes, "case #%u vocabulary %d ids", i, v)))
            return -1;
        k->ids[v] = q;
        k->types[v] = q + 2 * (size_t)k->n[v];
    }
    return 0;
}

/* The body of tests/golden/tokenizer-corpus.btok after its frame (format: docs/testing.md). */
static int tok_golden_parse(tok_golden *g, bincursor *c) {
    char *header;
    if (bincursor_open(c, "BTOK", "a tokenizer golden", 1, &header)) return -1;
    free(header);
    if (bincursor_u32(c, &g->nvocab, "vocabulary count")) return -1;
    if (g->nvocab != 2) {
        bincursor_error(c, "expected 2 vocabularies, found %u", g->nvocab);
        return -1;
    }
    if (bincursor_count(c, &g->ncases, 17, "case count")) return -1;
    for (uint32_t v = 0; v < 2; v++) {
        uint32_t nl;
        const unsigned char *q;
        if (bincursor_u32(c, &nl, "vocabulary %u name length", v) ||
            !(q = bincursor_take(c, (size_t)nl + 3, "vocabulary %u", v)))
            return -1;
        snprintf(g->names[v], sizeof g->names[v], "%.*s", (int)nl, (const char *)q);
        memcpy(g->settings[v], q + nl, 3);
    }
    if (!(g->cases = calloc(g->ncases ? g->ncases : 1, sizeof *g->cases))) return -1;
    for (uint32_t i = 0; i < g->ncases; i++)
        if (tok_golden_case_read(c, &g->cases[i], i)) return -1;
    if (c->off == c->len) return 0;
    bincursor_error(c, "%zu trailing bytes", c->len - c->off);
    return -1;
}

/* Reads the corpus golden with the golden files' reader; 0, or -1 with a CHECK failure. */
static int tok_golden_load(tok_golden *g, const char *path) {
    memset(g, 0, sizeof *g);
    char err[512];
    unsigned char *buf;
    if (bincursor_read_file(path, &buf, &g->size, err, sizeof err)) {
        CHECK(0, "%s", err);
        return -1;
    }
    g->buf = (char *)buf;
    bincursor c = bincursor_init(buf, g->size, path, err, sizeof err);
    int rc = tok_golden_parse(g, &c);
    CHECK(rc == 0, "%s", err);
    return rc;
}

/* A vocab.txt and settings, as a plan of today's WordPiece directories describes them. */
typedef struct tok_cfg {
    const char *vocab;
    size_t len;              /* 0: strlen(vocab) */
    int lower, strip, chinese;
} tok_cfg;

static tok_cfg tok_config(const char *vocab, size_t len, int lower, int strip, int chinese) {
    tok_cfg c = {vocab, len, lower, strip, chinese};
    return c;
}

/* The tokenizer of c: its description made as the compiler makes it (tokdesc_from_vocab_txt),
 * owned by the tokenizer until tok_free. */
static int tok_init(tokenizer *t, const tok_cfg *c, diag *d) {
    memset(t, 0, sizeof *t);
    tokdesc *desc = malloc(sizeof *desc);
    if (!desc) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    if (tokdesc_from_vocab_txt(desc, c->vocab, c->len ? c->len : strlen(c->vocab), c->lower, c->strip, c->chinese,
                               NULL, d)) {
        free(desc);
        return -1;
    }
    desc->model_max_length = 512;
    if (tokenizer_init(t, desc, d)) {
        tokdesc_free(desc);
        free(desc);
        return -1;
    }
    return 0;
}

static void tok_free(tokenizer *t) {
    tokdesc *desc = (tokdesc *)t->desc;
    tokenizer_free(t);
    if (desc) tokdesc_free(desc);
    free(desc);
}

static void tok_print_text(const char *label, const char *s, size_t n) {
    fprintf(stderr, "    %s (%zu bytes): \"", label, n);
    for (size_t i = 0; i < n && i < 160; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 32 || ch == 127 || ch == '"' || ch == '\\') fprintf(stderr, "\\x%02x", ch);
        else fputc(ch, stderr);
    }
    fprintf(stderr, "%s\"\n", n > 160 ? "..." : "");
}

static void tok_print_ids(const tokenizer *t, const char *label, const int32_t *ids, const uint8_t *raw16,
                          size_t n) {
    fprintf(stderr, "    %s (%zu):", label, n);
    for (size_t i = 0; i < n && i < 40; i++) {
        int32_t id = ids ? ids[i] : (int32_t)(raw16[2 * i] | raw16[2 * i + 1] << 8);
        fprintf(stderr, " %s", tokenizer_id_to_token(t, id));
    }
    fprintf(stderr, "%s\n", n > 40 ? " ..." : "");
}

static double tok_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run the whole corpus through vocabulary v, then time it. */
static void tok_check_corpus(int v, const char *vocab_path) {
    tok_golden g;
    if (tok_golden_load(&g, "tests/golden/tokenizer-corpus.btok")) {
        tok_golden_free(&g);
        return;
    }
    size_t vlen;
    char *vocab = check_read_file(vocab_path, &vlen);
    CHECK(vocab, "cannot read the %s vocabulary %s (run `make fixtures`)", g.names[v], vocab_path);
    if (!vocab) {
        tok_golden_free(&g);
        return;
    }
    tok_cfg cfg = tok_config(vocab, vlen, g.settings[v][0], g.settings[v][1], g.settings[v][2]);
    tokenizer t;
    diag d;
    diag_init(&d);
    int rc = tok_init(&t, &cfg, &d);
    CHECK(rc == 0, "tokenizer_init(%s): %s", vocab_path, d.text);
    if (rc) {
        free(vocab);
        tok_golden_free(&g);
        return;
    }
    tokenizer_output o;
    tokenizer_output_init(&o);
    uint32_t bad = 0, ran = 0;
    size_t bytes = 0;
    for (uint32_t i = 0; i < g.ncases; i++) {
        const tok_golden_case *c = &g.cases[i];
        /* The corpus's -1 is HF's truncation=False. */
        rc = tokenizer_encode(&t, c->a, c->la, c->has_pair ? c->b : NULL, c->lb, c->max_len, &o, &d);
        ran++;
        bytes += c->la + c->lb;
        int same = rc == 0 && o.len == c->n[v];
        for (size_t k = 0; same && k < o.len; k++) {
            int32_t want = c->ids[v][2 * k] | c->ids[v][2 * k + 1] << 8;
            same = o.ids[k] == want && o.type_ids[k] == c->types[v][k] && o.tokens[k] == t.id_text[o.ids[k]];
        }
        if (!same) {
            if (bad < 5) {
                fprintf(stderr, "  %s case %u (max_len %d, %s):\n", g.names[v], i, (int)c->max_len,
                        c->has_pair ? "pair" : "single");
                tok_print_text("text", c->a, c->la);
                if (c->has_pair) tok_print_text("pair", c->b, c->lb);
                if (rc) fprintf(stderr, "    error: %s\n", d.text);
                else tok_print_ids(&t, "got ", o.ids, NULL, o.len);
                tok_print_ids(&t, "want", NULL, c->ids[v], c->n[v]);
                if (!rc && o.len == c->n[v]) {
                    fprintf(stderr, "    types got/want:");
                    for (size_t k = 0; k < o.len && k < 40; k++) fprintf(stderr, " %d/%d", o.type_ids[k], c->types[v][k]);
                    fprintf(stderr, "\n");
                }
            }
            bad++;
        }
    }
    CHECK(bad == 0, "%s: %u of %u corpus cases differ from BertTokenizerFast (first ones above)", g.names[v], bad, ran);
    CHECK(ran > 4000, "%s: only %u cases", g.names[v], ran);

    /* Throughput: the whole corpus, several rounds, tokens only (informational). */
    double t0 = tok_now(), t1;
    int rounds = 0;
    do {
        for (uint32_t i = 0; i < g.ncases; i++) {
            const tok_golden_case *c = &g.cases[i];
            tokenizer_encode(&t, c->a, c->la, c->has_pair ? c->b : NULL, c->lb, c->max_len, &o, &d);
        }
        rounds++;
        t1 = tok_now();
    } while (t1 - t0 < 0.3);
    printf("info tokenizer %s: %u cases, %.1f MB/s (%zu bytes x %d rounds in %.3f s)\n", g.names[v], ran,
           (double)bytes * rounds / (t1 - t0) / 1e6, bytes, rounds, t1 - t0);

    tokenizer_output_free(&o);
    tok_free(&t);
    free(vocab);
    tok_golden_free(&g);
}

static void test_corpus_uncased(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/hf/all-MiniLM-L6-v2/vocab.txt", check_build_dir());
    tok_check_corpus(0, path);
}

static void test_corpus_cased(void) { tok_check_corpus(1, "tests/golden/tokenizer-cased-vocab.txt"); }

/* Every code point, four settings, against HF's normaliser + pre-tokenizer (block hashes). */
static void test_codepoint_sweep(void) {
    static const char path[] = "tests/golden/tokenizer-sweep.bin";
    char err[512];
    unsigned char *buf;
    size_t n;
    if (bincursor_read_file(path, &buf, &n, err, sizeof err)) {
        CHECK(0, "%s", err);
        return;
    }
    bincursor c = bincursor_init(buf, n, path, err, sizeof err);
    uint32_t nconf = 0, nblk = 0;
    if (!bincursor_magic_version(&c, "BSWP", "a code-point sweep", 1) && !bincursor_u32(&c, &nconf, "config count") &&
        !bincursor_u32(&c, &nblk, "block count") && nblk == 0x110000 / 256 && c.len - c.off != (size_t)nconf * (3 + 8 * (size_t)nblk))
        bincursor_error(&c, "%u configs of %u blocks do not fill the %zu bytes that follow", nconf, nblk, c.len - c.off);
    CHECK(!c.failed && nblk == 0x110000 / 256, "tokenizer-sweep.bin is malformed (%zu bytes): %s", n, err);
    if (c.failed || nblk != 0x110000 / 256) {
        free(buf);
        return;
    }
    char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    tokenizer_output o;
    tokenizer_output_init(&o);
    for (uint32_t k = 0; k < nconf; k++) {
        const unsigned char *p = buf + 16 + (size_t)k * (3 + 8 * (size_t)nblk);
        int8_t s[3];
        memcpy(s, p, 3);
        tok_cfg cfg = tok_config(vocab, strlen(vocab), s[0], s[1], s[2]);
        tokenizer t;
        diag d;
        diag_init(&d);
        if (tok_init(&t, &cfg, &d)) {
            CHECK(0, "tokenizer_init: %s", d.text);
            continue;
        }
        int bad = 0;
        for (uint32_t b = 0; b < nblk; b++) {
            uint64_t h = 0xCBF29CE484222325ull, want;
            memcpy(&want, p + 3 + 8 * (size_t)b, 8);
            for (uint32_t c = b * 256; c < b * 256 + 256; c++) {
                if (c >= 0xD800 && c <= 0xDFFF) continue;
                char text[8] = "A";
                size_t len = 1;
                if (c < 0x80) text[len++] = (char)c;
                else if (c < 0x800) text[len++] = (char)(0xC0 | c >> 6), text[len++] = (char)(0x80 | (c & 63));
                else if (c < 0x10000)
                    text[len++] = (char)(0xE0 | c >> 12), text[len++] = (char)(0x80 | (c >> 6 & 63)),
                    text[len++] = (char)(0x80 | (c & 63));
                else
                    text[len++] = (char)(0xF0 | c >> 18), text[len++] = (char)(0x80 | (c >> 12 & 63)),
                    text[len++] = (char)(0x80 | (c >> 6 & 63)), text[len++] = (char)(0x80 | (c & 63));
                text[len++] = 'b';
                if (tokenizer_split_words(&t, text, len, &o, &d)) {
                    CHECK(0, "U+%04X: %s", c, d.text);
                    break;
                }
                for (size_t i = 0; i <= o.words_len; i++) {
                    uint8_t x = i < o.words_len ? (uint8_t)o.words[i] : '\n';
                    h = (h ^ x) * 0x100000001B3ull;
                }
            }
            if (h != want) {
                if (bad++ < 5)
                    CHECK(0, "lower %d strip %d chinese %d: code points U+%04X..U+%04X differ from HF "
                             "(find which with tools/make_tokenizer_goldens.py's sweep())",
                          s[0], s[1], s[2], b * 256, b * 256 + 255);
            }
        }
        tok_free(&t);
    }
    tokenizer_output_free(&o);
    free(buf);
}

/* What the unit cases start from: a small uncased tokenizer, an output
 * and a diag. */
typedef struct tok_fx {
    tokenizer t;
    tokenizer_output o;
    diag d;
} tok_fx;

static int tok_fx_up(tok_fx *f) {
    static char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\na\nb\n!\n##b\n";
    tok_cfg cfg = tok_config(vocab, strlen(vocab), 1, -1, -1);
    diag_init(&f->d);
    int rc = tok_init(&f->t, &cfg, &f->d);
    CHECK(rc == 0, "tokenizer_init: %s", f->d.text);
    tokenizer_output_init(&f->o);
    return rc;
}

static void tok_fx_down(tok_fx *f) {
    tokenizer_output_free(&f->o);
    tok_free(&f->t);
}

static void test_empty_and_specials(void) {
    tok_fx f;
    if (tok_fx_up(&f)) return;
    CHECK(tokenizer_encode(&f.t, "", 0, NULL, 0, -1, &f.o, &f.d) == 0, "%s", f.d.text);
    CHECK(f.o.len == 2 && f.o.ids[0] == 2 && f.o.ids[1] == 3 && !strcmp(f.o.tokens[0], "[CLS]") && !strcmp(f.o.tokens[1], "[SEP]"),
          "empty text must give [CLS] [SEP], got %zu tokens", f.o.len);
    CHECK(tokenizer_encode(&f.t, NULL, 5, NULL, 0, 0, &f.o, &f.d) == 0 && f.o.len == 2, "NULL text is empty text");
    CHECK(tokenizer_encode(&f.t, "Hello worlds!", 13, "b [MASK]x", 9, -1, &f.o, &f.d) == 0, "%s", f.d.text);
    int32_t want[] = {2, 5, 6, 7, 10, 3, 9, 4, 1, 3}, wty[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    int ok = f.o.len == 10;
    for (size_t i = 0; ok && i < 10; i++) ok = f.o.ids[i] == want[i] && f.o.type_ids[i] == wty[i];
    CHECK(ok, "pair encoding wrong (%zu tokens)", f.o.len);
    CHECK(tokenizer_token_to_id(&f.t, "##b", 3) == 11 && tokenizer_token_to_id(&f.t, "##c", 3) == -1, "token_to_id");
    tok_fx_down(&f);
}

static void test_truncation(void) {
    tok_fx f;
    if (tok_fx_up(&f)) return;
    const char *a = "a a a a a a a a", *b = "b b b";   /* 8 and 3 tokens */
    /* longest_first (tokenizers' rule): budget 7 -> the shorter keeps 3, the longer 4. */
    CHECK(tokenizer_encode(&f.t, a, strlen(a), b, strlen(b), 10, &f.o, &f.d) == 0 && f.o.len == 10 && f.o.len_a == 4 &&
              f.o.len_b == 3 && f.o.truncated && f.o.full_a == 8,
          "pair truncation: %zu tokens, %zu + %zu", f.o.len, f.o.len_a, f.o.len_b);
    /* Both long: budget 5 -> shorter 2, longer 3. */
    CHECK(tokenizer_encode(&f.t, a, strlen(a), "b b b b b b", 11, 8, &f.o, &f.d) == 0 && f.o.len_a == 3 && f.o.len_b == 2,
          "both truncated: %zu + %zu", f.o.len_a, f.o.len_b);
    CHECK(tokenizer_encode(&f.t, a, strlen(a), NULL, 0, 5, &f.o, &f.d) == 0 && f.o.len == 5 && f.o.ids[4] == 3,
          "single truncation to 5: %zu", f.o.len);
    CHECK(tokenizer_encode(&f.t, a, strlen(a), NULL, 0, 2, &f.o, &f.d) == 0 && f.o.len == 2, "max_len 2 -> [CLS][SEP]");
    CHECK(tokenizer_encode(&f.t, a, strlen(a), NULL, 0, 1, &f.o, &f.d) != 0 && f.d.code == DIAG_CODE_INPUT &&
              strstr(f.d.text, "max_len 1"),
          "max_len 1 must be refused: %s", f.d.text);
    CHECK(tokenizer_encode(&f.t, a, strlen(a), b, strlen(b), 2, &f.o, &f.d) != 0, "pair max_len 2 must be refused");
    /* 0 = the model's 512: nothing to cut here. */
    CHECK(tokenizer_encode(&f.t, a, strlen(a), NULL, 0, 0, &f.o, &f.d) == 0 && f.o.len == 10 && !f.o.truncated, "max_len 0");
    tok_fx_down(&f);
}

static void test_invalid_utf8(void) {
    tok_fx f;
    if (tok_fx_up(&f)) return;
    static const struct {
        const char *s;
        size_t off;
    } bad[] = {
        {"ab\xC3", 2},              /* truncated 2-byte */
        {"a\xE2\x82", 1},           /* truncated 3-byte */
        {"\xF0\x9F\x98", 0},        /* truncated 4-byte */
        {"x\xC0\xAF", 1},           /* overlong '/' */
        {"\xE0\x80\xAF", 0},        /* overlong 3-byte */
        {"\xF0\x80\x80\xAF", 0},    /* overlong 4-byte */
        {"ok \xED\xA0\x80", 3},     /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", 0},    /* above U+10FFFF */
        {"\xF8\x88\x80\x80\x80", 0},
        {"\xFE", 0},
        {"\xFF", 0},
        {"hello \x80", 6},          /* lone continuation */
        {"[SEP]\xC3", 5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = strlen(bad[i].s);
        char *copy = malloc(n);   /* exact size, no NUL: ASan catches any over-read */
        memcpy(copy, bad[i].s, n);
        diag_init(&f.d);
        int rc = tokenizer_encode(&f.t, copy, n, NULL, 0, -1, &f.o, &f.d);
        char want[64];
        snprintf(want, sizeof want, "at byte %zu ", bad[i].off);
        CHECK(rc != 0 && f.d.code == DIAG_CODE_INPUT && strstr(f.d.text, "not valid UTF-8") && strstr(f.d.text, want),
              "case %zu: rc %d, message '%s'", i, rc, f.d.text);
        rc = tokenizer_encode(&f.t, "a", 1, copy, n, -1, &f.o, &f.d);
        CHECK(rc != 0 && strstr(f.d.text, "pair text"), "case %zu in the pair: %s", i, f.d.text);
        free(copy);
    }
    tok_fx_down(&f);
}

static void test_vocab_errors(void) {
    static const struct {
        const char *vocab, *needle;
    } cases[] = {
        {"[CLS]\n[SEP]\nhello\n", "'[UNK]' is not in the vocabulary"},
        {"[UNK]\n[SEP]\n", "'[CLS]'"},
        {"[UNK]\n[CLS]\n", "'[SEP]'"},
        {"", "empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *v = strdup(cases[i].vocab);
        tok_cfg cfg = tok_config(v, 0, 1, -1, 1);
        tokenizer t;
        diag d;
        diag_init(&d);
        int rc = tok_init(&t, &cfg, &d);
        CHECK(rc != 0 && d.code == DIAG_CODE_INPUT && strstr(d.text, cases[i].needle), "vocab %zu: rc %d '%s'", i, rc,
              d.text);
        if (!rc) tok_free(&t);
        free(v);
    }
    /* Duplicates: the later line wins; '\r' is part of the token, as in HF. */
    char v[] = "[UNK]\n[CLS]\n[SEP]\nx\ny\r\nx";
    tok_cfg cfg = tok_config(v, strlen(v), 0, -1, 1);
    tokenizer t;
    diag d;
    diag_init(&d);
    CHECK(tok_init(&t, &cfg, &d) == 0, "%s", d.text);
    CHECK(t.nids == 6 && tokenizer_token_to_id(&t, "x", 1) == 5 && tokenizer_token_to_id(&t, "y", 1) == -1 &&
              tokenizer_token_to_id(&t, "y\r", 2) == 4,
          "duplicate / CR handling");
    tok_free(&t);
}

/* Random bytes and random valid text: never a crash, an over-read or a bad id. */
static void test_random_bytes(void) {
    tok_fx f;
    if (tok_fx_up(&f)) return;
    for (int it = 0; it < 3000; it++) {
        size_t n = (size_t)check_rng_range(0, 300);
        char *s = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = check_rng_u64();
            /* Bias towards plausible UTF-8 so the deeper paths run too. */
            s[i] = (char)(it % 2 ? r : (r % 3 == 0 ? 0x80 | (r >> 8 & 0x3F) : r % 3 == 1 ? (r >> 8) % 128 : 0xC2 + (r >> 8) % 50));
        }
        int64_t ml = check_rng_range(-1, 40);
        int rc = tokenizer_encode(&f.t, s, n, it % 3 ? NULL : s, n / 2, ml, &f.o, &f.d);
        if (rc == 0) {
            int ok = 1;
            for (size_t i = 0; i < f.o.len; i++) ok &= f.o.ids[i] >= 0 && f.o.ids[i] < f.t.nids;
            CHECK(ok, "iteration %d: id out of range", it);
            CHECK(ml <= 2 || f.o.len <= (size_t)ml, "iteration %d: %zu tokens > max_len %d", it, f.o.len, (int)ml);
        }
        free(s);
    }
    /* Random valid code points, including long words and every plane. */
    for (int it = 0; it < 500; it++) {
        char s[2048];
        size_t n = 0;
        while (n < sizeof s - 8) {
            uint32_t c = (uint32_t)check_rng_range(0, 0x10FFFF);
            if (check_rng_uniform() < 0.5) c = (uint32_t)check_rng_range(0, 0x3000);
            if (c >= 0xD800 && c <= 0xDFFF) continue;
            n += utf8proc_encode_char((utf8proc_int32_t)c, (utf8proc_uint8_t *)s + n);
        }
        CHECK(tokenizer_encode(&f.t, s, n, NULL, 0, -1, &f.o, &f.d) == 0, "valid text refused: %s", f.d.text);
    }
    tok_fx_down(&f);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_corpus_uncased);
    CHECK_CASE(test_corpus_cased);
    CHECK_CASE(test_codepoint_sweep);
    CHECK_CASE(test_empty_and_specials);
    CHECK_CASE(test_truncation);
    CHECK_CASE(test_invalid_utf8);
    CHECK_CASE(test_vocab_errors);
    CHECK_CASE(test_random_bytes);
    return check_summary();
}
