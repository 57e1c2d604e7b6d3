/*
 * plan.c: priority order, gang placement and backfill, EASY or conservative to a depth
 * (see plan.h).
 *
 * A reservation is computed on a copy of the cluster: the future's events (running jobs
 * ending at their limits, the reservations already made starting and ending) are played in
 * time order until the blocked job fits, on nodes that no reservation starting within its
 * time limit will take. Started jobs join the list of running ones so later reservations
 * see them. What grows with the cluster is done once a pass, not once a reservation: the
 * ends are sorted once (and the started jobs' merged in), the copy is made once and put
 * back node by node after each simulation, and the reservations to keep clear of are
 * counted in and out as the walk passes their times. A job waiting for its data's nodes may
 * hold a reservation too, on those nodes (hold_data_nodes). Licenses go the same way, in
 * license_plan.c: the walk tries a job's nodes only at times its licenses are free too.
 */
#include "scheduler/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"

/* What a reserved node has to spare at the reservation's start, beside it: the GPUs (of
 * those the reserved job may use), cores and MiB that jobs started before then may take. */
struct spare {
    uint32_t gpus, cores;
    uint64_t mem_mib;
};

/* A blocked job's reservation: from when (start_s) it starts at the latest, and where. */
struct slot {
    const struct sched_pending *job;
    uint64_t start_s, end_s; /* end: start + its limit, SCHED_TIME_INFINITE without one */
    uint64_t *nodes;         /* bitmap of alloc's nodes, words long */
    struct sched_alloc alloc;
    struct spare *spare; /* per alloc node */
};

/* A change the pass foresees: a job's resources given back, or taken by a reservation. */
struct future {
    uint64_t at_s;
    bool take;
    uint32_t hold; /* a running job's end: its licenses' hold (license_plan.h), if any */
    const struct sched_alloc *alloc;
};

struct pass {
    struct sched_cluster *cluster;
    /* A copy of cluster for the reservations' simulations, made at the first: before each
     * later one it is synced with cluster again (sched_cluster_sync), node by node, rather
     * than copied whole. The jobs started meanwhile are taken on it too (start). */
    struct sched_cluster *sim;
    const struct sched_pending *pending;
    struct sched_verdict *verdicts;
    uint64_t now_s;
    /* The running jobs' ends (of those with a limit): the input jobs', then those started in
     * this pass. Every reservation walks them in time order, so they are kept sorted
     * ([0, nsorted)) rather than sorted for each; the jobs started since are merged in when
     * a reservation next needs them (sort_ends). */
    struct future *ends;
    size_t nends, nsorted;
    const struct sched_pending *head; /* the first blocked job holding a reservation */
    uint64_t head_data; /* > 0: head waits for its data's nodes, to hold this many bytes */
    uint64_t shadow_s;
    uint64_t *reserved; /* bitmap of the nodes the reservations use */
    size_t words;
    const struct sched_plan_gate *gate;
    uint32_t depth;     /* jobs that may hold a reservation: 1 is EASY */
    uint32_t nreserved; /* jobs holding one (the head's may be of unknown time: no slot) */
    struct slot *slots; /* the reservations with a time, in the order they were made */
    size_t nslots;
    struct sched_license_plan lic; /* its reservations are the slots', in the same order */
};

static const char *const reason_names[] = {"None",     "Resources",     "Priority",
                                           "QOSLimit", "DataNodesBusy", "Licenses"};

const char *sched_reason_name(enum sched_reason reason)
{
    return (int)reason >= 0 && reason <= SCHED_REASON_LICENSES ? reason_names[reason] : "Unknown";
}

void sched_verdicts_init(struct sched_verdict *v, size_t n)
{
    memset(v, 0, n * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        sched_alloc_init(&v[i].alloc);
}

void sched_verdicts_release(struct sched_verdict *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sched_alloc_release(&v[i].alloc);
        free(v[i].reserved_nodes);
        v[i].reserved_nodes = NULL;
        v[i].nreserved = 0;
    }
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

/* Tier then priority, both highest first, as one ascending number. */
static uint64_t rank_key(const struct order_key *k)
{
    return (uint64_t)(UINT32_MAX - k->tier) << 32 | (uint32_t)((int64_t)INT32_MAX - k->priority);
}

/*
 * order (n keys) into plan order (by_priority's) using tmp (n more). Keys that come in
 * submit order, as the planner gathers them from the job table, need only a stable sort by
 * tier and priority: an LSD radix sort, a byte a pass, passes where every key has the same
 * byte skipped (most clusters have one tier and priorities in three bytes), with no call
 * per comparison where qsort makes n log n of them (half of a busy pass over 100,000
 * jobs). Others go through qsort.
 */
static void plan_order(struct order_key *order, struct order_key *tmp, size_t n)
{
    struct order_key *from = order, *to = tmp;

    for (size_t i = 1; i < n; i++) {
        if (order[i].submit_seq < order[i - 1].submit_seq) {
            gs_sort(order, n, sizeof(*order), by_priority);
            return;
        }
    }
    for (int shift = 0; shift < 64 && n > 1; shift += 8) {
        size_t count[256] = {0}, at = 0;

        for (size_t i = 0; i < n; i++)
            count[rank_key(&from[i]) >> shift & 0xff]++;
        if (count[rank_key(&from[0]) >> shift & 0xff] == n)
            continue; /* every key has this byte: the order stands */
        for (size_t d = 0; d < 256; d++) {
            size_t c = count[d];

            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[rank_key(&from[i]) >> shift & 0xff]++] = from[i];
        from = to;
        to = from == order ? tmp : order;
    }
    if (from != order)
        memcpy(order, from, n * sizeof(*order));
}

/* When job would end if started at t. */
static uint64_t end_at(const struct sched_pending *job, uint64_t t)
{
    if (job->time_limit_s == SCHED_TIME_INFINITE || job->time_limit_s > UINT64_MAX - t)
        return SCHED_TIME_INFINITE;
    return t + job->time_limit_s;
}

static uint64_t end_of(const struct pass *p, const struct sched_pending *job)
{
    return end_at(job, p->now_s);
}

/* In time order; at one time, what is given back before what is taken. */
static int by_time(const void *pa, const void *pb)
{
    const struct future *a = pa, *b = pb;

    if (a->at_s != b->at_s)
        return a->at_s < b->at_s ? -1 : 1;
    return (int)a->take - (int)b->take;
}

static void set_node(uint64_t *bits, uint32_t node)
{
    bits[node / 64] |= UINT64_C(1) << (node % 64);
}

/* Merges the ends of the jobs started since the last call into the sorted ones. */
static int sort_ends(struct pass *p)
{
    size_t i = p->nsorted, j = p->nends - p->nsorted, k = p->nends;
    struct future *tail;

    if (j == 0)
        return 0;
    if (i == 0) { /* the first time: all of them */
        gs_sort(p->ends, j, sizeof(*p->ends), by_time);
        p->nsorted = p->nends;
        return 0;
    }
    tail = malloc(j * sizeof(*tail));
    if (tail == NULL)
        return -ENOMEM;
    memcpy(tail, p->ends + p->nsorted, j * sizeof(*tail));
    gs_sort(tail, j, sizeof(*tail), by_time);
    while (j > 0) { /* from the back, so nothing is overwritten before it is moved */
        if (i > 0 && by_time(&p->ends[i - 1], &tail[j - 1]) > 0)
            p->ends[--k] = p->ends[--i];
        else
            p->ends[--k] = tail[--j];
    }
    p->nsorted = p->nends;
    free(tail);
    return 0;
}

/* The reservations whose nodes a job started at t must keep clear of, as the walk of one
 * shadow time's events (t never decreasing) last found them. */
struct kept {
    uint64_t *avoid; /* the union of their nodes, words long */
    uint32_t *count; /* per node, how many of them hold it */
    bool *in;        /* per reservation, whether it is one of them */
    size_t nin;
    bool known; /* in and avoid hold until (exclusive) */
    uint64_t until;
};

static int kept_init(struct kept *k, const struct pass *p, size_t nslots)
{
    *k = (struct kept){0};
    if (nslots == 0)
        return 0;
    k->avoid = calloc(p->words, sizeof(*k->avoid));
    k->count = calloc(p->words * 64, sizeof(*k->count));
    k->in = calloc(nslots, sizeof(*k->in));
    return k->avoid != NULL && k->count != NULL && k->in != NULL ? 0 : -ENOMEM;
}

static void kept_release(struct kept *k)
{
    free(k->avoid);
    free(k->count);
    free(k->in);
}

/* Reservation r comes in (step 1) or drops out (-1) of k: its nodes counted in avoid. */
static void kept_change(struct kept *k, const struct slot *r, int step)
{
    for (uint32_t j = 0; j < r->alloc.nnodes; j++) {
        uint32_t n = r->alloc.nodes[j].node;

        k->count[n] += (uint32_t)step;
        if (k->count[n] == 0)
            k->avoid[n / 64] &= ~(UINT64_C(1) << (n % 64));
        else
            k->avoid[n / 64] |= UINT64_C(1) << (n % 64);
    }
}

/*
 * The nodes of the first nslots reservations starting after t and before job, started at
 * t, would end by its limit: a reservation's nodes are kept from before it starts. Into
 * k->avoid; false when there are none. Which reservations those are changes only when t
 * reaches one's start (it drops out) or the time from which it starts within the job's
 * limit (it comes in), and only their nodes are counted in or out then: a walk over
 * thousands of ends would otherwise OR every reservation's bitmap at each one.
 */
static bool kept_during(const struct pass *p, size_t nslots, const struct sched_pending *job,
                        uint64_t t, struct kept *k)
{
    if (k->known && t < k->until)
        return k->nin > 0;
    k->known = true;
    k->until = SCHED_TIME_INFINITE;
    for (size_t i = 0; i < nslots; i++) {
        const struct slot *r = &p->slots[i];
        bool in = false;

        if (r->start_s <= t) {
            /* started: the walk never comes back before it */
        } else if (job->time_limit_s != SCHED_TIME_INFINITE &&
                   r->start_s - t >= job->time_limit_s) {
            if (r->start_s - job->time_limit_s + 1 < k->until)
                k->until = r->start_s - job->time_limit_s + 1;
        } else {
            in = true;
            if (r->start_s < k->until)
                k->until = r->start_s;
        }
        if (in != k->in[i]) {
            kept_change(k, r, in ? 1 : -1);
            k->in[i] = in;
            k->nin += in ? 1 : (size_t)-1;
        }
    }
    return k->nin > 0;
}

static uint32_t bits_in(const uint64_t *w, size_t n)
{
    uint32_t c = 0;

    for (size_t i = 0; i < n; i++)
        c += (uint32_t)__builtin_popcountll(w[i]);
    return c;
}

/* What sim has to spare beside alloc (placed on it, not taken) on each of its nodes. */
static struct spare *spares(const struct sched_cluster *sim, const struct sched_req *req,
                            const struct sched_alloc *alloc)
{
    struct spare *s = calloc(alloc->nnodes + 1, sizeof(*s));

    for (uint32_t k = 0; s != NULL && k < alloc->nnodes; k++) {
        const struct sched_node_alloc *a = &alloc->nodes[k];
        uint64_t free = sched_cluster_free_gpu_mask(sim, a->node);
        uint32_t cores = bits_in(a->cores, SCHED_MAX_CORES / 64);
        uint32_t free_cores = sched_cluster_free_cores(sim, a->node);
        uint64_t mem = sched_cluster_free_mem(sim, a->node);

        if (req->gpu_masks != NULL)
            free &= req->gpu_masks[a->node];
        s[k] = (struct spare){(uint32_t)__builtin_popcountll(free & ~a->gpus),
                              free_cores > cores ? free_cores - cores : 0,
                              mem > a->mem_mib ? mem - a->mem_mib : 0};
        if (alloc->exclusive)
            s[k] = (struct spare){0};
    }
    return s;
}

/*
 * Earliest time job fits if the running jobs end at their limits and the first nslots
 * reservations start and end in time, on sim (a copy of the cluster, holding what
 * p->ends holds, and extra when not NULL: one more running job's end): after each time
 * something is given back, on nodes no reservation takes before job would end
 * (kept_during), while its licenses are free until then. With data > 0, the earliest time it fits
 * with its data first on nodes holding that many bytes of its dataset. *ret_shadow is
 * SCHED_TIME_INFINITE when no such time comes; else ret_alloc (when not NULL, initialised) gets
 * where, and *ret_spare (when not NULL; malloc'd) what its nodes have to spare then.
 */
static int shadow_time(struct pass *p, struct sched_cluster *sim, size_t nslots,
                       const struct sched_pending *job, const struct future *extra, uint64_t data,
                       uint64_t *ret_shadow, struct sched_alloc *ret_alloc,
                       struct spare **ret_spare)
{
    /* The reservations' events (and extra), sorted here: a handful beside p->ends. */
    struct future *ev = malloc((2 * nslots + 1) * sizeof(*ev));
    struct sched_license_walk lic = {0}; /* what is free as the walk goes, when job needs some */
    struct kept kept;
    struct sched_req req = job->req;
    struct sched_alloc alloc;
    size_t n = 0, a = 0, b = 0;
    bool gave = false;
    int rc = 0;

    *ret_shadow = SCHED_TIME_INFINITE;
    if (kept_init(&kept, p, nslots) < 0 || ev == NULL || sort_ends(p) < 0 ||
        (job->nlicenses > 0 && sched_license_walk_init(&lic, &p->lic) < 0)) {
        kept_release(&kept);
        free(ev);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nslots; i++) {
        ev[n++] =
            (struct future){p->slots[i].start_s, true, SCHED_LICENSE_NO_HOLD, &p->slots[i].alloc};
        if (p->slots[i].end_s != SCHED_TIME_INFINITE)
            ev[n++] = (struct future){p->slots[i].end_s, false, SCHED_LICENSE_NO_HOLD,
                                      &p->slots[i].alloc};
    }
    if (extra != NULL && extra->at_s != SCHED_TIME_INFINITE)
        ev[n++] = *extra;
    gs_sort(ev, n, sizeof(*ev), by_time);
    req.data_first = req.data_first || data > 0;
    sched_alloc_init(&alloc);
    while (a < p->nends || b < n) { /* the two lists merged, in time order */
        const struct future *e = a < p->nends && (b == n || by_time(&p->ends[a], &ev[b]) <= 0)
                                     ? &p->ends[a++]
                                     : &ev[b++];

        if (e->take) {
            sched_cluster_take(sim, e->alloc);
        } else {
            sched_cluster_give_back(sim, e->alloc);
            gave = true;
        }
        if (e->hold != SCHED_LICENSE_NO_HOLD && lic.free != NULL)
            sched_license_walk_back(&lic, &p->lic, e->hold, e->at_s);
        if ((a < p->nends && p->ends[a].at_s == e->at_s) || (b < n && ev[b].at_s == e->at_s) ||
            !gave)
            continue; /* everything at the same moment first; nothing new to fit into */
        gave = false;
        if (job->nlicenses > 0 &&
            !sched_license_walk_fits(&lic, &p->lic, nslots > 0, job->licenses, job->nlicenses,
                                     e->at_s, end_at(job, e->at_s)))
            continue;
        rc = sched_cluster_place(
            sim, &req, kept_during(p, nslots, job, e->at_s, &kept) ? kept.avoid : NULL, &alloc);
        if (rc == -EAGAIN || (rc == 0 && sched_cluster_data_at(&req, &alloc) < data)) {
            rc = -EAGAIN;
            continue;
        }
        if (rc < 0)
            break;
        *ret_shadow = e->at_s;
        if (ret_spare != NULL && (*ret_spare = spares(sim, &req, &alloc)) == NULL)
            rc = -ENOMEM;
        if (ret_alloc != NULL) {
            *ret_alloc = alloc;
            sched_alloc_init(&alloc);
        }
        break;
    }
    sched_alloc_release(&alloc);
    sched_license_walk_release(&lic);
    kept_release(&kept);
    free(ev);
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

/*
 * EASY (depth 1): would starting job now (at alloc) push the reservation later? Exact, by
 * simulation.
 */
/* The pass's copy of the cluster, as the cluster is: what the last simulation did to it is
 * undone first (not after each, so the pass's last costs nothing more). */
static struct sched_cluster *what_if(struct pass *p)
{
    if (p->sim == NULL)
        p->sim = sched_cluster_copy(p->cluster);
    else
        sched_cluster_sync(p->sim, p->cluster);
    return p->sim;
}

static int delays_head(struct pass *p, const struct sched_pending *job,
                       const struct sched_alloc *alloc, bool *ret_delays)
{
    struct sched_cluster *sim = what_if(p);
    struct future end = {end_of(p, job), false, SCHED_LICENSE_NO_HOLD, alloc};
    uint64_t shadow;
    int rc;

    if (sim == NULL)
        return -ENOMEM;
    sched_cluster_take(sim, alloc);
    rc = shadow_time(p, sim, 0, p->head, &end, p->head_data, &shadow, NULL, NULL);
    if (rc == 0)
        *ret_delays = shadow > p->shadow_s;
    return rc;
}

/* The licenses job takes once it starts. */
static const struct sched_license_need *held(const struct sched_pending *job)
{
    return job->lic_hold != NULL ? job->lic_hold : job->licenses;
}

/*
 * Gives job a reservation: from when it fits, after the running jobs and the reservations
 * made before it (shadow_time), on the nodes it would use then. With data > 0 (a job
 * waiting for its data's nodes) only on nodes holding that many bytes of its dataset, and
 * only when that comes by until. The first job to hold one is the head (EASY's), even when
 * its time cannot be known (no running job with a limit frees enough: nothing is kept);
 * after it, one without a time holds nothing. *ret_held says whether job holds one.
 */
static int reserve(struct pass *p, const struct sched_pending *job, uint64_t data, uint64_t until,
                   bool *ret_held)
{
    struct sched_cluster *sim = what_if(p);
    struct slot r = {.job = job};
    int rc;

    *ret_held = false;
    if (sim == NULL)
        return -ENOMEM;
    sched_alloc_init(&r.alloc);
    rc = shadow_time(p, sim, p->nslots, job, NULL, data, &r.start_s, &r.alloc, &r.spare);
    if (rc < 0 || r.start_s > until || (r.start_s == SCHED_TIME_INFINITE && p->head != NULL))
        goto out;
    if (p->head == NULL) {
        p->head = job;
        p->head_data = data;
        p->shadow_s = r.start_s;
    }
    p->nreserved++;
    *ret_held = true;
    if (r.start_s == SCHED_TIME_INFINITE)
        goto out;
    r.end_s = job->time_limit_s == SCHED_TIME_INFINITE ||
                      job->time_limit_s > SCHED_TIME_INFINITE - r.start_s
                  ? SCHED_TIME_INFINITE
                  : r.start_s + job->time_limit_s;
    r.nodes = calloc(p->words, sizeof(*r.nodes));
    if (r.nodes == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t k = 0; k < r.alloc.nnodes; k++) {
        set_node(r.nodes, r.alloc.nodes[k].node);
        set_node(p->reserved, r.alloc.nodes[k].node);
    }
    p->slots[p->nslots++] = r; /* room for depth of them */
    sched_license_plan_reserve(&p->lic, held(job), job->nlicenses, r.start_s, r.end_s);
    return 0;
out:
    sched_alloc_release(&r.alloc);
    free(r.spare);
    return rc;
}

/*
 * A job waiting for its data's nodes (held back: they are busy) holds a reservation while
 * jobs may still get one, on those nodes from when enough of them free, if that comes
 * before its wait ends (until): the jobs behind it may take them only if done by then, so
 * a stream of smaller jobs cannot keep them busy until its wait runs out. Past its wait the
 * job goes wherever it fits and needs no reservation of its data's nodes.
 */
static int hold_data_nodes(struct pass *p, const struct sched_pending *job, uint64_t best,
                           uint64_t until)
{
    bool held;

    return p->nreserved < p->depth ? reserve(p, job, best, until, &held) : 0;
}

/*
 * Deeper than EASY: whether job, started now at alloc, leaves every reservation that starts
 * before it would end what that reservation needs on each node they share (its spare: the
 * GPUs it may use, cores and memory beyond its own at its start; none beside an exclusive
 * one, nor beside an exclusive job). With commit, takes what it uses from those spares.
 */
static bool leaves_spare(struct pass *p, uint64_t end, const struct sched_alloc *alloc, bool commit)
{
    for (size_t i = 0; i < p->nslots; i++) {
        struct slot *r = &p->slots[i];

        for (uint32_t k = 0; r->start_s < end && k < alloc->nnodes; k++) {
            const struct sched_node_alloc *a = &alloc->nodes[k];

            for (uint32_t j = 0; j < r->alloc.nnodes; j++) {
                struct spare *s = &r->spare[j];
                const uint64_t *mask = r->job->req.gpu_masks;
                uint32_t gpus, cores;

                if (r->alloc.nodes[j].node != a->node)
                    continue;
                gpus = (uint32_t)__builtin_popcountll(
                    a->gpus & (mask != NULL ? mask[a->node] : ~UINT64_C(0)));
                cores = bits_in(a->cores, SCHED_MAX_CORES / 64);
                if (alloc->exclusive || gpus > s->gpus || cores > s->cores ||
                    a->mem_mib > s->mem_mib)
                    return false;
                if (commit)
                    *s = (struct spare){s->gpus - gpus, s->cores - cores, s->mem_mib - a->mem_mib};
            }
        }
    }
    return true;
}

/*
 * May job, which fits now at alloc, start without delaying a reservation? EASY (depth 1):
 * when it ends before the head's start, or uses none of its nodes, or a simulation shows
 * the head still starts in time. Deeper: when it leaves every reservation it would overlap
 * in time what that one needs on their shared nodes (leaves_spare). If the chosen nodes
 * would delay one, the job may still run on nodes outside them; alloc is then rewritten to
 * those.
 */
static int may_backfill(struct pass *p, const struct sched_pending *job, struct sched_alloc *alloc,
                        bool *ret_ok)
{
    uint64_t end = end_of(p, job), *keep = p->reserved;
    bool delays = false;
    int rc;

    *ret_ok = true;
    if (p->depth <= 1) {
        if (end <= p->shadow_s || !uses_reserved(p, alloc))
            return 0;
        rc = delays_head(p, job, alloc, &delays);
        if (rc < 0 || !delays)
            return rc;
    } else {
        if (leaves_spare(p, end, alloc, false)) {
            leaves_spare(p, end, alloc, true);
            return 0;
        }
        keep = calloc(p->words, sizeof(*keep));
        if (keep == NULL)
            return -ENOMEM;
        for (size_t i = 0; i < p->nslots; i++) {
            for (size_t w = 0; p->slots[i].start_s < end && w < p->words; w++)
                keep[w] |= p->slots[i].nodes[w];
        }
    }
    rc = sched_cluster_place(p->cluster, &job->req, keep, alloc);
    *ret_ok = rc == 0;
    if (keep != p->reserved)
        free(keep);
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
    uint32_t hold;

    if (p->gate != NULL && p->gate->started != NULL)
        p->gate->started(p->gate->data, (size_t)(job - p->pending));
    sched_cluster_take(p->cluster, &v->alloc);
    if (p->sim != NULL)
        sched_cluster_take(p->sim, &v->alloc); /* so the next sync copies these nodes */
    v->start = true;
    v->backfilled = p->head != NULL;
    v->reason = SCHED_REASON_NONE;
    hold = sched_license_plan_hold(&p->lic, held(job), job->nlicenses, end_of(p, job));
    if (end_of(p, job) != SCHED_TIME_INFINITE)
        p->ends[p->nends++] = (struct future){end_of(p, job), false, hold, &v->alloc};
}

/* A job that fits but waits this pass, for reason: its placement is dropped. */
static int held_back(struct sched_verdict *v, enum sched_reason reason)
{
    v->reason = reason;
    v->alloc.nnodes = 0;
    return 0;
}

/* When job holds the latest reservation (one with a time), its start and nodes into v. */
static int note_reserved(const struct pass *p, const struct sched_pending *job,
                         struct sched_verdict *v)
{
    const struct slot *r = p->nslots > 0 ? &p->slots[p->nslots - 1] : NULL;

    if (r == NULL || r->job != job)
        return 0;
    v->reserved_nodes = malloc((r->alloc.nnodes + 1) * sizeof(*v->reserved_nodes));
    if (v->reserved_nodes == NULL)
        return -ENOMEM;
    for (uint32_t k = 0; k < r->alloc.nnodes; k++)
        v->reserved_nodes[k] = r->alloc.nodes[k].node;
    v->nreserved = r->alloc.nnodes;
    v->reserved_s = r->start_s;
    return 0;
}

/* Whether job's licenses are free from now until it would end beside the reservations
 * (with_resv: when it would backfill), or free now (whether it waits for them). */
static bool licenses_free(const struct pass *p, const struct sched_pending *job, bool with_resv)
{
    if (job->nlicenses == 0)
        return true;
    return with_resv
               ? sched_license_plan_fits(&p->lic, job->licenses, job->nlicenses, end_of(p, job))
               : sched_license_plan_free_now(&p->lic, job->licenses, job->nlicenses);
}

/*
 * A job whose licenses are not free (or are claimed by a job before it) waits for them,
 * holding a reservation while jobs may still get one: from when its licenses and nodes are
 * free. Without one (too deep, or no time known) it claims them for the rest of the pass,
 * so that a stream of smaller jobs behind it cannot keep them busy for good. One that can
 * never have them (a license since taken out of the configuration, or a count lowered below
 * its own) holds and claims nothing: it would keep the others waiting forever.
 */
static int wait_licenses(struct pass *p, const struct sched_pending *job, struct sched_verdict *v)
{
    bool held = false;
    int rc = 0;

    v->reason = SCHED_REASON_LICENSES;
    if (!sched_license_plan_ever(&p->lic, job->licenses, job->nlicenses))
        return 0;
    if (p->nreserved < p->depth)
        rc = reserve(p, job, 0, SCHED_TIME_INFINITE, &held);
    if (rc == 0 && held)
        rc = note_reserved(p, job, v);
    if (rc == 0 && (p->nslots == 0 || p->slots[p->nslots - 1].job != job))
        sched_license_plan_claim(&p->lic, job->licenses, job->nlicenses);
    return rc;
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
    if (job->nlicenses > 0 && (sched_license_plan_claimed(&p->lic, job->licenses, job->nlicenses) ||
                               !licenses_free(p, job, false)))
        return wait_licenses(p, job, v);
    rc = sched_cluster_place(p->cluster, &job->req, NULL, &v->alloc);

    if (rc == -EAGAIN) {
        bool held = false;

        v->reason = SCHED_REASON_RESOURCES;
        rc = p->nreserved < p->depth ? reserve(p, job, 0, SCHED_TIME_INFINITE, &held) : 0;
        if (rc == 0 && held)
            rc = note_reserved(p, job, v);
        return rc;
    }
    if (rc < 0)
        return rc;
    if (job->data_wait_until_s > p->now_s) {
        uint64_t best, until;

        rc = near_data(p, job, &v->alloc, &ok, &best, &until);
        v->wake_s = until;
        if (rc == 0 && !ok)
            rc = hold_data_nodes(p, job, best, until);
        if (rc == 0 && !ok)
            rc = note_reserved(p, job, v);
        if (rc < 0 || !ok)
            return rc < 0 ? rc : held_back(v, SCHED_REASON_DATA);
    }
    if (p->head != NULL && !licenses_free(p, job, true))
        return held_back(v, SCHED_REASON_PRIORITY); /* a reservation needs them before its end */
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
    return sched_plan_with(cluster, pending, npending, running, nrunning, now_s, NULL, verdicts,
                           ret_res);
}

/* The running jobs' ends, and their licenses held (with room for the pending jobs'). */
static int running_init(struct pass *p, const struct sched_plan_opts *opts,
                        const struct sched_running *running, size_t nrunning, size_t npending)
{
    size_t holds = npending;
    int rc;

    for (size_t i = 0; i < nrunning; i++)
        holds += running[i].nlicenses > 0;
    rc = sched_license_plan_init(&p->lic, opts != NULL ? opts->license_total : NULL,
                                 opts != NULL ? opts->nlicenses : 0, p->now_s, holds, p->depth);
    for (size_t i = 0; rc == 0 && i < nrunning; i++) {
        uint32_t hold = sched_license_plan_hold(&p->lic, running[i].licenses, running[i].nlicenses,
                                                running[i].end_s);

        if (running[i].end_s != SCHED_TIME_INFINITE)
            p->ends[p->nends++] = (struct future){running[i].end_s, false, hold, running[i].alloc};
    }
    return rc;
}

int sched_plan_with(struct sched_cluster *cluster, const struct sched_pending *pending,
                    size_t npending, const struct sched_running *running, size_t nrunning,
                    uint64_t now_s, const struct sched_plan_opts *opts,
                    struct sched_verdict *verdicts, struct sched_reservation *ret_res)
{
    uint32_t depth = opts != NULL && opts->depth > 0 ? opts->depth : 1;
    struct pass p = {.cluster = cluster,
                     .pending = pending,
                     .verdicts = verdicts,
                     .now_s = now_s,
                     .shadow_s = SCHED_TIME_INFINITE,
                     .gate = opts != NULL ? opts->gate : NULL,
                     .depth = depth};
    struct order_key *order = malloc((npending > 0 ? 2 * npending : 1) * sizeof(*order));
    int rc = -ENOMEM;

    if (p.depth > npending + 1)
        p.depth = (uint32_t)(npending + 1); /* no more reservations than jobs */
    p.words = (sched_cluster_nnodes(cluster) + 63) / 64 + 1;
    p.reserved = calloc(p.words, sizeof(uint64_t));
    p.ends = malloc((nrunning + npending + 1) * sizeof(*p.ends));
    p.slots = calloc(p.depth, sizeof(*p.slots));
    if (order == NULL || p.reserved == NULL || p.ends == NULL || p.slots == NULL ||
        running_init(&p, opts, running, nrunning, npending) < 0)
        goto out;
    for (size_t i = 0; i < npending; i++)
        order[i] =
            (struct order_key){pending[i].tier, pending[i].priority, pending[i].submit_seq, i};
    plan_order(order, order + npending, npending);
    rc = 0;
    for (size_t i = 0; i < npending && rc == 0; i++)
        rc = decide(&p, order[i].index);
    if (rc < 0)
        undo(&p, npending);
    else if (ret_res != NULL)
        *ret_res = (struct sched_reservation){p.head ? p.head->job_id : 0, p.shadow_s};
out:
    for (size_t i = 0; i < p.nslots; i++) {
        sched_alloc_release(&p.slots[i].alloc);
        free(p.slots[i].nodes);
        free(p.slots[i].spare);
    }
    free(p.slots);
    sched_license_plan_release(&p.lic);
    sched_cluster_free(p.sim);
    free(order);
    free(p.reserved);
    free(p.ends);
    return rc;
}
