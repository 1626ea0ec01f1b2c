/*
 * test_import_families — `bertc import` of RoBERTa, XLM-RoBERTa,
 * DistilBERT, ELECTRA and MPNet checkpoints and their task heads.
 *
 * The tiny fixtures of tools/make_tiny_family.py (build/hf/tiny-*, the
 * tensor names transformers' own classes load without a missing or
 * unexpected key) are imported and the graph is checked for what makes
 * each family itself: RoBERTa's position ids after the pad id (and the
 * shorter max_seq_len they leave), DistilBERT's sinusoid table, ELECTRA's
 * embeddings projection, MPNet's relative-position bias in every layer's
 * scores, the head's `logits` first among the outputs with the labels of
 * id2label, a sentence-transformers Dense module, the tokenizer each
 * family's files give (RoBERTa's vocab.json + merges.txt, XLM-R's
 * tokenizer.json, MPNet's vocab.txt with its class).  Then each fixture is
 * copied to a temporary directory and changed — the base-model prefix
 * dropped (a bare *Model saved without it), the stored sinusoid table kept,
 * a classifier of the wrong width, a missing tensor, num_labels against
 * id2label, classifier tensors under a config that names no head, another
 * head class, an unsupported config value, a Dense without safetensors —
 * and each must import (the first two) or fail with a message naming the
 * file, the field or tensor and what was expected.  Nothing is ever
 * imported silently as something else.
 */
#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hf_import.h"
#include "model.h"
#include "stimage.h"
#include "tbuf.h"

/* ------------------------------------------------------------ fixture copies */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* A copy of build/hf/NAME (files and one level of folders) in a new temp dir. */
static char *fixture_copy(const char *name) {
    char *tmp = tbuf_format("%s/import-fam-XXXXXX", check_build_dir());
    if (!mkdtemp(tmp)) {
        CHECK(0, "mkdtemp %s", tmp);
        free(tmp);
        return NULL;
    }
    char *src = tbuf_format("%s/hf/%s", check_build_dir(), name);
    char *cmd = tbuf_format("cp -R '%s/.' '%s/'", src, tmp);
    CHECK(system(cmd) == 0, "%s", cmd);
    free(cmd);
    free(src);
    return tmp;
}

static void dir_remove(char *dir) {
    if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* config.json with `old` replaced by `repl` (which must occur). */
static void config_edit(const char *dir, const char *old, const char *repl) {
    char *p = tbuf_format("%s/config.json", dir);
    size_t len;
    char *text = check_read_file(p, &len);
    char *at = text ? strstr(text, old) : NULL;
    CHECK(at != NULL, "%s has no '%s'", p, old);
    if (at) {
        FILE *f = fopen(p, "wb");
        fwrite(text, 1, (size_t)(at - text), f);
        fputs(repl, f);
        fputs(at + strlen(old), f);
        fclose(f);
    }
    free(text);
    free(p);
}

/* How rewrite() changes one tensor: keep, drop, rename (strip a prefix) or reshape. */
typedef struct change {
    const char *name;            /* exact name, or a prefix ending in '.' for strip */
    enum { CH_DROP, CH_STRIP, CH_ROWS } what;
    int64_t rows;                /* CH_ROWS: the new first dimension (data zeroed) */
} change;

/* model.safetensors rewritten with the changes applied (data copied byte for byte). */
static void rewrite(const char *dir, const change *ch, int nch) {
    char *p = tbuf_format("%s/model.safetensors", dir);
    st_file st;
    diag d;
    diag_init(&d);
    if (st_file_open(&st, p, &d)) {
        CHECK(0, "%s", d.text);
        free(p);
        return;
    }
    stimage img;
    stimage_init(&img);
    for (size_t i = 0; i < st.count; i++) {
        const st_tensor *t = &st.tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%s", t->name);
        int64_t shape[ST_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        int drop = 0, zero = 0;
        for (int k = 0; k < nch; k++) {
            size_t n = strlen(ch[k].name);
            if (ch[k].what == CH_STRIP && !strncmp(name, ch[k].name, n)) memmove(name, name + n, strlen(name + n) + 1);
            if (ch[k].what != CH_STRIP && !strcmp(name, ch[k].name)) {
                drop |= ch[k].what == CH_DROP;
                if (ch[k].what == CH_ROWS) shape[0] = ch[k].rows, zero = 1;
            }
        }
        if (drop) continue;
        stimage_tensor *o = stimage_add(&img, name, t->dtype, t->ndim, shape);
        if (!zero) memcpy(o->bytes, t->data, o->nbytes);
    }
    size_t len, hl;
    unsigned char *bytes = stimage_build(&img, &len, &hl);
    st_file_close(&st);
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(bytes, 1, len, f) == len, "cannot write %s", p);
    if (f) fclose(f);
    free(bytes);
    stimage_free(&img);
    free(p);
}

/* Imports dir into dir/out.yaml: 0 and the loaded model, or -1 and the message. */
static int import_load(const char *dir, model *m, diag *d) {
    char *out = tbuf_format("%s/out.yaml", dir);
    diag_init(d);
    memset(m, 0, sizeof *m);
    int rc = hf_import_run(dir, out, d);
    if (!rc) rc = model_load(m, out, d);
    free(out);
    return rc;
}

static void expect_error(const char *dir, const char *const *needles) {
    model m;
    diag d;
    int rc = import_load(dir, &m, &d);
    CHECK(rc != 0, "%s: imported, expected an error", dir);
    for (int i = 0; rc && needles[i]; i++) CHECK(strstr(d.text, needles[i]) != NULL, "message lacks '%s': %s", needles[i], d.text);
    model_free(&m);
}

/* ------------------------------------------------------------ graph queries */

static int count_op(const ir_graph *g, ir_op op) {
    int n = 0;
    for (int i = 0; i < g->count; i++) n += g->nodes[i].op == op;
    return n;
}

static const ir_node *find_op(const ir_graph *g, ir_op op) {
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == op) return &g->nodes[i];
    return NULL;
}

static int reads_weight(const ir_graph *g, const char *w) {
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == IR_OP_WEIGHT && !strcmp(g->nodes[i].weight, w)) return 1;
    return 0;
}

static int output_index(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->noutputs; i++)
        if (!strcmp(g->outputs[i].name, name)) return i;
    return -1;
}

/* ------------------------------------------------------------ the fixtures as they are */

typedef struct family_expect {
    const char *name;
    int64_t max_seq;             /* max_seq_len of the graph */
    int pad;                     /* pad_positions' pad id, -1: arange */
    int sinusoid, project, bias; /* a sinusoid op, ELECTRA's projection, MPNet's rel_pos_bias */
    int labels;                  /* 0: no head */
    int per_token;               /* token classification */
    const char *first_label;
    const char *probe;           /* a tensor the graph must read */
    const char *tok;             /* the tokenizer section: "bpe" vocab_json + merges, "json", "vocab",
                                  * "mpnet" (vocab with MPNet's class), NULL none */
} family_expect;

static const family_expect FAMILIES[] = {
    {"tiny-roberta", 40, 1, 0, 0, 0, 3, 0, "negative", "classifier.out_proj.weight", "bpe"},
    {"tiny-xlmr-tokcls", 32, 1, 0, 0, 0, 5, 1, "O", "roberta.encoder.layer.1.attention.self.query.weight", "json"},
    {"tiny-distilbert", 48, -1, 1, 0, 0, 2, 0, "LABEL_0", "distilbert.transformer.layer.1.ffn.lin2.weight", "vocab"},
    {"tiny-electra", 40, -1, 0, 1, 0, 1, 0, "score", "electra.embeddings_project.weight", NULL},
    {"tiny-mpnet", 64, 1, 0, 0, 1, 0, 0, NULL, "mpnet.encoder.layer.0.attention.attn.o.weight", "mpnet"},
    {"tiny-mpnet-seqcls", 32, 1, 0, 0, 1, 2, 0, "LABEL_0", "mpnet.encoder.relative_attention_bias.weight", NULL},
    {"tiny-cross-encoder", 40, -1, 0, 0, 0, 1, 0, "LABEL_0", "bert.pooler.dense.weight", "vocab"},
};

/* Every family imports its tokenizer: the files it has, MPNet's class over vocab.txt. */
static void check_family_tokenizer(const family_expect *e, const ir_graph *g) {
    const ir_tokenizer *t = &g->tokenizer;
    if (!e->tok) {
        CHECK(!g->has_tokenizer, "%s: a tokenizer section without tokenizer files", e->name);
        return;
    }
    int want_bpe = !strcmp(e->tok, "bpe"), want_json = !strcmp(e->tok, "json"), want_mpnet = !strcmp(e->tok, "mpnet");
    CHECK(g->has_tokenizer, "%s: no tokenizer section", e->name);
    CHECK(!t->bpe_vocab_path == !want_bpe && !t->bpe_merges_path == !want_bpe && !t->json_path == !want_json &&
              !t->vocab_path == (want_bpe || want_json),
          "%s: the tokenizer names the wrong files (json %s, vocab_json %s, vocab %s)", e->name,
          t->json_path ? t->json_path : "-", t->bpe_vocab_path ? t->bpe_vocab_path : "-",
          t->vocab_path ? t->vocab_path : "-");
    CHECK(!want_mpnet || (t->tokenizer_class && !strcmp(t->tokenizer_class, "MPNetTokenizer")),
          "%s: MPNet's vocab.txt without its class", e->name);
    CHECK(want_mpnet || !t->vocab_path || !t->tokenizer_class, "%s: a class over BERT's vocab.txt", e->name);
}

static void check_family(const family_expect *e) {
    char *dir = fixture_copy(e->name);
    model m;
    diag d;
    if (!dir || import_load(dir, &m, &d)) {
        CHECK(0, "%s: %s", e->name, d.text);
        dir_remove(dir);
        return;
    }
    const ir_graph *g = &m.graph;
    CHECK(g->max_seq_len == e->max_seq, "%s: max_seq_len %lld, expected %lld", e->name, (long long)g->max_seq_len,
          (long long)e->max_seq);
    const ir_node *pp = find_op(g, IR_OP_PAD_POSITIONS);
    CHECK(e->pad < 0 ? !pp && count_op(g, IR_OP_ARANGE) == 1 : pp && pp->pad_id == e->pad,
          "%s: position ids are not %s", e->name, e->pad < 0 ? "an arange" : "pad_positions");
    CHECK(count_op(g, IR_OP_SINUSOID) == e->sinusoid, "%s: sinusoid ops", e->name);
    CHECK(count_op(g, IR_OP_REL_POS_BIAS) == e->bias, "%s: rel_pos_bias ops", e->name);
    if (e->bias) { /* every layer adds it to its scores */
        int adds = 0, rb = (int)(find_op(g, IR_OP_REL_POS_BIAS) - g->nodes);
        for (int i = 0; i < g->count; i++)
            adds += g->nodes[i].op == IR_OP_ADD && (g->nodes[i].src[0] == rb || g->nodes[i].src[1] == rb);
        int layers = count_op(g, IR_OP_SOFTMAX);
        CHECK(adds == layers && layers > 0, "%s: the bias is added in %d of %d layers", e->name, adds, layers);
    }
    CHECK(reads_weight(g, e->probe), "%s: the graph does not read %s", e->name, e->probe);
    CHECK(reads_weight(g, "electra.embeddings_project.weight") == e->project, "%s: projection", e->name);
    CHECK(g->nlabels == e->labels, "%s: %d labels, expected %d", e->name, g->nlabels, e->labels);
    if (e->labels) {
        CHECK(!strcmp(g->labels[0], e->first_label), "%s: first label %s", e->name, g->labels[0]);
        CHECK(output_index(g, "logits") == 0, "%s: logits is not the first output", e->name);
        const ir_node *lg = &g->nodes[g->outputs[0].node];
        int ok = e->per_token ? lg->ndim == 2 && lg->shape[0] == IR_DIM_SEQ && lg->shape[1] == e->labels
                              : lg->ndim == 1 && lg->shape[0] == e->labels;
        CHECK(ok, "%s: logits has the wrong shape", e->name);
    }
    CHECK(output_index(g, "last_hidden_state") >= 0, "%s: no last_hidden_state", e->name);
    check_family_tokenizer(e, g);
    model_free(&m);
    dir_remove(dir);
}

static void case_families(void) {
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) check_family(&FAMILIES[i]);
}

/* tiny-mpnet's sentence head: mean pool -> Dense (60 -> 24, tanh) -> Normalize. */
static void case_dense_module(void) {
    char *dir = fixture_copy("tiny-mpnet");
    model m;
    diag d;
    if (!dir || import_load(dir, &m, &d)) {
        CHECK(0, "%s", d.text);
        dir_remove(dir);
        return;
    }
    const ir_graph *g = &m.graph;
    int o = output_index(g, "sentence_embedding");
    CHECK(o >= 0, "no sentence_embedding");
    const ir_node *se = o >= 0 ? &g->nodes[g->outputs[o].node] : NULL;
    CHECK(se && se->op == IR_OP_L2_NORMALIZE && se->ndim == 1 && se->shape[0] == 24,
          "the embedding is not the normalised 24-wide Dense output");
    CHECK(reads_weight(g, "2_Dense/linear.weight") && reads_weight(g, "2_Dense/linear.bias"),
          "the Dense weights are not read through extra_weights");
    model_free(&m);
    dir_remove(dir);
}

/* ------------------------------------------------------------ variants that import */

/* A bare *Model saved without the base-model prefix: the same graph. */
static void case_no_prefix(void) {
    static const struct {
        const char *fixture, *prefix, *probe;
    } v[] = {{"tiny-mpnet", "mpnet.", "encoder.relative_attention_bias.weight"},
             {"tiny-distilbert", "distilbert.", "transformer.layer.0.attention.q_lin.weight"},
             {"tiny-electra", "electra.", "embeddings_project.weight"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *dir = fixture_copy(v[i].fixture);
        if (!dir) continue;
        /* the head goes too: a bare model */
        change ch[] = {{v[i].prefix, CH_STRIP, 0}, {"classifier.dense.weight", CH_DROP, 0},
                       {"classifier.dense.bias", CH_DROP, 0},  {"classifier.out_proj.weight", CH_DROP, 0},
                       {"classifier.out_proj.bias", CH_DROP, 0}, {"pre_classifier.weight", CH_DROP, 0},
                       {"pre_classifier.bias", CH_DROP, 0},    {"classifier.weight", CH_DROP, 0},
                       {"classifier.bias", CH_DROP, 0}};
        rewrite(dir, ch, 9);
        const char *arch = !strcmp(v[i].fixture, "tiny-mpnet") ? "MPNetModel"
                           : !strcmp(v[i].fixture, "tiny-distilbert") ? "DistilBertForSequenceClassification"
                                                                       : "ElectraForSequenceClassification";
        char *model_cls = tbuf_format("\"%sModel\"", !strcmp(v[i].fixture, "tiny-distilbert") ? "DistilBert"
                                                      : !strcmp(v[i].fixture, "tiny-electra") ? "Electra" : "MPNet");
        char *old = tbuf_format("\"%s\"", arch);
        if (strcmp(arch, "MPNetModel")) config_edit(dir, old, model_cls);
        model m;
        diag d;
        int rc = import_load(dir, &m, &d);
        CHECK(rc == 0, "%s without '%s': %s", v[i].fixture, v[i].prefix, d.text);
        if (!rc) {
            CHECK(reads_weight(&m.graph, v[i].probe), "%s: no '%s'", v[i].fixture, v[i].probe);
            CHECK(m.graph.nlabels == 0 && output_index(&m.graph, "logits") < 0, "%s: a head without a head", v[i].fixture);
        }
        model_free(&m);
        free(old);
        free(model_cls);
        dir_remove(dir);
    }
}

/* DistilBERT with sinusoidal_pos_embds and a stored table: transformers
 * uses the stored one, so the graph reads it instead of computing one. */
static void case_sinusoid_stored(void) {
    char *dir = fixture_copy("tiny-distilbert");
    if (!dir) return;
    char *p = tbuf_format("%s/model.safetensors", dir);
    st_file st;
    diag d;
    diag_init(&d);
    stimage img;
    stimage_init(&img);
    if (!st_file_open(&st, p, &d)) {
        for (size_t i = 0; i < st.count; i++) {
            stimage_tensor *o = stimage_add(&img, st.tensors[i].name, st.tensors[i].dtype, st.tensors[i].ndim,
                                            st.tensors[i].shape);
            memcpy(o->bytes, st.tensors[i].data, o->nbytes);
        }
        st_file_close(&st);
        const int64_t shape[2] = {48, 80};
        stimage_add(&img, "distilbert.embeddings.position_embeddings.weight", ST_DTYPE_BF16, 2, shape);
        size_t len, hl;
        unsigned char *bytes = stimage_build(&img, &len, &hl);
        FILE *f = fopen(p, "wb");
        fwrite(bytes, 1, len, f);
        fclose(f);
        free(bytes);
    }
    stimage_free(&img);
    model m;
    int rc = import_load(dir, &m, &d);
    CHECK(rc == 0, "%s", d.text);
    if (!rc)
        CHECK(count_op(&m.graph, IR_OP_SINUSOID) == 0 &&
                  reads_weight(&m.graph, "distilbert.embeddings.position_embeddings.weight"),
              "the stored sinusoid table is not the one read");
    model_free(&m);
    free(p);
    dir_remove(dir);
}

/* ------------------------------------------------------------ variants that must fail */

/* A copy of `fixture` with one tensor changed must fail naming the needles. */
static void expect_tensor_error(const char *fixture, change ch, const char *const *needles) {
    char *dir = fixture_copy(fixture);
    rewrite(dir, &ch, 1);
    expect_error(dir, needles);
    dir_remove(dir);
}

static void case_wrong_head_shape(void) {
    expect_tensor_error("tiny-roberta", (change){"classifier.out_proj.weight", CH_ROWS, 4},
                        (const char *const[]){"classifier.out_proj.weight", "[4, 72]", "4 labels", "says 3", NULL});
}

static void case_missing_weight(void) {
    expect_tensor_error("tiny-distilbert", (change){"pre_classifier.bias", CH_DROP, 0},
                        (const char *const[]){"model.safetensors", "no tensor 'pre_classifier.bias'", "[80]", NULL});
    expect_tensor_error("tiny-mpnet", (change){"mpnet.encoder.relative_attention_bias.weight", CH_DROP, 0},
                        (const char *const[]){"relative_attention_bias.weight", "[32, 5]", NULL});
    expect_tensor_error("tiny-electra", (change){"electra.embeddings_project.bias", CH_DROP, 0},
                        (const char *const[]){"electra.embeddings_project.bias", NULL});
}

/* A copy of `fixture` with config.json edited must fail naming the needles. */
static void expect_config_error(const char *fixture, const char *old, const char *repl, const char *const *needles) {
    char *dir = fixture_copy(fixture);
    config_edit(dir, old, repl);
    expect_error(dir, needles);
    dir_remove(dir);
}

static void case_num_labels(void) {
    expect_config_error("tiny-roberta", "\"architectures\"", "\"num_labels\": 2,\n  \"architectures\"",
                        (const char *const[]){"config.json", "num_labels 2", "id2label's 3 labels", NULL});
    /* num_labels without id2label: the classifier must have that many rows */
    expect_config_error("tiny-xlmr-tokcls", "\"id2label\"", "\"num_labels\": 7,\n  \"x_id2label\"",
                        (const char *const[]){"classifier.weight", "5 labels", "says 7", NULL});
    expect_config_error("tiny-roberta", "\"0\": \"negative\"", "\"zero\": \"negative\"",
                        (const char *const[]){"config.json", "id2label has no entry \"0\"", NULL});
}

/* Classifier tensors under a config that names no head: an error, not a bare encoder. */
static void case_head_not_silent(void) {
    expect_config_error("tiny-roberta", "\"RobertaForSequenceClassification\"", "\"RobertaModel\"",
                        (const char *const[]){"classifier.", "belongs to a classification head", "RobertaModel", NULL});
    expect_config_error("tiny-distilbert", "\"architectures\": [\n    \"DistilBertForSequenceClassification\"\n  ],", "",
                        (const char *const[]){"belongs to a classification head", "(absent)", NULL});
    expect_config_error("tiny-roberta", "\"RobertaForSequenceClassification\"", "\"RobertaForQuestionAnswering\"",
                        (const char *const[]){"config.json", "RobertaForQuestionAnswering", "is not supported", NULL});
}

static void case_config_values(void) {
    expect_config_error("tiny-mpnet-seqcls", "\"relative_attention_num_buckets\": 32",
                        "\"relative_attention_num_buckets\": 64",
                        (const char *const[]){"config.json", "relative_attention_num_buckets 64", "expected 32", NULL});
    expect_config_error("tiny-roberta", "\"max_position_embeddings\": 42", "\"max_position_embeddings\": 2",
                        (const char *const[]){"config.json", "max_position_embeddings 2", "pad id 1", NULL});
    expect_config_error("tiny-electra", "\"embedding_size\": 32", "\"embedding_size\": 48",
                        (const char *const[]){"electra.embeddings.word_embeddings.weight", "[350, 48]", NULL});
    expect_config_error("tiny-distilbert", "\"activation\": \"gelu\"", "\"activation\": \"silu\"",
                        (const char *const[]){"config.json", "activation 'silu' is not supported", NULL});
}

static void case_dense_errors(void) {
    char *dir = fixture_copy("tiny-mpnet");
    char *p = tbuf_format("%s/2_Dense/model.safetensors", dir);
    char *q = tbuf_format("%s/2_Dense/pytorch_model.bin", dir);
    CHECK(rename(p, q) == 0, "rename %s", p);
    expect_error(dir, (const char *const[]){"2_Dense/model.safetensors", "pytorch_model.bin", NULL});
    free(p);
    free(q);
    dir_remove(dir);
    dir = fixture_copy("tiny-mpnet");
    p = tbuf_format("%s/2_Dense/config.json", dir);
    FILE *f = fopen(p, "wb");
    fputs("{\"in_features\": 60, \"out_features\": 24, \"bias\": true, "
          "\"activation_function\": \"torch.nn.modules.activation.Sigmoid\"}\n", f);
    fclose(f);
    expect_error(dir, (const char *const[]){"2_Dense/config.json:1:", "activation_function", "Sigmoid", NULL});
    f = fopen(p, "wb");
    fputs("{\"in_features\": 61, \"out_features\": 24, \"activation_function\": \"torch.nn.modules.linear.Identity\"}\n", f);
    fclose(f);
    expect_error(dir, (const char *const[]){"in_features 61", "pooled size 60", NULL});
    free(p);
    dir_remove(dir);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(case_families);
    CHECK_CASE(case_dense_module);
    CHECK_CASE(case_no_prefix);
    CHECK_CASE(case_sinusoid_stored);
    CHECK_CASE(case_wrong_head_shape);
    CHECK_CASE(case_missing_weight);
    CHECK_CASE(case_num_labels);
    CHECK_CASE(case_head_not_silent);
    CHECK_CASE(case_config_values);
    CHECK_CASE(case_dense_errors);
    return check_summary();
}
