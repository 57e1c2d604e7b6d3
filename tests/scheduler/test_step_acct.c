/*
 * test_step_acct.c: a job's step accounting records (scheduler/step_acct.h): a record starts
 * RUNNING, keeps the highest RSS any task reached (heartbeat or exit) with its node and rank,
 * sums its tasks' CPU time, and closes after its last task's exit with Slurm's state (a
 * non-zero exit or a signal FAILED, gsched's cancel CANCELLED, ...) and the highest exit
 * code; a closed record ignores what comes late; a new attempt's record drops the old
 * attempt's; rows round-trip through sched_step_acct_row / _restore; the job frees them.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "job_fixture.h"
#include "scheduler/step_acct.h"

TestSuite(step_acct, .init = job_fixture_setup, .fini = job_fixture_teardown);

static struct sched_step_acct *add(struct sched_job *job, uint32_t step, uint32_t ntasks)
{
    struct sched_step_acct *a =
        sched_step_acct_add(job, step, "train", "node[1-2]", 2, ntasks, 1000);

    cr_assert_not_null(a);
    return a;
}

Test(step_acct, a_new_record_runs_with_what_it_was_given)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *a = add(job, 1, 4);

    cr_assert_eq(a->state, SCHED_JOB_RUNNING);
    cr_assert_str_eq(a->name, "train");
    cr_assert_str_eq(a->nodelist, "node[1-2]");
    cr_assert_eq(a->nnodes, 2);
    cr_assert_eq(a->ntasks, 4);
    cr_assert_eq(a->start_ms, 1000);
    cr_assert_eq(sched_step_acct_find(job, 1), a);
    cr_assert_null(sched_step_acct_find(job, 2));
}

Test(step_acct, the_peak_rss_names_its_node_and_rank_and_cpu_adds_up)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *a = add(job, 1, 2);

    sched_step_acct_sample(a, 0, "node1", 1000, 300);
    sched_step_acct_sample(a, 1, "node2", 5000, 200);
    sched_step_acct_sample(a, 1, "node2", 4000, 700); /* lower RSS: the peak stays */
    sched_step_acct_sample(a, 7, "node9", 99999, 5);  /* no such rank: ignored */
    cr_assert_eq(a->max_rss_kib, 5000);
    cr_assert_str_eq(a->max_rss_node, "node2");
    cr_assert_eq(a->max_rss_task, 1);
    cr_assert_eq(sched_step_acct_cpu_ms(a), 1000);
    /* wait4's peak at the exit may be above what the heartbeats saw */
    cr_assert_not(sched_step_acct_exit(a, 0, "node1", SCHED_TASK_EXITED, 0, 0, 8000, 350, 2000));
    cr_assert_eq(a->max_rss_kib, 8000);
    cr_assert_str_eq(a->max_rss_node, "node1");
    cr_assert_eq(a->max_rss_task, 0);
    cr_assert_eq(sched_step_acct_cpu_ms(a), 1050);
}

Test(step_acct, the_last_exit_closes_it_completed_or_failed_with_the_highest_code)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *ok = add(job, 1, 2), *bad;

    cr_assert_not(sched_step_acct_exit(ok, 1, "n", SCHED_TASK_EXITED, 0, 0, 10, 1, 1500));
    cr_assert_eq(ok->state, SCHED_JOB_RUNNING);
    cr_assert(sched_step_acct_exit(ok, 0, "n", SCHED_TASK_EXITED, 0, 0, 10, 1, 1600));
    cr_assert_eq(ok->state, SCHED_JOB_COMPLETED);
    cr_assert_eq(ok->end_ms, 1600);

    bad = add(job, 2, 3);
    sched_step_acct_exit(bad, 0, "n", SCHED_TASK_EXITED, 3, 0, 10, 1, 1700);
    sched_step_acct_exit(bad, 1, "n", SCHED_TASK_EXITED, 1, 0, 10, 1, 1700);
    cr_assert(sched_step_acct_exit(bad, 2, "n", SCHED_TASK_EXITED, 0, SIGSEGV, 10, 1, 1800));
    cr_assert_eq(bad->state, SCHED_JOB_FAILED);
    cr_assert_eq(bad->exit_code, 3);
    cr_assert(bad->signaled);
    cr_assert_eq(bad->term_signal, SIGSEGV);
}

Test(step_acct, gsched_ending_a_task_says_why)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *a = add(job, 1, 1), *b = add(job, 2, 1), *c = add(job, 3, 1);

    a = sched_step_acct_find(job, 1); /* each add may move the others */
    b = sched_step_acct_find(job, 2);
    sched_step_acct_exit(a, 0, "n", SCHED_TASK_CANCELLED, 0, SIGTERM, 0, 0, 5);
    sched_step_acct_exit(b, 0, "n", SCHED_TASK_TIMEOUT, 0, SIGTERM, 0, 0, 5);
    sched_step_acct_exit(c, 0, "n", SCHED_TASK_OOM, 0, SIGKILL, 0, 0, 5);
    cr_assert_eq(a->state, SCHED_JOB_CANCELLED);
    cr_assert_eq(b->state, SCHED_JOB_TIMEOUT);
    cr_assert_eq(c->state, SCHED_JOB_OUT_OF_MEMORY);
}

Test(step_acct, a_closed_record_ignores_late_figures)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *a = add(job, 1, 2);

    sched_step_acct_close(a, SCHED_JOB_CANCELLED, 3000);
    cr_assert_eq(a->state, SCHED_JOB_CANCELLED);
    cr_assert_eq(a->end_ms, 3000);
    cr_assert_not(sched_step_acct_exit(a, 0, "n", SCHED_TASK_EXITED, 9, 0, 777, 5, 4000));
    sched_step_acct_sample(a, 1, "n", 888, 5);
    sched_step_acct_close(a, SCHED_JOB_FAILED, 5000);
    cr_assert_eq(a->state, SCHED_JOB_CANCELLED);
    cr_assert_eq(a->end_ms, 3000);
    cr_assert_eq(a->exit_code, 0);
    cr_assert_eq(a->max_rss_kib, 0);
}

Test(step_acct, a_new_attempt_drops_the_old_attempts_records)
{
    struct sched_job *job = fixture_running(1, 1);

    add(job, 1, 1);
    add(job, 2, 1);
    add(job, 1, 1); /* the same step again replaces it */
    cr_assert_eq(job->nsteps, 2);
    job->attempt++;
    cr_assert_null(sched_step_acct_find(job, 2), "another attempt's record is not found");
    add(job, 1, 1);
    cr_assert_eq(job->nsteps, 1);
    cr_assert_eq(job->steps[0].attempt, job->attempt);
}

Test(step_acct, a_row_round_trips_onto_a_job_of_its_attempt)
{
    struct sched_job *job = fixture_running(1, 1), *other = fixture_running(2, 1);
    struct sched_step_acct *a = add(job, 3, 2);
    struct sched_step_row row;

    sched_step_acct_sample(a, 1, "node2", 4096, 900);
    sched_step_acct_exit(a, 0, "node1", SCHED_TASK_EXITED, 2, 0, 100, 100, 7000);
    sched_step_acct_exit(a, 1, "node2", SCHED_TASK_EXITED, 0, 0, 100, 1000, 7100);
    a->cpus = 8;
    a->gpus = 2;
    a->time_limit_s = 600;
    sched_step_acct_row(a, job->id, &row);
    cr_assert_eq(row.job_id, 1);
    cr_assert_eq(row.step, 3);
    cr_assert_eq(row.state, SCHED_JOB_FAILED);
    cr_assert_eq(row.cpu_ms, 1100);
    cr_assert_eq(sched_step_acct_restore(other, &row), 0);
    a = sched_step_acct_find(other, 3);
    cr_assert_not_null(a);
    cr_assert_str_eq(a->name, "train");
    cr_assert_str_eq(a->nodelist, "node[1-2]");
    cr_assert_eq(a->state, SCHED_JOB_FAILED);
    cr_assert_eq(a->exit_code, 2);
    cr_assert_eq(a->start_ms, 1000);
    cr_assert_eq(a->end_ms, 7100);
    cr_assert_eq(a->max_rss_kib, 4096);
    cr_assert_str_eq(a->max_rss_node, "node2");
    cr_assert_eq(a->max_rss_task, 1);
    cr_assert_eq(sched_step_acct_cpu_ms(a), 1100);
    cr_assert(a->cpus == 8 && a->gpus == 2 && a->time_limit_s == 600, "what it was given");
    row.attempt++;
    row.step = 4;
    cr_assert_eq(sched_step_acct_restore(other, &row), 0);
    cr_assert_null(sched_step_acct_find(other, 4), "another attempt's row is skipped");
}

/* A suspension counts for a step only where it overlaps the step's span. */
Test(step_acct, a_step_keeps_its_share_of_a_suspension)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_acct *a, *b;
    struct sched_step_row row;

    add(job, 1, 1);
    add(job, 2, 1);
    a = sched_step_acct_find(job, 1); /* an add may move the records */
    b = sched_step_acct_find(job, 2);
    b->start_ms = 5000; /* a started at 1000 */
    sched_step_acct_suspended(a, 3000, 4000);
    sched_step_acct_suspended(b, 3000, 4000); /* before b started */
    cr_assert_eq(a->suspended_ms, 1000);
    cr_assert_eq(b->suspended_ms, 0);
    sched_step_acct_suspended(b, 4500, 6000); /* from b's start on */
    cr_assert_eq(b->suspended_ms, 1000);
    sched_step_acct_exit(a, 0, "node1", SCHED_TASK_EXITED, 0, 0, 100, 100, 7000);
    sched_step_acct_suspended(a, 6500, 9000); /* a ended at 7000 */
    cr_assert_eq(a->suspended_ms, 1500);
    sched_step_acct_row(a, job->id, &row);
    cr_assert_eq(row.suspended_ms, 1500);
    cr_assert_eq(sched_step_acct_restore(fixture_running(2, 1), &row), 0);
}

Test(step_acct, a_running_batch_row_goes_on_from_its_stored_cpu_time)
{
    struct sched_job *job = fixture_running(1, 1);
    struct sched_step_row row = {.job_id = 1,
                                 .step = SCHED_STEP_BATCH,
                                 .attempt = job->attempt,
                                 .name = "batch",
                                 .nodelist = "node1",
                                 .nnodes = 1,
                                 .ntasks = 1,
                                 .state = SCHED_JOB_RUNNING,
                                 .cpu_ms = 5000};
    struct sched_step_acct *a;

    cr_assert_eq(sched_step_acct_restore(job, &row), 0);
    a = sched_step_acct_find(job, SCHED_STEP_BATCH);
    cr_assert_not_null(a);
    sched_step_acct_sample(a, 0, "node1", 10, 6000); /* the heartbeat's total since its start */
    cr_assert_eq(sched_step_acct_cpu_ms(a), 6000);
}
