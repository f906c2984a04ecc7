/*
 * test-labs.c — every claim the labs of docs/labs/ make about what students
 * will observe, checked on the scenario files the labs tell them to run.
 *
 * Each lab's scenario runs once (through the dtsim binary, as a student
 * would, sometimes with --set overrides the lab names) into a database in a
 * temporary folder; the test cases then query that database.  A test case is
 * named after the lab and the number of the statement it checks in the lab's
 * "What you should observe" section.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>

#include "tests/util.h"

static char *tmpdir;

/* The database of scenarios/NAME.ini run with the overrides (NULL-terminated
 * "section.key=value" strings); cached per name and set of overrides. */
static const char *
lab_db (const char *name, ...)
{
  static GHashTable *cache;
  if (!cache)
    cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  GString *key = g_string_new (name);
  va_list ap;
  va_start (ap, name);
  for (const char *s = va_arg (ap, const char *); s; s = va_arg (ap, const char *))
    {
      g_ptr_array_add (args, g_strdup ("--set"));
      g_ptr_array_add (args, g_strdup (s));
      g_string_append_printf (key, " %s", s);
    }
  va_end (ap);
  const char *have = g_hash_table_lookup (cache, key->str);
  if (have)
    {
      g_string_free (key, TRUE);
      return have;
    }
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *file = g_strdup_printf ("%s.ini", name);
  g_autofree char *ini = g_build_filename (src, "scenarios", file, NULL);
  g_autofree char *dbname = g_strdup_printf ("lab%u.db", g_hash_table_size (cache));
  char *db = g_build_filename (tmpdir, dbname, NULL);
  /* dtsim run INI -o DB --quiet [--set k=v]... */
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *head[] = { "run", ini, "-o", db, "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (char *) head[i]);
  for (guint i = 0; i < args->len; i++)
    g_ptr_array_add (argv, g_ptr_array_index (args, i));
  g_ptr_array_add (argv, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int status = test_run_dtsim_argv (tmpdir, &out, &err, (const char *const *) argv->pdata);
  if (status != 0)
    g_error ("dtsim run %s failed (%d): %s", ini, status, err);
  g_hash_table_insert (cache, g_string_free (key, FALSE), db);
  return db;
}

/* The one number the query (printf-style) returns; fails on none or NULL. */
static double G_GNUC_PRINTF (2, 3)
q (const char *db, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *sql = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return test_query_number (db, sql);
}

/* SQL of the id of the run whose params have all the "key=value" pairs given
 * in `where` (space-separated). */
static char *
run_with (const char *where)
{
  g_auto (GStrv) pairs = g_strsplit (where, " ", -1);
  GString *s = g_string_new ("(SELECT r.id FROM runs r WHERE 1");
  for (int i = 0; pairs[i]; i++)
    {
      g_auto (GStrv) kv = g_strsplit (pairs[i], "=", 2);
      g_assert_nonnull (kv[1]);
      g_string_append_printf (s, " AND EXISTS (SELECT 1 FROM params p WHERE p.run_id = r.id"
                                 " AND p.key = '%s' AND p.value = '%s')", kv[0], kv[1]);
    }
  g_string_append (s, ")");
  return g_string_free (s, FALSE);
}

/* Simulated seconds per iteration of the run with those params. */
static double
t_iter (const char *db, const char *where)
{
  g_autofree char *id = run_with (where);
  return q (db, "SELECT sim_time / iterations FROM runs WHERE id = %s", id);
}

/* ---------------------------------------------------------------- lab 1 */

#define FREE_NET "network.latency=0", "network.bandwidth=1e15"

static double
amdahl_t (gboolean free_net, const char *serial, int workers)
{
  const char *db = free_net ? lab_db ("amdahl", FREE_NET, NULL) : lab_db ("amdahl", NULL);
  g_autofree char *w = g_strdup_printf ("device.serial_time=%s cluster.workers=%d", serial,
                                        workers);
  return t_iter (db, w);
}

/* Amdahl's serial fraction of the free-network runs with the serial part,
 * from T(N) = a + b/N at N = 1 and 2. */
static double
amdahl_f (void)
{
  double t1 = amdahl_t (TRUE, "100ms", 1), t2 = amdahl_t (TRUE, "100ms", 2);
  double b = 2 * (t1 - t2);
  return (t1 - b) / t1;
}

static void
lab1_free_no_serial (void)
{
  double eff = amdahl_t (TRUE, "0", 1) / amdahl_t (TRUE, "0", 64) / 64;
  g_assert_cmpfloat (eff, >, 0.99);
}

static void
lab1_exact_amdahl (void)
{
  double f = amdahl_f (), t1 = amdahl_t (TRUE, "100ms", 1);
  for (int n = 2; n <= 64; n *= 2)
    test_assert_close (t1 / amdahl_t (TRUE, "100ms", n), 1 / (f + (1 - f) / n), 1e-6);
  g_assert_cmpfloat (t1 / amdahl_t (TRUE, "100ms", 64), <, 15);
  g_assert_cmpfloat (1 / f, <, 18);
  g_assert_cmpfloat (t1 / amdahl_t (TRUE, "100ms", 64), <, 1 / f);
}

static void
lab1_communication (void)
{
  double eff = amdahl_t (FALSE, "0", 1) / amdahl_t (FALSE, "0", 64) / 64;
  g_assert_cmpfloat (eff, >, 0.55);
  g_assert_cmpfloat (eff, <, 0.70);
  const char *db = lab_db ("amdahl", NULL);
  double prev = -1;
  for (int n = 1; n <= 64; n *= 2)
    {
      g_autofree char *w = g_strdup_printf ("device.serial_time=0 cluster.workers=%d", n);
      g_autofree char *id = run_with (w);
      double share = q (db, "SELECT comm / (compute + comm + wait) FROM runs WHERE id = %s", id);
      g_assert_cmpfloat (share, >, prev);
      prev = share;
    }
  g_assert_cmpfloat (prev, >, 0.30);
}

static void
lab1_both (void)
{
  double eff = amdahl_t (FALSE, "100ms", 1) / amdahl_t (FALSE, "100ms", 64) / 64;
  g_assert_cmpfloat (eff, <, 0.25);
  g_assert_cmpfloat (eff, <, amdahl_t (TRUE, "100ms", 1) / amdahl_t (TRUE, "100ms", 64) / 64);
  g_assert_cmpfloat (eff, <, amdahl_t (FALSE, "0", 1) / amdahl_t (FALSE, "0", 64) / 64);
}

/* The serial fraction `dtsim plot` prints for the group labelled `label`. */
static double
plotted_f (const char *db, const char *label)
{
  g_autofree char *dir = g_strconcat (db, "-plots", NULL);
  g_autofree char *out = NULL, *err = NULL;
  const char *args[] = { "plot", db, "-o", dir, NULL };
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, args), ==, 0);
  g_autofree char *tag = g_strdup_printf ("  [%s]", label);
  for (char **l = g_strsplit (out, "\n", -1), **p = l; *p || (g_strfreev (l), FALSE); p++)
    if (g_str_has_prefix (*p, "serial fraction (Amdahl fit): f = ") && g_str_has_suffix (*p, tag))
      {
        double f = g_ascii_strtod (*p + strlen ("serial fraction (Amdahl fit): f = "), NULL);
        g_strfreev (l);
        return f;
      }
  g_error ("no serial fraction for %s in:\n%s", label, out);
}

static void
lab1_fit (void)
{
  double free_f = plotted_f (lab_db ("amdahl", FREE_NET, NULL), "serial_time=100ms");
  test_assert_close (free_f, amdahl_f (), 0.01);
  g_assert_cmpfloat (plotted_f (lab_db ("amdahl", NULL), "serial_time=0"), >, 0.005);
  g_assert_cmpfloat (plotted_f (lab_db ("amdahl", NULL), "serial_time=100ms"), >, free_f);
}

/* ---------------------------------------------------------------- lab 2 */

#define NO_FAILURE "failures.at=1e6"

/* The run of that straggler model and mode: "consistency/wait_for", as the
 * scenario's joint sweep key writes it. */
static char *
strag_run (const char *model, const char *mode)
{
  g_auto (GStrv) cw = g_strsplit (mode, "/", 2);
  g_autofree char *w = g_strdup_printf ("stragglers.model=%s policy.consistency=%s"
                                        " policy.wait_for=%s", model, cw[0], cw[1]);
  return run_with (w);
}

static double
strag_t (gboolean free_net, const char *model, const char *mode)
{
  const char *db = free_net ? lab_db ("stragglers", FREE_NET, NO_FAILURE, NULL)
                            : lab_db ("stragglers", NULL);
  g_autofree char *id = strag_run (model, mode);
  return q (db, "SELECT sim_time / iterations FROM runs WHERE id = %s", id);
}

static const double step_t = 10e-3; /* [device] step_time */

static void
lab2_expected_max (void)
{
  test_assert_close (strag_t (TRUE, "exponential", "bsp/0"),
                     step_t * (1 + 0.5 * test_harmonic (8)), 0.03);
  /* E[max of n Pareto(scale 1, alpha)] = n! Γ(1 - 1/α) / Γ(n + 1 - 1/α) */
  double a = 3, n = 8;
  double emax = exp (lgamma (n + 1) + lgamma (1 - 1 / a) - lgamma (n + 1 - 1 / a));
  test_assert_close (strag_t (TRUE, "pareto", "bsp/0"), step_t * emax, 0.05);
}

static void
lab2_bernoulli (void)
{
  double share = (strag_t (TRUE, "bernoulli", "bsp/0") / step_t - 1) / (1.5 - 1);
  g_assert_cmpfloat (fabs (share - (1 - pow (1 - 0.1667, 8))), <, 0.06);
}

static void
lab2_tail (void)
{
  double ln = strag_t (TRUE, "lognormal", "bsp/0"), ex = strag_t (TRUE, "exponential", "bsp/0");
  double pa = strag_t (TRUE, "pareto", "bsp/0");
  g_assert_cmpfloat (ln, <, ex);
  g_assert_cmpfloat (ex, <, pa);
  double a[] = { strag_t (TRUE, "lognormal", "async/0"), strag_t (TRUE, "exponential", "async/0"),
                 strag_t (TRUE, "pareto", "async/0") };
  for (int i = 0; i < 3; i++)
    test_assert_close (a[i], a[(i + 1) % 3], 0.01);
}

static void
lab2_k_of_n (void)
{
  test_assert_close (strag_t (TRUE, "exponential", "bsp/6"),
                     step_t * (1 + 0.5 * (test_harmonic (8) - test_harmonic (2))), 0.03);
  g_assert_cmpfloat (strag_t (TRUE, "pareto", "bsp/6"), <, 0.6 * strag_t (TRUE, "pareto", "bsp/0"));
  const char *db = lab_db ("stragglers", FREE_NET, NO_FAILURE, NULL);
  g_autofree char *id = strag_run ("pareto", "bsp/6");
  g_assert_cmpfloat (q (db, "SELECT updates FROM runs WHERE id = %s", id), ==,
                     q (db, "SELECT iterations * 6 FROM runs WHERE id = %s", id));
}

static void
lab2_failure (void)
{
  const char *with = lab_db ("stragglers", NULL), *without = lab_db ("stragglers", NO_FAILURE, NULL);
  const double restart = 0.2;
  double cost[4];
  const char *modes[] = { "bsp/0", "ssp/0", "async/0", "bsp/6" };
  for (int i = 0; i < 4; i++)
    {
      g_autofree char *id = strag_run ("none", modes[i]);
      cost[i] = q (with, "SELECT sim_time FROM runs WHERE id = %s", id)
                - q (without, "SELECT sim_time FROM runs WHERE id = %s", id);
    }
  test_assert_close (cost[0], restart, 0.25);
  g_assert_cmpfloat (fabs (cost[2]), <, restart / 4);
  g_assert_cmpfloat (fabs (cost[3]), <, restart / 4);
}

static void
lab2_ssp_failure (void)
{
  const char *with = lab_db ("stragglers", NULL), *without = lab_db ("stragglers", NO_FAILURE, NULL);
  g_autofree char *id = strag_run ("none", "ssp/0");
  g_assert_cmpfloat (q (with, "SELECT sim_time FROM runs WHERE id = %s", id)
                     - q (without, "SELECT sim_time FROM runs WHERE id = %s", id), >, 1.0);
  /* worker 0's iterations after the failure's end, against those of the
   * run without it */
  double f_end = q (with, "SELECT end FROM failures WHERE run_id = %s", id);
  double before = q (without, "SELECT AVG(end - start) FROM iterations WHERE run_id = %s"
                              " AND worker = 0", id);
  double after = q (with, "SELECT AVG(end - start) FROM iterations WHERE run_id = %s"
                          " AND worker = 0 AND start >= %.17g", id, f_end);
  g_assert_cmpfloat (after, >, 1.2 * before);
}

/* ---------------------------------------------------------------- lab 3 */

static const int stale_s[] = { 0, 1, 2, 4, 8, 16 };

static char *
stale_run (int s)
{
  g_autofree char *w = g_strdup_printf ("policy.staleness=%d", s);
  return run_with (w);
}

static double
stale_q (int s, const char *expr)
{
  const char *db = lab_db ("staleness-sweep", NULL);
  g_autofree char *id = stale_run (s);
  return q (db, "SELECT %s FROM runs WHERE id = %s", expr, id);
}

/* SSP(0) runs BSP's schedule but not its math: BSP's server takes one step
 * with the mean of a round's 16 gradients, SSP's one step per gradient. */
static void
lab3_ssp0 (void)
{
  const char *db = lab_db ("staleness-sweep", "sweep.policy.staleness=0",
                           "sweep.policy.consistency=bsp,ssp", NULL);
  g_autofree char *bsp = run_with ("policy.consistency=bsp");
  g_autofree char *ssp = run_with ("policy.consistency=ssp");
  g_assert_cmpfloat (q (db, "SELECT sim_time FROM runs WHERE id = %s", bsp), ==,
                     q (db, "SELECT sim_time FROM runs WHERE id = %s", ssp));
  g_assert_cmpfloat (q (db, "SELECT wait FROM runs WHERE id = %s", bsp), ==,
                     q (db, "SELECT wait FROM runs WHERE id = %s", ssp));
  g_assert_cmpfloat (fabs (q (db, "SELECT final_accuracy FROM runs WHERE id = %s", bsp)
                           - q (db, "SELECT final_accuracy FROM runs WHERE id = %s", ssp)),
                     >, 0.05);
}

static void
lab3_bound (void)
{
  const char *db = lab_db ("staleness-sweep", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (stale_s); i++)
    {
      g_autofree char *id = stale_run (stale_s[i]);
      g_assert_cmpfloat (q (db, "SELECT MAX(staleness) FROM iterations WHERE run_id = %s", id),
                         <=, stale_s[i]);
    }
}

static void
lab3_diminishing (void)
{
  const char *wait = "wait / (compute + comm + wait)";
  for (gsize i = 1; i < G_N_ELEMENTS (stale_s); i++)
    {
      g_assert_cmpfloat (stale_q (stale_s[i], "sim_time"), <, stale_q (stale_s[i - 1], "sim_time"));
      g_assert_cmpfloat (stale_q (stale_s[i], wait), <, stale_q (stale_s[i - 1], wait));
    }
  g_assert_cmpfloat (stale_q (0, wait), >, 0.30);
  g_assert_cmpfloat (stale_q (8, wait), <, 0.03);
  double save01 = stale_q (0, "sim_time") - stale_q (1, "sim_time");
  double save816 = stale_q (8, "sim_time") - stale_q (16, "sim_time");
  g_assert_cmpfloat (save01, >, 0.25 * stale_q (0, "sim_time"));
  g_assert_cmpfloat (save816, <, 0.5 * save01);
}

static void
lab3_slack_unused (void)
{
  const char *db = lab_db ("staleness-sweep", NULL);
  g_autofree char *id = stale_run (16);
  g_assert_cmpfloat (q (db, "SELECT AVG(staleness) FROM iterations WHERE run_id = %s", id), <,
                     16 / 2);
}

/* At lr = 0.02 the bound costs little: every s ends between 78% and 82%.
 * At lr = 0.05 every s ends lower, and s = 0 lowest of all (its 16
 * gradients of a round, computed at the same parameters, are 16 steps). */
static void
lab3_lr (void)
{
  const char *db = lab_db ("staleness-sweep", "model.lr=0.05", NULL);
  double lowest = 1;
  for (gsize i = 0; i < G_N_ELEMENTS (stale_s); i++)
    {
      double acc = stale_q (stale_s[i], "final_accuracy");
      g_assert_cmpfloat (acc, >, 0.78);
      g_assert_cmpfloat (acc, <, 0.82);
      g_autofree char *id = stale_run (stale_s[i]);
      double big = q (db, "SELECT final_accuracy FROM runs WHERE id = %s", id);
      g_assert_cmpfloat (big, <, acc);
      if (i > 0)
        g_assert_cmpfloat (big, >, lowest);
      else
        lowest = big;
    }
}

/* consistency.ini: at lr = 0.2 only BSP reaches 80%; at 0.02 SSP and async
 * do, async in less than half of BSP's time at 0.2, with staleness above 3. */
static void
lab3_async (void)
{
  const char *db = lab_db ("consistency", NULL);
  g_autofree char *bsp = run_with ("policy.consistency=bsp model.lr=0.2");
  g_autofree char *ssp_hi = run_with ("policy.consistency=ssp model.lr=0.2");
  g_autofree char *as_hi = run_with ("policy.consistency=async model.lr=0.2");
  g_autofree char *ssp = run_with ("policy.consistency=ssp model.lr=0.02");
  g_autofree char *as = run_with ("policy.consistency=async model.lr=0.02");
  const char *reached = "SELECT stop = 'target_accuracy' FROM runs WHERE id = %s";
  g_assert_cmpfloat (q (db, reached, bsp), ==, 1);
  g_assert_cmpfloat (q (db, reached, ssp_hi), ==, 0);
  g_assert_cmpfloat (q (db, reached, as_hi), ==, 0);
  g_assert_cmpfloat (q (db, reached, ssp), ==, 1);
  g_assert_cmpfloat (q (db, reached, as), ==, 1);
  g_assert_cmpfloat (q (db, "SELECT sim_time FROM runs WHERE id = %s", as), <,
                     0.5 * q (db, "SELECT sim_time FROM runs WHERE id = %s", bsp));
  g_assert_cmpfloat (q (db, "SELECT MAX(staleness) FROM iterations WHERE run_id = %s", as), >, 3);
}

/* The final loss of staleness-gpt.ini's run under `consistency` with
 * optimizer `opt`. */
static double
gpt_loss (const char *db, const char *consistency, const char *opt)
{
  g_autofree char *where = g_strdup_printf ("policy.consistency=%s model.optimizer=%s",
                                            consistency, opt);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT final_loss FROM runs WHERE id = %s", id);
}

/* staleness-gpt.ini: momentum ends below 1.1 under BSP and more than 0.3
 * higher stale, a wider gap than SGD's between BSP and either stale run. */
static void
lab3_momentum (void)
{
  const char *db = lab_db ("staleness-gpt", NULL);
  double m_bsp = gpt_loss (db, "bsp", "momentum");
  g_assert_cmpfloat (m_bsp, <, 1.1);
  double s_bsp = gpt_loss (db, "bsp", "sgd"), sgd_gap = 0;
  const char *stale[] = { "ssp", "async" };
  for (int i = 0; i < 2; i++)
    sgd_gap = MAX (sgd_gap, fabs (gpt_loss (db, stale[i], "sgd") - s_bsp));
  for (int i = 0; i < 2; i++)
    {
      double gap = gpt_loss (db, stale[i], "momentum") - m_bsp;
      g_assert_cmpfloat (gap, >, 0.3);
      g_assert_cmpfloat (gap, >, sgd_gap);
    }
}

/* staleness-gpt.ini: Adam reaches the target under all three; SSP and async
 * with more than 1.5 times BSP's gradients and more simulated time. */
static void
lab3_adam (void)
{
  const char *db = lab_db ("staleness-gpt", NULL);
  const char *cons[] = { "bsp", "ssp", "async" };
  double updates[3], t[3];
  for (int i = 0; i < 3; i++)
    {
      g_autofree char *where = g_strdup_printf ("policy.consistency=%s model.optimizer=adam",
                                                cons[i]);
      g_autofree char *id = run_with (where);
      g_assert_cmpfloat (q (db, "SELECT stop = 'target_loss' FROM runs WHERE id = %s", id), ==, 1);
      updates[i] = q (db, "SELECT updates FROM runs WHERE id = %s", id);
      t[i] = q (db, "SELECT sim_time FROM runs WHERE id = %s", id);
    }
  for (int i = 1; i < 3; i++)
    {
      g_assert_cmpfloat (updates[i], >, 1.5 * updates[0]);
      g_assert_cmpfloat (t[i], >, t[0]);
    }
}

/* ---------------------------------------------------------------- lab 4 */

static double
rvp (const char *method, int features, int workers)
{
  static const struct { const char *name, *params; } methods[] = {
    { "ps1", "policy.kind=ps cluster.servers=1" },
    { "ps-sharded", "policy.kind=ps cluster.servers=0" },
    { "ring", "policy.kind=allreduce policy.algorithm=ring" },
    { "tree", "policy.kind=allreduce policy.algorithm=tree" },
    { "hd", "policy.kind=allreduce policy.algorithm=halving-doubling" },
  };
  const char *db = lab_db ("ring-vs-ps", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (methods); i++)
    if (strcmp (methods[i].name, method) == 0)
      {
        g_autofree char *w = g_strdup_printf ("%s model.features=%d cluster.workers=%d",
                                              methods[i].params, features, workers);
        return t_iter (db, w);
      }
  g_assert_not_reached ();
}

enum { SMALL = 16, LARGE = 262144 };

static void
lab4_latency_bound (void)
{
  g_assert_cmpfloat (rvp ("ring", SMALL, 64), >, 30 * rvp ("ring", SMALL, 2));
  g_assert_cmpfloat (rvp ("tree", SMALL, 64), <, 7 * rvp ("tree", SMALL, 2));
  g_assert_cmpfloat (rvp ("hd", SMALL, 64), <, 7 * rvp ("hd", SMALL, 2));
}

static void
lab4_bandwidth_bound (void)
{
  g_assert_cmpfloat (rvp ("ring", LARGE, 64), <, 2.2 * rvp ("ring", LARGE, 2));
  g_assert_cmpfloat (rvp ("hd", LARGE, 64), <, 2.2 * rvp ("hd", LARGE, 2));
  /* the tree: log2(64) = 6 times the 2-worker time, to 10% */
  test_assert_close (rvp ("tree", LARGE, 64) / rvp ("tree", LARGE, 2), log2 (64), 0.1);
}

static void
lab4_one_server (void)
{
  test_assert_close (rvp ("ps1", LARGE, 64) / rvp ("ps1", LARGE, 2), 64.0 / 2.0, 0.1);
}

static void
lab4_sharded (void)
{
  for (int f = 0; f < 2; f++)
    {
      int features = f ? LARGE : SMALL;
      test_assert_close (rvp ("ps-sharded", features, 64), rvp ("ps-sharded", features, 2),
                         0.01);
    }
}

static void
lab4_winners (void)
{
  double ring = rvp ("ring", LARGE, 64), hd = rvp ("hd", LARGE, 64);
  double ps = rvp ("ps-sharded", LARGE, 64), tree = rvp ("tree", LARGE, 64);
  test_assert_close (ring, hd, 0.1);
  test_assert_close (ring, ps, 0.1);
  test_assert_close (hd, ps, 0.1);
  g_assert_cmpfloat (tree, >, 4 * MAX (ring, MAX (hd, ps)));
}

/* ------------------------------------------------ lab 4, the collectives */

#define COLL_SIZE 1e6         /* bytes per rank (size = 1MB) */
#define COLL_LINK (10e9 / 8)  /* bytes/s of a link */

/* Seconds per operation of (operation, algorithm) on `workers`. */
static double
coll_t (const char *op, const char *alg, int workers)
{
  g_autofree char *w = g_strdup_printf ("policy.operation=%s policy.algorithm=%s "
                                        "cluster.workers=%d", op, alg, workers);
  return t_iter (lab_db ("collectives", NULL), w);
}

/* Bus bandwidth (bytes/s) as docs/policies.md defines it. */
static double
coll_busbw (const char *op, const char *alg, int workers)
{
  double p = workers, factor = (p - 1) / p;

  if (strcmp (op, "all-reduce") == 0)
    factor = 2 * (p - 1) / p;
  else if (strcmp (op, "broadcast") == 0 || strcmp (op, "reduce") == 0)
    factor = 1;
  return COLL_SIZE / coll_t (op, alg, workers) * factor;
}

static void
lab4_coll_correct (void)
{
  const char *db = lab_db ("collectives", NULL);

  g_assert_cmpfloat (q (db, "SELECT COUNT(*) FROM runs"), ==, 45);
  g_assert_cmpfloat (q (db, "SELECT COUNT(*) FROM runs WHERE iterations = 3"), ==, 45);
  g_assert_cmpfloat (q (db, "SELECT COUNT(*) FROM iterations"), ==,
                     15 * 3 * (4 + 16 + 64));
}

static void
lab4_coll_driver (void)
{
  const char *ops[] = { "broadcast", "reduce", "all-reduce" };

  for (gsize i = 0; i < G_N_ELEMENTS (ops); i++)
    test_assert_close (coll_t (ops[i], "naive", 64) / coll_t (ops[i], "naive", 4),
                       63.0 / 3.0, 0.05);
}

static void
lab4_coll_blocks (void)
{
  const char *ops[] = { "scatter", "gather", "all-to-all" };
  const int ws[] = { 4, 16, 64 };

  for (gsize i = 0; i < G_N_ELEMENTS (ops); i++)
    for (gsize k = 0; k < G_N_ELEMENTS (ws); k++)
      test_assert_close (coll_busbw (ops[i], "naive", ws[k]), COLL_LINK, 0.02);
}

static void
lab4_coll_ring (void)
{
  g_assert_cmpfloat (coll_busbw ("all-reduce", "ring", 4), >, 0.9 * COLL_LINK);
  g_assert_cmpfloat (coll_busbw ("all-reduce", "ring", 64), >,
                     30 * coll_busbw ("all-reduce", "naive", 64));
}

static void
lab4_coll_tree (void)
{
  test_assert_close (coll_t ("broadcast", "tree", 64) / coll_t ("broadcast", "tree", 4),
                     log2 (64) / log2 (4), 0.01);
  test_assert_close (coll_t ("reduce", "tree", 64) / coll_t ("reduce", "tree", 4),
                     log2 (64) / log2 (4), 0.01);
}

/* ---------------------------------------------------------------- lab 5 */

enum { PIPE_P = 4 };
static const int pipe_m[] = { 1, 2, 4, 8, 16 };

static char *
pipe_run (const char *schedule, int m)
{
  g_autofree char *w = g_strdup_printf ("policy.schedule=%s policy.microbatches=%d", schedule, m);
  return run_with (w);
}

static double
pipe_q (const char *schedule, int m, const char *sql_fmt_of_id)
{
  const char *db = lab_db ("pipeline", NULL);
  g_autofree char *id = pipe_run (schedule, m);
  g_autofree char *sql = g_strdup_printf (sql_fmt_of_id, id, id);
  return q (db, "%s", sql);
}

static void
lab5_same_time (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (pipe_m); i++)
    g_assert_cmpfloat (pipe_q ("gpipe", pipe_m[i], "SELECT sim_time FROM runs WHERE id = %s"), ==,
                       pipe_q ("1f1b", pipe_m[i], "SELECT sim_time FROM runs WHERE id = %s"));
}

static void
lab5_shorter (void)
{
  const char *t = "SELECT sim_time / iterations FROM runs WHERE id = %s";
  for (gsize i = 1; i < G_N_ELEMENTS (pipe_m); i++)
    g_assert_cmpfloat (pipe_q ("1f1b", pipe_m[i], t), <, pipe_q ("1f1b", pipe_m[i - 1], t));
  g_assert_cmpfloat (pipe_q ("1f1b", 16, t), <, pipe_q ("1f1b", 1, t) / 3);
}

static void
lab5_bubble (void)
{
  const char *sch[] = { "gpipe", "1f1b" };
  for (int k = 0; k < 2; k++)
    for (gsize i = 0; i < G_N_ELEMENTS (pipe_m); i++)
      {
        int m = pipe_m[i];
        double formula = (PIPE_P - 1.0) / (m + PIPE_P - 1.0);
        double last = pipe_q (sch[k], m, "SELECT bubble FROM stages WHERE run_id = %s"
                                         " AND stage = (SELECT MAX(stage) FROM stages WHERE run_id = %s)");
        test_assert_close (last, formula, 0.03);
        double least = pipe_q (sch[k], m, "SELECT MIN(bubble) FROM stages WHERE run_id = %s");
        g_assert_cmpfloat (least, >=, last);
        g_assert_cmpfloat (least, >=, formula * (1 - 0.03));
      }
}

static void
lab5_stash (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (pipe_m); i++)
    for (int s = 0; s < PIPE_P; s++)
      {
        int m = pipe_m[i];
        g_autofree char *sql = g_strdup_printf ("SELECT peak_stash FROM stages WHERE run_id = %%s"
                                                " AND stage = %d", s);
        g_assert_cmpfloat (pipe_q ("gpipe", m, sql), ==, m);
        g_assert_cmpfloat (pipe_q ("1f1b", m, sql), ==, MIN (PIPE_P - s, m));
      }
}

static void
lab5_memory (void)
{
  const char *act = "SELECT activation_bytes FROM stages WHERE run_id = %s AND stage = 0";
  double g1 = pipe_q ("gpipe", 1, act);
  for (gsize i = 1; i < G_N_ELEMENTS (pipe_m); i++)
    test_assert_close (pipe_q ("gpipe", pipe_m[i], act), g1, 1e-9);
  test_assert_close (pipe_q ("1f1b", 16, act), pipe_q ("gpipe", 16, act) * PIPE_P / 16.0, 1e-9);
}

/* ---------------------------------------------------------------- lab 6 */

static const char *const graphs[] = { "gossip/ring", "gossip/torus", "gossip/exponential",
                                      "gossip/complete" };

static double
gossip_q (const char *run, const char *expr)
{
  const char *db = lab_db ("gossip", NULL);
  g_auto (GStrv) kg = g_strsplit (run, "/", 2);
  g_autofree char *where = g_strdup_printf ("policy.kind=%s policy.graph=%s", kg[0], kg[1]);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs WHERE id = %s", expr, id);
}

static double
consensus_mean (const char *graph)
{
  const char *db = lab_db ("gossip", NULL);
  g_autofree char *where = g_strdup_printf ("policy.kind=gossip policy.graph=%s", graph);
  g_autofree char *id = run_with (where);
  g_assert_cmpfloat (q (db, "SELECT MIN(consensus) FROM metrics WHERE run_id = %s AND step > 0",
                        id), >, 0);
  return q (db, "SELECT AVG(consensus) FROM metrics WHERE run_id = %s", id);
}

static void
lab6_faster (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (graphs); i++)
    {
      g_assert_cmpfloat (gossip_q (graphs[i], "stop = 'target_accuracy'"), ==, 1);
      g_assert_cmpfloat (gossip_q ("allreduce/ring", "updates"), <=,
                         gossip_q (graphs[i], "updates"));
    }
  g_assert_cmpfloat (gossip_q ("gossip/ring", "sim_time"), <,
                     0.75 * gossip_q ("allreduce/ring", "sim_time"));
}

static void
lab6_barrier (void)
{
  const char *wait = "wait / (compute + comm + wait)";
  g_assert_cmpfloat (gossip_q ("allreduce/ring", wait), >, 0.5);
  g_assert_cmpfloat (gossip_q ("gossip/ring", wait), <, 0.35);
}

static void
lab6_consensus (void)
{
  double complete = consensus_mean ("complete");
  g_assert_cmpfloat (complete, <, consensus_mean ("ring"));
  g_assert_cmpfloat (complete, <, consensus_mean ("torus"));
  consensus_mean ("exponential");
}

static double
fed_q (const char *partition, const char *epochs, const char *expr)
{
  const char *db = lab_db ("federated", NULL);
  g_autofree char *where = g_strdup_printf ("model.partition=%s policy.local_epochs=%s",
                                            partition, epochs);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs WHERE id = %s", expr, id);
}

static void
lab6_local_work (void)
{
  g_assert_cmpfloat (fed_q ("iid", "1", "stop = 'target_accuracy'"), ==, 1);
  g_assert_cmpfloat (fed_q ("iid", "1", "iterations"), <=,
                     0.1 * fed_q ("iid", "0.05", "iterations"));
}

static void
lab6_non_iid (void)
{
  g_assert_cmpfloat (fed_q ("by-label", "1", "stop = 'target_accuracy'"), ==, 1);
  g_assert_cmpfloat (fed_q ("by-label", "1", "iterations"), >=,
                     3 * fed_q ("iid", "1", "iterations"));
  g_assert_cmpfloat (fed_q ("by-label", "5", "iterations"), >=,
                     fed_q ("by-label", "1", "iterations"));
  g_assert_cmpfloat (fed_q ("by-label", "0.05", "stop = 'target_accuracy'"), ==, 0);
  g_assert_cmpfloat (fed_q ("by-label", "0.05", "iterations"), ==, 50);
}

/* ------------------------------------------------- studies of the README */

/* backup-workers.ini: every run reaches 80%; one backup worker (K = 15)
 * gets there in less than half of BSP's time, each further one faster
 * still; async at its own rate is fastest. */
static void
study_backup_workers (void)
{
  const char *db = lab_db ("backup-workers", NULL);
  const int K[] = { 16, 15, 14, 12, 8 };
  double prev = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS (K); i++)
    {
      g_autofree char *w = g_strdup_printf ("policy.consistency=bsp policy.wait_for=%d", K[i]);
      g_autofree char *id = run_with (w);
      g_assert_cmpfloat (q (db, "SELECT stop = 'target_accuracy' FROM runs WHERE id = %s", id),
                         ==, 1);
      double t = q (db, "SELECT sim_time FROM runs WHERE id = %s", id);
      g_assert_cmpfloat (t, <, i == 1 ? 0.5 * prev : prev);
      prev = t;
    }
  g_autofree char *as = run_with ("policy.consistency=async");
  g_assert_cmpfloat (q (db, "SELECT sim_time FROM runs WHERE id = %s", as), <, prev);
}

/* hogwild.ini: at 64 cores the lock makes cores wait over half the time,
 * yet ends more accurate than the lock-free run, whose reads tear and whose
 * steps are staler. */
static void
study_hogwild (void)
{
  const char *db = lab_db ("hogwild", NULL);
  g_autofree char *n64 = run_with ("cluster.workers=64 policy.lock=none");
  g_autofree char *l64 = run_with ("cluster.workers=64 policy.lock=lock");
  const char *torn = "SELECT CAST(value AS INTEGER) FROM params WHERE run_id = %s AND"
                     " key = 'policy.torn_reads'";
  const char *stale = "SELECT AVG(staleness) FROM iterations WHERE run_id = %s";
  g_assert_cmpfloat (q (db, "SELECT wait / (compute + comm + wait) FROM runs WHERE id = %s", l64),
                     >, 0.5);
  g_assert_cmpfloat (q (db, "SELECT wait FROM runs WHERE id = %s", n64), ==, 0);
  g_assert_cmpfloat (q (db, "SELECT final_accuracy FROM runs WHERE id = %s", l64), >,
                     q (db, "SELECT final_accuracy FROM runs WHERE id = %s", n64));
  g_assert_cmpfloat (q (db, torn, n64), >, 0);
  g_assert_cmpfloat (q (db, torn, l64), ==, 0);
  g_assert_cmpfloat (q (db, stale, n64), >, q (db, stale, l64));
}

/* ---------------------------------------------------------------- lab 7 */

static const int tp_sizes[] = { 1, 2, 4, 8 };

/* The tensor.ini run with tensor T and sequence parallelism sp. */
static double
tensor_q (int T, gboolean sp, const char *expr)
{
  const char *db = lab_db ("tensor", NULL);
  g_autofree char *where = g_strdup_printf ("policy.tensor=%d policy.sequence_parallel=%s", T,
                                            sp ? "true" : "false");
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs WHERE id = %s", expr, id);
}

static void
lab7_cut_costs (void)
{
  for (gsize i = 1; i < G_N_ELEMENTS (tp_sizes); i++)
    {
      int a = tp_sizes[i - 1], b = tp_sizes[i];
      g_assert_cmpfloat (tensor_q (b, FALSE, "comm / (compute + comm + wait)"), >,
                         tensor_q (a, FALSE, "comm / (compute + comm + wait)"));
      g_assert_cmpfloat (tensor_q (b, FALSE, "sim_time / iterations"), >,
                         tensor_q (a, FALSE, "sim_time / iterations"));
    }
}

static void
lab7_sequence (void)
{
  for (gsize i = 1; i < G_N_ELEMENTS (tp_sizes); i++)
    {
      int T = tp_sizes[i];
      double plain = tensor_q (T, FALSE, "sim_time / iterations");
      double sp = tensor_q (T, TRUE, "sim_time / iterations");
      g_assert_cmpfloat (sp, <=, plain);
      if (T == 8)
        g_assert_cmpfloat (sp, <, plain);
    }
}

/* The zero.ini run of stage z (prefetch as the file has it). */
static double
zero_q (int z, const char *expr)
{
  const char *db = lab_db ("zero", NULL);
  g_autofree char *where = g_strdup_printf ("policy.zero=%d", z);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs WHERE id = %s", expr, id);
}

static void
lab7_stage0 (void)
{
  g_assert_cmpfloat (zero_q (0, "status = 'infeasible' AND error LIKE '%higher [policy] zero%'"),
                     ==, 1);
  for (int z = 1; z <= 3; z++)
    g_assert_cmpfloat (zero_q (z, "status = 'done'"), ==, 1);
}

static void
lab7_same_bytes (void)
{
  g_assert_cmpfloat (zero_q (1, "sim_time"), ==, zero_q (2, "sim_time"));
}

static void
lab7_gathering (void)
{
  double one = zero_q (1, "sim_time / iterations");
  double three = zero_q (3, "sim_time / iterations");
  g_assert_cmpfloat (three, >, one);
  const char *db = lab_db ("zero", "policy.zero=3", "policy.prefetch=false", NULL);
  g_assert_cmpfloat (q (db, "SELECT sim_time / iterations FROM runs"), >, three);
}

/* ---------------------------------------------------------------- lab 8 */

/* x is the figure the lab prints as `shown`, rounded to `unit`. */
static void
assert_rounds_to (double x, double shown, double unit)
{
  if (fabs (x - shown) > unit / 2 * (1 + 1e-9))
    g_error ("%.17g does not round to %g (to %g)", x, shown, unit);
}

/* The `dtsim check` output of scenarios/NAME.ini, with one --set unless
 * `set` is NULL. */
static char *
lab_check (const char *name, const char *set)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *file = g_strdup_printf ("%s.ini", name);
  g_autofree char *ini = g_build_filename (src, "scenarios", file, NULL);
  char *out = NULL;
  g_autofree char *err = NULL;
  const char *args[] = { "check", ini, set ? "--set" : NULL, set, NULL };
  int status = test_run_dtsim_argv (tmpdir, &out, &err, args);
  if (status != 0)
    g_error ("dtsim check %s --set %s failed (%d): %s", ini, set ? set : "-", status, err);
  return out;
}

/* ps-strawmen.ini: 8 workers, an MLP 784-256-10 (weights and biases). */
static const int straw_W = 8;
static const double straw_grad = 4.0 * (784 * 256 + 256 + 256 * 10 + 10); /* bytes */

/* `expr` over the runs row `r` of one design of ps-strawmen.ini, written
 * as its joint sweep key has it: "kind/servers/filter/threshold". */
static double
straw_q (const char *design, const char *expr)
{
  const char *db = lab_db ("ps-strawmen", NULL);
  g_auto (GStrv) f = g_strsplit (design, "/", 4);
  g_autofree char *where = g_strdup_printf ("policy.kind=%s cluster.servers=%s policy.filter=%s"
                                            " policy.threshold=%s", f[0], f[1], f[2], f[3]);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

#define STRAW_BROADCAST "exchange/1/none/0.01"
#define STRAW_COORD "ps/1/none/0.01"
#define STRAW_SHARDED "ps/4/none/0.01"
#define STRAW_FILTERED "ps/4/threshold/0.1"
#define BYTES_PER_ITER "(SELECT SUM(bytes) FROM messages m WHERE m.run_id = r.id) / r.iterations"
#define SHARE(x) x " / (compute + comm + wait)"

static void
lab8_strawmen (void)
{
  const double W = straw_W;
  g_assert_cmpfloat (straw_q (STRAW_BROADCAST, BYTES_PER_ITER), ==, W * (W - 1) * straw_grad);
  g_assert_cmpfloat (straw_q (STRAW_COORD, BYTES_PER_ITER), ==, 2 * W * straw_grad);
  g_assert_cmpfloat (straw_q (STRAW_SHARDED, BYTES_PER_ITER), ==, 2 * W * straw_grad);
  assert_rounds_to (straw_q (STRAW_BROADCAST, BYTES_PER_ITER) / 1e6, 45.6, 0.1);
  assert_rounds_to (straw_q (STRAW_COORD, BYTES_PER_ITER) / 1e6, 13.0, 0.1);
  assert_rounds_to (straw_q (STRAW_FILTERED, BYTES_PER_ITER) / 1e6, 7.7, 0.1);

  /* ms per iteration: the coordinator slowest, then broadcast, sharded, filtered */
  const char *t = "1e3 * sim_time / iterations";
  assert_rounds_to (straw_q (STRAW_COORD, t), 118, 1);
  assert_rounds_to (straw_q (STRAW_BROADCAST, t), 78, 1);
  assert_rounds_to (straw_q (STRAW_SHARDED, t), 52, 1);
  assert_rounds_to (straw_q (STRAW_FILTERED, t), 46, 1);
  g_assert_cmpfloat (straw_q (STRAW_FILTERED, t), <, straw_q (STRAW_SHARDED, t));
  g_assert_cmpfloat (straw_q (STRAW_SHARDED, t), <, straw_q (STRAW_BROADCAST, t));
  g_assert_cmpfloat (straw_q (STRAW_BROADCAST, t), <, straw_q (STRAW_COORD, t));

  /* percent of worker time */
  assert_rounds_to (100 * straw_q (STRAW_COORD, SHARE ("comm")), 78, 1);
  assert_rounds_to (100 * straw_q (STRAW_COORD, SHARE ("compute")), 17, 1);
  assert_rounds_to (100 * straw_q (STRAW_BROADCAST, SHARE ("compute")), 26, 1);
  assert_rounds_to (100 * straw_q (STRAW_SHARDED, SHARE ("compute")), 39, 1);
  assert_rounds_to (100 * straw_q (STRAW_BROADCAST, SHARE ("wait")), 15, 1);
  assert_rounds_to (100 * straw_q (STRAW_SHARDED, SHARE ("wait")), 21, 1);
  assert_rounds_to (100 * straw_q (STRAW_COORD, SHARE ("wait")), 5, 1);
}

/* ps-placement.ini: 16 workers, 16 servers, softmax 100,000 x 10 (plus
 * the biases), 20 ms steps, SGD updates at 20 GFLOPS x 0.1, 10 Gbit/s
 * links of 50 us. */
enum { PLACE_W = 16, PLACE_S = 16 };
static const double place_P = 100000.0 * 10 + 10;
static const int place_v[] = { 1, 4, 16, 64 };

/* The x solving f(x) = c for f increasing on [0, hi) with f(0) = 0. */
static double
bisect (double (*f) (double), double c, double hi)
{
  double lo = 0;
  for (int i = 0; i < 200; i++)
    {
      double mid = 0.5 * (lo + hi);
      *(f (mid) < c ? &lo : &hi) = mid;
    }
  return hi;
}

static double chernoff_up (double e) { return e - log1p (e); }
static double chernoff_down (double h) { return -h - log1p (-h); }

/* The lab's bound on the imbalance of S servers of v points each, except
 * with probability 2 delta: (1 + e) / (1 - h) + S v / P, and never over S. */
static double
imbalance_bound (int S, int v, double P, double delta)
{
  double e = bisect (chernoff_up, log (S / delta) / v, 64);
  double h = bisect (chernoff_down, log (1 / delta) / ((double) S * v), 1);
  return MIN ((double) S, (1 + e) / (1 - h) + (double) S * v / P);
}

static double
place_q (const char *point, const char *expr)
{
  const char *db = lab_db ("ps-placement", NULL);
  g_auto (GStrv) f = g_strsplit (point, "/", 2);
  g_autofree char *where = g_strdup_printf ("policy.partition=%s policy.virtual_nodes=%s",
                                            f[0], f[1]);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

#define IMBALANCE "(SELECT CAST(value AS REAL) FROM params p WHERE p.run_id = r.id" \
                  " AND p.key = 'policy.imbalance')"

/* The BSP closed form with shards of I P / S keys at most: the round's W
 * updates of the busiest shard, its reply, the step, the push. */
static double
place_formula (double I)
{
  const double T = 20e-3, l = 50e-6, B = 10e9 / 8, F = 20e9 * 0.1;
  return T + 4 * l + I * ((double) PLACE_W / PLACE_S) * (8 * place_P / B + 2 * place_P / F);
}

static void
lab8_placement (void)
{
  static const double shown_I[] = { 4.19, 1.87, 1.43, 1.24 };
  static const double shown_ms[] = { 51.2, 34.0, 30.8, 29.4 };
  double prev_I = INFINITY, prev_t = INFINITY, prev_excess = NAN;
  for (gsize i = 0; i < G_N_ELEMENTS (place_v); i++)
    {
      g_autofree char *point = g_strdup_printf ("hash/%d", place_v[i]);
      double I = place_q (point, IMBALANCE);
      double t = place_q (point, "sim_time / iterations");
      assert_rounds_to (I, shown_I[i], 0.01);
      assert_rounds_to (1e3 * t, shown_ms[i], 0.1);
      g_assert_cmpfloat (I, <=, imbalance_bound (PLACE_S, place_v[i], place_P, 1e-4));
      g_assert_cmpfloat (I, <, prev_I);
      g_assert_cmpfloat (t, <, prev_t);
      test_assert_close (t, place_formula (I), 1e-3);
      if (i >= 2) /* from v = 4 on, 4 x v about halves I - 1 */
        {
          g_assert_cmpfloat (prev_excess / (I - 1), >, 1.5);
          g_assert_cmpfloat (prev_excess / (I - 1), <, 2.5);
        }
      prev_I = I;
      prev_t = t;
      prev_excess = I - 1;
    }
  /* contiguous ranges: ceil(P / S) keys at most, the fastest */
  double range_I = ceil (place_P / PLACE_S) / (place_P / PLACE_S);
  double range_t = place_q ("range/16", "sim_time / iterations");
  assert_rounds_to (1e3 * range_t, 27.6, 0.1);
  test_assert_close (range_t, place_formula (range_I), 1e-3);
  g_assert_cmpfloat (range_t, <, prev_t);

  /* the placement dtsim check prints */
  g_autofree char *range = lab_check ("ps-placement", NULL);
  g_assert_nonnull (strstr (range, "keys per server: min 62500, mean 62500.6, max 62501;"));
  g_autofree char *v1 = lab_check ("ps-placement",
                                   "sweep.policy.partition/policy.virtual_nodes=hash/1");
  g_assert_nonnull (strstr (v1, "keys per server: min 5107, mean 62500.6, max 261626;"));
}

/* ps-replication.ini: 8 workers, 4 servers of one range each, the model
 * and network of ps-placement.ini. */
enum { REPL_W = 8, REPL_R = 4 };
static const double repl_P = 100000.0 * 10 + 10;

static double
repl_q (const char *db, int k, const char *expr)
{
  g_autofree char *where = g_strdup_printf ("policy.replication=%d", k);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

/* One worker, no contention: the lab's closed form of an iteration (after
 * the first) for shards of n keys. */
static double
repl_formula (int k, double n)
{
  const double T = 20e-3, l = 50e-6, B = 10e9 / 8, F = 20e9 * 0.1, ack = 16;
  double x = 2 * l + 4 * n / B, U = 2 * n / F;
  if (k == 1)
    return x + T + x + U;
  return 2 * l + x + T + k * x + k * U + (2 * l + ack / B);
}

static void
lab8_replication (void)
{
  const char *db = lab_db ("ps-replication", NULL);
  const char *push = "(SELECT SUM(bytes) FROM messages m WHERE m.run_id = r.id"
                     " AND m.tag IN ('grad', 'replica', 'ack')) / r.iterations";
  static const double shown_ms[] = { 35.0, 40.7, 47.1 };
  for (int k = 1; k <= 3; k++)
    {
      double bytes = repl_q (db, k, push) / REPL_W;
      g_assert_cmpfloat (bytes, ==, k * 4 * repl_P + (k > 1 ? 16 * REPL_R : 0));
      assert_rounds_to (1e3 * repl_q (db, k, "sim_time / iterations"), shown_ms[k - 1], 0.1);
    }
  double t1 = repl_q (db, 1, "sim_time / iterations");
  assert_rounds_to (100 * (repl_q (db, 2, "sim_time / iterations") / t1 - 1), 16, 1);
  assert_rounds_to (100 * (repl_q (db, 3, "sim_time / iterations") / t1 - 1), 34, 1);

  /* one worker: the largest shard sets every iteration after the first */
  const char *one = lab_db ("ps-replication", "cluster.workers=1", "network.contention=none",
                            NULL);
  static const double shown_one[] = { 22.05, 23.40, 24.55 };
  double n = ceil (repl_P / REPL_R);
  for (int k = 1; k <= 3; k++)
    {
      double lo = repl_q (one, k, "(SELECT MIN(end - start) FROM iterations i"
                                  " WHERE i.run_id = r.id AND iteration > 0)");
      double hi = repl_q (one, k, "(SELECT MAX(end - start) FROM iterations i"
                                  " WHERE i.run_id = r.id AND iteration > 0)");
      test_assert_close (lo, repl_formula (k, n), 1e-6);
      test_assert_close (hi, repl_formula (k, n), 1e-6);
      assert_rounds_to (1e3 * lo, shown_one[k - 1], 0.01);
    }

  g_autofree char *chk = lab_check ("ps-replication", "policy.replication=3");
  g_assert_nonnull (strstr (chk, "range [0, 250003): chain server0 -> server1 -> server2\n"));
  g_autofree char *bytes = g_strdup_printf ("bytes per push of a worker: %.0f ",
                                            3 * 4 * repl_P + 16 * REPL_R);
  g_assert_nonnull (strstr (chk, bytes));
}

/* ps-filters.ini: `expr` over the run of that filter and threshold. */
static double
filt_q (const char *filter, const char *threshold, const char *expr)
{
  const char *db = lab_db ("ps-filters", NULL);
  g_autofree char *where = g_strdup_printf ("policy.filter=%s policy.threshold=%s", filter,
                                            threshold);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

#define FILTER_ROW(k) "(SELECT CAST(value AS REAL) FROM params p WHERE p.run_id = r.id" \
                      " AND p.key = 'policy.filter_" k "')"

static void
lab8_filters (void)
{
  double none = filt_q ("none", "0.01", "final_accuracy");
  assert_rounds_to (100 * none, 69.9, 0.1);
  /* the same updates, summed by the server in the order the pushes arrive */
  g_assert_cmpfloat (fabs (filt_q ("zero", "0.01", "final_accuracy") - none), <=, 0.001);
  assert_rounds_to (100 * filt_q ("zero", "0.01", FILTER_ROW ("kept")), 69, 1);
  g_assert_cmpfloat (filt_q ("zero", "0.01", FILTER_ROW ("saved")), <, 0.01);

  static const char *const ts[] = { "0.01", "0.1", "1" };
  static const double shown_saved[] = { 27, 79, 97 };
  double prev = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (ts); i++)
    {
      double saved = filt_q ("threshold", ts[i], FILTER_ROW ("saved"));
      double acc = filt_q ("threshold", ts[i], "final_accuracy");
      assert_rounds_to (100 * saved, shown_saved[i], 1);
      g_assert_cmpfloat (saved, >, prev);
      g_assert_cmpfloat (acc, >=, none);
      g_assert_cmpfloat (acc, >=, 0.695);
      g_assert_cmpfloat (acc, <, 0.775);
      prev = saved;
    }
  g_assert_cmpfloat (filt_q ("threshold", "10", FILTER_ROW ("saved")), >, 0.999);
  g_assert_cmpfloat (filt_q ("threshold", "100", FILTER_ROW ("saved")), >, 0.999);
  assert_rounds_to (filt_q ("threshold", "1", "sim_time"), 0.64, 0.01);
  assert_rounds_to (filt_q ("none", "0.01", "sim_time"), 1.11, 0.01);
  assert_rounds_to (100 * filt_q ("threshold", "10", "final_accuracy"), 68, 1);
  assert_rounds_to (100 * filt_q ("threshold", "100", "final_accuracy"), 53, 1);
  g_assert_cmpfloat (filt_q ("threshold", "100", "final_accuracy"), <,
                     filt_q ("threshold", "10", "final_accuracy"));
  g_assert_cmpfloat (filt_q ("threshold", "10", "final_accuracy"), <, none);
}

/* sparse-ps.ini: a million features and the bias; batches of 64 samples
 * of 32 features. */
static const double sparse_P = 1000000 + 1;
enum { SPARSE_BATCH = 64, SPARSE_NNZ = 32 };

static double
sparse_q (const char *pull, const char *expr)
{
  const char *db = lab_db ("sparse-ps", NULL);
  g_autofree char *where = g_strdup_printf ("policy.pull=%s", pull);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

#define SPARSE_ROW(k) "(SELECT CAST(value AS REAL) FROM params p WHERE p.run_id = r.id" \
                      " AND p.key = 'policy." k "')"

static void
lab8_sparse (void)
{
  double pull = sparse_q ("sparse", SPARSE_ROW ("pull_bytes"));
  double dense = sparse_q ("sparse", SPARSE_ROW ("dense_bytes"));
  g_assert_cmpfloat (dense, ==, 4 * sparse_P);
  assert_rounds_to (pull / 1e3, 7.85, 0.01);
  assert_rounds_to (sparse_q ("sparse", SPARSE_ROW ("push_bytes")) / 1e3, 7.79, 0.01);
  g_assert_cmpfloat (pull, <=, 8.0 * (SPARSE_BATCH * SPARSE_NNZ + 1));
  assert_rounds_to (pull / 8, 980, 10);
  g_assert_cmpfloat (dense / pull, >, 450);
  g_assert_cmpfloat (dense / pull, <, 550);
  assert_rounds_to (1e3 * sparse_q ("sparse", "sim_time / iterations"), 4.7, 0.1);
  assert_rounds_to (1e3 * sparse_q ("dense", "sim_time / iterations"), 260, 1);
  /* the README's "56 times faster per iteration" */
  assert_rounds_to (sparse_q ("dense", "sim_time / iterations")
                    / sparse_q ("sparse", "sim_time / iterations"), 56, 1);

  /* the same model: final figures, and the loss at every evaluation
   * between two rounds (after a multiple of 16 gradients; within a round
   * the 4 shards take their steps at instants the message sizes move) */
  for (int s = 0; s < 2; s++)
    {
      const char *pull_kind = s ? "sparse" : "dense";
      assert_rounds_to (sparse_q (pull_kind, "final_loss"), 0.6238, 0.0001);
      assert_rounds_to (100 * sparse_q (pull_kind, "final_accuracy"), 65.53, 0.01);
    }
  g_autofree char *d = run_with ("policy.pull=dense");
  g_autofree char *sp = run_with ("policy.pull=sparse");
  const char *db = lab_db ("sparse-ps", NULL);
  g_assert_cmpfloat (q (db, "SELECT COUNT(*) FROM metrics WHERE run_id = %s", d), >, 10);
  g_autofree char *pairs = g_strdup_printf ("FROM metrics a JOIN metrics b ON a.step = b.step"
                                            " WHERE a.step %% 16 = 0 AND a.run_id = %s"
                                            " AND b.run_id = %s", d, sp);
  g_assert_cmpfloat (q (db, "SELECT COUNT(*) %s", pairs), >, 20);
  g_assert_cmpfloat (q (db, "SELECT MAX(ABS(a.loss - b.loss) / a.loss) %s", pairs), <, 1e-8);
}

/* Part 2: scenarios/ps-crash.ini's four runs. */
static double
crash_q (const char *where, const char *expr)
{
  const char *db = lab_db ("ps-crash", NULL);
  g_autofree char *id = run_with (where);
  return q (db, "SELECT %s FROM runs r WHERE r.id = %s", expr, id);
}

static void
lab8_crash (void)
{
  const char *none = "failures.server_at=";
  const char *reinit = "failures.server_at=0.6s policy.replication=1 failures.recover=reinit";
  const char *ckpt = "failures.recover=checkpoint";
  const char *copy = "policy.replication=2";
  assert_rounds_to (crash_q (none, "sim_time"), 0.831, 0.001);
  assert_rounds_to (crash_q (reinit, "sim_time"), 1.329, 0.001);
  assert_rounds_to (crash_q (ckpt, "sim_time"), 1.329, 0.001);
  assert_rounds_to (crash_q (copy, "sim_time"), 1.054, 0.001);
  /* without a copy the crash costs about the restart, 0.5 s */
  assert_rounds_to (crash_q (reinit, "sim_time") - crash_q (none, "sim_time"), 0.5, 0.01);
  /* the failures table: down from 0.6 s to 1.1 s; with a copy, detected at 0.7 s */
  const char *db = lab_db ("ps-crash", NULL);
  g_autofree char *r = run_with (reinit);
  g_autofree char *c = run_with (copy);
  assert_rounds_to (q (db, "SELECT start FROM failures WHERE run_id = %s AND role = 'server'", r),
                    0.6, 1e-9);
  assert_rounds_to (q (db, "SELECT end FROM failures WHERE run_id = %s AND role = 'server'", r),
                    1.1, 1e-9);
  assert_rounds_to (q (db, "SELECT detected FROM failures WHERE run_id = %s", c), 0.7, 1e-9);
  /* the takeover's model is the reference's, to the bit */
  g_assert_cmpfloat (crash_q (copy, "final_loss"), ==, crash_q (none, "final_loss"));
  g_assert_cmpfloat (crash_q (copy, "final_accuracy"), ==, crash_q (none, "final_accuracy"));
  assert_rounds_to (crash_q (none, "final_loss"), 0.4592, 0.0001);
  assert_rounds_to (100 * crash_q (none, "final_accuracy"), 80.26, 0.01);
  /* reinit pays for the lost keys; the checkpoint ends within 0.004 */
  assert_rounds_to (crash_q (reinit, "final_loss"), 0.4786, 0.0001);
  assert_rounds_to (100 * crash_q (reinit, "final_accuracy"), 79.86, 0.01);
  assert_rounds_to (crash_q (ckpt, "final_loss"), 0.4561, 0.0001);
  assert_rounds_to (100 * crash_q (ckpt, "final_accuracy"), 80.34, 0.01);
  g_assert_cmpfloat (fabs (crash_q (ckpt, "final_loss") - crash_q (none, "final_loss")), <,
                     0.004);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-labs-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/labs/amdahl/1-free-no-serial", lab1_free_no_serial);
  g_test_add_func ("/labs/amdahl/2-exact-amdahl", lab1_exact_amdahl);
  g_test_add_func ("/labs/amdahl/3-communication", lab1_communication);
  g_test_add_func ("/labs/amdahl/4-both", lab1_both);
  g_test_add_func ("/labs/amdahl/5-fit", lab1_fit);
  g_test_add_func ("/labs/stragglers/1-expected-max", lab2_expected_max);
  g_test_add_func ("/labs/stragglers/2-bernoulli", lab2_bernoulli);
  g_test_add_func ("/labs/stragglers/3-tail", lab2_tail);
  g_test_add_func ("/labs/stragglers/4-k-of-n", lab2_k_of_n);
  g_test_add_func ("/labs/stragglers/5-failure", lab2_failure);
  g_test_add_func ("/labs/stragglers/6-ssp-failure", lab2_ssp_failure);
  g_test_add_func ("/labs/staleness/1-ssp0-is-bsp", lab3_ssp0);
  g_test_add_func ("/labs/staleness/2-bound", lab3_bound);
  g_test_add_func ("/labs/staleness/3-diminishing", lab3_diminishing);
  g_test_add_func ("/labs/staleness/4-slack-unused", lab3_slack_unused);
  g_test_add_func ("/labs/staleness/5-lr", lab3_lr);
  g_test_add_func ("/labs/staleness/6-async", lab3_async);
  g_test_add_func ("/labs/staleness/7-momentum", lab3_momentum);
  g_test_add_func ("/labs/staleness/8-adam", lab3_adam);
  g_test_add_func ("/labs/allreduce/1-latency-bound", lab4_latency_bound);
  g_test_add_func ("/labs/allreduce/2-bandwidth-bound", lab4_bandwidth_bound);
  g_test_add_func ("/labs/allreduce/3-one-server", lab4_one_server);
  g_test_add_func ("/labs/allreduce/4-sharded", lab4_sharded);
  g_test_add_func ("/labs/allreduce/5-winners", lab4_winners);
  g_test_add_func ("/labs/collectives/6-correct", lab4_coll_correct);
  g_test_add_func ("/labs/collectives/7-driver", lab4_coll_driver);
  g_test_add_func ("/labs/collectives/8-blocks", lab4_coll_blocks);
  g_test_add_func ("/labs/collectives/9-ring", lab4_coll_ring);
  g_test_add_func ("/labs/collectives/10-tree", lab4_coll_tree);
  g_test_add_func ("/labs/pipeline/1-same-time", lab5_same_time);
  g_test_add_func ("/labs/pipeline/2-shorter", lab5_shorter);
  g_test_add_func ("/labs/pipeline/3-bubble", lab5_bubble);
  g_test_add_func ("/labs/pipeline/4-stash", lab5_stash);
  g_test_add_func ("/labs/pipeline/5-memory", lab5_memory);
  g_test_add_func ("/labs/decentralized/1-faster", lab6_faster);
  g_test_add_func ("/labs/decentralized/2-barrier", lab6_barrier);
  g_test_add_func ("/labs/decentralized/3-consensus", lab6_consensus);
  g_test_add_func ("/labs/decentralized/4-local-work", lab6_local_work);
  g_test_add_func ("/labs/decentralized/5-non-iid", lab6_non_iid);
  g_test_add_func ("/labs/model-parallel/1-cut-costs", lab7_cut_costs);
  g_test_add_func ("/labs/model-parallel/2-sequence", lab7_sequence);
  g_test_add_func ("/labs/model-parallel/3-stage0", lab7_stage0);
  g_test_add_func ("/labs/model-parallel/4-same-bytes", lab7_same_bytes);
  g_test_add_func ("/labs/model-parallel/5-gathering", lab7_gathering);
  g_test_add_func ("/labs/parameter-server/1-strawmen", lab8_strawmen);
  g_test_add_func ("/labs/parameter-server/2-placement", lab8_placement);
  g_test_add_func ("/labs/parameter-server/3-replication", lab8_replication);
  g_test_add_func ("/labs/parameter-server/4-filters", lab8_filters);
  g_test_add_func ("/labs/parameter-server/5-sparse", lab8_sparse);
  g_test_add_func ("/labs/parameter-server/6-crash", lab8_crash);
  g_test_add_func ("/studies/backup-workers", study_backup_workers);
  g_test_add_func ("/studies/hogwild", study_hogwild);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  return rc;
}
