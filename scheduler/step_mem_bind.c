/*
 * step_mem_bind.c: srun's --mem-bind applied to a step's tasks (common/mem_bind.h). When the
 * step's LaunchTasks is built (step_plan.c), after --cpu-bind has settled each task's cores,
 * this gives each task a memory policy and its NUMA nodes (TaskAssignment.mem_policy,
 * mem_nodes) from the node's reported topology: the nodes of its cores (local), of its
 * rank, or of the map or mask. The worker sets the policy when it binds at all (its
 * topology is the machine's). Every node's tasks are bound once before the step is
 * answered, so a NUMA node the node lacks refuses the step. With "verbose," each task's
 * stderr starts with its policy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/steps_internal.h"

#define NUMA_BITS 64 /* --mem-bind names NUMA nodes 0-63 */

int sched_step_mem_bind_prepare(const Gs__StepLaunchRequest *req, const struct sched_step *st,
                                struct sched_step_msg *m)
{
    size_t most_tasks = 0;

    if (req->mem_bind == NULL || req->mem_bind[0] == '\0')
        return 0;
    m->mem_bind = calloc(1, sizeof(*m->mem_bind));
    if (m->mem_bind == NULL)
        return -ENOMEM;
    if (gs_mem_bind_parse(req->mem_bind, m->mem_bind, m->bind_why, sizeof(m->bind_why)) < 0)
        return -EINVAL;
    for (uint32_t i = 0; i < st->nnodes; i++)
        most_tasks = m->nodes[i].ntasks > most_tasks ? m->nodes[i].ntasks : most_tasks;
    m->mem_bound = calloc(most_tasks * NUMA_BITS + 1, sizeof(*m->mem_bound));
    if (m->mem_bound == NULL)
        return -ENOMEM;
    if (m->mem_bind->verbose && m->notes == NULL &&
        (m->notes = calloc(most_tasks + 1, SCHED_STEP_NOTE_MAX)) == NULL)
        return -ENOMEM;
    return 0;
}

/* The NUMA nodes (below 64) of n cores, as a mask. */
static uint64_t numa_mask(const uint32_t *numa_of, const uint32_t *cores, size_t n)
{
    uint64_t mask = 0;

    for (size_t i = 0; i < n; i++)
        if (cores[i] < SCHED_MAX_CORES && numa_of[cores[i]] < NUMA_BITS)
            mask |= 1ull << numa_of[cores[i]];
    return mask;
}

static const char *kind_word(const struct gs_mem_bind *b)
{
    switch (b->kind) {
    case GS_MEM_BIND_NONE:
        return "NONE";
    case GS_MEM_BIND_LOCAL:
        return "LOC";
    case GS_MEM_BIND_RANK:
        return "RANK";
    case GS_MEM_BIND_MAP:
        return "MAP";
    default:
        return "MASK";
    }
}

void sched_step_mem_bind_tasks(struct sched_step_msg *m, const Gs__NodeAllocation *na)
{
    const Gs__NodeTopology *topo;
    uint32_t socket_of[SCHED_MAX_CORES], numa_of[SCHED_MAX_CORES];
    uint64_t node_numa = 0, step_numa;

    if (m->mem_bind == NULL)
        return;
    topo = m->topos[na - m->nodes];
    sched_step_core_places(topo, socket_of, numa_of);
    for (size_t k = 0; topo != NULL && k < topo->n_numa_nodes; k++)
        if (topo->numa_nodes[k]->os_index < NUMA_BITS)
            node_numa |= 1ull << topo->numa_nodes[k]->os_index;
    step_numa = numa_mask(numa_of, na->cores, na->n_cores);
    for (size_t l = 0; l < m->lt.n_tasks; l++) {
        Gs__TaskAssignment *t = m->lt.tasks[l];
        uint32_t *room = m->mem_bound + l * NUMA_BITS;
        /* an unbound task's "local" is where the step's cores on the node are */
        uint64_t own = t->n_cores > 0 ? numa_mask(numa_of, t->cores, t->n_cores) : step_numa, mask;
        int rc = gs_mem_bind_task(m->mem_bind, t->local_rank, own, node_numa, &mask, m->bind_why,
                                  sizeof(m->bind_why));

        if (rc < 0) {
            m->bind_rc = rc;
            return;
        }
        t->n_mem_nodes = 0;
        t->mem_nodes = room;
        for (uint64_t b = mask; b != 0; b &= b - 1)
            room[t->n_mem_nodes++] = (uint32_t)__builtin_ctzll(b);
        t->mem_policy = m->mem_bind->kind == GS_MEM_BIND_DEFAULT
                            ? GS__MEM_POLICY__MEM_POLICY_DEFAULT
                        : m->mem_bind->kind == GS_MEM_BIND_NONE ? GS__MEM_POLICY__MEM_POLICY_NONE
                        : mask == 0                             ? GS__MEM_POLICY__MEM_POLICY_DEFAULT
                        : m->mem_bind->prefer                   ? GS__MEM_POLICY__MEM_POLICY_PREFER
                                                                : GS__MEM_POLICY__MEM_POLICY_BIND;
        if (m->mem_bind->verbose) {
            char line[SCHED_STEP_NOTE_MAX / 2];

            if (t->mem_policy == GS__MEM_POLICY__MEM_POLICY_NONE ||
                t->mem_policy == GS__MEM_POLICY__MEM_POLICY_DEFAULT)
                snprintf(line, sizeof(line), "mem-bind=%s - %s, task %2u %2u: %s",
                         kind_word(m->mem_bind), na->node_name, t->rank, t->local_rank,
                         t->mem_policy == GS__MEM_POLICY__MEM_POLICY_NONE
                             ? "no policy"
                             : "the NUMA nodes of its cores, preferred");
            else
                snprintf(line, sizeof(line), "mem-bind=%s%s - %s, task %2u %2u: mask 0x%llX set",
                         kind_word(m->mem_bind), m->mem_bind->prefer ? ",PREFER" : "",
                         na->node_name, t->rank, t->local_rank, (unsigned long long)mask);
            sched_step_note_add(m, l, line);
        }
    }
}
