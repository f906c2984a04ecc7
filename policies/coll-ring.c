/*
 * coll-ring.c — the ring collective: reduce-scatter then all-gather around
 * a ring of the p ranks, p - 1 steps each (Patarasuk & Yuan 2009), and
 * broadcast as a relay.  Its steps and cost are in docs/collectives.md,
 * "ring"; the executor that runs them is policies/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "policies/coll-program.h"
#include "policies/policy.h"

/* p-1 steps of rank r around the ring: in step k it sends block
 * (r-k+off) mod p to r+1 and receives block (r-1-k+off) mod p from r-1,
 * combined per `mode`. */
static void
ring_pass (PolCollOp *op, int r, int off, PolCollRecvMode mode)
{
  int p = op->p;
  int next = pol_coll_mod (r + 1, p), prev = pol_coll_mod (r - 1, p);
  gsize lo, hi;

  for (int k = 0; k < p - 1; k++)
    {
      pol_shard_bounds (op->n, p, pol_coll_mod (r - k + off, p), &lo, &hi);
      pol_coll_prog_send (op, r, next, lo, hi, 0);
      pol_shard_bounds (op->n, p, pol_coll_mod (r - 1 - k + off, p), &lo, &hi);
      pol_coll_prog_recv (op, r, prev, lo, hi, mode);
    }
}

/* Ring [Patarasuk & Yuan 2009]: p-1 reduce-scatter steps, p-1 all-gather
 * steps; in reduce-scatter step k rank r sends block (r-k+off) mod p to r+1
 * and receives block (r-1-k+off) from r-1, adding it in.  off = 0 for
 * all-reduce (rank r ends owning block r+1, which it all-gathers first),
 * off = -1 for reduce-scatter (rank r ends owning block r).  Broadcast is a
 * plain relay of the whole buffer root -> root+1 -> ... */
static gboolean
ring_build (PolCollOp *op, PolCollKind kind, GError **error G_GNUC_UNUSED)
{
  int p = op->p;

  for (int r = 0; r < p; r++)
    {
      if (kind == POL_COLL_BROADCAST)
        {
          int v = pol_coll_mod (r - op->root, p);

          if (v > 0)
            pol_coll_prog_recv (op, r, pol_coll_mod (r - 1, p), 0, op->n,
                                POL_COLL_RECV_COPY);
          if (v < p - 1)
            pol_coll_prog_send (op, r, pol_coll_mod (r + 1, p), 0, op->n, 0);
          continue;
        }
      if (kind == POL_COLL_ALLREDUCE || kind == POL_COLL_REDUCE_SCATTER)
        ring_pass (op, r, kind == POL_COLL_ALLREDUCE ? 0 : -1,
                   POL_COLL_RECV_REDUCE);
      /* All-gather: rank r starts owning block r + off. */
      if (kind == POL_COLL_ALLREDUCE || kind == POL_COLL_ALLGATHER)
        ring_pass (op, r, kind == POL_COLL_ALLREDUCE ? 1 : 0,
                   POL_COLL_RECV_COPY);
    }
  return TRUE;
}

/* Patarasuk & Yuan 2009, Thakur et al. 2005:
 * 2(p-1) alpha + 2 ((p-1)/p) n beta, with n/p replaced by the largest
 * block M = ceil(n/p) elements (exact: block 0's path through all
 * 2(p-1) steps is the longest); each of the p-1 reduce-scatter steps
 * reduces one block: + (p-1) M gamma. */
static double
ring_cost (PolCollKind kind, int p, gsize n, double elem_bytes, double alpha,
           double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double M = (double) ((n + (gsize) p - 1) / (gsize) p) * elem_bytes;
                                         /* bytes of the largest block */

  switch (kind)
    {
    case POL_COLL_ALLREDUCE:
      return 2 * (p - 1) * alpha + (p - 1) * M * (2 * beta + gamma);
    case POL_COLL_REDUCE_SCATTER:
      return (p - 1) * (alpha + M * (beta + gamma));
    case POL_COLL_ALLGATHER:
      return (p - 1) * (alpha + M * beta);
    case POL_COLL_BROADCAST:
      /* Relay of the whole buffer through p-1 hops. */
      return (p - 1) * (alpha + N * beta);
    }
  return NAN;
}

const PolCollAlgorithm pol_coll_ring = {
  "ring",
  "reduce-scatter then all-gather around a ring, p-1 steps each",
  "Patarasuk & Yuan 2009, J. Parallel Distrib. Comput. 69(2); "
  "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  ring_build,
  ring_cost,
};
