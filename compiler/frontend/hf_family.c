/*
 * hf_family — what each encoder family is, to the importer.
 *
 * Six families share one graph shape (embeddings, N post-LayerNorm encoder
 * layers, optional pooler and task head) and differ in a handful of ways,
 * each said in the graph rather than special-cased in a kernel:
 *
 *   bert        word + position (0..S-1) + token type, LayerNorm
 *   roberta,    the same, but the position ids come from the *ids*
 *   xlm-roberta (pad_positions: pad_token_id where the id is the pad id,
 *               else pad_token_id + the count of non-pad ids so far), so
 *               max_position_embeddings - pad - 1 tokens fit
 *   distilbert  word + position only, its own tensor names (q_lin, ...,
 *               sa_layer_norm, ffn.lin1/lin2, output_layer_norm), eps 1e-12,
 *               and with sinusoidal_pos_embds a position table computed at
 *               compile time (the `sinusoid` op) unless the checkpoint
 *               stores one (transformers then uses the stored one)
 *   electra     embeddings of embedding_size, LayerNorm'd, then projected
 *               to hidden_size (embeddings_project) when the two differ
 *   mpnet       word + position (pad_positions with the pad id 1 its
 *               embeddings hard-code), its own names (attention.attn.q/k/v/o)
 *               and a relative-position score bias: one [32, heads] table
 *               shared by every layer, added after the scale, before the mask
 *
 * Task heads come from config.json's `architectures`: *Model, *ForPreTraining
 * and *ForMaskedLM are the encoder; *ForSequenceClassification and
 * *ForTokenClassification add their head with the output `logits`; anything
 * else is refused by name.  A checkpoint that carries classifier tensors
 * while its config names no classification head is refused too: importing
 * it as a bare encoder would hand back hidden states where the user expects
 * logits.  num_labels is id2label's size (or num_labels, or transformers'
 * default 2); the classifier's shape must agree, else the error says both.
 *
 * The sequence heads, as transformers computes them on the first token:
 *   bert        pooler (dense, tanh) -> classifier
 *   roberta,    classifier.dense -> tanh -> classifier.out_proj
 *   xlm-roberta, mpnet
 *   electra     classifier.dense -> gelu (erf) -> classifier.out_proj
 *   distilbert  pre_classifier -> relu -> classifier
 * and the token head is `classifier` on every row.  A slice of row 0 feeds
 * the sequence heads, so they touch that row only.
 */
#include "hf_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- families */

typedef struct hf_family_desc {
    const char *model_type;
    hf_family family;
    const char *prefix;          /* base_model_prefix + "." */
    const char *cls;             /* class-name prefix of `architectures` */
    const char *layer;           /* one layer's tensors, before ".{i}." */
    const char *q, *k, *v, *o;   /* attention projections */
    const char *attn_ln, *inter, *out, *out_ln;
} hf_family_desc;

static const hf_family_desc hf_families[] = {
    {"bert", HF_FAMILY_BERT, "bert.", "Bert", "encoder.layer", "attention.self.query", "attention.self.key",
     "attention.self.value", "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
     "output.dense", "output.LayerNorm"},
    {"roberta", HF_FAMILY_ROBERTA, "roberta.", "Roberta", "encoder.layer", "attention.self.query",
     "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
     "intermediate.dense", "output.dense", "output.LayerNorm"},
    {"xlm-roberta", HF_FAMILY_XLM_ROBERTA, "roberta.", "XLMRoberta", "encoder.layer", "attention.self.query",
     "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
     "intermediate.dense", "output.dense", "output.LayerNorm"},
    {"distilbert", HF_FAMILY_DISTILBERT, "distilbert.", "DistilBert", "transformer.layer", "attention.q_lin",
     "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2",
     "output_layer_norm"},
    {"electra", HF_FAMILY_ELECTRA, "electra.", "Electra", "encoder.layer", "attention.self.query",
     "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
     "intermediate.dense", "output.dense", "output.LayerNorm"},
    {"mpnet", HF_FAMILY_MPNET, "mpnet.", "MPNet", "encoder.layer", "attention.attn.q", "attention.attn.k",
     "attention.attn.v", "attention.attn.o", "attention.LayerNorm", "intermediate.dense", "output.dense",
     "output.LayerNorm"},
};

#define HF_NFAMILIES (sizeof hf_families / sizeof hf_families[0])
#define HF_FAMILY_LIST "'bert', 'roberta', 'xlm-roberta', 'distilbert', 'electra' or 'mpnet'"

static const hf_family_desc *hf_family_of(const hf_config *c) {
    for (size_t i = 0; i < HF_NFAMILIES; i++)
        if (hf_families[i].family == c->family) return &hf_families[i];
    return &hf_families[0];
}

int64_t hf_family_max_seq(const hf_config *c) {
    return c->pad_positions >= 0 ? c->max_pos - c->pad_positions - 1 : c->max_pos;
}

int hf_family_has_types(const hf_config *c) { return c->type_vocab > 0; }

/* --------------------------------------------------------------- config */

static const struct {
    const char *hf;
    ir_act act;
} hf_activations[] = {
    {"gelu", IR_ACT_GELU_ERF},          {"gelu_python", IR_ACT_GELU_ERF},
    {"gelu_new", IR_ACT_GELU_TANH},     {"gelu_pytorch_tanh", IR_ACT_GELU_TANH},
    {"gelu_accurate", IR_ACT_GELU_TANH}, {"gelu_fast", IR_ACT_GELU_TANH},
    {"relu", IR_ACT_RELU},
};

static int hf_config_act(const hf_json_file *f, const char *key, ir_act *act, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    char shown[256];
    *act = IR_ACT_GELU_ERF;
    if (!v) return 0;
    for (size_t i = 0; i < sizeof hf_activations / sizeof hf_activations[0]; i++)
        if (v->type == JSON_TYPE_STRING && !strcmp(v->string, hf_activations[i].hf)) {
            *act = hf_activations[i].act;
            return 0;
        }
    return hf_json_error(f, v, d,
                         "%s %s is not supported (expected 'gelu', 'gelu_python', 'gelu_new', 'gelu_pytorch_tanh', "
                         "'gelu_accurate', 'gelu_fast' or 'relu')",
                         key, hf_json_show(f, v, shown, sizeof shown));
}

static int hf_config_eps(const hf_json_file *f, float *eps_out, diag *d) {
    const json_value *v = json_get(&f->doc.root, "layer_norm_eps");
    char shown[256];
    double eps = 1e-12;
    if (v) {
        if (v->type != JSON_TYPE_NUMBER)
            return hf_json_error(f, v, d, "layer_norm_eps must be a positive number, got %s",
                                 hf_json_show(f, v, shown, sizeof shown));
        eps = v->number;
        if (!(eps > 0) || !((float)eps > 0) || !isfinite((float)eps))
            return hf_json_error(f, v, d, "layer_norm_eps must be a positive float32 number, got %s",
                                 hf_json_show(f, v, shown, sizeof shown));
    }
    *eps_out = (float)eps;
    return 0;
}

/* A field that must be absent or the one value the graph states. */
static int hf_config_expect_int(const hf_json_file *f, const char *key, int64_t want, const char *why, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    char shown[256];
    if (!v || (v->type == JSON_TYPE_NUMBER && v->number_is_int && v->integer == want)) return 0;
    return hf_json_error(f, v, d, "%s %s is not supported (expected %lld: %s)", key,
                         hf_json_show(f, v, shown, sizeof shown), (long long)want, why);
}

/* A non-negative integer field with a default (pad_token_id). */
static int hf_config_id(const hf_json_file *f, const char *key, int64_t def, int64_t *out, diag *d) {
    const json_value *v = json_get(&f->doc.root, key);
    char shown[256];
    *out = def;
    if (!v) return 0;
    if (v->type != JSON_TYPE_NUMBER || !v->number_is_int || v->integer < 0 || v->integer > INT32_MAX)
        return hf_json_error(f, v, d, "%s must be a token id (an integer >= 0), got %s", key,
                             hf_json_show(f, v, shown, sizeof shown));
    *out = v->integer;
    return 0;
}

/* The BERT-shaped config: bert, roberta, xlm-roberta, electra, mpnet. */
static int hf_config_bert_like(const hf_json_file *f, hf_config *c, diag *d) {
    const json_value *v;
    char shown[256];
    int mpnet = c->family == HF_FAMILY_MPNET;
    if (hf_config_int(f, "hidden_size", 0, &c->hidden, d) || hf_config_int(f, "num_attention_heads", 0, &c->heads, d) ||
        hf_config_int(f, "num_hidden_layers", 0, &c->layers, d) ||
        hf_config_int(f, "intermediate_size", 0, &c->intermediate, d) || hf_config_int(f, "vocab_size", 0, &c->vocab, d) ||
        hf_config_int(f, "max_position_embeddings", 0, &c->max_pos, d) ||
        (!mpnet && hf_config_int(f, "type_vocab_size", 2, &c->type_vocab, d)) ||
        hf_config_act(f, "hidden_act", &c->act, d) || hf_config_eps(f, &c->eps, d))
        return -1;
    c->embedding = c->hidden;
    if (c->family == HF_FAMILY_ELECTRA && hf_config_int(f, "embedding_size", 128, &c->embedding, d)) return -1;
    if (!mpnet && (v = json_get(&f->doc.root, "position_embedding_type")) &&
        !(v->type == JSON_TYPE_STRING && !strcmp(v->string, "absolute")))
        return hf_json_error(f, v, d, "position_embedding_type %s is not supported (expected 'absolute')",
                             hf_json_show(f, v, shown, sizeof shown));
    if (hf_config_false(f, "is_decoder", d) || hf_config_false(f, "add_cross_attention", d)) return -1;
    if ((v = json_get(&f->doc.root, "chunk_size_feed_forward")) &&
        !(v->type == JSON_TYPE_NUMBER && v->number_is_int && v->integer == 0))
        return hf_json_error(f, v, d, "chunk_size_feed_forward %s is not supported (expected 0)",
                             hf_json_show(f, v, shown, sizeof shown));
    if (c->family == HF_FAMILY_ROBERTA || c->family == HF_FAMILY_XLM_ROBERTA)
        return hf_config_id(f, "pad_token_id", 1, &c->pad_positions, d);
    if (mpnet) {
        c->pad_positions = 1; /* MPNetEmbeddings.padding_idx, whatever pad_token_id says */
        c->buckets = 32;
        return hf_config_expect_int(f, "relative_attention_num_buckets", 32,
                                    "MPNet computes its position bias with 32 buckets", d);
    }
    return 0;
}

static int hf_config_distilbert(const hf_json_file *f, hf_config *c, diag *d) {
    const json_value *v;
    char shown[256];
    if (hf_config_int(f, "dim", 768, &c->hidden, d) || hf_config_int(f, "n_heads", 12, &c->heads, d) ||
        hf_config_int(f, "n_layers", 6, &c->layers, d) || hf_config_int(f, "hidden_dim", 3072, &c->intermediate, d) ||
        hf_config_int(f, "vocab_size", 30522, &c->vocab, d) ||
        hf_config_int(f, "max_position_embeddings", 512, &c->max_pos, d) || hf_config_act(f, "activation", &c->act, d))
        return -1;
    c->embedding = c->hidden;
    c->eps = 1e-12f; /* DistilBERT's LayerNorms hard-code it */
    if ((v = json_get(&f->doc.root, "sinusoidal_pos_embds"))) {
        if (v->type != JSON_TYPE_BOOL)
            return hf_json_error(f, v, d, "sinusoidal_pos_embds must be true or false, got %s",
                                 hf_json_show(f, v, shown, sizeof shown));
        c->sinusoidal = v->boolean;
    }
    return 0;
}

/* architectures[*] -> task; every entry must name the same one. */
static int hf_config_task(const hf_json_file *f, hf_config *c, const hf_family_desc *fd, diag *d) {
    static const struct {
        const char *suffix;
        hf_task task;
    } kinds[] = {{"Model", HF_TASK_NONE}, {"ForPreTraining", HF_TASK_NONE}, {"ForMaskedLM", HF_TASK_NONE},
                 {"ForSequenceClassification", HF_TASK_SEQUENCE}, {"ForTokenClassification", HF_TASK_TOKEN}};
    const json_value *a = json_get(&f->doc.root, "architectures");
    char shown[256];
    c->task = HF_TASK_NONE;
    if (!a || a->type == JSON_TYPE_NULL) return 0;
    if (a->type != JSON_TYPE_ARRAY)
        return hf_json_error(f, a, d, "architectures must be a list of class names, got %s",
                             hf_json_show(f, a, shown, sizeof shown));
    size_t pl = strlen(fd->cls);
    for (size_t i = 0; i < a->count; i++) {
        const json_value *e = &a->items[i];
        size_t k = sizeof kinds / sizeof kinds[0], n = 0;
        if (e->type == JSON_TYPE_STRING && !strncmp(e->string, fd->cls, pl))
            for (n = 0; n < k && strcmp(e->string + pl, kinds[n].suffix); n++) {}
        if (e->type != JSON_TYPE_STRING || strncmp(e->string, fd->cls, pl) || n == k)
            return hf_json_error(f, e, d,
                                 "architecture %s is not supported (expected %sModel, %sForPreTraining, %sForMaskedLM "
                                 "(the encoder), %sForSequenceClassification or %sForTokenClassification)",
                                 hf_json_show(f, e, shown, sizeof shown), fd->cls, fd->cls, fd->cls, fd->cls, fd->cls);
        if (i > 0 && kinds[n].task != c->task)
            return hf_json_error(f, e, d, "architecture %s asks for another head than %s",
                                 hf_json_show(f, e, shown, sizeof shown), c->architecture);
        c->task = kinds[n].task;
        if (i == 0) c->architecture = e->string;
    }
    return 0;
}

/* id2label {"0": name, ...} complete and in order, or absent. */
static int hf_config_id2label(const hf_json_file *f, hf_config *c, const json_value *m, diag *d) {
    char shown[256], key[32];
    c->labels = calloc(m->count ? m->count : 1, sizeof *c->labels);
    if (!c->labels) return hf_oom(d);
    for (size_t i = 0; i < m->count; i++) {
        snprintf(key, sizeof key, "%zu", i);
        const json_value *v = json_get(m, key);
        if (!v) return hf_json_error(f, m, d, "id2label has no entry \"%s\" (expected keys \"0\" to \"%zu\")", key,
                                     m->count - 1);
        if (v->type != JSON_TYPE_STRING || !v->string_len || strlen(v->string) != v->string_len)
            return hf_json_error(f, v, d, "id2label \"%s\" must be a non-empty string, got %s", key,
                                 hf_json_show(f, v, shown, sizeof shown));
        c->labels[i] = v->string;
    }
    return 0;
}

/* num_labels: id2label's size, or num_labels, or 2 (transformers' default). */
static int hf_config_labels(const hf_json_file *f, hf_config *c, diag *d) {
    const json_value *m = json_get(&f->doc.root, "id2label"), *n = json_get(&f->doc.root, "num_labels");
    char shown[256];
    c->num_labels = 2;
    if (n) {
        if (n->type != JSON_TYPE_NUMBER || !n->number_is_int || n->integer < 1 || n->integer > HF_MAX_LABELS)
            return hf_json_error(f, n, d, "num_labels must be an integer from 1 to %d, got %s", HF_MAX_LABELS,
                                 hf_json_show(f, n, shown, sizeof shown));
        c->num_labels = n->integer;
    }
    if (!m || m->type == JSON_TYPE_NULL) return 0;
    if (m->type != JSON_TYPE_OBJECT || m->count < 1 || m->count > HF_MAX_LABELS)
        return hf_json_error(f, m, d, "id2label must be an object of 1 to %d labels, got %s", HF_MAX_LABELS,
                             hf_json_show(f, m, shown, sizeof shown));
    if (n && (int64_t)m->count != c->num_labels)
        return hf_json_error(f, n, d, "num_labels %lld does not match id2label's %zu labels", (long long)c->num_labels,
                             m->count);
    c->num_labels = (int64_t)m->count;
    return hf_config_id2label(f, c, m, d);
}

int hf_config_read(const hf_json_file *f, hf_config *c, diag *d) {
    const json_value *v = json_get(&f->doc.root, "model_type");
    char shown[256];
    memset(c, 0, sizeof *c);
    c->pad_positions = -1;
    if (!v)
        return diag_set(d, DIAG_CODE_INPUT, "%s: missing field 'model_type' (expected " HF_FAMILY_LIST ")", f->path);
    const hf_family_desc *fd = NULL;
    for (size_t i = 0; i < HF_NFAMILIES && v->type == JSON_TYPE_STRING; i++)
        if (!strcmp(v->string, hf_families[i].model_type)) fd = &hf_families[i];
    if (!fd)
        return hf_json_error(f, v, d, "model_type %s is not supported (expected " HF_FAMILY_LIST ")",
                             hf_json_show(f, v, shown, sizeof shown));
    c->family = fd->family;
    c->model_type = fd->model_type;
    int rc = c->family == HF_FAMILY_DISTILBERT ? hf_config_distilbert(f, c, d) : hf_config_bert_like(f, c, d);
    if (rc || hf_config_task(f, c, fd, d) || (c->task != HF_TASK_NONE && hf_config_labels(f, c, d))) return -1;
    int distil = c->family == HF_FAMILY_DISTILBERT;
    const char *hk = distil ? "n_heads" : "num_attention_heads", *sk = distil ? "dim" : "hidden_size";
    if (c->hidden % c->heads != 0)
        return hf_json_error(f, json_get(&f->doc.root, hk) ? json_get(&f->doc.root, hk) : v, d,
                             "%s %lld is not a multiple of %s %lld", sk, (long long)c->hidden, hk, (long long)c->heads);
    if (c->pad_positions >= 0 && hf_family_max_seq(c) < 1)
        return hf_json_error(f, json_get(&f->doc.root, "max_position_embeddings"), d,
                             "max_position_embeddings %lld leaves no position after the pad id %lld (positions "
                             "start at pad + 1)", (long long)c->max_pos, (long long)c->pad_positions);
    return 0;
}

void hf_config_free(hf_config *c) {
    free(c->labels);
    c->labels = NULL;
}

/* -------------------------------------------------------------- weights */

/* One tensor: name from fmt, shape [d0] or [d0, d1]. */
#define HF_CHECK(ndim, d0, d1, ...)                                    \
    do {                                                               \
        snprintf(name, sizeof name, __VA_ARGS__);                      \
        if (hf_weight_check(st, name, ndim, d0, d1, d)) return -1;     \
    } while (0)

/* A Linear's weight [n_out, n_in] and bias [n_out] under `base`. */
static int hf_check_dense(const st_file *st, const char *base, int64_t n_out, int64_t n_in, diag *d) {
    char name[512];
    HF_CHECK(2, n_out, n_in, "%s.weight", base);
    HF_CHECK(1, n_out, 0, "%s.bias", base);
    return 0;
}

static int hf_check_ln(const st_file *st, const hf_names *nm, const char *base, int64_t n, diag *d) {
    char name[512];
    HF_CHECK(1, n, 0, "%s.%s", base, nm->ln_gamma);
    HF_CHECK(1, n, 0, "%s.%s", base, nm->ln_beta);
    return 0;
}

/* The prefix and the LayerNorm spelling, from the word-embedding table. */
static int hf_names_find(const st_file *st, const hf_family_desc *fd, hf_names *nm, diag *d) {
    char name[512], modern[512];
    snprintf(name, sizeof name, "%sembeddings.word_embeddings.weight", fd->prefix);
    if (st_file_find(st, name))
        nm->prefix = fd->prefix;
    else if (st_file_find(st, "embeddings.word_embeddings.weight"))
        nm->prefix = "";
    else
        return diag_set(d, DIAG_CODE_INPUT,
                        "%s: no tensor 'embeddings.word_embeddings.weight' or '%s' (expected a %s checkpoint)",
                        st->path, name, fd->model_type);
    /* Old TensorFlow conversions name LayerNorm parameters gamma/beta. */
    snprintf(name, sizeof name, "%sembeddings.LayerNorm.gamma", nm->prefix);
    snprintf(modern, sizeof modern, "%sembeddings.LayerNorm.weight", nm->prefix);
    int legacy = st_file_find(st, name) && !st_file_find(st, modern);
    nm->ln_gamma = legacy ? "gamma" : "weight";
    nm->ln_beta = legacy ? "beta" : "bias";
    return 0;
}

static int hf_check_embeddings(const st_file *st, const hf_config *c, hf_names *nm, diag *d) {
    char name[512];
    const char *p = nm->prefix;
    const int64_t E = c->embedding, H = c->hidden;
    HF_CHECK(2, c->vocab, E, "%sembeddings.word_embeddings.weight", p);
    snprintf(name, sizeof name, "%sembeddings.position_embeddings.weight", p);
    nm->has_pos_table = !c->sinusoidal || st_file_find(st, name);
    if (nm->has_pos_table) HF_CHECK(2, c->max_pos, E, "%sembeddings.position_embeddings.weight", p);
    if (hf_family_has_types(c)) HF_CHECK(2, c->type_vocab, E, "%sembeddings.token_type_embeddings.weight", p);
    snprintf(name, sizeof name, "%sembeddings.LayerNorm", p);
    if (hf_check_ln(st, nm, name, E, d)) return -1;
    snprintf(name, sizeof name, "%sembeddings_project", p);
    if (E != H && hf_check_dense(st, name, H, E, d)) return -1;
    if (c->buckets) HF_CHECK(2, c->buckets, c->heads, "%sencoder.relative_attention_bias.weight", p);
    return 0;
}

static int hf_check_layers(const st_file *st, const hf_config *c, const hf_names *nm, const hf_family_desc *fd,
                           diag *d) {
    char base[512];
    const int64_t H = c->hidden, I = c->intermediate;
    for (int64_t l = 0; l < c->layers; l++) {
        const char *dense[4] = {fd->q, fd->k, fd->v, fd->o};
        for (int j = 0; j < 4; j++) {
            snprintf(base, sizeof base, "%s%s.%lld.%s", nm->prefix, fd->layer, (long long)l, dense[j]);
            if (hf_check_dense(st, base, H, H, d)) return -1;
        }
        snprintf(base, sizeof base, "%s%s.%lld.%s", nm->prefix, fd->layer, (long long)l, fd->attn_ln);
        if (hf_check_ln(st, nm, base, H, d)) return -1;
        snprintf(base, sizeof base, "%s%s.%lld.%s", nm->prefix, fd->layer, (long long)l, fd->inter);
        if (hf_check_dense(st, base, I, H, d)) return -1;
        snprintf(base, sizeof base, "%s%s.%lld.%s", nm->prefix, fd->layer, (long long)l, fd->out);
        if (hf_check_dense(st, base, H, I, d)) return -1;
        snprintf(base, sizeof base, "%s%s.%lld.%s", nm->prefix, fd->layer, (long long)l, fd->out_ln);
        if (hf_check_ln(st, nm, base, H, d)) return -1;
    }
    return 0;
}

/* The head's classifier: [num_labels, H], and a clear word when its rows
 * disagree with the config's labels. */
static int hf_check_classifier(const st_file *st, const hf_config *c, const char *base, diag *d) {
    char name[512], shape[64];
    snprintf(name, sizeof name, "%s.weight", base);
    const st_tensor *t = st_file_find(st, name);
    if (t && t->ndim == 2 && t->shape[1] == c->hidden && t->shape[0] != c->num_labels)
        return diag_set(d, DIAG_CODE_INPUT,
                        "%s: tensor '%s' has shape %s: %lld labels, but config.json says %lld (id2label / "
                        "num_labels)", st->path, name, hf_shape_str(t->shape, t->ndim, shape, sizeof shape),
                        (long long)t->shape[0], (long long)c->num_labels);
    return hf_check_dense(st, base, c->num_labels, c->hidden, d);
}

/* Tensors a classification head would have, in a checkpoint whose config
 * asks for none: refused rather than ignored. */
static int hf_check_no_head(const st_file *st, const hf_config *c, diag *d) {
    static const char *const heads[] = {"classifier.weight", "classifier.dense.weight", "classifier.out_proj.weight",
                                        "pre_classifier.weight"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (st_file_find(st, heads[i]))
            return diag_set(d, DIAG_CODE_INPUT,
                            "%s: tensor '%s' belongs to a classification head, but config.json's architectures %s%s%s "
                            "names none (expected *ForSequenceClassification or *ForTokenClassification)",
                            st->path, heads[i], c->architecture ? "'" : "", c->architecture ? c->architecture : "(absent)",
                            c->architecture ? "'" : "");
    return 0;
}

static int hf_check_head(const st_file *st, const hf_config *c, hf_names *nm, diag *d) {
    char name[512];
    const char *p = nm->prefix;
    /* a pooler is its weight and its bias; a lone weight (some conversions keep one) is ignored */
    snprintf(name, sizeof name, "%spooler.dense.weight", p);
    int pooler = st_file_find(st, name) != NULL;
    snprintf(name, sizeof name, "%spooler.dense.bias", p);
    pooler = pooler && st_file_find(st, name) != NULL;
    snprintf(name, sizeof name, "%spooler.dense.weight", p);
    nm->has_pooler = pooler && c->task != HF_TASK_TOKEN;
    if (c->task == HF_TASK_SEQUENCE && c->family == HF_FAMILY_BERT && !pooler)
        return diag_set(d, DIAG_CODE_INPUT, "%s: no tensor '%s' (BertForSequenceClassification classifies the "
                                            "pooler's output)", st->path, name);
    snprintf(name, sizeof name, "%spooler.dense", p);
    if (nm->has_pooler && hf_check_dense(st, name, c->hidden, c->hidden, d)) return -1;
    if (c->task == HF_TASK_NONE) return hf_check_no_head(st, c, d);
    if (c->task == HF_TASK_TOKEN || c->family == HF_FAMILY_BERT) return hf_check_classifier(st, c, "classifier", d);
    if (c->family == HF_FAMILY_DISTILBERT)
        return hf_check_dense(st, "pre_classifier", c->hidden, c->hidden, d) ||
               hf_check_classifier(st, c, "classifier", d);
    return hf_check_dense(st, "classifier.dense", c->hidden, c->hidden, d) ||
           hf_check_classifier(st, c, "classifier.out_proj", d);
}

#undef HF_CHECK

int hf_weights_check(const st_file *st, const hf_config *c, hf_names *nm, diag *d) {
    const hf_family_desc *fd = hf_family_of(c);
    memset(nm, 0, sizeof *nm);
    return hf_names_find(st, fd, nm, d) || hf_check_embeddings(st, c, nm, d) || hf_check_layers(st, c, nm, fd, d) ||
                   hf_check_head(st, c, nm, d)
               ? -1
               : 0;
}

/* ----------------------------------------------------------------- YAML */

/* The embeddings: gathers of word, position [and token type], their sum,
 * the LayerNorm [and ELECTRA's projection]; MPNet's position bias. */
static void hf_yaml_embeddings(hf_text *t, const hf_config *c, const hf_names *nm, const char *eps) {
    const char *p = nm->prefix, *g = nm->ln_gamma, *b = nm->ln_beta;
    int types = hf_family_has_types(c), project = c->embedding != c->hidden;
    hf_text_printf(t, "graph:\n  # embeddings\n");
    if (c->pad_positions >= 0)
        hf_text_printf(t, "  - {op: pad_positions, out: position_ids, ids: input_ids, pad: %lld}\n",
                       (long long)c->pad_positions);
    else
        hf_text_printf(t, "  - {op: arange, out: position_ids, like: input_ids}\n");
    char table[512];
    if (nm->has_pos_table) {
        snprintf(table, sizeof table, "%sembeddings.position_embeddings.weight", p);
    } else {
        snprintf(table, sizeof table, "position_table");
        hf_text_printf(t, "  - {op: sinusoid, out: position_table, rows: %lld, dim: %lld}\n", (long long)c->max_pos,
                       (long long)c->embedding);
    }
    hf_text_printf(t,
                   "  - {op: gather, out: word_emb, table: %sembeddings.word_embeddings.weight, index: input_ids}\n"
                   "  - {op: gather, out: pos_emb, table: %s, index: position_ids}\n",
                   p, table);
    if (types)
        hf_text_printf(t,
                       "  - {op: gather, out: type_emb, table: %sembeddings.token_type_embeddings.weight, index: token_type_ids}\n"
                       "  - {op: add, out: emb_sum0, a: word_emb, b: pos_emb}\n"
                       "  - {op: add, out: emb_sum, a: emb_sum0, b: type_emb}\n",
                       p);
    else
        hf_text_printf(t, "  - {op: add, out: emb_sum, a: word_emb, b: pos_emb}\n");
    hf_text_printf(t,
                   "  - {op: layer_norm, out: %s, x: emb_sum, gamma: %sembeddings.LayerNorm.%s, beta: %sembeddings.LayerNorm.%s, eps: %s}\n",
                   project ? "emb_ln" : "h0", p, g, p, b, eps);
    if (project)
        hf_text_printf(t,
                       "  # embedding_size %lld -> hidden_size %lld\n"
                       "  - {op: matmul, out: emb_proj, x: emb_ln, weight: %sembeddings_project.weight}\n"
                       "  - {op: bias_add, out: h0, x: emb_proj, bias: %sembeddings_project.bias}\n",
                       (long long)c->embedding, (long long)c->hidden, p, p);
    if (c->buckets)
        hf_text_printf(t,
                       "  # relative position bias, one table for every layer\n"
                       "  - {op: rel_pos_bias, out: position_bias, like: input_ids, table: %sencoder.relative_attention_bias.weight, buckets: %lld, max_distance: 128}\n",
                       p, (long long)c->buckets);
}

/* Self-attention of one layer, inside the repeat block. */
static void hf_yaml_attention(hf_text *t, const hf_config *c, const hf_names *nm, const hf_family_desc *fd) {
    const char *p = nm->prefix;
    char scale[32];
    hf_float_format(scale, sizeof scale, (float)(1.0 / sqrt((double)(c->hidden / c->heads))));
    const char *qkv[3][2] = {{"q", fd->q}, {"k", fd->k}, {"v", fd->v}};
    for (int j = 0; j < 3; j++) {
        const char *s = qkv[j][0], *w = qkv[j][1];
        hf_text_printf(t,
                       "      - {op: matmul, out: %s_mm, x: \"h{i}\", weight: \"%s%s.{i}.%s.weight\"}\n"
                       "      - {op: bias_add, out: %s, x: %s_mm, bias: \"%s%s.{i}.%s.bias\"}\n"
                       "      - {op: reshape, out: %s_r, x: %s, shape: [S, NH, HD]}\n"
                       "      - {op: transpose, out: %s_h, x: %s_r, perm: [1, 0, 2]}\n",
                       s, p, fd->layer, w, s, s, p, fd->layer, w, s, s, s, s);
    }
    hf_text_printf(t,
                   "      - {op: batched_matmul, out: scores, a: q_h, b: k_h, transpose_b: true}\n"
                   "      - {op: scale, out: scores_s, x: scores, by: %s}\n",
                   scale);
    if (c->buckets)
        hf_text_printf(t, "      - {op: add, out: scores_b, a: scores_s, b: position_bias}\n");
    hf_text_printf(t,
                   "      - {op: mask, out: scores_m, x: %s, mask: attention_mask}\n"
                   "      - {op: softmax, out: probs, x: scores_m}\n"
                   "      - {op: batched_matmul, out: ctx_h, a: probs, b: v_h}\n"
                   "      - {op: transpose, out: ctx_t, x: ctx_h, perm: [1, 0, 2]}\n"
                   "      - {op: reshape, out: ctx, x: ctx_t, shape: [S, H]}\n",
                   c->buckets ? "scores_b" : "scores_s");
}

/* One encoder layer, repeated: self-attention, its output, the FFN. */
static void hf_yaml_layers(hf_text *t, const hf_config *c, const hf_names *nm, const char *eps) {
    const hf_family_desc *fd = hf_family_of(c);
    const char *p = nm->prefix, *g = nm->ln_gamma, *b = nm->ln_beta, *L = fd->layer;
    hf_text_printf(t, "  # encoder layers\n  - repeat: %lld\n    index: i\n    ops:\n", (long long)c->layers);
    hf_yaml_attention(t, c, nm, fd);
    hf_text_printf(t,
                   "      - {op: matmul, out: ao_mm, x: ctx, weight: \"%s%s.{i}.%s.weight\"}\n"
                   "      - {op: bias_add, out: ao, x: ao_mm, bias: \"%s%s.{i}.%s.bias\"}\n"
                   "      - {op: add, out: ao_res, a: ao, b: \"h{i}\"}\n"
                   "      - {op: layer_norm, out: attn_out, x: ao_res, gamma: \"%s%s.{i}.%s.%s\", beta: \"%s%s.{i}.%s.%s\", eps: %s}\n",
                   p, L, fd->o, p, L, fd->o, p, L, fd->attn_ln, g, p, L, fd->attn_ln, b, eps);
    hf_text_printf(t,
                   "      - {op: matmul, out: inter_mm, x: attn_out, weight: \"%s%s.{i}.%s.weight\"}\n"
                   "      - {op: bias_add, out: inter_b, x: inter_mm, bias: \"%s%s.{i}.%s.bias\"}\n"
                   "      - {op: activation, out: inter, x: inter_b, fn: %s}\n"
                   "      - {op: matmul, out: out_mm, x: inter, weight: \"%s%s.{i}.%s.weight\"}\n"
                   "      - {op: bias_add, out: out_b, x: out_mm, bias: \"%s%s.{i}.%s.bias\"}\n"
                   "      - {op: add, out: out_res, a: out_b, b: attn_out}\n"
                   "      - {op: layer_norm, out: \"h{i+1}\", x: out_res, gamma: \"%s%s.{i}.%s.%s\", beta: \"%s%s.{i}.%s.%s\", eps: %s}\n",
                   p, L, fd->inter, p, L, fd->inter, ir_act_name(c->act), p, L, fd->out, p, L, fd->out, p, L,
                   fd->out_ln, g, p, L, fd->out_ln, b, eps);
}

/* logits = x . W^T + b on `x` ([1, H] or [S, H]); a [1, NL] row becomes [NL]. */
static void hf_yaml_linear_logits(hf_text *t, const char *x, const char *base, int row, long long nl) {
    hf_text_printf(t,
                   "  - {op: matmul, out: logits_mm, x: %s, weight: %s.weight}\n"
                   "  - {op: bias_add, out: %s, x: logits_mm, bias: %s.bias}\n",
                   x, base, row ? "logits_b" : "logits", base);
    if (row) hf_text_printf(t, "  - {op: reshape, out: logits, x: logits_b, shape: [%lld]}\n", nl);
}

/* The task head, after the pooler. */
static void hf_yaml_task(hf_text *t, const hf_config *c, long long L) {
    long long nl = (long long)c->num_labels;
    if (c->task == HF_TASK_TOKEN) {
        hf_text_printf(t, "  # token classification: a linear layer on every token\n");
        char x[32];
        snprintf(x, sizeof x, "h%lld", L);
        hf_yaml_linear_logits(t, x, "classifier", 0, nl);
        return;
    }
    if (c->family == HF_FAMILY_BERT) {
        hf_text_printf(t, "  # sequence classification: classifier on the pooled output\n");
        hf_yaml_linear_logits(t, "pool_t", "classifier", 1, nl);
        return;
    }
    int distil = c->family == HF_FAMILY_DISTILBERT;
    const char *fn = distil ? "relu" : c->family == HF_FAMILY_ELECTRA ? "gelu" : "tanh";
    const char *dense = distil ? "pre_classifier" : "classifier.dense", *out = distil ? "classifier" : "classifier.out_proj";
    hf_text_printf(t,
                   "  # sequence classification on the first token: %s -> %s -> %s\n"
                   "  - {op: slice, out: head_x, x: h%lld, axis: 0, start: 0, len: 1}\n"
                   "  - {op: matmul, out: head_mm, x: head_x, weight: %s.weight}\n"
                   "  - {op: bias_add, out: head_b, x: head_mm, bias: %s.bias}\n"
                   "  - {op: activation, out: head_act, x: head_b, fn: %s}\n",
                   dense, fn, out, L, dense, dense, fn);
    hf_yaml_linear_logits(t, "head_act", out, 1, nl);
}

void hf_family_yaml(hf_text *t, const hf_config *c, const hf_names *nm) {
    char eps[32];
    hf_float_format(eps, sizeof eps, c->eps);
    long long L = (long long)c->layers;
    hf_yaml_embeddings(t, c, nm, eps);
    hf_yaml_layers(t, c, nm, eps);
    if (nm->has_pooler)
        hf_text_printf(t,
                       "  # pooler: dense + tanh on the first ([CLS]) token\n"
                       "  - {op: slice, out: cls, x: h%lld, axis: 0, start: 0, len: 1}\n"
                       "  - {op: matmul, out: pool_mm, x: cls, weight: %spooler.dense.weight}\n"
                       "  - {op: bias_add, out: pool_b, x: pool_mm, bias: %spooler.dense.bias}\n"
                       "  - {op: activation, out: pool_t, x: pool_b, fn: tanh}\n"
                       "  - {op: reshape, out: pooled, x: pool_t, shape: [H]}\n",
                       L, nm->prefix, nm->prefix);
    if (c->task != HF_TASK_NONE) hf_yaml_task(t, c, L);
}
