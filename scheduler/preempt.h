/*
 * preempt.h: which running jobs a pending job of a higher preemption tier (its QOS's)
 * preempts, pure. A pending job that the pass could not place for want of resources looks
 * at the running jobs of lower tiers: those already being preempted for it count as freed
 * (it waits for them rather than taking more); else victims are added, cheapest first, until
 * it fits on what they free, and then any victim it can do without is spared, dearest first.
 * A victim's cost is the work it would lose: GPU-seconds (core-seconds for a job without
 * GPUs) since its last checkpoint as its progress reports say, else since it started. So the
 * choice frees the GPUs needed at the least lost work, then with the fewest jobs. A pending
 * job that waits for licenses ([[license]]) chooses the same way among the jobs holding
 * them, until what is free and what its victims give back covers its counts.
 */
#ifndef SCHED_PREEMPT_H
#define SCHED_PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "scheduler/cluster.h"
#include "scheduler/license_plan.h"

/* A running job the pending one might preempt. */
struct sched_preempt_cand {
    uint64_t job_id;
    uint32_t tier;
    double cost;                               /* lost work if preempted now */
    const struct sched_alloc *alloc;           /* what it holds */
    uint64_t preempted_by;                     /* 0, or the job it is already being preempted for */
    const struct sched_license_need *licenses; /* the licenses it holds (borrowed) */
    uint32_t nlicenses;
};

/*
 * A preemptor's licenses: what it needs, and per configured license what is free for it
 * (the pass's free counts, less what earlier preemptors of the pass claimed). A choice adds
 * its victims' counts to free and takes the job's out, so that a later preemptor does not
 * count on them. anywhere: its nodes were not what it waited for, so it may go on any node,
 * not only where victims gave something back.
 */
struct sched_preempt_lic {
    const struct sched_license_need *need; /* borrowed; nneed of them */
    uint32_t nneed;
    int64_t *free;
    bool anywhere;
};

/* The lost work of a job holding alloc, started at start_ms, checkpointed last at ckpt_ms. */
double sched_preempt_cost(const struct sched_alloc *alloc, uint64_t start_ms, uint64_t ckpt_ms,
                          uint64_t now_ms);

/*
 * For pending job job_id of tier, asking req: on sim (the cluster as the pass left it, and
 * earlier preemptions of this pass), chooses victims among cands and marks them
 * preempted_by = job_id; then gives their resources back in sim and takes the job's place
 * there, so that a later preemptor does not count on them. Returns the number of new victims
 * (> 0), 0 when the victims already being preempted for it free enough (it waits for them),
 * -EAGAIN when no choice lets it fit, -ENOMEM.
 */
int sched_preempt_choose(struct sched_cluster *sim, const struct sched_req *req, uint64_t job_id,
                         uint32_t tier, struct sched_preempt_cand *cands, size_t ncands);
/* cands cheapest first, for the pass's preemptors to share (*ret_order malloc'd, pointing
 * into cands). 0 or -ENOMEM. */
int sched_preempt_order(struct sched_preempt_cand *cands, size_t ncands,
                        struct sched_preempt_cand ***ret_order);
/*
 * sched_preempt_choose with the order sched_preempt_order made of cands, and opened (NULL:
 * none), a node bitmap the pass's preemptors share: the nodes where victims have given
 * something back in sim. The job found no room in the pass, so a one-node job can only
 * fit on those (unless lic says anywhere); it adds its victims' nodes. lic (NULL: the job
 * names no license) is its licenses, as above.
 */
int sched_preempt_choose_ordered(struct sched_cluster *sim, const struct sched_req *req,
                                 uint64_t job_id, uint32_t tier, struct sched_preempt_cand *cands,
                                 size_t ncands, struct sched_preempt_cand *const *by_cost_order,
                                 uint64_t *opened, const struct sched_preempt_lic *lic);

#endif
