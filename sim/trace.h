/*
 * trace.h — the SQLite trace of a `dtsim run` (docs/trace.md).
 *
 * One database per invocation; a sweep puts all its runs in it.  Rows are
 * written with prepared statements inside transactions of up to
 * SIM_TRACE_BATCH rows.  A run's row is committed with status 'running' before
 * it starts and moves to 'done', or to 'failed' with the error, at its end.
 */
#ifndef DTSIM_SIM_TRACE_H
#define DTSIM_SIM_TRACE_H

#include <glib.h>

#include "policies/policy.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

/* PRAGMA user_version of the traces written: the one place it is stated.
 * Raise it with any change of the tables (sim/tables/) and say what changed
 * in docs/trace.md. */
#define SIM_TRACE_SCHEMA_VERSION 13
#define SIM_TRACE_BATCH 8192

typedef struct SimTrace SimTrace;

/* The tables of the trace, one file each (sim/tables/NAME.c, with its
 * columns, detail and index), registered in sim/trace.c. */
typedef struct SimTable SimTable;
extern const SimTable sim_table_runs, sim_table_params, sim_table_metrics,
  sim_table_iterations, sim_table_spans, sim_table_messages, sim_table_buckets,
  sim_table_failures, sim_table_stages, sim_table_links;
extern const SimTable sim_table_mesh, sim_table_outages, sim_table_jobs, sim_table_usage;
/* Whether a run at [trace] detail `detail` writes rows of table `tb`: the
 * table's own detail is that or lower. */
gboolean sim_trace_wants (const SimTable *tb, SimDetail detail);

/* Rows buffered by a trace in buffer mode, waiting to be written. */
typedef struct SimTraceChunk SimTraceChunk;
/* Receives a full chunk of a buffer (in the thread that produced its rows);
 * takes ownership of it. */
typedef void (*SimTraceSink) (SimTraceChunk *chunk, gpointer data);

/* What a finished run reports into its `runs` row. */
typedef struct {
  double sim_time;       /* s */
  double wall_time;      /* s of host time */
  guint64 events;
  gint64 iterations;     /* completed rounds */
  gint64 updates;        /* gradients applied */
  gint64 samples;        /* samples trained on (PolResult.samples); -1: the
                            policy trains nothing (the trace holds NULL) */
  double final_loss, final_accuracy; /* NAN: no math */
  double compute, comm, wait;        /* worker seconds, summed */
  const char *stop;      /* why it ended: iterations, time_limit, target_loss,
                            target_accuracy */
  /* whole-job failures (sim/checkpoint.h); all 0 without them.  With
   * them, sim_time is the wall-clock time, every outage included */
  double useful_time;    /* s of useful work: the unfailed run's time */
  gint64 failures;       /* failures that struck the job */
  double lost;           /* s of work (and partial writes) failures undid */
  double checkpoint_time; /* s of completed checkpoint writes */
  double restart_time;   /* s of restarts */
  double waste;          /* first-order expected overhead per useful second
                            (sim_ckpt_waste) at the run's interval */
} SimRunSummary;

/* Whether `path` may receive a new trace: TRUE when nothing is there or it
 * is a dtsim trace (a regular file, not a symbolic link, with the SQLite
 * header, a user_version from 1 to SIM_TRACE_SCHEMA_VERSION and a `runs`
 * table).  Otherwise FALSE with a one-line SIM_ERROR_INPUT message
 * "WHAT 'PATH': what is wrong; the fix", where `what` says where the path
 * came from ("-o", "FILE: [trace] db").  Reads at most the header and the
 * schema; never blocks on a FIFO or a device. */
gboolean sim_trace_check_target (const char *path, const char *what, GError **error);
/* Creates a new, empty trace that will replace `path`: it is written to a
 * hidden temporary file in the same folder (".NAME.XXXXXX"), deleted if a
 * SIGINT, SIGTERM or SIGHUP ends the process.  `path` is not touched.  Check
 * it with sim_trace_check_target() first.
 * Only one process at a time writes a given `path`: the trace holds a lock
 * (flock on ".NAME.lock" beside it, removed at the end) from here until it is
 * closed or abandoned; while another process holds it, NULL with a one-line
 * SIM_ERROR_INPUT "PATH: in use by dtsim run (pid N, scenario FILE); ..."
 * (`scenario` is what this one writes there; NULL: unknown).  With the lock
 * taken, the temporary files of runs killed before they could delete them
 * are removed (sim/trace.c, remove_stale_temporaries).  Other failures are
 * SIM_ERROR_RUNTIME. */
SimTrace *sim_trace_open_run (const char *path, const char *scenario, GError **error);
/* sim_trace_open_run() with no scenario to name. */
SimTrace *sim_trace_open (const char *path, GError **error);
/* Commits pending rows, closes, and renames the new file over `path` (after
 * checking again that `path` is still absent or a trace).  Returns FALSE, the
 * temporary file deleted and `path` untouched, on a write error or after an
 * error of the database itself (sim_trace_ok). */
gboolean sim_trace_close (SimTrace *t, GError **error);
/* Closes and deletes the temporary file; `path` stays as it was. */
void sim_trace_abandon (SimTrace *t);
/* FALSE, with the message, once an error hit the database as a whole (a
 * failed COMMIT, a full disk, a run's row that could not be added or
 * updated): the file no longer holds every run and must not replace its
 * target.  Errors of one run's rows only fail that run (sim_trace_end_run). */
gboolean sim_trace_ok (const SimTrace *t, GError **error);

/* A trace in buffer mode: the row calls (metric, iteration, span, bucket,
 * message) append to a chunk in memory, handed to `sink` every few thousand
 * rows and by sim_trace_flush().  It has no database: begin/end/fail_run and
 * close must not be called on it.  Used by one thread at a time. */
SimTrace *sim_trace_new_buffer (SimTraceSink sink, gpointer data);
/* Hands the partly filled chunk, if any, to the sink. */
void sim_trace_flush (SimTrace *t);
/* Frees a buffer (and any rows not yet flushed). */
void sim_trace_free_buffer (SimTrace *t);
/* Writes a chunk's rows to the database `t`, in their order, and frees it.
 * Errors are kept as for any row and reported by sim_trace_end_run(). */
void sim_trace_write_chunk (SimTrace *t, SimTraceChunk *chunk);
void sim_trace_chunk_free (SimTraceChunk *chunk);

/* A chunk as bytes, to be sent to the process that writes the database
 * (sweep/mpi.c), and back.  The reader checks every table and length, and that
 * every row is run `run`'s: damaged bytes give NULL and a SIM_ERROR_RUNTIME,
 * never a bad read. */
GBytes *sim_trace_chunk_serialize (const SimTraceChunk *chunk);
SimTraceChunk *sim_trace_chunk_deserialize (const guint8 *data, gsize len, gint64 run,
                                            GError **error);

/* Inserts the run (status 'running') and its params; returns its id or -1. */
gint64 sim_trace_begin_run (SimTrace *t, const SimConfig *c,
                            const char *scenario_path, GError **error);
/* Marks the run done with its summary.  Returns FALSE when one of this run's
 * rows could not be written (its own first SQLite error: the caller then
 * fails the run with it) or when the database failed (sim_trace_ok). */
gboolean sim_trace_end_run (SimTrace *t, gint64 run, const SimRunSummary *s,
                            GError **error);
/* Marks the run failed with `message`; forgets its row errors. */
void sim_trace_fail_run (SimTrace *t, gint64 run, const char *message);
/* Records that run `run` did not run: its model does not fit the device
 * (status infeasible, error = reason). */
void sim_trace_infeasible_run (SimTrace *t, gint64 run, const char *reason);

/* The rows of the tables, each defined in its table's file: written at
 * once, or kept in buffer mode.  A run calls them for the tables its
 * [trace] detail wants (sim_trace_wants); they write what they are given. */
void sim_trace_metric (SimTrace *t, gint64 run, double sim_time, gint64 step,
                       double loss, double accuracy, double consensus);
/* A metrics row of job `job` of a run of several (its `job` column; NULL:
 * a run of one job, as sim_trace_metric writes). */
void sim_trace_metric_job (SimTrace *t, gint64 run, const char *job, double sim_time,
                           gint64 step, double loss, double accuracy, double consensus);
void sim_trace_iteration (SimTrace *t, gint64 run, int worker, gint64 iteration,
                          double start, double end, double compute,
                          double comm, double wait, gint64 staleness);
void sim_trace_span (SimTrace *t, gint64 run, const char *actor,
                     const char *kind, double start, double end,
                     gint64 iteration, double bytes, const PolSpanDetail *detail);
void sim_trace_bucket (SimTrace *t, gint64 run, gint64 iteration, int bucket,
                       double bytes, double ready, double start, double end,
                       const char *algorithm);
/* A params row the run settled after it started (PolRecorder.param). */
void sim_trace_param (SimTrace *t, gint64 run, const char *key,
                      const char *value);
/* One worker failure (docs/trace.md, failures). */
void sim_trace_failure (SimTrace *t, gint64 run, int worker, double start,
                        double end, gint64 iteration, const char *lost);
/* One parameter-server crash (docs/trace.md, failures): `detected` NAN
 * where no takeover ran. */
void sim_trace_server_failure (SimTrace *t, gint64 run, int server, double start,
                               double detected, double end, gint64 iteration,
                               const char *lost);
/* One pipeline stage worker's summary (the `stages` table). */
void sim_trace_stage (SimTrace *t, gint64 run, const PolStageStats *st);
void sim_trace_message (SimTrace *t, gint64 run, const char *src,
                        const char *dst, double bytes, double start, double end,
                        const char *tag, const char *route);
/* A link the run's messages crossed: its id (as messages.route names it),
 * name, bandwidth (bytes/s, delivered) and latency (s). */
void sim_trace_link (SimTrace *t, gint64 run, int link, const char *name, double bandwidth,
                     double latency);
/* One stretch of a failing job's timeline that is not useful work (the
 * `outages` table): kind checkpoint, lost or restart (sim/checkpoint.h). */
void sim_trace_outage (SimTrace *t, gint64 run, const char *kind, double start, double end,
                       double useful, gboolean failure);
/* One job of a run of several (the `jobs` table, docs/trace.md). */
typedef struct {
  int job;               /* its place in the file, from 0 */
  const char *name;
  const char *policy;    /* [policy] kind */
  gint64 priority;
  int first_worker;      /* its workers are first_worker .. + workers - 1 in
                            the iterations table */
  int workers;
  const char *hosts;     /* its hosts' ids on the cluster, space-separated */
  double arrival, end;   /* s */
  gint64 iterations;     /* completed rounds */
  double iteration_time; /* s: (end - arrival) / iterations; NaN: none */
  double alone_time;     /* s: the same, the job alone on the cluster */
  double slowdown;       /* iteration_time / alone_time */
  double comm_share;     /* comm / (compute + comm + wait) of its workers */
  double final_loss;     /* NaN: no math */
} SimJobRow;
void sim_trace_job (SimTrace *t, gint64 run, const SimJobRow *j);
/* One row of the `usage` table: over [start, end) (s), kind "busy" gives
 * job `name`'s mean busy GPUs, kind "link" link `name`'s mean utilisation
 * (bytes carried over bandwidth x width, 0 to 1). */
void sim_trace_usage (SimTrace *t, gint64 run, double start, double end, const char *kind,
                      const char *name, double value);
/* One rank of the run's device mesh (the `mesh` table). */
void sim_trace_mesh (SimTrace *t, gint64 run, const PolMeshRank *m);

/* Pages of a trace that holds no row: the schema's, and the first of
 * each table and index (sim/estimate.h prices a trace from it). */
int sim_trace_empty_pages (void);

G_END_DECLS

#endif
