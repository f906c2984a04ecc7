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
#include "sim/checkpoint.h"
#include "sim/jobs.h"

/* A row held back until the wall-clock time of its instants is final
 * (a job that fails: sim/checkpoint.h). */
typedef enum { HELD_ITERATION, HELD_METRIC, HELD_BUCKET } HeldKind;
typedef struct {
  HeldKind kind;
  double latest;         /* s of useful time: its latest instant */
  int worker;            /* iteration: worker; bucket: bucket */
  gint64 iteration;      /* iteration; metric: step; bucket: iteration */
  gint64 staleness;
  double v[6];           /* iteration: start, end, compute, comm, wait;
                            metric: t, loss, accuracy, consensus;
                            bucket: bytes, ready, start, end */
  const char *text;      /* bucket: algorithm (interned) */
} HeldRow;

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
  /* a job that fails: its wall-clock timeline, and the rows whose times
   * it has not settled yet, in the order they came */
  SimTimeline *tl;
  GArray *held;          /* HeldRow */
  guint held_first;      /* rows of held before it are passed on */
} RunCtx;

static void emit_iteration (RunCtx *r, int worker, gint64 iteration, double start,
                            double end, double compute, double comm, double wait,
                            gint64 staleness);
static void emit_metric (RunCtx *r, double t, gint64 step, double loss, double accuracy,
                         double consensus);
static void emit_bucket (RunCtx *r, gint64 iteration, int bucket, double bytes, double ready,
                         double start, double end, const char *algorithm);

/* Passes on, at their wall-clock times, the held rows (from the first, in
 * order) whose instants are all settled: all of them when `all`. */
static void
release_held (RunCtx *r, gboolean all)
{
  double settled = sim_timeline_settled (r->tl);
  while (r->held_first < r->held->len)
    {
      HeldRow *h = &g_array_index (r->held, HeldRow, r->held_first);
      if (!all && !(h->latest < settled))
        break;
      const SimTimeline *tl = r->tl;
      double *v = h->v;
      switch (h->kind)
        {
        case HELD_ITERATION:
          emit_iteration (r, h->worker, h->iteration, sim_timeline_wall (tl, v[0], TRUE),
                          sim_timeline_wall (tl, v[1], FALSE), v[2], v[3], v[4], h->staleness);
          break;
        case HELD_METRIC:
          emit_metric (r, sim_timeline_wall (tl, v[0], FALSE), h->iteration, v[1], v[2], v[3]);
          break;
        case HELD_BUCKET:
          emit_bucket (r, h->iteration, h->worker, v[0], sim_timeline_wall (tl, v[1], FALSE),
                       sim_timeline_wall (tl, v[2], TRUE), sim_timeline_wall (tl, v[3], FALSE),
                       h->text);
          break;
        }
      r->held_first++;
    }
  if (r->held_first == r->held->len)
    {
      g_array_set_size (r->held, 0);
      r->held_first = 0;
    }
}

/* Holds row h back: the timeline is settled up to now first, and the rows
 * it settled are passed on.  FALSE (nothing held) without a timeline. */
static gboolean
hold (RunCtx *r, const HeldRow *h)
{
  if (!r->tl)
    return FALSE;
  sim_timeline_settle (r->tl, eng_sim_now (r->cl->sim));
  g_array_append_val (r->held, *h);
  release_held (r, FALSE);
  return TRUE;
}

static void
rec_iteration (gpointer ctx, int worker, gint64 iteration, double start,
               double end, double compute, double comm, double wait,
               gint64 staleness)
{
  RunCtx *r = ctx;
  HeldRow h = { HELD_ITERATION, end, worker, iteration, staleness,
                { start, end, compute, comm, wait }, NULL };
  if (!hold (r, &h))
    emit_iteration (r, worker, iteration, start, end, compute, comm, wait, staleness);
}

static void
emit_iteration (RunCtx *r, int worker, gint64 iteration, double start,
                double end, double compute, double comm, double wait,
                gint64 staleness)
{
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
  HeldRow h = { HELD_METRIC, t, 0, step, 0, { t, loss, accuracy, consensus }, NULL };
  if (!hold (r, &h))
    emit_metric (r, t, step, loss, accuracy, consensus);
}

static void
emit_metric (RunCtx *r, double t, gint64 step, double loss, double accuracy,
             double consensus)
{
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
  HeldRow h = { HELD_BUCKET, MAX (MAX (ready, start), end), bucket, iteration, 0,
                { bytes, ready, start, end }, g_intern_string (algorithm) };
  if (!hold (r, &h))
    emit_bucket (r, iteration, bucket, bytes, ready, start, end, algorithm);
}

static void
emit_bucket (RunCtx *r, gint64 iteration, int bucket, double bytes, double ready,
             double start, double end, const char *algorithm)
{
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

static const char *const outage_names[] = { "checkpoint", "lost", "restart" };

/* A failing job's end: the timeline composed to the run's useful end, the
 * rows held back passed on, the outages recorded, the summary's times
 * made wall-clock ones, and the results as params rows (docs/trace.md). */
static void
compose_timeline (RunCtx *r, SimRunSummary *out)
{
  sim_timeline_finish (r->tl, out->sim_time);
  release_held (r, TRUE);
  int n;
  const SimOutage *o = sim_timeline_outages (r->tl, &n);
  for (int i = 0; r->trace && i < n; i++)
    sim_trace_outage (r->trace, r->run, outage_names[o[i].kind], o[i].start, o[i].end,
                      o[i].useful, o[i].failure);
  SimTimelineTotals tot;
  sim_timeline_totals (r->tl, &tot);
  const SimCkptPlan *p = &r->cl->ckpt;
  out->useful_time = tot.useful;
  out->sim_time = tot.elapsed;
  out->failures = tot.failures;
  out->lost = tot.lost;
  out->checkpoint_time = tot.checkpoint;
  out->restart_time = tot.restart;
  out->waste = p->waste;
  const struct { const char *key; double v; } rows[] = {
    { "failures.job_mtbf", p->mtbf }, { "failures.checkpoint_bytes", p->size },
    { "failures.write_time", p->write }, { "failures.restart_time", p->restart },
    { "failures.interval", p->interval }, { "failures.young_daly", p->young },
    { "failures.expected_waste", p->waste }, { "failures.useful", tot.useful },
    { "failures.count", (double) tot.failures }, { "failures.lost", tot.lost },
    { "failures.checkpoints", (double) tot.checkpoints },
    { "failures.checkpoint_total", tot.checkpoint }, { "failures.restart_total", tot.restart },
  };
  char v[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    rec_param (r, rows[i].key, isfinite (rows[i].v)
                               ? g_ascii_formatd (v, sizeof v, "%.17g", rows[i].v) : "inf");
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
                   " updates, at simulated %.6g s) with lr = %g; lower [model] lr%s",
                   c->file, isnan (r->diverged_loss) ? "NaN" : r->diverged_loss > 0 ? "+inf" : "-inf",
                   r->diverged_step, r->diverged_at, c->lr,
                   /* a fixed scale that overflows the gradients' format
                    * gives the same symptom */
                   c->num_gradients != KERN_FORMAT_FP32 && !c->loss_scale_dynamic
                   ? ", or set [numerics] loss_scale = dynamic (a fixed scale may overflow the "
                     "gradients' format)" : "");
      return FALSE;
    }
  return TRUE;
}

gboolean
sim_run_config (const SimConfig *c, SimTrace *trace, gint64 run,
                const PolRecorder *extra, SimRunSummary *out, GError **error)
{
  if (c->jobs)
    return sim_jobs_run (c, trace, run, extra, out, error);
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
      if (r.cl->ckpt.on)
        {
          const GArray *at = c->fail_job_at; /* sorted by the loader */
          r.tl = sim_timeline_new (r.cl->ckpt.interval, r.cl->ckpt.write, r.cl->ckpt.restart,
                                   (const double *) at->data, (int) at->len, r.cl->ckpt.mtbf,
                                   (guint64) c->seed);
          r.held = g_array_new (FALSE, FALSE, sizeof (HeldRow));
        }
      run_engine (c, r.cl, out);
      if (r.tl)
        compose_timeline (&r, out);
      {
        /* which path the collectives took (docs/collectives.md, Flow
         * classes) */
        guint64 classes, detailed;
        g_autofree char *path = NULL;

        net_network_collective_counts (r.cl->net, &classes, &detailed);
        guint64 folded = net_network_folded_count (r.cl->net);
        path = g_strdup_printf ("classes=%" G_GUINT64_FORMAT
                                " detailed=%" G_GUINT64_FORMAT, classes, detailed);
        if (folded > 0)
          {
            /* only runs that fold say so: other rows stay as they were */
            char *more = g_strdup_printf ("%s folded=%" G_GUINT64_FORMAT,
                                          path, folded);
            g_free (path);
            path = more;
          }
        rec_param (&r, "network.flow_classes_path", path);
      }
      if (r.links_used)
        {
          record_links (&r);
          g_hash_table_unref (r.links_used);
        }
      ok = run_verdict (&r, out, error);
      if (ok && r.tl && sim_timeline_truncated (r.tl))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [failures] checkpoint_interval: %g s of work at an interval of %g s "
                       "make more than %d checkpoints or outages; raise the interval or lower "
                       "[scenario] iterations", c->file, out->useful_time,
                       r.cl->ckpt.interval, SIM_CKPT_MAX_ROWS);
          ok = FALSE;
        }
      sim_timeline_free (r.tl);
      if (r.held)
        g_array_unref (r.held);
      sim_cluster_free (r.cl);
    }
  out->wall_time = (double) (g_get_monotonic_time () - t0) / 1e6;
  return ok;
}
