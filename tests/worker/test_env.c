/*
 * test_env.c: a task's environment carries what torchrun/DDP scripts read, overriding the
 * job's variables of the same name but keeping the rest in order; NCCL's NIC hints only
 * fill gaps the job left, and only for a NIC of this machine.
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
