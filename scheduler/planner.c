/*
 * planner.c: the planning pass over the job table (see planner.h). It gathers the pending
 * jobs that may start and the running ones whose ends the reservation is computed from,
 * hands them to plan.c, and writes why each other job waits.
 */
#include "scheduler/planner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"

void sched_node_masks_apply(const struct sched_node_masks *m, struct sched_req *req)
{
    req->allowed = m->allowed;
    req->required = m->required;
    req->nrequired = m->nrequired;
}

void sched_node_masks_release(struct sched_node_masks *m)
{
    free(m->allowed);
    free(m->required);
    *m = (struct sched_node_masks){0};
}

uint32_t sched_tasks_per_node(const struct gs_jobspec *spec)
{
    if (spec->tasks_per_gpu)
        return spec->gpus_per_node > 0 ? spec->gpus_per_node : 1;
    return spec->tasks_per_node > 0 ? spec->tasks_per_node : 1;
}

void sched_job_req(const struct gs_jobspec *spec, struct sched_req *req)
{
    uint32_t cores = spec->cpus_per_gpu > 0 ? spec->cpus_per_gpu * spec->gpus_per_node
                                            : (spec->cpus_per_task > 0 ? spec->cpus_per_task : 1) *
                                                  sched_tasks_per_node(spec);

    *req = (struct sched_req){.nodes = spec->nodes,
                              .gpus_per_node = spec->gpus_per_node,
                              .cores_per_node = cores,
                              .mem_per_node_mib = spec->mem_per_node_mib,
                              .exclusive = spec->exclusive,
                              .constraint = spec->constraint,
                              .affinity =
                                  spec->gpu_affinity == GS_GPU_AFFINITY_STRICT ? GS_GPUSET_STRICT
                                  : spec->gpu_affinity == GS_GPU_AFFINITY_ANY  ? GS_GPUSET_ANY
                                                                               : GS_GPUSET_PREFER};
}

/*
 * sbatch --array=...%N: at most N elements of an array run at once. Elements have
 * consecutive ids, so the pass meets each array's elements in a row and counts once per
 * array; slots go to pending elements in id order.
 */
struct throttle {
    uint64_t array_job_id;
    uint32_t slots;
};

static bool throttle_admits(struct sched_jobs *jobs, struct throttle *th,
                            const struct sched_job *job)
{
    const struct gs_job_array *a = &job->spec->array;

    if (a->array_job_id == 0 || a->throttle == 0)
        return true;
    if (th->array_job_id != a->array_job_id) {
        uint32_t running = 0;

        for (uint64_t id = a->array_job_id; id < a->array_job_id + a->count; id++) {
            const struct sched_job *e = sched_jobs_find(jobs, id);
            running += e != NULL && e->spec->array.array_job_id == a->array_job_id &&
                       e->state == SCHED_JOB_RUNNING;
        }
        th->array_job_id = a->array_job_id;
        th->slots = running < a->throttle ? a->throttle - running : 0;
    }
    if (th->slots == 0)
        return false;
    th->slots--;
    return true;
}

/* The pass's inputs, built from the table; masks[i] backs pending[i].req. */
struct gathered {
    struct sched_pending *pending;
    struct sched_running *running;
    struct sched_node_masks *masks;
    size_t nrunning;
};

static int gather(struct sched_jobs *jobs, size_t from, const struct sched_planner_hooks *hk,
                  uint64_t now_ms, struct gathered *g, struct sched_plan_out *out)
{
    size_t n = sched_jobs_count(jobs), span = n - from;
    struct throttle th = {0};

    g->pending = malloc((span + 1) * sizeof(*g->pending));
    g->running = malloc((span + 1) * sizeof(*g->running));
    g->masks = calloc(span + 1, sizeof(*g->masks));
    out->jobs = malloc((span + 1) * sizeof(*out->jobs));
    if (g->pending == NULL || g->running == NULL || g->masks == NULL || out->jobs == NULL)
        return -ENOMEM;
    for (size_t i = from; i < n; i++) {
        struct sched_job *job = sched_jobs_at(jobs, i);
        struct sched_pending *p = &g->pending[out->n];
        const char *why;

        if (job->state == SCHED_JOB_RUNNING) {
            uint64_t lim = job->spec->time_limit_s;
            g->running[g->nrunning++] = (struct sched_running){
                job->id,
                lim == GS_DURATION_INFINITE ? SCHED_TIME_INFINITE : job->start_ms / 1000 + lim,
                &job->alloc};
        }
        if (job->state != SCHED_JOB_PENDING)
            continue;
        if ((why = sched_job_hold_reason(jobs, job)) != NULL) {
            snprintf(job->reason, sizeof(job->reason), "%s", why);
            continue;
        }
        if (!throttle_admits(jobs, &th, job)) {
            snprintf(job->reason, sizeof(job->reason), "JobArrayTaskLimit");
            continue;
        }
        if (hk != NULL && hk->masks != NULL &&
            hk->masks(hk->data, job->spec, &g->masks[out->n]) < 0)
            continue; /* out of memory: it waits for the next pass */
        out->jobs[out->n] = job;
        p->job_id = job->id;
        p->priority = hk != NULL && hk->priority != NULL ? hk->priority(hk->data, job, now_ms)
                                                         : job->spec->priority - job->spec->nice;
        p->submit_seq = job->submit_seq;
        p->time_limit_s = job->spec->time_limit_s == GS_DURATION_INFINITE ? SCHED_TIME_INFINITE
                                                                          : job->spec->time_limit_s;
        sched_job_req(job->spec, &p->req);
        sched_node_masks_apply(&g->masks[out->n], &p->req);
        out->n++;
    }
    return 0;
}

int sched_planner_pass(struct sched_jobs *jobs, size_t *plan_from, struct sched_cluster *cluster,
                       const struct sched_planner_hooks *hooks, uint64_t now_ms,
                       struct sched_plan_out *out)
{
    size_t n = sched_jobs_count(jobs);
    struct gathered g = {0};
    int rc;

    *out = (struct sched_plan_out){.res = {0, SCHED_TIME_INFINITE}};
    /* Jobs before the oldest unfinished one never matter again: skip them for good. */
    while (*plan_from < n && sched_job_finished(sched_jobs_at(jobs, *plan_from)))
        (*plan_from)++;
    sched_jobs_set_now(jobs, now_ms / 1000 * 1000);
    rc = gather(jobs, *plan_from, hooks, now_ms, &g, out);
    out->timed_deps = sched_jobs_timed_waits(jobs);
    if (rc < 0 || out->n == 0)
        goto out;
    out->verdicts = calloc(out->n, sizeof(*out->verdicts));
    if (out->verdicts == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    sched_verdicts_init(out->verdicts, out->n);
    rc = sched_plan(cluster, g.pending, out->n, g.running, g.nrunning, now_ms / 1000, out->verdicts,
                    &out->res);
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        struct sched_job *job = out->jobs[i];

        if (out->verdicts[i].start)
            continue;
        snprintf(job->reason, sizeof(job->reason), "%s",
                 sched_reason_name(out->verdicts[i].reason));
        job->expected_start_ms =
            job->id == out->res.job_id && out->res.start_s != SCHED_TIME_INFINITE
                ? out->res.start_s * 1000
                : 0;
    }
out:
    for (size_t i = 0; g.masks != NULL && i < out->n; i++)
        sched_node_masks_release(&g.masks[i]);
    free(g.masks);
    free(g.pending);
    free(g.running);
    if (rc < 0)
        sched_plan_out_release(out);
    return rc;
}

void sched_plan_out_release(struct sched_plan_out *out)
{
    if (out->verdicts != NULL)
        sched_verdicts_release(out->verdicts, out->n);
    free(out->verdicts);
    free(out->jobs);
    *out = (struct sched_plan_out){.res = {0, SCHED_TIME_INFINITE}};
}
