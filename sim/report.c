/*
 * report.c — what `dtsim run` prints when a run ends: the summary table (with
 * throughput and scaling efficiency when the sweep varies the workers), the
 * one JSON object of --json, and the lines of the points that failed.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/report.h"
#include "config/units.h"
#include "config/metrics.h"

static void
json_number (GString *s, const char *key, double v)
{
  if (isnan (v) || isinf (v))
    g_string_append_printf (s, "\"%s\": null", key);
  else
    g_string_append_printf (s, "\"%s\": %.17g", key, v);
}


/* A swept value: a number where all of it is one, else a string. */
static void
json_value (GString *s, const char *v)
{
  char *end = NULL;
  double d = g_ascii_strtod (v, &end);
  if (*v && end && *end == '\0' && isfinite (d) && !g_ascii_isspace (*v))
    {
      sim_append_double (s, d);
      return;
    }
  sim_append_json_string (s, v);
}

/* "params": the swept keys of c and their values (both keys of a joint
 * sweep "a/b=x/y"). */
static void
json_swept (GString *s, const SimConfig *c)
{
  g_string_append (s, "\"params\": {");
  int n = 0;
  for (guint i = 0; c->swept && i < c->swept->len; i++)
    {
      const char *label = g_ptr_array_index (c->swept, i), *eq = strchr (label, '=');
      if (!eq)
        continue;
      g_autofree char *lhs = g_strndup (label, (gsize) (eq - label));
      g_auto (GStrv) keys = g_strsplit (lhs, "/", -1);
      g_auto (GStrv) vals = g_strsplit (eq + 1, "/", -1);
      gboolean joint = g_strv_length (keys) == g_strv_length (vals);
      for (int k = 0; keys[k]; k++)
        {
          g_string_append (s, n++ ? ", " : "");
          sim_append_json_string (s, keys[k]);
          g_string_append (s, ": ");
          json_value (s, joint ? vals[k] : eq + 1);
        }
    }
  g_string_append (s, "}, ");
}

/* Training throughput of a run: samples per simulated second, the samples
 * its policy counted (PolResult.samples) over its simulated time; NAN for a
 * policy that trains nothing or a run that took no time. */
static double
throughput (const SimRunSummary *r)
{
  return r->samples >= 0 && r->sim_time > 0 ? (double) r->samples / r->sim_time : NAN;
}

/* The buyer's metrics of run r of configuration c (config/metrics.h). */
static void
metrics_of (const SimConfig *c, const SimRunSummary *r, SimMetrics *out)
{
  SimMetricsIn in;
  sim_metrics_inputs_of (c, &in);
  in.samples = r->samples >= 0 ? (double) r->samples : NAN;
  in.sim_time = r->sim_time;
  in.useful_time = r->useful_time;
  in.waste = r->waste;
  sim_metrics_compute (&in, out);
}

static void
json_run (GString *s, const SimConfig *c, const SimRunSummary *r, int id, const GError *err)
{
  g_string_append_printf (s, "\"run\": %d, \"name\": ", id);
  sim_append_json_string (s, c->name);
  g_string_append_printf (s, ", \"status\": \"%s\", ",
                          err ? "failed" : c->infeasible ? "infeasible" : "done");
  if (err || c->infeasible)
    {
      g_string_append (s, "\"error\": ");
      sim_append_json_string (s, err ? err->message : c->infeasible);
      g_string_append (s, ", ");
    }
  json_swept (s, c);
  json_number (s, "sim_time", r->sim_time);
  g_string_append_printf (s, ", \"iterations\": %" G_GINT64_FORMAT ", \"updates\": %"
                          G_GINT64_FORMAT ", ", r->iterations, r->updates);
  json_number (s, "final_loss", r->final_loss);
  g_string_append (s, ", ");
  json_number (s, "final_accuracy", r->final_accuracy);
  g_string_append_printf (s, ", \"events\": %" G_GUINT64_FORMAT ", ", r->events);
  json_number (s, "wall_time", r->wall_time);
  const double parts[] = { r->compute, r->comm, r->wait };
  double share[3];
  sim_time_shares (parts, 3, share);
  g_string_append (s, ", ");
  json_number (s, "compute_share", share[0]);
  g_string_append (s, ", ");
  json_number (s, "comm_share", share[1]);
  g_string_append (s, ", ");
  json_number (s, "wait_share", share[2]);
  g_string_append (s, ", ");
  json_number (s, "samples_per_s", throughput (r));
  SimMetrics m;
  metrics_of (c, r, &m);
  g_string_append (s, ", ");
  json_number (s, "tokens_per_s", m.tokens_per_s);
  g_string_append (s, ", ");
  json_number (s, "model_flops_per_gpu", m.model_flops);
  g_string_append (s, ", ");
  json_number (s, "mfu", m.mfu);
  g_string_append (s, ", ");
  json_number (s, "time_to_train", m.train_time);
  g_string_append (s, ", ");
  json_number (s, "gpu_hours", m.device_hours);
  g_string_append (s, ", ");
  json_number (s, "cost", m.cost);
  if (r->useful_time > 0)
    {
      g_string_append (s, ", ");
      json_number (s, "useful_time", r->useful_time);
      g_string_append (s, ", ");
      json_number (s, "goodput", m.goodput);
      g_string_append_printf (s, ", \"failures\": %" G_GINT64_FORMAT ", ", r->failures);
      json_number (s, "lost_time", r->lost);
      g_string_append (s, ", ");
      json_number (s, "checkpoint_time", r->checkpoint_time);
      g_string_append (s, ", ");
      json_number (s, "restart_time", r->restart_time);
      g_string_append (s, ", ");
      json_number (s, "expected_waste", r->waste);
    }
  if (r->stop)
    g_string_append_printf (s, ", \"stop\": \"%s\"", r->stop);
  else
    g_string_append (s, ", \"stop\": null");
}

/* The swept labels of c other than cluster.workers, joined: runs with the
 * same text differ only in their number of workers. */
static char *
scaling_group (const SimConfig *c, gboolean *has_workers)
{
  GString *g = g_string_new (NULL);
  for (guint i = 0; i < c->swept->len; i++)
    {
      const char *l = g_ptr_array_index (c->swept, i);
      if (g_str_has_prefix (l, "cluster.workers="))
        *has_workers = TRUE;
      else
        g_string_append_printf (g, "%s;", l);
    }
  return g_string_free (g, FALSE);
}

/* The optional columns of the summary table, the same for every row. */
typedef struct
{
  int w;                 /* characters of the run column */
  gboolean targets;      /* a run stops at a target: reached or missed, gradients */
  gboolean all_figure;   /* every run has its policy's own figure: no samples/s */
  gboolean scaling;      /* scaling efficiency (a sweep over cluster.workers) */
  const char *figure;    /* the title of the policies' own figure, or NULL */
  gboolean tokens;       /* some run's model counts tokens: tokens/s */
  gboolean mfu;          /* some run has model FLOPs: FLOP/s per GPU, MFU */
  gboolean train;        /* some run has a train length: time, GPU-hours */
  gboolean cost;         /* some run has a price: cost */
  gboolean fails;        /* some run's job fails: goodput, failures, lost,
                            checkpoint time, expected waste */
} TableCols;

/* Each run's scaling efficiency, into EFF: (throughput / workers) over that
 * of the run with the fewest workers among those with the same other swept
 * values (NAN for an infeasible run or without such a run).  Sets *SCALING
 * where some run sweeps cluster.workers, and *ALL_FIGURE where every run's
 * policy has its own figure (then there is no scaling column: EFF is left
 * as it is). */
static void
scaling_efficiency (GPtrArray *configs, const SimRunSummary *sums, double *eff,
                    gboolean *scaling, gboolean *all_figure)
{
  g_autoptr (GPtrArray) groups = g_ptr_array_new_with_free_func (g_free);
  *scaling = FALSE;
  *all_figure = TRUE;
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      g_ptr_array_add (groups, scaling_group (c, scaling));
      *all_figure = *all_figure && pol_lookup (c->policy)->figure_of != NULL;
    }
  *scaling = *scaling && !*all_figure;
  for (guint i = 0; *scaling && i < configs->len; i++)
    {
      const SimConfig *ci = g_ptr_array_index (configs, i);
      int base = -1;
      for (guint j = 0; j < configs->len; j++)
        {
          const SimConfig *cj = g_ptr_array_index (configs, j);
          if (!cj->infeasible
              && strcmp (g_ptr_array_index (groups, i), g_ptr_array_index (groups, j)) == 0
              && (base < 0 || cj->workers < ((SimConfig *) g_ptr_array_index (configs, base))->workers))
            base = (int) j;
        }
      if (ci->infeasible || base < 0)
        {
          eff[i] = NAN;
          continue;
        }
      const SimConfig *cb = g_ptr_array_index (configs, base);
      double tb = throughput (&sums[base]) / (double) cb->workers;
      eff[i] = tb > 0 ? throughput (&sums[i]) / (double) ci->workers / tb : NAN;
    }
}

/* A number of the table, or "-" for NAN, in a column `w` wide. */
static void
table_number (int w, const char *fmt, double v)
{
  char t[64];
  if (isfinite (v))
    g_snprintf (t, sizeof t, fmt, v);
  else
    g_strlcpy (t, "-", sizeof t);
  printf ("  %*s", w, t);
}

/* The buyer's columns of one row (those k shows). */
static void
table_metrics (const TableCols *k, const SimMetrics *m)
{
  if (k->tokens)
    table_number (12, "%.6g", m->tokens_per_s);
  if (k->mfu)
    {
      table_number (12, "%.4g", m->model_flops);
      table_number (6, "%.3g%%", 100 * m->mfu);
    }
  if (k->train)
    {
      g_autofree char *t = sim_metrics_format_time (m->train_time);
      printf ("  %12s", t);
      table_number (10, "%.4g", m->device_hours);
    }
  if (k->cost)
    table_number (10, "%.4g", m->cost);
}

/* The columns of a job that fails (those k shows), for run r. */
static void
table_failures (const TableCols *k, const SimRunSummary *r, const SimMetrics *m)
{
  if (!k->fails)
    return;
  gboolean on = r->useful_time > 0;
  table_number (8, "%.2f%%", on ? 100 * m->goodput : NAN);
  table_number (8, "%.0f", on ? (double) r->failures : NAN);
  table_number (10, "%.4g", on ? r->lost : NAN);
  table_number (10, "%.4g", on ? r->checkpoint_time : NAN);
  table_number (8, "%.2f%%", on ? 100 * r->waste : NAN);
}

/* One run's row of the summary table: C, its summary R, its scaling
 * efficiency EFF; "-" where a value is missing. */
static void
table_row (const TableCols *k, const SimConfig *c, const SimRunSummary *r, double eff,
           const SimMetrics *m)
{
  if (c->infeasible)
    {
      printf ("%-*s  %12s  (does not fit device memory: below)\n", k->w, c->name,
              "infeasible");
      return;
    }
  const double parts[] = { r->compute, r->comm, r->wait };
  double share[3];
  sim_time_shares (parts, 3, share);
  char loss[32], acc[32], pct[3][32];
  for (int j = 0; j < 3; j++)
    if (isnan (share[j]))
      g_strlcpy (pct[j], "-", sizeof pct[j]);
    else
      g_snprintf (pct[j], sizeof pct[j], "%.1f%%", 100 * share[j]);
  if (isnan (r->final_loss))
    {
      g_strlcpy (loss, "-", sizeof loss);
      g_strlcpy (acc, "-", sizeof acc);
    }
  else
    {
      g_snprintf (loss, sizeof loss, "%.4f", r->final_loss);
      g_snprintf (acc, sizeof acc, "%.2f%%", 100 * r->final_accuracy);
    }
  printf ("%-*s  %12.6g  %6" G_GINT64_FORMAT "  %8s  %8s  %8s  %8s  %8s",
          k->w, c->name, r->sim_time, r->iterations, loss, acc, pct[0], pct[1],
          pct[2]);
  if (k->targets)
    printf ("  %7s  %9" G_GINT64_FORMAT,
            g_str_has_prefix (r->stop ? r->stop : "", "target_") ? "reached"
            : c->target_loss > 0 || c->target_accuracy > 0 ? "missed" : "-", r->updates);
  const PolPolicyOps *ops = pol_lookup (c->policy);
  double sps = throughput (r);
  if (!k->all_figure && isfinite (sps))
    printf ("  %12.6g", sps);
  else if (!k->all_figure)
    printf ("  %12s", "-");
  if (k->scaling && !ops->figure_of && isfinite (eff))
    printf ("  %7.1f%%", 100 * eff);
  else if (k->scaling)
    printf ("  %8s", "-");
  if (k->figure && ops->figure_of)
    printf ("  %12.4g", ops->figure_of (c->values, c->workers,
                                         r->iterations > 0 ? r->sim_time / (double) r->iterations : 0));
  else if (k->figure)
    printf ("  %12s", "-");
  table_metrics (k, m);
  table_failures (k, r, m);
  printf ("\n");
}

/* The lines under the summary table: the trace's path DB and what each
 * column shown means, then the reason of each infeasible run. */
static void
table_footer (const TableCols *k, GPtrArray *configs, const char *db)
{
  printf ("trace: %s  (compute/comm/wait: share of worker time over completed iterations", db);
  if (!k->all_figure)
    printf ("; samples/s: samples trained on (each once, however many stages it crossed) per"
            " simulated second");
  if (k->targets)
    printf ("; target: [scenario] target_loss or target_accuracy, reached at sim time"
            " after that many gradients, or missed");
  if (k->scaling)
    printf ("; scaling: samples/s per worker over that of the fewest workers");
  if (k->figure)
    printf ("; %s: docs/policies.md", k->figure);
  if (k->tokens)
    printf ("; tokens/s: samples/s x [model] sequence");
  if (k->mfu)
    printf ("; FLOP/s/GPU: the model's forward + backward FLOPs per sample x samples/s /"
            " workers, without recomputation; MFU: that over [device] flops");
  if (k->train)
    printf ("; to train: [scenario] tokens / tokens/s or epochs x training samples /"
            " samples/s; GPU-hours: that x devices (workers and servers) / 3600");
  if (k->cost)
    printf ("; cost: GPU-hours x [cluster] price");
  if (k->fails)
    printf ("; sim time of a job that fails: wall-clock, checkpoints, lost work and restarts "
            "included; goodput: useful work / sim time; lost and ckpt: seconds of work "
            "failures undid and of checkpoint writes; waste: the first-order model's "
            "expected overhead C/tau + tau/(2M) + R/M per useful second, by which the time "
            "to train is stretched");
  printf (")\n");
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      if (c->infeasible)
        printf ("infeasible: run %u (%s): %s\n", i + 1, c->name, c->infeasible);
    }
}

void
sim_report_table (GPtrArray *configs, const SimRunSummary *sums, const char *db)
{
  gsize w = 4;
  for (guint i = 0; i < configs->len; i++)
    w = MAX (w, strlen (((SimConfig *) g_ptr_array_index (configs, i))->name));
  TableCols k = { (int) w, FALSE, TRUE, FALSE, NULL, FALSE, FALSE, FALSE, FALSE, FALSE };
  /* a sweep over cluster.workers also gets throughput and scaling efficiency */
  g_autofree double *eff = g_new0 (double, configs->len);
  scaling_efficiency (configs, sums, eff, &k.scaling, &k.all_figure);
  /* a policy with its own figure of merit (e.g. bus bandwidth) gets its
   * column, titled by the first such run's policy */
  for (guint i = 0; i < configs->len && !k.figure; i++)
    k.figure = pol_lookup (((SimConfig *) g_ptr_array_index (configs, i))->policy)->figure;
  /* runs that stop at a target get whether they reached it and the
   * gradients it took */
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      k.targets = k.targets || c->target_loss > 0 || c->target_accuracy > 0;
    }
  /* the buyer's metrics: each column where some feasible run has it */
  g_autofree SimMetrics *m = g_new0 (SimMetrics, MAX (configs->len, 1));
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      metrics_of (c, &sums[i], &m[i]);
      if (c->infeasible)
        continue;
      k.tokens = k.tokens || isfinite (m[i].tokens_per_s);
      k.mfu = k.mfu || isfinite (m[i].model_flops);
      k.train = k.train || isfinite (m[i].train_time);
      k.cost = k.cost || isfinite (m[i].cost);
      k.fails = k.fails || sums[i].useful_time > 0;
    }
  printf ("%-*s  %12s  %6s  %8s  %8s  %8s  %8s  %8s", (int) w, "run", "sim time (s)",
          "iters", "loss", "accuracy", "compute", "comm", "wait");
  if (k.targets)
    printf ("  %7s  %9s", "target", "gradients");
  if (!k.all_figure)
    printf ("  %12s", "samples/s");
  if (k.scaling)
    printf ("  %8s", "scaling");
  if (k.figure)
    printf ("  %12s", k.figure);
  if (k.tokens)
    printf ("  %12s", "tokens/s");
  if (k.mfu)
    printf ("  %12s  %6s", "FLOP/s/GPU", "MFU");
  if (k.train)
    printf ("  %12s  %10s", "to train", "GPU-hours");
  if (k.cost)
    printf ("  %10s", "cost");
  if (k.fails)
    printf ("  %8s  %8s  %10s  %10s  %8s", "goodput", "failures", "lost (s)", "ckpt (s)",
            "waste");
  printf ("\n");
  for (guint i = 0; i < configs->len; i++)
    table_row (&k, g_ptr_array_index (configs, i), &sums[i], eff[i], &m[i]);
  table_footer (&k, configs, db);
}

void
sim_report_json (GPtrArray *configs, const SimRunSummary *sums, GError **errors, const char *db)
{
  GString *s = g_string_new ("{");

  guint64 events = 0;
  double wall = 0;
  for (guint i = 0; i < configs->len; i++)
    {
      events += sums[i].events;
      wall += sums[i].wall_time;
    }
  g_string_append (s, "\"db\": ");
  sim_append_json_string (s, db);
  g_string_append (s, ", ");
  g_string_append_printf (s, "\"total_events\": %" G_GUINT64_FORMAT ", ", events);
  json_number (s, "total_wall_time", wall);
  g_string_append (s, ", \"runs\": [");
  for (guint i = 0; i < configs->len; i++)
    {
      g_string_append (s, i ? ", {" : "{");
      json_run (s, g_ptr_array_index (configs, i), &sums[i], (int) i + 1,
                errors ? errors[i] : NULL);
      g_string_append (s, "}");
    }
  g_string_append (s, "]}\n");
  fputs (s->str, stdout);
  g_string_free (s, TRUE);
}

/* The exit code of a failed point: 2 for bad input, 1 otherwise. */
static int
exit_code_of (const GError *e)
{
  return g_error_matches (e, SIM_ERROR, SIM_ERROR_INPUT) ? 2 : 1;
}

int
sim_report_failures (GPtrArray *configs, GError **errors, const char *db, gboolean replaced,
                     GError **error)
{
  guint n = configs->len, n_failed = 0;
  int code = 0;
  GError *first = NULL;
  for (guint i = 0; i < n; i++)
    if (errors[i])
      {
        n_failed++;
        code = MAX (code, exit_code_of (errors[i]));
        if (!first)
          first = errors[i];
        if (n > 1)
          fprintf (stderr, "dtsim: %s (run %u/%u: %s)\n", errors[i]->message, i + 1, n,
                   ((SimConfig *) g_ptr_array_index (configs, i))->name);
      }
  g_assert (first);
  SimErrorCode kind = code == 2 ? SIM_ERROR_INPUT : SIM_ERROR_RUNTIME;
  if (n == 1)
    g_set_error_literal (error, SIM_ERROR, kind, first->message);
  else if (replaced)
    g_set_error (error, SIM_ERROR, kind,
                 "%u of %u runs failed (listed above); %s holds every run, each with its status"
                 " and error", n_failed, n, db);
  else
    g_set_error (error, SIM_ERROR, kind, "all %u runs failed (listed above); %s was left as"
                 " it was", n, db);
  return code;
}
