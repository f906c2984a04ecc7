/*
 * simconfig.c — the error domain, the one-line key error, and freeing a
 * resolved point.
 */
#include "config.h"

#include <stdarg.h>

#include "config/simconfig.h"

G_DEFINE_QUARK (sim-error-quark, sim_error)

gboolean
sim_key_error (GError **error, const char *file, const char *section, const char *key,
               const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [%s] %s: %s", file, section, key, msg);
  return FALSE;
}

gboolean
sim_config_check_workers (const SimConfig *c, const GArray *list, const char *section,
                          const char *key, GError **error)
{
  for (guint i = 0; i < list->len; i++)
    if (g_array_index (list, int, i) >= c->workers)
      return sim_key_error (error, c->file, section, key,
                            "worker %d does not exist ([cluster] workers = %" G_GINT64_FORMAT
                            "); list indices from 0 to %" G_GINT64_FORMAT,
                            g_array_index (list, int, i), c->workers, c->workers - 1);
  return TRUE;
}

void
sim_config_free (SimConfig *c)
{
  if (!c)
    return;
  g_free (c->name);
  g_free (c->scenario_name);
  g_free (c->file);
  g_free (c->topology);
  g_free (c->model_kind);
  g_free (c->optimizer);
  g_free (c->dataset);
  g_free (c->policy);
  g_free (c->links);
  g_free (c->fabric);
  g_free (c->intra_fabric);
  g_free (c->device);
  g_free (c->devices);
  for (int k = 0; k < c->n_kinds; k++)
    g_free (c->kinds[k].name);
  g_free (c->kinds);
  g_free (c->worker_kind);
  g_free (c->server);
  g_free (c->catalog);
  g_free (c->workload);
  g_free (c->data_dir);
  g_free (c->backend);
  if (c->hidden)
    g_array_unref (c->hidden);
  if (c->given)
    g_hash_table_unref (c->given);
  g_free (c->db);
  g_free (c->loss_scale_text);
  base_values_free (c->values);
  if (c->fail_worker)
    g_array_unref (c->fail_worker);
  if (c->fail_at)
    g_array_unref (c->fail_at);
  if (c->fail_job_at)
    g_array_unref (c->fail_job_at);
  g_free (c->fail_ckpt_interval);
  if (c->fail_server)
    g_array_unref (c->fail_server);
  if (c->fail_server_at)
    g_array_unref (c->fail_server_at);
  if (c->param_keys)
    g_ptr_array_unref (c->param_keys);
  if (c->param_values)
    g_ptr_array_unref (c->param_values);
  if (c->swept)
    g_ptr_array_unref (c->swept);
  g_free (c->infeasible);
  if (c->jobs)
    g_ptr_array_unref (c->jobs);
  g_free (c);
}

void
sim_job_free (SimJob *j)
{
  if (!j)
    return;
  g_free (j->name);
  if (j->hosts)
    g_array_unref (j->hosts);
  sim_config_free (j->c);
  g_free (j);
}
