/*
 * export.c — `dtsim export DB --format csv | json | perfetto`.
 *
 * CSV and JSON give one row per run: its id, name, status, error and stop,
 * every swept parameter as a column of its own (the keys of the sweep, as
 * the runs' names give them, with the values the params table holds), then
 * the summary the run table shows: simulated time, iterations, updates,
 * samples per simulated second (runs.samples / sim_time: the samples the
 * run's policy trained on, each once; see throughput_of for traces older
 * than that column), scaling
 * efficiency where the runs differ in cluster.workers (samples/s per worker
 * over that of the run with the fewest workers and the same other swept
 * values), the final loss and accuracy, the shares of compute, communication
 * and waiting, and the wall time.  A run of several jobs (table jobs) is
 * followed by a row per job (its name in a `job` column, which only a
 * database holding such a run has; its end, iterations, final loss and last
 * accuracy).  Perfetto's format is perfetto.c's.
 *
 * The database may come from someone else (tracedb.c has the rules for
 * reading it).  What is written from it: text made valid UTF-8 with control
 * characters as spaces; in CSV, a text cell that a spreadsheet would read as
 * a formula (starting with =, +, -, @) is prefixed with ', and every cell
 * with a comma, quote or line break is quoted (RFC 4180); in JSON, strings
 * escaped and numbers finite (NaN and missing values are null).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "views/export.h"
#include "views/outfile.h"
#include "views/perfetto.h"
#include "config/simconfig.h"
#include "views/tracedb.h"
#include "policies/policy.h"
#include "config/units.h"

typedef SimExportRun Run;

static void
run_free (Run *r)
{
  g_free (r->scenario);
  g_free (r->name);
  g_free (r->status);
  g_free (r->error);
  g_free (r->stop);
  g_free (r->version);
  g_strfreev (r->swept);
  g_free (r);
}

/* Column i as a number; NAN for NULL. */
static double
col_number (sqlite3_stmt *st, int i)
{
  return sqlite3_column_type (st, i) == SQLITE_NULL ? NAN : sqlite3_column_double (st, i);
}

/* Column i as clean text; NULL for NULL. */
static char *
col_clean (sqlite3_stmt *st, int i)
{
  if (sqlite3_column_type (st, i) == SQLITE_NULL)
    return NULL;
  return sim_clean_text (sim_tracedb_text (st, i), G_MAXSIZE);
}

/* `s` as a finite number when all of it is one. */
static gboolean
as_number (const char *s, double *v)
{
  if (!s || !*s)
    return FALSE;
  char *end = NULL;
  *v = g_ascii_strtod (s, &end);
  return end && *end == '\0' && isfinite (*v) && !g_ascii_isspace (s[0]);
}

/* Samples per simulated second of r: `samples` (runs.samples, NAN where
 * NULL: a policy that trains nothing) over its simulated time.  A trace
 * older than that column (schema 6 and before, `counted` FALSE) has only
 * the gradients: updates x batch is the samples for every data-parallel
 * policy, but not for the pipeline (each sample crosses every stage) nor
 * the collective benchmark (no samples), whose throughput stays unknown. */
static double
throughput_of (const Run *r, gboolean counted, double samples, const char *kind)
{
  if (!(r->sim_time > 0))
    return NAN;
  if (counted)
    return samples >= 0 ? samples / r->sim_time : NAN;
  const PolPolicyOps *ops = kind ? pol_lookup (kind) : NULL;
  if (!kind || (ops && ops->updates_not_samples))
    return NAN;
  return isfinite (r->batch) ? r->updates * r->batch / r->sim_time : NAN;
}

/* The params rows the buyer's metrics come from (config/metrics.h), in
 * the order metrics_in() reads them, and the unit each is written in. */
static const struct {
  const char *key;
  SimUnitKind unit;
} metric_params[] = {
  { "cluster.devices", SIM_UNIT_NONE }, { "model.flops_per_sample", SIM_UNIT_NONE },
  { "model.tokens_per_sample", SIM_UNIT_NONE }, { "device.flops", SIM_UNIT_COMPUTE },
  { "scenario.tokens", SIM_UNIT_NONE }, { "scenario.epochs", SIM_UNIT_NONE },
  { "model.train_samples", SIM_UNIT_NONE }, { "cluster.price", SIM_UNIT_NONE },
  { "failures.useful", SIM_UNIT_NONE }, { "failures.expected_waste", SIM_UNIT_NONE },
  { "failures.count", SIM_UNIT_NONE }, { "failures.lost", SIM_UNIT_NONE },
  { "failures.checkpoint_total", SIM_UNIT_NONE },
};

/* Run r's metrics from its `samples` (NAN: unknown; for a trace older than
 * runs.samples, its throughput x sim_time) and its params rows.  A row
 * that is missing or not a number (an older or hostile trace) makes the
 * metrics that need it unknown. */
static void
metrics_of (SimTraceDb *t, Run *r, double samples)
{
  double v[G_N_ELEMENTS (metric_params)];
  for (gsize k = 0; k < G_N_ELEMENTS (metric_params); k++)
    {
      const SimTraceParam *p = sim_tracedb_param (t, r->id, metric_params[k].key);
      const char *why;
      if (!p || !p->text || !sim_parse_quantity (p->text, metric_params[k].unit, &v[k], &why)
          || !isfinite (v[k]))
        v[k] = NAN;
    }
  SimMetricsIn in = {
    .samples = isfinite (samples) ? samples : r->samples_per_s * r->sim_time,
    .sim_time = r->sim_time,
    .workers = r->workers,
    .devices = v[0],
    .flops_per_sample = v[1],
    .tokens_per_sample = v[2],
    .peak = v[3],
    .tokens = v[4],
    .epochs = v[5],
    .train_samples = v[6],
    .price = v[7],
    .useful_time = isfinite (v[8]) ? v[8] : 0,
    .waste = isfinite (v[9]) ? v[9] : 0,
  };
  sim_metrics_compute (&in, &r->metrics);
  r->failures = v[10];
  r->lost = v[11];
  r->checkpoint = v[12];
  r->waste = in.useful_time > 0 ? in.waste : NAN;
  r->metrics.samples_per_s = r->samples_per_s;
}

/* The runs (all, or `only`), each with its swept values: one scan of runs
 * and one of params, whatever the number of runs and keys. */
static GPtrArray *
load_runs (SimTraceDb *t, GPtrArray *keys, gint64 only, GError **error)
{
  const char *const samples_col[] = { "samples", NULL };
  int counted = sim_tracedb_has (t, "runs", samples_col, error);
  if (counted < 0)
    return NULL;
  const char *wanted[] = { "model.batch", "cluster.workers", "policy.kind" };
  g_autofree const char **all = g_new (const char *, keys->len + G_N_ELEMENTS (wanted));
  for (guint k = 0; k < keys->len + G_N_ELEMENTS (wanted); k++)
    all[k] = k < keys->len ? g_ptr_array_index (keys, k) : wanted[k - keys->len];
  /* and the metrics' rows, in the same one scan of params */
  gsize n_all = keys->len + G_N_ELEMENTS (wanted);
  g_autofree const char **load = g_new (const char *, n_all + G_N_ELEMENTS (metric_params));
  memcpy (load, all, n_all * sizeof *load);
  for (gsize k = 0; k < G_N_ELEMENTS (metric_params); k++)
    load[n_all + k] = metric_params[k].key;
  if (!sim_tracedb_params_load (t, load, n_all + G_N_ELEMENTS (metric_params), error))
    return NULL;
  g_autofree char *sql
    = g_strdup_printf ("SELECT id, scenario, name, seed, status, error, stop, sim_time,"
                       " wall_time, events, iterations, updates, final_loss,"
                       " final_accuracy, compute, comm, wait, version, %s FROM runs"
                       " WHERE ?1 <= 0 OR id = ?1 ORDER BY id", counted ? "samples" : "NULL");
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (t, sql, error);
  if (!st || !sim_tracedb_check (t, sqlite3_bind_int64 (st, 1, only), error))
    return NULL;
  g_autoptr (GPtrArray) runs = g_ptr_array_new_with_free_func ((GDestroyNotify) run_free);
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      Run *r = g_new0 (Run, 1);
      g_ptr_array_add (runs, r);
      r->id = sqlite3_column_int64 (st, 0);
      r->scenario = col_clean (st, 1);
      r->name = col_clean (st, 2);
      r->seed = col_number (st, 3);
      r->status = col_clean (st, 4);
      r->error = col_clean (st, 5);
      r->stop = col_clean (st, 6);
      double *nums[] = { &r->sim_time, &r->wall_time, &r->events, &r->iterations, &r->updates,
                         &r->final_loss, &r->final_accuracy, &r->compute, &r->comm, &r->wait };
      for (gsize k = 0; k < G_N_ELEMENTS (nums); k++)
        *nums[k] = col_number (st, 7 + (int) k);
      r->version = col_clean (st, 17);
      double samples = col_number (st, 18);
      g_autofree char *kind = NULL;
      r->swept = g_new0 (char *, keys->len + 1);
      r->batch = r->workers = NAN;
      double *into[] = { &r->batch, &r->workers, NULL };
      for (guint k = 0; k < keys->len + G_N_ELEMENTS (wanted); k++)
        {
          const SimTraceParam *v = sim_tracedb_param (t, r->id, all[k]);
          if (!v)
            continue;
          if (k < keys->len)
            r->swept[k] = v->text ? sim_clean_text (v->text, G_MAXSIZE) : NULL;
          else if (!into[k - keys->len])
            kind = v->text ? sim_clean_text (v->text, G_MAXSIZE) : NULL;
          else if (!as_number (v->text, into[k - keys->len]))
            *into[k - keys->len] = NAN;
        }
      r->samples_per_s = throughput_of (r, counted > 0, samples, kind);
      metrics_of (t, r, counted > 0 ? samples : NAN);
      r->scaling = NAN;
    }
  if (rc < 0)
    return NULL;
  return g_steal_pointer (&runs);
}

/* The swept values of r but the key at `skip`, as one text: runs with the
 * same text differ in that key only.  Each value is preceded by its length,
 * so that no value can pass for two. */
static char *
group_of (const Run *r, GPtrArray *keys, guint skip)
{
  GString *g = g_string_new (NULL);
  for (guint k = 0; k < keys->len; k++)
    if (k != skip)
      {
        if (r->swept[k])
          g_string_append_printf (g, "%zu:%s;", strlen (r->swept[k]), r->swept[k]);
        else
          g_string_append (g, "-;");
      }
  return g_string_free (g, FALSE);
}

/* Scaling efficiency of every finished run when cluster.workers is swept:
 * samples/s per worker over that of the finished run with the fewest
 * workers among those with the same other swept values (the first such run,
 * by id, on a tie).  Two passes over the runs, grouped by a hash table. */
static void
scaling (GPtrArray *runs, GPtrArray *keys)
{
  int wk = -1;
  for (guint k = 0; k < keys->len; k++)
    if (strcmp (g_ptr_array_index (keys, k), "cluster.workers") == 0)
      wk = (int) k;
  if (wk < 0)
    return;
  /* group text -> its base run (const Run *) */
  g_autoptr (GHashTable) base = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char **group = g_new0 (char *, runs->len);
  for (guint i = 0; i < runs->len; i++)
    {
      const Run *o = g_ptr_array_index (runs, i);
      if (g_strcmp0 (o->status, "done") != 0 || !(o->workers > 0) || !isfinite (o->samples_per_s))
        continue;
      group[i] = group_of (o, keys, (guint) wk);
      const Run *b = g_hash_table_lookup (base, group[i]);
      if (!b || o->workers < b->workers)
        g_hash_table_insert (base, g_strdup (group[i]), (gpointer) o);
    }
  for (guint i = 0; i < runs->len; i++)
    {
      Run *r = g_ptr_array_index (runs, i);
      if (!group[i])
        continue;
      const Run *b = g_hash_table_lookup (base, group[i]);
      double per = b->samples_per_s / b->workers;
      r->scaling = per > 0 ? r->samples_per_s / r->workers / per : NAN;
      g_free (group[i]);
    }
}

/* --- jobs ---------------------------------------------------------------- */

/* A job of a run of several jobs (table jobs): a row of its own after its
 * run's, carrying the job's name and what the trace holds of the job
 * alone. */
typedef struct {
  gint64 run;
  char *name;                                    /* clean text */
  double end, iterations, final_loss, final_accuracy;   /* NAN: NULL */
} Job;

static void
job_clear (gpointer p)
{
  g_free (((Job *) p)->name);
}

/* The jobs of the runs of t (all, or run `only`) by run then place in the
 * file; empty for a trace without the jobs table (version 10 or older) or
 * whose runs are each of one job.  A job's final accuracy is that of its
 * last evaluation (metrics.job, version 13 on), else unknown.  NULL with
 * *error set when a query fails. */
static GArray *
load_jobs (SimTraceDb *t, gint64 only, GError **error)
{
  static const char *const cols[] = { "run_id", "job", "name", "end", "iterations",
                                      "final_loss", NULL };
  static const char *const job_col[] = { "job", NULL };
  int has = sim_tracedb_has (t, "jobs", cols, error);
  int tagged = has > 0 ? sim_tracedb_has (t, "metrics", job_col, error) : 0;
  if (has < 0 || tagged < 0)
    return NULL;
  g_autoptr (GArray) jobs = g_array_new (FALSE, FALSE, sizeof (Job));
  g_array_set_clear_func (jobs, job_clear);
  if (!has)
    return g_steal_pointer (&jobs);
  g_autofree char *sql
    = g_strdup_printf ("SELECT run_id, name, end, iterations, final_loss, %s FROM jobs j"
                       " WHERE ?1 <= 0 OR run_id = ?1 ORDER BY run_id, job",
                       tagged ? "(SELECT accuracy FROM metrics m WHERE m.run_id = j.run_id AND"
                                " m.job = j.name ORDER BY sim_time DESC, step DESC LIMIT 1)"
                              : "NULL");
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (t, sql, error);
  if (!st || !sim_tracedb_check (t, sqlite3_bind_int64 (st, 1, only), error))
    return NULL;
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      Job j = { .run = sqlite3_column_int64 (st, 0), .name = col_clean (st, 1),
                .end = col_number (st, 2), .iterations = col_number (st, 3),
                .final_loss = col_number (st, 4), .final_accuracy = col_number (st, 5) };
      if (!j.name)
        j.name = g_strdup ("");
      g_array_append_val (jobs, j);
    }
  return rc < 0 ? NULL : g_steal_pointer (&jobs);
}

/* Run r's row for job j: r's identity and swept values, j's end as
 * sim_time, its iterations, final loss and accuracy, the rest unknown. */
static Run
job_row (const Run *r, const Job *j)
{
  Run o = *r;
  o.sim_time = j->end;
  o.iterations = j->iterations;
  o.final_loss = j->final_loss;
  o.final_accuracy = j->final_accuracy;
  o.wall_time = o.events = o.updates = o.compute = o.comm = o.wait = NAN;
  o.samples_per_s = o.scaling = o.failures = o.lost = o.checkpoint = o.waste = NAN;
  o.metrics = (SimMetrics) { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN };
  return o;
}

/* --- writing ------------------------------------------------------------- */

/* The summary columns after the swept ones, in order. */
static const char *const summary[] = {
  "sim_time", "iterations", "updates", "samples_per_s", "scaling_efficiency", "tokens_per_s",
  "model_flops_per_gpu", "mfu", "time_to_train", "gpu_hours", "cost", "goodput", "failures",
  "lost_time", "checkpoint_time", "expected_waste", "final_loss",
  "final_accuracy", "compute_share", "comm_share", "wait_share", "wall_time", "events", "seed",
  "scenario", "version",
};

static void
summary_values (const Run *r, double *v)
{
  const double parts[] = { r->compute, r->comm, r->wait };
  double share[3];
  sim_time_shares (parts, 3, share);
  const SimMetrics *m = &r->metrics;
  double vals[] = { r->sim_time, r->iterations, r->updates, r->samples_per_s, r->scaling,
                    m->tokens_per_s, m->model_flops, m->mfu, m->train_time, m->device_hours,
                    m->cost, m->goodput, r->failures, r->lost, r->checkpoint, r->waste,
                    r->final_loss, r->final_accuracy, share[0], share[1], share[2], r->wall_time,
                    r->events, r->seed };
  memcpy (v, vals, sizeof vals);
}

#define N_SUMMARY_NUMBERS 24

static void
csv_text (GString *s, const char *v)
{
  if (!v)
    return;
  double d;
  gboolean formula = v[0] && strchr ("=+-@", v[0]) && !as_number (v, &d);
  gboolean quote = formula || strpbrk (v, ",\"\r\n") != NULL;
  if (quote)
    g_string_append_c (s, '"');
  if (formula)
    g_string_append_c (s, '\'');
  for (const char *c = v; *c; c++)
    {
      if (*c == '"')
        g_string_append_c (s, '"');
      g_string_append_c (s, *c);
    }
  if (quote)
    g_string_append_c (s, '"');
}

static void
csv_number (GString *s, double v)
{
  if (isfinite (v))
    sim_append_double (s, v);
}

static void
json_text (GString *s, const char *v)
{
  if (!v)
    {
      g_string_append (s, "null");
      return;
    }
  sim_append_json_string (s, v);
}

static void
json_number (GString *s, double v)
{
  if (isfinite (v))
    sim_append_double (s, v);
  else
    g_string_append (s, "null");
}

/* A swept value: a number where all of it is one, else text. */
static void
json_value (GString *s, const char *v)
{
  double d;
  if (as_number (v, &d))
    json_number (s, d);
  else
    json_text (s, v);
}

/* Run r's CSV row; `job` the text of the job column (NULL: none). */
static void
csv_row (GString *s, const Run *r, GPtrArray *keys, const char *job)
{
  g_string_append_printf (s, "%" G_GINT64_FORMAT ",", r->id);
  csv_text (s, r->name);
  g_string_append_c (s, ',');
  csv_text (s, r->status);
  g_string_append_c (s, ',');
  csv_text (s, r->error);
  g_string_append_c (s, ',');
  csv_text (s, r->stop);
  if (job)
    {
      g_string_append_c (s, ',');
      csv_text (s, job);
    }
  for (guint k = 0; k < keys->len; k++)
    {
      g_string_append_c (s, ',');
      csv_text (s, r->swept[k]);
    }
  double v[N_SUMMARY_NUMBERS];
  summary_values (r, v);
  for (int k = 0; k < N_SUMMARY_NUMBERS; k++)
    {
      g_string_append_c (s, ',');
      csv_number (s, v[k]);
    }
  g_string_append_c (s, ',');
  csv_text (s, r->scenario);
  g_string_append_c (s, ',');
  csv_text (s, r->version);
  g_string_append (s, "\r\n");
}

/* Runs a row writer on each run, then on each of its jobs (the jobs column
 * present when `jobs` is not empty: "" for a run's own row). */
static void
write_rows (GString *s, GPtrArray *runs, GPtrArray *keys, GArray *jobs,
            void (*row) (GString *, const Run *, GPtrArray *, const char *, gboolean))
{
  guint next = 0;
  gboolean first = TRUE;
  for (guint i = 0; i < runs->len; i++)
    {
      const Run *r = g_ptr_array_index (runs, i);
      row (s, r, keys, jobs->len ? "" : NULL, first);
      first = FALSE;
      while (next < jobs->len && g_array_index (jobs, Job, next).run < r->id)
        next++;
      for (; next < jobs->len && g_array_index (jobs, Job, next).run == r->id; next++)
        {
          const Job *j = &g_array_index (jobs, Job, next);
          Run o = job_row (r, j);
          row (s, &o, keys, j->name, FALSE);
        }
    }
}

static void
csv_row_any (GString *s, const Run *r, GPtrArray *keys, const char *job, gboolean first)
{
  (void) first;
  csv_row (s, r, keys, job);
}

static void
write_csv (GString *s, GPtrArray *runs, GPtrArray *keys, GArray *jobs)
{
  g_string_append (s, jobs->len ? "run,name,status,error,stop,job" : "run,name,status,error,stop");
  for (guint k = 0; k < keys->len; k++)
    {
      g_string_append_c (s, ',');
      g_autofree char *key = sim_clean_text (g_ptr_array_index (keys, k), G_MAXSIZE);
      csv_text (s, key);
    }
  for (gsize k = 0; k < G_N_ELEMENTS (summary); k++)
    g_string_append_printf (s, ",%s", summary[k]);
  g_string_append (s, "\r\n");
  write_rows (s, runs, keys, jobs, csv_row_any);
}

/* Run r's JSON object; `job` the value of "job" (NULL: no such member,
 * "": null). */
static void
json_row (GString *s, const Run *r, GPtrArray *keys, const char *job, gboolean first)
{
  g_string_append_printf (s, "%s\n  {\"run\": %" G_GINT64_FORMAT ", \"name\": ",
                          first ? "" : ",", r->id);
  json_text (s, r->name);
  g_string_append (s, ", \"status\": ");
  json_text (s, r->status);
  g_string_append (s, ", \"error\": ");
  json_text (s, r->error);
  g_string_append (s, ", \"stop\": ");
  json_text (s, r->stop);
  if (job)
    {
      g_string_append (s, ", \"job\": ");
      json_text (s, *job ? job : NULL);
    }
  for (guint k = 0; k < keys->len; k++)
    {
      g_autofree char *key = sim_clean_text (g_ptr_array_index (keys, k), G_MAXSIZE);
      g_string_append (s, ", ");
      json_text (s, key);
      g_string_append (s, ": ");
      json_value (s, r->swept[k]);
    }
  double v[N_SUMMARY_NUMBERS];
  summary_values (r, v);
  for (int k = 0; k < N_SUMMARY_NUMBERS; k++)
    {
      g_string_append_printf (s, ", \"%s\": ", summary[k]);
      json_number (s, v[k]);
    }
  g_string_append (s, ", \"scenario\": ");
  json_text (s, r->scenario);
  g_string_append (s, ", \"version\": ");
  json_text (s, r->version);
  g_string_append (s, "}");
}

static void
write_json (GString *s, GPtrArray *runs, GPtrArray *keys, GArray *jobs)
{
  g_string_append (s, "[");
  write_rows (s, runs, keys, jobs, json_row);
  g_string_append (s, runs->len ? "\n]\n" : "]\n");
}

/* --- the command --------------------------------------------------------- */

const SimTraceTable *
sim_export_required (gsize *n)
{
  static const SimTraceTable required[] = {
    { "runs", { "id", "scenario", "name", "seed", "status", "error", "stop", "sim_time",
                "wall_time", "events", "iterations", NULL } },
    { "runs", { "updates", "final_loss", "final_accuracy", "compute", "comm", "wait",
                "version", NULL } },
    { "params", { "run_id", "key", "value", NULL } },
  };
  *n = G_N_ELEMENTS (required);
  return required;
}

GPtrArray *
sim_export_runs (SimTraceDb *t, gint64 only, GPtrArray **keys_out, GError **error)
{
  /* the sweep's keys, from the runs' names; without them (a database whose
   * names were changed), the params that differ between runs */
  g_autoptr (GPtrArray) keys = sim_tracedb_sweep_keys (t, error);
  if (keys && keys->len == 0)
    {
      g_ptr_array_unref (keys);
      keys = sim_tracedb_swept_keys (t, NULL, error);
    }
  if (!keys)
    return NULL;
  GPtrArray *runs = load_runs (t, keys, only, error);
  if (!runs)
    return NULL;
  if (only > 0 && runs->len == 0)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "--run: %s has no run %" G_GINT64_FORMAT "; `dtsim export %s` lists them",
                   t->shown, only, t->shown);
      g_ptr_array_unref (runs);
      return NULL;
    }
  scaling (runs, keys);
  *keys_out = g_steal_pointer (&keys);
  return runs;
}

static int
export_table (SimTraceDb *t, SimOutFile *o, gboolean csv, gint64 only, GError **error)
{
  g_autoptr (GPtrArray) keys = NULL;
  g_autoptr (GPtrArray) runs = sim_export_runs (t, only, &keys, error);
  if (!runs)
    return 2;
  g_autoptr (GArray) jobs = load_jobs (t, only, error);
  if (!jobs)
    return 2;
  g_autoptr (GString) s = g_string_new (NULL);
  if (csv)
    write_csv (s, runs, keys, jobs);
  else
    write_json (s, runs, keys, jobs);
  return sim_outfile_write (o, s, error) ? 0 : 1;
}

int
sim_export (const char *db, const char *format, const char *out, gint64 run, GError **error)
{
  g_return_val_if_fail (db && format, 2);
  gboolean csv = strcmp (format, "csv") == 0, json = strcmp (format, "json") == 0;
  gboolean perfetto = strcmp (format, "perfetto") == 0;
  if (!csv && !json && !perfetto)
    {
      g_autofree char *f = sim_clean_text (format, 40);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "--format: unknown format '%s'; use csv, json or perfetto", f);
      return 2;
    }
  SimTraceDb t = { 0 };
  SimOutFile o = { 0 };
  int code = 2;
  gsize n_required;
  const SimTraceTable *required = sim_export_required (&n_required);
  if (sim_tracedb_open (&t, db, "export", required, n_required, error)
      && sim_outfile_open (&o, out, db, error))
    {
      if (perfetto)
        code = sim_perfetto_write (&t, o.f, run, error);
      else
        code = export_table (&t, &o, csv, run, error);
    }
  GError *late = NULL;
  if (!sim_outfile_close (&o, code == 0, code == 0 ? &late : NULL) && code == 0)
    {
      g_propagate_error (error, late);
      code = 1;
    }
  sim_tracedb_close (&t);
  return code;
}
