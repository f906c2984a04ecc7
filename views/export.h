/*
 * export.h — `dtsim export`: a trace database as a table for analysis (CSV or
 * JSON, one row per run) or as a timeline for Perfetto (Chrome trace event
 * JSON).  docs/analysis.md and docs/trace.md describe the files.
 */
#ifndef DTSIM_VIEWS_EXPORT_H
#define DTSIM_VIEWS_EXPORT_H

#include <glib.h>

#include "views/tracedb.h"
#include "config/metrics.h"

G_BEGIN_DECLS

/* Writes database `db` in `format` ("csv", "json" or "perfetto") to `out`
 * (NULL or "-": standard output).  A file is written whole or not at all: a
 * hidden file beside it, renamed over it at the end (a symlink there is
 * replaced, never written through).  `run` > 0 exports that run only.  The
 * database may be hostile or broken (tracedb.c): a file that is not a usable
 * trace is one line and exit code 2.  Returns the exit code (0, 1 failure
 * while writing, 2 bad input) and sets *error. */
int sim_export (const char *db, const char *format, const char *out, gint64 run,
                GError **error);

/* One run of a database, as the run table shows it. */
typedef struct {
  gint64 id;
  char *scenario, *name, *status, *error, *stop, *version;   /* clean text */
  double seed, sim_time, wall_time, events, iterations, updates;
  double final_loss, final_accuracy, compute, comm, wait;    /* NAN: NULL */
  char **swept;            /* (n swept keys) clean text, NULL where absent */
  double batch, workers;   /* [model] batch, [cluster] workers; NAN: absent */
  double samples_per_s;    /* runs.samples / sim_time; NAN: unknown */
  double scaling;          /* NAN unless cluster.workers is swept */
  double failures, lost, checkpoint, waste; /* a job that fails (failures.* params
                              rows); NAN without */
  SimMetrics metrics;      /* the buyer's metrics, from the runs row and the
                              params rows (config/metrics.h); NAN: unknown */
} SimExportRun;

/* The tables and columns sim_export_runs() reads (n of them), for
 * sim_tracedb_open(). */
const SimTraceTable *sim_export_required (gsize *n);

/* The runs of t (all, or run `only`), SimExportRun * each, with the sweep's
 * keys in *keys_out (char *, their swept values in each run's `swept`). */
GPtrArray *sim_export_runs (SimTraceDb *t, gint64 only, GPtrArray **keys_out, GError **error);

G_END_DECLS

#endif
