/*
 * test-netmodel.c — unit tests of the flow-level network (netmodel/).
 *
 * Every expected time is a closed form written as a formula: L is the route
 * latency (two links on a star), B a link bandwidth, b a transfer size.  The
 * max-min schedules of the staggered and unequal-share cases are worked out
 * by hand in the comments of their tests.  Times are compared to 1e-9
 * relative.
 */
#include <math.h>

#include "base/keys.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "netmodel/netmodel-private.h"

#define LINK_BW   1.25e9  /* bytes/s (10 Gb/s) */
#define LINK_LAT  5e-6    /* s per link */
#define MSG       1e6     /* bytes */

/* Asserts that time `got` equals `want` to 1e-9 relative (exactly at 0). */
#define assert_time(got, want) \
  g_assert_cmpfloat_with_epsilon ((got), (want), \
                                  1e-9 * fabs ((double) (want)) + 1e-300)

/* A star network on its own engine, with hosts h0, h1, ... */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  GArray *done;       /* NetTransfer, in NetDone order */
  GArray *observed;   /* NetTransfer, in observer order */
  int awaiting;       /* tag of a NetDone not yet followed by the observer,
                         or -1 */
} Fixture;

static void
record_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED, const NetTransfer *t)
{
  Fixture *fx = ctx;

  g_assert_true (sim == fx->sim);
  g_assert_cmpfloat (t->end, ==, eng_sim_now (sim));
  g_assert_cmpint (fx->awaiting, ==, -1);
  fx->awaiting = t->tag;
  g_array_append_val (fx->done, *t);
}

static void
record_observed (gpointer ctx, const NetTransfer *t)
{
  Fixture *fx = ctx;

  /* The observer comes right after the transfer's own NetDone, if any. */
  if (fx->awaiting != -1)
    g_assert_cmpint (t->tag, ==, fx->awaiting);
  fx->awaiting = -1;
  g_array_append_val (fx->observed, *t);
}

static void
fixture_init (Fixture *fx, int n_hosts, NetContention contention)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  NetTopologyParams p;

  for (int h = 0; h < n_hosts; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  p.n_hosts = n_hosts;
  p.names = (const char *const *) names->pdata;
  p.bandwidth = LINK_BW;
  p.latency = LINK_LAT;

  fx->sim = eng_sim_new ();
  fx->net = net_network_new (fx->sim, contention);
  fx->done = g_array_new (FALSE, FALSE, sizeof (NetTransfer));
  fx->observed = g_array_new (FALSE, FALSE, sizeof (NetTransfer));
  fx->awaiting = -1;
  g_assert_true (net_topology_star.build (fx->net, &p, &error));
  g_assert_no_error (error);
  net_network_set_observer (fx->net, record_observed, fx);
}

static void
fixture_clear (Fixture *fx)
{
  g_assert_cmpint (fx->awaiting, ==, -1);
  net_network_free (fx->net);
  eng_sim_free (fx->sim);
  g_array_free (fx->done, TRUE);
  g_array_free (fx->observed, TRUE);
}

static void
start (Fixture *fx, int src, int dst, double bytes, int tag)
{
  net_send (fx->net, src, dst, bytes, tag, record_done, fx, NULL);
}

/* The recorded transfer with tag `tag`. */
static const NetTransfer *
by_tag (const Fixture *fx, int tag)
{
  for (guint i = 0; i < fx->done->len; i++)
    if (g_array_index (fx->done, NetTransfer, i).tag == tag)
      return &g_array_index (fx->done, NetTransfer, i);
  g_assert_not_reached ();
}

/* A sender scheduled by the engine, to start a transfer at a later time. */
typedef struct {
  Fixture *fx;
  int src, dst, tag;
  double bytes;
} DelayedSend;

static void
on_delayed_send (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data)
{
  DelayedSend *d = data;
  start (d->fx, d->src, d->dst, d->bytes, d->tag);
}

/* --- Tests ------------------------------------------------------------- */

static void
test_single_flow (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT;

  fixture_init (&fx, 2, NET_CONTENTION_MAXMIN);
  start (&fx, 0, 1, MSG, 7);
  g_assert_cmpuint (net_network_active (fx.net), ==, 1);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, 1);
  assert_time (by_tag (&fx, 7)->end, L + MSG / LINK_BW);
  g_assert_cmpuint (net_network_active (fx.net), ==, 0);
  g_assert_cmpuint (eng_sim_pending (fx.sim), ==, 0);
  fixture_clear (&fx);
}

/* N hosts send b bytes each to host 0 at t = 0: the flows share h0's
 * downlink equally (B / N each) and all finish at L + N b / B, reported in
 * the order they were started. */
static void
test_incast (void)
{
  const int N = 8;
  Fixture fx;
  double L = 2 * LINK_LAT;

  fixture_init (&fx, N + 1, NET_CONTENTION_MAXMIN);
  for (int i = 1; i <= N; i++)
    start (&fx, i, 0, MSG, i);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, N);
  for (int i = 0; i < N; i++)
    {
      const NetTransfer *t = &g_array_index (fx.done, NetTransfer, i);
      g_assert_cmpint (t->tag, ==, i + 1);
      assert_time (t->end, L + N * MSG / LINK_BW);
    }
  fixture_clear (&fx);
}

/* Incast with sizes s_1 < s_2 < ... < s_N: the downlink stays saturated and
 * is shared equally among the flows left, so the k-th smallest finishes at
 * L + (s_1 + ... + s_{k-1} + (N - k + 1) s_k) / B. */
static void
test_incast_unequal (void)
{
  const int N = 5;
  Fixture fx;
  double L = 2 * LINK_LAT;
  double before = 0;   /* bytes of the flows already finished */

  fixture_init (&fx, N + 1, NET_CONTENTION_MAXMIN);
  /* Started largest first, so completion order differs from start order. */
  for (int k = N; k >= 1; k--)
    start (&fx, k, 0, k * MSG, k);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, N);
  for (int k = 1; k <= N; k++)
    {
      double s_k = k * MSG;
      g_assert_cmpint (g_array_index (fx.done, NetTransfer, k - 1).tag, ==, k);
      assert_time (by_tag (&fx, k)->end, L + (before + (N - k + 1) * s_k) / LINK_BW);
      before += s_k;
    }
  fixture_clear (&fx);
}

/* A: h1 -> h0, b bytes at 0.  B: h2 -> h0, b bytes at t1 < b / B.
 * [L, t1 + L): A alone at B, sends B t1.
 * [t1 + L, ...): A and B share h0's downlink at B / 2; A has b - B t1 left,
 *   so A ends at t1 + L + 2 (b - B t1) / B = L + 2 b / B - t1, when B has
 *   sent b - B t1 too.
 * B then alone at B with B t1 left: ends at L + 2 b / B. */
static void
test_staggered (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT;
  double t1 = 0.25 * MSG / LINK_BW;
  DelayedSend later;

  fixture_init (&fx, 3, NET_CONTENTION_MAXMIN);
  later = (DelayedSend) { &fx, 2, 0, 'B', MSG };
  start (&fx, 1, 0, MSG, 'A');
  eng_schedule (fx.sim, t1, on_delayed_send, NULL, &later);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, 2);
  assert_time (by_tag (&fx, 'A')->start, 0);
  assert_time (by_tag (&fx, 'A')->end, L + 2 * MSG / LINK_BW - t1);
  assert_time (by_tag (&fx, 'B')->start, t1);
  assert_time (by_tag (&fx, 'B')->end, L + 2 * MSG / LINK_BW);
  fixture_clear (&fx);
}

/* Two bottlenecks and unequal shares, on a hand-built network with links
 * up0, up1 (host -> switch), down2, down3 (switch -> host), all of bandwidth
 * B except up1 at B / 2, and latency l each (L = 2 l on every route).
 *   A: h0 -> h2 over up0, down2, b bytes
 *   B: h1 -> h2 over up1, down2, b / 2 bytes
 *   C: h1 -> h3 over up1, down3, b bytes
 * Progressive filling: shares up0 B / 1, up1 (B/2) / 2 = B / 4, down2 B / 2,
 * down3 B / 1; up1 is the bottleneck: B = C = B / 4.  Then down2 has 3B / 4
 * left for A alone, up0 B: A = 3B / 4.
 * A ends at L + b / (3B/4) = L + 4b / (3B); B and C have sent b / 3 and keep
 * B / 4 (up1 still limits them).  B ends at L + (b/2) / (B/4) = L + 2b / B;
 * C has sent b / 2, now alone on up1 at B / 2: ends at L + 2b/B + b/B
 * = L + 3b / B. */
static void
test_unequal_shares (void)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  Fixture fx = { sim, net,
                 g_array_new (FALSE, FALSE, sizeof (NetTransfer)),
                 g_array_new (FALSE, FALSE, sizeof (NetTransfer)), -1 };
  double B = LINK_BW, l = LINK_LAT, L = 2 * LINK_LAT, b = MSG;
  int h[4], up0, up1, down2, down3;

  for (int i = 0; i < 4; i++)
    {
      g_autofree char *name = g_strdup_printf ("h%d", i);
      h[i] = net_network_add_host (net, name);
    }
  up0 = net_network_add_link (net, B, l);
  up1 = net_network_add_link (net, B / 2, l);
  down2 = net_network_add_link (net, B, l);
  down3 = net_network_add_link (net, B, l);
  net_network_set_route (net, h[0], h[2], (int[]) { up0, down2 }, 2);
  net_network_set_route (net, h[1], h[2], (int[]) { up1, down2 }, 2);
  net_network_set_route (net, h[1], h[3], (int[]) { up1, down3 }, 2);
  g_assert_cmpfloat (net_network_route_bandwidth (net, h[1], h[3]), ==, B / 2);
  net_network_set_observer (net, record_observed, &fx);

  start (&fx, h[0], h[2], b, 'A');
  start (&fx, h[1], h[2], b / 2, 'B');
  start (&fx, h[1], h[3], b, 'C');
  eng_run (sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, 3);
  assert_time (by_tag (&fx, 'A')->end, L + 4 * b / (3 * B));
  assert_time (by_tag (&fx, 'B')->end, L + 2 * b / B);
  assert_time (by_tag (&fx, 'C')->end, L + 3 * b / B);
  fixture_clear (&fx);
}

/* With contention = none, every flow takes L + b / B whatever the load,
 * here an incast of N flows plus a flow out of the receiver. */
static void
test_contention_none (void)
{
  const int N = 6;
  Fixture fx;
  double L = 2 * LINK_LAT;

  fixture_init (&fx, N + 1, NET_CONTENTION_NONE);
  for (int i = 1; i <= N; i++)
    start (&fx, i, 0, MSG, i);
  start (&fx, 0, 1, 3 * MSG, 0);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, N + 1);
  for (int i = 1; i <= N; i++)
    assert_time (by_tag (&fx, i)->end, L + MSG / LINK_BW);
  assert_time (by_tag (&fx, 0)->end, L + 3 * MSG / LINK_BW);
  fixture_clear (&fx);
}

/* A zero-byte transfer takes exactly L, even while the same links are busy. */
static void
test_zero_bytes (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT;

  fixture_init (&fx, 3, NET_CONTENTION_MAXMIN);
  start (&fx, 1, 0, 4 * MSG, 1);
  start (&fx, 2, 0, 0, 2);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpfloat (by_tag (&fx, 2)->end, ==, L);
  g_assert_cmpfloat (by_tag (&fx, 2)->bytes, ==, 0);
  assert_time (by_tag (&fx, 1)->end, L + 4 * MSG / LINK_BW);
  fixture_clear (&fx);
}

/* A host sending to itself finishes at once, in an event at the send time. */
static void
test_self_send (void)
{
  Fixture fx;
  double t0 = 1.5;   /* s */
  DelayedSend later;

  fixture_init (&fx, 2, NET_CONTENTION_MAXMIN);
  later = (DelayedSend) { &fx, 1, 1, 9, MSG };
  start (&fx, 0, 0, MSG, 8);
  g_assert_cmpuint (fx.done->len, ==, 0);   /* not inside net_send */
  eng_schedule (fx.sim, t0, on_delayed_send, NULL, &later);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, 2);
  g_assert_cmpfloat (by_tag (&fx, 8)->end, ==, 0);
  g_assert_cmpfloat (by_tag (&fx, 9)->start, ==, t0);
  g_assert_cmpfloat (by_tag (&fx, 9)->end, ==, t0);
  fixture_clear (&fx);
}

/* The observer sees every transfer, after its NetDone, with its fields. */
static void
test_observer (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT;
  double t0 = 0.5;   /* s */
  DelayedSend later;

  fixture_init (&fx, 3, NET_CONTENTION_MAXMIN);
  later = (DelayedSend) { &fx, 2, 1, 42, 3 * MSG };
  eng_schedule (fx.sim, t0, on_delayed_send, NULL, &later);
  net_send (fx.net, 0, 2, MSG, 41, NULL, NULL, NULL);  /* no NetDone */
  eng_run (fx.sim, INFINITY);

  /* The observer saw both transfers, in completion order; NetDone only the
   * one that had one. */
  g_assert_cmpuint (fx.done->len, ==, 1);
  g_assert_cmpuint (fx.observed->len, ==, 2);
  {
    const NetTransfer *t = &g_array_index (fx.observed, NetTransfer, 0);
    g_assert_cmpint (t->src, ==, 0);
    g_assert_cmpint (t->dst, ==, 2);
    g_assert_cmpint (t->tag, ==, 41);
    g_assert_cmpfloat (t->bytes, ==, MSG);
    g_assert_cmpfloat (t->start, ==, 0);
    assert_time (t->end, L + MSG / LINK_BW);
  }
  {
    const NetTransfer *t = &g_array_index (fx.observed, NetTransfer, 1);
    g_assert_cmpint (t->src, ==, 2);
    g_assert_cmpint (t->dst, ==, 1);
    g_assert_cmpint (t->tag, ==, 42);
    g_assert_cmpfloat (t->bytes, ==, 3 * MSG);
    g_assert_cmpfloat (t->start, ==, t0);
    assert_time (t->end, t0 + L + 3 * MSG / LINK_BW);
  }
  fixture_clear (&fx);
}

typedef struct {
  Fixture *fx;
  int rounds_left;
} PingPong;

static void
on_pong (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data, const NetTransfer *t)
{
  PingPong *pp = data;

  g_array_append_val (pp->fx->done, *t);
  if (--pp->rounds_left > 0)
    net_send (pp->fx->net, t->dst, t->src, t->bytes, t->tag + 1, on_pong,
              NULL, pp);
}

/* Sends from inside NetDone: k messages bounced back and forth end at
 * k (L + b / B). */
static void
test_ping_pong (void)
{
  const int K = 5;
  Fixture fx;
  double L = 2 * LINK_LAT;
  PingPong pp;

  fixture_init (&fx, 2, NET_CONTENTION_MAXMIN);
  net_network_set_observer (fx.net, NULL, NULL);
  pp = (PingPong) { &fx, K };
  net_send (fx.net, 0, 1, MSG, 0, on_pong, NULL, &pp);
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, K);
  for (int k = 0; k < K; k++)
    {
      const NetTransfer *t = &g_array_index (fx.done, NetTransfer, k);
      g_assert_cmpint (t->src, ==, k % 2);
      assert_time (t->end, (k + 1) * (L + MSG / LINK_BW));
    }
  fixture_clear (&fx);
}

/* Flows in opposite directions of one cable do not share (full duplex), and
 * two flows out of one host share its uplink. */
static void
test_duplex_and_uplink (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT;

  fixture_init (&fx, 3, NET_CONTENTION_MAXMIN);
  start (&fx, 0, 1, MSG, 1);
  start (&fx, 1, 0, MSG, 2);
  eng_run (fx.sim, INFINITY);
  assert_time (by_tag (&fx, 1)->end, L + MSG / LINK_BW);
  assert_time (by_tag (&fx, 2)->end, L + MSG / LINK_BW);

  g_array_set_size (fx.done, 0);
  g_array_set_size (fx.observed, 0);
  {
    double t0 = eng_sim_now (fx.sim);
    start (&fx, 0, 1, MSG, 3);
    start (&fx, 0, 2, MSG, 4);
    eng_run (fx.sim, INFINITY);
    assert_time (by_tag (&fx, 3)->end, t0 + L + 2 * MSG / LINK_BW);
    assert_time (by_tag (&fx, 4)->end, t0 + L + 2 * MSG / LINK_BW);
  }
  fixture_clear (&fx);
}

static void
test_route_queries (void)
{
  const int N = 4;
  Fixture fx;

  fixture_init (&fx, N, NET_CONTENTION_MAXMIN);
  g_assert_cmpint (net_network_n_hosts (fx.net), ==, N);
  g_assert_cmpint (net_network_n_links (fx.net), ==, 2 * N);
  g_assert_cmpstr (net_network_host_name (fx.net, 2), ==, "h2");
  g_assert_cmpint (net_network_host_id (fx.net, "h3"), ==, 3);
  g_assert_cmpint (net_network_host_id (fx.net, "nope"), ==, -1);
  for (int l = 0; l < 2 * N; l++)
    {
      g_assert_cmpfloat (net_network_link_bandwidth (fx.net, l), ==, LINK_BW);
      g_assert_cmpfloat (net_network_link_latency (fx.net, l), ==, LINK_LAT);
    }
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++)
      if (a == b)
        {
          g_assert_cmpfloat (net_network_route_latency (fx.net, a, b), ==, 0);
          g_assert_cmpfloat (net_network_route_bandwidth (fx.net, a, b), ==,
                             INFINITY);
        }
      else
        {
          assert_time (net_network_route_latency (fx.net, a, b), 2 * LINK_LAT);
          g_assert_cmpfloat (net_network_route_bandwidth (fx.net, a, b), ==,
                             LINK_BW);
        }
  fixture_clear (&fx);
}

/* A route set pair by pair on a star replaces the router's for that pair
 * only: h0 -> h1 over [h0.up, detour (B/4, 3 l), h1.down] takes
 * 5 l + b / (B/4), h1 -> h0 keeps [h1.up, h0.down].  Setting it again
 * replaces it without storing it twice. */
static void
test_route_override (void)
{
  Fixture fx;
  double B = LINK_BW, l = LINK_LAT, b = MSG;
  int detour, route[3], links[8];
  gsize bytes, once;

  fixture_init (&fx, 4, NET_CONTENTION_MAXMIN);
  bytes = net_network_route_bytes (fx.net);
  detour = net_network_add_named_link (fx.net, "detour", B / 4, 3 * l);
  route[0] = net_network_link_id (fx.net, "h0.up");
  route[1] = detour;
  route[2] = net_network_link_id (fx.net, "h1.down");
  net_network_set_route (fx.net, 0, 1, route, 3);
  once = net_network_route_bytes (fx.net);
  g_assert_cmpuint (once, >, bytes);
  net_network_set_route (fx.net, 0, 1, route, 3);
  g_assert_cmpuint (net_network_route_bytes (fx.net), ==, once);

  g_assert_cmpint (net_network_route_links (fx.net, 0, 1, links, 8), ==, 3);
  g_assert_cmpmem (links, 3 * sizeof (int), route, 3 * sizeof (int));
  assert_time (net_network_route_latency (fx.net, 0, 1), 5 * l);
  g_assert_cmpfloat (net_network_route_bandwidth (fx.net, 0, 1), ==, B / 4);
  g_assert_cmpint (net_network_route_links (fx.net, 1, 0, links, 8), ==, 2);
  g_assert_cmpstr (net_network_link_name (fx.net, links[0]), ==, "h1.up");
  g_assert_cmpstr (net_network_link_name (fx.net, links[1]), ==, "h0.down");

  start (&fx, 0, 1, b, 1);
  start (&fx, 1, 0, b, 2);
  eng_run (fx.sim, INFINITY);
  assert_time (by_tag (&fx, 1)->end, 5 * l + b / (B / 4));
  assert_time (by_tag (&fx, 2)->end, 2 * l + b / B);
  fixture_clear (&fx);
}

/* The state of one_link_route: the link every route takes, and how many
 * times the state was freed. */
typedef struct {
  int link;
  int freed;
} OneLink;

/* A router that sends every pair over one shared link. */
static int
one_link_route (gconstpointer ctx, int src G_GNUC_UNUSED, int dst G_GNUC_UNUSED,
                int *links, int max)
{
  if (max >= 1)
    links[0] = ((const OneLink *) ctx)->link;
  return 1;
}

static void
one_link_free (gpointer ctx)
{
  ((OneLink *) ctx)->freed++;
}

/* A router set by hand: its routes serve every pair, two transfers share
 * its one link (each ends at l + 2 b / B); setting another router frees the
 * first one's state, and so does freeing the network. */
static void
test_router (void)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  Fixture fx = { sim, net,
                 g_array_new (FALSE, FALSE, sizeof (NetTransfer)),
                 g_array_new (FALSE, FALSE, sizeof (NetTransfer)), -1 };
  OneLink one = { 0 };
  int links[4];

  net_network_add_host (net, "a");
  net_network_add_host (net, "b");
  net_network_add_host (net, "c");
  one.link = net_network_add_link (net, LINK_BW, LINK_LAT);
  g_assert_cmpint (net_network_route_links (net, 0, 1, links, 4), ==, 0);
  net_network_set_router (net, one_link_route, &one, one_link_free, 0);
  net_network_set_router (net, one_link_route, &one, one_link_free, 12);
  g_assert_cmpint (one.freed, ==, 1);
  g_assert_cmpuint (net_network_route_bytes (net), ==, 12);
  g_assert_cmpint (net_network_route_links (net, 2, 0, links, 4), ==, 1);
  g_assert_cmpint (links[0], ==, one.link);
  net_network_set_observer (net, record_observed, &fx);

  start (&fx, 0, 1, MSG, 1);
  start (&fx, 2, 0, MSG, 2);
  eng_run (sim, INFINITY);
  assert_time (by_tag (&fx, 1)->end, LINK_LAT + 2 * MSG / LINK_BW);
  assert_time (by_tag (&fx, 2)->end, LINK_LAT + 2 * MSG / LINK_BW);
  fixture_clear (&fx);
  g_assert_cmpint (one.freed, ==, 2);
}

/* Routes set one by one before later hosts are added stay set; route
 * latency is the sum of unequal link latencies. */
static void
test_route_growth (void)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  int a = net_network_add_host (net, "a");
  int b = net_network_add_host (net, "b");
  int l1 = net_network_add_link (net, 1e9, 1e-6);
  int l2 = net_network_add_link (net, 2e9, 3e-6);
  int l3 = net_network_add_link (net, 5e8, 2e-6);
  int c;

  net_network_set_route (net, a, b, (int[]) { l1, l2 }, 2);
  c = net_network_add_host (net, "c");
  net_network_set_route (net, b, c, (int[]) { l2, l3, l1 }, 3);
  assert_time (net_network_route_latency (net, a, b), 1e-6 + 3e-6);
  g_assert_cmpfloat (net_network_route_bandwidth (net, a, b), ==, 1e9);
  assert_time (net_network_route_latency (net, b, c), 3e-6 + 2e-6 + 1e-6);
  g_assert_cmpfloat (net_network_route_bandwidth (net, b, c), ==, 5e8);
  net_network_free (net);
  eng_sim_free (sim);
}

static void
test_topology_lookup (void)
{
  const NetTopology *const *all = net_topology_all ();
  gboolean found = FALSE;

  g_assert_true (net_topology_lookup ("star") == &net_topology_star);
  g_assert_null (net_topology_lookup ("no-such-topology"));
  for (int i = 0; all[i] != NULL; i++)
    {
      g_assert_nonnull (all[i]->description);
      g_assert_true (net_topology_lookup (all[i]->name) == all[i]);
      found |= all[i] == &net_topology_star;
    }
  g_assert_true (found);
}

static void
test_star_invalid (void)
{
  const char *names[] = { "x", "x" };
  const NetTopologyParams bad[] = {
    { .n_hosts = 0, .names = names, .bandwidth = LINK_BW, .latency = LINK_LAT },
    { .n_hosts = 1, .names = names, .bandwidth = 0, .latency = LINK_LAT },
    { .n_hosts = 1, .names = names, .bandwidth = LINK_BW, .latency = -1 },
    { .n_hosts = 1, .names = NULL, .bandwidth = LINK_BW, .latency = LINK_LAT },
    { .n_hosts = 2, .names = names, .bandwidth = LINK_BW, .latency = LINK_LAT }, /* duplicate */
  };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);

      g_assert_false (net_topology_star.build (net, &bad[i], &error));
      g_assert_error (error, NET_ERROR, NET_ERROR_INVALID);
      g_assert_cmpint (net_network_n_hosts (net), ==, 0);
      net_network_free (net);
      eng_sim_free (sim);
    }
}

/* Freeing a network with transfers in flight cancels their events. */
static void
test_free_in_flight (void)
{
  Fixture fx;

  fixture_init (&fx, 3, NET_CONTENTION_MAXMIN);
  start (&fx, 1, 0, MSG, 1);
  start (&fx, 2, 0, MSG, 2);
  eng_run (fx.sim, 2 * LINK_LAT + 0.5 * MSG / LINK_BW);
  g_assert_cmpuint (net_network_active (fx.net), ==, 2);
  net_network_free (fx.net);
  fx.net = NULL;
  g_assert_cmpuint (eng_sim_pending (fx.sim), ==, 0);
  g_assert_cmpuint (fx.done->len, ==, 0);
  fixture_clear (&fx);
}

/* Many random transfers at random times: all finish, none beats its lower
 * bound L + b / B, and no host receives faster than its downlink allows:
 * the last arrival at d is no earlier than the first start towards d plus
 * L plus (all bytes sent to d) / B. */
static void
test_random_load (void)
{
  const int N = 12, M = 400;
  Fixture fx;
  double L = 2 * LINK_LAT;
  EngRng rng;
  DelayedSend *sends = g_new (DelayedSend, M);
  double first_start[12], last_end[12], bytes_in[12];

  fixture_init (&fx, N, NET_CONTENTION_MAXMIN);
  eng_rng_init (&rng, 1, 0);
  for (int i = 0; i < M; i++)
    {
      int src = (int) eng_rng_below (&rng, N);
      int dst = (int) eng_rng_below (&rng, N - 1);
      double bytes = eng_rng_below (&rng, 4) == 0 ? 0 : eng_rng_uniform (&rng) * MSG;
      double when = eng_rng_uniform (&rng) * 20 * MSG / LINK_BW;

      dst += dst >= src;   /* never a self-send */
      sends[i] = (DelayedSend) { &fx, src, dst, i, bytes };
      eng_schedule (fx.sim, when, on_delayed_send, NULL, &sends[i]);
    }
  eng_run (fx.sim, INFINITY);

  g_assert_cmpuint (fx.done->len, ==, M);
  g_assert_cmpuint (fx.observed->len, ==, M);
  g_assert_cmpuint (net_network_active (fx.net), ==, 0);
  g_assert_cmpuint (eng_sim_pending (fx.sim), ==, 0);
  for (int d = 0; d < N; d++)
    {
      first_start[d] = INFINITY;
      last_end[d] = 0;
      bytes_in[d] = 0;
    }
  for (int i = 0; i < M; i++)
    {
      const NetTransfer *t = &g_array_index (fx.done, NetTransfer, i);
      double bound = t->start + L + t->bytes / LINK_BW;

      g_assert_cmpfloat (t->end, >=, bound - 1e-9 * bound);
      first_start[t->dst] = MIN (first_start[t->dst], t->start);
      last_end[t->dst] = MAX (last_end[t->dst], t->end);
      bytes_in[t->dst] += t->bytes;
    }
  for (int d = 0; d < N; d++)
    if (bytes_in[d] > 0)
      {
        double bound = first_start[d] + L + bytes_in[d] / LINK_BW;
        g_assert_cmpfloat (last_end[d], >=, bound - 1e-9 * bound);
      }
  g_free (sends);
  fixture_clear (&fx);
}

/* --- Incremental re-sharing against the full recompute ------------------ */

/* A probe event: the incremental rates must equal a full progressive
 * filling of every sharing flow at that instant. */
static void
on_rate_probe (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  Fixture *fx = ctx;
  int *n_probed = data;

  g_assert_cmpfloat (net_network_rate_error (fx->net), <=, 1e-12);
  (*n_probed)++;
}

/* Builds the shared-bottleneck network: every host has an uplink and a
 * downlink of bandwidth B, and the hosts form groups of 4, each group behind
 * its own aggregation link pair (up to a core at B, down from it at B/2); a
 * route within a group is [up(s), down(d)], across groups [up(s), agg_up(g
 * of s), core, agg_down(g of d), down(d)], where the core link (1.5 B) is
 * shared by every cross-group flow.  Flows therefore meet on host links,
 * aggregation links and the core, at unequal capacities. */
static void
build_shared (NetNetwork *net, int n_hosts)
{
  double B = LINK_BW, l = LINK_LAT;
  int n_groups = (n_hosts + 3) / 4, core;
  int *up = g_new (int, n_hosts), *down = g_new (int, n_hosts);
  int *agg_up = g_new (int, n_groups), *agg_down = g_new (int, n_groups);

  for (int h = 0; h < n_hosts; h++)
    {
      g_autofree char *name = g_strdup_printf ("h%d", h);
      g_assert_cmpint (net_network_add_host (net, name), ==, h);
      up[h] = net_network_add_link (net, B, l);
      down[h] = net_network_add_link (net, B, l);
    }
  for (int g = 0; g < n_groups; g++)
    {
      agg_up[g] = net_network_add_link (net, B, l);
      agg_down[g] = net_network_add_link (net, B / 2, l);
    }
  core = net_network_add_link (net, 1.5 * B, l);
  for (int s = 0; s < n_hosts; s++)
    for (int d = 0; d < n_hosts; d++)
      if (s != d && s / 4 == d / 4)
        net_network_set_route (net, s, d, (int[]) { up[s], down[d] }, 2);
      else if (s != d)
        net_network_set_route (net, s, d,
                               (int[]) { up[s], agg_up[s / 4], core,
                                         agg_down[d / 4], down[d] }, 5);
  g_free (up);
  g_free (down);
  g_free (agg_up);
  g_free (agg_down);
}

/* Runs M random transfers (sizes, endpoints and start times from `seed`) on
 * a star (shared = FALSE) or the shared-bottleneck network, re-sharing
 * incrementally or fully, with rate probes at random times.  Returns the end
 * time of each transfer, indexed by tag. */
static double *
run_random (gboolean shared, gboolean full, guint64 seed, int n_hosts, int M)
{
  Fixture fx;
  EngRng rng;
  DelayedSend *sends = g_new (DelayedSend, M);
  double *end = g_new (double, M);
  int n_probed = 0;

  if (shared)
    {
      fx.sim = eng_sim_new ();
      fx.net = net_network_new (fx.sim, NET_CONTENTION_MAXMIN);
      fx.done = g_array_new (FALSE, FALSE, sizeof (NetTransfer));
      fx.observed = g_array_new (FALSE, FALSE, sizeof (NetTransfer));
      fx.awaiting = -1;
      build_shared (fx.net, n_hosts);
      net_network_set_observer (fx.net, record_observed, &fx);
    }
  else
    fixture_init (&fx, n_hosts, NET_CONTENTION_MAXMIN);
  net_network_set_full_recompute (fx.net, full);

  eng_rng_init (&rng, seed, 0);
  for (int i = 0; i < M; i++)
    {
      int src = (int) eng_rng_below (&rng, n_hosts);
      int dst = (int) eng_rng_below (&rng, n_hosts - 1);
      double bytes = eng_rng_uniform (&rng) * MSG;
      /* Starts on a coarse grid, so that many coincide. */
      double when = (double) eng_rng_below (&rng, 64) * MSG / LINK_BW / 4;

      dst += dst >= src;
      sends[i] = (DelayedSend) { &fx, src, dst, i, bytes };
      eng_schedule (fx.sim, when, on_delayed_send, NULL, &sends[i]);
      eng_schedule (fx.sim, eng_rng_uniform (&rng) * 20 * MSG / LINK_BW,
                    on_rate_probe, &fx, &n_probed);
    }
  eng_run (fx.sim, INFINITY);

  g_assert_cmpint (n_probed, ==, M);
  g_assert_cmpuint (fx.done->len, ==, M);
  for (int i = 0; i < M; i++)
    {
      const NetTransfer *t = &g_array_index (fx.done, NetTransfer, i);
      end[t->tag] = t->end;
    }
  g_free (sends);
  fixture_clear (&fx);
  return end;
}

/* The incremental and full re-sharing give the same end times (to 1e-9
 * relative) on several random workloads, and the incremental rates equal a
 * full filling at every probe. */
static void
check_incremental_equals_full (gboolean shared)
{
  const int N = 16, M = 600;

  for (guint64 seed = 1; seed <= 4; seed++)
    {
      g_autofree double *inc = run_random (shared, FALSE, seed, N, M);
      g_autofree double *full = run_random (shared, TRUE, seed, N, M);

      for (int i = 0; i < M; i++)
        assert_time (inc[i], full[i]);
    }
}

static void
test_incremental_star (void)
{
  check_incremental_equals_full (FALSE);
}

static void
test_incremental_shared (void)
{
  check_incremental_equals_full (TRUE);
}

/* A flow in a component of its own keeps its completion event while flows
 * elsewhere join and leave: A (h0 -> h1) runs alone; B and C (h2 -> h3 and
 * h4 -> h3, sharing h3's downlink) start and finish during A, and B's end
 * re-shares C.  A's event id never changes, A is scheduled once, and it
 * ends at L + b_A / B as if alone. */
static void
test_disjoint_component (void)
{
  Fixture fx;
  double L = 2 * LINK_LAT, b = MSG;
  DelayedSend later[2];
  EngEventId a_event;
  guint64 before;

  fixture_init (&fx, 5, NET_CONTENTION_MAXMIN);
  start (&fx, 0, 1, 10 * b, 'A');
  eng_run (fx.sim, L);    /* A's latency is over: it has its completion */
  a_event = net_network_flow_event (fx.net, 'A');
  g_assert_cmpuint (a_event, !=, 0);
  before = net_network_reschedules (fx.net);

  later[0] = (DelayedSend) { &fx, 2, 3, 'B', b };
  later[1] = (DelayedSend) { &fx, 4, 3, 'C', 2 * b };
  eng_schedule (fx.sim, b / LINK_BW, on_delayed_send, NULL, &later[0]);
  eng_schedule (fx.sim, 1.5 * b / LINK_BW, on_delayed_send, NULL, &later[1]);
  /* B joins alone, C joins halfway through B (both at B / 2), B ends, C
   * goes on alone, then C ends. */
  while (fx.done->len < 2)
    {
      g_assert_true (eng_step (fx.sim));
      g_assert_cmpuint (net_network_flow_event (fx.net, 'A'), ==, a_event);
    }
  /* B: one schedule, moved when C joined; C: one schedule, moved when B
   * left.  None for A. */
  g_assert_cmpuint (net_network_reschedules (fx.net) - before, ==, 4);
  eng_run (fx.sim, INFINITY);

  /* Sent at L + b/B and L + 1.5 b/B; B has b/2 left when C joins. */
  assert_time (by_tag (&fx, 'B')->end, 2 * L + 2.5 * b / LINK_BW);
  assert_time (by_tag (&fx, 'C')->end, 2 * L + 4 * b / LINK_BW);
  assert_time (by_tag (&fx, 'A')->end, L + 10 * b / LINK_BW);
  fixture_clear (&fx);
}

/* A local change in a large component re-fills few flows.  On a star of N
 * hosts, every host i sends to i + 1 and i + 2 (mod N): each uplink and
 * each downlink carries two flows, so the 2N flows form one component, all
 * at B / 2, every link saturated.  When 0 -> 1 (the only short transfer)
 * finishes, up0 and down1 keep one flow each, but 0 -> 2 stays bottlenecked
 * on down2 and N-1 -> 1 on up(N-1), where they tie with flows that have no
 * more: no rate changes.  When 5 -> 8 joins, up5 and down8 are shared three
 * ways (B / 3), 6 -> 7 takes the B / 6 freed on up6 and down7 (2 B / 3), and
 * the links around keep their flows at B / 2.  Either way only a handful of
 * flows near the change can move, and only they may be re-filled (today's
 * component re-share would re-fill all 2N). */
static void
test_local_change (void)
{
  const int N = 256;
  Fixture fx;
  double L = 2 * LINK_LAT, B = LINK_BW, b = MSG;
  double t1 = L + b / (B / 2);   /* 0 -> 1 ends */
  DelayedSend late;
  guint64 before;

  fixture_init (&fx, N, NET_CONTENTION_MAXMIN);
  for (int i = 0; i < N; i++)
    {
      start (&fx, i, (i + 1) % N, i == 0 ? b : 100 * b, 2 * i);
      start (&fx, i, (i + 2) % N, 100 * b, 2 * i + 1);
    }
  eng_run (fx.sim, L);   /* every flow joined and was re-filled once */
  g_assert_cmpuint (net_network_refilled (fx.net), >=, 2 * N);
  g_assert_cmpfloat (net_network_rate_error (fx.net), <=, 1e-12);

  before = net_network_refilled (fx.net);
  eng_run (fx.sim, t1);
  g_assert_cmpuint (fx.done->len, ==, 1);
  assert_time (by_tag (&fx, 0)->end, t1);
  g_test_message ("leave: %" G_GUINT64_FORMAT " flows re-filled",
                  net_network_refilled (fx.net) - before);
  g_assert_cmpuint (net_network_refilled (fx.net) - before, <=, 16);
  g_assert_cmpfloat (net_network_rate_error (fx.net), <=, 1e-12);

  late = (DelayedSend) { &fx, 5, 8, 'J', b };
  eng_schedule (fx.sim, b / B, on_delayed_send, NULL, &late);
  before = net_network_refilled (fx.net);
  eng_run (fx.sim, t1 + L + b / B);   /* J's latency is over */
  g_test_message ("join: %" G_GUINT64_FORMAT " flows re-filled",
                  net_network_refilled (fx.net) - before);
  g_assert_cmpuint (net_network_refilled (fx.net) - before, <=, 16);
  g_assert_cmpfloat (net_network_rate_error (fx.net), <=, 1e-12);

  /* J: alone at B / 3 until it ends; its end re-shares as locally. */
  before = net_network_refilled (fx.net);
  eng_run (fx.sim, t1 + L + b / B + b / (B / 3));
  g_assert_cmpuint (fx.done->len, ==, 2);
  assert_time (by_tag (&fx, 'J')->end, t1 + L + b / B + b / (B / 3));
  g_assert_cmpuint (net_network_refilled (fx.net) - before, <=, 16);
  g_assert_cmpfloat (net_network_rate_error (fx.net), <=, 1e-12);
  fixture_clear (&fx);
}

/* --- Randomized churn on real topologies -------------------------------- */

/* Transfers join and leave a star, a racks network with oversubscribed rack
 * links and a fat-tree, at distinct and at equal times: first-generation
 * transfers start at t = 0, on a coarse grid or at arbitrary times, with
 * sizes that often repeat (so that many finish together); each finished
 * transfer may start a child from its destination at that very instant, up
 * to `depth` generations.  Every draw for a transfer comes from its own
 * random stream (seed, tag), so the workload does not depend on the order
 * in which simultaneous completions are reported. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  guint64 seed;
  int n_hosts;
  int n_first;     /* first-generation transfers, tags 0 .. n_first - 1 */
  int depth;       /* generations; tag t's child has tag t + n_first */
  double *end;     /* (n_first * depth), end time by tag, -1 if never sent */
  int n_sent, n_done;
} Churn;

typedef struct {
  Churn *c;
  int src, tag;
} ChurnStart;

static void churn_send (Churn *c, int src, int tag);

static void
on_churn_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx,
               gpointer data G_GNUC_UNUSED, const NetTransfer *t)
{
  Churn *c = ctx;
  EngRng rng;

  g_assert_cmpfloat (c->end[t->tag], ==, -2);
  c->end[t->tag] = t->end;
  c->n_done++;
  eng_rng_init (&rng, c->seed, 2 * (guint64) t->tag + 1);
  if (t->tag + c->n_first < c->n_first * c->depth
      && eng_rng_below (&rng, 3) != 0)
    churn_send (c, t->dst, t->tag + c->n_first);
}

/* Sends transfer `tag` from `src` to a host and of a size drawn from the
 * tag's stream: a quarter of them MSG, a quarter MSG / 2, the rest between
 * MSG / 100 and MSG. */
static void
churn_send (Churn *c, int src, int tag)
{
  EngRng rng;
  int dst;
  double bytes;

  eng_rng_init (&rng, c->seed, 2 * (guint64) tag);
  dst = (int) eng_rng_below (&rng, c->n_hosts - 1);
  dst += dst >= src;
  switch (eng_rng_below (&rng, 4))
    {
    case 0:
      bytes = MSG;
      break;
    case 1:
      bytes = MSG / 2;
      break;
    default:
      bytes = (0.01 + 0.99 * eng_rng_uniform (&rng)) * MSG;
    }
  c->end[tag] = -2;
  c->n_sent++;
  net_send (c->net, src, dst, bytes, tag, on_churn_done, c, NULL);
}

static void
on_churn_start (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED,
                gpointer data)
{
  ChurnStart *s = data;
  churn_send (s->c, s->src, s->tag);
}

static void
on_churn_probe (EngSim *sim G_GNUC_UNUSED, gpointer ctx,
                gpointer data G_GNUC_UNUSED)
{
  Churn *c = ctx;
  g_assert_cmpfloat (net_network_rate_error (c->net), <=, 1e-9);
}

/* Builds topology `topo` with n_hosts hosts h0, h1, ... (racks: rack_size 4,
 * oversubscription 3, so a rack's uplink carries 4/3 of a host link). */
static void
churn_build (NetNetwork *net, const char *topo, int n_hosts)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (BaseValues) values = net_topology_values_new ();
  NetTopologyParams p = { 0 };

  for (int h = 0; h < n_hosts; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  base_values_set_int (values, "network.rack_size", 4);
  base_values_set_double (values, "network.oversubscription", 3);
  p.n_hosts = n_hosts;
  p.names = (const char *const *) names->pdata;
  p.bandwidth = LINK_BW;
  p.latency = LINK_LAT;
  p.values = values;
  g_assert_true (net_topology_lookup (topo)->build (net, &p, &error));
  g_assert_no_error (error);
}

/* How churn_run re-shares. */
typedef enum {
  CHURN_REGION,      /* the default: the flows a change can affect */
  CHURN_COMPONENT,   /* the same, but a region that fails its first check
                        takes in its whole component at once */
  CHURN_FULL         /* every flow at every change (the reference) */
} ChurnMode;

/* Runs the churn of `seed` on `topo`, re-sharing as `mode` says.
 * With `every_event`, the rates are checked against a full filling after
 * every event (which re-shares the instant's changes so far at once);
 * otherwise at random probe times, so changes at equal times are re-shared
 * together.  Returns the end times by tag (-1: never sent). */
static double *
churn_run (const char *topo, guint64 seed, ChurnMode mode,
           gboolean every_event)
{
  const int n_hosts = 24, n_first = 160, depth = 4;
  Churn c = { 0 };
  EngRng rng;
  ChurnStart *starts = g_new (ChurnStart, n_first);
  double span = 12 * MSG / LINK_BW;   /* s, over which first starts spread */

  c.sim = eng_sim_new ();
  c.net = net_network_new (c.sim, NET_CONTENTION_MAXMIN);
  c.seed = seed;
  c.n_hosts = n_hosts;
  c.n_first = n_first;
  c.depth = depth;
  c.end = g_new (double, n_first * depth);
  for (int i = 0; i < n_first * depth; i++)
    c.end[i] = -1;
  churn_build (c.net, topo, n_hosts);
  net_network_set_full_recompute (c.net, mode == CHURN_FULL);
  if (mode == CHURN_COMPONENT)
    net_network_set_region_passes (c.net, 1);

  eng_rng_init (&rng, seed, 0);
  for (int i = 0; i < n_first; i++)
    {
      double when;

      switch (eng_rng_below (&rng, 3))
        {
        case 0:
          when = 0;
          break;
        case 1:
          when = (double) eng_rng_below (&rng, 24) * span / 24;
          break;
        default:
          when = eng_rng_uniform (&rng) * span;
        }
      starts[i] = (ChurnStart) { &c, (int) eng_rng_below (&rng, n_hosts), i };
      eng_schedule (c.sim, when, on_churn_start, NULL, &starts[i]);
      if (!every_event)
        eng_schedule (c.sim, eng_rng_uniform (&rng) * 2 * span,
                      on_churn_probe, &c, NULL);
    }
  if (every_event)
    while (eng_step (c.sim))
      g_assert_cmpfloat (net_network_rate_error (c.net), <=, 1e-9);
  else
    eng_run (c.sim, INFINITY);

  g_assert_cmpint (c.n_done, ==, c.n_sent);
  g_assert_cmpint (c.n_sent, >, n_first);
  g_assert_cmpuint (net_network_active (c.net), ==, 0);
  net_network_free (c.net);
  eng_sim_free (c.sim);
  g_free (starts);
  return c.end;
}

/* On `topo`, for several seeds and both ways of probing: the incremental
 * rates equal a full filling (checked inside churn_run), and every transfer
 * ends when it does with the full recompute, to 1e-9 relative, whether
 * regions that fail a check grow flow by flow or take in their component. */
static void
check_churn (const char *topo)
{
  for (guint64 seed = 1; seed <= 3; seed++)
    for (int every_event = 0; every_event <= 1; every_event++)
      {
        g_autofree double *full = churn_run (topo, seed, CHURN_FULL,
                                             every_event);

        for (ChurnMode mode = CHURN_REGION; mode < CHURN_FULL; mode++)
          {
            g_autofree double *inc = churn_run (topo, seed, mode,
                                                every_event);

            for (int i = 0; i < 160 * 4; i++)
              if (full[i] < 0)
                g_assert_cmpfloat (inc[i], ==, full[i]);
              else
                assert_time (inc[i], full[i]);
          }
      }
}

static void
test_churn_star (void)
{
  check_churn ("star");
}

static void
test_churn_racks (void)
{
  check_churn ("racks");
}

static void
test_churn_fat_tree (void)
{
  check_churn ("fat-tree");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/netmodel/star/single-flow", test_single_flow);
  g_test_add_func ("/netmodel/star/incast", test_incast);
  g_test_add_func ("/netmodel/star/incast-unequal", test_incast_unequal);
  g_test_add_func ("/netmodel/star/staggered", test_staggered);
  g_test_add_func ("/netmodel/maxmin/unequal-shares", test_unequal_shares);
  g_test_add_func ("/netmodel/star/contention-none", test_contention_none);
  g_test_add_func ("/netmodel/star/zero-bytes", test_zero_bytes);
  g_test_add_func ("/netmodel/star/self-send", test_self_send);
  g_test_add_func ("/netmodel/star/observer", test_observer);
  g_test_add_func ("/netmodel/star/ping-pong", test_ping_pong);
  g_test_add_func ("/netmodel/star/duplex-and-uplink", test_duplex_and_uplink);
  g_test_add_func ("/netmodel/star/route-queries", test_route_queries);
  g_test_add_func ("/netmodel/network/route-growth", test_route_growth);
  g_test_add_func ("/netmodel/network/route-override", test_route_override);
  g_test_add_func ("/netmodel/network/router", test_router);
  g_test_add_func ("/netmodel/topology/lookup", test_topology_lookup);
  g_test_add_func ("/netmodel/star/invalid", test_star_invalid);
  g_test_add_func ("/netmodel/network/free-in-flight", test_free_in_flight);
  g_test_add_func ("/netmodel/star/random-load", test_random_load);
  g_test_add_func ("/netmodel/maxmin/incremental-star", test_incremental_star);
  g_test_add_func ("/netmodel/maxmin/incremental-shared",
                   test_incremental_shared);
  g_test_add_func ("/netmodel/maxmin/disjoint-component",
                   test_disjoint_component);
  g_test_add_func ("/netmodel/maxmin/local-change", test_local_change);
  g_test_add_func ("/netmodel/maxmin/churn-star", test_churn_star);
  g_test_add_func ("/netmodel/maxmin/churn-racks", test_churn_racks);
  g_test_add_func ("/netmodel/maxmin/churn-fat-tree", test_churn_fat_tree);
  return g_test_run ();
}
