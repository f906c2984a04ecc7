/*
 * sampler.c — how data-parallel workers draw their batches.
 *
 * First the training set is partitioned among the workers, one part each:
 *
 * - `iid`: the set is shuffled once (stream TRAIN_SAMPLER_STREAM of the seed)
 *   and cut into `workers` contiguous parts.
 * - `by-label`: the McMahan et al. shard scheme ("Communication-efficient
 *   learning of deep networks from decentralized data", AISTATS 2017) with
 *   shards cut inside classes, so that every shard holds one label and a
 *   worker dealt c shards sees at most c classes.  The rule is spelt out
 *   above train_samplers_new_by_label() and in docs/policies.md.
 *
 * Then a worker draws its batches in order from its part and reshuffles its
 * part (its own stream, 0x10000 + worker) each time it has used every
 * sample, so a batch may span the end of one pass and the start of the
 * next.  Every policy that gives each worker its own data uses this, so
 * that they see the same samples.
 */
#include "config.h"

#include <string.h>

#include "train/sampler.h"

#define TRAIN_SAMPLER_STREAM 0x5eed0001u           /* iid partition */
#define TRAIN_SAMPLER_BY_LABEL_STREAM 0x5eed0002u  /* by-label partition */
#define TRAIN_SAMPLER_WORKER_STREAM 0x10000u       /* + worker: reshuffles */

static const char *const partition_names[] = {
  [TRAIN_PARTITION_IID] = "iid",
  [TRAIN_PARTITION_BY_LABEL] = "by-label",
};

/* Parses a partition name; see policy.h. */
gboolean
train_partition_parse (const char *name, TrainPartition *out)
{
  g_return_val_if_fail (name != NULL && out != NULL, FALSE);
  for (gsize i = 0; i < G_N_ELEMENTS (partition_names); i++)
    if (strcmp (name, partition_names[i]) == 0)
      {
        *out = (TrainPartition) i;
        return TRUE;
      }
  return FALSE;
}

/* The name of a partition; see policy.h. */
const char *
train_partition_name (TrainPartition p)
{
  g_return_val_if_fail ((gsize) p < G_N_ELEMENTS (partition_names), NULL);
  return partition_names[p];
}

/* Makes s worker w's sampler over the `len` sample indices idx (copied), to
 * be shuffled before its first batch. */
static void
sampler_init (TrainSampler *s, int w, guint64 seed, const int *idx, int len)
{
  eng_rng_init (&s->rng, seed, TRAIN_SAMPLER_WORKER_STREAM + (guint64) w);
  s->len = len;
  s->idx = g_memdup2 (idx, sizeof (int) * (gsize) len);
  s->cursor = len; /* shuffle before the first batch */
}

/* The `iid` partition: a permutation of [0, n) from stream
 * TRAIN_SAMPLER_STREAM, worker w taking positions [n w / W, n (w + 1) / W)
 * (integer division).  n >= 0, workers >= 1.  Free with
 * train_samplers_free(). */
TrainSampler *
train_samplers_new (int n, int workers, guint64 seed)
{
  g_return_val_if_fail (n >= 0 && workers >= 1, NULL);

  g_autofree int *perm = g_new (int, MAX (n, 1));
  for (int i = 0; i < n; i++)
    perm[i] = i;
  EngRng rng;
  eng_rng_init (&rng, seed, TRAIN_SAMPLER_STREAM);
  eng_rng_shuffle (&rng, perm, n);
  TrainSampler *s = g_new0 (TrainSampler, workers);
  for (int w = 0; w < workers; w++)
    {
      int lo = (int) ((gint64) n * w / workers), hi = (int) ((gint64) n * (w + 1) / workers);
      sampler_init (&s[w], w, seed, perm + lo, hi - lo);
    }
  return s;
}

/* The `by-label` partition.  With W workers, c = classes_per_worker and
 * S = W c shards, all draws from one stream (TRAIN_SAMPLER_BY_LABEL_STREAM):
 *
 * 1. The indices 0..n-1 are shuffled, then sorted by label with a stable
 *    sort, so each class is a contiguous run in a seeded random order.
 * 2. Shards per class: every class present starts with one; each of the
 *    remaining S - (classes present) shards goes, one at a time, to the
 *    class whose shards are currently largest on average (largest
 *    count / shards; ties to the smaller label).
 * 3. A class of count m with s shards is cut into s contiguous pieces,
 *    piece i being [m i / s, m (i + 1) / s) of its run.  Shards are
 *    numbered class by class, piece by piece.
 * 4. The shard numbers 0..S-1 are shuffled; worker w gets the shards at
 *    positions w c .. w c + c - 1 of that order, concatenated.
 *
 * Every shard holds one label and at least one sample, so each worker's part
 * is non-empty and holds at most c distinct labels (fewer when it drew two
 * shards of one class).  When every class has the same count m and S is a
 * multiple of k, every shard holds exactly m k / S samples ± 1, as in
 * McMahan et al.  labels (n) must lie in [0, k); needs (classes present) <=
 * S <= n.  Free with train_samplers_free(). */
TrainSampler *
train_samplers_new_by_label (const int *labels, int n, int k, int workers,
                           int classes_per_worker, guint64 seed)
{
  g_return_val_if_fail (labels != NULL && n >= 1 && k >= 1, NULL);
  g_return_val_if_fail (workers >= 1 && classes_per_worker >= 1, NULL);
  g_return_val_if_fail ((gint64) workers * classes_per_worker <= n, NULL);
  int S = workers * classes_per_worker;

  g_autofree int *count = g_new0 (int, k);
  for (int i = 0; i < n; i++)
    {
      g_return_val_if_fail (labels[i] >= 0 && labels[i] < k, NULL);
      count[labels[i]]++;
    }
  g_autofree int *shards = g_new0 (int, k);   /* (k) shards per class */
  int present = 0;
  for (int c = 0; c < k; c++)
    if (count[c] > 0)
      shards[c] = 1, present++;
  g_return_val_if_fail (present <= S, NULL);

  /* 1. shuffle, then counting sort by label (stable) */
  EngRng rng;
  eng_rng_init (&rng, seed, TRAIN_SAMPLER_BY_LABEL_STREAM);
  g_autofree int *perm = g_new (int, n);
  for (int i = 0; i < n; i++)
    perm[i] = i;
  eng_rng_shuffle (&rng, perm, n);
  g_autofree int *start = g_new (int, k + 1);  /* (k + 1) run bounds */
  start[0] = 0;
  for (int c = 0; c < k; c++)
    start[c + 1] = start[c] + count[c];
  g_autofree int *fill = g_memdup2 (start, sizeof (int) * (gsize) k);
  g_autofree int *sorted = g_new (int, n);
  for (int i = 0; i < n; i++)
    sorted[fill[labels[perm[i]]]++] = perm[i];

  /* 2. shards per class, by largest average shard */
  for (int given = present; given < S; given++)
    {
      int best = -1;
      for (int c = 0; c < k; c++)
        if (count[c] > 0
            && (best < 0 || (gint64) count[c] * shards[best] > (gint64) count[best] * shards[c]))
          best = c;
      shards[best]++;
    }

  /* 3. shard j is sorted[cut[j], cut[j + 1]) */
  g_autofree int *cut = g_new (int, S + 1);
  int j = 0;
  for (int c = 0; c < k; c++)
    for (int i = 0; i < shards[c]; i++)
      cut[j++] = start[c] + (int) ((gint64) count[c] * i / shards[c]);
  g_assert (j == S);
  cut[S] = n;

  /* 4. deal */
  g_autofree int *order = g_new (int, S);
  for (int i = 0; i < S; i++)
    order[i] = i;
  eng_rng_shuffle (&rng, order, S);
  TrainSampler *s = g_new0 (TrainSampler, workers);
  g_autofree int *part = g_new (int, n);
  for (int w = 0; w < workers; w++)
    {
      int len = 0;
      for (int i = 0; i < classes_per_worker; i++)
        {
          int sh = order[w * classes_per_worker + i];
          g_assert (cut[sh + 1] > cut[sh]);
          memcpy (part + len, sorted + cut[sh], sizeof (int) * (gsize) (cut[sh + 1] - cut[sh]));
          len += cut[sh + 1] - cut[sh];
        }
      sampler_init (&s[w], w, seed, part, len);
    }
  return s;
}

void
train_samplers_free (TrainSampler *s, int workers)
{
  if (!s)
    return;
  for (int w = 0; w < workers; w++)
    g_free (s[w].idx);
  g_free (s);
}

void
train_sampler_next (TrainSampler *s, int batch, int *idx)
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
