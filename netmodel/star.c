/*
 * star.c — the "star" topology and the registry of topologies.
 *
 * A star is the simplest switched cluster: every host has one full-duplex
 * cable to a single non-blocking switch, modelled as two one-way links (the
 * host's uplink, host -> switch, and its downlink, switch -> host), each with
 * the full bandwidth and latency.  The route from a to b is [uplink(a),
 * downlink(b)], so its latency is twice the link latency, and the only
 * contention is between flows leaving the same host (they share its uplink)
 * or arriving at the same host (they share its downlink, as in an incast).
 *
 * Its links are named "<host>.up" and "<host>.down".
 *
 * The registry is a static NULL-terminated table; adding a topology is adding
 * a file with its NetTopology and one line here.  The check of the fields
 * every topology shares (net_topology_check_hosts) lives here too.
 */
#include "netmodel/netmodel.h"

#include <math.h>

/* Checks the fields every topology uses, before anything is added to `net`
 * (which may be NULL); messages begin with "<topology> topology: ". */
void
net_topology_add_hosts (NetNetwork *net, const NetTopologyParams *p, int *host,
                        int *up, int *down)
{
  for (int h = 0; h < p->n_hosts; h++)
    {
      host[h] = net_network_add_host (net, p->names[h]);
      net_network_add_cable (net, p->names[h], p->bandwidth, p->latency, &up[h], &down[h]);
    }
}

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

static gboolean
star_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  g_autofree int *host = NULL;  /* (n_hosts) host ids */
  g_autofree int *up = NULL;    /* (n_hosts) link ids, host -> switch */
  g_autofree int *down = NULL;  /* (n_hosts) link ids, switch -> host */

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!net_topology_check_hosts ("star", net, p, error))
    return FALSE;

  host = g_new (int, p->n_hosts);
  up = g_new (int, p->n_hosts);
  down = g_new (int, p->n_hosts);
  net_topology_add_hosts (net, p, host, up, down);
  for (int a = 0; a < p->n_hosts; a++)
    for (int b = 0; b < p->n_hosts; b++)
      if (a != b)
        {
          int route[2] = { up[a], down[b] };
          net_network_set_route (net, host[a], host[b], route, 2);
        }
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

const NetTopology net_topology_star = {
  .name = "star",
  .description = "Every host has one full-duplex link to a single "
                 "non-blocking switch; host to host crosses the sender's "
                 "uplink and the receiver's downlink.",
  .build = star_build,
  .summary = star_summary,
};
