/*
 * test-stragglers.c — straggler models, K-of-N rounds and worker failures in
 * the parameter server, against closed forms (docs/stragglers.md,
 * docs/policies.md).
 *
 * The cluster is made free of everything but compute: one float32 parameter,
 * zero latency and practically infinite bandwidth and FLOP/s, so a transfer
 * or an update adds under 1e-25 s and a BSP round lasts exactly as long as
 * its slowest (or K-th) worker step.  Random runs are a few thousand rounds;
 * each is compared with its exact expectation within 5 standard errors, the
 * standard error computed from the distribution's variance and the sample
 * size written next to it.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

#define T_STEP 1e-3    /* s, [device] step_time */
#define ROUNDS 3000
#define WORKERS 8
#define Z 5.0          /* standard errors allowed */

static const char base_text[] =
  "[scenario]\nname = t\nseed = 7\niterations = 3000\n"
  "[cluster]\nworkers = 8\nservers = 1\n"
  "[device]\nflops = 1e30\nstep_time = 1ms\n"
  "[network]\ncontention = none\nlatency = 0\nbandwidth = 1e30\n"
  "[model]\nkind = timing\nparams = 1\nflops = 1\n"
  "[kernels]\nbackend = none\n"
  "[trace]\ndetail = summary\n";

typedef struct {
  int worker;
  gint64 iteration;
  double start, end, compute;
} Row;

typedef struct {
  GArray *rows;          /* Row */
  GArray *failures;      /* Row: start, end of the downtime; compute unused */
  GPtrArray *lost;       /* char*, one per failure */
  SimRunSummary sum;
} Result;

static void
on_iteration (gpointer ctx, int worker, gint64 iteration, double start,
              double end, double compute, double comm G_GNUC_UNUSED, double wait G_GNUC_UNUSED,
              gint64 staleness G_GNUC_UNUSED)
{
  Result *r = ctx;
  Row row = { worker, iteration, start, end, compute };
  g_array_append_val (r->rows, row);
}

static void
on_failure (gpointer ctx, int worker, double start, double end, gint64 iteration,
            const char *lost)
{
  Result *r = ctx;
  Row row = { worker, iteration, start, end, 0 };
  g_array_append_val (r->failures, row);
  g_ptr_array_add (r->lost, g_strdup (lost));
}

/* Runs base_text with the overrides `sets` (NULL-terminated). */
static Result *
run_sets (const char *const *sets)
{
  Result *r = g_new0 (Result, 1);
  r->rows = g_array_new (FALSE, FALSE, sizeof (Row));
  r->failures = g_array_new (FALSE, FALSE, sizeof (Row));
  r->lost = g_ptr_array_new_with_free_func (g_free);
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = on_iteration,
                      .failure = on_failure };
  test_run_scenario_text (base_text, sets, &rec, &r->sum, NULL);
  return r;
}

static void
result_free (Result *r)
{
  g_array_unref (r->rows);
  g_array_unref (r->failures);
  g_ptr_array_unref (r->lost);
  g_free (r);
}

/* sum of 1/k^2 for k in [lo, hi] */
static double
harmonic2 (int lo, int hi)
{
  double h = 0;
  for (int k = lo; k <= hi; k++)
    h += 1.0 / ((double) k * k);
  return h;
}

static void
assert_within (double got, double want, double se, const char *what)
{
  g_test_message ("%s: %.6g, expected %.6g (SE %.3g)", what, got, want, se);
  if (fabs (got - want) > Z * se)
    g_error ("%s: %.9g differs from %.9g by %.2f standard errors (SE %.3g)", what, got,
             want, fabs (got - want) / se, se);
}

/* BSP under exponential steps: a round lasts the largest of N draws of
 * t (base + Exp(mean)); the maximum of N exponentials of mean m has mean
 * m H_N and variance m^2 sum_{k<=N} 1/k^2. */
static void
test_exponential_bsp (void)
{
  const double base = 1.0, mean = 0.5;
  const char *sets[] = { "stragglers.model=exponential", "stragglers.base=1",
                         "stragglers.mean=0.5", NULL };
  Result *r = run_sets (sets);
  g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * WORKERS);
  double want = T_STEP * (base + mean * test_harmonic (WORKERS));
  double se = T_STEP * mean * sqrt (harmonic2 (1, WORKERS)) / sqrt (ROUNDS);
  assert_within (r->sum.sim_time / ROUNDS, want, se, "BSP round, exponential");
  result_free (r);
}

/* Bernoulli: a round is slow when any of its N steps is, 1 - (1 - p)^N. */
static void
test_bernoulli_slow_rounds (void)
{
  const double p = 0.05, factor = 3;
  const char *sets[] = { "stragglers.model=bernoulli", "stragglers.p=0.05",
                         "stragglers.factor=3", NULL };
  Result *r = run_sets (sets);
  g_autofree double *longest = g_new0 (double, ROUNDS);
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      longest[row->iteration] = MAX (longest[row->iteration], row->compute);
    }
  int slow = 0;
  for (int i = 0; i < ROUNDS; i++)
    {
      /* every step is t or factor t exactly */
      g_assert_true (longest[i] == T_STEP || longest[i] == factor * T_STEP);
      slow += longest[i] > T_STEP;
    }
  double q = 1 - pow (1 - p, WORKERS);
  assert_within ((double) slow / ROUNDS, q, sqrt (q * (1 - q) / ROUNDS), "share of slow rounds");
  /* and the run lasts the sum of its rounds */
  test_assert_close (r->sum.sim_time, T_STEP * (ROUNDS + (factor - 1) * slow), 1e-9);
  result_free (r);
}

/* K of N with drop: every round starts all N workers afresh, so it lasts the
 * K-th smallest of N draws: mean t (base + mean (H_N - H_{N-K})), variance
 * (t mean)^2 sum_{j=N-K+1}^{N} 1/j^2 (Rényi's representation). */
static void
test_kofn_order_statistic (void)
{
  const double base = 1.0, mean = 0.5;
  const int ks[] = { 1, 4, 7 };
  for (guint i = 0; i < G_N_ELEMENTS (ks); i++)
    {
      int K = ks[i];
      g_autofree char *wf = g_strdup_printf ("policy.wait_for=%d", K);
      const char *sets[] = { "stragglers.model=exponential", "stragglers.base=1",
                             "stragglers.mean=0.5", wf, "policy.late=drop", NULL };
      Result *r = run_sets (sets);
      g_assert_cmpint (r->sum.iterations, ==, ROUNDS);
      g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * K);
      double want = T_STEP * (base + mean * (test_harmonic (WORKERS)
                                             - test_harmonic (WORKERS - K)));
      double se = T_STEP * mean * sqrt (harmonic2 (WORKERS - K + 1, WORKERS)) / sqrt (ROUNDS);
      g_autofree char *what = g_strdup_printf ("round waiting for %d of %d", K, WORKERS);
      assert_within (r->sum.sim_time / ROUNDS, want, se, what);
      result_free (r);
    }
}

/* K of N with keep: late gradients are applied too, so more than K per
 * round; the late workers do not start with the others, so rounds are
 * longer than with drop; the run still ends after `iterations` rounds. */
static void
test_kofn_keep (void)
{
  const char *keep[] = { "stragglers.model=exponential", "policy.wait_for=4",
                         "policy.late=keep", NULL };
  const char *drop[] = { "stragglers.model=exponential", "policy.wait_for=4",
                         "policy.late=drop", NULL };
  Result *k = run_sets (keep), *d = run_sets (drop);
  g_assert_cmpint (k->sum.iterations, ==, ROUNDS);
  g_assert_cmpint (k->sum.updates, >, (gint64) ROUNDS * 4);
  g_assert_cmpint (k->sum.updates, <=, (gint64) ROUNDS * WORKERS);
  g_assert_cmpint (d->sum.updates, ==, (gint64) ROUNDS * 4);
  g_assert_cmpfloat (k->sum.sim_time, >, d->sum.sim_time);
  result_free (k);
  result_free (d);
}

/* persistent: one draw per worker, the same for every step of that worker. */
static void
test_persistent (void)
{
  const char *sets[] = { "stragglers.model=lognormal", "stragglers.sigma=0.5",
                         "stragglers.persistent=true", "scenario.iterations=50", NULL };
  Result *r = run_sets (sets);
  double first[WORKERS];
  for (int w = 0; w < WORKERS; w++)
    first[w] = -1;
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      if (first[row->worker] < 0)
        first[row->worker] = row->compute;
      g_assert_cmpfloat (row->compute, ==, first[row->worker]);
    }
  /* the workers drew different factors */
  for (int w = 1; w < WORKERS; w++)
    g_assert_cmpfloat (first[w], !=, first[0]);
  /* BSP: every round lasts the slowest worker's step */
  double slowest = 0;
  for (int w = 0; w < WORKERS; w++)
    slowest = MAX (slowest, first[w]);
  test_assert_close (r->sum.sim_time, 50 * slowest, 1e-9);
  result_free (r);
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Pareto with alpha <= 1 (no finite mean) runs; the median step factor is
 * x_m 2^(1/alpha); the sample median's standard error is 1 / (2 f(m) sqrt n)
 * with the density at the median f(m) = alpha / (2 m). */
static void
test_pareto_heavy (void)
{
  const double xm = 1.5, alpha = 0.8;
  const char *sets[] = { "stragglers.model=pareto", "stragglers.scale=1.5",
                         "stragglers.alpha=0.8", "policy.consistency=async", NULL };
  Result *r = run_sets (sets);
  g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * WORKERS);
  guint n = r->rows->len;
  g_autofree double *f = g_new (double, n);
  for (guint i = 0; i < n; i++)
    {
      f[i] = g_array_index (r->rows, Row, i).compute / T_STEP;
      g_assert_cmpfloat (f[i], >=, xm * (1 - 1e-12));
    }
  qsort (f, n, sizeof (double), cmp_double);
  double median = f[n / 2];
  double m = xm * pow (2, 1 / alpha);
  assert_within (median, m, 1 / (2 * (alpha / (2 * m)) * sqrt (n)), "pareto median factor");
  result_free (r);
}

/* Shifted log-normal parametrised by its mean: the sample mean of the
 * factors is base + mean, with variance mean^2 (exp(sigma^2) - 1) per step. */
static void
test_lognormal_mean (void)
{
  const double base = 0.2, mean = 1.3, sigma = 0.4;
  const char *sets[] = { "stragglers.model=lognormal", "stragglers.mean=1.3", "stragglers.base=0.2",
                         "stragglers.sigma=0.4", "policy.consistency=async", NULL };
  Result *r = run_sets (sets);
  double sum = 0;
  guint n = r->rows->len;
  for (guint i = 0; i < n; i++)
    sum += g_array_index (r->rows, Row, i).compute / T_STEP;
  for (guint i = 0; i < n; i++)
    g_assert_cmpfloat (g_array_index (r->rows, Row, i).compute / T_STEP, >, base);
  assert_within (sum / n, base + mean, mean * sqrt (exp (sigma * sigma) - 1) / sqrt (n),
                 "lognormal mean factor");
  result_free (r);
}

/* A failure at T = (r + phi) t during round r's compute, with restart D:
 * the failed worker pulls at T + D and computes t again, so round r ends at
 * T + D + t instead of (r + 1) t; every round lasts t, so the run ends D +
 * phi t late, with all R N gradients applied. */
static void
test_failure_bsp_delay (void)
{
  const int r_fail = 17;
  const double phi = 0.25, D = 0.0123;
  const double T = (r_fail + phi) * T_STEP;
  g_autofree char *at = g_strdup_printf ("failures.at=%.17g", T);
  g_autofree char *rs = g_strdup_printf ("failures.restart=%.17g", D);
  const char *sets[] = { "failures.worker=3", at, rs, NULL };
  Result *r = run_sets (sets);
  g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * WORKERS);
  test_assert_close (r->sum.sim_time, ROUNDS * T_STEP + phi * T_STEP + D, 1e-9);
  g_assert_cmpuint (r->failures->len, ==, 1);
  const Row *f = &g_array_index (r->failures, Row, 0);
  g_assert_cmpint (f->worker, ==, 3);
  g_assert_cmpint (f->iteration, ==, r_fail);
  test_assert_close (f->start, T, 1e-12);
  test_assert_close (f->end, T + D, 1e-12);
  g_assert_cmpstr (g_ptr_array_index (r->lost, 0), ==, "compute");
  /* the failed worker's iteration starts anew at its restart */
  gboolean seen = FALSE;
  for (guint i = 0; i < r->rows->len; i++)
    {
      const Row *row = &g_array_index (r->rows, Row, i);
      if (row->worker == 3 && row->iteration == r_fail)
        {
          test_assert_close (row->start, T + D, 1e-12);
          test_assert_close (row->end, T + D + T_STEP, 1e-12);
          seen = TRUE;
        }
    }
  g_assert_true (seen);
  result_free (r);
}

/* Waiting for N - 1 of N, rounds go on without the failed worker: no delay. */
static void
test_failure_kofn_no_delay (void)
{
  const char *sets[] = { "failures.worker=3,5", "failures.at=0.0171,0.5", "failures.restart=20ms",
                         "policy.wait_for=7", NULL };
  Result *r = run_sets (sets);
  g_assert_cmpint (r->sum.iterations, ==, ROUNDS);
  g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * 7);
  test_assert_close (r->sum.sim_time, ROUNDS * T_STEP, 1e-9);
  g_assert_cmpuint (r->failures->len, ==, 2);
  result_free (r);
}

/* SSP and async lose the failed worker's step too and still apply R N
 * gradients; a failure while sending loses the gradient in flight. */
static void
test_failure_ssp_async (void)
{
  const char *cons[] = { "policy.consistency=ssp", "policy.consistency=async" };
  for (guint i = 0; i < G_N_ELEMENTS (cons); i++)
    {
      const char *sets[] = { cons[i], "stragglers.model=exponential", "failures.worker=1,2,1",
                             "failures.at=0.3,0.3,0.9", "failures.restart=50ms", NULL };
      Result *r = run_sets (sets);
      g_assert_cmpint (r->sum.updates, ==, (gint64) ROUNDS * WORKERS);
      g_assert_cmpuint (r->failures->len, ==, 3);
      result_free (r);
    }
  /* every transfer takes 2 x 0.5 ms: pull [0, 1], parameters [1, 2],
   * compute [2, 3], gradient [3, 4] ms; a failure at 3.5 ms loses the
   * gradient in flight */
  const char *sets[] = { "network.latency=0.5ms", "failures.worker=0", "failures.at=3.5ms",
                         "failures.restart=1ms", "scenario.iterations=10", NULL };
  Result *r = run_sets (sets);
  g_assert_cmpstr (g_ptr_array_index (r->lost, 0), ==, "send");
  g_assert_cmpint (r->sum.updates, ==, 10 * WORKERS);
  result_free (r);
}

static void
test_errors (void)
{
  static const struct { const char *text; const char *key; } cases[] = {
    { "[cluster]\nworkers = 4\n[policy]\nwait_for = 5\n", "[policy] wait_for" },
    { "[cluster]\nworkers = 4\n[policy]\nwait_for = 2\nconsistency = ssp\n", "[policy] wait_for" },
    { "[cluster]\nworkers = 4\nservers = 2\n[policy]\nwait_for = 2\n", "[policy] wait_for" },
    /* K of N would do nothing under another policy: refused, not ignored */
    { "[cluster]\nworkers = 4\n[policy]\nkind = allreduce\nwait_for = 2\n", "[policy] wait_for" },
    { "[cluster]\nworkers = 4\n[policy]\nkind = local-sgd\nwait_for = 5\n", "[policy] wait_for" },
    { "[stragglers]\nmodel = pareto\nalpha = 0\n", "[stragglers] alpha" },
    { "[stragglers]\nmodel = exponential\nmean = -1\n", "[stragglers] mean" },
    { "[stragglers]\npersistent = maybe\n", "[stragglers] persistent" },
    { "[failures]\nworker = 1\n", "[failures] at" },
    { "[cluster]\nworkers = 4\n[failures]\nworker = 4\nat = 1s\n", "[failures] worker" },
    { "[failures]\nworker = 1,2\nat = 1s,2s,3s\n", "[failures] at" },
    { "[failures]\nworker = 1\nat = soon\n", "[failures] at" },
    { "[policy]\nkind = allreduce\n[failures]\nworker = 1\nat = 1s\n", "[failures] worker" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *msg = test_load_scenario_error (cases[i].text);
      g_test_message ("%s", msg);
      g_assert_nonnull (strstr (msg, cases[i].key));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stragglers/exponential/bsp-round", test_exponential_bsp);
  g_test_add_func ("/stragglers/bernoulli/slow-rounds", test_bernoulli_slow_rounds);
  g_test_add_func ("/stragglers/kofn/order-statistic", test_kofn_order_statistic);
  g_test_add_func ("/stragglers/kofn/keep", test_kofn_keep);
  g_test_add_func ("/stragglers/persistent", test_persistent);
  g_test_add_func ("/stragglers/pareto/heavy-tail-median", test_pareto_heavy);
  g_test_add_func ("/stragglers/lognormal/mean", test_lognormal_mean);
  g_test_add_func ("/stragglers/failure/bsp-delay", test_failure_bsp_delay);
  g_test_add_func ("/stragglers/failure/kofn-no-delay", test_failure_kofn_no_delay);
  g_test_add_func ("/stragglers/failure/ssp-async", test_failure_ssp_async);
  g_test_add_func ("/stragglers/errors", test_errors);
  return g_test_run ();
}
