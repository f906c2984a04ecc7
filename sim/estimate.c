/*
 * estimate.c — the trace size, host memory and event count of a run,
 * before it runs, and the bounds that refuse a run beyond them.
 *
 * The counts come from the policy's schedule (its `work` hook: transfers,
 * spans and rows per iteration, and the transfers in flight at once) times
 * [scenario] iterations; the bytes from the measured bytes per row and per
 * transfer in flight (estimate.h).  They are upper-ish: a run stopped by a
 * target or a time limit does less, and the collective `auto` is counted
 * as the ring, the algorithm with the most transfers it may pick.
 */
#include "config.h"

#include <math.h>

#include "sim/estimate.h"
#include "device/model.h"
#include "sim/trace.h"
#include "sim/jobs.h"
#include "sim/usage.h"

gboolean
sim_estimate (const SimConfig *c, SimEstimate *out, GError **error)
{
  *out = (SimEstimate) { 0 };
  KernModel *m = sim_model_new (c, NULL, error);
  if (!m)
    return FALSE;
  PolWork w;
  sim_model_work (c, m, &w);
  double state, data;
  sim_model_host_memory (c, m, &state, &data);
  kern_model_free (m);

  double I = (double) c->iterations, W = (double) c->workers;
  out->messages = I * w.messages;
  out->spans = I * w.spans;
  out->iteration_rows = I * w.iteration_rows;
  out->bucket_rows = I * w.bucket_rows;
  /* an evaluation every eval_every applied gradients (0: every round),
   * and the final one */
  double every = c->eval_every > 0 ? (double) c->eval_every : W;
  out->metric_rows = c->math ? floor (I * W / every) + 1 : 0;
  out->param_rows = (double) c->param_keys->len + 8;
  double bytes = out->param_rows * SIM_ESTIMATE_PARAM_ROW
                 + out->metric_rows * SIM_ESTIMATE_METRIC_ROW;
  if (sim_trace_wants (&sim_table_iterations, c->detail))
    bytes += out->iteration_rows * SIM_ESTIMATE_ITERATION_ROW;
  if (sim_trace_wants (&sim_table_buckets, c->detail))
    bytes += out->bucket_rows * SIM_ESTIMATE_BUCKET_ROW;
  if (sim_trace_wants (&sim_table_spans, c->detail))
    bytes += out->spans * SIM_ESTIMATE_SPAN_ROW;
  if (sim_trace_wants (&sim_table_messages, c->detail))
    bytes += out->messages * SIM_ESTIMATE_MESSAGE_ROW;
  if (c->jobs && c->jobs->len > 0 && sim_trace_wants (&sim_table_usage, c->detail))
    {
      /* every window, a row per job and per link of the cluster (the links
       * no transfer crosses write none: an upper bound) */
      int H = 0;
      double links = 0;
      g_autoptr (GPtrArray) place = sim_jobs_place (c, c->file, &H, NULL);
      if (place)
        {
          EngSim *sim = eng_sim_new ();
          NetNetwork *net = sim_jobs_network (c, sim, place, H, c->file, NULL);
          links = net ? net_network_n_links (net) : 0;
          net_network_free (net);
          eng_sim_free (sim);
        }
      out->usage_rows = (double) SIM_USAGE_WINDOWS * (c->jobs->len + links);
      bytes += out->usage_rows * SIM_ESTIMATE_USAGE_ROW;
    }
  out->trace_bytes = bytes;

  g_autoptr (GPtrArray) hosts = pol_lookup (c->policy)->host_names ((int) c->workers,
                                                                    (int) c->servers);
  out->in_flight = w.in_flight;
  out->math_bytes = state + data;
  out->host_bytes = SIM_ESTIMATE_BASE_MEMORY + hosts->len * SIM_ESTIMATE_HOST_MEMORY
                    + w.in_flight * SIM_ESTIMATE_FLIGHT_MEMORY + w.state_bytes
                    + out->math_bytes;
  /* a transfer's start and end, and a few events per worker iteration
   * (its step, its update, a barrier); a collective run as flow classes,
   * one event per round instead of its transfers' */
  out->events = 1.5 * (out->messages - I * w.class_messages) + I * w.class_events
                + 4 * out->iteration_rows;
  return TRUE;
}

static double
gb (double bytes)
{
  return bytes / 1e9;
}

/* The largest table of e at its detail, as "N ROWS rows". */
static char *
biggest_table (const SimConfig *c, const SimEstimate *e)
{
  if (sim_trace_wants (&sim_table_messages, c->detail) && e->messages * SIM_ESTIMATE_MESSAGE_ROW > e->spans * SIM_ESTIMATE_SPAN_ROW)
    return g_strdup_printf ("%.3g messages rows", e->messages);
  if (sim_trace_wants (&sim_table_spans, c->detail) && e->spans * SIM_ESTIMATE_SPAN_ROW > e->iteration_rows * SIM_ESTIMATE_ITERATION_ROW)
    return g_strdup_printf ("%.3g spans rows", e->spans);
  if (sim_trace_wants (&sim_table_iterations, c->detail))
    return g_strdup_printf ("%.3g iterations rows", e->iteration_rows);
  return g_strdup_printf ("%.3g metrics rows", e->metric_rows);
}

gboolean
sim_estimate_check (const GPtrArray *configs, const char *file, GError **error)
{
  g_autofree SimEstimate *est = g_new0 (SimEstimate, configs->len);
  double trace = SIM_ESTIMATE_EMPTY_TRACE;
  const SimConfig *first = g_ptr_array_index (configs, 0);
  int largest = -1;
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      if (c->infeasible)
        continue;
      if (!sim_estimate (c, &est[i], error))
        return FALSE;
      trace += est[i].trace_bytes;
      if (largest < 0 || est[i].trace_bytes > est[largest].trace_bytes)
        largest = (int) i;
    }
  /* the trace first: the one bound a cheaper detail alone may meet */
  if (largest >= 0 && trace > first->trace_max_size)
    {
      g_autofree char *rows = biggest_table (g_ptr_array_index (configs, largest),
                                             &est[largest]);
      g_autofree char *runs = configs->len > 1
        ? g_strdup_printf (" of the %u runs", configs->len) : g_strdup ("");
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [trace] detail: the trace%s would take about %.3g GB (%s%s), over "
                   "[trace] max_size = %.3g GB; lower [trace] detail (e.g. iterations) or "
                   "[scenario] iterations, or raise [trace] max_size",
                   file, runs, gb (trace), rows,
                   configs->len > 1 ? " in the largest run" : "", gb (first->trace_max_size));
      return FALSE;
    }
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      const SimEstimate *e = &est[i];
      if (c->infeasible)
        continue;
      g_autofree char *point = configs->len > 1 ? g_strdup_printf (" (run %s)", c->name)
                                                 : g_strdup ("");
      if (e->host_bytes > c->max_memory)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [scenario] max_memory: the run%s would take about %.3g GB of host "
                       "memory (%.3g transfers in flight at once, %.3g GB of real math), over "
                       "max_memory = %.3g GB; use fewer [cluster] workers, a sparser schedule "
                       "or a smaller model, or raise [scenario] max_memory",
                       file, point, gb (e->host_bytes), e->in_flight, gb (e->math_bytes),
                       gb (c->max_memory));
          return FALSE;
        }
      if (e->events > (double) c->max_events)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [scenario] max_events: the run%s would process about %.3g events "
                       "(%.3g transfers), over max_events = %.3g; lower [scenario] iterations "
                       "or use fewer [cluster] workers, or raise [scenario] max_events",
                       file, point, e->events, e->messages, (double) c->max_events);
          return FALSE;
        }
    }
  return TRUE;
}
