/*
 * naive.c — the naive collective: every rank sends its buffer to the
 * root, which sums them in rank order and sends the sum back; broadcast is
 * the root sending to every rank at once (direct gather and scatter in the
 * alpha-beta model, Hockney 1994).  Every kind, through the root as the
 * course's "driver": reduce, scatter, gather and all-to-all directly, the
 * others as two of those.  Its steps and cost are in docs/collectives.md,
 * "naive"; the executor that runs them is comm/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"
#include "comm/shard.h"

/* Rank j's block of the kind: the all-to-all's equal blocks of n / p
 * floats, else comm_shard_bounds' blocks. */
static void
naive_block (const CommOp *op, int j, gsize *lo, gsize *hi)
{
  if (op->kind == COMM_ALLTOALL)
    {
      gsize c = op->n / (gsize) op->p;

      *lo = (gsize) j * c;
      *hi = *lo + c;
    }
  else
    comm_shard_bounds (op->n, op->p, j, lo, hi);
}

/* The driver's reduce: every rank sends its whole buffer to the root, which
 * sums the p buffers in rank order into its accumulator (its own at its
 * place, free), then copies the sum into its buffer. */
static void
naive_reduce (CommOp *op)
{
  int root = op->root;

  for (int j = 0; j < op->p; j++)
    if (j == root)
      comm_prog_local (op, root, COMM_ACC_OWN);
    else
      {
        comm_prog_send (op, j, root, 0, op->n, 0);
        comm_prog_recv (op, root, j, 0, op->n, COMM_RECV_ACC);
      }
  comm_prog_local (op, root, COMM_ACC_STORE);
}

/* The root sends every other rank its block (`whole`: its whole buffer),
 * all at once; the receivers copy it. */
static void
naive_scatter (CommOp *op, gboolean whole)
{
  int root = op->root;

  for (int j = 0; j < op->p; j++)
    if (j != root)
      {
        gsize lo = 0, hi = op->n;

        if (!whole)
          naive_block (op, j, &lo, &hi);
        comm_prog_send (op, root, j, lo, hi, 0);
        comm_prog_recv (op, j, root, lo, hi, COMM_RECV_COPY);
      }
}

/* Every other rank sends its block to the root at once; the root copies
 * each into its place, in rank order. */
static void
naive_gather (CommOp *op)
{
  int root = op->root;

  for (int j = 0; j < op->p; j++)
    if (j != root)
      {
        gsize lo, hi;

        naive_block (op, j, &lo, &hi);
        comm_prog_send (op, j, root, lo, hi, 0);
        comm_prog_recv (op, root, j, lo, hi, COMM_RECV_COPY);
      }
}

/* Every rank r sends its block y to rank y, to r+1, r+2, ... in turn, all
 * at once, then takes block x of rank x into its block x in the same order:
 * its sends' snapshots are taken before any receive overwrites them. */
static void
naive_alltoall (CommOp *op)
{
  int p = op->p;

  for (int r = 0; r < p; r++)
    for (int k = 1; k < p; k++)
      {
        int y = (r + k) % p;
        gsize lo, hi;

        naive_block (op, y, &lo, &hi);
        comm_prog_send (op, r, y, lo, hi, 0);
      }
  for (int r = 0; r < p; r++)
    for (int k = 1; k < p; k++)
      {
        int x = (r + p - k) % p;
        gsize lo, hi;

        naive_block (op, x, &lo, &hi);
        comm_prog_recv (op, r, x, lo, hi, COMM_RECV_COPY);
      }
}

/* The driver (the root) does every kind: what it gathers or reduces it
 * sends back out.  The programs are stored (no `step`): O(p) steps, O(p^2)
 * for all-to-all. */
static gboolean
naive_build (CommOp *op, CommKind kind, GError **error G_GNUC_UNUSED)
{
  switch (kind)
    {
    case COMM_ALLREDUCE:
      naive_reduce (op);
      naive_scatter (op, TRUE);
      break;
    case COMM_REDUCE:
      naive_reduce (op);
      break;
    case COMM_REDUCE_SCATTER:
      naive_reduce (op);
      naive_scatter (op, FALSE);
      break;
    case COMM_BROADCAST:
      naive_scatter (op, TRUE);
      break;
    case COMM_SCATTER:
      naive_scatter (op, FALSE);
      break;
    case COMM_GATHER:
      naive_gather (op);
      break;
    case COMM_ALLGATHER:
      naive_gather (op);
      naive_scatter (op, TRUE);
      break;
    case COMM_ALLTOALL:
      naive_alltoall (op);
      break;
    }
  return TRUE;
}

/* Direct transfers in the alpha-beta model: each phase's p-1 transfers run
 * at once, so a phase costs alpha + (its largest message) beta; the root's
 * p-1 reductions run in a row.  M: the largest block (exact when a rank
 * other than the root has one of that size: not when n mod p = 1 and the
 * root is rank 0); C = floor(n/p) floats, all-to-all's block. */
static double
naive_cost (CommKind kind, int p, int group G_GNUC_UNUSED,
            gsize n, double elem_bytes, double alpha,
            double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double M = (double) ((n + (gsize) p - 1) / (gsize) p) * elem_bytes;
  double C = (double) (n / (gsize) p) * elem_bytes;
  double reduce = alpha + N * beta + (p - 1) * N * gamma;

  if (p == 1)
    return 0;
  switch (kind)
    {
    case COMM_ALLREDUCE:
      return reduce + alpha + N * beta;
    case COMM_REDUCE:
      return reduce;
    case COMM_REDUCE_SCATTER:
      return reduce + alpha + M * beta;
    case COMM_BROADCAST:
      return alpha + N * beta;
    case COMM_SCATTER:
    case COMM_GATHER:
      return alpha + M * beta;
    case COMM_ALLGATHER:
      return 2 * alpha + M * beta + N * beta;
    case COMM_ALLTOALL:
      return alpha + C * beta;
    }
  return NAN;
}

/* Transfers of one collective in one channel: all-reduce 2(p - 1) (to the
 * root and back); a one-to-all kind p - 1; the others p(p - 1). */
static double
naive_messages (CommKind kind, int p, gsize n G_GNUC_UNUSED)
{
  double P = p;
  if (kind == COMM_ALLREDUCE)
    return 2 * (P - 1);
  return comm_kind_one_to_all (kind) ? P - 1 : P * (P - 1);
}

const CommAlgorithm comm_naive = {
  .name = "naive",
  .description = "the root as driver: every rank sends it its part, it sums "
                 "or collects them and sends the result out",
  .source = "direct gather and scatter, alpha-beta model (Hockney 1994)",
  .baseline = TRUE,
  .build = naive_build,
  .cost = naive_cost,
  .messages = naive_messages,
  .all_at_once = TRUE,
};
