/*
 * ring.c — the ring collective: reduce-scatter then all-gather around
 * a ring of the p ranks, p - 1 steps each (Patarasuk & Yuan 2009), and
 * broadcast as a relay.  Its steps and cost are in docs/collectives.md,
 * "ring"; the executor that runs them is comm/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"
#include "comm/shard.h"

/* Ring [Patarasuk & Yuan 2009]: all-reduce, reduce-scatter, all-gather and
 * broadcast, and its steps are a formula of (rank, index) (ring_step):
 * nothing to prepare. */
static gboolean
ring_build (CommOp *op G_GNUC_UNUSED, CommKind kind, GError **error)
{
  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE_SCATTER
      && kind != COMM_ALLGATHER && kind != COMM_BROADCAST)
    return comm_unsupported ("ring", kind, error);
  return TRUE;
}

/* Broadcast, a plain relay of the whole buffer root -> root+1 -> ...: rank r
 * (v = r - root mod p) receives from r-1 unless it is the root, then sends
 * to r+1 unless it is last. */
static gboolean
ring_relay_step (const CommOp *op, int r, guint index, CommStep *out)
{
  int p = op->p, v = comm_mod (r - op->root, p);

  if (v > 0 && index == 0)
    return comm_step_recv (out, comm_mod (r - 1, p), 0, op->n,
                               COMM_RECV_COPY);
  if (v > 0)
    index--;
  if (v < p - 1 && index == 0)
    return comm_step_send (out, comm_mod (r + 1, p), 0, op->n, 0);
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
ring_step (const CommOp *op, int r, guint index, CommStep *out)
{
  int p = op->p, k, off;
  guint per = 2 * (guint) (p - 1), pass;   /* steps per pass, which pass */
  CommRecvMode mode;
  gsize lo, hi;

  if (op->kind == COMM_BROADCAST)
    return ring_relay_step (op, r, index, out);
  if (p == 1)
    return FALSE;
  pass = index / per;
  k = (int) (index % per / 2);
  if (op->kind == COMM_ALLREDUCE && pass < 2)
    {
      off = (int) pass;
      mode = pass == 0 ? COMM_RECV_REDUCE : COMM_RECV_COPY;
    }
  else if (op->kind == COMM_REDUCE_SCATTER && pass == 0)
    {
      off = -1;
      mode = COMM_RECV_REDUCE;
    }
  else if (op->kind == COMM_ALLGATHER && pass == 0)
    {
      off = 0;
      mode = COMM_RECV_COPY;
    }
  else
    return FALSE;
  /* the neighbours without a division: this runs twice per transfer */
  if (index % 2 == 0)
    {
      comm_shard_bounds (op->n, p, comm_mod (r - k + off, p), &lo, &hi);
      return comm_step_send (out, r + 1 == p ? 0 : r + 1, lo, hi, 0);
    }
  comm_shard_bounds (op->n, p, comm_mod (r - 1 - k + off, p), &lo, &hi);
  return comm_step_recv (out, r == 0 ? p - 1 : r - 1, lo, hi, mode);
}

/* The ring as one phase of rounds (CommAlgorithm.rounds): every rank
 * sends to r + 1 and receives from r - 1 in each step, forwarding the
 * block it received, so block b travels around the ring; blocks of
 * floor(n/p) and floor(n/p) + 1 elements (comm_shard_bounds), at least
 * one each.  All-reduce is 2(p - 1) rounds, the first p - 1 reducing,
 * rank r starting with block r; reduce-scatter p - 1 reducing rounds from
 * block r - 1; all-gather p - 1 copying rounds from block r.  Broadcast's
 * relay is no such ring (its ranks wait in turn). */
static int
ring_rounds (const CommOp *op, CommRound *out, int max)
{
  int p = op->p, off;
  CommRound *o = &out[0];

  if (p < 2 || op->n < (gsize) p || max < 1)
    return 0;
  switch (op->kind)
    {
    case COMM_ALLREDUCE:
      *o = (CommRound) { 2 * (p - 1), p - 1, NULL, NULL };
      off = 0;
      break;
    case COMM_REDUCE_SCATTER:
      *o = (CommRound) { p - 1, p - 1, NULL, NULL };
      off = -1;
      break;
    case COMM_ALLGATHER:
      *o = (CommRound) { p - 1, 0, NULL, NULL };
      off = 0;
      break;
    default:
      return 0;
    }
  o->to = g_new (int, p);
  o->elems = g_new (gsize, p);
  for (int r = 0; r < p; r++)
    {
      gsize lo, hi;

      comm_shard_bounds (op->n, p, comm_mod (r + off, p), &lo, &hi);
      o->to[r] = r + 1 == p ? 0 : r + 1;
      o->elems[r] = hi - lo;
    }
  return 1;
}

/* The rounds ring_rounds gives: 2(p - 1) for an all-reduce, p - 1 for a
 * reduce-scatter or an all-gather, when every block has an element. */
static double
ring_class_rounds (CommKind kind, int p, int group G_GNUC_UNUSED, gsize n)
{
  if (p < 2 || n < (gsize) p)
    return 0;
  if (kind == COMM_ALLREDUCE)
    return 2.0 * (p - 1);
  if (kind == COMM_REDUCE_SCATTER || kind == COMM_ALLGATHER)
    return p - 1;
  return 0;
}

/* Patarasuk & Yuan 2009, Thakur et al. 2005:
 * 2(p-1) alpha + 2 ((p-1)/p) n beta, with n/p replaced by the largest
 * block M = ceil(n/p) elements (exact: block 0's path through all
 * 2(p-1) steps is the longest); each of the p-1 reduce-scatter steps
 * reduces one block: + (p-1) M gamma. */
static double
ring_cost (CommKind kind, int p, int group G_GNUC_UNUSED,
           gsize n, double elem_bytes, double alpha,
           double beta, double gamma)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double M = (double) ((n + (gsize) p - 1) / (gsize) p) * elem_bytes;
                                         /* bytes of the largest block */

  switch (kind)
    {
    case COMM_ALLREDUCE:
      return 2 * (p - 1) * alpha + (p - 1) * M * (2 * beta + gamma);
    case COMM_REDUCE_SCATTER:
      return (p - 1) * (alpha + M * (beta + gamma));
    case COMM_ALLGATHER:
      return (p - 1) * (alpha + M * beta);
    case COMM_BROADCAST:
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
 * reductions (docs/collectives.md, hierarchical: the flat ring on nodes).
 * Where links are shared, the chain's speed does not decide: every link
 * of the ring carries 2(p - 1) blocks, so the slower level's bandwidth
 * times all of them bounds the time, the latencies still the chain's. */
static double
ring_cost_levels (const CommLevels *l)
{
  int p = l->p, g = l->group, m, x;
  double M = (double) ((l->n + (gsize) p - 1) / (gsize) p) * l->elem_bytes;

  if (l->kind != COMM_ALLREDUCE || g < 2 || p % g != 0)
    return ring_cost (l->kind, p, 1, l->n, l->elem_bytes, l->alpha_out,
                      l->beta_out, l->reduce_per_byte);
  m = p / g;
  x = g == 2 ? 2 * m - 1 : 2 * m;
  if (l->shared)  /* each crossing link carries all 2(p - 1) blocks */
    return x * l->alpha_out + (2 * (p - 1) - x) * l->alpha_in
           + 2 * (p - 1) * M * MAX (l->beta_out, l->beta_in)
           + (p - 1) * M * l->reduce_per_byte;
  return x * (l->alpha_out + M * l->beta_out)
         + (2 * (p - 1) - x) * (l->alpha_in + M * l->beta_in)
         + (p - 1) * M * l->reduce_per_byte;
}

/* Transfers of one collective in one channel: all-reduce 2p(p - 1) (p
 * ranks, 2(p - 1) steps each); a one-to-all kind p - 1; the others
 * p(p - 1). */
static double
ring_messages (CommKind kind, int p, gsize n G_GNUC_UNUSED)
{
  double P = p;
  if (kind == COMM_ALLREDUCE)
    return 2 * P * (P - 1);
  return comm_kind_one_to_all (kind) ? P - 1 : P * (P - 1);
}

const CommAlgorithm comm_ring = {
  .name = "ring",
  .description = "reduce-scatter then all-gather around a ring, p-1 steps each",
  .source = "Patarasuk & Yuan 2009, J. Parallel Distrib. Comput. 69(2); "
            "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  .one_route = TRUE,
  .build = ring_build,
  .step = ring_step,
  .cost = ring_cost,
  .cost_levels = ring_cost_levels,
  .messages = ring_messages,
  .rounds = ring_rounds,
  .class_rounds = ring_class_rounds,
  .nccl = TRUE,
};
