/*
 * test-cnn.c — the convolutional network of kernels/cnn.c ([model] kind =
 * cnn): its gradient against central differences of an independent
 * reference in double, its FLOP counts as formulas, training on
 * Fashion-MNIST, every data-parallel policy, the lanes' and the CPUs'
 * contracts, and the runs it refuses.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "train/lanes.h"
#include "tests/util.h"

/* --- a reference network in double, written from docs/kernels.md ------------ */

typedef struct {
  int side, n_conv, q, pool, n_hidden, k;
  const int *channels, *hidden;
} Arch;

/* Forward of one sample x (side^2) at parameters w (the model's layout),
 * direct convolution (no im2col), all in double: the loss of label y. */
static double
ref_loss (const Arch *a, const double *w, const float *x, int y)
{
  int H = a->side, C = 1, r = (a->q - 1) / 2;
  double *A = g_new (double, H * H);
  for (int i = 0; i < H * H; i++)
    A[i] = x[i];
  gsize off = 0;
  for (int l = 0; l < a->n_conv; l++)
    {
      int co = a->channels[l], K = a->q * a->q * C;
      const double *W = w + off, *b = w + off + (gsize) K * co;
      off += (gsize) K * co + co;
      double *Z = g_new (double, H * H * co);
      for (int y0 = 0; y0 < H; y0++)
        for (int x0 = 0; x0 < H; x0++)
          for (int o = 0; o < co; o++)
            {
              double s = b[o];
              for (int ty = 0; ty < a->q; ty++)
                for (int tx = 0; tx < a->q; tx++)
                  {
                    int yy = y0 + ty - r, xx = x0 + tx - r;
                    if (yy < 0 || yy >= H || xx < 0 || xx >= H)
                      continue;
                    for (int c = 0; c < C; c++)
                      s += A[(yy * H + xx) * C + c] * W[((ty * a->q + tx) * C + c) * co + o];
                  }
              Z[(y0 * H + x0) * co + o] = MAX (s, 0.0);
            }
      int O = H / a->pool;
      double *P = g_new (double, O * O * co);
      for (int oy = 0; oy < O; oy++)
        for (int ox = 0; ox < O; ox++)
          for (int o = 0; o < co; o++)
            {
              double m = -INFINITY;
              for (int ty = 0; ty < a->pool; ty++)
                for (int tx = 0; tx < a->pool; tx++)
                  m = MAX (m, Z[((oy * a->pool + ty) * H + ox * a->pool + tx) * co + o]);
              P[(oy * O + ox) * co + o] = m;
            }
      g_free (Z);
      g_free (A);
      A = P;
      H = O;
      C = co;
    }
  int in = H * H * C;
  for (int l = 0; l <= a->n_hidden; l++)
    {
      int out = l < a->n_hidden ? a->hidden[l] : a->k;
      const double *W = w + off, *b = w + off + (gsize) in * out;
      off += (gsize) in * out + out;
      double *Z = g_new (double, out);
      for (int o = 0; o < out; o++)
        {
          double s = b[o];
          for (int i = 0; i < in; i++)
            s += A[i] * W[(gsize) i * out + o];
          Z[o] = l < a->n_hidden ? MAX (s, 0.0) : s;
        }
      g_free (A);
      A = Z;
      in = out;
    }
  double m = A[0], s = 0;
  for (int j = 1; j < a->k; j++)
    m = MAX (m, A[j]);
  for (int j = 0; j < a->k; j++)
    s += exp (A[j] - m);
  double loss = log (s) - (A[y] - m);
  g_free (A);
  return loss;
}

static double
ref_mean_loss (const Arch *a, const double *w, const float *x, const int *y, int n)
{
  double total = 0;
  for (int i = 0; i < n; i++)
    total += ref_loss (a, w, x + (gsize) i * a->side * a->side, y[i]);
  return total / n;
}

static KernModel *
arch_model (const Arch *a)
{
  g_autoptr (GError) error = NULL;
  KernModel *m = kern_cnn_new (a->side * a->side, a->channels, a->n_conv, a->q, a->pool,
                               a->hidden, a->n_hidden, a->k, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (m);
  return m;
}

/* The model's gradient against central differences of the reference's
 * mean loss, for every parameter of every layer that has any.
 *
 * Tolerance: the reference runs in double, so with eps = 1e-4 its
 * central difference is off by O(eps^2 f''') (about 1e-8 here) plus its
 * rounding, 1e-16 / eps.  The model runs in float: every product sums in
 * double and rounds once (u = 2^-24 = 6e-8), and each element of the
 * gradient goes through at most a few tens of such roundings and float
 * element-wise operations on these sizes, so its error stays below
 * 100 u |largest gradient| = 6e-6 of the largest gradient.  A wrong
 * index or a missing term is off by the size of a gradient entry, far
 * above the 1e-4 |largest| + 1e-3 |own| allowed. */
static void
check_gradient (const Arch *a, guint64 seed)
{
  KernModel *m = arch_model (a);
  gsize P = m->ops->n_params (m);
  int n = 5, d = a->side * a->side;
  g_autofree float *x = g_new (float, (gsize) n * d);
  g_autofree int *y = g_new (int, n);
  GRand *rand = g_rand_new_with_seed ((guint32) seed);
  for (int i = 0; i < n * d; i++)
    x[i] = (float) g_rand_double_range (rand, -1.0, 1.0);
  for (int i = 0; i < n; i++)
    y[i] = (int) g_rand_int_range (rand, 0, a->k);
  g_rand_free (rand);
  g_autofree float *params = g_new (float, P);
  g_autofree float *grad = g_new (float, P);
  m->ops->init (m, params, seed);
  /* biases start at 0: give them values so that their gradients and the
   * ReLU masks are general */
  for (gsize i = 0; i < P; i++)
    params[i] += 0.05f * (float) sin ((double) i);
  double loss = m->ops->loss_grad (m, params, x, y, n, grad);
  g_autofree double *w = g_new (double, P);
  for (gsize i = 0; i < P; i++)
    w[i] = params[i];
  double ref = ref_mean_loss (a, w, x, y, n);
  g_assert_cmpfloat_with_epsilon (loss, ref, 1e-5 * MAX (1.0, fabs (ref)));

  double largest = 0;
  for (gsize i = 0; i < P; i++)
    largest = MAX (largest, fabs (grad[i]));
  g_assert_cmpfloat (largest, >, 0);
  const double eps = 1e-4;
  for (int li = 0; li < m->n_layers; li++)
    {
      const KernLayer *ly = &m->layers[li];
      double group = 0;
      for (gsize i = ly->param_offset; i < ly->param_offset + ly->params; i++)
        {
          double keep = w[i];
          w[i] = keep + eps;
          double up = ref_mean_loss (a, w, x, y, n);
          w[i] = keep - eps;
          double down = ref_mean_loss (a, w, x, y, n);
          w[i] = keep;
          double fd = (up - down) / (2 * eps);
          double tol = 1e-4 * largest + 1e-3 * fabs (fd);
          if (fabs (grad[i] - fd) > tol)
            g_error ("%s: parameter %" G_GSIZE_FORMAT ": gradient %.9g, central difference "
                     "%.9g (tolerance %.3g)", ly->name, i, grad[i], fd, tol);
          group = MAX (group, fabs (fd));
        }
      /* every layer with parameters gets a gradient that is not all zero */
      if (ly->params > 0)
        g_assert_cmpfloat (group, >, 0);
    }
  kern_model_free (m);
}

static void
test_gradient (void)
{
  static const int ch2[] = { 2, 3 }, ch1[] = { 3 }, hid[] = { 4 };
  /* 6 x 6: conv 3 x 3 to 2, pool to 3 x 3, conv to 3, pool to 1 x 1,
   * a dense layer of 4, a head of 3 */
  Arch two = { 6, 2, 3, 2, 1, 3, ch2, hid };
  check_gradient (&two, 1);
  /* no pooling, a 5 x 5 kernel, no hidden layer */
  Arch wide = { 5, 1, 5, 1, 0, 4, ch1, NULL };
  check_gradient (&wide, 2);
  /* a 1 x 1 kernel and a pool of 3 that leaves a row and a column out */
  Arch odd = { 7, 1, 1, 3, 1, 2, ch1, hid };
  check_gradient (&odd, 3);
}

/* loss_grad_groups: the same numbers as one loss_grad per group (on the
 * fixed-order CPU backend, the same bits: every product row is the same
 * sum in the same order). */
static void
test_groups (void)
{
  static const int ch[] = { 3, 4 }, hid[] = { 5 };
  Arch a = { 8, 2, 3, 2, 1, 3, ch, hid };
  KernModel *m = arch_model (&a);
  gsize P = m->ops->n_params (m);
  int n = 4, G = 3, d = 64;
  g_autofree float *x = g_new (float, (gsize) G * n * d);
  g_autofree int *y = g_new (int, G * n);
  for (int i = 0; i < G * n * d; i++)
    x[i] = (float) sin (0.37 * i);
  for (int i = 0; i < G * n; i++)
    y[i] = i % 3;
  g_autofree float *params = g_new (float, P);
  m->ops->init (m, params, 9);
  g_autofree float *all = g_new (float, (gsize) G * P);
  g_autofree float *one = g_new (float, P);
  float *grads[3] = { all, all + P, all + 2 * P };
  double losses[3];
  m->ops->loss_grad_groups (m, params, x, y, n, G, grads, losses);
  for (int g = 0; g < G; g++)
    {
      double l = m->ops->loss_grad (m, params, x + (gsize) g * n * d, y + g * n, n, one);
      g_assert_cmpfloat (l, ==, losses[g]);
      g_assert_cmpint (memcmp (one, grads[g], P * sizeof (float)), ==, 0);
    }
  kern_model_free (m);
}

/* --- FLOP counts ------------------------------------------------------------- */

/* Valid taps of a q-wide kernel along an axis of H positions, counted. */
static double
taps_counted (int H, int q)
{
  int r = (q - 1) / 2;
  double v = 0;
  for (int y = 0; y < H; y++)
    for (int t = 0; t < q; t++)
      v += (y + t - r >= 0 && y + t - r < H);
  return v;
}

/* The default network on 28 x 28 (channels 16,32, kernel 3, pool 2,
 * hidden 128, 10 classes): forward and backward FLOPs as the formulas of
 * docs/kernels.md, and the layer sums. */
static void
test_flops (void)
{
  static const int ch[] = { 16, 32 }, hid[] = { 128 };
  Arch a = { 28, 2, 3, 2, 1, 10, ch, hid };
  KernModel *m = arch_model (&a);
  /* col2im's adds: V(H) = H q - r (r + 1) valid taps per axis */
  for (int q = 1; q <= 9; q += 2)
    for (int H = q; H <= 30; H++)
      g_assert_cmpfloat (taps_counted (H, q), ==, (double) H * q - (q - 1) / 2 * ((q + 1) / 2));
  double V14 = 14.0 * 3 - 1 * 2;
  double F = 7.0 * 7 * 32;
  for (int n = 1; n <= 64; n *= 4)
    {
      double fwd = n * (2.0 * 784 * 9 * 16          /* conv1: 2 HW K cout */
                        + 2.0 * 196 * 144 * 32      /* conv2 */
                        + 2.0 * F * 128             /* fc1 */
                        + 2.0 * 128 * 10            /* fc2 */
                        + 3.0 * 10 + 2);            /* xent and the mean */
      double bwd = n * (2.0 * 784 * 9 * 16 + 784.0 * 16)               /* conv1: dW, db */
                   - 16
                   + n * (4.0 * 196 * 144 * 32 + 196.0 * 32 + 16 * V14 * V14) - 32
                   + n * (4.0 * F * 128 + 128) - 128
                   + n * (4.0 * 128 * 10 + 10) - 10
                   + n * (10.0 + 2) + 1;
      g_assert_cmpfloat (m->ops->flops_forward (m, n), ==, fwd);
      g_assert_cmpfloat (m->ops->flops_backward (m, n), ==, bwd);
      double lf = 0, lb = 0;
      for (int i = 0; i < m->n_layers; i++)
        {
          lf += m->layers[i].fwd_flops_fixed + n * m->layers[i].fwd_flops;
          lb += m->layers[i].bwd_flops_fixed + n * m->layers[i].bwd_flops;
        }
      g_assert_cmpfloat (lf, ==, fwd);
      g_assert_cmpfloat (lb, ==, bwd);
    }
  /* conv, relu, pool twice; fc1, relu, fc2; xent */
  g_assert_cmpint (m->n_layers, ==, 10);
  g_assert_cmpstr (m->layers[0].name, ==, "conv1");
  g_assert_cmpint (m->layers[0].kind, ==, KERN_LAYER_CONV3X3);
  g_assert_cmpstr (m->layers[5].name, ==, "pool2");
  g_assert_cmpfloat (m->layers[5].outputs, ==, F);
  gsize P = (9 * 16 + 16) + (144 * 32 + 32) + ((gsize) F * 128 + 128) + (128 * 10 + 10);
  g_assert_cmpuint (m->ops->n_params (m), ==, P);
  gsize sum = 0;
  for (int i = 0; i < m->n_layers; i++)
    {
      g_assert_cmpuint (m->layers[i].param_offset, ==, sum);
      sum += m->layers[i].params;
    }
  g_assert_cmpuint (sum, ==, P);
  kern_model_free (m);
}

/* --- whole runs -------------------------------------------------------------- */

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Batch 64, momentum, one worker: at least 80 % test accuracy after 300
 * iterations (19,200 images, a third of an epoch). */
static void
test_fashion_mnist (void)
{
  g_autofree char *file = g_build_filename (FMNIST_DIR, "train-images-idx3-ubyte.gz", NULL);
  if (!g_file_test (file, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("Fashion-MNIST is not installed at " FMNIST_DIR
                   " (apt-get install dataset-fashion-mnist)");
      return;
    }
  const char text[] =
    "[scenario]\nname = fm-cnn\niterations = 300\n"
    "[cluster]\nworkers = 1\n"
    "[model]\nkind = cnn\nchannels = 8,16\nhidden = 64\ndataset = fashion-mnist\n"
    "batch = 64\noptimizer = momentum\nlr = 0.05\neval_every = 300\n"
    "[policy]\nkind = allreduce\n";
  SimRunSummary sum;
  test_run_scenario_text (text, NULL, NULL, &sum, NULL);
  g_test_message ("Fashion-MNIST test accuracy %.4f after 300 iterations, loss %.4f",
                  sum.final_accuracy, sum.final_loss);
  g_assert_cmpfloat (sum.final_accuracy, >=, 0.80);
}

/* A small CNN on 8 x 8 synthetic images, 4 classes. */
static const char small[] =
  "[scenario]\nname = c\nseed = 5\niterations = 16\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = cnn\nchannels = 4,6\nhidden = 16\nfeatures = 64\nclasses = 4\n"
  "separation = 0.5\nsamples = 2048\ntest_samples = 256\neval_samples = 256\nbatch = 16\n"
  "lr = 0.05\neval_every = 4\n"
  "[policy]\nkind = allreduce\n";

/* Every data-parallel policy trains it: the last evaluated loss is below
 * 0.9 x the first (time 0). */
static void
test_policies (void)
{
  static const char *const kinds[] = {
    "kind = ps\nconsistency = bsp\n",
    "kind = ps\nconsistency = ssp\n",
    "kind = ps\nconsistency = async\n",
    "kind = allreduce\n",
    "kind = allreduce\ncompression = top-k\n",
    "kind = ps\nconsistency = bsp\ncompression = qsgd\n",
    "kind = local-sgd\n",
    "kind = gossip\n",
    "kind = fedavg\n",
    "kind = hogwild\n",
    "kind = pipeline\n",
  };
  for (gsize i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autofree char *text = test_replaced (small, "kind = allreduce\n", kinds[i]);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpuint (r->metrics->len, >=, 2);
      const TestMetric *first = &g_array_index (r->metrics, TestMetric, 0);
      const TestMetric *last = &g_array_index (r->metrics, TestMetric, r->metrics->len - 1);
      g_autofree char *what = g_strdelimit (g_strstrip (g_strdup (kinds[i])), "\n", ',');
      g_test_message ("%s: loss %.4f -> %.4f", what, first->loss, last->loss);
      if (!(last->loss < 0.9 * first->loss))
        g_error ("%s: the loss went from %g to %g", what, first->loss, last->loss);
      test_run_free (r);
    }
}

/* --threads 1 and 2 give the same numbers (the lanes' contract), and
 * the run trained. */
static void
test_threads (void)
{
  /* 48 workers of batch 16: three tasks of TRAIN_TASK_ROWS / 16 workers
   * each, so that the second thread's clone computes some of them */
  g_autofree char *text = test_replaced (small, "workers = 4\n", "workers = 48\n");
  train_set_threads (1);
  TestRun *a = test_run_collect (text, NULL);
  train_set_threads (2);
  TestRun *b = test_run_collect (text, NULL);
  train_set_threads (1);
  test_assert_same_runs (a, b);
  const TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
  g_assert_cmpfloat (a->sum.final_loss, <, 0.9 * first->loss);
  test_run_free (a);
  test_run_free (b);
}

/* The run's losses and kernel, in a dtsim process told to use OpenBLAS's
 * kernels for `core` (NULL: its own choice). */
static char *
run_on_core (const char *dir, const char *ini, const char *core)
{
  g_autofree char *was = g_strdup (g_getenv ("OPENBLAS_CORETYPE"));
  if (core)
    g_setenv ("OPENBLAS_CORETYPE", core, TRUE);
  else
    g_unsetenv ("OPENBLAS_CORETYPE");
  g_autofree char *db = g_build_filename (dir, core ? core : "own", NULL);
  g_autofree char *dbfile = g_strconcat (db, ".db", NULL);
  g_autofree char *out = NULL, *err = NULL;
  int rc = test_run_dtsim (dir, &out, &err, "run", ini, "-o", dbfile, "-q", NULL);
  if (was)
    g_setenv ("OPENBLAS_CORETYPE", was, TRUE);
  else
    g_unsetenv ("OPENBLAS_CORETYPE");
  g_assert_cmpint (rc, ==, 0);
  double final = test_query_number (dbfile, "SELECT final_loss FROM runs");
  double weighted = test_query_number (dbfile, "SELECT sum(loss * (step + 1)) FROM metrics");
  g_assert_cmpfloat (test_query_number (dbfile, "SELECT count(*) FROM runs WHERE kernel = "
                                                "'fixed-order'"), ==, 1);
  return g_strdup_printf ("%a %a", final, weighted);
}

/* With [kernels] reproducible at its default, OpenBLAS told to use
 * Haswell's kernels changes no bit of the run (compared within this
 * machine: no stored digest of real math); with reproducible = false the
 * model runs on OpenBLAS's sgemm. */
static void
test_coretype (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-cnn-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "c.ini", NULL);
  g_autofree char *text = test_replaced (small, "lr = 0.05\n", "lr = 0.5\n");
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *own = run_on_core (dir, ini, NULL);
  g_autofree char *haswell = run_on_core (dir, ini, "Haswell");
  g_assert_cmpstr (own, ==, haswell);
  /* the same products on OpenBLAS's sgemm run and train too */
  g_autofree char *db = g_build_filename (dir, "blas.db", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "-q", "--set",
                                   "kernels.reproducible=false", NULL), ==, 0);
  g_assert_cmpfloat (test_query_number (db, "SELECT count(*) FROM runs WHERE kernel LIKE "
                                            "'OpenBLAS %'"), ==, 1);
  g_assert_cmpfloat (test_query_number (db, "SELECT final_loss FROM runs"), <,
                     0.9 * test_query_number (db, "SELECT loss FROM metrics WHERE step = 0"));
  sim_remove_tree (dir);
}

/* What kind = cnn cannot run, refused in one line naming the key. */
static void
test_refusals_one_line (void)
{
  static const TestRefusal cases[] = {
    { "kind = allreduce\n", "kind = allreduce\n[kernels]\nbackend = cuda\n",
      "[kernels] backend: kind = cnn runs its math on the CPU backend only" },
    { "features = 64\n", "features = 50\n", "[model] features: kind = cnn reads a sample" },
    { "kind = cnn\n", "kind = mlp\n", "[model] channels: applies only to kind = cnn" },
    { "channels = 4,6\n", "channels = 4,6\nkernel = 4\n", "[model] kernel: 4 is even" },
    { "channels = 4,6\n", "channels = 4,6\nkernel = 11\n", "[model] kernel" },
    { "channels = 4,6\n", "channels = 4,6\npool = 0\n", "[model] pool" },
    { "channels = 4,6\n", "channels = 0\n", "[model] channels" },
    { "channels = 4,6\n", "channels = 1,1,1,1,1,1,1,1,1\n", "[model] channels: 9 convolution" },
    { "channels = 4,6\n", "channels = 4,4,4\n", "[model] channels: convolution 3 sees a 2 x 2" },
    { "hidden = 16\n", "hidden = 1,1,1,1,1,1,1,1\n", "[model] hidden: 8 dense layers" },
  };
  test_refusals (small, cases, G_N_ELEMENTS (cases));
}

/* The layers cut into pipeline stages (kern_stage_new) at every place the
 * layer table allows, one micro-batch or four: each micro-batch's loss
 * and the summed gradient are the bits of the whole model's on the same
 * micro-batches (test_stages_match: the same operations on the same rows,
 * the loss scale 1 / B a power of two times the whole model's 1 / n). */
static void
check_stages (const Arch *a, guint64 seed)
{
  KernModel *m = arch_model (a);
  int B = 8, d = a->side * a->side, L = m->n_layers;
  g_autofree float *x = g_new (float, (gsize) B * d);
  g_autofree int *y = g_new (int, B);
  GRand *rand = g_rand_new_with_seed ((guint32) seed);
  for (int i = 0; i < B * d; i++)
    x[i] = (float) g_rand_double_range (rand, -1.0, 1.0);
  for (int i = 0; i < B; i++)
    y[i] = (int) g_rand_int_range (rand, 0, a->k);
  g_rand_free (rand);
  g_autofree float *params = test_noisy_params (m, seed);
  for (int M = 1; M <= 4; M *= 4)
    {
      int whole[] = { L };
      test_stages_match (m, params, x, y, B, M, whole, 1);
      for (int c = 1; c < L; c++)
        {
          int two[] = { c, L - c };
          test_stages_match (m, params, x, y, B, M, two, 2);
        }
      g_autofree int *ones = g_new (int, L);
      for (int i = 0; i < L; i++)
        ones[i] = 1;
      test_stages_match (m, params, x, y, B, M, ones, L);
    }
  kern_model_free (m);
}

static void
test_stages (void)
{
  static const int ch2[] = { 2, 3 }, hid[] = { 4, 5 };
  /* with pools: conv relu pool twice, fc relu fc relu fc, xent */
  Arch pooled = { 6, 2, 3, 2, 2, 3, ch2, hid };
  check_stages (&pooled, 3);
  /* without: conv relu twice, fc, xent */
  Arch plain = { 5, 2, 3, 1, 0, 4, ch2, NULL };
  check_stages (&plain, 4);
}

/* Losses of two runs, bit for bit. */
static void
assert_same_losses (const TestRun *a, const TestRun *b)
{
  g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
  for (guint i = 0; i < a->metrics->len; i++)
    {
      double x = g_array_index (a->metrics, TestMetric, i).loss;
      double y = g_array_index (b->metrics, TestMetric, i).loss;
      if (memcmp (&x, &y, sizeof x) != 0)
        g_error ("evaluation %u: loss %a and %a", i, x, y);
    }
}

/* Under kind = pipeline, [device] compute_time = measured runs each
 * stage's math when its operation starts (the stages of test_stages),
 * the default the whole iteration's at its start.  With one micro-batch
 * the sums are the same and so are the losses, bit for bit, whatever the
 * cut (balanced, or one that falls between a ReLU and its pool and
 * between the dense layers); with four, each stage's gradient is the sum
 * of four micro-batch products where the stacked pass sums one chain over
 * the batch (docs/kernels.md bounds the difference), and the run trains
 * all the same. */
static void
test_pipeline_measured (void)
{
  static const char *const cuts[] = { "", "stage_layers = 2,3,3,2\n" };
  for (gsize c = 0; c < G_N_ELEMENTS (cuts); c++)
    {
      g_autofree char *pipe = g_strconcat ("kind = pipeline\nmicrobatches = 1\n", cuts[c],
                                           NULL);
      g_autofree char *text = test_replaced (small, "kind = allreduce\n", pipe);
      const char *measured[] = { "device.compute_time=measured", NULL };
      TestRun *a = test_run_collect (text, NULL);
      TestRun *b = test_run_collect (text, measured);
      assert_same_losses (a, b);
      test_run_free (a);
      test_run_free (b);
    }
  g_autofree char *text = test_replaced (small, "kind = allreduce\n",
                                         "kind = pipeline\nmicrobatches = 4\n");
  const char *measured[] = { "device.compute_time=measured", NULL };
  TestRun *a = test_run_collect (text, NULL);
  TestRun *b = test_run_collect (text, measured);
  g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
  for (guint i = 0; i < a->metrics->len; i++)
    test_assert_close (g_array_index (a->metrics, TestMetric, i).loss,
                       g_array_index (b->metrics, TestMetric, i).loss, 1e-4);
  const TestMetric *first = &g_array_index (b->metrics, TestMetric, 0);
  g_assert_cmpfloat (b->sum.final_loss, <, 0.9 * first->loss);
  test_run_free (a);
  test_run_free (b);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cnn/gradient", test_gradient);
  g_test_add_func ("/cnn/groups", test_groups);
  g_test_add_func ("/cnn/stages", test_stages);
  g_test_add_func ("/cnn/pipeline-measured", test_pipeline_measured);
  g_test_add_func ("/cnn/flops", test_flops);
  g_test_add_func ("/cnn/fashion-mnist", test_fashion_mnist);
  g_test_add_func ("/cnn/policies", test_policies);
  g_test_add_func ("/cnn/threads", test_threads);
  g_test_add_func ("/cnn/coretype", test_coretype);
  g_test_add_func ("/cnn/refusals", test_refusals_one_line);
  return g_test_run ();
}
