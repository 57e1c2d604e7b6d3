/*
 * test_env.c: a task's environment carries what torchrun/DDP scripts read, overriding the
 * job's variables of the same name but keeping the rest in order; NCCL's NIC hints only
 * fill gaps the job left, and only for a NIC of this machine. Slurm jobs get the per-task
 * SLURM_* variables: the batch shell as one process for its node (no RANK & co, all of the
 * node's GPUs), srun step tasks with the step's layout.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "worker/env.h"

static const char *get(char **envp, const char *key)
{
    size_t n = strlen(key);

    for (size_t i = 0; envp[i] != NULL; i++) {
        if (strncmp(envp[i], key, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    }
    return NULL;
}

Test(env, task_gets_ranks_master_and_its_gpus)
{
    uint32_t gpus[] = {2, 3};
    char *job_env[] = {"NCCL_DEBUG=WARN", "RANK=99", "PATH=/opt/bin", NULL};
    struct wrk_task_env in = {.job_id = 42,
                              .job_name = "gpt",
                              .nodelist = "node1,node2",
                              .rank = 5,
                              .local_rank = 1,
                              .world_size = 8,
                              .local_world_size = 4,
                              .node_rank = 1,
                              .master_addr = "10.0.0.1",
                              .master_port = 29500,
                              .gpus = gpus,
                              .ngpus = 2,
                              .user = "ada",
                              .home = "/home/ada",
                              .job_env = job_env};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(envp[0], "NCCL_DEBUG=WARN", "the job's order is kept");
    cr_assert_str_eq(get(envp, "RANK"), "5", "gsched's RANK overrides the job's");
    cr_assert_str_eq(get(envp, "PATH"), "/opt/bin");
    cr_assert_str_eq(get(envp, "LOCAL_RANK"), "1");
    cr_assert_str_eq(get(envp, "WORLD_SIZE"), "8");
    cr_assert_str_eq(get(envp, "LOCAL_WORLD_SIZE"), "4");
    cr_assert_str_eq(get(envp, "NODE_RANK"), "1");
    cr_assert_str_eq(get(envp, "MASTER_ADDR"), "10.0.0.1");
    cr_assert_str_eq(get(envp, "MASTER_PORT"), "29500");
    cr_assert_str_eq(get(envp, "CUDA_VISIBLE_DEVICES"), "2,3");
    cr_assert_str_eq(get(envp, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    cr_assert_str_eq(get(envp, "GSCHED_JOB_ID"), "42");
    cr_assert_str_eq(get(envp, "GSCHED_NODELIST"), "node1,node2");
    cr_assert_str_eq(get(envp, "USER"), "ada");
    cr_assert_str_eq(get(envp, "HOME"), "/home/ada");
    wrk_env_free(envp);
}

Test(env, cpu_task_sees_no_gpus_and_gets_a_path)
{
    struct wrk_task_env in = {
        .job_id = 1, .job_name = "cpu", .nodelist = "n1", .master_addr = "n1"};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "CUDA_VISIBLE_DEVICES"), "");
    cr_assert_str_eq(get(envp, "PATH"), WRK_ENV_DEFAULT_PATH);
    cr_assert_null(get(envp, "USER"));
    wrk_env_free(envp);
}

Test(env, rejects_job_variables_without_a_value)
{
    char *job_env[] = {"NOEQUALS", NULL};
    struct wrk_task_env in = {.job_env = job_env};
    char **envp = (char **)0x1;

    cr_assert_eq(wrk_env_build(&in, &envp), -EINVAL);
    cr_assert_eq(envp, (char **)0x1);
}

Test(env, bus_ids_and_cores_are_listed)
{
    uint32_t gpus[] = {0, 1}, cores[] = {0, 1, 2, 3, 8, 10, 11};
    const char *ids[] = {"0000:17:00.0", "0000:3d:00.0"};
    struct wrk_task_env in = {
        .gpus = gpus, .ngpus = 2, .gpu_bus_ids = ids, .cores = cores, .ncores = 7};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "GSCHED_GPU_BUS_IDS"), "0000:17:00.0,0000:3d:00.0");
    cr_assert_str_eq(get(envp, "GSCHED_CPUS"), "0-3,8,10-11", "runs folded as taskset does");
    wrk_env_free(envp);
    in.ncores = 0;
    in.gpu_bus_ids = NULL;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "GSCHED_CPUS"), "");
    cr_assert_null(get(envp, "GSCHED_GPU_BUS_IDS"));
    wrk_env_free(envp);
}

Test(env, nic_nearest_the_gpu_is_hinted_to_nccl)
{
    uint32_t gpus[] = {3};
    struct wrk_task_env in = {.gpus = gpus,
                              .ngpus = 1,
                              .nic_name = "ibp27s0",
                              .nic_ib_device = "mlx5_3",
                              .nccl_nic_hints = true};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "NCCL_SOCKET_IFNAME"), "=ibp27s0", "exactly it, not a prefix");
    cr_assert_str_eq(get(envp, "NCCL_IB_HCA"), "=mlx5_3", "not mlx5_30 too");
    cr_assert_str_eq(get(envp, "GSCHED_NIC"), "ibp27s0", "the interface names it first");
    wrk_env_free(envp);
}

Test(env, nccl_hints_never_override_the_jobs_own)
{
    char *job_env[] = {"NCCL_IB_HCA=mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME=", "GSCHED_NIC=x", NULL};
    struct wrk_task_env in = {.job_env = job_env,
                              .nic_name = "ens1f0",
                              .nic_ib_device = "mlx5_3",
                              .nccl_nic_hints = true};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "NCCL_IB_HCA"), "mlx5_0,mlx5_1");
    cr_assert_str_eq(get(envp, "NCCL_SOCKET_IFNAME"), "", "an empty value is the job's too");
    cr_assert_str_eq(envp[0], "NCCL_IB_HCA=mlx5_0,mlx5_1", "kept in place");
    cr_assert_str_eq(get(envp, "GSCHED_NIC"), "ens1f0", "gsched's own name is gsched's");
    wrk_env_free(envp);
}

Test(env, only_known_nic_names_are_set)
{
    struct wrk_task_env in = {.nic_name = "", .nic_ib_device = "mlx5_2", .nccl_nic_hints = true};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_null(get(envp, "NCCL_SOCKET_IFNAME"), "no interface, no hint");
    cr_assert_str_eq(get(envp, "NCCL_IB_HCA"), "=mlx5_2");
    cr_assert_str_eq(get(envp, "GSCHED_NIC"), "mlx5_2", "the rdma device when no interface");
    wrk_env_free(envp);
    in.nic_ib_device = NULL;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_null(get(envp, "NCCL_IB_HCA"));
    cr_assert_null(get(envp, "GSCHED_NIC"));
    wrk_env_free(envp);
}

Test(env, a_fake_topologys_nic_is_shown_but_not_hinted)
{
    struct wrk_task_env in = {.nic_name = "ens1f0", .nic_ib_device = "mlx5_0"};
    char **envp = NULL;

    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "GSCHED_NIC"), "ens1f0");
    cr_assert_null(get(envp, "NCCL_SOCKET_IFNAME"), "NCCL would look for it here and fail");
    cr_assert_null(get(envp, "NCCL_IB_HCA"));
    wrk_env_free(envp);
}

/* A job on n[1-3] and gpu7 with 8 GPUs on this node (n2), 2 of them this task's. */
static uint32_t node_gpus[] = {0, 1, 2, 3, 4, 5, 6, 7}, task_gpus[] = {2, 3};
static const char *step_nodes[] = {"n1", "n2", "n3", "gpu7"};
static uint32_t step_tasks[] = {2, 2, 2, 1};

static struct wrk_task_env slurm_task(void)
{
    static char *job_env[] = {"SLURM_JOB_ID=42", "SLURM_NTASKS=16", "SLURM_NODELIST=n[1-9]",
                              "SLURM_JOB_NODELIST=n[1-3],gpu7", NULL};

    return (struct wrk_task_env){.job_id = 42,
                                 .job_name = "train",
                                 .nodelist = "n1,n2,n3,gpu7",
                                 .rank = 3,
                                 .local_rank = 1,
                                 .world_size = 7,
                                 .local_world_size = 2,
                                 .node_rank = 1,
                                 .master_addr = "10.0.0.1",
                                 .master_port = 29500,
                                 .gpus = task_gpus,
                                 .ngpus = 2,
                                 .job_env = job_env,
                                 .slurm = true,
                                 .node_name = "n2",
                                 .node_gpus = node_gpus,
                                 .n_node_gpus = 8,
                                 .node_cpus = 32,
                                 .step_nodes = step_nodes,
                                 .step_node_tasks = step_tasks,
                                 .n_step_nodes = 4};
}

Test(env, slurm_step_task_gets_its_place_and_the_steps_layout)
{
    struct wrk_task_env in = slurm_task();
    char **envp = NULL;

    static char *srun_env[] = {"SLURM_JOB_ID=42", "SLURM_JOB_NODELIST=n[1-3],gpu7",
                               "SLURM_JOB_GPUS=0,1,2,3,4,5,6,7,8,9", NULL};

    in.step = 3; /* the job's third srun: Slurm step 2 */
    in.task_pid_slot = true;
    in.job_env = srun_env; /* the batch shell's, through srun */
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "SLURM_PROCID"), "3");
    cr_assert_str_eq(get(envp, "SLURM_LOCALID"), "1");
    cr_assert_str_eq(get(envp, "SLURM_NODEID"), "1");
    cr_assert_str_eq(get(envp, "SLURMD_NODENAME"), "n2");
    cr_assert_str_eq(get(envp, "SLURM_CPUS_ON_NODE"), "32");
    cr_assert_str_eq(get(envp, "SLURM_GPUS_ON_NODE"), "8");
    cr_assert_str_eq(get(envp, "SLURM_JOB_GPUS"), "0,1,2,3,4,5,6,7,8,9",
                     "the job's GPUs, not the step's share");
    cr_assert_str_eq(get(envp, "GPU_DEVICE_ORDINAL"), "0,1,2,3,4,5,6,7");
    cr_assert_str_eq(get(envp, "SLURM_STEP_GPUS"), "2,3");
    cr_assert_str_eq(get(envp, "CUDA_VISIBLE_DEVICES"), "2,3", "a step task sees its own GPUs");
    cr_assert_str_eq(get(envp, "SLURM_STEP_ID"), "2");
    cr_assert_str_eq(get(envp, "SLURM_STEPID"), "2");
    cr_assert_str_eq(get(envp, "SLURM_STEP_NUM_TASKS"), "7");
    cr_assert_str_eq(get(envp, "SLURM_STEP_NUM_NODES"), "4");
    cr_assert_str_eq(get(envp, "SLURM_STEP_NODELIST"), "n[1-3],gpu7");
    cr_assert_str_eq(get(envp, "SLURM_STEP_TASKS_PER_NODE"), "2(x3),1");
    cr_assert_str_eq(get(envp, "SLURM_NTASKS"), "7", "srun gives its tasks the step's count");
    cr_assert_str_eq(get(envp, "SLURM_NPROCS"), "7");
    cr_assert_str_eq(get(envp, "SLURM_NNODES"), "4");
    cr_assert_str_eq(get(envp, "SLURM_NODELIST"), "n[1-3],gpu7");
    cr_assert_str_eq(get(envp, "SLURM_TASKS_PER_NODE"), "2(x3),1");
    cr_assert_str_eq(get(envp, "SLURM_JOB_NODELIST"), "n[1-3],gpu7", "the job's is kept");
    cr_assert_str_eq(get(envp, "SLURM_JOB_ID"), "42");
    cr_assert_eq(strlen(get(envp, "SLURM_TASK_PID")), WRK_ENV_PID_ROOM, "room for the pid");
    cr_assert_str_eq(get(envp, "RANK"), "3", "torchrun-style variables stay for step tasks");
    cr_assert_str_eq(get(envp, "LOCAL_RANK"), "1");
    cr_assert_str_eq(get(envp, "WORLD_SIZE"), "7");
    cr_assert_str_eq(get(envp, "MASTER_ADDR"), "10.0.0.1");
    cr_assert_str_eq(get(envp, "MASTER_PORT"), "29500");
    wrk_env_free(envp);
}

Test(env, slurm_scripts_own_master_addr_and_port_are_kept)
{
    char *job_env[] = {"MASTER_ADDR=n1", "MASTER_PORT=29501", "SLURM_JOB_ID=42", NULL};
    struct wrk_task_env in = slurm_task();
    char **envp = NULL;

    in.step = 1;
    in.job_env = job_env;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "MASTER_ADDR"), "n1", "srun passed on what the script exported");
    cr_assert_str_eq(get(envp, "MASTER_PORT"), "29501");
    cr_assert_str_eq(get(envp, "RANK"), "3", "a gap is still filled");
    wrk_env_free(envp);
    in.slurm = false;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "MASTER_ADDR"), "10.0.0.1", "gsched's own jobs: the placement's");
    wrk_env_free(envp);
}

Test(env, slurm_batch_shell_is_one_process_for_its_node)
{
    struct wrk_task_env in = slurm_task();
    char **envp = NULL;

    in.batch = true;
    in.rank = 0;
    in.local_rank = 0;
    in.node_rank = 0;
    in.gpus = node_gpus;
    in.ngpus = 8;
    in.node_gpus = task_gpus; /* CUDA_VISIBLE_DEVICES comes from the node's list */
    in.n_node_gpus = 2;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_null(get(envp, "RANK"), "torchrun in the script must compute its own");
    cr_assert_null(get(envp, "LOCAL_RANK"));
    cr_assert_null(get(envp, "WORLD_SIZE"));
    cr_assert_null(get(envp, "LOCAL_WORLD_SIZE"));
    cr_assert_str_eq(get(envp, "CUDA_VISIBLE_DEVICES"), "2,3", "all of the node's GPUs");
    cr_assert_str_eq(get(envp, "SLURM_PROCID"), "0");
    cr_assert_str_eq(get(envp, "SLURM_LOCALID"), "0");
    cr_assert_str_eq(get(envp, "SLURM_NODEID"), "0");
    cr_assert_str_eq(get(envp, "SLURM_GPUS_ON_NODE"), "2");
    cr_assert_str_eq(get(envp, "SLURM_JOB_GPUS"), "2,3");
    cr_assert_null(get(envp, "SLURM_STEP_ID"), "the batch shell is no srun step");
    cr_assert_null(get(envp, "SLURM_STEP_NODELIST"));
    cr_assert_null(get(envp, "SLURM_TASK_PID"), "only with task_pid_slot");
    cr_assert_str_eq(get(envp, "SLURM_NTASKS"), "16", "the job's value, not a step's");
    cr_assert_str_eq(get(envp, "SLURM_NODELIST"), "n[1-9]", "left as the scheduler set it");
    wrk_env_free(envp);
}

Test(env, plain_jobs_get_no_slurm_variables)
{
    struct wrk_task_env in = slurm_task();
    char **envp = NULL;

    in.slurm = false;
    in.step = 2;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_null(get(envp, "SLURM_PROCID"));
    cr_assert_null(get(envp, "SLURM_STEP_ID"));
    cr_assert_str_eq(get(envp, "SLURM_NTASKS"), "16");
    wrk_env_free(envp);
}

/* Slurm's command names come last on a Slurm job's PATH: a real Slurm's stay first. */
Test(env, slurm_jobs_find_the_slurm_names_at_the_end_of_path)
{
    static char *job_env[] = {"PATH=/opt/slurm/bin:/usr/bin", NULL};
    struct wrk_task_env in = slurm_task();
    char **envp = NULL;

    in.slurm_bin = "/var/lib/gsched/slurm-bin";
    in.job_env = job_env;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "PATH"), "/opt/slurm/bin:/usr/bin:/var/lib/gsched/slurm-bin");
    wrk_env_free(envp);
    in.slurm = false;
    cr_assert_eq(wrk_env_build(&in, &envp), 0);
    cr_assert_str_eq(get(envp, "PATH"), "/opt/slurm/bin:/usr/bin", "not for other jobs");
    wrk_env_free(envp);
}
