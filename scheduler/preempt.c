/*
 * preempt.c: choosing preemption victims (see preempt.h). The search is greedy: cheapest
 * victims are given back in sim one by one until the job is placed, then the chosen ones
 * are taken again, dearest first, and kept running whenever the job still fits without
 * them; when none lets it fit, all are taken again. No copy of the cluster: sim itself is
 * the trial, as give back and take undo each other exactly. A one-node job that did not
 * fit before can only fit on a node a victim gave something back on, so its placements are
 * tried on those nodes alone rather than on the whole cluster; a gang may combine them
 * with others, and is tried everywhere. The candidates are sorted by cost once per pass
 * (sched_preempt_order), not once per preempting job.
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

/* Whether req fits in c away from avoid (NULL: anywhere); with take, it takes its place. */
static bool fits(struct sched_cluster *c, const struct sched_req *req, const uint64_t *avoid,
                 bool take)
{
    struct sched_alloc a;
    int rc;

    sched_alloc_init(&a);
    rc = sched_cluster_place(c, req, avoid, &a);
    if (rc == 0 && take)
        sched_cluster_take(c, &a);
    sched_alloc_release(&a);
    return rc == 0;
}

int sched_preempt_order(struct sched_preempt_cand *cands, size_t ncands,
                        struct sched_preempt_cand ***ret_order)
{
    struct sched_preempt_cand **order = malloc((ncands + 1) * sizeof(*order));

    *ret_order = order;
    if (order == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < ncands; i++)
        order[i] = &cands[i];
    gs_sort(order, ncands, sizeof(*order), by_cost);
    return 0;
}

int sched_preempt_choose(struct sched_cluster *sim, const struct sched_req *req, uint64_t job_id,
                         uint32_t tier, struct sched_preempt_cand *cands, size_t ncands)
{
    struct sched_preempt_cand **order;
    int rc = sched_preempt_order(cands, ncands, &order);

    if (rc == 0)
        rc = sched_preempt_choose_ordered(sim, req, job_id, tier, cands, ncands, order, NULL);
    free(order);
    return rc;
}

/* A victim's nodes: their avoid bits cleared (a one-node job may go there) and their
 * opened bits set. */
static void open_nodes(uint64_t *avoid, uint64_t *opened, const struct sched_alloc *alloc)
{
    for (uint32_t k = 0; k < alloc->nnodes; k++) {
        uint32_t n = alloc->nodes[k].node;

        if (avoid != NULL)
            avoid[n / 64] &= ~(UINT64_C(1) << (n % 64));
        if (opened != NULL)
            opened[n / 64] |= UINT64_C(1) << (n % 64);
    }
}

int sched_preempt_choose_ordered(struct sched_cluster *sim, const struct sched_req *req,
                                 uint64_t job_id, uint32_t tier, struct sched_preempt_cand *cands,
                                 size_t ncands, struct sched_preempt_cand *const *by_cost_order,
                                 uint64_t *opened)
{
    size_t words = sched_cluster_nnodes(sim) / 64 + 1, chosen = 0, cap = 16;
    /* The victims tried, cheapest first: usually a handful of the many candidates. */
    struct sched_preempt_cand **order = malloc(cap * sizeof(*order));
    uint64_t *avoid = req->nodes <= 1 ? malloc(words * sizeof(*avoid)) : NULL;
    int rc = -ENOMEM;

    if (order == NULL || (req->nodes <= 1 && avoid == NULL))
        goto out;
    for (size_t w = 0; avoid != NULL && w < words; w++)
        avoid[w] = opened != NULL ? ~opened[w] : ~UINT64_C(0);
    /* What is already ending for it counts as free. */
    for (size_t i = 0; i < ncands; i++) {
        if (cands[i].preempted_by == job_id) {
            sched_cluster_give_back(sim, cands[i].alloc);
            open_nodes(avoid, opened, cands[i].alloc);
        }
    }
    /* It found no room in the pass: only nodes victims opened can have some now. */
    if (fits(sim, req, opened != NULL ? avoid : NULL, true)) {
        rc = 0;
        goto out;
    }
    rc = -EAGAIN;
    for (size_t i = 0; i < ncands && rc == -EAGAIN; i++) {
        struct sched_preempt_cand *c = by_cost_order[i];

        if (c->tier >= tier || c->preempted_by != 0)
            continue;
        if (chosen == cap) {
            struct sched_preempt_cand **more = realloc(order, 2 * cap * sizeof(*order));

            if (more == NULL) {
                rc = -ENOMEM;
                break;
            }
            order = more;
            cap *= 2;
        }
        order[chosen++] = c;
        sched_cluster_give_back(sim, c->alloc);
        open_nodes(avoid, opened, c->alloc);
        if (fits(sim, req, avoid, false))
            rc = 0;
    }
    if (rc < 0) { /* nothing lets it fit (or no memory): sim as it was */
        for (size_t k = 0; k < chosen; k++)
            sched_cluster_take(sim, order[k]->alloc);
        goto out;
    }
    /* Spare those it can do without, dearest first. */
    for (size_t k = chosen; k-- > 0;) {
        sched_cluster_take(sim, order[k]->alloc);
        if (fits(sim, req, avoid, false))
            order[k] = NULL;
        else
            sched_cluster_give_back(sim, order[k]->alloc);
    }
    rc = 0;
    for (size_t k = 0; k < chosen; k++) {
        if (order[k] == NULL)
            continue;
        order[k]->preempted_by = job_id;
        rc++;
    }
    if (!fits(sim, req, avoid, true))
        rc = -EAGAIN; /* cannot happen: it fit on sim as it is now */
out:
    free(avoid);
    free(order);
    return rc;
}
