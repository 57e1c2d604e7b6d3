/*
 * plan.h: one scheduling pass. Given the pending jobs and the running ones, decide which
 * pending jobs start now and where, and why each other job waits.
 *
 * Order is preemption tier (higher first), then priority (higher first), then submit order. Jobs
 * start in that order while they fit. The first job that does not fit gets a reservation: the
 * earliest time it could start if running jobs end at their time limits (the "shadow time") and the
 * nodes it would use. After it, a job may start early (EASY backfill) only if that cannot delay the
 * reservation: it ends, by its time limit, before the shadow time, or it uses none of the reserved
 * nodes, or a simulation shows the reservation still holds with it running. A job that fits
 * but waits for its dataset's busy nodes (data_wait_until_s) holds the reservation in the
 * same way when it is the first to need one: its data's nodes, from when enough of them free
 * for it, if that is before its wait ends.
 *
 * Licenses are planned over time too (license_plan.h): a job whose licenses are not free
 * waits (SCHED_REASON_LICENSES) and, while jobs may still get one, holds a reservation from
 * when they and its nodes free; a job behind it takes licenses now only if every reservation
 * starting before it would end still finds its own then. One waiting for licenses without a
 * reservation keeps them from the jobs behind it for the rest of the pass.
 *
 * The pass is run on every event that can change the answer (submit, task exit, node up or
 * down, release), never on a timer. It takes the resources of the jobs it starts in
 * cluster; the caller records them. Pure: no I/O, no clock (now is a parameter).
 */
#ifndef SCHED_PLAN_H
#define SCHED_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/cluster.h"
#include "scheduler/license_plan.h"

#define SCHED_TIME_INFINITE UINT64_MAX

struct sched_pending {
    uint64_t job_id;
    uint32_t tier; /* its QOS's preemption tier: higher tiers go first */
    int32_t priority;
    uint64_t submit_seq;   /* ties in priority go to the lower */
    uint64_t time_limit_s; /* SCHED_TIME_INFINITE when unlimited */
    /* Until then it may wait for its dataset's nodes (scheduler.data_locality_wait): a
     * placement holding fewer bytes of it than those nodes could leaves it pending,
     * SCHED_REASON_DATA. 0: never waits. With data_copy_rate (bytes/s; 0: none) the wait
     * also ends once it has lasted, from data_wait_from_s, as long as copying the bytes the
     * placement lacks would take. */
    uint64_t data_wait_until_s, data_wait_from_s;
    uint64_t data_copy_rate;
    struct sched_req req;
    const struct sched_license_need *licenses; /* borrowed; nlicenses of them */
    uint32_t nlicenses;
    /* What it holds once started, when not licenses (NULL): an advance reservation's
     * licenses make what it is checked for differ from what it takes (planner.c). */
    const struct sched_license_need *lic_hold;
};

struct sched_running {
    uint64_t job_id;
    uint64_t end_s; /* start + time limit; SCHED_TIME_INFINITE when unlimited */
    const struct sched_alloc *alloc;
    const struct sched_license_need *licenses; /* what it holds until end_s (borrowed) */
    uint32_t nlicenses;
};

enum sched_reason {
    SCHED_REASON_NONE = 0,  /* starts now */
    SCHED_REASON_RESOURCES, /* does not fit in what is free */
    SCHED_REASON_PRIORITY,  /* fits, but would delay a higher-priority job's reservation */
    SCHED_REASON_LIMIT,     /* the gate kept it back (a QOS limit); its reason is the gate's */
    SCHED_REASON_DATA,      /* fits, but away from its data, whose nodes are busy: waits */
    SCHED_REASON_LICENSES,  /* its licenses are not free (or never can be) */
};

struct sched_verdict {
    bool start;
    bool backfilled; /* started ahead of a blocked higher-priority job */
    enum sched_reason reason;
    uint64_t wake_s;          /* SCHED_REASON_DATA: when its wait ends (plan again then) */
    uint64_t reserved_s;      /* it holds a reservation from then (its expected start); 0: none */
    uint32_t *reserved_nodes; /* ... on these nodes (cluster indices; owned), nreserved of them */
    uint32_t nreserved;
    struct sched_alloc alloc; /* where it runs, when start */
};

struct sched_reservation {
    uint64_t job_id;  /* 0: no job is blocked */
    uint64_t start_s; /* shadow time; SCHED_TIME_INFINITE when it cannot be predicted */
};

const char *sched_reason_name(enum sched_reason reason);

/* Initialises n verdicts; release them with sched_verdicts_release(). */
void sched_verdicts_init(struct sched_verdict *v, size_t n);
void sched_verdicts_release(struct sched_verdict *v, size_t n);

/*
 * Limits beside resources (QOS): may_start is asked before a job is placed (false: it
 * waits, SCHED_REASON_LIMIT, without a reservation); started is told of each job the pass
 * starts, in order. index is into pending.
 */
struct sched_plan_gate {
    bool (*may_start)(void *data, size_t index);
    void (*started)(void *data, size_t index);
    void *data;
};

/* What a pass may do beside EASY backfill over nodes alone (sched_plan_with). */
struct sched_plan_opts {
    /* How many blocked jobs, in order, hold a reservation; 0 or 1 is EASY (above). With
     * more, each further one's is computed after the running jobs and the reservations
     * before it (their nodes kept from before they start, over its time limit), and a job
     * behind them may start early only if it ends before each reservation's start or uses
     * none of its nodes (conservative backfill, to that depth; no simulation). */
    uint32_t depth;
    const struct sched_plan_gate *gate; /* NULL: none */
    /* Per license, how many the cluster has (borrowed); the jobs' licenses index it. */
    const uint32_t *license_total;
    uint32_t nlicenses;
};

/*
 * Runs the pass. verdicts has npending entries, matching pending by index. Returns 0 or
 * -ENOMEM (then nothing was taken from cluster).
 */
int sched_plan(struct sched_cluster *cluster, const struct sched_pending *pending, size_t npending,
               const struct sched_running *running, size_t nrunning, uint64_t now_s,
               struct sched_verdict *verdicts, struct sched_reservation *ret_res);
/* The same with opts (NULL: sched_plan's). */
int sched_plan_with(struct sched_cluster *cluster, const struct sched_pending *pending,
                    size_t npending, const struct sched_running *running, size_t nrunning,
                    uint64_t now_s, const struct sched_plan_opts *opts,
                    struct sched_verdict *verdicts, struct sched_reservation *ret_res);

#endif
