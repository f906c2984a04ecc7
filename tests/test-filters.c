/*
 * test-filters.c — the parameter server's push filters ([policy] filter,
 * docs/policies.md "Filters on the pushes") and the two strawmen the
 * parameter server is compared with ("The parameter server's strawmen"):
 * each filter's rule on hand-made vectors, the bytes of a filtered push,
 * threshold = 0 and the zero filter training bit for bit as no filter,
 * the strawmen's bytes per iteration as their closed forms, and the
 * refusals.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/filter.h"
#include "tests/util.h"
#include "views/tracedigest.h"

static char *tmpdir;

static BaseValues *
values (const char *filter, double threshold)
{
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  pol_keys (rows);
  BaseValues *v = base_values_new (rows);
  base_values_set_string (v, "policy.filter", filter);
  base_values_set_double (v, "policy.threshold", threshold);
  return v;
}

/* zero: exactly the entries that are not 0 (-0 is 0) are sent, unchanged;
 * bytes = min(4n, 8 x non-zeros). */
static void
test_zero_rule (void)
{
  g_autoptr (BaseValues) v = values ("zero", 0.01);
  const PolFilter *f = pol_filter_of (v);
  g_assert_nonnull (f);
  g_assert_false (f->feedback);
  float g[10] = { 0, 1.5f, -0.0f, 0, -2, 0, 0, 1e-30f, 0, 0 };
  float want[10];
  memcpy (want, g, sizeof g);
  float w[10] = { 0 };
  gsize sent = f->apply (v, 0.1, g, NULL, w, 10);
  gsize nonzero = 3; /* 1.5, -2, 1e-30 */
  g_assert_cmpuint (sent, ==, nonzero);
  g_assert_cmpmem (g, sizeof g, want, sizeof want);
  g_assert_cmpfloat (pol_filter_bytes (10, sent), ==, 8.0 * nonzero);
  /* more than half non-zero: the dense shard is smaller */
  g_assert_cmpfloat (pol_filter_bytes (10, 6), ==, 4.0 * 10);
  g_assert_cmpfloat (pol_filter_bytes (10, 5), ==, 4.0 * 10);
  g_assert_cmpfloat (pol_filter_bytes (10, 0), ==, 0);
  g_autoptr (BaseValues) none = values ("none", 0.01);
  g_assert_null (pol_filter_of (none));
}

/* threshold: entry i is skipped while |lr (g_i + e_i)| < t |w_i|, kept in
 * e_i; a sent entry carries g_i + e_i and clears e_i. */
static void
test_threshold_rule (void)
{
  double t = 0.01, lr = 0.5;
  g_autoptr (BaseValues) v = values ("threshold", t);
  const PolFilter *f = pol_filter_of (v);
  g_assert_nonnull (f);
  g_assert_true (f->feedback);
  /* |lr g| against t |w| = 0.01 |w|: w = 1 -> bound 0.01, so |g| < 0.02
   * is skipped; w = 0 -> everything not below 0 is sent */
  float w[6] = { 1, 1, 1, -4, 0, 1 };
  float g[6] = { 0.01f, 0.03f, -0.019f, 0.05f, 1e-20f, 0 };
  float e[6] = { 0, 0, 0, 0, 0, 0.5f };
  gsize sent = f->apply (v, lr, g, e, w, 6);
  /* 0: 0.005 < 0.01 skipped; 1: 0.015 sent; 2: 0.0095 skipped; 3: 0.025 <
   * 0.04 skipped; 4: w = 0 sent; 5: the residual 0.5 alone, 0.25 sent */
  const float want_g[6] = { 0, 0.03f, 0, 0, 1e-20f, 0.5f };
  const float want_e[6] = { 0.01f, 0, -0.019f, 0.05f, 0, 0 };
  g_assert_cmpuint (sent, ==, 3);
  g_assert_cmpmem (g, sizeof g, want_g, sizeof want_g);
  g_assert_cmpmem (e, sizeof e, want_e, sizeof want_e);
  /* the next push: the residuals join it; entry 0 now passes the bound,
   * entry 2 cancels to 0 (skipped, residual 0) */
  float g2[6] = { 0.02f, 0, 0.019f, 0.05f, 0, 0 };
  sent = f->apply (v, lr, g2, e, w, 6);
  g_assert_cmpfloat (g2[0], ==, 0.02f + 0.01f);
  g_assert_cmpfloat (e[0], ==, 0);
  g_assert_cmpfloat (g2[2], ==, 0);
  g_assert_cmpfloat (e[2], ==, -0.019f + 0.019f);
  g_assert_cmpfloat (g2[3], ==, 0.05f + 0.05f); /* 0.05 >= 0.04 */
  g_assert_cmpfloat (e[3], ==, 0);
  /* entries 1 and 5 are 0 at w = 1: skipped; entry 4 is 0 at w = 0: sent */
  g_assert_cmpuint (sent, ==, 3);
  /* t = 0 sends everything, bits untouched, -0 included */
  g_autoptr (BaseValues) v0 = values ("threshold", 0);
  float g0[4] = { -0.0f, 1e-30f, -3, 0 }, e0[4] = { 0 }, w0[4] = { 1e30f, 1, -1, 0 };
  float keep[4];
  memcpy (keep, g0, sizeof g0);
  g_assert_cmpuint (f->apply (v0, lr, g0, e0, w0, 4), ==, 4);
  g_assert_cmpmem (g0, sizeof g0, keep, sizeof keep);
  g_assert_true (signbit (g0[0]));
}

/* A BSP parameter server of W workers on a star: MLP on the synthetic
 * set, batch 1 (its ReLUs leave zero rows in the gradient). */
static char *
ps_scenario (int workers, int servers, const char *policy_extra)
{
  return g_strdup_printf ("[scenario]\nname = filters\nseed = 7\niterations = 12\n"
                          "[cluster]\nworkers = %d\nservers = %d\n"
                          "[device]\nflops = 1GFLOPS\nefficiency = 1\n"
                          "[network]\ntopology = star\nbandwidth = 1Gbps\nlatency = 10us\n"
                          "[model]\nkind = mlp\nhidden = 16\ndataset = synthetic\nfeatures = 8\n"
                          "batch = 1\nlr = 0.1\neval_every = 4\n"
                          "[policy]\nkind = ps\n%s"
                          "[trace]\ndetail = messages\n", workers, servers, policy_extra);
}

/* The digests of the tables a run's timing and math fill (not params,
 * which name the filter). */
static char *
run_digest (const char *db)
{
  static const char *const tables[] = { "iterations", "spans", "messages", "metrics", NULL };
  g_autofree char *digest = test_tables_digest (db, tables);
  return g_strdup_printf ("%sfinal_loss %.17g\n", digest,
                          test_query_number (db, "SELECT final_loss FROM runs"));
}

static double
param (const char *db, const char *key)
{
  g_autofree char *sql = g_strdup_printf ("SELECT CAST(value AS REAL) FROM params WHERE key = '%s'",
                                          key);
  return test_query_number (db, sql);
}

/* threshold = 0 sends every entry: the same messages, times and model as
 * no filter, bit for bit, with one server (no filter: the gradient is
 * computed when the server applies it) and with several. */
static void
test_threshold_zero_is_none (void)
{
  for (int servers = 1; servers <= 3; servers += 2)
    {
      g_autofree char *a = ps_scenario (4, servers, "filter = none\n");
      g_autofree char *b = ps_scenario (4, servers, "filter = threshold\nthreshold = 0\n");
      g_autofree char *na = g_strdup_printf ("none%d", servers);
      g_autofree char *nb = g_strdup_printf ("t0-%d", servers);
      g_autofree char *da = test_run_text (tmpdir, a, na), *db = test_run_text (tmpdir, b, nb);
      g_autofree char *ga = run_digest (da), *gb = run_digest (db);
      g_assert_cmpstr (ga, ==, gb);
      g_assert_nonnull (strstr (ga, "messages"));
      g_assert_cmpfloat (param (db, "policy.filter_saved"), ==, 0);
      g_assert_cmpfloat (param (db, "policy.filter_kept"), ==, 1);
    }
}

/* zero: nothing is lost, so the model is no filter's bit for bit (with
 * one worker: with several, smaller pushes arrive in another order and a
 * BSP round sums its gradients in the order they arrive); every push
 * carries min(4n, 8 x sent) bytes, their sum is the params row, and with
 * batch 1 some entries are skipped. */
static void
test_zero_run (void)
{
  g_autofree char *a = ps_scenario (1, 2, "filter = none\n");
  g_autofree char *b = ps_scenario (1, 2, "filter = zero\n");
  g_autofree char *da = test_run_text (tmpdir, a, "zero-none"), *db = test_run_text (tmpdir, b, "zero");
  double loss_a = test_query_number (da, "SELECT final_loss FROM runs");
  double loss_b = test_query_number (db, "SELECT final_loss FROM runs");
  g_assert_cmpfloat (loss_a, ==, loss_b);
  double kept = param (db, "policy.filter_kept");
  g_assert_cmpfloat (kept, <, 1);
  g_assert_cmpfloat (kept, >, 0);
  double pushed = test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag = 'grad'");
  double dense = test_query_number (da, "SELECT SUM(bytes) FROM messages WHERE tag = 'grad'");
  g_assert_cmpfloat (pushed, ==, param (db, "policy.filter_bytes"));
  g_assert_cmpfloat (dense, ==, param (db, "policy.filter_dense_bytes"));
  /* a push is either dense (the shard's 4n) or 8 bytes per entry sent */
  const char *odd_sql =
    "SELECT COUNT(*) FROM messages g WHERE tag = 'grad' AND NOT ("
    "bytes = (SELECT MAX(bytes) FROM messages p WHERE p.tag = 'params' AND p.src = g.dst) OR "
    "(CAST(bytes AS INTEGER) % 8 = 0 AND "
    "bytes < (SELECT MAX(bytes) FROM messages p WHERE p.tag = 'params' AND p.src = g.dst)))";
  double odd = test_query_number (db, odd_sql);
  g_assert_cmpfloat (odd, ==, 0);
  /* the row is written to 6 significant digits: within half a unit of the
   * 6th */
  test_assert_close (param (db, "policy.filter_saved"), 1 - pushed / dense, 5e-6);
}

/* Softmax on the synthetic set: P = (features + 1) x classes. */
#define STRAW_F 8
#define STRAW_C 10
#define STRAW_W 4

static char *
straw_scenario (const char *cluster, const char *policy)
{
  return g_strdup_printf ("[scenario]\nname = straw\nseed = 3\niterations = 1\n"
                          "[cluster]\nworkers = %d\n%s"
                          "[device]\nflops = 1GFLOPS\n"
                          "[network]\ntopology = star\nbandwidth = 1Gbps\nlatency = 10us\n"
                          "[model]\nkind = softmax\ndataset = synthetic\nfeatures = %d\n"
                          "classes = %d\nbatch = 8\n"
                          "[policy]\n%s", STRAW_W, cluster, STRAW_F, STRAW_C, policy);
}

/* Bytes per iteration: all-to-all broadcast of updates (kind = exchange,
 * ring all-gather) W (W - 1) 4P; a coordinator (kind = ps, one server)
 * 2 W 4P; the coordinator as worker 0 (allreduce, naive) 2 (W - 1) 4P;
 * the sharded server (servers = 4) 2 W 4P too. */
static void
test_strawmen_bytes (void)
{
  double W = STRAW_W, P = (STRAW_F + 1) * STRAW_C;
  struct { const char *cluster, *policy, *name; double want; } cases[] = {
    { "", "kind = exchange\nalgorithm = ring\n", "broadcast", W * (W - 1) * 4 * P },
    { "servers = 1\n", "kind = ps\n", "coordinator", 2 * W * 4 * P },
    { "", "kind = allreduce\nalgorithm = naive\n", "driver", 2 * (W - 1) * 4 * P },
    { "servers = 4\n", "kind = ps\n", "sharded", 2 * W * 4 * P },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *text = straw_scenario (cases[k].cluster, cases[k].policy);
      g_autofree char *db = test_run_messages (tmpdir, text, cases[k].name);
      double got = test_query_number (db, "SELECT SUM(bytes) FROM messages");
      if (got != cases[k].want)
        g_error ("%s: %.17g bytes, want %.17g", cases[k].name, got, cases[k].want);
    }
}

static void
test_refusals_lines (void)
{
  const TestRefusal cases[] = {
    { "kind = ps", "kind = allreduce",
      "[policy] filter: threshold filters a parameter server's pushes (kind = ps), and kind = "
      "allreduce has none" },
    { "filter = threshold", "filter = threshold\ncompression = top-k",
      "[policy] filter: threshold and compression = top-k" },
    { "[policy]", "[kernels]\nbackend = none\n[policy]", "[policy] filter: threshold needs the real math" },
    { "filter = threshold", "filter = zero", "[policy] threshold: applies only to filter = threshold" },
    { "filter = threshold", "filter = none", "[policy] threshold: applies only to filter = threshold" },
  };
  g_autofree char *base = ps_scenario (4, 1, "filter = threshold\nthreshold = 0.05\n");
  test_refusals (base, cases, G_N_ELEMENTS (cases));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-filters-XXXXXX", NULL);
  g_test_add_func ("/filters/zero-rule", test_zero_rule);
  g_test_add_func ("/filters/threshold-rule", test_threshold_rule);
  g_test_add_func ("/filters/threshold-zero-is-none", test_threshold_zero_is_none);
  g_test_add_func ("/filters/zero-run", test_zero_run);
  g_test_add_func ("/filters/strawmen-bytes", test_strawmen_bytes);
  g_test_add_func ("/filters/refusals", test_refusals_lines);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
