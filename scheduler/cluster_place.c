/*
 * cluster_place.c: where a job goes (sched_cluster_place and what explains a refusal; see
 * cluster.h). Node choice ranks the nodes that fit by what they would have left: the best
 * one in a single pass for a one-node job, the first ones in rank order for a gang, both
 * through the candidate index (groups of alike nodes, kept by cluster.c) where the request
 * allows, else by scoring every node. Fit checks are a few popcounts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/features.h"
#include "common/popcnt.h"
#include "common/sort.h"
#include "scheduler/cluster_internal.h"

/*
 * sched_cluster_place() scores every node for every job: its fit checks and GPU choice count
 * bits dozens of times per node, so it is built with and without POPCNT (common/popcnt.h);
 * it calls gs_gpuset_choose(), cloned the same way. GCC no longer inlines the bigger helpers
 * into a function it has cloned, and a helper gets the clone's POPCNT only when inlined:
 * HOT_INLINE makes it.
 */
#define HOT_INLINE static inline __attribute__((always_inline))

struct feature_list {
    const char (*v)[FEATURE_MAX_LEN];
    size_t n;
};

static bool list_has(const char *name, size_t len, const void *data)
{
    const struct feature_list *l = data;

    for (size_t i = 0; i < l->n; i++)
        if (len < FEATURE_MAX_LEN && memcmp(l->v[i], name, len) == 0 && l->v[i][len] == '\0')
            return true;
    return false;
}

/* Whether n features satisfy expr (a job's constraint: common/features.h; NULL or "": any). */
static bool features_have(const char (*features)[FEATURE_MAX_LEN], size_t n, const char *expr)
{
    struct feature_list l = {features, n};

    return expr == NULL || expr[0] == '\0' || gs_features_match(expr, list_has, &l);
}

static bool has_feature(const struct node *n, const char *feature)
{
    const struct node_layout *lay = n->lay;

    return features_have(lay->features, lay->nfeatures, feature);
}

/* Could the node hold the request if it were idle? */
static bool node_can_ever(const struct node *n, const struct sched_req *req)
{
    return req->gpus_per_node <= n->ngpus && req->cores_per_node <= n->ncores &&
           req->mem_per_node_mib <= n->mem_mib && has_feature(n, req->constraint);
}

/* Node i's free GPUs that req may use (an advance reservation may keep some for others). */
HOT_INLINE uint64_t usable_gpus(const struct node *n, const struct sched_req *req, size_t i)
{
    return req->gpu_masks == NULL ? n->gpu_free : n->gpu_free & req->gpu_masks[i];
}

HOT_INLINE bool node_fits_now(const struct node *n, const struct sched_req *req, uint64_t free)
{
    if (!n->up || n->exclusive_held || (req->exclusive && n->njobs > 0))
        return false;
    return (uint32_t)__builtin_popcountll(free) >= req->gpus_per_node &&
           n->ncores_free >= req->cores_per_node && n->mem_free >= req->mem_per_node_mib &&
           has_feature(n, req->constraint);
}

static bool bit_set(const uint64_t *bits, size_t i)
{
    return bits != NULL && ((bits[i / 64] >> (i % 64)) & 1);
}

/* Whether the request's node lists let it use node i at all. */
static bool node_allowed(const struct sched_req *req, size_t i)
{
    return req->allowed == NULL || bit_set(req->allowed, i);
}

static bool could_ever_fit_one(const struct sched_cluster *cluster, const struct sched_req *req,
                               char *why, size_t why_size);

bool sched_cluster_could_ever_fit(const struct sched_cluster *cluster, const struct sched_req *req,
                                  char *why, size_t why_size)
{
    uint64_t total = req->nodes;
    char one[200];

    if (req->nhet == 0)
        return could_ever_fit_one(cluster, req, why, why_size);
    for (uint32_t k = 0; k <= req->nhet; k++) {
        if (!could_ever_fit_one(cluster, k == 0 ? req : &req->het[k - 1], one, sizeof(one))) {
            snprintf(why, why_size, "het component %u: %s", k, one);
            return false;
        }
        total += k > 0 ? req->het[k - 1].nodes : 0;
    }
    if (total > cluster->nnodes) {
        snprintf(why, why_size, "the cluster has %zu node(s), the job's components ask for %llu",
                 cluster->nnodes, (unsigned long long)total);
        return false;
    }
    return true;
}

uint64_t sched_cluster_data_best(const struct sched_cluster *cluster, const struct sched_req *req)
{
    uint64_t top[SCHED_MAX_JOB_NODES], sum = 0; /* the k best, descending */
    uint32_t k = req->nodes < SCHED_MAX_JOB_NODES ? req->nodes : SCHED_MAX_JOB_NODES, n = 0;

    if (req->data_bytes == NULL || k == 0)
        return 0;
    /* The nodes holding some (req->data_nodes, when known), else every node. */
    for (size_t at = 0; at < (req->data_nodes != NULL ? req->ndata_nodes : cluster->nnodes); at++) {
        size_t i = req->data_nodes != NULL ? req->data_nodes[at] : at;
        uint64_t b = req->data_bytes[i];
        uint32_t j;

        if (b == 0 || !cluster->nodes[i].up || !node_allowed(req, i) ||
            !node_can_ever(&cluster->nodes[i], req) || (n == k && b <= top[k - 1]))
            continue;
        j = n < k ? n++ : k - 1;
        for (; j > 0 && top[j - 1] < b; j--)
            top[j] = top[j - 1];
        top[j] = b;
    }
    for (uint32_t j = 0; j < n; j++)
        sum += top[j];
    return sum;
}

uint64_t sched_cluster_data_at(const struct sched_req *req, const struct sched_alloc *alloc)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; req->data_bytes != NULL && i < alloc->nnodes; i++)
        sum += req->data_bytes[alloc->nodes[i].node];
    return sum;
}

static bool could_ever_fit_plain(const struct sched_cluster *cluster, const struct sched_req *req,
                                 char *why, size_t why_size);

/* Under a matching OR, whether some alternative alone could ever hold the job. */
static bool could_ever_fit_one(const struct sched_cluster *cluster, const struct sched_req *req,
                               char *why, size_t why_size)
{
    char alt[GS_FEATURES_EXPR_MAX + 1], last[200] = "";
    struct sched_req one;

    if (!gs_features_matching_or(req->constraint))
        return could_ever_fit_plain(cluster, req, why, why_size);
    one = *req;
    one.constraint = alt;
    for (unsigned k = 0; gs_features_alternative(req->constraint, k, alt, sizeof(alt)); k++)
        if (could_ever_fit_plain(cluster, &one, last, sizeof(last)))
            return true;
    snprintf(why, why_size,
             "no one alternative of %.100s can ever hold all its nodes (the last: %s)",
             req->constraint, last);
    return false;
}

static bool could_ever_fit_plain(const struct sched_cluster *cluster, const struct sched_req *req,
                                 char *why, size_t why_size)
{
    uint32_t able = 0, allowed = 0;

    for (size_t i = 0; i < cluster->nnodes; i++) {
        bool ok = node_can_ever(&cluster->nodes[i], req);

        allowed += node_allowed(req, i);
        if (bit_set(req->required, i) && (!ok || !node_allowed(req, i))) {
            snprintf(why, why_size, "node %s can never hold the job%s", cluster->nodes[i].lay->name,
                     node_allowed(req, i) ? "" : " (it is not in the job's partition)");
            return false;
        }
        able += ok && node_allowed(req, i);
    }
    if (req->nrequired > req->nodes) {
        snprintf(why, why_size, "the job names %u node(s) to run on but asks for %u",
                 req->nrequired, req->nodes);
        return false;
    }
    if (req->nodes > 0 && able >= req->nodes)
        return true;
    if (req->nodes > 0 && req->allowed != NULL && allowed < req->nodes)
        snprintf(why, why_size,
                 "the job may use %u node(s) (its partition less excluded ones and those "
                 "short of its --tmp), it asks for %u",
                 allowed, req->nodes);
    else if (req->nodes == 0)
        snprintf(why, why_size, "a job needs at least one node");
    else if (cluster->nnodes < req->nodes)
        snprintf(why, why_size, "the cluster has %zu node(s), the job asks for %u", cluster->nnodes,
                 req->nodes);
    else
        snprintf(why, why_size,
                 "only %u node(s) can ever hold %u GPU(s), %u core(s) and %llu MiB%s%s; the "
                 "job asks for %u",
                 able, req->gpus_per_node, req->cores_per_node,
                 (unsigned long long)req->mem_per_node_mib, req->constraint ? " with " : "",
                 req->constraint ? req->constraint : "", req->nodes);
    return false;
}

/* The lowest k set bits of mask. */
static uint64_t lowest_bits(uint64_t mask, uint32_t k)
{
    uint64_t out = 0;

    for (uint32_t i = 0; i < k && mask != 0; i++) {
        out |= mask & -mask;
        mask &= mask - 1;
    }
    return out;
}

/* A GPU's closeness to its nearest NIC, lower is better; unknown last. */
static int nic_rank(const struct node *n, uint32_t g)
{
    return n->nic_class[g] != 0 ? n->nic_class[g] : GS_GPUSET_CLASS_WORST + 1;
}

/* Up to k of free's GPUs on NUMA node numa (any when numa < 0), nearest a NIC first, then
 * lowest index, added to *mask; returns how many. */
static uint32_t take_near_nic(const struct node *n, uint64_t free, int numa, uint32_t k,
                              uint64_t *mask)
{
    uint32_t got = 0;

    for (int rank = 0; rank <= GS_GPUSET_CLASS_WORST + 1 && got < k; rank++) {
        for (uint64_t m = free & ~*mask; m != 0 && got < k; m &= m - 1) {
            uint32_t g = (uint32_t)__builtin_ctzll(m);

            if ((numa < 0 || n->gpu_numa[g] == numa) && nic_rank(n, g) == rank) {
                *mask |= UINT64_C(1) << g;
                got++;
            }
        }
    }
    return got;
}

/*
 * k of free's GPUs on a node whose GPU pairs are all alike (NVSwitch), where links cannot
 * choose: within one NUMA node when one has k free (the one with the fewest free that
 * does, leaving bigger blocks whole; then the one whose GPUs sit nearer a NIC), else from
 * the NUMA nodes with the most free first (then nearer a NIC), so the set spans as few as
 * it can; within a
 * NUMA node the GPUs nearest a NIC, then the lowest indices. A multi-node job's traffic
 * leaves through those NICs, its ranks' memory stays on their socket.
 */
static uint64_t pick_uniform(const struct node *n, uint64_t free, uint32_t k)
{
    uint32_t count[SCHED_MAX_GPUS] = {0}, best_rank = UINT32_MAX;
    int nearest[SCHED_MAX_GPUS], best = -1, numa_max = 0;
    uint64_t mask = 0;

    for (int i = 0; i < SCHED_MAX_GPUS; i++)
        nearest[i] = GS_GPUSET_CLASS_WORST + 1;
    for (uint64_t m = free; m != 0; m &= m - 1) {
        uint32_t g = (uint32_t)__builtin_ctzll(m);
        int numa = n->gpu_numa[g];

        if (numa >= 0 && numa < SCHED_MAX_GPUS) {
            count[numa]++;
            numa_max = numa > numa_max ? numa : numa_max;
            nearest[numa] = nic_rank(n, g) < nearest[numa] ? nic_rank(n, g) : nearest[numa];
        }
    }
    for (int numa = 0; numa <= numa_max; numa++) {
        uint64_t trial = 0;
        uint32_t rank = 0;

        if (count[numa] < k || (best >= 0 && count[numa] > count[best]))
            continue;
        take_near_nic(n, free, numa, k, &trial);
        for (uint64_t m = trial; m != 0; m &= m - 1)
            rank += (uint32_t)nic_rank(n, (uint32_t)__builtin_ctzll(m));
        if (best >= 0 && count[numa] == count[best] && rank >= best_rank)
            continue;
        best = numa;
        best_rank = rank;
    }
    if (best >= 0) {
        take_near_nic(n, free, best, k, &mask);
        return mask;
    }
    for (uint32_t got = 0; got < k;) {
        int most = -1;

        for (int numa = 0; numa <= numa_max; numa++) {
            if (count[numa] > 0 && (most < 0 || count[numa] > count[most] ||
                                    (count[numa] == count[most] && nearest[numa] < nearest[most])))
                most = numa;
        }
        if (most < 0)
            break;
        got += take_near_nic(n, free, most, k - got, &mask);
        count[most] = 0;
    }
    if ((uint32_t)__builtin_popcountll(mask) < k) /* NUMA nodes out of range: any */
        take_near_nic(n, free, -1, k - (uint32_t)__builtin_popcountll(mask), &mask);
    return mask;
}

/* The set choose_gpus() found, or, where every k-set ties on links and leftovers (the same
 * figures, other GPUs), pick_uniform's: only for the nodes a job gets, as it costs more. */
static uint64_t final_gpus(const struct node *n, const struct sched_req *req, uint64_t free,
                           uint64_t chosen)
{
    if (n->gs == NULL || !n->links_uniform || req->affinity == GS_GPUSET_ANY ||
        req->gpus_per_node == 0)
        return chosen;
    return pick_uniform(n, free, req->gpus_per_node);
}

static uint64_t memo_hash(uint64_t mask, uint32_t k, uint32_t aff)
{
    uint64_t h = mask ^ ((uint64_t)k << 56) ^ ((uint64_t)aff << 62);

    h ^= h >> 33; /* murmur3's finaliser: every input bit moves the slot */
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 33);
}

/* gs_gpuset_choose() through the shape's cache; 0, -EAGAIN or -EINVAL as it returns. */
HOT_INLINE int shape_choose(const struct gs_gpuset_node *gs, uint64_t free_mask, uint32_t k,
                            enum gs_gpuset_affinity aff, struct gs_gpuset_choice *ret)
{
    struct shape *sh = (struct shape *)gs; /* gs is the first member; the cache is mutable */
    struct memo_slot *slot;
    int rc;

    if (sh->memo == NULL && !sh->no_memo && (sh->memo = calloc(MEMO_SLOTS, sizeof(*slot))) == NULL)
        sh->no_memo = true; /* out of memory: choose without a cache */
    if (sh->memo == NULL)
        return gs_gpuset_choose(gs, free_mask, (int)k, aff, ret);
    slot = &sh->memo[memo_hash(free_mask, k, (uint32_t)aff) & (MEMO_SLOTS - 1)];
    if (slot->valid && slot->mask == free_mask && slot->k == k && slot->aff == (uint8_t)aff) {
        if (!slot->ok)
            return -EAGAIN;
        *ret = slot->ch;
        return 0;
    }
    rc = gs_gpuset_choose(gs, free_mask, (int)k, aff, ret);
    if (rc == 0 || rc == -EAGAIN) {
        slot->mask = free_mask;
        slot->k = (uint8_t)k;
        slot->aff = (uint8_t)aff;
        slot->valid = true;
        slot->ok = rc == 0;
        if (rc == 0)
            slot->ch = *ret;
    }
    return rc;
}

/*
 * The GPUs req would get on n now: by link class when n's matrix is known, else the lowest
 * free indices. Returns false when none will do (too few free, or STRICT and no set as good
 * as an empty node gives).
 */
HOT_INLINE bool choose_gpus(const struct node *n, const struct sched_req *req, uint64_t free,
                            struct gs_gpuset_choice *ret)
{
    uint32_t k = req->gpus_per_node;

    memset(ret, 0, sizeof(*ret));
    if ((uint32_t)__builtin_popcountll(free) < k)
        return false;
    if (k > 0 && n->gs != NULL)
        return shape_choose(n->gs, free, k, req->affinity, ret) == 0;
    ret->mask = lowest_bits(free, k);
    ret->ngpus = (int)k;
    return true;
}

/* Takes up to want free cores of NUMA node numa (any node when numa < 0), lowest first. */
static uint32_t take_cores(const struct node *n, int numa, uint32_t want,
                           struct sched_node_alloc *out)
{
    uint32_t got = 0;

    for (uint32_t c = 0; c < n->ncores && got < want; c++) {
        uint64_t bit = UINT64_C(1) << (c % 64);

        if (!(n->core_free[c / 64] & bit) || (out->cores[c / 64] & bit) ||
            (numa >= 0 && n->lay->core_numa[c] != numa))
            continue;
        out->cores[c / 64] |= bit;
        got++;
    }
    return got;
}

/*
 * The chosen GPUs, and the cores: each GPU's even share from its own NUMA node (so that a
 * job spanning two sockets gets cores on both, next to the ranks' GPUs), what is left from
 * the GPUs' nodes, then from anywhere.
 */
static void place_in_node(const struct node *n, uint32_t index, const struct sched_req *req,
                          uint64_t gpus, struct sched_node_alloc *out)
{
    uint32_t want = req->cores_per_node, ngpus = (uint32_t)__builtin_popcountll(gpus);
    uint32_t share = ngpus > 0 ? want / ngpus : 0;

    memset(out, 0, sizeof(*out));
    out->node = index;
    out->mem_mib = req->mem_per_node_mib;
    out->gpus = gpus;
    for (uint64_t m = gpus; m != 0 && share > 0; m &= m - 1)
        want -= take_cores(n, n->gpu_numa[__builtin_ctzll(m)], share, out);
    for (uint64_t m = gpus; m != 0 && want > 0; m &= m - 1)
        want -= take_cores(n, n->gpu_numa[__builtin_ctzll(m)], want, out);
    if (want > 0)
        take_cores(n, -1, want, out);
}

struct candidate {
    uint32_t node;
    int outside; /* 1: not among req->preferred (when it has some) */
    int switch_id;
    int worst; /* link class of the node's best set for the job */
    int nic;   /* multi-node jobs: the set's best GPU-NIC class (7 when unknown) */
    uint32_t gpus_left;
    uint32_t cores_left;
    uint64_t gpus;
    uint64_t pool; /* the free GPUs gpus was chosen from */
    uint64_t score;
    uint64_t data;       /* bytes of the job's dataset it holds (data_locality tiebreak) */
    uint64_t data_first; /* the same, when it ranks before fit (prefer) */
};

/*
 * The preferred nodes first; then best link class; then best fit; then more of the job's
 * data; then the better set.
 */
static int compare_candidates(const void *pa, const void *pb)
{
    const struct candidate *a = pa, *b = pb;

    if (a->outside != b->outside)
        return a->outside - b->outside;
    if (a->worst != b->worst)
        return a->worst < b->worst ? -1 : 1;
    if (a->nic != b->nic)
        return a->nic < b->nic ? -1 : 1;
    if (a->data_first != b->data_first)
        return a->data_first > b->data_first ? -1 : 1;
    if (a->gpus_left != b->gpus_left)
        return a->gpus_left < b->gpus_left ? -1 : 1;
    if (a->data != b->data)
        return a->data > b->data ? -1 : 1;
    if (a->cores_left != b->cores_left)
        return a->cores_left < b->cores_left ? -1 : 1;
    if (a->score != b->score)
        return a->score < b->score ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* The best class between one of gpus and its nearest NIC; past the worst when unknown. */
static int nic_class(const struct node *n, uint64_t gpus)
{
    int best = GS_GPUSET_CLASS_WORST + 1;

    for (uint64_t m = gpus; m != 0; m &= m - 1) {
        int c = n->nic_class[__builtin_ctzll(m)];
        if (c > 0 && c < best)
            best = c;
    }
    return best;
}

/* A gang's candidate figure for n: the NIC class of the GPUs it would get (the choice
 * pick_uniform refines only matters when some GPU's NIC class is known). */
HOT_INLINE int node_nic(const struct node *n, const struct sched_req *req, uint64_t pool,
                        uint64_t chosen)
{
    if (!n->nic_known)
        return GS_GPUSET_CLASS_WORST + 1;
    return nic_class(n, final_gpus(n, req, pool, chosen));
}

/* Per switch, its candidates among the first ranked ones (up to a gang's size). */
struct switch_tally {
    uint32_t have;
    uint32_t first; /* the rank of its first */
    uint64_t sum;   /* of its candidates' ranks */
};

/* Counts c, ranked rank, toward its switch (up to want of them); true when that gives the
 * switch its want. */
static bool tally_add(struct switch_tally *t, int nsw, const struct candidate *c, uint32_t rank,
                      uint32_t want)
{
    int sw = c->switch_id;

    if (sw <= 0 || sw > nsw || t[sw].have >= want)
        return false;
    if (t[sw].have++ == 0)
        t[sw].first = rank;
    t[sw].sum += rank;
    return t[sw].have == want;
}

/* The switch a gang goes under: of those with want candidates, the lowest sum of their
 * ranks, then the first to appear in the ranking. 0: none has want. */
static int best_switch(const struct switch_tally *t, int nsw, uint32_t want)
{
    int best = 0;

    for (int s = 1; s <= nsw; s++) {
        if (t[s].have == want && (best == 0 || t[s].sum < t[best].sum ||
                                  (t[s].sum == t[best].sum && t[s].first < t[best].first)))
            best = s;
    }
    return best;
}

/*
 * Moves to the front of the ranked candidates the first `want` of one switch (best_switch's);
 * leaves the ranking alone when no switch has enough. All-reduce traffic then crosses one
 * switch, not the spine. 1 when a switch had them, 0 when none did, or -ENOMEM.
 */
static int under_one_switch(struct candidate *cand, uint32_t ncand, uint32_t want, int nsw)
{
    struct switch_tally *t;
    int best;

    if (nsw <= 0)
        return 0;
    if ((t = calloc((size_t)nsw + 1, sizeof(*t))) == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < ncand; i++)
        tally_add(t, nsw, &cand[i], i, want);
    best = best_switch(t, nsw, want);
    free(t);
    /* A stable partition: the switch's nodes first, in rank order. */
    for (uint32_t placed = 0, k = 0; best > 0 && k < ncand && placed < want; k++) {
        struct candidate c = cand[k];

        if (c.switch_id != best)
            continue;
        memmove(cand + placed + 1, cand + placed, (k - placed) * sizeof(*cand));
        cand[placed++] = c;
    }
    return best > 0;
}

/*
 * A gang's --switches count, when no one switch has want of the ranked candidates: the
 * fewest switches that do, those with the most candidates first (a node under none is a
 * switch of its own), and their first want candidates moved to the front in rank order.
 * 0; -EAGAIN when more than max switches it would take; -ENOMEM.
 */
static int within_switches(struct candidate *cand, uint32_t ncand, uint32_t want, int nsw,
                           uint32_t max)
{
    uint32_t *have = calloc((size_t)nsw + 1, sizeof(*have)), got = 0, used = 0;
    bool *pick = calloc(ncand, sizeof(*pick));
    int rc = -ENOMEM;

    if (have == NULL || pick == NULL)
        goto out;
    for (uint32_t i = 0; i < ncand; i++)
        if (cand[i].switch_id > 0 && cand[i].switch_id <= nsw)
            have[cand[i].switch_id]++;
    while (got < want && used < max) {
        int best = 0;

        for (int s = 1; s <= nsw; s++) /* ties: the lowest id */
            if (have[s] > have[best])
                best = s;
        if (best == 0)
            break;
        for (uint32_t i = 0; i < ncand; i++)
            pick[i] = pick[i] || cand[i].switch_id == best;
        got += have[best];
        have[best] = 0;
        used++;
    }
    for (uint32_t i = 0; i < ncand && got < want && used < max; i++) {
        if (cand[i].switch_id <= 0 || cand[i].switch_id > nsw) {
            pick[i] = true;
            got++;
            used++;
        }
    }
    rc = got < want ? -EAGAIN : 0;
    /* A stable partition, as under_one_switch's: the picked ones first, in rank order. */
    for (uint32_t placed = 0, k = 0; rc == 0 && k < ncand && placed < want; k++) {
        struct candidate c = cand[k];

        if (!pick[k])
            continue;
        memmove(cand + placed + 1, cand + placed, (k - placed) * sizeof(*cand));
        cand[placed++] = c;
    }
out:
    free(have);
    free(pick);
    return rc;
}

/*
 * Whether the first m ranked candidates settle under_one_switch's choice: some switch has
 * want of them, and no other could beat or tie it ahead even were all its missing
 * candidates ranked next.
 */
static bool switch_settled(const struct switch_tally *t, int nsw, uint32_t want, uint64_t m)
{
    int best = best_switch(t, nsw, want);

    if (best == 0)
        return false;
    for (int s = 1; s <= nsw; s++) {
        uint64_t miss = want - t[s].have, bound = t[s].sum + miss * m + miss * (miss - 1) / 2;

        if (miss == 0)
            continue;
        if (bound < t[best].sum ||
            (bound == t[best].sum && t[s].have > 0 && t[s].first < t[best].first))
            return false;
    }
    return true;
}

/* The candidates the request names (--nodelist) first, the rest after, each in rank order. */
static uint32_t required_first(struct candidate *cand, uint32_t ncand, const uint64_t *required)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < ncand; i++) {
        if (bit_set(required, cand[i].node)) {
            struct candidate c = cand[i];
            memmove(&cand[k + 1], &cand[k], (i - k) * sizeof(*cand));
            cand[k++] = c;
        }
    }
    return k;
}

/* Node i as a candidate for req: false when it will not do. */
HOT_INLINE bool candidate_at(const struct sched_cluster *cluster, const struct sched_req *req,
                             const uint64_t *avoid, size_t i, struct candidate *c)
{
    const struct node *n = &cluster->nodes[i];
    struct gs_gpuset_choice ch;
    uint64_t free, pool;

    if (bit_set(avoid, i) || !node_allowed(req, i))
        return false;
    free = usable_gpus(n, req, i);
    if (!node_fits_now(n, req, free))
        return false;
    /* The preferred GPUs first (a reservation's the job was drawn into), when enough. */
    pool = req->gpu_prefer != NULL ? free & req->gpu_prefer[i] : free;
    if (pool != free && ((uint32_t)__builtin_popcountll(pool) < req->gpus_per_node ||
                         !choose_gpus(n, req, pool, &ch)))
        pool = free;
    if (pool == free && !choose_gpus(n, req, free, &ch))
        return false;
    *c = (struct candidate){
        .node = (uint32_t)i,
        .outside = req->preferred != NULL && !bit_set(req->preferred, i),
        .switch_id = n->switch_id,
        .worst = ch.worst,
        .nic = req->nodes > 1 ? node_nic(n, req, pool, ch.mask) : 0,
        .gpus_left = (uint32_t)__builtin_popcountll(free) - req->gpus_per_node,
        .cores_left = n->ncores_free - req->cores_per_node,
        .gpus = ch.mask,
        .pool = pool,
        .score = ch.score,
        .data = req->data_bytes != NULL && !req->data_first ? req->data_bytes[i] : 0,
        .data_first = req->data_bytes != NULL && req->data_first ? req->data_bytes[i] : 0};
    return true;
}

/* Where in g's order the nodes with req's free cores begin. */
HOT_INLINE uint32_t group_first_with_cores(const struct sched_cluster *c, const struct group *g,
                                           const struct sched_req *req)
{
    uint32_t lo = 0, hi = g->n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (c->nodes[g->nodes[mid]].ncores_free < req->cores_per_node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* From position at of g (whose nodes there on have the cores, and the features: group_choice),
 * the first node req may take as node_fits_now and candidate_at would: its position, or g->n. */
HOT_INLINE uint32_t group_next(const struct sched_cluster *c, const struct group *g, uint32_t at,
                               const struct sched_req *req, const uint64_t *avoid)
{
    for (; at < g->n; at++) {
        uint32_t i = g->nodes[at];
        const struct node *n = &c->nodes[i];

        if (n->up && !n->exclusive_held && n->mem_free >= req->mem_per_node_mib &&
            !(req->exclusive && n->njobs > 0) && node_allowed(req, i) && !bit_set(avoid, i))
            break;
    }
    return at;
}

/* The best node of a group for req: the first in (free cores, index) order that fits.
 * UINT32_MAX: none. */
HOT_INLINE uint32_t group_best(const struct sched_cluster *c, const struct group *g,
                               const struct sched_req *req, const uint64_t *avoid)
{
    uint32_t at = group_next(c, g, group_first_with_cores(c, g, req), req, avoid);

    return at < g->n ? g->nodes[at] : UINT32_MAX;
}

/*
 * Whether the candidate index answers: while the cluster keeps groups (not in a copy, not
 * past GROUPS_MAX), for every request. Node lists that allow or avoid nodes, a constraint
 * and exclusivity only rule nodes out, one by one (group_next); reservations' GPU masks and
 * preferences, the job's data in the nodes' caches and the nodes it must have change the
 * figures or the order of their own nodes, which are scored one by one (struct singled).
 */
static bool index_answers(const struct sched_cluster *cluster)
{
    return cluster->groups != NULL;
}

/*
 * The nodes scored one by one: those whose reservations' GPU mask is not every GPU (the
 * reservations' own, as the planner makes the masks), a reservation's preferred nodes and
 * GPUs (they rank first), the nodes that hold some of the job's dataset, and those it must
 * have (--nodelist). The groups' walk passes over them (skip: avoid and them); the others'
 * figures are their group's, not preferred, holding none of the data.
 */
struct singled {
    uint64_t *skip;        /* NULL: none singled out (skip is avoid) */
    const uint32_t *nodes; /* n of them: req's list, or own */
    uint32_t n;
    uint32_t *own;
};

/* Node i into m's own list and skip, once. */
static void singled_add(struct singled *m, uint32_t i)
{
    uint64_t bit = UINT64_C(1) << (i % 64);

    if (m->skip[i / 64] & bit)
        return; /* there already, or avoided (which no score would take) */
    m->skip[i / 64] |= bit;
    m->own[m->n++] = i;
}

/* The nodes of bitmap bits (NULL: none) below n into m. */
static void singled_add_bits(struct singled *m, const uint64_t *bits, uint32_t n)
{
    for (uint32_t w = 0; bits != NULL && w < (n + 63) / 64; w++) {
        for (uint64_t b = bits[w]; b != 0; b &= b - 1) {
            uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(b);

            if (i < n)
                singled_add(m, i);
        }
    }
}

static int singled_split(const struct sched_cluster *c, const struct sched_req *req,
                         const uint64_t *avoid, struct singled *ret)
{
    size_t words = c->nnodes / 64 + 1;
    bool beyond_masks = req->preferred != NULL || req->gpu_prefer != NULL ||
                        req->data_bytes != NULL || req->required != NULL;
    bool masks_unlisted = req->gpu_masks != NULL && req->gpu_masked == NULL;
    bool data_listed = req->data_bytes != NULL && req->data_nodes != NULL;
    bool data_unlisted = req->data_bytes != NULL && req->data_nodes == NULL;

    *ret = (struct singled){0};
    if (req->gpu_masks == NULL && !beyond_masks)
        return 0;
    if ((ret->skip = calloc(words, sizeof(*ret->skip))) == NULL)
        return -ENOMEM;
    if (avoid != NULL)
        memcpy(ret->skip, avoid, words * sizeof(*ret->skip));
    if (req->gpu_masked != NULL && !beyond_masks) { /* the planner's list, as it is */
        ret->nodes = req->gpu_masked;
        ret->n = req->ngpu_masked;
        for (uint32_t k = 0; k < ret->n; k++)
            ret->skip[ret->nodes[k] / 64] |= UINT64_C(1) << (ret->nodes[k] % 64);
        return 0;
    }
    if ((ret->own = malloc((c->nnodes > 0 ? c->nnodes : 1) * sizeof(*ret->own))) == NULL)
        return -ENOMEM;
    ret->nodes = ret->own;
    for (uint32_t k = 0; req->gpu_masked != NULL && k < req->ngpu_masked; k++)
        singled_add(ret, req->gpu_masked[k]);
    for (uint32_t k = 0; data_listed && k < req->ndata_nodes; k++)
        singled_add(ret, req->data_nodes[k]);
    /* Per-node arrays without a list: every node looked at (the bitmaps below, word by
     * word: a MAGNETIC reservation's few nodes are not sought among 10,000 for each job). */
    for (uint32_t i = 0; (masks_unlisted || data_unlisted) && i < c->nnodes; i++) {
        if ((masks_unlisted && req->gpu_masks[i] != ~UINT64_C(0)) ||
            (data_unlisted && req->data_bytes[i] != 0))
            singled_add(ret, i);
    }
    singled_add_bits(ret, req->preferred, c->nnodes); /* gpu_prefer's nodes among them */
    singled_add_bits(ret, req->required, c->nnodes);
    return 0;
}

static void singled_release(struct singled *m)
{
    free(m->skip);
    free(m->own);
}

/* The GPUs every node of g would give req (false: none will do, or they lack its
 * constraint), as choose_gpus chooses. */
HOT_INLINE bool group_choice(const struct group *g, const struct sched_req *req,
                             struct gs_gpuset_choice *ch)
{
    uint32_t k = req->gpus_per_node;

    memset(ch, 0, sizeof(*ch));
    if (g->n == 0 || (uint32_t)__builtin_popcountll(g->mask) < k ||
        !features_have(g->features, g->nfeatures, req->constraint))
        return false;
    if (k > 0 && g->gs != NULL)
        return shape_choose(g->gs, g->mask, k, req->affinity, ch) == 0;
    ch->mask = lowest_bits(g->mask, k);
    return true;
}

/*
 * place_one through the candidate index: the same ranking (candidate_at's figures, which a
 * group's nodes share but for their free cores), one GPU choice and one search per group,
 * passing over the nodes in avoid; the best into *ret, *ret_found whether there is one.
 */
HOT_INLINE void place_one_indexed(const struct sched_cluster *cluster, const struct sched_req *req,
                                  const uint64_t *avoid, struct candidate *ret, bool *ret_found)
{
    uint32_t k = req->gpus_per_node;
    bool found = false;

    for (size_t gi = 0; gi < cluster->ngroups; gi++) {
        const struct group *g = &cluster->groups[gi];
        struct gs_gpuset_choice ch;
        struct candidate c;
        uint32_t best;

        if (!group_choice(g, req, &ch) || (best = group_best(cluster, g, req, avoid)) == UINT32_MAX)
            continue;
        c = (struct candidate){.node = best,
                               .outside = req->preferred != NULL,
                               .switch_id = cluster->nodes[best].switch_id,
                               .worst = ch.worst,
                               .gpus_left = (uint32_t)__builtin_popcountll(g->mask) - k,
                               .cores_left = cluster->nodes[best].ncores_free - req->cores_per_node,
                               .gpus = ch.mask,
                               .pool = cluster->nodes[best].gpu_free,
                               .score = ch.score};
        if (!found || compare_candidates(&c, ret) < 0) {
            *ret = c;
            found = true;
        }
    }
    *ret_found = found;
}

/* The better of *best (when *found) and node i's candidate, into *best. */
HOT_INLINE void keep_better(const struct sched_cluster *cluster, const struct sched_req *req,
                            const uint64_t *avoid, size_t i, struct candidate *best, bool *found)
{
    struct candidate c;

    if (candidate_at(cluster, req, avoid, i, &c) && (!*found || compare_candidates(&c, best) < 0)) {
        *best = c;
        *found = true;
    }
}

/* A one-node job without a node list: the best candidate, in one pass without a sort. */
HOT_INLINE int place_one(const struct sched_cluster *cluster, const struct sched_req *req,
                         const uint64_t *avoid, struct sched_alloc *alloc)
{
    struct candidate best = {0};
    struct singled m = {0};
    bool found = false;
    int rc;

    if (!index_answers(cluster)) {
        /* By 64 nodes: a word of avoided ones is passed over whole (preemption's tries
         * avoid all but a few). */
        for (size_t w = 0; w * 64 < cluster->nnodes; w++) {
            size_t end = w * 64 + 64 < cluster->nnodes ? w * 64 + 64 : cluster->nnodes;

            if (avoid != NULL && avoid[w] == ~UINT64_C(0))
                continue;
            for (size_t i = w * 64; i < end; i++)
                keep_better(cluster, req, avoid, i, &best, &found);
        }
    } else if ((rc = singled_split(cluster, req, avoid, &m)) < 0) {
        singled_release(&m);
        return rc;
    } else {
        place_one_indexed(cluster, req, m.skip != NULL ? m.skip : avoid, &best, &found);
        for (uint32_t k = 0; k < m.n; k++)
            keep_better(cluster, req, avoid, m.nodes[k], &best, &found);
        singled_release(&m);
    }
    if (!found)
        return -EAGAIN;
    if ((rc = sched_alloc_reserve(alloc, 1)) < 0)
        return rc;
    place_in_node(&cluster->nodes[best.node], best.node, req,
                  final_gpus(&cluster->nodes[best.node], req, best.pool, best.gpus),
                  &alloc->nodes[0]);
    alloc->nnodes = 1;
    alloc->exclusive = req->exclusive;
    return 0;
}

/*
 * A gang's candidates in rank order without scoring every node: each group's nodes are
 * already in rank order among themselves (they share every figure but free cores, switch and
 * index), so a heap of the groups' next nodes merges them. under_one_switch then needs only
 * a prefix of the ranking: the one that holds its switch's choice for certain.
 */
struct cursor {
    struct candidate head; /* the group's next candidate */
    const struct group *g; /* NULL: the singled-out nodes' candidates (struct ranked) */
    uint32_t at;           /* head's position in g, or in those */
};

/* Candidates scored one by one (the singled-out nodes), in rank order. */
struct ranked {
    struct candidate *c;
    uint32_t n;
};

/* Restores the heap below position i (the smallest head on top). */
static void heap_down(struct cursor *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;

        if (l < n && compare_candidates(&h[l].head, &h[m].head) < 0)
            m = l;
        if (l + 1 < n && compare_candidates(&h[l + 1].head, &h[m].head) < 0)
            m = l + 1;
        if (m == i)
            return;
        struct cursor t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Moves cursor cur to its group's node at position at (which fits). */
static void cursor_at(const struct sched_cluster *c, const struct sched_req *req,
                      struct cursor *cur, uint32_t at)
{
    uint32_t node = cur->g->nodes[at];

    cur->at = at;
    cur->head.node = node;
    cur->head.switch_id = c->nodes[node].switch_id;
    cur->head.cores_left = c->nodes[node].ncores_free - req->cores_per_node;
}

/* One cursor per group with a node that fits, and one for extra when it has any, into h
 * (ngroups + 1 entries); how many. */
static uint32_t cursors_start(const struct sched_cluster *c, const struct sched_req *req,
                              const uint64_t *avoid, const struct ranked *extra, struct cursor *h)
{
    uint32_t n = 0;

    if (extra->n > 0)
        h[n++] = (struct cursor){.head = extra->c[0], .g = NULL, .at = 0};
    for (size_t gi = 0; gi < c->ngroups; gi++) {
        const struct group *g = &c->groups[gi];
        struct gs_gpuset_choice ch;
        uint32_t at;

        if (!group_choice(g, req, &ch) ||
            (at = group_next(c, g, group_first_with_cores(c, g, req), req, avoid)) == g->n)
            continue;
        h[n] = (struct cursor){
            .g = g,
            .head = {.outside = req->preferred != NULL,
                     .worst = ch.worst,
                     .nic = node_nic(&c->nodes[g->nodes[at]], req, g->mask, ch.mask),
                     .gpus_left = (uint32_t)__builtin_popcountll(g->mask) - req->gpus_per_node,
                     .gpus = ch.mask,
                     .pool = g->mask,
                     .score = ch.score}};
        cursor_at(c, req, &h[n++], at);
    }
    for (uint32_t i = n / 2; i-- > 0;)
        heap_down(h, n, i);
    return n;
}

/*
 * The ranked candidates for a gang from the candidate index and extra (the nodes it passes
 * over: avoid), into cand (nnodes entries): the whole ranking, or a prefix of it that holds
 * the first want and, with switches on a cluster that has some, under_one_switch's choice.
 * Their count; -ENOMEM.
 */
static int gang_ranked(const struct sched_cluster *c, const struct sched_req *req,
                       const uint64_t *avoid, const struct ranked *extra, uint32_t want,
                       bool switches, struct candidate *cand)
{
    struct cursor *h = malloc((c->ngroups + 1) * sizeof(*h));
    int nsw = switches ? c->switch_max : 0;
    struct switch_tally *tally = calloc((size_t)nsw + 1, sizeof(*tally));
    uint32_t nh, m = 0;
    int rc = -ENOMEM;

    if (h == NULL || tally == NULL)
        goto out;
    nh = cursors_start(c, req, avoid, extra, h);
    while (nh > 0) {
        struct cursor *top = &h[0];
        bool filled = tally_add(tally, nsw, &top->head, m, want); /* a switch got its want */
        uint32_t at;

        cand[m++] = top->head;
        if (m >= want && nsw <= 0)
            break; /* no switches: under_one_switch keeps the ranking */
        if (m >= want && (filled || (m & (m - 1)) == 0) && switch_settled(tally, nsw, want, m))
            break;
        if (top->g == NULL && top->at + 1 < extra->n)
            top->head = extra->c[++top->at];
        else if (top->g != NULL &&
                 (at = group_next(c, top->g, top->at + 1, req, avoid)) < top->g->n)
            cursor_at(c, req, top, at);
        else
            h[0] = h[--nh];
        heap_down(h, nh, 0);
    }
    rc = (int)m;
out:
    free(h);
    free(tally);
    return rc;
}

/*
 * A job with a node list it must have (--nodelist): its listed nodes that fit, in rank order,
 * then the others in rank order as far as it needs (the listed ones are among extra, scored
 * one by one, and in skip). As required_first orders the scan's ranking; no switch choice.
 */
static int required_ranked(const struct sched_cluster *c, const struct sched_req *req,
                           const uint64_t *skip, struct ranked *extra, struct candidate *cand)
{
    uint32_t nreq = 0, rest = 0;
    int rc;

    for (uint32_t k = 0; k < extra->n; k++) { /* a stable split: both keep their order */
        if (bit_set(req->required, extra->c[k].node))
            cand[nreq++] = extra->c[k];
        else
            extra->c[rest++] = extra->c[k];
    }
    extra->n = rest;
    if (nreq >= req->nodes)
        return (int)nreq;
    rc = gang_ranked(c, req, skip, extra, req->nodes - nreq, false, cand + nreq);
    return rc < 0 ? rc : rc + (int)nreq;
}

/* gang_ranked, with the nodes reservations narrow or prefer, that hold the job's data or
 * that it must have, scored one by one. */
static int gang_indexed(const struct sched_cluster *c, const struct sched_req *req,
                        const uint64_t *avoid, struct candidate *cand)
{
    struct ranked extra = {0};
    struct singled m;
    int rc = singled_split(c, req, avoid, &m);

    if (rc == 0 && m.n > 0 && (extra.c = malloc(m.n * sizeof(*extra.c))) == NULL)
        rc = -ENOMEM;
    for (uint32_t k = 0; rc == 0 && k < m.n; k++) {
        if (candidate_at(c, req, avoid, m.nodes[k], &extra.c[extra.n]))
            extra.n++;
    }
    if (rc == 0 && extra.n > 1)
        gs_sort(extra.c, extra.n, sizeof(*extra.c), compare_candidates);
    if (rc == 0 && req->required != NULL) {
        rc = required_ranked(c, req, m.skip, &extra, cand);
    } else if (rc == 0) {
        rc = gang_ranked(c, req, m.skip != NULL ? m.skip : avoid, &extra, req->nodes, true, cand);
    }
    free(extra.c);
    singled_release(&m);
    return rc;
}

static int place_shape(const struct sched_cluster *cluster, const struct sched_req *req,
                       const uint64_t *avoid, struct sched_alloc *alloc);

/* Component after component, each kept off the nodes the earlier ones took (and avoid). */
static int place_het(const struct sched_cluster *cluster, const struct sched_req *req,
                     const uint64_t *avoid, struct sched_alloc *alloc)
{
    size_t words = cluster->nnodes / 64 + 1;
    uint64_t *taken = calloc(words, sizeof(*taken));
    struct sched_alloc part;
    int rc = -ENOMEM;

    sched_alloc_init(&part);
    if (taken == NULL)
        goto out;
    if (avoid != NULL)
        memcpy(taken, avoid, words * sizeof(*taken));
    rc = place_shape(cluster, req, taken, alloc);
    for (uint32_t k = 0; rc == 0 && k <= req->nhet; k++) {
        const struct sched_alloc *from = k == 0 ? alloc : &part;
        uint32_t at = alloc->nnodes;

        if (k > 0) {
            rc = place_shape(cluster, &req->het[k - 1], taken, &part);
            if (rc == 0)
                rc = sched_alloc_reserve(alloc, at + part.nnodes);
            if (rc < 0)
                break;
            memcpy(&alloc->nodes[at], part.nodes, part.nnodes * sizeof(*part.nodes));
            alloc->nnodes = at + part.nnodes;
        }
        for (uint32_t i = 0; i < from->nnodes; i++)
            taken[from->nodes[i].node / 64] |= 1ull << (from->nodes[i].node % 64);
    }
    alloc->exclusive = req->exclusive;
out:
    sched_alloc_release(&part);
    free(taken);
    return rc;
}

int sched_cluster_place(const struct sched_cluster *cluster, const struct sched_req *req,
                        const uint64_t *avoid, struct sched_alloc *alloc)
{
    if (req->nhet > 0)
        return place_het(cluster, req, avoid, alloc);
    return place_shape(cluster, req, avoid, alloc);
}

static int place_plain(const struct sched_cluster *cluster, const struct sched_req *req,
                       const uint64_t *avoid, struct sched_alloc *alloc);

/*
 * One shape. Under a matching OR ("[a|b]"), every node meets the same alternative: the first,
 * in the order written, under which the job fits.
 */
static int place_shape(const struct sched_cluster *cluster, const struct sched_req *req,
                       const uint64_t *avoid, struct sched_alloc *alloc)
{
    char alt[GS_FEATURES_EXPR_MAX + 1];
    struct sched_req one;
    int rc = -EAGAIN;

    if (!gs_features_matching_or(req->constraint))
        return place_plain(cluster, req, avoid, alloc);
    one = *req;
    one.constraint = alt;
    for (unsigned k = 0;
         rc == -EAGAIN && gs_features_alternative(req->constraint, k, alt, sizeof(alt)); k++)
        rc = place_plain(cluster, &one, avoid, alloc);
    return rc;
}

/* One shape: req->nodes nodes alike. */
GS_POPCNT_CLONES static int place_plain(const struct sched_cluster *cluster,
                                        const struct sched_req *req, const uint64_t *avoid,
                                        struct sched_alloc *alloc)
{
    struct candidate *cand;
    uint32_t ncand = 0;
    int rc = -EAGAIN;

    if (req->nodes == 0 || req->nodes > cluster->nnodes)
        return -EAGAIN;
    if (req->gpus_per_node <= SCHED_MAX_GPUS) { /* too few nodes with as many free GPUs */
        uint32_t enough = 0;

        for (uint32_t f = req->gpus_per_node; f <= cluster->gpus_max && enough < req->nodes; f++)
            enough += cluster->by_free[f];
        if (enough < req->nodes)
            return -EAGAIN;
    }
    if (req->nodes == 1 && req->required == NULL)
        return place_one(cluster, req, avoid, alloc);
    cand = malloc(cluster->nnodes * sizeof(*cand));
    if (cand == NULL)
        return -ENOMEM;
    if (index_answers(cluster)) {
        if ((rc = gang_indexed(cluster, req, avoid, cand)) < 0)
            goto out;
        ncand = (uint32_t)rc;
        rc = -EAGAIN;
    } else {
        for (size_t i = 0; i < cluster->nnodes; i++) {
            if (candidate_at(cluster, req, avoid, i, &cand[ncand]))
                ncand++;
        }
        gs_sort(cand, ncand, sizeof(*cand), compare_candidates);
    }
    if (ncand < req->nodes)
        goto out;
    if (req->required != NULL) {
        if (required_first(cand, ncand, req->required) < req->nrequired)
            goto out; /* a node it must have is busy */
    } else if (req->nodes > 1) {
        if ((rc = under_one_switch(cand, ncand, req->nodes, cluster->switch_max)) < 0)
            goto out;
        /* With no [[switch]] declared, --switches asks for nothing, as Slurm's without a
         * topology does. */
        if (rc == 0 && req->max_switches > 0 && cluster->switch_max > 0 &&
            (rc = within_switches(cand, ncand, req->nodes, cluster->switch_max,
                                  req->max_switches)) < 0)
            goto out;
    }
    rc = sched_alloc_reserve(alloc, req->nodes);
    if (rc < 0)
        goto out;
    for (uint32_t k = 0; k < req->nodes; k++) {
        const struct node *n = &cluster->nodes[cand[k].node];

        place_in_node(n, cand[k].node, req, final_gpus(n, req, cand[k].pool, cand[k].gpus),
                      &alloc->nodes[k]);
    }
    alloc->nnodes = req->nodes;
    alloc->exclusive = req->exclusive;
out:
    free(cand);
    return rc;
}
