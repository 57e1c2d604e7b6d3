/*
 * qos.h: QOS limits during a planning pass, pure. The running jobs are counted first, each
 * in its QOS per user and per account (GPUs and jobs); then every pending job the pass
 * would start asks whether it stays within its QOS's max_gpus_per_user, max_jobs_per_user,
 * max_gpus_per_account and max_jobs_per_account, and is counted once it starts. A job over
 * a limit waits with Slurm's reason (QOSMaxGRESPerUser, QOSMaxJobsPerUserLimit,
 * QOSMaxGRESPerAccount, QOSMaxJobsPerAccount) and holds no reservation.
 */
#ifndef SCHED_QOS_H
#define SCHED_QOS_H

#include <stdint.h>

#include "common/config.h"
#include "common/jobspec.h"

struct sched_qos_usage;

/* Empty counts for cfg's QOS; NULL when out of memory. */
struct sched_qos_usage *sched_qos_usage_new(const struct gs_config *cfg);
void sched_qos_usage_free(struct sched_qos_usage *u);
/* Counts a job of spec and user running (or starting) with gpus GPUs. 0 or -ENOMEM. */
int sched_qos_usage_add(struct sched_qos_usage *u, const struct gs_jobspec *spec, const char *user,
                        uint32_t gpus);
/* NULL when one more such job stays within its QOS's limits, else the reason it waits. */
const char *sched_qos_usage_check(const struct sched_qos_usage *u, const struct gs_jobspec *spec,
                                  const char *user, uint32_t gpus);

/* The job's QOS's preemption tier (0 for a QOS not configured). */
uint32_t sched_qos_tier(const struct gs_config *cfg, const struct gs_jobspec *spec);

#endif
