/*
 * job_kv.c: a running job's key/value store (see job_kv.h). At most SCHED_KV_KEYS_MAX keys,
 * so an array searched from the start is all it takes; each key and value is its own
 * allocation, sized as it came.
 */
#include "scheduler/job_kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct kv_entry {
    char *key;
    unsigned char *value; /* NULL when len is 0 */
    size_t len;
};

struct sched_job_kv {
    size_t n;
    struct kv_entry v[SCHED_KV_KEYS_MAX];
};

bool sched_job_kv_key_ok(const char *key)
{
    size_t n = key != NULL ? strnlen(key, SCHED_KV_KEY_MAX + 1) : 0;

    if (n == 0 || n > SCHED_KV_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (key[i] < ' ' || key[i] > '~')
            return false;
    }
    return true;
}

/* The index of key's entry; kv->n (or 0 without a store) when it is not set. */
static size_t find(const struct sched_job_kv *kv, const char *key)
{
    size_t i = 0;

    while (kv != NULL && i < kv->n && strcmp(kv->v[i].key, key) != 0)
        i++;
    return i;
}

/* A copy of len bytes; NULL for none (len 0) and, with *ret_failed, when out of memory. */
static unsigned char *copy_value(const void *value, size_t len, bool *ret_failed)
{
    unsigned char *copy = len > 0 ? malloc(len) : NULL;

    *ret_failed = len > 0 && copy == NULL;
    if (copy != NULL)
        memcpy(copy, value, len);
    return copy;
}

int sched_job_kv_put(struct sched_job *job, const char *key, const void *value, size_t len)
{
    struct kv_entry *e;
    unsigned char *copy;
    bool failed;
    size_t i;

    if (job->state != SCHED_JOB_RUNNING || !sched_job_kv_key_ok(key))
        return -EINVAL;
    if (len > SCHED_KV_VALUE_MAX)
        return -EMSGSIZE;
    if (job->kv == NULL && (job->kv = calloc(1, sizeof(*job->kv))) == NULL)
        return -ENOMEM;
    i = find(job->kv, key);
    if (i == SCHED_KV_KEYS_MAX)
        return -ENOSPC;
    copy = copy_value(value, len, &failed);
    if (failed)
        return -ENOMEM;
    e = &job->kv->v[i];
    if (i == job->kv->n) { /* a new key */
        e->key = strdup(key);
        if (e->key == NULL) {
            free(copy);
            return -ENOMEM;
        }
        e->value = NULL;
        job->kv->n++;
    }
    free(e->value);
    e->value = copy;
    e->len = len;
    return 0;
}

int sched_job_kv_get(const struct sched_job *job, const char *key, const void **ret_value,
                     size_t *ret_len)
{
    size_t i;

    if (job->state != SCHED_JOB_RUNNING || !sched_job_kv_key_ok(key))
        return -EINVAL;
    i = find(job->kv, key);
    if (job->kv == NULL || i == job->kv->n)
        return -ENOENT;
    *ret_value = job->kv->v[i].value;
    *ret_len = job->kv->v[i].len;
    return 0;
}

size_t sched_job_kv_count(const struct sched_job *job)
{
    return job->state == SCHED_JOB_RUNNING && job->kv != NULL ? job->kv->n : 0;
}

void sched_job_kv_drop(struct sched_job *job)
{
    if (job->kv == NULL)
        return;
    for (size_t i = 0; i < job->kv->n; i++) {
        free(job->kv->v[i].key);
        free(job->kv->v[i].value);
    }
    free(job->kv);
    job->kv = NULL;
}
