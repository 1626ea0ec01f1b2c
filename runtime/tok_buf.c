/*
 * tok_buf — the growable arrays the tokenizer's stages pass along.
 *
 * Each output of a stage lives in scratch that the caller's
 * tokenizer_output keeps between calls, so once the arrays have grown to a
 * text's size, encoding allocates nothing.  Capacities double; a push
 * reports running out of memory instead of losing an element.
 */
#include <stdlib.h>

#include "tok_internal.h"

int tok_reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > ((size_t)-1 / 2) / elem) return -1;
        nc *= 2;
    }
    void *q = realloc(*p, nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

int tok_units_push(tok_units *v, uint32_t c, uint32_t start, uint32_t end) {
    if (v->n == v->cap && tok_reserve((void **)&v->u, &v->cap, v->n + 1, sizeof *v->u)) return -1;
    v->u[v->n++] = (tok_unit){c, start, end};
    return 0;
}

int tok_pieces_push(tok_pieces *v, int32_t id, uint32_t start, uint32_t end) {
    if (v->n == v->cap && tok_reserve((void **)&v->p, &v->cap, v->n + 1, sizeof *v->p)) return -1;
    v->p[v->n++] = (tok_piece){id, start, end};
    return 0;
}

int tok_spans_push(tok_spans *v, size_t b, size_t e, uint32_t orig) {
    if (v->n == v->cap && tok_reserve((void **)&v->s, &v->cap, v->n + 1, sizeof *v->s)) return -1;
    v->s[v->n++] = (tok_span){b, e, orig};
    return 0;
}
