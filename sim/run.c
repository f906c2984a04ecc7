/*
 * run.c — one run assembled from its configuration, and `dtsim run`.
 *
 * One run is: an engine; the network the [network] keys describe, with the
 * hosts the policy asks for; the data and the model; the device model (the
 * roofline cost of the model's layers, or the fixed step_time, or the
 * measured host time x measured_scale, times the straggler factor; see
 * sim/model.c); the policy.  The engine then runs until the
 * policy stops it (iterations done or target loss reached) or the time limit.
 * Every callback of the policy is forwarded to the trace.
 *
 * `dtsim run` loads the scenario, checks the output path, runs the points
 * (sim/sweep.c), puts the database in place and prints the report
 * (sim/report.c).
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "netmodel/netmodel.h"
#include "sim/run.h"
#include "kernels/backend.h"
#include "sim/cluster.h"
#include "sim/model.h"
#include "sim/report.h"
#include "sim/stragglers.h"
#include "sim/sweep.h"

typedef struct {
  const SimConfig *c;
  SimTrace *trace;
  gint64 run;
  const PolRecorder *extra;
  SimStragglers *strag;
  NetNetwork *net;
  const PolPolicyOps *ops;
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
                const PolRecorder *extra, SimRunSummary *out, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  RunCtx r = { .c = c, .trace = trace, .run = run, .extra = extra };
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
  guint n_ok = sim_sweep_run (configs, path, trace, opt, sums, errors);
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
      code = sim_report_failures (configs, errors, db, FALSE, error);
    }
  else if (!sim_trace_close (trace, error))
    code = 1;
  else if (failed)
    code = sim_report_failures (configs, errors, db, TRUE, error);
  for (guint i = 0; i < n; i++)
    g_clear_error (&errors[i]);
  if (code != 0)
    return code;

  if (opt->json)
    sim_report_json (configs, sums, db);
  else if (!opt->quiet)
    sim_report_table (configs, sums, db);
  return 0;
}
