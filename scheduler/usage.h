/*
 * usage.h: what a job did with what it was allocated, accumulated from telemetry while it
 * runs (GPU time, time under the idle threshold, mean and peak utilisation, memory peak,
 * which GPUs ever worked, CPU time and resident memory of its tasks), and kept with the
 * job's row when it ends (gs.JobUsage, packed). Across a requeue it goes on accumulating:
 * it is what the job consumed, attempts together.
 *
 * CPU time: each heartbeat says how much CPU a task's session has used so far; the job's
 * is the sum of the latest per (step, rank), and a figure smaller than the one kept means
 * a new process under that name (a requeued attempt), whose time adds to the old.
 *
 * Pure bookkeeping owned by its job (jobs.h). Loop thread only.
 */
#ifndef SCHED_USAGE_H
#define SCHED_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gsched.pb-c.h"

struct sched_usage_task {
    uint32_t step;
    uint32_t rank;
    uint64_t cpu_ms; /* latest figure of the current process */
};

struct sched_job_usage {
    bool telemetry;        /* something was recorded */
    uint64_t gpu_alloc_ms; /* GPU x ms covered by summaries */
    uint64_t gpu_idle_ms;
    double util_pct_ms; /* sum of mean utilisation x ms */
    uint32_t util_max_pct;
    uint64_t mem_peak_mib;
    uint64_t rss_peak_mib;
    uint32_t idle_flags;
    uint64_t cpu_done_ms;      /* of processes replaced since (requeues) */
    uint32_t gpus_used_stored; /* from the store, for an ended job */
    /* Bit g of used[i]: GPU g of allocation node i went over the threshold; nused words. */
    uint64_t *used;
    uint32_t nused;
    struct sched_usage_task *tasks;
    size_t ntasks, cap;
    /* Its dataset (JobDataReports, sched_data.c): bytes its nodes' ranks read that were
     * cached, fetched from a peer, copied from the source; the longest staging wait. */
    bool data;
    uint64_t data_bytes_local, data_bytes_peer, data_bytes_source, data_stage_ms;
};

/* Frees what u owns and zeroes it. */
void sched_usage_release(struct sched_job_usage *u);

/*
 * One summary of GPU gpu on the job's allocation node alloc_node (of nalloc), covering
 * dt_ms: mean and max utilisation, the highest memory use, and whether it counts as idle
 * (under the threshold). Returns 0 or -ENOMEM (the GPU-used bit is then lost, not the time).
 */
int sched_usage_gpu(struct sched_job_usage *u, uint32_t alloc_node, uint32_t nalloc, uint32_t gpu,
                    uint32_t util_pct, uint32_t util_max_pct, uint64_t mem_mib, uint64_t dt_ms,
                    bool idle);
/* Most (step, rank) pairs a job's CPU time is kept for (a job of that many srun steps, or a
 * worker naming ranks that do not exist): the next ones' CPU time is not counted. */
#define SCHED_USAGE_MAX_TASKS 65536

/* A task's CPU time and resident memory so far (see above). Returns 0, -ENOMEM, or -E2BIG
 * for a new pair past SCHED_USAGE_MAX_TASKS (its memory peak still counts). */
int sched_usage_task(struct sched_job_usage *u, uint32_t step, uint32_t rank, uint64_t cpu_ms,
                     uint64_t rss_mib);

uint64_t sched_usage_cpu_ms(const struct sched_job_usage *u);
uint32_t sched_usage_gpus_used(const struct sched_job_usage *u);
double sched_usage_util_mean(const struct sched_job_usage *u);

/*
 * m (initialised by the caller) gets u's figures; gpus_alloc, cpus_alloc, wall_ms and
 * idle_gpus are the caller's to fill.
 */
void sched_usage_to_msg(const struct sched_job_usage *u, Gs__JobUsage *m);
/*
 * u (empty) takes the figures of a stored gs.JobUsage. Returns 0, or -EINVAL when the bytes
 * are not one.
 */
int sched_usage_from_packed(struct sched_job_usage *u, const void *data, size_t len);
/* Packs u for the store: *ret (free() it), or NULL when nothing was recorded. 0 or -ENOMEM. */
int sched_usage_pack(const struct sched_job_usage *u, void **ret, size_t *ret_len);

#endif
