/*
 * rest.h: the rest of an epoch after the data assignment changed inside it. A run resumed
 * from a checkpoint at (epoch, sample) under another plan (other ranks, other holdings)
 * cannot go on in the new assignment's order from that position: it would read some of the
 * epoch's samples twice and others never. Instead the samples the old assignment read in
 * that epoch are worked out from what fixed its order (the old plan or none, seed, epoch,
 * position), and the new run reads the epoch's other samples (loader.h, "consumed"). A run
 * without a plan is an assignment too (digest 0): from a plan to none, or back.
 *
 * Samples are numbered over the dataset's train shards in manifest order: shard i's
 * windows of T + 1 tokens (loader.h) from shard_train_first(i). A set of them is a bitmap
 * of 64-bit words, bit g of word g / 64.
 *
 * Pure (no I/O, no threads); the caller frees what it is handed.
 */
#ifndef SHARD_REST_H
#define SHARD_REST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sharding/manifest.h"
#include "sharding/planfile.h"

/* Windows of T + 1 tokens at stride T in a shard of n tokens: its samples (loader.h). */
static inline uint64_t shard_samples_in(uint64_t tokens, uint64_t t)
{
    return tokens > t ? (tokens - 1) / t : 0;
}

/* The words of a bitmap of n bits. */
static inline size_t shard_rest_words(uint64_t nbits)
{
    return (size_t)((nbits + 63) / 64);
}

/*
 * The train samples' numbering: *ret_first (manifest shard count + 1 entries; malloc'd, the
 * caller frees) holds each manifest shard's first sample id (a val shard's is the next train
 * shard's: it has none), and *ret_total the train samples in all. 0 or -ENOMEM.
 */
int shard_train_first(const struct shard_manifest *m, uint32_t seq_len, uint64_t **ret_first,
                      uint64_t *ret_total);

/*
 * A plan's assignment, as every rank of it computes it: rank r reads the manifest shards
 * shard[rank_off[r] .. rank_off[r+1]), ascending, local[k] telling whether the rank's node
 * held shard k's entry; digest hashes the dataset id, the rank count and each rank's
 * shards (loader.h, "Resuming under another assignment").
 */
struct shard_assignment {
    uint32_t nranks;
    size_t *rank_off; /* nranks + 1 */
    uint32_t *shard;
    bool *local;
    uint64_t digest; /* never 0 */
};

/* Plans pf over m (planner.h). 0, -EINVAL (err names the plan's fault), -ENOMEM. */
int shard_assignment_new(const struct shard_planfile *pf, const struct shard_manifest *m,
                         struct shard_assignment **ret, struct gs_error *err);
void shard_assignment_free(struct shard_assignment *a);

/*
 * The train samples of epoch read by the first `sample` (global, over every rank) of its
 * positions, as the loader read them: under plan old (NULL: without a plan, ranks slicing
 * the seeded order of every train sample), having started the epoch with the samples in
 * base read already (NULL: none) and read only the others. Returns 0 with
 * *ret_bits (malloc'd) the union of base and those, over *ret_nbits train samples; -EINVAL
 * when the old plan does not fit m or sample is past that epoch's positions (err says), or
 * -ENOMEM.
 */
int shard_rest_consumed(const struct shard_manifest *m, const struct shard_planfile *old,
                        uint32_t seq_len, uint64_t seed, uint64_t epoch, uint64_t sample,
                        const uint64_t *base, uint64_t **ret_bits, uint64_t *ret_nbits,
                        struct gs_error *err);

/* Whether id g is in bits. */
static inline bool shard_rest_has(const uint64_t *bits, uint64_t g)
{
    return (bits[g / 64] >> (g % 64)) & 1;
}

/* How many of the ids [from, to) are not in bits. */
uint64_t shard_rest_unread(const uint64_t *bits, uint64_t from, uint64_t to);

/* Rank r's train samples under a, numbered by first (shard_train_first); with unread, only
 * those not in it. */
uint64_t shard_assignment_samples(const struct shard_assignment *a, uint32_t r,
                                  const uint64_t *first, const uint64_t *unread);

#endif
