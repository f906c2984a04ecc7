/*
 * softmax.c — softmax (multinomial logistic) regression, the "softmax" model.
 *
 * Parameters are one flat float32 vector: W (d, k) row-major, then b (k).
 * For a batch x (n, d) with labels y (n):
 *
 *   Z = x W + b                         logits, (n, k)
 *   m_i = max_j Z_ij,  E_ij = exp(Z_ij - m_i),  s_i = sum_j E_ij
 *   loss = (1/n) sum_i [ log s_i - (Z_{i,y_i} - m_i) ]
 *
 * which is the mean of -log softmax(Z_i)[y_i] computed without overflow and
 * without log(0): s_i >= 1 because its largest term is exp(0).  The gradient
 * of the mean loss is dZ = (P - onehot(y)) / n with P_ij = E_ij / s_i, then
 * dW = x^T dZ (d, k) and db = column sums of dZ (k).
 *
 * The two matrix products go through cblas_sgemm.  The bias is added by
 * writing b into every row of Z and letting the GEMM accumulate onto it
 * (beta = 1).  Scratch buffers live in the model and grow to the largest
 * batch seen, so a warm model allocates nothing per call; a model (and its
 * scratch) must therefore be used by one thread at a time.
 *
 * FLOP counting rule (see docs/kernels.md): every floating-point add,
 * subtract, multiply, divide, exp and log counts 1; comparisons, copies and
 * conversions count 0; a sum of r terms counts r - 1 adds; a GEMM producing
 * an (r, c) output with inner dimension p counts 2 p r c (p products and p
 * accumulations per output element, onto the bias in the forward pass and
 * onto zero in the backward pass).  The flops_* functions return exactly
 * the operations performed below, per line as annotated.
 */
#include "kernels/kernels.h"
#include "kernels/rng.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* Rows evaluated per chunk by softmax_evaluate, bounding scratch size. */
#define SOFTMAX_EVAL_CHUNK 1024

/* Standard deviation of the initial weights. */
#define SOFTMAX_INIT_STD 0.01

typedef struct {
  int cap;      /* rows the scratch buffers can hold */
  float *e;     /* (cap, k) row-major: logits, then exp(Z - m), then dZ */
  double *s;    /* (cap) row sums of exp(Z - m) */
  int *pred;    /* (cap) argmax of each row of logits */
} SoftmaxPriv;

static void
softmax_reserve (KernModel *m, int n)
{
  SoftmaxPriv *p = m->priv;
  if (n <= p->cap)
    return;
  p->e = g_renew (float, p->e, (gsize) n * (gsize) m->k);
  p->s = g_renew (double, p->s, (gsize) n);
  p->pred = g_renew (int, p->pred, (gsize) n);
  p->cap = n;
}

static gsize
softmax_n_params (const KernModel *m)
{
  return (gsize) m->d * (gsize) m->k + (gsize) m->k;
}

/* W ~ N(0, SOFTMAX_INIT_STD^2) element-wise from the seed, b = 0. */
static void
softmax_init (const KernModel *m, float *params, guint64 seed)
{
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_SOFTMAX);
  gsize nw = (gsize) m->d * (gsize) m->k;
  for (gsize i = 0; i < nw; i++)
    params[i] = (float) (SOFTMAX_INIT_STD * kern_rng_normal (&rng));
  memset (params + nw, 0, (gsize) m->k * sizeof (float));
}

/* Forward pass over x (n, d), y (n), n >= 1.  Leaves E = exp(Z - m) in
 * p->e (n, k), the row sums in p->s (n) and the argmax of each row of Z in
 * p->pred (n).  Returns the SUM (not the mean) of the per-row losses.
 * FLOPs: 2ndk + 3nk - n + 2n + (n - 1), see the per-line notes. */
static double
softmax_forward (KernModel *m, const float *params, const float *x,
                 const int *y, int n)
{
  SoftmaxPriv *p = m->priv;
  int d = m->d, k = m->k;
  const float *W = params;                     /* (d, k) */
  const float *b = params + (gsize) d * k;     /* (k) */
  float *Z = p->e;                             /* (n, k) */

  for (int i = 0; i < n; i++)
    memcpy (Z + (gsize) i * k, b, (gsize) k * sizeof (float));
  /* Z += x W: 2ndk */
  cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, d,
               1.0f, x, d, W, k, 1.0f, Z, k);

  double total = 0.0;
  for (int i = 0; i < n; i++)
    {
      float *z = Z + (gsize) i * k;
      int yi = y[i];
      g_return_val_if_fail (yi >= 0 && yi < k, NAN);

      int arg = 0;                             /* comparisons: 0 */
      for (int j = 1; j < k; j++)
        if (z[j] > z[arg])
          arg = j;
      float zmax = z[arg];
      p->pred[i] = arg;

      for (int j = 0; j < k; j++)
        z[j] -= zmax;                          /* k */
      double zy = z[yi];
      for (int j = 0; j < k; j++)
        z[j] = expf (z[j]);                    /* k */
      double s = z[0];
      for (int j = 1; j < k; j++)
        s += z[j];                             /* k - 1 */
      p->s[i] = s;

      double li = log (s) - zy;                /* 2 */
      if (i == 0)
        total = li;
      else
        total += li;                           /* n - 1 over the batch */
    }
  return total;
}

static double
softmax_loss_grad (KernModel *m, const float *params, const float *x,
                   const int *y, int n, float *grad)
{
  g_return_val_if_fail (m != NULL && params != NULL, NAN);
  g_return_val_if_fail (n >= 1 && x != NULL && y != NULL, NAN);

  SoftmaxPriv *p = m->priv;
  int d = m->d, k = m->k;
  softmax_reserve (m, n);

  double loss = softmax_forward (m, params, x, y, n) / n;   /* 1 */
  if (grad == NULL)
    return loss;

  float *dZ = p->e;                            /* (n, k), overwrites E */
  float inv_n = 1.0f / (float) n;              /* 1 */
  for (int i = 0; i < n; i++)
    {
      float *row = dZ + (gsize) i * k;
      float r = (float) (inv_n / p->s[i]);     /* 1 per row: n */
      for (int j = 0; j < k; j++)
        row[j] *= r;                           /* P / n: nk */
      row[y[i]] -= inv_n;                      /* onehot / n: n */
    }

  float *dW = grad;                            /* (d, k) */
  float *db = grad + (gsize) d * k;            /* (k) */
  /* dW = x^T dZ: (d, n) (n, k), 2ndk */
  cblas_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, d, k, n,
               1.0f, x, d, dZ, k, 0.0f, dW, k);
  memcpy (db, dZ, (gsize) k * sizeof (float));
  for (int i = 1; i < n; i++)
    {
      const float *row = dZ + (gsize) i * k;
      for (int j = 0; j < k; j++)
        db[j] += row[j];                       /* (n - 1) k */
    }
  return loss;
}

static void
softmax_evaluate (KernModel *m, const float *params, const KernDataset *ds,
                  double *loss, double *accuracy)
{
  g_return_if_fail (m != NULL && params != NULL && ds != NULL);
  g_return_if_fail (ds->d == m->d && ds->k == m->k);

  double total = 0.0;
  gint64 correct = 0;
  SoftmaxPriv *p = m->priv;

  for (int start = 0; start < ds->n; start += SOFTMAX_EVAL_CHUNK)
    {
      int rows = MIN (SOFTMAX_EVAL_CHUNK, ds->n - start);
      const int *y = ds->y + start;
      softmax_reserve (m, rows);
      total += softmax_forward (m, params, ds->x + (gsize) start * m->d,
                                y, rows);
      for (int i = 0; i < rows; i++)
        correct += (p->pred[i] == y[i]);
    }

  /* An empty data set has no mean: report NaN rather than a fake 0. */
  if (loss != NULL)
    *loss = ds->n > 0 ? total / ds->n : NAN;
  if (accuracy != NULL)
    *accuracy = ds->n > 0 ? (double) correct / ds->n : NAN;
}

/* Forward FLOPs for a batch of n >= 1, exactly as softmax_forward plus the
 * mean in softmax_loss_grad perform them:
 *   2ndk (Z = b + xW) + nk (subtract max) + nk (exp) + n(k-1) (row sums)
 *   + 2n (log, subtract) + (n-1) (sum over rows) + 1 (divide by n)
 *   = 2ndk + 3nk + 2n. */
static double
softmax_flops_forward (const KernModel *m, int n)
{
  double N = n, d = m->d, k = m->k;
  return 2.0 * N * d * k + 3.0 * N * k + 2.0 * N;
}

/* Backward FLOPs for a batch of n >= 1 (the extra work of loss_grad when a
 * gradient is requested):
 *   1 (1/n) + n (1/(n s_i)) + nk (scale) + n (subtract one-hot)
 *   + 2ndk (dW = x^T dZ) + (n-1)k (db column sums)
 *   = 2ndk + 2nk - k + 2n + 1. */
static double
softmax_flops_backward (const KernModel *m, int n)
{
  double N = n, d = m->d, k = m->k;
  return 2.0 * N * d * k + 2.0 * N * k - k + 2.0 * N + 1.0;
}

static void
softmax_free (KernModel *m)
{
  SoftmaxPriv *p = m->priv;
  if (p != NULL)
    {
      g_free (p->e);
      g_free (p->s);
      g_free (p->pred);
      g_free (p);
    }
  g_free (m);
}

static const KernModelOps softmax_ops = {
  .name = "softmax",
  .n_params = softmax_n_params,
  .init = softmax_init,
  .loss_grad = softmax_loss_grad,
  .evaluate = softmax_evaluate,
  .flops_forward = softmax_flops_forward,
  .flops_backward = softmax_flops_backward,
  .free = softmax_free,
};

/* Creates a softmax-regression model for d >= 1 input features and k >= 1
 * classes (k = 1 is degenerate: loss 0, gradient 0).  Its scratch starts
 * empty and grows with the largest batch.  Free with kern_model_free(). */
KernModel *
kern_softmax_new (int d, int k)
{
  g_return_val_if_fail (d >= 1 && k >= 1, NULL);

  KernModel *m = g_new0 (KernModel, 1);
  m->ops = &softmax_ops;
  m->d = d;
  m->k = k;
  m->priv = g_new0 (SoftmaxPriv, 1);
  return m;
}
