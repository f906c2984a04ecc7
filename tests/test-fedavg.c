/*
 * test-fedavg.c — federated averaging (docs/policies.md, "Federated
 * averaging").
 *
 * With every client sampled, one local step each and equal data, averaging
 * the clients' models is one step along the mean gradient: FedAvg is
 * all-reduce SGD (FedSGD).  With a fixed step time and contention none a
 * round lasts 2 (a + 4P b) + H (T + u), H = ceil(E n_c / batch).  Sampling
 * takes round(C W) clients a round; dropped clients never answer; a
 * deadline closes a round without its stragglers.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

/* 512 samples: 128 per client of 4, 16 batches of 8 each. */
static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 10\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = fedavg\nfraction = 1\n";

#define P_FLOATS (15 * 4 + 4)

/* FedSGD: C = 1, one local step, equal shares: all-reduce SGD, every
 * evaluation (after every round) to float tolerance (plain SGD: each
 * client keeps its own optimizer state, so momentum would differ). */
static void
test_fedsgd_is_allreduce (void)
{
  const char *fa_sets[] = { "policy.local_epochs=1e-6", "scenario.iterations=30", NULL };
  const char *ar[] = { "scenario.iterations=30", NULL };
  static const char ar_cluster[] =
    "[scenario]\nname = t\nseed = 5\niterations = 10\n"
    "[cluster]\nworkers = 4\n"
    "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
    "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
    "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
    "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n";
  TestRun *f = test_run_collect (cluster, fa_sets);
  TestRun *a = test_run_collect (ar_cluster, ar);
  g_assert_cmpint (f->sum.updates, ==, a->sum.updates);
  g_assert_cmpint (f->sum.iterations, ==, 30);
  g_assert_cmpuint (f->metrics->len, ==, a->metrics->len);
  for (guint i = 0; i < f->metrics->len; i++)
    test_assert_close (g_array_index (f->metrics, TestMetric, i).loss,
                       g_array_index (a->metrics, TestMetric, i).loss, 1e-5);
  g_assert_cmpfloat (f->sum.final_loss, <, log (4.0));
  test_run_free (f);
  test_run_free (a);
}

/* Fixed step time, contention none, every client: a round lasts
 * 2 (a + 4P b) + H (T + u), H = ceil(E x 128 / 8). */
static void
test_closed_form (void)
{
  const double Es[] = { 1e-6, 0.25, 1, 2.5 };
  const double T = 1e-3, a = 2 * 20e-6, m = 4.0 * P_FLOATS * 8 / 1e9;
  const double u = kern_sgd_flops (P_FLOATS) / (1e9 * 0.5);
  for (gsize i = 0; i < G_N_ELEMENTS (Es); i++)
    {
      g_autofree char *e = g_strdup_printf ("policy.local_epochs=%.17g", Es[i]);
      const char *sets[] = { e, NULL };
      TestRun *r = test_run_collect (cluster, sets);
      double H = MAX (1, ceil (Es[i] * 128 / 8));
      double round = 2 * (a + m) + H * (T + u);
      test_assert_close (r->sum.sim_time, 10 * round, 1e-9);
      g_assert_cmpint (r->sum.updates, ==, (gint64) (10 * 4 * H));
      g_assert_cmpuint (r->rows->len, ==, 40);
      for (guint k = 0; k < r->rows->len; k++)
        {
          const TestRow *x = &g_array_index (r->rows, TestRow, k);
          test_assert_close (x->end - x->start, round, 1e-9);
          test_assert_close (x->compute, H * (T + u), 1e-9);
          test_assert_close (x->comm, 2 * (a + m), 1e-6);
          g_assert_cmpfloat (fabs (x->wait), <, 1e-12);
        }
      test_run_free (r);
    }
}

/* C = 0.5 of 8 clients: 4 a round, distinct, the same draw for the same
 * seed, and over 40 rounds every client is sampled. */
static void
test_sampling (void)
{
  const char *sets[] = { "cluster.workers=8", "policy.fraction=0.5", "scenario.iterations=40",
                         NULL };
  TestRun *r = test_run_collect (cluster, sets);
  TestRun *s = test_run_collect (cluster, sets);
  g_assert_cmpuint (r->rows->len, ==, 40 * 4);
  g_assert_cmpuint (s->rows->len, ==, r->rows->len);
  int seen[8] = { 0 };
  for (guint k = 0; k < r->rows->len; k++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, k), *y = &g_array_index (s->rows, TestRow, k);
      g_assert_cmpint (x->worker, ==, y->worker);
      g_assert_cmpint (x->iteration, ==, (gint64) (k / 4));
      if (k % 4 > 0)
        g_assert_cmpint (x->worker, >, (x - 1)->worker); /* distinct, in client order */
      seen[x->worker]++;
    }
  for (int c = 0; c < 8; c++)
    g_assert_cmpint (seen[c], >, 0);
  test_assert_close (r->sum.final_loss, s->sum.final_loss, 0);
  test_run_free (r);
  test_run_free (s);
}

/* drop = 1 would have no client ever answer: refused, naming the key. */
static void
test_all_dropped (void)
{
  g_autofree char *text = g_strconcat (cluster, "drop = 1\n", NULL);
  g_autofree char *msg = test_load_scenario_error (text);
  g_assert_nonnull (strstr (msg, "[policy] drop"));
  g_assert_nonnull (strstr (msg, "below 1"));
}

/* A deadline no client can meet: every round closes empty, so the run
 * trained nothing.  `dtsim run` says so on one line, exits 2 and leaves the
 * database that was there as it was. */
static void
test_no_answer (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-fedavg-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "t.ini", NULL);
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_assert_true (g_file_set_contents (ini, cluster, -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", "t.ini", "-o", "t.db", "-q", NULL),
                   ==, 0);
  gsize before_len = 0;
  g_autofree char *before = test_read_file (db, &before_len);
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", "t.ini", "-o", "t.db",
                                   "--set", "policy.deadline=1ns", NULL), ==, 2);
  g_assert_true (g_str_has_prefix (err, "dtsim: t.ini: [policy] deadline: no client answered"));
  g_assert_cmpint (strchr (err, '\n') - err, ==, (int) strlen (err) - 1); /* one line */
  gsize after_len = 0;
  g_autofree char *after = test_read_file (db, &after_len);
  g_assert_cmpuint (after_len, ==, before_len);
  g_assert_cmpint (memcmp (before, after, before_len), ==, 0);
  sim_remove_tree (dir);
}

/* Client 0 ten times slower and a deadline between the others' round and
 * its: every round closes at the deadline without it, so its steps never
 * count. */
static void
test_deadline (void)
{
  const double T = 1e-3, a = 2 * 20e-6, m = 4.0 * P_FLOATS * 8 / 1e9;
  const double u = kern_sgd_flops (P_FLOATS) / (1e9 * 0.5);
  const double H = 4, normal = 2 * (a + m) + H * (T + u), deadline = normal + 1e-3;
  g_autofree char *d = g_strdup_printf ("policy.deadline=%.17g", deadline);
  const char *sets[] = { "policy.local_epochs=0.25", "stragglers.model=fixed",
                         "stragglers.slow=0", "stragglers.factor=10", d, NULL };
  TestRun *r = test_run_collect (cluster, sets);
  test_assert_close (r->sum.sim_time, 10 * deadline, 1e-9);
  g_assert_cmpint (r->sum.updates, ==, (gint64) (10 * 3 * H));
  for (guint k = 0; k < r->rows->len; k++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, k);
      if (x->worker == 0)
        g_assert_cmpfloat (x->wait, ==, 0);
      else
        test_assert_close (x->wait, deadline - normal, 1e-6);
    }
  test_run_free (r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/fedavg/fedsgd-is-allreduce", test_fedsgd_is_allreduce);
  g_test_add_func ("/fedavg/closed-form", test_closed_form);
  g_test_add_func ("/fedavg/sampling", test_sampling);
  g_test_add_func ("/fedavg/all-dropped", test_all_dropped);
  g_test_add_func ("/fedavg/no-answer", test_no_answer);
  g_test_add_func ("/fedavg/deadline", test_deadline);
  return g_test_run ();
}
