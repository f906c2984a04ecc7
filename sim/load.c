/*
 * load.c — what a scenario's points would assemble, checked before anything
 * runs.
 *
 * The parser (config/scenario.c) knows keys and their rules; it builds
 * nothing.  Here each point's network is built once and thrown away, so that
 * a topology's own rules and the names in [network] links are checked, and
 * its model is built without data to see that it fits its device.  Then the
 * run's estimates are held to their bounds.
 */
#include "config.h"

#include "config/scenario.h"
#include "device/model.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "sim/cluster.h"
#include "sim/estimate.h"
#include "sim/load.h"
#include "sim/jobs.h"

/* The checks of a point of several jobs: their placement, the cluster's
 * network, each job's model on its device (a job that does not fit makes
 * the point infeasible). */
static gboolean
check_jobs (SimConfig *c, const char *file, GError **error)
{
  int H = 0;
  g_autoptr (GPtrArray) place = sim_jobs_place (c, file, &H, error);
  if (!place)
    return FALSE;
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = sim_jobs_network (c, sim, place, H, file, error);
  if (net)
    net_network_free (net);
  eng_sim_free (sim);
  if (!net)
    return FALSE;
  for (guint j = 0; j < c->jobs->len; j++)
    {
      SimJob *job = g_ptr_array_index (c->jobs, j);
      g_autoptr (GError) fit = NULL;
      if (!sim_model_check (job->c, file, &fit))
        {
          if (!g_error_matches (fit, SIM_ERROR, SIM_ERROR_INFEASIBLE))
            {
              g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s (job %s)", fit->message,
                           job->name);
              return FALSE;
            }
          if (!c->infeasible)
            c->infeasible = g_strdup_printf ("%s (job %s)", fit->message, job->name);
        }
    }
  return TRUE;
}

/* The checks of one point that need its network and its model. */
static gboolean
check_point (SimConfig *c, const char *file, GError **error)
{
  if (c->jobs)
    return check_jobs (c, file, error);
  /* build the network once: topology parameters and link names */
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = sim_network_build (c, sim, file, error);
  if (net)
    net_network_free (net);
  eng_sim_free (sim);
  if (!net)
    return FALSE;
  /* a model that does not fit the device is this point's fate, not the
   * scenario's fault: the point is recorded infeasible, the others run */
  g_autoptr (GError) fit = NULL;
  if (!sim_model_check (c, file, &fit))
    {
      if (!g_error_matches (fit, SIM_ERROR, SIM_ERROR_INFEASIBLE))
        {
          g_propagate_error (error, g_steal_pointer (&fit));
          return FALSE;
        }
      c->infeasible = g_strdup (fit->message);
    }
  return TRUE;
}

GPtrArray *
sim_scenario_load (const char *path, const char *const *sets, GError **error)
{
  g_autoptr (GPtrArray) configs = sim_scenario_parse (path, sets, error);
  if (!configs)
    return NULL;
  const SimConfig *first_infeasible = NULL;
  guint n_infeasible = 0;
  for (guint p = 0; p < configs->len; p++)
    {
      SimConfig *c = g_ptr_array_index (configs, p);
      if (!check_point (c, path, error))
        return NULL;
      if (c->infeasible && !n_infeasible++)
        first_infeasible = c;
    }
  /* a run with nothing that fits is bad input */
  if (n_infeasible == configs->len)
    {
      if (configs->len == 1)
        g_set_error_literal (error, SIM_ERROR, SIM_ERROR_INPUT, first_infeasible->infeasible);
      else
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "no point of the sweep fits device memory; the first, %s: %s",
                     first_infeasible->name, first_infeasible->infeasible);
      return NULL;
    }
  /* a run beyond the host's bounds is refused before anything is written */
  if (!sim_estimate_check (configs, path, error))
    return NULL;
  return g_steal_pointer (&configs);
}
