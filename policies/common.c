/*
 * common.c — pieces the policies share: the host names of the worker-only
 * policies (all-reduce, local SGD, pipeline), their worker spans, and the
 * evaluation of the model every policy reports.
 *
 * Each helper does exactly what the policies did on their own before, so a
 * policy that uses them writes the same trace rows.
 */
#include "config.h"

#include "policies/policy.h"

GPtrArray *
pol_worker_host_names (int workers, int servers G_GNUC_UNUSED)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (int w = 0; w < workers; w++)
    g_ptr_array_add (names, g_strdup_printf ("worker%d", w));
  return names;
}

void
pol_worker_span (const PolEnv *env, int w, const char *kind, double a, double b,
                 gint64 iteration)
{
  if (!env->rec.want_spans || !env->rec.span || !(b > a))
    return;
  char name[32];
  g_snprintf (name, sizeof name, "worker%d", w);
  env->rec.span (env->rec.ctx, name, kind, a, b, iteration, 0);
}

gboolean
pol_report_metric (const PolEnv *env, const float *params, double t, gint64 updates)
{
  if (!env->model)
    return FALSE;
  double loss, acc;
  pol_evaluate (env, params, &loss, &acc);
  if (env->rec.metric)
    env->rec.metric (env->rec.ctx, t, updates, loss, acc);
  return env->target_loss > 0 && loss <= env->target_loss;
}
