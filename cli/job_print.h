/*
 * job_print.h: jobs as the CLI shows them to people, shared by submit, queue, show, wait and
 * cancel: state names and squeue's short codes, elapsed times, node lists, the one-line
 * status and end lines, and the exit status a waiting command returns for a job. (JSON is
 * in job_json.h.) Pure functions over the wire structs (proto/gsched.proto): nothing here
 * talks to gschedd or reads the clock; "now" is passed in. Thread-safe.
 */
#ifndef GS_CLI_JOB_PRINT_H
#define GS_CLI_JOB_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/jobspec.h"
#include "proto/gsched.pb-c.h"

/* "PENDING", "RUNNING", ... as in the proto without the JOB_STATE_ prefix ("UNSPECIFIED"
 * for 0, "UNKNOWN" for a value this build does not know). */
const char *cli_job_state_name(Gs__JobState state);
/* squeue's codes: PD R CD F CA TO NF RQ; "?" for anything else. */
const char *cli_job_state_code(Gs__JobState state);
/* A state by name or code, any case ("running", "R", "pd"). Returns 0 or -EINVAL. */
int cli_job_state_parse(const char *text, Gs__JobState *ret_state);

/*
 * Suspended jobs (scontrol suspend): the wire keeps such a job RUNNING with
 * JobInfo.suspended set, and people are shown it as SUSPENDED, squeue's code "S". Whatever
 * shows a job's state shows it through these, from the whole JobInfo.
 */
/* Whether job is suspended: RUNNING with suspended set. */
bool cli_job_suspended(const Gs__JobInfo *job);
/* cli_job_state_name of its state, "SUSPENDED" for a suspended job. */
const char *cli_job_shown_name(const Gs__JobInfo *job);
/* cli_job_state_code of its state, "S" for a suspended job. */
const char *cli_job_shown_code(const Gs__JobInfo *job);
/*
 * A state as people name it: cli_job_state_parse's, or "SUSPENDED" / "S" (any case), which
 * is RUNNING on the wire: *ret_state RUNNING and *ret_suspended true. *ret_suspended is
 * false for every other state. Returns 0 or -EINVAL (nothing written).
 */
int cli_job_shown_parse(const char *text, Gs__JobState *ret_state, bool *ret_suspended);
/* True for the states a job stays in: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL,
 * OUT_OF_MEMORY. */
bool cli_job_state_final(Gs__JobState state);
/* "NONE", "CANCELLED", "LAUNCH_FAILED", ... (END_REASON_ dropped); "UNKNOWN". */
const char *cli_end_reason_name(Gs__EndReason reason);

/*
 * Seconds the job a JobStateChange (of a wait) says has run: pending 0, running now - start,
 * ended end - start, its suspensions left out as cli_job_run_s leaves them. Times are ms
 * since the epoch, 0 for unknown (which gives 0); a clock behind start gives 0.
 */
uint64_t cli_change_run_s(const Gs__JobStateChange *c, uint64_t now_ms);
/* "SUSPENDED" for a running job the change says is suspended, else its state's name. */
const char *cli_change_shown_name(const Gs__JobStateChange *c);
/*
 * Seconds job has run, the time it spent suspended left out, so that the figure stops while
 * it is suspended: (suspend_time_ms while suspended, else end_time_ms when set, else now_ms)
 * - start_time_ms - suspended_ms, as cli_change_run_s counts for a job in state as (gsched's
 * commands pass job->state; Slurm's views RUNNING for any job not pending, so that one
 * without an end time counts to now). The one place that formula lives: every elapsed
 * time, run time and time left of a JobInfo is reckoned from it.
 */
uint64_t cli_job_run_s(const Gs__JobInfo *job, Gs__JobState as, uint64_t now_ms);
/* Seconds job's attempt has spent suspended by now_ms, the stretch under way included
 * (sacct's Suspended). */
uint64_t cli_job_suspended_s(const Gs__JobInfo *job, uint64_t now_ms);
/* "HH:MM:SS", with "D-" in front from one day on ("00:00:03", "1-02:03:04"). Returns out. */
char *cli_format_elapsed(uint64_t seconds, char *out, size_t size);
/* Local time as ISO 8601 without zone, "2024-05-01T10:00:00"; 0 gives "Unknown". */
char *cli_format_time(uint64_t ms, char *out, size_t size);
/* cli_format_time with another text for 0 (Slurm's views: "N/A", "None"). Returns out. */
char *cli_format_time_or(uint64_t ms, const char *unknown, char *out, size_t size);

/* Appends indices in ranges: {0,1,2,3,6} -> "0-3,6"; none -> "". Returns 0 or -ENOMEM. */
int cli_format_indices(struct gs_buf *out, const uint32_t *v, size_t n);
/*
 * Appends ascending indices comma-joined, each run of at least min_run consecutive ones as
 * "lo-hi" (cli_format_indices: 3, so "0,1" stays; Slurm's array ranges: 2). 0/-ENOMEM.
 */
int cli_format_ranges(struct gs_buf *out, const uint32_t *v, size_t n, size_t min_run);
/*
 * Appends the allocation's node names comma-joined ("n1,n2"); with_gpus adds each node's
 * GPU indices ("n1[0-3],n2[0,2]", a node without GPUs stays bare). Returns 0 or -ENOMEM.
 */
int cli_job_nodelist(struct gs_buf *out, Gs__NodeAllocation *const *alloc, size_t n,
                     bool with_gpus);

/*
 * The exit status a command waiting for one job returns: COMPLETED 0; otherwise the job's
 * exit code when it is 1..255, 128 + the signal when it was signaled, else 1.
 */
int cli_job_exit_status(Gs__JobState state, bool signaled, int32_t exit_code, uint32_t term_signal);

/*
 * Appends the status line of a job not yet ended: "job 42 RUNNING 00:00:03 n1,n2", with
 * the nodes when nodelist is not empty, else " (reason)" when the change has one.
 * Returns 0 or -ENOMEM.
 */
int cli_job_status_line(struct gs_buf *out, const Gs__JobStateChange *c, const char *nodelist,
                        uint64_t now_ms);
/*
 * Appends the line for a job that has ended: "job 42 COMPLETED exit=0 elapsed=00:00:03",
 * "signal=9" in place of exit= when signaled, " (reason)" after a state other than
 * COMPLETED when there is a reason. Returns 0 or -ENOMEM.
 */
int cli_job_end_line(struct gs_buf *out, const Gs__JobStateChange *c, uint64_t now_ms);

/*
 * Heterogeneous jobs (JobSpec.het): component k's shape as common/jobspec.h's struct,
 * whichever side it came from. cli_job_het_shape fills *ret from a wire spec (k 0: its
 * resources and run; k >= 1: het[k - 1]), its constraint borrowed from spec; -ENOENT when
 * spec has no component k (or no resources for k 0), *ret untouched.
 */
int cli_job_het_shape(const Gs__JobSpec *spec, uint32_t k, struct gs_het_component *ret);
/* Tasks the component runs: ntasks, else nodes x tasks per node (per GPU: its GPUs). */
uint32_t cli_het_tasks(const struct gs_het_component *c);
/* CPUs it asks for, as gschedd counts a pending job's: per node, times its nodes. */
uint32_t cli_het_cpus(const struct gs_het_component *c);
/*
 * Appends "Nodes=2 GpusPerNode=4 CpusPerGpu=8 MemPerNode=8192M Tasks=8", then
 * " Constraint=X" when it has one; CpusPerTask= in place of CpusPerGpu= when the
 * component counts CPUs per task. Returns 0 or -ENOMEM.
 */
int cli_het_line(struct gs_buf *out, const struct gs_het_component *c);
/*
 * Component k's part of job's allocation, which lists the components' nodes in their
 * order (het_nodes): its first node's index in *ret_first, the count returned (cut to the
 * allocation; 0 while pending).
 */
size_t cli_job_het_alloc(const Gs__JobInfo *job, uint32_t k, size_t *ret_first);
/*
 * gsched show's lines for a heterogeneous job, one per component ("   HetComponent=1
 * Nodes=2 ... NodeList=n[2-3]"): the shape from job->spec when it is there (else nodes
 * and tasks alone, from het_nodes and het_ntasks), the nodes its part of the allocation.
 * Nothing for an ordinary job. Returns 0 or -ENOMEM.
 */
int cli_job_het_lines(struct gs_buf *out, const Gs__JobInfo *job);

/* The licenses spec holds while it runs, "matlab:2,fluent:1"; nothing when none (or NULL). */
void cli_job_licenses(struct gs_buf *out, const Gs__JobSpec *spec);

#endif
