/*
 * run.c — running one assembled run.
 *
 * sim_run_config() has sim/cluster.c assemble the run (engine, network,
 * data, model, device times, policy), starts the policy and runs the engine
 * until the policy stops it (iterations done or target loss reached), a
 * compute time or the loss stops it (no longer finite), or the time limit.
 * Every callback of the policy is forwarded to the trace (and to an extra
 * recorder); the result is the run's summary.
 *
 * `dtsim run` itself, a scenario's every point, is sweep/launch.c.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "sim/run.h"
#include "sim/cluster.h"
#include "config/metrics.h"

/* What the policy's recorder callbacks see. */
typedef struct {
  const SimConfig *c;
  SimTrace *trace;       /* rows go here; NULL: none */
  gint64 run;            /* runs.id of those rows */
  const PolRecorder *extra;  /* receives every callback too; may be NULL */
  SimCluster *cl;        /* set once assembled: no callback comes before */
  /* the first evaluation whose loss was not finite: the run stops there */
  gboolean diverged;
  double diverged_at;    /* simulated seconds */
  gint64 diverged_step;
  double diverged_loss;
  GHashTable *links_used; /* link ids (GINT_TO_POINTER + 1) messages crossed */
} RunCtx;

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
          double end, gint64 iteration, double bytes, const PolSpanDetail *detail)
{
  RunCtx *r = ctx;
  if (r->trace)
    sim_trace_span (r->trace, r->run, actor, kind, start, end, iteration, bytes, detail);
  if (r->extra && r->extra->span)
    r->extra->span (r->extra->ctx, actor, kind, start, end, iteration, bytes, detail);
}

static void
rec_metric (gpointer ctx, double t, gint64 step, double loss, double accuracy,
            double consensus)
{
  RunCtx *r = ctx;
  if (!isfinite (loss) && !r->diverged)
    {
      r->diverged = TRUE;
      r->diverged_at = t;
      r->diverged_step = step;
      r->diverged_loss = loss;
      eng_stop (r->cl->sim);
    }
  if (r->trace)
    sim_trace_metric (r->trace, r->run, t, step, loss, accuracy, consensus);
  if (r->extra && r->extra->metric)
    r->extra->metric (r->extra->ctx, t, step, loss, accuracy, consensus);
}

static void
rec_bucket (gpointer ctx, gint64 iteration, int bucket, double bytes, double ready,
            double start, double end, const char *algorithm)
{
  RunCtx *r = ctx;
  if (r->trace && sim_trace_wants (&sim_table_buckets, r->c->detail))
    sim_trace_bucket (r->trace, r->run, iteration, bucket, bytes, ready, start, end,
                      algorithm);
  if (r->extra && r->extra->bucket)
    r->extra->bucket (r->extra->ctx, iteration, bucket, bytes, ready, start, end,
                      algorithm);
}

static void
rec_param (gpointer ctx, const char *key, const char *value)
{
  RunCtx *r = ctx;
  if (r->trace)
    sim_trace_param (r->trace, r->run, key, value);
  if (r->extra && r->extra->param)
    r->extra->param (r->extra->ctx, key, value);
}

static void
rec_failure (gpointer ctx, int worker, double start, double end, gint64 iteration,
             const char *lost)
{
  RunCtx *r = ctx;
  if (r->trace && sim_trace_wants (&sim_table_failures, r->c->detail))
    sim_trace_failure (r->trace, r->run, worker, start, end, iteration, lost);
  if (r->extra && r->extra->failure)
    r->extra->failure (r->extra->ctx, worker, start, end, iteration, lost);
}

static void
rec_server_failure (gpointer ctx, int server, double start, double detected, double end,
                    gint64 iteration, const char *lost)
{
  RunCtx *r = ctx;
  if (r->trace && sim_trace_wants (&sim_table_failures, r->c->detail))
    sim_trace_server_failure (r->trace, r->run, server, start, detected, end, iteration, lost);
  if (r->extra && r->extra->server_failure)
    r->extra->server_failure (r->extra->ctx, server, start, detected, end, iteration, lost);
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
rec_mesh (gpointer ctx, const PolMeshRank *m)
{
  RunCtx *r = ctx;
  if (r->trace && sim_trace_wants (&sim_table_mesh, r->c->detail))
    sim_trace_mesh (r->trace, r->run, m);
  if (r->extra && r->extra->mesh)
    r->extra->mesh (r->extra->ctx, m);
}

static void
rec_progress (gpointer ctx, double t, gint64 done, gint64 total)
{
  RunCtx *r = ctx;
  if (r->extra && r->extra->progress)
    r->extra->progress (r->extra->ctx, t, done, total);
}

static gint
compare_ids (gconstpointer a, gconstpointer b)
{
  return GPOINTER_TO_INT (a) - GPOINTER_TO_INT (b);
}

static void
on_transfer (gpointer ctx, const NetTransfer *t)
{
  RunCtx *r = ctx;
  const PolPolicyOps *ops = r->cl->ops;
  const char *tag = (t->tag >= 0 && t->tag < ops->n_tags) ? ops->tag_names[t->tag] : NULL;
  /* its route, by link id (the links table names them at the run's end) */
  int links[64];
  /* a transfer to or from a switch (in-network reduction) crosses its port */
  int n = t->sw >= 0
          ? net_network_port_links (r->cl->net, t->src,
                                    net_network_host_switch (r->cl->net, t->src, 0) == t->sw ? 0 : 1,
                                    t->to_switch, links, G_N_ELEMENTS (links))
          : net_network_route_links (r->cl->net, t->src, t->dst, links, G_N_ELEMENTS (links));
  const char *sw = t->sw >= 0 ? net_network_switch_name (r->cl->net, t->sw) : NULL;
  char route[64 * 12];
  gsize len = 0;
  route[0] = '\0';
  for (int i = 0; i < n && i < (int) G_N_ELEMENTS (links); i++)
    {
      len += (gsize) g_snprintf (route + len, sizeof route - len, "%s%d", i ? " " : "", links[i]);
      g_hash_table_add (r->links_used, GINT_TO_POINTER (links[i] + 1));
    }
  sim_trace_message (r->trace, r->run,
                     sw && !t->to_switch ? sw : net_network_host_name (r->cl->net, t->src),
                     sw && t->to_switch ? sw : net_network_host_name (r->cl->net, t->dst),
                     t->bytes, t->start,
                     t->end, tag, n > 0 && n <= (int) G_N_ELEMENTS (links) ? route : NULL);
}

/* The links the run's messages crossed, in id order. */
static void
record_links (RunCtx *r)
{
  GList *ids = g_hash_table_get_keys (r->links_used);
  ids = g_list_sort (ids, (GCompareFunc) compare_ids);
  for (GList *e = ids; e; e = e->next)
    {
      int link = GPOINTER_TO_INT (e->data) - 1;
      sim_trace_link (r->trace, r->run, link, net_network_link_name (r->cl->net, link),
                      net_network_link_bandwidth (r->cl->net, link),
                      net_network_link_latency (r->cl->net, link));
    }
  g_list_free (ids);
}

/* The recorder the policy reports to: the trace at c's detail, and extra. */
static PolRecorder
run_recorder (RunCtx *r)
{
  const SimConfig *c = r->c;
  PolRecorder rec = {
    .ctx = r,
    .want_iterations = (r->trace && sim_trace_wants (&sim_table_iterations, c->detail))
                       || (r->extra && r->extra->want_iterations),
    .want_spans = (r->trace && sim_trace_wants (&sim_table_spans, c->detail))
                  || (r->extra && r->extra->want_spans),
    .iteration = rec_iteration,
    .span = rec_span,
    .metric = rec_metric,
    .bucket = rec_bucket,
    .param = rec_param,
    .failure = rec_failure,
    .server_failure = rec_server_failure,
    .progress = rec_progress,
    .stage = rec_stage,
    .mesh = rec_mesh,
  };
  return rec;
}

/* Starts the policy of cl, runs the engine to its end and fills *out (but
 * its wall_time) from the policy's result. */
static void
run_engine (const SimConfig *c, SimCluster *cl, SimRunSummary *out)
{
  cl->ops->start (cl->pol);
  eng_run (cl->sim, c->time_limit > 0 ? c->time_limit : INFINITY);
  PolResult res;
  cl->ops->finish (cl->pol, &res);
  memset (out, 0, sizeof *out);
  out->sim_time = res.end_time;
  out->events = eng_sim_events (cl->sim);
  out->iterations = res.rounds;
  out->updates = res.updates;
  out->samples = cl->ops->no_model ? -1 : res.samples;
  out->final_loss = res.final_loss;
  out->final_accuracy = res.final_accuracy;
  out->compute = res.compute;
  out->comm = res.comm;
  out->wait = res.wait;
  out->stop = res.reached_target == POL_TARGET_LOSS ? "target_loss"
              : res.reached_target == POL_TARGET_ACCURACY ? "target_accuracy"
              : res.rounds >= c->iterations ? "iterations"
              : "time_limit";
}

/* Whether the run that stopped (summary *s) is a result: FALSE with *error
 * set when a compute time was infinite, the loss diverged, or a policy that
 * trains ran all its iterations without applying a gradient. */
static gboolean
run_verdict (const RunCtx *r, const SimRunSummary *s, GError **error)
{
  const SimConfig *c = r->c;
  const PolPolicyOps *ops = r->cl->ops;
  if (!ops->no_model && c->iterations > 0 && s->updates == 0
      && g_strcmp0 (s->stop, "iterations") == 0)
    {
      if (ops->no_update_hint)
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", c->file, ops->no_update_hint);
      else
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: [policy] kind: the run ended without applying a gradient, so the "
                     "model never changed; check the [policy] keys of kind = %s", c->file,
                     ops->name);
      return FALSE;
    }
  if (r->cl->bad_time)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [stragglers] model: a straggler factor of %g made a compute step "
                   "take infinite time; choose parameters whose factors stay finite (e.g. a "
                   "larger pareto alpha or a smaller mean)", c->file, r->cl->bad_factor);
      return FALSE;
    }
  if (r->diverged)
    {
      /* NaN or infinite losses are no result: the learning rate (or
       * warm-up) is too large for this model and data */
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] lr: the training loss diverged (%s after %" G_GINT64_FORMAT
                   " updates, at simulated %.6g s) with lr = %g; lower [model] lr",
                   c->file, isnan (r->diverged_loss) ? "NaN" : r->diverged_loss > 0 ? "+inf" : "-inf",
                   r->diverged_step, r->diverged_at, c->lr);
      return FALSE;
    }
  return TRUE;
}

gboolean
sim_run_config (const SimConfig *c, SimTrace *trace, gint64 run,
                const PolRecorder *extra, SimRunSummary *out, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  RunCtx r = { .c = c, .trace = trace, .run = run, .extra = extra };
  PolRecorder rec = run_recorder (&r);
  r.cl = sim_cluster_new (c, &rec, error);
  gboolean ok = r.cl != NULL;
  if (ok)
    {
      /* the figures the buyer's metrics need beyond the runs row, so that
       * the trace alone gives them (docs/trace.md, params) */
      SimMetricsIn mi;
      sim_metrics_inputs (c, r.cl->model, &mi);
      sim_metrics_params (&mi, rec_param, &r);
      /* the links table with them, naming the links of their routes */
      if (trace && sim_trace_wants (&sim_table_messages, c->detail))
        {
          r.links_used = g_hash_table_new (g_direct_hash, g_direct_equal);
          net_network_set_observer (r.cl->net, on_transfer, &r);
        }
      run_engine (c, r.cl, out);
      {
        /* which path the collectives took (docs/collectives.md, Flow
         * classes) */
        guint64 classes, detailed;
        g_autofree char *path = NULL;

        net_network_collective_counts (r.cl->net, &classes, &detailed);
        path = g_strdup_printf ("classes=%" G_GUINT64_FORMAT
                                " detailed=%" G_GUINT64_FORMAT, classes, detailed);
        rec_param (&r, "network.flow_classes_path", path);
      }
      if (r.links_used)
        {
          record_links (&r);
          g_hash_table_unref (r.links_used);
        }
      ok = run_verdict (&r, out, error);
      sim_cluster_free (r.cl);
    }
  out->wall_time = (double) (g_get_monotonic_time () - t0) / 1e6;
  return ok;
}
