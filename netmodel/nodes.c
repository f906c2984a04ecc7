/*
 * nodes.c — the "nodes" topology: multi-GPU nodes joined by a star.
 *
 * Hosts are GPUs; they fill nodes of `gpus_per_node` in host order (the last
 * node may hold fewer).  Inside node i, GPU j has a full-duplex NVLink-like
 * cable to the node's internal switch: "node<i>.gpu<j>.nvlink.up" and
 * "node<i>.gpu<j>.nvlink.down", each of `intra_bandwidth` x
 * `intra_efficiency` (the share of the raw rate the link delivers) and
 * `intra_latency`.  Between nodes, a non-blocking switch, reached:
 *   - nic_per_gpu FALSE: by one NIC per node, shared by its GPUs:
 *     "node<i>.nic.up" and "node<i>.nic.down", of `bandwidth` and `latency`;
 *   - nic_per_gpu TRUE: by one NIC per GPU, wired straight to the switch:
 *     "node<i>.gpu<j>.nic.up" and "node<i>.gpu<j>.nic.down".
 *
 * Routes: same node, [gpu(a).nvlink.up, gpu(b).nvlink.down]; across nodes,
 * one NIC per node: [gpu(a).nvlink.up, node(a).nic.up, node(b).nic.down,
 * gpu(b).nvlink.down]; one NIC per GPU: [gpu(a).nic.up, gpu(b).nic.down].
 * Shared: a GPU's NVLink by its flows (and, with one NIC per node, by its
 * off-node flows too); a node's NIC by every off-node flow of its GPUs.
 * Routes are computed when asked (nodes_route) from the link ids of each GPU
 * and NIC.  Each node's GPUs form one host group (net_network_host_group):
 * group = id of GPU 0 + node index, i.e. the node index when the network
 * holds nothing else.
 *
 * Switches that reduce (docs/network.md, "Switches that reduce"): with
 * nvswitch = sharp each node's switch sums what its GPUs send it (NVLink
 * SHARP, NVSwitch 3): GPU j's port to it at level 0 goes up
 * [gpu(j).nvlink.up, node(i).nvswitch.reduce] and down
 * [node(i).nvswitch.multicast, gpu(j).nvlink.down], the two switch links of
 * gpus_per_node x nvls_bandwidth (the rate at which the switch reduces and
 * multicasts for each GPU; 0 = no limit but the GPU's NVLink).  Every GPU
 * also has a port at level 1 to the switch between the nodes, through its
 * NIC (one per GPU: [gpu.nic.up] and [gpu.nic.down]; one per node:
 * [gpu.nvlink.up, node.nic.up] and [node.nic.down, gpu.nvlink.down]),
 * which reduces with ib_sharp = true (InfiniBand SHARP).
 */
#include "netmodel/netmodel.h"

#include <math.h>

#define NODES_DEFAULT_GPUS 8        /* GPUs per node when gpus_per_node is 0 */
#define NODES_DEFAULT_INTRA_X 10.0  /* intra_bandwidth / bandwidth when 0 */

/* The parameters of a nodes network, defaults resolved. */
typedef struct {
  int gpus;          /* GPUs per node */
  int n_nodes;       /* ceil (n_hosts / gpus) */
  double intra_bw;   /* bytes/s of each NVLink link */
  double intra_lat;  /* s of each NVLink link */
  gboolean per_gpu;  /* one NIC per GPU */
  gboolean nvls;     /* each node's switch reduces (nvswitch = sharp) */
  double nvls_bw;    /* bytes/s per GPU of its reduction, 0 = no limit */
  gboolean ib_sharp; /* the switch between nodes reduces */
} NodesShape;

static const BaseChoice nic_choices[] = {
  { "node", FALSE, FALSE }, { "gpu", TRUE, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice nvswitch_choices[] = {
  { "plain", FALSE, FALSE }, { "sharp", TRUE, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice sharp_choices[] = {
  { "false", FALSE, FALSE }, { "true", TRUE, FALSE }, { NULL, 0, FALSE } };

/* nvls_bandwidth at most this many times the default NVLink figure's
 * order (bytes/s): 1 PB/s per GPU, far above any switch. */
#define NODES_MAX_NVLS_BW 1e15

/* intra_bandwidth, intra_efficiency and intra_latency are declared with
 * the keys several topologies read (topologies.c). */
static const BaseKey keys[] = {
  { .section = "network", .key = "gpus_per_node", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = 1e6, .doc = "nodes: GPUs (hosts) per node, in host order (0 = 8)." },
  { .section = "network", .key = "nic", .type = BASE_KEY_ENUM, .def = "node",
    .choices = nic_choices,
    .doc = "nodes: one NIC per node, shared by its GPUs, or one per gpu." },
  { .section = "network", .key = "nvswitch", .type = BASE_KEY_ENUM, .def = "plain",
    .choices = nvswitch_choices,
    .doc = "nodes: the switch inside each node: plain forwards, sharp also reduces what its GPUs send it and multicasts the sum (NVLink SHARP, NVSwitch 3 as in DGX/HGX H100), which algorithm = nvls and nvls-tree need." },
  { .section = "network", .key = "nvls_bandwidth", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_BANDWIDTH, .def = "0", .min = 0, .max = NODES_MAX_NVLS_BW,
    .doc = "nodes with nvswitch = sharp: bytes/s per GPU at which the switch reduces and multicasts (its node carries gpus_per_node x this each way); 0 = no limit but the GPU's NVLink." },
  { .section = "network", .key = "ib_sharp", .type = BASE_KEY_ENUM, .def = "false",
    .choices = sharp_choices,
    .doc = "nodes: the switch between the nodes reduces what the GPUs' NICs send it (InfiniBand SHARP), so that algorithm = nvls runs across nodes." },
  { .section = NULL },
};

/* Checks `p` (with `net`, may be NULL) and resolves its defaults. */
static gboolean
nodes_resolve (const NetNetwork *net, const NetTopologyParams *p,
               NodesShape *s, GError **error)
{
  const BaseValues *v = net_topology_values (p);
  int gpus_per_node = (int) base_values_int (v, "network.gpus_per_node");
  double intra_bandwidth = base_values_double (v, "network.intra_bandwidth");
  double intra_latency = base_values_double (v, "network.intra_latency");
  double intra_efficiency = base_values_double (v, "network.intra_efficiency");
  gboolean nic_per_gpu = base_values_int (v, "network.nic") != 0;
  if (!net_topology_check_hosts ("nodes", net, p, error))
    return FALSE;
  if (gpus_per_node < 0)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: expected gpus_per_node >= 1 (or 0 for "
                   "%d), found %d", NODES_DEFAULT_GPUS, gpus_per_node);
      return FALSE;
    }
  if (!(isfinite (intra_bandwidth) && intra_bandwidth >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: expected intra_bandwidth > 0 bytes/s "
                   "(or 0 for %g x bandwidth), found %g",
                   NODES_DEFAULT_INTRA_X, intra_bandwidth);
      return FALSE;
    }
  if (!(isfinite (intra_latency) && intra_latency >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: expected intra_latency >= 0 s, found %g",
                   intra_latency);
      return FALSE;
    }
  if (!(intra_efficiency >= 0 && intra_efficiency <= 1))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: expected intra_efficiency in (0, 1] (or 0 "
                   "for 1), found %g", intra_efficiency);
      return FALSE;
    }
  s->gpus = gpus_per_node > 0 ? gpus_per_node : NODES_DEFAULT_GPUS;
  s->n_nodes = (p->n_hosts + s->gpus - 1) / s->gpus;
  s->intra_bw = intra_bandwidth > 0 ? intra_bandwidth
                                       : NODES_DEFAULT_INTRA_X * p->bandwidth;
  if (intra_efficiency > 0)
    s->intra_bw *= intra_efficiency;
  s->intra_lat = intra_latency;
  s->per_gpu = nic_per_gpu != FALSE;
  s->nvls = base_values_int (v, "network.nvswitch") != 0;
  s->nvls_bw = base_values_double (v, "network.nvls_bandwidth");
  s->ib_sharp = base_values_int (v, "network.ib_sharp") != 0;
  if (!(isfinite (s->nvls_bw) && s->nvls_bw >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: expected nvls_bandwidth >= 0 bytes/s, "
                   "found %g", s->nvls_bw);
      return FALSE;
    }
  if (!isfinite (s->intra_bw))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "nodes topology: the default intra_bandwidth, %g x "
                   "bandwidth, overflows; set intra_bandwidth",
                   NODES_DEFAULT_INTRA_X);
      return FALSE;
    }
  return TRUE;
}

/* What a nodes network's routes are computed from. */
typedef struct {
  int first;         /* host id of GPU 0 */
  int n;             /* GPUs */
  int gpus;          /* GPUs per node */
  gboolean per_gpu;  /* one NIC per GPU */
  int *nv_up;        /* (n) GPU -> node switch link ids */
  int *nv_down;      /* (n) node switch -> GPU */
  int *nic_up;       /* (n with per_gpu, else n_nodes) -> switch */
  int *nic_down;     /* (the same) switch -> */
  int links[];       /* storage of the four */
} NodesRoutes;

/* NetRouteFunc: over NVLink within a node; across nodes through the NICs of
 * both GPUs (per_gpu) or through NVLink and both nodes' NICs. */
static int
nodes_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const NodesRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;
  int na, nb;

  if (a < 0 || a >= s->n || b < 0 || b >= s->n || a == b)
    return 0;
  na = a / s->gpus;
  nb = b / s->gpus;
  if (na == nb || s->per_gpu)
    {
      if (max >= 2)
        {
          links[0] = na == nb ? s->nv_up[a] : s->nic_up[a];
          links[1] = na == nb ? s->nv_down[b] : s->nic_down[b];
        }
      return 2;
    }
  if (max >= 4)
    {
      links[0] = s->nv_up[a];
      links[1] = s->nic_up[na];
      links[2] = s->nic_down[nb];
      links[3] = s->nv_down[b];
    }
  return 4;
}

/* NetFoldCheck: copies of whole nodes, two or more (the switch between
 * the NICs is non-blocking, every node built alike). */
static gboolean
nodes_fold_check (gconstpointer ctx, int period)
{
  const NodesRoutes *s = ctx;

  return net_copies_fit (s->n, s->gpus, period);
}

/* NetFoldRoute: nodes_route with the receiver's links taken in the first
 * copy (GPU b mod period, its node's NIC). */
static int
nodes_fold_route (gconstpointer ctx, int period, int src, int dst, int *links,
                  int max)
{
  const NodesRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;

  if (a < 0 || a >= period || b < 0 || b >= s->n || a == b)
    return 0;
  if (b < period)
    return nodes_route (ctx, src, dst, links, max);
  int bf = b % period;  /* another copy: another node than a's */
  if (s->per_gpu)
    {
      if (max >= 2)
        {
          links[0] = s->nic_up[a];
          links[1] = s->nic_down[bf];
        }
      return 2;
    }
  if (max >= 4)
    {
      links[0] = s->nv_up[a];
      links[1] = s->nic_up[a / s->gpus];
      links[2] = s->nic_down[bf / s->gpus];
      links[3] = s->nv_down[bf];
    }
  return 4;
}

/* Gives every GPU its ports (net_network_set_port): to its node's switch
 * where it reduces (level 0), to the switch between the nodes (level 1). */
static void
nodes_add_switches (NetNetwork *net, const NetTopologyParams *p,
                    const NodesShape *shape, const NodesRoutes *s)
{
  int fabric = net_network_add_switch (net, "fabric", shape->ib_sharp,
                                       INFINITY);

  for (int node = 0; node < shape->n_nodes && shape->nvls; node++)
    {
      int first = node * shape->gpus;
      int g = MIN (shape->gpus, p->n_hosts - first), red, mc;
      double bw = shape->nvls_bw > 0 ? g * shape->nvls_bw : INFINITY;
      g_autofree char *name = g_strdup_printf ("node%d.nvswitch", node);
      g_autofree char *rname = g_strdup_printf ("node%d.nvswitch.reduce", node);
      g_autofree char *mname = g_strdup_printf ("node%d.nvswitch.multicast",
                                                node);
      int sw = net_network_add_switch (net, name, TRUE,
                                       shape->nvls_bw > 0 ? shape->nvls_bw
                                                          : INFINITY);

      /* no limit: as fast as g NVLinks together, which never binds */
      if (!isfinite (bw))
        bw = g * shape->intra_bw;
      red = net_network_add_named_link (net, rname, bw, 0);
      mc = net_network_add_named_link (net, mname, bw, 0);
      for (int j = 0; j < g; j++)
        {
          int up[2] = { s->nv_up[first + j], red };
          int down[2] = { mc, s->nv_down[first + j] };

          net_network_set_port (net, s->first + first + j, 0, sw, up, 2, down,
                                2);
        }
    }
  for (int h = 0; h < p->n_hosts; h++)
    {
      int node = h / shape->gpus;

      if (shape->per_gpu)
        net_network_set_port (net, s->first + h, 1, fabric, &s->nic_up[h], 1,
                              &s->nic_down[h], 1);
      else
        {
          int up[2] = { s->nv_up[h], s->nic_up[node] };
          int down[2] = { s->nic_down[node], s->nv_down[h] };

          net_network_set_port (net, s->first + h, 1, fabric, up, 2, down, 2);
        }
    }
}

/* Adds the GPUs with their NVLink cables and host groups, then the NICs. */
static void
nodes_add (NetNetwork *net, const NetTopologyParams *p, const NodesShape *shape,
           NodesRoutes *s)
{
  int n_nics = shape->per_gpu ? p->n_hosts : shape->n_nodes;

  s->first = net_network_n_hosts (net);
  for (int h = 0; h < p->n_hosts; h++)
    {
      g_autofree char *prefix = g_strdup_printf ("node%d.gpu%d.nvlink",
                                                 h / shape->gpus,
                                                 h % shape->gpus);

      int host = net_network_add_host (net, p->names[h]);

      /* numbered from the first GPU's id, so that no group of these meets
       * the default group (own id) of a host outside this topology */
      net_network_set_host_group (net, host, s->first + h / shape->gpus);
      net_network_add_cable (net, prefix, shape->intra_bw, shape->intra_lat,
                             &s->nv_up[h], &s->nv_down[h]);
    }
  for (int i = 0; i < n_nics; i++)
    {
      g_autofree char *prefix
        = shape->per_gpu ? g_strdup_printf ("node%d.gpu%d.nic",
                                            i / shape->gpus, i % shape->gpus)
                         : g_strdup_printf ("node%d.nic", i);

      net_network_add_cable (net, prefix, p->bandwidth, p->latency,
                             &s->nic_up[i], &s->nic_down[i]);
    }
  nodes_add_switches (net, p, shape, s);
}

static gboolean
nodes_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  NodesShape shape;
  NodesRoutes *s;
  gsize n_nics, size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!nodes_resolve (net, p, &shape, error))
    return FALSE;

  n_nics = shape.per_gpu ? (gsize) p->n_hosts : (gsize) shape.n_nodes;
  size = sizeof (NodesRoutes) + sizeof (int) * 2 * ((gsize) p->n_hosts + n_nics);
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->gpus = shape.gpus;
  s->per_gpu = shape.per_gpu;
  s->nv_up = s->links;
  s->nv_down = s->nv_up + p->n_hosts;
  s->nic_up = s->nv_down + p->n_hosts;
  s->nic_down = s->nic_up + n_nics;
  nodes_add (net, p, &shape, s);
  net_network_set_router (net, nodes_route, s, g_free, size);
  net_network_set_folder (net, nodes_fold_check, nodes_fold_route);
  return TRUE;
}

/* One paragraph on the nodes network `p` describes; NULL when invalid.
 * Bisection bandwidth: with two nodes or more, the NIC bandwidth of the
 * smaller half when the first floor(N/2) nodes are cut from the rest; in one
 * node, floor(n/2) NVLinks. */
static char *
nodes_summary (const NetTopologyParams *p)
{
  NodesShape s;
  double bisection;   /* bytes/s */
  int n_links, cut_nodes;

  if (!nodes_resolve (NULL, p, &s, NULL))
    return NULL;
  cut_nodes = s.n_nodes / 2;
  if (s.n_nodes == 1)
    bisection = (p->n_hosts / 2) * s.intra_bw;
  else if (s.per_gpu)
    bisection = MIN (cut_nodes * s.gpus, p->n_hosts - cut_nodes * s.gpus)
                * p->bandwidth;
  else
    bisection = cut_nodes * p->bandwidth;
  n_links = 2 * p->n_hosts + 2 * (s.per_gpu ? p->n_hosts : s.n_nodes)
            + (s.nvls ? 2 * s.n_nodes : 0);  /* a reduce and a multicast link */
  g_autofree char *sharp = NULL;
  if (s.nvls || s.ib_sharp)
    {
      g_autofree char *rate = s.nvls_bw > 0
                                ? g_strdup_printf ("%.4g Gbit/s per GPU", s.nvls_bw * 8 / 1e9)
                                : g_strdup ("the NVLink's rate");
      sharp = g_strdup_printf (
        " Switches that reduce:%s%s%s.",
        s.nvls ? " each node's (NVLink SHARP, at " : "", s.nvls ? rate : "",
        s.ib_sharp ? (s.nvls ? "); the one between nodes (InfiniBand SHARP)"
                             : " the one between nodes (InfiniBand SHARP)")
                   : ")");
    }
  g_autofree char *base = g_strdup_printf (
    "nodes: %d GPUs in %d node%s of %d (the last holds %d), %d switches (one "
    "per node, 1 between nodes), %d one-way links: NVLink "
    "(node<i>.gpu<j>.nvlink.up/down) of %.4g Gbit/s and %.4g us, %s of %.4g "
    "Gbit/s and %.4g us; same-node transfers cross 2 links, cross-node ones "
    "%d; bisection bandwidth %.4g Gbit/s. Shared: a GPU's NVLink by its "
    "flows%s; %s.",
    p->n_hosts, s.n_nodes, s.n_nodes == 1 ? "" : "s", s.gpus,
    p->n_hosts - (s.n_nodes - 1) * s.gpus, s.n_nodes + 1, n_links,
    s.intra_bw * 8 / 1e9, s.intra_lat * 1e6,
    s.per_gpu ? "one NIC per GPU (node<i>.gpu<j>.nic.up/down)"
              : "one NIC per node (node<i>.nic.up/down)",
    p->bandwidth * 8 / 1e9, p->latency * 1e6, s.per_gpu ? 2 : 4,
    bisection * 8 / 1e9, s.per_gpu ? " inside the node" : ", off-node ones too",
    s.per_gpu ? "a GPU's NIC by its off-node flows"
              : "a node's NIC by the off-node flows of all its GPUs");
  return g_strconcat (base, sharp ? sharp : "", NULL);
}

/* Full nodes with one NIC per GPU: groups of gpus_per_node. */
static int
nodes_class_group (const BaseValues *values, gint64 workers)
{
  if (base_values_int (values, "network.nic") == 0)
    return 0;
  gint64 g = base_values_int (values, "network.gpus_per_node");
  g = g > 0 ? g : 8;
  return workers % g == 0 ? (int) g : 0;
}

/* Copies of whole nodes, two or more (nodes_fold_check). */
static gboolean
nodes_copies (const BaseValues *values, gint64 workers, int period)
{
  gint64 g = base_values_int (values, "network.gpus_per_node");
  g = g > 0 ? g : NODES_DEFAULT_GPUS;
  return net_copies_fit (workers, (int) g, period);
}

const NetTopology net_topology_nodes = {
  .name = "nodes",
  .description = "Multi-GPU nodes: GPUs of a node talk over NVLink-like "
                 "links to an internal switch, nodes over one shared NIC "
                 "each (or one NIC per GPU) to a non-blocking switch.",
  .keys = keys,
  .servers = TRUE,
  .build = nodes_build,
  .summary = nodes_summary,
  .class_group = nodes_class_group,
  .copies = nodes_copies,
};
