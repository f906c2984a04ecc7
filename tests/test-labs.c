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
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  if (sqlite3_prepare_v2 (h, sql, -1, &st, NULL) != SQLITE_OK)
    g_error ("%s: %s", sql, sqlite3_errmsg (h));
  if (sqlite3_step (st) != SQLITE_ROW || sqlite3_column_type (st, 0) == SQLITE_NULL)
    g_error ("no value: %s", sql);
  double v = sqlite3_column_double (st, 0);
  sqlite3_finalize (st);
  sqlite3_close (h);
  return v;
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-labs-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/labs/allreduce/1-latency-bound", lab4_latency_bound);
  g_test_add_func ("/labs/allreduce/2-bandwidth-bound", lab4_bandwidth_bound);
  g_test_add_func ("/labs/allreduce/3-one-server", lab4_one_server);
  g_test_add_func ("/labs/allreduce/4-sharded", lab4_sharded);
  g_test_add_func ("/labs/allreduce/5-winners", lab4_winners);
  int rc = g_test_run ();
  g_autoptr (GDir) d = g_dir_open (tmpdir, 0, NULL);
  for (const char *f; d && (f = g_dir_read_name (d));)
    {
      g_autofree char *p = g_build_filename (tmpdir, f, NULL);
      g_unlink (p);
    }
  g_rmdir (tmpdir);
  return rc;
}
