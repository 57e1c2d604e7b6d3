/*
 * test_planner_resv.c: advance reservations in the planning pass (planner.h): a job that
 * names one waits for its start and then runs on its nodes only; other jobs keep off its
 * nodes unless their time limits end them before it starts; a job naming one that is gone
 * waits; the pass says when it must run again (the next start or end). A FLEX reservation's
 * jobs start before it and use nodes outside it as well as its own, its own first. A
 * MAGNETIC one, once started, draws in the jobs naming none that it lets in.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "scheduler/planner.h"

static struct sched_cluster *cluster;
static struct sched_jobs *jobs;
static struct sched_plan_out out;
static uint64_t n1_mask[1] = {UINT64_C(1) << 1}; /* the reservation holds node n1 */
static struct sched_planner_resv resv[2];
static struct sched_planner_hooks hooks;

#define T0 1000000000ull /* now, wall ms */

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
    memset(&out, 0, sizeof(out));
    /* "maint" holds n1 from T0 + 1 h to T0 + 2 h. */
    resv[0] = (struct sched_planner_resv){
        .name = "maint", .start_ms = T0 + 3600000, .end_ms = T0 + 7200000, .nodes = n1_mask};
    hooks = (struct sched_planner_hooks){.resv = resv, .nresv = 1};
}

static void teardown(void)
{
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
    sched_cluster_free(cluster);
}

TestSuite(planner_resv, .init = setup, .fini = teardown);

static struct sched_job *add(uint64_t id, uint32_t gpus, uint64_t limit_s, const char *resv_name)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->gpus_per_node = gpus;
    spec->time_limit_s = limit_s;
    if (resv_name != NULL)
        cr_assert_not_null(spec->reservation = strdup(resv_name));
    job = sched_jobs_add(jobs, id, spec, 1000);
    cr_assert_not_null(job);
    return job;
}

static const struct sched_verdict *verdict_of(uint64_t id)
{
    for (size_t i = 0; i < out.n; i++) {
        if (out.jobs[i]->id == id)
            return &out.verdicts[i];
    }
    return NULL;
}

static uint32_t node_of(uint64_t id)
{
    const struct sched_verdict *v = verdict_of(id);

    cr_assert_not_null(v);
    cr_assert(v->start, "job %llu starts", (unsigned long long)id);
    return v->alloc.nodes[0].node;
}

static void pass(uint64_t now_ms)
{
    size_t from = 0;

    sched_plan_out_release(&out);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, now_ms, &out), 0);
}

Test(planner_resv, a_job_in_a_reservation_waits_for_its_start_then_runs_on_its_nodes)
{
    struct sched_job *in = add(1, 1, 600, "maint");

    pass(T0);
    cr_assert_null(verdict_of(1), "not considered before the start");
    cr_assert_str_eq(in->reason, "Reservation");
    cr_assert_eq(out.wake_ms, T0 + 3600000, "the pass runs again when it starts");
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1, "on the reservation's node, though n0 is free and first");
    cr_assert_eq(out.wake_ms, T0 + 7200000, "and again when it ends");
}

Test(planner_resv, other_jobs_use_its_nodes_only_if_they_end_before_it_starts)
{
    add(1, 4, 1800, NULL);     /* 30 min: ends before the start */
    add(2, 4, 1800, NULL);     /* so may this one, on n1 */
    add(3, 4, 2 * 3600, NULL); /* 2 h: would run into it */
    pass(T0);
    cr_assert(verdict_of(1)->start);
    cr_assert(verdict_of(2)->start, "both nodes are usable for 30 minutes");
    cr_assert_not(verdict_of(3)->start);
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
    sched_cluster_free(cluster);
    setup();
    add(3, 4, 2 * 3600, NULL);
    add(4, 4, GS_DURATION_INFINITE, NULL); /* no limit: it would never end before */
    add(5, 4, GS_DURATION_INFINITE, NULL);
    pass(T0);
    cr_assert_eq(node_of(3), 0);
    cr_assert_not(verdict_of(4)->start, "n1 is kept for the reservation");
    cr_assert_not(verdict_of(5)->start);
}

Test(planner_resv, its_nodes_are_free_for_all_once_it_has_ended)
{
    add(1, 4, GS_DURATION_INFINITE, NULL);
    add(2, 4, GS_DURATION_INFINITE, NULL);
    pass(T0 + 7200000);
    cr_assert(verdict_of(1)->start);
    cr_assert(verdict_of(2)->start, "the reservation has ended");
    cr_assert_eq(out.wake_ms, 0, "nothing left to wake for");
}

Test(planner_resv, a_job_in_a_reservation_that_is_gone_waits)
{
    struct sched_job *job = add(1, 1, 60, "nosuch");

    pass(T0);
    cr_assert_null(verdict_of(1));
    cr_assert_str_eq(job->reason, "ReservationDeleted");
    job = add(2, 1, 60, "maint");
    pass(T0 + 7200000);
    cr_assert_str_eq(job->reason, "ReservationDeleted", "its end has passed");
}

/* The caller's partition mask: every job may use n0 and n1 (an own mask, narrowed in place). */
static int both_nodes(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    (void)data;
    (void)spec;
    *m = (struct sched_node_masks){0};
    m->allowed = calloc(1, sizeof(*m->allowed));
    if (m->allowed == NULL)
        return -1;
    m->allowed[0] = 3;
    return 0;
}

Test(planner_resv, partition_masks_are_narrowed_too)
{
    hooks.masks = both_nodes;
    add(1, 4, GS_DURATION_INFINITE, NULL);
    add(2, 4, GS_DURATION_INFINITE, NULL);
    add(3, 1, 60, "maint");
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 0);
    cr_assert_not(verdict_of(2)->start, "n1 is the reservation's");
    cr_assert_eq(node_of(3), 1, "the reservation's job runs there");
}

Test(planner_resv, jobs_sharing_a_set_of_reservations_share_one_mask)
{
    static uint64_t n0_mask[1] = {1};

    resv[1] = (struct sched_planner_resv){
        .name = "later", .start_ms = T0 + 10 * 3600000ull, .nodes = n0_mask};
    hooks.nresv = 2;
    for (uint64_t id = 1; id <= 50; id++)
        add(id, 1, GS_DURATION_INFINITE, NULL); /* each meets both: no node is left */
    add(60, 1, 3600 * 2, NULL);                 /* meets "maint" only: n0 */
    pass(T0);
    for (uint64_t id = 1; id <= 50; id++)
        cr_assert_not(verdict_of(id)->start);
    cr_assert_eq(node_of(60), 0);
    cr_assert_eq(out.wake_ms, T0 + 3600000);
}

/* A reservation of GPUs 0 and 1 of n1 (not the whole node), from T0 + 1 h to T0 + 2 h. */
static uint64_t gpus01_on_n1[3] = {0, 0x3, 0};

Test(planner_resv, a_gpu_reservation_keeps_its_gpus_and_lends_the_rest)
{
    resv[0].gpus = gpus01_on_n1;
    add(1, 4, GS_DURATION_INFINITE, NULL); /* would need all of n1: n0 */
    add(2, 4, GS_DURATION_INFINITE, NULL); /* no node has 4 GPUs it may use now */
    add(3, 2, GS_DURATION_INFINITE, NULL); /* n1's GPUs 2 and 3 */
    add(4, 2, 60, "maint");                /* waits for the start */
    pass(T0);
    cr_assert_eq(node_of(1), 0);
    cr_assert_not(verdict_of(2)->start, "n1 lends only GPUs 2 and 3 to a job that meets it");
    cr_assert_eq(node_of(3), 1);
    cr_assert_eq(verdict_of(3)->alloc.nodes[0].gpus, 0xc, "not the reserved GPUs 0 and 1");
    cr_assert_null(verdict_of(4));
    cr_assert_str_eq(sched_jobs_find(jobs, 4)->reason, "Reservation");
}

Test(planner_resv, a_job_in_a_gpu_reservation_gets_its_gpus)
{
    resv[0].gpus = gpus01_on_n1;
    add(1, 2, 60, "maint");
    add(2, 1, 60, "maint");
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1);
    cr_assert_eq(verdict_of(1)->alloc.nodes[0].gpus, 0x3, "the reservation's GPUs");
    cr_assert_not(verdict_of(2)->start, "the reservation's 2 GPUs are taken");
}

Test(planner_resv, a_short_job_may_use_reserved_gpus_before_the_start)
{
    resv[0].gpus = gpus01_on_n1;
    add(1, 4, GS_DURATION_INFINITE, NULL);
    add(2, 4, 600, NULL); /* ends before the reservation starts: n1 whole */
    pass(T0);
    cr_assert_eq(node_of(1), 0);
    cr_assert_eq(node_of(2), 1);
}

/* Past 64 reservations a job's sets no longer fit a word: its masks are its own. */
Test(planner_resv, more_than_64_reservations_still_keep_their_nodes)
{
    static struct sched_planner_resv many[70];
    static char names[70][8];

    for (int i = 0; i < 70; i++) { /* one after another on n1, an hour each */
        snprintf(names[i], sizeof(names[i]), "r%d", i);
        many[i] = (struct sched_planner_resv){.name = names[i],
                                              .start_ms = T0 + (uint64_t)(i + 1) * 3600000,
                                              .end_ms = T0 + (uint64_t)(i + 2) * 3600000,
                                              .nodes = n1_mask,
                                              .gpus = i % 2 ? gpus01_on_n1 : NULL};
    }
    hooks = (struct sched_planner_hooks){.resv = many, .nresv = 70};
    add(1, 4, GS_DURATION_INFINITE, NULL); /* meets every one: n0 */
    add(2, 4, GS_DURATION_INFINITE, NULL); /* n1 is kept: waits */
    add(3, 2, 60, "r68");                  /* waits for its start */
    pass(T0);
    cr_assert_eq(node_of(1), 0);
    cr_assert_not(verdict_of(2)->start);
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Reservation");
    add(4, 2, GS_DURATION_INFINITE, NULL); /* at r68's start: still meets r69 (GPUs 0, 1) */
    pass(T0 + 69 * 3600000ull);
    cr_assert_eq(node_of(3), 1, "in r68, on n1");
    cr_assert_not(verdict_of(2)->start, "whole-node r68 keeps n1 from the 4-GPU job");
}

Test(planner_resv, a_flex_reservations_jobs_start_early_and_outside_it_too)
{
    resv[0].flex = true;
    add(1, 4, 7200, "maint"); /* before its start: its own n1 */
    add(2, 4, 7200, "maint"); /* n0, outside it */
    add(3, 4, 7200, NULL);    /* would run into it: keeps off n1, and n0 is taken */
    pass(T0);
    cr_assert_eq(node_of(1), 1, "a FLEX job need not wait for the start");
    cr_assert_eq(node_of(2), 0, "and may use nodes outside it");
    cr_assert_not(verdict_of(3)->start, "other jobs still keep off n1");
}

Test(planner_resv, a_flex_reservations_jobs_go_to_its_nodes_first)
{
    resv[0].flex = true;
    add(1, 1, 60, "maint");
    add(2, 1, 60, NULL);
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1, "its own n1, though n0 ranks first by index");
    cr_assert_eq(node_of(2), 0, "a job in none keeps off n1");
}

/* ANY_NODES: its jobs wait for its start, then run on its nodes first and on others too. */
Test(planner_resv, an_any_nodes_reservations_jobs_wait_for_it_then_run_anywhere)
{
    resv[0].any_nodes = true;
    add(1, 4, 60, "maint");
    pass(T0);
    cr_assert_null(verdict_of(1), "not before its start, unlike FLEX");
    add(2, 4, 60, "maint");
    add(3, 4, 60, NULL);
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1, "its own n1 first");
    cr_assert_eq(node_of(2), 0, "then n0, outside it");
    cr_assert_not(verdict_of(3)->start, "a job in none still keeps off n1");
}

/* Licenses and no nodes: its jobs run where a job in none would, and keep off no node. */
Test(planner_resv, a_reservation_of_licenses_alone_keeps_no_node)
{
    static const uint64_t none[1] = {0};

    resv[0].nodes = none;
    resv[0].any_nodes = resv[0].nodeless = true;
    add(1, 4, 7200, "maint");
    add(2, 4, 7200, NULL);
    add(3, 4, 7200, NULL);
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 0);
    cr_assert(verdict_of(2)->start && verdict_of(2)->alloc.nodes[0].node == 1,
              "n1 is kept by no reservation");
    cr_assert_not(verdict_of(3)->start, "both nodes taken");
}

static const char *const alice_only[] = {"alice"};
static const char *const physics_only[] = {"physics"};

/* Makes "maint" MAGNETIC, letting in one user or one account. */
static void magnetic_for(const char *const *user, const char *const *account)
{
    resv[0].magnetic = true;
    resv[0].users = user;
    resv[0].nusers = user != NULL;
    resv[0].accounts = account;
    resv[0].naccounts = account != NULL;
}

static struct sched_job *add_as(uint64_t id, uint32_t gpus, const char *user, const char *account)
{
    struct sched_job *job = add(id, gpus, GS_DURATION_INFINITE, NULL);

    snprintf(job->user, sizeof(job->user), "%s", user);
    if (account != NULL)
        cr_assert_not_null(job->spec->account = strdup(account));
    return job;
}

Test(planner_resv, a_magnetic_reservation_draws_in_the_jobs_it_lets_in_once_started)
{
    magnetic_for(alice_only, NULL);
    add_as(1, 1, "alice", NULL); /* names no reservation, runs for good */
    add_as(2, 4, "bob", NULL);
    add_as(3, 4, "bob", NULL);
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1, "alice's job goes to the reservation's n1 first");
    cr_assert_eq(node_of(2), 0, "bob's job keeps off n1");
    cr_assert_not(verdict_of(3)->start, "n1 is not bob's to use");
}

Test(planner_resv, a_magnetic_reservation_draws_nobody_in_before_its_start)
{
    magnetic_for(alice_only, NULL);
    add_as(1, 4, "alice", NULL);
    add_as(2, 4, "alice", NULL);
    pass(T0);
    cr_assert_eq(node_of(1), 0);
    cr_assert_not(verdict_of(2)->start, "a job running into its start keeps off n1 till then");
}

Test(planner_resv, a_magnetic_reservation_lets_in_by_account)
{
    magnetic_for(NULL, physics_only);
    add_as(1, 4, "bob", NULL);
    add_as(2, 4, "carol", "physics");
    add_as(3, 4, "dave", "chemistry");
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 0);
    cr_assert_eq(node_of(2), 1, "physics is let in");
    cr_assert_not(verdict_of(3)->start);
}

Test(planner_resv, a_magnetic_gpu_reservation_lends_its_gpus_to_those_it_lets_in)
{
    resv[0].gpus = gpus01_on_n1;
    magnetic_for(alice_only, NULL);
    add_as(1, 4, "bob", NULL);   /* n0: bob may not use n1's GPUs 0 and 1 */
    add_as(2, 4, "alice", NULL); /* all of n1, the reserved GPUs too */
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 0);
    cr_assert_eq(node_of(2), 1);
    cr_assert_eq(verdict_of(2)->alloc.nodes[0].gpus, 0xf);
}

/* A reservation of GPUs 2 and 3 of n1: a job choosing freely takes 0 and 1 first. */
static uint64_t gpus23_on_n1[3] = {0, 0xc, 0};

Test(planner_resv, jobs_drawn_into_a_gpu_reservation_get_its_gpus_first)
{
    resv[0].gpus = gpus23_on_n1;
    magnetic_for(alice_only, NULL);
    add_as(1, 2, "alice", NULL);
    add_as(2, 1, "bob", NULL);
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1);
    cr_assert_eq(verdict_of(1)->alloc.nodes[0].gpus, 0xc, "the reservation's GPUs 2 and 3");
    cr_assert_eq(node_of(2), 1, "bob's job fits best beside it");
    cr_assert_eq(verdict_of(2)->alloc.nodes[0].gpus & 0xc, 0, "on GPU 0 or 1, not the reserved");
}

Test(planner_resv, a_flex_jobs_gpus_are_its_reservations_where_they_are_enough)
{
    resv[0].gpus = gpus23_on_n1;
    resv[0].flex = true;
    add(1, 2, 60, "maint");
    add(2, 4, 60, "maint"); /* more than it keeps: n0, any GPUs */
    pass(T0 + 3600000);
    cr_assert_eq(node_of(1), 1);
    cr_assert_eq(verdict_of(1)->alloc.nodes[0].gpus, 0xc);
    cr_assert_eq(node_of(2), 0);
}
