/*
 * test-checkpoint.c — whole-job failures, checkpoints and restarts of a
 * synchronous job (sim/checkpoint.h): Young's and Daly's intervals and the
 * plan a configuration gives, each as its formula; the composed timeline
 * at given failure times, exactly; the drawn failures against the expected
 * overhead, averaged over many seeds within a derived bound; a real-math
 * run whose losses are the unfailed run's, at times shifted by exactly the
 * outages before them; the time to train stretched by the expected waste;
 * and the refusals of the new [failures] keys.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "config/metrics.h"
#include "sim/checkpoint.h"
#include "tests/util.h"

/* |a - b| <= 1e-12 (|a| + |b|) + 1e-15: the same formula evaluated in
 * another order. */
static void
assert_close (double a, double b)
{
  g_assert_cmpfloat (fabs (a - b), <=, 1e-12 * (fabs (a) + fabs (b)) + 1e-15);
}

/* Young's interval and Daly's higher-order one, as their formulas. */
static void
test_young_daly (void)
{
  double C = 1.5, M = 6000.0;
  assert_close (sim_young_daly (C, M), sqrt (2 * C * M));
  double r = C / (2 * M);
  assert_close (sim_daly_interval (C, M),
                sqrt (2 * C * M) * (1 + sqrt (r) / 3 + r / 9) - C);
  /* Daly's form for C >= 2M is M itself */
  assert_close (sim_daly_interval (3 * M, M), M);
  /* the first-order waste is least at Young's interval */
  double tau = sim_young_daly (C, M), R = 60;
  double w = sim_ckpt_waste (C, tau, R, M);
  assert_close (w, C / tau + tau / (2 * M) + R / M);
  g_assert_cmpfloat (w, <, sim_ckpt_waste (C, 0.9 * tau, R, M));
  g_assert_cmpfloat (w, <, sim_ckpt_waste (C, 1.1 * tau, R, M));
}

static const char plan_ini[] =
  "[scenario]\nname = plan\niterations = 2\n"
  "[cluster]\nworkers = 8\n"
  "[device]\nstep_time = 0.1\n"
  "[model]\nkind = softmax\n"
  "[policy]\nkind = allreduce\n"
  "[failures]\nmtbf = 1e6\nlink_mtbf = 4e6\ncheckpoint_size = 30GB\n"
  "checkpoint_bandwidth = 10GBps\nreschedule = 120\n"
  "[kernels]\nbackend = none\n";

/* A configuration's plan: M from the devices and cables, C and R from the
 * size and bandwidth, auto = Young's. */
static void
test_plan (void)
{
  SimConfig *c = test_load_one (plan_ini);
  SimCkptPlan p;
  int links = 16;  /* a star of 8 hosts: an up and a down link each */
  sim_ckpt_plan (c, NULL, links, &p);
  g_assert_true (p.on);
  g_assert_cmpfloat (p.devices, ==, 8);
  g_assert_cmpfloat (p.cables, ==, links / 2);
  double M = 1.0 / (8 / 1e6 + (links / 2) / 4e6);
  assert_close (p.mtbf, M);
  double C = 30e9 / 10e9;
  assert_close (p.write, C);
  assert_close (p.restart, 120 + C);
  assert_close (p.interval, sqrt (2 * C * M));
  assert_close (p.waste, C / p.interval + p.interval / (2 * M) + (120 + C) / M);
  g_assert_true (sim_ckpt_validate (c, &p, NULL));
  sim_config_free (c);
}

/* Given failure times: every stretch, the totals and the wall-clock map,
 * walked by hand (tau 10, C 1, R 2; useful work 35 s):
 * segment 0 runs [0, 10], writes [10, 11]; the failure at 15 undoes
 * [11, 15] of segment 1, the one at 16.5 cuts its restart [15, 16.5], which
 * starts again [16.5, 18.5]; segment 1 runs [18.5, 28.5], writes
 * [28.5, 29.5]; the failure at 40 cuts segment 2's write: [29.5, 40] is
 * lost, restart [40, 42], segment 2 runs [42, 52], writes [52, 53]; the
 * last 5 s run [53, 58]. */
static void
test_given_times (void)
{
  const double tau = 10, C = 1, R = 2, U = 35;
  const double at[] = { 15, 16.5, 40 };
  SimTimeline *tl = sim_timeline_new (tau, C, R, at, G_N_ELEMENTS (at), INFINITY, 1);
  sim_timeline_finish (tl, U);
  SimTimelineTotals t;
  sim_timeline_totals (tl, &t);
  g_assert_cmpint (t.failures, ==, 3);
  g_assert_cmpint (t.checkpoints, ==, 3);
  double lost = (15 - (tau + C)) + (40 - (18.5 + tau + C));
  assert_close (t.lost, lost);
  assert_close (t.restart, (16.5 - 15) + R + R);
  assert_close (t.checkpoint, 3 * C);
  assert_close (t.elapsed, U + t.lost + t.restart + t.checkpoint);
  assert_close (t.elapsed, 53 + (U - 3 * tau));
  /* the map: kept executions, before and after a checkpoint */
  assert_close (sim_timeline_wall (tl, 5, TRUE), 5);
  assert_close (sim_timeline_wall (tl, 10, FALSE), 10);
  assert_close (sim_timeline_wall (tl, 10, TRUE), 18.5);
  assert_close (sim_timeline_wall (tl, 20, FALSE), 18.5 + tau);
  assert_close (sim_timeline_wall (tl, 25, TRUE), 42 + 5);
  assert_close (sim_timeline_wall (tl, U, FALSE), t.elapsed);
  int n;
  const SimOutage *o = sim_timeline_outages (tl, &n);
  const struct { SimOutageKind k; double s, e; gboolean f; } want[] = {
    { SIM_OUTAGE_CHECKPOINT, 10, 11, FALSE }, { SIM_OUTAGE_LOST, 11, 15, TRUE },
    { SIM_OUTAGE_RESTART, 15, 16.5, TRUE }, { SIM_OUTAGE_RESTART, 16.5, 18.5, FALSE },
    { SIM_OUTAGE_CHECKPOINT, 28.5, 29.5, FALSE }, { SIM_OUTAGE_LOST, 29.5, 40, TRUE },
    { SIM_OUTAGE_RESTART, 40, 42, FALSE }, { SIM_OUTAGE_CHECKPOINT, 52, 53, FALSE },
  };
  g_assert_cmpint (n, ==, G_N_ELEMENTS (want));
  for (int i = 0; i < n; i++)
    {
      g_assert_cmpint (o[i].kind, ==, want[i].k);
      assert_close (o[i].start, want[i].s);
      assert_close (o[i].end, want[i].e);
      g_assert_cmpint (o[i].failure, ==, want[i].f);
    }
  sim_timeline_free (tl);
}

/* Drawn failures, averaged over seeds.  With failures a Poisson process of
 * mean gap M, an attempt at x seconds of work whose failures each cost a
 * restart of R (itself cut and started again by a failure) takes
 * A(x) = e^(R/M) (e^(x/M) - 1) M on average (sim_ckpt_expected_attempt);
 * n segments of tau with a write after all but the last take
 * (n - 1) A(tau + C) + A(tau).  The per-seed overhead o = elapsed / U - 1
 * (U = n tau) has that mean minus 1; its sample mean over N seeds lies
 * within 5 s / sqrt(N) of it (s the sample deviation) but with probability
 * below 1e-6 (the central limit).  The first-order waste
 * C/tau + tau/(2M) + R/M differs from the exact mean by the higher-order
 * terms, which the bound adds. */
static void
test_drawn_average (void)
{
  const double M = 1000, tau = 100, C = 5, R = 20;
  const int n = 50, N = 400;
  const double U = n * tau;
  double sum = 0, sum2 = 0;
  gint64 failures = 0;
  for (int seed = 1; seed <= N; seed++)
    {
      SimTimeline *tl = sim_timeline_new (tau, C, R, NULL, 0, M, (guint64) seed);
      sim_timeline_finish (tl, U);
      SimTimelineTotals t;
      sim_timeline_totals (tl, &t);
      double o = t.elapsed / U - 1;
      sum += o;
      sum2 += o * o;
      failures += t.failures;
      sim_timeline_free (tl);
    }
  double mean = sum / N, s = sqrt ((sum2 - N * mean * mean) / (N - 1));
  double exact = ((n - 1) * sim_ckpt_expected_attempt (tau + C, R, M)
                  + sim_ckpt_expected_attempt (tau, R, M)) / U - 1;
  double bound = 5 * s / sqrt (N);
  g_test_message ("mean overhead %g, exact %g, first-order %g, bound %g", mean,
                  exact, sim_ckpt_waste (C, tau, R, M), bound);
  g_assert_cmpfloat (fabs (mean - exact), <=, bound);
  double first = sim_ckpt_waste (C, tau, R, M);
  g_assert_cmpfloat (fabs (mean - first), <=, fabs (exact - first) + bound);
  /* and the draws are failures at all: about elapsed / M per run */
  g_assert_cmpint (failures, >, 0);
}

/* One seed draws the same failures whatever the run's length: the part of
 * the timeline a longer run shares with a shorter one is the same. */
static void
test_drawn_prefix (void)
{
  SimTimeline *a = sim_timeline_new (100, 5, 20, NULL, 0, 300, 7);
  SimTimeline *b = sim_timeline_new (100, 5, 20, NULL, 0, 300, 7);
  sim_timeline_finish (a, 2000);
  sim_timeline_finish (b, 5000);
  for (double u = 0; u < 1900; u += 37)
    g_assert_cmpfloat (sim_timeline_wall (a, u, TRUE), ==, sim_timeline_wall (b, u, TRUE));
  sim_timeline_free (a);
  sim_timeline_free (b);
}

/* A real-math all-reduce job; the failing one checkpoints every 100 us
 * (C = 20 kB / 1 GB/s = 20 us; R = 10 us + C = 30 us) and fails once at
 * wall time 150 us, during segment 1 (which began at tau + C). */
static const char math_ini[] =
  "[scenario]\nname = math\niterations = 20\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = softmax\nbatch = 32\n"
  "[policy]\nkind = allreduce\n";
static const char *const failing[] = {
  "failures.job_at=150us", "failures.checkpoint_interval=100us",
  "failures.checkpoint_size=20kB", "failures.checkpoint_bandwidth=1GBps",
  "failures.reschedule=10us", NULL };

/* The wall-clock time of useful instant u of that run, as an end (a
 * checkpoint at u comes after it): for u in (k tau, (k + 1) tau], k >= 1,
 * k writes, the work lost (150 us - (tau + C)) and one restart before it. */
static double
failing_wall (double u)
{
  const double tau = 100e-6, C = 20e-6, R = 30e-6, f = 150e-6;
  double k = ceil (u / tau) - 1;
  return k < 1 ? u : u + k * C + (f - (tau + C)) + R;
}

static void
test_real_math_shifted (void)
{
  TestRun *base = test_run_collect (math_ini, NULL);
  TestRun *run = test_run_collect (math_ini, failing);
  g_assert_cmpfloat (base->sum.sim_time, >, 300e-6); /* the failure hits the run */
  g_assert_cmpuint (run->metrics->len, ==, base->metrics->len);
  for (guint i = 0; i < base->metrics->len; i++)
    {
      TestMetric *a = &g_array_index (base->metrics, TestMetric, i);
      TestMetric *b = &g_array_index (run->metrics, TestMetric, i);
      g_assert_cmpint (a->step, ==, b->step);
      g_assert_cmpfloat (a->loss, ==, b->loss);
      g_assert_cmpfloat (a->accuracy, ==, b->accuracy);
      assert_close (b->t, failing_wall (a->t));
    }
  g_assert_cmpuint (run->rows->len, ==, base->rows->len);
  for (guint i = 0; i < base->rows->len; i++)
    {
      TestRow *a = &g_array_index (base->rows, TestRow, i);
      TestRow *b = &g_array_index (run->rows, TestRow, i);
      g_assert_cmpint (a->iteration, ==, b->iteration);
      assert_close (b->end, failing_wall (a->end));
      g_assert_cmpfloat (a->compute, ==, b->compute);
      g_assert_cmpfloat (a->comm, ==, b->comm);
    }
  g_assert_cmpfloat (run->sum.final_loss, ==, base->sum.final_loss);
  assert_close (run->sum.useful_time, base->sum.sim_time);
  assert_close (run->sum.sim_time, failing_wall (base->sum.sim_time));
  g_assert_cmpint (run->sum.failures, ==, 1);
  assert_close (run->sum.lost, 150e-6 - (100e-6 + 20e-6));
  double writes = ceil (base->sum.sim_time / 100e-6) - 1;
  assert_close (run->sum.checkpoint_time, writes * 20e-6);
  assert_close (run->sum.sim_time, base->sum.sim_time + run->sum.checkpoint_time
                                   + run->sum.lost + run->sum.restart_time);
  test_run_free (base);
  test_run_free (run);
}

/* The time to train of a failing job: at its useful rate, stretched by
 * 1 + the expected waste; goodput = useful time / elapsed. */
static void
test_train_time (void)
{
  SimMetricsIn in = { .samples = 800, .sim_time = 12, .workers = 4, .devices = 4,
                      .flops_per_sample = NAN, .tokens_per_sample = 1000, .peak = NAN,
                      .tokens = 1e12, .price = 2, .useful_time = 10, .waste = 0.07 };
  SimMetrics m;
  sim_metrics_compute (&in, &m);
  double time = 1e12 / (800 / 10.0 * 1000) * (1 + 0.07);
  assert_close (m.train_time, time);
  assert_close (m.device_hours, time * 4 / 3600);
  assert_close (m.cost, time * 4 / 3600 * 2);
  assert_close (m.goodput, 10.0 / 12);
  in.useful_time = 0;
  sim_metrics_compute (&in, &m);
  g_assert_true (isnan (m.goodput));
  assert_close (m.train_time, 1e12 / (800 / 12.0 * 1000));
}

static const char refuse_ini[] =
  "[scenario]\nname = r\niterations = 2\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = softmax\n"
  "[policy]\nkind = allreduce\n"
  "[failures]\nmtbf = 1e6\ncheckpoint_bandwidth = 1GBps\nreschedule = 60\n"
  "[trace]\ndetail = iterations\n";

/* Every new key is refused in one line where it makes no sense. */
static void
test_refusals_keys (void)
{
  static const TestRefusal cases[] = {
    { "kind = allreduce", "kind = ps", "[failures] mtbf: whole-job failures" },
    { "kind = allreduce", "kind = hogwild", "[failures] mtbf" },
    { "checkpoint_bandwidth = 1GBps", "checkpoint_size = 1GB",
      "[failures] checkpoint_bandwidth: missing" },
    { "reschedule = 60", "checkpoint_interval = 10", "[failures] reschedule: missing" },
    { "reschedule = 60", "reschedule = 60\ncheckpoint_interval = soon",
      "[failures] checkpoint_interval: 'soon' is not valid" },
    { "reschedule = 60", "reschedule = 60\ncheckpoint_interval = 0",
      "[failures] checkpoint_interval: 0 is out of range" },
    { "reschedule = 60", "reschedule = 60\ncheckpoint_interval = 1e13",
      "[failures] checkpoint_interval" },
    { "mtbf = 1e6", "mtbf = -5", "[failures] mtbf" },
    { "mtbf = 1e6", "link_mtbf = 1 ms ago", "[failures] link_mtbf" },
    { "mtbf = 1e6", "job_at = 1, never", "[failures] job_at" },
    { "mtbf = 1e6\ncheckpoint_bandwidth = 1GBps\nreschedule = 60", "checkpoint_size = 1GB",
      "[failures] checkpoint_size: applies only to whole-job failures" },
    { "mtbf = 1e6\ncheckpoint_bandwidth = 1GBps\nreschedule = 60", "reschedule = 60",
      "[failures] reschedule: applies only to whole-job failures" },
    { "detail = iterations", "detail = spans", "[trace] detail: spans" },
  };
  test_refusals (refuse_ini, cases, G_N_ELEMENTS (cases));
}

/* The rules that need the plan: auto without a write time or without a
 * failure rate, and a job that would rarely get past a segment. */
static void
test_refusals_plan (void)
{
  SimConfig *c = test_load_one (plan_ini);
  SimCkptPlan p;
  g_autoptr (GError) error = NULL;
  sim_ckpt_plan (c, NULL, 16, &p);
  p.write = 0;
  g_assert_false (sim_ckpt_validate (c, &p, &error));
  g_assert_nonnull (strstr (error->message, "[failures] checkpoint_interval: auto"));
  g_clear_error (&error);
  sim_ckpt_plan (c, NULL, 16, &p);
  p.mtbf = INFINITY;
  g_assert_false (sim_ckpt_validate (c, &p, &error));
  g_assert_nonnull (strstr (error->message, "no failure rate"));
  g_clear_error (&error);
  sim_ckpt_plan (c, NULL, 16, &p);
  p.mtbf = (p.interval + p.write + p.restart) / 5.5;
  g_assert_false (sim_ckpt_validate (c, &p, &error));
  g_assert_nonnull (strstr (error->message, "[failures] mtbf"));
  g_assert_null (strchr (error->message, '\n'));
  sim_config_free (c);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/checkpoint/young-daly", test_young_daly);
  g_test_add_func ("/checkpoint/plan", test_plan);
  g_test_add_func ("/checkpoint/given-times", test_given_times);
  g_test_add_func ("/checkpoint/drawn-average", test_drawn_average);
  g_test_add_func ("/checkpoint/drawn-prefix", test_drawn_prefix);
  g_test_add_func ("/checkpoint/real-math-shifted", test_real_math_shifted);
  g_test_add_func ("/checkpoint/train-time", test_train_time);
  g_test_add_func ("/checkpoint/refusals/keys", test_refusals_keys);
  g_test_add_func ("/checkpoint/refusals/plan", test_refusals_plan);
  return g_test_run ();
}
