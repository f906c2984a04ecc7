/*
 * test-cli.c — end-to-end tests of the dtsim command: determinism of the
 * trace, the trace's contents, the JSON report, bad input (exit 2, one line
 * naming the file and key, no database left behind), and plotting.
 *
 * The binary and the test scenarios come from DTSIM_BIN and DTSIM_TEST_DATA,
 * which `make check` sets.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "sim/trace.h"
#include "tests/util.h"

static char *tmpdir;

#define GOLDEN_QUERY \
  "SELECT name, printf('%.17g', sim_time), events, iterations, updates," \
  " printf('%.17g', compute), printf('%.17g', comm), printf('%.17g', wait)" \
  " FROM runs ORDER BY id"

static char *
data (const char *name)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_assert_nonnull (d);
  return g_build_filename (d, name, NULL);
}

static char *
tmp (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* dtsim with the arguments (NULL-terminated), run in tmpdir. */
#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

/* Every row of every table, as text, wall_time excluded; rows by run, and
 * within a run in the order they were written (runs of a parallel sweep may
 * interleave in rowid order). */
static char *
dump (const char *path)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  GString *s = g_string_new (NULL);
  const char *queries[] = {
    "SELECT id, scenario, name, seed, status, error, stop, sim_time, events, iterations,"
    " updates, final_loss, final_accuracy, compute, comm, wait, version FROM runs ORDER BY id",
    "SELECT * FROM params ORDER BY run_id, rowid",
    "SELECT * FROM metrics ORDER BY run_id, rowid",
    "SELECT * FROM iterations ORDER BY run_id, rowid",
    "SELECT * FROM spans ORDER BY run_id, rowid",
    "SELECT * FROM messages ORDER BY run_id, rowid",
    "SELECT * FROM buckets ORDER BY run_id, rowid",
    "SELECT * FROM failures ORDER BY run_id, rowid",
    "SELECT * FROM stages ORDER BY run_id, rowid",
  };
  for (gsize q = 0; q < G_N_ELEMENTS (queries); q++)
    {
      sqlite3_stmt *st = NULL;
      g_assert_cmpint (sqlite3_prepare_v2 (db, queries[q], -1, &st, NULL), ==, SQLITE_OK);
      while (sqlite3_step (st) == SQLITE_ROW)
        {
          for (int c = 0; c < sqlite3_column_count (st); c++)
            {
              /* %.17g keeps every bit of a double */
              if (sqlite3_column_type (st, c) == SQLITE_FLOAT)
                g_string_append_printf (s, "%.17g|", sqlite3_column_double (st, c));
              else
                g_string_append_printf (s, "%s|", (const char *) sqlite3_column_text (st, c));
            }
          g_string_append_c (s, '\n');
        }
      sqlite3_finalize (st);
      g_string_append (s, "--\n");
    }
  sqlite3_close (db);
  return g_string_free (s, FALSE);
}

static gint64
count (const char *path, const char *sql)
{
  return (gint64) test_query_number (path, sql);
}

static void
test_deterministic (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *a = tmp ("a.db"), *b = tmp ("b.db");
  g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--quiet", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--quiet", NULL), ==, 0);
  g_autofree char *da = dump (a), *db = dump (b);
  g_assert_cmpstr (da, ==, db);
  /* the dump is not trivially equal: every table has rows */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs"), ==, 2);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM metrics"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM spans"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages"), >, 0);
  /* a different seed gives a different trace */
  g_autofree char *c = tmp ("c.db");
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", c, "--quiet", "--set", "scenario.seed=8",
                          NULL), ==, 0);
  g_autofree char *dc = dump (c);
  g_assert_cmpstr (da, !=, dc);
}

/* A sweep run on 1 and on 3 threads writes the same database; the summary
 * stays in point order and each finished point prints one line. */
static void
test_jobs (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *a = tmp ("j1.db"), *b = tmp ("j3.db");
  g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--jobs", "1", "--set",
                          "sweep.cluster.workers=2,4,8", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--jobs", "3", "--set",
                          "sweep.cluster.workers=2,4,8", NULL), ==, 0);
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 2 * 3);
  g_autofree char *da = dump (a), *db = dump (b);
  g_assert_cmpstr (da, ==, db);
  /* run ids follow point order: run 3 is the third point */
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM params WHERE run_id = 3 AND key ="
                          " 'cluster.workers' AND value = '8'"), ==, 1);
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM params WHERE run_id = 4 AND key ="
                          " 'policy.consistency' AND value = 'async'"), ==, 1);
  /* the table lists the points in order, whatever finished first */
  const char *bsp8 = strstr (o2, "consistency=bsp cluster.workers=8");
  const char *async2 = strstr (o2, "consistency=async cluster.workers=2");
  g_assert_nonnull (bsp8);
  g_assert_nonnull (async2);
  g_assert_cmpint (bsp8 - o2, <, async2 - o2);
  /* not a terminal: one line per finished point */
  for (int i = 1; i <= 6; i++)
    {
      g_autofree char *line = g_strdup_printf ("run %d/6 done: small ", i);
      g_assert_nonnull (strstr (e2, line));
    }
  /* --jobs 0 is bad usage */
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", a, "--jobs", "0", NULL), ==, 2);
  g_assert_nonnull (strstr (e3, "--jobs"));
}

/* The tables only some policies write (a pipeline's stages, a parameter
 * server's failures) come through a parallel sweep as through a serial one. */
static void
test_jobs_tables (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  const char *names[] = { "pipeline", "stragglers" };
  const char *counts[] = { "SELECT COUNT(*) FROM stages", "SELECT COUNT(*) FROM failures" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *file = g_strdup_printf ("%s.ini", names[i]);
      g_autofree char *ini = g_build_filename (src, "scenarios", file, NULL);
      g_autofree char *a = tmp ("t1.db"), *b = tmp ("t2.db");
      g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
      g_unlink (a);
      g_unlink (b);
      g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--jobs", "1", "--quiet", NULL), ==, 0);
      g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--jobs", "2", "--quiet", NULL), ==, 0);
      /* every run has rows: one per stage, or one per failure */
      gint64 runs = count (b, "SELECT COUNT(*) FROM runs");
      g_assert_cmpint (count (b, counts[i]), >=, runs);
      g_autofree char *da = dump (a), *db = dump (b);
      g_assert_cmpstr (da, ==, db);
    }
}

/* A point that fails at run time (its data files are corrupt) marks its run
 * failed; the other points started with it finish; the exit code is 2 as for
 * any input error found while running. */
static void
test_jobs_failure (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *a = tmp ("jf.db"), *bad = tmp ("bad-fashion");
  /* the loader checks the files' headers (magic numbers, image counts);
   * these claim 100 images each but hold none, so reading them fails */
  g_assert_cmpint (g_mkdir_with_parents (bad, 0755), ==, 0);
  const char *files[] = { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" };
  static const guint8 images[16] = { 0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 28, 0, 0, 0, 28 };
  static const guint8 labels[8] = { 0, 0, 8, 1, 0, 0, 0, 100 };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *f = g_build_filename (bad, files[i], NULL);
      gboolean img = strstr (files[i], "images") != NULL;
      g_assert_true (g_file_set_contents (f, (const char *) (img ? images : labels),
                                          img ? sizeof images : sizeof labels, NULL));
    }
  g_autofree char *set_dir = g_strdup_printf ("model.data_dir=%s", bad);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, "--jobs", "2", "--set",
                          "sweep.model.dataset=synthetic,fashion-mnist", "--set", set_dir,
                          NULL), ==, 2);
  g_assert_nonnull (strstr (e, "dtsim: [model] data_dir: "));
  g_assert_nonnull (strstr (e, "failed: small policy.consistency=bsp model.dataset=fashion-mnist"));
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'failed'"
                          " AND error IS NOT NULL"), >=, 1);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), ==, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), >=, 1);
}

static void
test_trace_contents (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *a = tmp ("t.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, NULL), ==, 0);
  /* the summary table names each run */
  g_assert_nonnull (strstr (o, "small policy.consistency=bsp"));
  g_assert_nonnull (strstr (o, "small policy.consistency=async"));
  g_assert_cmpint (count (a, "PRAGMA user_version"), ==, SIM_TRACE_SCHEMA_VERSION);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 2);
  /* 20 rounds of 4 workers */
  g_assert_cmpint (count (a, "SELECT MIN(updates) FROM runs"), ==, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM params WHERE run_id = 1 AND key ="
                          " 'policy.consistency' AND value = 'bsp'"), ==, 1);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM params WHERE run_id = 1"), >=, 30);
  /* BSP: every worker has every iteration, and iterations add up */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations WHERE run_id = 1"), ==, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations WHERE abs((end - start)"
                          " - (compute + comm + wait)) > 1e-12"), ==, 0);
  /* messages use the topology's host names; each gradient crosses once */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages WHERE run_id = 1 AND tag = 'grad'"
                          " AND src LIKE 'worker%' AND dst = 'server0'"), >=, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages WHERE end < start"), ==, 0);
  /* the loss goes down */
  g_assert_cmpint (count (a, "SELECT (SELECT loss FROM metrics WHERE run_id = 1 ORDER BY step"
                          " DESC LIMIT 1) < (SELECT loss FROM metrics WHERE run_id = 1 AND"
                          " step = 0)"), ==, 1);
}

static void
test_json (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *a = tmp ("j.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, "--json", "--set",
                          "policy.consistency=ssp", NULL), ==, 0);
  g_autoptr (GError) error = NULL;
  const char *keys[] = { "\"sim_time\": ", "\"iterations\": 20", "\"final_loss\": ",
                         "\"final_accuracy\": ", "\"events\": ", "\"wall_time\": ",
                         "\"db\": " };
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    g_assert_nonnull (strstr (o, keys[i]));
  /* --set of a swept key fixes it: one run */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs"), ==, 1);
  g_assert_cmpint (o[0], ==, '{');
  g_assert_cmpint (strchr (o, '\n') - o, ==, (long) strlen (o) - 1);
}

/* Bad input: exit 2, one line naming the file and the key, no database. */
static void
check_bad (const char *file, const char *const *expect, const char *set)
{
  g_autofree char *ini = data (file);
  g_autofree char *db = tmp ("bad.db");
  g_autofree char *o = NULL, *e = NULL;
  int code = set ? dtsim (&o, &e, "run", ini, "-o", db, "--set", set, NULL)
                 : dtsim (&o, &e, "run", ini, "-o", db, NULL);
  g_assert_cmpint (code, ==, 2);
  g_assert_cmpstr (o, ==, "");
  g_assert_true (g_str_has_suffix (e, "\n"));
  g_assert_true (strchr (e, '\n') == e + strlen (e) - 1); /* one line */
  for (int i = 0; expect[i]; i++)
    if (!strstr (e, expect[i]))
      g_error ("'%s' not in the message: %s", expect[i], e);
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
  /* check says the same */
  g_autofree char *o2 = NULL, *e2 = NULL;
  code = set ? dtsim (&o2, &e2, "check", ini, "--set", set, NULL)
             : dtsim (&o2, &e2, "check", ini, NULL);
  g_assert_cmpint (code, ==, 2);
  g_assert_cmpstr (e2, ==, e);
}

static void
test_bad_unknown_key (void)
{
  const char *expect[] = { "unknown-key.ini", "[network] bandwith", "bandwidth", NULL };
  check_bad ("unknown-key.ini", expect, NULL);
}

static void
test_bad_negative_bandwidth (void)
{
  const char *expect[] = { "negative-bandwidth.ini", "[network] bandwidth", "-10Gbps", NULL };
  check_bad ("negative-bandwidth.ini", expect, NULL);
}

static void
test_bad_unit (void)
{
  const char *expect[] = { "bad-unit.ini", "[network] latency", "5GB", NULL };
  check_bad ("bad-unit.ini", expect, NULL);
}

static void
test_bad_missing_folder (void)
{
  /* the scenario's own [trace] db points into a missing folder */
  g_autofree char *ini = data ("missing-file.ini");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, NULL), ==, 2);
  g_assert_nonnull (strstr (e, "missing-file.ini"));
  g_assert_nonnull (strstr (e, "[trace] db"));
  g_assert_nonnull (strstr (e, "no-such-folder"));
  g_autofree char *ghost = tmp ("no-such-folder");
  g_assert_false (g_file_test (ghost, G_FILE_TEST_EXISTS));
}

static void
test_bad_missing_scenario (void)
{
  const char *expect[] = { "no-such-scenario.ini", "no such scenario file", NULL };
  check_bad ("no-such-scenario.ini", expect, NULL);
}

static void
test_bad_set (void)
{
  const char *expect[] = { "--set", "[cluster] wrokers", NULL };
  check_bad ("small.ini", expect, "cluster.wrokers=3");
  const char *expect2[] = { "small.ini", "[cluster] workers", "0", NULL };
  check_bad ("small.ini", expect2, "cluster.workers=0");
}

static void
test_bad_link (void)
{
  const char *expect[] = { "small.ini", "[network] links", "nolink", NULL };
  check_bad ("small.ini", expect, "network.links=nolink 1Gbps");
  const char *expect2[] = { "small.ini", "[network] links", "worker1.up", "fast", NULL };
  check_bad ("small.ini", expect2, "network.links=worker1.up fast");
  const char *expect3[] = { "small.ini", "[network] oversubscription", "0.5", NULL };
  check_bad ("small.ini", expect3, "network.oversubscription=0.5");
}

/* A run that fails validation keeps an earlier database intact. */
static void
test_bad_keeps_old_db (void)
{
  g_autofree char *ini = data ("small.ini"), *bad = data ("unknown-key.ini");
  g_autofree char *db = tmp ("keep.db");
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autofree char *before = dump (db);
  g_assert_cmpint (dtsim (&o2, &e2, "run", bad, "-o", db, NULL), ==, 2);
  g_autofree char *after = dump (db);
  g_assert_cmpstr (before, ==, after);
}

static void
test_check_main_scenario (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *ini = g_build_filename (src, "scenarios", "consistency.ini", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "check", ini, NULL), ==, 0);
  g_assert_nonnull (strstr (o, "3 runs"));
  g_assert_nonnull (strstr (o, "star"));
  g_assert_nonnull (strstr (o, "9 hosts"));
}

/* Golden summary: the timing of tests/data/small.ini, compared exactly.  It
 * depends on no float of the model's math, so it is the same on every host;
 * a change in simulated behaviour shows here and is explained in its commit
 * (regenerate: see tests/golden/README). */
static void
test_golden (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *db = tmp ("golden.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (h, GOLDEN_QUERY, -1, &st, NULL), ==, SQLITE_OK);
  GString *got = g_string_new (NULL);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      for (int c = 0; c < sqlite3_column_count (st); c++)
        g_string_append_printf (got, "%s%s", c ? " | " : "", sqlite3_column_text (st, c));
      g_string_append_c (got, '\n');
    }
  sqlite3_finalize (st);
  sqlite3_close (h);
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *path = g_build_filename (src, "tests", "golden", "small.txt", NULL);
  g_autofree char *want = NULL;
  g_assert_true (g_file_get_contents (path, &want, NULL, NULL));
  g_assert_cmpstr (got->str, ==, want);
  g_string_free (got, TRUE);
}

/* docs/scenarios.md holds the reference the program prints, verbatim. */
static void
test_keys_documented (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *doc = g_build_filename (src, "docs", "scenarios.md", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (doc, &text, NULL, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "keys", NULL), ==, 0);
  g_assert_nonnull (strstr (o, "| `bandwidth` |"));
  if (!strstr (text, o))
    g_error ("docs/scenarios.md is out of date: regenerate its key tables with `dtsim keys`");
}

static void
test_plot (void)
{
  g_autofree char *ini = data ("small.ini");
  g_autofree char *db = tmp ("p.db");
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, NULL), ==, 0);
  const char *files[] = { "p-loss-time.png", "p-timeline-run1.png", "p-timeline-run2.png" };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *f = tmp (files[i]);
      g_autofree char *contents = NULL;
      gsize len = 0;
      g_assert_true (g_file_get_contents (f, &contents, &len, NULL));
      g_assert_cmpuint (len, >, 1000);
      g_assert_cmpint (memcmp (contents, "\x89PNG", 4), ==, 0);
      g_assert_nonnull (strstr (o2, files[i]));
    }
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "plot", db, "--format", "svg", NULL), ==, 0);
  g_autofree char *svg = tmp ("p-loss-time.svg");
  g_autofree char *contents = NULL;
  g_assert_true (g_file_get_contents (svg, &contents, NULL, NULL));
  g_assert_nonnull (strstr (contents, "<svg"));
  g_assert_nonnull (strstr (contents, "simulated time (s)"));
  /* a missing database is bad input */
  g_autofree char *o4 = NULL, *e4 = NULL;
  g_assert_cmpint (dtsim (&o4, &e4, "plot", "nothing.db", NULL), ==, 2);
  g_assert_nonnull (strstr (e4, "nothing.db"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-cli-XXXXXX", NULL);
  g_test_add_func ("/cli/run/deterministic", test_deterministic);
  g_test_add_func ("/cli/run/jobs", test_jobs);
  g_test_add_func ("/cli/run/jobs-failure", test_jobs_failure);
  g_test_add_func ("/cli/run/jobs-tables", test_jobs_tables);
  g_test_add_func ("/cli/run/trace-contents", test_trace_contents);
  g_test_add_func ("/cli/run/json", test_json);
  g_test_add_func ("/cli/bad/unknown-key", test_bad_unknown_key);
  g_test_add_func ("/cli/bad/negative-bandwidth", test_bad_negative_bandwidth);
  g_test_add_func ("/cli/bad/unit", test_bad_unit);
  g_test_add_func ("/cli/bad/missing-folder", test_bad_missing_folder);
  g_test_add_func ("/cli/bad/missing-scenario", test_bad_missing_scenario);
  g_test_add_func ("/cli/bad/set", test_bad_set);
  g_test_add_func ("/cli/bad/keeps-old-db", test_bad_keeps_old_db);
  g_test_add_func ("/cli/bad/link", test_bad_link);
  g_test_add_func ("/cli/check/main-scenario", test_check_main_scenario);
  g_test_add_func ("/cli/plot/figures", test_plot);
  g_test_add_func ("/cli/docs/keys", test_keys_documented);
  g_test_add_func ("/cli/golden/small", test_golden);
  int rc = g_test_run ();
  test_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
