/*
 * rng.h: the one seeded generator of the sharding module (the loader's epoch permutation,
 * the planner's reading order): splitmix64 (Steele, Lea, Flood 2014) and an unbiased
 * uniform draw from it. Both sides must draw alike for a plan to match the loader's slices.
 */
#ifndef SHARD_RNG_H
#define SHARD_RNG_H

#include <stdint.h>

static inline uint64_t shard_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, bound), bound >= 1: values below 2^64 mod bound are redrawn (no bias). */
static inline uint64_t shard_uniform(uint64_t *state, uint64_t bound)
{
    uint64_t threshold = (0 - bound) % bound;
    uint64_t r;

    do {
        r = shard_splitmix64(state);
    } while (r < threshold);
    return r % bound;
}

#endif
