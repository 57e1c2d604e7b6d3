/*
 * preempt.c: choosing preemption victims (see preempt.h). The search is greedy, on a copy
 * of the cluster so that nothing is given back in sim until the choice is made: cheapest
 * victims are released one by one until the job is placed, then the chosen ones are tried
 * again, dearest first, and kept running whenever the job still fits without them.
 */
#include "scheduler/preempt.h"

#include <errno.h>
#include <stdlib.h>

#include "common/sort.h"

double sched_preempt_cost(const struct sched_alloc *alloc, uint64_t start_ms, uint64_t ckpt_ms,
                          uint64_t now_ms)
{
    uint64_t since = ckpt_ms > start_ms ? ckpt_ms : start_ms, gpus = 0, cores = 0;

    for (uint32_t i = 0; i < alloc->nnodes; i++) {
        gpus += (uint64_t)__builtin_popcountll(alloc->nodes[i].gpus);
        for (size_t w = 0; w < SCHED_MAX_CORES / 64; w++)
            cores += (uint64_t)__builtin_popcountll(alloc->nodes[i].cores[w]);
    }
    return (double)(gpus > 0 ? gpus : cores) * (double)(now_ms > since ? now_ms - since : 0) /
           1000.0;
}

static int by_cost(const void *pa, const void *pb)
{
    const struct sched_preempt_cand *a = *(const struct sched_preempt_cand *const *)pa;
    const struct sched_preempt_cand *b = *(const struct sched_preempt_cand *const *)pb;

    if (a->cost != b->cost)
        return a->cost < b->cost ? -1 : 1;
    return a->job_id < b->job_id ? -1 : a->job_id > b->job_id;
}

static bool fits(const struct sched_cluster *c, const struct sched_req *req)
{
    struct sched_alloc a;
    int rc;

    sched_alloc_init(&a);
    rc = sched_cluster_place(c, req, NULL, &a);
    sched_alloc_release(&a);
    return rc == 0;
}

/* Takes the job's place in sim (after its victims went back there). */
static int take_place(struct sched_cluster *sim, const struct sched_req *req)
{
    struct sched_alloc a;
    int rc;

    sched_alloc_init(&a);
    rc = sched_cluster_place(sim, req, NULL, &a);
    if (rc == 0)
        sched_cluster_take(sim, &a);
    sched_alloc_release(&a);
    return rc;
}

int sched_preempt_choose(struct sched_cluster *sim, const struct sched_req *req, uint64_t job_id,
                         uint32_t tier, struct sched_preempt_cand *cands, size_t ncands)
{
    struct sched_preempt_cand **order = calloc(ncands + 1, sizeof(*order));
    struct sched_cluster *trial = NULL;
    size_t n = 0, chosen = 0;
    int rc = -ENOMEM;

    if (order == NULL)
        goto out;
    /* What is already ending for it counts as free. */
    for (size_t i = 0; i < ncands; i++) {
        if (cands[i].preempted_by == job_id)
            sched_cluster_give_back(sim, cands[i].alloc);
    }
    if (fits(sim, req)) {
        rc = take_place(sim, req) == 0 ? 0 : -EAGAIN;
        goto out;
    }
    for (size_t i = 0; i < ncands; i++) {
        if (cands[i].tier < tier && cands[i].preempted_by == 0)
            order[n++] = &cands[i];
    }
    gs_sort(order, n, sizeof(*order), by_cost);
    trial = sched_cluster_copy(sim);
    if (trial == NULL)
        goto out;
    rc = -EAGAIN;
    for (; chosen < n; chosen++) {
        sched_cluster_give_back(trial, order[chosen]->alloc);
        if (fits(trial, req)) {
            chosen++;
            rc = 0;
            break;
        }
    }
    if (rc < 0)
        goto out;
    /* Spare those it can do without, dearest first. */
    for (size_t k = chosen; k-- > 0;) {
        sched_cluster_take(trial, order[k]->alloc);
        if (fits(trial, req))
            order[k] = NULL;
        else
            sched_cluster_give_back(trial, order[k]->alloc);
    }
    rc = 0;
    for (size_t k = 0; k < chosen; k++) {
        if (order[k] == NULL)
            continue;
        order[k]->preempted_by = job_id;
        sched_cluster_give_back(sim, order[k]->alloc);
        rc++;
    }
    if (take_place(sim, req) < 0)
        rc = -EAGAIN; /* cannot happen: trial is sim with the same jobs given back */
out:
    sched_cluster_free(trial);
    free(order);
    return rc;
}
