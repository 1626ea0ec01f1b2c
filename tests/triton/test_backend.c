/*
 * test_backend — the Triton backend (runtime/triton) inside a small
 * stand-in for the server.
 *
 * This program defines the TRITONSERVER_* / TRITONBACKEND_* services the
 * backend calls (runtime/triton/triton_api.h) the way the API documents
 * them — errors owned by whoever receives them, requests owned by the
 * backend once Execute succeeds, inputs in one or several host buffers,
 * output buffers owned by their response — and drives the backend's
 * entry points directly: load a model from a repository folder, create
 * instances, execute batches of requests.  It keeps the books the real
 * server would: every error object created is deleted, every request is
 * answered exactly once and released exactly once, statistics are
 * reported once per request.  Under `make sanitize` this is where the
 * backend's memory handling is checked; tests/triton/test_server.py runs
 * the same backend inside the real tritonserver.
 *
 * The truth for every answer is the runtime itself: a second context on
 * the same plan and device, given the same ids (or bertc_encode's ids for
 * text), must give the same bits the backend put into the response.  The
 * model is tiny-bert (fp32; buckets 8, 16, 64; a vocabulary; pooler),
 * with random ids, types and masks drawn from BERTC_TEST_SEED.  The
 * execute cases run again on tiny-bert-batch-fp32, whose token buckets
 * make the backend send rows as packed batches (bertc_infer_batch): every
 * row must still be, bit for bit, the row bertc_infer gives alone, and a
 * bad row in a packed batch must fail only its own request.
 */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bertc.h"
#include "check.h"
#include "tb.h"

/* ------------------------------------------------------ the stand-in server */

struct TRITONSERVER_Error {
    TRITONSERVER_Error_Code code;
    char *msg;
};
struct TRITONSERVER_Message {
    const char *json;
};
struct TRITONBACKEND_Model {
    const char *name, *repo, *config;
    uint64_t version;
    void *state;
};
struct TRITONBACKEND_ModelInstance {
    const char *name;
    TRITONSERVER_InstanceGroupKind kind;
    int32_t device;
    TRITONBACKEND_Model *model;
    void *state;
    int stats_ok, stats_failed, batch_stats;
    uint64_t batch_rows;
};
#define MOCK_MAX 8
struct TRITONBACKEND_Input {
    const char *name;
    TRITONSERVER_DataType dtype;
    int64_t shape[4];
    uint32_t dims;
    const char *buf[3];
    uint64_t len[3];
    uint32_t nbuf;
    uint64_t byte_size;
    TRITONSERVER_MemoryType memory;
    char *owned;
};
struct TRITONBACKEND_Output {
    char name[64];
    TRITONSERVER_DataType dtype;
    int64_t shape[4];
    uint32_t dims;
    float *data;
    uint64_t bytes;
};
struct TRITONBACKEND_Response {
    TRITONBACKEND_Request *request;
    TRITONBACKEND_Output outputs[MOCK_MAX];
    uint32_t noutputs;
    int has_truncated, truncated;
};
struct TRITONBACKEND_Request {
    TRITONBACKEND_Input inputs[MOCK_MAX];
    uint32_t ninputs;
    const char *outputs[MOCK_MAX];
    uint32_t noutputs;
    int released, responses_sent;
    TRITONBACKEND_Response *response;   /* the one sent, kept for inspection */
    char error[1024];                   /* its error message, "" for success */
    TRITONSERVER_Error_Code code;
};

static int live_errors, live_responses;

TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg) {
    TRITONSERVER_Error *e = calloc(1, sizeof *e);
    e->code = code;
    e->msg = strdup(msg);
    live_errors++;
    return e;
}
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *e) {
    if (!e) return;
    live_errors--;
    free(e->msg);
    free(e);
}
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *e) { return e->code; }
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *e) { return e->msg; }
TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *m, const char **base, size_t *n) {
    *base = m->json;
    *n = strlen(m->json);
    return NULL;
}
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *m) {
    free(m);
    return NULL;
}
static char last_log[2048];
TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *file, const int line,
                                            const char *msg) {
    (void)level, (void)file, (void)line;
    snprintf(last_log, sizeof last_log, "%s", msg);
    return NULL;
}
static uint32_t api_minor = BERTC_TRITON_API_MINOR;
TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
    *major = 1;
    *minor = api_minor;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *m, const char **name) {
    *name = m->name;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *m, uint64_t *v) {
    *v = m->version;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *m, TRITONBACKEND_ArtifactType *t,
                                                  const char **loc) {
    *t = TRITONBACKEND_ARTIFACT_FILESYSTEM;
    *loc = m->repo;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *m, const uint32_t version,
                                              TRITONSERVER_Message **msg) {
    if (version != 1) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "config version");
    *msg = calloc(1, sizeof **msg);
    (*msg)->json = m->config;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *m, void **s) {
    *s = m->state;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *m, void *s) {
    m->state = s;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *i, const char **name) {
    *name = i->name;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *i,
                                                    TRITONSERVER_InstanceGroupKind *k) {
    *k = i->kind;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *i, int32_t *d) {
    *d = i->device;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *i, TRITONBACKEND_Model **m) {
    *m = i->model;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *i, void **s) {
    *s = i->state;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *i, void *s) {
    i->state = s;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *i,
                                                                TRITONBACKEND_Request *r, const bool ok,
                                                                const uint64_t a, const uint64_t b, const uint64_t c,
                                                                const uint64_t d) {
    CHECK(!r->released, "statistics reported for a released request");
    CHECK(a <= b && b <= c && c <= d, "statistics timestamps out of order");
    if (ok) i->stats_ok++;
    else i->stats_failed++;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *i,
                                                                     const uint64_t rows, const uint64_t a,
                                                                     const uint64_t b, const uint64_t c,
                                                                     const uint64_t d) {
    CHECK(a <= b && b <= c && c <= d && rows > 0, "batch statistics out of order or empty");
    i->batch_stats++;
    i->batch_rows += rows;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestId(TRITONBACKEND_Request *r, const char **id) {
    (void)r;
    *id = "";
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *r, uint32_t *n) {
    CHECK(!r->released, "a released request was read");
    *n = r->ninputs;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestInputByIndex(TRITONBACKEND_Request *r, const uint32_t i,
                                                      TRITONBACKEND_Input **in) {
    if (i >= r->ninputs) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "input index");
    *in = &r->inputs[i];
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *r, uint32_t *n) {
    *n = r->noutputs;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *r, const uint32_t i, const char **n) {
    if (i >= r->noutputs) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "output index");
    *n = r->outputs[i];
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *r, uint32_t flags) {
    CHECK(flags == TRITONSERVER_REQUEST_RELEASE_ALL, "release flags %u", flags);
    r->released++;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *in, const char **name,
                                                  TRITONSERVER_DataType *dt, const int64_t **shape, uint32_t *dims,
                                                  uint64_t *bytes, uint32_t *nbuf) {
    if (name) *name = in->name;
    if (dt) *dt = in->dtype;
    if (shape) *shape = in->shape;
    if (dims) *dims = in->dims;
    if (bytes) *bytes = in->byte_size;
    if (nbuf) *nbuf = in->nbuf;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *in, const uint32_t i, const void **buf,
                                              uint64_t *n, TRITONSERVER_MemoryType *mt, int64_t *id) {
    if (i >= in->nbuf) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "buffer index");
    *buf = in->buf[i];
    *n = in->len[i];
    *mt = in->memory;
    *id = 0;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **resp, TRITONBACKEND_Request *r) {
    *resp = calloc(1, sizeof **resp);
    (*resp)->request = r;
    live_responses++;
    return NULL;
}
static void mock_response_free(TRITONBACKEND_Response *resp) {
    if (!resp) return;
    for (uint32_t i = 0; i < resp->noutputs; i++) free(resp->outputs[i].data);
    free(resp);
    live_responses--;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *resp) {
    mock_response_free(resp);
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *resp, TRITONBACKEND_Output **out,
                                                 const char *name, const TRITONSERVER_DataType dt,
                                                 const int64_t *shape, const uint32_t dims) {
    if (resp->noutputs == MOCK_MAX || dims > 4) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "outputs");
    TRITONBACKEND_Output *o = &resp->outputs[resp->noutputs++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->dtype = dt;
    o->dims = dims;
    memcpy(o->shape, shape, dims * sizeof *shape);
    *out = o;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *o, void **buf, const uint64_t bytes,
                                               TRITONSERVER_MemoryType *mt, int64_t *id) {
    uint64_t want = sizeof(float);
    for (uint32_t i = 0; i < o->dims; i++) want *= (uint64_t)o->shape[i];
    CHECK(bytes == want, "output %s: %llu bytes for its shape's %llu", o->name, (unsigned long long)bytes,
          (unsigned long long)want);
    o->data = malloc(bytes ? bytes : 1);
    memset(o->data, 0xff, bytes);   /* NaN: every value must be written */
    o->bytes = bytes;
    *buf = o->data;
    *mt = TRITONSERVER_MEMORY_CPU;
    *id = 0;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseSetBoolParameter(TRITONBACKEND_Response *resp, const char *name,
                                                           const bool value) {
    CHECK(!strcmp(name, "truncated"), "unexpected response parameter %s", name);
    resp->has_truncated = 1;
    resp->truncated = value;
    return NULL;
}
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *resp, const uint32_t flags,
                                               TRITONSERVER_Error *err) {
    TRITONBACKEND_Request *r = resp->request;
    CHECK(flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL, "send flags %u", flags);
    CHECK(!r->released, "a response sent for a released request");
    r->responses_sent++;
    snprintf(r->error, sizeof r->error, "%s", err ? err->msg : "");
    r->code = err ? err->code : TRITONSERVER_ERROR_UNKNOWN;
    if (err) {   /* an error response carries no outputs */
        mock_response_free(resp);
        resp = NULL;
    }
    mock_response_free(r->response);
    r->response = resp;
    return NULL;
}

/* ------------------------------------------------------------- helpers */

/* The plan the repository holds: tiny-bert, or its packed twin (token
 * buckets 64 and 256 of up to 16 requests), whose rows the backend runs
 * as packed batches (test_packed_*). */
static const char *plan_name = "tiny-bert-fp32";
#define HIDDEN 96
#define MAX_LEN 64
#define VOCAB 1000

static const char *CONFIG_FMT =
    "{\"name\":\"tiny\",\"backend\":\"bertc\",\"max_batch_size\":%d,"
    "\"input\":[{\"name\":\"TEXT\",\"data_type\":\"TYPE_STRING\",\"dims\":[\"1\"]},"
    "{\"name\":\"TEXT_PAIR\",\"data_type\":\"TYPE_STRING\",\"dims\":[\"1\"]},"
    "{\"name\":\"INPUT_IDS\",\"data_type\":\"TYPE_INT64\",\"dims\":[\"-1\"]},"
    "{\"name\":\"ATTENTION_MASK\",\"data_type\":\"TYPE_INT64\",\"dims\":[\"-1\"]},"
    "{\"name\":\"TOKEN_TYPE_IDS\",\"data_type\":\"TYPE_INT32\",\"dims\":[\"-1\"]}],"
    "\"output\":[{\"name\":\"last_hidden_state\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"-1\",\"96\"]},"
    "{\"name\":\"pooler_output\",\"data_type\":\"TYPE_FP32\",\"dims\":[96]}],"
    "\"parameters\":{\"device\":{\"string_value\":\"emu\"}%s}}";

static char repo[512];

/* A repository folder REPO/tiny/1/model.plan -> the test plan. */
static const char *mock_repo(void) {
    if (repo[0]) return repo;
    const char *tmp = getenv("TMPDIR");
    snprintf(repo, sizeof repo, "%s/bertc-test-triton-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    char ver[1024], plan[1024], cwd[512], target[1024];
    int ok = getcwd(cwd, sizeof cwd) != NULL;
    ok &= snprintf(ver, sizeof ver, "%s/1", repo) < (int)sizeof ver;
    ok &= snprintf(plan, sizeof plan, "%s/model.plan", ver) < (int)sizeof plan;
    ok &= snprintf(target, sizeof target, "%s/%s/plans/%s.plan", cwd, check_build_dir(), plan_name) < (int)sizeof target;
    CHECK(ok && !mkdir(repo, 0700) && !mkdir(ver, 0700) && !symlink(target, plan), "cannot make %s", repo);
    return repo;
}

static void mock_repo_remove(void) {
    if (!repo[0]) return;
    char p[1024];
    if (snprintf(p, sizeof p, "%s/1/model.plan", repo) < (int)sizeof p) unlink(p);
    if (snprintf(p, sizeof p, "%s/1", repo) < (int)sizeof p) rmdir(p);
    rmdir(repo);
    repo[0] = '\0';
}

static char config_buf[4096];
static const char *mock_config(int max_batch, const char *extra) {
    snprintf(config_buf, sizeof config_buf, CONFIG_FMT, max_batch, extra);
    return config_buf;
}

/* An entry point's error as text ("" for success); the error is deleted, as the server would. */
static const char *mock_message(TRITONSERVER_Error *e) {
    static char msg[2048];
    snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
    TRITONSERVER_ErrorDelete(e);
    return msg;
}

/* Loads the model; returns the error message ("" on success). */
static const char *mock_load(TRITONBACKEND_Model *m, const char *config) {
    *m = (TRITONBACKEND_Model){"tiny", mock_repo(), config, 1, NULL};
    return mock_message(TRITONBACKEND_ModelInitialize(m));
}

static void mock_unload(TRITONBACKEND_Model *m) {
    if (m->state) CHECK(!TRITONBACKEND_ModelFinalize(m), "model finalize failed");
    m->state = NULL;
}

static const char *mock_instance(TRITONBACKEND_ModelInstance *inst, TRITONBACKEND_Model *m,
                                 TRITONSERVER_InstanceGroupKind kind) {
    *inst = (TRITONBACKEND_ModelInstance){"tiny_0", kind, 0, m, NULL, 0, 0, 0, 0};
    return mock_message(TRITONBACKEND_ModelInstanceInitialize(inst));
}

static void mock_instance_end(TRITONBACKEND_ModelInstance *inst) {
    if (inst->state) CHECK(!TRITONBACKEND_ModelInstanceFinalize(inst), "instance finalize failed");
    inst->state = NULL;
}

/* Adds an input whose data is split into `split` buffers (1..3). */
static void mock_input(TRITONBACKEND_Request *r, const char *name, TRITONSERVER_DataType dt, const int64_t *shape,
                       uint32_t dims, const void *data, uint64_t bytes, int split) {
    TRITONBACKEND_Input *in = &r->inputs[r->ninputs++];
    memset(in, 0, sizeof *in);
    in->name = name;
    in->dtype = dt;
    in->dims = dims;
    memcpy(in->shape, shape, dims * sizeof *shape);
    in->byte_size = bytes;
    in->owned = malloc(bytes ? bytes : 1);
    memcpy(in->owned, data, bytes);
    uint64_t at = 0;
    for (int i = 0; i < split; i++) {
        uint64_t n = i == split - 1 ? bytes - at : bytes / (uint64_t)split;
        in->buf[i] = in->owned + at;
        in->len[i] = n;
        at += n;
    }
    in->nbuf = (uint32_t)split;
    in->memory = TRITONSERVER_MEMORY_CPU;
}

/* A BYTES tensor of n strings (4-byte length prefixes). */
static size_t mock_strings(char *buf, const char *const *s, int n) {
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        uint32_t len = (uint32_t)strlen(s[i]);
        memcpy(buf + at, &len, 4);
        memcpy(buf + at + 4, s[i], len);
        at += 4 + len;
    }
    return at;
}

static void mock_request_free(TRITONBACKEND_Request *r) {
    for (uint32_t i = 0; i < r->ninputs; i++) free(r->inputs[i].owned);
    mock_response_free(r->response);
    memset(r, 0, sizeof *r);
}

static void mock_execute(TRITONBACKEND_ModelInstance *inst, TRITONBACKEND_Request *rs, int n) {
    TRITONBACKEND_Request *ptrs[16];
    for (int i = 0; i < n; i++) ptrs[i] = &rs[i];
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceExecute(inst, ptrs, (uint32_t)n);
    CHECK(!e, "Execute failed: %s", e ? e->msg : "");
    TRITONSERVER_ErrorDelete(e);
    for (int i = 0; i < n; i++)
        CHECK(rs[i].released == 1 && rs[i].responses_sent == 1, "request %d: released %d times, %d responses", i,
              rs[i].released, rs[i].responses_sent);
}

static TRITONBACKEND_Output *mock_output(TRITONBACKEND_Request *r, const char *name) {
    if (!r->response) return NULL;
    for (uint32_t i = 0; i < r->response->noutputs; i++)
        if (!strcmp(r->response->outputs[i].name, name)) return &r->response->outputs[i];
    return NULL;
}

/* The reference: the runtime itself on its own context. */
typedef struct reference {
    bertc_plan *plan;
    bertc_context *ctx;
    bertc_encoding *enc;
} reference;

static int reference_open(reference *ref) {
    char path[512], err[1024];
    memset(ref, 0, sizeof *ref);
    snprintf(path, sizeof path, "%s/plans/%s.plan", check_build_dir(), plan_name);
    bertc_context_options o;
    bertc_context_options_init(&o);
    o.device = BERTC_DEVICE_EMULATED;
    o.capture_on_first_use = 1;
    if (bertc_plan_open(path, &ref->plan, err, sizeof err) ||
        bertc_context_create(ref->plan, &o, &ref->ctx, err, sizeof err)) {
        CHECK(0, "reference: %s", err);
        return -1;
    }
    ref->enc = bertc_encoding_create();
    return 0;
}

static void reference_close(reference *ref) {
    bertc_encoding_free(ref->enc);
    bertc_context_destroy(ref->ctx);
    bertc_plan_close(ref->plan);
}

/* Row `row` of the response's outputs against the reference run of rq:
 * equal bits, and zeros beyond the row's length. */
static void check_row(reference *ref, TRITONBACKEND_Request *r, int row, const bertc_request *rq, int64_t width,
                      const char *what) {
    TRITONBACKEND_Output *h = mock_output(r, "last_hidden_state"), *p = mock_output(r, "pooler_output");
    CHECK(h && p, "%s: outputs missing (error: %s)", what, r->error);
    if (!h || !p || bertc_infer(ref->ctx, rq) != BERTC_STATUS_OK) {
        CHECK(h == NULL, "%s: reference: %s", what, bertc_context_error(ref->ctx));
        return;
    }
    float *want = calloc((size_t)(width * HIDDEN), sizeof *want), pool[HIDDEN];
    bertc_output_read(ref->ctx, 0, want, (size_t)(rq->len * HIDDEN));
    bertc_output_read(ref->ctx, bertc_plan_output_index(ref->plan, "pooler_output"), pool, HIDDEN);
    CHECK(!memcmp(h->data + (size_t)row * (size_t)width * HIDDEN, want, (size_t)(width * HIDDEN) * sizeof(float)),
          "%s: last_hidden_state row %d differs from the runtime's", what, row);
    CHECK(!memcmp(p->data + (size_t)row * HIDDEN, pool, sizeof pool), "%s: pooler_output row %d differs", what, row);
    free(want);
}

/* What most cases run on: the reference, and the model loaded with one KIND_CPU instance. */
typedef struct fixture {
    reference ref;
    TRITONBACKEND_Model m;
    TRITONBACKEND_ModelInstance inst;
} fixture;

static int fixture_open(fixture *f, int max_batch) {
    if (reference_open(&f->ref)) return -1;
    CHECK(!*mock_load(&f->m, mock_config(max_batch, "")), "load");
    CHECK(!*mock_instance(&f->inst, &f->m, TRITONSERVER_INSTANCEGROUPKIND_CPU), "instance");
    return 0;
}

static void fixture_close(fixture *f) {
    mock_instance_end(&f->inst);
    mock_unload(&f->m);
    reference_close(&f->ref);
}

static void random_ids(int32_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)check_rng_range(0, VOCAB - 1);
}

/* --------------------------------------------------------------- cases */

static void config_settings(void) {
    tb_config c;
    char err[1024];
    const char *ok = "{\"max_batch_size\": 4, \"parameters\": {\"device\": {\"string_value\": \"cuda\"}, "
                     "\"plan\": {\"string_value\": \"m.plan\"}, \"sha256\": {\"string_value\": "
                     "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}}, \"input\": [[{}]]}";
    CHECK(!tb_config_parse(ok, strlen(ok), "c", &c, err, sizeof err), "%s", err);
    CHECK(c.max_batch == 4 && c.device == TB_DEVICE_CUDA && !strcmp(c.plan_file, "m.plan") && c.sha256[0] == '0',
          "settings not read");
    CHECK(!tb_config_parse("{}", 2, "c", &c, err, sizeof err) && c.device == TB_DEVICE_AUTO &&
              !strcmp(c.plan_file, "model.plan") && c.max_batch == 0,
          "defaults");
    static const struct { const char *json, *msg; } bad[] = {
        {"{\"parameters\": {\"devcie\": {\"string_value\": \"emu\"}}}", "'devcie' is not a bertc setting"},
        {"{\"parameters\": {\"device\": {\"string_value\": \"gpu\"}}}", "device 'gpu' is not one of"},
        {"{\"parameters\": {\"plan\": {\"string_value\": \"../x.plan\"}}}", "is not a file name"},
        {"{\"parameters\": {\"sha256\": {\"string_value\": \"abc\"}}}", "not 64 hex digits"},
        {"{\"parameters\": {\"plan\": {\"int_value\": 3}}}", "needs a string_value"},
        {"{\"max_batch_size\": -2}", "max_batch_size is not a count"},
        {"[1, 2]", "not the JSON object expected"},
        {"{\"a\": [1, 2,]}", "not the JSON object expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = tb_config_parse(bad[i].json, strlen(bad[i].json), "CFG", &c, err, sizeof err);
        CHECK(rc && strstr(err, bad[i].msg) && !strncmp(err, "CFG: ", 5), "case %zu: rc %d, '%s'", i, rc, err);
    }
    /* Every strict prefix of a valid configuration is refused, without reading past it. */
    for (size_t n = 0; n < strlen(ok); n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, ok, n);
        CHECK(tb_config_parse(copy, n, "c", &c, err, sizeof err), "prefix of %zu bytes accepted", n);
        free(copy);
    }
}

static void model_load_checks(void) {
    TRITONBACKEND_Model m;
    const char *e = mock_load(&m, mock_config(8, ""));
    CHECK(!*e, "load: %s", e);
    CHECK(strstr(last_log, "longest request 64"), "load log: %s", last_log);
    mock_unload(&m);
    static const struct { const char *from, *to, *msg; } bad[] = {
        {"pooler_output", "logits", "output 'logits' is not an output of the plan (it has: last_hidden_state, "
                                    "pooler_output)"},
        {"[96]", "[95]", "output 'pooler_output' needs dims [ 96 ]"},
        {"\"-1\",\"96\"", "\"96\"", "needs dims [ -1, 96 ]"},
        {"TYPE_INT32", "TYPE_FP32", "token inputs are TYPE_INT32 or TYPE_INT64"},
        {"\"name\":\"TEXT\",\"data_type\":\"TYPE_STRING\"", "\"name\":\"TEXT\",\"data_type\":\"TYPE_INT64\"",
         "text inputs are TYPE_STRING"},
        {"ATTENTION_MASK", "MASK", "input 'MASK' is not a bertc input"},
        {"\"emu\"}", "\"emu\"},\"sha256\":{\"string_value\":"
                     "\"0000000000000000000000000000000000000000000000000000000000000000\"}",
         "SHA-256"},
        {"\"emu\"}", "\"emu\"},\"plan\":{\"string_value\":\"missing.plan\"}", "missing.plan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cfg[4096];
        const char *base = mock_config(8, ""), *at = strstr(base, bad[i].from);
        CHECK(at, "case %zu: '%s' not in the config", i, bad[i].from);
        if (!at) continue;
        snprintf(cfg, sizeof cfg, "%.*s%s%s", (int)(at - base), base, bad[i].to, at + strlen(bad[i].from));
        e = mock_load(&m, cfg);
        CHECK(strstr(e, bad[i].msg) && strstr(e, "bertc model tiny: "), "case %zu: '%s'", i, e);
        CHECK(!m.state, "case %zu: a state was left behind", i);
    }
    api_minor = BERTC_TRITON_API_MINOR - 1;
    TRITONSERVER_Error *err = TRITONBACKEND_Initialize(NULL);
    CHECK(err && strstr(err->msg, "backend API"), "an old server's API version was accepted");
    TRITONSERVER_ErrorDelete(err);
    api_minor = BERTC_TRITON_API_MINOR;
    err = TRITONBACKEND_Initialize(NULL);
    CHECK(!err, "Initialize: %s", err ? err->msg : "");
    TRITONSERVER_ErrorDelete(err);
}

static void instance_devices(void) {
    TRITONBACKEND_Model m;
    TRITONBACKEND_ModelInstance inst;
    const char *e = mock_load(&m, mock_config(8, ""));
    CHECK(!*e, "load: %s", e);
    e = mock_instance(&inst, &m, TRITONSERVER_INSTANCEGROUPKIND_GPU);   /* device: emu wins */
    CHECK(!*e && strstr(last_log, "the emulated device"), "emu instance: %s / %s", e, last_log);
    mock_instance_end(&inst);
    mock_unload(&m);
    CHECK(!*mock_load(&m, mock_config(8, ",\"plan\":{\"string_value\":\"model.plan\"}")), "plan parameter");
    ((tb_model *)m.state)->cfg.device = TB_DEVICE_AUTO;
    e = mock_instance(&inst, &m, TRITONSERVER_INSTANCEGROUPKIND_CPU);
    CHECK(!*e && strstr(last_log, "the emulated device"), "KIND_CPU instance: %s", e);
    mock_instance_end(&inst);
    ((tb_model *)m.state)->cfg.device = TB_DEVICE_CUDA;
    e = mock_instance(&inst, &m, TRITONSERVER_INSTANCEGROUPKIND_CPU);
    CHECK(strstr(e, "device cuda needs KIND_GPU") && !inst.state, "cuda on KIND_CPU: '%s'", e);
    ((tb_model *)m.state)->cfg.device = TB_DEVICE_AUTO;
    e = mock_instance(&inst, &m, TRITONSERVER_INSTANCEGROUPKIND_GPU);   /* no GPU driver on CI machines */
    if (*e) CHECK(strstr(e, "instance tiny_0: ") && strstr(e, "CUDA driver") && !inst.state, "KIND_GPU: '%s'", e);
    mock_instance_end(&inst);
    mock_unload(&m);
}

static void execute_ids(void) {
    fixture f;
    if (fixture_open(&f, 8)) return;
    /* A batch of requests: several rows each, lengths across the buckets, masks and types present or not, ids as
     * INT64 or INT32, data in one to three buffers. */
    TRITONBACKEND_Request rs[5];
    memset(rs, 0, sizeof rs);
    int64_t lens[5] = {1, 8, 9, (int64_t)check_rng_range(10, MAX_LEN - 1), MAX_LEN}, rows[5] = {1, 3, 2, 2, 1};
    int32_t ids[5][3 * MAX_LEN], types[5][3 * MAX_LEN], mask[5][3 * MAX_LEN];
    for (int i = 0; i < 5; i++) {
        int64_t n = rows[i] * lens[i], shape[2] = {rows[i], lens[i]};
        random_ids(ids[i], n);
        int64_t w[3 * MAX_LEN];
        for (int64_t k = 0; k < n; k++) {
            types[i][k] = (int32_t)check_rng_range(0, 1);
            mask[i][k] = k % lens[i] == 0 || check_rng_range(0, 3) != 0;
            w[k] = ids[i][k];
        }
        if (i % 2) mock_input(&rs[i], "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 2, w, (uint64_t)n * 8, 1 + i % 3);
        else mock_input(&rs[i], "INPUT_IDS", TRITONSERVER_TYPE_INT32, shape, 2, ids[i], (uint64_t)n * 4, 1 + i % 3);
        if (i >= 2) mock_input(&rs[i], "TOKEN_TYPE_IDS", TRITONSERVER_TYPE_INT32, shape, 2, types[i], (uint64_t)n * 4, 2);
        if (i >= 1) {
            for (int64_t k = 0; k < n; k++) w[k] = mask[i][k];
            mock_input(&rs[i], "ATTENTION_MASK", TRITONSERVER_TYPE_INT64, shape, 2, w, (uint64_t)n * 8, 3);
        }
        rs[i].outputs[rs[i].noutputs++] = "last_hidden_state";
        rs[i].outputs[rs[i].noutputs++] = "pooler_output";
    }
    mock_execute(&f.inst, rs, 5);
    const tb_instance *in = f.inst.state;
    if (bertc_plan_max_batch(in->model->plan)) /* packed: the 9 rows (233 tokens at most) are one batch */
        CHECK(bertc_batch_count(in->ctx) == 9, "the last packed batch had %zu rows, expected all 9",
              bertc_batch_count(in->ctx));
    for (int i = 0; i < 5; i++) {
        CHECK(!rs[i].error[0], "request %d: %s", i, rs[i].error);
        TRITONBACKEND_Output *h = mock_output(&rs[i], "last_hidden_state");
        CHECK(h && h->dims == 3 && h->shape[0] == rows[i] && h->shape[1] == lens[i] && h->shape[2] == HIDDEN,
              "request %d: last_hidden_state shape", i);
        CHECK(rs[i].response && !rs[i].response->has_truncated, "request %d: ids got a 'truncated' parameter", i);
        for (int r = 0; r < rows[i]; r++) {
            int64_t at = r * lens[i];
            bertc_request rq = {ids[i] + at, i >= 2 ? types[i] + at : NULL, i >= 1 ? mask[i] + at : NULL, lens[i]};
            check_row(&f.ref, &rs[i], r, &rq, lens[i], "ids");
        }
    }
    CHECK(f.inst.stats_ok == 5 && f.inst.stats_failed == 0 && f.inst.batch_stats == 1 && f.inst.batch_rows == 9,
          "statistics: %d ok, %d failed, %d batches, %llu rows", f.inst.stats_ok, f.inst.stats_failed, f.inst.batch_stats,
          (unsigned long long)f.inst.batch_rows);
    for (int i = 0; i < 5; i++) mock_request_free(&rs[i]);
    fixture_close(&f);
}

static void execute_text(void) {
    fixture f;
    if (fixture_open(&f, 8)) return;
    char longtext[2000] = "";
    for (int i = 0; i < 150; i++) strcat(longtext, i % 2 ? "word " : "Zürich ");
    const char *texts[3] = {"Hello world", "", longtext}, *pairs[3] = {"a question?", "x", "short"};
    char buf[4096], pbuf[4096];
    TRITONBACKEND_Request rs[2];
    memset(rs, 0, sizeof rs);
    int64_t shape[2] = {3, 1};
    size_t n = mock_strings(buf, texts, 3), pn = mock_strings(pbuf, pairs, 3);
    mock_input(&rs[0], "TEXT", TRITONSERVER_TYPE_BYTES, shape, 2, buf, n, 3);
    mock_input(&rs[1], "TEXT", TRITONSERVER_TYPE_BYTES, shape, 2, buf, n, 1);
    mock_input(&rs[1], "TEXT_PAIR", TRITONSERVER_TYPE_BYTES, shape, 2, pbuf, pn, 2);
    for (int i = 0; i < 2; i++) {
        rs[i].outputs[rs[i].noutputs++] = "pooler_output";
        rs[i].outputs[rs[i].noutputs++] = "last_hidden_state";
    }
    mock_execute(&f.inst, rs, 2);
    for (int i = 0; i < 2; i++) {
        CHECK(!rs[i].error[0], "request %d: %s", i, rs[i].error);
        TRITONBACKEND_Output *h = mock_output(&rs[i], "last_hidden_state");
        CHECK(rs[i].response && rs[i].response->has_truncated && rs[i].response->truncated,
              "request %d: the long text was not reported as truncated", i);
        CHECK(h && h->shape[1] == MAX_LEN, "request %d: width %lld, expected the longest row (%d)", i,
              h ? (long long)h->shape[1] : -1LL, MAX_LEN);
        for (int r = 0; r < 3 && h; r++) {
            char err[1024];
            CHECK(!bertc_encode(f.ref.plan, f.ref.enc, texts[r], i ? pairs[r] : NULL, 0, err, sizeof err), "%s", err);
            bertc_request rq = {bertc_encoding_ids(f.ref.enc), bertc_encoding_type_ids(f.ref.enc), NULL,
                                bertc_encoding_len(f.ref.enc)};
            check_row(&f.ref, &rs[i], r, &rq, h->shape[1], i ? "text pair" : "text");
        }
    }
    for (int i = 0; i < 2; i++) mock_request_free(&rs[i]);
    /* A short text is not truncated, and says so. */
    const char *one[1] = {"Hello"};
    int64_t s1[2] = {1, 1};
    n = mock_strings(buf, one, 1);
    mock_input(&rs[0], "TEXT", TRITONSERVER_TYPE_BYTES, s1, 2, buf, n, 1);
    rs[0].outputs[rs[0].noutputs++] = "pooler_output";
    mock_execute(&f.inst, rs, 1);
    CHECK(!rs[0].error[0] && rs[0].response && rs[0].response->has_truncated && !rs[0].response->truncated &&
              rs[0].response->noutputs == 1,
          "short text: %s", rs[0].error);
    mock_request_free(&rs[0]);
    fixture_close(&f);
}

typedef struct bad_case {
    const char *want;            /* in the error message */
    void (*make)(TRITONBACKEND_Request *r);
} bad_case;

static void good_ids(TRITONBACKEND_Request *r, const char *name, int64_t rows, int64_t len) {
    int64_t shape[2] = {rows, len}, v[2 * MAX_LEN + 2];
    for (int64_t i = 0; i < rows * len; i++) v[i] = 100 + i;
    mock_input(r, name, TRITONSERVER_TYPE_INT64, shape, 2, v, (uint64_t)(rows * len) * 8, 1);
}
static void bad_none(TRITONBACKEND_Request *r) { (void)r; }
static void bad_both(TRITONBACKEND_Request *r) {
    good_ids(r, "INPUT_IDS", 1, 3);
    good_ids(r, "TEXT", 1, 1);
}
static void bad_fp32(TRITONBACKEND_Request *r) {
    float f[3] = {1, 2, 3};
    int64_t shape[2] = {1, 3};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_FP32, shape, 2, f, sizeof f, 1);
}
static void bad_empty(TRITONBACKEND_Request *r) { good_ids(r, "INPUT_IDS", 1, 0); }
static void bad_long(TRITONBACKEND_Request *r) { good_ids(r, "INPUT_IDS", 1, MAX_LEN + 1); }
static void bad_rows(TRITONBACKEND_Request *r) { good_ids(r, "INPUT_IDS", 9, 2); }
static void bad_big(TRITONBACKEND_Request *r) {
    int64_t v[2] = {101, (int64_t)1 << 40}, shape[2] = {1, 2};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 2, v, sizeof v, 1);
}
static void bad_vocab(TRITONBACKEND_Request *r) {
    int64_t v[3] = {101, VOCAB, 102}, shape[2] = {1, 3};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 2, v, sizeof v, 1);
}
static void bad_mask_shape(TRITONBACKEND_Request *r) {
    good_ids(r, "INPUT_IDS", 1, 4);
    good_ids(r, "ATTENTION_MASK", 1, 3);
}
static void bad_mask_value(TRITONBACKEND_Request *r) {
    int64_t ids[3] = {101, 5, 102}, mask[3] = {1, 2, 1}, shape[2] = {1, 3};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 2, ids, sizeof ids, 1);
    mock_input(r, "ATTENTION_MASK", TRITONSERVER_TYPE_INT64, shape, 2, mask, sizeof mask, 1);
}
static void bad_bytes(TRITONBACKEND_Request *r) {
    int64_t v[3] = {101, 5, 102}, shape[2] = {1, 3};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 2, v, 16, 1);
}
static void bad_text(TRITONBACKEND_Request *r, const char *s, size_t n) {
    char buf[64];
    uint32_t len = (uint32_t)n;
    int64_t shape[2] = {1, 1};
    memcpy(buf, &len, 4);
    memcpy(buf + 4, s, n);
    mock_input(r, "TEXT", TRITONSERVER_TYPE_BYTES, shape, 2, buf, 4 + n, 1);
}
static void bad_utf8(TRITONBACKEND_Request *r) { bad_text(r, "ab\xff", 3); }
static void bad_nul(TRITONBACKEND_Request *r) { bad_text(r, "ab\0cd", 5); }
static void bad_claim(TRITONBACKEND_Request *r) {
    char buf[8] = {50, 0, 0, 0, 'a', 'b', 'c', 'd'};
    int64_t shape[2] = {1, 1};
    mock_input(r, "TEXT", TRITONSERVER_TYPE_BYTES, shape, 2, buf, sizeof buf, 1);
}
static void bad_name(TRITONBACKEND_Request *r) { good_ids(r, "IDS", 1, 3); }
static void bad_text_mask(TRITONBACKEND_Request *r) {
    bad_text(r, "hi", 2);
    good_ids(r, "ATTENTION_MASK", 1, 3);
}
static void bad_pair_only(TRITONBACKEND_Request *r) {
    bad_text(r, "hi", 2);
    r->inputs[0].name = "TEXT_PAIR";
}
static void bad_gpu(TRITONBACKEND_Request *r) {
    good_ids(r, "INPUT_IDS", 1, 3);
    r->inputs[0].memory = TRITONSERVER_MEMORY_GPU;
}
static void bad_output(TRITONBACKEND_Request *r) {
    good_ids(r, "INPUT_IDS", 1, 3);
    r->outputs[r->noutputs++] = "logits";
}
static void bad_shape(TRITONBACKEND_Request *r) {
    int64_t v[4] = {101, 1, 2, 102}, shape[3] = {1, 2, 2};
    mock_input(r, "INPUT_IDS", TRITONSERVER_TYPE_INT64, shape, 3, v, sizeof v, 1);
}

static void bad_requests(void) {
    static const bad_case cases[] = {
        {"missing input: send TEXT", bad_none},
        {"TEXT and INPUT_IDS are alternatives", bad_both},
        {"INPUT_IDS has data type FP32; expected INT32 or INT64", bad_fp32},
        {"INPUT_IDS is empty (shape [1, 0])", bad_empty},
        {"65 tokens per row, more than this model's longest request (64)", bad_long},
        {"INPUT_IDS has 9 rows, more than max_batch_size 8", bad_rows},
        {"INPUT_IDS[0][1] = 1099511627776 does not fit in 32 bits", bad_big},
        {"row 0: input_ids[1] = 1000", bad_vocab},
        {"ATTENTION_MASK has shape [1, 3]; it must match INPUT_IDS [1, 4]", bad_mask_shape},
        {"row 0: attention_mask[1]", bad_mask_value},
        {"INPUT_IDS holds 16 bytes; its shape needs 24", bad_bytes},
        {"TEXT row 0: ", bad_utf8},
        {"TEXT: element 0 has a NUL byte at offset 2", bad_nul},
        {"TEXT: element 0 claims 50 bytes, 4 remain", bad_claim},
        {"input 'IDS' is not a bertc input", bad_name},
        {"ATTENTION_MASK goes with INPUT_IDS", bad_text_mask},
        {"TEXT_PAIR needs TEXT", bad_pair_only},
        {"INPUT_IDS is in GPU memory", bad_gpu},
        {"output 'logits' is not an output of model tiny", bad_output},
        {"INPUT_IDS has shape [1, 2, 2]; expected [rows, length]", bad_shape},
    };
    enum { NBAD = sizeof cases / sizeof cases[0] };
    fixture f;
    if (fixture_open(&f, 8)) return;
    /* Each bad request in a batch between two good ones: only it fails. */
    for (int i = 0; i < NBAD; i++) {
        TRITONBACKEND_Request rs[3];
        memset(rs, 0, sizeof rs);
        good_ids(&rs[0], "INPUT_IDS", 2, 5);
        cases[i].make(&rs[1]);
        good_ids(&rs[2], "INPUT_IDS", 1, 9);
        for (int k = 0; k < 3; k++) {
            if (!rs[k].noutputs) rs[k].outputs[rs[k].noutputs++] = "pooler_output";
            rs[k].outputs[rs[k].noutputs++] = "last_hidden_state";
        }
        mock_execute(&f.inst, rs, 3);
        CHECK(strstr(rs[1].error, cases[i].want), "case %d: expected '%s', got '%s'", i, cases[i].want, rs[1].error);
        CHECK(!rs[1].response, "case %d: an error response carried outputs", i);
        for (int k = 0; k < 3; k += 2) {
            CHECK(!rs[k].error[0], "case %d: good request %d failed: %s", i, k, rs[k].error);
            int32_t ids[MAX_LEN];
            int64_t len = k ? 9 : 5;
            for (int r = 0; r < (k ? 1 : 2); r++) {
                for (int64_t t = 0; t < len; t++) ids[t] = (int32_t)(100 + r * len + t);
                bertc_request rq = {ids, NULL, NULL, len};
                check_row(&f.ref, &rs[k], r, &rq, len, "good neighbour");
            }
        }
        for (int k = 0; k < 3; k++) mock_request_free(&rs[k]);
    }
    CHECK(f.inst.stats_failed == NBAD && f.inst.stats_ok == 2 * NBAD, "statistics: %d ok, %d failed", f.inst.stats_ok,
          f.inst.stats_failed);
    fixture_close(&f);
}

/* The execute cases again, the plan with token buckets: packed batches. */
static void test_packed_execute(void) {
    mock_repo_remove();
    plan_name = "tiny-bert-batch-fp32";
    execute_ids();
    execute_text();
    bad_requests();
    mock_repo_remove();
    plan_name = "tiny-bert-fp32";
}

static void unbatched(void) {
    fixture f;
    if (fixture_open(&f, 0)) return;
    TRITONBACKEND_Request rs[2];
    memset(rs, 0, sizeof rs);
    int32_t ids[12];
    random_ids(ids, 12);
    int64_t shape[1] = {12}, two[2] = {1, 12};
    mock_input(&rs[0], "INPUT_IDS", TRITONSERVER_TYPE_INT32, shape, 1, ids, sizeof ids, 2);
    mock_input(&rs[1], "INPUT_IDS", TRITONSERVER_TYPE_INT32, two, 2, ids, sizeof ids, 1);
    for (int k = 0; k < 2; k++) {
        rs[k].outputs[rs[k].noutputs++] = "last_hidden_state";
        rs[k].outputs[rs[k].noutputs++] = "pooler_output";
    }
    mock_execute(&f.inst, rs, 2);
    TRITONBACKEND_Output *h = mock_output(&rs[0], "last_hidden_state"), *p = mock_output(&rs[0], "pooler_output");
    CHECK(h && h->dims == 2 && h->shape[0] == 12 && p && p->dims == 1 && p->shape[0] == HIDDEN,
          "unbatched shapes: %s", rs[0].error);
    bertc_request rq = {ids, NULL, NULL, 12};
    check_row(&f.ref, &rs[0], 0, &rq, 12, "unbatched");
    CHECK(strstr(rs[1].error, "INPUT_IDS has shape [1, 12]; expected [length]"), "[1, 12] unbatched: '%s'",
          rs[1].error);
    for (int k = 0; k < 2; k++) mock_request_free(&rs[k]);
    fixture_close(&f);
}

static void books_balance(void) {
    CHECK(live_errors == 0, "%d error objects were never deleted", live_errors);
    CHECK(live_responses == 0, "%d responses were never sent or deleted", live_responses);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(config_settings);
    CHECK_CASE(model_load_checks);
    CHECK_CASE(instance_devices);
    CHECK_CASE(execute_ids);
    CHECK_CASE(execute_text);
    CHECK_CASE(bad_requests);
    CHECK_CASE(unbatched);
    CHECK_CASE(test_packed_execute);
    CHECK_CASE(books_balance);
    mock_repo_remove();
    return check_summary();
}
