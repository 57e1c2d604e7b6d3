/*
 * run.c: one replay of a trace under one policy (see run.h). The loop:
 *
 *   now = the next arrival or end, or when the last pass asked to plan again
 *   add the time since the last event to the time-weighted sums (state unchanged since)
 *   end the jobs due (sched_job_task_ended: their allocation goes back, usage is charged)
 *   add the jobs that arrive to the table (sched_jobs_add)
 *   multifactor: charge the running jobs, decay, refresh the fair-share factors
 *   one planning pass (sched_planner_pass); start what it starts (sched_job_start),
 *     fifo-firstfit giving back every start made behind a blocked job; -preempt: requeue
 *     the victims it chose (sched_job_requeue), each to stop after the kill grace
 *
 * Ends and victims' stops are kept in a binary heap. A preemption makes the victim's end
 * stale: each event carries its job's epoch, bumped at every preemption, and stale events
 * are dropped unseen (they never make an instant of their own). A trace job's table id is
 * its index + 1, so ids follow submit order, as the planner's tie-break expects; a requeued
 * job keeps it.
 */
#include "sim/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"
#include "common/units.h"
#include "scheduler/fairshare.h"
#include "scheduler/jobs.h"
#include "scheduler/planner.h"
#include "scheduler/priority.h"
#include "sim/data.h"
#include "sim/layout.h"
#include "sim/metrics.h"
#include "sim/model.h"

/* How often (virtual ms) multifactor charges running jobs and refreshes the factors, as
 * gschedd's cron does. */
#define CHARGE_EVERY_MS 60000

/* The two QOS of the -preempt policies (docs/policy.md, "Preemption"). */
#define QOS_NORMAL "normal"
#define QOS_URGENT "urgent"

/* The conservative policy's backfill depth: the first 32 blocked jobs hold reservations. */
#define CONSERVATIVE_DEPTH 32

const struct gs_sim_policy gs_sim_policies[] = {
    {"fifo-firstfit", false, false, false, false, GS_SIM_DATA_BLIND, 1},
    {"easy", true, false, false, false, GS_SIM_DATA_BLIND, 1},
    {"conservative", true, false, false, false, GS_SIM_DATA_BLIND, CONSERVATIVE_DEPTH},
    {"multifactor", true, true, false, false, GS_SIM_DATA_BLIND, 1},
    {"fifo-topo", false, false, true, false, GS_SIM_DATA_BLIND, 1},
    {"easy-topo", true, false, true, false, GS_SIM_DATA_BLIND, 1},
    {"multifactor-topo", true, true, true, false, GS_SIM_DATA_BLIND, 1},
    {"easy-preempt", true, false, false, true, GS_SIM_DATA_BLIND, 1},
    {"multifactor-preempt", true, true, false, true, GS_SIM_DATA_BLIND, 1},
    {"easy-topo-preempt", true, false, true, true, GS_SIM_DATA_BLIND, 1},
    {"multifactor-topo-preempt", true, true, true, true, GS_SIM_DATA_BLIND, 1},
    {"easy-data", true, false, false, false, GS_SIM_DATA_TIEBREAK, 1},
    {"easy-data-wait", true, false, false, false, GS_SIM_DATA_WAIT, 1},
    {"easy-data-ski", true, false, false, false, GS_SIM_DATA_SKI, 1},
};
const size_t gs_sim_npolicies = sizeof(gs_sim_policies) / sizeof(gs_sim_policies[0]);

const struct gs_sim_policy *gs_sim_policy_find(const char *name)
{
    for (size_t i = 0; i < gs_sim_npolicies; i++) {
        if (strcmp(gs_sim_policies[i].name, name) == 0)
            return &gs_sim_policies[i];
    }
    return NULL;
}

struct end_event {
    uint64_t at_ms;
    uint32_t job;   /* trace index */
    uint32_t epoch; /* its job's epoch when pushed: stale once that moved on */
    bool stop;      /* a victim's stop after the kill grace, not its end */
};

/* A replayed job's work across attempts. */
struct sim_job {
    uint64_t work_ms; /* trace run time still to do, as of its last checkpoint */
    uint64_t run_ms;  /* the current attempt's run time (its copy, then work_ms stretched) */
    uint64_t copy_ms; /* the current attempt's copy of its data's missing bytes */
    uint64_t held_ms; /* time it held its allocation in earlier attempts */
    uint32_t epoch;   /* preemptions so far */
};

struct run {
    const struct gs_sim_trace *t;
    const struct gs_sim_policy *p;
    const struct gs_config *cfg;
    struct gs_sim_result *r;
    struct sched_cluster *cluster; /* what the planner places on */
    struct sched_cluster *truth;   /* every node's links, for the stretch */
    struct sched_jobs *jobs;
    struct sched_fairshare *fs;
    struct sched_prio_cluster prio_cluster;
    size_t plan_from;
    size_t next; /* the next trace job to arrive */
    struct end_event *heap;
    size_t nheap, heap_cap;
    struct sim_job *sj;                 /* one per trace job */
    struct gs_sim_preempt_model model;  /* -preempt */
    struct gs_config qcfg;              /* -preempt: cfg's copy with the two QOS */
    struct gs_config_qos qos[2];        /* its [[qos]] */
    const struct gs_sim_data_model *dm; /* datasets 0: none */
    struct gs_sim_caches *caches;       /* dm's node caches */
    struct gs_config dcfg;              /* -data-wait, -data-ski: cfg's copy with the wait */
    uint64_t now, last, charged_at;
    uint64_t wake_ms; /* when the last pass asked to plan again (a data wait's end); 0: never */
    uint64_t total_gpus, alloc_gpus;
    size_t npending;
    const double *shares;   /* each account's entitled share */
    uint32_t *acct_pending; /* jobs waiting */
    uint64_t *acct_held;    /* GPUs held */
    uint64_t *acct_wanted;  /* GPUs of the jobs waiting */
    double *demand, *fair;  /* scratch, one per account */
    double *acct_fair_ms;   /* max-min fair GPU-time while a job waits */
    double *acct_got_ms;    /* GPU-time held then */
    double queued_ms, queued_alloc, queued_free, alloc_all, stretch_sum, copy_sum_ms;
    size_t started;
};

/* ---- the end heap ---- */

static int heap_push(struct run *run, struct end_event e)
{
    size_t i;

    if (run->nheap == run->heap_cap) { /* stale ends of victims stay until popped */
        size_t cap = run->heap_cap ? run->heap_cap * 2 : 1024;
        struct end_event *h = realloc(run->heap, cap * sizeof(*h));

        if (h == NULL)
            return -ENOMEM;
        run->heap = h;
        run->heap_cap = cap;
    }
    i = run->nheap++;

    while (i > 0 && run->heap[(i - 1) / 2].at_ms > e.at_ms) {
        run->heap[i] = run->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    run->heap[i] = e;
    return 0;
}

static struct end_event heap_pop(struct run *run)
{
    struct end_event top = run->heap[0], last = run->heap[--run->nheap];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= run->nheap)
            break;
        if (c + 1 < run->nheap && run->heap[c + 1].at_ms < run->heap[c].at_ms)
            c++;
        if (run->heap[c].at_ms >= last.at_ms)
            break;
        run->heap[i] = run->heap[c];
        i = c;
    }
    if (run->nheap > 0)
        run->heap[i] = last;
    return top;
}

static bool heap_stale(const struct run *run, const struct end_event *e)
{
    return e->epoch != run->sj[e->job].epoch;
}

/* Drops stale events off the top, so that the top is the next real one. */
static void heap_drop_stale(struct run *run)
{
    while (run->nheap > 0 && heap_stale(run, &run->heap[0]))
        (void)heap_pop(run);
}

/* ---- clusters ---- */

static int add_nodes(struct sched_cluster *c, const struct gs_sim_trace *t, bool links)
{
    struct gs_gpuset_link matrix[GS_GPUSET_MAX * GS_GPUSET_MAX];
    int gpu_numa[GS_GPUSET_MAX], core_numa[SCHED_MAX_CORES];

    for (size_t i = 0; i < t->nnodes; i++) {
        const struct gs_sim_node *n = &t->nodes[i];
        struct sched_node_info info = {.name = n->name,
                                       .ngpus = n->ngpus,
                                       .ncores = n->ncores,
                                       .mem_mib = n->mem_mib,
                                       .gpu_numa = gpu_numa,
                                       .core_numa = core_numa,
                                       .links = links ? matrix : NULL,
                                       .switch_id = n->switch_id};
        int rc;

        gs_sim_layout_links(n->links, n->ngpus, matrix);
        gs_sim_layout_numa(n->ngpus, n->ncores, gpu_numa, core_numa);
        if ((rc = sched_cluster_add_node(c, &info)) < 0)
            return rc;
    }
    return 0;
}

/* ---- fair share and priority ---- */

static int assoc_of(struct run *run, struct sched_job *job)
{
    if (job->fs_assoc == 0) {
        int a = sched_fairshare_assoc(run->fs, job->spec->account, job->user);

        if (a < 0)
            return a;
        job->fs_assoc = a + 1;
    }
    return job->fs_assoc - 1;
}

static uint64_t alloc_gpus(const struct sched_alloc *alloc)
{
    uint64_t n = 0;

    for (uint32_t i = 0; i < alloc->nnodes; i++)
        n += (uint64_t)__builtin_popcountll(alloc->nodes[i].gpus);
    return n;
}

/* Charges job's use from what was charged last to now_ms (as sched_policy.c does). */
static void charge(struct run *run, struct sched_job *job, uint64_t now_ms)
{
    uint64_t from = job->charged_ms > job->start_ms ? job->charged_ms : job->start_ms;
    uint64_t cores = 0, mem = 0;
    int a;

    if (run->fs == NULL || now_ms <= from || job->alloc.nnodes == 0)
        return;
    for (uint32_t i = 0; i < job->alloc.nnodes; i++) {
        const struct sched_node_alloc *na = &job->alloc.nodes[i];

        cores += sched_node_alloc_cores(na);
        mem += na->mem_mib;
    }
    a = assoc_of(run, job);
    if (a >= 0)
        sched_fairshare_charge(
            run->fs, a,
            sched_billing_rate(&run->cfg->priority, alloc_gpus(&job->alloc), cores, mem) *
                (double)(now_ms - from) / 1000.0);
    job->charged_ms = now_ms;
}

static void on_stop(void *data, struct sched_job *job)
{
    struct run *run = data;

    charge(run, job, job->end_ms);
}

static int32_t priority_hook(void *data, struct sched_job *job, uint64_t now_ms)
{
    struct run *run = data;
    int a = run->cfg->priority.weight_fairshare > 0 ? assoc_of(run, job) : -1;

    sched_priority(run->cfg, job->spec, job->submit_ms, now_ms,
                   a >= 0 ? sched_fairshare_factor(run->fs, a) : 0, &run->prio_cluster, &job->prio);
    job->prio_valid = true;
    return job->prio.priority;
}

/* Every CHARGE_EVERY_MS: running jobs charged to now, usage decayed, factors refreshed. */
static void refresh_fairshare(struct run *run)
{
    size_t n = sched_jobs_count(run->jobs);

    if (run->fs == NULL || run->now < run->charged_at + CHARGE_EVERY_MS)
        return;
    for (size_t i = run->plan_from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(run->jobs, i);

        if (job->state == SCHED_JOB_RUNNING)
            charge(run, job, run->now);
    }
    sched_fairshare_decay(run->fs, run->now);
    sched_fairshare_update(run->fs);
    run->charged_at = run->now;
}

/* ---- events ---- */

/* The time-weighted sums over [last, now), in which nothing changed. */
static void account_time(struct run *run)
{
    double dt = (double)(run->now - run->last);

    run->alloc_all += dt * (double)run->alloc_gpus;
    if (run->npending > 0) {
        run->queued_ms += dt;
        run->queued_alloc += dt * (double)run->alloc_gpus;
        run->queued_free += dt * (double)(run->total_gpus - run->alloc_gpus);
    }
    if (run->npending > 0 && dt > 0) {
        size_t na = run->t->naccounts;

        for (size_t a = 0; a < na; a++)
            run->demand[a] = (double)(run->acct_held[a] + run->acct_wanted[a]);
        gs_sim_fair_shares(run->shares, run->demand, na, (double)run->total_gpus, run->fair);
        for (size_t a = 0; a < na; a++) {
            run->acct_fair_ms[a] += dt * run->fair[a];
            run->acct_got_ms[a] += dt * (double)run->acct_held[a];
        }
    }
    run->last = run->now;
}

/* A victim's kill grace is over: its tasks end and, requeued, it is PENDING again. */
static void stop_victim(struct run *run, uint32_t i)
{
    const struct gs_sim_job *tj = &run->t->jobs[i];
    struct sched_job *job = sched_jobs_find(run->jobs, i + 1);
    uint64_t gpus = alloc_gpus(&job->alloc);

    charge(run, job, run->now); /* a requeue has no end time for the stop hook to charge to */
    run->sj[i].held_ms += run->now - job->start_ms;
    run->alloc_gpus -= gpus;
    run->acct_held[tj->account] -= gpus;
    for (uint32_t rank = 0; rank < job->ntasks; rank++)
        sched_job_task_ended(job, rank, SCHED_TASK_CANCELLED, 0, 15, run->now);
    run->npending++;
    run->acct_pending[tj->account]++;
    run->acct_wanted[tj->account] += (uint64_t)tj->nodes * tj->gpus_per_node;
}

/* A job's run is over: it ends by itself, or by its time limit. */
static void end_job(struct run *run, uint32_t i)
{
    const struct gs_sim_job *tj = &run->t->jobs[i];
    struct sched_job *job = sched_jobs_find(run->jobs, i + 1);
    uint64_t limit_ms = job->spec->time_limit_s * 1000;
    enum sched_task_end how =
        run->now - job->start_ms >= limit_ms ? SCHED_TASK_TIMEOUT : SCHED_TASK_EXITED;

    run->alloc_gpus -= alloc_gpus(&job->alloc);
    run->acct_held[tj->account] -= alloc_gpus(&job->alloc);
    for (uint32_t rank = 0; rank < job->ntasks; rank++)
        sched_job_task_ended(job, rank, how, 0, 0, run->now);
    run->r->finished++;
    run->r->timeouts += job->state == SCHED_JOB_TIMEOUT;
}

static void end_jobs(struct run *run)
{
    while (run->nheap > 0 && run->heap[0].at_ms <= run->now) {
        struct end_event e = heap_pop(run);

        if (heap_stale(run, &e))
            continue;
        if (e.stop)
            stop_victim(run, e.job);
        else
            end_job(run, e.job);
    }
}

static struct gs_jobspec *make_spec(const struct run *run, const struct gs_sim_job *tj)
{
    struct gs_jobspec *spec = gs_jobspec_new();

    if (spec == NULL)
        return NULL;
    spec->nodes = tj->nodes;
    spec->gpus_per_node = tj->gpus_per_node;
    spec->cpus_per_task = tj->cores_per_node;
    spec->mem_per_node_mib = tj->mem_per_node_mib;
    spec->time_limit_s = gs_sim_time_limit_s(tj->duration_ms);
    if (run->dm->datasets > 0) { /* its dataset; its user adds the longest copy to its limit */
        snprintf(spec->data.id, sizeof(spec->data.id), "d%u", tj->dataset);
        spec->time_limit_s += run->dm->dataset_bytes / run->dm->copy_rate + 1;
    }
    spec->account = strdup(run->t->accounts[tj->account]);
    if (run->p->preempt)
        spec->qos = strdup(tj->urgent ? QOS_URGENT : QOS_NORMAL);
    if (spec->account == NULL || (run->p->preempt && spec->qos == NULL)) {
        gs_jobspec_free(spec);
        return NULL;
    }
    return spec;
}

static int admit_jobs(struct run *run)
{
    char why[160];

    while (run->next < run->t->njobs && run->t->jobs[run->next].submit_ms <= run->now) {
        size_t i = run->next++;
        const struct gs_sim_job *tj = &run->t->jobs[i];
        struct sched_req req = {.nodes = tj->nodes,
                                .gpus_per_node = tj->gpus_per_node,
                                .cores_per_node = tj->cores_per_node,
                                .mem_per_node_mib = tj->mem_per_node_mib};
        struct gs_jobspec *spec;
        struct sched_job *job;

        if (tj->impossible || !sched_cluster_could_ever_fit(run->cluster, &req, why, sizeof(why))) {
            run->r->impossible++;
            continue;
        }
        if ((spec = make_spec(run, tj)) == NULL)
            return -ENOMEM;
        job = sched_jobs_add(run->jobs, i + 1, spec, run->now);
        if (job == NULL)
            return -ENOMEM;
        snprintf(job->user, sizeof(job->user), "%s", run->t->accounts[tj->account]);
        run->r->jobs++;
        run->npending++;
        run->acct_pending[tj->account]++;
        run->acct_wanted[tj->account] += (uint64_t)tj->nodes * tj->gpus_per_node;
    }
    return 0;
}

/* The copy of dataset d's bytes alloc's nodes lack, before the job can run (data.h). */
static int stage(struct run *run, uint32_t d, const struct sched_alloc *alloc, uint64_t *ret_ms)
{
    uint32_t nodes[SCHED_MAX_JOB_NODES];
    uint32_t n = alloc->nnodes < SCHED_MAX_JOB_NODES ? alloc->nnodes : SCHED_MAX_JOB_NODES;
    int rc;

    for (uint32_t k = 0; k < n; k++)
        nodes[k] = alloc->nodes[k].node;
    rc = gs_sim_caches_stage(run->caches, d, nodes, n, run->now, ret_ms, &run->r->copied_bytes);
    if (rc == 0) {
        run->copy_sum_ms += (double)*ret_ms;
        run->r->copies += *ret_ms > 0;
    }
    return rc;
}

/* The planner's view of a job's dataset in the nodes' caches, as gschedd's registry gives
 * it (-data policies only). The hook sees only the spec: make_spec names the dataset
 * "d<index>", read back here. */
static int data_masks(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m)
{
    struct run *run = data;
    size_t n = run->t->nnodes;

    *m = (struct sched_node_masks){0};
    if (spec->data.id[0] != 'd')
        return 0;
    m->data_bytes = calloc(n + 1, sizeof(*m->data_bytes));
    if (m->data_bytes == NULL)
        return -ENOMEM;
    gs_sim_caches_bytes(run->caches, (uint32_t)strtoul(spec->data.id + 1, NULL, 10), m->data_bytes);
    return 0;
}

static int start_job(struct run *run, struct sched_job *job, const struct sched_alloc *alloc)
{
    const struct gs_sim_job *tj = &run->t->jobs[job->id - 1];
    struct sim_job *sj = &run->sj[job->id - 1];
    double stretch = gs_sim_stretch(run->truth, alloc, run->t->nodes);
    uint64_t run_ms = gs_sim_run_ms(sj->work_ms, stretch), copy_ms = 0;
    uint64_t limit_ms = job->spec->time_limit_s * 1000;
    int rc = run->caches != NULL ? stage(run, tj->dataset, alloc, &copy_ms) : 0;

    if (rc == 0)
        rc = sched_job_start(job, alloc, 1, run->now);
    if (rc < 0)
        return rc;
    run_ms += copy_ms;
    sj->run_ms = run_ms;
    sj->copy_ms = copy_ms;
    job->preempted_by = 0; /* as gschedd's launch: a new attempt, no checkpoint yet */
    job->checkpoint_ms = 0;
    job->charged_ms = run->now;
    run->npending--;
    run->acct_pending[tj->account]--;
    run->acct_wanted[tj->account] -= (uint64_t)tj->nodes * tj->gpus_per_node;
    run->alloc_gpus += alloc_gpus(alloc);
    run->acct_held[tj->account] += alloc_gpus(alloc);
    run->stretch_sum += stretch;
    run->started++;
    return heap_push(run, (struct end_event){run->now + (run_ms < limit_ms ? run_ms : limit_ms),
                                             (uint32_t)(job->id - 1), sj->epoch, false});
}

/*
 * Every running job's latest checkpoint, what the planner counts a victim's lost work from:
 * one every checkpoint_ms of the attempt since it started (none yet: 0). Victims already
 * stopping are left as they stopped.
 */
static void checkpoint(struct run *run)
{
    uint64_t every = run->model.checkpoint_ms;
    size_t n = sched_jobs_count(run->jobs);

    for (size_t i = run->plan_from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(run->jobs, i);
        uint64_t ran = run->now - job->start_ms;

        if (job->state != SCHED_JOB_RUNNING || job->preempted_by != 0)
            continue;
        job->checkpoint_ms = every > 0 && ran >= every ? job->start_ms + ran / every * every : 0;
    }
}

/*
 * The pass's victims, requeued as gschedd does (sched_job_requeue): each stops working now,
 * losing what it did since its last checkpoint, and keeps its allocation through the kill
 * grace (a stop event); its work left is what it had left at that checkpoint.
 */
static int preempt_victims(struct run *run, const struct sched_plan_out *out)
{
    char why[96];

    for (size_t k = 0; k < out->npreempt; k++) {
        struct sched_job *v = out->preempt[k].victim;
        uint32_t i = (uint32_t)(v->id - 1);
        struct sim_job *sj = &run->sj[i];
        uint64_t since = v->checkpoint_ms > v->start_ms ? v->checkpoint_ms : v->start_ms;
        uint64_t done, ran;
        int rc;

        snprintf(why, sizeof(why), "preempted by job %llu (QOS " QOS_URGENT ")",
                 (unsigned long long)out->preempt[k].by->id);
        if (v->state != SCHED_JOB_RUNNING || v->preempted_by != 0 ||
            sched_job_requeue(v, false, why) < 0)
            continue;
        v->preempted_by = out->preempt[k].by->id;
        /* The attempt copied its data, then ran its work stretched: the checkpoint saved
         * that share of the work. */
        ran = since - v->start_ms > sj->copy_ms ? since - v->start_ms - sj->copy_ms : 0;
        done =
            sj->run_ms > sj->copy_ms
                ? (uint64_t)((double)sj->work_ms * (double)ran / (double)(sj->run_ms - sj->copy_ms))
                : 0;
        sj->work_ms = done < sj->work_ms ? sj->work_ms - done : 1;
        run->r->gpu_hours_lost +=
            (double)alloc_gpus(&v->alloc) * (double)(run->now - since) / 3.6e6;
        run->r->preemptions++;
        run->r->preempted_jobs += sj->epoch == 0;
        sj->epoch++; /* its end is stale now */
        rc = heap_push(run,
                       (struct end_event){run->now + run->model.kill_grace_ms, i, sj->epoch, true});
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int plan(struct run *run)
{
    struct sched_planner_hooks hooks = {
        .masks = run->caches != NULL && run->p->data != GS_SIM_DATA_BLIND ? data_masks : NULL,
        .priority = run->p->multifactor ? priority_hook : NULL,
        .data = run,
        .backfill_depth = run->p->depth,
        .cfg = run->p->preempt                                                       ? &run->qcfg
               : run->p->data == GS_SIM_DATA_WAIT || run->p->data == GS_SIM_DATA_SKI ? &run->dcfg
                                                                                     : NULL};
    struct sched_plan_out out;
    int rc;

    if (run->p->preempt)
        checkpoint(run);
    rc = sched_planner_pass(run->jobs, &run->plan_from, run->cluster, &hooks, run->now, &out);
    if (rc < 0)
        return rc;
    run->wake_ms = out.wake_ms > run->now ? out.wake_ms : 0; /* gschedd arms a timer */
    run->r->passes++;
    for (size_t i = 0; i < out.n; i++) {
        struct sched_verdict *v = &out.verdicts[i];

        if (!v->start)
            continue;
        if (v->backfilled && !run->p->backfill) {
            sched_cluster_give_back(run->cluster, &v->alloc); /* FIFO: no jumping the queue */
            continue;
        }
        if (rc == 0)
            rc = start_job(run, out.jobs[i], &v->alloc);
        if (rc < 0) /* out of memory: what it and the rest took goes back; the run stops */
            sched_cluster_give_back(run->cluster, &v->alloc);
    }
    if (rc == 0)
        rc = preempt_victims(run, &out);
    sched_plan_out_release(&out);
    return rc;
}

static int add_point(struct run *run)
{
    struct gs_sim_result *r = run->r;
    struct gs_sim_point p = {run->now, (uint32_t)run->alloc_gpus, (uint32_t)run->npending};

    if (r->nseries > 0 && r->series[r->nseries - 1].alloc_gpus == p.alloc_gpus &&
        r->series[r->nseries - 1].pending == p.pending)
        return 0;
    if (r->nseries == r->series_cap) {
        size_t cap = r->series_cap ? r->series_cap * 2 : 1024;
        struct gs_sim_point *s = realloc(r->series, cap * sizeof(*s));

        if (s == NULL)
            return -ENOMEM;
        r->series = s;
        r->series_cap = cap;
    }
    r->series[r->nseries++] = p;
    return 0;
}

/* When the next arrival or (real) event is; the stale events on top are dropped. */
static uint64_t next_event(struct run *run)
{
    uint64_t t = UINT64_MAX;

    heap_drop_stale(run);
    if (run->next < run->t->njobs)
        t = run->t->jobs[run->next].submit_ms;
    if (run->nheap > 0 && run->heap[0].at_ms < t)
        t = run->heap[0].at_ms;
    if (run->wake_ms > 0 && run->wake_ms < t)
        t = run->wake_ms;
    return t;
}

static int loop(struct run *run)
{
    int rc = 0;

    while (rc == 0 && (run->now = next_event(run)) != UINT64_MAX) {
        account_time(run);
        end_jobs(run);
        rc = admit_jobs(run);
        if (rc == 0) {
            refresh_fairshare(run);
            rc = plan(run);
        }
        if (rc == 0)
            rc = add_point(run);
    }
    return rc;
}

/* ---- results ---- */

/*
 * JCT and queueing delay of the jobs that ended: means and 99th percentiles, makespan; the
 * same means over the urgent ones. A job's queueing delay is the time it did not hold an
 * allocation: for a job preempted, its waits before every attempt.
 */
static int job_times(struct run *run)
{
    struct gs_sim_result *r = run->r;
    double *jct = malloc((r->finished + 1) * sizeof(double));
    double *wait = malloc((r->finished + 1) * sizeof(double));
    double urgent_jct = 0, urgent_wait = 0;
    uint64_t last_end = 0;
    size_t n = 0;
    int rc = -ENOMEM;

    if (jct == NULL || wait == NULL)
        goto out;
    for (size_t i = 0; i < sched_jobs_count(run->jobs) && n < r->finished; i++) {
        const struct sched_job *job = sched_jobs_at(run->jobs, i);

        if (!sched_job_finished(job))
            continue;
        jct[n] = (double)(job->end_ms - job->submit_ms) / 1000.0;
        wait[n] = (double)(job->start_ms - job->submit_ms - run->sj[job->id - 1].held_ms) / 1000.0;
        if (run->t->jobs[job->id - 1].urgent) {
            r->urgent++;
            urgent_jct += jct[n];
            urgent_wait += wait[n];
        }
        n++;
        last_end = job->end_ms > last_end ? job->end_ms : last_end;
    }
    r->urgent_avg_jct_s = r->urgent > 0 ? urgent_jct / (double)r->urgent : 0;
    r->urgent_avg_wait_s = r->urgent > 0 ? urgent_wait / (double)r->urgent : 0;
    r->avg_jct_s = gs_sim_mean(jct, n);
    r->p99_jct_s = gs_sim_percentile(jct, n, 99);
    r->avg_wait_s = gs_sim_mean(wait, n);
    r->p99_wait_s = gs_sim_percentile(wait, n, 99);
    r->makespan_s = (double)last_end / 1000.0; /* the first submit is at 0 */
    rc = 0;
out:
    free(jct);
    free(wait);
    return rc;
}

/* The time-weighted figures and Jain's index, once the jobs' times are in. */
static int summarise(struct run *run)
{
    struct gs_sim_result *r = run->r;
    double span_ms = r->makespan_s * 1000.0, gpus = (double)run->total_gpus;
    double *x = malloc((run->t->naccounts + 1) * sizeof(double));
    size_t nx = 0;

    if (x == NULL)
        return -ENOMEM;
    r->alloc_queued =
        run->queued_ms > 0 && gpus > 0 ? run->queued_alloc / (run->queued_ms * gpus) : 0;
    r->stranded_gpus = run->queued_ms > 0 ? run->queued_free / run->queued_ms : 0;
    r->util = span_ms > 0 && gpus > 0 ? run->alloc_all / (span_ms * gpus) : 0;
    r->queued_share = span_ms > 0 ? run->queued_ms / span_ms : 0;
    r->avg_stretch = run->started > 0 ? run->stretch_sum / (double)run->started : 1;
    r->avg_copy_s = run->started > 0 ? run->copy_sum_ms / 1000.0 / (double)run->started : 0;
    for (size_t a = 0; a < run->t->naccounts; a++) {
        if (run->acct_fair_ms[a] > 0)
            x[nx++] = run->acct_got_ms[a] / run->acct_fair_ms[a];
    }
    r->jain = gs_sim_jain(x, nx);
    free(x);
    return 0;
}

static int setup(struct run *run)
{
    size_t na = run->t->naccounts + 1;

    run->cluster = sched_cluster_new();
    run->truth = sched_cluster_new();
    run->heap_cap = run->t->njobs + 1; /* grows past that only with victims' stale ends */
    run->heap = malloc(run->heap_cap * sizeof(*run->heap));
    run->sj = calloc(run->t->njobs + 1, sizeof(*run->sj));
    run->acct_pending = calloc(na, sizeof(*run->acct_pending));
    run->acct_held = calloc(na, sizeof(*run->acct_held));
    run->acct_wanted = calloc(na, sizeof(*run->acct_wanted));
    run->demand = calloc(na, sizeof(double));
    run->fair = calloc(na, sizeof(double));
    run->acct_fair_ms = calloc(na, sizeof(double));
    run->acct_got_ms = calloc(na, sizeof(double));
    if (run->cluster == NULL || run->truth == NULL || run->heap == NULL || run->sj == NULL ||
        run->acct_pending == NULL || run->acct_held == NULL || run->acct_wanted == NULL ||
        run->demand == NULL || run->fair == NULL || run->acct_fair_ms == NULL ||
        run->acct_got_ms == NULL)
        return -ENOMEM;
    if (add_nodes(run->cluster, run->t, run->p->topo) < 0 || add_nodes(run->truth, run->t, true))
        return -EINVAL;
    run->jobs = sched_jobs_new(run->cluster);
    if (run->jobs == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < run->t->nnodes; i++) {
        run->prio_cluster.gpus += run->t->nodes[i].ngpus;
        run->prio_cluster.cores += run->t->nodes[i].ncores;
    }
    run->total_gpus = run->prio_cluster.gpus;
    for (size_t i = 0; i < run->t->njobs; i++)
        run->sj[i].work_ms = run->t->jobs[i].duration_ms;
    if (run->p->preempt) {
        /* Only the [[qos]] differ from cfg: the planner reads nothing else of it. */
        run->qcfg = run->cfg != NULL ? *run->cfg : (struct gs_config){0};
        run->qos[0] =
            (struct gs_config_qos){.name = (char *)QOS_NORMAL, .max_wall_s = GS_DURATION_INFINITE};
        run->qos[1] = (struct gs_config_qos){
            .name = (char *)QOS_URGENT, .tier = 1, .max_wall_s = GS_DURATION_INFINITE};
        run->qcfg.qos = run->qos;
        run->qcfg.nqos = 2;
    }
    if (run->dm->datasets > 0 && (run->caches = gs_sim_caches_new(run->t->nnodes, run->dm)) == NULL)
        return -ENOMEM;
    /* Only the data keys differ from cfg: the planner reads nothing else of it here. */
    run->dcfg = run->cfg != NULL ? *run->cfg : (struct gs_config){0};
    run->dcfg.qos = NULL;
    run->dcfg.nqos = 0;
    run->dcfg.data_locality = GS_DATA_LOCALITY_TIEBREAK;
    run->dcfg.data_locality_wait_s = (uint32_t)run->dm->wait_s;
    run->dcfg.data_copy_rate_mib = run->p->data == GS_SIM_DATA_SKI
                                       ? run->dm->copy_rate / GS_MIB + (run->dm->copy_rate < GS_MIB)
                                       : 0;
    if (run->p->multifactor) {
        if (run->cfg == NULL)
            return -EINVAL;
        run->fs = sched_fairshare_new(run->cfg, 0);
        if (run->fs == NULL)
            return -ENOMEM;
        sched_jobs_on_stop(run->jobs, on_stop, run);
    }
    return 0;
}

int gs_sim_run(const struct gs_sim_trace *t, const struct gs_sim_policy *policy,
               const struct gs_config *cfg, const double *shares,
               const struct gs_sim_preempt_model *model, const struct gs_sim_data_model *data,
               struct gs_sim_result *ret)
{
    static const struct gs_sim_data_model no_data = {0};
    struct gs_sim_result r = {.policy = policy->name, .preempt = policy->preempt};
    struct run run = {.t = t,
                      .p = policy,
                      .cfg = cfg,
                      .r = &r,
                      .shares = shares,
                      .model = {GS_SIM_DEFAULT_CHECKPOINT_MS, GS_SIM_DEFAULT_KILL_GRACE_MS},
                      .dm = data != NULL && data->datasets > 0 && data->copy_rate > 0 ? data
                                                                                      : &no_data};
    int rc;

    if (model != NULL)
        run.model = *model;
    rc = setup(&run);
    if (rc == 0)
        rc = loop(&run);
    if (rc == 0)
        rc = job_times(&run);
    if (rc == 0)
        rc = summarise(&run);
    sched_jobs_free(run.jobs); /* before the cluster its jobs give back to */
    sched_fairshare_free(run.fs);
    sched_cluster_free(run.cluster);
    sched_cluster_free(run.truth);
    gs_sim_caches_free(run.caches);
    free(run.heap);
    free(run.sj);
    free(run.acct_pending);
    free(run.acct_held);
    free(run.acct_wanted);
    free(run.demand);
    free(run.fair);
    free(run.acct_fair_ms);
    free(run.acct_got_ms);
    if (rc < 0) {
        gs_sim_result_release(&r);
        return rc;
    }
    *ret = r;
    return 0;
}

void gs_sim_result_release(struct gs_sim_result *r)
{
    free(r->series);
    r->series = NULL;
    r->nseries = r->series_cap = 0;
}
