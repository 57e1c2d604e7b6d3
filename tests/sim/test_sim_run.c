/*
 * test_sim_run.c: replays of small made-up traces through gsched's planner: FIFO keeps a
 * job behind a blocked head where EASY backfills it, multifactor lets an account that used
 * nothing go before one that did, topology-aware placement keeps a pair on NVLink where
 * first fit splits it across sockets, jobs that can never fit are counted and not
 * replayed, and the time-weighted figures add up. Preemption: an urgent job arriving on a
 * full cluster preempts once, starts after the kill grace, and the victim ends later by the
 * work it lost since its checkpoint; without a -preempt policy nothing is preempted; the
 * replay is the same every time. Data: node caches fill to a job's share and evict the
 * least recently used; a job whose data's node is busy copies it elsewhere under easy and
 * easy-data, waits for the node under easy-data-wait, and under easy-data-ski waits no
 * longer than the copy would take.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/units.h"
#include "sim/run.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)

static struct gs_sim_trace t;
static struct gs_config cfg;
static double shares[2] = {0.5, 0.5};

static void setup(void)
{
    struct gs_buf err = GS_BUF_INIT;
    const char *text = "[priority]\nweight_age = 1000\nweight_fairshare = 10000\n"
                       "[[account]]\nname = \"a\"\n[[account]]\nname = \"b\"\n";

    gs_sim_trace_init(&t);
    cr_assert_eq(gs_config_init(&cfg), 0);
    cr_assert_eq(gs_config_parse(&cfg, text, strlen(text), "test", &err), 0, "%s", err.data);
    gs_buf_release(&err);
    cr_assert_eq(gs_sim_trace_account(&t, "a"), 0);
    cr_assert_eq(gs_sim_trace_account(&t, "b"), 1);
}

static void teardown(void)
{
    gs_sim_trace_release(&t);
    gs_config_release(&cfg);
}

TestSuite(sim_run, .init = setup, .fini = teardown);

static void node(uint32_t gpus)
{
    struct gs_sim_node n = {
        .ngpus = gpus, .ncores = 16, .mem_mib = 1024, .switch_id = 1, .links = GS_SIM_LINKS_PAIRS};

    snprintf(n.name, sizeof(n.name), "n%zu", t.nnodes + 1);
    cr_assert_eq(gs_sim_trace_add_node(&t, &n), 0);
}

static void urgent_job(uint64_t submit_s, uint32_t gpus, uint64_t duration_s, uint32_t account,
                       bool urgent)
{
    struct gs_sim_job j = {.submit_ms = submit_s * 1000,
                           .duration_ms = duration_s * 1000,
                           .gpus = gpus,
                           .cores = 1,
                           .account = account,
                           .line = (uint32_t)t.njobs + 1,
                           .urgent = urgent};

    cr_assert_eq(gs_sim_trace_add_job(&t, &j), 0);
}

static void job(uint64_t submit_s, uint32_t gpus, uint64_t duration_s, uint32_t account)
{
    urgent_job(submit_s, gpus, duration_s, account, false);
}

static void run_with(const char *policy, const struct gs_sim_preempt_model *model,
                     struct gs_sim_result *r)
{
    gs_sim_trace_sort(&t);
    gs_sim_trace_shape(&t);
    cr_assert_eq(gs_sim_run(&t, gs_sim_policy_find(policy), &cfg, shares, model, NULL, r), 0);
    cr_assert_eq(r->finished, r->jobs, "%s: every job ends", policy);
}

static void run(const char *policy, struct gs_sim_result *r)
{
    run_with(policy, NULL, r);
}

/* One 4-GPU node: 2 GPUs busy for 100 s, a 4-GPU job blocked behind them, then a short job
 * that fits beside them and ends long before the blocked one could start. */
static void blocked_head(void)
{
    node(4);
    job(0, 2, 100, 0);
    job(1, 4, 100, 0);
    job(2, 1, 10, 1);
}

Test(sim_run, fifo_keeps_a_job_behind_a_blocked_head)
{
    struct gs_sim_result r;

    blocked_head();
    run("fifo-firstfit", &r);
    /* 0 waits 0; 1 waits for 0 (t=100) and runs 130 s (4 GPUs across sockets: 1.3);
     * 2 waits for 1 (t=230). */
    cr_assert(NEAR(r.avg_wait_s, (0 + 99 + 228) / 3.0), "%f", r.avg_wait_s);
    cr_assert(NEAR(r.makespan_s, 240), "%f", r.makespan_s);
    cr_assert(NEAR(r.jct_vs_baseline, 0), "set by the caller");
    gs_sim_result_release(&r);
}

Test(sim_run, easy_backfills_what_cannot_delay_the_head)
{
    struct gs_sim_result r;

    blocked_head();
    run("easy", &r);
    cr_assert(NEAR(r.avg_wait_s, (0 + 99 + 0) / 3.0), "%f", r.avg_wait_s);
    cr_assert(NEAR(r.makespan_s, 230), "%f", r.makespan_s);
    cr_assert_eq(r.passes, 6, "one pass per instant with events: 0, 1, 2, 12, 100, 230");
    gs_sim_result_release(&r);
}

Test(sim_run, time_weighted_figures_add_up)
{
    struct gs_sim_result r;

    blocked_head();
    run("easy", &r);
    /* Waiting from 1 to 100 s: 2 GPUs busy, plus 1 more from 2 to 12 s. */
    cr_assert(NEAR(r.alloc_queued, (99 * 2 + 10 * 1) / (99.0 * 4)), "%f", r.alloc_queued);
    cr_assert(NEAR(r.stranded_gpus, 4 - (99 * 2 + 10 * 1) / 99.0), "%f", r.stranded_gpus);
    cr_assert(NEAR(r.queued_share, 99 / 230.0), "%f", r.queued_share);
    cr_assert(NEAR(r.util, (2 * 100 + 1 * 10 + 4 * 130) / (4 * 230.0)), "%f", r.util);
    cr_assert(r.jain > 0 && r.jain <= 1);
    cr_assert_gt(r.nseries, 2);
    cr_assert_eq(r.series[0].t_ms, 0);
    gs_sim_result_release(&r);
}

Test(sim_run, multifactor_puts_the_account_that_used_nothing_first)
{
    struct gs_sim_result fifo, mf;

    node(1);
    job(0, 1, 1000, 0);
    job(1, 1, 2000, 0);
    job(2, 1, 100, 1);
    run("easy", &fifo);
    run("multifactor", &mf);
    /* easy: 0, then 1 (ends 3000), then 2 (ends 3100). multifactor: once 0 has ended, a has
     * used 1000 s and b nothing: 2 runs at 1000, 1 at 1100. */
    cr_assert(NEAR(fifo.avg_jct_s, (1000 + 2999 + 3098) / 3.0), "%f", fifo.avg_jct_s);
    cr_assert(NEAR(mf.avg_jct_s, (1000 + 3099 + 1098) / 3.0), "%f", mf.avg_jct_s);
    gs_sim_result_release(&fifo);
    gs_sim_result_release(&mf);
}

Test(sim_run, topology_aware_placement_keeps_a_pair_on_nvlink)
{
    struct gs_sim_result plain, topo;

    node(4);
    job(0, 1, 1000, 0);
    job(1, 2, 100, 0);
    run("easy", &plain);
    run("easy-topo", &topo);
    /* First fit gives the pair GPUs 1 and 2, across sockets; by links it gets 2 and 3. */
    cr_assert(NEAR(plain.avg_stretch, (1.0 + 1.3) / 2), "%f", plain.avg_stretch);
    cr_assert(NEAR(topo.avg_stretch, 1.0), "%f", topo.avg_stretch);
    gs_sim_result_release(&plain);
    gs_sim_result_release(&topo);
}

Test(sim_run, counts_jobs_that_never_fit_and_replays_the_rest)
{
    struct gs_sim_result r;

    node(4);
    job(0, 8, 100, 0);
    job(1, 1, 100, 0);
    run("fifo-firstfit", &r);
    cr_assert_eq(r.impossible, 1);
    cr_assert_eq(r.jobs, 1);
    cr_assert_eq(r.finished, 1);
    gs_sim_result_release(&r);
}

Test(sim_run, knows_its_policies)
{
    cr_assert_eq(gs_sim_npolicies, 14);
    cr_assert_eq(gs_sim_policy_find("conservative")->depth, 32);
    cr_assert_eq(gs_sim_policy_find("easy")->depth, 1);
    cr_assert_eq(gs_sim_policy_find("easy")->data, GS_SIM_DATA_BLIND);
    cr_assert_eq(gs_sim_policy_find("easy-data-ski")->data, GS_SIM_DATA_SKI);
    cr_assert_str_eq(gs_sim_policies[0].name, "fifo-firstfit");
    cr_assert_null(gs_sim_policy_find("sjf"));
    cr_assert(gs_sim_policy_find("multifactor-topo")->topo);
    cr_assert(!gs_sim_policy_find("fifo-topo")->backfill);
    cr_assert(!gs_sim_policy_find("multifactor-topo")->preempt);
    cr_assert(gs_sim_policy_find("easy-preempt")->preempt);
    cr_assert(gs_sim_policy_find("multifactor-topo-preempt")->multifactor);
    cr_assert(gs_sim_policy_find("multifactor-topo-preempt")->topo);
}

/* --- preemption ----------------------------------------------------------------------- */

static const struct gs_sim_preempt_model every_minute = {.checkpoint_ms = 60000,
                                                         .kill_grace_ms = 30000};

/* One 2-GPU node (an NVLink pair: no stretch): a normal job holding it for 1000 s, and an
 * urgent one of 50 s arriving at 100 s. */
static void full_cluster_then_urgent(void)
{
    node(2);
    job(0, 2, 1000, 0);
    urgent_job(100, 2, 50, 1, true);
}

Test(sim_run, an_urgent_job_on_a_full_cluster_preempts_once)
{
    struct gs_sim_result r;

    full_cluster_then_urgent();
    run_with("easy-preempt", &every_minute, &r);
    /* At 100 s the urgent job preempts job 0 (last checkpoint at 60 s: 40 s x 2 GPUs lost),
     * which holds the node through the 30 s kill grace; the urgent job runs 130-180, job 0
     * again from 180 with the 940 s it had left at its checkpoint, to 1120. */
    cr_assert_eq(r.preemptions, 1);
    cr_assert_eq(r.preempted_jobs, 1);
    cr_assert(NEAR(r.gpu_hours_lost, 2 * 40 / 3600.0), "%f", r.gpu_hours_lost);
    cr_assert_eq(r.urgent, 1);
    cr_assert(NEAR(r.urgent_avg_wait_s, 30), "the kill grace: %f", r.urgent_avg_wait_s);
    cr_assert(NEAR(r.urgent_avg_jct_s, 80), "%f", r.urgent_avg_jct_s);
    cr_assert(NEAR(r.makespan_s, 1120), "the victim ends 120 s late: %f", r.makespan_s);
    /* Job 0 waited 50 s (130 to 180) in all; its 130 s before count as held, not waited. */
    cr_assert(NEAR(r.avg_wait_s, (50 + 30) / 2.0), "%f", r.avg_wait_s);
    cr_assert(NEAR(r.avg_jct_s, (1120 + 80) / 2.0), "%f", r.avg_jct_s);
    cr_assert(NEAR(r.util, (130 + 50 + 940) / 1120.0), "the node never idles: %f", r.util);
    cr_assert_eq(r.timeouts, 0);
    gs_sim_result_release(&r);
}

Test(sim_run, without_a_preempt_policy_nothing_is_preempted)
{
    struct gs_sim_result r;

    full_cluster_then_urgent();
    run_with("easy", &every_minute, &r);
    cr_assert_eq(r.preemptions, 0);
    cr_assert(NEAR(r.gpu_hours_lost, 0));
    cr_assert_eq(r.urgent, 1, "urgent jobs are counted under every policy");
    cr_assert(NEAR(r.urgent_avg_wait_s, 900), "it waits for job 0: %f", r.urgent_avg_wait_s);
    cr_assert(NEAR(r.makespan_s, 1050), "%f", r.makespan_s);
    gs_sim_result_release(&r);
}

Test(sim_run, without_checkpoints_or_grace_the_whole_run_is_lost_at_once)
{
    const struct gs_sim_preempt_model none = {.checkpoint_ms = 0, .kill_grace_ms = 0};
    struct gs_sim_result r;

    full_cluster_then_urgent();
    run_with("multifactor-preempt", &none, &r);
    /* The urgent job starts at 100 s in a second pass at that instant; job 0 starts over at
     * 150 and ends at 1150, its first 100 s (2 GPUs) lost. */
    cr_assert_eq(r.preemptions, 1);
    cr_assert(NEAR(r.gpu_hours_lost, 2 * 100 / 3600.0), "%f", r.gpu_hours_lost);
    cr_assert(NEAR(r.urgent_avg_wait_s, 0), "%f", r.urgent_avg_wait_s);
    cr_assert(NEAR(r.makespan_s, 1150), "%f", r.makespan_s);
    gs_sim_result_release(&r);
}

Test(sim_run, jobs_of_one_tier_never_preempt_each_other)
{
    struct gs_sim_result r;

    node(2);
    urgent_job(0, 2, 1000, 0, true);
    urgent_job(100, 2, 50, 1, true);
    run_with("easy-preempt", &every_minute, &r);
    cr_assert_eq(r.preemptions, 0);
    cr_assert(NEAR(r.makespan_s, 1050), "%f", r.makespan_s);
    gs_sim_result_release(&r);
}

/* A made-up busy trace: 300 jobs of 1-8 GPUs on four 4-GPU nodes, a tenth urgent. */
static void busy_trace(void)
{
    uint64_t x = 12345, at = 0;

    for (int i = 0; i < 4; i++)
        node(4);
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        at += (x >> 33) % 120;
        urgent_job(at, 1u << ((x >> 20) % 4), 60 + (x >> 40) % 3600, (x >> 10) % 2,
                   (x >> 50) % 10 == 0);
    }
}

static void same_result(const struct gs_sim_result *a, const struct gs_sim_result *b)
{
    cr_assert_eq(a->preemptions, b->preemptions);
    cr_assert_eq(a->passes, b->passes);
    cr_assert_eq(a->gpu_hours_lost, b->gpu_hours_lost);
    cr_assert_eq(a->avg_jct_s, b->avg_jct_s);
    cr_assert_eq(a->avg_wait_s, b->avg_wait_s);
    cr_assert_eq(a->makespan_s, b->makespan_s);
    cr_assert_eq(a->jain, b->jain);
    cr_assert_eq(a->urgent_avg_wait_s, b->urgent_avg_wait_s);
    cr_assert_eq(a->nseries, b->nseries);
    cr_assert_eq(memcmp(a->series, b->series, a->nseries * sizeof(*a->series)), 0);
}

Test(sim_run, preemption_replays_the_same_every_time)
{
    struct gs_sim_result a, b, plain;

    busy_trace();
    run_with("multifactor-topo-preempt", &every_minute, &a);
    run_with("multifactor-topo-preempt", &every_minute, &b);
    run_with("multifactor-topo", &every_minute, &plain);
    same_result(&a, &b);
    cr_assert_gt(a.preemptions, 0, "a busy cluster: urgent jobs preempt");
    cr_assert_gt(a.gpu_hours_lost, 0);
    cr_assert_leq(a.preempted_jobs, a.preemptions);
    cr_assert_eq(plain.preemptions, 0);
    cr_assert_eq(a.urgent, plain.urgent);
    cr_assert_lt(a.urgent_avg_wait_s, plain.urgent_avg_wait_s, "%f vs %f", a.urgent_avg_wait_s,
                 plain.urgent_avg_wait_s);
    gs_sim_result_release(&a);
    gs_sim_result_release(&b);
    gs_sim_result_release(&plain);
}

Test(sim_run, urgent_jobs_are_a_hashed_share)
{
    size_t n;

    for (int i = 0; i < 2000; i++) {
        char name[16];

        job((uint64_t)i, 1, 10, 0);
        snprintf(name, sizeof(name), "job%d", i);
        t.jobs[t.njobs - 1].key = gs_sim_hash(name, strlen(name));
    }
    n = gs_sim_trace_mark_urgent(&t, 0.10, 0);
    cr_assert(n > 150 && n < 250, "about 10 %% of 2000: %zu", n);
    cr_assert_eq(gs_sim_trace_mark_urgent(&t, 0.10, 0), n, "the same jobs every time");
    cr_assert_neq(gs_sim_trace_mark_urgent(&t, 0.10, 7), 0);
    cr_assert_eq(gs_sim_trace_mark_urgent(&t, 0, 0), 0);
    cr_assert_eq(gs_sim_trace_mark_urgent(&t, 1, 0), 2000);
}

/* --- data locality -------------------------------------------------------------------- */

Test(sim_run, node_caches_hold_a_jobs_share_and_evict_the_least_recently_used)
{
    struct gs_sim_data_model m = {
        .datasets = 3, .dataset_bytes = 1000, .cache_bytes = 1500, .copy_rate = 10};
    struct gs_sim_caches *c = gs_sim_caches_new(2, &m);
    uint32_t both[] = {0, 1}, first[] = {0};
    uint64_t bytes[2], ms = 0, copied = 0;

    cr_assert_not_null(c);
    cr_assert_eq(gs_sim_caches_stage(c, 0, both, 2, 1000, &ms, &copied), 0);
    cr_assert_eq(copied, 1000, "each of two nodes copies half");
    cr_assert_eq(ms, 50000, "500 bytes at 10 bytes/s");
    cr_assert_eq(gs_sim_caches_stage(c, 0, first, 1, 2000, &ms, &copied), 0);
    cr_assert_eq(copied, 1500, "one node alone needs it all: the other half");
    cr_assert_eq(ms, 50000);
    cr_assert_eq(gs_sim_caches_stage(c, 0, both, 2, 3000, &ms, &copied), 0);
    cr_assert_eq(ms, 0, "both hold their shares");
    cr_assert_eq(copied, 1500);
    cr_assert_eq(gs_sim_caches_stage(c, 1, first, 1, 4000, &ms, &copied), 0);
    gs_sim_caches_bytes(c, 0, bytes);
    cr_assert_eq(bytes[0], 0, "dataset 0 evicted from node 0 for 1: 2000 > 1500");
    cr_assert_eq(bytes[1], 500);
    gs_sim_caches_bytes(c, 1, bytes);
    cr_assert_eq(bytes[0], 1000);
    cr_assert_eq(bytes[1], 0);
    gs_sim_caches_free(c);
}

/* Two 1-GPU nodes, jobs of account a reading dataset 0 (1,000 MiB, copied at 10 MiB/s:
 * 100 s; the scheduler's data_copy_rate is in MiB/s): W puts it on n1 (copy 100 s, run 10 s); at
 * t=200 L runs on n1 for long_s; at t=201 C (50 s) arrives with n1 busy and n2 free. */
static void data_trace(uint64_t long_s)
{
    node(1);
    node(1);
    job(0, 1, 10, 0);       /* W */
    job(200, 1, long_s, 0); /* L */
    job(201, 1, 50, 0);     /* C */
}

static void run_data(const char *policy, struct gs_sim_result *r)
{
    struct gs_sim_data_model m = {.datasets = 1,
                                  .dataset_bytes = 1000 * GS_MIB,
                                  .cache_bytes = 2000 * GS_MIB,
                                  .copy_rate = 10 * GS_MIB,
                                  .wait_s = 600};

    gs_sim_trace_sort(&t);
    gs_sim_trace_shape(&t);
    cr_assert_eq(gs_sim_run(&t, gs_sim_policy_find(policy), &cfg, shares, NULL, &m, r), 0);
    cr_assert_eq(r->finished, 3, "%s: every job ends", policy);
}

Test(sim_run, a_job_waits_for_its_datas_busy_node_only_under_the_wait_policies)
{
    /* C's JCT: elsewhere at once, a 100 s copy and its 50 s (150); or waiting for n1 until
     * L ends at 220, no copy (19 + 50 = 69). W's is 110 and L's 20. */
    static const struct {
        const char *policy;
        double c_jct, copied;
    } want[] = {{"easy", 150, 2000},
                {"easy-data", 150, 2000},
                {"easy-data-wait", 69, 1000},
                {"easy-data-ski", 69, 1000}};

    data_trace(20);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct gs_sim_result r;

        run_data(want[i].policy, &r);
        cr_assert(NEAR(r.avg_jct_s, (110 + 20 + want[i].c_jct) / 3), "%s: %f", want[i].policy,
                  r.avg_jct_s);
        cr_assert_eq(r.copied_bytes, want[i].copied * GS_MIB, "%s: %llu", want[i].policy,
                     (unsigned long long)r.copied_bytes);
        gs_sim_result_release(&r);
    }
}

Test(sim_run, the_ski_rental_wait_ends_when_the_copy_would_have_been_done)
{
    struct gs_sim_result r;

    /* L holds n1 until t=500: a fixed wait of 600 s waits all of it (299 + 50); the ski
     * rule waits the copy's 100 s, then copies on n2 (100 + 100 + 50); no wait: 150. */
    data_trace(300);
    run_data("easy-data-wait", &r);
    cr_assert(NEAR(r.avg_jct_s, (110 + 300 + 349) / 3.0), "%f", r.avg_jct_s);
    gs_sim_result_release(&r);
    run_data("easy-data-ski", &r);
    cr_assert(NEAR(r.avg_jct_s, (110 + 300 + 250) / 3.0), "%f", r.avg_jct_s);
    cr_assert_eq(r.copies, 2, "W's and C's");
    cr_assert(NEAR(r.avg_copy_s, 200 / 3.0), "%f", r.avg_copy_s);
    gs_sim_result_release(&r);
    run_data("easy-data", &r);
    cr_assert(NEAR(r.avg_jct_s, (110 + 300 + 150) / 3.0), "%f", r.avg_jct_s);
    gs_sim_result_release(&r);
}
