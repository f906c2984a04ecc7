/*
 * ps-sparse.c — the key sets of sparse pulls and pushes (ps-sparse.h).
 *
 * A batch's keys come from the model (kern_model_touched on the batch's
 * rows, gathered here from the training set): ascending and distinct, so
 * the keys of shard [lo, hi) are one run of them, found by binary search.
 */
#include "config.h"

#include "policies/ps-sparse.h"

struct PolSparse {
  KernModel *model;
  const KernDataset *train;
  int batch;
  int servers;
  gsize *lo, *hi;        /* (servers) the shards */
  float *x;              /* (batch, d) the batch's rows */
  int *y;                /* (batch) */
  gsize *keys;           /* (batch x d + 1) the touched keys */
};

PolSparse *
pol_sparse_new (KernModel *model, const KernDataset *train, int batch, int servers,
                const gsize *lo, const gsize *hi)
{
  g_return_val_if_fail (model && model->ops->touched && train && batch >= 1, NULL);
  g_return_val_if_fail (servers >= 1 && lo && hi, NULL);
  PolSparse *sp = g_new0 (PolSparse, 1);
  sp->model = model;
  sp->train = train;
  sp->batch = batch;
  sp->servers = servers;
  sp->lo = g_memdup2 (lo, (gsize) servers * sizeof *lo);
  sp->hi = g_memdup2 (hi, (gsize) servers * sizeof *hi);
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
  g_free (sp->lo);
  g_free (sp->hi);
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
  for (int s = 0; s < sp->servers; s++)
    counts[s] = (gint64) (lower_bound (sp->keys, n, sp->hi[s])
                          - lower_bound (sp->keys, n, sp->lo[s]));
  return (gint64) n;
}

double
pol_sparse_bytes (gint64 keys)
{
  return POL_SPARSE_KEY_BYTES * (double) keys;
}
