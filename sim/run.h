/*
 * run.h: one replay of a trace under one policy, in virtual time, through gschedd's own
 * planning code: the job table and its state machine (scheduler/jobs.h), the planning pass
 * (scheduler/planner.h: priority order, gang placement, EASY backfill), placement
 * (scheduler/cluster.h), and for multifactor the priority (scheduler/priority.h) from a
 * fair-share tree (scheduler/fairshare.h) charged as jobs run.
 *
 * Events are job arrivals and job ends; at each instant with events, ends are applied,
 * arrivals join the table, and one planning pass runs (as gschedd plans on every event).
 * A job the pass starts runs for its trace run time stretched by its placement
 * (model.h). Nothing reads a clock: time is the trace's, in milliseconds.
 *
 * Policies:
 *   fifo-firstfit     submit order, no backfill: the planner's pass, then every start it
 *                     made behind a blocked job is given back, so a blocked head blocks
 *                     everyone; placement without link matrices (lowest free GPUs)
 *   easy              the planner as gschedd runs it with no [priority]: submit order,
 *                     EASY backfill
 *   multifactor       the planner with Slurm's multifactor priority (age, fair share) as
 *                     gschedd computes it, usage charged in virtual time
 *   X-topo            the same with the nodes' GPU link matrices given to the cluster, so
 *                     placement is topology-aware (fifo-topo, easy-topo, multifactor-topo)
 *   X-preempt         easy, multifactor, easy-topo, multifactor-topo with two QOS: the
 *                     trace's urgent jobs (gs_sim_trace_mark_urgent) in "urgent", tier 1,
 *                     the others in "normal", tier 0, as gschedd's [[qos]]: urgent jobs
 *                     are planned first and one that does not fit preempts normal ones
 * Without -topo the cluster has no link matrices and placement ignores links; run times
 * are stretched by the true links either way.
 *
 * With a data model (data.h; datasets > 0) every job reads a dataset and every policy
 * pays for copying what its nodes lack before it runs; only these see the caches:
 *   easy-data         easy with gschedd's data-aware placement (data_locality =
 *                     "tiebreak": among equally fit nodes, those caching more of it)
 *   easy-data-wait    and delay scheduling: a job whose data's nodes are busy waits for
 *                     them up to the model's wait (scheduler.data_locality_wait)
 *   easy-data-ski     and that wait weighed against the copy (scheduler.data_copy_rate at
 *                     the model's rate): no longer than the copy it would save
 *
 * Preemption, in virtual time: the pass chooses victims by the work they would lose
 * (sched_preempt_cost from each running job's last checkpoint, taken every
 * checkpoint_ms of its attempt's run). A victim stops working at once and loses what it did
 * since that checkpoint; it holds its GPUs for kill_grace_ms more (SIGTERM to SIGKILL), then
 * is requeued (PENDING, same id, so same submit order) with the trace run time it had left
 * at the checkpoint, which its next attempt runs stretched by its new placement.
 *
 * Single-threaded; the result owns its series.
 */
#ifndef GS_SIM_RUN_H
#define GS_SIM_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "sim/data.h"
#include "sim/trace.h"

/* What a policy's planner knows of the jobs' data in the nodes' caches. */
enum gs_sim_data_policy {
    GS_SIM_DATA_BLIND = 0, /* nothing: placement ignores it (jobs still pay for copies) */
    GS_SIM_DATA_TIEBREAK,  /* the caches, as data_locality = "tiebreak" */
    GS_SIM_DATA_WAIT,      /* and a fixed data_locality_wait */
    GS_SIM_DATA_SKI,       /* and the wait weighed by data_copy_rate */
};

struct gs_sim_policy {
    const char *name;
    bool backfill;
    bool multifactor;
    bool topo;
    bool preempt; /* urgent jobs in a QOS of tier 1 that preempts */
    enum gs_sim_data_policy data;
    uint32_t depth; /* backfill depth (plan.h): 1 is EASY */
};

/* How preemption is modelled (docs/simulator.md). */
struct gs_sim_preempt_model {
    uint64_t checkpoint_ms; /* a job checkpoints every this much of its attempt; 0: never */
    uint64_t kill_grace_ms; /* a victim holds its GPUs this long after it is preempted */
};

#define GS_SIM_DEFAULT_CHECKPOINT_MS (30 * 60 * 1000)
#define GS_SIM_DEFAULT_KILL_GRACE_MS (30 * 1000)
#define GS_SIM_DEFAULT_URGENT_SHARE 0.10

/* Every policy, fifo-firstfit (the baseline) first. */
extern const struct gs_sim_policy gs_sim_policies[];
extern const size_t gs_sim_npolicies;
/* The policy named, or NULL. */
const struct gs_sim_policy *gs_sim_policy_find(const char *name);

/* The cluster's state from t_ms until the next point. */
struct gs_sim_point {
    uint64_t t_ms;
    uint32_t alloc_gpus;
    uint32_t pending;
};

struct gs_sim_result {
    const char *policy;
    bool preempt;                  /* the policy preempts (urgent jobs in a tier above) */
    size_t jobs;                   /* trace jobs replayed (those that could ever fit) */
    size_t finished;               /* of them, ended */
    size_t impossible;             /* could never fit this cluster: not replayed */
    size_t timeouts;               /* ended by their time limit */
    size_t passes;                 /* planning passes */
    double avg_jct_s, p99_jct_s;   /* end - submit */
    double avg_wait_s, p99_wait_s; /* start - submit */
    double makespan_s;             /* last end - first submit */
    double alloc_queued;           /* allocated GPUs / all GPUs, time-weighted while a job waits */
    double util;                   /* allocated GPUs / all GPUs over the makespan */
    double stranded_gpus;          /* mean free GPUs while a job waits */
    double queued_share;           /* share of the makespan during which a job waits */
    double jain;                   /* over accounts: GPU-time held / max-min fair GPU-time, while a
                                    * job waits (docs/simulator.md) */
    double avg_stretch;            /* of run times by placement (model.h) */
    double jct_vs_baseline;        /* avg_jct / fifo-firstfit's; 0 when not known */
    size_t preemptions;            /* victims requeued */
    size_t preempted_jobs;         /* distinct jobs among them */
    double gpu_hours_lost;         /* GPUs x time since their last checkpoint, at preemption */
    size_t urgent;                 /* of the jobs ended, those marked urgent (any policy) */
    double urgent_avg_wait_s;      /* their mean queueing delay */
    double urgent_avg_jct_s;       /* their mean JCT */
    uint64_t copied_bytes;         /* the data model's copies, over all nodes */
    size_t copies;                 /* attempts that copied anything */
    double avg_copy_s;             /* mean copy time per attempt started */
    struct gs_sim_point *series;
    size_t nseries, series_cap;
};

/*
 * Replays t under policy. cfg: [priority] and [[account]] for multifactor (may be NULL for
 * the others; its [[qos]] are not used: the -preempt policies bring their own two); shares:
 * each trace account's entitled share (naccounts entries, summing to 1), the weights of the
 * max-min fair division Jain's index is measured against; model: checkpoints and kill grace
 * (NULL: the defaults above); data: the data model (NULL, or no datasets: jobs read no
 * data; t's jobs' datasets assigned). Returns 0 or -ENOMEM; release *ret with
 * gs_sim_result_release().
 */
int gs_sim_run(const struct gs_sim_trace *t, const struct gs_sim_policy *policy,
               const struct gs_config *cfg, const double *shares,
               const struct gs_sim_preempt_model *model, const struct gs_sim_data_model *data,
               struct gs_sim_result *ret);
void gs_sim_result_release(struct gs_sim_result *r);

#endif
