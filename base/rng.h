/*
 * rng.h — the one xoshiro256** generator that engine/ and kernels/ share.
 *
 * base/ sits below every other folder: it includes nothing of dtsim, so the
 * engine (which knows nothing of ML) and the kernels (which know neither the
 * engine nor the network) may both include it without depending on each
 * other.  This header holds only what the two sides draw identically: the
 * xoshiro256** state step (Blackman and Vigna, "Scrambled linear
 * pseudorandom number generators", ACM TOMS 2021), SplitMix64 (Steele, Lea
 * and Flood 2014) used by both seedings, the mapping of a draw's top 53
 * bits to a double in [0, 1), and the unbiased modulo-with-rejection
 * integer in [0, n).
 *
 * The seeding from (seed, stream) and the normal distribution stay with
 * each caller (eng_rng_init / kern_rng_init, eng_rng_normal /
 * kern_rng_normal): the two differ, and unifying them would change every
 * value drawn, hence every trace and golden file.
 *
 * Everything is static inline and works on a caller-owned guint64[4]
 * state, so there is no object, no allocation and no hidden state: the
 * draws depend only on the state passed in.
 */
#ifndef DTSIM_BASE_RNG_H
#define DTSIM_BASE_RNG_H

#include <glib.h>

/* x rotated left by k bits, 0 < k < 64. */
static inline guint64
base_rng_rotl (guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

/* SplitMix64: advances *x by the golden-ratio increment and returns its
 * mixed output.  A bijection of the advanced *x, used to spread a 64-bit
 * seed over xoshiro's 256-bit state. */
static inline guint64
base_rng_splitmix64 (guint64 *x)
{
  guint64 z = (*x += G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Next 64 random bits of xoshiro256**; advances s.  s must not be all
 * zero (the generator's only fixed point): the seeding guarantees it. */
static inline guint64
base_rng_next (guint64 s[4])
{
  guint64 result = base_rng_rotl (s[1] * 5, 7) * 9;
  guint64 t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = base_rng_rotl (s[3], 45);
  return result;
}

/* The top 53 bits of `bits` as a double in [0, 1): k * 2^-53 with
 * k < 2^53, exact in IEEE double. */
static inline double
base_rng_unit (guint64 bits)
{
  return (double) (bits >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n), n > 0 (the caller checks), without modulo
 * bias: draws below 2^64 mod n are rejected, then the draw is reduced
 * mod n.  Advances s by one draw or more. */
static inline guint64
base_rng_below_mod (guint64 s[4], guint64 n)
{
  /* (2^64 - n) mod n = 2^64 mod n: draws below it would favour small
   * results. */
  guint64 threshold = (-n) % n;

  for (;;)
    {
      guint64 x = base_rng_next (s);
      if (x >= threshold)
        return x % n;
    }
}

#endif /* DTSIM_BASE_RNG_H */
