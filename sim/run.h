/*
 * run.h — running simulations, and reporting them.
 *
 * sim_run_config() runs one resolved configuration, assembled by
 * sim_cluster_new() (sim/cluster.h), to its end; sim_run_scenario() does so
 * for every point of a scenario file, writes the trace and prints the
 * summary.  This is what `dtsim run` does.
 */
#ifndef DTSIM_SIM_RUN_H
#define DTSIM_SIM_RUN_H

#include <glib.h>

#include "policies/policy.h"
#include "sim/scenario.h"
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

/* `dtsim run`: loads, validates, runs every point (opt->jobs at once, each in
 * its own thread; this thread alone writes the database), writes the database
 * and prints the report in point order.  Returns the process exit code (0, 1 runtime, 2 input);
 * on failure *error holds the one-line message. */
int sim_run_scenario (const char *path, const char *const *sets,
                      const SimRunOptions *opt, GError **error);

G_END_DECLS

#endif
