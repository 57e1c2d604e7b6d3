/*
 * env.c: building a task's environment (see env.h). A small set of "KEY=VALUE" strings
 * where setting a key replaces its earlier value, in place, so the job's order is kept;
 * hints go through set_default(), which leaves a key the job already has alone.
 */
#include "worker/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

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

static void set_gpus(struct envset *e, const uint32_t *gpus, size_t n)
{
    struct gs_buf list = GS_BUF_INIT;
    int rc = gs_buf_append_str(&list, "");

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = gs_buf_printf(&list, "%s%u", i > 0 ? "," : "", gpus[i]);
    if (rc == 0)
        set(e, "CUDA_VISIBLE_DEVICES", list.data);
    else if (e->rc == 0)
        e->rc = rc;
    gs_buf_release(&list);
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
    set_uint(&e, "RANK", in->rank);
    set_uint(&e, "LOCAL_RANK", in->local_rank);
    set_uint(&e, "WORLD_SIZE", in->world_size);
    set_uint(&e, "LOCAL_WORLD_SIZE", in->local_world_size);
    set_uint(&e, "NODE_RANK", in->node_rank);
    set(&e, "MASTER_ADDR", in->master_addr);
    set_uint(&e, "MASTER_PORT", in->master_port);
    set_gpus(&e, in->gpus, in->ngpus);
    if (in->gpu_bus_ids != NULL)
        set_bus_ids(&e, in->gpu_bus_ids, in->ngpus);
    set_cores(&e, in->cores, in->ncores);
    set_nic(&e, in);
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
