/*
 * tokenizer — Hugging Face's BERT tokenization in one pass over the text.
 *
 * Truth is BertTokenizerFast, i.e. the Rust `tokenizers` pipeline
 * (BertNormalizer, BertPreTokenizer, WordPiece, the BERT template and
 * longest_first truncation); tokenizer.h lists the steps.  This file does
 * them with two sweeps per text: stage A decodes UTF-8 and applies the
 * per-character part of the normaliser (clean-up, CJK spacing, NFD) into a
 * code-point scratch buffer; stage B finishes what needs neighbours
 * (canonical reordering of combining marks), drops marks, lowercases,
 * splits words and runs WordPiece on each word as soon as it ends.  Words
 * live in a fixed stack buffer (a word longer than 100 code points is [UNK]
 * whatever it holds, so nothing longer is kept), and the vocabulary is an
 * open-addressing hash table whose lookups hash "##" + piece without
 * building the string, so steady-state encoding makes no allocation.
 *
 * Unicode: utf8proc (Unicode 15.0 in 2.8) supplies categories, combining
 * classes, NFD and lowercase.  `tokenizers` 0.21.1 mixes three Unicode
 * versions of its own — the `unicode_categories` crate (old: it knows
 * neither the Cf/Mn/P* characters added since Unicode ~9 nor category
 * changes like U+1734 Mn->Mc), the `unicode-normalization-alignments`
 * crate for NFD (which does not decompose U+11938), and Rust's std for
 * lowercasing and whitespace (Unicode 16: it lowercases U+1C89, U+A7CB...).
 * The hf_* tables below are exactly the differences, found by sweeping
 * every code point through both (tools/make_tokenizer_goldens.py
 * --tables prints them again); the test's sweep check keeps them honest.
 * Note HF removes characters of category Cc, Cf and Co but NOT unassigned
 * (Cn) ones, whose category its table cannot know: they stay in words
 * (usually as [UNK]).  The slow Python BertTokenizer instead removes every
 * C* (Python's own, also different, Unicode version); we follow the fast one.
 */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct tokenizer_range {
    uint32_t lo, hi;
} tokenizer_range;

/* utf8proc says Cf, the tokenizers table does not know them: kept. */
static const tokenizer_range hf_kept_format[4] = {
    {0x890, 0x891}, {0x8E2, 0x8E2}, {0x110CD, 0x110CD}, {0x13430, 0x1343F},
};
/* Nonspacing marks to HF but not to utf8proc (U+1734, Mn before Unicode 14). */
static const tokenizer_range hf_mn_extra[1] = {
    {0x1734, 0x1734},
};
/* utf8proc's Mn that HF's table lacks (added after its Unicode version): kept by strip_accents. */
static const tokenizer_range hf_mn_missing[91] = {
    {0x7FD, 0x7FD}, {0x898, 0x89F}, {0x8CA, 0x8E1}, {0x9FE, 0x9FE}, {0xAFA, 0xAFF}, {0xB55, 0xB55},
    {0xC04, 0xC04}, {0xC3C, 0xC3C}, {0xD00, 0xD00}, {0xD3B, 0xD3C}, {0xD81, 0xD81}, {0xEBA, 0xEBA},
    {0xECE, 0xECE}, {0x180F, 0x180F}, {0x1885, 0x1886}, {0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFB},
    {0xA82C, 0xA82C}, {0xA8C5, 0xA8C5}, {0xA8FF, 0xA8FF}, {0xA9BD, 0xA9BD}, {0x10D24, 0x10D27},
    {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85},
    {0x11070, 0x11070}, {0x11073, 0x11074}, {0x110C2, 0x110C2}, {0x111C9, 0x111C9},
    {0x111CF, 0x111CF}, {0x1123E, 0x1123E}, {0x11241, 0x11241}, {0x1133B, 0x1133B},
    {0x11438, 0x1143F}, {0x11442, 0x11444}, {0x11446, 0x11446}, {0x1145E, 0x1145E},
    {0x1182F, 0x11837}, {0x11839, 0x1183A}, {0x1193B, 0x1193C}, {0x1193E, 0x1193E},
    {0x11943, 0x11943}, {0x119D4, 0x119D7}, {0x119DA, 0x119DB}, {0x119E0, 0x119E0},
    {0x11A01, 0x11A0A}, {0x11A33, 0x11A38}, {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47},
    {0x11A51, 0x11A56}, {0x11A59, 0x11A5B}, {0x11A8A, 0x11A96}, {0x11A98, 0x11A99},
    {0x11C30, 0x11C36}, {0x11C38, 0x11C3D}, {0x11C3F, 0x11C3F}, {0x11C92, 0x11CA7},
    {0x11CAA, 0x11CB0}, {0x11CB2, 0x11CB3}, {0x11CB5, 0x11CB6}, {0x11D31, 0x11D36},
    {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D45}, {0x11D47, 0x11D47},
    {0x11D90, 0x11D91}, {0x11D95, 0x11D95}, {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4},
    {0x11F00, 0x11F01}, {0x11F36, 0x11F3A}, {0x11F40, 0x11F40}, {0x11F42, 0x11F42},
    {0x13440, 0x13440}, {0x13447, 0x13455}, {0x16F4F, 0x16F4F}, {0x16FE4, 0x16FE4},
    {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46}, {0x1E000, 0x1E006}, {0x1E008, 0x1E018},
    {0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A}, {0x1E08F, 0x1E08F},
    {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
    {0x1E944, 0x1E94A},
};
/* Punctuation to HF only (U+166D, U+111C9 were P* in older Unicode). */
static const tokenizer_range hf_punct_extra[2] = {
    {0x166D, 0x166D}, {0x111C9, 0x111C9},
};
/* utf8proc's P* that HF's table lacks: not split off. */
static const tokenizer_range hf_punct_missing[32] = {
    {0x61D, 0x61D}, {0x9FD, 0x9FD}, {0xA76, 0xA76}, {0xC77, 0xC77}, {0xC84, 0xC84},
    {0x1B7D, 0x1B7E}, {0x2E43, 0x2E4F}, {0x2E52, 0x2E5D}, {0x10EAD, 0x10EAD}, {0x10F55, 0x10F59},
    {0x10F86, 0x10F89}, {0x1144B, 0x1144F}, {0x1145A, 0x1145B}, {0x1145D, 0x1145D},
    {0x11660, 0x1166C}, {0x116B9, 0x116B9}, {0x1183B, 0x1183B}, {0x11944, 0x11946},
    {0x119E2, 0x119E2}, {0x11A3F, 0x11A46}, {0x11A9A, 0x11A9C}, {0x11A9E, 0x11AA2},
    {0x11B00, 0x11B09}, {0x11C41, 0x11C45}, {0x11C70, 0x11C71}, {0x11EF7, 0x11EF8},
    {0x11F43, 0x11F4F}, {0x11FFF, 0x11FFF}, {0x12FF1, 0x12FF2}, {0x16E97, 0x16E9A},
    {0x16FE2, 0x16FE2}, {0x1E95E, 0x1E95F},
};

/* Rust std's lowercase (Unicode 16) maps these; utf8proc 2.8 does not know them yet. */
static const uint32_t hf_lower_extra[][2] = {
    {0x1C89, 0x1C8A}, {0xA7CB, 0x264}, {0xA7CC, 0xA7CD}, {0xA7DA, 0xA7DB}, {0xA7DC, 0x19B},
    {0x10D50, 0x10D70}, {0x10D51, 0x10D71}, {0x10D52, 0x10D72}, {0x10D53, 0x10D73},
    {0x10D54, 0x10D74}, {0x10D55, 0x10D75}, {0x10D56, 0x10D76}, {0x10D57, 0x10D77},
    {0x10D58, 0x10D78}, {0x10D59, 0x10D79}, {0x10D5A, 0x10D7A}, {0x10D5B, 0x10D7B},
    {0x10D5C, 0x10D7C}, {0x10D5D, 0x10D7D}, {0x10D5E, 0x10D7E}, {0x10D5F, 0x10D7F},
    {0x10D60, 0x10D80}, {0x10D61, 0x10D81}, {0x10D62, 0x10D82}, {0x10D63, 0x10D83},
    {0x10D64, 0x10D84}, {0x10D65, 0x10D85},
};

/* HF's NFD leaves these whole (canonical decompositions newer than its tables). */
#define HF_NFD_KEPT 0x11938u

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int tokenizer_range_has(const tokenizer_range *r, size_t n, uint32_t c) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < r[mid].lo) hi = mid;
        else if (c > r[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

/*
 * ASCII classes, one table so the common case costs one load: removed
 * (controls but \t \n \r), whitespace, and punctuation (HF counts all of
 * 33-47, 58-64, 91-96, 123-126, including $+<=>^`| which Unicode calls
 * symbols).
 */
enum { CLS_REMOVED = 1, CLS_SPACE = 2, CLS_PUNCT = 4 };
#define R CLS_REMOVED
#define S CLS_SPACE
#define P CLS_PUNCT
static const uint8_t ascii_class[128] = {
    R, R, R, R, R, R, R, R, R, S, S, R, R, S, R, R,
    R, R, R, R, R, R, R, R, R, R, R, R, R, R, R, R,
    S, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, P, P, P, P, P, P,
    P, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, P, P, P, P, P,
    P, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, P, P, P, P, R,
};
#undef R
#undef S
#undef P

/* Class of a non-ASCII code point as BertNormalizer's clean-up and BertPreTokenizer see it. */
static uint8_t tokenizer_class(uint32_t c, utf8proc_category_t cat) {
    if (c == 0xFFFDu) return CLS_REMOVED;   /* the replacement character (So), removed by HF's clean-up */
    switch (cat) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
        return CLS_REMOVED;
    case UTF8PROC_CATEGORY_CF:
        return tokenizer_range_has(hf_kept_format, NELEM(hf_kept_format), c) ? 0 : CLS_REMOVED;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
        return CLS_SPACE;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return tokenizer_range_has(hf_punct_missing, NELEM(hf_punct_missing), c) ? 0 : CLS_PUNCT;
    case UTF8PROC_CATEGORY_SO:
    case UTF8PROC_CATEGORY_MN:
        return tokenizer_range_has(hf_punct_extra, NELEM(hf_punct_extra), c) ? CLS_PUNCT : 0;
    default:
        return 0;
    }
}

/* Nonspacing mark as HF's strip_accents sees it. */
static int tokenizer_is_mn(uint32_t c, utf8proc_category_t cat) {
    if (cat == UTF8PROC_CATEGORY_MN) return !tokenizer_range_has(hf_mn_missing, NELEM(hf_mn_missing), c);
    if (cat == UTF8PROC_CATEGORY_MC) return tokenizer_range_has(hf_mn_extra, NELEM(hf_mn_extra), c);
    return 0;
}

/* HF's CJK ranges (tokenizers' is_chinese_char: note 0x2B920, where Python's slow tokenizer says 0x2B820). */
static int tokenizer_is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Full lowercase of a non-ASCII code point into out[0..2); returns the count. */
static int tokenizer_lower(uint32_t c, uint32_t out[2]) {
    if (c == 0x130) {        /* the one unconditional multi-character lowercase mapping */
        out[0] = 'i';
        out[1] = 0x307;
        return 2;
    }
    int32_t l = utf8proc_tolower((utf8proc_int32_t)c);
    if ((uint32_t)l == c && c >= 0x1C89 && c <= 0x10D65) {
        for (size_t i = 0; i < NELEM(hf_lower_extra); i++)
            if (hf_lower_extra[i][0] == c) {
                l = (int32_t)hf_lower_extra[i][1];
                break;
            }
    }
    out[0] = (uint32_t)l;
    return 1;
}

/* ---- vocabulary hash table ---- */

#define FNV_BASIS 2166136261u
#define FNV_PRIME 16777619u

static uint32_t tokenizer_hash(uint32_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * FNV_PRIME;
    return h;
}

/* Id of (cont ? "##" : "") + s[0..n), whose hash is h, or -1. */
static int32_t tokenizer_lookup_hashed(const tokenizer *t, uint32_t h, int cont, const char *s, size_t n) {
    size_t klen = n + (cont ? 2 : 0);
    for (uint32_t i = h & t->slot_mask;; i = (i + 1) & t->slot_mask) {
        int32_t id = t->slot_id[i];
        if (id < 0) return -1;
        if (t->slot_hash[i] != h || t->tok_len[id] != klen) continue;
        const char *k = t->tok[id];
        if (cont && (k[0] != '#' || k[1] != '#')) continue;
        if (memcmp(k + (cont ? 2 : 0), s, n) == 0) return id;
    }
}

static int32_t tokenizer_lookup(const tokenizer *t, int cont, const char *s, size_t n) {
    uint32_t h = tokenizer_hash(cont ? tokenizer_hash(FNV_BASIS, "##", 2) : FNV_BASIS, s, n);
    return tokenizer_lookup_hashed(t, h, cont, s, n);
}

int32_t tokenizer_token_to_id(const tokenizer *t, const char *token, size_t len) {
    return tokenizer_lookup(t, 0, token, len);
}

const char *tokenizer_id_to_token(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->nvocab ? t->tok[id] : "";
}

void tokenizer_free(tokenizer *t) {
    free(t->text);
    free(t->tok);
    free(t->tok_len);
    free(t->slot_id);
    free(t->slot_hash);
    memset(t, 0, sizeof *t);
}

static int tokenizer_special_id(tokenizer *t, const char *s, const char *what, int required,
                                int32_t *id, diag *d) {
    *id = tokenizer_lookup(t, 0, s, strlen(s));
    if (*id < 0 && required)
        return diag_set(d, DIAG_CODE_INPUT, "tokenizer: the %s token '%s' is not in the vocabulary (%d entries)",
                        what, s, (int)t->nvocab);
    if (*id >= 0 && *s) {
        int k = t->nspecial++;
        t->special[k] = s;
        t->special_len[k] = strlen(s);
        t->special_id[k] = *id;
        t->special_first[(uint8_t)s[0]] = 1;
    }
    return 0;
}

int tokenizer_init(tokenizer *t, const plan_tokenizer *cfg, diag *d) {
    memset(t, 0, sizeof *t);
    t->lower = cfg->do_lower_case != 0;                               /* HF default: true */
    t->strip = cfg->strip_accents < 0 ? t->lower : cfg->strip_accents != 0;
    t->chinese = cfg->tokenize_chinese_chars != 0;                    /* HF default: true */
    t->model_max_length = cfg->model_max_length > 0 ? cfg->model_max_length : 0;
    if (!cfg->vocab) return diag_set(d, DIAG_CODE_INPUT, "tokenizer: no vocabulary");
    size_t n = cfg->vocab_len ? cfg->vocab_len : strlen(cfg->vocab);

    /* Lines as Python's readlines() + rstrip("\n") make them: a final line without '\n' counts. */
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += cfg->vocab[i] == '\n';
    if (n && cfg->vocab[n - 1] != '\n') lines++;
    if (lines == 0) return diag_set(d, DIAG_CODE_INPUT, "tokenizer: the vocabulary is empty");
    if (lines > (size_t)INT32_MAX / 4)
        return diag_set(d, DIAG_CODE_INPUT, "tokenizer: the vocabulary has too many entries (%zu)", lines);
    size_t nslots = 16;
    while (nslots < lines * 2) nslots *= 2;
    t->text = malloc(n + 1);
    t->tok = malloc(lines * sizeof *t->tok);
    t->tok_len = malloc(lines * sizeof *t->tok_len);
    t->slot_id = malloc(nslots * sizeof *t->slot_id);
    t->slot_hash = malloc(nslots * sizeof *t->slot_hash);
    if (!t->text || !t->tok || !t->tok_len || !t->slot_id || !t->slot_hash) {
        tokenizer_free(t);
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for a %zu-line vocabulary", lines);
    }
    memcpy(t->text, cfg->vocab, n);
    t->text[n] = 0;
    memset(t->slot_id, 0xff, nslots * sizeof *t->slot_id);
    t->slot_mask = (uint32_t)(nslots - 1);
    t->nvocab = (int32_t)lines;

    size_t start = 0;
    for (int32_t id = 0; id < t->nvocab; id++) {
        size_t end = start;
        while (end < n && t->text[end] != '\n') end++;
        t->text[end < n ? end : n] = 0;
        size_t len = end - start;
        t->tok[id] = t->text + start;
        t->tok_len[id] = (uint32_t)len;
        if (len > t->max_token_bytes) t->max_token_bytes = len;
        /* Insert, or re-point an earlier duplicate: HF's dict keeps the last line. */
        uint32_t h = tokenizer_hash(FNV_BASIS, t->tok[id], len);
        for (uint32_t i = h & t->slot_mask;; i = (i + 1) & t->slot_mask) {
            int32_t o = t->slot_id[i];
            if (o < 0 || (t->slot_hash[i] == h && t->tok_len[o] == len && memcmp(t->tok[o], t->tok[id], len) == 0)) {
                t->slot_id[i] = id;
                t->slot_hash[i] = h;
                break;
            }
        }
        start = end + 1;
    }

    const char *unk = cfg->unk_token ? cfg->unk_token : "[UNK]";
    const char *cls = cfg->cls_token ? cfg->cls_token : "[CLS]";
    const char *sep = cfg->sep_token ? cfg->sep_token : "[SEP]";
    const char *pad = cfg->pad_token ? cfg->pad_token : "[PAD]";
    const char *mask = cfg->mask_token ? cfg->mask_token : "[MASK]";
    if (tokenizer_special_id(t, unk, "unknown", 1, &t->unk_id, d) ||
        tokenizer_special_id(t, cls, "classifier", 1, &t->cls_id, d) ||
        tokenizer_special_id(t, sep, "separator", 1, &t->sep_id, d) ||
        tokenizer_special_id(t, pad, "padding", 0, &t->pad_id, d) ||
        tokenizer_special_id(t, mask, "mask", 0, &t->mask_id, d)) {
        tokenizer_free(t);
        return -1;
    }
    return 0;
}

void tokenizer_output_init(tokenizer_output *o) { memset(o, 0, sizeof *o); }

void tokenizer_output_free(tokenizer_output *o) {
    free(o->ids);
    free(o->type_ids);
    free(o->tokens);
    free(o->pair_ids);
    free(o->cps);
    free(o->words);
    memset(o, 0, sizeof *o);
}

/* ---- the per-call machinery ---- */

/* Where finished tokens (or, for split_words, words) go. */
typedef struct tokenizer_sink {
    const tokenizer *t;
    tokenizer_output *o;
    int32_t **ids;       /* &o->ids (text) or &o->pair_ids (pair) */
    size_t *cap;
    size_t base;         /* index of the first token of this sequence */
    size_t n;            /* tokens so far */
    int words;           /* collect words instead of ids */
    int oom;
} tokenizer_sink;

static void tokenizer_sink_push(tokenizer_sink *s, int32_t id) {
    if (s->base + s->n >= *s->cap) {
        size_t nc = *s->cap ? *s->cap * 2 : 256;
        int32_t *p = realloc(*s->ids, nc * sizeof *p);
        if (!p) {
            s->oom = 1;
            return;
        }
        *s->ids = p;
        *s->cap = nc;
    }
    (*s->ids)[s->base + s->n++] = id;
}

static void tokenizer_sink_word(tokenizer_sink *s, const char *w, size_t n) {
    tokenizer_output *o = s->o;
    if (o->words_len + n + 2 > o->words_cap) {
        size_t nc = o->words_cap ? o->words_cap : 256;
        while (o->words_len + n + 2 > nc) nc *= 2;
        char *p = realloc(o->words, nc);
        if (!p) {
            s->oom = 1;
            return;
        }
        o->words = p;
        o->words_cap = nc;
    }
    if (o->words_len) o->words[o->words_len++] = ' ';
    memcpy(o->words + o->words_len, w, n);
    o->words_len += n;
    o->words[o->words_len] = 0;
}

/* A word being collected: UTF-8 bytes and the byte offset of each character. */
typedef struct tokenizer_word {
    char b[4 * TOKENIZER_MAX_INPUT_CHARS_PER_WORD + 4];
    uint16_t at[TOKENIZER_MAX_INPUT_CHARS_PER_WORD + 2];   /* at[i] = start of char i; at[nch] = nb */
    size_t nb, nch;
    int overlong;        /* more than 100 characters: [UNK] whatever it holds */
} tokenizer_word;

/* Greedy longest-match-first, as tokenizers' WordPiece::tokenize. */
static void tokenizer_wordpiece(tokenizer_sink *s, const tokenizer_word *w) {
    const tokenizer *t = s->t;
    if (w->overlong) {
        tokenizer_sink_push(s, t->unk_id);
        return;
    }
    size_t mark = s->n;
    size_t si = 0;                               /* character index of the piece start */
    uint32_t hs[TOKENIZER_MAX_INPUT_CHARS_PER_WORD + 2];
    const uint32_t cont_basis = tokenizer_hash(FNV_BASIS, "##", 2);
    while (si < w->nch) {
        size_t start = w->at[si], pre = si ? 2 : 0;
        size_t ei = w->nch;
        /* No vocabulary entry is longer than max_token_bytes: skip hopeless ends. */
        while (ei > si + 1 && w->at[ei] - start + pre > t->max_token_bytes) ei--;
        /* FNV-1a runs forwards, so one pass gives the hash of every candidate end. */
        uint32_t h = si ? cont_basis : FNV_BASIS;
        for (size_t e = si + 1; e <= ei; e++) {
            h = tokenizer_hash(h, w->b + w->at[e - 1], w->at[e] - w->at[e - 1]);
            hs[e] = h;
        }
        int32_t id = -1;
        for (; ei > si; ei--) {
            id = tokenizer_lookup_hashed(t, hs[ei], si > 0, w->b + start, w->at[ei] - start);
            if (id >= 0) break;
        }
        if (id < 0) {
            s->n = mark;
            tokenizer_sink_push(s, t->unk_id);
            return;
        }
        tokenizer_sink_push(s, id);
        si = ei;
    }
}

static void tokenizer_word_flush(tokenizer_sink *s, tokenizer_word *w) {
    if (w->nch == 0 && !w->overlong) return;
    if (s->words) {
        if (w->overlong) tokenizer_sink_word(s, "<overlong>", 10);   /* only split_words sees this */
        else tokenizer_sink_word(s, w->b, w->nb);
    } else {
        tokenizer_wordpiece(s, w);
    }
    w->nb = w->nch = 0;
    w->overlong = 0;
}

static void tokenizer_word_add(tokenizer_word *w, uint32_t c) {
    if (w->overlong) return;
    if (w->nch == TOKENIZER_MAX_INPUT_CHARS_PER_WORD) {
        w->overlong = 1;
        return;
    }
    w->at[w->nch++] = (uint16_t)w->nb;
    w->nb += utf8proc_encode_char((utf8proc_int32_t)c, (utf8proc_uint8_t *)w->b + w->nb);
    w->at[w->nch] = (uint16_t)w->nb;
}

/*
 * Strict UTF-8 decoding of s[i..n): returns the length (1-4) and the code
 * point, or 0 for an invalid sequence.  Every continuation byte is checked
 * against n before it is read.
 */
static size_t tokenizer_utf8_decode(const uint8_t *s, size_t n, size_t i, uint32_t *cp) {
    uint8_t b = s[i];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t c;
    if (b >= 0xC2 && b <= 0xDF) len = 2, c = b & 0x1F;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, c = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;                 /* overlong */
        if (b == 0xED) hi = 0x9F;                 /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, c = b & 0x07;
        if (b == 0xF0) lo = 0x90;                 /* overlong */
        if (b == 0xF4) hi = 0x8F;                 /* above U+10FFFF */
    } else
        return 0;
    if (n - i < len) return 0;
    for (size_t k = 1; k < len; k++) {
        uint8_t x = s[i + k];
        if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF)) return 0;
        c = (c << 6) | (x & 0x3F);
    }
    *cp = c;
    return len;
}

static int tokenizer_cps_reserve(tokenizer_output *o, size_t need) {
    if (need <= o->cps_cap) return 0;
    size_t nc = o->cps_cap ? o->cps_cap : 1024;
    while (nc < need) nc *= 2;
    uint32_t *p = realloc(o->cps, nc * sizeof *p);
    if (!p) return -1;
    o->cps = p;
    o->cps_cap = nc;
    return 0;
}

/*
 * Stage A + B on one stretch of text between special tokens.  `off` is the
 * stretch's byte offset in the caller's text, for error messages.
 */
/* A message naming the invalid UTF-8 at p[i] (up to four bytes in hex). */
static int tokenizer_bad_utf8(const uint8_t *p, size_t n, size_t i, size_t off, const char *what, diag *d) {
    char bytes[32] = "";
    size_t m = n - i < 4 ? n - i : 4;
    for (size_t k = 0; k < m; k++)
        snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), "%s%02X", k ? " " : "", p[i + k]);
    return diag_set(d, DIAG_CODE_INPUT, "%s is not valid UTF-8 at byte %zu (bytes %s)", what, off + i, bytes);
}

/* One non-ASCII code point of stage A into o->cps at *nc. */
static void tokenizer_stage_a_char(const tokenizer *t, tokenizer_output *o, uint32_t c, size_t *nc, int *reorder) {
    const utf8proc_property_t *pr = utf8proc_get_property((utf8proc_int32_t)c);
    uint8_t k = tokenizer_class(c, (utf8proc_category_t)pr->category);
    if (k & CLS_REMOVED) return;
    if (k & CLS_SPACE) {
        o->cps[(*nc)++] = ' ';
        return;
    }
    int cjk = t->chinese && tokenizer_is_chinese(c);
    if (cjk) o->cps[(*nc)++] = ' ';
    if (t->strip && c != HF_NFD_KEPT) {
        /* utf8proc_decompose_char gives the character itself when it has no canonical decomposition. */
        int boundclass = 0;
        utf8proc_ssize_t m = utf8proc_decompose_char((utf8proc_int32_t)c, (utf8proc_int32_t *)o->cps + *nc,
                                                     (utf8proc_ssize_t)(o->cps_cap - *nc - 1), UTF8PROC_DECOMPOSE,
                                                     &boundclass);
        if (m <= 0 || (size_t)m > o->cps_cap - *nc - 1) o->cps[(*nc)++] = c; /* cannot happen: max is 4 */
        else *nc += (size_t)m;
        *reorder = 1;
    } else {
        o->cps[(*nc)++] = c;
        if (pr->combining_class) *reorder = 1;
    }
    if (cjk) o->cps[(*nc)++] = ' ';
}

/* Stage A: decode, clean, space CJK, decompose, into o->cps; *nc code points. */
static int tokenizer_stage_a(const tokenizer *t, tokenizer_output *o, const uint8_t *p, size_t n, size_t off,
                             const char *what, size_t *nc, int *reorder, diag *d) {
    *nc = 0;
    *reorder = 0;
    for (size_t i = 0; i < n;) {
        if (*nc + 8 > o->cps_cap && tokenizer_cps_reserve(o, *nc + 8 + (n - i) * 2))
            return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for %zu bytes of text", n);
        uint32_t c = p[i];
        if (c < 0x80) {
            i++;
            uint8_t k = ascii_class[c];
            if (!(k & CLS_REMOVED)) o->cps[(*nc)++] = (k & CLS_SPACE) ? ' ' : c;
            continue;
        }
        size_t l = tokenizer_utf8_decode(p, n, i, &c);
        if (!l) return tokenizer_bad_utf8(p, n, i, off, what, d);
        i += l;
        tokenizer_stage_a_char(t, o, c, nc, reorder);
    }
    return 0;
}

/*
 * Canonical ordering (part of NFD): a stable sort by combining class
 * inside each run of marks.  Only order among marks that survive the
 * Mn filter can change the result, but the filter must not run first:
 * a removed class-0 mark separates runs.
 */
static void tokenizer_canonical_order(uint32_t *cps, size_t nc) {
    for (size_t i = 1; i < nc; i++) {
        uint32_t c = cps[i];
        if (c < 0x300) continue;
        int cc = utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
        if (!cc) continue;
        size_t j = i;
        while (j > 0 && cps[j - 1] >= 0x300 && utf8proc_get_property((utf8proc_int32_t)cps[j - 1])->combining_class > cc) {
            cps[j] = cps[j - 1];
            j--;
        }
        cps[j] = c;
    }
}

/* Stage B: drop marks, lowercase, split words, WordPiece. */
static void tokenizer_stage_b(tokenizer_sink *s, const uint32_t *cps, size_t nc) {
    const tokenizer *t = s->t;
    tokenizer_word w;
    w.nb = w.nch = 0;
    w.overlong = 0;
    for (size_t i = 0; i < nc; i++) {
        uint32_t c = cps[i], lc[2];
        int nl = 1;
        if (c < 0x80) {
            if (t->lower && c >= 'A' && c <= 'Z') c += 32;
            lc[0] = c;
        } else {
            const utf8proc_property_t *pr = utf8proc_get_property((utf8proc_int32_t)c);
            if (t->strip && tokenizer_is_mn(c, (utf8proc_category_t)pr->category)) continue;
            if (t->lower) nl = tokenizer_lower(c, lc);
            else lc[0] = c;
        }
        for (int j = 0; j < nl; j++) {
            c = lc[j];
            uint8_t k = c < 0x80 ? ascii_class[c]
                                 : tokenizer_class(c, (utf8proc_category_t)utf8proc_get_property((utf8proc_int32_t)c)->category);
            if (k & (CLS_SPACE | CLS_REMOVED)) {
                tokenizer_word_flush(s, &w);
            } else if (k & CLS_PUNCT) {
                tokenizer_word_flush(s, &w);
                tokenizer_word_add(&w, c);
                tokenizer_word_flush(s, &w);
            } else {
                tokenizer_word_add(&w, c);
            }
        }
    }
    tokenizer_word_flush(s, &w);
}

static int tokenizer_piece(tokenizer_sink *s, const uint8_t *p, size_t n, size_t off,
                           const char *what, diag *d) {
    size_t nc;
    int reorder;
    if (tokenizer_stage_a(s->t, s->o, p, n, off, what, &nc, &reorder, d)) return -1;
    if (s->t->strip && reorder) tokenizer_canonical_order(s->o->cps, nc);
    tokenizer_stage_b(s, s->o->cps, nc);
    if (s->oom) return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    return 0;
}

/* Split at literal special tokens, tokenize the stretches between. */
static int tokenizer_sequence(tokenizer_sink *s, const char *text, size_t len, const char *what, diag *d) {
    const tokenizer *t = s->t;
    const uint8_t *p = (const uint8_t *)text;
    size_t from = 0;
    for (size_t i = 0; i < len; i++) {
        if (!t->special_first[p[i]]) continue;
        int best = -1;
        for (int k = 0; k < t->nspecial; k++)
            if (t->special_len[k] <= len - i && memcmp(p + i, t->special[k], t->special_len[k]) == 0 &&
                (best < 0 || t->special_len[k] > t->special_len[best]))
                best = k;
        if (best < 0) continue;
        if (i > from && tokenizer_piece(s, p + from, i - from, from, what, d)) return -1;
        if (s->words) tokenizer_sink_word(s, t->special[best], t->special_len[best]);
        else tokenizer_sink_push(s, t->special_id[best]);
        i += t->special_len[best] - 1;
        from = i + 1;
    }
    if (len > from && tokenizer_piece(s, p + from, len - from, from, what, d)) return -1;
    if (s->oom) return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    return 0;
}

int tokenizer_split_words(const tokenizer *t, const char *text, size_t len, tokenizer_output *out,
                          diag *d) {
    tokenizer_sink s = {.t = t, .o = out, .ids = &out->ids, .cap = &out->cap, .words = 1};
    out->words_len = 0;
    if (out->words) out->words[0] = 0;
    if (!text) len = 0;
    if (tokenizer_sequence(&s, text ? text : "", len, "text", d)) return -1;
    if (!out->words && (tokenizer_sink_word(&s, "", 0), s.oom))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    return 0;
}

static int tokenizer_output_reserve(tokenizer_output *o, size_t need) {
    if (need > o->cap) {
        int32_t *ids = realloc(o->ids, need * sizeof *ids);
        if (!ids) return -1;
        o->ids = ids;
        o->cap = need;
    }
    if (need > o->aux_cap) {
        size_t nc = o->cap;
        int32_t *ty = realloc(o->type_ids, nc * sizeof *ty);
        if (!ty) return -1;
        o->type_ids = ty;
        const char **tk = realloc(o->tokens, nc * sizeof *tk);
        if (!tk) return -1;
        o->tokens = tk;
        o->aux_cap = nc;
    }
    return 0;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, const char *pair,
                     size_t pair_len, int64_t max_len, tokenizer_output *out, diag *d) {
    out->len = out->len_a = out->len_b = out->full_a = out->full_b = 0;
    out->truncated = 0;
    /* transformers' fast tokenizer tests `if text_pair`: an empty pair is no pair (the slow one adds "[SEP]"). */
    if (pair && pair_len == 0) pair = NULL;
    size_t nspecial = pair ? 3 : 2;
    if (max_len == 0) max_len = t->model_max_length;
    if (max_len > 0 && (uint64_t)max_len < nspecial)
        return diag_set(d, DIAG_CODE_INPUT, "tokenizer: max_len %lld leaves no room for the %zu special tokens",
                        (long long)max_len, nspecial);
    if (!text) len = 0;

    /* The text's tokens go straight to ids[1..]; the pair's to pair_ids. */
    tokenizer_sink a = {.t = t, .o = out, .ids = &out->ids, .cap = &out->cap, .base = 1};
    if (tokenizer_sequence(&a, text ? text : "", len, "text", d)) return -1;
    tokenizer_sink b = {.t = t, .o = out, .ids = &out->pair_ids, .cap = &out->pair_cap};
    if (pair && tokenizer_sequence(&b, pair, pair_len, "pair text", d)) return -1;

    /* tokenizers' truncate_encodings, LongestFirst, on the budget left by the specials. */
    size_t n1 = a.n, n2 = b.n;
    out->full_a = n1;
    out->full_b = n2;
    if (max_len > 0 && n1 + n2 + nspecial > (uint64_t)max_len) {
        size_t m = (size_t)max_len - nspecial;
        out->truncated = 1;
        if (!pair) {
            n1 = m;
        } else {
            size_t s1 = n1 < n2 ? n1 : n2, s2;
            if (s1 > m) s2 = s1;
            else s2 = s1 > m - s1 ? s1 : m - s1;
            if (s1 + s2 > m) {
                s1 = m / 2;
                s2 = s1 + m % 2;
            }
            /* s1 is the budget of the shorter one, s2 of the longer (the first if equal). */
            size_t b1 = a.n > b.n ? s2 : s1, b2 = a.n > b.n ? s1 : s2;
            if (n1 > b1) n1 = b1;
            if (n2 > b2) n2 = b2;
        }
    }
    size_t total = n1 + n2 + nspecial;
    if (tokenizer_output_reserve(out, total))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for %zu tokens", total);
    out->ids[0] = t->cls_id;
    out->ids[1 + n1] = t->sep_id;
    for (size_t i = 0; i < n1 + 2; i++) out->type_ids[i] = 0;
    if (pair) {
        if (n2) memcpy(out->ids + n1 + 2, out->pair_ids, n2 * sizeof *out->ids);
        out->ids[n1 + 2 + n2] = t->sep_id;
        for (size_t i = n1 + 2; i < total; i++) out->type_ids[i] = 1;
    }
    for (size_t i = 0; i < total; i++) out->tokens[i] = t->tok[out->ids[i]];
    out->len = total;
    out->len_a = n1;
    out->len_b = n2;
    return 0;
}
