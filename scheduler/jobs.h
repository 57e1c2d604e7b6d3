/*
 * jobs.h: the scheduler's jobs in memory and the rules of their lives.
 *
 *   PENDING --start--> RUNNING --all tasks ended--> COMPLETED | FAILED | CANCELLED | TIMEOUT
 *      ^                  |
 *      |             node failure --restarts left--> REQUEUED --> PENDING (attempt + 1)
 *      |                  \--------no restarts left--> NODE_FAIL
 *   PENDING --cancel--> CANCELLED
 *
 * A job's outcome when all its tasks have ended: CANCELLED if gsched cancelled it, TIMEOUT
 * if its time limit ended it, FAILED if any task failed to launch, exited non-zero or died
 * of a signal (exit code: the first failing task's, or 128 + signal), else COMPLETED.
 * Dependencies: after (the other job started), afterok (COMPLETED), afternotok (ended
 * otherwise), afterany (ended). A dependency that can no longer be met (afterok on a failed
 * job) makes the job wait with reason DependencyNeverSatisfied, as in Slurm.
 *
 * States use gs.JobState's numbers so they go to the wire and the store as they are.
 * The table owns its jobs (and each job its spec). Loop thread only.
 */
#ifndef SCHED_JOBS_H
#define SCHED_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jobspec.h"
#include "scheduler/cluster.h"

enum sched_job_state {
    SCHED_JOB_PENDING = 1,
    SCHED_JOB_RUNNING = 2,
    SCHED_JOB_COMPLETED = 3,
    SCHED_JOB_FAILED = 4,
    SCHED_JOB_CANCELLED = 5,
    SCHED_JOB_TIMEOUT = 6,
    SCHED_JOB_NODE_FAIL = 7,
    SCHED_JOB_REQUEUED = 8,
};

/* How a task ended, as far as the job's outcome is concerned. */
enum sched_task_end {
    SCHED_TASK_EXITED = 0,    /* by itself: see exit_code / signal */
    SCHED_TASK_CANCELLED,     /* gsched ended it on cancel */
    SCHED_TASK_TIMEOUT,       /* its time limit */
    SCHED_TASK_LAUNCH_FAILED, /* never started */
};

enum sched_dep_status {
    SCHED_DEP_MET = 0,
    SCHED_DEP_WAIT,  /* a dependency may still be met */
    SCHED_DEP_NEVER, /* a dependency can no longer be met */
};

struct sched_job {
    uint64_t id;
    struct gs_jobspec *spec; /* owned */
    uint32_t uid;
    uint32_t gid;
    char user[64];
    enum sched_job_state state;
    char reason[160];
    bool held;
    bool cancel_requested;
    uint64_t submit_seq;
    uint64_t submit_ms;
    uint64_t start_ms;
    uint64_t end_ms;
    int32_t exit_code;
    bool signaled;
    int32_t term_signal;
    uint32_t restarts;
    uint32_t attempt;
    struct sched_alloc alloc; /* while RUNNING */
    uint32_t ntasks;          /* of the current attempt */
    uint32_t tasks_ended;
    bool any_failed, any_timeout, any_cancelled;
};

struct sched_jobs;

struct sched_jobs *sched_jobs_new(void);
/* Frees the table and every job in it. */
void sched_jobs_free(struct sched_jobs *jobs);

/*
 * Creates a PENDING job taking ownership of spec (freed with the job, also on failure).
 * Returns the job, or NULL when out of memory or when id is already present.
 */
struct sched_job *sched_jobs_add(struct sched_jobs *jobs, uint64_t id, struct gs_jobspec *spec,
                                 uint64_t submit_ms);
struct sched_job *sched_jobs_find(const struct sched_jobs *jobs, uint64_t id);
size_t sched_jobs_count(const struct sched_jobs *jobs);
/* The i-th job in id order (0 <= i < count); valid until the next add. */
struct sched_job *sched_jobs_at(const struct sched_jobs *jobs, size_t i);

const char *sched_job_state_name(enum sched_job_state state); /* "PENDING", ... */
bool sched_job_finished(const struct sched_job *job);

/* Whether job's dependencies allow it to start; *ret_blocker gets the job in the way. */
enum sched_dep_status sched_job_deps(const struct sched_jobs *jobs, const struct sched_job *job,
                                     uint64_t *ret_blocker);
/*
 * Why a PENDING job is not running, for squeue-style output when the planner has not said:
 * "Held", "Dependency", "DependencyNeverSatisfied", or NULL when it is eligible.
 */
const char *sched_job_hold_reason(const struct sched_jobs *jobs, const struct sched_job *job);

/* PENDING -> RUNNING on alloc (copied) with ntasks tasks. Returns 0 or -EINVAL / -ENOMEM. */
int sched_job_start(struct sched_job *job, const struct sched_alloc *alloc, uint32_t ntasks,
                    uint64_t now_ms);
/*
 * One task of the current attempt ended. Returns true when that was the last one: the job
 * then has its final state, exit code and end time, and its allocation is released.
 */
bool sched_job_task_ended(struct sched_job *job, enum sched_task_end how, int32_t exit_code,
                          int32_t term_signal, uint64_t now_ms);
/*
 * A node of a RUNNING job failed: REQUEUED (back to PENDING, attempt + 1) while restarts
 * remain, else NODE_FAIL. Returns the state it took. The allocation is released.
 */
enum sched_job_state sched_job_node_failed(struct sched_job *job, uint64_t now_ms);
/* Cancels a PENDING job at once (returns true); a RUNNING one is only marked (false). */
bool sched_job_cancel(struct sched_job *job, uint64_t now_ms);

#endif
