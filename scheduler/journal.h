/*
 * journal.h: durable writes for the scheduler's loop, without blocking it.
 *
 * The loop hands the journal a change (an apply function plus its data); a writer thread
 * applies every change that is waiting in one SQLite transaction and commits it (group
 * commit: one fsync for a burst of submits), then posts back to the loop, which calls each
 * change's done callback with the result. A CLI gets its acknowledgement from that done
 * callback, so a job is acknowledged only once its row is on disk.
 *
 * If a batch fails, each of its changes is retried in a transaction of its own, so one bad
 * change fails alone. Changes commit in submission order.
 *
 * Threads: sched_journal_new/submit/close and the done callbacks on the loop thread; apply
 * on the writer thread, touching nothing but the store and its own data. The journal owns
 * the store from new() on and closes it in close().
 */
#ifndef SCHED_JOURNAL_H
#define SCHED_JOURNAL_H

#include <uv.h>

#include "scheduler/store.h"

struct sched_journal;

/* Runs on the writer thread inside a transaction. Returns 0 or a negative errno. */
typedef int (*sched_journal_apply_fn)(struct sched_store *store, void *data);
/* Runs on the loop thread once the change is committed (status 0) or failed. */
typedef void (*sched_journal_done_fn)(int status, void *data);

/* Starts the writer thread. NULL on failure (the store is then still the caller's). */
struct sched_journal *sched_journal_new(uv_loop_t *loop, struct sched_store *store);

/* Queues a change. Returns 0, or -ENOMEM / -ESHUTDOWN (then done is not called). */
int sched_journal_submit(struct sched_journal *j, sched_journal_apply_fn apply,
                         sched_journal_done_fn done, void *data);

/*
 * Queues a read: read(store, data) runs on the writer thread outside any transaction, once
 * every change queued before it is committed (it sees them), touching nothing but the
 * store and its own data; done(status, data) then runs on the loop thread with read's
 * return. The loop never blocks on SQLite this way (gsched show / sacct of jobs only the
 * store still holds). Returns 0, or -ENOMEM / -ESHUTDOWN (then done is not called).
 */
int sched_journal_read(struct sched_journal *j, sched_journal_apply_fn read,
                       sched_journal_done_fn done, void *data);

/* Number of changes (and reads) submitted whose done callback has not run yet. */
unsigned sched_journal_pending(const struct sched_journal *j);

/*
 * Commits what is queued, stops the thread, closes the store, calls the remaining done
 * callbacks, and frees the journal from its handle's close callback (run the loop).
 */
void sched_journal_close(struct sched_journal *j);

#endif
