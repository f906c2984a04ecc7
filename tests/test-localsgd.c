/*
 * test-localsgd.c — the local SGD policy (docs/policies.md, "Local SGD"),
 * strong scaling with a serial part (Amdahl's law), and the scenario files
 * of those studies.
 *
 * Local SGD: with H = 1 and plain SGD, averaging the models after one step
 * from equal parameters is one step along the mean gradient, so the run must
 * match the all-reduce policy; with a fixed step time and contention = none
 * a round of H local steps lasts H (T + u) + C(4P) (docs/collectives.md);
 * the network carries 1/H of the bytes; the loss goes down.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "kernels/kernels.h"
#include "comm/collectives.h"
#include "policies/policy.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"
#include "sim/load.h"

typedef struct {
  int worker;
  gint64 iteration;
  double start, end, compute, comm, wait;
} Row;

typedef struct {
  double t;
  gint64 step;
  double loss, accuracy;
} Metric;

typedef struct {
  GArray *rows;      /* Row */
  GArray *metrics;   /* Metric */
  SimRunSummary sum;
} Result;

static void
on_iteration (gpointer ctx, int worker, gint64 iteration, double start, double end,
              double compute, double comm, double wait, gint64 staleness)
{
  Result *r = ctx;
  Row row = { worker, iteration, start, end, compute, comm, wait };
  g_array_append_val (r->rows, row);
  g_assert_cmpint (staleness, ==, 0);
}

static void
on_metric (gpointer ctx, double t, gint64 step, double loss, double accuracy,
           double consensus G_GNUC_UNUSED)
{
  Result *r = ctx;
  Metric m = { t, step, loss, accuracy };
  g_array_append_val (r->metrics, m);
}

static Result *
run_text (const char *text, const char *const *sets)
{
  Result *r = g_new0 (Result, 1);
  r->rows = g_array_new (FALSE, FALSE, sizeof (Row));
  r->metrics = g_array_new (FALSE, FALSE, sizeof (Metric));
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = on_iteration,
                      .metric = on_metric };
  test_run_scenario_text (text, sets, &rec, &r->sum, NULL);
  return r;
}

static void
result_free (Result *r)
{
  g_array_unref (r->rows);
  g_array_unref (r->metrics);
  g_free (r);
}

/* Softmax regression of 15 features and 4 classes: P = 15 x 4 + 4 = 64
 * parameters, divisible by every worker count used with ring and
 * halving-doubling here. */
static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 10\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = local-sgd\nalgorithm = ring\n";

#define P_FLOATS (15 * 4 + 4)
#define LINK_LAT 20e-6          /* s per link */
#define LINK_BW  (1e9 / 8)      /* bytes/s */
#define ACHIEVED (1e9 * 0.5)    /* FLOP/s */

static const char *const algs[] = { "ring", "tree", "halving-doubling", "naive" };

/* Fixed step time T, contention none: every round of h <= H local steps lasts
 * h (T + u) + C(4P); a step's row lasts T + u, and the last step of a round
 * also holds the all-reduce (comm = C, wait = 0 without stragglers). */
static void
test_closed_form (void)
{
  const int workers[] = { 2, 4, 8 };
  const int Hs[] = { 1, 2, 3, 4, 8 };
  const gint64 iters = 10; /* not a multiple of 3, 4 or 8: a short last round */
  for (gsize a = 0; a < G_N_ELEMENTS (algs); a++)
    for (gsize wi = 0; wi < G_N_ELEMENTS (workers); wi++)
      for (gsize hi = 0; hi < G_N_ELEMENTS (Hs); hi++)
        {
          int W = workers[wi], H = Hs[hi];
          g_autofree char *s1 = g_strdup_printf ("policy.algorithm=%s", algs[a]);
          g_autofree char *s2 = g_strdup_printf ("cluster.workers=%d", W);
          g_autofree char *s3 = g_strdup_printf ("policy.sync_every=%d", H);
          const char *sets[] = { s1, s2, s3, NULL };
          Result *r = run_text (cluster, sets);
          const double T = 1e-3, alpha = 2 * LINK_LAT, beta = 1 / LINK_BW;
          const double u = kern_sgd_flops (P_FLOATS) / ACHIEVED;
          const double C = test_allreduce_closed_form (algs[a], W, 4.0 * P_FLOATS, alpha,
                                                       beta, 0);
          test_assert_close (C, comm_cost (comm_lookup (algs[a]), COMM_ALLREDUCE,
                                               W, P_FLOATS, 4, alpha, beta, 0), 1e-12);
          double want = 0;
          for (gint64 first = 0; first < iters; first += H)
            want += (double) MIN (H, iters - first) * (T + u) + C;
          test_assert_close (r->sum.sim_time, want, 1e-9);
          g_assert_cmpint (r->sum.updates, ==, iters * W);
          g_assert_cmpuint (r->rows->len, ==, (guint) (iters * W));
          for (guint i = 0; i < r->rows->len; i++)
            {
              const Row *x = &g_array_index (r->rows, Row, i);
              gboolean last = (x->iteration + 1) % H == 0 || x->iteration == iters - 1;
              test_assert_close (x->compute, T + u, 1e-9);
              test_assert_close (x->end - x->start, last ? T + u + C : T + u, 1e-9);
              test_assert_close (x->end - x->start, x->compute + x->comm + x->wait, 1e-9);
              if (last)
                test_assert_close (x->comm, C, 1e-9);
              else
                g_assert_cmpfloat (x->comm, ==, 0.0);
              g_assert_cmpfloat (fabs (x->wait), <, 1e-15);
            }
          result_free (r);
        }
}

/* H = 1, plain SGD: mean of (x - lr g_w) = x - lr mean(g_w), so local SGD
 * (momentum too: each worker's buffer is linear in its gradients)
 * follows the all-reduce policy's parameters: every evaluation (after every
 * averaging) gives the same loss to float tolerance, at the same time. */
static void
test_matches_allreduce (void)
{
  for (gsize a = 0; a <= G_N_ELEMENTS (algs); a++)
    {
      /* every algorithm with SGD; momentum (linear in the gradient too) with ring */
      gboolean momentum = a == G_N_ELEMENTS (algs);
      g_autofree char *s1 = g_strdup_printf ("policy.algorithm=%s", momentum ? "ring" : algs[a]);
      const char *opt = momentum ? "model.optimizer=momentum" : "model.optimizer=sgd";
      const char *ls_sets[] = { s1, "policy.sync_every=1", "scenario.iterations=30",
                                "cluster.workers=3", opt, NULL };
      const char *ar_sets[] = { s1, "policy.kind=allreduce", "policy.bucket_size=0",
                                "scenario.iterations=30", "cluster.workers=3", opt, NULL };
      Result *ls = run_text (cluster, ls_sets);
      Result *ar = run_text (cluster, ar_sets);
      g_assert_cmpuint (ls->metrics->len, ==, 31); /* time 0, then every iteration */
      g_assert_cmpuint (ls->metrics->len, ==, ar->metrics->len);
      for (guint i = 0; i < ls->metrics->len; i++)
        {
          const Metric *x = &g_array_index (ls->metrics, Metric, i);
          const Metric *y = &g_array_index (ar->metrics, Metric, i);
          g_assert_cmpint (x->step, ==, y->step);
          test_assert_close (x->t, y->t, 1e-12);
          test_assert_close (x->loss, y->loss, 1e-5);
        }
      test_assert_close (ls->sum.final_loss, ar->sum.final_loss, 1e-5);
      test_assert_close (ls->sum.sim_time, ar->sum.sim_time, 1e-12);
      /* it did learn: below the loss of a uniform guess over 4 classes */
      g_assert_cmpfloat (ls->sum.final_loss, <, log (4.0));
      result_free (ls);
      result_free (ar);
    }
}

/* With H > 1 the loss still goes down, and the model is evaluated only after
 * an averaging: every W x H applied gradients. */
static void
test_learns (void)
{
  const int W = 4, H = 4;
  const char *sets[] = { "policy.sync_every=4", "scenario.iterations=60", NULL };
  Result *r = run_text (cluster, sets);
  g_assert_cmpuint (r->metrics->len, ==, 1 + 60 / H);
  for (guint i = 0; i < r->metrics->len; i++)
    g_assert_cmpint (g_array_index (r->metrics, Metric, i).step % (W * H), ==, 0);
  const Metric *first = &g_array_index (r->metrics, Metric, 0);
  const Metric *last = &g_array_index (r->metrics, Metric, r->metrics->len - 1);
  g_assert_cmpfloat (last->loss, <, 0.8 * first->loss);
  g_assert_cmpfloat (r->sum.final_loss, <, log (4.0));
  test_assert_close (r->sum.final_loss, last->loss, 1e-12); /* ends on an average */
  result_free (r);
}

/* A timing-only model runs: same closed form, no loss. */
static void
test_timing_only (void)
{
  const int W = 4, H = 3;
  const gint64 iters = 10;
  const double P = 1000, flops = 2e6; /* per sample */
  const char *sets[] = { "model.kind=timing", "model.params=1000", "model.flops=2e6",
                         "device.step_time=-1", "kernels.backend=none",
                         "policy.sync_every=3", NULL };
  Result *r = run_text (cluster, sets);
  const double T = flops * 8 / ACHIEVED, u = kern_sgd_flops ((gsize) P) / ACHIEVED;
  const double C = test_allreduce_closed_form ("ring", W, 4 * P, 2 * LINK_LAT, 1 / LINK_BW, 0);
  double want = 0;
  for (gint64 first = 0; first < iters; first += H)
    want += (double) MIN (H, iters - first) * (T + u) + C;
  test_assert_close (r->sum.sim_time, want, 1e-9);
  g_assert_true (isnan (r->sum.final_loss));
  g_assert_cmpuint (r->rows->len, ==, (guint) (iters * W));
  result_free (r);
}

/* Opens db and returns the integer of a one-row, one-column query. */
/* The network carries one ring all-reduce of 4P bytes per averaging: with
 * 16 iterations, 16 / H of them, each of 2 (W - 1) W messages and
 * 2 (W - 1) x 4P bytes. */
static void
test_bytes (void)
{
  const int W = 4;
  const gint64 iters = 16;
  g_autofree char *dir = g_dir_make_tmp ("dtsim-localsgd-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "t.ini", NULL);
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_assert_true (g_file_set_contents (ini, cluster, -1, NULL));
  double prev = INFINITY;
  for (int H = 1; H <= 16; H *= 2)
    {
      g_autofree char *sh = g_strdup_printf ("policy.sync_every=%d", H);
      g_autofree char *o = NULL, *e = NULL;
      g_unlink (db);
      g_assert_cmpint (test_run_dtsim (dir, &o, &e, "run", ini, "-o", db, "--quiet",
                                       "--set", sh, "--set", "scenario.iterations=16",
                                       "--set", "trace.detail=messages", NULL), ==, 0);
      double n = test_query_number (db, "SELECT count(*) FROM messages");
      double bytes = test_query_number (db, "SELECT sum(bytes) FROM messages");
      double syncs = (double) iters / H;
      g_assert_cmpfloat (n, ==, syncs * 2 * (W - 1) * W);
      g_assert_cmpfloat (bytes, ==, syncs * 2 * (W - 1) * 4.0 * P_FLOATS);
      g_assert_cmpfloat (bytes, <, prev);
      prev = bytes;
    }
  g_unlink (db);
  g_unlink (ini);
  g_rmdir (dir);
}

/* Strong scaling, timing-only all-reduce with free communication: a global
 * batch of G samples shared by N workers, a serial part s per step.
 * T(N) = s + u + parallel / N, and the speedup T(1) / T(N) is Amdahl's law
 * with f the share of T(1) that does not parallelise: the serial part and
 * the optimizer step u (every worker updates every parameter). */
static void
test_amdahl (void)
{
  const char text[] =
    "[scenario]\nname = a\niterations = 3\n"
    "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nserial_time = 300ms\n"
    "[network]\nbandwidth = 1e30\nlatency = 0\ncontention = none\n"
    "[model]\nkind = timing\nparams = 1000\nflops = 1e6\nglobal_batch = 1024\n"
    "[policy]\nkind = allreduce\nbucket_size = 0\n"
    "[kernels]\nbackend = none\n";
  const double serial = 0.3, G = 1024, flops = 1e6, P = 1000;
  const double parallel = G * flops / ACHIEVED;
  const double u = kern_sgd_flops ((gsize) P) / ACHIEVED;
  const double f = (serial + u) / (serial + u + parallel);
  const int Ns[] = { 1, 2, 4, 8, 16 };
  double T1 = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (Ns); i++)
    {
      int N = Ns[i];
      g_autofree char *sw = g_strdup_printf ("cluster.workers=%d", N);
      const char *sets[] = { sw, NULL };
      Result *r = run_text (text, sets);
      double T = r->sum.sim_time / 3;
      test_assert_close (T, serial + u + parallel / N, 1e-9);
      if (N == 1)
        T1 = T;
      test_assert_close (T1 / T, 1 / (f + (1 - f) / N), 1e-9);
      result_free (r);
    }
}

/* [model] global_batch sets the per-worker batch, must divide exactly and
 * cannot be given with batch. */
static void
test_global_batch_keys (void)
{
  const char base[] = "[cluster]\nworkers = 4\n[model]\nglobal_batch = 1024\n";
  GPtrArray *configs = test_load_scenario_text (base, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  g_assert_cmpint (c->batch, ==, 1024 / 4);
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), "model.batch") == 0)
      g_assert_cmpstr (g_ptr_array_index (c->param_values, i), ==, "256");
  g_ptr_array_unref (configs);

  g_autofree char *m1 = test_load_scenario_error ("[cluster]\nworkers = 3\n"
                                                  "[model]\nglobal_batch = 1024\n");
  g_assert_nonnull (strstr (m1, "[model] global_batch"));
  g_assert_nonnull (strstr (m1, "1023 or 1026"));
  g_autofree char *m2 = test_load_scenario_error ("[cluster]\nworkers = 4\n"
                                                  "[model]\nglobal_batch = 1024\nbatch = 8\n");
  g_assert_nonnull (strstr (m2, "[model] global_batch"));
  g_assert_nonnull (strstr (m2, "not both"));
  g_autofree char *m3 = test_load_scenario_error ("[device]\nserial_time = -1s\n");
  g_assert_nonnull (strstr (m3, "[device] serial_time"));
  g_autofree char *m4 = test_load_scenario_error ("[policy]\nkind = local-sgd\nsync_every = 0\n");
  g_assert_nonnull (strstr (m4, "[policy] sync_every"));
}

/* The study scenarios validate and run to the end, every sweep point. */
static void
test_scenario_file (gconstpointer data)
{
  const char *name = data;
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *ini = g_build_filename (src, "scenarios", name, NULL);
  g_autofree char *dir = g_dir_make_tmp ("dtsim-scenario-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "x.db", NULL);
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &o, &e, "check", ini, NULL), ==, 0);
  g_assert_cmpint (test_run_dtsim (dir, &o2, &e2, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs = sim_scenario_load (ini, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (configs->len, >=, 6);
  g_assert_cmpfloat (test_query_number (db, "SELECT count(*) FROM runs WHERE status = 'done'"), ==,
                     (double) configs->len);
  g_unlink (db);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/localsgd/closed-form", test_closed_form);
  g_test_add_func ("/localsgd/matches-allreduce", test_matches_allreduce);
  g_test_add_func ("/localsgd/learns", test_learns);
  g_test_add_func ("/localsgd/timing-only", test_timing_only);
  g_test_add_func ("/localsgd/bytes", test_bytes);
  g_test_add_func ("/amdahl/speedup", test_amdahl);
  g_test_add_func ("/amdahl/keys", test_global_batch_keys);
  g_test_add_data_func ("/scenarios/amdahl", "amdahl.ini", test_scenario_file);
  g_test_add_data_func ("/scenarios/staleness-sweep", "staleness-sweep.ini", test_scenario_file);
  g_test_add_data_func ("/scenarios/local-sgd", "local-sgd.ini", test_scenario_file);
  return g_test_run ();
}
