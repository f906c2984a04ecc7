/*
 * test-shipped.c — the trace of every shipped scenario stays the same, table
 * by table, to the last bit.
 *
 * Each scenario of scenarios/ and scenarios/validation/ (NAME.ini) is run as
 * a user runs it, `dtsim run scenarios/NAME.ini -o DB` from the source tree,
 * and every table of its database is digested (views/tracedigest.h: the exact
 * values of every row, all but runs.wall_time and runs.version) and compared
 * with tests/data/shipped-traces.txt.  A difference fails that scenario's
 * case, naming the scenario, the table and both row counts.  A scenario
 * without lines there fails too, as do lines of a scenario that is gone.
 *
 * The scenarios take minutes, so the case of each reports itself skipped,
 * the reason on its TAP line, when DTSIM_SKIP_SLOW is set: its value is the
 * reason (.ci/run sets it for the AddressSanitizer pass, which is ten times
 * slower and adds nothing here).  `make regen-shipped-traces` runs this
 * program with DTSIM_REGEN_SHIPPED=1, which writes the file instead of
 * comparing: do it only for a change of simulated behaviour that is meant,
 * and explain it in its commit.  The scenarios reading Fashion-MNIST need
 * Debian's dataset-fashion-mnist (bootstrap.sh installs it); without it
 * they fail with dtsim's line saying so, as tests/test-data.c does.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "views/tracedigest.h"
#include "tests/util.h"

#define EXPECTED "shipped-traces.txt"

/* The head of the file, written by the regeneration. */
static const char header[] =
  "# The trace of every shipped scenario (scenarios/*.ini and\n"
  "# scenarios/validation/*.ini), each run from the source tree as\n"
  "# `dtsim run SCENARIO -o DB`: one line per scenario and table,\n"
  "# SCENARIO TABLE ROWS SHA256, where tools/trace-digest DB prints the last\n"
  "# three (views/tracedigest.h says what a digest covers).  tests/test-shipped\n"
  "# compares them table by table.  Regenerate with\n"
  "# `make -C build regen-shipped-traces` only for a change of simulated\n"
  "# behaviour that is meant, and say why in its commit: a change that should\n"
  "# move no number (a refactoring) leaves this file as it is.\n";

static char *tmpdir;
static gboolean regen;
static GHashTable *expected;   /* scenario -> GPtrArray of SimTableDigest */
static GHashTable *written;    /* scenario -> its lines, when regenerating */

/* Reads tests/data/shipped-traces.txt into `expected`. */
static void
read_expected (void)
{
  expected = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                    (GDestroyNotify) g_ptr_array_unref);
  g_autofree char *path = test_data_path (EXPECTED);
  g_autofree char *text = NULL;
  if (regen && !g_file_test (path, G_FILE_TEST_EXISTS))
    return;
  text = test_read_file (path, NULL);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++)
    {
      if (lines[i][0] == '#' || lines[i][0] == '\0')
        continue;
      g_auto (GStrv) f = g_strsplit (lines[i], " ", -1);
      char *end = NULL;
      if (g_strv_length (f) != 4 || strlen (f[3]) != 64
          || (g_ascii_strtoll (f[2], &end, 10), *end != '\0'))
        g_error ("%s:%d: expected SCENARIO TABLE ROWS SHA256, found '%s'", path, i + 1,
                 lines[i]);
      GPtrArray *tables = g_hash_table_lookup (expected, f[0]);
      if (!tables)
        {
          tables = g_ptr_array_new_with_free_func ((GDestroyNotify) sim_table_digest_free);
          g_hash_table_insert (expected, g_strdup (f[0]), tables);
        }
      SimTableDigest *d = g_new0 (SimTableDigest, 1);
      d->table = g_strdup (f[1]);
      d->rows = g_ascii_strtoll (f[2], NULL, 10);
      d->sha256 = g_strdup (f[3]);
      g_ptr_array_add (tables, d);
    }
}

/* Orders the elements of a GPtrArray of strings. */
static int
cmp_path (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* The shipped scenarios, as paths from the source tree, sorted.
 * scenarios/hardware.ini is the hardware catalog, not a scenario. */
static GPtrArray *
shipped_scenarios (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  GPtrArray *list = g_ptr_array_new_with_free_func (g_free);
  static const char *const dirs[] = { "scenarios", "scenarios/validation" };
  for (gsize k = 0; k < G_N_ELEMENTS (dirs); k++)
    {
      g_autofree char *dir = g_build_filename (src, dirs[k], NULL);
      g_autoptr (GError) error = NULL;
      GDir *d = g_dir_open (dir, 0, &error);
      g_assert_no_error (error);
      const char *name;
      while ((name = g_dir_read_name (d)))
        if (g_str_has_suffix (name, ".ini")
            && !(k == 0 && strcmp (name, "hardware.ini") == 0))
          g_ptr_array_add (list, g_strdup_printf ("%s/%s", dirs[k], name));
      g_dir_close (d);
    }
  g_ptr_array_sort (list, cmp_path);
  return list;
}

static const SimTableDigest *
find_table (GPtrArray *tables, const char *name)
{
  for (guint i = 0; tables && i < tables->len; i++)
    {
      const SimTableDigest *d = g_ptr_array_index (tables, i);
      if (strcmp (d->table, name) == 0)
        return d;
    }
  return NULL;
}

/* One line per table where `got` and `want` differ (a table missing on one
 * side counts as differing), into `out`. */
static void
compare (const char *scenario, GPtrArray *got, GPtrArray *want, GString *out)
{
  for (guint pass = 0; pass < 2; pass++)
    {
      GPtrArray *side = pass == 0 ? got : want;
      for (guint i = 0; i < side->len; i++)
        {
          const SimTableDigest *s = g_ptr_array_index (side, i);
          const SimTableDigest *g = find_table (got, s->table);
          const SimTableDigest *w = find_table (want, s->table);
          if (pass == 1 && g)
            continue;   /* seen in the first pass */
          if (g && w && g->rows == w->rows && strcmp (g->sha256, w->sha256) == 0)
            continue;
          g_string_append_printf (out, "\n  %s: table %s: ", scenario, s->table);
          if (g)
            g_string_append_printf (out, "%" G_GINT64_FORMAT " rows", g->rows);
          else
            g_string_append (out, "absent");
          g_string_append (out, " now, ");
          if (w)
            g_string_append_printf (out, "%" G_GINT64_FORMAT " rows", w->rows);
          else
            g_string_append (out, "absent");
          g_string_append (out, " expected");
          if (g && w && g->rows == w->rows)
            g_string_append (out, " (same count, other values)");
        }
    }
}

static void
test_scenario (gconstpointer data)
{
  const char *scenario = data;
  const char *skip = g_getenv ("DTSIM_SKIP_SLOW");
  if (skip && *skip && !regen)
    {
      g_test_skip_printf ("DTSIM_SKIP_SLOW: %s", skip);
      return;
    }
  g_autofree char *name = g_strdelimit (g_strdup (scenario), "/", '-');
  g_autofree char *dbname = g_strdup_printf ("%s.db", name);
  g_autofree char *db = g_build_filename (tmpdir, dbname, NULL);
  g_autofree char *o = NULL, *e = NULL;
  int rc = test_run_dtsim (g_getenv ("DTSIM_SRCDIR"), &o, &e, "run", scenario, "-o", db,
                           "--quiet", NULL);
  if (rc != 0)
    {
      g_test_fail_printf ("%s: dtsim run exited %d: %s", scenario, rc, e);
      return;
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) got = sim_trace_digest (db, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_remove (db), ==, 0);
  if (regen)
    {
      GString *lines = g_string_new (NULL);
      for (guint i = 0; i < got->len; i++)
        {
          const SimTableDigest *d = g_ptr_array_index (got, i);
          g_string_append_printf (lines, "%s %s %" G_GINT64_FORMAT " %s\n", scenario,
                                  d->table, d->rows, d->sha256);
        }
      g_hash_table_insert (written, g_strdup (scenario), g_string_free (lines, FALSE));
      return;
    }
  GPtrArray *want = g_hash_table_lookup (expected, scenario);
  if (!want)
    {
      g_test_fail_printf ("%s: no lines in tests/data/" EXPECTED "; a new scenario gets"
                          " them from `make regen-shipped-traces`", scenario);
      return;
    }
  g_autoptr (GString) diff = g_string_new (NULL);
  compare (scenario, got, want, diff);
  if (diff->len)
    g_test_fail_printf ("the trace differs from tests/data/" EXPECTED ":%s", diff->str);
}

/* Every scenario the file names is still shipped. */
static void
test_listed (gconstpointer data)
{
  GPtrArray *shipped = (GPtrArray *) data;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, expected);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (!g_ptr_array_find_with_equal_func (shipped, key, g_str_equal, NULL))
      g_test_fail_printf ("tests/data/" EXPECTED " has lines of %s, which is not shipped;"
                          " remove them", (const char *) key);
}

/* Runs `sql` on the database file `db`. */
static void
exec_sql (const char *db, const char *sql)
{
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open (db, &h), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (h, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (h);
}

/* The digest itself, on a small scenario: runs.wall_time and runs.version
 * are left out, a change of one bit of one real changes its table's digest
 * alone, and the digest does not depend on the rows' physical order. */
static void
test_digest_bits (void)
{
  g_autofree char *db = g_build_filename (tmpdir, "bits.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (test_run_dtsim (g_getenv ("DTSIM_SRCDIR"), &o, &e, "run",
                                   "scenarios/amdahl.ini", "-o", db, "--quiet", NULL), ==, 0);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) before = sim_trace_digest (db, &error);
  g_assert_no_error (error);
  exec_sql (db, "UPDATE runs SET wall_time = wall_time + 1, version = 'other';"
                /* the same rows, written in the reverse order */
                "CREATE TABLE r AS SELECT * FROM iterations ORDER BY rowid DESC;"
                "DELETE FROM iterations; INSERT INTO iterations SELECT * FROM r; DROP TABLE r;");
  g_autoptr (GPtrArray) same = sim_trace_digest (db, &error);
  g_assert_no_error (error);
  g_autoptr (GString) diff = g_string_new (NULL);
  compare ("amdahl", same, before, diff);
  g_assert_cmpstr (diff->str, ==, "");
  /* the next double above one iteration's end: one bit */
  double end = test_query_number (db, "SELECT \"end\" FROM iterations WHERE rowid = 1");
  g_autofree char *sql = g_strdup_printf ("UPDATE iterations SET \"end\" = %.17g"
                                          " WHERE rowid = 1", nextafter (end, G_MAXDOUBLE));
  exec_sql (db, sql);
  g_autoptr (GPtrArray) moved = sim_trace_digest (db, &error);
  g_assert_no_error (error);
  compare ("amdahl", moved, before, diff);
  g_autofree char *rows = g_strdup_printf ("\n  amdahl: table iterations: %" G_GINT64_FORMAT
                                           " rows now, %" G_GINT64_FORMAT " rows expected (same"
                                           " count, other values)",
                                           find_table (before, "iterations")->rows,
                                           find_table (before, "iterations")->rows);
  g_assert_cmpstr (diff->str, ==, rows);
  g_assert_cmpint (g_remove (db), ==, 0);
}

/* Writes the file from `written`, in the order of `shipped`. */
static void
write_expected (GPtrArray *shipped)
{
  GString *text = g_string_new (header);
  for (guint i = 0; i < shipped->len; i++)
    {
      const char *lines = g_hash_table_lookup (written, g_ptr_array_index (shipped, i));
      g_assert_nonnull (lines);
      g_string_append (text, lines);
    }
  g_autofree char *path = test_data_path (EXPECTED);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, text->str, (gssize) text->len, &error));
  g_assert_no_error (error);
  g_print ("# wrote %s\n", path);
  g_string_free (text, TRUE);
}

int
main (int argc, char **argv)
{
  /* --keep-going: every scenario runs after one failed, so that a change
   * shows all it moves at once */
  g_autofree char **args = g_new0 (char *, argc + 2);
  for (int i = 0; i < argc; i++)
    args[i] = argv[i];
  args[argc] = (char *) "--keep-going";
  int n = argc + 1;
  char **a = args;
  g_test_init (&n, &a, NULL);
  regen = g_getenv ("DTSIM_REGEN_SHIPPED") != NULL;
  tmpdir = g_dir_make_tmp ("dtsim-shipped-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  read_expected ();
  written = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GPtrArray) shipped = shipped_scenarios ();
  if (!regen)
    {
      g_test_add_data_func ("/shipped/listed", shipped, test_listed);
      g_test_add_func ("/shipped/digest-bits", test_digest_bits);
    }
  for (guint i = 0; i < shipped->len; i++)
    {
      const char *s = g_ptr_array_index (shipped, i);
      /* scenarios/validation/x.ini -> /shipped/validation/x */
      g_autofree char *stem = g_strndup (s + strlen ("scenarios/"),
                                         strlen (s) - strlen ("scenarios/") - strlen (".ini"));
      g_autofree char *path = g_strdup_printf ("/shipped/%s", stem);
      g_test_add_data_func (path, s, test_scenario);
    }
  int rc = g_test_run ();
  if (regen && rc == 0 && g_hash_table_size (written) == shipped->len)
    write_expected (shipped);
  else if (regen)
    g_print ("# tests/data/" EXPECTED " not written: %u of %u scenarios ran and passed\n",
             g_hash_table_size (written), shipped->len);
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  g_hash_table_unref (expected);
  g_hash_table_unref (written);
  return rc;
}
