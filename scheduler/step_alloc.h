/*
 * step_alloc.h: which of a running job's cores and GPUs its srun steps hold, and what a new
 * step takes from the rest, as Slurm (>= 21.08) shares a job's allocation between steps.
 * Pure accounting over the job's per-node bitmaps (struct sched_node_alloc): no loop, no
 * messages, no clock, so that tests/scheduler/test_step_alloc.c drives it directly;
 * sched_steps.c keeps one per running job that has steps and decides when to retry.
 *
 * Rules: a step takes, on each of its nodes, the GPUs it asks for (the lowest free indices,
 * on one NUMA node when the topology says where they sit and one has enough) or, asking for
 * none, every GPU the job has there; and ntasks x cpus_per_task cores with exact_cores
 * (-c, --exact, --exclusive; near its GPUs first), else every core the job has there.
 * An --overlap step takes nothing and sees everything. A step that cannot have all of it on
 * every node now takes nothing (-EBUSY); one that could not even in an idle job is -ENOSPC.
 *
 * Single-threaded (gschedd's loop). The object owns its memory; grants are caller storage.
 */
#ifndef SCHED_STEP_ALLOC_H
#define SCHED_STEP_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/cluster.h"

#define SCHED_STEP_CORE_WORDS (SCHED_MAX_CORES / 64)

/* What a step asks of one of the job's nodes. */
struct sched_step_ask {
    uint32_t ntasks;        /* the step's tasks there; 0: the step does not use the node */
    uint32_t cpus_per_task; /* 0 counts as 1 */
    bool exact_cores;       /* only ntasks x cpus_per_task cores, else all the job's there */
    bool all_gpus;          /* no GPU option: every GPU the job has there */
    uint32_t gpus;          /* without all_gpus: how many GPUs */
};

/* What a step got on one node: what it may use, and whether that is held (not --overlap). */
struct sched_step_grant {
    uint64_t gpus;
    uint64_t cores[SCHED_STEP_CORE_WORDS];
    bool held;
};

struct sched_step_alloc;

/* The job's nodes (copied), nothing held. NULL when out of memory. */
struct sched_step_alloc *sched_step_alloc_new(const struct sched_node_alloc *nodes,
                                              uint32_t nnodes);
void sched_step_alloc_free(struct sched_step_alloc *a);

/*
 * Where node's GPUs and cores sit (NUMA node per GPU index and per core index, -1 unknown;
 * either may be NULL), for the preference above. Without it GPUs go by lowest index.
 */
void sched_step_alloc_set_numa(struct sched_step_alloc *a, uint32_t node, const int16_t *gpu_numa,
                               size_t ngpus, const int16_t *core_numa, size_t ncores);

/*
 * A step's resources: ask and ret have one entry per job node (in the job's order). 0 with
 * ret filled and held (overlap: filled with all the job's, nothing held); -EBUSY: not now,
 * nothing changed; -ENOSPC: never in this job (*ret_node: the first node short, may be
 * NULL). ret is written only on success.
 */
int sched_step_alloc_take(struct sched_step_alloc *a, const struct sched_step_ask *ask,
                          bool overlap, struct sched_step_grant *ret, uint32_t *ret_node);

/* Gives back what take() held in grants (one per job node); a grant not held is ignored. */
void sched_step_alloc_give_back(struct sched_step_alloc *a, const struct sched_step_grant *grants);

/* Holds exactly grants (one per job node; those not held are ignored), as a step kept over a
 * gschedd restart held them: 0, or -EBUSY (nothing changed) when another step holds some. */
int sched_step_alloc_hold(struct sched_step_alloc *a, const struct sched_step_grant *grants);

/* Whether any step holds anything (for tests and logs). */
bool sched_step_alloc_idle(const struct sched_step_alloc *a);

#endif
