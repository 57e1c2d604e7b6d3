/*
 * step_acct.h: a job's step accounting records, pure (no I/O, no clock): what sacct shows as
 * JOB.batch, JOB.0, JOB.1, ... and sstat as a running step's use. A record is made when the
 * step starts (an srun step, or an sbatch job's batch shell), follows its tasks' figures
 * while it runs (the workers' heartbeats: each task's RSS and CPU time so far) and their
 * exits (wait4's peak RSS and CPU time, exit code or signal), and is closed when its last
 * task has exited or its job ended.
 *
 * The records hang off their job (struct sched_job's steps, nsteps: owned, freed with the
 * job) and belong to its current attempt only: making one for a new attempt drops the
 * others. sched_persist.c stores them as rows of the store's steps table (store.h).
 *
 * Single-threaded: gschedd's loop (or a test).
 */
#ifndef SCHED_STEP_ACCT_H
#define SCHED_STEP_ACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/jobs.h"
#include "scheduler/store.h"

/* The step number of an sbatch job's batch shell (TaskRef.step 0). */
#define SCHED_STEP_BATCH 0u

struct sched_step_acct {
    uint32_t step; /* TaskRef.step: 0 the batch shell, s >= 1 srun step s - 1 */
    uint32_t attempt;
    char name[64];
    char *nodelist; /* Slurm hostlist, owned */
    uint32_t nnodes;
    uint32_t ntasks;
    enum sched_job_state state; /* RUNNING until closed */
    int32_t exit_code;          /* the highest any task exited with */
    bool signaled;
    int32_t term_signal; /* of a task killed by a signal */
    uint64_t start_ms;
    uint64_t end_ms;
    uint64_t max_rss_kib;
    char max_rss_node[64];
    uint32_t max_rss_task;
    uint64_t cpu_done_ms;  /* CPU time of the records read back (no per-task figures) */
    uint64_t *task_cpu_ms; /* per rank, the latest figure; owned, NULL when none */
    uint32_t nexited;
    uint64_t suspended_ms; /* of its span, the time its job was suspended (ended stretches) */
    /* What it was given, over all its nodes (StepInfo.cpus, gpus, time_limit_s): set by
     * whoever adds the record; 0 where unknown (a row stored before schema 12). */
    uint32_t cpus;
    uint32_t gpus;
    uint64_t time_limit_s; /* srun -t; 0: none of its own */
    /* What the exits said, for the state the record closes with. */
    bool any_failed, any_cancelled, any_timeout, any_oom;
};

/*
 * A new RUNNING record for step of job's current attempt (records of other attempts and an
 * earlier one of the same step dropped); name and nodelist are copied. Returns it (valid
 * until the next add on the job) or NULL when out of memory.
 */
struct sched_step_acct *sched_step_acct_add(struct sched_job *job, uint32_t step, const char *name,
                                            const char *nodelist, uint32_t nnodes, uint32_t ntasks,
                                            uint64_t start_ms);
/* The job's record of step in its current attempt, NULL if none. */
struct sched_step_acct *sched_step_acct_find(const struct sched_job *job, uint32_t step);

/* A heartbeat's figures for one task (rss in KiB): the peak and the CPU time so far. */
void sched_step_acct_sample(struct sched_step_acct *a, uint32_t rank, const char *node,
                            uint64_t rss_kib, uint64_t cpu_ms);
/*
 * One task's exit: its peak RSS (KiB) and CPU time from wait4, and how it ended. Returns
 * true when it was the step's last task: the record is closed then (state, end time).
 */
bool sched_step_acct_exit(struct sched_step_acct *a, uint32_t rank, const char *node,
                          enum sched_task_end how, int32_t exit_code, int32_t term_signal,
                          uint64_t rss_kib, uint64_t cpu_ms, uint64_t end_ms);
/* Closes a record whose tasks will not all report: with state (its job ended, gschedd
 * restarted), at end_ms. A closed record is left as it is. */
void sched_step_acct_close(struct sched_step_acct *a, enum sched_job_state state, uint64_t end_ms);
/* The job was suspended from from_ms to to_ms: the part of it within the record's span
 * (its start to its end, or on) is added to its suspended_ms. */
void sched_step_acct_suspended(struct sched_step_acct *a, uint64_t from_ms, uint64_t to_ms);
/* Every task's CPU time together, so far. */
uint64_t sched_step_acct_cpu_ms(const struct sched_step_acct *a);

/* The record as a store row (strings borrowed from a) for job_id. */
void sched_step_acct_row(const struct sched_step_acct *a, uint64_t job_id,
                         struct sched_step_row *row);
/* A stored row back onto its job: kept when it is of the job's current attempt (0 and
 * ignored otherwise); 0 or -ENOMEM. */
int sched_step_acct_restore(struct sched_job *job, const struct sched_step_row *row);

/* Frees every record of the job (jobs.c, with the job). */
void sched_step_acct_release(struct sched_job *job);

#endif
