/*
 * plan.c: priority order, gang placement and EASY backfill (see plan.h).
 *
 * The reservation is computed on a copy of the cluster: running jobs are released in the
 * order of their end times until the blocked job fits. Started jobs join the list of
 * running ones so later reservations see them. A job waiting for its data's nodes may hold
 * the reservation too, on those nodes (hold_data_nodes).
 */
#include "scheduler/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

struct pass {
    struct sched_cluster *cluster;
    const struct sched_pending *pending;
    struct sched_verdict *verdicts;
    uint64_t now_s;
    struct sched_running *running; /* input jobs, then those started in this pass */
    size_t nrunning;
    const struct sched_pending *head; /* the blocked job holding the reservation */
    uint64_t head_data; /* > 0: head waits for its data's nodes, to hold this many bytes */
    uint64_t shadow_s;
    uint64_t *reserved; /* bitmap of the nodes the reservation uses */
    size_t words;
    const struct sched_plan_gate *gate;
};

static const char *const reason_names[] = {"None", "Resources", "Priority", "QOSLimit",
                                           "DataNodesBusy"};

const char *sched_reason_name(enum sched_reason reason)
{
    return (int)reason >= 0 && reason <= SCHED_REASON_DATA ? reason_names[reason] : "Unknown";
}

void sched_verdicts_init(struct sched_verdict *v, size_t n)
{
    memset(v, 0, n * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        sched_alloc_init(&v[i].alloc);
}

void sched_verdicts_release(struct sched_verdict *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sched_alloc_release(&v[i].alloc);
}

/* Sort keys copied out of the pending jobs, so qsort needs no context pointer. */
struct order_key {
    uint32_t tier;
    int32_t priority;
    uint64_t submit_seq;
    size_t index;
};

static int by_priority(const void *pa, const void *pb)
{
    const struct order_key *a = pa, *b = pb;

    if (a->tier != b->tier)
        return a->tier > b->tier ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->submit_seq != b->submit_seq)
        return a->submit_seq < b->submit_seq ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int by_end(const void *pa, const void *pb)
{
    const struct sched_running *a = pa, *b = pb;

    return a->end_s < b->end_s ? -1 : a->end_s > b->end_s;
}

static uint64_t end_of(const struct pass *p, const struct sched_pending *job)
{
    if (job->time_limit_s == SCHED_TIME_INFINITE || job->time_limit_s > UINT64_MAX - p->now_s)
        return SCHED_TIME_INFINITE;
    return p->now_s + job->time_limit_s;
}

/*
 * Earliest time job fits if the running jobs end at their limits, on sim (a copy of the
 * cluster, holding what p->running holds). With data > 0, the earliest time it fits with
 * its data first on nodes holding that many bytes of its dataset. Writes the nodes it would
 * use into reserved (when not NULL).
 */
static int shadow_time(const struct pass *p, struct sched_cluster *sim,
                       const struct sched_pending *job, uint64_t data, uint64_t *ret_shadow,
                       uint64_t *reserved)
{
    struct sched_running *order = malloc((p->nrunning + 1) * sizeof(*order));
    struct sched_req req = job->req;
    struct sched_alloc alloc;
    int rc = 0;

    if (order == NULL)
        return -ENOMEM;
    memcpy(order, p->running, p->nrunning * sizeof(*order));
    gs_sort(order, p->nrunning, sizeof(*order), by_end);
    req.data_first = req.data_first || data > 0;
    sched_alloc_init(&alloc);
    *ret_shadow = SCHED_TIME_INFINITE;
    for (size_t i = 0; i < p->nrunning; i++) {
        if (order[i].end_s == SCHED_TIME_INFINITE)
            break;
        sched_cluster_give_back(sim, order[i].alloc);
        if (i + 1 < p->nrunning && order[i + 1].end_s == order[i].end_s)
            continue; /* release everything that ends at the same moment first */
        rc = sched_cluster_place(sim, &req, NULL, &alloc);
        if (rc == -EAGAIN || (rc == 0 && sched_cluster_data_at(&req, &alloc) < data)) {
            rc = -EAGAIN;
            continue;
        }
        if (rc < 0)
            break;
        *ret_shadow = order[i].end_s;
        for (uint32_t k = 0; reserved != NULL && k < alloc.nnodes; k++)
            reserved[alloc.nodes[k].node / 64] |= UINT64_C(1) << (alloc.nodes[k].node % 64);
        break;
    }
    sched_alloc_release(&alloc);
    free(order);
    return rc == -EAGAIN ? 0 : rc;
}

static bool uses_reserved(const struct pass *p, const struct sched_alloc *alloc)
{
    for (uint32_t k = 0; k < alloc->nnodes; k++) {
        uint32_t n = alloc->nodes[k].node;
        if ((p->reserved[n / 64] >> (n % 64)) & 1)
            return true;
    }
    return false;
}

/* Would starting job now (at alloc) push the reservation later? Exact, by simulation. */
static int delays_head(struct pass *p, const struct sched_pending *job,
                       const struct sched_alloc *alloc, bool *ret_delays)
{
    struct sched_cluster *sim = sched_cluster_copy(p->cluster);
    uint64_t shadow;
    int rc;

    if (sim == NULL)
        return -ENOMEM;
    sched_cluster_take(sim, alloc);
    p->running[p->nrunning] = (struct sched_running){job->job_id, end_of(p, job), alloc};
    p->nrunning++;
    rc = shadow_time(p, sim, p->head, p->head_data, &shadow, NULL);
    p->nrunning--;
    sched_cluster_free(sim);
    if (rc == 0)
        *ret_delays = shadow > p->shadow_s;
    return rc;
}

static int set_head(struct pass *p, const struct sched_pending *job)
{
    struct sched_cluster *sim = sched_cluster_copy(p->cluster);
    int rc;

    if (sim == NULL)
        return -ENOMEM;
    p->head = job;
    rc = shadow_time(p, sim, job, 0, &p->shadow_s, p->reserved);
    sched_cluster_free(sim);
    return rc;
}

/*
 * A job waiting for its data's nodes (held back: they are busy) holds the reservation when
 * no job does yet, on those nodes from when enough of them free, if that comes before its
 * wait ends (until): the jobs behind it may take them only if done by then, so a stream of
 * smaller jobs cannot keep them busy until its wait runs out. Past its wait the job goes
 * wherever it fits and needs no reservation of its data's nodes.
 */
static int hold_data_nodes(struct pass *p, const struct sched_pending *job, uint64_t best,
                           uint64_t until)
{
    struct sched_cluster *sim;
    uint64_t shadow;
    int rc;

    if (p->head != NULL)
        return 0;
    sim = sched_cluster_copy(p->cluster);
    if (sim == NULL)
        return -ENOMEM;
    rc = shadow_time(p, sim, job, best, &shadow, p->reserved);
    sched_cluster_free(sim);
    if (rc == 0 && shadow <= until) {
        p->head = job;
        p->head_data = best;
        p->shadow_s = shadow;
    } else {
        memset(p->reserved, 0, p->words * sizeof(uint64_t));
    }
    return rc;
}

/*
 * May job, which fits now at alloc, start without delaying the reservation? If the chosen
 * nodes would delay it, the job may still run on nodes outside the reservation; alloc is
 * then rewritten to those.
 */
static int may_backfill(struct pass *p, const struct sched_pending *job, struct sched_alloc *alloc,
                        bool *ret_ok)
{
    bool delays = false;
    int rc;

    *ret_ok = true;
    if (end_of(p, job) <= p->shadow_s || !uses_reserved(p, alloc))
        return 0;
    rc = delays_head(p, job, alloc, &delays);
    if (rc < 0 || !delays)
        return rc;
    rc = sched_cluster_place(p->cluster, &job->req, p->reserved, alloc);
    *ret_ok = rc == 0;
    return rc == -EAGAIN ? 0 : rc;
}

/* Seconds a copy of bytes takes at rate bytes/s (rate > 0), rounded up. */
static uint64_t copy_s(uint64_t bytes, uint64_t rate)
{
    return bytes / rate + (bytes % rate != 0);
}

/*
 * Delay scheduling, for a job still within its data_locality_wait that fits now at alloc:
 * ok when alloc holds as much of its dataset as its data's best nodes could, or when a
 * placement with data before fit reaches that (alloc becomes the placement holding more:
 * the job takes its data's nodes while they are free, even over a tighter fit). Else its
 * data's nodes are busy and the job waits for them, letting the jobs behind it go by, until
 * *ret_until: its data_wait_until_s or, with a data_copy_rate, once it has waited as long
 * as copying the bytes alloc lacks would take, if sooner. Waiting that long and no longer
 * (ski rental) never costs more than twice the better of waiting and copying would have.
 * *ret_best: the bytes its data's best nodes hold.
 */
static int near_data(struct pass *p, const struct sched_pending *job, struct sched_alloc *alloc,
                     bool *ret_ok, uint64_t *ret_best, uint64_t *ret_until)
{
    uint64_t best = sched_cluster_data_best(p->cluster, &job->req);
    uint64_t have = sched_cluster_data_at(&job->req, alloc);
    struct sched_req req = job->req;
    struct sched_alloc near;
    int rc = 0;

    *ret_best = best;
    *ret_until = job->data_wait_until_s;
    sched_alloc_init(&near);
    if (have < best && !req.data_first) {
        req.data_first = true;
        rc = sched_cluster_place(p->cluster, &req, NULL, &near);
        if (rc == 0 && sched_cluster_data_at(&req, &near) > have) {
            struct sched_alloc t = *alloc;

            *alloc = near; /* swapped: near releases what alloc held */
            near = t;
            have = sched_cluster_data_at(&req, alloc);
        }
    }
    if (have < best && job->data_copy_rate > 0 &&
        job->data_wait_from_s + copy_s(best - have, job->data_copy_rate) < *ret_until)
        *ret_until = job->data_wait_from_s + copy_s(best - have, job->data_copy_rate);
    *ret_ok = have >= best || p->now_s >= *ret_until;
    sched_alloc_release(&near);
    return rc == -EAGAIN ? 0 : rc;
}

static void start(struct pass *p, const struct sched_pending *job, struct sched_verdict *v)
{
    if (p->gate != NULL && p->gate->started != NULL)
        p->gate->started(p->gate->data, (size_t)(job - p->pending));
    sched_cluster_take(p->cluster, &v->alloc);
    v->start = true;
    v->backfilled = p->head != NULL;
    v->reason = SCHED_REASON_NONE;
    p->running[p->nrunning++] = (struct sched_running){job->job_id, end_of(p, job), &v->alloc};
}

/* A job that fits but waits this pass, for reason: its placement is dropped. */
static int held_back(struct sched_verdict *v, enum sched_reason reason)
{
    v->reason = reason;
    v->alloc.nnodes = 0;
    return 0;
}

static int decide(struct pass *p, size_t index)
{
    const struct sched_pending *job = &p->pending[index];
    struct sched_verdict *v = &p->verdicts[index];
    bool ok = true;
    int rc;

    if (p->gate != NULL && p->gate->may_start != NULL &&
        !p->gate->may_start(p->gate->data, index)) {
        v->reason = SCHED_REASON_LIMIT;
        return 0;
    }
    rc = sched_cluster_place(p->cluster, &job->req, NULL, &v->alloc);

    if (rc == -EAGAIN) {
        v->reason = SCHED_REASON_RESOURCES;
        return p->head == NULL ? set_head(p, job) : 0;
    }
    if (rc < 0)
        return rc;
    if (job->data_wait_until_s > p->now_s) {
        uint64_t best, until;

        rc = near_data(p, job, &v->alloc, &ok, &best, &until);
        v->wake_s = until;
        if (rc == 0 && !ok)
            rc = hold_data_nodes(p, job, best, until);
        if (rc < 0 || !ok)
            return rc < 0 ? rc : held_back(v, SCHED_REASON_DATA);
    }
    if (p->head != NULL) {
        rc = may_backfill(p, job, &v->alloc, &ok);
        if (rc < 0)
            return rc;
    }
    if (!ok)
        return held_back(v, SCHED_REASON_PRIORITY);
    start(p, job, v);
    return 0;
}

/* Gives back what this pass took, so a failed pass leaves the cluster as it found it. */
static void undo(struct pass *p, size_t npending)
{
    for (size_t i = 0; i < npending; i++) {
        if (p->verdicts[i].start)
            sched_cluster_give_back(p->cluster, &p->verdicts[i].alloc);
        p->verdicts[i].start = false;
    }
}

int sched_plan(struct sched_cluster *cluster, const struct sched_pending *pending, size_t npending,
               const struct sched_running *running, size_t nrunning, uint64_t now_s,
               struct sched_verdict *verdicts, struct sched_reservation *ret_res)
{
    return sched_plan_gated(cluster, pending, npending, running, nrunning, now_s, NULL, verdicts,
                            ret_res);
}

int sched_plan_gated(struct sched_cluster *cluster, const struct sched_pending *pending,
                     size_t npending, const struct sched_running *running, size_t nrunning,
                     uint64_t now_s, const struct sched_plan_gate *gate,
                     struct sched_verdict *verdicts, struct sched_reservation *ret_res)
{
    struct pass p = {.cluster = cluster,
                     .pending = pending,
                     .verdicts = verdicts,
                     .now_s = now_s,
                     .shadow_s = SCHED_TIME_INFINITE,
                     .gate = gate};
    struct order_key *order = malloc((npending > 0 ? npending : 1) * sizeof(*order));
    int rc = -ENOMEM;

    p.words = (sched_cluster_nnodes(cluster) + 63) / 64 + 1;
    p.reserved = calloc(p.words, sizeof(uint64_t));
    p.running = malloc((nrunning + npending + 1) * sizeof(*p.running));
    if (order == NULL || p.reserved == NULL || p.running == NULL)
        goto out;
    memcpy(p.running, running, nrunning * sizeof(*running));
    p.nrunning = nrunning;
    for (size_t i = 0; i < npending; i++)
        order[i] =
            (struct order_key){pending[i].tier, pending[i].priority, pending[i].submit_seq, i};
    gs_sort(order, npending, sizeof(*order), by_priority);
    rc = 0;
    for (size_t i = 0; i < npending && rc == 0; i++)
        rc = decide(&p, order[i].index);
    if (rc < 0)
        undo(&p, npending);
    else if (ret_res != NULL)
        *ret_res = (struct sched_reservation){p.head ? p.head->job_id : 0, p.shadow_s};
out:
    free(order);
    free(p.reserved);
    free(p.running);
    return rc;
}
