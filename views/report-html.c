/*
 * report-html.c — `dtsim report DB`: the run table, the parameters, every
 * figure `dtsim plot` draws and what each shows, in one HTML file that
 * needs nothing else (no network, no script, no font to fetch).
 *
 * Safety (the database may come from someone else; tracedb.c reads it):
 * every text from it is cleaned (sim_clean_text) and HTML-escaped; the
 * figures are gnuplot's SVG files, drawn as plot.c draws them, each inlined
 * as an <img> with a data: URL, so that a figure is an image and nothing in
 * it can run (browsers run no script of an SVG shown as an image); the
 * page's Content-Security-Policy allows data: images and its own style
 * only.  The file is written whole or not at all (outfile.c).
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "views/export.h"
#include "views/outfile.h"
#include "views/plot.h"
#include "views/report-html.h"
#include "config/simconfig.h"
#include "views/tracedb.h"
#include "config/units.h"

/* What each figure shows and how to read it, by the start of its name. */
static const struct {
  const char *prefix, *title, *text;
} explained[] = {
  { "loss-time", "Training loss against simulated time",
    "Each line is a run: the loss of its model as the simulated clock advances. The run whose "
    "line is lowest at a given time has trained best in that much cluster time, which is "
    "what a deadline or a budget buys: a policy can take more steps per second and still lose "
    "here if each step does less." },
  { "loss-step", "Training loss against steps",
    "The same losses against gradients applied. Runs that differ on the time axis but not "
    "here differ in speed only; a curve above the others here means each of its updates does "
    "less, as stale gradients (SSP, async) do." },
  { "accuracy-time", "Test accuracy against simulated time",
    "Accuracy on held-out samples as the clock advances; the dashed line is the target the "
    "runs stop at, when they share one." },
  { "consensus", "Consensus distance",
    "How far the workers' models are from their average (gossip): it must shrink for the "
    "workers to agree; a sparse graph keeps it high longer." },
  { "iteration-time", "Time per iteration against workers",
    "Simulated time of one iteration as workers are added, one line per combination of the "
    "other swept keys. Flat means compute dominates; rising means communication or the "
    "slowest worker does." },
  { "speedup", "Speedup against workers",
    "Throughput over that of the fewest workers. Points are measured, the curve is Amdahl's "
    "law fitted to them (its serial fraction is below), the dashed line is ideal scaling: the "
    "gap between the points and the line is what the cluster costs." },
  { "iteration-cdf", "Distribution of iteration times",
    "The share of worker iterations that took at most a given time. A vertical line is a "
    "perfectly regular run; a long right tail is stragglers or waiting, the time a "
    "synchronous policy pays for its slowest worker." },
  { "breakdown", "Where worker time goes",
    "Per run, the mean time of a worker iteration split into compute, communication and "
    "waiting (for a barrier, a staleness bound or the slowest worker)." },
  { "staleness", "Staleness of applied gradients",
    "How many updates behind the model a worker's gradient was computed on. BSP is all at "
    "0; SSP is bounded by its staleness; async spreads with the workers' speeds." },
  { "time-to-target", "Time to reach the target loss",
    "Simulated time until each run's loss first reached the threshold: the single number "
    "that compares runs for a training goal." },
  { "timeline", "Timeline",
    "What each worker and server does during the first iterations: computing, "
    "communicating, waiting, and, for a pipeline, the stages' forward and backward passes "
    "and the bubble between them." },
};

typedef struct {
  GPtrArray *figures;    /* char * name, then char * path, in drawing order */
  GPtrArray *skipped;    /* char * "figure: why" */
  GPtrArray *notes;      /* char * */
} Collected;

static void
got_figure (gpointer ctx, const char *figure, const char *path,
            const char *digest G_GNUC_UNUSED)
{
  Collected *c = ctx;
  g_ptr_array_add (c->figures, g_strdup (figure));
  g_ptr_array_add (c->figures, g_strdup (path));
}

static void
got_skipped (gpointer ctx, const char *figure, const char *why)
{
  Collected *c = ctx;
  g_ptr_array_add (c->skipped, g_strdup_printf ("%s: %s", figure, why));
}

static void
got_note (gpointer ctx, const char *line)
{
  Collected *c = ctx;
  g_ptr_array_add (c->notes, g_strdup (line));
}

/* Appends `text` (clean text) HTML-escaped. */
static void
esc (GString *s, const char *text)
{
  for (const char *c = text ? text : ""; *c; c++)
    switch (*c)
      {
      case '&': g_string_append (s, "&amp;"); break;
      case '<': g_string_append (s, "&lt;"); break;
      case '>': g_string_append (s, "&gt;"); break;
      case '"': g_string_append (s, "&quot;"); break;
      case '\'': g_string_append (s, "&#39;"); break;
      default: g_string_append_c (s, *c);
      }
}

static void
cell_number (GString *s, double v, const char *fmt)
{
  g_string_append (s, "<td class=\"n\">");
  if (isfinite (v))
    g_string_append_printf (s, fmt, v);
  else
    g_string_append (s, "&ndash;");
  g_string_append (s, "</td>");
}

/* The errors of the runs that have one, as a list under the table. */
static void
run_errors (GString *s, GPtrArray *runs)
{
  gboolean any = FALSE;
  for (guint i = 0; i < runs->len; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      if (!r->error)
        continue;
      if (!any)
        g_string_append (s, "<ul class=\"errors\">\n");
      any = TRUE;
      g_string_append_printf (s, "<li>run %" G_GINT64_FORMAT " (", r->id);
      esc (s, r->status);
      g_string_append (s, "): ");
      esc (s, r->error);
      g_string_append (s, "</li>\n");
    }
  if (any)
    g_string_append (s, "</ul>\n");
}

/* Which optional columns the run table has: those some run has a value
 * for. */
typedef struct {
  gboolean scaling, loss, tokens, mfu, train, cost;
} RunColumns;

/* The run table's header row, for the swept keys and the columns. */
static void
run_table_head (GString *s, GPtrArray *keys, const RunColumns *c)
{
  g_string_append (s, "<table id=\"runs\">\n<thead><tr><th>run</th><th>status</th>");
  for (guint k = 0; k < keys->len; k++)
    {
      g_autofree char *key = sim_clean_text (g_ptr_array_index (keys, k), 120);
      g_string_append (s, "<th>");
      esc (s, key);
      g_string_append (s, "</th>");
    }
  g_string_append (s, "<th>sim time (s)</th><th>iterations</th><th>samples/s</th>");
  if (c->scaling)
    g_string_append (s, "<th>scaling</th>");
  if (c->tokens)
    g_string_append (s, "<th>tokens/s</th>");
  if (c->mfu)
    g_string_append (s, "<th>model FLOP/s per GPU</th><th>MFU</th>");
  if (c->train)
    g_string_append (s, "<th>time to train</th><th>GPU-hours</th>");
  if (c->cost)
    g_string_append (s, "<th>cost</th>");
  if (c->loss)
    g_string_append (s, "<th>loss</th><th>accuracy</th>");
  g_string_append (s, "<th>compute</th><th>comm</th><th>wait</th></tr></thead>\n<tbody>\n");
}

static void
run_table (GString *s, GPtrArray *runs, GPtrArray *keys)
{
  RunColumns c = { FALSE };
  for (guint i = 0; i < runs->len; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      c.scaling = c.scaling || isfinite (r->scaling);
      c.loss = c.loss || isfinite (r->final_loss);
      c.tokens = c.tokens || isfinite (r->metrics.tokens_per_s);
      c.mfu = c.mfu || isfinite (r->metrics.model_flops);
      c.train = c.train || isfinite (r->metrics.train_time);
      c.cost = c.cost || isfinite (r->metrics.cost);
    }
  gboolean scaling = c.scaling, loss = c.loss, tokens = c.tokens, mfu = c.mfu,
    train = c.train, cost = c.cost;
  run_table_head (s, keys, &c);
  for (guint i = 0; i < runs->len; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      g_string_append_printf (s, "<tr><td class=\"n\">%" G_GINT64_FORMAT "</td><td class=\"%s\">",
                              r->id, g_strcmp0 (r->status, "done") == 0 ? "ok" : "bad");
      esc (s, r->status);
      g_string_append (s, "</td>");
      for (guint k = 0; k < keys->len; k++)
        {
          g_string_append (s, "<td>");
          esc (s, r->swept[k] ? r->swept[k] : "");
          g_string_append (s, "</td>");
        }
      const double parts[] = { r->compute, r->comm, r->wait };
      double share[3];
      sim_time_shares (parts, 3, share);
      cell_number (s, r->sim_time, "%.6g");
      cell_number (s, r->iterations, "%.0f");
      cell_number (s, r->samples_per_s, "%.6g");
      if (scaling)
        cell_number (s, 100 * r->scaling, "%.1f%%");
      const SimMetrics *m = &r->metrics;
      if (tokens)
        cell_number (s, m->tokens_per_s, "%.6g");
      if (mfu)
        {
          cell_number (s, m->model_flops, "%.4g");
          cell_number (s, 100 * m->mfu, "%.3g%%");
        }
      if (train)
        {
          g_autofree char *t = sim_metrics_format_time (m->train_time);
          g_string_append_printf (s, "<td class=\"n\">%s</td>",
                                  isfinite (m->train_time) ? t : "&ndash;");
          cell_number (s, m->device_hours, "%.4g");
        }
      if (cost)
        cell_number (s, m->cost, "%.4g");
      if (loss)
        {
          cell_number (s, r->final_loss, "%.4f");
          cell_number (s, 100 * r->final_accuracy, "%.2f%%");
        }
      for (int k = 0; k < 3; k++)
        cell_number (s, 100 * share[k], "%.1f%%");
      g_string_append (s, "</tr>\n");
    }
  g_string_append (s, "</tbody></table>\n");
  run_errors (s, runs);
}

/* The keys every run has with one value, in a table. */
static gboolean
params_table (GString *s, SimTraceDb *t, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (t, "SELECT key, MIN(value) FROM params GROUP BY key HAVING"
                              " COUNT(DISTINCT value) = 1 AND COUNT(*) = (SELECT COUNT(*) FROM"
                              " runs) ORDER BY MIN(rowid)", error);
  if (!st)
    return FALSE;
  g_string_append (s, "<details><summary>Every key with the same value in every run</summary>"
                      "\n<table id=\"params\">\n<thead><tr><th>key</th><th>value</th></tr>"
                      "</thead>\n<tbody>\n");
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      g_autofree char *k = sim_clean_text (sim_tracedb_text (st, 0), 120);
      g_autofree char *v = sim_clean_text (sim_tracedb_text (st, 1), 400);
      g_string_append (s, "<tr><td>");
      esc (s, k);
      g_string_append (s, "</td><td>");
      esc (s, v);
      g_string_append (s, "</td></tr>\n");
    }
  g_string_append (s, "</tbody></table></details>\n");
  return rc >= 0;
}

/* One drawn figure (NAME, its SVG at PATH) as a <figure>: its title and
 * explanation from explained[], the SVG inline, and under it the notes that
 * concern it. */
static gboolean
figure_one (GString *s, const Collected *c, const char *name, const char *path,
            GError **error)
{
  g_autofree char *svg = NULL;
  gsize len = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &svg, &len, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "cannot read a drawn figure: %s",
                   local->message);
      return FALSE;
    }
  const char *title = name, *text = "";
  for (gsize k = 0; k < G_N_ELEMENTS (explained); k++)
    if (g_str_has_prefix (name, explained[k].prefix))
      {
        title = explained[k].title;
        text = explained[k].text;
        break;
      }
  g_autofree char *b64 = g_base64_encode ((const guchar *) svg, len);
  g_string_append_printf (s, "<figure id=\"fig-%s\">\n<h3>", name);
  esc (s, title);
  if (g_str_has_prefix (name, "timeline-run"))
    g_string_append_printf (s, ", run %s", name + strlen ("timeline-run"));
  g_string_append (s, "</h3>\n<img alt=\"");
  esc (s, title);
  g_string_append_printf (s, "\" src=\"data:image/svg+xml;base64,%s\">\n<figcaption>", b64);
  esc (s, text);
  /* the Amdahl fits under the speedup; the rows a figure left out
   * under it ("N rows left out of NAME: ...") */
  g_autofree char *mine = g_strdup_printf (" left out of %s:", name);
  for (guint n = 0; n < c->notes->len; n++)
    {
      const char *note = g_ptr_array_index (c->notes, n);
      if ((strcmp (name, "speedup") == 0 && g_str_has_prefix (note, "serial fraction"))
          || strstr (note, mine))
        {
          g_string_append (s, "<br>");
          esc (s, note);
        }
    }
  g_string_append (s, "</figcaption>\n</figure>\n");
  return TRUE;
}

/* The lists under the figures: rows left out of figures that were not drawn
 * at all, and the figures not drawn for lack of data. */
static void
figures_missing (GString *s, const Collected *c)
{
  gboolean any = FALSE;
  for (guint n = 0; n < c->notes->len; n++)
    {
      const char *note = g_ptr_array_index (c->notes, n), *of = strstr (note, " left out of ");
      gboolean drawn = FALSE;
      for (guint i = 0; of && i + 1 < c->figures->len; i += 2)
        {
          g_autofree char *mine
            = g_strdup_printf (" left out of %s:", (char *) g_ptr_array_index (c->figures, i));
          drawn = drawn || g_str_has_prefix (of, mine);
        }
      if (!of || drawn)
        continue;
      if (!any)
        g_string_append (s, "<p>Rows of the database no figure could draw:</p>\n"
                            "<ul class=\"skipped\">\n");
      any = TRUE;
      g_string_append (s, "<li>");
      esc (s, note);
      g_string_append (s, "</li>\n");
    }
  if (any)
    g_string_append (s, "</ul>\n");
  if (c->skipped->len)
    {
      g_string_append (s, "<p>Not drawn, for lack of data:</p>\n<ul class=\"skipped\">\n");
      for (guint i = 0; i < c->skipped->len; i++)
        {
          g_string_append (s, "<li>");
          esc (s, g_ptr_array_index (c->skipped, i));
          g_string_append (s, "</li>\n");
        }
      g_string_append (s, "</ul>\n");
    }
}

/* Every drawn figure in C, in the order drawn, then what was not drawn. */
static gboolean
figures (GString *s, const Collected *c, GError **error)
{
  for (guint i = 0; i + 1 < c->figures->len; i += 2)
    if (!figure_one (s, c, g_ptr_array_index (c->figures, i),
                     g_ptr_array_index (c->figures, i + 1), error))
      return FALSE;
  figures_missing (s, c);
  return TRUE;
}

static const char style[] =
  "body{font-family:sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}"
  "h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}"
  "table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ddd;padding:.25em .6em}"
  "th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:"
  "tabular-nums}td.ok{color:#176317}td.bad{color:#a31515;font-weight:bold}"
  "figure{margin:2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}"
  "figcaption{color:#444;max-width:60em}ul.errors{color:#a31515}"
  "details{margin:1em 0}summary{cursor:pointer}.meta{color:#666}";

/* Where the page goes: OUT, or beside DB with .html for its extension. */
static char *
report_path (const char *db, const char *out)
{
  if (out)
    return g_strdup (out);
  g_autofree char *stem = g_strdup (db);
  char *dot = strrchr (stem, '.');
  if (dot && !strchr (dot, '/'))
    *dot = '\0';
  return g_strconcat (stem, ".html", NULL);
}

/* Writes the page S to PATH whole or not at all (views/outfile.c; DB is the
 * database it must not replace). */
static gboolean
write_page (const char *path, const char *db, GString *s, GError **error)
{
  SimOutFile o = { 0 };
  gboolean ok = sim_outfile_open (&o, path, db, error);
  if (ok)
    ok = sim_outfile_write (&o, s, error);
  GError *late = NULL;
  if (!sim_outfile_close (&o, ok, ok ? &late : NULL) && ok)
    {
      g_propagate_error (error, late);
      ok = FALSE;
    }
  return ok;
}

/* The page's head and its first lines: the database's name as title, how
 * many runs ended how, the scenario and the versions that wrote and read it. */
static void
page_head (GString *s, const char *db, const GPtrArray *runs)
{
  g_autofree char *base = g_path_get_basename (db);
  guint n[3] = { 0, 0, 0 };
  for (guint i = 0; i < runs->len; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      n[g_strcmp0 (r->status, "done") == 0 ? 0 : g_strcmp0 (r->status, "infeasible") == 0 ? 2
                                                                                        : 1]++;
    }
  const SimExportRun *first = runs->len ? g_ptr_array_index (runs, 0) : NULL;
  g_string_append (s, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                      "'none'; img-src data:; style-src 'unsafe-inline'\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>dtsim report: ");
  g_autofree char *cbase = sim_clean_text (base, 120);
  esc (s, cbase);
  g_string_append_printf (s, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
  esc (s, cbase);
  g_string_append (s, "</h1>\n<p class=\"meta\">");
  g_string_append_printf (s, "%u run%s: %u done, %u failed, %u infeasible. Scenario ",
                          runs->len, runs->len == 1 ? "" : "s", n[0], n[1], n[2]);
  esc (s, first ? first->scenario : "");
  g_string_append (s, "; written by dtsim ");
  esc (s, first ? first->version : "");
  g_string_append_printf (s, ", reported by dtsim %s.</p>\n", PACKAGE_VERSION);
}

int
sim_report_html (const char *db, const char *out, GError **error)
{
  SimTraceDb t = { 0 };
  gsize n_required;
  const SimTraceTable *required = sim_export_required (&n_required);
  if (!sim_tracedb_open (&t, db, "report", required, n_required, error))
    {
      sim_tracedb_close (&t);
      return 2;
    }
  g_autoptr (GPtrArray) keys = NULL;
  g_autoptr (GPtrArray) runs = sim_export_runs (&t, 0, &keys, error);
  g_autoptr (GString) params = g_string_new (NULL);
  gboolean ok = runs && params_table (params, &t, error);
  sim_tracedb_close (&t);
  if (!ok)
    return 2;

  /* the figures, drawn as dtsim plot draws them, into a private folder */
  g_autoptr (GError) local = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("dtsim-report-XXXXXX", &local);
  if (!tmp)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s; check the temporary folder (TMPDIR)",
                   local->message);
      return 1;
    }
  Collected c = { g_ptr_array_new_with_free_func (g_free),
                  g_ptr_array_new_with_free_func (g_free),
                  g_ptr_array_new_with_free_func (g_free) };
  SimPlotSink sink = { got_figure, got_skipped, got_note, &c };
  int code = sim_plot_to (db, tmp, "svg", &sink, error);

  g_autoptr (GString) s = g_string_new (NULL);
  if (code == 0)
    {
      page_head (s, db, runs);
      g_string_append (s, "<h2>Runs</h2>\n<p>One row per run (sweep point); the swept keys "
                          "are the columns after the status. Samples/s is the samples "
                          "trained on (each once, however many pipeline stages it crossed) "
                          "over simulated time; compute, comm and wait are shares of "
                          "worker time.</p>\n");
      run_table (s, runs, keys);
      g_string_append (s, "<h2>Parameters</h2>\n");
      g_string_append (s, params->str);
      g_string_append (s, "<h2>Figures</h2>\n");
      if (!figures (s, &c, error))
        code = 1;
      g_string_append (s, "</body>\n</html>\n");
    }
  g_ptr_array_unref (c.figures);
  g_ptr_array_unref (c.skipped);
  g_ptr_array_unref (c.notes);
  /* the private folder and its figures */
  sim_remove_tree (tmp);
  if (code != 0)
    return code;

  g_autofree char *path = report_path (db, out);
  if (!write_page (path, db, s, error))
    return error && *error && (*error)->code == SIM_ERROR_INPUT ? 2 : 1;
  if (strcmp (path, "-") != 0)
    {
      g_autofree char *p = sim_clean_text (path, 4096);
      printf ("%s\n", p);
    }
  return 0;
}
