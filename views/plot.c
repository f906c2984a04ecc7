/*
 * plot.c — `dtsim plot`: reads a trace database, writes the data each figure
 * needs as tab-separated files in a temporary folder, and runs gnuplot on the
 * templates of results/plots/ with the variables each template documents.
 *
 * Figures (docs/plots.md lists their files and definitions): loss against
 * simulated time and against steps, one line per run labelled by its swept
 * keys (the params whose values differ between runs), or per job of a run of
 * several jobs ("LABEL: job NAME", metrics.job); time per iteration and
 * speedup against workers with a least-squares Amdahl fit, when the runs
 * differ in cluster.workers; the distribution (CDF) of iteration times; the
 * compute / communication / waiting breakdown; the staleness histogram; the
 * time to reach the target loss; and, for every run whose trace holds spans,
 * a per-actor timeline of its first TIMELINE_ROUNDS rounds.  A figure whose
 * data is absent is skipped, with one line saying why.
 *
 * Untrusted databases.  A trace may come from someone else and must be as
 * safe to plot as a text file is to read.  The rules, which every change here
 * must keep:
 *  - Data files hold numbers only.  Every string gnuplot sees (titles, labels,
 *    actor names, file names, the terminal) is a literal made by
 *    sim_plot_gp_quote(): single quotes, inside which gnuplot expands neither
 *    backquotes nor @macros, ' doubled, control characters as spaces.  These
 *    assignments go to a variables file that gnuplot reads before the
 *    template (`gnuplot VARS.gp TEMPLATE.gp`), never to a command line.
 *  - The templates use those variables as values only: no eval, load, call,
 *    system, backquotes or @macros, and every file name handed to gnuplot is
 *    an absolute path in the private temporary folder (a name starting with
 *    < or | would be a pipe to gnuplot).
 *  - Text from the database passes sim_clean_text() before it is shown anywhere
 *    (figures, stdout, stderr): valid UTF-8, no control characters, at most
 *    LABEL_MAX characters.
 *  - The database must be a regular file (checked before SQLite opens it,
 *    with O_NONBLOCK so that a FIFO cannot block) with a SQLite header whose
 *    page count fits the file's size.  It is opened read-only by its absolute
 *    path (never read as a file: URI), defensive, with an untrusted schema,
 *    no views, triggers, extensions or attached files, and values of at most
 *    VALUE_MAX bytes; the tables and columns the figures read must exist as
 *    ordinary tables.  Every query is checked (every SQLite call that
 *    returns a status goes through sim_tracedb_check()); a failure is one line,
 *    "FILE: what is wrong; the fix", and exit code 2.
 *  - Runs still 'running' (killed) or 'failed' are drawn from the rows they
 *    wrote, marked [running] or [failed] in their labels, left out of the
 *    speedup and iteration-time figures, and named in one line on stderr.
 *  - Each figure is drawn in the temporary folder, copied into a new hidden
 *    file of the output folder and renamed over BASE-FIGURE.EXT, so a symlink
 *    planted at that name is replaced, never written through.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "views/outfile.h"
#include "views/plot.h"
#include "config/simconfig.h"
#include "views/tracedb.h"

#define TIMELINE_ROUNDS 12
/* a timeline taller than this many actors gets thinner rows and sparse tics */
#define TIMELINE_MAX_LABELS 32
/* characters of a label or name from the database shown in a figure or a
 * message (runs are grouped by their whole labels, never by cut ones) */
#define LABEL_MAX 120
/* characters of a bar's label (breakdown, time-to-target): the room the
 * templates keep left of the bars */
#define BAR_LABEL_MAX 60
/* run ids listed in the line about running or failed runs */
#define LIST_MAX 8
/* the largest magnitude a figure draws: gnuplot widens an axis to its next
 * tics and takes differences of its ends, which overflow (an "invalid
 * range") for values near DBL_MAX, such as 1e308 */
#define DRAWABLE_MAX 1e300   /* the notes say "1e300": change both together */

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


/* --- text from the database, strings for gnuplot ------------------------- */

char *
sim_plot_gp_quote (const char *s)
{
  g_return_val_if_fail (s != NULL, NULL);
  GString *o = g_string_new ("'");
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      if (*p == '\'')
        g_string_append (o, "''");
      else if (*p < 0x20 || *p == 0x7f)
        g_string_append_c (o, ' ');
      else
        g_string_append_c (o, (char) *p);
    }
  g_string_append_c (o, '\'');
  return g_string_free (o, FALSE);
}

/* Appends the gnuplot assignment name = 'value' to the variables `v`. */
static void
gp_str (GString *v, const char *name, const char *value)
{
  g_autofree char *q = sim_plot_gp_quote (value);
  g_string_append_printf (v, "%s = %s\n", name, q);
}

/* name = x (0 when x is not finite). */
static void
gp_num (GString *v, const char *name, double x)
{
  g_string_append_printf (v, "%s = %.17g\n", name, isfinite (x) ? x : 0.0);
}

/* array name[n] of the strings `items`, one assignment per line (at least
 * one item: gnuplot has no empty arrays). */
static void
gp_strs (GString *v, const char *name, GPtrArray *items)
{
  g_string_append_printf (v, "array %s[%u]\n%s[1] = ''\n", name, MAX (items->len, 1), name);
  for (guint i = 0; i < items->len; i++)
    {
      g_autofree char *q = sim_plot_gp_quote (g_ptr_array_index (items, i));
      g_string_append_printf (v, "%s[%u] = %s\n", name, i + 1, q);
    }
}

/* array name[n] of the numbers `x` (n >= 1). */
static void
gp_nums (GString *v, const char *name, GArray *x)
{
  g_string_append_printf (v, "array %s[%u]\n%s[1] = 0\n", name, MAX (x->len, 1), name);
  for (guint i = 0; i < x->len; i++)
    {
      double d = g_array_index (x, double, i);
      g_string_append_printf (v, "%s[%u] = %.17g\n", name, i + 1, isfinite (d) ? d : 0.0);
    }
}

/* --- the database -------------------------------------------------------- */

/* One `dtsim plot` invocation. */
typedef struct {
  SimTraceDb t;           /* the database (t.shown: its path, fit for messages) */
  char *tmp;              /* private temporary folder: data, variables, figures */
  const char *outdir;     /* where figures land */
  char *base;             /* BASE of BASE-FIGURE.EXT */
  const char *format;     /* png | svg */
  const char *term;       /* gnuplot terminal */
  GHashTable *labels;     /* run id (gint64 *) -> label (clean text) */
  const SimPlotSink *sink; /* where figures and notes go; NULL: stdout */
} Plot;

/* Steps `st`, prepared and bound with the status `rc` so far, once: *t is
 * its first column, NAN when there is no row or the value is NULL.
 * Finalizes st (which may be NULL) and returns SQLITE_OK or the code of the
 * first call that failed.  The message of a failed step stays on the
 * connection; that of a failed prepare or bind may not, so the code is what
 * a caller reports (sim_tracedb_check() does). */
static int
first_double (sqlite3_stmt *st, int rc, double *t)
{
  *t = NAN;
  if (rc == SQLITE_OK)
    {
      rc = sqlite3_step (st);
      if (rc == SQLITE_ROW && sqlite3_column_type (st, 0) != SQLITE_NULL)
        *t = sqlite3_column_double (st, 0);
      if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        rc = SQLITE_OK;
    }
  sqlite3_finalize (st);   /* its status repeats that of the step, already in rc */
  return rc;
}

/* The simulated time at which run `run` first reports a metric meeting
 * `cond` (a condition on the bound threshold, `?`) in *t (NAN when never);
 * SQLITE_OK or the failing call's code. */
static int
first_time (sqlite3 *db, gint64 run, const char *cond, double threshold, double *t)
{
  sqlite3_stmt *st = NULL;
  g_autofree char *q = g_strdup_printf ("SELECT sim_time FROM metrics WHERE run_id = ? AND %s"
                                        " ORDER BY sim_time, step LIMIT 1", cond);
  int rc = sqlite3_prepare_v2 (db, q, -1, &st, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_int64 (st, 1, run);
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_double (st, 2, threshold);
  return first_double (st, rc, t);
}

/* ... the first loss <= threshold. */
static int
time_to_target (sqlite3 *db, gint64 run, double threshold, double *t)
{
  return first_time (db, run, "loss IS NOT NULL AND loss <= ?", threshold, t);
}

double
sim_plot_time_to_target (sqlite3 *db, gint64 run, double threshold)
{
  double t;
  return time_to_target (db, run, threshold, &t) == SQLITE_OK ? t : NAN;
}

/* The highest of the runs' lowest losses in *t (NAN with no loss);
 * SQLITE_OK or the failing call's code. */
static int
default_target (sqlite3 *db, double *t)
{
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2 (db, "SELECT MAX(lo) FROM (SELECT MIN(loss) AS lo FROM metrics"
                               " WHERE loss IS NOT NULL GROUP BY run_id)", -1, &st, NULL);
  return first_double (st, rc, t);
}

double
sim_plot_default_target (sqlite3 *db)
{
  double t;
  return default_target (db, &t) == SQLITE_OK ? t : NAN;
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

/* --- gnuplot ------------------------------------------------------------- */

/* Copies the figure `fig` to a new hidden file beside `out` and renames it
 * over `out`: a symlink planted at `out` is replaced, not written through. */
static gboolean
land (const char *fig, const char *out, GError **error)
{
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (fig, &bytes, &len, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "gnuplot wrote no figure (%s); check gnuplot with: gnuplot -e 'print 1'",
                   local->message);
      return FALSE;
    }
  g_autofree char *dir = g_path_get_dirname (out), *name = g_path_get_basename (out);
  g_autofree char *hidden_name = g_strdup_printf (".%s.XXXXXX", name);
  g_autofree char *hidden = g_build_filename (dir, hidden_name, NULL);
  int fd = g_mkstemp_full (hidden, O_WRONLY | O_CLOEXEC, 0666);
  gboolean ok = fd >= 0;
  int e = errno;
  for (gsize done = 0; ok && done < len;)
    {
      gssize w = write (fd, bytes + done, len - done);
      if (w < 0 && errno == EINTR)
        continue;
      ok = w > 0;
      e = errno;
      done += ok ? (gsize) w : 0;
    }
  if (fd >= 0 && close (fd) != 0 && ok)
    {
      ok = FALSE;
      e = errno;
    }
  if (ok && g_rename (hidden, out) != 0)
    {
      ok = FALSE;
      e = errno;
    }
  if (!ok)
    {
      if (fd >= 0)
        g_unlink (hidden);
      g_autofree char *shown = sim_clean_text (out, 4096);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: cannot write (%s); check the folder and its permissions", shown,
                   g_strerror (e));
      return FALSE;
    }
  g_unlink (fig);
  return TRUE;
}

/* The last non-blank line of gnuplot's messages, fit to show. */
static char *
last_line (const char *err)
{
  g_auto (GStrv) lines = g_strsplit (err ? err : "", "\n", -1);
  const char *last = "";
  for (int i = 0; lines[i]; i++)
    if (*g_strstrip (lines[i]))
      last = lines[i];
  return sim_clean_text (last, 200);
}

/* Runs gnuplot on `template` with the assignments `vars` (term and outfile
 * are added here), lands the figure at `out` and prints its path. */
/* Adds the numbers of `text` (data or variables) to `sum` at six
 * significant digits, what a figure can show, so that the last bits of a
 * computation (which BLAS kernels may change from one CPU to another) do
 * not count; every other character as it is. */
static void
digest_add (GChecksum *sum, const char *text, gsize len)
{
  const char *c = text, *end = text + len;
  while (c < end)
    {
      char *stop = NULL;
      if ((g_ascii_isdigit (*c) || *c == '-' || *c == '.')
          && (c == text || !g_ascii_isalnum (c[-1])))
        {
          double v = g_ascii_strtod (c, &stop);
          if (stop && stop > c && stop <= end)
            {
              char buf[40];
              g_snprintf (buf, sizeof buf, "%.6g", v);
              g_checksum_update (sum, (const guchar *) buf, -1);
              c = stop;
              continue;
            }
        }
      g_checksum_update (sum, (const guchar *) c, 1);
      c++;
    }
}

/* SHA-256 of what a figure shows: its template, its variables (paths in
 * the private folder made relative), and the data files they name, numbers
 * at six significant digits (tests/test-docs-img.c checks README images
 * against it). */
static char *
figure_digest (Plot *p, const char *template_path, const GString *vars)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *tmpl = NULL;
  gsize len = 0;
  if (g_file_get_contents (template_path, &tmpl, &len, NULL))
    g_checksum_update (sum, (const guchar *) tmpl, (gssize) len);
  g_auto (GStrv) parts = g_strsplit (vars->str, p->tmp, -1);
  g_autofree char *rel = g_strjoinv ("TMP", parts);
  digest_add (sum, rel, strlen (rel));
  /* the data files: every quoted path into the private folder */
  for (int i = 1; parts[i]; i++)
    {
      gsize n = strcspn (parts[i], "'");
      g_autofree char *name = g_strndup (parts[i], n);
      g_autofree char *file = g_strconcat (p->tmp, name, NULL);
      g_autofree char *data = NULL;
      if (g_str_has_suffix (name, ".tsv") && g_file_get_contents (file, &data, &len, NULL))
        digest_add (sum, data, len);
    }
  return g_strdup (g_checksum_get_string (sum));
}

static gboolean
draw (Plot *p, const char *template, GString *vars, const char *out, GError **error)
{
  g_autofree char *dir = sim_plot_template_dir ();
  g_autofree char *rel = g_build_filename (dir, template, NULL);
  /* absolute: gnuplot would read a file name starting with - as an option */
  g_autofree char *path = g_canonicalize_filename (rel, NULL);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: gnuplot template missing; reinstall dtsim or set DTSIM_DATADIR", path);
      return FALSE;
    }
  g_autofree char *figure = g_strndup (template, strcspn (template, "."));
  /* what the figure shows, before the paths and terminal are added */
  g_autofree char *digest = p->sink ? figure_digest (p, path, vars) : NULL;
  g_autofree char *fig_name = g_strdup_printf ("%s.%s", figure, p->format);
  g_autofree char *fig = g_build_filename (p->tmp, fig_name, NULL);
  g_autofree char *vars_path = g_build_filename (p->tmp, "vars.gp", NULL);
  gp_str (vars, "term", p->term);
  gp_str (vars, "outfile", fig);
  g_autoptr (GError) local = NULL;
  if (!g_file_set_contents (vars_path, vars->str, (gssize) vars->len, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s; check the temporary folder (TMPDIR)", local->message);
      return FALSE;
    }
  const char *argv[] = { gnuplot_program (), vars_path, path, NULL };
  g_autofree char *err = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv, NULL,
                     G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL
                     | G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL, NULL, &err, &status, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "cannot run gnuplot (%s); install it: apt-get install gnuplot-nox",
                   local->message);
      return FALSE;
    }
  if (!g_spawn_check_wait_status (status, NULL))
    {
      g_autofree char *why = last_line (err);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: gnuplot could not draw the %s figure (%s); please report it with this"
                   " database attached", p->t.shown, figure, why);
      return FALSE;
    }
  if (!land (fig, out, error))
    return FALSE;
  if (p->sink)
    {
      /* the figure's name in its file: BASE-NAME.EXT */
      g_autofree char *bn = g_path_get_basename (out);
      gsize skip = g_str_has_prefix (bn, p->base) && bn[strlen (p->base)] == '-'
                   ? strlen (p->base) + 1 : 0;
      g_autofree char *name = g_strndup (bn + skip, strcspn (bn + skip, "."));
      p->sink->figure (p->sink->ctx, name, out, digest);
    }
  else
    printf ("%s\n", out);
  return TRUE;
}

/* What sim_plot tells the user about a figure it does not draw. */
static void
skipped (Plot *p, const char *figure, const char *why)
{
  if (p->sink)
    p->sink->skipped (p->sink->ctx, figure, why);
  else
    printf ("skipped %s: %s\n", figure, why);
}

/* --- labels -------------------------------------------------------------- */

/* The mark of a run that is not 'done' in its labels: " [running]". */
static char *
status_mark (const char *status)
{
  if (strcmp (status, "done") == 0)
    return g_strdup ("");
  if (strcmp (status, "running") == 0 || strcmp (status, "failed") == 0
      || strcmp (status, "infeasible") == 0)
    return g_strdup_printf (" [%s]", status);
  return g_strdup (" [?]");
}

/* Removes from `keys` (params already loaded) those every run has with one
 * value: a key a joint sweep carries along (policy.kind/policy.graph =
 * gossip/ring, gossip/torus, ...) tells no run from another.  FALSE with
 * *error set when reading the runs fails. */
static gboolean
keep_differing (Plot *p, GPtrArray *keys, GError **error)
{
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (&p->t, "SELECT id FROM runs ORDER BY id",
                                                     error);
  if (!st)
    return FALSE;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  int rc;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      g_array_append_val (ids, id);
    }
  if (rc < 0)
    return FALSE;
  for (guint k = keys->len; k-- > 0;)
    {
      const char *key = g_ptr_array_index (keys, k);
      gboolean differs = FALSE;
      for (guint i = 1; i < ids->len && !differs; i++)
        {
          const SimTraceParam *a = sim_tracedb_param (&p->t, g_array_index (ids, gint64, 0), key);
          const SimTraceParam *b = sim_tracedb_param (&p->t, g_array_index (ids, gint64, i), key);
          differs = !a != !b || (a && g_strcmp0 (a->text, b->text) != 0);
        }
      if (!differs)
        g_ptr_array_remove_index (keys, k);
    }
  return TRUE;
}

/* run id (gint64 *) -> label: "short=value" for each swept key but those of
 * `omit` (a NULL-terminated list, or NULL), where short is the key without
 * its section unless two swept keys share it, and the run's status mark;
 * only the keys whose values differ between runs (keep_differing()).
 * A run with no such key is labelled `fallback`, or its name when NULL.
 * Labels are clean text, whole: they are cut to LABEL_MAX where shown. */
static GHashTable *
run_labels (Plot *p, const char *const *omit, const char *fallback, GError **error)
{
  /* the sweep's own keys (from the runs' names): a value a run settles
   * itself, such as the algorithm auto chose, is no label; without them,
   * the params that differ */
  g_autoptr (GPtrArray) keys = sim_tracedb_sweep_keys (&p->t, error);
  if (keys && keys->len == 0)
    {
      g_ptr_array_unref (keys);
      keys = sim_tracedb_swept_keys (&p->t, omit, error);
    }
  if (!keys)
    return NULL;
  for (guint i = keys->len; i-- > 0;)
    for (const char *const *o = omit; o && *o; o++)
      if (strcmp (g_ptr_array_index (keys, i), *o) == 0)
        {
          g_ptr_array_remove_index (keys, i);
          break;
        }
  if (!sim_tracedb_params_load (&p->t, (const char *const *) keys->pdata, keys->len, error)
      || !keep_differing (p, keys, error))
    return NULL;
  g_autoptr (sqlite3_stmt) runs
    = sim_tracedb_prepare (&p->t, "SELECT id, name, status FROM runs ORDER BY id", error);
  if (!runs)
    return NULL;
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
  int rc;
  while ((rc = sim_tracedb_step (&p->t, runs, error)) == SQLITE_ROW)
    {
      GString *l = g_string_new (NULL);
      gint64 id = sqlite3_column_int64 (runs, 0);
      for (guint i = 0; i < keys->len; i++)
        {
          const SimTraceParam *v = sim_tracedb_param (&p->t, id, g_ptr_array_index (keys, i));
          g_string_append_printf (l, "%s%s=%s", l->len ? " " : "",
                                  (const char *) g_ptr_array_index (shorts, i),
                                  v ? (v->text ? v->text : "") : "-");
        }
      if (l->len == 0)
        g_string_assign (l, fallback ? fallback : sim_tracedb_text (runs, 1));
      g_autofree char *text = sim_clean_text (l->str, G_MAXSIZE);
      g_autofree char *mark = status_mark (sim_tracedb_text (runs, 2));
      g_string_free (l, TRUE);
      g_hash_table_insert (labels, g_memdup2 (&id, sizeof id),
                           g_strconcat (text, mark, NULL));
    }
  if (rc < 0)
    g_clear_pointer (&labels, g_hash_table_unref);
  return labels;
}

static const char *
label_of (GHashTable *labels, gint64 id)
{
  const char *l = g_hash_table_lookup (labels, &id);
  return l ? l : "?";
}

/* Tells, in one line on stderr per kind, which runs are still 'running'
 * (killed, or not finished), 'failed' or 'infeasible', or have another
 * status. */
static gboolean
note_unfinished (Plot *p, GError **error)
{
  enum { N_KINDS = 4 };
  static const char *const says[N_KINDS] = {
    "still 'running' (killed, or not finished yet): drawn from the rows written so far,"
    " marked [running], left out of speedup and iteration-time; run the scenario again for"
    " complete figures",
    "'failed' (runs.error says why): drawn from the rows written before the failure, marked"
    " [failed], left out of speedup and iteration-time; fix the scenario and run it again",
    "'infeasible' (the model does not fit device memory; runs.error says by how much): not"
    " run, so in no figure",
    "of unknown status: drawn, marked [?], left out of speedup and iteration-time; plot a"
    " database written by `dtsim run`",
  };
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT id, status FROM runs WHERE status IS NOT 'done' ORDER BY id",
                 error);
  if (!st)
    return FALSE;
  GString *ids[N_KINDS];
  int count[N_KINDS] = { 0 };
  for (int k = 0; k < N_KINDS; k++)
    ids[k] = g_string_new (NULL);
  int rc;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      const char *s = sim_tracedb_text (st, 1);
      int k = strcmp (s, "running") == 0 ? 0 : strcmp (s, "failed") == 0 ? 1
              : strcmp (s, "infeasible") == 0 ? 2 : 3;
      if (++count[k] <= LIST_MAX)
        g_string_append_printf (ids[k], "%s%" G_GINT64_FORMAT, count[k] > 1 ? ", " : "",
                                (gint64) sqlite3_column_int64 (st, 0));
    }
  for (int k = 0; rc >= 0 && k < N_KINDS; k++)
    if (count[k])
      {
        if (count[k] > LIST_MAX)
          g_string_append_printf (ids[k], " and %d more", count[k] - LIST_MAX);
        g_printerr ("dtsim: %s: run%s %s %s %s\n", p->t.shown, count[k] > 1 ? "s" : "",
                    ids[k]->str, count[k] > 1 ? "are" : "is", says[k]);
      }
  for (int k = 0; k < N_KINDS; k++)
    g_string_free (ids[k], TRUE);
  return rc >= 0;
}

/* --- figures ------------------------------------------------------------- */

/* A data file in the temporary folder (numbers only) and the titles of its
 * blocks, one block per line of a figure. */
typedef struct {
  FILE *f;
  char *data;            /* path of the data file */
  GPtrArray *titles;     /* clean text, one per block */
  gint64 points;         /* rows written */
  gint64 left_out;       /* rows with a value gnuplot cannot draw (drawable()) */
} Lines;

/* Whether gnuplot can place `v` on an axis: finite and at most
 * DRAWABLE_MAX in magnitude. */
static gboolean
drawable (double v)
{
  return isfinite (v) && fabs (v) <= DRAWABLE_MAX;
}

/* Tells that `n` rows of the database were left out of `figure`, where the
 * notes go (on stderr for `dtsim plot`). */
static void
note_left_out (Plot *p, const char *figure, gint64 n)
{
  g_autofree char *note
    = g_strdup_printf ("%" G_GINT64_FORMAT " row%s left out of %s: not finite or beyond"
                       " 1e300 in magnitude, which gnuplot cannot draw", n, n == 1 ? "" : "s",
                       figure);
  if (p->sink)
    p->sink->note (p->sink->ctx, note);
  else
    g_printerr ("dtsim: %s: %s\n", p->t.shown, note);
}

/* Writes the row "x TAB y" of the current block when gnuplot can draw both
 * values, else counts it left out. */
static void
lines_point (Lines *l, double x, double y)
{
  if (!drawable (x) || !drawable (y))
    {
      l->left_out++;
      return;
    }
  fprintf (l->f, "%.17g\t%.17g\n", x, y);
  l->points++;
}

static gboolean
lines_begin (Plot *p, Lines *l, const char *file, GError **error)
{
  l->data = g_build_filename (p->tmp, file, NULL);
  l->f = fopen (l->data, "w");
  l->points = l->left_out = 0;
  l->titles = g_ptr_array_new_with_free_func (g_free);
  if (!l->f)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: cannot write (%s); check the temporary folder (TMPDIR)", l->data,
                   g_strerror (errno));
      g_ptr_array_unref (l->titles);
      g_free (l->data);
      return FALSE;
    }
  return TRUE;
}

/* Adds `title` (clean text) to the titles, cut to LABEL_MAX characters. */
static void
lines_title (Lines *l, const char *title)
{
  g_ptr_array_add (l->titles, sim_clean_text (title, LABEL_MAX));
}

/* Starts the next block, titled `title`. */
static void
lines_next (Lines *l, const char *title)
{
  if (l->titles->len)
    fputs ("\n\n", l->f);
  lines_title (l, title);
}

static void
lines_end (Lines *l)
{
  if (l->f)
    fclose (l->f);
  l->f = NULL;
  g_clear_pointer (&l->titles, g_ptr_array_unref);
  g_clear_pointer (&l->data, g_free);
}

/* The variables every template reads: datafile, `count_name` (the blocks)
 * and titles[]. */
static GString *
lines_vars (Lines *l, const char *count_name)
{
  GString *v = g_string_new (NULL);
  fflush (l->f);
  gp_str (v, "datafile", l->data);
  gp_num (v, count_name, l->titles->len);
  gp_strs (v, "titles", l->titles);
  return v;
}

/* The output path of `figure`: DIR/BASE-FIGURE.EXT. */
static char *
out_path (Plot *p, const char *figure)
{
  g_autofree char *name = g_strdup_printf ("%s-%s.%s", p->base, figure, p->format);
  return g_build_filename (p->outdir, name, NULL);
}

/* Ends a figure drawn from `l`: skipped with the reason `none` when l has no
 * line, else drawn by FIGURE.gp with l's variables (nruns, titles, datafile)
 * and `extra` (more gnuplot assignments, or NULL).  `ok` says the queries
 * that filled l succeeded.  Frees l's contents. */
static gboolean
lines_draw (Plot *p, Lines *l, gboolean ok, const char *figure, const char *none,
            const GString *extra, GError **error)
{
  if (ok && l->left_out > 0)
    note_left_out (p, figure, l->left_out);
  if (ok && l->titles->len == 0)
    skipped (p, figure, none);
  else if (ok && l->points == 0)
    skipped (p, figure, "no row it could draw (every value not finite or beyond 1e300 in magnitude)");
  else if (ok)
    {
      g_autoptr (GString) v = lines_vars (l, "nruns");
      if (extra)
        g_string_append_len (v, extra->str, (gssize) extra->len);
      g_autofree char *tmpl = g_strconcat (figure, ".gp", NULL), *out = out_path (p, figure);
      ok = draw (p, tmpl, v, out, error);
    }
  lines_end (l);
  return ok;
}

/* The ids of the runs (of the runs table) with a loss in metrics, by id,
 * in one scan of each table; NULL with *error set when a query fails. */
static GArray *
loss_runs (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT id FROM runs WHERE id IN (SELECT run_id FROM metrics"
                                  " WHERE loss IS NOT NULL) ORDER BY id", error);
  if (!st)
    return NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint64));
  int rc;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      g_array_append_val (ids, id);
    }
  return rc < 0 ? NULL : g_steal_pointer (&ids);
}

/* The [scenario] target_accuracy every run with metrics shares in *t (0
 * when some run has none or they differ).  FALSE with *error set when a
 * query fails. */
static gboolean
common_target_accuracy (Plot *p, double *t, GError **error)
{
  static const char *const key[] = { "scenario.target_accuracy" };
  *t = 0;
  g_autoptr (GArray) ids = loss_runs (p, error);
  if (!ids || !sim_tracedb_params_load (&p->t, key, 1, error))
    return FALSE;
  for (guint i = 0; i < ids->len; i++)
    {
      const SimTraceParam *v = sim_tracedb_param (&p->t, g_array_index (ids, gint64, i), key[0]);
      if (!v || !v->text || !(v->real > 0) || (i > 0 && v->real != *t))
        {
          *t = 0;
          return TRUE;
        }
      *t = v->real;
    }
  return TRUE;
}

/* The title of a line of the metric figures: the run's label `label`,
 * followed by ": job NAME" (the name as clean text) for job `job` of a run
 * of several jobs (NULL: the run's own line). */
static char *
metric_title (const char *label, const char *job)
{
  if (!job)
    return g_strdup (label);
  g_autofree char *name = sim_clean_text (job, LABEL_MAX);
  return g_strdup_printf ("%s: job %s", label, name);
}

/* Loss (y = "loss"), test accuracy in percent (y = "accuracy") or the
 * positive consensus distances (y = "consensus") against simulated time
 * (x = "sim_time") or steps (x = "step").  The loss axis
 * stops at twice the largest initial loss when some run's loss climbs
 * higher (a diverging run would otherwise flatten every other line); the
 * accuracy figure draws the runs' common target_accuracy. */
static gboolean
plot_metric_by (Plot *p, const char *x, const char *y, const char *figure, GError **error)
{
  gboolean acc = strcmp (y, "accuracy") == 0, cons = strcmp (y, "consensus") == 0;
  /* the rows drawn: with a loss, or with a positive consensus distance */
  const char *has = cons ? "consensus > 0" : "loss IS NOT NULL";
  /* a run of several jobs has a line per job (metrics.job, schema 13 on;
   * NULL in a run of one job, whose line is the run's as before) */
  static const char *const job_col[] = { "job", NULL };
  int jobs = sim_tracedb_has (&p->t, "metrics", job_col, error);
  if (jobs < 0)
    return FALSE;
  /* one scan of metrics, sorted by run then job: a block per run of the
   * runs table, or per job of such a run */
  g_autofree char *q = g_strdup_printf ("SELECT run_id, %s, %s, %s FROM metrics WHERE %s AND"
                                        " run_id IN (SELECT id FROM runs) ORDER BY run_id,%s"
                                        " sim_time, step", x, y, jobs ? "job" : "NULL", has,
                                        jobs ? " job," : "");
  g_autoptr (sqlite3_stmt) pts = sim_tracedb_prepare (&p->t, q, error);
  Lines l;
  if (!pts || !lines_begin (p, &l, "metric.tsv", error))
    return FALSE;
  int rc = SQLITE_DONE, rc2;
  double first_max = 0, all_max = 0;
  gboolean first = TRUE;
  gint64 run = 0;
  g_autofree char *job = NULL;   /* the current block's job; NULL: the run's */
  while ((rc2 = sim_tracedb_step (&p->t, pts, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (pts, 0);
      const char *j = sqlite3_column_type (pts, 3) == SQLITE_NULL ? NULL
                      : (const char *) sqlite3_column_text (pts, 3);
      if (l.titles->len == 0 || id != run || g_strcmp0 (j, job) != 0)
        {
          g_free (job);
          job = g_strdup (j);
          g_autofree char *title = metric_title (label_of (p->labels, id), job);
          lines_next (&l, title);
          run = id;
          first = TRUE;
        }
      double a = sqlite3_column_double (pts, 1), b = sqlite3_column_double (pts, 2);
      double shown = acc ? 100 * b : b;
      if (!drawable (a) || !drawable (shown))
        {
          l.left_out++;
          continue;
        }
      if (first)
        first_max = MAX (first_max, b);
      first = FALSE;
      all_max = MAX (all_max, b);
      lines_point (&l, a, shown);
    }
  g_autoptr (GString) extra = g_string_new (NULL);
  if (acc)
    {
      double target = 0;
      if (!common_target_accuracy (p, &target, error))
        rc = -1;
      gp_num (extra, "target", 100 * target);
    }
  else if (!cons)
    gp_num (extra, "ymax", all_max > 2 * first_max && first_max > 0 ? 2 * first_max : 0);
  return lines_draw (p, &l, rc2 >= 0 && rc >= 0, figure,
                     cons ? "no gossip run has a positive consensus distance"
                          : "no run has loss metrics (timing-only runs)", extra, error);
}

/* The consensus distance of gossip runs against simulated time, on a log
 * scale; considered only when some run is of kind = gossip (other policies
 * hold one model), so other databases neither draw nor mention it. */
static gboolean
plot_consensus (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) any
    = sim_tracedb_prepare (&p->t, "SELECT EXISTS (SELECT 1 FROM params WHERE key = 'policy.kind' AND"
                 " value = 'gossip') AND EXISTS (SELECT 1 FROM pragma_table_info('metrics')"
                 " WHERE name = 'consensus')", error);
  int rc;
  if (!any || (rc = sim_tracedb_step (&p->t, any, error)) < 0)
    return FALSE;
  if (rc != SQLITE_ROW || !sqlite3_column_int (any, 0))
    return TRUE;
  return plot_metric_by (p, "sim_time", "consensus", "consensus", error);
}


typedef struct {
  double workers, thr;   /* workers; samples per simulated second */
} ScalePoint;

typedef struct {
  gint64 id;             /* the run */
  ScalePoint pt;
} RunPoint;

/* RunPoints by workers; g_array_sort() is stable, so runs keep their
 * order (by id) among equal workers. */
static gint
run_point_cmp (gconstpointer a, gconstpointer b)
{
  double x = ((const RunPoint *) a)->pt.workers, y = ((const RunPoint *) b)->pt.workers;
  return (x > y) - (x < y);
}

/* The finished runs' throughputs, grouped by every swept key but
 * cluster.workers (and model.batch where [model] global_batch sets it):
 * the groups' labels into `names` (owned copies) and, at the same index, a
 * GArray of their ScalePoints in `pts`, by workers.  FALSE with *error set
 * when a query fails. */
static gboolean
speedup_points (Plot *p, GPtrArray *names, GPtrArray *pts, gboolean *strong, GError **error)
{
  /* With [model] global_batch set in every run, model.batch follows from the
   * workers (global_batch / workers): it is no grouping key either. */
  static const char *const used[] = { "model.global_batch", "cluster.workers", "model.batch" };
  if (!sim_tracedb_params_load (&p->t, used, G_N_ELEMENTS (used), error))
    return FALSE;
  g_autoptr (sqlite3_stmt) all = sim_tracedb_prepare (&p->t, "SELECT id FROM runs", error);
  int rc;
  gboolean derived = TRUE;
  while (all && (rc = sim_tracedb_step (&p->t, all, error)) == SQLITE_ROW)
    {
      const SimTraceParam *g = sim_tracedb_param (&p->t, sqlite3_column_int64 (all, 0), used[0]);
      derived = derived && g && g->text && g->integer > 0;
    }
  if (!all || rc < 0)
    return FALSE;
  if (strong)
    *strong = derived;
  const char *omit[] = { "cluster.workers", derived ? "model.batch" : NULL, NULL };
  g_autoptr (GHashTable) groups = run_labels (p, omit, "all runs", error);
  /* throughput: the samples the policy counted (schema 7 on), else, in an
   * older trace, gradients x batch */
  const char *const samples_col[] = { "samples", NULL };
  int counted = groups ? sim_tracedb_has (&p->t, "runs", samples_col, error) : -1;
  g_autofree char *sql
    = g_strdup_printf ("SELECT id, %s, sim_time FROM runs WHERE status = 'done' AND sim_time > 0"
                       " AND %s > 0 ORDER BY id", counted > 0 ? "CAST(samples AS REAL)" : "updates",
                       counted > 0 ? "samples" : "updates");
  g_autoptr (sqlite3_stmt) st = counted >= 0 ? sim_tracedb_prepare (&p->t, sql, error) : NULL;
  if (!st)
    return FALSE;
  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, sizeof (RunPoint));
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      const SimTraceParam *w = sim_tracedb_param (&p->t, id, used[1]);
      const SimTraceParam *b = sim_tracedb_param (&p->t, id, used[2]);
      double done = sqlite3_column_double (st, 1), t = sqlite3_column_double (st, 2);
      ScalePoint pt = { w && w->text ? w->real : 0,
                        counted > 0 ? done / t : b && b->text ? done * b->real / t : 0 };
      if (!(isfinite (pt.workers) && pt.workers >= 1 && isfinite (pt.thr) && pt.thr > 0))
        continue;
      RunPoint rp = { id, pt };
      g_array_append_val (rows, rp);
    }
  if (rc < 0)
    return FALSE;
  /* by workers, then id: groups in the order their first point comes */
  g_array_sort (rows, run_point_cmp);
  /* label -> its index in names + 1 */
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint r = 0; r < rows->len; r++)
    {
      const RunPoint *rp = &g_array_index (rows, RunPoint, r);
      const char *g = label_of (groups, rp->id);
      guint i = GPOINTER_TO_UINT (g_hash_table_lookup (index, g));
      if (i-- == 0)
        {
          i = names->len;
          g_ptr_array_add (names, g_strdup (g));
          g_ptr_array_add (pts, g_array_new (FALSE, FALSE, sizeof (ScalePoint)));
          g_hash_table_insert (index, g_ptr_array_index (names, i), GUINT_TO_POINTER (i + 1));
        }
      g_array_append_val (g_ptr_array_index (pts, i), rp->pt);
    }
  return TRUE;
}

/* Speedup against workers with the Amdahl fit, per group of runs that agree
 * in every swept key but cluster.workers (speedup_points()).  Speedup of a
 * run with N workers: its throughput (samples / sim_time) over that
 * of the group's run with the fewest workers N0; the fit uses n = N / N0. */
static gboolean
plot_speedup (Plot *p, GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) pts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  Lines l;
  /* strong scaling (a fixed global batch) is what Amdahl's law describes;
   * under weak scaling (a fixed batch per worker) the speedup is drawn
   * without a fit */
  gboolean strong = FALSE;
  if (!speedup_points (p, names, pts, &strong, error)
      || !lines_begin (p, &l, "speedup.tsv", error))
    return FALSE;
  g_autoptr (GArray) fs = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) n0s = g_array_new (FALSE, FALSE, sizeof (double));
  double xmax = 1;
  for (guint i = 0; i < names->len; i++)
    {
      GArray *a = g_ptr_array_index (pts, i);
      ScalePoint *sp = (ScalePoint *) a->data;
      if (a->len < 2 || sp[a->len - 1].workers == sp[0].workers)
        continue;
      g_autofree double *n = g_new (double, a->len), *s = g_new (double, a->len);
      lines_next (&l, g_ptr_array_index (names, i));
      for (guint j = 0; j < a->len; j++)
        {
          n[j] = sp[j].workers / sp[0].workers;
          s[j] = sp[j].thr / sp[0].thr;
          lines_point (&l, sp[j].workers, s[j]);
          xmax = MAX (xmax, sp[j].workers);
        }
      double f = NAN;
      if (strong)
        {
          sim_amdahl_fit (n, s, (int) a->len, &f, NULL);
          g_autofree char *shown = sim_clean_text (g_ptr_array_index (names, i), LABEL_MAX);
          g_autofree char *note = g_strdup_printf ("serial fraction (Amdahl fit): f = %.6g  [%s]",
                                                   f, shown);
          if (p->sink)
            p->sink->note (p->sink->ctx, note);
          else
            printf ("%s\n", note);
        }
      g_array_append_val (fs, f);
      g_array_append_val (n0s, sp[0].workers);
    }
  gboolean ok = TRUE;
  if (l.left_out > 0)
    note_left_out (p, "speedup", l.left_out);
  if (l.titles->len == 0)
    skipped (p, "speedup", "the runs do not differ in cluster.workers");
  else if (l.points == 0)
    skipped (p, "speedup", "no point it could draw (speedups not finite or beyond 1e300 in magnitude)");
  else
    {
      g_autoptr (GString) v = lines_vars (&l, "ngroups");
      gp_nums (v, "f", fs);
      gp_nums (v, "n0", n0s);
      gp_num (v, "xmax", xmax);
      gp_num (v, "fit", strong);
      g_autofree char *out = out_path (p, "speedup");
      ok = draw (p, "speedup.gp", v, out, error);
    }
  lines_end (&l);
  return ok;
}

/* The iterations rows of each run, by run id (gint64 -> count as a
 * pointer), in one scan; NULL with *error set when the query fails. */
static GHashTable *
iteration_counts (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) runs
    = sim_tracedb_prepare (&p->t, "SELECT run_id, COUNT(*) FROM iterations GROUP BY run_id", error);
  if (!runs)
    return NULL;
  g_autoptr (GHashTable) counts = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  int rc;
  while ((rc = sim_tracedb_step (&p->t, runs, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (runs, 0);
      g_hash_table_insert (counts, g_memdup2 (&id, sizeof id),
                           GSIZE_TO_POINTER ((gsize) sqlite3_column_int64 (runs, 1)));
    }
  return rc < 0 ? NULL : g_steal_pointer (&counts);
}

/* Empirical CDF of worker iteration times, per run; at most CDF_POINTS
 * points per run (every k-th iteration, and the last). */
#define CDF_POINTS 200
static gboolean
plot_iteration_cdf (Plot *p, GError **error)
{
  /* the rows of each run, then all rows in one scan sorted by run */
  g_autoptr (GHashTable) counts = iteration_counts (p, error);
  g_autoptr (sqlite3_stmt) pts
    = counts ? sim_tracedb_prepare (&p->t, "SELECT run_id, end - start FROM iterations ORDER BY"
                                         " run_id, 2", error)
           : NULL;
  Lines l;
  if (!pts || !lines_begin (p, &l, "iteration-cdf.tsv", error))
    return FALSE;
  int rc;
  gint64 run = 0, count = 0, every = 1, k = 0;
  while ((rc = sim_tracedb_step (&p->t, pts, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (pts, 0);
      if (l.titles->len == 0 || id != run)
        {
          run = id;
          count = (gint64) GPOINTER_TO_SIZE (g_hash_table_lookup (counts, &id));
          every = MAX (1, count / CDF_POINTS);
          k = 0;
          lines_next (&l, label_of (p->labels, id));
        }
      k++;
      double t = sqlite3_column_double (pts, 1);
      if (!drawable (t))
        l.left_out++;
      else if (k % every == 0 || k == count || k == 1)
        lines_point (&l, t, (double) k / (double) count);
    }
  return lines_draw (p, &l, rc >= 0, "iteration-cdf",
                     "no iterations table rows ([trace] detail = summary)", NULL, error);
}

/* Mean compute / comm / wait per worker iteration, a stacked bar per run.
 * Data rows: bar number (1, 2, ...: its label is titles[n]), compute, comm,
 * wait. */
static gboolean
plot_breakdown (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT run_id, AVG(compute), AVG(comm), AVG(wait) FROM iterations"
                 " GROUP BY run_id ORDER BY run_id", error);
  Lines l;
  if (!st || !lines_begin (p, &l, "breakdown.tsv", error))
    return FALSE;
  int rc, maxlabel = 0;   /* characters of the longest bar label */
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      const char *label = label_of (p->labels, sqlite3_column_int64 (st, 0));
      double c[3];
      gboolean bar = TRUE;
      for (int i = 0; i < 3; i++)
        {
          c[i] = sqlite3_column_double (st, i + 1);
          bar = bar && drawable (c[i]);
        }
      /* a run whose means overflow (a row of 1e308, of infinity) gets no bar */
      if (!bar)
        {
          l.left_out++;
          continue;
        }
      l.points++;
      g_ptr_array_add (l.titles, sim_clean_text (label, BAR_LABEL_MAX));
      fprintf (l.f, "%u\t%.17g\t%.17g\t%.17g\n", l.titles->len, c[0], c[1], c[2]);
      maxlabel = MAX (maxlabel,
                      (int) g_utf8_strlen (g_ptr_array_index (l.titles, l.titles->len - 1), -1));
    }
  g_autoptr (GString) extra = g_string_new (NULL);
  gp_num (extra, "maxlabel", maxlabel);
  return lines_draw (p, &l, rc >= 0, "breakdown",
                     "no iterations table rows ([trace] detail = summary)", extra, error);
}

/* Share of worker iterations at each staleness, per run; not drawn when
 * every gradient was fresh (all at 0: nothing to read). */
static gboolean
plot_staleness (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) any
    = sim_tracedb_prepare (&p->t, "SELECT COUNT(*), MAX(staleness) FROM iterations", error);
  int ra;
  if (!any || (ra = sim_tracedb_step (&p->t, any, error)) < 0)
    return FALSE;
  if (ra == SQLITE_ROW && sqlite3_column_int64 (any, 0) > 0
      && sqlite3_column_int64 (any, 1) <= 0)
    {
      skipped (p, "staleness", "every gradient was applied fresh (staleness 0 in every run: "
                               "synchronous updates)");
      return TRUE;
    }
  /* the rows of each run, then every run's histogram in one scan */
  g_autoptr (GHashTable) counts = iteration_counts (p, error);
  g_autoptr (sqlite3_stmt) pts
    = counts ? sim_tracedb_prepare (&p->t, "SELECT run_id, staleness, COUNT(*) FROM iterations"
                                         " GROUP BY run_id, staleness ORDER BY run_id, staleness",
                                  error)
           : NULL;
  Lines l;
  if (!pts || !lines_begin (p, &l, "staleness.tsv", error))
    return FALSE;
  int rc;
  gint64 run = 0;
  double count = 1;
  while ((rc = sim_tracedb_step (&p->t, pts, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (pts, 0);
      if (l.titles->len == 0 || id != run)
        {
          run = id;
          count = (double) GPOINTER_TO_SIZE (g_hash_table_lookup (counts, &id));
          lines_next (&l, label_of (p->labels, id));
        }
      lines_point (&l, (double) sqlite3_column_int64 (pts, 1),
                   100.0 * (double) sqlite3_column_int64 (pts, 2) / count);
    }
  return lines_draw (p, &l, rc >= 0, "staleness",
                     "no iterations table rows ([trace] detail = summary)", NULL, error);
}

/* Each run's threshold for the time-to-target figure, by run id (gint64):
 * { threshold, NAN (the time it is met, filled by target_times), 1 when
 * it is the default DEF }.  An accuracy threshold is kept negative so that
 * it never equals a loss threshold.  KEYS: target_loss, target_accuracy. */
static GHashTable *
target_thresholds (Plot *p, const GArray *ids, const char *const *keys, double def)
{
  GHashTable *thr_of = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  for (guint i = 0; i < ids->len; i++)
    {
      gint64 id = g_array_index (ids, gint64, i);
      const SimTraceParam *tl = sim_tracedb_param (&p->t, id, keys[0]);
      const SimTraceParam *ta = sim_tracedb_param (&p->t, id, keys[1]);
      double target = tl && tl->text ? tl->real : 0, target_acc = ta && ta->text ? ta->real : 0;
      /* accuracy thresholds are kept negative so that they never equal a
       * loss threshold in the comparison below */
      double *thr = g_new (double, 3);
      thr[0] = target_acc > 0 ? -target_acc : target > 0 ? target : def;
      thr[1] = NAN;   /* the time it is met */
      thr[2] = target_acc > 0 || target > 0 ? 0 : 1;   /* 1: the default threshold */
      g_hash_table_insert (thr_of, g_memdup2 (&id, sizeof id), thr);
    }
  return thr_of;
}

/* Fills the time each run of THR_OF (target_thresholds) first meets its
 * threshold, INFINITY where a metric row's time is NULL, in one scan of
 * metrics sorted by run (a query per run would read the table once per
 * run).  FALSE with ERROR where the database cannot be read. */
static gboolean
target_times (Plot *p, GHashTable *thr_of, GError **error)
{
  g_autoptr (sqlite3_stmt) scan
    = sim_tracedb_prepare (&p->t, "SELECT run_id, sim_time, loss, accuracy FROM metrics WHERE"
                                  " run_id IN (SELECT id FROM runs) ORDER BY run_id, sim_time,"
                                  " step", error);
  int rc;
  while (scan && (rc = sim_tracedb_step (&p->t, scan, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (scan, 0);
      double *thr = g_hash_table_lookup (thr_of, &id);
      if (!thr || !isnan (thr[1]))
        continue;
      /* the value compared: accuracy or loss, numbers only (not NULL) */
      int col = thr[0] < 0 ? 3 : 2, type = sqlite3_column_type (scan, col);
      if (type != SQLITE_INTEGER && type != SQLITE_FLOAT)
        continue;
      double v = sqlite3_column_double (scan, col);
      if (thr[0] < 0 ? v >= -thr[0] : v <= thr[0])
        thr[1] = sqlite3_column_type (scan, 1) == SQLITE_NULL ? NAN
                                                              : sqlite3_column_double (scan, 1);
      /* a time of NULL reads as never reached, as one query per run gave */
      if (isnan (thr[1]))
        thr[1] = INFINITY;
    }
  return scan && rc >= 0;
}

/* Time to reach each run's threshold: its [scenario] target_accuracy when
 * set (> 0; the first evaluation at or above it), else its target_loss when
 * set, else sim_plot_default_target(); a bar per run with metrics.  Data
 * rows: bar number (its label is titles[n]), seconds or nan, 1 when not
 * reached. */
static gboolean
plot_time_to_target (Plot *p, GError **error)
{
  double def;
  if (!sim_tracedb_check (&p->t, default_target (p->t.db, &def), error))
    return FALSE;
  static const char *const keys[] = { "scenario.target_loss", "scenario.target_accuracy" };
  g_autoptr (GArray) ids = loss_runs (p, error);
  if (!ids || !sim_tracedb_params_load (&p->t, keys, G_N_ELEMENTS (keys), error))
    return FALSE;
  /* each run's threshold, then the time it first meets it */
  g_autoptr (GHashTable) thr_of = target_thresholds (p, ids, keys, def);
  if (!target_times (p, thr_of, error))
    return FALSE;
  Lines l;
  if (!lines_begin (p, &l, "time-to-target.tsv", error))
    return FALSE;
  int n_default = 0, n_acc = 0;
  int maxlabel = 0;   /* characters of the longest bar label */
  double first_thr = NAN;
  gboolean same = TRUE;
  for (guint i = 0; i < ids->len; i++)
    {
      gint64 id = g_array_index (ids, gint64, i);
      const double *thr = g_hash_table_lookup (thr_of, &id);
      n_default += (int) thr[2];
      n_acc += thr[0] < 0 ? 1 : 0;
      if (l.titles->len == 0)
        first_thr = thr[0];
      else if (thr[0] != first_thr)
        same = FALSE;
      g_ptr_array_add (l.titles, sim_clean_text (label_of (p->labels, id), BAR_LABEL_MAX));
      maxlabel = MAX (maxlabel,
                      (int) g_utf8_strlen (g_ptr_array_index (l.titles, l.titles->len - 1), -1));
      double t = thr[1];
      if (isnan (t) || isinf (t))
        fprintf (l.f, "%u\tnan\t1\n", l.titles->len);
      else if (!drawable (t))
        {
          l.left_out++;
          fprintf (l.f, "%u\tnan\t0\n", l.titles->len);
        }
      else
        fprintf (l.f, "%u\t%.17g\t0\n", l.titles->len, t);
      l.points++;
    }
  guint n = l.titles->len;
  g_autofree char *thr_text
    = !same ? g_strdup ("each run's target_accuracy or target_loss, else the default threshold")
      : n_acc == (int) n && n > 0
      ? g_strdup_printf ("accuracy >= %.4g%%, [scenario] target_accuracy", -100 * first_thr)
      : n_default == (int) n
      ? g_strdup_printf ("loss <= %.4g, the highest of the runs' lowest losses", first_thr)
      : g_strdup_printf ("loss <= %.4g, [scenario] target_loss", first_thr);
  g_autoptr (GString) extra = g_string_new (NULL);
  gp_num (extra, "maxlabel", maxlabel);
  gp_str (extra, "thr_text", thr_text);
  gp_str (extra, "what", same && n_acc == (int) n && n > 0 ? "accuracy" : same ? "loss" : "");
  return lines_draw (p, &l, TRUE, "time-to-target",
                     "no run has loss metrics (timing-only runs)", extra, error);
}

/* The run's label (run_labels()) without its workers: the line it belongs
 * to in the iteration-time figure; the scenario's name (or "runs") when
 * nothing but the workers differs. */
static char *
line_label (const char *label, const char *scenario_name)
{
  g_auto (GStrv) words = g_strsplit (label, " ", -1);
  GString *out = g_string_new (NULL);
  for (int i = 0; words[i]; i++)
    if (!g_str_has_prefix (words[i], "workers=") && !g_str_has_prefix (words[i], "cluster.workers="))
      g_string_append_printf (out, "%s%s", out->len ? " " : "", words[i]);
  if (out->len == 0)
    g_string_assign (out, scenario_name ? scenario_name : "runs");
  g_autofree char *raw = g_string_free (out, FALSE);
  return sim_clean_text (raw, G_MAXSIZE);
}

typedef struct {
  double x, y;
} Point;

/* Time per iteration against workers, when the runs sweep cluster.workers. */
static gboolean
plot_iteration_time (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT id, name, sim_time / iterations FROM runs WHERE"
                                  " status = 'done' AND iterations > 0 ORDER BY id", error);
  static const char *const keys[] = { "scenario.name", "cluster.workers" };
  if (!st || !sim_tracedb_params_load (&p->t, keys, G_N_ELEMENTS (keys), error))
    return FALSE;
  /* lines in order of first appearance; points sorted by workers */
  g_autoptr (GPtrArray) labels = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) points
    = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  g_autoptr (GHashTable) workers_seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  /* label (owned by labels) -> its index in labels + 1 */
  g_autoptr (GHashTable) line_of = g_hash_table_new (g_str_hash, g_str_equal);
  int rc;
  gint64 left_out = 0;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      const SimTraceParam *sc = sim_tracedb_param (&p->t, id, keys[0]);
      const SimTraceParam *w = sim_tracedb_param (&p->t, id, keys[1]);
      Point pt = { w && w->text ? (double) w->integer : 0, sqlite3_column_double (st, 2) };
      /* both axes are logarithmic */
      if (!(pt.x >= 1 && pt.x <= G_MAXINT && isfinite (pt.y) && pt.y > 0))
        continue;
      if (!drawable (pt.y))
        {
          left_out++;
          continue;
        }
      /* the scenario's name, NULL when the run has none */
      g_autofree char *label = line_label (label_of (p->labels, id), sc ? sc->text : NULL);
      guint i = GPOINTER_TO_UINT (g_hash_table_lookup (line_of, label));
      if (i-- == 0)
        {
          i = labels->len;
          g_hash_table_insert (line_of, label, GUINT_TO_POINTER (i + 1));
          g_ptr_array_add (labels, g_steal_pointer (&label));
          g_ptr_array_add (points, g_array_new (FALSE, FALSE, sizeof (Point)));
        }
      g_array_append_val (g_ptr_array_index (points, i), pt);
      g_hash_table_add (workers_seen, GINT_TO_POINTER ((int) pt.x));
    }
  if (rc < 0)
    return FALSE;
  if (left_out > 0)
    note_left_out (p, "iteration-time", left_out);
  if (g_hash_table_size (workers_seen) < 2)
    {
      skipped (p, "iteration-time", "the runs do not differ in cluster.workers");
      return TRUE;
    }
  Lines l;
  if (!lines_begin (p, &l, "iteration-time.tsv", error))
    return FALSE;
  for (guint i = 0; i < labels->len; i++)
    {
      GArray *a = g_ptr_array_index (points, i);
      lines_next (&l, g_ptr_array_index (labels, i));
      for (guint j = 0; j < a->len; j++)
        fprintf (l.f, "%.17g\t%.17g\n", g_array_index (a, Point, j).x,
                 g_array_index (a, Point, j).y);
    }
  g_autoptr (GString) v = lines_vars (&l, "nlines");
  g_autofree char *out = out_path (p, "iteration-time");
  gboolean ok = draw (p, "iteration-time.gp", v, out, error);
  lines_end (&l);
  return ok;
}

/* The end of run `run`'s timeline window in *xmax (seconds): the end of the
 * first TIMELINE_ROUNDS iterations of its slowest worker, else of its last
 * span; 0 when it has neither.  FALSE with *error set when a query fails. */
static gboolean
timeline_window (Plot *p, gint64 run, double *xmax, GError **error)
{
  *xmax = 0;
  g_autoptr (sqlite3_stmt) w
    = sim_tracedb_prepare (&p->t, "SELECT MAX(end) FROM iterations WHERE run_id = ?1 AND iteration < ?2"
                 " UNION ALL SELECT MAX(end) FROM spans WHERE run_id = ?1", error);
  if (!w || !sim_tracedb_rebind (&p->t, w, run, error)
      || !sim_tracedb_check (&p->t, sqlite3_bind_int (w, 2, TIMELINE_ROUNDS), error))
    return FALSE;
  int rc = SQLITE_DONE;
  while (!(*xmax > 0) && (rc = sim_tracedb_step (&p->t, w, error)) == SQLITE_ROW)
    if (sqlite3_column_type (w, 0) != SQLITE_NULL)
      *xmax = sqlite3_column_double (w, 0);
  return rc >= 0;
}

/* The actors of run `run` in a stable order (workers, then servers, by
 * their number) into `actors`, and actor -> row (GINT_TO_POINTER) into
 * `index`, which owns the names that `actors` points to.  FALSE with
 * *error set when a query fails. */
static gboolean
timeline_actors (Plot *p, gint64 run, GHashTable *index, GPtrArray *actors, GError **error)
{
  /* a pipeline's workers sort by replica and stage, as the pipeline runs */
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT DISTINCT actor FROM spans WHERE run_id = ? ORDER BY"
                 " (actor LIKE 'server%'), length(actor), actor", error);
  if (!st || !sim_tracedb_rebind (&p->t, st, run, error))
    return FALSE;
  int rc;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    if (!g_hash_table_contains (index, sim_tracedb_text (st, 0)))
      {
        char *a = g_strdup (sim_tracedb_text (st, 0));
        g_hash_table_insert (index, a, GINT_TO_POINTER ((int) actors->len));
        g_ptr_array_add (actors, a);
      }
  return rc >= 0;
}

/* The kinds of spans a timeline draws, one data block each, in the
 * template's order (timeline.gp): compute without a phase, a pipeline
 * stage's forward and backward, communication, waiting (and, in a
 * pipeline, its bubble: idle), server updates, a failed worker's downtime
 * (idle elsewhere).  A last block holds the micro-batch numbers. */
enum { TL_COMPUTE, TL_FORWARD, TL_BACKWARD, TL_COMM, TL_WAIT, TL_UPDATE, TL_DOWN, TL_GROUPS };

/* Writes to `l` the spans of run `run` that start before `xmax` (seconds),
 * one block per kind group, as rows "actor row, start, end", then the
 * forward and backward spans' micro-batches as "middle, row, micro-batch".
 * `pipeline`: the run has stages (idle is the bubble).  FALSE with *error
 * set when a query fails. */
static gboolean
timeline_spans (Plot *p, Lines *l, gint64 run, double xmax, GHashTable *index,
                gboolean pipeline, GArray *has, GError **error)
{
  static const char *const phase_cols[] = { "phase", "microbatch", NULL };
  int phased = sim_tracedb_has (&p->t, "spans", phase_cols, error);
  if (phased < 0)
    return FALSE;
  g_autofree char *sql = g_strdup_printf (
    "SELECT actor, start, end, kind, %s FROM spans WHERE run_id = ? AND start < ?"
    " ORDER BY start", phased ? "phase, microbatch" : "NULL, NULL");
  g_autoptr (sqlite3_stmt) sp = sim_tracedb_prepare (&p->t, sql, error);
  if (!sp || !sim_tracedb_rebind (&p->t, sp, run, error)
      || !sim_tracedb_check (&p->t, sqlite3_bind_double (sp, 2, xmax), error))
    return FALSE;
  GString *blocks[TL_GROUPS + 1];
  for (int g = 0; g <= TL_GROUPS; g++)
    {
      blocks[g] = g_string_new (NULL);
      /* a point outside the window keeps every block non-empty */
      g_string_append_printf (blocks[g], g < TL_GROUPS ? "0\t%.17g\t%.17g\n" : "%.17g\t0\t0\n",
                              -2 * xmax, -xmax);
    }
  int rc;
  while ((rc = sim_tracedb_step (&p->t, sp, error)) == SQLITE_ROW)
    {
      gpointer idx = g_hash_table_lookup (index, sim_tracedb_text (sp, 0));
      double a = sqlite3_column_double (sp, 1), b = sqlite3_column_double (sp, 2);
      const char *kind = sim_tracedb_text (sp, 3), *phase = sim_tracedb_text (sp, 4);
      if (!(drawable (a) && drawable (b)))
        continue;
      int g = strcmp (kind, "compute") == 0
                ? (strcmp (phase, "forward") == 0 ? TL_FORWARD
                   : strcmp (phase, "backward") == 0 ? TL_BACKWARD : TL_COMPUTE)
              : strcmp (kind, "send") == 0 || strcmp (kind, "recv") == 0 ? TL_COMM
              : strcmp (kind, "wait") == 0 ? TL_WAIT
              : strcmp (kind, "update") == 0 ? TL_UPDATE
              : strcmp (kind, "idle") == 0 ? (pipeline ? TL_WAIT : TL_DOWN)
              : -1;
      if (g < 0)
        continue;
      g_string_append_printf (blocks[g], "%d\t%.17g\t%.17g\n", GPOINTER_TO_INT (idx), a, b);
      g_array_index (has, double, g) = 1;
      if ((g == TL_FORWARD || g == TL_BACKWARD) && sqlite3_column_type (sp, 5) != SQLITE_NULL)
        g_string_append_printf (blocks[TL_GROUPS], "%.17g\t%d\t%" G_GINT64_FORMAT "\n",
                                (a + b) / 2, GPOINTER_TO_INT (idx),
                                (gint64) sqlite3_column_int64 (sp, 5));
    }
  static const char *const names[TL_GROUPS + 1] = {
    "compute", "forward", "backward", "communication", "waiting", "update", "down", "micro-batches"
  };
  for (int g = 0; g <= TL_GROUPS; g++)
    {
      lines_next (l, names[g]);
      fputs (blocks[g]->str, l->f);
      g_string_free (blocks[g], TRUE);
    }
  return rc >= 0;
}

/* Draws the timeline of run `run` from the spans in `l`: one row per actor of
 * `actors`, labelled (every k-th when there are many), window [0, xmax]
 * seconds, titled `title` (clean text). */
static gboolean
timeline_draw (Plot *p, Lines *l, gint64 run, const char *title, GPtrArray *actors,
               GHashTable *stage_of, GArray *has, double xmax, GError **error)
{
  /* many actors: label every k-th row only (the first and last always) */
  int n = (int) actors->len;
  int every = (n + TIMELINE_MAX_LABELS - 1) / TIMELINE_MAX_LABELS;
  g_autoptr (GPtrArray) shown = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) pos = g_array_new (FALSE, FALSE, sizeof (double));
  for (int i = 0; i < n; i++)
    if (i % every == 0 || i == n - 1)
      {
        double y = i;
        const char *a = g_ptr_array_index (actors, i);
        const SimTraceStage *st = g_hash_table_lookup (stage_of, a);
        g_autofree char *row
          = st ? g_strdup_printf ("stage %" G_GINT64_FORMAT " (%s, replica %" G_GINT64_FORMAT ")",
                                  st->stage, a, st->replica)
               : g_strdup (a);
        g_ptr_array_add (shown, sim_clean_text (row, LABEL_MAX));
        g_array_append_val (pos, y);
      }
  /* rows of 40 px, thinner past TIMELINE_MAX_LABELS actors, at most 4000 px */
  int height = 90 + (n > TIMELINE_MAX_LABELS ? MAX (4, 1280 / n) : 40) * n;
  g_autoptr (GString) v = g_string_new (NULL);
  gp_str (v, "datafile", l->data);
  gp_str (v, "runtitle", title);
  gp_num (v, "nactors", n);
  gp_num (v, "nshown", shown->len);
  gp_strs (v, "actors", shown);
  gp_nums (v, "actor_rows", pos);
  gp_num (v, "xmax", xmax);
  gp_num (v, "height", MIN (height, 4000));
  gp_num (v, "staged", g_hash_table_size (stage_of) > 0);
  gp_nums (v, "has", has);
  fflush (l->f);
  g_autofree char *name = g_strdup_printf ("timeline-run%" G_GINT64_FORMAT, run);
  g_autofree char *out = out_path (p, name);
  return draw (p, "timeline.gp", v, out, error);
}

/* What each actor of run `run` does during its first TIMELINE_ROUNDS rounds;
 * nothing when the run has no iteration or span to set the window.  `title`
 * is the run's name (clean text). */
static gboolean
plot_timeline (Plot *p, gint64 run, const char *title, GError **error)
{
  double xmax;
  if (!timeline_window (p, run, &xmax, error))
    return FALSE;
  if (!(xmax > 0))
    return TRUE;
  if (!drawable (xmax))
    {
      g_autofree char *name = g_strdup_printf ("timeline-run%" G_GINT64_FORMAT, run);
      skipped (p, name, "its window ends at a time not finite or beyond 1e300 in magnitude");
      return TRUE;
    }
  g_autoptr (GHashTable) index = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GPtrArray) actors = g_ptr_array_new ();   /* keys of index, in row order */
  Lines l;
  if (!timeline_actors (p, run, index, actors, error)
      || !lines_begin (p, &l, "timeline.tsv", error))
    return FALSE;
  /* a pipeline's rows say their stage (the stages table, when it has it) */
  g_autoptr (GHashTable) stage_of = sim_tracedb_stages (&p->t, run, error);
  if (!stage_of)
    {
      lines_end (&l);
      return FALSE;
    }
  gboolean pipeline = g_hash_table_size (stage_of) > 0;
  /* which kinds have spans: only those get a key entry */
  g_autoptr (GArray) has = g_array_new (FALSE, TRUE, sizeof (double));
  g_array_set_size (has, TL_GROUPS);
  gboolean ok = timeline_spans (p, &l, run, xmax, index, pipeline, has, error)
                && timeline_draw (p, &l, run, title, actors, stage_of, has, xmax, error);
  lines_end (&l);
  return ok;
}

/* Timelines of every run with spans. */
static gboolean
plot_timelines (Plot *p, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (&p->t, "SELECT id, name, status FROM runs WHERE id IN (SELECT run_id FROM"
                                  " spans) ORDER BY id", error);
  if (!st)
    return FALSE;
  int rc, timelines = 0, more = 0;
  while ((rc = sim_tracedb_step (&p->t, st, error)) == SQLITE_ROW)
    {
      if (timelines == SIM_PLOT_MAX_TIMELINES)
        {
          more++; /* one gnuplot per timeline: a database sets no bound on it */
          continue;
        }
      gint64 run = sqlite3_column_int64 (st, 0);
      /* a reader that shows a few (the report) chooses them */
      if (p->sink && p->sink->timeline && !p->sink->timeline (p->sink->ctx, run))
        continue;
      /* its scenario's name and its label (what differs from the other
       * runs), or its name where that is its label */
      static const char *const scenario_name[] = { "scenario.name" };
      if (!sim_tracedb_params_load (&p->t, scenario_name, 1, error))
        return FALSE;
      const SimTraceParam *sc = sim_tracedb_param (&p->t, run, scenario_name[0]);
      const char *label = label_of (p->labels, run), *name = sim_tracedb_text (st, 1);
      g_autofree char *raw = sc && sc->text && !g_str_has_prefix (label, name)
                             ? g_strdup_printf ("%s: %s", sc->text, label) : g_strdup (label);
      g_autofree char *title = sim_clean_text (raw, LABEL_MAX);
      if (!plot_timeline (p, run, title, error))
        return FALSE;
      timelines++;
    }
  if (rc < 0)
    return FALSE;
  if (timelines == 0 && !(p->sink && p->sink->timeline))
    skipped (p, "timeline", "no spans table rows ([trace] detail below spans)");
  if (more > 0)
    {
      g_autofree char *why = g_strdup_printf ("%d more runs with spans; the first %d are drawn",
                                              more, SIM_PLOT_MAX_TIMELINES);
      skipped (p, "timeline", why);
    }
  return TRUE;
}

/* Everything sim_plot does once its arguments are checked; the caller frees
 * p's members. */
static int
plot_db (Plot *p, const char *dbpath, const char *dir, GError **error)
{
  static const SimTraceTable required[] = {
    { "runs", { "id", "name", "status", "sim_time", "iterations", "updates", NULL } },
    { "params", { "run_id", "key", "value", NULL } },
    { "metrics", { "run_id", "sim_time", "step", "loss", NULL } },
    { "iterations", { "run_id", "iteration", "start", "end", "compute", "comm", "wait",
                      "staleness", NULL } },
    { "spans", { "run_id", "actor", "kind", "start", "end", NULL } },
  };
  if (!sim_tracedb_open (&p->t, dbpath, "plot", required, G_N_ELEMENTS (required), error))
    return 2;
  g_autofree char *outdir = dir ? g_strdup (dir) : g_path_get_dirname (dbpath);
  /* -o DIR is created when its parent exists (as mkdir would) */
  g_autofree char *parent = g_path_get_dirname (outdir);
  if (!g_file_test (outdir, G_FILE_TEST_EXISTS) && g_file_test (parent, G_FILE_TEST_IS_DIR))
    g_mkdir (outdir, 0755);
  if (!g_file_test (outdir, G_FILE_TEST_IS_DIR))
    {
      g_autofree char *o = sim_clean_text (outdir, 4096);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: directory '%s' cannot be created (does its parent exist?); create it"
                   " or choose another folder", o);
      return 2;
    }
  p->outdir = outdir;
  if (!(p->labels = run_labels (p, NULL, NULL, error)) || !note_unfinished (p, error))
    return 2;
  /* BASE: the database's name without its extension, control characters as _ */
  p->base = g_path_get_basename (dbpath);
  char *dot = strrchr (p->base, '.');
  if (dot && dot != p->base)
    *dot = '\0';
  for (char *c = p->base; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f)
      *c = '_';
  g_autoptr (GError) local = NULL;
  if (!(p->tmp = g_dir_make_tmp ("dtsim-plot-XXXXXX", &local)))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s; check the temporary folder (TMPDIR)", local->message);
      return 1;
    }
  GError *fail = NULL;
  gboolean ok = plot_metric_by (p, "sim_time", "loss", "loss-time", &fail)
    && plot_metric_by (p, "step", "loss", "loss-step", &fail)
    && plot_metric_by (p, "sim_time", "accuracy", "accuracy-time", &fail)
    && plot_consensus (p, &fail)
    && plot_iteration_time (p, &fail)
    && plot_speedup (p, &fail)
    && plot_iteration_cdf (p, &fail)
    && plot_breakdown (p, &fail)
    && plot_staleness (p, &fail)
    && plot_time_to_target (p, &fail)
    && plot_timelines (p, &fail);
  sim_remove_tree (p->tmp);
  p->outdir = NULL;
  if (ok)
    return 0;
  /* a query that fails is bad input (2); gnuplot or a write that fails, 1 */
  int code = fail->code == SIM_ERROR_INPUT ? 2 : 1;
  g_propagate_error (error, fail);
  return code;
}

int
sim_plot (const char *dbpath, const char *dir, const char *format, GError **error)
{
  return sim_plot_to (dbpath, dir, format, NULL, error);
}

int
sim_plot_to (const char *dbpath, const char *dir, const char *format, const SimPlotSink *sink,
             GError **error)
{
  const char *term;
  if (g_strcmp0 (format, "png") == 0)
    term = "pngcairo";
  else if (g_strcmp0 (format, "svg") == 0)
    term = "svg";
  else
    {
      g_autofree char *f = sim_clean_text (format, 40);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "--format: unknown format '%s'; use png or svg", f);
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
  Plot p = { .format = format, .term = term, .sink = sink };
  int code = plot_db (&p, dbpath, dir, error);
  if (p.labels)
    g_hash_table_unref (p.labels);
  /* every statement is finalized by now: g_autoptr, or at once by
   * first_double() */
  sim_tracedb_close (&p.t);
  g_free (p.tmp);
  g_free (p.base);
  return code;
}
