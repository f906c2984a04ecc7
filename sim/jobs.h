/*
 * jobs.h — several jobs on one cluster: where each job's hosts lie on the
 * cluster ([cluster] placement), the cluster's network with every job's
 * hosts, and a run of all of them in one engine on that one network, each
 * job's policy on a view of it (docs/cluster.md, "Several jobs").
 */
#ifndef DTSIM_SIM_JOBS_H
#define DTSIM_SIM_JOBS_H

#include <glib.h>

#include "config/simconfig.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "policies/policy.h"
#include "sim/trace.h"

G_BEGIN_DECLS

/* The hosts a job needs: its policy's host names for its workers and
 * servers. */
int sim_job_hosts_needed (const SimJob *j);

/* Lays the jobs of c (c->jobs, at least one) on the cluster: writes the
 * cluster's host count to *n_hosts and returns one GArray of int per job
 * (in file order): the cluster host of each of the job's hosts, in the
 * job's host order.  packed: jobs by priority (highest first, ties in file
 * order), each on the next free hosts; spread: the hosts in order dealt
 * to the jobs in turn (those still short of hosts, by priority); random:
 * packed over a shuffle of the hosts drawn from [scenario] seed; given:
 * each job's [job NAME] hosts; rail (topology = nodes, nic = gpu): jobs
 * by priority, each on the same GPU indices of the lowest free nodes, its
 * rank i on GPU o + i mod min (hosts, gpus_per_node).  NULL with a
 * one-line SIM_ERROR_INPUT naming `file` when the jobs do not fit, a hosts
 * list is wrong or rail placement meets another topology. */
GPtrArray *sim_jobs_place (const SimConfig *c, const char *file, int *n_hosts, GError **error);

/* The cluster's network on `sim`: host h is named "JOB/NAME" after the job
 * host placed there (NAME as its policy names it), or "idleH"; the
 * topology and link overrides of c's [network].  NULL with *error as
 * sim_network_build(). */
NetNetwork *sim_jobs_network (const SimConfig *c, EngSim *sim, const GPtrArray *place,
                              int n_hosts, const char *file, GError **error);

/* Runs every job of c together (rows into trace as run `run`, where trace
 * is not NULL) and then each alone on the same cluster and hosts, and fills
 * *out with the whole run: its end, events, the jobs' rounds, updates and
 * times summed.  The `jobs` table gets one row per job.  FALSE with *error
 * set when a job cannot be assembled or ends without its iterations. */
gboolean sim_jobs_run (const SimConfig *c, SimTrace *trace, gint64 run, const PolRecorder *extra,
                       SimRunSummary *out, GError **error);

G_END_DECLS

#endif /* DTSIM_SIM_JOBS_H */
