/*
 * preempt.c: choosing preemption victims (see preempt.h). The search is greedy: cheapest
 * victims are given back in sim one by one until the job is placed, then the chosen ones
 * are taken again, dearest first, and kept running whenever the job still fits without
 * them; when none lets it fit, all are taken again. No copy of the cluster: sim itself is
 * the trial, as give back and take undo each other exactly. A one-node job that did not
 * fit before can only fit on a node a victim gave something back on, so its placements are
 * tried on those nodes alone rather than on the whole cluster; a gang may combine them
 * with others, and is tried everywhere. The candidates are sorted by cost once per pass
 * (sched_preempt_order), not once per preempting job. Licenses ride along: a victim given
 * back adds its counts to the free ones, taken again takes them out; "fits" means the
 * placement and the counts both. While its nodes already fit, only holders of a license it
 * still lacks are tried.
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
        cores += sched_node_alloc_cores(&alloc->nodes[i]);
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
        rc = sched_preempt_choose_ordered(sim, req, job_id, tier, cands, ncands, order, NULL, NULL);
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

/* Whether what is free of each license covers what the job needs (no licenses: yes). */
static bool lic_ok(const struct sched_preempt_lic *lic)
{
    for (uint32_t k = 0; lic != NULL && k < lic->nneed; k++) {
        if (lic->free[lic->need[k].license] < (int64_t)lic->need[k].count)
            return false;
    }
    return true;
}

/* Whether c holds some of a license the job still lacks. */
static bool lic_helps(const struct sched_preempt_lic *lic, const struct sched_preempt_cand *c)
{
    for (uint32_t k = 0; lic != NULL && k < lic->nneed; k++) {
        if (lic->free[lic->need[k].license] >= (int64_t)lic->need[k].count)
            continue;
        for (uint32_t h = 0; h < c->nlicenses; h++) {
            if (c->licenses[h].license == lic->need[k].license)
                return true;
        }
    }
    return false;
}

/* Counts moved by sign: a victim's given back (+1) or taken again (-1), the job's (-1). */
static void lic_move(const struct sched_preempt_lic *lic, const struct sched_license_need *v,
                     uint32_t n, int64_t sign)
{
    for (uint32_t k = 0; lic != NULL && k < n; k++)
        lic->free[v[k].license] += sign * (int64_t)v[k].count;
}

/* c's resources and licenses given back in sim; its nodes opened. */
static void release(struct sched_cluster *sim, const struct sched_preempt_lic *lic, uint64_t *avoid,
                    uint64_t *opened, const struct sched_preempt_cand *c)
{
    sched_cluster_give_back(sim, c->alloc);
    open_nodes(avoid, opened, c->alloc);
    lic_move(lic, c->licenses, c->nlicenses, 1);
}

static void retake(struct sched_cluster *sim, const struct sched_preempt_lic *lic,
                   const struct sched_preempt_cand *c)
{
    sched_cluster_take(sim, c->alloc);
    lic_move(lic, c->licenses, c->nlicenses, -1);
}

/* The job placed and its licenses claimed, where both fit now; whether they did. */
static bool claim(struct sched_cluster *sim, const struct sched_req *req, const uint64_t *avoid,
                  const struct sched_preempt_lic *lic)
{
    if (!lic_ok(lic) || !fits(sim, req, avoid, true))
        return false;
    if (lic != NULL)
        lic_move(lic, lic->need, lic->nneed, -1);
    return true;
}

int sched_preempt_choose_ordered(struct sched_cluster *sim, const struct sched_req *req,
                                 uint64_t job_id, uint32_t tier, struct sched_preempt_cand *cands,
                                 size_t ncands, struct sched_preempt_cand *const *by_cost_order,
                                 uint64_t *opened, const struct sched_preempt_lic *lic)
{
    size_t words = sched_cluster_nnodes(sim) / 64 + 1, chosen = 0, cap = 16;
    /* The victims tried, cheapest first: usually a handful of the many candidates. */
    struct sched_preempt_cand **order = malloc(cap * sizeof(*order));
    bool narrow = req->nodes <= 1 && (lic == NULL || !lic->anywhere), nodes_fit;
    uint64_t *avoid = narrow ? malloc(words * sizeof(*avoid)) : NULL;
    int rc = -ENOMEM;

    if (order == NULL || (narrow && avoid == NULL))
        goto out;
    for (size_t w = 0; avoid != NULL && w < words; w++)
        avoid[w] = opened != NULL ? ~opened[w] : ~UINT64_C(0);
    /* What is already ending for it counts as free. */
    for (size_t i = 0; i < ncands; i++) {
        if (cands[i].preempted_by == job_id)
            release(sim, lic, avoid, opened, &cands[i]);
    }
    /* It found no room in the pass: only nodes victims opened can have some now. */
    if (claim(sim, req, opened != NULL ? avoid : NULL, lic)) {
        rc = 0;
        goto out;
    }
    rc = -EAGAIN;
    /* Only a job short of licenses asks whether its nodes fit already (a placement less). */
    nodes_fit = !lic_ok(lic) && fits(sim, req, avoid, false);
    for (size_t i = 0; i < ncands && rc == -EAGAIN; i++) {
        struct sched_preempt_cand *c = by_cost_order[i];

        if (c->tier >= tier || c->preempted_by != 0 || (nodes_fit && !lic_helps(lic, c)))
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
        release(sim, lic, avoid, opened, c);
        nodes_fit = fits(sim, req, avoid, false);
        if (nodes_fit && lic_ok(lic))
            rc = 0;
    }
    if (rc < 0) { /* nothing lets it fit (or no memory): sim as it was */
        for (size_t k = 0; k < chosen; k++)
            retake(sim, lic, order[k]);
        goto out;
    }
    /* Spare those it can do without, dearest first. */
    for (size_t k = chosen; k-- > 0;) {
        retake(sim, lic, order[k]);
        if (lic_ok(lic) && fits(sim, req, avoid, false))
            order[k] = NULL;
        else
            release(sim, lic, NULL, NULL, order[k]);
    }
    rc = 0;
    for (size_t k = 0; k < chosen; k++) {
        if (order[k] == NULL)
            continue;
        order[k]->preempted_by = job_id;
        rc++;
    }
    if (!claim(sim, req, avoid, lic))
        rc = -EAGAIN; /* cannot happen: it fit on sim as it is now */
out:
    free(avoid);
    free(order);
    return rc;
}
