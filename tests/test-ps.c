/*
 * test-ps.c — the parameter-server policy against its documented protocol
 * (docs/policies.md): closed-form BSP iteration times, SSP(0) = BSP, the SSP
 * staleness bound, async never waiting, and the ordering of BSP, SSP and async
 * under transient stragglers.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

typedef struct {
  int worker;
  gint64 iteration;
  double start, end, compute, comm, wait;
  gint64 staleness;
} Row;

typedef struct {
  double t;
  gint64 updates;
  double loss, accuracy;
} Metric;

typedef struct {
  GArray *rows;          /* Row, in recording order */
  GArray *metrics;       /* Metric, in recording order */
  SimRunSummary sum;
} Result;

static void
on_metric (gpointer ctx, double t, gint64 updates, double loss, double accuracy,
           double consensus G_GNUC_UNUSED)
{
  Result *r = ctx;
  Metric m = { t, updates, loss, accuracy };
  g_array_append_val (r->metrics, m);
}

static void
on_iteration (gpointer ctx, int worker, gint64 iteration, double start,
              double end, double compute, double comm, double wait,
              gint64 staleness)
{
  Result *r = ctx;
  Row row = { worker, iteration, start, end, compute, comm, wait, staleness };
  g_array_append_val (r->rows, row);
}

static Result *
run_config (const SimConfig *c)
{
  Result *r = g_new0 (Result, 1);
  r->rows = g_array_new (FALSE, FALSE, sizeof (Row));
  r->metrics = g_array_new (FALSE, FALSE, sizeof (Metric));
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = on_iteration,
                      .metric = on_metric };
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, &rec, &r->sum, &error));
  g_assert_no_error (error);
  return r;
}

static Result *
run_text (const char *text, const char *const *sets)
{
  g_autoptr (GPtrArray) configs = test_load_scenario_text (text, sets);
  g_assert_cmpuint (configs->len, ==, 1);
  return run_config (g_ptr_array_index (configs, 0));
}

static void
result_free (Result *r)
{
  g_array_unref (r->rows);
  g_array_unref (r->metrics);
  g_free (r);
}

static const Row *
find_row (const Result *r, int worker, gint64 iteration)
{
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      if (row->worker == worker && row->iteration == iteration)
        return row;
    }
  return NULL;
}

/* A cluster with fixed compute time and no stragglers. */
static const char fixed_cluster[] =
  "[scenario]\nname = t\nseed = 3\niterations = 6\n"
  "[cluster]\nworkers = 4\nservers = 1\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 2ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nconsistency = bsp\n";

/* BSP with fixed compute time T, W workers, S equal shards of n_s bytes,
 * per-link latency l and bandwidth B, server rate F (docs/policies.md):
 *   iteration 0:  2l + (2l + W n_s/B) + T + (2l + W n_s/B)
 *   iteration i:  W U + (2l + W n_s/B) + T + (2l + W n_s/B),  U = 2 (P/S) / F
 * (pull requests carry no payload; every reply and push of a round shares the
 * server's link with the other W - 1 workers' flows). */
static void
check_bsp_closed_form (int servers)
{
  const char *sets[] = { NULL, NULL };
  g_autofree char *s = g_strdup_printf ("cluster.servers=%d", servers);
  sets[0] = s;
  Result *r = run_text (fixed_cluster, sets);
  const double W = 4, S = servers, T = 2e-3, l = 20e-6, B = 1e9 / 8, F = 1e9 * 0.5;
  const double P = 15 * 4 + 4;             /* softmax: d k + k */
  const double n_s = 4 * P / S;            /* bytes of one shard */
  const double U = kern_sgd_flops ((gsize) (P / S)) / F;
  const double xfer = 2 * l + W * n_s / B; /* one reply or one push */
  const double first = 2 * l + xfer + T + xfer;
  const double steady = W * U + xfer + T + xfer;

  g_assert_cmpuint (r->rows->len, ==, 6 * 4);
  for (int w = 0; w < 4; w++)
    for (int i = 0; i < 6; i++)
      {
        const Row *row = find_row (r, w, i);
        g_assert_nonnull (row);
        test_assert_close (row->end - row->start, i == 0 ? first : steady, 1e-9);
        test_assert_close (row->compute, T, 1e-12);
        test_assert_close (row->compute + row->comm + row->wait, row->end - row->start, 1e-9);
        g_assert_cmpint (row->staleness, ==, 0);
      }
  /* the run ends when the last update of the last round is applied */
  test_assert_close (r->sum.sim_time, first + 5 * steady + W * U, 1e-9);
  g_assert_cmpint (r->sum.updates, ==, 6 * 4);
  g_assert_cmpint (r->sum.iterations, ==, 6);
  result_free (r);
}

static void
test_bsp_closed_form_one_server (void)
{
  check_bsp_closed_form (1);
}

static void
test_bsp_closed_form_sharded (void)
{
  check_bsp_closed_form (4);
}

/* Sharding moves the same numbers through other hosts: BSP's math is
 * unchanged, so the final loss is identical. */
static void
test_sharding_keeps_math (void)
{
  const char *one[] = { "cluster.servers=1", NULL };
  const char *four[] = { "cluster.servers=4", NULL };
  Result *a = run_text (fixed_cluster, one);
  Result *b = run_text (fixed_cluster, four);
  g_assert_cmpfloat (a->sum.final_loss, ==, b->sum.final_loss);
  g_assert_cmpfloat (a->sum.final_loss, <, log (4.0)); /* it learnt something */
  result_free (a);
  result_free (b);
}

static const char straggling[] =
  "[scenario]\nname = t\nseed = 11\niterations = 60\n"
  "[cluster]\nworkers = 6\n"
  "[device]\nflops = 2GFLOPS\nefficiency = 0.5\n"
  "[network]\nbandwidth = 10Gbps\nlatency = 10us\n"
  "[model]\nfeatures = 32\nclasses = 5\nsamples = 1200\ntest_samples = 200\nbatch = 32\n"
  "[stragglers]\nmodel = bernoulli\np = 0.2\nfactor = 4\n";

/* SSP with staleness 0 runs BSP's schedule, but its server takes one SGD
 * step per gradient where BSP's takes one with the round's mean: W steps of
 * lr g_w on the same parameters are one step of (W lr) mean(g), so BSP at
 * lr = W x 0.1 trains as SSP(0) at 0.1 (6 workers; rounding aside). */
static void
test_ssp0_is_bsp (void)
{
  const char *bsp[] = { "policy.consistency=bsp", "model.lr=0.6", NULL };
  const char *ssp0[] = { "policy.consistency=ssp", "policy.staleness=0", NULL };
  Result *a = run_text (straggling, bsp);
  Result *b = run_text (straggling, ssp0);
  g_assert_cmpuint (a->rows->len, ==, b->rows->len);
  for (guint i = 0; i < a->rows->len; i++)
    {
      const Row *x = &g_array_index (a->rows, Row, i), *y = &g_array_index (b->rows, Row, i);
      g_assert_cmpint (x->worker, ==, y->worker);
      g_assert_cmpint (x->iteration, ==, y->iteration);
      g_assert_cmpfloat (x->start, ==, y->start);
      g_assert_cmpfloat (x->end, ==, y->end);
      g_assert_cmpfloat (x->wait, ==, y->wait);
    }
  g_assert_cmpfloat (a->sum.sim_time, ==, b->sum.sim_time);
  g_assert_cmpfloat_with_epsilon (a->sum.final_loss, b->sum.final_loss,
                                  1e-5 * fabs (a->sum.final_loss));
  result_free (a);
  result_free (b);
}

static void
test_ssp_staleness_bound (void)
{
  for (int s = 1; s <= 4; s++)
    {
      g_autofree char *bound = g_strdup_printf ("policy.staleness=%d", s);
      const char *sets[] = { "policy.consistency=ssp", bound, NULL };
      Result *r = run_text (straggling, sets);
      gint64 worst = 0;
      for (guint i = 0; i < r->rows->len; i++)
        {
          const Row *row = &g_array_index (r->rows, Row, i);
          g_assert_cmpint (row->staleness, >=, 0);
          g_assert_cmpint (row->staleness, <=, s);
          worst = MAX (worst, row->staleness);
        }
      /* the bound is reached, so the test exercises it */
      g_assert_cmpint (worst, ==, s);
      result_free (r);
    }
}

static void
test_async_never_waits (void)
{
  const char *sets[] = { "policy.consistency=async", NULL };
  Result *r = run_text (straggling, sets);
  gint64 worst = 0;
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      g_assert_cmpfloat (row->wait, ==, 0.0);
      worst = MAX (worst, row->staleness);
    }
  g_assert_cmpint (worst, >, 4); /* unbounded: fast workers run far ahead */
  g_assert_cmpint (r->sum.updates, ==, 60 * 6);
  result_free (r);
}

static void
test_bsp_each_worker_each_round (void)
{
  const char *sets[] = { "policy.consistency=bsp", NULL };
  Result *r = run_text (straggling, sets);
  g_assert_cmpuint (r->rows->len, ==, 60 * 6);
  for (int w = 0; w < 6; w++)
    for (int i = 0; i < 60; i++)
      g_assert_nonnull (find_row (r, w, i));
  result_free (r);
}

static void
test_stragglers_order (void)
{
  const char *bsp[] = { "policy.consistency=bsp", NULL };
  const char *ssp[] = { "policy.consistency=ssp", "policy.staleness=3", NULL };
  const char *async[] = { "policy.consistency=async", NULL };
  Result *a = run_text (straggling, bsp);
  Result *b = run_text (straggling, ssp);
  Result *c = run_text (straggling, async);
  g_assert_cmpint (a->sum.updates, ==, b->sum.updates);
  g_assert_cmpint (b->sum.updates, ==, c->sum.updates);
  g_assert_cmpfloat (a->sum.sim_time, >, b->sum.sim_time);
  g_assert_cmpfloat (b->sum.sim_time, >, c->sum.sim_time);
  result_free (a);
  result_free (b);
  result_free (c);
}

/* A fixed straggler computes `factor` times longer, every step. */
static void
test_fixed_straggler (void)
{
  const char *sets[] = { "stragglers.model=fixed", "stragglers.slow=2",
                         "stragglers.factor=3", NULL };
  Result *r = run_text (fixed_cluster, sets);
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      test_assert_close (row->compute, row->worker == 2 ? 3 * 2e-3 : 2e-3, 1e-12);
    }
  result_free (r);
}

/* Without step_time, compute costs FLOPs / (peak x efficiency). */
static void
test_flop_model (void)
{
  const char *sets[] = { "device.step_time=-1", NULL };
  Result *r = run_text (fixed_cluster, sets);
  KernModel *m = kern_softmax_new (15, 4);
  double flops = m->ops->flops_forward (m, 8) + m->ops->flops_backward (m, 8);
  kern_model_free (m);
  const Row *row = find_row (r, 0, 0);
  test_assert_close (row->compute, flops / (1e9 * 0.5), 1e-12);
  result_free (r);
}

/* Timing never depends on the math: without it the times are the same. */
static void
test_timing_without_math (void)
{
  const char *cpu[] = { "policy.consistency=ssp", NULL };
  const char *none[] = { "policy.consistency=ssp", "kernels.backend=none", NULL };
  Result *a = run_text (straggling, cpu);
  Result *b = run_text (straggling, none);
  g_assert_cmpuint (a->rows->len, ==, b->rows->len);
  for (guint i = 0; i < a->rows->len; i++)
    {
      const Row *x = &g_array_index (a->rows, Row, i), *y = &g_array_index (b->rows, Row, i);
      g_assert_cmpfloat (x->end, ==, y->end);
      g_assert_cmpint (x->staleness, ==, y->staleness);
    }
  g_assert_cmpfloat (a->sum.sim_time, ==, b->sum.sim_time);
  g_assert_true (isnan (b->sum.final_loss));
  g_assert_false (isnan (a->sum.final_loss));
  result_free (a);
  result_free (b);
}

static void
test_time_limit (void)
{
  const char *full[] = { NULL };
  const char *cut[] = { "scenario.time_limit=5ms", NULL };
  Result *a = run_text (fixed_cluster, full);
  Result *b = run_text (fixed_cluster, cut);
  g_assert_cmpfloat (a->sum.sim_time, >, 5e-3); /* the limit does cut the run */
  g_assert_cmpfloat (b->sum.sim_time, <=, 5e-3);
  g_assert_cmpstr (b->sum.stop, ==, "time_limit");
  g_assert_cmpint (b->sum.updates, <, a->sum.updates);
  /* identical up to the cut */
  for (guint i = 0; i < b->rows->len; i++)
    g_assert_cmpfloat (g_array_index (b->rows, Row, i).end, ==,
                       g_array_index (a->rows, Row, i).end);
  result_free (a);
  result_free (b);
}

static void
test_target_loss (void)
{
  const char *sets[] = { "scenario.iterations=400", NULL };
  Result *a = run_text (fixed_cluster, sets);
  /* a target between the start and the end of the full run */
  double target = (log (4.0) + a->sum.final_loss) / 2;
  g_autofree char *t = g_strdup_printf ("scenario.target_loss=%.17g", target);
  const char *sets2[] = { "scenario.iterations=400", t, NULL };
  Result *b = run_text (fixed_cluster, sets2);
  g_assert_cmpstr (b->sum.stop, ==, "target_loss");
  g_assert_cmpfloat (b->sum.final_loss, <=, target);
  g_assert_cmpint (b->sum.updates, <, a->sum.updates);
  result_free (a);
  result_free (b);
}

/* target_accuracy stops the run at the first evaluation whose test
 * accuracy reaches it: the one a full run records first at or above it. */
static void
test_target_accuracy (void)
{
  const char *policies[] = { "policy.consistency=bsp", "policy.consistency=async" };
  for (gsize i = 0; i < G_N_ELEMENTS (policies); i++)
    {
      const char *sets[] = { "scenario.iterations=200", policies[i], NULL };
      Result *a = run_text (fixed_cluster, sets);
      const Metric *m0 = &g_array_index (a->metrics, Metric, 0);
      const Metric *mN = &g_array_index (a->metrics, Metric, a->metrics->len - 1);
      double target = (m0->accuracy + mN->accuracy) / 2;
      const Metric *first = NULL;
      for (guint k = 0; k < a->metrics->len && !first; k++)
        if (g_array_index (a->metrics, Metric, k).accuracy >= target)
          first = &g_array_index (a->metrics, Metric, k);
      g_assert_nonnull (first);
      g_assert_cmpint (first->updates, <, mN->updates);
      g_autofree char *t = g_strdup_printf ("scenario.target_accuracy=%.17g", target);
      const char *sets2[] = { "scenario.iterations=200", policies[i], t, NULL };
      Result *b = run_text (fixed_cluster, sets2);
      g_assert_cmpstr (b->sum.stop, ==, "target_accuracy");
      g_assert_cmpint (b->sum.updates, ==, first->updates);
      g_assert_cmpfloat (b->sum.sim_time, ==, first->t);
      g_assert_cmpfloat (b->sum.final_accuracy, ==, first->accuracy);
      result_free (a);
      result_free (b);
    }
}

/* eval_every = 0 evaluates once per round of W gradients, in whole rounds
 * so that a run makes at most 100 evaluations (plus the start and the end):
 * every ceil(iterations / 100) rounds. */
static void
test_eval_default (void)
{
  const int W = 4; /* fixed_cluster's workers */
  const int iters[] = { 30, 100, 101, 250 };
  for (gsize i = 0; i < G_N_ELEMENTS (iters); i++)
    {
      g_autofree char *it = g_strdup_printf ("scenario.iterations=%d", iters[i]);
      const char *sets[] = { it, NULL };
      Result *r = run_text (fixed_cluster, sets);
      gint64 every = (gint64) W * ((iters[i] + 99) / 100);
      gint64 total = (gint64) W * iters[i];
      guint expect = 1 + (guint) (total / every) + (total % every ? 1 : 0);
      g_assert_cmpuint (r->metrics->len, ==, expect);
      for (guint k = 1; k + 1 < r->metrics->len; k++)
        g_assert_cmpint (g_array_index (r->metrics, Metric, k).updates, ==, (gint64) k * every);
      g_assert_cmpint (g_array_index (r->metrics, Metric, r->metrics->len - 1).updates, ==, total);
      result_free (r);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ps/bsp/closed-form-one-server", test_bsp_closed_form_one_server);
  g_test_add_func ("/ps/bsp/closed-form-sharded", test_bsp_closed_form_sharded);
  g_test_add_func ("/ps/bsp/sharding-keeps-math", test_sharding_keeps_math);
  g_test_add_func ("/ps/bsp/each-worker-each-round", test_bsp_each_worker_each_round);
  g_test_add_func ("/ps/ssp/zero-is-bsp", test_ssp0_is_bsp);
  g_test_add_func ("/ps/ssp/staleness-bound", test_ssp_staleness_bound);
  g_test_add_func ("/ps/async/never-waits", test_async_never_waits);
  g_test_add_func ("/ps/stragglers/bsp-ssp-async-order", test_stragglers_order);
  g_test_add_func ("/ps/stragglers/fixed", test_fixed_straggler);
  g_test_add_func ("/ps/compute/flop-model", test_flop_model);
  g_test_add_func ("/ps/compute/timing-without-math", test_timing_without_math);
  g_test_add_func ("/ps/stop/time-limit", test_time_limit);
  g_test_add_func ("/ps/stop/target-loss", test_target_loss);
  g_test_add_func ("/ps/stop/target-accuracy", test_target_accuracy);
  g_test_add_func ("/ps/eval/default-every", test_eval_default);
  return g_test_run ();
}
