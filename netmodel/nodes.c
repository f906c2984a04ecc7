/*
 * nodes.c — the "nodes" topology: multi-GPU nodes joined by a star.
 *
 * Hosts are GPUs; they fill nodes of `gpus_per_node` in host order (the last
 * node may hold fewer).  Inside node i, GPU j has a full-duplex NVLink-like
 * cable to the node's internal switch: "node<i>.gpu<j>.nvlink.up" and
 * "node<i>.gpu<j>.nvlink.down", each of `intra_bandwidth` and
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
} NodesShape;

static const BaseChoice nic_choices[] = {
  { "node", FALSE, FALSE }, { "gpu", TRUE, FALSE }, { NULL, 0, FALSE } };

static const BaseKey keys[] = {
  { .section = "network", .key = "gpus_per_node", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = 1e6, .doc = "nodes: GPUs (hosts) per node, in host order (0 = 8)." },
  { .section = "network", .key = "intra_bandwidth", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_BANDWIDTH, .def = "0", .min = 0, .max = BASE_BIG,
    .doc = "nodes: bandwidth of each GPU's link inside its node, e.g. NVLink (0 = 10 x bandwidth)." },
  { .section = "network", .key = "intra_latency", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_TIME, .def = "0", .min = 0, .max = BASE_BIG,
    .doc = "nodes: latency of each GPU's link inside its node." },
  { .section = "network", .key = "nic", .type = BASE_KEY_ENUM, .def = "node",
    .choices = nic_choices,
    .doc = "nodes: one NIC per node, shared by its GPUs, or one per gpu." },
  { .section = NULL },
};

/* Checks `p` (with `net`, may be NULL) and resolves its defaults. */
static gboolean
nodes_resolve (const NetNetwork *net, const NetTopologyParams *p,
               NodesShape *s, GError **error)
{
  int gpus_per_node = (int) base_values_int (p->values, "network.gpus_per_node");
  double intra_bandwidth = base_values_double (p->values, "network.intra_bandwidth");
  double intra_latency = base_values_double (p->values, "network.intra_latency");
  gboolean nic_per_gpu = base_values_int (p->values, "network.nic") != 0;
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
  s->gpus = gpus_per_node > 0 ? gpus_per_node : NODES_DEFAULT_GPUS;
  s->n_nodes = (p->n_hosts + s->gpus - 1) / s->gpus;
  s->intra_bw = intra_bandwidth > 0 ? intra_bandwidth
                                       : NODES_DEFAULT_INTRA_X * p->bandwidth;
  s->intra_lat = intra_latency;
  s->per_gpu = nic_per_gpu != FALSE;
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

static gboolean
nodes_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  NodesShape s;
  g_autofree int *host = NULL;      /* (n_hosts) host ids */
  g_autofree int *nv_up = NULL;     /* (n_hosts) GPU -> node switch */
  g_autofree int *nv_down = NULL;   /* (n_hosts) node switch -> GPU */
  g_autofree int *nic_up = NULL;    /* (n_nodes or n_hosts) -> switch */
  g_autofree int *nic_down = NULL;  /* (n_nodes or n_hosts) switch -> */

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!nodes_resolve (net, p, &s, error))
    return FALSE;

  host = g_new (int, p->n_hosts);
  nv_up = g_new (int, p->n_hosts);
  nv_down = g_new (int, p->n_hosts);
  for (int h = 0; h < p->n_hosts; h++)
    {
      g_autofree char *prefix = g_strdup_printf ("node%d.gpu%d.nvlink",
                                                 h / s.gpus, h % s.gpus);

      host[h] = net_network_add_host (net, p->names[h]);
      net_network_add_cable (net, prefix, s.intra_bw, s.intra_lat, &nv_up[h],
                 &nv_down[h]);
    }
  if (s.per_gpu)
    {
      nic_up = g_new (int, p->n_hosts);
      nic_down = g_new (int, p->n_hosts);
      for (int h = 0; h < p->n_hosts; h++)
        {
          g_autofree char *prefix = g_strdup_printf ("node%d.gpu%d.nic",
                                                     h / s.gpus, h % s.gpus);
          net_network_add_cable (net, prefix, p->bandwidth, p->latency, &nic_up[h],
                     &nic_down[h]);
        }
    }
  else
    {
      nic_up = g_new (int, s.n_nodes);
      nic_down = g_new (int, s.n_nodes);
      for (int i = 0; i < s.n_nodes; i++)
        {
          g_autofree char *prefix = g_strdup_printf ("node%d.nic", i);
          net_network_add_cable (net, prefix, p->bandwidth, p->latency, &nic_up[i],
                     &nic_down[i]);
        }
    }

  for (int a = 0; a < p->n_hosts; a++)
    for (int b = 0; b < p->n_hosts; b++)
      {
        int na = a / s.gpus, nb = b / s.gpus;

        if (a == b)
          continue;
        if (na == nb)
          {
            int route[2] = { nv_up[a], nv_down[b] };
            net_network_set_route (net, host[a], host[b], route, 2);
          }
        else if (s.per_gpu)
          {
            int route[2] = { nic_up[a], nic_down[b] };
            net_network_set_route (net, host[a], host[b], route, 2);
          }
        else
          {
            int route[4] = { nv_up[a], nic_up[na], nic_down[nb], nv_down[b] };
            net_network_set_route (net, host[a], host[b], route, 4);
          }
      }
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
  n_links = 2 * p->n_hosts + 2 * (s.per_gpu ? p->n_hosts : s.n_nodes);
  return g_strdup_printf (
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
}

const NetTopology net_topology_nodes = {
  .name = "nodes",
  .description = "Multi-GPU nodes: GPUs of a node talk over NVLink-like "
                 "links to an internal switch, nodes over one shared NIC "
                 "each (or one NIC per GPU) to a non-blocking switch.",
  .keys = keys,
  .build = nodes_build,
  .summary = nodes_summary,
};
