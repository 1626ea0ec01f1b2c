/*
 * emu_abi — the binary contract between the emulator (C, in the host
 * library) and a kernel image (C++, compiled from generated CUDA text with
 * cuda_prelude.h force-included, loaded with dlopen).
 *
 * The image never links against the host: everything it needs from the
 * emulator arrives through pointers in these structs, so an image is an
 * ordinary shared object with no undefined emulator symbols, and the host
 * library can be static.  The image exports one `bertc_emu_kernel`
 * descriptor per kernel (`<entry>__emu`); the host runs its `thunk` once
 * per CUDA thread, each on its own fiber.
 *
 * Finding "the current CUDA thread" is the hottest path (every threadIdx,
 * every __syncthreads).  Instead of thread-local storage (a __tls_get_addr
 * call per access inside a dlopened object) the emulator places each
 * fiber's stack in an aligned window of BERTC_EMU_STACK_SPAN bytes and
 * keeps the thread record near the top of that window; kernel code finds
 * it from its own stack pointer (BERTC_EMU_THREAD_AT).  That is a handful
 * of register instructions, needs no global state, and stays correct when
 * several OS threads launch kernels at once.  The window is, from low to
 * high: a PROT_NONE guard page, the stack (growing down from the record),
 * the thread record (BERTC_EMU_THREAD_SLOT bytes), unused colour padding.
 *
 * The padding is the window's *colour*: (window index mod
 * BERTC_EMU_COLOURS) * BERTC_EMU_COLOUR_STRIDE bytes, the window index
 * being the address divided by the span.  Without it every record and
 * every live stack top sits at the same offset of a 64 KiB-aligned window,
 * so the 32 fibers of a warp, which run one after another at every warp
 * exchange, all map to the same few L1 sets (which have 8 ways) and evict
 * each other at every switch.  Consecutive windows get consecutive colours,
 * which spreads a warp's records and stack tops over the whole L1.
 *
 * Everything here is plain C so both sides read the same layout.
 */
#ifndef BERTC_EMU_ABI_H
#define BERTC_EMU_ABI_H

#define BERTC_EMU_ABI_VERSION 4u
#define BERTC_EMU_STACK_SPAN 65536u     /* power of two; window per fiber */
#define BERTC_EMU_THREAD_SLOT 512u      /* near the top of the window: the thread record */
#define BERTC_EMU_GUARD 4096u           /* bottom of the window: guard page */
#define BERTC_EMU_COLOURS 32u           /* power of two; distinct record offsets */
#define BERTC_EMU_COLOUR_STRIDE 128u    /* bytes between two colours (two cache lines) */

/* The record of the fiber whose stack holds `sp` (any address in its
 * window): the window's top, less the slot, less the window's colour. */
#define BERTC_EMU_THREAD_AT(sp)                                                              \
    (((sp) | (unsigned long)(BERTC_EMU_STACK_SPAN - 1u)) + 1ul - BERTC_EMU_THREAD_SLOT -       \
     (((sp) / BERTC_EMU_STACK_SPAN) & (BERTC_EMU_COLOURS - 1u)) * BERTC_EMU_COLOUR_STRIDE)

/* Warp operations routed to the host (the shuffle variants differ only in
 * the source lane, which the prelude computes). */
typedef enum bertc_emu_warp_op {
    BERTC_EMU_WARP_SYNC,
    BERTC_EMU_WARP_SHFL,
    BERTC_EMU_WARP_BALLOT,
    BERTC_EMU_WARP_ANY,
    BERTC_EMU_WARP_ALL,
    BERTC_EMU_WARP_GATHER,   /* value: a bertc_emu_gather *; one exchange, many bytes */
} bertc_emu_warp_op;

/* An all-gather: each lane's `bytes` at `mine` land at all + lane * bytes in
 * every participant's `all` (lanes outside the exchange: 0xff bytes).  The
 * copies happen while every participant waits, so `mine` may be on the
 * lane's stack.  For CPU versions of fragment helpers (mma, ldmatrix). */
typedef struct bertc_emu_gather {
    const void *mine;
    void *all;                    /* 32 * bytes */
    unsigned bytes;
} bertc_emu_gather;

/* Value a shuffle returns when it reads a lane that does not take part. */
#define BERTC_EMU_WARP_POISON 0xffffffffffffffffull

/* The image was compiled with BERTC_EMU_SANITIZE (__shared__ is plain
 * static, so launches of it must not overlap). */
#define BERTC_EMU_KERNEL_SANITIZED 1u

typedef struct bertc_emu_u3 {
    unsigned x, y, z;
} bertc_emu_u3;

typedef struct bertc_emu_launch bertc_emu_launch;
typedef struct bertc_emu_thread bertc_emu_thread;

/* Per CUDA thread; lives in the thread slot of the fiber's stack window. */
struct bertc_emu_thread {
    bertc_emu_launch *launch;
    bertc_emu_u3 tid;             /* threadIdx */
    unsigned linear;              /* x + y*bx + z*bx*by */
    unsigned lane, warp;          /* linear % 32, linear / 32 */
};

/* Host services; `self` is the calling thread's record. */
typedef struct bertc_emu_ops {
    unsigned abi_version;
    void (*sync_threads)(bertc_emu_thread *self, const char *file, int line);
    unsigned long long (*warp)(bertc_emu_thread *self, int op, unsigned mask,
                               unsigned long long value, int src_lane,
                               const char *file, int line);
    /* Kernel fault (__trap, bad intrinsic argument); never returns. */
    void (*trap)(bertc_emu_thread *self, const char *what, const char *file, int line);
    /* griddepcontrol.wait: returns once every grid this launch depends on
     * programmatically has completed (at once when there is none). */
    void (*grid_dependency_wait)(bertc_emu_thread *self, const char *file, int line);
    /* griddepcontrol.launch_dependents: the block lets its dependents start. */
    void (*trigger_dependents)(bertc_emu_thread *self, const char *file, int line);
    /* prefetch.global.L2 of [p, p + bytes): the range is checked against
     * device memory, nothing else happens (faults like __trap if outside). */
    void (*prefetch_l2)(bertc_emu_thread *self, const void *p, unsigned long long bytes, const char *file,
                        int line);
    /* cp.async of `bytes` from src (NULL: zero-fill) into shared memory at
     * dst; it lands when the thread waits for its group (emu_async.h). */
    void (*cp_async)(bertc_emu_thread *self, void *dst, const void *src, unsigned bytes, const char *file,
                     int line);
    /* cp.async.commit_group */
    void (*cp_async_commit)(bertc_emu_thread *self);
    /* cp.async.wait_group n */
    void (*cp_async_wait)(bertc_emu_thread *self, unsigned n);
} bertc_emu_ops;

/* Per launch and block; the host updates the block fields between blocks. */
struct bertc_emu_launch {
    const bertc_emu_ops *ops;
    bertc_emu_u3 block_idx, block_dim, grid_dim;
    void *dyn_smem;               /* dynamic shared memory of the block (16-aligned) */
    unsigned dyn_smem_bytes;
};

/* Exported by the image as `<entry>__emu`. */
typedef struct bertc_emu_kernel {
    unsigned abi_version;
    unsigned nargs;
    const char *name;             /* the kernel's entry name */
    const unsigned *arg_sizes;    /* nargs sizes in bytes */
    unsigned flags;               /* BERTC_EMU_KERNEL_* */
    /* Runs the kernel body for the calling fiber; args[i] points to the
     * value of argument i (CUDA's kernelParams convention). */
    void (*thunk)(void **args);
} bertc_emu_kernel;

#endif
