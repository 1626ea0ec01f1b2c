/*
 * emudev_graph — graphs: what a stream capture produces, its
 * instantiation, and its launch as one unit of stream work.
 *
 * A graph is the list of work items its capture recorded, in capture
 * order (every capture here is a single stream, so the list is the
 * dependency order).  cuStreamEndCapture lives here, because what it
 * makes is a graph: emudev_stream.c ends the capture and hands over its
 * work.  cuGraphInstantiate deep-copies every node into the exec (each
 * work kind knows how to clone itself, kernel arguments included), so an
 * exec stays valid after its graph is destroyed and its arguments are
 * frozen as they were at capture.  cuGraphLaunch queues one work item that
 * runs the exec's nodes in order and stops at the first failure, whose
 * error becomes the context's sticky error like any other work's.
 * Launches of one exec are serialised by its own mutex: the nodes' records
 * are shared by every launch of the exec.
 *
 * Nodes may outlive the memory and objects they name; the objects are
 * held by reference, and copies and matmuls check their ranges again when
 * they run, so a graph replayed after a cuMemFree faults like a GPU would
 * (CUDA_ERROR_ILLEGAL_ADDRESS) instead of touching freed memory.
 *
 * A CUgraphNode is the address of a graph's work item (as
 * cuStreamGetCaptureInfo hands it out during the capture); an exec
 * remembers which of the graph's items each of its nodes was cloned from,
 * so cuGraphExecMemcpyNodeSetParams finds the node to update — provided
 * the graph still exists, as CUDA requires of the node handle.  A launch
 * runs its nodes in order and lets a kernel node with a programmatic edge
 * from the kernel before it start early (emudev_work_ops.start_early).
 */
#include <stdlib.h>

#include "emudev_internal.h"

/* ------------------------------------------------------------ graphs */

static void emudev_graph_free(emudev_obj *o) {
    emudev_work_list_free(((emudev_graph *)o)->head);
    free(o);
}

static void emudev_exec_free(emudev_obj *o) {
    emudev_exec *x = (emudev_exec *)o;
    for (size_t i = 0; i < x->count; i++) x->nodes[i]->ops->free(x->nodes[i]);
    free(x->nodes);
    free(x->origin);
    pthread_mutex_destroy(&x->run_mu);
    free(x);
}

/* A new graph that takes over the node list head (count nodes); NULL out
 * of memory, and the list is still the caller's. */
static emudev_graph *emudev_graph_new(emudev_work *head, size_t count) {
    static atomic_ullong serial;
    emudev_graph *gr = emudev_obj_new(sizeof *gr, EMUDEV_KIND_GRAPH, emudev_graph_free);
    if (!gr) return NULL;
    gr->head = head;
    gr->count = count;
    gr->serial = atomic_fetch_add(&serial, 1) + 1;
    return gr;
}

/* The stream's half is emudev_stream_capture_end; this half makes the graph. */
CUresult CUDAAPI cuStreamEndCapture(CUstream hs, CUgraph *phGraph) {
    CUresult rc = emudev_enter_result("cuStreamEndCapture", 1, phGraph);
    if (rc) return rc;
    emudev_work *nodes = NULL;
    size_t count = 0;
    int invalid = 0;
    if ((rc = emudev_stream_capture_end(hs, &nodes, &count, &invalid))) return rc;
    *phGraph = NULL;
    if (invalid) {
        emudev_work_list_free(nodes);
        return EMUDEV_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                          "cuStreamEndCapture: the capture was invalidated by an earlier prohibited call");
    }
    emudev_graph *gr = emudev_graph_new(nodes, count);
    if (!gr || emudev_obj_register(&gr->o) != 0) {
        if (gr) emudev_obj_free(&gr->o);
        else emudev_work_list_free(nodes);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuStreamEndCapture: out of memory");
    }
    emudev_stat_add(EMUDEV_STAT_GRAPHS, 1);
    *phGraph = gr;
    return CUDA_SUCCESS;
}

/* A registered exec holding a deep copy of every node of gr; NULL out of memory. */
static emudev_exec *emudev_exec_new(const emudev_graph *gr) {
    emudev_exec *x = emudev_obj_new(sizeof *x, EMUDEV_KIND_EXEC, emudev_exec_free);
    if (!x) return NULL;
    pthread_mutex_init(&x->run_mu, NULL);
    x->graph = gr;
    x->graph_serial = gr->serial;
    x->nodes = gr->count ? calloc(gr->count, sizeof *x->nodes) : NULL;
    x->origin = gr->count ? calloc(gr->count, sizeof *x->origin) : NULL;
    int ok = !gr->count || (x->nodes && x->origin);
    for (emudev_work *w = gr->head; w && ok; w = w->next)
        if ((x->nodes[x->count] = w->ops->clone(w))) x->origin[x->count++] = w;
        else ok = 0;
    if (!ok || emudev_obj_register(&x->o) != 0) {
        emudev_obj_free(&x->o);
        return NULL;
    }
    return x;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phExec, CUgraph hGraph, unsigned long long flags) {
    CUresult rc = emudev_enter_result("cuGraphInstantiate", 1, phExec);
    if (rc) return rc;
    const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (flags & ~known) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate: flags 0x%llx", flags);
    if ((rc = emudev_sticky("cuGraphInstantiate"))) return rc;
    emudev_graph *gr = (emudev_graph *)emudev_obj_ref(hGraph, EMUDEV_KIND_GRAPH);
    if (!gr) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphInstantiate: %p is not a live graph", (void *)hGraph);
    emudev_exec *x = emudev_exec_new(gr);
    emudev_obj_put(&gr->o);
    if (!x) return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuGraphInstantiate: out of memory");
    emudev_stat_add(EMUDEV_STAT_GRAPH_EXECS, 1);
    *phExec = x;
    return CUDA_SUCCESS;
}

typedef struct emudev_launch_work {
    emudev_work w;
    emudev_exec *x;   /* referenced */
    int pending;      /* counted in x->pending */
} emudev_launch_work;

/* The nodes in order; a kernel node with a programmatic edge from the
 * kernel before it starts early (emudev_work_ops.start_early). */
static CUresult emudev_launch_run(emudev_work *w) {
    emudev_exec *x = ((emudev_launch_work *)w)->x;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&x->run_mu);
    for (size_t i = 0; i < x->count && rc == CUDA_SUCCESS; i++) {
        emudev_work *next = i + 1 < x->count ? x->nodes[i + 1] : NULL;
        if (next && next->ops->start_early) rc = next->ops->start_early(next, x->nodes[i]);
        if (rc == CUDA_SUCCESS) rc = x->nodes[i]->ops->run(x->nodes[i]);
        if (rc != CUDA_SUCCESS && next && next->ops->drop_early) next->ops->drop_early(next);
    }
    pthread_mutex_unlock(&x->run_mu);
    emudev_stat_add(EMUDEV_STAT_GRAPH_LAUNCHES, 1);
    return rc;
}

/* A launch record is freed once it has run (or been discarded): the exec's
 * count of pending launches goes with it.  Clones (a graph launch captured
 * into another graph) are not pending launches. */
static void emudev_launch_free(emudev_work *w) {
    emudev_launch_work *lw = (emudev_launch_work *)w;
    if (lw->pending) atomic_fetch_sub(&lw->x->pending, 1);
    emudev_work_free_holding(w, &lw->x->o);
}

static emudev_work *emudev_launch_clone(const emudev_work *w) {
    emudev_launch_work *n = (emudev_launch_work *)emudev_work_copy_holding(w, sizeof(emudev_launch_work),
                                                                          &((const emudev_launch_work *)w)->x->o);
    if (n) n->pending = 0;
    return n ? &n->w : NULL;
}

static const emudev_work_ops emudev_launch_ops = {"cuGraphLaunch", emudev_launch_run, emudev_launch_clone,
                                                  emudev_launch_free, NULL, NULL, NULL, NULL};

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hExec, CUstream hs) {
    CUresult rc = emudev_enter("cuGraphLaunch", 1);
    if (rc) return rc;
    emudev_exec *x = (emudev_exec *)emudev_obj_ref(hExec, EMUDEV_KIND_EXEC);
    if (!x) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "cuGraphLaunch: %p is not a live graph exec", (void *)hExec);
    emudev_launch_work *lw = malloc(sizeof *lw);
    if (!lw) {
        emudev_obj_put(&x->o);
        return EMUDEV_ERR(CUDA_ERROR_OUT_OF_MEMORY, "cuGraphLaunch: out of memory");
    }
    /* a launch recorded into a capture is a node, not a pending launch */
    emudev_stream *s = NULL;
    int queued = emudev_stream_resolve(hs, "cuGraphLaunch", &s) == CUDA_SUCCESS && !emudev_stream_capturing(s);
    emudev_obj_put(s ? &s->o : NULL);
    *lw = (emudev_launch_work){{&emudev_launch_ops, NULL}, x, queued};
    if (queued) atomic_fetch_add(&x->pending, 1);
    return emudev_submit_named(hs, &lw->w, "cuGraphLaunch");
}

/* The node of x cloned from the graph node `node` of the (live) graph x
 * was instantiated from; NULL if there is none. */
static emudev_work *emudev_exec_node(emudev_exec *x, CUgraphNode node) {
    pthread_mutex_lock(&emudev_g.mu);
    const emudev_graph *gr = (const emudev_graph *)emudev_reg_get(x->graph, EMUDEV_KIND_GRAPH);
    int live = gr && gr->serial == x->graph_serial;
    pthread_mutex_unlock(&emudev_g.mu);
    for (size_t i = 0; live && i < x->count; i++)
        if ((const void *)x->origin[i] == (const void *)node) return x->nodes[i];
    return NULL;
}

/*
 * New parameters for one copy node of an instantiated graph, for its next
 * launches.  hNode is a node of the graph the exec came from, so that
 * graph must still exist.  CUDA lets launches already enqueued keep the
 * old parameters; the emulator, whose launches share the exec's nodes,
 * refuses an update while one is pending rather than change it under them.
 */
CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
    static const char fn[] = "cuGraphExecMemcpyNodeSetParams";
    CUresult rc = emudev_enter(fn, 1);
    if (rc) return rc;
    if (!copyParams) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: copyParams is NULL", fn);
    if (ctx != &emudev_primary) return EMUDEV_ERR(CUDA_ERROR_INVALID_CONTEXT, "%s: %p is not the device's context", fn,
                                                  (void *)ctx);
    emudev_exec *x = (emudev_exec *)emudev_obj_ref(hGraphExec, EMUDEV_KIND_EXEC);
    if (!x) return EMUDEV_ERR(CUDA_ERROR_INVALID_HANDLE, "%s: %p is not a live graph exec", fn, (void *)hGraphExec);
    emudev_work *n = emudev_exec_node(x, hNode);
    pthread_mutex_lock(&x->run_mu);
    if (!n)
        rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE,
                        "%s: %p is not a node of the (still existing) graph the exec was instantiated from", fn,
                        (void *)hNode);
    else if (!n->ops->update) rc = EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: node %p is not a memcpy node", fn, (void *)hNode);
    else if (atomic_load(&x->pending))
        rc = EMUDEV_ERR(CUDA_ERROR_NOT_SUPPORTED, "%s: a launch of the exec is still pending (synchronise first)", fn);
    else rc = n->ops->update(n, copyParams);
    pthread_mutex_unlock(&x->run_mu);
    emudev_obj_put(&x->o);
    return rc;
}

/* Under emudev_g.mu: whether node is a node of a live graph. */
static int emudev_graph_has_node_locked(CUgraphNode node) {
    for (size_t i = 0; i < emudev_g.reg_cap; i++) {
        const emudev_obj *o = emudev_g.reg[i];
        if (!o || o->kind != EMUDEV_KIND_GRAPH) continue;
        for (const emudev_work *w = ((const emudev_graph *)o)->head; w; w = w->next)
            if ((const void *)w == (const void *)node) return 1;
    }
    return 0;
}

/* A copy node's parameters (emudev_work_ops.params); the node must belong
 * to a graph that still exists. */
CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams) {
    static const char fn[] = "cuGraphMemcpyNodeGetParams";
    CUresult rc = emudev_enter(fn, 1);
    if (rc) return rc;
    if (!nodeParams) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: nodeParams is NULL", fn);
    pthread_mutex_lock(&emudev_g.mu);
    int live = emudev_graph_has_node_locked(hNode);
    const emudev_work *w = live ? (const emudev_work *)hNode : NULL;
    int copy = w && w->ops->params;
    if (copy) w->ops->params(w, nodeParams);
    pthread_mutex_unlock(&emudev_g.mu);
    if (!live) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: %p is not a node of a live graph", fn, (void *)hNode);
    if (!copy) return EMUDEV_ERR(CUDA_ERROR_INVALID_VALUE, "%s: node %p is not a memcpy node", fn, (void *)hNode);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hExec) {
    CUresult rc = emudev_enter("cuGraphExecDestroy", 1);
    if (rc) return rc;
    return emudev_obj_destroy("cuGraphExecDestroy", hExec, EMUDEV_KIND_EXEC, "graph exec", EMUDEV_STAT_GRAPH_EXECS);
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    CUresult rc = emudev_enter("cuGraphDestroy", 0);
    if (rc) return rc;
    return emudev_obj_destroy("cuGraphDestroy", hGraph, EMUDEV_KIND_GRAPH, "graph", EMUDEV_STAT_GRAPHS);
}
