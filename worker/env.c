/*
 * env.c: building a task's environment (see env.h). A small set of "KEY=VALUE" strings
 * where setting a key replaces its earlier value, in place, so the job's order is kept;
 * hints go through set_default(), which leaves a key the job already has alone. Slurm's
 * hostlist and "2(x3),1" forms come from common/hostlist.h.
 */
#include "worker/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hostlist.h"

struct envset {
    char **v;
    size_t n;
    size_t cap;
    int rc; /* sticky: the first failure */
};

static ssize_t find(const struct envset *e, const char *kv, size_t klen)
{
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], kv, klen) == 0 && e->v[i][klen] == '=')
            return (ssize_t)i;
    }
    return -1;
}

/* Takes ownership of kv ("KEY=VALUE"). */
static void put_owned(struct envset *e, char *kv)
{
    const char *eq = kv != NULL ? strchr(kv, '=') : NULL;
    ssize_t at;

    if (e->rc < 0 || kv == NULL || eq == NULL) {
        if (e->rc == 0)
            e->rc = kv == NULL ? -ENOMEM : -EINVAL;
        free(kv);
        return;
    }
    at = find(e, kv, (size_t)(eq - kv));
    if (at >= 0) {
        free(e->v[at]);
        e->v[at] = kv;
        return;
    }
    if (e->n + 1 >= e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 32;
        char **v = realloc(e->v, cap * sizeof(*v));
        if (v == NULL) {
            e->rc = -ENOMEM;
            free(kv);
            return;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = kv;
    e->v[e->n] = NULL;
}

static void set(struct envset *e, const char *key, const char *value)
{
    struct gs_buf kv = GS_BUF_INIT;

    if (gs_buf_printf(&kv, "%s=%s", key, value != NULL ? value : "") < 0) {
        gs_buf_release(&kv);
        put_owned(e, NULL);
        return;
    }
    put_owned(e, gs_buf_detach(&kv, NULL));
}

/* For hints: the job's own value, when it has one, wins (even an empty one). */
static void set_default(struct envset *e, const char *key, const char *value)
{
    if (find(e, key, strlen(key)) < 0)
        set(e, key, value);
}

static void set_uint(struct envset *e, const char *key, unsigned long long value)
{
    char num[24];

    snprintf(num, sizeof(num), "%llu", value);
    set(e, key, num);
}

/*
 * The torchrun-style variables: gsched's placement defines them, so they override the job's;
 * but Slurm sets none of them, so in a Slurm job what the script exported (and srun passed
 * on: "export MASTER_ADDR=$(scontrol show hostnames ... | head -n 1)") wins.
 */
static void set_placement_uint(struct envset *e, const struct wrk_task_env *in, const char *key,
                               unsigned long long value)
{
    if (!in->slurm || find(e, key, strlen(key)) < 0)
        set_uint(e, key, value);
}

/* "0,1,3": GPU indices as CUDA_VISIBLE_DEVICES and Slurm's GPU variables list them. */
static void set_list(struct envset *e, const char *key, const uint32_t *v, size_t n)
{
    struct gs_buf list = GS_BUF_INIT;
    int rc = gs_buf_append_str(&list, "");

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = gs_buf_printf(&list, "%s%u", i > 0 ? "," : "", v[i]);
    if (rc == 0)
        set(e, key, list.data);
    else if (e->rc == 0)
        e->rc = rc;
    gs_buf_release(&list);
}

static void set_gpus(struct envset *e, const uint32_t *gpus, size_t n)
{
    set_list(e, "CUDA_VISIBLE_DEVICES", gpus, n);
    set(e, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
}

static void set_bus_ids(struct envset *e, const char *const *ids, size_t n)
{
    struct gs_buf list = GS_BUF_INIT;
    int rc = gs_buf_append_str(&list, "");

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = gs_buf_printf(&list, "%s%s", i > 0 ? "," : "", ids[i]);
    if (rc == 0)
        set(e, "GSCHED_GPU_BUS_IDS", list.data);
    else if (e->rc == 0)
        e->rc = rc;
    gs_buf_release(&list);
}

/* "0-3,8,10-11": runs of consecutive cores folded, as taskset and Slurm print them. */
static void set_cores(struct envset *e, const uint32_t *cores, size_t n)
{
    struct gs_buf list = GS_BUF_INIT;
    int rc = gs_buf_append_str(&list, "");

    for (size_t i = 0; rc == 0 && i < n;) {
        size_t j = i;

        while (j + 1 < n && cores[j + 1] == cores[j] + 1)
            j++;
        rc = j > i ? gs_buf_printf(&list, "%s%u-%u", i > 0 ? "," : "", cores[i], cores[j])
                   : gs_buf_printf(&list, "%s%u", i > 0 ? "," : "", cores[i]);
        i = j + 1;
    }
    if (rc == 0)
        set(e, "GSCHED_CPUS", list.data);
    else if (e->rc == 0)
        e->rc = rc;
    gs_buf_release(&list);
}

static bool known(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* NCCL reads both variables as name prefixes, so "mlx5_1" would also pick mlx5_10..17 on
 * a node with that many; a leading '=' asks for the exact name. */
static void set_exact_default(struct envset *e, const char *key, const char *name)
{
    struct gs_buf value = GS_BUF_INIT;

    if (find(e, key, strlen(key)) >= 0)
        return;
    if (gs_buf_printf(&value, "=%s", name) == 0)
        set(e, key, value.data);
    else if (e->rc == 0)
        e->rc = -ENOMEM;
    gs_buf_release(&value);
}

static void set_nic(struct envset *e, const struct wrk_task_env *in)
{
    if (known(in->nic_name) || known(in->nic_ib_device))
        set(e, "GSCHED_NIC", known(in->nic_name) ? in->nic_name : in->nic_ib_device);
    if (!in->nccl_nic_hints)
        return;
    if (known(in->nic_name))
        set_exact_default(e, "NCCL_SOCKET_IFNAME", in->nic_name);
    if (known(in->nic_ib_device))
        set_exact_default(e, "NCCL_IB_HCA", in->nic_ib_device);
}

/* Sets key to what fill appends to a buffer (a hostlist, per-node counts). */
static void set_built(struct envset *e, const char *key, int rc, struct gs_buf *value)
{
    if (rc == 0 && value->data == NULL)
        rc = gs_buf_append_str(value, "");
    if (rc == 0)
        set(e, key, value->data);
    else if (e->rc == 0)
        e->rc = rc;
    gs_buf_release(value);
}

/* The step's layout, under its SLURM_STEP_ names and the older ones srun overrides. */
static void set_step(struct envset *e, const struct wrk_task_env *in)
{
    struct gs_buf nodes = GS_BUF_INIT, counts = GS_BUF_INIT;
    unsigned long long ntasks = 0;
    int rc;

    for (size_t i = 0; i < in->n_step_nodes; i++)
        ntasks += in->step_node_tasks != NULL ? in->step_node_tasks[i] : 0;
    set_uint(e, "SLURM_STEP_ID", in->step - 1);
    set_uint(e, "SLURM_STEPID", in->step - 1);
    set_uint(e, "SLURM_STEP_NUM_TASKS", ntasks);
    set_uint(e, "SLURM_STEP_NUM_NODES", in->n_step_nodes);
    set_uint(e, "SLURM_NTASKS", ntasks);
    set_uint(e, "SLURM_NPROCS", ntasks);
    set_uint(e, "SLURM_NNODES", in->n_step_nodes);
    rc =
        gs_hostlist_compress(in->step_nodes, in->step_nodes != NULL ? in->n_step_nodes : 0, &nodes);
    if (rc == 0)
        set(e, "SLURM_NODELIST", nodes.data != NULL ? nodes.data : "");
    set_built(e, "SLURM_STEP_NODELIST", rc, &nodes);
    rc = gs_hostlist_counts(in->step_node_tasks, in->step_node_tasks != NULL ? in->n_step_nodes : 0,
                            &counts);
    if (rc == 0)
        set(e, "SLURM_TASKS_PER_NODE", counts.data != NULL ? counts.data : "");
    set_built(e, "SLURM_STEP_TASKS_PER_NODE", rc, &counts);
}

/* What only the task's node knows; the job-level SLURM_ variables came in job_env. */
static void set_slurm(struct envset *e, const struct wrk_task_env *in)
{
    set_uint(e, "SLURM_PROCID", in->rank);
    set_uint(e, "SLURM_LOCALID", in->local_rank);
    set_uint(e, "SLURM_NODEID", in->node_rank);
    set(e, "SLURMD_NODENAME", in->node_name);
    set_uint(e, "SLURM_CPUS_ON_NODE", in->node_cpus);
    set_uint(e, "SLURM_GPUS_ON_NODE", in->n_node_gpus);
    /* In a step the node's GPUs are the step's share; SLURM_JOB_GPUS stays the job's, as
     * srun's environment (the batch shell's) carries it. */
    if (in->step == 0)
        set_list(e, "SLURM_JOB_GPUS", in->node_gpus, in->n_node_gpus);
    set_list(e, "GPU_DEVICE_ORDINAL", in->node_gpus, in->n_node_gpus);
    set_list(e, "SLURM_STEP_GPUS", in->gpus, in->ngpus);
    if (in->task_pid_slot) {
        char room[WRK_ENV_PID_ROOM + 1];

        memset(room, ' ', WRK_ENV_PID_ROOM);
        room[WRK_ENV_PID_ROOM] = '\0';
        set(e, "SLURM_TASK_PID", room);
    }
    if (in->step >= 1)
        set_step(e, in);
}

/* dir at the end of PATH (after what the job has: a real Slurm's srun there stays first). */
static void append_path(struct envset *e, const char *dir)
{
    ssize_t at = find(e, "PATH", 4);
    const char *path = at >= 0 ? e->v[at] + 5 : "";
    struct gs_buf v = GS_BUF_INIT;
    int rc = gs_buf_printf(&v, "%s%s%s", path, path[0] != '\0' ? ":" : "", dir);

    set_built(e, "PATH", rc, &v);
}

int wrk_env_build(const struct wrk_task_env *in, char ***ret_envp)
{
    struct envset e = {0};

    for (size_t i = 0; in->job_env != NULL && in->job_env[i] != NULL; i++)
        put_owned(&e, strdup(in->job_env[i]));
    set_default(&e, "PATH", WRK_ENV_DEFAULT_PATH);
    if (in->user != NULL) {
        set(&e, "USER", in->user);
        set(&e, "LOGNAME", in->user);
    }
    if (in->home != NULL)
        set(&e, "HOME", in->home);
    set_uint(&e, "GSCHED_JOB_ID", in->job_id);
    set(&e, "GSCHED_JOB_NAME", in->job_name);
    set(&e, "GSCHED_NODELIST", in->nodelist);
    set_uint(&e, "GSCHED_NODE_RANK", in->node_rank);
    if (in->step_node_tasks != NULL) { /* what gsched mpirun gives mpirun's --host */
        struct gs_buf counts = GS_BUF_INIT;

        set_built(&e, "GSCHED_TASKS_PER_NODE",
                  gs_hostlist_counts(in->step_node_tasks, in->n_step_nodes, &counts), &counts);
    }
    if (in->cli_socket != NULL)
        set(&e, "GSCHED_SOCKET", in->cli_socket);
    if (in->slurm && in->slurm_bin != NULL)
        append_path(&e, in->slurm_bin);
    /* The batch shell is no rank of a distributed run: torchrun inside it sets these for
     * the processes it starts, and would be misled by a shell-wide RANK=0. */
    if (!in->batch) {
        set_placement_uint(&e, in, "RANK", in->rank);
        set_placement_uint(&e, in, "LOCAL_RANK", in->local_rank);
        set_placement_uint(&e, in, "WORLD_SIZE", in->world_size);
        set_placement_uint(&e, in, "LOCAL_WORLD_SIZE", in->local_world_size);
    }
    set_placement_uint(&e, in, "NODE_RANK", in->node_rank);
    if (in->slurm)
        set_default(&e, "MASTER_ADDR", in->master_addr);
    else
        set(&e, "MASTER_ADDR", in->master_addr);
    set_placement_uint(&e, in, "MASTER_PORT", in->master_port);
    if (in->batch && in->node_gpus != NULL)
        set_gpus(&e, in->node_gpus, in->n_node_gpus);
    else
        set_gpus(&e, in->gpus, in->ngpus);
    if (in->gpu_bus_ids != NULL)
        set_bus_ids(&e, in->gpu_bus_ids, in->ngpus);
    set_cores(&e, in->cores, in->ncores);
    set_nic(&e, in);
    if (in->slurm)
        set_slurm(&e, in);
    for (size_t i = 0; in->task_env != NULL && in->task_env[i] != NULL; i++)
        put_owned(&e, strdup(in->task_env[i]));
    if (e.rc < 0) {
        wrk_env_free(e.v);
        return e.rc;
    }
    *ret_envp = e.v;
    return 0;
}

void wrk_env_free(char **envp)
{
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
        free(envp[i]);
    free(envp);
}
