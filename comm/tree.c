/*
 * tree.c — the binomial-tree collective: reduce to the root, then
 * binomial broadcast, one-port (Thakur, Rabenseifner & Gropp 2005; MPICH's
 * ordering).  All-reduce, reduce (its first half) and broadcast.  Its steps and cost are in
 * docs/collectives.md, "tree"; the executor that runs them is
 * comm/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"

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
tree_build (CommOp *op G_GNUC_UNUSED, CommKind kind, GError **error)
{
  if (kind != COMM_ALLREDUCE && kind != COMM_BROADCAST
      && kind != COMM_REDUCE)
    return comm_unsupported ("tree", kind, error);
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
tree_step (const CommOp *op, int r, guint index, CommStep *out)
{
  int p = op->p, v = comm_mod (r - op->root, p);
  int top;   /* first mask of the broadcast's sends, then halving */
  guint i = 0;  /* index of the step considered */

#define REAL(u) comm_mod ((u) + op->root, p)
  if (op->kind == COMM_ALLREDUCE || op->kind == COMM_REDUCE)
    for (int mask = 1; mask < p; mask <<= 1)
      {
        if (v & mask)
          {
            if (i++ == index)
              return comm_step_send (out, REAL (v - mask), 0, op->n,
                                         COMM_SEND_WAIT
                                         | COMM_SEND_RDV);
            break;
          }
        if (v + mask < p && i++ == index)
          return comm_step_recv (out, REAL (v + mask), 0, op->n,
                                     COMM_RECV_REDUCE);
      }
  if (op->kind == COMM_REDUCE)
    return FALSE;
  if (v == 0)
    top = p > 1 ? 1 << (ceil_log2 (p) - 1) : 0;
  else
    {
      int low = v & -v;

      if (i++ == index)
        return comm_step_recv (out, REAL (v - low), 0, op->n,
                                   COMM_RECV_COPY);
      top = low >> 1;
    }
  for (int mask = top; mask >= 1; mask >>= 1)
    if (v + mask < p && i++ == index)
      return comm_step_send (out, REAL (v + mask), 0, op->n,
                                 COMM_SEND_WAIT);
#undef REAL
  return FALSE;
}

/* Thakur et al. 2005: binomial broadcast ceil(lg p)(alpha + n beta); reduce
 * the same plus ceil(lg p) n gamma. */
static double
tree_cost (CommKind kind, int p, int group G_GNUC_UNUSED,
           gsize n, double elem_bytes, double alpha,
           double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double L = ceil_log2 (p);

  switch (kind)
    {
    case COMM_ALLREDUCE:
      return 2 * L * (alpha + N * beta) + L * N * gamma;
    case COMM_BROADCAST:
      return L * (alpha + N * beta);
    case COMM_REDUCE:
      return L * (alpha + N * beta) + L * N * gamma;
    default:
      return NAN;
    }
}

/* Transfers of one collective in one channel: every rank but the root
 * sends once up (and all-reduce once more down), (p - 1) each way. */
static double
tree_messages (CommKind kind, int p, gsize n G_GNUC_UNUSED)
{
  return (kind == COMM_ALLREDUCE ? 2 : 1) * (double) (p - 1);
}

const CommAlgorithm comm_tree = {
  .name = "tree",
  .description = "binomial-tree reduce to the root, then binomial broadcast",
  .source = "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  .family = COMM_FAMILY_TREE,
  .build = tree_build,
  .step = tree_step,
  .cost = tree_cost,
  .messages = tree_messages,
};
