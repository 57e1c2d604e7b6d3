/*
 * gpuset.c: choosing a job's GPUs within one node by link class (the rule is in gpuset.h).
 *
 * Init builds the group tree: for each class level c = 0..6 the connected components of
 * "pair class <= c" (single GPUs at c = 0, the whole node at c = SYS), each distinct set
 * kept once with the range of levels [lo, hi] at which it is a component, stored in
 * pre-order so a group's descendants are the index range that follows it.
 *
 * Choosing k GPUs: a set whose pairs are all of class <= c is connected at level c, so it
 * lies inside one component of level c. Levels are tried from the best an empty node allows
 * upwards; at the first level where some component can hold k free GPUs with every pair
 * <= c, the best k-set of each such component is found and the best of those wins. So the
 * worst class is minimal by construction, and the rest of the order (total, NVLink count,
 * fragmentation, indices) is compared exactly by one total order, better().
 *
 * Inside a group whose cross-subgroup pairs all share one class L and NVLink count ("uniform",
 * true of every group of a PCIe tree and of NVSwitch nodes), taking x_i GPUs from subgroup i
 * costs the subgroups' own best costs plus L for each of the sum_{i<j} x_i x_j cross pairs.
 * That is a knapsack over subgroups, solved bottom-up for every count 0..k at once
 * (solve_uniform). The cost vector is additive and better() is a total order compatible with
 * adding a disjoint part (lexicographic on the sums, then lowest differing GPU), so keeping
 * only the best set per (group, count) loses nothing. Irregular groups (NVLink meshes) have
 * their free GPUs enumerated, as cliques of the level's graph, or grown greedily when too many.
 *
 * Fragmentation cost of a set S: for each group g it touches, weight(g.lo) times the free
 * GPUs of g that S leaves behind. weight(c) = 65^(6-c): groups of one level are disjoint, so a
 * level's leftovers sum to at most 64, and one GPU left in a better-connected group weighs
 * more than any number left in worse ones. Touching a group with fewer free GPUs leaves fewer
 * behind, which is best fit; breaking a wholly free pair leaves its partner behind.
 *
 * No allocation: the working arrays live on the stack (a few KiB per tree level, at most
 * eight levels deep).
 */
#include "common/gpuset.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/popcnt.h"

/*
 * Counting GPUs is a popcount of a mask, done tens of times per decision on every node
 * gschedd considers for a job: each function that counts bits on the choose and evaluate
 * paths is built with and without POPCNT (common/popcnt.h). Every such function that is not
 * inlined carries the attribute, the recursive ones too; a call from a popcnt clone or from
 * an uncloned function (grow, the entry points' inlined helpers) reaches the callee's popcnt
 * clone, directly or through the ifunc. scheduler/cluster.c does the same for its node scan.
 */

#define INFEASIBLE INT32_MAX
#define NLEVELS (GS_GPUSET_CLASS_WORST + 1)

/* What a set costs, compared lexicographically; total INFEASIBLE marks "no such set". */
struct cost {
    int32_t total;   /* sum of pair classes: lower is better */
    int32_t nvlinks; /* sum of NVLink counts: higher is better */
    uint64_t frag;   /* fragmentation cost: lower is better */
};

/* The best set found for one count, and its cost. */
struct cell {
    struct cost cost;
    uint64_t mask;
};

/* 65^(6 - c): one leftover GPU at level c outweighs 64 at level c + 1. Single GPUs weigh 0. */
static const uint64_t level_weight[NLEVELS] = {
    0,
    UINT64_C(1160290625),
    UINT64_C(17850625),
    UINT64_C(274625),
    UINT64_C(4225),
    UINT64_C(65),
    UINT64_C(1),
};

static int popcount(uint64_t x)
{
    return __builtin_popcountll(x);
}

static int lowest(uint64_t x)
{
    return __builtin_ctzll(x);
}

static uint64_t bit(int i)
{
    return UINT64_C(1) << i;
}

static uint64_t all_gpus(int ngpus)
{
    return ngpus >= GS_GPUSET_MAX ? UINT64_MAX : bit(ngpus) - 1;
}

/*
 * The one order every path compares by, so that the result does not depend on the order in
 * which sets are explored: cost first, then the set holding the lowest GPU where they differ.
 */
static bool better(const struct cell *a, const struct cell *b)
{
    uint64_t diff = a->mask ^ b->mask;

    if (a->cost.total != b->cost.total)
        return a->cost.total < b->cost.total;
    if (a->cost.nvlinks != b->cost.nvlinks)
        return a->cost.nvlinks > b->cost.nvlinks;
    if (a->cost.frag != b->cost.frag)
        return a->cost.frag < b->cost.frag;
    return diff != 0 && (a->mask & (diff & (~diff + 1))) != 0;
}

static bool feasible(const struct cell *c)
{
    return c->cost.total != INFEASIBLE;
}

/* cells[0] is the empty set, cells[1..kmax] not found yet. */
static void clear_cells(struct cell *cells, int kmax)
{
    cells[0] = (struct cell){{0, 0, 0}, 0};
    for (int x = 1; x <= kmax; x++)
        cells[x] = (struct cell){{INFEASIBLE, 0, 0}, 0};
}

/* ---- enumeration inside irregular groups ---- */

struct search {
    const struct gs_gpuset_node *n;
    int cap;       /* every pair of a set must be of class <= cap */
    int kmax;      /* largest set wanted */
    bool only_max; /* only sets of kmax GPUs are wanted (the top level) */
    int nsub;      /* descendants that are not single GPUs (those weigh 0) */
    int16_t sub[GS_GPUSET_GROUPS_MAX];
    uint8_t sub_free[GS_GPUSET_GROUPS_MAX]; /* their free GPUs */
    struct cell *best;                      /* [0..kmax] */
};

/* Offers a set of cnt GPUs whose pair sums are known; adds its descendants' leftovers. */
GS_POPCNT_CLONES static void record(struct search *s, uint64_t mask, int cnt, int32_t total,
                                    int32_t nvlinks)
{
    const struct gs_gpuset_group *groups = s->n->groups;
    struct cell cand = {{total, nvlinks, 0}, mask};

    if (s->only_max && cnt != s->kmax)
        return;
    for (int i = 0; i < s->nsub; i++) {
        int x = popcount(mask & groups[s->sub[i]].mask);

        if (x > 0)
            cand.cost.frag += level_weight[groups[s->sub[i]].lo] * (uint64_t)(s->sub_free[i] - x);
    }
    if (better(&cand, &s->best[cnt]))
        s->best[cnt] = cand;
}

/* Every extension of chosen (cnt GPUs, pairs <= cap) by GPUs of cand, each set once. */
GS_POPCNT_CLONES static void dfs(struct search *s, uint64_t chosen, uint64_t cand, int cnt,
                                 int32_t total, int32_t nvlinks)
{
    const struct gs_gpuset_node *n = s->n;

    if (cnt > 0)
        record(s, chosen, cnt, total, nvlinks);
    if (cnt == s->kmax)
        return;
    while (cand != 0 && !(s->only_max && cnt + popcount(cand) < s->kmax)) {
        int i = lowest(cand);
        int32_t t = total, v = nvlinks;

        cand &= cand - 1;
        for (uint64_t m = chosen; m != 0; m &= m - 1) {
            t += n->cls[i][lowest(m)];
            v += n->nvlinks[i][lowest(m)];
        }
        /* cand holds only higher indices now, so no set is visited twice */
        dfs(s, chosen | bit(i), cand & n->adj[s->cap][i], cnt + 1, t, v);
    }
}

/* The candidate that adds the least class sum (then the most links, then the lowest index). */
static int cheapest(uint64_t cand, const int32_t *add_total, const int32_t *add_nvl)
{
    int pick = lowest(cand);

    for (uint64_t m = cand & (cand - 1); m != 0; m &= m - 1) {
        int j = lowest(m);

        if (add_total[j] < add_total[pick] ||
            (add_total[j] == add_total[pick] && add_nvl[j] > add_nvl[pick]))
            pick = j;
    }
    return pick;
}

/* Greedy growth from one seed, for groups too large to enumerate; offers every prefix. */
static void grow(struct search *s, int seed, uint64_t pool)
{
    const struct gs_gpuset_node *n = s->n;
    int32_t add_total[GS_GPUSET_MAX] = {0}, add_nvl[GS_GPUSET_MAX] = {0};
    uint64_t chosen = bit(seed), cand = pool & n->adj[s->cap][seed];
    int32_t total = 0, nvlinks = 0;
    int cnt = 1;

    for (uint64_t m = cand; m != 0; m &= m - 1) {
        add_total[lowest(m)] = n->cls[seed][lowest(m)];
        add_nvl[lowest(m)] = n->nvlinks[seed][lowest(m)];
    }
    record(s, chosen, cnt, total, nvlinks);
    while (cnt < s->kmax && cand != 0) {
        int pick = cheapest(cand, add_total, add_nvl);

        chosen |= bit(pick);
        total += add_total[pick];
        nvlinks += add_nvl[pick];
        cnt++;
        cand &= n->adj[s->cap][pick];
        for (uint64_t m = cand; m != 0; m &= m - 1) {
            add_total[lowest(m)] += n->cls[pick][lowest(m)];
            add_nvl[lowest(m)] += n->nvlinks[pick][lowest(m)];
        }
        record(s, chosen, cnt, total, nvlinks);
    }
}

GS_POPCNT_CLONES static void search_group(const struct gs_gpuset_node *n, int g, uint64_t free,
                                          int kmax, int cap, bool only_max, struct cell *best)
{
    struct search s = {.n = n, .cap = cap, .kmax = kmax, .only_max = only_max, .best = best};
    uint64_t pool = free & n->groups[g].mask;

    clear_cells(best, kmax);
    for (int d = g + 1; d < n->groups[g].end; d++) {
        if (n->groups[d].first_child < 0)
            continue;
        s.sub[s.nsub] = (int16_t)d;
        s.sub_free[s.nsub++] = (uint8_t)popcount(free & n->groups[d].mask);
    }
    if (popcount(pool) <= GS_GPUSET_ENUM_MAX) {
        dfs(&s, 0, pool, 0, 0, 0);
        return;
    }
    for (uint64_t m = pool; m != 0; m &= m - 1)
        grow(&s, lowest(m), pool);
}

/* ---- the knapsack over a uniform group's subgroups ---- */

GS_POPCNT_CLONES static void solve_group(const struct gs_gpuset_node *n, int g, uint64_t free,
                                         int kmax, int cap, bool only_max, struct cell *best);

/*
 * Folds one subgroup's best sets (child[0..ck]) into acc, which holds the best sets over the
 * earlier subgroups (at most have GPUs). In place: t runs downwards, so acc[t - x] is still
 * the value from before this subgroup.
 */
static void combine(const struct gs_gpuset_group *gr, struct cell *acc, int have,
                    const struct cell *child, int ck, int kmax)
{
    int top = have + ck < kmax ? have + ck : kmax;

    for (int t = top; t >= 1; t--) {
        for (int x = 1; x <= ck && x <= t; x++) {
            const struct cell *prev = &acc[t - x];
            int32_t cross = (int32_t)((t - x) * x);
            struct cell cand;

            if (t - x > have || !feasible(prev) || !feasible(&child[x]))
                continue;
            cand.cost.total = prev->cost.total + child[x].cost.total + gr->cross_cls * cross;
            cand.cost.nvlinks = prev->cost.nvlinks + child[x].cost.nvlinks + gr->cross_nvl * cross;
            cand.cost.frag = prev->cost.frag + child[x].cost.frag;
            cand.mask = prev->mask | child[x].mask;
            if (better(&cand, &acc[t]))
                acc[t] = cand;
        }
    }
}

GS_POPCNT_CLONES static void solve_uniform(const struct gs_gpuset_node *n, int g, uint64_t free,
                                           int kmax, int cap, struct cell *acc)
{
    const struct gs_gpuset_group *gr = &n->groups[g];
    struct cell child[GS_GPUSET_MAX + 1];
    int have = 0;

    clear_cells(acc, kmax);
    for (int c = gr->first_child; c >= 0; c = n->groups[c].next_sibling) {
        int ck = popcount(free & n->groups[c].mask);

        if (ck > kmax)
            ck = kmax;
        if (ck == 0)
            continue;
        solve_group(n, c, free, ck, cap, false, child);
        combine(gr, acc, have, child, ck, kmax);
        have += ck;
    }
}

/*
 * best[x] for x = 0..kmax (only x = kmax when only_max): the best x free GPUs of group g with
 * every pair <= cap, costs including the leftovers of g and its descendants (not ancestors).
 */
GS_POPCNT_CLONES static void solve_group(const struct gs_gpuset_node *n, int g, uint64_t free,
                                         int kmax, int cap, bool only_max, struct cell *best)
{
    const struct gs_gpuset_group *gr = &n->groups[g];
    int nfree = popcount(free & gr->mask);

    if (gr->first_child < 0) {
        clear_cells(best, kmax);
        if (kmax >= 1 && nfree == 1)
            best[1] = (struct cell){{0, 0, 0}, gr->mask};
    } else if (gr->uniform && gr->maxc <= cap) {
        solve_uniform(n, g, free, kmax, cap, best);
    } else {
        search_group(n, g, free, kmax, cap, only_max, best);
    }
    for (int x = 1; x <= kmax; x++) {
        if (feasible(&best[x]))
            best[x].cost.frag += level_weight[gr->lo] * (uint64_t)(nfree - x);
    }
}

/* Leftovers in g's ancestors when k GPUs are taken inside g. */
static uint64_t ancestors_frag(const struct gs_gpuset_node *n, int g, uint64_t free, int k)
{
    uint64_t frag = 0;

    for (int a = n->groups[g].parent; a >= 0; a = n->groups[a].parent)
        frag += level_weight[n->groups[a].lo] * (uint64_t)(popcount(free & n->groups[a].mask) - k);
    return frag;
}

/*
 * The best k-set in the components of level c, or an infeasible cell. A group that was a
 * component one level lower already and has no pair of class c would give what it gave there:
 * nothing (else we would have stopped), or, at the first level tried, nothing either, since
 * that level is the best an empty node allows. Such groups are skipped.
 */
GS_POPCNT_CLONES static struct cell best_at_level(const struct gs_gpuset_node *n, uint64_t free,
                                                  int k, int c)
{
    struct cell cells[GS_GPUSET_MAX + 1];
    struct cell best = {{INFEASIBLE, 0, 0}, 0};

    for (int g = 0; g < n->ngroups; g++) {
        const struct gs_gpuset_group *gr = &n->groups[g];

        if (gr->lo > c || gr->hi < c || popcount(free & gr->mask) < k)
            continue;
        if (gr->lo < c && (gr->classes & (1u << c)) == 0)
            continue;
        solve_group(n, g, free, k, c, true, cells);
        if (!feasible(&cells[k]))
            continue;
        cells[k].cost.frag += ancestors_frag(n, g, free, k);
        if (better(&cells[k], &best))
            best = cells[k];
    }
    return best;
}

/* The PREFER choice; the caller has checked that k GPUs are free. */
static int prefer(const struct gs_gpuset_node *n, uint64_t free, int k, uint64_t *ret_mask)
{
    if (k == 0) {
        *ret_mask = 0;
        return 0;
    }
    for (int c = n->best_worst[k]; c <= GS_GPUSET_CLASS_WORST; c++) {
        struct cell best = best_at_level(n, free, k, c);

        if (feasible(&best)) {
            *ret_mask = best.mask;
            return 0;
        }
    }
    return -EAGAIN; /* only when a greedy search missed every set, which SYS level rules out */
}

static uint64_t lowest_k(uint64_t free, int k)
{
    uint64_t mask = 0;

    for (int i = 0; i < k; i++) {
        mask |= free & (~free + 1);
        free &= free - 1;
    }
    return mask;
}

/* worst, worst_nvlinks, total and nvlinks of the pairs of mask. */
static void pair_stats(const struct gs_gpuset_node *n, uint64_t mask, struct gs_gpuset_choice *c)
{
    for (uint64_t mi = mask; mi != 0; mi &= mi - 1) {
        int i = lowest(mi);

        for (uint64_t mj = mi & (mi - 1); mj != 0; mj &= mj - 1) {
            int cls = n->cls[i][lowest(mj)], nvl = n->nvlinks[i][lowest(mj)];

            c->total += cls;
            c->nvlinks += nvl;
            if (cls > c->worst) {
                c->worst = cls;
                c->worst_nvlinks = cls == GS_GPUSET_NVLINK ? nvl : 0;
            } else if (cls == c->worst && cls == GS_GPUSET_NVLINK && nvl < c->worst_nvlinks) {
                c->worst_nvlinks = nvl;
            }
        }
    }
}

GS_POPCNT_CLONES static void describe(const struct gs_gpuset_node *n, uint64_t free, uint64_t mask,
                                      struct gs_gpuset_choice *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->mask = mask;
    ret->ngpus = popcount(mask);
    pair_stats(n, mask, ret);
    for (int g = 0; g < n->ngroups; g++) {
        int x = popcount(mask & n->groups[g].mask);

        if (x > 0)
            ret->frag +=
                level_weight[n->groups[g].lo] * (uint64_t)(popcount(free & n->groups[g].mask) - x);
    }
    ret->score = (uint64_t)ret->worst << 40 | (uint64_t)ret->total << 20 |
                 (UINT64_C(0xfffff) - (uint64_t)ret->nvlinks);
}

void gs_gpuset_evaluate(const struct gs_gpuset_node *n, uint64_t gpus, struct gs_gpuset_choice *ret)
{
    describe(n, gpus & all_gpus(n->ngpus), gpus & all_gpus(n->ngpus), ret);
}

GS_POPCNT_CLONES int gs_gpuset_choose(const struct gs_gpuset_node *n, uint64_t free_mask, int k,
                                      enum gs_gpuset_affinity aff, struct gs_gpuset_choice *ret)
{
    struct gs_gpuset_choice choice;
    uint64_t mask = 0;
    int rc;

    if (k < 0 || k > n->ngpus || (free_mask & ~all_gpus(n->ngpus)) != 0)
        return -EINVAL;
    if (aff != GS_GPUSET_ANY && aff != GS_GPUSET_PREFER && aff != GS_GPUSET_STRICT)
        return -EINVAL;
    if (popcount(free_mask) < k)
        return -EAGAIN;
    if (aff == GS_GPUSET_ANY) {
        mask = lowest_k(free_mask, k);
    } else {
        rc = prefer(n, free_mask, k, &mask);
        if (rc < 0)
            return rc;
    }
    describe(n, free_mask, mask, &choice);
    if (aff == GS_GPUSET_STRICT && choice.worst > n->best_worst[k])
        return -EAGAIN;
    *ret = choice;
    return 0;
}

int gs_gpuset_best_possible(const struct gs_gpuset_node *n, int k)
{
    if (k < 0 || k > n->ngpus)
        return -EINVAL;
    return n->best_worst[k];
}

char *gs_gpuset_class_name(int cls, int nvlinks, char *buf, size_t size)
{
    static const char *const names[NLEVELS] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};

    if (size == 0)
        return buf;
    if (cls == GS_GPUSET_NVLINK && nvlinks > 0)
        snprintf(buf, size, "NV%d", nvlinks);
    else if (cls >= 0 && cls < NLEVELS)
        snprintf(buf, size, "%s", names[cls]);
    else
        snprintf(buf, size, "?");
    return buf;
}

/* ---- init: the matrix, the group tree, the empty-node optimum ---- */

static int check_links(int ngpus, const struct gs_gpuset_link *links)
{
    if (ngpus < 0 || ngpus > GS_GPUSET_MAX || (ngpus > 0 && links == NULL))
        return -EINVAL;
    for (int i = 0; i < ngpus; i++) {
        for (int j = i + 1; j < ngpus; j++) {
            const struct gs_gpuset_link *a = &links[i * ngpus + j], *b = &links[j * ngpus + i];

            if (a->cls < GS_GPUSET_NVLINK || a->cls > GS_GPUSET_SYS || a->cls != b->cls)
                return -EINVAL;
            if (a->cls == GS_GPUSET_NVLINK && a->nvlinks != b->nvlinks)
                return -EINVAL;
        }
    }
    return 0;
}

static void copy_links(struct gs_gpuset_node *n, const struct gs_gpuset_link *links)
{
    for (int i = 0; i < n->ngpus; i++) {
        for (int j = 0; j < n->ngpus; j++) {
            const struct gs_gpuset_link *l = &links[i * n->ngpus + j];

            if (i == j)
                continue;
            n->cls[i][j] = l->cls;
            n->nvlinks[i][j] = l->cls == GS_GPUSET_NVLINK ? l->nvlinks : 0;
            for (int c = l->cls; c < NLEVELS; c++)
                n->adj[c][i] |= bit(j);
        }
    }
}

/* The groups before ordering: distinct components with their level ranges. */
struct raw_tree {
    struct {
        uint64_t mask;
        int lo, hi, parent;
    } g[GS_GPUSET_GROUPS_MAX];
    int count;
};

static uint64_t component(const struct gs_gpuset_node *n, int c, int i)
{
    uint64_t comp = bit(i), frontier = bit(i);

    while (frontier != 0) {
        uint64_t next = 0;

        for (uint64_t m = frontier; m != 0; m &= m - 1)
            next |= n->adj[c][lowest(m)];
        frontier = next & ~comp;
        comp |= next;
    }
    return comp;
}

/* Components nest level by level, so there are at most 2 * ngpus - 1 distinct ones. */
static void add_component(struct raw_tree *t, uint64_t comp, int c)
{
    for (int r = 0; r < t->count; r++) {
        if (t->g[r].mask == comp && t->g[r].hi == c - 1) {
            t->g[r].hi = c;
            return;
        }
    }
    t->g[t->count].mask = comp;
    t->g[t->count].lo = c;
    t->g[t->count].hi = c;
    t->g[t->count].parent = -1;
    t->count++;
}

/* A group's parent is the component one level above its last one that holds it. */
static void link_parents(struct raw_tree *t)
{
    for (int r = 0; r < t->count; r++) {
        if (t->g[r].hi == GS_GPUSET_CLASS_WORST)
            continue; /* the root */
        for (int u = 0; u < t->count; u++) {
            if (t->g[u].lo == t->g[r].hi + 1 && (t->g[u].mask & t->g[r].mask) == t->g[r].mask)
                t->g[r].parent = u;
        }
    }
}

static int child_holding(const struct raw_tree *t, int parent, int gpu)
{
    for (int r = 0; r < t->count; r++) {
        if (t->g[r].parent == parent && (t->g[r].mask & bit(gpu)) != 0)
            return r;
    }
    return -1; /* not reached: a group's children cover it */
}

/* Appends r and its subtree to order in pre-order, children by lowest GPU. */
static int visit(const struct raw_tree *t, int r, int *order, int count)
{
    uint64_t left = t->g[r].mask;

    order[count++] = r;
    if (popcount(left) == 1)
        return count;
    while (left != 0) {
        int c = child_holding(t, r, lowest(left));

        if (c < 0)
            break;
        count = visit(t, c, order, count);
        left &= ~t->g[c].mask;
    }
    return count;
}

/* Stores the raw tree in pre-order with parent, child and sibling links and subtree ends. */
static void store_tree(struct gs_gpuset_node *n, const struct raw_tree *t, const int *order)
{
    int pos[GS_GPUSET_GROUPS_MAX], last_child[GS_GPUSET_GROUPS_MAX];

    for (int p = 0; p < t->count; p++)
        pos[order[p]] = p;
    for (int p = 0; p < t->count; p++) {
        struct gs_gpuset_group *gr = &n->groups[p];
        int r = order[p];

        gr->mask = t->g[r].mask;
        gr->lo = (uint8_t)t->g[r].lo;
        gr->hi = (uint8_t)t->g[r].hi;
        gr->parent = (int16_t)(t->g[r].parent < 0 ? -1 : pos[t->g[r].parent]);
        gr->first_child = gr->next_sibling = -1;
        last_child[p] = -1;
        if (gr->parent >= 0 && last_child[gr->parent] < 0)
            n->groups[gr->parent].first_child = (int16_t)p;
        else if (gr->parent >= 0)
            n->groups[last_child[gr->parent]].next_sibling = (int16_t)p;
        if (gr->parent >= 0)
            last_child[gr->parent] = p;
    }
    for (int p = 0; p < t->count; p++) {
        int end = p + 1;

        while (end < t->count && (n->groups[end].mask & ~n->groups[p].mask) == 0)
            end++;
        n->groups[p].end = (int16_t)end;
    }
    n->ngroups = t->count;
}

static void build_groups(struct gs_gpuset_node *n)
{
    struct raw_tree t = {.count = 0};
    int order[GS_GPUSET_GROUPS_MAX], root = -1;

    if (n->ngpus == 0)
        return;
    for (int c = 0; c < NLEVELS; c++) {
        uint64_t left = all_gpus(n->ngpus);

        while (left != 0) {
            uint64_t comp = c == 0 ? bit(lowest(left)) : component(n, c, lowest(left));

            add_component(&t, comp, c);
            left &= ~comp;
        }
    }
    link_parents(&t);
    for (int r = 0; r < t.count; r++) {
        if (t.g[r].hi == GS_GPUSET_CLASS_WORST)
            root = r; /* every pair is <= SYS: one component at the top */
    }
    visit(&t, root, order, 0);
    store_tree(n, &t, order);
}

/* One pair of group g: its worst class, and whether cross-subgroup pairs stay uniform. */
static void classify_pair(const struct gs_gpuset_node *n, struct gs_gpuset_group *gr,
                          const int *owner, int i, int j, bool *seen_cross)
{
    int cls = n->cls[i][j], nvl = n->nvlinks[i][j];

    if (cls > gr->maxc)
        gr->maxc = (uint8_t)cls;
    gr->classes |= (uint8_t)(1u << cls);
    if (owner[i] == owner[j])
        return;
    if (!*seen_cross) {
        gr->cross_cls = (uint8_t)cls;
        gr->cross_nvl = (uint8_t)nvl;
        *seen_cross = true;
    } else if (gr->cross_cls != cls || gr->cross_nvl != nvl) {
        gr->uniform = false;
    }
}

static void classify_group(struct gs_gpuset_node *n, int g)
{
    struct gs_gpuset_group *gr = &n->groups[g];
    int owner[GS_GPUSET_MAX];
    bool seen_cross = false;

    gr->uniform = true;
    for (int c = gr->first_child; c >= 0; c = n->groups[c].next_sibling) {
        for (uint64_t m = n->groups[c].mask; m != 0; m &= m - 1)
            owner[lowest(m)] = c;
    }
    for (uint64_t mi = gr->mask; mi != 0 && gr->first_child >= 0; mi &= mi - 1) {
        for (uint64_t mj = mi & (mi - 1); mj != 0; mj &= mj - 1)
            classify_pair(n, gr, owner, lowest(mi), lowest(mj), &seen_cross);
    }
}

/* best_worst[k]: the PREFER choice on an empty node. At least the value for k - 1. */
static void solve_empty(struct gs_gpuset_node *n)
{
    struct gs_gpuset_choice choice;
    uint64_t all = all_gpus(n->ngpus), mask = 0;

    for (int k = 1; k <= n->ngpus; k++) {
        n->best_worst[k] = n->best_worst[k - 1];
        if (prefer(n, all, k, &mask) < 0)
            continue;
        describe(n, all, mask, &choice);
        n->best_worst[k] = (uint8_t)choice.worst;
    }
}

int gs_gpuset_init(struct gs_gpuset_node *n, int ngpus, const struct gs_gpuset_link *links)
{
    int rc = check_links(ngpus, links);

    if (rc < 0)
        return rc;
    memset(n, 0, sizeof(*n));
    n->ngpus = ngpus;
    copy_links(n, links);
    build_groups(n);
    for (int g = 0; g < n->ngroups; g++)
        classify_group(n, g);
    solve_empty(n);
    return 0;
}
