/*
 * test-kernels.c — value tests of the training-math kernels.
 *
 * Checks the blobs generator (determinism, label range, noise and centre
 * scales) and gather; every CPU backend operation against a naive
 * double-precision loop; the dense models (softmax, linear, MLP) against a
 * double reference and their gradients against central finite
 * differences; stacked groups against separate calls; the staging path of
 * non-host backends; initialisation; layer tables, exact FLOP and byte
 * formulas and memory bytes; training progress; and the optimizers
 * against closed forms; and that OpenBLAS is opened only by the backend
 * that uses it.  Every random input comes from an explicit seed,
 * so each run checks the same numbers.
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "kernels/blas.h"
#include "kernels/cuda.h"
#include "kernels/rng.h"
#include "base/fmath.h"

#include <gio/gio.h>
#include <gmodule.h>

#include <float.h>
#include <math.h>
#include <string.h>

/* Deterministic, non-trivial parameters for a (d, k) softmax model, so that
 * checks do not depend on the near-zero initial weights. */
static void
fill_params (float *params, gsize n)
{
  for (gsize i = 0; i < n; i++)
    params[i] = 0.5f * (float) sin (0.7 * (double) i + 0.3);
}

/* Plain reference: mean cross-entropy of softmax(x W + b), all in double.
 * x (n, d), W (d, k) row-major then b (k) in params. */
static double
ref_softmax_loss (const float *params, const float *x, const int *y,
                  int n, int d, int k)
{
  const float *W = params, *b = params + (gsize) d * k;
  g_autofree double *z = g_new (double, k);
  double total = 0.0;
  for (int i = 0; i < n; i++)
    {
      double zmax = -INFINITY;
      for (int j = 0; j < k; j++)
        {
          z[j] = b[j];
          for (int t = 0; t < d; t++)
            z[j] += (double) x[(gsize) i * d + t] * W[(gsize) t * k + j];
          zmax = MAX (zmax, z[j]);
        }
      double s = 0.0;
      for (int j = 0; j < k; j++)
        s += exp (z[j] - zmax);
      total += log (s) - (z[y[i]] - zmax);
    }
  return total / n;
}

/* --- data sets ------------------------------------------------------------ */

static void
test_blobs_deterministic (void)
{
  KernDataset *a_tr, *a_te, *b_tr, *b_te, *c_tr, *c_te;
  kern_dataset_blobs (300, 100, 7, 4, 2.0, 42, &a_tr, &a_te);
  kern_dataset_blobs (300, 100, 7, 4, 2.0, 42, &b_tr, &b_te);
  kern_dataset_blobs (300, 100, 7, 4, 2.0, 43, &c_tr, &c_te);

  g_assert_cmpint (a_tr->n, ==, 300);
  g_assert_cmpint (a_te->n, ==, 100);
  g_assert_cmpint (a_tr->d, ==, 7);
  g_assert_cmpint (a_tr->k, ==, 4);

  /* same seed: bit-identical */
  g_assert_cmpmem (a_tr->x, 300 * 7 * sizeof (float), b_tr->x, 300 * 7 * sizeof (float));
  g_assert_cmpmem (a_tr->y, 300 * sizeof (int), b_tr->y, 300 * sizeof (int));
  g_assert_cmpmem (a_te->x, 100 * 7 * sizeof (float), b_te->x, 100 * 7 * sizeof (float));
  g_assert_cmpmem (a_te->y, 100 * sizeof (int), b_te->y, 100 * sizeof (int));

  /* different seed: features differ almost everywhere */
  int same = 0;
  for (int i = 0; i < 300 * 7; i++)
    same += (a_tr->x[i] == c_tr->x[i]);
  g_assert_cmpint (same, <, 300 * 7 / 100);

  /* train and test are different samples */
  g_assert_false (memcmp (a_tr->x, a_te->x, 100 * 7 * sizeof (float)) == 0);

  kern_dataset_free (a_tr); kern_dataset_free (a_te);
  kern_dataset_free (b_tr); kern_dataset_free (b_te);
  kern_dataset_free (c_tr); kern_dataset_free (c_te);
}

static void
test_blobs_labels (void)
{
  const int n = 20000, k = 5;
  KernDataset *tr;
  kern_dataset_blobs (n, 0, 3, k, 1.0, 7, &tr, NULL);

  int count[5] = { 0 };
  for (int i = 0; i < n; i++)
    {
      g_assert_cmpint (tr->y[i], >=, 0);
      g_assert_cmpint (tr->y[i], <, k);
      count[tr->y[i]]++;
    }
  /* uniform classes: each count is Binomial(n, 1/k), sd = sqrt(n p (1-p))
   * = 56.6; allow 5 sd around n/k */
  double sd = sqrt (n * (1.0 / k) * (1.0 - 1.0 / k));
  for (int c = 0; c < k; c++)
    g_assert_cmpfloat (fabs (count[c] - (double) n / k), <, 5.0 * sd);

  kern_dataset_free (tr);
}

/* Within-class spread is the unit noise; the spread of the class means is
 * the separation; train and test share centres. */
static void
test_blobs_scales (void)
{
  const int n = 40000, d = 10, k = 20;
  const double sep = 3.0;
  KernDataset *tr, *te;
  kern_dataset_blobs (n, n, d, k, sep, 11, &tr, &te);

  g_autofree double *mean_tr = g_new0 (double, k * d);   /* (k, d) */
  g_autofree double *mean_te = g_new0 (double, k * d);   /* (k, d) */
  g_autofree int *cnt_tr = g_new0 (int, k);
  g_autofree int *cnt_te = g_new0 (int, k);
  for (int i = 0; i < n; i++)
    {
      cnt_tr[tr->y[i]]++;
      cnt_te[te->y[i]]++;
      for (int j = 0; j < d; j++)
        {
          mean_tr[tr->y[i] * d + j] += tr->x[i * d + j];
          mean_te[te->y[i] * d + j] += te->x[i * d + j];
        }
    }
  for (int c = 0; c < k; c++)
    for (int j = 0; j < d; j++)
      {
        mean_tr[c * d + j] /= cnt_tr[c];
        mean_te[c * d + j] /= cnt_te[c];
      }

  /* pooled within-class variance: noise N(0, 1) per feature */
  double ss = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < d; j++)
      {
        double r = tr->x[i * d + j] - mean_tr[tr->y[i] * d + j];
        ss += r * r;
      }
  double within = ss / ((double) (n - k) * d);
  g_assert_cmpfloat_with_epsilon (within, 1.0, 0.02);

  /* k*d = 200 centre coordinates ~ N(0, sep^2): their mean square is
   * sep^2 * chi2(200)/200, whose sd is sep^2 * sqrt(2/200) = 10 %; allow 3 sd */
  double msq = 0.0, max_shift = 0.0;
  for (int i = 0; i < k * d; i++)
    {
      msq += mean_tr[i] * mean_tr[i];
      /* each class mean has sd 1/sqrt(n/k) = 0.022 around its centre */
      max_shift = MAX (max_shift, fabs (mean_tr[i] - mean_te[i]));
    }
  msq /= k * d;
  g_assert_cmpfloat_with_epsilon (msq / (sep * sep), 1.0, 0.3);
  g_assert_cmpfloat (max_shift, <, 0.2);

  kern_dataset_free (tr);
  kern_dataset_free (te);
}

static void
test_dataset_gather (void)
{
  const int d = 3;
  KernDataset *ds = kern_dataset_new (8, d, 4);
  for (int i = 0; i < 8; i++)
    {
      ds->y[i] = i % 4;
      for (int j = 0; j < d; j++)
        ds->x[i * d + j] = 10.0f * i + j;
    }

  const int idx[] = { 3, 0, 3, 7, 5 };
  const int m = G_N_ELEMENTS (idx);
  float x[5 * 3];
  int y[5];
  kern_dataset_gather (ds, idx, m, x, y);
  for (int i = 0; i < m; i++)
    {
      g_assert_cmpint (y[i], ==, idx[i] % 4);
      for (int j = 0; j < d; j++)
        g_assert_cmpfloat (x[i * d + j], ==, 10.0f * idx[i] + j);
    }
  kern_dataset_free (ds);
}

/* --- softmax model ------------------------------------------------------- */

static void
test_softmax_init (void)
{
  const int d = 50, k = 40;
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_assert_cmpuint (np, ==, (gsize) d * k + k);
  g_assert_cmpstr (m->ops->name, ==, "softmax");

  g_autofree float *a = g_new (float, np);
  g_autofree float *b = g_new (float, np);
  g_autofree float *c = g_new (float, np);
  m->ops->init (m, a, 5);
  m->ops->init (m, b, 5);
  m->ops->init (m, c, 6);
  g_assert_cmpmem (a, np * sizeof (float), b, np * sizeof (float));
  g_assert_false (memcmp (a, c, np * sizeof (float)) == 0);

  /* W ~ N(0, 0.01^2): 2000 draws, sample sd within 10 % of 0.01 */
  double ss = 0.0;
  for (int i = 0; i < d * k; i++)
    ss += (double) a[i] * a[i];
  g_assert_cmpfloat_with_epsilon (sqrt (ss / (d * k)), 0.01, 0.001);
  /* b = 0 */
  for (int j = 0; j < k; j++)
    g_assert_cmpfloat (a[d * k + j], ==, 0.0f);

  /* zero weights give uniform softmax: loss = log k exactly in the limit */
  KernDataset *tr;
  kern_dataset_blobs (64, 0, d, k, 1.0, 1, &tr, NULL);
  memset (a, 0, np * sizeof (float));
  double loss = m->ops->loss_grad (m, a, tr->x, tr->y, tr->n, NULL);
  g_assert_cmpfloat_with_epsilon (loss, log ((double) k), 1e-6);

  kern_dataset_free (tr);
  kern_model_free (m);
}

/* loss_grad and evaluate agree with a plain double reference; the loss does
 * not depend on whether a gradient is requested; evaluate's chunking (1024
 * rows) does not change the result. */
static void
test_softmax_reference (void)
{
  const int n = 2500, d = 9, k = 6;
  KernDataset *tr;
  kern_dataset_blobs (n, 0, d, k, 1.0, 3, &tr, NULL);
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  fill_params (params, np);

  double ref = ref_softmax_loss (params, tr->x, tr->y, n, d, k);
  double l_nograd = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
  double l_grad = m->ops->loss_grad (m, params, tr->x, tr->y, n, grad);
  /* float logits: relative agreement to ~1e-6 */
  g_assert_cmpfloat (fabs (l_nograd - ref), <=, 1e-5 * ref);
  g_assert_cmpfloat (l_grad, ==, l_nograd);

  double eloss, acc;
  m->ops->evaluate (m, params, tr, &eloss, &acc);
  g_assert_cmpfloat (fabs (eloss - ref), <=, 1e-5 * ref);

  /* accuracy: argmax of the reference logits, first index on ties */
  const float *W = params, *b = params + d * k;
  int correct = 0;
  for (int i = 0; i < n; i++)
    {
      int arg = 0;
      double best = -INFINITY;
      for (int j = 0; j < k; j++)
        {
          double z = b[j];
          for (int t = 0; t < d; t++)
            z += (double) tr->x[i * d + t] * W[t * k + j];
          if (z > best)
            best = z, arg = j;
        }
      correct += (arg == tr->y[i]);
    }
  g_assert_cmpfloat_with_epsilon (acc, (double) correct / n, 0.5 / n);

  kern_dataset_free (tr);
  kern_model_free (m);
}

/* Logits of order 1e4 overflow expf without the max shift; the loss must
 * stay finite and match the double reference, and the gradient finite. */
static void
test_softmax_large_logits (void)
{
  const int n = 4, d = 2, k = 3;
  const float x[] = { 100.0f, -50.0f, -80.0f, 20.0f, 0.0f, 0.0f, 60.0f, 60.0f };
  const int y[] = { 0, 1, 2, 2 };
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  fill_params (params, np);
  for (gsize i = 0; i < np; i++)
    params[i] *= 200.0f;

  double ref = ref_softmax_loss (params, x, y, n, d, k);
  double loss = m->ops->loss_grad (m, params, x, y, n, grad);
  g_assert_true (isfinite (loss));
  g_assert_cmpfloat (ref, >, 100.0);             /* really large logits */
  g_assert_cmpfloat (fabs (loss - ref), <=, 1e-5 * ref);
  for (gsize i = 0; i < np; i++)
    g_assert_true (isfinite (grad[i]));
  kern_model_free (m);
}

/* A dense architecture, as kern_mlp_new takes it, for the references. */
typedef struct {
  int d, k;
  int n_hidden;
  int hidden[4];
  KernLoss loss;
} Arch;

static KernModel *
arch_model (const Arch *a, KernBackend *be)
{
  return kern_mlp_new (a->d, a->hidden, a->n_hidden, a->k, a->loss, be);
}

/* Plain reference of any dense model, all in double: the mean loss over x
 * (n, d), y (n).  If `pattern` is not NULL it receives, sample by sample,
 * the on/off state (Z > 0) of every hidden unit; if `pred` is not NULL, the
 * first argmax of each sample's outputs. */
static double
ref_dense_loss (const Arch *a, const float *params, const float *x,
                const int *y, int n, guint8 *pattern, int *pred)
{
  int width[6];
  width[0] = a->d;
  for (int l = 0; l < a->n_hidden; l++)
    width[l + 1] = a->hidden[l];
  width[a->n_hidden + 1] = a->k;
  int wmax = 0;
  for (int l = 0; l <= a->n_hidden + 1; l++)
    wmax = MAX (wmax, width[l]);
  g_autofree double *in = g_new (double, wmax);
  g_autofree double *out = g_new (double, wmax);

  double total = 0.0;
  gsize bit = 0;
  for (int i = 0; i < n; i++)
    {
      for (int t = 0; t < a->d; t++)
        in[t] = x[(gsize) i * a->d + t];
      const float *W = params;
      for (int l = 0; l <= a->n_hidden; l++)
        {
          int wi = width[l], wo = width[l + 1];
          const float *b = W + (gsize) wi * wo;
          for (int j = 0; j < wo; j++)
            {
              out[j] = b[j];
              for (int t = 0; t < wi; t++)
                out[j] += in[t] * W[(gsize) t * wo + j];
              if (l < a->n_hidden)
                {
                  if (pattern != NULL)
                    pattern[bit++] = out[j] > 0.0;
                  out[j] = MAX (out[j], 0.0);
                }
            }
          W = b + wo;
          memcpy (in, out, (gsize) wo * sizeof (double));
        }
      /* in = outputs (k) */
      int arg = 0;
      for (int j = 1; j < a->k; j++)
        if (in[j] > in[arg])
          arg = j;
      if (pred != NULL)
        pred[i] = arg;
      if (a->loss == KERN_LOSS_XENT)
        {
          double s = 0.0;
          for (int j = 0; j < a->k; j++)
            s += exp (in[j] - in[arg]);
          total += log (s) - (in[y[i]] - in[arg]);
        }
      else
        {
          double ss = 0.0;
          for (int j = 0; j < a->k; j++)
            {
              double t = in[j] - (j == y[i] ? 1.0 : 0.0);
              ss += t * t;
            }
          total += 0.5 * ss;
        }
    }
  return total / n;
}

static int
arch_hidden_units (const Arch *a)
{
  int h = 0;
  for (int l = 0; l < a->n_hidden; l++)
    h += a->hidden[l];
  return h;
}

/* Analytic gradient against central differences, every parameter (weights
 * and biases), the losses computed by the model itself.
 *
 * Parameters are float, so p +/- eps is rounded; the step actually taken,
 * h = (double)(p+eps) - (double)(p-eps), is used as the denominator.  The
 * loss comes back in double but is computed from float logits, so each loss
 * carries a rounding error of about 1e-7 * loss; with eps = 1e-2 that gives
 * a difference-quotient error of about 1e-7 * 2 / 2e-2 = 1e-5, and the
 * truncation error eps^2 * |f'''| / 6 is below 1e-4 for these O(1) logits
 * (zero for MSE, whose loss is quadratic in the output layer).
 * Hence per element |g_a - g_fd| <= atol + rtol * |g_fd| with atol = 5e-4,
 * rtol = 1e-2, and globally max|g_a - g_fd| / max|g_fd| < 1e-2.  A wrong
 * gradient (a missing 1/n, a transposed dW, a forgotten one-hot or ReLU
 * mask) is off by O(|g|), far outside both bounds.
 *
 * With hidden layers the loss has kinks where a pre-activation crosses 0,
 * and a difference across a kink measures no derivative.  The double
 * reference gives the on/off pattern of every hidden unit at p - eps, p and
 * p + eps; a parameter whose interval contains a kink is skipped, and at
 * most a tenth of the parameters may be skipped, so the check keeps its
 * teeth.  Those models use eps = 1e-3, which crosses far fewer kinks (with
 * 1e-2 a fifth of the parameters of the small MLP below straddle one); the
 * rounding term grows to about 1e-7 * 2 / 2e-3 = 1e-4 of the loss, still
 * inside atol for these O(1) losses. */
static void
check_gradient (const Arch *a, int n, guint64 seed)
{
  KernDataset *tr;
  kern_dataset_blobs (n, 0, a->d, a->k, 1.5, seed, &tr, NULL);
  KernModel *m = arch_model (a, NULL);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  fill_params (params, np);

  m->ops->loss_grad (m, params, tr->x, tr->y, n, grad);

  gsize bits = (gsize) n * arch_hidden_units (a);
  g_autofree guint8 *pat0 = g_new (guint8, bits + 1);
  g_autofree guint8 *pat1 = g_new (guint8, bits + 1);
  g_autofree guint8 *pat2 = g_new (guint8, bits + 1);
  ref_dense_loss (a, params, tr->x, tr->y, n, pat0, NULL);

  const float eps = a->n_hidden > 0 ? 1e-3f : 1e-2f;
  const double atol = 5e-4, rtol = 1e-2;
  double max_err = 0.0, max_fd = 0.0;
  int bad = 0, skipped = 0;
  for (gsize i = 0; i < np; i++)
    {
      float p0 = params[i];
      float pp = p0 + eps, pm = p0 - eps;
      params[i] = pp;
      double lp = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
      ref_dense_loss (a, params, tr->x, tr->y, n, pat1, NULL);
      params[i] = pm;
      double lm = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
      ref_dense_loss (a, params, tr->x, tr->y, n, pat2, NULL);
      params[i] = p0;
      if (memcmp (pat0, pat1, bits) != 0 || memcmp (pat0, pat2, bits) != 0)
        {
          skipped++;
          continue;
        }
      double g_fd = (lp - lm) / ((double) pp - (double) pm);
      double err = fabs (grad[i] - g_fd);
      max_err = MAX (max_err, err);
      max_fd = MAX (max_fd, fabs (g_fd));
      if (err > atol + rtol * fabs (g_fd) && bad++ < 5)
        g_test_message ("param %" G_GSIZE_FORMAT ": analytic %.6g, "
                        "finite difference %.6g", i, grad[i], g_fd);
    }
  g_test_message ("%s n=%d d=%d k=%d: max|g_a - g_fd| = %.3g, max|g_fd| = %.3g, "
                  "%d of %" G_GSIZE_FORMAT " skipped at a ReLU kink",
                  m->ops->name, n, a->d, a->k, max_err, max_fd, skipped, np);
  g_assert_cmpint (bad, ==, 0);
  g_assert_cmpint (skipped, <=, (int) (np / 10));
  g_assert_cmpfloat (max_fd, >, 1e-3);          /* the check is not vacuous */
  g_assert_cmpfloat (max_err / max_fd, <, 1e-2);

  kern_dataset_free (tr);
  kern_model_free (m);
}

static void
test_softmax_gradient_check (void)
{
  const Arch a1 = { .d = 5, .k = 4, .loss = KERN_LOSS_XENT };
  const Arch a2 = { .d = 3, .k = 2, .loss = KERN_LOSS_XENT };
  const Arch a3 = { .d = 8, .k = 10, .loss = KERN_LOSS_XENT };
  check_gradient (&a1, 16, 21);
  check_gradient (&a2, 1, 22);       /* single sample, two classes */
  check_gradient (&a3, 37, 23);      /* odd batch, more classes than rows/4 */
}

/* The scratch grows with the batch: a small call after a big one still gives
 * the small batch's result. */
static void
test_softmax_scratch_reuse (void)
{
  const int d = 4, k = 3;
  KernDataset *tr;
  kern_dataset_blobs (500, 0, d, k, 1.0, 9, &tr, NULL);
  KernModel *fresh = kern_softmax_new (d, k), *used = kern_softmax_new (d, k);
  gsize np = fresh->ops->n_params (fresh);
  g_autofree float *params = g_new (float, np);
  g_autofree float *g1 = g_new (float, np);
  g_autofree float *g2 = g_new (float, np);
  fill_params (params, np);

  used->ops->loss_grad (used, params, tr->x, tr->y, 500, g2);
  double l1 = fresh->ops->loss_grad (fresh, params, tr->x, tr->y, 10, g1);
  double l2 = used->ops->loss_grad (used, params, tr->x, tr->y, 10, g2);
  g_assert_cmpfloat (l1, ==, l2);
  g_assert_cmpmem (g1, np * sizeof (float), g2, np * sizeof (float));

  kern_dataset_free (tr);
  kern_model_free (fresh);
  kern_model_free (used);
}

/* SGD on separable blobs: test loss falls well below log k and accuracy is
 * far above chance 1/k. */
static void
test_softmax_training (void)
{
  const int d = 10, k = 5, batch = 32, steps = 300;
  const float lr = 0.1f;
  KernDataset *tr, *te;
  kern_dataset_blobs (2000, 1000, d, k, 1.0, 2024, &tr, &te);
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  g_autofree float *x = g_new (float, batch * d);
  g_autofree int *y = g_new (int, batch);
  int idx[32];
  m->ops->init (m, params, 1);

  double loss0, acc0, loss1, acc1;
  m->ops->evaluate (m, params, te, &loss0, &acc0);
  /* near-zero weights: loss close to log k */
  g_assert_cmpfloat_with_epsilon (loss0, log ((double) k), 0.1);

  for (int s = 0; s < steps; s++)
    {
      for (int i = 0; i < batch; i++)
        idx[i] = (s * batch + i) % tr->n;
      kern_dataset_gather (tr, idx, batch, x, y);
      m->ops->loss_grad (m, params, x, y, batch, grad);
      kern_sgd_step (params, grad, np, lr);
    }
  m->ops->evaluate (m, params, te, &loss1, &acc1);
  g_test_message ("test loss %.4f -> %.4f, accuracy %.3f -> %.3f",
                  loss0, loss1, acc0, acc1);

  g_assert_cmpfloat (loss1, <, 0.5 * loss0);
  g_assert_cmpfloat (acc1, >, 3.0 / k);          /* chance is 1/k */

  kern_dataset_free (tr);
  kern_dataset_free (te);
  kern_model_free (m);
}

static void
test_softmax_flops (void)
{
  const int shapes[][3] = { { 1, 1, 1 }, { 1, 3, 2 }, { 32, 10, 5 },
                            { 1024, 784, 10 }, { 7, 1, 100 } };
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      double n = shapes[s][0], d = shapes[s][1], k = shapes[s][2];
      KernModel *m = kern_softmax_new (shapes[s][1], shapes[s][2]);
      /* forward: GEMM onto bias 2ndk, subtract max nk, exp nk, row sums
       * n(k-1), log and subtract 2n, sum of rows n-1, mean 1 */
      double fwd = 2 * n * d * k + n * k + n * k + n * (k - 1) + 2 * n + (n - 1) + 1;
      /* backward: 1/n 1, 1/(n s_i) n, scale nk, one-hot n, GEMM 2ndk,
       * bias column sums (n-1)k */
      double bwd = 1 + n + n * k + n + 2 * n * d * k + (n - 1) * k;
      g_assert_cmpfloat (m->ops->flops_forward (m, shapes[s][0]), ==, fwd);
      g_assert_cmpfloat (m->ops->flops_backward (m, shapes[s][0]), ==, bwd);
      kern_model_free (m);
    }
}

/* --- CPU backend against naive double loops ------------------------------ */

/* Deterministic, irregular values in [-scale, scale]. */
static void
fill_wave (float *v, gsize n, double phase, double scale)
{
  for (gsize i = 0; i < n; i++)
    v[i] = (float) (scale * sin (1.37 * (double) i + phase)
                    * cos (0.11 * (double) i * (double) i + 2.0 * phase));
}

/* Asserts |got[i] - want[i]| <= atol + rtol |want[i]| for i < n, printing
 * the first mismatches (as llm.c's validate_result does). */
static void
assert_close_array (const char *what, const float *got, const double *want,
                    gsize n, double atol, double rtol)
{
  int bad = 0;
  for (gsize i = 0; i < n; i++)
    {
      double err = fabs ((double) got[i] - want[i]);
      if (!(err <= atol + rtol * fabs (want[i])) && bad++ < 5)
        g_test_message ("%s[%" G_GSIZE_FORMAT "]: got %.9g, want %.9g",
                        what, i, got[i], want[i]);
    }
  if (bad > 0)
    g_test_message ("%s: %d of %" G_GSIZE_FORMAT " outside %.2g + %.2g |want|",
                    what, bad, n, atol, rtol);
  g_assert_cmpint (bad, ==, 0);
}

/* C = alpha op(A) op(B) + beta C for all four transpose combinations, with
 * row strides wider than the rows.  Each element is a sum of p products in
 * float, so its error is at most about p * 2^-24 * sum |terms|: the bound
 * used is 1e-6 * (|alpha| sum_t |a b| + |beta c|) per element. */
static void
test_cpu_gemm (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  const int m = 7, n = 5, p = 9, pad = 3;
  const float alpha = 0.75f, beta = -1.5f;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      {
        /* stored shapes: A (m, p) or (p, m); B (p, n) or (n, p) */
        int a_rows = ta ? p : m, a_cols = ta ? m : p;
        int b_rows = tb ? n : p, b_cols = tb ? p : n;
        int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
        g_autofree float *A = g_new (float, (gsize) a_rows * lda);
        g_autofree float *B = g_new (float, (gsize) b_rows * ldb);
        g_autofree float *C = g_new (float, (gsize) m * ldc);
        g_autofree double *want = g_new (double, (gsize) m * ldc);
        g_autofree double *bound = g_new (double, (gsize) m * ldc);
        fill_wave (A, (gsize) a_rows * lda, 0.1, 1.0);
        fill_wave (B, (gsize) b_rows * ldb, 0.2, 1.0);
        fill_wave (C, (gsize) m * ldc, 0.3, 1.0);
        for (int i = 0; i < m; i++)
          for (int j = 0; j < ldc; j++)
            {
              double c = C[(gsize) i * ldc + j], s = 0.0, abs_s = 0.0;
              if (j >= n)            /* padding is left alone */
                {
                  want[(gsize) i * ldc + j] = c;
                  bound[(gsize) i * ldc + j] = 0.0;
                  continue;
                }
              for (int t = 0; t < p; t++)
                {
                  double a = ta ? A[(gsize) t * lda + i] : A[(gsize) i * lda + t];
                  double b = tb ? B[(gsize) j * ldb + t] : B[(gsize) t * ldb + j];
                  s += a * b;
                  abs_s += fabs (a * b);
                }
              want[(gsize) i * ldc + j] = alpha * s + beta * c;
              bound[(gsize) i * ldc + j] = 1e-6 * (fabs (alpha) * abs_s
                                                   + fabs (beta * c));
            }
        be->ops->gemm (be, ta, tb, m, n, p, alpha, A, lda, B, ldb, beta, C, ldc);
        for (gsize i = 0; i < (gsize) m * ldc; i++)
          {
            if (!(fabs (C[i] - want[i]) <= bound[i]))
              g_test_message ("trans_a=%d trans_b=%d C[%" G_GSIZE_FORMAT
                              "]: got %.9g, want %.9g", ta, tb, i, C[i], want[i]);
            g_assert_cmpfloat (fabs (C[i] - want[i]), <=, bound[i]);
          }
      }
  kern_backend_free (be);
}

/* kern_gemm_fixed computes, bit for bit, the formula gemm.c states:
 * s_ij = fmaf (a_ip, b_pj, s_ij) for p in increasing order from s_ij = 0;
 * C_ij = fmaf (beta, C_ij, alpha s_ij), or alpha s_ij when beta = 0 (C
 * then not read: it may hold NaN).  Checked for every
 * vector width this CPU runs, both transpositions, padded strides, shapes
 * on either side of the block and panel sizes (narrow products take the
 * transposed path), k = 0, and the OpenBLAS backend within its error bound
 * of the same formula. */
static void
test_gemm_fixed (void)
{
  guint64 seed = 20261126;
  const int shapes[][3] = {
    { 1, 1, 1 }, { 7, 5, 9 }, { 33, 10, 128 }, { 10, 33, 17 }, { 2048, 10, 12 },
    { 5, 70, 3 }, { 17, 16, 0 }, { 64, 48, 100 }, { 3, 2, 513 },
  };
  KernBackend *blas = kern_backend_cpu_new_full (FALSE);
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (int variant = 0; variant < 8; variant++)
      {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        gboolean ta = variant & 1, tb = (variant >> 1) & 1;
        float alpha = variant & 4 ? 0.75f : 1.0f;
        float beta = variant == 0 ? 0.0f : variant & 4 ? -1.5f : 1.0f;
        int pad = (int) (s % 3);
        int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
        int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
        g_autofree float *A = g_new (float, (gsize) MAX (a_rows, 1) * lda + 1);
        g_autofree float *B = g_new (float, (gsize) MAX (b_rows, 1) * ldb + 1);
        g_autofree float *C0 = g_new (float, (gsize) m * ldc);
        g_autofree float *want = g_new (float, (gsize) m * ldc);
        g_autofree float *got = g_new (float, (gsize) m * ldc);
        KernRng rng;
        kern_rng_init (&rng, seed++, 0);
        for (gsize i = 0; i < (gsize) MAX (a_rows, 1) * lda + 1; i++)
          A[i] = (float) (2 * kern_rng_uniform_pos (&rng) - 1);
        for (gsize i = 0; i < (gsize) MAX (b_rows, 1) * ldb + 1; i++)
          B[i] = (float) (2 * kern_rng_uniform_pos (&rng) - 1);
        for (gsize i = 0; i < (gsize) m * ldc; i++)
          C0[i] = beta == 0.0f ? NAN : (float) (2 * kern_rng_uniform_pos (&rng) - 1);
        for (int i = 0; i < m; i++)
          for (int j = 0; j < ldc; j++)
            {
              gsize at = (gsize) i * ldc + j;
              if (j >= n)
                {
                  want[at] = C0[at];   /* padding is left alone */
                  continue;
                }
              float sum = 0.0f;
              for (int p = 0; p < k; p++)
                sum = fmaf (ta ? A[(gsize) p * lda + i] : A[(gsize) i * lda + p],
                            tb ? B[(gsize) j * ldb + p] : B[(gsize) p * ldb + j], sum);
              float t = alpha * sum;
              want[at] = beta == 0.0f ? t : fmaf (beta, C0[at], t);
            }
        for (const int *w = kern_gemm_fixed_widths (); *w; w++)
          {
            memcpy (got, C0, (gsize) m * ldc * sizeof (float));
            kern_gemm_fixed_width (*w, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, got, ldc);
            for (gsize i = 0; i < (gsize) m * ldc; i++)
              if (memcmp (&got[i], &want[i], sizeof (float)) != 0)
                g_error ("width %d, (m, n, k) = (%d, %d, %d), trans %d %d: C[%" G_GSIZE_FORMAT
                         "] = %.9g, the formula gives %.9g", *w, m, n, k, ta, tb, i,
                         got[i], want[i]);
          }
        /* OpenBLAS sums in its own order: within gamma_k of the formula */
        if (beta != 0.0f)
          {
            memcpy (got, C0, (gsize) m * ldc * sizeof (float));
            blas->ops->gemm (blas, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, got, ldc);
            double gamma = (k + 2) * 0x1p-24 / (1 - (k + 2) * 0x1p-24);
            for (int i = 0; i < m; i++)
              for (int j = 0; j < n; j++)
                {
                  double mag = fabs ((double) beta * C0[(gsize) i * ldc + j]);
                  for (int p = 0; p < k; p++)
                    mag += fabs ((double) alpha
                                 * (ta ? A[(gsize) p * lda + i] : A[(gsize) i * lda + p])
                                 * (tb ? B[(gsize) j * ldb + p] : B[(gsize) p * ldb + j]));
                  gsize at = (gsize) i * ldc + j;
                  g_assert_cmpfloat (fabs ((double) got[at] - want[at]), <=, 2 * gamma * mag);
                }
          }
      }
  kern_backend_free (blas);
}

/* Every micro-kernel (AVX-512, AVX2 with FMA, portable fmaf: each width
 * this CPU runs) gives the formula's bits on shapes that leave edge tiles
 * of every kind: m, n and k of 1, 7, 33, 65 and 257 in every combination,
 * all four transposition cases, alpha and beta each 0, 1 and another
 * value; and on a product with more rows and columns than a block holds
 * (384 and 512), and one whose sum takes three panels (of at most 384
 * steps), the partial sums kept between them; on 64 rows, which the
 * AVX-512 path computes in tiles of 8 rows; and on more rows than one band
 * of the computation holds.  Every fifth case scales a
 * third of op(A) into the subnormal range, so that products and partial
 * sums underflow and round as subnormals (no path flushes them).  The
 * (alpha, beta) pairs take turns over the shapes, so that every pair meets
 * every transposition case and many shapes while the portable kernel's
 * one fmaf call per step keeps the test short. */
static void
test_gemm_widths (void)
{
  static const int sizes[] = { 1, 7, 33, 65, 257 };
  static const float alphas[] = { 0.0f, 1.0f, -0.8125f }, betas[] = { 0.0f, 1.0f, 1.375f };
  enum { NS = G_N_ELEMENTS (sizes) };
  int shapes[NS * NS * NS + 4][3];
  int n_shapes = 0;
  for (int a = 0; a < NS; a++)
    for (int b = 0; b < NS; b++)
      for (int c = 0; c < NS; c++)
        {
          shapes[n_shapes][0] = sizes[a];
          shapes[n_shapes][1] = sizes[b];
          shapes[n_shapes][2] = sizes[c];
          n_shapes++;
        }
  /* above the blocks of rows (384) and columns (512) */
  shapes[n_shapes][0] = 389;
  shapes[n_shapes][1] = 515;
  shapes[n_shapes][2] = 70;
  n_shapes++;
  /* three panels of the sum */
  shapes[n_shapes][0] = 13;
  shapes[n_shapes][1] = 70;
  shapes[n_shapes][2] = 777;
  n_shapes++;
  /* a batch of 64 rows (AVX-512: the 8-row tile) */
  shapes[n_shapes][0] = 64;
  shapes[n_shapes][1] = 70;
  shapes[n_shapes][2] = 40;
  n_shapes++;
  /* more rows than a band (3072), each band's sum over two panels */
  shapes[n_shapes][0] = 3100;
  shapes[n_shapes][1] = 9;
  shapes[n_shapes][2] = 400;
  n_shapes++;
  g_assert_cmpint (kern_gemm_fixed_widths ()[0], !=, 0);
  guint64 seed = 20270101;
  int turn = 0;
  for (int s = 0; s < n_shapes; s++)
    for (int variant = 0; variant < 4; variant++, turn++)
      {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        gboolean ta = variant & 1, tb = (variant >> 1) & 1;
        float alpha = alphas[turn % 3], beta = betas[(turn / 3) % 3];
        int pad = s % 3;
        int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
        int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
        gsize na = (gsize) a_rows * lda, nb = (gsize) b_rows * ldb, nc = (gsize) m * ldc;
        g_autofree float *A = g_new (float, na);
        g_autofree float *B = g_new (float, nb);
        g_autofree float *C0 = g_new (float, nc);
        g_autofree float *want = g_new (float, nc);
        g_autofree float *got = g_new (float, nc);
        KernRng rng;
        kern_rng_init (&rng, seed++, 0);
        for (gsize i = 0; i < na; i++)
          A[i] = (float) (2 * kern_rng_uniform_pos (&rng) - 1)
                 * (turn % 5 == 4 && i % 3 == 0 ? 0x1p-126f : 1.0f);
        for (gsize i = 0; i < nb; i++)
          B[i] = (float) (2 * kern_rng_uniform_pos (&rng) - 1);
        for (gsize i = 0; i < nc; i++)
          C0[i] = beta == 0.0f ? NAN : (float) (2 * kern_rng_uniform_pos (&rng) - 1);
        memcpy (want, C0, nc * sizeof (float));
        for (int i = 0; i < m; i++)
          for (int j = 0; j < n; j++)
            {
              float sum = 0.0f;
              for (int p = 0; p < k; p++)
                sum = fmaf (ta ? A[(gsize) p * lda + i] : A[(gsize) i * lda + p],
                            tb ? B[(gsize) j * ldb + p] : B[(gsize) p * ldb + j], sum);
              float t = alpha * sum;
              gsize at = (gsize) i * ldc + j;
              want[at] = beta == 0.0f ? t : fmaf (beta, C0[at], t);
            }
        for (const int *w = kern_gemm_fixed_widths (); *w; w++)
          {
            memcpy (got, C0, nc * sizeof (float));
            kern_gemm_fixed_width (*w, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, got, ldc);
            if (memcmp (got, want, nc * sizeof (float)) != 0)
              for (gsize i = 0; i < nc; i++)
                if (memcmp (&got[i], &want[i], sizeof (float)) != 0)
                  g_error ("width %d, (m, n, k) = (%d, %d, %d), trans %d %d, alpha %g, "
                           "beta %g: C[%" G_GSIZE_FORMAT "] = %.9g, the formula gives %.9g",
                           *w, m, n, k, ta, tb, alpha, beta, i, got[i], want[i]);
          }
      }
}

/* The backends name what does their products: the fixed order, or
 * OpenBLAS and the core it chose. */
static void
test_gemm_kernel_name (void)
{
  g_autofree char *fixed = kern_backend_kernel_name ("cpu", TRUE);
  g_autofree char *blas = kern_backend_kernel_name ("cpu", FALSE);
  g_autofree char *cuda = kern_backend_kernel_name ("cuda", FALSE);
  g_assert_cmpstr (fixed, ==, "fixed-order");
  g_assert_true (g_str_has_prefix (blas, "OpenBLAS "));
  g_assert_cmpuint (strlen (blas), >, strlen ("OpenBLAS "));
  g_assert_cmpstr (cuda, ==, "cuda");
}

/* TRUE when a library whose file name holds "blas" is mapped into this
 * process (the file itself, not the name it was opened by: Debian's
 * libopenblas.so.0 is a link to openblas-pthread/libopenblasp-r0.3.21.so). */
static gboolean
blas_mapped (void)
{
  g_autofree char *maps = NULL;
  g_assert_true (g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (maps, "\n", -1);
  for (char **l = lines; *l; l++)
    {
      const char *slash = strrchr (*l, '/');
      if (slash != NULL && strstr (slash, "blas") != NULL)
        return TRUE;
    }
  return FALSE;
}

/* OpenBLAS is opened by the first backend that sends it a product, not
 * before: the fixed-order backend and its products leave it unmapped; the
 * thread count asked for before it opens is the one it then runs with. */
static void
test_blas_lazy (void)
{
  /* a process of its own, where nothing has opened it yet, with no
   * OPENBLAS_NUM_THREADS to decide the count in its place */
  if (!g_test_subprocess ())
    {
      g_autofree char *was = g_strdup (g_getenv ("OPENBLAS_NUM_THREADS"));
      g_unsetenv ("OPENBLAS_NUM_THREADS");
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      if (was)
        g_setenv ("OPENBLAS_NUM_THREADS", was, TRUE);
      g_test_trap_assert_passed ();
      return;
    }
  g_assert_false (kern_blas_loaded ());
  g_assert_false (blas_mapped ());

  /* a count OpenBLAS would not choose for itself (it takes the cores) */
  int threads = g_get_num_processors () == 3 ? 2 : 3;
  kern_blas_set_threads (threads);
  g_assert_false (kern_blas_loaded ());

  /* the fixed-order backend: a product, and still no OpenBLAS */
  const float A[2 * 3] = { 1, 2, 3, 4, 5, 6 };      /* (2, 3) row-major */
  const float B[3 * 2] = { 7, 8, 9, 10, 11, 12 };   /* (3, 2) row-major */
  float C[2 * 2] = { 0 };
  g_autoptr (GError) error = NULL;
  KernBackend *fixed = kern_backend_new ("cpu", TRUE, &error);
  g_assert_no_error (error);
  fixed->ops->gemm (fixed, FALSE, FALSE, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  g_assert_cmpfloat (C[0], ==, 1 * 7 + 2 * 9 + 3 * 11);
  kern_backend_free (fixed);
  g_assert_false (kern_blas_loaded ());
  g_assert_false (blas_mapped ());

  /* the OpenBLAS backend opens it; small integers are exact in float, so
   * its product is the formula's whatever order it sums in */
  KernBackend *blas = kern_backend_new ("cpu", FALSE, &error);
  g_assert_no_error (error);
  g_assert_true (kern_blas_loaded ());
  g_assert_true (blas_mapped ());
  memset (C, 0, sizeof C);
  blas->ops->gemm (blas, FALSE, FALSE, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  g_assert_cmpfloat (C[0], ==, 1 * 7 + 2 * 9 + 3 * 11);
  g_assert_cmpfloat (C[3], ==, 4 * 8 + 5 * 10 + 6 * 12);
  kern_backend_free (blas);

  /* it runs with the count asked for before it opened (OpenBLAS only) */
  const KernBlas *t = kern_blas_get (NULL);
  g_assert_nonnull (t);
  if (t->set_num_threads != NULL)
    {
      GModule *m = g_module_open (t->path, G_MODULE_BIND_LOCAL);
      g_assert_nonnull (m);
      gpointer get = NULL;
      g_assert_true (g_module_symbol (m, "openblas_get_num_threads", &get));
      g_assert_cmpint (((int (*) (void)) get) (), ==, threads);
      kern_blas_set_threads (1);
      g_assert_cmpint (((int (*) (void)) get) (), ==, 1);
      g_module_close (m);
    }
}

/* A BLAS library that cannot be opened fails the OpenBLAS backend with one
 * line naming the library and the fix, and nothing else: the fixed-order
 * backend still works, and the description says why there is none. */
static void
test_blas_missing (void)
{
  if (!g_test_subprocess ())
    {
      g_autofree char *was = g_strdup (g_getenv (KERN_BLAS_LIBRARY_ENV));
      g_setenv (KERN_BLAS_LIBRARY_ENV, "/nonexistent/libopenblas.so.0", TRUE);
      g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
      if (was)
        g_setenv (KERN_BLAS_LIBRARY_ENV, was, TRUE);
      else
        g_unsetenv (KERN_BLAS_LIBRARY_ENV);
      g_test_trap_assert_passed ();
      return;
    }
  g_autoptr (GError) error = NULL;
  KernBackend *fixed = kern_backend_new ("cpu", TRUE, &error);
  g_assert_no_error (error);
  kern_backend_free (fixed);
  KernBackend *blas = kern_backend_new ("cpu", FALSE, &error);
  g_assert_null (blas);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, "/nonexistent/libopenblas.so.0"));
  g_assert_nonnull (strstr (error->message, KERN_BLAS_LIBRARY_ENV));
  g_assert_null (strchr (error->message, '\n'));
  g_assert_false (kern_blas_loaded ());
  g_autofree char *name = kern_backend_kernel_name ("cpu", FALSE);
  g_assert_true (g_str_has_prefix (name, "OpenBLAS (not loadable: "));
}

/* Units in the last place between a and b (b the reference). */
static double
ulps (double a, double b)
{
  if (a == b || (isnan (a) && isnan (b)))
    return 0.0;
  double u = nextafter (fabs (b), HUGE_VAL) - fabs (b);
  return fabs (a - b) / u;
}

/* base/fmath.c against the C library (itself within one unit in the last
 * place): within 2 units more for exp, log, log1p, sin and cos, and 2 +
 * 3 |y log x| units for pow; special values as C99 Annex F. */
static void
test_fmath_accuracy (void)
{
  KernRng rng;
  kern_rng_init (&rng, 7, 0);
  for (int i = 0; i < 200000; i++)
    {
      double u = kern_rng_uniform_pos (&rng);
      double xe = (u - 0.5) * 1450, xl = exp ((u - 0.5) * 1400), xs = (u - 0.5) * 60;
      double x1 = (u - 0.5) * 2 * (i % 2 ? 1e-6 : 1.0), px = 2 * u, py = 30 * u - 9;
      g_assert_cmpfloat (ulps (base_exp (xe), exp (xe)), <=, 3);
      g_assert_cmpfloat (ulps (base_log (xl), log (xl)), <=, 3);
      g_assert_cmpfloat (ulps (base_sin (xs), sin (xs)), <=, 3);
      g_assert_cmpfloat (ulps (base_cos (xs), cos (xs)), <=, 3);
      g_assert_cmpfloat (ulps (base_log1p (x1), log1p (x1)), <=, 3);
      if (px > 0)
        g_assert_cmpfloat (ulps (base_pow (px, py), pow (px, py)), <=,
                           3 + 3 * fabs (py * log (px)));
      float xf = (float) ((u - 0.5) * 170);   /* expf finite */
      float ef = base_expf (xf), lf = expf (xf);
      g_assert_cmpfloat (fabsf (ef - lf), <=, nextafterf (fabsf (lf), HUGE_VALF) - fabsf (lf));
    }
  g_assert_cmpfloat (base_exp (0), ==, 1);
  g_assert_cmpfloat (base_exp (800), ==, HUGE_VAL);
  g_assert_cmpfloat (base_exp (-800), ==, 0);
  g_assert_cmpfloat (base_exp (-745.0), ==, exp (-745.0));   /* the smallest subnormal */
  g_assert_true (isnan (base_exp (NAN)));
  g_assert_cmpfloat (base_log (1), ==, 0);
  g_assert_cmpfloat (base_log (0), ==, -HUGE_VAL);
  g_assert_true (isnan (base_log (-1)));
  g_assert_cmpfloat (base_log (HUGE_VAL), ==, HUGE_VAL);
  g_assert_cmpfloat (ulps (base_log (4.9e-324), log (4.9e-324)), <=, 1);
  g_assert_cmpfloat (base_log1p (-1), ==, -HUGE_VAL);
  g_assert_true (isnan (base_log1p (-2)));
  g_assert_cmpfloat (base_log1p (1e-300), ==, 1e-300);
  g_assert_true (isnan (base_sin (HUGE_VAL)) && isnan (base_cos (-HUGE_VAL)));
  g_assert_cmpfloat (base_pow (2, 10), ==, 1024);
  g_assert_cmpfloat (base_pow (-2, 3), ==, -8);
  g_assert_true (isnan (base_pow (-2, 0.5)));
  g_assert_cmpfloat (base_pow (0, -1), ==, HUGE_VAL);
  g_assert_cmpfloat (base_pow (0.5, HUGE_VAL), ==, 0);
  g_assert_cmpfloat (base_pow (NAN, 0), ==, 1);
}

static void
test_cpu_fill_rows (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  const int n = 4, k = 3;
  const float bias[] = { 1.5f, -2.0f, 0.25f };
  float Z[4 * 3];
  fill_wave (Z, G_N_ELEMENTS (Z), 0.4, 1.0);
  be->ops->fill_rows (be, Z, bias, n, k);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k; j++)
      g_assert_cmpfloat (Z[i * k + j], ==, bias[j]);
  kern_backend_free (be);
}

/* Column sums accumulate n floats: error at most about n 2^-24 sum |dZ|. */
static void
test_cpu_col_sum (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  const int n = 33, k = 6;
  float dZ[33 * 6], out[6];
  double want[6], abs_sum[6];
  fill_wave (dZ, G_N_ELEMENTS (dZ), 0.5, 2.0);
  for (int j = 0; j < k; j++)
    {
      want[j] = abs_sum[j] = 0.0;
      for (int i = 0; i < n; i++)
        {
          want[j] += dZ[i * k + j];
          abs_sum[j] += fabs (dZ[i * k + j]);
        }
    }
  be->ops->col_sum (be, dZ, n, k, out);
  for (int j = 0; j < k; j++)
    g_assert_cmpfloat (fabs (out[j] - want[j]), <=, n * 0x1p-24 * abs_sum[j]);

  /* one row: the row itself; no rows: zeros */
  be->ops->col_sum (be, dZ, 1, k, out);
  g_assert_cmpmem (out, sizeof out, dZ, sizeof out);
  be->ops->col_sum (be, dZ, 0, k, out);
  for (int j = 0; j < k; j++)
    g_assert_cmpfloat (out[j], ==, 0.0f);
  kern_backend_free (be);
}

static void
test_cpu_relu (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  float A[50], A0[50], dA[50], dA0[50];
  fill_wave (A0, 50, 0.6, 1.0);
  A0[7] = 0.0f;                                /* the boundary: not > 0 */
  memcpy (A, A0, sizeof A);
  be->ops->relu (be, A, 50);
  for (int i = 0; i < 50; i++)
    g_assert_cmpfloat (A[i], ==, A0[i] > 0.0f ? A0[i] : 0.0f);

  fill_wave (dA0, 50, 0.7, 3.0);
  memcpy (dA, dA0, sizeof dA);
  be->ops->relu_backward (be, dA, A, 50);
  for (int i = 0; i < 50; i++)
    g_assert_cmpfloat (dA[i], ==, A[i] > 0.0f ? dA0[i] : 0.0f);
  g_assert_cmpfloat (dA[7], ==, 0.0f);
  kern_backend_free (be);
}

/* Softmax cross-entropy per row in double: the loss, the first argmax and
 * scale (softmax - onehot).  Rows 0 and 1 tie for the maximum, so pred must
 * be the first index; row 2 has logits of order 1e3 (no overflow). */
static void
test_cpu_softmax_xent (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  const int n = 6, k = 5;
  const float scale = 0.125f;
  float Z0[6 * 5], Z[6 * 5], loss[6];
  int pred[6];
  const int y[] = { 0, 4, 2, 1, 3, 0 };
  fill_wave (Z0, G_N_ELEMENTS (Z0), 0.8, 4.0);
  Z0[0 * k + 1] = Z0[0 * k + 3] = 9.0f;         /* tie at 1 and 3 */
  for (int j = 0; j < k; j++)
    Z0[1 * k + j] = 2.0f;                       /* all tied: pred 0 */
  for (int j = 0; j < k; j++)
    Z0[2 * k + j] *= 300.0f;

  double want_loss[6], want_grad[6 * 5];
  int want_pred[6];
  for (int i = 0; i < n; i++)
    {
      const float *z = Z0 + i * k;
      int arg = 0;
      for (int j = 1; j < k; j++)
        if (z[j] > z[arg])
          arg = j;
      want_pred[i] = arg;
      double s = 0.0;
      for (int j = 0; j < k; j++)
        s += exp ((double) z[j] - z[arg]);
      want_loss[i] = log (s) - ((double) z[y[i]] - z[arg]);
      for (int j = 0; j < k; j++)
        want_grad[i * k + j] = scale * (exp ((double) z[j] - z[arg]) / s
                                        - (j == y[i] ? 1.0 : 0.0));
    }
  g_assert_cmpint (want_pred[0], ==, 1);
  g_assert_cmpint (want_pred[1], ==, 0);

  /* scale = 0: losses and argmax, Z untouched */
  memcpy (Z, Z0, sizeof Z);
  be->ops->softmax_xent (be, Z, y, n, k, 0.0f, loss, pred);
  g_assert_cmpmem (Z, sizeof Z, Z0, sizeof Z0);
  assert_close_array ("loss", loss, want_loss, n, 1e-6, 1e-6);
  g_assert_cmpmem (pred, sizeof pred, want_pred, sizeof want_pred);

  /* with a gradient: same losses bit for bit, Z replaced */
  float loss2[6];
  be->ops->softmax_xent (be, Z, y, n, k, scale, loss2, NULL);
  g_assert_cmpmem (loss2, sizeof loss2, loss, sizeof loss);
  assert_close_array ("dZ", Z, want_grad, (gsize) n * k, 1e-7, 1e-5);

  /* loss and pred may both be NULL */
  memcpy (Z, Z0, sizeof Z);
  be->ops->softmax_xent (be, Z, y, n, k, scale, NULL, NULL);
  assert_close_array ("dZ (no loss)", Z, want_grad, (gsize) n * k, 1e-7, 1e-5);
  kern_backend_free (be);
}

static void
test_cpu_mse (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  const int n = 5, k = 4;
  const float scale = 0.2f;
  float Z0[5 * 4], Z[5 * 4], loss[5];
  int pred[5];
  const int y[] = { 3, 0, 1, 2, 3 };
  fill_wave (Z0, G_N_ELEMENTS (Z0), 0.9, 2.0);
  Z0[2 * k + 0] = Z0[2 * k + 2] = 5.0f;         /* tie: pred 0 */

  double want_loss[5], want_grad[5 * 4];
  int want_pred[5];
  for (int i = 0; i < n; i++)
    {
      const float *z = Z0 + i * k;
      int arg = 0;
      double ss = 0.0;
      for (int j = 0; j < k; j++)
        {
          if (z[j] > z[arg])
            arg = j;
          double t = z[j] - (j == y[i] ? 1.0 : 0.0);
          ss += t * t;
          want_grad[i * k + j] = scale * t;
        }
      want_pred[i] = arg;
      want_loss[i] = 0.5 * ss;
    }
  g_assert_cmpint (want_pred[2], ==, 0);

  memcpy (Z, Z0, sizeof Z);
  be->ops->mse (be, Z, y, n, k, 0.0f, loss, pred);
  g_assert_cmpmem (Z, sizeof Z, Z0, sizeof Z0);
  assert_close_array ("loss", loss, want_loss, n, 1e-6, 1e-6);
  g_assert_cmpmem (pred, sizeof pred, want_pred, sizeof want_pred);

  float loss2[5];
  be->ops->mse (be, Z, y, n, k, scale, loss2, NULL);
  g_assert_cmpmem (loss2, sizeof loss2, loss, sizeof loss);
  assert_close_array ("dZ", Z, want_grad, (gsize) n * k, 1e-7, 1e-6);
  kern_backend_free (be);
}

/* The three optimizer operations, one step each, against double loops of
 * the backend.h formulas; Adam at t = 3 so the bias corrections matter. */
static void
test_cpu_optimizer_ops (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  enum { N = 40 };
  const float lr = 0.05f, mu = 0.9f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const gint64 t = 3;
  float p[N], g[N], v[N], m1[N], v2[N];
  double want_p[N], want_v[N], want_m[N];
  fill_wave (g, N, 1.1, 1.0);

  fill_wave (p, N, 1.2, 1.0);
  for (int i = 0; i < N; i++)
    want_p[i] = p[i] - (double) lr * g[i];
  be->ops->sgd (be, p, g, N, lr);
  assert_close_array ("sgd p", p, want_p, N, 1e-7, 1e-6);

  fill_wave (p, N, 1.2, 1.0);
  fill_wave (v, N, 1.3, 0.5);
  for (int i = 0; i < N; i++)
    {
      want_v[i] = (double) mu * v[i] + g[i];
      want_p[i] = p[i] - (double) lr * want_v[i];
    }
  be->ops->momentum (be, p, v, g, N, lr, mu);
  assert_close_array ("momentum v", v, want_v, N, 1e-7, 1e-6);
  assert_close_array ("momentum p", p, want_p, N, 1e-7, 1e-6);

  fill_wave (p, N, 1.2, 1.0);
  fill_wave (m1, N, 1.4, 0.3);
  fill_wave (v2, N, 1.5, 0.3);
  double c1 = 1.0 - pow (b1, t), c2 = 1.0 - pow (b2, t);
  for (int i = 0; i < N; i++)
    {
      v2[i] = fabsf (v2[i]);                    /* second moments are >= 0 */
      want_m[i] = (double) b1 * m1[i] + (1.0 - (double) b1) * g[i];
      want_v[i] = (double) b2 * v2[i] + (1.0 - (double) b2) * (double) g[i] * g[i];
      want_p[i] = p[i] - lr * (want_m[i] / c1) / (sqrt (want_v[i] / c2) + eps);
    }
  be->ops->adam (be, p, m1, v2, g, N, lr, b1, b2, eps, t);
  assert_close_array ("adam m", m1, want_m, N, 1e-7, 1e-5);
  assert_close_array ("adam v", v2, want_v, N, 1e-7, 1e-5);
  assert_close_array ("adam p", p, want_p, N, 1e-6, 1e-5);
  kern_backend_free (be);
}

/* The optimizer operations are compiled vectorised (cpu.c); each element
 * must still be the plain formula's float operations in their order, so
 * the result equals a scalar loop of backend.h's formula to the bit.  A
 * length that leaves a tail after every vector width and after Adam's
 * blocks of 512, gradients over several octaves and of both signs, Adam
 * at t = 1 and t = 7 (the clone this CPU picks; the AVX-512, AVX2 and
 * baseline clones run on CPUs that have them). */
static void
test_cpu_optimizer_bits (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  enum { N = 1037 };
  const float lr = 0.05f, mu = 0.9f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  float *g = g_new (float, N), *p = g_new (float, N), *want_p = g_new (float, N);
  float *s1 = g_new (float, N), *s2 = g_new (float, N);
  float *want_s1 = g_new (float, N), *want_s2 = g_new (float, N);
  fill_wave (g, N, 1.1, 1.0);
  for (int i = 0; i < N; i++)
    g[i] *= ldexpf (1.0f, i % 13 - 6);

  fill_wave (p, N, 1.2, 1.0);
  memcpy (want_p, p, N * sizeof (float));
  for (int i = 0; i < N; i++)
    want_p[i] -= lr * g[i];
  be->ops->sgd (be, p, g, N, lr);
  g_assert_cmpmem (p, N * sizeof (float), want_p, N * sizeof (float));

  fill_wave (p, N, 1.2, 1.0);
  fill_wave (s1, N, 1.3, 0.5);
  memcpy (want_p, p, N * sizeof (float));
  memcpy (want_s1, s1, N * sizeof (float));
  for (int i = 0; i < N; i++)
    {
      want_s1[i] = mu * want_s1[i] + g[i];
      want_p[i] -= lr * want_s1[i];
    }
  be->ops->momentum (be, p, s1, g, N, lr, mu);
  g_assert_cmpmem (s1, N * sizeof (float), want_s1, N * sizeof (float));
  g_assert_cmpmem (p, N * sizeof (float), want_p, N * sizeof (float));

  for (gint64 t = 1; t <= 7; t += 6)
    {
      fill_wave (p, N, 1.2, 1.0);
      fill_wave (s1, N, 1.4, 0.3);
      fill_wave (s2, N, 1.5, 0.3);
      for (int i = 0; i < N; i++)
        s2[i] = fabsf (s2[i]);                  /* second moments are >= 0 */
      memcpy (want_p, p, N * sizeof (float));
      memcpy (want_s1, s1, N * sizeof (float));
      memcpy (want_s2, s2, N * sizeof (float));
      float c1 = (float) (1.0 - pow (b1, (double) t)), c2 = (float) (1.0 - pow (b2, (double) t));
      for (int i = 0; i < N; i++)
        {
          want_s1[i] = b1 * want_s1[i] + (1.0f - b1) * g[i];
          want_s2[i] = b2 * want_s2[i] + (1.0f - b2) * (g[i] * g[i]);
          float mhat = want_s1[i] / c1, vhat = want_s2[i] / c2;
          want_p[i] -= lr * mhat / (sqrtf (vhat) + eps);
        }
      be->ops->adam (be, p, s1, s2, g, N, lr, b1, b2, eps, t);
      g_assert_cmpmem (s1, N * sizeof (float), want_s1, N * sizeof (float));
      g_assert_cmpmem (s2, N * sizeof (float), want_s2, N * sizeof (float));
      g_assert_cmpmem (p, N * sizeof (float), want_p, N * sizeof (float));
    }
  g_free (g);
  g_free (p);
  g_free (want_p);
  g_free (s1);
  g_free (s2);
  g_free (want_s1);
  g_free (want_s2);
  kern_backend_free (be);
}

/* Upload and download are copies; a copy onto itself is allowed. */
static void
test_cpu_transfers (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  float src[10], back[10];
  int isrc[10], iback[10];
  fill_wave (src, 10, 2.0, 1.0);
  for (int i = 0; i < 10; i++)
    isrc[i] = 3 * i - 7;
  float *buf = be->ops->alloc (be, 10);
  int *ibuf = be->ops->alloc_int (be, 10);
  be->ops->upload (be, buf, src, 10);
  be->ops->upload_int (be, ibuf, isrc, 10);
  be->ops->upload (be, buf, buf, 10);
  be->ops->download (be, back, buf, 10);
  be->ops->download_int (be, iback, ibuf, 10);
  g_assert_cmpmem (back, sizeof back, src, sizeof src);
  g_assert_cmpmem (iback, sizeof iback, isrc, sizeof isrc);
  be->ops->free (be, buf);
  be->ops->free (be, ibuf);
  kern_backend_free (be);
}

static void
test_backend_new (void)
{
  GError *error = NULL;
  KernBackend *be = kern_backend_new ("cpu", TRUE, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (be->ops->name, ==, "cpu");
  kern_backend_free (be);
  kern_backend_free (NULL);

  g_assert_null (kern_backend_new ("tpu", TRUE, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "tpu"));
  g_clear_error (&error);

  /* cuBLAS promises no bits: asked to, it is refused, on any machine */
  g_assert_null (kern_backend_new ("cuda", TRUE, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
  g_assert_nonnull (strstr (error->message, "reproducible = false"));
  g_clear_error (&error);

  /* "cuda" either works or says why not; without devices it cannot work */
  be = kern_backend_new ("cuda", FALSE, &error);
  if (be == NULL)
    {
      g_assert_nonnull (error);
      g_test_message ("cuda backend: %s", error->message);
      g_clear_error (&error);
    }
  else
    {
      g_assert_no_error (error);
      g_assert_cmpint (kern_cuda_device_count (), >, 0);
      g_assert_cmpstr (be->ops->name, ==, "cuda");
      kern_backend_free (be);
    }
  if (kern_cuda_device_count () == 0)
    {
      g_assert_null (kern_backend_new ("cuda", FALSE, &error));
      g_assert_nonnull (error);
      g_clear_error (&error);
    }
}

/* --- dense models -------------------------------------------------------- */

/* Two hidden layers and MSE / XENT variants used by several tests. */
static const Arch arch_mlp = { .d = 4, .k = 3, .n_hidden = 2, .hidden = { 6, 5 },
                               .loss = KERN_LOSS_XENT };
static const Arch arch_mlp_mse = { .d = 4, .k = 3, .n_hidden = 2, .hidden = { 6, 5 },
                                   .loss = KERN_LOSS_MSE };
static const Arch arch_linear = { .d = 6, .k = 4, .loss = KERN_LOSS_MSE };
static const Arch arch_softmax = { .d = 6, .k = 4, .loss = KERN_LOSS_XENT };

static void
test_linear_gradient_check (void)
{
  const Arch a = { .d = 3, .k = 2, .loss = KERN_LOSS_MSE };
  check_gradient (&arch_linear, 16, 31);
  check_gradient (&a, 1, 32);
}

static void
test_mlp_gradient_check (void)
{
  const Arch wide = { .d = 7, .k = 5, .n_hidden = 2, .hidden = { 9, 4 },
                      .loss = KERN_LOSS_XENT };
  check_gradient (&arch_mlp, 12, 41);
  check_gradient (&wide, 5, 42);
  check_gradient (&arch_mlp_mse, 10, 43);
}

/* loss_grad and evaluate of every kind of dense model agree with the double
 * reference (float activations: relative 1e-5), with and without a
 * gradient; evaluate's argmax matches the reference's. */
static void
check_reference (const Arch *a)
{
  const int n = 1500;                          /* more than one eval chunk */
  KernDataset *tr;
  kern_dataset_blobs (n, 0, a->d, a->k, 1.0, 5, &tr, NULL);
  KernModel *m = arch_model (a, NULL);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  g_autofree int *pred = g_new (int, n);
  fill_params (params, np);

  double ref = ref_dense_loss (a, params, tr->x, tr->y, n, NULL, pred);
  double l0 = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
  double l1 = m->ops->loss_grad (m, params, tr->x, tr->y, n, grad);
  g_assert_cmpfloat (fabs (l0 - ref), <=, 1e-5 * ref);
  g_assert_cmpfloat (l1, ==, l0);

  double eloss, acc;
  int correct = 0;
  for (int i = 0; i < n; i++)
    correct += (pred[i] == tr->y[i]);
  m->ops->evaluate (m, params, tr, &eloss, &acc);
  g_assert_cmpfloat (fabs (eloss - ref), <=, 1e-5 * ref);
  /* a near-tie may round the other way in float: allow 2 samples */
  g_assert_cmpfloat (fabs (acc - (double) correct / n), <=, 2.0 / n);
  g_test_message ("%s: loss %.6f (ref %.6f), accuracy %.4f", m->ops->name,
                  l0, ref, acc);

  kern_dataset_free (tr);
  kern_model_free (m);
}

static void
test_dense_reference (void)
{
  check_reference (&arch_softmax);
  check_reference (&arch_linear);
  check_reference (&arch_mlp);
  check_reference (&arch_mlp_mse);
}

static void
test_dense_names (void)
{
  const int h[] = { 8 };
  KernModel *s = kern_softmax_new (3, 2), *l = kern_linear_new (3, 2);
  KernModel *a = kern_mlp_new (3, NULL, 0, 2, KERN_LOSS_XENT, NULL);
  KernModel *b = kern_mlp_new (3, h, 1, 2, KERN_LOSS_MSE, NULL);
  g_assert_cmpstr (s->ops->name, ==, "softmax");
  g_assert_cmpstr (l->ops->name, ==, "linear");
  g_assert_cmpstr (a->ops->name, ==, "softmax");
  g_assert_cmpstr (b->ops->name, ==, "mlp");
  /* d -> 8 -> k: (d + 1) 8 + (8 + 1) k parameters */
  g_assert_cmpuint (b->ops->n_params (b), ==, (3 + 1) * 8 + (8 + 1) * 2);
  kern_model_free (s); kern_model_free (l);
  kern_model_free (a); kern_model_free (b);
}

/* loss_grad_groups over G stacked batches gives what G loss_grad calls
 * give, to float rounding (relative 1e-5 of the group's largest gradient
 * element). */
static void
check_groups (const Arch *a)
{
  const int n = 7, G = 3;
  KernDataset *tr;
  kern_dataset_blobs (n * G, 0, a->d, a->k, 1.0, 77, &tr, NULL);
  KernModel *m = arch_model (a, NULL), *one = arch_model (a, NULL);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *all = g_new (float, np * G);
  g_autofree float *single = g_new (float, np);
  float *grads[3];
  double losses[3];
  fill_params (params, np);
  for (int g = 0; g < G; g++)
    grads[g] = all + (gsize) g * np;

  m->ops->loss_grad_groups (m, params, tr->x, tr->y, n, G, grads, losses);
  for (int g = 0; g < G; g++)
    {
      const float *x = tr->x + (gsize) g * n * a->d;
      const int *y = tr->y + (gsize) g * n;
      double l = one->ops->loss_grad (one, params, x, y, n, single);
      g_assert_cmpfloat (fabs (losses[g] - l), <=, 1e-5 * fabs (l));
      double gmax = 0.0;
      for (gsize i = 0; i < np; i++)
        gmax = MAX (gmax, fabs (single[i]));
      g_assert_cmpfloat (gmax, >, 0.0);
      for (gsize i = 0; i < np; i++)
        g_assert_cmpfloat (fabs (grads[g][i] - single[i]), <=, 1e-5 * gmax);
    }
  /* the groups differ, so the check would see them swapped */
  g_assert_false (memcmp (grads[0], grads[1], np * sizeof (float)) == 0);

  kern_dataset_free (tr);
  kern_model_free (m);
  kern_model_free (one);
}

static void
test_dense_groups (void)
{
  check_groups (&arch_softmax);
  check_groups (&arch_linear);
  check_groups (&arch_mlp);
  check_groups (&arch_mlp_mse);
}

/* loss_grad_sum over G groups of n rows is one product over the G n
 * stacked rows with each row's loss gradient divided by n.  With n and G
 * powers of two, that is exactly G times the gradient of one group of G n
 * rows (loss gradient divided by G n): scaling an operand by a power of
 * two scales every rounded step of the chains by it (no value here comes
 * near the subnormals), so the two agree bit for bit, while a sum of the G
 * groups' own gradients would round differently. */
static void
check_grad_sum (const Arch *a)
{
  const int n = 4, G = 8;
  KernDataset *tr;
  kern_dataset_blobs (n * G, 0, a->d, a->k, 1.0, 91, &tr, NULL);
  KernModel *m = arch_model (a, NULL);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *sum = g_new (float, np);
  g_autofree float *whole = g_new (float, np);
  g_autofree float *all = g_new (float, np * G);
  float *grads[8];
  double losses[8], glosses[8];
  fill_params (params, np);
  for (int g = 0; g < G; g++)
    grads[g] = all + (gsize) g * np;

  m->ops->loss_grad_sum (m, params, tr->x, tr->y, n, G, sum, losses);
  m->ops->loss_grad (m, params, tr->x, tr->y, n * G, whole);
  for (gsize i = 0; i < np; i++)
    g_assert_cmpfloat (sum[i], ==, (float) G * whole[i]);
  /* the losses are loss_grad_groups's, group by group */
  m->ops->loss_grad_groups (m, params, tr->x, tr->y, n, G, grads, glosses);
  for (int g = 0; g < G; g++)
    g_assert_cmpfloat (losses[g], ==, glosses[g]);
  /* and the sum is the groups' gradients' sum, to float rounding */
  double gmax = 0.0;
  for (gsize i = 0; i < np; i++)
    gmax = MAX (gmax, fabs (sum[i]));
  g_assert_cmpfloat (gmax, >, 0.0);
  for (gsize i = 0; i < np; i++)
    {
      double s = 0.0;
      for (int g = 0; g < G; g++)
        s += grads[g][i];
      g_assert_cmpfloat (fabs (sum[i] - s), <=, 1e-5 * gmax);
    }

  kern_dataset_free (tr);
  kern_model_free (m);
}

static void
test_dense_grad_sum (void)
{
  check_grad_sum (&arch_softmax);
  check_grad_sum (&arch_linear);
  check_grad_sum (&arch_mlp);
  check_grad_sum (&arch_mlp_mse);
}

/* A backend that is the CPU one under another name: the model cannot use
 * host pointers on it, so it uploads and downloads every call.  Its
 * buffers start as NaN, so a read of something never written shows.  The
 * results must be bit-identical to the CPU path. */
static float *
staged_alloc (KernBackend *be G_GNUC_UNUSED, gsize n)
{
  float *buf = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    buf[i] = NAN;
  return buf;
}

static void
test_dense_staged_backend (void)
{
  KernBackend *cpu = kern_backend_cpu_new ();
  KernBackendOps ops = *cpu->ops;
  ops.name = "staged";
  ops.alloc = staged_alloc;
  KernBackend staged = { .ops = &ops, .priv = NULL };

  const Arch *archs[] = { &arch_softmax, &arch_mlp_mse, &arch_mlp };
  for (gsize c = 0; c < G_N_ELEMENTS (archs); c++)
    {
      const Arch *a = archs[c];
      const int n = 9, G = 2;
      KernDataset *tr;
      kern_dataset_blobs (1100, 0, a->d, a->k, 1.0, 8, &tr, NULL);
      KernModel *mh = arch_model (a, cpu), *ms = arch_model (a, &staged);
      gsize np = mh->ops->n_params (mh);
      g_autofree float *params = g_new (float, np);
      g_autofree float *gh = g_new (float, 2 * np);
      g_autofree float *gs = g_new (float, 2 * np);
      fill_params (params, np);

      double lh = mh->ops->loss_grad (mh, params, tr->x, tr->y, n, gh);
      double ls = ms->ops->loss_grad (ms, params, tr->x, tr->y, n, gs);
      g_assert_cmpfloat (lh, ==, ls);
      g_assert_cmpmem (gh, np * sizeof (float), gs, np * sizeof (float));

      float *grh[] = { gh, gh + np }, *grs[] = { gs, gs + np };
      double lgh[2], lgs[2];
      mh->ops->loss_grad_groups (mh, params, tr->x, tr->y, n, G, grh, lgh);
      ms->ops->loss_grad_groups (ms, params, tr->x, tr->y, n, G, grs, lgs);
      g_assert_cmpmem (lgh, sizeof lgh, lgs, sizeof lgs);
      g_assert_cmpmem (gh, 2 * np * sizeof (float), gs, 2 * np * sizeof (float));
      mh->ops->loss_grad_sum (mh, params, tr->x, tr->y, n, G, gh, lgh);
      ms->ops->loss_grad_sum (ms, params, tr->x, tr->y, n, G, gs, lgs);
      g_assert_cmpmem (lgh, sizeof lgh, lgs, sizeof lgs);
      g_assert_cmpmem (gh, np * sizeof (float), gs, np * sizeof (float));

      double eh, ah, es, as;
      mh->ops->evaluate (mh, params, tr, &eh, &ah);
      ms->ops->evaluate (ms, params, tr, &es, &as);
      g_assert_cmpfloat (eh, ==, es);
      g_assert_cmpfloat (ah, ==, as);

      kern_dataset_free (tr);
      kern_model_free (mh);
      kern_model_free (ms);
    }
  kern_backend_free (cpu);
}

/* Without hidden layers the initialisation is the one softmax.c always
 * had, draw for draw: W_i = (float) (0.01 N_i) from the softmax stream,
 * b = 0.  With hidden layers, weights of layer l have sd sqrt(2 / fan_in)
 * (He) except the output layer's 0.01, biases 0. */
static void
test_dense_init (void)
{
  const int d = 30, k = 7;
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_autofree float *p = g_new (float, np);
  m->ops->init (m, p, 99);
  KernRng rng;
  kern_rng_init (&rng, 99, KERN_RNG_STREAM_SOFTMAX);
  for (int i = 0; i < d * k; i++)
    g_assert_cmpfloat (p[i], ==, (float) (0.01 * kern_rng_normal (&rng)));
  for (int j = 0; j < k; j++)
    g_assert_cmpfloat (p[d * k + j], ==, 0.0f);
  kern_model_free (m);

  const int h[] = { 400, 300 };
  const int width[] = { 200, 400, 300, 10 };
  m = kern_mlp_new (200, h, 2, 10, KERN_LOSS_XENT, NULL);
  np = m->ops->n_params (m);
  g_autofree float *q = g_new (float, np);
  m->ops->init (m, q, 3);
  gsize off = 0;
  for (int l = 0; l < 3; l++)
    {
      gsize nw = (gsize) width[l] * width[l + 1];
      double ss = 0.0;
      for (gsize i = 0; i < nw; i++)
        ss += (double) q[off + i] * q[off + i];
      double sd = sqrt (ss / nw);
      double want = l < 2 ? sqrt (2.0 / width[l]) : 0.01;
      /* >= 3000 draws: the sample sd is within 5 % of the true one */
      g_assert_cmpfloat_with_epsilon (sd / want, 1.0, 0.05);
      for (int j = 0; j < width[l + 1]; j++)
        g_assert_cmpfloat (q[off + nw + j], ==, 0.0f);
      off += nw + width[l + 1];
    }
  g_assert_cmpuint (off, ==, np);
  kern_model_free (m);
}

/* Layer tables: names, order, parameter ranges, and FLOP sums equal to
 * flops_forward / flops_backward. */
static void
test_dense_layers (void)
{
  const int h[] = { 16, 8 };
  KernModel *m = kern_mlp_new (10, h, 2, 4, KERN_LOSS_MSE, NULL);
  const char *names[] = { "fc1", "relu1", "fc2", "relu2", "fc3", "mse" };
  g_assert_cmpint (m->n_layers, ==, G_N_ELEMENTS (names));
  gsize next = 0;
  for (int i = 0; i < m->n_layers; i++)
    {
      const KernLayer *ly = &m->layers[i];
      g_assert_cmpstr (ly->name, ==, names[i]);
      g_assert_cmpuint (ly->param_offset, ==, next);
      next += ly->params;
    }
  g_assert_cmpuint (next, ==, m->ops->n_params (m));
  g_assert_cmpuint (m->layers[0].params, ==, 10 * 16 + 16);
  g_assert_cmpuint (m->layers[2].params, ==, 16 * 8 + 8);
  g_assert_cmpuint (m->layers[4].params, ==, 8 * 4 + 4);

  KernModel *s = kern_softmax_new (5, 3);
  g_assert_cmpint (s->n_layers, ==, 2);
  g_assert_cmpstr (s->layers[0].name, ==, "fc1");
  g_assert_cmpstr (s->layers[1].name, ==, "xent");

  KernModel *models[] = { m, s };
  for (gsize c = 0; c < G_N_ELEMENTS (models); c++)
    for (int n = 1; n <= 1000; n *= 10)
      {
        const KernModel *x = models[c];
        double f = 0.0, b = 0.0;
        for (int i = 0; i < x->n_layers; i++)
          {
            f += x->layers[i].fwd_flops_fixed + x->layers[i].fwd_flops * n;
            b += x->layers[i].bwd_flops_fixed + x->layers[i].bwd_flops * n;
          }
        g_assert_cmpfloat (x->ops->flops_forward (x, n), ==, f);
        g_assert_cmpfloat (x->ops->flops_backward (x, n), ==, b);
      }
  kern_model_free (m);
  kern_model_free (s);
}

/* MLP FLOPs, d -> h1 -> h2 -> k, by the rule of docs/kernels.md. */
static void
test_mlp_flops (void)
{
  const int shapes[][4] = { { 784, 128, 64, 10 }, { 3, 1, 1, 2 }, { 20, 50, 7, 1 } };
  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (int ni = 1; ni <= 256; ni *= 4)
      {
        double n = ni, d = shapes[s][0], h1 = shapes[s][1], h2 = shapes[s][2],
               k = shapes[s][3];
        KernModel *x = kern_mlp_new (shapes[s][0], shapes[s] + 1, 2, shapes[s][3],
                                     KERN_LOSS_XENT, NULL);
        KernModel *q = kern_mlp_new (shapes[s][0], shapes[s] + 1, 2, shapes[s][3],
                                     KERN_LOSS_MSE, NULL);
        /* three GEMMs onto bias rows; the loss op and the mean of rows */
        double gemms = 2 * n * d * h1 + 2 * n * h1 * h2 + 2 * n * h2 * k;
        double fwd_xent = gemms + n * (3 * k + 1) + (n - 1) + 1;
        double fwd_mse = gemms + n * (3 * k) + (n - 1) + 1;
        /* 1/n; dZ of the loss; per layer dW (2 n in out), db ((n-1) out),
         * dA (2 n in out) except for the first layer */
        double layers = 2 * n * d * h1 + (n - 1) * h1
                        + 2 * (2 * n * h1 * h2) + (n - 1) * h2
                        + 2 * (2 * n * h2 * k) + (n - 1) * k;
        double bwd_xent = 1 + n * (k + 2) + layers;
        double bwd_mse = 1 + n * k + layers;
        g_assert_cmpfloat (x->ops->flops_forward (x, ni), ==, fwd_xent);
        g_assert_cmpfloat (x->ops->flops_backward (x, ni), ==, bwd_xent);
        g_assert_cmpfloat (q->ops->flops_forward (q, ni), ==, fwd_mse);
        g_assert_cmpfloat (q->ops->flops_backward (q, ni), ==, bwd_mse);
        kern_model_free (x);
        kern_model_free (q);
      }
}

/* Bytes of softmax regression's two layers, by the rule of docs/kernels.md
 * (4 bytes per float a kernel reads or writes; weights once per batch). */
static void
test_softmax_bytes (void)
{
  const double d = 784, k = 10;
  KernModel *m = kern_softmax_new (784, 10);
  const KernLayer *fc = &m->layers[0], *xe = &m->layers[1];
  /* forward: read W and b; write bias rows, read x, read and write Z */
  g_assert_cmpfloat (fc->fwd_bytes_fixed, ==, 4 * (d * k + k));
  g_assert_cmpfloat (fc->fwd_bytes, ==, 4 * (k + d + 2 * k));
  /* backward: dW reads x and dZ, writes dW; db reads dZ, writes db */
  g_assert_cmpfloat (fc->bwd_bytes_fixed, ==, 4 * (d * k + k));
  g_assert_cmpfloat (fc->bwd_bytes, ==, 4 * (d + k + k));
  g_assert_cmpfloat (fc->activations, ==, d + k);
  /* loss: reads Z and the label, writes the row loss, the mean reads it;
   * backward writes dZ */
  g_assert_cmpfloat (xe->fwd_bytes_fixed, ==, 0.0);
  g_assert_cmpfloat (xe->fwd_bytes, ==, 4 * (k + 3));
  g_assert_cmpfloat (xe->bwd_bytes, ==, 4 * k);
  g_assert_cmpfloat (xe->activations, ==, 0.0);
  kern_model_free (m);
}

/* 4 bytes per parameter, gradient and optimizer float, plus 4 per
 * activation float of every sample: for d -> h1 -> h2 -> k that is the
 * batch, both hidden outputs and the logits. */
static void
test_model_memory_bytes (void)
{
  const int h[] = { 32, 16 };
  const double d = 20, h1 = 32, h2 = 16, k = 5, n = 64;
  KernModel *m = kern_mlp_new (20, h, 2, 5, KERN_LOSS_XENT, NULL);
  double P = (d + 1) * h1 + (h1 + 1) * h2 + (h2 + 1) * k;
  g_assert_cmpfloat (m->ops->n_params (m), ==, P);
  g_assert_cmpfloat (kern_model_memory_bytes (m, 64, 0), ==,
                     4 * (2 * P) + 4 * n * (d + h1 + h2 + k));
  gsize adam = 2 * (gsize) P;
  g_assert_cmpfloat (kern_model_memory_bytes (m, 64, adam), ==,
                     4 * (2 * P + 2 * P) + 4 * n * (d + h1 + h2 + k));
  g_assert_cmpfloat (kern_model_memory_bytes (m, 0, 0), ==, 4 * (2 * P));
  kern_model_free (m);
}

/* An MLP with Adam on separable blobs: the test loss falls well below its
 * start and the accuracy far above chance. */
static void
test_mlp_training (void)
{
  const int d = 10, k = 5, batch = 32, steps = 300;
  const int h[] = { 32, 16 };
  KernDataset *tr, *te;
  kern_dataset_blobs (2000, 1000, d, k, 1.0, 2025, &tr, &te);
  KernModel *m = kern_mlp_new (d, h, 2, k, KERN_LOSS_XENT, NULL);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  g_autofree float *x = g_new (float, batch * d);
  g_autofree int *y = g_new (int, batch);
  int idx[32];
  m->ops->init (m, params, 1);
  const KernOptConfig cfg = { .kind = &kern_opt_adam, .lr = 1e-2, .beta1 = 0.9,
                              .beta2 = 0.999, .eps = 1e-8, .warmup = 10 };
  KernOptimizer *opt = kern_optimizer_new (&cfg, np);

  double loss0, acc0, loss1, acc1;
  m->ops->evaluate (m, params, te, &loss0, &acc0);
  /* small output weights: loss close to log k */
  g_assert_cmpfloat_with_epsilon (loss0, log ((double) k), 0.1);
  for (int s = 0; s < steps; s++)
    {
      for (int i = 0; i < batch; i++)
        idx[i] = (s * batch + i) % tr->n;
      kern_dataset_gather (tr, idx, batch, x, y);
      m->ops->loss_grad (m, params, x, y, batch, grad);
      kern_optimizer_step (opt, params, grad);
    }
  g_assert_cmpint (kern_optimizer_steps (opt), ==, steps);
  m->ops->evaluate (m, params, te, &loss1, &acc1);
  g_test_message ("test loss %.4f -> %.4f, accuracy %.3f -> %.3f",
                  loss0, loss1, acc0, acc1);
  g_assert_cmpfloat (loss1, <, 0.5 * loss0);
  g_assert_cmpfloat (acc1, >, 3.0 / k);

  kern_optimizer_free (opt);
  kern_dataset_free (tr);
  kern_dataset_free (te);
  kern_model_free (m);
}

/* Scratch sized for a big batch, reused for a small one, gives the small
 * batch's result bit for bit (with hidden layers). */
static void
test_mlp_scratch_reuse (void)
{
  KernDataset *tr;
  kern_dataset_blobs (300, 0, arch_mlp.d, arch_mlp.k, 1.0, 19, &tr, NULL);
  KernModel *fresh = arch_model (&arch_mlp, NULL), *used = arch_model (&arch_mlp, NULL);
  gsize np = fresh->ops->n_params (fresh);
  g_autofree float *params = g_new (float, np);
  g_autofree float *g1 = g_new (float, np);
  g_autofree float *g2 = g_new (float, np);
  fill_params (params, np);
  used->ops->loss_grad (used, params, tr->x, tr->y, 300, g2);
  double l1 = fresh->ops->loss_grad (fresh, params, tr->x, tr->y, 10, g1);
  double l2 = used->ops->loss_grad (used, params, tr->x, tr->y, 10, g2);
  g_assert_cmpfloat (l1, ==, l2);
  g_assert_cmpmem (g1, np * sizeof (float), g2, np * sizeof (float));
  kern_dataset_free (tr);
  kern_model_free (fresh);
  kern_model_free (used);
}

/* --- optimizer ----------------------------------------------------------- */

static void
test_sgd_step (void)
{
  float p[] = { 1.0f, -2.0f, 3.5f, 0.0f };
  const float g[] = { 0.5f, -1.0f, 2.0f, 4.0f };
  const float lr = 0.25f;
  float expect[4];
  for (int i = 0; i < 4; i++)
    expect[i] = p[i] - lr * g[i];
  kern_sgd_step (p, g, 4, lr);
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat (p[i], ==, expect[i]);
  /* these values are exact in binary: 1 - 0.125, -2 + 0.25, 3.5 - 0.5, -1 */
  g_assert_cmpfloat (p[0], ==, 0.875f);
  g_assert_cmpfloat (p[3], ==, -1.0f);

  kern_sgd_step (p, g, 0, lr);                   /* n = 0 is a no-op */
  g_assert_cmpfloat (p[0], ==, 0.875f);

  g_assert_cmpfloat (kern_sgd_flops (0), ==, 0.0);
  g_assert_cmpfloat (kern_sgd_flops (1000), ==, 2.0 * 1000);
}

static void
test_opt_parse (void)
{
  g_assert_true (kern_opt_lookup ("sgd") == &kern_opt_sgd);
  g_assert_true (kern_opt_lookup ("momentum") == &kern_opt_momentum);
  g_assert_true (kern_opt_lookup ("adam") == &kern_opt_adam);
  g_assert_null (kern_opt_lookup ("adamw"));
  g_assert_null (kern_opt_lookup (""));
  g_assert_null (kern_opt_lookup (NULL));
  /* the registry lists each once, and its first is the default */
  const void *const *e = kern_opt_entries ();
  int n_entries = 0;
  for (; e[n_entries]; n_entries++)
    g_assert_true (kern_opt_lookup (((const KernOptKind *) e[n_entries])->name) == e[n_entries]);
  g_assert_cmpint (n_entries, ==, 3);
  g_assert_true (kern_opt_default () == e[0]);

  g_assert_cmpint (kern_opt_state_per_param (&kern_opt_sgd), ==, 0);
  g_assert_cmpint (kern_opt_state_per_param (&kern_opt_momentum), ==, 1);
  g_assert_cmpint (kern_opt_state_per_param (&kern_opt_adam), ==, 2);
}

/* Per parameter: SGD multiply + subtract; momentum 2 for v, 2 for p; Adam
 * 3 for m, 4 for v (g^2 too), 2 bias corrections, sqrt, + eps, lr x,
 * divide, subtract.  Bytes: 4 per float read or written. */
static void
test_opt_costs (void)
{
  const gsize n = 1000;
  g_assert_cmpfloat (kern_opt_flops (&kern_opt_sgd, n), ==, 2.0 * n);
  g_assert_cmpfloat (kern_opt_flops (&kern_opt_sgd, n), ==, kern_sgd_flops (n));
  g_assert_cmpfloat (kern_opt_flops (&kern_opt_momentum, n), ==, (2.0 + 2.0) * n);
  g_assert_cmpfloat (kern_opt_flops (&kern_opt_adam, n), ==,
                     (3.0 + 4.0 + 2.0 + 5.0) * n);
  /* SGD: read p, g, write p; momentum: + read v, write v; Adam: read p, m,
   * v, g, write p, m, v */
  g_assert_cmpfloat (kern_opt_bytes (&kern_opt_sgd, n), ==, 4.0 * 3 * n);
  g_assert_cmpfloat (kern_opt_bytes (&kern_opt_momentum, n), ==, 4.0 * 5 * n);
  g_assert_cmpfloat (kern_opt_bytes (&kern_opt_adam, n), ==, 4.0 * 7 * n);
  g_assert_cmpfloat (kern_opt_flops (&kern_opt_adam, 0), ==, 0.0);
}

/* The SGD optimizer is kern_sgd_step, bit for bit. */
static void
test_opt_sgd (void)
{
  enum { N = 25 };
  float p[N], q[N], g[N];
  fill_wave (p, N, 0.1, 1.0);
  memcpy (q, p, sizeof p);
  fill_wave (g, N, 0.2, 1.0);
  const KernOptConfig cfg = { .kind = &kern_opt_sgd, .lr = 0.3 };
  KernOptimizer *o = kern_optimizer_new (&cfg, N);
  g_assert_cmpint (kern_optimizer_steps (o), ==, 0);
  for (int s = 0; s < 3; s++)
    {
      kern_optimizer_step (o, p, g);
      kern_sgd_step (q, g, N, 0.3f);
    }
  g_assert_cmpint (kern_optimizer_steps (o), ==, 3);
  g_assert_cmpmem (p, sizeof p, q, sizeof q);
  kern_optimizer_free (o);
}

/* Heavy ball after two steps with gradients g1, g2 from p0:
 *   v1 = g1,          p1 = p0 - lr g1
 *   v2 = mu g1 + g2,  p2 = p1 - lr (mu g1 + g2). */
static void
test_opt_momentum (void)
{
  const float p0[] = { 1.0f, -0.5f, 2.0f };
  const float g1[] = { 0.5f, 0.25f, -1.0f }, g2[] = { -0.25f, 1.0f, 0.5f };
  const double lr = 0.1, mu = 0.9;
  float p[3];
  memcpy (p, p0, sizeof p);
  const KernOptConfig cfg = { .kind = &kern_opt_momentum, .lr = lr, .momentum = mu };
  KernOptimizer *o = kern_optimizer_new (&cfg, 3);
  kern_optimizer_step (o, p, g1);
  kern_optimizer_step (o, p, g2);
  for (int i = 0; i < 3; i++)
    {
      double want = p0[i] - lr * g1[i] - lr * (mu * g1[i] + g2[i]);
      g_assert_cmpfloat_with_epsilon (p[i], want, 1e-6);
    }
  kern_optimizer_free (o);
}

/* Adam's first step: m = (1-b1) g and v = (1-b2) g^2, so after the bias
 * corrections m / c1 = g and v / c2 = g^2, and each parameter moves by
 * lr g / (|g| + eps) = lr sign(g) up to a relative eps / |g|.  The second
 * step with the same g again moves by lr g / (|g| + eps): the corrected
 * moments of a constant gradient are that gradient. */
static void
test_opt_adam (void)
{
  const float p0[] = { 1.0f, -0.5f, 2.0f, 0.0f };
  const float g[] = { 0.5f, -0.25f, 3.0f, -1e-3f };
  const double lr = 0.01, eps = 1e-8;
  float p[4];
  memcpy (p, p0, sizeof p);
  const KernOptConfig cfg = { .kind = &kern_opt_adam, .lr = lr, .beta1 = 0.9,
                              .beta2 = 0.999, .eps = eps };
  KernOptimizer *o = kern_optimizer_new (&cfg, 4);
  kern_optimizer_step (o, p, g);
  for (int i = 0; i < 4; i++)
    {
      double sign = g[i] > 0 ? 1.0 : -1.0;
      double step = (double) p0[i] - p[i];
      g_assert_cmpfloat_with_epsilon (step, lr * g[i] / (fabs (g[i]) + eps), 1e-6 * lr);
      g_assert_cmpfloat_with_epsilon (step, lr * sign, lr * (eps / fabs (g[i]) + 1e-5));
    }
  float p1[4];
  memcpy (p1, p, sizeof p);
  kern_optimizer_step (o, p, g);
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat_with_epsilon ((double) p1[i] - p[i],
                                    lr * g[i] / (fabs (g[i]) + eps), 1e-5 * lr);
  g_assert_cmpint (kern_optimizer_steps (o), ==, 2);
  kern_optimizer_free (o);
}

/* Linear warm-up over W = 4 steps: step t moves by lr min(1, t / W) g,
 * i.e. lr/4, lr/2, 3lr/4, then lr from step 4 on. */
static void
test_opt_warmup (void)
{
  const double lr = 0.5;
  const gint64 W = 4;
  float p = 0.0f;
  const float g = 1.0f;
  const KernOptConfig cfg = { .kind = &kern_opt_sgd, .lr = lr, .warmup = W };
  KernOptimizer *o = kern_optimizer_new (&cfg, 1);
  for (gint64 t = 1; t <= 7; t++)
    {
      float before = p;
      kern_optimizer_step (o, &p, &g);
      double want = lr * MIN (1.0, (double) t / W) * g;
      g_assert_cmpfloat_with_epsilon ((double) before - p, want, 1e-6);
    }
  kern_optimizer_free (o);
}

/* kern_optimizer_step_into writes the floats kern_optimizer_step makes in
 * place, step after step (the state advances the same way), for every
 * optimizer, with warm-up, and leaves its source alone; over a length
 * that spans several of its blocks and is not a multiple of them. */
static void
test_opt_step_into (void)
{
  const gsize n = 40009;
  const KernOptKind *const kinds[] = { &kern_opt_sgd, &kern_opt_momentum, &kern_opt_adam };
  GRand *rng = g_rand_new_with_seed (17);
  g_autofree float *a = g_new (float, n);
  g_autofree float *b = g_new (float, n);
  g_autofree float *c = g_new (float, n);
  g_autofree float *g = g_new (float, n);
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      const KernOptConfig cfg = { .kind = kinds[k], .lr = 0.037, .warmup = 3, .momentum = 0.9,
                                  .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
      KernOptimizer *in = kern_optimizer_new (&cfg, n), *out = kern_optimizer_new (&cfg, n);
      for (gsize i = 0; i < n; i++)
        a[i] = b[i] = (float) g_rand_double_range (rng, -1, 1);
      for (int t = 0; t < 5; t++)
        {
          for (gsize i = 0; i < n; i++)
            g[i] = (float) g_rand_double_range (rng, -1, 1);
          kern_optimizer_step (in, a, g);
          memcpy (c, b, n * sizeof (float));
          kern_optimizer_step_into (out, b, c, g);
          g_assert_cmpmem (a, n * sizeof (float), b, n * sizeof (float));
          g_assert_true (memcmp (b, c, n * sizeof (float)) != 0);  /* c: the step before */
        }
      g_assert_cmpint (kern_optimizer_steps (out), ==, 5);
      kern_optimizer_free (in);
      kern_optimizer_free (out);
    }
  g_rand_free (rng);
}

/* The gradients the products read hold no subnormal: the ReLU's backward
 * writes 0 for a subnormal dA (and for a masked one), keeps a normal one
 * and a NaN; the softmax cross-entropy's gradient is 0 where e_j scale / s
 * would be subnormal, that product elsewhere. */
static void
test_cpu_subnormal_flush (void)
{
  KernBackend *be = kern_backend_cpu_new ();
  float dA[] = { FLT_MIN / 4, -FLT_MIN / 2, FLT_MIN, -3.5f, NAN, 2.0f, FLT_MIN / 8 };
  const float A[] = { 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f };
  const float want[] = { 0.0f, 0.0f, FLT_MIN, -3.5f, NAN, 0.0f, 0.0f };
  be->ops->relu_backward (be, dA, A, G_N_ELEMENTS (dA));
  for (gsize i = 0; i < G_N_ELEMENTS (dA); i++)
    if (isnan (want[i]))
      g_assert_true (isnan (dA[i]));
    else
      g_assert_cmpfloat (dA[i], ==, want[i]);

  /* one row, k = 3, the label's logit 100: e_1 = exp(-85) is a normal
   * float (above 2^-126 = exp(-87.3)) whose product with scale / s = 2^-6
   * is subnormal, e_2 = exp(-100) is subnormal itself; the label's e = 1 */
  const float scale = 1.0f / 64.0f;
  float z[] = { 100.0f, 15.0f, 0.0f };
  const int y[] = { 0 };
  float loss;
  be->ops->softmax_xent (be, z, y, 1, 3, scale, &loss, NULL);
  g_assert_cmpfloat (z[1], ==, 0.0f);
  g_assert_cmpfloat (z[2], ==, 0.0f);
  /* e_2 = exp(-10) stays: its product is normal */
  float w[] = { 100.0f, 10.0f, 90.0f };
  be->ops->softmax_xent (be, w, y, 1, 3, scale, &loss, NULL);
  g_assert_cmpfloat (w[1], ==, 0.0f);
  g_assert_cmpfloat (w[2], >=, FLT_MIN);
  g_assert_cmpfloat_with_epsilon (w[2], scale * exp (-10.0) / (1.0 + exp (-10.0)),
                                  1e-6 * scale * exp (-10.0));
  kern_backend_free (be);
}

/* kern_optimizer_step_zero writes what kern_optimizer_step makes of
 * zeros, to the bit, step after step (over whatever dst held before), for
 * every optimizer, across several of its blocks. */
static void
test_opt_step_zero (void)
{
  const gsize n = 40009;
  const KernOptKind *const kinds[] = { &kern_opt_sgd, &kern_opt_momentum, &kern_opt_adam };
  GRand *rng = g_rand_new_with_seed (31);
  g_autofree float *a = g_new (float, n);
  g_autofree float *b = g_new (float, n);
  g_autofree float *g = g_new (float, n);
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      const KernOptConfig cfg = { .kind = kinds[k], .lr = 0.037, .warmup = 3, .momentum = 0.9,
                                  .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
      KernOptimizer *ref = kern_optimizer_new (&cfg, n), *got = kern_optimizer_new (&cfg, n);
      for (int t = 0; t < 4; t++)
        {
          for (gsize i = 0; i < n; i++)
            {
              g[i] = (float) g_rand_double_range (rng, -1, 1);
              a[i] = 0.0f;
              b[i] = (float) t + 1.0f;   /* overwritten */
            }
          kern_optimizer_step (ref, a, g);
          kern_optimizer_step_zero (got, b, g);
          g_assert_cmpmem (a, n * sizeof (float), b, n * sizeof (float));
        }
      kern_optimizer_free (ref);
      kern_optimizer_free (got);
    }
  g_rand_free (rng);
}

/* kern_optimizer_step_scaled is the gradient multiplied by the scale,
 * then kern_optimizer_step, to the bit (the gradient left scaled), for
 * every optimizer, step after step, across several of its blocks. */
static void
test_opt_step_scaled (void)
{
  const gsize n = 40009;
  const float scale = 1.0f / 64.0f * 3.0f;
  const KernOptKind *const kinds[] = { &kern_opt_sgd, &kern_opt_momentum, &kern_opt_adam };
  GRand *rng = g_rand_new_with_seed (29);
  g_autofree float *a = g_new (float, n);
  g_autofree float *b = g_new (float, n);
  g_autofree float *ga = g_new (float, n);
  g_autofree float *gb = g_new (float, n);
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      const KernOptConfig cfg = { .kind = kinds[k], .lr = 0.037, .warmup = 3, .momentum = 0.9,
                                  .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
      KernOptimizer *ref = kern_optimizer_new (&cfg, n), *got = kern_optimizer_new (&cfg, n);
      for (gsize i = 0; i < n; i++)
        a[i] = b[i] = (float) g_rand_double_range (rng, -1, 1);
      for (int t = 0; t < 4; t++)
        {
          for (gsize i = 0; i < n; i++)
            {
              gb[i] = (float) g_rand_double_range (rng, -1, 1);
              ga[i] = gb[i] * scale;
            }
          kern_optimizer_step (ref, a, ga);
          kern_optimizer_step_scaled (got, b, gb, scale);
          g_assert_cmpmem (a, n * sizeof (float), b, n * sizeof (float));
          g_assert_cmpmem (ga, n * sizeof (float), gb, n * sizeof (float));
        }
      g_assert_cmpint (kern_optimizer_steps (got), ==, 4);
      kern_optimizer_free (ref);
      kern_optimizer_free (got);
    }
  g_rand_free (rng);
}

/* kern_optimizer_mix_step = the weighted sum of the sources, in order,
 * then one step (or none without a gradient), for every optimizer (to
 * float rounding: SGD fuses both in one pass), over a length that spans
 * several of its blocks and is not a multiple of them. */
static void
test_opt_mix_step (void)
{
  const gsize n = 40009;
  const KernOptKind *const kinds[] = { &kern_opt_sgd, &kern_opt_momentum, &kern_opt_adam };
  const float weights[] = { 0.5f, 0.3f, 0.2f };
  GRand *rng = g_rand_new_with_seed (23);
  float *src[3];
  for (int j = 0; j < 3; j++)
    src[j] = g_new (float, n);
  g_autofree float *want = g_new (float, n);
  g_autofree float *got = g_new (float, n);
  g_autofree float *g = g_new (float, n);
  for (gsize k = 0; k <= G_N_ELEMENTS (kinds); k++)  /* the last: no step */
    {
      gboolean step = k < G_N_ELEMENTS (kinds);
      const KernOptConfig cfg = { .kind = step ? kinds[k] : &kern_opt_sgd, .lr = 0.05,
                                  .warmup = 2, .momentum = 0.9, .beta1 = 0.9,
                                  .beta2 = 0.999, .eps = 1e-8 };
      KernOptimizer *ref = kern_optimizer_new (&cfg, n), *fused = kern_optimizer_new (&cfg, n);
      for (int t = 0; t < 3; t++)
        {
          for (gsize i = 0; i < n; i++)
            {
              for (int j = 0; j < 3; j++)
                src[j][i] = (float) g_rand_double_range (rng, -1, 1);
              g[i] = (float) g_rand_double_range (rng, -1, 1);
              want[i] = weights[0] * src[0][i] + weights[1] * src[1][i] + weights[2] * src[2][i];
            }
          if (step)
            kern_optimizer_step (ref, want, g);
          kern_optimizer_mix_step (step ? fused : NULL, got, 3, (const float *const *) src,
                                   weights, step ? g : NULL, n);
          for (gsize i = 0; i < n; i++)
            g_assert_cmpfloat_with_epsilon (want[i], got[i], 1e-6 * MAX (1.0, fabs (want[i])));
        }
      g_assert_cmpint (kern_optimizer_steps (fused), ==, step ? 3 : 0);
      kern_optimizer_free (ref);
      kern_optimizer_free (fused);
    }
  for (int j = 0; j < 3; j++)
    g_free (src[j]);
  g_rand_free (rng);
}

/* The weight shapes a model gives its layers are where its math reads
 * them: for softmax regression, the gradient at W's (i, j) is
 * sum_n x[n, i] dZ[n, j] and at the bias's j sum_n dZ[n, j], with dZ =
 * (softmax(x W + b) - onehot(y)) / n read through the shapes; for an MLP
 * the shapes chain (each layer's rows are the previous one's columns) and
 * cover every parameter once. */
static void
test_layer_weights (void)
{
  const int d = 4, k = 3, n = 5;
  KernModel *m = kern_mlp_new (d, NULL, 0, k, KERN_LOSS_XENT, NULL);
  gsize P = m->ops->n_params (m);
  g_autofree float *params = g_new (float, P), *grad = g_new (float, P);
  g_autofree float *x = g_new (float, n * d);
  int y[] = { 0, 2, 1, 2, 0 };
  GRand *rng = g_rand_new_with_seed (4);
  for (gsize i = 0; i < P; i++)
    params[i] = (float) g_rand_double_range (rng, -1, 1);
  for (int i = 0; i < n * d; i++)
    x[i] = (float) g_rand_double_range (rng, -1, 1);
  g_rand_free (rng);
  m->ops->loss_grad (m, params, x, y, n, grad);
  const KernLayer *fc = &m->layers[0];
  g_assert_cmpint (fc->n_weights, ==, 1);
  const KernWeight *w = &fc->weight[0];
  g_assert_cmpint (w->rows, ==, d);
  g_assert_cmpint (w->cols, ==, k);
  g_assert_true (w->has_bias);
  g_assert_cmpuint (w->offset, ==, fc->param_offset);
  g_assert_cmpuint ((gsize) w->rows * w->cols + w->cols, ==, fc->params);
  double dz[5][3];
  for (int r = 0; r < n; r++)
    {
      double z[3], zmax = -INFINITY, sum = 0;
      for (int j = 0; j < k; j++)
        {
          z[j] = params[w->bias + j];
          for (int i = 0; i < d; i++)
            z[j] += (double) x[r * d + i] * params[w->offset + (gsize) i * w->cols + j];
          zmax = MAX (zmax, z[j]);
        }
      for (int j = 0; j < k; j++)
        sum += exp (z[j] - zmax);
      for (int j = 0; j < k; j++)
        dz[r][j] = (exp (z[j] - zmax) / sum - (y[r] == j)) / n;
    }
  for (int j = 0; j < k; j++)
    {
      double db = 0;
      for (int r = 0; r < n; r++)
        db += dz[r][j];
      g_assert_cmpfloat (fabs (grad[w->bias + j] - db), <, 1e-6);
      for (int i = 0; i < d; i++)
        {
          double dw = 0;
          for (int r = 0; r < n; r++)
            dw += x[r * d + i] * dz[r][j];
          g_assert_cmpfloat (fabs (grad[w->offset + (gsize) i * w->cols + j] - dw), <, 1e-6);
        }
    }
  kern_model_free (m);

  int hidden[] = { 7, 6 };
  m = kern_mlp_new (5, hidden, 2, 3, KERN_LOSS_XENT, NULL);
  gsize covered = 0;
  int prev_cols = 5;
  for (int l = 0; l < m->n_layers; l++)
    for (int q = 0; q < m->layers[l].n_weights; q++)
      {
        const KernWeight *v = &m->layers[l].weight[q];
        g_assert_cmpint (v->rows, ==, prev_cols);
        g_assert_cmpuint (v->offset, ==, covered);
        covered += (gsize) v->rows * v->cols + (v->has_bias ? (gsize) v->cols : 0);
        prev_cols = v->cols;
      }
  g_assert_cmpint (prev_cols, ==, 3);
  g_assert_cmpuint (covered, ==, m->ops->n_params (m));
  kern_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/kernels/blobs/deterministic", test_blobs_deterministic);
  g_test_add_func ("/kernels/blobs/labels", test_blobs_labels);
  g_test_add_func ("/kernels/blobs/scales", test_blobs_scales);
  g_test_add_func ("/kernels/dataset/gather", test_dataset_gather);
  g_test_add_func ("/kernels/softmax/init", test_softmax_init);
  g_test_add_func ("/kernels/softmax/reference", test_softmax_reference);
  g_test_add_func ("/kernels/softmax/large-logits", test_softmax_large_logits);
  g_test_add_func ("/kernels/softmax/gradient-check", test_softmax_gradient_check);
  g_test_add_func ("/kernels/softmax/scratch-reuse", test_softmax_scratch_reuse);
  g_test_add_func ("/kernels/softmax/training", test_softmax_training);
  g_test_add_func ("/kernels/softmax/flops", test_softmax_flops);
  g_test_add_func ("/kernels/softmax/bytes", test_softmax_bytes);
  g_test_add_func ("/kernels/cpu/gemm", test_cpu_gemm);
  g_test_add_func ("/kernels/gemm/fixed", test_gemm_fixed);
  g_test_add_func ("/kernels/gemm/widths", test_gemm_widths);
  g_test_add_func ("/kernels/gemm/kernel-name", test_gemm_kernel_name);
  g_test_add_func ("/kernels/blas/lazy", test_blas_lazy);
  g_test_add_func ("/kernels/blas/missing", test_blas_missing);
  g_test_add_func ("/kernels/fmath/accuracy", test_fmath_accuracy);
  g_test_add_func ("/kernels/cpu/fill-rows", test_cpu_fill_rows);
  g_test_add_func ("/kernels/cpu/col-sum", test_cpu_col_sum);
  g_test_add_func ("/kernels/cpu/relu", test_cpu_relu);
  g_test_add_func ("/kernels/cpu/softmax-xent", test_cpu_softmax_xent);
  g_test_add_func ("/kernels/cpu/mse", test_cpu_mse);
  g_test_add_func ("/kernels/cpu/optimizer-ops", test_cpu_optimizer_ops);
  g_test_add_func ("/kernels/cpu/optimizer-bits", test_cpu_optimizer_bits);
  g_test_add_func ("/kernels/cpu/subnormal-flush", test_cpu_subnormal_flush);
  g_test_add_func ("/kernels/cpu/transfers", test_cpu_transfers);
  g_test_add_func ("/kernels/backend/new", test_backend_new);
  g_test_add_func ("/kernels/dense/names", test_dense_names);
  g_test_add_func ("/kernels/dense/init", test_dense_init);
  g_test_add_func ("/kernels/dense/reference", test_dense_reference);
  g_test_add_func ("/kernels/dense/groups", test_dense_groups);
  g_test_add_func ("/kernels/dense/grad-sum", test_dense_grad_sum);
  g_test_add_func ("/kernels/dense/staged-backend", test_dense_staged_backend);
  g_test_add_func ("/kernels/dense/layers", test_dense_layers);
  g_test_add_func ("/kernels/linear/gradient-check", test_linear_gradient_check);
  g_test_add_func ("/kernels/mlp/gradient-check", test_mlp_gradient_check);
  g_test_add_func ("/kernels/mlp/flops", test_mlp_flops);
  g_test_add_func ("/kernels/mlp/scratch-reuse", test_mlp_scratch_reuse);
  g_test_add_func ("/kernels/mlp/training", test_mlp_training);
  g_test_add_func ("/kernels/model/memory-bytes", test_model_memory_bytes);
  g_test_add_func ("/kernels/sgd/step", test_sgd_step);
  g_test_add_func ("/kernels/optim/parse", test_opt_parse);
  g_test_add_func ("/kernels/optim/costs", test_opt_costs);
  g_test_add_func ("/kernels/optim/sgd", test_opt_sgd);
  g_test_add_func ("/kernels/optim/momentum", test_opt_momentum);
  g_test_add_func ("/kernels/optim/adam", test_opt_adam);
  g_test_add_func ("/kernels/optim/warmup", test_opt_warmup);
  g_test_add_func ("/kernels/optim/step-into", test_opt_step_into);
  g_test_add_func ("/kernels/optim/step-scaled", test_opt_step_scaled);
  g_test_add_func ("/kernels/optim/step-zero", test_opt_step_zero);
  g_test_add_func ("/kernels/optim/mix-step", test_opt_mix_step);
  g_test_add_func ("/kernels/model/layer-weights", test_layer_weights);

  return g_test_run ();
}
