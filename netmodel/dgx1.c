/*
 * dgx1.c — the "dgx1" topology: NVIDIA DGX-1 servers, whose 8 GPUs are wired
 * to one another point to point by NVLink (no switch) in NVIDIA's "hybrid
 * cube-mesh", the servers joined by InfiniBand through a non-blocking
 * switch.
 *
 * The wiring (NVIDIA, DGX-1 System Architecture white papers, 2016 for P100
 * and 2017 for V100; A. Li et al., "Evaluating Modern GPU Interconnect:
 * PCIe, NVLink, NV-SLI, NVSwitch and GPUDirect", IEEE TPDS 31(1), 2020): the
 * GPUs sit at the corners of a cube, all 12 edges and the diagonals of two
 * opposite faces are NVLink connections, so every GPU is connected to 4
 * others: GPUs 0-3 to one another, 4-7 to one another, and GPU i to i + 4.
 * With P100 (mesh = p100) each connection is one NVLink 1 link (20 GB/s per
 * direction), 4 per GPU.  With V100 (mesh = v100, the default) each GPU has 6
 * NVLink 2 links (25 GB/s per direction), so 8 of the 16 connections are
 * doubled: 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6 and 6-7, a ring through all 8
 * GPUs (the other 8 form a second ring).  GPU numbers are the CUDA device
 * order of a DGX-1V as nvidia-smi and NCCL's topology dump print them
 * (NVIDIA/nccl issue 671).
 *
 * Hosts are GPUs, 8 per server in host order.  The last server may hold
 * fewer: its GPUs 0 .. g-1 are wired as in a full server among themselves,
 * with ceil(g / 2) NICs.  Links, of server s:
 *   - "dgx<s>.gpu<a>->gpu<b>": one per direction per connection, of
 *     links x intra_bandwidth x intra_efficiency and intra_latency.  A double
 *     connection is one link of twice the rate, not two links: NVLink bonds
 *     a pair's links and stripes every transfer over them, while a route here
 *     is one list of links, so a flow on one of two parallel links would
 *     leave the other idle;
 *   - "dgx<s>.nic<k>.up" / ".down": InfiniBand NIC k (EDR on a DGX-1, 4 per
 *     server) to and from the switch, of `bandwidth` and `latency`, shared by
 *     GPUs 2k and 2k + 1, which sit with it under one PCIe switch.  The PCIe
 *     hop itself (16 GB/s, faster than EDR's 12.5) is not modelled.
 *
 * Routes (dgx1_route, computed when asked from each GPU's link ids):
 *   - connected GPUs: their link, 1 hop;
 *   - the other pairs of a server (V100 and P100 alike: GPU i and the 3
 *     GPUs of the other quad other than i + 4): two hops through the GPU
 *     connected to both whose thinner connection has the most links (the
 *     widest path), the lowest such GPU on a tie.  The real GPUs have
 *     only PCIe between them, across the CPUs' QPI link, and NCCL lays its
 *     rings over connected pairs only; the model has no PCIe, so it relays
 *     over NVLink, the fast path software can take, and charges the relayed
 *     flow on both connections it crosses (optimistic where real software
 *     would use PCIe);
 *   - across servers: [nic(a).up, nic(b).down].
 * Shared: an NVLink link by every flow crossing it, relayed ones included;
 * a NIC by the off-server flows of its two GPUs.  Each server's GPUs form
 * one host group (net_network_host_group): id of its first GPU's host + the
 * server index, as nodes does.
 */
#include "netmodel/netmodel.h"

#include <math.h>

#define DGX1_GPUS 8      /* GPUs per server */
#define DGX1_DEGREE 4    /* GPUs each GPU has an NVLink connection to */
#define DGX1_PER_NIC 2   /* GPUs per InfiniBand NIC */

/* The [network] mesh choices. */
typedef enum {
  DGX1_V100,
  DGX1_P100,
  DGX1_N_MESHES
} Dgx1Generation;

/* One generation's NVLink wiring. */
typedef struct {
  const char *name;                    /* [network] mesh */
  double link_bw;                      /* bytes/s of one NVLink link, each
                                          direction */
  guint8 links[DGX1_GPUS][DGX1_GPUS];  /* NVLink links between GPU i and j */
} Dgx1Mesh;

/* Row a, column b: the NVLink links between GPUs a and b of one server. */
static const Dgx1Mesh dgx1_meshes[DGX1_N_MESHES] = {
  [DGX1_V100] = { "v100", 25e9, {
    /* 0  1  2  3  4  5  6  7 */
    { 0, 1, 1, 2, 2, 0, 0, 0 },   /* GPU 0 */
    { 1, 0, 2, 1, 0, 2, 0, 0 },   /* GPU 1 */
    { 1, 2, 0, 2, 0, 0, 1, 0 },   /* GPU 2 */
    { 2, 1, 2, 0, 0, 0, 0, 1 },   /* GPU 3 */
    { 2, 0, 0, 0, 0, 1, 1, 2 },   /* GPU 4 */
    { 0, 2, 0, 0, 1, 0, 2, 1 },   /* GPU 5 */
    { 0, 0, 1, 0, 1, 2, 0, 2 },   /* GPU 6 */
    { 0, 0, 0, 1, 2, 1, 2, 0 } } },
  /* the same connections, one link each */
  [DGX1_P100] = { "p100", 20e9, {
    { 0, 1, 1, 1, 1, 0, 0, 0 },
    { 1, 0, 1, 1, 0, 1, 0, 0 },
    { 1, 1, 0, 1, 0, 0, 1, 0 },
    { 1, 1, 1, 0, 0, 0, 0, 1 },
    { 1, 0, 0, 0, 0, 1, 1, 1 },
    { 0, 1, 0, 0, 1, 0, 1, 1 },
    { 0, 0, 1, 0, 1, 1, 0, 1 },
    { 0, 0, 0, 1, 1, 1, 1, 0 } } },
};

static const BaseChoice mesh_choices[] = {
  { "v100", DGX1_V100, FALSE }, { "p100", DGX1_P100, FALSE },
  { NULL, 0, FALSE } };

/* intra_bandwidth, intra_efficiency and intra_latency, which nodes reads
 * too, are declared in topologies.c. */
static const BaseKey keys[] = {
  { .section = "network", .key = "mesh", .type = BASE_KEY_ENUM, .def = "v100",
    .choices = mesh_choices,
    .doc = "dgx1: the NVLink wiring of a server: v100 (DGX-1 with Tesla V100: 6 NVLink 2 links per GPU, 8 GPU pairs on two) or p100 (DGX-1 with Tesla P100: 4 NVLink 1 links per GPU)." },
  { .section = NULL },
};

/* The parameters of a dgx1 network, defaults resolved. */
typedef struct {
  const Dgx1Mesh *mesh;
  int n_servers;   /* ceil (n_hosts / 8) */
  int last;        /* GPUs in the last server, 1 .. 8 */
  double nv_bw;    /* bytes/s of one NVLink link, efficiency applied */
  double nv_lat;   /* s of every NVLink connection */
  double nic_bw;   /* bytes/s of each NIC link: `bandwidth` */
  double nic_lat;  /* s of each NIC link: `latency` */
} Dgx1Shape;

/* Checks `p` (with `net`, may be NULL) and resolves its defaults; messages
 * name the key and what to write. */
static gboolean
dgx1_resolve (const NetNetwork *net, const NetTopologyParams *p,
              Dgx1Shape *s, GError **error)
{
  const BaseValues *v = net_topology_values (p);
  gint64 mesh = base_values_int (v, "network.mesh");
  double bw = base_values_double (v, "network.intra_bandwidth");
  double lat = base_values_double (v, "network.intra_latency");
  double eff = base_values_double (v, "network.intra_efficiency");

  if (!net_topology_check_hosts ("dgx1", net, p, error))
    return FALSE;
  if (mesh < 0 || mesh >= DGX1_N_MESHES)
    return net_topology_key_error (error, "dgx1", "mesh", "expected v100 or p100, found choice %"
                      G_GINT64_FORMAT "; write mesh = v100 (the default) "
                      "or mesh = p100", mesh);
  s->mesh = &dgx1_meshes[mesh];
  /* x 2: a double connection carries twice a link's rate */
  if (!(isfinite (2 * bw) && bw >= 0))
    return net_topology_key_error (error, "dgx1", "intra_bandwidth", "expected the bandwidth of "
                      "one NVLink link, finite and > 0 bytes/s (0 for %g "
                      "GB/s), found %g; write e.g. intra_bandwidth = 25GBps",
                      s->mesh->link_bw / 1e9, bw);
  if (!(isfinite (lat) && lat >= 0))
    return net_topology_key_error (error, "dgx1", "intra_latency", "expected a latency >= 0 s, "
                      "found %g; write e.g. intra_latency = 1us", lat);
  if (!(eff >= 0 && eff <= 1))
    return net_topology_key_error (error, "dgx1", "intra_efficiency", "expected a share in "
                      "(0, 1] (0 for 1), found %g; write e.g. "
                      "intra_efficiency = 0.8", eff);
  s->n_servers = (p->n_hosts + DGX1_GPUS - 1) / DGX1_GPUS;
  s->last = p->n_hosts - (s->n_servers - 1) * DGX1_GPUS;
  s->nv_bw = (bw > 0 ? bw : s->mesh->link_bw) * (eff > 0 ? eff : 1);
  s->nv_lat = lat;
  s->nic_bw = p->bandwidth;
  s->nic_lat = p->latency;
  return TRUE;
}

/* The index of b among a's NVLink neighbours in increasing order (0 .. 3),
 * or -1 when a and b are not connected. */
static int
dgx1_slot (const Dgx1Mesh *m, int a, int b)
{
  int k = 0;

  if (m->links[a][b] == 0)
    return -1;
  for (int j = 0; j < b; j++)
    k += m->links[a][j] > 0;
  return k;
}

/* The GPU, among the first `present` of a server, through which GPU a
 * reaches GPU b (both < present, not connected): connected to both, with
 * the most links on the thinner of its two connections, the lowest on a
 * tie; -1 if none (never in a cube-mesh, whose diameter is 2, and never in
 * a partial server: tests/test-topology.c checks every size). */
static int
dgx1_via (const Dgx1Mesh *m, int present, int a, int b)
{
  int best = -1, best_width = 0;

  for (int v = 0; v < present; v++)
    {
      int width = MIN (m->links[a][v], m->links[v][b]);

      if (width > best_width)
        {
          best = v;
          best_width = width;
        }
    }
  return best;
}

/* What a dgx1 network's routes are computed from. */
typedef struct {
  int first;              /* host id of server 0's GPU 0 */
  int n;                  /* GPUs */
  const Dgx1Mesh *mesh;   /* static */
  int *out;               /* (n, DGX1_DEGREE) link id from GPU h to its k-th
                             neighbour (dgx1_slot), -1 if that GPU is absent */
  int *nic_up;            /* (ceil (n / 2)) NIC -> switch; GPU h uses h / 2 */
  int *nic_down;          /* (the same) switch -> NIC */
  int links[];            /* storage of the three */
} Dgx1Routes;

/* NetRouteFunc: one NVLink link, two through a relaying GPU, or the two
 * GPUs' NICs; see the head of the file. */
static int
dgx1_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const Dgx1Routes *s = ctx;
  const Dgx1Mesh *m = s->mesh;
  int a = src - s->first, b = dst - s->first;
  int base, ga, gb, via;

  if (a < 0 || a >= s->n || b < 0 || b >= s->n || a == b)
    return 0;
  if (a / DGX1_GPUS != b / DGX1_GPUS)
    {
      if (max >= 2)
        {
          links[0] = s->nic_up[a / DGX1_PER_NIC];
          links[1] = s->nic_down[b / DGX1_PER_NIC];
        }
      return 2;
    }
  base = a - a % DGX1_GPUS;
  ga = a - base;
  gb = b - base;
  if (m->links[ga][gb] > 0)
    {
      if (max >= 1)
        links[0] = s->out[a * DGX1_DEGREE + dgx1_slot (m, ga, gb)];
      return 1;
    }
  via = dgx1_via (m, MIN (DGX1_GPUS, s->n - base), ga, gb);
  if (via < 0)
    return 0;
  if (max >= 2)
    {
      links[0] = s->out[a * DGX1_DEGREE + dgx1_slot (m, ga, via)];
      links[1] = s->out[(base + via) * DGX1_DEGREE + dgx1_slot (m, via, gb)];
    }
  return 2;
}

/* Adds server `srv`'s NVLink links among its first `present` GPUs, then its
 * NICs, writing their ids into s. */
static void
dgx1_add_server (NetNetwork *net, const Dgx1Shape *shape, Dgx1Routes *s,
                 int srv, int present)
{
  const Dgx1Mesh *m = shape->mesh;
  int base = srv * DGX1_GPUS;

  for (int a = 0; a < present; a++)
    for (int b = 0; b < present; b++)
      if (m->links[a][b] > 0)
        {
          g_autofree char *name = g_strdup_printf ("dgx%d.gpu%d->gpu%d",
                                                   srv, a, b);

          s->out[(base + a) * DGX1_DEGREE + dgx1_slot (m, a, b)]
            = net_network_add_named_link (net, name,
                                          m->links[a][b] * shape->nv_bw,
                                          shape->nv_lat);
        }
  for (int k = 0; k * DGX1_PER_NIC < present; k++)
    {
      g_autofree char *prefix = g_strdup_printf ("dgx%d.nic%d", srv, k);
      int nic = base / DGX1_PER_NIC + k;

      net_network_add_cable (net, prefix, shape->nic_bw, shape->nic_lat,
                             &s->nic_up[nic], &s->nic_down[nic]);
    }
}

/* Ring orders inside a full server for the collectives' channels
 * (net_network_set_group_order): two Hamiltonian cycles of the cube-mesh,
 * one over the connections V100 doubles (0-3-2-1-5-6-7-4) and one over the
 * others (0-1-3-7-5-4-6-2), each of them both ways, as NCCL lays its
 * rings along NVLink on a DGX-1 instead of through relays; channel c takes
 * the doubled cycle for c mod 4 in {0, 1}, the single one for {2, 3}, the
 * reverse direction for odd c, and starts c places further on, so that
 * channels enter and leave a server through different GPUs and NICs.  A
 * partial server keeps the default. */
static gboolean
dgx1_ring_order (int size, int c, int *order)
{
  static const int cycle[2][DGX1_GPUS] = { { 0, 3, 2, 1, 5, 6, 7, 4 },
                                           { 0, 1, 3, 7, 5, 4, 6, 2 } };
  const int *ring = cycle[(c / 2) % 2];
  int shift = c;   /* channels enter the server at different GPUs */

  if (size != DGX1_GPUS)
    return FALSE;
  for (int j = 0; j < DGX1_GPUS; j++)
    {
      int k = (j + shift) % DGX1_GPUS;

      order[j] = ring[c % 2 ? (DGX1_GPUS - k) % DGX1_GPUS : k];
    }
  return TRUE;
}

static gboolean
dgx1_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  Dgx1Shape shape;
  Dgx1Routes *s;
  gsize n_out, n_nics, size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!dgx1_resolve (net, p, &shape, error))
    return FALSE;

  n_out = (gsize) p->n_hosts * DGX1_DEGREE;
  /* 4 per full server, ceil (g / 2) in a last server of g */
  n_nics = ((gsize) p->n_hosts + DGX1_PER_NIC - 1) / DGX1_PER_NIC;
  size = sizeof (Dgx1Routes) + sizeof (int) * (n_out + 2 * n_nics);
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->mesh = shape.mesh;
  s->out = s->links;
  s->nic_up = s->out + n_out;
  s->nic_down = s->nic_up + n_nics;
  for (gsize i = 0; i < n_out; i++)
    s->out[i] = -1;
  s->first = net_network_n_hosts (net);
  for (int h = 0; h < p->n_hosts; h++)
    {
      int host = net_network_add_host (net, p->names[h]);

      /* numbered from the first GPU's id, so that no group of these meets
       * the default group (own id) of a host outside this topology */
      net_network_set_host_group (net, host, s->first + h / DGX1_GPUS);
    }
  for (int srv = 0; srv < shape.n_servers; srv++)
    dgx1_add_server (net, &shape, s, srv,
                     srv == shape.n_servers - 1 ? shape.last : DGX1_GPUS);
  net_network_set_router (net, dgx1_route, s, g_free, size);
  net_network_set_group_order (net, dgx1_ring_order);
  return TRUE;
}

/* One-way NVLink links among the first `present` GPUs of a server. */
static int
dgx1_count_links (const Dgx1Mesh *m, int present)
{
  int n = 0;

  for (int a = 0; a < present; a++)
    for (int b = 0; b < present; b++)
      n += m->links[a][b] > 0;
  return n;
}

/* Bytes/s of the NVLink links from the first floor(present / 2) GPUs of a
 * server to the others (the two quads of a full server). */
static double
dgx1_cut (const Dgx1Shape *s, int present)
{
  double bw = 0;

  for (int a = 0; a < present / 2; a++)
    for (int b = present / 2; b < present; b++)
      bw += s->mesh->links[a][b] * s->nv_bw;
  return bw;
}

/* One paragraph on the dgx1 network `p` describes; NULL when invalid.
 * Bisection bandwidth: with two servers or more, the NICs of the smaller
 * side when the first floor(S/2) servers are cut from the rest; in one
 * server, the NVLink links between its two halves. */
static char *
dgx1_summary (const NetTopologyParams *p)
{
  Dgx1Shape s;
  double bisection;  /* bytes/s */
  int n_nics, nv_links, cut_nics;

  if (!dgx1_resolve (NULL, p, &s, NULL))
    return NULL;
  n_nics = (p->n_hosts + DGX1_PER_NIC - 1) / DGX1_PER_NIC;
  nv_links = (s.n_servers - 1) * dgx1_count_links (s.mesh, DGX1_GPUS)
             + dgx1_count_links (s.mesh, s.last);
  cut_nics = s.n_servers / 2 * (DGX1_GPUS / DGX1_PER_NIC);
  bisection = s.n_servers == 1 ? dgx1_cut (&s, s.last)
                               : MIN (cut_nics, n_nics - cut_nics) * s.nic_bw;
  return g_strdup_printf (
    "dgx1: %d GPUs in %d DGX-1 server%s of 8 (the last holds %d), NVLink "
    "wired as the %s hybrid cube-mesh, %s, %d one-way "
    "links: %d NVLink (dgx<s>.gpu<a>->gpu<b>) of %.4g Gbit/s per NVLink link "
    "(twice that where a pair has two) and %.4g us, %d NIC "
    "(dgx<s>.nic<k>.up/down, one per pair of GPUs) of %.4g Gbit/s and %.4g "
    "us; in a server a transfer crosses 1 link, or 2 through a relaying GPU "
    "between GPUs with no NVLink of their own; across servers 2; bisection "
    "bandwidth %.4g Gbit/s. Shared: an NVLink link by every flow crossing "
    "it, relayed ones too; a NIC by the off-server flows of its two GPUs.",
    p->n_hosts, s.n_servers, s.n_servers == 1 ? "" : "s", s.last,
    s.mesh->name,
    s.n_servers > 1 ? "1 non-blocking switch between servers" : "no switch",
    nv_links + 2 * n_nics, nv_links,
    s.nv_bw * 8 / 1e9, s.nv_lat * 1e6, 2 * n_nics, s.nic_bw * 8 / 1e9,
    s.nic_lat * 1e6, bisection * 8 / 1e9);
}

const NetTopology net_topology_dgx1 = {
  .name = "dgx1",
  .description = "NVIDIA DGX-1 servers of 8 GPUs wired point to point by "
                 "NVLink in the hybrid cube-mesh (V100 or P100), each pair "
                 "of GPUs sharing an InfiniBand NIC to a non-blocking "
                 "switch.",
  .source = "NVIDIA: DGX-1 with Tesla V100 System Architecture, white paper, "
            "2017; A. Li et al.: Evaluating Modern GPU Interconnect: PCIe, "
            "NVLink, NV-SLI, NVSwitch and GPUDirect, IEEE TPDS 31(1), 2020",
  .keys = keys,
  .servers = TRUE,
  .build = dgx1_build,
  .summary = dgx1_summary,
};
