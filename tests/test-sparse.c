/*
 * test-sparse.c — sparse logistic regression ([model] kind = sparse,
 * kernels/sparse.c) and the parameter server's sparse pulls and pushes
 * ([policy] pull = sparse, policies/ps-sparse.c): the gradient against
 * finite differences, the keys a batch touches, the Zipf law of the data,
 * the bytes of every pull and push in closed form from the batches, a BSP
 * run that learns exactly what the dense run learns, and the refusals.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/shard.h"
#include "kernels/kernels.h"
#include "kernels/rng.h"
#include "policies/ps-sparse.h"
#include "train/sampler.h"
#include "tests/util.h"

static char *tmpdir;

#define F 60        /* features */
#define NNZ 6
#define N 10        /* rows of a batch */

/* A batch of N rows of the sparse data (F features, skew 1). */
static KernDataset *
batch_data (guint64 seed)
{
  KernDataset *tr = NULL;
  kern_dataset_sparse (N, 0, F, NNZ, 1.0, seed, &tr, NULL);
  return tr;
}

/* Central differences of the mean loss against the analytic gradient on
 * every parameter.  The loss is summed in double from float parameters, so
 * with a step of h = 2^-7 the difference quotient's error is the Taylor
 * term h^2 |l'''| / 6 <= h^2 / 6 x max v^3 (|sigmoid''| <= 1/10, v <= 1)
 * plus the double rounding; the gradient sums N float terms g v, each
 * below 1 / N, so its rounding is at most gamma(N) = N u / (1 - N u), u =
 * 2^-24.  Entries off the batch's features are exactly 0. */
static void
test_finite_differences (void)
{
  KernDataset *ds = batch_data (3);
  KernModel *m = kern_sparse_new (F, NNZ);
  gsize P = m->ops->n_params (m);
  g_assert_cmpuint (P, ==, F + 1);
  g_autofree float *p = g_new (float, P);
  g_autofree float *g = g_new (float, P);
  KernRng rng;
  kern_rng_init (&rng, 11, 1);
  for (gsize i = 0; i < P; i++)
    p[i] = (float) (0.5 * kern_rng_normal (&rng));
  m->ops->loss_grad (m, p, ds->x, ds->y, N, g);
  g_autofree gsize *keys = g_new (gsize, N * m->d + 1);
  gsize nk = kern_model_touched (m, ds->x, N, keys);
  double h = 0x1.0p-7, u = 0x1.0p-24, gamma = N * u / (1 - N * u);
  double tol = h * h / 6 + gamma + 1e-9;
  for (gsize i = 0, k = 0; i < P; i++)
    {
      gboolean touched = k < nk && keys[k] == i;
      k += touched;
      float keep = p[i];
      p[i] = keep + (float) h;
      double up = m->ops->loss_grad (m, p, ds->x, ds->y, N, NULL);
      p[i] = keep - (float) h;
      double down = m->ops->loss_grad (m, p, ds->x, ds->y, N, NULL);
      p[i] = keep;
      double fd = (up - down) / (2 * h);
      if (!touched)
        {
          g_assert_cmpfloat (g[i], ==, 0.0f);
          g_assert_cmpfloat (fd, ==, 0.0);
        }
      else
        g_assert_cmpfloat_with_epsilon (g[i], fd, tol);
    }
  kern_model_free (m);
  kern_dataset_free (ds);
}

/* The touched keys are the distinct feature indices of the batch's rows
 * (padding pairs left out) and the bias F, ascending. */
static void
test_touched (void)
{
  KernDataset *ds = batch_data (5);
  KernModel *m = kern_sparse_new (F, NNZ);
  gboolean seen[F + 1] = { FALSE };
  for (int i = 0; i < N * NNZ; i++)
    {
      float f = ds->x[2 * i];
      g_assert_true (f == -1.0f || (f >= 0 && f < F && f == floorf (f)));
      if (f >= 0)
        seen[(int) f] = TRUE;
    }
  seen[F] = TRUE;
  g_autofree gsize *keys = g_new (gsize, N * m->d + 1);
  gsize nk = kern_model_touched (m, ds->x, N, keys);
  gsize want = 0;
  for (int f = 0; f <= F; f++)
    if (seen[f])
      g_assert_cmpuint (keys[want++], ==, (gsize) f);
  g_assert_cmpuint (nk, ==, want);
  g_assert_cmpuint (nk, <, F + 1); /* a batch reads a part of the model */
  /* a dense model lists none */
  KernModel *dense = kern_softmax_new (4, 2);
  g_assert_null (dense->ops->touched);
  kern_model_free (dense);
  kern_model_free (m);
  kern_dataset_free (ds);
}

/* Rank 1 of the Zipf law is feature 0 (the permutation maps rank k to
 * (k - 1) x mult mod F): its draws against rank 2's, the most drawn other
 * feature, are 2^a to within 5 standard errors of the ratio of two counts
 * c1, c2 (relative error sqrt(1/c1 + 1/c2)).  Draws are counted from the
 * merged values, v sqrt(nnz) each. */
static void
test_zipf (void)
{
  const int n = 20000, q = 8, Fz = 1000;
  const double a = 1.1;
  KernDataset *tr = NULL;
  kern_dataset_sparse (n, 0, Fz, q, a, 9, &tr, NULL);
  g_autofree double *draws = g_new0 (double, Fz);
  for (int i = 0; i < n * q; i++)
    if (tr->x[2 * i] >= 0)
      draws[(int) tr->x[2 * i]] += round (tr->x[2 * i + 1] * sqrt ((double) q));
  double total = 0;
  int second = 1;
  for (int f = 0; f < Fz; f++)
    {
      total += draws[f];
      if (f > 0 && draws[f] > draws[second])
        second = f;
    }
  g_assert_cmpfloat (total, ==, (double) n * q);
  for (int f = 1; f < Fz; f++)
    g_assert_cmpfloat (draws[0], >=, draws[f]);
  double ratio = draws[0] / draws[second];
  double se = ratio * sqrt (1 / draws[0] + 1 / draws[second]);
  g_assert_cmpfloat (fabs (ratio - pow (2, a)), <, 5 * se);
  /* labels of both kinds */
  int ones = 0;
  for (int i = 0; i < n; i++)
    ones += tr->y[i];
  g_assert_cmpint (ones, >, 0);
  g_assert_cmpint (ones, <, n);
  kern_dataset_free (tr);
}

#define W 2
#define S 2
#define BATCH 16
#define SAMPLES 512
#define DIM 5000
#define SEED 21

static char *
ps_scenario (const char *pull, const char *extra)
{
  return g_strdup_printf ("[scenario]\nname = sparse\nseed = %d\niterations = 12\n"
                          "[cluster]\nworkers = %d\nservers = %d\n"
                          "[device]\nflops = 1GFLOPS\n"
                          "[network]\ntopology = star\nbandwidth = 1Gbps\nlatency = 10us\n"
                          "[model]\nkind = sparse\ndimension = %d\nnnz = 8\nskew = 1.2\n"
                          "samples = %d\ntest_samples = 256\nbatch = %d\nlr = 1\n"
                          "eval_every = 2\n%s"
                          "[policy]\nkind = ps\nconsistency = bsp\npull = %s\n",
                          SEED, W, S, DIM, SAMPLES, BATCH, extra ? extra : "", pull);
}

/* One iteration: the initial reply of server s to worker w carries the
 * keys of w's first batch in s's shard, and w's push the same keys, each
 * 8 bytes: the batch from w's sampler (iid parts of the seeded set), the
 * keys from kern_model_touched, the shards from pol_sparse_count, which
 * the loop checks against the keys themselves. */
static void
test_pull_bytes (void)
{
  g_autofree char *text = ps_scenario ("sparse", NULL);
  g_autofree char *db = test_run_messages (tmpdir, text, "bytes");
  KernDataset *tr = NULL;
  kern_dataset_sparse (SAMPLES, 256, DIM, 8, 1.2, SEED, &tr, NULL);
  KernModel *m = kern_sparse_new (DIM, 8);
  TrainSampler *smp = train_samplers_new (SAMPLES, W, SEED);
  gsize P = DIM + 1, lo[S], hi[S];
  for (int s = 0; s < S; s++)
    comm_shard_bounds (P, S, s, &lo[s], &hi[s]);
  /* partition = range: server s holds the shard [lo[s], hi[s]) */
  PolPartition *part = pol_partition_new (POL_PARTITION_RANGE, P, S, 1, 1, SEED);
  PolSparse *sp = pol_sparse_new (m, tr, BATCH, part);
  pol_partition_free (part);
  for (int w = 0; w < W; w++)
    {
      int idx[BATCH];
      train_sampler_next (&smp[w], BATCH, idx);
      gint64 counts[S];
      gint64 total = pol_sparse_count (sp, idx, counts);
      /* the same keys, by hand */
      g_autofree float *x = g_new (float, BATCH * m->d);
      int y[BATCH];
      kern_dataset_gather (tr, idx, BATCH, x, y);
      g_autofree gsize *keys = g_new (gsize, BATCH * m->d + 1);
      gsize nk = kern_model_touched (m, x, BATCH, keys);
      g_assert_cmpint (total, ==, (gint64) nk);
      gint64 sum = 0;
      for (int s = 0; s < S; s++)
        {
          gint64 in = 0;
          for (gsize k = 0; k < nk; k++)
            in += keys[k] >= lo[s] && keys[k] < hi[s];
          g_assert_cmpint (counts[s], ==, in);
          sum += in;
          g_autofree char *q = g_strdup_printf ("SELECT bytes FROM messages WHERE tag = '%s' "
                                                "AND src = '%s%d' AND dst = '%s%d'",
                                                "params", "server", s, "worker", w);
          g_assert_cmpfloat (test_query_number (db, q), ==, POL_SPARSE_KEY_BYTES * in);
          g_autofree char *r = g_strdup_printf ("SELECT bytes FROM messages WHERE tag = 'grad' "
                                                "AND src = 'worker%d' AND dst = 'server%d'", w, s);
          g_assert_cmpfloat (test_query_number (db, r), ==, POL_SPARSE_KEY_BYTES * in);
        }
      g_assert_cmpint (sum, ==, total);
      g_assert_cmpfloat (POL_SPARSE_KEY_BYTES * total, <, 4.0 * P);
    }
  pol_sparse_free (sp);
  train_samplers_free (smp, W);
  kern_model_free (m);
  kern_dataset_free (tr);
}

/* BSP: sparse pulls fetch every key the gradient reads, so the run learns
 * what the dense run learns, evaluation for evaluation, in fewer bytes
 * and less simulated time.  Bit for bit with two workers: a server sums a
 * round's gradients in their order of arrival, which the bytes change,
 * and a sum of two floats does not depend on its order (with more workers
 * the rounds agree to the float rounding of that sum).  Evaluations every
 * W gradients fall on round ends. */
static void
test_bsp_same_as_dense (void)
{
  g_autofree char *dense = ps_scenario ("dense", NULL);
  g_autofree char *sparse = ps_scenario ("sparse", NULL);
  TestRun *a = test_run_collect (dense, NULL);
  TestRun *b = test_run_collect (sparse, NULL);
  g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
  g_assert_cmpuint (a->metrics->len, >, 2);
  for (guint i = 0; i < a->metrics->len; i++)
    {
      TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
      TestMetric *y = &g_array_index (b->metrics, TestMetric, i);
      g_assert_cmpint (x->step, ==, y->step);
      g_assert_cmpfloat (x->loss, ==, y->loss);
      g_assert_cmpfloat (x->accuracy, ==, y->accuracy);
    }
  g_assert_cmpfloat (a->sum.final_loss, ==, b->sum.final_loss);
  TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
  g_assert_cmpfloat (a->sum.final_loss, <, first->loss); /* it learns */
  g_assert_cmpfloat (b->sum.sim_time, <, a->sum.sim_time);
  double pull = g_ascii_strtod (g_hash_table_lookup (b->params, "policy.pull_bytes"), NULL);
  double push = g_ascii_strtod (g_hash_table_lookup (b->params, "policy.push_bytes"), NULL);
  double full = g_ascii_strtod (g_hash_table_lookup (b->params, "policy.dense_bytes"), NULL);
  g_assert_cmpfloat (full, ==, 4.0 * (DIM + 1));
  /* at most BATCH x nnz features and the bias a batch */
  g_assert_cmpfloat (pull, >, 0);
  g_assert_cmpfloat (pull, <=, POL_SPARSE_KEY_BYTES * (BATCH * 8 + 1));
  g_assert_cmpfloat (push, <=, POL_SPARSE_KEY_BYTES * (BATCH * 8 + 1));
  g_assert_null (g_hash_table_lookup (a->params, "policy.pull_bytes"));
  test_run_free (a);
  test_run_free (b);
}

/* Bad sizes and keys that do not fit, each refused in one line naming its
 * key. */
static void
test_refusals_one_line (void)
{
  g_autofree char *base = ps_scenario ("sparse", NULL);
  static const TestRefusal cases[] = {
    { "dimension = 5000\n", "dimension = 0\n", "[model] dimension" },
    { "dimension = 5000\n", "dimension = 100000000\n", "[model] dimension" },
    { "nnz = 8\n", "nnz = 0\n", "[model] nnz" },
    { "nnz = 8\n", "nnz = 100000\n", "[model] nnz" },
    { "dimension = 5000\n", "dimension = 4\n", "[model] nnz: 8 draws per sample exceed the 4" },
    { "skew = 1.2\n", "skew = 0\n", "[model] skew" },
    { "skew = 1.2\n", "skew = -1\n", "[model] skew" },
    { "skew = 1.2\n", "skew = lots\n", "[model] skew" },
    { "nnz = 8\n", "nnz = 8\nfeatures = 10\n", "[model] features: does not apply to kind = sparse" },
    { "nnz = 8\n", "nnz = 8\ndataset = fashion-mnist\n", "[model] dataset: kind = sparse draws its own" },
    { "pull = sparse\n", "pull = sideways\n", "[policy] pull" },
    { "pull = sparse\n", "pull = sparse\ncompression = top-k\n", "[policy] pull: sparse pushes" },
    { "pull = sparse\n", "pull = sparse\nfilter = zero\n", "[policy] pull: sparse pushes already" },
    { "kind = sparse\ndimension = 5000\nnnz = 8\nskew = 1.2\n", "kind = softmax\nfeatures = 8\n",
      "[policy] pull: sparse needs a model whose batches read few parameters" },
    { "kind = ps\nconsistency = bsp\n", "kind = allreduce\n", "[policy] pull" },
    { "kind = sparse\ndimension = 5000\nnnz = 8\nskew = 1.2\n", "kind = softmax\nnnz = 8\n",
      "[model] nnz: applies only to kind = sparse" },
  };
  test_refusals (base, cases, G_N_ELEMENTS (cases));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-sparse-XXXXXX", NULL);
  g_test_add_func ("/sparse/model/finite-differences", test_finite_differences);
  g_test_add_func ("/sparse/model/touched", test_touched);
  g_test_add_func ("/sparse/data/zipf", test_zipf);
  g_test_add_func ("/sparse/ps/pull-bytes", test_pull_bytes);
  g_test_add_func ("/sparse/ps/bsp-same-as-dense", test_bsp_same_as_dense);
  g_test_add_func ("/sparse/refusals", test_refusals_one_line);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
