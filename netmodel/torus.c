/*
 * torus.c — the "torus" topology: a 2-D torus of routers, one host on each.
 *
 * X x Y routers sit on a grid with wrap-around, as in TPU pods and HPC
 * machines: router (x, y) has a full-duplex cable to each of its four
 * neighbours (x +- 1 mod X, y) and (x, y +- 1 mod Y).  Host h sits on router
 * (h mod X, h div X) (row-major, x fastest) with a full-duplex cable
 * "<host>.up" (host -> router) / "<host>.down" (router -> host).  With fewer
 * hosts than routers the last positions have a router and no host: they
 * still forward traffic.  Every link has `bandwidth` and `latency`.
 *
 * Router links are named after the router they leave and their direction:
 * "router<x>.<y>.x+" goes to (x+1 mod X, y), "router<x>.<y>.x-" to
 * (x-1 mod X, y), and ".y+", ".y-" likewise.  A ring of 2 routers has one
 * cable, not two: there "x-" is the same link as "x+" (both lead to the
 * other router) and only the "x+" name exists; a ring of 1 has none.
 *
 * Routes are dimension-ordered: [a.up, the X hops in a's row, the Y hops
 * in b's column, b.down].  Along each ring the shorter way round, the
 * positive way (increasing coordinate) on a tie, so a route crosses
 * 2 + min (dx, X - dx) + min (dy, Y - dy) links, dx = (xb - xa) mod X and
 * dy = (yb - ya) mod Y.  Shared: a host link by its host's flows, a router
 * link by every flow crossing it; opposite directions never compete.
 * Routes are computed when asked (torus_route) from the link ids of each
 * host and router.  Every host is its own host group.
 *
 * [network] torus_x and torus_y give the shape; 0 derives it from the
 * hosts (torus_resolve).
 */
#include "netmodel/netmodel.h"

#include <math.h>

/* At most this many routers: the most hosts a scenario may hold, so that a
 * torus never takes more memory than a full one of the largest run. */
#define TORUS_MAX_ROUTERS 131072

static const BaseKey keys[] = {
  { .section = "network", .key = "torus_x", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = TORUS_MAX_ROUTERS,
    .doc = "torus: routers along X, the dimension routes cross first; hosts fill rows of torus_x (0 = derived: the most nearly square torus that holds every host, or ceil(hosts / torus_y))." },
  { .section = "network", .key = "torus_y", .type = BASE_KEY_INT, .def = "0",
    .min = 0, .max = TORUS_MAX_ROUTERS,
    .doc = "torus: routers along Y; torus_x x torus_y must hold every host, routers past the last host forward traffic only (0 = derived: ceil(hosts / torus_x))." },
  { .section = NULL },
};

/* The shape of a torus network, defaults resolved. */
typedef struct {
  int x, y;      /* routers along X and along Y */
} TorusShape;

/* ceil (a / b), a >= 0, b >= 1. */
static gint64
ceil_div (gint64 a, gint64 b)
{
  return (a + b - 1) / b;
}

/* Checks `p` (with `net`, may be NULL) and resolves the shape: both keys 0,
 * X = ceil (sqrt (n)) and Y = ceil (n / X), the most nearly square torus
 * holding n hosts (X >= Y); one of them 0, ceil (n / the other).  Messages
 * name the key and what to write. */
static gboolean
torus_resolve (const NetNetwork *net, const NetTopologyParams *p,
               TorusShape *s, GError **error)
{
  const BaseValues *v = net_topology_values (p);
  gint64 x = base_values_int (v, "network.torus_x");
  gint64 y = base_values_int (v, "network.torus_y");
  gint64 n;

  if (!net_topology_check_hosts ("torus", net, p, error))
    return FALSE;
  n = p->n_hosts;
  if (x < 0 || x > TORUS_MAX_ROUTERS)
    return net_topology_key_error (error, "torus", "torus_x", "expected 1 to %d routers (0 to "
                       "derive it), found %" G_GINT64_FORMAT "; write e.g. "
                       "torus_x = 4", TORUS_MAX_ROUTERS, x);
  if (y < 0 || y > TORUS_MAX_ROUTERS)
    return net_topology_key_error (error, "torus", "torus_y", "expected 1 to %d routers (0 to "
                       "derive it), found %" G_GINT64_FORMAT "; write e.g. "
                       "torus_y = 4", TORUS_MAX_ROUTERS, y);
  if (x == 0 && y == 0)
    {
      /* the least x with x x >= n, whichever way sqrt rounds */
      x = (gint64) ceil (sqrt ((double) n));
      while (x * x < n)
        x++;
      while (x > 1 && (x - 1) * (x - 1) >= n)
        x--;
      y = ceil_div (n, x);
    }
  else if (y == 0)
    y = ceil_div (n, x);
  else if (x == 0)
    x = ceil_div (n, y);
  else if (x * y < n)
    return net_topology_key_error (error, "torus", "torus_y", "a %" G_GINT64_FORMAT " x %"
                       G_GINT64_FORMAT " torus holds %" G_GINT64_FORMAT
                       " hosts, fewer than the %" G_GINT64_FORMAT " to place; "
                       "write torus_y = %" G_GINT64_FORMAT " (or 0 to "
                       "derive it from torus_x)",
                       x, y, x * y, n, ceil_div (n, x));
  if (x * y > TORUS_MAX_ROUTERS)
    return net_topology_key_error (error, "torus", "torus_y", "a %" G_GINT64_FORMAT " x %"
                       G_GINT64_FORMAT " torus has %" G_GINT64_FORMAT
                       " routers, more than %d; write a smaller torus_x or "
                       "torus_y (0 derives them from the hosts)",
                       x, y, x * y, TORUS_MAX_ROUTERS);
  s->x = (int) x;
  s->y = (int) y;
  return TRUE;
}

/* What a torus network's routes are computed from.  Router r = x + X y. */
typedef struct {
  int first;     /* host id of host 0 */
  int n;         /* hosts */
  int x, y;      /* routers along X and Y */
  int *up;       /* (n) host -> router link ids */
  int *down;     /* (n) router -> host */
  int *xp, *xm;  /* (X Y) link ids leaving router r towards x+1, x-1 (xm
                    is xp with X = 2; unused with X = 1) */
  int *yp, *ym;  /* (X Y) the same along Y */
  int links[];   /* storage of the arrays above */
} TorusRoutes;

/* Appends to links[*len] (when it fits `max`) the link ids of the hops from
 * coordinate a to b on one ring of k routers, counting them in *len: the
 * shorter way, positive on a tie.  The ring runs along X in row `other`
 * (along_x), or along Y in column `other`. */
static void
torus_ring_hops (const TorusRoutes *s, int a, int b, int k, gboolean along_x,
                 int other, int *links, int max, int *len)
{
  int d = ((b - a) % k + k) % k;          /* hops the positive way */
  gboolean positive = d <= k - d;
  int hops = positive ? d : k - d;
  int c = a;

  for (int i = 0; i < hops; i++)
    {
      int r = along_x ? c + s->x * other : other + s->x * c;
      const int *dir = along_x ? (positive ? s->xp : s->xm)
                               : (positive ? s->yp : s->ym);

      if (*len < max)
        links[*len] = dir[r];
      (*len)++;
      c = positive ? (c + 1) % k : (c - 1 + k) % k;
    }
}

/* NetRouteFunc: a.up, X first in a's row, then Y in b's column, b.down. */
static int
torus_route (gconstpointer ctx, int src, int dst, int *links, int max)
{
  const TorusRoutes *s = ctx;
  int a = src - s->first, b = dst - s->first, len = 0;

  if (a < 0 || a >= s->n || b < 0 || b >= s->n || a == b)
    return 0;
  if (len < max)
    links[len] = s->up[a];
  len++;
  torus_ring_hops (s, a % s->x, b % s->x, s->x, TRUE, a / s->x, links, max,
                   &len);
  torus_ring_hops (s, a / s->x, b / s->x, s->y, FALSE, b % s->x, links, max,
                   &len);
  if (len < max)
    links[len] = s->down[b];
  len++;
  return len;
}

/* Adds the cables of one dimension: for every router r = x + X y, the link
 * towards coordinate + 1 ("router<x>.<y>.<axis>+") and, on a ring of 3 or
 * more, towards - 1 ("...-"); a ring of 1 gets none. */
static void
torus_add_dimension (NetNetwork *net, const NetTopologyParams *p,
                     const TorusRoutes *s, gboolean along_x, int *plus,
                     int *minus)
{
  int k = along_x ? s->x : s->y;
  char axis = along_x ? 'x' : 'y';

  for (int r = 0; r < s->x * s->y && k >= 2; r++)
    {
      g_autofree char *name = g_strdup_printf ("router%d.%d.%c+", r % s->x,
                                               r / s->x, axis);

      plus[r] = net_network_add_named_link (net, name, p->bandwidth,
                                            p->latency);
    }
  for (int r = 0; r < s->x * s->y && k >= 3; r++)
    {
      g_autofree char *name = g_strdup_printf ("router%d.%d.%c-", r % s->x,
                                               r / s->x, axis);

      minus[r] = net_network_add_named_link (net, name, p->bandwidth,
                                             p->latency);
    }
}

static gboolean
torus_build (NetNetwork *net, const NetTopologyParams *p, GError **error)
{
  TorusShape shape;
  TorusRoutes *s;
  gsize routers, size;

  g_return_val_if_fail (net != NULL, FALSE);
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (!torus_resolve (net, p, &shape, error))
    return FALSE;
  routers = (gsize) shape.x * (gsize) shape.y;
  /* a ring of 2 reads its "-" links from the "+" ones: no storage */
  size = sizeof (TorusRoutes) + sizeof (int) * (2 * (gsize) p->n_hosts
         + routers * ((shape.x >= 3) + 1 + (shape.y >= 3) + 1));
  s = g_malloc (size);
  s->n = p->n_hosts;
  s->x = shape.x;
  s->y = shape.y;
  s->up = s->links;
  s->down = s->up + p->n_hosts;
  s->xp = s->down + p->n_hosts;
  s->xm = shape.x >= 3 ? s->xp + routers : s->xp;
  s->yp = s->xm + routers;
  s->ym = shape.y >= 3 ? s->yp + routers : s->yp;
  s->first = net_topology_add_hosts (net, p, s->up, s->down);
  torus_add_dimension (net, p, s, TRUE, s->xp, s->xm);
  torus_add_dimension (net, p, s, FALSE, s->yp, s->ym);
  net_network_set_router (net, torus_route, s, g_free, size);
  return TRUE;
}

/* One-way links of the rings of one dimension: 2 k per ring of k >= 3
 * routers, 2 for k = 2, none for k = 1. */
static int
torus_ring_links (int k)
{
  return k >= 3 ? 2 * k : k == 2 ? 2 : 0;
}

/* One paragraph on the torus `p` describes; NULL when invalid.  Bisection
 * bandwidth: cutting the longer dimension in two cuts each of its rings
 * (as many as the shorter dimension has routers) twice, once with 2
 * routers, never with 1; the hosts' own links bound it by floor (n/2) B. */
static char *
torus_summary (const NetTopologyParams *p)
{
  TorusShape s;
  int routers, n_links, long_k, short_k, per_ring, cut, longest;

  if (!torus_resolve (NULL, p, &s, NULL))
    return NULL;
  routers = s.x * s.y;
  n_links = 2 * p->n_hosts + s.y * torus_ring_links (s.x)
            + s.x * torus_ring_links (s.y);
  long_k = MAX (s.x, s.y);
  short_k = MIN (s.x, s.y);
  per_ring = long_k >= 3 ? 2 : long_k == 2 ? 1 : 0;  /* cables cut */
  cut = MIN (per_ring * short_k, p->n_hosts / 2);
  longest = 2 + s.x / 2 + s.y / 2;
  return g_strdup_printf (
    "torus: %d hosts on a %d x %d torus of routers (%d without a host), %d "
    "one-way links (<host>.up/down, router<x>.<y>.x+/x-/y+/y-) of %.4g "
    "Gbit/s and %.4g us; routes go X first, then Y, the shorter way round "
    "each ring (the positive way on a tie), up to %d links (latency up to "
    "%.4g us); bisection bandwidth %.4g Gbit/s. Shared: a host link by its "
    "host's flows, a router link by every flow crossing it; opposite "
    "directions never compete.",
    p->n_hosts, s.x, s.y, routers - p->n_hosts, n_links,
    p->bandwidth * 8 / 1e9, p->latency * 1e6, longest,
    longest * p->latency * 1e6, cut * p->bandwidth * 8 / 1e9);
}

const NetTopology net_topology_torus = {
  .name = "torus",
  .description = "A 2-D torus of routers (torus_x x torus_y, wrapping "
                 "round), one host on each; routes go X first, then Y, the "
                 "shorter way round each ring.",
  .keys = keys,
  .build = torus_build,
  .summary = torus_summary,
};
