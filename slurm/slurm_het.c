/*
 * slurm_het.c: a heterogeneous job's components as the Slurm views show them
 * (slurm_het.h): each component a job of its own for squeue, sacct and scontrol, and
 * which component's nodes a step ran on, for sacct's step rows.
 */
#include "slurm/slurm_het.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/job_print.h"
#include "common/hostlist.h"
#include "slurm/slurm_fmt.h"

uint32_t slurm_het_count(const Gs__JobInfo *job)
{
    return (uint32_t)job->n_het_nodes;
}

/*
 * The component's CPUs: its cores where the allocation lists them (a running job), else
 * what its shape asks for (the spec, ShowReply only), else the job's CPUs shared by tasks,
 * each component taking the difference of two running shares so that they add up to the
 * job's exactly (QueueReply says no component's shape).
 */
static uint32_t part_cpus(const Gs__JobInfo *whole, uint32_t k, Gs__NodeAllocation *const *alloc,
                          size_t n)
{
    struct gs_het_component shape;
    uint64_t cores = 0, before = 0, upto = 0, total = 0;

    for (size_t i = 0; i < n; i++)
        cores += alloc[i]->n_cores;
    if (cores > 0)
        return (uint32_t)cores;
    if (k < whole->n_het_ncpus) /* gschedd 1.11 says each component's */
        return whole->het_ncpus[k];
    if (cli_job_het_shape(whole->spec, k, &shape) == 0)
        return cli_het_cpus(&shape);
    for (uint32_t i = 0; i < whole->n_het_ntasks; i++) {
        total += whole->het_ntasks[i];
        before += i < k ? whole->het_ntasks[i] : 0;
        upto += i <= k ? whole->het_ntasks[i] : 0;
    }
    if (total == 0)
        return k == 0 ? whole->ncpus : 0;
    return (uint32_t)(whole->ncpus * upto / total - whole->ncpus * before / total);
}

/*
 * Component k's resources: component 0's are the job's; a further one's its HetComponent
 * when the spec is there, else what its first node's allocation shows (GPUs, memory).
 */
static void part_resources(struct slurm_het_part *p, const Gs__JobInfo *whole, uint32_t k)
{
    Gs__Resources *r = &p->res;
    struct gs_het_component c;

    if (whole->resources != NULL)
        *r = *whole->resources;
    else
        gs__resources__init(r);
    r->nodes = whole->het_nodes[k];
    if (k == 0)
        return;
    if (cli_job_het_shape(whole->spec, k, &c) < 0) {
        c = (struct gs_het_component){.nodes = r->nodes, .constraint = ""};
        if (p->job.n_allocation > 0) {
            c.gpus_per_node = (uint32_t)p->job.allocation[0]->n_gpus;
            c.mem_per_node_mib = p->job.allocation[0]->mem_mib;
        }
    }
    r->gpus_per_node = c.gpus_per_node;
    r->cpus_case = c.cpus_per_gpu > 0    ? GS__RESOURCES__CPUS_CPUS_PER_GPU
                   : c.cpus_per_task > 0 ? GS__RESOURCES__CPUS_CPUS_PER_TASK
                                         : GS__RESOURCES__CPUS__NOT_SET;
    if (c.cpus_per_gpu > 0)
        r->cpus_per_gpu = c.cpus_per_gpu;
    else
        r->cpus_per_task = c.cpus_per_task;
    r->mem_per_node_mib = c.mem_per_node_mib;
    r->constraint = c.constraint;
    r->ntasks = c.ntasks;
    r->gpus_per_task = c.gpus_per_task;
}

void slurm_het_part_init(struct slurm_het_part *p, const Gs__JobInfo *whole, uint32_t k)
{
    size_t first, n = cli_job_het_alloc(whole, k, &first);

    p->whole = whole;
    p->offset = k;
    p->job = *whole;
    p->job.allocation = n > 0 ? whole->allocation + first : NULL;
    p->job.n_allocation = n;
    p->job.ntasks = k < whole->n_het_ntasks ? whole->het_ntasks[k] : 0;
    p->job.ncpus = part_cpus(whole, k, p->job.allocation, n);
    p->job.het_nodes = NULL;
    p->job.n_het_nodes = 0;
    p->job.het_ntasks = NULL;
    p->job.n_het_ntasks = 0;
    p->job.het_ncpus = NULL;
    p->job.n_het_ncpus = 0;
    p->job.steps = NULL;
    p->job.n_steps = 0;
    if (k > 0)
        p->job.usage = NULL; /* the whole job's: counted once, on component 0 */
    part_resources(p, whole, k);
    p->job.resources = &p->res;
}

int slurm_het_each(const Gs__JobInfo *job, slurm_het_fn fn, void *ctx)
{
    struct slurm_het_part part;
    int rc = 0;

    if (slurm_het_count(job) == 0)
        return fn(job, NULL, ctx);
    for (uint32_t k = 0; rc >= 0 && k < slurm_het_count(job); k++) {
        slurm_het_part_init(&part, job, k);
        rc = fn(&part.job, &part, ctx);
    }
    return rc;
}

char *slurm_het_job_id(const Gs__JobInfo *job, const struct slurm_het_part *part, char *out,
                       size_t size)
{
    if (part == NULL)
        return slurm_job_id(job, out, size);
    snprintf(out, size, "%llu+%u", (unsigned long long)part->job.job_id, part->offset);
    return out;
}

/* The component whose part of the allocation holds the node named name, or -1. */
static int component_of(const Gs__JobInfo *whole, const char *name)
{
    for (uint32_t k = 0; k < whole->n_het_nodes; k++) {
        size_t first, n = cli_job_het_alloc(whole, k, &first);

        for (size_t i = first; i < first + n; i++) {
            if (strcmp(whole->allocation[i]->node_name, name) == 0)
                return (int)k;
        }
    }
    return -1;
}

int slurm_het_step_view(const Gs__JobInfo *whole, uint32_t k, const Gs__StepInfo *st,
                        Gs__StepInfo *ret_view, struct gs_buf *buf)
{
    const char **mine = NULL;
    char **names = NULL;
    size_t n = 0, nmine = 0;
    bool any = false;
    struct gs_error err;
    int rc = 0;

    gs_error_clear(&err);
    /* A nodelist that does not read as a hostlist matches nothing: component 0 shows it. */
    if (st->nodelist != NULL && st->nodelist[0] != '\0' &&
        gs_hostlist_expand(st->nodelist, &names, &n, &err) == -ENOMEM)
        return -ENOMEM;
    mine = calloc(n + 1, sizeof(*mine));
    if (mine == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        int c = component_of(whole, names[i]);

        any |= c >= 0;
        if (c == (int)k)
            mine[nmine++] = names[i];
    }
    if (!any) {
        if (k == 0)
            *ret_view = *st;
        rc = k == 0;
        goto out;
    }
    if (nmine == 0)
        goto out;
    gs_buf_reset(buf);
    rc = gs_hostlist_compress(mine, nmine, buf);
    if (rc < 0)
        goto out;
    *ret_view = *st;
    ret_view->nodelist = buf->data;
    ret_view->nnodes = (uint32_t)nmine;
    if (nmine < n) /* what it was given is known over all its nodes only */
        ret_view->cpus = ret_view->gpus = 0;
    rc = 1;
out:
    free(mine);
    gs_hostlist_free(names);
    return rc;
}
