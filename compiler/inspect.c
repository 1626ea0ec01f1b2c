/*
 * inspect — a plan as text or JSON (inspect.h).  Sums per bucket are taken
 * over the steps, so what is printed is exactly what the plan stores.
 */
#include <string.h>

#include "inspect.h"

#include "arch.h"
#include "kernels.h"

void inspect_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

const char *inspect_precision_name(plan_dtype t) {
    return t == PLAN_DTYPE_F16 ? "fp16" : t == PLAN_DTYPE_BF16 ? "bf16" : t == PLAN_DTYPE_F32 ? "fp32" : "?";
}

static const char *inspect_image_kind(plan_image_kind k) {
    return k == PLAN_IMAGE_CUBIN ? "cubin" : k == PLAN_IMAGE_PTX ? "ptx" : "emu";
}

/* FLOPs, minimum bytes and cuBLASLt GEMMs summed over a bucket's steps. */
static void inspect_bucket_sums(const sched_bucket *bk, double *flops, double *bytes, int *gemms) {
    *flops = *bytes = 0;
    *gemms = 0;
    for (int s = 0; s < bk->nsteps; s++) {
        *flops += bk->steps[s].flops;
        *bytes += (double)bk->steps[s].min_hbm_bytes;
        *gemms += bk->steps[s].kind == SCHED_STEP_GEMM;
    }
}

static unsigned inspect_ctas(const kernel_launch_dims *d) { return d->grid[0] * d->grid[1] * d->grid[2]; }

static void inspect_step_describe(const plan *p, const sched_step *s, char *buf, size_t cap) {
    if (s->kind == SCHED_STEP_GEMM) {
        const sched_gemm *g = &s->gemm;
        const char *ep = g->epilogue == SCHED_EPILOGUE_BIAS ? "bias" : g->epilogue == SCHED_EPILOGUE_RELU_BIAS ? "bias+relu"
                         : g->epilogue == SCHED_EPILOGUE_RELU ? "relu" : "none";
        snprintf(buf, cap, "cublasLt gemm m=%lld n=%lld k=%lld epilogue=%s%s", (long long)g->m, (long long)g->n,
                 (long long)g->k, ep, g->beta != 0 ? " +residual" : "");
    } else {
        const sched_launch *l = &s->launch;
        const kernel_spec *ks = &p->kernels[l->kernel].spec;
        int n = snprintf(buf, cap, "kernel %s grid=(%u,%u,%u) block=%u smem=%u", p->kernels[l->kernel].entry,
                         l->dims.grid[0], l->dims.grid[1], l->dims.grid[2],
                         l->dims.block[0] * l->dims.block[1] * l->dims.block[2], l->dims.shared_bytes);
        if (n > 0 && (size_t)n < cap && (ks->kind == KERNEL_KIND_GEMM_SPLITK || ks->kind == KERNEL_KIND_GEMM_LN))
            snprintf(buf + n, cap - (size_t)n, " [%s: %dx%d tiles, %d split%s, %u CTAs]", kernel_kind_name(ks->kind),
                     ks->tile_m, ks->tile_n, ks->splits, ks->splits == 1 ? "" : "s", inspect_ctas(&l->dims));
    }
}

/* The image a GPU of architecture `arch` runs (the runtime's rule), or -1. */
static int inspect_image_for(const plan *p, const char *arch) {
    int sm = arch_number(arch);
    return plan_image_select(p, arch, sm / 10, sm % 10, NULL, 0);
}

/* ------------------------------------------------------------ text */

static void inspect_text_serves(FILE *f, const plan *p) {
    fprintf(f, "\nserves (the image each GPU architecture runs):\n ");
    for (int a = 0; arch_supported_name(a); a++) {
        int i = inspect_image_for(p, arch_supported_name(a));
        const plan_image *im = i >= 0 ? &p->images[i] : NULL;
        fprintf(f, " %s -> %s%s", arch_supported_name(a), im ? im->arch : "none",
                !im ? "" : im->kind == PLAN_IMAGE_PTX ? " (PTX, JIT)" : " (CUBIN)");
        if (arch_supported_name(a + 1)) fputc(',', f);
    }
    fputc('\n', f);
}

/* The architecture number of a GPU image ("sm_86", "compute_80"); -1 for emu. */
static int inspect_image_sm(const plan_image *im) {
    return im->kind == PLAN_IMAGE_EMU ? -1 : arch_number(im->arch);
}

static void inspect_text_kernels(FILE *f, const plan *p) {
    fprintf(f, "\nkernels (registers/spill bytes/static smem per CUBIN arch; the path where the kind has a choice; "
               "-: not in that image):\n");
    for (int kx = 0; kx < p->nkernels; kx++) {
        /* records of one text (split-K GEMMs of several buckets) share
         * an entry: compiled once, one function in each image */
        int same = 0;
        while (same < kx && strcmp(p->kernels[same].entry, p->kernels[kx].entry)) same++;
        if (same < kx) fprintf(f, "  [%d] %s (the text of [%d])\n      ", kx, p->kernels[kx].entry, same);
        else fprintf(f, "  [%d] %s\n      ", kx, p->kernels[kx].entry);
        for (int i = 0; i < p->nimages; i++) {
            const plan_image *im = &p->images[i];
            const char *path = inspect_image_sm(im) > 0 ? kernel_path(&p->kernels[kx].spec, inspect_image_sm(im)) : NULL;
            if (im->kind == PLAN_IMAGE_EMU) continue;
            if (!plan_image_carries(p, i, kx)) {
                fprintf(f, " %s -", im->arch); /* not in this image: no device that loads it runs the kernel */
                continue;
            }
            if (im->kind == PLAN_IMAGE_PTX) {
                if (path) fprintf(f, " %s %s", im->arch, path);
                continue;
            }
            const plan_kernel_stats *st = &im->stats[kx];
            fprintf(f, " %s %d/%d/%d%s%s", im->arch, st->registers, st->spill_stores + st->spill_loads,
                    st->shared_static, path ? " " : "", path ? path : "");
        }
        fprintf(f, "\n");
    }
}

/* After an image that lacks some kernels: which step lists it serves and
 * how many of the plan's kernels it carries. */
static void inspect_text_carried(FILE *f, const plan *p, int i) {
    int n = 0;
    for (int kx = 0; kx < p->nkernels; kx++) n += plan_image_carries(p, i, kx);
    if (n == p->nkernels) return;
    fprintf(f, ", %d of %d kernels", n, p->nkernels);
    const char *sep = ": step list ";
    for (int v = 0; v < plan_variant_count(p); v++)
        if (plan_image_serves(p, i, v)) fprintf(f, "%s%d", sep, v + 1), sep = ", ";
    if (*sep == ':') fprintf(f, ", no device loads it");
}

static void inspect_text_bucket(FILE *f, const plan *p, const sched_bucket *bk) {
    double flops, bytes;
    int gemms;
    inspect_bucket_sums(bk, &flops, &bytes, &gemms);
    if (bk->max_seqs) fprintf(f, "\ntoken bucket %d (up to %d requests, packed):", bk->seq_len, bk->max_seqs);
    else fprintf(f, "\nbucket %d:", bk->seq_len);
    fprintf(f,
            " %d launches per %s (%d kernels, %d cuBLASLt GEMMs), %.3f GFLOP, %.3f MB minimum HBM "
            "traffic, arena %llu bytes\n",
            bk->nsteps, bk->max_seqs ? "batch" : "request", bk->nsteps - gemms, gemms, flops * 1e-9, bytes * 1e-6,
            (unsigned long long)bk->arena_bytes);
    if (bk->counter_bytes) fprintf(f, "  arrival counters %u bytes\n", bk->counter_bytes);
    for (int s = 0; s < bk->nsteps; s++) {
        char desc[256];
        inspect_step_describe(p, &bk->steps[s], desc, sizeof desc);
        fprintf(f, "  %3d %-28s %10.3f MFLOP %9.3f MB  %s\n", s, bk->steps[s].name, bk->steps[s].flops * 1e-6,
                (double)bk->steps[s].min_hbm_bytes * 1e-6, desc);
    }
}

/* Which devices variant v runs on: its capability range, and the
 * architectures bertc builds for (and the emulated device) inside it. */
static void inspect_variant_devices(const plan *p, int v, char *out, size_t cap) {
    const sched_bucket *b = plan_variant_buckets(p, v);
    int n = snprintf(out, cap, "compute capability %d.%d", b->cc_min / 10, b->cc_min % 10);
    if (b->cc_max == PLAN_CC_MAX) n += snprintf(out + n, cap - (size_t)n, " and newer");
    else if (b->cc_max != b->cc_min) n += snprintf(out + n, cap - (size_t)n, " to %d.%d", b->cc_max / 10, b->cc_max % 10);
    const char *sep = ": ";
    if (b->cc_min == 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "%sthe emulated device", sep), sep = ", ";
    for (int a = 0; arch_supported_name(a) && (size_t)n < cap; a++) {
        int cc = arch_number(arch_supported_name(a));
        if (cc >= b->cc_min && cc <= b->cc_max)
            n += snprintf(out + n, cap - (size_t)n, "%s%s", sep, arch_supported_name(a)), sep = ", ";
    }
}

static void inspect_text_buckets(FILE *f, const plan *p) {
    int nv = plan_variant_count(p);
    for (int v = 0; v < nv; v++) {
        if (nv > 1) {
            char dev[256];
            inspect_variant_devices(p, v, dev, sizeof dev);
            fprintf(f, "\nstep list %d of %d (bertc compile --tune), for %s\n", v + 1, nv, dev);
        }
        for (int b = 0; b < p->nbuckets; b++) inspect_text_bucket(f, p, &plan_variant_buckets(p, v)[b]);
    }
}

void inspect_write_text(FILE *f, const plan *p, const char *path) {
    char sha[65];
    plan_sha256(p, sha);
    fprintf(f, "plan %s: format %d, %s\n", path, PLAN_FORMAT_VERSION, p->producer);
    fprintf(f, "sha256 %s\n", sha);
    fprintf(f, "model %s: precision %s, hidden %lld, max_seq_len %lld, vocab %lld, fusion %s\n", p->model_name,
            inspect_precision_name(p->precision), (long long)p->hidden, (long long)p->max_seq_len,
            (long long)p->vocab_size, plan_fusion_name(p->fusion));
    fprintf(f, "weights %llu bytes, arena %llu bytes (largest bucket)\n", (unsigned long long)p->weights_size,
            (unsigned long long)p->arena_bytes);
    if (p->nlabels) {
        fprintf(f, "labels of logits (%d):", p->nlabels);
        for (int i = 0; i < p->nlabels; i++) fprintf(f, "%s%s", i ? ", " : " ", p->labels[i]);
        fprintf(f, "\n");
    }
    fprintf(f, "\nimages:\n");
    for (int i = 0; i < p->nimages; i++) {
        const plan_image *im = &p->images[i];
        fprintf(f, "  %-11s %-5s %8zu bytes", im->arch, inspect_image_kind(im->kind), im->size);
        inspect_text_carried(f, p, i);
        fprintf(f, "\n");
    }
    inspect_text_serves(f, p);
    inspect_text_kernels(f, p);
    inspect_text_buckets(f, p);
}

/* ------------------------------------------------------------ JSON */

static void inspect_json_serves(FILE *f, const plan *p) {
    fprintf(f, " \"serves\": {");
    int first = 1;
    for (int a = 0; arch_supported_name(a); a++) {
        int i = inspect_image_for(p, arch_supported_name(a));
        if (i < 0) continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", arch_supported_name(a));
        inspect_json_str(f, p->images[i].arch);
        first = 0;
    }
    fprintf(f, "},\n");
}

static void inspect_json_images(FILE *f, const plan *p) {
    inspect_json_serves(f, p);
    fprintf(f, " \"archs\": [");
    int first = 1;
    for (int i = 0; i < p->nimages; i++) {
        if (p->images[i].kind != PLAN_IMAGE_CUBIN) continue;
        fprintf(f, "%s", first ? "" : ", ");
        inspect_json_str(f, p->images[i].arch);
        first = 0;
    }
    fprintf(f, "],\n \"images\": [");
    for (int i = 0; i < p->nimages; i++) {
        const plan_image *im = &p->images[i];
        fprintf(f, "%s{\"arch\": ", i ? ", " : "");
        inspect_json_str(f, im->arch);
        fprintf(f, ", \"kind\": \"%s\", \"bytes\": %zu, \"kernels\": [", inspect_image_kind(im->kind), im->size);
        for (int kx = 0; kx < p->nkernels; kx++) {
            const char *path = inspect_image_sm(im) > 0 ? kernel_path(&p->kernels[kx].spec, inspect_image_sm(im)) : NULL;
            fprintf(f, "%s{\"carried\": %s, \"registers\": %d, \"spill_stores\": %d, \"spill_loads\": %d, "
                    "\"shared_static\": %d, \"path\": ", kx ? ", " : "", plan_image_carries(p, i, kx) ? "true" : "false",
                    im->stats[kx].registers, im->stats[kx].spill_stores, im->stats[kx].spill_loads,
                    im->stats[kx].shared_static);
            if (path) inspect_json_str(f, path);
            else fprintf(f, "null");
            fprintf(f, "}");
        }
        fprintf(f, "]}");
    }
}

static void inspect_json_bucket(FILE *f, const plan *p, const sched_bucket *bk, int first) {
    double flops, bytes;
    int gemms;
    inspect_bucket_sums(bk, &flops, &bytes, &gemms);
    fprintf(f,
            "%s\n  {\"seq_len\": %d, \"max_seqs\": %d, \"launches\": %d, \"flops\": %.0f, \"min_hbm_bytes\": %.0f, "
            "\"arena_bytes\": %llu, \"counter_bytes\": %u, \"steps\": [",
            first ? "" : ",", bk->seq_len, bk->max_seqs, bk->nsteps, flops, bytes, (unsigned long long)bk->arena_bytes,
            bk->counter_bytes);
    for (int s = 0; s < bk->nsteps; s++) {
        const sched_step *st = &bk->steps[s];
        fprintf(f, "%s\n   {\"name\": ", s ? "," : "");
        inspect_json_str(f, st->name);
        fprintf(f, ", \"kind\": \"%s\", ", st->kind == SCHED_STEP_GEMM ? "gemm" : "kernel");
        if (st->kind == SCHED_STEP_KERNEL) {
            const kernel_spec *ks = &p->kernels[st->launch.kernel].spec;
            fprintf(f, "\"kernel\": ");
            inspect_json_str(f, p->kernels[st->launch.kernel].entry);
            fprintf(f, ", \"template\": \"%s\", \"ctas\": %u, ", kernel_kind_name(ks->kind),
                    inspect_ctas(&st->launch.dims));
            if (ks->kind == KERNEL_KIND_GEMM_SPLITK || ks->kind == KERNEL_KIND_GEMM_LN)
                fprintf(f, "\"tile\": [%d, %d], \"splits\": %d, ", ks->tile_m, ks->tile_n, ks->splits);
        }
        fprintf(f, "\"flops\": %.0f, \"min_hbm_bytes\": %llu}", st->flops, (unsigned long long)st->min_hbm_bytes);
    }
    fprintf(f, "]}");
}

void inspect_write_json(FILE *f, const plan *p) {
    char sha[65];
    plan_sha256(p, sha);
    fprintf(f, "{\"format_version\": %d, \"sha256\": \"%s\", \"producer\": ", PLAN_FORMAT_VERSION, sha);
    inspect_json_str(f, p->producer);
    fprintf(f, ", \"model\": ");
    inspect_json_str(f, p->model_name);
    fprintf(f, ", \"precision\": \"%s\", \"fusion\": \"%s\", \"max_seq_len\": %lld, \"hidden\": %lld,\n",
            inspect_precision_name(p->precision), plan_fusion_name(p->fusion), (long long)p->max_seq_len,
            (long long)p->hidden);
    fprintf(f, " \"labels\": [");
    for (int i = 0; i < p->nlabels; i++) {
        fprintf(f, "%s", i ? ", " : "");
        inspect_json_str(f, p->labels[i]);
    }
    fprintf(f, "],\n");
    inspect_json_images(f, p);
    fprintf(f, "],\n \"weights_bytes\": %llu, \"arena_bytes\": %llu,\n \"kernels\": [",
            (unsigned long long)p->weights_size, (unsigned long long)p->arena_bytes);
    for (int kx = 0; kx < p->nkernels; kx++) {
        fprintf(f, "%s{\"entry\": ", kx ? ", " : "");
        inspect_json_str(f, p->kernels[kx].entry);
        fprintf(f, ", \"template\": \"%s\"}", kernel_kind_name(p->kernels[kx].spec.kind));
    }
    fprintf(f, "],\n \"buckets\": [");
    for (int b = 0; b < p->nbuckets; b++) inspect_json_bucket(f, p, &p->buckets[b], b == 0);
    /* a plan with several step lists (--tune): "buckets" is the first's,
     * "variants" has each one's devices and buckets */
    fprintf(f, "],\n \"variants\": [");
    for (int v = 0; plan_variant_count(p) > 1 && v < plan_variant_count(p); v++) {
        const sched_bucket *vb = plan_variant_buckets(p, v);
        char dev[256];
        inspect_variant_devices(p, v, dev, sizeof dev);
        fprintf(f, "%s{\"cc_min\": %u, \"cc_max\": %u, \"devices\": ", v ? ",\n  " : "", vb->cc_min, vb->cc_max);
        inspect_json_str(f, dev);
        fprintf(f, ", \"buckets\": [");
        for (int b = 0; b < p->nbuckets; b++) inspect_json_bucket(f, p, &vb[b], b == 0);
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
}
