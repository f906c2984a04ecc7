/*
 * cluster.h — building the simulated network a configuration describes.
 */
#ifndef DTSIM_SIM_CLUSTER_H
#define DTSIM_SIM_CLUSTER_H

#include <glib.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "sim/scenario.h"

G_BEGIN_DECLS

/* The topology parameters of c, for the given host names (borrowed). */
NetTopologyParams sim_topology_params (const SimConfig *c, GPtrArray *names);

/* Builds the network of c on `sim`: the hosts its policy needs, the topology
 * of [network], then the link overrides of [network] links.  Errors are
 * SIM_ERROR_INPUT messages naming `file` and the [network] key. */
NetNetwork *sim_network_build (const SimConfig *c, EngSim *sim, const char *file,
                               GError **error);

G_END_DECLS

#endif
