/*
 * trace_tiresias.c: the Tiresias simulator's trace (SymbioticLab/Tiresias, NSDI'19): a jobs
 * CSV and a one-line cluster CSV (see readers.h). Each job asks for num_gpu GPUs, one core
 * per GPU and no memory, for duration seconds; its account is its model name (the trace has
 * no users; a team per model is the nearest stand-in).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim/readers.h"

static int job_line(void *data, struct gs_sim_lines *at, char **f, int n)
{
    struct gs_sim_trace *t = data;
    struct gs_sim_job j = {.line = at->line};
    uint64_t gpus, submit, duration;
    int rc, account;

    if (n < 6)
        return gs_sim_lines_error(at, -EINVAL,
                                  "%d fields, 7 expected (job_id,num_gpu,"
                                  "submit_time,iterations,model_name,duration,interval)",
                                  n);
    if ((rc = gs_sim_field_u64(at, f[1], "num_gpu", &gpus)) < 0 ||
        (rc = gs_sim_field_u64(at, f[2], "submit_time", &submit)) < 0 ||
        (rc = gs_sim_field_u64(at, f[5], "duration", &duration)) < 0)
        return rc;
    if (gpus > 4096)
        return gs_sim_lines_error(at, -EINVAL, "num_gpu: %llu is too many",
                                  (unsigned long long)gpus);
    account = gs_sim_trace_account(t, f[4][0] != '\0' ? f[4] : "default");
    if (account < 0)
        return account;
    j.gpus = (uint32_t)gpus;
    j.cores = j.gpus > 0 ? j.gpus : 1;
    j.submit_ms = submit * 1000;
    j.duration_ms = (duration > 0 ? duration : 1) * 1000;
    j.account = (uint32_t)account;
    j.key = gs_sim_hash(f[0], strlen(f[0]));
    return gs_sim_trace_add_job(t, &j);
}

int gs_sim_read_tiresias_jobs(struct gs_sim_trace *t, const char *path, struct gs_buf *err)
{
    return gs_sim_read_lines(path, ',', 1, 8, job_line, t, err);
}

struct cluster_ctx {
    struct gs_sim_trace *t;
    enum gs_sim_links links;
};

static int add_nodes(struct cluster_ctx *c, const uint64_t v[5])
{
    struct gs_sim_node node = {.ngpus = (uint32_t)v[2],
                               .ncores = (uint32_t)v[3],
                               .mem_mib = v[4] * 1024,
                               .links = c->links};
    int rc = 0;

    for (uint64_t s = 0; rc == 0 && s < v[0]; s++) {
        for (uint64_t i = 0; rc == 0 && i < v[1]; i++) {
            snprintf(node.name, sizeof(node.name), "node%zu", c->t->nnodes + 1);
            node.switch_id = (int)s + 1;
            rc = gs_sim_trace_add_node(c->t, &node);
        }
    }
    return rc;
}

static int cluster_line(void *data, struct gs_sim_lines *at, char **f, int n)
{
    static const char *const what[] = {"num_switch", "num_node_p_switch", "num_gpu_p_node",
                                       "num_cpu_p_node", "mem_p_node"};
    struct cluster_ctx *c = data;
    uint64_t v[5];
    int rc;

    if (n < 5)
        return gs_sim_lines_error(at, -EINVAL,
                                  "%d fields, 5 expected (num_switch,"
                                  "num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node)",
                                  n);
    for (int i = 0; i < 5; i++) {
        if ((rc = gs_sim_field_u64(at, f[i], what[i], &v[i])) < 0)
            return rc;
    }
    if (v[0] * v[1] > 100000 || v[2] > 64 || v[3] == 0 || v[3] > 1024)
        return gs_sim_lines_error(at, -EINVAL,
                                  "impossible cluster: %llu x %llu nodes of %llu "
                                  "GPUs and %llu cores (at most 64 GPUs, 1-1024 cores a node)",
                                  (unsigned long long)v[0], (unsigned long long)v[1],
                                  (unsigned long long)v[2], (unsigned long long)v[3]);
    return add_nodes(c, v);
}

int gs_sim_read_tiresias_cluster(struct gs_sim_trace *t, const char *path, enum gs_sim_links links,
                                 struct gs_buf *err)
{
    struct cluster_ctx c = {t, links};

    return gs_sim_read_lines(path, ',', 1, 8, cluster_line, &c, err);
}
