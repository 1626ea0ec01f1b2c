/*
 * tok_unicode — characters as Hugging Face `tokenizers` 0.21 classifies them.
 *
 * utf8proc 2.8 (Unicode 15.0) supplies categories, combining classes, NFD,
 * case and grapheme boundaries.  `tokenizers` mixes three Unicode versions
 * of its own — the `unicode_categories` crate (old: it knows neither the
 * Cf/Mn/P* characters added since Unicode ~9 nor category changes like
 * U+1734 Mn->Mc), the `unicode-normalization-alignments` crate for NFD
 * (which does not decompose U+11938), and Rust's std for lowercasing and
 * whitespace (Unicode 16: it lowercases U+1C89, U+A7CB...).  The hf_*
 * tables below are exactly the differences, found by sweeping every code
 * point through both (tools/make_tokenizer_goldens.py --tables prints them
 * again); the tests' sweeps keep them honest.  HF removes characters of
 * category Cc, Cf and Co but NOT unassigned (Cn) ones, whose category its
 * table cannot know.
 *
 * GPT-2's pre-tokenisation regex needs \p{L}, \p{N} and \s (Oniguruma's
 * Unicode classes: the general categories and White_Space), the byte-level
 * and Metaspace stages need Rust's is_whitespace (White_Space too), and
 * the added-token matcher needs the regex class \w.
 */
#include <utf8proc.h>

#include "tok_internal.h"

typedef struct tok_range {
    uint32_t lo, hi;
} tok_range;

/* utf8proc says Cf, the tokenizers table does not know them: kept. */
static const tok_range hf_kept_format[4] = {
    {0x890, 0x891}, {0x8E2, 0x8E2}, {0x110CD, 0x110CD}, {0x13430, 0x1343F},
};
/* Nonspacing marks to HF but not to utf8proc (U+1734, Mn before Unicode 14). */
static const tok_range hf_mn_extra[1] = {
    {0x1734, 0x1734},
};
/* utf8proc's Mn that HF's table lacks (added after its Unicode version): kept by strip_accents. */
static const tok_range hf_mn_missing[91] = {
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
static const tok_range hf_punct_extra[2] = {
    {0x166D, 0x166D}, {0x111C9, 0x111C9},
};
/* utf8proc's P* that HF's table lacks: not split off. */
static const tok_range hf_punct_missing[32] = {
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

static int tok_range_has(const tok_range *r, size_t n, uint32_t c) {
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
static uint8_t tok_class_of(uint32_t c, utf8proc_category_t cat) {
    if (c == 0xFFFDu) return CLS_REMOVED;   /* the replacement character (So), removed by HF's clean-up */
    switch (cat) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
        return CLS_REMOVED;
    case UTF8PROC_CATEGORY_CF:
        return tok_range_has(hf_kept_format, NELEM(hf_kept_format), c) ? 0 : CLS_REMOVED;
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
        return tok_range_has(hf_punct_missing, NELEM(hf_punct_missing), c) ? 0 : CLS_PUNCT;
    case UTF8PROC_CATEGORY_SO:
    case UTF8PROC_CATEGORY_MN:
        return tok_range_has(hf_punct_extra, NELEM(hf_punct_extra), c) ? CLS_PUNCT : 0;
    default:
        return 0;
    }
}

/* Nonspacing mark as HF's strip_accents sees it. */
static int tok_is_mn_cat(uint32_t c, utf8proc_category_t cat) {
    if (cat == UTF8PROC_CATEGORY_MN) return !tok_range_has(hf_mn_missing, NELEM(hf_mn_missing), c);
    if (cat == UTF8PROC_CATEGORY_MC) return tok_range_has(hf_mn_extra, NELEM(hf_mn_extra), c);
    return 0;
}

/* HF's CJK ranges (tokenizers' is_chinese_char: note 0x2B920, where Python's slow tokenizer says 0x2B820). */
int tok_is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Full lowercase of a non-ASCII code point into out[0..2); returns the count. */
static int tok_lower_one(uint32_t c, uint32_t out[2]) {
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


/*
 * Strict UTF-8 decoding of s[i..n): returns the length (1-4) and the code
 * point, or 0 for an invalid sequence.  Every continuation byte is checked
 * against n before it is read.
 */
size_t tok_utf8_decode(const uint8_t *s, size_t n, size_t i, uint32_t *cp) {
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


uint8_t tok_bert_class(uint32_t c) {
    if (c < 0x80) return ascii_class[c];
    return tok_class_of(c, (utf8proc_category_t)utf8proc_get_property((utf8proc_int32_t)c)->category);
}

int tok_is_mn(uint32_t c) {
    if (c < 0x300) return 0;
    return tok_is_mn_cat(c, (utf8proc_category_t)utf8proc_get_property((utf8proc_int32_t)c)->category);
}

int tok_combining_class(uint32_t c) {
    return c < 0x300 ? 0 : utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

int tok_lower(uint32_t c, uint32_t out[3]) {
    if (c < 0x80) {
        out[0] = c >= 'A' && c <= 'Z' ? c + 32 : c;
        return 1;
    }
    return tok_lower_one(c, out);
}

int tok_nfd(uint32_t c, uint32_t *out, int cap) {
    if (c < 0xC0 || c == HF_NFD_KEPT) {
        out[0] = c;
        return 1;
    }
    int boundclass = 0;
    utf8proc_ssize_t m = utf8proc_decompose_char((utf8proc_int32_t)c, (utf8proc_int32_t *)out, cap,
                                                 UTF8PROC_DECOMPOSE, &boundclass);
    if (m <= 0 || m > cap) {     /* cannot happen: a canonical decomposition has at most 4 characters */
        out[0] = c;
        return 1;
    }
    return (int)m;
}

int tok_is_whitespace(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 9 && c <= 13);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

int tok_is_word(uint32_t c) {
    if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (c == 0x200C || c == 0x200D) return 1;
    switch (utf8proc_get_property((utf8proc_int32_t)c)->category) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

int tok_gpt2_class(uint32_t c) {
    if (c < 0x80) {
        if ((c | 32) >= 'a' && (c | 32) <= 'z') return TOK_G_LETTER;
        if (c >= '0' && c <= '9') return TOK_G_NUMBER;
        return tok_is_whitespace(c) ? TOK_G_SPACE : TOK_G_OTHER;
    }
    if (tok_is_whitespace(c)) return TOK_G_SPACE;
    switch (utf8proc_get_property((utf8proc_int32_t)c)->category) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return TOK_G_LETTER;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return TOK_G_NUMBER;
    default:
        return TOK_G_OTHER;
    }
}

int tok_grapheme_break(uint32_t a, uint32_t b, int32_t *state) {
    return utf8proc_grapheme_break_stateful((utf8proc_int32_t)a, (utf8proc_int32_t)b, state) ? 1 : 0;
}

size_t tok_utf8_encode(uint32_t c, char out[4]) {
    return (size_t)utf8proc_encode_char((utf8proc_int32_t)c, (utf8proc_uint8_t *)out);
}
