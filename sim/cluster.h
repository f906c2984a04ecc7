/*
 * cluster.h — one run assembled from its configuration: the simulated network
 * a configuration describes, and the cluster (engine, network, data, model,
 * device times, stragglers, policy) that sim/run.c then runs.
 */
#ifndef DTSIM_SIM_CLUSTER_H
#define DTSIM_SIM_CLUSTER_H

#include <glib.h>

#include "engine/engine.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "netmodel/netmodel.h"
#include "policies/policy.h"
#include "device/model.h"
#include "config/simconfig.h"
#include "config/stragglers.h"
#include "sim/checkpoint.h"

G_BEGIN_DECLS

/* The topology parameters of c, for the given host names (borrowed). */
NetTopologyParams sim_topology_params (const SimConfig *c, GPtrArray *names);

/* Builds the network of c on `sim`: the hosts its policy needs, the topology
 * of [network], then the link overrides of [network] links.  Errors are
 * SIM_ERROR_INPUT messages naming `file` and the [network] key. */
NetNetwork *sim_network_build (const SimConfig *c, EngSim *sim, const char *file,
                               GError **error);

/* sim_network_build() on the given host names (borrowed), in host-id
 * order, whatever policy runs on them: the cluster several jobs share. */
NetNetwork *sim_network_build_hosts (const SimConfig *c, EngSim *sim, GPtrArray *names,
                                     const char *file, GError **error);

/* One run assembled and ready to start: everything its policy was created
 * with, owned here.  The device model lives here too: the policy's compute
 * callbacks (compute_time, scale_time, update_time, with this cluster as
 * their ctx) price a step by the step cost of the model (or [device]
 * step_time, or the measured host time x measured_scale) times a straggler
 * factor. */
typedef struct {
  const SimConfig *c;          /* borrowed: outlives the cluster */
  const PolPolicyOps *ops;     /* the policy's table (validated by the loader) */
  EngSim *sim;                 /* clock and event queue */
  gboolean shared_sim;         /* sim is the caller's (sim_cluster_new_on) */
  NetNetwork *net;             /* the policy's hosts on the [network] topology */
  KernDataset *train, *test;   /* NULL unless the math runs */
  KernDataset eval;            /* a prefix of train, [train] eval_samples long:
                                * the loss is measured on it (math only) */
  KernBackend *backend;        /* NULL unless the math runs */
  KernModel *model;            /* timing-only models have layers, no math */
  SimStragglers *strag;        /* one straggler factor per compute time */
  SimStepCost cost;            /* device cost of one worker step */
  /* [cluster] devices: the cost of each worker's step on its own device
   * at its own batch (costs[step_of[w]]), and each kind's step at the
   * scenario's batch over cost.step (kind_ratio[k], what a part of a step
   * costs there); NULL without devices */
  SimStepCost *costs;
  int n_costs;
  int *step_of;                /* (workers) */
  double *kind_ratio;          /* (n_kinds) */
  int *batches;                /* (workers) [policy] balance = speed, else NULL */
  gboolean *recomputed;        /* (n_layers) layers recomputed in backward
                                * (sim_recompute_mask), NULL = none */
  double *ready;               /* (max(cost.n_layers, 1)) share of the step at
                                * which layer l's gradient is complete */
  PolFailure *failures;        /* (n_failures) [failures], paired up */
  int n_failures;
  PolServerFailures server_failures; /* [failures] server crashes, paired up */
  SimCkptPlan ckpt;            /* whole-job failures and checkpoints */
  PolEnv env;                  /* what the policy was created with */
  PolPolicy *pol;              /* created, not started */
  /* a compute time came out infinite: the engine was stopped there */
  gboolean bad_time;
  double bad_factor;           /* the straggler factor that made it */
} SimCluster;

/* Assembles the run c describes: an engine; the network of c with the
 * policy's hosts; the data sets and the backend (only where the math runs);
 * the model; the stragglers and the device times; the policy, created on
 * them with `rec` (copied) as its recorder, not started.  No callback of
 * `rec` is called before this returns.  NULL with *error set (SIM_ERROR, or
 * the error of the data, backend, model or policy) when a part cannot be
 * made. */
SimCluster *sim_cluster_new (const SimConfig *c, const PolRecorder *rec, GError **error);

/* sim_cluster_new() on the caller's engine `sim` and network `net`, for
 * one job of several sharing them (sim/jobs.c): the cluster takes `net`
 * (a view of the shared network, net_network_view_new) and frees it; `sim`
 * stays the caller's and must outlive the cluster.  Both NULL: as
 * sim_cluster_new(). */
SimCluster *sim_cluster_new_on (const SimConfig *c, const PolRecorder *rec, EngSim *sim,
                                NetNetwork *net, GError **error);

/* Frees the policy, then every part of the cluster.  NULL is ignored. */
void sim_cluster_free (SimCluster *cl);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimCluster, sim_cluster_free)

G_END_DECLS

#endif
