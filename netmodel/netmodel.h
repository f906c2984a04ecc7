/*
 * netmodel.h — dtsim's flow-level network.
 *
 * A network is a set of hosts, one-directional links (a full-duplex cable is
 * two links, one per direction, each with the full bandwidth) and a route for
 * every ordered pair of hosts (a list of links), computed when asked by its
 * topology's router or set pair by pair.  A transfer of `b` bytes from
 * host s to host d first spends its route's latency (the sum of its links'
 * latencies), then enters its bandwidth phase, where all flows in that phase
 * share every link max-min fairly; rates are recomputed whenever a flow enters
 * or leaves the bandwidth phase.  Alone on its route a transfer takes
 * L + b / B_min.  With NET_CONTENTION_NONE every flow gets its route's slowest
 * bandwidth whatever else is running (the alpha-beta model).
 *
 * Topologies are builders registered by name (see net_topology_*): each adds
 * hosts and links to an empty network and gives it a router, a function
 * computing the route between two hosts from the topology's structure, so
 * that nothing is stored per pair of hosts.  Every link has a unique name
 * ("worker3.up", "rack0.down", ...) so that one can be found and degraded
 * with net_network_set_link() once the network is built.
 *
 * The network knows the engine and nothing of machine learning.
 */
#ifndef DTSIM_NETMODEL_H
#define DTSIM_NETMODEL_H

#include <glib.h>

#include "base/keys.h"
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
  int sw;            /* a transfer between a host and a switch
                        (net_send_port): the switch, src == dst the host;
                        -1 for a transfer between two hosts */
  gboolean to_switch; /* with sw >= 0: host -> switch (else switch -> host) */
} NetTransfer;

/* Called when a transfer's last byte arrives at its destination. */
typedef void (*NetDone) (EngSim *sim, gpointer ctx, gpointer data,
                         const NetTransfer *t);

/* Called for every finished transfer, after its NetDone (for tracing). */
typedef void (*NetObserver) (gpointer ctx, const NetTransfer *t);

NetNetwork *net_network_new (EngSim *sim, NetContention contention);
NetContention net_network_contention (const NetNetwork *net);
/* A view of `base` (a network of its own, which must outlive it) showing
 * n of its hosts: view host i is base host hosts[i] (distinct, in range).
 * Every query and transfer on the view is the base's on those hosts, so
 * flows started through several views of one network share its links
 * (several jobs on one cluster, sim/jobs.c).  A view builds nothing, has
 * no observer of its own, never folds and never runs flow classes (the
 * base's other traffic would break their promise); a NetTransfer reports
 * base host ids.  net_network_free() frees the view only. */
NetNetwork *net_network_view_new (NetNetwork *base, int n, const int *hosts);

/* How a topology lays a ring through the members of one host group for
 * channel c: fills order[size] with the members' indices (0 .. size-1, in
 * host order) in ring order and returns TRUE, or returns FALSE to leave
 * the default (host order rotated by c). */
typedef gboolean (*NetGroupOrder) (int size, int c, int *order);
void net_network_set_group_order (NetNetwork *net, NetGroupOrder order);
/* The network's NetGroupOrder, or NULL (the default everywhere). */
NetGroupOrder net_network_group_order (const NetNetwork *net);
void net_network_free (NetNetwork *net);

/* Adds a host; returns its id (0, 1, 2, ... in order of addition). */
int net_network_add_host (NetNetwork *net, const char *name);
/* Adds a one-directional link; returns its id.  bandwidth in bytes/s (> 0),
 * latency in seconds (>= 0).  The link is named "link<id>". */
int net_network_add_link (NetNetwork *net, double bandwidth, double latency);
/* The same, naming the link `name` (non-empty, not used by another link), so
 * that a user can find it with net_network_link_id() and degrade it. */
int net_network_add_named_link (NetNetwork *net, const char *name,
                                double bandwidth, double latency);
/* Sets the route from src to dst (src != dst) as a list of link ids, in the
 * order a byte crosses them.  The list is copied, and takes precedence over
 * the router's route for that pair. */
void net_network_set_route (NetNetwork *net, int src, int dst,
                            const int *links, int n_links);

/* A router: writes the link ids of the route from host src to host dst
 * (distinct host ids), in crossing order, into `links` when they fit (`max`
 * ids), and returns their number, whether they fit or not; 0 when it has no
 * route for that pair (e.g. a host it does not know). */
typedef int (*NetRouteFunc) (gconstpointer ctx, int src, int dst, int *links,
                             int max);
/* Gives the network its routes: `route` with its state `ctx`, asked when a
 * flow starts and by the route queries, for every pair with no route set by
 * net_network_set_route.  `ctx_bytes` is the size of that state (reported by
 * net_network_route_bytes); `ctx_free` (may be NULL) frees it with the
 * network.  A router set before is freed and replaced. */
void net_network_set_router (NetNetwork *net, NetRouteFunc route, gpointer ctx,
                             GDestroyNotify ctx_free, gsize ctx_bytes);
/* Bytes spent on routes: the routes set pair by pair plus the router's
 * state, O(hosts + links) for every topology. */
gsize net_network_route_bytes (const NetNetwork *net);

int net_network_n_hosts (const NetNetwork *net);
int net_network_n_links (const NetNetwork *net);
const char *net_network_host_name (const NetNetwork *net, int host);
/* Host id by name, or -1. */
int net_network_host_id (const NetNetwork *net, const char *name);
/* Locality: every host has a group id (>= 0), and hosts with the same one
 * share a node (or a rack), so that a collective can keep traffic inside
 * it (comm/hier.c).  A new host's group is its own id (alone);
 * the nodes topology gives each node's GPUs one group, racks each rack's
 * hosts.  A topology numbering its groups from the id of its first host
 * never merges them with hosts added before or after it. */
void net_network_set_host_group (NetNetwork *net, int host, int group);
int net_network_host_group (const NetNetwork *net, int host);
double net_network_link_bandwidth (const NetNetwork *net, int link);
double net_network_link_latency (const NetNetwork *net, int link);
/* Adds a full-duplex cable: the one-way links "<prefix>.up" and
 * "<prefix>.down", each of `bandwidth` bytes/s and `latency` seconds; their
 * ids go to *up and *down. */
void net_network_add_cable (NetNetwork *net, const char *prefix, double bandwidth,
                            double latency, int *up, int *down);
/* Link id by name, or -1. */
int net_network_link_id (const NetNetwork *net, const char *name);
/* The name of link `link`, owned by the network. */
const char *net_network_link_name (const NetNetwork *net, int link);
/* Overrides the bandwidth (bytes/s, finite > 0) and latency (s, finite >= 0)
 * of link `link`, e.g. to degrade one cable.  Meant for after the topology is
 * built and before any transfer is sent: it must not be called while
 * transfers are in flight.  Returns FALSE, changing nothing, on a bad
 * bandwidth or latency. */
gboolean net_network_set_link (NetNetwork *net, int link, double bandwidth,
                               double latency);
/* Writes the route from src to dst as link ids in crossing order into
 * `links` when they fit (`max_links` ids) and returns their number; 0 when
 * src == dst or there is no route. */
int net_network_route_links (const NetNetwork *net, int src, int dst,
                             int *links, int max_links);
/* Route latency (seconds) and slowest bandwidth (bytes/s) from src to dst;
 * for src == dst, 0 and INFINITY. */
double net_network_route_latency (const NetNetwork *net, int src, int dst);
double net_network_route_bandwidth (const NetNetwork *net, int src, int dst);

void net_network_set_observer (NetNetwork *net, NetObserver obs, gpointer ctx);

/* Starts a transfer of `bytes` (>= 0) from src to dst.  `done` is called at
 * arrival of the last byte.  A transfer from a host to itself completes at
 * once (in a new event at the current time). */
/* net_send() whose latency phase lasts at least `floor` (s, >= 0): the
 * larger of it and the route's latency (e.g. a collective step's
 * synchronisation, which includes the hop's own latency). */
void net_send_floored (NetNetwork *net, int src, int dst, double bytes,
                       double floor, int tag, NetDone done, gpointer ctx,
                       gpointer data);
void net_send (NetNetwork *net, int src, int dst, double bytes, int tag,
               NetDone done, gpointer ctx, gpointer data);

/* --- Switch ports: in-network reduction (docs/network.md, "Switches that
 * reduce") ----------------------------------------------------------------
 *
 * A topology may name the switches its hosts reach and give each host a
 * port to them: the links from the host up to the switch and from the
 * switch down to it.  Level 0 is the switch inside a server (NVSwitch),
 * level 1 the fabric between servers.  A switch that reduces (NVLink SHARP,
 * InfiniBand SHARP) adds what its ports bring and sends the sum back down:
 * the collectives that use it (comm/nvls.c) send on the ports with
 * net_send_port. */
#define NET_SWITCH_LEVELS 2
#define NET_PORT_HOPS 4     /* links of a port, at most */

/* Adds a switch named `name` (non-empty); `reduces`: it sums what its
 * ports bring; `rate` (bytes/s, > 0, INFINITY = no limit): what each port
 * gets of its reduction when all its ports are busy (the topology lays
 * links that impose it).  Returns its id (0, 1, ... in order of
 * addition). */
int net_network_add_switch (NetNetwork *net, const char *name,
                            gboolean reduces, double rate);
double net_network_switch_rate (const NetNetwork *net, int sw);
int net_network_n_switches (const NetNetwork *net);
const char *net_network_switch_name (const NetNetwork *net, int sw);
gboolean net_network_switch_reduces (const NetNetwork *net, int sw);
/* Gives `host` a port at `level` (< NET_SWITCH_LEVELS) to switch `sw`:
 * up[n_up] the link ids from the host to the switch, down[n_down] back
 * (1 .. NET_PORT_HOPS each); replaces a port set before. */
void net_network_set_port (NetNetwork *net, int host, int level, int sw,
                           const int *up, int n_up, const int *down,
                           int n_down);
/* The switch `host` reaches at `level`, -1 where it has no port there. */
int net_network_host_switch (const NetNetwork *net, int host, int level);
/* The port's latency (s, the sum of its links') and slowest bandwidth
 * (bytes/s), up or down; the port must exist. */
double net_network_port_latency (const NetNetwork *net, int host, int level,
                                 gboolean up);
double net_network_port_bandwidth (const NetNetwork *net, int host,
                                   int level, gboolean up);
/* Writes the port's link ids up or down into `links` (up to `max`) and
 * returns their number, 0 where the host has no port at `level`. */
int net_network_port_links (const NetNetwork *net, int host, int level,
                            gboolean up, int *links, int max);
/* net_send_floored() between `host` and its switch at `level` (up: host to
 * switch, else back), over the port's links; the NetTransfer reports the
 * host as src and dst, the switch in `sw`. */
void net_send_port (NetNetwork *net, int host, int level, gboolean up,
                    double bytes, double floor, int tag, NetDone done,
                    gpointer ctx, gpointer data);

/* Transfers started and not yet finished. */
gsize net_network_active (const NetNetwork *net);

/* --- Flow classes (docs/collectives.md, "Flow classes") ------------------
 *
 * A collective step whose p transfers are equivalent (same bytes, same
 * start, congruent routes: each link crossed by one of them alone, every
 * route of the same latency and slowest bandwidth) is timed as one flow
 * carrying a multiplicity p: alone on its links, each member takes what
 * net_send() would give it, computed once.  The collective executor
 * (comm/collectives.c) decides when a collective may run so; these are
 * the network's side of it. */

/* Whether collectives may run as flow classes on this network ([network]
 * flow_classes = auto, the default) or always per message (off). */
void net_network_set_flow_classes (NetNetwork *net, gboolean on);
gboolean net_network_flow_classes (const NetNetwork *net);

/* Claims the network for one flow-class collective: TRUE when flow classes
 * are on, no transfer is in flight, no observer is set (a trace recording
 * every message takes the per-message path) and no claim is held.  While
 * claimed, handing a transfer to the network is a caller's error (it
 * aborts): the claimer promised to be the only traffic. */
gboolean net_network_claim (NetNetwork *net);
/* Ends the claim taken by net_network_claim(). */
void net_network_release (NetNetwork *net);

/* Whether the n routes src[i] -> dst[i] (src[i] != dst[i]) form one class:
 * each exists, no link is crossed by two of them, and every route has the
 * same latency phase max(floor[i], route latency) and the same slowest
 * bandwidth, to the bit.  When they do, writes that phase (s) to *delay
 * and that bandwidth (bytes/s) to *bandwidth. */
gboolean net_network_class_routes (NetNetwork *net, int n, const int *src,
                                   const int *dst, const double *floor,
                                   double *delay, double *bandwidth);

/* Whether some link is crossed both by one of the n1 routes src1[i] ->
 * dst1[i] and by one of the n2 routes src2[i] -> dst2[i] (each src !=
 * dst, with a route): two classes that use it at overlapping times would
 * share it. */
gboolean net_network_routes_meet (NetNetwork *net, int n1, const int *src1,
                                  const int *dst1, int n2, const int *src2,
                                  const int *dst2);

/* When a transfer of `bytes` (> 0) handed to the network at `now`, with
 * latency phase `delay` and alone at `bandwidth` on its route (the values
 * net_network_class_routes() gave), has its last byte in: the same
 * floating-point operations, in the same order, as the per-message path. */
double net_network_class_arrival (const NetNetwork *net, double now,
                                  double delay, double bytes,
                                  double bandwidth);

/* net_send_floored() of a transfer of the network's claimer (the network
 * claimed) on the links `route` (n_hops >= 1, each a link id) instead of
 * src -> dst's own route: a collective whose transfers each stand for
 * several copies sends them on their folded routes (docs/collectives.md,
 * "Folded channels").  Its latency is the sum of those links'. */
void net_send_claimed (NetNetwork *net, int src, int dst, const int *route,
                       int n_hops, double bytes, double floor, int tag,
                       NetDone done, gpointer ctx, gpointer data);

/* Counts one collective run as flow classes (`classes`) or per message. */
void net_network_count_collective (NetNetwork *net, gboolean classes);
/* Collectives run so far as flow classes and per message. */
void net_network_collective_counts (const NetNetwork *net, guint64 *classes,
                                    guint64 *detailed);
/* Counts `n` collectives run folded: channels timed by one of them on
 * folded routes (docs/collectives.md, "Folded channels"). */
void net_network_count_folded (NetNetwork *net, guint64 n);
/* Collectives run so far folded (net_network_count_folded). */
guint64 net_network_folded_count (const NetNetwork *net);

/* --- Mirrored copies (docs/collectives.md, "Mirrored replicas") ---------
 *
 * Some topologies are made of copies: cut into blocks of `period`
 * consecutive hosts, moving every host by one block (the last to the
 * first) maps links onto links of the same bandwidth and latency and
 * routes onto routes.  A caller whose traffic is the same in every copy,
 * moved (the replicas of a data-parallel job, each a translate of the
 * first), may then run the first copy only.  A transfer from a host of the
 * first copy to a host of another is *folded*: its route is written in the
 * first copy's links, each link of the real route replaced by the link of
 * the first copy that a translate of the transfer crosses there.  Each
 * link of the first copy then carries, for every folded flow, exactly as
 * many translates as the folded route crosses it, so max-min sharing gives
 * every flow the rate its whole class has in the full network. */

/* Whether moving every host by `period` hosts is a symmetry of the
 * topology's network as built (the router's state `ctx`), with two copies
 * or more. */
typedef gboolean (*NetFoldCheck) (gconstpointer ctx, int period);
/* Writes the folded route from src (a host of the first copy) to dst (any
 * other host) into `links` when it fits (`max`), as a NetRouteFunc does;
 * 0 when there is none. */
typedef int (*NetFoldRoute) (gconstpointer ctx, int period, int src, int dst,
                             int *links, int max);
/* Whether `hosts` cut into blocks of `period` hosts make two copies or
 * more, each of whole units of `unit` hosts (a node, a rack; 1 for hosts
 * alone): the rule every topology of copies applies. */
gboolean net_copies_fit (gint64 hosts, int unit, int period);
/* Declares the router's copies (a topology's build, after
 * net_network_set_router; NULL and NULL for none). */
void net_network_set_folder (NetNetwork *net, NetFoldCheck check,
                             NetFoldRoute route);
/* Folds the network into copies of `period` hosts: TRUE when its topology
 * declared copies of that size, no route was set pair by pair, no link was
 * changed after building (net_network_set_link), no observer is set (it
 * would see the first copy's transfers only) and nothing is in flight;
 * else FALSE, changing nothing.  Period 0 unfolds it (nothing in flight). */
gboolean net_network_fold (NetNetwork *net, int period);
/* The period net_network_fold() set, 0 when not folded. */
int net_network_fold_period (const NetNetwork *net);
/* net_send_floored() of a transfer from a host of the first copy to any
 * other host, on its folded route (the network folded). */
void net_send_folded (NetNetwork *net, int src, int dst, double bytes,
                      double floor, int tag, NetDone done, gpointer ctx,
                      gpointer data);

/* --- Topologies ---------------------------------------------------------- */

/* The description of a topology a scenario asks for.  The first four fields
 * are used by every topology; the keys of each topology's own parameters
 * ([network] rack_size, ...) are declared by its entry (`keys`) and read from
 * `values`, where 0 (or an absent value) means the default the key gives. */
typedef struct {
  int n_hosts;              /* hosts to create */
  const char *const *names; /* n_hosts host names */
  double bandwidth;         /* bytes/s of every host link, each direction */
  double latency;           /* seconds of every host link */
  const BaseValues *values; /* the topology's own keys, by "network.KEY";
                               NULL = every one at its default (a
                               topology reads net_topology_values) */
} NetTopologyParams;

typedef struct {
  const char *name;         /* as written in [network] topology */
  const char *description;  /* one sentence, for docs and `dtsim check` */
  const char *source;       /* paper or document it follows; NULL = none */
  const BaseKey *keys;      /* its own [network] keys, ending with a row
                               whose section is NULL; NULL = none */
  gboolean servers;         /* its host groups are servers whose GPUs are
                               joined by the intra_* links (so messages
                               inside one pay intra_step_overhead) */
  /* Adds hosts and links to an empty network and sets its router (or its
   * routes).  On an error it adds nothing. */
  gboolean (*build) (NetNetwork *net, const NetTopologyParams *p,
                     GError **error);
  /* Optional: a newly allocated paragraph on the network `p` describes
   * (hosts, switches, links, bisection bandwidth in Gbit/s, what is shared),
   * for `dtsim check`; NULL when `p` is invalid. */
  char *(*summary) (const NetTopologyParams *p);
  /* Optional: the size of the host groups (1: hosts alone) over which a
   * ring or hierarchical all-reduce of `workers` ranks has, in each phase,
   * routes of one flow class when the topology is built from `values` as
   * it builds it (docs/collectives.md, "Flow classes"); 0 (or NULL) when
   * they may not, so that the estimate counts messages. */
  int (*class_group) (const BaseValues *values, gint64 workers);
  /* Optional: whether the network built from `values` for `workers`
   * hosts is made of copies of `period` hosts (net_network_fold would
   * fold it); NULL = never. */
  gboolean (*copies) (const BaseValues *values, gint64 workers, int period);
} NetTopology;

/* The registered topology with that name, or NULL. */
const NetTopology *net_topology_lookup (const char *name);
/* Whether topology `name` (NULL or unknown: no) declares [network] `key`
 * among its own keys: how other rooms ask what a topology lays out
 * (gpus_per_node, nic) without naming it. */
gboolean net_topology_has_key (const char *name, const char *key);
/* NULL-terminated list of all registered topologies. */
const NetTopology *const *net_topology_all (void);
/* The same, untyped, for [network] topology (BaseKey.entries). */
const void *const *net_topology_entries (void);
/* Appends (const BaseKey *) the [network] keys the topologies declare: the
 * ones several share, then each topology's own. */
void net_topology_keys (GPtrArray *rows);
/* A new table declaring every topology key ([network] rack_size, ...), with
 * none set: what a caller fills to describe a topology (free it). */
BaseValues *net_topology_values_new (void);
/* What a topology reads its own keys from: p->values, or where that is NULL
 * a table declaring every topology key with none set (so each reads as 0,
 * its default), shared and never freed. */
const BaseValues *net_topology_values (const NetTopologyParams *p);

/* For builders: sets `error` to "<topology> topology: [network] <key>:
 * <message>" (NET_ERROR_INVALID) and returns FALSE. */
gboolean net_topology_key_error (GError **error, const char *topology, const char *key,
                                 const char *fmt, ...) G_GNUC_PRINTF (4, 5);

/* For builders: checks the fields every topology uses (n_hosts >= 1, names
 * given, non-empty, distinct and not yet in `net` (may be NULL), bandwidth
 * finite > 0, latency finite >= 0).  Messages begin "<topology> topology: ". */
gboolean net_topology_check_hosts (const char *topology, const NetNetwork *net,
                                   const NetTopologyParams *p, GError **error);

/* For builders: adds p's hosts in order, each with a cable "<name>.up" /
 * "<name>.down" of p->bandwidth and p->latency; returns the id of the first
 * (the others follow) and writes (n_hosts) uplink ids and downlink ids. */
int net_topology_add_hosts (NetNetwork *net, const NetTopologyParams *p,
                            int *up, int *down);

/* star: every host has one full-duplex link (two one-way links) to a single
 * switch; the route from a to b is a's uplink then b's downlink. */
extern const NetTopology net_topology_star;

G_END_DECLS

#endif /* DTSIM_NETMODEL_H */
