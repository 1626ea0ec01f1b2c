/*
 * lower — see lower.h for the three jobs.  A few decisions worth the words:
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
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

#define LOWER_ALIGN 256u

static uint64_t align_up(uint64_t x) { return (x + LOWER_ALIGN - 1) & ~(uint64_t)(LOWER_ALIGN - 1); }

static void store_elem(uint8_t *dst, plan_dtype t, float v) {
    if (t == PLAN_DTYPE_F32) {
        memcpy(dst, &v, 4);
    } else {
        uint16_t h = t == PLAN_DTYPE_F16 ? half_f32_to_f16(v) : half_f32_to_bf16(v);
        memcpy(dst, &h, 2);
    }
}

static int64_t node_numel_const(const ir_node *n) {
    int64_t e = 1;
    for (int k = 0; k < n->ndim; k++) e *= n->shape[k];
    return e;
}

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

static int is_param(const ir_node *n) { return n->op == IR_OP_WEIGHT || n->op == IR_OP_CONST; }

/* ------------------------------------------------------------- weights */

int lower_weights_build(const ir_graph *g, const weights *w, plan_dtype precision, lower_weights *out, diag *d) {
    memset(out, 0, sizeof *out);
    out->count = g->count;
    out->offset = malloc((size_t)(g->count ? g->count : 1) * sizeof *out->offset);
    if (!out->offset) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    char *used = calloc((size_t)(g->count ? g->count : 1), 1);
    if (!used) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (int i = 0; i < g->count; i++) {
        out->offset[i] = -1;
        if (is_param(&g->nodes[i])) continue;
        for (int k = 0; k < g->nodes[i].nsrc; k++) used[g->nodes[i].src[k]] = 1;
    }
    uint64_t size = 0;
    size_t es = (size_t)plan_dtype_size(precision);
    for (int i = 0; i < g->count; i++) {
        if (!used[i] || !is_param(&g->nodes[i])) continue;
        out->offset[i] = (int64_t)size;
        size = align_up(size + (uint64_t)node_numel_const(&g->nodes[i]) * es);
    }
    out->size = size;
    out->blob = calloc(size ? size : 1, 1);
    if (!out->blob) {
        free(used);
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory for %llu bytes of weights", (unsigned long long)size);
    }
    for (int i = 0; i < g->count; i++) {
        if (out->offset[i] < 0) continue;
        const ir_node *n = &g->nodes[i];
        int64_t numel = node_numel_const(n);
        uint8_t *dst = out->blob + out->offset[i];
        if (n->op == IR_OP_CONST) {
            for (int64_t e = 0; e < numel; e++) store_elem(dst + (size_t)e * es, precision, n->data[e]);
            continue;
        }
        const weights_tensor *t = weights_find(w, n->weight);
        if (!t || weights_tensor_numel(t) != numel) {
            free(used);
            return diag_set(d, DIAG_CODE_INPUT, "%s: weight '%s' is missing or changed size", w->path, n->weight);
        }
        for (int64_t e = 0; e < numel; e++) store_elem(dst + (size_t)e * es, precision, weights_tensor_get_f32(t, e));
    }
    free(used);
    return 0;
}

void lower_weights_free(lower_weights *w) {
    free(w->blob);
    free(w->offset);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------- kernels */

void lower_kernels_init(lower_kernels *k) { memset(k, 0, sizeof *k); }

void lower_kernels_free(lower_kernels *k) {
    for (int i = 0; i < k->count; i++) {
        free(k->entries[i]);
        free(k->sources[i]);
    }
    free(k->specs);
    free(k->entries);
    free(k->sources);
    memset(k, 0, sizeof *k);
}

static int kernels_intern(lower_kernels *k, const kernel_spec *s, diag *d) {
    char *text = NULL, *entry = NULL;
    if (kernel_source(s, &text, &entry, d)) return -1;
    for (int i = 0; i < k->count; i++) {
        if (!strcmp(k->entries[i], entry)) {
            if (strcmp(k->sources[i], text)) {
                free(text);
                free(entry);
                return diag_set(d, DIAG_CODE_INTERNAL, "internal: two kernels named %s with different text",
                                k->entries[i]);
            }
            free(text);
            free(entry);
            return i;
        }
    }
    if (k->count == k->cap) {
        int cap = k->cap ? k->cap * 2 : 16;
        kernel_spec *sp = realloc(k->specs, (size_t)cap * sizeof *sp);
        if (sp) k->specs = sp;
        char **en = realloc(k->entries, (size_t)cap * sizeof *en);
        if (en) k->entries = en;
        char **so = realloc(k->sources, (size_t)cap * sizeof *so);
        if (so) k->sources = so;
        if (!sp || !en || !so) {
            free(text);
            free(entry);
            return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        }
        k->cap = cap;
    }
    k->specs[k->count] = *s;
    k->entries[k->count] = entry;
    k->sources[k->count] = text;
    return k->count++;
}

/* --------------------------------------------------------------- views */

typedef struct view {
    int valid;
    sched_ref ref;
    int root;          /* node that owns the arena buffer, -1 for weights/request */
    int64_t rows;      /* bound rows (bucket for S) */
    int seq_rows;      /* rows are the sequence axis */
    int64_t cols;
    int64_t ld;        /* elements between rows */
} view;

typedef struct lctx {
    const ir_graph *g;
    const lower_weights *w;
    plan_dtype prec;
    size_t es;
    int bucket;
    lower_kernels *k;
    diag *d;
    view *v;
    int64_t *last_use;
    sched_bucket *out;
    int cap_steps;
    /* arena free list */
    uint64_t *free_off, *free_len;
    int nfree;
    uint64_t top;
} lctx;

static int fail_node(lctx *c, const ir_node *n, const char *fmt, const char *what) {
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

/* Arena: first fit over a free list kept sorted by offset. */
static int arena_alloc(lctx *c, uint64_t size, uint64_t *off) {
    size = align_up(size);
    for (int i = 0; i < c->nfree; i++) {
        if (c->free_len[i] >= size) {
            *off = c->free_off[i];
            c->free_off[i] += size;
            c->free_len[i] -= size;
            return 0;
        }
    }
    /* Grow the top, merging with a free block that ends at the top. */
    if (c->nfree && c->free_off[c->nfree - 1] + c->free_len[c->nfree - 1] == c->top) {
        *off = c->free_off[c->nfree - 1];
        c->top = *off + size;
        c->nfree--;
    } else {
        *off = c->top;
        c->top += size;
    }
    return 0;
}

static int arena_release(lctx *c, uint64_t off, uint64_t size) {
    size = align_up(size);
    int i = 0;
    while (i < c->nfree && c->free_off[i] < off) i++;
    memmove(c->free_off + i + 1, c->free_off + i, (size_t)(c->nfree - i) * sizeof *c->free_off);
    memmove(c->free_len + i + 1, c->free_len + i, (size_t)(c->nfree - i) * sizeof *c->free_len);
    c->free_off[i] = off;
    c->free_len[i] = size;
    c->nfree++;
    /* coalesce neighbours */
    for (int j = 0; j + 1 < c->nfree;) {
        if (c->free_off[j] + c->free_len[j] == c->free_off[j + 1]) {
            c->free_len[j] += c->free_len[j + 1];
            memmove(c->free_off + j + 1, c->free_off + j + 2, (size_t)(c->nfree - j - 2) * sizeof *c->free_off);
            memmove(c->free_len + j + 1, c->free_len + j + 2, (size_t)(c->nfree - j - 2) * sizeof *c->free_len);
            c->nfree--;
        } else {
            j++;
        }
    }
    return 0;
}

static sched_step *step_new(lctx *c, const ir_node *n, sched_step_kind kind) {
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

static sched_ref weight_ref(lctx *c, int node) {
    sched_ref r = {SCHED_BUF_WEIGHTS, (uint64_t)c->w->offset[node]};
    return r;
}

static const sched_ref REF_NONE = {SCHED_BUF_NONE, 0};

/* The source view of a node operand, which must be an activation. */
static const view *act_view(lctx *c, const ir_node *n, int k) {
    const view *v = &c->v[n->src[k]];
    return v->valid ? v : NULL;
}

static int make_output(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    view *v = &c->v[i];
    int seq;
    v->rows = bind_rows(n, c->bucket, &seq);
    v->seq_rows = seq;
    v->cols = node_cols(n, c->bucket);
    if (n->ndim == 1 && !seq) {
        /* A vector ([H], a sentence embedding) is one row, as a reshape to [H] views it. */
        v->rows = 1;
        v->cols = n->shape[0];
    }
    v->ld = v->cols;
    v->root = i;
    uint64_t off;
    arena_alloc(c, (uint64_t)(v->rows * v->cols) * c->es, &off);
    v->ref.buf = SCHED_BUF_ARENA;
    v->ref.offset = off;
    v->valid = 1;
    return 0;
}

/* Intern the kernel of `s` and append its launch with `args`. */
static int emit_kernel_step(lctx *c, const ir_node *n, const kernel_spec *s, const sched_ref *args, int nargs,
                            double flops, double bytes) {
    int ki = kernels_intern(c->k, s, c->d);
    if (ki < 0) return -1;
    sched_step *st = step_new(c, n, SCHED_STEP_KERNEL);
    if (!st) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
    st->launch.kernel = ki;
    if (kernel_dims(s, &st->launch.dims, c->d)) return -1;
    st->launch.nargs = nargs;
    memcpy(st->launch.args, args, (size_t)nargs * sizeof *args);
    st->flops = flops;
    st->min_hbm_bytes = (uint64_t)bytes;
    return 0;
}

static int index_kind(lctx *c, const ir_node *owner, int idx, kernel_index *kind) {
    const ir_node *n = &c->g->nodes[idx];
    if (n->op == IR_OP_ARANGE) { *kind = KERNEL_INDEX_POSITION; return 0; }
    if (n->op == IR_OP_INPUT && !strcmp(n->name, "input_ids")) { *kind = KERNEL_INDEX_INPUT_IDS; return 0; }
    if (n->op == IR_OP_INPUT && !strcmp(n->name, "token_type_ids")) { *kind = KERNEL_INDEX_TOKEN_TYPES; return 0; }
    return fail_node(c, owner, "gather index '%s' is not input_ids, token_type_ids or an arange", n->name);
}

static int lower_embed_ln(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_EMBED_LN;
    s.dtype = c->prec;
    s.bucket = c->bucket;
    s.hidden = (int)n->shape[n->ndim - 1];
    s.eps = n->eps;
    s.ngathers = n->ngathers;
    if (n->ngathers < 1 || n->ngathers > KERNEL_MAX_GATHERS) return fail_node(c, n, "%s gathers (expected 1 to 3)", "too many");
    sched_ref tables[KERNEL_MAX_GATHERS] = {REF_NONE, REF_NONE, REF_NONE};
    double bytes = 0;
    for (int g = 0; g < n->ngathers; g++) {
        int t = n->src[2 + 2 * g], x = n->src[3 + 2 * g];
        if (c->w->offset[t] < 0) return fail_node(c, n, "gather table %s is not a weight", c->g->nodes[t].name);
        if (index_kind(c, n, x, &s.gather_index[g])) return -1;
        s.table_rows[g] = (int)c->g->nodes[t].shape[0];
        tables[g] = weight_ref(c, t);
        bytes += (double)c->bucket * (double)s.hidden * (double)c->es;
        if (s.gather_index[g] != KERNEL_INDEX_POSITION) bytes += 4.0 * c->bucket;
    }
    make_output(c, i);
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, tables[0], tables[1], tables[2],
                        weight_ref(c, n->src[0]), weight_ref(c, n->src[1])};
    return emit_kernel_step(c, n, &s, args, 7, 10.0 * c->bucket * s.hidden,
                            bytes + 2.0 * s.hidden * c->es + (double)c->bucket * s.hidden * c->es);
}

static int require_contiguous(lctx *c, const ir_node *n, const view *v, const char *what) {
    if (!v) return fail_node(c, n, "operand %s is not an activation", what);
    if (v->ld != v->cols) return fail_node(c, n, "operand %s must have contiguous rows", what);
    return 0;
}

static int lower_add_ln(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const view *x = act_view(c, n, 0);
    if (require_contiguous(c, n, x, "x")) return -1;
    int pos = 3;
    const view *res = NULL;
    int bias = -1;
    if (n->has_residual) {
        res = act_view(c, n, pos++);
        if (require_contiguous(c, n, res, "residual")) return -1;
    }
    if (n->has_bias) bias = n->src[pos++];
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_ADD_LN;
    s.dtype = c->prec;
    s.bucket = c->bucket;
    s.hidden = (int)x->cols;
    s.eps = n->eps;
    s.has_bias = n->has_bias;
    s.has_residual = n->has_residual;
    make_output(c, i);
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, x->ref, bias >= 0 ? weight_ref(c, bias) : REF_NONE,
                        res ? res->ref : REF_NONE, weight_ref(c, n->src[1]), weight_ref(c, n->src[2])};
    double rows = (double)x->rows, h = (double)s.hidden;
    return emit_kernel_step(c, n, &s, args, 7, 8.0 * rows * h,
                            (double)c->es * (rows * h * (2 + (res != NULL)) + h * (2 + (bias >= 0))));
}

static int lower_attention(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const view *q = act_view(c, n, 0), *k = act_view(c, n, 1), *v = act_view(c, n, 2);
    if (!q || !k || !v) return fail_node(c, n, "%s operands must be activations", "q, k and v");
    if (q->root != k->root || q->root != v->root || q->ld != k->ld || q->ld != v->ld)
        return fail_node(c, n, "%s must be column blocks of one tensor (merge the q/k/v projections)", "q, k and v");
    if (n->nsrc > 3) {
        const ir_node *m = &c->g->nodes[n->src[3]];
        if (m->op != IR_OP_INPUT || strcmp(m->name, "attention_mask"))
            return fail_node(c, n, "the mask must be the attention_mask input, not '%s'", m->name);
    }
    const view *root = &c->v[q->root];
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_ATTENTION;
    s.dtype = c->prec;
    s.bucket = c->bucket;
    s.heads = n->heads;
    s.head_dim = n->head_dim;
    s.scale = n->scale;
    s.qkv_ld = (int)q->ld;
    s.q_off = (int)((q->ref.offset - root->ref.offset) / c->es) + n->q_off;
    s.k_off = (int)((k->ref.offset - root->ref.offset) / c->es) + n->k_off;
    s.v_off = (int)((v->ref.offset - root->ref.offset) / c->es) + n->v_off;
    s.ctx_ld = n->heads * n->head_dim;
    make_output(c, i);
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, root->ref};
    double b = c->bucket, h = (double)s.ctx_ld;
    return emit_kernel_step(c, n, &s, args, 3, 4.0 * b * b * h + 5.0 * b * b * n->heads,
                            (double)c->es * (4.0 * b * h) + 4.0 * b);
}

/*
 * POOL: one block reads the [S, H] activation (rows < len the mask keeps)
 * and writes the [H] result, normalised when the pass fused an
 * l2_normalize in.  The mask must be the request's attention_mask, which
 * the kernel reads from the request block.
 */
static int lower_pool(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const view *x = act_view(c, n, 0);
    if (require_contiguous(c, n, x, "x")) return -1;
    if (!x->seq_rows) return fail_node(c, n, "x must have one row per token (%s)", "[S, H]");
    if (n->nsrc > 1) {
        const ir_node *m = &c->g->nodes[n->src[1]];
        if (m->op != IR_OP_INPUT || strcmp(m->name, "attention_mask"))
            return fail_node(c, n, "the mask must be the attention_mask input, not '%s'", m->name);
    }
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_POOL;
    s.dtype = c->prec;
    s.bucket = c->bucket;
    s.hidden = (int)x->cols;
    s.pool_mode = lower_pool_mode(n->pool_mode);
    s.normalize = n->normalize ? 1 : 0;
    make_output(c, i);
    sched_ref args[] = {c->v[i].ref, {SCHED_BUF_REQUEST, 0}, x->ref};
    double b = c->bucket, h = (double)s.hidden;
    int mean = s.pool_mode == PLAN_POOL_MEAN;
    double flops = (mean ? b * h + h : 0.0) + (s.normalize ? 3.0 * h : 0.0);
    double bytes = (double)c->es * ((mean ? b * h : h) + h) + (mean ? 4.0 * b : 0.0);
    return emit_kernel_step(c, n, &s, args, 3, flops, bytes);
}

static int lower_linear(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const view *x = act_view(c, n, 0);
    if (!x) return fail_node(c, n, "operand %s is not an activation", "x");
    int w = n->src[1];
    if (c->w->offset[w] < 0) return fail_node(c, n, "weight '%s' is not a constant", c->g->nodes[w].name);
    int pos = 2, bias = -1;
    const view *res = NULL;
    if (n->has_bias) bias = n->src[pos++];
    if (n->has_residual) {
        res = act_view(c, n, pos++);
        if (!res) return fail_node(c, n, "operand %s is not an activation", "residual");
    }
    if (bias >= 0 && c->w->offset[bias] < 0) return fail_node(c, n, "bias '%s' is not a constant", c->g->nodes[bias].name);
    if (!x->seq_rows && x->rows != 1)
        return fail_node(c, n, "x must have S rows or exactly one row, not %s", "a fixed count");
    int64_t N = c->g->nodes[w].shape[0], K = c->g->nodes[w].shape[1], M = x->rows;
    make_output(c, i);
    const view *o = &c->v[i];
    double flops = 2.0 * (double)M * (double)N * (double)K;
    double bytes = (double)c->es * ((double)M * K + (double)N * K + (double)M * N + (bias >= 0 ? N : 0) +
                                    (res ? (double)M * N : 0));
    int cublas_ok = !n->has_act || n->act == IR_ACT_RELU;
    if (cublas_ok) {
        sched_step *st = step_new(c, n, SCHED_STEP_GEMM);
        if (!st) return diag_set(c->d, DIAG_CODE_INTERNAL, "out of memory");
        sched_gemm *gm = &st->gemm;
        gm->transa = 1;
        gm->transb = 0;
        gm->m = N;
        gm->n = M;
        gm->k = K;
        gm->lda = K;
        gm->ldb = x->ld;
        gm->ldd = o->ld;
        gm->ldc = res ? res->ld : o->ld;
        gm->batch_count = 1;
        gm->ab_type = gm->cd_type = gm->bias_type = c->prec;
        gm->alpha = 1.0f;
        gm->beta = res ? 1.0f : 0.0f;
        int relu = n->has_act && n->act == IR_ACT_RELU;
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
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = KERNEL_KIND_GEMM;
    s.dtype = c->prec;
    s.bucket = (int)M;
    s.n = (int)N;
    s.k = (int)K;
    s.x_ld = (int)x->ld;
    s.out_ld = (int)o->ld;
    s.res_ld = res ? (int)res->ld : 0;
    s.has_bias = bias >= 0;
    s.has_residual = res != NULL;
    s.has_act = n->has_act;
    s.act = lower_act(n->act);
    sched_ref args[] = {o->ref, {SCHED_BUF_REQUEST, 0}, x->ref, weight_ref(c, w),
                        bias >= 0 ? weight_ref(c, bias) : REF_NONE, res ? res->ref : REF_NONE};
    return emit_kernel_step(c, n, &s, args, 6, flops, bytes);
}

static int lower_view(lctx *c, int i) {
    const ir_node *n = &c->g->nodes[i];
    const view *src = act_view(c, n, 0);
    if (!src) return fail_node(c, n, "%s of a non-activation", "a view");
    view *v = &c->v[i];
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
    if (src->ld != src->cols && (rows != src->rows || cols != src->cols))
        return fail_node(c, n, "reshape of a %s view changes its rows", "strided");
    v->rows = rows;
    v->cols = cols;
    v->seq_rows = seq;
    v->ld = src->ld == src->cols ? cols : src->ld;
    return 0;
}

int lower_bucket(const ir_graph *g, const lower_weights *w, plan_dtype precision, int bucket, lower_kernels *k,
                 sched_bucket *out, diag *d) {
    memset(out, 0, sizeof *out);
    out->seq_len = bucket;
    lctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.w = w;
    c.prec = precision;
    c.es = (size_t)plan_dtype_size(precision);
    c.bucket = bucket;
    c.k = k;
    c.d = d;
    c.out = out;
    c.v = calloc((size_t)g->count + 1, sizeof *c.v);
    c.last_use = malloc(((size_t)g->count + 1) * sizeof *c.last_use);
    c.free_off = malloc(((size_t)g->count + 1) * sizeof *c.free_off);
    c.free_len = malloc(((size_t)g->count + 1) * sizeof *c.free_len);
    int rc = 0;
    if (!c.v || !c.last_use || !c.free_off || !c.free_len) {
        rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        goto done;
    }
    /* Roots: the buffer a node's data lives in (views forward to their source's root). */
    int *root = malloc(((size_t)g->count + 1) * sizeof *root);
    if (!root) { rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory"); goto done; }
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        root[i] = (n->op == IR_OP_SLICE || n->op == IR_OP_RESHAPE) ? root[n->src[0]] : i;
        c.last_use[i] = -1;
    }
    for (int i = 0; i < g->count; i++)
        for (int s = 0; s < g->nodes[i].nsrc; s++) {
            int r = root[g->nodes[i].src[s]];
            if (c.last_use[r] < i) c.last_use[r] = i;
        }
    for (int o = 0; o < g->noutputs; o++) c.last_use[root[g->outputs[o].node]] = INT64_MAX;

    for (int i = 0; i < g->count && !rc; i++) {
        const ir_node *n = &g->nodes[i];
        switch (n->op) {
        case IR_OP_INPUT:
        case IR_OP_WEIGHT:
        case IR_OP_CONST:
        case IR_OP_ARANGE:
            break;
        case IR_OP_EMBED_LN: rc = lower_embed_ln(&c, i); break;
        case IR_OP_ADD_LN: rc = lower_add_ln(&c, i); break;
        case IR_OP_ATTENTION: rc = lower_attention(&c, i); break;
        case IR_OP_LINEAR: rc = lower_linear(&c, i); break;
        case IR_OP_POOL: rc = lower_pool(&c, i); break;
        case IR_OP_SLICE:
        case IR_OP_RESHAPE: rc = lower_view(&c, i); break;
        default:
            rc = fail_node(&c, n, "no kernel implements this op after fusion (%s)",
                           "the fusion passes found no pattern that absorbs it");
        }
        if (rc) break;
        /* Release buffers whose last reader was this node. */
        for (int s = 0; s < n->nsrc; s++) {
            int r = root[n->src[s]];
            if (c.last_use[r] == i && c.v[r].valid && c.v[r].ref.buf == SCHED_BUF_ARENA) {
                arena_release(&c, c.v[r].ref.offset, (uint64_t)(c.v[r].rows * c.v[r].cols) * c.es);
                c.last_use[r] = -2; /* released */
            }
        }
    }
    if (!rc) {
        out->outputs = calloc((size_t)g->noutputs + 1, sizeof *out->outputs);
        if (!out->outputs) rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
        for (int o = 0; !rc && o < g->noutputs; o++) {
            const view *v = &c.v[g->outputs[o].node];
            if (!v->valid) {
                rc = diag_set(d, DIAG_CODE_INPUT, "output '%s' is not computed by any kernel", g->outputs[o].name);
                break;
            }
            sched_output *so = &out->outputs[out->noutputs++];
            size_t len = strlen(g->outputs[o].name) + 1;
            so->name = malloc(len);
            if (!so->name) { rc = diag_set(d, DIAG_CODE_INTERNAL, "out of memory"); break; }
            memcpy(so->name, g->outputs[o].name, len);
            so->ref = v->ref;
            so->dtype = precision;
            so->rows_are_seq = v->seq_rows;
            so->cols = v->cols;
            so->row_stride = v->ld;
        }
    }
    out->arena_bytes = c.top;
    free(root);
done:
    free(c.v);
    free(c.last_use);
    free(c.free_off);
    free(c.free_len);
    if (rc) sched_bucket_free(out);
    return rc;
}

int lower_info_get(const ir_graph *g, lower_info *info, diag *d) {
    memset(info, 0, sizeof *info);
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        if (n->op == IR_OP_INPUT && !strcmp(n->name, "attention_mask")) {
            for (int j = i + 1; j < g->count; j++)
                for (int s = 0; s < g->nodes[j].nsrc; s++)
                    if (g->nodes[j].src[s] == i) info->uses_mask = 1;
        }
        if (n->op != IR_OP_EMBED_LN) continue;
        info->hidden = n->shape[n->ndim - 1];
        for (int gi = 0; gi < n->ngathers; gi++) {
            const ir_node *t = &g->nodes[n->src[2 + 2 * gi]], *x = &g->nodes[n->src[3 + 2 * gi]];
            if (x->op == IR_OP_INPUT && !strcmp(x->name, "input_ids")) info->vocab_size = t->shape[0];
            if (x->op == IR_OP_INPUT && !strcmp(x->name, "token_type_ids")) {
                info->type_vocab_size = t->shape[0];
                info->uses_token_types = 1;
            }
        }
    }
    if (!info->vocab_size)
        return diag_set(d, DIAG_CODE_INPUT, "%s: no embedding gather of input_ids found after fusion",
                        g->source_path ? g->source_path : "model");
    return 0;
}
