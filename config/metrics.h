/*
 * metrics.h — the figures a buyer sizes a cluster by, derived from a run's
 * results: tokens/s, model FLOP/s per device, MFU, time to train,
 * device-hours and cost (docs/trace.md, "Buyer's metrics").
 *
 * `dtsim run`'s table and --json compute them from the run's summary and
 * its configuration; `dtsim export` and `dtsim report` from the trace's
 * runs and params rows.  Both fill a SimMetricsIn and call
 * sim_metrics_compute(), so the three show the same numbers.
 */
#ifndef DTSIM_CONFIG_METRICS_H
#define DTSIM_CONFIG_METRICS_H

#include <glib.h>

#include "kernels/kernels.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

/* What the metrics are computed from.  A figure that is not known is NAN
 * (or 0 where 0 says "not set"). */
typedef struct {
  double samples;           /* samples trained on (runs.samples); < 0 or NAN:
                               the policy trains nothing */
  double sim_time;          /* s, the run's simulated time */
  double workers;           /* devices that compute the model */
  double devices;           /* devices billed: workers, and servers where the
                               policy places them */
  double flops_per_sample;  /* the model's FLOPs of forward + backward for
                               one sample, exact, no recomputation */
  double tokens_per_sample; /* 0: the model's samples are not tokens */
  double peak;              /* FLOP/s of one device at the run's precision */
  double tokens;            /* [scenario] tokens, 0 = not set */
  double epochs;            /* [scenario] epochs, 0 = not set */
  double train_samples;     /* the training set's samples (for epochs) */
  double price;             /* [cluster] price per device-hour, 0 = none */
  /* a job that fails (sim/checkpoint.h): 0 without */
  double useful_time;       /* s of useful work in sim_time (the rest is
                               checkpoints, lost work, restarts) */
  double waste;             /* first-order expected overhead per second of
                               useful work: C / tau + tau / (2M) + R / M */
} SimMetricsIn;

/* The metrics; NAN where an input they need is missing. */
typedef struct {
  double samples_per_s;     /* samples / sim_time */
  double tokens_per_s;      /* samples_per_s x tokens_per_sample */
  double model_flops;       /* FLOP/s per worker: flops_per_sample x
                               samples_per_s / workers */
  double mfu;               /* model_flops / peak, a share */
  double train_time;        /* s: tokens / tokens_per_s, or epochs x
                               train_samples / samples_per_s; for a job
                               that fails, at the useful rate (samples /
                               useful_time) times 1 + waste, the expected
                               time of the first-order model */
  double goodput;           /* useful_time / sim_time; NAN without failures */
  double device_hours;      /* train_time x devices / 3600 */
  double cost;              /* device_hours x price */
} SimMetrics;

/* Fills *out from *in by the formulas above. */
void sim_metrics_compute (const SimMetricsIn *in, SimMetrics *out);

/* Fills the inputs of *in that c and its model m give (all but samples and
 * sim_time, which it sets to NAN). */
void sim_metrics_inputs (const SimConfig *c, const KernModel *m, SimMetricsIn *in);

/* The same where the model is not at hand: builds c's model once, without
 * data.  Where it cannot be built, the model's figures are NAN. */
void sim_metrics_inputs_of (const SimConfig *c, SimMetricsIn *in);

/* Calls param (ctx, key, value) for each derived params row a run records
 * so that a trace alone gives its metrics: model.flops_per_sample,
 * cluster.devices, model.tokens_per_sample (a model counted in tokens) and
 * model.train_samples ([scenario] epochs set). */
void sim_metrics_params (const SimMetricsIn *in,
                         void (*param) (gpointer ctx, const char *key, const char *value),
                         gpointer ctx);

/* A time to train as people say it: "12.3 days" from two days on,
 * "5.21 hours" from an hour, else seconds; "-" for NAN.  Free with
 * g_free(). */
char *sim_metrics_format_time (double seconds);

G_END_DECLS

#endif
