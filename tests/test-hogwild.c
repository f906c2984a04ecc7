/*
 * test-hogwild.c — Hogwild! (docs/policies.md, "Hogwild!").
 *
 * One core is sequential SGD, as the asynchronous parameter server with one
 * worker is.  Cores in lockstep (fixed step time, no stragglers, no lock)
 * all read the model, and their W updates land together: x -= lr sum_w g_w,
 * which is all-reduce SGD at W times the rate; each iteration lasts T + u.
 * Behind the lock a core's step costs two lock services (read, write), so
 * with tiny steps the lock is the bottleneck: the run lasts about 2u per
 * update.  A read while another core writes sees half a write (torn reads,
 * counted); with the lock, never.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

/* The run's count of torn reads (its params row). */
static gint64
torn_reads (const TestRun *r)
{
  const char *v = g_hash_table_lookup (r->params, "policy.torn_reads");
  g_assert_nonnull (v);
  return g_ascii_strtoll (v, NULL, 10);
}

static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 10\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = hogwild\n";

#define P_FLOATS (15 * 4 + 4)

/* One core, with or without the lock: sequential SGD, the model of the
 * asynchronous parameter server with one worker. */
static void
test_one_core (void)
{
  const char *locks[] = { "policy.lock=none", "policy.lock=lock" };
  const char *ps[] = { "policy.kind=ps", "policy.consistency=async", "cluster.workers=1",
                       "scenario.iterations=40", NULL };
  static const char ps_cluster[] =
    "[scenario]\nname = t\nseed = 5\niterations = 10\n"
    "[cluster]\nworkers = 4\n"
    "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
    "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
    "[policy]\n";
  TestRun *a = test_run_collect (ps_cluster, ps);
  for (gsize i = 0; i < G_N_ELEMENTS (locks); i++)
    {
      const char *sets[] = { locks[i], "cluster.workers=1", "scenario.iterations=40", NULL };
      TestRun *h = test_run_collect (cluster, sets);
      test_assert_close (h->sum.final_loss, a->sum.final_loss, 1e-6);
      g_assert_cmpint (torn_reads (h), ==, 0);
      test_run_free (h);
    }
  g_assert_cmpfloat (a->sum.final_loss, <, log (4.0));
  test_run_free (a);
}

/* Lockstep without the lock: x -= lr sum_w g_w each round, all-reduce SGD
 * at W x lr; every iteration lasts T + u, none waits, none is stale. */
static void
test_lockstep (void)
{
  static const char ar_cluster[] =
    "[scenario]\nname = t\nseed = 5\niterations = 10\n"
    "[cluster]\nworkers = 4\n"
    "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
    "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
    "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n";
  const char *hw[] = { "scenario.iterations=30", "model.lr=0.05", NULL };
  const char *ar[] = { "scenario.iterations=30", "model.lr=0.2", NULL };
  TestRun *h = test_run_collect (cluster, hw);
  TestRun *a = test_run_collect (ar_cluster, ar);
  test_assert_close (h->sum.final_loss, a->sum.final_loss, 1e-5);
  const double T = 1e-3, u = kern_sgd_flops (P_FLOATS) / (1e9 * 0.5);
  test_assert_close (h->sum.sim_time, 30 * (T + u), 1e-9);
  g_assert_cmpuint (h->rows->len, ==, 120);
  for (guint i = 0; i < h->rows->len; i++)
    {
      const TestRow *x = &g_array_index (h->rows, TestRow, i);
      test_assert_close (x->end - x->start, T + u, 1e-9);
      g_assert_cmpfloat (x->wait, ==, 0);
      g_assert_cmpint (x->staleness, ==, 0);
    }
  g_assert_cmpint (torn_reads (h), ==, 0);
  test_run_free (h);
  test_run_free (a);
}

/* Tiny steps behind the lock: the lock serves every read and write, 2u per
 * update, one after the other; the run lasts between N 2u and N 2u + the
 * last core's step. */
static void
test_lock_bound (void)
{
  const double T = 1e-7, u = kern_sgd_flops (P_FLOATS) / (1e9 * 0.5);
  const int W = 8, iters = 20;
  const char *sets[] = { "policy.lock=lock", "cluster.workers=8", "device.step_time=1e-7",
                         "scenario.iterations=20", NULL };
  TestRun *r = test_run_collect (cluster, sets);
  double N = (double) W * iters;
  g_assert_cmpfloat (r->sum.sim_time, >=, N * 2 * u * (1 - 1e-9));
  g_assert_cmpfloat (r->sum.sim_time, <=, N * 2 * u + T + 2 * u);
  double waited = 0;
  for (guint i = 0; i < r->rows->len; i++)
    waited += g_array_index (r->rows, TestRow, i).wait;
  g_assert_cmpfloat (waited, >, 0);
  g_assert_cmpint (torn_reads (r), ==, 0);
  test_run_free (r);
}

/* Writes as long as half a step and one core slower: without the lock,
 * some reads land inside the other core's write. */
static void
test_torn_reads (void)
{
  const char *sets[] = { "cluster.workers=2", "device.memory_bandwidth=1.5MBps",
                         "stragglers.model=fixed", "stragglers.slow=1", "stragglers.factor=1.3",
                         "scenario.iterations=20", NULL };
  const char *locked[] = { "cluster.workers=2", "device.memory_bandwidth=1.5MBps",
                           "stragglers.model=fixed", "stragglers.slow=1",
                           "stragglers.factor=1.3", "scenario.iterations=20",
                           "policy.lock=lock", NULL };
  TestRun *r = test_run_collect (cluster, sets);
  TestRun *l = test_run_collect (cluster, locked);
  g_assert_cmpint (torn_reads (r), >, 0);
  g_assert_cmpint (torn_reads (l), ==, 0);
  g_assert_cmpfloat (r->sum.final_loss, <, log (4.0));
  test_run_free (r);
  test_run_free (l);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/hogwild/one-core", test_one_core);
  g_test_add_func ("/hogwild/lockstep", test_lockstep);
  g_test_add_func ("/hogwild/lock-bound", test_lock_bound);
  g_test_add_func ("/hogwild/torn-reads", test_torn_reads);
  return g_test_run ();
}
