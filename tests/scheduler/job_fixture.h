/*
 * job_fixture.h: what the tests of the job table share (test_jobs.c, test_job_kv.c): a
 * table without a cluster, made before each test and freed after it (job_fixture_setup and
 * job_fixture_teardown as the suite's .init and .fini), an empty one-node allocation to
 * start jobs on, and jobs added to it or started in it, asserting on the way.
 */
#ifndef TESTS_SCHEDULER_JOB_FIXTURE_H
#define TESTS_SCHEDULER_JOB_FIXTURE_H

#include <stdint.h>

#include "scheduler/jobs.h"

extern struct sched_jobs *jobs;
extern struct sched_alloc one_node;

void job_fixture_setup(void);
void job_fixture_teardown(void);
/* A PENDING job id with an empty spec allowing max_restarts. */
struct sched_job *fixture_add(uint64_t id, uint32_t max_restarts);
/* A job id started on one_node with ntasks tasks (no restarts allowed). */
struct sched_job *fixture_running(uint64_t id, uint32_t ntasks);

#endif
