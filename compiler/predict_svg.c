/*
 * predict_svg — one bucket's modelled timeline as an SVG picture
 * (`bertc inspect PLAN --predict GPU --svg FILE [--bucket N]`).
 *
 * What it shows, top to bottom: a title with the total; one swimlane per
 * kind of step (cuBLASLt GEMMs, attention, the LayerNorm family, ...),
 * where each step is a bar at the time the model starts it, preceded by a
 * hatched grey segment for its launch and tail, so the gaps between
 * dependent launches are visible as what they cost; a dark cap on the bars
 * that are math-bound (the rest are memory-bound); the memory floor (the
 * bucket's weights at full DRAM bandwidth) as a red line across the lanes;
 * a time axis in microseconds; and one stacked bar of where the time goes
 * by kind, launch and tail included, with a legend.  Every step bar is a
 * `<rect class="step">` with a `<title>` tooltip (name, microseconds,
 * bound, CTAs, unit) — the test counts them, and a browser shows them.
 *
 * Written through fileutil's atomic temporary: a failure leaves no file.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fileutil.h"
#include "predict.h"

#define SVG_W 1400
#define SVG_LEFT 150
#define SVG_RIGHT 40
#define SVG_LANE_H 30
#define SVG_LANE_GAP 8
#define SVG_TOP 84

static const char *const svg_lane_names[] = {"embed_ln", "cublaslt", "attention", "gemm", "add_ln", "pool"};
static const char *const svg_lane_colors[] = {"#b279a2", "#4c78a8", "#f58518", "#72b7b2", "#54a24b", "#e45756"};
#define SVG_NLANES 6
#define SVG_OTHER_COLOR "#9d755d"

typedef struct svg_ctx {
    FILE *f;
    double scale;                /* pixels per microsecond */
    int lane_of[SVG_NLANES + 1]; /* row of each lane (-1: absent); the last: other kinds */
    int nrows;
} svg_ctx;

static int svg_lane(const char *tmpl) {
    for (int i = 0; i < SVG_NLANES; i++)
        if (!strcmp(tmpl, svg_lane_names[i])) return i;
    return SVG_NLANES;
}

static const char *svg_color(int lane) { return lane < SVG_NLANES ? svg_lane_colors[lane] : SVG_OTHER_COLOR; }

static double svg_x(const svg_ctx *c, double us) { return SVG_LEFT + us * c->scale; }

static int svg_row_y(int row) { return SVG_TOP + row * (SVG_LANE_H + SVG_LANE_GAP); }

/* Text with XML's five characters escaped. */
static void svg_text(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else if (*s == '\'') fputs("&apos;", f);
        else fputc(*s, f);
    }
}

/* A "nice" tick spacing: 1, 2 or 5 times a power of ten, about 10 ticks. */
static double svg_tick(double total) {
    double raw = total / 10.0, p = pow(10.0, floor(log10(raw > 0 ? raw : 1.0)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void svg_head(const svg_ctx *c, const plan *p, const predict_result *r, const predict_bucket *b, int height) {
    const predict_gpu *g = r->gpu;
    fprintf(c->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"Helvetica, Arial, sans-serif\">\n"
            "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e4e4e4\"/>"
            "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#a0a0a0\" stroke-width=\"2\"/></pattern></defs>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, height, SVG_W, height);
    fprintf(c->f, "<text x=\"%d\" y=\"30\" font-size=\"19\" font-weight=\"bold\">", SVG_LEFT - 130);
    svg_text(c->f, p->model_name);
    fprintf(c->f, ", bucket %d on %s: %.0f \xc2\xb5s modelled, %d launches</text>\n", b->seq_len, g->part, b->us,
            b->launches);
    fprintf(c->f,
            "<text x=\"%d\" y=\"54\" font-size=\"12.5\" fill=\"#555\">%d SMs at %.0f MHz, %.0f GB/s, %.0f MB L2, "
            "%.0f TFLOPS dense FP16; runs the %s image; launch and tail %.0f cycles (%.2f \xc2\xb5s), efficiency %.2f; "
            "memory floor %.1f \xc2\xb5s, %.0f%% of the weights kept in L2</text>\n",
            SVG_LEFT - 130, g->sms, g->clock_mhz, g->dram_gbs, g->l2_mb, g->tensor_tflops,
            r->image >= 0 ? p->images[r->image].arch : "no", r->k.launch_cycles, r->k.launch_cycles / g->clock_mhz,
            r->k.efficiency, b->floor_us, 100.0 * b->l2_weight_share);
}

static void svg_lanes(const svg_ctx *c, double total) {
    for (int lane = 0; lane <= SVG_NLANES; lane++) {
        int row = c->lane_of[lane];
        if (row < 0) continue;
        int y = svg_row_y(row);
        fprintf(c->f,
                "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" opacity=\"0.06\"/>\n"
                "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"end\" fill=\"#333\">%s</text>\n",
                SVG_LEFT, y, total * c->scale, SVG_LANE_H, svg_color(lane), SVG_LEFT - 10, y + SVG_LANE_H / 2 + 5,
                lane < SVG_NLANES ? svg_lane_names[lane] : "other kinds");
    }
}

/* The layer a step belongs to ("layer7/ctx" -> 7), or -1. */
static int svg_layer_of(const char *name) {
    int n = -1, len = 0;
    return sscanf(name, "layer%d/%n", &n, &len) == 1 && len > 0 ? n : -1;
}

/* A faint line and a label where a new encoder layer starts, if there is room. */
static void svg_layer_mark(const svg_ctx *c, double t, int layer, double per_layer_px) {
    if (per_layer_px < 28) return;
    fprintf(c->f,
            "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#999\" stroke-width=\"0.6\"/>"
            "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" fill=\"#777\">L%d</text>\n",
            svg_x(c, t), SVG_TOP - 4, svg_x(c, t), svg_row_y(c->nrows) - SVG_LANE_GAP, svg_x(c, t) + 2, SVG_TOP - 4,
            layer);
}

/* Each step: its launch-and-tail segment, then its bar; returns the end. */
static double svg_steps(const svg_ctx *c, const plan *p, const predict_bucket *b, const sched_bucket *sb) {
    double t = 0;
    int last_layer = -1, layers = 0;
    for (int i = 0; i < b->nsteps; i++)
        if (svg_layer_of(sb->steps[i].name) > layers - 1) layers = svg_layer_of(sb->steps[i].name) + 1;
    for (int i = 0; i < b->nsteps; i++) {
        const predict_step *s = &b->steps[i];
        int layer = svg_layer_of(sb->steps[i].name);
        if (layer >= 0 && layer != last_layer) svg_layer_mark(c, t, layer, b->us * c->scale / (layers + 1));
        if (layer >= 0) last_layer = layer;
        const char *tmpl = predict_step_template(p, &sb->steps[i]);
        int lane = svg_lane(tmpl), y = svg_row_y(c->lane_of[lane]);
        double work = s->us - s->launch_us;
        fprintf(c->f, "<rect class=\"launch\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"url(#hatch)\"/>\n",
                svg_x(c, t), y + 4, s->launch_us * c->scale, SVG_LANE_H - 8);
        fprintf(c->f, "<rect class=\"step\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>",
                svg_x(c, t + s->launch_us), y, work * c->scale, SVG_LANE_H, svg_color(lane));
        svg_text(c->f, sb->steps[i].name);
        fprintf(c->f, " (%s): %.2f \xc2\xb5s = %.2f launch and tail + %.2f %s-bound; %ld CTAs, %s</title></rect>\n",
                tmpl, s->us, s->launch_us, work, s->math_us > s->memory_us ? "math" : "memory", s->ctas,
                predict_unit_name(s->unit));
        if (s->math_us > s->memory_us)
            fprintf(c->f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"5\" fill=\"#222\" opacity=\"0.55\"/>\n",
                    svg_x(c, t + s->launch_us), y, work * c->scale);
        t += s->us;
    }
    return t;
}

/* The axis under the lanes, the floor across them. */
static void svg_axis(const svg_ctx *c, const predict_bucket *b, double total, int axis_y) {
    double tick = svg_tick(total);
    fprintf(c->f, "<line x1=\"%d\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n", SVG_LEFT, axis_y,
            svg_x(c, total), axis_y);
    for (double v = 0; v <= total + 1e-9; v += tick)
        fprintf(c->f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>"
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\" stroke-dasharray=\"2,3\"/>"
                "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                svg_x(c, v), axis_y, svg_x(c, v), axis_y + 5, svg_x(c, v), SVG_TOP - 6, svg_x(c, v), axis_y,
                svg_x(c, v), axis_y + 18, v);
    fprintf(c->f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">\xc2\xb5s</text>\n",
            svg_x(c, total), axis_y + 32);
    double fx = svg_x(c, b->floor_us);
    fprintf(c->f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" stroke-width=\"2\" "
            "stroke-dasharray=\"6,4\"/>\n<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"#d62728\">memory floor "
            "%.1f \xc2\xb5s</text>\n",
            fx, SVG_TOP - 22, fx, axis_y, fx + 4, SVG_TOP - 22, b->floor_us);
}

/* Where the time goes, by kind (launch and tail apart), as one stacked bar. */
static void svg_summary(const svg_ctx *c, const plan *p, const predict_bucket *b, const sched_bucket *sb, int y) {
    double by[SVG_NLANES + 1] = {0}, launch = 0;
    for (int i = 0; i < b->nsteps; i++) {
        by[svg_lane(predict_step_template(p, &sb->steps[i]))] += b->steps[i].us - b->steps[i].launch_us;
        launch += b->steps[i].launch_us;
    }
    fprintf(c->f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"end\" fill=\"#333\">where the time "
                  "goes</text>\n", SVG_LEFT - 10, y + 17);
    double x = SVG_LEFT;
    for (int lane = -1; lane <= SVG_NLANES; lane++) {
        double us = lane < 0 ? launch : by[lane], w = us * c->scale;
        if (us <= 0) continue;
        fprintf(c->f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"24\" fill=\"%s\" stroke=\"white\"/>\n", x, y,
                w, lane < 0 ? "url(#hatch)" : svg_color(lane));
        if (w > 70)
            fprintf(c->f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11.5\" text-anchor=\"middle\" fill=\"%s\">%s %.0f "
                          "\xc2\xb5s (%.0f%%)</text>\n",
                    x + w / 2, y + 16, lane < 0 ? "#222" : "white",
                    lane < 0 ? "launch+tail" : lane < SVG_NLANES ? svg_lane_names[lane] : "other", us,
                    100.0 * us / b->us);
        x += w;
    }
}

static void svg_legend(const svg_ctx *c, int y) {
    int x = SVG_LEFT;
    for (int lane = 0; lane <= SVG_NLANES; lane++) {
        if (c->lane_of[lane] < 0) continue;
        fprintf(c->f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
                      "font-size=\"12\">%s</text>\n",
                x, y, svg_color(lane), x + 19, y + 12, lane < SVG_NLANES ? svg_lane_names[lane] : "other kinds");
        x += 120;
    }
    fprintf(c->f,
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"url(#hatch)\"/><text x=\"%d\" y=\"%d\" "
            "font-size=\"12\">launch + tail</text>\n"
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"5\" fill=\"#222\" opacity=\"0.55\"/><text x=\"%d\" y=\"%d\" "
            "font-size=\"12\">math-bound (no cap: memory-bound)</text>\n",
            x, y, x + 19, y + 12, x + 130, y + 4, x + 149, y + 12);
}

int predict_write_svg(const char *path, const plan *p, const predict_result *r, int bucket, diag *d) {
    int bi = -1;
    for (int b = 0; b < r->nbuckets; b++)
        if (r->buckets[b].seq_len == bucket) bi = b;
    if (bi < 0) return diag_set(d, DIAG_CODE_USAGE, "--bucket %d: the plan has no such bucket", bucket);
    const predict_bucket *b = &r->buckets[bi];
    const sched_bucket *sb = &r->sched[bi];
    svg_ctx c = {.scale = (SVG_W - SVG_LEFT - SVG_RIGHT) / (b->us > 0 ? b->us : 1.0)};
    for (int lane = 0; lane <= SVG_NLANES; lane++) c.lane_of[lane] = -1;
    for (int i = 0; i < sb->nsteps; i++) c.lane_of[svg_lane(predict_step_template(p, &sb->steps[i]))] = 0;
    for (int lane = 0; lane <= SVG_NLANES; lane++)
        if (c.lane_of[lane] == 0) c.lane_of[lane] = c.nrows++ + 1;
    for (int lane = 0; lane <= SVG_NLANES; lane++)
        if (c.lane_of[lane] > 0) c.lane_of[lane]--;
    int axis_y = svg_row_y(c.nrows) + 2, summary_y = axis_y + 46, legend_y = summary_y + 44, height = legend_y + 34;
    file_atomic fa;
    if (file_atomic_open(&fa, path, d)) return -1;
    c.f = fa.f;
    svg_head(&c, p, r, b, height);
    svg_lanes(&c, b->us);
    double end = svg_steps(&c, p, b, sb);
    svg_axis(&c, b, end, axis_y);
    svg_summary(&c, p, b, sb, summary_y);
    svg_legend(&c, legend_y);
    fprintf(c.f, "</svg>\n");
    return file_atomic_commit(&fa, !ferror(fa.f), d);
}
