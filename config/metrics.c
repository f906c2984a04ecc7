/*
 * metrics.c — the buyer's metrics of a run (metrics.h): the formulas, the
 * inputs a configuration and its model give, and the params rows that let
 * a trace alone give them again.
 *
 * Model FLOPs are the model's own forward + backward count, whatever the
 * run recomputes: the definition of model FLOPs utilisation (Chowdhery et
 * al. 2022, PaLM, appendix B), so that MFU compares runs, not schedules.
 */
#include "config.h"

#include <math.h>

#include "config/metrics.h"
#include "config/models.h"
#include "policies/policy.h"

void
sim_metrics_compute (const SimMetricsIn *in, SimMetrics *out)
{
  double sps = in->samples >= 0 && in->sim_time > 0 ? in->samples / in->sim_time : NAN;
  out->samples_per_s = sps;
  out->tokens_per_s = in->tokens_per_sample > 0 ? sps * in->tokens_per_sample : NAN;
  out->model_flops = in->flops_per_sample > 0 && in->workers > 0
                     ? in->flops_per_sample * sps / in->workers : NAN;
  out->mfu = in->peak > 0 ? out->model_flops / in->peak : NAN;
  /* a job that fails trains at its useful rate between outages; over a
   * whole training its outages are the first-order model's expectation */
  gboolean fails = in->useful_time > 0;
  double rate = fails && in->samples >= 0 ? in->samples / in->useful_time : sps;
  double stretch = fails ? 1.0 + in->waste : 1.0;
  out->goodput = fails && in->sim_time > 0 ? in->useful_time / in->sim_time : NAN;
  if (in->tokens > 0)
    out->train_time = in->tokens / (rate * in->tokens_per_sample) * stretch;
  else if (in->epochs > 0 && in->train_samples > 0)
    out->train_time = in->epochs * in->train_samples / rate * stretch;
  else
    out->train_time = NAN;
  /* a run that trained nothing never finishes: no time, no hours */
  if (!isfinite (out->train_time))
    out->train_time = NAN;
  out->device_hours = in->devices > 0 ? out->train_time * in->devices / 3600.0 : NAN;
  out->cost = in->price > 0 ? out->device_hours * in->price : NAN;
}

void
sim_metrics_inputs (const SimConfig *c, const KernModel *m, SimMetricsIn *in)
{
  /* the devices the policy places: its workers, and its servers if it has
   * them */
  g_autoptr (GPtrArray) hosts = pol_lookup (c->policy)->host_names ((int) c->workers,
                                                                    (int) c->servers);
  int n = (int) MAX (c->batch, 1);
  gint64 n_train = 0;
  *in = (SimMetricsIn) {
    .samples = NAN,
    .sim_time = NAN,
    .workers = (double) c->workers,
    .devices = (double) hosts->len,
    .flops_per_sample = m ? (m->ops->flops_forward (m, n) + m->ops->flops_backward (m, n)) / n
                          : NAN,
    .tokens_per_sample = sim_model_tokens (c),
    .peak = c->flops,
    .tokens = c->train_tokens,
    .epochs = c->train_epochs,
    .train_samples = c->train_epochs > 0 && sim_dataset_check (c, c->file, &n_train, NULL)
                     ? (double) n_train : NAN,
    .price = c->price,
  };
}

void
sim_metrics_inputs_of (const SimConfig *c, SimMetricsIn *in)
{
  KernModel *m = sim_model_new (c, NULL, NULL);
  sim_metrics_inputs (c, m, in);
  if (m)
    kern_model_free (m);
}

void
sim_metrics_params (const SimMetricsIn *in,
                    void (*param) (gpointer ctx, const char *key, const char *value),
                    gpointer ctx)
{
  char v[G_ASCII_DTOSTR_BUF_SIZE];
  if (isfinite (in->flops_per_sample))
    param (ctx, "model.flops_per_sample", g_ascii_formatd (v, sizeof v, "%.17g",
                                                           in->flops_per_sample));
  param (ctx, "cluster.devices", g_ascii_formatd (v, sizeof v, "%.17g", in->devices));
  if (in->tokens_per_sample > 0)
    param (ctx, "model.tokens_per_sample", g_ascii_formatd (v, sizeof v, "%.17g",
                                                            in->tokens_per_sample));
  if (in->epochs > 0 && isfinite (in->train_samples))
    param (ctx, "model.train_samples", g_ascii_formatd (v, sizeof v, "%.17g",
                                                        in->train_samples));
}

char *
sim_metrics_format_time (double seconds)
{
  if (!isfinite (seconds))
    return g_strdup ("-");
  if (seconds >= 2 * 86400.0)
    return g_strdup_printf ("%.3g days", seconds / 86400.0);
  if (seconds >= 3600.0)
    return g_strdup_printf ("%.3g hours", seconds / 3600.0);
  return g_strdup_printf ("%.3g s", seconds);
}
