/*
 * perfetto.h — a trace database as Chrome trace event JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open (docs/trace.md, "Timelines in
 * Perfetto").
 */
#ifndef DTSIM_VIEWS_PERFETTO_H
#define DTSIM_VIEWS_PERFETTO_H

#include <stdio.h>
#include <glib.h>

#include "views/tracedb.h"

G_BEGIN_DECLS

/* Spans one actor may have at one instant: more overlapping ones than this
 * (only a hostile database has them) are left out, with one line. */
#define SIM_PERFETTO_MAX_LANES 64

/* The process of job `job` (0 .. SIM_MAX_JOBS - 1, its place in the file)
 * of run `run` in a run of several jobs: distinct from every run's own
 * process (pid = run id) for runs below 1,000,000. */
#define SIM_PERFETTO_JOB_PID(run, job) ((run) + (gint64) 1000000 * ((job) + 1))

/* Writes the runs of `t` (all, or run `run` when > 0) to `f`.  Returns the
 * exit code (0; 1 when writing fails; 2 bad input) and sets *error. */
int sim_perfetto_write (SimTraceDb *t, FILE *f, gint64 run, GError **error);

G_END_DECLS

#endif
