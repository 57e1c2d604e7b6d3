/*
 * sched_kv.c: JobKvPut and JobKvGet, the jobs' key/value stores (job_kv.h) served on CLI
 * connections, a task's own relayed through its node's worker or an owner's on gschedd's
 * socket: the same dispatch serves both (sched_cli.c), and the same rule, the job's owner
 * or root while the job runs (sched_cli_task_job).
 *
 * A get for a key that is not set yet waits without holding the loop up: its record (struct
 * sched_kv_wait, on s->kv_waits and c->kv_wait) holds the connection's record
 * (sched_cli_hold) and runs a timer. Whichever comes first answers it: a put of the key,
 * the timer (-ETIMEDOUT), the job leaving RUNNING (-EINVAL, sched_kv_job_changed). The peer
 * going away withdraws it unanswered (sched_kv_cli_gone, from the connection's on_close).
 * In every case the record is unlinked at once and freed in its timer's close callback,
 * which lets go of the connection's record last, so nothing is answered into freed memory.
 * Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduler/job_kv.h"
#include "scheduler/sched_internal.h"

#define KV_WHAT "use its key/value store"
#define KV_RUNNING_ONLY "its key/value store is kept only while it runs"

struct sched_kv_wait {
    struct sched_kv_wait *next;
    struct sched_cli *cli;
    uint64_t request_id;
    uint64_t job_id;
    uint32_t attempt; /* the job's attempt it waits in */
    uint64_t timeout_ms;
    char key[SCHED_KV_KEY_MAX + 1];
    uv_timer_t timer;
};

static void send_value(struct sched_cli *c, uint64_t request_id, uint64_t job_id, const char *key,
                       const void *value, size_t len)
{
    Gs__JobKvValue reply = GS__JOB_KV_VALUE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply.job_id = job_id;
    reply.key = (char *)key;
    reply.value.data = (uint8_t *)value;
    reply.value.len = len;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_JOB_KV_VALUE;
    env.job_kv_value = &reply;
    sched_cli_reply(c, &env, false);
}

static void on_wait_closed(uv_handle_t *handle)
{
    struct sched_kv_wait *w = handle->data;
    struct sched_ctx *s = w->cli->s;

    sched_cli_unhold(w->cli);
    free(w);
    sched_release_handle(s);
}

/* Takes w off the lists, so that nothing else answers it; the caller answers or not. */
static void wait_detach(struct sched_kv_wait *w)
{
    for (struct sched_kv_wait **p = &w->cli->s->kv_waits; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    w->cli->kv_wait = NULL;
}

static void wait_close(struct sched_kv_wait *w)
{
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, on_wait_closed);
}

static void on_wait_timeout(uv_timer_t *timer)
{
    struct sched_kv_wait *w = timer->data;
    char msg[SCHED_KV_KEY_MAX + 96];

    wait_detach(w);
    snprintf(msg, sizeof(msg), "job %llu: key '%s' was not set within %llu ms",
             (unsigned long long)w->job_id, w->key, (unsigned long long)w->timeout_ms);
    sched_cli_error(w->cli, w->request_id, -ETIMEDOUT, msg, false);
    wait_close(w);
}

/* Parks the get until its key is set, the timeout passes or the job stops running. */
static void wait_start(struct sched_cli *c, uint64_t request_id, const struct sched_job *job,
                       const Gs__JobKvGet *req)
{
    struct sched_ctx *s = c->s;
    struct sched_kv_wait *w = calloc(1, sizeof(*w));

    if (w == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    w->cli = c;
    w->request_id = request_id;
    w->job_id = job->id;
    w->attempt = job->attempt;
    w->timeout_ms = req->timeout_ms;
    snprintf(w->key, sizeof(w->key), "%s", req->key);
    uv_timer_init(s->loop, &w->timer);
    w->timer.data = w;
    s->open_handles++; /* until on_wait_closed */
    sched_cli_hold(c);
    c->kv_wait = w;
    w->next = s->kv_waits;
    s->kv_waits = w;
    uv_timer_start(&w->timer, on_wait_timeout, req->timeout_ms, 0);
    GS_LOG(GS_LOG_DEBUG, "job=%llu key=\"%s\" timeout_ms=%llu kv get waits",
           (unsigned long long)job->id, w->key, (unsigned long long)req->timeout_ms);
}

/* The gets waiting for key of job's current attempt get its value. */
static void wake_waiters(struct sched_ctx *s, const struct sched_job *job, const char *key,
                         const void *value, size_t len)
{
    struct sched_kv_wait *w = s->kv_waits, *next;

    for (; w != NULL; w = next) {
        next = w->next;
        if (w->job_id != job->id || w->attempt != job->attempt || strcmp(w->key, key) != 0)
            continue;
        wait_detach(w);
        send_value(w->cli, w->request_id, job->id, w->key, value, len);
        wait_close(w);
    }
}

/* Why a put was refused, for its ErrorReply. */
static void put_refusal(const struct sched_job *job, int rc, size_t len, char *msg, size_t size)
{
    unsigned long long id = job->id;

    if (rc == -EINVAL)
        snprintf(msg, size, "job %llu: a key is 1 to %d printable ASCII characters (space to '~')",
                 id, SCHED_KV_KEY_MAX);
    else if (rc == -EMSGSIZE)
        snprintf(msg, size, "job %llu: a value of %zu bytes is over the %d bytes a key may hold",
                 id, len, SCHED_KV_VALUE_MAX);
    else if (rc == -ENOSPC)
        snprintf(msg, size, "job %llu has %d keys already: no more are kept", id,
                 SCHED_KV_KEYS_MAX);
    else
        snprintf(msg, size, "out of memory");
}

void sched_kv_put(struct sched_cli *c, uint64_t request_id, const Gs__JobKvPut *req)
{
    struct sched_job *job =
        sched_cli_task_job(c, request_id, req->job_id, KV_WHAT, KV_RUNNING_ONLY);
    Gs__JobKvPutReply reply = GS__JOB_KV_PUT_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    const void *value;
    size_t len;
    char msg[160];
    int rc;

    if (job == NULL)
        return;
    rc = sched_job_kv_put(job, req->key, req->value.data, req->value.len);
    GS_LOG(GS_LOG_DEBUG, "job=%llu uid=%u bytes=%zu rc=%d kv put", (unsigned long long)job->id,
           (unsigned)c->uid, req->value.len, rc);
    if (rc < 0) {
        put_refusal(job, rc, req->value.len, msg, sizeof(msg));
        sched_cli_error(c, request_id, rc, msg, false);
        return;
    }
    /* The store's copy: the request is freed when this returns, the store outlives it. */
    if (sched_job_kv_get(job, req->key, &value, &len) == 0)
        wake_waiters(c->s, job, req->key, value, len);
    reply.job_id = job->id;
    reply.keys = (uint32_t)sched_job_kv_count(job);
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_JOB_KV_PUT_REPLY;
    env.job_kv_put_reply = &reply;
    sched_cli_reply(c, &env, false);
}

void sched_kv_get(struct sched_cli *c, uint64_t request_id, const Gs__JobKvGet *req)
{
    struct sched_job *job =
        sched_cli_task_job(c, request_id, req->job_id, KV_WHAT, KV_RUNNING_ONLY);
    const void *value;
    size_t len;
    char msg[SCHED_KV_KEY_MAX + 96];
    int rc;

    if (job == NULL)
        return;
    rc = sched_job_kv_get(job, req->key, &value, &len);
    if (rc == 0) {
        send_value(c, request_id, job->id, req->key, value, len);
    } else if (rc == -EINVAL) {
        put_refusal(job, rc, 0, msg, sizeof(msg));
        sched_cli_error(c, request_id, rc, msg, false);
    } else if (req->timeout_ms == 0) {
        snprintf(msg, sizeof(msg), "job %llu: key '%s' is not set", (unsigned long long)job->id,
                 req->key);
        sched_cli_error(c, request_id, -ETIMEDOUT, msg, false);
    } else {
        wait_start(c, request_id, job, req);
    }
}

void sched_kv_job_changed(struct sched_ctx *s, const struct sched_job *job)
{
    struct sched_kv_wait *w = s->kv_waits, *next;
    char msg[SCHED_KV_KEY_MAX + 160];

    for (; w != NULL; w = next) {
        next = w->next;
        if (w->job_id != job->id || (job->state == SCHED_JOB_RUNNING && job->attempt == w->attempt))
            continue;
        if (job->state == SCHED_JOB_PENDING)
            snprintf(msg, sizeof(msg),
                     "job %llu was requeued before key '%s' was set: its next attempt starts "
                     "with an empty key/value store",
                     (unsigned long long)job->id, w->key);
        else
            snprintf(msg, sizeof(msg), "job %llu is %s: it stopped running before key '%s' was set",
                     (unsigned long long)job->id, sched_job_state_name(job->state), w->key);
        wait_detach(w);
        sched_cli_error(w->cli, w->request_id, -EINVAL, msg, false);
        wait_close(w);
    }
}

void sched_kv_cli_gone(struct sched_cli *c)
{
    struct sched_kv_wait *w = c->kv_wait;

    if (w == NULL)
        return;
    GS_LOG(GS_LOG_DEBUG, "job=%llu key=\"%s\" kv get withdrawn", (unsigned long long)w->job_id,
           w->key);
    wait_detach(w);
    wait_close(w);
}
