/*
 * rng.h: the trainer's random numbers (weight initialisation, sampling): xoshiro256** seeded
 * through splitmix64, normal deviates by Box-Muller. Small, fast, and the same sequence on
 * every machine for a seed; the state is four words, saved in checkpoints as is.
 */
#ifndef TRN_RNG_H
#define TRN_RNG_H

#include <stdint.h>

struct trn_rng {
    uint64_t s[4];
};

void trn_rng_seed(struct trn_rng *r, uint64_t seed);
uint64_t trn_rng_next(struct trn_rng *r);
/* Uniform in [0, 1), 53 bits. */
double trn_rng_uniform(struct trn_rng *r);
/* Standard normal. */
double trn_rng_normal(struct trn_rng *r);

#endif
