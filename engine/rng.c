/*
 * rng.c — seeded random-number streams for the engine.
 *
 * Each EngRng is a xoshiro256** generator (Blackman and Vigna, "Scrambled
 * linear pseudorandom number generators", ACM TOMS 2021) whose state step,
 * shared with the kernels' generator, is in base/rng.h.  Its 256-bit state
 * is filled from two SplitMix64 sequences, one started from the scenario
 * seed and one from a hash of the stream number, so (seed, stream) pairs
 * that differ in either component start from unrelated states.  This
 * seeding, and the Box–Muller normal that keeps no spare, are the engine's
 * own: the kernels seed and draw normals differently (kernels/rng.h), and
 * unifying the two would change every value either side draws.  All derived
 * distributions draw from eng_rng_u64() only and keep no state outside the
 * struct, so a stream's draws depend on nothing but its (seed, stream) pair
 * and the number of draws made so far.
 */
#include <math.h>

#include "base/rng.h"
#include "base/fmath.h"
#include "engine/engine.h"

/* MurmurHash3's 64-bit finaliser, a bijection distinct from SplitMix64's,
 * used to start the stream's sequence. */
static guint64
fmix64 (guint64 k)
{
  k ^= k >> 33;
  k *= G_GUINT64_CONSTANT (0xFF51AFD7ED558CCD);
  k ^= k >> 33;
  k *= G_GUINT64_CONSTANT (0xC4CEB9FE1A85EC53);
  k ^= k >> 33;
  return k;
}

/* Seeds `rng` from (seed, stream): the same pair always gives the same
 * sequence. */
void
eng_rng_init (EngRng *rng, guint64 seed, guint64 stream)
{
  guint64 a = seed;
  guint64 b = fmix64 (stream ^ G_GUINT64_CONSTANT (0xD1B54A32D192ED03));
  int i;

  g_return_if_fail (rng != NULL);
  for (i = 0; i < 4; i++)
    rng->s[i] = base_rng_splitmix64 (&a)
                ^ base_rng_rotl (base_rng_splitmix64 (&b), 17);
  /* The all-zero state is xoshiro's only fixed point. */
  if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0)
    rng->s[0] = 1;
}

/* Next 64 random bits (xoshiro256**). */
guint64
eng_rng_u64 (EngRng *rng)
{
  return base_rng_next (rng->s);
}

/* Uniform double in [0, 1): the top 53 bits of a draw times 2^-53. */
double
eng_rng_uniform (EngRng *rng)
{
  return base_rng_unit (eng_rng_u64 (rng));
}

/* Uniform integer in [0, n), n > 0, without modulo bias (Lemire, "Fast
 * random integer generation in an interval", ACM TOMACS 2019). */
guint64
eng_rng_below (EngRng *rng, guint64 n)
{
  g_return_val_if_fail (n > 0, 0);
#ifdef __SIZEOF_INT128__
  {
    unsigned __int128 m = (unsigned __int128) eng_rng_u64 (rng) * n;
    guint64 low = (guint64) m;
    if (low < n)
      {
        guint64 threshold = -n % n; /* 2^64 mod n */
        while (low < threshold)
          {
            m = (unsigned __int128) eng_rng_u64 (rng) * n;
            low = (guint64) m;
          }
      }
    return (guint64) (m >> 64);
  }
#else
  return base_rng_below_mod (rng->s, n);
#endif
}

/* Exponential with the given mean (> 0, same unit as the result):
 * -mean * ln(1 - u) with u in [0, 1), so the logarithm's argument is in
 * (0, 1] and the result is finite and >= 0. */
double
eng_rng_exponential (EngRng *rng, double mean)
{
  g_return_val_if_fail (mean > 0.0, 0.0);
  return -mean * base_log1p (-eng_rng_uniform (rng));
}

/* Standard normal N(0, 1) by Box–Muller, using one of the pair and keeping
 * no spare, so every call makes exactly two uniform draws. */
double
eng_rng_normal (EngRng *rng)
{
  double u1 = 1.0 - eng_rng_uniform (rng); /* (0, 1] */
  double u2 = eng_rng_uniform (rng);
  return sqrt (-2.0 * base_log (u1)) * base_cos (2.0 * G_PI * u2);
}

/* Shuffles v[0..n) in place (Fisher–Yates); every permutation is equally
 * likely. */
void
eng_rng_shuffle (EngRng *rng, int *v, gsize n)
{
  gsize i;

  g_return_if_fail (v != NULL || n == 0);
  for (i = n; i > 1; i--)
    {
      gsize j = (gsize) eng_rng_below (rng, i);
      int t = v[i - 1];
      v[i - 1] = v[j];
      v[j] = t;
    }
}
