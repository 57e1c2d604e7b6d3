/*
 * sched_failover.c: nodes that go away and come back. A node that misses its heartbeats is
 * DOWN: its srun steps end at once, but its jobs move (requeue, or NODE_FAIL without
 * restarts left) only after the fence timeout, when its worker has killed its own tasks.
 * A registering worker is reconciled: the tasks it runs that gschedd assigned it are
 * adopted, the others killed, its unacknowledged exits applied, and tasks it should run
 * but does not are lost with their job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

static bool job_uses(const struct sched_job *job, uint32_t node_index, uint32_t *ret_at)
{
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        if (job->alloc.nodes[i].node == node_index) {
            if (ret_at != NULL)
                *ret_at = i;
            return true;
        }
    }
    return false;
}

/* Whether a node of the job's allocation is down with its failover still to come. */
static bool uses_pending_node(struct sched_ctx *s, const struct sched_job *job)
{
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const struct sched_node *n = sched_node_at(s, job->alloc.nodes[i].node);

        if (n != NULL && !n->up && n->failover_due_mono != 0)
            return true;
    }
    return false;
}

/* Whether a lost node (alloc index at) leaves job running: sbatch --no-kill, a batch job
 * (its tasks are srun steps there, ended with the node) whose first node, the batch shell's,
 * is not the one. */
static bool runs_on(const struct sched_job *job, uint32_t at)
{
    return job->spec->no_kill && gs_jobspec_runs_leader(job->spec) && at != 0 &&
           at < SCHED_MAX_JOB_NODES;
}

/* --no-kill: the node is the job's no more; noted in its history, stored. */
static void run_on(struct sched_ctx *s, struct sched_job *job, uint32_t at, const char *why)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;
    char detail[320];

    if (sched_job_nokill_lost(job, at))
        return;
    job->nokill_lost[at / 64] |= UINT64_C(1) << (at % 64);
    snprintf(detail, sizeof(detail), "%s; the job runs on without it (--no-kill)", why);
    sched_job_note(job, now, job->state, detail);
    GS_LOG(GS_LOG_WARN, "job=%llu reason=\"%s\" job lost a node and runs on (--no-kill)",
           (unsigned long long)job->id, why);
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(job->state), detail);
    sched_change_commit(s, ch, NULL, NULL);
    sched_query_job_changed(s, job);
}

/* The job lost node (an alloc index): its other tasks are ended, and once none runs it is
 * requeued (charged a restart when charge) or ends NODE_FAIL. Until then it stays RUNNING,
 * so that its next attempt never starts beside a task of this one still in its kill grace
 * or cut off on another node (sched_job_tasks_lost). */
static void fail_over(struct sched_ctx *s, struct sched_job *job, uint32_t at, const char *why,
                      bool charge)
{
    uint64_t now = gs_clock_wall_ms();
    enum sched_job_state st;
    struct sched_change *ch;
    char detail[320];

    if (charge && runs_on(job, at)) {
        run_on(s, job, at, why);
        return;
    }
    sched_signal_job(s, job, at, 0, GS__END_REASON__END_REASON_REQUEUED, why);
    st = sched_job_tasks_lost(job, at, charge ? SCHED_LOST_NODE_FAIL : SCHED_LOST_UNSTARTED,
                              charge ? why : "Requeued: its launch was lost", now);
    job->node_fail_pending = st == SCHED_JOB_RUNNING && uses_pending_node(s, job);
    if (st == SCHED_JOB_RUNNING) {
        GS_LOG(GS_LOG_WARN,
               "job=%llu reason=\"%s\" job lost a node; its other tasks end before it moves",
               (unsigned long long)job->id, why);
        ch = sched_change_new(s);
        sched_change_job(ch, job);
        sched_change_commit(s, ch, NULL, NULL);
        sched_query_job_changed(s, job);
        return;
    }
    if (st == SCHED_JOB_PENDING)
        st = SCHED_JOB_REQUEUED; /* uncharged: its launch was lost */
    snprintf(detail, sizeof(detail), "%s", why);
    sched_job_note(job, now, st, detail);
    GS_LOG(GS_LOG_WARN, "job=%llu state=%s reason=\"%s\" job lost a node",
           (unsigned long long)job->id, sched_job_state_name(st), why);
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_clear_tasks(ch, job->id);
    sched_change_event(ch, now, job->id, "", sched_job_state_name(st), detail);
    sched_change_commit(s, ch, NULL, NULL);
    sched_query_job_changed(s, job);
    sched_engine_wake(s);
}

void sched_failover_node_down(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);

    sched_steps_node_gone(s, n);
    if (sched_fence_ms(s) == 0) {
        sched_failover_node_lost(s, n); /* no fencing: its jobs move now */
        return;
    }
    n->failover_due_mono = n->last_heartbeat_mono + sched_fence_ms(s) + s->heartbeat_ms;
    /* Until then its jobs' other tasks may fail for want of it (an MPI rank whose peer is
     * gone): that is the node failure's, not the job's own end. */
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;

        if (job->state == SCHED_JOB_RUNNING && job_uses(job, n->index, &at) && !runs_on(job, at))
            job->node_fail_pending = true;
    }
    {
        struct sched_change *ch = sched_change_new(s);

        sched_change_node(ch, n);
        sched_change_commit(s, ch, NULL, NULL);
    }
}

void sched_failover_node_lost(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);
    char why[200];

    n->failover_due_mono = 0;
    snprintf(why, sizeof(why), "node %s: %s", n->name, n->reason);
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;

        if (job->state == SCHED_JOB_RUNNING && job_uses(job, n->index, &at))
            fail_over(s, job, at, why, true);
    }
    {
        struct sched_change *ch = sched_change_new(s);

        sched_change_node(ch, n);
        sched_change_commit(s, ch, NULL, NULL);
    }
}

/* n registered again before its failover: its jobs are no longer waiting on it, and one
 * whose tasks all ended meanwhile, failing for want of it, fails over now. */
static void node_back(struct sched_ctx *s, struct sched_node *n)
{
    size_t count = sched_jobs_count(s->jobs);
    char why[200];

    snprintf(why, sizeof(why), "node %s was lost while the job ran", n->name);
    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;

        if (job->state != SCHED_JOB_RUNNING || !job->node_fail_pending ||
            !job_uses(job, n->index, &at))
            continue;
        job->node_fail_pending = uses_pending_node(s, job);
        if (!job->node_fail_pending && job->tasks_ended == job->ntasks)
            fail_over(s, job, at, why, true);
    }
}

static const Gs__TaskRef *find_running(const Gs__NodeRegister *reg, uint64_t job_id, uint32_t rank,
                                       uint32_t attempt)
{
    for (size_t i = 0; i < reg->n_running; i++) {
        const Gs__TaskRef *r = reg->running[i];
        if (r->job_id == job_id && r->rank == rank && r->attempt == attempt && r->step == 0)
            return r;
    }
    return NULL;
}

static bool has_exit(const Gs__NodeRegister *reg, uint64_t job_id, uint32_t rank, uint32_t attempt)
{
    for (size_t i = 0; i < reg->n_unacked_exits; i++) {
        const Gs__TaskExit *e = reg->unacked_exits[i];
        if (e->job_id == job_id && e->rank == rank && e->attempt == attempt && e->step == 0)
            return true;
    }
    return false;
}

/* Whether the running task r is one the scheduler assigned to node n. */
static bool assigned_here(struct sched_ctx *s, const struct sched_node *n, const Gs__TaskRef *r)
{
    const struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);

    return job != NULL && r->step == 0 && job->state == SCHED_JOB_RUNNING &&
           job->attempt == r->attempt && r->rank < job->ntasks && !job->tasks[r->rank].ended &&
           job->alloc.nodes[job->tasks[r->rank].node].node == n->index;
}

/* Tasks assigned to n that its worker neither runs nor reported: the job lost them. */
static void check_missing(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg)
{
    size_t count = sched_jobs_count(s->jobs);

    for (size_t i = 0; i < count; i++) {
        struct sched_job *job = sched_jobs_at(s->jobs, i);
        uint32_t at;
        char why[200];

        /* An allocation's task is salloc's command, which no worker runs. */
        if (job->state != SCHED_JOB_RUNNING || job->spec->allocation ||
            !job_uses(job, n->index, &at))
            continue;
        for (uint32_t r = 0; r < job->ntasks; r++) {
            const struct sched_task *t = &job->tasks[r];

            if (t->node != at || t->ended || find_running(reg, job->id, r, job->attempt) ||
                has_exit(reg, job->id, r, job->attempt))
                continue;
            /* A worker that started after the job did lost the tasks with its restart; one
             * that was up all along never got the launch. */
            if (reg->worker_start_ms > job->start_ms) {
                snprintf(why, sizeof(why), "node %s: its worker restarted", n->name);
                fail_over(s, job, at, why, true);
            } else {
                snprintf(why, sizeof(why), "node %s never received the launch", n->name);
                fail_over(s, job, at, why, false);
            }
            break;
        }
    }
}

int sched_failover_reconcile(struct sched_ctx *s, struct sched_node *n, const Gs__NodeRegister *reg,
                             Gs__TaskRef ***ret_kill, size_t *ret_nkill)
{
    Gs__TaskRef **kill = calloc(reg->n_running + 1, sizeof(*kill));
    size_t nkill = 0;

    if (kill == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < reg->n_running; i++) {
        const Gs__TaskRef *r = reg->running[i];

        if (assigned_here(s, n, r)) {
            struct sched_job *job = sched_jobs_find(s->jobs, r->job_id);
            job->tasks[r->rank].pid = r->pid;
            job->tasks[r->rank].started = true;
        } else if (r->step != 0 && sched_steps_known(s, r->job_id, r->step)) {
            /* a step whose srun still streams: the worker only reconnected */
        } else {
            kill[nkill++] = reg->running[i];
        }
    }
    for (size_t i = 0; i < reg->n_unacked_exits; i++) {
        if (reg->unacked_exits[i]->step != 0) /* a step's, maybe one kept over a restart */
            sched_steps_task_exit(s, n, reg->unacked_exits[i]);
        else
            sched_exit_task(s, n, reg->unacked_exits[i]);
    }
    sched_steps_reconcile(s, n, reg);
    check_missing(s, n, reg);
    node_back(s, n);
    *ret_kill = kill;
    *ret_nkill = nkill;
    return 0;
}
