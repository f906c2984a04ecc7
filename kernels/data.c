/*
 * data.c — in-memory labelled data sets and the synthetic blobs generator.
 *
 * A KernDataset holds n samples as a dense (n, d) row-major float32 matrix
 * plus n integer labels.  kern_dataset_blobs() draws a classification problem
 * whose difficulty is set by one number, the separation of the class centres
 * relative to the unit noise, entirely from an explicit 64-bit seed: the same
 * arguments always give bit-identical data sets.
 *
 * Draw order (part of the contract, since it fixes the data for a seed):
 * first the k centres, class by class, d coordinates each; then, sample by
 * sample (all train samples, then all test samples), the label and then the
 * d noise values.
 */
#include "kernels/kernels.h"
#include "kernels/rng.h"

#include <string.h>

/* Allocates a data set of n samples with d features and k classes; x and y
 * are zero-filled.  n >= 0, d >= 1, k >= 1.  Free with kern_dataset_free(). */
KernDataset *
kern_dataset_new (int n, int d, int k)
{
  g_return_val_if_fail (n >= 0 && d >= 1 && k >= 1, NULL);

  KernDataset *ds = g_new0 (KernDataset, 1);
  ds->n = n;
  ds->d = d;
  ds->k = k;
  ds->x = g_new0 (float, (gsize) n * (gsize) d);
  ds->y = g_new0 (int, (gsize) n);
  return ds;
}

/* Frees a data set; NULL is allowed. */
void
kern_dataset_free (KernDataset *ds)
{
  if (ds == NULL)
    return;
  g_free (ds->x);
  g_free (ds->y);
  g_free (ds);
}

/* Copies rows idx[0..m) of ds into x (m, d) row-major and y (m).  Every index
 * must lie in [0, ds->n); indices may repeat.  x and y must not overlap ds. */
void
kern_dataset_gather (const KernDataset *ds, const int *idx, int m,
                     float *x, int *y)
{
  g_return_if_fail (ds != NULL && m >= 0);
  g_return_if_fail (m == 0 || (idx != NULL && x != NULL && y != NULL));

  gsize row_bytes = (gsize) ds->d * sizeof (float);
  for (int i = 0; i < m; i++)
    {
      int r = idx[i];
      g_return_if_fail (r >= 0 && r < ds->n);
      memcpy (x + (gsize) i * (gsize) ds->d,
              ds->x + (gsize) r * (gsize) ds->d, row_bytes);
      y[i] = ds->y[r];
    }
}

/* Fills ds with samples drawn around `centres` (k, d) row-major. */
static void
blobs_fill (KernDataset *ds, const double *centres, KernRng *rng)
{
  int d = ds->d;
  for (int i = 0; i < ds->n; i++)
    {
      int c = (int) kern_rng_below (rng, (guint64) ds->k);
      const double *mu = centres + (gsize) c * (gsize) d;
      float *row = ds->x + (gsize) i * (gsize) d;
      ds->y[i] = c;
      for (int j = 0; j < d; j++)
        row[j] = (float) (mu[j] + kern_rng_normal (rng));
    }
}

/* Draws the Gaussian blobs described in kernels.h.  n_train, n_test >= 0,
 * d >= 1, k >= 1, separation >= 0 (standard deviation of each centre
 * coordinate, in units of the per-feature noise).  *train and *test receive
 * new data sets owned by the caller; either pointer may be NULL, in which
 * case that part is still drawn (so the other part does not change) and then
 * discarded. */
void
kern_dataset_blobs (int n_train, int n_test, int d, int k,
                    double separation, guint64 seed,
                    KernDataset **train, KernDataset **test)
{
  g_return_if_fail (n_train >= 0 && n_test >= 0 && d >= 1 && k >= 1);
  g_return_if_fail (separation >= 0.0);

  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_BLOBS);

  g_autofree double *centres = g_new (double, (gsize) k * (gsize) d); /* (k, d) */
  for (gsize i = 0; i < (gsize) k * (gsize) d; i++)
    centres[i] = separation * kern_rng_normal (&rng);

  KernDataset *tr = kern_dataset_new (n_train, d, k);
  KernDataset *te = kern_dataset_new (n_test, d, k);
  blobs_fill (tr, centres, &rng);
  blobs_fill (te, centres, &rng);

  if (train != NULL)
    *train = tr;
  else
    kern_dataset_free (tr);
  if (test != NULL)
    *test = te;
  else
    kern_dataset_free (te);
}
