/*
 * step_gpu_bind.c: srun's --gpu-bind applied to a step's tasks (common/gpu_bind.h). When
 * the step's LaunchTasks is built (step_plan.c), each node's tasks get their own GPU lists
 * instead of all of the node's step GPUs; the NUMA nodes of a task's cores and of each GPU
 * come from that node's reported topology. Every node's tasks are bound once before the
 * step is answered, so an id the step does not have (map_gpu:5 on a node where it holds 4
 * GPUs) refuses the step with that reason rather than failing it after srun heard yes.
 * With "verbose," each task gets its binding as Slurm's slurmstepd reports it, which the
 * worker writes to the task's stderr before it runs (TaskAssignment.stderr_note).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/steps_internal.h"

/* NUMA node of the node's GPU `index`, -1 when the topology does not say. */
static int16_t gpu_numa_of(const Gs__NodeTopology *topo, uint32_t index)
{
    for (size_t g = 0; topo != NULL && g < topo->n_gpus; g++) {
        if (topo->gpus[g]->index == index && topo->gpus[g]->numa_node < 64)
            return (int16_t)topo->gpus[g]->numa_node;
    }
    return -1;
}

/* The NUMA nodes (below 64) holding any of the task's cores, as a mask; 0 unknown. */
static uint64_t task_numa_of(const Gs__NodeTopology *topo, const Gs__TaskAssignment *t)
{
    uint64_t mask = 0;

    for (size_t k = 0; topo != NULL && k < topo->n_numa_nodes; k++) {
        const Gs__NumaNode *nn = topo->numa_nodes[k];

        for (size_t c = 0; nn->os_index < 64 && c < nn->n_cores; c++) {
            for (size_t i = 0; i < t->n_cores; i++) {
                if (nn->cores[c] == t->cores[i])
                    mask |= 1ull << nn->os_index;
            }
        }
    }
    return mask;
}

int sched_step_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                            struct sched_step_msg *m)
{
    size_t most_tasks = 0, most_gpus = 0;

    if (req->gpu_bind == NULL || req->gpu_bind[0] == '\0')
        return 0;
    m->bind = calloc(1, sizeof(*m->bind));
    if (m->bind == NULL)
        return -ENOMEM;
    if (gs_gpu_bind_parse(req->gpu_bind, m->bind, m->bind_why, sizeof(m->bind_why)) < 0)
        return -EINVAL;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        most_tasks = m->nodes[i].ntasks > most_tasks ? m->nodes[i].ntasks : most_tasks;
        most_gpus = m->nodes[i].n_gpus > most_gpus ? m->nodes[i].n_gpus : most_gpus;
    }
    m->bound_stride = most_gpus;
    m->bound = calloc(most_tasks * most_gpus + 1, sizeof(*m->bound));
    if (m->bind->verbose && m->notes == NULL &&
        (m->notes = calloc(most_tasks + 1, SCHED_STEP_NOTE_MAX)) == NULL)
        return -ENOMEM;
    return m->bound != NULL ? 0 : -ENOMEM;
}

/* Appends ",%u" (the first without the comma) to out[*at..size), truncating. */
static void put_index(char *out, size_t size, size_t *at, uint32_t v, bool first)
{
    int n = *at < size ? snprintf(out + *at, size - *at, "%s%u", first ? "" : ",", v) : 0;

    *at += n > 0 ? (size_t)n : 0;
}

/*
 * Slurm's report of one task's binding: the task's GPUs and the step's on the node as masks
 * of node GPU indices, the task's index on the node, and its GPUs as the node numbers them
 * and as its CUDA_VISIBLE_DEVICES lists them (the same numbers here: gsched does not
 * renumber a task's devices).
 */
static void note_binding(char *out, size_t size, const Gs__NodeAllocation *na,
                         const Gs__TaskAssignment *t)
{
    uint64_t usable = 0, alloc = 0;
    char list[SCHED_STEP_NOTE_MAX / 4] = "";
    size_t at = 0;

    for (size_t g = 0; g < na->n_gpus; g++)
        alloc |= na->gpus[g] < 64 ? 1ull << na->gpus[g] : 0;
    for (size_t g = 0; g < t->n_gpus; g++) {
        usable |= t->gpus[g] < 64 ? 1ull << t->gpus[g] : 0;
        put_index(list, sizeof(list), &at, t->gpus[g], g == 0);
    }
    snprintf(out, size,
             "gpu-bind: usable_gres=0x%llX; bit_alloc=0x%llX; local_inx=%u; global_list=%s; "
             "local_list=%s",
             (unsigned long long)usable, (unsigned long long)alloc, t->local_rank, list, list);
}

void sched_step_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na)
{
    const Gs__NodeTopology *topo;
    int16_t gpu_numa[SCHED_MAX_GPUS];
    uint32_t picked[SCHED_MAX_GPUS];
    uint64_t task_numa[SCHED_MAX_CORES]; /* a node runs at most one task per core */

    if (m->bind == NULL || na->n_gpus > SCHED_MAX_GPUS)
        return;
    topo = m->topos[na - m->nodes];
    for (size_t g = 0; g < na->n_gpus; g++)
        gpu_numa[g] = gpu_numa_of(topo, na->gpus[g]);
    for (size_t l = 0; l < m->lt.n_tasks && l < SCHED_MAX_CORES; l++)
        task_numa[l] = task_numa_of(topo, m->lt.tasks[l]);
    for (size_t l = 0; l < m->lt.n_tasks && l < SCHED_MAX_CORES; l++) {
        Gs__TaskAssignment *t = m->lt.tasks[l];
        uint32_t *room = m->bound + l * m->bound_stride, peer = 0;
        size_t n = 0;
        int rc;

        for (size_t k = 0; k < l; k++)
            peer += task_numa[k] == task_numa[l];
        rc = gs_gpu_bind_task(m->bind, t->local_rank, peer, na->n_gpus, gpu_numa, task_numa[l],
                              picked, &n, m->bind_why, sizeof(m->bind_why));

        if (rc < 0) {
            m->bind_rc = rc;
            return;
        }
        for (size_t i = 0; i < n; i++)
            room[i] = na->gpus[picked[i]];
        t->gpus = room;
        t->n_gpus = n;
        if (m->bind->verbose) {
            char line[SCHED_STEP_NOTE_MAX / 2];

            note_binding(line, sizeof(line), na, t);
            sched_step_note_add(m, l, line);
        }
    }
}
