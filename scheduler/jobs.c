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

#include "common/units.h"
#include "scheduler/job_kv.h"
#include "scheduler/step_acct.h"

struct sched_jobs {
    struct sched_cluster *cluster;
    struct sched_job **v;
    size_t n;
    size_t cap;
    uint64_t now_ms;  /* for after:JOB+MIN (sched_jobs_set_now) */
    bool timed_waits; /* a dependency waited on the clock since the last set_now */
    void (*on_stop)(void *data, struct sched_job *job);
    void *on_stop_data;
};

void sched_jobs_on_stop(struct sched_jobs *jobs, void (*fn)(void *data, struct sched_job *job),
                        void *data)
{
    jobs->on_stop = fn;
    jobs->on_stop_data = data;
}

void sched_jobs_set_now(struct sched_jobs *jobs, uint64_t now_ms)
{
    jobs->now_ms = now_ms;
    jobs->timed_waits = false;
}

bool sched_jobs_timed_waits(const struct sched_jobs *jobs)
{
    return jobs->timed_waits;
}

static const char *const state_names[] = {
    [SCHED_JOB_PENDING] = "PENDING",
    [SCHED_JOB_RUNNING] = "RUNNING",
    [SCHED_JOB_COMPLETED] = "COMPLETED",
    [SCHED_JOB_FAILED] = "FAILED",
    [SCHED_JOB_CANCELLED] = "CANCELLED",
    [SCHED_JOB_TIMEOUT] = "TIMEOUT",
    [SCHED_JOB_NODE_FAIL] = "NODE_FAIL",
    [SCHED_JOB_REQUEUED] = "REQUEUED",
    [SCHED_JOB_OUT_OF_MEMORY] = "OUT_OF_MEMORY",
};

const char *sched_job_state_name(enum sched_job_state state)
{
    if ((int)state < SCHED_JOB_PENDING || state > SCHED_JOB_OUT_OF_MEMORY)
        return "UNKNOWN";
    return state_names[state];
}

bool sched_job_finished_state(enum sched_job_state state)
{
    return state != SCHED_JOB_PENDING && state != SCHED_JOB_RUNNING && state != SCHED_JOB_REQUEUED;
}

bool sched_job_finished(const struct sched_job *job)
{
    return sched_job_finished_state(job->state);
}

struct sched_jobs *sched_jobs_new(struct sched_cluster *cluster)
{
    struct sched_jobs *jobs = calloc(1, sizeof(struct sched_jobs));

    if (jobs != NULL)
        jobs->cluster = cluster;
    return jobs;
}

static void free_tasks(struct sched_job *job)
{
    for (uint32_t i = 0; job->tasks != NULL && i < job->ntasks; i++)
        free(job->tasks[i].launch_error);
    free(job->tasks);
    job->tasks = NULL;
}

static void job_free(struct sched_job *job)
{
    gs_jobspec_free(job->spec);
    sched_alloc_release(&job->alloc);
    free_tasks(job);
    free(job->ran_on);
    for (size_t i = 0; i < job->nhistory; i++)
        free(job->history[i].detail);
    free(job->history);
    free(job->progress);
    sched_job_kv_drop(job);
    sched_usage_release(&job->usage);
    sched_step_acct_release(job);
    free(job->submit_key);
    free(job->sched_nodes);
    free(job);
}

/*
 * The job stops running: its allocation goes back to the cluster; only its nodes are
 * remembered, for the job's NodeList once it has ended (a batch job's nodes are more than
 * its one task's). Its key/value store goes too: a requeued attempt starts empty.
 */
static void release_alloc(struct sched_job *job)
{
    uint32_t *ran_on = NULL;

    sched_job_kv_drop(job);
    if (job->table != NULL && job->table->on_stop != NULL && job->alloc.nnodes > 0)
        job->table->on_stop(job->table->on_stop_data, job);
    if (job->alloc.nnodes > 0)
        ran_on = malloc(job->alloc.nnodes * sizeof(*ran_on));
    if (ran_on != NULL) { /* out of memory: the tasks' nodes stand in */
        for (uint32_t i = 0; i < job->alloc.nnodes; i++)
            ran_on[i] = job->alloc.nodes[i].node;
        free(job->ran_on);
        job->ran_on = ran_on;
        job->nran_on = job->alloc.nnodes;
    }
    if (job->cluster != NULL && job->alloc.nnodes > 0)
        sched_cluster_give_back(job->cluster, &job->alloc);
    sched_alloc_release(&job->alloc);
    /* Nothing of it runs to be stopped; an end counted its suspended time first (finish). */
    job->suspended = false;
    job->suspend_at_ms = 0;
}

int sched_job_note(struct sched_job *job, uint64_t at_ms, enum sched_job_state state,
                   const char *detail)
{
    struct sched_job_event *v = realloc(job->history, (job->nhistory + 1) * sizeof(*v));
    char *copy = strdup(detail != NULL ? detail : "");

    if (v != NULL)
        job->history = v;
    if (v == NULL || copy == NULL) {
        free(copy);
        return -ENOMEM;
    }
    v[job->nhistory++] = (struct sched_job_event){at_ms, state, copy};
    return 0;
}

uint32_t sched_job_rank_node(const struct sched_job *job, uint32_t rank)
{
    if (job->spec != NULL && job->spec->launcher == GS_LAUNCHER_TORCHRUN)
        return rank; /* its tasks are its agents, one per node */
    return job->tasks_per_node > 0 ? rank / job->tasks_per_node : 0;
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

struct sched_job *sched_job_detached_new(uint64_t id, struct gs_jobspec *spec, uint64_t submit_ms)
{
    struct sched_job *job = calloc(1, sizeof(*job));

    if (job == NULL) {
        gs_jobspec_free(spec);
        return NULL;
    }
    job->id = id;
    job->spec = spec;
    job->state = SCHED_JOB_PENDING;
    job->mail_seen = SCHED_JOB_PENDING;
    job->held = spec->hold;
    job->submit_seq = id;
    job->submit_ms = submit_ms;
    sched_alloc_init(&job->alloc);
    return job;
}

void sched_job_detached_free(struct sched_job *job)
{
    if (job != NULL)
        job_free(job);
}

struct sched_job *sched_jobs_add(struct sched_jobs *jobs, uint64_t id, struct gs_jobspec *spec,
                                 uint64_t submit_ms)
{
    struct sched_job *job = sched_job_detached_new(id, spec, submit_ms);

    if (job == NULL)
        return NULL;
    job->cluster = jobs->cluster;
    job->table = jobs;
    if (insert(jobs, job) < 0) {
        job_free(job);
        return NULL;
    }
    return job;
}

size_t sched_jobs_forget(struct sched_jobs *jobs,
                         bool (*forget)(void *data, const struct sched_job *job), void *data,
                         size_t *index)
{
    size_t kept = 0, removed = 0, at = index != NULL ? *index : 0, new_at = 0;

    for (size_t i = 0; i < jobs->n; i++) {
        struct sched_job *job = jobs->v[i];

        if (i == at)
            new_at = kept;
        if (sched_job_finished(job) && forget(data, job)) {
            job->table = NULL; /* gone from it: nothing of the table's is touched now */
            job_free(job);
            removed++;
            continue;
        }
        jobs->v[kept++] = job;
    }
    if (at >= jobs->n)
        new_at = kept + (at - jobs->n); /* past the end stays past the end */
    jobs->n = kept;
    if (index != NULL)
        *index = new_at;
    /* Give memory back when a burst of ended jobs has gone: a quarter used, half kept. */
    if (removed > 0 && jobs->cap > 64 && jobs->n < jobs->cap / 4) {
        size_t cap = jobs->cap / 2;
        struct sched_job **v = realloc(jobs->v, cap * sizeof(*v));

        if (v != NULL) { /* else the larger array is kept, which is fine */
            jobs->v = v;
            jobs->cap = cap;
        }
    }
    return removed;
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
    case GS_DEP_AFTERCORR: /* on the element it pairs with */
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

/* A dependency on an array's first element is on every element (Slurm's afterok:ARRAYID). */
static enum sched_dep_status on_job(const struct sched_jobs *jobs, const struct sched_job *other,
                                    enum gs_dep_type type)
{
    enum sched_dep_status worst = one_dep(other, type);
    bool all_ended = sched_job_finished(other),
         any_failed = all_ended && other->state != SCHED_JOB_COMPLETED;

    if (other->spec->array.array_job_id != other->id)
        return worst;
    for (uint64_t id = other->id + 1; id < other->id + other->spec->array.count; id++) {
        const struct sched_job *e = sched_jobs_find(jobs, id);
        enum sched_dep_status s;

        if (e == NULL || e->spec->array.array_job_id != other->id)
            continue;
        s = one_dep(e, type);
        worst = s > worst ? s : worst;
        all_ended = all_ended && sched_job_finished(e);
        any_failed = any_failed || (sched_job_finished(e) && e->state != SCHED_JOB_COMPLETED);
    }
    /* afternotok on an array (Slurm): once all have ended, met when any one failed. */
    if (type == GS_DEP_AFTERNOTOK)
        return !all_ended ? SCHED_DEP_WAIT : any_failed ? SCHED_DEP_MET : SCHED_DEP_NEVER;
    return worst;
}

/* Another unfinished job of the same name and user that came first, or runs (singleton). */
static bool singleton_blocked(const struct sched_jobs *jobs, const struct sched_job *job,
                              uint64_t *ret_blocker)
{
    for (size_t i = 0; i < jobs->n; i++) {
        const struct sched_job *o = jobs->v[i];

        if (o == job || o->uid != job->uid || sched_job_finished(o) ||
            strcmp(o->spec->name, job->spec->name) != 0)
            continue;
        if (o->state == SCHED_JOB_RUNNING || o->id < job->id) {
            if (ret_blocker != NULL)
                *ret_blocker = o->id;
            return true;
        }
    }
    return false;
}

const struct sched_job *sched_jobs_array_task(const struct sched_jobs *jobs,
                                              const struct sched_job *first, uint32_t task_id)
{
    size_t lo, hi;

    if (first->spec->array.array_job_id != first->id)
        return NULL;
    /* Its elements' ids run from first's on, in task id order: they sit side by side. */
    lo = lower_bound(jobs, first->id);
    hi = lower_bound(jobs, first->id + first->spec->array.count);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t t = jobs->v[mid]->spec->array.task_id;

        if (t == task_id)
            return jobs->v[mid];
        if (t < task_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int sched_jobs_dep_check(const struct sched_jobs *jobs, const struct gs_dep *d, char *why,
                         size_t size)
{
    const struct sched_job *other = sched_jobs_find(jobs, d->job_id);

    if (other == NULL)
        snprintf(why, size, "job %llu does not exist", (unsigned long long)d->job_id);
    else if (d->target != GS_DEP_JOB && other->spec->array.array_job_id != other->id)
        snprintf(why, size, "job %llu is not a job array (or not its first job)",
                 (unsigned long long)d->job_id);
    else if (d->target == GS_DEP_TASK && sched_jobs_array_task(jobs, other, d->task_id) == NULL)
        snprintf(why, size, "job array %llu has no task %u", (unsigned long long)d->job_id,
                 d->task_id);
    else
        return 0;
    return -EINVAL;
}

/*
 * One of job's dependencies. *ret_timed: it is met but for after:JOB+MIN's minutes. A job
 * (or array task) missing now was never one (submit refuses unknown ones, and a pending
 * dependent keeps them in memory): never met.
 */
static enum sched_dep_status dep_status(const struct sched_jobs *jobs, const struct sched_job *job,
                                        const struct gs_dep *d, bool *ret_timed)
{
    const struct sched_job *other = sched_jobs_find(jobs, d->job_id), *e = NULL;
    enum sched_dep_status s;

    *ret_timed = false;
    if (other == NULL)
        return SCHED_DEP_NEVER;
    if (d->target == GS_DEP_TASK) {
        if ((other = sched_jobs_array_task(jobs, other, d->task_id)) == NULL)
            return SCHED_DEP_NEVER;
        s = one_dep(other, d->type);
    } else if (d->type == GS_DEP_AFTERCORR) {
        /* Slurm's: without a task of its own id there (or of its own), the whole job */
        if (job->spec->array.array_job_id != 0)
            e = sched_jobs_array_task(jobs, other, job->spec->array.task_id);
        s = e != NULL ? one_dep(e, GS_DEP_AFTEROK) : on_job(jobs, other, GS_DEP_AFTEROK);
    } else {
        s = on_job(jobs, other, d->type);
    }
    if (s == SCHED_DEP_MET && d->type == GS_DEP_AFTER && d->delay_min > 0 &&
        other->start_ms + (uint64_t)d->delay_min * 60000 > jobs->now_ms) {
        s = SCHED_DEP_WAIT;
        *ret_timed = true;
    }
    return s;
}

enum sched_dep_status sched_job_deps(const struct sched_jobs *jobs, const struct sched_job *job,
                                     uint64_t *ret_blocker)
{
    const struct gs_jobspec *sp = job->spec;
    enum sched_dep_status worst = SCHED_DEP_MET, best = SCHED_DEP_NEVER;

    for (size_t i = 0; i < sp->ndeps; i++) {
        const struct gs_dep *d = &sp->deps[i];
        bool timed;
        enum sched_dep_status s = dep_status(jobs, job, d, &timed);

        if (timed)
            ((struct sched_jobs *)jobs)->timed_waits = true;
        if (s < best)
            best = s;
        if (s > worst || (sp->depends_any && s == SCHED_DEP_WAIT)) {
            worst = s > worst ? s : worst;
            if (ret_blocker != NULL)
                *ret_blocker = d->job_id;
        }
    }
    if (sp->depends_any && sp->ndeps > 0)
        worst = best; /* one met suffices; never only when none can be */
    if (sp->singleton && worst == SCHED_DEP_MET && singleton_blocked(jobs, job, ret_blocker))
        worst = SCHED_DEP_WAIT;
    return worst;
}

int sched_job_deps_text(const struct sched_jobs *jobs, const struct sched_job *job,
                        struct gs_buf *out)
{
    const struct gs_jobspec *sp = job->spec;
    const char *sep = "";
    char text[GS_DEP_TEXT_SIZE];
    int rc = 0;

    if (job->state != SCHED_JOB_PENDING || sched_job_deps(jobs, job, NULL) == SCHED_DEP_MET)
        return 0;
    for (size_t i = 0; i < sp->ndeps && rc == 0; i++) {
        bool timed;
        enum sched_dep_status s = dep_status(jobs, job, &sp->deps[i], &timed);

        if (s == SCHED_DEP_MET)
            continue;
        rc = gs_buf_printf(out, "%s%s(%s)", sep, gs_dep_format(&sp->deps[i], text),
                           s == SCHED_DEP_NEVER ? "failed" : "unfulfilled");
        sep = sp->depends_any ? "?" : ",";
    }
    if (rc == 0 && sp->singleton && singleton_blocked(jobs, job, NULL))
        rc = gs_buf_printf(out, "%ssingleton(unfulfilled)", sep);
    return rc;
}

const char *sched_job_hold_reason(const struct sched_jobs *jobs, const struct sched_job *job)
{
    if (job->state != SCHED_JOB_PENDING)
        return NULL;
    if (job->held)
        return "Held";
    if (job->spec->begin_ms > jobs->now_ms) { /* sbatch --begin: the cron plans again */
        ((struct sched_jobs *)jobs)->timed_waits = true;
        return "BeginTime";
    }
    switch (sched_job_deps(jobs, job, NULL)) {
    case SCHED_DEP_WAIT:
        return "Dependency";
    case SCHED_DEP_NEVER:
        return "DependencyNeverSatisfied";
    default:
        return NULL;
    }
}

bool sched_job_nokill_lost(const struct sched_job *job, uint32_t at)
{
    return at < SCHED_MAX_JOB_NODES && (job->nokill_lost[at / 64] >> (at % 64)) & 1;
}

int sched_job_start(struct sched_job *job, const struct sched_alloc *alloc, uint32_t tasks_per_node,
                    uint64_t now_ms)
{
    uint32_t nodes = alloc->nnodes > 0 ? alloc->nnodes : 1, ntasks = nodes * tasks_per_node;
    struct sched_task *tasks;
    int rc;

    /* A batch job's one task is its script, on the first node; srun steps are not tasks. A
     * torchrun job's tasks are its agents, one per node, which start the ranks. */
    bool agents = job->spec->launcher == GS_LAUNCHER_TORCHRUN;

    if (gs_jobspec_runs_leader(job->spec))
        ntasks = 1;
    else if (agents)
        ntasks = nodes;
    if (job->state != SCHED_JOB_PENDING || tasks_per_node == 0)
        return -EINVAL;
    tasks = calloc(ntasks, sizeof(*tasks));
    if (tasks == NULL)
        return -ENOMEM;
    rc = sched_alloc_copy(&job->alloc, alloc);
    if (rc < 0) {
        free(tasks);
        return rc;
    }
    for (uint32_t r = 0; r < ntasks; r++) {
        uint32_t per_node = agents ? 1 : tasks_per_node;

        tasks[r].node = r / per_node;
        tasks[r].cluster_node = alloc->nnodes > 0 ? alloc->nodes[r / per_node].node : 0;
        tasks[r].local_rank = r % per_node;
    }
    free_tasks(job);
    job->tasks = tasks;
    job->tasks_per_node = tasks_per_node;
    job->state = SCHED_JOB_RUNNING;
    job->reason[0] = '\0';
    job->start_ms = now_ms;
    job->attempt++;
    job->ntasks = ntasks;
    job->tasks_ended = 0;
    job->any_failed = job->any_timeout = job->any_cancelled = job->any_oom = false;
    job->node_fail_pending = false;
    memset(job->nokill_lost, 0, sizeof(job->nokill_lost));
    job->lost_tasks = SCHED_LOST_NONE;
    job->exit_code = 0;
    job->signaled = false;
    job->term_signal = 0;
    job->suspended = false;
    job->suspend_at_ms = job->suspended_ms = job->resume_ms = 0;
    return 0;
}

static void back_to_pending(struct sched_job *job);
static void lost_end(struct sched_job *job, uint64_t now_ms);

/* A suspended job that ends was suspended up to its end; so were its steps, each for the
 * part of the suspension it ran through (their records are stored with the job's change). */
static void end_suspension(struct sched_job *job, uint64_t now_ms)
{
    if (!job->suspended)
        return;
    for (uint32_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].attempt == job->attempt)
            sched_step_acct_suspended(&job->steps[i], job->suspend_at_ms, now_ms);
    }
    job->suspended = false;
    job->suspended_ms += now_ms > job->suspend_at_ms ? now_ms - job->suspend_at_ms : 0;
    job->suspend_at_ms = 0;
}

static void finish(struct sched_job *job, enum sched_job_state state, uint64_t now_ms)
{
    end_suspension(job, now_ms);
    job->state = state;
    job->end_ms = now_ms;
    release_alloc(job);
}

/* The job's exit code is its first failing task's, as Slurm reports a batch step's. */
static void note_failure(struct sched_job *job, int32_t exit_code, int32_t term_signal)
{
    if (job->any_failed)
        return;
    job->any_failed = true;
    job->signaled = term_signal != 0;
    job->term_signal = term_signal;
    /* term_signal is what a worker's TaskExit says, any 32-bit number: unsigned, no overflow */
    job->exit_code = term_signal != 0 ? (int32_t)(128u + (uint32_t)term_signal) : exit_code;
}

bool sched_job_task_ended(struct sched_job *job, uint32_t rank, enum sched_task_end how,
                          int32_t exit_code, int32_t term_signal, uint64_t now_ms)
{
    struct sched_task *t;

    if (job->state != SCHED_JOB_RUNNING || rank >= job->ntasks || job->tasks[rank].ended)
        return false;
    t = &job->tasks[rank];
    t->ended = true;
    t->how = how;
    t->exit_code = exit_code;
    t->term_signal = term_signal;
    t->end_ms = now_ms;
    job->tasks_ended++;
    if (how == SCHED_TASK_TIMEOUT)
        job->any_timeout = true;
    else if (how == SCHED_TASK_CANCELLED)
        job->any_cancelled = true;
    else if (how == SCHED_TASK_LAUNCH_FAILED)
        note_failure(job, 127, 0);
    else if (how == SCHED_TASK_OOM) {
        job->any_oom = true;
        note_failure(job, exit_code, term_signal);
    } else if (exit_code != 0 || term_signal != 0)
        note_failure(job, exit_code, term_signal);
    if (job->tasks_ended < job->ntasks)
        return false;
    if (job->lost_tasks != SCHED_LOST_NONE && !job->cancel_requested) {
        lost_end(job, now_ms); /* none of the attempt runs any more: it moves now */
        return true;
    }
    if (job->node_fail_pending && (job->any_failed || job->any_cancelled) && !job->cancel_requested)
        return false; /* a node failure's doing (a fenced node's tasks end killed): its
                       * failover decides */
    if (job->requeue_requested && !job->cancel_requested) {
        back_to_pending(job);
        return true;
    }
    if (job->cancel_requested)
        finish(job, SCHED_JOB_CANCELLED, now_ms);
    else if (job->any_timeout)
        finish(job, SCHED_JOB_TIMEOUT, now_ms);
    else if (job->any_oom)
        finish(job, SCHED_JOB_OUT_OF_MEMORY, now_ms);
    else if (job->any_failed)
        finish(job, SCHED_JOB_FAILED, now_ms);
    else
        finish(job, job->any_cancelled ? SCHED_JOB_CANCELLED : SCHED_JOB_COMPLETED, now_ms);
    return true;
}

enum sched_job_state sched_job_node_failed(struct sched_job *job, uint64_t now_ms)
{
    if (job->state != SCHED_JOB_RUNNING)
        return job->state;
    job->node_fail_pending = false;
    job->lost_tasks = SCHED_LOST_NONE;
    if (!job->cancel_requested && job->restarts < job->spec->max_restarts) {
        job->restarts++;
        release_alloc(job);
        job->state = SCHED_JOB_PENDING;
        snprintf(job->reason, sizeof(job->reason), "Requeued after node failure (%u of %u)",
                 job->restarts, job->spec->max_restarts);
        return SCHED_JOB_REQUEUED;
    }
    finish(job, SCHED_JOB_NODE_FAIL, now_ms);
    return SCHED_JOB_NODE_FAIL;
}

void sched_job_requeue_unstarted(struct sched_job *job, const char *why)
{
    if (job->state != SCHED_JOB_RUNNING)
        return;
    release_alloc(job);
    job->state = SCHED_JOB_PENDING;
    job->start_ms = 0;
    job->lost_tasks = SCHED_LOST_NONE;
    snprintf(job->reason, sizeof(job->reason), "%s", why);
}

/* The end of an attempt that lost tasks, once none of it runs. */
static void lost_end(struct sched_job *job, uint64_t now_ms)
{
    char why[sizeof(job->reason)];

    snprintf(why, sizeof(why), "%s", job->reason);
    if (job->lost_tasks == SCHED_LOST_UNSTARTED)
        sched_job_requeue_unstarted(job, why);
    else
        (void)sched_job_node_failed(job, now_ms);
    if (job->state == SCHED_JOB_NODE_FAIL)
        snprintf(job->reason, sizeof(job->reason), "%s", why);
}

enum sched_job_state sched_job_tasks_lost(struct sched_job *job, uint32_t at, int how,
                                          const char *why, uint64_t now_ms)
{
    if (job->state != SCHED_JOB_RUNNING)
        return job->state;
    for (uint32_t r = 0; r < job->ntasks; r++) {
        struct sched_task *t = &job->tasks[r];

        if (t->node != at || t->ended)
            continue;
        t->ended = true; /* lost: no exit of its own will come; the attempt is over anyway */
        t->how = SCHED_TASK_CANCELLED;
        t->end_ms = now_ms;
        job->tasks_ended++;
    }
    /* a node failure outweighs an unstarted launch: it is charged */
    if (job->lost_tasks != SCHED_LOST_NODE_FAIL)
        job->lost_tasks = (uint8_t)how;
    snprintf(job->reason, sizeof(job->reason), "%s", why);
    if (job->tasks_ended < job->ntasks)
        return SCHED_JOB_RUNNING;
    if (job->cancel_requested) {
        finish(job, SCHED_JOB_CANCELLED, now_ms);
        return job->state;
    }
    how = job->lost_tasks;
    lost_end(job, now_ms);
    return job->state == SCHED_JOB_PENDING && how == SCHED_LOST_NODE_FAIL ? SCHED_JOB_REQUEUED
                                                                          : job->state;
}

/* A requeued job: pending again, another restart counted, held when asked. */
static void back_to_pending(struct sched_job *job)
{
    release_alloc(job);
    job->state = SCHED_JOB_PENDING;
    job->restarts++;
    job->held = job->requeue_hold;
    job->requeue_requested = job->requeue_hold = false;
    job->cancel_requested = false;
    job->start_ms = job->end_ms = 0;
    job->expected_start_ms = 0;
}

int sched_job_requeue(struct sched_job *job, bool hold, const char *why)
{
    if (job->state == SCHED_JOB_PENDING)
        return -EINVAL;
    snprintf(job->reason, sizeof(job->reason), "%s", why);
    job->requeue_hold = hold;
    if (job->state == SCHED_JOB_RUNNING) {
        job->requeue_requested = true;
        return 0;
    }
    back_to_pending(job);
    return 1;
}

int sched_job_suspend(struct sched_job *job, bool resume, uint64_t now_ms)
{
    if (job->state != SCHED_JOB_RUNNING || job->cancel_requested || job->requeue_requested)
        return -EINVAL;
    if (job->suspended != resume)
        return -EALREADY;
    if (resume) {
        end_suspension(job, now_ms);
        job->resume_ms = now_ms;
        return 0;
    }
    job->suspended = true;
    job->suspend_at_ms = now_ms;
    return 0;
}

uint64_t sched_job_run_ms(const struct sched_job *job, uint64_t now_ms)
{
    uint64_t end = job->suspended                                ? job->suspend_at_ms
                   : job->end_ms != 0 && sched_job_finished(job) ? job->end_ms
                                                                 : now_ms;

    if (job->start_ms == 0 || end < job->start_ms + job->suspended_ms)
        return 0;
    return end - job->start_ms - job->suspended_ms;
}

uint64_t sched_job_limit_end_ms(const struct sched_job *job, uint64_t now_ms)
{
    uint64_t limit_s = job->spec->time_limit_s, base = job->start_ms + job->suspended_ms;

    /* Suspended, the run time stands still: its end moves with the clock. */
    if (job->suspended && now_ms > job->suspend_at_ms)
        base += now_ms - job->suspend_at_ms;
    if (limit_s == GS_DURATION_INFINITE || limit_s > (UINT64_MAX - base) / 1000)
        return UINT64_MAX;
    return base + limit_s * 1000;
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
