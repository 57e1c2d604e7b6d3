/*
 * priority.h: a pending job's priority, pure. With [priority] weights configured it is
 * Slurm's multifactor priority (docs/policy.md):
 *
 *   priority = w_age * age + w_fairshare * fairshare + w_job_size * job_size
 *              + w_partition * partition + w_qos * qos - nice
 *
 * each factor from 0 to 1: age, the time since submit over max_age (1 beyond); fairshare,
 * the association's factor (fairshare.h); job_size, the share of the cluster's GPUs the
 * job asks for (its cores' share when it asks for no GPU; 1 minus it with favor_small);
 * partition, its partition's priority_job_factor over the largest one; qos, its QOS's
 * priority over the largest any QOS has. Without weights it
 * is 0 - nice, so jobs go by submit order. A priority root set in the job (spec priority
 * other than 0) replaces all of it, factors and nice alike, as `scontrol update
 * priority=` does in Slurm.
 */
#ifndef SCHED_PRIORITY_H
#define SCHED_PRIORITY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/jobspec.h"

/* What a priority is made of, each factor weighted (what sprio prints). */
struct sched_prio {
    int32_t priority;
    double age, fairshare, job_size, partition, qos;
    int32_t nice;
    bool admin_set;
};

/* The cluster's size, for the job-size factor. */
struct sched_prio_cluster {
    uint64_t gpus;
    uint64_t cores;
};

/*
 * The priority of a job with spec submitted at submit_ms, at now_ms, whose association
 * has the fair-share factor fairshare (0-1), into *ret.
 */
void sched_priority(const struct gs_config *cfg, const struct gs_jobspec *spec, uint64_t submit_ms,
                    uint64_t now_ms, double fairshare, const struct sched_prio_cluster *cluster,
                    struct sched_prio *ret);

/* Billing units per second of an allocation of gpus GPUs, cores cores and mem_mib MiB. */
double sched_billing_rate(const struct gs_config_priority *p, uint64_t gpus, uint64_t cores,
                          uint64_t mem_mib);

#endif
