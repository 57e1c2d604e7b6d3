/*
 * job_fixture.c: the job table the job tests share (see job_fixture.h).
 */
#include "job_fixture.h"

#include <criterion/criterion.h>

struct sched_jobs *jobs;
struct sched_alloc one_node;

void job_fixture_setup(void)
{
    jobs = sched_jobs_new(NULL);
    cr_assert_not_null(jobs);
    sched_alloc_init(&one_node);
    cr_assert_eq(sched_alloc_copy(&one_node, &(struct sched_alloc){.nnodes = 0}), 0);
}

void job_fixture_teardown(void)
{
    sched_alloc_release(&one_node);
    sched_jobs_free(jobs);
}

struct sched_job *fixture_add(uint64_t id, uint32_t max_restarts)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->max_restarts = max_restarts;
    job = sched_jobs_add(jobs, id, spec, 1000 + id);
    cr_assert_not_null(job);
    return job;
}

struct sched_job *fixture_running(uint64_t id, uint32_t ntasks)
{
    struct sched_job *job = fixture_add(id, 0);

    cr_assert_eq(sched_job_start(job, &one_node, ntasks, 5000), 0);
    cr_assert_eq(job->state, SCHED_JOB_RUNNING);
    return job;
}
