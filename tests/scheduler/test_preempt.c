/*
 * test_preempt.c: QOS limits and preemption, pure: the victims a pending job of a higher
 * tier chooses (least lost work, then as few jobs as do), the jobs already ending for it,
 * equal tiers left alone, the cost of a victim from its last checkpoint, each QOS limit's
 * reason, and the planner putting it together: tiers first, limits kept, victims listed once,
 * jobs whose QOS has preempt_mode "off" never chosen.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "scheduler/planner.h"
#include "scheduler/preempt.h"
#include "scheduler/qos.h"

static struct sched_cluster *cluster;
static struct sched_alloc held[4];

static void setup(void)
{
    struct sched_node_info n0 = {.name = "n0", .ngpus = 4, .ncores = 16, .mem_mib = 1024};
    struct sched_node_info n1 = {.name = "n1", .ngpus = 4, .ncores = 16, .mem_mib = 1024};

    cluster = sched_cluster_new();
    cr_assert_not_null(cluster);
    cr_assert_eq(sched_cluster_add_node(cluster, &n0), 0);
    cr_assert_eq(sched_cluster_add_node(cluster, &n1), 1);
    for (int i = 0; i < 4; i++)
        sched_alloc_init(&held[i]);
}

static void teardown(void)
{
    for (int i = 0; i < 4; i++)
        sched_alloc_release(&held[i]);
    sched_cluster_free(cluster);
}

TestSuite(preempt, .init = setup, .fini = teardown);

/* held[i]: gpus GPUs on node (allowed only there), taken. */
static void run_on(int i, uint32_t node, uint32_t gpus)
{
    uint64_t allowed = UINT64_C(1) << node;
    struct sched_req r = {
        .nodes = 1, .gpus_per_node = gpus, .cores_per_node = 1, .allowed = &allowed};

    cr_assert_eq(sched_cluster_place(cluster, &r, NULL, &held[i]), 0);
    sched_cluster_take(cluster, &held[i]);
}

static const struct sched_req four = {.nodes = 1, .gpus_per_node = 4, .cores_per_node = 1};

Test(preempt, chooses_the_least_lost_work_and_spares_what_it_can)
{
    struct sched_preempt_cand c[3];

    run_on(0, 0, 4); /* A: all of n0, dear */
    run_on(1, 1, 2); /* B and C share n1, cheaper together */
    run_on(2, 1, 2);
    c[0] = (struct sched_preempt_cand){1, 0, 100, &held[0], 0};
    c[1] = (struct sched_preempt_cand){2, 0, 10, &held[1], 0};
    c[2] = (struct sched_preempt_cand){3, 0, 50, &held[2], 0};
    cr_assert_eq(sched_preempt_choose(cluster, &four, 9, 1, c, 3), 2);
    cr_assert_eq(c[0].preempted_by, 0, "A spared: 100 > 10 + 50");
    cr_assert_eq(c[1].preempted_by, 9);
    cr_assert_eq(c[2].preempted_by, 9);
    /* In the pass's copy, the job has taken n1's GPUs, freed by B and C. */
    cr_assert_eq(sched_cluster_free_gpus(cluster, 1), 0);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 0);
}

Test(preempt, a_victim_it_does_not_need_is_spared)
{
    struct sched_preempt_cand c[2];
    struct sched_req two = {.nodes = 1, .gpus_per_node = 2, .cores_per_node = 1};

    run_on(0, 0, 4); /* cheapest, but freeing it alone would do too */
    run_on(1, 1, 4);
    c[0] = (struct sched_preempt_cand){1, 0, 5, &held[0], 0};
    c[1] = (struct sched_preempt_cand){2, 0, 7, &held[1], 0};
    cr_assert_eq(sched_preempt_choose(cluster, &two, 9, 1, c, 2), 1, "one job is enough");
    cr_assert_eq(c[0].preempted_by, 9);
    cr_assert_eq(c[1].preempted_by, 0);
}

Test(preempt, equal_tiers_are_never_preempted_and_what_ends_for_it_counts)
{
    struct sched_preempt_cand c[2];

    run_on(0, 0, 4);
    run_on(1, 1, 4);
    c[0] = (struct sched_preempt_cand){1, 1, 5, &held[0], 0};
    c[1] = (struct sched_preempt_cand){2, 2, 5, &held[1], 0};
    cr_assert_eq(sched_preempt_choose(cluster, &four, 9, 1, c, 2), -EAGAIN, "tiers 1 and 2");
    cr_assert_eq(c[0].preempted_by + c[1].preempted_by, 0);
    c[0].preempted_by = 9; /* already being requeued for job 9 */
    cr_assert_eq(sched_preempt_choose(cluster, &four, 9, 1, c, 2), 0, "it waits for that one");
    cr_assert_eq(c[1].preempted_by, 0);
}

Test(preempt, a_choice_that_cannot_fit_leaves_the_cluster_as_it_was)
{
    struct sched_preempt_cand c[3];

    run_on(0, 0, 2); /* a victim, but not enough: its neighbour is of a higher tier */
    run_on(1, 0, 2);
    run_on(2, 1, 4);
    c[0] = (struct sched_preempt_cand){1, 0, 5, &held[0], 0};
    c[1] = (struct sched_preempt_cand){2, 2, 5, &held[1], 0};
    c[2] = (struct sched_preempt_cand){3, 2, 5, &held[2], 0};
    cr_assert_eq(sched_preempt_choose(cluster, &four, 9, 1, c, 3), -EAGAIN);
    cr_assert_eq(c[0].preempted_by, 0);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 0, "the tried victim holds its GPUs again");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 1), 0);
}

Test(preempt, the_preemptors_of_a_pass_share_the_nodes_victims_opened)
{
    struct sched_preempt_cand c[2], **order;
    struct sched_req one = {.nodes = 1, .gpus_per_node = 1, .cores_per_node = 1};
    struct sched_req two = {.nodes = 1, .gpus_per_node = 2, .cores_per_node = 1};
    uint64_t opened = 0;

    run_on(0, 0, 4);
    run_on(1, 1, 4);
    c[0] = (struct sched_preempt_cand){1, 0, 5, &held[0], 0};
    c[1] = (struct sched_preempt_cand){2, 0, 7, &held[1], 0};
    cr_assert_eq(sched_preempt_order(c, 2, &order), 0);
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &one, 8, 1, c, 2, order, &opened), 1);
    cr_assert_eq(c[0].preempted_by, 8, "the cheaper");
    cr_assert_eq(opened, 1, "n0 opened");
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &two, 9, 1, c, 2, order, &opened), 0,
                 "room where job 8's victim gave back: no victim of its own");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 1);
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &two, 10, 1, c, 2, order, &opened), 1);
    cr_assert_eq(c[1].preempted_by, 10);
    cr_assert_eq(opened, 3);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 1), 2);
    free(order);
}

Test(preempt, the_cost_counts_from_the_last_checkpoint)
{
    run_on(0, 0, 3);
    cr_assert_float_eq(sched_preempt_cost(&held[0], 1000, 0, 11000), 30.0, 1e-9);
    cr_assert_float_eq(sched_preempt_cost(&held[0], 1000, 9000, 11000), 6.0, 1e-9);
    cr_assert_float_eq(sched_preempt_cost(&held[0], 1000, 9000, 5000), 0.0, 1e-9);
}

/* --- QOS limits and the planner ---------------------------------------------------------- */

static struct gs_config cfg;
static struct gs_config_qos qos[2];

static void with_qos(void)
{
    cr_assert_eq(gs_config_init(&cfg), 0);
    qos[0] = (struct gs_config_qos){
        .name = "low", .max_gpus_per_user = 4, .max_jobs_per_user = 2, .max_wall_s = UINT64_MAX};
    qos[1] = (struct gs_config_qos){
        .name = "high", .tier = 1, .max_gpus_per_account = 4, .max_wall_s = UINT64_MAX};
    cfg.qos = qos;
    cfg.nqos = 2;
}

static void without_qos(void)
{
    cfg.qos = NULL;
    cfg.nqos = 0;
    gs_config_release(&cfg);
}

static struct gs_jobspec spec_in(const char *q, uint32_t gpus)
{
    return (struct gs_jobspec){
        .nodes = 1, .gpus_per_node = gpus, .qos = (char *)q, .account = "ml"};
}

Test(preempt, each_qos_limit_says_its_reason, .init = with_qos, .fini = without_qos)
{
    struct sched_qos_usage *u = sched_qos_usage_new(&cfg);
    struct gs_jobspec low = spec_in("low", 2), high = spec_in("high", 3), plain = spec_in(NULL, 8);

    cr_assert_not_null(u);
    cr_assert_null(sched_qos_usage_check(u, &low, "alice", 2));
    cr_assert_eq(sched_qos_usage_add(u, &low, "alice", 2), 0);
    cr_assert_str_eq(sched_qos_usage_check(u, &low, "alice", 3), "QOSMaxGRESPerUser");
    cr_assert_null(sched_qos_usage_check(u, &low, "bob", 3), "per user");
    cr_assert_eq(sched_qos_usage_add(u, &low, "alice", 1), 0);
    cr_assert_str_eq(sched_qos_usage_check(u, &low, "alice", 1), "QOSMaxJobsPerUserLimit");
    cr_assert_eq(sched_qos_usage_add(u, &high, "carol", 3), 0);
    cr_assert_str_eq(sched_qos_usage_check(u, &high, "dave", 2), "QOSMaxGRESPerAccount",
                     "carol's 3 GPUs count for ml");
    cr_assert_null(sched_qos_usage_check(u, &plain, "alice", 8), "normal: not configured");
    cr_assert_eq(sched_qos_tier(&cfg, &high), 1);
    cr_assert_eq(sched_qos_tier(&cfg, &plain), 0);
    sched_qos_usage_free(u);
}

static struct sched_job *add_job(struct sched_jobs *jobs, uint64_t id, const char *q, uint32_t gpus,
                                 const char *user)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->gpus_per_node = gpus;
    spec->qos = strdup(q);
    cr_assert_not_null(spec->qos);
    job = sched_jobs_add(jobs, id, spec, 1000);
    cr_assert_not_null(job);
    snprintf(job->user, sizeof(job->user), "%s", user);
    return job;
}

static void start_all(struct sched_plan_out *out)
{
    for (size_t i = 0; i < out->n; i++) {
        if (out->verdicts[i].start)
            cr_assert_eq(sched_job_start(out->jobs[i], &out->verdicts[i].alloc, 1, 2000), 0);
    }
    sched_plan_out_release(out);
}

Test(preempt, the_planner_keeps_limits_and_lists_victims_once, .init = with_qos,
     .fini = without_qos)
{
    struct sched_jobs *jobs = sched_jobs_new(cluster);
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_plan_out out;
    struct sched_job *a, *b, *c, *h;
    size_t from = 0;

    cr_assert_not_null(jobs);
    a = add_job(jobs, 1, "low", 4, "alice");
    b = add_job(jobs, 2, "low", 4, "bob");
    c = add_job(jobs, 3, "low", 4, "alice"); /* over alice's 4 GPUs in low */
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 2000, &out), 0);
    cr_assert(out.verdicts[0].start && out.verdicts[1].start);
    cr_assert_not(out.verdicts[2].start);
    cr_assert_str_eq(c->reason, "QOSMaxGRESPerUser");
    cr_assert_eq(out.npreempt, 0);
    start_all(&out);
    /* A high-tier job: the cluster is full; one of the two low jobs goes (same cost: the
     * lower id first). c stays behind its limit, not a victim's beneficiary. */
    h = add_job(jobs, 4, "high", 4, "carol");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_eq(out.npreempt, 1);
    cr_assert_eq(out.preempt[0].by, h);
    cr_assert_eq(out.preempt[0].victim, a);
    cr_assert_float_eq(out.preempt[0].cost, 40.0, 1e-9, "4 GPUs x 10 s");
    a->preempted_by = h->id; /* as the daemon marks it */
    sched_plan_out_release(&out);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 13000, &out), 0);
    cr_assert_eq(out.npreempt, 0, "it waits for a: no second victim");
    cr_assert_eq(b->preempted_by, 0);
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
}

/* --- preempt_mode (Slurm's PreemptMode on the victim's QOS) ---------------------------------- */

static struct gs_config_qos modes[3];

static void with_modes(void)
{
    cr_assert_eq(gs_config_init(&cfg), 0);
    modes[0] = (struct gs_config_qos){
        .name = "keep", .preempt_mode = GS_PREEMPT_OFF, .max_wall_s = UINT64_MAX};
    modes[1] = (struct gs_config_qos){
        .name = "scratch", .preempt_mode = GS_PREEMPT_CANCEL, .max_wall_s = UINT64_MAX};
    modes[2] = (struct gs_config_qos){.name = "high", .tier = 1, .max_wall_s = UINT64_MAX};
    cfg.qos = modes;
    cfg.nqos = 3;
}

Test(preempt, a_job_of_mode_off_is_never_a_victim, .init = with_modes, .fini = without_qos)
{
    struct sched_jobs *jobs = sched_jobs_new(cluster);
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_plan_out out;
    struct sched_job *k, *x, *h;
    size_t from = 0;

    cr_assert_not_null(jobs);
    /* Same start, same cost: without the mode the lower id, k, would be the victim. */
    k = add_job(jobs, 1, "keep", 4, "alice");
    x = add_job(jobs, 2, "scratch", 4, "bob");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 2000, &out), 0);
    cr_assert(out.verdicts[0].start && out.verdicts[1].start);
    start_all(&out);
    h = add_job(jobs, 3, "high", 4, "carol");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_eq(out.npreempt, 1);
    cr_assert_eq(out.preempt[0].victim, x, "the other candidate is taken instead");
    cr_assert_eq(out.preempt[0].by, h);
    cr_assert_eq(k->preempted_by, 0);
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
}

Test(preempt, only_jobs_of_mode_off_running_means_no_preemption, .init = with_modes,
     .fini = without_qos)
{
    struct sched_jobs *jobs = sched_jobs_new(cluster);
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_plan_out out;
    struct sched_job *h;
    size_t from = 0;

    cr_assert_not_null(jobs);
    add_job(jobs, 1, "keep", 4, "alice");
    add_job(jobs, 2, "keep", 4, "bob");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 2000, &out), 0);
    start_all(&out);
    h = add_job(jobs, 3, "high", 2, "carol");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_eq(out.npreempt, 0, "both running jobs are off limits");
    cr_assert_str_eq(h->reason, "Resources");
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
}
