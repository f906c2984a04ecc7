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

/* Ring [Patarasuk & Yuan 2009]: all-reduce, reduce-scatter, all-gather and
 * broadcast, and its steps are a formula of (rank, index) (ring_step):
 * nothing to prepare. */
static gboolean
ring_build (PolCollOp *op G_GNUC_UNUSED, PolCollKind kind, GError **error)
{
  if (kind != POL_COLL_ALLREDUCE && kind != POL_COLL_REDUCE_SCATTER
      && kind != POL_COLL_ALLGATHER && kind != POL_COLL_BROADCAST)
    return pol_coll_unsupported ("ring", kind, error);
  return TRUE;
}

/* Broadcast, a plain relay of the whole buffer root -> root+1 -> ...: rank r
 * (v = r - root mod p) receives from r-1 unless it is the root, then sends
 * to r+1 unless it is last. */
static gboolean
ring_relay_step (const PolCollOp *op, int r, guint index, PolCollStep *out)
{
  int p = op->p, v = pol_coll_mod (r - op->root, p);

  if (v > 0 && index == 0)
    return pol_coll_step_recv (out, pol_coll_mod (r - 1, p), 0, op->n,
                               POL_COLL_RECV_COPY);
  if (v > 0)
    index--;
  if (v < p - 1 && index == 0)
    return pol_coll_step_send (out, pol_coll_mod (r + 1, p), 0, op->n, 0);
  return FALSE;
}

/* Step `index` of rank r.  A pass is p-1 steps around the ring, each a send
 * then a receive: in step k rank r sends block (r-k+off) mod p to r+1 and
 * receives block (r-1-k+off) mod p from r-1.  All-reduce is a reducing pass
 * with off = 0 (rank r ends owning block r+1), then a copying pass with
 * off = 1, which all-gathers it first; reduce-scatter a reducing pass with
 * off = -1 (rank r ends owning block r); all-gather a copying pass with
 * off = 0 (rank r starts owning block r). */
static gboolean
ring_step (const PolCollOp *op, int r, guint index, PolCollStep *out)
{
  int p = op->p, k, off;
  guint per = 2 * (guint) (p - 1), pass;   /* steps per pass, which pass */
  PolCollRecvMode mode;
  gsize lo, hi;

  if (op->kind == POL_COLL_BROADCAST)
    return ring_relay_step (op, r, index, out);
  if (p == 1)
    return FALSE;
  pass = index / per;
  k = (int) (index % per / 2);
  if (op->kind == POL_COLL_ALLREDUCE && pass < 2)
    {
      off = (int) pass;
      mode = pass == 0 ? POL_COLL_RECV_REDUCE : POL_COLL_RECV_COPY;
    }
  else if (op->kind == POL_COLL_REDUCE_SCATTER && pass == 0)
    {
      off = -1;
      mode = POL_COLL_RECV_REDUCE;
    }
  else if (op->kind == POL_COLL_ALLGATHER && pass == 0)
    {
      off = 0;
      mode = POL_COLL_RECV_COPY;
    }
  else
    return FALSE;
  /* the neighbours without a division: this runs twice per transfer */
  if (index % 2 == 0)
    {
      pol_shard_bounds (op->n, p, pol_coll_mod (r - k + off, p), &lo, &hi);
      return pol_coll_step_send (out, r + 1 == p ? 0 : r + 1, lo, hi, 0);
    }
  pol_shard_bounds (op->n, p, pol_coll_mod (r - 1 - k + off, p), &lo, &hi);
  return pol_coll_step_recv (out, r == 0 ? p - 1 : r - 1, lo, hi, mode);
}

/* Patarasuk & Yuan 2009, Thakur et al. 2005:
 * 2(p-1) alpha + 2 ((p-1)/p) n beta, with n/p replaced by the largest
 * block M = ceil(n/p) elements (exact: block 0's path through all
 * 2(p-1) steps is the longest); each of the p-1 reduce-scatter steps
 * reduces one block: + (p-1) M gamma. */
static double
ring_cost (PolCollKind kind, int p, int group G_GNUC_UNUSED,
           gsize n, double elem_bytes, double alpha,
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
    default:
      break;
    }
  return NAN;
}

/* All-reduce on two levels, p = m groups of g ranks in ring order, with
 * contention none: the chain that decides the time crosses x of its
 * 2(p-1) steps between groups (x = 2m, or 2m - 1 when g = 2), each
 * alpha_out + M beta_out, the others alpha_in + M beta_in, plus the p - 1
 * reductions (docs/collectives.md, hierarchical: the flat ring on nodes). */
static double
ring_cost_levels (const PolCollLevels *l)
{
  int p = l->p, g = l->group, m, x;
  double M = (double) ((l->n + (gsize) p - 1) / (gsize) p) * l->elem_bytes;

  if (l->kind != POL_COLL_ALLREDUCE || g < 2 || p % g != 0)
    return ring_cost (l->kind, p, 1, l->n, l->elem_bytes, l->alpha_out,
                      l->beta_out, l->reduce_per_byte);
  m = p / g;
  x = g == 2 ? 2 * m - 1 : 2 * m;
  return x * (l->alpha_out + M * l->beta_out)
         + (2 * (p - 1) - x) * (l->alpha_in + M * l->beta_in)
         + (p - 1) * M * l->reduce_per_byte;
}

const PolCollAlgorithm pol_coll_ring = {
  .name = "ring",
  .description = "reduce-scatter then all-gather around a ring, p-1 steps each",
  .source = "Patarasuk & Yuan 2009, J. Parallel Distrib. Comput. 69(2); "
            "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  .one_route = TRUE,
  .build = ring_build,
  .step = ring_step,
  .cost = ring_cost,
  .cost_levels = ring_cost_levels,
};
