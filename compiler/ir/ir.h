/*
 * ir — the flat op-level graph every stage of bertc works on.
 *
 * A graph is an array of nodes in topological order (a node's sources always
 * come before it).  Each node is one tensor: the op that makes it, up to
 * IR_MAX_SRCS source nodes by index, its dtype and shape, and the op's
 * parameters as plain fields.  There is no separate tensor/value object and
 * no pointer graph: passes rewrite the array (ggml's tensor/graph is the
 * model).  Weights and request inputs are nodes too (IR_OP_WEIGHT,
 * IR_OP_INPUT), so every op only ever refers to other nodes.
 *
 * Shapes are those of one request (batch 1).  The sequence length S is
 * symbolic: a dimension equal to IR_DIM_SEQ stands for S and is fixed only
 * when a request (reference executor) or a bucket (compiler) binds it.
 *
 * Building a graph is split in two, as in ggml: ir_graph_add() only records
 * a node; ir_graph_infer() checks every node's sources and computes shapes
 * and dtypes, reporting a mismatch at the YAML line that defined the node.
 *
 * The fusion passes speak the same language: a fused op (LINEAR, ATTENTION,
 * ADD_LN, EMBED_LN) is one more node kind whose optional operands are
 * flagged by fields (has_bias, ...) and sit at fixed source positions, so
 * the lowering reads a fused node as directly as the executor does, and
 * the same infer re-checks every rewritten graph.  Compile-time results
 * (CONST) carry their float32 values in the node itself.
 */
#ifndef BERTC_IR_H
#define BERTC_IR_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

#define IR_MAX_DIMS 4
#define IR_MAX_SRCS 8
#define IR_MAX_GATHERS 3 /* EMBED_LN: at most word, position, token type */
#define IR_DIM_SEQ (-1)   /* the symbolic sequence length S */
#define IR_MAX_LABELS 4096 /* class names of a classification head */

typedef enum ir_dtype {
    IR_DTYPE_F32,
    IR_DTYPE_F16,
    IR_DTYPE_BF16,
    IR_DTYPE_I32,
    IR_DTYPE_COUNT,
} ir_dtype;

typedef enum ir_op {
    IR_OP_INPUT,          /* request input (input_ids, token_type_ids, attention_mask) */
    IR_OP_WEIGHT,         /* a tensor of the weights file, named by `weight` */
    IR_OP_ARANGE,         /* [S] int32 0..S-1; src0 gives S */
    IR_OP_GATHER,         /* src0 table [V, D], src1 index [S] int32 -> [S, D] */
    IR_OP_ADD,            /* src0 + src1, same shape */
    IR_OP_BIAS_ADD,       /* src0 [..., N] + src1 [N] */
    IR_OP_LAYER_NORM,     /* src0 [..., N], src1 gamma [N], src2 beta [N]; eps */
    IR_OP_MATMUL,         /* src0 x [M, K] times src1 weight [N, K] (Linear layout) -> [M, N] */
    IR_OP_ACTIVATION,     /* act applied elementwise */
    IR_OP_RESHAPE,        /* same elements, new shape */
    IR_OP_TRANSPOSE,      /* out dim d = in dim perm[d] */
    IR_OP_BATCHED_MATMUL, /* src0 [B, M, K] x src1 [B, K, N] (or [B, N, K] with transpose_b) */
    IR_OP_SCALE,          /* src0 * scale */
    IR_OP_MASK,           /* src0 [..., Sk] + (1 - src1[Sk]) * float32 min (Hugging Face's extended mask) */
    IR_OP_SOFTMAX,        /* softmax over the last axis */
    IR_OP_SLICE,          /* src0 restricted to [start, start+len) along axis */
    IR_OP_POOL,           /* src0 x [S, H] -> [H]: row 0 (pool_mode CLS) or the mean of the rows
                           * s with src1 mask[s] != 0 (MEAN; sum / max(count, 1e-9)); then
                           * x / max(||x||_2, 1e-12) when `normalize` (set by fuse_pool_normalize) */
    IR_OP_L2_NORMALIZE,   /* src0 [..., N] / max(||row||_2, 1e-12) over the last axis */
    IR_OP_PAD_POSITIONS,  /* src0 ids [S] int32 -> [S] int32: pad_id where ids[s] == pad_id, else
                           * pad_id + #{t <= s : ids[t] != pad_id} (RoBERTa's position ids) */
    IR_OP_REL_POS_BIAS,   /* src0 table [buckets, NH], src1 like [S, ...] -> [NH, S, S]:
                           * table[bucket(k - q)][h], the bidirectional log bucket of MPNet/T5 */
    IR_OP_SINUSOID,       /* no sources -> [rows, dim] (shape set before infer): sin/cos
                           * position table, DistilBERT's create_sinusoidal_embeddings */

    /*
     * Ops the fusion passes create (compiler/passes/); the YAML cannot
     * spell them.  Each computes exactly what the unfused chain it replaces
     * computes, with the same float32 rounding points (docs/passes.md).
     */
    IR_OP_CONST,          /* compile-time tensor: `data` (float32, owned), no sources */
    IR_OP_CONCAT,         /* src0..srcN-1 concatenated along `axis` (other dims equal) */
    IR_OP_LINEAR,         /* act(((x · wᵀ) + bias) + residual): src0 x [M, K], src1 w [N, K],
                           * then bias [N] if has_bias, then residual [M, N] if has_residual */
    IR_OP_ATTENTION,      /* multi-head attention: src0 q, src1 k, src2 v (2-D, columns from
                           * q_off/k_off/v_off), optional src3 mask [Sk] int32, then, if has_bias,
                           * an additive score bias [heads, Sq, Sk] (after the scale, before the
                           * mask) -> [Sq, heads*head_dim] */
    IR_OP_ADD_LN,         /* LayerNorm((x + bias) + residual)·gamma + beta: src0 x, src1 gamma,
                           * src2 beta, then residual if has_residual, then bias if has_bias */
    IR_OP_EMBED_LN,       /* LayerNorm(sum_g gather(table_g, index_g))·gamma + beta: src0 gamma,
                           * src1 beta, then ngathers (table, index) pairs */
    IR_OP_COUNT,
} ir_op;

typedef enum ir_act {
    IR_ACT_GELU_ERF,      /* x/2 (1 + erf(x/sqrt 2)) — Hugging Face "gelu" */
    IR_ACT_GELU_TANH,     /* tanh approximation — "gelu_new", "gelu_pytorch_tanh" */
    IR_ACT_RELU,
    IR_ACT_TANH,
    IR_ACT_COUNT,
} ir_act;

/* How IR_OP_POOL turns [S, H] into [H] (sentence-transformers' Pooling modes). */
typedef enum ir_pool_mode {
    IR_POOL_CLS,          /* row 0, the [CLS] token; the mask is not read */
    IR_POOL_MEAN,         /* mean over the rows the attention mask keeps */
    IR_POOL_COUNT,
} ir_pool_mode;

typedef struct ir_node {
    ir_op op;
    char *name;                  /* tensor name, unique in the graph */
    int src[IR_MAX_SRCS];
    int nsrc;
    ir_dtype dtype;
    int ndim;
    int64_t shape[IR_MAX_DIMS];  /* IR_DIM_SEQ marks S; RESHAPE: the target, set before infer */

    /* Parameters; each op reads only its own. */
    char *weight;                /* WEIGHT: tensor name in the weights file */
    int optional;                /* INPUT: the request may omit it */
    int32_t default_value;       /* INPUT: value of every element when omitted */
    float eps;                   /* LAYER_NORM */
    float scale;                 /* SCALE */
    ir_act act;                  /* ACTIVATION */
    int perm[IR_MAX_DIMS];       /* TRANSPOSE; before infer, ndim holds perm's length */
    int transpose_b;             /* BATCHED_MATMUL */
    int axis;                    /* SLICE */
    int64_t start, len;          /* SLICE */
    int unused;                  /* INPUT: declared but no output depends on it (pass_dce) */
    ir_pool_mode pool_mode;      /* POOL */
    int normalize;               /* POOL: L2-normalise the pooled row (fused l2_normalize) */
    int32_t pad_id;              /* PAD_POSITIONS */
    int buckets, max_distance;   /* REL_POS_BIAS */

    /* Parameters of the fused ops.  CONCAT reuses `axis`, LINEAR `act`,
     * ATTENTION `scale`, ADD_LN and EMBED_LN `eps`. */
    float *data;                 /* CONST: row-major float32 values, owned by the node */
    int has_bias, has_residual;  /* LINEAR, ADD_LN, ATTENTION (bias): which optional sources are present */
    int has_act;                 /* LINEAR: apply `act` last */
    int heads, head_dim;         /* ATTENTION */
    int q_off, k_off, v_off;     /* ATTENTION: first column of q, k, v in src0, src1, src2 */
    int ngathers;                /* EMBED_LN: 1..IR_MAX_GATHERS */

    /* Where the node was written (YAML), for diagnostics; 0 if synthesised. */
    int line, col;
} ir_node;

typedef struct ir_output {
    char *name;                  /* last_hidden_state, pooler_output, ... */
    int node;
} ir_output;

/*
 * The tokenizer (docs/model-yaml.md "Tokenizer"): where its description
 * lives — tokenizer.json, or vocab.json + merges.txt (byte-level BPE), or
 * vocab.txt alone (WordPiece) — and the settings of tokenizer_config.json
 * that transformers applies over it for the tokenizer class.
 */
typedef struct ir_tokenizer {
    char *vocab_path;            /* vocab.txt (WordPiece), NULL if none */
    char *json_path;             /* tokenizer.json: the description when present */
    char *bpe_vocab_path;        /* vocab.json and merges.txt: byte-level BPE without tokenizer.json */
    char *bpe_merges_path;
    char *tokenizer_class;       /* tokenizer_config.json's tokenizer_class (or the model type's), NULL unknown */
    int do_lower_case;           /* -1 = unspecified */
    int strip_accents;           /* -1 = follow do_lower_case, 0, 1 */
    int tokenize_chinese_chars;  /* -1 = unspecified */
    int add_prefix_space;        /* -1 = unspecified (RoBERTa) */
    int trim_offsets;            /* -1 = unspecified (RoBERTa) */
    int64_t model_max_length;    /* 0 = unspecified */
    char *unk_token, *cls_token, *sep_token, *pad_token, *mask_token;
} ir_tokenizer;

typedef struct ir_graph {
    ir_node *nodes;
    int count, cap;
    ir_output *outputs;
    int noutputs;
    char *name;
    char *source_path;           /* the YAML file */
    char *weights_path;          /* resolved path of the safetensors file */
    int64_t max_seq_len;
    int has_tokenizer;
    ir_tokenizer tokenizer;
    char **labels;               /* class names of the output `logits` (config.json's id2label) */
    int nlabels;
} ir_graph;

void ir_graph_init(ir_graph *g);
void ir_graph_free(ir_graph *g);

/* Record a node (no checking); returns its index or -1 on allocation failure. */
int ir_graph_add(ir_graph *g, ir_op op, const char *name, const int *src, int nsrc);
int ir_graph_find(const ir_graph *g, const char *name);
int ir_graph_add_output(ir_graph *g, const char *name, int node);

/* A deep copy of src into dst (names, weights' names, CONST data, outputs,
 * tokenizer).  Returns 0, or -1 on allocation failure (dst left empty). */
int ir_graph_clone(ir_graph *dst, const ir_graph *src);
/* Free what node n owns (name, weight, data) and clear those fields. */
void ir_node_release(ir_node *n);

/*
 * Check every node against its sources and fill in dtype and shape (WEIGHT
 * and INPUT nodes must already carry theirs).  Errors name the node and the
 * YAML place that defined it (`file` / `src` are used for the caret).
 */
int ir_graph_infer(ir_graph *g, const char *file, const char *src, size_t src_len, diag *d);

/* An ATTENTION node reads a mask (src3) when it has one more source than q,
 * k, v and the optional bias. */
static inline int ir_attention_has_mask(const ir_node *n) { return n->nsrc - 3 - !!n->has_bias >= 1; }

/* Number of elements with S bound to seq_len. */
int64_t ir_node_numel(const ir_node *n, int64_t seq_len);
int64_t ir_dim_bind(int64_t dim, int64_t seq_len);

const char *ir_op_name(ir_op op);          /* "matmul", ... (the YAML spelling) */
const char *ir_act_name(ir_act act);       /* "gelu", "gelu_tanh", "relu", "tanh" */
const char *ir_pool_mode_name(ir_pool_mode m); /* "cls", "mean" */
const char *ir_dtype_name(ir_dtype t);     /* "float32", "float16", "bfloat16", "int32" */
/* "[S, 96]" into buf. */
const char *ir_shape_str(const ir_node *n, char *buf, size_t cap);

/* Print the graph in a readable one-line-per-node form (bertc inspect, tests). */
void ir_graph_dump(const ir_graph *g, void *file /* FILE* */);

#endif
