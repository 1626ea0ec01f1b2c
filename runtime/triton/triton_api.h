/*
 * triton_api.h — the part of Triton Inference Server's backend C API that
 * the bertc backend uses, declared from the API's public documentation.
 *
 * Triton loads a backend as a shared library named libtriton_<name>.so and
 * talks to it through two families of plain C functions: TRITONBACKEND_*
 * entry points that the backend defines (initialise a model, an instance,
 * execute a batch of requests) and TRITONSERVER_* / TRITONBACKEND_*
 * services that the server defines and the backend calls (read an input,
 * make a response, report statistics).  The services are resolved when
 * the server loads the backend, from the server's own libtritonserver.so,
 * so the backend links nothing of Triton and needs none of its headers to
 * build: the function names, argument types and enumeration values below
 * are the whole interface, and they are what this file declares.  Only
 * what bertc uses is here; the numbering of every enumeration is fixed by
 * the API (new members are only ever appended), so the values are written
 * out rather than left to the compiler.
 *
 * Ownership rules the backend relies on (from the API documentation):
 *   - a TRITONSERVER_Error returned by a service belongs to the caller,
 *     who deletes it; one the backend passes to TRITONBACKEND_ResponseSend
 *     is only read there, so the backend deletes it afterwards too;
 *   - once ModelInstanceExecute returns success, every request it was
 *     given belongs to the backend, which must answer it and release it;
 *   - names, shapes and buffers obtained from a request live as long as
 *     the request; output buffers as long as their response.
 *
 * The test program tests/triton/test_backend.c implements these same
 * declarations as a small in-process server, so the backend is exercised
 * (and run under the sanitizers) without Triton; the real server is
 * tested by tests/triton/test_server.py.
 */
#ifndef BERTC_TRITON_API_H
#define BERTC_TRITON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The backend API version this backend is written against: Triton's major
 * version must be equal, its minor version at least this. */
#define BERTC_TRITON_API_MAJOR 1
#define BERTC_TRITON_API_MINOR 4

/* Opaque objects owned by the server. */
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;

typedef enum TRITONSERVER_datatype_enum {
    TRITONSERVER_TYPE_INVALID = 0,
    TRITONSERVER_TYPE_BOOL = 1,
    TRITONSERVER_TYPE_UINT8 = 2,
    TRITONSERVER_TYPE_UINT16 = 3,
    TRITONSERVER_TYPE_UINT32 = 4,
    TRITONSERVER_TYPE_UINT64 = 5,
    TRITONSERVER_TYPE_INT8 = 6,
    TRITONSERVER_TYPE_INT16 = 7,
    TRITONSERVER_TYPE_INT32 = 8,
    TRITONSERVER_TYPE_INT64 = 9,
    TRITONSERVER_TYPE_FP16 = 10,
    TRITONSERVER_TYPE_FP32 = 11,
    TRITONSERVER_TYPE_FP64 = 12,
    TRITONSERVER_TYPE_BYTES = 13,
    TRITONSERVER_TYPE_BF16 = 14,
} TRITONSERVER_DataType;

typedef enum TRITONSERVER_memorytype_enum {
    TRITONSERVER_MEMORY_CPU = 0,
    TRITONSERVER_MEMORY_CPU_PINNED = 1,
    TRITONSERVER_MEMORY_GPU = 2,
} TRITONSERVER_MemoryType;

typedef enum TRITONSERVER_instancegroupkind_enum {
    TRITONSERVER_INSTANCEGROUPKIND_AUTO = 0,
    TRITONSERVER_INSTANCEGROUPKIND_CPU = 1,
    TRITONSERVER_INSTANCEGROUPKIND_GPU = 2,
    TRITONSERVER_INSTANCEGROUPKIND_MODEL = 3,
} TRITONSERVER_InstanceGroupKind;

typedef enum TRITONSERVER_loglevel_enum {
    TRITONSERVER_LOG_INFO = 0,
    TRITONSERVER_LOG_WARN = 1,
    TRITONSERVER_LOG_ERROR = 2,
    TRITONSERVER_LOG_VERBOSE = 3,
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_errorcode_enum {
    TRITONSERVER_ERROR_UNKNOWN = 0,
    TRITONSERVER_ERROR_INTERNAL = 1,
    TRITONSERVER_ERROR_NOT_FOUND = 2,
    TRITONSERVER_ERROR_INVALID_ARG = 3,
    TRITONSERVER_ERROR_UNAVAILABLE = 4,
    TRITONSERVER_ERROR_UNSUPPORTED = 5,
    TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
} TRITONSERVER_Error_Code;

typedef enum TRITONBACKEND_artifacttype_enum {
    TRITONBACKEND_ARTIFACT_FILESYSTEM = 0,
} TRITONBACKEND_ArtifactType;

/* Flags: release a request completely; a response is the last one. */
#define TRITONSERVER_REQUEST_RELEASE_ALL 1u
#define TRITONSERVER_RESPONSE_COMPLETE_FINAL 1u

/* ------------------------------------------------ services of the server */

TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error);
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error);
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error);

TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *message, const char **base,
                                                        size_t *byte_size);
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message);

TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *filename, const int line,
                                            const char *msg);

TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor);

TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model, const char **name);
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *model, uint64_t *version);
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *model,
                                                  TRITONBACKEND_ArtifactType *artifact_type, const char **location);
/* The caller owns the message (TRITONSERVER_MessageDelete); config_version 1. */
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *model, const uint32_t config_version,
                                              TRITONSERVER_Message **model_config);
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *model, void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *model, void *state);

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *instance, const char **name);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *instance,
                                                    TRITONSERVER_InstanceGroupKind *kind);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *instance, int32_t *device_id);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *instance,
                                                     TRITONBACKEND_Model **model);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *instance, void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *instance, void *state);
/* Timestamps in nanoseconds of a monotonic clock. */
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                TRITONBACKEND_Request *request, const bool success,
                                                                const uint64_t exec_start_ns,
                                                                const uint64_t compute_start_ns,
                                                                const uint64_t compute_end_ns,
                                                                const uint64_t exec_end_ns);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                     const uint64_t batch_size,
                                                                     const uint64_t exec_start_ns,
                                                                     const uint64_t compute_start_ns,
                                                                     const uint64_t compute_end_ns,
                                                                     const uint64_t exec_end_ns);

TRITONSERVER_Error *TRITONBACKEND_RequestId(TRITONBACKEND_Request *request, const char **id);
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *request, uint32_t *count);
TRITONSERVER_Error *TRITONBACKEND_RequestInputByIndex(TRITONBACKEND_Request *request, const uint32_t index,
                                                      TRITONBACKEND_Input **input);
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *request, uint32_t *count);
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *request, const uint32_t index,
                                                    const char **output_name);
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request, uint32_t release_flags);

/* Any of the out-pointers may be NULL.  byte_size is what the buffers hold. */
TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                                                  TRITONSERVER_DataType *datatype, const int64_t **shape,
                                                  uint32_t *dims_count, uint64_t *byte_size,
                                                  uint32_t *buffer_count);
/* memory_type / memory_type_id: in, what the caller prefers; out, what it got. */
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, const uint32_t index, const void **buffer,
                                              uint64_t *buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
                                              int64_t *memory_type_id);

TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response, TRITONBACKEND_Request *request);
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *response);
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response, TRITONBACKEND_Output **output,
                                                 const char *name, const TRITONSERVER_DataType datatype,
                                                 const int64_t *shape, const uint32_t dims_count);
TRITONSERVER_Error *TRITONBACKEND_ResponseSetBoolParameter(TRITONBACKEND_Response *response, const char *name,
                                                           const bool value);
/* Ownership of the response passes to the server; error (NULL: success) stays the caller's. */
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, const uint32_t send_flags,
                                               TRITONSERVER_Error *error);
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer,
                                               const uint64_t buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
                                               int64_t *memory_type_id);

/* ----------------------------------------- entry points the backend defines */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend);
TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model);
TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests, const uint32_t request_count);

#ifdef __cplusplus
}
#endif

#endif
