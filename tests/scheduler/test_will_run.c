/*
 * test_will_run.c: sched_planner_will_run, the planner's answer to sbatch --test-only:
 * when and where a job not in the table would start if it were submitted now, around the
 * running jobs' time limits and the reservations of the pending jobs ahead of it; why not
 * when it would wait for something else; and that asking changes nothing (the cluster's
 * free resources, the table's reasons and estimates).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "scheduler/planner.h"

static struct sched_cluster *cluster;
static struct sched_jobs *jobs;
static struct sched_job *draft;
static struct sched_will_run w;

static void setup(void)
{
    struct sched_node_info n0 = {.name = "n0", .ngpus = 4, .ncores = 16, .mem_mib = 1024};
    struct sched_node_info n1 = {.name = "n1", .ngpus = 4, .ncores = 16, .mem_mib = 1024};

    cluster = sched_cluster_new();
    cr_assert_not_null(cluster);
    cr_assert_eq(sched_cluster_add_node(cluster, &n0), 0);
    cr_assert_eq(sched_cluster_add_node(cluster, &n1), 1);
    jobs = sched_jobs_new(cluster);
    cr_assert_not_null(jobs);
    memset(&w, 0, sizeof(w));
    draft = NULL;
}

static void teardown(void)
{
    sched_will_run_release(&w);
    sched_job_detached_free(draft);
    sched_jobs_free(jobs);
    sched_cluster_free(cluster);
}

TestSuite(will_run, .init = setup, .fini = teardown);

static struct gs_jobspec *spec_of(uint32_t gpus, int32_t priority, uint64_t limit_s)
{
    struct gs_jobspec *spec = gs_jobspec_new();

    cr_assert_not_null(spec);
    spec->gpus_per_node = gpus;
    spec->cpus_per_task = 2;
    spec->priority = priority;
    spec->time_limit_s = limit_s;
    return spec;
}

static struct sched_job *add(uint64_t id, uint32_t gpus, int32_t priority, uint64_t limit_s)
{
    struct sched_job *job = sched_jobs_add(jobs, id, spec_of(gpus, priority, limit_s), 1000);

    cr_assert_not_null(job);
    return job;
}

/* The job sbatch --test-only would send, numbered after every job of the table. */
static void make_draft(uint32_t gpus, int32_t priority, uint64_t limit_s)
{
    draft = sched_job_detached_new(1000, spec_of(gpus, priority, limit_s), 20000);
    cr_assert_not_null(draft);
}

/* One real pass at now_ms, its starts started, as the daemon's engine does. */
static void pass(uint64_t now_ms, const struct sched_planner_hooks *hooks)
{
    struct sched_plan_out out;
    size_t from = 0;

    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, hooks, now_ms, &out), 0);
    for (size_t i = 0; i < out.n; i++) {
        if (out.verdicts[i].start)
            cr_assert_eq(sched_job_start(out.jobs[i], &out.verdicts[i].alloc,
                                         gs_jobspec_tasks_per_node(out.jobs[i]->spec), now_ms),
                         0);
    }
    sched_plan_out_release(&out);
}

static int ask(uint64_t now_ms, const struct sched_planner_hooks *hooks)
{
    return sched_planner_will_run(jobs, 0, cluster, hooks, now_ms, draft, &w);
}

Test(will_run, on_a_free_node_it_would_start_now_and_nothing_is_taken)
{
    make_draft(2, 0, 600);
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert(w.now);
    cr_assert_eq(w.start_ms, 30000);
    cr_assert_eq(w.nnodes, 1);
    cr_assert_eq(w.cpus, 2, "one task of 2 CPUs");
    cr_assert_str_empty(w.reason);
    for (uint32_t n = 0; n < 2; n++)
        cr_assert_eq(sched_cluster_free_gpus(cluster, n), 4, "the answer took nothing");
}

Test(will_run, waits_for_the_running_limits_and_the_reservations_ahead_of_it)
{
    add(1, 4, 9, 3600);
    add(2, 4, 9, 7200);
    pass(10000, NULL); /* jobs 1 and 2 take both nodes */
    add(3, 4, 5, 7200);
    pass(20000, NULL);
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Resources");
    cr_assert_eq(sched_jobs_find(jobs, 3)->expected_start_ms, (10 + 3600) * 1000);

    make_draft(4, 0, 3600); /* behind job 3: job 1's node is job 3's from when it frees */
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_not(w.now);
    cr_assert_eq(w.start_ms, (10 + 7200) * 1000, "when job 2's limit ends");
    cr_assert_eq(w.nnodes, 1);
    cr_assert_str_eq(sched_cluster_node_name(cluster, w.nodes[0]), "n1");
    cr_assert_eq(w.cpus, 2);
    sched_will_run_release(&w);

    draft->spec->priority = 7; /* ahead of job 3 now: job 1's node is its own */
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_eq(w.start_ms, (10 + 3600) * 1000);
    cr_assert_str_eq(sched_cluster_node_name(cluster, w.nodes[0]), "n0");

    /* Asking wrote nothing into the table's jobs. */
    cr_assert_eq(sched_jobs_find(jobs, 3)->expected_start_ms, (10 + 3600) * 1000);
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Resources");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 0);
}

Test(will_run, a_short_job_backfills_without_delaying_the_job_ahead)
{
    add(1, 4, 9, 3600);
    add(2, 2, 9, 7200);
    pass(10000, NULL); /* n0 full, n1 has 2 GPUs free */
    add(3, 4, 5, 3600);
    pass(20000, NULL); /* job 3 holds n0 from 3610 s */

    make_draft(2, 0, 600);
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert(w.now, "n1's free half delays no one");
    cr_assert_str_eq(sched_cluster_node_name(cluster, w.nodes[0]), "n1");
}

Test(will_run, says_why_when_it_would_wait_for_something_else)
{
    struct gs_dep dep = {.type = GS_DEP_AFTEROK, .job_id = 1};

    add(1, 1, 0, 3600);
    pass(10000, NULL);

    make_draft(1, 0, 600);
    draft->held = true;
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_str_eq(w.reason, "Held");
    cr_assert_eq(w.start_ms, 0);
    cr_assert_null(w.nodes);

    draft->held = false;
    draft->spec->deps = &dep;
    draft->spec->ndeps = 1;
    cr_assert_eq(ask(30000, NULL), 0);
    draft->spec->deps = NULL; /* not the spec's to free */
    draft->spec->ndeps = 0;
    cr_assert_str_eq(w.reason, "Dependency");
    cr_assert_eq(w.start_ms, 0);

    draft->spec->deadline_ms = 30000 + 60 * 1000; /* a 600 s job cannot end by then */
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert(strstr(w.reason, "DeadLine") == w.reason, "%s", w.reason);
    cr_assert_eq(w.start_ms, 0);
}

Test(will_run, its_begin_time_is_the_floor)
{
    make_draft(1, 0, 600);
    draft->spec->begin_ms = 500000;
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_not(w.now, "it fits now, but --begin holds it");
    cr_assert_eq(w.start_ms, 500000);
    cr_assert_eq(w.nnodes, 1);
    cr_assert_eq(draft->spec->begin_ms, 500000, "the spec is given back as it came");
}

Test(will_run, no_time_when_what_it_needs_has_no_limit)
{
    add(1, 4, 0, GS_DURATION_INFINITE);
    add(2, 4, 0, GS_DURATION_INFINITE);
    pass(10000, NULL);

    make_draft(4, 0, 600);
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_eq(w.start_ms, 0);
    cr_assert(strstr(w.reason, "no start can be predicted") != NULL, "%s", w.reason);
}

Test(will_run, past_the_estimate_depth_it_says_so)
{
    add(1, 4, 9, 3600);
    add(2, 4, 9, 3600);
    pass(10000, NULL);
    for (uint64_t id = 3; id < 3 + SCHED_WILL_RUN_DEPTH + 2; id++)
        add(id, 4, 5, 60);
    pass(20000, NULL);

    make_draft(4, 0, 600);
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_eq(w.start_ms, 0);
    cr_assert(strstr(w.reason, "66 jobs go before it") != NULL, "%s", w.reason);

    draft->spec->priority = 6; /* ahead of them all */
    cr_assert_eq(ask(30000, NULL), 0);
    cr_assert_eq(w.start_ms, (10 + 3600) * 1000);
}

Test(will_run, a_reservation_not_started_yet_is_its_start)
{
    uint64_t nodes[1] = {1}; /* n0 */
    struct sched_planner_resv r = {.name = "maint", .start_ms = 900000, .nodes = nodes};
    struct sched_planner_hooks hooks = {.resv = &r, .nresv = 1};

    make_draft(1, 0, 600);
    draft->spec->reservation = strdup("maint");
    cr_assert_not_null(draft->spec->reservation);
    cr_assert_eq(ask(30000, &hooks), 0);
    cr_assert_eq(w.start_ms, 900000);
    cr_assert_str_eq(w.reason, "Reservation: no sooner than maint starts");

    cr_assert_eq(ask(900000, &hooks), 0);
    cr_assert(w.now, "it has started: its node is free");
    cr_assert_str_eq(sched_cluster_node_name(cluster, w.nodes[0]), "n0");
}

/* --- preemption ---------------------------------------------------------------------------- */

/* A job of a higher tier than the running ones would start now by preempting the cheapest
 * (the later start: less lost work), on its node; one of their own tier waits as before. */
Test(will_run, a_higher_tier_would_start_now_by_preempting)
{
    static struct gs_config_qos qos[2] = {{.name = "low", .max_wall_s = UINT64_MAX},
                                          {.name = "high", .tier = 1, .max_wall_s = UINT64_MAX}};
    struct gs_config cfg = {.qos = qos, .nqos = 2};
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_job *old = add(1, 4, 0, 3600), *young = add(2, 4, 0, 3600);

    old->spec->qos = strdup("low");
    young->spec->qos = strdup("low");
    pass(10000, &hooks);
    young->start_ms = 20000; /* started later: less lost work */
    make_draft(4, 0, 600);
    draft->spec->qos = strdup("low");
    cr_assert_eq(ask(30000, &hooks), 0);
    cr_assert_not(w.now, "its own tier: it waits");
    cr_assert_eq(w.npreempts, 0);
    sched_will_run_release(&w);
    free(draft->spec->qos);
    draft->spec->qos = strdup("high");
    cr_assert_eq(ask(30000, &hooks), 0);
    cr_assert(w.now);
    cr_assert_eq(w.start_ms, 30000);
    cr_assert_eq(w.npreempts, 1);
    cr_assert_eq(w.preempts[0], 2);
    cr_assert_eq(w.nnodes, 1);
    cr_assert_eq(w.nodes[0], young->alloc.nodes[0].node);
    cr_assert_eq(young->preempted_by, 0, "asking marked no victim");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0) + sched_cluster_free_gpus(cluster, 1), 0);
}
