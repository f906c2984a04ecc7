/*
 * usage.h — the cluster over time in a run of several jobs: each job's busy
 * GPUs and each link's utilisation, summed into windows of one width that
 * doubles as the run grows, so that a run of any length keeps at most
 * SIM_USAGE_WINDOWS windows (docs/trace.md, "usage").
 */
#ifndef DTSIM_SIM_USAGE_H
#define DTSIM_SIM_USAGE_H

#include <glib.h>

#include "netmodel/netmodel.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* The most windows a run's usage keeps. */
#define SIM_USAGE_WINDOWS 256
/* The narrowest window, s: widths are this times a power of two. */
#define SIM_USAGE_MIN_WIDTH 1e-6

typedef struct SimUsage SimUsage;

/* Usage of n_jobs jobs (names[j], copied) on `net` (the cluster's network,
 * which must outlive it: it names the links and gives their bandwidth and
 * the transfers' routes). */
SimUsage *sim_usage_new (int n_jobs, const char *const *names, const NetNetwork *net);
void sim_usage_free (SimUsage *u);

/* Job `job` has one GPU busy from start to end (s, end >= start): a
 * compute span of one of its workers. */
void sim_usage_busy (SimUsage *u, int job, double start, double end);

/* A finished transfer on the network (a NetObserver): its bytes count on
 * every link of its route, spread evenly over its bandwidth phase (from
 * its start plus its route's latency to its end). */
void sim_usage_transfer (gpointer u, const NetTransfer *t);

/* The window width now, s. */
double sim_usage_width (const SimUsage *u);

/* Writes the windows that start before `end` (s, the run's end) into t as
 * run `run`: per window a "busy" row per job, then a "link" row per link
 * some transfer crossed, in link id order. */
void sim_usage_write (const SimUsage *u, SimTrace *t, gint64 run, double end);

G_END_DECLS

#endif /* DTSIM_SIM_USAGE_H */
