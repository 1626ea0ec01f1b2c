/*
 * tokdesc — building, checking and freeing a tokenizer description.
 *
 * tokdesc_check is the one statement of what a description must satisfy
 * before the runtime may build a tokenizer from it; the plan reader runs it
 * on every plan (after its own field-by-field bounds), and the importer on
 * what it read, so a description that passes can be indexed without
 * further checks: every id in a merge, template or added token is inside
 * the id space, every offset inside the vocabulary text, every enum known.
 */
#include "tokdesc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tokdesc_init(tokdesc *t) {
    memset(t, 0, sizeof *t);
    t->unk_id = -1;
    t->pad_id = -1;
}

void tokdesc_free(tokdesc *t) {
    free(t->continuing_subword_prefix);
    free(t->vocab_text);
    free(t->vocab_off);
    free(t->scores);
    free(t->merges);
    for (int i = 0; i < t->nnormalizers; i++) {
        free(t->normalizers[i].pattern);
        free(t->normalizers[i].content);
        free(t->normalizers[i].data);
    }
    free(t->normalizers);
    free(t->pretokenizers);
    for (int i = 0; i < t->nadded; i++) free(t->added[i].content);
    free(t->added);
    free(t->single);
    free(t->pair);
    tokdesc_init(t);
}

int32_t tokdesc_id_count(const tokdesc *t) {
    int32_t n = t->nvocab;
    for (int i = 0; i < t->nadded; i++)
        if (t->added[i].id >= n) n = t->added[i].id + 1;
    return n;
}

const char *tokdesc_id_text(const tokdesc *t, int32_t id) {
    if (id >= 0 && id < t->nvocab) return t->vocab_text + t->vocab_off[id];
    for (int i = 0; i < t->nadded; i++)
        if (t->added[i].id == id) return t->added[i].content;
    return NULL;
}

int tokdesc_set_vocab(tokdesc *t, const char *const *texts, const size_t *lens, int32_t n, diag *d) {
    size_t total = 0;
    if (n < 0 || n > INT32_MAX / 4) return diag_set(d, DIAG_CODE_INPUT, "a vocabulary of %d entries", (int)n);
    for (int32_t i = 0; i < n; i++) {
        if (memchr(texts[i], 0, lens[i]))
            return diag_set(d, DIAG_CODE_INPUT, "vocabulary entry %d holds a NUL character", (int)i);
        total += lens[i] + 1;
    }
    if (total > UINT32_MAX) return diag_set(d, DIAG_CODE_INPUT, "the vocabulary's text is over 4 GiB");
    free(t->vocab_text);
    free(t->vocab_off);
    t->vocab_text = malloc(total ? total : 1);
    t->vocab_off = malloc((n ? (size_t)n : 1) * sizeof *t->vocab_off);
    if (!t->vocab_text || !t->vocab_off) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory for the vocabulary");
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        t->vocab_off[i] = (uint32_t)at;
        memcpy(t->vocab_text + at, texts[i], lens[i]);
        at += lens[i];
        t->vocab_text[at++] = 0;
    }
    t->vocab_text_len = total;
    t->nvocab = n;
    return 0;
}

/* ---- checks ---- */

/* Bytes of the UTF-8 sequence a lead byte starts (1 for anything else). */
static size_t tokdesc_utf8_len(uint8_t b) { return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

/* 1 if s[0..n) is strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF). */
int tokdesc_utf8_valid(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t b = s[i];
        size_t len = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
        if (!len || n - i < len) return 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
        for (size_t k = 1; k < len; k++)
            if (s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xBF)) return 0;
        i += len;
    }
    return 1;
}

/*
 * A compiled SentencePiece map: u32 array size (a multiple of 4, at least
 * one unit, inside the map), the units, then replacement strings that are
 * UTF-8 and end in NUL.  Lookups check every index they follow, so the
 * units themselves need no more than this.
 */
int tokdesc_check_charsmap(const uint8_t *data, uint32_t len, diag *d) {
    if (!data || len < 8) return diag_set(d, DIAG_CODE_INPUT, "a Precompiled map of %u bytes (at least 8)", (unsigned)len);
    uint32_t size = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    if (size % 4 || size < 4 || size > len - 4)
        return diag_set(d, DIAG_CODE_INPUT, "a Precompiled map whose array has %u bytes (a multiple of 4, 4..%u)",
                        (unsigned)size, (unsigned)(len - 4));
    const uint8_t *str = data + 4 + size;
    size_t n = len - 4 - size;
    if (n && (str[n - 1] != 0 || !tokdesc_utf8_valid(str, n)))
        return diag_set(d, DIAG_CODE_INPUT, "a Precompiled map whose replacement strings are not UTF-8 ending in NUL");
    return 0;
}

static int tokdesc_check_template(const tokdesc_item *it, int n, int pair, int32_t nids,
                                  diag *d) {
    const char *which = pair ? "pair" : "single";
    int seen[3] = {0, 0, 0};
    if (n < 1 || n > 64) return diag_set(d, DIAG_CODE_INPUT, "the %s template has %d items (1..64)", which, n);
    for (int i = 0; i < n; i++) {
        if ((unsigned)it[i].kind > TOKDESC_ITEM_SEQ_B)
            return diag_set(d, DIAG_CODE_INPUT, "%s template item %d: kind %d", which, i, (int)it[i].kind);
        seen[it[i].kind]++;
        if (it[i].type_id < 0)
            return diag_set(d, DIAG_CODE_INPUT, "%s template item %d: type id %d", which, i, (int)it[i].type_id);
        if (it[i].kind == TOKDESC_ITEM_SPECIAL && (it[i].id < 0 || it[i].id >= nids))
            return diag_set(d, DIAG_CODE_INPUT, "%s template item %d: token id %d outside 0..%d", which, i,
                            (int)it[i].id, (int)nids - 1);
    }
    if (seen[TOKDESC_ITEM_SEQ_A] != 1 || seen[TOKDESC_ITEM_SEQ_B] != (pair ? 1 : 0))
        return diag_set(d, DIAG_CODE_INPUT, "the %s template must hold $A once%s", which,
                        pair ? " and $B once" : " and no $B");
    return 0;
}

static int tokdesc_check_vocab(const tokdesc *t, diag *d) {
    if (t->nvocab < 1) return diag_set(d, DIAG_CODE_INPUT, "the vocabulary is empty");
    if (!t->vocab_text || !t->vocab_off || t->vocab_text_len == 0 || t->vocab_text[t->vocab_text_len - 1] != 0)
        return diag_set(d, DIAG_CODE_INPUT, "the vocabulary text does not end with a NUL");
    size_t expect = 0;
    for (int32_t i = 0; i < t->nvocab; i++) {
        if (t->vocab_off[i] != expect)
            return diag_set(d, DIAG_CODE_INPUT, "vocabulary entry %d starts at %u, expected %zu", (int)i,
                            (unsigned)t->vocab_off[i], expect);
        const char *nul = memchr(t->vocab_text + expect, 0, t->vocab_text_len - expect);
        if (!nul) return diag_set(d, DIAG_CODE_INPUT, "vocabulary entry %d runs past the text", (int)i);
        expect = (size_t)(nul - t->vocab_text) + 1;
    }
    if (expect != t->vocab_text_len)
        return diag_set(d, DIAG_CODE_INPUT, "the vocabulary text has %zu bytes after its %d entries",
                        t->vocab_text_len - expect, (int)t->nvocab);
    if (t->model == TOKDESC_MODEL_UNIGRAM) {
        if (!t->scores) return diag_set(d, DIAG_CODE_INPUT, "a Unigram model without scores");
        for (int32_t i = 0; i < t->nvocab; i++)
            if (!isfinite(t->scores[i]))
                return diag_set(d, DIAG_CODE_INPUT, "the score of vocabulary entry %d is not finite", (int)i);
    } else if (t->scores) {
        return diag_set(d, DIAG_CODE_INPUT, "scores on a model that is not Unigram");
    }
    return 0;
}

static int tokdesc_check_model(const tokdesc *t, diag *d) {
    if ((unsigned)t->model >= TOKDESC_MODEL_COUNT) return diag_set(d, DIAG_CODE_INPUT, "model kind %d", (int)t->model);
    if (t->flags & ~(uint32_t)TOKDESC_FLAG_ALL) return diag_set(d, DIAG_CODE_INPUT, "unknown flags 0x%x", t->flags);
    if (t->unk_id < -1 || t->unk_id >= t->nvocab)
        return diag_set(d, DIAG_CODE_INPUT, "unk id %d outside the vocabulary", (int)t->unk_id);
    if (t->model == TOKDESC_MODEL_WORDPIECE) {
        if (t->unk_id < 0) return diag_set(d, DIAG_CODE_INPUT, "a WordPiece model needs an unknown token");
        if (!t->continuing_subword_prefix || t->max_input_chars_per_word < 1 || t->max_input_chars_per_word > 1000)
            return diag_set(d, DIAG_CODE_INPUT, "a WordPiece model needs its prefix and a word length of 1..1000 "
                            "characters (it has %u)", (unsigned)t->max_input_chars_per_word);
    } else if (t->continuing_subword_prefix || t->max_input_chars_per_word) {
        return diag_set(d, DIAG_CODE_INPUT, "a continuing-subword prefix on a model that is not WordPiece");
    }
    if (t->nmerges && t->model != TOKDESC_MODEL_BPE) return diag_set(d, DIAG_CODE_INPUT, "merges on a model that is not BPE");
    if (t->nmerges < 0 || (t->nmerges && !t->merges)) return diag_set(d, DIAG_CODE_INPUT, "merge count %d", (int)t->nmerges);
    for (int32_t i = 0; i < 3 * t->nmerges; i++)
        if (t->merges[i] < 0 || t->merges[i] >= t->nvocab)
            return diag_set(d, DIAG_CODE_INPUT, "merge %d names id %d outside the vocabulary", (int)(i / 3),
                            (int)t->merges[i]);
    return 0;
}

static int tokdesc_check_components(const tokdesc *t, diag *d) {
    if (t->nnormalizers < 0 || t->nnormalizers > 64 || t->npretokenizers < 0 || t->npretokenizers > 64)
        return diag_set(d, DIAG_CODE_INPUT, "%d normalizers, %d pre-tokenizers (at most 64 each)", t->nnormalizers,
                        t->npretokenizers);
    for (int i = 0; i < t->nnormalizers; i++) {
        const tokdesc_normalizer *n = &t->normalizers[i];
        if ((unsigned)n->kind >= TOKDESC_NORM_COUNT) return diag_set(d, DIAG_CODE_INPUT, "normalizer %d: kind %d", i, (int)n->kind);
        if (n->kind == TOKDESC_NORM_REPLACE &&
            (!n->pattern || !n->content || !*n->pattern || n->p[0] == 1 || n->p[0] < 0 ||
             strlen(n->pattern) > 256 || strlen(n->content) > 256 ||
             !tokdesc_utf8_valid((const uint8_t *)n->pattern, strlen(n->pattern)) ||
             !tokdesc_utf8_valid((const uint8_t *)n->content, strlen(n->content)) ||
             (n->p[0] >= 2 && strlen(n->pattern) != tokdesc_utf8_len((uint8_t)n->pattern[0]))))
            return diag_set(d, DIAG_CODE_INPUT, "normalizer %d: a Replace needs a pattern and a content (UTF-8, at "
                            "most 256 bytes) and a count of 0 or at least 2 (then the pattern is one character)", i);
        if (n->kind != TOKDESC_NORM_PRECOMPILED && (n->data || n->data_len))
            return diag_set(d, DIAG_CODE_INPUT, "normalizer %d: data on a normalizer that is not Precompiled", i);
        if (n->kind == TOKDESC_NORM_PRECOMPILED && tokdesc_check_charsmap(n->data, n->data_len, d)) {
            diag_prefix(d, "normalizer %d: ", i);
            return -1;
        }
    }
    for (int i = 0; i < t->npretokenizers; i++) {
        const tokdesc_pretokenizer *p = &t->pretokenizers[i];
        if ((unsigned)p->kind >= TOKDESC_PRE_COUNT) return diag_set(d, DIAG_CODE_INPUT, "pre-tokenizer %d: kind %d", i, (int)p->kind);
        int meta = p->kind == TOKDESC_PRE_METASPACE, byte = p->kind == TOKDESC_PRE_BYTE_LEVEL;
        if (meta && ((unsigned)p->prepend_scheme > TOKDESC_PREPEND_NEVER || p->replacement == 0 ||
                     p->replacement > 0x10FFFF || (p->replacement >= 0xD800 && p->replacement <= 0xDFFF)))
            return diag_set(d, DIAG_CODE_INPUT, "pre-tokenizer %d (Metaspace): prepend scheme %d, replacement U+%04X",
                            i, (int)p->prepend_scheme, (unsigned)p->replacement);
        if ((!meta && (p->replacement || p->prepend_scheme || p->split)) ||
            (!byte && (p->add_prefix_space || p->trim_offsets || p->use_regex)) ||
            (unsigned)p->add_prefix_space > 1 || (unsigned)p->trim_offsets > 1 || (unsigned)p->use_regex > 1 ||
            (unsigned)p->split > 1)
            return diag_set(d, DIAG_CODE_INPUT, "pre-tokenizer %d: an option its kind (%d) does not have", i,
                            (int)p->kind);
    }
    return 0;
}

static int tokdesc_check_added(const tokdesc *t, int32_t nids, diag *d) {
    if (t->nadded < 0 || t->nadded > 1 << 20) return diag_set(d, DIAG_CODE_INPUT, "%d added tokens", t->nadded);
    for (int i = 0; i < t->nadded; i++) {
        const tokdesc_added *a = &t->added[i];
        if (!a->content || !*a->content) return diag_set(d, DIAG_CODE_INPUT, "added token %d is empty", i);
        if (!tokdesc_utf8_valid((const uint8_t *)a->content, strlen(a->content)))
            return diag_set(d, DIAG_CODE_INPUT, "added token %d is not valid UTF-8", i);
        if (a->flags & ~(uint32_t)TOKDESC_ADDED_ALL)
            return diag_set(d, DIAG_CODE_INPUT, "added token %d: unknown flags 0x%x", i, a->flags);
        if (a->id < 0 || (int64_t)a->id >= (int64_t)t->nvocab + t->nadded)
            return diag_set(d, DIAG_CODE_INPUT, "added token %d ('%s'): id %d outside 0..%d", i, a->content, (int)a->id,
                            (int)(t->nvocab + t->nadded - 1));
        if (a->id < t->nvocab && strcmp(a->content, t->vocab_text + t->vocab_off[a->id]))
            return diag_set(d, DIAG_CODE_INPUT, "added token %d ('%s') has id %d, which the vocabulary gives to '%s'", i,
                            a->content, (int)a->id, t->vocab_text + t->vocab_off[a->id]);
    }
    /* Ids past the vocabulary: each used once, none left out. */
    for (int32_t id = t->nvocab; id < nids; id++) {
        int n = 0;
        for (int i = 0; i < t->nadded; i++) n += t->added[i].id == id;
        if (n != 1)
            return diag_set(d, DIAG_CODE_INPUT, "id %d past the vocabulary belongs to %d added tokens (expected 1)",
                            (int)id, n);
    }
    return 0;
}

int tokdesc_check(const tokdesc *t, diag *d) {
    if (tokdesc_check_vocab(t, d) || tokdesc_check_model(t, d) || tokdesc_check_components(t, d)) return -1;
    int32_t nids = tokdesc_id_count(t);
    if (tokdesc_check_added(t, nids, d)) return -1;
    if (t->pad_id < -1 || t->pad_id >= nids) return diag_set(d, DIAG_CODE_INPUT, "pad id %d out of range", (int)t->pad_id);
    if (t->model_max_length < 0) return diag_set(d, DIAG_CODE_INPUT, "model_max_length %lld", (long long)t->model_max_length);
    if (tokdesc_check_template(t->single, t->nsingle, 0, nids, d) ||
        tokdesc_check_template(t->pair, t->npair, 1, nids, d))
        return -1;
    return 0;
}

/* ---- the vocab.txt description ---- */

/* Id of `s` among the vocabulary lines: the last equal line, -1 if none. */
static int32_t tokdesc_find(const tokdesc *t, const char *s) {
    for (int32_t i = t->nvocab - 1; i >= 0; i--)
        if (!strcmp(t->vocab_text + t->vocab_off[i], s)) return i;
    return -1;
}

static int tokdesc_bert_template(tokdesc *t, int32_t cls, int32_t sep) {
    t->single = calloc(3, sizeof *t->single);
    t->pair = calloc(5, sizeof *t->pair);
    if (!t->single || !t->pair) return -1;
    tokdesc_item s[3] = {{TOKDESC_ITEM_SPECIAL, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {TOKDESC_ITEM_SPECIAL, sep, 0}};
    tokdesc_item p[5] = {{TOKDESC_ITEM_SPECIAL, cls, 0}, {TOKDESC_ITEM_SEQ_A, 0, 0}, {TOKDESC_ITEM_SPECIAL, sep, 0},
                         {TOKDESC_ITEM_SEQ_B, 0, 1}, {TOKDESC_ITEM_SPECIAL, sep, 1}};
    memcpy(t->single, s, sizeof s);
    memcpy(t->pair, p, sizeof p);
    t->nsingle = 3;
    t->npair = 5;
    return 0;
}

/* The vocabulary lines; then the special tokens, the components and the template. */
static int tokdesc_vocab_lines(tokdesc *t, const char *vocab, size_t len, diag *d) {
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += vocab[i] == '\n';
    if (len && vocab[len - 1] != '\n') lines++;
    if (lines == 0) return diag_set(d, DIAG_CODE_INPUT, "the vocabulary is empty");
    if (lines > (size_t)INT32_MAX / 4) return diag_set(d, DIAG_CODE_INPUT, "the vocabulary has too many entries (%zu)", lines);
    const char **texts = malloc(lines * sizeof *texts);
    size_t *lens = malloc(lines * sizeof *lens);
    int rc = -1;
    if (!texts || !lens) {
        rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory for a %zu-line vocabulary", lines);
    } else {
        size_t start = 0;
        for (size_t i = 0; i < lines; i++) {
            const char *nl = memchr(vocab + start, '\n', len - start);
            size_t end = nl ? (size_t)(nl - vocab) : len;
            texts[i] = vocab + start;
            lens[i] = end - start;
            start = end + 1;
        }
        rc = tokdesc_set_vocab(t, texts, lens, (int32_t)lines, d);
    }
    free(texts);
    free(lens);
    return rc;
}

int tokdesc_from_vocab_txt(tokdesc *t, const char *vocab, size_t len, int lower, int strip, int chinese,
                           const char *const tokens[5], diag *d) {
    static const char *const defaults[5] = {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"};
    static const char *const what[5] = {"unknown", "classifier", "separator", "padding", "mask"};
    tokdesc_init(t);
    if (tokdesc_vocab_lines(t, vocab, len, d)) goto fail;
    int32_t ids[5];
    t->added = calloc(5, sizeof *t->added);
    t->normalizers = calloc(1, sizeof *t->normalizers);
    t->pretokenizers = calloc(1, sizeof *t->pretokenizers);
    t->continuing_subword_prefix = strdup("##");
    if (!t->added || !t->normalizers || !t->pretokenizers || !t->continuing_subword_prefix) goto oom;
    for (int i = 0; i < 5; i++) {
        const char *s = tokens && tokens[i] ? tokens[i] : defaults[i];
        ids[i] = tokdesc_find(t, s);
        if (ids[i] < 0 && i < 3) {
            diag_set(d, DIAG_CODE_INPUT, "tokenizer: the %s token '%s' is not in the vocabulary (%d entries)", what[i],
                     s, (int)t->nvocab);
            goto fail;
        }
        if (ids[i] < 0 || !*s) continue;
        tokdesc_added *a = &t->added[t->nadded];
        if (!(a->content = strdup(s))) goto oom;
        a->id = ids[i];
        a->flags = TOKDESC_ADDED_SPECIAL;
        t->nadded++;
    }
    t->model = TOKDESC_MODEL_WORDPIECE;
    t->unk_id = ids[0];
    t->pad_id = ids[3];
    t->max_input_chars_per_word = 100;
    t->normalizers[0] = (tokdesc_normalizer){.kind = TOKDESC_NORM_BERT,
                                             .p = {1, chinese != 0, strip < 0 ? -1 : strip != 0, lower != 0}};
    t->nnormalizers = 1;
    t->pretokenizers[0].kind = TOKDESC_PRE_BERT;
    t->npretokenizers = 1;
    if (tokdesc_bert_template(t, ids[1], ids[2])) goto oom;
    t->present = 1;
    return 0;
oom:
    diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
fail:
    tokdesc_free(t);
    return -1;
}
