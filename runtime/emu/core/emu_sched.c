/*
 * emu_sched — fibers, barriers, warp exchanges and schedules: how the
 * emulated device runs a grid.
 *
 * Every CUDA thread of a block is a fiber with its own 64 KiB stack window
 * (emu_abi.h: guard page, stack, thread record at a per-window colour
 * offset, so that a warp's records and stack tops do not all fall into the
 * same cache sets); blocks run one after
 * another on the launching OS thread, each reusing the same fibers.  A
 * fiber runs until it must wait — at __syncthreads, at a warp intrinsic
 * whose other lanes have not arrived, or because it returned — and then
 * the *schedule* picks the next runnable fiber and switches to it directly
 * (fiber to fiber: one context switch per wait, not two via a scheduler
 * loop).  The main context is entered only when the block is done or has
 * failed.
 *
 * __syncthreads is a counting barrier over the *live* threads: the last
 * arrival releases the others, and a thread that returns lowers the count
 * (releasing the barrier if everybody else is already there), as on Volta
 * and later GPUs.  The releasing thread then yields like everyone else, so
 * under round-robin every thread finishes one phase before any starts the
 * next (lock step, like a GPU; which is exactly why round-robin alone hides
 * races and the other schedules exist).  Threads that reach __syncthreads at different source
 * lines fail the launch ("divergent barrier"): CUDA calls that undefined,
 * and it is the bug the test suites must catch.
 *
 * A warp intrinsic is an exchange among the lanes of its mask (restricted
 * to lanes that exist; a partial last warp is normal).  Each lane publishes
 * its value, source lane and mask in its slot of the warp's exchange block
 * and waits; the lane that completes the set computes every participant's
 * result (the value of its source lane, or the ballot) into that
 * participant's result slot, releases them and yields.  Results live per
 * lane, so a fast lane that moves on to the next exchange cannot overwrite
 * what a slow one has yet to read.  An all-gather is staged once (each
 * lane's bytes copied one time) and the staged block is then copied to
 * every participant.  The exchange block is one compact per-warp array in
 * the run, not 32 records in 32 stack windows, and which fibers are
 * runnable, at the barrier or waiting in an exchange is kept in bitmasks,
 * so completing an exchange or a barrier touches a few cache lines and
 * needs no scan over the threads.
 * Lanes that disagree on the mask or on the intrinsic, a mask naming a lane
 * that has exited, or a lane exiting while others wait for it, fail the
 * launch.
 *
 * When no fiber is runnable but some are live, the block is deadlocked: the
 * launch stops and the diagnostic lists who waits where — unless some of
 * them wait in griddepcontrol.wait for a predecessor grid.
 *
 * Programmatic dependent launch (emu_kernel_launch_dependent).  A grid
 * launched while its predecessor may still run has one *held* block: it
 * runs first, and a thread that reaches griddepcontrol.wait parks (a
 * bitmask like the barrier's, not runnable) until emu_grid_finish says the
 * predecessor is done.  When nothing is runnable and threads are parked,
 * the last fiber to stop switches to the main context like any switch,
 * saving itself, and the block is suspended with all its fibers' stacks,
 * its dynamic shared memory and its run record intact; emu_run_resume makes
 * the parked threads runnable and switches back into the schedule's pick.
 * A thread that only exits or waits at a barrier behind a parked one is
 * fine: the barrier completes when the parked thread arrives after its
 * wait.  Everything else about a block (barriers, exchanges, schedules)
 * is unchanged, and a grid launched plainly never parks: its waits return
 * at once.  Blocks of one grid share nothing but static __shared__ memory
 * (per kernel), which is why only one block per grid is ever held and why
 * the caller must not run the held kernel again before finishing it.
 * launch_dependents is counted per block; a prefetch's range goes to the
 * checker the device installed (emu_set_mem_check).
 *
 * Schedules (emu.h) only choose among runnable fibers, so they never change
 * what a correct kernel computes; they change which races show.
 *
 * Stacks are reserved with MAP_NORESERVE (only touched pages cost memory)
 * and pooled across launches.  Under AddressSanitizer every switch is
 * announced with __sanitizer_start/finish_switch_fiber, and stacks that a
 * failed launch abandoned are unpoisoned before reuse.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_async.h"
#include "emu_internal.h"

#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* emu_switch.S */
__attribute__((visibility("hidden"))) void emu_ctx_swap(void **save_sp, void *load_sp);
__attribute__((visibility("hidden"))) void emu_ctx_start(void);

#define EMU_WORDS (EMU_MAX_BLOCK_THREADS / 64u)
#define EMU_MAX_WARPS (EMU_MAX_BLOCK_THREADS / 32u)
#define EMU_MXCSR_DEFAULT 0x1f80ull     /* round to nearest, all exceptions masked, no FTZ/DAZ */
#define EMU_X87CW_DEFAULT 0x037full

typedef struct emu_run emu_run;

/* One CUDA thread; lives in the thread slot of its stack window.  Only the
 * fiber itself and the switch into it touch it: what other lanes read or
 * write during an exchange lives in the run's per-warp block. */
typedef struct emu_fiber {
    bertc_emu_thread abi;          /* first: the part kernel code sees */
    emu_run *run;
    void *sp;                      /* saved stack pointer while switched out */
    unsigned index;                /* linear thread index in the block */
    void *asan_fake;
} emu_fiber;

/* The exchange block of one warp; slot j belongs to lane j.  A lane's
 * op/target/src/value/file/line describe the exchange it waits in (valid
 * while its bit is in `waiting`), result is what its last exchange gave. */
typedef struct emu_warp {
    uint32_t waiting;              /* lanes waiting in an exchange */
    uint32_t exited;               /* lanes that have returned */
    uint32_t exists;               /* lanes the block has */
    uint32_t target[32];           /* lanes of the exchange waited in */
    int op[32];                    /* bertc_emu_warp_op */
    int src[32];
    int line[32];
    unsigned long long value[32];
    unsigned long long result[32];
    const char *file[32];
} emu_warp;

_Static_assert(sizeof(emu_fiber) <= BERTC_EMU_THREAD_SLOT, "thread record larger than its slot");
_Static_assert((BERTC_EMU_STACK_SPAN & (BERTC_EMU_STACK_SPAN - 1u)) == 0, "span must be a power of two");
_Static_assert((BERTC_EMU_COLOURS & (BERTC_EMU_COLOURS - 1u)) == 0, "colours must be a power of two");
_Static_assert(BERTC_EMU_COLOURS * BERTC_EMU_COLOUR_STRIDE <= BERTC_EMU_STACK_SPAN / 8u,
               "colour padding would eat the stack");

/* A reusable set of stack windows. */
typedef struct emu_stacks {
    struct emu_stacks *next;
    void *map;
    size_t map_len;
    char *base;                    /* first window, aligned to BERTC_EMU_STACK_SPAN */
    unsigned count;
} emu_stacks;

struct emu_run {
    bertc_emu_launch launch;       /* what kernel code reads (ops, indices) */
    emu_kernel *kernel;
    void **args;
    emu_schedule sched;
    uint64_t rng;
    unsigned nthreads, nwarps;
    emu_stacks *stacks;
    uint64_t runnable[EMU_WORDS];
    uint64_t at_barrier[EMU_WORDS];
    unsigned live;                 /* threads that have not returned */
    unsigned arrived;              /* at the current __syncthreads */
    const char *bar_file;
    int bar_line;
    unsigned char *stage;          /* all-gather staging, stage_cap bytes */
    size_t stage_cap;
    void *main_sp;
    emu_status status;
    char msg[3072];
    uint64_t switches;
    void *main_fake;
    const void *main_lo;
    size_t main_size;
    const void *from_lo;
    size_t from_size;
    /* programmatic dependent launch (emu_kernel_launch_dependent) */
    int dependency_pending;        /* griddepcontrol.wait parks until emu_grid_finish */
    int suspended;                 /* the block went back to main with threads parked */
    int serial_locked;             /* holds the image's launch lock (sanitized images) */
    unsigned parked;               /* threads parked in griddepcontrol.wait */
    uint64_t at_wait[EMU_WORDS];
    long early;                    /* linear index of the held block; -1 if none */
    uint64_t order_seed;           /* the launch's seed: the random schedule's block order */
    int block_triggered;           /* the current block executed launch_dependents */
    uint64_t blocks_run;
    uint64_t waits, parked_total, triggers, prefetches;
    emu_async_queue *async;        /* per thread: its cp.async copies in flight */
    emu_warp warps[EMU_MAX_WARPS];
};

static _Thread_local emu_launch_stats emu_stats_last;

/* ------------------------------------------------------------ stack pool */

static pthread_mutex_t emu_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_stacks *emu_pool;

static emu_stacks *emu_stacks_new(unsigned count) {
    size_t span = BERTC_EMU_STACK_SPAN;
    size_t len = ((size_t)count + 1u) * span;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return NULL;
    emu_stacks *s = malloc(sizeof *s);
    if (!s) {
        munmap(map, len);
        return NULL;
    }
    s->next = NULL;
    s->map = map;
    s->map_len = len;
    s->base = (char *)(((uintptr_t)map + span - 1u) & ~(uintptr_t)(span - 1u));
    s->count = count;
    for (unsigned i = 0; i < count; i++) {
        if (mprotect(s->base + (size_t)i * span, BERTC_EMU_GUARD, PROT_NONE) != 0) {
            munmap(map, len);
            free(s);
            return NULL;
        }
    }
    return s;
}

static emu_stacks *emu_stacks_get(unsigned n) {
    pthread_mutex_lock(&emu_pool_lock);
    for (emu_stacks **pp = &emu_pool; *pp; pp = &(*pp)->next) {
        if ((*pp)->count >= n) {
            emu_stacks *s = *pp;
            *pp = s->next;
            pthread_mutex_unlock(&emu_pool_lock);
            return s;
        }
    }
    pthread_mutex_unlock(&emu_pool_lock);
    return emu_stacks_new(n <= 256u ? 256u : EMU_MAX_BLOCK_THREADS);
}

static void emu_stacks_put(emu_stacks *s) {
    pthread_mutex_lock(&emu_pool_lock);
    s->next = emu_pool;
    emu_pool = s;
    pthread_mutex_unlock(&emu_pool_lock);
}

/* The record of window i: where the prelude's BERTC_EMU_THREAD_AT finds it. */
static inline emu_fiber *emu_fiber_at(const emu_run *r, unsigned i) {
    unsigned long window = (unsigned long)(uintptr_t)(r->stacks->base + (size_t)i * BERTC_EMU_STACK_SPAN);
    return (emu_fiber *)(uintptr_t)BERTC_EMU_THREAD_AT(window);
}

static inline char *emu_fiber_stack_lo(const emu_run *r, unsigned i) {
    return r->stacks->base + (size_t)i * BERTC_EMU_STACK_SPAN + BERTC_EMU_GUARD;
}

/* The stack of window i runs from its guard page up to its record. */
static inline size_t emu_fiber_stack_size(const emu_run *r, unsigned i) {
    return (size_t)((char *)emu_fiber_at(r, i) - emu_fiber_stack_lo(r, i));
}

/* ------------------------------------------------------------ switching */

static inline void emu_switch(emu_run *r, void **save_sp, void **fake_save, void *to_sp,
                              const void *to_lo, size_t to_size) {
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(fake_save, to_lo, to_size);
#else
    (void)to_lo;
    (void)to_size;
#endif
    r->switches++;
    emu_ctx_swap(save_sp, to_sp);
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake_save ? *fake_save : NULL, &r->from_lo, &r->from_size);
#else
    (void)fake_save;
#endif
}

static void emu_to_fiber(emu_run *r, emu_fiber *from, emu_fiber *to, int dying) {
    emu_switch(r, &from->sp, dying ? NULL : &from->asan_fake, to->sp, emu_fiber_stack_lo(r, to->index),
               emu_fiber_stack_size(r, to->index));
}

__attribute__((noreturn)) static void emu_to_main(emu_run *r, emu_fiber *from) {
    emu_switch(r, &from->sp, NULL, r->main_sp, r->main_lo, r->main_size);
    abort(); /* the main context never resumes a fiber that left this way */
}

/* ------------------------------------------------------------ runnable set */

static inline void emu_set_runnable(emu_run *r, unsigned i) { r->runnable[i >> 6] |= 1ull << (i & 63u); }
static inline void emu_clear_runnable(emu_run *r, unsigned i) { r->runnable[i >> 6] &= ~(1ull << (i & 63u)); }
static inline void emu_set_warp_runnable(emu_run *r, unsigned w, uint32_t lanes) {
    r->runnable[w >> 1] |= (uint64_t)lanes << ((w & 1u) * 32u);
}
/* First thread waiting at the barrier, or NULL. */
static emu_fiber *emu_first_at_barrier(const emu_run *r) {
    for (unsigned w = 0; w < (r->nthreads + 63u) / 64u; w++)
        if (r->at_barrier[w]) return emu_fiber_at(r, w * 64u + (unsigned)__builtin_ctzll(r->at_barrier[w]));
    return NULL;
}
static inline uint32_t emu_warp_runnable(const emu_run *r, unsigned w) {
    return (uint32_t)(r->runnable[w >> 1] >> ((w & 1u) * 32u));
}

/* First runnable index >= from, or -1. */
static int emu_next_runnable(const emu_run *r, unsigned from) {
    unsigned words = (r->nthreads + 63u) / 64u;
    for (unsigned w = from >> 6; w < words; w++) {
        uint64_t m = r->runnable[w];
        if (w == from >> 6) m &= ~0ull << (from & 63u);
        if (m) return (int)(w * 64u + (unsigned)__builtin_ctzll(m));
    }
    return -1;
}

static uint64_t emu_rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The schedule's choice after thread `cur` (-1 at block start); -1 if none. */
static int emu_pick(emu_run *r, int cur) {
    switch (r->sched) {
    case EMU_SCHEDULE_WARP_GREEDY:
    case EMU_SCHEDULE_WARP_GREEDY_REVERSE: {
        int forward = r->sched == EMU_SCHEDULE_WARP_GREEDY;
        unsigned nw = r->nwarps, base;
        if (cur >= 0) {
            unsigned w = (unsigned)cur >> 5, lane = (unsigned)cur & 31u;
            uint32_t m = emu_warp_runnable(r, w);
            if (m) {
                uint32_t after = lane == 31u ? 0u : m & (~0u << (lane + 1u));
                return (int)(w * 32u + (unsigned)__builtin_ctz(after ? after : m));
            }
            base = forward ? (w + 1u) % nw : (w + nw - 1u) % nw;
        } else {
            base = forward ? 0u : nw - 1u;
        }
        for (unsigned k = 0; k < nw; k++) {
            unsigned w = forward ? (base + k) % nw : (base + nw - k) % nw;
            uint32_t m = emu_warp_runnable(r, w);
            if (m) return (int)(w * 32u + (unsigned)__builtin_ctz(m));
        }
        return -1;
    }
    case EMU_SCHEDULE_RANDOM: {
        unsigned words = (r->nthreads + 63u) / 64u, count = 0;
        for (unsigned w = 0; w < words; w++) count += (unsigned)__builtin_popcountll(r->runnable[w]);
        if (count == 0) return -1;
        unsigned k = (unsigned)(emu_rng_next(&r->rng) % count);
        for (unsigned w = 0; w < words; w++) {
            uint64_t m = r->runnable[w];
            unsigned c = (unsigned)__builtin_popcountll(m);
            if (k >= c) {
                k -= c;
                continue;
            }
            while (k--) m &= m - 1u;
            return (int)(w * 64u + (unsigned)__builtin_ctzll(m));
        }
        return -1;
    }
    case EMU_SCHEDULE_ROUND_ROBIN:
    default: {
        unsigned start = cur < 0 ? 0u : (unsigned)cur + 1u;
        int i = start < r->nthreads ? emu_next_runnable(r, start) : -1;
        if (i < 0 && start > 0) i = emu_next_runnable(r, 0);
        return i;
    }
    }
}

/* ------------------------------------------------------------ failures */

static const char *emu_warp_op_name(int op) {
    switch (op) {
    case BERTC_EMU_WARP_SYNC: return "__syncwarp";
    case BERTC_EMU_WARP_SHFL: return "a __shfl*_sync";
    case BERTC_EMU_WARP_BALLOT: return "__ballot_sync";
    case BERTC_EMU_WARP_ANY: return "__any_sync";
    case BERTC_EMU_WARP_ALL: return "__all_sync";
    case BERTC_EMU_WARP_GATHER: return "bertc_emu_warp_allgather";
    default: return "an unknown warp op";
    }
}

/* Records the launch's first failure, then abandons the block: control goes
 * back to the main context and no fiber of this block runs again. */
__attribute__((noreturn, format(printf, 4, 5))) static void emu_fail(emu_run *r, emu_fiber *f,
                                                                    emu_status st, const char *fmt, ...) {
    if (r->status == EMU_STATUS_OK) {
        r->status = st;
        const bertc_emu_u3 *b = &r->launch.block_idx;
        int n = snprintf(r->msg, sizeof r->msg, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u): ",
                         r->kernel->desc->name, b->x, b->y, b->z, f->abi.tid.x, f->abi.tid.y, f->abi.tid.z);
        if (n > 0 && (size_t)n < sizeof r->msg) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->msg + n, sizeof r->msg - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    emu_to_main(r, f);
}

static int emu_same_site(const char *fa, int la, const char *fb, int lb) {
    return la == lb && (fa == fb || (fa && fb && strcmp(fa, fb) == 0));
}

/* ------------------------------------------------------------ scheduling */

/* Switches to the schedule's next fiber (possibly `f` itself, which then
 * just continues).  With nothing runnable the block is over: finished if no
 * thread is live, deadlocked otherwise. */
static void emu_schedule_next(emu_run *r, emu_fiber *f, int dying) {
    int next = emu_pick(r, (int)f->index);
    if (next < 0 && r->parked && r->status == EMU_STATUS_OK) {
        /* Threads wait for the grid's predecessor (griddepcontrol.wait) and
         * the others for them: the block is held, not deadlocked.  The
         * switch saves this fiber as any switch does; emu_run_resume wakes
         * the parked threads and the schedule picks up from there. */
        r->suspended = 1;
        emu_switch(r, &f->sp, dying ? NULL : &f->asan_fake, r->main_sp, r->main_lo, r->main_size);
        if (dying) abort(); /* an exited fiber is never runnable again */
        return;
    }
    if (next < 0) {
        if (r->live != 0 && r->status == EMU_STATUS_OK) r->status = EMU_STATUS_DEADLOCK;
        emu_to_main(r, f);
    }
    emu_fiber *to = emu_fiber_at(r, (unsigned)next);
    if (to == f) return;
    emu_to_fiber(r, f, to, dying);
}

static void emu_release_barrier(emu_run *r) {
    for (unsigned w = 0; w < (r->nthreads + 63u) / 64u; w++) {
        r->runnable[w] |= r->at_barrier[w];
        r->at_barrier[w] = 0;
    }
    r->arrived = 0;
}

__attribute__((noreturn)) static void emu_fiber_exit(emu_run *r, emu_fiber *f) {
    unsigned w = f->abi.warp, bit = 1u << f->abi.lane;
    emu_async_drain(&r->async[f->index]); /* what a thread left in flight still lands */
    emu_warp *x = &r->warps[w];
    emu_clear_runnable(r, f->index);
    r->live--;
    x->exited |= bit;
    for (uint32_t waiting = x->waiting; waiting; waiting &= waiting - 1u) {
        unsigned j = (unsigned)__builtin_ctz(waiting);
        if (x->target[j] & bit) {
            const emu_fiber *g = emu_fiber_at(r, w * 32u + j);
            emu_fail(r, f, EMU_STATUS_FAULT,
                     "returned while thread (%u,%u,%u) waits for it in %s at %s:%d (mask 0x%08x)",
                     g->abi.tid.x, g->abi.tid.y, g->abi.tid.z, emu_warp_op_name(x->op[j]), x->file[j], x->line[j],
                     x->target[j]);
        }
    }
    if (r->arrived != 0 && r->arrived == r->live) emu_release_barrier(r);
    emu_schedule_next(r, f, 1);
    abort(); /* nothing runnable and nothing live: emu_schedule_next went to main */
}

/* First code of every fiber (entered from emu_ctx_start). */
static void emu_fiber_main(emu_fiber *f) {
    emu_run *r = f->run;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &r->from_lo, &r->from_size);
    if (!r->main_lo) {
        r->main_lo = r->from_lo;
        r->main_size = r->from_size;
    }
#endif
    r->kernel->desc->thunk(r->args);
    emu_fiber_exit(r, f);
}

/* ------------------------------------------------------------ host services (bertc_emu_ops) */

static void emu_op_sync_threads(bertc_emu_thread *self, const char *file, int line) {
    emu_fiber *f = (emu_fiber *)self;
    emu_run *r = f->run;
    if (r->arrived == 0) {
        r->bar_file = file;
        r->bar_line = line;
    } else if (!emu_same_site(file, line, r->bar_file, r->bar_line)) {
        emu_fiber *g = emu_first_at_barrier(r);
        emu_fail(r, f, EMU_STATUS_FAULT,
                 "divergent __syncthreads: reached at %s:%d while thread (%u,%u,%u) waits at %s:%d",
                 file, line, g ? g->abi.tid.x : 0u, g ? g->abi.tid.y : 0u, g ? g->abi.tid.z : 0u,
                 r->bar_file, r->bar_line);
    }
    r->at_barrier[f->index >> 6] |= 1ull << (f->index & 63u);
    emu_clear_runnable(r, f->index);
    if (++r->arrived == r->live) emu_release_barrier(r);
    emu_schedule_next(r, f, 0);
}

/* The all-gather of the lanes in `target`: every lane's bytes are staged
 * once, lanes outside the exchange as 0xff bytes, and the staged block is
 * copied to every participant. */
static void emu_warp_gather(emu_run *r, emu_fiber *f, emu_warp *x, uint32_t target) {
    const bertc_emu_gather *first = (const bertc_emu_gather *)(uintptr_t)x->value[__builtin_ctz(target)];
    size_t bytes = first->bytes, total = 32u * bytes;
    if (total > r->stage_cap) {
        unsigned char *p = realloc(r->stage, total);
        if (!p)
            emu_fail(r, f, EMU_STATUS_NO_MEMORY, "out of memory staging a %zu-byte warp all-gather", total);
        r->stage = p;
        r->stage_cap = total;
    }
    for (unsigned i = 0; i < 32u; i++) {
        unsigned char *dst = r->stage + (size_t)i * bytes;
        if ((target >> i) & 1u)
            memcpy(dst, ((const bertc_emu_gather *)(uintptr_t)x->value[i])->mine, bytes);
        else
            memset(dst, 0xff, bytes);
    }
    for (uint32_t m = target; m; m &= m - 1u)
        memcpy(((const bertc_emu_gather *)(uintptr_t)x->value[__builtin_ctz(m)])->all, r->stage, total);
}

static void emu_warp_complete(emu_run *r, emu_fiber *f, unsigned w, uint32_t target, int op) {
    emu_warp *x = &r->warps[w];
    unsigned long long ballot = 0;
    if (op == BERTC_EMU_WARP_GATHER) {
        emu_warp_gather(r, f, x, target);
    } else if (op != BERTC_EMU_WARP_SHFL)
        for (uint32_t m = target; m; m &= m - 1u) {
            unsigned j = (unsigned)__builtin_ctz(m);
            if (x->value[j]) ballot |= 1ull << j;
        }
    for (uint32_t m = target; m; m &= m - 1u) {
        unsigned j = (unsigned)__builtin_ctz(m);
        switch (op) {
        case BERTC_EMU_WARP_SHFL: {
            int s = x->src[j];
            x->result[j] = (s >= 0 && s < 32 && ((target >> s) & 1u)) ? x->value[s] : BERTC_EMU_WARP_POISON;
            break;
        }
        case BERTC_EMU_WARP_BALLOT: x->result[j] = ballot; break;
        case BERTC_EMU_WARP_ANY: x->result[j] = ballot != 0; break;
        case BERTC_EMU_WARP_ALL: x->result[j] = ballot == target; break;
        default: x->result[j] = 0; break;
        }
    }
    /* the completing lane is runnable already; the others wake up */
    emu_set_warp_runnable(r, w, target);
}

static unsigned long long emu_op_warp(bertc_emu_thread *self, int op, unsigned mask, unsigned long long value,
                                      int src, const char *file, int line) {
    emu_fiber *f = (emu_fiber *)self;
    emu_run *r = f->run;
    unsigned w = self->warp, lane = self->lane, bit = 1u << lane;
    emu_warp *x = &r->warps[w];
    if (op < BERTC_EMU_WARP_SYNC || op > BERTC_EMU_WARP_GATHER)
        emu_fail(r, f, EMU_STATUS_FAULT, "unknown warp op %d at %s:%d", op, file, line);
    if (!(mask & bit))
        emu_fail(r, f, EMU_STATUS_FAULT, "%s at %s:%d with mask 0x%08x that does not name its own lane %u",
                 emu_warp_op_name(op), file, line, mask, lane);
    uint32_t target = mask & x->exists;
    if (target & x->exited)
        emu_fail(r, f, EMU_STATUS_FAULT, "%s at %s:%d with mask 0x%08x naming lanes that have returned (0x%08x)",
                 emu_warp_op_name(op), file, line, mask, target & x->exited);
    uint32_t waiting = x->waiting;
    uint32_t peers = waiting & target;
    if (peers) {
        unsigned p = (unsigned)__builtin_ctz(peers);
        if (op == BERTC_EMU_WARP_GATHER && x->op[p] == op &&
            ((const bertc_emu_gather *)(uintptr_t)x->value[p])->bytes != ((const bertc_emu_gather *)(uintptr_t)value)->bytes)
            emu_fail(r, f, EMU_STATUS_FAULT, "%s at %s:%d: lanes gather different sizes (%u and %u bytes)",
                     emu_warp_op_name(op), file, line, ((const bertc_emu_gather *)(uintptr_t)value)->bytes,
                     ((const bertc_emu_gather *)(uintptr_t)x->value[p])->bytes);
        if (x->target[p] != target || x->op[p] != op)
            emu_fail(r, f, EMU_STATUS_FAULT,
                     "%s at %s:%d (lanes 0x%08x) while lane %u waits in %s at %s:%d (lanes 0x%08x): "
                     "lanes of one exchange must use the same intrinsic and mask",
                     emu_warp_op_name(op), file, line, target, p, emu_warp_op_name(x->op[p]), x->file[p],
                     x->line[p], x->target[p]);
    }
    for (uint32_t others = waiting & ~target; others; others &= others - 1u) {
        unsigned j = (unsigned)__builtin_ctz(others);
        if (x->target[j] & bit)
            emu_fail(r, f, EMU_STATUS_FAULT,
                     "%s at %s:%d (lanes 0x%08x) while lane %u waits for this lane in %s at %s:%d "
                     "(lanes 0x%08x): the masks disagree",
                     emu_warp_op_name(op), file, line, target, j, emu_warp_op_name(x->op[j]), x->file[j],
                     x->line[j], x->target[j]);
    }
    x->op[lane] = op;
    x->target[lane] = target;
    x->value[lane] = value;
    x->src[lane] = src;
    x->file[lane] = file;
    x->line[lane] = line;
    if (((waiting | bit) & target) == target) {
        /* the last lane completes the exchange, then yields like the others
         * (round-robin then runs warps in lock step, as a GPU would) */
        x->waiting = waiting & ~target;
        emu_warp_complete(r, f, w, target, op);
    } else {
        x->waiting = waiting | bit;
        emu_clear_runnable(r, f->index);
    }
    emu_schedule_next(r, f, 0);
    return r->warps[w].result[lane];
}

static void emu_op_trap(bertc_emu_thread *self, const char *what, const char *file, int line) {
    emu_fiber *f = (emu_fiber *)self;
    emu_fail(f->run, f, EMU_STATUS_FAULT, "%s at %s:%d", what, file, line);
}

/* griddepcontrol.wait: with the predecessor still running (a held grid's
 * early block), the thread parks until emu_grid_finish; otherwise there is
 * nothing in flight to wait for and it returns at once, as on a GPU for a
 * kernel launched without the attribute. */
static void emu_op_grid_wait(bertc_emu_thread *self, const char *file, int line) {
    (void)file;
    (void)line;
    emu_fiber *f = (emu_fiber *)self;
    emu_run *r = f->run;
    r->waits++;
    if (!r->dependency_pending) return;
    r->parked++;
    r->parked_total++;
    r->at_wait[f->index >> 6] |= 1ull << (f->index & 63u);
    emu_clear_runnable(r, f->index);
    emu_schedule_next(r, f, 0);
}

/* griddepcontrol.launch_dependents: the first call of a block counts (the
 * PTX ISA: repeated calls by the CTA have no further effect).  It only
 * lets dependents *start*: their wait still waits for this grid's end, so
 * where a kernel triggers never changes what its dependents may read, and
 * the emulator, which runs a dependent's pre-wait part before its
 * predecessor altogether (emu.h), needs no more than the count. */
static void emu_op_trigger(bertc_emu_thread *self, const char *file, int line) {
    (void)file;
    (void)line;
    emu_run *r = ((emu_fiber *)self)->run;
    if (!r->block_triggered) {
        r->block_triggered = 1;
        r->triggers++;
    }
}

static emu_mem_check_fn emu_mem_check;

void emu_set_mem_check(emu_mem_check_fn fn) { __atomic_store_n(&emu_mem_check, fn, __ATOMIC_RELEASE); }

/* A prefetch is a hint a GPU drops silently when it points nowhere; a
 * kernel that computes such an address has a bug all the same. */
static void emu_op_prefetch(bertc_emu_thread *self, const void *p, unsigned long long bytes, const char *file,
                            int line) {
    emu_fiber *f = (emu_fiber *)self;
    emu_run *r = f->run;
    r->prefetches++;
    if (bytes == 0) return;
    emu_mem_check_fn check = __atomic_load_n(&emu_mem_check, __ATOMIC_ACQUIRE);
    if ((uintptr_t)p + bytes < (uintptr_t)p || (check && !check(p, bytes)))
        emu_fail(r, f, EMU_STATUS_FAULT, "bertc_prefetch_l2 of %llu bytes at %p lies outside device memory at %s:%d",
                 bytes, p, file, line);
}

/* cp.async: 4, 8 or 16 bytes, both addresses aligned to it, a source in
 * device memory; the copy waits in the thread's queue (emu_async.h). */
static void emu_op_cp_async(bertc_emu_thread *self, void *dst, const void *src, unsigned bytes, const char *file,
                            int line) {
    emu_fiber *f = (emu_fiber *)self;
    emu_run *r = f->run;
    if ((bytes != 4u && bytes != 8u && bytes != 16u) || (((uintptr_t)dst | (uintptr_t)src) & (bytes - 1u)))
        emu_fail(r, f, EMU_STATUS_FAULT, "cp.async of %u bytes from %p to %p: 4, 8 or 16 bytes, aligned to it, at %s:%d",
                 bytes, src, dst, file, line);
    emu_mem_check_fn check = __atomic_load_n(&emu_mem_check, __ATOMIC_ACQUIRE);
    if (src && check && !check(src, bytes))
        emu_fail(r, f, EMU_STATUS_FAULT, "cp.async of %u bytes from %p: the source lies outside device memory at %s:%d",
                 bytes, src, file, line);
    if (emu_async_issue(&r->async[f->index], dst, src, bytes))
        emu_fail(r, f, EMU_STATUS_NO_MEMORY, "out of memory queueing a cp.async at %s:%d", file, line);
}

static void emu_op_cp_commit(bertc_emu_thread *self) {
    emu_fiber *f = (emu_fiber *)self;
    emu_async_commit(&f->run->async[f->index]);
}

static void emu_op_cp_wait(bertc_emu_thread *self, unsigned n) {
    emu_fiber *f = (emu_fiber *)self;
    emu_async_wait(&f->run->async[f->index], n);
}

static const bertc_emu_ops emu_ops = {
    .abi_version = BERTC_EMU_ABI_VERSION,
    .sync_threads = emu_op_sync_threads,
    .warp = emu_op_warp,
    .trap = emu_op_trap,
    .grid_dependency_wait = emu_op_grid_wait,
    .trigger_dependents = emu_op_trigger,
    .prefetch_l2 = emu_op_prefetch,
    .cp_async = emu_op_cp_async,
    .cp_async_commit = emu_op_cp_commit,
    .cp_async_wait = emu_op_cp_wait,
};

/* ------------------------------------------------------------ blocks */

static void emu_fiber_init(emu_run *r, unsigned i) {
    emu_fiber *f = emu_fiber_at(r, i);
    const bertc_emu_u3 *bd = &r->launch.block_dim;
    f->abi.launch = &r->launch;
    f->abi.tid.x = i % bd->x;
    f->abi.tid.y = (i / bd->x) % bd->y;
    f->abi.tid.z = i / (bd->x * bd->y);
    f->abi.linear = i;
    f->abi.lane = i & 31u;
    f->abi.warp = i >> 5;
    f->run = r;
    f->index = i;
    f->asan_fake = NULL;
    /* A stack that looks switched-away-from (emu_switch.S): return address
     * emu_ctx_start, r12 = the fiber, r13 = emu_fiber_main. */
    uint64_t *sp = (uint64_t *)(void *)f;
    *--sp = 0;
    *--sp = (uint64_t)(uintptr_t)emu_ctx_start;
    *--sp = 0;                                   /* rbp */
    *--sp = 0;                                   /* rbx */
    *--sp = (uint64_t)(uintptr_t)f;              /* r12 */
    *--sp = (uint64_t)(uintptr_t)emu_fiber_main; /* r13 */
    *--sp = 0;                                   /* r14 */
    *--sp = 0;                                   /* r15 */
    *--sp = (EMU_X87CW_DEFAULT << 32) | EMU_MXCSR_DEFAULT;
    f->sp = sp;
}

static emu_status emu_run_block(emu_run *r) {
    for (unsigned i = 0; i < r->nthreads; i++) {
        emu_fiber_init(r, i);
        emu_async_reset(&r->async[i]);
    }
    memset(r->runnable, 0, sizeof r->runnable);
    memset(r->at_barrier, 0, sizeof r->at_barrier);
    for (unsigned i = 0; i < r->nthreads; i++) emu_set_runnable(r, i);
    memset(r->at_wait, 0, sizeof r->at_wait);
    r->parked = 0;
    r->suspended = 0;
    r->block_triggered = 0;
    r->blocks_run++;
    r->live = r->nthreads;
    r->arrived = 0;
    for (unsigned w = 0; w < r->nwarps; w++) {
        r->warps[w].waiting = 0;
        r->warps[w].exited = 0;
    }
    if (r->launch.dyn_smem_bytes) memset(r->launch.dyn_smem, 0xff, r->launch.dyn_smem_bytes);
    emu_fiber *first = emu_fiber_at(r, (unsigned)emu_pick(r, -1));
    emu_switch(r, &r->main_sp, &r->main_fake, first->sp, emu_fiber_stack_lo(r, first->index),
               emu_fiber_stack_size(r, first->index));
    return r->status;
}

/* Wakes a held block's parked threads (the predecessor is complete) and
 * runs the block on from where it stood. */
static emu_status emu_run_resume(emu_run *r) {
    for (unsigned w = 0; w < EMU_WORDS; w++) {
        r->runnable[w] |= r->at_wait[w];
        r->at_wait[w] = 0;
    }
    r->parked = 0;
    r->suspended = 0;
    emu_fiber *first = emu_fiber_at(r, (unsigned)emu_pick(r, -1));
    emu_switch(r, &r->main_sp, &r->main_fake, first->sp, emu_fiber_stack_lo(r, first->index),
               emu_fiber_stack_size(r, first->index));
    return r->status;
}

static void emu_describe_deadlock(emu_run *r) {
    const bertc_emu_u3 *b = &r->launch.block_idx;
    size_t cap = sizeof r->msg, n = 0;
    int k = snprintf(r->msg, cap, "kernel %s deadlocked in block (%u,%u,%u): %u of %u threads are live, none can proceed",
                     r->kernel->desc->name, b->x, b->y, b->z, r->live, r->nthreads);
    n = k > 0 ? (size_t)k : 0;
    if (r->arrived && n < cap) {
        emu_fiber *g = emu_first_at_barrier(r);
        k = snprintf(r->msg + n, cap - n, "; %u wait at __syncthreads %s:%d (e.g. thread (%u,%u,%u))", r->arrived,
                     r->bar_file, r->bar_line, g ? g->abi.tid.x : 0u, g ? g->abi.tid.y : 0u, g ? g->abi.tid.z : 0u);
        n += k > 0 ? (size_t)k : 0;
    }
    for (unsigned w = 0; w < r->nwarps && n < cap; w++) {
        const emu_warp *x = &r->warps[w];
        uint32_t waiting = x->waiting;
        if (!waiting) continue;
        unsigned j = (unsigned)__builtin_ctz(waiting);
        uint32_t missing = x->target[j] & ~waiting;
        k = snprintf(r->msg + n, cap - n, "; warp %u: lanes 0x%08x wait in %s at %s:%d for lanes 0x%08x", w, waiting,
                     emu_warp_op_name(x->op[j]), x->file[j], x->line[j], missing);
        n += k > 0 ? (size_t)k : 0;
    }
}

/* ------------------------------------------------------------ launch */

/* The launch's configuration against the device's limits and the kernel's. */
static emu_status emu_launch_check(const emu_kernel *k, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes, void **args, emu_schedule sched, diag *d) {
    const char *name = k->desc->name;
    if (!grid || !block) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated launch of %s: grid or block is NULL", name);
        return EMU_STATUS_INVALID;
    }
    if (block[0] == 0 || block[1] == 0 || block[2] == 0 || block[0] > 1024u || block[1] > 1024u || block[2] > 64u ||
        (uint64_t)block[0] * block[1] * block[2] > EMU_MAX_BLOCK_THREADS)
    {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated launch of %s: block (%u,%u,%u) is invalid (each >= 1, x,y <= 1024, z <= 64, "
                 "at most 1024 threads)",
                 name, block[0], block[1], block[2]);
        return EMU_STATUS_INVALID;
    }
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > 0x7fffffffu || grid[1] > 65535u ||
        grid[2] > 65535u)
    {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated launch of %s: grid (%u,%u,%u) is invalid (each >= 1, x < 2^31, y,z <= 65535)", name,
                 grid[0], grid[1], grid[2]);
        return EMU_STATUS_INVALID;
    }
    if (shared_bytes > k->max_dynamic_smem) {
        diag_set(d, DIAG_CODE_INTERNAL,
                 "emulated launch of %s: %u bytes of dynamic shared memory exceed the kernel's limit of %u "
                 "(raise it with emu_kernel_set_max_dynamic_smem, as cuFuncSetAttribute)",
                 name, shared_bytes, k->max_dynamic_smem);
        return EMU_STATUS_INVALID;
    }
    if ((unsigned)sched >= EMU_SCHEDULE_COUNT) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated launch of %s: unknown schedule %d", name, (int)sched);
        return EMU_STATUS_INVALID;
    }
    for (unsigned i = 0; i < k->desc->nargs; i++)
        if (!args || !args[i]) {
            diag_set(d, DIAG_CODE_INTERNAL, "emulated launch of %s: argument %u of %u is missing", name, i,
                     k->desc->nargs);
            return EMU_STATUS_INVALID;
        }
    return EMU_STATUS_OK;
}

/* A run of a checked launch: the block's fibers' stacks (from the pool),
 * its dynamic shared memory and the warps' lanes.  NULL out of memory. */
static emu_run *emu_run_new(emu_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                            void **args, emu_schedule sched, uint64_t seed) {
    unsigned n = block[0] * block[1] * block[2];
    emu_run *r = calloc(1, sizeof *r);
    void *smem = NULL;
    if (posix_memalign(&smem, 64, shared_bytes ? shared_bytes : 1u) != 0) smem = NULL; /* exact size: ASan sees overruns */
    emu_stacks *stacks = emu_stacks_get(n);
    emu_async_queue *async = calloc(n, sizeof *async);
    if (!r || !smem || !stacks || !async) {
        free(r);
        free(smem);
        free(async);
        if (stacks) emu_stacks_put(stacks);
        return NULL;
    }
    r->launch.ops = &emu_ops;
    r->launch.block_dim = (bertc_emu_u3){block[0], block[1], block[2]};
    r->launch.grid_dim = (bertc_emu_u3){grid[0], grid[1], grid[2]};
    r->launch.dyn_smem = smem;
    r->launch.dyn_smem_bytes = shared_bytes;
    r->kernel = k;
    r->args = args;
    r->sched = sched;
    r->rng = seed ^ 0x5eed0bad5eed0badull;
    r->order_seed = seed;
    r->nthreads = n;
    r->nwarps = (n + 31u) / 32u;
    r->stacks = stacks;
    r->async = async;
    for (unsigned w = 0; w < r->nwarps; w++) {
        unsigned lanes = n - w * 32u;
        r->warps[w].exists = lanes >= 32u ? 0xffffffffu : (1u << lanes) - 1u;
    }
    return r;
}

static void emu_run_free(emu_run *r) {
    for (unsigned i = 0; i < r->nthreads; i++) emu_async_free(&r->async[i]);
    free(r->async);
    emu_stacks_put(r->stacks);
    free(r->launch.dyn_smem);
    free(r->stage);
    free(r);
}

/* Images built with BERTC_EMU_SANITIZE keep __shared__ in plain statics,
 * so launches of their kernels must not overlap: they are serialised per
 * image, from the launch (or the held block's start) to the grid's end.
 * The lock is recursive because a held grid's predecessor, which runs on
 * the same thread before the grid finishes, may come from the same image. */
static void emu_run_lock(emu_run *r) {
    if (!(r->kernel->desc->flags & BERTC_EMU_KERNEL_SANITIZED) || r->serial_locked) return;
    pthread_mutex_lock(&r->kernel->image->launch_lock);
    r->serial_locked = 1;
}

static void emu_run_unlock(emu_run *r) {
    if (!r->serial_locked) return;
    pthread_mutex_unlock(&r->kernel->image->launch_lock);
    r->serial_locked = 0;
}

static uint64_t emu_gcd(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/*
 * The order the n blocks of a grid run in, as the bijection i -> (a i + c)
 * mod n: ascending (x fastest) under round-robin and warp-greedy,
 * descending under the reverse warp-greedy schedule, and a seeded
 * permutation under the random one.  A GPU promises no block order, so a
 * correct kernel computes the same under each; a kernel whose result
 * depends on which block runs (or arrives) last — a split-K reduction in
 * arrival order, say — shows it here.
 */
static void emu_block_order(const emu_run *r, uint64_t n, uint64_t *a, uint64_t *c) {
    *a = 1;
    *c = 0;
    if (n < 2) return;
    if (r->sched == EMU_SCHEDULE_WARP_GREEDY_REVERSE) {
        *a = n - 1;
        *c = n - 1;
    } else if (r->sched == EMU_SCHEDULE_RANDOM) {
        uint64_t s = r->order_seed ^ 0xb10c0bdeb10c0bdeull;
        *a = emu_rng_next(&s) % n;
        while (*a == 0 || emu_gcd(*a, n) != 1) *a = (*a + 1) % n;
        *c = emu_rng_next(&s) % n;
    }
}

/* Runs the blocks one after another, in emu_block_order's order, until
 * one fails; a held block (r->early), already run, is skipped. */
static emu_status emu_run_grid(emu_run *r) {
    const bertc_emu_u3 *grid = &r->launch.grid_dim;
    emu_status st = EMU_STATUS_OK;
    uint64_t n = (uint64_t)grid->x * grid->y * grid->z, a, c;
    emu_block_order(r, n, &a, &c);
    for (uint64_t i = 0; i < n && st == EMU_STATUS_OK; i++) {
        uint64_t b = (uint64_t)(((unsigned __int128)a * i + c) % n);
        if ((long)b == r->early) continue;
        r->launch.block_idx = (bertc_emu_u3){(unsigned)(b % grid->x), (unsigned)(b / grid->x % grid->y),
                                             (unsigned)(b / grid->x / grid->y)};
        st = emu_run_block(r);
    }
    return st;
}

/* A failed run: its message to d, and the stacks made fit for reuse. */
static void emu_run_report(emu_run *r, emu_status st, diag *d) {
    if (st == EMU_STATUS_DEADLOCK) emu_describe_deadlock(r);
    diag_set(d, DIAG_CODE_INTERNAL, "%s", r->msg);
#ifdef EMU_ASAN
    /* fibers abandoned mid-call leave poisoned frames behind */
    for (unsigned i = 0; i < r->nthreads; i++)
        __asan_unpoison_memory_region(emu_fiber_stack_lo(r, i), emu_fiber_stack_size(r, i));
#endif
}

/* The launch's counters into the calling thread's stats, then the run freed. */
static void emu_run_end(emu_run *r) {
    emu_run_unlock(r);
    emu_stats_last = (emu_launch_stats){r->blocks_run, r->nthreads, r->switches, r->waits,
                                        r->parked_total, r->triggers, r->prefetches};
    emu_run_free(r);
}

/* A checked launch's run, or NULL with the message in d. */
static emu_run *emu_run_start(emu_kernel *k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                              void **args, emu_schedule sched, uint64_t seed, emu_status *st, diag *d) {
    *st = emu_launch_check(k, grid, block, shared_bytes, args, sched, d);
    if (*st != EMU_STATUS_OK) return NULL;
    emu_run *r = emu_run_new(k, grid, block, shared_bytes, args, sched, seed);
    if (!r) {
        diag_set(d, DIAG_CODE_INTERNAL, "emulated launch of %s: out of memory", k->desc->name);
        *st = EMU_STATUS_NO_MEMORY;
        return NULL;
    }
    r->early = -1;
    emu_run_lock(r);
    return r;
}

emu_status emu_kernel_launch(emu_kernel *k, const unsigned grid[3], const unsigned block[3],
                             unsigned shared_bytes, void **args, emu_schedule sched, uint64_t seed, diag *d) {
    emu_status st;
    emu_run *r = emu_run_start(k, grid, block, shared_bytes, args, sched, seed, &st, d);
    if (!r) return st;
    st = emu_run_grid(r);
    if (st != EMU_STATUS_OK) emu_run_report(r, st, d);
    emu_run_end(r);
    return st;
}

emu_status emu_kernel_launch_dependent(emu_kernel *k, const unsigned grid[3], const unsigned block[3],
                                       unsigned shared_bytes, void **args, emu_schedule sched, uint64_t seed,
                                       emu_grid **out, diag *d) {
    *out = NULL;
    emu_status st;
    emu_run *r = emu_run_start(k, grid, block, shared_bytes, args, sched, seed, &st, d);
    if (!r) return st;
    /* The held block: block 0, or a random one, so that seeds vary which
     * block meets the predecessor's stale memory. */
    uint64_t nblocks = (uint64_t)grid[0] * grid[1] * grid[2];
    r->early = sched == EMU_SCHEDULE_RANDOM ? (long)(emu_rng_next(&r->rng) % nblocks) : 0;
    uint64_t e = (uint64_t)r->early;
    r->launch.block_idx = (bertc_emu_u3){(unsigned)(e % grid[0]), (unsigned)(e / grid[0] % grid[1]),
                                         (unsigned)(e / ((uint64_t)grid[0] * grid[1]))};
    r->dependency_pending = 1;
    st = emu_run_block(r);
    if (st != EMU_STATUS_OK) {
        emu_run_report(r, st, d);
        emu_run_end(r);
        return st;
    }
    *out = r;
    return EMU_STATUS_OK;
}

emu_status emu_grid_finish(emu_grid *r, diag *d) {
    r->dependency_pending = 0;
    emu_status st = r->suspended ? emu_run_resume(r) : EMU_STATUS_OK;
    if (st == EMU_STATUS_OK) st = emu_run_grid(r);
    if (st != EMU_STATUS_OK) emu_run_report(r, st, d);
    emu_run_end(r);
    return st;
}

void emu_grid_abandon(emu_grid *r) {
    if (!r) return;
#ifdef EMU_ASAN
    if (r->suspended)
        for (unsigned i = 0; i < r->nthreads; i++)
            __asan_unpoison_memory_region(emu_fiber_stack_lo(r, i), emu_fiber_stack_size(r, i));
#endif
    emu_run_end(r);
}

emu_kernel *emu_grid_kernel(const emu_grid *g) { return g->kernel; }

void emu_last_launch_stats(emu_launch_stats *out) { *out = emu_stats_last; }

const char *emu_schedule_name(emu_schedule s) {
    switch (s) {
    case EMU_SCHEDULE_ROUND_ROBIN: return "round-robin";
    case EMU_SCHEDULE_WARP_GREEDY: return "warp-greedy";
    case EMU_SCHEDULE_WARP_GREEDY_REVERSE: return "warp-greedy-reverse";
    case EMU_SCHEDULE_RANDOM: return "random";
    default: return "unknown";
    }
}

const char *emu_status_name(emu_status s) {
    switch (s) {
    case EMU_STATUS_OK: return "ok";
    case EMU_STATUS_INVALID: return "invalid";
    case EMU_STATUS_NOT_FOUND: return "not-found";
    case EMU_STATUS_LOAD: return "load";
    case EMU_STATUS_DEADLOCK: return "deadlock";
    case EMU_STATUS_FAULT: return "fault";
    case EMU_STATUS_NO_MEMORY: return "no-memory";
    default: return "unknown";
    }
}
