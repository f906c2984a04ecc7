/*
 * estimate.h — what a run will cost the host before it starts: the size of
 * its trace, its peak host memory and its event count, from the scenario
 * alone (each policy's `work` hook counts its schedule's transfers, spans
 * and rows per iteration), and the bounds a run must stay within
 * ([trace] max_size, [scenario] max_memory, [scenario] max_events).
 * docs/scenarios.md ("What a run costs the host") gives the formulas.
 */
#ifndef DTSIM_SIM_ESTIMATE_H
#define DTSIM_SIM_ESTIMATE_H

#include <glib.h>

#include "config/simconfig.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* Bytes an SQLite row of each table takes in a trace, on average: the
 * record (a header byte per column, integers in 1-8 bytes, reals in 8,
 * short texts), its cell pointer and rowid, and the free space pages keep;
 * measured on traces of every policy (a message's route, one link id per
 * link it crosses, is longer on deeper topologies: 80 bytes covers a
 * fat-tree's six links).  An empty trace (the schema's page, and the first
 * page of each table and index: sim_trace_empty_pages) takes
 * SIM_ESTIMATE_EMPTY_TRACE. */
#define SIM_ESTIMATE_MESSAGE_ROW 80.0
#define SIM_ESTIMATE_SPAN_ROW 64.0
#define SIM_ESTIMATE_ITERATION_ROW 56.0
#define SIM_ESTIMATE_BUCKET_ROW 64.0
#define SIM_ESTIMATE_METRIC_ROW 48.0
#define SIM_ESTIMATE_PARAM_ROW 48.0
#define SIM_ESTIMATE_USAGE_ROW 56.0
#define SIM_ESTIMATE_EMPTY_TRACE (sim_trace_empty_pages () * 4096.0)
/* Host memory: the program, its libraries and SQLite's page cache; each
 * host of the network (its routes and the policy's per-worker state); each
 * transfer in flight (its flow, its events and its place in the max-min
 * sharing), measured with gossip on a complete graph. */
#define SIM_ESTIMATE_BASE_MEMORY (16.0 * 1024 * 1024)
#define SIM_ESTIMATE_HOST_MEMORY 4096.0
#define SIM_ESTIMATE_FLIGHT_MEMORY 384.0

/* The estimate of one run (one sweep point); counts are over the whole
 * run, bytes are bytes. */
typedef struct {
  double messages, spans, iteration_rows, bucket_rows, metric_rows, param_rows;
  double usage_rows;       /* a run of several jobs: at most SIM_USAGE_WINDOWS x (jobs + links) */
  double trace_bytes;      /* what the run adds to its database at its [trace] detail */
  double in_flight;        /* most transfers in flight at once */
  double math_bytes;       /* host memory of the real math (models, data) */
  double host_bytes;       /* peak host memory of the run, math_bytes included */
  double events;           /* engine events */
} SimEstimate;

/* Estimates the run c describes (a loaded, valid, feasible point).  FALSE
 * with a SIM_ERROR_INPUT error only where the model cannot be built. */
gboolean sim_estimate (const SimConfig *c, SimEstimate *out, GError **error);

/* Estimates every feasible point of `configs` (as sim_scenario_load
 * returns them, from `file`) and holds them to their bounds: each point's
 * host memory to [scenario] max_memory and its events to [scenario]
 * max_events, the points' traces together (one database) to the first
 * point's [trace] max_size.  FALSE with a one-line SIM_ERROR_INPUT error
 * giving the estimate, the key to lower and the key to raise. */
gboolean sim_estimate_check (const GPtrArray *configs, const char *file, GError **error);

G_END_DECLS

#endif
