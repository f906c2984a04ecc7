/*
 * sampler.c — how data-parallel workers draw their batches.
 *
 * The training set is shuffled once (stream POL_SAMPLER_STREAM of the seed)
 * and cut into `workers` contiguous parts, one per worker.  A worker draws its
 * batches in order from its part and reshuffles its part (its own stream,
 * 0x10000 + worker) each time it has used every sample, so a batch may span
 * the end of one pass and the start of the next.  Every policy that gives
 * each worker its own data uses this, so that they see the same samples.
 */
#include "config.h"

#include <string.h>

#include "policies/policy.h"

#define POL_SAMPLER_STREAM 0x5eed0001u

PolSampler *
pol_samplers_new (int n, int workers, guint64 seed)
{
  g_autofree int *perm = g_new (int, MAX (n, 1));
  for (int i = 0; i < n; i++)
    perm[i] = i;
  EngRng rng;
  eng_rng_init (&rng, seed, POL_SAMPLER_STREAM);
  eng_rng_shuffle (&rng, perm, n);
  PolSampler *s = g_new0 (PolSampler, workers);
  for (int w = 0; w < workers; w++)
    {
      int lo = (int) ((gint64) n * w / workers), hi = (int) ((gint64) n * (w + 1) / workers);
      eng_rng_init (&s[w].rng, seed, 0x10000u + (guint64) w);
      s[w].len = hi - lo;
      s[w].idx = g_memdup2 (perm + lo, sizeof (int) * (gsize) s[w].len);
      s[w].cursor = s[w].len; /* shuffle before the first batch */
    }
  return s;
}

void
pol_samplers_free (PolSampler *s, int workers)
{
  if (!s)
    return;
  for (int w = 0; w < workers; w++)
    g_free (s[w].idx);
  g_free (s);
}

void
pol_sampler_next (PolSampler *s, int batch, int *idx)
{
  g_return_if_fail (s->len > 0);
  for (int j = 0; j < batch; j++)
    {
      if (s->cursor == s->len)
        {
          eng_rng_shuffle (&s->rng, s->idx, (gsize) s->len);
          s->cursor = 0;
        }
      idx[j] = s->idx[s->cursor++];
    }
}
