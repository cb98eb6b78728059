/*
 * rng.h: a small, explicit, seedable random number generator (xoshiro256**).
 *
 * Every consumer owns its own Rng and passes it by pointer: initialisation, shuffling and
 * dropout use separate streams, so changing one never shifts the others. Nothing here
 * touches global state, and the same seed gives the same numbers on every machine.
 */
#ifndef NMT_RNG_H
#define NMT_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} Rng;

/* Seeds the generator; `stream` selects an independent sequence for the same seed. */
void rng_seed(Rng *rng, uint64_t seed, uint64_t stream);
uint64_t rng_next(Rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(Rng *rng);
/* Uniform integer in [0, n) without modulo bias; n > 0. */
uint64_t rng_below(Rng *rng, uint64_t n);
/* Standard normal (Box-Muller; one value per call, no cached state). */
double rng_normal(Rng *rng);

#endif
