/*
 * test-hetero.c — devices of several kinds in one job ([cluster] device_mix)
 * and the batch shared by speed ([policy] balance; docs/cluster.md,
 * "Devices of several kinds"): a synchronous all-reduce waits for the
 * slowest device, balanced batches follow the speeds by largest
 * remainders and even out the steps, one kind listed is the homogeneous
 * run, and balanced real math is single-worker SGD on the concatenated
 * batch.
 *
 * The devices come from a catalog written here: "slow" and "fast", peaks
 * of 1 and 3 GFLOP/s at efficiency 0.5, and the scenario sets [device]
 * memory_bandwidth = 0, so a step of b samples on a device of peak F costs
 * (b f + f0) / (F x 0.5): f FLOPs per sample, f0 fixed (the first layer
 * computes no input gradient).
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "comm/collectives.h"
#include "config/models.h"
#include "config/scenario.h"
#include "device/model.h"
#include "kernels/kernels.h"
#include "policies/policy.h"
#include "tests/util.h"

static const char catalog_text[] =
  "[device:slow]\ndescription = test device of 1 GFLOP/s\nflops = 1GFLOPS\n"
  "memory_bandwidth = 1TBps\nefficiency = 0.5\n"
  "[device:fast]\ndescription = test device of 3 GFLOP/s\nflops = 3GFLOPS\n"
  "memory_bandwidth = 1TBps\nefficiency = 0.5\n";

static const double F_SLOW = 1e9 * 0.5, F_FAST = 3e9 * 0.5; /* FLOP/s achieved */

static char *catalog_path;

/* The scenario on the test catalog, `devices` its [cluster] device_mix. */
static char *
scenario (const char *devices, int workers)
{
  return g_strdup_printf (
    "[scenario]\nname = t\nseed = 5\niterations = 5\n"
    "[cluster]\nworkers = %d\ncatalog = %s\ndevice_mix = %s\n"
    "[device]\nmemory_bandwidth = 0\n"
    "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
    "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
    "[policy]\nkind = allreduce\nbucket_size = 0\nalgorithm = ring\n", workers, catalog_path,
    devices);
}

/* FLOPs of one sample's forward and backward of c's model, and (*fixed)
 * those of a step whatever its batch. */
static double
flops_per_sample (const SimConfig *c, double *fixed)
{
  g_autoptr (GError) error = NULL;
  KernModel *m = sim_model_new (c, NULL, &error);
  g_assert_no_error (error);
  double f = 0;
  *fixed = 0;
  for (int l = 0; l < m->n_layers; l++)
    {
      *fixed += m->layers[l].fwd_flops_fixed + m->layers[l].bwd_flops_fixed;
      f += m->layers[l].fwd_flops + m->layers[l].bwd_flops;
    }
  kern_model_free (m);
  return f;
}

/* Two slow and two fast workers, one bucket, contention none: every
 * iteration takes the slow device's step T_s = (b f + f0) / F_slow, then
 * the ring all-reduce C(4P bytes), then the update 2P / F_slow (the first
 * listed device's); a fast worker waits T_s - T_f, T_f = (b f + f0) /
 * F_fast, a slow one not at all.  No straggler model is set. */
static void
test_slowest_plus_collective (void)
{
  g_autofree char *text = scenario ("slow x 2, fast x 2", 4);
  SimConfig *c = test_load_one (text);
  double f0;
  const double f = flops_per_sample (c, &f0), b = 8, P = 15 * 4 + 4;
  const double T_s = (b * f + f0) / F_SLOW, T_f = (b * f + f0) / F_FAST;
  const double alpha = 2 * 20e-6, beta = 8 / 1e9;
  const double C = comm_cost (comm_lookup ("ring"), COMM_ALLREDUCE, 4, (gsize) P, 4, alpha,
                              beta, 0);
  const double U = kern_sgd_flops ((gsize) P) / F_SLOW;
  TestRun *r = test_run_collect (text, NULL);
  g_assert_cmpuint (r->rows->len, ==, 5 * 4);
  for (guint i = 0; i < r->rows->len; i++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, i);
      test_assert_close (x->end - x->start, T_s + C + U, 1e-9);
      if (x->worker < 2)
        g_assert_cmpfloat (x->wait, ==, 0);
      else
        test_assert_close (x->wait, T_s - T_f, 1e-9);
    }
  test_assert_close (r->sum.sim_time, 5 * (T_s + C + U), 1e-9);
  test_run_free (r);
  sim_config_free (c);
}

/* balance = speed, one slow and three fast workers, batch 8: a device's
 * speed is 8 / ((8 f + f0) / F), so the global batch G = 32 is shared as
 * G v_w / sum v with v = 1 : 3 : 3 : 3 (the peaks' ratio), i.e.
 * 3.2, 9.6, 9.6, 9.6; the floors 3, 9, 9, 9 leave 2 samples, which go to
 * the two largest remainders, ties to the lower worker: 3, 10, 10, 9.  The
 * workers' steps then differ by less than one sample on the slow device. */
static void
test_balance_speed (void)
{
  g_autofree char *text = scenario ("slow x 1, fast x 3", 4);
  g_autofree char *balanced = g_strconcat (text, "balance = speed\n", NULL);
  SimConfig *c = test_load_one (balanced);
  const double G = 8 * 4, v[4] = { 1, 3, 3, 3 }, sum_v = 1 + 3 + 3 + 3;
  int want[4];
  int given = 0;
  for (int w = 0; w < 4; w++)
    given += want[w] = (int) floor (G * v[w] / sum_v);
  /* the remainders: 0.2 for worker 0, 0.6 for the others */
  for (int w = 1; w < 4 && given < (int) G; w++, given++)
    want[w]++;
  g_autoptr (GError) error = NULL;
  KernModel *m = sim_model_new (c, NULL, &error);
  g_assert_no_error (error);
  g_autofree int *got = NULL;
  g_assert_true (sim_balanced_batches (c, m, &got, &error));
  g_assert_nonnull (got);
  for (int w = 0; w < 4; w++)
    g_assert_cmpint (got[w], ==, want[w]);
  g_assert_cmpint (want[0] + want[1] + want[2] + want[3], ==, (int) G);
  g_assert_cmpint (want[1], ==, 10);
  g_assert_cmpint (want[3], ==, 9);
  kern_model_free (m);

  /* each worker's compute is its own step, (b_w f + f0) / F_w, plus the
   * update */
  double f0;
  const double f = flops_per_sample (c, &f0), P = 15 * 4 + 4;
  const double U = kern_sgd_flops ((gsize) P) / F_SLOW;
  TestRun *r = test_run_collect (balanced, NULL);
  double lo = INFINITY, hi = 0;
  for (guint i = 0; i < r->rows->len; i++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, i);
      double T = x->compute - U;
      test_assert_close (T, (want[x->worker] * f + f0) / (x->worker == 0 ? F_SLOW : F_FAST),
                         1e-9);
      lo = MIN (lo, T);
      hi = MAX (hi, T);
    }
  g_assert_cmpfloat (hi - lo, <=, f / F_SLOW);
  /* and the unbalanced run waits for the slow worker's 8 samples */
  TestRun *u = test_run_collect (text, NULL);
  g_assert_cmpfloat (r->sum.sim_time, <, u->sum.sim_time);
  test_run_free (u);
  test_run_free (r);
  sim_config_free (c);
}

/* One kind listed for every worker is the run of [cluster] device: the same
 * rows, times and losses, bit for bit. */
static void
test_one_kind_identical (void)
{
  g_autofree char *text = scenario ("fast x 4", 4);
  g_autofree char *homog = test_replaced (text, "device_mix = fast x 4", "device = fast");
  const char *stepped[] = { "model.kind=mlp", "model.hidden=3", "policy.bucket_size=64B",
                            "network.contention=max-min", NULL };
  TestRun *a = test_run_collect (text, stepped);
  TestRun *b = test_run_collect (homog, stepped);
  g_assert_cmpuint (a->rows->len, ==, 5 * 4);
  test_assert_same_runs (a, b);
  g_assert_cmpfloat (a->sum.sim_time, ==, b->sum.sim_time);
  g_assert_cmpfloat (a->sum.final_loss, ==, b->sum.final_loss);
  test_run_free (a);
  test_run_free (b);
}

/* Balanced real math: all-reduce SGD with batches b_w (gradients weighted
 * b_w W / G) is single-worker SGD on the concatenation of the workers'
 * batches, G samples, for all-reduce and the BSP parameter server; and it
 * learns. */
static void
test_balanced_math (void)
{
  g_autofree char *text = scenario ("slow x 1, fast x 2", 3);
  g_autofree char *balanced = g_strconcat (text, "balance = speed\n", NULL);
  const char *kinds[] = { "policy.kind=allreduce", "policy.kind=ps" };
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      const char *sets[] = { kinds[k], "scenario.iterations=30", "model.lr=0.1",
                             k == 1 ? "policy.consistency=bsp" : NULL, NULL };
      SimConfig *c = NULL;
      SimRunSummary sum;
      PolRecorder rec = { 0 };
      test_run_scenario_text (balanced, sets, &rec, &sum, &c);
      const int N = (int) c->workers;
      g_autoptr (GError) error = NULL;
      KernModel *m = sim_model_new (c, NULL, &error);
      g_assert_no_error (error);
      g_autofree int *b = NULL;
      g_assert_true (sim_balanced_batches (c, m, &b, &error));
      int G = 0;
      for (int w = 0; w < N; w++)
        G += b[w];
      g_assert_cmpint (G, ==, (int) c->batch * N);
      g_assert_cmpint (b[0], <, b[1]); /* the slow device takes fewer */
      kern_model_free (m);

      KernDataset *train = NULL, *test = NULL;
      kern_dataset_blobs ((int) c->samples, (int) c->test_samples, (int) c->features,
                          (int) c->classes, c->separation, (guint64) c->seed, &train, &test);
      KernModel *ref = kern_softmax_new ((int) c->features, (int) c->classes);
      gsize P = ref->ops->n_params (ref);
      g_autofree float *params = g_new0 (float, P);
      g_autofree float *grad = g_new0 (float, P);
      ref->ops->init (ref, params, (guint64) c->seed);
      KernOptConfig oc = sim_opt_config (c);
      KernOptimizer *opt = kern_optimizer_new (&oc, P);
      TrainSampler *s = train_samplers_new (train->n, N, (guint64) c->seed);
      g_autofree int *idx = g_new (int, G);
      g_autofree float *x = g_new (float, (gsize) G * train->d);
      g_autofree int *y = g_new (int, G);
      for (int it = 0; it < 30; it++)
        {
          int at = 0;
          for (int w = 0; w < N; w++)
            {
              train_sampler_next (&s[w], b[w], idx + at);
              at += b[w];
            }
          kern_dataset_gather (train, idx, G, x, y);
          ref->ops->loss_grad (ref, params, x, y, G, grad);
          kern_optimizer_step (opt, params, grad);
        }
      KernDataset eval = *train;
      eval.n = MIN (eval.n, (int) c->eval_samples);
      double loss, acc;
      ref->ops->evaluate (ref, params, &eval, &loss, &acc);
      test_assert_close (sum.final_loss, loss, 1e-5);
      g_assert_cmpfloat (sum.final_loss, <, log ((double) c->classes)); /* it learned */
      kern_optimizer_free (opt);
      train_samplers_free (s, N);
      kern_model_free (ref);
      kern_dataset_free (train);
      kern_dataset_free (test);
      sim_config_free (c);
    }
}

/* Each key refused in one line, naming the key and the fix. */
static void
test_refusals_hetero (void)
{
  g_autofree char *base = scenario ("slow x 2, fast x 2", 4);
  const TestRefusal cases[] = {
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x 2, fast x 3", "[cluster] device_mix: the counts sum to 5" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x 2, medium x 2", "[cluster] device_mix: unknown device 'medium'" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x 0, fast x 4", "[cluster] device_mix: 'slow x 0': the count" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x two, fast x 2", "[cluster] device_mix: 'slow x two'" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow 2, fast x 2", "is not 'NAME x COUNT'" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x 2,, fast x 2", "[cluster] device_mix: entry 2 is empty" },
    { "device_mix = slow x 2, fast x 2", "device_mix = slow x 2, fast x 2\ndevice = slow", "[cluster] device_mix: set together with [cluster] device" },
    { "bucket_size = 0", "bucket_size = 0\nbalance = fast", "[policy] balance" },
    { "device_mix = slow x 2, fast x 2", "device = slow", NULL },
    { "kind = allreduce", "kind = pipeline\nbalance = speed", "[policy] balance: kind = pipeline gives every worker the same batch" },
    { "kind = allreduce", "kind = allreduce\nbalance = speed\ntensor = 2", "[policy] balance: speed shares the batch among data-parallel workers" },
    { "[device]\n", "[device]\ncompute_time = measured\n", "[cluster] device_mix: prices each worker's step on its own device" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = test_replaced (base, cases[i].from, cases[i].to);
      if (!cases[i].want)
        {
          /* balance = speed needs devices */
          g_autofree char *t2 = g_strconcat (text, "balance = speed\n", NULL);
          g_autofree char *msg = test_load_scenario_error (t2);
          g_assert_nonnull (strstr (msg, "[policy] balance: speed shares the batch among devices of several kinds"));
          continue;
        }
      g_autofree char *msg = test_load_scenario_error (text);
      if (!strstr (msg, cases[i].want))
        g_error ("case %zu: '%s' does not say '%s'", i, msg, cases[i].want);
    }
  /* more entries than the bound */
  GString *many = g_string_new ("device_mix = ");
  for (int i = 0; i <= SIM_MAX_DEVICE_KINDS; i++)
    g_string_append_printf (many, "%sslow x 1", i ? ", " : "");
  g_autofree char *w = g_strdup_printf ("workers = %d", SIM_MAX_DEVICE_KINDS + 1);
  g_autofree char *t1 = test_replaced (base, "device_mix = slow x 2, fast x 2", many->str);
  g_autofree char *t2 = test_replaced (t1, "workers = 4", w);
  g_autofree char *msg = test_load_scenario_error (t2);
  g_assert_nonnull (strstr (msg, "[cluster] device_mix: more than 64 entries"));
  g_string_free (many, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *dir = g_dir_make_tmp ("dtsim-hetero-XXXXXX", NULL);
  g_assert_nonnull (dir);
  catalog_path = g_build_filename (dir, "catalog.ini", NULL);
  g_assert_true (g_file_set_contents (catalog_path, catalog_text, -1, NULL));
  g_test_add_func ("/hetero/slowest-plus-collective", test_slowest_plus_collective);
  g_test_add_func ("/hetero/balance-speed", test_balance_speed);
  g_test_add_func ("/hetero/one-kind-identical", test_one_kind_identical);
  g_test_add_func ("/hetero/balanced-math", test_balanced_math);
  g_test_add_func ("/hetero/refusals", test_refusals_hetero);
  int rc = g_test_run ();
  g_unlink (catalog_path);
  g_rmdir (dir);
  g_free (catalog_path);
  return rc;
}
