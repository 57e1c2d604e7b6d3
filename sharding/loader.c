/*
 * loader.c: the prefetching batch loader (semantics in loader.h).
 *
 * Two threads share a loader: the consumer (shard_loader_next) and one reader thread that
 * fills ring slots in step order. Under the mutex they share only the counters below and the
 * error; a slot's contents belong to the reader from when it is free until it is counted in
 * `produced`, then to the consumer until it is counted in `released`. The reader owns the
 * step position, the epoch's permutation and its window buffer outright.
 *
 *     released <= delivered <= produced <= released + nslots
 *
 * The consumer holds at most one slot (delivered - released <= 1), freed when it asks for
 * the next batch, so with nslots = 1 the reader only ever works while the consumer waits.
 *
 * The permutation: splitmix64 (Steele, Lea, Flood 2014) seeded with a mix of the seed and
 * the epoch drives a Fisher-Yates shuffle of 0..n-1, with rejection sampling for an unbiased
 * index. Its output depends on nothing but (seed, epoch, n), which is what makes the order
 * independent of ranks and resumable: a loader recomputes it for any epoch it starts in.
 *
 * Plan mode (loader.h) changes only which shards are opened and how a step indexes the
 * order: the plan is computed once in shard_loader_new from the plan file (every rank's
 * shard list, for the digest and the common epoch length), the loader keeps its own shards
 * (ascending manifest order) and the permutation is of this rank's samples, seeded with the
 * rank too. A step's entries are [sample / world, sample / world + global_batch / world).
 *
 * Stream mode (loader.h) leaves the slots of absent shards NULL in `shards`; the reader opens
 * each when a read first needs it (after fetch waited for its file), so only the reader
 * touches `shards` after the start, and shard_loader_free closes them after joining it. The
 * hints walk the steps ahead of the one being filled with the same position rule as
 * fill_train_plan (plan_next) and, when that walk has crossed into the next epoch, that
 * epoch's order in a second buffer. The counters shard_loader_info reports are relaxed
 * atomics: the reader adds, anyone reads.
 */
#include "sharding/loader.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "sharding/rest.h"
#include "sharding/rng.h"

#define DEFAULT_PREFETCH 2
#define DEFAULT_FETCH_AHEAD 2

struct slot {
    int32_t *tokens; /* inputs then targets, rank_batch x T each */
    struct shard_loader_batch batch;
};

struct shard_loader {
    struct shard_loader_config cfg;
    uint32_t world, rank_batch;

    /* The split's shards in manifest order, with first_sample[i] the id of shard i's first
     * sample (first_sample[nshards] = nsamples) and index[i] its manifest index. Read-only
     * after shard_loader_new, but for stream mode's NULL slots in shards (the reader's). */
    size_t nshards;
    struct shard_file **shards;
    uint64_t *first_sample;
    uint32_t *index;
    uint64_t nsamples;

    /* Plan mode: every rank has at least `usable` samples, the epoch's entries per rank that
     * steps may take (L in loader.h). Read-only after shard_loader_new, like info. */
    bool plan_mode;
    uint64_t usable;
    struct shard_loader_info info;
    /* The start epoch's rest (cfg.consumed): this rank's unread samples (ids, ascending), the
     * fewest any rank has (that epoch's L); only in rest_epoch. Read-only after the start. */
    bool has_rest;
    uint64_t *rest, nrest, rest_usable, rest_epoch;

    /* Reader thread only. */
    uint64_t epoch, sample; /* the next step to fill */
    uint64_t *order;        /* train: the permutation of order_epoch */
    uint64_t order_epoch;
    bool have_order;
    int32_t *window; /* T + 1 tokens */

    /* Stream mode, the reader's: hinted[k] once shard k was hinted (or found there); the
     * last step hinted; the order of its epoch when that is not order_epoch's. */
    bool streaming;
    uint32_t fetch_ahead;
    bool *hinted;
    bool hints_begun;
    uint64_t hint_epoch, hint_sample;
    uint64_t *ahead_order;
    uint64_t ahead_epoch;
    bool have_ahead;
    size_t unsettled; /* shards neither opened nor hinted: while 0, no more hints */

    /* Stream mode: what shard_loader_info reports as it grows. */
    _Atomic uint32_t fetched, waits;
    _Atomic uint64_t fetch_wait_ns;

    /* Shared, under mu. */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct slot *slots;
    uint32_t nslots;
    uint64_t produced, delivered, released;
    bool stop, reader_done;
    int error;
    struct gs_error reader_err;

    /* Consumer only. */
    bool thread_started, ended;
    struct shard_loader_batch end_batch;
    uint64_t wait_total_ns;
};

/* Fisher-Yates of 0..n-1 driven by splitmix64 from state. */
static void shuffle(uint64_t state, uint64_t n, uint64_t *order)
{
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = shard_uniform(&state, i), t = order[i - 1];

        order[i - 1] = order[j];
        order[j] = t;
    }
}

int shard_loader_permutation(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t *order)
{
    uint64_t mix = seed, state;

    /* Two rounds so that nearby (seed, epoch) pairs start far apart. */
    state = shard_splitmix64(&mix) ^ epoch;
    state = shard_splitmix64(&state);
    shuffle(state, n, order);
    return 0;
}

int shard_loader_rank_permutation(uint64_t seed, uint64_t epoch, uint32_t rank, uint64_t n,
                                  uint64_t *order)
{
    uint64_t mix = seed, state;

    /* A round per input, so that nearby (seed, epoch, rank) triples start far apart. */
    state = shard_splitmix64(&mix) ^ epoch;
    state = shard_splitmix64(&state) ^ rank;
    state = shard_splitmix64(&state);
    shuffle(state, n, order);
    return 0;
}

/* --- setup --- */

static int check_config(const struct shard_loader_config *c, struct gs_error *err)
{
    uint32_t world = c->world == 0 ? 1 : c->world;

    if (c->manifest == NULL)
        return gs_error_set(err, -EINVAL, 0, 0, "loader: no dataset");
    if (c->seq_len < 1)
        return gs_error_set(err, -EINVAL, 0, 0, "loader: seq_len must be at least 1");
    if (c->global_batch < 1)
        return gs_error_set(err, -EINVAL, 0, 0, "loader: global_batch must be at least 1");
    if (c->global_batch % world != 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: global_batch %" PRIu32 " does not divide by world %" PRIu32,
                            c->global_batch, world);
    if (c->rank >= world)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: rank %" PRIu32 " is not below world %" PRIu32, c->rank, world);
    if ((c->alloc == NULL) != (c->release == NULL))
        return gs_error_set(err, -EINVAL, 0, 0, "loader: give both alloc and release, or neither");
    if (c->plan != NULL && c->split == SHARD_SPLIT_TRAIN && c->plan->nranks != world)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: world %" PRIu32 " is not the data plan's %" PRIu32
                            " ranks (rank %" PRIu32 ")",
                            world, c->plan->nranks, c->rank);
    return 0;
}

/* Opens manifest shard i into *ret, checked against its entry first. */
static int open_file(const struct shard_manifest *m, size_t i, struct shard_file **ret,
                     struct gs_error *err)
{
    int rc = shard_manifest_check_shard(m, i, 0, err);

    return rc < 0 ? rc : shard_open(m->shards[i].path, 0, ret, err);
}

/* Opens manifest shard i as the loader's next shard; in stream mode one whose file is not
 * there yet stays unopened (NULL), its samples numbered from the manifest all the same. */
static int open_one(struct shard_loader *l, size_t i, struct gs_error *err)
{
    const struct shard_manifest *m = l->cfg.manifest;
    int rc = open_file(m, i, &l->shards[l->nshards], err);

    if (rc == -ENOENT && l->streaming) {
        gs_error_clear(err);
        l->info.absent_shards++;
        rc = 0;
    }
    if (rc < 0)
        return rc;
    l->index[l->nshards] = (uint32_t)i;
    l->first_sample[l->nshards] = l->nsamples;
    l->nsamples += shard_samples_in(m->shards[i].tokens, l->cfg.seq_len);
    l->nshards++;
    return 0;
}

/* Opens the split's shards (plan mode: the n of mine, manifest indices) and numbers their
 * samples. */
static int open_shards(struct shard_loader *l, const uint32_t *mine, size_t n, struct gs_error *err)
{
    const struct shard_manifest *m = l->cfg.manifest;
    int rc = 0;

    l->shards = calloc(m->nshards + 1, sizeof(*l->shards));
    l->first_sample = calloc(m->nshards + 1, sizeof(*l->first_sample));
    l->index = calloc(m->nshards + 1, sizeof(*l->index));
    if (l->shards == NULL || l->first_sample == NULL || l->index == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    if (l->plan_mode) {
        for (size_t k = 0; rc == 0 && k < n; k++)
            rc = open_one(l, mine[k], err);
    } else {
        for (size_t i = 0; rc == 0 && i < m->nshards; i++) {
            if (m->shards[i].split == l->cfg.split)
                rc = open_one(l, i, err);
        }
    }
    if (rc < 0)
        return rc;
    l->first_sample[l->nshards] = l->nsamples;
    if (l->plan_mode)
        return 0; /* plan_shards has checked every rank's samples */
    if (l->nsamples == 0 ||
        (l->cfg.split == SHARD_SPLIT_TRAIN && l->nsamples < l->cfg.global_batch))
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: %s split of %s has %" PRIu64 " samples of %" PRIu32
                            "+1 tokens, fewer than global_batch %" PRIu32,
                            shard_split_name(l->cfg.split), m->dir, l->nsamples, l->cfg.seq_len,
                            l->cfg.split == SHARD_SPLIT_TRAIN ? l->cfg.global_batch : 1);
    return 0;
}

/* --- plan mode --- */

/*
 * The start epoch's rest (cfg.consumed): this rank's samples not read yet, as loader ids
 * (ascending) into l->rest, and the fewest any rank of a has into l->rest_usable.
 */
static int plan_rest(struct shard_loader *l, const struct shard_assignment *a, struct gs_error *err)
{
    const struct shard_manifest *m = l->cfg.manifest;
    const uint64_t *done = l->cfg.consumed;
    uint64_t *first = NULL, total, local = 0, mine = 0;
    uint32_t r = l->cfg.rank;

    if (shard_train_first(m, l->cfg.seq_len, &first, &total) < 0)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    l->rest_usable = UINT64_MAX;
    for (uint32_t q = 0; q < a->nranks; q++) {
        uint64_t n = shard_assignment_samples(a, q, first, done);

        l->rest_usable = n < l->rest_usable ? n : l->rest_usable;
        mine = q == r ? n : mine;
    }
    if ((l->rest = malloc((mine + 1) * sizeof(*l->rest))) == NULL) {
        free(first);
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    }
    for (size_t k = a->rank_off[r]; k < a->rank_off[r + 1]; k++) {
        for (uint64_t g = first[a->shard[k]]; g < first[a->shard[k] + 1]; g++, local++) {
            if (!shard_rest_has(done, g))
                l->rest[l->nrest++] = local;
        }
    }
    l->has_rest = true;
    l->rest_epoch = l->cfg.epoch;
    free(first);
    return 0;
}

/* The plan's assignment (rest.h): this rank's shards (manifest indices, ascending) into
 * *ret_mine, the digest, every rank's samples' minimum (usable) and the start epoch's rest. */
static int plan_shards(struct shard_loader *l, uint32_t **ret_mine, size_t *ret_n,
                       struct gs_error *err)
{
    const struct shard_manifest *m = l->cfg.manifest;
    struct shard_assignment *a = NULL;
    struct gs_error aerr = {0};
    uint32_t *mine = NULL, r = l->cfg.rank;
    size_t lo, n;
    int rc = shard_assignment_new(l->cfg.plan, m, &a, &aerr);

    if (rc < 0)
        return gs_error_set(err, rc, 0, 0, "loader: %s", aerr.msg);
    lo = a->rank_off[r];
    n = a->rank_off[r + 1] - lo;
    mine = malloc((n + 1) * sizeof(*mine));
    if (mine == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
        goto out;
    }
    memcpy(mine, a->shard + lo, n * sizeof(*mine));
    for (size_t k = lo; k < lo + n; k++)
        l->info.local_shards += a->local[k];
    l->usable = UINT64_MAX;
    for (uint32_t q = 0; q < a->nranks; q++) {
        uint64_t samples = 0;

        for (size_t k = a->rank_off[q]; k < a->rank_off[q + 1]; k++)
            samples += shard_samples_in(m->shards[a->shard[k]].tokens, l->cfg.seq_len);
        l->usable = samples < l->usable ? samples : l->usable;
    }
    l->info.digest = a->digest;
    if (l->cfg.consumed != NULL)
        rc = plan_rest(l, a, err);
    if (rc == 0) {
        *ret_mine = mine;
        *ret_n = n;
        mine = NULL;
    }
out:
    free(mine);
    shard_assignment_free(a);
    return rc;
}

/* Whether epoch is the start epoch read after a change (only its rest). */
static bool in_rest(const struct shard_loader *l, uint64_t epoch)
{
    return l->has_rest && epoch == l->rest_epoch;
}

/*
 * Without a plan, the start epoch's rest (cfg.consumed): the split's samples not read yet
 * (ids, ascending). Every rank holds them all, as it holds the epoch's whole order; a step
 * takes global_batch of their permutation, as in any epoch. Train ids are the loader's own
 * (the train shards in manifest order, rest.h).
 */
static int open_rest(struct shard_loader *l, struct gs_error *err)
{
    const uint64_t *done = l->cfg.consumed;

    if ((l->rest = malloc((l->nsamples + 1) * sizeof(*l->rest))) == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    for (uint64_t g = 0; g < l->nsamples; g++) {
        if (!shard_rest_has(done, g))
            l->rest[l->nrest++] = g;
    }
    l->rest_usable = l->nrest;
    l->has_rest = true;
    l->rest_epoch = l->cfg.epoch;
    return 0;
}

/* Without a plan: the samples epoch's steps may take (in the rest epoch, those left). */
static uint64_t epoch_samples(const struct shard_loader *l, uint64_t epoch)
{
    return in_rest(l, epoch) ? l->nrest : l->nsamples;
}

/* Without a plan: epoch's global order (in the rest epoch, of the samples left). */
static void global_order(const struct shard_loader *l, uint64_t epoch, uint64_t *order)
{
    if (!in_rest(l, epoch)) {
        shard_loader_permutation(l->cfg.seed, epoch, l->nsamples, order);
        return;
    }
    shard_loader_permutation(l->cfg.seed, epoch, l->nrest, order);
    for (uint64_t i = 0; i < l->nrest; i++)
        order[i] = l->rest[order[i]];
}

/* Plan mode: the entries of epoch's order every rank may take (L in loader.h). */
static uint64_t usable_in(const struct shard_loader *l, uint64_t epoch)
{
    return in_rest(l, epoch) ? l->rest_usable : l->usable;
}

/* Plan mode: epoch's order of this rank's samples (in the rest epoch, of those left). */
static void plan_order(const struct shard_loader *l, uint64_t epoch, uint64_t *order)
{
    if (!in_rest(l, epoch)) {
        shard_loader_rank_permutation(l->cfg.seed, epoch, l->cfg.rank, l->nsamples, order);
        return;
    }
    shard_loader_rank_permutation(l->cfg.seed, epoch, l->cfg.rank, l->nrest, order);
    for (uint64_t i = 0; i < l->nrest; i++)
        order[i] = l->rest[order[i]];
}

/* Plan mode: whether every rank has a step's samples. */
static int check_plan_steps(const struct shard_loader *l, struct gs_error *err)
{
    if (l->usable >= l->rank_batch)
        return 0;
    return gs_error_set(err, -EINVAL, 0, 0,
                        "loader: the data plan leaves a rank %" PRIu64 " samples of %" PRIu32
                        "+1 tokens, fewer than the %" PRIu32
                        " a step takes on each rank (global_batch %" PRIu32 " / world %" PRIu32
                        "); this rank has %" PRIu64 " in %zu shards",
                        l->usable, l->cfg.seq_len, l->rank_batch, l->cfg.global_batch, l->world,
                        l->nsamples, l->nshards);
}

/* The digest rule (loader.h), a rest too short for a step, then whether the start position
 * lies inside the epoch. */
static int place_start(struct shard_loader *l, struct gs_error *err)
{
    uint64_t limit;

    if (l->cfg.position_digest != l->info.digest && l->sample > 0) {
        l->epoch++;
        l->sample = 0;
        l->info.moved = true;
        l->has_rest = false; /* the rest was of another assignment's positions */
    }
    if (l->has_rest) {
        l->info.rest_samples = l->nrest;
        l->info.rest_steps =
            l->plan_mode ? l->rest_usable / l->rank_batch : l->nrest / l->cfg.global_batch;
        if (l->info.rest_steps == 0) { /* fewer than a step left: on to the next epoch */
            l->has_rest = false;
            l->epoch++;
            l->sample = 0;
        }
    }
    limit = l->plan_mode ? usable_in(l, l->epoch) * l->world : epoch_samples(l, l->epoch);
    if (l->plan_mode && l->sample % l->world != 0)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: position sample %" PRIu64 " does not divide by world %" PRIu32,
                            l->sample, l->world);
    if (l->sample > limit)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "loader: position sample %" PRIu64 " is past the %" PRIu64
                            " samples of the %s split",
                            l->sample, limit, shard_split_name(l->cfg.split));
    return 0;
}

/* Fills l->info once the shards are open and the start is placed. */
static void fill_info(struct shard_loader *l)
{
    l->info.shards = (uint32_t)l->nshards;
    l->info.samples = l->nsamples;
    if (l->cfg.split == SHARD_SPLIT_TRAIN)
        l->info.steps_per_epoch =
            l->plan_mode ? l->usable / l->rank_batch : l->nsamples / l->cfg.global_batch;
    l->info.epoch = l->epoch;
    l->info.sample = l->sample;
}

static void *default_alloc(size_t size, void *data)
{
    (void)data;
    return malloc(size);
}

static void default_release(void *ptr, void *data)
{
    (void)data;
    free(ptr);
}

static int alloc_slots(struct shard_loader *l, struct gs_error *err)
{
    size_t per = (size_t)l->rank_batch * l->cfg.seq_len;

    l->slots = calloc(l->nslots, sizeof(*l->slots));
    l->window = malloc(((size_t)l->cfg.seq_len + 1) * sizeof(*l->window));
    if (l->slots == NULL || l->window == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    if (l->cfg.split == SHARD_SPLIT_TRAIN) {
        l->order = malloc(l->nsamples * sizeof(*l->order));
        if (l->order == NULL)
            return gs_error_set(err, -ENOMEM, 0, 0,
                                "loader: out of memory for %" PRIu64 " samples' order",
                                l->nsamples);
    }
    for (uint32_t i = 0; i < l->nslots; i++) {
        l->slots[i].tokens = l->cfg.alloc(2 * per * sizeof(int32_t), l->cfg.alloc_data);
        if (l->slots[i].tokens == NULL)
            return gs_error_set(err, -ENOMEM, 0, 0, "loader: cannot allocate batch buffers");
    }
    return 0;
}

/* --- the reader: stream mode --- */

/* The loader's shard k whose sample range holds g: first_sample[k] <= g < first_sample[k+1]. */
static size_t shard_of(const struct shard_loader *l, uint64_t g)
{
    size_t lo = 0, hi = l->nshards;

    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (l->first_sample[mid] <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* fetch's error rc for shard k, with err naming the shard when the callback left it empty. */
static int fetch_failed(const struct shard_loader *l, size_t k, int rc, struct gs_error *err)
{
    if (err != NULL && err->msg[0] == '\0')
        gs_error_set(err, rc, 0, 0, "loader: fetching shard %s: %s",
                     l->cfg.manifest->shards[l->index[k]].path, gs_strerror(rc));
    return rc;
}

/* Shard k needs no hint any more: hinted, found in place, or opened. */
static void settle(struct shard_loader *l, size_t k)
{
    if (!l->hinted[k]) {
        l->hinted[k] = true;
        l->unsettled--;
    }
}

/* A read needs shard k, not opened yet: opens it, through fetch(wait) when its file is not
 * there yet. */
static int need_shard(struct shard_loader *l, size_t k, struct gs_error *err)
{
    const struct shard_manifest *m = l->cfg.manifest;
    struct shard_loader_open o = {.start_ns = gs_clock_mono_ns(), .shard = l->index[k]};
    uint64_t t0;
    int rc = open_file(m, l->index[k], &l->shards[k], err);

    if (rc == -ENOENT) {
        gs_error_clear(err);
        t0 = gs_clock_mono_ns();
        rc = l->cfg.fetch(l->index[k], true, err, l->cfg.fetch_data);
        atomic_fetch_add_explicit(&l->fetch_wait_ns, gs_clock_mono_ns() - t0, memory_order_relaxed);
        atomic_fetch_add_explicit(&l->waits, 1, memory_order_relaxed);
        if (rc < 0)
            return fetch_failed(l, k, rc, err);
        rc = open_file(m, l->index[k], &l->shards[k], err);
        o.waited = true;
    }
    if (rc < 0)
        return rc;
    settle(l, k);
    atomic_fetch_add_explicit(&l->fetched, 1, memory_order_relaxed);
    if (l->cfg.on_open != NULL) {
        o.end_ns = gs_clock_mono_ns();
        l->cfg.on_open(&o, l->cfg.fill_data);
    }
    return 0;
}

/* The step after the one at (epoch, sample), by fill_train_plan's rule. */
static void plan_next(const struct shard_loader *l, uint64_t *epoch, uint64_t *sample)
{
    *sample += l->cfg.global_batch;
    if (*sample / l->world + l->rank_batch > usable_in(l, *epoch)) {
        (*epoch)++;
        *sample = 0;
    }
}

/* Epoch's order: the reader's own when it is in that epoch, else the lookahead's. */
static const uint64_t *order_of(struct shard_loader *l, uint64_t epoch)
{
    if (l->have_order && l->order_epoch == epoch)
        return l->order;
    if (!l->have_ahead || l->ahead_epoch != epoch) {
        plan_order(l, epoch, l->ahead_order);
        l->ahead_epoch = epoch;
        l->have_ahead = true;
    }
    return l->ahead_order;
}

/* Hints, in reading order, the shards the step at (epoch, sample) reads that are neither
 * opened nor hinted yet; a file already there needs no hint (the read opens it). */
static int hint_step(struct shard_loader *l, uint64_t epoch, uint64_t sample, struct gs_error *err)
{
    const uint64_t *order = order_of(l, epoch);
    uint64_t at = sample / l->world;
    int rc;

    for (uint32_t j = 0; j < l->rank_batch && l->unsettled > 0; j++) {
        size_t k = shard_of(l, order[at + j]);

        if (l->shards[k] != NULL || l->hinted[k])
            continue;
        settle(l, k);
        if (access(l->cfg.manifest->shards[l->index[k]].path, F_OK) == 0)
            continue;
        rc = l->cfg.fetch(l->index[k], false, err, l->cfg.fetch_data);
        if (rc < 0)
            return fetch_failed(l, k, rc, err);
    }
    return 0;
}

/* Before the step at the reader's position is filled: the step fetch_ahead steps later; before
 * the first, every step up to that one too. */
static int hint_ahead(struct shard_loader *l, struct gs_error *err)
{
    int rc = 0;

    if (l->unsettled == 0)
        return 0;
    if (l->hints_begun) {
        plan_next(l, &l->hint_epoch, &l->hint_sample);
        return hint_step(l, l->hint_epoch, l->hint_sample, err);
    }
    l->hints_begun = true;
    l->hint_epoch = l->epoch;
    l->hint_sample = l->sample;
    rc = hint_step(l, l->hint_epoch, l->hint_sample, err);
    for (uint32_t a = 0; rc == 0 && a < l->fetch_ahead && l->unsettled > 0; a++) {
        plan_next(l, &l->hint_epoch, &l->hint_sample);
        rc = hint_step(l, l->hint_epoch, l->hint_sample, err);
    }
    return rc;
}

/* Stream mode's state: every absent shard with samples is to be hinted (one without is never
 * read). */
static int start_stream(struct shard_loader *l, struct gs_error *err)
{
    l->hinted = calloc(l->nshards + 1, sizeof(*l->hinted));
    l->ahead_order = malloc((l->nsamples + 1) * sizeof(*l->ahead_order));
    if (l->hinted == NULL || l->ahead_order == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    for (size_t k = 0; k < l->nshards; k++) {
        if (l->shards[k] == NULL && l->first_sample[k + 1] > l->first_sample[k])
            l->unsettled++;
        else
            l->hinted[k] = true;
    }
    return 0;
}

/* --- the reader --- */

/* Global sample id g (of the split) into slot row j. */
static int read_sample(struct shard_loader *l, uint64_t g, struct slot *s, uint32_t j,
                       struct gs_error *err)
{
    size_t k = shard_of(l, g), t = l->cfg.seq_len;
    int32_t *in = s->tokens + (size_t)j * t;
    int32_t *tg = s->tokens + (size_t)l->rank_batch * t + (size_t)j * t;
    int rc;

    if (l->shards[k] == NULL && (rc = need_shard(l, k, err)) < 0)
        return rc;
    rc = shard_read(l->shards[k], (g - l->first_sample[k]) * t, t + 1, l->window, err);
    if (rc < 0)
        return rc;
    memcpy(in, l->window, t * sizeof(*in));
    memcpy(tg, l->window + 1, t * sizeof(*tg));
    return 0;
}

static int fill_train(struct shard_loader *l, struct slot *s, struct gs_error *err)
{
    uint64_t gb = l->cfg.global_batch, base;
    int rc;

    if (l->sample + gb > epoch_samples(l, l->epoch)) {
        l->epoch++;
        l->sample = 0;
    }
    if (!l->have_order || l->order_epoch != l->epoch) {
        global_order(l, l->epoch, l->order);
        l->order_epoch = l->epoch;
        l->have_order = true;
    }
    s->batch = (struct shard_loader_batch){.samples = l->rank_batch,
                                           .epoch = l->epoch,
                                           .sample = l->sample,
                                           .next_epoch = l->epoch,
                                           .next_sample = l->sample + gb};
    base = l->sample + (uint64_t)l->cfg.rank * l->rank_batch;
    for (uint32_t j = 0; j < l->rank_batch; j++) {
        rc = read_sample(l, l->order[base + j], s, j, err);
        if (rc < 0)
            return rc;
    }
    l->sample += gb;
    if (l->sample + gb > epoch_samples(l, l->epoch)) {
        s->batch.next_epoch = l->epoch + 1;
        s->batch.next_sample = 0;
    }
    return 0;
}

/* Plan mode: the step's entries of this rank's own order (loader.h). */
static int fill_train_plan(struct shard_loader *l, struct slot *s, struct gs_error *err)
{
    uint64_t gb = l->cfg.global_batch, w = l->world, at;
    int rc;

    if (l->sample / w + l->rank_batch > usable_in(l, l->epoch)) {
        l->epoch++;
        l->sample = 0;
    }
    if (!l->have_order || l->order_epoch != l->epoch) {
        plan_order(l, l->epoch, l->order);
        l->order_epoch = l->epoch;
        l->have_order = true;
    }
    if (l->streaming && (rc = hint_ahead(l, err)) < 0)
        return rc;
    s->batch = (struct shard_loader_batch){.samples = l->rank_batch,
                                           .epoch = l->epoch,
                                           .sample = l->sample,
                                           .next_epoch = l->epoch,
                                           .next_sample = l->sample + gb};
    at = l->sample / w;
    for (uint32_t j = 0; j < l->rank_batch; j++) {
        rc = read_sample(l, l->order[at + j], s, j, err);
        if (rc < 0)
            return rc;
    }
    l->sample += gb;
    if (l->sample / w + l->rank_batch > usable_in(l, l->epoch)) {
        s->batch.next_epoch = l->epoch + 1;
        s->batch.next_sample = 0;
    }
    return 0;
}

static int fill_val(struct shard_loader *l, struct slot *s, struct gs_error *err)
{
    uint64_t n = l->nsamples - l->sample, w = l->world, first, last;
    int rc;

    if (n > l->cfg.global_batch)
        n = l->cfg.global_batch;
    first = l->sample + l->cfg.rank * n / w;
    last = l->sample + (l->cfg.rank + 1) * n / w;
    s->batch = (struct shard_loader_batch){.samples = (uint32_t)(last - first),
                                           .end = n == 0,
                                           .epoch = l->epoch,
                                           .sample = l->sample,
                                           .next_epoch = l->epoch,
                                           .next_sample = l->sample + n};
    for (uint64_t g = first; g < last; g++) {
        rc = read_sample(l, g, s, (uint32_t)(g - first), err);
        if (rc < 0)
            return rc;
    }
    l->sample += n;
    return 0;
}

static void *reader_main(void *arg)
{
    struct shard_loader *l = arg;
    struct gs_error err;
    bool end = false;
    uint64_t start_ns;

    pthread_mutex_lock(&l->mu);
    while (!l->stop && !end) {
        struct slot *s;
        int rc;

        if (l->produced - l->released >= l->nslots) {
            pthread_cond_wait(&l->cond, &l->mu);
            continue;
        }
        s = &l->slots[l->produced % l->nslots];
        pthread_mutex_unlock(&l->mu);
        gs_error_clear(&err);
        start_ns = l->cfg.on_fill != NULL ? gs_clock_mono_ns() : 0;
        if (l->cfg.split == SHARD_SPLIT_VAL)
            rc = fill_val(l, s, &err);
        else
            rc = l->plan_mode ? fill_train_plan(l, s, &err) : fill_train(l, s, &err);
        s->batch.inputs = s->tokens;
        s->batch.targets = s->tokens + (size_t)l->rank_batch * l->cfg.seq_len;
        if (rc == 0 && l->cfg.on_fill != NULL) {
            struct shard_loader_fill f = {start_ns, gs_clock_mono_ns(), s->batch.epoch,
                                          s->batch.sample, s->batch.samples};

            l->cfg.on_fill(&f, l->cfg.fill_data);
        }
        pthread_mutex_lock(&l->mu);
        if (rc < 0) {
            l->error = rc;
            l->reader_err = err;
            break;
        }
        end = s->batch.end;
        l->produced++;
        pthread_cond_broadcast(&l->cond);
    }
    l->reader_done = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* --- public --- */

int shard_loader_new(const struct shard_loader_config *cfg, struct shard_loader **ret_loader,
                     struct gs_error *err)
{
    struct shard_loader *l;
    uint32_t *mine = NULL; /* plan mode: this rank's shards */
    size_t nmine = 0;
    int rc = check_config(cfg, err);

    if (rc < 0)
        return rc;
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return gs_error_set(err, -ENOMEM, 0, 0, "loader: out of memory");
    l->cfg = *cfg;
    if (l->cfg.alloc == NULL) {
        l->cfg.alloc = default_alloc;
        l->cfg.release = default_release;
    }
    l->world = cfg->world == 0 ? 1 : cfg->world;
    l->rank_batch = cfg->global_batch / l->world;
    l->nslots = cfg->prefetch == 0 ? DEFAULT_PREFETCH : cfg->prefetch;
    l->epoch = cfg->epoch;
    l->sample = cfg->sample;
    l->plan_mode = cfg->plan != NULL && cfg->split == SHARD_SPLIT_TRAIN;
    l->streaming = l->plan_mode && cfg->fetch != NULL;
    l->fetch_ahead = cfg->fetch_ahead == 0 ? DEFAULT_FETCH_AHEAD : cfg->fetch_ahead;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cond, NULL);
    rc = l->plan_mode ? plan_shards(l, &mine, &nmine, err) : 0;
    if (rc == 0)
        rc = open_shards(l, mine, nmine, err);
    if (rc == 0 && l->plan_mode)
        rc = check_plan_steps(l, err);
    if (rc == 0 && !l->plan_mode && cfg->split == SHARD_SPLIT_TRAIN && cfg->consumed != NULL)
        rc = open_rest(l, err);
    free(mine);
    if (rc == 0)
        rc = place_start(l, err);
    fill_info(l);
    if (rc == 0)
        rc = alloc_slots(l, err);
    if (rc == 0 && l->streaming)
        rc = start_stream(l, err);
    if (rc == 0) {
        rc = -pthread_create(&l->thread, NULL, reader_main, l);
        if (rc < 0)
            gs_error_set(err, rc, 0, 0, "loader: cannot start its reader: %s", gs_strerror(rc));
    }
    if (rc < 0) {
        shard_loader_free(l);
        return rc;
    }
    l->thread_started = true;
    *ret_loader = l;
    return 0;
}

void shard_loader_free(struct shard_loader *l)
{
    if (l == NULL)
        return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    for (uint32_t i = 0; l->slots != NULL && i < l->nslots; i++) {
        if (l->slots[i].tokens != NULL)
            l->cfg.release(l->slots[i].tokens, l->cfg.alloc_data);
    }
    for (size_t i = 0; i < l->nshards; i++)
        shard_close(l->shards[i]);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    free(l->slots);
    free(l->shards);
    free(l->first_sample);
    free(l->index);
    free(l->hinted);
    free(l->ahead_order);
    free(l->order);
    free(l->rest);
    free(l->window);
    free(l);
}

int shard_loader_next(struct shard_loader *l, struct shard_loader_batch *batch,
                      struct gs_error *err)
{
    uint64_t t0 = gs_clock_mono_ns(), waited;
    struct shard_loader_batch b;
    int rc = 0;

    if (l->ended) {
        *batch = l->end_batch;
        batch->wait_ns = 0;
        return 0;
    }
    pthread_mutex_lock(&l->mu);
    if (l->delivered > l->released) {
        l->released++;
        pthread_cond_broadcast(&l->cond);
    }
    while (l->produced == l->delivered && !l->reader_done)
        pthread_cond_wait(&l->cond, &l->mu);
    if (l->produced > l->delivered) {
        b = l->slots[l->delivered % l->nslots].batch;
        l->delivered++;
    } else {
        /* The reader stopped without a batch for us: it failed. */
        rc = l->error != 0 ? l->error : -EIO;
        if (err != NULL)
            *err = l->reader_err;
    }
    pthread_mutex_unlock(&l->mu);
    if (rc < 0)
        return rc;
    waited = gs_clock_mono_ns() - t0;
    l->wait_total_ns += waited;
    b.wait_ns = waited;
    if (b.end) {
        l->ended = true;
        l->end_batch = b;
    }
    *batch = b;
    return 0;
}

uint64_t shard_loader_samples(const struct shard_loader *l)
{
    return l->nsamples;
}

void shard_loader_info(const struct shard_loader *l, struct shard_loader_info *ret)
{
    *ret = l->info;
    ret->fetched_shards = atomic_load_explicit(&l->fetched, memory_order_relaxed);
    ret->fetch_waits = atomic_load_explicit(&l->waits, memory_order_relaxed);
    ret->fetch_wait_ns = atomic_load_explicit(&l->fetch_wait_ns, memory_order_relaxed);
}

uint64_t shard_loader_wait_ns(const struct shard_loader *l)
{
    return l->wait_total_ns;
}
