/*
 * test-plot.c — `dtsim plot`: the Amdahl least-squares fit, the time to reach
 * a target loss on a hand-made database, and the figures drawn from a small
 * sweep over workers (files present, non-empty, valid PNG or SVG), the serial
 * fraction line (also for a strong-scaling sweep with [model] global_batch),
 * and the message when gnuplot is missing.
 *
 * Hostile and broken input: the gnuplot quoting, labels holding backquotes,
 * quotes, newlines and @ (from a scenario name, a database file name and a
 * hand-made database) that must not run anything, a symlink planted at a
 * figure's name, and one line with exit code 2 for every kind of file that
 * is not a usable trace; running and failed runs are drawn and marked.
 *
 * A run of several jobs: a line per job in the loss figures; a run of one
 * job (and a trace older than metrics.job) draws its one line as before.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "views/plot.h"
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

/* A failed query (here: no metrics table, so the prepare fails) gives NAN,
 * never a stale value, and leaves no statement open. */
static void
test_time_to_target_no_table (void)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open (":memory:", &db), ==, SQLITE_OK);
  g_assert_true (isnan (sim_plot_time_to_target (db, 1, 0.5)));
  g_assert_true (isnan (sim_plot_default_target (db)));
  g_assert_cmpint (sqlite3_close (db), ==, SQLITE_OK);
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
  const char *figs[] = { "loss-time", "loss-step", "accuracy-time", "iteration-time", "speedup",
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
      /* a batch per worker is weak scaling: no Amdahl fit */
      g_assert_null (strstr (o2, "serial fraction"));
    }
  /* the speedup says which scaling, and draws the ideal N / N0 */
  g_autofree char *svg = g_build_filename (tmpdir, "sw-speedup.svg", NULL), *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_null (strstr (text, "Amdahl fit, f = "));
  g_assert_nonnull (strstr (text, "fixed batch per worker"));
  g_assert_nonnull (strstr (text, "ideal: N / N0"));
  g_assert_nonnull (strstr (text, "workers"));
  /* staleness is in iterations behind */
  g_autofree char *st = g_build_filename (tmpdir, "sw-staleness.svg", NULL), *t3 = NULL;
  g_assert_true (g_file_get_contents (st, &t3, NULL, NULL));
  g_assert_nonnull (strstr (t3, "iterations behind"));
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
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, "--format", "svg", NULL), ==, 0);
  g_assert_nonnull (strstr (o2, "gb-speedup.svg"));
  g_assert_null (strstr (o2, "skipped speedup"));
  /* two groups, bsp and async, whose labels do not name the batch; one
   * serial fraction each, f in [0, 1] */
  const char *line = strstr (o2, "serial fraction (Amdahl fit): f = ");
  g_assert_nonnull (line);
  double f = g_ascii_strtod (line + strlen ("serial fraction (Amdahl fit): f = "), NULL);
  g_assert_cmpfloat (f, >=, 0.0);
  g_assert_cmpfloat (f, <=, 1.0);
  g_assert_nonnull (strstr (line, "[consistency=bsp]"));
  g_assert_nonnull (strstr (o2, "[consistency=async]"));
  g_assert_null (strstr (o2, "batch="));
  /* the fitted f is in the key of the figure, beside the ideal N / N0 */
  g_autofree char *svg = g_build_filename (tmpdir, "gb-speedup.svg", NULL), *t = NULL;
  g_assert_true (g_file_get_contents (svg, &t, NULL, NULL));
  g_assert_nonnull (strstr (t, "Amdahl fit, f = "));
  g_assert_nonnull (strstr (t, "fixed global batch"));
  g_assert_nonnull (strstr (t, "ideal: N / N0"));
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
  /* BSP alone: every gradient fresh, no staleness histogram to read */
  g_autofree char *db2 = g_build_filename (tmpdir, "bsp.db", NULL);
  g_autofree char *o3 = NULL, *e3 = NULL, *o4 = NULL, *e4 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", db2, "--quiet", "--set",
                          "policy.consistency=bsp", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o4, &e4, "plot", db2, NULL), ==, 0);
  g_assert_nonnull (strstr (o4, "skipped staleness: every gradient was applied fresh"));
  g_autofree char *sp = g_build_filename (tmpdir, "bsp-staleness.png", NULL);
  g_assert_false (g_file_test (sp, G_FILE_TEST_EXISTS));
}

/* Runs `sql` on a copy of `db` named `name`; returns the copy's path. */
static char *
spoiled_copy (const char *db, const char *name, const char *sql)
{
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (db, &bytes, &len, NULL));
  char *copy = g_build_filename (tmpdir, name, NULL);
  g_assert_true (g_file_set_contents (copy, bytes, (gssize) len, NULL));
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open (copy, &h), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (h, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_changes (h), >, 0);
  sqlite3_close (h);
  return copy;
}

/* Values gnuplot cannot draw (infinite, or so large that an axis range
 * overflows) are left out of their figure with a note giving their count;
 * the rest is drawn, a figure with nothing left is skipped, and the report
 * still writes its page.  NaN, which SQLite stores as NULL, is no loss. */
static void
test_not_finite (void)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_autofree char *ini = g_build_filename (d, "small.ini", NULL);
  g_autofree char *db = g_build_filename (tmpdir, "nf.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  /* the first metric row of run 1 */
  const char *first = " WHERE rowid = (SELECT MIN(rowid) FROM metrics WHERE run_id = 1"
                      " AND loss IS NOT NULL)";
  const struct {
    const char *sql;        /* the change, before `first` where it ends in WHERE */
    gboolean one_row;       /* it applies to `first` */
    const char *note;       /* in stderr: the rows left out, or NULL */
    const char *skipped;    /* in stdout, or NULL */
  } cases[] = {
    { "UPDATE metrics SET loss = 9e999", TRUE, "1 row left out of loss-time: not finite", NULL },
    { "UPDATE metrics SET loss = -9e999", TRUE, "1 row left out of loss-step: not finite",
      NULL },
    { "UPDATE metrics SET sim_time = 1e308", TRUE, "1 row left out of loss-time: not finite",
      NULL },
    { "UPDATE metrics SET sim_time = -1e308", TRUE, "1 row left out of accuracy-time: not finite",
      NULL },
    { "UPDATE metrics SET loss = 9e999", FALSE, "rows left out of loss-time: not finite",
      "skipped loss-time: no row it could draw" },
    { "UPDATE metrics SET loss = 0.0 / 0.0", FALSE, NULL,
      "skipped loss-time: no run has loss metrics" },
    { "UPDATE iterations SET end = 1e308 WHERE rowid = 1", FALSE,
      "1 row left out of iteration-cdf: not finite", NULL },
    { "UPDATE iterations SET compute = 9e999 WHERE rowid = 1", FALSE,
      "1 row left out of breakdown: not finite", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *sql = g_strconcat (cases[i].sql, cases[i].one_row ? first : "", NULL);
      g_autofree char *name = g_strdup_printf ("nf%zu.db", i);
      g_autofree char *bad = spoiled_copy (db, name, sql);
      g_autofree char *o2 = NULL, *e2 = NULL;
      g_test_message ("%s", sql);
      g_assert_cmpint (dtsim (&o2, &e2, "plot", bad, "--format", "svg", NULL), ==, 0);
      g_assert_null (strstr (e2, "please report it"));
      if (cases[i].note)
        g_assert_nonnull (strstr (e2, cases[i].note));
      else
        g_assert_null (strstr (e2, "left out of"));
      if (cases[i].skipped)
        g_assert_nonnull (strstr (o2, cases[i].skipped));
      else
        {
          /* what was left drawn: the loss figures stay */
          g_autofree char *fig = g_strdup_printf ("nf%zu-loss-time.svg", i);
          g_assert_nonnull (strstr (o2, fig));
        }
      /* the report writes its page, the note under its figure or in the list */
      g_autofree char *html = g_strdup_printf ("%s/nf%zu.html", tmpdir, i);
      g_autofree char *o3 = NULL, *e3 = NULL, *page = NULL;
      g_assert_cmpint (dtsim (&o3, &e3, "report", bad, "-o", html, NULL), ==, 0);
      g_assert_true (g_file_get_contents (html, &page, NULL, NULL));
      g_assert_nonnull (strstr (page, "</html>"));
      g_assert_nonnull (strstr (page, "<img"));
      if (cases[i].note)
        g_assert_nonnull (strstr (page, cases[i].note));
    }
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

/* --- hostile and broken input ------------------------------------------- */

/* The literal gnuplot gets: single quotes, ' doubled, control characters as
 * spaces, every other byte (backquotes, @, double quotes, \) as it is. */
static void
test_quote (void)
{
  static const struct {
    const char *in, *out;
  } cases[] = {
    { "", "''" },
    { "it's", "'" "it" "''" "s" "'" },
    { "''", "'" "''" "''" "'" },
    { "a\nb\r\tc\x7f" "d\x01", "'" "a b  c d " "'" },
    { "`touch x` @m \"q\" \\", "'" "`touch x` @m \"q\" \\" "'" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *q = sim_plot_gp_quote (cases[i].in);
      g_assert_cmpstr (q, ==, cases[i].out);
    }
}

/* The marker file that an executed `touch NAME` would create in tmpdir. */
static char *
marker (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* Hostile strings: each runs `touch MARKER-k` if gnuplot executes it. */
static GPtrArray *
hostile_strings (const char *tag)
{
  GPtrArray *h = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *m1 = marker (tag), *m2 = g_strconcat (m1, "-q", NULL);
  g_autofree char *m3 = g_strconcat (m1, "-dq", NULL), *m4 = g_strconcat (m1, "-nl", NULL);
  g_ptr_array_add (h, g_strdup_printf ("a`touch %s`b", m1));
  g_ptr_array_add (h, g_strdup_printf ("x' . system('touch %s') . 'y", m2));
  g_ptr_array_add (h, g_strdup_printf ("x\" . system(\"touch %s\") . \"y @outfile", m3));
  g_ptr_array_add (h, g_strdup_printf ("l\nsystem('touch %s')\n\x1b[31m@term", m4));
  return h;
}

/* Asserts that none of the markers of hostile_strings (tag) exists. */
static void
assert_nothing_ran (const char *tag)
{
  const char *sfx[] = { "", "-q", "-dq", "-nl" };
  for (gsize i = 0; i < G_N_ELEMENTS (sfx); i++)
    {
      g_autofree char *name = g_strconcat (tag, sfx[i], NULL), *m = marker (name);
      if (g_file_test (m, G_FILE_TEST_EXISTS))
        g_error ("%s exists: a label was executed", m);
    }
}

/* The gnuplot program, as dtsim plot runs it. */
static const char *
gnuplot (void)
{
  const char *env = g_getenv ("DTSIM_GNUPLOT");
  return env && *env ? env : GNUPLOT_PATH;
}

/* gnuplot itself prints the quoted hostile strings as they are (control
 * characters as spaces) and runs none of them. */
static void
test_quote_gnuplot (void)
{
  g_autoptr (GPtrArray) h = hostile_strings ("gq");
  for (guint i = 0; i < h->len; i++)
    {
      const char *s = g_ptr_array_index (h, i);
      g_autofree char *q = sim_plot_gp_quote (s);
      g_autofree char *cmd = g_strdup_printf ("x = %s; print x", q);
      const char *argv[] = { gnuplot (), "-e", cmd, NULL };
      g_autofree char *out = NULL, *err = NULL;
      int status = 0;
      g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                   &out, &err, &status, NULL));
      g_assert_true (g_spawn_check_wait_status (status, NULL));
      g_autofree char *expect = g_strdup (s);
      for (char *c = expect; *c; c++)
        if ((unsigned char) *c < 0x20 || *c == 0x7f)
          *c = ' ';
      g_strchomp (err);   /* gnuplot's print writes to stderr */
      g_assert_cmpstr (err, ==, expect);
    }
  assert_nothing_ran ("gq");
}

/* Schema v3's tables that dtsim plot reads, as sim/trace.c writes them. */
static const char trace_schema[] =
  "CREATE TABLE runs (id INTEGER PRIMARY KEY, scenario TEXT NOT NULL, name TEXT NOT NULL,"
  " seed INTEGER NOT NULL, status TEXT NOT NULL, error TEXT, stop TEXT, sim_time REAL,"
  " wall_time REAL, events INTEGER, iterations INTEGER, updates INTEGER, final_loss REAL,"
  " final_accuracy REAL, compute REAL, comm REAL, wait REAL, version TEXT NOT NULL);"
  "CREATE TABLE params (run_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);"
  "CREATE TABLE metrics (run_id INTEGER NOT NULL, sim_time REAL NOT NULL,"
  " step INTEGER NOT NULL, loss REAL, accuracy REAL);"
  "CREATE TABLE iterations (run_id INTEGER NOT NULL, worker INTEGER NOT NULL,"
  " iteration INTEGER NOT NULL, start REAL NOT NULL, end REAL NOT NULL,"
  " compute REAL NOT NULL, comm REAL NOT NULL, wait REAL NOT NULL,"
  " staleness INTEGER NOT NULL);"
  "CREATE TABLE spans (run_id INTEGER NOT NULL, actor TEXT NOT NULL, kind TEXT NOT NULL,"
  " start REAL NOT NULL, end REAL NOT NULL, iteration INTEGER, bytes REAL NOT NULL);"
  "PRAGMA user_version = 3;";

#define STEPS 4   /* iterations of a done run in make_trace */

static void
exec_ok (sqlite3 *db, const char *sql)
{
  char *msg = NULL;
  if (sqlite3_exec (db, sql, NULL, NULL, &msg) != SQLITE_OK)
    g_error ("%s: %s", sql, msg);
}

/* Writes a trace of `n` runs to `path`: run i (from 1) named names[i-1],
 * of status statuses[i-1] (NULL: all done), swept value values[i-1] of
 * policy.consistency, with 2 workers, STEPS iterations (2 when not done) of
 * 1 s each, loss 1 / (1 + step), and one compute span per iteration for each
 * actor of `actors` (NULL-terminated). */
static void
make_trace (const char *path, int n, const char *const *names,
            const char *const *statuses, const char *const *values,
            const char *const *actors)
{
  sqlite3 *db = NULL;
  g_unlink (path);
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  exec_ok (db, trace_schema);
  exec_ok (db, "BEGIN");
  sqlite3_stmt *run = NULL, *par = NULL, *met = NULL, *it = NULL, *sp = NULL;
  g_assert_cmpint (sqlite3_prepare_v2 (db, "INSERT INTO runs (id, scenario, name, seed,"
                   " status, sim_time, iterations, updates, version) VALUES (?, 's.ini', ?,"
                   " 1, ?, ?, ?, ?, 'test')", -1, &run, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "INSERT INTO params VALUES (?, ?, ?)", -1, &par,
                                       NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "INSERT INTO metrics VALUES (?, ?, ?, ?, 0)", -1,
                                       &met, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "INSERT INTO iterations VALUES (?, ?, ?, ?, ?,"
                                       " 0.5, 0.25, 0.25, 0)", -1, &it, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "INSERT INTO spans VALUES (?, ?, 'compute', ?, ?,"
                                       " ?, 0)", -1, &sp, NULL), ==, SQLITE_OK);
  for (int r = 1; r <= n; r++)
    {
      const char *status = statuses ? statuses[r - 1] : "done";
      gboolean done = strcmp (status, "done") == 0;
      int steps = done ? STEPS : 2;
      sqlite3_bind_int (run, 1, r);
      sqlite3_bind_text (run, 2, names[r - 1], -1, SQLITE_STATIC);
      sqlite3_bind_text (run, 3, status, -1, SQLITE_STATIC);
      if (done)
        {
          sqlite3_bind_double (run, 4, steps);
          sqlite3_bind_int (run, 5, steps);
          sqlite3_bind_int (run, 6, steps);
        }
      g_assert_cmpint (sqlite3_step (run), ==, SQLITE_DONE);
      sqlite3_reset (run);
      sqlite3_clear_bindings (run);
      const char *kv[3][2] = { { "scenario.name", "t" }, { "cluster.workers", "2" },
                               { "policy.consistency", values[r - 1] } };
      for (int k = 0; k < 3; k++)
        {
          sqlite3_bind_int (par, 1, r);
          sqlite3_bind_text (par, 2, kv[k][0], -1, SQLITE_STATIC);
          sqlite3_bind_text (par, 3, kv[k][1], -1, SQLITE_STATIC);
          g_assert_cmpint (sqlite3_step (par), ==, SQLITE_DONE);
          sqlite3_reset (par);
        }
      for (int s = 0; s <= steps; s++)
        {
          sqlite3_bind_int (met, 1, r);
          sqlite3_bind_double (met, 2, s);
          sqlite3_bind_int (met, 3, s);
          sqlite3_bind_double (met, 4, 1.0 / (1 + s));
          g_assert_cmpint (sqlite3_step (met), ==, SQLITE_DONE);
          sqlite3_reset (met);
        }
      for (int s = 0; s < steps; s++)
        {
          for (int w = 0; w < 2; w++)
            {
              sqlite3_bind_int (it, 1, r);
              sqlite3_bind_int (it, 2, w);
              sqlite3_bind_int (it, 3, s);
              sqlite3_bind_double (it, 4, s);
              sqlite3_bind_double (it, 5, s + 1);
              g_assert_cmpint (sqlite3_step (it), ==, SQLITE_DONE);
              sqlite3_reset (it);
            }
          for (int a = 0; actors[a]; a++)
            {
              sqlite3_bind_int (sp, 1, r);
              sqlite3_bind_text (sp, 2, actors[a], -1, SQLITE_STATIC);
              sqlite3_bind_double (sp, 3, s);
              sqlite3_bind_double (sp, 4, s + 0.5);
              sqlite3_bind_int (sp, 5, s);
              g_assert_cmpint (sqlite3_step (sp), ==, SQLITE_DONE);
              sqlite3_reset (sp);
            }
        }
    }
  sqlite3_finalize (run);
  sqlite3_finalize (par);
  sqlite3_finalize (met);
  sqlite3_finalize (it);
  sqlite3_finalize (sp);
  exec_ok (db, "COMMIT");
  g_assert_cmpint (sqlite3_close (db), ==, SQLITE_OK);
}

/* A plain trace of two done runs. */
static void
make_plain_trace (const char *path)
{
  const char *names[] = { "t policy.consistency=bsp", "t policy.consistency=async" };
  const char *values[] = { "bsp", "async" };
  const char *actors[] = { "worker0", "worker1", NULL };
  make_trace (path, 2, names, NULL, values, actors);
}

/* Runs SQL on an existing database file. */
static void
alter (const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  exec_ok (db, sql);
  g_assert_cmpint (sqlite3_close (db), ==, SQLITE_OK);
}

/* Number of lines of `s` (a last line without newline counts). */
static int
count_lines (const char *s)
{
  int n = 0;
  for (const char *c = s; *c; c++)
    n += *c == '\n' || c[1] == '\0';
  return n;
}

/* Files in folder `dir`. */
static guint
count_files (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name (d))
    n++;
  if (d)
    g_dir_close (d);
  return n;
}

/* `dtsim plot path` exits 2 with one line on stderr naming the file and
 * containing `what`, no gnuplot message, and draws nothing. */
static void
expect_bad (const char *path, const char *what)
{
  g_autofree char *outdir = g_build_filename (tmpdir, "bad-out", NULL);
  sim_remove_tree (outdir);
  g_autofree char *o = NULL, *e = NULL;
  int code = dtsim (&o, &e, "plot", path, "-o", outdir, NULL);
  g_test_message ("%s: %s", path, e);
  g_assert_cmpint (code, ==, 2);
  g_autofree char *head = g_strdup_printf ("dtsim: %s: ", path);
  g_assert_true (g_str_has_prefix (e, head));
  g_assert_nonnull (strstr (e, what));
  g_assert_nonnull (strstr (e, "; "));   /* the fix follows */
  g_assert_cmpint (count_lines (e), ==, 1);
  g_assert_null (strstr (e, "gnuplot"));
  g_assert_cmpstr (o, ==, "");
  g_assert_cmpuint (count_files (outdir), ==, 0);
}

/* A scenario named with backquotes, run then plotted: nothing runs, and the
 * name is drawn as text in the timeline's title. */
static void
test_hostile_scenario_name (void)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_autofree char *ini = g_build_filename (d, "small.ini", NULL);
  g_autofree char *db = g_build_filename (tmpdir, "hn.db", NULL);
  /* a name holds no '/' (it names results/NAME.db): the marker is relative
   * to the folder dtsim, and so gnuplot, runs in, where marker() puts it */
  g_autofree char *m = g_strdup ("sn"), *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_autofree char *set = g_strdup_printf ("scenario.name=a`touch %s`b'c\"d@term", m);
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", "--set", set, NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, "--format", "svg", NULL), ==, 0);
  g_assert_cmpstr (e2, ==, "");
  assert_nothing_ran ("sn");
  g_autofree char *svg = g_build_filename (tmpdir, "hn-timeline-run1.svg", NULL), *t = NULL;
  g_assert_true (g_file_get_contents (svg, &t, NULL, NULL));
  g_autofree char *shown = g_strdup_printf ("a`touch %s`b", m);
  g_assert_nonnull (strstr (t, shown));
}

/* A database whose file name holds a quote, a backquote and a double
 * quote: its figures carry that name, and nothing runs (gnuplot's working
 * folder is dtsim's, where the relative `touch` would land). */
static void
test_hostile_file_name (void)
{
  g_autofree char *cwd = g_build_filename (tmpdir, "fn", NULL);
  g_assert_cmpint (g_mkdir (cwd, 0755), ==, 0);
  const char *name = "q'b`touch fn-m`\"c.db";
  g_autofree char *db = g_build_filename (cwd, name, NULL);
  make_plain_trace (db);
  g_autofree char *o = NULL, *e = NULL;
  int code = test_run_dtsim (cwd, &o, &e, "plot", name, NULL);
  g_assert_cmpint (code, ==, 0);
  g_assert_cmpstr (e, ==, "");
  g_autofree char *m = g_build_filename (cwd, "fn-m", NULL);
  g_assert_false (g_file_test (m, G_FILE_TEST_EXISTS));
  g_autofree char *fig = g_build_filename (cwd, "q'b`touch fn-m`\"c-loss-time.png", NULL);
  g_assert_true (g_file_test (fig, G_FILE_TEST_IS_REGULAR));
  g_assert_nonnull (strstr (o, "q'b`touch fn-m`\"c-timeline-run2.png"));
}

/* A hand-made database whose run names, swept values and actor names are
 * hostile: every figure is drawn, nothing runs, the labels are text; a
 * symlink planted at a figure's name is replaced, its target untouched. */
static void
test_hostile_labels (void)
{
  g_autoptr (GPtrArray) names = hostile_strings ("hl");
  g_autoptr (GPtrArray) values = hostile_strings ("hv");
  g_autoptr (GPtrArray) actors = hostile_strings ("ha");
  g_ptr_array_add (actors, NULL);
  g_autofree char *dir = g_build_filename (tmpdir, "labels", NULL);
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  g_autofree char *db = g_build_filename (dir, "h.db", NULL);
  make_trace (db, (int) names->len, (const char *const *) names->pdata, NULL,
              (const char *const *) values->pdata, (const char *const *) actors->pdata);
  g_autofree char *victim = g_build_filename (tmpdir, "victim", NULL);
  g_autofree char *link = g_build_filename (dir, "h-loss-step.svg", NULL);
  g_assert_true (g_file_set_contents (victim, "keep", -1, NULL));
  g_assert_cmpint (symlink (victim, link), ==, 0);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "plot", db, "--format", "svg", NULL), ==, 0);
  g_assert_cmpstr (e, ==, "");
  assert_nothing_ran ("hl");
  assert_nothing_ran ("hv");
  assert_nothing_ran ("ha");
  /* drawn: loss-time, loss-step, accuracy-time, cdf, breakdown, staleness,
   * time-to-target and one timeline per run; skipped (every run has 2
   * workers): speedup and iteration-time */
  g_assert_cmpint (count_lines (o), ==, 7 + (int) names->len + 2);
  g_assert_nonnull (strstr (o, "skipped speedup: "));
  g_assert_nonnull (strstr (o, "skipped iteration-time: "));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (victim, &text, NULL, NULL));
  g_assert_cmpstr (text, ==, "keep");
  g_assert_false (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  check_file ("labels/h-loss-step.svg", "svg");
  /* the labels are drawn as text: the swept values, the actor names */
  g_autofree char *svg = g_build_filename (dir, "h-loss-time.svg", NULL), *t = NULL;
  g_assert_true (g_file_get_contents (svg, &t, NULL, NULL));
  g_autofree char *m = marker ("hv");
  g_autofree char *v1 = g_strdup_printf ("consistency=a`touch %s`b", m);
  g_assert_nonnull (strstr (t, v1));
  g_autofree char *tl = g_build_filename (dir, "h-timeline-run1.svg", NULL), *t2 = NULL;
  g_assert_true (g_file_get_contents (tl, &t2, NULL, NULL));
  g_autofree char *ma = marker ("ha");
  g_autofree char *a1 = g_strdup_printf ("a`touch %s`b", ma);
  g_assert_nonnull (strstr (t2, a1));
}

/* Runs still 'running' (a killed run) and 'failed' are drawn from their
 * rows, marked in the labels, and named in one line each on stderr. */
static void
test_unfinished_runs (void)
{
  const char *names[] = { "t policy.consistency=bsp", "t policy.consistency=async",
                          "t policy.consistency=ssp" };
  const char *statuses[] = { "done", "running", "failed" };
  const char *values[] = { "bsp", "async", "ssp" };
  const char *actors[] = { "worker0", "worker1", NULL };
  g_autofree char *db = g_build_filename (tmpdir, "un.db", NULL);
  make_trace (db, 3, names, statuses, values, actors);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "plot", db, "--format", "svg", NULL), ==, 0);
  g_assert_cmpint (count_lines (e), ==, 2);
  g_autofree char *l1 = g_strdup_printf ("dtsim: %s: run 2 is still 'running' (killed", db);
  g_autofree char *l2 = g_strdup_printf ("dtsim: %s: run 3 is 'failed'", db);
  g_assert_true (g_str_has_prefix (e, l1));
  g_assert_nonnull (strstr (e, l2));
  g_assert_null (strstr (e, "gnuplot"));
  g_assert_nonnull (strstr (o, "un-timeline-run3.svg"));
  g_autofree char *svg = g_build_filename (tmpdir, "un-loss-time.svg", NULL), *t = NULL;
  g_assert_true (g_file_get_contents (svg, &t, NULL, NULL));
  g_assert_nonnull (strstr (t, "consistency=bsp<"));
  g_assert_nonnull (strstr (t, "consistency=async [running]"));
  g_assert_nonnull (strstr (t, "consistency=ssp [failed]"));
}

/* Files that are not usable traces: one line each, exit code 2. */
static void
test_bad_files (void)
{
  g_autofree char *good = g_build_filename (tmpdir, "good.db", NULL), *bytes = NULL;
  make_plain_trace (good);
  gsize len = 0;
  g_assert_true (g_file_get_contents (good, &bytes, &len, NULL));
  g_assert_cmpuint (len, >=, 4 * 512);

  g_autofree char *trunc = g_build_filename (tmpdir, "trunc.db", NULL);
  g_assert_true (g_file_set_contents (trunc, bytes, (gssize) len / 2, NULL));
  expect_bad (trunc, "truncated");

  /* the header of a good file, then bytes of a fixed LCG, to the same size */
  g_autofree char *corrupt = g_build_filename (tmpdir, "corrupt.db", NULL);
  g_autofree char *junk = g_memdup2 (bytes, len);
  guint32 x = 12345;
  for (gsize i = 100; i < len; i++)
    {
      x = x * 1664525u + 1013904223u;
      junk[i] = (char) (x >> 24);
    }
  g_assert_true (g_file_set_contents (corrupt, junk, (gssize) len, NULL));
  expect_bad (corrupt, "damaged");

  g_autofree char *empty = g_build_filename (tmpdir, "empty.db", NULL);
  g_assert_true (g_file_set_contents (empty, "", 0, NULL));
  expect_bad (empty, "empty file");

  g_autofree char *text = g_build_filename (tmpdir, "text.db", NULL);
  g_assert_true (g_file_set_contents (text, "[scenario]\nname = x\n", -1, NULL));
  expect_bad (text, "not a SQLite database");

  g_autofree char *folder = g_build_filename (tmpdir, "folder.db", NULL);
  g_assert_cmpint (g_mkdir (folder, 0755), ==, 0);
  expect_bad (folder, "a folder");

  /* a FIFO without a writer: opening it for reading would block */
  g_autofree char *fifo = g_build_filename (tmpdir, "fifo.db", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  expect_bad (fifo, "not a regular file");

  g_autofree char *other = g_build_filename (tmpdir, "other.db", NULL);
  alter (other, "CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('hello');");
  expect_bad (other, "not a dtsim trace (schema version 0");

  g_autofree char *newer = g_build_filename (tmpdir, "newer.db", NULL);
  make_plain_trace (newer);
  alter (newer, "PRAGMA user_version = 99");
  expect_bad (newer, "schema version 99 is newer");

  g_autofree char *nospans = g_build_filename (tmpdir, "nospans.db", NULL);
  make_plain_trace (nospans);
  alter (nospans, "DROP TABLE spans");
  expect_bad (nospans, "no table 'spans'");

  g_autofree char *nostatus = g_build_filename (tmpdir, "nostatus.db", NULL);
  make_plain_trace (nostatus);
  alter (nostatus, "ALTER TABLE runs RENAME COLUMN status TO state");
  expect_bad (nostatus, "table 'runs' has no column 'status'");

  /* runs as an endless view: refused before any query reads it */
  g_autofree char *view = g_build_filename (tmpdir, "view.db", NULL);
  make_plain_trace (view);
  alter (view, "DROP TABLE runs; CREATE VIEW runs AS WITH RECURSIVE c(id) AS (SELECT 1"
         " UNION ALL SELECT id + 1 FROM c) SELECT id, 'n' AS name, 'done' AS status,"
         " 1.0 AS sim_time, 1 AS iterations, 1 AS updates FROM c");
  expect_bad (view, "'runs' is a view");
}

/* A run killed in the middle of a transaction leaves a hot journal, which
 * a read-only reader cannot roll back: one line says so. */
static void
test_killed_mid_write (void)
{
  g_autofree char *db = g_build_filename (tmpdir, "killed.db", NULL);
  make_plain_trace (db);
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      sqlite3 *h = NULL;
      if (sqlite3_open (db, &h) != SQLITE_OK
          || sqlite3_exec (h, "PRAGMA cache_size = 10; BEGIN; UPDATE runs SET status ="
                           " 'running'; CREATE TABLE big (x); INSERT INTO big WITH RECURSIVE"
                           " c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500)"
                           " SELECT randomblob(4000) FROM c;", NULL, NULL, NULL) != SQLITE_OK)
        _exit (1);
      _exit (0);   /* killed: no COMMIT, no close */
    }
  int status = 0;
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_autofree char *journal = g_strconcat (db, "-journal", NULL);
  g_assert_true (g_file_test (journal, G_FILE_TEST_IS_REGULAR));
  expect_bad (db, "unfinished transaction");
  /* read-only: the journal is still there, the file not rolled back */
  g_assert_true (g_file_test (journal, G_FILE_TEST_IS_REGULAR));
}

/* A database with more runs with spans than one plot draws timelines of
 * (each costs a gnuplot): the first SIM_PLOT_MAX_TIMELINES are drawn, one line
 * says how many more were skipped. */
static void
test_many_timelines (void)
{
  int n = SIM_PLOT_MAX_TIMELINES + 3;
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < n; i++)
    g_ptr_array_add (names, g_strdup_printf ("t policy.consistency=v%d", i));
  GPtrArray *values = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < n; i++)
    g_ptr_array_add (values, g_strdup_printf ("v%d", i));
  const char *actors[] = { "worker0", NULL };
  g_autofree char *dir = g_build_filename (tmpdir, "many", NULL);
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  g_autofree char *db = g_build_filename (dir, "many.db", NULL);
  make_trace (db, n, (const char *const *) names->pdata, NULL,
              (const char *const *) values->pdata, actors);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "plot", db, NULL), ==, 0);
  for (int i = 1; i <= n; i++)
    {
      g_autofree char *f = g_strdup_printf ("%s/many-timeline-run%d.png", dir, i);
      g_assert_cmpint (g_file_test (f, G_FILE_TEST_EXISTS), ==, i <= SIM_PLOT_MAX_TIMELINES);
    }
  g_autofree char *line = g_strdup_printf ("skipped timeline: %d more runs with spans; the first"
                                           " %d are drawn\n", n - SIM_PLOT_MAX_TIMELINES,
                                           SIM_PLOT_MAX_TIMELINES);
  g_assert_nonnull (strstr (o, line));
  g_ptr_array_unref (names);
  g_ptr_array_unref (values);
  sim_remove_tree (dir);
}

/* --- a line per job ------------------------------------------------------ */

/* Two real-math jobs (softmax) sharing a star from the start, so that their
 * evaluations interleave in time; with the [job] sections cut, a run of
 * one job. */
static const char jobs_common[] =
  "[scenario]\nname = pair\niterations = 4\nseed = 5\n"
  "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[model]\nkind = softmax\nbatch = 16\n[policy]\nkind = allreduce\n";

/* Points $DTSIM_GNUPLOT at a script that copies what each figure is drawn
 * from (vars.gp and the data files of the private folder) into
 * CAPTURE/TEMPLATE/ before running the real gnuplot; returns CAPTURE. */
static char *
capture_gnuplot (const char *name)
{
  g_autofree char *script = g_strdup_printf ("%s/%s.sh", tmpdir, name);
  char *capture = g_strdup_printf ("%s/%s", tmpdir, name);
  g_autofree char *text
    = g_strdup_printf ("#!/bin/sh\nd='%s'/$(basename \"$2\" .gp)\n"
                       "mkdir -p \"$d\" && cp \"$1\" \"$(dirname \"$1\")\"/*.tsv \"$d\"/ &&"
                       " exec '%s' \"$@\"\n", capture, gnuplot ());
  g_assert_true (g_file_set_contents (script, text, -1, NULL));
  g_assert_cmpint (g_chmod (script, 0700), ==, 0);
  g_setenv ("DTSIM_GNUPLOT", script, TRUE);
  return capture;
}

/* The loss-time data `dtsim plot` writes for the metrics rows of run 1
 * whose job is `job` (NULL: the run's own), as the formula: sim_time TAB
 * loss at 17 digits, by time then step. */
static GString *
expected_block (const char *db, const char *job)
{
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_prepare_v2 (h, job ? "SELECT sim_time, loss FROM metrics WHERE"
                                           " run_id = 1 AND loss IS NOT NULL AND job = ?"
                                           " ORDER BY sim_time, step"
                                           : "SELECT sim_time, loss FROM metrics WHERE"
                                           " run_id = 1 AND loss IS NOT NULL"
                                           " ORDER BY sim_time, step", -1, &st, NULL),
                   ==, SQLITE_OK);
  if (job)
    sqlite3_bind_text (st, 1, job, -1, SQLITE_STATIC);
  GString *s = g_string_new (NULL);
  while (sqlite3_step (st) == SQLITE_ROW)
    g_string_append_printf (s, "%.17g\t%.17g\n", sqlite3_column_double (st, 0),
                            sqlite3_column_double (st, 1));
  sqlite3_finalize (st);
  sqlite3_close (h);
  g_assert_cmpuint (s->len, >, 0);
  return s;
}

/* Plots `db` with a capturing gnuplot named `name`: loss-time's data and
 * variables in *data and *vars. */
static void
plot_captured (const char *db, const char *name, char **data, char **vars)
{
  g_autofree char *capture = capture_gnuplot (name);
  g_autofree char *o = NULL, *e = NULL;
  int code = dtsim (&o, &e, "plot", db, "-o", capture, "--format", "svg", NULL);
  g_unsetenv ("DTSIM_GNUPLOT");
  if (code != 0)
    g_error ("dtsim plot: %s", e);
  g_autofree char *d = g_strdup_printf ("%s/loss-time/metric.tsv", capture);
  g_autofree char *v = g_strdup_printf ("%s/loss-time/vars.gp", capture);
  g_assert_true (g_file_get_contents (d, data, NULL, NULL));
  g_assert_true (g_file_get_contents (v, vars, NULL, NULL));
}

/* A run of two jobs draws a line per job, titled "LABEL: job NAME", each
 * the job's own metrics rows. */
static void
test_jobs_lines (void)
{
  g_autofree char *text
    = g_strconcat (jobs_common, "[job a]\ncluster.workers = 2\n"
                   "[job b]\ncluster.workers = 2\nmodel.batch = 8\n", NULL);
  g_autofree char *db = test_run_text (tmpdir, text, "pair");
  /* the jobs' evaluations interleave: one line by run would zigzag */
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(DISTINCT job) FROM metrics"), ==, 2);
  g_autofree char *data = NULL, *vars = NULL;
  plot_captured (db, "cap-pair", &data, &vars);
  g_autoptr (GString) a = expected_block (db, "a"), b = expected_block (db, "b");
  g_autofree char *want = g_strconcat (a->str, "\n\n", b->str, NULL);
  g_assert_cmpstr (data, ==, want);
  g_assert_nonnull (strstr (vars, "nruns = 2\n"));
  g_assert_nonnull (strstr (vars, "titles[1] = 'pair: job a'\n"));
  g_assert_nonnull (strstr (vars, "titles[2] = 'pair: job b'\n"));
}

/* A run of one job draws what it drew before the job column: one line of
 * every metrics row of the run, titled by the run; a trace without the
 * column (schema 12) draws the same. */
static void
test_single_job_unchanged (void)
{
  g_autofree char *text
    = g_strconcat (jobs_common, "[cluster]\nworkers = 2\n", NULL);
  g_autofree char *db = test_run_text (tmpdir, text, "single");
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM metrics WHERE job IS NOT NULL"),
                     ==, 0);
  g_autofree char *data = NULL, *vars = NULL;
  plot_captured (db, "cap-single", &data, &vars);
  g_autoptr (GString) all = expected_block (db, NULL);
  g_assert_cmpstr (data, ==, all->str);
  g_assert_nonnull (strstr (vars, "nruns = 1\n"));
  g_assert_nonnull (strstr (vars, "titles[1] = 'pair'\n"));
  g_assert_null (strstr (vars, "job"));
  /* the same trace as version 12 wrote it: no job column */
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_autofree char *old = g_build_filename (tmpdir, "single12.db", NULL);
  g_assert_true (g_file_get_contents (db, &bytes, &len, NULL));
  g_assert_true (g_file_set_contents (old, bytes, (gssize) len, NULL));
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open (old, &h), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (h, "ALTER TABLE metrics DROP COLUMN job;"
                                    " PRAGMA user_version = 12", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (h);
  g_assert_cmpfloat (test_query_number (old, "SELECT COUNT(*) FROM pragma_table_info('metrics')"
                                             " WHERE name = 'job'"), ==, 0);
  g_autofree char *data12 = NULL, *vars12 = NULL;
  plot_captured (old, "cap-single12", &data12, &vars12);
  g_assert_cmpstr (data12, ==, data);
  g_assert_nonnull (strstr (vars12, "titles[1] = 'pair'\n"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-plot-test-XXXXXX", NULL);
  g_test_add_func ("/plot/amdahl/exact", test_amdahl_exact);
  g_test_add_func ("/plot/amdahl/noisy", test_amdahl_noisy);
  g_test_add_func ("/plot/time-to-target", test_time_to_target);
  g_test_add_func ("/plot/time-to-target/no-table", test_time_to_target_no_table);
  g_test_add_func ("/plot/figures", test_figures);
  g_test_add_func ("/plot/skipped", test_skipped);
  g_test_add_func ("/plot/global-batch", test_global_batch);
  g_test_add_func ("/plot/no-gnuplot", test_no_gnuplot);
  g_test_add_func ("/plot/hostile/quote", test_quote);
  g_test_add_func ("/plot/hostile/quote-gnuplot", test_quote_gnuplot);
  g_test_add_func ("/plot/hostile/scenario-name", test_hostile_scenario_name);
  g_test_add_func ("/plot/hostile/file-name", test_hostile_file_name);
  g_test_add_func ("/plot/hostile/labels", test_hostile_labels);
  g_test_add_func ("/plot/unfinished-runs", test_unfinished_runs);
  g_test_add_func ("/plot/bad/files", test_bad_files);
  g_test_add_func ("/plot/bad/not-finite", test_not_finite);
  g_test_add_func ("/plot/bad/killed-mid-write", test_killed_mid_write);
  g_test_add_func ("/plot/many-timelines", test_many_timelines);
  g_test_add_func ("/plot/jobs/lines", test_jobs_lines);
  g_test_add_func ("/plot/jobs/single-unchanged", test_single_job_unchanged);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
