/*
 * planner.c: the shard planner of issue 19 (rule, guarantees and determinism in planner.h)
 * and the naive rank slicing it is measured against. Nothing here reads a file or a clock:
 * the trainer's loader, a future `gsched data` and bench/locality all feed it the same
 * plain arrays, and the same input always gives the same plan.
 *
 * Shape of the work: a context holds what both rules need (each rank's node, each node's
 * ranks, each rank's load); the planner fills assign[] (shard -> rank) by a greedy pass and
 * a rebalancing pass, the naive rule fills it from the loader's permutation, and one
 * function turns assign[] into the plan and its accounting, so the two are counted alike.
 */
#include "sharding/planner.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"
#include "sharding/loader.h"
#include "sharding/rng.h"

#define NONE UINT32_MAX

struct ctx {
    const struct shard_plan_input *in;
    uint32_t nranks, nnodes;
    uint32_t *rank_node;     /* nranks */
    uint32_t *node_rank_off; /* nnodes + 1: node n's ranks are node_ranks[off[n] .. off[n+1]) */
    uint32_t *node_ranks;    /* nranks, ascending within a node */
    uint64_t *load;          /* nranks: tokens assigned so far */
    uint32_t *assign;        /* nshards: the rank reading each shard */
    double mean, cap, floor; /* the band: [floor, cap] */
};

/* --- input --- */

static int check_holders(const struct shard_plan_input *in, struct gs_error *err)
{
    uint32_t *seen = NULL; /* seen[n] = shard + 1 that last listed node n: duplicates */
    int rc = 0;

    if (in->nshards == 0)
        return 0;
    if (in->shards == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "shards: missing for %zu shards", in->nshards);
    if (in->holder_off == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "holder_off: missing for %zu shards", in->nshards);
    if (in->holder_off[0] != 0)
        return gs_error_set(err, -EINVAL, 0, 0, "holder_off: must start at 0, not %" PRIu32,
                            in->holder_off[0]);
    if (in->holder_off[in->nshards] > 0 && in->holders == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "holders: missing for %" PRIu32 " entries",
                            in->holder_off[in->nshards]);
    seen = calloc(in->nnodes + (size_t)1, sizeof(*seen));
    if (seen == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "planner: out of memory");
    for (size_t i = 0; i < in->nshards; i++) {
        if (in->holder_off[i + 1] < in->holder_off[i]) {
            rc = gs_error_set(err, -EINVAL, 0, 0, "holder_off: decreases at shard %zu", i);
            goto out;
        }
        for (uint32_t k = in->holder_off[i]; k < in->holder_off[i + 1]; k++) {
            uint32_t n = in->holders[k];

            if (n >= in->nnodes) {
                rc = gs_error_set(err, -EINVAL, 0, 0,
                                  "holders: shard %zu lists node %" PRIu32
                                  ", not below nnodes %" PRIu32,
                                  i, n, in->nnodes);
                goto out;
            }
            if (seen[n] == i + 1) {
                rc = gs_error_set(err, -EINVAL, 0, 0,
                                  "holders: shard %zu lists node %" PRIu32 " twice", i, n);
                goto out;
            }
            seen[n] = (uint32_t)(i + 1);
        }
    }
out:
    free(seen);
    return rc;
}

static int check_input(const struct shard_plan_input *in, struct gs_error *err)
{
    uint64_t total = 0;

    if (in == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "planner: no input");
    if (in->nranks < 1)
        return gs_error_set(err, -EINVAL, 0, 0, "nranks: must be at least 1");
    if (in->nnodes < 1)
        return gs_error_set(err, -EINVAL, 0, 0, "nnodes: must be at least 1");
    /* Shard indices are uint32_t in the plan; seen[] in check_holders stores index + 1. */
    if (in->nshards >= UINT32_MAX)
        return gs_error_set(err, -EINVAL, 0, 0, "nshards: %zu, must be below 2^32 - 1",
                            in->nshards);
    if (!isfinite(in->tolerance) || in->tolerance < 0)
        return gs_error_set(err, -EINVAL, 0, 0, "tolerance: must be a finite number >= 0");
    if (in->rank_node == NULL) {
        if (in->ranks_per_node < 1)
            return gs_error_set(err, -EINVAL, 0, 0,
                                "ranks_per_node: must be at least 1 (or give rank_node)");
        if ((uint64_t)in->nnodes * in->ranks_per_node < in->nranks)
            return gs_error_set(err, -EINVAL, 0, 0,
                                "ranks_per_node: %" PRIu32 " ranks at %" PRIu32
                                " per node need more than nnodes %" PRIu32,
                                in->nranks, in->ranks_per_node, in->nnodes);
    } else {
        for (uint32_t r = 0; r < in->nranks; r++) {
            if (in->rank_node[r] >= in->nnodes)
                return gs_error_set(err, -EINVAL, 0, 0,
                                    "rank_node: rank %" PRIu32 " on node %" PRIu32
                                    ", not below nnodes %" PRIu32,
                                    r, in->rank_node[r], in->nnodes);
        }
    }
    for (size_t i = 0; i < in->nshards && in->shards != NULL; i++) {
        if (total + in->shards[i].tokens < total)
            return gs_error_set(err, -EINVAL, 0, 0, "shards: total tokens overflow at shard %zu",
                                i);
        total += in->shards[i].tokens;
    }
    return check_holders(in, err);
}

/* --- the context both rules share --- */

static void ctx_free(struct ctx *c)
{
    free(c->rank_node);
    free(c->node_rank_off);
    free(c->node_ranks);
    free(c->load);
    free(c->assign);
}

static int ctx_init(struct ctx *c, const struct shard_plan_input *in, struct gs_error *err)
{
    uint64_t total = 0;

    memset(c, 0, sizeof(*c));
    c->in = in;
    c->nranks = in->nranks;
    c->nnodes = in->nnodes;
    c->rank_node = calloc(in->nranks, sizeof(*c->rank_node));
    c->node_rank_off = calloc((size_t)in->nnodes + 1, sizeof(*c->node_rank_off));
    c->node_ranks = calloc(in->nranks, sizeof(*c->node_ranks));
    c->load = calloc(in->nranks, sizeof(*c->load));
    /* +1: calloc(0) may return NULL, which would read as out of memory. */
    c->assign = calloc(in->nshards + 1, sizeof(*c->assign));
    if (c->rank_node == NULL || c->node_rank_off == NULL || c->node_ranks == NULL ||
        c->load == NULL || c->assign == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "planner: out of memory");
    for (uint32_t r = 0; r < in->nranks; r++) {
        c->rank_node[r] = in->rank_node != NULL ? in->rank_node[r] : r / in->ranks_per_node;
        c->node_rank_off[c->rank_node[r] + 1]++;
    }
    for (uint32_t n = 0; n < in->nnodes; n++)
        c->node_rank_off[n + 1] += c->node_rank_off[n];
    /* Ascending rank order within each node: ties between a node's ranks go to the lowest. */
    {
        uint32_t *fill = c->node_ranks;
        uint32_t *cur = calloc(in->nnodes, sizeof(*cur));

        if (cur == NULL)
            return gs_error_set(err, -ENOMEM, 0, 0, "planner: out of memory");
        for (uint32_t r = 0; r < in->nranks; r++) {
            uint32_t n = c->rank_node[r];

            fill[c->node_rank_off[n] + cur[n]++] = r;
        }
        free(cur);
    }
    for (size_t i = 0; i < in->nshards; i++)
        total += in->shards[i].tokens;
    c->mean = (double)total / in->nranks;
    c->cap = c->mean * (1 + in->tolerance);
    c->floor = c->mean * (1 - in->tolerance);
    return 0;
}

static bool holds(const struct ctx *c, size_t s, uint32_t node)
{
    const struct shard_plan_input *in = c->in;

    for (uint32_t k = in->holder_off[s]; k < in->holder_off[s + 1]; k++) {
        if (in->holders[k] == node)
            return true;
    }
    return false;
}

static bool node_has_ranks(const struct ctx *c, uint32_t node)
{
    return c->node_rank_off[node + 1] > c->node_rank_off[node];
}

/* Bytes shard s costs when read on node: 0 where the node holds a copy. */
static int64_t cost(const struct ctx *c, size_t s, uint32_t node)
{
    return holds(c, s, node) ? 0 : (int64_t)c->in->shards[s].bytes;
}

/* The least-loaded rank of all, lowest index on ties, skipping skip (NONE: none). */
static uint32_t least_loaded(const struct ctx *c, uint32_t skip)
{
    uint32_t best = NONE;

    for (uint32_t r = 0; r < c->nranks; r++) {
        if (r != skip && (best == NONE || c->load[r] < c->load[best]))
            best = r;
    }
    return best;
}

/* The least-loaded rank on node, lowest index on ties, skipping skip; NONE when none. */
static uint32_t least_loaded_on(const struct ctx *c, uint32_t node, uint32_t skip)
{
    uint32_t best = NONE;

    for (uint32_t k = c->node_rank_off[node]; k < c->node_rank_off[node + 1]; k++) {
        uint32_t r = c->node_ranks[k];

        if (r != skip && (best == NONE || c->load[r] < c->load[best]))
            best = r;
    }
    return best;
}

/* --- the planner: greedy --- */

struct order_key {
    uint32_t cls; /* holders among the job's nodes; none: UINT32_MAX (placed last) */
    uint32_t shard;
    uint64_t tokens;
    uint64_t hash;
};

/* Total order: class asc, tokens desc, hash asc, index asc; so qsort's instability is moot. */
static int cmp_key(const void *pa, const void *pb)
{
    const struct order_key *a = pa, *b = pb;

    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    if (a->tokens != b->tokens)
        return a->tokens > b->tokens ? -1 : 1;
    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return a->shard < b->shard ? -1 : (a->shard > b->shard);
}

static int greedy(struct ctx *c, struct gs_error *err)
{
    const struct shard_plan_input *in = c->in;
    struct order_key *keys = calloc(in->nshards + 1, sizeof(*keys));

    if (keys == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "planner: out of memory");
    for (size_t s = 0; s < in->nshards; s++) {
        uint32_t nh = 0;
        uint64_t h = in->seed ^ shard_splitmix64(&(uint64_t){s});

        for (uint32_t k = in->holder_off[s]; k < in->holder_off[s + 1]; k++)
            nh += node_has_ranks(c, in->holders[k]);
        keys[s] = (struct order_key){.cls = nh > 0 ? nh : UINT32_MAX,
                                     .shard = (uint32_t)s,
                                     .tokens = in->shards[s].tokens,
                                     .hash = shard_splitmix64(&h)};
    }
    gs_sort(keys, in->nshards, sizeof(*keys), cmp_key);
    for (size_t i = 0; i < in->nshards; i++) {
        uint32_t s = keys[i].shard, best = NONE;
        uint64_t t = keys[i].tokens;

        for (uint32_t k = in->holder_off[s]; k < in->holder_off[s + 1]; k++) {
            uint32_t r = least_loaded_on(c, in->holders[k], NONE);

            if (r != NONE && (best == NONE || c->load[r] < c->load[best] ||
                              (c->load[r] == c->load[best] && r < best)))
                best = r;
        }
        if (best == NONE || (double)(c->load[best] + t) > c->cap)
            best = least_loaded(c, NONE);
        c->assign[s] = best;
        c->load[best] += t;
    }
    free(keys);
    return 0;
}

/* --- the planner: rebalancing --- */

/*
 * One candidate step: shard moves from rank from to rank to and, in a swap, back moves from
 * to to from (NONE: a plain move). A swap shifts the difference of two shards, which is what
 * evens out ranks when every single shard is too big to move.
 */
struct move {
    uint32_t shard, back, from, to;
    bool good;     /* both ranks inside the band afterwards */
    int64_t delta; /* bytes it adds (negative: saves) */
    double dist;   /* the farther of the two ranks from the mean afterwards */
};

/* Is a better than b? In order: inside the band, fewer bytes added, nearer the mean, indices. */
static bool better(const struct move *a, const struct move *b)
{
    if (b->shard == NONE)
        return true;
    if (a->good != b->good)
        return a->good;
    if (a->delta != b->delta)
        return a->delta < b->delta;
    if (a->dist != b->dist)
        return a->dist < b->dist;
    if (a->shard != b->shard)
        return a->shard < b->shard;
    if (a->to != b->to)
        return a->to < b->to;
    return a->back < b->back;
}

/* Considers moving s from its rank to rank to (and back from to to s's rank, unless NONE);
 * keeps the step in *best if it is the better one. */
static void consider(const struct ctx *c, uint32_t s, uint32_t to, uint32_t back, struct move *best)
{
    uint32_t from = c->assign[s];
    uint64_t t = c->in->shards[s].tokens, tb = back != NONE ? c->in->shards[back].tokens : 0;
    struct move m;
    int64_t delta;
    double a, b;

    /* Only steps that lower the sum of squared loads, which is what makes rebalancing end:
     * from loses d = t - tb > 0 tokens and to, which gains them, stays below from's load. */
    if (to == NONE || to == from || t <= tb || c->load[to] + (t - tb) >= c->load[from])
        return;
    a = (double)(c->load[from] - (t - tb));
    b = (double)(c->load[to] + (t - tb));
    delta = cost(c, s, c->rank_node[to]) - cost(c, s, c->rank_node[from]);
    if (back != NONE)
        delta += cost(c, back, c->rank_node[from]) - cost(c, back, c->rank_node[to]);
    m = (struct move){.shard = s,
                      .back = back,
                      .from = from,
                      .to = to,
                      .good = a >= c->floor && b <= c->cap,
                      .delta = delta,
                      .dist = fmax(fabs(a - c->mean), fabs(b - c->mean))};
    if (better(&m, best))
        *best = m;
}

/* How many of the most (least) loaded ranks a swap onto (off) a rank looks at, besides the
 * ranks of its own node: the likely partners, and the search stays O(shards) a step. */
#define SWAP_PARTNERS 8

/* Marks (mark[r] = 1, the rest 0) the ranks of self's node but self, and the SWAP_PARTNERS
 * most loaded (most) or least loaded (!most) other ranks, lowest index on ties. */
static void mark_partners(const struct ctx *c, uint32_t self, bool most, uint8_t *mark)
{
    uint32_t node = c->rank_node[self];

    memset(mark, 0, c->nranks);
    for (uint32_t k = c->node_rank_off[node]; k < c->node_rank_off[node + 1]; k++)
        mark[c->node_ranks[k]] = c->node_ranks[k] != self;
    for (int i = 0; i < SWAP_PARTNERS; i++) {
        uint32_t best = NONE;

        for (uint32_t r = 0; r < c->nranks; r++) {
            if (r == self || mark[r])
                continue;
            if (best == NONE || (most ? c->load[r] > c->load[best] : c->load[r] < c->load[best]))
                best = r;
        }
        if (best == NONE)
            break;
        mark[best] = 1;
    }
}

/*
 * The best step off rank hi (mine: its nmine shards): a shard of hi to the least-loaded rank
 * of all, of hi's node or of a node holding the shard (the only targets that can be cheapest
 * for it), or swapped with a smaller shard of a partner rank.
 */
static struct move push_from(const struct ctx *c, uint32_t hi, const uint32_t *node_min,
                             const uint32_t *mine, size_t nmine, uint8_t *mark)
{
    const struct shard_plan_input *in = c->in;
    uint32_t global = least_loaded(c, hi), own = least_loaded_on(c, c->rank_node[hi], hi);
    struct move best = {.shard = NONE};

    for (size_t i = 0; i < nmine; i++) {
        uint32_t s = mine[i];

        consider(c, s, global, NONE, &best);
        consider(c, s, own, NONE, &best);
        for (uint32_t k = in->holder_off[s]; k < in->holder_off[s + 1]; k++)
            consider(c, s, node_min[in->holders[k]], NONE, &best);
    }
    /* Swaps only when no free move lands inside the band. */
    if (best.shard != NONE && best.good && best.delta <= 0)
        return best;
    mark_partners(c, hi, false, mark);
    for (size_t u = 0; u < in->nshards; u++) {
        for (size_t i = 0; mark[c->assign[u]] && i < nmine; i++)
            consider(c, mine[i], c->assign[u], (uint32_t)u, &best);
    }
    return best;
}

/* The best step onto rank lo: any shard moved to it, or a partner's shard swapped with a
 * smaller one of lo's (mine: its nmine shards). */
static struct move pull_to(const struct ctx *c, uint32_t lo, const uint32_t *mine, size_t nmine,
                           uint8_t *mark)
{
    struct move best = {.shard = NONE};

    for (size_t s = 0; s < c->in->nshards; s++)
        consider(c, (uint32_t)s, lo, NONE, &best);
    if (best.shard != NONE && best.good && best.delta <= 0)
        return best;
    mark_partners(c, lo, true, mark);
    for (size_t s = 0; s < c->in->nshards; s++) {
        for (size_t i = 0; mark[c->assign[s]] && i < nmine; i++)
            consider(c, (uint32_t)s, lo, mine[i], &best);
    }
    return best;
}

/* The shards rank r reads now, ascending, into list (nshards long); returns how many. */
static size_t shards_of(const struct ctx *c, uint32_t r, uint32_t *list)
{
    size_t n = 0;

    for (size_t s = 0; s < c->in->nshards; s++) {
        if (c->assign[s] == r)
            list[n++] = (uint32_t)s;
    }
    return n;
}

static void rebalance(struct ctx *c, uint32_t *ret_moves, bool *ret_capped)
{
    /* Far more than the bench ever needs (tens); a bound on the time of a pathological input. */
    uint64_t limit = 16 * (uint64_t)c->nranks + c->in->nshards;
    uint32_t *node_min = calloc(c->nnodes, sizeof(*node_min));
    uint32_t *mine = calloc(c->in->nshards + 1, sizeof(*mine));
    uint8_t *mark = calloc(c->nranks, sizeof(*mark));
    uint32_t moves = 0;
    bool capped = false;

    /* Without the scratch arrays, skip the pass: the greedy's maximum bound still holds. */
    if (node_min == NULL || mine == NULL || mark == NULL)
        goto out;
    for (;;) {
        uint32_t hi = 0, lo = 0;
        bool hi_out, lo_out;
        struct move m = {.shard = NONE};

        for (uint32_t r = 1; r < c->nranks; r++) {
            hi = c->load[r] > c->load[hi] ? r : hi;
            lo = c->load[r] < c->load[lo] ? r : lo;
        }
        hi_out = (double)c->load[hi] > c->cap;
        lo_out = (double)c->load[lo] < c->floor;
        if (!hi_out && !lo_out)
            break;
        if (moves >= limit) {
            capped = true;
            break;
        }
        for (uint32_t n = 0; n < c->nnodes; n++)
            node_min[n] = least_loaded_on(c, n, NONE);
        /* The rank farther out of the band first; the other end when it has no move. */
        if (hi_out && (!lo_out || (double)c->load[hi] - c->mean >= c->mean - (double)c->load[lo]))
            m = push_from(c, hi, node_min, mine, shards_of(c, hi, mine), mark);
        if (m.shard == NONE && lo_out)
            m = pull_to(c, lo, mine, shards_of(c, lo, mine), mark);
        if (m.shard == NONE && hi_out)
            m = push_from(c, hi, node_min, mine, shards_of(c, hi, mine), mark);
        if (m.shard == NONE)
            break;
        c->load[m.from] -= c->in->shards[m.shard].tokens;
        c->load[m.to] += c->in->shards[m.shard].tokens;
        c->assign[m.shard] = m.to;
        if (m.back != NONE) {
            c->load[m.to] -= c->in->shards[m.back].tokens;
            c->load[m.from] += c->in->shards[m.back].tokens;
            c->assign[m.back] = m.from;
        }
        moves++;
    }
out:
    free(node_min);
    free(mine);
    free(mark);
    *ret_moves = moves;
    *ret_capped = capped;
}

/* --- the plan: assign[] to lists, fetches and totals --- */

/*
 * Builds the plan from c->assign. order: the sequence in which shards are listed (each rank's
 * list keeps it), NULL for ascending index; shuffle: then shuffle each rank's list from
 * (seed, epoch, rank).
 */
static int build(const struct ctx *c, const uint64_t *order, bool shuffle, struct shard_plan **ret,
                 struct gs_error *err)
{
    const struct shard_plan_input *in = c->in;
    struct shard_plan *p = calloc(1, sizeof(*p));
    size_t *cur = NULL;
    int rc = -ENOMEM;

    if (p == NULL)
        goto out;
    p->nranks = c->nranks;
    p->nnodes = c->nnodes;
    p->nshards = in->nshards;
    p->rank_off = calloc((size_t)c->nranks + 1, sizeof(*p->rank_off));
    p->reads = calloc(in->nshards + 1, sizeof(*p->reads));
    p->rank_tokens = calloc(c->nranks, sizeof(*p->rank_tokens));
    p->fetch_off = calloc((size_t)c->nnodes + 1, sizeof(*p->fetch_off));
    p->fetch = calloc(in->nshards + 1, sizeof(*p->fetch));
    cur = calloc((size_t)(c->nranks > c->nnodes ? c->nranks : c->nnodes), sizeof(*cur));
    if (p->rank_off == NULL || p->reads == NULL || p->rank_tokens == NULL || p->fetch_off == NULL ||
        p->fetch == NULL || cur == NULL)
        goto out;

    /* Each rank's reading list, in order's sequence. */
    for (size_t s = 0; s < in->nshards; s++)
        p->rank_off[c->assign[s] + 1]++;
    for (uint32_t r = 0; r < c->nranks; r++)
        p->rank_off[r + 1] += p->rank_off[r];
    for (size_t i = 0; i < in->nshards; i++) {
        size_t s = order != NULL ? (size_t)order[i] : i;
        uint32_t r = c->assign[s];
        bool local = holds(c, s, c->rank_node[r]);

        p->reads[p->rank_off[r] + cur[r]++] =
            (struct shard_plan_read){.shard = (uint32_t)s, .local = local};
        p->rank_tokens[r] += in->shards[s].tokens;
        if (local) {
            p->bytes_local += in->shards[s].bytes;
        } else {
            p->bytes_moved += in->shards[s].bytes;
            p->fetch_off[c->rank_node[r] + 1]++;
        }
    }
    for (uint32_t r = 0; shuffle && r < c->nranks; r++) {
        struct shard_plan_read *list = p->reads + p->rank_off[r];
        uint64_t n = p->rank_off[r + 1] - p->rank_off[r], mix = in->seed, state;

        /* As the loader mixes (seed, epoch), then the rank: nearby triples start far apart. */
        state = shard_splitmix64(&mix) ^ in->epoch;
        state = shard_splitmix64(&state) ^ r;
        state = shard_splitmix64(&state);
        for (uint64_t i = n; i > 1; i--) {
            uint64_t j = shard_uniform(&state, i);
            struct shard_plan_read t = list[i - 1];

            list[i - 1] = list[j];
            list[j] = t;
        }
    }

    /* Each node's fetches, ascending: a shard is read by one rank, so fetched once. */
    for (uint32_t n = 0; n < c->nnodes; n++)
        p->fetch_off[n + 1] += p->fetch_off[n];
    memset(cur, 0, sizeof(*cur) * (c->nranks > c->nnodes ? c->nranks : c->nnodes));
    for (size_t s = 0; s < in->nshards; s++) {
        uint32_t n = c->rank_node[c->assign[s]];

        if (!holds(c, s, n))
            p->fetch[p->fetch_off[n] + cur[n]++] = (uint32_t)s;
    }

    p->tokens_min = UINT64_MAX;
    p->balanced = true;
    p->tokens_mean = c->mean;
    for (uint32_t r = 0; r < c->nranks; r++) {
        uint64_t t = p->rank_tokens[r];

        p->tokens_min = t < p->tokens_min ? t : p->tokens_min;
        p->tokens_max = t > p->tokens_max ? t : p->tokens_max;
        if ((double)t > c->cap || (double)t < c->floor)
            p->balanced = false;
    }
    *ret = p;
    p = NULL;
    rc = 0;
out:
    free(cur);
    shard_plan_free(p);
    if (rc < 0)
        gs_error_set(err, rc, 0, 0, "planner: out of memory");
    return rc;
}

/* --- entry points --- */

int shard_plan(const struct shard_plan_input *in, struct shard_plan **ret, struct gs_error *err)
{
    struct ctx c;
    uint32_t moves = 0;
    bool capped = false;
    int rc;

    *ret = NULL;
    rc = check_input(in, err);
    if (rc < 0)
        return rc;
    rc = ctx_init(&c, in, err);
    if (rc == 0)
        rc = greedy(&c, err);
    if (rc == 0) {
        rebalance(&c, &moves, &capped);
        rc = build(&c, NULL, true, ret, err);
    }
    if (rc == 0) {
        (*ret)->moves = moves;
        (*ret)->moves_capped = capped;
    }
    ctx_free(&c);
    return rc;
}

int shard_plan_naive(const struct shard_plan_input *in, struct shard_plan **ret,
                     struct gs_error *err)
{
    uint64_t *perm = NULL;
    struct ctx c;
    int rc;

    *ret = NULL;
    rc = check_input(in, err);
    if (rc < 0)
        return rc;
    rc = ctx_init(&c, in, err);
    if (rc < 0)
        goto out;
    perm = calloc(in->nshards + 1, sizeof(*perm));
    if (perm == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "planner: out of memory");
        goto out;
    }
    /* loader.h's rule: the epoch's permutation, rank r the slice [r n / W, (r + 1) n / W). */
    shard_loader_permutation(in->seed, in->epoch, in->nshards, perm);
    for (uint32_t r = 0; r < in->nranks; r++) {
        uint64_t a = (uint64_t)r * in->nshards / in->nranks;
        uint64_t b = ((uint64_t)r + 1) * in->nshards / in->nranks;

        for (uint64_t i = a; i < b; i++) {
            c.assign[perm[i]] = r;
            c.load[r] += in->shards[perm[i]].tokens;
        }
    }
    rc = build(&c, perm, false, ret, err);
out:
    free(perm);
    ctx_free(&c);
    return rc;
}

void shard_plan_free(struct shard_plan *p)
{
    if (p == NULL)
        return;
    free(p->rank_off);
    free(p->reads);
    free(p->rank_tokens);
    free(p->fetch_off);
    free(p->fetch);
    free(p);
}
