/*
 * sweep.h — the points of a sweep run in parallel (sim/sweep.c).
 */
#ifndef DTSIM_SIM_SWEEP_H
#define DTSIM_SIM_SWEEP_H

#include <glib.h>

#include "sim/run.h"

G_BEGIN_DECLS

/* Runs every point of `configs`, opt->jobs at a time, writing to `trace` from
 * this thread only; fills sums[] in point order.  A point that fails fails
 * alone: its run is marked failed with its own error and the other points go
 * on.  Only an error of the database itself (sim_trace_ok) stops new points
 * from starting; those running finish.  Returns the number of points that
 * ended 'done'; errors[i] gets point i's error, if any. */
guint sim_sweep_run (GPtrArray *configs, const char *path, SimTrace *trace,
                     const SimRunOptions *opt, SimRunSummary *sums, GError **errors);

G_END_DECLS

#endif
