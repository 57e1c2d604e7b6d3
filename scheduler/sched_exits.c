/*
 * sched_exits.c: a task's exit, reported by its worker. The exit is applied to the job
 * (jobs.c decides the outcome), stored, and only then acknowledged, so a worker forgets an
 * exit only once its effect is on disk. A failing rank ends its job's other ranks (as
 * torchrun does); a job whose last task ended is COMPLETED, FAILED, ... or queued again
 * when a requeue was asked for, and the planner is woken.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

enum sched_task_end sched_task_end_of(Gs__EndReason r)
{
    switch (r) {
    case GS__END_REASON__END_REASON_NONE:
        return SCHED_TASK_EXITED;
    case GS__END_REASON__END_REASON_TIMEOUT:
        return SCHED_TASK_TIMEOUT;
    case GS__END_REASON__END_REASON_LAUNCH_FAILED:
        return SCHED_TASK_LAUNCH_FAILED;
    case GS__END_REASON__END_REASON_OOM:
        return SCHED_TASK_OOM;
    default:
        return SCHED_TASK_CANCELLED;
    }
}

/* An exit to acknowledge once stored. Registry nodes live as long as gschedd. */
struct ack_op {
    struct sched_node *node;
    Gs__TaskRef ref;
};

void sched_task_ref_of(const Gs__TaskExit *ex, Gs__TaskRef *ref)
{
    gs__task_ref__init(ref);
    ref->job_id = ex->job_id;
    ref->rank = ex->rank;
    ref->attempt = ex->attempt;
    ref->step = ex->step;
}

/* Through the node's current connection, which may not be the one the exit came on. */
void sched_send_exit_ack(struct sched_node *n, Gs__TaskRef *ref)
{
    Gs__TaskRef *ptrs[1] = {ref};
    Gs__TaskExitAck ack = GS__TASK_EXIT_ACK__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;

    ack.n_tasks = 1;
    ack.tasks = ptrs;
    env.body_case = GS__ENVELOPE__BODY_TASK_EXIT_ACK;
    env.task_exit_ack = &ack;
    sched_node_send(n, &env);
}

static void exit_stored(struct sched_ctx *s, int status, void *arg)
{
    struct ack_op *op = arg;

    /* Not stored: no ack, so the worker reports it again when it reconnects. */
    if (op != NULL && status == 0 && !s->stopping)
        sched_send_exit_ack(op->node, &op->ref);
    free(op);
}

static struct ack_op *ack_op_new(struct sched_node *n, const Gs__TaskExit *ex)
{
    struct ack_op *op = calloc(1, sizeof(*op));

    if (op == NULL)
        return NULL;
    op->node = n;
    sched_task_ref_of(ex, &op->ref);
    return op;
}

static void describe_end(const struct sched_job *job, const Gs__TaskExit *ex, char *out,
                         size_t size)
{
    if (job->state == SCHED_JOB_COMPLETED)
        snprintf(out, size, "all %u tasks exited 0", job->ntasks);
    else if (job->state == SCHED_JOB_TIMEOUT)
        snprintf(out, size, "time limit reached");
    else if (job->state == SCHED_JOB_CANCELLED)
        snprintf(out, size, "%s", job->reason[0] ? job->reason : "cancelled");
    else if (job->state == SCHED_JOB_OUT_OF_MEMORY)
        snprintf(out, size,
                 "out of memory on %s: the kernel killed processes of rank %u's node over the "
                 "job's mem_per_node",
                 ex->node_name, ex->rank);
    else if (ex->end_reason == GS__END_REASON__END_REASON_LAUNCH_FAILED)
        snprintf(out, size, "rank %u could not start on %s: %s", ex->rank, ex->node_name,
                 ex->launch_error);
    else if (job->signaled)
        snprintf(out, size, "a task was killed by signal %d", job->term_signal);
    else
        snprintf(out, size, "a task exited with code %d", job->exit_code);
}

void sched_exit_task(struct sched_ctx *s, struct sched_node *n, const Gs__TaskExit *ex)
{
    struct sched_job *job = sched_jobs_find(s->jobs, ex->job_id);
    uint64_t now = gs_clock_wall_ms();
    enum sched_task_end how = sched_task_end_of(ex->end_reason);
    struct sched_step_acct *batch = NULL;
    bool failed_before, last;
    struct sched_task *t;
    struct sched_change *ch;
    char detail[400];

    /* Steps (srun) are sched_steps.c's; one that reaches here has no srun left to tell. */
    if (ex->step != 0 || job == NULL || job->state != SCHED_JOB_RUNNING ||
        ex->attempt != job->attempt || ex->rank >= job->ntasks || job->tasks[ex->rank].ended ||
        job->alloc.nodes[job->tasks[ex->rank].node].node != n->index) {
        /* Of an attempt that is over, or reported twice: nothing changes, so no wait. */
        Gs__TaskRef ref;

        sched_task_ref_of(ex, &ref);
        sched_send_exit_ack(n, &ref);
        return;
    }
    t = &job->tasks[ex->rank];
    t->start_ms = ex->start_time_ms;
    /* An sbatch job's one task is its batch shell: sacct's JOB.batch row ends with it. */
    if (job->spec->batch && (batch = sched_step_acct_find(job, SCHED_STEP_BATCH)) != NULL)
        sched_step_acct_exit(batch, ex->rank, n->name, how, ex->exit_code, (int32_t)ex->term_signal,
                             ex->max_rss_kib, ex->cpu_time_ms,
                             ex->end_time_ms ? ex->end_time_ms : now);
    if (how == SCHED_TASK_LAUNCH_FAILED && ex->launch_error != NULL)
        t->launch_error = strdup(ex->launch_error);
    failed_before = job->any_failed;
    last = sched_job_task_ended(job, ex->rank, how, ex->exit_code, (int32_t)ex->term_signal,
                                ex->end_time_ms ? ex->end_time_ms : now);
    GS_LOG(GS_LOG_INFO, "job=%llu rank=%u node=%s exit=%d signal=%u end_reason=%d task ended",
           (unsigned long long)job->id, ex->rank, n->name, ex->exit_code, ex->term_signal,
           (int)ex->end_reason);
    ch = sched_change_new(s);
    sched_change_task(ch, job, ex->rank);
    if (batch != NULL)
        sched_change_step(ch, job->id, batch);
    if (!last && job->any_failed && !failed_before) {
        /* One rank failing leaves the others waiting on it forever (a collective that never
         * completes): end them, as torchrun does. */
        snprintf(detail, sizeof(detail), "rank %u failed", ex->rank);
        sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
    }
    if (last && job->state == SCHED_JOB_PENDING) { /* scontrol requeue */
        sched_job_note(job, now, SCHED_JOB_PENDING, job->reason);
        sched_change_job(ch, job);
        sched_change_event(ch, now, job->id, n->name, "REQUEUED", job->reason);
        GS_LOG(GS_LOG_INFO, "job=%llu restarts=%u job requeued", (unsigned long long)job->id,
               job->restarts);
        sched_query_job_changed(s, job);
        sched_engine_wake(s);
    } else if (last) {
        if (gs_jobspec_runs_leader(job->spec)) /* its steps end with it, as in Slurm */
            sched_signal_job(s, job, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED,
                             "the batch step ended");
        if (job->state == SCHED_JOB_NODE_FAIL) /* a lost node's, said when it was lost */
            snprintf(detail, sizeof(detail), "%s", job->reason);
        else
            describe_end(job, ex, detail, sizeof(detail));
        if (job->state != SCHED_JOB_CANCELLED)
            snprintf(job->reason, sizeof(job->reason), "%.159s", detail);
        sched_job_note(job, job->end_ms, job->state, detail);
        sched_change_job(ch, job);
        sched_change_event(ch, job->end_ms, job->id, n->name, sched_job_state_name(job->state),
                           detail);
        sched_telemetry_job_ended(s, job, ch);
        GS_LOG(GS_LOG_INFO, "job=%llu state=%s exit=%d job ended", (unsigned long long)job->id,
               sched_job_state_name(job->state), job->exit_code);
        sched_query_job_changed(s, job);
        sched_engine_wake(s);
    }
    sched_change_commit(s, ch, exit_stored, ack_op_new(n, ex));
}
