/*
 * planner.h: one planning pass over the job table: which pending jobs may be considered
 * (not held, dependencies met, array throttle), their priorities, what each asks of a
 * node, and the pass of plan.h over them. The daemon's pass (sched_engine.c) and a simulator call
 * the same function; it does no I/O, reads no clock (now is a parameter) and sends nothing.
 *
 * What it decides it writes into the jobs it read: a waiting job's reason (Resources,
 * Priority, Dependency, Held, JobArrayTaskLimit, a QOS limit's) and its expected start when
 * it holds the reservation. With QOS configured, jobs of higher tiers go first, QOS limits
 * are kept (qos.h), and a job of a higher tier that does not fit may choose running jobs
 * of lower tiers to preempt (preempt.h; never those of a QOS with preempt_mode "off"): the
 * caller requeues or cancels them (their QOS's preempt_mode) and marks each job's
 * preempted_by. A job given a start is not started: the caller starts it (stores it, tells
 * its workers) or gives its allocation back. Loop thread only.
 *
 * Advance reservations (scontrol create reservation) keep whole nodes, or some GPUs of each
 * of their nodes, for the jobs that name them: such a job waits (reason Reservation) until
 * its reservation starts and then may use only its nodes (its GPUs there); any other job
 * may use a reservation's nodes (GPUs) only if its time limit ends it before the
 * reservation starts. A job naming a reservation that is gone waits (reason
 * ReservationDeleted). A job naming none is drawn into a started MAGNETIC reservation that
 * lets its user or account in: it may use that reservation's nodes, and they rank first.
 */
#ifndef SCHED_PLANNER_H
#define SCHED_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "common/jobspec.h"
#include "scheduler/cluster.h"
#include "scheduler/jobs.h"
#include "scheduler/plan.h"
#include "common/config.h"

/* The nodes a job may use and must use, as sched_req bitmaps (NULL: no restriction). */
struct sched_node_masks {
    uint64_t *allowed;
    uint64_t *required;
    uint32_t nrequired;
    bool allowed_borrowed;      /* allowed is not the masks' own (a partition's or a
                                 * reservation's, shared): copied before it is narrowed */
    const uint64_t *gpu_masks;  /* per node, the GPUs it may use (reservations'; borrowed) */
    const uint32_t *gpu_masked; /* the nodes where that is not every GPU (borrowed; NULL: */
    uint32_t ngpu_masked;       /* not known, placement finds them) */
    uint64_t *data_bytes;       /* per node, bytes of the job's dataset its cache holds */
    uint32_t *data_nodes;       /* the nodes where that is not 0 (NULL: not known) */
    uint32_t ndata_nodes;
    bool data_borrowed;         /* data_bytes and data_nodes are not the masks' own */
    bool data_first;            /* they rank before fit (scheduler.data_locality = "prefer") */
    const uint64_t *preferred;  /* nodes that rank first (a reservation's; borrowed) */
    uint64_t *prefer_own;       /* sbatch --prefer's nodes, owned; preferred unless a
                                 * reservation's are */
    const uint64_t *gpu_prefer; /* per node, GPUs chosen first (a GPU reservation's; borrowed) */
    struct sched_req *het;      /* a heterogeneous job's further components' requests, owned */
};

/*
 * An advance reservation as the planner sees it: nodes is a bitmap over the cluster's node
 * indices, as many words as the masks' (nnodes / 64 + 1), borrowed.
 */
struct sched_planner_resv {
    const char *name;
    uint64_t start_ms; /* wall clock */
    uint64_t end_ms;   /* 0: no end */
    const uint64_t *nodes;
    /* A reservation of some GPUs of its nodes: per node index (the cluster's node count),
     * the GPUs it keeps there (0 on nodes not its own). NULL: it keeps whole nodes. */
    const uint64_t *gpus;
    /* FLEX: a job naming it may start before it, and use any node or GPU a job naming no
     * reservation may (other reservations kept) as well as its own, its own first. */
    bool flex;
    /* MAGNETIC: once it has started, a job naming no reservation whose user or account it
     * lets in (users, accounts: borrowed) may use its nodes and GPUs too, its nodes first. */
    bool magnetic;
    const char *const *users;
    size_t nusers;
    const char *const *accounts;
    size_t naccounts;
    /* ANY_NODES, or licenses and no nodes (nodeless): a job naming it may run on any node
     * a job naming no reservation may (other reservations kept), its own nodes first. */
    bool any_nodes, nodeless;
    /* Licenses= it keeps from its start to its end (borrowed; indices into the configured
     * licenses): a job outside it whose time limit meets it takes only what they leave, a
     * job naming it draws on them first. */
    const struct sched_license_need *licenses;
    uint32_t nlicenses;
};

/* Points req at the masks, which must outlive it. */
void sched_node_masks_apply(const struct sched_node_masks *m, struct sched_req *req);
void sched_node_masks_release(struct sched_node_masks *m);

/*
 * What the planner asks its caller (data is passed back to each):
 *   masks: a job's partition and node lists as node masks (from the daemon's registry and
 *     configuration): fills m (all NULL: any node) or returns -ENOMEM. NULL: every job may
 *     use every node.
 *   priority: a pending job's priority at now_ms (priority.h; the caller may keep what it
 *     is made of in the job). NULL: the job's spec priority minus its nice.
 */
struct sched_planner_hooks {
    int (*masks)(void *data, const struct gs_jobspec *spec, struct sched_node_masks *m);
    int32_t (*priority)(void *data, struct sched_job *job, uint64_t now_ms);
    void *data;
    /* The QOS (limits, tiers: jobs of higher tiers go first and may preempt) and licenses
     * (a job waits while its counts are not free); NULL: none. */
    const struct gs_config *cfg;
    /* Advance reservations, borrowed for the pass (none: NULL, 0). */
    const struct sched_planner_resv *resv;
    size_t nresv;
    /* How many blocked jobs hold a backfill reservation (plan.h); 0 or 1: EASY's one. */
    uint32_t backfill_depth;
};

/* What the job asks of each node, without node masks. */
void sched_job_req(const struct gs_jobspec *spec, struct sched_req *req);
/*
 * What a job asks, with m's node masks applied (m must outlive req): sched_job_req, and for
 * a heterogeneous job each further component's request, kept in m->het. 0 or -ENOMEM.
 */
int sched_job_req_masked(const struct gs_jobspec *spec, struct sched_node_masks *m,
                         struct sched_req *req);

/* A running job to preempt (requeue or cancel) so that a pending one of a higher tier can
 * start. */
struct sched_preemption {
    struct sched_job *victim;
    struct sched_job *by;
    double cost; /* its lost work (preempt.h) */
};

/* A pass's decisions: the jobs it considered (borrowed from the table), a verdict each. */
struct sched_plan_out {
    struct sched_job **jobs;
    struct sched_verdict *verdicts;
    size_t n;
    struct sched_preemption *preempt; /* new victims chosen in this pass */
    size_t npreempt;
    struct sched_job **expired; /* pending jobs that could no longer end by their deadline */
    size_t nexpired;
    /* Pending jobs whose dependencies can never be met, to be cancelled: they asked so
     * (--kill-on-invalid-dep=yes), or the cluster does (scheduler.kill_invalid_depend). */
    struct sched_job **invalid_dep;
    size_t ninvalid_dep;
    struct sched_reservation res;
    bool timed_deps;  /* a job waits for after:JOB+MIN: plan again when that time comes */
    uint64_t wake_ms; /* the next advance reservation's start or end, or a job's wait for
                       * its data's nodes or for its --switches count ending, after now:
                       * plan again then (0: none) */
};

/*
 * Plans jobs[*plan_from..] (*plan_from advances past the jobs that have ended for good)
 * on cluster at now_ms. The verdicts that start a job hold resources taken from cluster:
 * the caller starts each such job or gives its allocation back. Returns 0 or -ENOMEM (then
 * nothing was taken). Release out with sched_plan_out_release().
 */
int sched_planner_pass(struct sched_jobs *jobs, size_t *plan_from, struct sched_cluster *cluster,
                       const struct sched_planner_hooks *hooks, uint64_t now_ms,
                       struct sched_plan_out *out);
void sched_plan_out_release(struct sched_plan_out *out);

/* The most blocked jobs an estimate gives a reservation, its own included. */
#define SCHED_WILL_RUN_DEPTH 64

/* What a job submitted now would get (sbatch --test-only): sched_planner_will_run(). */
struct sched_will_run {
    bool now;          /* it would start at once */
    uint64_t start_ms; /* when it would start (wall clock), now's when at once; 0: unknown */
    uint32_t *nodes;   /* where: cluster indices (owned), nnodes of them; NULL when unknown */
    uint32_t nnodes;
    uint32_t cpus;    /* the cores it would hold there, all nodes together */
    char reason[160]; /* without a start: why, as a pending reason ("Dependency", ...) */
    /* It would start at once by preempting these running jobs (owned; npreempts of them;
     * nodes: theirs): a job of a higher tier than they, as the pass would choose them. */
    uint64_t *preempts;
    uint32_t npreempts;
};

void sched_will_run_release(struct sched_will_run *w);

/*
 * When and where draft, a pending job not in the table (its submit_seq after every job's
 * there), would start if it were submitted at now_ms, as the pass would plan it: every
 * pending job ahead of it in plan order holds a reservation (up to SCHED_WILL_RUN_DEPTH,
 * or the hooks' backfill depth when more), and it gets the earliest start that delays none
 * of them, running jobs ending at their time limits. Its --begin time is the floor of the
 * answer. Preemption is not weighed. Changes nothing: cluster is copied, and no table job's
 * reason or estimate is written (the priority hook is still asked of each). Returns 0 or
 * -ENOMEM; release ret with sched_will_run_release().
 */
int sched_planner_will_run(struct sched_jobs *jobs, size_t plan_from,
                           const struct sched_cluster *cluster,
                           const struct sched_planner_hooks *hooks, uint64_t now_ms,
                           struct sched_job *draft, struct sched_will_run *ret);

#endif
