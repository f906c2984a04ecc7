/*
 * shard.h — the arithmetic of cutting a vector into contiguous shards, which
 * collectives (a reduce-scatter's blocks, a channel's chunks) and schedules
 * (a parameter server's shards) share.
 */
#ifndef DTSIM_COMM_SHARD_H
#define DTSIM_COMM_SHARD_H

#include <glib.h>

G_BEGIN_DECLS

/* Bounds [lo, hi) of shard s when n elements are split into S contiguous
 * shards whose sizes differ by at most one (the first n % S get one more). */
void comm_shard_bounds (gsize n, int S, int s, gsize *lo, gsize *hi);

G_END_DECLS

#endif /* DTSIM_COMM_SHARD_H */
