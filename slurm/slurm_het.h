/*
 * slurm_het.h: heterogeneous jobs (sbatch's "#SBATCH hetjob") as the Slurm views show
 * them: one row or record per component, its id "42+1", with that component's nodes,
 * tasks, CPUs and shape. Slurm gives each component a job id of its own and the first one's
 * as HetJobId; gsched gives the whole job one id, so "42+K" names component K everywhere
 * and JobId= / JobIDRaw stay that one id.
 *
 * The wire has each component's node count and tasks (JobInfo.het_nodes, het_ntasks) and
 * an allocation listing the components' nodes in their order; the shapes only in the
 * spec, which ShowReply alone carries. A component's CPUs are its cores when the
 * allocation lists them, else what its shape asks for, else (a queue listing of a job not
 * running) the job's CPUs shared out by tasks. Pure; any thread.
 */
#ifndef GS_SLURM_SLURM_HET_H
#define GS_SLURM_SLURM_HET_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "proto/frame.h"

/*
 * Component offset of whole seen as a job of its own: job is a shallow copy of whole's
 * with the component's allocation, nodes, tasks, CPUs and resources (res); no steps, no
 * het_nodes, and the job's usage on component 0 alone (it is the whole job's). Borrows
 * whole's strings and arrays; job points into the struct itself, so never copy it.
 */
struct slurm_het_part {
    Gs__JobInfo job;
    Gs__Resources res;
    const Gs__JobInfo *whole;
    uint32_t offset;
};

/* How many components job has: 0 for an ordinary job. */
uint32_t slurm_het_count(const Gs__JobInfo *job);
/* Fills *p with component k of whole (k < slurm_het_count(whole)). */
void slurm_het_part_init(struct slurm_het_part *p, const Gs__JobInfo *whole, uint32_t k);
/* What a view does with a job (part NULL) or with one component (job is &part->job). */
typedef int (*slurm_het_fn)(const Gs__JobInfo *job, const struct slurm_het_part *part, void *ctx);
/*
 * Calls fn(job, NULL, ctx) for an ordinary job; for a heterogeneous one, fn on each
 * component's view in order, stopping at the first that fails. Returns fn's last result.
 */
int slurm_het_each(const Gs__JobInfo *job, slurm_het_fn fn, void *ctx);
/* "42+1" for a part, else slurm_job_id(job) ("42", "123_4"). Returns out. */
char *slurm_het_job_id(const Gs__JobInfo *job, const struct slurm_het_part *part, char *out,
                       size_t size);
/*
 * Step st of the heterogeneous job whole as component k ran it, for sacct's "42+K.0" rows:
 * a step on several components is listed under each, NodeList and NNodes its nodes there
 * (the other figures the whole step's, which StepInfo does not split, but cpus and gpus: 0,
 * unknown, where the step ran on other components' nodes too). Returns 1 with
 * *ret_view a copy of *st (its nodelist in the caller's buf), 0 when st did not run on k's
 * nodes, or -ENOMEM. A step whose nodes match no component (an unknown or empty nodelist,
 * no allocation recorded) is component 0's, whole.
 */
int slurm_het_step_view(const Gs__JobInfo *whole, uint32_t k, const Gs__StepInfo *st,
                        Gs__StepInfo *ret_view, struct gs_buf *buf);

#endif
