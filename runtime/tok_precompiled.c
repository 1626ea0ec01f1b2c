/*
 * tok_precompiled — SentencePiece's normaliser, from its compiled map.
 *
 * A SentencePiece model (and so an XLM-R tokenizer.json, as `Precompiled`)
 * carries its normalisation rules (nmt_nfkc for XLM-R) compiled into one
 * byte string: a little-endian u32 with the size of a Darts-clone double
 * array, the array's 32-bit units, then the replacement strings, each
 * ending in NUL.  A key is the UTF-8 of a character or a short sequence;
 * its value is the offset of its replacement in the strings.
 *
 * Hugging Face applies it grapheme by grapheme (extended clusters): a
 * cluster of fewer than 6 bytes is looked up whole, else (or when that
 * fails) each character alone.  A lookup is a common-prefix search that
 * takes the *shortest* key that starts the chunk and replaces the whole
 * chunk with that key's string — which drops the rest of a cluster like
 * "Ａ" + U+0301 (to "A").  HF's source says this seems broken and must not
 * be changed; we do the same, and record the alignment changes exactly as
 * its `replace` helper does (including the quirk that an empty
 * replacement charges its removal to the previous character).
 *
 * The map comes from a plan, which may be hostile: every unit index is
 * checked against the array before it is read, and a value that does not
 * point at the start of a character in the strings is no match.
 */
#include <string.h>

#include "tok_internal.h"

typedef struct tok_pc {
    const uint8_t *units;       /* 4-byte little-endian units */
    size_t nunits;
    const char *str;            /* the replacement strings */
    size_t nstr;
} tok_pc;

static uint32_t tok_pc_unit(const tok_pc *m, size_t i) {
    const uint8_t *p = m->units + 4 * i;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int tok_pc_open(tok_pc *m, const uint8_t *data, uint32_t len) {
    if (len < 4) return -1;
    uint32_t size = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    if (size % 4 || size < 4 || size > len - 4) return -1;
    m->units = data + 4;
    m->nunits = size / 4;
    m->str = (const char *)data + 4 + size;
    m->nstr = len - 4 - size;
    return 0;
}

/* HF's NormalizedString::transform_range over units: see tok_internal.h. */
int tok_transform(const tok_unit *old, size_t nold, const tok_change *ch, size_t nch, size_t initial_offset,
                  tok_units *out) {
    out->n = 0;
    if (tok_reserve((void **)&out->u, &out->cap, nch, sizeof *out->u)) return -1;
    size_t pos = initial_offset;
    uint32_t base = nold ? old[0].start : 0;
    for (size_t i = 0; i < nch; i++) {
        tok_unit a = {ch[i].c, base, base};
        if (ch[i].change > 0) {
            if (pos >= 1 && pos - 1 < nold) a = (tok_unit){ch[i].c, old[pos - 1].start, old[pos - 1].end};
        } else {
            if (pos < nold) a = (tok_unit){ch[i].c, old[pos].start, old[pos].end};
            pos += 1 + (size_t)(-(int64_t)ch[i].change);
        }
        out->u[out->n++] = a;
    }
    return 0;
}

/* The replacement of the shortest key starting key[0..n), or NULL. */
static const char *tok_pc_lookup(const tok_pc *m, const uint8_t *key, size_t n, size_t *out_len) {
    size_t pos = 0;
    uint32_t unit = tok_pc_unit(m, 0);
#define TOK_PC_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    pos ^= TOK_PC_OFFSET(unit);
    for (size_t i = 0; i < n && key[i]; i++) {
        pos ^= key[i];
        if (pos >= m->nunits) return NULL;
        unit = tok_pc_unit(m, pos);
        if ((unit & ((1u << 31) | 0xFF)) != key[i]) return NULL;
        pos ^= TOK_PC_OFFSET(unit);
        if (!((unit >> 8) & 1)) continue;
        if (pos >= m->nunits) return NULL;
        uint32_t v = tok_pc_unit(m, pos) & ((1u << 31) - 1);
        if (v >= m->nstr || ((uint8_t)m->str[v] & 0xC0) == 0x80) return NULL;
        const char *s = m->str + v, *nul = memchr(s, 0, m->nstr - v);
        *out_len = nul ? (size_t)(nul - s) : m->nstr - v;
        return s;
    }
#undef TOK_PC_OFFSET
    return NULL;
}

/* HF's `replace`: the new characters of old units [b, e), with their changes, onto the list. */
static int tok_pc_replace(const char *s, size_t n, size_t old_count, tok_change **ch, size_t *nch, size_t *cap) {
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = tok_utf8_decode((const uint8_t *)s, n, i, &c);
        if (!l) break;   /* cannot happen: the strings were checked */
        i += l;
        if (tok_reserve((void **)ch, cap, *nch + 1, sizeof **ch)) return -1;
        (*ch)[(*nch)++] = (tok_change){c, 0};
        count++;
    }
    if (count > old_count) {
        for (size_t k = 0; k < count - old_count; k++) (*ch)[*nch - 1 - k].change = 1;
    } else if (count < old_count && *nch > 0) {
        (*ch)[*nch - 1].change -= (int32_t)(old_count - count);
    }
    return 0;
}

/* One grapheme cluster, units [b, e). */
static int tok_pc_cluster(const tok_pc *m, const tok_unit *u, size_t b, size_t e, tok_change **ch, size_t *nch,
                          size_t *cap, int *modified) {
    char buf[32];
    size_t bl = 0, rl;
    for (size_t i = b; i < e && bl + 4 <= sizeof buf; i++) bl += tok_utf8_encode(u[i].c, buf + bl);
    const char *r;
    if (e - b <= 5 && bl < 6 && (r = tok_pc_lookup(m, (const uint8_t *)buf, bl, &rl))) {
        *modified = 1;
        return tok_pc_replace(r, rl, e - b, ch, nch, cap);
    }
    for (size_t i = b; i < e; i++) {
        size_t l = tok_utf8_encode(u[i].c, buf);
        if ((r = tok_pc_lookup(m, (const uint8_t *)buf, l, &rl))) {
            *modified = 1;
            if (tok_pc_replace(r, rl, 1, ch, nch, cap)) return -1;
            continue;
        }
        if (tok_reserve((void **)ch, cap, *nch + 1, sizeof **ch)) return -1;
        (*ch)[(*nch)++] = (tok_change){u[i].c, 0};
    }
    return 0;
}

int tok_precompiled_apply(const uint8_t *data, uint32_t len, const tok_units *in, tok_units *out, tok_change **ch,
                          size_t *ch_cap) {
    tok_pc m;
    out->n = 0;
    if (tok_pc_open(&m, data, len)) return -1;   /* checked when the tokenizer was built */
    size_t nch = 0;
    int modified = 0;
    int32_t state = 0;
    for (size_t b = 0; b < in->n;) {
        size_t e = b + 1;
        while (e < in->n && !tok_grapheme_break(in->u[e - 1].c, in->u[e].c, &state)) e++;
        if (tok_pc_cluster(&m, in->u, b, e, ch, &nch, ch_cap, &modified)) return -1;
        b = e;
    }
    if (!modified) {
        if (tok_reserve((void **)&out->u, &out->cap, in->n, sizeof *out->u)) return -1;
        if (in->n) memcpy(out->u, in->u, in->n * sizeof *in->u);
        out->n = in->n;
        return 0;
    }
    return tok_transform(in->u, in->n, *ch, nch, 0, out);
}
