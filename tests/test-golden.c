/*
 * test-golden.c — golden summaries: the exact timing of one scenario per
 * training schedule, compared with tests/golden/NAME.txt.
 *
 * Each scenario runs through the dtsim command; the summary holds only
 * quantities that no float of the model's math can change (simulated times,
 * event and iteration counts), each run on one line, formatted here in C
 * (%.17g keeps every bit of a double), so the files are the same on every
 * host and with every SQLite.  `make regen-golden` runs this program with
 * DTSIM_REGEN_GOLDEN=1, which writes the files instead of comparing: do it
 * only for a change of simulated behaviour meant and explained in its commit.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "tests/util.h"

static char *tmpdir;

typedef struct {
  const char *name;      /* tests/golden/NAME.txt */
  const char *scenario;  /* in tests/data */
} Golden;

static const Golden goldens[] = {
  { "small", "small.ini" },                       /* parameter server, BSP and async */
  { "allreduce", "golden-allreduce.ini" },        /* ring, tree, halving-doubling */
  { "pipeline", "golden-pipeline.ini" },          /* GPipe and 1F1B, two replicas */
  { "localsgd", "golden-localsgd.ini" },          /* local SGD, two sync periods */
};

/* One line per run of the database at `db`: name | sim_time | events |
 * iterations | updates | compute | comm | wait. */
static char *
summary (const char *db)
{
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (h, "SELECT name, sim_time, events, iterations, updates,"
                                       " compute, comm, wait FROM runs ORDER BY id", -1, &st,
                                       NULL), ==, SQLITE_OK);
  GString *s = g_string_new (NULL);
  int rc;
  while ((rc = sqlite3_step (st)) == SQLITE_ROW)
    g_string_append_printf (s, "%s | %.17g | %lld | %lld | %lld | %.17g | %.17g | %.17g\n",
                            (const char *) sqlite3_column_text (st, 0),
                            sqlite3_column_double (st, 1),
                            (long long) sqlite3_column_int64 (st, 2),
                            (long long) sqlite3_column_int64 (st, 3),
                            (long long) sqlite3_column_int64 (st, 4),
                            sqlite3_column_double (st, 5), sqlite3_column_double (st, 6),
                            sqlite3_column_double (st, 7));
  g_assert_cmpint (rc, ==, SQLITE_DONE);
  sqlite3_finalize (st);
  sqlite3_close (h);
  return g_string_free (s, FALSE);
}

static void
test_golden (gconstpointer data)
{
  const Golden *g = data;
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *ini = g_build_filename (g_getenv ("DTSIM_TEST_DATA"), g->scenario, NULL);
  g_autofree char *dbname = g_strdup_printf ("%s.db", g->name);
  g_autofree char *db = g_build_filename (tmpdir, dbname, NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (test_run_dtsim (tmpdir, &o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autofree char *got = summary (db);
  g_autofree char *file = g_strdup_printf ("%s.txt", g->name);
  g_autofree char *path = g_build_filename (src, "tests", "golden", file, NULL);
  if (g_getenv ("DTSIM_REGEN_GOLDEN"))
    {
      g_autoptr (GError) error = NULL;
      g_assert_true (g_file_set_contents (path, got, -1, &error));
      g_test_message ("wrote %s", path);
      return;
    }
  g_autofree char *want = NULL;
  g_assert_true (g_file_get_contents (path, &want, NULL, NULL));
  g_assert_cmpstr (got, ==, want);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-golden-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  for (gsize i = 0; i < G_N_ELEMENTS (goldens); i++)
    {
      g_autofree char *name = g_strdup_printf ("/golden/%s", goldens[i].name);
      g_test_add_data_func (name, &goldens[i], test_golden);
    }
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
