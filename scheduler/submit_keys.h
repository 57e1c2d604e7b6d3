/*
 * submit_keys.h: the clients' submit keys (SubmitRequest.client_key) of recent submissions,
 * per user: which job a key made, so that a submit retried after a lost reply answers with
 * that job instead of queueing a second one. A hash table keyed by (uid, key); the keys
 * themselves are kept with their jobs in the store (jobs.submit_key) and put back here when
 * gschedd starts. Pure; loop thread only.
 */
#ifndef SCHED_SUBMIT_KEYS_H
#define SCHED_SUBMIT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_SUBMIT_KEY_MAX 64

struct sched_submit_keys;

struct sched_submit_keys *sched_submit_keys_new(void);
void sched_submit_keys_free(struct sched_submit_keys *k);

/* Whether key is one: 1-64 printable ASCII characters. */
bool sched_submit_key_ok(const char *key);
/* Records that uid's key made job_id (key copied). 0, -EEXIST if it is there, -ENOMEM. */
int sched_submit_keys_put(struct sched_submit_keys *k, uint32_t uid, const char *key,
                          uint64_t job_id);
/* The job uid's key made, or 0. */
uint64_t sched_submit_keys_get(const struct sched_submit_keys *k, uint32_t uid, const char *key);
/* Forgets uid's key (a submission that was not stored after all). */
void sched_submit_keys_drop(struct sched_submit_keys *k, uint32_t uid, const char *key);
size_t sched_submit_keys_count(const struct sched_submit_keys *k);

#endif
