/*
 * plot.c — `dtsim plot`: reads a trace database, writes the data each figure
 * needs as tab-separated files in a temporary folder, and runs gnuplot on the
 * templates of results/plots/ with the variables each template documents.
 *
 * Figures (docs/plots.md lists their files and definitions): loss against
 * simulated time and against steps, one line per run labelled by its swept
 * keys (the params whose values differ between runs); time per iteration and
 * speedup against workers with a least-squares Amdahl fit, when the runs
 * differ in cluster.workers; the distribution (CDF) of iteration times; the
 * compute / communication / waiting breakdown; the staleness histogram; the
 * time to reach the target loss; and, for every run whose trace holds spans,
 * a per-actor timeline of its first TIMELINE_ROUNDS rounds.  A figure whose
 * data is absent is skipped, with one line saying why.
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
/* a timeline taller than this many actors gets thinner rows and sparse tics */
#define TIMELINE_MAX_LABELS 32

/* The gnuplot program: $DTSIM_GNUPLOT, else the one configure found. */
static const char *
gnuplot_program (void)
{
  const char *env = g_getenv ("DTSIM_GNUPLOT");
  return env && *env ? env : GNUPLOT_PATH;
}

void
sim_amdahl_fit (const double *n, const double *s, int k, double *f_out, double *sse_out)
{
  g_return_if_fail (k >= 1 && f_out != NULL);
  /* 1/s - 1/n = f (1 - 1/n): linear least squares in 1/s gives the start,
   * exact when the points follow the law */
  double num = 0, den = 0;
  for (int i = 0; i < k; i++)
    {
      double a = 1 - 1 / n[i], b = 1 / s[i] - 1 / n[i];
      num += a * b;
      den += a * a;
    }
  double f = den > 0 ? num / den : 0;
  f = CLAMP (f, 0.0, 1.0);
  /* Gauss-Newton on the speedups themselves: g(n) = n / (1 + f (n - 1)),
   * dg/df = -n (n - 1) / (1 + f (n - 1))^2 */
  for (int it = 0; it < 50; it++)
    {
      double jr = 0, jj = 0;
      for (int i = 0; i < k; i++)
        {
          double d = 1 + f * (n[i] - 1);
          double g = n[i] / d, J = -n[i] * (n[i] - 1) / (d * d);
          jr += J * (s[i] - g);
          jj += J * J;
        }
      if (jj <= 0)
        break;
      double nf = CLAMP (f + jr / jj, 0.0, 1.0);
      gboolean done = fabs (nf - f) <= 1e-15 * MAX (1.0, fabs (f));
      f = nf;
      if (done)
        break;
    }
  double sse = 0;
  for (int i = 0; i < k; i++)
    {
      double r = s[i] - n[i] / (1 + f * (n[i] - 1));
      sse += r * r;
    }
  *f_out = f;
  if (sse_out)
    *sse_out = sse;
}

double
sim_plot_time_to_target (sqlite3 *db, gint64 run, double threshold)
{
  sqlite3_stmt *st = NULL;
  double t = NAN;
  if (sqlite3_prepare_v2 (db, "SELECT sim_time FROM metrics WHERE run_id = ? AND loss IS NOT"
                          " NULL AND loss <= ? ORDER BY sim_time, step LIMIT 1", -1, &st,
                          NULL) != SQLITE_OK)
    return NAN;
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_double (st, 2, threshold);
  if (sqlite3_step (st) == SQLITE_ROW)
    t = sqlite3_column_double (st, 0);
  sqlite3_finalize (st);
  return t;
}

double
sim_plot_default_target (sqlite3 *db)
{
  sqlite3_stmt *st = NULL;
  double t = NAN;
  if (sqlite3_prepare_v2 (db, "SELECT MAX(lo) FROM (SELECT MIN(loss) AS lo FROM metrics"
                          " WHERE loss IS NOT NULL GROUP BY run_id)", -1, &st, NULL)
      != SQLITE_OK)
    return NAN;
  if (sqlite3_step (st) == SQLITE_ROW && sqlite3_column_type (st, 0) != SQLITE_NULL)
    t = sqlite3_column_double (st, 0);
  sqlite3_finalize (st);
  return t;
}

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
  const char *argv[] = { gnuplot_program (), "-e", vars, path, NULL };
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

/* --- labels and per-run line files --------------------------------------- */

/* Text safe inside a tab-separated data row: tabs and newlines as spaces. */
static char *
tsv_text (const char *s)
{
  char *o = g_strdup (s ? s : "");
  for (char *p = o; *p; p++)
    if (*p == '\t' || *p == '\n' || *p == '\r')
      *p = ' ';
  return o;
}

/* The swept keys of the database: params whose value differs between runs,
 * in the order they first appear, but those of `omit` (a NULL-terminated
 * list, or NULL). */
static GPtrArray *
swept_keys (sqlite3 *db, const char *const *omit)
{
  GPtrArray *keys = g_ptr_array_new_with_free_func (g_free);
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT key FROM params GROUP BY key HAVING COUNT(DISTINCT value) > 1"
                      " OR COUNT(*) < (SELECT COUNT(*) FROM runs) ORDER BY MIN(rowid)", -1,
                      &st, NULL);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      const char *k = (const char *) sqlite3_column_text (st, 0);
      gboolean keep = TRUE;
      for (const char *const *o = omit; o && *o; o++)
        keep = keep && strcmp (k, *o) != 0;
      if (keep)
        g_ptr_array_add (keys, g_strdup (k));
    }
  sqlite3_finalize (st);
  return keys;
}

/* run id (gint64 *) -> label: "short=value" for each swept key but those of
 * `omit` (a NULL-terminated list, or NULL), where short is the key without
 * its section unless two swept keys share it.
 * A run with no such key is labelled `fallback`, or its name when NULL. */
static GHashTable *
run_labels (sqlite3 *db, const char *const *omit, const char *fallback)
{
  g_autoptr (GPtrArray) keys = swept_keys (db, omit);
  g_autoptr (GPtrArray) shorts = g_ptr_array_new ();
  for (guint i = 0; i < keys->len; i++)
    {
      const char *k = g_ptr_array_index (keys, i), *dot = strchr (k, '.');
      const char *sh = dot ? dot + 1 : k;
      for (guint j = 0; j < keys->len; j++)
        {
          const char *o = g_ptr_array_index (keys, j), *od = strchr (o, '.');
          if (j != i && strcmp (od ? od + 1 : o, sh) == 0)
            sh = k;
        }
      g_ptr_array_add (shorts, (gpointer) sh);
    }
  GHashTable *labels = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  sqlite3_stmt *runs = NULL, *val = NULL;
  sqlite3_prepare_v2 (db, "SELECT id, name FROM runs ORDER BY id", -1, &runs, NULL);
  sqlite3_prepare_v2 (db, "SELECT value FROM params WHERE run_id = ? AND key = ?", -1, &val,
                      NULL);
  while (sqlite3_step (runs) == SQLITE_ROW)
    {
      GString *l = g_string_new (NULL);
      gint64 id = sqlite3_column_int64 (runs, 0);
      for (guint i = 0; i < keys->len; i++)
        {
          sqlite3_bind_int64 (val, 1, id);
          sqlite3_bind_text (val, 2, g_ptr_array_index (keys, i), -1, SQLITE_STATIC);
          const char *v = sqlite3_step (val) == SQLITE_ROW
                          ? (const char *) sqlite3_column_text (val, 0) : "-";
          g_string_append_printf (l, "%s%s=%s", l->len ? " " : "",
                                  (const char *) g_ptr_array_index (shorts, i), v);
          sqlite3_reset (val);
        }
      if (l->len == 0)
        g_string_assign (l, fallback ? fallback : (const char *) sqlite3_column_text (runs, 1));
      g_hash_table_insert (labels, g_memdup2 (&id, sizeof id), g_string_free (l, FALSE));
    }
  sqlite3_finalize (runs);
  sqlite3_finalize (val);
  return labels;
}

static const char *
label_of (GHashTable *labels, gint64 id)
{
  const char *l = g_hash_table_lookup (labels, &id);
  return l ? l : "?";
}

/* A data file of one block per line of a figure, and its titles. */
typedef struct {
  FILE *f;
  char *data;            /* path of the data file */
  GString *titles;       /* gnuplot array literal items */
  int n;                 /* blocks */
} Lines;

static void
lines_begin (Lines *l, const char *tmp, const char *file)
{
  l->data = g_build_filename (tmp, file, NULL);
  l->f = fopen (l->data, "w");
  l->titles = g_string_new (NULL);
  l->n = 0;
}

/* Starts the next block, titled `title`. */
static void
lines_next (Lines *l, const char *title)
{
  g_autofree char *lit = gp_string (title);
  g_string_append_printf (l->titles, "%s%s", l->n ? "," : "", lit);
  if (l->n)
    fputs ("\n\n", l->f);
  l->n++;
}

/* Runs `template` on the blocks with term, outfile, datafile, nruns and
 * titles[] set, plus `extra` gnuplot statements (may be NULL); frees l. */
static gboolean
lines_plot (Lines *l, const char *template, const char *out, const char *term,
            const char *extra, GError **error)
{
  fclose (l->f);
  g_autofree char *q_out = gp_string (out), *q_data = gp_string (l->data);
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; nruns=%d;"
                                           " array titles[%d] = [%s]%s%s", term, q_out, q_data,
                                           l->n, MAX (l->n, 1), l->n ? l->titles->str : "\"\"",
                                           extra ? "; " : "", extra ? extra : "");
  g_string_free (l->titles, TRUE);
  g_free (l->data);
  return run_gnuplot (template, vars, error);
}

static void
lines_abandon (Lines *l)
{
  fclose (l->f);
  g_string_free (l->titles, TRUE);
  g_free (l->data);
}

/* What sim_plot tells the user about each figure. */
static void
drawn (const char *out)
{
  printf ("%s\n", out);
}

static void
skipped (const char *figure, const char *why)
{
  printf ("skipped %s: %s\n", figure, why);
}

/* Loss against simulated time (x = "sim_time") or steps (x = "step"). */
static gboolean
plot_loss_by (sqlite3 *db, GHashTable *labels, const char *x, const char *template,
              const char *tmp, const char *out, const char *term, GError **error)
{
  sqlite3_stmt *runs = NULL, *pts = NULL;
  sqlite3_prepare_v2 (db, "SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM metrics m"
                      " WHERE m.run_id = r.id AND m.loss IS NOT NULL) ORDER BY r.id", -1,
                      &runs, NULL);
  g_autofree char *q = g_strdup_printf ("SELECT %s, loss FROM metrics WHERE run_id = ? AND"
                                        " loss IS NOT NULL ORDER BY sim_time, step", x);
  sqlite3_prepare_v2 (db, q, -1, &pts, NULL);
  Lines l;
  lines_begin (&l, tmp, "loss.tsv");
  while (sqlite3_step (runs) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (runs, 0);
      lines_next (&l, label_of (labels, id));
      sqlite3_bind_int64 (pts, 1, id);
      while (sqlite3_step (pts) == SQLITE_ROW)
        fprintf (l.f, "%.17g\t%.17g\n", sqlite3_column_double (pts, 0),
                 sqlite3_column_double (pts, 1));
      sqlite3_reset (pts);
    }
  sqlite3_finalize (runs);
  sqlite3_finalize (pts);
  if (l.n == 0)
    {
      lines_abandon (&l);
      g_autofree char *figure = g_strndup (template, strcspn (template, "."));
      skipped (figure, "no run has loss metrics (timing-only runs)");
      return TRUE;
    }
  if (!lines_plot (&l, template, out, term, NULL, error))
    return FALSE;
  drawn (out);
  return TRUE;
}

typedef struct {
  double workers, thr;   /* workers; samples per simulated second */
} ScalePoint;

/* Speedup against workers with the Amdahl fit, per group of runs that agree
 * in every swept key but cluster.workers.  Speedup of a run with N workers:
 * its throughput (updates x batch / sim_time) over that of the group's run
 * with the fewest workers N0; the fit uses n = N / N0. */
static gboolean
plot_speedup (sqlite3 *db, const char *tmp, const char *out, const char *term, GError **error)
{
  /* With [model] global_batch set in every run, model.batch follows from the
   * workers (global_batch / workers): it is no grouping key either. */
  sqlite3_stmt *gb = NULL;
  sqlite3_prepare_v2 (db, "SELECT COUNT(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM params p"
                      " WHERE p.run_id = r.id AND p.key = 'model.global_batch' AND"
                      " CAST(p.value AS INTEGER) > 0)", -1, &gb, NULL);
  gboolean derived = sqlite3_step (gb) == SQLITE_ROW && sqlite3_column_int64 (gb, 0) == 0;
  sqlite3_finalize (gb);
  const char *omit[] = { "cluster.workers", derived ? "model.batch" : NULL, NULL };
  g_autoptr (GHashTable) groups = run_labels (db, omit, "all runs");
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db,
                      "SELECT r.id, CAST((SELECT value FROM params p WHERE p.run_id = r.id AND"
                      " p.key = 'cluster.workers') AS REAL), r.updates * CAST((SELECT value"
                      " FROM params p WHERE p.run_id = r.id AND p.key = 'model.batch') AS REAL)"
                      " / r.sim_time FROM runs r WHERE r.status = 'done' AND r.sim_time > 0"
                      " AND r.updates > 0 ORDER BY 2, r.id", -1, &st, NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  g_autoptr (GPtrArray) pts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      const char *g = label_of (groups, sqlite3_column_int64 (st, 0));
      guint i;
      for (i = 0; i < names->len; i++)
        if (strcmp (g_ptr_array_index (names, i), g) == 0)
          break;
      if (i == names->len)
        {
          g_ptr_array_add (names, (gpointer) g);
          g_ptr_array_add (pts, g_array_new (FALSE, FALSE, sizeof (ScalePoint)));
        }
      ScalePoint p = { sqlite3_column_double (st, 1), sqlite3_column_double (st, 2) };
      g_array_append_val (g_ptr_array_index (pts, i), p);
    }
  sqlite3_finalize (st);
  Lines l;
  lines_begin (&l, tmp, "speedup.tsv");
  GString *fs = g_string_new (NULL), *n0s = g_string_new (NULL);
  double xmax = 1;
  for (guint i = 0; i < names->len; i++)
    {
      GArray *a = g_ptr_array_index (pts, i);
      ScalePoint *p = (ScalePoint *) a->data;
      if (a->len < 2 || p[a->len - 1].workers == p[0].workers)
        continue;
      g_autofree double *n = g_new (double, a->len), *sp = g_new (double, a->len);
      lines_next (&l, g_ptr_array_index (names, i));
      for (guint j = 0; j < a->len; j++)
        {
          n[j] = p[j].workers / p[0].workers;
          sp[j] = p[j].thr / p[0].thr;
          fprintf (l.f, "%.17g\t%.17g\n", p[j].workers, sp[j]);
          xmax = MAX (xmax, p[j].workers);
        }
      double f = 0;
      sim_amdahl_fit (n, sp, (int) a->len, &f, NULL);
      printf ("serial fraction (Amdahl fit): f = %.6g  [%s]\n", f,
              (const char *) g_ptr_array_index (names, i));
      g_string_append_printf (fs, "%s%.17g", fs->len ? "," : "", f);
      g_string_append_printf (n0s, "%s%.17g", n0s->len ? "," : "", p[0].workers);
    }
  if (l.n == 0)
    {
      lines_abandon (&l);
      g_string_free (fs, TRUE);
      g_string_free (n0s, TRUE);
      skipped ("speedup", "the runs do not differ in cluster.workers");
      return TRUE;
    }
  g_autofree char *extra = g_strdup_printf ("ngroups=%d; array f[%d] = [%s]; array n0[%d] = [%s];"
                                            " xmax=%.17g", l.n, l.n, fs->str, l.n, n0s->str,
                                            xmax);
  g_string_free (fs, TRUE);
  g_string_free (n0s, TRUE);
  if (!lines_plot (&l, "speedup.gp", out, term, extra, error))
    return FALSE;
  drawn (out);
  return TRUE;
}

/* Empirical CDF of worker iteration times, per run; at most CDF_POINTS
 * points per run (every k-th iteration, and the last). */
#define CDF_POINTS 2000
static gboolean
plot_iteration_cdf (sqlite3 *db, GHashTable *labels, const char *tmp, const char *out,
                    const char *term, GError **error)
{
  sqlite3_stmt *runs = NULL, *pts = NULL;
  sqlite3_prepare_v2 (db, "SELECT run_id, COUNT(*) FROM iterations GROUP BY run_id ORDER BY"
                      " run_id", -1, &runs, NULL);
  sqlite3_prepare_v2 (db, "SELECT end - start FROM iterations WHERE run_id = ? ORDER BY 1",
                      -1, &pts, NULL);
  Lines l;
  lines_begin (&l, tmp, "iteration-cdf.tsv");
  while (sqlite3_step (runs) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (runs, 0), count = sqlite3_column_int64 (runs, 1);
      gint64 every = MAX (1, count / CDF_POINTS), k = 0;
      lines_next (&l, label_of (labels, id));
      sqlite3_bind_int64 (pts, 1, id);
      while (sqlite3_step (pts) == SQLITE_ROW)
        {
          k++;
          if (k % every == 0 || k == count || k == 1)
            fprintf (l.f, "%.17g\t%.17g\n", sqlite3_column_double (pts, 0),
                     (double) k / (double) count);
        }
      sqlite3_reset (pts);
    }
  sqlite3_finalize (runs);
  sqlite3_finalize (pts);
  if (l.n == 0)
    {
      lines_abandon (&l);
      skipped ("iteration-cdf", "no iterations table rows ([trace] detail = summary)");
      return TRUE;
    }
  if (!lines_plot (&l, "iteration-cdf.gp", out, term, NULL, error))
    return FALSE;
  drawn (out);
  return TRUE;
}

/* Mean compute / comm / wait per worker iteration, a stacked bar per run. */
static gboolean
plot_breakdown (sqlite3 *db, GHashTable *labels, const char *tmp, const char *out,
                const char *term, GError **error)
{
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT run_id, AVG(compute), AVG(comm), AVG(wait) FROM iterations"
                      " GROUP BY run_id ORDER BY run_id", -1, &st, NULL);
  g_autofree char *data = g_build_filename (tmp, "breakdown.tsv", NULL);
  FILE *f = fopen (data, "w");
  int n = 0, maxlabel = 0;   /* runs; characters of the longest bar label */
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      g_autofree char *label = tsv_text (label_of (labels, sqlite3_column_int64 (st, 0)));
      fprintf (f, "%s\t%.17g\t%.17g\t%.17g\n", label, sqlite3_column_double (st, 1),
               sqlite3_column_double (st, 2), sqlite3_column_double (st, 3));
      maxlabel = MAX (maxlabel, (int) g_utf8_strlen (label, -1));
      n++;
    }
  sqlite3_finalize (st);
  fclose (f);
  if (n == 0)
    {
      skipped ("breakdown", "no iterations table rows ([trace] detail = summary)");
      return TRUE;
    }
  g_autofree char *q_out = gp_string (out), *q_data = gp_string (data);
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; nruns=%d;"
                                           " maxlabel=%d", term, q_out, q_data, n, maxlabel);
  if (!run_gnuplot ("breakdown.gp", vars, error))
    return FALSE;
  drawn (out);
  return TRUE;
}

/* Share of worker iterations at each staleness, per run. */
static gboolean
plot_staleness (sqlite3 *db, GHashTable *labels, const char *tmp, const char *out,
                const char *term, GError **error)
{
  sqlite3_stmt *runs = NULL, *pts = NULL;
  sqlite3_prepare_v2 (db, "SELECT run_id, COUNT(*) FROM iterations GROUP BY run_id ORDER BY"
                      " run_id", -1, &runs, NULL);
  sqlite3_prepare_v2 (db, "SELECT staleness, COUNT(*) FROM iterations WHERE run_id = ?"
                      " GROUP BY staleness ORDER BY staleness", -1, &pts, NULL);
  Lines l;
  lines_begin (&l, tmp, "staleness.tsv");
  while (sqlite3_step (runs) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (runs, 0);
      double count = (double) sqlite3_column_int64 (runs, 1);
      lines_next (&l, label_of (labels, id));
      sqlite3_bind_int64 (pts, 1, id);
      while (sqlite3_step (pts) == SQLITE_ROW)
        fprintf (l.f, "%" G_GINT64_FORMAT "\t%.17g\n", (gint64) sqlite3_column_int64 (pts, 0),
                 100.0 * (double) sqlite3_column_int64 (pts, 1) / count);
      sqlite3_reset (pts);
    }
  sqlite3_finalize (runs);
  sqlite3_finalize (pts);
  if (l.n == 0)
    {
      lines_abandon (&l);
      skipped ("staleness", "no iterations table rows ([trace] detail = summary)");
      return TRUE;
    }
  if (!lines_plot (&l, "staleness.gp", out, term, NULL, error))
    return FALSE;
  drawn (out);
  return TRUE;
}

/* Time to reach each run's threshold: its [scenario] target_loss when set
 * (> 0), else sim_plot_default_target(); a bar per run with metrics. */
static gboolean
plot_time_to_target (sqlite3 *db, GHashTable *labels, const char *tmp, const char *out,
                     const char *term, GError **error)
{
  double def = sim_plot_default_target (db);
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT r.id, COALESCE(CAST((SELECT value FROM params p WHERE"
                      " p.run_id = r.id AND p.key = 'scenario.target_loss') AS REAL), 0)"
                      " FROM runs r WHERE EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = r.id"
                      " AND m.loss IS NOT NULL) ORDER BY r.id", -1, &st, NULL);
  g_autofree char *data = g_build_filename (tmp, "time-to-target.tsv", NULL);
  FILE *f = fopen (data, "w");
  int n = 0, n_default = 0;
  double first_thr = NAN;
  gboolean same = TRUE;
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      double target = sqlite3_column_double (st, 1);
      double thr = target > 0 ? target : def;
      n_default += target > 0 ? 0 : 1;
      if (n == 0)
        first_thr = thr;
      else if (thr != first_thr)
        same = FALSE;
      double t = sim_plot_time_to_target (db, id, thr);
      g_autofree char *label = tsv_text (label_of (labels, id));
      if (isnan (t))
        fprintf (f, "%s\tnan\tnot reached\n", label);
      else
        fprintf (f, "%s\t%.17g\t\n", label, t);
      n++;
    }
  sqlite3_finalize (st);
  fclose (f);
  if (n == 0)
    {
      skipped ("time-to-target", "no run has loss metrics (timing-only runs)");
      return TRUE;
    }
  g_autofree char *thr_text
    = !same ? g_strdup ("each run's target_loss, else the default threshold")
      : n_default == n ? g_strdup_printf ("loss <= %.4g, the highest of the runs' lowest losses",
                                          first_thr)
      : g_strdup_printf ("loss <= %.4g, [scenario] target_loss", first_thr);
  g_autofree char *q_out = gp_string (out), *q_data = gp_string (data);
  g_autofree char *q_thr = gp_string (thr_text);
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; nruns=%d;"
                                           " thr_text=%s", term, q_out, q_data, n, q_thr);
  if (!run_gnuplot ("time-to-target.gp", vars, error))
    return FALSE;
  drawn (out);
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
        drawn (out);
    }
  else
    skipped ("iteration-time", "the runs do not differ in cluster.workers");
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
  g_autoptr (GPtrArray) actors = g_ptr_array_new_with_free_func (g_free);
  while (sqlite3_step (st) == SQLITE_ROW)
    g_ptr_array_add (actors, g_strdup ((const char *) sqlite3_column_text (st, 0)));
  sqlite3_finalize (st);
  int n = (int) actors->len;
  /* many actors: label every k-th row only (the first and last always) */
  int every = (n + TIMELINE_MAX_LABELS - 1) / TIMELINE_MAX_LABELS;
  for (int i = 0, shown = 0; i < n; i++)
    {
      const char *a = g_ptr_array_index (actors, i);
      g_hash_table_insert (index, g_strdup (a), GINT_TO_POINTER (i));
      if (i % every != 0 && i != n - 1)
        continue;
      g_autofree char *lit = gp_string (a);
      g_string_append_printf (ytics, "%s%s %d", shown++ ? ", " : "", lit, i);
    }
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
  /* rows of 40 px, thinner past TIMELINE_MAX_LABELS actors, at most 4000 px */
  int height = 90 + (n > TIMELINE_MAX_LABELS ? MAX (4, 1280 / n) : 40) * n;
  g_autofree char *vars = g_strdup_printf ("term='%s'; outfile=%s; datafile=%s; runtitle=%s;"
                                           " nactors=%d; ytics_cmd=%s; xmax=%.17g; height=%d",
                                           term, q_out, q_data, q_title, n, q_tics, xmax,
                                           MIN (height, 4000));
  if (!run_gnuplot ("timeline.gp", vars, error))
    return FALSE;
  drawn (out);
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
  g_autofree char *gp = g_find_program_in_path (gnuplot_program ());
  if (!gp)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "plot: gnuplot (%s) not found; install it: apt-get install gnuplot-nox",
                   gnuplot_program ());
      return 2;
    }
  if (!g_file_test (dbpath, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: no such trace database; run `dtsim run SCENARIO.ini` first", dbpath);
      return 2;
    }
  g_autofree char *outdir = dir ? g_strdup (dir) : g_path_get_dirname (dbpath);
  /* -o DIR is created when its parent exists (as mkdir would) */
  g_autofree char *parent = g_path_get_dirname (outdir);
  if (!g_file_test (outdir, G_FILE_TEST_EXISTS) && g_file_test (parent, G_FILE_TEST_IS_DIR))
    g_mkdir (outdir, 0755);
  if (!g_file_test (outdir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: directory '%s' cannot be created (does its parent exist?); create it or choose another", outdir);
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
  g_autoptr (GHashTable) labels = run_labels (db, NULL, NULL);
#define OUT(var, what) \
  g_autofree char *var##_name = g_strdup_printf ("%s-%s.%s", base, what, format); \
  g_autofree char *var = g_build_filename (outdir, var##_name, NULL)
  OUT (o_loss_time, "loss-time");
  OUT (o_loss_step, "loss-step");
  OUT (o_iter_time, "iteration-time");
  OUT (o_speedup, "speedup");
  OUT (o_cdf, "iteration-cdf");
  OUT (o_breakdown, "breakdown");
  OUT (o_stale, "staleness");
  OUT (o_target, "time-to-target");
#undef OUT
  gboolean ok = plot_loss_by (db, labels, "sim_time", "loss-time.gp", tmp, o_loss_time, term,
                              error)
    && plot_loss_by (db, labels, "step", "loss-step.gp", tmp, o_loss_step, term, error)
    && plot_iteration_time (db, tmp, o_iter_time, term, error)
    && plot_speedup (db, tmp, o_speedup, term, error)
    && plot_iteration_cdf (db, labels, tmp, o_cdf, term, error)
    && plot_breakdown (db, labels, tmp, o_breakdown, term, error)
    && plot_staleness (db, labels, tmp, o_stale, term, error)
    && plot_time_to_target (db, labels, tmp, o_target, term, error);

  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2 (db, "SELECT id, name FROM runs r WHERE EXISTS (SELECT 1 FROM spans s"
                      " WHERE s.run_id = r.id) ORDER BY id", -1, &st, NULL);
  int timelines = 0;
  while (ok && sqlite3_step (st) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      g_autofree char *tname = g_strdup_printf ("%s-timeline-run%" G_GINT64_FORMAT ".%s", base,
                                                id, format);
      g_autofree char *tout = g_build_filename (outdir, tname, NULL);
      ok = plot_timeline (db, id, (const char *) sqlite3_column_text (st, 1), tmp, tout, term,
                          error);
      timelines++;
    }
  sqlite3_finalize (st);
  if (ok && timelines == 0)
    skipped ("timeline", "no spans table rows ([trace] detail below spans)");
  sqlite3_close (db);
  remove_tree (tmp);
  return ok ? 0 : 1;
}
