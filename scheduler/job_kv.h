/*
 * job_kv.h: a running job's key/value store (JobKvPut, JobKvGet in proto/gsched.proto), for
 * the tasks of one job to rendezvous: rank 0 puts what the other ranks wait for.
 *
 * The store belongs to the job's current attempt: it is made by the first put while the job
 * is RUNNING and dropped (sched_job_kv_drop) the moment the job stops running, whether it
 * ended or goes back to PENDING to be requeued, so a new attempt starts empty. jobs.c drops
 * it where the job's allocation goes back, which every way out of RUNNING passes through.
 * It lives in memory only: gschedd restarting loses it, as the tasks' sockets would be.
 *
 * Bounded: keys are 1 to SCHED_KV_KEY_MAX printable ASCII characters (space to '~'), values
 * 0 to SCHED_KV_VALUE_MAX bytes of anything, at most SCHED_KV_KEYS_MAX keys a job, so a
 * job's store never holds more than about 270 KiB. Who may use it (the owner, root) is the
 * caller's business (sched_kv.c); waiting for a key that is not set yet too.
 *
 * Pure bookkeeping over struct sched_job: no I/O, no loop. The store is owned by the job.
 * Loop thread only, like the job table.
 */
#ifndef SCHED_JOB_KV_H
#define SCHED_JOB_KV_H

#include <stdbool.h>
#include <stddef.h>

#include "scheduler/jobs.h"

#define SCHED_KV_KEY_MAX 128
#define SCHED_KV_VALUE_MAX 4096
#define SCHED_KV_KEYS_MAX 64

/* Whether key is one the store takes: 1 to SCHED_KV_KEY_MAX of space to '~'. */
bool sched_job_kv_key_ok(const char *key);

/*
 * Sets key to the len bytes at value (copied), replacing what it had. Returns 0; -EINVAL
 * when the job is not RUNNING or the key is bad; -EMSGSIZE when len is over
 * SCHED_KV_VALUE_MAX; -ENOSPC for a new key when the job has SCHED_KV_KEYS_MAX already;
 * -ENOMEM (the store is as it was).
 */
int sched_job_kv_put(struct sched_job *job, const char *key, const void *value, size_t len);

/*
 * The value of key: *ret_value (borrowed, valid until the next put or drop of this job;
 * NULL when len is 0) and *ret_len. Returns 0, -ENOENT when the key is not set, -EINVAL
 * when the job is not RUNNING or the key is bad.
 */
int sched_job_kv_get(const struct sched_job *job, const char *key, const void **ret_value,
                     size_t *ret_len);

/* How many keys the job has (0 when it is not running). */
size_t sched_job_kv_count(const struct sched_job *job);

/* Frees the job's store, if it has one; the next put starts an empty one. */
void sched_job_kv_drop(struct sched_job *job);

#endif
