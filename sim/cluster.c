/*
 * cluster.c — the network of a configuration: topology and link overrides.
 *
 * [network] links overrides single links after the topology is built:
 *   links = rack0.up 1Gbps; worker3.down 100Mbps 200us
 * Each entry is a link name (docs/network.md lists each topology's names),
 * its new bandwidth, and optionally its new latency.  The scenario loader
 * builds the network once to check these, so a wrong name is reported before
 * anything runs.
 */
#include "config.h"

#include <string.h>

#include "policies/policy.h"
#include "sim/cluster.h"
#include "sim/units.h"

NetTopologyParams
sim_topology_params (const SimConfig *c, GPtrArray *names)
{
  NetTopologyParams p = {
    .n_hosts = (int) names->len,
    .names = (const char *const *) names->pdata,
    .bandwidth = c->bandwidth,
    .latency = c->latency,
    .values = c->values,
  };
  return p;
}

static gboolean
apply_overrides (NetNetwork *net, const char *spec, const char *file, GError **error)
{
  g_auto (GStrv) entries = g_strsplit (spec, ";", -1);
  for (int i = 0; entries[i]; i++)
    {
      char *e = g_strstrip (entries[i]);
      if (*e == '\0')
        continue;
      g_auto (GStrv) w = g_strsplit_set (e, " \t", -1);
      const char *parts[3] = { NULL, NULL, NULL };
      int n = 0;
      for (int j = 0; w[j]; j++)
        if (w[j][0] != '\0')
          {
            if (n == 3)
              {
                n = 4;
                break;
              }
            parts[n++] = w[j];
          }
      if (n < 2 || n > 3)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' is not 'NAME BANDWIDTH [LATENCY]'; write e.g."
                       " links = rack0.up 1Gbps; worker3.down 100Mbps 200us", file, e);
          return FALSE;
        }
      int link = net_network_link_id (net, parts[0]);
      if (link < 0)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: no link named '%s' in this topology; see"
                       " docs/network.md for the link names", file, parts[0]);
          return FALSE;
        }
      double bw, lat = net_network_link_latency (net, link);
      const char *why = NULL;
      if (!sim_parse_quantity (parts[1], SIM_UNIT_BANDWIDTH, &bw, &why) || !(bw > 0))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' for %s is not a positive bandwidth; expected"
                       " a bandwidth such as 10Gbps", file, parts[1], parts[0]);
          return FALSE;
        }
      if (parts[2] && (!sim_parse_quantity (parts[2], SIM_UNIT_TIME, &lat, &why) || lat < 0))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' for %s is not a latency; expected a time"
                       " such as 5us", file, parts[2], parts[0]);
          return FALSE;
        }
      net_network_set_link (net, link, bw, lat);
    }
  return TRUE;
}

NetNetwork *
sim_network_build (const SimConfig *c, EngSim *sim, const char *file, GError **error)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  const NetTopology *topo = net_topology_lookup (c->topology);
  g_return_val_if_fail (ops && topo, NULL);
  NetNetwork *net = net_network_new (sim, c->contention == 0 ? NET_CONTENTION_MAXMIN
                                                             : NET_CONTENTION_NONE);
  g_autoptr (GPtrArray) names = ops->host_names ((int) c->workers, (int) c->servers);
  NetTopologyParams p = sim_topology_params (c, names);
  g_autoptr (GError) local = NULL;
  if (!topo->build (net, &p, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [network] topology: %s", file,
                   local->message);
      net_network_free (net);
      return NULL;
    }
  if (c->links && !apply_overrides (net, c->links, file, error))
    {
      net_network_free (net);
      return NULL;
    }
  return net;
}
