/*
 * model — the YAML front end (docs/model-yaml.md is the user-facing spec).
 *
 * libyaml loads the file as a node tree; every node keeps the line and
 * column where it starts, so every complaint below can point at the user's
 * text.  The loader works in three steps, each simple on its own:
 *
 *   1. Walk the tree and turn each op (and each iteration of a `repeat`
 *      block) into an `op_rec`: op kind, result name, operand names already
 *      resolved to unique tensor names, weight names, parameters.  Unknown
 *      keys and values of the wrong kind are rejected here, at their place.
 *   2. Order the records topologically (depth-first, visiting in written
 *      order, so a graph written in order keeps its order); a name that
 *      nothing defines and a cycle are reported at the operand / op.
 *   3. Emit ir nodes: INPUT nodes for the declared inputs, one WEIGHT node
 *      per distinct weight (dtype and shape from the safetensors header),
 *      then the ops; ir_graph_infer() checks shapes and dtypes.
 *
 * Scoping in `repeat`: a result name written with a `{i...}` template is
 * global after substitution; one written without is local to its iteration
 * and gets the unique name "layerN/NAME".  References look in the
 * iteration's locals first.  This keeps the YAML short (no `{i}` on every
 * temporary) while every IR tensor still has one unique name.
 */
#include "model.h"

#include "fileutil.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MODEL_MAX_OPERANDS 4

typedef struct op_operand {
    const char *key;        /* YAML key it came from ("x", "table", ...) */
    char *name;             /* resolved tensor or weight name */
    int is_weight;
    int line, col;          /* position of the value, for diagnostics */
} op_operand;

typedef struct op_rec {
    ir_op op;
    char *out;              /* unique tensor name */
    int out_line, out_col;
    op_operand operands[MODEL_MAX_OPERANDS];
    int noperands;
    int line, col;          /* the op's mapping */
    /* parameters */
    float eps, scale;
    ir_act act;
    int perm[IR_MAX_DIMS], nperm;
    int transpose_b;
    int axis;
    int64_t start, len;
    ir_pool_mode pool_mode;
    int64_t shape[IR_MAX_DIMS];
    int nshape;
    int64_t pad, buckets, max_distance, rows, dim;
    /* toposort state */
    int mark;               /* 0 new, 1 on stack, 2 done */
    int node;               /* ir node index once emitted */
} op_rec;

typedef struct dim_def {
    char *name;
    int64_t value;
} dim_def;

typedef struct input_def {
    char *name;
    int optional;
    int32_t default_value;
    int line, col;
} input_def;

typedef struct output_def {
    char *name;
    char *tensor;
    int line, col;
} output_def;

/* Iteration context while reading a `repeat` body. */
typedef struct repeat_ctx {
    int active;
    const char *index_name;
    int64_t value;
    char **locals;          /* local result names as written (before scoping) */
    int nlocals;
} repeat_ctx;

typedef struct loader {
    const char *file;
    const char *src;
    size_t len;
    const char *base_dir;
    diag *d;
    yaml_document_t doc;
    model *m;
    op_rec *ops;
    int nops, capops;
    dim_def *dims;
    int ndims;
    input_def *inputs;
    int ninputs;
    output_def *outputs;
    int noutputs;
    repeat_ctx rep;
    int weights_line, weights_col;
    int labels_line, labels_col;
} loader;

/* ------------------------------------------------------------------ utils */

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }
static int col_of(const yaml_node_t *n) { return (int)n->start_mark.column + 1; }

static int err_at(loader *L, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int err_at(loader *L, int line, int col, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return diag_set_at(L->d, DIAG_CODE_INPUT, L->file, L->src, L->len, line, col, "%s", msg);
}

static int err_node(loader *L, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int err_node(loader *L, const yaml_node_t *n, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return err_at(L, line_of(n), col_of(n), "%s", msg);
}

static int oom(loader *L) { return diag_set(L->d, DIAG_CODE_INTERNAL, "%s: out of memory", L->file); }

static yaml_node_t *node_get(loader *L, int id) { return yaml_document_get_node(&L->doc, id); }

static const char *node_kind(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int is_plain(const yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int expect_mapping(loader *L, const yaml_node_t *n, const char *what) {
    if (n->type != YAML_MAPPING_NODE) return err_node(L, n, "expected %s (a mapping), got %s", what, node_kind(n));
    return 0;
}

static int get_string(loader *L, const yaml_node_t *n, const char *what, const char **out) {
    if (n->type != YAML_SCALAR_NODE) return err_node(L, n, "expected %s (a string), got %s", what, node_kind(n));
    if (n->data.scalar.length != strlen(scalar(n)))
        return err_node(L, n, "expected %s, got a string with a NUL byte", what);
    if (!*scalar(n)) return err_node(L, n, "expected %s, got an empty string", what);
    *out = scalar(n);
    return 0;
}

static int get_int(loader *L, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi, int64_t *out) {
    if (!is_plain(n)) return err_node(L, n, "expected %s (an integer), got %s", what,
                                      n->type == YAML_SCALAR_NODE ? "a quoted string" : node_kind(n));
    const char *s = scalar(n);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno) return err_node(L, n, "expected %s (an integer), got '%s'", what, s);
    if (v < lo || v > hi)
        return err_node(L, n, "%s must be between %lld and %lld, got %lld", what, (long long)lo, (long long)hi, v);
    *out = v;
    return 0;
}

static int get_float(loader *L, const yaml_node_t *n, const char *what, float *out) {
    if (!is_plain(n)) return err_node(L, n, "expected %s (a number), got %s", what,
                                      n->type == YAML_SCALAR_NODE ? "a quoted string" : node_kind(n));
    const char *s = scalar(n);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE) return err_node(L, n, "expected %s (a number), got '%s'", what, s);
    if (!(v == v) || v > 3.4e38 || v < -3.4e38) return err_node(L, n, "%s must be a finite float32, got '%s'", what, s);
    *out = (float)v;
    return 0;
}

static int get_bool(loader *L, const yaml_node_t *n, const char *what, int *out) {
    if (is_plain(n) && !strcmp(scalar(n), "true")) { *out = 1; return 0; }
    if (is_plain(n) && !strcmp(scalar(n), "false")) { *out = 0; return 0; }
    return err_node(L, n, "expected %s (true or false), got %s%s%s", what,
                    n->type == YAML_SCALAR_NODE ? "'" : "", n->type == YAML_SCALAR_NODE ? scalar(n) : node_kind(n),
                    n->type == YAML_SCALAR_NODE ? "'" : "");
}

static int is_null(const yaml_node_t *n) {
    return is_plain(n) && (!strcmp(scalar(n), "null") || !strcmp(scalar(n), "~") || !*scalar(n));
}

/* Check every key of a mapping against a NULL-terminated list. */
static int check_keys(loader *L, const yaml_node_t *map, const char *const *allowed, const char *what) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key);
        if (k->type != YAML_SCALAR_NODE) return err_node(L, k, "expected a key (a string) in %s, got %s", what, node_kind(k));
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, scalar(k))) ok = 1;
        if (!ok) {
            char list[512] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 1);
                if (a[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return err_node(L, k, "unknown key '%s' in %s (expected one of: %s)", scalar(k), what, list);
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(scalar(node_get(L, q->key)), scalar(k)))
                return err_node(L, k, "duplicate key '%s' in %s", scalar(k), what);
    }
    return 0;
}

static yaml_node_t *map_get(loader *L, const yaml_node_t *map, const char *key) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key)) return node_get(L, p->value);
    }
    return NULL;
}

static int map_require(loader *L, const yaml_node_t *map, const char *key, const char *what, yaml_node_t **out) {
    *out = map_get(L, map, key);
    if (!*out) return err_node(L, map, "missing required key '%s' in %s", key, what);
    return 0;
}

/* ------------------------------------------------------------- templates */

/*
 * Substitute {index}, {index+N}, {index-N} in s.  Outside a repeat block any
 * '{' is an error.  *templated tells whether s contained a template.
 */
static int substitute(loader *L, const yaml_node_t *n, const char *s, char **out, int *templated) {
    size_t cap = strlen(s) + 64, len = 0;
    char *r = malloc(cap);
    if (!r) return oom(L);
    *templated = 0;
    for (const char *p = s; *p;) {
        if (*p != '{') {
            if (*p == '}') { free(r); return err_node(L, n, "unmatched '}' in '%s'", s); }
            if (len + 2 > cap) { char *t = realloc(r, cap *= 2); if (!t) { free(r); return oom(L); } r = t; }
            r[len++] = *p++;
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close) { free(r); return err_node(L, n, "unterminated '{' in '%s'", s); }
        if (!L->rep.active) {
            free(r);
            return err_node(L, n, "template '%.*s' outside a repeat block", (int)(close - p + 1), p);
        }
        size_t iname = strlen(L->rep.index_name);
        const char *q = p + 1;
        if ((size_t)(close - q) < iname || strncmp(q, L->rep.index_name, iname)) {
            free(r);
            return err_node(L, n, "unknown template '%.*s' in '%s' (expected {%s}, {%s+N} or {%s-N})",
                            (int)(close - p + 1), p, s, L->rep.index_name, L->rep.index_name, L->rep.index_name);
        }
        q += iname;
        int64_t v = L->rep.value;
        if (q < close) {
            int sign = *q == '+' ? 1 : *q == '-' ? -1 : 0;
            char *end;
            long off = sign ? strtol(q + 1, &end, 10) : 0;
            if (!sign || end != close || q + 1 == close || off < 0 || off > 100000) {
                free(r);
                return err_node(L, n, "bad template '%.*s' in '%s' (expected {%s}, {%s+N} or {%s-N})",
                                (int)(close - p + 1), p, s, L->rep.index_name, L->rep.index_name, L->rep.index_name);
            }
            v += sign * off;
        }
        char num[32];
        int k = snprintf(num, sizeof num, "%lld", (long long)v);
        if (len + (size_t)k + 1 > cap) {
            cap = len + (size_t)k + cap;
            char *t = realloc(r, cap);
            if (!t) { free(r); return oom(L); }
            r = t;
        }
        memcpy(r + len, num, (size_t)k);
        len += (size_t)k;
        *templated = 1;
        p = close + 1;
    }
    r[len] = '\0';
    *out = r;
    return 0;
}

static int name_is_local(loader *L, const char *written) {
    for (int i = 0; i < L->rep.nlocals; i++)
        if (!strcmp(L->rep.locals[i], written)) return 1;
    return 0;
}

static char *scoped_local(loader *L, const char *name) {
    char buf[512];
    snprintf(buf, sizeof buf, "layer%lld/%s", (long long)L->rep.value, name);
    return xstrdup(buf);
}

/* Resolve an operand that names a tensor. */
static int resolve_tensor(loader *L, const yaml_node_t *n, const char *what, char **out) {
    const char *s;
    if (get_string(L, n, what, &s)) return -1;
    int templated;
    char *sub;
    if (substitute(L, n, s, &sub, &templated)) return -1;
    if (L->rep.active && !templated && name_is_local(L, s)) {
        free(sub);
        *out = scoped_local(L, s);
        return *out ? 0 : oom(L);
    }
    *out = sub;
    return 0;
}

/* -------------------------------------------------------------- op table */

typedef struct op_key {
    const char *key;
    enum { OPK_TENSOR, OPK_WEIGHT, OPK_PARAM } kind;
    int required;
} op_key;

typedef struct op_spec {
    const char *name;
    ir_op op;
    op_key keys[6];
} op_spec;

static const op_spec OP_SPECS[] = {
    {"arange", IR_OP_ARANGE, {{"like", OPK_TENSOR, 1}}},
    {"gather", IR_OP_GATHER, {{"table", OPK_WEIGHT, 1}, {"index", OPK_TENSOR, 1}}},
    {"add", IR_OP_ADD, {{"a", OPK_TENSOR, 1}, {"b", OPK_TENSOR, 1}}},
    {"bias_add", IR_OP_BIAS_ADD, {{"x", OPK_TENSOR, 1}, {"bias", OPK_WEIGHT, 1}}},
    {"layer_norm", IR_OP_LAYER_NORM,
     {{"x", OPK_TENSOR, 1}, {"gamma", OPK_WEIGHT, 1}, {"beta", OPK_WEIGHT, 1}, {"eps", OPK_PARAM, 1}}},
    {"matmul", IR_OP_MATMUL, {{"x", OPK_TENSOR, 1}, {"weight", OPK_WEIGHT, 1}}},
    {"activation", IR_OP_ACTIVATION, {{"x", OPK_TENSOR, 1}, {"fn", OPK_PARAM, 1}}},
    {"reshape", IR_OP_RESHAPE, {{"x", OPK_TENSOR, 1}, {"shape", OPK_PARAM, 1}}},
    {"transpose", IR_OP_TRANSPOSE, {{"x", OPK_TENSOR, 1}, {"perm", OPK_PARAM, 1}}},
    {"batched_matmul", IR_OP_BATCHED_MATMUL, {{"a", OPK_TENSOR, 1}, {"b", OPK_TENSOR, 1}, {"transpose_b", OPK_PARAM, 0}}},
    {"scale", IR_OP_SCALE, {{"x", OPK_TENSOR, 1}, {"by", OPK_PARAM, 1}}},
    {"mask", IR_OP_MASK, {{"x", OPK_TENSOR, 1}, {"mask", OPK_TENSOR, 1}}},
    {"softmax", IR_OP_SOFTMAX, {{"x", OPK_TENSOR, 1}}},
    {"slice", IR_OP_SLICE, {{"x", OPK_TENSOR, 1}, {"axis", OPK_PARAM, 1}, {"start", OPK_PARAM, 1}, {"len", OPK_PARAM, 1}}},
    {"pool", IR_OP_POOL, {{"x", OPK_TENSOR, 1}, {"mask", OPK_TENSOR, 0}, {"mode", OPK_PARAM, 1}}},
    {"l2_normalize", IR_OP_L2_NORMALIZE, {{"x", OPK_TENSOR, 1}}},
    {"pad_positions", IR_OP_PAD_POSITIONS, {{"ids", OPK_TENSOR, 1}, {"pad", OPK_PARAM, 1}}},
    {"rel_pos_bias", IR_OP_REL_POS_BIAS,
     {{"table", OPK_WEIGHT, 1}, {"like", OPK_TENSOR, 1}, {"buckets", OPK_PARAM, 1}, {"max_distance", OPK_PARAM, 1}}},
    {"sinusoid", IR_OP_SINUSOID, {{"rows", OPK_PARAM, 1}, {"dim", OPK_PARAM, 1}}},
};

static const op_spec *op_spec_find(const char *name) {
    for (size_t i = 0; i < sizeof OP_SPECS / sizeof OP_SPECS[0]; i++)
        if (!strcmp(OP_SPECS[i].name, name)) return &OP_SPECS[i];
    return NULL;
}

static int parse_shape(loader *L, const yaml_node_t *n, op_rec *r) {
    if (n->type != YAML_SEQUENCE_NODE) return err_node(L, n, "expected shape (a list such as [S, 6, 16]), got %s", node_kind(n));
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count < 1 || count > IR_MAX_DIMS) return err_node(L, n, "a shape has 1 to %d dimensions, got %d", IR_MAX_DIMS, count);
    for (int i = 0; i < count; i++) {
        yaml_node_t *e = node_get(L, n->data.sequence.items.start[i]);
        if (e->type != YAML_SCALAR_NODE) return err_node(L, e, "expected a dimension (an integer, S or a dims name), got %s", node_kind(e));
        const char *s = scalar(e);
        if (!strcmp(s, "S")) { r->shape[i] = IR_DIM_SEQ; continue; }
        int found = 0;
        for (int k = 0; k < L->ndims; k++)
            if (!strcmp(L->dims[k].name, s)) { r->shape[i] = L->dims[k].value; found = 1; }
        if (found) continue;
        if (get_int(L, e, "a dimension (an integer, S or a dims name)", 1, INT32_MAX, &r->shape[i])) return -1;
    }
    r->nshape = count;
    return 0;
}

static int parse_perm(loader *L, const yaml_node_t *n, op_rec *r) {
    if (n->type != YAML_SEQUENCE_NODE) return err_node(L, n, "expected perm (a list such as [1, 0, 2]), got %s", node_kind(n));
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count < 1 || count > IR_MAX_DIMS) return err_node(L, n, "perm has 1 to %d entries, got %d", IR_MAX_DIMS, count);
    for (int i = 0; i < count; i++) {
        int64_t v;
        if (get_int(L, node_get(L, n->data.sequence.items.start[i]), "a perm entry", 0, IR_MAX_DIMS - 1, &v)) return -1;
        r->perm[i] = (int)v;
    }
    r->nperm = count;
    return 0;
}

static int parse_param(loader *L, const char *key, const yaml_node_t *v, op_rec *r) {
    int64_t i64;
    if (!strcmp(key, "eps")) {
        if (get_float(L, v, "eps", &r->eps)) return -1;
        if (!(r->eps > 0)) return err_node(L, v, "eps must be positive, got '%s'", scalar(v));
        return 0;
    }
    if (!strcmp(key, "by")) return get_float(L, v, "by", &r->scale);
    if (!strcmp(key, "fn")) {
        const char *s;
        if (get_string(L, v, "fn", &s)) return -1;
        for (int a = 0; a < IR_ACT_COUNT; a++)
            if (!strcmp(s, ir_act_name((ir_act)a))) { r->act = (ir_act)a; return 0; }
        return err_node(L, v, "unknown activation '%s' (expected one of: gelu, gelu_tanh, relu, tanh)", s);
    }
    if (!strcmp(key, "mode")) {
        const char *s;
        if (get_string(L, v, "mode", &s)) return -1;
        for (int m = 0; m < IR_POOL_COUNT; m++)
            if (!strcmp(s, ir_pool_mode_name((ir_pool_mode)m))) { r->pool_mode = (ir_pool_mode)m; return 0; }
        return err_node(L, v, "unknown pooling mode '%s' (expected one of: cls, mean)", s);
    }
    if (!strcmp(key, "shape")) return parse_shape(L, v, r);
    if (!strcmp(key, "perm")) return parse_perm(L, v, r);
    if (!strcmp(key, "transpose_b")) return get_bool(L, v, "transpose_b", &r->transpose_b);
    if (!strcmp(key, "axis")) { if (get_int(L, v, "axis", 0, IR_MAX_DIMS - 1, &i64)) return -1; r->axis = (int)i64; return 0; }
    if (!strcmp(key, "start")) return get_int(L, v, "start", 0, INT32_MAX, &r->start);
    if (!strcmp(key, "len")) return get_int(L, v, "len", 1, INT32_MAX, &r->len);
    if (!strcmp(key, "pad")) return get_int(L, v, "pad", 0, INT32_MAX, &r->pad);
    if (!strcmp(key, "buckets")) return get_int(L, v, "buckets", 4, 1 << 16, &r->buckets);
    if (!strcmp(key, "max_distance")) return get_int(L, v, "max_distance", 2, 1 << 20, &r->max_distance);
    if (!strcmp(key, "rows")) return get_int(L, v, "rows", 1, 1 << 20, &r->rows);
    if (!strcmp(key, "dim")) return get_int(L, v, "dim", 1, 1 << 20, &r->dim);
    return err_node(L, v, "internal: unhandled parameter '%s'", key);
}

static op_rec *op_new(loader *L) {
    if (L->nops == L->capops) {
        int cap = L->capops ? L->capops * 2 : 64;
        op_rec *t = realloc(L->ops, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        L->ops = t;
        L->capops = cap;
    }
    op_rec *r = &L->ops[L->nops++];
    memset(r, 0, sizeof *r);
    r->node = -1;
    return r;
}

static int parse_op(loader *L, const yaml_node_t *n) {
    if (expect_mapping(L, n, "an op")) return -1;
    yaml_node_t *opn;
    if (map_require(L, n, "op", "an op", &opn)) return -1;
    const char *opname;
    if (get_string(L, opn, "op", &opname)) return -1;
    const op_spec *spec = op_spec_find(opname);
    if (!spec) {
        return err_node(L, opn, "unknown op '%s' (expected one of: arange, gather, add, bias_add, layer_norm, matmul, "
                        "activation, reshape, transpose, batched_matmul, scale, mask, softmax, slice, pool, l2_normalize, "
                        "pad_positions, rel_pos_bias, sinusoid)", opname);
    }
    const char *allowed[10] = {"op", "out"};
    int na = 2;
    for (int k = 0; k < 6 && spec->keys[k].key; k++) allowed[na++] = spec->keys[k].key;
    allowed[na] = NULL;
    char what[64];
    snprintf(what, sizeof what, "op '%s'", opname);
    if (check_keys(L, n, allowed, what)) return -1;

    op_rec *r = op_new(L);
    if (!r) return oom(L);
    r->op = spec->op;
    r->line = line_of(n);
    r->col = col_of(n);
    r->transpose_b = 0;

    yaml_node_t *outn;
    if (map_require(L, n, "out", what, &outn)) return -1;
    const char *outs;
    if (get_string(L, outn, "out", &outs)) return -1;
    int templated;
    char *sub;
    if (substitute(L, outn, outs, &sub, &templated)) return -1;
    if (L->rep.active && !templated) {
        free(sub);
        sub = scoped_local(L, outs);
        if (!sub) return oom(L);
    }
    r->out = sub;
    r->out_line = line_of(outn);
    r->out_col = col_of(outn);

    for (int k = 0; k < 6 && spec->keys[k].key; k++) {
        const op_key *ok = &spec->keys[k];
        yaml_node_t *v = map_get(L, n, ok->key);
        if (!v) {
            if (ok->required) return err_node(L, n, "missing required key '%s' in %s", ok->key, what);
            continue;
        }
        if (ok->kind == OPK_PARAM) {
            if (parse_param(L, ok->key, v, r)) return -1;
            continue;
        }
        op_operand *o = &r->operands[r->noperands++];
        o->key = ok->key;
        o->is_weight = ok->kind == OPK_WEIGHT;
        o->line = line_of(v);
        o->col = col_of(v);
        if (o->is_weight) {
            const char *s;
            if (get_string(L, v, ok->key, &s)) return -1;
            if (substitute(L, v, s, &o->name, &templated)) return -1;
        } else if (resolve_tensor(L, v, ok->key, &o->name)) {
            return -1;
        }
    }
    return 0;
}

static int parse_repeat(loader *L, const yaml_node_t *n) {
    static const char *const keys[] = {"repeat", "index", "ops", NULL};
    if (check_keys(L, n, keys, "a repeat block")) return -1;
    if (L->rep.active) return err_node(L, n, "repeat blocks do not nest");
    int64_t count;
    if (get_int(L, map_get(L, n, "repeat"), "repeat (the number of iterations)", 1, 10000, &count)) return -1;
    const char *index = "i";
    yaml_node_t *in = map_get(L, n, "index");
    if (in && get_string(L, in, "index", &index)) return -1;
    for (const char *p = index; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
            return err_node(L, in, "index must be a name of letters and '_', got '%s'", index);
    yaml_node_t *body;
    if (map_require(L, n, "ops", "a repeat block", &body)) return -1;
    if (body->type != YAML_SEQUENCE_NODE) return err_node(L, body, "expected ops (a list of ops), got %s", node_kind(body));

    /* Pre-scan local result names: written without a template. */
    int nitems = (int)(body->data.sequence.items.top - body->data.sequence.items.start);
    L->rep.locals = calloc((size_t)(nitems ? nitems : 1), sizeof(char *));
    if (!L->rep.locals) return oom(L);
    L->rep.nlocals = 0;
    for (int k = 0; k < nitems; k++) {
        yaml_node_t *op = node_get(L, body->data.sequence.items.start[k]);
        if (op->type != YAML_MAPPING_NODE) continue;
        if (map_get(L, op, "repeat")) return err_node(L, op, "repeat blocks do not nest");
        yaml_node_t *out = map_get(L, op, "out");
        if (out && out->type == YAML_SCALAR_NODE && !strchr(scalar(out), '{'))
            L->rep.locals[L->rep.nlocals++] = (char *)scalar(out);
    }
    L->rep.active = 1;
    L->rep.index_name = index;
    int rc = 0;
    for (int64_t it = 0; it < count && !rc; it++) {
        L->rep.value = it;
        for (int k = 0; k < nitems && !rc; k++) rc = parse_op(L, node_get(L, body->data.sequence.items.start[k]));
    }
    L->rep.active = 0;
    free(L->rep.locals);
    L->rep.locals = NULL;
    return rc;
}

static int parse_graph(loader *L, const yaml_node_t *n) {
    if (n->type != YAML_SEQUENCE_NODE) return err_node(L, n, "expected graph (a list of ops), got %s", node_kind(n));
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = node_get(L, *it);
        if (e->type == YAML_MAPPING_NODE && map_get(L, e, "repeat")) {
            if (parse_repeat(L, e)) return -1;
        } else if (parse_op(L, e)) {
            return -1;
        }
    }
    if (L->nops == 0) return err_node(L, n, "the graph has no ops");
    return 0;
}

/* ------------------------------------------------------ top-level blocks */

static int parse_dims(loader *L, const yaml_node_t *n) {
    if (expect_mapping(L, n, "dims")) return -1;
    int count = (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    L->dims = calloc((size_t)(count ? count : 1), sizeof *L->dims);
    if (!L->dims) return oom(L);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key);
        const char *name;
        if (get_string(L, k, "a dims name", &name)) return -1;
        if (!strcmp(name, "S")) return err_node(L, k, "'S' is the sequence length and cannot be redefined in dims");
        for (int i = 0; i < L->ndims; i++)
            if (!strcmp(L->dims[i].name, name)) return err_node(L, k, "duplicate key '%s' in dims", name);
        dim_def *dd = &L->dims[L->ndims];
        if (get_int(L, node_get(L, p->value), "a dims value", 1, INT32_MAX, &dd->value)) return -1;
        dd->name = xstrdup(name);
        if (!dd->name) return oom(L);
        L->ndims++;
    }
    return 0;
}

static int parse_inputs(loader *L, const yaml_node_t *n) {
    static const char *const known[] = {"input_ids", "token_type_ids", "attention_mask", NULL};
    static const char *const keys[] = {"dtype", "shape", "default", NULL};
    if (expect_mapping(L, n, "inputs")) return -1;
    if (check_keys(L, n, known, "inputs")) return -1;
    L->inputs = calloc(3, sizeof *L->inputs);
    if (!L->inputs) return oom(L);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key), *v = node_get(L, p->value);
        char what[64];
        snprintf(what, sizeof what, "input '%s'", scalar(k));
        if (expect_mapping(L, v, what) || check_keys(L, v, keys, what)) return -1;
        yaml_node_t *dt, *sh;
        if (map_require(L, v, "dtype", what, &dt) || map_require(L, v, "shape", what, &sh)) return -1;
        const char *dts;
        if (get_string(L, dt, "dtype", &dts)) return -1;
        if (strcmp(dts, "int32")) return err_node(L, dt, "input '%s' must have dtype int32, got '%s'", scalar(k), dts);
        if (sh->type != YAML_SEQUENCE_NODE || sh->data.sequence.items.top - sh->data.sequence.items.start != 1 ||
            strcmp(scalar(node_get(L, sh->data.sequence.items.start[0])), "S"))
            return err_node(L, sh, "input '%s' must have shape [S]", scalar(k));
        input_def *in = &L->inputs[L->ninputs++];
        in->name = xstrdup(scalar(k));
        if (!in->name) return oom(L);
        in->line = line_of(k);
        in->col = col_of(k);
        yaml_node_t *def = map_get(L, v, "default");
        if (def) {
            int64_t dv;
            if (!strcmp(in->name, "input_ids")) return err_node(L, def, "input_ids is required and cannot have a default");
            if (get_int(L, def, "default", INT32_MIN, INT32_MAX, &dv)) return -1;
            in->optional = 1;
            in->default_value = (int32_t)dv;
        } else if (strcmp(in->name, "input_ids")) {
            return err_node(L, v, "input '%s' needs a default (Hugging Face's: %s)", in->name,
                            !strcmp(in->name, "token_type_ids") ? "0" : "1");
        }
    }
    return 0;
}

static int parse_outputs(loader *L, const yaml_node_t *n) {
    if (expect_mapping(L, n, "outputs")) return -1;
    int count = (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (count == 0) return err_node(L, n, "outputs must name at least one tensor");
    L->outputs = calloc((size_t)count, sizeof *L->outputs);
    if (!L->outputs) return oom(L);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key), *v = node_get(L, p->value);
        const char *name, *tensor;
        if (get_string(L, k, "an output name", &name) || get_string(L, v, "an output tensor", &tensor)) return -1;
        for (int i = 0; i < L->noutputs; i++)
            if (!strcmp(L->outputs[i].name, name)) return err_node(L, k, "duplicate key '%s' in outputs", name);
        output_def *o = &L->outputs[L->noutputs++];
        o->name = xstrdup(name);
        o->tensor = xstrdup(tensor);
        if (!o->name || !o->tensor) return oom(L);
        o->line = line_of(v);
        o->col = col_of(v);
    }
    return 0;
}

static char *path_join(const char *dir, const char *rel) {
    if (rel[0] == '/' || !dir || !*dir) return xstrdup(rel);
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

/* A path key of the tokenizer section, resolved against the YAML's folder (absent: *dst stays NULL). */
static int parse_tokenizer_path(loader *L, const yaml_node_t *n, const char *key, char **dst) {
    yaml_node_t *v = map_get(L, n, key);
    const char *s;
    if (!v) return 0;
    if (get_string(L, v, key, &s)) return -1;
    if (!(*dst = path_join(L->base_dir, s))) return oom(L);
    return 0;
}

/* Which files describe the tokenizer: tokenizer.json, vocab.json + merges.txt, or vocab.txt. */
static int parse_tokenizer_source(loader *L, const yaml_node_t *n, ir_tokenizer *t) {
    if (parse_tokenizer_path(L, n, "json", &t->json_path) || parse_tokenizer_path(L, n, "vocab", &t->vocab_path) ||
        parse_tokenizer_path(L, n, "vocab_json", &t->bpe_vocab_path) ||
        parse_tokenizer_path(L, n, "merges", &t->bpe_merges_path))
        return -1;
    if (!t->bpe_vocab_path != !t->bpe_merges_path)
        return err_node(L, n, "tokenizer: vocab_json and merges come together (byte-level BPE)");
    if (!t->json_path && !t->vocab_path && !t->bpe_vocab_path)
        return err_node(L, n, "tokenizer: expected json (tokenizer.json), vocab_json + merges, or vocab (vocab.txt)");
    if (t->bpe_vocab_path && (t->json_path || t->vocab_path))
        return err_node(L, n, "tokenizer: vocab_json + merges is a tokenizer of its own (no json or vocab with it)");
    return 0;
}

/* The composite lookup: an extra file by prefix, else the main file. */
static const weights_tensor *model_weights_find(const void *impl, const char *name) {
    const model *m = impl;
    for (int i = 0; i < m->nextra; i++) {
        size_t n = strlen(m->extra_prefix[i]);
        if (!strncmp(name, m->extra_prefix[i], n)) {
            weights w;
            st_file_weights(&m->extra[i], &w);
            return weights_find(&w, name + n);
        }
    }
    return weights_find(&m->main_weights, name);
}

static int parse_extra_weights(loader *L, const yaml_node_t *n) {
    model *m = L->m;
    if (expect_mapping(L, n, "extra_weights (prefix: file)")) return -1;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_get(L, p->key), *v = node_get(L, p->value);
        const char *prefix, *file;
        if (get_string(L, k, "a tensor-name prefix", &prefix) || get_string(L, v, "a safetensors file", &file)) return -1;
        if (prefix[strlen(prefix) - 1] != '/')
            return err_node(L, k, "the prefix '%s' must end with '/' (tensors are named PREFIX/NAME)", prefix);
        for (int i = 0; i < m->nextra; i++)
            if (!strncmp(prefix, m->extra_prefix[i], strlen(m->extra_prefix[i])) ||
                !strncmp(prefix, m->extra_prefix[i], strlen(prefix)))
                return err_node(L, k, "the prefix '%s' overlaps '%s'", prefix, m->extra_prefix[i]);
        if (m->nextra == MODEL_MAX_EXTRA_WEIGHTS)
            return err_node(L, k, "at most %d extra weight files are supported", MODEL_MAX_EXTRA_WEIGHTS);
        char *path = path_join(L->base_dir, file);
        if (!path || !(m->extra_prefix[m->nextra] = xstrdup(prefix))) {
            free(path);
            return oom(L);
        }
        diag sd;
        diag_init(&sd);
        int rc = st_file_open(&m->extra[m->nextra], path, &sd);
        free(path);
        if (rc) {
            free(m->extra_prefix[m->nextra]);
            return err_node(L, v, "cannot use the weights file: %s", sd.text);
        }
        m->nextra++;
    }
    return 0;
}

/* labels: [name, ...] — the class names of the `logits` output. */
static int parse_labels(loader *L, const yaml_node_t *n) {
    ir_graph *g = &L->m->graph;
    if (n->type != YAML_SEQUENCE_NODE) return err_node(L, n, "expected labels (a list of class names), got %s", node_kind(n));
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count < 1 || count > IR_MAX_LABELS) return err_node(L, n, "labels has %d names (expected 1 to %d)", count, IR_MAX_LABELS);
    if (!(g->labels = calloc((size_t)count, sizeof *g->labels))) return oom(L);
    for (int i = 0; i < count; i++) {
        const char *s;
        if (get_string(L, node_get(L, n->data.sequence.items.start[i]), "a class name", &s)) return -1;
        if (!(g->labels[g->nlabels++] = xstrdup(s))) return oom(L);
    }
    L->labels_line = line_of(n);
    L->labels_col = col_of(n);
    return 0;
}

/* With labels, the output `logits` must have one column per label. */
static int check_labels(loader *L) {
    const ir_graph *g = &L->m->graph;
    if (!g->nlabels) return 0;
    for (int i = 0; i < g->noutputs; i++) {
        if (strcmp(g->outputs[i].name, "logits")) continue;
        const ir_node *n = &g->nodes[g->outputs[i].node];
        char b[96];
        if (n->ndim < 1 || n->shape[n->ndim - 1] != g->nlabels)
            return err_at(L, L->labels_line, L->labels_col, "%d labels, but the output logits '%s' is %s (expected "
                          "[..., %d])", g->nlabels, n->name, ir_shape_str(n, b, sizeof b), g->nlabels);
        return 0;
    }
    return err_at(L, L->labels_line, L->labels_col, "labels name the classes of an output 'logits', and there is none");
}

static int parse_tokenizer(loader *L, const yaml_node_t *n) {
    static const char *const keys[] = {"json", "vocab", "vocab_json", "merges", "class", "do_lower_case",
                                       "strip_accents", "tokenize_chinese_chars", "add_prefix_space", "trim_offsets",
                                       "model_max_length", "unk_token", "cls_token", "sep_token", "pad_token",
                                       "mask_token", NULL};
    if (expect_mapping(L, n, "tokenizer") || check_keys(L, n, keys, "tokenizer")) return -1;
    ir_tokenizer *t = &L->m->graph.tokenizer;
    t->do_lower_case = t->strip_accents = t->tokenize_chinese_chars = t->add_prefix_space = t->trim_offsets = -1;
    yaml_node_t *v;
    const char *s;
    if (parse_tokenizer_source(L, n, t)) return -1;
    struct { const char *key; int *dst; } flags[] = {
        {"do_lower_case", &t->do_lower_case}, {"tokenize_chinese_chars", &t->tokenize_chinese_chars},
        {"add_prefix_space", &t->add_prefix_space}, {"trim_offsets", &t->trim_offsets}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if ((v = map_get(L, n, flags[i].key)) && get_bool(L, v, flags[i].key, flags[i].dst)) return -1;
    if ((v = map_get(L, n, "strip_accents")) && !is_null(v) && get_bool(L, v, "strip_accents (true, false or null)", &t->strip_accents))
        return -1;
    if ((v = map_get(L, n, "model_max_length")) && get_int(L, v, "model_max_length", 1, INT32_MAX, &t->model_max_length))
        return -1;
    struct { const char *key; char **dst; } toks[] = {
        {"class", &t->tokenizer_class}, {"unk_token", &t->unk_token}, {"cls_token", &t->cls_token},
        {"sep_token", &t->sep_token}, {"pad_token", &t->pad_token}, {"mask_token", &t->mask_token}};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        if (!(v = map_get(L, n, toks[i].key))) continue;
        if (get_string(L, v, toks[i].key, &s)) return -1;
        if (!(*toks[i].dst = xstrdup(s))) return oom(L);
    }
    L->m->graph.has_tokenizer = 1;
    return 0;
}

/* --------------------------------------------------- resolution and sort */

/* Producer of a tensor name: op index, or -2 - input index, or -1. */
static int producer_of(loader *L, const char *name) {
    for (int i = 0; i < L->nops; i++)
        if (!strcmp(L->ops[i].out, name)) return i;
    for (int i = 0; i < L->ninputs; i++)
        if (!strcmp(L->inputs[i].name, name)) return -2 - i;
    return -1;
}

static int check_names(loader *L) {
    for (int i = 0; i < L->nops; i++) {
        op_rec *r = &L->ops[i];
        for (int j = 0; j < L->ninputs; j++)
            if (!strcmp(L->inputs[j].name, r->out))
                return err_at(L, r->out_line, r->out_col, "'%s' is already defined as an input (line %d)", r->out,
                              L->inputs[j].line);
        for (int j = 0; j < i; j++)
            if (!strcmp(L->ops[j].out, r->out))
                return err_at(L, r->out_line, r->out_col, "tensor '%s' is defined twice (first at line %d)", r->out,
                              L->ops[j].out_line);
        for (int k = 0; k < r->noperands; k++) {
            op_operand *o = &r->operands[k];
            if (o->is_weight) continue;
            if (producer_of(L, o->name) == -1) {
                const char *hint = "";
                if (!strcmp(o->name, "token_type_ids") || !strcmp(o->name, "attention_mask") ||
                    !strcmp(o->name, "input_ids"))
                    hint = " (declare it under inputs)";
                return err_at(L, o->line, o->col, "no tensor named '%s'%s", o->name, hint);
            }
        }
    }
    return 0;
}

/* Depth-first topological sort; order[] receives op indices. */
static int visit(loader *L, int i, int *order, int *norder, int *stack, int depth) {
    op_rec *r = &L->ops[i];
    if (r->mark == 2) return 0;
    stack[depth] = i;
    if (r->mark == 1) {
        /* Find where the cycle starts on the stack and spell it out. */
        char path[1024] = "";
        int from = depth - 1;
        while (from > 0 && stack[from] != i) from--;
        for (int k = from; k <= depth; k++) {
            strncat(path, L->ops[stack[k]].out, sizeof path - strlen(path) - 1);
            if (k < depth) strncat(path, " -> ", sizeof path - strlen(path) - 1);
        }
        return err_at(L, r->line, r->col, "cycle in the graph: %s", path);
    }
    r->mark = 1;
    for (int k = 0; k < r->noperands; k++) {
        if (r->operands[k].is_weight) continue;
        int p = producer_of(L, r->operands[k].name);
        if (p >= 0 && visit(L, p, order, norder, stack, depth + 1)) return -1;
    }
    r->mark = 2;
    order[(*norder)++] = i;
    return 0;
}

static int weight_node(loader *L, const op_operand *o) {
    ir_graph *g = &L->m->graph;
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == IR_OP_WEIGHT && !strcmp(g->nodes[i].weight, o->name)) return i;
    const weights_tensor *t = weights_find(&L->m->weights, o->name);
    if (!t) return err_at(L, o->line, o->col, "no tensor '%s' in %s", o->name, L->m->weights.path);
    ir_dtype dt;
    switch (t->dtype) {
    case WEIGHTS_DTYPE_F32: dt = IR_DTYPE_F32; break;
    case WEIGHTS_DTYPE_F16: dt = IR_DTYPE_F16; break;
    case WEIGHTS_DTYPE_BF16: dt = IR_DTYPE_BF16; break;
    default:
        return err_at(L, o->line, o->col, "weight '%s' in %s has dtype %s (expected F32, F16 or BF16)", o->name,
                      L->m->weights.path, t->dtype_name);
    }
    if (t->ndim < 1 || t->ndim > IR_MAX_DIMS)
        return err_at(L, o->line, o->col, "weight '%s' in %s has %d dimensions (expected 1 to %d)", o->name,
                      L->m->weights.path, t->ndim, IR_MAX_DIMS);
    int idx = ir_graph_add(g, IR_OP_WEIGHT, o->name, NULL, 0);
    if (idx < 0) return oom(L);
    ir_node *n = &g->nodes[idx];
    if (!(n->weight = xstrdup(o->name))) return oom(L);
    n->dtype = dt;
    n->ndim = t->ndim;
    for (int k = 0; k < t->ndim; k++) n->shape[k] = t->shape[k];
    n->line = o->line;
    n->col = o->col;
    return idx;
}

static int emit(loader *L) {
    ir_graph *g = &L->m->graph;
    /* A gather's table may be a compile-time tensor of the graph (a sinusoid):
     * a name some op defines is that tensor, not a weight. */
    for (int i = 0; i < L->nops; i++)
        if (L->ops[i].op == IR_OP_GATHER && L->ops[i].operands[0].is_weight &&
            producer_of(L, L->ops[i].operands[0].name) >= 0)
            L->ops[i].operands[0].is_weight = 0;
    int *order = malloc((size_t)L->nops * sizeof *order);
    int *stack = malloc((size_t)(L->nops + 1) * sizeof *stack);
    int *input_node = malloc(3 * sizeof *input_node);
    if (!order || !stack || !input_node) { free(order); free(stack); free(input_node); return oom(L); }
    int norder = 0, rc = 0;
    for (int i = 0; i < L->nops && !rc; i++) rc = visit(L, i, order, &norder, stack, 0);
    free(stack);
    for (int i = 0; i < L->ninputs && !rc; i++) {
        input_def *in = &L->inputs[i];
        int idx = ir_graph_add(g, IR_OP_INPUT, in->name, NULL, 0);
        if (idx < 0) { rc = oom(L); break; }
        ir_node *n = &g->nodes[idx];
        n->dtype = IR_DTYPE_I32;
        n->ndim = 1;
        n->shape[0] = IR_DIM_SEQ;
        n->optional = in->optional;
        n->default_value = in->default_value;
        n->line = in->line;
        n->col = in->col;
        input_node[i] = idx;
    }
    for (int oi = 0; oi < norder && !rc; oi++) {
        op_rec *r = &L->ops[order[oi]];
        int src[IR_MAX_SRCS], nsrc = 0;
        for (int k = 0; k < r->noperands && !rc; k++) {
            op_operand *o = &r->operands[k];
            int s;
            if (o->is_weight) {
                s = weight_node(L, o);
                if (s < 0) { rc = -1; break; }
            } else {
                int p = producer_of(L, o->name);
                s = p >= 0 ? L->ops[p].node : input_node[-2 - p];
            }
            src[nsrc++] = s;
        }
        if (rc) break;
        int idx = ir_graph_add(g, r->op, r->out, src, nsrc);
        if (idx < 0) { rc = oom(L); break; }
        ir_node *n = &g->nodes[idx];
        n->line = r->line;
        n->col = r->col;
        n->eps = r->eps;
        n->scale = r->scale;
        n->act = r->act;
        for (int k = 0; k < IR_MAX_DIMS; k++) n->perm[k] = r->perm[k];
        if (r->op == IR_OP_TRANSPOSE) n->ndim = r->nperm; /* infer checks it against the source */
        n->transpose_b = r->transpose_b;
        n->axis = r->axis;
        n->start = r->start;
        n->len = r->len;
        n->pool_mode = r->pool_mode;
        n->pad_id = (int32_t)r->pad;
        n->buckets = (int)r->buckets;
        n->max_distance = (int)r->max_distance;
        if (r->op == IR_OP_SINUSOID) {
            n->ndim = 2;
            n->shape[0] = r->rows;
            n->shape[1] = r->dim;
        }
        if (r->op == IR_OP_RESHAPE) {
            n->ndim = r->nshape;
            for (int k = 0; k < r->nshape; k++) n->shape[k] = r->shape[k];
        }
        r->node = idx;
    }
    for (int i = 0; i < L->noutputs && !rc; i++) {
        output_def *o = &L->outputs[i];
        int p = producer_of(L, o->tensor);
        if (p == -1) { rc = err_at(L, o->line, o->col, "no tensor named '%s'", o->tensor); break; }
        int node = p >= 0 ? L->ops[p].node : input_node[-2 - p];
        if (ir_graph_add_output(g, o->name, node) < 0) rc = oom(L);
    }
    free(order);
    free(input_node);
    return rc;
}

/* ------------------------------------------------------------ top level */

static int parse_document(loader *L) {
    static const char *const keys[] = {"bertc", "name", "weights", "extra_weights", "max_seq_len", "dims", "inputs",
                                       "outputs", "labels", "tokenizer", "graph", NULL};
    yaml_node_t *root = yaml_document_get_root_node(&L->doc);
    if (!root) return err_at(L, 1, 1, "the file is empty (expected a model description)");
    if (expect_mapping(L, root, "a model description") || check_keys(L, root, keys, "the model description")) return -1;
    ir_graph *g = &L->m->graph;
    yaml_node_t *v;
    int64_t version;
    if (map_require(L, root, "bertc", "the model description", &v)) return -1;
    if (get_int(L, v, "bertc (the format version)", 0, INT32_MAX, &version)) return -1;
    if (version != MODEL_FORMAT_VERSION)
        return err_node(L, v, "format version %lld is not supported (expected %d)", (long long)version, MODEL_FORMAT_VERSION);
    const char *s;
    if (map_require(L, root, "name", "the model description", &v) || get_string(L, v, "name", &s)) return -1;
    if (!(g->name = xstrdup(s))) return oom(L);
    if (map_require(L, root, "max_seq_len", "the model description", &v) ||
        get_int(L, v, "max_seq_len", 1, 1 << 20, &g->max_seq_len))
        return -1;
    if ((v = map_get(L, root, "dims")) && parse_dims(L, v)) return -1;
    if (map_require(L, root, "inputs", "the model description", &v) || parse_inputs(L, v)) return -1;
    if ((v = map_get(L, root, "tokenizer")) && parse_tokenizer(L, v)) return -1;
    if (map_require(L, root, "graph", "the model description", &v) || parse_graph(L, v)) return -1;
    if (map_require(L, root, "outputs", "the model description", &v) || parse_outputs(L, v)) return -1;
    if ((v = map_get(L, root, "labels")) && parse_labels(L, v)) return -1;
    if (map_require(L, root, "weights", "the model description", &v) || get_string(L, v, "weights (a path)", &s))
        return -1;
    if (!(g->weights_path = path_join(L->base_dir, s))) return oom(L);
    L->weights_line = line_of(v);
    L->weights_col = col_of(v);
    if (check_names(L)) return -1;
    diag sd;
    diag_init(&sd);
    if (st_file_open(&L->m->file, g->weights_path, &sd))
        return err_at(L, L->weights_line, L->weights_col, "cannot use the weights file: %s", sd.text);
    L->m->file_open = 1;
    st_file_weights(&L->m->file, &L->m->main_weights);
    L->m->weights = L->m->main_weights;
    if ((v = map_get(L, root, "extra_weights"))) {
        if (parse_extra_weights(L, v)) return -1;
        L->m->weights.impl = L->m;
        L->m->weights.find = model_weights_find;
    }
    if (emit(L)) return -1;
    return ir_graph_infer(g, L->file, L->src, L->len, L->d) || check_labels(L) ? -1 : 0;
}

static void loader_free(loader *L) {
    for (int i = 0; i < L->nops; i++) {
        free(L->ops[i].out);
        for (int k = 0; k < L->ops[i].noperands; k++) free(L->ops[i].operands[k].name);
    }
    free(L->ops);
    for (int i = 0; i < L->ndims; i++) free(L->dims[i].name);
    free(L->dims);
    for (int i = 0; i < L->ninputs; i++) free(L->inputs[i].name);
    free(L->inputs);
    for (int i = 0; i < L->noutputs; i++) {
        free(L->outputs[i].name);
        free(L->outputs[i].tensor);
    }
    free(L->outputs);
    free(L->rep.locals);
}

/*
 * libyaml's own error, at its place.  A reader error (an encoding problem:
 * a control character, invalid UTF-8) is reported by byte offset and value,
 * not by mark; line and column are counted from the offset here.
 */
static int model_syntax_error(const yaml_parser_t *parser, const char *name, const char *src, size_t len, diag *d) {
    const char *problem = parser->problem ? parser->problem : "unknown problem";
    if (parser->error == YAML_READER_ERROR) {
        size_t off = parser->problem_offset < len ? parser->problem_offset : len;
        int line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (src[i] == '\n') line++, col = 1;
            else if (((unsigned char)src[i] & 0xc0) != 0x80) col++; /* characters, not UTF-8 continuation bytes */
        }
        if (parser->problem_value >= 0)
            return diag_set_at(d, DIAG_CODE_INPUT, name, src, len, line, col,
                               "YAML syntax error: %s (#%X at byte %zu)", problem, (unsigned)parser->problem_value, off);
        return diag_set_at(d, DIAG_CODE_INPUT, name, src, len, line, col, "YAML syntax error: %s (at byte %zu)", problem,
                           off);
    }
    int line = (int)parser->problem_mark.line + 1, col = (int)parser->problem_mark.column + 1;
    return diag_set_at(d, DIAG_CODE_INPUT, name, src, len, line, col, "YAML syntax error: %s%s%s", problem,
                       parser->context ? " " : "", parser->context ? parser->context : "");
}

int model_load_text(model *m, const char *name, const char *text, size_t len, const char *base_dir, diag *d) {
    memset(m, 0, sizeof *m);
    ir_graph_init(&m->graph);
    m->yaml_text = malloc(len + 1);
    if (!m->yaml_text) return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", name);
    memcpy(m->yaml_text, text, len);
    m->yaml_text[len] = '\0';
    m->yaml_len = len;
    if (!(m->graph.source_path = xstrdup(name))) return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", name);

    loader L;
    memset(&L, 0, sizeof L);
    L.file = name;
    L.src = m->yaml_text;
    L.len = len;
    L.base_dir = base_dir;
    L.d = d;
    L.m = m;

    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return diag_set(d, DIAG_CODE_INTERNAL, "%s: cannot start the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)m->yaml_text, len);
    int rc;
    if (!yaml_parser_load(&parser, &L.doc)) {
        rc = model_syntax_error(&parser, name, L.src, len, d);
        yaml_parser_delete(&parser);
        return rc;
    }
    rc = parse_document(&L);
    if (!rc) {
        /* A second document in the stream is not ours to ignore silently. */
        yaml_document_t extra;
        if (yaml_parser_load(&parser, &extra)) {
            yaml_node_t *r2 = yaml_document_get_root_node(&extra);
            if (r2) rc = err_node(&L, r2, "a second YAML document in the file (expected one)");
            yaml_document_delete(&extra);
        }
    }
    yaml_document_delete(&L.doc);
    yaml_parser_delete(&parser);
    loader_free(&L);
    return rc;
}

int model_load(model *m, const char *yaml_path, diag *d) {
    memset(m, 0, sizeof *m);
    ir_graph_init(&m->graph);
    size_t len;
    char *buf = file_read_all(yaml_path, &len, (size_t)64 << 20, d);
    if (!buf) return -1;
    char *dir = xstrdup(yaml_path);
    if (!dir) { free(buf); return diag_set(d, DIAG_CODE_INTERNAL, "out of memory"); }
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else strcpy(dir, ".");
    int rc = model_load_text(m, yaml_path, buf, len, dir, d);
    free(dir);
    free(buf);
    return rc;
}

void model_free(model *m) {
    ir_graph_free(&m->graph);
    if (m->file_open) st_file_close(&m->file);
    for (int i = 0; i < m->nextra; i++) {
        st_file_close(&m->extra[i]);
        free(m->extra_prefix[i]);
    }
    free(m->yaml_text);
    memset(m, 0, sizeof *m);
}
