/*
 * sched_keys.c: idempotent submits. A SubmitRequest may carry the client's key
 * (client_key); the first submission's first job keeps it (stored with its row), and a later
 * submit by the same user with the same key queues nothing: it is answered with that job, or
 * asked to try again while the first is still on its way to disk (never acknowledged before
 * it is stored). Keys of jobs submitted in the last day come back when gschedd restarts, so
 * a retry across a crash between the commit and the reply finds its job too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"
#include "scheduler/submit_keys.h"

#define KEY_KEPT_MS (24ull * 3600 * 1000)

/* Jobs made by the submission whose first job is first: 1, or an array's elements. */
static uint32_t array_size(struct sched_ctx *s, const struct sched_job *first)
{
    size_t njobs = sched_jobs_count(s->jobs);
    uint32_t n = 0;

    if (first->spec->array.array_job_id == 0)
        return 0;
    for (size_t i = 0; i < njobs; i++)
        n += sched_jobs_at(s->jobs, i)->spec->array.array_job_id == first->id;
    return n;
}

int sched_keys_check(struct sched_cli *c, uint64_t request_id, const Gs__SubmitRequest *req)
{
    struct sched_ctx *s = c->s;
    const char *key = req->client_key;
    Gs__SubmitReply reply = GS__SUBMIT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const struct sched_job *job;
    uint64_t id;

    if (key == NULL || key[0] == '\0' || req->validate_only)
        return 0;
    if (!sched_submit_key_ok(key)) {
        sched_cli_error(c, request_id, -EINVAL,
                        "client_key must be 1 to 64 printable characters without spaces", false);
        return 1;
    }
    id = sched_submit_keys_get(s->submit_keys, c->uid, key);
    if (id == 0)
        return 0;
    job = sched_jobs_find(s->jobs, id);
    if (job == NULL) {
        sched_cli_error(c, request_id, -EAGAIN,
                        "the submission with this client key is still being stored; try again",
                        false);
        return 1;
    }
    GS_LOG(GS_LOG_INFO, "job=%llu uid=%u submit retried with its key, nothing queued",
           (unsigned long long)id, c->uid);
    reply.job_id = id;
    reply.state = sched_job_wire_state(job);
    reply.array_size = array_size(s, job);
    reply.partition = (char *)(job->spec->partition != NULL ? job->spec->partition : "");
    reply.retried = true;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_SUBMIT_REPLY;
    env.submit_reply = &reply;
    sched_cli_reply(c, &env, false);
    return 1;
}

int sched_keys_claim(struct sched_ctx *s, struct sched_job *first, const char *key)
{
    int rc;

    if (key == NULL || key[0] == '\0')
        return 0;
    first->submit_key = strdup(key);
    if (first->submit_key == NULL)
        return -ENOMEM;
    rc = sched_submit_keys_put(s->submit_keys, first->uid, key, first->id);
    if (rc < 0) {
        free(first->submit_key);
        first->submit_key = NULL;
    }
    return rc;
}

void sched_keys_unclaim(struct sched_ctx *s, const struct sched_job *first)
{
    if (first->submit_key != NULL)
        sched_submit_keys_drop(s->submit_keys, first->uid, first->submit_key);
}

int sched_keys_restore(struct sched_ctx *s, struct sched_job *job, const char *key)
{
    uint64_t now = gs_clock_wall_ms();

    if (key == NULL || key[0] == '\0')
        return 0;
    job->submit_key = strdup(key);
    if (job->submit_key == NULL)
        return -ENOMEM;
    if (job->submit_ms + KEY_KEPT_MS < now)
        return 0;
    return sched_submit_keys_put(s->submit_keys, job->uid, key, job->id) == -ENOMEM ? -ENOMEM : 0;
}
