/*
 * rng.h — the kernels' private pseudo-random generator (not public API).
 *
 * Kernels may not depend on the engine, yet the data generator and the model
 * initialisers need seeded random numbers.  This header gives them a
 * xoshiro256** generator (its state step and SplitMix64 are base/rng.h's,
 * shared with the engine) whose state is seeded by SplitMix64 from a 64-bit
 * seed and a stream tag, plus uniform integers (unbiased, by rejection) and
 * standard normals (Box–Muller).  The seeding, the (0, 1] uniform and the
 * normal that keeps its spare differ from the engine's eng_rng_* and stay
 * here: making them one would change every value drawn, hence the data sets,
 * the initial weights and every golden file.  All state lives in the
 * caller's KernRng; the same (seed, stream) always yields the same sequence
 * on every platform, because only integer arithmetic and IEEE double
 * log/sqrt/cos/sin are involved.
 */
#ifndef DTSIM_KERNELS_RNG_H
#define DTSIM_KERNELS_RNG_H

#include <glib.h>
#include <math.h>

#include "base/rng.h"
#include "base/fmath.h"

typedef struct {
  guint64 s[4];      /* xoshiro256** state (base/rng.h), never all zero */
  double spare;      /* second Box–Muller normal, valid if has_spare */
  gboolean has_spare;
} KernRng;

/* Stream tags, so that the same user seed gives unrelated sequences to the
 * data generator and to each model initialiser. */
#define KERN_RNG_STREAM_BLOBS   G_GUINT64_CONSTANT (0x626c6f6273)       /* "blobs" */
#define KERN_RNG_STREAM_SOFTMAX G_GUINT64_CONSTANT (0x736f66746d6178)   /* ASCII of softmax */
#define KERN_RNG_STREAM_SPARSE  G_GUINT64_CONSTANT (0x737061727365)     /* ASCII of sparse */
#define KERN_RNG_STREAM_GPT      G_GUINT64_CONSTANT (0x677074)          /* ASCII of gpt */
#define KERN_RNG_STREAM_LANGUAGE G_GUINT64_CONSTANT (0x6c616e6775616765) /* ASCII of language */

/* Seeds `rng` from (seed, stream).  SplitMix64 output is never all zero over
 * four consecutive draws, so the xoshiro state is valid. */
static inline void
kern_rng_init (KernRng *rng, guint64 seed, guint64 stream)
{
  guint64 x = seed ^ base_rng_splitmix64 (&stream);
  for (int i = 0; i < 4; i++)
    rng->s[i] = base_rng_splitmix64 (&x);
  rng->spare = 0.0;
  rng->has_spare = FALSE;
}

/* Next 64 uniformly distributed bits (xoshiro256**). */
static inline guint64
kern_rng_next (KernRng *rng)
{
  return base_rng_next (rng->s);
}

/* Uniform double in (0, 1]: never 0, so its logarithm is finite. */
static inline double
kern_rng_uniform_pos (KernRng *rng)
{
  return (double) ((kern_rng_next (rng) >> 11) + 1) * 0x1.0p-53;
}

/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
static inline guint64
kern_rng_below (KernRng *rng, guint64 bound)
{
  return base_rng_below_mod (rng->s, bound);
}

/* Standard normal N(0, 1) by Box–Muller; each pair of uniforms gives two
 * normals, the second kept in rng->spare for the next call. */
static inline double
kern_rng_normal (KernRng *rng)
{
  if (rng->has_spare)
    {
      rng->has_spare = FALSE;
      return rng->spare;
    }
  double u1 = kern_rng_uniform_pos (rng);
  double u2 = kern_rng_uniform_pos (rng);
  double r = sqrt (-2.0 * base_log (u1));
  double theta = 2.0 * G_PI * u2;
  rng->spare = r * base_sin (theta);
  rng->has_spare = TRUE;
  return r * base_cos (theta);
}

#endif /* DTSIM_KERNELS_RNG_H */
