/*
 * partition.c — placement of the parameter server's keys: contiguous
 * shards or consistent hashing with virtual nodes (Li et al., OSDI 2014,
 * section 4.3: key ranges assigned to servers on a ring), and each key
 * range's replication chain along the ring.
 */
#include "config.h"

#include <stdlib.h>

#include "comm/shard.h"
#include "policies/partition.h"

/* splitmix64's finaliser (Steele, Lea and Flood, OOPSLA 2014). */
static guint64
mix64 (guint64 x)
{
  x += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return x ^ (x >> 31);
}

guint64
pol_partition_point (guint64 seed, int s, int i)
{
  return mix64 (mix64 (seed) ^ (((guint64) (guint32) s << 32) | (guint32) i));
}

typedef struct {
  guint64 pos;
  int server, i;
} RingPoint;

static int
point_cmp (const void *a, const void *b)
{
  const RingPoint *x = a, *y = b;
  if (x->pos != y->pos)
    return x->pos < y->pos ? -1 : 1;
  if (x->server != y->server)
    return x->server < y->server ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The key index where ring position pos cuts [0, keys). */
static gsize
cut_of (guint64 pos, gsize keys)
{
  return (gsize) (((unsigned __int128) pos * keys) >> 64);
}

/* Appends [lo, hi) of `owner` ending at ring point `end`, merged with the
 * previous range when it has the same owner (then its end point is this
 * one's: the servers after either are the same). */
static void
add_range (GArray *ranges, GArray *owners, GArray *ends, gsize lo, gsize hi, int owner,
           int end)
{
  if (hi <= lo)
    return;
  guint n = ranges->len;
  if (n > 0 && g_array_index (owners, int, n - 1) == owner
      && g_array_index (ranges, PolRange, n - 1).hi == lo)
    {
      g_array_index (ranges, PolRange, n - 1).hi = hi;
      g_array_index (ends, int, n - 1) = end;
      return;
    }
  PolRange r = { lo, hi };
  g_array_append_val (ranges, r);
  g_array_append_val (owners, owner);
  g_array_append_val (ends, end);
}

/* p->chain: each range's owner, then the next distinct servers clockwise
 * from the point that ends it (end[r] among the m sorted points `pts`;
 * range partition: owner + h mod S). */
static void
fill_chains (PolPartition *p, const int *end, const RingPoint *pts, gsize m)
{
  int S = p->servers, depth = p->depth;
  p->chain = g_new (int, (gsize) p->n_ranges * depth);
  gboolean *seen = g_new0 (gboolean, S);
  for (int r = 0; r < p->n_ranges; r++)
    {
      int *c = p->chain + (gsize) r * depth;
      if (p->kind == POL_PARTITION_RANGE)
        {
          for (int h = 0; h < depth; h++)
            c[h] = (p->owner[r] + h) % S;
          continue;
        }
      int n = 0;
      for (gsize j = (gsize) end[r]; n < depth; j = (j + 1) % m)
        if (!seen[pts[j].server])
          {
            seen[pts[j].server] = TRUE;
            c[n++] = pts[j].server;
          }
      for (int h = 0; h < n; h++)
        seen[c[h]] = FALSE;
    }
  g_free (seen);
}

/* p->server_keys, server_first and by_server from the ranges' owners. */
static void
index_by_server (PolPartition *p)
{
  int S = p->servers;
  p->server_keys = g_new0 (gsize, S);
  p->server_first = g_new0 (int, S + 1);
  for (int r = 0; r < p->n_ranges; r++)
    {
      p->server_keys[p->owner[r]] += p->ranges[r].hi - p->ranges[r].lo;
      p->server_first[p->owner[r] + 1]++;
    }
  for (int s = 0; s < S; s++)
    p->server_first[s + 1] += p->server_first[s];
  p->by_server = g_new (int, MAX (p->n_ranges, 1));
  int *fill = g_memdup2 (p->server_first, sizeof (int) * S);
  for (int r = 0; r < p->n_ranges; r++)
    p->by_server[fill[p->owner[r]]++] = r;
  g_free (fill);
}

PolPartition *
pol_partition_new (PolPartitionKind kind, gsize keys, int S, int v, int depth, guint64 seed)
{
  g_return_val_if_fail (S >= 1 && depth >= 1 && depth <= S, NULL);
  g_return_val_if_fail (kind == POL_PARTITION_RANGE || v >= 1, NULL);
  PolPartition *p = g_new0 (PolPartition, 1);
  p->kind = kind;
  p->servers = S;
  p->virtual_nodes = kind == POL_PARTITION_HASH ? v : 1;
  p->keys = keys;
  p->depth = depth;
  GArray *ranges = g_array_new (FALSE, FALSE, sizeof (PolRange));
  GArray *owners = g_array_new (FALSE, FALSE, sizeof (int));
  GArray *ends = g_array_new (FALSE, FALSE, sizeof (int));
  RingPoint *pts = NULL;
  gsize m = 0;
  if (kind == POL_PARTITION_RANGE)
    for (int s = 0; s < S; s++)
      {
        gsize lo, hi;
        comm_shard_bounds (keys, S, s, &lo, &hi);
        add_range (ranges, owners, ends, lo, hi, s, s);
      }
  else
    {
      m = (gsize) S * (gsize) v;
      pts = g_new (RingPoint, m);
      for (int s = 0; s < S; s++)
        for (int i = 0; i < v; i++)
          pts[(gsize) s * v + i] = (RingPoint) { pol_partition_point (seed, s, i), s, i };
      qsort (pts, m, sizeof (RingPoint), point_cmp);
      /* [0, cut(p_0)) and the wrap [cut(p_{m-1}), P) end at p_0 */
      add_range (ranges, owners, ends, 0, cut_of (pts[0].pos, keys), pts[0].server, 0);
      for (gsize j = 1; j < m; j++)
        add_range (ranges, owners, ends, cut_of (pts[j - 1].pos, keys),
                   cut_of (pts[j].pos, keys), pts[j].server, (int) j);
      add_range (ranges, owners, ends, cut_of (pts[m - 1].pos, keys), keys, pts[0].server, 0);
    }
  p->n_ranges = (int) ranges->len;
  p->ranges = (PolRange *) g_array_free (ranges, FALSE);
  p->owner = (int *) g_array_free (owners, FALSE);
  int *end = (int *) g_array_free (ends, FALSE);

  fill_chains (p, end, pts, m);
  g_free (end);
  g_free (pts);
  index_by_server (p);
  return p;
}

void
pol_partition_free (PolPartition *p)
{
  if (!p)
    return;
  g_free (p->ranges);
  g_free (p->owner);
  g_free (p->chain);
  g_free (p->server_first);
  g_free (p->by_server);
  g_free (p->server_keys);
  g_free (p);
}

double
pol_partition_imbalance (const PolPartition *p)
{
  gsize most = 0;
  for (int s = 0; s < p->servers; s++)
    most = MAX (most, p->server_keys[s]);
  return p->keys ? (double) most * p->servers / (double) p->keys : 1.0;
}

int
pol_partition_chain (const PolPartition *p, int r, int h)
{
  g_return_val_if_fail (r >= 0 && r < p->n_ranges && h >= 0 && h < p->depth, -1);
  return p->chain[(gsize) r * p->depth + h];
}

char *
pol_partition_describe (const PolPartition *p, int show)
{
  GString *out = g_string_new (NULL);
  gsize lo = G_MAXSIZE, hi = 0;
  for (int s = 0; s < p->servers; s++)
    {
      int a = p->server_first[s], b = p->server_first[s + 1];
      g_string_append_printf (out, "  server%d: %" G_GSIZE_FORMAT " keys in %d range%s:", s,
                              p->server_keys[s], b - a, b - a == 1 ? "" : "s");
      for (int j = a; j < b && j - a < show; j++)
        {
          int r = p->by_server[j];
          g_string_append_printf (out, " [%" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT ")",
                                  p->ranges[r].lo, p->ranges[r].hi);
          if (p->depth > 1)
            {
              g_string_append (out, " chain");
              for (int h = 0; h < p->depth; h++)
                g_string_append_printf (out, "%s%d", h ? "->" : " ", pol_partition_chain (p, r, h));
            }
        }
      if (b - a > show)
        g_string_append_printf (out, " ... (%d more)", b - a - show);
      g_string_append_c (out, '\n');
      lo = MIN (lo, p->server_keys[s]);
      hi = MAX (hi, p->server_keys[s]);
    }
  g_string_append_printf (out, "  keys per server: min %" G_GSIZE_FORMAT ", mean %.6g, max %"
                          G_GSIZE_FORMAT "; imbalance (max / mean) %.4f\n", lo,
                          (double) p->keys / p->servers, hi, pol_partition_imbalance (p));
  return g_string_free (out, FALSE);
}
