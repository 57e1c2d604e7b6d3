/*
 * step_dist.c: srun's -m/--distribution applied to a step (common/task_dist.h reads it and
 * does the arithmetic). step_plan.c lays the step out as always (how many tasks on which
 * node) and then asks here which global rank each task gets; with -m arbitrary and a host
 * list, the list itself is the layout. When the LaunchTasks is built, each node's cores are
 * put in the order its tasks take them, so that the socket level (cyclic, fcyclic) decides
 * which socket's cores a task is bound to; the sockets come from the node's topology.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/steps_internal.h"

int sched_step_dist_ranks(struct sched_step *st, const struct gs_dist *d)
{
    uint32_t *counts = calloc(st->nnodes + 1, sizeof(*counts)), total = 0;

    if (counts == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < st->nnodes; i++)
        total += counts[i] = st->nodes[i].ntasks;
    st->ranks = calloc(total + 1, sizeof(*st->ranks));
    if (st->ranks != NULL)
        gs_dist_ranks(d, counts, st->nnodes, st->ranks);
    free(counts);
    return st->ranks != NULL ? 0 : -ENOMEM;
}

/* The job's node (alloc index) named name among those in[] allows; m->n when none. */
static size_t job_node(const struct sched_alloc_msg *m, const bool *in, const char *name)
{
    for (size_t i = 0; i < m->n; i++) {
        if (in[i] && strcmp(m->nodes[i].node_name, name) == 0)
            return i;
    }
    return m->n;
}

int sched_step_dist_arbitrary(const struct sched_job *job, const struct sched_alloc_msg *m,
                              const Gs__StepLaunchRequest *req, const bool *in,
                              struct sched_step *st, char *why, size_t size)
{
    uint32_t ntasks = req->ntasks > 0 ? req->ntasks : (uint32_t)req->n_task_nodes, used = 0;
    uint32_t *count = calloc(m->n + 1, sizeof(*count)), *slot = calloc(m->n + 1, sizeof(*slot));
    uint32_t *node_of = NULL;
    int rc = -ENOMEM;

    if (count == NULL || slot == NULL)
        goto out;
    rc = -EINVAL;
    if (ntasks > req->n_task_nodes) {
        snprintf(why, size, "-m arbitrary: %u tasks but the host list names %zu", ntasks,
                 req->n_task_nodes);
        goto out;
    }
    node_of = calloc(ntasks + 1, sizeof(*node_of));
    if (node_of == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t r = 0; r < ntasks; r++) {
        size_t i = job_node(m, in, req->task_nodes[r]);

        if (i == m->n) {
            snprintf(why, size,
                     "-m arbitrary: host '%s' (task %u) is not one of job %" PRIu64 "'s nodes%s",
                     req->task_nodes[r], r, job->id,
                     req->n_het_groups > 0 ? " in the step's het groups" : "");
            goto out;
        }
        if (req->ntasks_per_node > 0 && count[i] == req->ntasks_per_node) {
            snprintf(why, size, "-m arbitrary: the host list puts more than %u tasks on %s",
                     req->ntasks_per_node, req->task_nodes[r]);
            goto out;
        }
        used += count[i]++ == 0;
        node_of[r] = (uint32_t)i;
    }
    if (req->nodes > 0 && req->nodes != used) {
        snprintf(why, size, "-m arbitrary: -N %u but the host list names %u node%s", req->nodes,
                 used, used == 1 ? "" : "s");
        goto out;
    }
    st->ranks = calloc(ntasks + 1, sizeof(*st->ranks));
    if (st->ranks == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    st->nnodes = 0;
    for (uint32_t i = 0, first = 0; i < m->n; i++) { /* the job's node order, as -w's */
        if (count[i] == 0)
            continue;
        st->nodes[st->nnodes] = (struct step_node){.index = job->alloc.nodes[i].node,
                                                   .alloc_index = i,
                                                   .first = first,
                                                   .ntasks = count[i]};
        slot[i] = first;
        first += count[i];
        st->nnodes++;
    }
    for (uint32_t r = 0; r < ntasks; r++)
        st->ranks[slot[node_of[r]]++] = r;
    st->ntasks = ntasks;
    rc = 0;
out:
    free(count);
    free(slot);
    free(node_of);
    return rc;
}

void sched_step_core_places(const Gs__NodeTopology *topo, uint32_t *socket_of, uint32_t *numa_of)
{
    memset(socket_of, 0, SCHED_MAX_CORES * sizeof(*socket_of));
    memset(numa_of, 0, SCHED_MAX_CORES * sizeof(*numa_of));
    for (size_t k = 0; topo != NULL && k < topo->n_numa_nodes; k++) {
        const Gs__NumaNode *nn = topo->numa_nodes[k];

        for (size_t c = 0; c < nn->n_cores; c++) {
            if (nn->cores[c] < SCHED_MAX_CORES) {
                socket_of[nn->cores[c]] = nn->socket;
                numa_of[nn->cores[c]] = nn->os_index;
            }
        }
    }
}

void sched_step_dist_cores(struct sched_step_msg *m, const Gs__NodeAllocation *na, uint32_t ntasks,
                           uint32_t cpus_per_task)
{
    const Gs__NodeTopology *topo = m->topos[na - m->nodes];
    uint32_t socket_of[SCHED_MAX_CORES], numa_of[SCHED_MAX_CORES], socket[SCHED_MAX_CORES];
    uint32_t out[SCHED_MAX_CORES];
    uint32_t per = cpus_per_task > 0 ? cpus_per_task
                   : ntasks > 0      ? (uint32_t)na->n_cores / ntasks
                                     : 0;

    if (m->dist.sockets == GS_DIST_SOCKETS_BLOCK || per == 0 || topo == NULL ||
        na->n_cores > SCHED_MAX_CORES || (size_t)ntasks * per > na->n_cores)
        return; /* block: index order, which is socket after socket */
    sched_step_core_places(topo, socket_of, numa_of);
    for (size_t i = 0; i < na->n_cores; i++)
        socket[i] = na->cores[i] < SCHED_MAX_CORES ? socket_of[na->cores[i]] : 0;
    gs_dist_cores(m->dist.sockets, na->cores, socket, na->n_cores, ntasks, per, out);
    memcpy(na->cores, out, na->n_cores * sizeof(*out));
}
