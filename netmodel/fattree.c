/*
 * fattree.c — the "fat-tree" topology: the k-ary fat-tree of M. Al-Fares,
 * A. Loukissas and A. Vahdat, "A Scalable, Commodity Data Center Network
 * Architecture", SIGCOMM 2008.
 *
 * k pods, each with k/2 edge and k/2 aggregation switches; (k/2)^2 core
 * switches; k/2 hosts per edge switch, so k^3/4 hosts at most.  Hosts fill
 * edges in host order (host h is on edge h / (k/2), in pod h / (k/2)^2), and
 * only the edges and pods needed are built (every built pod has all k/2
 * aggregation switches).  Cables, each two one-way links of `bandwidth`:
 *   host  <-> its edge       "<host>.up", "<host>.down"      latency
 *   edge e <-> agg a, pod p  "pod<p>.edge<e>.agg<a>.up/down" switch_latency
 *   agg a, pod p <-> core c  "pod<p>.agg<a>.core<c>.up/down" switch_latency
 * where core c = a * (k/2) + m, m = 0 .. k/2-1, is cabled to aggregation
 * switch a of every pod ("up" always points towards the core).
 *
 * Routes, with h = fattree_hash (src, dst), agg a = h mod (k/2) and core
 * port m = (h / (k/2)) mod (k/2):
 *   same edge:   [src.up, dst.down]                                  2 links
 *   same pod:    [src.up, edge->agg a, agg a->edge', dst.down]       4 links
 *   other pods:  [src.up, edge->agg a, agg a->core c, core c->agg a',
 *                 agg a'->edge', dst.down]                           6 links
 * The hash is static and deterministic, so runs repeat exactly, while the
 * equal-cost paths of different pairs spread over aggregation and core
 * switches (ECMP-like, without its randomness).  Routes are computed when
 * asked (fattree_route) from the link ids of each host and switch port.
 */
#include "netmodel/netmodel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FATTREE_MAX_K 1024 /* k^3/4 = 2^28 hosts, far beyond SIM_MAX_HOSTS */

/* The shape of a (partly built) fat-tree. */
typedef struct {
  int k;           /* arity, even >= 2 */
  int half;        /* k / 2: hosts per edge, edges and aggs per pod */
  int n_edges;     /* edge switches built: ceil (n_hosts / half) */
  int n_pods;      /* pods built: ceil (n_edges / half) */
  int n_cores;     /* core switches built: half^2 with >= 2 pods, else 0 */
  double sw_lat;   /* s of every switch-to-switch link */
} FatTreeShape;

/* The static hash of a route: MurmurHash3's 32-bit finaliser of
 * src * 0x9E3779B1 + dst (unsigned 32-bit arithmetic, host ids). */
static guint32
fattree_hash (int src, int dst)
{
  guint32 x = (guint32) src * 0x9E3779B1u + (guint32) dst;

  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

/* Hosts a k-ary fat-tree holds: k^3 / 4. */
static gint64
fattree_capacity (int k)
{
  return (gint64) k * k * k / 4;
}

/* TRUE when `name` is exactly what printf `format` (three %d) makes of some
 * three integers: such a host name would collide with switch links. */
static gboolean
name_is_switch_link (const char *name, const char *format)
{
  int x, y, z;
  g_autofree char *again = NULL;

  if (sscanf (name, format, &x, &y, &z) != 3)
    return FALSE;
  again = g_strdup_printf (format, x, y, z);
  return g_strcmp0 (again, name) == 0;
}

static const BaseKey keys[] = {
  { .section = "network", .key = "fat_tree_k", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = 1024,
    .doc = "fat-tree: arity k, even (0 = the smallest that holds every host)." },
  { .section = NULL },
};

/* Checks `p` (with `net`, may be NULL) and works out the shape. */
static gboolean
fattree_resolve (const NetNetwork *net, const NetTopologyParams *p,
                 FatTreeShape *s, GError **error)
{
  const BaseValues *v = net_topology_values (p);
  int fat_tree_k = (int) base_values_int (v, "network.fat_tree_k");
  double switch_latency = base_values_double (v, "network.switch_latency");
  if (!net_topology_check_hosts ("fat-tree", net, p, error))
    return FALSE;
  if (fat_tree_k < 0 || fat_tree_k % 2 != 0
      || fat_tree_k > FATTREE_MAX_K)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "fat-tree topology: expected fat_tree_k even, from 2 to "
                   "%d (or 0 to choose the smallest that fits), found %d",
                   FATTREE_MAX_K, fat_tree_k);
      return FALSE;
    }
  if (!(isfinite (switch_latency) && switch_latency >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "fat-tree topology: expected switch_latency >= 0 s, "
                   "found %g", switch_latency);
      return FALSE;
    }
  s->k = fat_tree_k;
  if (s->k == 0)
    for (s->k = 2; fattree_capacity (s->k) < p->n_hosts; s->k += 2)
      ;
  if (fattree_capacity (s->k) < p->n_hosts)
    {
      int need = 2;

      while (fattree_capacity (need) < p->n_hosts)
        need += 2;
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "fat-tree topology: k = %d holds at most k^3/4 = %"
                   G_GINT64_FORMAT " hosts, found %d; set fat_tree_k to %d "
                   "or more (or 0 to choose it)", s->k,
                   fattree_capacity (s->k), p->n_hosts, need);
      return FALSE;
    }
  s->half = s->k / 2;
  s->n_edges = (p->n_hosts + s->half - 1) / s->half;
  s->n_pods = (s->n_edges + s->half - 1) / s->half;
  s->n_cores = s->n_pods >= 2 ? s->half * s->half : 0;
  s->sw_lat = switch_latency;
  for (int h = 0; h < p->n_hosts; h++)
    if (name_is_switch_link (p->names[h], "pod%d.edge%d.agg%d")
        || name_is_switch_link (p->names[h], "pod%d.agg%d.core%d"))
      {
        g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                     "fat-tree topology: host name '%s' has the form of a "
                     "switch link name (pod<p>.edge<e>.agg<a>, "
                     "pod<p>.agg<a>.core<c>); rename the host",
                     p->names[h]);
        return FALSE;
      }
  return TRUE;
}

/* What a fat-tree's routes are computed from. */
typedef struct {
  int first;     /* host id of host 0 */
  int n;         /* hosts */
  int half;      /* k / 2 */
  int *up;       /* (n) host -> edge link ids */
  int *down;     /* (n) edge -> host */
  int *ea_up;    /* (n_edges, half) edge -> agg a */
  int *ea_down;  /* (n_edges, half) agg a -> edge */
  int *ac_up;    /* (n_pods, half, half) agg a -> core; none with one pod */
  int *ac_down;  /* (n_pods, half, half) core -> agg a */
  int links[];   /* storage of the six */
} FatTreeRoutes;

/* NetRouteFunc: up from src to the lowest switch level it shares with dst,
 * through the aggregation switch and core port the hash of (src, dst)
 * picks, then down to dst. */
static int
fattree_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const FatTreeRoutes *s = ctx;
  int a_src = src - s->first, a_dst = dst - s->first;
  int es, ed, ps, pd, a, m, n = 0;
  int route[6];
  guint32 h;

  if (a_src < 0 || a_src >= s->n || a_dst < 0 || a_dst >= s->n
      || a_src == a_dst)
    return 0;
  es = a_src / s->half;            /* global edge index */
  ed = a_dst / s->half;
  ps = es / s->half;               /* pod */
  pd = ed / s->half;
  h = fattree_hash (a_src, a_dst);
  a = h % s->half;
  m = (h / s->half) % s->half;
  route[n++] = s->up[a_src];
  if (es != ed)
    {
      route[n++] = s->ea_up[es * s->half + a];
      if (ps != pd)
        {
          route[n++] = s->ac_up[(ps * s->half + a) * s->half + m];
          route[n++] = s->ac_down[(pd * s->half + a) * s->half + m];
        }
      route[n++] = s->ea_down[ed * s->half + a];
    }
  route[n++] = s->down[a_dst];
  if (n <= max)
    memcpy (links, route, sizeof (int) * n);
  return n;
}

/* Adds the switch-to-switch cables of `shape` (edge to aggregation, then
 * aggregation to core), writing their link ids into s. */
static void
fattree_add_switches (NetNetwork *net, const NetTopologyParams *p,
                      const FatTreeShape *shape, FatTreeRoutes *s)
{
  int half = shape->half;

  for (int e = 0; e < shape->n_edges; e++)
    for (int a = 0; a < half; a++)
      {
        g_autofree char *prefix = g_strdup_printf ("pod%d.edge%d.agg%d",
                                                   e / half, e % half, a);
        net_network_add_cable (net, prefix, p->bandwidth, shape->sw_lat,
                               &s->ea_up[e * half + a],
                               &s->ea_down[e * half + a]);
      }
  if (shape->n_cores == 0)
    return;
  for (int pod = 0; pod < shape->n_pods; pod++)
    for (int a = 0; a < half; a++)
      for (int m = 0; m < half; m++)
        {
          int i = (pod * half + a) * half + m;
          g_autofree char *prefix = g_strdup_printf ("pod%d.agg%d.core%d",
                                                     pod, a, a * half + m);
          net_network_add_cable (net, prefix, p->bandwidth, shape->sw_lat,
                                 &s->ac_up[i], &s->ac_down[i]);
        }
}

static gboolean
fattree_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  FatTreeShape shape;
  FatTreeRoutes *s;
  gsize n_ea, n_ac, size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!fattree_resolve (net, p, &shape, error))
    return FALSE;

  n_ea = (gsize) shape.n_edges * shape.half;
  n_ac = shape.n_cores > 0 ? (gsize) shape.n_pods * shape.half * shape.half
                           : 0;
  size = sizeof (FatTreeRoutes)
         + sizeof (int) * 2 * ((gsize) p->n_hosts + n_ea + n_ac);
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->half = shape.half;
  s->up = s->links;
  s->down = s->up + p->n_hosts;
  s->ea_up = s->down + p->n_hosts;
  s->ea_down = s->ea_up + n_ea;
  s->ac_up = s->ea_down + n_ea;
  s->ac_down = s->ac_up + n_ac;
  s->first = net_topology_add_hosts (net, p, s->up, s->down);
  fattree_add_switches (net, p, &shape, s);
  net_network_set_router (net, fattree_route, s, g_free, size);
  return TRUE;
}

/* One paragraph on the fat-tree `p` describes; NULL when invalid.  Every
 * switch has as many links up as down, so the tree is rearrangeably
 * non-blocking: bisection bandwidth floor(n/2) * bandwidth. */
static char *
fattree_summary (const NetTopologyParams *p)
{
  FatTreeShape s;
  int n_links;

  if (!fattree_resolve (NULL, p, &s, NULL))
    return NULL;
  n_links = 2 * p->n_hosts + 2 * s.n_edges * s.half
            + (s.n_cores > 0 ? 2 * s.n_pods * s.half * s.half : 0);
  return g_strdup_printf (
    "fat-tree: k = %d (up to %" G_GINT64_FORMAT " hosts), %d hosts on %d "
    "edge switches in %d pod%s, %d switches (%d edge, %d aggregation, %d "
    "core), %d one-way links of %.4g Gbit/s (host links %.4g us, switch "
    "links %.4g us); a transfer crosses 2 links under one edge switch, 4 "
    "within a pod, 6 across pods, on an aggregation and core switch chosen by "
    "a static hash of (src, dst); bisection bandwidth %.4g Gbit/s. Shared: "
    "flows leaving a host share its uplink, flows into a host its downlink; "
    "flows hashed onto the same switch link share it.",
    s.k, fattree_capacity (s.k), p->n_hosts, s.n_edges, s.n_pods,
    s.n_pods == 1 ? "" : "s", s.n_edges + s.n_pods * s.half + s.n_cores,
    s.n_edges, s.n_pods * s.half, s.n_cores, n_links,
    p->bandwidth * 8 / 1e9, p->latency * 1e6, s.sw_lat * 1e6,
    (p->n_hosts / 2) * p->bandwidth * 8 / 1e9);
}

/* Every host alone: each phase's routes form one flow class. */
static int
fat_tree_class_group (const BaseValues *values G_GNUC_UNUSED, gint64 workers G_GNUC_UNUSED)
{
  return 1;
}

const NetTopology net_topology_fat_tree = {
  .name = "fat-tree",
  .description = "A k-ary fat-tree (Al-Fares et al., SIGCOMM 2008) of edge, "
                 "aggregation and core switches, all links of one bandwidth, "
                 "equal-cost paths chosen by a static hash of (src, dst).",
  .source = "M. Al-Fares, A. Loukissas, A. Vahdat: A scalable, commodity data center network architecture, SIGCOMM 2008",
  .keys = keys,
  .build = fattree_build,
  .summary = fattree_summary,
  .class_group = fat_tree_class_group,
};
