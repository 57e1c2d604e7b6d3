/*
 * test_plan.c: one scheduling pass: priority then submit order, the first blocked job's
 * reservation, and EASY backfill that never delays it (short jobs, jobs on other nodes,
 * simulation for the rest).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "scheduler/plan.h"

#define MAXJ 8

static struct sched_cluster *cluster;
static struct sched_pending pending[MAXJ];
static struct sched_verdict verdicts[MAXJ];
static struct sched_running running[MAXJ];
static struct sched_alloc running_alloc[MAXJ];
static size_t npending, nrunning;
static struct sched_reservation res;

static void setup(void)
{
    cluster = sched_cluster_new();
    npending = nrunning = 0;
    sched_verdicts_init(verdicts, MAXJ);
    for (int i = 0; i < MAXJ; i++)
        sched_alloc_init(&running_alloc[i]);
}

static void teardown(void)
{
    sched_verdicts_release(verdicts, MAXJ);
    for (int i = 0; i < MAXJ; i++)
        sched_alloc_release(&running_alloc[i]);
    sched_cluster_free(cluster);
}

TestSuite(plan, .init = setup, .fini = teardown);

static void node(const char *name, uint32_t ngpus)
{
    struct sched_node_info info = {.name = name, .ngpus = ngpus, .ncores = 64, .mem_mib = 1024};

    cr_assert_geq(sched_cluster_add_node(cluster, &info), 0);
}

static struct sched_req gpus(uint32_t nodes, uint32_t per_node)
{
    return (struct sched_req){.nodes = nodes, .gpus_per_node = per_node, .cores_per_node = 1};
}

/* A job already running since before the pass, ending at end_s. */
static void run(uint64_t id, struct sched_req req, uint64_t end_s)
{
    cr_assert_eq(sched_cluster_place(cluster, &req, NULL, &running_alloc[nrunning]), 0);
    sched_cluster_take(cluster, &running_alloc[nrunning]);
    running[nrunning] =
        (struct sched_running){.job_id = id, .end_s = end_s, .alloc = &running_alloc[nrunning]};
    nrunning++;
}

static void submit(uint64_t id, int32_t prio, struct sched_req req, uint64_t limit_s)
{
    pending[npending] = (struct sched_pending){
        .job_id = id, .priority = prio, .submit_seq = id, .time_limit_s = limit_s, .req = req};
    npending++;
}

/* A pass at now, on fresh verdicts (a job started by an earlier pass is given back first). */
static void plan_at(uint64_t now)
{
    sched_verdicts_release(verdicts, MAXJ);
    sched_verdicts_init(verdicts, MAXJ);
    cr_assert_eq(sched_plan(cluster, pending, npending, running, nrunning, now, verdicts, &res), 0);
}

static const struct sched_verdict *of(uint64_t id)
{
    for (size_t i = 0; i < npending; i++) {
        if (pending[i].job_id == id)
            return &verdicts[i];
    }
    cr_assert_fail("no job %llu", (unsigned long long)id);
    return NULL;
}

Test(plan, higher_priority_first_then_submit_order)
{
    node("n1", 8);
    submit(1, 0, gpus(1, 8), 100);
    submit(2, 5, gpus(1, 8), 100);
    submit(3, 5, gpus(1, 8), 100);
    plan_at(0);
    cr_assert(of(2)->start);
    cr_assert_not(of(3)->start);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(3)->reason, SCHED_REASON_RESOURCES);
    cr_assert_eq(res.job_id, 3, "the next in order holds the reservation");
    cr_assert_eq(res.start_s, 100, "when job 2's time limit ends");
}

Test(plan, everything_that_fits_starts_in_one_pass)
{
    node("n1", 8);
    node("n2", 8);
    for (uint64_t id = 1; id <= 4; id++)
        submit(id, 0, gpus(1, 4), 100);
    plan_at(0);
    for (uint64_t id = 1; id <= 4; id++) {
        cr_assert(of(id)->start, "job %llu", (unsigned long long)id);
        cr_assert_not(of(id)->backfilled);
    }
    cr_assert_eq(res.job_id, 0);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0) + sched_cluster_free_gpus(cluster, 1), 0);
}

Test(plan, short_job_backfills_ahead_of_blocked_job)
{
    node("n1", 8);
    run(100, gpus(1, 4), 100);
    submit(1, 10, gpus(1, 8), 1000); /* blocked until t=100 */
    submit(2, 0, gpus(1, 2), 50);    /* ends at 50: cannot delay job 1 */
    plan_at(0);
    cr_assert_not(of(1)->start);
    cr_assert_eq(res.job_id, 1);
    cr_assert_eq(res.start_s, 100);
    cr_assert(of(2)->start);
    cr_assert(of(2)->backfilled);
}

Test(plan, long_job_that_would_delay_the_reservation_waits)
{
    node("n1", 8);
    run(100, gpus(1, 4), 100);
    submit(1, 10, gpus(1, 8), 1000);
    submit(2, 0, gpus(1, 2), 500); /* would hold 2 GPUs past t=100 */
    plan_at(0);
    cr_assert_not(of(2)->start);
    cr_assert_eq(of(2)->reason, SCHED_REASON_PRIORITY);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 4, "nothing taken for job 2");
}

Test(plan, long_job_backfills_onto_nodes_outside_the_reservation)
{
    node("n1", 8);
    node("n2", 4);
    run(100, gpus(1, 6), 100);       /* only n1 can hold it */
    submit(1, 10, gpus(1, 8), 1000); /* reserved: n1 at t=100 */
    submit(2, 0, gpus(1, 2), 500);   /* best fit is n1's last 2 GPUs: that would delay job 1 */
    plan_at(0);
    cr_assert_not(of(1)->start);
    cr_assert_eq(res.start_s, 100);
    cr_assert(of(2)->start, "job 2 fits on the node job 1 does not need");
    cr_assert_eq(of(2)->alloc.nodes[0].node, 1, "job 2 runs on n2, outside the reservation");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 2, "n1 keeps its GPUs for job 1");
}

Test(plan, gang_reservation_covers_all_its_nodes)
{
    node("n1", 8);
    node("n2", 8);
    run(100, gpus(1, 8), 100);
    submit(1, 10, gpus(2, 8), 1000); /* needs both nodes, from t=100 */
    submit(2, 0, gpus(1, 8), 200);   /* would hold the free node past t=100 */
    submit(3, 0, gpus(1, 8), 60);    /* done by t=60 */
    plan_at(0);
    cr_assert_eq(res.job_id, 1);
    cr_assert_eq(res.start_s, 100);
    cr_assert_not(of(2)->start);
    cr_assert_eq(of(2)->reason, SCHED_REASON_PRIORITY);
    cr_assert(of(3)->start);
}

Test(plan, unlimited_running_jobs_leave_no_reservation_to_protect)
{
    node("n1", 8);
    run(100, gpus(1, 4), SCHED_TIME_INFINITE);
    submit(1, 10, gpus(1, 8), 1000);
    submit(2, 0, gpus(1, 4), SCHED_TIME_INFINITE);
    plan_at(0);
    cr_assert_eq(res.start_s, SCHED_TIME_INFINITE);
    cr_assert(of(2)->start, "job 1 cannot be predicted to start, so it cannot be delayed");
}

Test(plan, reservation_counts_jobs_started_in_the_same_pass)
{
    node("n1", 8);
    submit(1, 10, gpus(1, 6), 100); /* starts now, ends at 100 */
    submit(2, 9, gpus(1, 8), 100);  /* blocked until 100 */
    submit(3, 0, gpus(1, 2), 300);  /* would delay job 2 */
    plan_at(0);
    cr_assert(of(1)->start);
    cr_assert_eq(res.job_id, 2);
    cr_assert_eq(res.start_s, 100);
    cr_assert_not(of(3)->start);
}

Test(plan, reason_names_match_squeue)
{
    cr_assert_str_eq(sched_reason_name(SCHED_REASON_RESOURCES), "Resources");
    cr_assert_str_eq(sched_reason_name(SCHED_REASON_PRIORITY), "Priority");
}

/* ---- waiting for the data's nodes (scheduler.data_locality_wait) ---- */

static uint64_t data_on[4]; /* bytes of the dataset per node index */

static struct sched_req with_data(struct sched_req r)
{
    r.data_bytes = data_on;
    return r;
}

/* Job id may wait for its data's nodes until until_s. */
static void may_wait(uint64_t id, uint64_t until_s)
{
    for (size_t i = 0; i < npending; i++) {
        if (pending[i].job_id == id)
            pending[i].data_wait_until_s = until_s;
    }
}

Test(plan, a_job_waits_for_its_busy_data_node_and_lets_others_go_by)
{
    node("n1", 8); /* holds the data, busy */
    node("n2", 8);
    data_on[0] = 1000;
    data_on[1] = 0;
    run(100, gpus(1, 8), 500);
    submit(1, 10, with_data(gpus(1, 2)), 100);
    submit(2, 5, gpus(1, 2), 100);
    may_wait(1, 50);
    plan_at(0);
    cr_assert_not(of(1)->start, "it would run away from its data");
    cr_assert_eq(of(1)->reason, SCHED_REASON_DATA);
    cr_assert(of(2)->start, "the job behind it goes by");
    cr_assert_eq(res.job_id, 0, "its data's node frees after its wait: no reservation of it");
    sched_cluster_give_back(cluster, &verdicts[1].alloc);
    plan_at(49);
    cr_assert_not(of(1)->start);
    plan_at(50); /* its wait is over: it goes where it fits */
    cr_assert(of(1)->start);
    cr_assert_eq(of(1)->alloc.nodes[0].node, 1);
}

Test(plan, a_job_waiting_for_its_data_node_reserves_it_against_longer_jobs_behind)
{
    node("n1", 8); /* holds the data; 3 GPUs free until t=100 */
    node("n2", 8);
    data_on[0] = 1000;
    data_on[1] = 0;
    run(100, gpus(1, 5), 100);
    submit(1, 10, with_data(gpus(1, 8)), 1000);
    submit(2, 5, gpus(1, 1), 1000); /* the tighter fit n1 would keep job 1 off it */
    submit(3, 5, gpus(1, 1), 1000);
    submit(4, 5, gpus(1, 1), 60); /* done by t=100: may use n1 */
    may_wait(1, 300);
    plan_at(0);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(1)->reason, SCHED_REASON_DATA);
    cr_assert_eq(res.job_id, 1, "it holds the reservation, of its data's node");
    cr_assert_eq(res.start_s, 100);
    for (uint64_t id = 2; id <= 4; id++)
        cr_assert(of(id)->start, "job %llu goes by", (unsigned long long)id);
    cr_assert_eq(of(2)->alloc.nodes[0].node, 1, "job 2 would hold n1 past t=100");
    cr_assert_eq(of(3)->alloc.nodes[0].node, 1);
    cr_assert_eq(of(4)->alloc.nodes[0].node, 0, "job 4 ends first");
    /* t=100: job 100 and job 4 are done; job 1 takes its data's node. */
    for (uint64_t id = 2; id <= 4; id++)
        sched_cluster_give_back(cluster, &verdicts[id - 1].alloc);
    sched_cluster_give_back(cluster, &running_alloc[0]);
    nrunning = 0;
    plan_at(100);
    cr_assert(of(1)->start);
    cr_assert_eq(of(1)->alloc.nodes[0].node, 0);
}

Test(plan, a_job_on_its_data_node_or_without_a_wait_starts_at_once)
{
    node("n1", 8); /* holds the data, free */
    node("n2", 2); /* the tighter fit */
    data_on[0] = 1000;
    data_on[1] = 0;
    submit(1, 10, with_data(gpus(1, 2)), 100);
    plan_at(0);
    cr_assert(of(1)->start);
    cr_assert_eq(of(1)->alloc.nodes[0].node, 1, "no wait: fit before data, as before");
    sched_cluster_give_back(cluster, &verdicts[0].alloc);
    may_wait(1, 50);
    plan_at(0);
    cr_assert(of(1)->start);
    cr_assert_eq(of(1)->alloc.nodes[0].node, 0, "waiting for data: its free data node first");
}

Test(plan, nodes_that_could_never_hold_the_job_or_are_down_are_not_waited_for)
{
    node("n1", 1); /* holds the data, too small */
    node("n2", 8); /* holds more, down */
    node("n3", 8);
    data_on[0] = 1000;
    data_on[1] = 2000;
    data_on[2] = 0;
    sched_cluster_set_up(cluster, 1, false);
    submit(1, 10, with_data(gpus(1, 2)), 100);
    may_wait(1, 50);
    plan_at(0);
    cr_assert(of(1)->start);
    cr_assert_eq(of(1)->alloc.nodes[0].node, 2);
}

Test(plan, a_gang_waits_until_enough_of_its_data_nodes_are_free)
{
    node("n1", 8); /* the data's two best nodes: n1 and n2 */
    node("n2", 8);
    node("n3", 8);
    node("n4", 8);
    data_on[0] = 1000;
    data_on[1] = 900;
    data_on[2] = 100;
    data_on[3] = 0;
    run(100, gpus(1, 8), 30); /* on n1 */
    submit(1, 10, with_data(gpus(2, 8)), 100);
    may_wait(1, 50);
    plan_at(0);
    cr_assert_not(of(1)->start, "n3 and n4 hold less than n1 and n2 would");
    sched_cluster_give_back(cluster, &running_alloc[0]);
    nrunning = 0;
    plan_at(30);
    cr_assert(of(1)->start);
    uint32_t a = of(1)->alloc.nodes[0].node, b = of(1)->alloc.nodes[1].node;
    cr_assert((a == 0 && b == 1) || (a == 1 && b == 0), "on n1 and n2: %u, %u", a, b);
}

/* Job id's wait began at from_s; copies move rate bytes/s (scheduler.data_copy_rate). */
static void weigh(uint64_t id, uint64_t from_s, uint64_t rate)
{
    for (size_t i = 0; i < npending; i++) {
        if (pending[i].job_id == id) {
            pending[i].data_wait_from_s = from_s;
            pending[i].data_copy_rate = rate;
        }
    }
}

Test(plan, a_job_waits_for_its_data_no_longer_than_copying_what_it_lacks_would_take)
{
    node("n1", 8); /* holds all the data, busy until t=500 */
    node("n2", 8); /* none */
    node("n3", 8); /* 600 of the 1000 bytes */
    data_on[0] = 1000;
    data_on[1] = 0;
    data_on[2] = 600;
    run(100, gpus(1, 8), 500);
    submit(1, 10, with_data(gpus(1, 2)), 100);
    may_wait(1, 300);
    weigh(1, 0, 100); /* 100 bytes/s: the 400 bytes n3 lacks take 4 s */
    plan_at(3);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(1)->reason, SCHED_REASON_DATA);
    cr_assert_eq(of(1)->wake_s, 4, "plan again when the copy would have been done");
    plan_at(4);
    cr_assert(of(1)->start, "it has waited as long as the copy takes");
    cr_assert_eq(of(1)->alloc.nodes[0].node, 2, "on n3, which lacks the least");
    sched_cluster_give_back(cluster, &verdicts[0].alloc);
    data_on[2] = 0; /* now all 1000 bytes are to copy: 10 s */
    plan_at(9);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(1)->wake_s, 10);
    plan_at(10);
    cr_assert(of(1)->start);
    sched_cluster_give_back(cluster, &verdicts[0].alloc);
    weigh(1, 0, 1); /* a copy of 1,000 s: the set wait ends first */
    plan_at(299);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(1)->wake_s, 300);
    plan_at(300);
    cr_assert(of(1)->start);
}

Test(plan, data_wait_reason_name)
{
    cr_assert_str_eq(sched_reason_name(SCHED_REASON_DATA), "DataNodesBusy");
}

/* plan_at with backfill depth depth (sched_plan_with, no gate). */
static void plan_deep(uint64_t now, uint32_t depth)
{
    struct sched_plan_opts opts = {.depth = depth};

    sched_verdicts_release(verdicts, MAXJ);
    sched_verdicts_init(verdicts, MAXJ);
    cr_assert_eq(
        sched_plan_with(cluster, pending, npending, running, nrunning, now, &opts, verdicts, &res),
        0);
}

/*
 * n1 is busy until 100, busy GPUs of n3 until 300. Job 1 needs a whole node: its
 * reservation is n1 from 100; job 2 (gpus2 GPUs) can only have n3 from 300. Job 3 (gpus3)
 * fits now in n3's free GPUs but would hold them until 1000; job 4 (4 GPUs) ends by 200.
 */
static void blocked_pair(uint32_t busy, uint32_t gpus2, uint32_t gpus3)
{
    node("n1", 8);
    node("n3", 8);
    run(100, gpus(1, 8), 100);
    run(101, gpus(1, busy), 300);
    submit(1, 10, gpus(1, 8), 1000);
    submit(2, 9, gpus(1, gpus2), 1000);
    submit(3, 2, gpus(1, gpus3), 1000);
    submit(4, 1, gpus(1, 4), 200);
}

/* Half of n3 busy; job 2 needs all of it, job 3 the free half. */
static void two_blocked(void)
{
    blocked_pair(4, 8, 4);
}

Test(plan, easy_lets_a_job_delay_the_second_blocked_job)
{
    two_blocked();
    plan_at(0);
    cr_assert_eq(res.job_id, 1);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 0, "EASY: job 2 holds nothing");
    cr_assert(of(3)->start, "job 3 keeps off n1, so EASY starts it, on n3");
    cr_assert(of(3)->backfilled);
    cr_assert_not(of(4)->start, "n3 is full now");
}

Test(plan, conservative_backfill_keeps_every_reservation)
{
    two_blocked();
    plan_deep(0, 2);
    cr_assert_eq(res.job_id, 1, "the head is the same");
    cr_assert_eq(res.start_s, 100);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 300, "job 2 holds n3 from when job 101 ends");
    cr_assert_eq(of(2)->nreserved, 1);
    cr_assert_eq(of(2)->reserved_nodes[0], 1, "n3");
    cr_assert_not(of(3)->start, "running to 1000 on n3 would delay job 2");
    cr_assert_eq(of(3)->reason, SCHED_REASON_PRIORITY);
    cr_assert(of(4)->start, "done by 200: it delays neither");
    cr_assert(of(4)->backfilled);
    cr_assert_eq(of(4)->alloc.nodes[0].node, 1, "on n3");
}

Test(plan, a_reservation_keeps_its_nodes_from_later_ones_over_their_limit)
{
    /* One node: job 1 reserves it from 100 to 150; job 2, needing it for 100 s, cannot
     * start at 100 (job 1 takes it then) nor fit around it: from 150. */
    node("n1", 8);
    run(100, gpus(1, 8), 100);
    submit(1, 10, gpus(1, 8), 50);
    submit(2, 9, gpus(1, 4), 100);
    submit(3, 8, gpus(1, 4), 20);
    plan_deep(0, 3);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 150, "after job 1's reservation ends");
    cr_assert_eq(of(3)->reserved_s, 150, "beside job 2, in the other half");
}

Test(plan, depth_one_is_easy)
{
    two_blocked();
    plan_deep(0, 1);
    cr_assert_eq(of(2)->reserved_s, 0);
    cr_assert(of(3)->start);
}

Test(plan, a_job_may_share_a_reserved_node_within_what_it_leaves)
{
    /* Job 2's reservation is 4 of n3's 8 GPUs from 300: a 2-GPU job running past 300 may
     * take n3's free pair now, 4 still being there for job 2 then. */
    blocked_pair(6, 4, 2);
    plan_deep(0, 2);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 300);
    cr_assert(of(3)->start, "4 of n3's GPUs are left for job 2 at 300");
    cr_assert_eq(of(3)->alloc.nodes[0].node, 1);
}

/*
 * Which reservations a later one keeps clear of changes along its walk of the future: one
 * comes in once it starts within the job's limit, and drops out once it has started (its
 * nodes are then taken, and given back at its end).
 */
Test(plan, a_reservation_is_kept_clear_of_from_when_it_starts_within_the_limit)
{
    /* Job 1 reserves n0 and n1 from 100. Job 2 (50 s) could have n0 at 60, but would run
     * into job 1's reservation then: it waits until that one ends, at 1100. */
    node("n0", 2);
    node("n1", 2);
    node("n2", 1);
    run(100, gpus(1, 2), 60);
    run(101, gpus(1, 2), 100);
    run(102, gpus(1, 1), 10);
    submit(1, 10, gpus(2, 2), 1000);
    submit(2, 9, gpus(1, 2), 50);
    plan_deep(0, 4);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 1100, "not on n0 at 60: job 1 takes it at 100");
}

Test(plan, a_reservation_no_longer_kept_clear_of_once_it_has_ended)
{
    /* Job 1 reserves all of n0 from 20 to 25; job 2 has n0 after it, at 25. */
    node("n0", 2);
    run(100, gpus(1, 1), 10);
    run(101, gpus(1, 1), 20);
    submit(1, 10, gpus(1, 2), 5);
    submit(2, 9, gpus(1, 1), 100);
    plan_deep(0, 4);
    cr_assert_eq(of(1)->reserved_s, 20);
    cr_assert_eq(of(2)->reserved_s, 25);
}

/* Nodes n0, n1 and n2 of one GPU each: n0 busy until 100, n1 until n1_end, n2 free. */
static void three_one_gpu_nodes(uint64_t n1_end)
{
    node("n0", 1);
    node("n1", 1);
    node("n2", 1);
    run(100, gpus(1, 1), 100);
    run(101, gpus(1, 1), n1_end);
}

Test(plan, a_later_reservation_counts_the_end_of_a_job_backfilled_before_it)
{
    /* Job 1 reserves all three nodes from 200. Job 2 backfills onto n2 until 50; job 3
     * then has n2 from 50, not n0 from 100: the ends of jobs started in the pass are
     * walked in time order with the running ones'. */
    three_one_gpu_nodes(200);
    submit(1, 10, gpus(3, 1), 1000);
    submit(2, 9, gpus(1, 1), 50);
    submit(3, 8, gpus(1, 1), 100);
    plan_deep(0, 4);
    cr_assert_eq(of(1)->reserved_s, 200);
    cr_assert(of(2)->start);
    cr_assert(of(2)->backfilled);
    cr_assert_eq(of(3)->reserved_s, 50);
    cr_assert_eq(of(3)->nreserved, 1);
    cr_assert_eq(of(3)->reserved_nodes[0], 2, "n2");
}

Test(plan, a_later_reservation_sees_the_nodes_of_jobs_started_since_an_earlier_one)
{
    /* Job 1 reserves all three nodes from 300; job 2 then backfills onto n2 until 250. Job
     * 3 (two nodes) has n0 from 100 but n2 only from 250. The CPU-only nodes make the
     * cluster large enough for a simulation to be undone node by node. */
    three_one_gpu_nodes(300);
    for (int i = 0; i < 12; i++) {
        char name[8];

        snprintf(name, sizeof(name), "c%d", i);
        node(name, 0);
    }
    submit(1, 10, gpus(3, 1), 1000);
    submit(2, 9, gpus(1, 1), 250);
    submit(3, 8, gpus(2, 1), 50);
    plan_deep(0, 4);
    cr_assert_eq(of(1)->reserved_s, 300);
    cr_assert(of(2)->start);
    cr_assert_eq(of(3)->reserved_s, 250);
}

Test(plan, tier_then_priority_over_its_whole_range_then_submit_order)
{
    /* Four GPUs for seven one-GPU jobs: the four first in plan order start. */
    node("n1", 4);
    submit(1, 300, gpus(1, 1), 100);
    submit(2, INT32_MAX, gpus(1, 1), 100);
    submit(3, -5, gpus(1, 1), 100);
    pending[npending - 1].tier = 1; /* before every tier-0 job, whatever its priority */
    submit(4, 300, gpus(1, 1), 100);
    submit(5, INT32_MIN, gpus(1, 1), 100);
    submit(6, 70000, gpus(1, 1), 100);
    submit(7, -2, gpus(1, 1), 100); /* its low 16 bits rank it near the front */
    plan_deep(0, 1);
    cr_assert(of(3)->start);
    cr_assert(of(2)->start);
    cr_assert(of(6)->start);
    cr_assert(of(1)->start, "submitted before job 4, at the same priority");
    cr_assert_not(of(4)->start);
    cr_assert_not(of(5)->start);
    cr_assert_not(of(7)->start);
}

/* Licenses: "a" (index 0) has 4 seats, "b" (1) has 2. */
static const uint32_t seats[] = {4, 2};
static const struct sched_license_need a1[] = {{0, 1}}, a2[] = {{0, 2}}, a3[] = {{0, 3}},
                                       a4[] = {{0, 4}}, b1[] = {{1, 1}}, b2[] = {{1, 2}},
                                       gone[] = {{2, 1}};

static void plan_lic(uint64_t now, uint32_t depth)
{
    struct sched_plan_opts opts = {.depth = depth, .license_total = seats, .nlicenses = 2};

    sched_verdicts_release(verdicts, MAXJ);
    sched_verdicts_init(verdicts, MAXJ);
    cr_assert_eq(
        sched_plan_with(cluster, pending, npending, running, nrunning, now, &opts, verdicts, &res),
        0);
}

/* The last job run or submitted names need (n of them). */
static void ran_with(const struct sched_license_need *need, uint32_t n)
{
    running[nrunning - 1].licenses = need;
    running[nrunning - 1].nlicenses = n;
}

static void needs(const struct sched_license_need *need, uint32_t n)
{
    pending[npending - 1].licenses = need;
    pending[npending - 1].nlicenses = n;
}

Test(plan, a_job_waiting_for_licenses_holds_a_reservation_and_short_jobs_use_them_meanwhile)
{
    node("n1", 8);
    run(99, gpus(1, 1), 50); /* gives a GPU back at 50, but no seat */
    run(100, gpus(1, 1), 100);
    ran_with(a2, 1); /* two seats of a free */
    submit(1, 10, gpus(1, 1), 1000);
    needs(a4, 1);
    submit(2, 5, gpus(1, 1), 50); /* back by 50, before job 1 can start */
    needs(a1, 1);
    submit(3, 4, gpus(1, 1), 200); /* would hold the last free seat past 100 */
    needs(a1, 1);
    submit(4, 3, gpus(1, 1), 200);
    needs(b1, 1);
    submit(5, 2, gpus(1, 1), 200);
    submit(6, 1, gpus(1, 1), 10);
    needs(b2, 1); /* job 4 took one of the two */
    plan_lic(0, 1);
    cr_assert_not(of(1)->start);
    cr_assert_eq(of(1)->reason, SCHED_REASON_LICENSES);
    cr_assert_eq(res.job_id, 1);
    cr_assert_eq(res.start_s, 100, "when job 100 gives its two seats back");
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert(of(2)->start && of(2)->backfilled);
    cr_assert_not(of(3)->start);
    cr_assert_eq(of(3)->reason, SCHED_REASON_PRIORITY);
    cr_assert(of(4)->start, "b is nobody's to wait for");
    cr_assert(of(5)->start);
    cr_assert_not(of(6)->start);
    cr_assert_eq(of(6)->reason, SCHED_REASON_LICENSES);
    cr_assert_str_eq(sched_reason_name(SCHED_REASON_LICENSES), "Licenses");
}

Test(plan, a_job_blocked_on_nodes_keeps_its_free_licenses_from_jobs_that_would_delay_it)
{
    node("n1", 8);
    node("n2", 2);
    run(100, gpus(1, 8), 100);
    submit(1, 10, gpus(1, 8), 1000); /* its seats are free now, its node at 100 */
    needs(a4, 1);
    submit(2, 5, gpus(1, 1), 500); /* on n2, but holding a seat of job 1's past 100 */
    needs(a1, 1);
    submit(3, 4, gpus(1, 1), 50);
    needs(a1, 1);
    plan_lic(0, 1);
    cr_assert_eq(of(1)->reason, SCHED_REASON_RESOURCES);
    cr_assert_eq(res.start_s, 100);
    cr_assert_not(of(2)->start, "it would leave job 1 three seats at 100");
    cr_assert_eq(of(2)->reason, SCHED_REASON_PRIORITY);
    cr_assert(of(3)->start, "back by 50");
}

/* Job 1 blocked on n1 (no licenses), job 2 waiting for two seats of a (one is free until
 * job 101 ends at 300), job 3 short and needing the free seat. */
static void seat_waiter_behind_a_head(void)
{
    node("n1", 8);
    node("n2", 4);
    run(100, gpus(1, 8), 100);
    run(101, gpus(1, 1), 300);
    ran_with(a3, 1);
    submit(1, 10, gpus(1, 8), 1000);
    submit(2, 9, gpus(1, 1), 1000);
    needs(a2, 1);
    submit(3, 8, gpus(1, 1), 10);
    needs(a1, 1);
}

Test(plan, past_the_depth_a_job_waiting_for_licenses_claims_them_for_the_pass)
{
    seat_waiter_behind_a_head();
    submit(4, 7, gpus(1, 1), 10);
    needs(b1, 1);
    plan_lic(0, 1);
    cr_assert_eq(res.job_id, 1);
    cr_assert_eq(of(2)->reason, SCHED_REASON_LICENSES);
    cr_assert_eq(of(2)->reserved_s, 0, "past the depth");
    cr_assert_not(of(3)->start, "job 2 claims a");
    cr_assert_eq(of(3)->reason, SCHED_REASON_LICENSES);
    cr_assert(of(4)->start);
}

Test(plan, within_the_depth_a_job_waiting_for_licenses_claims_nothing_beyond_its_reservation)
{
    seat_waiter_behind_a_head();
    plan_lic(0, 2);
    cr_assert_eq(of(2)->reason, SCHED_REASON_LICENSES);
    cr_assert_eq(of(2)->reserved_s, 300, "when job 101 gives its seats back");
    cr_assert(of(3)->start, "done by 10, long before job 2 needs the seat");
}

Test(plan, a_later_reservation_counts_the_licenses_of_the_earlier_ones)
{
    node("n1", 8);
    run(100, gpus(1, 1), 100);
    ran_with(a4, 1);
    submit(1, 10, gpus(1, 1), 100); /* every seat of a, from 100 to 200 */
    needs(a4, 1);
    submit(2, 9, gpus(1, 1), 100);
    needs(a1, 1);
    plan_lic(0, 2);
    cr_assert_eq(of(1)->reserved_s, 100);
    cr_assert_eq(of(2)->reserved_s, 200, "job 1 holds them all until 200");
}

Test(plan, licenses_held_without_a_limit_give_no_time_and_never_had_ones_claim_nothing)
{
    node("n1", 8);
    run(100, gpus(1, 1), SCHED_TIME_INFINITE);
    ran_with(a4, 1);
    submit(1, 10, gpus(1, 1), 100);
    needs(gone, 1); /* a license the pass does not know */
    submit(2, 9, gpus(1, 1), 100);
    needs(a1, 1);
    submit(3, 8, gpus(1, 2), 100);
    needs(b1, 1);
    submit(4, 7, gpus(1, 1), 100);
    needs(b1, 1);
    plan_lic(0, 4);
    cr_assert_eq(of(1)->reason, SCHED_REASON_LICENSES);
    cr_assert_eq(of(1)->reserved_s, 0);
    cr_assert_eq(of(2)->reason, SCHED_REASON_LICENSES);
    cr_assert_eq(res.job_id, 2, "the first to wait with a chance, though of no known time");
    cr_assert_eq(res.start_s, SCHED_TIME_INFINITE);
    cr_assert(of(3)->start && of(4)->start, "job 1 claims no b");
}

/* How many of license held at t: running jobs and those the pass started (until their
 * ends), and the reservations running then. */
static int64_t held_at(uint32_t license, uint64_t now, uint64_t t)
{
    int64_t held = 0;

    for (size_t i = 0; i < nrunning; i++) {
        for (uint32_t k = 0; running[i].end_s > t && k < running[i].nlicenses; k++)
            held += running[i].licenses[k].license == license ? running[i].licenses[k].count : 0;
    }
    for (size_t i = 0; i < npending; i++) {
        const struct sched_pending *j = &pending[i];
        uint64_t from = verdicts[i].start ? now : verdicts[i].reserved_s;

        if (!verdicts[i].start && verdicts[i].nreserved == 0)
            continue;
        for (uint32_t k = 0; from <= t && t < from + j->time_limit_s && k < j->nlicenses; k++)
            held += j->licenses[k].license == license ? j->licenses[k].count : 0;
    }
    return held;
}

/* A number below n from seed (a 64-bit LCG: the same draws on every run). */
static uint32_t rnd(uint64_t *seed, uint32_t n)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*seed >> 33) % n;
}

Test(plan, random_passes_never_hold_more_licenses_than_there_are_now_or_at_a_reservation)
{
    static struct sched_license_need need[MAXJ * 2][2];
    uint64_t seed = 42;

    for (int round = 0; round < 400; round++) {
        uint64_t now = 1000;
        uint32_t depth;

        sched_cluster_free(cluster);
        cluster = sched_cluster_new();
        npending = nrunning = 0;
        for (int i = 0; i < MAXJ; i++) {
            sched_alloc_release(&running_alloc[i]);
            sched_alloc_init(&running_alloc[i]);
        }
        for (uint32_t n = 0, nn = 2 + rnd(&seed, 3); n < nn; n++)
            node(n == 0 ? "n0" : n == 1 ? "n1" : n == 2 ? "n2" : "n3", 8);
        for (uint32_t i = 0, nr = rnd(&seed, MAXJ); i < nr; i++) {
            struct sched_req req = gpus(1, 1 + rnd(&seed, 4));
            struct sched_license_need *l = need[MAXJ + i];

            if (sched_cluster_place(cluster, &req, NULL, &running_alloc[nrunning]) != 0)
                continue;
            sched_cluster_take(cluster, &running_alloc[nrunning]);
            l[0] = (struct sched_license_need){rnd(&seed, 2), 1 + rnd(&seed, 2)};
            running[nrunning] = (struct sched_running){.job_id = 100 + i,
                                                       .end_s = now + 1 + rnd(&seed, 300),
                                                       .alloc = &running_alloc[nrunning],
                                                       .licenses = l,
                                                       .nlicenses = rnd(&seed, 3) > 0};
            if (held_at(l[0].license, now, now) + l[0].count > seats[l[0].license])
                running[nrunning].nlicenses = 0; /* the cluster never over-holds */
            nrunning++;
        }
        for (uint32_t i = 0, np = 1 + rnd(&seed, MAXJ); i < np; i++) {
            struct sched_license_need *l = need[i];

            submit(1 + i, (int32_t)rnd(&seed, 3), gpus(1, 1 + rnd(&seed, 8)), 1 + rnd(&seed, 400));
            l[0] = (struct sched_license_need){0, 1 + rnd(&seed, 4)};
            l[1] = (struct sched_license_need){1, 1 + rnd(&seed, 2)};
            pending[npending - 1].licenses = rnd(&seed, 2) ? l : l + 1;
            pending[npending - 1].nlicenses = rnd(&seed, 4) == 0 ? 0 : 1 + (rnd(&seed, 3) == 0);
            if (pending[npending - 1].licenses == l + 1)
                pending[npending - 1].nlicenses = pending[npending - 1].nlicenses > 0;
        }
        depth = 1 + rnd(&seed, 4);
        plan_lic(now, depth);
        for (uint32_t license = 0; license < 2; license++) {
            cr_assert_leq(held_at(license, now, now), seats[license], "round %d: now", round);
            for (size_t i = 0; i < npending; i++) {
                uint64_t t = verdicts[i].reserved_s;

                if (verdicts[i].start || verdicts[i].nreserved == 0)
                    continue;
                cr_assert_leq(held_at(license, now, t), seats[license],
                              "round %d: license %u at job %llu's reservation (%llu)", round,
                              license, (unsigned long long)pending[i].job_id,
                              (unsigned long long)t);
            }
        }
    }
}
