/*
 * emudev_internal — what the emulated device's files share, and a map of
 * which file owns what.
 *
 * The CUDA driver API half is cut by area; each file owns one kind of
 * object or one mechanism, and the state they all touch is declared in the
 * last part of this header.  Calls between the files go one way only (no
 * two call each other, directly or around a loop): emudev_state.c calls
 * none of the others (an object carries its kind's free function),
 * emudev_stream.c only emudev_state.c, and the rest call down to them.
 *
 *   emudev_state.c    the objects' common life: global state, the handle
 *                     registry, reference counting, settings, failure
 *                     injection, entry checks and the sticky error
 *   emudev_stream.c   streams: the queue and its drain, submission,
 *                     stream capture, its interaction rules and its state
 *                     (cuStreamGetCaptureInfo)
 *   emudev_context.c  cuInit, the device, the primary context, and what
 *                     destroying the context destroys
 *   emudev_memory.c   device and pinned allocations, copies
 *   emudev_module.c   loading module images, functions, kernel launches
 *                     (cuLaunchKernel, cuLaunchKernelEx and programmatic
 *                     dependent launch), the prefetch range check
 *   emudev_graph.c    graphs: made by ending a capture, instantiated, launched;
 *                     copy nodes of an exec updated
 *   emudev_event.c    events: records, synchronisation, timing
 *   emudev_control.c  the control API of emudev.h (bertc_emudev_*)
 *
 * and beside it:
 *
 *   emudev_blaslt.c  the cuBLASLt subset (handles, descriptors, heuristics,
 *                    cublasLtMatmul as a unit of stream work)
 *   emudev_gemm.c    the arithmetic of one matmul (float32 from storage types)
 *   emudev_image.c   what a module image is: EMU shared object, CUBIN, PTX
 *
 * The point of the driver half is to be strict where a GPU is strict, so
 * that a runtime which passes its tests here does not meet a new class of
 * bug on the first real GPU: work is deferred (emudev_stream.c), errors
 * are sticky (emudev_state.c, cleared by emudev_context.c), stream capture
 * enforces the documented interaction rules (emudev_stream.c), and handles
 * are checked and reference-counted (emudev_state.c).  Each file's opening
 * comment says why, for its part.
 *
 * Work model.  Every asynchronous operation becomes an `emudev_work`
 * handed to emudev_submit(): on a stream in capture it is recorded into the
 * capture's graph; otherwise it is queued on the stream and runs at the next
 * synchronisation point (cuStreamSynchronize, cuEventSynchronize, a
 * synchronous copy).  Deferring is deliberate: a runtime that reads a
 * result before synchronising reads the fill byte, not the answer.
 */
#ifndef BERTC_EMUDEV_INTERNAL_H
#define BERTC_EMUDEV_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "emu.h"
#include "emudev.h"

/* ------------------------------------------------------------ work */

typedef struct emudev_work emudev_work;

typedef struct emudev_work_ops {
    const char *what;                              /* "kernel bertc_x", "matmul", ... */
    /* Executes the work; CUDA_SUCCESS, or an error that becomes the stream's
     * (and the context's) sticky error, with bertc_emudev_last_error set. */
    CUresult (*run)(emudev_work *w);
    /* A deep copy (graph instantiation copies every node). NULL: no memory. */
    emudev_work *(*clone)(const emudev_work *w);
    void (*free)(emudev_work *w);
    /*
     * Programmatic dependent launch (kernels only; NULL elsewhere).  Whoever
     * executes a sequence of work — a stream's drain, a graph's launch —
     * calls start_early(w, prev) on the item it will run next just before
     * running that item's predecessor prev.  A kernel launched with the
     * programmatic-stream-serialization attribute whose predecessor is
     * another kernel then runs the part before its griddepcontrol.wait
     * (emu_kernel_launch_dependent) and its run() finishes it; anything else
     * does nothing here.  drop_early undoes it when prev fails and w will
     * not run.  Executors only call through these, so stream and graph code
     * need not know kernels.
     */
    CUresult (*start_early)(emudev_work *w, const emudev_work *prev);
    void (*drop_early)(emudev_work *w);
    /* New parameters for a node of an instantiated graph (copies only:
     * cuGraphExecMemcpyNodeSetParams's CUDA_MEMCPY3D); NULL elsewhere. */
    CUresult (*update)(emudev_work *w, const void *params);
    /* A node's parameters as cuGraphMemcpyNodeGetParams reports them
     * (copies only: a CUDA_MEMCPY3D); NULL elsewhere. */
    void (*params)(const emudev_work *w, void *out);
} emudev_work_ops;

/* Embedded as the first member of every concrete work record. */
struct emudev_work {
    const emudev_work_ops *ops;
    emudev_work *next;                             /* queue / node list link, owned by the driver */
};

/* Queues w on stream s (NULL = the legacy default stream), or records it
 * when s is capturing.  Takes ownership of w whatever it returns. */
CUresult emudev_submit(CUstream s, emudev_work *w);

/* A flat copy of a work record of `bytes` bytes, unlinked; NULL out of
 * memory.  The common first step of every clone. */
emudev_work *emudev_work_copy(const emudev_work *w, size_t bytes);

/* ------------------------------------------------------------ driver services */

/* Device pointers are host addresses. */
static inline void *emudev_host_ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }

/* 1 if [p, p + bytes) lies inside one live cuMemAlloc allocation. */
int emudev_mem_valid(CUdeviceptr p, size_t bytes);

/* Failure injection (bertc_emudev_fail): 1 if this call of `name` must
 * fail, with *code set to the armed code. Call once at the top of every
 * emulated function. */
int emudev_should_fail(const char *name, int *code);

/* Records the calling thread's last error message (printf-style); returns code. */
int emudev_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Null-device mode (bertc_emudev_set_null). */
int emudev_null(void);
/* How many algorithms cuBLASLt's heuristic offers per problem (bertc_emudev_set_algorithms). */
#define EMUDEV_MAX_ALGORITHMS 16
int emudev_algorithms(void);
/* Microseconds a matmul under algorithm variant v takes beyond its work. */
int emudev_algorithm_delay_us(unsigned v);

/* Adjusts a live-object counter of bertc_emudev_stats by delta. */
typedef enum emudev_counter {
    EMUDEV_COUNTER_BLASLT_OBJECTS,
    EMUDEV_COUNTER_MATMULS,
} emudev_counter;
void emudev_count(emudev_counter c, long delta);

/* ------------------------------------------------------------ matmul arithmetic */

typedef enum emudev_type {
    EMUDEV_TYPE_F32,
    EMUDEV_TYPE_F16,
    EMUDEV_TYPE_BF16,
} emudev_type;

/*
 * D = epilogue(alpha * op(A) op(B) + beta * C), column-major (cuBLASLt's
 * convention), batch_count times with the given element strides.  op(A) is
 * m x k (A is k x m with lda >= k when transa, else m x k with lda >= m);
 * op(B) is k x n likewise.  Products and sums in float32 (the compute type
 * the plans use); C is read in its storage type; the result is rounded
 * once to D's type, round-to-nearest-even.  Epilogue (cublasLtEpilogue_t
 * values): 1 none, 2 relu, 4 bias, 6 relu+bias; bias[i] (length m, of
 * bias_type) is added to row i before relu.  C may alias D (in place).
 * beta == 0 never reads C (C may be NULL then), as cuBLASLt.
 */
typedef struct emudev_gemm_args {
    int transa, transb;
    int64_t m, n, k;
    emudev_type a_type, b_type, c_type, d_type, bias_type;
    const void *a, *b, *c;
    void *d;
    const void *bias;
    int64_t lda, ldb, ldc, ldd;
    int batch_count;
    int64_t stride_a, stride_b, stride_c, stride_d;
    float alpha, beta;
    int epilogue;
} emudev_gemm_args;

void emudev_gemm_compute(const emudev_gemm_args *g);

/* ------------------------------------------------------------ module images */

typedef enum emudev_image_kind {
    EMUDEV_IMAGE_UNKNOWN,
    EMUDEV_IMAGE_EMU,     /* x86-64 ELF shared object with bertc_emu_image_abi */
    EMUDEV_IMAGE_CUBIN,   /* ELF, e_machine EM_CUDA (190) */
    EMUDEV_IMAGE_PTX,     /* PTX text (.version, .target, .entry) */
} emudev_image_kind;

typedef struct emudev_image_info {
    emudev_image_kind kind;
    int sm;               /* CUBIN: the SM it was built for (80 = sm_80); PTX: the .target (75); EMU: 0 */
    int nentries;         /* CUBIN/PTX: kernel entry points */
    char **entries;       /* malloc'd names */
    char why[256];        /* UNKNOWN: why the bytes are not a usable image */
} emudev_image_info;

/* Classifies `size` bytes at `data`; never reads outside them.  Returns 0
 * (info filled, kind may be UNKNOWN with `why`) or -1 out of memory. */
int emudev_image_inspect(const void *data, size_t size, emudev_image_info *info);
void emudev_image_info_free(emudev_image_info *info);
/* Whether code for `sm` (CUBIN: binary; PTX: JIT) runs on capability major.minor. */
int emudev_image_runs_on(emudev_image_kind kind, int sm, int major, int minor);

/* ------------------------------------------------------------ the driver half: objects
 * Everything below is shared by the files of the CUDA driver API half
 * (emudev_state.c ... emudev_control.c); the cuBLASLt half does not use it. */

#define EMUDEV_ERR(code, ...) ((CUresult)emudev_error((int)(code), __VA_ARGS__))
#define EMUDEV_MAX_INJECTIONS 32

typedef enum emudev_kind {
    EMUDEV_KIND_STREAM = 1,
    EMUDEV_KIND_EVENT,
    EMUDEV_KIND_MODULE,
    EMUDEV_KIND_FUNCTION,
    EMUDEV_KIND_GRAPH,
    EMUDEV_KIND_EXEC,
} emudev_kind;

typedef struct emudev_obj {
    emudev_kind kind;
    atomic_int refs;   /* the handle's reference + one per work item / node holding it */
    /* Frees the object and what it owns; set by the file of its kind, so
     * that the reference counting needs to know no kind.  NULL: owned by
     * another object (a function by its module), never freed alone. */
    void (*free)(struct emudev_obj *o);
} emudev_obj;

typedef struct CUctx_st {
    int unused;
} emudev_ctx;

typedef struct CUstream_st {
    emudev_obj o;
    unsigned flags;
    pthread_mutex_t mu;          /* queue and draining */
    pthread_cond_t cv;
    emudev_work *head, *tail;
    int draining;
    /* capture state, under emudev_g.mu */
    int capturing, cap_invalid;
    CUstreamCaptureMode cap_mode;
    pthread_t cap_thread;
    emudev_work *cap_head, *cap_tail;
    size_t cap_count;
    uint64_t cap_id;                   /* of the current capture sequence */
    CUgraphNode cap_dep;               /* cuStreamGetCaptureInfo's answer (valid until the next call) */
    CUgraphEdgeData cap_edge;
    struct CUstream_st *next;    /* emudev_g.streams */
} emudev_stream;

typedef struct CUevent_st {
    emudev_obj o;
    unsigned flags;
    pthread_mutex_t mu;
    uint64_t seq_recorded, seq_done;   /* records issued / executed */
    struct timespec stamp;             /* of the latest record, once executed */
    int captured;                      /* last recorded in a capturing stream */
    emudev_stream *stream;             /* of the latest record (a reference) */
} emudev_event;

typedef struct CUfunc_st emudev_function;

typedef struct CUmod_st {
    emudev_obj o;
    emudev_image_kind kind;
    emu_image *image;       /* EMU images: loaded from a memfd */
    int fd;
    int nentries;           /* CUBIN/PTX: entry names, bound to twins */
    char **entries;
    emudev_function *functions;
} emudev_module;

struct CUfunc_st {
    emudev_obj o;
    emudev_module *module;
    emu_kernel *kernel;
    char *name;
    unsigned nargs;
    const unsigned *arg_sizes;
    atomic_uint max_dynamic_smem;
    emudev_function *next;
};

/* A graph's nodes are its work items; a CUgraphNode handle is the item's address. */
typedef struct CUgraph_st {
    emudev_obj o;
    emudev_work *head;
    size_t count;
    uint64_t serial;          /* tells a graph apart from a later one at the same address */
} emudev_graph;

typedef struct CUgraphExec_st {
    emudev_obj o;
    pthread_mutex_t run_mu;   /* launches of one exec are ordered, never concurrent */
    size_t count;
    emudev_work **nodes;
    const emudev_work **origin;   /* [count] the graph node each was cloned from (compared, never read) */
    const emudev_graph *graph;    /* instantiated from (compared, and looked up in the registry) */
    uint64_t graph_serial;
    atomic_int pending;           /* launches queued and not yet run */
} emudev_exec;

/* ------------------------------------------------------------ the driver half: global state */

typedef struct emudev_range {
    uintptr_t base;
    size_t size;
} emudev_range;

/* A sorted table of live allocations (emudev_memory.c). */
typedef struct emudev_ranges {
    emudev_range *v;
    size_t n, cap;
} emudev_ranges;

typedef struct emudev_injection {
    char name[64];
    int remaining;
    int code;
} emudev_injection;

/* A registered EMU image whose kernels serve CUBIN/PTX modules. */
typedef struct emudev_twin {
    emu_image *image;
    int fd;
    struct emudev_twin *next;
} emudev_twin;

typedef enum emudev_stat {
    EMUDEV_STAT_ALLOCATIONS,
    EMUDEV_STAT_HOST_ALLOCATIONS,
    EMUDEV_STAT_BYTES,
    EMUDEV_STAT_MODULES,
    EMUDEV_STAT_STREAMS,
    EMUDEV_STAT_EVENTS,
    EMUDEV_STAT_GRAPHS,
    EMUDEV_STAT_GRAPH_EXECS,
    EMUDEV_STAT_PRIMARY_RETAINS,
    EMUDEV_STAT_BLASLT_OBJECTS,
    EMUDEV_STAT_KERNEL_LAUNCHES,
    EMUDEV_STAT_MATMULS,
    EMUDEV_STAT_GRAPH_LAUNCHES,
    EMUDEV_STAT_COPIES,
    EMUDEV_STAT_BYTES_TO_DEVICE,
    EMUDEV_STAT_BYTES_TO_HOST,
    EMUDEV_STAT_PROGRAMMATIC_OVERLAPPED,
    EMUDEV_STAT_PROGRAMMATIC_SERIALISED,
    EMUDEV_STAT_DEPENDENCY_WAITS,
    EMUDEV_STAT_PARKED_WAITS,
    EMUDEV_STAT_TRIGGERS,
    EMUDEV_STAT_PREFETCHES,
    EMUDEV_STAT_COUNT,
} emudev_stat;

/* The one device's state; defined in emudev_state.c. */
typedef struct emudev_state {
    pthread_mutex_t mu;        /* registry, streams list, captures, twins, primary refs, sticky text */
    pthread_mutex_t mem_mu;    /* dev, host */
    pthread_mutex_t fail_mu;   /* inj */
    atomic_int initialized;
    atomic_int arch_major, arch_minor, fill, null_mode, schedule, algorithms;
    atomic_int algorithm_delay_us[EMUDEV_MAX_ALGORITHMS];   /* bertc_emudev_set_algorithm_delay */
    atomic_int driver_version;                               /* what cuDriverGetVersion reports */
    atomic_ullong seed;
    atomic_int armed;
    emudev_injection inj[EMUDEV_MAX_INJECTIONS];
    /* bertc_emudev_stray_write: launches left until the stray byte (0:
     * disarmed), under fail_mu with the argument and offset */
    long stray_remaining;
    int stray_arg;
    long long stray_offset;
    emudev_ranges dev, host;
    atomic_long primary_refs;
    atomic_int sticky;
    char sticky_text[1024];
    emudev_obj **reg;          /* open-addressing set of live handles */
    size_t reg_cap, reg_n;
    emudev_stream *streams;
    emudev_twin *twins;
    atomic_long stats[EMUDEV_STAT_COUNT];
} emudev_state;

extern emudev_state emudev_g;
extern emudev_ctx emudev_primary;
extern emudev_stream emudev_legacy;            /* the legacy default stream, never freed */
extern _Thread_local emudev_ctx *emudev_tls_ctx;
extern _Thread_local char emudev_tls_error[2048];

/* ------------------------------------------------------------ emudev_state.c */

void emudev_stat_add(emudev_stat s, long d);
/* Copies text into a buffer of cap bytes, truncating. */
void emudev_text_copy(char *dst, size_t cap, const char *src);
/* BERTC_EMU_* into emudev_g (at load, and by bertc_emudev_reset). */
void emudev_settings_from_env(void);

/* The handle registry, under emudev_g.mu. */
int emudev_reg_add(emudev_obj *o);
void emudev_reg_remove(const void *p);
/* The live object of that kind behind a handle, or NULL. */
emudev_obj *emudev_reg_get(const void *p, emudev_kind kind);
/* Empties the registry and hands over its objects (a malloc'd array of
 * *n; NULL if none). */
emudev_obj **emudev_reg_take_all_locked(size_t *n);

/* A zeroed object of `size` bytes (an emudev_obj first) holding the
 * handle's reference, freed by free_fn; not yet registered.  NULL out of
 * memory. */
void *emudev_obj_new(size_t size, emudev_kind kind, void (*free_fn)(emudev_obj *o));
void emudev_obj_get(emudev_obj *o);
/* Drops a reference (NULL: nothing); the last one frees the object. */
void emudev_obj_put(emudev_obj *o);
/* Frees an object with what it owns (its emudev_obj.free), whatever its references. */
void emudev_obj_free(emudev_obj *o);
/* Looks a handle up and takes a reference; NULL if it is not a live object of that kind. */
emudev_obj *emudev_obj_ref(const void *handle, emudev_kind kind);
/* Registers a new object (locks emudev_g.mu); 0, or -1 out of memory. */
int emudev_obj_register(emudev_obj *o);
/* The common destroy call: unregisters the handle, lowers the live counter
 * `stat` and drops the handle's reference; INVALID_HANDLE naming `what`
 * if it is not a live object of that kind. */
CUresult emudev_obj_destroy(const char *name, const void *handle, emudev_kind kind, const char *what,
                            emudev_stat stat);
void emudev_work_list_free(emudev_work *w);
/* The clone and the free of a work record that holds a reference to one
 * object (the event it records, the exec it launches, the module of the
 * kernel it runs): the copy takes a reference of its own. */
emudev_work *emudev_work_copy_holding(const emudev_work *w, size_t bytes, emudev_obj *held);
void emudev_work_free_holding(emudev_work *w, emudev_obj *held);

/* cuInit, and (need_ctx) a live current context. */
CUresult emudev_ready(const char *name, int need_ctx);
/* Every CUDA function starts here: an injected failure first, then emudev_ready. */
CUresult emudev_enter(const char *name, int need_ctx);
/* emudev_enter, then the pointer the call returns its result through
 * (INVALID_VALUE "NULL pointer" if it is NULL). */
CUresult emudev_enter_result(const char *name, int need_ctx, const void *result);
void emudev_sticky_set(CUresult code);
/* The context's sticky error, with the message of the failure that set it. */
CUresult emudev_sticky(const char *name);

/* ------------------------------------------------------------ emudev_stream.c */

/* The capture rules, under emudev_g.mu (the _locked ones) or taking it. */
CUresult emudev_capture_unsafe_locked(const char *name);
CUresult emudev_capture_unsafe(const char *name);
CUresult emudev_capture_legacy_locked(const char *name);

/* Resolves a stream handle (NULL and CU_STREAM_LEGACY: the legacy stream), taking a reference. */
CUresult emudev_stream_resolve_locked(CUstream h, const char *name, emudev_stream **out);
CUresult emudev_stream_resolve(CUstream h, const char *name, emudev_stream **out);
int emudev_stream_capturing(emudev_stream *s);
/* Runs s's queue on the calling thread. */
void emudev_stream_drain(emudev_stream *s);
/* Drains every stream (blocking_only: those the legacy stream waits for), then the legacy stream. */
void emudev_streams_drain(int blocking_only);
/* A synchronisation of s in the driver's order (cuStreamSynchronize without the capture checks). */
void emudev_stream_sync(emudev_stream *s);
/* Takes s's queued work out, unrun; the caller frees it. */
emudev_work *emudev_stream_queue_take(emudev_stream *s);
/* Ends s's capture, if any, and takes the work it recorded; the caller frees it. */
emudev_work *emudev_stream_capture_take(emudev_stream *s);
/* cuStreamEndCapture's half that concerns the stream: ends the capture of
 * hs and hands over the work it recorded (*count items) and whether a
 * prohibited call invalidated it. */
CUresult emudev_stream_capture_end(CUstream hs, emudev_work **nodes, size_t *count, int *invalid);
/* Queues or records w; the caller has run emudev_should_fail for its own name. */
CUresult emudev_submit_named(CUstream h, emudev_work *w, const char *name);

/* ------------------------------------------------------------ emudev_memory.c */

/* Frees every device and pinned allocation (context destruction). */
void emudev_memory_free_all(void);

/* ------------------------------------------------------------ emudev_module.c */

/* Loads an EMU image from `size` bytes; NULL with `why` on failure. */
emu_image *emudev_image_load(const void *data, size_t size, int *fd_out, char *why, size_t cap);
void emudev_image_release(emu_image *im, int fd);

#endif
