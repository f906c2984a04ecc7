/*
 * ps-sparse.c — the key sets of sparse pulls and pushes (ps-sparse.h).
 *
 * A batch's keys come from the model (kern_model_touched on the batch's
 * rows, gathered here from the training set): ascending and distinct, so
 * the keys of a key range [lo, hi) are one run of them, found by binary
 * search, and counted for the server that holds the range.
 */
#include "config.h"

#include <string.h>

#include "policies/ps-sparse.h"

struct PolSparse {
  KernModel *model;
  const KernDataset *train;
  int batch;
  int servers;
  int n_ranges;
  PolRange *ranges;      /* (n_ranges) the key ranges */
  int *owner;            /* (n_ranges) the server of each */
  float *x;              /* (batch, d) the batch's rows */
  int *y;                /* (batch) */
  gsize *keys;           /* (batch x d + 1) the touched keys */
};

PolSparse *
pol_sparse_new (KernModel *model, const KernDataset *train, int batch,
                const PolPartition *part)
{
  g_return_val_if_fail (model && model->ops->touched && train && batch >= 1, NULL);
  g_return_val_if_fail (part && part->servers >= 1, NULL);
  PolSparse *sp = g_new0 (PolSparse, 1);
  sp->model = model;
  sp->train = train;
  sp->batch = batch;
  sp->servers = part->servers;
  sp->n_ranges = part->n_ranges;
  sp->ranges = g_memdup2 (part->ranges, (gsize) MAX (part->n_ranges, 1) * sizeof *sp->ranges);
  sp->owner = g_memdup2 (part->owner, (gsize) MAX (part->n_ranges, 1) * sizeof *sp->owner);
  sp->x = g_new (float, (gsize) batch * (gsize) train->d);
  sp->y = g_new (int, batch);
  sp->keys = g_new (gsize, (gsize) batch * (gsize) train->d + 1);
  return sp;
}

void
pol_sparse_free (PolSparse *sp)
{
  if (!sp)
    return;
  g_free (sp->ranges);
  g_free (sp->owner);
  g_free (sp->x);
  g_free (sp->y);
  g_free (sp->keys);
  g_free (sp);
}

/* The first of keys[0..n) that is >= v (n if none). */
static gsize
lower_bound (const gsize *keys, gsize n, gsize v)
{
  gsize a = 0, b = n;
  while (a < b)
    {
      gsize mid = a + (b - a) / 2;
      if (keys[mid] < v)
        a = mid + 1;
      else
        b = mid;
    }
  return a;
}

gint64
pol_sparse_count (PolSparse *sp, const int *idx, gint64 *counts)
{
  g_return_val_if_fail (sp && idx && counts, 0);
  kern_dataset_gather (sp->train, idx, sp->batch, sp->x, sp->y);
  gsize n = kern_model_touched (sp->model, sp->x, sp->batch, sp->keys);
  memset (counts, 0, (gsize) sp->servers * sizeof *counts);
  for (int r = 0; r < sp->n_ranges; r++)
    counts[sp->owner[r]] += (gint64) (lower_bound (sp->keys, n, sp->ranges[r].hi)
                                      - lower_bound (sp->keys, n, sp->ranges[r].lo));
  return (gint64) n;
}

double
pol_sparse_bytes (gint64 keys)
{
  return POL_SPARSE_KEY_BYTES * (double) keys;
}
