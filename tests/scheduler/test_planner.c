/*
 * test_planner.c: the planning pass over a job table with no daemon around it, as the
 * simulator runs it: which pending jobs it considers (held, dependencies, array throttle,
 * node masks from the caller), the verdicts, the reasons and expected start written into
 * the waiting jobs, and the finished jobs it skips for good.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/license.h"
#include "scheduler/planner.h"

static struct sched_cluster *cluster;
static struct sched_jobs *jobs;
static struct sched_plan_out out;

static void setup(void)
{
    struct sched_node_info n0 = {.name = "n0", .ngpus = 4, .ncores = 16, .mem_mib = 1024};
    struct sched_node_info n1 = {.name = "n1", .ngpus = 4, .ncores = 16, .mem_mib = 1024};

    cluster = sched_cluster_new();
    cr_assert_not_null(cluster);
    cr_assert_eq(sched_cluster_add_node(cluster, &n0), 0, "node index 0");
    cr_assert_eq(sched_cluster_add_node(cluster, &n1), 1, "node index 1");
    jobs = sched_jobs_new(cluster);
    cr_assert_not_null(jobs);
    memset(&out, 0, sizeof(out));
}

static void teardown(void)
{
    sched_plan_out_release(&out);
    sched_jobs_free(jobs);
    sched_cluster_free(cluster);
}

TestSuite(planner, .init = setup, .fini = teardown);

static struct sched_job *add(uint64_t id, uint32_t gpus, int32_t priority, uint64_t limit_s)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *job;

    cr_assert_not_null(spec);
    spec->gpus_per_node = gpus;
    spec->priority = priority;
    spec->time_limit_s = limit_s;
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

/* Starts what the pass gave a start, as the daemon's engine does. */
static void start_all(uint64_t now_ms)
{
    for (size_t i = 0; i < out.n; i++) {
        if (out.verdicts[i].start)
            cr_assert_eq(sched_job_start(out.jobs[i], &out.verdicts[i].alloc,
                                         gs_jobspec_tasks_per_node(out.jobs[i]->spec), now_ms),
                         0);
    }
    sched_plan_out_release(&out);
}

Test(planner, starts_in_priority_order_and_says_why_the_others_wait)
{
    size_t from = 0;

    add(1, 4, 0, 3600);
    add(2, 4, 5, 3600);
    add(3, 4, 0, 3600);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 10000, &out), 0);
    cr_assert_eq(out.n, 3);
    cr_assert(verdict_of(2)->start, "the highest priority first");
    cr_assert(verdict_of(1)->start);
    cr_assert_not(verdict_of(3)->start, "two nodes of 4 GPUs are taken");
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Resources");
    /* The blocked job holds the reservation: it starts when the first job's limit ends. */
    cr_assert_eq(out.res.job_id, 3);
    start_all(10000);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 20000, &out), 0);
    cr_assert_eq(out.n, 1);
    cr_assert_not(out.verdicts[0].start);
    cr_assert_eq(sched_jobs_find(jobs, 3)->expected_start_ms, (10 + 3600) * 1000,
                 "the earliest end of a running job's time limit");
}

/* The nodes the pass set aside for the jobs it would start, back to the cluster, unstarted. */
static void give_back_all(void)
{
    for (size_t i = 0; i < out.n; i++)
        if (out.verdicts[i].start)
            sched_cluster_give_back(cluster, &out.verdicts[i].alloc);
    sched_plan_out_release(&out);
}

/* sbatch --switches=1@60: the job waits for nodes under one switch 60 s from its submission,
 * then takes any; scheduler.max_switch_wait caps its wait. */
Test(planner, a_switch_count_is_waited_for_as_long_as_the_job_said)
{
    struct sched_node_info n2 = {
        .name = "n2", .ngpus = 4, .ncores = 16, .mem_mib = 1024, .switch_id = 1};
    struct sched_node_info n3 = {
        .name = "n3", .ngpus = 4, .ncores = 16, .mem_mib = 1024, .switch_id = 2};
    struct gs_config cfg = {.max_switch_wait_s = 30};
    struct sched_planner_hooks capped = {.cfg = &cfg};
    struct sched_job *job;
    size_t from = 0;

    cr_assert_eq(sched_cluster_add_node(cluster, &n2), 2);
    cr_assert_eq(sched_cluster_add_node(cluster, &n3), 3);
    job = add(1, 4, 0, 3600); /* submitted at 1 s */
    job->spec->nodes = 2;
    job->spec->switches = 1;
    job->spec->switch_wait_set = true;
    job->spec->switch_wait_s = 60;
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 60000, &out), 0);
    cr_assert_not(verdict_of(1)->start, "four nodes, none two under one switch");
    cr_assert_str_eq(job->reason, "Resources");
    cr_assert_eq(out.wake_ms, 61000, "planned again when its wait ends: %llu",
                 (unsigned long long)out.wake_ms);
    sched_plan_out_release(&out);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &capped, 31000, &out), 0);
    cr_assert(verdict_of(1)->start, "scheduler.max_switch_wait (30 s) caps the job's 60 s");
    give_back_all();
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 60999, &out), 0);
    cr_assert_not(verdict_of(1)->start, "still within its 60 s");
    sched_plan_out_release(&out);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 61000, &out), 0);
    cr_assert(verdict_of(1)->start, "60 s after its submission it takes any two nodes");
    give_back_all();
    job->spec->switches = 2;
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 2000, &out), 0);
    cr_assert(verdict_of(1)->start, "two switches: at once (%s)", job->reason);
}

Test(planner, leaves_out_held_dependent_and_throttled_jobs)
{
    struct sched_job *held = add(1, 1, 0, 60), *dep = add(2, 1, 0, 60), *e[3];
    size_t from = 0;

    held->held = true;
    dep->spec->deps = calloc(1, sizeof(*dep->spec->deps));
    cr_assert_not_null(dep->spec->deps);
    dep->spec->ndeps = 1;
    dep->spec->deps[0] = (struct gs_dep){.type = GS_DEP_AFTEROK, .job_id = 1};
    for (int i = 0; i < 3; i++) { /* an array of three with %1 */
        e[i] = add(10 + (uint64_t)i, 1, 0, 60);
        e[i]->spec->array = (struct gs_job_array){
            .array_job_id = 10, .task_id = (uint32_t)i, .count = 3, .throttle = 1};
    }
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 10000, &out), 0);
    cr_assert_eq(out.n, 1, "only the array's first element is considered");
    cr_assert_eq(out.jobs[0]->id, 10);
    cr_assert(out.verdicts[0].start);
    cr_assert_str_eq(held->reason, "Held");
    cr_assert_str_eq(dep->reason, "Dependency");
    cr_assert_str_eq(e[1]->reason, "JobArrayTaskLimit");
    cr_assert_str_eq(e[2]->reason, "JobArrayTaskLimit");
    start_all(10000);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 11000, &out), 0);
    cr_assert_eq(out.n, 0, "its one slot is taken while element 0 runs");
}

/* The caller's masks: job 2 may use n1 only. */
static int only_n1(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    int *calls = data;

    (*calls)++;
    *m = (struct sched_node_masks){0};
    if (spec->priority != 7)
        return 0;
    m->allowed = calloc(1, sizeof(*m->allowed));
    if (m->allowed == NULL)
        return -ENOMEM;
    m->allowed[0] = UINT64_C(1) << 1;
    return 0;
}

Test(planner, takes_node_masks_from_the_caller)
{
    int calls = 0;
    struct sched_planner_hooks masks = {.masks = only_n1, .data = &calls};
    size_t from = 0;

    add(1, 2, 7, 60);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &masks, 10000, &out), 0);
    cr_assert_eq(calls, 1);
    cr_assert(out.verdicts[0].start);
    cr_assert_eq(out.verdicts[0].alloc.nnodes, 1);
    cr_assert_eq(out.verdicts[0].alloc.nodes[0].node, 1, "n1, not the first node");
}

Test(planner, skips_the_finished_jobs_at_the_front_for_good)
{
    size_t from = 0;
    struct sched_job *a = add(1, 1, 0, 60);

    add(2, 1, 0, 60);
    cr_assert(sched_job_cancel(a, 5000));
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, NULL, 10000, &out), 0);
    cr_assert_eq(from, 1, "job 1 has ended: passes start after it");
    cr_assert_eq(out.n, 1);
    cr_assert_eq(out.jobs[0]->id, 2);
}

Test(planner, computes_what_a_job_asks_of_each_node)
{
    struct gs_jobspec spec = {
        .nodes = 2, .gpus_per_node = 4, .tasks_per_gpu = true, .cpus_per_task = 3};
    struct sched_req req;

    sched_job_req(&spec, &req);
    cr_assert_eq(gs_jobspec_tasks_per_node(&spec), 4, "a task per GPU");
    cr_assert_eq(req.nodes, 2);
    cr_assert_eq(req.cores_per_node, 12);
    spec.cpus_per_gpu = 5;
    sched_job_req(&spec, &req);
    cr_assert_eq(req.cores_per_node, 20);
}

Test(planner, a_heterogeneous_job_asks_each_component_of_its_own_nodes)
{
    struct gs_het_component het[2] = {
        {.nodes = 2, .cpus_per_task = 2, .tasks_per_node = 3},
        {.nodes = 1, .gpus_per_node = 2, .cpus_per_gpu = 4, .tasks_per_node = 1}};
    struct gs_jobspec spec = {.nodes = 1,
                              .gpus_per_node = 1,
                              .cpus_per_task = 1,
                              .tasks_per_node = 1,
                              .het = het,
                              .nhet = 2};
    struct sched_node_masks m = {0};
    struct sched_req req;

    cr_assert_eq(sched_job_req_masked(&spec, &m, &req), 0);
    cr_assert_eq(req.nodes, 1);
    cr_assert_eq(req.gpus_per_node, 1);
    cr_assert_eq(req.nhet, 2);
    cr_assert_eq(req.het[0].nodes, 2);
    cr_assert_eq(req.het[0].cores_per_node, 6, "3 tasks of 2 CPUs");
    cr_assert_eq(req.het[1].gpus_per_node, 2);
    cr_assert_eq(req.het[1].cores_per_node, 8, "4 CPUs per GPU");
    sched_node_masks_release(&m);
}

Test(planner, with_a_backfill_depth_each_reserved_job_has_an_expected_start)
{
    struct sched_planner_hooks hooks = {.backfill_depth = 2};
    size_t from = 0;

    add(1, 4, 9, 3600);
    add(2, 4, 9, 7200);
    add(3, 4, 5, 3600);
    add(4, 4, 4, 3600);
    add(5, 4, 3, 3600);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 10000, &out), 0);
    start_all(10000); /* jobs 1 and 2 take both nodes */
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 20000, &out), 0);
    cr_assert_eq(sched_jobs_find(jobs, 3)->expected_start_ms, (10 + 3600) * 1000,
                 "when job 1's limit ends");
    cr_assert_eq(sched_jobs_find(jobs, 4)->expected_start_ms, (10 + 7200) * 1000,
                 "job 3 takes job 1's node then: job 2's");
    cr_assert_eq(sched_jobs_find(jobs, 5)->expected_start_ms, 0, "past the depth: none");
}

static struct gs_job_license *licenses_of(const char *name, uint32_t count)
{
    struct gs_job_license *l = calloc(1, sizeof(*l));

    cr_assert_not_null(l);
    l->name = strdup(name);
    cr_assert_not_null(l->name);
    l->count = count;
    return l;
}

static struct sched_job *add_licensed(uint64_t id, int32_t priority, const char *name,
                                      uint32_t count)
{
    struct sched_job *job = add(id, 1, priority, 3600);

    job->spec->licenses = licenses_of(name, count);
    job->spec->nlicenses = 1;
    return job;
}

Test(planner, a_job_waits_while_others_hold_its_licenses_and_lets_the_rest_by)
{
    static struct gs_config_license matlab = {.name = "matlab", .count = 2};
    struct gs_config cfg;
    struct sched_planner_hooks hk = {.cfg = &cfg};
    size_t from = 0;

    cr_assert_eq(gs_config_init(&cfg), 0);
    cfg.licenses = &matlab;
    cfg.nlicenses = 1;
    add_licensed(1, 10, "matlab", 2);
    add_licensed(2, 5, "matlab", 1);
    add(3, 1, 1, 3600);
    add_licensed(4, 0, "ansys", 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 10000, &out), 0);
    cr_assert(verdict_of(1)->start);
    cr_assert_not(verdict_of(2)->start, "job 1 holds both matlab seats");
    cr_assert_str_eq(sched_jobs_find(jobs, 2)->reason, "Licenses");
    cr_assert(verdict_of(3)->start, "needs no license: goes by job 2");
    cr_assert_not(verdict_of(4)->start);
    cr_assert_str_eq(sched_jobs_find(jobs, 4)->reason, "Licenses", "not configured: never free");
    start_all(10000);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 20000, &out), 0);
    cr_assert_not(verdict_of(2)->start, "running job 1 still holds them");
    cfg.licenses = NULL;
    cfg.nlicenses = 0;
    gs_config_release(&cfg);
}

/* A cluster configuration with 4 matlab seats (released by the test with gs_config_release
 * once it has taken them back: cfg->licenses = NULL, nlicenses = 0). */
static void four_matlab(struct gs_config *cfg)
{
    static struct gs_config_license matlab = {.name = "matlab", .count = 4};

    cr_assert_eq(gs_config_init(cfg), 0);
    cfg->licenses = &matlab;
    cfg->nlicenses = 1;
}

/* A reservation keeping kept (license 0) and no node, for user u, from start_ms on. */
static struct sched_planner_resv licenses_resv(const char *name, uint64_t start_ms,
                                               const struct sched_license_need *kept)
{
    static const uint64_t no_nodes[1] = {0};
    static const char *const users[] = {"u"};

    return (struct sched_planner_resv){.name = name,
                                       .start_ms = start_ms,
                                       .nodes = no_nodes,
                                       .users = users,
                                       .nusers = 1,
                                       .any_nodes = true,
                                       .nodeless = true,
                                       .licenses = kept,
                                       .nlicenses = 1};
}

/*
 * scontrol create reservation Licenses=matlab:2 (no nodes): of the cluster's 4 seats, jobs
 * outside it take only what its 2 leave, while its own jobs draw on them first; what a job
 * takes once started is its own count, not what it was checked for.
 */
Test(planner, a_reservation_keeps_its_licenses_for_its_own_jobs)
{
    static const struct sched_license_need kept = {0, 2};
    struct sched_planner_resv r = licenses_resv("r", 1000, &kept);
    struct gs_config cfg;
    struct sched_planner_hooks hk = {.cfg = &cfg, .resv = &r, .nresv = 1};
    struct sched_job *own;
    size_t from = 0;

    four_matlab(&cfg);
    add_licensed(1, 5, "matlab", 1);
    add_licensed(2, 4, "matlab", 1);
    add_licensed(3, 3, "matlab", 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 10000, &out), 0);
    cr_assert(verdict_of(1)->start, "1 + the 2 kept of 4");
    cr_assert(verdict_of(2)->start, "job 1 holds 1 seat, not the 3 it was checked for");
    cr_assert_not(verdict_of(3)->start, "the last 2 are the reservation's");
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Licenses");
    start_all(10000);
    own = add_licensed(4, 9, "matlab", 2); /* in the reservation: its 2 */
    own->spec->reservation = strdup("r");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 20000, &out), 0);
    cr_assert(verdict_of(4)->start, "its reservation's seats");
    cr_assert_not(verdict_of(3)->start);
    start_all(20000);
    own = add_licensed(5, 9, "matlab", 1); /* its reservation's are in use: none left */
    own->spec->reservation = strdup("r");
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 30000, &out), 0);
    cr_assert_not(verdict_of(5)->start, "all 4 held");
    cr_assert_str_eq(sched_jobs_find(jobs, 5)->reason, "Licenses");
    cfg.licenses = NULL;
    cfg.nlicenses = 0;
    gs_config_release(&cfg);
}

/* A reservation's licenses matter to the jobs its window meets, not to those ending first. */
Test(planner, licenses_kept_later_leave_jobs_that_end_before_alone)
{
    static const struct sched_license_need kept = {0, 3};
    struct sched_planner_resv r = licenses_resv("later", 10000 + 7200 * 1000, &kept);
    struct gs_config cfg;
    struct sched_planner_hooks hk = {.cfg = &cfg, .resv = &r, .nresv = 1};
    struct sched_job *long_job;
    size_t from = 0;

    four_matlab(&cfg);
    add_licensed(1, 5, "matlab", 2); /* an hour: ends before the reservation starts */
    long_job = add_licensed(2, 4, "matlab", 2);
    long_job->spec->time_limit_s = 3 * 3600;
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 10000, &out), 0);
    cr_assert(verdict_of(1)->start);
    cr_assert_not(verdict_of(2)->start, "3 hours: it would hold 2 of the 3 kept from hour 2");
    cfg.licenses = NULL;
    cfg.nlicenses = 0;
    gs_config_release(&cfg);
}

Test(planner, licenses_are_counted_and_refused_by_what_the_cluster_has)
{
    static struct gs_config_license lic[] = {{.name = "matlab", .count = 3},
                                             {.name = "fluent", .count = 1}};
    struct gs_config cfg = {.licenses = lic, .nlicenses = 2};
    struct gs_job_license two[] = {{"matlab", 2}, {"fluent", 1}}, one = {"matlab", 1};
    struct gs_jobspec a = {.licenses = two, .nlicenses = 2}, b = {.licenses = &one, .nlicenses = 1};
    struct sched_license_use u;
    char why[200];

    struct sched_license_need need[2];
    uint32_t *total;

    cr_assert_eq(sched_license_use_init(&u, &cfg), 0);
    sched_license_take(&u, &a);
    cr_assert_eq(u.used[0], 2);
    cr_assert_eq(u.used[1], 1);
    sched_license_take(&u, &b);
    cr_assert_eq(u.used[0], 3);
    sched_license_take(&u, &a);
    cr_assert_eq(u.used[0], 3, "never counted past the total");
    sched_license_use_release(&u);
    total = sched_license_totals(&cfg);
    cr_assert_not_null(total);
    cr_assert(total[0] == 3 && total[1] == 1);
    free(total);
    sched_license_needs(&cfg, &a, need);
    cr_assert(need[0].license == 0 && need[0].count == 2 && need[1].license == 1 &&
              need[1].count == 1);
    cr_assert_eq(sched_license_admit(&cfg, &a, why, sizeof(why)), 0);
    two[0].count = 4;
    cr_assert_eq(sched_license_admit(&cfg, &a, why, sizeof(why)), -EINVAL);
    cr_assert_str_eq(why, "resources.licenses: 4 of 'matlab' asked for, the cluster has 3");
    one.name = "ansys";
    cr_assert_eq(sched_license_admit(&cfg, &b, why, sizeof(why)), -EINVAL);
    cr_assert_str_eq(why,
                     "resources.licenses: no license 'ansys' (this cluster has matlab, fluent)");
    sched_license_needs(&cfg, &b, need);
    cr_assert_eq(need[0].license, 2, "not configured: an index past the licenses");
    cfg.nlicenses = 0;
    cr_assert_eq(sched_license_admit(&cfg, &b, why, sizeof(why)), -EINVAL);
    cr_assert_str_eq(why, "resources.licenses: this cluster has no licenses (no 'ansys')");
}

Test(planner, licenses_a_job_waits_for_are_not_given_to_the_jobs_behind_it)
{
    static struct gs_config_license lic[] = {{.name = "matlab", .count = 3},
                                             {.name = "fluent", .count = 1},
                                             {.name = "ansys", .count = 1}};
    struct gs_config cfg;
    struct sched_planner_hooks hk = {.cfg = &cfg};
    struct sched_job *five;
    size_t from = 0;

    cr_assert_eq(gs_config_init(&cfg), 0);
    cfg.licenses = lic;
    cfg.nlicenses = 3;
    add_licensed(1, 10, "matlab", 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 10000, &out), 0);
    start_all(10000); /* job 1 holds one seat of three */
    add_licensed(2, 9, "matlab", 3);
    add_licensed(3, 8, "matlab", 1);
    add_licensed(4, 7, "fluent", 1);
    five = add_licensed(5, 6, "ansys", 1);
    five->spec->licenses = realloc(five->spec->licenses, 2 * sizeof(*five->spec->licenses));
    cr_assert_not_null(five->spec->licenses);
    five->spec->licenses[1] = (struct gs_job_license){strdup("gone"), 1};
    five->spec->nlicenses = 2;
    add_licensed(6, 5, "matlab", 1);
    add_licensed(7, 4, "ansys", 1);
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hk, 20000, &out), 0);
    cr_assert_not(verdict_of(2)->start, "two seats free, three needed");
    cr_assert_not(verdict_of(3)->start, "its seat would delay job 2");
    cr_assert_str_eq(sched_jobs_find(jobs, 3)->reason, "Priority");
    cr_assert_str_eq(sched_jobs_find(jobs, 2)->reason, "Licenses");
    cr_assert_eq(sched_jobs_find(jobs, 2)->expected_start_ms, (10 + 3600) * 1000,
                 "job 2 holds a reservation from when job 1 gives its seat back");
    cr_assert(verdict_of(4)->start, "fluent is nobody's to wait for");
    cr_assert_not(verdict_of(5)->start, "a license not configured");
    cr_assert_not(verdict_of(6)->start);
    cr_assert(verdict_of(7)->start, "job 5 can never run, so it claims no ansys seat");
    cfg.licenses = NULL;
    cfg.nlicenses = 0;
    gs_config_release(&cfg);
}

/* A job whose dependency can never be met is handed back to be cancelled where the
 * cluster says so (kill_invalid_depend) or it asked to be (--kill-on-invalid-dep=yes),
 * and left waiting where it said no or neither is set. */
Test(planner, jobs_whose_dependencies_can_never_be_met_are_given_up_as_asked)
{
    struct sched_job *failed = add(1, 1, 0, 60), *by_default = add(2, 1, 0, 60),
                     *yes = add(3, 1, 0, 60), *no = add(4, 1, 0, 60), *waits = add(5, 1, 0, 60);
    struct gs_config cfg = {0};
    struct sched_planner_hooks hooks = {.cfg = &cfg};
    size_t from = 0;

    for (uint64_t id = 2; id <= 5; id++) {
        struct gs_jobspec *sp = sched_jobs_find(jobs, id)->spec;

        sp->deps = calloc(1, sizeof(*sp->deps));
        cr_assert_not_null(sp->deps);
        sp->ndeps = 1;
        sp->deps[0] = (struct gs_dep){.type = GS_DEP_AFTEROK, .job_id = 1};
    }
    waits->spec->deps[0].type = GS_DEP_AFTERNOTOK; /* met once job 1 failed */
    yes->spec->kill_invalid_dep = GS_KILL_INVALID_DEP_YES;
    no->spec->kill_invalid_dep = GS_KILL_INVALID_DEP_NO;
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 10000, &out), 0);
    cr_assert_eq(out.ninvalid_dep, 0, "job 1 may still complete");
    start_all(10000);
    cr_assert(sched_job_task_ended(failed, 0, SCHED_TASK_EXITED, 1, 0, 11000));
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 12000, &out), 0);
    cr_assert_eq(out.ninvalid_dep, 1);
    cr_assert_eq(out.invalid_dep[0], yes);
    cr_assert_str_eq(by_default->reason, "DependencyNeverSatisfied");
    cr_assert_str_eq(no->reason, "DependencyNeverSatisfied");
    cr_assert_eq(verdict_of(5) != NULL && verdict_of(5)->start, true);
    start_all(12000);
    cfg.kill_invalid_depend = true;
    cr_assert_eq(sched_planner_pass(jobs, &from, cluster, &hooks, 13000, &out), 0);
    cr_assert_eq(out.ninvalid_dep, 2, "the cluster's setting, and the job's own yes");
    cr_assert_eq(out.invalid_dep[0], by_default);
    cr_assert_eq(out.invalid_dep[1], yes);
}
