/*
 * sched_alloc.c: allocations, the jobs behind `salloc` and `srun` outside a job. An
 * AllocRequest is a submit (sched_submit.c admits and stores it as any batch job) whose
 * spec has `allocation` set; the job it makes is placed and started as a batch job is, but
 * its one task, the batch step's stand-in, runs on no worker: it is the client's command on
 * the submit host. Steps (srun inside it) run in it through sched_steps.c as in any
 * running job.
 *
 * The CLI connection that asked holds the allocation (struct sched_salloc on its record):
 *   - it hears AllocReply PENDING (job id) once the job is stored, GRANTED (nodes, the
 *     SLURM_* variables a batch job gets) once its start is stored;
 *   - AllocRelease (the command's exit status) ends the stand-in task: COMPLETED, or FAILED
 *     with that status; RELEASED once stored, then gschedd closes the connection;
 *   - the connection closing before that ends the job CANCELLED, as Slurm ends an
 *     allocation whose salloc is killed;
 *   - an end under it (scancel, the time limit, which gschedd's cron enforces since no
 *     worker runs the task, a lost node) is told as REVOKED, then the connection closes;
 *     preemption, the idle policy and scontrol requeue only mark a job, waiting for its
 *     tasks: the cron ends a marked allocation CANCELLED (never requeued, as Slurm
 *     requeues batch jobs only).
 * Ending kills the job's steps on their workers (SignalTasks to every step). On start,
 * gschedd ends every allocation left pending or running by the last run CANCELLED: no
 * connection survives a restart to hold it.
 *
 * The record lives as long as its CLI record; the CLI record points to it and frees it
 * through sched_alloc_cli_gone. Loop thread only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "scheduler/sched_internal.h"

/* What one CLI connection holds: the allocation it asked for. */
struct sched_salloc {
    uint64_t job_id;     /* 0 until its job is stored */
    uint64_t request_id; /* the AllocRequest's, on every AllocReply */
    bool released;       /* AllocRelease came: ending it is the client's doing */
};

static struct sched_cli *holder_of(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_cli *c = s->clis; c != NULL; c = c->next) {
        if (c->salloc != NULL && c->salloc->job_id == job_id && !c->closed)
            return c;
    }
    return NULL;
}

static void send_event(struct sched_cli *c, const struct sched_job *job, Gs__AllocEvent event,
                       Gs__AllocReply *reply)
{
    Gs__Envelope env = GS__ENVELOPE__INIT;

    reply->job_id = job != NULL ? job->id : c->salloc->job_id;
    reply->event = event;
    if (job != NULL) {
        reply->state = sched_job_wire_state(job);
        reply->partition = job->spec->partition != NULL ? job->spec->partition : "";
    }
    env.request_id = c->salloc->request_id;
    env.body_case = GS__ENVELOPE__BODY_ALLOC_REPLY;
    env.alloc_reply = reply;
    (void)sched_cli_send(c, &env);
}

/* --- ending -------------------------------------------------------------------------------- */

static void describe_end(const struct sched_job *job, char *out, size_t size)
{
    if (job->state == SCHED_JOB_COMPLETED)
        snprintf(out, size, "the allocation's command exited 0");
    else if (job->state == SCHED_JOB_TIMEOUT)
        snprintf(out, size, "time limit reached");
    else if (job->state == SCHED_JOB_CANCELLED)
        snprintf(out, size, "%s", job->reason[0] ? job->reason : "cancelled");
    else if (job->signaled)
        snprintf(out, size, "the allocation's command was killed by signal %d", job->term_signal);
    else
        snprintf(out, size, "the allocation's command exited with code %d", job->exit_code);
}

/* A running allocation's stand-in task ended how; its steps end with it. */
static void end_running(struct sched_ctx *s, struct sched_job *job, enum sched_task_end how,
                        int32_t exit_code, int32_t term_signal, struct sched_change *ch)
{
    uint64_t now = gs_clock_wall_ms();
    char detail[200];

    /* Before the allocation goes back with the end: its nodes are whom to tell. */
    sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED,
                     "the allocation ended");
    if (!sched_job_task_ended(job, 0, how, exit_code, term_signal, now)) {
        sched_change_task(ch, job, 0); /* a lost node's failover decides (jobs.h) */
        return;
    }
    if (job->state == SCHED_JOB_NODE_FAIL)
        snprintf(detail, sizeof(detail), "%s", job->reason);
    else
        describe_end(job, detail, sizeof(detail));
    if (job->state != SCHED_JOB_CANCELLED)
        snprintf(job->reason, sizeof(job->reason), "%.159s", detail);
    sched_job_note(job, job->end_ms, job->state, detail);
    sched_change_job(ch, job);
    sched_change_task(ch, job, 0);
    sched_change_event(ch, job->end_ms, job->id, "", sched_job_state_name(job->state), detail);
    sched_telemetry_job_ended(s, job, ch);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " state=%s exit=%d allocation ended", job->id,
           sched_job_state_name(job->state), job->exit_code);
}

/*
 * Ends the allocation job: a pending one is cancelled with why, a running one's stand-in
 * task ends how (CANCELLED: why is the job's reason). Stored; then(s, status, arg) runs
 * once it is on disk (NULL: nothing to run).
 */
static void alloc_end(struct sched_ctx *s, struct sched_job *job, enum sched_task_end how,
                      int32_t exit_code, int32_t term_signal, const char *why, sched_change_fn then,
                      void *arg)
{
    struct sched_change *ch = sched_change_new(s);
    uint64_t now = gs_clock_wall_ms();

    if (how == SCHED_TASK_CANCELLED && why != NULL && !job->cancel_requested)
        snprintf(job->reason, sizeof(job->reason), "%s", why);
    if (job->state == SCHED_JOB_PENDING) {
        sched_job_cancel(job, now);
        sched_job_note(job, now, job->state, job->reason);
        sched_change_job(ch, job);
        sched_change_event(ch, now, job->id, "", "CANCELLED", job->reason);
    } else if (job->state == SCHED_JOB_RUNNING) {
        if (how == SCHED_TASK_CANCELLED)
            job->cancel_requested = true;
        end_running(s, job, how, exit_code, term_signal, ch);
    }
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
    sched_change_commit(s, ch, then, arg);
}

/* --- the client ---------------------------------------------------------------------------- */

void sched_alloc_request(struct sched_cli *c, uint64_t request_id, const Gs__AllocRequest *req)
{
    Gs__SubmitRequest sub = GS__SUBMIT_REQUEST__INIT;

    if (req->spec == NULL || req->spec->run == NULL) {
        sched_cli_error(c, request_id, -EINVAL, "allocation without a job spec", false);
        return;
    }
    if (req->spec->array != NULL && req->spec->array->n_task_ids > 0) {
        sched_cli_error(c, request_id, -EINVAL, "an allocation cannot be a job array", false);
        return;
    }
    c->salloc = calloc(1, sizeof(*c->salloc));
    if (c->salloc == NULL) {
        sched_cli_error(c, request_id, -ENOMEM, "out of memory", false);
        return;
    }
    c->salloc->request_id = request_id;
    sub.spec = req->spec;
    sched_submit(c, request_id, &sub); /* sets spec->allocation for c */
}

bool sched_alloc_submitted(struct sched_cli *c, uint64_t job_id)
{
    struct sched_job *job;
    Gs__AllocReply reply = GS__ALLOC_REPLY__INIT;

    if (c->salloc == NULL || job_id == 0)
        return false;
    c->salloc->job_id = job_id;
    job = sched_jobs_find(c->s->jobs, job_id);
    send_event(c, job, GS__ALLOC_EVENT__ALLOC_EVENT_PENDING, &reply);
    sched_cli_unhold(c);
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " uid=%u allocation pending", job_id, (unsigned)c->uid);
    return true;
}

/* The GRANTED reply's nodes and environment, borrowing from the job and e. */
static int grant_send(struct sched_cli *c, const struct sched_job *job)
{
    Gs__AllocReply reply = GS__ALLOC_REPLY__INIT;
    Gs__RunSpec no_run = GS__RUN_SPEC__INIT;
    struct sched_env e;
    Gs__AllocReply__EnvEntry *entries = NULL, **ptrs = NULL;
    char **nodes = calloc(job->alloc.nnodes + 1, sizeof(*nodes));
    int rc = sched_env_init(&e, &no_run, job->spec->nhet);

    if (rc == 0)
        rc = sched_slurm_job_env(c->s, job, &e);
    entries = calloc(e.n + 1, sizeof(*entries));
    ptrs = calloc(e.n + 1, sizeof(*ptrs));
    if (rc < 0 || nodes == NULL || entries == NULL || ptrs == NULL) {
        rc = rc < 0 ? rc : -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < e.n; i++) {
        gs__alloc_reply__env_entry__init(&entries[i]);
        entries[i].key = e.entries[i].key;
        entries[i].value = e.entries[i].value;
        ptrs[i] = &entries[i];
    }
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const char *name = sched_cluster_node_name(c->s->cluster, job->alloc.nodes[i].node);

        nodes[i] = (char *)(name != NULL ? name : "");
    }
    reply.n_nodes = job->alloc.nnodes;
    reply.nodes = nodes;
    reply.n_env = e.n;
    reply.env = ptrs;
    send_event(c, job, GS__ALLOC_EVENT__ALLOC_EVENT_GRANTED, &reply);
out:
    sched_env_release(&e);
    free(entries);
    free(ptrs);
    free(nodes);
    return rc;
}

void sched_alloc_started(struct sched_ctx *s, struct sched_job *job)
{
    struct sched_cli *c = holder_of(s, job->id);

    if (job->ntasks > 0)
        job->tasks[0].started = true; /* the client's command: it runs already */
    if (c == NULL) {
        alloc_end(s, job, SCHED_TASK_CANCELLED, 0, 0, "its salloc was gone when it started", NULL,
                  NULL);
        return;
    }
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " nodes=%u allocation granted", job->id, job->alloc.nnodes);
    if (grant_send(c, job) < 0) {
        GS_LOG(GS_LOG_ERROR, "job=%" PRIu64 " out of memory telling salloc: it ends", job->id);
        sched_cli_close(c); /* its close ends the job */
    }
}

struct release_op {
    struct sched_cli *cli;
    uint64_t job_id;
};

static void released_stored(struct sched_ctx *s, int status, void *arg)
{
    struct release_op *op = arg;
    struct sched_job *job = sched_jobs_find(s->jobs, op->job_id);
    Gs__AllocReply reply = GS__ALLOC_REPLY__INIT;

    if (status < 0)
        GS_LOG(GS_LOG_ERROR, "job=%" PRIu64 " error=\"%s\" allocation end not stored", op->job_id,
               gs_strerror(status));
    if (!op->cli->closed) {
        send_event(op->cli, job, GS__ALLOC_EVENT__ALLOC_EVENT_RELEASED, &reply);
        sched_cli_close(op->cli);
    }
    sched_cli_unhold(op->cli);
    free(op);
}

/* AllocRelease: the client's command ended with that status. */
static void release(struct sched_cli *c, const Gs__AllocRelease *rel)
{
    struct sched_ctx *s = c->s;
    struct sched_job *job = sched_jobs_find(s->jobs, c->salloc->job_id);
    struct release_op *op = calloc(1, sizeof(*op));

    c->salloc->released = true;
    if (op == NULL) {
        sched_cli_close(c); /* its close still ends the job, CANCELLED */
        c->salloc->released = false;
        return;
    }
    op->cli = c;
    op->job_id = c->salloc->job_id;
    sched_cli_hold(c);
    if (job == NULL || sched_job_finished(job)) { /* ended under it, said already */
        sched_change_commit(s, sched_change_new(s), released_stored, op);
        return;
    }
    GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " exit=%d signal=%u allocation released", job->id,
           rel->exit_code, rel->term_signal);
    alloc_end(s, job, SCHED_TASK_EXITED, rel->exit_code, (int32_t)rel->term_signal,
              "released by its salloc", released_stored, op);
}

void sched_alloc_cli_message(struct sched_cli *c, const Gs__Envelope *env)
{
    if (env->body_case == GS__ENVELOPE__BODY_ALLOC_RELEASE && c->salloc->job_id != 0 &&
        !c->salloc->released) {
        release(c, env->alloc_release);
        return;
    }
    GS_LOG(GS_LOG_DEBUG, "uid=%u body=%s ignored on an allocation's connection", (unsigned)c->uid,
           gs_proto_body_name(env->body_case));
}

void sched_alloc_cli_gone(struct sched_cli *c)
{
    struct sched_salloc *a = c->salloc;
    struct sched_job *job;

    if (a == NULL)
        return;
    c->salloc = NULL;
    job = a->job_id != 0 ? sched_jobs_find(c->s->jobs, a->job_id) : NULL;
    if (job != NULL && !a->released &&
        (job->state == SCHED_JOB_PENDING || job->state == SCHED_JOB_RUNNING)) {
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " its salloc went away: allocation cancelled", job->id);
        alloc_end(c->s, job, SCHED_TASK_CANCELLED, 0, 0, "its salloc went away", NULL, NULL);
    }
    free(a);
}

/* --- ends under the client ---------------------------------------------------------------- */

void sched_alloc_job_changed(struct sched_ctx *s, const struct sched_job *job)
{
    struct sched_cli *c;
    Gs__AllocReply reply = GS__ALLOC_REPLY__INIT;

    if (!job->spec->allocation || !sched_job_finished(job))
        return;
    c = holder_of(s, job->id);
    if (c == NULL || c->salloc->released)
        return;
    reply.reason = (char *)job->reason;
    send_event(c, job, GS__ALLOC_EVENT__ALLOC_EVENT_REVOKED, &reply);
    c->salloc->released = true; /* nothing left to end when it closes */
    sched_cli_close(c);
}

void sched_alloc_cancelled(struct sched_ctx *s, struct sched_job *job)
{
    if (job->spec->allocation && job->state == SCHED_JOB_RUNNING)
        alloc_end(s, job, SCHED_TASK_CANCELLED, 0, 0, NULL, NULL, NULL);
}

void sched_alloc_tick(struct sched_ctx *s)
{
    uint64_t now = gs_clock_wall_ms();
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = s->plan_from; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint64_t limit_s = job->spec->time_limit_s;

        if (!job->spec->allocation || job->state != SCHED_JOB_RUNNING || job->suspended)
            continue;
        /* Marked to end by preemption, the idle policy or a requeue, which wait for tasks
         * to end: an allocation has none, and is not requeued (Slurm requeues batch jobs
         * only). */
        if (job->cancel_requested || job->requeue_requested) {
            alloc_end(s, job, SCHED_TASK_CANCELLED, 0, 0, NULL, NULL, NULL);
            continue;
        }
        if (now < sched_job_limit_end_ms(job, now))
            continue;
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " limit_s=%" PRIu64 " allocation timed out", job->id,
               limit_s);
        alloc_end(s, job, SCHED_TASK_TIMEOUT, 0, 0, NULL, NULL, NULL);
    }
}

void sched_alloc_reload(struct sched_ctx *s)
{
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);

        if (!job->spec->allocation ||
            (job->state != SCHED_JOB_PENDING && job->state != SCHED_JOB_RUNNING))
            continue;
        GS_LOG(GS_LOG_INFO, "job=%" PRIu64 " allocation left by the last run: cancelled", job->id);
        alloc_end(s, job, SCHED_TASK_CANCELLED, 0, 0, "its salloc was gone when gschedd started",
                  NULL, NULL);
    }
}
