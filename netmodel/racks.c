/*
 * racks.c — the "racks" topology: hosts in racks under top-of-rack switches,
 * the racks joined by one non-blocking core switch.
 *
 * Hosts fill racks of `rack_size` in host order (the last rack may hold
 * fewer).  Every host has a full-duplex cable to its rack's top-of-rack (ToR)
 * switch: "<host>.up" (host -> ToR) and "<host>.down" (ToR -> host), each of
 * `bandwidth` and `latency`.  Every ToR has a full-duplex cable to the core:
 * "rack<r>.up" (ToR -> core) and "rack<r>.down" (core -> ToR), each of
 * U = rack_size * bandwidth / oversubscription bytes/s and `switch_latency`.
 * With oversubscription 1 a full rack can send at line rate out of the rack;
 * with 4, only a quarter of it can.  Switches add nothing beyond their links.
 *
 * Routes: same rack, [a.up, b.down] (the rack's cable to the core is never
 * touched); across racks, [a.up, rack(a).up, rack(b).down, b.down].  Shared:
 * what a star shares, plus every flow leaving a rack shares its uplink and
 * every flow entering a rack its downlink.  Routes are computed when asked
 * (racks_route) from the link ids of each host and rack.  Each rack's hosts
 * form one host group (net_network_host_group): group = id of host 0 + rack
 * index, i.e. the rack index when the network holds nothing else.
 */
#include "netmodel/netmodel.h"

#include <math.h>

#define RACKS_DEFAULT_SIZE 8 /* hosts per rack when rack_size is 0 */

/* The parameters of a racks network, defaults resolved. */
typedef struct {
  int size;        /* hosts per rack */
  int n_racks;     /* ceil (n_hosts / size) */
  double over;     /* oversubscription ratio, >= 1 */
  double uplink;   /* bytes/s of each rack link, each direction */
  double sw_lat;   /* s of each rack link */
} RacksShape;

static const BaseKey keys[] = {
  { .section = "network", .key = "rack_size", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = 1e6, .doc = "racks: hosts per top-of-rack switch (0 = 8)." },
  { .section = "network", .key = "oversubscription", .type = BASE_KEY_QUANTITY, .def = "1",
    .min = 1, .max = BASE_BIG,
    .doc = "racks: a rack's uplink carries rack_size x bandwidth / oversubscription." },
  { .section = NULL },
};

/* r when `name` is exactly "rack<r>" as printf "%d" writes r >= 0, else -1:
 * the names a rack's links are made of. */
static int
rack_of_name (const char *name)
{
  const char *digits;
  gint64 r = 0;

  if (!g_str_has_prefix (name, "rack"))
    return -1;
  digits = name + 4;
  if (*digits == '\0' || (digits[0] == '0' && digits[1] != '\0'))
    return -1;
  for (const char *c = digits; *c != '\0'; c++)
    {
      if (!g_ascii_isdigit (*c) || r > G_MAXINT / 10)
        return -1;
      r = r * 10 + (*c - '0');
    }
  return r <= G_MAXINT ? (int) r : -1;
}

/* Checks `p` (with `net`, may be NULL) and resolves its defaults. */
static gboolean
racks_resolve (const NetNetwork *net, const NetTopologyParams *p,
               RacksShape *shape, GError **error)
{
  const BaseValues *v = net_topology_values (p);
  int rack_size = (int) base_values_int (v, "network.rack_size");
  double oversubscription = base_values_double (v, "network.oversubscription");
  double switch_latency = base_values_double (v, "network.switch_latency");
  int taken;  /* the rack whose link names a host name takes, or -1 */

  if (!net_topology_check_hosts ("racks", net, p, error))
    return FALSE;
  if (rack_size < 0)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "racks topology: expected rack_size >= 1 hosts per rack "
                   "(or 0 for %d), found %d", RACKS_DEFAULT_SIZE,
                   rack_size);
      return FALSE;
    }
  if (!(isfinite (oversubscription)
        && (oversubscription == 0 || oversubscription >= 1)))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "racks topology: expected oversubscription >= 1 "
                   "(1 = non-blocking, or 0 for 1), found %g",
                   oversubscription);
      return FALSE;
    }
  if (!(isfinite (switch_latency) && switch_latency >= 0))
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "racks topology: expected switch_latency >= 0 s, found %g",
                   switch_latency);
      return FALSE;
    }
  shape->size = rack_size > 0 ? rack_size : RACKS_DEFAULT_SIZE;
  shape->n_racks = (p->n_hosts + shape->size - 1) / shape->size;
  shape->over = oversubscription > 0 ? oversubscription : 1;
  shape->uplink = shape->size * p->bandwidth / shape->over;
  shape->sw_lat = switch_latency;
  /* A host named rack<r> would give its links the names of rack r's; the
   * lowest such r is reported. */
  taken = -1;
  for (int h = 0; h < p->n_hosts; h++)
    {
      int r = rack_of_name (p->names[h]);

      if (r >= 0 && r < shape->n_racks && (taken < 0 || r < taken))
        taken = r;
    }
  if (taken >= 0)
    {
      g_set_error (error, NET_ERROR, NET_ERROR_INVALID,
                   "racks topology: host name 'rack%d' is taken by the "
                   "links of rack %d (rack%d.up, rack%d.down); rename the "
                   "host", taken, taken, taken, taken);
      return FALSE;
    }
  return TRUE;
}

/* What a racks network's routes are computed from. */
typedef struct {
  int first;       /* host id of host 0 */
  int n;           /* hosts */
  int size;        /* hosts per rack */
  int *up;         /* (n) host -> ToR link ids */
  int *down;       /* (n) ToR -> host link ids */
  int *rack_up;    /* (n_racks) ToR -> core link ids */
  int *rack_down;  /* (n_racks) core -> ToR link ids */
  int links[];     /* storage of the four */
} RacksRoutes;

/* NetRouteFunc: [a.up, b.down] within a rack, [a.up, rack(a).up,
 * rack(b).down, b.down] across racks. */
static int
racks_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const RacksRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;
  int ra, rb;

  if (a < 0 || a >= s->n || b < 0 || b >= s->n || a == b)
    return 0;
  ra = a / s->size;
  rb = b / s->size;
  if (ra == rb)
    {
      if (max >= 2)
        {
          links[0] = s->up[a];
          links[1] = s->down[b];
        }
      return 2;
    }
  if (max >= 4)
    {
      links[0] = s->up[a];
      links[1] = s->rack_up[ra];
      links[2] = s->rack_down[rb];
      links[3] = s->down[b];
    }
  return 4;
}

/* NetFoldCheck: copies of whole racks, two or more (the core is
 * non-blocking, every rack's uplinks alike). */
static gboolean
racks_fold_check (gconstpointer ctx, int period)
{
  const RacksRoutes *s = ctx;

  return net_copies_fit (s->n, s->size, period);
}

/* NetFoldRoute: racks_route with the receiver's links taken in the first
 * copy (host b mod period, its rack's downlink). */
static int
racks_fold_route (gconstpointer ctx, int period, int src, int dst, int *links,
                  int max)
{
  const RacksRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first;

  if (a < 0 || a >= period || b < 0 || b >= s->n || a == b)
    return 0;
  if (b < period)
    return racks_route (ctx, src, dst, links, max);
  int bf = b % period;  /* another copy: another rack than a's */
  if (max >= 4)
    {
      links[0] = s->up[a];
      links[1] = s->rack_up[a / s->size];
      links[2] = s->rack_down[bf / s->size];
      links[3] = s->down[bf];
    }
  return 4;
}

/* Copies of whole racks, two or more (racks_fold_check). */
static gboolean
racks_copies (const BaseValues *values, gint64 workers, int period)
{
  gint64 size = base_values_int (values, "network.rack_size");
  size = size > 0 ? size : RACKS_DEFAULT_SIZE;
  return net_copies_fit (workers, (int) size, period);
}

static gboolean
racks_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  RacksShape shape;
  RacksRoutes *s;
  gsize size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!racks_resolve (net, p, &shape, error))
    return FALSE;

  size = sizeof (RacksRoutes)
         + sizeof (int) * 2 * ((gsize) p->n_hosts + shape.n_racks);
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->size = shape.size;
  s->up = s->links;
  s->down = s->up + p->n_hosts;
  s->rack_up = s->down + p->n_hosts;
  s->rack_down = s->rack_up + shape.n_racks;
  s->first = net_topology_add_hosts (net, p, s->up, s->down);
  /* one host group per rack, numbered from the first host's id so that it
   * meets no default group (own id) of a host outside this topology */
  for (int h = 0; h < p->n_hosts; h++)
    net_network_set_host_group (net, s->first + h, s->first + h / s->size);
  for (int r = 0; r < shape.n_racks; r++)
    {
      g_autofree char *up_name = g_strdup_printf ("rack%d.up", r);
      g_autofree char *down_name = g_strdup_printf ("rack%d.down", r);

      s->rack_up[r] = net_network_add_named_link (net, up_name, shape.uplink,
                                                  shape.sw_lat);
      s->rack_down[r] = net_network_add_named_link (net, down_name,
                                                    shape.uplink,
                                                    shape.sw_lat);
    }
  net_network_set_router (net, racks_route, s, g_free, size);
  net_network_set_folder (net, racks_fold_check, racks_fold_route);
  return TRUE;
}

/* One paragraph on the racks network `p` describes; NULL when invalid.
 * Bisection bandwidth: with two racks or more, what the first half of the
 * racks can send to the other half, floor(R/2) * U (U <= rack_size *
 * bandwidth, so the rack links are the cut); in one rack, a star's. */
static char *
racks_summary (const NetTopologyParams *p)
{
  RacksShape s;
  double bisection;   /* bytes/s */
  int last;           /* hosts in the last rack */

  if (!racks_resolve (NULL, p, &s, NULL))
    return NULL;
  last = p->n_hosts - (s.n_racks - 1) * s.size;
  bisection = s.n_racks >= 2 ? (s.n_racks / 2) * s.uplink
                             : (p->n_hosts / 2) * p->bandwidth;
  return g_strdup_printf (
    "racks: %d hosts in %d rack%s of %d (the last holds %d), %d switches "
    "(%d top-of-rack + 1 non-blocking core), %d one-way links: host links "
    "(<host>.up, <host>.down) of %.4g Gbit/s and %.4g us, rack links "
    "(rack<r>.up, rack<r>.down) of %.4g Gbit/s and %.4g us (oversubscription "
    "%g:1); same-rack transfers cross 2 links, cross-rack ones 4; bisection "
    "bandwidth %.4g Gbit/s. Shared: flows leaving a host share its uplink, "
    "flows into a host its downlink, flows leaving a rack the rack's uplink "
    "and flows entering a rack its downlink; same-rack flows never touch the "
    "rack links.",
    p->n_hosts, s.n_racks, s.n_racks == 1 ? "" : "s", s.size, last,
    s.n_racks + 1, s.n_racks, 2 * p->n_hosts + 2 * s.n_racks,
    p->bandwidth * 8 / 1e9, p->latency * 1e6, s.uplink * 8 / 1e9,
    s.sw_lat * 1e6, s.over, bisection * 8 / 1e9);
}

const NetTopology net_topology_racks = {
  .name = "racks",
  .description = "Hosts in racks of rack_size under top-of-rack switches, "
                 "each rack cabled to one non-blocking core by an uplink "
                 "and a downlink of rack_size * bandwidth / "
                 "oversubscription.",
  .keys = keys,
  .build = racks_build,
  .summary = racks_summary,
  .copies = racks_copies,
};
