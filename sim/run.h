/*
 * run.h — running one simulation.
 *
 * sim_run_config() runs one resolved configuration, assembled by
 * sim_cluster_new() (sim/cluster.h), to its end; sweep/launch.h runs every
 * point of a scenario file with it.
 */
#ifndef DTSIM_SIM_RUN_H
#define DTSIM_SIM_RUN_H

#include <glib.h>

#include "policies/policy.h"
#include "config/simconfig.h"
#include "sim/trace.h"

G_BEGIN_DECLS

typedef struct {
  const char *db;        /* -o: output database, overrides [trace] db */
  gboolean json;         /* print one JSON object instead of the table */
  gboolean quiet;        /* no progress, no table */
  int jobs;              /* points run at once; <= 0: the number of online cores */
  int threads;           /* host threads per point's math (parallel.h); <= 0:
                          * the online cores / jobs, at least 1 */
} SimRunOptions;

/* Assembles and runs one configuration.  Rows go to `trace` under run id
 * `run` when trace is not NULL; `extra` (may be NULL) receives the same
 * callbacks (for tests).  Fills *out when the run ran, its wall_time always;
 * FALSE with *error set when the run could not be assembled, or a compute
 * time was infinite, or the loss diverged. */
gboolean sim_run_config (const SimConfig *c, SimTrace *trace, gint64 run,
                         const PolRecorder *extra, SimRunSummary *out, GError **error);


G_END_DECLS

#endif
