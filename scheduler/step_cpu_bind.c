/*
 * step_cpu_bind.c: srun's --cpu-bind applied to a step's tasks (common/cpu_bind.h). When
 * the step's LaunchTasks is built (step_plan.c), each node's tasks have been dealt their
 * cores (sched_node_tasks, in --distribution's order); this replaces each task's list by
 * what --cpu-bind asks, from the step's cores on that node and their sockets and NUMA nodes
 * (the node's reported topology). It runs before --gpu-bind, whose "closest" reads the
 * task's cores. Every node's tasks are bound once before the step is answered, so a core
 * the step does not have there (map_cpu:20 where it holds 0-15) refuses the step. With
 * "verbose," each task's stderr starts with its binding (TaskAssignment.stderr_note).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"
#include "scheduler/steps_internal.h"

int sched_step_cpu_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                                struct sched_step_msg *m)
{
    size_t most_tasks = 0, most_cores = 0;

    if (req->cpu_bind == NULL || req->cpu_bind[0] == '\0')
        return 0;
    m->cpu_bind = calloc(1, sizeof(*m->cpu_bind));
    if (m->cpu_bind == NULL)
        return -ENOMEM;
    if (gs_cpu_bind_parse(req->cpu_bind, m->cpu_bind, m->bind_why, sizeof(m->bind_why)) < 0)
        return -EINVAL;
    for (uint32_t i = 0; i < st->nnodes; i++) {
        most_tasks = m->nodes[i].ntasks > most_tasks ? m->nodes[i].ntasks : most_tasks;
        most_cores = m->nodes[i].n_cores > most_cores ? m->nodes[i].n_cores : most_cores;
    }
    m->cpu_stride = most_cores;
    m->cpu_bound = calloc(most_tasks * most_cores + 1, sizeof(*m->cpu_bound));
    if (m->cpu_bound == NULL)
        return -ENOMEM;
    if (m->cpu_bind->verbose && m->notes == NULL &&
        (m->notes = calloc(most_tasks + 1, SCHED_STEP_NOTE_MAX)) == NULL)
        return -ENOMEM;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* Slurm's name for the kind in its report. */
static const char *kind_word(enum gs_cpu_bind_kind k)
{
    switch (k) {
    case GS_CPU_BIND_NONE:
        return "NONE";
    case GS_CPU_BIND_RANK:
    case GS_CPU_BIND_RANK_LDOM:
        return "RANK";
    case GS_CPU_BIND_MAP_CPU:
    case GS_CPU_BIND_MAP_LDOM:
        return "MAP";
    default:
        return "MASK";
    }
}

/* "cpu-bind=MASK - node1, task  2  0: mask 0xF set" (Slurm's slurmstepd line, without its
 * PID); cores past 63 are listed instead of masked. */
static void note_binding(char *out, size_t size, const struct gs_cpu_bind *b,
                         const Gs__NodeAllocation *na, const Gs__TaskAssignment *t)
{
    uint64_t mask = 0;
    bool wide = false;
    int at;

    for (size_t i = 0; i < t->n_cores; i++) {
        wide = wide || t->cores[i] >= 64;
        mask |= t->cores[i] < 64 ? 1ull << t->cores[i] : 0;
    }
    at = snprintf(out, size, "cpu-bind=%s - %s, task %2u %2u: ", kind_word(b->kind), na->node_name,
                  t->rank, t->local_rank);
    if (at < 0 || (size_t)at >= size)
        return;
    if (t->n_cores == 0) {
        snprintf(out + at, size - (size_t)at, "unbound");
    } else if (!wide) {
        snprintf(out + at, size - (size_t)at, "mask 0x%llX set", (unsigned long long)mask);
    } else {
        for (size_t i = 0; i < t->n_cores && at < (int)size; i++) {
            int k =
                snprintf(out + at, size - (size_t)at, "%s%u", i == 0 ? "cores " : ",", t->cores[i]);
            at += k > 0 ? k : 0;
        }
        if (at < (int)size)
            snprintf(out + at, size - (size_t)at, " set");
    }
}

void sched_step_cpu_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na)
{
    const Gs__NodeTopology *topo;
    uint32_t cores[SCHED_MAX_CORES], socket[SCHED_MAX_CORES], numa[SCHED_MAX_CORES];
    uint32_t socket_of[SCHED_MAX_CORES], numa_of[SCHED_MAX_CORES];
    struct gs_cpu_bind_node node = {.cores = cores, .socket = socket, .numa = numa};

    if (m->cpu_bind == NULL || na->n_cores > SCHED_MAX_CORES)
        return;
    topo = m->topos[na - m->nodes];
    sched_step_core_places(topo, socket_of, numa_of);
    memcpy(cores, na->cores, na->n_cores * sizeof(*cores));
    gs_sort(cores, na->n_cores, sizeof(*cores), cmp_u32);
    for (size_t i = 0; i < na->n_cores; i++) {
        socket[i] = cores[i] < SCHED_MAX_CORES ? socket_of[cores[i]] : 0;
        numa[i] = cores[i] < SCHED_MAX_CORES ? numa_of[cores[i]] : 0;
    }
    node.n = na->n_cores;
    for (size_t l = 0; l < m->lt.n_tasks; l++) {
        Gs__TaskAssignment *t = m->lt.tasks[l];
        uint32_t *room = m->cpu_bound + l * m->cpu_stride;
        size_t n = 0;
        int rc = gs_cpu_bind_task(m->cpu_bind, t->local_rank, &node, t->cores, t->n_cores, room, &n,
                                  m->bind_why, sizeof(m->bind_why));

        if (rc < 0) {
            m->bind_rc = rc;
            return;
        }
        t->cores = room;
        t->n_cores = n;
        if (m->cpu_bind->verbose) {
            char line[SCHED_STEP_NOTE_MAX / 2];

            note_binding(line, sizeof(line), m->cpu_bind, na, t);
            sched_step_note_add(m, l, line);
        }
    }
}
