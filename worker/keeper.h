/*
 * keeper.h: the node's fence for a worker that dies. Cut off from gschedd, a live worker
 * kills its tasks once scheduler.fence_timeout has passed without a heartbeat answered, so
 * that gschedd, which requeues them only after that timeout and a heartbeat more, never
 * has a job running twice. A worker that dies (kill -9, a crash, the OOM killer) can kill
 * nothing: its tasks ran on until a worker was started again, and past the fence timeout
 * gschedd had already started their jobs elsewhere.
 *
 * The keeper is a small process forked from gsched-workerd before anything else runs in
 * it (no loop, no thread yet), which only reads a pipe the worker holds. The worker writes
 * the fence timeout there after each registration. When the pipe ends without the worker
 * saying goodbye, the worker is gone: the keeper reads the task ledger (worker/ledger.h)
 * at once, waits 4/5 of the fence timeout, and ends the tasks listed then that are still
 * the same processes, before gschedd can requeue them. A worker started again meanwhile
 * ends them itself and writes a new ledger, whose tasks the keeper never sees. With no
 * fence timeout (0) it does nothing, as before. A worker that stops cleanly says goodbye:
 * its tasks are ended by its own stop.
 */
#ifndef WRK_KEEPER_H
#define WRK_KEEPER_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Forks the keeper for the ledger at ledger_path. Call it before the process starts any
 * thread or loop. Returns the pipe's write end (close-on-exec: tasks do not inherit it),
 * with the keeper's pid in *ret_pid (NULL allowed), or a negative errno. The child never
 * returns.
 */
int wrk_keeper_start(const char *ledger_path, pid_t *ret_pid);

/* Tells the keeper the fence timeout (0: never fence). fd from wrk_keeper_start; -1: none. */
void wrk_keeper_set_fence(int fd, uint64_t fence_ms);

/* Tells the keeper that the worker is stopping cleanly, and closes fd. -1: none. */
void wrk_keeper_goodbye(int fd);

#endif
