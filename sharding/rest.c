/*
 * rest.c: a plan's assignment and the samples an epoch's first positions read (rest.h).
 * The loader (loader.c) reads through the same functions, so what this file says was read
 * is what a loader read: the assignment is the planner's over the plan file, each rank's
 * shards in manifest order, and a rank's order in an epoch is its permutation
 * (shard_loader_rank_permutation) of its samples, or of those it had not read when the
 * epoch began after a change.
 */
#include "sharding/rest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/loader.h"
#include "sharding/planner.h"

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

int shard_train_first(const struct shard_manifest *m, uint32_t seq_len, uint64_t **ret_first,
                      uint64_t *ret_total)
{
    uint64_t *first = malloc((m->nshards + 1) * sizeof(*first)), total = 0;

    if (first == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < m->nshards; i++) {
        first[i] = total;
        if (m->shards[i].split == SHARD_SPLIT_TRAIN)
            total += shard_samples_in(m->shards[i].tokens, seq_len);
    }
    first[m->nshards] = total;
    *ret_first = first;
    *ret_total = total;
    return 0;
}

/* FNV-1a over v's 8 bytes, little-endian first. */
static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= FNV_PRIME;
    }
    return h;
}

void shard_assignment_free(struct shard_assignment *a)
{
    if (a == NULL)
        return;
    free(a->rank_off);
    free(a->shard);
    free(a->local);
    free(a);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

    return (a > b) - (a < b);
}

/* Each rank's shards into manifest order, their local flags with them (key: shard << 1 |
 * local, in keys: the plan's shard count), and the digest. */
static void sort_and_digest(struct shard_assignment *a, const char *dataset, uint64_t *keys)
{
    uint64_t h = FNV_OFFSET;

    for (int i = 0; i < SHARD_DATASET_ID_SIZE - 1; i++)
        h = fnv_u64(h, (unsigned char)dataset[i]);
    h = fnv_u64(h, a->nranks);
    for (uint32_t r = 0; r < a->nranks; r++) {
        size_t lo = a->rank_off[r], n = a->rank_off[r + 1] - lo;

        for (size_t k = lo; k < lo + n; k++)
            keys[k] = (uint64_t)a->shard[k] << 1 | a->local[k];
        qsort(keys + lo, n, sizeof(*keys), cmp_u64);
        h = fnv_u64(h, n);
        for (size_t k = lo; k < lo + n; k++) {
            a->shard[k] = (uint32_t)(keys[k] >> 1);
            a->local[k] = keys[k] & 1;
            h = fnv_u64(h, a->shard[k]);
        }
    }
    a->digest = h != 0 ? h : 1;
}

int shard_assignment_new(const struct shard_planfile *pf, const struct shard_manifest *m,
                         struct shard_assignment **ret, struct gs_error *err)
{
    struct shard_planfile_input pi = {0};
    struct shard_plan *plan = NULL;
    struct shard_assignment *a = NULL;
    struct gs_error perr = {0};
    uint64_t *keys = NULL;
    int rc = shard_planfile_input(pf, m, &pi, &perr);

    if (rc == 0)
        rc = shard_plan(&pi.in, &plan, &perr);
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "%s%s", rc == -ENOMEM ? "out of memory" : "data plan: ",
                     rc == -ENOMEM ? "" : perr.msg);
        goto out;
    }
    rc = -ENOMEM;
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        goto oom;
    a->nranks = plan->nranks;
    a->rank_off = malloc((plan->nranks + 1) * sizeof(*a->rank_off));
    a->shard = malloc((plan->nshards + 1) * sizeof(*a->shard));
    a->local = malloc((plan->nshards + 1) * sizeof(*a->local));
    keys = malloc((plan->nshards + 1) * sizeof(*keys));
    if (a->rank_off == NULL || a->shard == NULL || a->local == NULL || keys == NULL)
        goto oom;
    memcpy(a->rank_off, plan->rank_off, (plan->nranks + 1) * sizeof(*a->rank_off));
    for (size_t k = 0; k < plan->nshards; k++) {
        a->shard[k] = pi.manifest_index[plan->reads[k].shard];
        a->local[k] = plan->reads[k].local;
    }
    sort_and_digest(a, pf->dataset, keys);
    *ret = a;
    a = NULL;
    rc = 0;
    goto out;
oom:
    gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
out:
    free(keys);
    shard_assignment_free(a);
    shard_plan_free(plan);
    shard_planfile_input_release(&pi);
    return rc;
}

static void set(uint64_t *bits, uint64_t g)
{
    bits[g / 64] |= UINT64_C(1) << (g % 64);
}

uint64_t shard_rest_unread(const uint64_t *bits, uint64_t from, uint64_t to)
{
    uint64_t n = 0;

    for (uint64_t g = from; g < to; g++) { /* word at a time where whole words are in range */
        if (g % 64 == 0 && g + 64 <= to) {
            n += 64 - (uint64_t)__builtin_popcountll(bits[g / 64]);
            g += 63;
            continue;
        }
        n += !shard_rest_has(bits, g);
    }
    return n;
}

/* Rank r's samples of a (ascending ids), those not in base, into list; their count. */
static uint64_t rank_samples(const struct shard_assignment *a, uint32_t r, const uint64_t *first,
                             const uint64_t *base, uint64_t *list)
{
    uint64_t n = 0;

    for (size_t k = a->rank_off[r]; k < a->rank_off[r + 1]; k++) {
        for (uint64_t g = first[a->shard[k]]; g < first[a->shard[k] + 1]; g++) {
            if (base == NULL || !shard_rest_has(base, g))
                list[n++] = g;
        }
    }
    return n;
}

uint64_t shard_assignment_samples(const struct shard_assignment *a, uint32_t r,
                                  const uint64_t *first, const uint64_t *unread)
{
    uint64_t n = 0;

    for (size_t k = a->rank_off[r]; k < a->rank_off[r + 1]; k++) {
        uint64_t lo = first[a->shard[k]], hi = first[a->shard[k] + 1];

        n += unread != NULL ? shard_rest_unread(unread, lo, hi) : hi - lo;
    }
    return n;
}

/* Under the old assignment a: every rank's first sample / nranks entries of its order. */
static int mark_planned(const struct shard_assignment *a, const uint64_t *first, uint64_t seed,
                        uint64_t epoch, uint64_t sample, const uint64_t *base, uint64_t *bits,
                        struct gs_error *err)
{
    uint64_t each = sample / a->nranks, fewest = UINT64_MAX, most = 0, *list = NULL, *perm = NULL;
    int rc = 0;

    for (uint32_t r = 0; r < a->nranks; r++) {
        uint64_t n = shard_assignment_samples(a, r, first, base);

        fewest = n < fewest ? n : fewest;
        most = n > most ? n : most;
    }
    if (sample % a->nranks != 0 || each > fewest)
        return gs_error_set(err, -EINVAL, 0, 0,
                            "position sample %" PRIu64 " is not one of the old plan's %" PRIu32
                            " ranks' positions (each has %" PRIu64 " samples to read)",
                            sample, a->nranks, fewest);
    list = malloc((most + 1) * sizeof(*list));
    perm = malloc((most + 1) * sizeof(*perm));
    if (list == NULL || perm == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto out;
    }
    for (uint32_t r = 0; r < a->nranks; r++) {
        uint64_t n = rank_samples(a, r, first, base, list);

        if ((rc = shard_loader_rank_permutation(seed, epoch, r, n, perm)) < 0)
            break;
        for (uint64_t i = 0; i < each; i++)
            set(bits, list[perm[i]]);
    }
out:
    free(list);
    free(perm);
    return rc;
}

/*
 * Without a plan: the first `sample` entries of epoch's global order (loader.h) into bits,
 * the order of every train sample, or with base of those not in base (ascending ids).
 */
static int mark_global(uint64_t total, uint64_t seed, uint64_t epoch, uint64_t sample,
                       const uint64_t *base, uint64_t *bits, struct gs_error *err)
{
    uint64_t *left = malloc((total + 1) * sizeof(*left)), *order = NULL, n = 0;
    int rc = 0;

    if (left == NULL || (order = malloc((total + 1) * sizeof(*order))) == NULL) {
        rc = gs_error_set(err, -ENOMEM, 0, 0, "out of memory");
        goto out;
    }
    for (uint64_t g = 0; g < total; g++) {
        if (base == NULL || !shard_rest_has(base, g))
            left[n++] = g;
    }
    if (sample > n) {
        rc = gs_error_set(err, -EINVAL, 0, 0,
                          "position sample %" PRIu64 " is past the %" PRIu64
                          " train samples the epoch had to read",
                          sample, n);
        goto out;
    }
    if ((rc = shard_loader_permutation(seed, epoch, n, order)) < 0)
        goto out;
    for (uint64_t i = 0; i < sample; i++)
        set(bits, left[order[i]]);
out:
    free(left);
    free(order);
    return rc;
}

int shard_rest_consumed(const struct shard_manifest *m, const struct shard_planfile *old,
                        uint32_t seq_len, uint64_t seed, uint64_t epoch, uint64_t sample,
                        const uint64_t *base, uint64_t **ret_bits, uint64_t *ret_nbits,
                        struct gs_error *err)
{
    struct shard_assignment *a = NULL;
    uint64_t *first = NULL, *bits = NULL, total = 0;
    int rc = shard_train_first(m, seq_len, &first, &total);

    if (rc == 0 && (bits = calloc(shard_rest_words(total) + 1, sizeof(*bits))) == NULL)
        rc = -ENOMEM;
    if (rc < 0) {
        gs_error_set(err, rc, 0, 0, "out of memory");
        goto out;
    }
    if (base != NULL)
        memcpy(bits, base, shard_rest_words(total) * sizeof(*bits));
    if (old != NULL) {
        rc = shard_assignment_new(old, m, &a, err);
        if (rc == 0)
            rc = mark_planned(a, first, seed, epoch, sample, base, bits, err);
    } else {
        rc = mark_global(total, seed, epoch, sample, base, bits, err);
    }
    if (rc == 0) {
        *ret_bits = bits;
        *ret_nbits = total;
        bits = NULL;
    }
out:
    shard_assignment_free(a);
    free(first);
    free(bits);
    return rc;
}
