/*
 * coll-tree.c — the binomial-tree collective: reduce to the root, then
 * binomial broadcast, one-port (Thakur, Rabenseifner & Gropp 2005; MPICH's
 * ordering).  All-reduce, reduce (its first half) and broadcast.  Its steps and cost are in
 * docs/collectives.md, "tree"; the executor that runs them is
 * policies/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "policies/coll-program.h"

/* Smallest L with 2^L >= p (p >= 1). */
static int
ceil_log2 (int p)
{
  int L = 0;

  while ((1 << L) < p)
    L++;
  return L;
}

/* All-reduce, reduce and broadcast; the steps are generated (tree_step). */
static gboolean
tree_build (PolCollOp *op G_GNUC_UNUSED, PolCollKind kind, GError **error)
{
  if (kind != POL_COLL_ALLREDUCE && kind != POL_COLL_BROADCAST
      && kind != POL_COLL_REDUCE)
    return pol_coll_unsupported ("tree", kind, error);
  return TRUE;
}

/* Step `index` of rank r in the binomial tree [Thakur et al. 2005, MPICH],
 * v = (r - root) mod p, counting the steps in program order (at most
 * 2 ceil(lg p) + 1 of them).  Reduce (all-reduce and reduce): for mask = 1, 2, 4,
 * ...: if v & mask, send the partial sum to v - mask and stop; else receive
 * from v + mask (if < p) and add.  Broadcast: receive from v - lowbit(v),
 * then send to v + mask for mask = lowbit(v)/2 ... 1 (root: 2^(L-1) ... 1).
 * One-port: sends wait for arrival, reduce sends are rendezvous, so every
 * round costs exactly alpha + n beta (+ reduction). */
static gboolean
tree_step (const PolCollOp *op, int r, guint index, PolCollStep *out)
{
  int p = op->p, v = pol_coll_mod (r - op->root, p);
  int top;   /* first mask of the broadcast's sends, then halving */
  guint i = 0;  /* index of the step considered */

#define REAL(u) pol_coll_mod ((u) + op->root, p)
  if (op->kind == POL_COLL_ALLREDUCE || op->kind == POL_COLL_REDUCE)
    for (int mask = 1; mask < p; mask <<= 1)
      {
        if (v & mask)
          {
            if (i++ == index)
              return pol_coll_step_send (out, REAL (v - mask), 0, op->n,
                                         POL_COLL_SEND_WAIT
                                         | POL_COLL_SEND_RDV);
            break;
          }
        if (v + mask < p && i++ == index)
          return pol_coll_step_recv (out, REAL (v + mask), 0, op->n,
                                     POL_COLL_RECV_REDUCE);
      }
  if (op->kind == POL_COLL_REDUCE)
    return FALSE;
  if (v == 0)
    top = p > 1 ? 1 << (ceil_log2 (p) - 1) : 0;
  else
    {
      int low = v & -v;

      if (i++ == index)
        return pol_coll_step_recv (out, REAL (v - low), 0, op->n,
                                   POL_COLL_RECV_COPY);
      top = low >> 1;
    }
  for (int mask = top; mask >= 1; mask >>= 1)
    if (v + mask < p && i++ == index)
      return pol_coll_step_send (out, REAL (v + mask), 0, op->n,
                                 POL_COLL_SEND_WAIT);
#undef REAL
  return FALSE;
}

/* Thakur et al. 2005: binomial broadcast ceil(lg p)(alpha + n beta); reduce
 * the same plus ceil(lg p) n gamma. */
static double
tree_cost (PolCollKind kind, int p, int group G_GNUC_UNUSED,
           gsize n, double elem_bytes, double alpha,
           double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double L = ceil_log2 (p);

  switch (kind)
    {
    case POL_COLL_ALLREDUCE:
      return 2 * L * (alpha + N * beta) + L * N * gamma;
    case POL_COLL_BROADCAST:
      return L * (alpha + N * beta);
    case POL_COLL_REDUCE:
      return L * (alpha + N * beta) + L * N * gamma;
    default:
      return NAN;
    }
}

const PolCollAlgorithm pol_coll_tree = {
  .name = "tree",
  .description = "binomial-tree reduce to the root, then binomial broadcast",
  .source = "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  .build = tree_build,
  .step = tree_step,
  .cost = tree_cost,
};
