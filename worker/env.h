/*
 * env.h: the environment one task starts with. The job's variables come first; gsched's
 * own then override any of the same name, because the placement defines them and an
 * unmodified torchrun/DDP script reads them:
 *
 *   GSCHED_JOB_ID GSCHED_JOB_NAME GSCHED_NODELIST GSCHED_NODE_RANK
 *   RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT
 *   CUDA_VISIBLE_DEVICES (the task's GPUs, PCI bus order) CUDA_DEVICE_ORDER=PCI_BUS_ID
 *   GSCHED_GPU_BUS_IDS (their PCI bus ids, when known) GSCHED_CPUS (the cores the scheduler
 *   gave the task, as ranges "0-3,8"; listed even when the worker does not bind them, so a
 *   placement can be checked on a fake topology; empty when it has none)
 *   GSCHED_NIC (the NIC nearest the task's GPU: its network interface, else its RDMA
 *   device; absent when unknown)
 *   USER LOGNAME HOME (the job's user, when known), PATH (a default when the job has none)
 *   GSCHED_SOCKET (the worker's CLI socket, worker/relay.h, when it has one: it replaces
 *   the scheduler's value, whose socket is on gschedd's host, not necessarily this one)
 *
 * Hints are the exception: they only fill gaps, so a job that names its own keeps it. PATH
 * is one; NCCL_SOCKET_IFNAME==<interface> and NCCL_IB_HCA==<rdma device> of the NIC nearest
 * the task's GPU are the others ('=' makes NCCL match the exact name, not every name that
 * starts with it), set (each when known) only when nccl_nic_hints says the NIC is this
 * machine's: NCCL would act on a fake topology's names and fail. A job that wants NCCL to
 * choose sets the variable itself, even to "".
 *
 * A task without GPUs gets CUDA_VISIBLE_DEVICES="" so it cannot use GPUs it was not given.
 *
 * Slurm jobs (slurm): the scheduler sends the job-level SLURM_* variables (SLURM_JOB_ID,
 * SLURM_JOB_NODELIST, ...) in job_env; this adds what only the task's node knows:
 *   SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURMD_NODENAME SLURM_CPUS_ON_NODE
 *   SLURM_GPUS_ON_NODE SLURM_JOB_GPUS GPU_DEVICE_ORDINAL (the node's GPUs) SLURM_STEP_GPUS
 *   (the task's) SLURM_TASK_PID (with task_pid_slot: room the child fills, launch.h)
 * and for an srun step (step >= 1) the step's own layout, as srun gives its tasks:
 *   SLURM_STEP_ID SLURM_STEPID (step - 1) SLURM_STEP_NUM_TASKS SLURM_STEP_NUM_NODES
 *   SLURM_STEP_NODELIST ("n[1-3]") SLURM_STEP_TASKS_PER_NODE ("2(x3),1"), and the older
 *   names srun overrides with the step's values: SLURM_NTASKS SLURM_NPROCS SLURM_NNODES
 *   SLURM_NODELIST SLURM_TASKS_PER_NODE.
 * Slurm sets none of RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR
 * and MASTER_PORT, so in a Slurm job they only fill gaps: a value the script exported, which
 * srun passes on to its steps, is kept.
 * Every task gets GSCHED_TASKS_PER_NODE, the tasks of each node of GSCHED_NODELIST in
 * SLURM_TASKS_PER_NODE's form ("2(x3),1"), from which gsched mpirun builds mpirun's hosts.
 * The batch shell (batch) is one process for the whole node, not a rank: it gets no RANK,
 * LOCAL_RANK, WORLD_SIZE or LOCAL_WORLD_SIZE (a torchrun it starts works them out itself),
 * and CUDA_VISIBLE_DEVICES lists all of the node's GPUs.
 * A task of an srun --mpi=pmix step also gets its PMIx server's PMIX_* variables (task_env).
 * The result is a NULL-terminated malloc'd array of malloc'd "KEY=VALUE" strings, freed
 * with wrk_env_free(). No global state; any thread.
 */
#ifndef WRK_ENV_H
#define WRK_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WRK_ENV_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct wrk_task_env {
    uint64_t job_id;
    const char *job_name;
    const char *nodelist; /* node names of the job, in node-rank order, comma-separated */
    uint32_t rank;
    uint32_t local_rank;
    uint32_t world_size;
    uint32_t local_world_size;
    uint32_t node_rank;
    const char *master_addr;
    uint32_t master_port;
    const uint32_t *gpus; /* node GPU indices given to this task */
    size_t ngpus;
    const char *user; /* NULL: not set */
    const char *home;
    char *const *job_env;           /* "KEY=VALUE", NULL-terminated; may be NULL */
    const char *const *gpu_bus_ids; /* ngpus entries, or NULL when unknown */
    const uint32_t *cores;          /* the task's logical cores, ascending */
    size_t ncores;
    const char *nic_name;      /* interface of the NIC nearest the task's GPU; NULL/"": none */
    const char *nic_ib_device; /* its RDMA device ("mlx5_0"); NULL/"": none */
    bool nccl_nic_hints;       /* also hint NCCL at that NIC (it is this machine's) */
    /* Slurm semantics (RunSpec.slurm) */
    bool slurm;
    bool batch;                /* the batch shell (RunSpec.batch, step 0) */
    uint32_t step;             /* TaskRef.step: >= 1 is srun step step - 1 */
    const char *node_name;     /* this node: SLURMD_NODENAME */
    const uint32_t *node_gpus; /* every GPU the job (or step) has on this node */
    size_t n_node_gpus;
    uint32_t node_cpus;              /* cores it has on this node */
    const char *const *step_nodes;   /* the step's nodes, in node-rank order (the allocation) */
    const uint32_t *step_node_tasks; /* tasks on each of them */
    size_t n_step_nodes;
    bool task_pid_slot;     /* SLURM_TASK_PID=<room for the pid>, for wrk_launch_spec.pid_var */
    const char *cli_socket; /* GSCHED_SOCKET; NULL: the job's own value stands */
    /* A directory of links to gsched by Slurm's names (srun, scontrol, ...), put at the end
     * of a Slurm job's PATH: its scripts find them there unless a real Slurm's come first.
     * NULL: none. */
    const char *slurm_bin;
    /* This task's own "KEY=VALUE" (NULL-terminated; NULL none), over everything else: a
     * PMIx step's PMIX_* variables (worker/pmix.h). */
    char *const *task_env;
};

/* Length of the room after "SLURM_TASK_PID=" that task_pid_slot leaves for the pid. */
#define WRK_ENV_PID_ROOM 15

/* Returns 0 with *ret_envp, or -ENOMEM / -EINVAL (a job variable without '='). */
int wrk_env_build(const struct wrk_task_env *in, char ***ret_envp);
void wrk_env_free(char **envp);

#endif
