/*
 * sched_pmix.c: the fences of srun --mpi=pmix steps. Each worker of such a step runs a PMIx
 * server (worker/pmix.h) whose tasks swap their wire-up data at fences; a worker sends its
 * node's part of a fence here (PmixFence) once all its tasks of the step have entered it,
 * and gschedd, which alone knows when every node has, joins the parts in the step's node
 * order and sends the whole to each of them (PmixFenceDone). A fence is named by the step
 * and a number each worker counts on its own, the same everywhere (pmix.c says why). A
 * task's MPI_Abort ends its step's tasks on its node (its worker does) and, through a
 * PmixAbort, everywhere else: ranks elsewhere would wait on it for good.
 *
 * Fences outlive a lost connection and a gschedd restart: a worker sends the parts of its
 * fences under way again when it registers (a part twice is taken once), and the answer of
 * the last one it had (PmixFence.done), which gschedd keeps too (fence_done): a node that
 * sent its part again after the others had their answer is given that answer.
 *
 * A fence never completes once a task of its step has ended (a rank that exits has left
 * every fence still to come): those under way then fail on every node, so that the tasks
 * waiting in them see an error rather than hang. A step holds at most PMIX_FENCES_MAX
 * fences under way and PMIX_FENCE_BYTES_MAX bytes of parts; beyond, its fence fails, as it
 * would for a worker that sends parts no real step does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/frame.h"
#include "scheduler/steps_internal.h"

#define PMIX_FENCES_MAX 16
#define PMIX_FENCE_BYTES_MAX (64u << 20)

/* One fence of a step under way: each step node's part, once it has come. */
struct sched_pmix_fence {
    struct sched_pmix_fence *next;
    uint32_t seq;
    uint32_t got; /* parts that have come */
    size_t bytes; /* their length together */
    uint8_t **parts;
    size_t *lens;
    bool *came; /* per step node: its part has come (an empty one too) */
};

const char *sched_step_mpi(const struct sched_ctx *s, const Gs__StepLaunchRequest *req)
{
    const char *mpi = req->mpi;

    if (mpi == NULL || mpi[0] == '\0') /* srun said nothing: MpiDefault's */
        mpi = s->cfg != NULL ? s->cfg->mpi_default : "";
    if (strcmp(mpi, "pmix") == 0)
        return "pmix";
    return strcmp(mpi, "pmi2") == 0 ? "pmi2" : NULL;
}

static void fence_free(struct sched_pmix_fence *f, uint32_t nnodes)
{
    for (uint32_t i = 0; f->parts != NULL && i < nnodes; i++)
        free(f->parts[i]);
    free(f->parts);
    free(f->lens);
    free(f->came);
    free(f);
}

void sched_step_pmix_free(struct sched_step *st)
{
    free(st->fence_done);
    st->fence_done = NULL;
    while (st->fences != NULL) {
        struct sched_pmix_fence *f = st->fences;

        st->fences = f->next;
        fence_free(f, st->nnodes);
    }
}

/* The answer to fence seq of job_id.step, to node n (NULL: gone). */
static void send_done(struct sched_node *n, uint64_t job_id, uint32_t step, uint32_t seq, int code,
                      const uint8_t *data, size_t len)
{
    Gs__PmixFenceDone done = GS__PMIX_FENCE_DONE__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    done.job_id = job_id;
    done.step = step;
    done.seq = seq;
    done.code = code;
    done.data.data = (uint8_t *)data;
    done.data.len = len;
    env.body_case = GS__ENVELOPE__BODY_PMIX_FENCE_DONE;
    env.pmix_fence_done = &done;
    if (n == NULL || !sched_node_send(n, &env))
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " seq=%" PRIu32 " node=%s pmix fence answer "
               "not sent",
               job_id, step, seq, n != NULL ? n->name : "?");
}

/* The answer to every node of st. */
static void send_all(struct sched_ctx *s, const struct sched_step *st, uint32_t seq, int code,
                     const uint8_t *data, size_t len)
{
    for (uint32_t k = 0; k < st->nnodes; k++)
        send_done(sched_node_at(s, st->nodes[k].index), st->job_id, st->step, seq, code, data, len);
}

/* Takes f out of st's fences and frees it. */
static void drop(struct sched_step *st, struct sched_pmix_fence *f)
{
    for (struct sched_pmix_fence **at = &st->fences; *at != NULL; at = &(*at)->next) {
        if (*at == f) {
            *at = f->next;
            break;
        }
    }
    fence_free(f, st->nnodes);
}

/* Tells every node of the step that fence f failed (code), and forgets it. */
static void fail(struct sched_ctx *s, struct sched_step *st, struct sched_pmix_fence *f, int code)
{
    GS_LOG(GS_LOG_WARN, "job=%" PRIu64 " step=%u seq=%" PRIu32 " code=%d pmix fence failed",
           st->job_id, st->step - 1, f->seq, code);
    send_all(s, st, f->seq, code, NULL, 0);
    drop(st, f);
}

void sched_step_pmix_task_ended(struct sched_ctx *s, struct sched_step *st)
{
    while (st->fences != NULL)
        fail(s, st, st->fences, -ECONNABORTED);
}

/* answer (owned from here on) as st's last completed fence, seq, unless it has a later one. */
static void keep_done(struct sched_step *st, uint32_t seq, uint8_t *answer, size_t len)
{
    if (st->fence_done != NULL && st->fence_done_seq > seq) {
        free(answer);
        return;
    }
    free(st->fence_done);
    st->fence_done = answer;
    st->fence_done_len = len;
    st->fence_done_seq = seq;
}

/* Every part is in: the whole, in node order, to each node. */
static void complete(struct sched_ctx *s, struct sched_step *st, struct sched_pmix_fence *f)
{
    uint8_t *all = malloc(f->bytes > 0 ? f->bytes : 1);
    size_t at = 0;

    if (all == NULL) {
        fail(s, st, f, -ENOMEM);
        return;
    }
    for (uint32_t k = 0; k < st->nnodes; k++) {
        if (f->lens[k] > 0)
            memcpy(all + at, f->parts[k], f->lens[k]);
        at += f->lens[k];
    }
    GS_LOG(GS_LOG_DEBUG, "job=%" PRIu64 " step=%u seq=%" PRIu32 " bytes=%zu pmix fence complete",
           st->job_id, st->step - 1, f->seq, f->bytes);
    send_all(s, st, f->seq, 0, all, at);
    keep_done(st, f->seq, all, at);
    drop(st, f);
}

/* A worker's answer of fence seq (PmixFence.done; gschedd restarted, or lost that node's
 * connection, since): kept, and given to the nodes whose parts of it are in. */
static void answer_from(struct sched_ctx *s, struct sched_step *st, const Gs__PmixFence *msg)
{
    uint8_t *answer = malloc(msg->data.len > 0 ? msg->data.len : 1);

    if (answer == NULL)
        return; /* the nodes waiting on it send their parts again when they register */
    if (msg->data.len > 0)
        memcpy(answer, msg->data.data, msg->data.len);
    for (struct sched_pmix_fence *f = st->fences; f != NULL; f = f->next) {
        if (f->seq != msg->seq)
            continue;
        for (uint32_t k = 0; k < st->nnodes; k++) {
            if (f->came[k])
                send_done(sched_node_at(s, st->nodes[k].index), st->job_id, st->step, f->seq, 0,
                          answer, msg->data.len);
        }
        drop(st, f);
        break;
    }
    keep_done(st, msg->seq, answer, msg->data.len);
}

/* The fence seq of st, made if it is not under way yet; NULL when out of memory or over
 * PMIX_FENCES_MAX. */
static struct sched_pmix_fence *fence_get(struct sched_step *st, uint32_t seq)
{
    struct sched_pmix_fence *f;
    uint32_t n = 0;

    for (f = st->fences; f != NULL; f = f->next, n++) {
        if (f->seq == seq)
            return f;
    }
    if (n >= PMIX_FENCES_MAX || (f = calloc(1, sizeof(*f))) == NULL)
        return NULL;
    f->seq = seq;
    f->parts = calloc(st->nnodes, sizeof(*f->parts));
    f->lens = calloc(st->nnodes, sizeof(*f->lens));
    f->came = calloc(st->nnodes, sizeof(*f->came));
    if (f->parts == NULL || f->lens == NULL || f->came == NULL) {
        fence_free(f, st->nnodes);
        return NULL;
    }
    f->next = st->fences;
    st->fences = f;
    return f;
}

/* The index of node n among the step's nodes, or st->nnodes. */
static uint32_t step_node(const struct sched_step *st, const struct sched_node *n)
{
    uint32_t k = 0;

    while (k < st->nnodes && st->nodes[k].index != n->index)
        k++;
    return k;
}

void sched_pmix_fence(struct sched_ctx *s, struct sched_node *n, const Gs__PmixFence *msg)
{
    struct sched_step *st = sched_step_find(s, msg->job_id, msg->step);
    struct sched_pmix_fence *f;
    uint32_t k;
    uint8_t *part = NULL;

    if (st == NULL || st->attempt != msg->attempt || (k = step_node(st, n)) == st->nnodes) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%" PRIu32 " node=%s pmix fence of no step "
               "there, refused",
               msg->job_id, msg->step, n->name);
        if (st == NULL || st->attempt != msg->attempt)
            send_done(n, msg->job_id, msg->step, msg->seq, -ENOENT, NULL, 0);
        return;
    }
    if (msg->done) {
        if (msg->data.len <= PMIX_FENCE_BYTES_MAX)
            answer_from(s, st, msg);
        return;
    }
    if (st->fence_done != NULL && msg->seq == st->fence_done_seq) { /* over: its answer */
        send_done(n, st->job_id, st->step, msg->seq, 0, st->fence_done, st->fence_done_len);
        return;
    }
    f = fence_get(st, msg->seq);
    if (f == NULL) {
        send_done(n, st->job_id, st->step, msg->seq, -ENOSPC, NULL, 0);
        return;
    }
    if (f->came[k]) {
        GS_LOG(GS_LOG_WARN,
               "job=%" PRIu64 " step=%u seq=%" PRIu32 " node=%s pmix fence part "
               "sent twice, dropped",
               st->job_id, st->step - 1, msg->seq, n->name);
        return;
    }
    if (msg->data.len > PMIX_FENCE_BYTES_MAX - f->bytes ||
        (msg->data.len > 0 && (part = malloc(msg->data.len)) == NULL)) {
        fail(s, st, f, msg->data.len > 0 && part == NULL ? -ENOMEM : -E2BIG);
        return;
    }
    if (msg->data.len > 0)
        memcpy(part, msg->data.data, msg->data.len);
    f->parts[k] = part;
    f->lens[k] = msg->data.len;
    f->came[k] = true;
    f->bytes += msg->data.len;
    f->got++;
    if (f->got == st->nnodes)
        complete(s, st, f);
}

void sched_pmix_abort(struct sched_ctx *s, struct sched_node *n, const Gs__PmixAbort *msg)
{
    struct sched_step *st = sched_step_find(s, msg->job_id, msg->step);
    char why[200];

    if (st == NULL || st->attempt != msg->attempt || step_node(st, n) == st->nnodes)
        return; /* over already */
    snprintf(why, sizeof(why), "a task on %s called MPI_Abort (status %d%s%.80s)", n->name,
             msg->status, msg->message != NULL && msg->message[0] != '\0' ? ": " : "",
             msg->message != NULL ? msg->message : "");
    GS_LOG(GS_LOG_INFO,
           "job=%" PRIu64 " step=%u node=%s status=%d pmix abort: the step's tasks "
           "end",
           st->job_id, st->step - 1, n->name, msg->status);
    sched_step_end_tasks(s, st, why);
}
