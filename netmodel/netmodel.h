/*
 * netmodel.h — dtsim's flow-level network.
 *
 * A network is a set of hosts, one-directional links (a full-duplex cable is
 * two links, one per direction, each with the full bandwidth) and a route for
 * every ordered pair of hosts (a list of links).  A transfer of `b` bytes from
 * host s to host d first spends its route's latency (the sum of its links'
 * latencies), then enters its bandwidth phase, where all flows in that phase
 * share every link max-min fairly; rates are recomputed whenever a flow enters
 * or leaves the bandwidth phase.  Alone on its route a transfer takes
 * L + b / B_min.  With NET_CONTENTION_NONE every flow gets its route's slowest
 * bandwidth whatever else is running (the alpha-beta model).
 *
 * Topologies are builders registered by name (see net_topology_*): each adds
 * hosts, links and routes to an empty network.
 *
 * The network knows the engine and nothing of machine learning.
 */
#ifndef DTSIM_NETMODEL_H
#define DTSIM_NETMODEL_H

#include <glib.h>
#include "engine/engine.h"

G_BEGIN_DECLS

/* Errors of the netmodel (bad topology parameters). */
#define NET_ERROR net_error_quark ()
GQuark net_error_quark (void);

typedef enum {
  NET_ERROR_INVALID /* a topology parameter is out of range */
} NetError;

typedef enum {
  NET_CONTENTION_MAXMIN, /* max-min fair sharing of every link */
  NET_CONTENTION_NONE    /* every flow at its route's slowest bandwidth */
} NetContention;

typedef struct NetNetwork NetNetwork;

/* What a finished transfer reports (all times simulated seconds). */
typedef struct {
  int src, dst;      /* host ids */
  double bytes;      /* payload, bytes */
  double start;      /* when the transfer was handed to the network */
  double end;        /* when its last byte arrived */
  int tag;           /* caller's tag, copied from net_send() */
} NetTransfer;

/* Called when a transfer's last byte arrives at its destination. */
typedef void (*NetDone) (EngSim *sim, gpointer ctx, gpointer data,
                         const NetTransfer *t);

/* Called for every finished transfer, after its NetDone (for tracing). */
typedef void (*NetObserver) (gpointer ctx, const NetTransfer *t);

NetNetwork *net_network_new (EngSim *sim, NetContention contention);
void net_network_free (NetNetwork *net);

/* Adds a host; returns its id (0, 1, 2, ... in order of addition). */
int net_network_add_host (NetNetwork *net, const char *name);
/* Adds a one-directional link; returns its id.  bandwidth in bytes/s (> 0),
 * latency in seconds (>= 0). */
int net_network_add_link (NetNetwork *net, double bandwidth, double latency);
/* Sets the route from src to dst (src != dst) as a list of link ids, in the
 * order a byte crosses them.  The list is copied. */
void net_network_set_route (NetNetwork *net, int src, int dst,
                            const int *links, int n_links);

int net_network_n_hosts (const NetNetwork *net);
int net_network_n_links (const NetNetwork *net);
const char *net_network_host_name (const NetNetwork *net, int host);
/* Host id by name, or -1. */
int net_network_host_id (const NetNetwork *net, const char *name);
double net_network_link_bandwidth (const NetNetwork *net, int link);
double net_network_link_latency (const NetNetwork *net, int link);
/* Route latency (seconds) and slowest bandwidth (bytes/s) from src to dst;
 * for src == dst, 0 and INFINITY. */
double net_network_route_latency (const NetNetwork *net, int src, int dst);
double net_network_route_bandwidth (const NetNetwork *net, int src, int dst);

void net_network_set_observer (NetNetwork *net, NetObserver obs, gpointer ctx);

/* Starts a transfer of `bytes` (>= 0) from src to dst.  `done` is called at
 * arrival of the last byte.  A transfer from a host to itself completes at
 * once (in a new event at the current time). */
void net_send (NetNetwork *net, int src, int dst, double bytes, int tag,
               NetDone done, gpointer ctx, gpointer data);

/* Transfers started and not yet finished. */
gsize net_network_active (const NetNetwork *net);

/* --- Topologies ---------------------------------------------------------- */

/* The description of a topology a scenario asks for. */
typedef struct {
  int n_hosts;              /* hosts to create */
  const char *const *names; /* n_hosts host names */
  double bandwidth;         /* bytes/s of every host link, each direction */
  double latency;           /* seconds of every host link */
} NetTopologyParams;

typedef struct {
  const char *name;         /* as written in [network] topology */
  const char *description;  /* one sentence, for docs and `dtsim check` */
  /* Adds hosts, links and routes to an empty network. */
  gboolean (*build) (NetNetwork *net, const NetTopologyParams *p,
                     GError **error);
} NetTopology;

/* The registered topology with that name, or NULL. */
const NetTopology *net_topology_lookup (const char *name);
/* NULL-terminated list of all registered topologies. */
const NetTopology *const *net_topology_all (void);

/* star: every host has one full-duplex link (two one-way links) to a single
 * switch; the route from a to b is a's uplink then b's downlink. */
extern const NetTopology net_topology_star;

G_END_DECLS

#endif /* DTSIM_NETMODEL_H */
