/*
 * steps_internal.h: what the files of job steps (srun inside a running job) share:
 * sched_steps.c (talking to srun and to workers, launching, waiting, the sched_steps_*
 * entry points), step_records.c (the steps and per-job records in memory), step_plan.c
 * (a step's layout, what it takes of the job, its LaunchTasks) and sched_pmix.c (the fences
 * of srun --mpi=pmix steps). Not installed; included
 * only by those files. Single-threaded: gschedd's loop.
 */
#ifndef SCHED_STEPS_INTERNAL_H
#define SCHED_STEPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cpu_bind.h"
#include "common/gpu_bind.h"
#include "common/mem_bind.h"
#include "common/task_dist.h"
#include "scheduler/sched_internal.h"
#include "scheduler/step_alloc.h"

#define SCHED_STEP_NOTE_MAX 512 /* a task's --gpu-bind=verbose report, with its NUL */

/* One node of a step. */
struct step_node {
    uint32_t index;       /* in s->nodes, which is the cluster's index */
    uint32_t alloc_index; /* in the job's alloc.nodes */
    uint32_t first;       /* its tasks' ranks are st->ranks[first..first+ntasks), rising */
    uint32_t ntasks;
    uint64_t launch_request_id; /* of its LaunchTasks, which its reply echoes */
    bool reads;                 /* a task here reads srun's stdin */
    uint64_t in_acked;          /* of it, what its worker said its tasks took (StepInputAck;
                                 * UINT64_MAX: never holds srun back) */
    uint64_t out_acked;         /* of its output, what srun said it wrote (StepOutputAck) */
};

#define SCHED_STEP_KEY_MAX 64 /* StepLaunchRequest.launch_key's bytes */

struct sched_step {
    struct sched_step *next; /* in s->steps, or in its job's queue while waiting */
    uint64_t job_id;
    uint32_t step; /* TaskRef.step: Slurm's step id + 1; 0 while waiting */
    uint32_t attempt;
    struct sched_cli *cli; /* srun's connection; NULL once it went away */
    uint64_t request_id;   /* srun's StepLaunchRequest, which the reply answers */
    bool waiting;
    Gs__StepLaunchRequest *req; /* while waiting: an owned copy (free_unpacked) */
    uint32_t ntasks;
    uint32_t nexited;
    bool *exited;    /* per rank */
    uint32_t *ranks; /* per task, node after node (--distribution, step_dist.c) */
    struct step_node *nodes;
    uint32_t nnodes;
    struct sched_step_grant *grants; /* per node of the job; NULL: nothing given yet */
    bool send_failed;                /* said once in the log */
    struct sched_pmix_fence *fences; /* srun --mpi=pmix: fences under way (sched_pmix.c) */
    /* the answer of its last fence that completed (seq done_seq, owned; NULL: none yet),
     * for a part of it sent again by a worker that lost the answer with its connection */
    uint8_t *fence_done;
    size_t fence_done_len;
    uint32_t fence_done_seq;
    /* srun's stdin: to every reading task (in_all) or to rank in_rank; srun hears how far
     * it got (in_acks) whenever the least of the nodes' in_acked passes in_told */
    bool in_all;
    uint32_t in_rank;
    bool in_acks;
    uint64_t in_told;
    uint32_t out_window; /* srun's output window per node (StepOutputAck); 0: none */
    /* Kept over a gschedd restart (step_keep.c): who may reattach, each ended task's exit
     * as srun is to hear it (per rank, owned; NULL while it runs), and since when (mono ms)
     * gschedd waits for srun to reattach (0: attached). released: every task ended while
     * srun was away; what the step held is given back, the step stays for srun's sake. */
    uint32_t uid;
    Gs__TaskExit **exits;
    uint64_t detached_ms;
    bool released;
    /* srun's StepLaunchRequest.launch_key ("": none): a request sent again with it, which
     * srun does when it lost the connection before the reply, reattaches to this step */
    char launch_key[SCHED_STEP_KEY_MAX + 1];
};

/* srun's output window per node: gschedd's queue to srun divided among the step's nodes,
 * within these bounds. */
#define SCHED_STEP_OUTPUT_WINDOW_MIN (256u * 1024u)
#define SCHED_STEP_OUTPUT_WINDOW_MAX (4u * 1024u * 1024u)

/* A running job with steps: its step numbers, what they hold, and those waiting. */
struct sched_step_seq {
    struct sched_step_seq *next;
    uint64_t job_id;
    uint32_t last; /* the last step number given out */
    struct sched_step_alloc *held;
    struct sched_step *waiting; /* first come first */
    bool retrying;              /* retry_waiting() is on the stack */
    bool retry_again;           /* and a step ended meanwhile */
    bool ending;                /* the job ended: nothing starts any more */
};

/* A step's LaunchTasks, built by sched_step_msg_init() and sent once per step node: the
 * message and every array it points into (owned, sched_step_msg_release); strings and
 * env values are borrowed from the job, the request and the allocation message. */
struct sched_step_msg {
    Gs__LaunchTasks lt;
    Gs__UserIdentity user;
    Gs__TaskLimits limits;
    Gs__RunSpec run;
    Gs__NodeAllocation *nodes; /* the step's: the job's with its layout, cores and GPUs */
    Gs__NodeAllocation **node_ptrs;
    uint32_t *slices; /* every node's GPU and core lists */
    Gs__LaunchTasks__EnvEntry *env;
    Gs__LaunchTasks__EnvEntry **env_ptrs;
    Gs__TaskAssignment *tasks;
    Gs__TaskAssignment **task_ptrs;
    /* --gpu-bind (step_gpu_bind.c); NULL/0 without one */
    struct gs_gpu_bind *bind;
    const Gs__NodeTopology **topos; /* each step node's, for NUMA and sockets */
    uint32_t *bound;                /* each task's GPU list, bound_stride apart */
    size_t bound_stride;
    char *notes; /* --gpu-bind=verbose: each task's report, SCHED_STEP_NOTE_MAX apart; NULL */
    int bind_rc; /* < 0: a task's binding failed, bind_why says why */
    char bind_why[256];
    uint32_t *alloc_index; /* each step node's index in the job's allocation */
    const struct sched_step *st;
    struct gs_dist dist; /* the request's --distribution */
    Gs__Rlimit *rlimits; /* the job's sbatch --propagate limits, for the step's tasks too */
    Gs__Rlimit **rlimit_ptrs;
    /* --cpu-bind (step_cpu_bind.c); NULL/0 without one */
    struct gs_cpu_bind *cpu_bind;
    uint32_t *cpu_bound; /* each task's core list, cpu_stride apart */
    size_t cpu_stride;
    /* --mem-bind (step_mem_bind.c); NULL without one */
    struct gs_mem_bind *mem_bind;
    uint32_t *mem_bound;  /* each task's NUMA nodes, 64 apart */
    uint32_t *rank_nodes; /* srun --mpi=pmix|pmi2: each rank's step node; NULL without */
};

/* sched_pmix.c: srun --mpi=pmix and --mpi=pmi2 steps (their fences are alike). */

/* The servers req's step runs under: "pmix" (srun --mpi=pmix), "pmi2", or NULL for none;
 * without --mpi, scheduler.mpi_default's. */
const char *sched_step_mpi(const struct sched_ctx *s, const Gs__StepLaunchRequest *req);
/* The fences under way of a step that ends: gone, their workers' tasks end with it. */
void sched_step_pmix_free(struct sched_step *st);
/* A task of st ended: its fences under way can never complete, and fail on every node. */
void sched_step_pmix_task_ended(struct sched_ctx *s, struct sched_step *st);
/* sched_steps.c: ends every task of st, on each of its nodes (why in their exits' logs). */
void sched_step_end_tasks(struct sched_ctx *s, const struct sched_step *st, const char *why);

/* step_records.c: the steps in memory. */

/* The running step job_id.step (s->steps), NULL if none; waiting steps have no number. */
struct sched_step *sched_step_find(struct sched_ctx *s, uint64_t job_id, uint32_t step);
/* job_id's record (s->step_seqs), NULL if it has none. */
struct sched_step_seq *sched_step_seq_find(struct sched_ctx *s, uint64_t job_id);
/* The job's record, made (owned by s, NUMA placement from its workers) with its first step;
 * NULL when out of memory. */
struct sched_step_seq *sched_step_seq_get(struct sched_ctx *s, const struct sched_job *job);
/* Takes st out of the list at head, if it is there; frees nothing. */
void sched_step_unlink(struct sched_step **head, struct sched_step *st);
/* Unlinks and frees st, giving back what it holds and clearing its CLI's pointer to it; the
 * caller retries the job's waiting steps. */
void sched_step_free(struct sched_ctx *s, struct sched_step *st);
/* Frees st and what it owns, nothing else: it is in no list and holds nothing of its job. */
void sched_step_destroy(struct sched_step *st);
/* Frees job_id's record and its waiting steps (not its running ones). */
void sched_step_seq_forget(struct sched_ctx *s, uint64_t job_id);

/* Every task of a step whose srun is away has ended: what it held goes back to its job, and
 * the step stays (released) until srun reattaches for the exits, or gives up. */
void sched_step_release(struct sched_ctx *s, struct sched_step *st);

/* step_keep.c: running steps kept over a gschedd restart (store.h's live_steps). */

/* Stores st's record in ch (when it starts: its layout), or, with ex, that exit of its
 * task; the record is deleted, its exits with it, once every task ended. */
void sched_step_keep(struct sched_change *ch, const struct sched_step *st, const Gs__TaskExit *ex);

/* step_plan.c: over the job, the request and the allocation message (sched_alloc_msg). */

/* Lays st out: its nodes (st->nodes, owned), ranks (st->ranks, owned, by --distribution)
 * and exits (st->exited, owned) from -w, -N, -n, --ntasks-per-node and -m arbitrary's host
 * list; 0, -EINVAL with why, or -ENOMEM. */
int sched_step_plan_layout(const struct sched_job *job, const struct sched_alloc_msg *m,
                           const Gs__StepLaunchRequest *req, struct sched_step *st, char *why,
                           size_t size);
/* Gives st its cores and GPUs from q->held (st->grants, owned) unless behind an earlier
 * waiting step; 0, -EBUSY (wait), -ENOSPC with why (never in this job), -ENOMEM. */
int sched_step_take(struct sched_step_seq *q, const struct sched_job *job,
                    const struct sched_alloc_msg *m, const Gs__StepLaunchRequest *req,
                    struct sched_step *st, bool behind, char *why, size_t size);
/* Fills m (zeroed by the caller) with all of st's LaunchTasks but each node's tasks; 0,
 * -ENOMEM, or -EINVAL / -ERANGE for a --gpu-bind the step cannot follow (m->bind_why says
 * why). m is released with sched_step_msg_release() either way. */
int sched_step_msg_init(struct sched_ctx *s, const struct sched_job *job,
                        const Gs__StepLaunchRequest *req, const struct sched_step *st,
                        const struct sched_alloc_msg *alloc, struct sched_step_msg *m);
/* Sets m->lt's tasks to node na's (one node of m->nodes), replacing the previous node's. */
/* Whether a task of st on node sn reads srun's stdin (req's --input, --pty: task 0). */
bool sched_step_node_reads(const struct sched_step *st, const struct step_node *sn,
                           const Gs__StepLaunchRequest *req);
void sched_step_node_tasks(const struct sched_job *job, const Gs__StepLaunchRequest *req,
                           const Gs__NodeAllocation *na, struct sched_step_msg *m);
void sched_step_msg_release(struct sched_step_msg *m);

/* step_gpu_bind.c: --gpu-bind. prepare() reads req's (0 without one; -EINVAL with m->bind_why
 * for a bad one, -ENOMEM); bind_tasks() gives m->lt's tasks on na their GPUs, or sets
 * m->bind_rc and m->bind_why. */
int sched_step_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                            struct sched_step_msg *m);
void sched_step_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na);

/* step_cpu_bind.c: --cpu-bind, as step_gpu_bind.c's pair (before it: "closest" reads the
 * tasks' cores). */
int sched_step_cpu_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                                struct sched_step_msg *m);
void sched_step_cpu_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na);

/* step_mem_bind.c: --mem-bind, as step_cpu_bind.c's pair (after it: local reads the
 * tasks' cores). */
int sched_step_mem_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                                struct sched_step_msg *m);
void sched_step_mem_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na);

/* step_plan.c: a line of task l's --*-bind=verbose report, after the ones the node's other
 * bindings wrote (m->notes; the lines are cleared for each node). */
void sched_step_note_add(struct sched_step_msg *m, size_t l, const char *line);

/* step_dist.c: --distribution. */

/* Each core's socket and NUMA node (SCHED_MAX_CORES each; 0 where topo does not say). */
void sched_step_core_places(const Gs__NodeTopology *topo, uint32_t *socket_of, uint32_t *numa_of);

/* st->ranks (owned) for st's nodes and their counts under d; 0 or -ENOMEM. */
int sched_step_dist_ranks(struct sched_step *st, const struct gs_dist *d);
/* -m arbitrary with req->task_nodes: st's nodes (in the job's node order), counts and ranks
 * from the host list, on the job's nodes in[] (alloc indices) allows; 0, -EINVAL with why,
 * or -ENOMEM. */
int sched_step_dist_arbitrary(const struct sched_job *job, const struct sched_alloc_msg *m,
                              const Gs__StepLaunchRequest *req, const bool *in,
                              struct sched_step *st, char *why, size_t size);
/* Reorders na's cores so that sched_node_tasks() deals them to its
 * ntasks tasks over the node's sockets as m->dist says; nothing for the default, block. */
void sched_step_dist_cores(struct sched_step_msg *m, const Gs__NodeAllocation *na, uint32_t ntasks,
                           uint32_t cpus_per_task);

#endif
