/*
 * emu_async — cp.async as a GPU may perform it: the copies a CUDA thread
 * has issued but not yet waited for.
 *
 * On sm_80+ `cp.async` starts a global -> shared copy that lands at some
 * time before the issuing thread's `cp.async.wait_group N` returns for the
 * group it was committed in (`cp.async.commit_group` closes a group); a
 * __syncthreads does not wait for it, and nothing else says when it lands.
 * An emulator that copies at issue time makes every pipeline look right,
 * however wrong its wait counts.  This queue gives the copies the latest
 * landing a GPU allows instead: at issue the destination is filled with
 * 0xff bytes (a NaN in every float type bertc stores, so a read that comes
 * too early shows in the numbers), the copy is remembered with the group
 * it belongs to, and it happens only when the thread waits for that group
 * (or when the thread exits).  The source is read then too, so a kernel
 * that overwrites a source it has a copy in flight from reads the new
 * bytes, which a GPU may do as well.
 *
 * One queue per CUDA thread of a block; a pure data structure (the
 * scheduler reports its failures), so this file calls nothing of the rest
 * of the emulator.
 */
#ifndef BERTC_EMU_ASYNC_H
#define BERTC_EMU_ASYNC_H

#include <stddef.h>

typedef struct emu_async_copy {
    void *dst;
    const void *src;        /* NULL: zero-fill (cp.async's src-size 0) */
    unsigned bytes;
    unsigned group;         /* the commit count when issued: the group it joins */
} emu_async_copy;

typedef struct emu_async_queue {
    emu_async_copy *copies; /* in issue order */
    unsigned n, cap;
    unsigned committed;     /* groups committed so far */
    unsigned long long issued, landed;
} emu_async_queue;

/* An empty queue for a new block (the storage is kept). */
void emu_async_reset(emu_async_queue *q);

/* Issues a copy of `bytes` from src (NULL: zeros) to dst; dst becomes 0xff
 * bytes until the copy lands.  -1 out of memory. */
int emu_async_issue(emu_async_queue *q, void *dst, const void *src, unsigned bytes);

/* cp.async.commit_group: the copies issued since the last commit form a group. */
void emu_async_commit(emu_async_queue *q);

/* cp.async.wait_group n: every copy of a committed group other than the n
 * most recent lands; copies not yet committed stay in flight. */
void emu_async_wait(emu_async_queue *q, unsigned n);

/* Every copy lands (the thread exits). */
void emu_async_drain(emu_async_queue *q);

void emu_async_free(emu_async_queue *q);

#endif
