/*
 * shard.c — contiguous shards whose sizes differ by at most one.
 */
#include "config.h"

#include "comm/shard.h"

void
comm_shard_bounds (gsize n, int S, int s, gsize *lo, gsize *hi)
{
  gsize base = n / (gsize) S, extra = n % (gsize) S;
  gsize ss = (gsize) s;
  *lo = ss * base + MIN (ss, extra);
  *hi = *lo + base + (ss < extra ? 1 : 0);
}
