/*
 * topologies.c — the registry of topologies, and the keys several share.
 *
 * A topology is one file of netmodel/ defining one NetTopology (its name,
 * description, source, its own [network] keys, `build` and `summary`) and
 * one line in the table below.
 */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include "netmodel/netmodel.h"

extern const NetTopology net_topology_racks;
extern const NetTopology net_topology_fat_tree;
extern const NetTopology net_topology_ring;
extern const NetTopology net_topology_nodes;
extern const NetTopology net_topology_dgx1;
extern const NetTopology net_topology_torus;

/* Every registered topology, NULL-terminated. */
static const NetTopology *const net_topologies[] = {
  &net_topology_star,
  &net_topology_racks,
  &net_topology_fat_tree,
  &net_topology_ring,
  &net_topology_nodes,
  &net_topology_dgx1,
  &net_topology_torus,
  NULL
};

const void *const *
net_topology_entries (void)
{
  return (const void *const *) net_topologies;
}

/* Keys more than one topology reads. */
static const BaseKey shared_keys[] = {
  { .section = "network", .key = "switch_latency", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_TIME, .def = "0", .min = 0, .max = BASE_BIG,
    .doc = "racks, fat-tree: latency of every switch-to-switch link." },
  { .section = "network", .key = "intra_bandwidth", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_BANDWIDTH, .def = "0", .min = 0, .max = BASE_BIG,
    .doc = "nodes: bandwidth of each GPU's link inside its node, e.g. NVLink (0 = 10 x bandwidth); dgx1: of one NVLink link, a pair wired by two carrying twice this (0 = 25 GB/s, 20 GB/s with mesh = p100; set it rather than intra_fabric, whose catalog figure is all of a GPU's links together)." },
  { .section = "network", .key = "intra_efficiency", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_NONE, .def = "1", .min = 0, .max = 1, .open = BASE_OPEN_MIN,
    .doc = "nodes, dgx1: share of intra_bandwidth each GPU's link (dgx1: each NVLink link) delivers, in (0, 1]: it carries intra_bandwidth x intra_efficiency. Default 1; intra_fabric's catalog figure where intra_bandwidth is not set." },
  { .section = "network", .key = "intra_latency", .type = BASE_KEY_QUANTITY,
    .unit = BASE_UNIT_TIME, .def = "0", .min = 0, .max = BASE_BIG,
    .doc = "nodes: latency of each GPU's link inside its node; dgx1: of each NVLink connection (a transfer relayed by a third GPU crosses two)." },
  { .section = NULL },
};

/* The registered topology called `name`, or NULL. */
const NetTopology *
net_topology_lookup (const char *name)
{
  return base_registry_find ((const void *const *) net_topologies, name);
}

/* The NULL-terminated table of all registered topologies, static. */
const NetTopology *const *
net_topology_all (void)
{
  return net_topologies;
}

void
net_topology_keys (GPtrArray *rows)
{
  base_registry_keys (rows, shared_keys, (const void *const *) net_topologies,
                      G_STRUCT_OFFSET (NetTopology, keys));
}

BaseValues *
net_topology_values_new (void)
{
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  net_topology_keys (rows);
  return base_values_new (rows);
}

const BaseValues *
net_topology_values (const NetTopologyParams *p)
{
  static BaseValues *defaults; /* built once, read only */
  if (p->values)
    return p->values;
  if (g_once_init_enter (&defaults))
    g_once_init_leave (&defaults, net_topology_values_new ());
  return defaults;
}

gboolean
net_topology_key_error (GError **error, const char *topology, const char *key,
                        const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, NET_ERROR, NET_ERROR_INVALID, "%s topology: [network] %s: %s", topology,
               key, what);
  return FALSE;
}

gboolean
net_topology_has_key (const char *name, const char *key)
{
  const NetTopology *t = name ? net_topology_lookup (name) : NULL;

  for (const BaseKey *k = t ? t->keys : NULL; k && k->section; k++)
    if (strcmp (k->key, key) == 0)
      return TRUE;
  return FALSE;
}
