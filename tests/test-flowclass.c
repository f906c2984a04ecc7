/*
 * test-flowclass.c — flow classes against the per-message path.
 *
 * A collective whose ranks' transfers are equivalent runs as flow classes
 * (docs/collectives.md, "Flow classes"): one timing per round for all p
 * ranks instead of p transfers.  Every case here runs the same collective
 * twice on fresh networks, once with flow classes on and once off
 * ([network] flow_classes = off, net_network_set_flow_classes), and
 * requires the same completion time to 1e-9 relative (the class path
 * repeats the per-message path's floating-point operations, so the times
 * come out equal to the bit in practice), and that the path expected ran:
 * the sweep over algorithms x topologies x sizes runs as classes, the
 * cases that break the symmetry (unequal blocks, routes of two kinds, a
 * degraded link, traffic already in flight, a caller that does not promise
 * to be alone, an observer of every message) run per message.  The
 * channels of one all-reduce run as flow classes together where their
 * times cannot disturb one another, and per message where they share links
 * with blocks of other sizes, unless each channel is the previous one
 * moved, in which case channel 0 runs alone on folded routes.  A run
 * through `dtsim` checks the same on
 * every trace table but the events and the params row naming the path.
 */
#include "config.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "comm/collectives.h"
#include "config/scenario.h"
#include "netmodel/netmodel.h"
#include "sim/estimate.h"
#include "tests/util.h"

#define LINK_BW  1.25e9    /* bytes/s, host links (10 Gbit/s) */
#define LINK_LAT 5e-6      /* s */
#define NVL_BW   1.5e11    /* bytes/s, nodes: each GPU's NVLink link */
#define NVL_LAT  7e-7      /* s */

/* A network to run one collective on. */
typedef struct {
  const char *topology;
  int gpus;          /* nodes: GPUs per node; fat-tree: k; else 0 */
  gboolean nic_gpu;  /* nodes: one NIC per GPU */
} Topo;

/* What one run gave. */
typedef struct {
  double t_done;     /* s, when `done` ran */
  int n_done;
  gboolean classes;  /* it ran as flow classes */
  guint64 n_classes, n_detailed;   /* collectives (channels) by path */
  guint64 n_folded;                 /* channels run folded */
} Outcome;

static void
on_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  Outcome *o = ctx;

  o->t_done = eng_sim_now (sim);
  o->n_done++;
}

static void
on_other (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED,
          gpointer data G_GNUC_UNUSED, const NetTransfer *t G_GNUC_UNUSED)
{
}

static void
observe (gpointer ctx, const NetTransfer *t G_GNUC_UNUSED)
{
  (*(int *) ctx)++;
}

/* How a case disturbs the collective. */
typedef enum {
  DISTURB_NONE,
  DISTURB_LINK,      /* one host link at half bandwidth */
  DISTURB_TRAFFIC,   /* a transfer in flight when it starts */
  DISTURB_SHARED,    /* the caller does not promise to be alone */
  DISTURB_OBSERVER   /* every message observed (a trace of messages) */
} Disturb;

static NetNetwork *
network_new (EngSim *sim, const Topo *t, int p, NetContention contention)
{
  NetNetwork *net = net_network_new (sim, contention);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  BaseValues *v = net_topology_values_new ();
  NetTopologyParams tp;
  g_autoptr (GError) error = NULL;

  for (int h = 0; h < p; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  if (strcmp (t->topology, "nodes") == 0)
    {
      base_values_set_int (v, "network.gpus_per_node", t->gpus);
      base_values_set_double (v, "network.intra_bandwidth", NVL_BW);
      base_values_set_double (v, "network.intra_latency", NVL_LAT);
      base_values_set_int (v, "network.nic", t->nic_gpu);
    }
  else if (strcmp (t->topology, "fat-tree") == 0 && t->gpus > 0)
    base_values_set_int (v, "network.fat_tree_k", t->gpus);
  tp.n_hosts = p;
  tp.names = (const char *const *) names->pdata;
  tp.bandwidth = LINK_BW;
  tp.latency = LINK_LAT;
  tp.values = v;
  g_assert_true (net_topology_lookup (t->topology)->build (net, &tp, &error));
  g_assert_no_error (error);
  base_values_free (v);
  return net;
}

/* Runs `kind` of algorithm `alg` over p ranks (rank r on host r) of n
 * elements of elem_bytes, timing only, with flow classes on or off, on
 * GPUs of `arch` under protocol `pr` (NULL: the overheads as given), in
 * `channels` channels (0: one collective, as given). */
static Outcome
run_channels (const char *alg, CommKind kind, const Topo *t, int p, gsize n,
              double elem_bytes, NetContention contention, Disturb disturb,
              gboolean classes, CommArch arch, const CommProtocol *pr,
              int channels)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = network_new (sim, t, p, contention);
  g_autofree int *hosts = g_new (int, p);
  Outcome o = { 0 };
  CommStats before, after;
  int observed = 0;
  CommArgs a = {
    .sim = sim, .net = net, .p = p, .hosts = hosts, .bufs = NULL, .n = n,
        .elem_bytes = elem_bytes, .reduce_per_byte = 1e-11, .root = 0, .tag = 7,
    .launch_overhead = 3e-6, .step_overhead = 6e-6,
    .intra_step_overhead = 2e-6, .exclusive = disturb != DISTURB_SHARED,
    .arch = arch, .protocol = pr, .channels = channels,
  };
  g_autoptr (GError) error = NULL;

  for (int r = 0; r < p; r++)
    hosts[r] = r;
  net_network_set_flow_classes (net, classes);
  if (disturb == DISTURB_LINK)
    g_assert_true (net_network_set_link (
      net, net_network_link_id (net, "h1.up"), LINK_BW / 2, LINK_LAT));
  if (disturb == DISTURB_TRAFFIC)
    net_send (net, 0, p - 1, 1e3, 99, on_other, NULL, NULL);
  if (disturb == DISTURB_OBSERVER)
    net_network_set_observer (net, observe, &observed);
  comm_stats (&before);
  g_assert_true (comm_start (comm_lookup (alg), &a, kind, on_done, &o, NULL,
                             &error));
  g_assert_no_error (error);
  eng_run (sim, INFINITY);
  comm_stats (&after);
  g_assert_cmpint (o.n_done, ==, 1);
  g_assert_cmpuint (net_network_active (net), ==, 0);
  o.classes = after.classes > before.classes;
  net_network_collective_counts (net, &o.n_classes, &o.n_detailed);
  o.n_folded = net_network_folded_count (net);
  if (disturb == DISTURB_OBSERVER)
    g_assert_cmpint (observed, >, 0);
  net_network_free (net);
  eng_sim_free (sim);
  return o;
}

/* run_channels of one collective. */
static Outcome
run_arch (const char *alg, CommKind kind, const Topo *t, int p, gsize n,
          double elem_bytes, NetContention contention, Disturb disturb,
          gboolean classes, CommArch arch, const CommProtocol *pr)
{
  return run_channels (alg, kind, t, p, n, elem_bytes, contention, disturb,
                       classes, arch, pr, 0);
}

/* run_arch on no GPU NCCL knows, with the overheads as given. */
static Outcome
run_one (const char *alg, CommKind kind, const Topo *t, int p, gsize n,
         double elem_bytes, NetContention contention, Disturb disturb,
         gboolean classes)
{
  return run_arch (alg, kind, t, p, n, elem_bytes, contention, disturb,
                   classes, COMM_ARCH_OTHER, NULL);
}

/* The same collective of elements of elem_bytes with flow classes on and
 * off: equal times, and the class path taken when `expect_classes`. */
static void
compare_bytes (const char *alg, CommKind kind, const Topo *t, int p, gsize n,
               double elem_bytes, NetContention contention, Disturb disturb,
               gboolean expect_classes)
{
  Outcome on = run_one (alg, kind, t, p, n, elem_bytes, contention, disturb,
                        TRUE);
  Outcome off = run_one (alg, kind, t, p, n, elem_bytes, contention, disturb,
                         FALSE);

  if (g_test_verbose ())
    g_printerr ("%s %s on %s (%d), p = %d, n = %zu: %.17g s, %s%s\n", alg,
                comm_kind_name (kind), t->topology, t->gpus, p, n,
                on.t_done, on.classes ? "classes" : "per message",
                on.t_done == off.t_done ? "" : " (not bit-identical)");
  g_assert_false (off.classes);
  g_assert_cmpint (on.classes, ==, expect_classes);
  g_assert_cmpfloat (off.t_done, >, 0);
  g_assert_cmpfloat_with_epsilon (on.t_done, off.t_done, 1e-9 * off.t_done);
}

/* compare_bytes with 4-byte elements. */
static void
compare (const char *alg, CommKind kind, const Topo *t, int p, gsize n,
         NetContention contention, Disturb disturb, gboolean expect_classes)
{
  compare_bytes (alg, kind, t, p, n, 4, contention, disturb, expect_classes);
}

/* Symmetric cases: ring (all-reduce, reduce-scatter, all-gather) and
 * hierarchical all-reduce on star, nodes (one NIC per GPU; one GPU per
 * node), fat-tree and ring topologies, 2 to 4,096 ranks, blocks that
 * divide evenly. */
static void
test_symmetric (void)
{
  static const Topo star = { "star", 0, FALSE };
  static const Topo nodes8 = { "nodes", 8, TRUE };
  static const Topo nodes4 = { "nodes", 4, TRUE };
  static const Topo nodes1 = { "nodes", 1, FALSE };
  static const Topo ring = { "ring", 0, FALSE };
  static const Topo fat = { "fat-tree", 4, FALSE };
  static const int ring_sizes[] = { 2, 3, 16, 256, 1024 };
  static const int hier_sizes[] = { 8, 64, 512, 4096 };
  static const CommKind kinds[] = { COMM_ALLREDUCE, COMM_REDUCE_SCATTER,
                                    COMM_ALLGATHER };
  /* divisible by every p below and every group count */
  const gsize n = 3 * 4096 * 5;

  for (guint i = 0; i < G_N_ELEMENTS (ring_sizes); i++)
    for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
      {
        int p = ring_sizes[i];
        gsize np = n - n % (gsize) p;

        compare ("ring", kinds[k], &star, p, np, NET_CONTENTION_MAXMIN,
                 DISTURB_NONE, TRUE);
        if (p <= 256)
          compare ("ring", kinds[k], &star, p, np, NET_CONTENTION_NONE,
                   DISTURB_NONE, TRUE);
      }
  /* a ring topology's neighbours are one hop apart, each on its own link */
  compare ("ring", COMM_ALLREDUCE, &ring, 64, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, TRUE);
  /* a fat-tree (k = 4, 16 hosts): its links have one latency and
   * bandwidth, and each neighbour pair's route its own links */
  compare ("ring", COMM_ALLREDUCE, &fat, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, TRUE);
  /* nodes of one GPU: every route crosses the NICs */
  compare ("ring", COMM_ALLREDUCE, &nodes1, 32, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, TRUE);
  /* inside one node: NVLink only */
  compare ("ring", COMM_ALLREDUCE, &nodes8, 8, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (hier_sizes); i++)
    {
      int p = hier_sizes[i];

      compare ("hierarchical", COMM_ALLREDUCE, &nodes8, p, n,
               NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
      if (p <= 512)
        {
          compare ("hierarchical", COMM_ALLREDUCE, &nodes4, p, n,
                   NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
          compare ("hierarchical", COMM_ALLREDUCE, &star, p, n,
                   NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
        }
    }
}

/* Blocks of two sizes, floor(n/p) and floor(n/p) + 1 elements (in the
 * hierarchical all-reduce, chunks of n/g and sub-blocks of a chunk / m,
 * each of two sizes): the ranks drift out of lock step, each size's chains
 * keep their own times, and the class path still gives the per-message
 * times.  n is a prime, or p k + r for several r (g m k + r for the
 * hierarchical all-reduce), on star, fat-tree and nodes topologies from 2
 * to 4,096 ranks. */
static void
test_unequal (void)
{
  static const Topo star = { "star", 0, FALSE };
  static const Topo nodes8 = { "nodes", 8, TRUE };
  static const Topo nodes4 = { "nodes", 4, TRUE };
  static const Topo fat = { "fat-tree", 4, FALSE };
  static const Topo fat8 = { "fat-tree", 8, FALSE };
  static const int ring_sizes[] = { 2, 3, 16, 256, 1024 };
  static const int hier_sizes[] = { 16, 64, 512, 4096 };
  static const CommKind kinds[] = { COMM_ALLREDUCE, COMM_REDUCE_SCATTER,
                                    COMM_ALLGATHER };
  const gsize prime = 61483;   /* divided by none of the p below */
  const gsize k = 97;

  for (guint i = 0; i < G_N_ELEMENTS (ring_sizes); i++)
    {
      int p = ring_sizes[i];
      gsize rems[] = { 1, (gsize) p / 2, (gsize) p - 1 };

      for (guint c = 0; c < G_N_ELEMENTS (kinds); c++)
        compare ("ring", kinds[c], &star, p, prime, NET_CONTENTION_MAXMIN,
                 DISTURB_NONE, TRUE);
      for (guint r = 0; r < G_N_ELEMENTS (rems) && p <= 256; r++)
        if (rems[r] > 0)
          {
            compare ("ring", COMM_ALLREDUCE, &star, p, p * k + rems[r],
                     NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
            compare ("ring", COMM_ALLREDUCE, &star, p, p * k + rems[r],
                     NET_CONTENTION_NONE, DISTURB_NONE, TRUE);
          }
    }
  compare ("ring", COMM_ALLREDUCE, &fat, 16, prime, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, TRUE);
  compare ("ring", COMM_ALLREDUCE, &fat8, 128, 128 * k + 31,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
  compare ("hierarchical", COMM_ALLREDUCE, &fat8, 128, prime,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (hier_sizes); i++)
    {
      int p = hier_sizes[i];
      /* every remainder modulo g: chunks of two sizes; modulo g m too:
       * sub-blocks of two sizes in chunks of either */
      gsize rems[] = { 1, 8 - 1, (gsize) p / 2 + 3, (gsize) p - 1 };

      /* the ranks leave the cross-node rings up to 2(m - 1) one-element
       * hops apart: at 4,096 ranks (m = 512) with 4-byte elements, 3.3 us,
       * more than the 2 us step inside a node, so that the all-gather's
       * NVLink transfers would overlap (test_fallback); 2-byte elements
       * (bf16) halve the lag */
      compare_bytes ("hierarchical", COMM_ALLREDUCE, &nodes8, p, prime,
                     p < 4096 ? 4 : 2, NET_CONTENTION_MAXMIN, DISTURB_NONE,
                     TRUE);
      for (guint r = 0; r < G_N_ELEMENTS (rems) && p <= 512; r++)
        compare ("hierarchical", COMM_ALLREDUCE, &nodes8, p,
                 p * k + rems[r], NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
      if (p <= 512)
        {
          compare ("hierarchical", COMM_ALLREDUCE, &nodes4, p, prime,
                   NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
          compare ("hierarchical", COMM_ALLREDUCE, &nodes8, p, prime,
                   NET_CONTENTION_NONE, DISTURB_NONE, TRUE);
          compare ("hierarchical", COMM_ALLREDUCE, &star, p, prime,
                   NET_CONTENTION_MAXMIN, DISTURB_NONE, TRUE);
        }
    }
}

/* Where the symmetry breaks, the collective runs per message, with the
 * same times as with flow classes off. */
static void
test_fallback (void)
{
  static const Topo star = { "star", 0, FALSE };
  static const Topo nodes8 = { "nodes", 8, TRUE };
  static const Topo nodes_shared = { "nodes", 8, FALSE };
  const gsize n = 3 * 4096 * 5;

  /* a block of no element: p > n */
  compare ("ring", COMM_ALLREDUCE, &star, 16, 9, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, FALSE);
  compare ("hierarchical", COMM_ALLREDUCE, &nodes8, 64, 8 * 7 + 3,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  /* blocks of one and two elements of 4 KiB: one element is more than a
   * hop's latency, so after a few rounds the chains of two-element blocks
   * lag so far that a sender's next transfer would share its link with
   * the previous one (max-min), or a receiver would still be busy when the
   * next block arrives (contention none) */
  compare_bytes ("ring", COMM_ALLREDUCE, &star, 16, 16 + 5, 4096,
                 NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  compare_bytes ("ring", COMM_ALLREDUCE, &star, 16, 16 + 5, 4096,
                 NET_CONTENTION_NONE, DISTURB_NONE, FALSE);
  /* a receiver still busy when a block arrives: the ranks leave the
   * cross-node rings of 64 nodes (sub-blocks of 120 and 121 elements of
   * 64 bytes) further apart than one NVLink hop of a chunk takes, so the
   * all-gather inside the nodes waits on some of them */
  compare_bytes ("hierarchical", COMM_ALLREDUCE, &nodes8, 512, 61483, 64,
                 NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  /* the same with 4-byte elements at 4,096 ranks: the lag exceeds the
   * in-node step, a sender's next NVLink transfer would share the link */
  compare ("hierarchical", COMM_ALLREDUCE, &nodes8, 4096, 61483,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  /* routes of two kinds: a ring over nodes crosses NVLink and NICs */
  compare ("ring", COMM_ALLREDUCE, &nodes8, 32, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, FALSE);
  /* eight GPUs of a node through its one NIC: they share it */
  compare ("hierarchical", COMM_ALLREDUCE, &nodes_shared, 64, n,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  /* one slow link */
  compare ("ring", COMM_ALLREDUCE, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_LINK, FALSE);
  /* traffic already in flight, a caller that may send meanwhile, a trace
   * of every message */
  compare ("ring", COMM_ALLREDUCE, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_TRAFFIC, FALSE);
  compare ("ring", COMM_ALLREDUCE, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_SHARED, FALSE);
  compare ("ring", COMM_ALLREDUCE, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_OBSERVER, FALSE);
  /* algorithms that give no rounds */
  compare ("halving-doubling", COMM_ALLREDUCE, &star, 16, n,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  compare ("tree", COMM_ALLREDUCE, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, FALSE);
  compare ("double-tree", COMM_ALLREDUCE, &star, 16, n,
           NET_CONTENTION_MAXMIN, DISTURB_NONE, FALSE);
  compare ("ring", COMM_BROADCAST, &star, 16, n, NET_CONTENTION_MAXMIN,
           DISTURB_NONE, FALSE);
}

/* An all-reduce in C channels with flow classes on and off: equal times,
 * every channel on the path expected (counted once per channel), and, on
 * the class path, each of the C channels reporting its end once. */
static void
compare_channels (const char *alg, const Topo *t, int p, gsize n, int C,
                  NetContention contention, gboolean expect_classes)
{
  Outcome on = run_channels (alg, COMM_ALLREDUCE, t, p, n, 4, contention,
                             DISTURB_NONE, TRUE, COMM_ARCH_OTHER, NULL, C);
  Outcome off = run_channels (alg, COMM_ALLREDUCE, t, p, n, 4, contention,
                              DISTURB_NONE, FALSE, COMM_ARCH_OTHER, NULL, C);

  if (g_test_verbose ())
    g_printerr ("%s in %d channels on %s (%d), p = %d, n = %zu, %s: "
                "%.17g s, %s%s\n", alg, C, t->topology, t->gpus, p, n,
                contention == NET_CONTENTION_MAXMIN ? "max-min" : "none",
                on.t_done, on.classes ? "classes" : "per message",
                on.t_done == off.t_done ? "" : " (not bit-identical)");
  g_assert_cmpuint (off.n_classes, ==, 0);
  g_assert_cmpuint (off.n_detailed, ==, (guint64) C);
  g_assert_cmpuint (off.n_folded, ==, 0);
  g_assert_cmpuint (on.n_folded, ==, 0);
  g_assert_cmpint (on.classes, ==, expect_classes);
  g_assert_cmpuint (on.n_classes, ==, expect_classes ? (guint64) C : 0);
  g_assert_cmpuint (on.n_detailed, ==, expect_classes ? 0 : (guint64) C);
  g_assert_cmpfloat (off.t_done, >, 0);
  g_assert_cmpfloat_with_epsilon (on.t_done, off.t_done, 1e-9 * off.t_done);
}

/* Channels (docs/collectives.md, "Channels"): C all-reduces at once over
 * rotated rank orders.  They run as flow classes where that is exact:
 * channels that repeat channel 0 on the same hosts with blocks of the same
 * sizes (the hierarchical all-reduce on nodes when C g divides n: every
 * route carries C equal flows, each at its bandwidth / C under max-min; a
 * ring whose channels all lay the same ring), channels whose links never
 * meet while both are in flight (the rings of one DGX-1, laid along NVLink
 * both ways round two edge-disjoint cycles), and any channels that qualify
 * alone when there is no contention (they never interact).  Channels that
 * share links with blocks of other sizes, or cross-node rings whose
 * channels share a node's NVLink links at different times, run per
 * message. */
static void
test_channels (void)
{
  static const Topo star = { "star", 0, FALSE };
  static const Topo nodes8 = { "nodes", 8, TRUE };
  static const Topo nodes4 = { "nodes", 4, TRUE };
  static const Topo nodes1 = { "nodes", 1, FALSE };
  static const Topo dgx1 = { "dgx1", 0, FALSE };
  static const int counts[] = { 2, 3, 4, 8 };
  /* divisible by C g m for every C, g and m below */
  const gsize n = 3 * 4096 * 5;

  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      int C = counts[i];
      gsize even = n - n % ((gsize) C * 8);

      /* congruent channels: C flows on every route at once */
      compare_channels ("hierarchical", &nodes8, 64, even, C,
                        NET_CONTENTION_MAXMIN, TRUE);
      compare_channels ("hierarchical", &nodes8, 256, even, C,
                        NET_CONTENTION_MAXMIN, TRUE);
      compare_channels ("hierarchical", &nodes4, 32, even, C,
                        NET_CONTENTION_MAXMIN, TRUE);
      compare_channels ("hierarchical", &nodes8, 64, even, C,
                        NET_CONTENTION_NONE, TRUE);
      /* sub-blocks of two sizes across the nodes, alike in every channel */
      compare_channels ("hierarchical", &nodes8, 64, (gsize) C * 8 * 1001,
                        C, NET_CONTENTION_MAXMIN, TRUE);
      /* one GPU per node or a star: every channel lays the same ring */
      compare_channels ("ring", &nodes1, 16, n, C, NET_CONTENTION_MAXMIN,
                        TRUE);
      compare_channels ("ring", &star, 16, n, C, NET_CONTENTION_MAXMIN, TRUE);
      /* chunks of two sizes: channel c's GPU a holds channel 0's chunk of
       * GPU a - c, so a route carries flows of both sizes at once; with
       * channels of unequal sizes, no channel is another moved (folding:
       * test_fold) */
      compare_channels ("hierarchical", &nodes8, 64, even + (gsize) C * 8 + 3,
                        C, NET_CONTENTION_MAXMIN, FALSE);
      /* ... which do not interact without contention */
      compare_channels ("hierarchical", &nodes8, 64, even + (gsize) C * 8 + 3,
                        C, NET_CONTENTION_NONE, TRUE);
      /* channels of unequal sizes (n mod C elements more in the first) */
      if (C > 2)
        compare_channels ("ring", &star, 16, n + 1, C, NET_CONTENTION_MAXMIN,
                          FALSE);
    }
  /* one DGX-1: channels 0 and 1 go round the doubled NVLink cycle one way
   * each, 2 and 3 round the single one; their one-way links never meet,
   * while the rings of the two cycles take different times */
  compare_channels ("ring", &dgx1, 8, n, 2, NET_CONTENTION_MAXMIN, TRUE);
  compare_channels ("ring", &dgx1, 8, n, 4, NET_CONTENTION_MAXMIN, TRUE);
  compare_channels ("ring", &dgx1, 8, n + 5, 4, NET_CONTENTION_MAXMIN, TRUE);
  /* channels 4 and 5 take channels 0 and 1's links again */
  compare_channels ("ring", &dgx1, 8, n, 8, NET_CONTENTION_MAXMIN, FALSE);
  /* rings over nodes cross NVLink and NICs: one channel is no class */
  compare_channels ("ring", &nodes8, 32, n, 2, NET_CONTENTION_MAXMIN, FALSE);
  /* p <= g: the hierarchical all-reduce inside one node */
  compare_channels ("hierarchical", &nodes8, 8, n, 4, NET_CONTENTION_MAXMIN,
                    TRUE);
}

/* An all-reduce in C channels with flow classes on and off: equal times,
 * and with them on, every channel folded (`expect`: FOLD_YES), run as
 * flow classes or folded (FOLD_FAST: without contention, where the class
 * path comes first) or per message (FOLD_NO). */
typedef enum { FOLD_NO, FOLD_YES, FOLD_FAST } FoldPath;

static void
compare_fold (const char *alg, const Topo *t, int p, gsize n, int C,
              NetContention contention, FoldPath expect)
{
  Outcome on = run_channels (alg, COMM_ALLREDUCE, t, p, n, 4, contention,
                             DISTURB_NONE, TRUE, COMM_ARCH_OTHER, NULL, C);
  Outcome off = run_channels (alg, COMM_ALLREDUCE, t, p, n, 4, contention,
                              DISTURB_NONE, FALSE, COMM_ARCH_OTHER, NULL, C);

  if (g_test_verbose ())
    g_printerr ("%s in %d channels on nodes of %d, p = %d, n = %zu, %s: "
                "%.17g s, classes %" G_GUINT64_FORMAT " folded %"
                G_GUINT64_FORMAT " detailed %" G_GUINT64_FORMAT "%s\n", alg,
                C, t->gpus, p, n,
                contention == NET_CONTENTION_MAXMIN ? "max-min" : "none",
                on.t_done, on.n_classes, on.n_folded, on.n_detailed,
                on.t_done == off.t_done ? "" : " (not bit-identical)");
  g_assert_cmpuint (off.n_detailed, ==, (guint64) C);
  g_assert_cmpuint (off.n_folded + off.n_classes, ==, 0);
  g_assert_cmpuint (on.n_classes + on.n_folded + on.n_detailed, ==,
                    (guint64) C);
  switch (expect)
    {
    case FOLD_YES:
      g_assert_cmpuint (on.n_folded, ==, (guint64) C);
      break;
    case FOLD_FAST:
      g_assert_cmpuint (on.n_detailed, ==, 0);
      break;
    case FOLD_NO:
      g_assert_cmpuint (on.n_detailed, ==, (guint64) C);
      break;
    }
  g_assert_cmpfloat (off.t_done, >, 0);
  g_assert_cmpfloat_with_epsilon (on.t_done, off.t_done, 1e-9 * off.t_done);
}

/* Folded channels (docs/collectives.md, "Folded channels"): on nodes of g
 * GPUs with one NIC per GPU, channel c of the hierarchical or ring
 * all-reduce is channel 0 turned by c GPUs inside every node.  With C = g
 * channels of one size (C divides n) each channel is the previous one
 * moved, every link's cycle has C links, and channel 0 run alone on folded
 * routes gives the per-message times, also where the chunks inside a
 * channel have two sizes (C g does not divide n: the congruent class path
 * does not apply).  C < g (channel C - 1 moved is no channel), C > g
 * (cycles of g links carry C / g moves of each flow) and channels of two
 * sizes run per message. */
static void
test_fold (void)
{
  static const Topo nodes8 = { "nodes", 8, TRUE };
  static const Topo nodes4 = { "nodes", 4, TRUE };
  static const Topo shared8 = { "nodes", 8, FALSE };
  static const Topo *const topos[] = { &nodes4, &nodes8 };
  static const int counts[] = { 2, 4, 8 };

  for (guint ti = 0; ti < G_N_ELEMENTS (topos); ti++)
    for (guint ci = 0; ci < G_N_ELEMENTS (counts); ci++)
      for (int mm = 0; mm < 2; mm++)
        {
          const Topo *t = topos[ti];
          int g = t->gpus, C = counts[ci];
          NetContention cont = mm ? NET_CONTENTION_MAXMIN : NET_CONTENTION_NONE;
          FoldPath fold = C == g ? (mm ? FOLD_YES : FOLD_FAST)
                                 : (mm ? FOLD_NO : FOLD_FAST);
          /* channels of one size whose chunks have two (r = 1 .. g - 1
           * elements more than a multiple of g per channel) */
          for (int r = 1; r < g; r += 3)
            {
              gsize n = (gsize) C * ((gsize) g * 1001 + (gsize) r);

              compare_fold ("hierarchical", t, 8 * g, n, C, cont, fold);
              if (r == 1)
                compare_fold ("hierarchical", t, 256, n, C, cont, fold);
            }
          /* the ring lays NVLink and NIC hops: no class, but folded */
          compare_fold ("ring", t, 8 * g, (gsize) C * ((gsize) 64 * g + 3), C,
                        cont, C == g && mm ? FOLD_YES
                              : C == g ? FOLD_FAST : FOLD_NO);
        }
  /* 256 ranks of the ring in 8 channels */
  compare_fold ("ring", &nodes8, 256, 8 * (256 * 3 + 5), 8,
                NET_CONTENTION_MAXMIN, FOLD_YES);
  /* channels of two sizes: channel 0 holds one element more */
  compare_fold ("hierarchical", &nodes8, 64, 8 * (8 * 1001 + 3) + 1, 8,
                NET_CONTENTION_MAXMIN, FOLD_NO);
  /* GPUs sharing a node's NIC: turning GPUs moves no NIC link, so the
   * NIC's links are cycles of one */
  compare_fold ("hierarchical", &shared8, 64, 8 * (8 * 1001 + 3), 8,
                NET_CONTENTION_MAXMIN, FOLD_NO);
}

/* A transfer handed to the network while a flow-class collective holds it
 * breaks the caller's promise: dtsim stops rather than give wrong times. */
static void
test_claim (void)
{
  if (g_test_subprocess ())
    {
      EngSim *sim = eng_sim_new ();
      Topo star = { "star", 0, FALSE };
      NetNetwork *net = network_new (sim, &star, 4, NET_CONTENTION_MAXMIN);

      g_assert_true (net_network_claim (net));
      g_assert_false (net_network_claim (net));
      net_send (net, 0, 1, 1e3, 1, on_other, NULL, NULL);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*flow-class collective holds it*");
}

/* The text of the first column of the first row `sql` returns from `db`,
 * newly allocated, or NULL when there is none. */
static char *
query_text (const char *db, const char *sql)
{
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  char *out = NULL;

  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==,
                   SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (h, sql, -1, &st, NULL), ==, SQLITE_OK);
  if (sqlite3_step (st) == SQLITE_ROW)
    out = g_strdup ((const char *) sqlite3_column_text (st, 0));
  sqlite3_finalize (st);
  sqlite3_close (h);
  return out;
}

/* `dtsim run` of a timing-only data-parallel step of `params` elements
 * with the hierarchical all-reduce in `channels` channels: every table of
 * the trace is the same with flow classes on and off, but the run's
 * events and the params rows of the key and of the path taken, which is
 * `path` with flow classes on (2 iterations of one bucket in each
 * channel). */
static void
run_dtsim_pair (int channels, gint64 params, const char *path)
{
  g_autofree char *tmp = g_dir_make_tmp ("flowclass-XXXXXX", NULL);
  g_autofree char *ini = g_strdup_printf (
    "[scenario]\nname = fc\niterations = 2\n"
    "[cluster]\nworkers = 64\n"
    "[device]\nstep_time = 1ms\n"
    "[network]\ntopology = nodes\ngpus_per_node = 8\n"
    "nic = gpu\nstep_overhead = 10us\n"
    "[model]\nkind = timing\nparams = %" G_GINT64_FORMAT "\nflops = 1e6\n"
    "[policy]\nkind = allreduce\nalgorithm = hierarchical\n"
    "bucket_size = 0\nchannels = %d\n"
    "[kernels]\nbackend = none\n"
    "[trace]\ndetail = spans\n", params, channels);
  static const char *const tables[] = { "iterations", "spans", "metrics",
                                        NULL };
  g_autofree char *ini_path = g_build_filename (tmp, "fc.ini", NULL);
  g_autofree char *per_message = g_strdup_printf ("classes=0 detailed=%d",
                                                  2 * channels);
  char *digest[2], *ran[2], *sim_time[2], *events[2];

  g_assert_true (g_file_set_contents (ini_path, ini, -1, NULL));
  for (int off = 0; off < 2; off++)
    {
      g_autofree char *db = g_strdup_printf ("%s/fc%d.db", tmp, off);
      g_autofree char *o = NULL, *e = NULL;

      g_assert_cmpint (test_run_dtsim (tmp, &o, &e, "run", ini_path, "-o", db,
                                       "--quiet", "--set",
                                       off ? "network.flow_classes=off"
                                           : "network.flow_classes=auto",
                                       NULL), ==, 0);
      digest[off] = test_tables_digest (db, tables);
      ran[off] = query_text (db, "SELECT value FROM params"
                                 " WHERE key = 'network.flow_classes_path'");
      sim_time[off] = query_text (db, "SELECT printf('%.17g', sim_time)"
                                      " FROM runs");
      events[off] = query_text (db, "SELECT events FROM runs");
    }
  g_assert_cmpstr (digest[0], ==, digest[1]);
  g_assert_cmpstr (sim_time[0], ==, sim_time[1]);
  g_assert_cmpstr (ran[0], ==, path);
  g_assert_cmpstr (ran[1], ==, per_message);
  if (strcmp (path, per_message) != 0)
    g_assert_cmpint (atoll (events[0]), <, atoll (events[1]));
  else
    g_assert_cmpstr (events[0], ==, events[1]);
  for (int i = 0; i < 2; i++)
    {
      g_free (digest[i]);
      g_free (ran[i]);
      g_free (sim_time[i]);
      g_free (events[i]);
    }
  sim_remove_tree (tmp);
}

/* One channel, two whose blocks match (2^20 elements: 2^19 per channel,
 * 2^16 per GPU), and three of unequal sizes (349,526 elements in the
 * first, 349,525 in the others), which run per message; eight, one per
 * GPU of a node, of 8,003 elements each (chunks of two sizes), which run
 * folded. */
static void
test_run (void)
{
  run_dtsim_pair (1, 1048576, "classes=2 detailed=0");
  run_dtsim_pair (2, 1048576, "classes=4 detailed=0");
  run_dtsim_pair (3, 1048576, "classes=0 detailed=6");
  run_dtsim_pair (8, 8 * 8003, "classes=0 detailed=0 folded=16");
}

/* The events `dtsim check` estimates for a timing-only data-parallel run
 * whose buckets run as flow classes: one per round of each bucket's
 * all-reduce instead of its transfers' (sim/estimate.c), where the run
 * would take the class path; per message where it would not (flow classes
 * off, a trace of every message, GPUs sharing a NIC, several channels). */
static void
test_estimate (void)
{
  const char *ini = "[scenario]\nname = fc\niterations = 3\n"
                    "[cluster]\nworkers = 64\n"
                    "[device]\nstep_time = 1ms\n"
                    "[network]\ntopology = nodes\ngpus_per_node = 8\n"
                    "nic = gpu\n"
                    "[model]\nkind = timing\nparams = 1000003\nflops = 1e6\n"
                    "[policy]\nkind = allreduce\nalgorithm = hierarchical\n"
                    "bucket_size = 1MB\n"
                    "[kernels]\nbackend = none\n"
                    "[trace]\ndetail = spans\n";
  static const char *const per_message[] = {
    "network.flow_classes=off", "trace.detail=messages", "network.nic=node",
    "policy.channels=2", NULL };
  const double I = 3, W = 64, g = 8, m = W / g;
  /* 1,000,003 elements in buckets of 250,000: four full and one of 3 */
  const double full = 4, rounds = 2 * (g - 1) + 2 * (m - 1);
  const double n_last = 1000003 - 4 * 250000;
  double base_events;

  g_assert_cmpfloat (n_last, <, m * g);   /* the last bucket: no rounds */
  for (int i = -1; per_message[i < 0 ? 0 : i] != NULL; i++)
    {
      const char *sets[] = { i < 0 ? "network.flow_classes=auto"
                                   : per_message[i], NULL };
      g_autoptr (GPtrArray) configs = test_load_scenario_text (ini, sets);
      g_autoptr (GError) error = NULL;
      SimEstimate e;
      double all_messages;

      g_ptr_array_set_free_func (configs, (GDestroyNotify) sim_config_free);
      g_assert_true (sim_estimate (g_ptr_array_index (configs, 0), &e,
                                   &error));
      g_assert_no_error (error);
      all_messages = e.messages;
      if (i < 0)
        {
          /* the last bucket runs per message: its share of the transfers */
          double last_messages = all_messages / (full + 1);

          g_assert_cmpfloat_with_epsilon (
            e.events, 1.5 * last_messages + I * full * rounds + 4 * I * W,
            1e-9 * e.events);
          base_events = e.events;
          continue;
        }
      g_assert_cmpfloat (e.events, >, base_events);
      g_assert_cmpfloat_with_epsilon (
        e.events, 1.5 * all_messages + 4 * I * W, 1e-9 * e.events);
    }
}

/* A bandwidth ceiling (docs/collectives.md, "Bandwidth ceilings") keeps
 * the two paths equal: a ring all-reduce under LL128 on one node of 8
 * Hopper GPUs, whose NVLink (NVL_BW x 120/128 of data) is faster than
 * LL128's 36.7 GB/s per channel, takes longer than on no GPU NCCL knows,
 * and takes the same time as flow classes and per message, with blocks of
 * one size and of two (each class of blocks its own wait). */
static void
test_rate_cap (void)
{
  static const Topo nodes8 = { "nodes", 8, TRUE };
  const CommProtocol *ll128 = comm_protocol_lookup ("ll128");
  static const gsize sizes[] = { 8 * 4096, 8 * 4096 + 3 };

  for (gsize i = 0; i < G_N_ELEMENTS (sizes); i++)
    for (int mm = 0; mm < 2; mm++)
      {
        NetContention c = mm ? NET_CONTENTION_MAXMIN : NET_CONTENTION_NONE;
        Outcome on = run_arch ("ring", COMM_ALLREDUCE, &nodes8, 8, sizes[i], 4,
                               c, DISTURB_NONE, TRUE, COMM_ARCH_HOPPER, ll128);
        Outcome off = run_arch ("ring", COMM_ALLREDUCE, &nodes8, 8, sizes[i], 4,
                                c, DISTURB_NONE, FALSE, COMM_ARCH_HOPPER, ll128);
        Outcome free_ = run_arch ("ring", COMM_ALLREDUCE, &nodes8, 8, sizes[i],
                                  4, c, DISTURB_NONE, TRUE, COMM_ARCH_OTHER,
                                  ll128);

        g_assert_true (on.classes);
        g_assert_false (off.classes);
        g_assert_cmpfloat_with_epsilon (on.t_done, off.t_done, 1e-9 * off.t_done);
        g_assert_cmpfloat (on.t_done, >, free_.t_done);
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/flowclass/symmetric", test_symmetric);
  g_test_add_func ("/flowclass/unequal", test_unequal);
  g_test_add_func ("/flowclass/fallback", test_fallback);
  g_test_add_func ("/flowclass/channels", test_channels);
  g_test_add_func ("/flowclass/fold", test_fold);
  g_test_add_func ("/flowclass/claim", test_claim);
  g_test_add_func ("/flowclass/run", test_run);
  g_test_add_func ("/flowclass/estimate", test_estimate);
  g_test_add_func ("/flowclass/rate-cap", test_rate_cap);
  return g_test_run ();
}
