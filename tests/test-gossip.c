/*
 * test-gossip.c — decentralized SGD (docs/policies.md, "Gossip").
 *
 * Consensus: with a vanishing learning rate the models only mix,
 * x^{k+1} = M x^k, so the consensus distance never shrinks by less than the
 * square of the mixing matrix's second-largest eigenvalue modulus per round,
 * and its ratio tends to that square; on a ring of n with weights 1/3 the
 * eigenvalues are (1 + 2 cos(2 pi m / n)) / 3.  Equivalence: on the complete
 * graph the weights are 1/W, and adapt-then-combine averages the W stepped
 * models, which is all-reduce SGD (momentum too: linear).  Timing: with a
 * fixed step time and contention none an iteration lasts max(T, a + 4P b) +
 * u (d-psgd: the exchange overlaps the gradient) or T + u + a + 4P b (atc).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

/* Softmax regression of 15 features and 4 classes: P = 64 parameters. */
static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 10\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = gossip\n";

#define P_FLOATS (15 * 4 + 4)
#define LINK_LAT 20e-6          /* s per link */
#define LINK_BW  (1e9 / 8)      /* bytes/s */
#define ACHIEVED (1e9 * 0.5)    /* FLOP/s */

/* lr = 1e-30 leaves every parameter as it is (far below a float's
 * resolution), so only mixing moves the models; every evaluation follows a
 * whole round (eval_every = W, workers in step).  Ring of 8 and of 7. */
static void
test_ring_consensus (void)
{
  const char *orders[] = { "policy.order=d-psgd", "policy.order=atc" };
  const int ns[] = { 8, 7 };
  for (gsize o = 0; o < G_N_ELEMENTS (orders); o++)
    for (gsize i = 0; i < G_N_ELEMENTS (ns); i++)
      {
        int n = ns[i];
        g_autofree char *w = g_strdup_printf ("cluster.workers=%d", n);
        g_autofree char *e = g_strdup_printf ("model.eval_every=%d", n);
        const char *sets[] = { w, e, orders[o], "model.lr=1e-30", "policy.init_spread=1",
                               "scenario.iterations=30", NULL };
        TestRun *r = test_run_collect (cluster, sets);
        /* the second-largest modulus of (1 + 2 cos(2 pi m / n)) / 3, m = 1..n-1 */
        double lambda = 0;
        for (int m = 1; m < n; m++)
          lambda = MAX (lambda, fabs ((1 + 2 * cos (2 * G_PI * m / n)) / 3));
        g_assert_cmpuint (r->metrics->len, ==, 31);
        for (guint k = 0; k + 1 < r->metrics->len; k++)
          {
            const TestMetric *a = &g_array_index (r->metrics, TestMetric, k);
            const TestMetric *b = &g_array_index (r->metrics, TestMetric, k + 1);
            g_assert_cmpint (b->step, ==, (gint64) (k + 1) * n);
            g_assert_cmpfloat (a->consensus, >, 0);
            double ratio = b->consensus / a->consensus;
            g_assert_cmpfloat (ratio, <=, lambda * lambda * (1 + 1e-4));
            if (k >= 15) /* the other modes have died out */
              test_assert_close (ratio, lambda * lambda, 1e-3);
          }
        test_run_free (r);
      }
}

/* Complete graph, adapt then combine: every worker holds the all-reduce
 * model after every iteration, so the average's loss matches all-reduce's
 * at every evaluation, and the workers agree (consensus ~ 0). */
static void
test_complete_is_allreduce (void)
{
  const char *opts[] = { "model.optimizer=sgd", "model.optimizer=momentum" };
  for (gsize o = 0; o < G_N_ELEMENTS (opts); o++)
    {
      const char *go_sets[] = { "policy.graph=complete", "policy.order=atc", opts[o],
                                "scenario.iterations=30", "cluster.workers=5",
                                "model.eval_every=5", NULL };
      const char *ar_sets[] = { "policy.kind=allreduce", "policy.algorithm=ring",
                                "policy.bucket_size=0", opts[o], "scenario.iterations=30",
                                "cluster.workers=5", "model.eval_every=5", NULL };
      TestRun *go = test_run_collect (cluster, go_sets);
      TestRun *ar = test_run_collect (cluster, ar_sets);
      g_assert_cmpuint (go->metrics->len, ==, 31);
      g_assert_cmpuint (go->metrics->len, ==, ar->metrics->len);
      for (guint i = 0; i < go->metrics->len; i++)
        {
          const TestMetric *x = &g_array_index (go->metrics, TestMetric, i);
          const TestMetric *y = &g_array_index (ar->metrics, TestMetric, i);
          g_assert_cmpint (x->step, ==, y->step);
          test_assert_close (x->loss, y->loss, 1e-5);
          g_assert_cmpfloat (x->consensus, <, 1e-10);
          g_assert_true (isnan (y->consensus)); /* one model: no consensus */
        }
      g_assert_cmpfloat (go->sum.final_loss, <, log (4.0)); /* it learnt */
      test_run_free (go);
      test_run_free (ar);
    }
}

/* Fixed step time, contention none, no stragglers: every worker's every
 * iteration lasts the same, by the order's formula. */
static void
test_closed_form (void)
{
  const char *graphs[] = { "ring", "torus", "exponential", "complete" };
  const double T = 1e-3, a = 2 * LINK_LAT, m = 4.0 * P_FLOATS / LINK_BW;
  const double u = kern_sgd_flops (P_FLOATS) / ACHIEVED;
  for (gsize g = 0; g < G_N_ELEMENTS (graphs); g++)
    for (int atc = 0; atc <= 1; atc++)
      for (int n = 2; n <= 9; n += 7)
        {
          g_autofree char *s1 = g_strdup_printf ("policy.graph=%s", graphs[g]);
          g_autofree char *s2 = g_strdup_printf ("cluster.workers=%d", n);
          const char *sets[] = { s1, s2, atc ? "policy.order=atc" : "policy.order=d-psgd",
                                 NULL };
          TestRun *r = test_run_collect (cluster, sets);
          double iter = atc ? T + u + a + m : MAX (T, a + m) + u;
          g_assert_cmpuint (r->rows->len, ==, 10 * (guint) n);
          for (guint i = 0; i < r->rows->len; i++)
            {
              const TestRow *x = &g_array_index (r->rows, TestRow, i);
              test_assert_close (x->end - x->start, iter, 1e-9);
              test_assert_close (x->start, (double) x->iteration * iter, 1e-9);
              test_assert_close (x->compute + x->comm + x->wait, x->end - x->start, 1e-9);
              test_assert_close (x->comm, atc ? a + m : MAX (0, a + m - T), 1e-9);
              g_assert_cmpfloat (fabs (x->wait), <, 1e-12);
              g_assert_cmpint (x->staleness, ==, 0);
            }
          test_assert_close (r->sum.sim_time, 10 * iter, 1e-9);
          g_assert_cmpint (r->sum.updates, ==, 10 * n);
          test_run_free (r);
        }
}

/* A fixed straggler holds back its neighbours only: on a ring of 8 with
 * worker 0 three times slower (d-psgd), its neighbours wait for it every
 * iteration, and a worker k hops away is held back from iteration k on
 * (one iteration of slack per hop) while one never further behind.  The
 * run is the straggler's: 10 iterations of 3T + u. */
static void
test_straggler_local (void)
{
  const char *sets[] = { "cluster.workers=8", "stragglers.model=fixed", "stragglers.slow=0",
                         "stragglers.factor=3", "device.step_time=10ms", NULL };
  TestRun *r = test_run_collect (cluster, sets);
  const double T = 10e-3, u = kern_sgd_flops (P_FLOATS) / ACHIEVED;
  test_assert_close (r->sum.sim_time, 10 * (3 * T + u), 1e-9);
  for (guint i = 0; i < r->rows->len; i++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, i);
      int hops = MIN (x->worker, 8 - x->worker);
      if (hops == 1 && x->iteration >= 1)
        g_assert_cmpfloat (x->wait, >, 0);
      if (hops == 0 || x->iteration < hops - 1)
        g_assert_cmpfloat (x->wait, ==, 0);
    }
  test_run_free (r);
}

/* A complete graph of more than 4,096 workers is refused before the run. */
static void
test_complete_bounded (void)
{
  g_autofree char *msg = test_load_scenario_error (
    "[cluster]\nworkers = 5000\n[model]\nkind = timing\nparams = 100\nflops = 100\n"
    "[policy]\nkind = gossip\ngraph = complete\n");
  g_assert_nonnull (strstr (msg, "[policy] graph"));
  g_assert_nonnull (strstr (msg, "4096"));
}

/* A worker's gradient is computed when it is used unless compute time is
 * measured on the host, when it is computed as its iteration starts: the
 * same model and batch either way, so the final model is the same (the
 * iterations' times differ, not their math), under both orders and with
 * stragglers reordering the events. */
static void
test_deferred_same_math (void)
{
  const char *orders[] = { "policy.order=d-psgd", "policy.order=atc" };
  for (gsize o = 0; o < G_N_ELEMENTS (orders); o++)
    {
      const char *model_sets[] = { orders[o], "cluster.workers=6", "stragglers.model=lognormal",
                                   "device.step_time=-1", NULL };
      const char *host_sets[] = { orders[o], "cluster.workers=6", "stragglers.model=lognormal",
                                  "device.step_time=-1", "device.compute_time=measured", NULL };
      TestRun *a = test_run_collect (cluster, model_sets);
      TestRun *b = test_run_collect (cluster, host_sets);
      g_assert_cmpfloat (a->sum.final_loss, ==, b->sum.final_loss);
      g_assert_cmpfloat (a->sum.final_accuracy, ==, b->sum.final_accuracy);
      g_assert_cmpint (a->sum.updates, ==, b->sum.updates);
      test_run_free (a);
      test_run_free (b);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gossip/ring-consensus", test_ring_consensus);
  g_test_add_func ("/gossip/complete-is-allreduce", test_complete_is_allreduce);
  g_test_add_func ("/gossip/closed-form", test_closed_form);
  g_test_add_func ("/gossip/straggler-local", test_straggler_local);
  g_test_add_func ("/gossip/complete-bounded", test_complete_bounded);
  g_test_add_func ("/gossip/deferred-same-math", test_deferred_same_math);
  return g_test_run ();
}
