/*
 * fuzz_tokenizer — the tokenizers on arbitrary text and hostile
 * descriptions.  The first byte chooses (its low two bits):
 *
 *   0  the fixture's vocab.txt (WordPiece) and the rest as text (a NUL, then
 *      a pair), the other bits choosing lowercase / accents / CJK settings;
 *   1  the rest up to a NUL is a vocab.txt, then the text;
 *   2  the rest up to a NUL is a tokenizer.json (hf_tokenizer_json_parse),
 *      then the text;
 *   3  one of the trained tokenizers of tests/golden (byte-level BPE,
 *      Unigram, SentencePiece with its Precompiled map), the second byte
 *      choosing which and what to damage with the bytes up to the next NUL:
 *      the compiled character map, the merges' ids, the added tokens'
 *      flags, or nothing; then the text.
 *
 * Whatever the description and the text, a tokenizer either refuses with a
 * message or produces ids inside its id space and offsets inside the text
 * they name.
 */
#include <string.h>

#include "fileutil.h"
#include "fuzz.h"
#include "hf_import.h"
#include "hf_tokenizer.h"
#include "tokenizer.h"

#ifndef BERTC_FUZZ_GOLDEN_DIR
#define BERTC_FUZZ_GOLDEN_DIR "tests/golden"
#endif

static char *fuzz_vocab;
static size_t fuzz_vocab_len;
static tokdesc fuzz_trained[3];
static int fuzz_trained_ok;

/* Encode and check what comes out. */
static void fuzz_run(const tokdesc *desc, const char *text, size_t len, const char *pair, size_t pair_len) {
    tokenizer t;
    diag d;
    diag_init(&d);
    if (tokenizer_init(&t, desc, &d)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    if (tokenizer_encode(&t, text, len, pair, pair_len, (int64_t)(len % 700), &o, &d) == 0)
        for (size_t i = 0; i < o.len; i++) {
            fuzz_require(o.ids[i] >= 0 && o.ids[i] < t.nids, "an id outside the tokenizer");
            size_t lim = o.seq[i] == 1 ? pair_len : len;
            fuzz_require(o.offsets[2 * i] >= 0 && o.offsets[2 * i] <= o.offsets[2 * i + 1] &&
                             (size_t)o.offsets[2 * i + 1] <= lim,
                         "an offset outside its text");
        }
    tokenizer_output_free(&o);
    tokenizer_free(&t);
}

static void fuzz_setup(void) {
    if (fuzz_vocab) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/vocab.txt", fuzz_dir());
    diag d;
    diag_init(&d);
    fuzz_vocab = file_read_all(path, &fuzz_vocab_len, (size_t)64 << 20, &d);
    fuzz_require(fuzz_vocab != NULL, "the fixture's vocab.txt (set BERTC_FUZZ_DIR)");
    static const char *const names[3] = {"tok-roberta", "tok-unigram", "tok-xlmr"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", BERTC_FUZZ_GOLDEN_DIR, names[i]);
        fuzz_require(hf_import_tokenizer_desc(path, &fuzz_trained[i], &d) == 0, "the trained tokenizers (tests/golden)");
    }
    fuzz_trained_ok = 1;
}

/* Mode 3: a trained description, damaged by `dmg` (n bytes) as `what` says. */
static void fuzz_damaged(int which, int what, const uint8_t *dmg, size_t n, const char *text, size_t len) {
    tokdesc *t = &fuzz_trained[which];
    if (what == 1 && n >= 8) {
        for (int i = 0; i < t->nnormalizers; i++) {
            tokdesc_normalizer *z = &t->normalizers[i];
            if (z->kind != TOKDESC_NORM_PRECOMPILED) continue;
            uint8_t *keep = z->data;
            uint32_t keep_len = z->data_len;
            z->data = (uint8_t *)dmg;
            z->data_len = (uint32_t)n;
            fuzz_run(t, text, len, NULL, 0);
            z->data = keep;
            z->data_len = keep_len;
            return;
        }
    }
    if (what == 2 && t->nmerges && n >= 4) {
        int32_t keep[64];
        size_t k = n / 4 < 64 ? n / 4 : 64;
        memcpy(keep, t->merges, k * 4);
        for (size_t i = 0; i < k; i++) {
            uint32_t v;
            memcpy(&v, dmg + 4 * i, 4);
            t->merges[i] = (int32_t)(v % (uint32_t)t->nvocab);
        }
        fuzz_run(t, text, len, NULL, 0);
        memcpy(t->merges, keep, k * 4);
        return;
    }
    if (what == 3 && t->nadded) {
        uint32_t keep[32];
        int k = t->nadded < 32 ? t->nadded : 32;
        for (int i = 0; i < k; i++) {
            keep[i] = t->added[i].flags;
            t->added[i].flags = n ? dmg[(size_t)i % n] & TOKDESC_ADDED_ALL : 0;
        }
        fuzz_run(t, text, len, NULL, 0);
        for (int i = 0; i < k; i++) t->added[i].flags = keep[i];
        return;
    }
    fuzz_run(t, text, len, (const char *)dmg, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    fuzz_setup();
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(rest, 0, n);
    size_t head = nul ? (size_t)(nul - rest) : n;
    const char *tail = nul ? nul + 1 : "";
    size_t tail_len = nul ? n - head - 1 : 0;
    int mode = data[0] & 3;
    diag d;
    diag_init(&d);
    tokdesc desc;
    if (mode == 0 || mode == 1) {
        const char *v = mode == 0 ? fuzz_vocab : rest;
        size_t vl = mode == 0 ? fuzz_vocab_len : head;
        if (tokdesc_from_vocab_txt(&desc, v, vl, data[0] & 4 ? 0 : -1, data[0] & 8 ? 1 : -1, data[0] & 16 ? 0 : -1,
                                   NULL, &d))
            return 0;
        if (mode == 0) fuzz_run(&desc, rest, head, nul ? tail : NULL, tail_len);
        else fuzz_run(&desc, tail, tail_len, NULL, 0);
        tokdesc_free(&desc);
    } else if (mode == 2) {
        if (hf_tokenizer_json_parse("fuzz.json", rest, head, &desc, &d) == 0) {
            fuzz_run(&desc, tail, tail_len, NULL, 0);
            tokdesc_free(&desc);
        } else {
            fuzz_require(!strncmp(d.text, "fuzz.json", 9), "a tokenizer.json error that does not name the file");
        }
    } else if (fuzz_trained_ok) {
        fuzz_damaged((data[1] & 3) % 3, (data[1] >> 2) & 3, (const uint8_t *)rest + 1, head ? head - 1 : 0, tail,
                     tail_len);
    }
    return 0;
}
