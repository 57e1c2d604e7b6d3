/*
 * sched_engine.c: gschedd's planning pass: the planner's decisions (planner.h, pure)
 * applied to the daemon. Jobs given a start are started (sched_launch.c stores each and
 * then tells its workers); the others keep the reasons the planner wrote.
 *
 * Every decision is made in memory on the loop thread, then written through the journal;
 * what other parties may act on (a submit's reply, a LaunchTasks, an exit's ack) goes out
 * only from the commit's continuation.
 *
 * Planning is event-driven: anything that can let a job start (submit, end, release, node
 * up) calls sched_engine_wake(), which arms an idle handle; the pass runs once after the
 * events of the current loop iteration, so a burst of a thousand submits costs one pass,
 * and a freed GPU never waits for a timer.
 */
#include <errno.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/planner.h"
#include "scheduler/sched_internal.h"

static int build_masks(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    return sched_node_masks_build(data, spec, m);
}

/*
 * A victim of a higher tier's job undergoes its QOS's preempt_mode (Slurm's PreemptMode;
 * "off" never reaches here, the planner offers no such victim). Requeue, as `scontrol
 * requeue` does: its tasks get SIGTERM, then SIGKILL after the kill grace (gsched-train
 * checkpoints on SIGTERM and exits 75), and it queues again once they have ended, when the
 * preemptor takes its place. Cancel, as `gsched cancel` does: the same signals, and it ends
 * CANCELLED instead. Either way its resources count as freed for the preemptor meanwhile.
 */
static void preempt(struct sched_ctx *s, const struct sched_preemption *p)
{
    struct sched_job *v = p->victim;
    uint64_t now = gs_clock_wall_ms();
    enum gs_preempt_mode mode = gs_config_qos_preempt_mode(s->cfg, v->spec->qos);
    struct sched_change *ch;
    char detail[160];

    if (v->state != SCHED_JOB_RUNNING || v->requeue_requested || v->cancel_requested ||
        mode == GS_PREEMPT_OFF)
        return;
    snprintf(detail, sizeof(detail), "preempted by job %llu (QOS %s)",
             (unsigned long long)p->by->id,
             p->by->spec->qos != NULL && p->by->spec->qos[0] != '\0' ? p->by->spec->qos
                                                                     : GS_CONFIG_DEFAULT_QOS);
    if (mode == GS_PREEMPT_CANCEL) {
        snprintf(v->reason, sizeof(v->reason), "%s", detail);
        /* A running job is only marked: it ends CANCELLED when its tasks have ended. */
        (void)sched_job_cancel(v, now);
    } else if (sched_job_requeue(v, false, detail) < 0) {
        return;
    }
    v->preempted_by = p->by->id;
    s->stats.preemptions++;
    s->stats.preempt_lost_s += p->cost;
    GS_LOG(GS_LOG_INFO, "job=%llu by=%llu lost_gpu_s=%.0f mode=%s job preempted",
           (unsigned long long)v->id, (unsigned long long)p->by->id, p->cost,
           gs_preempt_mode_name(mode));
    sched_job_note(v, now, v->state, detail);
    sched_signal_job(s, v, UINT32_MAX, 0, GS__END_REASON__END_REASON_CANCELLED, detail);
    ch = sched_change_new(s);
    sched_change_job(ch, v);
    sched_change_event(ch, now, v->id, "", "RUNNING", detail);
    sched_change_commit(s, ch, NULL, NULL);
    sched_query_job_changed(s, v);
}

/*
 * A pending job the pass gave up on is cancelled with why as its reason: one that can no
 * longer end by its deadline (sbatch --deadline), or whose dependencies can never be met
 * (kill_invalid_depend). Returns whether it was.
 */
static bool cancel_pending(struct sched_ctx *s, struct sched_job *job, const char *why)
{
    uint64_t now = gs_clock_wall_ms();
    struct sched_change *ch;

    snprintf(job->reason, sizeof(job->reason), "%s", why);
    if (!sched_job_cancel(job, now))
        return false;
    sched_job_note(job, now, job->state, why);
    ch = sched_change_new(s);
    sched_change_job(ch, job);
    sched_change_event(ch, now, job->id, "", "CANCELLED", why);
    sched_change_commit(s, ch, NULL, NULL);
    sched_query_job_changed(s, job);
    sched_engine_wake(s); /* its dependents may now be decided */
    return true;
}

/* What the planner asks of the daemon; reservations borrowed until the next change. */
static int planner_hooks(struct sched_ctx *s, struct sched_planner_hooks *hooks)
{
    *hooks = (struct sched_planner_hooks){.masks = build_masks,
                                          .priority = sched_policy_priority,
                                          .data = s,
                                          .cfg = s->cfg,
                                          .backfill_depth = s->cfg->backfill_depth};
    return sched_resv_view(s, &hooks->resv, &hooks->nresv);
}

int sched_engine_will_run(struct sched_ctx *s, struct sched_job *draft, struct sched_will_run *w)
{
    struct sched_planner_hooks hooks;
    int rc = planner_hooks(s, &hooks);

    if (rc == 0) {
        sched_data_view_begin(s);
        rc = sched_planner_will_run(s->jobs, s->plan_from, s->cluster, &hooks, gs_clock_wall_ms(),
                                    draft, w);
        sched_data_view_end(s);
    }
    return rc;
}

static void plan_pass(struct sched_ctx *s)
{
    struct sched_planner_hooks hooks;
    struct sched_plan_out out;
    bool started = false;
    int rc;

    sched_policy_before_pass(s);
    if (planner_hooks(s, &hooks) < 0) {
        GS_LOG(GS_LOG_ERROR, "planning pass out of memory; retried on the next event");
        return;
    }
    sched_data_view_begin(s);
    rc = sched_planner_pass(s->jobs, &s->plan_from, s->cluster, &hooks, gs_clock_wall_ms(), &out);
    sched_data_view_end(s); /* the pass's masks, which borrowed the views, are gone */
    if (rc < 0) {
        GS_LOG(GS_LOG_ERROR, "planning pass out of memory; retried on the next event");
        return;
    }
    s->timed_deps = out.timed_deps;
    s->stats.plan_last_queue = (uint32_t)out.n;
    s->resv_wake_ms = out.wake_ms;
    for (size_t i = 0; i < out.n; i++) {
        if (out.verdicts[i].start) {
            sched_launch_start(s, out.jobs[i], &out.verdicts[i].alloc, out.verdicts[i].backfilled);
            started = true;
        }
    }
    if (started)
        sched_resv_jobs_started(s); /* Flags=REPLACE pools refilled at once */
    for (size_t i = 0; i < out.npreempt; i++)
        preempt(s, &out.preempt[i]);
    for (size_t i = 0; i < out.nexpired; i++) {
        struct sched_job *job = out.expired[i];

        if (cancel_pending(s, job, "DeadLine: it could not end before its deadline"))
            GS_LOG(GS_LOG_INFO, "job=%llu deadline_ms=%llu job past its deadline, cancelled",
                   (unsigned long long)job->id, (unsigned long long)job->spec->deadline_ms);
    }
    for (size_t i = 0; i < out.ninvalid_dep; i++) {
        struct sched_job *job = out.invalid_dep[i];
        uint64_t blocker = 0;

        sched_job_deps(s->jobs, job, &blocker);
        if (cancel_pending(s, job, "DependencyNeverSatisfied"))
            GS_LOG(GS_LOG_INFO,
                   "job=%llu dependency=%llu job dependency never satisfied, "
                   "cancelled",
                   (unsigned long long)job->id, (unsigned long long)blocker);
    }
    sched_plan_out_release(&out);
}

/*
 * A pass looks at every pending job, and events come faster than passes when the queue is
 * long: thousands of jobs pending and short ones ending, a pass after each loop iteration
 * was 70 % of gschedd's CPU (bench/RESULTS.md). So after a pass that took d, the next one
 * waits until PLAN_SPACING * d has passed: planning takes at most a quarter of the loop's
 * time, and what happened meanwhile is planned in one pass. A spacing under a millisecond
 * (a pass under a third of one) is not waited for by a timer: the next pass runs at the end
 * of the next loop iteration, as every pass did before.
 */
#define PLAN_SPACING 3

static void run_pass(struct sched_ctx *s)
{
    uint64_t start = gs_clock_mono_ns(), end;

    s->plan_wanted = false;
    if (s->stopping)
        return;
    sched_stats_time_pass(s, plan_pass);
    end = gs_clock_mono_ns();
    s->plan_next_ns = end + PLAN_SPACING * (end - start);
}

static void on_plan_idle(uv_idle_t *idle)
{
    uv_idle_stop(idle);
    run_pass(idle->data);
}

static void on_plan_timer(uv_timer_t *timer)
{
    run_pass(timer->data);
}

void sched_engine_wake(struct sched_ctx *s)
{
    uint64_t now;

    if (s->plan_wanted || s->stopping)
        return;
    s->plan_wanted = true;
    now = gs_clock_mono_ns();
    /* libuv's timers count whole milliseconds: a shorter wait is the next iteration's */
    if (s->plan_next_ns > now + 1000000)
        uv_timer_start(&s->plan_timer, on_plan_timer, (s->plan_next_ns - now + 999999) / 1000000,
                       0);
    else
        uv_idle_start(&s->plan_idle, on_plan_idle);
}
