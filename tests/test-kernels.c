/*
 * test-kernels.c — value tests of the training-math kernels.
 *
 * Checks the blobs generator (determinism, label range, noise and centre
 * scales), gather, the softmax model against a plain double-precision
 * reference and against central finite differences, training progress under
 * SGD, the exact FLOP formulas, and the SGD update itself.  Every random
 * input comes from an explicit seed, so each run checks the same numbers.
 */
#include "kernels/kernels.h"

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

/* Analytic gradient against central differences, every parameter (weights
 * and biases).
 *
 * Parameters are float, so p +/- eps is rounded; the step actually taken,
 * h = (double)(p+eps) - (double)(p-eps), is used as the denominator.  The
 * loss comes back in double but is computed from float logits, so each loss
 * carries a rounding error of about 1e-7 * loss; with eps = 1e-2 that gives
 * a difference-quotient error of about 1e-7 * 2 / 2e-2 = 1e-5, and the
 * truncation error eps^2 * |f'''| / 6 is below 1e-4 for these O(1) logits.
 * Hence per element |g_a - g_fd| <= atol + rtol * |g_fd| with atol = 5e-4,
 * rtol = 1e-2, and globally max|g_a - g_fd| / max|g_fd| < 1e-2.  A wrong
 * gradient (a missing 1/n, a transposed dW, a forgotten one-hot) is off by
 * O(|g|), far outside both bounds. */
static void
check_gradient (int n, int d, int k, guint64 seed)
{
  KernDataset *tr;
  kern_dataset_blobs (n, 0, d, k, 1.5, seed, &tr, NULL);
  KernModel *m = kern_softmax_new (d, k);
  gsize np = m->ops->n_params (m);
  g_autofree float *params = g_new (float, np);
  g_autofree float *grad = g_new (float, np);
  fill_params (params, np);

  m->ops->loss_grad (m, params, tr->x, tr->y, n, grad);

  const float eps = 1e-2f;
  const double atol = 5e-4, rtol = 1e-2;
  double max_err = 0.0, max_fd = 0.0;
  int bad = 0;
  for (gsize i = 0; i < np; i++)
    {
      float p0 = params[i];
      float pp = p0 + eps, pm = p0 - eps;
      params[i] = pp;
      double lp = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
      params[i] = pm;
      double lm = m->ops->loss_grad (m, params, tr->x, tr->y, n, NULL);
      params[i] = p0;
      double g_fd = (lp - lm) / ((double) pp - (double) pm);
      double err = fabs (grad[i] - g_fd);
      max_err = MAX (max_err, err);
      max_fd = MAX (max_fd, fabs (g_fd));
      if (err > atol + rtol * fabs (g_fd) && bad++ < 5)
        g_test_message ("param %" G_GSIZE_FORMAT " (%s): analytic %.6g, "
                        "finite difference %.6g", i,
                        i < (gsize) d * k ? "W" : "b", grad[i], g_fd);
    }
  g_test_message ("n=%d d=%d k=%d: max|g_a - g_fd| = %.3g, max|g_fd| = %.3g",
                  n, d, k, max_err, max_fd);
  g_assert_cmpint (bad, ==, 0);
  g_assert_cmpfloat (max_fd, >, 1e-3);          /* the check is not vacuous */
  g_assert_cmpfloat (max_err / max_fd, <, 1e-2);

  kern_dataset_free (tr);
  kern_model_free (m);
}

static void
test_softmax_gradient_check (void)
{
  check_gradient (16, 5, 4, 21);
  check_gradient (1, 3, 2, 22);      /* single sample, two classes */
  check_gradient (37, 8, 10, 23);    /* odd batch, more classes than rows/4 */
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
  g_test_add_func ("/kernels/sgd/step", test_sgd_step);

  return g_test_run ();
}
