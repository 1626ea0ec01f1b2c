/*
 * tokenizer — the pipeline: a description in, ids, types and offsets out.
 *
 * tokenizer_init turns a checked description (tokdesc.h) into lookup
 * structures: the vocabulary's hash table, the one-character tokens of
 * every code point below U+0800 (BPE's starting symbols without a hash),
 * BPE's merge table, Unigram's prefix set and minimum score, the byte
 * tokens "<0xXX>", and the added tokens in two sets (raw and normalised;
 * the latter's patterns are themselves normalised, as HF does).
 *
 * tokenizer_encode runs each of the (one or two) texts through the stages
 * of tok_internal.h into a list of tokens with byte spans, truncates the
 * two lists by HF's 'longest_first' rule on the budget the template leaves,
 * and writes the template: special tokens with offsets (0, 0), the texts'
 * tokens with their type ids.  RoBERTa's post-processor trims whitespace
 * out of the offsets (trim_offsets), which depends on each token's text,
 * so it happens as tokens are produced.
 */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- building ---- */

void tokenizer_free(tokenizer *t) {
    free(t->id_text);
    free(t->id_len);
    tokmap_free(&t->vocab);
    tok_merges_free(&t->merges);
    free(t->prefix_hash);
    tok_added_free(&t->raw);
    tok_added_free(&t->norm);
    memset(t, 0, sizeof *t);
}

/* Every prefix of every vocabulary entry, at character boundaries (Unigram's walk stops where none goes on). */
static int tokenizer_prefixes(tokenizer *t) {
    size_t total = 0;
    for (int32_t i = 0; i < t->desc->nvocab; i++) total += t->id_len[i];
    size_t n = 16;
    while (n < total * 2) n *= 2;
    if (!(t->prefix_hash = calloc(n, sizeof *t->prefix_hash))) return -1;
    t->prefix_mask = (uint32_t)(n - 1);
    for (int32_t id = 0; id < t->desc->nvocab; id++) {
        const char *s = t->id_text[id];
        uint32_t h = TOKMAP_FNV_BASIS;
        for (uint32_t k = 0; k < t->id_len[id]; k++) {
            h = tokmap_hash(h, s + k, 1);
            if (k + 1 < t->id_len[id] && ((uint8_t)s[k + 1] & 0xC0) == 0x80) continue;
            uint32_t v = h ? h : 1, i = v & t->prefix_mask;
            while (t->prefix_hash[i] && t->prefix_hash[i] != v) i = (i + 1) & t->prefix_mask;
            t->prefix_hash[i] = v;
        }
    }
    return 0;
}

/* The model's tables: one-character tokens, byte tokens, merges, scores. */
static int tokenizer_model_tables(tokenizer *t) {
    const tokdesc *dsc = t->desc;
    for (uint32_t c = 0; c < 0x800; c++) {
        char b[4];
        t->char_id[c] = tokmap_get(&t->vocab, b, tok_utf8_encode(c, b));
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = tokmap_get(&t->vocab, name, 6);
    }
    if (dsc->model == TOKDESC_MODEL_BPE && tok_merges_build(&t->merges, dsc)) return -1;
    if (dsc->model == TOKDESC_MODEL_UNIGRAM) {
        t->min_score = dsc->scores[0];
        for (int32_t i = 1; i < dsc->nvocab; i++)
            if (dsc->scores[i] < t->min_score) t->min_score = dsc->scores[i];
        if (tokenizer_prefixes(t)) return -1;
    }
    return 0;
}

/* The ids' texts: the vocabulary, then the added tokens past it. */
static int tokenizer_ids(tokenizer *t) {
    const tokdesc *dsc = t->desc;
    t->nids = tokdesc_id_count(dsc);
    t->id_text = calloc((size_t)t->nids, sizeof *t->id_text);
    t->id_len = calloc((size_t)t->nids, sizeof *t->id_len);
    if (!t->id_text || !t->id_len) return -1;
    for (int32_t i = 0; i < dsc->nvocab; i++) t->id_text[i] = dsc->vocab_text + dsc->vocab_off[i];
    for (int i = 0; i < dsc->nadded; i++)
        if (dsc->added[i].id >= dsc->nvocab) t->id_text[dsc->added[i].id] = dsc->added[i].content;
    for (int32_t i = 0; i < t->nids; i++) {
        t->id_len[i] = (uint32_t)strlen(t->id_text[i]);
        if (i < dsc->nvocab && t->id_len[i] > t->max_token_bytes) t->max_token_bytes = t->id_len[i];
    }
    return tokmap_init(&t->vocab, t->id_text, t->id_len, dsc->nvocab);
}

static int tokenizer_normalize_all(const tokdesc *dsc, tok_scratch *s);

/* The two added-token sets; the normalised one's patterns go through the normalisers first. */
static int tokenizer_added(tokenizer *t) {
    const tokdesc *dsc = t->desc;
    if (tok_added_build(&t->raw, dsc, 0, NULL)) return -1;
    tok_units *pats = calloc((size_t)dsc->nadded + 1, sizeof *pats);
    tok_scratch s;
    memset(&s, 0, sizeof s);
    int rc = pats ? 0 : -1;
    for (int i = 0; !rc && i < dsc->nadded; i++) {
        if (!(dsc->added[i].flags & TOKDESC_ADDED_NORMALIZED)) continue;
        const char *c = dsc->added[i].content;
        size_t n = strlen(c);
        s.u.n = 0;
        for (size_t k = 0; !rc && k < n;) {
            uint32_t cp;
            size_t l = tok_utf8_decode((const uint8_t *)c, n, k, &cp);
            rc = tok_units_push(&s.u, cp, (uint32_t)k, (uint32_t)(k + l));
            k += l;
        }
        if (!rc) rc = tokenizer_normalize_all(dsc, &s);
        if (!rc) {
            pats[i] = s.u;
            memset(&s.u, 0, sizeof s.u);
        }
    }
    if (!rc) rc = tok_added_build(&t->norm, dsc, 1, pats);
    for (int i = 0; pats && i < dsc->nadded; i++) free(pats[i].u);
    free(pats);
    free(s.u.u);
    free(s.tmp.u);
    free(s.ch);
    return rc;
}

int tokenizer_init(tokenizer *t, const tokdesc *desc, diag *d) {
    memset(t, 0, sizeof *t);
    if (!desc || !desc->present) return diag_set(d, DIAG_CODE_INPUT, "tokenizer: no tokenizer description");
    if (tokdesc_check(desc, d)) return -1;
    t->desc = desc;
    t->model = desc->model;
    t->model_max_length = desc->model_max_length > 0 ? desc->model_max_length : 0;
    t->unk_id = desc->unk_id;
    t->trim_offsets = (desc->flags & TOKDESC_FLAG_TRIM_OFFSETS) != 0;
    t->trim_prefix_space = (desc->flags & TOKDESC_FLAG_PREFIX_SPACE) != 0;
    if (tokenizer_ids(t) || tokenizer_model_tables(t) || tokenizer_added(t)) {
        tokenizer_free(t);
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for a %d-entry vocabulary",
                        (int)desc->nvocab);
    }
    return 0;
}

const char *tokenizer_id_to_token(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->nids && t->id_text[id] ? t->id_text[id] : "";
}

int32_t tokenizer_token_to_id(const tokenizer *t, const char *token, size_t len) {
    int32_t id = tokmap_get(&t->vocab, token, len);
    if (id >= 0) return id;
    for (int32_t i = t->desc->nvocab; i < t->nids; i++)
        if (t->id_len[i] == len && memcmp(t->id_text[i], token, len) == 0) return i;
    return -1;
}

size_t tokenizer_num_special(const tokenizer *t, int pair) {
    const tokdesc_item *it = pair ? t->desc->pair : t->desc->single;
    int n = pair ? t->desc->npair : t->desc->nsingle;
    size_t k = 0;
    for (int i = 0; i < n; i++) k += it[i].kind == TOKDESC_ITEM_SPECIAL;
    return k;
}

void tokenizer_output_init(tokenizer_output *o) { memset(o, 0, sizeof *o); }

void tokenizer_output_free(tokenizer_output *o) {
    free(o->ids);
    free(o->type_ids);
    free(o->tokens);
    free(o->offsets);
    free(o->special);
    free(o->seq);
    tok_scratch *s = o->scratch;
    if (s) {
        free(s->u.u);
        free(s->tmp.u);
        free(s->raw.u);
        free(s->pu.u);
        free(s->ptmp.u);
        free(s->pieces.s);
        free(s->words.s);
        free(s->tmpw.s);
        free(s->npieces.s);
        free(s->piece_ids);
        free(s->npiece_ids);
        free(s->ch);
        free(s->seq[0].p);
        free(s->seq[1].p);
        free(s->sym);
        free(s->heap);
        free(s->node);
        free(s->bytes);
        free(s->at);
        free(s->seg);
        free(s);
    }
    free(o->words);
    memset(o, 0, sizeof *o);
}

/* ---- one text through the stages ---- */

static int tokenizer_normalize_all(const tokdesc *dsc, tok_scratch *s) {
    for (int k = 0; k < dsc->nnormalizers; k++)
        if (tok_normalize_one(&dsc->normalizers[k], &s->u, &s->tmp, &s->ch, &s->ch_cap)) return -1;
    return 0;
}

/* RoBERTa's trim_offsets on one token whose text is s[0..n): HF's process_offsets. */
static void tokenizer_trim(const tokenizer *t, const char *s, size_t n, int first, tok_piece *p) {
    size_t lead = 0, trail = 0, i = 0, nch = 0, k;
    uint32_t c;
    uint32_t cs[64];
    while (i < n && nch < 64 && (k = tok_utf8_decode((const uint8_t *)s, n, i, &c))) {
        cs[nch++] = c;
        i += k;
    }
    while (lead < nch && (cs[lead] == 0x120 || tok_is_whitespace(cs[lead]))) lead++;
    while (trail < nch && (cs[nch - 1 - trail] == 0x120 || tok_is_whitespace(cs[nch - 1 - trail]))) trail++;
    if (lead && (first || p->start == 0) && t->trim_prefix_space && lead == 1) lead = 0;
    if (lead) p->start = p->start + lead < p->end ? p->start + (uint32_t)lead : p->end;
    if (trail && p->end >= trail) p->end = p->end - trail > p->start ? p->end - (uint32_t)trail : p->start;
}

/* Tokens from `from` on in seq: offsets trimmed when the post-processor asks. */
static void tokenizer_trim_from(const tokenizer *t, tok_pieces *seq, size_t from) {
    if (!t->trim_offsets) return;
    for (size_t i = from; i < seq->n; i++)
        tokenizer_trim(t, t->id_text[seq->p[i].id], t->id_len[seq->p[i].id], i == 0, &seq->p[i]);
}

/* An added token matched over units u[b, e): its text there decides the trimming. */
static int tokenizer_push_added(const tokenizer *t, tok_pieces *seq, int32_t id, const tok_unit *u, size_t b,
                                size_t e) {
    if (tok_pieces_push(seq, id, u[b].start, u[e - 1].end)) return -1;
    if (t->trim_offsets) {
        char buf[256];
        size_t n = 0;
        for (size_t i = b; i < e && n + 4 <= sizeof buf; i++) n += tok_utf8_encode(u[i].c, buf + n);
        tokenizer_trim(t, buf, n, seq->n == 1, &seq->p[seq->n - 1]);
    }
    return 0;
}

/* A message naming the invalid UTF-8 at p[i] (up to four bytes in hex). */
static int tokenizer_bad_utf8(const uint8_t *p, size_t n, size_t i, const char *what, diag *d) {
    char bytes[32] = "";
    size_t m = n - i < 4 ? n - i : 4;
    for (size_t k = 0; k < m; k++)
        snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), "%s%02X", k ? " " : "", p[i + k]);
    return diag_set(d, DIAG_CODE_INPUT, "%s is not valid UTF-8 at byte %zu (bytes %s)", what, i, bytes);
}

/* The input's characters with their bytes, into s->raw. */
static int tokenizer_decode(tok_scratch *s, const char *text, size_t len, const char *what, diag *d) {
    const uint8_t *p = (const uint8_t *)text;
    if (len >= UINT32_MAX) return diag_set(d, DIAG_CODE_INPUT, "%s is %zu bytes, more than the 4 GiB a text may have", what, len);
    s->raw.n = 0;
    if (tok_reserve((void **)&s->raw.u, &s->raw.cap, len + 1, sizeof *s->raw.u))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for %zu bytes of text", len);
    for (size_t i = 0; i < len;) {
        uint32_t c;
        size_t l = tok_utf8_decode(p, len, i, &c);
        if (!l) return tokenizer_bad_utf8(p, len, i, what, d);
        s->raw.u[s->raw.n++] = (tok_unit){c, (uint32_t)i, (uint32_t)(i + l)};
        i += l;
    }
    return 0;
}

/* Pre-tokenise s->u[b, e) and run the model over its words, into seq; -2: the model refused (d set). */
static int tokenizer_words_text(tokenizer_output *o, const tok_unit *u, size_t b, size_t e);

static int tokenizer_words(const tokenizer *t, tok_scratch *s, size_t b, size_t e, tok_pieces *seq,
                           tokenizer_output *wout, diag *d) {
    const tokdesc *dsc = t->desc;
    if (tok_reserve((void **)&s->pu.u, &s->pu.cap, e - b, sizeof *s->pu.u)) return -1;
    memcpy(s->pu.u, s->u.u + b, (e - b) * sizeof *s->pu.u);
    s->pu.n = e - b;
    s->words.n = 0;
    int rc = tok_spans_push(&s->words, 0, e - b, s->pu.u[0].start);
    for (int k = 0; !rc && k < dsc->npretokenizers; k++)
        rc = tok_pretok_one(&dsc->pretokenizers[k], &s->pu, &s->ptmp, &s->words, &s->tmpw);
    for (size_t k = 0; !rc && wout && k < s->words.n; k++)
        rc = tokenizer_words_text(wout, s->pu.u, s->words.s[k].b, s->words.s[k].e);
    for (size_t k = 0; !rc && !wout && k < s->words.n; k++) {
        size_t from = seq->n;
        const tok_span *wd = &s->words.s[k];
        if (t->model == TOKDESC_MODEL_WORDPIECE) rc = tok_wordpiece_word(t, s, s->pu.u, wd, seq);
        else if (t->model == TOKDESC_MODEL_BPE) rc = tok_bpe_word(t, s, s->pu.u, wd, seq);
        else if (tok_unigram_word(t, s, s->pu.u, wd, seq, d)) return -2;
        if (!rc) tokenizer_trim_from(t, seq, from);
    }
    return rc;
}

/* Appends the characters of u[b, e) as one word (split_words' output). */
static int tokenizer_words_text(tokenizer_output *o, const tok_unit *u, size_t b, size_t e) {
    if (tok_reserve((void **)&o->words, &o->words_cap, o->words_len + 4 * (e - b) + 2, 1)) return -1;
    if (o->words_len) o->words[o->words_len++] = ' ';
    for (size_t i = b; i < e; i++) o->words_len += tok_utf8_encode(u[i].c, o->words + o->words_len);
    o->words[o->words_len] = 0;
    return 0;
}

/* One piece between raw added tokens, raw units [b, e): normalised, split at normalised added tokens, words. */
static int tokenizer_piece(const tokenizer *t, tok_scratch *s, size_t b, size_t e, tok_pieces *seq,
                           tokenizer_output *wout, diag *d) {
    if (tok_reserve((void **)&s->u.u, &s->u.cap, e - b, sizeof *s->u.u)) return -1;
    memcpy(s->u.u, s->raw.u + b, (e - b) * sizeof *s->u.u);
    s->u.n = e - b;
    if (tokenizer_normalize_all(t->desc, s)) return -1;
    s->npieces.n = 0;
    if (tok_added_split(&t->norm, s->u.u, 0, s->u.n, &s->npieces, &s->npiece_ids, &s->npiece_ids_cap)) return -1;
    for (size_t i = 0; i < s->npieces.n; i++) {
        tok_span p = s->npieces.s[i];
        int rc;
        if (s->npiece_ids[i] < 0) rc = tokenizer_words(t, s, p.b, p.e, seq, wout, d);
        else if (wout) rc = tokenizer_words_text(wout, s->u.u, p.b, p.e);
        else rc = tokenizer_push_added(t, seq, s->npiece_ids[i], s->u.u, p.b, p.e);
        if (rc) return rc;
    }
    return 0;
}

/* Text k (0 the text, 1 the pair) into s->seq[k]; with wout, its words into wout instead. */
static int tokenizer_sequence(const tokenizer *t, tok_scratch *s, const char *text, size_t len, int k,
                              tokenizer_output *wout, diag *d) {
    tok_pieces *seq = &s->seq[k];
    seq->n = 0;
    if (tokenizer_decode(s, text, len, k ? "pair text" : "text", d)) return -1;
    s->pieces.n = 0;
    int rc = tok_added_split(&t->raw, s->raw.u, 0, s->raw.n, &s->pieces, &s->piece_ids, &s->piece_ids_cap);
    for (size_t i = 0; !rc && i < s->pieces.n; i++) {
        tok_span p = s->pieces.s[i];
        if (s->piece_ids[i] < 0) rc = tokenizer_piece(t, s, p.b, p.e, seq, wout, d);
        else if (wout) rc = tokenizer_words_text(wout, s->raw.u, p.b, p.e);
        else rc = tokenizer_push_added(t, seq, s->piece_ids[i], s->raw.u, p.b, p.e);
    }
    if (rc == -2) return -1;
    if (rc) return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    return 0;
}

static tok_scratch *tokenizer_scratch(tokenizer_output *o) {
    if (!o->scratch) o->scratch = calloc(1, sizeof *o->scratch);
    return o->scratch;
}

int tokenizer_split_words(const tokenizer *t, const char *text, size_t len, tokenizer_output *out, diag *d) {
    tok_scratch *s = tokenizer_scratch(out);
    if (!s || tok_reserve((void **)&out->words, &out->words_cap, 1, 1))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    out->words_len = 0;
    out->words[0] = 0;
    return tokenizer_sequence(t, s, text ? text : "", text ? len : 0, 0, out, d);
}

/* ---- truncation and the template ---- */

/*
 * tokenizers' truncate_encodings, LongestFirst, on the budget m the
 * template leaves: with n1 <= n2 the two lengths, the shorter keeps
 * min(n1, ...) and the longer gets max(n1, m - n1); if that still
 * overflows, ⌊m/2⌋ and ⌈m/2⌉ (equal lengths: the first is "the shorter").
 */
static void tokenizer_truncate(size_t *n1, size_t *n2, int pair, size_t m) {
    if (*n1 + *n2 <= m) return;
    if (!pair) {
        *n1 = m;
        return;
    }
    size_t a = *n1, b = *n2;
    size_t s1 = a < b ? a : b, s2;
    if (s1 > m) s2 = s1;
    else s2 = s1 > m - s1 ? s1 : m - s1;
    if (s1 + s2 > m) {
        s1 = m / 2;
        s2 = s1 + m % 2;
    }
    size_t b1 = a > b ? s2 : s1, b2 = a > b ? s1 : s2;
    if (*n1 > b1) *n1 = b1;
    if (*n2 > b2) *n2 = b2;
}

static int tokenizer_output_reserve(tokenizer_output *o, size_t need) {
    if (need <= o->cap) return 0;
    size_t nc = o->cap ? o->cap : 64;
    while (nc < need) nc *= 2;
    int32_t *ids = realloc(o->ids, nc * sizeof *ids);
    if (ids) o->ids = ids;
    int32_t *ty = realloc(o->type_ids, nc * sizeof *ty);
    if (ty) o->type_ids = ty;
    const char **tk = realloc(o->tokens, nc * sizeof *tk);
    if (tk) o->tokens = tk;
    int64_t *of = realloc(o->offsets, 2 * nc * sizeof *of);
    if (of) o->offsets = of;
    uint8_t *sp = realloc(o->special, nc);
    if (sp) o->special = sp;
    int32_t *sq = realloc(o->seq, nc * sizeof *sq);
    if (sq) o->seq = sq;
    if (!ids || !ty || !tk || !of || !sp || !sq) return -1;
    o->cap = nc;
    return 0;
}

/* The template: specials and the kept tokens of each text. */
static void tokenizer_template(const tokenizer *t, const tok_scratch *s, int pair, const size_t keep[2],
                               tokenizer_output *out) {
    const tokdesc_item *it = pair ? t->desc->pair : t->desc->single;
    int n = pair ? t->desc->npair : t->desc->nsingle;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (it[i].kind == TOKDESC_ITEM_SPECIAL) {
            out->ids[at] = it[i].id;
            out->type_ids[at] = it[i].type_id;
            out->offsets[2 * at] = out->offsets[2 * at + 1] = 0;
            out->special[at] = 1;
            out->seq[at++] = -1;
            continue;
        }
        int k = it[i].kind == TOKDESC_ITEM_SEQ_B;
        for (size_t j = 0; j < keep[k]; j++, at++) {
            const tok_piece *p = &s->seq[k].p[j];
            out->ids[at] = p->id;
            out->type_ids[at] = it[i].type_id;
            out->offsets[2 * at] = p->start;
            out->offsets[2 * at + 1] = p->end;
            out->special[at] = 0;
            out->seq[at] = k;
        }
    }
    for (size_t i = 0; i < at; i++) out->tokens[i] = tokenizer_id_to_token(t, out->ids[i]);
    out->len = at;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, const char *pair, size_t pair_len,
                     int64_t max_len, tokenizer_output *out, diag *d) {
    out->len = out->len_a = out->len_b = out->full_a = out->full_b = 0;
    out->truncated = 0;
    /* transformers' fast tokenizer tests `if text_pair`: an empty pair is no pair. */
    if (pair && pair_len == 0) pair = NULL;
    size_t nspecial = tokenizer_num_special(t, pair != NULL);
    if (max_len == 0) max_len = t->model_max_length;
    if (max_len > 0 && (uint64_t)max_len < nspecial)
        return diag_set(d, DIAG_CODE_INPUT, "tokenizer: max_len %lld leaves no room for the %zu special tokens",
                        (long long)max_len, nspecial);
    tok_scratch *s = tokenizer_scratch(out);
    if (!s) return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory");
    s->seq[1].n = 0;
    if (tokenizer_sequence(t, s, text ? text : "", text ? len : 0, 0, NULL, d) ||
        (pair && tokenizer_sequence(t, s, pair, pair_len, 1, NULL, d)))
        return -1;
    size_t keep[2] = {s->seq[0].n, s->seq[1].n};
    out->full_a = keep[0];
    out->full_b = keep[1];
    if (max_len > 0) tokenizer_truncate(&keep[0], &keep[1], pair != NULL, (size_t)max_len - nspecial);
    out->truncated = keep[0] != out->full_a || keep[1] != out->full_b;
    size_t total = keep[0] + keep[1] + nspecial;
    if (tokenizer_output_reserve(out, total))
        return diag_set(d, DIAG_CODE_INTERNAL, "tokenizer: out of memory for %zu tokens", total);
    tokenizer_template(t, s, pair != NULL, keep, out);
    out->len_a = keep[0];
    out->len_b = keep[1];
    return 0;
}
