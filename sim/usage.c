/*
 * usage.c — the cluster over time in a run of several jobs (sim/usage.h).
 *
 * Windows of width w = SIM_USAGE_MIN_WIDTH * 2^k cover [0, N w) with N =
 * SIM_USAGE_WINDOWS.  An interval that ends past N w first doubles w (each
 * window then holds two of the old ones, summed) until it fits; its amount
 * (busy GPU-seconds, or bytes) is then shared among the windows it
 * overlaps in proportion to the overlap, so the sums are exact whatever w
 * becomes.  A row's value is its window's sum over w (mean busy GPUs) or
 * over w times the link's bandwidth (mean utilisation).
 */
#include "config.h"

#include <math.h>

#include "sim/usage.h"

#define N SIM_USAGE_WINDOWS

struct SimUsage {
  const NetNetwork *net;
  int n_jobs;
  char **names;          /* (n_jobs) */
  double width;          /* s */
  double *busy;          /* (n_jobs, N) row-major: GPU-seconds */
  GHashTable *links;     /* link id (GINT_TO_POINTER) -> double[N] bytes */
};

SimUsage *
sim_usage_new (int n_jobs, const char *const *names, const NetNetwork *net)
{
  g_return_val_if_fail (n_jobs > 0 && names && net, NULL);
  SimUsage *u = g_new0 (SimUsage, 1);
  u->net = net;
  u->n_jobs = n_jobs;
  u->names = g_new0 (char *, n_jobs + 1);
  for (int j = 0; j < n_jobs; j++)
    u->names[j] = g_strdup (names[j]);
  u->width = SIM_USAGE_MIN_WIDTH;
  u->busy = g_new0 (double, (gsize) n_jobs * N);
  u->links = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  return u;
}

void
sim_usage_free (SimUsage *u)
{
  if (!u)
    return;
  g_strfreev (u->names);
  g_free (u->busy);
  g_hash_table_unref (u->links);
  g_free (u);
}

double
sim_usage_width (const SimUsage *u)
{
  return u->width;
}

/* Halves the resolution of the N windows at v: window i becomes the sum of
 * windows 2i and 2i + 1. */
static void
merge (double *v)
{
  for (int i = 0; i < N / 2; i++)
    v[i] = v[2 * i] + v[2 * i + 1];
  for (int i = N / 2; i < N; i++)
    v[i] = 0;
}

/* Doubles the width until `end` lies within the N windows. */
static void
widen (SimUsage *u, double end)
{
  while (end > u->width * N && isfinite (end))
    {
      for (int j = 0; j < u->n_jobs; j++)
        merge (u->busy + (gsize) j * N);
      GHashTableIter it;
      gpointer v;
      g_hash_table_iter_init (&it, u->links);
      while (g_hash_table_iter_next (&it, NULL, &v))
        merge (v);
      u->width *= 2;
    }
}

/* Adds `amount` spread evenly over [a, b] to the windows of v. */
static void
spread (const SimUsage *u, double *v, double a, double b, double amount)
{
  double w = u->width;
  if (!(b > a))
    {
      int i = (int) MIN (floor (a / w), N - 1);
      v[MAX (i, 0)] += amount;
      return;
    }
  int first = (int) MAX (floor (a / w), 0), last = (int) MIN (floor (b / w), N - 1);
  for (int i = first; i <= last; i++)
    {
      double lo = MAX (a, i * w), hi = MIN (b, (i + 1) * w);
      if (hi > lo)
        v[i] += amount * (hi - lo) / (b - a);
    }
}

void
sim_usage_busy (SimUsage *u, int job, double start, double end)
{
  g_return_if_fail (u && job >= 0 && job < u->n_jobs);
  if (!(isfinite (start) && isfinite (end) && end >= start && start >= 0))
    return;
  widen (u, end);
  spread (u, u->busy + (gsize) job * N, start, end, end - start);
}

void
sim_usage_transfer (gpointer data, const NetTransfer *t)
{
  SimUsage *u = data;
  if (t->sw >= 0 || t->src == t->dst || !(t->bytes > 0) || !isfinite (t->end))
    return;
  int n = net_network_route_links (u->net, t->src, t->dst, NULL, 0);
  if (n <= 0)
    return;
  g_autofree int *links = g_new (int, n);
  net_network_route_links (u->net, t->src, t->dst, links, n);
  double a = MIN (t->start + net_network_route_latency (u->net, t->src, t->dst), t->end);
  widen (u, t->end);
  for (int k = 0; k < n; k++)
    {
      double *v = g_hash_table_lookup (u->links, GINT_TO_POINTER (links[k]));
      if (!v)
        {
          v = g_new0 (double, N);
          g_hash_table_insert (u->links, GINT_TO_POINTER (links[k]), v);
        }
      spread (u, v, a, t->end, t->bytes);
    }
}

static gint
int_order (gconstpointer a, gconstpointer b)
{
  return GPOINTER_TO_INT (a) - GPOINTER_TO_INT (b);
}

void
sim_usage_write (const SimUsage *u, SimTrace *t, gint64 run, double end)
{
  g_autoptr (GList) ids = g_list_sort (g_hash_table_get_keys (u->links), int_order);
  double w = u->width;
  int n = isfinite (end) && end > 0 ? (int) MIN (ceil (end / w), N) : 0;
  for (int i = 0; i < n; i++)
    {
      for (int j = 0; j < u->n_jobs; j++)
        sim_trace_usage (t, run, i * w, (i + 1) * w, "busy", u->names[j],
                         u->busy[(gsize) j * N + i] / w);
      for (GList *e = ids; e; e = e->next)
        {
          int l = GPOINTER_TO_INT (e->data);
          const double *v = g_hash_table_lookup (u->links, e->data);
          sim_trace_usage (t, run, i * w, (i + 1) * w, "link",
                           net_network_link_name (u->net, l),
                           v[i] / (w * net_network_link_bandwidth (u->net, l)));
        }
    }
}
