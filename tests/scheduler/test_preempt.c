/*
 * test_preempt.c: QOS limits and preemption, pure: the victims a pending job of a higher
 * tier chooses (least lost work, then as few jobs as do), the jobs already ending for it,
 * equal tiers left alone, the cost of a victim from its last checkpoint, each QOS limit's
 * reason, and the planner putting it together: tiers first, limits kept, victims listed once,
 * jobs whose QOS has preempt_mode "off" never chosen; a job short of licenses preempting the
 * cheapest holders that free enough (with nodes when it needs those too), and none when
 * they cannot.
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

/* A candidate without licenses: id, tier, cost, what it holds. */
static struct sched_preempt_cand cand(uint64_t id, uint32_t tier, double cost,
                                      const struct sched_alloc *alloc)
{
    return (struct sched_preempt_cand){.job_id = id, .tier = tier, .cost = cost, .alloc = alloc};
}

static const struct sched_req four = {.nodes = 1, .gpus_per_node = 4, .cores_per_node = 1};

Test(preempt, chooses_the_least_lost_work_and_spares_what_it_can)
{
    struct sched_preempt_cand c[3];

    run_on(0, 0, 4); /* A: all of n0, dear */
    run_on(1, 1, 2); /* B and C share n1, cheaper together */
    run_on(2, 1, 2);
    c[0] = cand(1, 0, 100, &held[0]);
    c[1] = cand(2, 0, 10, &held[1]);
    c[2] = cand(3, 0, 50, &held[2]);
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
    c[0] = cand(1, 0, 5, &held[0]);
    c[1] = cand(2, 0, 7, &held[1]);
    cr_assert_eq(sched_preempt_choose(cluster, &two, 9, 1, c, 2), 1, "one job is enough");
    cr_assert_eq(c[0].preempted_by, 9);
    cr_assert_eq(c[1].preempted_by, 0);
}

Test(preempt, equal_tiers_are_never_preempted_and_what_ends_for_it_counts)
{
    struct sched_preempt_cand c[2];

    run_on(0, 0, 4);
    run_on(1, 1, 4);
    c[0] = cand(1, 1, 5, &held[0]);
    c[1] = cand(2, 2, 5, &held[1]);
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
    c[0] = cand(1, 0, 5, &held[0]);
    c[1] = cand(2, 2, 5, &held[1]);
    c[2] = cand(3, 2, 5, &held[2]);
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
    c[0] = cand(1, 0, 5, &held[0]);
    c[1] = cand(2, 0, 7, &held[1]);
    cr_assert_eq(sched_preempt_order(c, 2, &order), 0);
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &one, 8, 1, c, 2, order, &opened, NULL), 1);
    cr_assert_eq(c[0].preempted_by, 8, "the cheaper");
    cr_assert_eq(opened, 1, "n0 opened");
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &two, 9, 1, c, 2, order, &opened, NULL), 0,
                 "room where job 8's victim gave back: no victim of its own");
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 1);
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &two, 10, 1, c, 2, order, &opened, NULL), 1);
    cr_assert_eq(c[1].preempted_by, 10);
    cr_assert_eq(opened, 3);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 1), 2);
    free(order);
}

/* --- licenses ------------------------------------------------------------------------------ */

/* A candidate holding count of license 0 ("matlab"). */
static struct sched_preempt_cand cand_lic(uint64_t id, double cost, const struct sched_alloc *alloc,
                                          const struct sched_license_need *held_lic)
{
    struct sched_preempt_cand c = cand(id, 0, cost, alloc);

    c.licenses = held_lic;
    c.nlicenses = 1;
    return c;
}

Test(preempt, a_job_waiting_for_licenses_preempts_the_cheapest_holders_it_needs)
{
    static const struct sched_license_need one = {0, 1}, two = {0, 2}, need = {0, 2};
    struct sched_preempt_cand c[3], *order[3];
    int64_t free_lic[1] = {0};
    struct sched_preempt_lic lic = {&need, 1, free_lic, true};
    struct sched_req small = {.nodes = 1, .gpus_per_node = 1, .cores_per_node = 1};

    run_on(0, 0, 1);
    run_on(1, 0, 1);
    run_on(2, 1, 1);
    c[0] = cand_lic(1, 10, &held[0], &one);
    c[1] = cand(2, 0, 5, &held[1]); /* cheapest, but holds no license */
    c[2] = cand_lic(3, 20, &held[2], &two);
    for (int i = 0; i < 3; i++)
        order[i] = &c[i];
    order[0] = &c[1];
    order[1] = &c[0];
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &small, 9, 1, c, 3, order, NULL, &lic), 1);
    cr_assert_eq(c[2].preempted_by, 9, "its two seats are what the job needs");
    cr_assert_eq(c[0].preempted_by, 0, "one seat: spared once the dearer one was chosen");
    cr_assert_eq(c[1].preempted_by, 0, "its GPUs were never wanted");
    cr_assert_eq(free_lic[0], 0, "the two given back are the job's now");
    /* A second job of the pass needing one: job 9 took what job 3 frees; job 1 goes. */
    lic.need = &one;
    cr_assert_eq(sched_preempt_choose_ordered(cluster, &small, 10, 1, c, 3, order, NULL, &lic), 1);
    cr_assert_eq(c[0].preempted_by, 10);
    cr_assert_eq(free_lic[0], 0);
}

Test(preempt, licenses_and_nodes_are_freed_together_at_the_least_cost)
{
    static const struct sched_license_need one = {0, 1};
    struct sched_preempt_cand c[3];
    int64_t free_lic[1] = {0};
    struct sched_preempt_lic lic = {&one, 1, free_lic, false};
    struct sched_alloc small;
    uint64_t allowed = 1;
    struct sched_req core = {.nodes = 1, .cores_per_node = 1, .allowed = &allowed};

    run_on(0, 0, 4); /* n0's GPUs, no license, cheap */
    run_on(1, 1, 4); /* n1's GPUs and the license, dear */
    sched_alloc_init(&small);
    cr_assert_eq(sched_cluster_place(cluster, &core, NULL, &small), 0);
    sched_cluster_take(cluster, &small); /* a core of n0 and the license, cheapest */
    c[0] = cand(1, 0, 5, &held[0]);
    c[1] = cand_lic(2, 50, &held[1], &one);
    c[2] = cand_lic(3, 1, &small, &one);
    {
        struct sched_preempt_cand *order[3] = {&c[2], &c[0], &c[1]};

        cr_assert_eq(sched_preempt_choose_ordered(cluster, &four, 10, 1, c, 3, order, NULL, &lic),
                     2);
    }
    cr_assert_eq(c[2].preempted_by, 10, "the license, cheapest");
    cr_assert_eq(c[0].preempted_by, 10, "n0's GPUs");
    cr_assert_eq(c[1].preempted_by, 0, "both at once, but dearer than the two");
    cr_assert_eq(free_lic[0], 0);
    cr_assert_eq(sched_cluster_free_gpus(cluster, 0), 0, "the job took n0's GPUs in sim");
    sched_alloc_release(&small);
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

/* --- licenses in the planner ------------------------------------------------------------------ */

static struct gs_config_license matlab = {.name = "matlab", .count = 2};

static void with_licenses(void)
{
    with_qos();
    cfg.licenses = &matlab;
    cfg.nlicenses = 1;
}

static void without_licenses(void)
{
    cfg.licenses = NULL;
    cfg.nlicenses = 0;
    without_qos();
}

/* A job of QOS q with gpus GPUs holding n seats of matlab. */
static struct sched_job *add_licensed(struct sched_jobs *jobs, uint64_t id, const char *q,
                                      uint32_t gpus, uint32_t n)
{
    struct sched_job *job = add_job(jobs, id, q, gpus, "alice");

    job->spec->licenses = calloc(1, sizeof(*job->spec->licenses));
    cr_assert_not_null(job->spec->licenses);
    job->spec->licenses[0] = (struct gs_job_license){strdup("matlab"), n};
    job->spec->nlicenses = 1;
    return job;
}

/* Room on the nodes but not a seat: the high job preempts the cheapest low holders that
 * free enough, and not a job of its own tier nor one holding no seat. */
Test(preempt, the_planner_preempts_for_licenses_the_holders_of_lower_tiers, .init = with_licenses,
     .fini = without_licenses)
{
    struct sched_jobs *jobs = sched_jobs_new(cluster);
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_plan_out out;
    struct sched_job *old, *young, *none, *h;
    size_t from = 0;

    cr_assert_not_null(jobs);
    old = add_licensed(jobs, 1, "low", 1, 1);
    none = add_job(jobs, 2, "low", 1, "bob");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 2000, &out), 0);
    start_all(&out);
    young = add_licensed(jobs, 3, "high", 1, 1); /* the other seat, at tier 1: never a victim */
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 3000, &out), 0);
    start_all(&out);
    h = add_licensed(jobs, 4, "high", 1, 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_str_eq(h->reason, "Licenses");
    cr_assert_eq(out.npreempt, 1);
    cr_assert_eq(out.preempt[0].victim, old);
    cr_assert_eq(out.preempt[0].by, h);
    cr_assert_eq(none->preempted_by, 0);
    cr_assert_eq(young->preempted_by, 0);
    old->preempted_by = h->id;
    sched_plan_out_release(&out);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 13000, &out), 0);
    cr_assert_eq(out.npreempt, 0, "it waits for its victim's seat");
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
}

/* Two seats asked of a cluster whose only lower-tier holder has one: no victim. */
Test(preempt, no_victim_when_the_holders_cannot_free_enough, .init = with_licenses,
     .fini = without_licenses)
{
    struct sched_jobs *jobs = sched_jobs_new(cluster);
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    struct sched_plan_out out;
    struct sched_job *low;

    size_t from = 0;

    cr_assert_not_null(jobs);
    low = add_licensed(jobs, 1, "low", 1, 1);
    add_licensed(jobs, 2, "high", 1, 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 2000, &out), 0);
    start_all(&out);
    add_licensed(jobs, 3, "high", 1, 2);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_eq(out.npreempt, 0);
    cr_assert_eq(low->preempted_by, 0);
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
}
