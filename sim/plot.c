/*
 * plot.c — `dtsim plot`: reads a trace database, writes the data each figure
 * needs as tab-separated files in a temporary folder, and runs gnuplot on the
 * templates of results/plots/ with the variables each template documents.
 *
 * Figures: loss against simulated time (one line per run, labelled by the
 * swept keys) and, for every run whose trace holds spans, a per-actor
 * timeline of its first TIMELINE_ROUNDS rounds.
 */
#include "config.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>

#include "sim/plot.h"
#include "sim/scenario.h"
#include "sim/trace.h"

#define TIMELINE_ROUNDS 12

char *
sim_plot_template_dir (void)
{
  const char *env = g_getenv ("DTSIM_DATADIR");
  if (env)
    return g_build_filename (env, "plots", NULL);
  char *src = g_build_filename (DTSIM_SRCDIR, "results", "plots", NULL);
  if (g_file_test (src, G_FILE_TEST_IS_DIR))
    return src;
  g_free (src);
  return g_build_filename (DTSIM_DATADIR, "plots", NULL);
}

/* A gnuplot string literal: double quotes, with \ and " escaped. */
static char *
gp_string (const char *s)
{
  GString *o = g_string_new ("\"");
  for (const char *p = s; *p; p++)
    {
      if (*p == '"' || *p == '\\')
        g_string_append_c (o, '\\');
      g_string_append_c (o, *p);
    }
  g_string_append_c (o, '"');
  return g_string_free (o, FALSE);
}

static gboolean
run_gnuplot (const char *template, const char *vars, GError **error)
{
  g_autofree char *dir = sim_plot_template_dir ();
  g_autofree char *path = g_build_filename (dir, template, NULL);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: gnuplot template missing; reinstall dtsim or set DTSIM_DATADIR", path);
      return FALSE;
    }
  const char *argv[] = { GNUPLOT_PATH, "-e", vars, path, NULL };
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) local = NULL;
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
                     NULL, NULL, NULL, &err, &status, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "cannot run gnuplot (%s); install it: apt-get install gnuplot-nox",
                   local->message);
      return FALSE;
    }
  if (!g_spawn_check_wait_status (status, NULL))
    {
      g_strstrip (err);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "gnuplot failed on %s: %s", template,
                   err);
      return FALSE;
    }
  return TRUE;
}

/* The label of a run: its swept values when it has any, else its name.
 * "policy.consistency=bsp" shows as "consistency=bsp", and a joint sweep
 * "policy.kind/cluster.servers=ps/1" as its values "ps/1". */
static char *
run_label (const char *name, const char *scenario_name)
{
  if (!scenario_name || !g_str_has_prefix (name, scenario_name)
      || name[strlen (scenario_name)] != ' ')
    return g_strdup (name);
  g_auto (GStrv) words = g_strsplit (name + strlen (scenario_name) + 1, " ", -1);
  GString *out = g_string_new (NULL);
  for (int i = 0; words[i]; i++)
    {
      const char *eq = strchr (words[i], '=');
      if (out->len)
        g_string_append_c (out, ' ');
      if (!eq)
        g_string_append (out, words[i]);
      else if (memchr (words[i], '/', eq - words[i]))
        g_string_append (out, eq + 1);
      else
        {
          const char *dot = memchr (words[i], '.', eq - words[i]);
          g_string_append (out, dot ? dot + 1 : words[i]);
        }
    }
  return g_string_free (out, FALSE);
}

static gboolean
plot_loss (sqlite3 *db, const char *tmp, const char *out, const char *term,
           GError **error)
{
  sqlite3_stmt *runs = NULL, *pts = NULL;
  sqlite3_prepare_v2 (db,
                      "SELECT r.id, r.name, (SELECT value FROM params p WHERE p.run_id = r.id"
                      " AND p.key = 'scenario.name') FROM runs r WHERE EXISTS (SELECT 1 FROM"
                      " metrics m WHERE m.run_id = r.id AND m.loss IS NOT NULL) ORDER BY r.id",
                      -1, &runs, NULL);
  sqlite3_prepare_v2 (db, "SELECT sim_time, loss FROM metrics WHERE run_id = ? AND loss IS NOT"
                      " NULL ORDER BY sim_time, step", -1, &pts, NULL);
  g_autofree char *data = g_build_filename (tmp, "loss.tsv", NULL);
  FILE *f = fopen (data, "w");
  GString *titles = g_string_new (NULL);
  int n = 0;
  while (sqlite3_step (runs) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (runs, 0);
      g_autofree char *label = run_label ((const char *) sqlite3_column_text (runs, 1),
                                          (const char *) sqlite3_column_text (runs, 2));
      g_autofree char *lit = gp_string (label);
      g_string_append_printf (titles, "%s%s", n ? "," : "", lit);
      if (n)
        fputs ("\n\n", f);
      sqlite3_bind_int64 (pts, 1, id);
      while (sqlite3_step (pts) == SQLITE_ROW)
        fprintf (f, "%.17g\t%.17g\n", sqlite3_column_double (pts, 0),
                 sqlite3_column_double (pts, 1));
      sqlite3_reset (pts);
      n++;
    }
  fclose (f);
  sqlite3_finalize (runs);
  sqlite3_finalize (pts);
  if (n == 0)
    {
      g_string_free (titles, TRUE);
      return TRUE; /* nothing to draw: timing-only runs */
    }
  g_autofree char *q_out = gp_string (out), *q_data = gp_string (data);
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; nruns=%d;"
                                           " array titles[%d] = [%s]",
                                           term, q_out, q_data, n, n, titles->str);
  g_string_free (titles, TRUE);
  if (!run_gnuplot ("loss-time.gp", vars, error))
    return FALSE;
  printf ("%s\n", out);
  return TRUE;
}

/* The run's name without its "cluster.workers=N" label, and without the
 * scenario name: the line it belongs to in the iteration-time figure. */
static char *
line_label (const char *name, const char *scenario_name)
{
  g_autofree char *label = run_label (name, scenario_name);
  g_auto (GStrv) words = g_strsplit (label, " ", -1);
  GString *out = g_string_new (NULL);
  for (int i = 0; words[i]; i++)
    if (!g_str_has_prefix (words[i], "workers="))
      g_string_append_printf (out, "%s%s", out->len ? " " : "", words[i]);
  if (out->len == 0 || g_strcmp0 (out->str, name) == 0)
    g_string_assign (out, scenario_name ? scenario_name : "runs");
  return g_string_free (out, FALSE);
}

typedef struct {
  double x, y;
} Point;

/* Time per iteration against workers, when the runs sweep cluster.workers. */
static gboolean
plot_iteration_time (sqlite3 *db, const char *tmp, const char *out, const char *term,
                     GError **error)
{
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db,
                      "SELECT r.name, (SELECT value FROM params p WHERE p.run_id = r.id AND"
                      " p.key = 'scenario.name'), CAST((SELECT value FROM params p WHERE"
                      " p.run_id = r.id AND p.key = 'cluster.workers') AS INTEGER),"
                      " r.sim_time / r.iterations FROM runs r WHERE r.status = 'done' AND"
                      " r.iterations > 0 ORDER BY r.id", -1, &st, NULL);
  /* lines in order of first appearance; points sorted by workers */
  GPtrArray *labels = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *points = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  GHashTable *workers_seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      g_autofree char *label = line_label ((const char *) sqlite3_column_text (st, 0),
                                           (const char *) sqlite3_column_text (st, 1));
      guint i;
      for (i = 0; i < labels->len; i++)
        if (strcmp (g_ptr_array_index (labels, i), label) == 0)
          break;
      if (i == labels->len)
        {
          g_ptr_array_add (labels, g_steal_pointer (&label));
          g_ptr_array_add (points, g_array_new (FALSE, FALSE, sizeof (Point)));
        }
      Point pt = { (double) sqlite3_column_int64 (st, 2), sqlite3_column_double (st, 3) };
      g_array_append_val (g_ptr_array_index (points, i), pt);
      g_hash_table_add (workers_seen, GINT_TO_POINTER ((int) pt.x));
    }
  sqlite3_finalize (st);
  gboolean ok = TRUE;
  if (g_hash_table_size (workers_seen) >= 2)
    {
      g_autofree char *data = g_build_filename (tmp, "iteration-time.tsv", NULL);
      FILE *f = fopen (data, "w");
      GString *titles = g_string_new (NULL);
      for (guint i = 0; i < labels->len; i++)
        {
          GArray *a = g_ptr_array_index (points, i);
          if (i)
            fputs ("\n\n", f);
          for (guint j = 0; j < a->len; j++)
            fprintf (f, "%.17g\t%.17g\n", g_array_index (a, Point, j).x,
                     g_array_index (a, Point, j).y);
          g_autofree char *lit = gp_string (g_ptr_array_index (labels, i));
          g_string_append_printf (titles, "%s%s", i ? "," : "", lit);
        }
      fclose (f);
      g_autofree char *q_out = gp_string (out), *q_data = gp_string (data);
      g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; nlines=%u;"
                                               " array titles[%u] = [%s]", term, q_out, q_data,
                                               labels->len, labels->len, titles->str);
      g_string_free (titles, TRUE);
      ok = run_gnuplot ("iteration-time.gp", vars, error);
      if (ok)
        printf ("%s\n", out);
    }
  g_hash_table_unref (workers_seen);
  g_ptr_array_unref (points);
  g_ptr_array_unref (labels);
  return ok;
}

static gboolean
plot_timeline (sqlite3 *db, gint64 run, const char *title, const char *tmp,
               const char *out, const char *term, GError **error)
{
  /* the window: the first TIMELINE_ROUNDS iterations of the slowest worker */
  double xmax = 0;
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT MAX(end) FROM iterations WHERE run_id = ? AND iteration < ?",
                      -1, &st, NULL);
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, TIMELINE_ROUNDS);
  if (sqlite3_step (st) == SQLITE_ROW && sqlite3_column_type (st, 0) != SQLITE_NULL)
    xmax = sqlite3_column_double (st, 0);
  sqlite3_finalize (st);
  if (xmax <= 0)
    {
      sqlite3_prepare_v2 (db, "SELECT MAX(end) FROM spans WHERE run_id = ?", -1, &st, NULL);
      sqlite3_bind_int64 (st, 1, run);
      if (sqlite3_step (st) == SQLITE_ROW)
        xmax = sqlite3_column_double (st, 0);
      sqlite3_finalize (st);
    }
  if (!(xmax > 0))
    return TRUE;

  /* actors in a stable order: workers, then servers, by their number */
  GHashTable *index = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GString *ytics = g_string_new ("set ytics (");
  sqlite3_prepare_v2 (db, "SELECT DISTINCT actor FROM spans WHERE run_id = ? ORDER BY"
                      " (actor LIKE 'server%'), length(actor), actor", -1, &st, NULL);
  sqlite3_bind_int64 (st, 1, run);
  int n = 0;
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      const char *a = (const char *) sqlite3_column_text (st, 0);
      g_hash_table_insert (index, g_strdup (a), GINT_TO_POINTER (n));
      g_autofree char *lit = gp_string (a);
      g_string_append_printf (ytics, "%s%s %d", n ? ", " : "", lit, n);
      n++;
    }
  sqlite3_finalize (st);
  g_string_append (ytics, ")");

  static const char *const groups[4][3] = {
    { "compute", NULL, NULL }, { "send", "recv", NULL }, { "wait", NULL, NULL },
    { "update", NULL, NULL },
  };
  g_autofree char *data = g_build_filename (tmp, "timeline.tsv", NULL);
  FILE *f = fopen (data, "w");
  sqlite3_prepare_v2 (db, "SELECT actor, start, end FROM spans WHERE run_id = ? AND kind = ?"
                      " AND start < ? ORDER BY start", -1, &st, NULL);
  for (int g = 0; g < 4; g++)
    {
      if (g)
        fputs ("\n\n", f);
      /* a point outside the window keeps every block non-empty */
      fprintf (f, "0\t%.17g\t%.17g\n", -2 * xmax, -xmax);
      for (int k = 0; k < 3 && groups[g][k]; k++)
        {
          sqlite3_bind_int64 (st, 1, run);
          sqlite3_bind_text (st, 2, groups[g][k], -1, SQLITE_STATIC);
          sqlite3_bind_double (st, 3, xmax);
          while (sqlite3_step (st) == SQLITE_ROW)
            {
              gpointer idx = g_hash_table_lookup (index, sqlite3_column_text (st, 0));
              fprintf (f, "%d\t%.17g\t%.17g\n", GPOINTER_TO_INT (idx),
                       sqlite3_column_double (st, 1), sqlite3_column_double (st, 2));
            }
          sqlite3_reset (st);
        }
    }
  sqlite3_finalize (st);
  fclose (f);
  g_hash_table_unref (index);

  g_autofree char *q_out = gp_string (out), *q_data = gp_string (data);
  g_autofree char *q_title = gp_string (title), *q_tics = gp_string (ytics->str);
  g_string_free (ytics, TRUE);
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; runtitle=%s;"
                                           " nactors=%d; ytics_cmd=%s; xmax=%.17g",
                                           term, q_out, q_data, q_title, n, q_tics, xmax);
  if (!run_gnuplot ("timeline.gp", vars, error))
    return FALSE;
  printf ("%s\n", out);
  return TRUE;
}

static void
remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d)
    {
      const char *e;
      while ((e = g_dir_read_name (d)))
        {
          g_autofree char *p = g_build_filename (dir, e, NULL);
          g_unlink (p);
        }
      g_dir_close (d);
    }
  g_rmdir (dir);
}

int
sim_plot (const char *dbpath, const char *dir, const char *format, GError **error)
{
  const char *term;
  if (g_strcmp0 (format, "png") == 0)
    term = "pngcairo";
  else if (g_strcmp0 (format, "svg") == 0)
    term = "svg";
  else
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "--format: unknown format '%s'; use png or svg", format);
      return 2;
    }
  if (!g_file_test (dbpath, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: no such trace database; run `dtsim run SCENARIO.ini` first", dbpath);
      return 2;
    }
  g_autofree char *outdir = dir ? g_strdup (dir) : g_path_get_dirname (dbpath);
  if (!g_file_test (outdir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: directory '%s' does not exist; create it or choose another", outdir);
      return 2;
    }
  sqlite3 *db = NULL;
  int version = -1;
  if (sqlite3_open_v2 (dbpath, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
    {
      sqlite3_stmt *st = NULL;
      if (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK
          && sqlite3_step (st) == SQLITE_ROW)
        version = sqlite3_column_int (st, 0);
      sqlite3_finalize (st);
    }
  if (version < 1 || version > SIM_TRACE_SCHEMA_VERSION)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: not a dtsim trace (schema version %d, expected 1 to %d)", dbpath,
                   version, SIM_TRACE_SCHEMA_VERSION);
      sqlite3_close (db);
      return 2;
    }
  g_autofree char *base = g_path_get_basename (dbpath);
  char *dot = strrchr (base, '.');
  if (dot && dot != base)
    *dot = '\0';
  g_autofree char *tmp = g_dir_make_tmp ("dtsim-plot-XXXXXX", NULL);
  gboolean ok = TRUE;
  g_autofree char *name = g_strdup_printf ("%s-loss-time.%s", base, format);
  g_autofree char *out = g_build_filename (outdir, name, NULL);
  ok = plot_loss (db, tmp, out, term, error);
  g_autofree char *iname = g_strdup_printf ("%s-iteration-time.%s", base, format);
  g_autofree char *iout = g_build_filename (outdir, iname, NULL);
  if (ok)
    ok = plot_iteration_time (db, tmp, iout, term, error);

  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT id, name FROM runs r WHERE EXISTS (SELECT 1 FROM spans s"
                      " WHERE s.run_id = r.id) ORDER BY id", -1, &st, NULL);
  while (ok && sqlite3_step (st) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      g_autofree char *tname = g_strdup_printf ("%s-timeline-run%" G_GINT64_FORMAT ".%s", base,
                                                id, format);
      g_autofree char *tout = g_build_filename (outdir, tname, NULL);
      ok = plot_timeline (db, id, (const char *) sqlite3_column_text (st, 1), tmp, tout, term,
                          error);
    }
  sqlite3_finalize (st);
  sqlite3_close (db);
  remove_tree (tmp);
  return ok ? 0 : 1;
}
