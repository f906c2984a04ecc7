/*
 * sparse.c — sparse binary logistic regression and its data generator:
 * [model] kind = sparse.
 *
 * The workload of the parameter server's paper (Li et al., OSDI 2014): a
 * linear model over a very large feature space of which each sample uses a
 * few features, so a worker's batch reads a small fraction of the weights.
 * With F features (`dimension`), parameters w (F) then the bias b at index
 * F; a sample is nnz (index, value) pairs (one row of d = 2 nnz floats,
 * padding pairs with a negative index); for a batch of n rows:
 *
 *   z_i = b + sum_j v_ij w[f_ij]                 (padding pairs skipped)
 *   loss = (1/n) sum_i (max(z_i, 0) + log1p(exp(-|z_i|)) - y_i z_i)
 *   g_i = (sigmoid(z_i) - y_i) / n
 *   dw[f_ij] += g_i v_ij,  db += g_i         (every other entry 0)
 *
 * all in plain loops in a fixed order (rows, then pairs), sums of a row in
 * double, so the numbers are the same on every CPU; no BLAS.  The gradient
 * is non-zero only on the batch's features and the bias: `touched` lists
 * them, which is what a sparse pull fetches (policies/ps-sparse.c).
 *
 * The data (kern_dataset_sparse) follows docs/kernels.md, "Sparse data".
 */
#include "kernels/kernels.h"
#include "kernels/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  gint64 features;   /* F */
  int nnz;           /* pairs per row */
} SparsePriv;

static gsize
sparse_n_params (const KernModel *m)
{
  const SparsePriv *p = m->priv;
  return (gsize) p->features + 1;
}

/* Zeros: the loss is convex, and a weight that no batch reads stays 0. */
static void
sparse_init (const KernModel *m, float *params, guint64 seed G_GNUC_UNUSED)
{
  memset (params, 0, sparse_n_params (m) * sizeof (float));
}

/* z of one row (n pairs at x), in double. */
static double
row_logit (const SparsePriv *p, const float *params, const float *x)
{
  double z = params[p->features];
  for (int j = 0; j < p->nnz; j++)
    {
      float f = x[2 * j];
      if (f >= 0.0f && f < (float) p->features)
        z += (double) x[2 * j + 1] * (double) params[(gsize) f];
    }
  return z;
}

/* log(1 + exp(z)) - y z without overflow. */
static double
row_loss (double z, int y)
{
  return MAX (z, 0.0) + base_log1p (base_exp (-fabs (z))) - (y ? z : 0.0);
}

static double
sigmoid (double z)
{
  if (z >= 0)
    return 1.0 / (1.0 + base_exp (-z));
  double e = base_exp (z);
  return e / (1.0 + e);
}

static double
sparse_loss_grad (KernModel *m, const float *params, const float *x, const int *y, int n,
                  float *grad)
{
  const SparsePriv *p = m->priv;
  gsize d = (gsize) m->d;
  if (grad)
    memset (grad, 0, sparse_n_params (m) * sizeof (float));
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    {
      const float *row = x + (gsize) i * d;
      double z = row_logit (p, params, row);
      sum += row_loss (z, y[i]);
      if (!grad)
        continue;
      float g = (float) ((sigmoid (z) - (y[i] ? 1.0 : 0.0)) / n);
      for (int j = 0; j < p->nnz; j++)
        {
          float f = row[2 * j];
          if (f >= 0.0f && f < (float) p->features)
            grad[(gsize) f] += g * row[2 * j + 1];
        }
      grad[p->features] += g;
    }
  return n > 0 ? sum / n : 0.0;
}

/* Group by group: the model has no product to share among them. */
static void
sparse_loss_grad_groups (KernModel *m, const float *params, const float *x, const int *y,
                         int n, int groups, float *const *grads, double *losses)
{
  for (int g = 0; g < groups; g++)
    {
      double l = sparse_loss_grad (m, params, x + (gsize) g * n * m->d, y + (gsize) g * n, n,
                                   grads ? grads[g] : NULL);
      if (losses)
        losses[g] = l;
    }
}

static void
sparse_evaluate (KernModel *m, const float *params, const KernDataset *ds, double *loss,
                 double *accuracy)
{
  const SparsePriv *p = m->priv;
  double sum = 0.0;
  int right = 0;
  for (int i = 0; i < ds->n; i++)
    {
      double z = row_logit (p, params, ds->x + (gsize) i * (gsize) ds->d);
      sum += row_loss (z, ds->y[i]);
      right += (z >= 0.0) == (ds->y[i] != 0);
    }
  *loss = ds->n > 0 ? sum / ds->n : 0.0;
  *accuracy = ds->n > 0 ? (double) right / ds->n : 0.0;
}

static int
cmp_key (const void *a, const void *b)
{
  gsize s = *(const gsize *) a, t = *(const gsize *) b;
  return s < t ? -1 : s > t;
}

/* Every in-range feature index of the rows, and the bias, sorted and made
 * distinct. */
static gsize
sparse_touched (const KernModel *m, const float *x, int n, gsize *keys)
{
  const SparsePriv *p = m->priv;
  gsize c = 0;
  for (gsize i = 0; i < (gsize) n * (gsize) p->nnz; i++)
    {
      float f = x[2 * i];
      if (f >= 0.0f && f < (float) p->features)
        keys[c++] = (gsize) f;
    }
  keys[c++] = (gsize) p->features;
  qsort (keys, c, sizeof *keys, cmp_key);
  gsize u = 0;
  for (gsize i = 0; i < c; i++)
    if (u == 0 || keys[u - 1] != keys[i])
      keys[u++] = keys[i];
  return u;
}

static double
sparse_flops_forward (const KernModel *m, int n)
{
  return (m->layers[0].fwd_flops + m->layers[1].fwd_flops) * n;
}

static double
sparse_flops_backward (const KernModel *m, int n)
{
  return (m->layers[0].bwd_flops + m->layers[1].bwd_flops) * n;
}

static KernModel *
sparse_clone (const KernModel *m)
{
  const SparsePriv *p = m->priv;
  return kern_sparse_new (p->features, p->nnz);
}

static void
sparse_free (KernModel *m)
{
  g_free (m->priv);
  g_free (m->layers);
  g_free (m);
}

static const KernModelOps sparse_ops = {
  .name = "sparse",
  .n_params = sparse_n_params,
  .init = sparse_init,
  .loss_grad = sparse_loss_grad,
  .loss_grad_groups = sparse_loss_grad_groups,
  .evaluate = sparse_evaluate,
  .flops_forward = sparse_flops_forward,
  .flops_backward = sparse_flops_backward,
  .clone = sparse_clone,
  .free = sparse_free,
  .touched = sparse_touched,
};

/* Two layers (docs/kernels.md, "Sparse logistic regression"): the lookup
 * of the row's weights, and the logistic loss. */
KernModel *
kern_sparse_new (gint64 features, int nnz)
{
  g_return_val_if_fail (features >= 1 && features <= KERN_SPARSE_MAX_FEATURES, NULL);
  g_return_val_if_fail (nnz >= 1 && nnz <= KERN_SPARSE_MAX_NNZ && nnz <= features, NULL);
  SparsePriv *p = g_new0 (SparsePriv, 1);
  p->features = features;
  p->nnz = nnz;
  KernModel *m = g_new0 (KernModel, 1);
  m->ops = &sparse_ops;
  m->d = 2 * nnz;
  m->k = 2;
  m->priv = p;
  m->n_layers = 2;
  m->layers = g_new0 (KernLayer, 2);
  double q = nnz;
  KernLayer *lk = &m->layers[0];
  g_strlcpy (lk->name, "lookup", sizeof lk->name);
  lk->kind = KERN_LAYER_EMBEDDING;
  lk->param_offset = 0;
  lk->params = (gsize) features + 1;
  /* z: a multiply-add per pair and the bias */
  lk->fwd_flops = 2 * q + 1;
  /* dw: a multiply-add per pair, db: an add */
  lk->bwd_flops = 2 * q + 1;
  /* reads the pairs (8 bytes) and their weights, the bias, writes z */
  lk->fwd_bytes_fixed = 4;
  lk->fwd_bytes = 12 * q + 4;
  /* zeroes the gradient once per batch; reads the pairs and g, reads and
   * writes the weights' gradients */
  lk->bwd_bytes_fixed = 4 * ((double) features + 1);
  lk->bwd_bytes = 16 * q + 4;
  lk->activations = 1;
  lk->outputs = 1;
  KernLayer *ll = &m->layers[1];
  g_strlcpy (ll->name, "logistic", sizeof ll->name);
  ll->kind = KERN_LAYER_ELEMENTWISE;
  ll->param_offset = (gsize) features + 1;
  /* |z|, exp, log1p, max, y z, two subtractions/adds, the mean's add */
  ll->fwd_flops = 8;
  /* sigmoid (exp, add, divide), subtract y, divide by n */
  ll->bwd_flops = 5;
  ll->fwd_bytes = 4 + 4;
  ll->bwd_bytes = 4 + 4 + 4;
  ll->activations = 0;
  ll->outputs = 0;
  return m;
}

gsize
kern_model_touched (const KernModel *m, const float *x, int n, gsize *keys)
{
  g_return_val_if_fail (m != NULL && n >= 0 && (n == 0 || x != NULL) && keys != NULL, 0);
  if (!m->ops->touched)
    return 0;
  return m->ops->touched (m, x, n, keys);
}

/* --- The data --------------------------------------------------------------- */

/* Zipf's law P(k) ~ k^-a over k = 1..N by rejection-inversion (W. Hörmann
 * and G. Derflinger, Rejection-inversion to generate variates from
 * monotone discrete distributions, ACM TOMACS 1996): the continuous hat
 * h(x) = x^-a, its integral H and inverse, in a form stable near a = 1. */
typedef struct {
  double a;
  gint64 N;
  double h_x1, h_n, s;  /* H(1.5) - 1, H(N + 0.5), the squeeze */
} Zipf;

/* (e^t - 1) / t and log(1 + t) / t, their limit 1 near t = 0. */
static double
expm1_over (double t)
{
  return fabs (t) > 1e-8 ? (base_exp (t) - 1.0) / t : 1.0 + t / 2.0;
}

static double
log1p_over (double t)
{
  return fabs (t) > 1e-8 ? base_log1p (t) / t : 1.0 - t / 2.0;
}

static double
zipf_h (const Zipf *z, double x)
{
  return base_exp (-z->a * base_log (x));
}

static double
zipf_H (const Zipf *z, double x)
{
  double lx = base_log (x);
  return expm1_over ((1.0 - z->a) * lx) * lx;
}

static double
zipf_H_inv (const Zipf *z, double y)
{
  double t = MAX (y * (1.0 - z->a), -1.0);
  return base_exp (log1p_over (t) * y);
}

static void
zipf_init (Zipf *z, double a, gint64 N)
{
  z->a = a;
  z->N = N;
  z->h_x1 = zipf_H (z, 1.5) - 1.0;
  z->h_n = zipf_H (z, (double) N + 0.5);
  z->s = 2.0 - zipf_H_inv (z, zipf_H (z, 2.5) - zipf_h (z, 2.0));
}

/* A rank in [1, N]. */
static gint64
zipf_draw (const Zipf *z, KernRng *rng)
{
  for (;;)
    {
      double u01 = (double) (kern_rng_next (rng) >> 11) * 0x1.0p-53;
      double u = z->h_n + u01 * (z->h_x1 - z->h_n);
      double x = zipf_H_inv (z, u);
      gint64 k = (gint64) (x + 0.5);
      k = CLAMP (k, 1, z->N);
      if ((double) k - x <= z->s || u >= zipf_H (z, (double) k + 0.5) - zipf_h (z, (double) k))
        return k;
    }
}

/* The permutation of ranks onto indices: index = (rank - 1) x mult mod F,
 * mult the first integer from 0.618 F up that is prime to F. */
static guint64
spread_mult (gint64 F)
{
  guint64 m = MAX ((guint64) (0.6180339887 * (double) F), 1);
  for (;; m++)
    {
      guint64 a = m, b = (guint64) F;
      while (b)
        {
          guint64 t = a % b;
          a = b;
          b = t;
        }
      if (a == 1)
        return m;
    }
}

/* The hidden weight of feature f: a quarter of the features carry one,
 * uniform in [-8, 8), the rest 0; a hash of (seed, f), so that no table of
 * F weights is held. */
static double
hidden_weight (guint64 seed, gint64 f)
{
  guint64 x = seed ^ ((guint64) f * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));
  guint64 u = base_rng_splitmix64 (&x);
  if ((u & 3) != 0)
    return 0.0;
  return 16.0 * ((double) (u >> 11) * 0x1.0p-53) - 8.0;
}

static int
cmp_float_index (const void *a, const void *b)
{
  float s = *(const float *) a, t = *(const float *) b;
  return s < t ? -1 : s > t;
}

static void
sparse_fill (KernDataset *ds, const Zipf *z, guint64 mult, int nnz, guint64 seed,
             KernRng *rng)
{
  gint64 F = z->N;
  float *idx = g_new (float, nnz);
  float v = (float) (1.0 / sqrt ((double) nnz));
  for (int i = 0; i < ds->n; i++)
    {
      for (int j = 0; j < nnz; j++)
        idx[j] = (float) (((guint64) (zipf_draw (z, rng) - 1) * mult) % (guint64) F);
      qsort (idx, nnz, sizeof *idx, cmp_float_index);
      float *row = ds->x + (gsize) i * (gsize) ds->d;
      int c = 0;
      double zs = 0.0;
      for (int j = 0; j < nnz; j++)
        {
          if (c > 0 && row[2 * (c - 1)] == idx[j])
            row[2 * (c - 1) + 1] += v;
          else
            {
              row[2 * c] = idx[j];
              row[2 * c + 1] = v;
              c++;
            }
          zs += (double) v * hidden_weight (seed, (gint64) idx[j]);
        }
      for (int j = c; j < nnz; j++)
        {
          row[2 * j] = -1.0f;
          row[2 * j + 1] = 0.0f;
        }
      double u = (double) (kern_rng_next (rng) >> 11) * 0x1.0p-53;
      ds->y[i] = u < sigmoid (zs);
    }
  g_free (idx);
}

void
kern_dataset_sparse (int n_train, int n_test, gint64 features, int nnz, double skew,
                     guint64 seed, KernDataset **train, KernDataset **test)
{
  g_return_if_fail (n_train >= 0 && n_test >= 0 && skew > 0.0);
  g_return_if_fail (features >= 1 && features <= KERN_SPARSE_MAX_FEATURES);
  g_return_if_fail (nnz >= 1 && nnz <= KERN_SPARSE_MAX_NNZ);
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_SPARSE);
  Zipf z;
  zipf_init (&z, skew, features);
  guint64 mult = spread_mult (features);
  guint64 wseed = kern_rng_next (&rng);
  KernDataset *tr = kern_dataset_new (n_train, 2 * nnz, 2);
  KernDataset *te = kern_dataset_new (n_test, 2 * nnz, 2);
  sparse_fill (tr, &z, mult, nnz, wseed, &rng);
  sparse_fill (te, &z, mult, nnz, wseed, &rng);
  if (train)
    *train = tr;
  else
    kern_dataset_free (tr);
  if (test)
    *test = te;
  else
    kern_dataset_free (te);
}

/* --- The registry entry ----------------------------------------------------- */

static const BaseKey sparse_keys[] = {
  { "model", "dimension", BASE_KEY_INT, 0, "1000000", 1, KERN_SPARSE_MAX_FEATURES, 0, NULL, 0,
    "kind = sparse: features of the sparse feature space F (the model has F + 1 parameters; at most 2^24).", NULL },
  { "model", "nnz", BASE_KEY_INT, 0, "32", 1, KERN_SPARSE_MAX_NNZ, 0, NULL, 0,
    "kind = sparse: feature draws per sample (duplicates merged, so at most nnz non-zero features; at most dimension).", NULL },
  { "model", "skew", BASE_KEY_QUANTITY, BASE_UNIT_NONE, "1.1", 0, 16, BASE_OPEN_MIN, NULL, 0,
    "kind = sparse: exponent a of the Zipf law P(rank k) ~ k^-a that features are drawn from (0 < a <= 16; docs/kernels.md).", NULL },
  { .section = NULL },
};

static gboolean
sparse_validate (const BaseValues *v, GError **error)
{
  gint64 F = base_values_int (v, "model.dimension");
  gint64 q = base_values_int (v, "model.nnz");
  if (q <= F)
    return TRUE;
  g_set_error (error, g_quark_from_static_string ("kern-sparse"), 0,
               "[model] nnz: %" G_GINT64_FORMAT " draws per sample exceed the %" G_GINT64_FORMAT
               " features of dimension; set nnz <= dimension", q, F);
  return FALSE;
}

static KernModel *
sparse_kind_new (const KernModelArgs *a, struct KernBackend *be G_GNUC_UNUSED,
                 GError **error G_GNUC_UNUSED)
{
  return kern_sparse_new (base_values_int (a->values, "model.dimension"),
                          (int) base_values_int (a->values, "model.nnz"));
}

static int
sparse_width (const BaseValues *v)
{
  return 2 * (int) base_values_int (v, "model.nnz");
}

static void
sparse_draw (const BaseValues *v, int n_train, int n_test, guint64 seed, KernDataset **train,
             KernDataset **test)
{
  kern_dataset_sparse (n_train, n_test, base_values_int (v, "model.dimension"),
                       (int) base_values_int (v, "model.nnz"),
                       base_values_double (v, "model.skew"), seed, train, test);
}

const KernModelKind kern_model_sparse = {
  .name = "sparse",
  .description = "sparse binary logistic regression over Zipf-distributed features (Li et al., OSDI 2014)",
  .math = TRUE,
  .keys = sparse_keys,
  .validate = sparse_validate,
  .new = sparse_kind_new,
  .synthetic_width = sparse_width,
  .synthetic_draw = sparse_draw,
};
