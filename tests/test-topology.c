/*
 * test-topology.c — tests of the topologies (netmodel/racks.c, fattree.c,
 * ring.c, nodes.c, dgx1.c, torus.c, star.c) and of named links.
 *
 * Expected times are closed forms written as formulas: B is a host link's
 * bandwidth, l its latency, sl a switch-to-switch link's latency, b a
 * transfer's size, L a route's latency.  Times are compared to 1e-9
 * relative.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"

#define B     1.25e9  /* bytes/s (10 Gb/s), host links */
#define LAT   5e-6    /* s, host links */
#define SLAT  1e-6    /* s, switch-to-switch links */
#define MSG   1e6     /* bytes */
#define MAX_TAGS 64
#define MAX_ROUTE 64  /* links, longer than any route tested */

/* Asserts that time `got` equals `want` to 1e-9 relative (exactly at 0). */
#define assert_time(got, want) \
  g_assert_cmpfloat_with_epsilon ((got), (want), \
                                  1e-9 * fabs ((double) (want)) + 1e-300)

/* A network built by one topology on its own engine, hosts h0, h1, ... */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  GPtrArray *names;     /* char*, owned */
  double end[MAX_TAGS]; /* s, end time by tag; -1 until done */
  int n_done;
} Fixture;

static GPtrArray *
host_names (int n)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);

  for (int h = 0; h < n; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  return names;
}

/* The topology keys of the params built last (one set at a time). */
static BaseValues *values;

/* Params with hosts h0 .. h<n-1>, bandwidth B, latency LAT, rest default. */
static NetTopologyParams
params (GPtrArray *names)
{
  NetTopologyParams p = { 0 };

  base_values_free (values);
  values = net_topology_values_new ();
  p.values = values;

  p.n_hosts = (int) names->len;
  p.names = (const char *const *) names->pdata;
  p.bandwidth = B;
  p.latency = LAT;
  return p;
}

/* Sets the topology key [network] key of p, built by params(). */
static void
set_int (NetTopologyParams *p, const char *key, gint64 v)
{
  g_autofree char *name = g_strdup_printf ("network.%s", key);
  g_assert_true (p->values == values);
  base_values_set_int (values, name, v);
}

static void
set_double (NetTopologyParams *p, const char *key, double v)
{
  g_autofree char *name = g_strdup_printf ("network.%s", key);
  g_assert_true (p->values == values);
  base_values_set_double (values, name, v);
}

/* Builds `topology` with `p` (whose names are taken from fx->names). */
static void
fixture_init (Fixture *fx, const char *topology, NetTopologyParams p)
{
  g_autoptr (GError) error = NULL;
  const NetTopology *t = net_topology_lookup (topology);

  g_assert_nonnull (t);
  fx->sim = eng_sim_new ();
  fx->net = net_network_new (fx->sim, NET_CONTENTION_MAXMIN);
  for (int i = 0; i < MAX_TAGS; i++)
    fx->end[i] = -1;
  fx->n_done = 0;
  g_assert_true (t->build (fx->net, &p, &error));
  g_assert_no_error (error);
  g_assert_cmpint (net_network_n_hosts (fx->net), ==, p.n_hosts);
}

static void
fixture_clear (Fixture *fx)
{
  net_network_free (fx->net);
  eng_sim_free (fx->sim);
  g_ptr_array_unref (fx->names);
}

static void
record_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED,
             const NetTransfer *t)
{
  Fixture *fx = ctx;

  g_assert_cmpint (t->tag, >=, 0);
  g_assert_cmpint (t->tag, <, MAX_TAGS);
  g_assert_cmpfloat (fx->end[t->tag], ==, -1);
  fx->end[t->tag] = t->end;
  fx->n_done++;
}

static void
send (Fixture *fx, int src, int dst, double bytes, int tag)
{
  net_send (fx->net, src, dst, bytes, tag, record_done, fx, NULL);
}

static int
link_id (const NetNetwork *net, const char *name)
{
  int id = net_network_link_id (net, name);

  if (id < 0)
    g_error ("no link named %s", name);
  return id;
}

/* Asserts that the route src -> dst is exactly the links named in `names`
 * (NULL-terminated). */
static void
assert_route (const NetNetwork *net, int src, int dst,
              const char *const *names)
{
  int links[MAX_ROUTE];
  int n = net_network_route_links (net, src, dst, links, MAX_ROUTE);

  g_assert_cmpint (n, ==, (int) g_strv_length ((char **) names));
  for (int i = 0; i < n; i++)
    g_assert_cmpstr (net_network_link_name (net, links[i]), ==, names[i]);
}

/* --- racks --------------------------------------------------------------- */

/* Two racks of 8 with oversubscription 8, so a rack's uplink U = 8 B / 8 = B.
 * N flows from hosts 0..N-1 (rack 0) to hosts 8..8+N-1 (rack 1) share
 * rack0.up and rack1.down, each getting U / N < B: they end at
 * 2 l + 2 sl + b / (U / N).  Same-rack flows 7 -> 6 and 15 -> 14 run at B
 * alongside: 2 l + b / B. */
static void
test_racks_uplink_shared (void)
{
  for (int n = 1; n <= 4; n++)
    {
      Fixture fx;
      NetTopologyParams p;
      double uplink = 8 * B / 8.0;  /* bytes/s */

      fx.names = host_names (16);
      p = params (fx.names);
      set_int (&p, "rack_size", 8);
      set_double (&p, "oversubscription", 8);
      set_double (&p, "switch_latency", SLAT);
      fixture_init (&fx, "racks", p);
      assert_time (net_network_link_bandwidth (fx.net,
                                               link_id (fx.net, "rack0.up")),
                   uplink);
      for (int i = 0; i < n; i++)
        send (&fx, i, 8 + i, MSG, i);
      send (&fx, 7, 6, MSG, 10);
      send (&fx, 15, 14, MSG, 11);
      eng_run (fx.sim, INFINITY);
      g_assert_cmpint (fx.n_done, ==, n + 2);
      for (int i = 0; i < n; i++)
        assert_time (fx.end[i], 2 * LAT + 2 * SLAT + MSG / (uplink / n));
      assert_time (fx.end[10], 2 * LAT + MSG / B);
      assert_time (fx.end[11], 2 * LAT + MSG / B);
      fixture_clear (&fx);
    }
}

/* Same-rack routes are [a.up, b.down]; cross-rack ones add the rack links. */
static void
test_racks_routes (void)
{
  Fixture fx;
  NetTopologyParams p;
  const char *same[] = { "h1.up", "h2.down", NULL };
  const char *cross[] = { "h1.up", "rack0.up", "rack2.down", "h9.down", NULL };
  const char *last[] = { "h9.up", "rack2.up", "rack0.down", "h0.down", NULL };

  fx.names = host_names (10);   /* racks of 4: 4, 4, 2 */
  p = params (fx.names);
  set_int (&p, "rack_size", 4);
  set_double (&p, "oversubscription", 2);
  set_double (&p, "switch_latency", SLAT);
  fixture_init (&fx, "racks", p);
  assert_route (fx.net, 1, 2, same);
  assert_route (fx.net, 1, 9, cross);
  assert_route (fx.net, 9, 0, last);
  assert_time (net_network_route_latency (fx.net, 1, 2), 2 * LAT);
  assert_time (net_network_route_latency (fx.net, 1, 9), 2 * LAT + 2 * SLAT);
  assert_time (net_network_route_bandwidth (fx.net, 1, 9), B);
  assert_time (net_network_link_bandwidth (fx.net,
                                           link_id (fx.net, "rack2.down")),
               4 * B / 2);
  g_assert_cmpint (net_network_n_links (fx.net), ==, 2 * 10 + 2 * 3);
  fixture_clear (&fx);
}

/* A host may not be named rack<r> for a rack r that exists (its links
 * would take rack r's names): with racks of 2 on 6 hosts (racks 0..2),
 * "rack2" is refused, naming the lowest such rack, while "rack3", "rack02"
 * and "rack" are fine. */
static void
test_racks_host_names (void)
{
  const struct { const char *a, *b; int taken; } cases[] = {
    { "rack2", "x", 2 }, { "rack2", "rack1", 1 }, { "rack3", "rack02", -1 },
    { "rack", "racks", -1 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GPtrArray) names = host_names (6);
      g_autoptr (GError) error = NULL;
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
      NetTopologyParams p;

      g_free (names->pdata[0]);
      names->pdata[0] = g_strdup (cases[i].a);
      g_free (names->pdata[5]);
      names->pdata[5] = g_strdup (cases[i].b);
      p = params (names);
      set_int (&p, "rack_size", 2);
      if (cases[i].taken < 0)
        {
          g_assert_true (net_topology_lookup ("racks")->build (net, &p,
                                                               &error));
          g_assert_no_error (error);
        }
      else
        {
          g_autofree char *want = g_strdup_printf ("'rack%d' is taken",
                                                   cases[i].taken);

          g_assert_false (net_topology_lookup ("racks")->build (net, &p,
                                                                &error));
          g_test_message ("%s", error->message);
          g_assert_nonnull (strstr (error->message, want));
        }
      net_network_free (net);
      eng_sim_free (sim);
    }
}

/* Incast: N = 1..8 senders in rack 0 to host 8 in rack 1 (non-blocking
 * racks) share its downlink: all end at L + N b / B, L = 2 l + 2 sl. */
static void
test_racks_incast (void)
{
  for (int n = 1; n <= 8; n++)
    {
      Fixture fx;
      NetTopologyParams p;

      fx.names = host_names (16);
      p = params (fx.names);
      set_int (&p, "rack_size", 8);
      set_double (&p, "switch_latency", SLAT);
      fixture_init (&fx, "racks", p);
      for (int i = 0; i < n; i++)
        send (&fx, i, 8, MSG, i);
      eng_run (fx.sim, INFINITY);
      g_assert_cmpint (fx.n_done, ==, n);
      for (int i = 0; i < n; i++)
        assert_time (fx.end[i], 2 * LAT + 2 * SLAT + n * MSG / B);
      fixture_clear (&fx);
    }
}

/* --- fat-tree ------------------------------------------------------------ */

/* k = 4, 16 hosts: 2 hosts per edge, 4 per pod.  Routes are 2 links under
 * one edge, 4 within a pod, 6 across pods; latency 2 l + (links - 2) sl. */
static void
test_fat_tree_route_lengths (void)
{
  int sizes[] = { 16, 5, 2 };

  for (gsize t = 0; t < G_N_ELEMENTS (sizes); t++)
    {
      Fixture fx;
      NetTopologyParams p;
      int n = sizes[t];

      fx.names = host_names (n);
      p = params (fx.names);
      set_int (&p, "fat_tree_k", n == 2 ? 0 : 4);   /* 0: k = 2 holds 2 hosts */
      set_double (&p, "switch_latency", SLAT);
      fixture_init (&fx, "fat-tree", p);
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
          {
            int len, want;
            int half = n == 2 ? 1 : 2;

            if (a == b)
              continue;
            len = net_network_route_links (fx.net, a, b, NULL, 0);
            want = a / half == b / half ? 2
                   : a / (half * half) == b / (half * half) ? 4 : 6;
            g_assert_cmpint (len, ==, want);
            assert_time (net_network_route_latency (fx.net, a, b),
                         2 * LAT + (want - 2) * SLAT);
            assert_time (net_network_route_bandwidth (fx.net, a, b), B);
          }
      fixture_clear (&fx);
    }
}

/* The core switch of the route src -> dst across pods (from the name of its
 * third link, "pod<p>.agg<a>.core<c>.up"). */
static int
route_core (const NetNetwork *net, int src, int dst)
{
  int pod, agg, core, links[MAX_ROUTE];
  int n = net_network_route_links (net, src, dst, links, MAX_ROUTE);

  g_assert_cmpint (n, ==, 6);
  g_assert_cmpint (sscanf (net_network_link_name (net, links[2]),
                           "pod%d.agg%d.core%d.up", &pod, &agg, &core), ==, 3);
  return core;
}

/* The static hash spreads cross-pod routes over every core switch (k = 4: 4
 * cores; k = 8: 16), none with more than twice its even share, and builds
 * the same routes every time. */
static void
test_fat_tree_hash_spread (void)
{
  int ks[] = { 4, 8 };

  for (gsize t = 0; t < G_N_ELEMENTS (ks); t++)
    {
      int k = ks[t], n = k * k * k / 4, n_cores = k * k / 4;
      int per_pod = k * k / 4;
      int count[16] = { 0 }, total = 0;
      Fixture fx, again;
      NetTopologyParams p;

      fx.names = host_names (n);
      again.names = host_names (n);
      p = params (fx.names);
      set_int (&p, "fat_tree_k", k);
      fixture_init (&fx, "fat-tree", p);
      fixture_init (&again, "fat-tree", p);
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
          {
            int n1, n2, r1[MAX_ROUTE], r2[MAX_ROUTE];

            if (a == b)
              continue;
            n1 = net_network_route_links (fx.net, a, b, r1, MAX_ROUTE);
            n2 = net_network_route_links (again.net, a, b, r2, MAX_ROUTE);
            g_assert_cmpint (n1, ==, n2);
            g_assert_cmpmem (r1, n1 * sizeof (int), r2, n2 * sizeof (int));
            if (a / per_pod != b / per_pod)
              {
                count[route_core (fx.net, a, b)]++;
                total++;
              }
          }
      for (int c = 0; c < n_cores; c++)
        {
          g_assert_cmpint (count[c], >, 0);
          g_assert_cmpint (count[c], <=, 2 * total / n_cores);
        }
      fixture_clear (&fx);
      fixture_clear (&again);
    }
}

/* Incast into host 0 from N = 1..8 hosts of pods 1 and 2: every link but
 * h0.down carries its flows at B / N at most, so all end at
 * L + N b / B, L = 2 l + 4 sl. */
static void
test_fat_tree_incast (void)
{
  for (int n = 1; n <= 8; n++)
    {
      Fixture fx;
      NetTopologyParams p;

      fx.names = host_names (16);
      p = params (fx.names);
      set_int (&p, "fat_tree_k", 4);
      set_double (&p, "switch_latency", SLAT);
      fixture_init (&fx, "fat-tree", p);
      for (int i = 0; i < n; i++)
        send (&fx, 4 + i, 0, MSG, i);
      eng_run (fx.sim, INFINITY);
      for (int i = 0; i < n; i++)
        assert_time (fx.end[i], 2 * LAT + 4 * SLAT + n * MSG / B);
      fixture_clear (&fx);
    }
}

/* --- ring ---------------------------------------------------------------- */

/* Routes go the shorter way (clockwise on a tie) over every link between
 * the hosts: hops = min (cw, n - cw), latency hops * l. */
static void
test_ring_routes (void)
{
  int sizes[] = { 2, 3, 5, 6 };

  for (gsize t = 0; t < G_N_ELEMENTS (sizes); t++)
    {
      Fixture fx;
      int n = sizes[t];

      fx.names = host_names (n);
      fixture_init (&fx, "ring", params (fx.names));
      g_assert_cmpint (net_network_n_links (fx.net), ==, n == 2 ? 2 : 2 * n);
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
          {
            int cw = (b - a + n) % n, len;
            gboolean clockwise = cw <= n - cw;
            int hops = clockwise ? cw : n - cw;
            int links[MAX_ROUTE];

            if (a == b)
              continue;
            len = net_network_route_links (fx.net, a, b, links, MAX_ROUTE);
            g_assert_cmpint (len, ==, hops);
            for (int i = 0; i < hops; i++)
              {
                int from = clockwise ? (a + i) % n : (a - i + n) % n;
                int to = clockwise ? (from + 1) % n : (from - 1 + n) % n;
                g_autofree char *name = g_strdup_printf ("h%d->h%d", from, to);

                g_assert_cmpstr (net_network_link_name (fx.net, links[i]), ==,
                                 name);
              }
            assert_time (net_network_route_latency (fx.net, a, b), hops * LAT);
          }
      fixture_clear (&fx);
    }
}

/* Ring of 4: A = h0 -> h2 (via h1) and C = h1 -> h2 share h1->h2.  C enters
 * at l and runs alone at B until A enters at 2 l (having sent B l); then each
 * gets B / 2: C ends at 2 l + 2 (b - B l) / B = 2 b / B, when A has b - B l
 * sent; A sends its last B l at B and ends at 2 b / B + l. */
static void
test_ring_pass_through (void)
{
  Fixture fx;

  fx.names = host_names (4);
  fixture_init (&fx, "ring", params (fx.names));
  send (&fx, 0, 2, MSG, 0);
  send (&fx, 1, 2, MSG, 1);
  send (&fx, 3, 2, MSG, 2);   /* counter-clockwise, h3->h2: alone */
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[1], 2 * MSG / B);
  assert_time (fx.end[0], 2 * MSG / B + LAT);
  assert_time (fx.end[2], LAT + MSG / B);
  fixture_clear (&fx);
}

/* --- nodes --------------------------------------------------------------- */

#define NVL_BW  (8 * B)  /* bytes/s */
#define NVL_LAT 1e-7     /* s */

/* 2 nodes of 4 GPUs, one NIC per node.  Same node: 2 il + b / NVL_BW over
 * NVLink.  GPUs 0 and 1 both sending to node 1 share node0.nic.up: each at
 * B / 2, ending at 2 il + 2 l + 2 b / B.  A GPU alone: 2 il + 2 l + b / B. */
static void
test_nodes_shared_nic (void)
{
  Fixture fx;
  NetTopologyParams p;
  const char *cross[] = { "node0.gpu1.nvlink.up", "node0.nic.up",
                          "node1.nic.down", "node1.gpu2.nvlink.down", NULL };

  fx.names = host_names (8);
  p = params (fx.names);
  set_int (&p, "gpus_per_node", 4);
  set_double (&p, "intra_bandwidth", NVL_BW);
  set_double (&p, "intra_latency", NVL_LAT);
  fixture_init (&fx, "nodes", p);
  assert_route (fx.net, 1, 6, cross);
  send (&fx, 2, 3, MSG, 0);   /* intra-node */
  send (&fx, 0, 4, MSG, 1);   /* two off-node from node 0 */
  send (&fx, 1, 5, MSG, 2);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * NVL_LAT + MSG / NVL_BW);
  assert_time (fx.end[1], 2 * NVL_LAT + 2 * LAT + 2 * MSG / B);
  assert_time (fx.end[2], 2 * NVL_LAT + 2 * LAT + 2 * MSG / B);
  fixture_clear (&fx);

  fx.names = host_names (8);
  p.names = (const char *const *) fx.names->pdata;
  fixture_init (&fx, "nodes", p);
  send (&fx, 7, 0, MSG, 0);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * NVL_LAT + 2 * LAT + MSG / B);
  fixture_clear (&fx);
}

/* With one NIC per GPU, the same two off-node transfers each get B:
 * 2 l + b / B; intra-node still over NVLink. */
static void
test_nodes_nic_per_gpu (void)
{
  Fixture fx;
  NetTopologyParams p;
  const char *cross[] = { "node0.gpu1.nic.up", "node1.gpu2.nic.down", NULL };
  const char *same[] = { "node1.gpu0.nvlink.up", "node1.gpu1.nvlink.down",
                         NULL };

  fx.names = host_names (8);
  p = params (fx.names);
  set_int (&p, "gpus_per_node", 4);
  set_double (&p, "intra_bandwidth", NVL_BW);
  set_double (&p, "intra_latency", NVL_LAT);
  set_int (&p, "nic", TRUE);
  fixture_init (&fx, "nodes", p);
  assert_route (fx.net, 1, 6, cross);
  assert_route (fx.net, 4, 5, same);
  send (&fx, 0, 4, MSG, 0);
  send (&fx, 1, 5, MSG, 1);
  send (&fx, 2, 3, MSG, 2);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * LAT + MSG / B);
  assert_time (fx.end[1], 2 * LAT + MSG / B);
  assert_time (fx.end[2], 2 * NVL_LAT + MSG / NVL_BW);
  fixture_clear (&fx);
}

/* Switches that reduce (nvswitch = sharp, ib_sharp = true): each GPU's
 * port to its node's switch crosses its NVLink and the switch's reduce or
 * multicast link of gpus x nvls_bandwidth; its port to the fabric, its NIC
 * (nic = node: its NVLink and the node's NIC).  Four GPUs sending up at
 * once share the reduce link, nvls_bandwidth each: L + b / S.  Without
 * sharp a node's GPUs have no port to it, and the fabric does not
 * reduce. */
static void
test_nodes_sharp_ports (void)
{
  Fixture fx;
  NetTopologyParams p;
  double S = B / 2;   /* below the NVLink's NVL_BW */
  int links[NET_PORT_HOPS];
  int sw;

  fx.names = host_names (8);
  p = params (fx.names);
  set_int (&p, "gpus_per_node", 4);
  set_double (&p, "intra_bandwidth", NVL_BW);
  set_double (&p, "intra_latency", NVL_LAT);
  set_int (&p, "nvswitch", TRUE);
  set_double (&p, "nvls_bandwidth", S);
  set_int (&p, "ib_sharp", TRUE);
  fixture_init (&fx, "nodes", p);
  sw = net_network_host_switch (fx.net, 5, 0);
  g_assert_cmpint (sw, >=, 0);
  g_assert_cmpstr (net_network_switch_name (fx.net, sw), ==, "node1.nvswitch");
  g_assert_true (net_network_switch_reduces (fx.net, sw));
  g_assert_cmpfloat (net_network_switch_rate (fx.net, sw), ==, S);
  g_assert_cmpint (net_network_host_switch (fx.net, 4, 0), ==, sw);
  g_assert_cmpint (net_network_host_switch (fx.net, 3, 0), !=, sw);
  g_assert_cmpint (net_network_port_links (fx.net, 5, 0, TRUE, links, NET_PORT_HOPS), ==, 2);
  g_assert_cmpstr (net_network_link_name (fx.net, links[0]), ==, "node1.gpu1.nvlink.up");
  g_assert_cmpstr (net_network_link_name (fx.net, links[1]), ==, "node1.nvswitch.reduce");
  g_assert_cmpfloat (net_network_link_bandwidth (fx.net, links[1]), ==, 4 * S);
  g_assert_cmpint (net_network_port_links (fx.net, 5, 0, FALSE, links, NET_PORT_HOPS), ==, 2);
  g_assert_cmpstr (net_network_link_name (fx.net, links[0]), ==, "node1.nvswitch.multicast");
  g_assert_cmpstr (net_network_link_name (fx.net, links[1]), ==, "node1.gpu1.nvlink.down");
  assert_time (net_network_port_latency (fx.net, 5, 0, TRUE), NVL_LAT);
  assert_time (net_network_port_bandwidth (fx.net, 5, 0, TRUE), MIN (NVL_BW, 4 * S));
  /* the fabric, through the node's NIC */
  sw = net_network_host_switch (fx.net, 5, 1);
  g_assert_cmpstr (net_network_switch_name (fx.net, sw), ==, "fabric");
  g_assert_true (net_network_switch_reduces (fx.net, sw));
  g_assert_cmpint (net_network_port_links (fx.net, 5, 1, TRUE, links, NET_PORT_HOPS), ==, 2);
  g_assert_cmpstr (net_network_link_name (fx.net, links[1]), ==, "node1.nic.up");
  for (int h = 4; h < 8; h++)
    net_send_port (fx.net, h, 0, TRUE, MSG, 0, 0, NULL, NULL, NULL);
  eng_run (fx.sim, INFINITY);
  assert_time (eng_sim_now (fx.sim), NVL_LAT + MSG / S);
  fixture_clear (&fx);

  fx.names = host_names (8);
  p.names = (const char *const *) fx.names->pdata;
  set_int (&p, "nvswitch", FALSE);
  set_int (&p, "ib_sharp", FALSE);
  fixture_init (&fx, "nodes", p);
  g_assert_cmpint (net_network_host_switch (fx.net, 5, 0), ==, -1);
  g_assert_false (net_network_switch_reduces (fx.net, net_network_host_switch (fx.net, 5, 1)));
  fixture_clear (&fx);
}

/* Defaults: 8 GPUs per node, intra_bandwidth 10 B, intra_latency 0. */
static void
test_nodes_defaults (void)
{
  Fixture fx;

  fx.names = host_names (10);
  fixture_init (&fx, "nodes", params (fx.names));
  assert_time (net_network_route_bandwidth (fx.net, 0, 7), 10 * B);
  g_assert_cmpfloat (net_network_route_latency (fx.net, 0, 7), ==, 0);
  assert_time (net_network_route_bandwidth (fx.net, 7, 8), B);
  assert_time (net_network_route_latency (fx.net, 7, 8), 2 * LAT);
  g_assert_cmpint (net_network_link_id (fx.net, "node1.gpu1.nvlink.up"), >=,
                   0);
  g_assert_cmpint (net_network_link_id (fx.net, "node1.gpu2.nvlink.up"), ==,
                   -1);
  fixture_clear (&fx);
}

/* --- dgx1 ---------------------------------------------------------------- */

/* The wiring of docs/network.md, written out here rather than read from
 * netmodel/dgx1.c: the GPU pairs of one DGX-1 joined by NVLink, with their
 * number of links (V100), each pair once. */
static const int dgx1_v100_pairs[][3] = {
  { 0, 1, 1 }, { 0, 2, 1 }, { 0, 3, 2 }, { 0, 4, 2 }, { 1, 2, 2 },
  { 1, 3, 1 }, { 1, 5, 2 }, { 2, 3, 2 }, { 2, 6, 1 }, { 3, 7, 1 },
  { 4, 5, 1 }, { 4, 6, 1 }, { 4, 7, 2 }, { 5, 6, 2 }, { 5, 7, 1 },
  { 6, 7, 2 },
};

/* The GPU relaying between two unconnected GPUs of a V100 server (each
 * unordered pair once, lower GPU first): the widest two-hop path, the
 * lowest GPU on a tie. */
static const int dgx1_v100_via[][3] = {
  { 0, 5, 1 }, { 0, 6, 2 }, { 0, 7, 4 }, { 1, 4, 0 }, { 1, 6, 5 },
  { 1, 7, 3 }, { 2, 4, 0 }, { 2, 5, 1 }, { 2, 7, 3 }, { 3, 4, 0 },
  { 3, 5, 1 }, { 3, 6, 2 },
};

/* NVLink links between GPUs a and b of one server (0 = none): V100 as
 * above; P100 one link wherever V100 has any. */
static int
dgx1_links (gboolean p100, int a, int b)
{
  for (gsize i = 0; i < G_N_ELEMENTS (dgx1_v100_pairs); i++)
    {
      const int *e = dgx1_v100_pairs[i];

      if ((e[0] == a && e[1] == b) || (e[0] == b && e[1] == a))
        return p100 ? 1 : e[2];
    }
  return 0;
}

/* The relaying GPU of unconnected a and b: V100 from the table; P100, where
 * every connection is one link, the lowest common neighbour, which is the
 * one in GPUs 0-3. */
static int
dgx1_via_of (gboolean p100, int a, int b)
{
  int lo = MIN (a, b), hi = MAX (a, b);

  if (p100)
    return hi - 4;
  for (gsize i = 0; i < G_N_ELEMENTS (dgx1_v100_via); i++)
    if (dgx1_v100_via[i][0] == lo && dgx1_v100_via[i][1] == hi)
      return dgx1_v100_via[i][2];
  g_assert_not_reached ();
}

/* Appends to `want` the link names of the route a -> b (a != b) on a dgx1
 * network, as docs/network.md gives them. */
static void
dgx1_expected_route (gboolean p100, int a, int b, GPtrArray *want)
{
  int s = a / 8, ga = a % 8, gb = b % 8, via;

  if (s != b / 8)
    {
      g_ptr_array_add (want, g_strdup_printf ("dgx%d.nic%d.up", s, ga / 2));
      g_ptr_array_add (want, g_strdup_printf ("dgx%d.nic%d.down", b / 8,
                                              gb / 2));
      return;
    }
  if (dgx1_links (p100, ga, gb) > 0)
    {
      g_ptr_array_add (want, g_strdup_printf ("dgx%d.gpu%d->gpu%d", s, ga,
                                              gb));
      return;
    }
  via = dgx1_via_of (p100, ga, gb);
  g_ptr_array_add (want, g_strdup_printf ("dgx%d.gpu%d->gpu%d", s, ga, via));
  g_ptr_array_add (want, g_strdup_printf ("dgx%d.gpu%d->gpu%d", s, via, gb));
}

/* Builds dgx1 on fx->names (already set) with [network] mesh = p100 or not,
 * intra_bandwidth NVL_BW and intra_latency NVL_LAT. */
static void
dgx1_init (Fixture *fx, gboolean p100)
{
  NetTopologyParams p = params (fx->names);

  set_int (&p, "mesh", p100 ? 1 : 0);
  set_double (&p, "intra_bandwidth", NVL_BW);
  set_double (&p, "intra_latency", NVL_LAT);
  fixture_init (fx, "dgx1", p);
}

/* One-way NVLink links among the first `g` GPUs of a server. */
static int
dgx1_expected_nvlinks (gboolean p100, int g)
{
  int n = 0;

  for (int a = 0; a < g; a++)
    for (int b = 0; b < g; b++)
      n += a != b && dgx1_links (p100, a, b) > 0;
  return n;
}

/* Links, with the defaults (no intra_bandwidth: 25 GB/s per NVLink link on
 * V100, 20 on P100): one per direction per connected pair, "dgx<s>.gpu<a>->
 * gpu<b>", of (links) x the link rate; none between unconnected GPUs; four
 * NICs per full server, ceil(g / 2) in a last one of g GPUs, of B and l.
 * One full V100 server: 16 pairs, 32 NVLink links (48 NVLink links of the
 * hardware, 8 pairs doubled) and 8 NIC links. */
static void
test_dgx1_links (void)
{
  const int sizes[] = { 8, 10, 13, 16 };

  for (int p100 = 0; p100 <= 1; p100++)
    for (gsize i = 0; i < G_N_ELEMENTS (sizes); i++)
      {
        int n = sizes[i], last = n - (n - 1) / 8 * 8;
        double link_bw = p100 ? 20e9 : 25e9;
        Fixture fx;
        NetTopologyParams p;

        fx.names = host_names (n);
        p = params (fx.names);
        set_int (&p, "mesh", p100);
        fixture_init (&fx, "dgx1", p);
        g_assert_cmpint (net_network_n_links (fx.net), ==,
                         (n - 1) / 8 * (dgx1_expected_nvlinks (p100, 8) + 8)
                         + dgx1_expected_nvlinks (p100, last)
                         + 2 * ((last + 1) / 2));
        for (int a = 0; a < n; a++)
          for (int b = a / 8 * 8; b < MIN (n, a / 8 * 8 + 8); b++)
            {
              g_autofree char *name
                = g_strdup_printf ("dgx%d.gpu%d->gpu%d", a / 8, a % 8, b % 8);
              int c = dgx1_links (p100, a % 8, b % 8);
              int id = net_network_link_id (fx.net, name);

              g_assert_cmpint (id >= 0, ==, c > 0);
              if (c > 0)
                {
                  assert_time (net_network_link_bandwidth (fx.net, id),
                               c * link_bw);
                  g_assert_cmpfloat (net_network_link_latency (fx.net, id),
                                     ==, 0);
                }
            }
        for (int k = 0; k < 4; k++)
          {
            g_autofree char *up = g_strdup_printf ("dgx%d.nic%d.up",
                                                   (n - 1) / 8, k);
            int id = net_network_link_id (fx.net, up);

            g_assert_cmpint (id >= 0, ==, 2 * k < last);
            if (id >= 0)
              {
                assert_time (net_network_link_bandwidth (fx.net, id), B);
                assert_time (net_network_link_latency (fx.net, id), LAT);
              }
          }
        fixture_clear (&fx);
      }
}

/* Every ordered pair of one server, V100 and P100: a connected pair's route
 * is its one link, of (links) x NVL_BW and latency il; any other pair's is
 * two links through the GPU of the docs' table, of the thinner link's
 * bandwidth and latency 2 il. */
static void
test_dgx1_server_routes (void)
{
  for (int p100 = 0; p100 <= 1; p100++)
    {
      Fixture fx;
      int direct = 0, relayed = 0;

      fx.names = host_names (8);
      dgx1_init (&fx, p100);
      for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
          {
            g_autoptr (GPtrArray) want
              = g_ptr_array_new_with_free_func (g_free);
            int c = dgx1_links (p100, a, b);

            if (a == b)
              continue;
            dgx1_expected_route (p100, a, b, want);
            g_ptr_array_add (want, NULL);
            assert_route (fx.net, a, b, (const char *const *) want->pdata);
            if (c > 0)
              {
                direct++;
                assert_time (net_network_route_bandwidth (fx.net, a, b),
                             c * NVL_BW);
                assert_time (net_network_route_latency (fx.net, a, b),
                             NVL_LAT);
              }
            else
              {
                int via = dgx1_via_of (p100, a, b);
                int thin = MIN (dgx1_links (p100, a, via),
                                dgx1_links (p100, via, b));

                relayed++;
                assert_time (net_network_route_bandwidth (fx.net, a, b),
                             thin * NVL_BW);
                assert_time (net_network_route_latency (fx.net, a, b),
                             2 * NVL_LAT);
              }
          }
      /* 16 connected pairs of 28, both ways */
      g_assert_cmpint (direct, ==, 32);
      g_assert_cmpint (relayed, ==, 24);
      fixture_clear (&fx);
    }
}

/* Seconds one transfer of MSG bytes from src to dst takes alone on a V100
 * dgx1 network of n GPUs. */
static double
dgx1_alone (int n, int src, int dst)
{
  Fixture fx;
  double t;

  fx.names = host_names (n);
  dgx1_init (&fx, FALSE);
  send (&fx, src, dst, MSG, 0);
  eng_run (fx.sim, INFINITY);
  t = fx.end[0];
  fixture_clear (&fx);
  return t;
}

/* A transfer alone, V100: over one NVLink link (0 -> 1) il + b / iB; over a
 * pair of two (0 -> 3) il + b / (2 iB); relayed 0 -> 1 -> 5 (one link, then
 * two) 2 il + b / iB; relayed 0 -> 4 -> 7 (two, then two) 2 il + b / (2 iB);
 * across servers (GPU 0 -> GPU 8) 2 l + b / B. */
static void
test_dgx1_transfer_times (void)
{
  assert_time (dgx1_alone (8, 0, 1), NVL_LAT + MSG / NVL_BW);
  assert_time (dgx1_alone (8, 0, 3), NVL_LAT + MSG / (2 * NVL_BW));
  assert_time (dgx1_alone (8, 0, 5), 2 * NVL_LAT + MSG / NVL_BW);
  assert_time (dgx1_alone (8, 0, 7), 2 * NVL_LAT + MSG / (2 * NVL_BW));
  assert_time (dgx1_alone (16, 0, 8), 2 * LAT + MSG / B);
  assert_time (dgx1_alone (16, 15, 6), 2 * LAT + MSG / B);
}

/* Max-min on shared links, V100, two servers.  0 -> 5 (relayed by 1: links
 * 0->1, 1->5) and 4 -> 1 (relayed by 0: 4->0, 0->1) share 0->1, one link:
 * iB / 2 each, ending at 2 il + b / (iB / 2); 2 -> 3 beside them, on its own
 * pair of two links, at il + b / (2 iB).  GPUs 0 and 1 share NIC 0: 0 -> 8
 * and 1 -> 9 get B / 2 each (2 l + b / (B / 2)), while 2 -> 10, on NIC 1,
 * gets B (2 l + b / B). */
static void
test_dgx1_contention (void)
{
  Fixture fx;

  fx.names = host_names (16);
  dgx1_init (&fx, FALSE);
  send (&fx, 0, 5, MSG, 0);
  send (&fx, 4, 1, MSG, 1);
  send (&fx, 2, 3, MSG, 2);
  send (&fx, 0, 8, MSG, 3);
  send (&fx, 1, 9, MSG, 4);
  send (&fx, 2, 10, MSG, 5);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * NVL_LAT + MSG / (NVL_BW / 2));
  assert_time (fx.end[1], 2 * NVL_LAT + MSG / (NVL_BW / 2));
  assert_time (fx.end[2], NVL_LAT + MSG / (2 * NVL_BW));
  assert_time (fx.end[3], 2 * LAT + MSG / (B / 2));
  assert_time (fx.end[4], 2 * LAT + MSG / (B / 2));
  assert_time (fx.end[5], 2 * LAT + MSG / B);
  fixture_clear (&fx);
}

/* Every size from 1 to 17 GPUs (a last server of every size), V100 and
 * P100: the route of every ordered pair, computed on demand, is the one
 * of docs/network.md (a partial server keeps the full server's wiring among
 * the GPUs it has, and every relaying GPU of the table is one of them),
 * with latency and bandwidth from its links; routes take O(GPUs) memory. */
static void
test_dgx1_routes_on_demand (void)
{
  for (int p100 = 0; p100 <= 1; p100++)
    for (int n = 1; n <= 17; n++)
      {
        Fixture fx;

        fx.names = host_names (n);
        dgx1_init (&fx, p100);
        for (int a = 0; a < n; a++)
          for (int b = 0; b < n; b++)
            {
              g_autoptr (GPtrArray) want
                = g_ptr_array_new_with_free_func (g_free);
              int links[MAX_ROUTE];
              double lat = 0, bw = INFINITY;
              int len;

              if (a == b)
                continue;
              dgx1_expected_route (p100, a, b, want);
              len = net_network_route_links (fx.net, a, b, links, MAX_ROUTE);
              g_assert_cmpint (len, ==, (int) want->len);
              for (int i = 0; i < len; i++)
                {
                  g_assert_cmpint (links[i], ==, link_id (fx.net,
                                                          want->pdata[i]));
                  lat += net_network_link_latency (fx.net, links[i]);
                  bw = MIN (bw, net_network_link_bandwidth (fx.net,
                                                            links[i]));
                }
              g_assert_cmpfloat (net_network_route_latency (fx.net, a, b),
                                 ==, lat);
              g_assert_cmpfloat (net_network_route_bandwidth (fx.net, a, b),
                                 ==, bw);
            }
        g_assert_cmpuint (net_network_route_bytes (fx.net), <=,
                          256 + sizeof (int) * 6 * (gsize) n);
        fixture_clear (&fx);
      }
}

/* t's build refuses p on net with one line that starts with `prefix` and
 * holds `want`, adding nothing, and t has no summary of p. */
static void
assert_refused (const NetTopology *t, NetNetwork *net, NetTopologyParams *p,
                const char *prefix, const char *want)
{
  g_autoptr (GError) error = NULL;
  g_assert_false (t->build (net, p, &error));
  g_assert_error (error, NET_ERROR, NET_ERROR_INVALID);
  g_test_message ("%s", error->message);
  g_assert_true (g_str_has_prefix (error->message, prefix));
  g_assert_nonnull (strstr (error->message, want));
  g_assert_null (strchr (error->message, '\n'));
  g_assert_cmpint (net_network_n_hosts (net), ==, 0);
  g_assert_cmpint (net_network_n_links (net), ==, 0);
  g_assert_null (t->summary (p));
}

/* Refused parameters: one line "dgx1 topology: [network] <key>: ..." that
 * says what to write; nothing added, no summary. */
static void
test_dgx1_invalid (void)
{
  const struct {
    const char *key;   /* set to `value`, or NULL: a duplicate host name */
    double value;
    const char *want;  /* expected substring */
  } cases[] = {
    { "mesh", 2, "[network] mesh: expected v100 or p100" },
    { "mesh", -1, "write mesh = v100" },
    { "intra_bandwidth", -1, "[network] intra_bandwidth: expected" },
    { "intra_bandwidth", INFINITY, "write e.g. intra_bandwidth = 25GBps" },
    { "intra_bandwidth", 1e308, "[network] intra_bandwidth" },
    { "intra_latency", NAN, "[network] intra_latency: expected a latency" },
    { "intra_latency", -1e-6, "write e.g. intra_latency" },
    { "intra_efficiency", 1.5, "[network] intra_efficiency: expected a share" },
    { "intra_efficiency", -0.5, "write e.g. intra_efficiency = 0.8" },
    { NULL, 0, "host name 'h0' is used twice" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const NetTopology *t = net_topology_lookup ("dgx1");
      g_autoptr (GPtrArray) names = host_names (8);
      NetTopologyParams p = params (names);
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);

      if (cases[i].key == NULL)
        {
          g_free (names->pdata[7]);
          names->pdata[7] = g_strdup ("h0");
        }
      else if (g_str_equal (cases[i].key, "mesh"))
        set_int (&p, "mesh", (gint64) cases[i].value);
      else
        set_double (&p, cases[i].key, cases[i].value);
      assert_refused (t, net, &p, "dgx1 topology: ", cases[i].want);
      net_network_free (net);
      eng_sim_free (sim);
    }
}

/* The summary of one full V100 server gives its 40 links and its
 * bisection, the 6 NVLink links between GPUs 0-3 and 4-7 (pairs 0-4 and
 * 1-5 doubled, 2-6 and 3-7 single): 6 x 25 GB/s = 1200 Gbit/s; across
 * 4 servers, 2 servers' 8 NICs of B. */
static void
test_dgx1_summary (void)
{
  g_autoptr (GPtrArray) one = host_names (8);
  g_autoptr (GPtrArray) four = host_names (32);
  NetTopologyParams p = params (one);
  g_autofree char *s1 = net_topology_lookup ("dgx1")->summary (&p);
  g_autofree char *s4 = NULL;
  g_autofree char *cut4 = g_strdup_printf ("bisection bandwidth %.4g Gbit/s",
                                           8 * B * 8 / 1e9);

  g_test_message ("%s", s1);
  g_assert_nonnull (strstr (s1, "40 one-way links"));
  g_assert_nonnull (strstr (s1, "bisection bandwidth 1200 Gbit/s"));
  p = params (four);
  s4 = net_topology_lookup ("dgx1")->summary (&p);
  g_test_message ("%s", s4);
  g_assert_nonnull (strstr (s4, cut4));
}

/* --- torus --------------------------------------------------------------- */

/* One-way router links of the rings of one torus dimension of k routers:
 * two per router (one each way) from 3 routers on, one cable (2 links) for
 * 2, none for 1. */
static int
torus_ring_links (int k)
{
  return k >= 3 ? 2 * k : k == 2 ? 2 : 0;
}

/* Hops from coordinate a to b on a ring of k: the shorter way round. */
static int
torus_hops (int a, int b, int k)
{
  int d = ((b - a) % k + k) % k;

  return MIN (d, k - d);
}

/* Appends to `want` the names of the hops from coordinate a to b along one
 * ring of k routers (the shorter way, positive on a tie), in row or column
 * `other`, as docs/network.md names them; a ring of 2 has only "+" links. */
static void
torus_expected_hops (int a, int b, int k, gboolean along_x, int other,
                     GPtrArray *want)
{
  int d = ((b - a) % k + k) % k;
  gboolean positive = d <= k - d;
  char axis = along_x ? 'x' : 'y';

  for (int c = a; c != b; c = positive ? (c + 1) % k : (c - 1 + k) % k)
    g_ptr_array_add (want, g_strdup_printf (
                       "router%d.%d.%c%c", along_x ? c : other,
                       along_x ? other : c, axis,
                       positive || k == 2 ? '+' : '-'));
}

/* Builds a torus of X x Y (0 = derived) on n hosts, with `contention`. */
static void
torus_init (Fixture *fx, int n, int x, int y, NetContention contention)
{
  g_autoptr (GError) error = NULL;
  NetTopologyParams p;

  fx->names = host_names (n);
  p = params (fx->names);
  set_int (&p, "torus_x", x);
  set_int (&p, "torus_y", y);
  fx->sim = eng_sim_new ();
  fx->net = net_network_new (fx->sim, contention);
  for (int i = 0; i < MAX_TAGS; i++)
    fx->end[i] = -1;
  fx->n_done = 0;
  g_assert_true (net_topology_lookup ("torus")->build (fx->net, &p, &error));
  g_assert_no_error (error);
}

/* Tori full and partly filled, with rings of 1, 2, odd and even length:
 * host h sits at (h mod X, h div X); the route of every ordered pair is
 * h.up, the X hops in the source's row, the Y hops in the destination's
 * column, h.down, so it crosses 2 + min (dx, X - dx) + min (dy, Y - dy)
 * links and its latency is that many l; the link count is
 * 2 n + Y links(X) + X links(Y). */
static void
test_torus_routes (void)
{
  const struct { int n, x, y; } cases[] = {
    { 16, 4, 4 }, { 15, 5, 3 }, { 8, 3, 3 }, { 6, 2, 3 }, { 4, 2, 2 },
    { 4, 1, 4 }, { 4, 4, 1 }, { 5, 3, 2 }, { 20, 4, 6 }, { 2, 2, 1 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      int n = cases[i].n, X = cases[i].x, Y = cases[i].y;
      Fixture fx;

      g_test_message ("torus %d x %d, %d hosts", X, Y, n);
      torus_init (&fx, n, X, Y, NET_CONTENTION_MAXMIN);
      g_assert_cmpint (net_network_n_links (fx.net), ==,
                       2 * n + Y * torus_ring_links (X)
                       + X * torus_ring_links (Y));
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
          {
            g_autoptr (GPtrArray) want
              = g_ptr_array_new_with_free_func (g_free);
            int xa = a % X, ya = a / X, xb = b % X, yb = b / X;
            int hops = 2 + torus_hops (xa, xb, X) + torus_hops (ya, yb, Y);
            int links[MAX_ROUTE];
            int len;

            if (a == b)
              continue;
            g_ptr_array_add (want, g_strdup_printf ("h%d.up", a));
            torus_expected_hops (xa, xb, X, TRUE, ya, want);
            torus_expected_hops (ya, yb, Y, FALSE, xb, want);
            g_ptr_array_add (want, g_strdup_printf ("h%d.down", b));
            len = net_network_route_links (fx.net, a, b, links, MAX_ROUTE);
            g_assert_cmpint (len, ==, hops);
            g_assert_cmpint (len, ==, (int) want->len);
            for (int k = 0; k < len; k++)
              g_assert_cmpint (links[k], ==, link_id (fx.net, want->pdata[k]));
            assert_time (net_network_route_latency (fx.net, a, b), hops * LAT);
            g_assert_cmpfloat (net_network_route_bandwidth (fx.net, a, b),
                               ==, B);
          }
      fixture_clear (&fx);
    }
}

/* Dimension order and ties on a 4 x 4 torus: h0 (0,0) -> h5 (1,1) turns
 * at router (1,0); h0 -> h10 (2,2) is a tie both ways, taken positively;
 * h5 -> h0 goes the negative way; h3 (3,0) -> h12 (0,3) wraps round in
 * both dimensions. */
static void
test_torus_dimension_order (void)
{
  const char *r0_5[] = { "h0.up", "router0.0.x+", "router1.0.y+", "h5.down",
                         NULL };
  const char *r0_10[] = { "h0.up", "router0.0.x+", "router1.0.x+",
                          "router2.0.y+", "router2.1.y+", "h10.down", NULL };
  const char *r5_0[] = { "h5.up", "router1.1.x-", "router0.1.y-", "h0.down",
                         NULL };
  const char *r3_12[] = { "h3.up", "router3.0.x+", "router0.0.y-",
                          "h12.down", NULL };
  Fixture fx;

  torus_init (&fx, 16, 4, 4, NET_CONTENTION_MAXMIN);
  assert_route (fx.net, 0, 5, r0_5);
  assert_route (fx.net, 0, 10, r0_10);
  assert_route (fx.net, 5, 0, r5_0);
  assert_route (fx.net, 3, 12, r3_12);
  fixture_clear (&fx);
}

/* 4 x 4 torus.  A = h0 -> h2 and C = h1 -> h3 both cross router1.0.x+
 * (ties, taken positively), both with 4 links, so both enter their
 * bandwidth phase at 4 l.  D = h2 -> h1 (the negative way, 3 links) and
 * E = h4 -> h12 (Y only, a tie: router0.1.y+, router0.2.y+, 4 links) share
 * nothing with A or C.  With contention none every flow runs at B:
 * L + b / B.  Under max-min A and C get B / 2 each: 4 l + b / (B / 2),
 * while D and E, alone on their links, still take L + b / B. */
static void
test_torus_transfer_times (void)
{
  for (int maxmin = 0; maxmin <= 1; maxmin++)
    {
      Fixture fx;
      double shared = maxmin ? B / 2 : B;   /* bytes/s of A and C */

      torus_init (&fx, 16, 4, 4,
                  maxmin ? NET_CONTENTION_MAXMIN : NET_CONTENTION_NONE);
      send (&fx, 0, 2, MSG, 0);
      send (&fx, 1, 3, MSG, 1);
      send (&fx, 2, 1, MSG, 2);
      send (&fx, 4, 12, MSG, 3);
      eng_run (fx.sim, INFINITY);
      g_assert_cmpint (fx.n_done, ==, 4);
      assert_time (fx.end[0], (2 + 2) * LAT + MSG / shared);
      assert_time (fx.end[1], (2 + 2) * LAT + MSG / shared);
      assert_time (fx.end[2], (2 + 1) * LAT + MSG / B);
      assert_time (fx.end[3], (2 + 2) * LAT + MSG / B);
      fixture_clear (&fx);
    }
}

/* The shape when torus_x or torus_y is 0: both, X = ceil (sqrt (n)) and
 * Y = ceil (n / X); one, ceil (n / the other).  Read back from the links:
 * router (X-1, Y-1) exists, router (X, 0) and (0, Y) do not. */
static void
test_torus_shape (void)
{
  const struct { int n, x, y; } cases[] = {
    { 1, 0, 0 }, { 2, 0, 0 }, { 8, 0, 0 }, { 12, 0, 0 }, { 16, 0, 0 },
    { 17, 0, 0 }, { 10, 4, 0 }, { 7, 0, 2 }, { 9, 1, 0 },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      int n = cases[i].n, X = cases[i].x, Y = cases[i].y;
      Fixture fx;
      g_autofree char *last = NULL, *past_x = NULL, *past_y = NULL;

      if (X == 0 && Y == 0)
        X = (int) ceil (sqrt ((double) n));
      if (X == 0)
        X = (n + Y - 1) / Y;
      if (Y == 0)
        Y = (n + X - 1) / X;
      g_test_message ("%d hosts: %d x %d", n, X, Y);
      torus_init (&fx, n, cases[i].x, cases[i].y, NET_CONTENTION_MAXMIN);
      g_assert_cmpint (net_network_n_links (fx.net), ==,
                       2 * n + Y * torus_ring_links (X)
                       + X * torus_ring_links (Y));
      last = g_strdup_printf ("router%d.%d.%c+", X - 1, Y - 1,
                              X >= 2 ? 'x' : 'y');
      past_x = g_strdup_printf ("router%d.0.x+", X);
      past_y = g_strdup_printf ("router0.%d.y+", Y);
      if (X * Y > 1)
        g_assert_cmpint (net_network_link_id (fx.net, last), >=, 0);
      g_assert_cmpint (net_network_link_id (fx.net, past_x), ==, -1);
      g_assert_cmpint (net_network_link_id (fx.net, past_y), ==, -1);
      fixture_clear (&fx);
    }
}

/* Refused shapes: one line "torus topology: [network] <key>: ..." saying
 * what to write; nothing added, no summary. */
static void
test_torus_invalid (void)
{
  const struct {
    gint64 x, y;
    const char *want;   /* expected substring */
  } cases[] = {
    { -1, 0, "[network] torus_x: expected 1 to 131072 routers" },
    { 0, -3, "[network] torus_y: expected 1 to 131072 routers" },
    { 200000, 0, "write e.g. torus_x = 4" },
    { 4, 2, "[network] torus_y: a 4 x 2 torus holds 8 hosts, fewer than "
            "the 10 to place; write torus_y = 3" },
    { 1000, 1000, "[network] torus_y: a 1000 x 1000 torus has 1000000 "
                  "routers, more than 131072" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const NetTopology *t = net_topology_lookup ("torus");
      g_autoptr (GPtrArray) names = host_names (10);
      NetTopologyParams p = params (names);
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);

      set_int (&p, "torus_x", cases[i].x);
      set_int (&p, "torus_y", cases[i].y);
      assert_refused (t, net, &p, "torus topology: ", cases[i].want);
      net_network_free (net);
      eng_sim_free (sim);
    }
}

/* The summary of a full 6 x 6 torus: 2 n + 2 x 6 x 12 links; cutting X in
 * two cuts each of the 6 rows twice: 12 cables of B, fewer than the
 * floor (36 / 2) host links.  On a full 3 x 3 torus the host links bind:
 * floor (9 / 2) of B, fewer than the 2 x 3 cables cut. */
static void
test_torus_summary (void)
{
  g_autoptr (GPtrArray) big = host_names (36);
  g_autoptr (GPtrArray) small = host_names (9);
  NetTopologyParams p = params (big);
  g_autofree char *s6 = NULL, *s3 = NULL;
  g_autofree char *links = g_strdup_printf ("%d one-way links",
                                            2 * 36 + 2 * 6 * 12);
  g_autofree char *cut6 = g_strdup_printf ("bisection bandwidth %.4g Gbit/s",
                                           2 * 6 * B * 8 / 1e9);
  g_autofree char *cut3 = g_strdup_printf ("bisection bandwidth %.4g Gbit/s",
                                           (9 / 2) * B * 8 / 1e9);

  set_int (&p, "torus_x", 6);
  set_int (&p, "torus_y", 6);
  s6 = net_topology_lookup ("torus")->summary (&p);
  g_test_message ("%s", s6);
  g_assert_nonnull (strstr (s6, "on a 6 x 6 torus"));
  g_assert_nonnull (strstr (s6, links));
  g_assert_nonnull (strstr (s6, cut6));
  p = params (small);
  s3 = net_topology_lookup ("torus")->summary (&p);
  g_test_message ("%s", s3);
  g_assert_nonnull (strstr (s3, "on a 3 x 3 torus"));
  g_assert_nonnull (strstr (s3, cut3));
}

/* --- host groups ------------------------------------------------------- */

/* Locality for the collectives (net_network_host_group): nodes groups a
 * node's GPUs (10 GPUs, 4 per node: groups 0 0 0 0 1 1 1 1 2 2), dgx1 a
 * server's (8 each), racks a rack's hosts (rack_size 3), every other
 * topology leaves each host alone (group = its id).  A topology built after
 * other hosts numbers its groups from its first host, so its groups never
 * meet theirs. */
static void
test_host_groups (void)
{
  const char *alone[] = { "star", "fat-tree", "ring", "torus" };
  Fixture fx;
  NetTopologyParams p;

  fx.names = host_names (10);
  p = params (fx.names);
  set_int (&p, "gpus_per_node", 4);
  fixture_init (&fx, "nodes", p);
  for (int h = 0; h < 10; h++)
    g_assert_cmpint (net_network_host_group (fx.net, h), ==, h / 4);
  fixture_clear (&fx);

  fx.names = host_names (10);
  p = params (fx.names);
  set_int (&p, "rack_size", 3);
  fixture_init (&fx, "racks", p);
  for (int h = 0; h < 10; h++)
    g_assert_cmpint (net_network_host_group (fx.net, h), ==, h / 3);
  fixture_clear (&fx);

  /* dgx1: a server's 8 GPUs, the last server partly filled */
  fx.names = host_names (20);
  fixture_init (&fx, "dgx1", params (fx.names));
  for (int h = 0; h < 20; h++)
    g_assert_cmpint (net_network_host_group (fx.net, h), ==, h / 8);
  fixture_clear (&fx);

  for (guint t = 0; t < G_N_ELEMENTS (alone); t++)
    {
      fx.names = host_names (8);
      fixture_init (&fx, alone[t], params (fx.names));
      for (int h = 0; h < 8; h++)
        g_assert_cmpint (net_network_host_group (fx.net, h), ==, h);
      fixture_clear (&fx);
      g_assert_false (net_topology_lookup (alone[t])->servers);
    }
  /* servers (their groups joined by intra_* links): nodes and dgx1 only */
  g_assert_true (net_topology_lookup ("nodes")->servers);
  g_assert_true (net_topology_lookup ("dgx1")->servers);
  g_assert_false (net_topology_lookup ("racks")->servers);

  /* two hosts before the nodes' GPUs, one after */
  {
    EngSim *sim = eng_sim_new ();
    NetNetwork *net = net_network_new (sim, NET_CONTENTION_NONE);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) names = host_names (6);
    int last;

    net_network_add_host (net, "a");
    net_network_add_host (net, "b");
    p = params (names);
    set_int (&p, "gpus_per_node", 4);
    g_assert_true (net_topology_lookup ("nodes")->build (net, &p, &error));
    g_assert_no_error (error);
    last = net_network_add_host (net, "c");
    g_assert_cmpint (net_network_host_group (net, 0), ==, 0);
    g_assert_cmpint (net_network_host_group (net, 1), ==, 1);
    for (int h = 2; h < 8; h++)
      g_assert_cmpint (net_network_host_group (net, h), ==, 2 + (h - 2) / 4);
    g_assert_cmpint (net_network_host_group (net, last), ==, last);
    net_network_set_host_group (net, last, 2);
    g_assert_cmpint (net_network_host_group (net, last), ==, 2);
    net_network_free (net);
    eng_sim_free (sim);
  }

  /* the same for dgx1: 3 hosts before 10 GPUs, groups 3 (GPUs 3-10) and
   * 4 (11-12), never 0-2 */
  {
    EngSim *sim = eng_sim_new ();
    NetNetwork *net = net_network_new (sim, NET_CONTENTION_NONE);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) names = host_names (10);

    net_network_add_host (net, "a");
    net_network_add_host (net, "b");
    net_network_add_host (net, "c");
    p = params (names);
    g_assert_true (net_topology_lookup ("dgx1")->build (net, &p, &error));
    g_assert_no_error (error);
    for (int h = 3; h < 13; h++)
      g_assert_cmpint (net_network_host_group (net, h), ==, 3 + (h - 3) / 8);
    g_assert_cmpint (net_network_route_links (net, 3, 11, NULL, 0), ==, 2);
    net_network_free (net);
    eng_sim_free (sim);
  }
}

/* --- named links --------------------------------------------------------- */

/* Racks of 4, non-blocking (U = 4 B).  rack0.up degraded to B / 2 with
 * latency 3 sl: h0 -> h4 crosses it and ends at 2 l + 4 sl + b / (B / 2);
 * h1 -> h2 (same rack) and h5 -> h3 (into rack 0, over rack0.down) are
 * untouched: 2 l + b / B and 2 l + 2 sl + b / B. */
static void
test_degraded_link (void)
{
  Fixture fx;
  NetTopologyParams p;
  int id;

  fx.names = host_names (8);
  p = params (fx.names);
  set_int (&p, "rack_size", 4);
  set_double (&p, "switch_latency", SLAT);
  fixture_init (&fx, "racks", p);
  id = link_id (fx.net, "rack0.up");
  g_assert_cmpstr (net_network_link_name (fx.net, id), ==, "rack0.up");
  g_assert_false (net_network_set_link (fx.net, id, 0, SLAT));
  g_assert_false (net_network_set_link (fx.net, id, B, -1));
  g_assert_false (net_network_set_link (fx.net, id, INFINITY, SLAT));
  assert_time (net_network_link_bandwidth (fx.net, id), 4 * B);
  g_assert_true (net_network_set_link (fx.net, id, B / 2, 3 * SLAT));
  assert_time (net_network_link_bandwidth (fx.net, id), B / 2);
  assert_time (net_network_link_latency (fx.net, id), 3 * SLAT);
  send (&fx, 0, 4, MSG, 0);
  send (&fx, 1, 2, MSG, 1);
  send (&fx, 5, 3, MSG, 2);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * LAT + 4 * SLAT + MSG / (B / 2));
  assert_time (fx.end[1], 2 * LAT + MSG / B);
  assert_time (fx.end[2], 2 * LAT + 2 * SLAT + MSG / B);
  fixture_clear (&fx);
}

/* Star links are "<host>.up" / "<host>.down"; net_network_add_link names
 * its link "link<id>"; unknown names give -1. */
static void
test_link_names (void)
{
  Fixture fx;
  const char *route[] = { "h0.up", "h2.down", NULL };
  int id;

  fx.names = host_names (3);
  fixture_init (&fx, "star", params (fx.names));
  assert_route (fx.net, 0, 2, route);
  g_assert_cmpint (net_network_link_id (fx.net, "nope"), ==, -1);
  id = net_network_add_link (fx.net, B, LAT);
  g_assert_cmpint (id, ==, 6);
  g_assert_cmpstr (net_network_link_name (fx.net, id), ==, "link6");
  g_assert_cmpint (net_network_link_id (fx.net, "link6"), ==, id);
  id = net_network_add_named_link (fx.net, "spare", B, LAT);
  g_assert_cmpint (net_network_link_id (fx.net, "spare"), ==, id);
  fixture_clear (&fx);
}

/* --- every topology ------------------------------------------------------ */

/* Every topology, for several sizes: a route for every ordered pair, link
 * names unique, route storage linear in hosts and links, a summary, and one
 * transfer per ordered pair, all at once, all completing. */
static void
test_all_pairs (void)
{
  int sizes[] = { 1, 2, 3, 5, 8, 17 };

  for (const NetTopology *const *t = net_topology_all (); *t; t++)
    for (gsize i = 0; i < G_N_ELEMENTS (sizes); i++)
      {
        Fixture fx;
        NetTopologyParams p;
        int n = sizes[i], n_transfers = 0;
        g_autofree char *summary = NULL;

        fx.names = host_names (n);
        p = params (fx.names);
        set_int (&p, "rack_size", 4);
        set_int (&p, "gpus_per_node", 4);
        g_test_message ("%s, %d hosts", (*t)->name, n);
        fixture_init (&fx, (*t)->name, p);
        for (int h = 0; h < n; h++)
          g_assert_cmpint (net_network_host_id (fx.net, fx.names->pdata[h]),
                           ==, h);
        for (int l = 0; l < net_network_n_links (fx.net); l++)
          g_assert_cmpint (net_network_link_id (
                             fx.net, net_network_link_name (fx.net, l)), ==, l);
        for (int a = 0; a < n; a++)
          for (int b = 0; b < n; b++)
            if (a != b)
              {
                int links[MAX_ROUTE];
                int len = net_network_route_links (fx.net, a, b, links,
                                                   MAX_ROUTE);

                g_assert_cmpint (len, >=, 1);
                g_assert_cmpint (len, <=, MAX_ROUTE);
                g_assert_true (isfinite (net_network_route_latency (fx.net,
                                                                    a, b)));
                g_assert_cmpfloat (net_network_route_bandwidth (fx.net, a, b),
                                   >, 0);
                net_send (fx.net, a, b, MSG, -1, NULL, NULL, NULL);
                n_transfers++;
              }
        /* Routes take O(hosts + links): at most one id per link or host
         * link, not one per pair. */
        g_assert_cmpuint (net_network_route_bytes (fx.net), <=,
                          256 + sizeof (int) * (net_network_n_links (fx.net)
                                                + 2 * n));
        g_assert_cmpuint (net_network_active (fx.net), ==, n_transfers);
        eng_run (fx.sim, INFINITY);
        g_assert_cmpuint (net_network_active (fx.net), ==, 0);
        g_assert_nonnull ((*t)->summary);
        summary = (*t)->summary (&p);
        g_assert_nonnull (summary);
        g_assert_nonnull (strstr (summary, "Gbit/s"));
        g_test_message ("%s", summary);
        fixture_clear (&fx);
      }
}

/* --- routes computed on demand against their closed forms --------------- */

/* The static hash of fattree.c, as docs/network.md gives it. */
static guint32
doc_fattree_hash (int src, int dst)
{
  guint32 x = (guint32) src * 0x9E3779B1u + (guint32) dst;

  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

/* One topology and its parameters, for test_routes_closed_form. */
typedef struct {
  const char *topology;
  int size;        /* rack_size, gpus_per_node or fat_tree_k; 0 = default */
  gboolean nic;    /* nodes: one NIC per GPU */
} RouteCase;

/* Appends to `want` the link names of the route a -> b (a != b) of `c` on n
 * hosts, as docs/network.md writes them: the tables every topology used to
 * set pair by pair. */
static void
expected_route (const RouteCase *c, int n, int a, int b, GPtrArray *want)
{
  const char *t = c->topology;

  if (g_str_equal (t, "star")
      || (g_str_equal (t, "racks") && a / c->size == b / c->size))
    {
      g_ptr_array_add (want, g_strdup_printf ("h%d.up", a));
      g_ptr_array_add (want, g_strdup_printf ("h%d.down", b));
    }
  else if (g_str_equal (t, "racks"))
    {
      g_ptr_array_add (want, g_strdup_printf ("h%d.up", a));
      g_ptr_array_add (want, g_strdup_printf ("rack%d.up", a / c->size));
      g_ptr_array_add (want, g_strdup_printf ("rack%d.down", b / c->size));
      g_ptr_array_add (want, g_strdup_printf ("h%d.down", b));
    }
  else if (g_str_equal (t, "fat-tree"))
    {
      int half = c->size / 2, es = a / half, ed = b / half;
      guint32 h = doc_fattree_hash (a, b);
      int agg = h % half, m = (h / half) % half;

      g_ptr_array_add (want, g_strdup_printf ("h%d.up", a));
      if (es != ed)
        g_ptr_array_add (want, g_strdup_printf ("pod%d.edge%d.agg%d.up",
                                                es / half, es % half, agg));
      if (es / half != ed / half)
        {
          g_ptr_array_add (want, g_strdup_printf ("pod%d.agg%d.core%d.up",
                                                  es / half, agg,
                                                  agg * half + m));
          g_ptr_array_add (want, g_strdup_printf ("pod%d.agg%d.core%d.down",
                                                  ed / half, agg,
                                                  agg * half + m));
        }
      if (es != ed)
        g_ptr_array_add (want, g_strdup_printf ("pod%d.edge%d.agg%d.down",
                                                ed / half, ed % half, agg));
      g_ptr_array_add (want, g_strdup_printf ("h%d.down", b));
    }
  else if (g_str_equal (t, "ring"))
    {
      int cw = (b - a + n) % n, step = cw <= n - cw ? 1 : n - 1;

      for (int h = a; h != b; h = (h + step) % n)
        g_ptr_array_add (want, g_strdup_printf ("h%d->h%d", h,
                                                (h + step) % n));
    }
  else
    {
      int g = c->size, na = a / g, nb = b / g;

      if (na != nb && c->nic)
        {
          g_ptr_array_add (want, g_strdup_printf ("node%d.gpu%d.nic.up",
                                                  na, a % g));
          g_ptr_array_add (want, g_strdup_printf ("node%d.gpu%d.nic.down",
                                                  nb, b % g));
          return;
        }
      g_ptr_array_add (want, g_strdup_printf ("node%d.gpu%d.nvlink.up",
                                              na, a % g));
      if (na != nb)
        {
          g_ptr_array_add (want, g_strdup_printf ("node%d.nic.up", na));
          g_ptr_array_add (want, g_strdup_printf ("node%d.nic.down", nb));
        }
      g_ptr_array_add (want, g_strdup_printf ("node%d.gpu%d.nvlink.down",
                                              nb, b % g));
    }
}

/* Asserts that every route of `fx` (built from `c` on n hosts) is the one
 * expected_route gives, link by link in order, with the latency the sum of
 * those links' latencies in that order and the bandwidth their minimum. */
static void
assert_routes_closed_form (Fixture *fx, const RouteCase *c, int n)
{
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++)
      {
        g_autoptr (GPtrArray) want = g_ptr_array_new_with_free_func (g_free);
        int links[MAX_ROUTE], len;
        double lat = 0, bw = INFINITY;

        if (a == b)
          continue;
        expected_route (c, n, a, b, want);
        len = net_network_route_links (fx->net, a, b, links, MAX_ROUTE);
        g_assert_cmpint (len, ==, (int) want->len);
        for (int i = 0; i < len; i++)
          {
            int id = link_id (fx->net, want->pdata[i]);

            g_assert_cmpint (links[i], ==, id);
            lat += net_network_link_latency (fx->net, id);
            bw = MIN (bw, net_network_link_bandwidth (fx->net, id));
          }
        g_assert_cmpfloat (net_network_route_latency (fx->net, a, b), ==, lat);
        g_assert_cmpfloat (net_network_route_bandwidth (fx->net, a, b), ==,
                           bw);
      }
}

/* Every topology, on sizes that fill their racks, nodes, edges and pods or
 * leave the last one partly empty: the route of every ordered pair, computed
 * on demand, is the closed form of docs/network.md (the table the topology
 * used to store), with the same latency and bandwidth. */
static void
test_routes_closed_form (void)
{
  const RouteCase cases[] = {
    { "star", 0, FALSE }, { "racks", 3, FALSE }, { "racks", 8, FALSE },
    { "fat-tree", 4, FALSE }, { "fat-tree", 6, FALSE }, { "ring", 0, FALSE },
    { "nodes", 3, FALSE }, { "nodes", 4, TRUE },
  };
  int sizes[] = { 1, 2, 3, 7, 8, 9, 16, 17, 27, 54 };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    for (gsize j = 0; j < G_N_ELEMENTS (sizes); j++)
      {
        const RouteCase *c = &cases[i];
        int n = sizes[j];
        Fixture fx;
        NetTopologyParams p;

        if (g_str_equal (c->topology, "fat-tree")
            && n > c->size * c->size * c->size / 4)
          continue;
        fx.names = host_names (n);
        p = params (fx.names);
        set_double (&p, "switch_latency", SLAT);
        set_double (&p, "intra_latency", 3 * SLAT);
        set_int (&p, "rack_size", c->size);
        set_int (&p, "fat_tree_k", c->size);
        set_int (&p, "gpus_per_node", c->size);
        set_int (&p, "nic", c->nic);
        g_test_message ("%s (%d), %d hosts", c->topology, c->size, n);
        fixture_init (&fx, c->topology, p);
        assert_routes_closed_form (&fx, c, n);
        fixture_clear (&fx);
      }
}

/* A star of 50,000 hosts: 100,000 links and route storage of a few ids per
 * host (a table of every pair held 16 B x 50,000^2 = 40 GB); a transfer
 * across it takes 2 l + b / B. */
static void
test_star_large (void)
{
  const int n = 50000;
  Fixture fx;
  int links[MAX_ROUTE];

  fx.names = host_names (n);
  fixture_init (&fx, "star", params (fx.names));
  g_assert_cmpint (net_network_n_links (fx.net), ==, 2 * n);
  g_assert_cmpuint (net_network_route_bytes (fx.net), <=,
                    256 + 2 * sizeof (int) * (gsize) n);
  g_assert_cmpint (net_network_route_links (fx.net, n - 1, 0, links,
                                            MAX_ROUTE), ==, 2);
  g_assert_cmpstr (net_network_link_name (fx.net, links[0]), ==, "h49999.up");
  g_assert_cmpstr (net_network_link_name (fx.net, links[1]), ==, "h0.down");
  send (&fx, n - 1, 0, MSG, 0);
  send (&fx, 12345, 23456, MSG, 1);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 2 * LAT + MSG / B);
  assert_time (fx.end[1], 2 * LAT + MSG / B);
  fixture_clear (&fx);
}

/* A ring of 81 hosts: h0 -> h40 crosses 40 links, more than the network
 * reads on its stack; the route, its latency and a transfer still hold. */
static void
test_ring_long_route (void)
{
  Fixture fx;
  int links[MAX_ROUTE];

  fx.names = host_names (81);
  fixture_init (&fx, "ring", params (fx.names));
  g_assert_cmpint (net_network_route_links (fx.net, 0, 40, NULL, 0), ==, 40);
  g_assert_cmpint (net_network_route_links (fx.net, 0, 40, links, 39), ==, 40);
  g_assert_cmpint (net_network_route_links (fx.net, 0, 41, links, MAX_ROUTE),
                   ==, 40);
  g_assert_cmpstr (net_network_link_name (fx.net, links[0]), ==, "h0->h80");
  g_assert_cmpstr (net_network_link_name (fx.net, links[39]), ==, "h42->h41");
  assert_time (net_network_route_latency (fx.net, 0, 40), 40 * LAT);
  send (&fx, 0, 40, MSG, 0);
  eng_run (fx.sim, INFINITY);
  assert_time (fx.end[0], 40 * LAT + MSG / B);
  fixture_clear (&fx);
}

/* Each registered topology is found by name and has a description. */
static void
test_registry (void)
{
  const char *names[] = { "star", "racks", "fat-tree", "ring", "nodes",
                          "dgx1", "torus" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const NetTopology *t = net_topology_lookup (names[i]);

      g_assert_nonnull (t);
      g_assert_cmpstr (t->name, ==, names[i]);
      g_assert_nonnull (t->description);
    }
}

/* Invalid parameters: the build fails with NET_ERROR_INVALID naming the
 * parameter, adds nothing, and the summary is NULL. */
typedef struct {
  const char *topology;
  int n_hosts;
  const char *host0;   /* name of host 0, or NULL for "h0" */
  int rack_size;
  double oversubscription, switch_latency;
  int fat_tree_k, gpus_per_node;
  double intra_bandwidth, intra_latency;
  double bandwidth;    /* 0 for B */
  const char *message; /* expected substring of the error */
} BadCase;

static void
test_invalid (void)
{
  const BadCase cases[] = {
    { "racks", 4, NULL, -1, 0, 0, 0, 0, 0, 0, 0, "rack_size" },
    { "racks", 4, NULL, 0, 0.5, 0, 0, 0, 0, 0, 0, "oversubscription >= 1" },
    { "racks", 4, NULL, 0, NAN, 0, 0, 0, 0, 0, 0, "oversubscription" },
    { "racks", 4, NULL, 0, 0, -1, 0, 0, 0, 0, 0, "switch_latency" },
    { "racks", 4, "rack0", 2, 0, 0, 0, 0, 0, 0, 0, "rename the host" },
    { "racks", 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, "at least 1 host" },
    { "fat-tree", 4, NULL, 0, 0, 0, 3, 0, 0, 0, 0, "fat_tree_k even" },
    { "fat-tree", 4, NULL, 0, 0, 0, -2, 0, 0, 0, 0, "fat_tree_k even" },
    { "fat-tree", 17, NULL, 0, 0, 0, 4, 0, 0, 0, 0,
      "set fat_tree_k to 6 or more" },
    { "fat-tree", 4, NULL, 0, 0, -1, 0, 0, 0, 0, 0, "switch_latency" },
    { "fat-tree", 4, "pod0.edge0.agg1", 0, 0, 0, 0, 0, 0, 0, 0,
      "rename the host" },
    { "fat-tree", 4, NULL, 0, 0, 0, 0, 0, 0, 0, -1, "bandwidth" },
    { "ring", 4, "a->b", 0, 0, 0, 0, 0, 0, 0, 0, "rename the host" },
    { "ring", 4, NULL, 0, 0, 0, 0, 0, 0, 0, INFINITY, "bandwidth" },
    { "nodes", 4, NULL, 0, 0, 0, 0, -1, 0, 0, 0, "gpus_per_node" },
    { "nodes", 4, NULL, 0, 0, 0, 0, 0, -1, 0, 0, "intra_bandwidth" },
    { "nodes", 4, NULL, 0, 0, 0, 0, 0, 0, NAN, 0, "intra_latency" },
    { "nodes", 4, "h1", 0, 0, 0, 0, 0, 0, 0, 0, "used twice" },
    { "star", 4, "h1", 0, 0, 0, 0, 0, 0, 0, 0, "used twice" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const BadCase *c = &cases[i];
      const NetTopology *t = net_topology_lookup (c->topology);
      g_autoptr (GPtrArray) names = host_names (MAX (c->n_hosts, 1));
      g_autoptr (GError) error = NULL;
      NetTopologyParams p = params (names);
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);

      if (c->host0 != NULL)
        {
          g_free (names->pdata[0]);
          names->pdata[0] = g_strdup (c->host0);
        }
      p.n_hosts = c->n_hosts;
      set_int (&p, "rack_size", c->rack_size);
      set_double (&p, "oversubscription", c->oversubscription);
      set_double (&p, "switch_latency", c->switch_latency);
      set_int (&p, "fat_tree_k", c->fat_tree_k);
      set_int (&p, "gpus_per_node", c->gpus_per_node);
      set_double (&p, "intra_bandwidth", c->intra_bandwidth);
      set_double (&p, "intra_latency", c->intra_latency);
      if (c->bandwidth != 0)
        p.bandwidth = c->bandwidth;
      g_assert_false (t->build (net, &p, &error));
      g_assert_error (error, NET_ERROR, NET_ERROR_INVALID);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, c->message));
      g_assert_true (g_str_has_prefix (error->message, c->topology));
      g_assert_cmpint (net_network_n_hosts (net), ==, 0);
      g_assert_cmpint (net_network_n_links (net), ==, 0);
      g_assert_null (t->summary (&p));
      net_network_free (net);
      eng_sim_free (sim);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/topology/registry", test_registry);
  g_test_add_func ("/topology/all-pairs", test_all_pairs);
  g_test_add_func ("/topology/routes/closed-form", test_routes_closed_form);
  g_test_add_func ("/topology/routes/large-star", test_star_large);
  g_test_add_func ("/topology/routes/long-ring", test_ring_long_route);
  g_test_add_func ("/topology/invalid", test_invalid);
  g_test_add_func ("/topology/links/names", test_link_names);
  g_test_add_func ("/topology/links/degraded", test_degraded_link);
  g_test_add_func ("/topology/racks/routes", test_racks_routes);
  g_test_add_func ("/topology/racks/uplink-shared", test_racks_uplink_shared);
  g_test_add_func ("/topology/racks/incast", test_racks_incast);
  g_test_add_func ("/topology/racks/host-names", test_racks_host_names);
  g_test_add_func ("/topology/fat-tree/route-lengths",
                   test_fat_tree_route_lengths);
  g_test_add_func ("/topology/fat-tree/hash-spread", test_fat_tree_hash_spread);
  g_test_add_func ("/topology/fat-tree/incast", test_fat_tree_incast);
  g_test_add_func ("/topology/ring/routes", test_ring_routes);
  g_test_add_func ("/topology/ring/pass-through", test_ring_pass_through);
  g_test_add_func ("/topology/nodes/shared-nic", test_nodes_shared_nic);
  g_test_add_func ("/topology/nodes/nic-per-gpu", test_nodes_nic_per_gpu);
  g_test_add_func ("/topology/nodes/sharp-ports", test_nodes_sharp_ports);
  g_test_add_func ("/topology/nodes/defaults", test_nodes_defaults);
  g_test_add_func ("/topology/dgx1/links", test_dgx1_links);
  g_test_add_func ("/topology/dgx1/server-routes", test_dgx1_server_routes);
  g_test_add_func ("/topology/dgx1/transfer-times", test_dgx1_transfer_times);
  g_test_add_func ("/topology/dgx1/contention", test_dgx1_contention);
  g_test_add_func ("/topology/dgx1/routes-on-demand",
                   test_dgx1_routes_on_demand);
  g_test_add_func ("/topology/dgx1/invalid", test_dgx1_invalid);
  g_test_add_func ("/topology/dgx1/summary", test_dgx1_summary);
  g_test_add_func ("/topology/torus/routes", test_torus_routes);
  g_test_add_func ("/topology/torus/dimension-order",
                   test_torus_dimension_order);
  g_test_add_func ("/topology/torus/transfer-times",
                   test_torus_transfer_times);
  g_test_add_func ("/topology/torus/shape", test_torus_shape);
  g_test_add_func ("/topology/torus/invalid", test_torus_invalid);
  g_test_add_func ("/topology/torus/summary", test_torus_summary);
  g_test_add_func ("/topology/host-groups", test_host_groups);
  int status = g_test_run ();
  base_values_free (values);
  return status;
}
