/*
 * rng.c: xoshiro256** (Blackman and Vigna) with splitmix64 seeding, written from the
 * published description. Box-Muller draws two uniforms per normal and uses one of the pair:
 * keeping the other would make a resumed run depend on whether it was cached.
 */
#include "trainer/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void trn_rng_seed(struct trn_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

uint64_t trn_rng_next(struct trn_rng *r)
{
    uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double trn_rng_uniform(struct trn_rng *r)
{
    return (double)(trn_rng_next(r) >> 11) * 0x1.0p-53;
}

double trn_rng_normal(struct trn_rng *r)
{
    double u1 = trn_rng_uniform(r), u2 = trn_rng_uniform(r);

    if (u1 < 1e-300)
        u1 = 1e-300; /* log(0) */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
