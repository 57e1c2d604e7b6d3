/*
 * jobs.h: the scheduler's jobs in memory and the rules of their lives.
 *
 *   PENDING --start--> RUNNING --all tasks ended--> COMPLETED | FAILED | CANCELLED | TIMEOUT
 *      ^                  |
 *      |             node failure --restarts left--> REQUEUED --> PENDING (attempt + 1)
 *      |                  \--------no restarts left--> NODE_FAIL
 *   PENDING --cancel--> CANCELLED
 *
 * A RUNNING job may be suspended and resumed (scontrol suspend, root's): it stays RUNNING
 * with its allocation, and its run time (the time limit's) stands still meanwhile.
 *
 * A job's outcome when all its tasks have ended: CANCELLED if gsched cancelled it, TIMEOUT
 * if its time limit ended it, FAILED if any task failed to launch, exited non-zero or died
 * of a signal (exit code: the first failing task's, or 128 + signal), else COMPLETED.
 * Dependencies: after (the other job started), afterok (COMPLETED), afternotok (ended
 * otherwise), afterany (ended). A dependency that can no longer be met (afterok on a failed
 * job) makes the job wait with reason DependencyNeverSatisfied, as in Slurm.
 *
 * When one task fails (or never starts), the job is over: the caller ends its other tasks,
 * and the job is FAILED with that task's exit code even though the others then end by
 * signal. Precedence of outcomes: cancel requested, then time limit, then failure.
 *
 * States use gs.JobState's numbers so they go to the wire and the store as they are.
 * The table owns its jobs (and each job its spec, tasks and history). When a job stops
 * running its allocation goes back to the table's cluster and its key/value store
 * (job_kv.h) is dropped. Loop thread only.
 */
#ifndef SCHED_JOBS_H
#define SCHED_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jobspec.h"
#include "scheduler/cluster.h"
#include "scheduler/priority.h"
#include "scheduler/usage.h"

enum sched_job_state {
    SCHED_JOB_PENDING = 1,
    SCHED_JOB_RUNNING = 2,
    SCHED_JOB_COMPLETED = 3,
    SCHED_JOB_FAILED = 4,
    SCHED_JOB_CANCELLED = 5,
    SCHED_JOB_TIMEOUT = 6,
    SCHED_JOB_NODE_FAIL = 7,
    SCHED_JOB_REQUEUED = 8,
    SCHED_JOB_OUT_OF_MEMORY = 9, /* the kernel killed processes of it over mem_per_node */
};

/* How a task ended, as far as the job's outcome is concerned. */
enum sched_task_end {
    SCHED_TASK_EXITED = 0,    /* by itself: see exit_code / signal */
    SCHED_TASK_CANCELLED,     /* gsched ended it on cancel */
    SCHED_TASK_TIMEOUT,       /* its time limit */
    SCHED_TASK_LAUNCH_FAILED, /* never started */
    SCHED_TASK_OOM,           /* its job's cgroup went over mem_per_node */
};

enum sched_dep_status {
    SCHED_DEP_MET = 0,
    SCHED_DEP_WAIT,  /* a dependency may still be met */
    SCHED_DEP_NEVER, /* a dependency can no longer be met */
};

/* One task of a job's current attempt. */
struct sched_task {
    uint32_t node;         /* index into the job's alloc.nodes */
    uint32_t cluster_node; /* the node's cluster index, kept after the job ends */
    uint32_t local_rank;   /* among the tasks of its node */
    bool ended;
    bool started; /* its worker confirmed it runs (pid known) */
    int32_t pid;
    enum sched_task_end how;
    int32_t exit_code;
    int32_t term_signal;
    uint64_t start_ms;
    uint64_t end_ms;
    char *launch_error; /* owned; when how is SCHED_TASK_LAUNCH_FAILED */
};

/* One line of a job's history (gsched show). */
struct sched_job_event {
    uint64_t at_ms;
    enum sched_job_state state;
    char *detail; /* owned */
};

struct sched_job_kv;
struct sched_step_acct;

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
    bool requeue_requested; /* scontrol requeue: back to PENDING when its tasks have ended */
    bool requeue_hold;      /* ... and held (requeuehold) */
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
    uint32_t *ran_on;         /* cluster nodes of the last allocation, once it went back */
    uint32_t nran_on;
    uint32_t ntasks; /* of the current attempt */
    uint32_t tasks_per_node;
    struct sched_task *tasks; /* ntasks entries, rank order */
    uint32_t tasks_ended;
    bool any_failed, any_timeout, any_cancelled, any_oom;
    /* A node of the allocation is down and not yet failed over (scheduler.fence_timeout):
     * tasks failing meanwhile (their peers lost with it) do not end the job; the node's
     * failover requeues it, or NODE_FAIL. */
    bool node_fail_pending;
    /* sbatch --no-kill: the alloc indices of its nodes that failed while it ran on (bit i of
     * word i / 64); its srun steps leave them out. */
    uint64_t nokill_lost[SCHED_MAX_JOB_NODES / 64];
    /* Its tasks on a node were lost (the node failed over, or its worker lost them): the
     * attempt ends once its other tasks have ended too, so that the next one never runs
     * beside them; SCHED_LOST_* says how. */
    uint8_t lost_tasks;
    uint32_t master_port;
    uint64_t expected_start_ms; /* the planner's estimate while pending, 0 unknown */
    /* Mail (mail.h): the state its last mail decision saw, and the shares of its time
     * limit this attempt has been mailed about (GS_MAIL_TIME_LIMIT_* bits). */
    enum sched_job_state mail_seen;
    uint32_t mail_sent;
    char *sched_nodes; /* ... and the nodes its reservation holds (a hostlist; owned), NULL */
    struct sched_job_event *history;
    size_t nhistory;
    struct sched_cluster *cluster; /* the table's: where the allocation goes back */
    struct sched_jobs *table;      /* the table it is in (its stop hook) */
    /* The latest progress report of its tasks (sched_internal.h), NULL before any; owned,
     * one flat allocation freed with the job. */
    struct sched_job_progress *progress;
    /* The current attempt's key/value store (job_kv.h), NULL before its first put; owned,
     * dropped when the job stops running. */
    struct sched_job_kv *kv;
    /* The client's key of the submission this job is the first of (sched_keys.c), owned;
     * NULL for none. */
    char *submit_key;
    /* Its use of the allocation from telemetry (usage.h), attempts together. */
    struct sched_job_usage usage;
    /* Fair share (fairshare.h): its association's index + 1 (0: not looked up yet), and
     * the wall time up to which its allocation's use has been charged to it. */
    int32_t fs_assoc;
    uint64_t charged_ms;
    /* Preemption (preempt.h): the job it is being requeued or cancelled for (0: none; kept
     * after a cancel ends it), and the wall time
     * of its latest checkpoint as its progress reports say (0: none reported). */
    uint64_t preempted_by;
    uint64_t checkpoint_ms;
    /* Its priority at the last planning pass while pending, and what made it. */
    struct sched_prio prio;
    bool prio_valid;
    /* Its current attempt's step accounting records (step_acct.h), owned; sacct's rows. */
    struct sched_step_acct *steps;
    uint32_t nsteps;
    /* scontrol suspend: its tasks are stopped since suspend_at_ms, and this attempt's earlier
     * suspended stretches took suspended_ms. Neither counts against its time limit. */
    bool suspended;
    uint64_t suspend_at_ms;
    uint64_t suspended_ms;
    uint64_t resume_ms; /* when it last resumed (0: never), for the idle policy's grace */
};

struct sched_jobs;

/* cluster (may be NULL) gets back the resources of every job that stops running. */
struct sched_jobs *sched_jobs_new(struct sched_cluster *cluster);
/*
 * fn (NULL: none) is called with data for every job that stops running, its allocation
 * still in job->alloc, before it goes back: the last of its use is charged then.
 */
void sched_jobs_on_stop(struct sched_jobs *jobs, void (*fn)(void *data, struct sched_job *job),
                        void *data);
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

/*
 * Forgetting (scheduler.min_job_age): removes from the table, and frees, every finished job
 * forget(data, job) says to, in one pass that keeps the table in id order (lookups by id
 * stay a binary search); forget must not look at the table, which the pass is compacting.
 * Jobs pending, running or requeued are never removed, whatever forget says. *index (NULL:
 * none) is an index into the table, such as the planner's plan_from: it is moved to the
 * same job, or to the first kept one after the removed ones, so that every job before it
 * still has ended. Pointers to removed jobs dangle afterwards; the table's memory shrinks
 * when it is mostly empty. Returns how many were removed.
 */
size_t sched_jobs_forget(struct sched_jobs *jobs,
                         bool (*forget)(void *data, const struct sched_job *job), void *data,
                         size_t *index);
/*
 * A job outside any table (a forgotten one read back from the store to be shown), PENDING,
 * taking ownership of spec as sched_jobs_add does; NULL when out of memory. Free it with
 * sched_job_detached_free(), never through a table.
 */
struct sched_job *sched_job_detached_new(uint64_t id, struct gs_jobspec *spec, uint64_t submit_ms);
void sched_job_detached_free(struct sched_job *job);

const char *sched_job_state_name(enum sched_job_state state); /* "PENDING", ... */
bool sched_job_finished(const struct sched_job *job);
bool sched_job_finished_state(enum sched_job_state state); /* not pending, running, requeued */

/* The clock after:JOB+MIN dependencies are judged by; forgets earlier timed waits. */
void sched_jobs_set_now(struct sched_jobs *jobs, uint64_t now_ms);
/* Whether a dependency waited on the clock since set_now (then plan again later). */
bool sched_jobs_timed_waits(const struct sched_jobs *jobs);

/*
 * Whether job's dependencies allow it to start; *ret_blocker gets the job in the way. All
 * must be met, or with depends_any one (never met only when none can be); a dependency on
 * an array's first element covers every element; singleton waits for earlier unfinished
 * jobs of the same name and user.
 */
enum sched_dep_status sched_job_deps(const struct sched_jobs *jobs, const struct sched_job *job,
                                     uint64_t *ret_blocker);
/*
 * A pending job's dependencies not met yet, as Slurm shows them (squeue %E): each one
 * "afterok:41(unfulfilled)", or "(failed)" when it can never be met, ',' or '?' between
 * them, then "singleton(unfulfilled)" while another job of its name is in the way; nothing
 * once they allow it to start, or when it is not pending. 0 or -ENOMEM.
 */
int sched_job_deps_text(const struct sched_jobs *jobs, const struct sched_job *job,
                        struct gs_buf *out);
/* Whether d names a job (or array task) in the table; else why not into why, -EINVAL. */
int sched_jobs_dep_check(const struct sched_jobs *jobs, const struct gs_dep *d, char *why,
                         size_t size);
/*
 * The element of the array whose first element is first with task id task_id; NULL when
 * first is not an array's first element or the array has no such task (in memory).
 */
const struct sched_job *sched_jobs_array_task(const struct sched_jobs *jobs,
                                              const struct sched_job *first, uint32_t task_id);
/*
 * Why a PENDING job is not running, for squeue-style output when the planner has not said:
 * "Held", "Dependency", "DependencyNeverSatisfied", or NULL when it is eligible.
 */
const char *sched_job_hold_reason(const struct sched_jobs *jobs, const struct sched_job *job);

/*
 * PENDING -> RUNNING on alloc (copied) with tasks_per_node tasks on each of its nodes (ranks
 * node by node), or for a batch job one task, the script, on the first node. The resources must
 * already be taken in the cluster. Returns 0 or -EINVAL / -ENOMEM.
 */
int sched_job_start(struct sched_job *job, const struct sched_alloc *alloc, uint32_t tasks_per_node,
                    uint64_t now_ms);
/* Whether the job's node at (an alloc index) failed while it ran on (sbatch --no-kill,
 * sched_failover.c): its srun steps leave it out. */
bool sched_job_nokill_lost(const struct sched_job *job, uint32_t at);
/*
 * Task rank of the current attempt ended. A rank out of range or already ended is ignored
 * (returns false), so a repeated report changes nothing. Returns true when that was the last
 * one: the job then has its final state, exit code and end time, and its allocation went back.
 */
bool sched_job_task_ended(struct sched_job *job, uint32_t rank, enum sched_task_end how,
                          int32_t exit_code, int32_t term_signal, uint64_t now_ms);
/*
 * A node of a RUNNING job failed: REQUEUED (back to PENDING, attempt + 1) while restarts
 * remain, else NODE_FAIL. Returns the state it took. The allocation goes back.
 */
enum sched_job_state sched_job_node_failed(struct sched_job *job, uint64_t now_ms);

enum { SCHED_LOST_NONE = 0, SCHED_LOST_NODE_FAIL = 1, SCHED_LOST_UNSTARTED = 2 };
/*
 * The tasks of a RUNNING job on its alloc node `at` are lost (how: SCHED_LOST_NODE_FAIL, the
 * node failed or its worker restarted; SCHED_LOST_UNSTARTED, the launch never arrived). They
 * count as ended; when no other task runs, the job takes sched_job_node_failed's state (or
 * goes back to PENDING uncharged) now, else it stays RUNNING and takes it when its last task
 * ends (sched_job_task_ended), a cancel still winning. Returns the state the job is in.
 */
enum sched_job_state sched_job_tasks_lost(struct sched_job *job, uint32_t at, int how,
                                          const char *why, uint64_t now_ms);
/*
 * Back to PENDING without charging a restart: its tasks never started (the launch was lost
 * with a scheduler restart or a worker connection). The allocation goes back.
 */
void sched_job_requeue_unstarted(struct sched_job *job, const char *why);
/* Appends a history line (detail copied). Returns 0 or -ENOMEM. */
int sched_job_note(struct sched_job *job, uint64_t at_ms, enum sched_job_state state,
                   const char *detail);
/* The node (index into alloc.nodes) rank runs on. */
uint32_t sched_job_rank_node(const struct sched_job *job, uint32_t rank);
/*
 * scontrol requeue: a RUNNING job is marked and goes back to PENDING (restart count + 1,
 * held when hold) once its tasks have ended, sched_job_task_ended returning true with the
 * job PENDING (returns 0); an ended one goes back at once (returns 1). -EINVAL for a
 * PENDING job.
 */
int sched_job_requeue(struct sched_job *job, bool hold, const char *why);
/* Cancels a PENDING job at once (returns true); a RUNNING one is only marked (false). */
bool sched_job_cancel(struct sched_job *job, uint64_t now_ms);
/*
 * scontrol suspend (resume false) or resume of a RUNNING job at now_ms: only the record; the
 * caller stops or continues its tasks. -EINVAL when it is not running or its end was already
 * asked for (cancel, requeue), -EALREADY when it already is suspended (or is not).
 */
int sched_job_suspend(struct sched_job *job, bool resume, uint64_t now_ms);
/* How long job's attempt has run by now_ms (by its end, once ended), its suspended time left
 * out; 0 before it started. */
uint64_t sched_job_run_ms(const struct sched_job *job, uint64_t now_ms);
/* When job's time limit runs out (wall ms): its start, plus the time it was suspended (a
 * suspended job's as if it resumed at now_ms), plus the limit. UINT64_MAX without a limit. */
uint64_t sched_job_limit_end_ms(const struct sched_job *job, uint64_t now_ms);

#endif
