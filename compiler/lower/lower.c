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

/* ------------------------------------------------------------ variants */

static int lower_ref_eq(sched_ref a, sched_ref b) { return a.buf == b.buf && a.offset == b.offset; }

static int lower_gemm_eq(const sched_gemm *a, const sched_gemm *b) {
    return a->transa == b->transa && a->transb == b->transb && a->m == b->m && a->n == b->n && a->k == b->k &&
           a->lda == b->lda && a->ldb == b->ldb && a->ldc == b->ldc && a->ldd == b->ldd &&
           a->batch_count == b->batch_count && a->stride_a == b->stride_a && a->stride_b == b->stride_b &&
           a->stride_c == b->stride_c && a->stride_d == b->stride_d && a->ab_type == b->ab_type &&
           a->cd_type == b->cd_type && a->bias_type == b->bias_type && a->alpha == b->alpha && a->beta == b->beta &&
           a->epilogue == b->epilogue && lower_ref_eq(a->a, b->a) && lower_ref_eq(a->b, b->b) &&
           lower_ref_eq(a->c, b->c) && lower_ref_eq(a->d, b->d) && lower_ref_eq(a->bias, b->bias);
}

static int lower_step_eq(const sched_step *a, const sched_step *b) {
    if (a->kind != b->kind || strcmp(a->name, b->name)) return 0;
    if (a->kind == SCHED_STEP_GEMM) return lower_gemm_eq(&a->gemm, &b->gemm);
    const sched_launch *x = &a->launch, *y = &b->launch;
    if (x->kernel != y->kernel || x->nargs != y->nargs || memcmp(&x->dims, &y->dims, sizeof x->dims)) return 0;
    for (int i = 0; i < x->nargs; i++)
        if (!lower_ref_eq(x->args[i], y->args[i])) return 0;
    return 1;
}

/* Whether two lowerings of one bucket are the same program. */
static int lower_bucket_eq(const sched_bucket *a, const sched_bucket *b) {
    if (a->nsteps != b->nsteps || a->noutputs != b->noutputs || a->arena_bytes != b->arena_bytes ||
        a->counter_bytes != b->counter_bytes)
        return 0;
    for (int i = 0; i < a->nsteps; i++)
        if (!lower_step_eq(&a->steps[i], &b->steps[i])) return 0;
    for (int i = 0; i < a->noutputs; i++)
        if (!lower_ref_eq(a->outputs[i].ref, b->outputs[i].ref) || a->outputs[i].row_stride != b->outputs[i].row_stride)
            return 0;
    return 1;
}

/* Joins each variant to the one before when every bucket lowered alike
 * (the capability ranges are adjacent, so the joined one is a range). */
static void lower_variants_merge(plan *p) {
    int n = p->nbuckets, v = 1;
    while (v < p->nvariants) {
        sched_bucket *prev = plan_variant_buckets(p, v - 1), *cur = plan_variant_buckets(p, v);
        int same = 1;
        for (int b = 0; b < n && same; b++) same = lower_bucket_eq(&prev[b], &cur[b]);
        if (!same) {
            v++;
            continue;
        }
        for (int b = 0; b < n; b++) {
            prev[b].cc_max = cur[b].cc_max;
            sched_bucket_free(&cur[b]);
        }
        memmove(cur, cur + n, (size_t)(p->nvariants - v - 1) * (size_t)n * sizeof *cur);
        memset(plan_variant_buckets(p, p->nvariants - 1), 0, (size_t)n * sizeof *cur);
        p->nvariants--;
    }
}

/* Every bucket of one step list into out[0 .. buckets + token buckets),
 * the GEMMs chosen by c->gemm. */
static int lower_buckets(lower_ctx *c, sched_bucket *out) {
    const lower_options *o = c->o;
    int rc = 0;
    for (int b = 0; !rc && b < o->nbuckets + o->ntoken_buckets; b++) {
        int tokens = b >= o->nbuckets;
        sched_bucket *bk = &out[b];
        bk->seq_len = tokens ? o->token_buckets[b - o->nbuckets] : o->buckets[b];
        bk->max_seqs = tokens ? (o->max_batch < bk->seq_len ? o->max_batch : bk->seq_len) : 0;
        c->bucket = bk->seq_len;
        c->seqs = bk->max_seqs;
        c->out = bk;
        c->cap_steps = 0;
        rc = lower_bucket(c);
        if (bk->arena_bytes > c->p->arena_bytes) c->p->arena_bytes = bk->arena_bytes;
        if (bk->counter_bytes > c->p->counter_bytes) c->p->counter_bytes = bk->counter_bytes;
    }
    return rc;
}

/*
 * The step lists of a plan compiled with --tune (plan.h, variants): the
 * GPUs tuned for (those named, or "all" the plan's architectures serve)
 * by compute capability, ascending.  Variant 0 covers capabilities below
 * the first (the emulated device's 0 among them) with the compromise over
 * all of them; each capability then gets its GPUs' own choice
 * (lower_gemm_chooser_keep_cc), up to the next one, the last up to
 * PLAN_CC_MAX.  One variant (the range all capabilities) with --tune none,
 * and in a plan without a GPU architecture (the emulated device's image,
 * PTX): no device it serves has a capability of the model's table.
 * `c` is the chooser over all of them; returns the count, the ranges in
 * cc[2 * v], cc[2 * v + 1].
 */
static int lower_variant_ranges(const lower_options *o, const lower_gemm_chooser *c, int *cc) {
    int n = 1;
    cc[0] = 0;
    for (int have = 0; o->tune && o->nsms > 0;) {
        int next = PLAN_CC_MAX + 1; /* the lowest capability above `have` */
        for (int g = 0; g < c->ngpus; g++) {
            int x = c->gpus[g]->major * 10 + c->gpus[g]->minor;
            if (x > have && x < next) next = x;
        }
        if (next > PLAN_CC_MAX) break;
        cc[2 * n - 1] = next - 1;
        cc[2 * n++] = have = next;
    }
    cc[2 * n - 1] = PLAN_CC_MAX;
    return n;
}

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
    int total = o->nbuckets + o->ntoken_buckets, cc[2 * (LOWER_GEMM_MAX_GPUS + 1)], nv = 1;
    lower_gemm_chooser *gemm = malloc(sizeof *gemm);
    if (gemm) {
        lower_gemm_chooser_init(gemm, o->sms, o->nsms, o->tune, (double)p->weights_size);
        nv = lower_variant_ranges(o, gemm, cc);
    }
    p->buckets = calloc((size_t)(nv * total) + 1, sizeof *p->buckets);
    int rc = p->buckets && gemm ? 0 : diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    if (!rc) p->nbuckets = total, p->nvariants = nv;
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
    for (int v = 0; !rc && v < nv; v++) {
        lower_gemm_chooser_init(gemm, o->sms, o->nsms, o->tune, (double)p->weights_size);
        if (v > 0) lower_gemm_chooser_keep_cc(gemm, cc[2 * v]);
        gemm->known = lower_kernel_text_known; /* LOWER_GEMM_SHARE */
        gemm->known_ctx = &c;
        c.front = v == 0 && nv > 1 ? 0u : cc[2 * v] < 80 && nv > 1 ? LOWER_FRONT_75 : LOWER_FRONT_80;
        rc = lower_buckets(&c, plan_variant_buckets(p, v));
        for (int b = 0; b < total; b++) {
            plan_variant_buckets(p, v)[b].cc_min = (uint16_t)cc[2 * v];
            plan_variant_buckets(p, v)[b].cc_max = (uint16_t)cc[2 * v + 1];
        }
    }
    if (!rc) lower_variants_merge(p);
    lower_weights_free(&lw);
    free(c.kernel_fronts);
    free(gemm);
    return rc;
}
