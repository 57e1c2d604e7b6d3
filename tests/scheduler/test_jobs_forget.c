/*
 * test_jobs_forget.c: finished jobs removed from the job table (sched_jobs_forget, as
 * scheduler.min_job_age has gschedd do): the table stays in id order and found by id, an
 * index into it (the planner's plan_from) follows, jobs not finished are never removed
 * whatever the caller says, and jobs made outside any table (a forgotten job read back)
 * live and die alone.
 */
#include <criterion/criterion.h>

#include "job_fixture.h"

TestSuite(jobs_forget, .init = job_fixture_setup, .fini = job_fixture_teardown);

/* Ends a running job: its one task exits with code. */
static void end(struct sched_job *job, int32_t code, uint64_t at)
{
    cr_assert(sched_job_task_ended(job, 0, SCHED_TASK_EXITED, code, 0, at));
    cr_assert(sched_job_finished(job));
}

static bool all(void *data, const struct sched_job *job)
{
    (void)data;
    (void)job;
    return true;
}

/* Forgets the jobs whose ids are listed (0-terminated). */
static bool listed(void *data, const struct sched_job *job)
{
    for (const uint64_t *id = data; *id != 0; id++) {
        if (*id == job->id)
            return true;
    }
    return false;
}

static void expect_ids(const uint64_t *want, size_t n)
{
    cr_assert_eq(sched_jobs_count(jobs), n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(sched_jobs_at(jobs, i)->id, want[i], "at %zu: %llu, not %llu", i,
                     (unsigned long long)sched_jobs_at(jobs, i)->id, (unsigned long long)want[i]);
        cr_assert_eq(sched_jobs_find(jobs, want[i]), sched_jobs_at(jobs, i));
    }
}

Test(jobs_forget, only_finished_jobs_go_and_the_rest_keep_id_order)
{
    struct sched_job *done1 = fixture_running(1, 1), *done3 = fixture_running(3, 1);
    uint64_t keep[] = {2, 4, 5};
    size_t at = 0;

    fixture_add(2, 0);     /* pending */
    fixture_running(4, 1); /* running */
    fixture_add(5, 0);     /* pending, then cancelled below but not listed */
    end(done1, 0, 6000);
    end(done3, 1, 6000);
    cr_assert(sched_job_cancel(sched_jobs_find(jobs, 5), 6000));
    /* forget says yes to everything: the pending and running jobs stay all the same */
    uint64_t list[] = {1, 2, 3, 4, 0};
    cr_assert_eq(sched_jobs_forget(jobs, listed, list, &at), 2);
    expect_ids(keep, 3);
    cr_assert_null(sched_jobs_find(jobs, 1));
    cr_assert_null(sched_jobs_find(jobs, 3));
    /* a job added later still goes in order and is found */
    fixture_add(9, 0);
    fixture_add(7, 0);
    uint64_t after[] = {2, 4, 5, 7, 9};
    expect_ids(after, 5);
}

Test(jobs_forget, an_index_such_as_plan_from_follows_its_job)
{
    struct sched_job *v[8];
    size_t plan_from;

    for (uint64_t id = 1; id <= 8; id++)
        v[id - 1] = fixture_running(id, 1);
    for (int i = 0; i < 5; i++) /* 1..5 ended; 6..8 run: plan_from is 5 (job 6) */
        end(v[i], 0, 6000);
    plan_from = 5;
    uint64_t list[] = {2, 4, 0};
    cr_assert_eq(sched_jobs_forget(jobs, listed, list, &plan_from), 2);
    cr_assert_eq(plan_from, 3);
    cr_assert_eq(sched_jobs_at(jobs, plan_from)->id, 6);
    for (size_t i = 0; i < plan_from; i++)
        cr_assert(sched_job_finished(sched_jobs_at(jobs, i)));
    /* the job at the index itself removed: the index names the next one kept */
    end(sched_jobs_find(jobs, 6), 0, 7000);
    uint64_t six[] = {6, 0};
    cr_assert_eq(sched_jobs_forget(jobs, listed, six, &plan_from), 1);
    cr_assert_eq(plan_from, 3);
    cr_assert_eq(sched_jobs_at(jobs, plan_from)->id, 7);
    /* at the end of the table (everything ended): stays at the end */
    end(sched_jobs_find(jobs, 7), 0, 7000);
    end(sched_jobs_find(jobs, 8), 0, 7000);
    plan_from = sched_jobs_count(jobs);
    cr_assert_eq(sched_jobs_forget(jobs, all, NULL, &plan_from), 5);
    cr_assert_eq(plan_from, 0);
    cr_assert_eq(sched_jobs_count(jobs), 0);
    cr_assert_null(sched_jobs_at(jobs, 0));
}

Test(jobs_forget, nothing_to_forget_changes_nothing)
{
    size_t at = 1;

    fixture_add(1, 0);
    fixture_running(2, 1);
    cr_assert_eq(sched_jobs_forget(jobs, all, NULL, &at), 0);
    cr_assert_eq(at, 1);
    cr_assert_eq(sched_jobs_forget(jobs, all, NULL, NULL), 0);
    uint64_t ids[] = {1, 2};
    expect_ids(ids, 2);
}

Test(jobs_forget, a_large_table_emptied_gives_memory_back_and_still_works)
{
    enum { N = 5000 };

    for (uint64_t id = 1; id <= N; id++) {
        struct sched_job *job = fixture_add(id, 0);

        sched_job_note(job, 1000, SCHED_JOB_PENDING, "submitted");
        if (id % 100 != 0)
            cr_assert(sched_job_cancel(job, 2000));
    }
    for (int round = 0; round < 3; round++) /* repeated passes: nothing more to forget */
        cr_assert_eq(sched_jobs_forget(jobs, all, NULL, NULL), round == 0 ? N - N / 100 : 0);
    cr_assert_eq(sched_jobs_count(jobs), N / 100);
    for (uint64_t id = 100; id <= N; id += 100)
        cr_assert_not_null(sched_jobs_find(jobs, id));
    cr_assert_null(sched_jobs_find(jobs, 150));
    for (uint64_t id = N + 1; id <= N + 200; id++) /* grows again from the smaller array */
        fixture_add(id, 0);
    cr_assert_eq(sched_jobs_count(jobs), N / 100 + 200);
    cr_assert_eq(sched_jobs_at(jobs, N / 100)->id, N + 1);
}

Test(jobs_forget, a_detached_job_is_in_no_table)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    job = sched_job_detached_new(42, spec, 1234);
    cr_assert_not_null(job);
    cr_assert_eq(job->id, 42);
    cr_assert_eq(job->submit_ms, 1234);
    cr_assert_eq(job->state, SCHED_JOB_PENDING);
    cr_assert_null(job->table);
    cr_assert_eq(sched_job_note(job, 1, SCHED_JOB_COMPLETED, "done"), 0);
    cr_assert_null(sched_jobs_find(jobs, 42));
    sched_job_detached_free(job);
    sched_job_detached_free(NULL);
}
