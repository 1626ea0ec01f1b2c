/*
 * test_lower_gemm — the compiler's choices for bertc's own GEMMs
 * (compiler/lower/lower_gemm.c, lower_steps.c): the tiling of gemm_splitk
 * and gemm_ln, and how a LINEAR_LN lowers at each fusion level.
 *
 * The tiling is checked against the launch contract it must satisfy and
 * the rule it promises (a full wave on the reference GPU of 132 SMs where
 * one exists — every GEMM of BERT-base and BERT-large at s128 and s384 —
 * and a failure, not a bad spec, where the contract serves nothing).  The
 * lowering is checked on hand-built graphs (support/tgraph): a LINEAR_LN
 * becomes one gemm_ln launch whose workspace lies in the arena and whose
 * counters lie in the COUNTERS buffer the bucket declares; a row too wide
 * for gemm_ln falls back to the chain (a cuBLASLt GEMM, then add_ln); a
 * GELU linear runs on gemm_splitk at the default level and on the gemm
 * kind at the baseline level.
 */
#include <string.h>

#include "check.h"
#include "kimage.h"
#include "lower.h"
#include "plan_kernels.h"
#include "tgraph.h"

/* ------------------------------------------------------------ tiling */

static kernel_spec tl_spec(kernel_kind kind, plan_dtype dt, int m, int n, int k) {
    kernel_spec s = kimage_gemm_spec(kind, dt, m, n, k);
    if (kind == KERNEL_KIND_GEMM_SPLITK) s.has_act = 1, s.act = PLAN_ACT_GELU_ERF;
    return s;
}

static void test_tiling_full_wave(void) {
    static const int shapes[][3] = {{768, 768, 0}, {3072, 768, 1}, {768, 3072, 0},
                                    {1024, 1024, 0}, {4096, 1024, 1}, {1024, 4096, 0}};
    static const plan_dtype dts[3] = {PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_F32};
    for (int d = 0; d < 3; d++)
        for (int m = 128; m <= 384; m += 256)
            for (int i = 0; i < 6; i++) {
                kernel_kind kind = shapes[i][2] ? KERNEL_KIND_GEMM_SPLITK : KERNEL_KIND_GEMM_LN;
                kernel_spec s = tl_spec(kind, dts[d], m, shapes[i][0], shapes[i][1]);
                diag dg;
                diag_init(&dg);
                double us = 0;
                CHECK(lower_gemm_tiling(&s, &us, &dg) == 0, "%s %dx%d: %s", plan_kernel_kind_name(kind), s.n, s.k, dg.text);
                kernel_launch_dims dm;
                CHECK(kernel_spec_check(&s, &dg) == 0 && kernel_launch_dims_of(&s, m, &dm, &dg) == 0, "%s", dg.text);
                unsigned ctas = dm.grid[0] * dm.grid[1] * dm.grid[2];
                CHECK(ctas >= 132, "%s %s M %d N %d K %d: %dx%d tiles x %d splits = %u CTAs", plan_dtype_name(dts[d]),
                      plan_kernel_kind_name(kind), m, s.n, s.k, s.tile_m, s.tile_n, s.splits, ctas);
                CHECK(us > 0 && us < 1000, "modelled %g us", us);
            }
    /* one row (a pooler): still a full wave, by splitting K */
    kernel_spec p = tl_spec(KERNEL_KIND_GEMM_SPLITK, PLAN_DTYPE_F16, 1, 768, 768);
    diag dg;
    diag_init(&dg);
    CHECK(lower_gemm_tiling(&p, NULL, &dg) == 0 && p.tile_m == 16 && p.splits > 1, "pooler: %dx%d / %d", p.tile_m,
          p.tile_n, p.splits);
    /* a row too wide for gemm_ln's registers: no tiling, the spec untouched */
    kernel_spec w = tl_spec(KERNEL_KIND_GEMM_LN, PLAN_DTYPE_F32, 64, 2050, 64);
    diag_init(&dg);
    CHECK(lower_gemm_tiling(&w, NULL, &dg) != 0 && strstr(dg.text, "no tiling") && w.tile_m == 0,
          "hidden 2050: %s, tile %d", dg.text, w.tile_m);
}

/* ------------------------------------------------------------ lowering */

/*
 * emb = embed_ln(input_ids) [S, E]; res = embed_ln [S, N] from a second
 * table; y = linear_ln(emb, w [N, E], gamma, beta, bias, res); z =
 * linear(emb, w2 [I, E], b2, gelu) — the output projection and FC1 shapes
 * of a layer, small.
 */
static int tl_graph(tgraph *tg, int E, int N, int I) {
    tgraph_init(tg);
    int ids = tgraph_input(tg, "input_ids");
    int t1 = tgraph_weight_rand(tg, "t1", IR_DTYPE_F32, 2, 11, E, 1.0f);
    int t2 = tgraph_weight_rand(tg, "t2", IR_DTYPE_F32, 2, 11, N, 1.0f);
    int g1 = tgraph_weight_rand(tg, "g1", IR_DTYPE_F32, 1, E, 0, 1.0f);
    int g2 = tgraph_weight_rand(tg, "g2", IR_DTYPE_F32, 1, N, 0, 1.0f);
    int emb = tgraph_op(tg, IR_OP_EMBED_LN, "emb", g1, g1, t1, ids);
    int res = tgraph_op(tg, IR_OP_EMBED_LN, "res", g2, g2, t2, ids);
    tg->g.nodes[emb].ngathers = tg->g.nodes[res].ngathers = 1;
    tg->g.nodes[emb].eps = tg->g.nodes[res].eps = 1e-5f;
    int w = tgraph_weight_rand(tg, "w", IR_DTYPE_F32, 2, N, E, 0.25f);
    int b = tgraph_weight_rand(tg, "b", IR_DTYPE_F32, 1, N, 0, 1.0f);
    int y = tgraph_op(tg, IR_OP_LINEAR_LN, "y", emb, w, g2, g2, b, res);
    tg->g.nodes[y].has_bias = tg->g.nodes[y].has_residual = 1;
    tg->g.nodes[y].eps = 1e-5f;
    int w2 = tgraph_weight_rand(tg, "w2", IR_DTYPE_F32, 2, I, E, 0.25f);
    int b2 = tgraph_weight_rand(tg, "b2", IR_DTYPE_F32, 1, I, 0, 1.0f);
    int z = tgraph_op(tg, IR_OP_LINEAR, "z", emb, w2, b2);
    tg->g.nodes[z].has_bias = 1;
    tg->g.nodes[z].has_act = 1;
    tg->g.nodes[z].act = IR_ACT_GELU_ERF;
    ir_graph_add_output(&tg->g, "y", y);
    ir_graph_add_output(&tg->g, "z", z);
    tg->g.max_seq_len = 64;
    diag d;
    diag_init(&d);
    int rc = ir_graph_infer(&tg->g, "lower.yaml", NULL, 0, &d);
    if (!rc) rc = tgraph_open_weights(tg, "lower.safetensors", &d);
    CHECK(rc == 0, "graph: %s", d.text);
    return rc;
}

/* The plan of tg at one bucket of 64 rows, or -1 (CHECKed). */
static int tl_lower(tgraph *tg, plan_dtype prec, plan_fusion fusion, plan *p) {
    static const int buckets[1] = {64};
    lower_options o = {.precision = prec, .fusion = fusion, .buckets = buckets, .nbuckets = 1};
    diag d;
    diag_init(&d);
    plan_init(p);
    int rc = lower_model(&tg->g, &tg->w, &o, p, &d);
    CHECK(rc == 0, "lower_model: %s", d.text);
    return rc;
}

/* The kinds of a bucket's steps as one string: "e" embed_ln, "a" add_ln,
 * "L" gemm_ln, "K" gemm_splitk, "g" gemm, "C" cuBLASLt. */
static void tl_kinds(const plan *p, char *out) {
    const sched_bucket *b = &p->buckets[0];
    int n = 0;
    for (int i = 0; i < b->nsteps; i++) {
        if (b->steps[i].kind == SCHED_STEP_GEMM) {
            out[n++] = 'C';
            continue;
        }
        static const char letter[KERNEL_KIND_COUNT] = {'e', 'a', 't', 'g', 'p', 'K', 'L'};
        out[n++] = letter[p->kernels[b->steps[i].launch.kernel].spec.kind];
    }
    out[n] = '\0';
}

static void test_lower_linear_ln(void) {
    tgraph tg;
    if (tl_graph(&tg, 48, 96, 200)) {
        tgraph_free(&tg);
        return;
    }
    plan p;
    char kinds[64];
    if (tl_lower(&tg, PLAN_DTYPE_F16, PLAN_FUSION_DEFAULT, &p) == 0) {
        tl_kinds(&p, kinds);
        CHECK(strcmp(kinds, "eeLK") == 0, "default level steps: %s", kinds);
        const sched_bucket *b = &p.buckets[0];
        const sched_launch *l = &b->steps[2].launch;
        const kernel_spec *ks = &p.kernels[l->kernel].spec;
        kernel_arg a[KERNEL_MAX_ARGS];
        kernel_args_of(ks, b->seq_len, a);
        CHECK(l->nargs == 12 && l->args[8].buf == SCHED_BUF_ARENA && l->args[9].buf == SCHED_BUF_COUNTERS &&
                  l->args[9].offset == 0 && b->counter_bytes >= a[9].bytes && p.counter_bytes == b->counter_bytes,
              "gemm_ln workspace/counters: %d %d, counters %u of %llu", (int)l->args[8].buf, (int)l->args[9].buf,
              b->counter_bytes, (unsigned long long)a[9].bytes);
        CHECK(l->args[8].offset + a[8].bytes <= b->arena_bytes, "workspace outside the arena");
        /* the workspace is the step's own: it overlaps none of the launch's other arena operands */
        for (int i = 0; i < 8; i++)
            if (l->args[i].buf == SCHED_BUF_ARENA)
                CHECK(l->args[i].offset + a[i].bytes <= l->args[8].offset ||
                          l->args[8].offset + a[8].bytes <= l->args[i].offset,
                      "workspace overlaps argument %d", i);
        CHECK(p.fusion == PLAN_FUSION_DEFAULT && ks->eps == 1e-5f && ks->has_bias && ks->has_residual,
              "gemm_ln spec");
        plan_free(&p);
    }
    if (tl_lower(&tg, PLAN_DTYPE_F16, PLAN_FUSION_BASELINE, &p) == 0) {
        tl_kinds(&p, kinds);
        /* a LINEAR_LN at the baseline level (the pass does not run there, but
         * a graph may hold one) lowers to the chain; FC1 + GELU to the gemm kind */
        CHECK(strcmp(kinds, "eeCag") == 0, "baseline level steps: %s", kinds);
        CHECK(p.counter_bytes == 0 && p.fusion == PLAN_FUSION_BASELINE, "baseline counters %llu",
              (unsigned long long)p.counter_bytes);
        plan_free(&p);
    }
    tgraph_free(&tg);
    /* a row too wide for gemm_ln: the chain again, at the default level */
    if (tl_graph(&tg, 16, 2050, 32) == 0 && tl_lower(&tg, PLAN_DTYPE_F32, PLAN_FUSION_DEFAULT, &p) == 0) {
        tl_kinds(&p, kinds);
        CHECK(strcmp(kinds, "eeCaK") == 0, "hidden 2050 steps: %s", kinds);
        const sched_bucket *b = &p.buckets[0];
        CHECK(b->steps[2].gemm.epilogue == SCHED_EPILOGUE_BIAS && b->steps[2].gemm.beta == 0.0f,
              "fallback GEMM: epilogue %d", (int)b->steps[2].gemm.epilogue);
        plan_free(&p);
    }
    tgraph_free(&tg);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_tiling_full_wave);
    CHECK_CASE(test_lower_linear_ln);
    return check_summary();
}
