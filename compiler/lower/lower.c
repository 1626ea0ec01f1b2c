/*
 * lower — the model's lowering: the signature, the weight blob, and the
 * bucket loop that turns the graph into one schedule per sequence length
 * (lower.h has the overview; the steps themselves are lower_steps.c).
 *
 * Liveness.  A bucket is lowered in graph order.  Views forward to the
 * buffer of the node they look into (their root), so a buffer lives until
 * the last node that reads it or any view of it; it is given back to the
 * arena right after that node.  Graph outputs live to the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

/* ------------------------------------------------------------ signature */

/* Whether some node reads node i. */
static int lower_is_read(const ir_graph *g, int i) {
    for (int j = i + 1; j < g->count; j++)
        for (int s = 0; s < g->nodes[j].nsrc; s++)
            if (g->nodes[j].src[s] == i) return 1;
    return 0;
}

/* Vocabulary bounds and hidden size from the embedding, inputs read and
 * their defaults: what the runtime checks a request against. */
static int lower_signature(const ir_graph *g, plan *p, diag *d) {
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op == IR_OP_INPUT && !strcmp(n->name, "token_type_ids")) p->token_type_default = n->default_value;
        if (n->op == IR_OP_INPUT && !strcmp(n->name, "attention_mask")) {
            p->attention_mask_default = n->default_value;
            if (lower_is_read(g, i)) p->has_attention_mask = 1;
        }
        if (n->op != IR_OP_EMBED_LN) continue;
        p->hidden = n->shape[n->ndim - 1];
        for (int gi = 0; gi < n->ngathers; gi++) {
            const ir_node *t = &g->nodes[n->src[2 + 2 * gi]], *x = &g->nodes[n->src[3 + 2 * gi]];
            if (x->op == IR_OP_INPUT && !strcmp(x->name, "input_ids")) p->vocab_size = t->shape[0];
            if (x->op == IR_OP_INPUT && !strcmp(x->name, "token_type_ids")) {
                p->type_vocab_size = t->shape[0];
                p->has_token_type_ids = 1;
            }
        }
    }
    if (!p->has_attention_mask) p->attention_mask_default = 1;
    if (!p->vocab_size)
        return diag_set(d, DIAG_CODE_INPUT, "%s: no embedding gather of input_ids found after fusion",
                        g->source_path ? g->source_path : "model");
    return 0;
}

/* ------------------------------------------------------------ one bucket */

/* root[i]: the node owning i's buffer; last_use[r]: the last node reading root r. */
static void lower_liveness(const ir_graph *g, int packed, int *root, int64_t *last_use) {
    for (int i = 0; i < g->count; i++) {
        root[i] = lower_is_view(g, i, packed) ? root[g->nodes[i].src[0]] : i;
        last_use[i] = -1;
    }
    for (int i = 0; i < g->count; i++)
        for (int s = 0; s < g->nodes[i].nsrc; s++) {
            int r = root[g->nodes[i].src[s]];
            if (last_use[r] < i) last_use[r] = i;
        }
    for (int o = 0; o < g->noutputs; o++) last_use[root[g->outputs[o].node]] = INT64_MAX;
}

/* Gives back the buffers whose last reader was node i. */
static void lower_release_after(lower_ctx *c, int i, const int *root, int64_t *last_use) {
    const ir_node *n = &c->g->nodes[i];
    for (int s = 0; s < n->nsrc; s++) {
        int r = root[n->src[s]];
        if (last_use[r] == i && c->v[r].valid && c->v[r].ref.buf == SCHED_BUF_ARENA) {
            lower_arena_release(&c->arena, c->v[r].ref.offset, (uint64_t)(c->v[r].rows * c->v[r].cols) * c->es);
            last_use[r] = -2; /* released */
        }
    }
}

/* Where each graph output lives after the bucket's last step. */
static int lower_outputs(lower_ctx *c) {
    const ir_graph *g = c->g;
    sched_bucket *out = c->out;
    out->outputs = calloc((size_t)g->noutputs + 1, sizeof *out->outputs);
    if (!out->outputs) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    for (int o = 0; o < g->noutputs; o++) {
        const lower_view *v = &c->v[g->outputs[o].node];
        if (!v->valid)
            return diag_set(c->d, DIAG_CODE_INPUT, "output '%s' is not computed by any kernel", g->outputs[o].name);
        sched_output *so = &out->outputs[out->noutputs++];
        if (!(so->name = strdup(g->outputs[o].name))) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
        so->ref = v->ref;
        so->dtype = c->prec;
        so->rows_are_seq = v->seq_rows;
        so->per_seq = v->per_seq;
        so->cols = v->cols;
        so->row_stride = v->ld;
    }
    return 0;
}

static int lower_bucket(lower_ctx *c) {
    const ir_graph *g = c->g;
    size_t n = (size_t)g->count + 1;
    c->v = calloc(n, sizeof *c->v);
    int *root = malloc(n * sizeof *root);
    int64_t *last_use = malloc(n * sizeof *last_use);
    int rc = 0;
    if (!c->v || !root || !last_use || lower_arena_init(&c->arena, (int)n))
        rc = diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    if (!rc) lower_liveness(g, c->seqs > 0, root, last_use);
    for (int i = 0; !rc && i < g->count; i++) {
        rc = lower_node(c, i);
        if (!rc) lower_release_after(c, i, root, last_use);
    }
    if (!rc) rc = lower_outputs(c);
    if (!rc) lower_prefetch(c);
    c->out->arena_bytes = c->arena.top;
    free(root);
    free(last_use);
    free(c->v);
    c->v = NULL;
    lower_arena_free(&c->arena);
    return rc;
}

/* ------------------------------------------------------------ the model */

int lower_model(const ir_graph *g, const weights *w, const lower_options *o, plan *p, diag *d) {
    p->precision = o->precision;
    p->fusion = o->fusion;
    p->max_seq_len = g->max_seq_len;
    if (lower_signature(g, p, d)) return -1;
    lower_weights lw;
    int longest = 1;
    for (int b = 0; b < o->nbuckets; b++) longest = o->buckets[b] > longest ? o->buckets[b] : longest;
    if (lower_weights_build(g, w, o->precision, longest, &lw, d)) {
        lower_weights_free(&lw);
        return -1;
    }
    p->weights = lw.blob;
    p->weights_size = lw.size;
    p->owns_weights = 1;
    lw.blob = NULL;
    int total = o->nbuckets + o->ntoken_buckets;
    p->buckets = calloc((size_t)total + 1, sizeof *p->buckets);
    lower_gemm_chooser *gemm = malloc(sizeof *gemm);
    int rc = p->buckets && gemm ? 0 : diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    if (gemm) lower_gemm_chooser_init(gemm, o->sms, o->nsms, o->tune, (double)p->weights_size);
    lower_ctx c = {.g = g,
                   .w = &lw,
                   .longest = longest,
                   .prec = o->precision,
                   .fusion = o->fusion,
                   .es = (size_t)plan_dtype_size(o->precision),
                   .o = o,
                   .p = p,
                   .d = d,
                   .gemm = gemm};
    for (int b = 0; !rc && b < total; b++) {
        int tokens = b >= o->nbuckets;
        sched_bucket *out = &p->buckets[p->nbuckets++];
        out->seq_len = tokens ? o->token_buckets[b - o->nbuckets] : o->buckets[b];
        out->max_seqs = tokens ? (o->max_batch < out->seq_len ? o->max_batch : out->seq_len) : 0;
        c.bucket = out->seq_len;
        c.seqs = out->max_seqs;
        c.out = out;
        c.cap_steps = 0;
        rc = lower_bucket(&c);
        if (out->arena_bytes > p->arena_bytes) p->arena_bytes = out->arena_bytes;
        if (out->counter_bytes > p->counter_bytes) p->counter_bytes = out->counter_bytes;
    }
    lower_weights_free(&lw);
    free(gemm);
    return rc;
}
