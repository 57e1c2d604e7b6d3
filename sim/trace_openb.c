/*
 * trace_openb.c: Alibaba's openb GPU cluster trace (clusterdata cluster-trace-gpu-v2023,
 * ATC'23 "Beware of Fragmentation"): its node list and pod list CSVs (see readers.h).
 * The pods are what the simulator replays: submit at creation_time, running
 * deletion_time - scheduled_time seconds, asking for their GPUs (a fraction of one made a
 * whole one), cores (cpu_milli rounded up) and memory. Pods the trace never scheduled
 * have no run time and are skipped (counted in trace->skipped).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim/readers.h"

struct nodes_ctx {
    struct gs_sim_trace *t;
    enum gs_sim_links links;
};

static int node_line(void *data, struct gs_sim_lines *at, char **f, int n)
{
    struct nodes_ctx *c = data;
    struct gs_sim_node node = {.links = c->links};
    uint64_t cpu_milli, mem, gpus;
    int rc;

    if (n < 4)
        return gs_sim_lines_error(at, -EINVAL,
                                  "%d fields, 5 expected (sn,cpu_milli,memory_mib,gpu,model)", n);
    if ((rc = gs_sim_field_u64(at, f[1], "cpu_milli", &cpu_milli)) < 0 ||
        (rc = gs_sim_field_u64(at, f[2], "memory_mib", &mem)) < 0 ||
        (rc = gs_sim_field_u64(at, f[3], "gpu", &gpus)) < 0)
        return rc;
    if (gpus > 64 || cpu_milli < 1000 || cpu_milli > 1024000 || strlen(f[0]) == 0 ||
        strlen(f[0]) >= sizeof(node.name))
        return gs_sim_lines_error(at, -EINVAL,
                                  "node '%s': impossible node (1-1024 cores, at "
                                  "most 64 GPUs, a name of 1-%zu characters)",
                                  f[0], sizeof(node.name) - 1);
    snprintf(node.name, sizeof(node.name), "%s", f[0]);
    node.ngpus = (uint32_t)gpus;
    node.ncores = (uint32_t)(cpu_milli / 1000);
    node.mem_mib = mem;
    node.switch_id = (int)(c->t->nnodes / GS_SIM_OPENB_NODES_PER_SWITCH) + 1;
    return gs_sim_trace_add_node(c->t, &node);
}

int gs_sim_read_openb_nodes(struct gs_sim_trace *t, const char *path, enum gs_sim_links links,
                            struct gs_buf *err)
{
    struct nodes_ctx c = {t, links};

    return gs_sim_read_lines(path, ',', 1, 8, node_line, &c, err);
}

static int pod_line(void *data, struct gs_sim_lines *at, char **f, int n)
{
    struct gs_sim_trace *t = data;
    struct gs_sim_job j = {.line = at->line};
    uint64_t cpu_milli, mem, gpus, gpu_milli, created, deleted, scheduled;
    int rc, account;

    if (n < 11)
        return gs_sim_lines_error(at, -EINVAL,
                                  "%d fields, 11 expected (name,cpu_milli,"
                                  "memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                                  "creation_time,deletion_time,scheduled_time): a pod list "
                                  "without times cannot be replayed",
                                  n);
    if (strcmp(f[7], "Pending") == 0 || f[10][0] == '\0') {
        t->skipped++;
        return 0;
    }
    if ((rc = gs_sim_field_u64(at, f[1], "cpu_milli", &cpu_milli)) < 0 ||
        (rc = gs_sim_field_u64(at, f[2], "memory_mib", &mem)) < 0 ||
        (rc = gs_sim_field_u64(at, f[3], "num_gpu", &gpus)) < 0 ||
        (rc = gs_sim_field_u64(at, f[4], "gpu_milli", &gpu_milli)) < 0 ||
        (rc = gs_sim_field_u64(at, f[8], "creation_time", &created)) < 0 ||
        (rc = gs_sim_field_u64(at, f[9], "deletion_time", &deleted)) < 0 ||
        (rc = gs_sim_field_u64(at, f[10], "scheduled_time", &scheduled)) < 0)
        return rc;
    if (gpus > 4096 || cpu_milli > 1024000 * 64)
        return gs_sim_lines_error(at, -EINVAL, "pod '%s' asks for too much", f[0]);
    if ((account = gs_sim_trace_account(t, "default")) < 0)
        return account;
    j.gpus = gpus == 0 && gpu_milli > 0 ? 1 : (uint32_t)gpus;
    j.cores = (uint32_t)((cpu_milli + 999) / 1000);
    j.cores = j.cores > 0 ? j.cores : 1;
    j.mem_mib = mem;
    j.submit_ms = created * 1000;
    j.duration_ms = (deleted > scheduled ? deleted - scheduled : 1) * 1000;
    j.account = (uint32_t)account;
    j.key = gs_sim_hash(f[0], strlen(f[0]));
    return gs_sim_trace_add_job(t, &j);
}

int gs_sim_read_openb_pods(struct gs_sim_trace *t, const char *path, struct gs_buf *err)
{
    return gs_sim_read_lines(path, ',', 1, 12, pod_line, t, err);
}
