/*
 * kv.h: the gsched job's key/value store, for the tasks of one job to rendezvous without
 * ssh or a shared filesystem: rank 0 puts what the other ranks wait for (an ncclUniqueId),
 * as torchrun's c10d store serves torch.distributed.
 *
 * The store lives in gschedd's memory, one per running job (JobKvPut, JobKvGet in
 * proto/gsched.proto); a task reaches it through GSCHED_SOCKET, which its node's worker
 * relays to gschedd. It takes requests from the job's owner or root while the job runs and
 * goes when the job stops running: a requeued attempt starts empty. Each call is one
 * blocking exchange on its own connection; no global state, so any thread may call.
 *
 * Errors are negative errno codes with a one-line message in err (errlen bytes; err may be
 * NULL): -ENOENT outside a job (GSCHED_JOB_ID or GSCHED_SOCKET unset), -ETIMEDOUT a key not
 * set in time, -EINVAL a bad key or a job that is not running, -EMSGSIZE a value over
 * TRN_KV_VALUE_MAX, -ENOSPC a job with TRN_KV_KEYS_MAX keys already, -EPERM not the job's
 * owner, -EPROTONOSUPPORT a gschedd or worker older than the store, else what the
 * connection met (-ECONNREFUSED, ...). trn_kv_get with a timeout_ms of 0 or less does not
 * wait: -ETIMEDOUT unless the key is set already. A put of a key that is set replaces its
 * value and wakes every get waiting for it.
 */
#ifndef TRN_KV_H
#define TRN_KV_H

#include <stddef.h>

#define TRN_KV_KEY_MAX 128    /* bytes, printable ASCII (space to '~') */
#define TRN_KV_VALUE_MAX 4096 /* bytes, any */
#define TRN_KV_KEYS_MAX 64    /* per job */
/* What a call may take beyond the wait it asks for: connecting, a relay, a busy gschedd. */
#define TRN_KV_EXCHANGE_MS 10000

/*
 * This gsched job's key/value store in gschedd, through GSCHED_SOCKET (the node worker relays
 * it). Only the job's owner (or root) while the job runs; values up to 4 KiB; keys up to 128
 * bytes. Sets key to the len bytes at val, replacing its value. Returns 0 or a negative errno.
 */
int trn_kv_put(const char *key, const void *val, size_t len, char *err, size_t errlen);
/*
 * Waits up to timeout_ms for key to be set; *ret_len gets its length (up to cap bytes copied
 * into val; a longer value is cut, *ret_len says how long it is). Returns 0, -ETIMEDOUT,
 * -ENOENT outside a job (GSCHED_JOB_ID/GSCHED_SOCKET unset), or another negative errno.
 */
int trn_kv_get(const char *key, void *val, size_t cap, size_t *ret_len, int timeout_ms, char *err,
               size_t errlen);

#endif
