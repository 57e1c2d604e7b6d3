/*
 * step_fmt.h: what sacct and sstat print of job steps, as pure functions: Slurm's step ids
 * ("42.batch", "42.0"), -j lists naming steps ("42.0,43"), and Slurm's memory figures
 * ("50M", "1000K"), a step's state and time within its job. The step numbers are the wire's
 * (StepInfo.step, TaskRef.step): 0 the batch shell, s >= 1 srun step s - 1.
 */
#ifndef GS_SLURM_STEP_FMT_H
#define GS_SLURM_STEP_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slurm/slurm_fmt.h"

/* A -j word without a step: the job and all its steps. */
#define SLURM_STEP_ANY UINT32_MAX

/* Slurm's id of wire step step: "batch" for 0, else step - 1. Returns out. */
char *slurm_step_id(uint32_t step, char *out, size_t size);
/* "batch" -> 0, "N" -> N + 1. Returns 0 or -EINVAL. */
int slurm_step_parse(const char *text, uint32_t *ret_step);

/*
 * A comma-separated list of JOB[.STEP] ("42,42.0,123_4.batch,123_[1,3],42+1.0"): each
 * word's job into refs[*n] (as slurm_job_list_parse reads it) and its step into steps[*n]
 * (SLURM_STEP_ANY when it names none), at most max. On failure the word at fault (cut to
 * bad_size) is in bad. Returns 0, -E2BIG (refs full) or -EINVAL.
 */
int slurm_step_list_parse(const char *list, struct slurm_job_ref *refs, uint32_t *steps, size_t max,
                          size_t *n, char *bad, size_t bad_size);

/*
 * Which rows of job a -j list (refs and steps, n of them; n 0: everything) asks for:
 * slurm_step_job_selected the job's own row, slurm_step_selected step step's row. A step
 * row also needs the job to be named. part: NULL for an ordinary job, else the component of
 * the heterogeneous job whose rows these are ("42+1" and "42+1.0" name component 1's rows
 * alone, slurm_job_ref_match_part).
 */
bool slurm_step_selected(const struct slurm_job_ref *refs, const uint32_t *steps, size_t n,
                         const Gs__JobInfo *job, const struct slurm_het_part *part, uint32_t step);
bool slurm_step_job_selected(const struct slurm_job_ref *refs, const uint32_t *steps, size_t n,
                             const Gs__JobInfo *job, const struct slurm_het_part *part);

/*
 * A step's state and time as the views show them within job: a running step of a
 * suspended job is SUSPENDED, as Slurm stops a job's steps with it and sacct shows them
 * so; otherwise the step's own state's name. Its seconds run: to its end, else to now_ms,
 * less the time its job was suspended while it ran (StepInfo.suspended_ms, from gschedd
 * 1.28), and a running step of a running job no longer than the job has run
 * (slurm_job_elapsed_s), so that it stops while the job is suspended now.
 */
const char *slurm_step_state_name(const Gs__JobInfo *job, const Gs__StepInfo *st);
uint64_t slurm_step_elapsed_s(const Gs__JobInfo *job, const Gs__StepInfo *st, uint64_t now_ms);

/*
 * What the step was given, as Slurm's step TRES: "cpu=4,node=2,gres/gpu=2" (no gres/gpu
 * without GPUs), appended to out; nothing where gschedd did not say (StepInfo.cpus 0:
 * before 1.29, or a heterogeneous job's component's share). Returns gs_buf_error(out).
 */
int slurm_step_tres(struct gs_buf *out, const Gs__StepInfo *st);

/*
 * A memory figure in KiB as sacct and sstat print MaxRSS: divided by 1024 into M, G, T, P
 * while it stays above 1024 and the division is exact, with the unit's letter ("51200" ->
 * "50M", "1000" -> "1000K", "1536" -> "1536K"); "0" for 0. Returns out.
 */
char *slurm_fmt_rss(uint64_t kib, char *out, size_t size);

#endif
