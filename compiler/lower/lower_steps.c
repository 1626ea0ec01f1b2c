/*
 * lower_steps — one fused op to one step (lower.h has the overview).  A few
 * decisions worth the words:
 *
 * cuBLASLt or a generated GEMM.  A LINEAR whose epilogue cuBLASLt can do
 * with documented math (none, bias, relu, bias+relu, and a residual through
 * beta·C) becomes a cuBLASLt GEMM.  An activation whose formula the
 * cuBLASLt documentation does not pin down (GELU: the docs do not say erf
 * or tanh, and a model's `hidden_act: gelu` is the erf form) or that
 * cuBLASLt lacks (tanh) goes to the generated GEMM kernel, which computes
 * exactly the model's formula.  The choice is made from the graph's act
 * field, never assumed.
 *
 * Views.  After fusion the only data-movement ops left are reshapes that
 * keep rows contiguous and slices (rows: the pooler's [CLS] row; columns:
 * q/k/v inside a merged QKV result).  They lower to a view — buffer,
 * offset, row stride — so they cost no launch and no bytes.
 *
 * Cost model.  FLOPs count multiply-adds as two.  Minimum HBM bytes count
 * every operand read once and every result written once in the plan
 * precision, for the bucket's padded row count (cuBLASLt computes padding
 * rows too); gathers count the rows they read, not whole tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "lower_internal.h"
#include "plan_kernels.h"

/* The plan's own names for the IR's activations and pooling modes. */
static plan_act lower_act(ir_act a) {
    switch (a) {
    case IR_ACT_GELU_ERF: return PLAN_ACT_GELU_ERF;
    case IR_ACT_GELU_TANH: return PLAN_ACT_GELU_TANH;
    case IR_ACT_RELU: return PLAN_ACT_RELU;
    case IR_ACT_TANH: return PLAN_ACT_TANH;
    default: return PLAN_ACT_COUNT;
    }
}

static plan_pool_mode lower_pool_mode(ir_pool_mode m) {
    return m == IR_POOL_CLS ? PLAN_POOL_CLS : m == IR_POOL_MEAN ? PLAN_POOL_MEAN : PLAN_POOL_COUNT;
}

static int fail_node(lower_ctx *c, const ir_node *n, const char *fmt, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what);
    if (n->line > 0)
        return diag_set(c->d, DIAG_CODE_INPUT, "%s:%d:%d: %s '%s': %s", c->g->source_path ? c->g->source_path : "model",
                        n->line, n->col, ir_op_name(n->op), n->name, msg);
    return diag_set(c->d, DIAG_CODE_INPUT, "%s '%s': %s", ir_op_name(n->op), n->name, msg);
}

static int64_t bind_rows(const ir_node *n, int bucket, int *seq) {
    *seq = n->shape[0] == IR_DIM_SEQ;
    return *seq ? bucket : n->shape[0];
}

static int64_t node_cols(const ir_node *n, int bucket) {
    int64_t c = 1;
    for (int k = 1; k < n->ndim; k++) c *= n->shape[k] == IR_DIM_SEQ ? bucket : n->shape[k];
    return c;
}

static sched_step *step_new(lower_ctx *c, const ir_node *n, sched_step_kind kind) {
    if (c->out->nsteps == c->cap_steps) {
        int cap = c->cap_steps ? c->cap_steps * 2 : 32;
        sched_step *s = realloc(c->out->steps, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        c->out->steps = s;
        c->cap_steps = cap;
    }
    sched_step *s = &c->out->steps[c->out->nsteps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    size_t len = strlen(n->name) + 1;
    s->name = malloc(len);
    if (!s->name) return NULL;
    memcpy(s->name, n->name, len);
    return s;
}

static sched_ref weight_ref(lower_ctx *c, int node) {
    sched_ref r = {SCHED_BUF_WEIGHTS, (uint64_t)c->w->offset[node]};
    return r;
}

static const sched_ref REF_NONE = {SCHED_BUF_NONE, 0};

/* A spec of `kind` in the plan precision, every other field zero: rows 0
 * for a kind that serves every bucket, this bucket's for the GEMMs (whose
 * callers set their own rows). */
static kernel_spec spec_new(const lower_ctx *c, kernel_kind kind) {
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.dtype = c->prec;
    s.bucket = kernel_kind_bucket_free(kind) ? 0 : c->bucket;
    return s;
}

/* The source view of a node operand, which must be an activation. */
static const lower_view *act_view(lower_ctx *c, const ir_node *n, int k) {
    const lower_view *v = &c->v[n->src[k]];
    return v->valid ? v : NULL;
}

static int make_output(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    lower_view *v = &c->v[i];
    int seq;
    v->rows = bind_rows(n, c->bucket, &seq);
    v->seq_rows = seq;
    v->per_seq = 0;
    v->cols = node_cols(n, c->bucket);
    if (n->ndim == 1 && !seq) {
        /* A vector ([H], a sentence embedding) is one row, as a reshape to [H] views it. */
        v->rows = 1;
        v->cols = n->shape[0];
    }
    if (c->seqs && !seq) {
        /* A request's one row (a pooled vector, the [CLS] row) is a row per sequence in a batch. */
        if (v->rows != 1) return fail_node(c, n, "a packed batch has one row per token or per sequence, %s", "not more");
        v->rows = c->seqs;
        v->per_seq = 1;
    }
    v->ld = v->cols;
    v->root = i;
    v->ref.buf = SCHED_BUF_ARENA;
    v->ref.offset = lower_arena_alloc(&c->arena, (uint64_t)(v->rows * v->cols) * c->es);
    v->valid = 1;
    return 0;
}

/* Whether kernel record k serves spec s of entry `entry`: the same entry,
 * and for the split-K GEMMs, whose one text serves every bucket and split
 * count of a tiling (kernel_gemm_splitk.c), the same bucket and splits —
 * the record's, which the launch contract checks. */
static int lower_kernel_serves(const plan_kernel *k, const kernel_spec *s, const char *entry) {
    if (strcmp(k->entry, entry)) return 0;
    if (s->kind != KERNEL_KIND_GEMM_SPLITK && s->kind != KERNEL_KIND_GEMM_LN) return 1;
    return k->spec.bucket == s->bucket && k->spec.splits == s->splits;
}

int lower_kernel_text_known(void *ctx, const kernel_spec *s) {
    const lower_ctx *c = ctx;
    char *entry;
    diag quiet;
    diag_init(&quiet);
    if (!c->front || kernel_entry(s, &entry, &quiet)) return 0;
    int found = 0;
    for (int i = 0; i < c->p->nkernels && !found; i++)
        found = (c->kernel_fronts[i] & c->front) && !strcmp(c->p->kernels[i].entry, entry);
    free(entry);
    return found;
}

/* The index of the kernel of `s` in the plan's table, adding it if no
 * kernel serves it yet. */
static int lower_kernel_intern(lower_ctx *c, const kernel_spec *s) {
    char *entry;
    if (kernel_entry(s, &entry, c->d)) return -1;
    plan *p = c->p;
    for (int i = 0; i < p->nkernels; i++)
        if (lower_kernel_serves(&p->kernels[i], s, entry)) {
            free(entry);
            c->kernel_fronts[i] |= (unsigned char)c->front;
            return i;
        }
    if (p->nkernels == c->kernel_cap) {
        int cap = c->kernel_cap ? c->kernel_cap * 2 : 16;
        plan_kernel *k = realloc(p->kernels, (size_t)cap * sizeof *k);
        unsigned char *f = k ? realloc(c->kernel_fronts, (size_t)cap) : NULL;
        if (k) p->kernels = k;
        if (!f) {
            free(entry);
            return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
        }
        c->kernel_fronts = f;
        c->kernel_cap = cap;
    }
    plan_kernel *k = &p->kernels[p->nkernels];
    memset(k, 0, sizeof *k);
    k->entry = entry;
    k->spec = *s;
    k->nargs = kernel_arg_count(s->kind);
    c->kernel_fronts[p->nkernels] = (unsigned char)c->front;
    return p->nkernels++;
}

/* Intern the kernel of `s` and append its launch with `args`. */
static int emit_kernel_step(lower_ctx *c, const ir_node *n, const kernel_spec *s, const sched_ref *args, int nargs,
                            double flops, double bytes) {
    int ki = lower_kernel_intern(c, s);
    if (ki < 0) return -1;
    sched_step *st = step_new(c, n, SCHED_STEP_KERNEL);
    if (!st) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    st->launch.kernel = ki;
    if (kernel_dims_in(s, c->bucket, c->seqs, &st->launch.dims, c->d)) return -1;
    /* a batch's sequences are as long as the longest length bucket at most */
    if (c->seqs && kernel_launch_check_rows(s, c->longest, c->d)) return -1;
    /* the prefetch pair stays NONE until lower_prefetch knows the next step */
    st->launch.nargs = nargs + KERNEL_PREFETCH_ARGS;
    memcpy(st->launch.args, args, (size_t)nargs * sizeof *args);
    st->flops = flops;
    st->min_hbm_bytes = (uint64_t)bytes;
    return 0;
}

static int index_kind(lower_ctx *c, const ir_node *owner, int idx, kernel_index *kind, int *pad) {
    const ir_node *n = &c->g->nodes[idx];
    if (n->op == IR_OP_ARANGE) { *kind = KERNEL_INDEX_POSITION; return 0; }
    if (n->op == IR_OP_PAD_POSITIONS) {
        const ir_node *ids = &c->g->nodes[n->src[0]];
        if (ids->op != IR_OP_INPUT || strcmp(ids->name, "input_ids"))
            return fail_node(c, owner, "pad_positions must read the input_ids input, not '%s'", ids->name);
        if (*pad >= 0 && *pad != n->pad_id)
            return fail_node(c, owner, "%s: two pad_positions gathers with different pad ids", "one kernel");
        *pad = n->pad_id;
        *kind = KERNEL_INDEX_PAD_POSITION;
        return 0;
    }
    if (n->op == IR_OP_INPUT && !strcmp(n->name, "input_ids")) { *kind = KERNEL_INDEX_INPUT_IDS; return 0; }
    if (n->op == IR_OP_INPUT && !strcmp(n->name, "token_type_ids")) { *kind = KERNEL_INDEX_TOKEN_TYPES; return 0; }
    return fail_node(c, owner, "gather index '%s' is not input_ids, token_type_ids or an arange", n->name);
}

static int lower_embed_ln(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    kernel_spec s = spec_new(c, KERNEL_KIND_EMBED_LN);
    s.packed = c->seqs > 0;
    s.hidden = (int)n->shape[n->ndim - 1];
    s.eps = n->eps;
    s.ngathers = n->ngathers;
    if (n->ngathers < 1 || n->ngathers > KERNEL_MAX_GATHERS) return fail_node(c, n, "%s gathers (expected 1 to 3)", "too many");
    sched_ref tables[KERNEL_MAX_GATHERS] = {REF_NONE, REF_NONE, REF_NONE};
    double bytes = 0;
    int pad = -1;
    for (int g = 0; g < n->ngathers; g++) {
        int t = n->src[2 + 2 * g], x = n->src[3 + 2 * g];
        if (c->w->offset[t] < 0) return fail_node(c, n, "gather table %s is not a weight", c->g->nodes[t].name);
        if (index_kind(c, n, x, &s.gather_index[g], &pad)) return -1;
        s.table_rows[g] = (int)c->g->nodes[t].shape[0];
        tables[g] = weight_ref(c, t);
        bytes += (double)c->bucket * (double)s.hidden * (double)c->es;
        if (s.gather_index[g] != KERNEL_INDEX_POSITION) bytes += 4.0 * c->bucket;
    }
    s.pad_id = pad > 0 ? pad : 0;
    if (make_output(c, i)) return -1;
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, tables[0], tables[1], tables[2],
                        weight_ref(c, n->src[0]), weight_ref(c, n->src[1])};
    return emit_kernel_step(c, n, &s, args, 7, 10.0 * c->bucket * s.hidden,
                            bytes + 2.0 * s.hidden * c->es + (double)c->bucket * s.hidden * c->es);
}

static int require_contiguous(lower_ctx *c, const ir_node *n, const lower_view *v, const char *what) {
    if (!v) return fail_node(c, n, "operand %s is not an activation", what);
    if (v->ld != v->cols) return fail_node(c, n, "operand %s must have contiguous rows", what);
    return 0;
}

/* An ADD_LN launch writing `out`: LayerNorm((x (+ bias)) (+ res)) with
 * the LayerNorm weights of nodes gamma and beta; bias -1 when absent. */
static int emit_add_ln(lower_ctx *c, const ir_node *n, const lower_view *x, int bias, const lower_view *res, int gamma,
                       int beta, sched_ref out) {
    kernel_spec s = spec_new(c, KERNEL_KIND_ADD_LN);
    s.hidden = (int)x->cols;
    s.eps = n->eps;
    s.has_bias = bias >= 0;
    s.has_residual = res != NULL;
    sched_ref args[] = {out, {SCHED_BUF_REQUEST, 0}, x->ref, bias >= 0 ? weight_ref(c, bias) : REF_NONE,
                        res ? res->ref : REF_NONE, weight_ref(c, gamma), weight_ref(c, beta)};
    double rows = (double)x->rows, h = (double)s.hidden;
    return emit_kernel_step(c, n, &s, args, 7, 8.0 * rows * h,
                            (double)c->es * (rows * h * (2 + (res != NULL)) + h * (2 + (bias >= 0))));
}

static int lower_add_ln(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *x = act_view(c, n, 0);
    if (require_contiguous(c, n, x, "x")) return -1;
    int pos = 3;
    const lower_view *res = NULL;
    int bias = -1;
    if (n->has_residual) {
        res = act_view(c, n, pos++);
        if (require_contiguous(c, n, res, "residual")) return -1;
    }
    if (n->has_bias) bias = n->src[pos++];
    if (make_output(c, i)) return -1;
    return emit_add_ln(c, n, x, bias, res, n->src[1], n->src[2], c->v[i].ref);
}

/*
 * A packed attention kernel's seq_qtile: the query tile of each length
 * bucket of the plan, as the bucket's own kernel takes it
 * (kernel_attention_qtile), turned into length ranges per tile.  The tile
 * grows with the bucket, so each tile's sequences are one range: tile
 * 8 * 2^k serves the lengths up to the longest bucket whose tile is at
 * most that (a tile no bucket takes gets an empty range).
 */
static void lower_seq_qtiles(lower_ctx *c, kernel_spec *s) {
    static const int tiles[4] = {8, 16, 32, 64};
    memset(s->seq_qtile, 0, sizeof s->seq_qtile);
    for (int b = 0; b < c->o->nbuckets; b++) {
        int len = c->o->buckets[b];
        int tile = kernel_attention_packed_tile(s, kernel_attention_qtile(s, len));
        for (int k = 0; k < 4; k++)
            if (tiles[k] >= tile && s->seq_qtile[k] < len) s->seq_qtile[k] = len;
    }
    for (int k = 1; k < 4; k++)
        if (s->seq_qtile[k] < s->seq_qtile[k - 1]) s->seq_qtile[k] = s->seq_qtile[k - 1];
    s->packed = 1;
    s->qtile = 0;
}

static int lower_attention(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *q = act_view(c, n, 0), *k = act_view(c, n, 1), *v = act_view(c, n, 2);
    if (!q || !k || !v) return fail_node(c, n, "%s operands must be activations", "q, k and v");
    if (q->root != k->root || q->root != v->root || q->ld != k->ld || q->ld != v->ld)
        return fail_node(c, n, "%s must be column blocks of one tensor (merge the q/k/v projections)", "q, k and v");
    if (ir_attention_has_mask(n)) {
        const ir_node *m = &c->g->nodes[n->src[3]];
        if (m->op != IR_OP_INPUT || strcmp(m->name, "attention_mask"))
            return fail_node(c, n, "the mask must be the attention_mask input, not '%s'", m->name);
    }
    int bias = n->has_bias ? n->src[n->nsrc - 1] : -1;
    if (bias >= 0 && (c->g->nodes[bias].op != IR_OP_REL_POS_BIAS || c->w->offset[bias] < 0))
        return fail_node(c, n, "the score bias must be a rel_pos_bias, not '%s'", c->g->nodes[bias].name);
    const lower_view *root = &c->v[q->root];
    kernel_spec s = spec_new(c, KERNEL_KIND_ATTENTION);
    s.heads = n->heads;
    s.head_dim = n->head_dim;
    s.scale = n->scale;
    s.qkv_ld = (int)q->ld;
    s.q_off = (int)((q->ref.offset - root->ref.offset) / c->es) + n->q_off;
    s.k_off = (int)((k->ref.offset - root->ref.offset) / c->es) + n->k_off;
    s.v_off = (int)((v->ref.offset - root->ref.offset) / c->es) + n->v_off;
    s.ctx_ld = n->heads * n->head_dim;
    /* the longest a sequence's keys are: the bucket, or in a batch the longest request */
    double b = c->bucket, keys = b, h = (double)s.ctx_ld;
    if (c->seqs) {
        lower_seq_qtiles(c, &s);
        keys = c->o->buckets[c->o->nbuckets - 1] < c->bucket ? c->o->buckets[c->o->nbuckets - 1] : c->bucket;
    } else {
        s.qtile = kernel_attention_qtile(&s, c->bucket);
    }
    /* the bias table covers the longest length bucket, so every sequence of a batch */
    s.bias_ld = bias >= 0 ? c->longest : 0;
    if (make_output(c, i)) return -1;
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, root->ref, bias >= 0 ? weight_ref(c, bias) : REF_NONE};
    return emit_kernel_step(c, n, &s, args, 4, 4.0 * b * keys * h + 5.0 * b * keys * n->heads,
                            (double)c->es * (4.0 * b * h + (bias >= 0 ? b * keys * n->heads : 0.0)) + 4.0 * b);
}

/*
 * POOL: one block reads the [S, H] activation (rows < len the mask keeps)
 * and writes the [H] result, normalised when the pass fused an
 * l2_normalize in.  The mask must be the request's attention_mask, which
 * the kernel reads from the request block.
 */
static int lower_pool(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *x = act_view(c, n, 0);
    if (require_contiguous(c, n, x, "x")) return -1;
    /* A lone l2_normalize of one row (after a Dense module) is a cls pool of
     * that row with normalize set: the POOL kernel's cls mode reads row 0
     * only.  In a token bucket the row is one per sequence: row mode. */
    int lone = n->op == IR_OP_L2_NORMALIZE;
    if (lone && x->rows != 1 && !x->per_seq)
        return fail_node(c, n, "l2_normalize lowers for %s only", "one row ([N] or [1, N])");
    if (!lone && !x->seq_rows) return fail_node(c, n, "x must have one row per token (%s)", "[S, H]");
    if (n->nsrc > 1) {
        const ir_node *m = &c->g->nodes[n->src[1]];
        if (m->op != IR_OP_INPUT || strcmp(m->name, "attention_mask"))
            return fail_node(c, n, "the mask must be the attention_mask input, not '%s'", m->name);
    }
    kernel_spec s = spec_new(c, KERNEL_KIND_POOL);
    s.hidden = (int)x->cols;
    s.packed = c->seqs > 0;
    s.pool_mode = lone ? (s.packed ? PLAN_POOL_ROW : PLAN_POOL_CLS) : lower_pool_mode(n->pool_mode);
    s.normalize = lone || n->normalize ? 1 : 0;
    if (make_output(c, i)) return -1;
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, x->ref};
    double b = c->bucket, h = (double)s.hidden, outs = c->seqs ? c->seqs : 1;
    int mean = s.pool_mode == PLAN_POOL_MEAN;
    double flops = (mean ? b * h + outs * h : 0.0) + (s.normalize ? 3.0 * outs * h : 0.0);
    double bytes = (double)c->es * ((mean ? b * h : outs * h) + outs * h) + (mean ? 4.0 * b : 0.0);
    return emit_kernel_step(c, n, &s, args, 3, flops, bytes);
}

/* A cuBLASLt GEMM step: o = x w^T (+ bias) (+ res), relu applied when
 * asked (the epilogues cuBLASLt documents); bias -1 when absent. */
static int emit_cublas(lower_ctx *c, const ir_node *n, const lower_view *x, int w, int bias, const lower_view *res,
                       const lower_view *o, int relu, double flops, double bytes) {
    sched_step *st = step_new(c, n, SCHED_STEP_GEMM);
    if (!st) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    sched_gemm *gm = &st->gemm;
    gm->transa = 1;
    gm->transb = 0;
    gm->m = c->g->nodes[w].shape[0];
    gm->n = x->rows;
    gm->k = c->g->nodes[w].shape[1];
    gm->lda = gm->k;
    gm->ldb = x->ld;
    gm->ldd = o->ld;
    gm->ldc = res ? res->ld : o->ld;
    gm->batch_count = 1;
    gm->ab_type = gm->cd_type = gm->bias_type = c->prec;
    gm->alpha = 1.0f;
    gm->beta = res ? 1.0f : 0.0f;
    gm->epilogue = bias >= 0 ? (relu ? SCHED_EPILOGUE_RELU_BIAS : SCHED_EPILOGUE_BIAS)
                             : (relu ? SCHED_EPILOGUE_RELU : SCHED_EPILOGUE_DEFAULT);
    gm->a = weight_ref(c, w);
    gm->b = x->ref;
    gm->c = res ? res->ref : o->ref;
    gm->d = o->ref;
    gm->bias = bias >= 0 ? weight_ref(c, bias) : REF_NONE;
    st->flops = flops;
    st->min_hbm_bytes = (uint64_t)bytes;
    return 0;
}

/*
 * A GEMM_SPLITK or GEMM_LN launch (args: its argument list up to the
 * workspace): the workspace comes from the arena for the step alone, the
 * arrival counters from the bucket's COUNTERS buffer, which every such
 * launch finds zero and leaves zero, so all of them start at offset 0.
 */
static int emit_own_gemm(lower_ctx *c, const ir_node *n, const kernel_spec *s, sched_ref *args, double flops,
                         double bytes) {
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_of(s, c->bucket, a);
    /* the kind's own arguments end with the workspace and the counters;
     * the prefetch pair after them is emit_kernel_step's */
    int nargs = kernel_arg_count(s->kind) - KERNEL_PREFETCH_ARGS, wi = nargs - 2;
    uint64_t ws = a[wi].use == KERNEL_ARG_WRITE ? a[wi].bytes : 0;
    args[wi] = ws ? (sched_ref){SCHED_BUF_ARENA, lower_arena_alloc(&c->arena, ws)} : REF_NONE;
    args[wi + 1] = a[wi + 1].use == KERNEL_ARG_COUNTERS ? (sched_ref){SCHED_BUF_COUNTERS, 0} : REF_NONE;
    if (a[wi + 1].use == KERNEL_ARG_COUNTERS && a[wi + 1].bytes > c->out->counter_bytes)
        c->out->counter_bytes = (uint32_t)a[wi + 1].bytes;
    int rc = emit_kernel_step(c, n, s, args, nargs, flops, bytes);
    if (ws) lower_arena_release(&c->arena, args[wi].offset, ws);
    return rc;
}

/* The GEMM fields of a spec for o = x w^T (+ bias) (+ res). */
static kernel_spec gemm_spec_of(lower_ctx *c, kernel_kind kind, const lower_view *x, int w, int bias,
                                const lower_view *res, const lower_view *o) {
    kernel_spec s = spec_new(c, kind);
    s.bucket = (int)x->rows;
    s.n = (int)c->g->nodes[w].shape[0];
    s.k = (int)c->g->nodes[w].shape[1];
    s.x_ld = (int)x->ld;
    s.out_ld = (int)o->ld;
    s.res_ld = res ? (int)res->ld : 0;
    s.has_bias = bias >= 0;
    s.has_residual = res != NULL;
    /* Split-K changes the order in which a dot product is summed, and the
     * tiling rule picks the split by the bucket's rows: a sequence alone
     * (a length bucket) and in a packed batch (a token bucket) would round
     * differently.  A plan with token buckets therefore runs bertc's own
     * GEMMs unsplit in every bucket, so both sum every element in the same
     * order (docs/runtime.md, exactness). */
    s.splits = c->o->ntoken_buckets > 0 ? 1 : 0;
    return s;
}

/* Whether every bucket must run a dense layer on the same implementation:
 * in a plan with token buckets a request alone and in a packed batch must
 * round alike, and the GEMM kind, GEMM_SPLITK, GEMM_LN and the cuBLASLt +
 * ADD_LN chain each sum or round in their own order.  There the model
 * chooses tiles only (unsplit, gemm_spec_of), never the implementation. */
static int one_impl(const lower_ctx *c) { return c->o->ntoken_buckets > 0; }

/* The operands of a LINEAR or LINEAR_LN: x, w (and the bias, the residual)
 * from source position `pos` on; fails naming what is not as expected. */
static int linear_operands(lower_ctx *c, const ir_node *n, int pos, const lower_view **x, int *bias,
                           const lower_view **res) {
    *x = act_view(c, n, 0);
    *bias = -1;
    *res = NULL;
    if (!*x) return fail_node(c, n, "operand %s is not an activation", "x");
    int w = n->src[1];
    if (c->w->offset[w] < 0) return fail_node(c, n, "weight '%s' is not a constant", c->g->nodes[w].name);
    if (n->has_bias) *bias = n->src[pos++];
    if (n->has_residual && !(*res = act_view(c, n, pos++)))
        return fail_node(c, n, "operand %s is not an activation", "residual");
    if (*bias >= 0 && c->w->offset[*bias] < 0)
        return fail_node(c, n, "bias '%s' is not a constant", c->g->nodes[*bias].name);
    if (!(*x)->seq_rows && !(*x)->per_seq && (*x)->rows != 1)
        return fail_node(c, n, "x must have S rows or exactly one row, not %s", "a fixed count");
    return 0;
}

/* FLOPs and minimum bytes of o = x w^T (+ bias) (+ res) with `extra` more
 * vectors of N read (LayerNorm weights). */
static void linear_cost(lower_ctx *c, const lower_view *x, int w, int bias, const lower_view *res, int extra,
                        double *flops, double *bytes) {
    double M = (double)x->rows, N = (double)c->g->nodes[w].shape[0], K = (double)c->g->nodes[w].shape[1];
    *flops = 2.0 * M * N * K;
    *bytes = (double)c->es * (M * K + N * K + M * N + (bias >= 0 ? N : 0) + (res ? M * N : 0) + extra * N);
}

static int lower_linear(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *x, *res;
    int bias, w = n->src[1];
    if (linear_operands(c, n, 2, &x, &bias, &res)) return -1;
    if (make_output(c, i)) return -1;
    const lower_view *o = &c->v[i];
    double flops, bytes;
    linear_cost(c, x, w, bias, res, 0, &flops, &bytes);
    sched_ref args[KERNEL_MAX_ARGS] = {o->ref, {SCHED_BUF_REQUEST, 0}, x->ref, weight_ref(c, w),
                                       bias >= 0 ? weight_ref(c, bias) : REF_NONE, res ? res->ref : REF_NONE};
    kernel_spec s = gemm_spec_of(c, KERNEL_KIND_GEMM_SPLITK, x, w, bias, res, o);
    diag quiet;
    diag_init(&quiet);
    double us[LOWER_GEMM_MAX_GPUS];
    if (!n->has_act || n->act == IR_ACT_RELU) {
        if (!n->has_act && c->fusion == PLAN_FUSION_DEFAULT && !one_impl(c) &&
            lower_gemm_tiling(c->gemm, &s, us, &quiet) == 0 && lower_gemm_own_wins(c->gemm, &s, us))
            return emit_own_gemm(c, n, &s, args, flops, bytes);
        return emit_cublas(c, n, x, w, bias, res, o, n->has_act, flops, bytes);
    }
    s.has_act = 1;
    s.act = lower_act(n->act);
    kernel_spec plain = s;
    plain.kind = KERNEL_KIND_GEMM;
    plain.splits = 0;
    if (c->fusion == PLAN_FUSION_DEFAULT && lower_gemm_tiling(c->gemm, &s, us, &quiet) == 0 &&
        (one_impl(c) || !lower_gemm_plain_wins(c->gemm, &plain, us)))
        return emit_own_gemm(c, n, &s, args, flops, bytes);
    /* with token buckets every bucket must sum alike: the GEMM kind in one
     * bucket and GEMM_SPLITK in another would not (one_impl) */
    if (c->fusion == PLAN_FUSION_DEFAULT && one_impl(c))
        return fail_node(c, n, "%s; a plan with token buckets runs this layer on GEMM_SPLITK in every bucket",
                         quiet.text[0] ? quiet.text : "no tiling of GEMM_SPLITK fits");
    return emit_kernel_step(c, n, &plain, args, 6, flops, bytes);
}

/*
 * LINEAR_LN: one GEMM_LN launch (bias, residual and LayerNorm in the
 * epilogue) at the default fusion level when the contract serves the
 * shape and the model says it wins in this bucket (lower_gemm.c);
 * otherwise the chain it came from, a cuBLASLt GEMM (bias epilogue)
 * into a temporary and an ADD_LN, so no graph is refused for want of a
 * fused kernel and the baseline level never uses bertc's own GEMMs.
 */
static int lower_linear_ln(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *x, *res;
    int bias, w = n->src[1], gamma = n->src[2], beta = n->src[3];
    if (linear_operands(c, n, 4, &x, &bias, &res)) return -1;
    if (res && res->ld != res->cols) return fail_node(c, n, "operand %s must have contiguous rows", "residual");
    if (make_output(c, i)) return -1;
    const lower_view *o = &c->v[i];
    double flops, bytes;
    linear_cost(c, x, w, bias, res, 2, &flops, &bytes);
    kernel_spec s = gemm_spec_of(c, KERNEL_KIND_GEMM_LN, x, w, bias, res, o);
    s.eps = n->eps;
    diag quiet;
    diag_init(&quiet);
    double us[LOWER_GEMM_MAX_GPUS];
    if (c->fusion == PLAN_FUSION_DEFAULT && lower_gemm_tiling(c->gemm, &s, us, &quiet) == 0 &&
        (one_impl(c) || lower_gemm_fuse_ln(c->gemm, &s, us))) {
        sched_ref args[KERNEL_MAX_ARGS] = {o->ref,           {SCHED_BUF_REQUEST, 0}, x->ref,
                                           weight_ref(c, w), bias >= 0 ? weight_ref(c, bias) : REF_NONE,
                                           res ? res->ref : REF_NONE, weight_ref(c, gamma), weight_ref(c, beta)};
        return emit_own_gemm(c, n, &s, args, flops + 8.0 * (double)x->rows * s.n, bytes);
    }
    lower_view t = *o;
    uint64_t tbytes = (uint64_t)(t.rows * t.cols) * c->es;
    t.ref.offset = lower_arena_alloc(&c->arena, tbytes);
    double b2 = (double)c->es * (double)(t.rows * t.cols);
    int rc = emit_cublas(c, n, x, w, bias, NULL, &t, 0, flops, bytes - b2 * (res != NULL) - 2.0 * c->es * s.n);
    if (!rc) rc = emit_add_ln(c, n, &t, -1, res, gamma, beta, o->ref);
    lower_arena_release(&c->arena, t.ref.offset, tbytes);
    return rc;
}

/*
 * A packed batch's slice of the sequence axis: each sequence's first row,
 * a row per sequence.  Alone it is a view of row 0; in a batch the first
 * rows are seq_start[] apart, which no stride says, so it is a cls pool
 * (packed: one block per sequence, a copy of the row).  Only the first
 * token is supported — what BERT's pooler and the classification heads
 * slice.
 */
static int lower_packed_slice(lower_ctx *c, int i, const lower_view *src) {
    const ir_node *n = &c->g->nodes[i];
    if (n->start != 0 || n->len != 1)
        return fail_node(c, n, "a packed batch slices only the first token of each sequence (start 0, len 1), %s",
                         "not other rows");
    if (require_contiguous(c, n, src, "x")) return -1;
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_POOL;
    s.dtype = c->prec;
    s.hidden = (int)src->cols;
    s.pool_mode = PLAN_POOL_CLS;
    s.packed = 1;
    if (make_output(c, i)) return -1;
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, src->ref};
    return emit_kernel_step(c, n, &s, args, 3, 0.0, 2.0 * (double)c->es * (double)c->seqs * (double)s.hidden);
}

static int lower_reshape_slice(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const lower_view *src = act_view(c, n, 0);
    if (!src) return fail_node(c, n, "%s of a non-activation", "a view");
    if (!lower_is_view(c->g, i, c->seqs > 0)) return lower_packed_slice(c, i, src);
    lower_view *v = &c->v[i];
    *v = *src;
    int seq;
    if (n->op == IR_OP_SLICE) {
        const ir_node *s = &c->g->nodes[n->src[0]];
        if (s->ndim != 2) return fail_node(c, n, "%s slices of 2-D tensors lower to views", "only");
        if (n->axis == 0) {
            if (n->start + n->len > src->rows) return fail_node(c, n, "slice runs past the %s", "rows");
            v->ref.offset += (uint64_t)(n->start * src->ld) * c->es;
            v->rows = n->len;
            v->seq_rows = 0;
        } else {
            v->ref.offset += (uint64_t)n->start * c->es;
            v->cols = n->len;
        }
        return 0;
    }
    /* RESHAPE: a contiguous view can take any shape; a strided one (a
     * column block) only a shape with the same rows and columns. */
    int64_t rows = 1, cols = n->shape[0];
    seq = 0;
    if (n->ndim >= 2) {
        rows = bind_rows(n, c->bucket, &seq);
        cols = node_cols(n, c->bucket);
    }
    if (src->per_seq) {
        /* a row per sequence stays one: [1, H] and [H] are the same rows */
        if (seq || rows != 1 || cols != src->cols)
            return fail_node(c, n, "a packed batch's row per sequence can only be reshaped to [%s] or [1, H]", "H");
        rows = src->rows;
    }
    if (src->ld != src->cols && (rows != src->rows || cols != src->cols))
        return fail_node(c, n, "reshape of a %s view changes its rows", "strided");
    v->rows = rows;
    v->cols = cols;
    v->seq_rows = seq;
    v->ld = src->ld == src->cols ? cols : src->ld;
    return 0;
}

int lower_node(lower_ctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    switch (n->op) {
    case IR_OP_INPUT:
    case IR_OP_WEIGHT:
    case IR_OP_CONST:
    case IR_OP_REL_POS_BIAS: /* a table of the weight blob (lower_weights.c) */
    case IR_OP_PAD_POSITIONS:
    case IR_OP_ARANGE: return 0;
    case IR_OP_EMBED_LN: return lower_embed_ln(c, i);
    case IR_OP_ADD_LN: return lower_add_ln(c, i);
    case IR_OP_ATTENTION: return lower_attention(c, i);
    case IR_OP_LINEAR: return lower_linear(c, i);
    case IR_OP_LINEAR_LN: return lower_linear_ln(c, i);
    case IR_OP_POOL:
    case IR_OP_L2_NORMALIZE: return lower_pool(c, i);
    case IR_OP_SLICE:
    case IR_OP_RESHAPE: return lower_reshape_slice(c, i);
    default:
        return fail_node(c, n, "no kernel implements this op after fusion (%s)",
                         "the fusion passes found no pattern that absorbs it");
    }
}

/* ------------------------------------------------------------ prefetch */

/* Bytes of a column-major operand rows x cols (ld, batch, stride) spans. */
static uint64_t operand_bytes(int64_t rows, int64_t cols, int64_t ld, int batch, int64_t stride, plan_dtype t) {
    return (uint64_t)((cols - 1) * ld + rows + (int64_t)(batch - 1) * stride) * (uint64_t)plan_dtype_size(t);
}

/* The largest weight operand step st reads whole: its first byte in
 * *first and its size (0: none).  Gathers read a few rows of their
 * tables, so an embedding's tables are no prefetch target. */
static uint64_t step_weights(const plan *p, const sched_step *st, int seq_len, int seqs, uint64_t *first) {
    uint64_t best = 0;
    if (st->kind == SCHED_STEP_GEMM) {
        const sched_gemm *g = &st->gemm;
        const sched_ref refs[3] = {g->a, g->b, g->bias};
        const uint64_t bytes[3] = {
            operand_bytes(g->transa ? g->k : g->m, g->transa ? g->m : g->k, g->lda, g->batch_count, g->stride_a, g->ab_type),
            operand_bytes(g->transb ? g->n : g->k, g->transb ? g->k : g->n, g->ldb, g->batch_count, g->stride_b, g->ab_type),
            (uint64_t)g->m * (uint64_t)plan_dtype_size(g->bias_type)};
        for (int i = 0; i < 3; i++)
            if (refs[i].buf == SCHED_BUF_WEIGHTS && bytes[i] > best) best = bytes[i], *first = refs[i].offset;
        return best;
    }
    const kernel_spec *s = &p->kernels[st->launch.kernel].spec;
    if (s->kind == KERNEL_KIND_EMBED_LN) return 0;
    kernel_arg a[KERNEL_MAX_ARGS];
    kernel_args_in(s, seq_len, seqs, a);
    for (int i = 0; i < st->launch.nargs; i++)
        if (a[i].use == KERNEL_ARG_READ && st->launch.args[i].buf == SCHED_BUF_WEIGHTS && a[i].bytes > best)
            best = a[i].bytes, *first = st->launch.args[i].offset;
    return best;
}

void lower_prefetch(lower_ctx *c) {
    sched_bucket *b = c->out;
    for (int i = 0; i + 1 < b->nsteps; i++) {
        sched_launch *l = &b->steps[i].launch;
        if (b->steps[i].kind != SCHED_STEP_KERNEL) continue;
        uint64_t first = 0, bytes = step_weights(c->p, &b->steps[i + 1], b->seq_len, b->max_seqs, &first);
        if (!bytes || first + bytes > c->p->weights_size) continue;
        l->args[l->nargs - 2] = (sched_ref){SCHED_BUF_WEIGHTS, first};
        l->args[l->nargs - 1] = (sched_ref){SCHED_BUF_WEIGHTS, first + bytes - 1};
    }
}
