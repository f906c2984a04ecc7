/*
 * coll-naive.c — the naive collective: every rank sends its buffer to the
 * root, which sums them in rank order and sends the sum back; broadcast is
 * the root sending to every rank at once (direct gather and scatter in the
 * alpha-beta model, Hockney 1994).  All-reduce and broadcast only.  Its
 * steps and cost are in docs/collectives.md, "naive"; the executor that
 * runs them is policies/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "policies/coll-program.h"

/* Naive: every rank sends its buffer to the root, which sums the p buffers
 * in rank order into an accumulator and sends the sum to everyone.  Its
 * programs are stored (no `step`): 2p steps on the root, 2 on the
 * others, O(p) in all. */
static gboolean
naive_build (PolCollOp *op, PolCollKind kind, GError **error)
{
  int p = op->p, root = op->root;

  if (kind != POL_COLL_ALLREDUCE && kind != POL_COLL_BROADCAST)
    return pol_coll_unsupported ("naive", kind, error);
  if (kind == POL_COLL_ALLREDUCE)
    {
      for (int j = 0; j < p; j++)
        if (j == root)
          pol_coll_prog_local (op, root, POL_COLL_ACC_OWN);
        else
          {
            pol_coll_prog_send (op, j, root, 0, op->n, 0);
            pol_coll_prog_recv (op, root, j, 0, op->n, POL_COLL_RECV_ACC);
          }
      pol_coll_prog_local (op, root, POL_COLL_ACC_STORE);
    }
  for (int j = 0; j < p; j++)
    if (j != root)
      {
        pol_coll_prog_send (op, root, j, 0, op->n, 0);
        pol_coll_prog_recv (op, j, root, 0, op->n, POL_COLL_RECV_COPY);
      }
  return TRUE;
}

/* p-1 concurrent sends to the root, p-1 reductions in a row, p-1 concurrent
 * sends back: 2 (alpha + n beta) + (p-1) n gamma. */
static double
naive_cost (PolCollKind kind, int p, int group G_GNUC_UNUSED,
            gsize n, double elem_bytes, double alpha,
            double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */

  switch (kind)
    {
    case POL_COLL_ALLREDUCE:
      return p == 1 ? 0 : 2 * (alpha + N * beta) + (p - 1) * N * gamma;
    case POL_COLL_BROADCAST:
      return p == 1 ? 0 : alpha + N * beta;
    default:
      return NAN;
    }
}

const PolCollAlgorithm pol_coll_naive = {
  .name = "naive",
  .description = "every rank sends its buffer to the root, which sums and "
                 "sends back",
  .source = "direct gather and scatter, alpha-beta model (Hockney 1994)",
  .build = naive_build,
  .cost = naive_cost,
};
