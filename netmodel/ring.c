/*
 * ring.c — the "ring" topology: hosts cabled in a ring, no switch.
 *
 * Host i has a full-duplex cable to host i+1 (mod n): two one-way links of
 * `bandwidth` and `latency`, named "<h_i>-><h_i+1>" (clockwise) and
 * "<h_i+1>-><h_i>" (counter-clockwise).  Two hosts share one cable; one host
 * has none.
 *
 * The route from a to b goes the shorter way round, clockwise (increasing
 * host id) on a tie, and crosses every link between them: d hops cost d
 * links, so latency d * latency.  Shared: every flow crossing a link, which
 * includes flows that only pass through a host on their way; flows going
 * round in opposite directions never compete.  Routes are computed when
 * asked (ring_route) from the two link ids of each cable.
 */
#include "netmodel/netmodel.h"

#include <string.h>

/* Checks `p` (with `net`, may be NULL). */
static gboolean
ring_check (const NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  if (!net_topology_check_hosts ("ring", net, p, error))
    return FALSE;
  for (int h = 0; h < p->n_hosts; h++)
    if (strstr (p->names[h], "->") != NULL)
      {
        g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                     "ring topology: host name '%s' contains '->', which "
                     "separates host names in link names; rename the host",
                     p->names[h]);
        return FALSE;
      }
  return TRUE;
}

/* What a ring's routes are computed from. */
typedef struct {
  int first;     /* host id of host 0 */
  int n;         /* hosts */
  int *cw;       /* (n) link ids, host i -> host i+1 (none: one host) */
  int *ccw;      /* (n) link ids, host i+1 -> host i */
  int links[];   /* storage of cw and ccw */
} RingRoutes;

/* NetRouteFunc: the shorter way round, clockwise on a tie: hops =
 * min (cw, n - cw) links, cw = (b - a) mod n. */
static int
ring_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const RingRoutes *s = ctx;
  int n = s->n, a = src - s->first, b = dst - s->first;
  int d_cw, hops;

  if (a < 0 || a >= n || b < 0 || b >= n || a == b)
    return 0;
  d_cw = (b - a + n) % n;   /* hops clockwise */
  hops = MIN (d_cw, n - d_cw);
  if (hops > max)
    return hops;
  if (d_cw <= n - d_cw)
    for (int i = 0; i < hops; i++)
      links[i] = s->cw[(a + i) % n];
  else
    for (int i = 0; i < hops; i++)
      links[i] = s->ccw[(a - 1 - i + n) % n];
  return hops;
}

/* Adds the ring's links, their ids into s->cw and s->ccw (n >= 2). */
static void
ring_add_links (NetNetwork *net, const NetTopologyParams *p, RingRoutes *s)
{
  int n = p->n_hosts;

  for (int i = 0; i < n; i++)
    {
      g_autofree char *name = g_strdup_printf ("%s->%s", p->names[i],
                                               p->names[(i + 1) % n]);
      s->cw[i] = net_network_add_named_link (net, name, p->bandwidth,
                                             p->latency);
    }
  for (int i = 0; i < n; i++)
    {
      /* With two hosts, i+1 -> i is the clockwise link of i+1. */
      g_autofree char *name = NULL;

      if (n == 2)
        {
          s->ccw[i] = s->cw[(i + 1) % n];
          continue;
        }
      name = g_strdup_printf ("%s->%s", p->names[(i + 1) % n], p->names[i]);
      s->ccw[i] = net_network_add_named_link (net, name, p->bandwidth,
                                              p->latency);
    }
}

static gboolean
ring_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  RingRoutes *s;
  gsize size;
  int n;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!ring_check (net, p, error))
    return FALSE;
  n = p->n_hosts;

  size = sizeof (RingRoutes) + sizeof (int) * 2 * (gsize) n;
  s = g_malloc (size);
  s->n = n;
  s->cw = s->links;
  s->ccw = s->links + n;
  s->first = net_network_n_hosts (net);
  for (int h = 0; h < n; h++)
    net_network_add_host (net, p->names[h]);
  if (n >= 2)
    ring_add_links (net, p, s);
  net_network_set_router (net, ring_route, s, g_free, size);
  return TRUE;
}

/* One paragraph on the ring `p` describes; NULL when invalid.  Cutting the
 * ring in two halves cuts two cables: bisection bandwidth 2 * bandwidth (one
 * cable with two hosts, none with one). */
static char *
ring_summary (const NetTopologyParams *p)
{
  int n, n_links, cables;

  if (!ring_check (NULL, p, NULL))
    return NULL;
  n = p->n_hosts;
  n_links = n == 1 ? 0 : n == 2 ? 2 : 2 * n;
  cables = n == 1 ? 0 : n == 2 ? 1 : 2;
  return g_strdup_printf (
    "ring: %d hosts, no switch, %d one-way links (<a>-><b>) of %.4g Gbit/s "
    "and %.4g us between neighbours; a transfer takes the shorter way round "
    "(clockwise on a tie), up to %d links (latency up to %.4g us); bisection "
    "bandwidth %.4g Gbit/s. Shared: each link by every flow crossing it, "
    "including flows passing through a host; opposite directions never "
    "compete.",
    n, n_links, p->bandwidth * 8 / 1e9, p->latency * 1e6, n / 2,
    (n / 2) * p->latency * 1e6, cables * p->bandwidth * 8 / 1e9);
}

/* Every host alone: each phase's routes form one flow class. */
static int
ring_class_group (const BaseValues *values G_GNUC_UNUSED, gint64 workers G_GNUC_UNUSED)
{
  return 1;
}

const NetTopology net_topology_ring = {
  .name = "ring",
  .description = "Every host is cabled to its two neighbours in a ring; a "
                 "transfer goes the shorter way round, crossing every link "
                 "between the two hosts.",
  .build = ring_build,
  .summary = ring_summary,
  .class_group = ring_class_group,
};
