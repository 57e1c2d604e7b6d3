/*
 * cgroup.h: one control group per job on this node, so the kernel holds a job to what it
 * was given and nothing of it outlives it: its memory (mem_per_node), the CPUs it is bound
 * to, a pids limit, and every process it started, whatever session or parent it has now.
 *
 * Layout: ROOT/PARENT/NODE/job_ID/step_S (PARENT: worker.cgroup_parent, "gsched"; NODE: the
 * worker's name, so several workers of one machine do not meet; S: the step, 0 for the job's
 * own tasks), once in the v2 tree, or in v1 job_ID in each hierarchy used (memory, pids,
 * cpuset, freezer, devices) and step_S only in the freezer's (without a freezer: the first
 * one's). The job's group holds the limits; its steps' groups, which hold the processes, are
 * what a step's end kills. A task joins its step's group in the child, between fork and exec,
 * by writing to descriptors the worker opened for it (wrk_cg_job_enter). When a step's last
 * task here has ended, wrk_cg_step_end kills what the step left (a `setsid sleep &`, a double
 * fork) and removes its group; when the job's last task here has ended (done, cancelled,
 * timed out), wrk_cg_job_end does so for the whole job.
 *
 * Which version is used is decided at start (worker.cgroups: "auto", "v1", "v2", "off"):
 * v2 where /sys/fs/cgroup is the unified tree with the memory and pids controllers ("v2"
 * asked for: any v2 tree, with the controllers it has, the missing ones said in why), v1
 * where those controllers are mounted as hierarchies (a hybrid system's unified tree
 * without controllers is not used), else none: jobs then run without kernel limits, and
 * the worker says so once.
 *
 * Loop thread only (plain file writes, each short).
 */
#ifndef WRK_CGROUP_H
#define WRK_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

enum wrk_cg_mode { WRK_CG_NONE = 0, WRK_CG_V1 = 1, WRK_CG_V2 = 2 };

#define WRK_CG_MAX_FDS 5        /* cgroup.procs files a task writes itself into (v1 hierarchies) */
#define WRK_CG_NVIDIA_MAJOR 195 /* /dev/nvidiaN's character device major */

struct wrk_cg_limits {
    uint64_t mem_bytes; /* memory.limit_in_bytes / memory.max; 0: none */
    uint64_t pids_max;  /* pids.max; 0: none */
    const int *cpus;    /* cpuset.cpus: OS indices of the job's PUs; ncpus 0: the parent's */
    int ncpus;
    /* /dev/nvidiaN minors of this node's GPUs the job was not given: denied to it (v1
     * devices controller; v2 a device program, devbpf.h, where the worker can load one) */
    const unsigned *deny_gpus;
    int ndeny_gpus;
};

struct wrk_cg;

/*
 * Opens (creating) ROOT/REL for want ("auto", "v1", "v2" or "off"; root NULL:
 * /sys/fs/cgroup; REL a relative path of plain names, such as "gsched/node7"). Returns 0 with *ret
 * (a WRK_CG_NONE one for "off", or for "auto" where no usable cgroups are found, with the reason in
 * why), or a negative errno with the reason in why when "v1" or "v2" was asked for and cannot be
 * had, or a group cannot be created.
 */
int wrk_cg_open(const char *want, const char *root, const char *rel, struct wrk_cg **ret,
                struct gs_buf *why);
/* Removes the node's group (and the empty levels above it) where it is empty, and frees. */
void wrk_cg_free(struct wrk_cg *cg);

enum wrk_cg_mode wrk_cg_mode(const struct wrk_cg *cg);
/* "v1 (memory,pids,cpuset,freezer)", "v2 (memory,pids,cpuset)" or "none": for logs. */
const char *wrk_cg_describe(const struct wrk_cg *cg);

/*
 * Creates the job's group if it is not there yet, with lim (limits apply to the whole job
 * on this node, so only its first launch here sets them), and in it the step's group
 * (job_ID/step_STEP: step 0 is the job's own tasks, s >= 1 its srun steps), and opens for
 * writing into fds the cgroup.procs file of the step's group in each hierarchy, or of the
 * job's where a v1 hierarchy has no step groups (close-on-exec; the caller closes them). Returns
 * how many (0 with no cgroups), or a negative errno with the reason in why.
 */
int wrk_cg_job_enter(struct wrk_cg *cg, uint64_t job_id, uint32_t step,
                     const struct wrk_cg_limits *lim, int fds[WRK_CG_MAX_FDS], struct gs_buf *why);

/* SIGKILLs every process in the job's group and its steps' (frozen first where the freezer
 * is there, so nothing forks meanwhile) until it is empty, then removes them. Returns the
 * number of processes killed (each counted once; at most 256 are told apart), or a negative
 * errno when the group would not empty or go. */
int wrk_cg_job_end(struct wrk_cg *cg, uint64_t job_id);

/* The same for one step's group, when the step's last task on this node has ended and the
 * job goes on (what the step left running is the step's, as Slurm ends a step). */
int wrk_cg_step_end(struct wrk_cg *cg, uint64_t job_id, uint32_t step);

/* The processes in the job's group and its steps' now (pids into out, at most max); -errno. */
int wrk_cg_job_pids(const struct wrk_cg *cg, uint64_t job_id, int *out, int max);

/* How many processes of the job the kernel's OOM killer ended (memory.oom_control or
 * memory.events "oom_kill"); 0 without a memory controller or an older kernel. */
uint64_t wrk_cg_job_oom_kills(const struct wrk_cg *cg, uint64_t job_id);

#endif
