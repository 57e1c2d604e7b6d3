/*
 * jobs.c: the job table and job state machine (see jobs.h). The table is an array of
 * pointers kept in id order; ids grow with each submit, so adding is an append and lookup
 * a binary search.
 */
#include "scheduler/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sched_jobs {
    struct sched_job **v;
    size_t n;
    size_t cap;
};

static const char *const state_names[] = {
    [SCHED_JOB_PENDING] = "PENDING",     [SCHED_JOB_RUNNING] = "RUNNING",
    [SCHED_JOB_COMPLETED] = "COMPLETED", [SCHED_JOB_FAILED] = "FAILED",
    [SCHED_JOB_CANCELLED] = "CANCELLED", [SCHED_JOB_TIMEOUT] = "TIMEOUT",
    [SCHED_JOB_NODE_FAIL] = "NODE_FAIL", [SCHED_JOB_REQUEUED] = "REQUEUED",
};

const char *sched_job_state_name(enum sched_job_state state)
{
    if ((int)state < SCHED_JOB_PENDING || state > SCHED_JOB_REQUEUED)
        return "UNKNOWN";
    return state_names[state];
}

bool sched_job_finished(const struct sched_job *job)
{
    return job->state != SCHED_JOB_PENDING && job->state != SCHED_JOB_RUNNING &&
           job->state != SCHED_JOB_REQUEUED;
}

struct sched_jobs *sched_jobs_new(void)
{
    return calloc(1, sizeof(struct sched_jobs));
}

static void job_free(struct sched_job *job)
{
    gs_jobspec_free(job->spec);
    sched_alloc_release(&job->alloc);
    free(job);
}

void sched_jobs_free(struct sched_jobs *jobs)
{
    if (jobs == NULL)
        return;
    for (size_t i = 0; i < jobs->n; i++)
        job_free(jobs->v[i]);
    free(jobs->v);
    free(jobs);
}

/* Index of the first job with id >= id. */
static size_t lower_bound(const struct sched_jobs *jobs, uint64_t id)
{
    size_t lo = 0, hi = jobs->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (jobs->v[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sched_job *sched_jobs_find(const struct sched_jobs *jobs, uint64_t id)
{
    size_t i = lower_bound(jobs, id);

    return i < jobs->n && jobs->v[i]->id == id ? jobs->v[i] : NULL;
}

static int insert(struct sched_jobs *jobs, struct sched_job *job)
{
    size_t at = lower_bound(jobs, job->id);

    if (at < jobs->n && jobs->v[at]->id == job->id)
        return -EEXIST;
    if (jobs->n == jobs->cap) {
        size_t cap = jobs->cap ? jobs->cap * 2 : 64;
        struct sched_job **v = realloc(jobs->v, cap * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        jobs->v = v;
        jobs->cap = cap;
    }
    memmove(jobs->v + at + 1, jobs->v + at, (jobs->n - at) * sizeof(*jobs->v));
    jobs->v[at] = job;
    jobs->n++;
    return 0;
}

struct sched_job *sched_jobs_add(struct sched_jobs *jobs, uint64_t id, struct gs_jobspec *spec,
                                 uint64_t submit_ms)
{
    struct sched_job *job = calloc(1, sizeof(*job));

    if (job == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    job->id = id;
    job->spec = spec;
    job->state = SCHED_JOB_PENDING;
    job->held = spec->hold;
    job->submit_seq = id;
    job->submit_ms = submit_ms;
    sched_alloc_init(&job->alloc);
    if (insert(jobs, job) < 0) {
        job_free(job);
        return NULL;
    }
    return job;
}

size_t sched_jobs_count(const struct sched_jobs *jobs)
{
    return jobs->n;
}

struct sched_job *sched_jobs_at(const struct sched_jobs *jobs, size_t i)
{
    return i < jobs->n ? jobs->v[i] : NULL;
}

/* One dependency: met, still possible, or impossible. */
static enum sched_dep_status one_dep(const struct sched_job *other, enum gs_dep_type type)
{
    bool ended = sched_job_finished(other);

    switch (type) {
    case GS_DEP_AFTER:
        return other->state != SCHED_JOB_PENDING ? SCHED_DEP_MET : SCHED_DEP_WAIT;
    case GS_DEP_AFTEROK:
        if (!ended)
            return SCHED_DEP_WAIT;
        return other->state == SCHED_JOB_COMPLETED ? SCHED_DEP_MET : SCHED_DEP_NEVER;
    case GS_DEP_AFTERNOTOK:
        if (!ended)
            return SCHED_DEP_WAIT;
        return other->state != SCHED_JOB_COMPLETED ? SCHED_DEP_MET : SCHED_DEP_NEVER;
    case GS_DEP_AFTERANY:
        return ended ? SCHED_DEP_MET : SCHED_DEP_WAIT;
    }
    return SCHED_DEP_NEVER;
}

enum sched_dep_status sched_job_deps(const struct sched_jobs *jobs, const struct sched_job *job,
                                     uint64_t *ret_blocker)
{
    enum sched_dep_status worst = SCHED_DEP_MET;

    for (size_t i = 0; i < job->spec->ndeps; i++) {
        const struct gs_dep *d = &job->spec->deps[i];
        const struct sched_job *other = sched_jobs_find(jobs, d->job_id);
        /* Submit refuses unknown ids; one missing now was never a job: never met. */
        enum sched_dep_status s = other != NULL ? one_dep(other, d->type) : SCHED_DEP_NEVER;

        if (s > worst) {
            worst = s;
            if (ret_blocker != NULL)
                *ret_blocker = d->job_id;
        }
    }
    return worst;
}

const char *sched_job_hold_reason(const struct sched_jobs *jobs, const struct sched_job *job)
{
    if (job->state != SCHED_JOB_PENDING)
        return NULL;
    if (job->held)
        return "Held";
    switch (sched_job_deps(jobs, job, NULL)) {
    case SCHED_DEP_WAIT:
        return "Dependency";
    case SCHED_DEP_NEVER:
        return "DependencyNeverSatisfied";
    default:
        return NULL;
    }
}

int sched_job_start(struct sched_job *job, const struct sched_alloc *alloc, uint32_t ntasks,
                    uint64_t now_ms)
{
    int rc;

    if (job->state != SCHED_JOB_PENDING || ntasks == 0)
        return -EINVAL;
    rc = sched_alloc_copy(&job->alloc, alloc);
    if (rc < 0)
        return rc;
    job->state = SCHED_JOB_RUNNING;
    job->reason[0] = '\0';
    job->start_ms = now_ms;
    job->attempt++;
    job->ntasks = ntasks;
    job->tasks_ended = 0;
    job->any_failed = job->any_timeout = job->any_cancelled = false;
    job->exit_code = 0;
    job->signaled = false;
    job->term_signal = 0;
    return 0;
}

static void finish(struct sched_job *job, enum sched_job_state state, uint64_t now_ms)
{
    job->state = state;
    job->end_ms = now_ms;
    sched_alloc_release(&job->alloc);
}

/* The job's exit code is its first failing task's, as Slurm reports a batch step's. */
static void note_failure(struct sched_job *job, int32_t exit_code, int32_t term_signal)
{
    if (job->any_failed)
        return;
    job->any_failed = true;
    job->signaled = term_signal != 0;
    job->term_signal = term_signal;
    job->exit_code = term_signal != 0 ? 128 + term_signal : exit_code;
}

bool sched_job_task_ended(struct sched_job *job, enum sched_task_end how, int32_t exit_code,
                          int32_t term_signal, uint64_t now_ms)
{
    if (job->state != SCHED_JOB_RUNNING || job->tasks_ended >= job->ntasks)
        return false;
    job->tasks_ended++;
    if (how == SCHED_TASK_TIMEOUT)
        job->any_timeout = true;
    else if (how == SCHED_TASK_CANCELLED)
        job->any_cancelled = true;
    else if (how == SCHED_TASK_LAUNCH_FAILED)
        note_failure(job, 127, 0);
    else if (exit_code != 0 || term_signal != 0)
        note_failure(job, exit_code, term_signal);
    if (job->tasks_ended < job->ntasks)
        return false;
    if (job->any_cancelled || job->cancel_requested)
        finish(job, SCHED_JOB_CANCELLED, now_ms);
    else if (job->any_timeout)
        finish(job, SCHED_JOB_TIMEOUT, now_ms);
    else
        finish(job, job->any_failed ? SCHED_JOB_FAILED : SCHED_JOB_COMPLETED, now_ms);
    return true;
}

enum sched_job_state sched_job_node_failed(struct sched_job *job, uint64_t now_ms)
{
    if (job->state != SCHED_JOB_RUNNING)
        return job->state;
    if (!job->cancel_requested && job->restarts < job->spec->max_restarts) {
        job->restarts++;
        sched_alloc_release(&job->alloc);
        job->state = SCHED_JOB_PENDING;
        snprintf(job->reason, sizeof(job->reason), "Requeued after node failure (%u of %u)",
                 job->restarts, job->spec->max_restarts);
        return SCHED_JOB_REQUEUED;
    }
    finish(job, SCHED_JOB_NODE_FAIL, now_ms);
    return SCHED_JOB_NODE_FAIL;
}

bool sched_job_cancel(struct sched_job *job, uint64_t now_ms)
{
    if (job->state == SCHED_JOB_PENDING) {
        finish(job, SCHED_JOB_CANCELLED, now_ms);
        return true;
    }
    if (job->state == SCHED_JOB_RUNNING)
        job->cancel_requested = true;
    return false;
}
