/*
 * store.h: the scheduler's durable state in SQLite: jobs, their tasks, nodes and an event
 * log. The database (mode 0600: it holds the jobs' environments) is in WAL mode with
 * synchronous=FULL, so a commit that returned is on disk: the scheduler acknowledges a
 * submit only after the commit that holds its row.
 *
 * This layer is synchronous and knows nothing of protobuf: a job's spec and allocation are
 * opaque blobs (packed gs.JobSpec / allocation messages) next to the columns the scheduler
 * queries. It is driven from one thread at a time, in practice the journal's writer thread
 * (scheduler/journal.h), which batches many changes into one transaction.
 *
 * Schema (version 14; older databases gain what they miss when opened: version 1
 * jobs.usage and jobs.submit_key, version 2 nodes.drain_reason, version 3 the usage table,
 * version 4 the reservations table, version 5 the steps table, version 6 node_history and
 * allocations, version 7 node_history.maint, version 8 jobs.suspend_at_ms and
 * jobs.suspended_ms, version 9 jobs.resume_at_ms, version 10 steps.suspended_ms,
 * version 11 steps.cpus, steps.gpus and steps.time_limit_s, version 12 live_steps, version 13
 * live_step_exits):
 *   meta(key TEXT PRIMARY KEY, value TEXT)                      -- schema_version, ...
 *   jobs(id INTEGER PRIMARY KEY, name, uid, gid, user, priority, state, reason, held,
 *        submit_ms, start_ms, end_ms, exit_code, signaled, term_signal, restarts, attempt,
 *        spec BLOB NOT NULL, alloc BLOB, usage BLOB,   -- usage: packed gs.JobUsage
 *        submit_key TEXT,                              -- SubmitRequest.client_key
 *        suspend_at_ms, suspended_ms, resume_at_ms)    -- scontrol suspend (jobs.h)
 *   tasks(job_id, rank, node, attempt, state, pid, exit_code, signaled, term_signal,
 *         end_reason, start_ms, end_ms, PRIMARY KEY (job_id, rank))
 *   nodes(name TEXT PRIMARY KEY, state, last_seen_ms, topology BLOB,
 *         drain_reason TEXT)                         -- NULL: not drained
 *   events(id INTEGER PRIMARY KEY, at_ms, job_id, node, kind, detail)
 *   usage(account, user, usage REAL, at_ms,          -- fair share: decayed billing-seconds
 *         PRIMARY KEY (account, user))               -- as of at_ms (fairshare.h)
 *   reservations(name TEXT PRIMARY KEY, spec BLOB)   -- packed gs.Reservation
 *   steps(job_id, step, attempt, name, nodelist, nnodes, ntasks, state, exit_code,
 *         signaled, term_signal, start_ms, end_ms, max_rss_kib, max_rss_node,
 *         max_rss_task, cpu_ms, suspended_ms, cpus, gpus, time_limit_s,
 *         PRIMARY KEY (job_id, step))
 *                                   -- sacct's step rows: step is TaskRef.step (0 the batch
 *                                   -- shell, s >= 1 srun step s - 1), of attempt's run only
 *   live_steps(job_id, step, record BLOB, PRIMARY KEY (job_id, step))
 *                                   -- a running srun step (packed gs.StepRecord), kept over
 *                                   -- a restart (sched_steps.c); deleted when it ends
 *   live_step_exits(job_id, step, rank, exit BLOB, PRIMARY KEY (job_id, step, rank))
 *                                   -- its ended tasks' exits (packed gs.TaskExit), a row
 *                                   -- each: a step's exits cost O(tasks) to store, not
 *                                   -- O(tasks^2); deleted with the step's record
 *   node_history(id INTEGER PRIMARY KEY, at_ms, node, up, cores, gpus, maint)
 *                                   -- sreport: a node became schedulable (up = 1) or not,
 *                                   -- or entered (maint = 1) or left a MAINT reservation
 *   allocations(job_id, attempt, node, cores, gpus, start_ms, end_ms, user, account,
 *               PRIMARY KEY (job_id, attempt, node))  -- sreport: end_ms NULL while held
 * Indexes: jobs(state), jobs(end_ms) (made when missing at every open, no new version: the
 * start-up load and sacct's reads of forgotten jobs go by the end time), events(job_id),
 * allocations(end_ms), node_history(node, at_ms), events(at_ms) of no job (the purge's).
 *
 * Finished jobs leave gschedd's memory after scheduler.min_job_age but keep their rows: the
 * reads below (by id range, the most recent finished ones matching a filter) answer for
 * them. A job state is "finished" for these reads unless it is PENDING (1), RUNNING (2) or
 * REQUEUED (8), gs.JobState's numbers.
 */
#ifndef SCHED_STORE_H
#define SCHED_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define SCHED_STORE_SCHEMA_VERSION 14

/* One row of jobs; strings and blobs are borrowed (by the store on write, by the callback on
 * load: valid only during the callback). */
struct sched_job_row {
    uint64_t id;
    const char *name;
    uint32_t uid;
    uint32_t gid;
    const char *user;
    int32_t priority;
    int state;
    const char *reason;
    bool held;
    uint64_t submit_ms;
    uint64_t start_ms;
    uint64_t end_ms;
    int32_t exit_code;
    bool signaled;
    int32_t term_signal;
    uint32_t restarts;
    uint32_t attempt;
    const void *spec;
    size_t spec_len;
    const void *alloc; /* NULL when not allocated */
    size_t alloc_len;
    const void *usage; /* NULL when nothing was recorded */
    size_t usage_len;
    const char *submit_key; /* NULL: none */
    uint64_t suspend_at_ms; /* scontrol suspend: since when, 0 not suspended */
    uint64_t suspended_ms;  /* the attempt's earlier suspended time */
    uint64_t resume_at_ms;  /* scontrol resume: when it last resumed, 0 never */
};

struct sched_task_row {
    uint64_t job_id;
    uint32_t rank;
    const char *node;
    uint32_t attempt;
    int state;
    int32_t pid;
    int32_t exit_code;
    bool signaled;
    int32_t term_signal;
    int end_reason;
    uint64_t start_ms;
    uint64_t end_ms;
};

/* One row of steps (a job step's accounting record); strings borrowed as for jobs. */
struct sched_step_row {
    uint64_t job_id;
    uint32_t step;
    uint32_t attempt;
    const char *name;
    const char *nodelist;
    uint32_t nnodes;
    uint32_t ntasks;
    int state; /* gs.JobState's numbers, as jobs.state */
    int32_t exit_code;
    bool signaled;
    int32_t term_signal;
    uint64_t start_ms;
    uint64_t end_ms;
    uint64_t max_rss_kib;
    const char *max_rss_node;
    uint32_t max_rss_task;
    uint64_t cpu_ms;
    uint64_t suspended_ms; /* of its run, the time its job was suspended (ended spans) */
    uint32_t cpus;         /* its cores, over all its nodes (0 before schema 12) */
    uint32_t gpus;
    uint64_t time_limit_s; /* srun -t; 0: none */
};

struct sched_node_row {
    const char *name;
    const char *state;
    uint64_t last_seen_ms;
    const void *topology;
    size_t topology_len;
    const char *drain_reason; /* NULL: not drained (scontrol update state=drain) */
};

struct sched_store;

/* Opens (creating when missing) the database at path. err says what failed. */
int sched_store_open(const char *path, struct sched_store **ret_store, struct gs_error *err);
void sched_store_close(struct sched_store *store);

int sched_store_begin(struct sched_store *store);
int sched_store_commit(struct sched_store *store);
int sched_store_rollback(struct sched_store *store);

/* The id the next inserted job will get: one more than any job ever stored. */
int sched_store_next_job_id(struct sched_store *store, uint64_t *ret_id);

/* Inserts or replaces the whole row with row->id. */
int sched_store_put_job(struct sched_store *store, const struct sched_job_row *row);
int sched_store_put_task(struct sched_store *store, const struct sched_task_row *row);
/* Deletes a job's task rows (when it is requeued: the next attempt gets new ones). */
int sched_store_clear_tasks(struct sched_store *store, uint64_t job_id);
int sched_store_put_node(struct sched_store *store, const struct sched_node_row *row);
/* Inserts or replaces the step row (row->job_id, row->step). */
int sched_store_put_step(struct sched_store *store, const struct sched_step_row *row);
/* Steps of the jobs with first <= job_id <= last, by job then step. */
int sched_store_load_steps_range(struct sched_store *store, uint64_t first, uint64_t last,
                                 int (*fn)(const struct sched_step_row *row, void *data),
                                 void *data);
/* Every srun step (step >= 1) still RUNNING without a live_steps record becomes state, ended
 * at end_ms: gschedd takes up only those it kept a record of after a restart (the others'
 * tasks are ended when their workers register). */
int sched_store_end_running_steps(struct sched_store *store, int state, uint64_t end_ms);
int sched_store_add_event(struct sched_store *store, uint64_t at_ms, uint64_t job_id,
                          const char *node, const char *kind, const char *detail);

/* Calls fn for every stored row, in id / key order; a negative return from fn stops the
 * walk and is returned. */
int sched_store_load_jobs(struct sched_store *store,
                          int (*fn)(const struct sched_job_row *row, void *data), void *data);
int sched_store_load_tasks(struct sched_store *store,
                           int (*fn)(const struct sched_task_row *row, void *data), void *data);
int sched_store_load_nodes(struct sched_store *store,
                           int (*fn)(const struct sched_node_row *row, void *data), void *data);

/*
 * Reads of part of the state (scheduler.min_job_age), each calling fn per row as the loads
 * above do; a negative return from fn stops the walk and is returned.
 *
 * Jobs gschedd keeps in memory at start: not finished, or ended at or after ended_since_ms;
 * in id order.
 */
int sched_store_load_live_jobs(struct sched_store *store, uint64_t ended_since_ms,
                               int (*fn)(const struct sched_job_row *row, void *data), void *data);
/* Jobs with first <= id <= last, in id order. */
int sched_store_load_jobs_range(struct sched_store *store, uint64_t first, uint64_t last,
                                int (*fn)(const struct sched_job_row *row, void *data), void *data);
/* Tasks of the jobs with first <= job_id <= last, by job then rank. */
int sched_store_load_tasks_range(struct sched_store *store, uint64_t first, uint64_t last,
                                 int (*fn)(const struct sched_task_row *row, void *data),
                                 void *data);
/* Events of the jobs with first <= job_id <= last, oldest first. */
int sched_store_load_events_range(struct sched_store *store, uint64_t first, uint64_t last,
                                  int (*fn)(uint64_t at_ms, uint64_t job_id, const char *node,
                                            const char *kind, const char *detail, void *data),
                                  void *data);
/* Which finished jobs sched_store_load_finished reads. */
struct sched_store_job_filter {
    const char *name;         /* NULL or "": any */
    const char *user;         /* NULL or "": any */
    uint32_t states;          /* bit 1 << state for each state wanted; 0: any finished one */
    uint64_t ended_before_ms; /* only jobs that ended before (0: any) */
    uint32_t max;             /* at most this many rows (0: none at all) */
};
/* Finished jobs matching f, the most recent (highest id) first. */
int sched_store_load_finished(struct sched_store *store, const struct sched_store_job_filter *f,
                              int (*fn)(const struct sched_job_row *row, void *data), void *data);

/* A fair-share association's usage as of at_ms; every stored one, in key order. */
int sched_store_put_usage(struct sched_store *store, const char *account, const char *user,
                          double usage, uint64_t at_ms);
int sched_store_load_usage(struct sched_store *store,
                           int (*fn)(const char *account, const char *user, double usage,
                                     uint64_t at_ms, void *data),
                           void *data);

/*
 * History for sreport (scheduler/report.h). A node's availability: a row each time it
 * becomes schedulable (up) or stops being so (down, drained, lost), or enters or leaves a
 * Flags=MAINT reservation (maint), with its size then.
 * A job's allocation: a row per attempt and node, from its start (end_ms 0 while open).
 */
struct sched_alloc_row {
    uint64_t job_id; /* 0 when loaded */
    uint32_t attempt;
    const char *node; /* borrowed */
    uint32_t cores, gpus;
    uint64_t start_ms, end_ms;
    const char *user, *account; /* borrowed; NULL on load of a row without them */
};

int sched_store_put_node_state(struct sched_store *store, uint64_t at_ms, const char *node, bool up,
                               bool maint, uint32_t cores, uint32_t gpus);
/* Once per (job, attempt, node): a row already there stays as it is. */
int sched_store_put_alloc(struct sched_store *store, const struct sched_alloc_row *row);
/* Closes the job's open allocation rows at end_ms. */
int sched_store_end_allocs(struct sched_store *store, uint64_t job_id, uint64_t end_ms);
/* Every node state row before before_ms, by node, oldest first. */
int sched_store_load_node_states(struct sched_store *store, uint64_t before_ms,
                                 int (*fn)(uint64_t at_ms, const char *node, bool up, bool maint,
                                           uint32_t cores, uint32_t gpus, void *data),
                                 void *data);
/* Allocation rows that overlap [from_ms, to_ms) (open ones included), by node. */
int sched_store_load_allocs(struct sched_store *store, uint64_t from_ms, uint64_t to_ms,
                            int (*fn)(const struct sched_alloc_row *row, void *data), void *data);

/*
 * Deletes old history (scheduler.purge_after, as slurmdbd's Purge*After), one batch a call:
 * the next max_jobs jobs by id after after_id that ended before before_ms (not pending,
 * running or requeued), except those in keep[0..nkeep) (sorted ascending: the jobs gschedd
 * still holds in memory), with their tasks, steps, allocations and events. last_id is set
 * to the highest id the batch looked at, the next call's after_id. The call whose batch is
 * the last (fewer than max_jobs looked at) sets done and also deletes the events of no
 * job (nodes', reservations') and the node_history rows before before_ms, each node's last
 * one there moved up to before_ms (its state then, from which sreport counts). The highest
 * job id ever stored stays known, so ids are never given again (sched_store_next_job_id).
 * Meant to run in a transaction. 0 or a negative errno.
 */
struct sched_store_purge {
    uint64_t before_ms, after_id;
    const uint64_t *keep; /* borrowed */
    size_t nkeep, max_jobs;
    uint64_t last_id; /* out */
    size_t deleted;   /* out: jobs deleted */
    bool done;        /* out */
};
int sched_store_purge(struct sched_store *store, struct sched_store_purge *p);

/* Advance reservations (scontrol create reservation): spec is a packed gs.Reservation. */
int sched_store_put_resv(struct sched_store *store, const char *name, const void *spec, size_t len);
int sched_store_delete_resv(struct sched_store *store, const char *name);
/* Every stored reservation, by name; spec borrowed for the call. */
int sched_store_load_resvs(struct sched_store *store,
                           int (*fn)(const char *name, const void *spec, size_t len, void *data),
                           void *data);

/* Running srun steps (live_steps): record is a packed gs.StepRecord, borrowed for the call;
 * putting one deletes the step's stored exits, deleting one deletes them too. */
int sched_store_put_live_step(struct sched_store *store, uint64_t job_id, uint32_t step,
                              const void *record, size_t len);
int sched_store_delete_live_step(struct sched_store *store, uint64_t job_id, uint32_t step);
/* A running step's task exit (live_step_exits): a packed gs.TaskExit of rank, borrowed. */
int sched_store_put_live_exit(struct sched_store *store, uint64_t job_id, uint32_t step,
                              uint32_t rank, const void *exit, size_t len);
/* Deletes the records of steps whose job is not RUNNING (it ended while gschedd was down,
 * or before the record was deleted), and the exits of steps without a record. */
int sched_store_prune_live_steps(struct sched_store *store);
/* Every stored exit, by job, step and rank: fn's record is a packed gs.TaskExit. */
int sched_store_load_live_exits(struct sched_store *store,
                                int (*fn)(uint64_t job_id, uint32_t step, const void *record,
                                          size_t len, void *data),
                                void *data);
int sched_store_load_live_steps(struct sched_store *store,
                                int (*fn)(uint64_t job_id, uint32_t step, const void *record,
                                          size_t len, void *data),
                                void *data);

/* Events of one job (job_id != 0) or all, oldest first. */
int sched_store_load_events(struct sched_store *store, uint64_t job_id,
                            int (*fn)(uint64_t at_ms, uint64_t job_id, const char *node,
                                      const char *kind, const char *detail, void *data),
                            void *data);

#endif
