/*
 * step_acct.c: a job's step accounting records (step_acct.h): made when a step starts, fed
 * by heartbeats and exits, closed with the state sacct shows. Pure: the callers store the
 * rows and take the time.
 *
 * A closed record's state follows Slurm's for a step: CANCELLED when gsched ended a task
 * (scancel, the job's end), TIMEOUT, OUT_OF_MEMORY, FAILED when a task exited non-zero, was
 * killed by a signal or never started, else COMPLETED; its exit code is the highest any
 * task exited with, and the signal of one that was killed.
 */
#include "scheduler/step_acct.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void acct_free(struct sched_step_acct *a)
{
    free(a->nodelist);
    free(a->task_cpu_ms);
}

void sched_step_acct_release(struct sched_job *job)
{
    for (uint32_t i = 0; i < job->nsteps; i++)
        acct_free(&job->steps[i]);
    free(job->steps);
    job->steps = NULL;
    job->nsteps = 0;
}

struct sched_step_acct *sched_step_acct_find(const struct sched_job *job, uint32_t step)
{
    for (uint32_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].step == step && job->steps[i].attempt == job->attempt)
            return &job->steps[i];
    }
    return NULL;
}

/* Drops the records of other attempts and the one of step: what a new record replaces. */
static void drop_stale(struct sched_job *job, uint32_t step)
{
    uint32_t kept = 0;

    for (uint32_t i = 0; i < job->nsteps; i++) {
        struct sched_step_acct *a = &job->steps[i];

        if (a->attempt != job->attempt || a->step == step)
            acct_free(a);
        else
            job->steps[kept++] = *a;
    }
    job->nsteps = kept;
}

/* A zeroed slot at the end of job->steps, or NULL when out of memory. */
static struct sched_step_acct *new_slot(struct sched_job *job)
{
    struct sched_step_acct *v = realloc(job->steps, (job->nsteps + 1) * sizeof(*v));

    if (v == NULL)
        return NULL;
    job->steps = v;
    memset(&v[job->nsteps], 0, sizeof(*v));
    return &v[job->nsteps++];
}

struct sched_step_acct *sched_step_acct_add(struct sched_job *job, uint32_t step, const char *name,
                                            const char *nodelist, uint32_t nnodes, uint32_t ntasks,
                                            uint64_t start_ms)
{
    struct sched_step_acct *a;
    char *list = strdup(nodelist != NULL ? nodelist : "");
    uint64_t *cpu = calloc(ntasks + 1, sizeof(*cpu));

    drop_stale(job, step);
    a = list != NULL && cpu != NULL ? new_slot(job) : NULL;
    if (a == NULL) {
        free(list);
        free(cpu);
        return NULL;
    }
    a->step = step;
    a->attempt = job->attempt;
    snprintf(a->name, sizeof(a->name), "%s", name != NULL ? name : "");
    a->nodelist = list;
    a->nnodes = nnodes;
    a->ntasks = ntasks;
    a->state = SCHED_JOB_RUNNING;
    a->start_ms = start_ms;
    a->task_cpu_ms = cpu;
    return a;
}

static void note_rss(struct sched_step_acct *a, uint32_t rank, const char *node, uint64_t rss_kib)
{
    if (rss_kib <= a->max_rss_kib)
        return;
    a->max_rss_kib = rss_kib;
    a->max_rss_task = rank;
    snprintf(a->max_rss_node, sizeof(a->max_rss_node), "%s", node != NULL ? node : "");
}

void sched_step_acct_sample(struct sched_step_acct *a, uint32_t rank, const char *node,
                            uint64_t rss_kib, uint64_t cpu_ms)
{
    if (a->state != SCHED_JOB_RUNNING || rank >= a->ntasks)
        return;
    note_rss(a, rank, node, rss_kib);
    if (a->task_cpu_ms != NULL && cpu_ms > a->task_cpu_ms[rank])
        a->task_cpu_ms[rank] = cpu_ms;
}

static enum sched_job_state closing_state(const struct sched_step_acct *a)
{
    if (a->any_cancelled)
        return SCHED_JOB_CANCELLED;
    if (a->any_timeout)
        return SCHED_JOB_TIMEOUT;
    if (a->any_oom)
        return SCHED_JOB_OUT_OF_MEMORY;
    return a->any_failed ? SCHED_JOB_FAILED : SCHED_JOB_COMPLETED;
}

bool sched_step_acct_exit(struct sched_step_acct *a, uint32_t rank, const char *node,
                          enum sched_task_end how, int32_t exit_code, int32_t term_signal,
                          uint64_t rss_kib, uint64_t cpu_ms, uint64_t end_ms)
{
    if (a->state != SCHED_JOB_RUNNING || rank >= a->ntasks)
        return false;
    /* wait4's peak covers the whole life of the process; a sample may have seen more of
     * the session (helpers beside the main process): the higher stands. */
    sched_step_acct_sample(a, rank, node, rss_kib, cpu_ms);
    if (exit_code > a->exit_code)
        a->exit_code = exit_code;
    if (term_signal != 0) {
        a->signaled = true;
        a->term_signal = term_signal;
    }
    a->any_cancelled |= how == SCHED_TASK_CANCELLED;
    a->any_timeout |= how == SCHED_TASK_TIMEOUT;
    a->any_oom |= how == SCHED_TASK_OOM;
    a->any_failed |= how == SCHED_TASK_LAUNCH_FAILED || exit_code != 0 || term_signal != 0;
    if (++a->nexited < a->ntasks)
        return false;
    a->state = closing_state(a);
    a->end_ms = end_ms;
    return true;
}

void sched_step_acct_close(struct sched_step_acct *a, enum sched_job_state state, uint64_t end_ms)
{
    if (a->state != SCHED_JOB_RUNNING)
        return;
    a->state = state;
    a->end_ms = end_ms;
}

uint64_t sched_step_acct_cpu_ms(const struct sched_step_acct *a)
{
    uint64_t total = a->cpu_done_ms;

    for (uint32_t r = 0; a->task_cpu_ms != NULL && r < a->ntasks; r++)
        total += a->task_cpu_ms[r];
    return total;
}

void sched_step_acct_row(const struct sched_step_acct *a, uint64_t job_id,
                         struct sched_step_row *row)
{
    *row = (struct sched_step_row){
        .job_id = job_id,
        .step = a->step,
        .attempt = a->attempt,
        .name = a->name,
        .nodelist = a->nodelist,
        .nnodes = a->nnodes,
        .ntasks = a->ntasks,
        .state = (int)a->state,
        .exit_code = a->exit_code,
        .signaled = a->signaled,
        .term_signal = a->term_signal,
        .start_ms = a->start_ms,
        .end_ms = a->end_ms,
        .max_rss_kib = a->max_rss_kib,
        .max_rss_node = a->max_rss_node,
        .max_rss_task = a->max_rss_task,
        .cpu_ms = sched_step_acct_cpu_ms(a),
        .suspended_ms = a->suspended_ms,
        .cpus = a->cpus,
        .gpus = a->gpus,
        .time_limit_s = a->time_limit_s,
    };
}

void sched_step_acct_suspended(struct sched_step_acct *a, uint64_t from_ms, uint64_t to_ms)
{
    uint64_t from = from_ms > a->start_ms ? from_ms : a->start_ms;
    uint64_t to = a->end_ms != 0 && a->end_ms < to_ms ? a->end_ms : to_ms;

    if (to > from)
        a->suspended_ms += to - from;
}

static bool state_ok(int state)
{
    return state >= SCHED_JOB_RUNNING && state <= SCHED_JOB_OUT_OF_MEMORY;
}

int sched_step_acct_restore(struct sched_job *job, const struct sched_step_row *row)
{
    struct sched_step_acct *a;

    if (row->attempt != job->attempt || !state_ok(row->state))
        return 0;
    a = sched_step_acct_add(job, row->step, row->name, row->nodelist, row->nnodes, row->ntasks,
                            row->start_ms);
    if (a == NULL)
        return -ENOMEM;
    a->state = (enum sched_job_state)row->state;
    a->exit_code = row->exit_code;
    a->signaled = row->signaled;
    a->term_signal = row->term_signal;
    a->end_ms = row->end_ms;
    a->suspended_ms = row->suspended_ms;
    a->cpus = row->cpus;
    a->gpus = row->gpus;
    a->time_limit_s = row->time_limit_s;
    note_rss(a, row->max_rss_task, row->max_rss_node, row->max_rss_kib);
    /* Per-task figures are not stored. A running one is a batch shell, whose one task's
     * heartbeats go on from the stored total, or an srun step kept over the restart, whose
     * figures step_keep.c sets again from its ended tasks' exits. */
    if (a->state == SCHED_JOB_RUNNING && a->ntasks > 0)
        a->task_cpu_ms[0] = row->cpu_ms;
    else
        a->cpu_done_ms = row->cpu_ms;
    return 0;
}
