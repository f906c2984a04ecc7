/*
 * network.c — hosts, links, routes and flows of dtsim's flow-level network.
 *
 * A transfer handed to net_send() lives as a flow.  It first waits out its
 * route's latency (one engine event), then joins the "sharing" set: the flows
 * in their bandwidth phase.  Every time a flow joins or leaves that set, the
 * bytes each sharing flow sent since the last change are subtracted at its old
 * rate, new rates are computed by progressive filling (max-min fairness over
 * every link), and the completion event of each flow whose rate changed is
 * cancelled and scheduled again at now + remaining / rate.  When a completion
 * event fires, every sharing flow that is done at that instant leaves at once,
 * the survivors are re-shared, and only then are the callbacks called, in
 * creation order, so simultaneous completions are reported deterministically.
 *
 * Data layout, chosen so that the re-sharing can later be made incremental:
 * each link keeps the list of sharing flows that cross it, each flow keeps its
 * position in those lists (O(1) removal), and the network keeps the list of
 * links crossed by at least one sharing flow, so idle links cost nothing.
 * Routes are a dense (n_hosts, n_hosts) table of (offset, length) pairs into
 * one shared pool of link ids: 8 bytes per ordered pair plus the link ids.
 */
#include "netmodel/netmodel.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (net-error, net_error)

/* A sharing flow with at most this fraction of its bytes left when another
 * flow completes is done too: absorbs the rounding of rate * time so that
 * flows finishing together complete in one event. */
#define NET_DONE_FRACTION 1e-9

typedef struct NetFlow NetFlow;

typedef struct {
  int link;  /* link id */
  guint pos; /* index of the flow in that link's `flows` (while sharing) */
} NetHop;

struct NetFlow {
  NetNetwork *net;
  guint64 seq;       /* creation order: orders simultaneous completions */
  int src, dst;      /* host ids */
  int tag;           /* caller's tag */
  double bytes;      /* payload, bytes */
  double remaining;  /* bytes not yet sent (bandwidth phase) */
  double rate;       /* bytes/s while sharing, else 0 */
  double new_rate;   /* bytes/s, scratch for progressive filling */
  gboolean frozen;   /* scratch for progressive filling */
  double start;      /* s, when handed to the network */
  NetDone done;      /* caller's callback and its pointers */
  gpointer ctx;
  gpointer data;
  EngEventId event;  /* pending latency or completion event, 0 if none */
  guint live_pos;    /* index in net->live */
  gint share_pos;    /* index in net->sharing, -1 when not sharing */
  int n_hops;        /* links on the route */
  NetHop hops[];     /* (n_hops) in crossing order */
};

typedef struct {
  double bandwidth;  /* bytes/s */
  double latency;    /* s */
  GPtrArray *flows;  /* NetFlow* sharing this link; NULL until first used */
  gint active_pos;   /* index in net->active_links, -1 when no flow */
  double cap_left;   /* bytes/s, scratch for progressive filling */
  guint n_unfrozen;  /* scratch for progressive filling */
} NetLink;

typedef struct {
  guint32 offset;    /* first link id in net->route_links */
  guint32 n_links;   /* 0 when no route was set */
} NetRoute;

struct NetNetwork {
  EngSim *sim;
  NetContention contention;
  GPtrArray *host_names;   /* char*, owned; index = host id */
  GHashTable *host_ids;    /* name (owned by host_names) -> id + 1 */
  GArray *links;           /* NetLink; index = link id */
  NetRoute *routes;        /* (routes_dim, routes_dim) row-major by src */
  int routes_dim;          /* hosts covered by `routes` */
  GArray *route_links;     /* int link ids, pool for every route */
  GPtrArray *live;         /* NetFlow*, every unfinished transfer */
  GPtrArray *sharing;      /* NetFlow*, flows in their bandwidth phase */
  GArray *active_links;    /* int link ids crossed by a sharing flow */
  double last_update;      /* s, when `remaining` of sharing flows was set */
  guint64 next_seq;        /* seq of the next flow */
  NetObserver observer;    /* called after every NetDone, or NULL */
  gpointer observer_ctx;
};

static inline NetLink *
link_at (const NetNetwork *net, int id)
{
  return &g_array_index (net->links, NetLink, id);
}

/* The route from src to dst (src != dst), or NULL when none was set. */
static const NetRoute *
route_get (const NetNetwork *net, int src, int dst)
{
  const NetRoute *r;

  if (src >= net->routes_dim || dst >= net->routes_dim)
    return NULL;
  r = &net->routes[(gsize) src * net->routes_dim + dst];
  return r->n_links > 0 ? r : NULL;
}

static inline const int *
route_links (const NetNetwork *net, const NetRoute *r)
{
  return &g_array_index (net->route_links, int, r->offset);
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
  net->links = g_array_new (FALSE, TRUE, sizeof (NetLink));
  net->route_links = g_array_new (FALSE, FALSE, sizeof (int));
  net->live = g_ptr_array_new ();
  net->sharing = g_ptr_array_new ();
  net->active_links = g_array_new (FALSE, FALSE, sizeof (int));
  net->last_update = eng_sim_now (sim);
  return net;
}

/* Frees the network.  Unfinished transfers are dropped: their pending events
 * are cancelled (so the engine must still exist) and their callbacks never
 * run. */
void
net_network_free (NetNetwork *net)
{
  if (net == NULL)
    return;
  for (guint i = 0; i < net->live->len; i++)
    {
      NetFlow *f = g_ptr_array_index (net->live, i);
      if (f->event != 0)
        eng_cancel (net->sim, f->event);
      g_free (f);
    }
  for (guint i = 0; i < net->links->len; i++)
    if (link_at (net, i)->flows != NULL)
      g_ptr_array_free (link_at (net, i)->flows, TRUE);
  g_ptr_array_free (net->live, TRUE);
  g_ptr_array_free (net->sharing, TRUE);
  g_array_free (net->active_links, TRUE);
  g_array_free (net->route_links, TRUE);
  g_free (net->routes);
  g_array_free (net->links, TRUE);
  g_hash_table_destroy (net->host_ids);
  g_ptr_array_free (net->host_names, TRUE);
  g_free (net);
}

/* Adds a host named `name` (non-NULL, not already used); returns its id, the
 * number of hosts added before it, or -1 on a bad name. */
int
net_network_add_host (NetNetwork *net, const char *name)
{
  char *copy;
  int id;

  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);
  g_return_val_if_fail (!g_hash_table_contains (net->host_ids, name), -1);

  id = (int) net->host_names->len;
  copy = g_strdup (name);
  g_ptr_array_add (net->host_names, copy);
  g_hash_table_insert (net->host_ids, copy, GINT_TO_POINTER (id + 1));
  return id;
}

/* Adds a one-directional link of `bandwidth` bytes/s (finite, > 0) and
 * `latency` seconds (finite, >= 0); returns its id (0, 1, 2, ...) or -1. */
int
net_network_add_link (NetNetwork *net, double bandwidth, double latency)
{
  NetLink l = { 0 };

  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (isfinite (bandwidth) && bandwidth > 0, -1);
  g_return_val_if_fail (isfinite (latency) && latency >= 0, -1);

  l.bandwidth = bandwidth;
  l.latency = latency;
  l.active_pos = -1;
  g_array_append_val (net->links, l);
  return (int) net->links->len - 1;
}

/* Grows the route table to cover every host, keeping the routes set. */
static void
routes_grow (NetNetwork *net)
{
  int n = (int) net->host_names->len;
  NetRoute *fresh;

  if (net->routes_dim == n)
    return;
  fresh = g_new0 (NetRoute, (gsize) n * n);
  for (int s = 0; s < net->routes_dim; s++)
    memcpy (&fresh[(gsize) s * n], &net->routes[(gsize) s * net->routes_dim],
            sizeof (NetRoute) * net->routes_dim);
  g_free (net->routes);
  net->routes = fresh;
  net->routes_dim = n;
}

/* Sets the route from src to dst (distinct hosts) to `links` (n_links >= 1
 * valid link ids, each at most once), copying the list.  Setting a route
 * again replaces it; transfers already started keep their old route. */
void
net_network_set_route (NetNetwork *net, int src, int dst,
                       const int *links, int n_links)
{
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

  routes_grow (net);
  r = &net->routes[(gsize) src * net->routes_dim + dst];
  if (r->n_links != (guint32) n_links)
    {
      /* A replaced route of another length leaves its old ids unused in the
       * pool; topologies set each route once, so this stays small. */
      g_return_if_fail (net->route_links->len <= G_MAXUINT32 - (guint) n_links);
      r->offset = net->route_links->len;
      r->n_links = n_links;
      g_array_set_size (net->route_links, net->route_links->len + n_links);
    }
  memcpy (&g_array_index (net->route_links, int, r->offset), links,
          sizeof (int) * n_links);
}

/* Number of hosts added so far. */
int
net_network_n_hosts (const NetNetwork *net)
{
  g_return_val_if_fail (net != NULL, 0);
  return (int) net->host_names->len;
}

/* Number of links added so far. */
int
net_network_n_links (const NetNetwork *net)
{
  g_return_val_if_fail (net != NULL, 0);
  return (int) net->links->len;
}

/* The name of host `host`, owned by the network. */
const char *
net_network_host_name (const NetNetwork *net, int host)
{
  g_return_val_if_fail (net != NULL, NULL);
  g_return_val_if_fail (host_valid (net, host), NULL);
  return g_ptr_array_index (net->host_names, host);
}

/* The id of the host named `name`, or -1 when there is none. */
int
net_network_host_id (const NetNetwork *net, const char *name)
{
  g_return_val_if_fail (net != NULL, -1);
  g_return_val_if_fail (name != NULL, -1);
  return GPOINTER_TO_INT (g_hash_table_lookup (net->host_ids, name)) - 1;
}

/* Bandwidth of link `link`, bytes/s. */
double
net_network_link_bandwidth (const NetNetwork *net, int link)
{
  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, NAN);
  return link_at (net, link)->bandwidth;
}

/* Latency of link `link`, seconds. */
double
net_network_link_latency (const NetNetwork *net, int link)
{
  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (link >= 0 && (guint) link < net->links->len, NAN);
  return link_at (net, link)->latency;
}

static double
route_latency (const NetNetwork *net, const NetRoute *r)
{
  const int *ids = route_links (net, r);
  double sum = 0;

  for (guint32 i = 0; i < r->n_links; i++)
    sum += link_at (net, ids[i])->latency;
  return sum;
}

static double
route_bandwidth (const NetNetwork *net, const NetRoute *r)
{
  const int *ids = route_links (net, r);
  double min = INFINITY;

  for (guint32 i = 0; i < r->n_links; i++)
    min = MIN (min, link_at (net, ids[i])->bandwidth);
  return min;
}

/* Sum of the link latencies from src to dst, seconds; 0 when src == dst.
 * The route must have been set. */
double
net_network_route_latency (const NetNetwork *net, int src, int dst)
{
  const NetRoute *r;

  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), NAN);
  if (src == dst)
    return 0;
  r = route_get (net, src, dst);
  g_return_val_if_fail (r != NULL, NAN);
  return route_latency (net, r);
}

/* Slowest link bandwidth from src to dst, bytes/s; INFINITY when src == dst.
 * The route must have been set. */
double
net_network_route_bandwidth (const NetNetwork *net, int src, int dst)
{
  const NetRoute *r;

  g_return_val_if_fail (net != NULL, NAN);
  g_return_val_if_fail (host_valid (net, src) && host_valid (net, dst), NAN);
  if (src == dst)
    return INFINITY;
  r = route_get (net, src, dst);
  g_return_val_if_fail (r != NULL, NAN);
  return route_bandwidth (net, r);
}

/* Sets (or, with obs == NULL, clears) the function called with every finished
 * transfer, after the transfer's own NetDone. */
void
net_network_set_observer (NetNetwork *net, NetObserver obs, gpointer ctx)
{
  g_return_if_fail (net != NULL);
  net->observer = obs;
  net->observer_ctx = ctx;
}

/* Number of transfers started and not yet finished. */
gsize
net_network_active (const NetNetwork *net)
{
  g_return_val_if_fail (net != NULL, 0);
  return net->live->len;
}

/* --- Sharing: max-min fairness by progressive filling ------------------- */

/* Subtracts from every sharing flow the bytes it sent since the last change
 * of rates, and moves the reference time to now. */
static void
sharing_advance (NetNetwork *net)
{
  double now = eng_sim_now (net->sim);
  double dt = now - net->last_update;

  if (dt > 0)
    for (guint i = 0; i < net->sharing->len; i++)
      {
        NetFlow *f = g_ptr_array_index (net->sharing, i);
        f->remaining = MAX (0.0, f->remaining - f->rate * dt);
      }
  net->last_update = now;
}

/* Puts `f` in the sharing set and in the flow list of every link it crosses.
 * Its rate stays 0 until the next sharing_recompute(). */
static void
sharing_join (NetNetwork *net, NetFlow *f)
{
  f->share_pos = (gint) net->sharing->len;
  g_ptr_array_add (net->sharing, f);
  for (int i = 0; i < f->n_hops; i++)
    {
      NetLink *l = link_at (net, f->hops[i].link);

      if (l->flows == NULL)
        l->flows = g_ptr_array_new ();
      f->hops[i].pos = l->flows->len;
      g_ptr_array_add (l->flows, f);
      if (l->active_pos < 0)
        {
          l->active_pos = (gint) net->active_links->len;
          g_array_append_val (net->active_links, f->hops[i].link);
        }
    }
}

/* Removes `f` from the sharing set and from its links' flow lists, in O(route
 * length): the last element of each list takes its place. */
static void
sharing_leave (NetNetwork *net, NetFlow *f)
{
  g_assert (f->share_pos >= 0);

  g_ptr_array_remove_index_fast (net->sharing, f->share_pos);
  if ((guint) f->share_pos < net->sharing->len)
    ((NetFlow *) g_ptr_array_index (net->sharing, f->share_pos))->share_pos
      = f->share_pos;
  f->share_pos = -1;
  f->rate = 0;

  for (int i = 0; i < f->n_hops; i++)
    {
      int id = f->hops[i].link;
      NetLink *l = link_at (net, id);
      guint pos = f->hops[i].pos;

      g_assert (g_ptr_array_index (l->flows, pos) == f);
      g_ptr_array_remove_index_fast (l->flows, pos);
      if (pos < l->flows->len)
        {
          NetFlow *moved = g_ptr_array_index (l->flows, pos);
          int j = 0;

          while (moved->hops[j].link != id)
            j++;
          moved->hops[j].pos = pos;
        }
      if (l->flows->len == 0)
        {
          gint apos = l->active_pos;

          g_array_remove_index_fast (net->active_links, apos);
          if ((guint) apos < net->active_links->len)
            link_at (net, g_array_index (net->active_links, int, apos))
              ->active_pos = apos;
          l->active_pos = -1;
        }
    }
}

static void on_flow_complete (EngSim *sim, gpointer ctx, gpointer data);

/* Gives every sharing flow its max-min fair rate by progressive filling, then
 * reschedules the completion of each flow whose rate changed.  The remaining
 * bytes must be current (sharing_advance() at this instant).
 *
 * Progressive filling: while some flow is unfrozen, find the link with the
 * smallest fair share (capacity left / unfrozen flows crossing it), give that
 * share to each of its unfrozen flows, freeze them and subtract the share
 * from every link they cross.  Cost: O(active links) per round, at most one
 * round per active link, plus O(route length) per flow. */
static void
sharing_recompute (NetNetwork *net)
{
  double now = eng_sim_now (net->sim);
  guint n_unfrozen = net->sharing->len;

  for (guint i = 0; i < net->active_links->len; i++)
    {
      NetLink *l = link_at (net, g_array_index (net->active_links, int, i));
      l->cap_left = l->bandwidth;
      l->n_unfrozen = l->flows->len;
    }
  for (guint i = 0; i < net->sharing->len; i++)
    ((NetFlow *) g_ptr_array_index (net->sharing, i))->frozen = FALSE;

  while (n_unfrozen > 0)
    {
      NetLink *bottleneck = NULL;
      double share = INFINITY;   /* bytes/s */

      for (guint i = 0; i < net->active_links->len; i++)
        {
          NetLink *l = link_at (net, g_array_index (net->active_links, int, i));
          if (l->n_unfrozen > 0 && l->cap_left / l->n_unfrozen < share)
            {
              share = l->cap_left / l->n_unfrozen;
              bottleneck = l;
            }
        }
      /* Every unfrozen flow crosses an active link with unfrozen flows, and
       * each link keeps at least (its unfrozen flows) * (the smallest share)
       * of capacity, so the share is positive up to rounding. */
      g_assert (bottleneck != NULL);
      g_assert (share > 0);

      for (guint k = 0; k < bottleneck->flows->len; k++)
        {
          NetFlow *f = g_ptr_array_index (bottleneck->flows, k);

          if (f->frozen)
            continue;
          f->frozen = TRUE;
          f->new_rate = share;
          n_unfrozen--;
          for (int i = 0; i < f->n_hops; i++)
            {
              NetLink *l = link_at (net, f->hops[i].link);
              l->cap_left -= share;
              l->n_unfrozen--;
            }
        }
    }

  for (guint i = 0; i < net->sharing->len; i++)
    {
      NetFlow *f = g_ptr_array_index (net->sharing, i);

      if (f->new_rate == f->rate && f->event != 0)
        continue;
      f->rate = f->new_rate;
      if (f->event != 0)
        eng_cancel (net->sim, f->event);
      f->event = eng_schedule_at (net->sim, now + f->remaining / f->rate,
                                  on_flow_complete, net, f);
    }
}

/* --- Flow life cycle ----------------------------------------------------- */

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

  g_ptr_array_remove_index_fast (net->live, f->live_pos);
  if (f->live_pos < net->live->len)
    ((NetFlow *) g_ptr_array_index (net->live, f->live_pos))->live_pos
      = f->live_pos;
  g_free (f);

  if (done != NULL)
    done (net->sim, ctx, data, &t);
  if (net->observer != NULL)
    net->observer (net->observer_ctx, &t);
}

/* Event: a flow that never shares bandwidth (self-send, zero bytes, or the
 * alpha-beta model) is done. */
static void
on_flow_finish_unshared (EngSim *sim, gpointer ctx, gpointer data)
{
  NetFlow *f = data;

  f->event = 0;
  flow_finish (ctx, f);
}

/* Event: a flow's latency is over; it enters its bandwidth phase. */
static void
on_latency_over (EngSim *sim, gpointer ctx, gpointer data)
{
  NetNetwork *net = ctx;
  NetFlow *f = data;

  f->event = 0;
  if (f->bytes == 0)
    {
      flow_finish (net, f);
      return;
    }
  sharing_advance (net);
  sharing_join (net, f);
  sharing_recompute (net);
}

static gint
flow_seq_cmp (gconstpointer a, gconstpointer b)
{
  const NetFlow *fa = *(NetFlow *const *) a;
  const NetFlow *fb = *(NetFlow *const *) b;

  return fa->seq < fb->seq ? -1 : fa->seq > fb->seq;
}

/* Event: a sharing flow has sent its last byte.  Every sharing flow done at
 * this instant leaves with it, the others are re-shared, then the finished
 * ones are reported in creation order. */
static void
on_flow_complete (EngSim *sim, gpointer ctx, gpointer data)
{
  NetNetwork *net = ctx;
  NetFlow *f = data;
  g_autoptr (GPtrArray) finished = g_ptr_array_new ();

  f->event = 0;
  sharing_advance (net);
  f->remaining = 0;

  for (guint i = 0; i < net->sharing->len; i++)
    {
      NetFlow *g = g_ptr_array_index (net->sharing, i);
      if (g->remaining <= NET_DONE_FRACTION * g->bytes)
        g_ptr_array_add (finished, g);
    }
  g_ptr_array_sort (finished, flow_seq_cmp);
  for (guint i = 0; i < finished->len; i++)
    {
      NetFlow *g = g_ptr_array_index (finished, i);

      if (g->event != 0)
        {
          eng_cancel (net->sim, g->event);
          g->event = 0;
        }
      g->remaining = 0;
      sharing_leave (net, g);
    }
  sharing_recompute (net);

  for (guint i = 0; i < finished->len; i++)
    flow_finish (net, g_ptr_array_index (finished, i));
}

/* Hands `bytes` (finite, >= 0) from host src to host dst to the network now;
 * `done` (may be NULL) is called with ctx, data and the NetTransfer when the
 * last byte arrives, then the observer.  src == dst finishes in an event at
 * the current time; otherwise the route src -> dst must have been set. */
void
net_send (NetNetwork *net, int src, int dst, double bytes, int tag,
          NetDone done, gpointer ctx, gpointer data)
{
  const NetRoute *r = NULL;
  NetFlow *f;
  int n_hops = 0;

  g_return_if_fail (net != NULL);
  g_return_if_fail (host_valid (net, src) && host_valid (net, dst));
  g_return_if_fail (isfinite (bytes) && bytes >= 0);
  if (src != dst)
    {
      r = route_get (net, src, dst);
      g_return_if_fail (r != NULL);
      n_hops = (int) r->n_links;
    }

  f = g_malloc0 (sizeof (NetFlow) + sizeof (NetHop) * n_hops);
  f->net = net;
  f->seq = net->next_seq++;
  f->src = src;
  f->dst = dst;
  f->tag = tag;
  f->bytes = bytes;
  f->remaining = bytes;
  f->start = eng_sim_now (net->sim);
  f->done = done;
  f->ctx = ctx;
  f->data = data;
  f->share_pos = -1;
  f->n_hops = n_hops;
  for (int i = 0; i < n_hops; i++)
    f->hops[i].link = route_links (net, r)[i];
  f->live_pos = net->live->len;
  g_ptr_array_add (net->live, f);

  if (r == NULL)
    f->event = eng_schedule (net->sim, 0, on_flow_finish_unshared, net, f);
  else if (net->contention == NET_CONTENTION_NONE)
    f->event = eng_schedule (net->sim,
                             route_latency (net, r)
                             + bytes / route_bandwidth (net, r),
                             on_flow_finish_unshared, net, f);
  else
    f->event = eng_schedule (net->sim, route_latency (net, r),
                             on_latency_over, net, f);
}
