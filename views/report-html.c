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
    "Each line is a run (a job, in a run of several jobs): the loss of its model as the "
    "simulated clock advances. The run whose "
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

/* Timelines the page shows at most: the baseline (first run), the best and
 * the worst; `dtsim plot` draws every run's. */
#define REPORT_TIMELINES 3

typedef struct {
  GPtrArray *figures;    /* char * name, then char * path, in drawing order */
  GPtrArray *skipped;    /* char * "figure: why" */
  GPtrArray *notes;      /* char * */
  gint64 shown[REPORT_TIMELINES]; /* runs whose timeline is drawn (0: none) */
  char role[REPORT_TIMELINES][32]; /* "baseline", "best", "worst", or "best and worst" */
  int declined;          /* runs with spans whose timeline is not drawn */
} Collected;

/* Whether run `run` gets a timeline: one of c->shown; counts the others. */
static gboolean
wants_timeline (gpointer ctx, gint64 run)
{
  Collected *c = ctx;
  for (int i = 0; i < REPORT_TIMELINES; i++)
    if (c->shown[i] == run)
      return TRUE;
  c->declined++;
  return FALSE;
}

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

/* --- what differs between the runs, and which is best -------------------- */

/* What the runs are ranked by, the first that applies: the simulated time
 * to the scenario's target (some run reached it), the cost of training (a
 * price and a train length are set), the time to train, else the simulated
 * time per iteration.  Lower is better for each. */
typedef enum { BY_TARGET, BY_COST, BY_TRAIN, BY_ITERATION } Measure;

static const char *const measure_name[] = {
  "simulated time to the target", "cost of training", "time to train",
  "simulated time per iteration",
};

/* What the page says of the runs beyond their rows. */
typedef struct {
  char *title;           /* [scenario] name (clean text), else the database's name */
  GArray *cols;          /* guint: indices into the swept keys whose values differ */
  GPtrArray *heads;      /* char *: each one's short name: after its last '.',
                            unless two differing keys share it */
  GPtrArray *labels;     /* char *: each run's "short=value ..." (clean text) */
  gboolean targets;      /* some run's scenario sets a target */
  gboolean *target;      /* (runs) its scenario sets target_loss or _accuracy */
  Measure measure;
  double *value;         /* (runs) the measure, NAN where it has none */
  GArray *ranked;        /* guint: run indices with a value, best first */
} Points;

static void
points_clear (Points *pt)
{
  g_free (pt->title);
  g_clear_pointer (&pt->cols, g_array_unref);
  g_clear_pointer (&pt->heads, g_ptr_array_unref);
  g_clear_pointer (&pt->labels, g_ptr_array_unref);
  g_free (pt->target);
  g_free (pt->value);
  g_clear_pointer (&pt->ranked, g_array_unref);
}

/* Whether run r reached its target (its stop reason is target_...). */
static gboolean
reached (const SimExportRun *r)
{
  return g_str_has_prefix (r->stop ? r->stop : "", "target_");
}

/* Run r's value of measure m (NAN where it has none). */
static double
measure_of (const SimExportRun *r, Measure m)
{
  if (g_strcmp0 (r->status, "done") != 0)
    return NAN;
  switch (m)
    {
    case BY_TARGET:
      return reached (r) ? r->sim_time : NAN;
    case BY_COST:
      return r->metrics.cost;
    case BY_TRAIN:
      return r->metrics.train_time;
    case BY_ITERATION:
    default:
      return r->iterations > 0 ? r->sim_time / r->iterations : NAN;
    }
}

static gint
by_value (gconstpointer a, gconstpointer b, gpointer values)
{
  double x = ((double *) values)[*(const guint *) a], y = ((double *) values)[*(const guint *) b];
  if (x != y)
    return x < y ? -1 : 1;
  return *(const guint *) a < *(const guint *) b ? -1 : *(const guint *) a > *(const guint *) b;
}

/* Fills pt from the runs (their swept `keys`) and the params of t: the
 * title, the differing keys and labels, the targets and the ranking.
 * FALSE with *error set when reading the params fails. */
static gboolean
points_of (Points *pt, SimTraceDb *t, const char *db, GPtrArray *runs, GPtrArray *keys,
           GError **error)
{
  static const char *const wanted[] = { "scenario.name", "scenario.target_loss",
                                        "scenario.target_accuracy" };
  if (!sim_tracedb_params_load (t, wanted, G_N_ELEMENTS (wanted), error))
    return FALSE;
  guint n = runs->len;
  const SimExportRun *first = n ? g_ptr_array_index (runs, 0) : NULL;
  const SimTraceParam *name = first ? sim_tracedb_param (t, first->id, wanted[0]) : NULL;
  if (name && name->text && *name->text)
    pt->title = sim_clean_text (name->text, 120);
  else
    {
      g_autofree char *base = g_path_get_basename (db);
      pt->title = sim_clean_text (base, 120);
    }
  /* the swept keys whose values differ between the runs */
  pt->cols = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint k = 0; k < keys->len; k++)
    {
      gboolean differs = FALSE;
      for (guint i = 1; i < n && !differs; i++)
        differs = g_strcmp0 (((SimExportRun *) g_ptr_array_index (runs, i))->swept[k],
                             first->swept[k]) != 0;
      if (differs)
        g_array_append_val (pt->cols, k);
    }
  pt->heads = g_ptr_array_new_with_free_func (g_free);
  for (guint c = 0; c < pt->cols->len; c++)
    {
      const char *k = g_ptr_array_index (keys, g_array_index (pt->cols, guint, c));
      const char *dot = strrchr (k, '.'), *sh = dot ? dot + 1 : k;
      for (guint d = 0; d < pt->cols->len; d++)
        {
          const char *o = g_ptr_array_index (keys, g_array_index (pt->cols, guint, d));
          const char *od = strrchr (o, '.');
          if (d != c && strcmp (od ? od + 1 : o, sh) == 0)
            sh = k;
        }
      g_ptr_array_add (pt->heads, sim_clean_text (sh, 120));
    }
  pt->labels = g_ptr_array_new_with_free_func (g_free);
  pt->target = g_new0 (gboolean, MAX (n, 1));
  pt->value = g_new0 (double, MAX (n, 1));
  gboolean any_reached = FALSE, any_cost = FALSE, any_train = FALSE;
  for (guint i = 0; i < n; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      GString *l = g_string_new (NULL);
      for (guint c = 0; c < pt->cols->len; c++)
        {
          const char *v = r->swept[g_array_index (pt->cols, guint, c)];
          g_string_append_printf (l, "%s%s=%s", l->len ? " " : "",
                                  (char *) g_ptr_array_index (pt->heads, c), v ? v : "-");
        }
      if (l->len == 0)
        g_string_assign (l, n == 1 ? pt->title : r->name ? r->name : "");
      g_ptr_array_add (pt->labels, sim_clean_text (l->str, 400));
      g_string_free (l, TRUE);
      const SimTraceParam *tl = sim_tracedb_param (t, r->id, wanted[1]);
      const SimTraceParam *ta = sim_tracedb_param (t, r->id, wanted[2]);
      pt->target[i] = (tl && tl->real > 0) || (ta && ta->real > 0);
      pt->targets = pt->targets || pt->target[i];
      any_reached = any_reached || isfinite (measure_of (r, BY_TARGET));
      any_cost = any_cost || isfinite (measure_of (r, BY_COST));
      any_train = any_train || isfinite (measure_of (r, BY_TRAIN));
    }
  pt->measure = any_reached ? BY_TARGET : any_cost ? BY_COST : any_train ? BY_TRAIN
              : BY_ITERATION;
  pt->ranked = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; i < n; i++)
    {
      pt->value[i] = measure_of (g_ptr_array_index (runs, i), pt->measure);
      if (isfinite (pt->value[i]))
        g_array_append_val (pt->ranked, i);
    }
  g_array_sort_with_data (pt->ranked, by_value, pt->value);
  return TRUE;
}

/* A duration for a sentence: 12.3 us, 4.56 ms, 7.89 s, 3.2 hours, 25 days. */
static char *
duration (double seconds)
{
  if (seconds < 1e-3)
    return g_strdup_printf ("%.3g &micro;s", seconds * 1e6);
  if (seconds < 1)
    return g_strdup_printf ("%.3g ms", seconds * 1e3);
  return sim_metrics_format_time (seconds);
}

/* Measure m's value v for a sentence (HTML). */
static char *
measure_text (Measure m, double v)
{
  if (m == BY_COST)
    return g_strdup_printf ("a cost of %.4g", v);
  g_autofree char *d = duration (v);
  return m == BY_ITERATION ? g_strdup_printf ("%s per iteration", d)
         : m == BY_TARGET ? g_strdup_printf ("%s to the target", d)
         : g_strdup_printf ("%s to train", d);
}

/* Appends "LABEL (run N)" of run index i. */
static void
point_name (GString *s, GPtrArray *runs, const Points *pt, guint i)
{
  g_string_append (s, "<b>");
  esc (s, g_ptr_array_index (pt->labels, i));
  g_string_append_printf (s, "</b> (run %" G_GINT64_FORMAT ")",
                          ((SimExportRun *) g_ptr_array_index (runs, i))->id);
}

/* One run's headline figures, comma separated (HTML). */
static void
headline (GString *s, const SimExportRun *r, gboolean target)
{
  g_autofree char *per = duration (r->sim_time / r->iterations);
  g_string_append_printf (s, "%s per iteration", per);
  if (isfinite (r->samples_per_s))
    g_string_append_printf (s, ", %.4g samples/s", r->samples_per_s);
  const SimMetrics *m = &r->metrics;
  if (isfinite (m->tokens_per_s))
    g_string_append_printf (s, ", %.4g tokens/s", m->tokens_per_s);
  if (isfinite (m->mfu))
    g_string_append_printf (s, ", MFU %.3g%%", 100 * m->mfu);
  if (isfinite (m->train_time))
    {
      g_autofree char *t = duration (m->train_time);
      g_string_append_printf (s, ", %s to train (%.4g GPU-hours)", t, m->device_hours);
    }
  if (isfinite (m->cost))
    g_string_append_printf (s, ", a cost of %.4g", m->cost);
  if (target && reached (r))
    {
      g_autofree char *t = duration (r->sim_time);
      g_string_append_printf (s, "; it reached its target in %s after %.0f gradients", t,
                              r->updates);
    }
  else if (target)
    g_string_append (s, "; it missed its target");
}

/* The first paragraph: the question the runs answer and its answer. */
static void
lead (GString *s, GPtrArray *runs, const Points *pt)
{
  guint n = runs->len, k = pt->ranked->len;
  g_string_append (s, "<p class=\"lead\" id=\"answer\">");
  if (n == 1)
    {
      const SimExportRun *r = g_ptr_array_index (runs, 0);
      if (g_strcmp0 (r->status, "done") != 0 || !(r->iterations > 0))
        {
          g_string_append (s, "The run did not finish (status ");
          esc (s, r->status);
          g_string_append (s, "): see below.</p>\n");
          return;
        }
      g_string_append (s, "<b>Headline:</b> ");
      headline (s, r, pt->target[0]);
      g_string_append (s, ".</p>\n");
      return;
    }
  g_string_append_printf (s, "<b>Question:</b> which of the %u runs", n);
  if (pt->heads->len)
    {
      g_string_append (s, ", differing in ");
      for (guint c = 0; c < pt->heads->len; c++)
        {
          g_string_append (s, c == 0 ? "" : c + 1 == pt->heads->len ? " and " : ", ");
          esc (s, g_ptr_array_index (pt->heads, c));
        }
      g_string_append (s, ",");
    }
  g_string_append_printf (s, " has the lowest %s? <b>Answer:</b> ", measure_name[pt->measure]);
  if (k == 0)
    {
      g_string_append (s, "none finished with one.</p>\n");
      return;
    }
  guint best = g_array_index (pt->ranked, guint, 0);
  point_name (s, runs, pt, best);
  g_autofree char *bv = measure_text (pt->measure, pt->value[best]);
  g_string_append_printf (s, ", %s", bv);
  const SimExportRun *rb = g_ptr_array_index (runs, best);
  if (pt->measure == BY_COST && isfinite (rb->metrics.train_time))
    {
      g_autofree char *t = duration (rb->metrics.train_time);
      g_string_append_printf (s, " (%s to train)", t);
    }
  if (k == 1)
    g_string_append (s, "; no other run has one");
  else
    {
      guint next = g_array_index (pt->ranked, guint, 1);
      double a = pt->value[best], b = pt->value[next];
      if (b > a)
        g_string_append_printf (s, ", %.3g%% below the next best, ", 100 * (b - a) / b);
      else
        g_string_append (s, ", tied with ");
      point_name (s, runs, pt, next);
      g_autofree char *nv = measure_text (pt->measure, b);
      g_string_append_printf (s, " (%s)", nv);
      guint worst = g_array_index (pt->ranked, guint, k - 1);
      if (k > 2 && a > 0)
        {
          g_string_append (s, "; the worst, ");
          point_name (s, runs, pt, worst);
          double x = pt->value[worst] / a;
          g_string_append_printf (s, x < 1000 ? ", is %.3g&times; the best"
                                               : ", is %.0f&times; the best", x);
        }
    }
  if (pt->measure == BY_TARGET && k < n)
    g_string_append_printf (s, "; %u of the %u runs did not reach the target", n - k, n);
  g_string_append (s, ".</p>\n");
}

/* Which optional columns the run table has: those some run has a value
 * for. */
typedef struct {
  gboolean scaling, loss, tokens, mfu, train, cost;
} RunColumns;

/* The run table's header row: the keys that differ (short names, the
 * whole key as a tooltip), the columns. */
static void
run_table_head (GString *s, GPtrArray *keys, const Points *pt, const RunColumns *c)
{
  g_string_append (s, "<table id=\"runs\">\n<thead><tr><th>run</th><th>status</th>");
  for (guint k = 0; k < pt->cols->len; k++)
    {
      g_autofree char *key
        = sim_clean_text (g_ptr_array_index (keys, g_array_index (pt->cols, guint, k)), 120);
      g_string_append (s, "<th title=\"");
      esc (s, key);
      g_string_append (s, "\">");
      esc (s, g_ptr_array_index (pt->heads, k));
      g_string_append (s, "</th>");
    }
  g_string_append (s, "<th>sim time (s)</th><th>iterations</th>");
  if (pt->targets)
    g_string_append (s, "<th>target</th><th>gradients</th>");
  g_string_append (s, "<th>samples/s</th>");
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
run_table (GString *s, GPtrArray *runs, GPtrArray *keys, const Points *pt)
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
  run_table_head (s, keys, pt, &c);
  for (guint i = 0; i < runs->len; i++)
    {
      const SimExportRun *r = g_ptr_array_index (runs, i);
      g_string_append_printf (s, "<tr><td class=\"n\">%" G_GINT64_FORMAT "</td><td class=\"%s\">",
                              r->id, g_strcmp0 (r->status, "done") == 0 ? "ok" : "bad");
      esc (s, r->status);
      g_string_append (s, "</td>");
      for (guint k = 0; k < pt->cols->len; k++)
        {
          const char *v = r->swept[g_array_index (pt->cols, guint, k)];
          g_string_append (s, "<td>");
          esc (s, v ? v : "");
          g_string_append (s, "</td>");
        }
      const double parts[] = { r->compute, r->comm, r->wait };
      double share[3];
      sim_time_shares (parts, 3, share);
      cell_number (s, r->sim_time, "%.6g");
      cell_number (s, r->iterations, "%.0f");
      /* as `dtsim run` prints them: reached or missed, and the gradients
       * applied (sim/report.c) */
      if (pt->targets)
        {
          const char *what = reached (r) ? "reached" : pt->target[i] ? "missed" : "&ndash;";
          g_string_append_printf (s, "<td>%s</td>", what);
          cell_number (s, r->updates, "%.0f");
        }
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
figure_one (GString *s, const Collected *c, const Points *pt, GPtrArray *runs,
            const char *name, const char *path, GError **error)
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
    {
      /* the run, what sets it apart and why it is shown */
      gint64 id = g_ascii_strtoll (name + strlen ("timeline-run"), NULL, 10);
      g_string_append_printf (s, ", run %" G_GINT64_FORMAT, id);
      for (guint i = 0; i < runs->len; i++)
        if (((SimExportRun *) g_ptr_array_index (runs, i))->id == id && runs->len > 1)
          {
            g_string_append (s, ": ");
            esc (s, g_ptr_array_index (pt->labels, i));
          }
      for (int i = 0; i < REPORT_TIMELINES; i++)
        if (c->shown[i] == id && runs->len > 1)
          g_string_append_printf (s, " (%s)", c->role[i]);
    }
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

/* Every drawn figure in C, in the order drawn, how to draw the timelines
 * left out (`db`: the database, as given), then what was not drawn. */
static gboolean
figures (GString *s, const Collected *c, const Points *pt, GPtrArray *runs, const char *db,
         GError **error)
{
  for (guint i = 0; i + 1 < c->figures->len; i += 2)
    if (!figure_one (s, c, pt, runs, g_ptr_array_index (c->figures, i),
                     g_ptr_array_index (c->figures, i + 1), error))
      return FALSE;
  if (c->declined > 0)
    {
      g_autofree char *shown = sim_clean_text (db, 400);
      g_string_append_printf (s, "<p id=\"more-timelines\">The timelines of the %d other run%s"
                              " with spans are not shown here; <code>dtsim plot ",
                              c->declined, c->declined == 1 ? "" : "s");
      esc (s, shown);
      g_string_append (s, " -o DIR</code> draws every run&#39;s timeline, one file each.</p>\n");
    }
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
  "details{margin:1em 0}summary{cursor:pointer}.meta{color:#666}"
  "p.lead{font-size:1.1em;max-width:60em}";

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

/* The page's head and its first lines: the scenario's name as title, how
 * many runs ended how, the scenario file and the versions that wrote and
 * read it. */
static void
page_head (GString *s, const Points *pt, const GPtrArray *runs)
{
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
                      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>");
  esc (s, pt->title);
  g_string_append_printf (s, " &ndash; dtsim report</title>\n<style>%s</style>\n</head>\n<body>\n<h1>",
                          style);
  esc (s, pt->title);
  g_string_append (s, "</h1>\n<p class=\"meta\">");
  g_string_append_printf (s, "%u run%s: %u done, %u failed, %u infeasible. Scenario ",
                          runs->len, runs->len == 1 ? "" : "s", n[0], n[1], n[2]);
  esc (s, first ? first->scenario : "");
  g_string_append (s, "; written by dtsim ");
  esc (s, first ? first->version : "");
  g_string_append_printf (s, ", reported by dtsim %s.</p>\n", PACKAGE_VERSION);
}

/* The runs whose timelines the page shows, into c: the baseline (the first
 * run), the best and the worst by pt's measure. */
static void
choose_timelines (Collected *c, GPtrArray *runs, const Points *pt)
{
  guint k = pt->ranked->len;
  const SimExportRun *pick[REPORT_TIMELINES] = {
    runs->len ? g_ptr_array_index (runs, 0) : NULL,
    k ? g_ptr_array_index (runs, g_array_index (pt->ranked, guint, 0)) : NULL,
    k > 1 ? g_ptr_array_index (runs, g_array_index (pt->ranked, guint, k - 1)) : NULL,
  };
  static const char *const role[REPORT_TIMELINES] = { "baseline", "best", "worst" };
  int m = 0;
  for (int i = 0; i < REPORT_TIMELINES; i++)
    {
      if (!pick[i])
        continue;
      int j = 0;
      while (j < m && c->shown[j] != pick[i]->id)
        j++;
      if (j == m)
        {
          c->shown[m++] = pick[i]->id;
          g_strlcpy (c->role[j], role[i], sizeof c->role[j]);
        }
      else
        {
          g_strlcat (c->role[j], " and ", sizeof c->role[j]);
          g_strlcat (c->role[j], role[i], sizeof c->role[j]);
        }
    }
}

/* The page: its head, the answer, the runs, the parameters and the
 * figures collected in c.  FALSE with `error` set where a figure cannot
 * be read back. */
static gboolean
page_body (GString *s, Collected *c, const Points *pt, GPtrArray *runs, GPtrArray *keys,
           const GString *params, const char *db, GError **error)
{
  page_head (s, pt, runs);
  lead (s, runs, pt);
  g_string_append (s, "<h2>Runs</h2>\n<p>One row per run (sweep point); the swept keys "
                      "whose values differ between runs are the columns after the "
                      "status. Samples/s is the samples trained on (each once, however "
                      "many pipeline stages it crossed) over simulated time; compute, "
                      "comm and wait are shares of worker time.");
  if (pt->targets)
    g_string_append (s, " Target: whether the run reached its [scenario] target_loss or "
                        "target_accuracy (at its sim time, after that many gradients) or "
                        "missed it.");
  g_string_append (s, "</p>\n");
  run_table (s, runs, keys, pt);
  g_string_append (s, "<h2>Parameters</h2>\n");
  g_string_append (s, params->str);
  g_string_append (s, "<h2>Figures</h2>\n");
  gboolean ok = figures (s, c, pt, runs, db, error);
  g_string_append (s, "</body>\n</html>\n");
  return ok;
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
  Points pt = { 0 };
  gboolean ok = runs && params_table (params, &t, error)
                && points_of (&pt, &t, db, runs, keys, error);
  sim_tracedb_close (&t);
  if (!ok)
    {
      points_clear (&pt);
      return 2;
    }

  /* the figures, drawn as dtsim plot draws them, into a private folder */
  g_autoptr (GError) local = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("dtsim-report-XXXXXX", &local);
  if (!tmp)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s; check the temporary folder (TMPDIR)",
                   local->message);
      points_clear (&pt);
      return 1;
    }
  Collected c = { g_ptr_array_new_with_free_func (g_free),
                  g_ptr_array_new_with_free_func (g_free),
                  g_ptr_array_new_with_free_func (g_free), { 0 }, { "" }, 0 };
  choose_timelines (&c, runs, &pt);
  SimPlotSink sink = { got_figure, got_skipped, got_note, &c, wants_timeline };
  int code = sim_plot_to (db, tmp, "svg", &sink, error);

  g_autoptr (GString) s = g_string_new (NULL);
  if (code == 0 && !page_body (s, &c, &pt, runs, keys, params, db, error))
    code = 1;
  g_ptr_array_unref (c.figures);
  g_ptr_array_unref (c.skipped);
  g_ptr_array_unref (c.notes);
  points_clear (&pt);
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
