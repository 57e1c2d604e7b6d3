/*
 * test_jobs.c: the job table keeps jobs in id order; jobs end in the state their tasks
 * earned (with the first failing task's exit code); node failures requeue until the
 * restarts run out; dependencies and holds give squeue's pending reasons; Slurm's any (?),
 * singleton, after+MIN and whole-array dependencies; dependencies on one array task
 * (JOBID_TASK) and aftercorr, and what is left of them as squeue's %E shows it; scontrol
 * requeue; a batch job is one task, its script, on the first node; scontrol suspend and
 * resume leave the suspended time out of the run time and move the time limit's end.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "job_fixture.h"

TestSuite(jobs, .init = job_fixture_setup, .fini = job_fixture_teardown);

static struct sched_job *add_dep(uint64_t id, enum gs_dep_type type, uint64_t on)
{
    struct sched_job *job = fixture_add(id, 0);

    job->spec->deps = calloc(1, sizeof(*job->spec->deps));
    job->spec->deps[0] = (struct gs_dep){.type = type, .job_id = on};
    job->spec->ndeps = 1;
    return job;
}

Test(jobs, table_keeps_id_order_and_refuses_duplicates)
{
    fixture_add(5, 0);
    fixture_add(2, 0);
    fixture_add(9, 0);
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
    struct sched_job *job = fixture_running(1, 2);

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
    struct sched_job *job = fixture_running(1, 3);

    sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6000);
    sched_job_task_ended(job, 2, SCHED_TASK_EXITED, 0, SIGSEGV, 6001);
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_CANCELLED, 3, 0, 6002));
    cr_assert_eq(job->state, SCHED_JOB_FAILED);
    cr_assert(job->signaled);
    cr_assert_eq(job->exit_code, 128 + SIGSEGV);
}

/* A worker's TaskExit may carry any 32-bit signal number (live_fuzz found the overflow). */
Test(jobs, any_signal_number_from_the_wire_fails_the_job_without_overflow)
{
    struct sched_job *job = fixture_running(1, 1);

    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, INT32_MAX, 6000));
    cr_assert_eq(job->state, SCHED_JOB_FAILED);
    cr_assert(job->signaled);
}

Test(jobs, launch_failure_fails_the_job)
{
    struct sched_job *job = fixture_running(1, 1);

    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_LAUNCH_FAILED, 0, 0, 6000));
    cr_assert_eq(job->state, SCHED_JOB_FAILED);
    cr_assert_eq(job->exit_code, 127);
}

Test(jobs, time_limit_and_cancel_win_over_exit_codes)
{
    struct sched_job *t = fixture_running(1, 2), *c = fixture_running(2, 1), *p = fixture_add(3, 0);

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
    struct sched_job *job = fixture_add(1, 1);

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

/* While a node of the job is down and not yet failed over (fencing), a task failing for
 * want of it does not end the job: the failover requeues it. A success still ends it. */
Test(jobs, a_failure_while_a_node_failover_is_pending_waits_for_the_failover)
{
    struct sched_job *job = fixture_add(1, 1), *ok = fixture_add(2, 1);

    cr_assert_eq(sched_job_start(job, &one_node, 1, 5000), 0);
    job->node_fail_pending = true;
    cr_assert_not(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 1, 0, 6000),
                  "its last task ended, but the job waits for the failover");
    cr_assert_eq(job->state, SCHED_JOB_RUNNING);
    cr_assert_eq(sched_job_node_failed(job, 7000), SCHED_JOB_REQUEUED);
    cr_assert_not(job->node_fail_pending);
    cr_assert_eq(sched_job_start(job, &one_node, 1, 8000), 0);
    cr_assert_not(job->node_fail_pending, "a new attempt starts with no node lost");

    cr_assert_eq(sched_job_start(ok, &one_node, 1, 5000), 0);
    ok->node_fail_pending = true;
    cr_assert(sched_job_task_ended(ok, 0, SCHED_TASK_EXITED, 0, 0, 6000));
    cr_assert_eq(ok->state, SCHED_JOB_COMPLETED);
}

static void start_on_two_nodes(struct sched_job *job, uint64_t now_ms)
{
    struct sched_alloc two;

    sched_alloc_init(&two);
    two.nnodes = two.cap = 2;
    two.nodes = calloc(2, sizeof(*two.nodes));
    cr_assert_not_null(two.nodes);
    cr_assert_eq(sched_job_start(job, &two, 1, now_ms), 0);
    sched_alloc_release(&two); /* the job keeps its own copy */
}

/* A 2-node job losing one node moves only once its task on the other node has ended, so
 * that its next attempt never runs beside it; out of restarts it ends NODE_FAIL with the
 * node's reason, and a cancel meanwhile wins. */
Test(jobs, a_job_that_lost_a_node_moves_when_its_other_tasks_have_ended)
{
    struct sched_job *job = fixture_add(1, 1), *last = fixture_add(2, 0),
                     *cancelled = fixture_add(3, 1);

    start_on_two_nodes(job, 5000);
    cr_assert_eq(sched_job_tasks_lost(job, 1, SCHED_LOST_NODE_FAIL, "node n2: down", 6000),
                 SCHED_JOB_RUNNING, "rank 0 still runs on the first node");
    cr_assert(job->tasks[1].ended);
    cr_assert_not(job->tasks[0].ended);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, 15, 7000));
    cr_assert_eq(job->state, SCHED_JOB_PENDING, "requeued once rank 0 ended");
    cr_assert_eq(job->restarts, 1);
    cr_assert_eq(job->lost_tasks, SCHED_LOST_NONE);

    start_on_two_nodes(last, 5000);
    cr_assert(sched_job_task_ended(last, 0, SCHED_TASK_EXITED, 0, 0, 5500) == false);
    cr_assert_eq(sched_job_tasks_lost(last, 1, SCHED_LOST_NODE_FAIL, "node n2: down", 6000),
                 SCHED_JOB_NODE_FAIL, "nothing else runs and no restart is left");
    cr_assert_str_eq(last->reason, "node n2: down");

    start_on_two_nodes(cancelled, 5000);
    cr_assert_eq(sched_job_tasks_lost(cancelled, 0, SCHED_LOST_UNSTARTED, "lost launch", 6000),
                 SCHED_JOB_RUNNING);
    cancelled->cancel_requested = true;
    cr_assert(sched_job_task_ended(cancelled, 1, SCHED_TASK_CANCELLED, 0, 15, 7000));
    cr_assert_eq(cancelled->state, SCHED_JOB_CANCELLED);
}

Test(jobs, dependencies_follow_slurm_semantics)
{
    struct sched_job *a = fixture_running(1, 1), *ok = add_dep(2, GS_DEP_AFTEROK, 1);
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
    struct sched_job *job = fixture_add(1, 0);

    job->held = true;
    cr_assert_str_eq(sched_job_hold_reason(jobs, job), "Held");
    cr_assert_str_eq(sched_job_state_name(SCHED_JOB_NODE_FAIL), "NODE_FAIL");
    cr_assert_eq(sched_job_start(fixture_running(2, 1), &one_node, 1, 0), -EINVAL,
                 "already running");
}

Test(jobs, ranks_map_to_nodes_and_out_of_range_is_ignored)
{
    struct sched_job *job = fixture_add(1, 0);
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
    struct sched_job *job = fixture_running(1, 1);

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

/* A job of a name and user, for singleton. */
static struct sched_job *named(uint64_t id, const char *name, uint32_t uid)
{
    struct sched_job *job = fixture_add(id, 0);

    job->spec->name = strdup(name);
    cr_assert_not_null(job->spec->name);
    job->uid = uid;
    return job;
}

/* Gives job its n dependencies (replacing any). */
static void set_deps(struct sched_job *job, const struct gs_dep *deps, size_t n)
{
    free(job->spec->deps);
    job->spec->deps = calloc(n, sizeof(*deps));
    cr_assert_not_null(job->spec->deps);
    memcpy(job->spec->deps, deps, n * sizeof(*deps));
    job->spec->ndeps = n;
}

static void start(struct sched_job *job, uint64_t now_ms)
{
    cr_assert_eq(sched_job_start(job, &one_node, 1, now_ms), 0);
}

/* Ends a one-task running job with exit code rc. */
static void end(struct sched_job *job, int32_t rc)
{
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, rc, 0, 9000));
    cr_assert(sched_job_finished(job));
}

Test(jobs, depends_any_needs_one_met_and_is_never_only_when_none_can_be)
{
    struct sched_job *a = fixture_running(1, 1), *b = fixture_add(2, 0), *any = fixture_add(3, 0),
                     *all = fixture_add(4, 0);
    const struct gs_dep deps[] = {{.type = GS_DEP_AFTEROK, .job_id = 1},
                                  {.type = GS_DEP_AFTEROK, .job_id = 2}};
    uint64_t blocker = 0;

    set_deps(any, deps, 2);
    any->spec->depends_any = true;
    set_deps(all, deps, 2);
    cr_assert_eq(sched_job_deps(jobs, any, &blocker), SCHED_DEP_WAIT);
    cr_assert(blocker == 1 || blocker == 2);
    end(a, 1); /* afterok:1 can no longer be met */
    cr_assert_eq(sched_job_deps(jobs, all, NULL), SCHED_DEP_NEVER, "all: one never is enough");
    blocker = 0;
    cr_assert_eq(sched_job_deps(jobs, any, &blocker), SCHED_DEP_WAIT, "job 2 may still complete");
    cr_assert_eq(blocker, 2, "the one it still waits on");
    cr_assert_str_eq(sched_job_hold_reason(jobs, any), "Dependency");
    start(b, 8000);
    end(b, 0);
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_MET);
    cr_assert_null(sched_job_hold_reason(jobs, any));
    cr_assert_eq(sched_job_deps(jobs, all, NULL), SCHED_DEP_NEVER);
}

Test(jobs, depends_any_is_never_when_every_dependency_is)
{
    struct sched_job *a = fixture_running(1, 1), *b = fixture_running(2, 1),
                     *any = fixture_add(3, 0);
    const struct gs_dep deps[] = {{.type = GS_DEP_AFTEROK, .job_id = 1},
                                  {.type = GS_DEP_AFTERNOTOK, .job_id = 2},
                                  {.type = GS_DEP_AFTEROK, .job_id = 99}};

    set_deps(any, deps, 3);
    any->spec->depends_any = true;
    end(a, 1);
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_WAIT);
    end(b, 0);
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_NEVER);
    cr_assert_str_eq(sched_job_hold_reason(jobs, any), "DependencyNeverSatisfied");
}

Test(jobs, singleton_waits_for_earlier_unfinished_jobs_of_its_name_and_user)
{
    struct sched_job *first = named(1, "train", 100), *solo = named(2, "train", 100);
    struct sched_job *other_user = named(3, "train", 200), *other_name = named(4, "eval", 100);
    struct sched_job *later = named(5, "train", 100);
    uint64_t blocker = 0;

    solo->spec->singleton = true;
    other_user->spec->singleton = true;
    other_name->spec->singleton = true;
    cr_assert_eq(sched_job_deps(jobs, solo, &blocker), SCHED_DEP_WAIT, "job 1 is pending");
    cr_assert_eq(blocker, 1);
    cr_assert_str_eq(sched_job_hold_reason(jobs, solo), "Dependency");
    cr_assert_eq(sched_job_deps(jobs, other_user, NULL), SCHED_DEP_MET, "another user's jobs");
    cr_assert_eq(sched_job_deps(jobs, other_name, NULL), SCHED_DEP_MET, "another name");
    start(first, 6000);
    cr_assert_eq(sched_job_deps(jobs, solo, NULL), SCHED_DEP_WAIT, "job 1 runs");
    end(first, 1);
    cr_assert_eq(sched_job_deps(jobs, solo, NULL), SCHED_DEP_MET,
                 "a finished job (failed or not) is no obstacle, a later pending one neither");
    (void)later;
}

Test(jobs, singleton_waits_while_a_later_job_of_its_name_runs)
{
    struct sched_job *solo = named(1, "train", 100), *later = named(2, "train", 100);
    uint64_t blocker = 0;

    solo->spec->singleton = true;
    start(later, 6000); /* started first (held job 1, say) */
    cr_assert_eq(sched_job_deps(jobs, solo, &blocker), SCHED_DEP_WAIT);
    cr_assert_eq(blocker, 2);
    end(later, 0);
    cr_assert_eq(sched_job_deps(jobs, solo, NULL), SCHED_DEP_MET);
}

Test(jobs, singleton_also_needs_its_other_dependencies)
{
    struct sched_job *a = fixture_running(1, 1), *solo = named(2, "train", 100);
    const struct gs_dep dep = {.type = GS_DEP_AFTEROK, .job_id = 1};

    a->spec->name = strdup("prep");
    set_deps(solo, &dep, 1);
    solo->spec->singleton = true;
    cr_assert_eq(sched_job_deps(jobs, solo, NULL), SCHED_DEP_WAIT);
    end(a, 0);
    cr_assert_eq(sched_job_deps(jobs, solo, NULL), SCHED_DEP_MET);
}

Test(jobs, after_with_a_delay_waits_on_the_clock)
{
    struct sched_job *a = fixture_add(1, 0), *b = fixture_add(2, 0);
    const struct gs_dep dep = {.type = GS_DEP_AFTER, .job_id = 1, .delay_min = 2};

    set_deps(b, &dep, 1);
    sched_jobs_set_now(jobs, 1000);
    cr_assert_eq(sched_job_deps(jobs, b, NULL), SCHED_DEP_WAIT, "job 1 has not started");
    cr_assert_not(sched_jobs_timed_waits(jobs), "that wait is on job 1, not the clock");
    start(a, 10000);
    sched_jobs_set_now(jobs, 10000 + 60000);
    cr_assert_eq(sched_job_deps(jobs, b, NULL), SCHED_DEP_WAIT, "one minute of two");
    cr_assert(sched_jobs_timed_waits(jobs));
    cr_assert_str_eq(sched_job_hold_reason(jobs, b), "Dependency");
    sched_jobs_set_now(jobs, 10000 + 120000 - 1);
    cr_assert_not(sched_jobs_timed_waits(jobs), "set_now forgets earlier timed waits");
    cr_assert_eq(sched_job_deps(jobs, b, NULL), SCHED_DEP_WAIT);
    sched_jobs_set_now(jobs, 10000 + 120000);
    cr_assert_eq(sched_job_deps(jobs, b, NULL), SCHED_DEP_MET, "two minutes after its start");
    cr_assert_not(sched_jobs_timed_waits(jobs));
}

Test(jobs, a_dependency_without_a_delay_ignores_the_clock)
{
    struct sched_job *b = fixture_add(2, 0);
    const struct gs_dep dep = {.type = GS_DEP_AFTER, .job_id = 1};

    fixture_running(1, 1);
    set_deps(b, &dep, 1);
    sched_jobs_set_now(jobs, 0);
    cr_assert_eq(sched_job_deps(jobs, b, NULL), SCHED_DEP_MET);
    cr_assert_not(sched_jobs_timed_waits(jobs));
}

/* An array of n elements, ids first..first+n-1, as the scheduler makes them. */
static void array(uint64_t first, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct sched_job *e = fixture_add(first + i, 0);

        e->spec->array.array_job_id = first;
        e->spec->array.task_id = i;
        e->spec->array.count = n;
    }
}

Test(jobs, a_dependency_on_an_arrays_first_element_is_on_every_element)
{
    struct sched_job *ok = add_dep(20, GS_DEP_AFTEROK, 10), *any = add_dep(21, GS_DEP_AFTERANY, 10);
    struct sched_job *one = add_dep(22, GS_DEP_AFTEROK, 11);
    struct sched_job *after = add_dep(23, GS_DEP_AFTER, 10);
    uint64_t blocker = 0;

    array(10, 3);
    fixture_add(13, 0); /* the next job, not an element */
    for (uint64_t id = 10; id <= 11; id++) {
        start(sched_jobs_find(jobs, id), 6000);
        end(sched_jobs_find(jobs, id), 0);
    }
    cr_assert_eq(sched_job_deps(jobs, ok, &blocker), SCHED_DEP_WAIT, "element 2 is pending");
    cr_assert_eq(blocker, 10);
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_WAIT);
    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_WAIT, "element 2 has not started");
    cr_assert_eq(sched_job_deps(jobs, one, NULL), SCHED_DEP_MET, "on element 1 alone");
    start(sched_jobs_find(jobs, 12), 7000);
    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_MET);
    end(sched_jobs_find(jobs, 12), 0);
    cr_assert_eq(sched_job_deps(jobs, ok, NULL), SCHED_DEP_MET, "job 13 is no element");
    cr_assert_eq(sched_job_deps(jobs, any, NULL), SCHED_DEP_MET);
}

Test(jobs, one_failed_element_makes_afterok_on_the_array_never)
{
    struct sched_job *ok = add_dep(20, GS_DEP_AFTEROK, 10);
    struct sched_job *notok = add_dep(21, GS_DEP_AFTERNOTOK, 10);

    array(10, 3);
    start(sched_jobs_find(jobs, 11), 6000);
    end(sched_jobs_find(jobs, 11), 2);
    cr_assert_eq(sched_job_deps(jobs, ok, NULL), SCHED_DEP_NEVER, "before the others end");
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_WAIT, "the others have not ended");
}

/* Slurm judges afternotok on a whole array once every element has ended: met when any
 * failed, never when all completed. */
Test(jobs, afternotok_on_an_array_is_met_when_any_element_failed)
{
    struct sched_job *notok = add_dep(21, GS_DEP_AFTERNOTOK, 10);

    array(10, 3);
    start(sched_jobs_find(jobs, 11), 6000);
    end(sched_jobs_find(jobs, 11), 2);
    start(sched_jobs_find(jobs, 10), 6000);
    end(sched_jobs_find(jobs, 10), 0);
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_WAIT, "element 2 still pending");
    start(sched_jobs_find(jobs, 12), 6000);
    end(sched_jobs_find(jobs, 12), 0);
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_MET, "element 1 failed");
}

Test(jobs, afternotok_on_an_array_is_never_when_every_element_completed)
{
    struct sched_job *notok = add_dep(21, GS_DEP_AFTERNOTOK, 10);

    array(10, 2);
    for (uint64_t id = 10; id <= 11; id++) {
        start(sched_jobs_find(jobs, id), 6000);
        end(sched_jobs_find(jobs, id), 0);
    }
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_NEVER);
}

/* An array whose elements have the task ids ids[0..n-1] (ascending), ids first on. */
static void array_of(uint64_t first, const uint32_t *ids, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct sched_job *e = fixture_add(first + i, 0);

        e->spec->array.array_job_id = first;
        e->spec->array.task_id = ids[i];
        e->spec->array.count = n;
    }
}

static struct sched_job *element(uint64_t first, uint32_t task)
{
    const struct sched_job *e = sched_jobs_array_task(jobs, sched_jobs_find(jobs, first), task);

    cr_assert_not_null(e, "array %llu has task %u", (unsigned long long)first, task);
    return (struct sched_job *)e;
}

static bool forget_id_12(void *data, const struct sched_job *job)
{
    (void)data;
    return job->id == 12;
}

Test(jobs, array_tasks_are_found_by_task_id_among_sparse_ids)
{
    static const uint32_t ids[] = {1, 5, 9, 10, 40};

    array_of(10, ids, 5);
    fixture_add(15, 0);
    for (uint32_t i = 0; i < 5; i++)
        cr_assert_eq(element(10, ids[i])->id, 10 + i);
    cr_assert_null(sched_jobs_array_task(jobs, sched_jobs_find(jobs, 10), 2));
    cr_assert_null(sched_jobs_array_task(jobs, sched_jobs_find(jobs, 10), 41));
    cr_assert_null(sched_jobs_array_task(jobs, sched_jobs_find(jobs, 11), 5), "not the first");
    cr_assert_null(sched_jobs_array_task(jobs, sched_jobs_find(jobs, 15), 0), "not an array");
    /* a forgotten element is simply not there */
    sched_jobs_find(jobs, 12)->state = SCHED_JOB_COMPLETED;
    cr_assert_eq(sched_jobs_forget(jobs, forget_id_12, NULL, NULL), 1);
    cr_assert_null(sched_jobs_array_task(jobs, sched_jobs_find(jobs, 10), 9));
    cr_assert_eq(element(10, 40)->id, 14);
}

Test(jobs, a_dependency_on_one_array_task_waits_for_that_task_alone)
{
    static const uint32_t ids[] = {0, 3, 7};
    struct sched_job *ok = fixture_add(20, 0), *after = fixture_add(21, 0);
    const struct gs_dep on3 = {.type = GS_DEP_AFTEROK,
                               .job_id = 10,
                               .target = GS_DEP_TASK,
                               .task_id = 3},
                        on0 = {.type = GS_DEP_AFTER,
                               .job_id = 10,
                               .target = GS_DEP_TASK,
                               .task_id = 0,
                               .delay_min = 1};
    uint64_t blocker = 0;

    array_of(10, ids, 3);
    set_deps(ok, &on3, 1);
    set_deps(after, &on0, 1);
    sched_jobs_set_now(jobs, 100000);
    start(element(10, 7), 6000);
    end(element(10, 7), 1);
    cr_assert_eq(sched_job_deps(jobs, ok, &blocker), SCHED_DEP_WAIT, "task 7's failure is not 3's");
    cr_assert_eq(blocker, 10);
    start(element(10, 3), 6000);
    end(element(10, 3), 0);
    cr_assert_eq(sched_job_deps(jobs, ok, NULL), SCHED_DEP_MET, "task 0 still pending");
    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_WAIT);
    start(element(10, 0), 50000);
    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_WAIT, "a minute after task 0");
    cr_assert(sched_jobs_timed_waits(jobs));
    sched_jobs_set_now(jobs, 110000);
    cr_assert_eq(sched_job_deps(jobs, after, NULL), SCHED_DEP_MET);
}

Test(jobs, a_failed_array_task_makes_afterok_on_it_never)
{
    static const uint32_t ids[] = {0, 1};
    struct sched_job *ok = fixture_add(20, 0), *notok = fixture_add(21, 0);
    const struct gs_dep d = {
        .type = GS_DEP_AFTEROK, .job_id = 10, .target = GS_DEP_TASK, .task_id = 1};
    struct gs_dep n = d;

    n.type = GS_DEP_AFTERNOTOK;
    array_of(10, ids, 2);
    set_deps(ok, &d, 1);
    set_deps(notok, &n, 1);
    start(element(10, 1), 6000);
    end(element(10, 1), 3);
    cr_assert_eq(sched_job_deps(jobs, ok, NULL), SCHED_DEP_NEVER);
    cr_assert_eq(sched_job_deps(jobs, notok, NULL), SCHED_DEP_MET, "not the whole array's rule");
}

Test(jobs, aftercorr_pairs_each_task_with_the_other_arrays_task_of_its_id)
{
    static const uint32_t a_ids[] = {0, 1, 2}, b_ids[] = {1, 2, 5};
    const struct gs_dep corr = {.type = GS_DEP_AFTERCORR, .job_id = 10};

    array_of(10, a_ids, 3);
    array_of(20, b_ids, 3);
    for (uint32_t i = 0; i < 3; i++)
        set_deps(sched_jobs_find(jobs, 20 + i), &corr, 1);
    start(element(10, 1), 6000);
    end(element(10, 1), 0);
    start(element(10, 2), 6000);
    end(element(10, 2), 4);
    cr_assert_eq(sched_job_deps(jobs, element(20, 1), NULL), SCHED_DEP_MET, "A's task 1 done");
    cr_assert_eq(sched_job_deps(jobs, element(20, 2), NULL), SCHED_DEP_NEVER, "A's task 2 failed");
    /* A has no task 5: the whole of A, as afterok, which waits for A's task 0 */
    cr_assert_eq(sched_job_deps(jobs, element(20, 5), NULL), SCHED_DEP_NEVER,
                 "A's task 2 failed: afterok on all of A can never be met");
    start(element(10, 0), 7000);
    end(element(10, 0), 0);
    cr_assert_eq(sched_job_deps(jobs, element(20, 1), NULL), SCHED_DEP_MET);
}

Test(jobs, aftercorr_outside_arrays_is_afterok_on_the_whole_job)
{
    static const uint32_t ids[] = {0, 1};
    struct sched_job *plain = fixture_add(5, 0), *on_plain = fixture_add(30, 0),
                     *on_array = fixture_add(31, 0);
    const struct gs_dep p = {.type = GS_DEP_AFTERCORR, .job_id = 5},
                        a = {.type = GS_DEP_AFTERCORR, .job_id = 10};

    array_of(10, ids, 2);
    set_deps(on_plain, &p, 1);
    set_deps(on_array, &a, 1);
    start(plain, 6000);
    cr_assert_eq(sched_job_deps(jobs, on_plain, NULL), SCHED_DEP_WAIT);
    end(plain, 0);
    cr_assert_eq(sched_job_deps(jobs, on_plain, NULL), SCHED_DEP_MET);
    start(element(10, 0), 6000);
    end(element(10, 0), 0);
    cr_assert_eq(sched_job_deps(jobs, on_array, NULL), SCHED_DEP_WAIT, "task 1 of the array");
    start(element(10, 1), 6000);
    end(element(10, 1), 0);
    cr_assert_eq(sched_job_deps(jobs, on_array, NULL), SCHED_DEP_MET);
}

Test(jobs, dependencies_are_checked_against_the_table)
{
    static const uint32_t ids[] = {2, 4};
    char why[160];

    array_of(10, ids, 2);
    fixture_add(15, 0);
    cr_assert_eq(sched_jobs_dep_check(jobs, &(struct gs_dep){GS_DEP_AFTEROK, 10, 0, GS_DEP_TASK, 4},
                                      why, sizeof(why)),
                 0);
    cr_assert_eq(sched_jobs_dep_check(jobs, &(struct gs_dep){GS_DEP_AFTEROK, 10, 0, GS_DEP_TASK, 3},
                                      why, sizeof(why)),
                 -EINVAL);
    cr_assert_str_eq(why, "job array 10 has no task 3");
    cr_assert_eq(sched_jobs_dep_check(jobs,
                                      &(struct gs_dep){GS_DEP_AFTEROK, 11, 0, GS_DEP_ARRAY, 0}, why,
                                      sizeof(why)),
                 -EINVAL);
    cr_assert_str_eq(why, "job 11 is not a job array (or not its first job)");
    cr_assert_eq(sched_jobs_dep_check(jobs, &(struct gs_dep){GS_DEP_AFTERCORR, 15, 0, 0, 0}, why,
                                      sizeof(why)),
                 0, "aftercorr on a plain job is afterok on it");
    cr_assert_eq(sched_jobs_dep_check(jobs, &(struct gs_dep){GS_DEP_AFTERANY, 99, 0, 0, 0}, why,
                                      sizeof(why)),
                 -EINVAL);
    cr_assert_str_eq(why, "job 99 does not exist");
}

static char *deps_text(const struct sched_job *job)
{
    struct gs_buf out = GS_BUF_INIT;

    cr_assert_eq(sched_job_deps_text(jobs, job, &out), 0);
    return out.data != NULL ? gs_buf_detach(&out, NULL) : strdup("");
}

static void expect_text(const struct sched_job *job, const char *want)
{
    char *got = deps_text(job);

    cr_assert_str_eq(got, want);
    free(got);
}

Test(jobs, what_is_left_of_the_dependencies_reads_as_squeue_shows_it)
{
    static const uint32_t ids[] = {0, 3};
    struct sched_job *a = fixture_running(1, 1), *b = fixture_running(2, 1),
                     *job = named(20, "train", 7), *any = fixture_add(21, 0);
    const struct gs_dep deps[] = {
        {.type = GS_DEP_AFTEROK, .job_id = 1},
        {.type = GS_DEP_AFTERNOTOK, .job_id = 2},
        {.type = GS_DEP_AFTERANY, .job_id = 10, .target = GS_DEP_TASK, .task_id = 3},
        {.type = GS_DEP_AFTER, .job_id = 10, .target = GS_DEP_ARRAY, .delay_min = 5},
    };

    array_of(10, ids, 2);
    set_deps(job, deps, 4);
    job->spec->singleton = true;
    set_deps(any, deps, 2);
    any->spec->depends_any = true;
    named(5, "train", 7); /* earlier, unfinished: in the way */
    expect_text(job, "afterok:1(unfulfilled),afternotok:2(unfulfilled),afterany:10_3(unfulfilled),"
                     "after:10_*+5(unfulfilled),singleton(unfulfilled)");
    expect_text(any, "afterok:1(unfulfilled)?afternotok:2(unfulfilled)");
    end(a, 0);
    end(b, 0);
    expect_text(job, "afternotok:2(failed),afterany:10_3(unfulfilled),after:10_*+5(unfulfilled),"
                     "singleton(unfulfilled)");
    expect_text(any, ""); /* one met is enough */
    sched_jobs_find(jobs, 5)->state = SCHED_JOB_CANCELLED;
    set_deps(job, deps, 1);
    expect_text(job, "");
    set_deps(any, deps + 1, 1);
    any->state = SCHED_JOB_CANCELLED;
    expect_text(any, ""); /* not pending */
}

Test(jobs, requeue_of_a_running_job_waits_for_its_tasks)
{
    struct sched_job *job = fixture_running(1, 2);

    cr_assert_eq(sched_job_requeue(job, false, "Requeued by user"), 0);
    cr_assert_eq(job->state, SCHED_JOB_RUNNING, "its tasks still run");
    cr_assert_not(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 6000));
    cr_assert_eq(job->state, SCHED_JOB_RUNNING);
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, SIGTERM, 6001));
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_not(sched_job_finished(job));
    cr_assert_eq(job->restarts, 1);
    cr_assert_not(job->held);
    cr_assert_not(job->requeue_requested);
    cr_assert_eq(job->start_ms, 0);
    cr_assert_eq(job->end_ms, 0);
    cr_assert_str_eq(job->reason, "Requeued by user");
    cr_assert_null(sched_job_hold_reason(jobs, job), "free to start again");
    cr_assert_eq(sched_job_start(job, &one_node, 2, 7000), 0);
    cr_assert_eq(job->attempt, 2);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 8000) == false);
    cr_assert(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, 0, 8001));
    cr_assert_eq(job->state, SCHED_JOB_COMPLETED, "the next attempt ends as usual");
    cr_assert_eq(job->restarts, 1);
}

Test(jobs, requeue_hold_leaves_the_job_held)
{
    struct sched_job *job = fixture_running(1, 1);

    cr_assert_eq(sched_job_requeue(job, true, "requeuehold"), 0);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 1, 0, 6000));
    cr_assert_eq(job->state, SCHED_JOB_PENDING, "a failing last attempt is requeued too");
    cr_assert(job->held);
    cr_assert_str_eq(sched_job_hold_reason(jobs, job), "Held");
}

Test(jobs, requeue_of_an_ended_job_is_at_once_and_of_a_pending_one_refused)
{
    struct sched_job *done = fixture_running(1, 1), *failed = fixture_running(2, 1),
                     *pending = fixture_add(3, 0);

    end(done, 0);
    end(failed, 3);
    cr_assert_eq(sched_job_requeue(done, false, "again"), 1);
    cr_assert_eq(done->state, SCHED_JOB_PENDING);
    cr_assert_eq(done->restarts, 1);
    cr_assert_not(done->held);
    cr_assert_eq(done->end_ms, 0);
    cr_assert_eq(sched_job_requeue(failed, true, "again"), 1);
    cr_assert_eq(failed->state, SCHED_JOB_PENDING);
    cr_assert(failed->held);
    cr_assert_eq(sched_job_start(done, &one_node, 1, 9500), 0);
    cr_assert_eq(done->exit_code, 0);

    cr_assert_eq(sched_job_requeue(pending, true, "no"), -EINVAL);
    cr_assert_eq(pending->state, SCHED_JOB_PENDING);
    cr_assert_not(pending->held, "a refused requeue changes nothing");
    cr_assert_eq(pending->restarts, 0);
    cr_assert_str_eq(pending->reason, "", "nor the reason");
}

Test(jobs, cancel_wins_over_a_requeue_in_progress)
{
    struct sched_job *job = fixture_running(1, 1);

    cr_assert_eq(sched_job_requeue(job, false, "requeue"), 0);
    cr_assert_not(sched_job_cancel(job, 6000));
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 6100));
    cr_assert_eq(job->state, SCHED_JOB_CANCELLED);
    cr_assert_eq(job->restarts, 0);
}

Test(jobs, requeue_gives_the_nodes_back_when_the_tasks_have_ended)
{
    struct sched_cluster *cl = sched_cluster_new();
    struct sched_jobs *t;
    struct sched_job *job;
    struct sched_alloc a;
    struct sched_node_info info = {.name = "n1", .ngpus = 8, .ncores = 16, .mem_mib = 1024};
    struct gs_jobspec *spec = gs_jobspec_new();

    cr_assert(cl != NULL && spec != NULL);
    cr_assert_eq(sched_cluster_add_node(cl, &info), 0);
    t = sched_jobs_new(cl);
    cr_assert_not_null(t);
    sched_alloc_init(&a);
    cr_assert_eq(
        sched_cluster_place(cl, &(struct sched_req){.nodes = 1, .gpus_per_node = 4}, NULL, &a), 0);
    sched_cluster_take(cl, &a);
    job = sched_jobs_add(t, 1, spec, 0);
    cr_assert_not_null(job);
    cr_assert_eq(sched_job_start(job, &a, 1, 1000), 0);
    cr_assert_eq(sched_job_requeue(job, false, "requeue"), 0);
    cr_assert_eq(sched_cluster_free_gpus(cl, 0), 4, "still in use while its task runs");
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 2000));
    cr_assert_eq(sched_cluster_free_gpus(cl, 0), 8);
    cr_assert_eq(job->alloc.nnodes, 0);
    sched_alloc_release(&a);
    sched_jobs_free(t);
    sched_cluster_free(cl);
}

Test(jobs, a_batch_job_is_one_task_on_the_first_node)
{
    struct sched_job *job = fixture_add(1, 0);
    struct sched_alloc two;

    job->spec->batch = true;
    sched_alloc_init(&two);
    two.nnodes = 2;
    two.nodes = calloc(2, sizeof(*two.nodes));
    cr_assert_not_null(two.nodes);
    two.cap = 2;
    two.nodes[0].node = 5;
    two.nodes[1].node = 7;
    cr_assert_eq(sched_job_start(job, &two, 0, 5000), -EINVAL, "zero tasks per node");
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_eq(sched_job_start(job, &two, 4, 5000), 0);
    cr_assert_eq(job->ntasks, 1, "the script, not 2 x 4 tasks");
    cr_assert_eq(job->tasks[0].node, 0);
    cr_assert_eq(job->tasks[0].cluster_node, 5, "the first node");
    cr_assert_eq(job->tasks[0].local_rank, 0);
    cr_assert_eq(sched_job_rank_node(job, 0), 0);
    cr_assert_eq(job->alloc.nnodes, 2, "the job still holds both nodes for its steps");
    cr_assert_not(sched_job_task_ended(job, 1, SCHED_TASK_EXITED, 0, 0, 6000), "no rank 1");
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, 0, 6000),
              "the script ending ends the job");
    cr_assert_eq(job->state, SCHED_JOB_COMPLETED);
    sched_alloc_release(&two);
}

Test(jobs, suspended_time_counts_neither_as_run_time_nor_against_the_limit)
{
    struct sched_job *job = fixture_running(1, 1), *p = fixture_add(2, 0);

    job->spec->time_limit_s = 60;
    job->start_ms = 10000;
    cr_assert_eq(sched_job_run_ms(job, 25000), 15000);
    cr_assert_eq(sched_job_limit_end_ms(job, 25000), 70000);
    cr_assert_eq(sched_job_suspend(job, true, 25000), -EALREADY, "not suspended");
    cr_assert_eq(sched_job_suspend(job, false, 25000), 0);
    cr_assert_eq(sched_job_suspend(job, false, 26000), -EALREADY);
    cr_assert_eq(sched_job_run_ms(job, 40000), 15000, "the run time stands still");
    cr_assert_eq(sched_job_limit_end_ms(job, 40000), 85000, "as if it resumed now");
    cr_assert_eq(sched_job_suspend(job, true, 45000), 0);
    cr_assert_eq(job->suspended_ms, 20000);
    cr_assert_eq(sched_job_run_ms(job, 50000), 20000);
    cr_assert_eq(sched_job_limit_end_ms(job, 50000), 90000);
    /* A second stretch adds to the first; ending while suspended counts it to the end. */
    cr_assert_eq(sched_job_suspend(job, false, 60000), 0);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, 0, SIGKILL, 70000));
    cr_assert_not(job->suspended);
    cr_assert_eq(job->suspended_ms, 30000);
    cr_assert_eq(sched_job_run_ms(job, 99000), 30000, "run time up to the end");
    cr_assert_eq(sched_job_suspend(p, false, 1000), -EINVAL, "a pending job runs nothing");
    p->spec->time_limit_s = GS_DURATION_INFINITE;
    cr_assert_eq(sched_job_limit_end_ms(p, 1000), UINT64_MAX);
}

Test(jobs, a_job_ending_or_starting_again_is_not_suspended)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_alloc none = {0};

    cr_assert_eq(sched_job_suspend(job, false, 20000), 0);
    cr_assert_not(sched_job_cancel(job, 21000));
    cr_assert_eq(sched_job_suspend(job, true, 21500), -EINVAL, "its end was asked for");
    job->cancel_requested = false;
    cr_assert_eq(sched_job_requeue(job, false, "requeued"), 0);
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_CANCELLED, 0, SIGTERM, 22000));
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_eq(sched_job_start(job, &none, 1, 30000), 0);
    cr_assert_not(job->suspended, "a new attempt runs");
    cr_assert_eq(job->suspended_ms, 0);
    cr_assert_eq(sched_job_run_ms(job, 31000), 1000);
}
