/*
 * sweep.h — the points of a sweep run in parallel (sweep/sweep.c).
 */
#ifndef DTSIM_SWEEP_SWEEP_H
#define DTSIM_SWEEP_SWEEP_H

#include <glib.h>

#include "sim/run.h"

G_BEGIN_DECLS

/* Runs every point of `configs`, opt->jobs at a time, writing to `trace` from
 * this thread only; fills sums[] in point order.  A point that fails fails
 * alone: its run is marked failed with its own error and the other points go
 * on.  Only an error of the database itself (sim_trace_ok) stops new points
 * from starting; those running finish.  Under MPI (sweep/mpi.h) this is rank
 * 0: points also go to the other ranks, and their rows come here.  Returns the number of points that
 * ended 'done'; errors[i] gets point i's error, if any. */
guint sim_sweep_run (GPtrArray *configs, const char *path, SimTrace *trace,
                     const SimRunOptions *opt, SimRunSummary *sums, GError **errors);

/* A digest of the sweep's points: the scenario file's bytes, each point's
 * name, seed, feasibility and every resolved key, and the bytes of the
 * hardware catalog and layer-table files they name.  MPI ranks that share
 * it run the same points (data files are not read: too large). */
char *sim_sweep_digest (GPtrArray *configs, const char *path);

/* An MPI rank other than 0 (sweep/mpi.h): runs the points rank 0 hands it,
 * opt->jobs at a time, and sends their rows and ends back until rank 0 says
 * the sweep is over.  `configs`: the scenario's points as this rank read
 * them; `problem`: why it could not (it then runs none, and rank 0 says
 * so).  Returns the exit code (0); a rank that loses rank 0 ends the
 * process. */
int sim_sweep_serve (GPtrArray *configs, const char *path, const char *problem,
                     const SimRunOptions *opt);

G_END_DECLS

#endif
