/*
 * compile — the pipeline (compile.h).  compile_model reads as the list of
 * stages; everything a stage needs beyond one call (bucket defaults,
 * assembly of the plan's non-program parts) is a short function here.
 */
#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileutil.h"
#include "images.h"
#include "kernels.h"
#include "lower.h"
#include "model.h"
#include "plan.h"
#include "plan_write.h"
#include "hf_tokenizer.h"
#include "tokenizer.h"

#ifndef BERTC_VERSION
#define BERTC_VERSION "dev"
#endif

void compile_options_init(compile_options *o) {
    memset(o, 0, sizeof *o);
    o->precision = PLAN_DTYPE_F16;
    o->fusion = PLAN_FUSION_DEFAULT;
    arch_list_default(&o->targets);
    o->jobs = 1;
    o->max_batch = COMPILE_DEFAULT_MAX_BATCH;
    o->tune = "all";
}

static double compile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * The buckets to lower: the caller's, each within the model's
 * max_seq_len, or the defaults (32 64 128 256 384 512 up to max_seq_len,
 * plus max_seq_len itself rounded down to 8 so every length is served).
 */
static int compile_buckets(const compile_options *o, int64_t max_seq, int *buckets, int *nb, diag *d) {
    static const int defaults[] = {32, 64, 128, 256, 384, 512};
    *nb = 0;
    if (o->nbuckets > 0) {
        for (int i = 0; i < o->nbuckets; i++) {
            if (o->buckets[i] > max_seq)
                return diag_set(d, DIAG_CODE_USAGE, "--buckets: %d is above the model's max_seq_len %lld",
                                o->buckets[i], (long long)max_seq);
            buckets[(*nb)++] = o->buckets[i];
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (defaults[i] <= max_seq) buckets[(*nb)++] = defaults[i];
    int top = (int)(max_seq / 8 * 8);
    if (top >= 8 && (*nb == 0 || buckets[*nb - 1] < top) && top <= 512) buckets[(*nb)++] = top;
    if (*nb == 0) return diag_set(d, DIAG_CODE_INPUT, "max_seq_len %lld is below the smallest bucket (8)", (long long)max_seq);
    return 0;
}

/*
 * The token buckets to lower.  A batch holds at most max_batch requests of
 * at most the longest length bucket's tokens, so a bucket whose smaller
 * neighbour already takes that many is never chosen: it would only add a
 * graph to compile and capture and grow every context's arena to its size.
 * Listed, it is an error naming the arithmetic; of the defaults, it is
 * left out (the report counts the buckets the plan has).
 */
static int compile_token_buckets(const compile_options *o, int longest, int max_batch, int *tokens, int *nt,
                                 diag *d) {
    long most = (long)max_batch * longest;
    *nt = 0;
    for (int i = 0; i < o->ntoken_buckets; i++) {
        if (*nt > 0 && tokens[*nt - 1] >= most) {
            if (o->token_buckets_default) break;
            return diag_set(d, DIAG_CODE_USAGE,
                            "--batch-tokens: %d is never used: a batch holds at most %d requests (--max-batch) of at "
                            "most %d tokens (the longest bucket), %ld in all, which %d already takes",
                            o->token_buckets[i], max_batch, longest, most, tokens[*nt - 1]);
        }
        tokens[(*nt)++] = o->token_buckets[i];
    }
    return 0;
}

static char *compile_strdup(const char *s) { return s ? strdup(s) : NULL; }

/*
 * The tokenizer's description from its files (hf_tokenizer.h).  The
 * runtime builds its tokenizer from exactly this on first use; build it
 * now, so a description it would refuse fails the compile, not the first
 * request of a service, and check that every id it can produce has a row
 * in the embedding table.
 */
static int compile_tokenizer(plan *p, const ir_graph *g, diag *d) {
    plan_tokenizer *t = &p->tokenizer;
    if (hf_tokenizer_load(&g->tokenizer, t, d)) return -1;
    tokenizer tk;
    if (tokenizer_init(&tk, t, d)) return -1;
    int32_t n = tk.nids;
    tokenizer_free(&tk);
    if (n > p->vocab_size)
        return diag_set(d, DIAG_CODE_INPUT, "the tokenizer produces ids up to %d, but the model's input_ids table has "
                        "%lld rows", (int)n - 1, (long long)p->vocab_size);
    return 0;
}

/* What the plan carries besides the program: names, the labels and the tokenizer. */
static int compile_assemble(plan *p, const ir_graph *g, diag *d) {
    char producer[64];
    snprintf(producer, sizeof producer, "bertc %s", BERTC_VERSION);
    p->model_name = compile_strdup(g->name);
    p->producer = compile_strdup(producer);
    if (!p->model_name || !p->producer) return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    if (g->nlabels && !(p->labels = calloc((size_t)g->nlabels, sizeof *p->labels)))
        return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    for (; p->nlabels < g->nlabels; p->nlabels++)
        if (!(p->labels[p->nlabels] = compile_strdup(g->labels[p->nlabels])))
            return diag_set(d, DIAG_CODE_INTERNAL, "out of memory");
    return g->has_tokenizer ? compile_tokenizer(p, g, d) : 0;
}

/* Records the stage's time and tells the caller. */
static void compile_stage_done(const compile_options *o, compile_report *r, compile_stage s, double *t) {
    double now = compile_now();
    r->seconds[s] = now - *t;
    r->total_seconds += now - *t;
    *t = now;
    if (o->stage) o->stage(o->user, s, r);
}

/* The output is none of the inputs: the YAML, its weights, its tokenizer files. */
static int compile_check_output(const compile_options *o, const model *m, diag *d) {
    const char *out[1] = {o->out_path}, *what[1] = {"-o"};
    const ir_tokenizer *t = &m->graph.tokenizer;
    int tk = m->graph.has_tokenizer;
    const char *in[6] = {o->model_path, m->graph.weights_path, tk ? t->vocab_path : NULL, tk ? t->json_path : NULL,
                         tk ? t->bpe_vocab_path : NULL, tk ? t->bpe_merges_path : NULL};
    return file_outputs_check(out, what, 1, in, 6, d);
}

int compile_model(const compile_options *o, compile_report *r, diag *d) {
    model m;
    plan p;
    file_atomic out;
    memset(&m, 0, sizeof m);
    memset(r, 0, sizeof *r);
    plan_init(&p);
    int buckets[COMPILE_MAX_BUCKETS], tokens[COMPILE_MAX_BUCKETS], sms[ARCH_MAX], nsms = 0, rc = -1;
    for (int i = 0; i < o->targets.count; i++) sms[nsms++] = arch_number(o->targets.names[i]);
    double t = compile_now();
    lower_options lo = {.precision = o->precision,
                        .fusion = o->fusion,
                        .buckets = buckets,
                        .token_buckets = tokens,
                        .max_batch = o->max_batch > 0 ? o->max_batch : COMPILE_DEFAULT_MAX_BATCH,
                        .sms = sms,
                        .nsms = nsms,
                        .tune = o->tune};
    passes_level level = o->fusion == PLAN_FUSION_BASELINE ? PASSES_LEVEL_BASELINE : PASSES_LEVEL_DEFAULT;

    /* The output first: a path that cannot be written fails before the work. */
    if (lower_gemm_tune_check(o->tune, sms, nsms, d) || file_atomic_open(&out, o->out_path, d)) return -1;
    if (model_load(&m, o->model_path, d) || compile_check_output(o, &m, d) ||
        compile_buckets(o, m.graph.max_seq_len, buckets, &lo.nbuckets, d) ||
        compile_token_buckets(o, buckets[lo.nbuckets - 1], lo.max_batch, tokens, &lo.ntoken_buckets, d))
        goto done;
    compile_stage_done(o, r, COMPILE_STAGE_LOAD, &t);
    if (passes_run_level(&m.graph, &m.weights, level, &r->passes, d)) goto done;
    compile_stage_done(o, r, COMPILE_STAGE_FUSE, &t);
    if (lower_model(&m.graph, &m.weights, &lo, &p, d)) goto done;
    r->nbuckets = p.nbuckets;
    r->ntoken_buckets = lo.ntoken_buckets;
    r->nkernels = p.nkernels;
    compile_stage_done(o, r, COMPILE_STAGE_LOWER, &t);
    if (kernels_generate(&p, d)) goto done;
    compile_stage_done(o, r, COMPILE_STAGE_GENERATE, &t);
    images_options io = {.jobs = o->jobs, .no_cache = o->no_cache};
    if (images_build(&p, &o->targets, &io, &r->images, d)) goto done;
    r->nimages = p.nimages;
    compile_stage_done(o, r, COMPILE_STAGE_BUILD, &t);
    if (compile_assemble(&p, &m.graph, d)) goto done;
    compile_stage_done(o, r, COMPILE_STAGE_ASSEMBLE, &t);
    if (plan_write_to(&p, &out, d) || file_atomic_commit(&out, 1, d)) goto done;
    compile_stage_done(o, r, COMPILE_STAGE_WRITE, &t);
    rc = 0;
done:
    if (out.tmp_path) file_atomic_abort(&out);
    plan_free(&p);
    model_free(&m);
    return rc;
}
