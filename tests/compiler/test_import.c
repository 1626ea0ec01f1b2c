/*
 * test_import — `bertc import`: Hugging Face directory to model YAML.
 *
 * The importer is judged by what the YAML *means*, not by how it looks: each
 * imported file is loaded with the real front end (model_load) and the
 * resulting graph is compared with expectations the test derives on its own
 * from the checkpoint — config.json read here with the JSON reader, the
 * safetensors header read here — never from the importer's output: the
 * number of matmuls, the activation, every LayerNorm's eps, the attention
 * scale, which weights are named (prefix, legacy gamma/beta) and their dtype
 * and shape as stored, the outputs, the tokenizer settings.  Text-level
 * checks are kept to what the contract is about text: two imports give the
 * same bytes, and the committed models/NAME.yaml equal a fresh import.
 *
 * Error paths use small checkpoints the test writes itself (config.json text
 * plus a safetensors image from the tests' writer, support/stimage.c), one
 * defect each; every error
 * must fail, name the field or tensor and the offending value, and leave no
 * file — not the output, not a temporary — in the output directory.
 */
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hf_import.h"
#include "ir.h"
#include "json.h"
#include "model.h"
#include "ref.h"
#include "safetensors.h"
#include "stimage.h"
#include "tbuf.h"

/* ------------------------------------------------------------- utilities */

static int path_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static char *temp_dir_make(void) {
    const char *tmp = getenv("TMPDIR");
    char *p = tbuf_format("%s/bertc-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void temp_dir_remove(char *dir) {
    if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* Number of entries in a directory (without . and ..), -1 if unreadable. */
static int dir_count(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Any entry whose name contains ".tmp." (a left-over temporary)? */
static int dir_has_temp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) found = 1;
    closedir(d);
    return found;
}

static int same_file(const char *a, const char *b) {
    if (!a || !b) return 0;
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    int same = ra && rb && !strcmp(ra, rb);
    free(ra);
    free(rb);
    return same;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* Does `text` contain `line` as a whole line? */
static int has_line(const char *text, const char *line) {
    size_t m = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[m] == '\n' || p[m] == '\0')) return 1;
    return 0;
}

/* --------------------------------------------------- checkpoint expectations */

/* What the test itself reads from a checkpoint directory. */
typedef struct expect {
    json_doc cfg;
    int cfg_ok;
    st_file st;
    int st_ok;
    int64_t hidden, heads, layers, inter, vocab, max_pos, type_vocab;
    float eps;
    ir_act act;
    const char *prefix;
    int legacy, pooler, has_vocab;
    int sentence;                /* modules.json: a sentence-transformers head */
    int head;                    /* *ForSequenceClassification: the classifier on the pooler */
} expect;

static int64_t cfg_int(const json_doc *doc, const char *key, int64_t def) {
    const json_value *v = json_get(&doc->root, key);
    return v && v->type == JSON_TYPE_NUMBER && v->number_is_int ? v->integer : def;
}

/* Returns 0 when everything could be read; failures are recorded with CHECK. */
static int expect_read(expect *e, const char *dir) {
    memset(e, 0, sizeof *e);
    char *p = tbuf_format("%s/config.json", dir);
    size_t len;
    char *text = check_read_file(p, &len);
    CHECK(text != NULL, "cannot read %s", p);
    char err[512];
    if (text) {
        e->cfg_ok = json_parse(&e->cfg, text, len, p, err, sizeof err) == 0;
        CHECK(e->cfg_ok, "%s", err);
    }
    free(text);
    free(p);
    p = tbuf_format("%s/model.safetensors", dir);
    diag d;
    diag_init(&d);
    e->st_ok = st_file_open(&e->st, p, &d) == 0;
    CHECK(e->st_ok, "%s", d.text);
    free(p);
    if (!e->cfg_ok || !e->st_ok) return -1;

    e->hidden = cfg_int(&e->cfg, "hidden_size", -1);
    e->heads = cfg_int(&e->cfg, "num_attention_heads", -1);
    e->layers = cfg_int(&e->cfg, "num_hidden_layers", -1);
    e->inter = cfg_int(&e->cfg, "intermediate_size", -1);
    e->vocab = cfg_int(&e->cfg, "vocab_size", -1);
    e->max_pos = cfg_int(&e->cfg, "max_position_embeddings", -1);
    e->type_vocab = cfg_int(&e->cfg, "type_vocab_size", 2);
    const json_value *v = json_get(&e->cfg.root, "layer_norm_eps");
    e->eps = v && v->type == JSON_TYPE_NUMBER ? (float)v->number : 1e-12f;
    v = json_get(&e->cfg.root, "hidden_act");
    const char *act = v && v->type == JSON_TYPE_STRING ? v->string : "gelu";
    if (!strcmp(act, "gelu"))
        e->act = IR_ACT_GELU_ERF;
    else if (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh"))
        e->act = IR_ACT_GELU_TANH;
    else if (!strcmp(act, "relu"))
        e->act = IR_ACT_RELU;
    else
        CHECK(0, "%s: the test does not know hidden_act '%s'", dir, act);

    e->prefix = st_file_find(&e->st, "bert.embeddings.word_embeddings.weight") ? "bert." : "";
    char name[256];
    snprintf(name, sizeof name, "%sembeddings.LayerNorm.gamma", e->prefix);
    e->legacy = st_file_find(&e->st, name) != NULL;
    snprintf(name, sizeof name, "%spooler.dense.weight", e->prefix);
    e->pooler = st_file_find(&e->st, name) != NULL;
    p = tbuf_format("%s/vocab.txt", dir);
    e->has_vocab = path_exists(p);
    free(p);
    p = tbuf_format("%s/modules.json", dir);
    e->sentence = path_exists(p);
    free(p);
    v = json_get(&e->cfg.root, "architectures");
    e->head = v && v->type == JSON_TYPE_ARRAY && v->count == 1 && v->items[0].type == JSON_TYPE_STRING &&
              ends_with(v->items[0].string, "ForSequenceClassification");
    return 0;
}

static void expect_free(expect *e) {
    if (e->cfg_ok) json_free(&e->cfg);
    if (e->st_ok) st_file_close(&e->st);
}

static ir_dtype ir_dtype_of(st_dtype t) {
    switch (t) {
    case ST_DTYPE_F32: return IR_DTYPE_F32;
    case ST_DTYPE_F16: return IR_DTYPE_F16;
    case ST_DTYPE_BF16: return IR_DTYPE_BF16;
    default: return IR_DTYPE_COUNT;
    }
}

static const ir_node *graph_output(const ir_graph *g, const char *name) {
    for (int i = 0; i < g->noutputs; i++)
        if (!strcmp(g->outputs[i].name, name)) return &g->nodes[g->outputs[i].node];
    return NULL;
}

/* Is there a weight node reading tensor `w`? */
static int graph_reads_weight(const ir_graph *g, const char *w) {
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == IR_OP_WEIGHT && !strcmp(g->nodes[i].weight, w)) return 1;
    return 0;
}

/* Output `name` is a [hidden] vector if `present`, else absent (`why`). */
static void graph_check_vector(const char *tag, const ir_graph *g, const char *name, int present, int64_t hidden,
                               const char *why) {
    const ir_node *n = graph_output(g, name);
    if (present)
        CHECK(n && n->ndim == 1 && n->shape[0] == hidden, "%s: %s missing or not [%lld]", tag, name, (long long)hidden);
    else
        CHECK(!n, "%s: %s present %s", tag, name, why);
}

/* The graph of an imported checkpoint against what the checkpoint says. */
static void graph_check(const char *tag, const ir_graph *g, const expect *e) {
    int64_t L = e->layers;
    int nmatmul = 0, nact = 0, ntanh = 0, nln = 0, nscale = 0, nweight = 0, nlegacy = 0, nmodern = 0;
    for (int i = 0; i < g->count; i++) {
        const ir_node *n = &g->nodes[i];
        switch (n->op) {
        case IR_OP_MATMUL: nmatmul++; break;
        case IR_OP_ACTIVATION:
            nact++;
            if (n->act == IR_ACT_TANH)
                ntanh++;
            else
                CHECK(n->act == e->act, "%s: activation %s is %s, expected %s", tag, n->name, ir_act_name(n->act),
                      ir_act_name(e->act));
            break;
        case IR_OP_LAYER_NORM:
            nln++;
            CHECK(n->eps == e->eps, "%s: layer_norm %s has eps %.9g, expected %.9g", tag, n->name, (double)n->eps,
                  (double)e->eps);
            break;
        case IR_OP_SCALE: {
            nscale++;
            float want = (float)(1.0 / sqrt((double)(e->hidden / e->heads)));
            CHECK(n->scale == want, "%s: scale %s is %.9g, expected %.9g", tag, n->name, (double)n->scale,
                  (double)want);
            break;
        }
        case IR_OP_WEIGHT: {
            nweight++;
            const char *w = n->weight;
            if (*e->prefix && !(e->head && starts_with(w, "classifier.")))
                CHECK(starts_with(w, e->prefix), "%s: weight '%s' lacks the prefix '%s'", tag, w, e->prefix);
            else
                CHECK(!starts_with(w, "bert."), "%s: weight '%s' has a prefix the checkpoint lacks", tag, w);
            if (ends_with(w, "LayerNorm.gamma") || ends_with(w, "LayerNorm.beta")) nlegacy++;
            if (ends_with(w, "LayerNorm.weight") || ends_with(w, "LayerNorm.bias")) nmodern++;
            const st_tensor *t = st_file_find(&e->st, w);
            CHECK(t != NULL, "%s: weight '%s' is not in the checkpoint", tag, w);
            if (!t) break;
            CHECK(n->dtype == ir_dtype_of(t->dtype), "%s: weight '%s' is %s in the graph, stored as %s", tag, w,
                  ir_dtype_name(n->dtype), st_dtype_name(t->dtype));
            int same = n->ndim == t->ndim;
            for (int k = 0; same && k < t->ndim; k++) same = n->shape[k] == t->shape[k];
            CHECK(same, "%s: weight '%s' has a shape other than the stored one", tag, w);
            break;
        }
        default: break;
        }
    }
    CHECK(nmatmul == 6 * L + e->pooler + e->head, "%s: %d matmuls, expected %lld", tag, nmatmul,
          (long long)(6 * L + e->pooler + e->head));
    CHECK(nact == L + e->pooler && ntanh == e->pooler, "%s: %d activations (%d tanh), expected %lld (%d)", tag, nact,
          ntanh, (long long)(L + e->pooler), e->pooler);
    CHECK(nln == 2 * L + 1, "%s: %d layer norms, expected %lld", tag, nln, (long long)(2 * L + 1));
    CHECK(nscale == L, "%s: %d scales, expected %lld", tag, nscale, (long long)L);
    CHECK(nweight == 5 + 16 * L + 2 * e->pooler + 2 * e->head, "%s: %d weight nodes, expected %lld", tag, nweight,
          (long long)(5 + 16 * L + 2 * e->pooler + 2 * e->head));
    if (e->legacy)
        CHECK(nlegacy == 2 * (2 * L + 1) && nmodern == 0, "%s: %d gamma/beta and %d weight/bias LayerNorm names", tag,
              nlegacy, nmodern);
    else
        CHECK(nmodern == 2 * (2 * L + 1) && nlegacy == 0, "%s: %d weight/bias and %d gamma/beta LayerNorm names", tag,
              nmodern, nlegacy);
    /* Every layer is there, once each, in the checkpoint's own spelling. */
    for (int64_t l = 0; l < L; l++) {
        char w[256];
        snprintf(w, sizeof w, "%sencoder.layer.%lld.output.dense.weight", e->prefix, (long long)l);
        CHECK(graph_reads_weight(g, w), "%s: no weight node reads '%s'", tag, w);
        snprintf(w, sizeof w, "%sencoder.layer.%lld.intermediate.dense.bias", e->prefix, (long long)l);
        CHECK(graph_reads_weight(g, w), "%s: no weight node reads '%s'", tag, w);
    }

    const ir_node *last = graph_output(g, "last_hidden_state");
    CHECK(last && last->ndim == 2 && last->shape[0] == IR_DIM_SEQ && last->shape[1] == e->hidden,
          "%s: last_hidden_state missing or not [S, %lld]", tag, (long long)e->hidden);
    graph_check_vector(tag, g, "pooler_output", e->pooler, e->hidden, "without pooler weights");
    graph_check_vector(tag, g, "sentence_embedding", e->sentence, e->hidden, "without modules.json");
    CHECK(g->noutputs == 1 + e->pooler + e->sentence + e->head, "%s: %d outputs", tag, g->noutputs);
    if (e->head) /* a *ForSequenceClassification imports as its head, logits first */
        CHECK(g->noutputs > 0 && !strcmp(g->outputs[0].name, "logits") && g->nlabels == 2,
              "%s: the classifier's logits are not the first output (or %d labels)", tag, g->nlabels);
    CHECK(g->max_seq_len == e->max_pos, "%s: max_seq_len %lld, expected %lld", tag, (long long)g->max_seq_len,
          (long long)e->max_pos);
}

/* Tokenizer settings of the graph against the directory's files. */
static void tokenizer_check(const char *tag, const ir_graph *g, const char *dir, const expect *e) {
    CHECK(g->has_tokenizer == e->has_vocab, "%s: tokenizer section %s, vocab.txt %s", tag,
          g->has_tokenizer ? "present" : "absent", e->has_vocab ? "present" : "absent");
    if (!g->has_tokenizer || !e->has_vocab) return;
    char *vocab = tbuf_format("%s/vocab.txt", dir);
    CHECK(same_file(g->tokenizer.vocab_path, vocab), "%s: tokenizer vocab '%s' is not %s", tag,
          g->tokenizer.vocab_path ? g->tokenizer.vocab_path : "(null)", vocab);
    free(vocab);
    char *p = tbuf_format("%s/tokenizer_config.json", dir);
    size_t len;
    char *text = check_read_file(p, &len);
    const ir_tokenizer *t = &g->tokenizer;
    if (!text) {
        CHECK(t->do_lower_case == -1 && t->strip_accents == -1 && t->tokenize_chinese_chars == -1 &&
                  t->model_max_length == 0 && !t->unk_token && !t->cls_token && !t->sep_token && !t->pad_token &&
                  !t->mask_token,
              "%s: tokenizer settings without a tokenizer_config.json", tag);
        free(p);
        return;
    }
    json_doc doc;
    char err[512];
    int ok = json_parse(&doc, text, len, p, err, sizeof err) == 0;
    CHECK(ok, "%s", err);
    free(text);
    free(p);
    if (!ok) return;
    const json_value *v;
    v = json_get(&doc.root, "do_lower_case");
    CHECK(t->do_lower_case == (v ? v->boolean : -1), "%s: do_lower_case %d", tag, t->do_lower_case);
    v = json_get(&doc.root, "tokenize_chinese_chars");
    CHECK(t->tokenize_chinese_chars == (v ? v->boolean : -1), "%s: tokenize_chinese_chars %d", tag,
          t->tokenize_chinese_chars);
    v = json_get(&doc.root, "strip_accents");
    CHECK(t->strip_accents == (v && v->type == JSON_TYPE_BOOL ? v->boolean : -1), "%s: strip_accents %d", tag,
          t->strip_accents);
    v = json_get(&doc.root, "model_max_length");
    int64_t mml = v && v->number_is_int && v->integer > 0 && v->integer <= INT32_MAX ? v->integer : 0;
    /* a sentence-transformers model truncates at its max_seq_length instead */
    char *mj = tbuf_format("%s/modules.json", dir), *sj = tbuf_format("%s/sentence_bert_config.json", dir);
    size_t slen;
    char *stext = access(mj, R_OK) == 0 ? check_read_file(sj, &slen) : NULL;
    if (stext) {
        json_doc sdoc;
        char serr[256];
        if (json_parse(&sdoc, stext, slen, sj, serr, sizeof serr) == 0) {
            const json_value *m = json_get(&sdoc.root, "max_seq_length");
            if (m && m->number_is_int && m->integer > 0) mml = m->integer;
            json_free(&sdoc);
        }
        free(stext);
    }
    free(mj);
    free(sj);
    CHECK(t->model_max_length == mml, "%s: model_max_length %lld, expected %lld", tag, (long long)t->model_max_length,
          (long long)mml);
    struct { const char *key; const char *got; } toks[] = {
        {"unk_token", t->unk_token}, {"cls_token", t->cls_token}, {"sep_token", t->sep_token},
        {"pad_token", t->pad_token}, {"mask_token", t->mask_token}};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        v = json_get(&doc.root, toks[i].key);
        if (v && v->type == JSON_TYPE_OBJECT) v = json_get(v, "content");
        const char *want = v && v->type == JSON_TYPE_STRING ? v->string : NULL;
        CHECK((!want && !toks[i].got) || (want && toks[i].got && !strcmp(want, toks[i].got)), "%s: %s is '%s', expected '%s'",
              tag, toks[i].key, toks[i].got ? toks[i].got : "(none)", want ? want : "(none)");
    }
    json_free(&doc);
}

/* ---------------------------------------------------- the fixture variants */

static const char *const FIXTURES[] = {"tiny-bert", "tiny-bert-prefixed", "tiny-bert-relu", "tiny-bert-tanh",
                                       "all-MiniLM-L6-v2"};

static const char *g_variant;   /* the case being run by case_fixture */

static void case_fixtures_present(void) {
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        char *p = tbuf_format("%s/hf/%s/model.safetensors", check_build_dir(), FIXTURES[i]);
        CHECK(path_exists(p), "%s missing (run `make fixtures`)", p);
        free(p);
    }
}

static void case_fixture(void) {
    char *dir = tbuf_format("%s/hf/%s", check_build_dir(), g_variant);
    char *tmp = temp_dir_make();
    expect e;
    memset(&e, 0, sizeof e);
    CHECK(tmp != NULL, "cannot make a temp dir");
    if (!tmp || expect_read(&e, dir) != 0) {
        expect_free(&e);
        temp_dir_remove(tmp);
        free(dir);
        return;
    }
    char *out1 = tbuf_format("%s/a.yaml", tmp), *out2 = tbuf_format("%s/b.yaml", tmp);
    diag d;
    diag_init(&d);
    int rc = hf_import_run(dir, out1, &d);
    CHECK(rc == 0, "import of %s failed: %s", dir, d.text);
    if (rc == 0) {
        model m;
        diag_init(&d);
        rc = model_load(&m, out1, &d);
        CHECK(rc == 0, "loading the import of %s failed: %s", dir, d.text);
        if (rc == 0) {
            graph_check(g_variant, &m.graph, &e);
            char *w = tbuf_format("%s/model.safetensors", dir);
            CHECK(same_file(m.graph.weights_path, w), "weights path '%s' is not %s", m.graph.weights_path, w);
            free(w);
            tokenizer_check(g_variant, &m.graph, dir, &e);
            model_free(&m);
        }
        /* Deterministic bytes, and the header comment names the directory. */
        diag_init(&d);
        CHECK(hf_import_run(dir, out2, &d) == 0, "second import failed: %s", d.text);
        size_t n1 = 0, n2 = 0;
        char *t1 = check_read_file(out1, &n1), *t2 = check_read_file(out2, &n2);
        CHECK(t1 && t2 && n1 == n2 && !memcmp(t1, t2, n1), "two imports of %s differ", dir);
        char *head = tbuf_format("# generated by bertc import from %s\n", g_variant);
        CHECK(t1 && starts_with(t1, head), "first line is not '%.*s'", (int)strlen(head) - 1, head);
        free(head);
        free(t1);
        free(t2);
        CHECK(dir_count(tmp) == 2, "the output directory holds %d entries, expected the 2 YAMLs", dir_count(tmp));
    }
    free(out1);
    free(out2);
    expect_free(&e);
    temp_dir_remove(tmp);
    free(dir);
}

/*
 * models/NAME.yaml are committed; a fresh import of build/hf/NAME written
 * into models/ must give the same bytes.  With another build directory
 * (make sanitize uses build-san) the weights/vocab paths differ in that one
 * component; those lines are then compared by the file they lead to.
 */
static void models_compare(const char *name) {
    char *committed = tbuf_format("models/%s.yaml", name);
    char *fresh = tbuf_format("models/.test-import-%d-%s.yaml", (int)getpid(), name);
    char *dir = tbuf_format("%s/hf/%s", check_build_dir(), name);
    size_t nc = 0, nf = 0;
    char *tc = check_read_file(committed, &nc);
    CHECK(tc != NULL, "cannot read %s (run the tests from the repository root)", committed);
    diag d;
    diag_init(&d);
    int rc = tc ? hf_import_run(dir, fresh, &d) : -1;
    if (tc) CHECK(rc == 0, "import of %s failed: %s", dir, d.text);
    char *tf = rc == 0 ? check_read_file(fresh, &nf) : NULL;
    if (rc == 0) CHECK(tf != NULL, "cannot read back %s", fresh);
    if (tc && tf) {
        if (!strcmp(check_build_dir(), "build")) {
            CHECK(nc == nf && !memcmp(tc, tf, nc), "%s differs from a fresh import of %s (re-run `bertc import %s -o %s`)",
                  committed, dir, dir, committed);
        } else {
            /* Line by line; path lines must lead to the same files. */
            char *sc = NULL, *sf = NULL;
            char *lc = strtok_r(tc, "\n", &sc), *lf = strtok_r(tf, "\n", &sf);
            int line = 1;
            for (; lc && lf; lc = strtok_r(NULL, "\n", &sc), lf = strtok_r(NULL, "\n", &sf), line++) {
                const char *keys[] = {"weights: ", "  vocab: ", "  json: "};
                const char *files[] = {"model.safetensors", "vocab.txt", "tokenizer.json"};
                int path_line = 0;
                for (int k = 0; k < 3; k++) {
                    if (starts_with(lc, keys[k]) && starts_with(lf, keys[k])) {
                        path_line = 1;
                        const char *file = files[k];
                        char *want = tbuf_format("../build/hf/%s/%s", name, file);
                        char *got = tbuf_format("models/%s", lf + strlen(keys[k]));
                        char *real = tbuf_format("%s/%s", dir, file);
                        CHECK(!strcmp(lc + strlen(keys[k]), want), "%s:%d: expected '%s'", committed, line, want);
                        CHECK(same_file(got, real), "%s:%d: fresh path '%s' does not lead to %s", committed, line,
                              got, real);
                        free(want);
                        free(got);
                        free(real);
                    }
                }
                if (!path_line) CHECK(!strcmp(lc, lf), "%s:%d: '%s' but a fresh import has '%s'", committed, line, lc, lf);
            }
            CHECK(!lc && !lf, "%s and a fresh import differ in length", committed);
        }
    }
    remove(fresh);
    free(tc);
    free(tf);
    free(committed);
    free(fresh);
    free(dir);
}

static void case_models_tiny_bert(void) { models_compare("tiny-bert"); }
static void case_models_minilm(void) { models_compare("all-MiniLM-L6-v2"); }

/* ------------------------------------------------ hand-built checkpoints */

typedef struct fx_tensor {
    char name[128];
    const char *dtype;
    int ndim;
    int64_t shape[2];
} fx_tensor;

typedef struct fx_model {
    char *config;              /* config.json text; NULL: no file */
    const char *tok_config;    /* tokenizer_config.json text; NULL: no file */
    const char *modules;       /* modules.json text (sentence-transformers); NULL: no file */
    const char *pool_dir;      /* a directory to make (e.g. "1_Pooling"); NULL: none */
    const char *pool_config;   /* POOL_DIR/config.json text; NULL: no file */
    const char *st_config;     /* sentence_bert_config.json text; NULL: no file */
    int vocab_txt;
    int nt;
    fx_tensor t[64];
} fx_model;

/* hidden 8, heads 2 (head_dim 4), 1 layer, intermediate 12, vocab 10, positions 6, 2 token types. */
static const char *FX_CONFIG =
    "{\n"
    "  \"architectures\": [\"BertModel\"],\n"
    "  \"hidden_act\": \"gelu\",\n"
    "  \"hidden_size\": 8,\n"
    "  \"intermediate_size\": 12,\n"
    "  \"layer_norm_eps\": 1e-12,\n"
    "  \"max_position_embeddings\": 6,\n"
    "  \"model_type\": \"bert\",\n"
    "  \"num_attention_heads\": 2,\n"
    "  \"num_hidden_layers\": 1,\n"
    "  \"type_vocab_size\": 2,\n"
    "  \"vocab_size\": 10\n"
    "}\n";

static void fx_add(fx_model *m, const char *dtype, int ndim, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void fx_add(fx_model *m, const char *dtype, int ndim, int64_t d0, int64_t d1, const char *fmt, ...) {
    if (m->nt >= 64) abort();
    fx_tensor *t = &m->t[m->nt++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->dtype = dtype;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
}

static void fx_init(fx_model *m, const char *prefix, int legacy, int pooler, const char *dtype) {
    memset(m, 0, sizeof *m);
    m->config = tbuf_format("%s", FX_CONFIG);
    const char *p = prefix, *g = legacy ? "gamma" : "weight", *b = legacy ? "beta" : "bias";
    fx_add(m, dtype, 2, 10, 8, "%sembeddings.word_embeddings.weight", p);
    fx_add(m, dtype, 2, 6, 8, "%sembeddings.position_embeddings.weight", p);
    fx_add(m, dtype, 2, 2, 8, "%sembeddings.token_type_embeddings.weight", p);
    fx_add(m, dtype, 1, 8, 0, "%sembeddings.LayerNorm.%s", p, g);
    fx_add(m, dtype, 1, 8, 0, "%sembeddings.LayerNorm.%s", p, b);
    const char *l0 = "encoder.layer.0.";
    static const char *const dense[4] = {"self.query", "self.key", "self.value", "output.dense"};
    for (int k = 0; k < 4; k++) {
        fx_add(m, dtype, 2, 8, 8, "%s%sattention.%s.weight", p, l0, dense[k]);
        fx_add(m, dtype, 1, 8, 0, "%s%sattention.%s.bias", p, l0, dense[k]);
    }
    fx_add(m, dtype, 1, 8, 0, "%s%sattention.output.LayerNorm.%s", p, l0, g);
    fx_add(m, dtype, 1, 8, 0, "%s%sattention.output.LayerNorm.%s", p, l0, b);
    fx_add(m, dtype, 2, 12, 8, "%s%sintermediate.dense.weight", p, l0);
    fx_add(m, dtype, 1, 12, 0, "%s%sintermediate.dense.bias", p, l0);
    fx_add(m, dtype, 2, 8, 12, "%s%soutput.dense.weight", p, l0);
    fx_add(m, dtype, 1, 8, 0, "%s%soutput.dense.bias", p, l0);
    fx_add(m, dtype, 1, 8, 0, "%s%soutput.LayerNorm.%s", p, l0, g);
    fx_add(m, dtype, 1, 8, 0, "%s%soutput.LayerNorm.%s", p, l0, b);
    if (pooler) {
        fx_add(m, dtype, 2, 8, 8, "%spooler.dense.weight", p);
        fx_add(m, dtype, 1, 8, 0, "%spooler.dense.bias", p);
    }
}

static void fx_free(fx_model *m) { free(m->config); }

static fx_tensor *fx_find(fx_model *m, const char *name) {
    for (int i = 0; i < m->nt; i++)
        if (!strcmp(m->t[i].name, name)) return &m->t[i];
    return NULL;
}

static void fx_remove(fx_model *m, const char *name) {
    fx_tensor *t = fx_find(m, name);
    CHECK(t != NULL, "fixture has no tensor %s", name);
    if (!t) return;
    int i = (int)(t - m->t);
    memmove(&m->t[i], &m->t[i + 1], (size_t)(m->nt - i - 1) * sizeof m->t[0]);
    m->nt--;
}

/* Replace the first `old` in the config text by `repl`. */
static void fx_config_edit(fx_model *m, const char *old, const char *repl) {
    char *s = tbuf_replace(m->config, old, repl);
    CHECK(s != NULL, "config has no '%s'", old);
    if (!s) return;
    free(m->config);
    m->config = s;
}

/* The checkpoint's safetensors image (support/stimage.c): the tensors in
 * order, holding small random bytes, after a "__metadata__" entry. */
static unsigned char *fx_safetensors(const fx_model *m, size_t *len) {
    stimage s;
    stimage_init(&s);
    s.metadata = "{\"format\":\"pt\"}";
    for (int i = 0; i < m->nt; i++) {
        const fx_tensor *t = &m->t[i];
        st_dtype dt = stimage_dtype(t->dtype);
        CHECK(dt != ST_DTYPE_COUNT, "fixture dtype %s", t->dtype);
        stimage_add(&s, t->name, dt == ST_DTYPE_COUNT ? ST_DTYPE_U8 : dt, t->ndim, t->shape);
    }
    stimage_fill_random(&s, 0x3f);
    unsigned char *img = stimage_build(&s, len, NULL);
    stimage_free(&s);
    return img;
}

/* Write the checkpoint into a fresh directory DIR/NAME; returns its path. */
/* DIR/REL holding len bytes of data (a CHECK failure if it cannot be written). */
static void fx_put(const char *dir, const char *rel, const void *data, size_t len) {
    char *p = tbuf_format("%s/%s", dir, rel);
    CHECK(write_file(p, data, len) == 0, "cannot write %s", p);
    free(p);
}

/* DIR/REL holding text, unless text is NULL. */
static void fx_put_text(const char *dir, const char *rel, const char *text) {
    if (text) fx_put(dir, rel, text, strlen(text));
}

static char *fx_write(const fx_model *m, const char *parent, const char *name) {
    char *dir = tbuf_format("%s/%s", parent, name);
    CHECK(mkdir(dir, 0777) == 0, "cannot make %s", dir);
    fx_put_text(dir, "config.json", m->config);
    fx_put_text(dir, "tokenizer_config.json", m->tok_config);
    fx_put_text(dir, "modules.json", m->modules);
    fx_put_text(dir, "sentence_bert_config.json", m->st_config);
    if (m->pool_dir) {
        char *p = tbuf_format("%s/%s", dir, m->pool_dir);
        CHECK(mkdir(p, 0777) == 0, "cannot make %s", p);
        fx_put_text(p, "config.json", m->pool_config);
        free(p);
    }
    if (m->vocab_txt) fx_put_text(dir, "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\nc\nd\ne\n");
    size_t len;
    unsigned char *img = fx_safetensors(m, &len);
    fx_put(dir, "model.safetensors", img, len);
    free(img);
    return dir;
}

/* One import of a hand-built checkpoint: TMP/hf to TMP/out/model.yaml. */
typedef struct fx_import {
    char *tmp, *dir, *outdir, *out;
    diag d;
    int rc;                    /* hf_import_run's result */
} fx_import;

/* Writes the checkpoint and imports it: 0, or -1 (CHECKed) without a temp dir. */
static int fx_import_begin(fx_import *f, const fx_model *fx) {
    memset(f, 0, sizeof *f);
    f->tmp = temp_dir_make();
    CHECK(f->tmp != NULL, "cannot make a temp dir");
    if (!f->tmp) return -1;
    f->dir = fx_write(fx, f->tmp, "hf");
    f->outdir = tbuf_format("%s/out", f->tmp);
    mkdir(f->outdir, 0777);
    f->out = tbuf_format("%s/model.yaml", f->outdir);
    diag_init(&f->d);
    f->rc = hf_import_run(f->dir, f->out, &f->d);
    return 0;
}

static void fx_import_end(fx_import *f) {
    free(f->dir);
    free(f->outdir);
    free(f->out);
    temp_dir_remove(f->tmp);
}

/*
 * Import a hand-built checkpoint into TMP/out/model.yaml and load it.
 * Returns the YAML text (caller frees) or NULL; *loaded tells whether
 * `m_out` holds a loaded model.
 */
static char *fx_import_load(const fx_model *fx, model *m_out, int *loaded) {
    *loaded = 0;
    fx_import f;
    if (fx_import_begin(&f, fx)) return NULL;
    char *text = NULL;
    CHECK(f.rc == 0, "import failed: %s", f.d.text);
    if (f.rc == 0) {
        text = check_read_file(f.out, NULL);
        CHECK(text != NULL, "cannot read %s", f.out);
        CHECK(text && has_line(text, "weights: ../hf/model.safetensors"), "weights path is not ../hf/model.safetensors");
        diag_init(&f.d);
        int rc = model_load(m_out, f.out, &f.d);
        CHECK(rc == 0, "the imported YAML does not load: %s", f.d.text);
        *loaded = rc == 0;
    }
    fx_import_end(&f);
    return text;
}

/* The import must fail, say every needle, and leave the output dir empty. */
static void fx_expect_error(const fx_model *fx, const char *const *needles) {
    fx_import f;
    if (fx_import_begin(&f, fx)) return;
    CHECK(f.rc != 0, "import succeeded, expected an error");
    CHECK(f.d.code == DIAG_CODE_INPUT, "diag code %d, expected DIAG_CODE_INPUT", (int)f.d.code);
    for (const char *const *n = needles; *n; n++) CHECK(strstr(f.d.text, *n), "message lacks '%s': %s", *n, f.d.text);
    CHECK(!path_exists(f.out), "%s exists after a failed import", f.out);
    CHECK(dir_count(f.outdir) == 0, "the output directory is not empty after a failed import");
    fx_import_end(&f);
}

/* ------------------------------------------------------------ good inputs */

static void case_handbuilt_ok(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    if (loaded) {
        int nscale = 0, nact = 0;
        for (int i = 0; i < m.graph.count; i++) {
            const ir_node *n = &m.graph.nodes[i];
            if (n->op == IR_OP_SCALE) {
                nscale++;
                CHECK(n->scale == 0.5f, "scale %.9g, expected 0.5 (1/sqrt(4))", (double)n->scale);
            }
            if (n->op == IR_OP_LAYER_NORM) CHECK(n->eps == 1e-12f, "eps %.9g", (double)n->eps);
            if (n->op == IR_OP_ACTIVATION && n->act != IR_ACT_TANH) {
                nact++;
                CHECK(n->act == IR_ACT_GELU_ERF, "activation %s", ir_act_name(n->act));
            }
        }
        CHECK(nscale == 1 && nact == 1, "%d scales, %d activations", nscale, nact);
        CHECK(graph_output(&m.graph, "pooler_output") != NULL, "no pooler_output");
        CHECK(graph_output(&m.graph, "sentence_embedding") == NULL, "sentence_embedding without modules.json");
        CHECK(!m.graph.has_tokenizer, "tokenizer section without vocab.txt");
        CHECK(m.graph.max_seq_len == 6, "max_seq_len %lld", (long long)m.graph.max_seq_len);
        model_free(&m);
    }
    CHECK(text && has_line(text, "dims: {H: 8, NH: 2, HD: 4}"), "dims line missing");
    CHECK(text && !strstr(text, "tokenizer:"), "tokenizer section without vocab.txt");
    free(text);
    fx_free(&fx);
}

/* Paths relative to the YAML's own directory, however deep. */
static void case_relative_paths(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 0, "F32");
    fx.vocab_txt = 1;
    char *tmp = temp_dir_make();
    CHECK(tmp != NULL, "cannot make a temp dir");
    if (!tmp) {
        fx_free(&fx);
        return;
    }
    char *parent = tbuf_format("%s/models", tmp);
    mkdir(parent, 0777);
    char *dir = fx_write(&fx, parent, "ckpt");
    char *a = tbuf_format("%s/x", tmp), *b = tbuf_format("%s/x/y", tmp);
    mkdir(a, 0777);
    mkdir(b, 0777);
    struct { char *out; const char *weights; const char *vocab; } cases[] = {
        {tbuf_format("%s/x/y/m.yaml", tmp), "weights: ../../models/ckpt/model.safetensors",
         "  vocab: ../../models/ckpt/vocab.txt"},
        {tbuf_format("%s/models/m.yaml", tmp), "weights: ckpt/model.safetensors", "  vocab: ckpt/vocab.txt"},
        {tbuf_format("%s/models/ckpt/m.yaml", tmp), "weights: model.safetensors", "  vocab: vocab.txt"},
        /* A trailing slash and a "." component in HF_DIR change nothing. */
        {tbuf_format("%s/x/m.yaml", tmp), "weights: ../models/ckpt/model.safetensors", "  vocab: ../models/ckpt/vocab.txt"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *hf = i == 3 ? tbuf_format("%s/./ckpt/", parent) : tbuf_format("%s", dir);
        diag d;
        diag_init(&d);
        int rc = hf_import_run(hf, cases[i].out, &d);
        CHECK(rc == 0, "import to %s failed: %s", cases[i].out, d.text);
        char *text = rc == 0 ? check_read_file(cases[i].out, NULL) : NULL;
        CHECK(text && has_line(text, cases[i].weights), "%s lacks '%s'", cases[i].out, cases[i].weights);
        CHECK(text && has_line(text, cases[i].vocab), "%s lacks '%s'", cases[i].out, cases[i].vocab);
        CHECK(text && strstr(text, "# generated by bertc import from ckpt\nbertc: 1\nname: ckpt\n"),
              "%s: header does not name 'ckpt'", cases[i].out);
        if (rc == 0) {
            model m;
            diag_init(&d);
            rc = model_load(&m, cases[i].out, &d);
            CHECK(rc == 0, "%s does not load: %s", cases[i].out, d.text);
            if (rc == 0) model_free(&m);
        }
        free(text);
        free(hf);
        free(cases[i].out);
    }
    free(a);
    free(b);
    free(dir);
    free(parent);
    temp_dir_remove(tmp);
    fx_free(&fx);
}

static void case_tokenizer_config(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 0, "F32");
    fx.vocab_txt = 1;
    fx.tok_config =
        "{\"tokenizer_class\": \"BertTokenizerFast\", \"do_lower_case\": false, \"strip_accents\": null,\n"
        " \"model_max_length\": 1000000000000000019884624838656,\n"
        " \"unk_token\": {\"__type\": \"AddedToken\", \"content\": \"[UNK]\", \"lstrip\": false},\n"
        " \"sep_token\": \"[SEP]\", \"mask_token\": \"<m\\\"a\\\\sk>\", \"pad_token\": null}\n";
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    if (loaded) {
        const ir_tokenizer *t = &m.graph.tokenizer;
        CHECK(m.graph.has_tokenizer, "no tokenizer section");
        CHECK(t->do_lower_case == 0, "do_lower_case %d", t->do_lower_case);
        CHECK(t->strip_accents == -1, "strip_accents %d", t->strip_accents);
        CHECK(t->tokenize_chinese_chars == -1, "tokenize_chinese_chars %d", t->tokenize_chinese_chars);
        CHECK(t->model_max_length == 0, "model_max_length %lld (1e30 means unlimited)", (long long)t->model_max_length);
        CHECK(t->unk_token && !strcmp(t->unk_token, "[UNK]"), "unk_token '%s'", t->unk_token ? t->unk_token : "");
        CHECK(t->sep_token && !strcmp(t->sep_token, "[SEP]"), "sep_token");
        CHECK(t->mask_token && !strcmp(t->mask_token, "<m\"a\\sk>"), "mask_token '%s'",
              t->mask_token ? t->mask_token : "");
        CHECK(!t->cls_token && !t->pad_token, "cls/pad tokens invented");
        model_free(&m);
    }
    CHECK(text && has_line(text, "  strip_accents: null"), "no 'strip_accents: null' line");
    CHECK(text && !strstr(text, "model_max_length"), "model_max_length emitted for 1e30");
    CHECK(text && !strstr(text, "tokenize_chinese_chars"), "tokenize_chinese_chars emitted though absent");
    free(text);

    /* A plain integer model_max_length is kept. */
    fx.tok_config = "{\"model_max_length\": 512, \"do_lower_case\": true, \"tokenize_chinese_chars\": false}";
    text = fx_import_load(&fx, &m, &loaded);
    if (loaded) {
        CHECK(m.graph.tokenizer.model_max_length == 512, "model_max_length %lld",
              (long long)m.graph.tokenizer.model_max_length);
        CHECK(m.graph.tokenizer.do_lower_case == 1 && m.graph.tokenizer.tokenize_chinese_chars == 0, "flags");
        CHECK(m.graph.tokenizer.strip_accents == -1, "strip_accents %d", m.graph.tokenizer.strip_accents);
        model_free(&m);
    }
    CHECK(text && !strstr(text, "strip_accents"), "strip_accents emitted though absent");
    free(text);
    fx_free(&fx);
}

/* bert. prefix, gamma/beta, half precision, extra tensors, partial pooler. */
static void case_prefixed_legacy(void) {
    fx_model fx;
    fx_init(&fx, "bert.", 1, 0, "F16");
    fx_add(&fx, "F32", 2, 10, 8, "cls.predictions.decoder.weight");
    fx_add(&fx, "I64", 2, 1, 6, "bert.embeddings.position_ids");
    fx_add(&fx, "F16", 2, 8, 8, "bert.pooler.dense.weight");   /* no bias: no pooler */
    fx_find(&fx, "bert.encoder.layer.0.output.dense.bias")->dtype = "BF16";
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    if (loaded) {
        int gamma = 0, w16 = 0, wbf = 0, nw = 0;
        for (int i = 0; i < m.graph.count; i++) {
            const ir_node *n = &m.graph.nodes[i];
            if (n->op != IR_OP_WEIGHT) continue;
            nw++;
            CHECK(starts_with(n->weight, "bert."), "weight '%s' without prefix", n->weight);
            CHECK(!strstr(n->weight, "pooler") && !strstr(n->weight, "cls."), "weight '%s' used", n->weight);
            if (ends_with(n->weight, ".gamma")) gamma++;
            if (n->dtype == IR_DTYPE_F16) w16++;
            if (n->dtype == IR_DTYPE_BF16) wbf++;
        }
        CHECK(nw == 21, "%d weight nodes, expected 21", nw);
        CHECK(gamma == 3, "%d gamma weights, expected 3", gamma);
        CHECK(w16 == 20 && wbf == 1, "%d F16 and %d BF16 weights, expected 20 and 1", w16, wbf);
        CHECK(!graph_output(&m.graph, "pooler_output"), "pooler_output without pooler bias");
        model_free(&m);
    }
    free(text);
    fx_free(&fx);
}

/* Which hidden_act spellings map to which activation. */
static void case_activations(void) {
    struct { const char *line; ir_act act; } cases[] = {
        {"  \"hidden_act\": \"gelu_new\",\n", IR_ACT_GELU_TANH},
        {"  \"hidden_act\": \"gelu_pytorch_tanh\",\n", IR_ACT_GELU_TANH},
        {"  \"hidden_act\": \"gelu_fast\",\n", IR_ACT_GELU_TANH},
        {"  \"hidden_act\": \"gelu_python\",\n", IR_ACT_GELU_ERF},
        {"  \"hidden_act\": \"relu\",\n", IR_ACT_RELU},
        {"", IR_ACT_GELU_ERF},   /* absent: transformers' default "gelu" */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_model fx;
        fx_init(&fx, "", 0, 0, "F32");
        fx_config_edit(&fx, "  \"hidden_act\": \"gelu\",\n", cases[i].line);
        /* Defaults for the other optional fields too. */
        if (!*cases[i].line) {
            fx_config_edit(&fx, "  \"layer_norm_eps\": 1e-12,\n", "");
            fx_config_edit(&fx, "  \"type_vocab_size\": 2,\n", "");
        }
        model m;
        int loaded;
        char *text = fx_import_load(&fx, &m, &loaded);
        if (loaded) {
            int seen = 0;
            for (int k = 0; k < m.graph.count; k++) {
                const ir_node *n = &m.graph.nodes[k];
                if (n->op == IR_OP_ACTIVATION) {
                    seen++;
                    CHECK(n->act == cases[i].act, "case %zu: activation %s, expected %s", i, ir_act_name(n->act),
                          ir_act_name(cases[i].act));
                }
                if (n->op == IR_OP_LAYER_NORM) CHECK(n->eps == 1e-12f, "case %zu: eps %.9g", i, (double)n->eps);
            }
            CHECK(seen == 1, "case %zu: %d activations", i, seen);
            model_free(&m);
        }
        free(text);
        fx_free(&fx);
    }
}

/* Floats in their shortest exact form: eps 1e-5 and a 1/sqrt(20) scale. */
static void case_numbers(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 0, "F32");
    fx_config_edit(&fx, "\"num_attention_heads\": 2", "\"num_attention_heads\": 1");   /* head_dim 8 */
    fx_config_edit(&fx, "1e-12", "1e-05");
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    if (loaded) {
        for (int k = 0; k < m.graph.count; k++) {
            const ir_node *n = &m.graph.nodes[k];
            if (n->op == IR_OP_LAYER_NORM) CHECK(n->eps == 1e-5f, "eps %.9g", (double)n->eps);
            if (n->op == IR_OP_SCALE)
                CHECK(n->scale == (float)(1.0 / sqrt(8.0)), "scale %.9g, expected %.9g", (double)n->scale,
                      1.0 / sqrt(8.0));
        }
        model_free(&m);
    }
    CHECK(text && strstr(text, "eps: 1e-05}"), "eps not written as 1e-05");
    CHECK(text && has_line(text, "dims: {H: 8, NH: 1, HD: 8}"), "dims line");
    free(text);
    fx_free(&fx);
}

/* ------------------------------------------------------------ bad inputs */

static void expect_config_error(const char *old, const char *repl, const char *const *needles) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_config_edit(&fx, old, repl);
    fx_expect_error(&fx, needles);
    fx_free(&fx);
}

static void case_error_model_type(void) {
    expect_config_error("\"model_type\": \"bert\"", "\"model_type\": \"gpt2\"",
                        (const char *const[]){"config.json", "model_type", "gpt2", NULL});
    /* a family bertc knows, but the checkpoint's classes are another's */
    expect_config_error("\"model_type\": \"bert\"", "\"model_type\": \"roberta\"",
                        (const char *const[]){"config.json", "architecture", "BertModel", "RobertaModel", NULL});
}

static void case_error_hidden_act(void) {
    expect_config_error("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"swish\"",
                        (const char *const[]){"config.json", "hidden_act", "swish", NULL});
    expect_config_error("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"quick_gelu\"",
                        (const char *const[]){"hidden_act", "quick_gelu", NULL});
}

static void case_error_heads(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_config_edit(&fx, "\"hidden_size\": 8", "\"hidden_size\": 96");
    fx_config_edit(&fx, "\"num_attention_heads\": 2", "\"num_attention_heads\": 5");
    fx_expect_error(&fx, (const char *const[]){"config.json", "hidden_size 96", "num_attention_heads 5", NULL});
    fx_free(&fx);
}

static void case_error_missing_field(void) {
    expect_config_error("  \"num_hidden_layers\": 1,\n", "",
                        (const char *const[]){"config.json", "num_hidden_layers", "missing", NULL});
    expect_config_error("  \"model_type\": \"bert\",\n", "", (const char *const[]){"model_type", NULL});
}

static void case_error_position_embedding(void) {
    expect_config_error("  \"model_type\"", "  \"position_embedding_type\": \"relative_key\",\n  \"model_type\"",
                        (const char *const[]){"config.json", "position_embedding_type", "relative_key", NULL});
}

static void case_error_other_fields(void) {
    expect_config_error("  \"model_type\"", "  \"is_decoder\": true,\n  \"model_type\"",
                        (const char *const[]){"is_decoder", "true", NULL});
    expect_config_error("  \"model_type\"", "  \"add_cross_attention\": true,\n  \"model_type\"",
                        (const char *const[]){"add_cross_attention", "true", NULL});
    expect_config_error("  \"model_type\"", "  \"chunk_size_feed_forward\": 64,\n  \"model_type\"",
                        (const char *const[]){"chunk_size_feed_forward", "64", NULL});
    expect_config_error("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": -1e-12",
                        (const char *const[]){"layer_norm_eps", "-1e-12", NULL});
    expect_config_error("\"vocab_size\": 10", "\"vocab_size\": 0", (const char *const[]){"vocab_size", "0", NULL});
    expect_config_error("\"intermediate_size\": 12", "\"intermediate_size\": \"twelve\"",
                        (const char *const[]){"intermediate_size", "twelve", NULL});
    expect_config_error("\"num_hidden_layers\": 1", "\"num_hidden_layers\": 1.5",
                        (const char *const[]){"num_hidden_layers", "1.5", NULL});
    expect_config_error("{", "{ \"broken\": ,", (const char *const[]){"config.json", NULL});
}

static void case_error_missing_tensor(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_remove(&fx, "encoder.layer.0.attention.self.key.bias");
    fx_expect_error(&fx, (const char *const[]){"model.safetensors", "encoder.layer.0.attention.self.key.bias", "[8]",
                                               NULL});
    fx_free(&fx);
    /* No word embeddings under either spelling: not a BERT checkpoint. */
    fx_init(&fx, "", 0, 1, "F32");
    fx_remove(&fx, "embeddings.word_embeddings.weight");
    fx_expect_error(&fx, (const char *const[]){"embeddings.word_embeddings.weight", NULL});
    fx_free(&fx);
    /* Legacy names are all or nothing per checkpoint. */
    fx_init(&fx, "bert.", 1, 0, "F32");
    snprintf(fx_find(&fx, "bert.encoder.layer.0.output.LayerNorm.gamma")->name, sizeof fx.t[0].name,
             "bert.encoder.layer.0.output.LayerNorm.weight");
    fx_expect_error(&fx, (const char *const[]){"bert.encoder.layer.0.output.LayerNorm.gamma", NULL});
    fx_free(&fx);
}

static void case_error_tensor_shape(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_find(&fx, "encoder.layer.0.intermediate.dense.weight")->shape[1] = 7;
    fx_expect_error(&fx, (const char *const[]){"encoder.layer.0.intermediate.dense.weight", "[12, 7]", "[12, 8]", NULL});
    fx_free(&fx);
    /* The config decides the shapes: a 7-row position table for 6 positions. */
    fx_init(&fx, "", 0, 1, "F32");
    fx_find(&fx, "embeddings.position_embeddings.weight")->shape[0] = 7;
    fx_expect_error(&fx, (const char *const[]){"embeddings.position_embeddings.weight", "[7, 8]", "[6, 8]", NULL});
    fx_free(&fx);
    /* A pooler is optional, but a present one must fit. */
    fx_init(&fx, "", 0, 1, "F32");
    fx_find(&fx, "pooler.dense.bias")->shape[0] = 9;
    fx_expect_error(&fx, (const char *const[]){"pooler.dense.bias", "[9]", "[8]", NULL});
    fx_free(&fx);
}

static void case_error_tensor_dtype(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_find(&fx, "embeddings.word_embeddings.weight")->dtype = "I64";
    fx_expect_error(&fx, (const char *const[]){"embeddings.word_embeddings.weight", "I64", NULL});
    fx_free(&fx);
}

static void case_error_missing_files(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    free(fx.config);
    fx.config = NULL;
    fx_expect_error(&fx, (const char *const[]){"config.json", NULL});
    fx_free(&fx);

    /* A directory that does not exist. */
    char *tmp = temp_dir_make();
    CHECK(tmp != NULL, "cannot make a temp dir");
    if (!tmp) return;
    char *missing = tbuf_format("%s/no-such-model", tmp);
    char *out = tbuf_format("%s/m.yaml", tmp);
    diag d;
    diag_init(&d);
    CHECK(hf_import_run(missing, out, &d) != 0, "import of a missing directory succeeded");
    CHECK(strstr(d.text, missing) != NULL, "message lacks the directory: %s", d.text);
    CHECK(!path_exists(out), "%s exists after a failed import", out);
    /* An output directory that does not exist. */
    fx_init(&fx, "", 0, 1, "F32");
    char *dir = fx_write(&fx, tmp, "hf");
    char *bad_out = tbuf_format("%s/no-such-dir/m.yaml", tmp);
    diag_init(&d);
    CHECK(hf_import_run(dir, bad_out, &d) != 0, "import into a missing directory succeeded");
    CHECK(strstr(d.text, "no-such-dir") != NULL, "message lacks the directory: %s", d.text);
    CHECK(dir_count(tmp) == 1, "failed imports left files in %s", tmp);
    fx_free(&fx);
    free(dir);
    free(bad_out);
    free(missing);
    free(out);
    temp_dir_remove(tmp);
}

static void case_error_tokenizer_class(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx.vocab_txt = 1;
    fx.tok_config = "{\"do_lower_case\": true,\n \"tokenizer_class\": \"RobertaTokenizer\"}";
    fx_expect_error(&fx, (const char *const[]){"tokenizer_config.json", "tokenizer_class", "RobertaTokenizer", NULL});
    fx.tok_config = "{\"do_lower_case\": \"yes\"}";
    fx_expect_error(&fx, (const char *const[]){"tokenizer_config.json", "do_lower_case", "yes", NULL});
    fx.tok_config = "{\"unk_token\": 7}";
    fx_expect_error(&fx, (const char *const[]){"unk_token", "7", NULL});
    fx_free(&fx);
}

/* ------------------------------------------------ sentence-transformers */

/* modules.json as sentence-transformers writes it for MiniLM. */
#define ST_MODULES_3                                                                                       \
    "[\n  {\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n" \
    "  {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},\n" \
    "  {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}\n]\n"
#define ST_MODULES_2                                                                                       \
    "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n" \
    " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]\n"

static char *st_pool_config(int cls, int mean, int max, int weighted) {
    return tbuf_format("{\n  \"word_embedding_dimension\": 8,\n  \"pooling_mode_cls_token\": %s,\n"
                     "  \"pooling_mode_mean_tokens\": %s,\n  \"pooling_mode_max_tokens\": %s,\n"
                     "  \"pooling_mode_mean_sqrt_len_tokens\": false,\n  \"pooling_mode_weightedmean_tokens\": %s,\n"
                     "  \"pooling_mode_lasttoken\": false,\n  \"include_prompt\": true\n}\n",
                     cls ? "true" : "false", mean ? "true" : "false", max ? "true" : "false",
                     weighted ? "true" : "false");
}

/* mean + Normalize: the YAML lines, the graph, and the reference executor's
 * sentence_embedding against mean pooling + L2 of its last_hidden_state. */
static void case_st_mean_normalize(void) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    char *pc = st_pool_config(0, 1, 0, 0);
    fx.modules = ST_MODULES_3;
    fx.pool_dir = "1_Pooling";
    fx.pool_config = pc;
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    CHECK(text && has_line(text, "  sentence_embedding: sentence_embedding") &&
              has_line(text, "  - {op: pool, out: sentence_pool, x: h1, mask: attention_mask, mode: mean}") &&
              has_line(text, "  - {op: l2_normalize, out: sentence_embedding, x: sentence_pool}"),
          "sentence-transformers lines missing:\n%s", text ? text : "");
    if (loaded) {
        const ir_node *se = graph_output(&m.graph, "sentence_embedding");
        CHECK(se && se->op == IR_OP_L2_NORMALIZE && se->ndim == 1 && se->shape[0] == 8, "sentence_embedding node");
        const ir_node *pool = se ? &m.graph.nodes[se->src[0]] : NULL;
        CHECK(pool && pool->op == IR_OP_POOL && pool->pool_mode == IR_POOL_MEAN && pool->nsrc == 2 &&
                  !strcmp(m.graph.nodes[pool->src[1]].name, "attention_mask"),
              "mean pool over the attention mask");
        int32_t ids[5] = {2, 5, 6, 7, 3}, mask[5] = {1, 1, 0, 1, 0};
        ref_request req = {.len = 5, .input_ids = ids, .attention_mask = mask};
        ref_result res;
        diag d;
        diag_init(&d);
        int rc = ref_run(&m.graph, &m.weights, &req, &res, &d);
        CHECK(rc == 0, "ref_run: %s", d.text);
        if (!rc) {
            const ref_tensor *h = ref_result_find(&res, "last_hidden_state");
            const ref_tensor *e = ref_result_find(&res, "sentence_embedding");
            CHECK(h && e && e->ndim == 1 && e->shape[0] == 8, "outputs");
            if (h && e) {
                double want[8] = {0}, ss = 0;
                for (int s = 0; s < 5; s++)
                    for (int k = 0; k < 8 && mask[s]; k++) want[k] += h->data[s * 8 + k];
                for (int k = 0; k < 8; k++) {
                    want[k] /= 3.0;
                    ss += want[k] * want[k];
                }
                for (int k = 0; k < 8; k++)
                    CHECK(fabs(e->data[k] - want[k] / sqrt(ss)) < 1e-6, "sentence_embedding[%d] %.9g, want %.9g", k,
                          (double)e->data[k], want[k] / sqrt(ss));
            }
            ref_result_free(&res);
        }
        model_free(&m);
    }
    free(text);
    free(pc);
    fx_free(&fx);
}

/* cls without Normalize: the pool is the output, no mask. */
static void case_st_cls(void) {
    fx_model fx;
    fx_init(&fx, "bert.", 0, 0, "F16");
    char *pc = st_pool_config(1, 0, 0, 0);
    fx.modules = ST_MODULES_2;
    fx.pool_dir = "1_Pooling";
    fx.pool_config = pc;
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    CHECK(text && has_line(text, "  - {op: pool, out: sentence_embedding, x: h1, mode: cls}") &&
              !strstr(text, "l2_normalize"),
          "cls lines:\n%s", text ? text : "");
    if (loaded) {
        const ir_node *se = graph_output(&m.graph, "sentence_embedding");
        CHECK(se && se->op == IR_OP_POOL && se->pool_mode == IR_POOL_CLS && se->nsrc == 1, "cls pool output");
        model_free(&m);
    }
    free(text);
    free(pc);
    fx_free(&fx);
}

static void st_expect(const char *modules, const char *pool_config, const char *const *needles) {
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx.modules = modules;
    fx.pool_dir = "1_Pooling";
    fx.pool_config = pool_config;
    fx_expect_error(&fx, needles);
    fx_free(&fx);
}

/* sentence_bert_config.json's max_seq_length is where sentence-transformers
 * truncates: it becomes the tokenizer's model_max_length. */
static void case_st_max_seq_length(void) {
    char *mean = st_pool_config(0, 1, 0, 0);
    int len = (int)check_rng_range(2, 500);
    char cfg[128];
    snprintf(cfg, sizeof cfg, "{\"max_seq_length\": %d, \"do_lower_case\": false}", len);
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx.vocab_txt = 1;
    fx.tok_config = "{\"model_max_length\": 512}";
    fx.modules = ST_MODULES_3;
    fx.pool_dir = "1_Pooling";
    fx.pool_config = mean;
    fx.st_config = cfg;
    model m;
    int loaded;
    char *text = fx_import_load(&fx, &m, &loaded);
    char want[64];
    snprintf(want, sizeof want, "  model_max_length: %d", len);
    CHECK(text && has_line(text, want), "expected '%s' in:\n%s", want, text ? text : "");
    if (loaded) model_free(&m);
    free(text);
    fx_free(&fx);
    static const struct {
        const char *cfg, *needle;
    } bad[] = {{"{\"max_seq_length\": \"long\"}", "max_seq_length must be a positive integer"},
               {"{\"max_seq_length\": 0}", "max_seq_length must be a positive integer"},
               {"{\"max_seq_length\": 128,\n \"do_lower_case\": true}", "do_lower_case true"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fx_init(&fx, "", 0, 1, "F32");
        fx.vocab_txt = 1;
        fx.modules = ST_MODULES_3;
        fx.pool_dir = "1_Pooling";
        fx.pool_config = mean;
        fx.st_config = bad[i].cfg;
        fx_expect_error(&fx, (const char *const[]){"sentence_bert_config.json:", bad[i].needle, NULL});
        fx_free(&fx);
    }
    free(mean);
}

static void case_st_errors(void) {
    char *max = st_pool_config(0, 0, 1, 0), *wm = st_pool_config(0, 0, 0, 1), *both = st_pool_config(1, 1, 0, 0);
    char *none = st_pool_config(0, 0, 0, 0), *mean = st_pool_config(0, 1, 0, 0);
    /* modes bertc does not compute, several at once, none */
    st_expect(ST_MODULES_3, max,
              (const char *const[]){"1_Pooling/config.json:5:", "pooling_mode_max_tokens true is not supported", NULL});
    st_expect(ST_MODULES_3, wm,
              (const char *const[]){"1_Pooling/config.json:7:", "pooling_mode_weightedmean_tokens", NULL});
    st_expect(ST_MODULES_3, both,
              (const char *const[]){"1_Pooling/config.json:4:", "pooling_mode_cls_token and pooling_mode_mean_tokens",
                                    "several pooling modes", NULL});
    st_expect(ST_MODULES_3, none, (const char *const[]){"1_Pooling/config.json", "no pooling mode is set", NULL});
    st_expect(ST_MODULES_3, "{\"pooling_mode_mean_tokens\": 1}",
              (const char *const[]){"1_Pooling/config.json:1:", "pooling_mode_mean_tokens must be true or false", NULL});
    st_expect(ST_MODULES_3, "{\"word_embedding_dimension\": 384, \"pooling_mode_mean_tokens\": true}",
              (const char *const[]){"1_Pooling/config.json:1:", "word_embedding_dimension 384",
                                    "hidden_size 8", NULL});
    /* the Pooling module's config is missing */
    st_expect(ST_MODULES_3, NULL, (const char *const[]){"1_Pooling/config.json", NULL});
    /* modules.json itself */
    st_expect("[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n"
              " {\"idx\": 1, \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},\n"
              " {\"idx\": 2, \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]",
              mean, (const char *const[]){"2_Dense/config.json", "cannot open", NULL});
    st_expect("[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n"
              " {\"idx\": 1, \"path\": \"2_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]",
              mean, (const char *const[]){"modules.json:2:", "Normalize", "after the Pooling", NULL});
    st_expect("[{\"idx\": 0, \"path\": \"0_Transformer\", \"type\": \"sentence_transformers.models.Transformer\"}]",
              mean, (const char *const[]){"modules.json:1:", "path '0_Transformer'", NULL});
    st_expect("{\"modules\": []}", mean, (const char *const[]){"modules.json", "expected a JSON array", NULL});
    st_expect("[{\"idx\": 0, \"path\": \"\"}]", mean, (const char *const[]){"modules.json:1:", "no 'type'", NULL});
    st_expect("[{\"idx\": 0, \"path\": \"\", \"type\": 7}]", mean,
              (const char *const[]){"modules.json:1:", "type must be a string", NULL});
    free(max);
    free(wm);
    free(both);
    free(none);
    free(mean);
}

/* A failed import leaves an existing output as it was. */
static void case_error_keeps_old_output(void) {
    char *tmp = temp_dir_make();
    CHECK(tmp != NULL, "cannot make a temp dir");
    if (!tmp) return;
    fx_model fx;
    fx_init(&fx, "", 0, 1, "F32");
    fx_config_edit(&fx, "\"bert\"", "\"distilbert\"");
    char *dir = fx_write(&fx, tmp, "hf");
    char *out = tbuf_format("%s/m.yaml", tmp);
    CHECK(write_file(out, "old\n", 4) == 0, "cannot write %s", out);
    diag d;
    diag_init(&d);
    CHECK(hf_import_run(dir, out, &d) != 0, "import succeeded");
    char *text = check_read_file(out, NULL);
    CHECK(text && !strcmp(text, "old\n"), "the old output was changed");
    CHECK(!dir_has_temp(tmp), "a temporary file was left behind");
    free(text);
    free(out);
    free(dir);
    fx_free(&fx);
    temp_dir_remove(tmp);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(case_fixtures_present);
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "case_fixture_%s", FIXTURES[i]);
        g_variant = FIXTURES[i];
        check_case_run(name, case_fixture);
    }
    CHECK_CASE(case_models_tiny_bert);
    CHECK_CASE(case_models_minilm);
    CHECK_CASE(case_handbuilt_ok);
    CHECK_CASE(case_relative_paths);
    CHECK_CASE(case_tokenizer_config);
    CHECK_CASE(case_prefixed_legacy);
    CHECK_CASE(case_activations);
    CHECK_CASE(case_numbers);
    CHECK_CASE(case_error_model_type);
    CHECK_CASE(case_error_hidden_act);
    CHECK_CASE(case_error_heads);
    CHECK_CASE(case_error_missing_field);
    CHECK_CASE(case_error_position_embedding);
    CHECK_CASE(case_error_other_fields);
    CHECK_CASE(case_error_missing_tensor);
    CHECK_CASE(case_error_tensor_shape);
    CHECK_CASE(case_error_tensor_dtype);
    CHECK_CASE(case_error_missing_files);
    CHECK_CASE(case_error_tokenizer_class);
    CHECK_CASE(case_st_mean_normalize);
    CHECK_CASE(case_st_cls);
    CHECK_CASE(case_st_errors);
    CHECK_CASE(case_st_max_seq_length);
    CHECK_CASE(case_error_keeps_old_output);
    return check_summary();
}
