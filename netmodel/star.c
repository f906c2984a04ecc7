/*
 * star.c — the "star" topology and the helpers every topology uses.
 *
 * A star is the simplest switched cluster: every host has one full-duplex
 * cable to a single non-blocking switch, modelled as two one-way links (the
 * host's uplink, host -> switch, and its downlink, switch -> host), each with
 * the full bandwidth and latency.  The route from a to b is [uplink(a),
 * downlink(b)], so its latency is twice the link latency, and the only
 * contention is between flows leaving the same host (they share its uplink)
 * or arriving at the same host (they share its downlink, as in an incast).
 *
 * Its links are named "<host>.up" and "<host>.down".  Routes are computed
 * when asked (star_route) from each host's two link ids.
 *
 * The check of the fields every topology shares (net_topology_check_hosts)
 * and the host cables most of them start with (net_topology_add_hosts) live
 * here too; the registry is netmodel/topologies.c.
 */
#include "netmodel/netmodel.h"

#include <math.h>

/* Adds p's hosts in order, each with its cable "<name>.up" / "<name>.down";
 * returns the id of the first host (the others follow it) and writes every
 * host's uplink and downlink ids into up and down (n_hosts each). */
int
net_topology_add_hosts (NetNetwork *net, const NetTopologyParams *p, int *up,
                        int *down)
{
  int first = net_network_n_hosts (net);

  for (int h = 0; h < p->n_hosts; h++)
    {
      int id = net_network_add_host (net, p->names[h]);

      g_assert (id == first + h);
      net_network_add_cable (net, p->names[h], p->bandwidth, p->latency,
                             &up[h], &down[h]);
    }
  return first;
}

/* Checks the fields every topology uses, before anything is added to `net`
 * (which may be NULL); messages begin with "<topology> topology: ". */
gboolean
net_topology_check_hosts (const char *topology, const NetNetwork *net,
                          const NetTopologyParams *p, GError **error)
{
  g_autoptr (GHashTable) seen = NULL;

  g_return_val_if_fail (topology != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);

  if (p->n_hosts < 1)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "%s topology: expected at least 1 host, found %d",
                   topology, p->n_hosts);
      return FALSE;
    }
  if (!(isfinite (p->bandwidth) && p->bandwidth > 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "%s topology: expected a link bandwidth > 0 bytes/s, "
                   "found %g", topology, p->bandwidth);
      return FALSE;
    }
  if (!(isfinite (p->latency) && p->latency >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "%s topology: expected a link latency >= 0 s, found %g",
                   topology, p->latency);
      return FALSE;
    }
  if (p->names == NULL)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "%s topology: expected %d host names, found none",
                   topology, p->n_hosts);
      return FALSE;
    }
  seen = g_hash_table_new (g_str_hash, g_str_equal);
  for (int h = 0; h < p->n_hosts; h++)
    {
      const char *name = p->names[h];

      if (name == NULL || *name == '\0')
        {
          g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                       "%s topology: host %d has no name", topology, h);
          return FALSE;
        }
      if (!g_hash_table_add (seen, (gpointer) name)
          || (net != NULL && net_network_host_id (net, name) >= 0))
        {
          g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                       "%s topology: host name '%s' is used twice",
                       topology, name);
          return FALSE;
        }
    }
  return TRUE;
}

/* What a star's routes are computed from. */
typedef struct {
  int first;     /* host id of the star's host 0 */
  int n;         /* hosts */
  int *up;       /* (n) link ids, host -> switch */
  int *down;     /* (n) link ids, switch -> host */
  int links[];   /* storage of up and down */
} StarRoutes;

/* NetRouteFunc: [up(a), down(b)]. */
static int
star_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const StarRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;

  if (a < 0 || a >= s->n || b < 0 || b >= s->n || a == b)
    return 0;
  if (max >= 2)
    {
      links[0] = s->up[a];
      links[1] = s->down[b];
    }
  return 2;
}

/* NetFoldCheck: any block size that cuts the hosts into two copies or
 * more (the switch is non-blocking). */
static gboolean
star_fold_check (gconstpointer ctx, int period)
{
  const StarRoutes *s = ctx;

  return net_copies_fit (s->n, 1, period);
}

/* NetFoldRoute: [up(a), down(b mod period)]. */
static int
star_fold_route (gconstpointer ctx, int period, int src, int dst, int *links,
                 int max)
{
  const StarRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;

  if (a < 0 || a >= period || b < 0 || b >= s->n || a == b)
    return 0;
  if (max >= 2)
    {
      links[0] = s->up[a];
      links[1] = s->down[b % period];
    }
  return 2;
}

static gboolean
star_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  StarRoutes *s;
  gsize size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!net_topology_check_hosts ("star", net, p, error))
    return FALSE;

  size = sizeof (StarRoutes) + sizeof (int) * 2 * (gsize) p->n_hosts;
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->up = s->links;
  s->down = s->links + p->n_hosts;
  s->first = net_topology_add_hosts (net, p, s->up, s->down);
  net_network_set_router (net, star_route, s, g_free, size);
  net_network_set_folder (net, star_fold_check, star_fold_route);
  return TRUE;
}

/* One paragraph on the star `p` describes; NULL when `p` is invalid. */
static char *
star_summary (const NetTopologyParams *p)
{
  if (!net_topology_check_hosts ("star", NULL, p, NULL))
    return NULL;
  return g_strdup_printf (
    "star: %d hosts, 1 non-blocking switch, %d one-way links (<host>.up, "
    "<host>.down) of %.4g Gbit/s and %.4g us; a transfer crosses 2 links "
    "(latency %.4g us); bisection bandwidth %.4g Gbit/s. Shared: flows "
    "leaving a host share its uplink, flows arriving at a host its downlink; "
    "nothing else.",
    p->n_hosts, 2 * p->n_hosts, p->bandwidth * 8 / 1e9, p->latency * 1e6,
    2 * p->latency * 1e6, (p->n_hosts / 2) * p->bandwidth * 8 / 1e9);
}

/* Every host alone: each phase's routes form one flow class. */
static int
star_class_group (const BaseValues *values G_GNUC_UNUSED, gint64 workers G_GNUC_UNUSED)
{
  return 1;
}

/* Copies of any size that cuts the hosts into two or more. */
static gboolean
star_copies (const BaseValues *values G_GNUC_UNUSED, gint64 workers, int period)
{
  return net_copies_fit (workers, 1, period);
}

const NetTopology net_topology_star = {
  .name = "star",
  .description = "Every host has one full-duplex link to a single "
                 "non-blocking switch; host to host crosses the sender's "
                 "uplink and the receiver's downlink.",
  .build = star_build,
  .summary = star_summary,
  .class_group = star_class_group,
  .copies = star_copies,
};
