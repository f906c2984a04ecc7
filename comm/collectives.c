/*
 * collectives.c — the executor of the collective algorithms, and their
 * registry.  Each algorithm is a file of its own (comm/NAME.c) that
 * gives one *program* per rank: an ordered list of steps (send a range of
 * elements to a rank, receive a range from a rank and add or copy it, and
 * for naive the root's accumulator steps), generated step by step from a
 * formula or stored whole by a builder (comm/program.h).  This interpreter
 * runs every program as events, so the dependency rule is the same for all
 * algorithms (docs/collectives.md):
 *
 *   - a rank executes its steps in order;
 *   - a send is handed to the network when the rank reaches it, carrying a
 *     snapshot of its elements taken then; an eager send completes at once,
 *     a "wait" send only when its last byte has arrived (one-port sender),
 *     a "streaming" send once its bytes are on the wire (one-port sender
 *     whose messages follow each other on the link) and, like NCCL's
 *     slots, not before the receiver has taken all but COMM_SLOTS - 1 of
 *     the sender's earlier messages to it, and a "rendezvous" send does
 *     not start before the receiver has reached the matching receive
 *     (one-port receiver; the handshake is free);
 *   - a receive completes when its message has arrived (messages between two
 *     ranks are matched in program order, whatever order they arrive in) and,
 *     for a reducing receive, after reduce_per_byte x bytes more, during which
 *     the rank does nothing else (its reductions are serialized); the data are
 *     added or copied into the buffer when the receive completes.
 *
 * The work per transfer does not grow with p: a rank holds only its current
 * step and, for each peer it has talked to, a channel with the two message
 * counters and the messages that arrived before their receive, by sequence
 * number.  An event runs exactly the ranks it lets go on: the receiver of a
 * message, the sender of a "wait" send, and a rendezvous sender whose
 * receiver has just reached the receive (at the start, also a rank not yet
 * run that a receiver waits for, which keeps the order in which the first
 * sends are handed to the network).
 *
 * comm_cost() dispatches to the algorithm's own cost formula.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/program.h"
#include "comm/shard.h"

G_DEFINE_QUARK (pol-coll-error-quark, comm_error)

/* Longest route a folded channel sends on (links). */
#define COLL_FOLD_HOPS 32

/* --- State ----------------------------------------------------------------- */

/* A message between two ranks, from net_send to its receive step. */
typedef struct CollMsg CollMsg;
struct CollMsg {
  CollMsg *next;      /* next free message while in CollOp's free list */
  int src, dst;       /* ranks */
  guint32 seq;        /* index among the messages src -> dst */
  gboolean wait;      /* the sender waits for its arrival */
  gsize lo, hi;       /* element range */
  float *payload;     /* (hi - lo) floats snapshot, or NULL (timing only) */
};

/* What a rank knows of one peer it has sent to or received from. */
typedef struct {
  int peer;
  guint32 sent;       /* messages handed to the network for peer */
  guint32 taken;      /* messages from peer taken by receive steps: the next
                         receive from peer takes message number `taken` */
  CollMsg **early;    /* (n_early, a power of two, or 0) the messages
                         arrived and not taken, in a circle: message s
                         (taken <= s < taken + n_early) is at
                         [s % n_early], NULL while it has not arrived */
  guint32 n_early;
} CollChan;

typedef struct {
  CommStep cur;    /* step pc of the program (unless finished) */
  guint pc;           /* index of the current step */
  gboolean started;   /* has run at least once */
  gboolean busy;      /* the current step is under way (reduction, wait) */
  gboolean finished;
  CollChan *chans;    /* (n_chans) sorted by peer */
  int n_chans, cap_chans;
  GArray *prog;       /* CommStep: the stored program, or NULL when the
                         algorithm generates its steps */
} CollRank;

/* One running collective; owns everything it allocates. */
typedef struct {
  CommOp pub;      /* p, n, root, kind, group, state: what the algorithm
                         reads; first member */
  const CommAlgorithm *alg;
  EngSim *sim;
  NetNetwork *net;
  int *hosts;         /* (p) host ids */
  int *groups;        /* (p) their host groups, what pub.group points to */
  float **bufs;       /* (p) borrowed buffers, or NULL (timing only) */
  double elem_bytes;  /* bytes per element on the wire */
  double reduce_per_byte; /* s per byte reduced */
  double step_overhead, intra_step_overhead; /* CommArgs' */
  double cross_latency; /* s, CommArgs': added between host groups */
  double rate_cap;    /* bytes/s on the wire, CommArgs': the most a message
                         moves at, 0 = no ceiling */
  int tag;
  CollRank *ranks;    /* (p) */
  float *acc;         /* (n) naive root's accumulator, or NULL */
  int n_finished;     /* ranks whose program has ended */
  int outstanding;    /* events and transfers whose callback is pending */
  guint64 transfers;  /* work counters (CommStats) */
  guint64 examined;
  CollMsg *free_msgs; /* messages received, kept for reuse */
  GArray *woken;      /* int: streaming senders that a receive let go on,
                         to run next (NULL until one is) */
  int *fold_rep;      /* (net_network_n_links) each link's representative
                         on the folded network, -1 for a link no folded
                         transfer crosses; NULL when not folded (see
                         "Folded channels") */
  CommDone done;
  gpointer ctx, data;
} CollOp;

G_LOCK_DEFINE_STATIC (coll_stats);
static CommStats coll_stats;  /* guarded by coll_stats */

/* The executor's state of an algorithm's CommOp (its first member). */
static CollOp *
coll_op (CommOp *pub)
{
  G_STATIC_ASSERT (G_STRUCT_OFFSET (CollOp, pub) == 0);
  return (CollOp *) pub;
}

/* --- Steps and stored programs --------------------------------------------- */

gboolean
comm_step_send (CommStep *out, int dst, gsize lo, gsize hi,
                    guint flags)
{
  *out = (CommStep) { COMM_STEP_SEND, 0, (guint8) flags, dst, lo, hi };
  return TRUE;
}

gboolean
comm_step_recv (CommStep *out, int src, gsize lo, gsize hi,
                    CommRecvMode mode)
{
  *out = (CommStep) { COMM_STEP_RECV, (guint8) mode, 0, src, lo, hi };
  return TRUE;
}

gboolean
comm_step_local (CommStep *out, CommLocal step)
{
  *out = (CommStep) { COMM_STEP_LOCAL, (guint8) step, 0, -1, 0, 0 };
  return TRUE;
}

/* Appends `s` to rank r's stored program. */
static void
prog_append (CommOp *pub, int r, const CommStep *s)
{
  CollOp *op = coll_op (pub);

  g_assert (op->alg->step == NULL && r >= 0 && r < pub->p);
  g_array_append_vals (op->ranks[r].prog, s, 1);
}

void
comm_prog_send (CommOp *pub, int r, int dst, gsize lo, gsize hi,
                    guint flags)
{
  CommStep s;

  comm_step_send (&s, dst, lo, hi, flags);
  prog_append (pub, r, &s);
}

void
comm_prog_recv (CommOp *pub, int r, int src, gsize lo, gsize hi,
                    CommRecvMode mode)
{
  CommStep s;

  comm_step_recv (&s, src, lo, hi, mode);
  prog_append (pub, r, &s);
}

void
comm_prog_local (CommOp *pub, int r, CommLocal step)
{
  CommStep s;

  comm_step_local (&s, step);
  prog_append (pub, r, &s);
}

const char *
comm_kind_name (CommKind kind)
{
  static const char *const names[COMM_N_KINDS] = {
    "all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce",
    "scatter", "gather", "all-to-all" };

  g_return_val_if_fail ((guint) kind < COMM_N_KINDS, "?");
  return names[kind];
}

gboolean
comm_unsupported (const char *alg, CommKind kind, GError **error)
{
  g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
               "collective algorithm \"%s\": %s is not supported", alg,
               comm_kind_name (kind));
  return FALSE;
}

/* Loads step rk->pc of rank r's program into rk->cur, from the generator or
 * the stored program; marks the rank finished when there is no such step. */
static void
rank_load (CollOp *op, int r)
{
  CollRank *rk = &op->ranks[r];
  const CommStep *s = &rk->cur;
  gboolean more;

  if (rk->prog == NULL)
    more = op->alg->step (&op->pub, r, rk->pc, &rk->cur);
  else if ((more = rk->pc < rk->prog->len))
    rk->cur = g_array_index (rk->prog, CommStep, rk->pc);
  if (!more)
    {
      rk->finished = TRUE;
      op->n_finished++;
      return;
    }
  g_assert (s->type == COMM_STEP_LOCAL
            || (s->peer != r && s->peer >= 0 && s->peer < op->pub.p
                && s->lo <= s->hi && s->hi <= op->pub.n));
}

/* Rank r has completed its current step: loads the next. */
static void
rank_next (CollOp *op, int r)
{
  op->ranks[r].pc++;
  rank_load (op, r);
}

/* --- Channels -------------------------------------------------------------- */

/* Where peer's channel is, or would be inserted, in rk->chans. */
static int
chan_index (const CollRank *rk, int peer)
{
  int lo = 0, hi = rk->n_chans;

  while (lo < hi)
    {
      int mid = lo + (hi - lo) / 2;

      if (rk->chans[mid].peer < peer)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* Rank rk's channel with `peer`, or NULL when they have not talked yet. */
static CollChan *
chan_find (CollRank *rk, int peer)
{
  int i = chan_index (rk, peer);

  return i < rk->n_chans && rk->chans[i].peer == peer ? &rk->chans[i] : NULL;
}

/* Rank rk's channel with `peer`, created when missing.  The pointer is valid
 * until the next channel of rk is created. */
static CollChan *
chan_get (CollRank *rk, int peer)
{
  int i = chan_index (rk, peer);

  if (i < rk->n_chans && rk->chans[i].peer == peer)
    return &rk->chans[i];
  if (rk->n_chans == rk->cap_chans)
    {
      rk->cap_chans = MAX (2, 2 * rk->cap_chans);
      rk->chans = g_renew (CollChan, rk->chans, rk->cap_chans);
    }
  memmove (&rk->chans[i + 1], &rk->chans[i],
           sizeof (CollChan) * (gsize) (rk->n_chans - i));
  rk->n_chans++;
  rk->chans[i] = (CollChan) { .peer = peer };
  return &rk->chans[i];
}

/* Makes room in ch's circle for messages up to number `seq`: doubles it
 * until it reaches, keeping each waiting message at its place. */
static void
chan_grow (CollChan *ch, guint32 seq)
{
  guint32 n = MAX (ch->n_early, 4);
  CollMsg **fresh;

  while (seq - ch->taken >= n)
    n *= 2;
  fresh = g_new0 (CollMsg *, n);
  for (guint32 s = ch->taken; s - ch->taken < ch->n_early; s++)
    fresh[s % n] = ch->early[s % ch->n_early];
  g_free (ch->early);
  ch->early = fresh;
  ch->n_early = n;
}

/* Files an arrived message in its receiver's channel, by sequence number. */
static void
chan_put (CollOp *op, CollMsg *m)
{
  CollChan *ch = chan_get (&op->ranks[m->dst], m->src);

  g_assert (m->seq >= ch->taken);
  if (m->seq - ch->taken >= ch->n_early)
    chan_grow (ch, m->seq);
  g_assert (ch->early[m->seq % ch->n_early] == NULL);
  ch->early[m->seq % ch->n_early] = m;
}

/* Takes the next message from `peer` to rank rk if it has arrived, or
 * returns NULL. */
static CollMsg *
chan_take (CollRank *rk, int peer)
{
  CollChan *ch = chan_find (rk, peer);
  CollMsg *m;

  if (ch == NULL || ch->n_early == 0
      || (m = ch->early[ch->taken % ch->n_early]) == NULL)
    return NULL;
  ch->early[ch->taken % ch->n_early] = NULL;
  ch->taken++;
  return m;
}

/* --- Interpreter ----------------------------------------------------------- */

static void coll_advance (CollOp *op, int r);

/* Adds the collective's work counters to the process's, then frees it. */
static void
coll_op_free (CollOp *op)
{
  guint64 stored = 0;

  for (int r = 0; r < op->pub.p; r++)
    {
      CollRank *rk = &op->ranks[r];

      if (rk->prog)
        {
          stored += rk->prog->len;
          g_array_unref (rk->prog);
        }
      for (int c = 0; c < rk->n_chans; c++)
        {
          for (guint32 i = 0; i < rk->chans[c].n_early; i++)
            g_assert (rk->chans[c].early[i] == NULL);
          g_free (rk->chans[c].early);
        }
      g_free (rk->chans);
    }
  while (op->free_msgs != NULL)
    {
      CollMsg *m = op->free_msgs;

      op->free_msgs = m->next;
      g_free (m);
    }
  G_LOCK (coll_stats);
  coll_stats.collectives++;
  coll_stats.transfers += op->transfers;
  coll_stats.examined += op->examined;
  coll_stats.stored_steps += stored;
  G_UNLOCK (coll_stats);
  if (op->pub.state_free)
    op->pub.state_free (op->pub.state);
  g_free (op->ranks);
  g_free (op->hosts);
  g_free (op->groups);
  g_free (op->bufs);
  g_free (op->acc);
  g_free (op->fold_rep);
  if (op->woken)
    g_array_unref (op->woken);
  g_free (op);
}

void
comm_stats (CommStats *out)
{
  g_return_if_fail (out != NULL);
  G_LOCK (coll_stats);
  *out = coll_stats;
  G_UNLOCK (coll_stats);
}

/* Calls `done` and frees the operation once every rank has finished and no
 * callback of it is pending.  Must be the last thing a handler does. */
static void
coll_maybe_finish (CollOp *op)
{
  CommDone done;
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

/* A zeroed message, from op's free list when it has one. */
static CollMsg *
msg_new (CollOp *op)
{
  CollMsg *m = op->free_msgs;

  if (m == NULL)
    return g_new0 (CollMsg, 1);
  op->free_msgs = m->next;
  memset (m, 0, sizeof *m);
  return m;
}

/* Frees a received message's payload and keeps the message for reuse. */
static void
msg_free (CollOp *op, CollMsg *m)
{
  g_free (m->payload);
  m->payload = NULL;
  m->next = op->free_msgs;
  op->free_msgs = m;
}

/* The root's accumulator (n floats, zeroed on first use). */
static float *
coll_acc (CollOp *op)
{
  if (op->acc == NULL)
    op->acc = g_new0 (float, MAX (op->pub.n, 1));
  return op->acc;
}

/* Combines a received message into the receiver's buffer (or accumulator)
 * at the range of its receive step `s`, as long as the range sent (the
 * same, except in all-to-all, where block y of the sender lands in block x
 * of the receiver). */
static void
msg_apply (CollOp *op, CollMsg *m, const CommStep *s)
{
  float *dst;
  gsize len = m->hi - m->lo;

  g_assert (s->hi - s->lo == len);
  if (op->bufs == NULL || len == 0)
    return;
  g_assert (m->payload != NULL);
  dst = (s->mode == COMM_RECV_ACC ? coll_acc (op) : op->bufs[m->dst])
        + s->lo;
  if (s->mode == COMM_RECV_COPY)
    memcpy (dst, m->payload, len * sizeof (float));
  else
    for (gsize i = 0; i < len; i++)
      dst[i] += m->payload[i];
}

/* The last byte of a message has arrived at its receiver: runs the
 * receiver, and the sender of a "wait" send. */
static void
on_arrival (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data,
            const NetTransfer *t G_GNUC_UNUSED)
{
  CollOp *op = ctx;
  CollMsg *m = data;
  int src = m->src, dst = m->dst;
  gboolean wait = m->wait;

  op->outstanding--;
  chan_put (op, m);
  if (wait)
    {
      CollRank *sk = &op->ranks[src];

      g_assert (sk->busy);
      sk->busy = FALSE;
      rank_next (op, src);
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

  op->outstanding--;
  g_assert (rk->busy && rk->cur.type == COMM_STEP_RECV);
  msg_apply (op, m, &rk->cur);
  msg_free (op, m);
  rk->busy = FALSE;
  rank_next (op, r);
  coll_advance (op, r);
  coll_maybe_finish (op);
}

/* A streaming send's bytes are on the wire: its sender goes on. */
static void
on_streamed (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  CollOp *op = ctx;
  int r = GPOINTER_TO_INT (data);
  CollRank *rk = &op->ranks[r];

  op->outstanding--;
  g_assert (rk->busy && rk->cur.type == COMM_STEP_SEND);
  rk->busy = FALSE;
  rank_next (op, r);
  coll_advance (op, r);
  coll_maybe_finish (op);
}

/* TRUE when rank r may hand another streaming message to rank q: fewer
 * than COMM_SLOTS of those it sent are not yet taken by q's receives. */
static gboolean
slot_free (CollOp *op, int r, int q)
{
  const CollChan *out = chan_find (&op->ranks[r], q);
  const CollChan *in = chan_find (&op->ranks[q], r);
  guint32 sent = out ? out->sent : 0, taken = in ? in->taken : 0;

  return sent - taken < COMM_SLOTS;
}

/* Rank r has just taken a message from rank q: when q waits at a streaming
 * send to r for a free slot and now has one, files q to run next. */
static void
slot_wake (CollOp *op, int r, int q)
{
  CollRank *rq = &op->ranks[q];

  if (!rq->started || rq->busy || rq->finished
      || rq->cur.type != COMM_STEP_SEND || rq->cur.peer != r
      || !(rq->cur.flags & COMM_SEND_STREAM) || !slot_free (op, q, r))
    return;
  if (op->woken == NULL)
    op->woken = g_array_new (FALSE, FALSE, sizeof (int));
  g_array_append_val (op->woken, q);
}

/* Runs every rank, in rank order, that has not run yet (an earlier one may
 * have run it: see rank_wake). */
static void
on_start (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollOp *op = ctx;

  op->outstanding--;
  for (int r = 0; r < op->pub.p; r++)
    if (!op->ranks[r].started)
      coll_advance (op, r);
  coll_maybe_finish (op);
}

/* TRUE when rank q is waiting at the receive that matches rank r's current
 * step, a send to q: its current receive is from r and takes the message
 * that r's send will be. */
static gboolean
recv_posted (CollOp *op, int r, int q)
{
  CollRank *rq = &op->ranks[q];
  const CollChan *in, *out;

  if (rq->busy || rq->finished || rq->cur.type != COMM_STEP_RECV
      || rq->cur.peer != r)
    return FALSE;
  in = chan_find (rq, r);
  out = chan_find (&op->ranks[r], q);
  return (in ? in->taken : 0) == (out ? out->sent : 0);
}

/* Rank r stops at a receive from q whose message has not arrived: returns
 * the rank that this lets go on, q when it is at a rendezvous send to r
 * (which this receive lets start) or has not run yet (at the start, where a
 * rank runs the ranks it waits for first, in a chain), or -1. */
static int
rank_wake (CollOp *op, int r, int q)
{
  CollRank *rq = &op->ranks[q];

  if (rq->busy || rq->finished)
    return -1;
  if (!rq->started)
    return q;
  if (rq->cur.type == COMM_STEP_SEND
      && (rq->cur.flags & COMM_SEND_RDV) && rq->cur.peer == r
      && recv_posted (op, q, r))
    return q;
  return -1;
}

/* The least latency of a message from rank r to q: the step overhead
 * between or inside host groups; between them, with a cross latency, the
 * larger of the step overhead and the route's latency plus that (the floor
 * is then the whole latency). */
static double
step_floor (const CollOp *op, int r, int q)
{
  if (op->groups[r] == op->groups[q])
    return op->intra_step_overhead;
  if (op->cross_latency > 0)
    return MAX (op->step_overhead,
                net_network_route_latency (op->net, op->hosts[r],
                                           op->hosts[q]))
           + op->cross_latency;
  return op->step_overhead;
}

/* What the ceiling rate_cap adds to the latency phase of a message of
 * `bytes` on the wire over a route of bandwidth `bw`: bytes / rate_cap -
 * bytes / bw where that is positive, else 0. */
static double
cap_wait (const CollOp *op, double bytes, double bw)
{
  double extra;

  if (!(op->rate_cap > 0) || !(bytes > 0))
    return 0;
  extra = bytes / op->rate_cap - bytes / bw;
  return extra > 0 ? extra : 0;
}

/* The latency phase a message of `bytes` (on the wire) from rank r to q is
 * sent with: step_floor, and, where the ceiling rate_cap is below its
 * route's bandwidth B, the larger of that and the route's latency plus
 * bytes / rate_cap - bytes / B, so that alone on its route it takes
 * bytes / rate_cap once its latency is spent (docs/collectives.md,
 * "Bandwidth ceilings").  `bw` is B (the caller may know it). */
static double
msg_floor (const CollOp *op, int r, int q, double bytes, double bw)
{
  double f = step_floor (op, r, q), extra = cap_wait (op, bytes, bw);

  if (!(extra > 0))
    return f;
  return MAX (f, net_network_route_latency (op->net, op->hosts[r],
                                            op->hosts[q]))
         + extra;
}

/* msg_floor with its route's bandwidth looked up. */
static double
msg_floor_route (const CollOp *op, int r, int q, double bytes)
{
  if (!(op->rate_cap > 0))
    return step_floor (op, r, q);
  return msg_floor (op, r, q, bytes,
                    net_network_route_bandwidth (op->net, op->hosts[r],
                                                 op->hosts[q]));
}


/* Hands a transfer of `bytes` from rank r to rank q of a folded channel
 * (op->fold_rep) to the network on its folded route: each link of its
 * route replaced by its representative. */
static void
fold_send (CollOp *op, int r, int q, double bytes, CollMsg *m)
{
  int links[COLL_FOLD_HOPS];
  int n = net_network_route_links (op->net, op->hosts[r], op->hosts[q],
                                   links, COLL_FOLD_HOPS);

  g_assert (n >= 1 && n <= COLL_FOLD_HOPS);
  for (int i = 0; i < n; i++)
    {
      /* coll_fold_start_channels mapped every route of the rounds */
      if (G_UNLIKELY (op->fold_rep[links[i]] < 0))
        g_error ("a folded channel sent %s -> %s, off the routes of its "
                 "rounds", net_network_host_name (op->net, op->hosts[r]),
                 net_network_host_name (op->net, op->hosts[q]));
      links[i] = op->fold_rep[links[i]];
    }
  net_send_claimed (op->net, op->hosts[r], op->hosts[q], links, n, bytes,
                    msg_floor_route (op, r, q, bytes), op->tag, on_arrival,
                    op, m);
}

/* Hands rank r's current step, a send, to the network, with a snapshot of
 * its elements. */
static void
issue_send (CollOp *op, int r)
{
  const CommStep *s = &op->ranks[r].cur;
  CollMsg *m = msg_new (op);
  gsize len = s->hi - s->lo;

  m->src = r;
  m->dst = s->peer;
  m->seq = chan_get (&op->ranks[r], s->peer)->sent++;
  m->lo = s->lo;
  m->hi = s->hi;
  m->wait = (s->flags & COMM_SEND_WAIT) != 0;
  if (op->bufs != NULL && len > 0)
    m->payload = g_memdup2 (op->bufs[r] + s->lo, len * sizeof (float));
  op->outstanding++;
  op->transfers++;
  if (op->fold_rep != NULL)
    {
      fold_send (op, r, s->peer, (double) len * op->elem_bytes, m);
      return;
    }
  net_send_floored (op->net, op->hosts[r], op->hosts[s->peer],
                    (double) len * op->elem_bytes,
                    msg_floor_route (op, r, s->peer,
                                     (double) len * op->elem_bytes),
                    op->tag, on_arrival, op, m);
}

/* Seconds a streaming send of rank r's current step keeps its sender: its
 * bytes on the wire at the route's slowest bandwidth B, plus the wait its
 * ceiling adds (cap_wait), so that consecutive messages follow each other
 * at bytes / min(B, rate_cap) alone on the route. */
static double
stream_secs (const CollOp *op, int r)
{
  const CommStep *s = &op->ranks[r].cur;
  double bytes = (double) (s->hi - s->lo) * op->elem_bytes;
  double bw = net_network_route_bandwidth (op->net, op->hosts[r],
                                           op->hosts[s->peer]);

  if (!(bytes > 0))
    return 0;
  return bytes / bw + cap_wait (op, bytes, bw);
}

/* Rank r's current step, a receive: takes its message if it has arrived and
 * either starts its reduction (an event reduce_per_byte x bytes later, the
 * rank busy meanwhile) or combines it at once and goes on.  Returns FALSE
 * when the message has not arrived. */
static gboolean
rank_receive (CollOp *op, int r)
{
  CollRank *rk = &op->ranks[r];
  const CommStep *s = &rk->cur;
  CollMsg *m = chan_take (rk, s->peer);
  double secs;

  if (m == NULL)
    return FALSE;
  slot_wake (op, r, s->peer);
  secs = s->mode == COMM_RECV_COPY ? 0
         : op->reduce_per_byte * (double) (s->hi - s->lo) * op->elem_bytes;
  if (secs > 0)
    {
      rk->busy = TRUE;
      op->outstanding++;
      eng_schedule (op->sim, secs, on_reduced, op, m);
    }
  else
    {
      msg_apply (op, m, s);
      msg_free (op, m);
      rank_next (op, r);
    }
  return TRUE;
}

/* Rank r's current step, a local step on the accumulator. */
static void
rank_local (CollOp *op, int r)
{
  if (op->bufs != NULL && op->ranks[r].cur.mode == COMM_ACC_OWN)
    {
      float *acc = coll_acc (op);

      for (gsize i = 0; i < op->pub.n; i++)
        acc[i] += op->bufs[r][i];
    }
  else if (op->bufs != NULL)
    memcpy (op->bufs[r], coll_acc (op), op->pub.n * sizeof (float));
  rank_next (op, r);
}

/* Runs rank r's program as far as it can go now.  Returns the rank that r's
 * progress lets go on (rank_wake), to run next, or -1. */
static int
rank_run (CollOp *op, int r)
{
  CollRank *rk = &op->ranks[r];

  rk->started = TRUE;
  while (!rk->busy && !rk->finished)
    {
      const CommStep *s = &rk->cur;

      op->examined++;
      if (s->type == COMM_STEP_SEND)
        {
          if ((s->flags & COMM_SEND_RDV) && !recv_posted (op, r, s->peer))
            return -1;  /* the receiver wakes us when it gets there */
          if ((s->flags & COMM_SEND_STREAM) && !slot_free (op, r, s->peer))
            return -1;  /* the receiver wakes us when it takes one */
          issue_send (op, r);
          if (s->flags & COMM_SEND_WAIT)
            rk->busy = TRUE;
          else if (s->flags & COMM_SEND_STREAM)
            {
              double secs = stream_secs (op, r);

              if (secs > 0)
                {
                  rk->busy = TRUE;
                  op->outstanding++;
                  eng_schedule (op->sim, secs, on_streamed, op,
                                GINT_TO_POINTER (r));
                }
              else
                rank_next (op, r);
            }
          else
            rank_next (op, r);
        }
      else if (s->type == COMM_STEP_RECV)
        {
          if (!rank_receive (op, r))
            return rank_wake (op, r, s->peer);
        }
      else
        rank_local (op, r);
    }
  return -1;
}

/* Runs rank r, then each rank its progress lets go on, in a chain, and
 * the streaming senders a receive gave a free slot (slot_wake). */
static void
coll_advance (CollOp *op, int r)
{
  for (;;)
    {
      while (r >= 0)
        r = rank_run (op, r);
      if (op->woken == NULL || op->woken->len == 0)
        return;
      r = g_array_index (op->woken, int, op->woken->len - 1);
      g_array_set_size (op->woken, op->woken->len - 1);
    }
}

const CommAlgorithm *
comm_resolve (const CommAlgorithm *alg, const CommArgs *a,
                  CommKind kind)
{
  CommPlan plan;

  g_return_val_if_fail (alg != NULL && a != NULL, NULL);
  return comm_plan (alg, a, kind, &plan) ? plan.alg : NULL;
}

/* `a` with plan's protocol applied (docs/collectives.md, "Protocols"):
 * the overheads scaled by its figures over Simple's ring ones, each
 * element carrying its lines' bytes (the reduction still costs per byte of
 * data), its channels; protocol NULL, so that nothing is applied twice. */
static CommArgs
coll_apply_plan (const CommArgs *a, const CommPlan *plan)
{
  CommArgs b = *a;
  const CommProtocol *pr = plan->protocol;
  CommFamily f = plan->alg->family;

  b.protocol = NULL;
  b.channels = plan->channels;
  if (pr != NULL)
    {
      b.launch_overhead *= comm_protocol_launch_scale (pr, f);
      b.step_overhead *= comm_protocol_step_scale (pr, f, a->hw);
      b.intra_step_overhead *= comm_protocol_step_scale (pr, f, a->intra_hw);
      b.elem_bytes *= pr->wire;
      b.reduce_per_byte /= pr->wire;
    }
  /* NCCL's network overhead: a ring across nodes pays it on every step,
   * its steps inside a node too (docs/collectives.md, "Overheads") */
  if (plan->alg->one_route && a->net_overhead > 0 && comm_spans_groups (a))
    b.intra_step_overhead = MAX (b.intra_step_overhead,
                                 a->net_overhead
                                   * comm_protocol_net_overhead_scale (pr));
  b.net_overhead = 0;   /* applied: a channel's own start must not again */
  /* a NIC's declared latency, per message between host groups, as the
   * protocol pays it (docs/collectives.md, "Overheads") */
  b.cross_latency += a->nic_latency * comm_protocol_nic_latency_scale (pr);
  b.nic_latency = 0;    /* applied, likewise */
  /* NCCL's bandwidth ceiling for the algorithm and protocol, per message
   * on the wire (docs/collectives.md, "Bandwidth ceilings") */
  double cap = comm_args_rate_cap (a, pr, f, plan->channels);
  if (isfinite (cap))
    b.rate_cap = b.rate_cap > 0 ? MIN (b.rate_cap, cap * (pr ? pr->wire : 1))
                                : cap * (pr ? pr->wire : 1);
  b.arch = COMM_ARCH_OTHER;   /* applied, likewise */
  return b;
}

gboolean
comm_spans_groups (const CommArgs *a)
{
  g_return_val_if_fail (a != NULL && a->net != NULL && a->hosts != NULL, FALSE);
  for (int r = 1; r < a->p; r++)
    if (net_network_host_group (a->net, a->hosts[r])
        != net_network_host_group (a->net, a->hosts[0]))
      return TRUE;
  return FALSE;
}

/* --- Channels -------------------------------------------------------------- */

static int
cmp_rank_group (const void *x, const void *y, void *group)
{
  int a = *(const int *) x, b = *(const int *) y;
  const int *g = group;

  if (g[a] != g[b])
    return g[a] < g[b] ? -1 : 1;
  return (a > b) - (a < b);
}

/* Runs of one group, by their lowest rank. */
typedef struct {
  int first;   /* lowest rank of the group */
  int start, len;
} GroupRun;

static int
cmp_run (const void *x, const void *y)
{
  const GroupRun *a = x, *b = y;

  return (a->first > b->first) - (a->first < b->first);
}

void
comm_channel_order (int p, const int *group, int c, NetGroupOrder ring,
                        int *order)
{
  g_autofree int *idx = g_new (int, p);
  g_autofree GroupRun *runs = g_new (GroupRun, p);
  g_autofree int *local = g_new (int, p);   /* the topology's ring order */
  int n_runs = 0, k = 0;

  g_return_if_fail (p >= 1 && group != NULL && c >= 0 && order != NULL);
  for (int r = 0; r < p; r++)
    idx[r] = r;
  g_qsort_with_data (idx, p, sizeof (int), cmp_rank_group, (gpointer) group);
  for (int s = 0, e; s < p; s = e)
    {
      e = s;
      while (e < p && group[idx[e]] == group[idx[s]])
        e++;
      runs[n_runs++] = (GroupRun) { idx[s], s, e - s };
    }
  qsort (runs, (gsize) n_runs, sizeof (GroupRun), cmp_run);
  for (int i = 0; i < n_runs; i++)
    {
      int len = runs[i].len;

      if (ring != NULL && ring (len, c, local))
        for (int j = 0; j < len; j++)
          order[k++] = idx[runs[i].start + local[j]];
      else
        for (int j = 0; j < len; j++)
          order[k++] = idx[runs[i].start + (j + c) % len];
    }
}

/* The channels of one all-reduce: `done` once the last has finished. */
typedef struct {
  int left;
  CommDone done;
  gpointer ctx, data;
  NetNetwork *release; /* a network the channels claimed, given back before
                          `done`, or NULL */
} CollJoin;

static void
on_channel_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollJoin *j = ctx;
  CommDone done = j->done;
  gpointer c = j->ctx, d = j->data;

  if (--j->left > 0)
    return;
  if (j->release != NULL)
    net_network_release (j->release);
  g_free (j);
  done (sim, c, d);
}

/* --- Flow classes --------------------------------------------------------- */

/* Phases an algorithm may describe (CommAlgorithm.rounds), and the chain
 * classes one phase may hold; beyond them a collective runs per message. */
#define COLL_PHASES 4
#define COLL_CLASSES 16

/* A collective run as flow classes (docs/collectives.md, "Flow classes"):
 * its times computed class by class when it starts, then one event per
 * round, at that round's end on its last rank.  The channels of one
 * all-reduce hold the network's claim together: the last to end gives it
 * back. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  GArray *ends;       /* double, s: each round's end on its last rank */
  guint next;         /* the round whose end is scheduled */
  int *holders;       /* CollClass still running under the claim, shared
                         by them; the last frees it */
  int calls;          /* times `done` is called at the end: 1, or the
                         channels it times at once (CollPlan.mult) */
  CommDone done;
  gpointer ctx, data;
} CollClass;

/* What the class path works out for one collective before it starts: its
 * phases, each phase's latency phase and slowest bandwidth
 * (net_network_class_routes), each round's end, and each phase's first
 * entry into a bandwidth phase and last arrival (class_plan). */
typedef struct {
  CommRound ph[COLL_PHASES];
  int n;                            /* phases */
  double delay[COLL_PHASES];        /* s */
  double bw[COLL_PHASES];           /* bytes/s */
  double first_join[COLL_PHASES];   /* s */
  double last_arr[COLL_PHASES];     /* s */
  GArray *ends;                     /* double, s, or NULL */
} CollPlan;

/* Frees what a CollPlan holds. */
static void
plan_clear (CollPlan *pl)
{
  for (int k = 0; k < pl->n; k++)
    {
      g_free (pl->ph[k].to);
      g_free (pl->ph[k].elems);
    }
  pl->n = 0;
  if (pl->ends != NULL)
    g_array_unref (pl->ends);
  pl->ends = NULL;
}

/* The chain classes of one phase: a chain is the path of one block around
 * its ring (CommRound); chains that start at the same time with blocks of
 * the same size have the same times, so one class times them all. */
typedef struct {
  int n;                        /* classes */
  int start[COLL_CLASSES];      /* its start time: index among the previous
                                   phase's class ends (the first phase: 0,
                                   the collective's start) */
  gsize elems[COLL_CLASSES];    /* elements of its block */
  guint32 next[COLL_CLASSES];   /* bit b set: the ring's next rank after
                                   the one that starts a chain of this class
                                   starts one of class b, the chain that
                                   crosses the same link one round earlier */
} CollChains;

/* Sorts phase rd's chains into classes: rank r's by (start[r], its
 * block's size), written to cls[r]; end[r] is the class of the block rank r
 * holds when the phase ends, where its next phase starts (scratch: p ints).
 * FALSE when the phase has more than COLL_CLASSES classes. */
static gboolean
chains_classify (int p, const CommRound *rd, const int *start, int *cls,
                 int *end, int *scratch, CollChains *ch)
{
  ch->n = 0;
  for (int r = 0; r < p; r++)
    {
      int c = 0;

      while (c < ch->n
             && (ch->start[c] != start[r] || ch->elems[c] != rd->elems[r]))
        c++;
      if (c == ch->n)
        {
          if (c == COLL_CLASSES)
            return FALSE;
          ch->start[c] = start[r];
          ch->elems[c] = rd->elems[r];
          ch->next[c] = 0;
          ch->n++;
        }
      cls[r] = c;
    }
  for (int r = 0; r < p; r++)
    {
      ch->next[cls[r]] |= 1u << cls[rd->to[r]];
      end[r] = -1;
    }
  /* a block moves one rank along its ring per round: after `count` rounds
   * rank i of a ring of L holds the block rank i - count started with */
  for (int r = 0; r < p; r++)
    {
      int L = 0, x = r, shift;

      if (end[r] >= 0)
        continue;
      do
        {
          g_assert (L < p && end[x] < 0);
          scratch[L++] = x;
          end[x] = 0;
          x = rd->to[x];
        }
      while (x != r);
      shift = rd->count % L;
      for (int i = 0; i < L; i++)
        end[scratch[i]] = cls[scratch[i >= shift ? i - shift
                                                 : i - shift + L]];
    }
  return TRUE;
}

/* Whether op may run as flow classes at all, whoever its caller: it moves
 * no data, its algorithm describes phases of rounds, the network allows
 * flow classes and has no transfer in flight. */
static gboolean
class_eligible (CollOp *op)
{
  return op->bufs == NULL && op->alg->rounds != NULL && op->pub.p >= 2
         && op->elem_bytes > 0 && net_network_flow_classes (op->net)
         && net_network_active (op->net) == 0;
}

/* Fills pl with op's phases (alg->rounds) and, for each, the latency phase
 * and bandwidth of its routes, which must form one class
 * (net_network_class_routes); FALSE where the algorithm gives no phases or
 * some phase's routes do not.  pl holds the phases either way. */
static gboolean
class_phases (CollOp *op, CollPlan *pl)
{
  int p = op->pub.p;
  g_autofree int *src = g_new (int, p), *dst = g_new (int, p);
  g_autofree double *floor = g_new (double, p);

  pl->ends = NULL;
  pl->n = op->alg->rounds (&op->pub, pl->ph, COLL_PHASES);
  if (pl->n == 0)
    return FALSE;
  for (int r = 0; r < p; r++)
    src[r] = op->hosts[r];
  for (int k = 0; k < pl->n; k++)
    {
      const CommRound *rd = &pl->ph[k];

      g_assert (rd->count >= 1 && rd->reducing >= 0
                && rd->reducing <= rd->count && rd->to && rd->elems);
      for (int r = 0; r < p; r++)
        {
          g_assert (rd->to[r] != r && rd->to[r] >= 0 && rd->to[r] < p);
          g_assert (rd->elems[r] >= 1);
          dst[r] = op->hosts[rd->to[r]];
          floor[r] = step_floor (op, r, rd->to[r]);
        }
      if (!net_network_class_routes (op->net, p, src, dst, floor,
                                     &pl->delay[k], &pl->bw[k]))
        return FALSE;
    }
  return TRUE;
}

/* Times pl's phases of op from t0 on, one class at a time, with the
 * operations of the per-message path: a transfer sent at T arrives at
 * net_network_class_arrival (T, ...), a reducing receive completes
 * reduce_per_byte x bytes later (eng_schedule's T + secs), a copying one
 * when it arrives.  Each route carries `mult` equal transfers at once (the
 * channels of one all-reduce on the same hosts; 1 otherwise): with max-min
 * sharing each moves at its route's bandwidth / mult, what the progressive
 * filling gives mult flows alone on the same links.  That holds while, in
 * every round, for every pair of classes a, b where b's chain crosses a
 * link one round before a's: the receiver of a's block, ready when b's
 * block was received, is ready when it arrives (it does not wait); and,
 * with max-min sharing, b's transfer has left the link before a's enters
 * its bandwidth phase (they do not share).  Sets pl->ends to each round's
 * latest end, and each phase's first entry into a bandwidth phase
 * (first_join) and last arrival (last_arr); FALSE where a condition
 * fails. */
static gboolean
class_plan (CollOp *op, CollPlan *pl, int mult, double t0)
{
  int p = op->pub.p;
  gboolean maxmin
    = net_network_contention (op->net) == NET_CONTENTION_MAXMIN;
  g_autofree int *start = g_new0 (int, p), *end = g_new (int, p);
  g_autofree int *cls = g_new (int, p), *scratch = g_new (int, p);
  double from[COLL_CLASSES] = { t0 };   /* s, the previous phase's ends */
  double last = t0;

  g_assert (mult >= 1 && pl->ends == NULL);
  pl->ends = g_array_new (FALSE, FALSE, sizeof (double));
  for (int k = 0; k < pl->n; k++)
    {
      const CommRound *rd = &pl->ph[k];
      CollChains ch;
      double T[COLL_CLASSES];     /* s, when its current block is in */
      double arr[COLL_CLASSES];   /* s, its transfer's arrival */
      double prev[COLL_CLASSES];  /* s, its previous transfer's arrival */
      double bytes[COLL_CLASSES], secs[COLL_CLASSES];
      double dl[COLL_CLASSES];    /* s, its latency phase: the phase's,
                                     plus what the ceiling adds (msg_floor) */
      double rate = maxmin && mult > 1 ? pl->bw[k] / mult : pl->bw[k];
      int *swap;

      if (!chains_classify (p, rd, start, cls, end, scratch, &ch))
        return FALSE;
      pl->first_join[k] = INFINITY;
      for (int c = 0; c < ch.n; c++)
        {
          double wait;

          T[c] = from[ch.start[c]];
          bytes[c] = (double) ch.elems[c] * op->elem_bytes;
          secs[c] = op->reduce_per_byte * (double) ch.elems[c]
                    * op->elem_bytes;
          /* the ceiling is held against the route's own bandwidth, as
           * msg_floor does, whatever the sharing */
          wait = cap_wait (op, bytes[c], pl->bw[k]);
          dl[c] = wait > 0 ? pl->delay[k] + wait : pl->delay[k];
          pl->first_join[k] = MIN (pl->first_join[k], T[c] + dl[c]);
        }
      for (int i = 0; i < rd->count; i++)
        {
          double t = last;

          for (int c = 0; c < ch.n; c++)
            arr[c] = net_network_class_arrival (op->net, T[c], dl[c],
                                                bytes[c], rate);
          for (int a = 0; a < ch.n; a++)
            for (int b = 0; b < ch.n; b++)
              if (ch.next[a] & (1u << b))
                {
                  if (T[b] > arr[a])
                    return FALSE;
                  if (maxmin && i > 0 && prev[b] > T[a] + dl[a])
                    return FALSE;
                }
          for (int c = 0; c < ch.n; c++)
            {
              prev[c] = arr[c];
              T[c] = i < rd->reducing && secs[c] > 0 ? arr[c] + secs[c]
                                                     : arr[c];
              t = MAX (t, T[c]);
            }
          g_array_append_val (pl->ends, t);
          last = t;
        }
      pl->last_arr[k] = -INFINITY;
      for (int c = 0; c < ch.n; c++)
        {
          pl->last_arr[k] = MAX (pl->last_arr[k], prev[c]);
          from[c] = T[c];
        }
      swap = start;
      start = end;
      end = swap;
    }
  return TRUE;
}

/* Whether phase r1 of o1 and phase r2 of o2 (two phases of one collective,
 * or of two channels over the same ranks' hosts) send over some common
 * link (scratch: 4 x p ints). */
static gboolean
phases_meet (CollOp *o1, const CommRound *r1, CollOp *o2,
             const CommRound *r2, int *scratch)
{
  int p = o1->pub.p;
  int *src1 = scratch, *dst1 = src1 + p, *src2 = dst1 + p, *dst2 = src2 + p;

  g_assert (o2->pub.p == p);
  for (int r = 0; r < p; r++)
    {
      src1[r] = o1->hosts[r];
      dst1[r] = o1->hosts[r1->to[r]];
      src2[r] = o2->hosts[r];
      dst2[r] = o2->hosts[r2->to[r]];
    }
  return net_network_routes_meet (o1->net, p, src1, dst1, p, src2, dst2);
}

/* Whether the transfers of phase k1 of pl1 and phase k2 of pl2 may be in
 * flight at once: their [first join, last arrival] intervals overlap. */
static gboolean
phases_overlap (const CollPlan *pl1, int k1, const CollPlan *pl2, int k2)
{
  return pl1->last_arr[k1] > pl2->first_join[k2]
         && pl2->last_arr[k2] > pl1->first_join[k1];
}

/* Whether two phases of op's plan that may overlap in time share a link
 * (max-min only: without contention they never interact). */
static gboolean
plan_meets_itself (CollOp *op, const CollPlan *pl, int *scratch)
{
  if (net_network_contention (op->net) != NET_CONTENTION_MAXMIN)
    return FALSE;
  for (int k1 = 0; k1 < pl->n; k1++)
    for (int k2 = k1 + 1; k2 < pl->n; k2++)
      if (phases_overlap (pl, k1, pl, k2)
          && phases_meet (op, &pl->ph[k1], op, &pl->ph[k2], scratch))
        return TRUE;
  return FALSE;
}

static void on_class_round (EngSim *sim, gpointer ctx, gpointer data);

/* A round has ended on its last rank: the next round's end is scheduled,
 * or the collective is done (the claim given back by the last holder). */
static void
on_class_round (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollClass *c = ctx;
  CommDone done = c->done;
  gpointer cctx = c->ctx, cdata = c->data;
  int calls = c->calls;

  if (++c->next < c->ends->len)
    {
      eng_schedule_at (sim, g_array_index (c->ends, double, c->next),
                       on_class_round, c, NULL);
      return;
    }
  if (--*c->holders == 0)
    {
      g_free (c->holders);
      net_network_release (c->net);
    }
  g_array_unref (c->ends);
  g_free (c);
  /* the channels of one all-reduce each report to their join, the last of
   * them ending it */
  for (int i = 0; i < calls; i++)
    done (sim, cctx, cdata);
}

/* Starts the rounds of op's plan (claimed already): one CollClass that
 * takes pl->ends, holds the claim with the others sharing `holders`, and
 * calls op's `done` `calls` times at the end.  Counts `calls` collectives
 * run as flow classes; op stays for the caller to free. */
static void
class_launch (CollOp *op, CollPlan *pl, int *holders, int calls)
{
  CollClass *c = g_new0 (CollClass, 1);

  for (int i = 0; i < calls; i++)
    net_network_count_collective (op->net, TRUE);
  c->sim = op->sim;
  c->net = op->net;
  c->ends = pl->ends;
  pl->ends = NULL;
  c->holders = holders;
  c->calls = calls;
  c->done = op->done;
  c->ctx = op->ctx;
  c->data = op->data;
  G_LOCK (coll_stats);
  coll_stats.classes += (guint64) calls;
  G_UNLOCK (coll_stats);
  eng_schedule_at (c->sim, g_array_index (c->ends, double, 0), on_class_round,
                   c, NULL);
}

/* Runs `op` (built, not started) as flow classes when it may: the caller
 * declared it exclusive, it moves no data, its algorithm describes it as
 * phases of rounds, each phase's transfers form one class of routes
 * (net_network_class_routes), its chains' times meet class_plan's
 * conditions, phases whose transfers may overlap in time use distinct
 * links, and the network is idle, has no observer and allows flow classes
 * (net_network_claim).  Then frees op and returns TRUE; else changes
 * nothing and returns FALSE. */
static gboolean
coll_class_start (CollOp *op, const CommArgs *a)
{
  CollPlan pl = { .n = 0 };
  g_autofree int *scratch = NULL;
  gboolean ok;
  int *holders;

  if (!a->exclusive || !class_eligible (op))
    return FALSE;
  scratch = g_new (int, 4 * (gsize) op->pub.p);
  /* the ranks start when on_start would run them */
  ok = class_phases (op, &pl)
       && class_plan (op, &pl, 1, eng_sim_now (op->sim) + a->launch_overhead)
       && !plan_meets_itself (op, &pl, scratch)
       && net_network_claim (op->net);
  if (!ok)
    {
      plan_clear (&pl);
      return FALSE;
    }
  holders = g_new (int, 1);
  *holders = 1;
  class_launch (op, &pl, holders, 1);
  plan_clear (&pl);
  coll_op_free (op);
  return TRUE;
}

/* Whether the C channels ops[] of one all-reduce repeat channel 0 on the
 * same hosts: one rank per host, and in every phase of their plans pl[]
 * the rank of channel c on a host sends to the same host as channel 0's
 * rank there, a block of the same size, for the same rounds.  Then the
 * channels' transfers go in C equal flows on each route, at the same
 * times. */
static gboolean
channels_congruent (CollOp **ops, const CollPlan *pl, int C)
{
  int p = ops[0]->pub.p, n_hosts = net_network_n_hosts (ops[0]->net);
  g_autofree int *rank0 = g_new (int, MAX (n_hosts, 1));

  for (int h = 0; h < n_hosts; h++)
    rank0[h] = -1;
  for (int r = 0; r < p; r++)
    {
      int h = ops[0]->hosts[r];

      if (h < 0 || h >= n_hosts || rank0[h] >= 0)
        return FALSE;
      rank0[h] = r;
    }
  for (int c = 1; c < C; c++)
    {
      if (pl[c].n != pl[0].n || ops[c]->pub.p != p)
        return FALSE;
      for (int k = 0; k < pl[0].n; k++)
        {
          const CommRound *r0 = &pl[0].ph[k], *rc = &pl[c].ph[k];

          if (rc->count != r0->count || rc->reducing != r0->reducing)
            return FALSE;
          for (int r = 0; r < p; r++)
            {
              int h = ops[c]->hosts[r], q;

              if (h < 0 || h >= n_hosts || (q = rank0[h]) < 0
                  || ops[c]->hosts[rc->to[r]] != ops[0]->hosts[r0->to[q]]
                  || rc->elems[r] != r0->elems[q])
                return FALSE;
            }
        }
    }
  return TRUE;
}

/* Runs the C channels ops[] (built, not started, each calling
 * on_channel_done) of one all-reduce as flow classes when that is exact:
 * the caller declared the all-reduce exclusive, each channel qualifies as
 * coll_class_start() requires of a collective alone, and the channels do
 * not disturb one another's times.  That is so when they repeat channel 0
 * on the same hosts (channels_congruent: each route carries C equal flows,
 * timed with multiplicity C), without contention (channels then never
 * interact), or when no two phases of different channels that may be in
 * flight at once share a link.  Then frees the ops and returns TRUE; else
 * changes nothing and returns FALSE. */
static gboolean
coll_class_start_channels (CollOp **ops, int C, const CommArgs *a)
{
  g_autofree CollPlan *pl = g_new0 (CollPlan, C);
  g_autofree int *scratch = g_new (int, 4 * (gsize) a->p);
  double t0 = eng_sim_now (ops[0]->sim) + a->launch_overhead;
  gboolean maxmin
    = net_network_contention (ops[0]->net) == NET_CONTENTION_MAXMIN;
  gboolean ok = a->exclusive && C >= 2, congruent = FALSE;
  int *holders;

  for (int c = 0; c < C && ok; c++)
    ok = class_eligible (ops[c]) && class_phases (ops[c], &pl[c]);
  if (ok && maxmin && channels_congruent (ops, pl, C))
    {
      /* every channel's times are channel 0's, its flows C to a route */
      congruent = TRUE;
      ok = class_plan (ops[0], &pl[0], C, t0)
           && !plan_meets_itself (ops[0], &pl[0], scratch);
    }
  else
    {
      for (int c = 0; c < C && ok; c++)
        ok = class_plan (ops[c], &pl[c], 1, t0)
             && !plan_meets_itself (ops[c], &pl[c], scratch);
      for (int c1 = 0; c1 < C && ok && maxmin; c1++)
        for (int c2 = c1 + 1; c2 < C && ok; c2++)
          for (int k1 = 0; k1 < pl[c1].n && ok; k1++)
            for (int k2 = 0; k2 < pl[c2].n && ok; k2++)
              if (phases_overlap (&pl[c1], k1, &pl[c2], k2))
                ok = !phases_meet (ops[c1], &pl[c1].ph[k1], ops[c2],
                                   &pl[c2].ph[k2], scratch);
    }
  ok = ok && net_network_claim (ops[0]->net);
  if (ok)
    {
      holders = g_new (int, 1);
      *holders = congruent ? 1 : C;
      if (congruent)
        class_launch (ops[0], &pl[0], holders, C);
      else
        for (int c = 0; c < C; c++)
          class_launch (ops[c], &pl[c], holders, 1);
    }
  for (int c = 0; c < C; c++)
    {
      plan_clear (&pl[c]);
      if (ok)
        coll_op_free (ops[c]);
    }
  return ok;
}

/* A collective `kind` of `alg` (an algorithm, not a selector) for `a`,
 * built, not started; NULL (and an error) when alg cannot run it. */
static CollOp *
coll_op_new (const CommAlgorithm *alg, const CommArgs *a, CommKind kind,
             CommDone done, gpointer ctx, gpointer data, GError **error)
{
  CollOp *op;

  op = g_new0 (CollOp, 1);
  op->alg = alg;
  op->sim = a->sim;
  op->net = a->net;
  op->pub.p = a->p;
  op->hosts = g_memdup2 (a->hosts, sizeof (int) * (gsize) a->p);
  op->groups = g_new (int, a->p);
  for (int r = 0; r < a->p; r++)
    op->groups[r] = net_network_host_group (a->net, a->hosts[r]);
  op->pub.group = op->groups;
  op->bufs = a->bufs ? g_memdup2 (a->bufs, sizeof (float *) * (gsize) a->p)
                     : NULL;
  op->pub.n = a->n;
  op->pub.kind = kind;
  op->elem_bytes = a->elem_bytes;
  op->pub.elem_bytes = a->elem_bytes;
  op->reduce_per_byte = a->reduce_per_byte;
  op->step_overhead = a->step_overhead;
  op->intra_step_overhead = a->intra_step_overhead;
  op->cross_latency = a->cross_latency;
  op->rate_cap = a->rate_cap;
  op->pub.root = a->root;
  op->tag = a->tag;
  op->done = done;
  op->ctx = ctx;
  op->data = data;
  op->ranks = g_new0 (CollRank, a->p);
  if (alg->step == NULL)
    for (int r = 0; r < a->p; r++)
      op->ranks[r].prog = g_array_new (FALSE, FALSE, sizeof (CommStep));
  if (!alg->build (&op->pub, kind, error))
    {
      coll_op_free (op);
      return NULL;
    }
  return op;
}

/* --- Mirrored replicas (docs/collectives.md, "Mirrored replicas") --------- */

/* A collective whose ranks are the copies of a folded network, run by its
 * rank 0: per phase, the peer it sends to, the bytes of its block, the
 * reduction time of a reducing round and the message's least latency. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  int n_ph, k, i;               /* phases; the current phase and round */
  int count[COLL_PHASES], reducing[COLL_PHASES];
  int src, dst[COLL_PHASES];    /* hosts */
  double bytes[COLL_PHASES], secs[COLL_PHASES], floor[COLL_PHASES];
  int tag;
  CommDone done;
  gpointer ctx, data;
} CollMirror;

/* The phases of `op` as CollMirror keeps them, when every rank's program
 * is rank 0's moved by a copy: phases of rounds (alg->rounds) whose peer
 * is rank + c for one c, blocks of one size, ranks on the copies of the
 * folded network in order (rank r on rank 0's host moved by r copies),
 * one rank per copy, and no data.  FALSE otherwise. */
static gboolean
coll_mirror_plan (CollOp *op, CollMirror *m)
{
  CommRound ph[COLL_PHASES];
  int p = op->pub.p, period = net_network_fold_period (op->net);
  gboolean ok = TRUE;

  if (op->bufs != NULL || op->alg->rounds == NULL || p < 2 || period < 1
      || !(op->elem_bytes > 0) || op->hosts[0] >= period
      || (gint64) p * period != net_network_n_hosts (op->net))
    return FALSE;
  for (int r = 0; r < p; r++)
    if (op->hosts[r] != op->hosts[0] + r * period)
      return FALSE;
  m->n_ph = op->alg->rounds (&op->pub, ph, COLL_PHASES);
  for (int k = 0; k < m->n_ph; k++)
    {
      int c = comm_mod (ph[k].to[0], p);

      for (int r = 0; r < p && ok; r++)
        ok = ph[k].to[r] == comm_mod (r + c, p) && ph[k].elems[r] == ph[k].elems[0];
      m->count[k] = ph[k].count;
      m->reducing[k] = ph[k].reducing;
      m->dst[k] = op->hosts[c];
      m->bytes[k] = (double) ph[k].elems[0] * op->elem_bytes;
      m->floor[k] = msg_floor_route (op, 0, c, m->bytes[k]);
      m->secs[k] = op->reduce_per_byte * m->bytes[k];
      g_free (ph[k].to);
      g_free (ph[k].elems);
    }
  m->src = op->hosts[0];
  return ok && m->n_ph > 0;
}

gboolean
comm_mirror_ok (const CommAlgorithm *alg, const CommArgs *a, CommKind kind)
{
  g_return_val_if_fail (alg != NULL && a != NULL && a->hosts != NULL, FALSE);
  CommPlan plan;
  if (!comm_plan (alg, a, kind, &plan) || plan.channels > 1)
    return FALSE;
  const CommAlgorithm *chosen = plan.alg;
  CommArgs planned = coll_apply_plan (a, &plan);
  a = &planned;
  if (a->channels == 1 && kind == COMM_ALLREDUCE)
    {
      /* one channel runs over the ranks in topology order */
      g_autofree int *group = g_new (int, a->p), *order = g_new (int, a->p);
      for (int r = 0; r < a->p; r++)
        group[r] = net_network_host_group (a->net, a->hosts[r]);
      comm_channel_order (a->p, group, 0, net_network_group_order (a->net), order);
      for (int r = 0; r < a->p; r++)
        if (order[r] != r)
          return FALSE;
    }
  CollOp *op = coll_op_new (chosen, a, kind, NULL, NULL, NULL, NULL);
  CollMirror m;
  gboolean ok = op != NULL && coll_mirror_plan (op, &m);
  if (op)
    coll_op_free (op);
  return ok;
}

static void mirror_send (EngSim *sim, gpointer ctx, gpointer data);

/* Rank 0 (and so every rank) has its block of this round: the next round,
 * phase or the end. */
static void
mirror_next (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollMirror *m = ctx;

  if (++m->i == m->count[m->k])
    {
      m->i = 0;
      m->k++;
    }
  if (m->k < m->n_ph)
    {
      mirror_send (sim, m, NULL);
      return;
    }
  CommDone done = m->done;
  gpointer dctx = m->ctx, ddata = m->data;
  g_free (m);
  done (sim, dctx, ddata);
}

/* Rank 0's send has arrived, and so has the block its predecessor sent it
 * (the same transfer moved by a copy): reduce it or go on. */
static void
mirror_arrived (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED,
                const NetTransfer *t G_GNUC_UNUSED)
{
  CollMirror *m = ctx;

  if (m->i < m->reducing[m->k] && m->secs[m->k] > 0)
    eng_schedule (sim, m->secs[m->k], mirror_next, m, NULL);
  else
    mirror_next (sim, m, NULL);
}

static void
mirror_send (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollMirror *m = ctx;

  net_send_folded (m->net, m->src, m->dst[m->k], m->bytes[m->k],
                   m->floor[m->k], m->tag, mirror_arrived, m, NULL);
}

/* comm_start() of a collective declared mirrored: rank 0 runs the rounds
 * every rank runs, its transfers on folded routes; an error where
 * comm_mirror_ok() would say no. */
static gboolean
coll_mirror_start (const CommAlgorithm *alg, const CommArgs *a,
                   CommKind kind, CommDone done, gpointer ctx, gpointer data,
                   GError **error)
{
  CollOp *op = coll_op_new (alg, a, kind, done, ctx, data, error);
  if (op == NULL)
    return FALSE;
  CollMirror *m = g_new0 (CollMirror, 1);
  if (a->channels > 1 || !coll_mirror_plan (op, m))
    {
      g_free (m);
      coll_op_free (op);
      g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
                   "%s with %s: the ranks are not mirrored copies of one "
                   "another on a folded network", comm_kind_name (kind),
                   alg->name);
      return FALSE;
    }
  m->sim = a->sim;
  m->net = a->net;
  m->tag = a->tag;
  m->done = done;
  m->ctx = ctx;
  m->data = data;
  coll_op_free (op);
  net_network_count_collective (a->net, TRUE);
  eng_schedule (a->sim, a->launch_overhead, mirror_send, m, NULL);
  return TRUE;
}

static void coll_launch (CollOp *op, double launch_overhead);

/* Starts op (built, not started) per message: its ranks run from
 * launch_overhead on. */
static void
coll_run (CollOp *op, double launch_overhead)
{
  net_network_count_collective (op->net, FALSE);
  coll_launch (op, launch_overhead);
}

/* coll_run() without counting the collective. */
static void
coll_launch (CollOp *op, double launch_overhead)
{
  for (int r = 0; r < op->pub.p; r++)
    rank_load (op, r);
  op->outstanding = 1;
  eng_schedule (op->sim, launch_overhead, on_start, op, NULL);
}

/* --- Folded channels (docs/collectives.md, "Folded channels") ------------ */

/* Why running channel 0 alone on folded routes gives every channel its
 * per-message times, exactly.
 *
 * Let sigma map channel 0's rank j's host to channel 1's rank j's host.
 * coll_fold_start_channels checks that sigma maps channel c's rank j onto
 * channel c + 1's for every c (channel C - 1 onto channel 0), that the C
 * channels run the same program in rank space (the same n, the same host
 * groups rank by rank, the same phases of rounds: to[], elems[], count,
 * reducing), and that sigma moves every route the rounds use onto a route
 * link by link: the i-th link of route(a, b) maps to the i-th link of
 * route(sigma a, sigma b), one image per link, of the same bandwidth and
 * latency to the bit, and every link returns to itself after exactly C
 * moves (sigma_L is then a permutation of those links whose cycles all
 * have length C).
 *
 * The per-message run of all C channels is then invariant under "move
 * every host by sigma, every link by sigma_L, channel c to c + 1": the
 * rules that time a message (its route's latency and bandwidth, the step
 * overhead of a message inside or across host groups) are invariant, and
 * the max-min allocation of a set of flows is unique, so a moved set gets
 * the moved rates.  By induction over the events, channel c's rank j does
 * what channel 0's rank j does, at the same times.
 *
 * Fold each cycle O of sigma_L onto one link rho(O) and send each of
 * channel 0's transfers on its route with every link l replaced by
 * rho(cycle of l).  A real link l in O carries, at any time, the moves
 * sigma^k f of channel 0's flows f whose route crosses sigma^-k l; as f's
 * crossing of O at position i meets l for exactly one k mod C (the cycle
 * has length C), those are in one-to-one correspondence with the
 * crossings of rho(O) by channel 0's folded flows, and sigma^k f moves at
 * f's rate.  So every link of the folded network sees the flows and rates
 * of each link of its cycle, a rate allocation is max-min on one exactly
 * when it is on the other, and the folded run of channel 0 computes the
 * real run's rates, arrivals and receives.  Folded routes must not cross
 * a cycle twice (checked), their latency is the sum of the same
 * latencies, and without contention each flow takes its route's slowest
 * bandwidth either way.  Floating point: the real run computes a
 * channel's times with the same operations as the folded one, except the
 * progressive filling, which sums the rates of C times as many flows per
 * link; its results agree to a few ulps (tests/test-flowclass.c holds
 * them to 1e-9). */

/* The phases of op's rounds are those of ref: same count, reducing, to[]
 * and elems[] (frees what op's rounds allocated). */
static gboolean
fold_same_rounds (CollOp *op, const CommRound *ref, int n_ref)
{
  CommRound ph[COLL_PHASES];
  int p = op->pub.p, n = op->alg->rounds (&op->pub, ph, COLL_PHASES);
  gboolean ok = n == n_ref;

  for (int k = 0; k < n; k++)
    {
      for (int r = 0; r < p && ok; r++)
        ok = ph[k].count == ref[k].count && ph[k].reducing == ref[k].reducing
             && ph[k].to[r] == ref[k].to[r]
             && ph[k].elems[r] == ref[k].elems[r];
      g_free (ph[k].to);
      g_free (ph[k].elems);
    }
  return ok;
}

/* Records in lmap that sigma moves route(a, b) onto route(sa, sb) link
 * by link; FALSE where either has no route or one longer than
 * COLL_FOLD_HOPS, their lengths differ, a link already has another image,
 * or a link and its image differ in bandwidth or latency. */
static gboolean
fold_map_route (NetNetwork *net, int a, int b, int sa, int sb, int *lmap)
{
  int l1[COLL_FOLD_HOPS], l2[COLL_FOLD_HOPS];
  int n1 = net_network_route_links (net, a, b, l1, COLL_FOLD_HOPS);
  int n2 = net_network_route_links (net, sa, sb, l2, COLL_FOLD_HOPS);

  if (n1 < 1 || n1 > COLL_FOLD_HOPS || n1 != n2)
    return FALSE;
  for (int i = 0; i < n1; i++)
    {
      if (lmap[l1[i]] >= 0)
        {
          if (lmap[l1[i]] != l2[i])
            return FALSE;
          continue;
        }
      if (net_network_link_bandwidth (net, l1[i])
            != net_network_link_bandwidth (net, l2[i])
          || net_network_link_latency (net, l1[i])
               != net_network_link_latency (net, l2[i]))
        return FALSE;
      lmap[l1[i]] = l2[i];
    }
  return TRUE;
}

/* Runs the C channels ops[] (built, not started, each calling
 * on_channel_done with `join`) of one all-reduce as channel 0 alone on
 * folded routes, when that is exact (the proof above): the caller
 * declared the all-reduce exclusive, it moves no data, the channels are
 * moves of one another as checked there, and the network is idle, has no
 * observer and allows flow classes (net_network_claim, held until the
 * all-reduce ends).  Then starts channel 0 per message, frees the other
 * channels, counts C collectives run folded and returns TRUE; else
 * changes nothing and returns FALSE.  Long: every condition of the proof
 * is checked here in turn, before anything is changed. */
static gboolean
coll_fold_start_channels (CollOp **ops, int C, const CommArgs *a,
                          CollJoin *join)
{
  CollOp *op = ops[0];
  NetNetwork *net = op->net;
  int p = op->pub.p, n_hosts = net_network_n_hosts (net);
  int n_links = net_network_n_links (net);
  CommRound ph[COLL_PHASES];
  int n_ph = 0;
  gboolean ok;

  if (!a->exclusive || C < 2 || !class_eligible (op)
      || net_network_fold_period (net) != 0 || n_links < 1)
    return FALSE;
  for (int c = 1; c < C; c++)
    if (ops[c]->pub.n != op->pub.n || ops[c]->pub.p != p
        || ops[c]->pub.kind != op->pub.kind || ops[c]->alg != op->alg
        || memcmp (ops[c]->groups, op->groups, sizeof (int) * (gsize) p) != 0)
      return FALSE;

  g_autofree int *sigma = g_new (int, MAX (n_hosts, 1));
  g_autofree int *lmap = g_new (int, n_links);
  int *rep = NULL;

  /* sigma, defined on channel 0's hosts (one rank each), moves channel c
   * onto channel c + 1 */
  for (int h = 0; h < n_hosts; h++)
    sigma[h] = -1;
  ok = TRUE;
  for (int r = 0; r < p && ok; r++)
    {
      int h = op->hosts[r];

      ok = h >= 0 && h < n_hosts && sigma[h] < 0;
      if (ok)
        sigma[h] = ops[1]->hosts[r];
    }
  for (int c = 0; c < C && ok; c++)
    for (int r = 0; r < p && ok; r++)
      {
        int h = ops[c]->hosts[r];

        ok = h >= 0 && h < n_hosts && sigma[h] == ops[(c + 1) % C]->hosts[r];
      }
  if (!ok)
    return FALSE;

  /* one program in rank space */
  n_ph = op->alg->rounds (&op->pub, ph, COLL_PHASES);
  ok = n_ph > 0;
  for (int c = 1; c < C && ok; c++)
    ok = fold_same_rounds (ops[c], ph, n_ph);

  /* sigma moves every route of every channel's rounds onto the next
   * channel's, link by link */
  for (int l = 0; l < n_links; l++)
    lmap[l] = -1;
  for (int k = 0; k < n_ph && ok; k++)
    for (int c = 0; c < C && ok; c++)
      for (int r = 0; r < p && ok; r++)
        {
          const CollOp *o1 = ops[c], *o2 = ops[(c + 1) % C];
          int q = ph[k].to[r];

          ok = fold_map_route (net, o1->hosts[r], o1->hosts[q], o2->hosts[r],
                               o2->hosts[q], lmap);
        }

  /* every link mapped returns to itself after exactly C moves: its cycle,
   * folded onto its lowest link */
  if (ok)
    {
      rep = g_new (int, n_links);
      for (int l = 0; l < n_links; l++)
        rep[l] = -1;
    }
  for (int l = 0; l < n_links && ok; l++)
    {
      int x = l, low = l, len = 0;

      if (lmap[l] < 0 || rep[l] >= 0)
        continue;
      do
        {
          x = lmap[x];
          len++;
          low = MIN (low, x);
        }
      while (x >= 0 && x != l && len < C);
      ok = x == l && len == C;
      for (int i = 0; i < C && ok; i++, x = lmap[x])
        rep[x] = low;
    }

  /* no folded route crosses a cycle twice */
  for (int k = 0; k < n_ph && ok; k++)
    for (int r = 0; r < p && ok; r++)
      {
        int links[COLL_FOLD_HOPS];
        int n = net_network_route_links (net, op->hosts[r],
                                         op->hosts[ph[k].to[r]], links,
                                         COLL_FOLD_HOPS);

        for (int i = 0; i < n && ok; i++)
          for (int j = 0; j < i && ok; j++)
            ok = rep[links[i]] != rep[links[j]];
      }
  for (int k = 0; k < n_ph; k++)
    {
      g_free (ph[k].to);
      g_free (ph[k].elems);
    }
  ok = ok && net_network_claim (net);
  if (!ok)
    {
      g_free (rep);
      return FALSE;
    }
  op->fold_rep = rep;
  join->left = 1;
  join->release = net;
  net_network_count_folded (net, (guint64) C);
  for (int c = 1; c < C; c++)
    coll_op_free (ops[c]);
  coll_launch (op, a->launch_overhead);
  return TRUE;
}

/* Starts a->channels concurrent collectives (CommArgs.channels), at
 * least one element each: as flow classes together where
 * coll_class_start_channels() finds it exact, else each per message (one
 * channel: as comm_start() runs a collective). */
static gboolean
coll_start_channels (const CommAlgorithm *alg, const CommArgs *a,
                     CommKind kind, CommDone done, gpointer ctx,
                     gpointer data, GError **error)
{
  int p = a->p, C = (int) MIN ((gsize) a->channels, MAX (a->n, 1));
  g_autofree int *group = g_new (int, p), *order = g_new (int, p);
  g_autofree int *hosts = g_new (int, p);
  g_autofree float **bufs = a->bufs ? g_new (float *, p) : NULL;
  g_autofree CollOp **ops = g_new0 (CollOp *, C);
  CollJoin *join = g_new0 (CollJoin, 1);

  *join = (CollJoin) { C, done, ctx, data, NULL };
  for (int r = 0; r < p; r++)
    group[r] = net_network_host_group (a->net, a->hosts[r]);
  for (int c = 0; c < C; c++)
    {
      CommArgs sub = *a;
      gsize lo, hi;

      comm_shard_bounds (a->n, C, c, &lo, &hi);
      comm_channel_order (p, group, c, net_network_group_order (a->net),
                              order);
      for (int j = 0; j < p; j++)
        {
          hosts[j] = a->hosts[order[j]];
          if (bufs)
            bufs[j] = a->bufs[order[j]] + lo;
          if (order[j] == a->root)
            sub.root = j;
        }
      sub.hosts = hosts;
      sub.bufs = bufs;
      sub.n = hi - lo;
      sub.channels = 0;
      if (C == 1)
        {
          /* alone on the network as the caller says, mirrored likewise */
          if (!comm_start (alg, &sub, kind, on_channel_done, join, NULL,
                           error))
            {
              g_free (join);
              return FALSE;
            }
          return TRUE;
        }
      /* the same algorithm and kind: only the first can fail */
      ops[c] = coll_op_new (alg, &sub, kind, on_channel_done, join, NULL,
                            error);
      if (ops[c] == NULL)
        {
          g_assert (c == 0);
          g_free (join);
          return FALSE;
        }
    }
  if (coll_class_start_channels (ops, C, a))
    return TRUE;
  if (coll_fold_start_channels (ops, C, a, join))
    return TRUE;
  /* the channels run at once: none is alone on the network */
  for (int c = 0; c < C; c++)
    coll_run (ops[c], a->launch_overhead);
  return TRUE;
}

/* --- Start ---------------------------------------------------------------- */

gboolean
comm_start (const CommAlgorithm *alg, const CommArgs *a,
                CommKind kind, CommDone done, gpointer ctx,
                gpointer data, GError **error)
{
  CollOp *op;

  g_return_val_if_fail (alg != NULL, FALSE);
  g_return_val_if_fail (a != NULL && a->sim != NULL && a->net != NULL, FALSE);
  g_return_val_if_fail (a->p >= 1 && a->hosts != NULL, FALSE);
  g_return_val_if_fail (a->root >= 0 && a->root < a->p, FALSE);
  g_return_val_if_fail (a->elem_bytes >= 0 && a->reduce_per_byte >= 0, FALSE);
  g_return_val_if_fail (a->net_overhead >= 0, FALSE);
  g_return_val_if_fail (a->nic_latency >= 0 && a->cross_latency >= 0, FALSE);
  g_return_val_if_fail (a->rate_cap >= 0 && (guint) a->arch < COMM_N_ARCH, FALSE);
  g_return_val_if_fail (a->launch_overhead >= 0 && a->step_overhead >= 0
                        && a->intra_step_overhead >= 0, FALSE);
  g_return_val_if_fail (done != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  g_return_val_if_fail (a->channels >= 0
                        || a->channels == COMM_CHANNELS_AUTO, FALSE);
  g_return_val_if_fail ((guint) a->hw < COMM_N_HW
                        && (guint) a->intra_hw < COMM_N_HW, FALSE);

  CommArgs planned;
  if (alg->choose != NULL || a->protocol != NULL
      || a->channels == COMM_CHANNELS_AUTO || a->net_overhead > 0
      || a->nic_latency > 0 || a->arch != COMM_ARCH_OTHER)
    {
      CommPlan plan;

      if (!comm_plan (alg, a, kind, &plan))
        return comm_unsupported (alg->name, kind, error);
      alg = plan.alg;
      planned = coll_apply_plan (a, &plan);
      a = &planned;
    }

  if (alg->start != NULL)
    return alg->start (a, kind, done, ctx, data, error);

  if (a->channels > 1 && kind != COMM_ALLREDUCE)
    {
      g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
                   "channels: %s is not supported, only all-reduce",
                   comm_kind_name (kind));
      return FALSE;
    }
  if (a->channels >= 1 && kind == COMM_ALLREDUCE)
    return coll_start_channels (alg, a, kind, done, ctx, data, error);

  if (a->mirrored)
    return coll_mirror_start (alg, a, kind, done, ctx, data, error);
  op = coll_op_new (alg, a, kind, done, ctx, data, error);
  if (op == NULL)
    return FALSE;
  if (coll_class_start (op, a))
    return TRUE;
  coll_run (op, a->launch_overhead);
  return TRUE;
}

/* The block of comm_shard_bounds (n, p) that holds element e: the first
 * n mod p blocks hold one element more. */
static int
shard_of (gsize n, int p, gsize e)
{
  gsize base = n / (gsize) p, extra = n % (gsize) p;

  if (e < extra * (base + 1))
    return (int) (e / (base + 1));
  return (int) (extra + (e - extra * (base + 1)) / base);
}

/* Where element e of rank r comes from after a copying kind: rank *q's
 * input at *qe; FALSE where the definition sums, or leaves the element as
 * scratch. */
static gboolean
check_source (CommKind kind, int p, gsize n, int root, int r, gsize e,
              int *q, gsize *qe)
{
  gsize c = n / (gsize) p;
  int b = shard_of (n, p, e);

  *qe = e;
  switch (kind)
    {
    case COMM_BROADCAST:
      *q = root;
      return TRUE;
    case COMM_SCATTER:
      *q = b == r ? root : r;
      return TRUE;
    case COMM_GATHER:
      *q = r == root ? b : r;
      return TRUE;
    case COMM_ALLGATHER:
      *q = b;
      return TRUE;
    case COMM_ALLTOALL:
      if (e >= c * (gsize) p)   /* the tail stays */
        *q = r;
      else
        {
          *q = (int) (e / c);
          *qe = (gsize) r * c + e % c;
        }
      return TRUE;
    default:
      return FALSE;
    }
}

gboolean
comm_check (CommKind kind, int p, gsize n, int root,
                const float *const *in, const float *const *out, int *rank,
                gsize *elem)
{
  g_return_val_if_fail (p >= 1 && root >= 0 && root < p, FALSE);
  for (gsize e = 0; e < n; e++)
    {
      double sum = 0, mag = 0;
      int b = shard_of (n, p, e);

      for (int q = 0; q < p; q++)
        {
          sum += in[q][e];
          mag += fabs (in[q][e]);
        }
      for (int r = 0; r < p; r++)
        {
          int q;
          gsize qe;
          gboolean ok;

          if (check_source (kind, p, n, root, r, e, &q, &qe))
            ok = memcmp (&out[r][e], &in[q][qe], sizeof (float)) == 0;
          else if ((kind == COMM_REDUCE && r != root)
                   || (kind == COMM_REDUCE_SCATTER && b != r))
            ok = TRUE;
          else
            ok = fabs (out[r][e] - sum) <= 1e-5 * mag + 1e-30;
          if (!ok)
            {
              *rank = r;
              *elem = e;
              return FALSE;
            }
        }
    }
  return TRUE;
}

gboolean
comm_does (const CommAlgorithm *alg, CommKind kind)
{
  return !isnan (comm_cost (alg, kind, 2, 2, 4, 1, 1, 0));
}

double
comm_cost (const CommAlgorithm *alg, CommKind kind, int p,
               gsize n, double elem_bytes, double alpha, double beta,
               double reduce_per_byte)
{
  return comm_cost_grouped (alg, kind, p, 1, n, elem_bytes, alpha, beta,
                                reduce_per_byte);
}

double
comm_cost_grouped (const CommAlgorithm *alg, CommKind kind, int p,
                       int group, gsize n, double elem_bytes, double alpha,
                       double beta, double reduce_per_byte)
{
  g_return_val_if_fail (alg != NULL && p >= 1, NAN);
  g_return_val_if_fail (group >= 1 && p % group == 0, NAN);
  return alg->cost (kind, p, group, n, elem_bytes, alpha, beta,
                    reduce_per_byte);
}

gboolean
comm_kind_one_to_all (CommKind kind)
{
  return kind == COMM_BROADCAST || kind == COMM_REDUCE || kind == COMM_SCATTER
         || kind == COMM_GATHER;
}

double
comm_class_events (const char *name, CommKind kind, int p, int group,
                   gsize n)
{
  const CommAlgorithm *alg = comm_lookup (name);

  if (alg == NULL || alg->class_rounds == NULL || p < 2 || group < 1
      || p % group != 0)
    return 0;
  return alg->class_rounds (kind, p, group, n);
}

double
comm_messages (const char *name, CommKind kind, int p, gsize n, int channels)
{
  if (p < 2)
    return 0;
  const CommAlgorithm *alg = comm_lookup (name);
  if (!alg || !alg->messages)
    alg = &comm_ring;
  return alg->messages (kind, p, n) * MAX (channels, 1);
}
