/*
 * plan_pass.c: the time of one planning pass (scheduler/planner.h, the code gschedd runs
 * on every event) over a large queue, against the issue 18 aim of a pass over 100,000
 * pending jobs in under 50 ms. The cluster is NODES nodes of 8 NVLinked GPUs (the link
 * matrix of an NVSwitch node); the queue is PENDING jobs of 1 node x 1 GPU, or with GANG > 1
 * gangs of GANG whole nodes (8 GPUs each).
 *
 *     plan_pass [NODES [PENDING [REPS [full|empty|both|test [DEPTH [GANG [SWITCH [PARTS]]]]]]]]
 *                                     defaults 10000, 100000, 3, both, 1 (EASY), 1, 0, 0
 *
 * SWITCH > 0 hangs the nodes off switches of SWITCH nodes each (a gang's nodes then stay
 * under one where they can). PARTS > 1 splits the nodes into that many partitions of
 * consecutive nodes (as node[1-2500] and so on), each job in one of them in turn: every job
 * then has a node mask, as on a cluster whose partitions list their nodes. With SPREAD=1 in
 * the environment the running jobs of "full" started a second apart, so they end one by one
 * (a reservation's shadow time then walks their ends). With RESV_GPUS=1 GPUs 0-3 of the first
 * node are in an advance reservation no job names, so every job has reservations' GPU masks;
 * with RESV_MAGNETIC=1 it is a MAGNETIC one of every job's account, so every job prefers them.
 * With DATA=1 every job reads one dataset that the caches of 8 nodes, spread over the
 * cluster, hold some of (its nodes then scored one by one), listed for the placement as
 * gschedd lists them; DATA=2 the same without the list (every node's bytes looked at).
 * With FEATURES=EXPR every node has the features "ib" and "a100" (even nodes) or "h100"
 * (odd ones), and every pending job asks for EXPR as its constraint (sbatch -C).
 * With LICENSES=N the cluster has N seats of one license and every job, running or pending,
 * holds or asks for one (backfill then plans them too). With PREEMPT=N the first N pending
 * jobs are of a QOS of tier 1, which may preempt the running jobs (tier 0): in "full" each
 * chooses victims.
 * Two cases, each on a fresh table: "full" (every GPU already held by running jobs, so no
 * pending job fits: the pass decides that for each, the work of a busy cluster at every
 * event) and "empty" (the pass starts min(PENDING, GPUs) jobs: the first pass after a big
 * submit). Prints the best of REPS passes of each, in ms, and the table's memory per job.
 * DEPTH is scheduler.backfill_depth: how many blocked jobs hold a reservation. "test" is
 * the full case, then what sbatch --test-only costs there: sched_planner_will_run for a
 * one-GPU job behind the whole queue (SCHED_WILL_RUN_DEPTH reservations), its best of REPS
 * beside the pass's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/units.h"
#include "scheduler/planner.h"

#define GPUS 8

static struct sched_cluster *make_cluster(uint32_t nodes, uint32_t per_switch, bool features)
{
    static const char *even[] = {"ib", "a100"}, *odd[] = {"ib", "h100"};
    static struct gs_gpuset_link links[GPUS * GPUS];
    struct sched_cluster *c = sched_cluster_new();
    char name[32];

    for (int i = 0; i < GPUS * GPUS; i++)
        links[i] = (struct gs_gpuset_link){GS_GPUSET_NVLINK, 18};
    for (uint32_t i = 0; c != NULL && i < nodes; i++) {
        struct sched_node_info info = {.name = name,
                                       .ngpus = GPUS,
                                       .ncores = 64,
                                       .mem_mib = 1 << 20,
                                       .links = links,
                                       .switch_id = per_switch > 0 ? (int)(1 + i / per_switch) : 0,
                                       .features = i % 2 ? odd : even,
                                       .nfeatures = features ? 2 : 0};

        snprintf(name, sizeof(name), "n%u", i);
        if (sched_cluster_add_node(c, &info) < 0) {
            sched_cluster_free(c);
            return NULL;
        }
    }
    return c;
}

static struct sched_job *add(struct sched_jobs *jobs, uint64_t id, uint32_t gang, uint32_t parts,
                             bool lic, bool high, const char *constraint)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    char part[16];

    if (spec == NULL)
        return NULL;
    if (lic && ((spec->licenses = calloc(1, sizeof(*spec->licenses))) == NULL ||
                (spec->licenses[0].name = strdup("lic")) == NULL)) {
        gs_jobspec_free(spec);
        return NULL;
    }
    spec->nlicenses = lic;
    if (high && (spec->qos = strdup("hi")) == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    if (lic)
        spec->licenses[0].count = 1;
    snprintf(part, sizeof(part), "p%u", parts > 1 ? (uint32_t)(id % parts) : 0);
    if ((spec->partition = strdup(part)) == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    spec->nodes = gang;
    if ((spec->account = strdup("a")) == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    if (constraint != NULL && (spec->constraint = strdup(constraint)) == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    spec->gpus_per_node = gang > 1 ? GPUS : 1;
    spec->time_limit_s = 3600;
    return sched_jobs_add(jobs, id, spec, 1000);
}

/* One case: a table with running jobs holding every GPU when full, then pending ones. */
/* sched_planner_will_run's time for a one-GPU job behind the queue, into *best_ms. */
static int time_will_run(struct sched_jobs *jobs, struct sched_cluster *c,
                         const struct sched_planner_hooks *hooks, uint64_t id, double *best_ms)
{
    struct gs_jobspec *spec = gs_jobspec_new();
    struct sched_job *draft;
    struct sched_will_run w;
    uint64_t t0;
    int rc;

    if (spec == NULL)
        return -ENOMEM;
    spec->gpus_per_node = 1;
    spec->time_limit_s = 3600;
    if ((draft = sched_job_detached_new(id, spec, 1000)) == NULL)
        return -ENOMEM;
    t0 = gs_clock_mono_ns();
    rc = sched_planner_will_run(jobs, 0, c, hooks, 2000, draft, &w);
    if (rc == 0) {
        double ms = (double)(gs_clock_mono_ns() - t0) / 1e6;

        *best_ms = ms < *best_ms ? ms : *best_ms;
        sched_will_run_release(&w);
    }
    sched_job_detached_free(draft);
    return rc;
}

/* What one run sets up: the command line's figures. */
struct setup {
    uint32_t nodes, pending, depth, gang, per_switch, parts;
    int reps;
    bool spread, resv_gpus, resv_magnetic; /* SPREAD, RESV_GPUS, RESV_MAGNETIC set */
    int data;                              /* DATA: 0, 1 (listed) or 2 (not) */
    uint32_t licenses;                     /* LICENSES: seats of "lic" (0: none) */
    uint32_t preempt;                      /* PREEMPT: pending jobs of tier 1 */
    const char *features;                  /* FEATURES: the pending jobs' constraint */
    uint64_t *data_bytes;                  /* DATA's, per node ... */
    uint32_t data_nodes[8];                /* ... and where they are not 0 */
};

/* The masks hook with DATA (not with PARTS): the shared dataset, borrowed. */
static int data_masks(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    struct setup *su = data;

    (void)spec;
    *m = (struct sched_node_masks){.data_bytes = su->data_bytes,
                                   .data_nodes = su->data == 1 ? su->data_nodes : NULL,
                                   .ndata_nodes = 8,
                                   .data_borrowed = true};
    return 0;
}

/* The planner's masks hook with PARTS partitions: a job's partition ("p" and its number)
 * names the consecutive nodes it may use. */
static int part_masks(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    const struct setup *su = data;
    uint32_t part = (uint32_t)strtoul(spec->partition + 1, NULL, 10), per = su->nodes / su->parts;

    *m = (struct sched_node_masks){0};
    if ((m->allowed = calloc(su->nodes / 64 + 1, sizeof(*m->allowed))) == NULL)
        return -ENOMEM;
    for (uint32_t i = part * per; i < (part + 1) * per; i++)
        m->allowed[i / 64] |= UINT64_C(1) << (i % 64);
    return 0;
}

static int run_reps(const struct setup *su, bool full, const struct sched_planner_hooks *hooks,
                    double *best_ms, double *ask_ms)
{
    *best_ms = 1e30;
    for (int r = 0; r < su->reps; r++) {
        struct sched_cluster *c = make_cluster(su->nodes, su->per_switch, su->features != NULL);
        struct sched_jobs *jobs = c != NULL ? sched_jobs_new(c) : NULL;
        struct sched_plan_out out;
        uint64_t id = 1, t0;
        size_t from = 0;
        int rc = -ENOMEM;

        if (jobs == NULL)
            goto next;
        for (uint32_t i = 0; full && i < su->nodes; i++) {
            struct sched_job *job = add(jobs, id++, 1, 0, su->licenses > 0, false, NULL);
            struct sched_req req = {.nodes = 1, .gpus_per_node = GPUS, .cores_per_node = 8};
            struct sched_alloc a;

            sched_alloc_init(&a);
            if (job == NULL || sched_cluster_place(c, &req, NULL, &a) < 0)
                goto next;
            sched_cluster_take(c, &a);
            rc = sched_job_start(job, &a, 1, su->spread ? 1000 + 1000 * (uint64_t)i : 1000);
            sched_alloc_release(&a);
            if (rc < 0)
                goto next;
        }
        for (uint32_t i = 0; i < su->pending; i++) {
            if (add(jobs, id++, su->gang, su->parts, su->licenses > 0, i < su->preempt,
                    su->features) == NULL)
                goto next;
        }
        t0 = gs_clock_mono_ns();
        rc = sched_planner_pass(jobs, &from, c, hooks, 2000, &out);
        if (rc == 0) {
            double ms = (double)(gs_clock_mono_ns() - t0) / 1e6;

            *best_ms = ms < *best_ms ? ms : *best_ms;
            sched_plan_out_release(&out);
        }
        if (rc == 0 && ask_ms != NULL)
            rc = time_will_run(jobs, c, hooks, id, ask_ms);
    next:
        sched_jobs_free(jobs);
        sched_cluster_free(c);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int run_case(const struct setup *su, bool full, double *best_ms, double *ask_ms)
{
    struct sched_planner_hooks hooks = {.backfill_depth = su->depth,
                                        .masks = su->parts > 1  ? part_masks
                                                 : su->data > 0 ? data_masks
                                                                : NULL,
                                        .data = (void *)su};
    uint64_t *resv_nodes = calloc(su->nodes / 64 + 1, sizeof(uint64_t));
    uint64_t *resv_gpus = calloc(su->nodes + 1, sizeof(uint64_t));
    static const char *const accounts[] = {"a"};
    struct sched_planner_resv resv = {.name = "r",
                                      .nodes = resv_nodes,
                                      .gpus = resv_gpus,
                                      .magnetic = su->resv_magnetic,
                                      .accounts = accounts,
                                      .naccounts = 1};
    struct gs_config_license lic = {"lic", su->licenses};
    struct gs_config_qos hi = {.name = "hi", .tier = 1, .max_wall_s = GS_DURATION_INFINITE};
    struct gs_config cfg;
    int rc = gs_config_init(&cfg);

    if (rc < 0 || resv_nodes == NULL || resv_gpus == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if (su->licenses > 0) {
        cfg.licenses = &lic;
        cfg.nlicenses = 1;
        hooks.cfg = &cfg;
    }
    if (su->preempt > 0) {
        cfg.qos = &hi;
        cfg.nqos = 1;
        hooks.cfg = &cfg;
    }
    resv_nodes[0] = 1;
    resv_gpus[0] = 0xf;
    if (su->resv_gpus || su->resv_magnetic) {
        hooks.resv = &resv;
        hooks.nresv = 1;
    }
    rc = run_reps(su, full, &hooks, best_ms, ask_ms);
out:
    cfg.licenses = NULL; /* lic and hi are on the stack */
    cfg.nlicenses = 0;
    cfg.qos = NULL;
    cfg.nqos = 0;
    gs_config_release(&cfg);
    free(resv_nodes);
    free(resv_gpus);
    return rc;
}

int main(int argc, char **argv)
{
    struct setup su = {
        .nodes = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 10000,
        .pending = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 100000,
        .reps = argc > 3 ? atoi(argv[3]) : 3,
        .depth = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 1,
        .gang = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 1,
        .per_switch = argc > 7 ? (uint32_t)strtoul(argv[7], NULL, 10) : 0,
        .parts = argc > 8 ? (uint32_t)strtoul(argv[8], NULL, 10) : 0,
        .spread = getenv("SPREAD") != NULL,
        .resv_gpus = getenv("RESV_GPUS") != NULL,
        .resv_magnetic = getenv("RESV_MAGNETIC") != NULL,
        .data = getenv("DATA") != NULL ? atoi(getenv("DATA")) : 0,
        .licenses =
            getenv("LICENSES") != NULL ? (uint32_t)strtoul(getenv("LICENSES"), NULL, 10) : 0,
        .preempt = getenv("PREEMPT") != NULL ? (uint32_t)strtoul(getenv("PREEMPT"), NULL, 10) : 0,
        .features = getenv("FEATURES")};
    const char *which = argc > 4 ? argv[4] : "both";
    uint32_t nodes = su.nodes, pending = su.pending, depth = su.depth;
    double full_ms = 0, empty_ms = 0, ask_ms = 1e30;
    bool test = strcmp(which, "test") == 0;

    if (su.data > 0 && (su.data_bytes = calloc(nodes + 1, sizeof(uint64_t))) == NULL)
        return 1;
    for (uint32_t k = 0; su.data > 0 && k < 8; k++) {
        su.data_nodes[k] = k * (nodes / 8);
        su.data_bytes[su.data_nodes[k]] = (uint64_t)(1 + k % 3) << 30;
    }
    if (nodes < 8 || pending == 0 || su.reps < 1 || depth == 0 || su.gang == 0) {
        fprintf(stderr, "usage: plan_pass [NODES [PENDING [REPS [full|empty|both|test [DEPTH "
                        "[GANG [SWITCH [PARTS]]]]]]]]\n");
        return 2;
    }
    if ((strcmp(which, "empty") != 0 && run_case(&su, true, &full_ms, test ? &ask_ms : NULL) < 0) ||
        (strcmp(which, "full") != 0 && !test && run_case(&su, false, &empty_ms, NULL) < 0)) {
        fprintf(stderr, "plan_pass: out of memory\n");
        free(su.data_bytes);
        return 1;
    }
    free(su.data_bytes);
    if (test) {
        printf("plan_pass nodes=%u pending=%u depth=%u pass_ms=%.1f test_only_ms=%.1f "
               "ratio=%.2f\n",
               nodes, pending, depth, full_ms, ask_ms, ask_ms / full_ms);
        return 0;
    }
    printf("plan_pass nodes=%u gpus=%u pending=%u depth=%u gang=%u switch=%u parts=%u data=%d "
           "licenses=%u full_ms=%.1f empty_ms=%.1f job_bytes=%zu\n",
           nodes, nodes * GPUS, pending, depth, su.gang, su.per_switch, su.parts, su.data,
           su.licenses, full_ms, empty_ms, sizeof(struct sched_job) + sizeof(struct gs_jobspec));
    return 0;
}
