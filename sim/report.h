/*
 * report.h — what `dtsim run` prints when a run ends (sim/report.c).
 */
#ifndef DTSIM_SIM_REPORT_H
#define DTSIM_SIM_REPORT_H

#include <glib.h>

#include "config/simconfig.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* The summary table of the runs of `configs` (SimConfig *) and their
 * summaries sums[] (same order) on stdout; `db` names the trace.  Runs that
 * train get their throughput (samples / sim_time, the samples their policy
 * counted); a sweep over cluster.workers adds scaling efficiency. */
void sim_report_table (GPtrArray *configs, const SimRunSummary *sums, const char *db);

/* The same as one JSON object on stdout: the database, totals, and every
 * run in "runs" with its id, status (and error: errors[i], when set), its
 * swept keys in "params" and its summary. */
void sim_report_json (GPtrArray *configs, const SimRunSummary *sums, GError **errors,
                      const char *db);

/* After a run in which some points failed (errors[i] set for point i): for
 * a sweep, one line per failed point on stderr ("dtsim: ERROR (run I/N:
 * NAME)") and, in *error, how many failed and where their rows are; for a
 * single run, its error.  `replaced`: the database was written.  Returns the
 * exit code: 2 when a failure was bad input, else 1. */
int sim_report_failures (GPtrArray *configs, GError **errors, const char *db,
                         gboolean replaced, GError **error);

G_END_DECLS

#endif
