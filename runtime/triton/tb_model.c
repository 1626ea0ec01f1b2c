/*
 * tb_model — loading and unloading: the backend, a model, an instance.
 *
 * Backend.  TRITONBACKEND_Initialize checks that the server speaks the
 * backend API this file was written against (same major version, minor
 * at least BERTC_TRITON_API_MINOR); nothing else is process-wide.
 *
 * Model.  The plan lies in the model's version folder, REPO/NAME/VERSION/,
 * under the name the "plan" parameter gives (model.plan by default).  It
 * is opened once, pinned to the "sha256" parameter when the configuration
 * has one (bertc export-triton writes it: a plan is code, docs/security.md),
 * and shared read-only by every instance.  The configuration's inputs and
 * outputs are checked against the plan before the model is declared ready.
 *
 * Instance.  One bertc_context per instance.  The device: KIND_GPU
 * instance groups give each instance a GPU (TRITONBACKEND_ModelInstance
 * DeviceId), which becomes the context's CUDA device ordinal; KIND_CPU
 * instances, or the parameter device: emu, run on the emulated device —
 * libbertc_emudev.so, which the runtime linked into this backend looks
 * for beside the backend's own file (export-triton copies both into the
 * version folder).  Every graph is captured when the instance is created,
 * so the first request pays no capture.
 *
 * Every failure is a server error naming the model (and instance), and
 * leaves nothing allocated: Triton then reports the model as failed to
 * load, with that message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

#define TB_ERR_CAP 2048

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
    (void)backend;
    uint32_t major = 0, minor = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
    if (e) return e;
    if (major != BERTC_TRITON_API_MAJOR || minor < BERTC_TRITON_API_MINOR)
        return tb_error(TRITONSERVER_ERROR_UNSUPPORTED,
                        "bertc backend: the server's backend API is %u.%u; this backend needs %d.x with x >= %d",
                        major, minor, BERTC_TRITON_API_MAJOR, BERTC_TRITON_API_MINOR);
    tb_log(TRITONSERVER_LOG_INFO, "bertc backend %d.%d (server backend API %u.%u)", BERTC_VERSION_MAJOR,
           BERTC_VERSION_MINOR, major, minor);
    return NULL;
}

static void tb_model_free(tb_model *m) {
    if (!m) return;
    bertc_plan_close(m->plan);
    free(m->name);
    free(m->plan_path);
    free(m);
}

/* The configuration as JSON, read and checked; the plan's path is set. */
static TRITONSERVER_Error *tb_model_config(TRITONBACKEND_Model *model, tb_model *m, TRITONSERVER_Message **msg,
                                           const char **json, size_t *len, char *where, size_t where_cap) {
    const char *repo;
    uint64_t version;
    TRITONBACKEND_ArtifactType kind;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelVersion(model, &version);
    if (!e) e = TRITONBACKEND_ModelRepository(model, &kind, &repo);
    if (!e && kind != TRITONBACKEND_ARTIFACT_FILESYSTEM)
        e = tb_error(TRITONSERVER_ERROR_UNSUPPORTED, "bertc model %s: the repository is not on a file system",
                     m->name);
    if (!e) e = TRITONBACKEND_ModelConfig(model, 1, msg);
    if (!e) e = TRITONSERVER_MessageSerializeToJson(*msg, json, len);
    if (e) return e;
    snprintf(where, where_cap, "%s/config.pbtxt", repo);
    char err[TB_ERR_CAP];
    if (tb_config_parse(*json, *len, where, &m->cfg, err, sizeof err))
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "bertc model %s: %s", m->name, err);
    size_t n = strlen(repo) + strlen(m->cfg.plan_file) + 32;
    if (!(m->plan_path = malloc(n))) return tb_error(TRITONSERVER_ERROR_INTERNAL, "out of memory");
    snprintf(m->plan_path, n, "%s/%llu/%s", repo, (unsigned long long)version, m->cfg.plan_file);
    return NULL;
}

static TRITONSERVER_Error *tb_model_open(tb_model *m, const char *json, size_t len, const char *where) {
    char err[TB_ERR_CAP];
    bertc_plan_options po;
    bertc_plan_options_init(&po);
    po.expected_sha256 = m->cfg.sha256[0] ? m->cfg.sha256 : NULL;
    if (bertc_plan_open_with(m->plan_path, &po, &m->plan, err, sizeof err) != BERTC_STATUS_OK)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "bertc model %s: %s", m->name, err);
    if (tb_config_check(json, len, where, m->plan, err, sizeof err))
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG, "bertc model %s: %s", m->name, err);
    int nb = bertc_plan_bucket_count(m->plan);
    m->max_len = nb > 0 ? bertc_plan_bucket_len(m->plan, nb - 1) : 0;
    tb_log(TRITONSERVER_LOG_INFO, "bertc model %s: plan %s (sha256 %s), model %s, hidden %lld, longest request %lld",
           m->name, m->plan_path, bertc_plan_sha256(m->plan), bertc_plan_model_name(m->plan),
           (long long)bertc_plan_hidden(m->plan), (long long)m->max_len);
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
    const char *name;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelName(model, &name);
    if (e) return e;
    tb_model *m = calloc(1, sizeof *m);
    if (!m || !(m->name = tb_strdup(name))) {
        free(m);
        return tb_error(TRITONSERVER_ERROR_INTERNAL, "bertc model %s: out of memory", name);
    }
    TRITONSERVER_Message *msg = NULL;
    const char *json = NULL;
    size_t len = 0;
    char where[TB_ERR_CAP];
    e = tb_model_config(model, m, &msg, &json, &len, where, sizeof where);
    if (!e) e = tb_model_open(m, json, len, where);
    if (msg) tb_log_error(TRITONSERVER_MessageDelete(msg), "deleting the model configuration");
    if (!e) e = TRITONBACKEND_ModelSetState(model, m);
    if (e) tb_model_free(m);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &state);
    if (e) return e;
    tb_model_free(state);
    return NULL;
}

/* ------------------------------------------------------------ instances */

static void tb_instance_free(tb_instance *in) {
    if (!in) return;
    bertc_context_destroy(in->ctx);
    bertc_encoding_free(in->enc);
    tb_vec *vecs[] = {&in->tokens, &in->rows,  &in->outputs, &in->jobs,     &in->text,
                      &in->pair,   &in->bytes, &in->packed,  &in->packed_at};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) tb_vec_free(vecs[i]);
    free(in->name);
    free(in);
}

/* The context's options from the instance kind and the "device" parameter. */
static TRITONSERVER_Error *tb_instance_device(TRITONBACKEND_ModelInstance *instance, tb_instance *in,
                                              bertc_context_options *o) {
    TRITONSERVER_InstanceGroupKind kind;
    int32_t id = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceKind(instance, &kind);
    if (!e && kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) e = TRITONBACKEND_ModelInstanceDeviceId(instance, &id);
    if (e) return e;
    tb_device_mode mode = in->model->cfg.device;
    bertc_context_options_init(o);
    if (mode == TB_DEVICE_EMU || (mode == TB_DEVICE_AUTO && kind == TRITONSERVER_INSTANCEGROUPKIND_CPU)) {
        o->device = BERTC_DEVICE_EMULATED;
        return NULL;
    }
    if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
        return tb_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "bertc model %s instance %s: device %s needs KIND_GPU instance groups (KIND_CPU runs on the "
                        "emulated device)", in->model->name, in->name, mode == TB_DEVICE_CUDA ? "cuda" : "auto");
    o->device = BERTC_DEVICE_CUDA;
    o->device_ordinal = id;
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
    const char *name;
    TRITONBACKEND_Model *model;
    void *mstate = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceName(instance, &name);
    if (!e) e = TRITONBACKEND_ModelInstanceModel(instance, &model);
    if (!e) e = TRITONBACKEND_ModelState(model, &mstate);
    if (e) return e;
    tb_instance *in = calloc(1, sizeof *in);
    if (!in || !(in->name = tb_strdup(name)) || !(in->enc = bertc_encoding_create())) {
        tb_instance_free(in);
        return tb_error(TRITONSERVER_ERROR_INTERNAL, "bertc instance %s: out of memory", name);
    }
    in->model = mstate;
    tb_vec_init(&in->tokens, sizeof(int32_t));
    tb_vec_init(&in->rows, sizeof(tb_row));
    tb_vec_init(&in->outputs, sizeof(tb_output));
    tb_vec_init(&in->jobs, sizeof(tb_job));
    tb_vec_init(&in->text, 1);
    tb_vec_init(&in->pair, 1);
    tb_vec_init(&in->bytes, 1);
    tb_vec_init(&in->packed, sizeof(bertc_request));
    tb_vec_init(&in->packed_at, sizeof(tb_packed_row));
    bertc_context_options o;
    char err[TB_ERR_CAP];
    e = tb_instance_device(instance, in, &o);
    if (!e) {
        bertc_status st = bertc_context_create(in->model->plan, &o, &in->ctx, err, sizeof err);
        if (st != BERTC_STATUS_OK)
            e = tb_error(st == BERTC_STATUS_NO_DEVICE ? TRITONSERVER_ERROR_UNAVAILABLE : TRITONSERVER_ERROR_INTERNAL,
                         "bertc model %s instance %s: %s", in->model->name, name, err);
    }
    if (!e) e = TRITONBACKEND_ModelInstanceSetState(instance, in);
    if (e) {
        tb_instance_free(in);
        return e;
    }
    char dev[32] = "the emulated device";
    if (o.device == BERTC_DEVICE_CUDA) snprintf(dev, sizeof dev, "CUDA device %d", o.device_ordinal);
    tb_log(TRITONSERVER_LOG_INFO, "bertc model %s instance %s: %s, kernel image %s (%s)", in->model->name, name, dev,
           bertc_context_image_arch(in->ctx), bertc_context_image_kind(in->ctx));
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) return e;
    tb_instance_free(state);
    return NULL;
}
