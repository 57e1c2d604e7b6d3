/*
 * test_planner.c: the shard planner (sharding/planner.h) and its naive baseline: every shard
 * read once, the balance band and the coarse-shard bound, locality (all local when every
 * node holds everything, a shard held nowhere moved once), byte-identical determinism, the
 * epoch changing only the order, the loader's slicing rule for naive, and input errors that
 * name their field.
 *
 * Inputs are generated from a small splitmix64 stream so each test is reproducible.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/loader.h"
#include "sharding/planner.h"

/* An input with its own storage. */
struct gen {
    struct shard_plan_input in;
    struct shard_plan_shard *shards;
    uint32_t *holder_off, *holders, *rank_node;
};

static uint64_t next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/*
 * nshards shards of tokens in [tmin, tmax], bytes 2 per token, each held by 1..maxcopies
 * distinct nodes of nnodes (0 copies when maxcopies is 0); nranks ranks, rpn per node.
 */
static struct gen gen_make(size_t nshards, uint64_t tmin, uint64_t tmax, uint32_t nnodes,
                           uint32_t maxcopies, uint32_t nranks, uint32_t rpn, uint64_t seed)
{
    struct gen g = {0};
    uint64_t st = seed;

    g.shards = calloc(nshards + 1, sizeof(*g.shards));
    g.holder_off = calloc(nshards + 1, sizeof(*g.holder_off));
    g.holders = calloc(nshards * (maxcopies + 1) + 1, sizeof(*g.holders));
    cr_assert(g.shards != NULL && g.holder_off != NULL && g.holders != NULL);
    for (size_t i = 0; i < nshards; i++) {
        uint32_t copies = maxcopies == 0 ? 0 : 1 + (uint32_t)(next(&st) % maxcopies);
        uint32_t *h = g.holders + g.holder_off[i];

        copies = copies > nnodes ? nnodes : copies;
        g.shards[i].tokens = tmin + next(&st) % (tmax - tmin + 1);
        g.shards[i].bytes = 2 * g.shards[i].tokens;
        for (uint32_t c = 0; c < copies; c++) {
            bool dup;

            do {
                h[c] = (uint32_t)(next(&st) % nnodes);
                dup = false;
                for (uint32_t k = 0; k < c; k++)
                    dup = dup || h[k] == h[c];
            } while (dup);
        }
        g.holder_off[i + 1] = g.holder_off[i] + copies;
    }
    g.in = (struct shard_plan_input){.nshards = nshards,
                                     .shards = g.shards,
                                     .holder_off = g.holder_off,
                                     .holders = g.holders,
                                     .nnodes = nnodes,
                                     .nranks = nranks,
                                     .ranks_per_node = rpn,
                                     .seed = 42,
                                     .epoch = 0,
                                     .tolerance = 0.02};
    return g;
}

static void gen_free(struct gen *g)
{
    free(g->shards);
    free(g->holder_off);
    free(g->holders);
    free(g->rank_node);
}

static uint32_t node_of(const struct shard_plan_input *in, uint32_t r)
{
    return in->rank_node != NULL ? in->rank_node[r] : r / in->ranks_per_node;
}

static bool holds(const struct shard_plan_input *in, uint32_t s, uint32_t node)
{
    for (uint32_t k = in->holder_off[s]; k < in->holder_off[s + 1]; k++) {
        if (in->holders[k] == node)
            return true;
    }
    return false;
}

static struct shard_plan *plan(const struct shard_plan_input *in, bool naive)
{
    struct shard_plan *p = NULL;
    struct gs_error err = {0};
    int rc = naive ? shard_plan_naive(in, &p, &err) : shard_plan(in, &p, &err);

    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_not_null(p);
    return p;
}

/* Everything planner.h promises about a plan's structure and accounting. */
static void check_plan(const struct shard_plan_input *in, const struct shard_plan *p)
{
    uint32_t *seen = calloc(in->nshards + 1, sizeof(*seen));
    uint64_t local = 0, moved = 0, fetched_bytes = 0, tmin = UINT64_MAX, tmax = 0;

    cr_assert_not_null(seen);
    cr_assert_eq(p->nshards, in->nshards);
    cr_assert_eq(p->rank_off[0], 0);
    cr_assert_eq(p->rank_off[in->nranks], in->nshards);
    for (uint32_t r = 0; r < in->nranks; r++) {
        uint64_t tokens = 0;

        cr_assert_leq(p->rank_off[r], p->rank_off[r + 1]);
        for (size_t i = p->rank_off[r]; i < p->rank_off[r + 1]; i++) {
            uint32_t s = p->reads[i].shard;

            cr_assert_lt(s, in->nshards);
            cr_assert_eq(seen[s]++, 0, "shard %u read twice", s);
            cr_assert_eq(p->reads[i].local, holds(in, s, node_of(in, r)), "shard %u", s);
            tokens += in->shards[s].tokens;
            if (p->reads[i].local)
                local += in->shards[s].bytes;
            else
                moved += in->shards[s].bytes;
        }
        cr_assert_eq(p->rank_tokens[r], tokens);
        tmin = tokens < tmin ? tokens : tmin;
        tmax = tokens > tmax ? tokens : tmax;
    }
    cr_assert_eq(p->bytes_local, local);
    cr_assert_eq(p->bytes_moved, moved);
    cr_assert_eq(p->tokens_min, tmin);
    cr_assert_eq(p->tokens_max, tmax);
    /* Fetches: exactly the reads that are not local, by the reader's node, once, ascending. */
    cr_assert_eq(p->fetch_off[0], 0);
    for (uint32_t n = 0; n < in->nnodes; n++) {
        for (size_t i = p->fetch_off[n]; i < p->fetch_off[n + 1]; i++) {
            uint32_t s = p->fetch[i];

            cr_assert(!holds(in, s, n), "node %u fetches shard %u it holds", n, s);
            cr_assert_eq(seen[s]++, 1, "shard %u fetched twice or not read", s);
            if (i > p->fetch_off[n])
                cr_assert_lt(p->fetch[i - 1], s);
            fetched_bytes += in->shards[s].bytes;
        }
    }
    cr_assert_eq(fetched_bytes, moved);
    for (size_t s = 0; s < in->nshards; s++)
        cr_assert(seen[s] == 1 || seen[s] == 2, "shard %zu read %u times", s, seen[s]);
    free(seen);
}

Test(planner, every_shard_read_once)
{
    struct gen g = gen_make(3000, 100, 5000, 16, 3, 24, 3, 1);

    for (int naive = 0; naive < 2; naive++) {
        struct shard_plan *p = plan(&g.in, naive);

        check_plan(&g.in, p);
        shard_plan_free(p);
    }
    gen_free(&g);
}

Test(planner, balanced_within_tolerance_on_fine_shards)
{
    /* 4,000 shards of 900-1,100 tokens on 64 ranks: ~62 shards a rank, each 1.6 % of the
     * mean, finer than the band. Ranks on 16 of 32 nodes, so some data is held elsewhere. */
    struct gen g = gen_make(4000, 900, 1100, 32, 3, 64, 4, 2);
    struct shard_plan *p = plan(&g.in, false);
    double mean = p->tokens_mean;

    check_plan(&g.in, p);
    cr_assert(p->balanced);
    cr_assert_not(p->moves_capped);
    for (uint32_t r = 0; r < g.in.nranks; r++) {
        cr_assert_leq((double)p->rank_tokens[r], mean * 1.02, "rank %u", r);
        cr_assert_geq((double)p->rank_tokens[r], mean * 0.98, "rank %u", r);
    }
    /* The job's nodes (0..15) hold shards they read locally: fewer bytes than naive. */
    {
        struct shard_plan *n = plan(&g.in, true);

        cr_assert_lt(p->bytes_moved, n->bytes_moved);
        shard_plan_free(n);
    }
    shard_plan_free(p);
    gen_free(&g);
}

Test(planner, tight_tolerance_is_met_with_swaps)
{
    struct gen g = gen_make(2000, 500, 1500, 8, 2, 32, 4, 3);
    struct shard_plan *p;

    g.in.tolerance = 0.005;
    p = plan(&g.in, false);
    check_plan(&g.in, p);
    cr_assert(p->balanced, "max %lu min %lu mean %f", (unsigned long)p->tokens_max,
              (unsigned long)p->tokens_min, p->tokens_mean);
    shard_plan_free(p);
    gen_free(&g);
}

Test(planner, coarse_shards_stay_within_mean_plus_minus_largest)
{
    /* 100 shards of 1,000-20,000 tokens on 32 ranks: the band cannot hold; the bound does. */
    struct gen g = gen_make(100, 1000, 20000, 8, 2, 32, 4, 4);
    struct shard_plan *p = plan(&g.in, false);
    uint64_t big = 0;

    for (size_t s = 0; s < g.in.nshards; s++)
        big = g.shards[s].tokens > big ? g.shards[s].tokens : big;
    check_plan(&g.in, p);
    cr_assert_not(p->moves_capped);
    cr_assert_leq((double)p->tokens_max, fmax(p->tokens_mean * 1.02, p->tokens_mean + big));
    cr_assert_geq((double)p->tokens_min, fmin(p->tokens_mean * 0.98, p->tokens_mean - big));
    shard_plan_free(p);
    gen_free(&g);
}

Test(planner, everything_local_when_every_node_holds_everything)
{
    struct gen g = gen_make(500, 100, 300, 4, 0, 16, 4, 5);
    uint32_t *all = calloc(500 * 4, sizeof(*all));
    struct shard_plan *p;

    cr_assert_not_null(all);
    for (size_t s = 0; s < 500; s++) {
        for (uint32_t n = 0; n < 4; n++)
            all[s * 4 + n] = n;
        g.holder_off[s + 1] = (uint32_t)(s + 1) * 4;
    }
    g.in.holders = all;
    p = plan(&g.in, false);
    check_plan(&g.in, p);
    cr_assert_eq(p->bytes_moved, 0);
    cr_assert_eq(p->fetch_off[g.in.nnodes], 0);
    cr_assert(p->balanced);
    shard_plan_free(p);
    free(all);
    gen_free(&g);
}

Test(planner, shard_held_nowhere_is_moved_once)
{
    /* Two nodes of 4 ranks; node 0 holds shards 0..31, node 1 shards 32..62, shard 63 is held
     * by none. With no tolerance each node must read exactly 32 shards: all its own, and node
     * 1 also shard 63, fetched once although four of its ranks read shards. */
    struct shard_plan_shard shards[64];
    uint32_t off[65], holders[63];
    struct shard_plan_input in = {.nshards = 64,
                                  .shards = shards,
                                  .holder_off = off,
                                  .holders = holders,
                                  .nnodes = 2,
                                  .nranks = 8,
                                  .ranks_per_node = 4,
                                  .seed = 7,
                                  .tolerance = 0};
    struct shard_plan *p;

    off[0] = 0;
    for (uint32_t s = 0; s < 64; s++) {
        shards[s] = (struct shard_plan_shard){.bytes = 1000 + s, .tokens = 10};
        if (s < 63)
            holders[s] = s < 32 ? 0 : 1;
        off[s + 1] = s < 63 ? s + 1 : 63;
    }
    p = plan(&in, false);
    check_plan(&in, p);
    cr_assert(p->balanced);
    cr_assert_eq(p->bytes_moved, 1063);
    cr_assert_eq(p->fetch_off[1], 0, "node 0 fetches");
    cr_assert_eq(p->fetch_off[2], 1, "node 1 fetches other than one shard");
    cr_assert_eq(p->fetch[0], 63);
    shard_plan_free(p);
}

Test(planner, disjoint_halves_stay_local)
{
    /* Node n holds exactly the shards its ranks should read: a perfect plan moves nothing. */
    struct gen g = gen_make(800, 1000, 1000, 2, 0, 8, 4, 6);
    uint32_t *h = calloc(800, sizeof(*h));
    struct shard_plan *p;

    cr_assert_not_null(h);
    for (size_t s = 0; s < 800; s++) {
        h[s] = s % 2;
        g.holder_off[s + 1] = (uint32_t)s + 1;
    }
    g.in.holders = h;
    g.in.tolerance = 0;
    p = plan(&g.in, false);
    check_plan(&g.in, p);
    cr_assert_eq(p->bytes_moved, 0);
    cr_assert_eq(p->tokens_min, 100000);
    cr_assert_eq(p->tokens_max, 100000);
    cr_assert(p->balanced);
    shard_plan_free(p);
    free(h);
    gen_free(&g);
}

static bool same_plan(const struct shard_plan *a, const struct shard_plan *b)
{
    return a->nranks == b->nranks && a->nnodes == b->nnodes && a->nshards == b->nshards &&
           memcmp(a->rank_off, b->rank_off, (a->nranks + 1) * sizeof(*a->rank_off)) == 0 &&
           memcmp(a->reads, b->reads, a->nshards * sizeof(*a->reads)) == 0 &&
           memcmp(a->rank_tokens, b->rank_tokens, a->nranks * sizeof(*a->rank_tokens)) == 0 &&
           memcmp(a->fetch_off, b->fetch_off, (a->nnodes + 1) * sizeof(*a->fetch_off)) == 0 &&
           memcmp(a->fetch, b->fetch, a->fetch_off[a->nnodes] * sizeof(*a->fetch)) == 0 &&
           a->bytes_local == b->bytes_local && a->bytes_moved == b->bytes_moved &&
           a->tokens_min == b->tokens_min && a->tokens_max == b->tokens_max &&
           a->balanced == b->balanced && a->moves == b->moves;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* Rank r's shards, ascending, into out. */
static size_t rank_set(const struct shard_plan *p, uint32_t r, uint32_t *out)
{
    size_t n = 0;

    for (size_t i = p->rank_off[r]; i < p->rank_off[r + 1]; i++)
        out[n++] = p->reads[i].shard;
    qsort(out, n, sizeof(*out), cmp_u32);
    return n;
}

Test(planner, deterministic_and_epoch_changes_only_order)
{
    struct gen g = gen_make(2000, 100, 900, 12, 3, 32, 4, 8);
    struct shard_plan *a = plan(&g.in, false), *b = plan(&g.in, false), *e;
    uint32_t *sa = calloc(2000, sizeof(*sa)), *se = calloc(2000, sizeof(*se));
    bool order_differs = false;

    cr_assert(sa != NULL && se != NULL);
    cr_assert(same_plan(a, b), "same input, different plans");
    g.in.epoch = 1;
    e = plan(&g.in, false);
    check_plan(&g.in, e);
    cr_assert_eq(e->bytes_moved, a->bytes_moved);
    for (uint32_t r = 0; r < g.in.nranks; r++) {
        size_t n = rank_set(a, r, sa);

        cr_assert_eq(rank_set(e, r, se), n, "rank %u", r);
        cr_assert_eq(memcmp(sa, se, n * sizeof(*sa)), 0, "rank %u reads another set", r);
        if (memcmp(a->reads + a->rank_off[r], e->reads + e->rank_off[r], n * sizeof(*a->reads)) !=
            0)
            order_differs = true;
    }
    cr_assert(order_differs, "epoch 1 reads in epoch 0's order");
    shard_plan_free(a);
    shard_plan_free(b);
    shard_plan_free(e);
    free(sa);
    free(se);
    gen_free(&g);
}

Test(planner, explicit_rank_nodes)
{
    /* 12 ranks on nodes 5, 9 and 2 (out of order) of a 10-node index space. */
    struct gen g = gen_make(1200, 100, 200, 10, 2, 12, 0, 9);
    struct shard_plan *p;

    g.rank_node = calloc(12, sizeof(*g.rank_node));
    cr_assert_not_null(g.rank_node);
    for (uint32_t r = 0; r < 12; r++)
        g.rank_node[r] = r % 3 == 0 ? 5 : r % 3 == 1 ? 9 : 2;
    g.in.rank_node = g.rank_node;
    p = plan(&g.in, false);
    check_plan(&g.in, p);
    for (uint32_t n = 0; n < 10; n++) {
        if (n != 5 && n != 9 && n != 2)
            cr_assert_eq(p->fetch_off[n + 1], p->fetch_off[n], "node %u has no rank", n);
    }
    cr_assert(p->balanced);
    shard_plan_free(p);
    gen_free(&g);
}

Test(planner, naive_is_the_loaders_slicing)
{
    struct gen g = gen_make(103, 10, 20, 4, 1, 8, 2, 10);
    struct shard_plan *p = plan(&g.in, true);
    uint64_t perm[103];

    check_plan(&g.in, p);
    shard_loader_permutation(g.in.seed, g.in.epoch, 103, perm);
    for (uint32_t r = 0; r < 8; r++) {
        size_t a = (size_t)r * 103 / 8, b = (size_t)(r + 1) * 103 / 8;

        cr_assert_eq(p->rank_off[r], a);
        cr_assert_eq(p->rank_off[r + 1], b);
        for (size_t i = a; i < b; i++)
            cr_assert_eq(p->reads[i].shard, perm[i]);
    }
    shard_plan_free(p);
    gen_free(&g);
}

Test(planner, empty_dataset)
{
    struct shard_plan_input in = {.nnodes = 2, .nranks = 4, .ranks_per_node = 2};
    struct shard_plan *p = plan(&in, false);

    cr_assert_eq(p->rank_off[4], 0);
    cr_assert_eq(p->bytes_moved, 0);
    cr_assert(p->balanced);
    shard_plan_free(p);
}

static void expect_einval(const struct shard_plan_input *in, const char *field)
{
    struct shard_plan *p = (struct shard_plan *)1;
    struct gs_error err = {0};

    cr_assert_eq(shard_plan(in, &p, &err), -EINVAL);
    cr_assert_null(p);
    cr_assert_eq(strncmp(err.msg, field, strlen(field)), 0, "message '%s' does not name %s",
                 err.msg, field);
    p = (struct shard_plan *)1;
    cr_assert_eq(shard_plan_naive(in, &p, &err), -EINVAL);
    cr_assert_null(p);
}

Test(planner, bad_input_names_the_field)
{
    struct gen g = gen_make(10, 1, 10, 4, 2, 8, 2, 11);
    struct shard_plan_input in = g.in;
    uint32_t bad_nodes[8] = {0, 1, 2, 3, 0, 1, 2, 4};

    in.nranks = 0;
    expect_einval(&in, "nranks");
    in = g.in;
    g.holders[g.holder_off[3]] = 4; /* nnodes is 4 */
    expect_einval(&in, "holders");
    g.holders[g.holder_off[3]] = 0;
    {
        /* Shard 1 lists node 2 twice. */
        uint32_t off[3] = {0, 1, 3}, twice[3] = {0, 2, 2};

        in.nshards = 2;
        in.holder_off = off;
        in.holders = twice;
        expect_einval(&in, "holders");
        off[2] = 0; /* decreasing offsets */
        expect_einval(&in, "holder_off");
    }
    in = g.in;
    in.ranks_per_node = 0;
    expect_einval(&in, "ranks_per_node");
    in.ranks_per_node = 1; /* 8 ranks on 4 nodes */
    expect_einval(&in, "ranks_per_node");
    in.rank_node = bad_nodes;
    expect_einval(&in, "rank_node");
    in = g.in;
    in.tolerance = -0.1;
    expect_einval(&in, "tolerance");
    in.tolerance = NAN;
    expect_einval(&in, "tolerance");
    expect_einval(NULL, "planner");
    gen_free(&g);
}
