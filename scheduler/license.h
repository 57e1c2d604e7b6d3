/*
 * license.h: cluster-wide licenses ([[license]] in gsched.toml) as gschedd applies them:
 * a job names counts of them (sbatch -L), is refused at submit when one is not configured
 * or it asks for more than the cluster has, and is planned with them by plan.c (reason
 * "Licenses", as Slurm's; license_plan.h), which gets them here as indices into the
 * configured ones. Pure functions of the configuration and the jobs' specs: the planning
 * pass and `scontrol show licenses` count the running jobs afresh each time.
 */
#ifndef GSCHED_SCHEDULER_LICENSE_H
#define GSCHED_SCHEDULER_LICENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/jobspec.h"
#include "scheduler/license_plan.h"

/* Counts held, one per cfg->licenses entry (cfg borrowed: it must outlive the table). */
struct sched_license_use {
    const struct gs_config *cfg;
    uint32_t *used;
};

/* 0 or -ENOMEM; with no license configured the table is empty and every job fits it. */
int sched_license_use_init(struct sched_license_use *u, const struct gs_config *cfg);
void sched_license_use_release(struct sched_license_use *u);
/* spec's counts held (a running job's, or one started): one no longer configured is not
 * counted, and a count past the total is cut to it. */
void sched_license_take(struct sched_license_use *u, const struct gs_jobspec *spec);
/* cfg's counts, one per license in its order (malloc'd; NULL without licenses or memory). */
uint32_t *sched_license_totals(const struct gs_config *cfg);
/* The index of license name among cfg's, or -1 when it is not configured. */
long sched_license_index(const struct gs_config *cfg, const char *name);
/*
 * spec's licenses as plan.c's needs, into need (room for spec->nlicenses): indices into
 * cfg's licenses, one not configured given index cfg->nlicenses (never had).
 */
void sched_license_needs(const struct gs_config *cfg, const struct gs_jobspec *spec,
                         struct sched_license_need *need);
/*
 * At submit: -EINVAL with why ("resources.licenses: ...", the job-file field the CLI points
 * to) when spec names a license the cluster does not have or more of one than it has;
 * else 0.
 */
int sched_license_admit(const struct gs_config *cfg, const struct gs_jobspec *spec, char *why,
                        size_t size);

#endif
