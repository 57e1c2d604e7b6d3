/*
 * jobspec_het.c: heterogeneous jobs' components (jobspec.h): one job whose nodes come in
 * several shapes (sbatch's "#SBATCH hetjob" lines). A component is only a node shape and a
 * task layout; everything else belongs to the whole job, so each component is seen as the
 * job's spec with its own resource fields (a view), and the per-node rules written for
 * ordinary jobs apply to it unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobspec.h"

void gs_jobspec_het_view(const struct gs_jobspec *spec, uint32_t k, struct gs_jobspec *view)
{
    const struct gs_het_component *c = k > 0 && k <= spec->nhet ? &spec->het[k - 1] : NULL;

    *view = *spec;
    view->het = NULL;
    view->nhet = 0;
    if (c == NULL)
        return;

    view->nodes = c->nodes;
    view->gpus_per_node = c->gpus_per_node;
    view->cpus_per_gpu = c->cpus_per_gpu;
    view->cpus_per_task = c->cpus_per_task;
    view->mem_per_node_mib = c->mem_per_node_mib;
    view->constraint = c->constraint;
    view->tasks_per_node = c->tasks_per_node;
    view->tasks_per_gpu = c->tasks_per_gpu;
    view->ntasks = c->ntasks;
    view->gpus_per_task = c->gpus_per_task;
}

uint32_t gs_jobspec_het_first_node(const struct gs_jobspec *spec, uint32_t k)
{
    uint32_t first = k > 0 ? spec->nodes : 0;

    for (uint32_t i = 1; i < k && i <= spec->nhet; i++)
        first += spec->het[i - 1].nodes;
    return first;
}

uint32_t gs_jobspec_total_nodes(const struct gs_jobspec *spec)
{
    return gs_jobspec_het_first_node(spec, spec->nhet + 1);
}

uint32_t gs_jobspec_total_gpus(const struct gs_jobspec *spec)
{
    uint32_t n = spec->nodes * spec->gpus_per_node;

    for (uint32_t k = 0; k < spec->nhet; k++)
        n += spec->het[k].nodes * spec->het[k].gpus_per_node;
    return n;
}

uint32_t gs_jobspec_het_of_node(const struct gs_jobspec *spec, uint32_t node)
{
    uint32_t end = spec->nodes;

    for (uint32_t k = 0; k < spec->nhet; k++) {
        if (node < end)
            return k;
        end += spec->het[k].nodes;
    }
    return node < end ? spec->nhet : 0;
}

void gs_jobspec_het_clear(struct gs_jobspec *spec)
{
    for (uint32_t k = 0; k < spec->nhet; k++)
        free(spec->het[k].constraint);
    free(spec->het);
    spec->het = NULL;
    spec->nhet = 0;
}

/* What a heterogeneous job cannot be: each is one whole-job rule of its own. */
static int check_whole(const struct gs_jobspec *s, struct gs_error *err)
{
    uint64_t nodes = 0;

    if (s->nhet + 1 > GS_JOBSPEC_HET_MAX)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "a heterogeneous job has at most %d components, not %u",
                            GS_JOBSPEC_HET_MAX, s->nhet + 1);
    if (!s->batch && !s->allocation)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "heterogeneous components need a batch script (gsched sbatch) or "
                            "an allocation (salloc): their steps say where each part runs");
    if (s->array.ntask_ids > 0 || s->array.array_job_id != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "a heterogeneous job cannot be a job array");
    if (s->nnodelist > 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "resources.nodelist (sbatch -w) is not taken by heterogeneous "
                            "jobs; use constraints or --exclude");
    if (s->data.manifest != NULL || s->data.id[0] != '\0')
        return gs_error_set(err, -EINVAL, 0, 0, "a heterogeneous job cannot read a dataset");
    for (uint32_t k = 0; k <= s->nhet; k++)
        nodes += k == 0 ? s->nodes : s->het[k - 1].nodes;
    if (nodes > GS_JOBSPEC_NODES_MAX)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "the components ask for %llu nodes in all; at "
                            "most %d",
                            (unsigned long long)nodes, GS_JOBSPEC_NODES_MAX);
    return 0;
}

int gs_jobspec_het_check(const struct gs_jobspec *s, struct gs_error *err)
{
    int rc;

    if (s->nhet == 0)
        return 0;
    if (s->het == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "heterogeneous components are missing");
    rc = check_whole(s, err);
    for (uint32_t k = 1; rc == 0 && k <= s->nhet; k++) {
        struct gs_jobspec view;
        struct gs_error one = {0};

        gs_jobspec_het_view(s, k, &view);
        rc = gs_jobspec_check(&view, &one);
        if (rc < 0)
            gs_error_set(err, rc, 0, 0, "het component %u: %s", k, one.msg);
    }
    return rc;
}
