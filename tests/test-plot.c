/*
 * test-plot.c — `dtsim plot`: the Amdahl least-squares fit, the time to reach
 * a target loss on a hand-made database, and the figures drawn from a small
 * sweep over workers (files present, non-empty, valid PNG or SVG), the serial
 * fraction line (also for a strong-scaling sweep with [model] global_batch),
 * and the message when gnuplot is missing.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "sim/plot.h"
#include "tests/util.h"

static char *tmpdir;

#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

static double
amdahl (double f, double n)
{
  return 1.0 / (f + (1.0 - f) / n);
}

static double
sse (const double *n, const double *s, int k, double f)
{
  double e = 0;
  for (int i = 0; i < k; i++)
    e += (s[i] - amdahl (f, n[i])) * (s[i] - amdahl (f, n[i]));
  return e;
}

/* Points that follow the law give back its f. */
static void
test_amdahl_exact (void)
{
  const double fs[] = { 0.0, 0.01, 0.05, 0.3, 0.9, 1.0 };
  double n[7], s[7];
  for (gsize j = 0; j < G_N_ELEMENTS (fs); j++)
    {
      for (int i = 0; i < 7; i++)
        {
          n[i] = (double) (1 << i);  /* 1 .. 64 workers */
          s[i] = amdahl (fs[j], n[i]);
        }
      double f = -1, e = -1;
      sim_amdahl_fit (n, s, 7, &f, &e);
      g_assert_cmpfloat_with_epsilon (f, fs[j], 1e-12);
      g_assert_cmpfloat_with_epsilon (e, 0.0, 1e-20);
    }
}

/* Noisy speedups: f is near the law's and minimises the squared error. */
static void
test_amdahl_noisy (void)
{
  const double f0 = 0.1;
  double n[8], s[8];
  for (int i = 0; i < 8; i++)
    {
      n[i] = (double) (1 << i);
      /* +-3% multiplicative noise, alternating, deterministic */
      s[i] = amdahl (f0, n[i]) * (1 + ((i % 2) ? 0.03 : -0.03) * (i > 0));
    }
  double f = -1, e = -1;
  sim_amdahl_fit (n, s, 8, &f, &e);
  g_assert_cmpfloat (fabs (f - f0), <, 0.01);
  g_assert_cmpfloat (f, !=, f0);
  g_assert_cmpfloat_with_epsilon (e, sse (n, s, 8, f), 1e-12);
  /* a least-squares minimum: nearby f are worse */
  g_assert_cmpfloat (sse (n, s, 8, f), <=, sse (n, s, 8, f + 1e-4));
  g_assert_cmpfloat (sse (n, s, 8, f), <=, sse (n, s, 8, f - 1e-4));
  /* superlinear points clamp to f = 0 */
  double sup[3] = { 1, 2.5, 5 }, nn[3] = { 1, 2, 4 };
  sim_amdahl_fit (nn, sup, 3, &f, NULL);
  g_assert_cmpfloat (f, ==, 0.0);
}

/* Time to target on a hand-made metrics table. */
static void
test_time_to_target (void)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open (":memory:", &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db,
    "CREATE TABLE metrics (run_id INTEGER, sim_time REAL, step INTEGER, loss REAL,"
    " accuracy REAL);"
    /* run 1: reaches 0.5 at t = 3, rises again, lowest 0.4 */
    "INSERT INTO metrics VALUES (1, 1.0, 10, 1.0, 0), (1, 2.0, 20, 0.6, 0),"
    " (1, 3.0, 30, 0.4, 0), (1, 4.0, 40, 0.5, 0), (1, 0.5, 5, NULL, 0);"
    /* run 2: two rows at t = 2; the lower step comes first; lowest 0.3 */
    "INSERT INTO metrics VALUES (2, 2.0, 21, 0.3, 0), (2, 2.0, 20, 0.45, 0),"
    " (2, 1.0, 10, 0.9, 0);", NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpfloat (sim_plot_time_to_target (db, 1, 0.5), ==, 3.0);
  g_assert_cmpfloat (sim_plot_time_to_target (db, 1, 0.6), ==, 2.0);
  g_assert_cmpfloat (sim_plot_time_to_target (db, 1, 1.0), ==, 1.0);
  g_assert_true (isnan (sim_plot_time_to_target (db, 1, 0.39)));
  g_assert_cmpfloat (sim_plot_time_to_target (db, 2, 0.45), ==, 2.0);
  g_assert_true (isnan (sim_plot_time_to_target (db, 3, 10.0)));
  /* default threshold: the highest of the lowest losses, max(0.4, 0.3) */
  g_assert_cmpfloat (sim_plot_default_target (db), ==, MAX (0.4, 0.3));
  sqlite3_close (db);
}

static void
check_file (const char *name, const char *format)
{
  g_autofree char *path = g_build_filename (tmpdir, name, NULL);
  g_autofree char *contents = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &contents, &len, NULL))
    g_error ("%s: not drawn", name);
  g_assert_cmpuint (len, >, 1000);
  if (strcmp (format, "png") == 0)
    g_assert_cmpint (memcmp (contents, "\x89PNG\r\n\x1a\n", 8), ==, 0);
  else
    {
      g_assert_nonnull (strstr (contents, "<svg"));
      g_assert_nonnull (strstr (contents, "</svg>"));
    }
}

/* A sweep over workers and consistency draws every figure, in both formats. */
static void
test_figures (void)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_assert_nonnull (d);
  g_autofree char *ini = g_build_filename (d, "small.ini", NULL);
  g_autofree char *db = g_build_filename (tmpdir, "sw.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", "--set",
                          "sweep.cluster.workers=1,2,4", NULL), ==, 0);
  const char *figs[] = { "loss-time", "loss-step", "iteration-time", "speedup",
                         "iteration-cdf", "breakdown", "staleness", "time-to-target",
                         "timeline-run1", "timeline-run6" };
  const char *formats[] = { "png", "svg" };
  for (gsize k = 0; k < G_N_ELEMENTS (formats); k++)
    {
      g_autofree char *o2 = NULL, *e2 = NULL;
      g_assert_cmpint (dtsim (&o2, &e2, "plot", db, "--format", formats[k], NULL), ==, 0);
      for (gsize i = 0; i < G_N_ELEMENTS (figs); i++)
        {
          g_autofree char *name = g_strdup_printf ("sw-%s.%s", figs[i], formats[k]);
          check_file (name, formats[k]);
          g_assert_nonnull (strstr (o2, name));
        }
      g_assert_null (strstr (o2, "skipped"));
      /* one serial fraction per group (bsp, async), f in [0, 1] */
      const char *line = strstr (o2, "serial fraction (Amdahl fit): f = ");
      g_assert_nonnull (line);
      double f = g_ascii_strtod (line + strlen ("serial fraction (Amdahl fit): f = "), NULL);
      g_assert_cmpfloat (f, >=, 0.0);
      g_assert_cmpfloat (f, <=, 1.0);
      g_assert_nonnull (strstr (line, "[consistency=bsp]"));
      g_assert_nonnull (strstr (o2, "[consistency=async]"));
    }
  /* the fitted f is in the key of the figure, with the labelled axes */
  g_autofree char *svg = g_build_filename (tmpdir, "sw-speedup.svg", NULL), *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "Amdahl fit, f = "));
  g_assert_nonnull (strstr (text, "workers"));
  g_autofree char *cdf = g_build_filename (tmpdir, "sw-iteration-cdf.svg", NULL), *t2 = NULL;
  g_assert_true (g_file_get_contents (cdf, &t2, NULL, NULL));
  g_assert_nonnull (strstr (t2, "simulated time per worker iteration (s)"));
}

/* Strong scaling: with [model] global_batch the per-worker batch follows from
 * the workers, yet the runs still form one speedup group per other swept key. */
static void
test_global_batch (void)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_autofree char *small = g_build_filename (d, "small.ini", NULL), *text = NULL;
  g_assert_true (g_file_get_contents (small, &text, NULL, NULL));
  /* small.ini with its per-worker batch of 16 made a global batch of 64 */
  char *b = strstr (text, "\nbatch = 16\n");
  g_assert_nonnull (b);
  g_autofree char *gtext = g_strdup_printf ("%.*s\nglobal_batch = 64\n%s", (int) (b - text),
                                            text, b + strlen ("\nbatch = 16\n"));
  g_autofree char *ini = g_build_filename (tmpdir, "gb.ini", NULL);
  g_assert_true (g_file_set_contents (ini, gtext, -1, NULL));
  g_autofree char *db = g_build_filename (tmpdir, "gb.db", NULL);
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", "--set",
                          "sweep.cluster.workers=1,2,4", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, NULL), ==, 0);
  g_assert_nonnull (strstr (o2, "gb-speedup.png"));
  g_assert_null (strstr (o2, "skipped speedup"));
  /* two groups, bsp and async, whose labels do not name the batch */
  const char *line = strstr (o2, "serial fraction (Amdahl fit): f = ");
  g_assert_nonnull (line);
  g_assert_nonnull (strstr (line, "[consistency=bsp]"));
  g_assert_nonnull (strstr (o2, "[consistency=async]"));
  g_assert_null (strstr (o2, "batch="));
}

/* Figures whose data is absent are skipped, and said so. */
static void
test_skipped (void)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_autofree char *ini = g_build_filename (d, "small.ini", NULL);
  g_autofree char *db = g_build_filename (tmpdir, "sum.db", NULL);
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", "--set",
                          "trace.detail=summary", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, NULL), ==, 0);
  g_assert_nonnull (strstr (o2, "sum-loss-time.png"));
  g_assert_nonnull (strstr (o2, "skipped speedup: "));
  g_assert_nonnull (strstr (o2, "skipped breakdown: "));
  g_assert_nonnull (strstr (o2, "skipped timeline: "));
  g_autofree char *bd = g_build_filename (tmpdir, "sum-breakdown.png", NULL);
  g_assert_false (g_file_test (bd, G_FILE_TEST_EXISTS));
}

/* Without gnuplot: the apt-get command and exit code 2. */
static void
test_no_gnuplot (void)
{
  g_autofree char *db = g_build_filename (tmpdir, "sw.db", NULL);
  g_setenv ("DTSIM_GNUPLOT", "dtsim-no-such-gnuplot", TRUE);
  g_autofree char *o = NULL, *e = NULL;
  int code = dtsim (&o, &e, "plot", db, NULL);
  g_unsetenv ("DTSIM_GNUPLOT");
  g_assert_cmpint (code, ==, 2);
  g_assert_nonnull (strstr (e, "apt-get install gnuplot-nox"));
  g_assert_null (strchr (strchr (e, '\n') + 1, '\n'));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-plot-test-XXXXXX", NULL);
  g_test_add_func ("/plot/amdahl/exact", test_amdahl_exact);
  g_test_add_func ("/plot/amdahl/noisy", test_amdahl_noisy);
  g_test_add_func ("/plot/time-to-target", test_time_to_target);
  g_test_add_func ("/plot/figures", test_figures);
  g_test_add_func ("/plot/skipped", test_skipped);
  g_test_add_func ("/plot/global-batch", test_global_batch);
  g_test_add_func ("/plot/no-gnuplot", test_no_gnuplot);
  int rc = g_test_run ();
  test_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
