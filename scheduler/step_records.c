/*
 * step_records.c: the job steps gschedd has in memory (sched_steps.c): the running ones in
 * s->steps, and per running job with steps its record (s->step_seqs: step numbers, what its
 * steps hold, those waiting). Finding them, making a job's record with its first step (where
 * its nodes keep their GPUs and cores, from the workers' topology), and freeing: a freed
 * step gives back what it holds and clears its CLI's pointer to it; retrying the job's
 * waiting steps is the caller's.
 */
#include <stdlib.h>

#include "scheduler/step_acct.h"
#include "scheduler/steps_internal.h"

/* --- bookkeeping ---------------------------------------------------------------------------- */

struct sched_step *sched_step_find(struct sched_ctx *s, uint64_t job_id, uint32_t step)
{
    for (struct sched_step *st = s->steps; st != NULL; st = st->next) {
        if (st->job_id == job_id && st->step == step)
            return st;
    }
    return NULL;
}

struct sched_step_seq *sched_step_seq_find(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_step_seq *q = s->step_seqs; q != NULL; q = q->next) {
        if (q->job_id == job_id)
            return q;
    }
    return NULL;
}

/* Where node i of the job keeps its GPUs and cores, from its worker's topology. */
static void set_numa(struct sched_ctx *s, const struct sched_job *job, uint32_t i,
                     struct sched_step_alloc *held)
{
    uint32_t index = job->alloc.nodes[i].node;
    const Gs__NodeTopology *t = index < s->nnodes ? s->nodes[index]->topology : NULL;
    int16_t gpu_numa[SCHED_MAX_GPUS], core_numa[SCHED_MAX_CORES];

    if (t == NULL)
        return;
    for (size_t g = 0; g < SCHED_MAX_GPUS; g++)
        gpu_numa[g] = -1;
    for (size_t c = 0; c < SCHED_MAX_CORES; c++)
        core_numa[c] = -1;
    for (size_t g = 0; g < t->n_gpus; g++) {
        if (t->gpus[g]->index < SCHED_MAX_GPUS && t->gpus[g]->numa_node < INT16_MAX)
            gpu_numa[t->gpus[g]->index] = (int16_t)t->gpus[g]->numa_node;
    }
    for (size_t k = 0; k < t->n_numa_nodes; k++) {
        const Gs__NumaNode *nn = t->numa_nodes[k];

        for (size_t c = 0; nn->os_index < INT16_MAX && c < nn->n_cores; c++) {
            if (nn->cores[c] < SCHED_MAX_CORES)
                core_numa[nn->cores[c]] = (int16_t)nn->os_index;
        }
    }
    sched_step_alloc_set_numa(held, i, gpu_numa, SCHED_MAX_GPUS, core_numa, SCHED_MAX_CORES);
}

/* The job's step record, made with its first step; NULL when out of memory. */
struct sched_step_seq *sched_step_seq_get(struct sched_ctx *s, const struct sched_job *job)
{
    struct sched_step_seq *q = sched_step_seq_find(s, job->id);

    if (q != NULL)
        return q;
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->held = sched_step_alloc_new(job->alloc.nodes, job->alloc.nnodes);
    if (q->held == NULL) {
        free(q);
        return NULL;
    }
    for (uint32_t i = 0; i < job->alloc.nnodes; i++)
        set_numa(s, job, i, q->held);
    /* After a restart the numbers go on from the attempt's last step, which sacct keeps. */
    for (uint32_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].attempt == job->attempt && job->steps[i].step > q->last)
            q->last = job->steps[i].step;
    }
    q->job_id = job->id;
    q->next = s->step_seqs;
    s->step_seqs = q;
    return q;
}

void sched_step_unlink(struct sched_step **head, struct sched_step *st)
{
    for (struct sched_step **p = head; *p != NULL; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            return;
        }
    }
}

/* Unlinks and frees st, giving back what it holds; the caller retries the queue. */
void sched_step_free(struct sched_ctx *s, struct sched_step *st)
{
    struct sched_step_seq *q = sched_step_seq_find(s, st->job_id);

    if (st->waiting && q != NULL)
        sched_step_unlink(&q->waiting, st);
    else if (!st->waiting)
        sched_step_unlink(&s->steps, st);
    if (st->grants != NULL && q != NULL)
        sched_step_alloc_give_back(q->held, st->grants);
    if (st->cli != NULL)
        st->cli->step = NULL;
    sched_step_destroy(st);
}

void sched_step_destroy(struct sched_step *st)
{
    if (st->req != NULL)
        gs__step_launch_request__free_unpacked(st->req, NULL);
    sched_step_pmix_free(st);
    for (uint32_t r = 0; st->exits != NULL && r < st->ntasks; r++) {
        if (st->exits[r] != NULL)
            gs__task_exit__free_unpacked(st->exits[r], NULL);
    }
    free(st->exits);
    free(st->grants);
    free(st->exited);
    free(st->ranks);
    free(st->nodes);
    free(st);
}

void sched_step_seq_forget(struct sched_ctx *s, uint64_t job_id)
{
    for (struct sched_step_seq **p = &s->step_seqs; *p != NULL; p = &(*p)->next) {
        if ((*p)->job_id == job_id) {
            struct sched_step_seq *q = *p;

            while (q->waiting != NULL)
                sched_step_free(s, q->waiting);
            *p = q->next;
            sched_step_alloc_free(q->held);
            free(q);
            return;
        }
    }
}

void sched_steps_free(struct sched_ctx *s)
{
    while (s->steps != NULL)
        sched_step_free(s, s->steps);
    while (s->step_seqs != NULL)
        sched_step_seq_forget(s, s->step_seqs->job_id);
}

bool sched_steps_known(struct sched_ctx *s, uint64_t job_id, uint32_t step)
{
    return sched_step_find(s, job_id, step) != NULL;
}
