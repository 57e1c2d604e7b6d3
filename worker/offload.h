/*
 * offload.h: blocking calls that may never return (a read on a filesystem whose NFS server
 * is gone, a password lookup through an LDAP server that hangs), each on a thread of its
 * own, never in libuv's pool, with the result handed back to the loop.
 *
 * libuv's pool has four threads for the whole process: four hung log reads would hold it,
 * and the shard copies and telemetry samples queued behind them would wait too. Here a call
 * that hangs holds its own thread and nothing else. Closing does not wait for calls in
 * flight: a call that returns after the close is dropped on its own thread, so a worker
 * can stop while a read is stuck in the kernel (the process's exit ends that thread).
 *
 * One loop thread uses an offload (new, run, close); work and drop run on the calls'
 * threads and must touch only their data.
 */
#ifndef WRK_OFFLOAD_H
#define WRK_OFFLOAD_H

#include <uv.h>

struct wrk_offload;

/* On the call's thread: the blocking part, touching only data. */
typedef void (*wrk_offload_work_cb)(void *data);
/* On the loop, after work returned and while the offload is open: takes data. */
typedef void (*wrk_offload_done_cb)(void *data);
/* In place of done when the offload closed first: frees data, on whichever thread holds it
 * then (the loop for a result waiting to be delivered, else the call's thread). */
typedef void (*wrk_offload_drop_cb)(void *data);

/* An offload on loop running at most max_calls calls at once (counting those whose done has
 * not run yet). 0, -EINVAL for max_calls 0, -ENOMEM, or libuv's error. */
int wrk_offload_new(uv_loop_t *loop, unsigned max_calls, struct wrk_offload **ret);

/*
 * Starts work(data) on a new thread, then done(data) on the loop; or drop(data) if the
 * offload is closed before done could run. On success the offload owns data until done or
 * drop. -EBUSY when max_calls are outstanding, -EAGAIN or -ENOMEM when no thread can be
 * made, -ESHUTDOWN after close; on failure data stays the caller's.
 */
int wrk_offload_run(struct wrk_offload *o, wrk_offload_work_cb work, wrk_offload_done_cb done,
                    wrk_offload_drop_cb drop, void *data);

/* Calls outstanding (running, or returned and waiting for done). */
unsigned wrk_offload_pending(struct wrk_offload *o); /* takes its lock */

/*
 * Closes o: results waiting for the loop are dropped now, calls still running are dropped
 * when they return, and no done runs after this. closed(data) runs on the loop once o's
 * handle is closed, without waiting for running calls; NULL allowed. o itself is freed by
 * whichever comes last, the handle's close or the last call's return.
 */
void wrk_offload_close(struct wrk_offload *o, void (*closed)(void *data), void *data);

#endif
