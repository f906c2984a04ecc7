/*
 * run.c — assembly of a simulation from its configuration, and `dtsim run`.
 *
 * One run is: an engine; the network the [network] keys describe, with the
 * hosts the policy asks for; the data and the model; the device model (the
 * roofline cost of the model's layers, or the fixed step_time, or the
 * measured host time x measured_scale, times the straggler factor; see
 * sim/model.c); the policy.  The engine then runs until the
 * policy stops it (iterations done or target loss reached) or the time limit.
 * Every callback of the policy is forwarded to the trace.
 *
 * A sweep runs its points in parallel (--jobs): each point is assembled and
 * run in a pool thread with its own engine, network, data, model and policy,
 * writing its rows to a trace buffer (sim/trace.c) whose chunks go through a
 * GAsyncQueue to the calling thread, the only one that touches SQLite.  Run
 * ids are assigned in point order when a point is started, so the database
 * holds the same rows whatever the number of threads (rows of different runs
 * may interleave in rowid order; each run's rows keep their order).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "netmodel/netmodel.h"
#include "sim/run.h"
#include "kernels/backend.h"
#include "sim/cluster.h"
#include "sim/model.h"
#include "sim/stragglers.h"

typedef struct {
  const SimConfig *c;
  SimTrace *trace;
  gint64 run;
  const PolRecorder *extra;
  SimStragglers *strag;
  NetNetwork *net;
  const PolPolicyOps *ops;
  /* progress on a terminal */
  gboolean progress;
  const char *label;
  gint64 last_progress_us;
  gint64 calls;
  SimStepCost cost;
  EngSim *sim;
  /* the first evaluation whose loss was not finite: the run stops there */
  gboolean diverged;
  double diverged_at;    /* simulated seconds */
  gint64 diverged_step;
  double diverged_loss;
  /* a compute time came out infinite: the run stops there */
  gboolean bad_time;
  double bad_factor;     /* the straggler factor that made it */
} RunCtx;

/* A compute time that is not finite (a straggler factor that overflowed,
 * e.g. pareto with a tiny alpha) stops the run: simulated time cannot go
 * on from infinity.  Returns the time, 0 in that case. */
static double
finite_time (RunCtx *r, double t, double factor)
{
  if (isfinite (t))
    return t;
  if (!r->bad_time)
    {
      r->bad_time = TRUE;
      r->bad_factor = factor;
      eng_stop (r->sim);
    }
  return 0;
}

static double
compute_time (gpointer ctx, int worker, double host_seconds)
{
  RunCtx *r = ctx;
  double f = sim_stragglers_next (r->strag, worker);
  if (r->c->measured && r->c->step_time < 0)
    return finite_time (r, host_seconds * r->c->measured_scale * f, f);
  return finite_time (r, r->cost.step * f, f);
}

static double
scale_time (gpointer ctx, int worker, double seconds, double host_seconds)
{
  RunCtx *r = ctx;
  double f = sim_stragglers_next (r->strag, worker);
  if (r->c->measured && r->c->step_time < 0)
    return finite_time (r, host_seconds * r->c->measured_scale * f, f);
  return finite_time (r, seconds * f, f);
}

static double
update_time (gpointer ctx, gsize n)
{
  RunCtx *r = ctx;
  return sim_update_seconds (r->c, n);
}

static void
rec_iteration (gpointer ctx, int worker, gint64 iteration, double start,
               double end, double compute, double comm, double wait,
               gint64 staleness)
{
  RunCtx *r = ctx;
  if (r->trace)
    sim_trace_iteration (r->trace, r->run, worker, iteration, start, end, compute,
                         comm, wait, staleness);
  if (r->extra && r->extra->iteration)
    r->extra->iteration (r->extra->ctx, worker, iteration, start, end, compute,
                         comm, wait, staleness);
}

static void
rec_span (gpointer ctx, const char *actor, const char *kind, double start,
          double end, gint64 iteration, double bytes)
{
  RunCtx *r = ctx;
  if (r->trace)
    sim_trace_span (r->trace, r->run, actor, kind, start, end, iteration, bytes);
  if (r->extra && r->extra->span)
    r->extra->span (r->extra->ctx, actor, kind, start, end, iteration, bytes);
}

static void
rec_metric (gpointer ctx, double t, gint64 step, double loss, double accuracy)
{
  RunCtx *r = ctx;
  if (!isfinite (loss) && !r->diverged)
    {
      r->diverged = TRUE;
      r->diverged_at = t;
      r->diverged_step = step;
      r->diverged_loss = loss;
      eng_stop (r->sim);
    }
  if (r->trace)
    sim_trace_metric (r->trace, r->run, t, step, loss, accuracy);
  if (r->extra && r->extra->metric)
    r->extra->metric (r->extra->ctx, t, step, loss, accuracy);
}

static void
rec_bucket (gpointer ctx, gint64 iteration, int bucket, double bytes, double ready,
            double start, double end)
{
  RunCtx *r = ctx;
  if (r->trace && r->c->detail >= SIM_DETAIL_ITERATIONS)
    sim_trace_bucket (r->trace, r->run, iteration, bucket, bytes, ready, start, end);
  if (r->extra && r->extra->bucket)
    r->extra->bucket (r->extra->ctx, iteration, bucket, bytes, ready, start, end);
}

static void
rec_failure (gpointer ctx, int worker, double start, double end, gint64 iteration,
             const char *lost)
{
  RunCtx *r = ctx;
  if (r->trace && r->c->detail >= SIM_DETAIL_ITERATIONS)
    sim_trace_failure (r->trace, r->run, worker, start, end, iteration, lost);
  if (r->extra && r->extra->failure)
    r->extra->failure (r->extra->ctx, worker, start, end, iteration, lost);
}

/* The [failures] lists paired up: n = the longer list, the other one has
 * n entries or a single one that applies to all. */
static PolFailure *
failures_of (const SimConfig *c, int *n)
{
  guint nw = c->fail_worker->len, na = c->fail_at->len;
  *n = (nw == 0 || na == 0) ? 0 : (int) MAX (nw, na);
  PolFailure *f = g_new0 (PolFailure, MAX (*n, 1));
  for (int i = 0; i < *n; i++)
    {
      f[i].worker = g_array_index (c->fail_worker, int, nw == 1 ? 0 : i);
      f[i].at = g_array_index (c->fail_at, double, na == 1 ? 0 : i);
      f[i].restart = c->fail_restart;
    }
  return f;
}

static void
rec_stage (gpointer ctx, const PolStageStats *st)
{
  RunCtx *r = ctx;
  if (r->trace)
    sim_trace_stage (r->trace, r->run, st);
  if (r->extra && r->extra->stage)
    r->extra->stage (r->extra->ctx, st);
}

static void
rec_progress (gpointer ctx, double t, gint64 done, gint64 total)
{
  RunCtx *r = ctx;
  if (r->extra && r->extra->progress)
    r->extra->progress (r->extra->ctx, t, done, total);
  if (!r->progress || (++r->calls & 63) != 0)
    return;
  gint64 now = g_get_monotonic_time ();
  if (now - r->last_progress_us < 200000)
    return;
  r->last_progress_us = now;
  int width = 30, fill = (int) (width * (double) done / (double) MAX (total, 1));
  char bar[64];
  memset (bar, '#', fill);
  memset (bar + fill, '.', width - fill);
  bar[width] = '\0';
  fprintf (stderr, "\r%s [%s] %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT " updates, sim %.4g s ",
           r->label, bar, done, total, t);
  fflush (stderr);
}

static void
on_transfer (gpointer ctx, const NetTransfer *t)
{
  RunCtx *r = ctx;
  const char *tag = (t->tag >= 0 && t->tag < r->ops->n_tags) ? r->ops->tag_names[t->tag] : NULL;
  sim_trace_message (r->trace, r->run, net_network_host_name (r->net, t->src),
                     net_network_host_name (r->net, t->dst), t->bytes, t->start,
                     t->end, tag);
}

gboolean
sim_run_config (const SimConfig *c, SimTrace *trace, gint64 run,
                const PolRecorder *extra, const char *label, gboolean progress,
                SimRunSummary *out, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  RunCtx r = { .c = c, .trace = trace, .run = run, .extra = extra,
               .progress = progress, .label = label ? label : "" };
  r.ops = pol_lookup (c->policy);
  g_assert (r.ops); /* validated by the scenario loader */

  EngSim *sim = eng_sim_new ();
  r.sim = sim;
  r.net = sim_network_build (c, sim, "scenario", error);
  if (!r.net)
    {
      eng_sim_free (sim);
      return FALSE;
    }
  if (trace && c->detail >= SIM_DETAIL_MESSAGES)
    net_network_set_observer (r.net, on_transfer, &r);

  /* data only where the math runs: timing-only models may be any size */
  KernDataset *train = NULL, *test = NULL;
  KernDataset eval = { 0 };
  KernBackend *be = NULL;
  KernModel *model = NULL;
  gboolean ok = TRUE;
  if (c->math)
    {
      ok = sim_data_load (c, &train, &test, error);
      if (ok)
        {
          /* the loss is measured on a fixed prefix of the training set */
          eval = *train;
          if (c->eval_samples > 0 && c->eval_samples < eval.n)
            eval.n = (int) c->eval_samples;
          be = kern_backend_new (c->backend, error);
          ok = be != NULL;
        }
    }
  if (ok)
    model = sim_model_new (c, be, error);
  int n_failures = 0;
  PolFailure *failures = failures_of (c, &n_failures);
  double *ready = NULL, *layer_fwd = NULL, *layer_bwd = NULL;
  if (!model)
    {
      ok = FALSE;
      goto done;
    }
  r.strag = sim_stragglers_new (c);
  sim_step_cost (c, model, &r.cost);
  double step = r.cost.step;
  ready = g_new (double, MAX (r.cost.n_layers, 1));
  for (int l = 0; l < r.cost.n_layers; l++)
    ready[l] = step > 0 ? r.cost.grad_ready[l] / step : 1.0;
  /* the pipeline prices its stages on one micro-batch */
  layer_fwd = g_new (double, MAX (model->n_layers, 1));
  layer_bwd = g_new (double, MAX (model->n_layers, 1));
  sim_layer_seconds (c, model, (int) (c->batch / MAX (c->microbatches, 1)), layer_fwd, layer_bwd);

  PolEnv env = {
    .sim = sim,
    .net = r.net,
    .model = c->math ? model : NULL,
    .train = train,
    .test = test,
    .eval = c->math ? &eval : NULL,
    .n_params = model->ops->n_params (model),
    .fwd_share = step > 0 ? r.cost.forward / step : 0.5,
    .n_layers = r.cost.n_layers,
    .layer_lo = r.cost.layer_lo,
    .layer_ready = ready,
    .workers = (int) c->workers,
    .servers = (int) c->servers,
    .batch = (int) c->batch,
    .partition = (PolPartition) c->partition,
    .classes_per_worker = (int) c->classes_per_worker,
    .opt = sim_opt_config (c),
    .iterations = c->iterations,
    .eval_every = c->eval_every,
    .target_loss = c->target_loss,
    .seed = (guint64) c->seed,
    .consistency = (PolConsistency) c->consistency,
    .staleness = c->staleness,
    .wait_for = (int) c->wait_for,
    .late_keep = c->late_keep,
    .failures = failures,
    .n_failures = n_failures,
    .algorithm = c->algorithm,
    .bucket_bytes = c->bucket_size,
    .sync_every = c->sync_every,
    .reduce_per_byte = c->reduce_memory ? 3.0 / c->memory_bandwidth : 0.0,
    .stages = (int) c->stages,
    .replicas = (int) c->replicas,
    .microbatches = (int) c->microbatches,
    .schedule = (PolSchedule) c->schedule,
    .stage_layers = c->stage_layers->len > 0 ? (const int *) c->stage_layers->data : NULL,
    .layers = model->layers,
    .layer_fwd = layer_fwd,
    .layer_bwd = layer_bwd,
    .scale_time = scale_time,
    .compute_time = compute_time,
    .update_time = update_time,
    .compute_ctx = &r,
    .rec = {
      .ctx = &r,
      .want_iterations = (trace && c->detail >= SIM_DETAIL_ITERATIONS)
                         || (extra && extra->want_iterations),
      .want_spans = (trace && c->detail >= SIM_DETAIL_SPANS) || (extra && extra->want_spans),
      .iteration = rec_iteration,
      .span = rec_span,
      .metric = rec_metric,
      .bucket = rec_bucket,
      .failure = rec_failure,
      .progress = rec_progress,
      .stage = rec_stage,
    },
  };
  PolPolicy *pol = r.ops->create (&env, error);
  if (!pol)
    ok = FALSE;
  else
    {
      r.ops->start (pol);
      eng_run (sim, c->time_limit > 0 ? c->time_limit : INFINITY);
      PolResult res;
      r.ops->finish (pol, &res);
      memset (out, 0, sizeof *out);
      out->sim_time = res.end_time;
      out->events = eng_sim_events (sim);
      out->iterations = res.rounds;
      out->updates = res.updates;
      out->final_loss = res.final_loss;
      out->final_accuracy = res.final_accuracy;
      out->compute = res.compute;
      out->comm = res.comm;
      out->wait = res.wait;
      out->stop = res.reached_target ? "target_loss"
                  : res.rounds >= c->iterations ? "iterations"
                  : "time_limit";
      r.ops->free (pol);
      if (r.bad_time)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [stragglers] model: a straggler factor of %g made a compute step "
                       "take infinite time; choose parameters whose factors stay finite (e.g. a "
                       "larger pareto alpha or a smaller mean)", c->file, r.bad_factor);
          ok = FALSE;
        }
      else if (r.diverged)
        {
          /* NaN or infinite losses are no result: the learning rate (or
           * warm-up) is too large for this model and data */
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [model] lr: the training loss diverged (%s after %" G_GINT64_FORMAT
                       " updates, at simulated %.6g s) with lr = %g; lower [model] lr",
                       c->file, isnan (r.diverged_loss) ? "NaN" : r.diverged_loss > 0 ? "+inf" : "-inf",
                       r.diverged_step, r.diverged_at, c->lr);
          ok = FALSE;
        }
    }
  if (progress)
    fprintf (stderr, "\r\033[K");
done:
  g_free (ready);
  g_free (failures);
  g_free (layer_fwd);
  g_free (layer_bwd);
  if (r.strag)
    sim_stragglers_free (r.strag);
  sim_step_cost_clear (&r.cost);
  kern_model_free (model);
  if (be)
    kern_backend_free (be);
  kern_dataset_free (train);
  kern_dataset_free (test);
  net_network_free (r.net);
  eng_sim_free (sim);
  out->wall_time = (double) (g_get_monotonic_time () - t0) / 1e6;
  return ok;
}

static void
json_number (GString *s, const char *key, double v)
{
  if (isnan (v) || isinf (v))
    g_string_append_printf (s, "\"%s\": null", key);
  else
    g_string_append_printf (s, "\"%s\": %.17g", key, v);
}

static char *
json_escape (const char *in)
{
  GString *s = g_string_new (NULL);
  for (const char *p = in; *p; p++)
    {
      if (*p == '"' || *p == '\\')
        g_string_append_printf (s, "\\%c", *p);
      else if ((unsigned char) *p < 0x20)
        g_string_append_printf (s, "\\u%04x", *p);
      else
        g_string_append_c (s, *p);
    }
  return g_string_free (s, FALSE);
}

static void
json_run (GString *s, const SimConfig *c, const SimRunSummary *r)
{
  g_autofree char *name = json_escape (c->name);
  g_string_append_printf (s, "\"name\": \"%s\", ", name);
  json_number (s, "sim_time", r->sim_time);
  g_string_append_printf (s, ", \"iterations\": %" G_GINT64_FORMAT ", \"updates\": %"
                          G_GINT64_FORMAT ", ", r->iterations, r->updates);
  json_number (s, "final_loss", r->final_loss);
  g_string_append (s, ", ");
  json_number (s, "final_accuracy", r->final_accuracy);
  g_string_append_printf (s, ", \"events\": %" G_GUINT64_FORMAT ", ", r->events);
  json_number (s, "wall_time", r->wall_time);
  double tot = r->compute + r->comm + r->wait;
  g_string_append (s, ", ");
  json_number (s, "compute_share", tot > 0 ? r->compute / tot : NAN);
  g_string_append (s, ", ");
  json_number (s, "comm_share", tot > 0 ? r->comm / tot : NAN);
  g_string_append (s, ", ");
  json_number (s, "wait_share", tot > 0 ? r->wait / tot : NAN);
  g_string_append_printf (s, ", \"stop\": \"%s\"", r->stop);
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

/* Training throughput of a run: samples per simulated second. */
static double
throughput (const SimConfig *c, const SimRunSummary *r)
{
  return r->sim_time > 0 ? (double) r->updates * (double) c->batch / r->sim_time : 0;
}

static void
print_table (GPtrArray *configs, const SimRunSummary *sums, const char *db)
{
  gsize w = 4;
  for (guint i = 0; i < configs->len; i++)
    w = MAX (w, strlen (((SimConfig *) g_ptr_array_index (configs, i))->name));
  /* a sweep over cluster.workers also gets throughput and scaling efficiency:
   * (throughput / workers) over that of the run with the fewest workers among
   * those with the same other swept values */
  gboolean scaling = FALSE;
  g_autofree double *eff = g_new0 (double, configs->len);
  g_autoptr (GPtrArray) groups = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < configs->len; i++)
    g_ptr_array_add (groups, scaling_group (g_ptr_array_index (configs, i), &scaling));
  for (guint i = 0; scaling && i < configs->len; i++)
    {
      const SimConfig *ci = g_ptr_array_index (configs, i);
      int base = -1;
      for (guint j = 0; j < configs->len; j++)
        {
          const SimConfig *cj = g_ptr_array_index (configs, j);
          if (strcmp (g_ptr_array_index (groups, i), g_ptr_array_index (groups, j)) == 0
              && (base < 0 || cj->workers < ((SimConfig *) g_ptr_array_index (configs, base))->workers))
            base = (int) j;
        }
      const SimConfig *cb = g_ptr_array_index (configs, base);
      double tb = throughput (cb, &sums[base]) / (double) cb->workers;
      eff[i] = tb > 0 ? throughput (ci, &sums[i]) / (double) ci->workers / tb : NAN;
    }
  printf ("%-*s  %12s  %6s  %8s  %8s  %8s  %8s  %8s", (int) w, "run", "sim time (s)",
          "iters", "loss", "accuracy", "compute", "comm", "wait");
  if (scaling)
    printf ("  %12s  %8s", "samples/s", "scaling");
  printf ("\n");
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      const SimRunSummary *r = &sums[i];
      double tot = r->compute + r->comm + r->wait;
      char loss[32], acc[32];
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
      printf ("%-*s  %12.6g  %6" G_GINT64_FORMAT "  %8s  %8s  %7.1f%%  %7.1f%%  %7.1f%%",
              (int) w, c->name, r->sim_time, r->iterations, loss, acc,
              tot > 0 ? 100 * r->compute / tot : 0, tot > 0 ? 100 * r->comm / tot : 0,
              tot > 0 ? 100 * r->wait / tot : 0);
      if (scaling)
        printf ("  %12.6g  %7.1f%%", throughput (c, r), 100 * eff[i]);
      printf ("\n");
    }
  printf ("trace: %s  (compute/comm/wait: share of worker time over completed iterations", db);
  if (scaling)
    printf ("; scaling: samples/s per worker over that of the fewest workers");
  printf (")\n");
}

/* --- parallel sweeps ------------------------------------------------------ */

typedef struct Sweep Sweep;

/* One point of a sweep, from its start to its report. */
typedef struct {
  Sweep *sw;
  guint index;           /* point order, from 0 */
  const SimConfig *c;
  gint64 run;            /* its runs.id */
  SimRunSummary *sum;    /* where its summary goes */
  gboolean ok;
  GError *error;         /* why it failed */
  gint permille;         /* progress of the running point, atomic */
  gboolean running;      /* started and not yet ended (writer's view) */
} Point;

/* What a pool thread hands to the writer: rows, or the end of a point. */
typedef struct {
  Point *p;
  SimTraceChunk *chunk;  /* NULL: the point has ended */
} SweepMsg;

/* Chunks waiting in the queue beyond which producers wait for the writer
 * (bounds the memory a sweep holds: chunks are ~4096 rows). */
#define SWEEP_MAX_PENDING 64

struct Sweep {
  GAsyncQueue *queue;    /* SweepMsg *, to the writer */
  GMutex lock;           /* guards pending */
  GCond drained;
  int pending;           /* chunks in the queue */
};

static void
sweep_sink (SimTraceChunk *chunk, gpointer data)
{
  Point *p = data;
  Sweep *sw = p->sw;
  g_mutex_lock (&sw->lock);
  while (sw->pending >= SWEEP_MAX_PENDING)
    g_cond_wait (&sw->drained, &sw->lock);
  sw->pending++;
  g_mutex_unlock (&sw->lock);
  SweepMsg *m = g_new (SweepMsg, 1);
  m->p = p;
  m->chunk = chunk;
  g_async_queue_push (sw->queue, m);
}

static void
sweep_progress (gpointer ctx, double t, gint64 done, gint64 total)
{
  Point *p = ctx;
  g_atomic_int_set (&p->permille, (int) (1000.0 * (double) done / (double) MAX (total, 1)));
}

/* Pool thread: runs one point against a trace buffer. */
static void
sweep_point (gpointer data, gpointer user)
{
  Point *p = data;
  SimTrace *buf = sim_trace_new_buffer (sweep_sink, p);
  PolRecorder extra = { .ctx = p, .progress = sweep_progress };
  p->ok = sim_run_config (p->c, buf, p->run, &extra, NULL, FALSE, p->sum, &p->error);
  sim_trace_flush (buf);
  sim_trace_free_buffer (buf);
  SweepMsg *m = g_new0 (SweepMsg, 1);
  m->p = p;
  g_async_queue_push (p->sw->queue, m);
}

static void
format_seconds (char *buf, gsize n, double s)
{
  if (s < 60)
    g_snprintf (buf, n, "%.0fs", s);
  else if (s < 3600)
    g_snprintf (buf, n, "%dm%02ds", (int) s / 60, (int) s % 60);
  else
    g_snprintf (buf, n, "%dh%02dm", (int) s / 3600, ((int) s % 3600) / 60);
}

/* The sweep's progress line on a terminal: points done / total, the running
 * points with their progress, elapsed time and ETA (from the share done). */
static void
draw_bar (Point *pts, guint n, guint done, gint64 t0)
{
  double frac = done;
  GString *running = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    if (pts[i].running)
      {
        int pm = g_atomic_int_get (&pts[i].permille);
        frac += pm / 1000.0;
        if (running->len < 40)
          g_string_append_printf (running, " %u:%d%%", i + 1, pm / 10);
        else if (!g_str_has_suffix (running->str, "..."))
          g_string_append (running, " ...");
      }
  frac /= n;
  double elapsed = (double) (g_get_monotonic_time () - t0) / 1e6;
  char el[32], eta[32] = "?";
  format_seconds (el, sizeof el, elapsed);
  if (frac > 0)
    format_seconds (eta, sizeof eta, elapsed * (1 - frac) / frac);
  int width = 24, fill = (int) (width * frac);
  char bar[32];
  memset (bar, '#', fill);
  memset (bar + fill, '.', width - fill);
  bar[width] = '\0';
  fprintf (stderr, "\r\033[K[%s] %u/%u done, running%s, elapsed %s, ETA %s", bar, done, n,
           running->len ? running->str : " -", el, eta);
  fflush (stderr);
  g_string_free (running, TRUE);
}

/* Runs every point of `configs`, opt->jobs at a time, writing to `trace` from
 * this thread only; fills sums[] in point order.  A point that fails fails
 * alone: its run is marked failed with its own error and the other points go
 * on.  Only an error of the
 * database itself (sim_trace_ok) stops new points from starting; those
 * running finish.  Returns the number of points that ended 'done'; errors[i]
 * gets point i's error, if any. */
static guint
run_sweep (GPtrArray *configs, const char *path, SimTrace *trace, const SimRunOptions *opt,
           SimRunSummary *sums, GError **errors)
{
  guint n = configs->len;
  int jobs = opt->jobs > 0 ? opt->jobs : (int) g_get_num_processors ();
  jobs = (int) MIN ((guint) MAX (jobs, 1), n);
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
  /* points run side by side: one BLAS thread each */
  if (jobs > 1)
    openblas_set_num_threads (1);
#endif
  Sweep sw = { .queue = g_async_queue_new () };
  g_mutex_init (&sw.lock);
  g_cond_init (&sw.drained);
  g_autofree Point *pts = g_new0 (Point, n);
  for (guint i = 0; i < n; i++)
    {
      pts[i].sw = &sw;
      pts[i].index = i;
      pts[i].c = g_ptr_array_index (configs, i);
      pts[i].sum = &sums[i];
    }
  GThreadPool *pool = g_thread_pool_new (sweep_point, &sw, jobs, TRUE, NULL);
  g_assert (pool); /* exclusive threads are created lazily, never fail here */
  gboolean tty = !opt->quiet && !opt->json && isatty (STDERR_FILENO);
  gboolean lines = !opt->quiet && !opt->json && !tty;
  gint64 t0 = g_get_monotonic_time (), last_draw = 0;
  guint next = 0, running = 0, done = 0, n_ok = 0;
  for (;;)
    {
      while (sim_trace_ok (trace, NULL) && running < (guint) jobs && next < n)
        {
          Point *p = &pts[next++];
          p->run = sim_trace_begin_run (trace, p->c, path, &p->error);
          if (p->run < 0)
            {
              p->run = 0;
              break;
            }
          running++;
          p->running = TRUE;
          g_thread_pool_push (pool, p, NULL);
        }
      if (running == 0)
        break;
      if (tty && g_get_monotonic_time () - last_draw >= 200000)
        {
          draw_bar (pts, n, done, t0);
          last_draw = g_get_monotonic_time ();
        }
      SweepMsg *m = g_async_queue_timeout_pop (sw.queue, 200000);
      if (!m)
        continue;
      Point *p = m->p;
      if (m->chunk)
        {
          sim_trace_write_chunk (trace, m->chunk);
          g_mutex_lock (&sw.lock);
          sw.pending--;
          g_cond_broadcast (&sw.drained);
          g_mutex_unlock (&sw.lock);
          g_free (m);
          continue;
        }
      g_free (m);
      /* every chunk of p came before its end: its rows are all written */
      running--;
      done++;
      p->running = FALSE;
      if (p->ok && !sim_trace_end_run (trace, p->run, p->sum, &p->error))
        p->ok = FALSE;
      if (!p->ok)
        sim_trace_fail_run (trace, p->run, p->error->message);
      else
        n_ok++;
      if (lines && p->ok)
        fprintf (stderr, "run %u/%u done: %s  sim_time %.6g s  wall %.3g s\n", p->index + 1, n,
                 p->c->name, p->sum->sim_time, p->sum->wall_time);
      else if (lines && n > 1) /* a single run's error is the one line at the end */
        fprintf (stderr, "run %u/%u failed: %s: %s\n", p->index + 1, n, p->c->name,
                 p->error->message);
    }
  if (tty)
    fprintf (stderr, "\r\033[K");
  g_thread_pool_free (pool, FALSE, TRUE);
  for (guint i = 0; i < n; i++)
    errors[i] = g_steal_pointer (&pts[i].error);
  g_async_queue_unref (sw.queue);
  g_mutex_clear (&sw.lock);
  g_cond_clear (&sw.drained);
  return n_ok;
}

/* The exit code of a failed point: 2 for bad input, 1 otherwise. */
static int
exit_code_of (const GError *e)
{
  return g_error_matches (e, SIM_ERROR, SIM_ERROR_INPUT) ? 2 : 1;
}

/* After a run in which some points failed: for a sweep, one line per failed
 * point on stderr ("dtsim: ERROR (run I/N: NAME)") and, in *error, how many
 * failed and where their rows are; for a single run, its error.  Returns the
 * exit code: 2 when a failure was bad input, else 1. */
static int
report_failures (GPtrArray *configs, GError **errors, const char *db, gboolean replaced,
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

int
sim_run_scenario (const char *path, const char *const *sets,
                  const SimRunOptions *opt, GError **error)
{
  g_autoptr (GPtrArray) configs = sim_scenario_load (path, sets, error);
  if (!configs)
    return 2;
  const SimConfig *first = g_ptr_array_index (configs, 0);
  const char *db = opt->db ? opt->db : first->db;
  g_autofree char *dir = g_path_get_dirname (db);
  g_autofree char *what = opt->db ? g_strdup ("-o") : g_strdup_printf ("%s: [trace] db", path);
  if (!opt->db && !first->db[0])
    return 2;
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      /* the default results/ folder is created; other folders must exist */
      if (!opt->db && g_str_has_prefix (first->db, "results/")
          && g_mkdir_with_parents (dir, 0755) == 0)
        ;
      else
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: directory '%s' does not exist; create it or choose another path",
                       opt->db ? "-o" : path, dir);
          return 2;
        }
    }
  /* only a dtsim trace is replaced; checked before anything runs */
  if (!sim_trace_check_target (db, what, error))
    return 2;
  SimTrace *trace = sim_trace_open (db, error);
  if (!trace)
    return 1;
  guint n = configs->len;
  g_autofree SimRunSummary *sums = g_new0 (SimRunSummary, n);
  g_autofree GError **errors = g_new0 (GError *, n);
  guint n_ok = run_sweep (configs, path, trace, opt, sums, errors);
  gboolean failed = FALSE;
  for (guint i = 0; i < n; i++)
    failed = failed || errors[i] != NULL;
  int code = 0;
  /* the new file replaces the old one only when complete and worth it: every
   * point recorded, done or failed, and at least one done */
  g_autoptr (GError) db_error = NULL;
  if (!sim_trace_ok (trace, &db_error))
    {
      sim_trace_abandon (trace);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s; %s was left as it was",
                   db_error->message, db);
      code = 1;
    }
  else if (n_ok == 0)
    {
      sim_trace_abandon (trace);
      code = report_failures (configs, errors, db, FALSE, error);
    }
  else if (!sim_trace_close (trace, error))
    code = 1;
  else if (failed)
    code = report_failures (configs, errors, db, TRUE, error);
  for (guint i = 0; i < n; i++)
    g_clear_error (&errors[i]);
  if (code != 0)
    return code;

  if (opt->json)
    {
      GString *s = g_string_new ("{");
      g_autofree char *edb = json_escape (db);
      guint64 events = 0;
      double wall = 0;
      for (guint i = 0; i < configs->len; i++)
        {
          events += sums[i].events;
          wall += sums[i].wall_time;
        }
      g_string_append_printf (s, "\"db\": \"%s\", ", edb);
      json_run (s, first, &sums[0]);
      g_string_append_printf (s, ", \"total_events\": %" G_GUINT64_FORMAT ", ", events);
      json_number (s, "total_wall_time", wall);
      g_string_append (s, ", \"runs\": [");
      for (guint i = 0; i < configs->len; i++)
        {
          g_string_append (s, i ? ", {" : "{");
          json_run (s, g_ptr_array_index (configs, i), &sums[i]);
          g_string_append (s, "}");
        }
      g_string_append (s, "]}\n");
      fputs (s->str, stdout);
      g_string_free (s, TRUE);
    }
  else if (!opt->quiet)
    print_table (configs, sums, db);
  return 0;
}
