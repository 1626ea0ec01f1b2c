/*
 * test_safetensors — the safetensors reader against images the test writes.
 *
 * The tests' safetensors writer (support/stimage.c) lays out random tensors
 * (random dtypes, shapes with zero-size dimensions now and then, random
 * bytes, data in a shuffled order with gaps) behind a JSON header it prints
 * itself, not through the library; the reader must return
 * exactly those tensors, find each by name and decode every element to the
 * value an independent decoder here computes.  Half and bfloat16 conversions
 * are checked against references built from first principles: decoding by
 * ldexp over all 65536 bit patterns, encoding by searching the two nearest
 * representable values and comparing distances (ties to the even pattern);
 * the writer's own exact encoders must give every finite value its bits.
 * Hostile images — truncated at every length, lying header lengths, bad JSON,
 * bad entries, overflowing shapes, overlapping or out-of-range offsets,
 * random byte flips — must fail with a message naming the file and the
 * problem, never crash (run under ASan/UBSan via `make sanitize`).
 */
#include <float.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "half.h"
#include "safetensors.h"
#include "stimage.h"
#include "tbuf.h"

/* ---- independent references ------------------------------------------- */

static double ref_f16_value(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    double v;
    if (exp == 31) v = mant ? NAN : INFINITY;
    else if (exp == 0) v = ldexp((double)mant, -24);
    else v = ldexp(1.0 + mant / 1024.0, exp - 15);
    return sign ? -v : v;
}

static double ref_bf16_value(uint16_t h) {
    int sign = h >> 15, exp = (h >> 7) & 255, mant = h & 127;
    double v;
    if (exp == 255) v = mant ? NAN : INFINITY;
    else if (exp == 0) v = ldexp((double)mant, -133);
    else v = ldexp(1.0 + mant / 128.0, exp - 127);
    return sign ? -v : v;
}

/*
 * The nearest of the positive patterns 0..top to |x| under `value`, where
 * pattern `top` stands for the first value past the largest finite one (the
 * IEEE rule: overflow to infinity iff the exactly rounded value with an
 * unbounded exponent would exceed the largest finite number).  Patterns are
 * ordered like their values, so a binary search finds the one just below.
 * Differences are exact in double here: the two neighbours are within a
 * factor of two of x, or x is so small that it rounds to zero either way.
 */
static uint16_t ref_nearest(double ax, uint16_t top, double top_value, double (*value)(uint16_t)) {
    if (ax >= top_value) return top;
    uint16_t lo = 0, hi = top; /* value(lo) <= ax < value(hi) */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (value(mid) <= ax) lo = mid;
        else hi = mid;
    }
    double vhi = hi == top ? top_value : value(hi);
    double dlo = ax - value(lo), dhi = vhi - ax;
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1) ? hi : lo;
}

static uint16_t ref_f32_to_f16(float x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    return (uint16_t)(sign | ref_nearest(fabs((double)x), 0x7c00, 65536.0, ref_f16_value));
}

static uint16_t ref_f32_to_bf16(float x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    return (uint16_t)(sign | ref_nearest(fabs((double)x), 0x7f80, ldexp(1.0, 128), ref_bf16_value));
}

/* Equal values with equal signs, or both NaN. */
static int same_value(double got, double want) {
    if (isnan(want)) return isnan(got) && signbit(got) == signbit(want);
    return got == want && signbit(got) == signbit(want);
}

/* ---- conversions ------------------------------------------------------ */

static void test_f16_decode_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = half_f16_to_f32((uint16_t)h);
        double want = ref_f16_value((uint16_t)h);
        if (!same_value(got, want) && bad++ < 5)
            CHECK(0, "f16 0x%04x -> %.9g, expected %.9g", h, (double)got, want);
        /* A NaN keeps its payload in the top mantissa bits. */
        if (isnan(want) && ((check_f32_bits(got) >> 13) & 0x3ff) != (h & 0x3ff) && bad++ < 5)
            CHECK(0, "f16 NaN 0x%04x lost its payload: 0x%08x", h, check_f32_bits(got));
        /* Every non-NaN half survives a round trip. */
        if (!isnan(want) && half_f32_to_f16(got) != h && bad++ < 5)
            CHECK(0, "round trip 0x%04x -> 0x%04x", h, half_f32_to_f16(got));
    }
    CHECK(bad == 0, "%d mismatches", bad);
}

static void test_bf16_decode_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = half_bf16_to_f32((uint16_t)h);
        double want = ref_bf16_value((uint16_t)h);
        if (!same_value(got, want) && bad++ < 5)
            CHECK(0, "bf16 0x%04x -> %.9g, expected %.9g", h, (double)got, want);
        if (!isnan(want) && half_f32_to_bf16(got) != h && bad++ < 5)
            CHECK(0, "round trip 0x%04x -> 0x%04x", h, half_f32_to_bf16(got));
    }
    CHECK(bad == 0, "%d mismatches", bad);
}

/* The tests' writer (support/stimage.c) stores exactly the values it is
 * given: every finite float16 and bfloat16 value goes through its exact
 * encoders to its own bit pattern, so the tests that rely on it compare
 * with the numbers the file really holds. */
static void test_writer_exact_encoders(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        double v16 = ref_f16_value((uint16_t)h), vbf = ref_bf16_value((uint16_t)h);
        if (isfinite(v16) && stimage_f16_exact((float)v16) != h && bad++ < 5)
            CHECK(0, "float16 %.9g encoded as 0x%04x, expected 0x%04x", v16, stimage_f16_exact((float)v16), h);
        if (isfinite(vbf) && stimage_bf16_exact((float)vbf) != h && bad++ < 5)
            CHECK(0, "bfloat16 %.9g encoded as 0x%04x, expected 0x%04x", vbf, stimage_bf16_exact((float)vbf), h);
    }
    CHECK(bad == 0, "%d mismatches", bad);
}

/* A float drawn to cover every regime: any bit pattern, or near half range. */
static float random_float(void) {
    switch (check_rng_range(0, 3)) {
    case 0: return check_bits_f32((uint32_t)check_rng_u64());
    case 1: {
        float v = (float)ldexp(1.0 + check_rng_uniform(), (int)check_rng_range(-27, 17));
        return check_rng_range(0, 1) ? -v : v;
    }
    case 2: { /* exactly halfway between neighbouring halves, nudged or not */
        uint16_t h = (uint16_t)check_rng_range(0, 0x7bff);
        float mid = (float)((ref_f16_value(h) + ref_f16_value((uint16_t)(h + 1))) / 2);
        int nudge = (int)check_rng_range(-1, 1);
        return nudge ? nextafterf(mid, nudge > 0 ? INFINITY : 0) : mid;
    }
    default: { /* exactly halfway between neighbouring bfloat16 values */
        uint32_t u;
        do u = (uint32_t)check_rng_u64();
        while ((u & 0x7f800000u) == 0x7f800000u);
        u = (u & 0xffff0000u) | 0x8000u;
        return check_bits_f32(u + (uint32_t)check_rng_range(-1, 1));
    }
    }
}

static void test_f32_to_half_rounding(void) {
    int bad = 0;
    for (int k = 0; k < 300000; k++) {
        float x = random_float();
        if (isnan(x)) continue;
        uint16_t got = half_f32_to_f16(x), want = ref_f32_to_f16(x);
        if (got != want && bad++ < 5)
            CHECK(0, "f32->f16 %a (0x%08x): got 0x%04x, expected 0x%04x", (double)x, check_f32_bits(x), got,
                  want);
        got = half_f32_to_bf16(x);
        want = ref_f32_to_bf16(x);
        if (got != want && bad++ < 5)
            CHECK(0, "f32->bf16 %a (0x%08x): got 0x%04x, expected 0x%04x", (double)x, check_f32_bits(x),
                  got, want);
    }
    /* Every tie between neighbouring halves, both signs. */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float mid = (float)((ref_f16_value((uint16_t)h) + ref_f16_value((uint16_t)(h + 1))) / 2);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if (h == 0x7bff) even = 0x7c00; /* 65520 overflows to infinity */
        if ((half_f32_to_f16(mid) != even || half_f32_to_f16(-mid) != (even | 0x8000)) && bad++ < 5)
            CHECK(0, "tie after 0x%04x: got 0x%04x, expected 0x%04x", h, half_f32_to_f16(mid), even);
    }
    /* Special values. */
    CHECK(half_f32_to_f16(INFINITY) == 0x7c00 && half_f32_to_f16(-INFINITY) == 0xfc00, "f16 inf");
    CHECK(half_f32_to_bf16(INFINITY) == 0x7f80 && half_f32_to_bf16(-INFINITY) == 0xff80, "bf16 inf");
    CHECK(half_f32_to_f16(-0.0f) == 0x8000 && half_f32_to_bf16(-0.0f) == 0x8000, "negative zero");
    CHECK(half_f32_to_f16(65504.0f) == 0x7bff && half_f32_to_f16(nextafterf(65520.0f, 0)) == 0x7bff,
          "largest half");
    CHECK(half_f32_to_bf16(FLT_MAX) == 0x7f80, "FLT_MAX rounds up to bf16 infinity");
    for (int k = 0; k < 1000; k++) {
        uint32_t u = 0x7f800000u | (uint32_t)check_rng_range(1, 0x7fffff);
        if (check_rng_range(0, 1)) u |= 0x80000000u;
        uint16_t h = half_f32_to_f16(check_bits_f32(u)), b = half_f32_to_bf16(check_bits_f32(u));
        if ((!isnan(ref_f16_value(h)) || (h >> 15) != (u >> 31) || !isnan(ref_bf16_value(b)) ||
             (b >> 15) != (u >> 31)) &&
            bad++ < 5)
            CHECK(0, "NaN 0x%08x -> f16 0x%04x, bf16 0x%04x", u, h, b);
    }
    CHECK(bad == 0, "%d mismatches", bad);
}

/* ---- random images, written by the tests' safetensors writer ---------- */

static const char *const dtype_names[ST_DTYPE_COUNT] = {"F32", "F16", "BF16", "F64", "I64",
                                                        "I32", "I16", "I8",   "U8",  "BOOL"};
static const size_t dtype_sizes[ST_DTYPE_COUNT] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};

/* The tensors (support/stimage.h) and the image built from them. */
typedef struct wimage {
    stimage s;
    unsigned char *img;
    size_t n, header_len;
} wimage;

typedef stimage_tensor wt;

static void wimage_free(wimage *w) {
    stimage_free(&w->s);
    free(w->img);
    memset(w, 0, sizeof *w);
}

static void random_element(st_dtype dt, unsigned char *p) {
    switch (dt) {
    case ST_DTYPE_F32: {
        float v = check_rng_range(0, 3) ? (float)(check_rng_uniform() * 8 - 4) : check_bits_f32((uint32_t)check_rng_u64());
        memcpy(p, &v, 4);
        break;
    }
    case ST_DTYPE_F64: {
        double v = check_rng_uniform() * 1e6 - 5e5;
        memcpy(p, &v, 8);
        break;
    }
    case ST_DTYPE_BOOL: p[0] = (unsigned char)check_rng_range(0, 1); break;
    default: {
        uint64_t r = check_rng_u64();
        memcpy(p, &r, dtype_sizes[dt]);
        break;
    }
    }
}

/*
 * Random tensors, written in a shuffled order with random gaps, the last
 * written one ending exactly at the end of the file so every truncation
 * breaks something; sometimes with a metadata entry.
 */
static void wimage_random(wimage *w, size_t count) {
    memset(w, 0, sizeof *w);
    stimage_init(&w->s);
    for (size_t i = 0; i < count; i++) {
        char name[64];
        snprintf(name, sizeof name, "encoder.layer.%zu.%s%llx", i, check_rng_range(0, 1) ? "weight" : "bias",
                 (unsigned long long)(check_rng_u64() & 0xfff));
        st_dtype dtype = (st_dtype)check_rng_range(0, ST_DTYPE_COUNT - 1);
        int ndim = (int)check_rng_range(0, 4);
        int64_t shape[ST_MAX_DIMS];
        size_t numel = 1;
        for (int d = 0; d < ndim; d++) {
            shape[d] = check_rng_range(0, 9) == 0 ? 0 : check_rng_range(1, 6);
            numel *= (size_t)shape[d];
        }
        if (i == count - 1 && numel == 0) { /* the last one must hold data */
            ndim = 1;
            shape[0] = 3;
            numel = 3;
        }
        wt *t = stimage_add(&w->s, name, dtype, ndim, shape);
        for (size_t e = 0; e < numel; e++) random_element(t->dtype, t->bytes + e * dtype_sizes[t->dtype]);
    }
    /* Data order: a shuffle that keeps the last tensor last. */
    int *order = malloc(count * sizeof *order);
    for (size_t i = 0; i < count; i++) order[i] = (int)i;
    for (size_t i = count - 1; i > 1; i--) {
        size_t j = (size_t)check_rng_range(0, (int64_t)i - 1);
        int tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
    for (size_t k = 0; k < count; k++)
        w->s.t[order[k]].gap = check_rng_range(0, 3) == 0 ? (size_t)check_rng_range(1, 7) : 0;
    w->s.order = order;
    if (check_rng_range(0, 1)) w->s.metadata = "{\"format\": \"pt\", \"note\": \"x\"}";
    w->img = stimage_build(&w->s, &w->n, &w->header_len);
    w->s.order = NULL;
    free(order);
}

static double ref_element(const wt *t, size_t e) {
    const unsigned char *p = t->bytes + e * dtype_sizes[t->dtype];
    switch (t->dtype) {
    case ST_DTYPE_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case ST_DTYPE_F64: {
        double v;
        memcpy(&v, p, 8);
        return (float)v;
    }
    case ST_DTYPE_F16: return ref_f16_value((uint16_t)(p[0] | p[1] << 8));
    case ST_DTYPE_BF16: return ref_bf16_value((uint16_t)(p[0] | p[1] << 8));
    default: return NAN;
    }
}

/* Compare an opened file with what the writer wrote; returns mismatches. */
static int compare_with_image(const st_file *f, const wimage *w) {
    int bad = 0;
    CHECK(f->count == (size_t)w->s.count, "count %zu, expected %d", f->count, w->s.count);
    CHECK(f->header_len == w->header_len, "header_len %zu, expected %zu", f->header_len, w->header_len);
    for (size_t i = 1; i < f->count; i++)
        CHECK(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0, "tensors not sorted at %zu", i);
    for (int i = 0; i < w->s.count; i++) {
        const wt *t = &w->s.t[i];
        const st_tensor *s = st_file_find(f, t->name);
        if (!s) {
            CHECK(0, "'%s' not found", t->name);
            bad++;
            continue;
        }
        int ok = s->dtype == t->dtype && s->ndim == t->ndim && s->begin == t->begin && s->end == t->end;
        for (int d = 0; d < t->ndim; d++) ok = ok && s->shape[d] == t->shape[d];
        CHECK(ok, "'%s': dtype/shape/offsets differ", t->name);
        int64_t numel = (int64_t)(t->nbytes / dtype_sizes[t->dtype]);
        CHECK(st_tensor_numel(s) == numel, "'%s': numel %lld, expected %lld", t->name,
              (long long)st_tensor_numel(s), (long long)numel);
        CHECK(s->data == (const unsigned char *)f->map + 8 + f->header_len + t->begin,
              "'%s': data pointer not into the mapping", t->name);
        CHECK(t->nbytes == 0 || memcmp(s->data, t->bytes, t->nbytes) == 0, "'%s': bytes differ", t->name);
        if (t->dtype <= ST_DTYPE_F64) {
            for (int64_t e = 0; e < numel; e++) {
                double want = ref_element(t, (size_t)e);
                float got = weights_tensor_get_f32(&s->view, e);
                if (!same_value(got, want) && bad++ < 5)
                    CHECK(0, "'%s'[%lld] = %.9g, expected %.9g", t->name, (long long)e, (double)got, want);
            }
        } else if (numel > 0) {
            CHECK(isnan(weights_tensor_get_f32(&s->view, 0)), "'%s': integer dtype read as float", t->name);
        }
        CHECK(isnan(weights_tensor_get_f32(&s->view, -1)) && isnan(weights_tensor_get_f32(&s->view, numel)),
              "'%s': out-of-range index not NaN", t->name);
        /* Names that are not there. */
        char other[160];
        snprintf(other, sizeof other, "%sx", t->name);
        CHECK(st_file_find(f, other) == NULL, "found '%s'", other);
        snprintf(other, sizeof other, "%.*s", (int)strlen(t->name) - 1, t->name);
        CHECK(st_file_find(f, other) == NULL, "found '%s'", other);
    }
    CHECK(st_file_find(f, "") == NULL && st_file_find(f, "__metadata__") == NULL, "found junk name");
    return bad;
}

static void test_roundtrip_memory(void) {
    for (int iter = 0; iter < 200; iter++) {
        wimage w;
        wimage_random(&w, (size_t)check_rng_range(1, 12));
        st_file f;
        diag d;
        diag_init(&d);
        int rc = st_file_open_memory(&f, w.img, w.n, "mem.safetensors", &d);
        CHECK(rc == 0, "open failed: %s", d.text);
        if (rc == 0) {
            /* The reader copied the image: scribbling on ours changes nothing. */
            memset(w.img, 0, w.n);
            int bad = compare_with_image(&f, &w);
            st_file_close(&f);
            if (bad) iter = 1 << 30;
        }
        wimage_free(&w);
    }
    /* An image with no tensors is valid. */
    const char empty[] = "\x08\0\0\0\0\0\0\0{}      ";
    st_file f;
    diag d;
    diag_init(&d);
    CHECK(st_file_open_memory(&f, empty, sizeof empty - 1, "empty", &d) == 0 && f.count == 0 &&
              st_file_find(&f, "a") == NULL,
          "empty header: %s", d.text);
    st_file_close(&f);
    st_file_close(&f); /* closing twice is harmless */
}

static void test_dtype_table(void) {
    for (int t = 0; t < ST_DTYPE_COUNT; t++)
        CHECK(strcmp(st_dtype_name((st_dtype)t), dtype_names[t]) == 0 &&
                  st_dtype_size((st_dtype)t) == dtype_sizes[t],
              "dtype %d: %s %zu", t, st_dtype_name((st_dtype)t), st_dtype_size((st_dtype)t));
}

/* ---- real files ------------------------------------------------------- */

static void test_real_file(void) {
    wimage w;
    wimage_random(&w, 8);
    const char *path = check_write_temp("st_real.safetensors", w.img, w.n);
    CHECK(path != NULL, "cannot write temp file");
    if (!path) {
        wimage_free(&w);
        return;
    }
    st_file f;
    diag d;
    diag_init(&d);
    int rc = st_file_open(&f, path, &d);
    CHECK(rc == 0, "open %s: %s", path, d.text);
    if (rc == 0) {
        CHECK(strcmp(f.path, path) == 0 && f.map_len == w.n, "path/map_len");
        compare_with_image(&f, &w);
        st_file_close(&f);
    }
    unlink(path);
    wimage_free(&w);

    /* Missing file, empty path, a directory, an empty file, a short file. */
    rc = st_file_open(&f, "/nonexistent-bertc-dir/model.safetensors", &d);
    CHECK(rc == -1 && strstr(d.text, "/nonexistent-bertc-dir/model.safetensors") &&
              strstr(d.text, "cannot open") && d.code == DIAG_CODE_INPUT,
          "missing file: %s", d.text);
    rc = st_file_open(&f, "", &d);
    CHECK(rc == -1 && strstr(d.text, "empty"), "empty path: %s", d.text);
    char dir[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s", tmp && *tmp ? tmp : "/tmp");
    rc = st_file_open(&f, dir, &d);
    CHECK(rc == -1 && strstr(d.text, dir) && strstr(d.text, "not a regular file"), "directory: %s", d.text);
    path = check_write_temp("st_empty.safetensors", "", 0);
    rc = st_file_open(&f, path, &d);
    CHECK(rc == -1 && strstr(d.text, path) && strstr(d.text, "too short"), "empty file: %s", d.text);
    unlink(path);
    path = check_write_temp("st_short.safetensors", "\x02\0\0\0\0", 5);
    rc = st_file_open(&f, path, &d);
    CHECK(rc == -1 && strstr(d.text, "5 bytes, too short"), "short file: %s", d.text);
    unlink(path);
    path = check_write_temp("st_bad.safetensors", "\x04\0\0\0\0\0\0\0[1] ", 12);
    rc = st_file_open(&f, path, &d);
    CHECK(rc == -1 && strstr(d.text, path) && strstr(d.text, "expected an object"), "array header: %s",
          d.text);
    CHECK(f.map == NULL && f.tensors == NULL && f.path == NULL && f.fd == -1, "failed open left state");
    st_file_close(&f);
    unlink(path);
}

/* ---- hostile images --------------------------------------------------- */

/* Open an image made of an 8-byte length, `json` and `data_len` bytes. */
static int open_header(const char *json, size_t data_len, diag *d) {
    tbuf b = {0};
    size_t n = strlen(json);
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)n >> (8 * k));
    tbuf_put(&b, len8, 8);
    tbuf_put(&b, json, n);
    for (size_t i = 0; i < data_len; i++) {
        unsigned char c = (unsigned char)check_rng_u64();
        tbuf_put(&b, &c, 1);
    }
    st_file f;
    diag_init(d);
    int rc = st_file_open_memory(&f, b.p, b.n, "hostile.safetensors", d);
    if (rc == 0) st_file_close(&f);
    tbuf_free(&b);
    return rc;
}

typedef struct hostile {
    const char *json;
    size_t data_len;
    const char *want;   /* substring of the message; NULL: must succeed */
    const char *at;     /* the message must say "byte 8+offset of this in json" */
} hostile;

static void test_hostile_headers(void) {
#define E1(extra) "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]" extra "}}"
    const hostile cases[] = {
        {E1(""), 8, NULL, NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "header JSON", NULL},
        {"xyz", 0, "header JSON (starts at file byte 8): byte 0 (line 1, column 1): expected a value", NULL},
        {"[1,2]", 0, "header is a JSON array, expected an object", "[1,2]"},
        {"\"str\"", 0, "header is a JSON string", NULL},
        {"{\"w\":5}", 0, "tensor 'w': entry is a JSON number, expected an object", "5}"},
        {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "missing 'dtype'", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "missing 'shape'", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "missing 'data_offsets'", NULL},
        {E1(",\"foo\":1"), 8, "unknown key 'foo'", "1}}"},
        {"{\"w\":{\"dtype\":\"F8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "unknown dtype 'F8'", "\"F8\""},
        {"{\"w\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype 'f32'", NULL},
        {"{\"w\":{\"dtype\":\"F32\\u0000\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype", NULL},
        {"{\"w\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype is a JSON number", "4,"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, "shape is a JSON number", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,8]}}", 8, "shape[0] is not a non-negative integer", "-1"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2.0],\"data_offsets\":[0,8]}}", 8, "shape[1] is not", "2.0"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8, "shape[0] is not", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1e1],\"data_offsets\":[0,40]}}", 40, "shape[0] is not", NULL},
        {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, "9 dimensions, expected at most 8", NULL},
        {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1, NULL, NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,0]}}", 0, "too many elements", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,2],\"data_offsets\":[0,0]}}", 0, "too many elements", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,0]}}", 0, "shape[0] is not", NULL},
        {"{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, "too many bytes", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4,0],\"data_offsets\":[0,0]}}", 0, NULL, NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, NULL, NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "data_offsets is not a [begin, end]", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, "data_offsets is not", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{\"a\":0}}}", 8, "data_offsets is not", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,-8]}}", 8, "data_offsets[1] is not", "-8"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551608,18446744073709551616]}}", 8, "data_offsets[0] is not", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[9223372036854775800,9223372036854775807]}}", 8, "size mismatch", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[9223372036854775799,9223372036854775807]}}", 8, "beyond the data section", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "begin > end", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24, "size mismatch: dtype F32 x shape [2, 3] is 24 bytes but data_offsets [0, 20] span 20", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "beyond the data section, which is 8 bytes", NULL},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},\"v\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24, "overlaps tensor", NULL},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 10, "tensor 'b': data range [2, 4) overlaps tensor 'a' [0, 10)", NULL},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[5,5]}}", 10, NULL, NULL},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 8, "overlaps tensor", NULL},
        {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate key \"w\"", NULL},
        {"{\"__metadata__\":5}", 0, "__metadata__ is a JSON number", "5}"},
        {"{\"__metadata__\":{\"a\":\"b\",\"c\":[]}}", 0, "__metadata__ value 'c' is a JSON array", "[]"},
        {"{\"__metadata__\":{\"format\":\"pt\"}}", 0, NULL, NULL},
        {"{\"a\\u0001\\\\\":5}", 0, "tensor 'a\\x01\\x5c': entry is a JSON number", NULL},
    };
#undef E1
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const hostile *c = &cases[i];
        diag d;
        int rc = open_header(c->json, c->data_len, &d);
        if (!c->want) {
            CHECK(rc == 0, "case %zu should open: %s", i, d.text);
            continue;
        }
        CHECK(rc == -1, "case %zu opened: %s", i, c->json);
        CHECK(strncmp(d.text, "hostile.safetensors: ", 21) == 0 && d.code == DIAG_CODE_INPUT,
              "case %zu: message does not start with the file name: %s", i, d.text);
        CHECK(strstr(d.text, c->want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, d.text, c->want);
        if (c->at) {
            char want[64];
            snprintf(want, sizeof want, "byte %zu: ", 8 + (size_t)(strstr(c->json, c->at) - c->json));
            CHECK(strstr(d.text, want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, d.text, want);
        }
    }

    /* Header lengths that lie. */
    struct {
        const char *img;
        size_t len;
        const char *want;
    } raw[] = {
        {"\x10\0\0\0\0\0\0\0{}", 10, "header length 16 exceeds the 2 bytes"},
        {"\xff\xff\xff\xff\xff\xff\xff\xff{}", 10, "absurd"},
        {"\x01\xe1\xf5\x05\0\0\0\0{}", 10, "absurd"}, /* 100000001 */
        {"\0\0\0\0\0\0\0\0{}", 10, "expected a value"},
        {"\x02\0\0\0\0\0\0", 7, "7 bytes, too short"},
        {"", 0, "0 bytes, too short"},
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++) {
        st_file f;
        diag d;
        diag_init(&d);
        int rc = st_file_open_memory(&f, raw[i].img, raw[i].len, "raw.safetensors", &d);
        CHECK(rc == -1 && strstr(d.text, "raw.safetensors") && strstr(d.text, raw[i].want),
              "raw %zu: rc %d \"%s\" lacks \"%s\"", i, rc, d.text, raw[i].want);
        if (rc == 0) st_file_close(&f);
    }
}

static void test_truncation_and_flips(void) {
    wimage w;
    wimage_random(&w, 6);
    size_t full = w.n, data_at = 8 + w.header_len;
    for (size_t n = 0; n <= full; n++) {
        st_file f;
        diag d;
        diag_init(&d);
        int rc = st_file_open_memory(&f, w.img, n, "trunc.safetensors", &d);
        if (n == full) {
            CHECK(rc == 0, "full image: %s", d.text);
            if (rc == 0) st_file_close(&f);
            continue;
        }
        const char *want = n < 8 ? "too short" : n < data_at ? "exceeds" : "beyond the data section";
        CHECK(rc == -1 && strstr(d.text, "trunc.safetensors") && strstr(d.text, want),
              "length %zu of %zu: \"%s\" lacks \"%s\"", n, full, d.text, want);
        if (rc == 0) st_file_close(&f);
    }

    /* Random byte flips, mostly in the header: open cleanly or fail cleanly. */
    unsigned char *buf = malloc(full);
    int opened = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, w.img, full);
        int flips = (int)check_rng_range(1, 3);
        for (int k = 0; k < flips; k++) {
            size_t at = check_rng_range(0, 7) == 0 ? (size_t)check_rng_range(0, (int64_t)full - 1)
                                                   : (size_t)check_rng_range(8, (int64_t)data_at - 1);
            buf[at] = check_rng_range(0, 1) ? (unsigned char)check_rng_u64()
                                            : (unsigned char)"0123456789[]{},:\"-.e"[check_rng_range(0, 19)];
        }
        st_file f;
        diag d;
        diag_init(&d);
        if (st_file_open_memory(&f, buf, full, "flip.safetensors", &d) == 0) {
            opened++;
            /* Whatever opened must be internally consistent. */
            const unsigned char *lo = (const unsigned char *)f.map + 8 + f.header_len;
            const unsigned char *hi = (const unsigned char *)f.map + f.map_len;
            for (size_t i = 0; i < f.count; i++) {
                const st_tensor *t = &f.tensors[i];
                uint64_t nb = (uint64_t)st_tensor_numel(t) * st_dtype_size(t->dtype);
                CHECK(t->end - t->begin == nb && (const unsigned char *)t->data >= lo &&
                          (const unsigned char *)t->data + nb <= hi && st_file_find(&f, t->name) == t,
                      "flip %d: inconsistent tensor '%s'", iter, t->name);
                if (nb) (void)weights_tensor_get_f32(&t->view, st_tensor_numel(t) - 1);
            }
            st_file_close(&f);
        } else {
            CHECK(strncmp(d.text, "flip.safetensors", 16) == 0 && d.code != DIAG_CODE_OK,
                  "flip %d: bad message \"%s\"", iter, d.text);
        }
    }
    CHECK(opened > 0 && opened < 20000, "flips opened %d of 20000 images", opened);
    free(buf);
    wimage_free(&w);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_f16_decode_exhaustive);
    CHECK_CASE(test_bf16_decode_exhaustive);
    CHECK_CASE(test_writer_exact_encoders);
    CHECK_CASE(test_f32_to_half_rounding);
    CHECK_CASE(test_dtype_table);
    CHECK_CASE(test_roundtrip_memory);
    CHECK_CASE(test_real_file);
    CHECK_CASE(test_hostile_headers);
    CHECK_CASE(test_truncation_and_flips);
    return check_summary();
}
