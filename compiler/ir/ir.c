/*
 * ir — the graph container and its shape inference.
 *
 * The container is deliberately dumb: ir_graph_add() appends a node and
 * copies its name and sources, nothing more, so the loader (and later the
 * fusion passes) can build and rewrite graphs freely and check once, at the
 * end, with ir_graph_infer().  Lookups by name are a linear scan: graphs are
 * a few hundred to a couple of thousand nodes and a name is looked up only
 * while loading, so a hash table would be code without a reason.
 *
 * Shape inference is where the user's mistakes in a hand-written YAML
 * surface, so every rule is spelled out per op and every failure says which
 * op, which node, which operand (by the YAML key the user wrote, "gamma",
 * "weight", ...), the shapes involved and what was expected, at the line
 * and column that defined the node.  A shape is a handful of int64s in
 * which IR_DIM_SEQ stands for S; two shapes agree only if they agree
 * symbolically, so S never silently matches a constant.  The one check that
 * needs a value of S (a slice of an S axis running past its end) is left to
 * run time.
 *
 * Dtypes: request inputs and arange are int32; weights keep the type they
 * are stored in (F32/F16/BF16); every computed floating tensor is F32,
 * because the graph describes mathematics and the precision a kernel uses
 * is the compiler's choice, not the graph's.  Pure data movement (reshape,
 * transpose, slice) keeps int32 as int32.  A CONST (folded at compile time)
 * is F32 whatever it was computed from.
 *
 * The fused ops have a variable number of sources (optional bias, residual,
 * mask, 1..3 gathers), so the arity and the operand names that messages use
 * are functions of the node, not of the op alone.  Their rules are checked
 * as strictly as the YAML ops': a pass that builds a wrong node is caught
 * here, by the infer every pass runs on its result.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ir_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

void ir_graph_init(ir_graph *g) {
    memset(g, 0, sizeof *g);
    g->tokenizer.do_lower_case = -1;
    g->tokenizer.strip_accents = -1;
    g->tokenizer.tokenize_chinese_chars = -1;
    g->tokenizer.add_prefix_space = -1;
    g->tokenizer.trim_offsets = -1;
}

void ir_graph_free(ir_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->count; i++) ir_node_release(&g->nodes[i]);
    free(g->nodes);
    for (int i = 0; i < g->noutputs; i++) free(g->outputs[i].name);
    free(g->outputs);
    free(g->name);
    free(g->source_path);
    free(g->weights_path);
    ir_tokenizer *t = &g->tokenizer;
    free(t->vocab_path);
    free(t->json_path);
    free(t->bpe_vocab_path);
    free(t->bpe_merges_path);
    free(t->tokenizer_class);
    free(t->unk_token);
    free(t->cls_token);
    free(t->sep_token);
    free(t->pad_token);
    free(t->mask_token);
    for (int i = 0; i < g->nlabels; i++) free(g->labels[i]);
    free(g->labels);
    ir_graph_init(g);
}

void ir_node_release(ir_node *n) {
    free(n->name);
    free(n->weight);
    free(n->data);
    n->name = NULL;
    n->weight = NULL;
    n->data = NULL;
}

int ir_graph_add(ir_graph *g, ir_op op, const char *name, const int *src, int nsrc) {
    if (nsrc < 0 || nsrc > IR_MAX_SRCS || (nsrc > 0 && !src)) return -1;
    if (g->count == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        ir_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return -1;
        g->nodes = nodes;
        g->cap = cap;
    }
    ir_node *n = &g->nodes[g->count];
    memset(n, 0, sizeof *n);
    n->name = ir_strdup(name ? name : "");
    if (!n->name) return -1;
    n->op = op;
    n->nsrc = nsrc;
    for (int i = 0; i < IR_MAX_SRCS; i++) n->src[i] = i < nsrc ? src[i] : -1;
    n->scale = 1.0f;  /* a SCALE node that nobody parameterised is the identity */
    return g->count++;
}

int ir_graph_find(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

int ir_graph_add_output(ir_graph *g, const char *name, int node) {
    ir_output *outs = realloc(g->outputs, (size_t)(g->noutputs + 1) * sizeof *outs);
    if (!outs) return -1;
    g->outputs = outs;
    char *copy = ir_strdup(name);
    if (!copy) return -1;
    outs[g->noutputs].name = copy;
    outs[g->noutputs].node = node;
    return g->noutputs++;
}

/* One owned string copied; 0 on success (a NULL copies to NULL). */
static int ir_dup_into(char **dst, const char *s) {
    *dst = ir_strdup(s);
    return s && !*dst ? -1 : 0;
}

int ir_graph_clone(ir_graph *dst, const ir_graph *src) {
    ir_graph_init(dst);
    int failed = 0;
    if (src->count > 0) {
        dst->nodes = calloc((size_t)src->count, sizeof *dst->nodes);
        if (!dst->nodes) return -1;
        dst->cap = src->count;
    }
    for (int i = 0; i < src->count && !failed; i++) {
        const ir_node *s = &src->nodes[i];
        ir_node *n = &dst->nodes[i];
        *n = *s;
        n->name = n->weight = NULL;
        n->data = NULL;
        dst->count = i + 1;  /* from here on ir_graph_free releases it */
        failed |= ir_dup_into(&n->name, s->name) | ir_dup_into(&n->weight, s->weight);
        if (s->data) {
            int64_t numel = ir_node_numel(s, 1);
            n->data = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *n->data);
            if (n->data) memcpy(n->data, s->data, (size_t)(numel > 0 ? numel : 0) * sizeof *n->data);
            else failed = 1;
        }
    }
    for (int i = 0; i < src->noutputs && !failed; i++)
        failed |= ir_graph_add_output(dst, src->outputs[i].name, src->outputs[i].node) < 0;
    dst->max_seq_len = src->max_seq_len;
    dst->has_tokenizer = src->has_tokenizer;
    const ir_tokenizer *st = &src->tokenizer;
    ir_tokenizer *dt = &dst->tokenizer;
    *dt = *st;
    dt->vocab_path = dt->json_path = dt->bpe_vocab_path = dt->bpe_merges_path = dt->tokenizer_class = NULL;
    dt->unk_token = dt->cls_token = dt->sep_token = dt->pad_token = dt->mask_token = NULL;
    failed |= ir_dup_into(&dst->name, src->name) | ir_dup_into(&dst->source_path, src->source_path) |
              ir_dup_into(&dst->weights_path, src->weights_path) |
              ir_dup_into(&dt->vocab_path, st->vocab_path) | ir_dup_into(&dt->unk_token, st->unk_token) |
              ir_dup_into(&dt->cls_token, st->cls_token) | ir_dup_into(&dt->sep_token, st->sep_token) |
              ir_dup_into(&dt->pad_token, st->pad_token) | ir_dup_into(&dt->mask_token, st->mask_token) |
              ir_dup_into(&dt->json_path, st->json_path) | ir_dup_into(&dt->bpe_vocab_path, st->bpe_vocab_path) |
              ir_dup_into(&dt->bpe_merges_path, st->bpe_merges_path) |
              ir_dup_into(&dt->tokenizer_class, st->tokenizer_class);
    if (src->nlabels && !failed) {
        if (!(dst->labels = calloc((size_t)src->nlabels, sizeof *dst->labels))) failed = 1;
        for (int i = 0; !failed && i < src->nlabels; i++, dst->nlabels++) failed |= ir_dup_into(&dst->labels[i], src->labels[i]);
    }
    if (failed) {
        ir_graph_free(dst);
        return -1;
    }
    return 0;
}

int64_t ir_dim_bind(int64_t dim, int64_t seq_len) {
    return dim == IR_DIM_SEQ ? seq_len : dim;
}

int64_t ir_node_numel(const ir_node *n, int64_t seq_len) {
    int64_t numel = 1;
    for (int i = 0; i < n->ndim; i++) numel *= ir_dim_bind(n->shape[i], seq_len);
    return numel;
}

const char *ir_op_name(ir_op op) {
    static const char *const names[IR_OP_COUNT] = {
        [IR_OP_INPUT] = "input",
        [IR_OP_WEIGHT] = "weight",
        [IR_OP_ARANGE] = "arange",
        [IR_OP_GATHER] = "gather",
        [IR_OP_ADD] = "add",
        [IR_OP_BIAS_ADD] = "bias_add",
        [IR_OP_LAYER_NORM] = "layer_norm",
        [IR_OP_MATMUL] = "matmul",
        [IR_OP_ACTIVATION] = "activation",
        [IR_OP_RESHAPE] = "reshape",
        [IR_OP_TRANSPOSE] = "transpose",
        [IR_OP_BATCHED_MATMUL] = "batched_matmul",
        [IR_OP_SCALE] = "scale",
        [IR_OP_MASK] = "mask",
        [IR_OP_SOFTMAX] = "softmax",
        [IR_OP_SLICE] = "slice",
        [IR_OP_POOL] = "pool",
        [IR_OP_L2_NORMALIZE] = "l2_normalize",
        [IR_OP_PAD_POSITIONS] = "pad_positions",
        [IR_OP_REL_POS_BIAS] = "rel_pos_bias",
        [IR_OP_SINUSOID] = "sinusoid",
        [IR_OP_CONST] = "const",
        [IR_OP_CONCAT] = "concat",
        [IR_OP_LINEAR] = "linear",
        [IR_OP_ATTENTION] = "attention",
        [IR_OP_ADD_LN] = "add_ln",
        [IR_OP_EMBED_LN] = "embed_ln",
    };
    return (unsigned)op < IR_OP_COUNT ? names[op] : "?";
}

const char *ir_act_name(ir_act act) {
    static const char *const names[IR_ACT_COUNT] = {
        [IR_ACT_GELU_ERF] = "gelu",
        [IR_ACT_GELU_TANH] = "gelu_tanh",
        [IR_ACT_RELU] = "relu",
        [IR_ACT_TANH] = "tanh",
    };
    return (unsigned)act < IR_ACT_COUNT ? names[act] : "?";
}

const char *ir_pool_mode_name(ir_pool_mode m) {
    static const char *const names[IR_POOL_COUNT] = {
        [IR_POOL_CLS] = "cls",
        [IR_POOL_MEAN] = "mean",
    };
    return (unsigned)m < IR_POOL_COUNT ? names[m] : "?";
}

const char *ir_dtype_name(ir_dtype t) {
    static const char *const names[IR_DTYPE_COUNT] = {
        [IR_DTYPE_F32] = "float32",
        [IR_DTYPE_F16] = "float16",
        [IR_DTYPE_BF16] = "bfloat16",
        [IR_DTYPE_I32] = "int32",
    };
    return (unsigned)t < IR_DTYPE_COUNT ? names[t] : "?";
}

/* One dimension as the YAML writes it: "S" or the number. */
static const char *ir_dim_str(int64_t dim, char *buf, size_t cap) {
    if (dim == IR_DIM_SEQ) snprintf(buf, cap, "S");
    else snprintf(buf, cap, "%lld", (long long)dim);
    return buf;
}

/* Shapes are written the way the YAML writes them, so an error message can
 * be compared with the file by eye. */
static const char *ir_dims_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t n = 0;
    if (cap == 0) return buf;
    buf[0] = '\0';
#define IR_APPEND(...)                                                   \
    do {                                                                 \
        int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);                \
        if (k_ < 0) return buf;                                          \
        n = n + (size_t)k_ < cap ? n + (size_t)k_ : cap - 1;             \
    } while (0)
    IR_APPEND("[");
    for (int i = 0; i < ndim; i++) {
        if (i) IR_APPEND(", ");
        if (shape[i] == IR_DIM_SEQ) IR_APPEND("S");
        else IR_APPEND("%lld", (long long)shape[i]);
    }
    IR_APPEND("]");
#undef IR_APPEND
    return buf;
}

const char *ir_shape_str(const ir_node *n, char *buf, size_t cap) {
    return ir_dims_str(n->shape, n->ndim, buf, cap);
}

void ir_graph_dump(const ir_graph *g, void *file) {
    FILE *f = file;
    char shape[96];
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        fprintf(f, "%4d %s = %s(", i, n->name, ir_op_name(n->op));
        for (int s = 0; s < n->nsrc; s++) {
            int j = n->src[s];
            fprintf(f, "%s%s", s ? ", " : "",
                    j >= 0 && j < g->count ? g->nodes[j].name : "?");
        }
        fprintf(f, ") %s %s", ir_dtype_name(n->dtype), ir_shape_str(n, shape, sizeof shape));
        switch (n->op) {
        case IR_OP_INPUT:
            if (n->optional) fprintf(f, " default=%d", (int)n->default_value);
            else fprintf(f, " required");
            if (n->unused) fprintf(f, " unused");
            break;
        case IR_OP_WEIGHT: fprintf(f, " weight=%s", n->weight ? n->weight : "?"); break;
        case IR_OP_LAYER_NORM: fprintf(f, " eps=%g", (double)n->eps); break;
        case IR_OP_ACTIVATION: fprintf(f, " fn=%s", ir_act_name(n->act)); break;
        case IR_OP_SCALE: fprintf(f, " by=%g", (double)n->scale); break;
        case IR_OP_BATCHED_MATMUL:
            fprintf(f, " transpose_b=%s", n->transpose_b ? "true" : "false");
            break;
        case IR_OP_TRANSPOSE:
            fprintf(f, " perm=[");
            for (int d = 0; d < n->ndim; d++) fprintf(f, "%s%d", d ? ", " : "", n->perm[d]);
            fprintf(f, "]");
            break;
        case IR_OP_SLICE:
            fprintf(f, " axis=%d start=%lld len=%lld", n->axis, (long long)n->start,
                    (long long)n->len);
            break;
        case IR_OP_CONST:
            fprintf(f, " values=%lld%s", (long long)ir_node_numel(n, 1), n->data ? "" : " (missing)");
            break;
        case IR_OP_CONCAT: fprintf(f, " axis=%d", n->axis); break;
        case IR_OP_LINEAR:
            fprintf(f, " bias=%s residual=%s act=%s", n->has_bias ? "yes" : "no",
                    n->has_residual ? "yes" : "no", n->has_act ? ir_act_name(n->act) : "none");
            break;
        case IR_OP_ATTENTION:
            fprintf(f, " heads=%d head_dim=%d scale=%g q_off=%d k_off=%d v_off=%d mask=%s bias=%s", n->heads,
                    n->head_dim, (double)n->scale, n->q_off, n->k_off, n->v_off,
                    ir_attention_has_mask(n) ? "yes" : "no", n->has_bias ? "yes" : "no");
            break;
        case IR_OP_PAD_POSITIONS: fprintf(f, " pad=%d", (int)n->pad_id); break;
        case IR_OP_REL_POS_BIAS: fprintf(f, " buckets=%d max_distance=%d", n->buckets, n->max_distance); break;
        case IR_OP_ADD_LN:
            fprintf(f, " eps=%g bias=%s residual=%s", (double)n->eps, n->has_bias ? "yes" : "no",
                    n->has_residual ? "yes" : "no");
            break;
        case IR_OP_EMBED_LN: fprintf(f, " eps=%g gathers=%d", (double)n->eps, n->ngathers); break;
        case IR_OP_POOL:
            fprintf(f, " mode=%s%s", ir_pool_mode_name(n->pool_mode), n->normalize ? " normalize" : "");
            break;
        default: break;
        }
        fprintf(f, "\n");
    }
    for (int i = 0; i < g->noutputs; i++) {
        int j = g->outputs[i].node;
        fprintf(f, "output %s = %s\n", g->outputs[i].name,
                j >= 0 && j < g->count ? g->nodes[j].name : "?");
    }
}

/* ---- shape inference ---------------------------------------------------- */

/* Everything one check needs to report an error at the node's place. */
typedef struct ir_infer_ctx {
    ir_graph *g;
    const char *file;
    const char *src;
    size_t src_len;
    diag *d;
} ir_infer_ctx;

/* The YAML key of each operand, so messages use the words the user wrote
 * (for the fused ops, the words of docs/passes.md). */
static const char *ir_operand_key_of_op(ir_op op, int i) {
    static const char *const keys[IR_OP_COUNT][IR_MAX_SRCS] = {
        [IR_OP_ARANGE] = {"like"},
        [IR_OP_GATHER] = {"table", "index"},
        [IR_OP_ADD] = {"a", "b"},
        [IR_OP_BIAS_ADD] = {"x", "bias"},
        [IR_OP_LAYER_NORM] = {"x", "gamma", "beta"},
        [IR_OP_MATMUL] = {"x", "weight"},
        [IR_OP_ACTIVATION] = {"x"},
        [IR_OP_RESHAPE] = {"x"},
        [IR_OP_TRANSPOSE] = {"x"},
        [IR_OP_BATCHED_MATMUL] = {"a", "b"},
        [IR_OP_SCALE] = {"x"},
        [IR_OP_MASK] = {"x", "mask"},
        [IR_OP_SOFTMAX] = {"x"},
        [IR_OP_SLICE] = {"x"},
        [IR_OP_POOL] = {"x", "mask"},
        [IR_OP_L2_NORMALIZE] = {"x"},
        [IR_OP_PAD_POSITIONS] = {"ids"},
        [IR_OP_REL_POS_BIAS] = {"table", "like"},
    };
    const char *k = (unsigned)op < IR_OP_COUNT && i >= 0 && i < IR_MAX_SRCS ? keys[op][i] : NULL;
    return k ? k : "operand";
}

/* The fused ops' optional operands move the later ones, so their names
 * depend on the node's flags. */
static const char *ir_operand_key(const ir_node *n, int i) {
    static const char *const tables[IR_MAX_GATHERS] = {"table0", "table1", "table2"};
    static const char *const indices[IR_MAX_GATHERS] = {"index0", "index1", "index2"};
    switch (n->op) {
    case IR_OP_CONCAT: return "part";
    case IR_OP_LINEAR:
        if (i == 0) return "x";
        if (i == 1) return "weight";
        if (i == 2 && n->has_bias) return "bias";
        return "residual";
    case IR_OP_ATTENTION: {
        static const char *const keys[4] = {"q", "k", "v", "mask"};
        if (n->has_bias && i == n->nsrc - 1) return "bias";
        return i >= 0 && i < 4 ? keys[i] : "operand";
    }
    case IR_OP_ADD_LN:
        if (i < 3) return ir_operand_key_of_op(IR_OP_LAYER_NORM, i);
        if (i == 3 && n->has_residual) return "residual";
        return "bias";
    case IR_OP_EMBED_LN:
        if (i == 0) return "gamma";
        if (i == 1) return "beta";
        if (i >= 2 && i < 2 + 2 * IR_MAX_GATHERS) return (i % 2 ? indices : tables)[(i - 2) / 2];
        return "operand";
    default: return ir_operand_key_of_op(n->op, i);
    }
}

/* Number of sources node n must have; -1 for an unknown op, -2 for an
 * EMBED_LN whose gather count is out of range.  CONCAT takes any number
 * from 1 to IR_MAX_SRCS (its own nsrc). */
static int ir_node_arity(const ir_node *n) {
    switch (n->op) {
    case IR_OP_CONST:
    case IR_OP_SINUSOID: return 0;
    case IR_OP_CONCAT: return n->nsrc >= 1 ? n->nsrc : 1;
    case IR_OP_LINEAR: return 2 + !!n->has_bias + !!n->has_residual;
    case IR_OP_ATTENTION: return 3 + ir_attention_has_mask(n) + !!n->has_bias;
    case IR_OP_ADD_LN: return 3 + !!n->has_residual + !!n->has_bias;
    case IR_OP_EMBED_LN:
        return n->ngathers >= 1 && n->ngathers <= IR_MAX_GATHERS ? 2 + 2 * n->ngathers : -2;
    case IR_OP_INPUT:
    case IR_OP_WEIGHT: return 0;
    case IR_OP_ARANGE:
    case IR_OP_ACTIVATION:
    case IR_OP_RESHAPE:
    case IR_OP_TRANSPOSE:
    case IR_OP_SCALE:
    case IR_OP_SOFTMAX:
    case IR_OP_SLICE:
    case IR_OP_PAD_POSITIONS:
    case IR_OP_L2_NORMALIZE: return 1;
    case IR_OP_POOL: return n->nsrc == 2 ? 2 : 1;
    case IR_OP_GATHER:
    case IR_OP_ADD:
    case IR_OP_BIAS_ADD:
    case IR_OP_MATMUL:
    case IR_OP_BATCHED_MATMUL:
    case IR_OP_REL_POS_BIAS:
    case IR_OP_MASK: return 2;
    case IR_OP_LAYER_NORM: return 3;
    default: return -1;
    }
}

static int ir_dtype_is_float(ir_dtype t) {
    return t == IR_DTYPE_F32 || t == IR_DTYPE_F16 || t == IR_DTYPE_BF16;
}

static int ir_dims_equal(const int64_t *a, int na, const int64_t *b, int nb) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

#define IR_INFER_FAIL(c, n, ...)                                                     \
    diag_set_at((c)->d, DIAG_CODE_INPUT, (c)->file, (c)->src, (c)->src_len, (n)->line, \
                (n)->col, __VA_ARGS__)

/* "matmul 'q_mm': " is the start of every message about a node. */
#define IR_NODE_FMT "%s '%s': "
#define IR_NODE_ARGS(n) ir_op_name((n)->op), (n)->name

static const ir_node *ir_src(const ir_infer_ctx *c, const ir_node *n, int i) {
    return &c->g->nodes[n->src[i]];
}

static int ir_check_float(const ir_infer_ctx *c, const ir_node *n, int i) {
    const ir_node *s = ir_src(c, n, i);
    if (ir_dtype_is_float(s->dtype)) return 0;
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected a floating-point tensor)",
                         IR_NODE_ARGS(n), ir_operand_key(n, i), s->name,
                         ir_dtype_name(s->dtype));
}

static int ir_check_int(const ir_infer_ctx *c, const ir_node *n, int i) {
    const ir_node *s = ir_src(c, n, i);
    if (s->dtype == IR_DTYPE_I32) return 0;
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected int32)", IR_NODE_ARGS(n),
                         ir_operand_key(n, i), s->name, ir_dtype_name(s->dtype));
}

static int ir_check_ndim(const ir_infer_ctx *c, const ir_node *n, int i, int ndim,
                         const char *expected) {
    const ir_node *s = ir_src(c, n, i);
    if (s->ndim == ndim) return 0;
    char b[96];
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected %s)", IR_NODE_ARGS(n),
                         ir_operand_key(n, i), s->name, ir_shape_str(s, b, sizeof b),
                         expected);
}

static int ir_check_min_ndim(const ir_infer_ctx *c, const ir_node *n, int i, int min) {
    const ir_node *s = ir_src(c, n, i);
    if (s->ndim >= min) return 0;
    char b[96];
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected at least %d dimension%s)",
                         IR_NODE_ARGS(n), ir_operand_key(n, i), s->name,
                         ir_shape_str(s, b, sizeof b), min, min == 1 ? "" : "s");
}

/* A 1-D operand (bias, gamma, beta, mask) must be [N] where N is the last
 * dim of operand 0. */
static int ir_check_vector_of_last(const ir_infer_ctx *c, const ir_node *n, int i) {
    const ir_node *x = ir_src(c, n, 0), *v = ir_src(c, n, i);
    int64_t last = x->shape[x->ndim - 1];
    if (v->ndim == 1 && v->shape[0] == last) return 0;
    char bv[96], bx[96], be[96];
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s but %s '%s' is %s (expected %s)",
                         IR_NODE_ARGS(n), ir_operand_key(n, i), v->name,
                         ir_shape_str(v, bv, sizeof bv), ir_operand_key(n, 0), x->name,
                         ir_shape_str(x, bx, sizeof bx), ir_dims_str(&last, 1, be, sizeof be));
}

static void ir_copy_shape(ir_node *n, const ir_node *from) {
    n->ndim = from->ndim;
    memcpy(n->shape, from->shape, sizeof n->shape);
}

/* A leaf (input or weight) must already carry a sensible dtype and shape. */
static int ir_infer_leaf(const ir_infer_ctx *c, ir_node *n) {
    char b[96];
    if ((unsigned)n->dtype >= IR_DTYPE_COUNT)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "unknown dtype %d", IR_NODE_ARGS(n), (int)n->dtype);
    if (n->op == IR_OP_INPUT && n->dtype != IR_DTYPE_I32)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "input is %s (expected int32)", IR_NODE_ARGS(n),
                             ir_dtype_name(n->dtype));
    if (n->op == IR_OP_WEIGHT && !ir_dtype_is_float(n->dtype))
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "'%s' is %s (expected float32, float16 or bfloat16)",
                             IR_NODE_ARGS(n), n->weight ? n->weight : n->name,
                             ir_dtype_name(n->dtype));
    if (n->ndim < 0 || n->ndim > IR_MAX_DIMS)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "has %d dimensions (at most %d are supported)",
                             IR_NODE_ARGS(n), n->ndim, IR_MAX_DIMS);
    for (int i = 0; i < n->ndim; i++) {
        int bad = n->op == IR_OP_WEIGHT ? n->shape[i] < 1
                                        : n->shape[i] < 1 && n->shape[i] != IR_DIM_SEQ;
        if (bad)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "shape %s has an invalid dimension %d",
                                 IR_NODE_ARGS(n), ir_shape_str(n, b, sizeof b), i);
    }
    return 0;
}

static int ir_infer_gather(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *table = ir_src(c, n, 0), *index = ir_src(c, n, 1);
    if (ir_check_float(c, n, 0) || ir_check_int(c, n, 1)) return -1;
    if (ir_check_ndim(c, n, 0, 2, "a 2-D table [V, D]")) return -1;
    if (table->shape[0] == IR_DIM_SEQ || table->shape[1] == IR_DIM_SEQ) {
        char b[96];
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "table '%s' is %s (expected constant dimensions)",
                             IR_NODE_ARGS(n), table->name, ir_shape_str(table, b, sizeof b));
    }
    if (ir_check_ndim(c, n, 1, 1, "a 1-D index [S]")) return -1;
    n->dtype = IR_DTYPE_F32;
    n->ndim = 2;
    n->shape[0] = index->shape[0];
    n->shape[1] = table->shape[1];
    return 0;
}

static int ir_infer_add(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *a = ir_src(c, n, 0), *b = ir_src(c, n, 1);
    if (ir_check_float(c, n, 0) || ir_check_float(c, n, 1)) return -1;
    if (!ir_dims_equal(a->shape, a->ndim, b->shape, b->ndim)) {
        char ba[96], bb[96];
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "a '%s' is %s but b '%s' is %s (expected the same shape)",
                             IR_NODE_ARGS(n), a->name, ir_shape_str(a, ba, sizeof ba), b->name,
                             ir_shape_str(b, bb, sizeof bb));
    }
    n->dtype = IR_DTYPE_F32;
    ir_copy_shape(n, a);
    return 0;
}

static int ir_infer_layer_norm(const ir_infer_ctx *c, ir_node *n) {
    for (int i = 0; i < 3; i++)
        if (ir_check_float(c, n, i)) return -1;
    if (ir_check_min_ndim(c, n, 0, 1)) return -1;
    if (ir_check_vector_of_last(c, n, 1) || ir_check_vector_of_last(c, n, 2)) return -1;
    if (!(n->eps > 0.0f) || !isfinite(n->eps))
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "eps is %g (expected a positive number)",
                             IR_NODE_ARGS(n), (double)n->eps);
    n->dtype = IR_DTYPE_F32;
    ir_copy_shape(n, ir_src(c, n, 0));
    return 0;
}

static int ir_infer_matmul(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *x = ir_src(c, n, 0), *w = ir_src(c, n, 1);
    if (ir_check_float(c, n, 0) || ir_check_float(c, n, 1)) return -1;
    if (ir_check_ndim(c, n, 0, 2, "a 2-D [M, K]")) return -1;
    if (w->ndim != 2 || w->shape[1] != x->shape[1]) {
        char bw[96], bx[96], bk[24];
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "weight '%s' is %s but x '%s' is %s (expected [N, %s])",
                             IR_NODE_ARGS(n), w->name, ir_shape_str(w, bw, sizeof bw), x->name,
                             ir_shape_str(x, bx, sizeof bx), ir_dim_str(x->shape[1], bk, sizeof bk));
    }
    n->dtype = IR_DTYPE_F32;
    n->ndim = 2;
    n->shape[0] = x->shape[0];
    n->shape[1] = w->shape[0];
    return 0;
}

static int ir_infer_reshape(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *x = ir_src(c, n, 0);
    char bx[96], bn[96];
    if (n->ndim < 0 || n->ndim > IR_MAX_DIMS)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "shape has %d dimensions (at most %d are supported)",
                             IR_NODE_ARGS(n), n->ndim, IR_MAX_DIMS);
    for (int i = 0; i < n->ndim; i++)
        if (n->shape[i] < 1 && n->shape[i] != IR_DIM_SEQ)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "shape %s has an invalid dimension %d",
                                 IR_NODE_ARGS(n), ir_shape_str(n, bn, sizeof bn), i);
    /* S must survive as a whole dimension: the element counts then agree for
     * every S exactly when the S counts and the constant products agree. */
    int seq_x = 0, seq_n = 0;
    int64_t prod_x = 1, prod_n = 1;
    int overflow = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (x->shape[i] == IR_DIM_SEQ) seq_x++;
        else overflow |= __builtin_mul_overflow(prod_x, x->shape[i], &prod_x);
    }
    for (int i = 0; i < n->ndim; i++) {
        if (n->shape[i] == IR_DIM_SEQ) seq_n++;
        else overflow |= __builtin_mul_overflow(prod_n, n->shape[i], &prod_n);
    }
    if (overflow)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "the shape %s has too many elements",
                             IR_NODE_ARGS(n), ir_shape_str(n, bn, sizeof bn));
    if (seq_x != seq_n)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "x '%s' is %s but the shape is %s (S must stay a whole dimension, %d time%s)",
                             IR_NODE_ARGS(n), x->name, ir_shape_str(x, bx, sizeof bx),
                             ir_shape_str(n, bn, sizeof bn), seq_x, seq_x == 1 ? "" : "s");
    if (prod_x != prod_n)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "x '%s' is %s but the shape is %s (expected the same number of elements)",
                             IR_NODE_ARGS(n), x->name, ir_shape_str(x, bx, sizeof bx),
                             ir_shape_str(n, bn, sizeof bn));
    n->dtype = x->dtype == IR_DTYPE_I32 ? IR_DTYPE_I32 : IR_DTYPE_F32;
    return 0;
}

static int ir_infer_transpose(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *x = ir_src(c, n, 0);
    char bx[96], bp[96];
    if (ir_check_min_ndim(c, n, 0, 1)) return -1;
    /* The loader leaves the length of `perm` in ndim. */
    if (n->ndim != x->ndim) {
        int64_t perm[IR_MAX_DIMS];
        int np = n->ndim < 0 ? 0 : n->ndim > IR_MAX_DIMS ? IR_MAX_DIMS : n->ndim;
        for (int d = 0; d < np; d++) perm[d] = n->perm[d];
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "perm %s has %d entr%s but x '%s' is %s (expected %d)",
                             IR_NODE_ARGS(n), ir_dims_str(perm, np, bp, sizeof bp), n->ndim,
                             n->ndim == 1 ? "y" : "ies", x->name, ir_shape_str(x, bx, sizeof bx),
                             x->ndim);
    }
    int seen[IR_MAX_DIMS] = {0}, ok = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (n->perm[d] < 0 || n->perm[d] >= x->ndim || seen[n->perm[d]]++) ok = 0;
    }
    if (!ok) {
        int64_t perm[IR_MAX_DIMS];
        for (int d = 0; d < x->ndim; d++) perm[d] = n->perm[d];
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "perm %s is not a permutation of 0..%d (x '%s' is %s)",
                             IR_NODE_ARGS(n), ir_dims_str(perm, x->ndim, bp, sizeof bp),
                             x->ndim - 1, x->name, ir_shape_str(x, bx, sizeof bx));
    }
    n->dtype = x->dtype == IR_DTYPE_I32 ? IR_DTYPE_I32 : IR_DTYPE_F32;
    n->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) n->shape[d] = x->shape[n->perm[d]];
    return 0;
}

static int ir_infer_batched_matmul(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *a = ir_src(c, n, 0), *b = ir_src(c, n, 1);
    if (ir_check_float(c, n, 0) || ir_check_float(c, n, 1)) return -1;
    if (ir_check_ndim(c, n, 0, 3, "a 3-D [B, M, K]")) return -1;
    if (ir_check_ndim(c, n, 1, 3, n->transpose_b ? "a 3-D [B, N, K]" : "a 3-D [B, K, N]"))
        return -1;
    /* With transpose_b, b is [B, N, K]; without, [B, K, N]. */
    int64_t k_b = n->transpose_b ? b->shape[2] : b->shape[1];
    int64_t n_b = n->transpose_b ? b->shape[1] : b->shape[2];
    if (a->shape[0] != b->shape[0] || a->shape[2] != k_b) {
        char ba[96], bb[96], bb0[24], bk[24];
        ir_dim_str(a->shape[0], bb0, sizeof bb0);
        ir_dim_str(a->shape[2], bk, sizeof bk);
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "b '%s' is %s but a '%s' is %s (expected [%s, %s, %s] since transpose_b is %s)",
                             IR_NODE_ARGS(n), b->name, ir_shape_str(b, bb, sizeof bb), a->name,
                             ir_shape_str(a, ba, sizeof ba), bb0, n->transpose_b ? "N" : bk,
                             n->transpose_b ? bk : "N", n->transpose_b ? "true" : "false");
    }
    n->dtype = IR_DTYPE_F32;
    n->ndim = 3;
    n->shape[0] = a->shape[0];
    n->shape[1] = a->shape[1];
    n->shape[2] = n_b;
    return 0;
}

static int ir_infer_slice(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *x = ir_src(c, n, 0);
    char bx[96];
    if (ir_check_min_ndim(c, n, 0, 1)) return -1;
    if (n->axis < 0 || n->axis >= x->ndim)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "axis %d is out of range for x '%s' %s (expected 0..%d)",
                             IR_NODE_ARGS(n), n->axis, x->name, ir_shape_str(x, bx, sizeof bx),
                             x->ndim - 1);
    if (n->start < 0)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "start is %lld (expected >= 0)", IR_NODE_ARGS(n),
                             (long long)n->start);
    if (n->len < 1)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "len is %lld (expected >= 1)", IR_NODE_ARGS(n),
                             (long long)n->len);
    int64_t dim = x->shape[n->axis];
    if (dim != IR_DIM_SEQ && (n->start > dim || n->len > dim - n->start))
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "[%lld, %lld) along axis %d runs past the end of x '%s' %s",
                             IR_NODE_ARGS(n), (long long)n->start, (long long)(n->start + n->len),
                             n->axis, x->name, ir_shape_str(x, bx, sizeof bx));
    n->dtype = x->dtype == IR_DTYPE_I32 ? IR_DTYPE_I32 : IR_DTYPE_F32;
    ir_copy_shape(n, x);
    n->shape[n->axis] = n->len;
    return 0;
}

/*
 * pool: x must be [S, H] (the rows are the sequence, so "the rows the mask
 * keeps" means something), mean needs the mask (an int32 [S]); cls reads
 * row 0 only and may name a mask or not.  The result is one row, [H].
 */
static int ir_check_dims(const ir_infer_ctx *c, const ir_node *n, int i, const int64_t *want, int nwant);

static int ir_infer_pool(const ir_infer_ctx *c, ir_node *n) {
    char b[96];
    const ir_node *x = ir_src(c, n, 0);
    if ((unsigned)n->pool_mode >= IR_POOL_COUNT)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "unknown pooling mode %d", IR_NODE_ARGS(n), (int)n->pool_mode);
    if (ir_check_float(c, n, 0) || ir_check_ndim(c, n, 0, 2, "a 2-D [S, H]")) return -1;
    if (x->shape[0] != IR_DIM_SEQ || x->shape[1] == IR_DIM_SEQ)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "x '%s' is %s (expected [S, H]: one row per token)",
                             IR_NODE_ARGS(n), x->name, ir_shape_str(x, b, sizeof b));
    if (n->nsrc == 2) {
        int64_t seq = IR_DIM_SEQ;
        if (ir_check_int(c, n, 1) || ir_check_dims(c, n, 1, &seq, 1)) return -1;
    } else if (n->pool_mode == IR_POOL_MEAN) {
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "mode mean needs a mask (the attention_mask input)",
                             IR_NODE_ARGS(n));
    }
    n->dtype = IR_DTYPE_F32;
    n->ndim = 1;
    n->shape[0] = x->shape[1];
    return 0;
}

/* ---- the fused ops ------------------------------------------------------ */

/* A compile-time tensor: float32 values present, every dimension constant. */
static int ir_infer_const(const ir_infer_ctx *c, ir_node *n) {
    char b[96];
    if (n->dtype != IR_DTYPE_F32)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "is %s (expected float32)", IR_NODE_ARGS(n),
                             ir_dtype_name(n->dtype));
    if (n->ndim < 0 || n->ndim > IR_MAX_DIMS)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "has %d dimensions (at most %d are supported)",
                             IR_NODE_ARGS(n), n->ndim, IR_MAX_DIMS);
    for (int i = 0; i < n->ndim; i++)
        if (n->shape[i] < 1)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "shape %s has an invalid dimension %d (a constant has no S)",
                                 IR_NODE_ARGS(n), ir_shape_str(n, b, sizeof b), i);
    if (!n->data)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "has no values", IR_NODE_ARGS(n));
    return 0;
}

static int ir_infer_concat(const ir_infer_ctx *c, ir_node *n) {
    const ir_node *first = ir_src(c, n, 0);
    char b0[96], bi[96];
    for (int s = 0; s < n->nsrc; s++)
        if (ir_check_float(c, n, s)) return -1;
    if (ir_check_min_ndim(c, n, 0, 1)) return -1;
    if (n->axis < 0 || n->axis >= first->ndim)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "axis %d is out of range for part '%s' %s (expected 0..%d)",
                             IR_NODE_ARGS(n), n->axis, first->name,
                             ir_shape_str(first, b0, sizeof b0), first->ndim - 1);
    int64_t total = 0;
    for (int s = 0; s < n->nsrc; s++) {
        const ir_node *p = ir_src(c, n, s);
        int same = p->ndim == first->ndim;
        for (int d = 0; same && d < p->ndim; d++)
            if (d != n->axis && p->shape[d] != first->shape[d]) same = 0;
        if (!same)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "part '%s' is %s but part '%s' is %s (expected the same shape but along axis %d)",
                                 IR_NODE_ARGS(n), p->name, ir_shape_str(p, bi, sizeof bi), first->name,
                                 ir_shape_str(first, b0, sizeof b0), n->axis);
        int64_t dim = p->shape[n->axis];
        if (dim == IR_DIM_SEQ && n->nsrc > 1)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "part '%s' is %s (cannot concatenate along an S axis)",
                                 IR_NODE_ARGS(n), p->name, ir_shape_str(p, bi, sizeof bi));
        if (dim != IR_DIM_SEQ && __builtin_add_overflow(total, dim, &total))
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "the result has too many elements", IR_NODE_ARGS(n));
    }
    n->dtype = IR_DTYPE_F32;
    ir_copy_shape(n, first);
    if (first->shape[n->axis] != IR_DIM_SEQ) n->shape[n->axis] = total;
    return 0;
}

/* Operand i must have exactly the dims `want` (shape of another node or
 * built by the caller). */
static int ir_check_dims(const ir_infer_ctx *c, const ir_node *n, int i, const int64_t *want,
                         int nwant) {
    const ir_node *s = ir_src(c, n, i);
    if (ir_dims_equal(s->shape, s->ndim, want, nwant)) return 0;
    char bs[96], bw[96];
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected %s)", IR_NODE_ARGS(n),
                         ir_operand_key(n, i), s->name, ir_shape_str(s, bs, sizeof bs),
                         ir_dims_str(want, nwant, bw, sizeof bw));
}

static int ir_infer_linear(const ir_infer_ctx *c, ir_node *n) {
    /* x and weight follow matmul's rules, so reuse them (and its words). */
    if (ir_infer_matmul(c, n)) return -1;
    int64_t N = n->shape[1];
    int at = 2;
    if (n->has_bias) {
        if (ir_check_float(c, n, at) || ir_check_dims(c, n, at, &N, 1)) return -1;
        at++;
    }
    if (n->has_residual) {
        if (ir_check_float(c, n, at) || ir_check_dims(c, n, at, n->shape, 2)) return -1;
        at++;
    }
    if (n->has_act && (unsigned)n->act >= IR_ACT_COUNT)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "unknown activation %d", IR_NODE_ARGS(n), (int)n->act);
    return 0;
}

static int ir_infer_attention(const ir_infer_ctx *c, ir_node *n) {
    char b[96], bk[96];
    for (int s = 0; s < 3; s++)
        if (ir_check_float(c, n, s) || ir_check_ndim(c, n, s, 2, "a 2-D [S, columns]")) return -1;
    if (n->heads < 1 || n->head_dim < 1)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "heads %d, head_dim %d (expected both >= 1)",
                             IR_NODE_ARGS(n), n->heads, n->head_dim);
    if (!isfinite(n->scale))
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "scale is %g (expected a finite number)",
                             IR_NODE_ARGS(n), (double)n->scale);
    int64_t width = (int64_t)n->heads * n->head_dim;
    const int offs[3] = {n->q_off, n->k_off, n->v_off};
    for (int s = 0; s < 3; s++) {
        const ir_node *x = ir_src(c, n, s);
        int64_t cols = x->shape[1];
        if (offs[s] < 0 || cols == IR_DIM_SEQ || offs[s] + width > cols)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s but columns [%d, %lld) are read (%d heads of %d)",
                                 IR_NODE_ARGS(n), ir_operand_key(n, s), x->name,
                                 ir_shape_str(x, b, sizeof b), offs[s], (long long)(offs[s] + width),
                                 n->heads, n->head_dim);
    }
    const ir_node *k = ir_src(c, n, 1), *v = ir_src(c, n, 2);
    if (k->shape[0] != v->shape[0])
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "k '%s' is %s but v '%s' is %s (expected as many rows)",
                             IR_NODE_ARGS(n), k->name, ir_shape_str(k, bk, sizeof bk), v->name,
                             ir_shape_str(v, b, sizeof b));
    if (ir_attention_has_mask(n)) {
        if (ir_check_int(c, n, 3) || ir_check_dims(c, n, 3, k->shape, 1)) return -1;
    }
    if (n->has_bias) {
        const int64_t want[3] = {n->heads, ir_src(c, n, 0)->shape[0], k->shape[0]};
        if (ir_check_float(c, n, n->nsrc - 1) || ir_check_dims(c, n, n->nsrc - 1, want, 3)) return -1;
    }
    n->dtype = IR_DTYPE_F32;
    n->ndim = 2;
    n->shape[0] = ir_src(c, n, 0)->shape[0];
    n->shape[1] = width;
    return 0;
}

static int ir_infer_add_ln(const ir_infer_ctx *c, ir_node *n) {
    if (ir_infer_layer_norm(c, n)) return -1;  /* x, gamma, beta, eps as layer_norm */
    int at = 3;
    if (n->has_residual) {
        const ir_node *x = ir_src(c, n, 0);
        if (ir_check_float(c, n, at) || ir_check_dims(c, n, at, x->shape, x->ndim)) return -1;
        at++;
    }
    if (n->has_bias && (ir_check_float(c, n, at) || ir_check_vector_of_last(c, n, at))) return -1;
    return 0;
}

static int ir_infer_embed_ln(const ir_infer_ctx *c, ir_node *n) {
    char b[96];
    if (ir_check_float(c, n, 0) || ir_check_float(c, n, 1)) return -1;
    if (ir_check_ndim(c, n, 0, 1, "a 1-D [D]")) return -1;
    const ir_node *gamma = ir_src(c, n, 0);
    int64_t D = gamma->shape[0];
    if (ir_check_dims(c, n, 1, &D, 1)) return -1;
    int64_t rows = 0;
    for (int g = 0; g < n->ngathers; g++) {
        int t = 2 + 2 * g, x = t + 1;
        const ir_node *table = ir_src(c, n, t), *index = ir_src(c, n, x);
        if (ir_check_float(c, n, t) || ir_check_ndim(c, n, t, 2, "a 2-D table [V, D]")) return -1;
        if (table->shape[0] < 1 || table->shape[1] != D)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s but gamma '%s' has %lld elements (expected [V, %lld])",
                                 IR_NODE_ARGS(n), ir_operand_key(n, t), table->name,
                                 ir_shape_str(table, b, sizeof b), gamma->name, (long long)D,
                                 (long long)D);
        if (ir_check_int(c, n, x) || ir_check_ndim(c, n, x, 1, "a 1-D index [S]")) return -1;
        if (g == 0) rows = index->shape[0];
        else if (ir_check_dims(c, n, x, &rows, 1)) return -1;
    }
    if (!(n->eps > 0.0f) || !isfinite(n->eps))
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "eps is %g (expected a positive number)",
                             IR_NODE_ARGS(n), (double)n->eps);
    n->dtype = IR_DTYPE_F32;
    n->ndim = 2;
    n->shape[0] = rows;
    n->shape[1] = D;
    return 0;
}

/* [S] like an arange: the one operand (index k) must have S rows. */
static int ir_check_like_seq(const ir_infer_ctx *c, const ir_node *n, int k) {
    const ir_node *like = ir_src(c, n, k);
    if (like->ndim >= 1 && like->shape[0] == IR_DIM_SEQ) return 0;
    char b[96];
    return IR_INFER_FAIL(c, n, IR_NODE_FMT "%s '%s' is %s (expected [S, ...])", IR_NODE_ARGS(n),
                         ir_operand_key(n, k), like->name, ir_shape_str(like, b, sizeof b));
}

/* The position ops: pad_positions, rel_pos_bias, sinusoid. */
static int ir_infer_positions(const ir_infer_ctx *c, ir_node *n) {
    char b[96];
    if (n->op == IR_OP_PAD_POSITIONS) {
        if (ir_check_int(c, n, 0) || ir_check_ndim(c, n, 0, 1, "a 1-D [S]") || ir_check_like_seq(c, n, 0)) return -1;
        if (n->pad_id < 0)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "pad is %d (expected a token id >= 0)", IR_NODE_ARGS(n),
                                 (int)n->pad_id);
        n->dtype = IR_DTYPE_I32;
        n->ndim = 1;
        n->shape[0] = IR_DIM_SEQ;
        return 0;
    }
    if (n->op == IR_OP_SINUSOID) {
        if (n->ndim != 2 || n->shape[0] < 1 || n->shape[1] < 1)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "shape %s (expected [rows, dim], both >= 1)", IR_NODE_ARGS(n),
                                 ir_shape_str(n, b, sizeof b));
        n->dtype = IR_DTYPE_F32;
        return 0;
    }
    const ir_node *table = ir_src(c, n, 0);
    if (ir_check_float(c, n, 0) || ir_check_ndim(c, n, 0, 2, "a 2-D table [buckets, heads]") ||
        ir_check_like_seq(c, n, 1))
        return -1;
    if (table->shape[0] != n->buckets || table->shape[1] < 1 || n->buckets < 2 || n->buckets % 4 != 0)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "table '%s' is %s but buckets is %d (expected [buckets, heads], "
                             "buckets a positive multiple of 4)", IR_NODE_ARGS(n), table->name,
                             ir_shape_str(table, b, sizeof b), n->buckets);
    if (n->max_distance <= n->buckets / 4)
        return IR_INFER_FAIL(c, n, IR_NODE_FMT "max_distance %d (expected more than buckets / 4 = %d)",
                             IR_NODE_ARGS(n), n->max_distance, n->buckets / 4);
    n->dtype = IR_DTYPE_F32;
    n->ndim = 3;
    n->shape[0] = table->shape[1];
    n->shape[1] = n->shape[2] = IR_DIM_SEQ;
    return 0;
}

static int ir_infer_node(const ir_infer_ctx *c, ir_node *n) {
    switch (n->op) {
    case IR_OP_INPUT:
    case IR_OP_WEIGHT: return ir_infer_leaf(c, n);
    case IR_OP_ARANGE: {
        const ir_node *like = ir_src(c, n, 0);
        if (like->ndim < 1 || like->shape[0] != IR_DIM_SEQ) {
            char b[96];
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "like '%s' is %s (expected [S, ...])",
                                 IR_NODE_ARGS(n), like->name, ir_shape_str(like, b, sizeof b));
        }
        n->dtype = IR_DTYPE_I32;
        n->ndim = 1;
        n->shape[0] = IR_DIM_SEQ;
        return 0;
    }
    case IR_OP_GATHER: return ir_infer_gather(c, n);
    case IR_OP_ADD: return ir_infer_add(c, n);
    case IR_OP_BIAS_ADD:
        if (ir_check_float(c, n, 0) || ir_check_float(c, n, 1)) return -1;
        if (ir_check_min_ndim(c, n, 0, 1) || ir_check_vector_of_last(c, n, 1)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_LAYER_NORM: return ir_infer_layer_norm(c, n);
    case IR_OP_MATMUL: return ir_infer_matmul(c, n);
    case IR_OP_ACTIVATION:
        if ((unsigned)n->act >= IR_ACT_COUNT)
            return IR_INFER_FAIL(c, n, IR_NODE_FMT "unknown activation %d", IR_NODE_ARGS(n),
                                 (int)n->act);
        if (ir_check_float(c, n, 0)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_SCALE:
        if (ir_check_float(c, n, 0)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_SOFTMAX:
        if (ir_check_float(c, n, 0) || ir_check_min_ndim(c, n, 0, 1)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_RESHAPE: return ir_infer_reshape(c, n);
    case IR_OP_TRANSPOSE: return ir_infer_transpose(c, n);
    case IR_OP_BATCHED_MATMUL: return ir_infer_batched_matmul(c, n);
    case IR_OP_MASK:
        if (ir_check_float(c, n, 0) || ir_check_int(c, n, 1)) return -1;
        if (ir_check_min_ndim(c, n, 0, 1) || ir_check_vector_of_last(c, n, 1)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_SLICE: return ir_infer_slice(c, n);
    case IR_OP_POOL: return ir_infer_pool(c, n);
    case IR_OP_L2_NORMALIZE:
        if (ir_check_float(c, n, 0) || ir_check_min_ndim(c, n, 0, 1)) return -1;
        n->dtype = IR_DTYPE_F32;
        ir_copy_shape(n, ir_src(c, n, 0));
        return 0;
    case IR_OP_PAD_POSITIONS:
    case IR_OP_REL_POS_BIAS:
    case IR_OP_SINUSOID: return ir_infer_positions(c, n);
    case IR_OP_CONST: return ir_infer_const(c, n);
    case IR_OP_CONCAT: return ir_infer_concat(c, n);
    case IR_OP_LINEAR: return ir_infer_linear(c, n);
    case IR_OP_ATTENTION: return ir_infer_attention(c, n);
    case IR_OP_ADD_LN: return ir_infer_add_ln(c, n);
    case IR_OP_EMBED_LN: return ir_infer_embed_ln(c, n);
    default:
        return IR_INFER_FAIL(c, n, "node '%s': unknown op %d", n->name, (int)n->op);
    }
}

int ir_graph_infer(ir_graph *g, const char *file, const char *src, size_t src_len, diag *d) {
    ir_infer_ctx c = {g, file, src, src_len, d};
    for (int i = 0; i < g->count; i++) {
        ir_node *n = &g->nodes[i];
        int arity = ir_node_arity(n);
        if (n->op == IR_OP_EMBED_LN && arity < 0)
            return IR_INFER_FAIL(&c, n, IR_NODE_FMT "has %d gathers (expected 1 to %d)",
                                 IR_NODE_ARGS(n), n->ngathers, IR_MAX_GATHERS);
        if (arity < 0) return IR_INFER_FAIL(&c, n, "node '%s': unknown op %d", n->name, (int)n->op);
        if (n->nsrc != arity)
            return IR_INFER_FAIL(&c, n, IR_NODE_FMT "has %d operand%s (expected %d)",
                                 IR_NODE_ARGS(n), n->nsrc, n->nsrc == 1 ? "" : "s", arity);
        for (int s = 0; s < n->nsrc; s++) {
            int j = n->src[s];
            if (j < 0 || j >= i)
                return IR_INFER_FAIL(&c, n, IR_NODE_FMT "%s refers to node %d, which does not come before it (node %d); the graph is not in topological order",
                                     IR_NODE_ARGS(n), ir_operand_key(n, s), j, i);
        }
        if (ir_infer_node(&c, n)) return -1;
    }
    for (int i = 0; i < g->noutputs; i++) {
        int j = g->outputs[i].node;
        if (j < 0 || j >= g->count)
            return diag_set(d, DIAG_CODE_INPUT, "%s: output '%s' refers to node %d (the graph has %d)",
                            file ? file : "<input>", g->outputs[i].name, j, g->count);
    }
    return 0;
}
