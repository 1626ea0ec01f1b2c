/*
 * test_emu_kernels_pool — the POOL kernel (a sentence-transformers head:
 * cls or mean pooling over the attention mask, optionally L2-normalised),
 * run on the emulated device against the plain C reference of the kind
 * (support/kref.c, written from the catalogue's formula in plan_types.h).
 *
 * What can go wrong in such a kernel, and what each case is for:
 *   - padding rows leaking in: every row >= len is NaN and its mask is 1,
 *     so a kernel that forgets the length produces NaN;
 *   - masked rows leaking in: masked rows below len are NaN too (a kernel
 *     that multiplies by the mask instead of skipping the row gets NaN);
 *   - the count: masks with zeros at random places, a single kept row, and
 *     an all-zero mask, which sentence-transformers turns into 0 / 1e-9 = 0
 *     (and Normalize into 0 / 1e-12 = 0);
 *   - the geometry: hidden sizes that give every vector width (97 forces
 *     one element, 80 and 96 16-byte vectors, 384 MiniLM's), a hidden size
 *     with more vectors than threads (two items per thread), buckets from 1
 *     to 512 so there are more row groups than rows or fewer (one kernel
 *     serves every bucket: the bucket length comes from the request), and the
 *     partial sums meet in shared memory under two schedules (warp-greedy
 *     and random: a missing barrier shows);
 *   - every storage type.
 * The output starts as NaN (an unwritten column fails) and has a canary
 * after it (a write past [hidden] fails).  Tolerances relative to the
 * largest |reference|: float32 1e-5, float16 2e-3, bfloat16 1.6e-2.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emu_build.h"
#include "emu.h"
#include "kernels.h"
#include "kimage.h"
#include "kref.h"

#define POOL_NSCHED 2
#define POOL_CANARY 64
#define POOL_MAX_CASES 64

static const emu_schedule pool_scheds[POOL_NSCHED] = {EMU_SCHEDULE_WARP_GREEDY, EMU_SCHEDULE_RANDOM};

/* How a case's mask looks below len (padding rows always have mask 1). */
typedef enum pool_mask_kind {
    POOL_MASK_ONES,
    POOL_MASK_RANDOM,          /* about a third zeros, row 0 kept */
    POOL_MASK_ONE_ROW,         /* only the last real row kept */
    POOL_MASK_ZEROS,           /* all zero: the 1e-9 clamp */
} pool_mask_kind;

typedef kimage_case pool_case;

static pool_case pool_cases[POOL_MAX_CASES];
static pool_mask_kind pool_masks[POOL_MAX_CASES];   /* per case */
static int pool_ncases;
static emu_image *pool_img;
static char pool_build_error[4400];

static void pool_add(plan_dtype dt, int bucket, int hidden, plan_pool_mode mode, int normalize, int len,
                     pool_mask_kind mask) {
    pool_masks[pool_ncases] = mask;
    pool_case *c = &pool_cases[pool_ncases++];
    *c = (pool_case){.spec = kimage_spec(KERNEL_KIND_POOL, dt, bucket), .bucket = bucket, .len = len};
    c->spec.hidden = hidden;
    c->spec.pool_mode = mode;
    c->spec.normalize = normalize;
}

static void pool_make_cases(void) {
    /* MiniLM's head in every type, real length below the bucket */
    pool_add(PLAN_DTYPE_F32, 32, 384, PLAN_POOL_MEAN, 1, 27, POOL_MASK_RANDOM);
    pool_add(PLAN_DTYPE_F16, 128, 384, PLAN_POOL_MEAN, 1, 100, POOL_MASK_RANDOM);
    pool_add(PLAN_DTYPE_BF16, 128, 384, PLAN_POOL_MEAN, 1, 77, POOL_MASK_RANDOM);
    /* without the normalisation; awkward sizes and vector widths */
    pool_add(PLAN_DTYPE_F32, 64, 96, PLAN_POOL_MEAN, 0, 50, POOL_MASK_RANDOM);
    pool_add(PLAN_DTYPE_F16, 32, 80, PLAN_POOL_MEAN, 0, 32, POOL_MASK_ONES);
    pool_add(PLAN_DTYPE_BF16, 64, 97, PLAN_POOL_MEAN, 1, 63, POOL_MASK_RANDOM);
    pool_add(PLAN_DTYPE_F32, 512, 1100, PLAN_POOL_MEAN, 1, 300, POOL_MASK_RANDOM); /* two items per thread */
    pool_add(PLAN_DTYPE_F16, 8, 16, PLAN_POOL_MEAN, 1, 5, POOL_MASK_RANDOM);       /* more row groups than rows */
    pool_add(PLAN_DTYPE_F32, 1, 96, PLAN_POOL_MEAN, 0, 1, POOL_MASK_ONES);
    /* the count's edges */
    pool_add(PLAN_DTYPE_F16, 64, 96, PLAN_POOL_MEAN, 1, 40, POOL_MASK_ONE_ROW);
    pool_add(PLAN_DTYPE_F32, 32, 96, PLAN_POOL_MEAN, 0, 20, POOL_MASK_ZEROS);
    pool_add(PLAN_DTYPE_BF16, 32, 80, PLAN_POOL_MEAN, 1, 20, POOL_MASK_ZEROS);
    /* cls */
    pool_add(PLAN_DTYPE_F32, 32, 96, PLAN_POOL_CLS, 0, 17, POOL_MASK_RANDOM);
    pool_add(PLAN_DTYPE_F16, 128, 384, PLAN_POOL_CLS, 1, 128, POOL_MASK_ONES);
    pool_add(PLAN_DTYPE_BF16, 64, 97, PLAN_POOL_CLS, 1, 1, POOL_MASK_ONES);
    pool_add(PLAN_DTYPE_F32, 32, 1100, PLAN_POOL_CLS, 1, 9, POOL_MASK_RANDOM);
}

static void *pool_image_load(const char *path, diag *d) { return emu_image_load(path, d); }

static int pool_build_image(void) {
    diag d;
    diag_init(&d);
    if (kimage_cases_generate(pool_cases, pool_ncases, pool_build_error, sizeof pool_build_error)) return -1;
    /* distinct texts only: a unit per distinct entry */
    const char *uniq[POOL_MAX_CASES];
    int nuniq = 0;
    for (int i = 0; i < pool_ncases; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= !strcmp(pool_cases[j].entry, pool_cases[i].entry);
        if (!dup) uniq[nuniq++] = pool_cases[i].text;
    }
    if (!(pool_img = kimage_build("emu_kernels_pool.so", uniq, nuniq, pool_image_load, &d))) {
        snprintf(pool_build_error, sizeof pool_build_error, "%s", d.text);
        return -1;
    }
    return 0;
}

static void pool_run_case(const pool_case *c, pool_mask_kind mask_kind) {
    const kernel_spec *s = &c->spec;
    size_t B = (size_t)c->bucket, H = (size_t)s->hidden, es = kref_dtype_size(s->dtype);
    int32_t *req = kimage_request(c->bucket, c->len);
    int32_t *mask = req + KERNEL_REQ_HEADER_WORDS + 2 * B;
    req[2] = req[3] = 0x7eadbeef; /* reserved: no kernel may depend on them */
    for (size_t r = 0; r < B; r++) {
        int keep = 1;
        if ((int)r < c->len) {
            switch (mask_kind) {
            case POOL_MASK_RANDOM: keep = r == 0 || check_rng_range(0, 2) != 0; break;
            case POOL_MASK_ONE_ROW: keep = (int)r == c->len - 1; break;
            case POOL_MASK_ZEROS: keep = 0; break;
            default: break;
            }
        }
        mask[r] = keep;
        req[KERNEL_REQ_HEADER_WORDS + r] = (int32_t)r + 100;  /* ids and types: never read */
        req[KERNEL_REQ_HEADER_WORDS + B + r] = 0;
    }
    /* rows >= len and masked rows (except row 0, which cls reads whatever its mask) are NaN */
    void *x = malloc(B * H * es);
    for (size_t r = 0; r < B; r++)
        for (size_t k = 0; k < H; k++) {
            int live = (int)r < c->len && (mask[r] || (r == 0 && s->pool_mode == PLAN_POOL_CLS));
            double m = 0.05 + 0.95 * check_rng_uniform();
            kref_store(s->dtype, x, r * H + k, live ? (float)((check_rng_u64() & 1 ? m : -m) * 2.0) : NAN);
        }
    double *want = kref_kernel(s, req, (const void *const[]){x});
    unsigned char *out = malloc(H * es + POOL_CANARY);

    diag d;
    diag_init(&d);
    emu_kernel *k = emu_image_kernel(pool_img, c->entry, &d);
    CHECK(k != NULL, "%s", d.text);
    if (k) {
        CHECK((int)emu_kernel_arg_count(k) == kernel_arg_count(KERNEL_KIND_POOL), "%s: %u arguments", c->entry,
              emu_kernel_arg_count(k));
        CHECK(c->dims.grid[0] == 1 && c->dims.grid[1] == 1 && c->dims.grid[2] == 1 && c->dims.block[0] % 32 == 0 &&
                  c->dims.block[0] <= 256 && c->dims.shared_bytes == 0,
              "%s: launch geometry", c->entry);
        void *vals[5] = {out, req, x, NULL, NULL}; /* no prefetch */
        void *args[5] = {&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]};
        double maxw = 0;
        for (size_t i = 0; i < H; i++) maxw = fabs(want[i]) > maxw ? fabs(want[i]) : maxw;
        double tol = kref_tolerance(s->dtype) * (maxw > 0 ? maxw : 1.0);
        for (int sc = 0; sc < POOL_NSCHED; sc++) {
            for (size_t i = 0; i < H; i++) kref_store(s->dtype, out, i, NAN);
            memset(out + H * es, 0x5a, POOL_CANARY);
            diag_init(&d);
            emu_status st = emu_kernel_launch(k, c->dims.grid, c->dims.block, c->dims.shared_bytes, args,
                                              pool_scheds[sc], check_rng_u64(), &d);
            CHECK(st == EMU_STATUS_OK, "%s (%s): %s", c->entry, emu_schedule_name(pool_scheds[sc]), d.text);
            if (st != EMU_STATUS_OK) continue;
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < H; i++) {
                double g = kref_load(s->dtype, out, i);
                if (!isfinite(g) || fabs(g - want[i]) > tol) {
                    if (!bad++) first = i;
                }
            }
            CHECK(bad == 0, "%s (len %d, mask %d, %s): %zu of %zu values off (tol %.3g); [%zu] = %.7g, want %.7g",
                  c->entry, c->len, (int)mask_kind, emu_schedule_name(pool_scheds[sc]), bad, H, tol, first,
                  (double)kref_load(s->dtype, out, first), want[first]);
            int canary = 1;
            for (size_t i = 0; i < POOL_CANARY; i++) canary &= out[H * es + i] == 0x5a;
            CHECK(canary, "%s: wrote past the end of its output", c->entry);
            if (mask_kind == POOL_MASK_ZEROS && s->pool_mode == PLAN_POOL_MEAN)
                for (size_t i = 0; i < H; i++)
                    CHECK(kref_load(s->dtype, out, i) == 0.0f, "%s: an all-zero mask must give 0 at [%zu]", c->entry, i);
            if (s->normalize && mask_kind != POOL_MASK_ZEROS) {
                double ss = 0;
                for (size_t i = 0; i < H; i++) ss += (double)kref_load(s->dtype, out, i) * kref_load(s->dtype, out, i);
                CHECK(fabs(sqrt(ss) - 1.0) < 4 * kref_tolerance(s->dtype), "%s: |out| = %.7g", c->entry, sqrt(ss));
            }
        }
    }
    free(out);
    free(want);
    free(x);
    free(req);
}

static void test_pool_cases(void) {
    if (!pool_img) {
        CHECK(0, "no kernel image: %s", pool_build_error);
        return;
    }
    for (int i = 0; i < pool_ncases; i++) pool_run_case(&pool_cases[i], pool_masks[i]);
}

/* The generated text starts with the template-naming comment, names its
 * parameters, and every spec field that matters changes the entry. */
static void test_pool_source(void) {
    diag d;
    diag_init(&d);
    kernel_spec s = kimage_spec(KERNEL_KIND_POOL, PLAN_DTYPE_F16, 128);
    s.hidden = 384;
    s.pool_mode = PLAN_POOL_MEAN;
    s.normalize = 1;
    char *text = NULL, *entry = NULL;
    CHECK(kernel_source(&s, &text, &entry, &d) == 0, "%s", d.text);
    if (text) {
        const char *want = "// bertc template=pool dtype=float16 bucket=any hidden=384 mode=mean normalize=1 packed=0\n";
        CHECK(!strncmp(text, want, strlen(want)), "first line: %.120s", text);
        CHECK(strstr(text, "bertc_pool<__half, 384,") != NULL, "instantiation");
        CHECK(!strcmp(entry, "bertc_pool_f16_h384_mean_l2"), "entry %s", entry);
    }
    free(text);
    free(entry);
    const char *names[4];
    char *ents[4] = {NULL};
    kernel_spec v[4] = {s, s, s, s};
    v[1].normalize = 0;
    v[2].pool_mode = PLAN_POOL_CLS;
    v[3].hidden = 392;
    for (int i = 0; i < 4; i++) {
        char *t = NULL;
        CHECK(kernel_source(&v[i], &t, &ents[i], &d) == 0, "%s", d.text);
        names[i] = ents[i] ? ents[i] : "";
        free(t);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) CHECK(strcmp(names[i], names[j]), "specs %d and %d share %s", i, j, names[i]);
    for (int i = 0; i < 4; i++) free(ents[i]);

    /* refused specs */
    kernel_spec bad = s;
    bad.hidden = 0;
    CHECK(kernel_source(&bad, &text, &entry, &d) != 0 && strstr(d.text, "hidden size 0"), "hidden 0: %s", d.text);
    bad = s;
    bad.pool_mode = PLAN_POOL_COUNT;
    diag_init(&d);
    kernel_launch_dims dims;
    CHECK(kernel_dims(&bad, 128, &dims, &d) != 0 && strstr(d.text, "pooling mode"), "mode: %s", d.text);
    /* a bucket-free kind carries no bucket */
    bad = s;
    bad.bucket = 128;
    diag_init(&d);
    CHECK(kernel_dims(&bad, 128, &dims, &d) != 0 && strstr(d.text, "bucket 128"), "bucket: %s", d.text);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    pool_make_cases();
    pool_build_image();
    CHECK_CASE(test_pool_source);
    CHECK_CASE(test_pool_cases);
    kimage_cases_free(pool_cases, pool_ncases);
    emu_image_free(pool_img);
    return check_summary();
}
