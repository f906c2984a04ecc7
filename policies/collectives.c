/*
 * collectives.c — the executor of the collective algorithms, and their
 * registry.  Each algorithm is a file of its own (policies/coll-*.c) that
 * writes one *program* per rank: an ordered list of steps (send a range of
 * elements to a rank, receive a range from a rank and add or copy it, and
 * for naive the root's accumulator steps), through coll-program.h.  This
 * interpreter runs every program as events, so the dependency rule is the
 * same for all algorithms (docs/collectives.md):
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
 * pol_coll_cost() dispatches to the algorithm's own cost formula.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/coll-program.h"

G_DEFINE_QUARK (pol-coll-error-quark, pol_coll_error)

/* --- Programs -------------------------------------------------------------- */

typedef enum {
  STEP_SEND,      /* hand [lo, hi) to `peer` */
  STEP_RECV,      /* take [lo, hi) from `peer`, combine per `mode` */
  STEP_ACC_OWN,   /* naive root: acc += own buffer (free) */
  STEP_ACC_STORE  /* naive root: own buffer = acc */
} CollStepType;

typedef struct {
  guint8 type;        /* CollStepType */
  guint8 mode;        /* PolCollRecvMode, for STEP_RECV */
  guint8 flags;       /* POL_COLL_SEND_*, for STEP_SEND */
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
  PolCollOp pub;      /* p, n, root: what the builder reads; first member */
  EngSim *sim;
  NetNetwork *net;
  int *hosts;         /* (p) host ids */
  float **bufs;       /* (p) borrowed buffers, or NULL (timing only) */
  double elem_bytes;  /* bytes per element on the wire */
  double reduce_per_byte; /* s per byte reduced */
  int tag;
  CollRank *ranks;    /* (p) */
  float *acc;         /* (n) naive root's accumulator, or NULL */
  int n_finished;     /* ranks whose program has ended */
  int outstanding;    /* events and transfers whose callback is pending */
  PolCollDone done;
  gpointer ctx, data;
};

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

/* The executor's state of a builder's PolCollOp (its first member). */
static CollOp *
coll_op (PolCollOp *pub)
{
  G_STATIC_ASSERT (G_STRUCT_OFFSET (CollOp, pub) == 0);
  return (CollOp *) pub;
}

void
pol_coll_prog_send (PolCollOp *pub, int r, int dst, gsize lo, gsize hi,
                    guint flags)
{
  CollOp *op = coll_op (pub);
  CollRank *rk = &op->ranks[r];
  CollStep s = { STEP_SEND, 0, (guint8) flags, dst, 0, lo, hi };

  g_assert (dst != r && lo <= hi && hi <= op->pub.n);
  s.seq = next_seq (rk, dst + 1);
  g_array_append_val (rk->prog, s);
}

void
pol_coll_prog_recv (PolCollOp *pub, int r, int src, gsize lo, gsize hi,
                    PolCollRecvMode mode)
{
  CollOp *op = coll_op (pub);
  CollRank *rk = &op->ranks[r];
  CollStep s = { STEP_RECV, (guint8) mode, 0, src, 0, lo, hi };

  g_assert (src != r && lo <= hi && hi <= op->pub.n);
  s.seq = next_seq (rk, -(src + 1));
  g_array_append_val (rk->prog, s);
}

void
pol_coll_prog_local (PolCollOp *pub, int r, PolCollLocal step)
{
  CollOp *op = coll_op (pub);
  CollStep s = { step == POL_COLL_ACC_OWN ? STEP_ACC_OWN : STEP_ACC_STORE,
                 0, 0, r, 0, 0, op->pub.n };

  if (op->bufs != NULL && op->acc == NULL)
    op->acc = g_new0 (float, MAX (op->pub.n, 1));
  g_array_append_val (op->ranks[r].prog, s);
}

gboolean
pol_coll_unsupported (const char *alg, PolCollKind kind, GError **error)
{
  static const char *const names[] = { "all-reduce", "reduce-scatter",
                                       "all-gather", "broadcast" };

  g_set_error (error, POL_COLL_ERROR, POL_COLL_ERROR_UNSUPPORTED,
               "collective algorithm \"%s\": %s is not supported", alg,
               names[kind]);
  return FALSE;
}

/* --- Interpreter ----------------------------------------------------------- */

static void coll_advance (CollOp *op, int r);

static void
coll_op_free (CollOp *op)
{
  for (int r = 0; r < op->pub.p; r++)
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

  if (op->n_finished < op->pub.p || op->outstanding > 0)
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
msg_apply (CollOp *op, CollMsg *m, PolCollRecvMode mode)
{
  float *dst;
  gsize len = m->hi - m->lo;

  if (op->bufs == NULL || len == 0)
    return;
  g_assert (m->payload != NULL);
  dst = (mode == POL_COLL_RECV_ACC ? op->acc : op->bufs[m->dst]) + m->lo;
  if (mode == POL_COLL_RECV_COPY)
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
  msg_apply (op, m, (PolCollRecvMode) s->mode);
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
  for (int r = 0; r < op->pub.p; r++)
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
  m->wait = (s->flags & POL_COLL_SEND_WAIT) != 0;
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
          if ((s->flags & POL_COLL_SEND_RDV) && !recv_posted (op, r, s))
            break;  /* the receiver wakes us when it gets there */
          issue_send (op, r, s);
          if (s->flags & POL_COLL_SEND_WAIT)
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
          secs = s->mode == POL_COLL_RECV_COPY ? 0
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
              msg_apply (op, m, (PolCollRecvMode) s->mode);
              msg_free (m);
              rk->pc++;
            }
        }
      else if (s->type == STEP_ACC_OWN)
        {
          if (op->bufs != NULL)
            for (gsize i = 0; i < op->pub.n; i++)
              op->acc[i] += op->bufs[r][i];
          rk->pc++;
        }
      else
        {
          if (op->bufs != NULL)
            memcpy (op->bufs[r], op->acc, op->pub.n * sizeof (float));
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

/* --- Start ---------------------------------------------------------------- */

gboolean
pol_coll_start (const PolCollAlgorithm *alg, const PolCollArgs *a,
                PolCollKind kind, PolCollDone done, gpointer ctx,
                gpointer data, GError **error)
{
  CollOp *op;

  g_return_val_if_fail (alg != NULL, FALSE);
  g_return_val_if_fail (a != NULL && a->sim != NULL && a->net != NULL, FALSE);
  g_return_val_if_fail (a->p >= 1 && a->hosts != NULL, FALSE);
  g_return_val_if_fail (a->root >= 0 && a->root < a->p, FALSE);
  g_return_val_if_fail (a->elem_bytes >= 0 && a->reduce_per_byte >= 0, FALSE);
  g_return_val_if_fail (done != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  op = g_new0 (CollOp, 1);
  op->sim = a->sim;
  op->net = a->net;
  op->pub.p = a->p;
  op->hosts = g_memdup2 (a->hosts, sizeof (int) * (gsize) a->p);
  op->bufs = a->bufs ? g_memdup2 (a->bufs, sizeof (float *) * (gsize) a->p)
                     : NULL;
  op->pub.n = a->n;
  op->elem_bytes = a->elem_bytes;
  op->reduce_per_byte = a->reduce_per_byte;
  op->pub.root = a->root;
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
  if (!alg->build (&op->pub, kind, error))
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

/* --- Registry ------------------------------------------------------------- */

/* One line per algorithm; each is defined in its own file, policies/coll-*.c. */
extern const PolCollAlgorithm pol_coll_ring;
extern const PolCollAlgorithm pol_coll_tree;
extern const PolCollAlgorithm pol_coll_hd;
extern const PolCollAlgorithm pol_coll_naive;

static const PolCollAlgorithm *const coll_algorithms[] = {
  &pol_coll_ring, &pol_coll_tree, &pol_coll_hd, &pol_coll_naive, NULL,
};

const void *const *
pol_coll_entries (void)
{
  return (const void *const *) coll_algorithms;
}

const PolCollAlgorithm *
pol_coll_lookup (const char *name)
{
  return base_registry_find ((const void *const *) coll_algorithms, name);
}

const PolCollAlgorithm *const *
pol_coll_all (void)
{
  return coll_algorithms;
}

double
pol_coll_cost (const PolCollAlgorithm *alg, PolCollKind kind, int p,
               gsize n, double elem_bytes, double alpha, double beta,
               double reduce_per_byte)
{
  g_return_val_if_fail (alg != NULL && p >= 1, NAN);
  return alg->cost (kind, p, n, elem_bytes, alpha, beta, reduce_per_byte);
}
