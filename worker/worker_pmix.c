/*
 * worker_pmix.c: the worker's side of srun --mpi=pmix and --mpi=pmi2 (the servers themselves
 * are pmix.c and pmi.c): a server started for the first step that asks for one, each
 * fence's part sent to gschedd and gschedd's answer handed back to the server whose step it
 * is, and a task's MPI_Abort ending its step's tasks here and, through gschedd (PmixAbort),
 * on its other nodes, as Slurm ends a step whose rank aborted.
 *
 * A fence outlives the connection to gschedd (gschedd restarting): each part is kept until
 * its answer comes, and each step's last answer until the step ends here; both go to
 * gschedd again when the worker registers (PmixFence, done for an answer), so that gschedd
 * joins the parts it lost and answers the nodes that missed an answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/frame.h"
#include "worker/worker_internal.h"

/* A fence's part this node sent, until its answer comes, or (done) a step's last answer. */
struct wrk_fence_keep {
    struct wrk_fence_keep *next;
    uint64_t job_id;
    uint32_t step, attempt, seq;
    bool done;
    size_t len;
    uint8_t data[];
};

/* A fence's answer, to the server of its step. */
static void fence_done(struct wrk_ctx *w, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                       const void *bytes, size_t len)
{
    if (wrk_pmi_fence_done(w->pmi, job_id, step, seq, code, bytes, len) == -ENOENT)
        wrk_pmix_fence_done(w->pmix, job_id, step, seq, code, bytes, len);
}

static int send_part(struct wrk_ctx *w, const struct wrk_fence_keep *k, const void *bytes,
                     size_t len)
{
    Gs__PmixFence f = GS__PMIX_FENCE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    f.job_id = k->job_id;
    f.step = k->step;
    f.attempt = k->attempt;
    f.seq = k->seq;
    f.done = k->done;
    f.data.data = (uint8_t *)bytes;
    f.data.len = len;
    env.body_case = GS__ENVELOPE__BODY_PMIX_FENCE;
    env.pmix_fence = &f;
    return wrk_send(w, &env);
}

/* Takes out (and returns, or NULL) the kept entry of (job_id, step) that is done, or the
 * part of fence seq. */
static struct wrk_fence_keep *unkeep(struct wrk_ctx *w, uint64_t job_id, uint32_t step, bool done,
                                     uint32_t seq)
{
    for (struct wrk_fence_keep **at = &w->fences; *at != NULL; at = &(*at)->next) {
        struct wrk_fence_keep *k = *at;

        if (k->job_id == job_id && k->step == step && k->done == done && (done || k->seq == seq)) {
            *at = k->next;
            return k;
        }
    }
    return NULL;
}

/* A copy of bytes kept as k's (NULL: out of memory, then not kept). */
static struct wrk_fence_keep *keep(struct wrk_ctx *w, const struct wrk_fence_keep *k,
                                   const void *bytes, size_t len)
{
    struct wrk_fence_keep *copy = malloc(sizeof(*copy) + len);

    if (copy == NULL)
        return NULL;
    *copy = *k;
    copy->len = len;
    if (len > 0)
        memcpy(copy->data, bytes, len);
    copy->next = w->fences;
    w->fences = copy;
    return copy;
}

static void send_fence(void *data, uint64_t job_id, uint32_t step, uint32_t attempt, uint32_t seq,
                       const void *bytes, size_t len)
{
    struct wrk_ctx *w = data;
    struct wrk_fence_keep k = {.job_id = job_id, .step = step, .attempt = attempt, .seq = seq};

    /* Kept until answered: while gschedd is away the part goes when the worker registers. */
    if (keep(w, &k, bytes, len) == NULL) {
        fence_done(w, job_id, step, seq, -ENOMEM, NULL, 0);
        return;
    }
    if (w->registered)
        (void)send_part(w, &k, bytes, len); /* lost with the connection: sent again */
}

void wrk_fences_registered(struct wrk_ctx *w)
{
    const Gs__Hello *peer = w->conn != NULL ? gs_proto_conn_peer_hello(w->conn) : NULL;
    struct wrk_fence_keep **at = &w->fences;

    while (*at != NULL) {
        struct wrk_fence_keep *k = *at;

        if (peer != NULL && peer->protocol_minor >= GS_PROTO_MINOR_STEP_KEY) {
            (void)send_part(w, k, k->data, k->len);
            at = &k->next;
            continue;
        }
        *at = k->next; /* a gschedd that would not take them again: the fence fails */
        if (!k->done)
            fence_done(w, k->job_id, k->step, k->seq, -ENOTCONN, NULL, 0);
        free(k);
    }
}

void wrk_fences_free(struct wrk_ctx *w)
{
    while (w->fences != NULL) {
        struct wrk_fence_keep *k = w->fences;

        w->fences = k->next;
        free(k);
    }
}

static void on_abort(void *data, uint64_t job_id, uint32_t step, int status, const char *msg)
{
    struct wrk_ctx *w = data;
    struct wrk_task_match m = {.job_id = job_id, .step = step};
    const struct wrk_job *job = wrk_job_find(w, job_id);
    Gs__PmixAbort a = GS__PMIX_ABORT__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    int n = w->tasks != NULL ? wrk_tasks_kill(w->tasks, &m, WRK_END_CANCELLED) : 0;

    GS_LOG(GS_LOG_WARN,
           "job=%" PRIu64 " step=%" PRIu32 " status=%d tasks=%d message=\"%s\" a task aborted "
           "(MPI_Abort): the step's tasks end",
           job_id, step, status, n, msg);
    a.job_id = job_id;
    a.step = step;
    a.attempt = job != NULL ? job->attempt : 0;
    a.status = status;
    a.message = (char *)msg;
    env.body_case = GS__ENVELOPE__BODY_PMIX_ABORT;
    env.pmix_abort = &a;
    if (wrk_send(w, &env) < 0)
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " abort not sent: the step's tasks on "
               "its other nodes run on",
               job_id, step);
}

int wrk_pmix_start(struct wrk_ctx *w, struct gs_error *err)
{
    char dir[sizeof(w->script_dir) + 80];

    if (w->pmix != NULL)
        return 0;
    /* Of this process: workers of one name may share a machine (a local cluster's tests). */
    snprintf(dir, sizeof(dir), "%s/gsched-pmix-%s.%d", w->script_dir, w->node_name, (int)getpid());
    return wrk_pmix_new(w->loop, dir, w->node_name, send_fence, on_abort, w, &w->pmix, err);
}

int wrk_pmi_start(struct wrk_ctx *w)
{
    return w->pmi != NULL ? 0 : wrk_pmi_new(w->loop, send_fence, on_abort, w, &w->pmi);
}

void wrk_mpi_step_end(struct wrk_ctx *w, uint64_t job_id, uint32_t step)
{
    for (struct wrk_fence_keep **at = &w->fences; *at != NULL;) {
        struct wrk_fence_keep *k = *at;

        if (k->job_id == job_id && k->step == step) {
            *at = k->next;
            free(k);
        } else {
            at = &k->next;
        }
    }
    wrk_pmix_step_end(w->pmix, job_id, step);
    wrk_pmi_step_end(w->pmi, job_id, step);
}

void wrk_handle_fence_done(struct wrk_ctx *w, const Gs__PmixFenceDone *msg)
{
    struct wrk_fence_keep *part = unkeep(w, msg->job_id, msg->step, false, msg->seq), *last;

    if (part != NULL && msg->code == 0) { /* the step's last answer, for a gschedd that lost it */
        last = unkeep(w, msg->job_id, msg->step, true, 0);
        if (last == NULL || last->seq < msg->seq) {
            part->done = true;
            part->seq = msg->seq;
            if (keep(w, part, msg->data.data, msg->data.len) == NULL)
                GS_LOG(GS_LOG_WARN,
                       "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " out of memory: fence "
                       "answer not kept",
                       msg->job_id, msg->step, msg->seq);
            free(last);
        } else { /* a later one is kept already */
            last->next = w->fences;
            w->fences = last;
        }
    }
    free(part);
    fence_done(w, msg->job_id, msg->step, msg->seq, msg->code, msg->data.data, msg->data.len);
}
