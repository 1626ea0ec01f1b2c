/*
 * test_runtime — the runtime library's contract, on the emulated device:
 * which kernel image runs where, what one request costs in device calls,
 * that bad plans, bad requests, a missing driver and every injected device
 * or host failure give a clear status and message and leave nothing
 * allocated, and that contexts on several threads agree bit for bit with
 * one thread.
 *
 * Numerics against Hugging Face and the reference executor are in
 * test_e2e; here outputs are compared with outputs of the same plan (the
 * question is "did the runtime do the same thing", not "is it right").
 * Plans come from `make plans` (build/plans/).  The emulated device's
 * counters (bertc_emudev_get_stats) say what exists on the "device", so
 * "no leak" is checked as "every counter back to zero", and LeakSanitizer
 * (make sanitize) checks the host side.
 */
#include <pthread.h>

#include "bertc.h"
#include "bertc_debug.h"
#include "check.h"
#include "emu.h"
#include "emuctl.h"
#include "rt.h"
#include "golden.h"
#include "testreq.h"

static const emuctl *E;


static bertc_context_options emu_options(void) {
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    return o;
}

static bertc_context *make_ctx(bertc_plan *pl, const bertc_context_options *o) {
    bertc_context *c = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "context: %s (%s)", err, bertc_status_name(st));
    return c;
}

static int stats_all_zero(const char *when) {
    bertc_emudev_stats s;
    E->get_stats(&s);
    int ok = !s.live_allocations && !s.live_host_allocations && !s.live_bytes && !s.live_modules && !s.live_streams &&
             !s.live_events && !s.live_graphs && !s.live_graph_execs && !s.live_primary_retains &&
             !s.live_blaslt_objects;
    CHECK(ok,
          "%s: device objects left: %ld allocations (%ld bytes), %ld host, %ld modules, %ld streams, %ld events, "
          "%ld graphs, %ld execs, %ld primary retains, %ld cuBLASLt objects",
          when, s.live_allocations, s.live_bytes, s.live_host_allocations, s.live_modules, s.live_streams,
          s.live_events, s.live_graphs, s.live_graph_execs, s.live_primary_retains, s.live_blaslt_objects);
    return ok;
}

/* Runs a request and returns last_hidden_state (malloc'd), NULL on failure. */
static float *run_lhs(bertc_context *c, const bertc_plan *pl, const bertc_request *rq) {
    bertc_status st = bertc_infer(c, rq);
    CHECK(st == BERTC_STATUS_OK, "infer len %lld: %s", (long long)rq->len, bertc_context_error(c));
    if (st) return NULL;
    size_t n = (size_t)(rq->len * bertc_plan_hidden(pl));
    float *o = malloc(n * sizeof *o);
    st = bertc_output_read(c, bertc_plan_output_index(pl, "last_hidden_state"), o, n);
    CHECK(st == BERTC_STATUS_OK, "read: %s", bertc_context_error(c));
    return o;
}

/* ------------------------------------------------------------ image choice */

/* An independent statement of CUDA's rules for a fixed set of images: a
 * CUBIN of the same major and no newer minor, else the newest PTX not newer
 * than the device (compute_90 for Blackwell, never the compute_75 of old
 * plans when a tensor-core PTX is there). */
static void test_image_select(void) {
    plan p;
    memset(&p, 0, sizeof p);
    plan_image im[8];
    memset(im, 0, sizeof im);
    const char *arch[8] = {"sm_75", "sm_80", "sm_86", "sm_90", "compute_75", "emu", "compute_80", "compute_90"};
    plan_image_kind kind[8] = {PLAN_IMAGE_CUBIN, PLAN_IMAGE_CUBIN, PLAN_IMAGE_CUBIN, PLAN_IMAGE_CUBIN,
                               PLAN_IMAGE_PTX,   PLAN_IMAGE_EMU,   PLAN_IMAGE_PTX,   PLAN_IMAGE_PTX};
    for (int i = 0; i < 8; i++) {
        snprintf(im[i].arch, sizeof im[i].arch, "%s", arch[i]);
        im[i].kind = kind[i];
    }
    p.images = im;
    struct {
        int nimages, major, minor;
        const char *want;
    } cases[] = {{6, 7, 5, "sm_75"},       {6, 8, 0, "sm_80"},       {6, 8, 6, "sm_86"},      {6, 8, 7, "sm_86"},
                 {6, 8, 9, "sm_86"},       {6, 9, 0, "sm_90"},       {6, 10, 0, "compute_75"}, {6, 12, 0, "compute_75"},
                 {6, 7, 0, NULL},          {6, 6, 1, NULL},          {6, 0, 0, "emu"},        {7, 10, 0, "compute_80"},
                 {8, 10, 0, "compute_90"}, {8, 12, 0, "compute_90"}, {8, 9, 0, "sm_90"},      {8, 8, 9, "sm_86"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[16], why[512];
        p.nimages = cases[i].nimages;
        device_arch_name(cases[i].major, cases[i].minor, name, sizeof name);
        int got = rt_image_select(&p, name, cases[i].major, cases[i].minor, why, sizeof why);
        if (!cases[i].want) {
            CHECK(got < 0, "%d.%d: chose %s, expected none", cases[i].major, cases[i].minor, got >= 0 ? arch[got] : "");
            CHECK(strstr(why, "sm_75") && strstr(why, "compute_75 (PTX)") && strstr(why, "--arch"),
                  "%d.%d: unclear: %s", cases[i].major, cases[i].minor, why);
        } else {
            CHECK(got >= 0 && !strcmp(arch[got], cases[i].want), "%d.%d with %d images: chose %s, expected %s",
                  cases[i].major, cases[i].minor, cases[i].nimages, got >= 0 ? arch[got] : "none", cases[i].want);
        }
    }
    /* Without the PTX, a newer major has nothing; without emu, the emulated device has nothing. */
    p.nimages = 4;
    CHECK(rt_image_select(&p, "sm_100", 10, 0, NULL, 0) < 0, "sm_100 must not take an sm_90 CUBIN");
    CHECK(rt_image_select(&p, "emu", 0, 0, NULL, 0) < 0, "the emulated device took a CUBIN");
}

/* The PTX image `arch` of p holds every kernel of p, and its attention
 * kernels' bodies the tensor-core instructions (mma.sync m16n8k16,
 * ldmatrix, cp.async): what a GPU newer than the plan JIT-compiles. */
static void ptx_has_tensor_cores(const plan *p, const char *arch) {
    const plan_image *im = NULL;
    for (int i = 0; i < p->nimages; i++)
        if (p->images[i].kind == PLAN_IMAGE_PTX && !strcmp(p->images[i].arch, arch)) im = &p->images[i];
    CHECK(im != NULL, "the plan has no %s PTX", arch);
    if (!im) return;
    char *ptx = strndup((const char *)im->data, im->size);
    int attention = 0;
    for (int k = 0; ptx && k < p->nkernels; k++) {
        char head[300];
        snprintf(head, sizeof head, ".entry %s(", p->kernels[k].entry);
        const char *body = strstr(ptx, head);
        CHECK(body != NULL, "%s PTX lacks %s", arch, p->kernels[k].entry);
        if (!body || p->kernels[k].spec.kind != KERNEL_KIND_ATTENTION) continue;
        attention++;
        const char *next = strstr(body + 1, ".entry ");
        size_t n = next ? (size_t)(next - body) : strlen(body);
        char *b = strndup(body, n);
        CHECK(b && strstr(b, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") && strstr(b, "ldmatrix.sync") &&
                  strstr(b, "cp.async"),
              "%s: %s is not the tensor-core path", arch, p->kernels[k].entry);
        free(b);
    }
    CHECK(attention > 0, "no attention kernel in the plan");
    free(ptx);
}

/* The same plan through CUBIN (8.9 -> sm_86, 9.0 -> sm_90), PTX (10.0 and
 * 12.0, Blackwell -> compute_90, the newest PTX the plan carries: the
 * tensor-core path; the plan carries no compute_75) and EMU: the runtime's image choice and the module path of a GPU, with the
 * emulated device binding the CUBIN's kernels to their twins by name. */
static void test_image_paths_run(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp16");
    if (!pl) return;
    testreq r;
    testreq_random(&r, pl, 13, 1, 1);
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    float *want = c ? run_lhs(c, pl, &r.rq) : NULL;
    CHECK(c && !strcmp(bertc_context_image_kind(c), "emu"), "emulated device ran %s", c ? bertc_context_image_kind(c) : "");
    bertc_context_destroy(c);
    /* The twins are the plan's own EMU image. */
    plan raw;
    diag d;
    diag_init(&d);
    CHECK(plan_read(&raw, testreq_plan_path("tiny-bert-fp16"), &d) == 0, "%s", d.text);
    int emu_img = -1;
    for (int i = 0; i < raw.nimages; i++)
        if (raw.images[i].kind == PLAN_IMAGE_EMU) emu_img = i;
    CHECK(emu_img >= 0 && E->add_twins(raw.images[emu_img].data, raw.images[emu_img].size) == 0, "twins not accepted");
    struct {
        int major, minor;
        const char *arch, *kind;
    } gpus[] = {{8, 9, "sm_86", "cubin"}, {7, 5, "sm_75", "cubin"}, {9, 0, "sm_90", "cubin"},
                {10, 0, "compute_90", "ptx"}, {12, 0, "compute_90", "ptx"}};
    for (int g = 0; g < 5 && want; g++) {
        E->set_arch(gpus[g].major, gpus[g].minor);
        c = make_ctx(pl, &o);
        if (!c) continue;
        CHECK(!strcmp(bertc_context_image_arch(c), gpus[g].arch) && !strcmp(bertc_context_image_kind(c), gpus[g].kind),
              "%d.%d ran %s %s, expected %s %s", gpus[g].major, gpus[g].minor, bertc_context_image_arch(c),
              bertc_context_image_kind(c), gpus[g].arch, gpus[g].kind);
        float *got = run_lhs(c, pl, &r.rq);
        CHECK(got && !memcmp(got, want, (size_t)(13 * bertc_plan_hidden(pl)) * sizeof(float)),
              "%s gives other outputs than the EMU image", gpus[g].arch);
        free(got);
        bertc_context_destroy(c);
    }
    ptx_has_tensor_cores(&raw, "compute_80");
    ptx_has_tensor_cores(&raw, "compute_90");
    /* 7.0: neither a CUBIN nor the PTX runs. */
    E->set_arch(7, 0);
    bertc_context *none = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, &o, &none, err, sizeof err);
    CHECK(st == BERTC_STATUS_NO_DEVICE && !none, "7.0 gave %s", bertc_status_name(st));
    CHECK(strstr(err, "no kernel image for sm_70") && strstr(err, "sm_86") && strstr(err, testreq_plan_path("tiny-bert-fp16")),
          "unclear: %s", err);
    E->reset();
    plan_free(&raw);
    free(want);
    bertc_plan_close(pl);
    stats_all_zero("after the image paths");
}

/* ------------------------------------------------------------ plans and drivers */

static unsigned char *slurp(const char *path, size_t *n) { return (unsigned char *)check_read_file(path, n); }

static void expect_bad_plan(const unsigned char *bytes, size_t n, const char *what, const char *needle) {
    const char *path = check_write_temp("bad.plan", bytes, n);
    bertc_plan *pl = (bertc_plan *)1;
    char err[1024];
    bertc_status st = bertc_plan_open(path, &pl, err, sizeof err);
    CHECK(st == BERTC_STATUS_BAD_PLAN && pl == NULL, "%s: status %s", what, bertc_status_name(st));
    CHECK(strstr(err, path) && strstr(err, "offset 0x") && strstr(err, needle), "%s: message lacks '%s': %s", what,
          needle, err);
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void test_bad_plans(void) {
    size_t n;
    unsigned char *b = slurp(testreq_plan_path("tiny-bert-fp32"), &n);
    CHECK(b && n > 4096, "fixture plan missing");
    if (!b) return;
    char err[1024];
    bertc_plan *pl = NULL;
    CHECK(bertc_plan_open("/nonexistent/x.plan", &pl, err, sizeof err) == BERTC_STATUS_BAD_PLAN &&
              strstr(err, "/nonexistent/x.plan"),
          "missing file: %s", err);
    /* Truncated anywhere: reported as truncated. */
    for (int i = 0; i < 8; i++) {
        size_t cut = (size_t)check_rng_range(24, (int64_t)n - 1);
        expect_bad_plan(b, cut, "truncated", "truncated");
    }
    /* A flipped bit in each section is that section's checksum mismatch. */
    uint64_t tab = le64(b + 0x20);
    uint32_t count = b[0x28] | b[0x29] << 8;
    int tested = 0;
    for (uint32_t s = 0; s < count; s++) {
        const unsigned char *e = b + tab + 32u * s;
        uint64_t off = le64(e + 8), size = le64(e + 16);
        if (!size) continue;
        unsigned char *copy = malloc(n);
        memcpy(copy, b, n);
        uint64_t at = off + (uint64_t)check_rng_range(0, (int64_t)size - 1);
        copy[at] ^= (unsigned char)(1u << check_rng_range(0, 7));
        expect_bad_plan(copy, n, "bit flip", "checksum mismatch");
        free(copy);
        tested++;
    }
    CHECK(tested >= 7, "only %d non-empty sections", tested);
    /* Another format version (the version is checked before the header CRC). */
    unsigned char *v2 = malloc(n);
    memcpy(v2, b, n);
    v2[8] = PLAN_FORMAT_VERSION + 1;
    expect_bad_plan(v2, n, "a newer version", "format_version");
    free(v2);
    free(b);
}

static void test_missing_driver(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o;
    bertc_context_options_init(&o);
    bertc_context *c = NULL;
    char err[1024];
    /* A machine without libcuda.so.1 (this one) or with a missing library. */
    o.driver_library = "/nonexistent/libcuda.so.1";
    bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_NO_DEVICE && !c && strstr(err, "no CUDA driver") && strstr(err, "/nonexistent/libcuda.so.1"),
          "missing driver: %s (%s)", err, bertc_status_name(st));
    /* A library that is not a driver. */
    o.driver_library = "libm.so.6";
    st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_NO_DEVICE && strstr(err, "does not export cuInit"), "not a driver: %s", err);
    /* A driver older than the toolkit: the message says so, not which symbol it lacks. */
    o = emu_options();
    E->set_driver_version(12080);
    st = bertc_context_create(pl, &o, &c, err, sizeof err);
    E->set_driver_version(0);
    CHECK(st == BERTC_STATUS_NO_DEVICE && !c && strstr(err, "is CUDA driver 12.8; bertc needs 13.0 or newer"),
          "old driver: %s", err);
    /* Device ordinal beyond the machine's. */
    o = emu_options();
    o.device_ordinal = 3;
    st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_NO_DEVICE && strstr(err, "device 3 does not exist"), "ordinal: %s", err);
    bertc_plan_close(pl);
    stats_all_zero("after driver errors");
}

/* ------------------------------------------------------------ requests */

static void test_bad_requests(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    if (!c) { bertc_plan_close(pl); return; }
    testreq r;
    testreq_random(&r, pl, 10, 1, 1);
    struct {
        const char *what, *needle;
        bertc_status st;
    } cases[] = {{"len 0", "outside 1..64", BERTC_STATUS_BAD_REQUEST},
                 {"len 65", "outside 1..64", BERTC_STATUS_BAD_REQUEST},
                 {"id = vocab", "outside the vocabulary", BERTC_STATUS_BAD_REQUEST},
                 {"id < 0", "outside the vocabulary", BERTC_STATUS_BAD_REQUEST},
                 {"type = 2", "token_type_ids[4] = 2", BERTC_STATUS_BAD_REQUEST},
                 {"mask = 2", "attention_mask[7] = 2", BERTC_STATUS_BAD_REQUEST},
                 {"ids NULL", "input_ids is NULL", BERTC_STATUS_INVALID_ARGUMENT}};
    for (int i = 0; i < 7; i++) {
        testreq q = r;
        q.rq.input_ids = q.ids;
        q.rq.token_type_ids = q.types;
        q.rq.attention_mask = q.mask;
        if (i == 0) q.rq.len = 0;
        if (i == 1) q.rq.len = 65;
        if (i == 2) q.ids[3] = (int32_t)bertc_plan_vocab_size(pl);
        if (i == 3) q.ids[9] = -1;
        if (i == 4) q.types[4] = 2;
        if (i == 5) q.mask[7] = 2;
        if (i == 6) q.rq.input_ids = NULL;
        bertc_status st = bertc_infer(c, &q.rq);
        CHECK(st == cases[i].st && strstr(bertc_context_error(c), cases[i].needle), "%s: %s: %s", cases[i].what,
              bertc_status_name(st), bertc_context_error(c));
        float x;
        CHECK(bertc_output_read(c, 0, &x, 1) == BERTC_STATUS_INVALID_ARGUMENT, "%s: outputs readable after a failure",
              cases[i].what);
    }
    /* The context is still good, and the output size is checked. */
    float *o1 = run_lhs(c, pl, &r.rq);
    float small[4];
    CHECK(bertc_output_read(c, 0, small, 4) == BERTC_STATUS_INVALID_ARGUMENT && strstr(bertc_context_error(c), "960"),
          "short buffer: %s", bertc_context_error(c));
    free(o1);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

/* One request is one graph launch; nothing runs outside the graph. */
static void test_one_launch_per_request(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    if (!c) { bertc_plan_close(pl); return; }
    plan raw;
    diag d;
    diag_init(&d);
    plan_read(&raw, testreq_plan_path("tiny-bert-fp32"), &d);
    for (int i = 0; i < 6; i++) {
        int64_t len = check_rng_range(1, 64);
        int b = 0;
        while (raw.buckets[b].seq_len < len) b++;
        int kernels = 0, gemms = 0;
        for (int s = 0; s < raw.buckets[b].nsteps; s++) {
            kernels += raw.buckets[b].steps[s].kind == SCHED_STEP_KERNEL;
            gemms += raw.buckets[b].steps[s].kind == SCHED_STEP_GEMM;
        }
        testreq r;
        testreq_random(&r, pl, len, 1, 1);
        bertc_emudev_stats s0, s1;
        E->get_stats(&s0);
        CHECK(bertc_infer(c, &r.rq) == BERTC_STATUS_OK, "%s", bertc_context_error(c));
        E->get_stats(&s1);
        CHECK(s1.graph_launches - s0.graph_launches == 1, "len %lld: %ld graph launches", (long long)len,
              s1.graph_launches - s0.graph_launches);
        CHECK(s1.kernel_launches - s0.kernel_launches == kernels && s1.matmuls - s0.matmuls == gemms,
              "len %lld: %ld kernels and %ld matmuls ran, the bucket has %d and %d", (long long)len,
              s1.kernel_launches - s0.kernel_launches, s1.matmuls - s0.matmuls, kernels, gemms);
        CHECK(s1.copies - s0.copies == 1 + raw.buckets[b].noutputs, "len %lld: %ld copies", (long long)len,
              s1.copies - s0.copies);
    }
    plan_free(&raw);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

/* Weights are uploaded once per device, whatever the number of contexts. */
static void test_weights_shared(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o = emu_options();
    bertc_emudev_stats s0, s1, s2;
    E->get_stats(&s0);
    bertc_context *a = make_ctx(pl, &o);
    E->get_stats(&s1);
    bertc_context *b = make_ctx(pl, &o);
    E->get_stats(&s2);
    plan raw;
    diag d;
    diag_init(&d);
    plan_read(&raw, testreq_plan_path("tiny-bert-fp32"), &d);
    long first = s1.live_bytes - s0.live_bytes, second = s2.live_bytes - s1.live_bytes;
    CHECK(first - second == (long)raw.weights_size && s2.live_modules == 1,
          "first context %ld bytes, second %ld, weights %llu, modules %ld", first, second,
          (unsigned long long)raw.weights_size, s2.live_modules);
    bertc_context_destroy(a);
    /* The plan handle may go before the contexts. */
    bertc_plan_close(pl);
    bertc_context_destroy(b);
    plan_free(&raw);
    stats_all_zero("after two contexts");
}

/* tiny-bert-fp32 opened, and a device table of the emulated device of the
 * test's own (its driver calls are another CUDA user's); NULL after a
 * failed CHECK. */
static bertc_plan *plan_and_table(device_table *t) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return NULL;
    diag d;
    diag_init(&d);
    if (device_table_open(t, DEVICE_KIND_EMU, NULL, NULL, &d)) {
        CHECK(0, "%s", d.text);
        bertc_plan_close(pl);
        return NULL;
    }
    return pl;
}

/* The runtime leaves the calling thread's current CUDA context as it found
 * it (a service's own CUDA code on that thread must not find bertc's). */
static void test_current_context_restored(void) {
    device_table t;
    bertc_plan *pl = plan_and_table(&t);
    if (!pl) return;
    t.cuInit(0);
    CUcontext cur = (CUcontext)1;
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL, "a context is current before the test");
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL, "bertc_context_create left its context current");
    testreq r;
    testreq_random(&r, pl, 5, 1, 1);
    free(run_lhs(c, pl, &r.rq));
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL, "bertc_infer left its context current");
    bertc_context_destroy(c);
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL, "bertc_context_destroy left a context current");
    /* a caller whose own code made the primary context current (holding a
     * reference of its own) finds it still current after every call,
     * the destroy of the plan's last context included */
    CUdevice dev;
    CUcontext mine = NULL;
    CHECK(t.cuDeviceGet(&dev, 0) == CUDA_SUCCESS && t.cuDevicePrimaryCtxRetain(&mine, dev) == CUDA_SUCCESS &&
              t.cuCtxSetCurrent(mine) == CUDA_SUCCESS,
          "the caller's primary context");
    c = make_ctx(pl, &o);
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == mine, "bertc_context_create changed the caller's context");
    free(run_lhs(c, pl, &r.rq));
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == mine, "bertc_infer changed the caller's context");
    bertc_context_destroy(c);
    CHECK(t.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == mine,
          "bertc_context_destroy (the plan's last context) changed the caller's context to %p", (void *)cur);
    t.cuCtxSetCurrent(NULL);
    t.cuDevicePrimaryCtxRelease(dev);
    device_table_close(&t);
    bertc_plan_close(pl);
}

/* Another CUDA user of the process captures a graph on its own thread in
 * global mode (the driver's default, and PyTorch's) on a blocking stream. */
typedef struct foreign_capture {
    device_table *t;
    CUcontext ctx;
    pthread_barrier_t *barrier;
    CUresult begin_rc, end_rc;
} foreign_capture;

static void *foreign_capture_thread(void *arg) {
    foreign_capture *f = arg;
    CUstream s = NULL;
    CUgraph g = NULL;
    f->t->cuCtxSetCurrent(f->ctx);
    f->begin_rc = f->t->cuStreamCreate(&s, 0);
    if (f->begin_rc == CUDA_SUCCESS) f->begin_rc = f->t->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    pthread_barrier_wait(f->barrier);   /* capturing */
    pthread_barrier_wait(f->barrier);   /* bertc is done */
    f->end_rc = f->begin_rc == CUDA_SUCCESS ? f->t->cuStreamEndCapture(s, &g) : f->begin_rc;
    if (g) f->t->cuGraphDestroy(g);
    if (s) f->t->cuStreamDestroy(s);
    f->t->cuCtxSetCurrent(NULL);
    return NULL;
}

/* While that capture is open, a context is created (its device state with
 * it), serves a request and is destroyed: its allocations and frees are
 * neither refused nor invalidate the other capture, and nothing of it
 * touches the legacy stream, which the blocking stream's capture forbids. */
static void test_foreign_global_capture(void) {
    device_table t;
    bertc_plan *pl = plan_and_table(&t);
    if (!pl) return;
    CUdevice dev;
    CUcontext ctx = NULL;
    CHECK(t.cuInit(0) == CUDA_SUCCESS && t.cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
              t.cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS,
          "the other user's context");
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, 2);
    foreign_capture f = {&t, ctx, &barrier, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
    pthread_t th;
    pthread_create(&th, NULL, foreign_capture_thread, &f);
    pthread_barrier_wait(&barrier);
    bertc_context_options o = emu_options();
    bertc_context *c = NULL;
    char err[1024];
    bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
    CHECK(st == BERTC_STATUS_OK, "create during another thread's global capture: %s", err);
    testreq r;
    testreq_random(&r, pl, 9, 1, 1);
    if (c) free(run_lhs(c, pl, &r.rq));
    bertc_context_destroy(c);
    pthread_barrier_wait(&barrier);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&barrier);
    CHECK(f.begin_rc == CUDA_SUCCESS && f.end_rc == CUDA_SUCCESS,
          "the other thread's capture: begin %d, end %d (invalidated by bertc?)", (int)f.begin_rc, (int)f.end_rc);
    t.cuDevicePrimaryCtxRelease(dev);
    device_table_close(&t);
    bertc_plan_close(pl);
}

/* Lazy capture: a bucket's graph exists only after its first request. */
static void test_capture_on_first_use(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o = emu_options();
    o.capture_on_first_use = 1;
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    bertc_context *c = make_ctx(pl, &o);
    E->get_stats(&s1);
    CHECK(s1.live_graph_execs == s0.live_graph_execs, "graphs captured at create");
    testreq r;
    testreq_random(&r, pl, 12, 0, 0);
    float *a = run_lhs(c, pl, &r.rq);
    E->get_stats(&s1);
    CHECK(s1.live_graph_execs == s0.live_graph_execs + 1, "%ld graphs after one request", s1.live_graph_execs);
    float *b = run_lhs(c, pl, &r.rq);
    CHECK(a && b && !memcmp(a, b, 12 * 96 * sizeof(float)), "the second run of the same request differs");
    free(a);
    free(b);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

/* ------------------------------------------------------------ failures */

/* Creates a context of pl with call `fn` failing at its 1st, 2nd, ...
 * call in turn (code): each fails with status st, naming the call, and
 * leaves nothing behind; the count of failed creates. */
static int inject_create(bertc_plan *pl, const bertc_context_options *o, const char *fn, int code, bertc_status want) {
    int failures = 0;
    for (int nth = 1; nth < 400; nth++) {
        E->fail(fn, nth, code);
        bertc_context *c = NULL;
        char err[1024];
        bertc_status st = bertc_context_create(pl, o, &c, err, sizeof err);
        E->fail(fn, 0, 0);
        if (st == BERTC_STATUS_OK) {
            bertc_context_destroy(c);
            break;
        }
        failures++;
        CHECK(st == want && !c, "%s #%d: status %s", fn, nth, bertc_status_name(st));
        CHECK(strstr(err, fn) || (!strcmp(fn, "cuDevicePrimaryCtxRetain") && strstr(err, "Primary")),
              "%s #%d: the message does not name the call: %s", fn, nth, err);
        if (!stats_all_zero(fn)) break;
    }
    return failures;
}

/* Every device call the runtime makes at create, failing once at each of
 * its calls in turn: a clear status, and nothing left behind.  Two plans:
 * the default one (bertc's own GEMMs, the split-K counters; the model may
 * leave it no cuBLASLt GEMM at all) and the baseline one (cuBLASLt). */
static void test_injected_device_failures(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32"), *base = testreq_plan_open("tiny-bert-fp32-baseline");
    if (!pl || !base) {
        bertc_plan_close(pl);
        bertc_plan_close(base);
        return;
    }
    bertc_context_options o = emu_options();
    static const struct {
        const char *fn;
        int code;
        bertc_status st;
    } inj[] = {
        {"cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, BERTC_STATUS_OUT_OF_MEMORY},
        {"cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY, BERTC_STATUS_OUT_OF_MEMORY},
        {"cuMemcpyHtoDAsync", CUDA_ERROR_UNKNOWN, BERTC_STATUS_DEVICE},
        {"cuModuleLoadData", CUDA_ERROR_INVALID_IMAGE, BERTC_STATUS_DEVICE},
        {"cuModuleGetFunction", CUDA_ERROR_NOT_FOUND, BERTC_STATUS_DEVICE},
        {"cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY, BERTC_STATUS_OUT_OF_MEMORY},
        {"cuDevicePrimaryCtxRetain", CUDA_ERROR_OUT_OF_MEMORY, BERTC_STATUS_OUT_OF_MEMORY},
        {"cuStreamBeginCapture", CUDA_ERROR_UNKNOWN, BERTC_STATUS_DEVICE},
        {"cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, BERTC_STATUS_DEVICE},
        {"cuMemcpyDtoHAsync", CUDA_ERROR_INVALID_VALUE, BERTC_STATUS_DEVICE},
        {"cuStreamGetCaptureInfo", CUDA_ERROR_UNKNOWN, BERTC_STATUS_DEVICE},
        {"cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, BERTC_STATUS_DEVICE},
        {"cuGraphMemcpyNodeGetParams", CUDA_ERROR_INVALID_VALUE, BERTC_STATUS_DEVICE},
        {"cuGraphInstantiate", CUDA_ERROR_OUT_OF_MEMORY, BERTC_STATUS_OUT_OF_MEMORY},
        {"cublasLtCreate", CUBLAS_STATUS_ALLOC_FAILED, BERTC_STATUS_OUT_OF_MEMORY},
        {"cublasLtMatmulDescCreate", CUBLAS_STATUS_ALLOC_FAILED, BERTC_STATUS_OUT_OF_MEMORY},
        {"cublasLtMatrixLayoutCreate", CUBLAS_STATUS_ALLOC_FAILED, BERTC_STATUS_OUT_OF_MEMORY},
        {"cublasLtMatmulPreferenceCreate", CUBLAS_STATUS_ALLOC_FAILED, BERTC_STATUS_OUT_OF_MEMORY},
        {"cublasLtMatmulAlgoGetHeuristic", CUBLAS_STATUS_NOT_SUPPORTED, BERTC_STATUS_DEVICE},
        {"cublasLtMatmul", CUBLAS_STATUS_EXECUTION_FAILED, BERTC_STATUS_DEVICE},
    };
    for (size_t i = 0; i < sizeof inj / sizeof inj[0]; i++) {
        int failures = inject_create(pl, &o, inj[i].fn, inj[i].code, inj[i].st);
        failures += inject_create(base, &o, inj[i].fn, inj[i].code, inj[i].st);
        CHECK(failures >= 1, "%s was never called at create", inj[i].fn);
    }
    bertc_plan_close(base);
    /* At request time: a failed launch is reported, and the next request works. */
    bertc_context *c = make_ctx(pl, &o);
    testreq r;
    testreq_random(&r, pl, 20, 1, 1);
    E->fail("cuGraphLaunch", 1, CUDA_ERROR_LAUNCH_FAILED);
    CHECK(bertc_infer(c, &r.rq) == BERTC_STATUS_DEVICE && strstr(bertc_context_error(c), "cuGraphLaunch"),
          "graph launch failure: %s", bertc_context_error(c));
    float *a = run_lhs(c, pl, &r.rq);
    free(a);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    stats_all_zero("after injections");
}

/* Each host allocation of plan open and context create fails in turn. */
static void test_host_alloc_failures(void) {
    bertc_context_options o = emu_options();
    int failures = 0;
    for (long nth = 1; nth < 2000; nth++) {
        rt_debug_fail_host_alloc(nth);
        bertc_plan *pl = NULL;
        bertc_context *c = NULL;
        char err[1024];
        bertc_status st = bertc_plan_open(testreq_plan_path("tiny-bert-fp32"), &pl, err, sizeof err);
        if (st == BERTC_STATUS_OK) st = bertc_context_create(pl, &o, &c, err, sizeof err);
        rt_debug_fail_host_alloc(0);
        bertc_context_destroy(c);
        bertc_plan_close(pl);
        if (st == BERTC_STATUS_OK) break;
        failures++;
        CHECK(st == BERTC_STATUS_OUT_OF_MEMORY && strstr(err, "out of memory"), "host allocation #%ld: %s: %s", nth,
              bertc_status_name(st), err);
        if (!stats_all_zero("host allocation failure")) break;
    }
    CHECK(failures >= 5, "only %d host allocations at create", failures);
}

/* Random requests of the given lengths and their last_hidden_state on the
 * plan's EMU image; returns the context (the caller destroys it). */
static bertc_context *emu_wants(bertc_plan *pl, const int64_t *lens, int n, testreq *r, float **want) {
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    for (int i = 0; c && i < n; i++) {
        testreq_random(&r[i], pl, lens[i], 1, 1);
        want[i] = run_lhs(c, pl, &r[i].rq);
    }
    return c;
}

/* ------------------------------------------------------------ step lists per capability */

static int add_plan_twins(const char *name);

/* tiny-bert-fp16 compiled with --tune all carries a step list per compute
 * capability (plan.h, variants).  Claiming each capability the plan has
 * one for, the emulated device runs that one (bertc_debug_variant, as
 * plan_variant_for says) through the CUBIN or PTX the capability selects;
 * every step keeps its launch contract and the outputs are the untuned
 * plan's within the fp16 tolerance (other tilings round otherwise). */
static void test_tuned_variants(void) {
    enum { NREQ = 3 };
    static const int64_t lens[NREQ] = {3, 16, 61};
    static const int claims[][2] = {{0, 0}, {7, 5}, {8, 6}, {8, 9}, {9, 0}, {10, 0}};
    bertc_plan *pl = testreq_plan_open("tiny-bert-tuned-fp16"), *ref = testreq_plan_open("tiny-bert-fp16");
    plan raw;
    diag d;
    diag_init(&d);
    CHECK_REQUIRE(pl && ref && plan_read(&raw, testreq_plan_path("tiny-bert-tuned-fp16"), &d) == 0, "%s", d.text);
    CHECK(raw.nvariants >= 3, "tiny-bert --tune all: %d step lists", raw.nvariants);
    testreq r[NREQ];
    float *want[NREQ] = {0};
    bertc_context_options o = emu_options();
    bertc_context *c = emu_wants(ref, lens, NREQ, r, want);
    bertc_context_destroy(c);
    unsigned seen = 0;
    for (size_t a = 0; a < sizeof claims / sizeof claims[0] && add_plan_twins("tiny-bert-tuned-fp16") == 0; a++) {
        E->set_arch(claims[a][0], claims[a][1]);
        if (!(c = make_ctx(pl, &o))) continue;
        int v = bertc_debug_variant(c);
        seen |= 1u << v;
        CHECK(v == plan_variant_for(&raw, claims[a][0], claims[a][1]), "%d.%d ran step list %d", claims[a][0],
              claims[a][1], v);
        for (int i = 0; i < NREQ; i++) {
            const sched_bucket *bk = plan_variant_buckets(&raw, v);
            while (bk->seq_len < lens[i]) bk++;
            CHECK(bertc_debug_step_count(c, lens[i]) == bk->nsteps, "%d.%d: step count", claims[a][0], claims[a][1]);
            float *got = run_lhs(c, pl, &r[i].rq);
            if (got && want[i])
                golden_compare("tuned variant", got, want[i], lens[i], bertc_plan_hidden(pl), golden_tolerance("fp16"), 0);
            free(got);
            CHECK(bertc_debug_check_steps(c, &r[i].rq) == BERTC_STATUS_OK, "%d.%d len %lld: %s", claims[a][0],
                  claims[a][1], (long long)lens[i], bertc_context_error(c));
        }
        bertc_context_destroy(c);
        E->reset();
    }
    CHECK(seen == (1u << raw.nvariants) - 1, "step lists run: 0x%x of %d", seen, raw.nvariants);
    for (int i = 0; i < NREQ; i++) free(want[i]);
    plan_free(&raw);
    bertc_plan_close(pl);
    bertc_plan_close(ref);
}

/* ------------------------------------------------------------ overlap: PDL, copies, algorithms, steps */

/* The plan's own EMU image as twins of its CUBIN/PTX kernels. */
static int add_plan_twins(const char *name) {
    plan raw;
    diag d;
    diag_init(&d);
    if (plan_read(&raw, testreq_plan_path(name), &d) != 0) {
        CHECK(0, "%s", d.text);
        return -1;
    }
    int ok = 0;
    for (int i = 0; i < raw.nimages; i++)
        if (raw.images[i].kind == PLAN_IMAGE_EMU) ok = E->add_twins(raw.images[i].data, raw.images[i].size) == 0;
    plan_free(&raw);
    CHECK(ok, "%s: no EMU image accepted as twins", name);
    return ok ? 0 : -1;
}

/* Kernel steps of the bucket of a request of len that follow a kernel step. */
static int kernel_edges(const char *name, int64_t len) {
    plan raw;
    diag d;
    diag_init(&d);
    if (plan_read(&raw, testreq_plan_path(name), &d) != 0) return -1;
    int b = 0, n = 0;
    while (raw.buckets[b].seq_len < len) b++;
    for (int s = 1; s < raw.buckets[b].nsteps; s++)
        n += raw.buckets[b].steps[s].kind == SCHED_STEP_KERNEL && raw.buckets[b].steps[s - 1].kind == SCHED_STEP_KERNEL;
    plan_free(&raw);
    return n;
}

/* A real plan on a claimed sm_90 runs its sm_90 CUBIN with programmatic
 * edges between its kernels (each dependent's pre-wait part before its
 * predecessor): the outputs are bit for bit those of the EMU image, every
 * kernel-to-kernel edge overlapped and its held block parked in its wait.
 * options.pdl = 0 and an sm_86 CUBIN launch plainly; the compute_90 PTX
 * on 10.0 (griddepcontrol inside) overlaps. */
static void test_programmatic_launch_plan(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp16");
    if (!pl) return;
    enum { NREQ = 4 };
    static const int64_t lens[NREQ] = {5, 16, 40, 64};
    testreq r[NREQ];
    float *want[NREQ] = {0};
    bertc_context_options o = emu_options();
    bertc_context *c = emu_wants(pl, lens, NREQ, r, want);
    CHECK(c && !bertc_context_programmatic_launch(c), "the EMU image ran programmatically");
    bertc_context_destroy(c);
    if (add_plan_twins("tiny-bert-fp16") != 0) goto done;
    E->set_arch(9, 0);
    for (int pass = 0; pass < 3; pass++) {
        o = emu_options();
        o.pdl = pass != 2;
        if (pass == 1) E->set_schedule(EMU_SCHEDULE_RANDOM, check_rng_u64());
        if (!(c = make_ctx(pl, &o))) continue;
        CHECK(!strcmp(bertc_context_image_arch(c), "sm_90") && bertc_context_programmatic_launch(c) == o.pdl,
              "pass %d: image %s, programmatic %d", pass, bertc_context_image_arch(c), bertc_context_programmatic_launch(c));
        for (int i = 0; i < NREQ; i++) {
            bertc_emudev_stats s0, s1;
            E->get_stats(&s0);
            float *got = run_lhs(c, pl, &r[i].rq);
            E->get_stats(&s1);
            int edges = kernel_edges("tiny-bert-fp16", lens[i]);
            CHECK(got && want[i] && !memcmp(got, want[i], (size_t)(lens[i] * bertc_plan_hidden(pl)) * sizeof(float)),
                  "pass %d, len %lld: outputs differ from the EMU image's", pass, (long long)lens[i]);
            CHECK(s1.prefetches > s0.prefetches, "pass %d, len %lld: no kernel prefetched the next step's weights", pass,
                  (long long)lens[i]);
            CHECK(edges > 0 && s1.programmatic_overlapped - s0.programmatic_overlapped == (o.pdl ? edges : 0) &&
                      (s1.parked_waits > s0.parked_waits) == o.pdl,
                  "pass %d, len %lld: %ld edges overlapped (%d kernel-to-kernel), %ld threads parked", pass,
                  (long long)lens[i], s1.programmatic_overlapped - s0.programmatic_overlapped, edges,
                  s1.parked_waits - s0.parked_waits);
            free(got);
        }
        bertc_context_destroy(c);
    }
    /* the image decides: an sm_86 CUBIN on 8.9 launches plainly; the
     * compute_90 PTX a 10.0 GPU JITs has griddepcontrol, so it overlaps */
    static const int archs[2][2] = {{8, 9}, {10, 0}};
    for (int a = 0; a < 2; a++) {
        E->set_arch(archs[a][0], archs[a][1]);
        o = emu_options();
        if (!(c = make_ctx(pl, &o))) continue;
        CHECK(bertc_context_programmatic_launch(c) == (a == 1), "%s image on %d.%d: programmatic %d",
              bertc_context_image_arch(c), archs[a][0], archs[a][1], bertc_context_programmatic_launch(c));
        bertc_context_destroy(c);
    }
    /* a failing cuLaunchKernelEx at capture fails the create cleanly */
    E->set_arch(9, 0);
    for (int nth = 1; nth < 4; nth++) {
        E->fail("cuLaunchKernelEx", nth, CUDA_ERROR_INVALID_VALUE);
        bertc_context *bad = NULL;
        char err[1024];
        bertc_status st = bertc_context_create(pl, &o, &bad, err, sizeof err);
        E->fail("cuLaunchKernelEx", 0, 0);
        CHECK(st == BERTC_STATUS_DEVICE && !bad && strstr(err, "cuLaunchKernelEx"), "cuLaunchKernelEx #%d: %s", nth, err);
    }
done:
    E->reset();
    for (int i = 0; i < NREQ; i++) free(want[i]);
    bertc_plan_close(pl);
    stats_all_zero("after programmatic launches");
}

/* Bytes copied back per request: the request's rows of a per-token output
 * (not the bucket's), and only the outputs the context selected. */
static void test_copy_back(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    int64_t H = bertc_plan_hidden(pl);
    int lhs = bertc_plan_output_index(pl, "last_hidden_state"), pooled = bertc_plan_output_index(pl, "pooler_output");
    CHECK(lhs >= 0 && pooled >= 0 && bertc_plan_output_count(pl) == 2, "tiny-bert's outputs");
    bertc_context_options o = emu_options();
    bertc_context *all = make_ctx(pl, &o);
    o.outputs = " pooler_output ";
    bertc_context *one = make_ctx(pl, &o);
    static const int64_t lens[5] = {3, 11, 11, 16, 40};
    for (int i = 0; all && one && i < 5; i++) {
        testreq r;
        testreq_random(&r, pl, lens[i], 1, 1);
        bertc_emudev_stats s0, s1, s2;
        E->get_stats(&s0);
        float *a = run_lhs(all, pl, &r.rq);
        E->get_stats(&s1);
        CHECK(bertc_infer(one, &r.rq) == BERTC_STATUS_OK, "%s", bertc_context_error(one));
        E->get_stats(&s2);
        CHECK(s1.bytes_to_host - s0.bytes_to_host == (lens[i] * H + H) * 4,
              "len %lld: %ld bytes copied back, expected %lld", (long long)lens[i], s1.bytes_to_host - s0.bytes_to_host,
              (long long)((lens[i] * H + H) * 4));
        CHECK(s2.bytes_to_host - s1.bytes_to_host == H * 4, "pooled only: %ld bytes", s2.bytes_to_host - s1.bytes_to_host);
        float *pa = malloc((size_t)H * sizeof *pa), *pb = malloc((size_t)H * sizeof *pb);
        CHECK(bertc_output_read(all, pooled, pa, (size_t)H) == BERTC_STATUS_OK &&
                  bertc_output_read(one, pooled, pb, (size_t)H) == BERTC_STATUS_OK && !memcmp(pa, pb, (size_t)H * 4),
              "len %lld: the pooled-only context's pooler_output differs", (long long)lens[i]);
        CHECK(bertc_output_read(one, lhs, a, (size_t)(lens[i] * H)) == BERTC_STATUS_INVALID_ARGUMENT &&
                  strstr(bertc_context_error(one), "not copied back"),
              "an unselected output was readable: %s", bertc_context_error(one));
        free(a), free(pa), free(pb);
    }
    bertc_context_destroy(all);
    bertc_context_destroy(one);
    /* names that are not outputs */
    static const char *const bad[2] = {"pooler_output,nope", " , "};
    for (int i = 0; i < 2; i++) {
        o.outputs = bad[i];
        bertc_context *c = NULL;
        char err[1024];
        CHECK(bertc_context_create(pl, &o, &c, err, sizeof err) == BERTC_STATUS_INVALID_ARGUMENT && !c &&
                  strstr(err, "options.outputs"),
              "outputs '%s': %s", bad[i], err);
    }
    /* a failing resize is reported, and the next request works */
    o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    testreq r;
    testreq_random(&r, pl, 7, 1, 1);
    E->fail("cuGraphExecMemcpyNodeSetParams", 1, CUDA_ERROR_INVALID_VALUE);
    CHECK(bertc_infer(c, &r.rq) == BERTC_STATUS_DEVICE && strstr(bertc_context_error(c), "cuGraphExecMemcpyNodeSetParams"),
          "resize failure: %s", bertc_context_error(c));
    E->fail("cuGraphExecMemcpyNodeSetParams", 0, 0);
    free(run_lhs(c, pl, &r.rq));
    bertc_context_destroy(c);
    bertc_plan_close(pl);
    stats_all_zero("after the copy-back cases");
}

/* The algorithm kept for each GEMM step of every bucket, in order, into
 * out[0..cap); the number of GEMM steps. */
static int gemm_choices(const bertc_context *c, int *out, int cap) {
    int n = 0;
    for (int b = 0; b < c->plan->p.nbuckets; b++)
        for (int s = 0; s < c->dev->buckets[b].nsteps; s++)
            if (c->dev->buckets[b].steps[s].kind == SCHED_STEP_GEMM) {
                if (n < cap) out[n] = c->gemms[b][s].chosen;
                n++;
            }
    return n;
}

/* The timed choice is the device's, not the context's: with the third
 * candidate made clearly the fastest, the first context keeps it for every
 * GEMM, and a second context created while the first lives times nothing
 * and keeps the same (so both give a request the same bits); once both
 * are gone the next one times again.  Candidates within RT_TIME_MARGIN of
 * the heuristic's first do not displace it (not tested: the emulated
 * device's timings are CPU times, too noisy for a 3% edge). */
static void test_algorithm_shared(bertc_plan *pl, const testreq *r) {
    bertc_context_options o = emu_options();
    E->set_algorithms(3);
    E->set_algorithm_delay(0, 1500);
    E->set_algorithm_delay(1, 1500);
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    bertc_context *a = make_ctx(pl, &o);
    E->get_stats(&s1);
    CHECK(s1.matmuls > s0.matmuls, "the first context timed nothing");
    int ca[256], cb[256], n = a ? gemm_choices(a, ca, 256) : 0;
    CHECK(n > 0 && n <= 256, "%d GEMM steps", n);
    for (int i = 0; i < n && i < 256; i++) CHECK(ca[i] == 2, "GEMM %d kept candidate %d, not the fastest (2)", i, ca[i]);
    E->set_algorithm_delay(2, 5000);   /* now the slowest: a second timing would choose otherwise */
    E->get_stats(&s0);
    bertc_context *b = make_ctx(pl, &o);
    E->get_stats(&s1);
    CHECK(s1.matmuls == s0.matmuls, "the second context ran %ld matmuls at create", s1.matmuls - s0.matmuls);
    CHECK(b && gemm_choices(b, cb, 256) == n && !memcmp(ca, cb, (size_t)(n < 256 ? n : 256) * sizeof *ca),
          "the second context chose otherwise");
    float *ya = a ? run_lhs(a, pl, &r->rq) : NULL, *yb = b ? run_lhs(b, pl, &r->rq) : NULL;
    CHECK(ya && yb && !memcmp(ya, yb, (size_t)(r->rq.len * bertc_plan_hidden(pl)) * sizeof(float)),
          "two contexts gave one request different bits");
    free(ya);
    free(yb);
    bertc_context_destroy(a);
    bertc_context_destroy(b);
    bertc_context *c = make_ctx(pl, &o);   /* the device state went with the last context */
    n = c ? gemm_choices(c, cb, 256) : 0;
    for (int i = 0; i < n && i < 256; i++) CHECK(cb[i] != 2, "GEMM %d kept the now slowest candidate", i);
    bertc_context_destroy(c);
    E->set_algorithm_delay(0, 0);
    E->set_algorithm_delay(1, 0);
    E->set_algorithm_delay(2, 0);
}

/* With several cuBLASLt candidates the context times them at create (a
 * failing candidate is dropped, a failing event fails the create cleanly)
 * and computes what the heuristic's first computes. */
static void test_algorithm_timing(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-bf16-baseline"); /* its dense layers run on cuBLASLt */
    if (!pl) return;
    testreq r;
    testreq_random(&r, pl, 30, 1, 1);
    bertc_context_options o = emu_options();
    o.time_algorithms = 0;
    E->set_algorithms(3);
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    bertc_context *plain = make_ctx(pl, &o);
    E->get_stats(&s1);
    CHECK(s1.matmuls == s0.matmuls, "time_algorithms = 0 ran %ld matmuls at create", s1.matmuls - s0.matmuls);
    float *want = plain ? run_lhs(plain, pl, &r.rq) : NULL;
    bertc_context_destroy(plain);
    o.time_algorithms = 1;
    E->get_stats(&s0);
    E->fail("cublasLtMatmul", 2, CUBLAS_STATUS_EXECUTION_FAILED);   /* the second candidate's untimed run */
    bertc_context *timed = make_ctx(pl, &o);
    E->fail("cublasLtMatmul", 0, 0);
    E->get_stats(&s1);
    CHECK(s1.matmuls > s0.matmuls, "no candidate was timed");
    float *got = timed ? run_lhs(timed, pl, &r.rq) : NULL;
    CHECK(got && want && !memcmp(got, want, (size_t)(30 * bertc_plan_hidden(pl)) * sizeof(float)),
          "the timed choice computes something else");
    free(got);
    free(want);
    bertc_context_destroy(timed);
    test_algorithm_shared(pl, &r);
    static const char *const calls[3] = {"cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime"};
    for (int i = 0; i < 3; i++) {
        E->fail(calls[i], 1, CUDA_ERROR_LAUNCH_FAILED);
        bertc_context *c = NULL;
        char err[1024];
        bertc_status st = bertc_context_create(pl, &o, &c, err, sizeof err);
        E->fail(calls[i], 0, 0);
        CHECK(st == BERTC_STATUS_DEVICE && !c && strstr(err, "timing cuBLASLt") && strstr(err, calls[i]), "%s: %s",
              calls[i], err);
    }
    E->reset();
    bertc_plan_close(pl);
    stats_all_zero("after timing cuBLASLt");
}

/* bertc_debug_time_steps runs a bucket's steps one by one and names them;
 * afterwards there is nothing to read, and the next request is right. */
static void test_per_step_times(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-fp32");
    if (!pl) return;
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    if (!c) {
        bertc_plan_close(pl);
        return;
    }
    testreq r;
    testreq_random(&r, pl, 12, 1, 1);
    float *want = run_lhs(c, pl, &r.rq);
    int n = bertc_debug_step_count(c, 12);
    plan raw;
    diag d;
    diag_init(&d);
    CHECK(plan_read(&raw, testreq_plan_path("tiny-bert-fp32"), &d) == 0 && n == raw.buckets[1].nsteps && n > 0,
          "%d steps, the 16 bucket has %d", n, raw.buckets[1].nsteps);
    bertc_step_time *t = calloc((size_t)n, sizeof *t);
    bertc_emudev_stats s0, s1;
    E->get_stats(&s0);
    CHECK(bertc_debug_time_steps(c, &r.rq, 3, t, n) == BERTC_STATUS_OK, "%s", bertc_context_error(c));
    E->get_stats(&s1);
    int kernels = 0, gemms = 0;
    for (int i = 0; i < n; i++) {
        const sched_step *st = &raw.buckets[1].steps[i];
        kernels += st->kind == SCHED_STEP_KERNEL;
        gemms += st->kind == SCHED_STEP_GEMM;
        CHECK(t[i].name && !strcmp(t[i].name, st->name) &&
                  !strcmp(t[i].kind, st->kind == SCHED_STEP_GEMM ? "gemm" : "kernel") && t[i].us_min >= 0 &&
                  t[i].us_median >= t[i].us_min,
              "step %d: %s %s %.3f/%.3f us", i, t[i].name, t[i].kind, t[i].us_min, t[i].us_median);
    }
    CHECK(s1.kernel_launches - s0.kernel_launches == 4 * kernels && s1.matmuls - s0.matmuls == 4 * gemms &&
              s1.graph_launches == s0.graph_launches,
          "%ld kernels, %ld matmuls, %ld graphs for 1 + 3 passes", s1.kernel_launches - s0.kernel_launches,
          s1.matmuls - s0.matmuls, s1.graph_launches - s0.graph_launches);
    float x;
    CHECK(bertc_output_read(c, 0, &x, 1) == BERTC_STATUS_INVALID_ARGUMENT, "outputs readable after the step timing");
    CHECK(bertc_debug_time_steps(c, &r.rq, 0, t, n) == BERTC_STATUS_INVALID_ARGUMENT &&
              bertc_debug_time_steps(c, &r.rq, 1, t, n - 1) == BERTC_STATUS_INVALID_ARGUMENT &&
              bertc_debug_step_count(c, 0) == 0 && bertc_debug_step_count(c, 65) == 0 && bertc_debug_variant(c) == 0,
          "bad arguments accepted");
    float *again = run_lhs(c, pl, &r.rq);
    CHECK(again && want && !memcmp(again, want, (size_t)(12 * bertc_plan_hidden(pl)) * sizeof(float)),
          "the request after the step timing differs");
    free(again), free(want), free(t);
    plan_free(&raw);
    bertc_context_destroy(c);
    bertc_plan_close(pl);
}

/* ------------------------------------------------------------ threads */

#define NTHREADS 4
#define NREQ 6

typedef struct worker {
    bertc_plan *pl;
    int id;
    testreq req[NREQ];
    float *want[NREQ];
    int mismatches, failures;
} worker;

static void *worker_run(void *arg) {
    worker *w = arg;
    bertc_context_options o = emu_options();
    bertc_context *c = NULL;
    char err[1024];
    if (bertc_context_create(w->pl, &o, &c, err, sizeof err) != BERTC_STATUS_OK) {
        w->failures++;
        return NULL;
    }
    int64_t H = bertc_plan_hidden(w->pl);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NREQ; i++) {
            int k = (i + w->id + round) % NREQ;
            if (bertc_infer(c, &w->req[k].rq) != BERTC_STATUS_OK) {
                w->failures++;
                continue;
            }
            size_t n = (size_t)(w->req[k].rq.len * H);
            float *got = malloc(n * sizeof *got);
            if (bertc_output_read(c, 0, got, n) != BERTC_STATUS_OK) w->failures++;
            else if (memcmp(got, w->want[k], n * sizeof *got)) w->mismatches++;
            free(got);
        }
    bertc_context_destroy(c);
    return NULL;
}

static void test_threads(void) {
    bertc_plan *pl = testreq_plan_open("tiny-bert-bf16");
    if (!pl) return;
    static worker w[NTHREADS];
    memset(w, 0, sizeof w);
    bertc_context_options o = emu_options();
    bertc_context *c = make_ctx(pl, &o);
    if (!c) { bertc_plan_close(pl); return; }
    for (int i = 0; i < NREQ; i++) {
        testreq_random(&w[0].req[i], pl, check_rng_range(1, 64), i & 1, i & 2);
        w[0].want[i] = run_lhs(c, pl, &w[0].req[i].rq);
    }
    bertc_context_destroy(c);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t].pl = pl;
        w[t].id = t;
        for (int i = 0; i < NREQ; i++) {
            if (t) testreq_copy(&w[t].req[i], &w[0].req[i]);
            w[t].want[i] = w[0].want[i];
        }
    }
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker_run, &w[t]);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++)
        CHECK(!w[t].failures && !w[t].mismatches, "thread %d: %d failures, %d outputs differ from one thread's", t,
              w[t].failures, w[t].mismatches);
    for (int i = 0; i < NREQ; i++) free(w[0].want[i]);
    bertc_plan_close(pl);
    stats_all_zero("after the threads");
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(E = emuctl_open())) return 1;
    CHECK_CASE(test_image_select);
    CHECK_CASE(test_bad_plans);
    CHECK_CASE(test_missing_driver);
    CHECK_CASE(test_bad_requests);
    CHECK_CASE(test_one_launch_per_request);
    CHECK_CASE(test_weights_shared);
    CHECK_CASE(test_capture_on_first_use);
    CHECK_CASE(test_current_context_restored);
    CHECK_CASE(test_foreign_global_capture);
    CHECK_CASE(test_image_paths_run);
    CHECK_CASE(test_injected_device_failures);
    CHECK_CASE(test_host_alloc_failures);
    CHECK_CASE(test_programmatic_launch_plan);
    CHECK_CASE(test_tuned_variants);
    CHECK_CASE(test_copy_back);
    CHECK_CASE(test_algorithm_timing);
    CHECK_CASE(test_per_step_times);
    CHECK_CASE(test_threads);
    return check_summary();
}
