/*
 * test_jobs.c: the job table keeps jobs in id order; jobs end in the state their tasks
 * earned (with the first failing task's exit code); node failures requeue until the
 * restarts run out; dependencies and holds give squeue's pending reasons.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/jobs.h"

static struct sched_jobs *jobs;
static struct sched_alloc one_node;

static void setup(void)
{
    jobs = sched_jobs_new(NULL);
    cr_assert_not_null(jobs);
    sched_alloc_init(&one_node);
    cr_assert_eq(sched_alloc_copy(&one_node, &(struct sched_alloc){.nnodes = 0}), 0);
}

static void teardown(void)
{
    sched_alloc_release(&one_node);
    sched_jobs_free(jobs);
}

TestSuite(jobs, .init = setup, .fini = teardown);

static struct sched_job *add(uint64_t id, uint32_t max_restarts)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->max_restarts = max_restarts;
    job = sched_jobs_add(jobs, id, spec, 1000 + id);
    cr_assert_not_null(job);
    return job;
}

static struct sched_job *add_dep(uint64_t id, enum gs_dep_type type, uint64_t on)
{
    struct sched_job *job = add(id, 0);

    job->spec->deps = calloc(1, sizeof(*job->spec->deps));
    job->spec->deps[0] = (struct gs_dep){.type = type, .job_id = on};
    job->spec->ndeps = 1;
    return job;
}

static struct sched_job *running(uint64_t id, uint32_t ntasks)
{
    struct sched_job *job = add(id, 0);

    cr_assert_eq(sched_job_start(job, &one_node, ntasks, 5000), 0);
    cr_assert_eq(job->state, SCHED_JOB_RUNNING);
    return job;
}

Test(jobs, table_keeps_id_order_and_refuses_duplicates)
{
    add(5, 0);
    add(2, 0);
    add(9, 0);
    cr_assert_eq(sched_jobs_count(jobs), 3);
    cr_assert_eq(sched_jobs_at(jobs, 0)->id, 2);
    cr_assert_eq(sched_jobs_at(jobs, 2)->id, 9);
    cr_assert_eq(sched_jobs_find(jobs, 5)->id, 5);
    cr_assert_null(sched_jobs_find(jobs, 4));
    cr_assert_null(sched_jobs_add(jobs, 5, gs_jobspec_new(), 0), "duplicate id");
    cr_assert_eq(sched_jobs_count(jobs), 3);
}

Test(jobs, all_tasks_zero_is_completed)
{
    struct sched_job *job = running(1, 2);

    cr_assert_not(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6000));
    cr_assert_not(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6500), "reported twice");
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, 0, 7000));
    cr_assert_eq(job->state, SCHED_JOB_COMPLETED);
    cr_assert_eq(job->exit_code, 0);
    cr_assert_eq(job->end_ms, 7000);
    cr_assert_eq(job->attempt, 1);
    cr_assert_not(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, 0, 8000), "already over");
}

/* The others of a failed job are ended by gsched (CANCELLED): the job still FAILED. */
Test(jobs, first_failing_task_gives_the_exit_code)
{
    struct sched_job *job = running(1, 3);

    sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6000);
    sched_job_task_ended(job, 2, SCHED_TASK_EXITED, 0, SIGSEGV, 6001);
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_CANCELLED, 3, 0, 6002));
    cr_assert_eq(job->state, SCHED_JOB_FAILED);
    cr_assert(job->signaled);
    cr_assert_eq(job->exit_code, 128 + SIGSEGV);
}

Test(jobs, launch_failure_fails_the_job)
{
    struct sched_job *job = running(1, 1);

    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_LAUNCH_FAILED, 0, 0, 6000));
    cr_assert_eq(job->state, SCHED_JOB_FAILED);
    cr_assert_eq(job->exit_code, 127);
}

Test(jobs, time_limit_and_cancel_win_over_exit_codes)
{
    struct sched_job *t = running(1, 2), *c = running(2, 1), *p = add(3, 0);

    sched_job_task_ended(t, 1, SCHED_TASK_TIMEOUT, 0, SIGTERM, 6000);
    cr_assert(sched_job_task_ended(t, 0, SCHED_TASK_EXITED, 1, 0, 6001));
    cr_assert_eq(t->state, SCHED_JOB_TIMEOUT);
    cr_assert_not(sched_job_cancel(c, 6000), "a running job ends when its tasks do");
    cr_assert(sched_job_task_ended(c, 0, SCHED_TASK_EXITED, 0, SIGTERM, 6100));
    cr_assert_eq(c->state, SCHED_JOB_CANCELLED);
    cr_assert(sched_job_cancel(p, 6200), "a pending job ends at once");
    cr_assert_eq(p->state, SCHED_JOB_CANCELLED);
    cr_assert(sched_job_finished(p));
}

Test(jobs, node_failure_requeues_until_restarts_run_out)
{
    struct sched_job *job = add(1, 1);

    cr_assert_eq(sched_job_start(job, &one_node, 1, 5000), 0);
    cr_assert_eq(sched_job_node_failed(job, 6000), SCHED_JOB_REQUEUED);
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_eq(job->restarts, 1);
    cr_assert_not_null(strstr(job->reason, "Requeued"));
    cr_assert_eq(sched_job_start(job, &one_node, 1, 7000), 0);
    cr_assert_eq(job->attempt, 2);
    cr_assert_eq(sched_job_node_failed(job, 8000), SCHED_JOB_NODE_FAIL);
    cr_assert_eq(job->state, SCHED_JOB_NODE_FAIL);
    cr_assert(sched_job_finished(job));
}

Test(jobs, dependencies_follow_slurm_semantics)
{
    struct sched_job *a = running(1, 1), *ok = add_dep(2, GS_DEP_AFTEROK, 1);
    struct sched_job *notok = add_dep(3, GS_DEP_AFTERNOTOK, 1);
    struct sched_job *any = add_dep(4, GS_DEP_AFTERANY, 1);
    struct sched_job *after = add_dep(5, GS_DEP_AFTER, 1);
    struct sched_job *ghost = add_dep(6, GS_DEP_AFTEROK, 99);
    uint64_t blocker = 0;

    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_MET, "job 1 has started");
    cr_assert_eq(sched_job_deps(jobs, ok, &blocker), SCHED_DEP_WAIT);
    cr_assert_eq(blocker, 1);
    cr_assert_str_eq(sched_job_hold_reason(jobs, ok), "Dependency");
    sched_job_task_ended(a, 0, SCHED_TASK_EXITED, 1, 0, 6000); /* job 1 fails */
    cr_assert_eq(sched_job_deps(jobs, ok, NULL), SCHED_DEP_NEVER);
    cr_assert_str_eq(sched_job_hold_reason(jobs, ok), "DependencyNeverSatisfied");
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_MET);
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_MET);
    cr_assert_null(sched_job_hold_reason(jobs, any));
    cr_assert_eq(sched_job_deps(jobs, ghost, NULL), SCHED_DEP_NEVER);
}

Test(jobs, held_jobs_say_so)
{
    struct sched_job *job = add(1, 0);

    job->held = true;
    cr_assert_str_eq(sched_job_hold_reason(jobs, job), "Held");
    cr_assert_str_eq(sched_job_state_name(SCHED_JOB_NODE_FAIL), "NODE_FAIL");
    cr_assert_eq(sched_job_start(running(2, 1), &one_node, 1, 0), -EINVAL, "already running");
}

Test(jobs, ranks_map_to_nodes_and_out_of_range_is_ignored)
{
    struct sched_job *job = add(1, 0);
    struct sched_alloc two;

    sched_alloc_init(&two);
    two.nnodes = 2;
    two.nodes = calloc(2, sizeof(*two.nodes));
    cr_assert_not_null(two.nodes);
    two.cap = 2;
    cr_assert_eq(sched_job_start(job, &two, 3, 5000), 0);
    cr_assert_eq(job->ntasks, 6);
    cr_assert_eq(sched_job_rank_node(job, 2), 0);
    cr_assert_eq(sched_job_rank_node(job, 3), 1);
    cr_assert_eq(job->tasks[4].node, 1);
    cr_assert_eq(job->tasks[4].local_rank, 1);
    cr_assert_not(sched_job_task_ended(job, 6, SCHED_TASK_EXITED, 0, 0, 6000), "no rank 6");
    cr_assert_eq(job->tasks_ended, 0);
    sched_alloc_release(&two);
}

Test(jobs, unstarted_requeue_charges_no_restart_and_history_is_kept)
{
    struct sched_job *job = running(1, 1);

    sched_job_requeue_unstarted(job, "launch lost");
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_eq(job->restarts, 0);
    cr_assert_str_eq(job->reason, "launch lost");
    cr_assert_eq(sched_job_note(job, 10, SCHED_JOB_PENDING, "requeued"), 0);
    cr_assert_eq(sched_job_note(job, 20, SCHED_JOB_RUNNING, NULL), 0);
    cr_assert_eq(job->nhistory, 2);
    cr_assert_str_eq(job->history[0].detail, "requeued");
    cr_assert_eq(job->history[1].at_ms, 20);
    cr_assert_eq(sched_job_start(job, &one_node, 1, 7000), 0);
    cr_assert_eq(job->attempt, 2);
}
