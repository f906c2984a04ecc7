/*
 * protocol.c — NCCL's three wire protocols (LL, LL128, Simple) as the
 * collective executor charges them, and NCCL's rule for how many channels a
 * collective of a given size uses; NCCL's latency for the algorithms that
 * the switches reduce (NVLS, NVLSTree), which run under Simple only; and
 * how a protocol scales NCCL's network overhead and a NIC's declared
 * latency; and NCCL's ceilings on the bandwidth of each protocol and
 * algorithm, by GPU architecture and number of nodes; and the chunk in
 * which NCCL pipelines NVLS, smaller for smaller collectives.
 *
 * A protocol changes two things about every message of a collective: the
 * bytes on the wire per byte of data (LL sends 8-byte lines holding 4 bytes
 * of data and a 4-byte flag; LL128 128-byte lines holding 120 bytes of data
 * and 8 of flags; Simple sends the data alone and synchronises with a
 * memory fence per step instead) and the fixed latency of a step.  The
 * figures are NCCL's own tuning constants (NCCL src/graph/tuning.cc,
 * baseLat and hwLat per algorithm and protocol; read in the NVIDIA/nccl
 * repository), so they live here, in one table, rather than in the
 * catalog: the catalog's step and launch overheads stay the Simple ring
 * figures, and a protocol scales them by its figure over Simple's on the
 * same kind of link (docs/collectives.md, "Protocols").
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "base/keys.h"
#include "comm/program.h"

#define US 1e-6

/* The selector: not a protocol. */
static const CommProtocol proto_auto = {
  .name = "auto",
  .description = "for each collective, the protocol (with the algorithm under "
                 "algorithm = auto) of least estimated time, as NCCL's tuner "
                 "chooses by size",
  .source = "NCCL src/graph/tuning.cc, src/enqueue.cc (topoGetAlgoInfo)",
  .selector = TRUE,
};

/* Rows of base_lat and hw_lat: [ring, tree]; columns of hw_lat: [network,
 * NVLink, PCIe] (CommHw's order).  NCCL's threads per channel times its
 * thread threshold give channel_bytes (src/enqueue.cc: a collective drops a
 * channel while its bytes are below channels x threads x threshold; 512
 * threads for LL and Simple, 640 for LL128; thresholds 8, 8 and 64 bytes in
 * src/include/comm.h, LL's multiplied by the ranks on a ring in
 * tuning.cc). */
static const CommProtocol proto_ll = {
  .name = "ll",
  .description = "NCCL's low-latency protocol: 8-byte lines of 4 data bytes "
                 "and a 4-byte flag, half the bandwidth, the least latency",
  .source = "NCCL src/graph/tuning.cc (baseLat, hwLat: LL), "
            "src/include/device.h (ncclLLFifoLine)",
  .wire = 2.0,
  .base_lat = { 6.6 * US, 6.8 * US },
  .hw_lat = { { 2.7 * US, 0.6 * US, 1.0 * US },
              { 5.0 * US, 0.6 * US, 1.0 * US } },
  .channel_bytes = 512 * 8,
  .channel_bytes_per_rank = TRUE,
  .nic_lat = 0.0,   /* tuning.cc charges it once; [H5] of
                       docs/collectives.md: LL does not pay it */
};

static const CommProtocol proto_ll128 = {
  .name = "ll128",
  .description = "NCCL's LL128 protocol: 128-byte lines of 120 data bytes and "
                 "an 8-byte flag, near full bandwidth at a low latency",
  .source = "NCCL src/graph/tuning.cc (baseLat, hwLat: LL128), "
            "src/include/device.h (NCCL_LL128_LINESIZE, NCCL_LL128_DATAELEMS)",
  .wire = 128.0 / 120.0,
  .base_lat = { 14.0 * US, 14.0 * US },
  .hw_lat = { { 4.0 * US, 1.9 * US, 2.5 * US },
              { 8.5 * US, 1.25 * US, 1.9 * US } },
  .channel_bytes = 640 * 8,
  .nic_lat = 1.0,   /* tuning.cc: the NIC's latency, no flush */
};

static const CommProtocol proto_simple = {
  .name = "simple",
  .description = "NCCL's Simple protocol: the data alone at full bandwidth, a "
                 "memory fence per step (the largest latency)",
  .source = "NCCL src/graph/tuning.cc (baseLat, hwLat: Simple; interLat: "
            "latencyInter, again for the flush)",
  .wire = 1.0,
  .base_lat = { 8.4 * US, 8.4 * US },
  .hw_lat = { { 14.0 * US, 3.4 * US, 5.7 * US },
              { 14.0 * US, 4.0 * US, 4.0 * US } },
  .channel_bytes = 512 * 64,
  .nic_lat = 2.0,   /* tuning.cc: the NIC's latency, then again for the
                       flush of the received data */
};

/* The selector, then the protocols; auto tries them in the order of
 * comm_protocol_candidates. */
static const CommProtocol *const protocols[] = {
  &proto_auto, &proto_ll, &proto_ll128, &proto_simple, NULL,
};

/* Simple first: with no overheads the protocols tie on latency and Simple
 * has the most bandwidth, so a tie goes to it. */
static const CommProtocol *const candidates[] = {
  &proto_simple, &proto_ll128, &proto_ll, NULL,
};

const void *const *
comm_protocol_entries (void)
{
  return (const void *const *) protocols;
}

const CommProtocol *
comm_protocol_lookup (const char *name)
{
  return base_registry_find ((const void *const *) protocols, name);
}

const CommProtocol *const *
comm_protocol_candidates (void)
{
  return candidates;
}

double
comm_protocol_step_scale (const CommProtocol *proto, CommFamily family,
                          CommHw hw)
{
  g_return_val_if_fail ((guint) family < COMM_N_FAMILIES, 1.0);
  g_return_val_if_fail ((guint) hw < COMM_N_HW, 1.0);
  if (proto == NULL || proto->selector)
    return 1.0;
  return proto->hw_lat[family][hw] / proto_simple.hw_lat[COMM_FAMILY_RING][hw];
}

double
comm_protocol_launch_scale (const CommProtocol *proto, CommFamily family)
{
  g_return_val_if_fail ((guint) family < COMM_N_FAMILIES, 1.0);
  if (proto == NULL || proto->selector)
    return 1.0;
  return proto->base_lat[family] / proto_simple.base_lat[COMM_FAMILY_RING];
}

int
comm_protocol_channels (const CommProtocol *proto, CommFamily family, int p,
                        double bytes, int most)
{
  const CommProtocol *pr = proto == NULL || proto->selector ? &proto_simple : proto;
  double per = pr->channel_bytes;
  double c;

  g_return_val_if_fail (most >= 1 && p >= 1, 1);
  if (pr->channel_bytes_per_rank && family == COMM_FAMILY_RING)
    per *= p;
  c = floor (bytes / per);
  if (!(c >= 1))   /* also NaN */
    return 1;
  return c >= most ? most : (int) c;
}

double
comm_protocol_net_overhead_scale (const CommProtocol *proto)
{
  /* tuning.cc (ncclTopoTuneModel) triples it for Simple */
  return proto == NULL || proto->selector || proto == &proto_simple ? 3.0 : 1.0;
}

double
comm_protocol_nic_latency_scale (const CommProtocol *proto)
{
  if (proto == NULL || proto->selector)
    return proto_simple.nic_lat;
  return proto->nic_lat;
}

/* NCCL's latency of a collective that the switches reduce, Simple protocol
 * (tuning.cc, hwLat rows NVLS and NVLSTree; their baseLat is 0, so this is
 * the whole latency NCCL charges): [nvls, nvls-tree] x CommHw's order
 * [network, NVLink, PCIe]; NCCL runs neither over PCIe (0 here). */
static const double nvls_hw_lat[2][COMM_N_HW] = {
  { 18.0 * US, 25.0 * US, 0 },
  { 20.9 * US, 25.0 * US, 0 },
};

double
comm_protocol_nvls_step_scale (gboolean tree, CommHw hw)
{
  g_return_val_if_fail ((guint) hw < COMM_N_HW, 1.0);
  if (!(nvls_hw_lat[tree ? 1 : 0][hw] > 0))
    return 1.0;
  return nvls_hw_lat[tree ? 1 : 0][hw] / proto_simple.hw_lat[COMM_FAMILY_RING][hw];
}

double
comm_protocol_nvls_launch_scale (void)
{
  return 0.0;   /* NCCL's baseLat for NVLS and NVLSTree */
}

double
comm_protocol_nvls_chunk (int heads, double bytes)
{
  double share = bytes / COMM_NVLS_CHANNELS, c = COMM_NVLS_CHUNK_MAX;

  g_return_val_if_fail (heads >= 1, COMM_NVLS_CHUNK_MAX);
  /* calcCollChunking's three tests, in its order; a NaN share keeps the
   * largest chunk */
  if (share < 64.0 * heads * c && c > 65536)
    c = 65536;
  if (share < 8.0 * heads * c && c > 32768)
    c = 32768;
  if (share < 2.0 * heads * c && c > 16384)
    c = 16384;
  return c;
}

double
comm_protocol_nvls_iterations (int heads, double bytes, double chunk)
{
  double it;

  g_return_val_if_fail (heads >= 1 && chunk > 0, 1.0);
  it = ceil (bytes / (COMM_NVLS_CHANNELS * (double) heads * chunk));
  return it >= 1 ? it : 1.0;   /* also NaN */
}

/* NCCL's bandwidth ceilings, GB/s of bus bandwidth (10^9 bytes of data per
 * second), as its tuner caps each (algorithm, protocol): src/graph/tuning.cc
 * of NCCL 2.22.3 (the release of [H5] in docs/collectives.md; the figures
 * for Volta, Ampere and Hopper are the same in 2.29.2), read in the
 * NVIDIA/nccl repository.  Columns: one node, two nodes, more than two
 * (tuning.cc's index2).
 *
 * llMaxBws caps LL's whole bus bandwidth, ring and tree alike.  On one node
 * NCCL reads it by GPU architecture (ll_max_gpu); across nodes by the
 * host's CPU vendor (ll_max_cpu; its index1 is the CPU there, so the
 * Hopper row's figures for several nodes, 45 and 35, are never read).  The
 * others are per channel and read by GPU architecture: perChMaxRingLL128Bws
 * (the ring under LL128), perChMaxTreeBws (the tree, every protocol) and
 * perChMaxTreeLL128Bws (the tree under LL128).  Rows: CommArch's order from
 * Volta; NCCL reads anything older than Ampere as Volta. */
#define GBPS 1e9
static const double ll_max_gpu[COMM_N_ARCH] = {
  0, 39.0 * GBPS, 87.7 * GBPS, 141.0 * GBPS,
};
static const double ll_max_cpu[2][2] = {   /* [Intel, AMD] x [2, > 2 nodes] */
  { 39.0 * GBPS, 20.4 * GBPS },
  { 22.5 * GBPS, 19.0 * GBPS },
};
static const double ring_ll128_max[COMM_N_ARCH][3] = {
  { 0 },
  { 20.0 * GBPS, 20.0 * GBPS, 20.0 * GBPS },
  { 20.0 * GBPS, 20.0 * GBPS, 20.0 * GBPS },
  { 36.7 * GBPS, 36.7 * GBPS, 36.7 * GBPS },
};
static const double tree_max[COMM_N_ARCH][3] = {
  { 0 },
  { 26.5 * GBPS, 18.5 * GBPS, 10.0 * GBPS },
  { 24.0 * GBPS, 23.6 * GBPS, 17.8 * GBPS },
  { 38.7 * GBPS, 41.4 * GBPS, 36.0 * GBPS },
};
static const double tree_ll128_max[COMM_N_ARCH][3] = {
  { 0 },
  { 20.0 * GBPS, 20.0 * GBPS, 20.0 * GBPS },
  { 20.0 * GBPS, 20.0 * GBPS, 20.0 * GBPS },
  { 36.7 * GBPS, 36.7 * GBPS, 29.0 * GBPS },
};

double
comm_protocol_rate_cap (const CommProtocol *proto, CommFamily family,
                        CommArch arch, int nodes, gboolean amd_host,
                        int channels)
{
  const CommProtocol *pr = proto == NULL || proto->selector ? &proto_simple : proto;
  int col = nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
  double ll, cap = INFINITY;

  g_return_val_if_fail ((guint) family < COMM_N_FAMILIES, INFINITY);
  g_return_val_if_fail ((guint) arch < COMM_N_ARCH, INFINITY);
  if (arch == COMM_ARCH_OTHER)
    return INFINITY;
  channels = MAX (channels, 1);
  ll = (nodes <= 1 ? ll_max_gpu[arch] : ll_max_cpu[amd_host ? 1 : 0][col - 1])
       / channels;
  if (family == COMM_FAMILY_TREE)
    {
      cap = tree_max[arch][col];
      if (pr == &proto_ll)
        cap = MIN (cap, ll);
      else if (pr == &proto_ll128)
        cap = MIN (cap, tree_ll128_max[arch][col]);
      return cap;
    }
  if (pr == &proto_ll)
    cap = ll;
  else if (pr == &proto_ll128)
    cap = ring_ll128_max[arch][col];
  return cap;
}

int
comm_group_count (const CommArgs *a)
{
  int seen[3], n = 0;

  g_return_val_if_fail (a != NULL && a->net != NULL && a->hosts != NULL, 1);
  for (int r = 0; r < a->p && n < 3; r++)
    {
      int g = net_network_host_group (a->net, a->hosts[r]), known = FALSE;

      for (int i = 0; i < n && !known; i++)
        known = seen[i] == g;
      if (!known)
        seen[n++] = g;
    }
  return MAX (n, 1);
}

double
comm_args_rate_cap (const CommArgs *a, const CommProtocol *pr,
                    CommFamily family, int channels)
{
  g_return_val_if_fail (a != NULL, INFINITY);
  if (a->arch == COMM_ARCH_OTHER)
    return INFINITY;
  return comm_protocol_rate_cap (pr, family, a->arch, comm_group_count (a),
                                 a->amd_host, channels);
}

CommArch
comm_arch_of_device (const char *name)
{
  static const struct { const char *prefix; CommArch arch; } known[] = {
    { "p100", COMM_ARCH_VOLTA }, { "v100", COMM_ARCH_VOLTA },
    { "a100", COMM_ARCH_AMPERE }, { "a800", COMM_ARCH_AMPERE },
    { "h100", COMM_ARCH_HOPPER }, { "h200", COMM_ARCH_HOPPER },
    { "h800", COMM_ARCH_HOPPER }, { "gh200", COMM_ARCH_HOPPER },
  };

  if (name == NULL)
    return COMM_ARCH_OTHER;
  for (gsize i = 0; i < G_N_ELEMENTS (known); i++)
    if (g_ascii_strncasecmp (name, known[i].prefix, strlen (known[i].prefix)) == 0)
      return known[i].arch;
  return COMM_ARCH_OTHER;
}

CommHw
comm_hw_of_kind (const char *kind)
{
  if (kind != NULL && g_strcmp0 (kind, "nvlink") == 0)
    return COMM_HW_NVLINK;
  if (kind != NULL && g_strcmp0 (kind, "pcie") == 0)
    return COMM_HW_PCI;
  return COMM_HW_NET;
}
