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

#include "common/clock.h"
#include "common/log.h"
#include "scheduler/planner.h"
#include "scheduler/sched_internal.h"

static int build_masks(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    return sched_node_masks_build(data, spec, m);
}

static void plan_pass(struct sched_ctx *s)
{
    struct sched_planner_hooks hooks = {build_masks, sched_policy_priority, s};
    struct sched_plan_out out;

    sched_policy_before_pass(s);
    if (sched_planner_pass(s->jobs, &s->plan_from, s->cluster, &hooks, gs_clock_wall_ms(), &out) <
        0) {
        GS_LOG(GS_LOG_ERROR, "planning pass out of memory; retried on the next event");
        return;
    }
    s->timed_deps = out.timed_deps;
    for (size_t i = 0; i < out.n; i++) {
        if (out.verdicts[i].start)
            sched_launch_start(s, out.jobs[i], &out.verdicts[i].alloc, out.verdicts[i].backfilled);
    }
    sched_plan_out_release(&out);
}

static void on_plan_idle(uv_idle_t *idle)
{
    struct sched_ctx *s = idle->data;

    uv_idle_stop(idle);
    s->plan_wanted = false;
    if (!s->stopping)
        sched_stats_time_pass(s, plan_pass);
}

void sched_engine_wake(struct sched_ctx *s)
{
    if (s->plan_wanted || s->stopping)
        return;
    s->plan_wanted = true;
    uv_idle_start(&s->plan_idle, on_plan_idle);
}
