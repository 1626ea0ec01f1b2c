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

static uint32_t rd_u32(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void tok_golden_free(tok_golden *g) {
    free(g->buf);
    free(g->cases);
    memset(g, 0, sizeof *g);
}

/* Parse tests/golden/tokenizer-corpus.btok (format: docs/tokenizer.md); 0 or -1 with a CHECK failure. */
static int tok_golden_load(tok_golden *g, const char *path) {
    memset(g, 0, sizeof *g);
    g->buf = check_read_file(path, &g->size);
    CHECK(g->buf, "cannot read %s", path);
    if (!g->buf) return -1;
    const char *p = g->buf, *end = g->buf + g->size;
#define NEED(k)                                                                      \
    do {                                                                             \
        if ((size_t)(end - p) < (size_t)(k)) {                                       \
            CHECK(0, "%s is truncated at byte %zu", path, (size_t)(p - g->buf));     \
            return -1;                                                               \
        }                                                                            \
    } while (0)
    NEED(12);
    if (memcmp(p, "BTOK", 4) || rd_u32(p + 4) != 1) {
        CHECK(0, "%s: not a version-1 BTOK file", path);
        return -1;
    }
    uint32_t hl = rd_u32(p + 8);
    p += 12;
    NEED(hl + 8);
    p += hl;
    g->nvocab = rd_u32(p);
    g->ncases = rd_u32(p + 4);
    p += 8;
    if (g->nvocab != 2) {
        CHECK(0, "%s: expected 2 vocabularies, found %u", path, g->nvocab);
        return -1;
    }
    for (uint32_t v = 0; v < 2; v++) {
        NEED(4);
        uint32_t nl = rd_u32(p);
        p += 4;
        NEED(nl + 3);
        snprintf(g->names[v], sizeof g->names[v], "%.*s", (int)nl, p);
        p += nl;
        memcpy(g->settings[v], p, 3);
        p += 3;
    }
    g->cases = calloc(g->ncases, sizeof *g->cases);
    if (!g->cases) return -1;
    for (uint32_t i = 0; i < g->ncases; i++) {
        tok_golden_case *c = &g->cases[i];
        NEED(9);
        memcpy(&c->max_len, p, 4);
        c->has_pair = (uint8_t)p[4];
        c->la = rd_u32(p + 5);
        p += 9;
        NEED(c->la);
        c->a = p;
        p += c->la;
        if (c->has_pair) {
            NEED(4);
            c->lb = rd_u32(p);
            p += 4;
            NEED(c->lb);
            c->b = p;
            p += c->lb;
        }
        for (int v = 0; v < 2; v++) {
            NEED(4);
            c->n[v] = rd_u32(p);
            p += 4;
            NEED((size_t)c->n[v] * 3);
            c->ids[v] = (const uint8_t *)p;
            c->types[v] = (const uint8_t *)p + 2 * (size_t)c->n[v];
            p += 3 * (size_t)c->n[v];
        }
    }
    CHECK(p == end, "%s: %zu trailing bytes", path, (size_t)(end - p));
#undef NEED
    return p == end ? 0 : -1;
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
    size_t n;
    char *buf = check_read_file("tests/golden/tokenizer-sweep.bin", &n);
    CHECK(buf, "cannot read tests/golden/tokenizer-sweep.bin");
    if (!buf) return;
    uint32_t nconf = n >= 16 ? rd_u32(buf + 8) : 0, nblk = n >= 16 ? rd_u32(buf + 12) : 0;
    CHECK(n >= 16 && !memcmp(buf, "BSWP", 4) && rd_u32(buf + 4) == 1 && nblk == 0x110000 / 256 &&
              n == 16 + (size_t)nconf * (3 + 8 * (size_t)nblk),
          "tokenizer-sweep.bin is malformed (%zu bytes)", n);
    if (n < 16 || n != 16 + (size_t)nconf * (3 + 8 * (size_t)nblk)) {
        free(buf);
        return;
    }
    char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    tokenizer_output o;
    tokenizer_output_init(&o);
    for (uint32_t k = 0; k < nconf; k++) {
        const char *p = buf + 16 + (size_t)k * (3 + 8 * (size_t)nblk);
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

static int tok_small(tokenizer *t, int lower) {
    static char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n##s\na\nb\n!\n##b\n";
    tok_cfg cfg = tok_config(vocab, strlen(vocab), lower, -1, -1);
    diag d;
    diag_init(&d);
    int rc = tok_init(t, &cfg, &d);
    CHECK(rc == 0, "tokenizer_init: %s", d.text);
    return rc;
}

static void test_empty_and_specials(void) {
    tokenizer t;
    if (tok_small(&t, 1)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    diag d;
    diag_init(&d);
    CHECK(tokenizer_encode(&t, "", 0, NULL, 0, -1, &o, &d) == 0, "%s", d.text);
    CHECK(o.len == 2 && o.ids[0] == 2 && o.ids[1] == 3 && !strcmp(o.tokens[0], "[CLS]") && !strcmp(o.tokens[1], "[SEP]"),
          "empty text must give [CLS] [SEP], got %zu tokens", o.len);
    CHECK(tokenizer_encode(&t, NULL, 5, NULL, 0, 0, &o, &d) == 0 && o.len == 2, "NULL text is empty text");
    CHECK(tokenizer_encode(&t, "Hello worlds!", 13, "b [MASK]x", 9, -1, &o, &d) == 0, "%s", d.text);
    int32_t want[] = {2, 5, 6, 7, 10, 3, 9, 4, 1, 3}, wty[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    int ok = o.len == 10;
    for (size_t i = 0; ok && i < 10; i++) ok = o.ids[i] == want[i] && o.type_ids[i] == wty[i];
    CHECK(ok, "pair encoding wrong (%zu tokens)", o.len);
    CHECK(tokenizer_token_to_id(&t, "##b", 3) == 11 && tokenizer_token_to_id(&t, "##c", 3) == -1, "token_to_id");
    tokenizer_output_free(&o);
    tok_free(&t);
}

static void test_truncation(void) {
    tokenizer t;
    if (tok_small(&t, 1)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    diag d;
    diag_init(&d);
    const char *a = "a a a a a a a a", *b = "b b b";   /* 8 and 3 tokens */
    /* longest_first (tokenizers' rule): budget 7 -> the shorter keeps 3, the longer 4. */
    CHECK(tokenizer_encode(&t, a, strlen(a), b, strlen(b), 10, &o, &d) == 0 && o.len == 10 && o.len_a == 4 &&
              o.len_b == 3 && o.truncated && o.full_a == 8,
          "pair truncation: %zu tokens, %zu + %zu", o.len, o.len_a, o.len_b);
    /* Both long: budget 5 -> shorter 2, longer 3. */
    CHECK(tokenizer_encode(&t, a, strlen(a), "b b b b b b", 11, 8, &o, &d) == 0 && o.len_a == 3 && o.len_b == 2,
          "both truncated: %zu + %zu", o.len_a, o.len_b);
    CHECK(tokenizer_encode(&t, a, strlen(a), NULL, 0, 5, &o, &d) == 0 && o.len == 5 && o.ids[4] == 3,
          "single truncation to 5: %zu", o.len);
    CHECK(tokenizer_encode(&t, a, strlen(a), NULL, 0, 2, &o, &d) == 0 && o.len == 2, "max_len 2 -> [CLS][SEP]");
    CHECK(tokenizer_encode(&t, a, strlen(a), NULL, 0, 1, &o, &d) != 0 && d.code == DIAG_CODE_INPUT &&
              strstr(d.text, "max_len 1"),
          "max_len 1 must be refused: %s", d.text);
    CHECK(tokenizer_encode(&t, a, strlen(a), b, strlen(b), 2, &o, &d) != 0, "pair max_len 2 must be refused");
    /* 0 = the model's 512: nothing to cut here. */
    CHECK(tokenizer_encode(&t, a, strlen(a), NULL, 0, 0, &o, &d) == 0 && o.len == 10 && !o.truncated, "max_len 0");
    tokenizer_output_free(&o);
    tok_free(&t);
}

static void test_invalid_utf8(void) {
    tokenizer t;
    if (tok_small(&t, 1)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
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
        diag d;
        diag_init(&d);
        int rc = tokenizer_encode(&t, copy, n, NULL, 0, -1, &o, &d);
        char want[64];
        snprintf(want, sizeof want, "at byte %zu ", bad[i].off);
        CHECK(rc != 0 && d.code == DIAG_CODE_INPUT && strstr(d.text, "not valid UTF-8") && strstr(d.text, want),
              "case %zu: rc %d, message '%s'", i, rc, d.text);
        rc = tokenizer_encode(&t, "a", 1, copy, n, -1, &o, &d);
        CHECK(rc != 0 && strstr(d.text, "pair text"), "case %zu in the pair: %s", i, d.text);
        free(copy);
    }
    tokenizer_output_free(&o);
    tok_free(&t);
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
    tokenizer t;
    if (tok_small(&t, 1)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    diag d;
    diag_init(&d);
    for (int it = 0; it < 3000; it++) {
        size_t n = (size_t)check_rng_range(0, 300);
        char *s = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = check_rng_u64();
            /* Bias towards plausible UTF-8 so the deeper paths run too. */
            s[i] = (char)(it % 2 ? r : (r % 3 == 0 ? 0x80 | (r >> 8 & 0x3F) : r % 3 == 1 ? (r >> 8) % 128 : 0xC2 + (r >> 8) % 50));
        }
        int64_t ml = check_rng_range(-1, 40);
        int rc = tokenizer_encode(&t, s, n, it % 3 ? NULL : s, n / 2, ml, &o, &d);
        if (rc == 0) {
            int ok = 1;
            for (size_t i = 0; i < o.len; i++) ok &= o.ids[i] >= 0 && o.ids[i] < t.nids;
            CHECK(ok, "iteration %d: id out of range", it);
            CHECK(ml <= 2 || o.len <= (size_t)ml, "iteration %d: %zu tokens > max_len %d", it, o.len, (int)ml);
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
        CHECK(tokenizer_encode(&t, s, n, NULL, 0, -1, &o, &d) == 0, "valid text refused: %s", d.text);
    }
    tokenizer_output_free(&o);
    tok_free(&t);
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
