/*
 * collectives.c — ring, tree, halving-doubling and naive collectives over the
 * simulated network, moving real floats.
 *
 * Every algorithm is written as one *program* per rank: an ordered list of
 * steps (send a range of elements to a rank, receive a range from a rank and
 * add or copy it, and for naive the root's accumulator steps).  One
 * interpreter runs every program as events, so the dependency rule is the same
 * for all algorithms (docs/collectives.md):
 *
 *   - a rank executes its steps in order;
 *   - a send is handed to the network when the rank reaches it, carrying a
 *     snapshot of its elements taken then; an eager send completes at once,
 *     a "wait" send only when its last byte has arrived (one-port sender),
 *     and a "rendezvous" send does not start before the receiver has reached
 *     the matching receive (one-port receiver; the handshake is free);
 *   - a receive completes when its message has arrived (messages between two
 *     ranks are matched in program order, whatever order they arrive in) and,
 *     for a reducing receive, after reduce_per_byte x bytes more, during which
 *     the rank does nothing else (its reductions are serialized); the data are
 *     added or copied into the buffer when the receive completes.
 *
 * pol_coll_cost() gives the closed forms of docs/collectives.md; for
 * halving-doubling with unequal segments it evaluates the max-plus recurrence
 * of the same rule, which has no simpler closed form.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/collectives.h"
#include "policies/policy.h"

G_DEFINE_QUARK (pol-coll-error-quark, pol_coll_error)

/* --- Programs -------------------------------------------------------------- */

typedef enum {
  STEP_SEND,      /* hand [lo, hi) to `peer` */
  STEP_RECV,      /* take [lo, hi) from `peer`, combine per `mode` */
  STEP_ACC_OWN,   /* naive root: acc += own buffer (free) */
  STEP_ACC_STORE  /* naive root: own buffer = acc */
} CollStepType;

typedef enum {
  RECV_REDUCE,    /* buf[lo, hi) += payload, costs reduce_per_byte */
  RECV_COPY,      /* buf[lo, hi) = payload, free */
  RECV_ACC        /* acc[lo, hi) += payload, costs reduce_per_byte */
} CollRecvMode;

enum {
  SEND_WAIT = 1 << 0, /* the step ends when the last byte has arrived */
  SEND_RDV = 1 << 1   /* starts only once the receiver is at the receive */
};

typedef struct {
  guint8 type;        /* CollStepType */
  guint8 mode;        /* CollRecvMode, for STEP_RECV */
  guint8 flags;       /* SEND_*, for STEP_SEND */
  int peer;           /* rank sent to or received from */
  guint32 seq;        /* index among the messages peer->me (or me->peer) */
  gsize lo, hi;       /* element range [lo, hi) */
} CollStep;

typedef struct CollOp CollOp;

/* A message between two ranks, from net_send to its receive step. */
typedef struct {
  guint64 key;        /* (src << 32) | seq: key in the receiver's table */
  int src, dst;       /* ranks */
  gsize lo, hi;       /* element range */
  float *payload;     /* (hi - lo) floats snapshot, or NULL (timing only) */
  gboolean wait;      /* the sender waits for its arrival */
} CollMsg;

typedef struct {
  GArray *prog;       /* CollStep, in execution order */
  guint pc;           /* index of the current step */
  gboolean busy;      /* the current step is under way (reduction, wait) */
  gboolean running;   /* coll_advance() is on the stack for this rank */
  gboolean finished;
  GHashTable *arrived; /* &msg->key -> CollMsg, arrived not yet received */
  GHashTable *counts;  /* at build: peer+1 -> messages so far, per direction */
} CollRank;

/* One running collective; owns everything it allocates. */
struct CollOp {
  EngSim *sim;
  NetNetwork *net;
  int p;
  int *hosts;         /* (p) host ids */
  float **bufs;       /* (p) borrowed buffers, or NULL (timing only) */
  gsize n;            /* floats per buffer */
  double elem_bytes;  /* bytes per element on the wire */
  double reduce_per_byte; /* s per byte reduced */
  int root;
  int tag;
  CollRank *ranks;    /* (p) */
  float *acc;         /* (n) naive root's accumulator, or NULL */
  int n_finished;     /* ranks whose program has ended */
  int outstanding;    /* events and transfers whose callback is pending */
  PolCollDone done;
  gpointer ctx, data;
};

static int
mod (int a, int p)
{
  return ((a % p) + p) % p;
}

/* Smallest L with 2^L >= p (p >= 1). */
static int
ceil_log2 (int p)
{
  int L = 0;

  while ((1 << L) < p)
    L++;
  return L;
}

/* Largest power of two <= p (p >= 1). */
static int
floor_pow2 (int p)
{
  int q = 1;

  while (q * 2 <= p)
    q *= 2;
  return q;
}

static void
block_bounds (gsize n, int p, int b, gsize *lo, gsize *hi)
{
  pol_shard_bounds (n, p, b, lo, hi);
}

/* Next message index between `r` and `peer` in one direction (sends and
 * receives are counted in separate keys: +1 and -1 offsets). */
static guint32
next_seq (CollRank *rk, int key)
{
  gpointer k = GINT_TO_POINTER (key);
  guint32 c = GPOINTER_TO_UINT (g_hash_table_lookup (rk->counts, k));

  g_hash_table_insert (rk->counts, k, GUINT_TO_POINTER (c + 1));
  return c;
}

static void
prog_send (CollOp *op, int r, int dst, gsize lo, gsize hi, guint flags)
{
  CollRank *rk = &op->ranks[r];
  CollStep s = { STEP_SEND, 0, (guint8) flags, dst, 0, lo, hi };

  g_assert (dst != r && lo <= hi && hi <= op->n);
  s.seq = next_seq (rk, dst + 1);
  g_array_append_val (rk->prog, s);
}

static void
prog_recv (CollOp *op, int r, int src, gsize lo, gsize hi, CollRecvMode mode)
{
  CollRank *rk = &op->ranks[r];
  CollStep s = { STEP_RECV, (guint8) mode, 0, src, 0, lo, hi };

  g_assert (src != r && lo <= hi && hi <= op->n);
  s.seq = next_seq (rk, -(src + 1));
  g_array_append_val (rk->prog, s);
}

static void
prog_local (CollOp *op, int r, CollStepType type)
{
  CollStep s = { (guint8) type, 0, 0, r, 0, 0, op->n };

  g_array_append_val (op->ranks[r].prog, s);
}

/* --- Interpreter ----------------------------------------------------------- */

static void coll_advance (CollOp *op, int r);

static void
coll_op_free (CollOp *op)
{
  for (int r = 0; r < op->p; r++)
    {
      CollRank *rk = &op->ranks[r];

      if (rk->prog)
        g_array_unref (rk->prog);
      if (rk->counts)
        g_hash_table_unref (rk->counts);
      if (rk->arrived)
        {
          g_assert (g_hash_table_size (rk->arrived) == 0);
          g_hash_table_unref (rk->arrived);
        }
    }
  g_free (op->ranks);
  g_free (op->hosts);
  g_free (op->bufs);
  g_free (op->acc);
  g_free (op);
}

/* Calls `done` and frees the operation once every rank has finished and no
 * callback of it is pending.  Must be the last thing a handler does. */
static void
coll_maybe_finish (CollOp *op)
{
  PolCollDone done;
  EngSim *sim;
  gpointer ctx, data;

  if (op->n_finished < op->p || op->outstanding > 0)
    return;
  done = op->done;
  sim = op->sim;
  ctx = op->ctx;
  data = op->data;
  coll_op_free (op);
  done (sim, ctx, data);
}

static void
msg_free (CollMsg *m)
{
  g_free (m->payload);
  g_free (m);
}

/* Combines a received message into the receiver's buffer (or accumulator). */
static void
msg_apply (CollOp *op, CollMsg *m, CollRecvMode mode)
{
  float *dst;
  gsize len = m->hi - m->lo;

  if (op->bufs == NULL || len == 0)
    return;
  g_assert (m->payload != NULL);
  dst = (mode == RECV_ACC ? op->acc : op->bufs[m->dst]) + m->lo;
  if (mode == RECV_COPY)
    memcpy (dst, m->payload, len * sizeof (float));
  else
    for (gsize i = 0; i < len; i++)
      dst[i] += m->payload[i];
}

/* The last byte of a message has arrived at its receiver. */
static void
on_arrival (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data,
            const NetTransfer *t G_GNUC_UNUSED)
{
  CollOp *op = ctx;
  CollMsg *m = data;
  int src = m->src, dst = m->dst;
  gboolean wait = m->wait;

  op->outstanding--;
  g_hash_table_insert (op->ranks[dst].arrived, &m->key, m);
  if (wait)
    {
      CollRank *sk = &op->ranks[src];

      g_assert (sk->busy);
      sk->busy = FALSE;
      sk->pc++;
    }
  coll_advance (op, dst);
  if (wait)
    coll_advance (op, src);
  coll_maybe_finish (op);
}

/* A reducing receive's reduction time is over. */
static void
on_reduced (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  CollOp *op = ctx;
  CollMsg *m = data;
  int r = m->dst;
  CollRank *rk = &op->ranks[r];
  const CollStep *s = &g_array_index (rk->prog, CollStep, rk->pc);

  op->outstanding--;
  g_assert (rk->busy && s->type == STEP_RECV);
  msg_apply (op, m, (CollRecvMode) s->mode);
  msg_free (m);
  rk->busy = FALSE;
  rk->pc++;
  coll_advance (op, r);
  coll_maybe_finish (op);
}

static void
on_start (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollOp *op = ctx;

  op->outstanding--;
  for (int r = 0; r < op->p; r++)
    coll_advance (op, r);
  coll_maybe_finish (op);
}

/* TRUE when rank `r` is waiting at the receive matching send step `s` of
 * rank `src`. */
static gboolean
recv_posted (CollOp *op, int src, const CollStep *s)
{
  CollRank *rk = &op->ranks[s->peer];
  const CollStep *rs;

  if (rk->pc >= rk->prog->len || rk->busy)
    return FALSE;
  rs = &g_array_index (rk->prog, CollStep, rk->pc);
  return rs->type == STEP_RECV && rs->peer == src && rs->seq == s->seq;
}

static void
issue_send (CollOp *op, int r, const CollStep *s)
{
  CollMsg *m = g_new0 (CollMsg, 1);
  gsize len = s->hi - s->lo;

  m->src = r;
  m->dst = s->peer;
  m->key = ((guint64) (guint32) r << 32) | s->seq;
  m->lo = s->lo;
  m->hi = s->hi;
  m->wait = (s->flags & SEND_WAIT) != 0;
  if (op->bufs != NULL && len > 0)
    m->payload = g_memdup2 (op->bufs[r] + s->lo, len * sizeof (float));
  op->outstanding++;
  net_send (op->net, op->hosts[r], op->hosts[s->peer],
            (double) len * op->elem_bytes, op->tag, on_arrival, op, m);
}

/* Runs rank r's program as far as it can go now. */
static void
coll_advance (CollOp *op, int r)
{
  CollRank *rk = &op->ranks[r];

  if (rk->running)
    return;
  rk->running = TRUE;
  while (!rk->busy && rk->pc < rk->prog->len)
    {
      const CollStep *s = &g_array_index (rk->prog, CollStep, rk->pc);

      if (s->type == STEP_SEND)
        {
          if ((s->flags & SEND_RDV) && !recv_posted (op, r, s))
            break;  /* the receiver wakes us when it gets there */
          issue_send (op, r, s);
          if (s->flags & SEND_WAIT)
            rk->busy = TRUE;
          else
            rk->pc++;
        }
      else if (s->type == STEP_RECV)
        {
          guint64 key = ((guint64) (guint32) s->peer << 32) | s->seq;
          CollMsg *m = g_hash_table_lookup (rk->arrived, &key);
          double secs;

          if (m == NULL)
            {
              /* A rendezvous sender may be waiting for us. */
              coll_advance (op, s->peer);
              break;
            }
          g_hash_table_remove (rk->arrived, &key);
          secs = s->mode == RECV_COPY ? 0
                 : op->reduce_per_byte * (double) (s->hi - s->lo)
                   * op->elem_bytes;
          if (secs > 0)
            {
              rk->busy = TRUE;
              op->outstanding++;
              eng_schedule (op->sim, secs, on_reduced, op, m);
            }
          else
            {
              msg_apply (op, m, (CollRecvMode) s->mode);
              msg_free (m);
              rk->pc++;
            }
        }
      else if (s->type == STEP_ACC_OWN)
        {
          if (op->bufs != NULL)
            for (gsize i = 0; i < op->n; i++)
              op->acc[i] += op->bufs[r][i];
          rk->pc++;
        }
      else
        {
          if (op->bufs != NULL)
            memcpy (op->bufs[r], op->acc, op->n * sizeof (float));
          rk->pc++;
        }
    }
  if (!rk->finished && rk->pc == rk->prog->len)
    {
      rk->finished = TRUE;
      op->n_finished++;
    }
  rk->running = FALSE;
}

/* --- Algorithms: program builders ----------------------------------------- */

static gboolean
unsupported (const char *alg, PolCollKind kind, GError **error)
{
  static const char *const names[] = { "all-reduce", "reduce-scatter",
                                       "all-gather", "broadcast" };

  g_set_error (error, POL_COLL_ERROR, POL_COLL_ERROR_UNSUPPORTED,
               "collective algorithm \"%s\": %s is not supported", alg,
               names[kind]);
  return FALSE;
}

/* Ring [Patarasuk & Yuan 2009]: p-1 reduce-scatter steps, p-1 all-gather
 * steps; in reduce-scatter step k rank r sends block (r-k+off) mod p to r+1
 * and receives block (r-1-k+off) from r-1, adding it in.  off = 0 for
 * all-reduce (rank r ends owning block r+1, which it all-gathers first),
 * off = -1 for reduce-scatter (rank r ends owning block r).  Broadcast is a
 * plain relay of the whole buffer root -> root+1 -> ... */
static gboolean
ring_build (CollOp *op, PolCollKind kind, GError **error G_GNUC_UNUSED)
{
  int p = op->p;
  gsize lo, hi;

  for (int r = 0; r < p; r++)
    {
      int next = mod (r + 1, p), prev = mod (r - 1, p);

      if (kind == POL_COLL_BROADCAST)
        {
          int v = mod (r - op->root, p);

          if (v > 0)
            prog_recv (op, r, prev, 0, op->n, RECV_COPY);
          if (v < p - 1)
            prog_send (op, r, next, 0, op->n, 0);
          continue;
        }
      if (kind == POL_COLL_ALLREDUCE || kind == POL_COLL_REDUCE_SCATTER)
        {
          int off = kind == POL_COLL_ALLREDUCE ? 0 : -1;

          for (int k = 0; k < p - 1; k++)
            {
              block_bounds (op->n, p, mod (r - k + off, p), &lo, &hi);
              prog_send (op, r, next, lo, hi, 0);
              block_bounds (op->n, p, mod (r - 1 - k + off, p), &lo, &hi);
              prog_recv (op, r, prev, lo, hi, RECV_REDUCE);
            }
        }
      if (kind == POL_COLL_ALLREDUCE || kind == POL_COLL_ALLGATHER)
        {
          /* Rank r starts owning block r + off. */
          int off = kind == POL_COLL_ALLREDUCE ? 1 : 0;

          for (int k = 0; k < p - 1; k++)
            {
              block_bounds (op->n, p, mod (r - k + off, p), &lo, &hi);
              prog_send (op, r, next, lo, hi, 0);
              block_bounds (op->n, p, mod (r - 1 - k + off, p), &lo, &hi);
              prog_recv (op, r, prev, lo, hi, RECV_COPY);
            }
        }
    }
  return TRUE;
}

/* Binomial tree [Thakur et al. 2005, MPICH]: v = (r - root) mod p.  Reduce:
 * for mask = 1, 2, 4, ...: if v & mask, send the partial sum to v - mask and
 * stop; else receive from v + mask (if < p) and add.  Broadcast: receive from
 * v - lowbit(v), then send to v + mask for mask = lowbit(v)/2 ... 1 (root:
 * 2^(L-1) ... 1).  One-port: sends wait for arrival, reduce sends are
 * rendezvous, so every round costs exactly alpha + n beta (+ reduction). */
static gboolean
tree_build (CollOp *op, PolCollKind kind, GError **error)
{
  int p = op->p;

  if (kind != POL_COLL_ALLREDUCE && kind != POL_COLL_BROADCAST)
    return unsupported ("tree", kind, error);
  for (int r = 0; r < p; r++)
    {
      int v = mod (r - op->root, p);
      int top;   /* first mask of the broadcast's sends, then halving */

#define REAL(u) mod ((u) + op->root, p)
      if (kind == POL_COLL_ALLREDUCE)
        for (int mask = 1; mask < p; mask <<= 1)
          {
            if (v & mask)
              {
                prog_send (op, r, REAL (v - mask), 0, op->n,
                           SEND_WAIT | SEND_RDV);
                break;
              }
            if (v + mask < p)
              prog_recv (op, r, REAL (v + mask), 0, op->n, RECV_REDUCE);
          }
      if (v == 0)
        top = p > 1 ? 1 << (ceil_log2 (p) - 1) : 0;
      else
        {
          int low = v & -v;

          prog_recv (op, r, REAL (v - low), 0, op->n, RECV_COPY);
          top = low >> 1;
        }
      for (int mask = top; mask >= 1; mask >>= 1)
        if (v + mask < p)
          prog_send (op, r, REAL (v + mask), 0, op->n, SEND_WAIT);
#undef REAL
    }
  return TRUE;
}

/* Naive: every rank sends its buffer to the root, which sums the p buffers
 * in rank order into an accumulator and sends the sum to everyone. */
static gboolean
naive_build (CollOp *op, PolCollKind kind, GError **error)
{
  int p = op->p, root = op->root;

  if (kind != POL_COLL_ALLREDUCE && kind != POL_COLL_BROADCAST)
    return unsupported ("naive", kind, error);
  if (kind == POL_COLL_ALLREDUCE)
    {
      if (op->bufs != NULL)
        op->acc = g_new0 (float, MAX (op->n, 1));
      for (int j = 0; j < p; j++)
        if (j == root)
          prog_local (op, root, STEP_ACC_OWN);
        else
          {
            prog_send (op, j, root, 0, op->n, 0);
            prog_recv (op, root, j, 0, op->n, RECV_ACC);
          }
      prog_local (op, root, STEP_ACC_STORE);
    }
  for (int j = 0; j < p; j++)
    if (j != root)
      {
        prog_send (op, root, j, 0, op->n, 0);
        prog_recv (op, j, root, 0, op->n, RECV_COPY);
      }
  return TRUE;
}

/* Halving-doubling geometry shared by the builder and pol_coll_cost():
 * p' = largest power of two <= p, r = p - p'.  Old ranks 0..2r-1 pair up
 * (even 2i is removed, odd 2i+1 becomes new rank i); old rank o >= 2r is new
 * rank o - r.  Group j of new rank j is a contiguous element range: for
 * all-reduce the blocks of n split in p'; for reduce-scatter and all-gather
 * the p blocks of n of the old ranks it stands for (2j and 2j+1 for j < r,
 * j + r otherwise).  bound[j] is group j's first element, bound[p'] = n. */
typedef struct {
  int pp, r;
  gsize *bound;       /* (pp + 1) */
} HdGeom;

static void
hd_geom_init (HdGeom *g, int p, gsize n, PolCollKind kind)
{
  g->pp = floor_pow2 (p);
  g->r = p - g->pp;
  g->bound = g_new (gsize, g->pp + 1);
  for (int j = 0; j < g->pp; j++)
    {
      gsize lo, hi;

      if (kind == POL_COLL_ALLREDUCE)
        pol_shard_bounds (n, g->pp, j, &lo, &hi);
      else
        pol_shard_bounds (n, p, j < g->r ? 2 * j : j + g->r, &lo, &hi);
      g->bound[j] = lo;
    }
  g->bound[g->pp] = n;
}

static int
hd_old (const HdGeom *g, int j)
{
  return j < g->r ? 2 * j + 1 : j + g->r;
}

/* Rabenseifner's algorithm [Rabenseifner 2004; Thakur et al. 2005] with the
 * non-power-of-two pre/post steps of Thakur et al. 2005.  Halving:
 * for d = p'/2, ..., 1 new rank j exchanges with j^d: it keeps the half of
 * its current group range that contains j, sends the other half, adds the
 * received half.  Doubling: for d = 1, ..., p'/2 it sends its current range
 * and copies its partner's adjacent one. */
static gboolean
hd_build (CollOp *op, PolCollKind kind, GError **error)
{
  int p = op->p;
  HdGeom g;
  gboolean halve = kind != POL_COLL_ALLGATHER;
  gboolean dbl = kind != POL_COLL_REDUCE_SCATTER;

  if (kind == POL_COLL_BROADCAST)
    return unsupported ("halving-doubling", kind, error);
  hd_geom_init (&g, p, op->n, kind);
  for (int o = 0; o < p; o++)
    {
      gsize blo, bhi;   /* block of the removed partner, for RS and AG */
      int j, lo, hi;

      if (o < 2 * g.r && o % 2 == 0)
        {
          /* Removed rank: hand over, then get the result back. */
          block_bounds (op->n, p, o, &blo, &bhi);
          if (kind == POL_COLL_ALLGATHER)
            prog_send (op, o, o + 1, blo, bhi, 0);
          else
            prog_send (op, o, o + 1, 0, op->n, 0);
          if (kind == POL_COLL_REDUCE_SCATTER)
            prog_recv (op, o, o + 1, blo, bhi, RECV_COPY);
          else
            prog_recv (op, o, o + 1, 0, op->n, RECV_COPY);
          continue;
        }
      j = o < 2 * g.r ? o / 2 : o - g.r;
      if (o < 2 * g.r)
        {
          block_bounds (op->n, p, o - 1, &blo, &bhi);
          if (kind == POL_COLL_ALLGATHER)
            prog_recv (op, o, o - 1, blo, bhi, RECV_COPY);
          else
            prog_recv (op, o, o - 1, 0, op->n, RECV_REDUCE);
        }
      lo = 0;
      hi = g.pp;   /* current range of groups [lo, hi) */
      if (halve)
        for (int d = g.pp / 2; d >= 1; d /= 2)
          {
            int peer = hd_old (&g, j ^ d), mid = lo + d;

            if (j & d)
              {
                prog_send (op, o, peer, g.bound[lo], g.bound[mid], 0);
                prog_recv (op, o, peer, g.bound[mid], g.bound[hi],
                           RECV_REDUCE);
                lo = mid;
              }
            else
              {
                prog_send (op, o, peer, g.bound[mid], g.bound[hi], 0);
                prog_recv (op, o, peer, g.bound[lo], g.bound[mid],
                           RECV_REDUCE);
                hi = mid;
              }
          }
      else
        {
          lo = j;
          hi = j + 1;
        }
      g_assert (hi == lo + 1 && lo == j);
      if (dbl)
        for (int d = 1; d < g.pp; d *= 2)
          {
            int peer = hd_old (&g, j ^ d);

            prog_send (op, o, peer, g.bound[lo], g.bound[hi], 0);
            if (j & d)
              {
                prog_recv (op, o, peer, g.bound[lo - d], g.bound[lo],
                           RECV_COPY);
                lo -= d;
              }
            else
              {
                prog_recv (op, o, peer, g.bound[hi], g.bound[hi + d],
                           RECV_COPY);
                hi += d;
              }
          }
      if (o < 2 * g.r)
        {
          if (kind == POL_COLL_REDUCE_SCATTER)
            prog_send (op, o, o - 1, blo, bhi, 0);
          else
            prog_send (op, o, o - 1, 0, op->n, 0);
        }
    }
  g_free (g.bound);
  return TRUE;
}

/* --- Registry ---------------------------------------------------------------- */

typedef gboolean (*CollBuild) (CollOp *op, PolCollKind kind, GError **error);

static gboolean
coll_start (const PolCollArgs *a, PolCollKind kind, PolCollDone done,
            gpointer ctx, gpointer data, GError **error, CollBuild build)
{
  CollOp *op;

  g_return_val_if_fail (a != NULL && a->sim != NULL && a->net != NULL, FALSE);
  g_return_val_if_fail (a->p >= 1 && a->hosts != NULL, FALSE);
  g_return_val_if_fail (a->root >= 0 && a->root < a->p, FALSE);
  g_return_val_if_fail (a->elem_bytes >= 0 && a->reduce_per_byte >= 0, FALSE);
  g_return_val_if_fail (done != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  op = g_new0 (CollOp, 1);
  op->sim = a->sim;
  op->net = a->net;
  op->p = a->p;
  op->hosts = g_memdup2 (a->hosts, sizeof (int) * (gsize) a->p);
  op->bufs = a->bufs ? g_memdup2 (a->bufs, sizeof (float *) * (gsize) a->p)
                     : NULL;
  op->n = a->n;
  op->elem_bytes = a->elem_bytes;
  op->reduce_per_byte = a->reduce_per_byte;
  op->root = a->root;
  op->tag = a->tag;
  op->done = done;
  op->ctx = ctx;
  op->data = data;
  op->ranks = g_new0 (CollRank, a->p);
  for (int r = 0; r < a->p; r++)
    {
      op->ranks[r].prog = g_array_new (FALSE, FALSE, sizeof (CollStep));
      op->ranks[r].counts = g_hash_table_new (g_direct_hash, g_direct_equal);
      op->ranks[r].arrived = g_hash_table_new (g_int64_hash, g_int64_equal);
    }
  if (!build (op, kind, error))
    {
      coll_op_free (op);
      return FALSE;
    }
  for (int r = 0; r < a->p; r++)
    {
      g_hash_table_unref (op->ranks[r].counts);
      op->ranks[r].counts = NULL;
    }
  op->outstanding = 1;
  eng_schedule (op->sim, 0, on_start, op, NULL);
  return TRUE;
}

static gboolean
ring_start (const PolCollArgs *a, PolCollKind kind, PolCollDone done,
            gpointer ctx, gpointer data, GError **error)
{
  return coll_start (a, kind, done, ctx, data, error, ring_build);
}

static gboolean
tree_start (const PolCollArgs *a, PolCollKind kind, PolCollDone done,
            gpointer ctx, gpointer data, GError **error)
{
  return coll_start (a, kind, done, ctx, data, error, tree_build);
}

static gboolean
hd_start (const PolCollArgs *a, PolCollKind kind, PolCollDone done,
          gpointer ctx, gpointer data, GError **error)
{
  return coll_start (a, kind, done, ctx, data, error, hd_build);
}

static gboolean
naive_start (const PolCollArgs *a, PolCollKind kind, PolCollDone done,
             gpointer ctx, gpointer data, GError **error)
{
  return coll_start (a, kind, done, ctx, data, error, naive_build);
}

static const PolCollAlgorithm coll_ring = {
  "ring",
  "reduce-scatter then all-gather around a ring, p-1 steps each",
  "Patarasuk & Yuan 2009, J. Parallel Distrib. Comput. 69(2); "
  "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  ring_start,
};

static const PolCollAlgorithm coll_tree = {
  "tree",
  "binomial-tree reduce to the root, then binomial broadcast",
  "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  tree_start,
};

static const PolCollAlgorithm coll_hd = {
  "halving-doubling",
  "recursive-halving reduce-scatter then recursive-doubling all-gather "
  "(Rabenseifner)",
  "Rabenseifner 2004, ICCS LNCS 3036; "
  "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1)",
  hd_start,
};

static const PolCollAlgorithm coll_naive = {
  "naive",
  "every rank sends its buffer to the root, which sums and sends back",
  "direct gather and scatter, alpha-beta model (Hockney 1994)",
  naive_start,
};

static const PolCollAlgorithm *const coll_algorithms[] = {
  &coll_ring, &coll_tree, &coll_hd, &coll_naive, NULL,
};

const PolCollAlgorithm *
pol_coll_lookup (const char *name)
{
  g_return_val_if_fail (name != NULL, NULL);
  for (int i = 0; coll_algorithms[i]; i++)
    if (strcmp (coll_algorithms[i]->name, name) == 0)
      return coll_algorithms[i];
  return NULL;
}

const PolCollAlgorithm *const *
pol_coll_all (void)
{
  return coll_algorithms;
}

/* --- Cost formulas ---------------------------------------------------------- */

/* Halving-doubling with contention = none: the longest path of the
 * dependency rule, step by step.  T[j] is when new rank j has finished its
 * current step; at a step with partner q = j ^ d, receiving s bytes:
 *   T'[j] = max(T[j], T[q] + alpha + s beta) + s gamma
 * (gamma = reduce_per_byte in halving and in the pre-step of all-reduce and
 * reduce-scatter, 0 when copying).  With equal segments this is the closed
 * form of docs/collectives.md. */
static double
hd_cost (PolCollKind kind, int p, gsize n, double eb, double alpha,
         double beta, double gamma)
{
  HdGeom g;
  double *T, *U, end = 0;
  gsize *lo, *hi;

  hd_geom_init (&g, p, n, kind);
  T = g_new0 (double, g.pp);
  U = g_new0 (double, g.pp);
  lo = g_new (gsize, g.pp);
  hi = g_new (gsize, g.pp);
  for (int j = 0; j < g.pp; j++)
    {
      gsize blo, bhi;

      block_bounds (n, p, 2 * j, &blo, &bhi);
      if (j >= g.r)
        T[j] = 0;
      else if (kind == POL_COLL_ALLGATHER)
        T[j] = alpha + (double) (bhi - blo) * eb * beta;
      else
        T[j] = alpha + (double) n * eb * (beta + gamma);
      lo[j] = 0;
      hi[j] = g.pp;
    }
  if (kind != POL_COLL_ALLGATHER)
    for (int d = g.pp / 2; d >= 1; d /= 2)
      {
        for (int j = 0; j < g.pp; j++)
          {
            int mid = (int) lo[j] + d;
            double s;

            if (j & d)
              lo[j] = mid;
            else
              hi[j] = mid;
            s = (double) (g.bound[hi[j]] - g.bound[lo[j]]) * eb;
            U[j] = MAX (T[j], T[j ^ d] + alpha + s * beta) + s * gamma;
          }
        memcpy (T, U, sizeof (double) * g.pp);
      }
  for (int j = 0; j < g.pp; j++)
    {
      lo[j] = j;
      hi[j] = j + 1;
    }
  if (kind != POL_COLL_REDUCE_SCATTER)
    for (int d = 1; d < g.pp; d *= 2)
      {
        for (int j = 0; j < g.pp; j++)
          {
            double s;

            if (j & d)
              {
                s = (double) (g.bound[lo[j]] - g.bound[lo[j] - d]) * eb;
                lo[j] -= d;
              }
            else
              {
                s = (double) (g.bound[hi[j] + d] - g.bound[hi[j]]) * eb;
                hi[j] += d;
              }
            U[j] = MAX (T[j], T[j ^ d] + alpha + s * beta);
          }
        memcpy (T, U, sizeof (double) * g.pp);
      }
  for (int j = 0; j < g.pp; j++)
    {
      double back = 0;

      if (j < g.r)
        {
          gsize blo, bhi;

          block_bounds (n, p, 2 * j, &blo, &bhi);
          back = alpha + (kind == POL_COLL_REDUCE_SCATTER
                          ? (double) (bhi - blo) : (double) n) * eb * beta;
        }
      end = MAX (end, T[j] + back);
    }
  g_free (T);
  g_free (U);
  g_free (lo);
  g_free (hi);
  g_free (g.bound);
  return end;
}

double
pol_coll_cost (const PolCollAlgorithm *alg, PolCollKind kind, int p,
               gsize n, double elem_bytes, double alpha, double beta,
               double reduce_per_byte)
{
  double N = (double) n * elem_bytes;    /* bytes of the whole buffer */
  double gamma = reduce_per_byte;        /* s per byte reduced */
  double M;                              /* bytes of the largest block */
  double L;                              /* ceil(log2 p) */

  g_return_val_if_fail (alg != NULL && p >= 1, NAN);
  M = (double) ((n + (gsize) p - 1) / (gsize) p) * elem_bytes;
  L = ceil_log2 (p);

  if (alg == &coll_ring)
    switch (kind)
      {
      /* Patarasuk & Yuan 2009, Thakur et al. 2005:
       * 2(p-1) alpha + 2 ((p-1)/p) n beta, with n/p replaced by the largest
       * block M = ceil(n/p) elements (exact: block 0's path through all
       * 2(p-1) steps is the longest); each of the p-1 reduce-scatter steps
       * reduces one block: + (p-1) M gamma. */
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
  if (alg == &coll_tree)
    switch (kind)
      {
      /* Thakur et al. 2005: binomial broadcast ceil(lg p)(alpha +
       * n beta); reduce the same plus ceil(lg p) n gamma. */
      case POL_COLL_ALLREDUCE:
        return 2 * L * (alpha + N * beta) + L * N * gamma;
      case POL_COLL_BROADCAST:
        return L * (alpha + N * beta);
      default:
        return NAN;
      }
  if (alg == &coll_naive)
    switch (kind)
      {
      /* p-1 concurrent sends to the root, p-1 reductions in a row, p-1
       * concurrent sends back: 2 (alpha + n beta) + (p-1) n gamma. */
      case POL_COLL_ALLREDUCE:
        return p == 1 ? 0 : 2 * (alpha + N * beta) + (p - 1) * N * gamma;
      case POL_COLL_BROADCAST:
        return p == 1 ? 0 : alpha + N * beta;
      default:
        return NAN;
      }
  if (alg == &coll_hd)
    {
      /* Rabenseifner 2004; Thakur et al. 2005: p a power of two,
       * equal blocks: 2 lg p alpha + 2 ((p-1)/p) n beta + ((p-1)/p) n gamma;
       * otherwise + (alpha + n beta + n gamma) before and (alpha + n beta)
       * after, lg p' and p' in place of lg p and p.  hd_cost evaluates the
       * recurrence, which equals that when segments are equal. */
      if (kind == POL_COLL_BROADCAST)
        return NAN;
      return hd_cost (kind, p, n, elem_bytes, alpha, beta, gamma);
    }
  return NAN;
}
