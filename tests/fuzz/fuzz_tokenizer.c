/*
 * fuzz_tokenizer — the WordPiece tokenizer on arbitrary bytes, with the
 * fixture's vocabulary and with hostile ones.  The first byte chooses: even,
 * the rest is text (and, after a NUL, a pair) for the fixture's vocab.txt;
 * odd, the rest is a vocabulary up to the first NUL and then the text.
 * Every id produced must be inside the vocabulary.
 */
#include <string.h>

#include "fileutil.h"
#include "fuzz.h"
#include "tokenizer.h"

static char *fuzz_vocab;
static size_t fuzz_vocab_len;

static void fuzz_encode(const plan_tokenizer *cfg, const char *text, size_t len, const char *pair, size_t pair_len) {
    tokenizer t;
    diag d;
    diag_init(&d);
    if (tokenizer_init(&t, cfg, &d)) return;
    tokenizer_output o;
    tokenizer_output_init(&o);
    if (tokenizer_encode(&t, text, len, pair, pair_len, (int64_t)(len % 700), &o, &d) == 0)
        for (size_t i = 0; i < o.len; i++) fuzz_require(o.ids[i] >= 0 && o.ids[i] < t.nvocab, "an id outside the vocabulary");
    tokenizer_output_free(&o);
    tokenizer_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!fuzz_vocab) {
        char path[1024];
        snprintf(path, sizeof path, "%s/vocab.txt", fuzz_dir());
        diag d;
        diag_init(&d);
        fuzz_vocab = file_read_all(path, &fuzz_vocab_len, (size_t)64 << 20, &d);
        fuzz_require(fuzz_vocab != NULL, "the fixture's vocab.txt (set BERTC_FUZZ_DIR)");
    }
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    plan_tokenizer cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.present = 1;
    cfg.do_lower_case = data[0] & 2 ? 0 : -1;
    cfg.strip_accents = data[0] & 4 ? 1 : -1;
    cfg.tokenize_chinese_chars = data[0] & 8 ? 0 : -1;
    const char *nul = memchr(rest, 0, n);
    if (!(data[0] & 1)) {
        cfg.vocab = fuzz_vocab;
        cfg.vocab_len = fuzz_vocab_len;
        size_t tl = nul ? (size_t)(nul - rest) : n;
        fuzz_encode(&cfg, rest, tl, nul ? nul + 1 : NULL, nul ? n - tl - 1 : 0);
        return 0;
    }
    size_t vl = nul ? (size_t)(nul - rest) : n;
    char *vocab = malloc(vl + 1);
    memcpy(vocab, rest, vl);
    vocab[vl] = '\0';
    cfg.vocab = vocab;
    cfg.vocab_len = vl;
    fuzz_encode(&cfg, nul ? nul + 1 : "", nul ? n - vl - 1 : 0, NULL, 0);
    free(vocab);
    return 0;
}
