/*
 * license_plan.h: licenses over time in one planning pass (plan.c), as Slurm's backfill
 * plans them with bf_licenses. It knows how many of each license are free now (the cluster's
 * count less what the running jobs and the jobs the pass starts hold) and how many will be
 * free later: a job holding some gives them back at its time limit, a reservation takes its
 * job's from its start to its end. A job blocked on licenses thus gets a reservation from
 * when they free, and a job behind it may take some now only if every reservation that
 * starts before it would end still finds what it needs. Pure; nothing is allocated after
 * init but a walk's two arrays.
 */
#ifndef SCHED_LICENSE_PLAN_H
#define SCHED_LICENSE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_LICENSE_NO_HOLD UINT32_MAX

/* count of the pass's license number license (an index into its totals). */
struct sched_license_need {
    uint32_t license;
    uint32_t count;
};

/* A job's or a reservation's counts, held from start_s until end_s (UINT64_MAX: never
 * given back). */
struct sched_license_hold {
    uint64_t start_s, end_s;
    const struct sched_license_need *need; /* borrowed */
    uint32_t nneed;
};

struct sched_license_plan {
    const uint32_t *total; /* per license, how many the cluster has (borrowed) */
    uint32_t n;
    uint64_t now_s;
    int64_t *free; /* now; below 0 when a lowered count is over-held */
    bool *claimed; /* by a job waiting for it without a reservation */
    /* The holds from now with an end, given back then (plan.c's walk is told of each end
     * by its index), and the reservations in the order they were made. */
    struct sched_license_hold *holds, *resv;
    size_t nholds, max_holds, nresv, max_resv;
    /* [r * n + l]: how many of l are free at reservation r's start, after every
     * reservation running then (r's own too): kept as holds and reservations come, so
     * that no question walks the holds. */
    int64_t *at_resv;
};

/* What is free at the time a walk (plan.c's shadow time) has come to. */
struct sched_license_walk {
    int64_t *free;    /* now's, and what holds ending after now gave back by then */
    int64_t *overdue; /* what holds past their limit give back, but only after now */
};

/*
 * Room for max_holds holds from now (the running and pending jobs naming licenses) and
 * max_resv reservations; everything free. 0 or -ENOMEM.
 */
int sched_license_plan_init(struct sched_license_plan *lp, const uint32_t *total, uint32_t n,
                            uint64_t now_s, size_t max_holds, size_t max_resv);
void sched_license_plan_release(struct sched_license_plan *lp);
/* Whether need could ever be had: each a license the pass knows, at most its count. */
bool sched_license_plan_ever(const struct sched_license_plan *lp,
                             const struct sched_license_need *need, uint32_t nneed);
/*
 * A running or started job's counts, held from now until end_s (a license the pass does
 * not know is left out). Returns the hold's index for a walk (sched_license_walk_back),
 * or SCHED_LICENSE_NO_HOLD when it is never given back (no end, nothing known, or more
 * than max_holds of them).
 */
uint32_t sched_license_plan_hold(struct sched_license_plan *lp,
                                 const struct sched_license_need *need, uint32_t nneed,
                                 uint64_t end_s);
/* A reservation's counts, from start_s until end_s; at most max_resv of them are kept. */
void sched_license_plan_reserve(struct sched_license_plan *lp,
                                const struct sched_license_need *need, uint32_t nneed,
                                uint64_t start_s, uint64_t end_s);
/* Whether need is free now, reservations aside. */
bool sched_license_plan_free_now(const struct sched_license_plan *lp,
                                 const struct sched_license_need *need, uint32_t nneed);
/* Whether need is free from now until end beside every reservation: at now and at each
 * reservation's start in between. */
bool sched_license_plan_fits(const struct sched_license_plan *lp,
                             const struct sched_license_need *need, uint32_t nneed, uint64_t end);

/* A walk from now on; 0 or -ENOMEM. */
int sched_license_walk_init(struct sched_license_walk *w, const struct sched_license_plan *lp);
void sched_license_walk_release(struct sched_license_walk *w);
/* The walk has come to at_s, the end of hold (an index from sched_license_plan_hold). */
void sched_license_walk_back(struct sched_license_walk *w, const struct sched_license_plan *lp,
                             uint32_t hold, uint64_t at_s);
/*
 * Whether need is free from t, where the walk has come to, until end: beside every
 * reservation (with_resv) or none (EASY's simulation of the head alone: the job it asks
 * about was checked against the head's licenses before, sched_license_plan_fits).
 */
bool sched_license_walk_fits(const struct sched_license_walk *w,
                             const struct sched_license_plan *lp, bool with_resv,
                             const struct sched_license_need *need, uint32_t nneed, uint64_t t,
                             uint64_t end);

/* A job waiting for need without a reservation keeps it from the jobs behind it. */
void sched_license_plan_claim(struct sched_license_plan *lp, const struct sched_license_need *need,
                              uint32_t nneed);
bool sched_license_plan_claimed(const struct sched_license_plan *lp,
                                const struct sched_license_need *need, uint32_t nneed);

#endif
