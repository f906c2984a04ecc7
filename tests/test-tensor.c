/*
 * test-tensor.c — tensor-parallel math (kernels/tensor.c) against the
 * model on one device.
 *
 * The core claim: for MLPs of 1, 2 and 3 hidden layers and T = 1, 2, 4
 * ranks, kern_tensor_loss_grad() gives the loss and gradient of the
 * model's own loss_grad, within a bound derived below, on the fixed-order
 * CPU backend and on OpenBLAS alike; T = 1 gives the same bits; a few SGD
 * steps stay within a bound carried from step to step; central
 * differences of the exact loss agree with the split gradient; the
 * all-reduces, the parameters each rank holds and the refusals follow
 * their closed forms.  kern_tensor_loss_grad_groups() over G stacked
 * batches gives what G calls of kern_tensor_loss_grad() give: the same
 * bits on the fixed-order backend, within the bound below on OpenBLAS.
 *
 * --- The bound -------------------------------------------------------------
 *
 * The two computations run the same formulas on the same floats; what
 * differs is the order of some sums.  A row-split layer's output is each
 * rank's partial sum over its in / T inputs, rounded, then the T partials
 * added in rank order and the bias added last; a column-split layer's input
 * gradient likewise over out / T columns then T partials.  Any order of a
 * float sum of K products (plus a bias) is within gamma(K) sum|terms| of
 * the exact sum, gamma(K) = K u / (1 - K u), u = 2^-24, K the length of
 * the longest chain of roundings any term goes through: for the split
 * sums in / T + T <= in + 1 and out / T + T - 1 <= out, the one-device
 * bounds.  Once one sum differs, every later operation sees different
 * inputs, so its rounding no longer cancels either; the test therefore
 * bounds each computation's distance from the exact value of the formulas
 * (computed in double at the same float inputs), and the two are within
 * the sum of their two bounds.  That is "2 gamma(K) sum|a_i b_i|" of each
 * differing sum, carried to first order through the network:
 *
 * For every quantity X the test computes X' in double and a bound e_X with
 * |X_computed - X'| <= e_X; M_X = |X'| + e_X bounds both.  Products of
 * bounds are products of non-negative matrices.
 *
 * (G) C = A B (+ c), K terms:  e_C = gamma(K) (M_A M_B + M_c) + e_A M_B
 *     + M_A e_B + e_c.  Forward Z = A W + b: K = in + 1; dW = A^T dZ:
 *     K = n; dA = dZ W^T: K = out.  e_W, e_b are 0 unless the two sides
 *     start from different parameters (training, below).
 * (C) col_sum of n rows: e_db = gamma(n) sum M_dZ + sum e_dZ.
 * (R) ReLU is 1-Lipschitz and exact: e_A = e_Z.
 * (K) Mask: where |Z'| > 2 e_Z the sign is certain and e_dZ = mask e_dA;
 *     elsewhere either mask may hold, e_dZ = M_dA.
 * (S) Softmax cross-entropy (cpu.c; the rule of docs/kernels.md, "Tests
 *     and the tolerance rule"): per row with d = max_j e_Z and range
 *     R = max - min + 2 d, each probability is off by a factor within
 *     e^(+-lambda), lambda = 2 d + (2 R + 16) u; e_dZ_j = s p_j
 *     (e^lambda - 1)(1 + u) + u s |p_j - onehot_j| + FLT_MIN; the row
 *     loss e = l + u (|loss'| + l), l = 2 d + (2 R + 6) u.
 * (M) Squared error (cpu.c): t = z - onehot rounds once, e_t = e_Z + u M_t
 *     with M_t = |t'| + e_Z (1 + u); squares round once and are summed in
 *     double (k terms: k 2^-53 relative), the half rounds once:
 *     delta = 1/2 sum_j ((2 |t'_j| + e_t) e_t + (u + k 2^-53) M_t^2),
 *     e_loss = delta + u (loss' + delta); the gradient s t rounds once:
 *     e_dZ = s e_t + u s M_t.
 * (L) The mean of n row losses, summed in double: the mean of their
 *     bounds plus n 2^-52 |mean|.
 * (U) An SGD step p - lr g (with or without a fused multiply-add) from
 *     parameters within e_p of p': within (1 + u)(e_p + lr e_g + u lr M_g)
 *     + u |p' - lr g'| of the exact step.
 *
 * The double reference is itself off the exact values by gamma(K) with
 * 2^-53 in place of u, 2^-29 of the float bounds: every bound is rounded up
 * by REF_SLACK, and the "2" of (K) leaves the same room.  The first-order
 * products e_A e_W are kept (M includes e), so the bound is not only
 * first-order but closed.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

#define U 0x1.0p-24
#define REF_SLACK (1.0 + 0x1.0p-20)
#define MAX_REPORT 8

static double
gamma_n (int n)
{
  return n * U / (1.0 - n * U);
}

/* C (m, n) (+)= op(A) op(B) in double: A is (m, k) after op (stored (k, m)
 * when ta), B (k, n) after op (stored (n, k) when tb). */
static void
dmm (gboolean ta, gboolean tb, int m, int n, int k, const double *A, const double *B,
     gboolean acc, double *C)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      {
        double s = acc ? C[(gsize) i * n + j] : 0.0;
        for (int q = 0; q < k; q++)
          s += (ta ? A[(gsize) q * m + i] : A[(gsize) i * k + q])
               * (tb ? B[(gsize) j * k + q] : B[(gsize) q * n + j]);
        C[(gsize) i * n + j] = s;
      }
}

/* M = |x| + e over len elements (e may be NULL: 0). */
static double *
magnitude (const double *x, const double *e, gsize len)
{
  double *m = g_new (double, len);
  for (gsize i = 0; i < len; i++)
    m[i] = fabs (x[i]) + (e != NULL ? e[i] : 0.0);
  return m;
}

/* --- the network, exactly, with its bound --------------------------------- */

/* A dense network as mlp.c builds it: widths (n_dense + 1), W_l then b_l. */
typedef struct {
  int n_dense;
  int width[8];
  gsize w_off[8];
  gsize n_params;
  KernLoss loss;
} Net;

static Net
net_make (int d, const int *hidden, int n_hidden, int k, KernLoss loss)
{
  Net net = { .n_dense = n_hidden + 1, .loss = loss };
  g_assert_cmpint (net.n_dense, <, 8);
  net.width[0] = d;
  for (int i = 0; i < n_hidden; i++)
    net.width[i + 1] = hidden[i];
  net.width[net.n_dense] = k;
  for (int l = 0; l < net.n_dense; l++)
    {
      net.w_off[l] = net.n_params;
      net.n_params += (gsize) net.width[l] * net.width[l + 1] + net.width[l + 1];
    }
  return net;
}

/* What Ref computes: the exact loss and gradient at float parameters P,
 * and bounds on a float computation's distance from them when that
 * computation starts from parameters within e_p of P. */
typedef struct {
  double loss, loss_err;
  double *grad, *grad_err;  /* (n_params) */
} Ref;

static void
ref_clear (Ref *r)
{
  g_free (r->grad);
  g_free (r->grad_err);
}

/* Rules (S) and (M) on logits Z, eZ (n, k), scale s: the mean loss and
 * its bound into r, dZ and e_dZ (n, k). */
static void
ref_loss (const Net *net, Ref *r, const double *Z, const double *eZ, const int *y, int n,
          double s, double *dZ, double *e_dZ)
{
  int k = net->width[net->n_dense];
  r->loss = r->loss_err = 0.0;
  for (int i = 0; i < n; i++)
    {
      const double *z = Z + (gsize) i * k, *ez = eZ + (gsize) i * k;
      double loss, err;
      if (net->loss == KERN_LOSS_XENT)
        {
          int top = 0;
          double d = 0.0, zmin = z[0], sum = 0.0;
          for (int j = 0; j < k; j++)
            {
              d = MAX (d, ez[j]);
              zmin = MIN (zmin, z[j]);
              top = z[j] > z[top] ? j : top;
            }
          for (int j = 0; j < k; j++)
            sum += exp (z[j] - z[top]);
          double range = z[top] - zmin + 2.0 * d;
          double l = 2.0 * d + (2.0 * range + 6.0) * U;
          double lambda = 2.0 * d + (2.0 * range + 16.0) * U;
          loss = log (sum) - (z[y[i]] - z[top]);
          err = l + U * (fabs (loss) + l);
          for (int j = 0; j < k; j++)
            {
              double pj = exp (z[j] - z[top]) / sum, t = pj - (j == y[i]);
              dZ[(gsize) i * k + j] = s * t;
              e_dZ[(gsize) i * k + j] = s * pj * expm1 (lambda) * (1.0 + U)
                                        + U * s * fabs (t) + FLT_MIN;
            }
        }
      else
        {
          double delta = 0.0, ss = 0.0;
          for (int j = 0; j < k; j++)
            {
              double t = z[j] - (j == y[i]);
              double Mt = fabs (t) + ez[j] * (1.0 + U);
              double et = ez[j] + U * Mt;
              ss += t * t;
              delta += (2.0 * fabs (t) + et) * et + (U + k * 0x1.0p-53) * Mt * Mt;
              dZ[(gsize) i * k + j] = s * t;
              e_dZ[(gsize) i * k + j] = s * et + U * s * Mt;
            }
          loss = 0.5 * ss;
          delta *= 0.5;
          err = delta + U * (loss + delta);
        }
      r->loss += loss / n;
      r->loss_err += err / n;
    }
  r->loss_err += n * DBL_EPSILON * fabs (r->loss);
}

/* Rules (G), (C), (K) backward from dZ of the last layer; the activations
 * Z[l], eZ[l] and (hidden layers) act[l] from the forward pass. */
static void
ref_backward (const Net *net, Ref *r, const float *P, const double *ep, const double *xd,
              double **Z, double **eZ, double **act, int n, double *dZ, double *e_dZ)
{
  for (int l = net->n_dense - 1; l >= 0; l--)
    {
      int in = net->width[l], out = net->width[l + 1];
      gsize nw = (gsize) in * out, off = net->w_off[l];
      const double *A = l == 0 ? xd : act[l - 1];
      const double *eA = l == 0 ? NULL : eZ[l - 1];
      g_autofree double *MA = magnitude (A, eA, (gsize) n * in);
      g_autofree double *MdZ = magnitude (dZ, e_dZ, (gsize) n * out);
      double *dW = r->grad + off, *edW = r->grad_err + off;
      dmm (TRUE, FALSE, in, out, n, A, dZ, FALSE, dW);
      dmm (TRUE, FALSE, in, out, n, MA, MdZ, FALSE, edW);
      for (gsize q = 0; q < nw; q++)
        edW[q] *= gamma_n (n);
      dmm (TRUE, FALSE, in, out, n, MA, e_dZ, TRUE, edW);
      if (eA != NULL)
        dmm (TRUE, FALSE, in, out, n, eA, MdZ, TRUE, edW);
      for (int j = 0; j < out; j++)
        {
          double s = 0.0, ms = 0.0, es = 0.0;
          for (int i = 0; i < n; i++)
            {
              s += dZ[(gsize) i * out + j];
              ms += MdZ[(gsize) i * out + j];
              es += e_dZ[(gsize) i * out + j];
            }
          dW[nw + j] = s;
          edW[nw + j] = gamma_n (n) * ms + es;
        }
      if (l == 0)
        break;
      g_autofree double *W = g_new (double, nw);
      g_autofree double *MW = g_new (double, nw);
      g_autofree double *eW = g_new0 (double, nw);
      for (gsize q = 0; q < nw; q++)
        {
          W[q] = P[off + q];
          eW[q] = ep != NULL ? ep[off + q] : 0.0;
          MW[q] = fabs (W[q]) + eW[q];
        }
      g_autofree double *dA = g_new (double, (gsize) n * in);
      g_autofree double *edA = g_new (double, (gsize) n * in);
      dmm (FALSE, TRUE, n, in, out, dZ, W, FALSE, dA);
      dmm (FALSE, TRUE, n, in, out, MdZ, MW, FALSE, edA);
      for (gsize q = 0; q < (gsize) n * in; q++)
        edA[q] *= gamma_n (out);
      dmm (FALSE, TRUE, n, in, out, e_dZ, MW, TRUE, edA);
      dmm (FALSE, TRUE, n, in, out, MdZ, eW, TRUE, edA);
      for (gsize q = 0; q < (gsize) n * in; q++)
        {
          double z = Z[l - 1][q], ez = eZ[l - 1][q];
          dZ[q] = z > 0.0 ? dA[q] : 0.0;
          if (fabs (z) <= 2.0 * ez)
            e_dZ[q] = fabs (dA[q]) + edA[q];
          else
            e_dZ[q] = z > 0.0 ? edA[q] : 0.0;
        }
    }
}

/* Forward by rules (G), (R) at parameters P (float) from parameters within
 * ep of them (NULL: the same), loss by (S) or (M), (L), and backward:
 * the exact values and bounds of a float computation of the loss and
 * gradient of the batch x (n, d), y (n).  The gradient's scale is the
 * float 1 / n both computations use. */
static Ref
ref_new (const Net *net, const float *P, const double *ep, const float *x, const int *y,
         int n)
{
  Ref r = { .grad = g_new0 (double, net->n_params),
            .grad_err = g_new0 (double, net->n_params) };
  int widest = 0;
  for (int l = 0; l <= net->n_dense; l++)
    widest = MAX (widest, net->width[l]);
  g_autofree double *xd = g_new (double, (gsize) n * net->width[0]);
  for (gsize q = 0; q < (gsize) n * net->width[0]; q++)
    xd[q] = x[q];
  double *Z[8] = { 0 }, *eZ[8] = { 0 }, *act[8] = { 0 };
  for (int l = 0; l < net->n_dense; l++)
    {
      int in = net->width[l], out = net->width[l + 1];
      gsize nw = (gsize) in * out, off = net->w_off[l];
      const double *A = l == 0 ? xd : act[l - 1];
      const double *eA = l == 0 ? NULL : eZ[l - 1];
      g_autofree double *MA = magnitude (A, eA, (gsize) n * in);
      g_autofree double *W = g_new (double, nw);
      g_autofree double *MW = g_new (double, nw);
      g_autofree double *eW = g_new0 (double, nw);
      for (gsize q = 0; q < nw; q++)
        {
          W[q] = P[off + q];
          eW[q] = ep != NULL ? ep[off + q] : 0.0;
          MW[q] = fabs (W[q]) + eW[q];
        }
      Z[l] = g_new (double, (gsize) n * out);
      eZ[l] = g_new (double, (gsize) n * out);
      g_autofree double *eb = g_new (double, (gsize) n * out);
      for (int i = 0; i < n; i++)
        for (int j = 0; j < out; j++)
          {
            double b = P[off + nw + j], e = ep != NULL ? ep[off + nw + j] : 0.0;
            Z[l][(gsize) i * out + j] = b;
            eZ[l][(gsize) i * out + j] = fabs (b) + e;
            eb[(gsize) i * out + j] = e;
          }
      dmm (FALSE, FALSE, n, out, in, A, W, TRUE, Z[l]);
      dmm (FALSE, FALSE, n, out, in, MA, MW, TRUE, eZ[l]);
      for (gsize q = 0; q < (gsize) n * out; q++)
        eZ[l][q] = eZ[l][q] * gamma_n (in + 1) + eb[q];
      dmm (FALSE, FALSE, n, out, in, MA, eW, TRUE, eZ[l]);
      if (eA != NULL)
        dmm (FALSE, FALSE, n, out, in, eA, MW, TRUE, eZ[l]);
      if (l < net->n_dense - 1)
        {
          act[l] = g_new (double, (gsize) n * out);
          for (gsize q = 0; q < (gsize) n * out; q++)
            act[l][q] = MAX (Z[l][q], 0.0);
        }
    }
  double s = (double) (1.0f / (float) n);
  g_autofree double *dZ = g_new (double, (gsize) n * widest);
  g_autofree double *e_dZ = g_new (double, (gsize) n * widest);
  ref_loss (net, &r, Z[net->n_dense - 1], eZ[net->n_dense - 1], y, n, s, dZ, e_dZ);
  ref_backward (net, &r, P, ep, xd, Z, eZ, act, n, dZ, e_dZ);
  for (gsize q = 0; q < net->n_params; q++)
    r.grad_err[q] *= REF_SLACK;
  r.loss_err *= REF_SLACK;
  for (int l = 0; l < net->n_dense; l++)
    {
      g_free (Z[l]);
      g_free (eZ[l]);
      g_free (act[l]);
    }
  return r;
}

/* Elements i < len with |a[i] - b[i]| > tol[i] (NaN counts); the first
 * ones are printed; *worst = the largest |a - b| / tol. */
static gsize
count_beyond (const char *what, const float *a, const float *b, const double *tol,
              gsize len, double *worst)
{
  gsize bad = 0;
  *worst = 0.0;
  for (gsize i = 0; i < len; i++)
    {
      double diff = fabs ((double) a[i] - (double) b[i]);
      if (!(diff <= tol[i]))
        {
          if (bad < MAX_REPORT)
            g_test_message ("%s: [%" G_GSIZE_FORMAT "] %.9g vs %.9g |diff| %.3g bound %.3g",
                            what, i, a[i], b[i], diff, tol[i]);
          bad++;
        }
      *worst = MAX (*worst, tol[i] > 0.0 ? diff / tol[i] : diff > 0.0 ? INFINITY : 0.0);
    }
  return bad;
}

/* --- cases ----------------------------------------------------------------- */

enum { D = 12, K = 4, BATCH = 24 };

static const int HIDDEN[] = { 16, 8, 12 };

/* Seeded data and parameters: blobs for x, y; the model's own
 * initialisation, then small random biases (the model starts them at 0,
 * which would hide a misplaced bias). */
static void
make_case (KernModel *m, guint64 seed, float **params, float **x, int **y, int n)
{
  KernDataset *train, *test;
  kern_dataset_blobs (n, 1, m->d, m->k, 2.0, seed, &train, &test);
  *x = g_memdup2 (train->x, (gsize) n * m->d * sizeof (float));
  *y = g_memdup2 (train->y, (gsize) n * sizeof (int));
  kern_dataset_free (train);
  kern_dataset_free (test);
  gsize np = m->ops->n_params (m);
  *params = g_new (float, np);
  m->ops->init (m, *params, seed);
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_BLOBS + 1);
  for (int i = 0; i < m->n_layers; i++)
    if (m->layers[i].n_weights == 1)
      {
        const KernWeight *w = &m->layers[i].weight[0];
        for (int j = 0; j < w->cols; j++)
          (*params)[w->bias + j] = (float) (0.1 * kern_rng_normal (&rng));
      }
}

/* The comparison of one model, T and backend: loss and gradient within
 * twice the bound of each from the exact values; T = 1 bit for bit;
 * the loss without gradient the same bits; a second call the same bits. */
static void
check_equivalent (int n_hidden, KernLoss loss, int T, gboolean reproducible)
{
  KernBackend *be = kern_backend_cpu_new_full (reproducible);
  KernModel *m = kern_mlp_new (D, HIDDEN, n_hidden, K, loss, be);
  Net net = net_make (D, HIDDEN, n_hidden, K, loss);
  g_assert_cmpuint (net.n_params, ==, m->ops->n_params (m));
  float *params, *x;
  int *y;
  make_case (m, 17 + n_hidden, &params, &x, &y, BATCH);

  GError *error = NULL;
  KernTensorPlan *plan = kern_tensor_plan_new (m, T, &error);
  g_assert_no_error (error);
  g_autofree float *g_one = g_new (float, net.n_params);
  g_autofree float *g_tp = g_new (float, net.n_params);
  g_autofree float *g_again = g_new (float, net.n_params);
  double l_one = m->ops->loss_grad (m, params, x, y, BATCH, g_one);
  double l_tp = kern_tensor_loss_grad (plan, params, x, y, BATCH, g_tp);
  double l_again = kern_tensor_loss_grad (plan, params, x, y, BATCH, g_again);
  double l_only = kern_tensor_loss_grad (plan, params, x, y, BATCH, NULL);
  g_assert_true (memcmp (g_tp, g_again, net.n_params * sizeof (float)) == 0);
  g_assert_true (l_tp == l_again && l_tp == l_only);

  Ref r = ref_new (&net, params, NULL, x, y, BATCH);
  g_autofree double *tol = g_new (double, net.n_params);
  for (gsize q = 0; q < net.n_params; q++)
    tol[q] = 2.0 * r.grad_err[q];
  g_autofree char *what = g_strdup_printf ("%d hidden, %s, T = %d, %s", n_hidden,
                                           loss == KERN_LOSS_XENT ? "xent" : "mse", T,
                                           reproducible ? "fixed-order" : "OpenBLAS");
  double worst;
  gsize bad = count_beyond (what, g_tp, g_one, tol, net.n_params, &worst);
  g_test_message ("%s: loss %.9g vs %.9g (bound %.3g); gradient: largest |diff|/bound %.3g",
                  what, l_tp, l_one, 2.0 * r.loss_err, worst);
  g_assert_cmpuint (bad, ==, 0);
  g_assert_cmpfloat (fabs (l_tp - l_one), <=, 2.0 * r.loss_err);
  if (T == 1)
    {
      g_assert_true (l_tp == l_one);
      g_assert_true (memcmp (g_tp, g_one, net.n_params * sizeof (float)) == 0);
    }

  ref_clear (&r);
  kern_tensor_plan_free (plan);
  kern_model_free (m);
  kern_backend_free (be);
  g_free (params);
  g_free (x);
  g_free (y);
}

static void
test_equivalent (gconstpointer data)
{
  KernLoss loss = GPOINTER_TO_INT (data);
  static const int ranks[] = { 1, 2, 4 };
  for (int h = 1; h <= 3; h++)
    for (gsize i = 0; i < G_N_ELEMENTS (ranks); i++)
      for (int rep = 0; rep < 2; rep++)
        check_equivalent (h, loss, ranks[i], rep == 0);
}

/* The bound has power: rank 0's and rank 1's column shards of the first
 * layer's gradient swapped (a shard written to the wrong place) must fall
 * outside it, by far. */
static void
test_bound_catches_misplaced_shard (void)
{
  KernModel *m = kern_mlp_new (D, HIDDEN, 2, K, KERN_LOSS_XENT, NULL);
  Net net = net_make (D, HIDDEN, 2, K, KERN_LOSS_XENT);
  float *params, *x;
  int *y;
  make_case (m, 5, &params, &x, &y, BATCH);
  KernTensorPlan *plan = kern_tensor_plan_new (m, 2, NULL);
  g_assert_nonnull (plan);
  g_autofree float *g_one = g_new (float, net.n_params);
  g_autofree float *g_tp = g_new (float, net.n_params);
  m->ops->loss_grad (m, params, x, y, BATCH, g_one);
  kern_tensor_loss_grad (plan, params, x, y, BATCH, g_tp);
  int lo0, hi0, lo1, hi1;
  kern_tensor_cut (plan, 0, 0, &lo0, &hi0);
  kern_tensor_cut (plan, 0, 1, &lo1, &hi1);
  g_assert_cmpint (hi0 - lo0, ==, hi1 - lo1);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < hi0 - lo0; j++)
      {
        float *a = g_tp + (gsize) i * HIDDEN[0] + lo0 + j;
        float *b = g_tp + (gsize) i * HIDDEN[0] + lo1 + j;
        float t = *a;
        *a = *b;
        *b = t;
      }
  Ref r = ref_new (&net, params, NULL, x, y, BATCH);
  g_autofree double *tol = g_new (double, net.n_params);
  for (gsize q = 0; q < net.n_params; q++)
    tol[q] = 2.0 * r.grad_err[q];
  double worst;
  gsize bad = count_beyond ("swapped shards (expected beyond)", g_tp, g_one, tol,
                            net.n_params, &worst);
  g_test_message ("swapped shards: %" G_GSIZE_FORMAT " elements beyond, worst %.3g x bound",
                  bad, worst);
  g_assert_cmpuint (bad, >, 0);
  g_assert_cmpfloat (worst, >, 100.0);
  ref_clear (&r);
  kern_tensor_plan_free (plan);
  kern_model_free (m);
  g_free (params);
  g_free (x);
  g_free (y);
}

/* kern_tensor_loss_grad_groups over G batches of n stacked (one stack,
 * or several when G n passes the CPU's stack of 256 rows, or each batch
 * alone when n does) against one kern_tensor_loss_grad call per batch.
 * Every value of a row depends on that row alone and each product element
 * is a sum over its own row and column, so the fixed-order backend, whose
 * every element is one fixed sum whatever the shape, must give the same
 * bits; OpenBLAS may round a product of another shape differently, so
 * there each group's loss and gradient must lie within the sum of the two
 * computations' bounds from the exact values of that group's batch, as in
 * check_equivalent.  The losses without gradients are the same bits, and
 * the groups' gradients differ, so a group's result in another's place
 * would be seen. */
static void
check_groups (int n_hidden, KernLoss loss, int T, int n, int G, gboolean reproducible)
{
  KernBackend *be = kern_backend_cpu_new_full (reproducible);
  KernModel *m = kern_mlp_new (D, HIDDEN, n_hidden, K, loss, be);
  Net net = net_make (D, HIDDEN, n_hidden, K, loss);
  gsize np = net.n_params;
  float *params, *x;
  int *y;
  make_case (m, 29 + n_hidden + G, &params, &x, &y, n * G);
  KernTensorPlan *plan = kern_tensor_plan_new (m, T, NULL);
  g_assert_nonnull (plan);
  g_autofree float *all = g_new (float, np * G);
  g_autofree float **grads = g_new (float *, G);
  g_autofree double *losses = g_new (double, G);
  g_autofree double *only = g_new (double, G);
  g_autofree float *one = g_new (float, np);
  for (int g = 0; g < G; g++)
    grads[g] = all + (gsize) g * np;
  kern_tensor_loss_grad_groups (plan, params, x, y, n, G, grads, losses);
  kern_tensor_loss_grad_groups (plan, params, x, y, n, G, NULL, only);
  g_assert_cmpmem (losses, G * sizeof (double), only, G * sizeof (double));

  g_autofree char *what = g_strdup_printf ("%d hidden, %s, T = %d, %d x %d rows, %s",
                                           n_hidden, loss == KERN_LOSS_XENT ? "xent" : "mse",
                                           T, G, n, reproducible ? "fixed-order" : "OpenBLAS");
  gsize same = 0;
  for (int g = 0; g < G; g++)
    {
      const float *xg = x + (gsize) g * n * D;
      const int *yg = y + (gsize) g * n;
      double l = kern_tensor_loss_grad (plan, params, xg, yg, n, one);
      gboolean bits = l == losses[g] && memcmp (one, grads[g], np * sizeof (float)) == 0;
      same += bits;
      if (reproducible)
        {
          g_assert_cmpfloat (losses[g], ==, l);
          g_assert_cmpmem (grads[g], np * sizeof (float), one, np * sizeof (float));
          continue;
        }
      Ref r = ref_new (&net, params, NULL, xg, yg, n);
      g_autofree double *tol = g_new (double, np);
      for (gsize q = 0; q < np; q++)
        tol[q] = 2.0 * r.grad_err[q];
      double worst;
      g_assert_cmpuint (count_beyond (what, grads[g], one, tol, np, &worst), ==, 0);
      g_assert_cmpfloat (fabs (losses[g] - l), <=, 2.0 * r.loss_err);
      ref_clear (&r);
    }
  g_test_message ("%s: %" G_GSIZE_FORMAT " of %d groups the same bits as alone", what,
                  same, G);
  for (int g = 1; g < G; g++)
    g_assert_false (memcmp (grads[g - 1], grads[g], np * sizeof (float)) == 0);

  kern_tensor_plan_free (plan);
  kern_model_free (m);
  kern_backend_free (be);
  g_free (params);
  g_free (x);
  g_free (y);
}

static void
test_groups (void)
{
  /* one stack; stacks of 10 and 3 (13 x 24 rows > 256); batches alone */
  static const struct { int n, G; } shapes[] = { { BATCH, 1 }, { BATCH, 3 },
                                                 { BATCH, 13 }, { 300, 2 } };
  static const int ranks[] = { 1, 2, 4 };
  for (int h = 1; h <= 3; h++)
    for (gsize i = 0; i < G_N_ELEMENTS (ranks); i++)
      for (gsize j = 0; j < G_N_ELEMENTS (shapes); j++)
        for (int rep = 0; rep < 2; rep++)
          check_groups (h, h == 2 ? KERN_LOSS_MSE : KERN_LOSS_XENT, ranks[i], shapes[j].n,
                        shapes[j].G, rep == 0);
}

/* SGD steps both ways, rule (U): the two parameter vectors stay within
 * e_p, carried from step to step (the tensor side's gradient bound taken
 * with its parameters within e_p), and every step's losses within the sum
 * of their bounds.  Being worst-case, the carried bound grows about
 * tenfold a step on these models (the absolute-value products of (G) and
 * the ReLU masks it leaves open); a bound that no longer constrains
 * anything would prove nothing, so the steps are few enough for the loss
 * bound to stay below a hundredth of the loss, which is asserted. */
static void
check_training (int n_hidden, KernLoss loss, int T, int steps)
{
  KernModel *m = kern_mlp_new (D, HIDDEN, n_hidden, K, loss, NULL);
  Net net = net_make (D, HIDDEN, n_hidden, K, loss);
  gsize np = net.n_params;
  float *p_one, *x;
  int *y;
  make_case (m, 91 + T, &p_one, &x, &y, BATCH);
  g_autofree float *p_tp = g_memdup2 (p_one, np * sizeof (float));
  g_autofree float *g_one = g_new (float, np);
  g_autofree float *g_tp = g_new (float, np);
  g_autofree double *e_p = g_new0 (double, np);
  KernTensorPlan *plan = kern_tensor_plan_new (m, T, NULL);
  g_assert_nonnull (plan);
  const float lr = 0.1f;
  double worst_p = 0.0, largest_diff = 0.0;
  for (int s = 0; s < steps; s++)
    {
      Ref r_one = ref_new (&net, p_one, NULL, x, y, BATCH);
      Ref r_tp = ref_new (&net, p_one, e_p, x, y, BATCH);
      double l_one = m->ops->loss_grad (m, p_one, x, y, BATCH, g_one);
      double l_tp = kern_tensor_loss_grad (plan, p_tp, x, y, BATCH, g_tp);
      g_test_message ("T = %d step %d: loss %.9g vs %.9g, bound %.3g", T, s, l_tp, l_one,
                      r_one.loss_err + r_tp.loss_err);
      g_assert_cmpfloat (fabs (l_tp - l_one), <=, r_one.loss_err + r_tp.loss_err);
      g_assert_cmpfloat (r_one.loss_err + r_tp.loss_err, <, 0.01 * fabs (l_one));
      for (gsize q = 0; q < np; q++)
        {
          double c = (double) p_one[q] - (double) lr * r_one.grad[q];
          double M_one = fabs (r_one.grad[q]) + r_one.grad_err[q];
          double M_tp = fabs (r_tp.grad[q]) + r_tp.grad_err[q];
          double e_one = (1.0 + U) * (lr * r_one.grad_err[q] + U * lr * M_one) + U * fabs (c);
          double e_tp = (1.0 + U) * (e_p[q] + lr * r_tp.grad_err[q] + U * lr * M_tp)
                        + U * fabs (c);
          e_p[q] = (e_one + e_tp) * REF_SLACK;
        }
      kern_sgd_step (p_one, g_one, np, lr);
      kern_sgd_step (p_tp, g_tp, np, lr);
      double worst;
      g_autofree char *what = g_strdup_printf ("T = %d after step %d", T, s + 1);
      g_assert_cmpuint (count_beyond (what, p_tp, p_one, e_p, np, &worst), ==, 0);
      worst_p = MAX (worst_p, worst);
      for (gsize q = 0; q < np; q++)
        largest_diff = MAX (largest_diff, fabs ((double) p_tp[q] - p_one[q]));
      ref_clear (&r_one);
      ref_clear (&r_tp);
    }
  g_test_message ("%d hidden, T = %d, %d steps: parameters' largest |diff| %.3g, largest "
                  "|diff|/bound %.3g", n_hidden, T, steps, largest_diff, worst_p);
  kern_tensor_plan_free (plan);
  kern_model_free (m);
  g_free (p_one);
  g_free (x);
  g_free (y);
}

static void
test_training (void)
{
  check_training (2, KERN_LOSS_XENT, 2, 3);
  check_training (3, KERN_LOSS_XENT, 4, 3);
  check_training (1, KERN_LOSS_MSE, 4, 3);
}

/* A CPU backend under another name, whose fresh buffers hold NaN: the
 * plan takes the path of a backend with its own memory (the parameters,
 * batches and labels uploaded, every group's gradient written into a
 * vector of the backend's and downloaded whole, all groups in one stack),
 * which must give the CPU path's bits, and a buffer read before it is
 * written (a gradient entry no rank wrote) would show as NaN. */
static float *
staged_alloc (KernBackend *be G_GNUC_UNUSED, gsize n)
{
  float *buf = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    buf[i] = NAN;
  return buf;
}

static void
test_staged_backend (void)
{
  KernBackend *cpu = kern_backend_cpu_new ();
  KernBackendOps ops = *cpu->ops;
  ops.name = "staged";
  ops.alloc = staged_alloc;
  KernBackend staged = { .ops = &ops, .priv = NULL };
  for (int h = 1; h <= 3; h++)
    for (int T = 1; T <= 4; T *= 2)
      {
        KernLoss loss = h == 2 ? KERN_LOSS_MSE : KERN_LOSS_XENT;
        KernModel *mh = kern_mlp_new (D, HIDDEN, h, K, loss, cpu);
        KernModel *ms = kern_mlp_new (D, HIDDEN, h, K, loss, &staged);
        gsize np = mh->ops->n_params (mh);
        float *params, *x;
        int *y;
        make_case (mh, 7, &params, &x, &y, BATCH);
        KernTensorPlan *ph = kern_tensor_plan_new (mh, T, NULL);
        KernTensorPlan *ps = kern_tensor_plan_new (ms, T, NULL);
        g_autofree float *gh = g_new (float, np);
        g_autofree float *gs = g_new (float, np);
        /* a smaller batch first: the scratch grows between the calls */
        kern_tensor_loss_grad (ps, params, x, y, BATCH / 2, gs);
        double lh = kern_tensor_loss_grad (ph, params, x, y, BATCH, gh);
        double ls = kern_tensor_loss_grad (ps, params, x, y, BATCH, gs);
        g_assert_cmpfloat (lh, ==, ls);
        g_assert_cmpmem (gh, np * sizeof (float), gs, np * sizeof (float));
        g_assert_cmpfloat (kern_tensor_loss_grad (ps, params, x, y, BATCH, NULL), ==, lh);
        g_free (params);
        g_free (x);
        g_free (y);

        /* groups: the CPU in stacks of at most 256 rows, the staged
         * backend all 13 at once, into gradient buffers of its own */
        enum { G = 13 };
        make_case (mh, 8, &params, &x, &y, G * BATCH);
        g_autofree float *ah = g_new (float, G * np);
        g_autofree float *as = g_new (float, G * np);
        float *grh[G], *grs[G];
        double lgh[G], lgs[G];
        for (int g = 0; g < G; g++)
          {
            grh[g] = ah + (gsize) g * np;
            grs[g] = as + (gsize) g * np;
          }
        kern_tensor_loss_grad_groups (ps, params, x, y, BATCH, 2, grs, lgs);
        kern_tensor_loss_grad_groups (ph, params, x, y, BATCH, G, grh, lgh);
        kern_tensor_loss_grad_groups (ps, params, x, y, BATCH, G, grs, lgs);
        g_assert_cmpmem (lgh, sizeof lgh, lgs, sizeof lgs);
        g_assert_cmpmem (ah, G * np * sizeof (float), as, G * np * sizeof (float));
        kern_tensor_plan_free (ph);
        kern_tensor_plan_free (ps);
        kern_model_free (mh);
        kern_model_free (ms);
        g_free (params);
        g_free (x);
        g_free (y);
      }
  kern_backend_free (cpu);
}

/* The exact mean loss of net at double parameters (no bound): the plain
 * formulas of mlp.c, in double. */
static double
loss_double (const Net *net, const double *P, const float *x, const int *y, int n)
{
  int k = net->width[net->n_dense];
  double total = 0.0;
  for (int i = 0; i < n; i++)
    {
      double a[64], z[64];
      int w = net->width[0];
      g_assert_cmpint (w, <=, 64);
      for (int j = 0; j < w; j++)
        a[j] = x[(gsize) i * w + j];
      for (int l = 0; l < net->n_dense; l++)
        {
          int in = net->width[l], out = net->width[l + 1];
          const double *W = P + net->w_off[l], *b = W + (gsize) in * out;
          g_assert_cmpint (out, <=, 64);
          for (int j = 0; j < out; j++)
            {
              z[j] = b[j];
              for (int q = 0; q < in; q++)
                z[j] += a[q] * W[(gsize) q * out + j];
            }
          for (int j = 0; j < out; j++)
            a[j] = l + 1 < net->n_dense ? MAX (z[j], 0.0) : z[j];
        }
      double top = a[0], sum = 0.0, ss = 0.0;
      for (int j = 1; j < k; j++)
        top = MAX (top, a[j]);
      for (int j = 0; j < k; j++)
        {
          sum += exp (a[j] - top);
          ss += (a[j] - (j == y[i])) * (a[j] - (j == y[i]));
        }
      total += net->loss == KERN_LOSS_XENT ? log (sum) - (a[y[i]] - top) : 0.5 * ss;
    }
  return total / n;
}

/* Central differences of the exact loss against the split gradient, on a
 * tiny model, every parameter.  D(h) = (L(p + h) - L(p - h)) / 2h in
 * double has truncation error c h^2 + O(h^4) where L is smooth (no ReLU
 * kink within 2h), so |D(h) - D(2h)| ~ 3 c h^2 bounds it with room; its
 * rounding is at most ~ 2^-53 L times the few dozen roundings of L over h
 * (counted as 64 (|L| + 1) 2^-53 / h).  The float gradient is within its
 * bound e_g of the exact one (scale fl(1/n), off 1/n by u relative).  A
 * check whose tolerance dwarfed the gradients would prove nothing: the
 * tolerances must stay below a thousandth of the largest entry. */
static void
check_finite_difference (int T, KernLoss loss)
{
  static const int hidden[] = { 4, 4 };
  enum { d = 3, k = 3, n = 5 };
  KernModel *m = kern_mlp_new (d, hidden, 2, k, loss, NULL);
  Net net = net_make (d, hidden, 2, k, loss);
  float *params, *x;
  int *y;
  make_case (m, 3, &params, &x, &y, n);
  KernTensorPlan *plan = kern_tensor_plan_new (m, T, NULL);
  g_assert_nonnull (plan);
  g_autofree float *g = g_new (float, net.n_params);
  kern_tensor_loss_grad (plan, params, x, y, n, g);
  Ref r = ref_new (&net, params, NULL, x, y, n);
  g_autofree double *P = g_new (double, net.n_params);
  for (gsize q = 0; q < net.n_params; q++)
    P[q] = params[q];
  const double h = 0x1.0p-17;
  double largest = 0.0, widest_tol = 0.0;
  for (gsize q = 0; q < net.n_params; q++)
    {
      double D1, D2, p0 = P[q];
      P[q] = p0 + h;
      double lp = loss_double (&net, P, x, y, n);
      P[q] = p0 - h;
      double lm = loss_double (&net, P, x, y, n);
      P[q] = p0 + 2.0 * h;
      double lp2 = loss_double (&net, P, x, y, n);
      P[q] = p0 - 2.0 * h;
      double lm2 = loss_double (&net, P, x, y, n);
      P[q] = p0;
      D1 = (lp - lm) / (2.0 * h);
      D2 = (lp2 - lm2) / (4.0 * h);
      double round = 64.0 * (fabs (lp) + 1.0) * 0x1.0p-53 / h;
      double tol = r.grad_err[q] + U * fabs (D1) + fabs (D1 - D2) + round;
      if (!(fabs (g[q] - D1) <= tol))
        g_test_message ("T = %d parameter %" G_GSIZE_FORMAT ": split %.9g, central "
                        "difference %.9g, tolerance %.3g", T, q, g[q], D1, tol);
      g_assert_cmpfloat (fabs (g[q] - D1), <=, tol);
      largest = MAX (largest, fabs (D1));
      widest_tol = MAX (widest_tol, tol);
    }
  g_test_message ("T = %d: largest gradient %.3g, widest tolerance %.3g", T, largest,
                  widest_tol);
  g_assert_cmpfloat (widest_tol, <, 1e-3 * largest);
  ref_clear (&r);
  kern_tensor_plan_free (plan);
  kern_model_free (m);
  g_free (params);
  g_free (x);
  g_free (y);
}

static void
test_finite_difference (void)
{
  check_finite_difference (2, KERN_LOSS_XENT);
  check_finite_difference (4, KERN_LOSS_XENT);
  check_finite_difference (2, KERN_LOSS_MSE);
}

/* The index of the dense layer number l (0-based) in m's layer table. */
static int
dense_layer (const KernModel *m, int l)
{
  for (int i = 0; i < m->n_layers; i++)
    if (m->layers[i].n_weights == 1 && l-- == 0)
      return i;
  g_assert_not_reached ();
}

/* Splits, all-reduces and rank parameters as closed forms, with widths
 * w_0 = d, w_1 .. w_H hidden, w_{H+1} = k. */
static void
test_collectives_closed_form (void)
{
  enum { d = 10, k = 6, T = 4 };
  static const int h[] = { 8, 12, 16, 20 };
  for (int H = 0; H <= 4; H++)
    {
      KernModel *m = kern_mlp_new (d, h, H, k, KERN_LOSS_XENT, NULL);
      KernTensorPlan *p = kern_tensor_plan_new (m, T, NULL);
      g_assert_nonnull (p);
      int nf, nb;
      const KernTensorAllReduce *ar = kern_tensor_collectives (p, &nf, &nb);
      int w[6] = { d };
      for (int i = 0; i < H; i++)
        w[i + 1] = h[i];
      w[H + 1] = k;
      /* L = H + 1 dense layers make floor(L / 2) pairs; pair j is dense
       * layers 2j (column) and 2j + 1 (row): one forward all-reduce of
       * w_{2j+2} floats per sample each, one backward of w_{2j} for every
       * pair but the first (its input is x, which needs no gradient) */
      int pairs = (H + 1) / 2;
      g_assert_cmpint (nf, ==, pairs);
      g_assert_cmpint (nb, ==, MAX (pairs - 1, 0));
      for (int j = 0; j < pairs; j++)
        {
          g_assert_cmpint (ar[j].pass, ==, KERN_TENSOR_FORWARD);
          g_assert_cmpint (ar[j].layer, ==, dense_layer (m, 2 * j + 1));
          g_assert_cmpint (ar[j].floats, ==, w[2 * j + 2]);
        }
      for (int j = pairs - 1, at = nf; j >= 1; j--, at++)
        {
          g_assert_cmpint (ar[at].pass, ==, KERN_TENSOR_BACKWARD);
          g_assert_cmpint (ar[at].layer, ==, dense_layer (m, 2 * j));
          g_assert_cmpint (ar[at].floats, ==, w[2 * j]);
        }
      /* rank params: column (w_in + 1) w_out / T, row w_in w_out / T + w_out,
       * replicated (w_in + 1) w_out */
      gsize want = 0, on_every = 0;   /* floats every rank holds whole */
      for (int l = 0; l <= H; l++)
        {
          gsize in = w[l], out = w[l + 1];
          int i = dense_layer (m, l);
          KernTensorSplit s = kern_tensor_split (p, i);
          int lo, hi;
          kern_tensor_cut (p, i, 3, &lo, &hi);
          if (l == H && l % 2 == 0)
            {
              g_assert_cmpint (s, ==, KERN_TENSOR_REPLICATED);
              want += (in + 1) * out;
              on_every += (in + 1) * out;
              g_assert_cmpint (lo, ==, 0);
              g_assert_cmpint (hi, ==, (int) out);
            }
          else if (l % 2 == 0)
            {
              g_assert_cmpint (s, ==, KERN_TENSOR_COLUMN);
              want += (in + 1) * out / T;
              g_assert_cmpint (lo, ==, 3 * (int) out / T);
              g_assert_cmpint (hi, ==, 4 * (int) out / T);
            }
          else
            {
              g_assert_cmpint (s, ==, KERN_TENSOR_ROW);
              want += in * out / T + out;
              on_every += out;
              g_assert_cmpint (lo, ==, 3 * (int) in / T);
              g_assert_cmpint (hi, ==, 4 * (int) in / T);
            }
          g_assert_cmpint (kern_tensor_split (p, i + 1), ==, KERN_TENSOR_NONE);
          g_assert_cmpstr (kern_tensor_split_name (s), ==,
                           l % 2 == 1 ? "row" : l == H ? "replicated" : "column");
        }
      gsize sum = 0;
      for (int t = 0; t < T; t++)
        {
          g_assert_cmpuint (kern_tensor_rank_params (p, t), ==, want);
          sum += kern_tensor_rank_params (p, t);
        }
      g_assert_cmpuint (sum, ==, m->ops->n_params (m) + (T - 1) * on_every);
      kern_tensor_plan_free (p);

      /* T = 1: the plain model, nothing summed */
      p = kern_tensor_plan_new (m, 1, NULL);
      kern_tensor_collectives (p, &nf, &nb);
      g_assert_cmpint (nf + nb, ==, 0);
      g_assert_cmpuint (kern_tensor_rank_params (p, 0), ==, m->ops->n_params (m));
      g_assert_cmpint (kern_tensor_split (p, 0), ==, KERN_TENSOR_REPLICATED);
      kern_tensor_plan_free (p);
      kern_model_free (m);
    }
}

/* A refusal: NULL, the error's code, one line "[policy] tensor: ...;
 * fix: ..." that contains `want`. */
static void
assert_refused (const KernModel *m, int T, KernTensorError code, const char *want)
{
  GError *error = NULL;
  KernTensorPlan *p = kern_tensor_plan_new (m, T, &error);
  g_assert_null (p);
  g_assert_error (error, KERN_TENSOR_ERROR, (gint) code);
  g_test_message ("T = %d: %s", T, error->message);
  g_assert_true (g_str_has_prefix (error->message, "[policy] tensor: "));
  g_assert_nonnull (strstr (error->message, "; fix: "));
  g_assert_null (strchr (error->message, '\n'));
  g_assert_nonnull (strstr (error->message, want));
  g_error_free (error);
}

static void
test_refusals (void)
{
  KernModel *m = kern_mlp_new (D, HIDDEN, 3, K, KERN_LOSS_XENT, NULL);
  assert_refused (m, 3, KERN_TENSOR_ERROR_RANKS, "the 16 outputs of layer fc1");
  assert_refused (m, 8, KERN_TENSOR_ERROR_RANKS, "the 12 outputs of layer fc3");
  assert_refused (m, 8, KERN_TENSOR_ERROR_RANKS, "a divisor of 4");
  assert_refused (m, 0, KERN_TENSOR_ERROR_RANKS, "tensor >= 1");
  assert_refused (m, -2, KERN_TENSOR_ERROR_RANKS, "tensor >= 1");
  kern_model_free (m);

  /* a row-split width need not divide: only column splits are cut by T */
  static const int odd[] = { 16, 6 };
  m = kern_mlp_new (D, odd, 2, K, KERN_LOSS_XENT, NULL);
  KernTensorPlan *p = kern_tensor_plan_new (m, 4, NULL);
  g_assert_nonnull (p);
  kern_tensor_plan_free (p);
  kern_model_free (m);

  /* timing-only: no weight shapes at all, or shapes without math */
  m = kern_timing_new (1000, 1e6);
  assert_refused (m, 2, KERN_TENSOR_ERROR_MODEL, "no weight shapes");
  assert_refused (m, 1, KERN_TENSOR_ERROR_MODEL, "no weight shapes");
  kern_model_free (m);
  GError *error = NULL;
  m = kern_timing_parse ("shapes", "# input 8\nfc 72 128 8 gemm\n", &error);
  g_assert_no_error (error);
  m->layers[0].n_weights = 1;
  m->layers[0].weight[0] = (KernWeight) { .offset = 0, .rows = 8, .cols = 8,
                                          .has_bias = TRUE, .bias = 64 };
  assert_refused (m, 2, KERN_TENSOR_ERROR_MODEL, "no real math");
  kern_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/tensor/equivalent/xent", GINT_TO_POINTER (KERN_LOSS_XENT),
                        test_equivalent);
  g_test_add_data_func ("/tensor/equivalent/mse", GINT_TO_POINTER (KERN_LOSS_MSE),
                        test_equivalent);
  g_test_add_func ("/tensor/bound/catches-misplaced-shard",
                   test_bound_catches_misplaced_shard);
  g_test_add_func ("/tensor/staged-backend", test_staged_backend);
  g_test_add_func ("/tensor/groups", test_groups);
  g_test_add_func ("/tensor/training", test_training);
  g_test_add_func ("/tensor/finite-difference", test_finite_difference);
  g_test_add_func ("/tensor/collectives", test_collectives_closed_form);
  g_test_add_func ("/tensor/refusals", test_refusals);
  return g_test_run ();
}
