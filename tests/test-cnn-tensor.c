/*
 * test-cnn-tensor.c — tensor parallelism of kind = cnn's real math
 * (kernels/cnn-tensor.c): the split gradient against the one-device one
 * (the same bits at T = 1, within a derived tolerance at T = 2 and 4, and
 * so the losses after k SGD steps), the layers it cuts and the all-reduces
 * it runs against what the timing side cuts (policies/tensor.c), what each
 * rank holds, runs under the all-reduce and pipeline policies that learn
 * what T = 1 learns, thread counts and OpenBLAS core types, and the
 * refusal of a T that does not divide the channels.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "policies/policy.h"
#include "train/lanes.h"
#include "tests/util.h"

#define SIDE 8            /* 8 x 8 images */
#define D (SIDE * SIDE)
#define K 4               /* classes */
#define N 6               /* samples per batch */

static const double U = 0x1p-24;   /* float's unit roundoff */

/* The unit tests' architectures: they cover a pair of convolutions, a
 * convolution paired with the first dense layer (its rows cut by the
 * channels of every pooled pixel), no pool, a wider kernel, a dense pair
 * and a replicated head.  Every width is a multiple of 4. */
typedef struct {
  const char *what;
  int channels[3], n_conv, q, pool;
  int hidden[2], n_hidden;
  int n_cut;              /* layers with weights that T > 1 cuts */
} Arch;

static const Arch archs[] = {
  { "conv pair, dense pair", { 4, 8 }, 2, 3, 2, { 8 }, 1, 4 },
  { "three convs, no pool, head cut by channels", { 4, 4, 4 }, 3, 3, 1, { 0 }, 0, 4 },
  { "5x5 conv with fc1, dense pair", { 4 }, 1, 5, 2, { 8, 8 }, 2, 4 },
  { "conv pair, replicated head", { 4, 8 }, 2, 3, 2, { 0 }, 0, 2 },
};

static KernModel *
arch_model (const Arch *a, KernBackend *be)
{
  GError *error = NULL;
  KernModel *m = kern_cnn_new (D, a->channels, a->n_conv, a->q, a->pool, a->hidden,
                               a->n_hidden, K, be, &error);
  g_assert_no_error (error);
  return m;
}

/* A batch of n images of N(0, 1) pixels and labels from the seed. */
static void
make_batch (float *x, int *y, int n, guint64 seed)
{
  KernRng rng;
  kern_rng_init (&rng, seed, 3);
  for (int i = 0; i < n * D; i++)
    x[i] = (float) kern_rng_normal (&rng);
  for (int i = 0; i < n; i++)
    y[i] = (int) kern_rng_below (&rng, K);
}

static KernTensorPlan *
plan_of (KernModel *m, int T)
{
  GError *error = NULL;
  KernTensorPlan *p = kern_tensor_plan_new (m, T, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kern_tensor_ranks (p), ==, T);
  return p;
}

/* T = 1 is cnn.c's computation step for step: the same bits, loss and
 * every gradient entry, for one group and for three stacked. */
static void
test_one_rank_bits (void)
{
  for (gsize a = 0; a < G_N_ELEMENTS (archs); a++)
    {
      KernModel *m = arch_model (&archs[a], NULL);
      gsize P = m->ops->n_params (m);
      g_autofree float *w = test_noisy_params (m, 7 + a);
      g_autofree float *g1 = g_new (float, 3 * P), *gt = g_new (float, 3 * P);
      float x[3 * N * D];
      int y[3 * N];
      make_batch (x, y, 3 * N, 11 + a);
      KernTensorPlan *p = plan_of (m, 1);
      double l1 = m->ops->loss_grad (m, w, x, y, N, g1);
      double lt = kern_tensor_loss_grad (p, w, x, y, N, gt);
      g_assert_cmpfloat (l1, ==, lt);
      g_assert_cmpmem (g1, P * sizeof (float), gt, P * sizeof (float));
      float *G1[3] = { g1, g1 + P, g1 + 2 * P }, *Gt[3] = { gt, gt + P, gt + 2 * P };
      double L1[3], Lt[3];
      m->ops->loss_grad_groups (m, w, x, y, N, 3, G1, L1);
      kern_tensor_loss_grad_groups (p, w, x, y, N, 3, Gt, Lt);
      g_assert_cmpmem (L1, sizeof L1, Lt, sizeof Lt);
      g_assert_cmpmem (g1, 3 * P * sizeof (float), gt, 3 * P * sizeof (float));
      kern_tensor_plan_free (p);
      kern_model_free (m);
    }
}

/* The tolerance of a split gradient entry against the one-device g_i.
 *
 * Where the two differ.  On the fixed-order backend a product element is
 * one sum formed in double and rounded once, so a column-split product
 * (each rank's channels of it) is the same bits as the whole one, and the
 * pixel loops (im2col, ReLU, max-pool) are the same functions on the same
 * floats.  The computations part only where the ranks sum: each row-split
 * layer's output and each column-split layer's input gradient (a col2im
 * of the rank's dU, then the T images added), n_cut of them.  There the
 * whole side rounds s = sum_k a_k b_k once (col2im then adds up to q^2
 * such roundings per pixel, as the split side does on each rank) and the
 * split side T partial sums, then adds them in float: they differ from s
 * by at most (T + 1) u sum_k |a_k b_k| (T roundings of partials, T - 1
 * additions, the whole side's one; u = 2^-24), a relative error of
 * e = (T + 1) u on that intermediate where its terms do not cancel.
 *
 * How far it travels.  A relative error e of an intermediate moves what
 * depends on it by at most kappa e, kappa the condition number of the
 * layers between: ReLUs and max-pools (1-Lipschitz, exact), products with
 * He-scaled weights plus the 0.3 noise here, whose gains stay near 1 per
 * layer but add over the up to 9 terms a pixel of col2im takes, and the
 * softmax (its gradient's terms below 1): we take A = 64 for a path, and,
 * the paths from different sums adding, a total amplification n_cut A.
 * An entry whose own terms cancel is not held to a relative bound: its
 * absolute share is taken at the gradient's largest entry, |g|_inf.
 * Hence
 *
 *   |split_i - whole_i| <= n_cut A (T + 1) u (|g_i| + |g|_inf)
 *
 * about 7.6e-5 (|g_i| + |g|_inf) at T = 4.  A ReLU or a max-pool is a
 * kink: where a pre-activation lies within the error of 0, or two window
 * entries within it of each other, the two sides may take different
 * branches and no such bound holds; the inputs here are fixed, on the
 * fixed-order backend the same bits on every CPU, so an inputs' choice
 * that met one would fail everywhere, not by chance.  That the bound
 * still discriminates is checked below: a misplaced shard lies hundreds
 * of times beyond it. */
static double
tolerance (int n_cut, int T, double gi, double gmax)
{
  return n_cut * 64.0 * (T + 1) * U * (fabs (gi) + gmax);
}

/* The split gradient within `tolerance` of the one-device one, the loss
 * within its share (one more sum at the same bound). */
static void
check_close (const Arch *a, int T, KernBackend *be)
{
  KernModel *m = arch_model (a, be);
  gsize P = m->ops->n_params (m);
  g_autofree float *w = test_noisy_params (m, 7 + T);
  g_autofree float *g1 = g_new (float, P), *gt = g_new (float, P);
  float x[N * D];
  int y[N];
  make_batch (x, y, N, 13 + T);
  KernTensorPlan *p = plan_of (m, T);
  double l1 = m->ops->loss_grad (m, w, x, y, N, g1);
  double lt = kern_tensor_loss_grad (p, w, x, y, N, gt);
  double gmax = 0, worst = 0;
  for (gsize i = 0; i < P; i++)
    gmax = MAX (gmax, fabs (g1[i]));
  g_assert_cmpfloat (gmax, >, 0);
  for (gsize i = 0; i < P; i++)
    {
      double d = fabs ((double) gt[i] - g1[i]), tol = tolerance (a->n_cut, T, g1[i], gmax);
      worst = MAX (worst, d / tol);
      if (d > tol)
        g_error ("%s, T = %d, entry %" G_GSIZE_FORMAT ": %.9g vs %.9g, |diff| %.3g > %.3g",
                 a->what, T, i, gt[i], g1[i], d, tol);
    }
  g_assert_cmpfloat (fabs (lt - l1), <=, tolerance (a->n_cut, T, l1, 0));
  g_test_message ("%s, T = %d: loss %.9f vs %.9f, worst |diff| %.3g of the tolerance",
                  a->what, T, lt, l1, worst);

  /* a misplaced shard: the first two output channels of conv1 swapped
   * (columns 0 and 1 of W_1 and of b_1) */
  const KernWeight *w1 = &m->layers[0].weight[0];
  g_autofree float *ws = g_memdup2 (w, P * sizeof (float));
  for (int r = 0; r <= w1->rows; r++)
    {
      gsize at = w1->offset + (gsize) r * w1->cols;
      float t = ws[at];
      ws[at] = ws[at + 1];
      ws[at + 1] = t;
    }
  m->ops->loss_grad (m, ws, x, y, N, g1);
  double beyond = 0;
  for (gsize i = 0; i < P; i++)
    beyond = MAX (beyond, fabs ((double) gt[i] - g1[i])
                          / tolerance (a->n_cut, T, g1[i], gmax));
  g_test_message ("misplaced shard: %.3g x the tolerance", beyond);
  g_assert_cmpfloat (beyond, >, 100);
  kern_tensor_plan_free (p);
  kern_model_free (m);
}

static void
test_close (void)
{
  KernBackend *blas = kern_backend_cpu_new_full (FALSE);
  for (gsize a = 0; a < G_N_ELEMENTS (archs); a++)
    for (int T = 2; T <= 4; T *= 2)
      {
        check_close (&archs[a], T, NULL);
        /* OpenBLAS rounds a product of another shape its own way: a
         * column-split product too, one more rounding per element, within
         * the same bound (2 u against (T + 1) u) */
        check_close (&archs[a], T, blas);
      }
  kern_backend_free (blas);
}

/* k SGD steps both ways from the same parameters on the same batches: the
 * losses after them within k times a step's share.  Each step's update
 * differs by at most lr times the gradient bound, e = n_cut A (T + 1) u
 * relative to 2 |g|_inf per entry; summed over k steps the parameters part
 * by at most k lr 2 e |g|_inf each, which moves the loss by at most its
 * gradient's 1-norm times that (first order, between kinks), and the loss
 * itself adds its own e |L|.  The bound is asserted below a hundredth of
 * the loss, so that it still constrains the runs. */
static void
test_steps (void)
{
  const int steps = 5;
  const float lr = 0.05f;
  for (gsize a = 0; a < G_N_ELEMENTS (archs); a++)
    for (int T = 2; T <= 4; T *= 2)
      {
        KernModel *m = arch_model (&archs[a], NULL);
        gsize P = m->ops->n_params (m);
        g_autofree float *w1 = test_noisy_params (m, 3 + a);
        g_autofree float *wt = g_memdup2 (w1, P * sizeof (float));
        g_autofree float *g1 = g_new (float, P), *gt = g_new (float, P);
        float x[N * D];
        int y[N];
        KernTensorPlan *p = plan_of (m, T);
        double e = archs[a].n_cut * 64.0 * (T + 1) * U, shift = 0;
        for (int s = 0; s <= steps; s++)
          {
            make_batch (x, y, N, 100 + s);
            double l1 = m->ops->loss_grad (m, w1, x, y, N, g1);
            double lt = kern_tensor_loss_grad (p, wt, x, y, N, gt);
            double gmax = 0, gsum = 0;
            for (gsize i = 0; i < P; i++)
              {
                gmax = MAX (gmax, fabs (g1[i]));
                gsum += fabs (g1[i]);
              }
            double bound = gsum * shift + e * fabs (l1);
            g_test_message ("%s, T = %d, step %d: loss %.9f vs %.9f, bound %.3g",
                            archs[a].what, T, s, lt, l1, bound);
            g_assert_cmpfloat (fabs (lt - l1), <=, bound);
            g_assert_cmpfloat (bound, <, 0.01 * fabs (l1));
            shift += lr * 2 * e * gmax;
            for (gsize i = 0; i < P; i++)
              {
                w1[i] -= lr * g1[i];
                wt[i] -= lr * gt[i];
              }
          }
        kern_tensor_plan_free (p);
        kern_model_free (m);
      }
}

/* Same inputs, same bits; a plan reused across batch sizes; groups at
 * once give each group its own call's bits. */
static void
test_deterministic (void)
{
  KernModel *m = arch_model (&archs[0], NULL);
  gsize P = m->ops->n_params (m);
  g_autofree float *w = test_noisy_params (m, 5);
  g_autofree float *a = g_new (float, P), *b = g_new (float, P), *c = g_new (float, P);
  float x[2 * N * D];
  int y[2 * N];
  make_batch (x, y, 2 * N, 3);
  KernTensorPlan *p = plan_of (m, 4);
  double la = kern_tensor_loss_grad (p, w, x, y, N, a);
  kern_tensor_loss_grad (p, w, x, y, 2 * N, b);   /* grows the scratch */
  double lb = kern_tensor_loss_grad (p, w, x, y, N, b);
  g_assert_cmpfloat (la, ==, lb);
  g_assert_cmpmem (a, P * sizeof (float), b, P * sizeof (float));
  float *gs[2] = { a, b };
  double ls[2];
  kern_tensor_loss_grad_groups (p, w, x, y, N, 2, gs, ls);
  double lc = kern_tensor_loss_grad (p, w, x + N * D, y + N, N, c);
  g_assert_cmpfloat (ls[0], ==, la);
  g_assert_cmpfloat (ls[1], ==, lc);
  g_assert_cmpmem (b, P * sizeof (float), c, P * sizeof (float));
  kern_tensor_plan_free (p);
  kern_model_free (m);
}

/* The math cuts the layers the timing side cuts and runs the all-reduces
 * it prices: pol_tensor_split's column and row layers are the plan's, the
 * ones between (ReLU, pool) and the whole ones hold nothing split, and
 * pol_tensor_collectives (no sequence parallelism, no recomputation)
 * lists the plan's all-reduces in the same order, pass and floats per
 * sample; the ranks' parameters agree too. */
static void
check_timing_agrees (const Arch *a, int T)
{
  KernModel *m = arch_model (a, NULL);
  KernTensorPlan *p = plan_of (m, T);
  g_autofree PolTpSplit *split = g_new (PolTpSplit, m->n_layers);
  g_assert_true (pol_tensor_split (m->layers, m->n_layers, T, split, NULL));
  int cut = 0;
  for (int l = 0; l < m->n_layers; l++)
    {
      KernTensorSplit k = kern_tensor_split (p, l);
      switch (split[l])
        {
        case POL_TP_COLUMN:
          g_assert_cmpint (k, ==, KERN_TENSOR_COLUMN);
          cut++;
          break;
        case POL_TP_ROW:
          g_assert_cmpint (k, ==, KERN_TENSOR_ROW);
          cut++;
          break;
        default:
          g_assert_true (k == KERN_TENSOR_NONE || k == KERN_TENSOR_REPLICATED);
          break;
        }
    }
  g_assert_cmpint (cut, ==, a->n_cut);
  int n;
  g_autofree PolTpCollective *timed = pol_tensor_collectives (m->layers, m->n_layers, split,
                                                              FALSE, NULL, &n);
  int n_fwd, n_bwd;
  const KernTensorAllReduce *ar = kern_tensor_collectives (p, &n_fwd, &n_bwd);
  g_assert_cmpint (n_fwd + n_bwd, ==, n);
  /* one sum forward per pair; one backward per pair but the first */
  g_assert_cmpint (n_fwd, ==, a->n_cut / 2);
  g_assert_cmpint (n_bwd, ==, a->n_cut / 2 - 1);
  for (int i = 0; i < n; i++)
    {
      g_assert_cmpint (timed[i].kind, ==, COMM_ALLREDUCE);
      g_assert_cmpint (timed[i].backward, ==, ar[i].pass == KERN_TENSOR_BACKWARD);
      g_assert_cmpfloat (timed[i].floats, ==, ar[i].floats);
    }
  g_assert_cmpuint (kern_tensor_rank_params (p, 0), ==,
                    pol_tensor_rank_params (m->layers, m->n_layers, m->ops->n_params (m),
                                            split, T));
  kern_tensor_plan_free (p);
  kern_model_free (m);
}

static void
test_timing_agrees (void)
{
  for (gsize a = 0; a < G_N_ELEMENTS (archs); a++)
    for (int T = 2; T <= 4; T *= 2)
      check_timing_agrees (&archs[a], T);
}

/* What rank t holds, in closed form for the first architecture (conv1
 * 1 -> 4, conv2 4 -> 8 on 4 x 4, fc1 2 x 2 x 8 -> 8, head 8 -> 4):
 * conv1 column (9 + 1) 4 / T, conv2 row 9 (4 / T) 8 + 8, fc1 column
 * (32 + 1) 8 / T, head row (8 / T) 4 + 4; the cuts tile the channels. */
static void
test_rank_params (void)
{
  for (int T = 1; T <= 4; T *= 2)
    {
      KernModel *m = arch_model (&archs[0], NULL);
      KernTensorPlan *p = plan_of (m, T);
      gsize want = T == 1 ? m->ops->n_params (m)
                          : (gsize) (10 * 4 / T + 9 * (4 / T) * 8 + 8 + 33 * 8 / T
                                     + (8 / T) * 4 + 4);
      gsize total = 0;
      for (int t = 0; t < T; t++)
        {
          g_assert_cmpuint (kern_tensor_rank_params (p, t), ==, want);
          total += want;
        }
      /* summed: the model, plus T - 1 copies of the row layers' biases */
      g_assert_cmpuint (total, ==, m->ops->n_params (m) + (T > 1 ? (T - 1) * (8 + 4) : 0));
      for (int l = 0; l < m->n_layers; l++)
        {
          KernTensorSplit s = kern_tensor_split (p, l);
          if (s != KERN_TENSOR_COLUMN && s != KERN_TENSOR_ROW)
            continue;
          const KernWeight *w = &m->layers[l].weight[0];
          int lo, hi, end = 0;
          for (int t = 0; t < T; t++)
            {
              kern_tensor_cut (p, l, t, &lo, &hi);
              g_assert_cmpint (lo, ==, end);
              end = hi;
            }
          /* output channels; input channels: a conv's rows are 9 taps of
           * them, fc1's 4 pooled pixels, the head's one */
          int taps = l == 3 ? 9 : l == 6 ? 4 : 1;
          g_assert_cmpint (end, ==, s == KERN_TENSOR_COLUMN ? w->cols : w->rows / taps);
        }
      kern_tensor_plan_free (p);
      kern_model_free (m);
    }
}

/* The small CNN of test-cnn.c on 8 x 8 synthetic images. */
static const char base_scenario[] =
  "[scenario]\nname = c\nseed = 5\niterations = 16\n"
  "[cluster]\nworkers = 2\n"
  "[model]\nkind = cnn\nchannels = 4,8\nhidden = 16\nfeatures = 64\nclasses = 4\n"
  "separation = 0.5\nsamples = 2048\ntest_samples = 256\neval_samples = 256\nbatch = 16\n"
  "lr = 0.05\neval_every = 4\n"
  "[policy]\nkind = allreduce\n[trace]\ndetail = summary\n";

static TestRun *
run_with (const char *workers, const char *policy)
{
  g_autofree char *a = test_replaced (base_scenario, "workers = 2", workers);
  g_autofree char *b = test_replaced (a, "kind = allreduce\n", policy);
  return test_run_collect (b, NULL);
}

/* Two runs' evaluations at the same iterations equal within 1e-4 nats
 * and 2 predictions of 256: a's step counter advances ka a training
 * iteration, b's kb.  Why 1e-4: 16 SGD steps at lr = 0.05 on the same
 * batches, each step's gradients within the bound above (about 1e-4
 * relative at T = 2 on this model's 4 cut layers), so test_steps' bound
 * at 16 steps stays far below 1e-4 nats for gradients of order 1; the
 * accuracies part only where two logits tie within that. */
static void
assert_same_learning (TestRun *a, int ka, TestRun *b, int kb)
{
  guint matched = 0;
  for (guint i = 0; i < a->metrics->len; i++)
    {
      const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
      const TestMetric *y = NULL;
      for (guint j = 0; j < b->metrics->len && !y; j++)
        if (g_array_index (b->metrics, TestMetric, j).step * ka == x->step * kb)
          y = &g_array_index (b->metrics, TestMetric, j);
      g_assert_nonnull (y);
      g_test_message ("iteration %" G_GINT64_FORMAT ": %.9f vs %.9f", x->step / ka, x->loss,
                      y->loss);
      g_assert_cmpfloat (fabs (x->loss - y->loss), <=, 1e-4);
      g_assert_cmpfloat (fabs (x->accuracy - y->accuracy), <=, 2.0 / 256);
      matched++;
    }
  g_assert_cmpuint (matched, >=, 4);
  const TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
  const TestMetric *last = &g_array_index (a->metrics, TestMetric, a->metrics->len - 1);
  g_assert_cmpint (last->step, ==, 16 * ka);
  g_assert_cmpfloat (last->loss, <, 0.9 * first->loss);
}

/* kind = allreduce: 2 data-parallel groups of 2 tensor ranks learn what
 * 2 workers of one rank learn. */
static void
test_allreduce (void)
{
  TestRun *a = run_with ("workers = 2", "kind = allreduce\n");
  TestRun *b = run_with ("workers = 4", "kind = allreduce\ntensor = 2\n");
  assert_same_learning (a, 2, b, 2);
  test_run_free (a);
  test_run_free (b);
}

/* kind = pipeline, layout data x pipeline x tensor: 2 x 2 x 2 learns what
 * 2 x 2 x 1 learns. */
static void
test_pipeline (void)
{
  TestRun *a = run_with ("workers = 4", "kind = pipeline\nlayout = 2x2x1\nmicrobatches = 4\n");
  TestRun *b = run_with ("workers = 8", "kind = pipeline\nlayout = 2x2x2\nmicrobatches = 4\n");
  assert_same_learning (a, 4, b, 8);
  test_run_free (a);
  test_run_free (b);
}

/* One host thread or two: the same evaluations, to the bit. */
static void
test_threads (void)
{
  TestRun *r[2];
  for (int t = 0; t < 2; t++)
    {
      train_set_threads (t + 1);
      r[t] = run_with ("workers = 16", "kind = allreduce\ntensor = 4\n");
    }
  train_set_threads (1);
  test_assert_same_runs (r[0], r[1]);
  test_run_free (r[0]);
  test_run_free (r[1]);
}

/* The run's losses in a dtsim process told to use OpenBLAS's kernels for
 * `core`, as "final weighted" in hexadecimal. */
static char *
run_on_core (const char *dir, const char *ini, const char *core)
{
  g_autofree char *was = g_strdup (g_getenv ("OPENBLAS_CORETYPE"));
  g_setenv ("OPENBLAS_CORETYPE", core, TRUE);
  g_autofree char *db = g_strconcat (dir, G_DIR_SEPARATOR_S, core, ".db", NULL);
  g_autofree char *out = NULL, *err = NULL;
  int rc = test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "-q", NULL);
  if (was)
    g_setenv ("OPENBLAS_CORETYPE", was, TRUE);
  else
    g_unsetenv ("OPENBLAS_CORETYPE");
  g_assert_cmpint (rc, ==, 0);
  double final = test_query_number (db, "SELECT final_loss FROM runs");
  double weighted = test_query_number (db, "SELECT sum(loss * (step + 1)) FROM metrics");
  return g_strdup_printf ("%a %a", final, weighted);
}

/* Two tensor ranks on the fixed-order products: OpenBLAS told to use
 * Haswell's kernels or SkylakeX's changes no bit of the run. */
static void
test_coretype (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-cnn-tensor-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "c.ini", NULL);
  g_autofree char *a = test_replaced (base_scenario, "workers = 2", "workers = 4");
  g_autofree char *text = test_replaced (a, "kind = allreduce\n", "kind = allreduce\ntensor = 2\n");
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *haswell = run_on_core (dir, ini, "Haswell");
  g_autofree char *skylake = run_on_core (dir, ini, "SkylakeX");
  g_test_message ("Haswell %s, SkylakeX %s", haswell, skylake);
  g_assert_cmpstr (haswell, ==, skylake);
  sim_remove_tree (dir);
}

/* A T that does not divide the channels, from a scenario and from the
 * plan, in one line naming [policy] tensor. */
static void
test_refusals_tensor (void)
{
  static const TestRefusal cases[] = {
    { "kind = allreduce\n", "kind = allreduce\ntensor = 8\n",
      "[policy] tensor: 8 does not divide the 4 outputs of layer conv1" },
    { "kind = allreduce\n", "kind = pipeline\nlayout = 1x1x8\n",
      "[policy] tensor: 8 does not divide the 4 outputs of layer conv1" },
  };
  g_autofree char *text = test_replaced (base_scenario, "workers = 2", "workers = 8");
  test_refusals (text, cases, G_N_ELEMENTS (cases));

  static const struct { int channels[2], hidden, T; const char *want; } plan_cases[] = {
    { { 6, 8 }, 8, 4, "4 ranks do not divide the 6 output channels of layer conv1" },
    { { 4, 8 }, 6, 4, "4 ranks do not divide the 6 output units of layer fc1" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (plan_cases); i++)
    {
      KernModel *m = kern_cnn_new (D, plan_cases[i].channels, 2, 3, 2, &plan_cases[i].hidden,
                                   1, K, NULL, NULL);
      GError *error = NULL;
      g_assert_null (kern_tensor_plan_new (m, plan_cases[i].T, &error));
      g_assert_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS);
      g_test_message ("%s", error->message);
      g_assert_true (g_str_has_prefix (error->message, "[policy] tensor: "));
      g_assert_nonnull (strstr (error->message, plan_cases[i].want));
      g_assert_nonnull (strstr (error->message, "; fix: "));
      g_assert_null (strchr (error->message, '\n'));
      g_error_free (error);
      kern_model_free (m);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cnn-tensor/one-rank-bits", test_one_rank_bits);
  g_test_add_func ("/cnn-tensor/close", test_close);
  g_test_add_func ("/cnn-tensor/steps", test_steps);
  g_test_add_func ("/cnn-tensor/deterministic", test_deterministic);
  g_test_add_func ("/cnn-tensor/timing-agrees", test_timing_agrees);
  g_test_add_func ("/cnn-tensor/rank-params", test_rank_params);
  g_test_add_func ("/cnn-tensor/train/allreduce", test_allreduce);
  g_test_add_func ("/cnn-tensor/train/pipeline", test_pipeline);
  g_test_add_func ("/cnn-tensor/train/threads", test_threads);
  g_test_add_func ("/cnn-tensor/train/coretype", test_coretype);
  g_test_add_func ("/cnn-tensor/refusals", test_refusals_tensor);
  return g_test_run ();
}
