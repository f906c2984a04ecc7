/*
 * hd.c — the halving-doubling collective (Rabenseifner): recursive
 * halving reduce-scatter then recursive doubling all-gather, with the
 * non-power-of-two pre- and post-steps of Thakur, Rabenseifner & Gropp 2005.
 * All-reduce, reduce-scatter and all-gather.  Its steps and cost are in
 * docs/collectives.md, "halving-doubling"; the executor that runs them is
 * comm/collectives.c.
 *
 * Its cost with unequal segments has no simpler closed form: hd_cost()
 * evaluates the max-plus recurrence of the dependency rule, which equals the
 * closed form of docs/collectives.md when segments are equal.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/program.h"
#include "comm/shard.h"

/* Largest power of two <= p (p >= 1). */
static int
floor_pow2 (int p)
{
  int q = 1;

  while (q * 2 <= p)
    q *= 2;
  return q;
}

/* Halving-doubling geometry shared by the steps and the cost:
 * p' = largest power of two <= p, r = p - p'.  Old ranks 0..2r-1 pair up
 * (even 2i is removed, odd 2i+1 becomes new rank i); old rank o >= 2r is new
 * rank o - r.  Group j of new rank j is a contiguous element range: for
 * all-reduce the blocks of n split in p'; for reduce-scatter and all-gather
 * the p blocks of n of the old ranks it stands for (2j and 2j+1 for j < r,
 * j + r otherwise).  bound[j] is group j's first element, bound[p'] = n. */
typedef struct {
  int pp, r;
  int lg;             /* log2 pp */
  gsize *bound;       /* (pp + 1) */
} HdGeom;

static void
hd_geom_init (HdGeom *g, int p, gsize n, CommKind kind)
{
  g->pp = floor_pow2 (p);
  g->r = p - g->pp;
  for (g->lg = 0; (1 << g->lg) < g->pp; g->lg++)
    ;
  g->bound = g_new (gsize, g->pp + 1);
  for (int j = 0; j < g->pp; j++)
    {
      gsize lo, hi;

      if (kind == COMM_ALLREDUCE)
        comm_shard_bounds (n, g->pp, j, &lo, &hi);
      else
        comm_shard_bounds (n, p, j < g->r ? 2 * j : j + g->r, &lo, &hi);
      g->bound[j] = lo;
    }
  g->bound[g->pp] = n;
}

/* The old rank of new rank j. */
static int
hd_old (const HdGeom *g, int j)
{
  return j < g->r ? 2 * j + 1 : j + g->r;
}

/* --- Steps ---------------------------------------------------------------- */

/* Frees a geometry made by hd_build. */
static void
hd_geom_free (gpointer data)
{
  HdGeom *g = data;

  g_free (g->bound);
  g_free (g);
}

/* Rabenseifner's algorithm: every kind but broadcast.  Its steps are
 * generated (hd_step) from the geometry, which this computes once. */
static gboolean
hd_build (CommOp *op, CommKind kind, GError **error)
{
  HdGeom *g;

  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE_SCATTER
      && kind != COMM_ALLGATHER)
    return comm_unsupported ("halving-doubling", kind, error);
  g = g_new (HdGeom, 1);
  hd_geom_init (g, op->p, op->n, kind);
  op->state = g;
  op->state_free = hd_geom_free;
  return TRUE;
}

/* Program of an even old rank o < 2r, removed from the power-of-two phase:
 * it hands its vector (all-gather: its block) to o + 1 and gets the result
 * back (reduce-scatter: its block). */
static gboolean
hd_removed_step (const CommOp *op, int o, guint index, CommStep *out)
{
  gsize blo, bhi;

  comm_shard_bounds (op->n, op->p, o, &blo, &bhi);
  if (index == 0 && op->kind == COMM_ALLGATHER)
    return comm_step_send (out, o + 1, blo, bhi, 0);
  if (index == 0)
    return comm_step_send (out, o + 1, 0, op->n, 0);
  if (index == 1 && op->kind == COMM_REDUCE_SCATTER)
    return comm_step_recv (out, o + 1, blo, bhi, COMM_RECV_COPY);
  if (index == 1)
    return comm_step_recv (out, o + 1, 0, op->n, COMM_RECV_COPY);
  return FALSE;
}

/* Step i (< 2 lg p') of the recursive halving of new rank j: in round
 * t = i/2, d = p'/2^(t+1), it exchanges with j^d (a send, then a receive).
 * Its range of groups before the round is the 2d groups from
 * j & ~(2d-1); it sends the half without j and adds the received half with
 * it, ending with group j. */
static gboolean
hd_halving_step (const HdGeom *g, int j, guint i, CommStep *out)
{
  int d = g->pp >> (i / 2 + 1);
  int peer = hd_old (g, j ^ d), lo = j & ~(2 * d - 1), mid = lo + d;
  const gsize *b = g->bound;

  if (i % 2 == 0 && (j & d))
    return comm_step_send (out, peer, b[lo], b[mid], 0);
  if (i % 2 == 0)
    return comm_step_send (out, peer, b[mid], b[mid + d], 0);
  if (j & d)
    return comm_step_recv (out, peer, b[mid], b[mid + d],
                               COMM_RECV_REDUCE);
  return comm_step_recv (out, peer, b[lo], b[mid], COMM_RECV_REDUCE);
}

/* Step i (< 2 lg p') of the recursive doubling of new rank j: in round
 * t = i/2, d = 2^t, it sends its range, the d groups from j & ~(d-1), to
 * j^d and copies its partner's adjacent one. */
static gboolean
hd_doubling_step (const HdGeom *g, int j, guint i, CommStep *out)
{
  int d = 1 << (i / 2);
  int peer = hd_old (g, j ^ d), lo = j & ~(d - 1), hi = lo + d;
  const gsize *b = g->bound;

  if (i % 2 == 0)
    return comm_step_send (out, peer, b[lo], b[hi], 0);
  if (j & d)
    return comm_step_recv (out, peer, b[lo - d], b[lo],
                               COMM_RECV_COPY);
  return comm_step_recv (out, peer, b[hi], b[hi + d], COMM_RECV_COPY);
}

/* Step `index` of old rank o [Rabenseifner 2004; Thakur et al. 2005], with
 * the non-power-of-two pre/post steps of Thakur et al. 2005: an odd old rank
 * o < 2r first takes in its removed neighbour o - 1's contribution and last
 * hands it the result; every new rank runs halving (not for all-gather) and
 * doubling (not for reduce-scatter). */
static gboolean
hd_step (const CommOp *op, int o, guint index, CommStep *out)
{
  const HdGeom *g = op->state;
  guint i = index, rounds = 2 * (guint) g->lg;  /* steps of one phase */
  gboolean paired = o < 2 * g->r;
  int j = paired ? o / 2 : o - g->r;
  gsize blo = 0, bhi = 0;   /* block of the removed partner, for RS and AG */

  if (paired && o % 2 == 0)
    return hd_removed_step (op, o, index, out);
  if (paired)
    comm_shard_bounds (op->n, op->p, o - 1, &blo, &bhi);
  if (paired && i == 0)
    return op->kind == COMM_ALLGATHER
           ? comm_step_recv (out, o - 1, blo, bhi, COMM_RECV_COPY)
           : comm_step_recv (out, o - 1, 0, op->n, COMM_RECV_REDUCE);
  if (paired)
    i--;
  if (op->kind != COMM_ALLGATHER && i < rounds)
    return hd_halving_step (g, j, i, out);
  if (op->kind != COMM_ALLGATHER)
    i -= rounds;
  if (op->kind != COMM_REDUCE_SCATTER && i < rounds)
    return hd_doubling_step (g, j, i, out);
  if (op->kind != COMM_REDUCE_SCATTER)
    i -= rounds;
  if (paired && i == 0)
    return op->kind == COMM_REDUCE_SCATTER
           ? comm_step_send (out, o - 1, blo, bhi, 0)
           : comm_step_send (out, o - 1, 0, op->n, 0);
  return FALSE;
}

/* --- Cost ------------------------------------------------------------------ */

/* The recurrence's state over the p' new ranks. */
typedef struct {
  HdGeom g;
  double eb;          /* bytes per element */
  double alpha, beta, gamma;
  double *T;          /* (pp) s, when new rank j has finished its current step */
  double *U;          /* (pp) the next T */
  gsize *lo, *hi;     /* (pp) new rank j's current range of groups [lo, hi) */
} HdCost;

/* Recursive halving: at d, new rank j keeps half of its range and receives
 * (and reduces) that half from j^d. */
static void
hd_cost_halving (HdCost *c)
{
  const HdGeom *g = &c->g;

  for (int j = 0; j < g->pp; j++)
    {
      c->lo[j] = 0;
      c->hi[j] = g->pp;
    }
  for (int d = g->pp / 2; d >= 1; d /= 2)
    {
      for (int j = 0; j < g->pp; j++)
        {
          int mid = (int) c->lo[j] + d;
          double s;

          if (j & d)
            c->lo[j] = mid;
          else
            c->hi[j] = mid;
          s = (double) (g->bound[c->hi[j]] - g->bound[c->lo[j]]) * c->eb;
          c->U[j] = MAX (c->T[j], c->T[j ^ d] + c->alpha + s * c->beta)
                    + s * c->gamma;
        }
      memcpy (c->T, c->U, sizeof (double) * g->pp);
    }
}

/* Recursive doubling from group j: at d, new rank j copies j^d's range,
 * adjacent to its own. */
static void
hd_cost_doubling (HdCost *c)
{
  const HdGeom *g = &c->g;

  for (int j = 0; j < g->pp; j++)
    {
      c->lo[j] = j;
      c->hi[j] = j + 1;
    }
  for (int d = 1; d < g->pp; d *= 2)
    {
      for (int j = 0; j < g->pp; j++)
        {
          double s;

          if (j & d)
            {
              s = (double) (g->bound[c->lo[j]] - g->bound[c->lo[j] - d]) * c->eb;
              c->lo[j] -= d;
            }
          else
            {
              s = (double) (g->bound[c->hi[j] + d] - g->bound[c->hi[j]]) * c->eb;
              c->hi[j] += d;
            }
          c->U[j] = MAX (c->T[j], c->T[j ^ d] + c->alpha + s * c->beta);
        }
      memcpy (c->T, c->U, sizeof (double) * g->pp);
    }
}

/* Halving-doubling with contention = none: the longest path of the
 * dependency rule, step by step.  T[j] is when new rank j has finished its
 * current step; at a step with partner q = j ^ d, receiving s bytes:
 *   T'[j] = max(T[j], T[q] + alpha + s beta) + s gamma
 * (gamma = reduce_per_byte in halving and in the pre-step of all-reduce and
 * reduce-scatter, 0 when copying).  With equal segments this is the closed
 * form of docs/collectives.md [Rabenseifner 2004; Thakur et al. 2005]:
 * p a power of two, equal blocks: 2 lg p alpha + 2 ((p-1)/p) n beta +
 * ((p-1)/p) n gamma; otherwise + (alpha + n beta + n gamma) before and
 * (alpha + n beta) after, lg p' and p' in place of lg p and p. */
static double
hd_cost (CommKind kind, int p, int group G_GNUC_UNUSED,
         gsize n, double elem_bytes, double alpha,
         double beta, double gamma)
{
  HdCost c = { .eb = elem_bytes, .alpha = alpha, .beta = beta,
               .gamma = gamma };
  double end = 0;

  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE_SCATTER
      && kind != COMM_ALLGATHER)
    return NAN;
  hd_geom_init (&c.g, p, n, kind);
  c.T = g_new0 (double, c.g.pp);
  c.U = g_new0 (double, c.g.pp);
  c.lo = g_new (gsize, c.g.pp);
  c.hi = g_new (gsize, c.g.pp);
  /* Pre-step: odd old rank 2j+1 receives from 2j. */
  for (int j = 0; j < c.g.r; j++)
    {
      gsize blo, bhi;

      comm_shard_bounds (n, p, 2 * j, &blo, &bhi);
      if (kind == COMM_ALLGATHER)
        c.T[j] = alpha + (double) (bhi - blo) * elem_bytes * beta;
      else
        c.T[j] = alpha + (double) n * elem_bytes * (beta + gamma);
    }
  if (kind != COMM_ALLGATHER)
    hd_cost_halving (&c);
  if (kind != COMM_REDUCE_SCATTER)
    hd_cost_doubling (&c);
  /* Post-step: odd old rank 2j+1 sends the result back to 2j. */
  for (int j = 0; j < c.g.pp; j++)
    {
      double back = 0;

      if (j < c.g.r)
        {
          gsize blo, bhi;

          comm_shard_bounds (n, p, 2 * j, &blo, &bhi);
          back = alpha + (kind == COMM_REDUCE_SCATTER
                          ? (double) (bhi - blo) : (double) n) * elem_bytes * beta;
        }
      end = MAX (end, c.T[j] + back);
    }
  g_free (c.T);
  g_free (c.U);
  g_free (c.lo);
  g_free (c.hi);
  g_free (c.g.bound);
  return end;
}

/* Transfers of one collective in one channel: p ranks, ceil(log2 p) steps
 * each way (all-reduce: both halving and doubling). */
static double
hd_messages (CommKind kind, int p, gsize n G_GNUC_UNUSED)
{
  double P = p, lg = ceil (log2 (P));
  return (kind == COMM_ALLREDUCE ? 2 : 1) * P * lg;
}

const CommAlgorithm comm_hd = {
  .name = "halving-doubling",
  .description = "recursive-halving reduce-scatter then recursive-doubling "
                 "all-gather (Rabenseifner)",
  .source = "Rabenseifner 2004, ICCS LNCS 3036; "
            "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  .build = hd_build,
  .step = hd_step,
  .cost = hd_cost,
  .messages = hd_messages,
};
