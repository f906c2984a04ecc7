/*
 * butterfly.c — the butterfly (recursive-doubling) all-reduce: in round t
 * rank r exchanges its whole buffer with r XOR 2^t and adds in what it
 * receives, so after log2 p rounds every rank holds the sum (Thakur,
 * Rabenseifner & Gropp 2005, the all-reduce MPICH runs for short
 * messages).  For p not a power of two the ranks beyond the largest power
 * of two p' first fold their buffers into a partner among the first p'
 * and get the result back.  All-reduce only.  Its steps and cost are in
 * docs/collectives.md, "butterfly"; the executor that runs them is
 * comm/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"

/* Largest power of two <= p (p >= 1). */
static int
bf_floor_pow2 (int p)
{
  return 1 << (g_bit_storage ((gulong) p) - 1);
}

/* log2 of a power of two q >= 1. */
static int
bf_log2 (int q)
{
  return (int) g_bit_storage ((gulong) q) - 1;
}

/* All-reduce only; the steps are a formula of (rank, index) (bf_step):
 * nothing to prepare.  (Recursive-doubling all-gather is the all-gather
 * kind of halving-doubling, step for step.) */
static gboolean
bf_build (CommOp *op G_GNUC_UNUSED, CommKind kind, GError **error)
{
  if (kind != COMM_ALLREDUCE)
    return comm_unsupported ("butterfly", kind, error);
  return TRUE;
}

/* Step `index` of rank r [Thakur et al. 2005, recursive doubling], with
 * p' the largest power of two <= p and e = p - p' extra ranks.  An extra
 * rank x >= p' sends its whole buffer to x - p' and copies the result
 * back from it.  A rank j < p' first adds in the buffer of its extra
 * partner j + p' if it has one (j < e); then, for each round t < log2 p',
 * sends its whole buffer to j XOR 2^t and adds in the partner's (the send
 * is eager, so both leave at once); last, hands the sum to j + p' if
 * j < e.  Every addition is one partner's buffer into one's own, a + b on
 * one side and b + a on the other, so every rank ends bit-identical. */
static gboolean
bf_step (const CommOp *op, int r, guint index, CommStep *out)
{
  int pp = bf_floor_pow2 (op->p), extra = op->p - pp;
  guint rounds = (guint) bf_log2 (pp), i = index;
  gsize n = op->n;

  if (r >= pp)
    {
      if (index == 0)
        return comm_step_send (out, r - pp, 0, n, 0);
      if (index == 1)
        return comm_step_recv (out, r - pp, 0, n, COMM_RECV_COPY);
      return FALSE;
    }
  if (r < extra && i == 0)
    return comm_step_recv (out, r + pp, 0, n, COMM_RECV_REDUCE);
  if (r < extra)
    i--;
  if (i < 2 * rounds)
    {
      int peer = r ^ (1 << (i / 2));

      return i % 2 == 0
             ? comm_step_send (out, peer, 0, n, 0)
             : comm_step_recv (out, peer, 0, n, COMM_RECV_REDUCE);
    }
  if (r < extra && i == 2 * rounds)
    return comm_step_send (out, r + pp, 0, n, 0);
  return FALSE;
}

/* Thakur et al. 2005, recursive doubling, with contention = none: p' the
 * largest power of two <= p, L' = log2 p', h = alpha + N (beta + gamma)
 * one round (N = n elem_bytes bytes: the whole buffer every time):
 *   p = p'                    L' h
 *   p' < p <= 3p'/2           (L' + 1) h = ceil(log2 p) h
 *   3p'/2 < p                 (L' + 2)(alpha + N beta) + (L' + 1) N gamma
 * The fold's first step (h) delays the first p - p' ranks; the longest
 * path then crosses the L' rounds from rank 0 to rank p' - 1.  The fold's
 * last step (alpha + N beta) lengthens it only when two ranks holding an
 * extra partner differ in every bit (j and p' - 1 - j, both < p - p'), which
 * happens exactly when p - p' > p'/2: otherwise the ranks that hand the
 * result back finish at least alpha + N beta earlier than rank p' - 1
 * (docs/collectives.md, "butterfly"). */
static double
bf_cost (CommKind kind, int p, int group G_GNUC_UNUSED,
         gsize n, double elem_bytes, double alpha,
         double beta, double gamma)
{
  double N = (double) n * elem_bytes;   /* bytes of the whole buffer */
  double h = alpha + N * (beta + gamma);  /* s, one round */
  int pp, L, extra;

  if (kind != COMM_ALLREDUCE)
    return NAN;
  if (p <= 1)
    return 0;
  pp = bf_floor_pow2 (p);
  L = bf_log2 (pp);
  extra = p - pp;
  if (extra == 0)
    return L * h;
  if (2 * extra <= pp)
    return (L + 1) * h;
  return (L + 2) * (alpha + N * beta) + (L + 1) * N * gamma;
}

/* Transfers of one all-reduce in one channel: p' ranks send log2 p' times
 * each, and each of the p - p' extra ranks sends once and receives once. */
static double
bf_messages (CommKind kind G_GNUC_UNUSED, int p, gsize n G_GNUC_UNUSED)
{
  int pp = bf_floor_pow2 (p);

  return (double) pp * bf_log2 (pp) + 2.0 * (p - pp);
}

const CommAlgorithm comm_butterfly = {
  .name = "butterfly",
  .description = "recursive doubling: in round t every rank exchanges its "
                 "whole buffer with rank XOR 2^t, log2 p rounds",
  .source = "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  /* Where links are shared, a rank with an extra partner can receive its
   * partner's buffer and its first round's at once, and ranks without one
   * run ahead into ranks still folding: auto prices its bandwidth term
   * twice, as the double tree's (docs/collectives.md, "butterfly"). */
  .shared_beta = 2,
  .build = bf_build,
  .step = bf_step,
  .cost = bf_cost,
  .messages = bf_messages,
};
