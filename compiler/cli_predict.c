/*
 * cli_predict — `bertc inspect PLAN --predict GPU|all [--json] [--bucket N]
 * [--svg FILE] [--model-constants K=V,...]`: the performance model
 * (predict.h) applied to a plan, as text, JSON or an SVG timeline.
 * cli_inspect.c parses the options; this file runs the model.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_predict.h"
#include "inspect.h"
#include "predict.h"

/* The bucket --svg draws: the one asked for, else 128 when the plan has
 * it, else the first. */
static int cli_predict_bucket(const plan *p, int want) {
    if (want > 0) return want;
    for (int b = 0; b < p->nbuckets; b++)
        if (p->buckets[b].seq_len == 128) return 128;
    return p->nbuckets ? p->buckets[0].seq_len : 0;
}

static int cli_predict_check(const plan *p, const cli_predict_args *a, predict_constants *k, diag *d) {
    predict_constants_default(k);
    if (a->constants && predict_constants_parse(a->constants, k, d)) return -1;
    if (strcmp(a->gpu, "all") && !predict_gpu_find(a->gpu))
        return diag_set(d, DIAG_CODE_USAGE, "--predict: unknown GPU '%s' (known: %s, or all)", a->gpu,
                        predict_gpu_names());
    if (a->svg && !strcmp(a->gpu, "all"))
        return diag_set(d, DIAG_CODE_USAGE, "--svg draws one GPU's timeline: name one with --predict");
    int found = a->bucket <= 0;
    for (int b = 0; b < p->nbuckets; b++) found |= p->buckets[b].seq_len == a->bucket;
    if (!found) {
        char list[512] = "";
        for (int b = 0; b < p->nbuckets && strlen(list) < sizeof list - 16; b++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", b ? ", " : "", p->buckets[b].seq_len);
        return diag_set(d, DIAG_CODE_USAGE, "--bucket %d: the plan's buckets are %s", a->bucket, list);
    }
    return 0;
}

/* One GPU: the model, then text or JSON, then the SVG if asked. */
static int cli_predict_one(const plan *p, const predict_gpu *g, const predict_constants *k, const cli_predict_args *a,
                           diag *d) {
    predict_result r;
    if (predict_plan(p, g, k, &r, d)) return -1;
    int bucket = a->bucket > 0 ? a->bucket : -1;
    if (a->json) predict_write_json(stdout, p, &r, bucket);
    else predict_write_text(stdout, p, &r, bucket);
    int rc = a->svg ? predict_write_svg(a->svg, p, &r, cli_predict_bucket(p, a->bucket), d) : 0;
    predict_result_free(&r);
    return rc;
}

#define CLI_PREDICT_MAX_GPUS 32 /* the table has 8 */

/* Whether GPU g runs the plan (an image for its capability); else why not, in why. */
static int cli_predict_serves(const plan *p, const predict_gpu *g, char *why, size_t cap) {
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", g->major, g->minor);
    return plan_image_select(p, arch, g->major, g->minor, why, cap) >= 0;
}

/*
 * `all` models every GPU of the table that runs the plan and names the
 * others (text: a line each after the predictions; JSON: "not_served",
 * each GPU with the reason), so a plan built for some architectures is not
 * an error; a plan no GPU of the table runs (emu alone) is one.  A GPU
 * named alone that does not run the plan is an error too.
 */
int cli_inspect_predict(const plan *p, const cli_predict_args *a) {
    diag d;
    diag_init(&d);
    predict_constants k;
    if (cli_predict_check(p, a, &k, &d)) return cli_fail(&d);
    int all = !strcmp(a->gpu, "all"), rc = 0, shown = 0, skipped = 0;
    int ngpus = predict_gpu_count() < CLI_PREDICT_MAX_GPUS ? predict_gpu_count() : CLI_PREDICT_MAX_GPUS;
    char why[CLI_PREDICT_MAX_GPUS][512];
    if (all && a->json) printf("{\"predictions\": [\n");
    for (int i = 0; i < ngpus && !rc; i++) {
        const predict_gpu *g = predict_gpu_at(i);
        if (!all && strcmp(g->name, a->gpu)) continue;
        if (all && !cli_predict_serves(p, g, why[i], sizeof why[i])) {
            skipped |= 1 << i;
            continue;
        }
        if (all && shown) printf(a->json ? ",\n" : "\n");
        rc = cli_predict_one(p, g, &k, a, &d);
        shown++;
    }
    if (all && !rc && !shown)
        rc = diag_set(&d, DIAG_CODE_INPUT, "no GPU of the model runs this plan: %s", why[0]);
    if (all && a->json && !rc) {
        printf("], \"not_served\": [");
        for (int i = 0, n = 0; i < ngpus; i++)
            if (skipped & (1 << i)) {
                printf("%s{\"gpu\": \"%s\", \"why\": ", n++ ? ", " : "", predict_gpu_at(i)->name);
                inspect_json_str(stdout, why[i]);
                printf("}");
            }
        printf("]}");
    } else if (all && !rc) {
        for (int i = 0; i < ngpus; i++)
            if (skipped & (1 << i)) printf("\nnot modelled on %s: %s\n", predict_gpu_at(i)->name, why[i]);
    }
    if (a->json && !rc) printf("\n");
    return rc ? cli_fail(&d) : 0;
}
