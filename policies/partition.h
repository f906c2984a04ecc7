/*
 * partition.h — which parameter server holds which keys: contiguous shards
 * (`[policy] partition = range`) or consistent hashing on a ring of 2^64
 * positions (`partition = hash`, `virtual_nodes` points per server), and
 * the replication chain of every key range along the ring.
 *
 * docs/policies.md ("Placement and replication") is the normative
 * description; this is its arithmetic, with no simulation in it.
 */
#ifndef DTSIM_POLICIES_PARTITION_H
#define DTSIM_POLICIES_PARTITION_H

#include <glib.h>

G_BEGIN_DECLS

typedef enum { POL_PARTITION_RANGE, POL_PARTITION_HASH } PolPartitionKind;

/* A range [lo, hi) of the parameter vector's indices (keys). */
typedef struct {
  gsize lo, hi;
} PolRange;

typedef struct {
  PolPartitionKind kind;
  int servers;                /* S */
  int virtual_nodes;          /* hash: points per server; range: 1 */
  gsize keys;                 /* P */
  int n_ranges;
  PolRange *ranges;           /* (n_ranges) in key order, non-empty, and
                               * no two neighbours of one owner */
  int *owner;                 /* (n_ranges) the server holding each */
  int depth;                  /* servers of each chain kept (<= S) */
  int *chain;                 /* (n_ranges x depth) each range's owner,
                               * then the next distinct servers along
                               * the ring */
  int *server_first;          /* (servers + 1) server s's ranges are
                               * by_server[server_first[s] .. server_first[s+1]) */
  int *by_server;             /* (n_ranges) range indices by server, then key */
  gsize *server_keys;         /* (servers) keys each server holds */
} PolPartition;

/* Ring position of server s's i-th virtual node under `seed`: splitmix64
 * (splitmix64 (seed) XOR (s << 32 | i)), the same on every host. */
guint64 pol_partition_point (guint64 seed, int s, int i);

/* The placement of `keys` parameters on S >= 1 servers.  range: server s
 * holds the contiguous shard of comm_shard_bounds (one range each).  hash:
 * server s has v >= 1 points on the ring; key k sits at cut position
 * floor(pos * keys / 2^64) of the ring, and the arc between two
 * consecutive points belongs to the server of the arc's end point, so key
 * k belongs to the server of the first point whose cut exceeds k
 * (wrapping to the first point).  A server may hold no key.  Each range's
 * chain keeps its first `depth` servers (1 <= depth <= S). */
PolPartition *pol_partition_new (PolPartitionKind kind, gsize keys, int S, int v,
                                 int depth, guint64 seed);
void pol_partition_free (PolPartition *p);

/* The most keys a server holds over the mean keys / S (1 = even). */
double pol_partition_imbalance (const PolPartition *p);

/* The h-th server of range r's chain (h = 0: its owner; h < depth): the
 * next distinct servers clockwise from the range's end point (range
 * partition: owner + h mod S). */
int pol_partition_chain (const PolPartition *p, int r, int h);


/* One line per server: its ranges (at most `show` of them, then a count)
 * and keys, then min/mean/max keys and the imbalance (caller frees). */
char *pol_partition_describe (const PolPartition *p, int show);

G_END_DECLS

#endif /* DTSIM_POLICIES_PARTITION_H */
