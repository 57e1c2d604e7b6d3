/*
 * sched_diag.c: sdiag in gschedd, Slurm's scheduler diagnostics: jobs submitted, started
 * and ended (completed, cancelled, failed) since gschedd started, the planning passes'
 * times and the queue the last one looked at, backfilled starts and preemptions. The counters
 * are /metrics' (s->stats, never reset: Prometheus wants them monotonic); root's reset keeps
 * a copy of them (diag_base) and sdiag shows the difference. Ends are counted as they are
 * announced (sched_query_job_changed), each attempt's last state once.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/sched_internal.h"

void sched_diag_job_changed(struct sched_ctx *s, const struct sched_job *job,
                            enum sched_job_state before)
{
    bool was_over = sched_job_finished_state(before);

    if (!sched_job_finished(job) || was_over)
        return;
    if (job->state == SCHED_JOB_COMPLETED)
        s->stats.jobs_completed++;
    else if (job->state == SCHED_JOB_CANCELLED)
        s->stats.jobs_cancelled++;
    else
        s->stats.jobs_failed++;
}

void sched_query_diag(struct sched_cli *c, uint64_t request_id, const Gs__DiagRequest *req)
{
    struct sched_ctx *s = c->s;
    const struct sched_stats *now = &s->stats, *base = &s->diag_base;
    Gs__DiagReply reply = GS__DIAG_REPLY__INIT;
    Gs__Envelope env = GS__ENVELOPE__INIT;
    size_t n = sched_jobs_count(s->jobs);

    if (req->reset && c->uid != 0) {
        sched_cli_error(c, request_id, -EPERM, "only root may reset the counters", false);
        return;
    }
    if (req->reset) {
        s->diag_base = s->stats;
        s->stats.plan_ns_max = 0;
        s->diag_since_ms = gs_clock_wall_ms();
        GS_LOG(GS_LOG_INFO, "uid=%u sdiag counters reset", (unsigned)c->uid);
    }
    reply.now_ms = gs_clock_wall_ms();
    reply.since_ms = s->diag_since_ms;
    reply.jobs_submitted = now->jobs_submitted - base->jobs_submitted;
    reply.jobs_started = now->jobs_started - base->jobs_started;
    reply.jobs_completed = now->jobs_completed - base->jobs_completed;
    reply.jobs_cancelled = now->jobs_cancelled - base->jobs_cancelled;
    reply.jobs_failed = now->jobs_failed - base->jobs_failed;
    reply.jobs_backfilled = now->jobs_backfilled - base->jobs_backfilled;
    reply.preemptions = now->preemptions - base->preemptions;
    reply.plan_passes = now->plan_passes - base->plan_passes;
    reply.plan_sum_us = (now->plan_ns_sum - base->plan_ns_sum) / 1000;
    reply.plan_last_us = now->plan_ns_last / 1000;
    reply.plan_max_us = now->plan_ns_max / 1000;
    reply.plan_last_queue = now->plan_last_queue;
    for (size_t i = s->plan_from; i < n; i++) {
        const struct sched_job *job = sched_jobs_at(s->jobs, i);

        reply.jobs_pending += job->state == SCHED_JOB_PENDING;
        reply.jobs_running += job->state == SCHED_JOB_RUNNING;
    }
    reply.nodes = (uint32_t)sched_cluster_nnodes(s->cluster);
    for (const struct sched_cli *o = s->clis; o != NULL; o = o->next)
        reply.cli_connections++;
    env.request_id = request_id;
    env.body_case = GS__ENVELOPE__BODY_DIAG_REPLY;
    env.diag_reply = &reply;
    sched_cli_reply(c, &env, false);
}
