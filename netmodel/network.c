/*
 * network.c — hosts, links, routes and flows of dtsim's flow-level network.
 *
 * A transfer handed to net_send() lives as a flow.  It first waits out its
 * route's latency (one engine event), then joins the "sharing" set: the flows
 * in their bandwidth phase.  When flows join or leave that set, only the
 * flows whose max-min rates they can change are re-shared, once per
 * simulated instant however many flows joined or left at that time (an
 * end-of-instant hook of the engine: rates only matter over intervals).
 * Every flow remembers a link that limits it; the re-share starts from the
 * flows that joined and those limited by a changed link, fills them by
 * progressive filling (max-min fairness, the links kept in a heap by fair
 * share) with every other flow held at its rate, checks that the flows
 * around still have a limiting link, and takes in those that do not until
 * the rates are the max-min ones (see "Sharing" below).  Each flow whose
 * rate changed has its bytes sent so far subtracted at its old rate and its
 * completion event cancelled and scheduled again at now + remaining / rate.
 * Other flows are not touched at all.  When a completion event fires,
 * every sharing flow that is done at that instant leaves at once (found
 * through a heap of completion times), the flows they leave are re-shared,
 * and only then are the callbacks called, in creation order, so
 * simultaneous completions are reported deterministically.
 *
 * Data layout: each link keeps the list of sharing flows that cross it, each
 * flow keeps its position in those lists (O(1) removal), and the network
 * keeps the list of links crossed by at least one sharing flow, so idle
 * links cost nothing.  Regions are collected with per-region stamps on
 * links and flows (nothing to clear) into reused scratch arrays, and
 * finished flows go to per-route-length free lists, so the steady state
 * allocates nothing per transfer.
 * Routes are computed when a flow starts, not stored per pair: the topology
 * registers a router (net_network_set_router), a function that writes the
 * links of the route between two hosts from its own compact state (a few
 * link ids per host or switch), so a network takes memory in proportion to
 * its hosts and links.  Routes set one by one with net_network_set_route
 * live in a hash table keyed by (src, dst), holding only those pairs, and
 * take precedence over the router.
 */
#include "netmodel/netmodel.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "netmodel/netmodel-private.h"

G_DEFINE_QUARK (net-error, net_error)

/* A sharing flow with at most this fraction of its bytes left when another
 * flow completes is done too: absorbs the rounding of rate * time so that
 * flows finishing together complete in one event. */
#define NET_DONE_FRACTION 1e-9

/* Relative tolerance of region_verify's comparisons of rates: within it,
 * rates computed by different fillings count as equal. */
#define NET_RATE_TOL 1e-12

/* Fillings of a region that fails its checks before it takes in its whole
 * connected component (which needs no check): a change whose effects ripple
 * far then costs at most this many fillings of the region plus one of the
 * component, instead of one filling per step of the ripple. */
#define NET_REGION_PASSES 16

/* Finished flows with fewer hops than this are kept for reuse. */
#define NET_POOL_HOPS 8

/* Routes up to this many links are read into a buffer on the stack. */
#define NET_ROUTE_STACK 32

typedef struct NetFlow NetFlow;
typedef struct NetLink NetLink;

/* Growable arrays of the sharing code, appended to inline (GLib's appends
 * are calls, and these run several times per transfer); zeroed = empty. */
typedef struct {
  NetFlow **v;
  guint len, cap;
} NetFlowVec;

typedef struct {
  NetLink **v;
  guint len, cap;
} NetLinkVec;

typedef struct {
  int *v;
  guint len, cap;
} NetIntVec;

/* Appends x to the vector *a (a NetFlowVec, NetLinkVec or NetIntVec). */
#define VEC_PUSH(a, x)                                                  \
  do                                                                    \
    {                                                                   \
      if (G_UNLIKELY ((a)->len == (a)->cap))                            \
        (a)->v = vec_grow ((a)->v, &(a)->cap, sizeof *(a)->v);          \
      (a)->v[(a)->len++] = (x);                                         \
    }                                                                   \
  while (0)

typedef struct {
  int link;  /* link id */
  guint pos; /* index of the flow in that link's `flows` (while sharing) */
} NetHop;

struct NetFlow {
  NetNetwork *net;
  guint64 seq;       /* creation order: orders simultaneous completions */
  int src, dst;      /* host ids */
  int tag;           /* caller's tag */
  int sw;            /* the switch at the other end of a port transfer
                        (src == dst is then the host), -1 host to host */
  gboolean to_switch; /* a port transfer goes up to `sw` (else down) */
  double bytes;      /* payload, bytes */
  double remaining;  /* bytes not yet sent as of `updated` */
  double updated;    /* s, when `remaining` was last brought up to date */
  double rate;       /* bytes/s while sharing, else 0 */
  double new_rate;   /* bytes/s, scratch for progressive filling */
  int bneck;         /* a link that limits it at `rate` (see region_verify),
                        -1 before its first rate */
  int new_bneck;     /* the link it was frozen on, scratch for filling */
  double t_end;      /* s, time of the pending completion event */
  double window;     /* s, NET_DONE_FRACTION * bytes / rate */
  guint64 mark;      /* == net->epoch when in the region being re-filled */
  gboolean frozen;   /* scratch for progressive filling */
  double start;      /* s, when handed to the network */
  NetDone done;      /* caller's callback and its pointers */
  gpointer ctx;
  gpointer data;
  EngEventId event;  /* pending latency or completion event, 0 if none */
  guint live_pos;    /* index in net->live */
  gint share_pos;    /* index in net->sharing, -1 when not sharing */
  gint due_pos;      /* index in net->due, -1 when no completion event */
  int n_hops;        /* links on the route */
  NetHop hops[];     /* (n_hops) in crossing order */
};

struct NetLink {
  double bandwidth;  /* bytes/s */
  double latency;    /* s */
  NetFlowVec flows;  /* the sharing flows crossing this link */
  gint active_pos;   /* index in net->active_links, -1 when no flow */
  double cap_left;   /* bytes/s, scratch for progressive filling */
  guint n_unfrozen;  /* scratch for progressive filling */
  double share;      /* cap_left / n_unfrozen, scratch for progressive filling */
  guint fill_order;  /* its place among the filled links, scratch */
  guint fill_pos;    /* its index in net->fill_heap, scratch */
  double fill_share; /* bytes/s, the share it froze flows at, scratch */
  guint64 fill_pass; /* == net->pass when it froze flows in that filling */
  double load;       /* bytes/s, sum of its flows' rates, scratch */
  double top;        /* bytes/s, largest rate of its flows, scratch */
  guint64 stats_pass; /* == net->pass when load and top are up to date */
  guint64 mark;      /* == net->epoch when crossed by the region's flows */
  guint64 dirty;     /* == net->dirty_epoch when in net->dirty */
};

/* A route set with net_network_set_route: its own key in net->routes. */
typedef struct {
  int src, dst;      /* host ids */
  int n_links;       /* >= 1 */
  int links[];       /* (n_links) link ids in crossing order */
} NetRoute;

/* A host's port to a switch (net_network_set_port): the links from the
 * host up to the switch and from the switch down to it. */
typedef struct {
  int sw;                 /* switch id, -1 = no port */
  int n_up, n_down;       /* 1 .. NET_PORT_HOPS */
  int up[NET_PORT_HOPS];
  int down[NET_PORT_HOPS];
} NetPort;

struct NetNetwork {
  /* a view (net_network_view_new): the network it shows, and its hosts'
   * ids there; every other field is unused.  NULL for a network of its own */
  NetNetwork *base;
  int *view_hosts;         /* (n_view) base host id of each view host */
  int *view_local;         /* (base's hosts) view host id of each, or -1 */
  int n_view;
  EngSim *sim;
  NetContention contention;
  NetGroupOrder group_order;  /* ring order inside a host group, or NULL */
  GPtrArray *host_names;   /* char*, owned; index = host id */
  GHashTable *host_ids;    /* name (owned by host_names) -> id + 1 */
  GArray *host_groups;     /* int; index = host id: the group (node, rack)
                              of each host, its own id by default */
  GArray *links;           /* NetLink; index = link id */
  GPtrArray *link_names;   /* char*, owned; index = link id */
  GHashTable *link_ids;    /* name (owned by link_names) -> id + 1 */
  GHashTable *routes;      /* NetRoute* set one by one, keyed by (src, dst)
                              (key and value are the same); NULL until the
                              first */
  gsize route_bytes;       /* bytes of the NetRoutes in `routes` */
  NetRouteFunc router;     /* the topology's routes, or NULL */
  gpointer router_ctx;     /* its state, freed with router_free */
  GDestroyNotify router_free;
  gsize router_bytes;      /* the size of that state, as declared */
  NetFlowVec live;         /* every unfinished transfer */
  NetFlowVec sharing;      /* flows in their bandwidth phase */
  NetIntVec active_links;  /* link ids crossed by a sharing flow */
  NetFlowVec due;          /* min-heap of sharing flows by t_end */
  double window_bound;     /* s, >= the window of every flow in `due` */
  guint window_age;        /* completions since window_bound was exact */
  guint64 epoch;           /* stamp of the current region */
  guint64 pass;            /* stamp of the current progressive filling */
  NetIntVec comp_links;    /* link ids crossed by the region, scratch */
  NetFlowVec comp_flows;   /* the region's flows, scratch */
  NetFlowVec violators;    /* flows the region must take in, scratch */
  NetFlowVec finished;     /* flows completing now, scratch */
  NetFlowVec sort_tmp;     /* scratch of flows_sort_seq */
  NetLinkVec fill_heap;    /* progressive filling's heap, scratch */
  NetIntVec dirty;         /* link ids whose flows changed this instant */
  guint64 dirty_epoch;     /* stamp of the links in `dirty` */
  guint flush_id;          /* the engine's end-of-instant hook, 0 = none yet */
  gboolean completing;     /* inside on_flow_complete's callback loop */
  gboolean full_recompute; /* debug: re-share every flow at every change */
  guint region_passes;     /* fillings of a region before taking in its
                              whole component (NET_REGION_PASSES) */
  guint64 reschedules;     /* completion events scheduled (statistics) */
  guint64 refilled;        /* flows filled by re-shares (statistics) */
  NetFlow *pool[NET_POOL_HOPS]; /* free flows by n_hops, linked via `net` */
  guint64 next_seq;        /* seq of the next flow */
  NetObserver observer;    /* called after every NetDone, or NULL */
  gpointer observer_ctx;
  gboolean flow_classes;   /* collectives may run as flow classes */
  gboolean claimed;        /* a flow-class collective holds the network */
  guint64 class_stamp;     /* stamp of net_network_class_routes' marks */
  guint64 *class_marks;    /* (n_class_marks) scratch of
                              net_network_class_routes, by link id */
  guint n_class_marks;
  guint64 coll_classes;    /* collectives run as flow classes */
  guint64 coll_detailed;   /* collectives run per message */
  guint64 coll_folded;     /* collectives run folded */
  NetFoldCheck fold_check; /* the router's mirrored copies, or NULL */
  NetFoldRoute fold_route;
  int fold_period;         /* hosts per copy once folded, 0 = not folded */
  gboolean links_edited;   /* net_network_set_link changed a link */
  GPtrArray *switch_names; /* char*, owned; index = switch id */
  GArray *switch_reduces;  /* gboolean; index = switch id */
  GArray *switch_rates;    /* double, bytes/s per port; index = switch id */
  GArray *ports;           /* NetPort; index = host * NET_SWITCH_LEVELS +
                              level, sw = -1 where there is none */
};

/* Grows a vector's storage (v, *cap elements of `size` bytes) for one more
 * element; returns the new storage. */
static gpointer
vec_grow (gpointer v, guint *cap, gsize size)
{
  g_assert (*cap < G_MAXUINT / 2);
  *cap = MAX (8, 2 * *cap);
  return g_realloc_n (v, *cap, size);
}

static inline NetLink *
link_at (const NetNetwork *net, int id)
{
  return &g_array_index (net->links, NetLink, id);
}

static guint
route_hash (gconstpointer key)
{
  const NetRoute *r = key;

  return (guint) r->src * 0x9E3779B1u ^ (guint) r->dst;
}

static gboolean
route_equal (gconstpointer a, gconstpointer b)
{
  const NetRoute *ra = a, *rb = b;

  return ra->src == rb->src && ra->dst == rb->dst;
}

/* Writes the route from src to dst (src != dst) into `links` when it fits
 * (`max` ids) and returns its length: the route set for that pair, else the
 * router's; 0 when there is neither. */
static int
route_get (const NetNetwork *net, int src, int dst, int *links, int max)
{
  if (net->routes != NULL)
    {
      NetRoute key = { .src = src, .dst = dst };
      const NetRoute *r = g_hash_table_lookup (net->routes, &key);

      if (r != NULL)
        {
          if (r->n_links <= max)
            memcpy (links, r->links, sizeof (int) * r->n_links);
          return r->n_links;
        }
    }
  if (net->router == NULL)
    return 0;
  return net->router (net->router_ctx, src, dst, links, max);
}

/* The links of the route from src to dst (src != dst) and their number in
 * *n (0 when there is no route): in `stack` (NET_ROUTE_STACK ids) when they
 * fit, else in a new array also stored in *heap for the caller to free. */
static const int *
route_links (const NetNetwork *net, int src, int dst, int *stack, int **heap,
             int *n)
{
  *heap = NULL;
  *n = route_get (net, src, dst, stack, NET_ROUTE_STACK);
  if (*n <= NET_ROUTE_STACK)
    return stack;
  *heap = g_new (int, *n);
  route_get (net, src, dst, *heap, *n);
  return *heap;
}

/* A view's host `host` as a host of its base (-1 when out of range). */
static int
view_host (const NetNetwork *net, int host)
{
  return host >= 0 && host < net->n_view ? net->view_hosts[host] : -1;
}

/* A base host id `id` as a host of the view (-1: not one of its hosts). */
static int
view_local (const NetNetwork *net, int id)
{
  return id >= 0 && id < net_network_n_hosts (net->base) ? net->view_local[id] : -1;
}

static gboolean
host_valid (const NetNetwork *net, int host)
{
  return host >= 0 && (guint) host < net->host_names->len;
}

/* --- Construction and queries ------------------------------------------- */

/* Creates an empty network whose flows are timed by `sim`, which must outlive
 * it.  `contention` chooses max-min sharing or the alpha-beta model. */
NetNetwork *
net_network_new (EngSim *sim, NetContention contention)
{
  NetNetwork *net;

  g_return_val_if_fail (sim != NULL, NULL);
  g_return_val_if_fail (contention == NET_CONTENTION_MAXMIN
                        || contention == NET_CONTENTION_NONE, NULL);

  net = g_new0 (NetNetwork, 1);
  net->sim = sim;
  net->contention = contention;
  net->host_names = g_ptr_array_new_with_free_func (g_free);
  net->host_ids = g_hash_table_new (g_str_hash, g_str_equal);
  net->host_groups = g_array_new (FALSE, FALSE, sizeof (int));
  net->links = g_array_new (FALSE, TRUE, sizeof (NetLink));
  net->link_names = g_ptr_array_new_with_free_func (g_free);
  net->link_ids = g_hash_table_new (g_str_hash, g_str_equal);
  net->dirty_epoch = 1;
  net->region_passes = NET_REGION_PASSES;
  net->flow_classes = TRUE;
  net->switch_names = g_ptr_array_new_with_free_func (g_free);
  net->switch_reduces = g_array_new (FALSE, FALSE, sizeof (gboolean));
  net->switch_rates = g_array_new (FALSE, FALSE, sizeof (double));
  net->ports = g_array_new (FALSE, FALSE, sizeof (NetPort));
  return net;
}

/* Frees the network.  Unfinished transfers are dropped: their pending events
 * are cancelled (so the engine must still exist) and their callbacks never
 * run. */
void
net_network_set_group_order (NetNetwork *net, NetGroupOrder order)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL);
  net->group_order = order;
}

NetGroupOrder
net_network_group_order (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_group_order (net->base);
  g_return_val_if_fail (net != NULL, NULL);
  return net->group_order;
}

NetContention
net_network_contention (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_contention (net->base);
  g_return_val_if_fail (net != NULL, NET_CONTENTION_MAXMIN);
  return net->contention;
}

NetNetwork *
net_network_view_new (NetNetwork *base, int n, const int *hosts)
{
  g_return_val_if_fail (base != NULL && base->base == NULL, NULL);
  g_return_val_if_fail (n >= 1 && hosts != NULL, NULL);
  int nb = net_network_n_hosts (base);
  NetNetwork *v = g_new0 (NetNetwork, 1);
  v->base = base;
  v->n_view = n;
  v->view_hosts = g_memdup2 (hosts, sizeof (int) * (gsize) n);
  v->view_local = g_new (int, MAX (nb, 1));
  for (int h = 0; h < nb; h++)
    v->view_local[h] = -1;
  for (int i = 0; i < n; i++)
    {
      g_return_val_if_fail (hosts[i] >= 0 && hosts[i] < nb
                            && v->view_local[hosts[i]] < 0, (net_network_free (v), NULL));
      v->view_local[hosts[i]] = i;
    }
  v->sim = base->sim;
  return v;
}

void
net_network_free (NetNetwork *net)
{
  if (net == NULL)
    return;
  if (net->base != NULL)
    {
      g_free (net->view_hosts);
      g_free (net->view_local);
      g_free (net);
      return;
    }
  for (guint i = 0; i < net->live.len; i++)
    {
      NetFlow *f = net->live.v[i];
      if (f->event != 0)
        eng_cancel (net->sim, f->event);
      g_free (f);
    }
  for (int h = 0; h < NET_POOL_HOPS; h++)
    while (net->pool[h] != NULL)
      {
        NetFlow *f = net->pool[h];
        net->pool[h] = (NetFlow *) f->net;
        g_free (f);
      }
  g_free (net->due.v);
  g_free (net->comp_links.v);
  g_free (net->comp_flows.v);
  g_free (net->violators.v);
  g_free (net->sort_tmp.v);
  g_free (net->fill_heap.v);
  g_free (net->dirty.v);
  if (net->flush_id)
    eng_flush_unregister (net->sim, net->flush_id);
  g_free (net->finished.v);
  for (guint i = 0; i < net->links->len; i++)
    g_free (link_at (net, i)->flows.v);
  g_free (net->live.v);
  g_free (net->sharing.v);
  g_free (net->active_links.v);
  if (net->routes != NULL)
    g_hash_table_destroy (net->routes);
  if (net->router_free != NULL)
    net->router_free (net->router_ctx);
  g_array_free (net->links, TRUE);
  g_hash_table_destroy (net->link_ids);
  g_ptr_array_free (net->link_names, TRUE);
  g_hash_table_destroy (net->host_ids);
  g_ptr_array_free (net->host_names, TRUE);
  g_array_unref (net->host_groups);
  g_ptr_array_free (net->switch_names, TRUE);
  g_array_unref (net->switch_reduces);
  g_array_unref (net->switch_rates);
  g_array_unref (net->ports);
  g_free (net->class_marks);
  g_free (net);
}

/* Adds a host named `name` (non-NULL, not already used); returns its id, the
 * number of hosts added before it, or -1 on a bad name. */
int
net_network_add_host (NetNetwork *net, const char *name)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  char *copy;
  int id;

  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);
  g_return_val_if_fail (!g_hash_table_contains (net->host_ids, name), -1);

  id = (int) net->host_names->len;
  copy = g_strdup (name);
  g_ptr_array_add (net->host_names, copy);
  g_hash_table_insert (net->host_ids, copy, GINT_TO_POINTER (id + 1));
  g_array_append_val (net->host_groups, id);
  return id;
}

/* Adds a one-directional link named `name` (non-empty, not used by another
 * link) of `bandwidth` bytes/s (finite, > 0) and `latency` seconds (finite,
 * >= 0); returns its id (0, 1, 2, ...) or -1. */
int
net_network_add_named_link (NetNetwork *net, const char *name,
                            double bandwidth, double latency)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  NetLink l = { 0 };
  char *copy;

  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL && *name != '\0', -1);
  g_return_val_if_fail (!g_hash_table_contains (net->link_ids, name), -1);
  g_return_val_if_fail (isfinite (bandwidth) && bandwidth > 0, -1);
  g_return_val_if_fail (isfinite (latency) && latency >= 0, -1);

  l.bandwidth = bandwidth;
  l.latency = latency;
  l.active_pos = -1;
  g_array_append_val (net->links, l);
  copy = g_strdup (name);
  g_ptr_array_add (net->link_names, copy);
  g_hash_table_insert (net->link_ids, copy, GINT_TO_POINTER (net->links->len));
  return (int) net->links->len - 1;
}

/* Adds a link as net_network_add_named_link() does, named "link<id>". */
int
net_network_add_link (NetNetwork *net, double bandwidth, double latency)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_autofree char *name = NULL;

  g_return_val_if_fail (net != NULL, -1);
  name = g_strdup_printf ("link%u", net->links->len);
  return net_network_add_named_link (net, name, bandwidth, latency);
}

/* Sets the route from src to dst (distinct hosts) to `links` (n_links >= 1
 * valid link ids, each at most once), copying the list.  Setting a route
 * again replaces it, and a route set here replaces the router's for that
 * pair; transfers already started keep their old route. */
void
net_network_set_route (NetNetwork *net, int src, int dst,
                       const int *links, int n_links)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  NetRoute *r;

  g_return_if_fail (net != NULL);
  g_return_if_fail (host_valid (net, src) && host_valid (net, dst));
  g_return_if_fail (src != dst);
  g_return_if_fail (links != NULL && n_links >= 1);
  for (int i = 0; i < n_links; i++)
    {
      g_return_if_fail (links[i] >= 0 && (guint) links[i] < net->links->len);
      for (int j = 0; j < i; j++)
        g_return_if_fail (links[j] != links[i]);
    }

  if (net->routes == NULL)
    net->routes = g_hash_table_new_full (route_hash, route_equal, g_free,
                                         NULL);
  r = g_hash_table_lookup (net->routes, &(NetRoute) { .src = src,
                                                      .dst = dst });
  if (r != NULL)
    net->route_bytes -= sizeof (NetRoute) + sizeof (int) * r->n_links;
  r = g_malloc (sizeof (NetRoute) + sizeof (int) * n_links);
  r->src = src;
  r->dst = dst;
  r->n_links = n_links;
  memcpy (r->links, links, sizeof (int) * n_links);
  net->route_bytes += sizeof (NetRoute) + sizeof (int) * n_links;
  g_hash_table_add (net->routes, r);
}

/* Gives the network the routes of its topology: `route` (ctx, src, dst,
 * links, max) writes the links from src to dst when they fit and returns
 * their number, 0 for no route; it is called when a flow starts and for
 * every route query, for pairs with no route set by net_network_set_route.
 * `ctx` is its state, `ctx_bytes` that state's size (what the routes cost,
 * for net_network_route_bytes) and `ctx_free` (may be NULL) frees it with
 * the network.  A router set earlier is freed and replaced. */
void
net_network_set_router (NetNetwork *net, NetRouteFunc route, gpointer ctx,
                        GDestroyNotify ctx_free, gsize ctx_bytes)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL);
  g_return_if_fail (route != NULL);

  if (net->router_free != NULL)
    net->router_free (net->router_ctx);
  net->router = route;
  net->router_ctx = ctx;
  net->router_free = ctx_free;
  net->router_bytes = ctx_bytes;
}

/* Bytes the network spends on routes: the routes set one by one (their
 * link lists, not the hash table's own nodes) and the router's state as
 * declared to net_network_set_router. */
gsize
net_network_route_bytes (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_route_bytes (net->base);
  g_return_val_if_fail (net != NULL, 0);
  return net->route_bytes + net->router_bytes;
}

/* Number of hosts added so far. */
int
net_network_n_hosts (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net->n_view;
  g_return_val_if_fail (net != NULL, 0);
  return (int) net->host_names->len;
}

/* Number of links added so far. */
int
net_network_n_links (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_n_links (net->base);
  g_return_val_if_fail (net != NULL, 0);
  return (int) net->links->len;
}

/* The name of host `host`, owned by the network. */
const char *
net_network_host_name (const NetNetwork *net, int host)
{
  if (net != NULL && net->base != NULL)
    return net_network_host_name (net->base, view_host (net, host));
  g_return_val_if_fail (net != NULL, NULL);
  g_return_val_if_fail (host_valid (net, host), NULL);
  return g_ptr_array_index (net->host_names, host);
}

/* Puts host `host` in group `group` (>= 0): hosts with equal groups share
 * a node (or rack), which locality-aware collectives read. */
void
net_network_set_host_group (NetNetwork *net, int host, int group)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL);
  g_return_if_fail (host_valid (net, host));
  g_return_if_fail (group >= 0);
  g_array_index (net->host_groups, int, host) = group;
}

/* The group of host `host`: its id unless a topology set another. */
int
net_network_host_group (const NetNetwork *net, int host)
{
  if (net != NULL && net->base != NULL)
    return net_network_host_group (net->base, view_host (net, host));
  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (host_valid (net, host), -1);
  return g_array_index (net->host_groups, int, host);
}

/* The id of the host named `name`, or -1 when there is none. */
int
net_network_host_id (const NetNetwork *net, const char *name)
{
  if (net != NULL && net->base != NULL)
    return view_local (net, net_network_host_id (net->base, name));
  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);
  return GPOINTER_TO_INT (g_hash_table_lookup (net->host_ids, name)) - 1;
}

/* Bandwidth of link `link`, bytes/s. */
double
net_network_link_bandwidth (const NetNetwork *net, int link)
{
  if (net != NULL && net->base != NULL)
    return net_network_link_bandwidth (net->base, link);
  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, NAN);
  return link_at (net, link)->bandwidth;
}

/* Latency of link `link`, seconds. */
double
net_network_link_latency (const NetNetwork *net, int link)
{
  if (net != NULL && net->base != NULL)
    return net_network_link_latency (net->base, link);
  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, NAN);
  return link_at (net, link)->latency;
}

/* The id of the link named `name`, or -1 when there is none. */
int
net_network_link_id (const NetNetwork *net, const char *name)
{
  if (net != NULL && net->base != NULL)
    return net_network_link_id (net->base, name);
  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);
  return GPOINTER_TO_INT (g_hash_table_lookup (net->link_ids, name)) - 1;
}

/* The name of link `link`, owned by the network. */
const char *
net_network_link_name (const NetNetwork *net, int link)
{
  if (net != NULL && net->base != NULL)
    return net_network_link_name (net->base, link);
  g_return_val_if_fail (net != NULL, NULL);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, NULL);
  return g_ptr_array_index (net->link_names, link);
}

/* Gives link `link` a new bandwidth (bytes/s, finite > 0) and latency (s,
 * finite >= 0); FALSE, changing nothing, when either is out of range.  Only
 * between building and the first transfer: no transfer may be in flight,
 * since their latencies and rates were computed with the old values. */
gboolean
net_network_set_link (NetNetwork *net, int link, double bandwidth,
                      double latency)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, FALSE);
  g_return_val_if_fail (net->live.len == 0, FALSE);

  if (!(isfinite (bandwidth) && bandwidth > 0)
      || !(isfinite (latency) && latency >= 0))
    return FALSE;
  link_at (net, link)->bandwidth = bandwidth;
  link_at (net, link)->latency = latency;
  net->links_edited = TRUE;
  return TRUE;
}

/* Writes the link ids of the route from src to dst, in crossing order,
 * into `links` when they fit (`max_links` ids; `links` may be NULL when
 * max_links is 0) and returns their number; 0 when src == dst or there is
 * no route. */
int
net_network_route_links (const NetNetwork *net, int src, int dst, int *links,
                         int max_links)
{
  if (net != NULL && net->base != NULL)
    return net_network_route_links (net->base, view_host (net, src), view_host (net, dst), links, max_links);
  g_return_val_if_fail (net != NULL, 0);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), 0);
  g_return_val_if_fail (max_links >= 0 && (links != NULL || max_links == 0),
                        0);
  if (src == dst)
    return 0;
  return route_get (net, src, dst, links, max_links);
}

static double
route_latency (const NetNetwork *net, const int *ids, int n)
{
  double sum = 0;

  for (int i = 0; i < n; i++)
    sum += link_at (net, ids[i])->latency;
  return sum;
}

static double
route_bandwidth (const NetNetwork *net, const int *ids, int n)
{
  double min = INFINITY;

  for (int i = 0; i < n; i++)
    min = MIN (min, link_at (net, ids[i])->bandwidth);
  return min;
}

/* Sum of the link latencies from src to dst, seconds; 0 when src == dst.
 * There must be a route. */
double
net_network_route_latency (const NetNetwork *net, int src, int dst)
{
  if (net != NULL && net->base != NULL)
    return net_network_route_latency (net->base, view_host (net, src), view_host (net, dst));
  int stack[NET_ROUTE_STACK], n;
  g_autofree int *heap = NULL;
  const int *ids;

  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), NAN);
  if (src == dst)
    return 0;
  ids = route_links (net, src, dst, stack, &heap, &n);
  g_return_val_if_fail (n > 0, NAN);
  return route_latency (net, ids, n);
}

/* Slowest link bandwidth from src to dst, bytes/s; INFINITY when src == dst.
 * There must be a route. */
double
net_network_route_bandwidth (const NetNetwork *net, int src, int dst)
{
  if (net != NULL && net->base != NULL)
    return net_network_route_bandwidth (net->base, view_host (net, src), view_host (net, dst));
  int stack[NET_ROUTE_STACK], n;
  g_autofree int *heap = NULL;
  const int *ids;

  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), NAN);
  if (src == dst)
    return INFINITY;
  ids = route_links (net, src, dst, stack, &heap, &n);
  g_return_val_if_fail (n > 0, NAN);
  return route_bandwidth (net, ids, n);
}

/* Sets (or, with obs == NULL, clears) the function called with every finished
 * transfer, after the transfer's own NetDone. */
void
net_network_set_observer (NetNetwork *net, NetObserver obs, gpointer ctx)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL);
  net->observer = obs;
  net->observer_ctx = ctx;
}

/* Number of transfers started and not yet finished. */
gsize
net_network_active (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_active (net->base);
  g_return_val_if_fail (net != NULL, 0);
  return net->live.len;
}

/* --- Sharing: incremental max-min fairness by progressive filling ------- */

/* When flows join or leave the sharing set, only the flows whose max-min
 * rates can change get new ones: the *region*.  Every sharing flow f keeps
 * in f->bneck a link that limits it: saturated (its flows' rates add up to
 * its bandwidth), and crossed by no flow with a higher rate than f's.  A
 * feasible allocation in which every flow has such a link is the max-min
 * one (Bertsekas and Gallager, Data Networks, section 6.5), so:
 *
 * 1. The region starts with the flows that joined and the flows whose
 *    bottleneck link a flow joined or left (region_seed).
 * 2. Progressive filling runs over the region's flows alone, on the links
 *    they cross, each link's capacity being its bandwidth less the rates of
 *    the flows outside the region that cross it, which keep their rates.
 * 3. The edge of the region is checked (region_verify): a flow outside it
 *    must have no higher rate than the share at which a link it crosses
 *    froze region flows, and a flow outside whose bottleneck link the
 *    region crosses must still be limited there or on another of its links
 *    (which becomes its f->bneck).  The flows that fail join the region and
 *    it is filled again from 2.
 *
 * Links that no region flow crosses keep their flows at their rates, so the
 * flows limited there stay limited: once the checks pass, every flow has a
 * bottleneck link and the rates are what filling every flow would give, up
 * to rounding (the checks allow NET_RATE_TOL relative on rates and slack of
 * the size of rounding on a saturated link).  The region only grows, so
 * this ends, at worst with every sharing flow.  Region flows are filled in
 * net->comp_flows, the links they cross in net->comp_links.  Flows outside
 * the region keep their rates, their `remaining` (kept per flow, as of
 * f->updated) and their completion events; so do region flows whose rate
 * comes out unchanged.  With net->full_recompute set, the region is every
 * sharing flow and no check is needed: the reference the tests compare
 * against.  A change far from a flow's bottleneck costs nothing there, so
 * a flow ending among thousands that share links with each other re-fills
 * the handful around it instead of all of them. */

/* Brings f->remaining up to time `now` at the flow's current rate. */
static inline void
flow_advance (NetFlow *f, double now)
{
  if (now > f->updated)
    {
      f->remaining = MAX (0.0, f->remaining - f->rate * (now - f->updated));
      f->updated = now;
    }
}

/* --- the due heap: sharing flows with a completion event, by its time --- */

static inline void
due_set (NetNetwork *net, guint i, NetFlow *f)
{
  net->due.v[i] = f;
  f->due_pos = (gint) i;
}

static void
due_sift_up (NetNetwork *net, guint i)
{
  NetFlow *f = net->due.v[i];

  while (i > 0)
    {
      guint p = (i - 1) / 2;
      NetFlow *q = net->due.v[p];
      if (q->t_end <= f->t_end)
        break;
      due_set (net, i, q);
      i = p;
    }
  due_set (net, i, f);
}

static void
due_sift_down (NetNetwork *net, guint i)
{
  guint n = net->due.len;
  NetFlow *f = net->due.v[i];

  for (;;)
    {
      guint c = 2 * i + 1;
      NetFlow *m;

      if (c >= n)
        break;
      if (c + 1 < n && net->due.v[c + 1]->t_end
                       < net->due.v[c]->t_end)
        c++;
      m = net->due.v[c];
      if (m->t_end >= f->t_end)
        break;
      due_set (net, i, m);
      i = c;
    }
  due_set (net, i, f);
}

/* Puts `f` in the due heap or moves it to its new f->t_end. */
static void
due_update (NetNetwork *net, NetFlow *f)
{
  if (f->due_pos < 0)
    {
      VEC_PUSH (&net->due, f);
      f->due_pos = (gint) net->due.len - 1;
    }
  due_sift_up (net, (guint) f->due_pos);
  due_sift_down (net, (guint) f->due_pos);
}

static void
due_remove (NetNetwork *net, NetFlow *f)
{
  guint i = (guint) f->due_pos;
  NetFlow *last = net->due.v[--net->due.len];

  f->due_pos = -1;
  if (last == f)
    return;
  due_set (net, i, last);
  due_sift_up (net, i);
  due_sift_down (net, (guint) last->due_pos);
}

/* Appends to net->finished every flow in the due subtree at `i` whose event
 * lies at or before `limit` (s), `except` excluded. */
static void
due_collect (NetNetwork *net, guint i, double limit, NetFlow *except)
{
  NetFlow *f;

  if (i >= net->due.len)
    return;
  f = net->due.v[i];
  if (f->t_end > limit)
    return;
  if (f != except)
    VEC_PUSH (&net->finished, f);
  due_collect (net, 2 * i + 1, limit, except);
  due_collect (net, 2 * i + 2, limit, except);
}

/* Puts `f` in the sharing set and in the flow list of every link it crosses.
 * Its rate stays 0 until the next sharing_update(). */
static void
sharing_join (NetNetwork *net, NetFlow *f)
{
  f->share_pos = (gint) net->sharing.len;
  f->rate = 0;
  f->bneck = -1;
  f->updated = eng_sim_now (net->sim);
  VEC_PUSH (&net->sharing, f);
  for (int i = 0; i < f->n_hops; i++)
    {
      NetLink *l = link_at (net, f->hops[i].link);

      f->hops[i].pos = l->flows.len;
      VEC_PUSH (&l->flows, f);
      if (l->active_pos < 0)
        {
          l->active_pos = (gint) net->active_links.len;
          VEC_PUSH (&net->active_links, f->hops[i].link);
        }
    }
}

/* Removes `f` from the sharing set, the due heap and its links' flow lists,
 * in O(route length + log sharing): the last element of each list takes its
 * place. */
static void
sharing_leave (NetNetwork *net, NetFlow *f)
{
  g_assert (f->share_pos >= 0);

  net->sharing.v[f->share_pos] = net->sharing.v[--net->sharing.len];
  if ((guint) f->share_pos < net->sharing.len)
    net->sharing.v[f->share_pos]->share_pos = f->share_pos;
  f->share_pos = -1;
  f->rate = 0;
  if (f->due_pos >= 0)
    due_remove (net, f);

  for (int i = 0; i < f->n_hops; i++)
    {
      int id = f->hops[i].link;
      NetLink *l = link_at (net, id);
      guint pos = f->hops[i].pos;

      g_assert (l->flows.v[pos] == f);
      l->flows.v[pos] = l->flows.v[--l->flows.len];
      if (pos < l->flows.len)
        {
          NetFlow *moved = l->flows.v[pos];
          int j = 0;

          while (moved->hops[j].link != id)
            j++;
          moved->hops[j].pos = pos;
        }
      if (l->flows.len == 0)
        {
          gint apos = l->active_pos;

          net->active_links.v[apos]
            = net->active_links.v[--net->active_links.len];
          if ((guint) apos < net->active_links.len)
            link_at (net, net->active_links.v[apos])
              ->active_pos = apos;
          l->active_pos = -1;
        }
    }
}

/* Starts a region: empties the scratch lists and takes a new stamp, so that
 * marks left by earlier regions no longer count. */
static void
region_begin (NetNetwork *net)
{
  net->epoch++;
  net->comp_links.len = 0;
  net->comp_flows.len = 0;
}

/* Puts `f` in the region and the links it crosses in the region's links,
 * unless it is there already. */
static void
region_add (NetNetwork *net, NetFlow *f)
{
  if (f->mark == net->epoch)
    return;
  f->mark = net->epoch;
  VEC_PUSH (&net->comp_flows, f);
  for (int i = 0; i < f->n_hops; i++)
    {
      NetLink *m = link_at (net, f->hops[i].link);

      if (m->mark != net->epoch)
        {
          m->mark = net->epoch;
          VEC_PUSH (&net->comp_links, f->hops[i].link);
        }
    }
}

/* Grows the region to its connected component: every flow crossing one of
 * its links, and the links those cross, until closed.  No flow outside it
 * then crosses its links, so its filling needs no check. */
static void
region_close (NetNetwork *net)
{
  for (guint k = 0; k < net->comp_links.len; k++)
    {
      NetLink *l = link_at (net, net->comp_links.v[k]);

      for (guint j = 0; j < l->flows.len; j++)
        region_add (net, l->flows.v[j]);
    }
}

/* Makes the region every sharing flow, over every active link. */
static void
region_all (NetNetwork *net)
{
  net->comp_links.len = 0;
  for (guint i = 0; i < net->active_links.len; i++)
    {
      VEC_PUSH (&net->comp_links, net->active_links.v[i]);
      link_at (net, net->active_links.v[i])->mark = net->epoch;
    }
  net->comp_flows.len = 0;
  for (guint i = 0; i < net->sharing.len; i++)
    {
      NetFlow *f = net->sharing.v[i];

      f->mark = net->epoch;
      VEC_PUSH (&net->comp_flows, f);
    }
}

/* Seeds the region from the links whose flows changed this instant
 * (net->dirty): the flows that joined (rate still 0) and the flows limited
 * by such a link.  Any other flow is limited by a link whose flows and
 * rates are as they were. */
static void
region_seed (NetNetwork *net)
{
  for (guint i = 0; i < net->dirty.len; i++)
    {
      int id = net->dirty.v[i];
      NetLink *l = link_at (net, id);

      for (guint j = 0; j < l->flows.len; j++)
        {
          NetFlow *f = l->flows.v[j];

          if (f->rate == 0 || f->bneck == id)
            region_add (net, f);
        }
    }
}

/* The rate f has in the filling being checked: its new one in the region,
 * else its current one. */
static inline double
rate_now (const NetNetwork *net, const NetFlow *f)
{
  return f->mark == net->epoch ? f->new_rate : f->rate;
}

/* Whether link `id` limits a flow crossing it at rate x, at the rates of the
 * last filling: saturated up to rounding (slack at most NET_RATE_TOL x plus
 * a few ulps of its bandwidth per flow, what summing the rates can lose),
 * and no flow on it above x (NET_RATE_TOL relative). */
static gboolean
link_limits (NetNetwork *net, int id, double x)
{
  NetLink *l = link_at (net, id);
  double slack;   /* bytes/s, the most left unused on a saturated link */

  if (l->stats_pass != net->pass)
    {
      l->load = 0;
      l->top = 0;
      for (guint j = 0; j < l->flows.len; j++)
        {
          double y = rate_now (net, l->flows.v[j]);

          l->load += y;
          l->top = MAX (l->top, y);
        }
      l->stats_pass = net->pass;
    }
  slack = NET_RATE_TOL * x
          + 4 * (l->flows.len + 1) * DBL_EPSILON * l->bandwidth;
  return l->bandwidth - l->load <= slack && l->top <= x * (1 + NET_RATE_TOL);
}

/* Checks the last filling of the region at its edge: every flow outside it
 * that crosses a region link must neither have a higher rate than the share
 * at which that link froze region flows (they would take from it), nor,
 * when that link was its bottleneck, be left without a link that limits
 * it.  A flow outside whose bottleneck link no region flow crosses is
 * limited there as before.  Returns TRUE when every check passes; else the
 * flows that failed are in net->violators, to be added to the region. */
static gboolean
region_verify (NetNetwork *net)
{
  const NetIntVec *links = &net->comp_links;
  NetFlowVec *violators = &net->violators;

  violators->len = 0;
  for (guint k = 0; k < links->len; k++)
    {
      int id = links->v[k];
      NetLink *l = link_at (net, id);
      double most = l->fill_pass == net->pass      /* bytes/s */
                      ? l->fill_share * (1 + NET_RATE_TOL) : INFINITY;

      for (guint j = 0; j < l->flows.len; j++)
        {
          NetFlow *g = l->flows.v[j];
          gboolean limited = FALSE;

          if (g->mark == net->epoch)
            continue;
          if (g->rate > most)
            {
              VEC_PUSH (violators, g);
              continue;
            }
          if (g->bneck != id || link_limits (net, id, g->rate))
            continue;
          for (int i = 0; i < g->n_hops && !limited; i++)
            if (g->hops[i].link != id
                && link_limits (net, g->hops[i].link, g->rate))
              {
                g->bneck = g->hops[i].link;
                limited = TRUE;
              }
          if (!limited)
            VEC_PUSH (violators, g);
        }
    }
  return violators->len == 0;
}

/* --- progressive filling's heap: links with unfrozen flows, smallest fair
 * share first, ties broken by their order in the region's links --- */

static inline gboolean
fill_before (const NetLink *a, const NetLink *b)
{
  return a->share < b->share || (a->share == b->share && a->fill_order < b->fill_order);
}

static inline void
fill_set (NetLinkVec *h, guint i, NetLink *l)
{
  h->v[i] = l;
  l->fill_pos = i;
}

/* Moves the link at i up or down to where its share puts it. */
static void
fill_sift (NetLinkVec *h, guint i)
{
  NetLink *l = h->v[i];
  while (i > 0 && fill_before (l, h->v[(i - 1) / 2]))
    {
      fill_set (h, i, h->v[(i - 1) / 2]);
      i = (i - 1) / 2;
    }
  for (;;)
    {
      guint c = 2 * i + 1;
      if (c >= h->len)
        break;
      if (c + 1 < h->len && fill_before (h->v[c + 1], h->v[c]))
        c++;
      if (!fill_before (h->v[c], l))
        break;
      fill_set (h, i, h->v[c]);
      i = c;
    }
  fill_set (h, i, l);
}

static void
fill_remove (NetLinkVec *h, NetLink *l)
{
  NetLink *last = h->v[--h->len];
  if (last != l)
    {
      fill_set (h, l->fill_pos, last);
      fill_sift (h, last->fill_pos);
    }
}

/* Sets up the links of a filling: each starts with its bandwidth less the
 * rates of the flows outside the region that cross it (its full bandwidth
 * when there are none, as in a full filling), its count of region flows
 * and their fair share, and its place in `links`, which breaks ties. */
static void
fill_start (NetNetwork *net, const NetIntVec *links)
{
  for (guint i = 0; i < links->len; i++)
    {
      NetLink *l = link_at (net, links->v[i]);

      l->cap_left = l->bandwidth;
      l->n_unfrozen = 0;
      for (guint j = 0; j < l->flows.len; j++)
        {
          const NetFlow *f = l->flows.v[j];

          if (f->mark == net->epoch)
            l->n_unfrozen++;
          else
            l->cap_left -= f->rate;
        }
      l->cap_left = MAX (l->cap_left, 0.0);
      l->fill_order = i;
      if (l->n_unfrozen > 0)
        l->share = l->cap_left / l->n_unfrozen;
    }
}

/* Freezes region flow f at `share`, on link `bneck`: takes the share from
 * every link f crosses, and moves those links in `heap` (with heap == NULL,
 * they are in none). */
static void
fill_freeze (NetNetwork *net, NetLinkVec *heap, NetFlow *f, NetLink *bneck,
             double share)
{
  f->frozen = TRUE;
  f->new_rate = share;
  f->new_bneck = (int) (bneck - (NetLink *) (gpointer) net->links->data);
  for (int i = 0; i < f->n_hops; i++)
    {
      NetLink *l = link_at (net, f->hops[i].link);

      l->cap_left -= share;
      if (--l->n_unfrozen == 0)
        {
          if (heap != NULL)
            fill_remove (heap, l);
          continue;
        }
      l->share = l->cap_left / l->n_unfrozen;
      if (heap != NULL)
        fill_sift (heap, l->fill_pos);
    }
}

/* Freezes, without the heap, each region flow that is the only region flow
 * on every link it crosses: nothing else changes those links' shares, so
 * the filling freezes it at the smallest of them, on the first link in
 * `links` that has it, as fill_freeze does here.  Marks the other flows
 * unfrozen.  Returns the number of flows frozen. */
static guint
fill_lone (NetNetwork *net, const NetFlowVec *flows)
{
  guint n = 0;

  for (guint i = 0; i < flows->len; i++)
    {
      NetFlow *f = flows->v[i];
      NetLink *best = NULL;

      f->frozen = FALSE;
      for (int k = 0; k < f->n_hops; k++)
        {
          NetLink *l = link_at (net, f->hops[k].link);

          if (l->n_unfrozen != 1)
            {
              best = NULL;
              break;
            }
          if (best == NULL || fill_before (l, best))
            best = l;
        }
      if (best == NULL)
        continue;
      best->fill_share = best->share;
      best->fill_pass = net->pass;
      fill_freeze (net, NULL, f, best, best->share);
      n++;
    }
  return n;
}

/* Progressive filling of the region: `flows` (marked with net->epoch) and
 * the links they cross (`links`).  Sets each region flow's new_rate to its
 * max-min fair share and new_bneck to the link that froze it, given that
 * the flows outside the region keep their rates; sets the links' fill
 * scratch (fill_share and fill_pass for the links that froze flows), and
 * touches nothing else.
 *
 * Links start as fill_start() sets them.  While some flow is unfrozen, take
 * the link with the smallest fair share (capacity left / unfrozen flows
 * crossing it; among equal shares the first in `links`), give that share to
 * each of its unfrozen flows, freeze them and subtract the share from every
 * link they cross.  The links wait in a heap keyed by their share, so a
 * round costs O(log links) plus, per flow it freezes, O(route length x log
 * links): the whole filling is O((links + flows x route length) log links)
 * plus a scan of the flows crossing the links.  Flows alone on their links
 * (fill_lone) are frozen first, outside the heap: each is a filling of its
 * own, which the others do not touch, so the rates are the same. */
static void
progressive_fill (NetNetwork *net, const NetIntVec *links,
                  const NetFlowVec *flows)
{
  NetLinkVec *heap = &net->fill_heap;
  guint n_unfrozen;

  net->pass++;
  fill_start (net, links);
  n_unfrozen = flows->len - fill_lone (net, flows);
  heap->len = 0;
  for (guint i = 0; i < links->len && n_unfrozen > 0; i++)
    {
      NetLink *l = link_at (net, links->v[i]);

      if (l->n_unfrozen == 0)
        continue;
      VEC_PUSH (heap, l);
      fill_sift (heap, heap->len - 1);
    }

  while (n_unfrozen > 0)
    {
      /* Every unfrozen flow crosses a link with unfrozen flows.  Each link
       * keeps at least (its unfrozen flows) * (the smallest share) of
       * capacity, so the share is positive up to rounding, unless flows
       * outside the region took the whole link: then region_verify finds
       * them above the share. */
      g_assert (heap->len > 0);
      NetLink *bottleneck = heap->v[0];
      double share = bottleneck->share;   /* bytes/s */

      bottleneck->fill_share = share;
      bottleneck->fill_pass = net->pass;
      for (guint k = 0; k < bottleneck->flows.len; k++)
        {
          NetFlow *f = bottleneck->flows.v[k];

          if (f->mark != net->epoch || f->frozen)
            continue;
          fill_freeze (net, heap, f, bottleneck, share);
          n_unfrozen--;
        }
    }
}

static void on_flow_complete (EngSim *sim, gpointer ctx, gpointer data);
static void sharing_update (NetNetwork *net);

/* End-of-instant hook: re-shares, once, the flows that the changes of the
 * instant (joins and leaves on the links in net->dirty) can affect. */
static void
on_instant_end (EngSim *sim G_GNUC_UNUSED, gpointer ctx)
{
  NetNetwork *net = ctx;

  if (net->dirty.len == 0)
    return;
  region_begin (net);
  if (net->full_recompute)
    region_all (net);
  else
    region_seed (net);
  net->dirty.len = 0;
  net->dirty_epoch++;
  sharing_update (net);
}

/* Notes that the flows of f's links changed (f joined or left them): the
 * flows this can affect are re-shared once at the end of the current
 * instant, however many flows join or leave at that time.  Rates only
 * matter over an interval, so deferring to the instant's end changes none
 * of them. */
static void
sharing_changed (NetNetwork *net, const NetFlow *f)
{
  /* The hook empties net->dirty, so while it holds links the hook is
   * requested already. */
  gboolean requested = net->dirty.len > 0;

  for (int i = 0; i < f->n_hops; i++)
    {
      NetLink *l = link_at (net, f->hops[i].link);

      if (l->dirty == net->dirty_epoch)
        continue;
      l->dirty = net->dirty_epoch;
      VEC_PUSH (&net->dirty, f->hops[i].link);
    }
  if (requested)
    return;
  if (net->flush_id == 0)
    net->flush_id = eng_flush_register (net->sim, on_instant_end, net);
  eng_flush_request (net->sim, net->flush_id);
}

/* Re-shares the seeded region: fills it, grown until region_verify() finds
 * its rates are the max-min ones, then, for each region flow whose rate
 * changed (or that has no completion event yet), brings its remaining bytes
 * up to now at its old rate, gives it its new rate and moves its completion
 * event to now + remaining / rate.  The engine has no move, so a moved event
 * is cancelled and scheduled again; flows whose rate is unchanged keep their
 * event. */
static void
sharing_update (NetNetwork *net)
{
  double now = eng_sim_now (net->sim);
  const NetFlowVec *flows = &net->comp_flows;

  if (flows->len == 0)
    return;
  for (guint pass = 1;; pass++)
    {
      progressive_fill (net, &net->comp_links, flows);
      net->refilled += flows->len;
      if (net->full_recompute || region_verify (net))
        break;
      for (guint i = 0; i < net->violators.len; i++)
        region_add (net, net->violators.v[i]);
      if (pass == net->region_passes)
        region_close (net);
    }

  for (guint i = 0; i < flows->len; i++)
    {
      NetFlow *f = flows->v[i];

      f->bneck = f->new_bneck;
      if (f->new_rate == f->rate && f->event != 0)
        continue;
      g_assert (f->new_rate > 0);
      flow_advance (f, now);
      f->rate = f->new_rate;
      f->window = NET_DONE_FRACTION * f->bytes / f->rate;
      net->window_bound = MAX (net->window_bound, f->window);
      f->t_end = now + f->remaining / f->rate;
      if (f->event != 0)
        eng_cancel (net->sim, f->event);
      f->event = eng_schedule_at (net->sim, f->t_end, on_flow_complete,
                                  net, f);
      net->reschedules++;
      due_update (net, f);
    }
}

/* --- Flow life cycle ----------------------------------------------------- */

/* A zeroed flow with room for n_hops hops, from the free list when one of
 * that size is there. */
static NetFlow *
flow_alloc (NetNetwork *net, int n_hops)
{
  gsize size = sizeof (NetFlow) + sizeof (NetHop) * n_hops;
  NetFlow *f;

  if (n_hops >= NET_POOL_HOPS || net->pool[n_hops] == NULL)
    return g_malloc0 (size);
  f = net->pool[n_hops];
  net->pool[n_hops] = (NetFlow *) f->net;
  memset (f, 0, size);
  return f;
}

/* Gives a finished flow back: kept on its size's free list, linked through
 * its `net` field, or freed when its route is long. */
static void
flow_release (NetNetwork *net, NetFlow *f)
{
  if (f->n_hops >= NET_POOL_HOPS)
    {
      g_free (f);
      return;
    }
  f->net = (NetNetwork *) net->pool[f->n_hops];
  net->pool[f->n_hops] = f;
}

/* Reports a finished flow (already out of the sharing set, no event pending):
 * frees it, then calls its NetDone and the observer. */
static void
flow_finish (NetNetwork *net, NetFlow *f)
{
  NetTransfer t;
  NetDone done = f->done;
  gpointer ctx = f->ctx, data = f->data;

  g_assert (f->share_pos < 0 && f->event == 0);

  t.src = f->src;
  t.dst = f->dst;
  t.bytes = f->bytes;
  t.start = f->start;
  t.end = eng_sim_now (net->sim);
  t.tag = f->tag;
  t.sw = f->sw;
  t.to_switch = f->to_switch;

  net->live.v[f->live_pos] = net->live.v[--net->live.len];
  if (f->live_pos < net->live.len)
    net->live.v[f->live_pos]->live_pos
      = f->live_pos;
  flow_release (net, f);

  if (done != NULL)
    done (net->sim, ctx, data, &t);
  if (net->observer != NULL)
    net->observer (net->observer_ctx, &t);
}

/* Event: a flow that never shares bandwidth (self-send, zero bytes, or the
 * alpha-beta model) is done. */
static void
on_flow_finish_unshared (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  NetFlow *f = data;

  f->event = 0;
  flow_finish (ctx, f);
}

/* Event: a flow's latency is over; it enters its bandwidth phase, and the
 * flows it affects are re-shared at the instant's end. */
static void
on_latency_over (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  NetNetwork *net = ctx;
  NetFlow *f = data;

  f->event = 0;
  if (f->bytes == 0)
    {
      flow_finish (net, f);
      return;
    }
  sharing_join (net, f);
  sharing_changed (net, f);
}

/* Merges the runs a[0, na) and b[0, nb), each sorted by seq, into out. */
static void
flows_merge (NetFlow **a, guint na, NetFlow **b, guint nb, NetFlow **out)
{
  guint i = 0, j = 0;

  while (i < na && j < nb)
    *out++ = a[i]->seq < b[j]->seq ? a[i++] : b[j++];
  while (i < na)
    *out++ = a[i++];
  while (j < nb)
    *out++ = b[j++];
}

/* Sorts the flows of *a by creation order (seq; no two are equal): runs of
 * 8 by insertion, then merged pairwise through net->sort_tmp.  Inline
 * comparisons, unlike g_ptr_array_sort's calls per comparison. */
static void
flows_sort_seq (NetNetwork *net, NetFlowVec *a)
{
  guint n = a->len;
  NetFlow **src = a->v, **dst;

  for (guint lo = 0; lo < n; lo += 8)
    for (guint i = lo + 1; i < MIN (lo + 8, n); i++)
      {
        NetFlow *f = src[i];
        guint j = i;

        for (; j > lo && src[j - 1]->seq > f->seq; j--)
          src[j] = src[j - 1];
        src[j] = f;
      }
  if (n <= 8)
    return;
  while (net->sort_tmp.cap < n)
    net->sort_tmp.v = vec_grow (net->sort_tmp.v, &net->sort_tmp.cap,
                                sizeof (NetFlow *));
  dst = net->sort_tmp.v;
  for (guint w = 8; w < n; w *= 2)
    {
      NetFlow **t;

      for (guint lo = 0; lo < n; lo += 2 * w)
        {
          guint mid = MIN (lo + w, n), hi = MIN (lo + 2 * w, n);

          flows_merge (src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
      t = src;
      src = dst;
      dst = t;
    }
  if (src != a->v)
    memcpy (a->v, src, sizeof (NetFlow *) * n);
}

/* Event: a sharing flow has sent its last byte.  Every sharing flow done at
 * this instant (at most NET_DONE_FRACTION of its bytes left) leaves with it,
 * wherever it is in the network; the flows they leave behind are re-shared
 * at the instant's end, and the finished flows are reported in creation
 * order.
 *
 * The candidates are found in the due heap: a flow with r bytes left at rate
 * x has its event r / x after now, so every flow done now has its event
 * within its window (NET_DONE_FRACTION * bytes / rate) of now, and
 * net->window_bound bounds every window: the walk visits only the flows
 * whose events lie within that bound (plus a margin for rounding), then
 * checks each exactly.  The bound only grows as rates are set, and is made
 * exact again once per (number of sharing flows) completions, so keeping it
 * costs O(1) amortized. */
static void
on_flow_complete (EngSim *sim, gpointer ctx, gpointer data)
{
  NetNetwork *net = ctx;
  NetFlow *f = data;
  NetFlowVec *finished = &net->finished;
  double now = eng_sim_now (sim);
  guint kept;

  g_assert (!net->completing);
  f->event = 0;

  if (++net->window_age >= net->sharing.len)
    {
      net->window_bound = 0;
      for (guint i = 0; i < net->sharing.len; i++)
        {
          NetFlow *g = net->sharing.v[i];
          if (g->due_pos >= 0)
            net->window_bound = MAX (net->window_bound, g->window);
        }
      net->window_age = 0;
    }

  finished->len = 0;
  VEC_PUSH (finished, f);
  due_collect (net, 0, now + net->window_bound * (1 + 1e-6)
                       + 8 * DBL_EPSILON * fabs (now), f);
  kept = 1;
  for (guint i = 1; i < finished->len; i++)
    {
      NetFlow *g = finished->v[i];

      flow_advance (g, now);
      if (g->remaining <= NET_DONE_FRACTION * g->bytes)
        finished->v[kept++] = g;
    }
  finished->len = kept;
  flows_sort_seq (net, finished);

  for (guint i = 0; i < finished->len; i++)
    {
      NetFlow *g = finished->v[i];

      if (g->event != 0)
        {
          eng_cancel (net->sim, g->event);
          g->event = 0;
        }
      g->remaining = 0;
      g->updated = now;
      sharing_leave (net, g);
      sharing_changed (net, g);
    }

  /* The callbacks may start transfers but never fire events, so the list is
   * not touched before the loop ends. */
  net->completing = TRUE;
  for (guint i = 0; i < finished->len; i++)
    flow_finish (net, finished->v[i]);
  net->completing = FALSE;
}

/* Hands `bytes` (finite, >= 0) from host src to host dst to the network now;
 * `done` (may be NULL) is called with ctx, data and the NetTransfer when the
 * last byte arrives, then the observer.  src == dst finishes in an event at
 * the current time; otherwise there must be a route from src to dst. */
void
net_send (NetNetwork *net, int src, int dst, double bytes, int tag,
          NetDone done, gpointer ctx, gpointer data)
{
  net_send_floored (net, src, dst, bytes, 0, tag, done, ctx, data);
}

/* Starts a transfer src -> dst over `route` (n_hops links; NULL and 0 for
 * a host to itself): net_send_floored's work once the route is known. */
static void
send_on_route (NetNetwork *net, int src, int dst, const int *route,
               int n_hops, double bytes, double floor, int tag, NetDone done,
               gpointer ctx, gpointer data)
{
  NetFlow *f;

  for (int i = 0; i < n_hops; i++)
    g_return_if_fail (route[i] >= 0 && (guint) route[i] < net->links->len);
  f = flow_alloc (net, n_hops);
  f->net = net;
  f->seq = net->next_seq++;
  f->src = src;
  f->dst = dst;
  f->tag = tag;
  f->sw = -1;
  f->to_switch = FALSE;
  f->bytes = bytes;
  f->remaining = bytes;
  f->start = eng_sim_now (net->sim);
  f->done = done;
  f->ctx = ctx;
  f->data = data;
  f->share_pos = -1;
  f->due_pos = -1;
  f->n_hops = n_hops;
  for (int i = 0; i < n_hops; i++)
    f->hops[i].link = route[i];
  f->live_pos = net->live.len;
  VEC_PUSH (&net->live, f);

  if (route == NULL)
    f->event = eng_schedule (net->sim, floor, on_flow_finish_unshared, net, f);
  else if (net->contention == NET_CONTENTION_NONE)
    f->event = eng_schedule (net->sim,
                             MAX (floor, route_latency (net, route, n_hops))
                             + bytes / route_bandwidth (net, route, n_hops),
                             on_flow_finish_unshared, net, f);
  else
    f->event = eng_schedule (net->sim, MAX (floor, route_latency (net, route, n_hops)),
                             on_latency_over, net, f);
}

/* The checks every transfer handed to the network passes. */
static gboolean
send_valid (const NetNetwork *net, int src, int dst, double bytes,
            double floor)
{
  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), FALSE);
  g_return_val_if_fail (isfinite (bytes) && bytes >= 0, FALSE);
  g_return_val_if_fail (isfinite (floor) && floor >= 0, FALSE);
  if (G_UNLIKELY (net->claimed))
    g_error ("a transfer %s -> %s was handed to the network while a "
             "flow-class collective holds it",
             net_network_host_name (net, src),
             net_network_host_name (net, dst));
  return TRUE;
}

void
net_send_floored (NetNetwork *net, int src, int dst, double bytes,
                  double floor, int tag, NetDone done, gpointer ctx,
                  gpointer data)
{
  if (net != NULL && net->base != NULL)
    { net_send_floored (net->base, view_host (net, src), view_host (net, dst), bytes, floor, tag, done, ctx, data); return; }
  int stack[NET_ROUTE_STACK];
  g_autofree int *heap = NULL;
  const int *route = NULL;
  int n_hops = 0;

  if (!send_valid (net, src, dst, bytes, floor))
    return;
  if (src != dst)
    {
      route = route_links (net, src, dst, stack, &heap, &n_hops);
      g_return_if_fail (n_hops > 0);
    }
  send_on_route (net, src, dst, route, n_hops, bytes, floor, tag, done, ctx,
                 data);
}

/* --- Switch ports (in-network reduction) --------------------------------- */

int
net_network_add_switch (NetNetwork *net, const char *name, gboolean reduces,
                        double rate)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_val_if_fail (net != NULL && name != NULL && *name, -1);
  g_return_val_if_fail (rate > 0, -1);
  g_ptr_array_add (net->switch_names, g_strdup (name));
  g_array_append_val (net->switch_reduces, reduces);
  g_array_append_val (net->switch_rates, rate);
  return (int) net->switch_names->len - 1;
}

int
net_network_n_switches (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_n_switches (net->base);
  g_return_val_if_fail (net != NULL, 0);
  return (int) net->switch_names->len;
}

const char *
net_network_switch_name (const NetNetwork *net, int sw)
{
  if (net != NULL && net->base != NULL)
    return net_network_switch_name (net->base, sw);
  g_return_val_if_fail (net != NULL, NULL);
  g_return_val_if_fail (sw >= 0 && (guint) sw < net->switch_names->len, NULL);
  return g_ptr_array_index (net->switch_names, sw);
}

gboolean
net_network_switch_reduces (const NetNetwork *net, int sw)
{
  if (net != NULL && net->base != NULL)
    return net_network_switch_reduces (net->base, sw);
  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (sw >= 0 && (guint) sw < net->switch_reduces->len, FALSE);
  return g_array_index (net->switch_reduces, gboolean, sw);
}

double
net_network_switch_rate (const NetNetwork *net, int sw)
{
  if (net != NULL && net->base != NULL)
    return net_network_switch_rate (net->base, sw);
  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (sw >= 0 && (guint) sw < net->switch_rates->len, NAN);
  return g_array_index (net->switch_rates, double, sw);
}

/* The port of `host` at `level`, or NULL where it has none. */
static const NetPort *
port_at (const NetNetwork *net, int host, int level)
{
  guint i;
  const NetPort *pt;

  if (!host_valid (net, host) || level < 0 || level >= NET_SWITCH_LEVELS)
    return NULL;
  i = (guint) host * NET_SWITCH_LEVELS + (guint) level;
  if (i >= net->ports->len)
    return NULL;
  pt = &g_array_index (net->ports, NetPort, i);
  return pt->sw >= 0 ? pt : NULL;
}

void
net_network_set_port (NetNetwork *net, int host, int level, int sw,
                      const int *up, int n_up, const int *down, int n_down)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  NetPort none = { .sw = -1 }, *pt;
  guint i;

  g_return_if_fail (net != NULL && host_valid (net, host));
  g_return_if_fail (level >= 0 && level < NET_SWITCH_LEVELS);
  g_return_if_fail (sw >= 0 && (guint) sw < net->switch_names->len);
  g_return_if_fail (n_up >= 1 && n_up <= NET_PORT_HOPS);
  g_return_if_fail (n_down >= 1 && n_down <= NET_PORT_HOPS);
  for (int k = 0; k < n_up; k++)
    g_return_if_fail (up[k] >= 0 && (guint) up[k] < net->links->len);
  for (int k = 0; k < n_down; k++)
    g_return_if_fail (down[k] >= 0 && (guint) down[k] < net->links->len);
  i = (guint) host * NET_SWITCH_LEVELS + (guint) level;
  while (net->ports->len <= i)
    g_array_append_val (net->ports, none);
  pt = &g_array_index (net->ports, NetPort, i);
  pt->sw = sw;
  pt->n_up = n_up;
  pt->n_down = n_down;
  memcpy (pt->up, up, sizeof (int) * (gsize) n_up);
  memcpy (pt->down, down, sizeof (int) * (gsize) n_down);
}

int
net_network_host_switch (const NetNetwork *net, int host, int level)
{
  if (net != NULL && net->base != NULL)
    return net_network_host_switch (net->base, view_host (net, host), level);
  const NetPort *pt;

  g_return_val_if_fail (net != NULL, -1);
  pt = port_at (net, host, level);
  return pt ? pt->sw : -1;
}

double
net_network_port_latency (const NetNetwork *net, int host, int level,
                          gboolean up)
{
  if (net != NULL && net->base != NULL)
    return net_network_port_latency (net->base, view_host (net, host), level, up);
  const NetPort *pt;

  g_return_val_if_fail (net != NULL, NAN);
  pt = port_at (net, host, level);
  g_return_val_if_fail (pt != NULL, NAN);
  return up ? route_latency (net, pt->up, pt->n_up)
            : route_latency (net, pt->down, pt->n_down);
}

double
net_network_port_bandwidth (const NetNetwork *net, int host, int level,
                            gboolean up)
{
  if (net != NULL && net->base != NULL)
    return net_network_port_bandwidth (net->base, view_host (net, host), level, up);
  const NetPort *pt;

  g_return_val_if_fail (net != NULL, NAN);
  pt = port_at (net, host, level);
  g_return_val_if_fail (pt != NULL, NAN);
  return up ? route_bandwidth (net, pt->up, pt->n_up)
            : route_bandwidth (net, pt->down, pt->n_down);
}

int
net_network_port_links (const NetNetwork *net, int host, int level,
                        gboolean up, int *links, int max)
{
  if (net != NULL && net->base != NULL)
    return net_network_port_links (net->base, view_host (net, host), level, up, links, max);
  const NetPort *pt;
  int n;

  g_return_val_if_fail (net != NULL, 0);
  pt = port_at (net, host, level);
  if (pt == NULL)
    return 0;
  n = up ? pt->n_up : pt->n_down;
  for (int k = 0; k < n && k < max; k++)
    links[k] = up ? pt->up[k] : pt->down[k];
  return n;
}

void
net_send_port (NetNetwork *net, int host, int level, gboolean up,
               double bytes, double floor, int tag, NetDone done,
               gpointer ctx, gpointer data)
{
  if (net != NULL && net->base != NULL)
    { net_send_port (net->base, view_host (net, host), level, up, bytes, floor, tag, done, ctx, data); return; }
  const NetPort *pt;
  NetFlow *f;

  if (!send_valid (net, host, host, bytes, floor))
    return;
  pt = port_at (net, host, level);
  g_return_if_fail (pt != NULL);
  send_on_route (net, host, host, up ? pt->up : pt->down,
                 up ? pt->n_up : pt->n_down, bytes, floor, tag, done, ctx,
                 data);
  /* the flow just started is the last live one */
  f = net->live.v[net->live.len - 1];
  f->sw = pt->sw;
  f->to_switch = up;
}

/* --- Mirrored copies ------------------------------------------------------- */

gboolean
net_copies_fit (gint64 hosts, int unit, int period)
{
  return unit >= 1 && period >= 1 && period % unit == 0 && hosts % period == 0
         && hosts / period >= 2;
}

void
net_network_set_folder (NetNetwork *net, NetFoldCheck check,
                        NetFoldRoute route)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL && (check == NULL) == (route == NULL));
  net->fold_check = check;
  net->fold_route = route;
  net->fold_period = 0;
}

gboolean
net_network_fold (NetNetwork *net, int period)
{
  if (net != NULL && net->base != NULL)
    return FALSE;
  g_return_val_if_fail (net != NULL, FALSE);
  if (period == 0 && net->live.len == 0)
    {
      net->fold_period = 0;
      return TRUE;
    }
  if (period < 1 || net->fold_check == NULL || net->routes != NULL
      || net->links_edited || net->live.len > 0 || net->observer != NULL
      || !net->fold_check (net->router_ctx, period))
    return FALSE;
  net->fold_period = period;
  return TRUE;
}

int
net_network_fold_period (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return 0;
  g_return_val_if_fail (net != NULL, 0);
  return net->fold_period;
}

void
net_send_folded (NetNetwork *net, int src, int dst, double bytes,
                 double floor, int tag, NetDone done, gpointer ctx,
                 gpointer data)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  int links[NET_ROUTE_STACK], n_hops;

  if (!send_valid (net, src, dst, bytes, floor))
    return;
  g_return_if_fail (net->fold_period > 0 && src != dst);
  n_hops = net->fold_route (net->router_ctx, net->fold_period, src, dst,
                            links, NET_ROUTE_STACK);
  g_return_if_fail (n_hops > 0 && n_hops <= NET_ROUTE_STACK);
  send_on_route (net, src, dst, links, n_hops, bytes, floor, tag, done, ctx,
                 data);
}

void
net_send_claimed (NetNetwork *net, int src, int dst, const int *route,
                  int n_hops, double bytes, double floor, int tag,
                  NetDone done, gpointer ctx, gpointer data)
{
  /* a view of another network is never claimed */
  g_return_if_fail (net != NULL && net->base == NULL && net->claimed);
  g_return_if_fail (host_valid (net, src) && host_valid (net, dst));
  g_return_if_fail (isfinite (bytes) && bytes >= 0);
  g_return_if_fail (isfinite (floor) && floor >= 0);
  g_return_if_fail (route != NULL && n_hops >= 1);
  send_on_route (net, src, dst, route, n_hops, bytes, floor, tag, done, ctx,
                 data);
}

/* --- Flow classes ---------------------------------------------------------- */

/* Turns flow classes on (the default) or off for the collectives run on
 * `net`. */
void
net_network_set_flow_classes (NetNetwork *net, gboolean on)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_return_if_fail (net != NULL);
  net->flow_classes = on;
}

/* Whether collectives may run as flow classes on `net`. */
gboolean
net_network_flow_classes (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return FALSE;
  g_return_val_if_fail (net != NULL, FALSE);
  return net->flow_classes;
}

/* Takes the network for one flow-class collective when it is idle, has no
 * observer and flow classes are on; FALSE, changing nothing, otherwise. */
gboolean
net_network_claim (NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return FALSE;
  g_return_val_if_fail (net != NULL, FALSE);
  if (!net->flow_classes || net->claimed || net->live.len > 0
      || net->observer != NULL)
    return FALSE;
  net->claimed = TRUE;
  return TRUE;
}

/* Gives back the claim of net_network_claim(). */
void
net_network_release (NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return;
  g_return_if_fail (net != NULL && net->claimed);
  net->claimed = FALSE;
}

/* Checks that the n routes src[i] -> dst[i] form one class (each link
 * crossed by one of them, equal latency phases and slowest bandwidths to
 * the bit); writes their phase and bandwidth.  O(total route length): the
 * links are stamped in net->class_marks. */
gboolean
net_network_class_routes (NetNetwork *net, int n, const int *src,
                          const int *dst, const double *floor, double *delay,
                          double *bandwidth)
{
  if (net != NULL && net->base != NULL)
    return FALSE;
  g_return_val_if_fail (net != NULL && n >= 1, FALSE);
  g_return_val_if_fail (src != NULL && dst != NULL && floor != NULL, FALSE);
  g_return_val_if_fail (delay != NULL && bandwidth != NULL, FALSE);

  if (net->n_class_marks < net->links->len)
    {
      g_free (net->class_marks);
      net->n_class_marks = net->links->len;
      net->class_marks = g_new0 (guint64, net->n_class_marks);
    }
  net->class_stamp++;
  for (int i = 0; i < n; i++)
    {
      int stack[NET_ROUTE_STACK], len;
      g_autofree int *heap = NULL;
      const int *route;
      double d, b;

      if (!host_valid (net, src[i]) || !host_valid (net, dst[i])
          || src[i] == dst[i])
        return FALSE;
      route = route_links (net, src[i], dst[i], stack, &heap, &len);
      if (len <= 0)
        return FALSE;
      for (int k = 0; k < len; k++)
        {
          /* links added after the first call have no mark yet */
          if (route[k] < 0 || (guint) route[k] >= net->n_class_marks)
            return FALSE;
          if (net->class_marks[route[k]] == net->class_stamp)
            return FALSE;   /* two members on one link: they would share */
          net->class_marks[route[k]] = net->class_stamp;
        }
      d = MAX (floor[i], route_latency (net, route, len));
      b = route_bandwidth (net, route, len);
      if (i == 0)
        {
          *delay = d;
          *bandwidth = b;
        }
      else if (d != *delay || b != *bandwidth)
        return FALSE;
    }
  return TRUE;
}

/* Stamps the links of the n routes src[i] -> dst[i] with `stamp` in
 * net->class_marks, or, when `probe`, returns TRUE at the first link
 * already stamped so (FALSE after stamping none). */
static gboolean
class_stamp_routes (NetNetwork *net, int n, const int *src, const int *dst,
                    guint64 stamp, gboolean probe)
{
  for (int i = 0; i < n; i++)
    {
      int stack[NET_ROUTE_STACK], len;
      g_autofree int *heap = NULL;
      const int *route;

      if (!host_valid (net, src[i]) || !host_valid (net, dst[i])
          || src[i] == dst[i])
        continue;
      route = route_links (net, src[i], dst[i], stack, &heap, &len);
      for (int k = 0; k < len; k++)
        {
          if (route[k] < 0 || (guint) route[k] >= net->n_class_marks)
            continue;
          if (probe && net->class_marks[route[k]] == stamp)
            return TRUE;
          if (!probe)
            net->class_marks[route[k]] = stamp;
        }
    }
  return FALSE;
}

/* Stamps the first set's links, then looks for a stamped link on the
 * second's: O(total route length). */
gboolean
net_network_routes_meet (NetNetwork *net, int n1, const int *src1,
                         const int *dst1, int n2, const int *src2,
                         const int *dst2)
{
  if (net != NULL && net->base != NULL)
    return TRUE;
  g_return_val_if_fail (net != NULL && n1 >= 0 && n2 >= 0, TRUE);
  g_return_val_if_fail (src1 != NULL && dst1 != NULL, TRUE);
  g_return_val_if_fail (src2 != NULL && dst2 != NULL, TRUE);

  if (net->n_class_marks < net->links->len)
    {
      g_free (net->class_marks);
      net->n_class_marks = net->links->len;
      net->class_marks = g_new0 (guint64, net->n_class_marks);
    }
  net->class_stamp++;
  class_stamp_routes (net, n1, src1, dst1, net->class_stamp, FALSE);
  return class_stamp_routes (net, n2, src2, dst2, net->class_stamp, TRUE);
}

/* The arrival time of a lone transfer, as the per-message path computes
 * it: with max-min, the latency event at now + delay (eng_schedule), then
 * the completion at that time + remaining / rate, the rate being the
 * bandwidth itself (a lone flow's fair share is its slowest link's
 * bandwidth / 1, exact; its remaining bytes are all its bytes);
 * with contention none, one event at now + (delay + bytes / bandwidth). */
double
net_network_class_arrival (const NetNetwork *net, double now, double delay,
                           double bytes, double bandwidth)
{
  if (net != NULL && net->base != NULL)
    return net_network_class_arrival (net->base, now, delay, bytes, bandwidth);
  double join;

  g_return_val_if_fail (net != NULL && bytes > 0 && bandwidth > 0, NAN);
  if (net->contention == NET_CONTENTION_NONE)
    return now + (delay + bytes / bandwidth);
  join = now + delay;
  return join + bytes / bandwidth;
}

/* Counts one collective by the path it ran on. */
void
net_network_count_collective (NetNetwork *net, gboolean classes)
{
  if (net != NULL && net->base != NULL)
    { net_network_count_collective (net->base, classes); return; }
  g_return_if_fail (net != NULL);
  if (classes)
    net->coll_classes++;
  else
    net->coll_detailed++;
}

/* The counts of net_network_count_collective(). */
void
net_network_collective_counts (const NetNetwork *net, guint64 *classes,
                               guint64 *detailed)
{
  if (net != NULL && net->base != NULL)
    { net_network_collective_counts (net->base, classes, detailed); return; }
  g_return_if_fail (net != NULL);
  if (classes)
    *classes = net->coll_classes;
  if (detailed)
    *detailed = net->coll_detailed;
}

void
net_network_count_folded (NetNetwork *net, guint64 n)
{
  if (net != NULL && net->base != NULL)
    { net_network_count_folded (net->base, n); return; }
  g_return_if_fail (net != NULL);
  net->coll_folded += n;
}

guint64
net_network_folded_count (const NetNetwork *net)
{
  if (net != NULL && net->base != NULL)
    return net_network_folded_count (net->base);
  g_return_val_if_fail (net != NULL, 0);
  return net->coll_folded;
}

/* --- Test hooks (netmodel-private.h) ------------------------------------ */

/* Switches between re-sharing the flows a change can affect (FALSE, the
 * default) and re-sharing every sharing flow at every change (TRUE). */
void
net_network_set_full_recompute (NetNetwork *net, gboolean full)
{
  g_return_if_fail (net != NULL);
  net->full_recompute = full;
}

/* Sets how many fillings a region that fails its checks gets before it
 * takes in its whole connected component (>= 1; NET_REGION_PASSES by
 * default). */
void
net_network_set_region_passes (NetNetwork *net, guint passes)
{
  g_return_if_fail (net != NULL);
  g_return_if_fail (passes >= 1);
  net->region_passes = passes;
}

/* Largest |full-filling rate - current rate| / current rate over the sharing
 * flows; only scratch fields are written. */
double
net_network_rate_error (NetNetwork *net)
{
  double err = 0;

  g_return_val_if_fail (net != NULL, NAN);
  on_instant_end (net->sim, net); /* rates as the instant's end will set them */
  if (net->sharing.len == 0)
    return 0;
  region_begin (net);
  region_all (net);
  progressive_fill (net, &net->comp_links, &net->comp_flows);
  for (guint i = 0; i < net->sharing.len; i++)
    {
      NetFlow *f = net->sharing.v[i];
      err = MAX (err, fabs (f->new_rate - f->rate) / f->rate);
    }
  return err;
}

/* The pending event of the first live transfer tagged `tag`, or 0. */
EngEventId
net_network_flow_event (const NetNetwork *net, int tag)
{
  g_return_val_if_fail (net != NULL, 0);
  for (guint i = 0; i < net->live.len; i++)
    {
      const NetFlow *f = net->live.v[i];
      if (f->tag == tag)
        return f->event;
    }
  return 0;
}

/* Number of completion events scheduled (each first schedule and move). */
guint64
net_network_reschedules (const NetNetwork *net)
{
  g_return_val_if_fail (net != NULL, 0);
  return net->reschedules;
}

/* Flows whose rates re-sharing has computed, summed over re-shares. */
guint64
net_network_refilled (const NetNetwork *net)
{
  g_return_val_if_fail (net != NULL, 0);
  return net->refilled;
}

void
net_network_add_cable (NetNetwork *net, const char *prefix, double bandwidth,
                       double latency, int *up, int *down)
{
  /* a view of another network builds nothing */
  g_assert (net == NULL || net->base == NULL);
  g_autofree char *up_name = g_strdup_printf ("%s.up", prefix);
  g_autofree char *down_name = g_strdup_printf ("%s.down", prefix);
  *up = net_network_add_named_link (net, up_name, bandwidth, latency);
  *down = net_network_add_named_link (net, down_name, bandwidth, latency);
}
