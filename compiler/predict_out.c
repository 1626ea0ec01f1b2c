/*
 * predict_out — the model's prediction as JSON (for tools and tests) and
 * as text (for people).  Every number printed is the model's (predict.h);
 * the JSON keys are documented in docs/cli.md.
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "predict.h"

static const char *predict_bound(const predict_step *s) { return s->math_us > s->memory_us ? "math" : "memory"; }

static const char *predict_image_name(const plan *p, int i) { return i >= 0 ? p->images[i].arch : "none"; }

/* `count` things (tokens, requests) per modelled bucket time, per second. */
static double predict_per_s(const predict_bucket *b, double count) { return b->us > 0 ? count * 1e6 / b->us : 0.0; }

/* ------------------------------------------------------------ JSON */

static void predict_json_step(FILE *f, const plan *p, const sched_step *st, const predict_step *s) {
    fprintf(f, "\n    {\"name\": ");
    inspect_json_str(f, st->name);
    fprintf(f,
            ", \"template\": \"%s\", \"predicted_us\": %.4f, \"launch_us\": %.4f, \"math_us\": %.4f, "
            "\"memory_us\": %.4f, \"serial_us\": %.4f, \"bound\": \"%s\", \"unit\": \"%s\", \"launches\": %d, "
            "\"ctas\": %ld, "
            "\"threads\": %d, \"ctas_per_sm\": %d, \"waves\": %d, \"occupancy\": %.4f, \"registers\": %d, "
            "\"flops\": %.0f, \"dram_bytes\": %.0f, \"weight_bytes\": %.0f",
            predict_step_template(p, st), s->us, s->launch_us, s->math_us, s->memory_us, s->serial_us, predict_bound(s),
            predict_unit_name(s->unit), s->launches, s->ctas, s->threads, s->ctas_per_sm, s->waves, s->occupancy,
            s->registers, s->flops, s->dram_bytes, s->weight_bytes);
    if (s->tile_m) fprintf(f, ", \"tile\": \"%dx%d\"", s->tile_m, s->tile_n);
    if (s->split_k) fprintf(f, ", \"split_k\": %d", s->split_k);
    fputc('}', f);
}

static void predict_json_bucket(FILE *f, const plan *p, const predict_bucket *b, const sched_bucket *sb) {
    fprintf(f,
            "\n  {\"seq_len\": %d, \"max_seqs\": %d, \"predicted_us\": %.4f, \"tokens_per_s\": %.1f, "
            "\"requests_per_s\": %.1f, \"launches\": %d, \"floor_us\": %.4f, \"launch_us\": %.4f, "
            "\"memory_bound_us\": %.4f, \"math_bound_us\": %.4f, \"l2_weight_share\": %.4f, \"steps\": [",
            b->seq_len, b->max_seqs, b->us, predict_per_s(b, b->seq_len), predict_per_s(b, b->max_seqs ? b->max_seqs : 1),
            b->launches, b->floor_us, b->launch_us, b->memory_bound_us, b->math_bound_us, b->l2_weight_share);
    for (int i = 0; i < b->nsteps; i++) {
        predict_json_step(f, p, &sb->steps[i], &b->steps[i]);
        if (i + 1 < b->nsteps) fputc(',', f);
    }
    fprintf(f, "]}");
}

void predict_write_json(FILE *f, const plan *p, const predict_result *r, int bucket) {
    const predict_gpu *g = r->gpu;
    fprintf(f, "{\"gpu\": \"%s\", \"part\": ", g->name);
    inspect_json_str(f, g->part);
    fprintf(f,
            ", \"compute_capability\": \"%d.%d\", \"image\": \"%s\", \"image_kind\": \"%s\", \"stats_image\": \"%s\", "
            "\"variant\": %d,\n"
            " \"spec\": {\"sms\": %d, \"clock_mhz\": %.0f, \"dram_gbs\": %.0f, \"l2_mb\": %.0f, \"tensor_tflops\": %.1f, "
            "\"warp_mma_share\": %.4f, \"fp32_lanes\": %d, \"regs_per_sm\": %d, \"smem_per_sm\": %d, "
            "\"max_ctas_per_sm\": %d, \"max_threads_per_sm\": %d},\n"
            " \"constants\": {\"launch_cycles\": %.1f, \"efficiency\": %.4f, \"units\": \"%s\"},\n \"buckets\": [",
            g->major, g->minor, predict_image_name(p, r->image),
            r->image < 0 ? "none" : p->images[r->image].kind == PLAN_IMAGE_PTX ? "ptx" : "cubin",
            predict_image_name(p, r->stats_image), r->variant, g->sms, g->clock_mhz, g->dram_gbs, g->l2_mb, g->tensor_tflops,
            g->warp_mma_share, g->fp32_lanes, g->regs_per_sm, g->smem_per_sm, g->max_ctas_per_sm,
            g->max_threads_per_sm, r->k.launch_cycles, r->k.efficiency, r->k.tensor_units ? "tensor" : "plan");
    int first = 1;
    for (int b = 0; b < r->nbuckets; b++) {
        if (bucket >= 0 && r->buckets[b].seq_len != bucket) continue;
        if (!first) fputc(',', f);
        predict_json_bucket(f, p, &r->buckets[b], &r->sched[b]);
        first = 0;
    }
    fprintf(f, "]}");
}

/* ------------------------------------------------------------ text */

static void predict_text_bucket(FILE *f, const plan *p, const predict_bucket *b, const sched_bucket *sb) {
    if (b->max_seqs) fprintf(f, "\ntoken bucket %d tokens (up to %d requests, packed):", b->seq_len, b->max_seqs);
    else fprintf(f, "\nbucket %d:", b->seq_len);
    fprintf(f,
            " %.1f us modelled, %d launches (%.1f us of launch and tail), memory-bound steps %.1f us, "
            "math-bound %.1f us; memory floor %.1f us (L2 keeps %.0f%% of the weights)\n",
            b->us, b->launches, b->launch_us, b->memory_bound_us, b->math_bound_us, b->floor_us,
            100.0 * b->l2_weight_share);
    fprintf(f, "  %3s %-24s %-11s %8s %8s %8s %8s %7s %-6s %-8s %6s %4s %5s %4s %s\n", "#", "step", "template", "us",
            "launch", "math", "memory", "serial", "bound", "unit", "CTAs", "/SM", "waves", "regs", "tile");
    for (int i = 0; i < b->nsteps; i++) {
        const predict_step *s = &b->steps[i];
        char tile[32] = "";
        if (s->tile_m) snprintf(tile, sizeof tile, "%dx%d", s->tile_m, s->tile_n);
        if (s->split_k > 1) snprintf(tile + strlen(tile), sizeof tile - strlen(tile), " split-k %d", s->split_k);
        fprintf(f, "  %3d %-24.24s %-11s %8.2f %8.2f %8.2f %8.2f %7.2f %-6s %-8s %6ld %4d %5d %4d %s\n", i,
                sb->steps[i].name, predict_step_template(p, &sb->steps[i]), s->us, s->launch_us, s->math_us,
                s->memory_us, s->serial_us, predict_bound(s), predict_unit_name(s->unit), s->ctas, s->ctas_per_sm,
                s->waves, s->registers, tile);
    }
}

/* The length bucket a request of len tokens runs in alone (NULL: none). */
static const predict_bucket *predict_alone(const predict_result *r, double len) {
    for (int b = 0; b < r->nbuckets; b++)
        if (!r->buckets[b].max_seqs && r->buckets[b].seq_len >= len) return &r->buckets[b];
    return NULL;
}

/*
 * Throughput at each size: a length bucket serves one request of its
 * length per modelled time (batch 1), a token bucket up to max_seqs
 * requests, its tokens, per modelled time.  A token bucket full of its
 * most requests (of seq_len / max_seqs tokens each) is compared with the
 * same requests sent one by one (each alone in the length bucket that
 * takes it), and with padding a batch to its longest request, which costs
 * every request the longest one's rows: for lengths uniform over 1..the
 * longest bucket, about half the rows are padding, so the packed rate
 * times (longest + 1) / (2 longest) is what a padded batch of the same
 * rows would compute of real tokens.
 */
static void predict_text_throughput(FILE *f, const predict_result *r) {
    double longest = 0;
    for (int b = 0; b < r->nbuckets; b++)
        if (!r->buckets[b].max_seqs) longest = r->buckets[b].seq_len;
    fprintf(f, "\nthroughput (modelled device time, no host copies):\n");
    for (int b = 0; b < r->nbuckets; b++) {
        const predict_bucket *x = &r->buckets[b];
        if (!x->max_seqs) {
            fprintf(f, "  length bucket %5d: %9.0f requests/s, %11.0f tokens/s (batch 1)\n", x->seq_len,
                    predict_per_s(x, 1), predict_per_s(x, x->seq_len));
            continue;
        }
        double mean = (double)x->seq_len / x->max_seqs, req = predict_per_s(x, x->max_seqs);
        const predict_bucket *a = predict_alone(r, mean);
        fprintf(f, "  token bucket  %5d: %9.0f requests/s, %11.0f tokens/s (%d requests of %.0f tokens)", x->seq_len,
                req, predict_per_s(x, x->seq_len), x->max_seqs, mean);
        if (a) fprintf(f, "; alone %.0f requests/s: x%.1f", predict_per_s(a, 1), req / predict_per_s(a, 1));
        if (longest > 0)
            fprintf(f, "; padded to the longest: %.0f real tokens/s", predict_per_s(x, x->seq_len) * (longest + 1) /
                                                                            (2.0 * longest));
        fputc('\n', f);
    }
}

void predict_write_text(FILE *f, const plan *p, const predict_result *r, int bucket) {
    const predict_gpu *g = r->gpu;
    fprintf(f, "modelled on %s (%s: %d SMs, %.0f MHz, %.0f GB/s, %.0f MB L2, %.0f TFLOPS dense FP16)\n", g->name,
            g->part, g->sms, g->clock_mhz, g->dram_gbs, g->l2_mb, g->tensor_tflops);
    fprintf(f, "runs the %s image %s (ptxas numbers from %s); constants: %.0f cycles per launch, efficiency %.2f%s\n",
            r->image >= 0 && p->images[r->image].kind == PLAN_IMAGE_PTX ? "PTX (JIT)" : "CUBIN",
            predict_image_name(p, r->image), predict_image_name(p, r->stats_image), r->k.launch_cycles,
            r->k.efficiency, r->k.tensor_units ? "; units=tensor (every kernel on tensor cores, as TensorRT's)" : "");
    if (plan_variant_count(p) > 1)
        fprintf(f, "runs step list %d of %d (bertc compile --tune: the list for compute capability %d.%d)\n",
                r->variant + 1, plan_variant_count(p), g->major, g->minor);
    for (int b = 0; b < r->nbuckets; b++)
        if (bucket < 0 || r->buckets[b].seq_len == bucket) predict_text_bucket(f, p, &r->buckets[b], &r->sched[b]);
    if (bucket < 0) predict_text_throughput(f, r);
}
