/*
 * test_predict — the performance model (compiler/model/predict.h).
 *
 * The equations are checked against a reference computed here from the
 * formulas of docs/performance-model.md (occupancy by hand for known
 * kernels, one step's time from its inputs), not against the model's own
 * output; the properties every prediction must have are checked on a real
 * plan (tiny-bert-fp16 from `make plans`: CUBINs for sm_75, sm_86 and sm_90,
 * PTX for compute_80 and compute_90): every GPU of the table runs an image and
 * gets a prediction, a bucket's total is the sum of its steps, a longer
 * bucket never takes less time, every kernel kind has a row of its own, and
 * the specification table holds what its sources say.  The calibration
 * against TensorRT's figures needs BERT-sized plans and is `make bench`'s
 * (tools/fit_perf_model.py --check).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "plan.h"
#include "predict.h"
#include "predict_internal.h"

static int t_close(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + 1e-12; }

static void test_gpu_table(void) {
    const char *want[] = {"t4", "a10", "l4", "l40s", "a100", "h100", "h200", "b200"};
    CHECK(predict_gpu_count() == 8, "%d GPUs", predict_gpu_count());
    for (int i = 0; i < 8; i++) {
        const predict_gpu *g = predict_gpu_find(want[i]);
        CHECK(g && g == predict_gpu_at(i) && strstr(predict_gpu_names(), want[i]), "%s missing", want[i]);
        if (!g) continue;
        CHECK(g->sms > 0 && g->clock_mhz > 500 && g->dram_gbs > 100 && g->l2_mb > 0 && g->tensor_tflops > 10 &&
                  g->warp_mma_share > 0 && g->warp_mma_share <= 1 && g->regs_per_sm == 65536 &&
                  g->max_threads_per_sm >= 1024 && g->max_ctas_per_sm >= 16 && g->sources && *g->sources,
              "%s: implausible row", g->name);
    }
    CHECK(!predict_gpu_find("v100") && !predict_gpu_find(NULL), "unknown GPU found");
    /* a few figures from the data sheets, as a guard against a typo */
    CHECK(predict_gpu_find("a100")->sms == 108 && predict_gpu_find("a100")->dram_gbs == 1555 &&
              predict_gpu_find("h100")->tensor_tflops == 989 && predict_gpu_find("t4")->major == 7 &&
              predict_gpu_find("l4")->minor == 9,
          "data sheet figures");
}

static void test_every_kind_has_a_row(void) {
    for (int k = 0; k < KERNEL_KIND_COUNT; k++)
        CHECK(predict_kind_of((kernel_kind)k) && predict_kind_of((kernel_kind)k)->unit,
              "kernel kind %d has no row in predict_kinds.c", k);
    CHECK(predict_kind_of(KERNEL_KIND_COUNT) == NULL, "a row past the last kind");
}

static void test_constants(void) {
    predict_constants k;
    predict_constants_default(&k);
    CHECK(k.launch_cycles > 0 && k.efficiency > 0 && k.efficiency <= 1 && !k.tensor_units, "defaults");
    diag d;
    diag_init(&d);
    CHECK(predict_constants_parse("launch_cycles=1234,efficiency=0.5,units=tensor", &k, &d) == 0 &&
              k.launch_cycles == 1234 && k.efficiency == 0.5 && k.tensor_units,
          "parse: %s", d.text);
    const char *bad[] = {"launch_cycles=", "efficiency=2", "efficiency=0", "speed=3", "units=magic", "x", "launch_cycles=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        diag_init(&d);
        CHECK(predict_constants_parse(bad[i], &k, &d) != 0 && d.code == DIAG_CODE_USAGE && strstr(d.text, bad[i]),
              "'%s' accepted or unclear: %s", bad[i], d.text);
    }
}

/* Occupancy worked out by hand from the CUDA rules. */
static void test_occupancy(void) {
    const predict_gpu *a100 = predict_gpu_find("a100"), *t4 = predict_gpu_find("t4"), *l4 = predict_gpu_find("l4");
    /* LayerNorm: 128 threads, 63 registers -> 64 -> 2048 per warp -> 32 warps -> 8 CTAs */
    CHECK(predict_ctas_per_sm(a100, 128, 63, 0) == 8, "a100 LN: %d", predict_ctas_per_sm(a100, 128, 63, 0));
    /* attention: 32 threads, 144 registers (4608 per warp: 14 warps), 36 KB + 1 KB reserved -> 4 by smem */
    CHECK(predict_ctas_per_sm(a100, 32, 144, 36864) == 4, "a100 attention: %d",
          predict_ctas_per_sm(a100, 32, 144, 36864));
    /* T4: 64 KB per SM and no reservation -> 1 CTA of 36 KB; 16 CTAs at most */
    CHECK(predict_ctas_per_sm(t4, 32, 144, 36864) == 1, "t4 attention: %d", predict_ctas_per_sm(t4, 32, 144, 36864));
    CHECK(predict_ctas_per_sm(t4, 32, 16, 0) == 16, "t4 CTA limit: %d", predict_ctas_per_sm(t4, 32, 16, 0));
    /* Ada: 1536 threads -> 6 CTAs of 256; unknown registers do not limit */
    CHECK(predict_ctas_per_sm(l4, 256, -1, 0) == 6, "l4 threads: %d", predict_ctas_per_sm(l4, 256, -1, 0));
    /* 255 registers x 1024 threads exceed the register file: not even one */
    CHECK(predict_ctas_per_sm(a100, 1024, 255, 0) == 0, "a100 oversized CTA fits");
    CHECK(predict_ctas_per_sm(t4, 128, 32, 70000) == 0, "t4 oversized shared memory fits");
}

/* A plan of `make plans`: tiny-bert-fp16 (default fusion) or its -baseline twin. */
static int t_open(plan *p, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/plans/%s.plan", check_build_dir(), name);
    diag d;
    diag_init(&d);
    plan_init(p);
    int rc = plan_read(p, path, &d);
    CHECK(rc == 0, "%s (make plans)", d.text);
    return rc;
}

/* The properties of every prediction, on every GPU, both unit modes. */
static void test_predictions_consistent(void) {
    plan p;
    if (t_open(&p, "tiny-bert-fp16")) return;
    const char *runs[8] = {"sm_75", "sm_86", "sm_86", "sm_86", "compute_80", "sm_90", "sm_90", "compute_90"};
    for (int i = 0; i < predict_gpu_count(); i++)
        for (int units = 0; units < 2; units++) {
            const predict_gpu *g = predict_gpu_at(i);
            predict_constants k;
            predict_constants_default(&k);
            k.tensor_units = units;
            predict_result r;
            diag d;
            diag_init(&d);
            if (predict_plan(&p, g, &k, &r, &d)) {
                CHECK(0, "%s: %s", g->name, d.text);
                continue;
            }
            CHECK(r.image >= 0 && !strcmp(p.images[r.image].arch, runs[i]), "%s runs %s, expected %s", g->name,
                  r.image >= 0 ? p.images[r.image].arch : "none", runs[i]);
            CHECK(r.nbuckets == p.nbuckets, "%s: %d buckets", g->name, r.nbuckets);
            for (int b = 0; b < r.nbuckets; b++) {
                const predict_bucket *pb = &r.buckets[b];
                double sum = 0;
                for (int s = 0; s < pb->nsteps; s++) {
                    const predict_step *st = &pb->steps[s];
                    sum += st->us;
                    CHECK(st->launch_us > 0 && st->us >= st->launch_us && st->waves >= 1 && st->ctas_per_sm >= 1 &&
                              st->ctas >= 1 && st->occupancy > 0 && st->occupancy <= 1,
                          "%s bucket %d step %d: implausible", g->name, pb->seq_len, s);
                    CHECK(st->serial_us >= 0 &&
                              t_close(st->us, st->launch_us + fmax(st->math_us, st->memory_us) + st->serial_us),
                          "step is not launch + max + serial");
                }
                CHECK(pb->nsteps == p.buckets[b].nsteps && t_close(pb->us, sum) && pb->launches >= pb->nsteps,
                      "%s bucket %d: total %.6f, steps sum to %.6f", g->name, pb->seq_len, pb->us, sum);
                /* tiny-bert's weights fit every L2: no DRAM floor then */
                CHECK(pb->floor_us >= 0 && pb->floor_us < pb->us && (pb->floor_us > 0) == (pb->l2_weight_share < 1),
                      "%s bucket %d: floor %.3f of %.3f, L2 share %.2f", g->name, pb->seq_len, pb->floor_us, pb->us,
                      pb->l2_weight_share);
                /* within 1%: each bucket's GEMM tiling is chosen by the model
                 * before ptxas runs (estimated registers), and a larger bucket
                 * may take a taller tile a smaller one has no use for */
                if (b > 0)
                    CHECK(pb->us >= 0.99 * r.buckets[b - 1].us, "%s: bucket %d (%.2f us) faster than %d (%.2f us)", g->name,
                          pb->seq_len, pb->us, r.buckets[b - 1].seq_len, r.buckets[b - 1].us);
            }
            predict_result_free(&r);
        }
    plan_free(&p);
}

/* A plan of `make plans` predicted on g with the fitted constants; on
 * failure (reported) nothing is left open. */
static int t_predict(plan *p, const char *name, const predict_gpu *g, predict_constants *k, predict_result *r) {
    if (t_open(p, name)) return -1;
    predict_constants_default(k);
    diag d;
    diag_init(&d);
    if (predict_plan(p, g, k, r, &d)) {
        CHECK(0, "%s", d.text);
        plan_free(p);
        return -1;
    }
    return 0;
}

/* The first kernel step of bucket b whose kind is a or k2; -1 if none. */
static int t_find_step(const plan *p, int b, kernel_kind a, kernel_kind k2) {
    for (int s = 0; s < p->buckets[b].nsteps; s++) {
        const sched_step *st = &p->buckets[b].steps[s];
        if (st->kind != SCHED_STEP_KERNEL) continue;
        kernel_kind kind = p->kernels[st->launch.kernel].spec.kind;
        if (kind == a || kind == k2) return s;
    }
    return -1;
}

/* One kernel step recomputed from the model's formulas, by hand. */
static void test_step_from_formulas(void) {
    plan p;
    const predict_gpu *g = predict_gpu_find("a10"); /* runs the sm_86 CUBIN: its own ptxas numbers */
    predict_constants k;
    predict_result r;
    if (t_predict(&p, "tiny-bert-fp16-baseline", g, &k, &r)) return; /* the default fusion has no add_ln */
    const sched_bucket *b = &p.buckets[p.nbuckets - 1];
    int checked = 0;
    for (int s = 0; s < b->nsteps && !checked; s++) {
        const sched_step *st = &b->steps[s];
        if (st->kind != SCHED_STEP_KERNEL || p.kernels[st->launch.kernel].spec.kind != KERNEL_KIND_ADD_LN) continue;
        const predict_step *ps = &r.buckets[p.nbuckets - 1].steps[s];
        const plan_kernel_stats *sx = &p.images[r.stats_image].stats[st->launch.kernel];
        long ctas = (long)st->launch.dims.grid[0] * st->launch.dims.grid[1];
        int threads = (int)st->launch.dims.block[0], warps = threads / 32;
        int r_hand = predict_ctas_per_sm(g, threads, sx->registers, (int)st->launch.dims.shared_bytes + sx->shared_static);
        long per_sm = (ctas + g->sms - 1) / g->sms;
        int reff = per_sm < r_hand ? (int)per_sm : r_hand;
        double busy = fmin(1.0, reff * warps / 4.0), peak = g->fp32_lanes * 2.0 * g->clock_mhz * 1e6;
        double math = ceil((double)ctas / (g->sms * reff)) * reff * (st->flops / ctas) / (peak * k.efficiency * busy);
        /* add_ln reads only gamma and beta from the weights; its activations
         * stay in the L2 (the arena fits on an A10): DRAM sees the weights */
        double launch = k.launch_cycles / g->clock_mhz;
        CHECK(ps->unit == PREDICT_UNIT_SIMT && t_close(ps->launch_us, launch) && t_close(ps->math_us, math * 1e6),
              "add_ln: launch %.6f (want %.6f), math %.6f (want %.6f)", ps->launch_us, launch, ps->math_us, math * 1e6);
        const kernel_spec *sp = &p.kernels[st->launch.kernel].spec;
        CHECK(ps->weight_bytes == 2.0 * (2 + sp->has_bias) * sp->hidden,
              "add_ln weight bytes %.0f (gamma, beta%s)", ps->weight_bytes, sp->has_bias ? ", bias" : "");
        checked = 1;
    }
    CHECK(checked, "no add_ln step");
    predict_result_free(&r);
    plan_free(&p);
}

/*
 * A gemm_ln step of the default plan recomputed by hand: CTAs = ceil(n /
 * tile_n) * ceil(rows / tile_m) * splits, a CTA's FLOPs over its split's
 * k-tiles, and the serial tail (the last arriver's reduction of one tile,
 * the LayerNorm of one row block) at one SM's share of the L2 bandwidth.
 */
static void test_gemm_family_from_formulas(void) {
    plan p;
    const predict_gpu *g = predict_gpu_find("a100");
    predict_constants k;
    predict_result r;
    if (t_predict(&p, "tiny-bert-fp16", g, &k, &r)) return;
    int b = p.nbuckets - 1, s = t_find_step(&p, b, KERNEL_KIND_GEMM_LN, KERNEL_KIND_GEMM_LN);
    CHECK(s >= 0, "no gemm_ln step in the default plan");
    if (s >= 0) {
        const sched_step *st = &p.buckets[b].steps[s];
        const kernel_spec *sp = &p.kernels[st->launch.kernel].spec;
        const predict_step *ps = &r.buckets[b].steps[s];
        long tn = (sp->n + sp->tile_n - 1) / sp->tile_n, tm = (sp->bucket + sp->tile_m - 1) / sp->tile_m;
        double es = 2.0, tile = sp->tile_m * sp->tile_n * 4.0;
        double serial = (sp->splits > 1 ? sp->splits * tile + sp->tile_m * sp->tile_n * es : 0.0) +
                        sp->tile_m * (double)sp->n * (4.0 + es);
        CHECK(ps->ctas == tn * tm * sp->splits && ps->tile_m == sp->tile_m && ps->tile_n == sp->tile_n &&
                  ps->split_k == sp->splits && ps->unit == PREDICT_UNIT_WARP_MMA,
              "gemm_ln: %ld CTAs (want %ld), tile %dx%d / %d, unit %s", ps->ctas, tn * tm * sp->splits, ps->tile_m,
              ps->tile_n, ps->split_k, predict_unit_name(ps->unit));
        CHECK(t_close(ps->serial_us, serial / (5120.0 / 108.0 * g->clock_mhz)), "gemm_ln serial %.6f us, want %.6f",
              ps->serial_us, serial / (5120.0 / 108.0 * g->clock_mhz));
        /* the L2 side: every CTA pulls its x and w slices, (tile_m + tile_n)
         * rows of its split's k-tiles of 64 bytes, through the SMs it occupies */
        kernel_geometry geo;
        diag d;
        diag_init(&d);
        CHECK(kernel_geometry_of(sp, &geo, &d) == 0, "%s", d.text);
        double l2 = (double)ps->ctas * (sp->tile_m + sp->tile_n) * geo.kts * 64.0 /
                    (5120.0 / 108.0 * g->clock_mhz * 1e6 * fmin((double)ps->ctas, (double)g->sms)) * 1e6;
        CHECK(ps->memory_us >= l2 * (1 - 1e-9), "gemm_ln memory %.6f us below its L2 traffic's %.6f", ps->memory_us, l2);
    }
    predict_result_free(&r);
    plan_free(&p);
}

/*
 * The lowering's question (predict_candidate_step) and the report
 * (predict_plan) are one model: a gemm_ln step of the default plan, asked
 * as a candidate with the same spec, launch, registers, static shared
 * memory, FLOPs and bytes,
 * gets the same CTAs, occupancy, waves, launch, math and serial time.
 * (Memory may differ: a candidate assumes no weights in the L2.)
 */
static void test_candidate_matches_plan(void) {
    plan p;
    const predict_gpu *g = predict_gpu_find("a100");
    predict_constants k;
    predict_result r;
    if (t_predict(&p, "tiny-bert-fp16", g, &k, &r)) return;
    int b = p.nbuckets - 1, s = t_find_step(&p, b, KERNEL_KIND_GEMM_LN, KERNEL_KIND_GEMM_SPLITK);
    CHECK(s >= 0, "no gemm_ln / gemm_splitk step in the default plan");
    if (s >= 0) {
        const sched_step *st = &p.buckets[b].steps[s];
        const kernel_spec *sp = &p.kernels[st->launch.kernel].spec;
        const plan_kernel_stats *sx = &p.images[r.stats_image].stats[st->launch.kernel];
        const predict_step *ps = &r.buckets[b].steps[s];
        predict_candidate c = {.spec = sp, .dims = st->launch.dims, .registers = sx->registers,
                               .smem_static = sx->shared_static, .image_sm = 80,
                               .flops = st->flops, .weight_bytes = ps->weight_bytes,
                               .min_bytes = (double)st->min_hbm_bytes};
        predict_step q;
        diag d;
        diag_init(&d);
        CHECK(predict_candidate_step(g, &k, &c, &q, &d) == 0, "%s", d.text);
        CHECK(q.ctas == ps->ctas && q.ctas_per_sm == ps->ctas_per_sm && q.waves == ps->waves && q.unit == ps->unit &&
                  t_close(q.launch_us, ps->launch_us) && t_close(q.math_us, ps->math_us) &&
                  t_close(q.serial_us, ps->serial_us) && q.memory_us >= ps->memory_us * (1 - 1e-9),
              "%s: candidate %ld CTAs x%d, %.6f/%.6f/%.6f us; plan %ld x%d, %.6f/%.6f/%.6f us",
              plan_kernel_kind_name(sp->kind), q.ctas, q.ctas_per_sm, q.launch_us, q.math_us, q.serial_us, ps->ctas,
              ps->ctas_per_sm, ps->launch_us, ps->math_us, ps->serial_us);
    }
    predict_result_free(&r);
    plan_free(&p);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_gpu_table);
    CHECK_CASE(test_every_kind_has_a_row);
    CHECK_CASE(test_constants);
    CHECK_CASE(test_occupancy);
    CHECK_CASE(test_predictions_consistent);
    CHECK_CASE(test_step_from_formulas);
    CHECK_CASE(test_gemm_family_from_formulas);
    CHECK_CASE(test_candidate_matches_plan);
    return check_summary();
}
