/*
 * license.h: cluster-wide licenses ([[license]] in gsched.toml) as gschedd applies them:
 * a job names counts of them (sbatch -L), is refused at submit when one is not configured
 * or it asks for more than the cluster has, and starts only while its counts are free of
 * what running jobs hold and no job before it in the pass waits for them (reason
 * "Licenses", as Slurm's). Pure functions of the
 * configuration and the jobs' specs: the planning pass and `scontrol show licenses` count
 * the running jobs afresh each time.
 */
#ifndef GSCHED_SCHEDULER_LICENSE_H
#define GSCHED_SCHEDULER_LICENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/jobspec.h"

/* Counts held, one per cfg->licenses entry (cfg borrowed: it must outlive the table). */
struct sched_license_use {
    const struct gs_config *cfg;
    uint32_t *used;
    bool *claimed; /* a job earlier in the pass waits for it (sched_license_gate) */
};

/* 0 or -ENOMEM; with no license configured the table is empty and every job fits it. */
int sched_license_use_init(struct sched_license_use *u, const struct gs_config *cfg);
void sched_license_use_release(struct sched_license_use *u);
/* spec's counts held (a running job's, or one started): one no longer configured is not
 * counted, and a count past the total is cut to it. */
void sched_license_take(struct sched_license_use *u, const struct gs_jobspec *spec);
/* Whether every count spec asks for is free (one not configured never is). */
bool sched_license_free_for(const struct sched_license_use *u, const struct gs_jobspec *spec);
/*
 * The planning pass's test, job by job in plan order: whether spec's counts are free and
 * none of its licenses is claimed. When not, every license it names is claimed for the
 * rest of the pass, so the jobs behind it cannot take what it waits for: a job needing all
 * of a license is not kept waiting forever by a stream of smaller ones.
 */
bool sched_license_gate(struct sched_license_use *u, const struct gs_jobspec *spec);
/*
 * At submit: -EINVAL with why ("resources.licenses: ...", the job-file field the CLI points
 * to) when spec names a license the cluster does not have or more of one than it has;
 * else 0.
 */
int sched_license_admit(const struct gs_config *cfg, const struct gs_jobspec *spec, char *why,
                        size_t size);

#endif
