/*
 * ps.c — the parameter-server policy: BSP, SSP(s) and async.
 *
 * One protocol covers all three consistency models; they differ only in the
 * bound a server checks before it answers a worker (docs/policies.md is the
 * normative description, this is its implementation):
 *
 *   - At time 0 every worker sends a pull request (no payload) to every server.
 *   - A server answers a pull for a worker's iteration i once every worker v
 *     has had `applied[v] >= i - s` gradients applied to that shard (s = 0 for
 *     BSP, the staleness bound for SSP, no condition for async).  The answer
 *     carries a snapshot of the shard as it is when the answer is sent.
 *   - When a worker has every shard, it computes a real gradient at its own
 *     copy of the parameters on its next batch, for a simulated time given by
 *     the device model, then pushes each gradient shard to its server
 *     (compressed, or filtered by [policy] filter: filter.c).
 *   - A server queues received gradients in a FIFO; applying one costs
 *     update_time(shard) seconds (the optimizer's roofline cost) and runs
 *     one step of the optimizer on the shard; the optimizer's state (momentum,
 *     Adam moments, step count for warm-up) lives on that server.  After a worker's gradient for iteration i is
 *     applied, the server holds that worker's pull for iteration i + 1 until
 *     the bound above holds, then answers it.
 *   - The run ends when iterations × workers gradients have been applied to
 *     every shard.
 *
 * A worker's iteration i runs from the moment its previous push arrived (0 for
 * i = 0) to the moment its push of iteration i has fully arrived.  The time it
 * spends held by the bound is `wait`; computing is `compute`; everything else
 * (transfers, the server's queue and update) is `comm`.
 *
 * Two extensions, both with one server:
 *
 *   - K of N (BSP, env->wait_for = K < W): the server's open round r accepts
 *     the first K gradients of iteration r that arrive and then closes; later
 *     gradients of closed rounds are dropped or (late_keep) applied as stale
 *     updates.  A pull is answered once the K accepted gradients of every
 *     closed round are applied; the worker then joins the server's current
 *     round, whatever iteration it asked for.  With drop, the instant round r
 *     is complete the server also sends the new parameters to every worker
 *     still computing or sending for round r, which abandons that step (as a
 *     failure does, without the downtime) and joins round r + 1.
 *   - Worker failures (env->failures): at a failure the worker's epoch
 *     changes, its compute event is cancelled, and every message to or from
 *     it that carries the old epoch is dropped on arrival (the gradient it was
 *     sending, the parameters it was waiting for).  At its restart it sends a
 *     fresh pull for the iteration it had not finished.
 *
 * Sparse pulls ([policy] pull = sparse, ps-sparse.c): a worker draws its
 * next batch before its pull is answered (the same batches, in the same
 * order, as a dense run draws them), each server's reply carries only the
 * keys of that batch in its shard and each push only the keys of the batch
 * it was computed on, 8 bytes a key.  The math is the dense run's: the
 * gradient is zero off those keys and reads none other.
 * Server crashes ([failures] server) use epochs too, one per server: a
 * crash loses the server's update queue, its held pulls and every message
 * to or from it in flight.  Without replication the server's keys come
 * back at its restart as [failures] recover says (initial values or its
 * last checkpoint) and the workers resend what it lost; with replication
 * the next live server of each chain takes its ranges over after
 * [failures] detect, from its copy, and the workers resend what was not
 * acknowledged (docs/policies.md, "Server failures").
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "comm/shard.h"
#include "policies/partition.h"
#include "policies/ps-replica.h"
#include "policies/compress.h"
#include "policies/ps-sparse.h"
#include "policies/filter.h"
#include "train/step.h"

typedef struct PsPolicy PsPolicy;

/* A snapshot of a server's shard, shared by every reply that carries the
 * same version of it (and, with one server, by the workers that hold it as
 * their parameters) instead of a copy each. */
typedef struct {
  int ref;
  GPtrArray *spare;      /* its server's released snapshots, for reuse */
  float data[];
} PsSnap;

/* A server keeps at most this many released snapshots for reuse (a fresh
 * buffer of a large shard costs page faults; async makes a version per
 * gradient). */
#define PS_SPARE_SNAPS 64

/* A snapshot of n floats, contents undefined. */
static PsSnap *
snap_alloc (gsize n, GPtrArray *spare)
{
  PsSnap *s = spare->len ? g_ptr_array_steal_index_fast (spare, spare->len - 1)
                         : g_malloc (sizeof (PsSnap) + n * sizeof (float));
  s->ref = 1;
  s->spare = spare;
  return s;
}

static PsSnap *
snap_new (const float *src, gsize n, GPtrArray *spare)
{
  PsSnap *s = snap_alloc (n, spare);
  memcpy (s->data, src, n * sizeof (float));
  return s;
}

static PsSnap *
snap_ref (PsSnap *s)
{
  s->ref++;
  return s;
}

static void
snap_unref (PsSnap *s)
{
  if (!s || --s->ref > 0)
    return;
  if (s->spare->len < PS_SPARE_SNAPS)
    g_ptr_array_add (s->spare, s);
  else
    g_free (s);
}

typedef struct {
  int id;
  char *name;
  int host;
  float *params;         /* (n_params) its copy as last pulled: with one
                          * server, the data of `snap` */
  float *own;            /* (n_params) its own copy (several servers) */
  PsSnap *snap;          /* one server: the snapshot it holds */
  float *grad;           /* (n_params) */
  float *memory;         /* (n_params) compression's error feedback or the
                          * filter's residual, or NULL */
  EngRng rng;            /* compression's stream */
  int *idx;              /* deferred: (batch) the batch it drew */
  gint64 iter;           /* iteration in progress */
  double iter_start;     /* s, when `iter` began */
  double compute_start;  /* s, when `iter`'s compute began */
  double compute;        /* s of compute in `iter` */
  double hold_start, hold_end; /* s, longest server hold of `iter`'s pull */
  gint64 staleness;      /* of `iter`: iter - min read clock over shards */
  int pushes_missing;    /* gradient shards of `iter` still in flight */
  guint epoch;           /* bumped at each failure; older messages are dropped */
  gboolean down;         /* failed and not yet restarted */
  double up_at;          /* s, restart time while down */
  EngEventId compute_ev; /* the pending end of its compute, 0 = none */
  EngEventId restart_ev; /* the pending restart, 0 = none */
  enum { PH_RECV, PH_COMPUTE, PH_SEND } phase; /* what it is doing when up */
  gint64 accepted_round; /* K of N: last round that accepted its gradient */
  gboolean *have;        /* server crashes: (servers) the reply of each
                          * server for the next compute is in hand */
  gboolean *arrived;     /* server crashes: (servers) the push of `iter`
                          * reached each server */
  int *acks_missing;     /* replication: (servers) acknowledgements of
                          * `iter`'s push still due from each server's
                          * chains; NULL without replication */
  /* the pull for the next compute; its answers may arrive while the pushes
   * of the current iteration are still in flight */
  int replies_got;
  double acc_hold_start, acc_hold_end;
  gint64 acc_staleness;
  /* pull = sparse: the next batch, drawn when its pull is first answered */
  int *next_idx;         /* (batch) */
  gboolean next_ready;
  gint64 *next_keys;     /* (servers) keys of next_idx in each shard */
  gint64 *keys;          /* (servers) keys of the batch being computed */
} PsWorker;

typedef struct {
  int worker;
  gint64 iter;           /* the iteration the pull is for */
  gint64 need;           /* required min applied count, or G_MININT64 */
  double since;          /* s, when the hold began */
  guint epoch;           /* the worker's epoch when the pull was made */
} PsPendingPull;

typedef struct {
  int id;
  char *name;
  int host;
  const PolRange *range; /* (n_ranges) its key ranges, in key order; the
                          * shard is their concatenation */
  int n_ranges;
  gsize n;               /* keys it holds: the ranges' lengths summed */
  EngResource *fifo;
  KernOptimizer **opt;   /* (n_ranges) optimizer state of each range; NULL
                          * without math */
  gint64 version;        /* changes of the shard's parameters so far */
  PsSnap *snap;          /* the latest snapshot sent, of version snap_version;
                          * with one server, always the current version,
                          * whose data is ps->global */
  gint64 snap_version;
  float *round_sum;      /* BSP: (n) sum of the round's gradients so far */
  gint64 round_n;        /* BSP: gradients in round_sum */
  gint64 *applied;       /* (workers) gradients applied per worker */
  gint64 min_applied;    /* the least of applied[] */
  int n_at_min;          /* workers whose applied count is min_applied */
  gint64 released_min;   /* min_applied when the pending pulls were last
                          * scanned: none of them could be answered then */
  GArray *pending;       /* PsPendingPull, in registration order */
  /* server crashes ([failures] server) */
  gboolean down;         /* crashed and not back */
  guint epoch;           /* bumped at each crash and restart: messages to
                          * or from an older epoch are lost */
  double up_at;          /* s, restart time while down */
  EngEventId restart_ev; /* the pending restart, 0 = none */
  gint64 rounds;         /* BSP: rounds stepped */
  gint64 *counted;       /* (workers) gradients of each worker counted
                          * towards the run's updates here; NULL without
                          * crashes */
  gint64 ckpt_at;        /* recover = checkpoint: min_applied of the last
                          * checkpoint */
  const char *actor;     /* the name of the server it runs on (another
                          * one after a takeover) */
  int on;                /* the index of that server */
  gint64 *held;          /* takeover: (workers) gradients of each worker
                          * its parameters hold (a resent one is skipped) */
} PsServer;

typedef enum { MSG_PULL, MSG_REPLY, MSG_GRAD, MSG_REPLICA, MSG_ACK } PsMsgKind;

typedef struct {
  PsMsgKind kind;
  int worker, server;
  gint64 iter;
  gint64 clock;          /* REPLY: min applied count when the snapshot was taken */
  double hold_start, hold_end; /* REPLY: the hold at the server */
  PsSnap *snap;          /* REPLY: the shard's snapshot (a reference) */
  const float *grad;     /* GRAD: the gradient shard: the worker's buffer,
                          * or `copy` */
  float *copy;           /* GRAD: its own copy, where the worker's buffer
                          * may change before the server applies it */
  guint epoch;           /* of the worker it is from or for */
  gboolean accepted;     /* GRAD, K of N: counted in its round */
  gboolean acked;        /* PULL: sent once the previous push is
                          * acknowledged (replication) */
  int range, hop;        /* REPLICA: the range and the chain position it
                          * goes to; ACK: the range */
  int src_srv;           /* the server that sent it, -1 = a worker */
  guint src_epoch;       /* that server's epoch when it sent it */
  guint dst_epoch;       /* PULL, GRAD, REPLICA: the epoch of m->server
                          * when it was sent */
  gboolean resend;       /* GRAD: sent again after a server crash, its
                          * first copy had arrived (the worker's iteration
                          * counted it) */
} PsMsg;

struct PsPolicy {
  PolEnv env;
  PsWorker *workers;
  PsServer *servers;
  float *global;         /* (n_params) the servers' parameters, by shard */
  gint64 *grad_shards;   /* per (worker): shards of its latest gradient applied */
  TrainSteps *steps;       /* the workers' steps */
  PolPartition *part;    /* [policy] partition: which server holds which keys */
  PolRange *srv_ranges;  /* (part->n_ranges) the ranges, server by server */
  int replication;       /* [policy] replication: servers per chain */
  PolReplicas *rep;      /* the ranges' backup copies; NULL when 1 */
  const PolCompressor *cmp; /* [policy] compression; NULL = none */
  const PolFilter *filter;  /* [policy] filter; NULL = none */
  double push_bytes;     /* bytes of every gradient push sent */
  double dense_bytes;    /* what those pushes would be unfiltered */
  double pushed, sent;   /* entries of those pushes; those a filter sent */
  gint64 total;          /* iterations * workers */
  PolRun run;            /* counters (updates: gradients applied to every
                            shard), evaluation, end of the run */
  GHashTable *live;      /* PsMsg* in flight or queued, freed at the end */
  GPtrArray **spare;     /* (servers) released snapshots of each shard;
                          * freed last, after every holder of one */
  /* its keys ([policy] consistency, staleness, wait_for, late) */
  PolConsistency consistency;
  gint64 staleness;      /* SSP bound */
  gint64 wait_for;       /* K of N: first K gradients close a round; 0 = all */
  gboolean late_keep;    /* K of N: apply late gradients (else drop) */
  /* K of N (wait_for), one server */
  gboolean kofn;
  /* a pushed gradient is copied (else borrowed from the worker's buffer,
   * which the protocol leaves alone until it is applied): with failures a
   * restarted worker may compute again while its old push waits */
  gboolean copy_grads;
  /* one server, no failures, simulated compute time: a gradient is
   * computed when the server applies it, from the snapshot and batch the
   * worker holds until then (the same numbers, in the same order), so no
   * worker keeps a gradient buffer */
  gboolean deferred;
  /* several servers, BSP: when a worker has every shard of round r and
   * computes, no server can be past r (each waits for its push), so the
   * servers' vector is exactly what it pulled; workers compute there and
   * keep no copy */
  gboolean shared_global;
  float *scratch;        /* deferred: (n_params) the gradient being applied */
  gint64 open_round;     /* the round accepting gradients */
  gint64 got;            /* gradients accepted in open_round */
  gint64 rounds_done;    /* rounds whose accepted gradients are all applied */
  gint64 accepted_applied;
  gint64 late;           /* gradients of closed rounds (dropped or kept) */
  gboolean sparse_pull;  /* pull = sparse */
  PolSparse *sparse;     /* its key counter, from the servers' shards on */
  double pull_bytes;     /* pulls' bytes sent so far, for the params rows */
  /* server crashes ([failures] server; docs/policies.md, "Server
   * failures") */
  PolServerFailures sf;
  gboolean crashes;      /* some are planned, replication = 1 */
  gboolean takeover;     /* some are planned, replication >= 2 */
  int *live_chain;       /* takeover: (n_ranges x replication) each
                          * range's live chain as partition chain
                          * positions, primary first */
  int *live_n;           /* takeover: (n_ranges) live servers of each */
  float *init;           /* (n_params) the initial model, for reinit; NULL
                          * without crashes or math */
  float *ckpt;           /* (n_params) each server's last checkpoint of its
                          * keys (the initial model until it takes one);
                          * NULL unless recover = checkpoint */
};

static GPtrArray *
ps_host_names (int workers, int servers)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (int w = 0; w < workers; w++)
    g_ptr_array_add (names, g_strdup_printf ("worker%d", w));
  for (int s = 0; s < servers; s++)
    g_ptr_array_add (names, g_strdup_printf ("server%d", s));
  return names;
}

static void send_pull (PsPolicy *ps, PsWorker *w);

static PsMsg *
msg_new (PsPolicy *ps, PsMsgKind kind, int worker, int server, gint64 iter)
{
  PsMsg *m = g_new0 (PsMsg, 1);
  m->kind = kind;
  m->worker = worker;
  m->server = server;
  m->iter = iter;
  m->epoch = ps->workers[worker].epoch;
  g_hash_table_add (ps->live, m);
  return m;
}

static void
msg_free (gpointer p)
{
  PsMsg *m = p;
  snap_unref (m->snap);
  g_free (m->copy);
  g_free (m);
}

static void
msg_done (PsPolicy *ps, PsMsg *m)
{
  g_hash_table_remove (ps->live, m);
}
static void on_message (EngSim *sim, gpointer ctx, gpointer data,
                        const NetTransfer *t);

/* dst (srv->n) = srv's ranges of the vector src, one after the other. */
static void
shard_gather (const PsServer *srv, float *dst, const float *src)
{
  for (int j = 0; j < srv->n_ranges; j++)
    {
      gsize len = srv->range[j].hi - srv->range[j].lo;
      memcpy (dst, src + srv->range[j].lo, len * sizeof (float));
      dst += len;
    }
}

/* srv's ranges of the vector dst = src (srv->n), the inverse of gather. */
static void
shard_scatter (const PsServer *srv, float *dst, const float *src)
{
  for (int j = 0; j < srv->n_ranges; j++)
    {
      gsize len = srv->range[j].hi - srv->range[j].lo;
      memcpy (dst + srv->range[j].lo, src, len * sizeof (float));
      src += len;
    }
}

/* Samples of worker w's step: its balanced batch, or env's. */
static int
ps_batch (const PolEnv *env, int w)
{
  return env->batches ? env->batches[w] : env->batch;
}

/* The largest of the workers' batches. */
static int
ps_max_batch (const PolEnv *env)
{
  int b = env->batch;
  for (int w = 0; env->batches && w < env->workers; w++)
    b = MAX (b, env->batches[w]);
  return b;
}

/* balance = speed: worker w's mean gradient g (n_params floats) weighted
 * by its share of the global batch, b_w / batch (= b_w W / G), before it
 * leaves the worker: the servers' mean of a round's W gradients is then
 * the mean over every sample of the round. */
static void
ps_weigh (PsPolicy *ps, int w, float *g)
{
  if (!ps->env.batches)
    return;
  float f = (float) ((double) ps->env.batches[w] / (double) ps->env.batch);
  for (gsize k = 0; k < ps->env.n_params; k++)
    g[k] *= f;
}

static void
span (PsPolicy *ps, const char *actor, const char *kind, double a, double b,
      gint64 iter, double bytes)
{
  pol_span (&ps->env, actor, kind, a, b, iter, bytes);
}

static void
send_msg (PsPolicy *ps, PsMsg *m, int src, int dst, double bytes)
{
  /* the server that sends it (a reply: its server; a forward or an
   * acknowledgement: the one its caller named), and the one it goes to */
  if (src < ps->env.workers)
    m->src_srv = -1;
  else if (m->kind == MSG_REPLY)
    m->src_srv = m->server;
  if (m->src_srv >= 0)
    m->src_epoch = ps->servers[m->src_srv].epoch;
  if (m->kind == MSG_PULL || m->kind == MSG_GRAD || m->kind == MSG_REPLICA)
    m->dst_epoch = ps->servers[m->server].epoch;
  net_send (ps->env.net, src, dst, bytes, (int) m->kind, on_message, ps, m);
}

/* Sends worker w's gradient of w->iter (or, resending after a server
 * crash, of `iter` it still holds) to server s.  `compress`: the first
 * push, compressed now (a resent push carries the values compressed the
 * first time); `resend`: its first copy had arrived. */
static void
push_shard (PsPolicy *ps, PsWorker *w, int s, gboolean compress, gboolean resend)
{
  PsServer *srv = &ps->servers[s];
  gsize lo = srv->range[0].lo, len = srv->n;
  gint64 iter = w->phase == PH_SEND ? w->iter : w->iter - 1;
  PsMsg *m = msg_new (ps, MSG_GRAD, w->id, s, iter);
  m->resend = resend;
  double bytes = ps->sparse ? pol_sparse_bytes (w->keys[s]) : (double) len * sizeof (float);
  if (ps->cmp)
    {
      /* each key range compressed on its own (one per server with
       * partition = range); the server gets what it decodes */
      bytes = 0;
      for (int j = 0; j < srv->n_ranges; j++)
        {
          gsize a = srv->range[j].lo, rl = srv->range[j].hi - a;
          if (compress && ps->env.model && !ps->deferred)
            ps->cmp->apply (ps->env.values, w->grad + a,
                            w->memory ? w->memory + a : NULL, rl, &w->rng);
          bytes += ps->cmp->wire_bytes (ps->env.values, rl);
        }
    }
  else if (ps->filter && ps->env.model)
    {
      /* each key range filtered on its own, at the parameters the
       * gradient was computed at; the push is min(dense, sparse) (a
       * filter and a crash are not modelled together: no resend here) */
      gsize sent = 0;
      for (int j = 0; j < srv->n_ranges; j++)
        {
          gsize a = srv->range[j].lo, rl = srv->range[j].hi - a;
          sent += ps->filter->apply (ps->env.values, ps->env.opt.lr, w->grad + a,
                                     w->memory ? w->memory + a : NULL, w->params + a, rl);
        }
      bytes = pol_filter_bytes (len, sent);
      ps->sent += (double) sent;
    }
  /* the values as the push carries them (idempotent: a resend rounds
   * what was rounded) */
  for (int j = 0; ps->env.model && !ps->deferred && j < srv->n_ranges; j++)
    pol_wire_round (&ps->env, w->grad + srv->range[j].lo,
                    srv->range[j].hi - srv->range[j].lo);
  if (!resend)
    {
      ps->push_bytes += bytes;
      ps->dense_bytes += (double) len * sizeof (float);
      ps->pushed += (double) len;
    }
  if (ps->env.model && (ps->copy_grads || srv->n_ranges > 1))
    {
      m->grad = m->copy = g_new (float, len);
      shard_gather (srv, m->copy, w->grad);
    }
  else if (ps->env.model && !ps->deferred)
    m->grad = w->grad + lo;
  send_msg (ps, m, w->host, srv->host, bytes);
}

static void
on_compute_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  PsWorker *w = data;
  w->compute_ev = 0;
  if (ps->run.finished)
    return;
  w->pushes_missing = ps->env.servers;
  w->phase = PH_SEND;
  if (ps->rep)
    {
      /* the iteration ends with the last acknowledgement: one per range,
       * or from the primary itself where it holds no range */
      w->pushes_missing = 0;
      for (int s = 0; s < ps->env.servers; s++)
        {
          w->acks_missing[s] = MAX (ps->servers[s].n_ranges, 1);
          w->pushes_missing += w->acks_missing[s];
        }
    }
  if (w->arrived)
    memset (w->arrived, 0, ps->env.servers * sizeof (gboolean));
  for (int s = 0; s < ps->env.servers; s++)
    push_shard (ps, w, s, TRUE, FALSE);
}

/* Every shard of the pull for w->iter has arrived and its previous pushes
 * are out: record the blocked interval and compute. */
static void
start_compute (PsPolicy *ps, PsWorker *w)
{
  EngSim *sim = ps->env.sim;
  double now = eng_sim_now (sim);
  w->compute_start = now;
  w->phase = PH_COMPUTE;
  w->staleness = w->acc_staleness;
  w->hold_start = CLAMP (w->acc_hold_start, w->iter_start, now);
  w->hold_end = CLAMP (w->acc_hold_end, w->hold_start, now);
  span (ps, w->name, "recv", w->iter_start, w->hold_start, w->iter, 0);
  span (ps, w->name, "wait", w->hold_start, w->hold_end, w->iter, 0);
  span (ps, w->name, "recv", w->hold_end, now, w->iter, 0);
  w->replies_got = 0;
  w->acc_staleness = 0;
  w->acc_hold_start = w->acc_hold_end = 0;
  if (w->have)
    memset (w->have, 0, ps->env.servers * sizeof (gboolean));
  /* deferred: the batch is drawn now, its gradient computed when due */
  double t;
  const float *own[1] = { w->params };
  TrainStep st = { .n = 1, .first = w->id, .own = own,
                   .grads = ps->env.model && !ps->deferred ? &w->grad : NULL,
                   .drawn_into = ps->env.model && ps->deferred ? w->idx : NULL,
                   .seconds = &t };
  if (ps->sparse)
    {
      /* the batch its pull fetched the keys of */
      g_assert (w->next_ready);
      w->next_ready = FALSE;
      memcpy (w->keys, w->next_keys, (gsize) ps->env.servers * sizeof *w->keys);
      if (ps->deferred)
        memcpy (w->idx, w->next_idx, (gsize) ps->env.batch * sizeof *w->idx);
      st.drawn = ps->deferred ? w->idx : w->next_idx;
    }
  train_step (ps->steps, &st);
  if (st.grads)
    ps_weigh (ps, w->id, w->grad);
  w->compute = t;
  span (ps, w->name, "compute", now, now + t, w->iter, 0);
  w->compute_ev = eng_schedule (sim, t, on_compute_done, ps, w);
}

/* The worker's push of w->iter has fully arrived: close the iteration. */
static void
end_iteration (PsPolicy *ps, PsWorker *w)
{
  double now = eng_sim_now (ps->env.sim);
  double wait = w->hold_end - w->hold_start;
  double comm = (now - w->iter_start) - w->compute - wait;
  if (comm < 0) /* rounding only */
    comm = 0;
  pol_run_iteration (&ps->run, w->id, w->iter, w->iter_start, now, w->compute, comm, wait,
                     w->staleness);
  span (ps, w->name, "send", w->compute_start + w->compute, now, w->iter, 0);
  w->iter++;
  w->iter_start = now;
  w->phase = PH_RECV;
  if (w->replies_got == ps->env.servers)
    start_compute (ps, w);
}

static gint64
pull_need (PsPolicy *ps, gint64 iter)
{
  switch (ps->consistency)
    {
    case POL_BSP: return iter;
    case POL_SSP: return iter - ps->staleness;
    case POL_ASYNC: default: return G_MININT64;
    }
}

/* K of N: whether a pull for iteration `iter` may be answered: the accepted
 * gradients of every closed round are applied, and at least `iter` rounds. */
static gboolean
kofn_ready (PsPolicy *ps, gint64 iter)
{
  return ps->rounds_done == ps->open_round && ps->rounds_done >= iter;
}

/* Counts one more gradient of worker v applied at srv, keeping the least
 * count and how many workers are at it: the scan for the next least runs
 * once all workers have passed the old one, so O(1) amortized per update
 * (a scan per update made servers = workers cost W^3 per round). */
static void
applied_inc (PsPolicy *ps, PsServer *srv, int v)
{
  if (srv->applied[v]++ != srv->min_applied || --srv->n_at_min > 0)
    return;
  gint64 m = G_MAXINT64;
  int n = 0;
  for (int u = 0; u < ps->env.workers; u++)
    if (srv->applied[u] < m)
      {
        m = srv->applied[u];
        n = 1;
      }
    else if (srv->applied[u] == m)
      n++;
  srv->min_applied = m;
  srv->n_at_min = n;
}

/* pull = sparse: worker w's next batch is drawn (its first pull answer
 * draws it, where a dense run's compute would), its keys counted. */
static void
sparse_draw (PsPolicy *ps, PsWorker *w)
{
  if (w->next_ready)
    return;
  TrainStep st = { .n = 1, .first = w->id, .drawn_into = w->next_idx };
  train_step (ps->steps, &st);
  pol_sparse_count (ps->sparse, w->next_idx, w->next_keys);
  w->next_ready = TRUE;
}

/* Sends server srv's shard to worker w as the answer to its pull (pull =
 * sparse: the keys of w's next batch in it). */
static void
answer_pull (PsPolicy *ps, PsServer *srv, const PsPendingPull *p)
{
  PsWorker *w = &ps->workers[p->worker];
  gsize len = srv->n;
  double bytes = (double) len * sizeof (float);
  if (ps->sparse)
    {
      sparse_draw (ps, w);
      bytes = pol_sparse_bytes (w->next_keys[srv->id]);
    }
  ps->pull_bytes += bytes;
  double now = eng_sim_now (ps->env.sim);
  /* K of N: the worker joins the current round */
  gint64 iter = ps->kofn ? ps->rounds_done : p->iter;
  PsMsg *m = msg_new (ps, MSG_REPLY, p->worker, srv->id, iter);
  m->epoch = p->epoch;
  m->clock = ps->kofn ? ps->rounds_done : srv->min_applied;
  m->hold_start = p->since;
  m->hold_end = now;
  if (ps->env.model)
    {
      if (!srv->snap || srv->snap_version != srv->version)
        {
          snap_unref (srv->snap);
          srv->snap = snap_alloc (len, ps->spare[srv->id]);
          shard_gather (srv, srv->snap->data, ps->global);
          srv->snap_version = srv->version;
        }
      m->snap = snap_ref (srv->snap);
    }
  send_msg (ps, m, srv->host, w->host, bytes);
}

/* Answers, in registration order, every held pull whose bound now holds. */
static void
release_pulls (PsPolicy *ps, PsServer *srv)
{
  gint64 m = srv->min_applied;
  guint keep = 0;
  for (guint i = 0; i < srv->pending->len; i++)
    {
      PsPendingPull p = g_array_index (srv->pending, PsPendingPull, i);
      if (ps->kofn ? kofn_ready (ps, p.iter) : m >= p.need)
        answer_pull (ps, srv, &p);
      else
        g_array_index (srv->pending, PsPendingPull, keep++) = p;
    }
  g_array_set_size (srv->pending, keep);
}

/* Registers a pull and answers, in registration order, every held pull
 * whose bound now holds.  Outside K of N a held pull can become answerable
 * only when the least applied count grows, so the held pulls are scanned
 * only then, and the new one is answered at once or held. */
static void
hold_pull (PsPolicy *ps, PsServer *srv, int worker, gint64 iter, guint epoch)
{
  PsPendingPull p = { worker, iter, pull_need (ps, iter), eng_sim_now (ps->env.sim), epoch };
  if (ps->kofn)
    {
      g_array_append_val (srv->pending, p);
      release_pulls (ps, srv);
      return;
    }
  if (srv->min_applied != srv->released_min)
    {
      release_pulls (ps, srv);
      srv->released_min = srv->min_applied;
    }
  if (srv->min_applied >= p.need)
    answer_pull (ps, srv, &p);
  else
    g_array_append_val (srv->pending, p);
}

/* K of N with drop, round rounds_done - 1 just completed: every worker still
 * computing or sending for it abandons that step (its messages of the old
 * epoch are dropped) and is sent the parameters of the new round. */
static void
preempt_late (PsPolicy *ps, PsServer *srv)
{
  double now = eng_sim_now (ps->env.sim);
  gint64 closed = ps->rounds_done - 1;
  for (int v = 0; v < ps->env.workers; v++)
    {
      PsWorker *w = &ps->workers[v];
      if (w->down || w->phase == PH_RECV || w->accepted_round == closed)
        continue;
      if (w->compute_ev)
        eng_cancel (ps->env.sim, w->compute_ev);
      w->compute_ev = 0;
      w->epoch++;
      w->phase = PH_RECV;
      w->pushes_missing = 0;
      w->replies_got = 0;
      w->acc_staleness = 0;
      w->acc_hold_start = w->acc_hold_end = 0;
      w->iter_start = now;
      ps->late++;
      PsPendingPull p = { v, ps->rounds_done, 0, now, w->epoch };
      answer_pull (ps, srv, &p);
    }
}

/* Deferred: worker w's gradient, at the snapshot it still holds and on the
 * batch it drew, compressed as the push was (one server: the whole
 * vector), into ps->scratch. */
static const float *
deferred_gradient (PsPolicy *ps, PsWorker *w)
{
  const PolEnv *env = &ps->env;
  const float *own[1] = { w->params };
  TrainStep st = { .n = 1, .first = w->id, .drawn = w->idx, .own = own, .grads = &ps->scratch };
  train_step (ps->steps, &st);
  ps_weigh (ps, w->id, ps->scratch);
  if (ps->cmp)
    ps->cmp->apply (env->values, ps->scratch, w->memory, env->n_params, &w->rng);
  pol_wire_round (env, ps->scratch, env->n_params);
  return ps->scratch;
}

/* One optimizer step of server srv with `grad` (its shard).  With one
 * server the current version is the snapshot the replies share: stepped in
 * place when no one else holds it, else written into a fresh snapshot
 * (workers keep theirs) in the same pass as the step, with no copy. */
static void
server_step (PsPolicy *ps, PsServer *srv, const float *grad)
{
  if (ps->env.servers == 1 && srv->snap->ref > 1)
    {
      PsSnap *n = snap_alloc (srv->n, ps->spare[srv->id]);
      kern_optimizer_step_into (srv->opt[0], n->data, srv->snap->data, grad);
      snap_unref (srv->snap);
      srv->snap = n;
      ps->global = n->data;
    }
  else
    /* each range its own optimizer (every optimizer is elementwise, and
     * the ranges' step counts move together) */
    for (int j = 0; j < srv->n_ranges; j++)
      {
        kern_optimizer_step (srv->opt[j], ps->global + srv->range[j].lo, grad);
        grad += srv->range[j].hi - srv->range[j].lo;
      }
  srv->version++;
  if (ps->env.servers == 1)
    srv->snap_version = srv->version;
}

/* Bytes of range r's gradient on the wire: 4 per key, or what the
 * compressor sends for it. */
static double
range_bytes (PsPolicy *ps, int r)
{
  gsize len = ps->part->ranges[r].hi - ps->part->ranges[r].lo;
  return ps->cmp ? ps->cmp->wire_bytes (ps->env.values, len) : (double) len * sizeof (float);
}

/* The chain position (in the partition's chain) of range r's primary:
 * 0 until a takeover moves it. */
static int
chain_primary (const PsPolicy *ps, int r)
{
  return ps->takeover ? ps->live_chain[r * ps->replication] : 0;
}

/* The chain position that follows position `pos` in range r's chain of
 * live servers: -1 at its tail, -2 when `pos` is no longer in it (or is
 * its primary's, which takes no forward). */
static int
chain_next (const PsPolicy *ps, int r, int pos)
{
  if (!ps->takeover)
    return pos + 1 < ps->replication ? pos + 1 : -1;
  const int *c = ps->live_chain + r * ps->replication;
  int n = ps->live_n[r];
  for (int i = 0; i < n; i++)
    if (c[i] == pos)
      return i + 1 < n ? c[i + 1] : -1;
  return -2;
}

/* Sends worker m->worker's gradient of range r to position `hop` of the
 * range's chain, from server `from`.  The gradient is read from the
 * worker's buffer, which stays as it is until the push is acknowledged. */
static void
forward_range (PsPolicy *ps, const PsServer *from, const PsMsg *m, int r, int hop)
{
  PsWorker *w = &ps->workers[m->worker];
  int to = pol_partition_chain (ps->part, r, hop);
  PsMsg *f = msg_new (ps, MSG_REPLICA, m->worker, to, m->iter);
  f->src_srv = from->id;
  f->epoch = m->epoch;
  f->range = r;
  f->hop = hop;
  if (ps->env.model)
    f->grad = w->grad + ps->part->ranges[r].lo;
  send_msg (ps, f, from->host, ps->servers[to].host, range_bytes (ps, r));
}

/* The tail of range r's chain (or a primary holding no range, r = -1)
 * acknowledges worker m->worker's push of m->iter to server `owner`. */
static void
send_ack (PsPolicy *ps, const PsServer *from, const PsMsg *m, int owner, int r)
{
  PsMsg *a = msg_new (ps, MSG_ACK, m->worker, owner, m->iter);
  a->src_srv = from->id;
  a->epoch = m->epoch;
  a->range = r;
  send_msg (ps, a, from->host, ps->workers[m->worker].host, POL_PS_ACK_BYTES);
}

/* The primary SRV has applied push M: each of its ranges goes on to the
 * next server of the range's chain. */
static void
replicate_push (PsPolicy *ps, PsServer *srv, const PsMsg *m)
{
  int first = ps->part->server_first[srv->id];
  if (srv->n_ranges == 0)
    send_ack (ps, srv, m, srv->id, -1);
  for (int j = 0; j < srv->n_ranges; j++)
    {
      int r = ps->part->by_server[first + j];
      int next = chain_next (ps, r, chain_primary (ps, r));
      if (next < 0) /* the primary is the chain's only live server */
        send_ack (ps, srv, m, srv->id, r);
      else
        forward_range (ps, srv, m, r, next);
    }
}

/* Replica position m->hop of range m->range has applied the gradient:
 * forward it down the chain, or, at the tail, acknowledge it to the
 * worker. */
static void
on_replica_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, double start,
                 double end)
{
  PsPolicy *ps = ctx;
  PsMsg *m = data;
  PsServer *srv = &ps->servers[m->server];
  if (ps->run.finished)
    return;
  int r = m->range;
  gsize len = ps->part->ranges[r].hi - ps->part->ranges[r].lo;
  int next = chain_next (ps, r, m->hop);
  if (next == -2 || (ps->takeover && m->hop == chain_primary (ps, r)))
    {
      /* its place in the chain was taken over while it waited */
      msg_done (ps, m);
      return;
    }
  pol_replicas_apply (ps->rep, r, m->hop, m->worker, m->iter, m->grad);
  span (ps, srv->name, "update", start, end, m->iter, (double) len * sizeof (float));
  if (next >= 0)
    forward_range (ps, srv, m, r, next);
  else
    send_ack (ps, srv, m, ps->part->owner[r], r);
  msg_done (ps, m);
}

/* A forwarded gradient reached replica SRV: it waits for the server's
 * update queue like a push, and costs the update of its range. */
static void
got_replica (PsPolicy *ps, PsServer *srv, PsMsg *m)
{
  gsize len = ps->part->ranges[m->range].hi - ps->part->ranges[m->range].lo;
  double cost = ps->env.update_time (ps->env.compute_ctx, len);
  eng_resource_request (srv->fifo, cost, on_replica_done, ps, m);
}

/* An acknowledgement reached worker W: once every range of a server is
 * acknowledged the worker pulls from it again (that pull tells the server
 * the push counts for its bound); the iteration ends with the last, and
 * the gradient then counts as applied (every replica of every range holds
 * it and the worker knows). */
static void
got_ack (PsPolicy *ps, PsWorker *w, PsMsg *m)
{
  int s = m->server;
  gint64 iter = m->iter;
  msg_done (ps, m);
  if (ps->takeover && (w->phase != PH_SEND || iter != w->iter || w->acks_missing[s] == 0))
    return; /* a push resent after a takeover was acknowledged twice */
  g_assert (w->acks_missing[s] > 0 && w->pushes_missing > 0);
  if (--w->acks_missing[s] == 0)
    {
      PsMsg *p = msg_new (ps, MSG_PULL, w->id, s, iter + 1);
      p->acked = TRUE;
      send_msg (ps, p, w->host, ps->servers[s].host, 0);
    }
  if (--w->pushes_missing > 0)
    return;
  double now = eng_sim_now (ps->env.sim);
  end_iteration (ps, w);
  ps->run.updates++;
  ps->run.samples += ps_batch (&ps->env, w->id);
  pol_run_progress (&ps->run, now);
  pol_run_round_end (&ps->run, ps->global, ps->run.updates >= ps->total);
}

/* recover = checkpoint: server srv saves its keys each time every worker
 * has checkpoint_every more gradients applied there (min_applied grows by
 * one at a time), at no cost. */
static void
take_checkpoint (PsPolicy *ps, PsServer *srv)
{
  gint64 c = srv->min_applied;
  if (c <= srv->ckpt_at || c % ps->sf.checkpoint_every != 0)
    return;
  srv->ckpt_at = c;
  for (int j = 0; ps->env.model && j < srv->n_ranges; j++)
    memcpy (ps->ckpt + srv->range[j].lo, ps->global + srv->range[j].lo,
            (srv->range[j].hi - srv->range[j].lo) * sizeof (float));
}

static void
on_update_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, double start,
                double end)
{
  PsPolicy *ps = ctx;
  PsMsg *m = data;
  PsServer *srv = &ps->servers[m->server];
  if (ps->run.finished)
    return;
  gsize len = srv->n;
  gboolean round_done = FALSE;
  g_assert (!srv->down && m->dst_epoch == srv->epoch); /* a crash drops its queue */
  if (ps->env.model && ps->deferred)
    m->grad = deferred_gradient (ps, &ps->workers[m->worker]);
  if (m->accepted && ++ps->accepted_applied == (ps->rounds_done + 1) * ps->wait_for)
    {
      ps->rounds_done++;
      round_done = TRUE;
    }
  if (ps->consistency == POL_BSP)
    {
      /* one optimizer step per round, with the mean of its gradients: the
       * round ends when every worker's gradient of it (K of N: the K
       * accepted ones) is applied; kept late gradients join the next mean */
      if (ps->env.model)
        for (gsize i = 0; i < len; i++)
          srv->round_sum[i] += m->grad[i];
      srv->round_n++;
      if (ps->kofn ? round_done : srv->round_n == ps->env.workers)
        {
          if (ps->env.model)
            {
              float inv = 1.0f / (float) srv->round_n;
              for (gsize i = 0; i < len; i++)
                srv->round_sum[i] *= inv;
              server_step (ps, srv, srv->round_sum);
              memset (srv->round_sum, 0, len * sizeof (float));
            }
          srv->round_n = 0;
          srv->rounds++;
        }
    }
  else if (ps->env.model)
    server_step (ps, srv, m->grad);
  span (ps, srv->actor, "update", start, end, m->iter, (double) len * sizeof (float));
  if (ps->takeover)
    srv->held[m->worker] = m->iter + 1;
  if (ps->rep)
    {
      /* counted once the chains acknowledge it */
      replicate_push (ps, srv, m);
      msg_done (ps, m);
      return;
    }
  applied_inc (ps, srv, m->worker);
  if (ps->ckpt)
    take_checkpoint (ps, srv);
  /* a gradient counts once every shard has applied it (once: a gradient
   * applied again after a crash counted the first time) */
  gboolean first = !srv->counted || m->iter >= srv->counted[m->worker];
  if (srv->counted && first)
    srv->counted[m->worker] = m->iter + 1;
  if (first && ++ps->grad_shards[m->worker] % ps->env.servers == 0)
    {
      ps->run.updates++;
      ps->run.samples += ps_batch (&ps->env, m->worker);
      pol_run_progress (&ps->run, end);
      pol_run_round_end (&ps->run, ps->global,
                         ps->kofn ? ps->rounds_done >= ps->env.iterations
                                  : ps->run.updates >= ps->total);
    }
  if (!ps->run.finished)
    hold_pull (ps, srv, m->worker, m->iter + 1, m->epoch);
  if (!ps->run.finished && round_done && !ps->late_keep)
    preempt_late (ps, srv);
  msg_done (ps, m);
}

/* A server's reply M reached worker W: its shard of the parameters (a
 * reference to the snapshot with one server, a copy of the range with
 * several), the staleness and the longest hold so far; the worker computes
 * once every server has replied and no push of its own is pending. */
static void
got_reply (PsPolicy *ps, PsWorker *w, PsServer *srv, PsMsg *m)
{
  if (ps->takeover && w->have[srv->id])
    {
      /* a pull resent after a takeover was answered twice */
      msg_done (ps, m);
      return;
    }
  if (ps->kofn)
    {
      g_assert (m->iter >= w->iter);
      w->iter = m->iter;
    }
  /* the worker no longer needs its copy: its gradient is computed */
  if (ps->env.model && ps->env.servers == 1)
    {
      /* take the message's reference to the snapshot */
      snap_unref (w->snap);
      w->snap = m->snap;
      m->snap = NULL;
      w->params = w->snap->data;
    }
  else if (ps->env.model && !ps->shared_global)
    shard_scatter (srv, w->params, m->snap->data);
  w->acc_staleness = MAX (w->acc_staleness, m->iter - m->clock);
  if (w->have)
    w->have[srv->id] = TRUE;
  if (w->replies_got == 0
      || m->hold_end - m->hold_start > w->acc_hold_end - w->acc_hold_start)
    {
      w->acc_hold_start = m->hold_start;
      w->acc_hold_end = m->hold_end;
    }
  msg_done (ps, m);
  if (++w->replies_got == ps->env.servers && w->pushes_missing == 0)
    start_compute (ps, w);
}

/* Worker W's gradient M reached server SRV: with wait_for, accepted into
 * the open round or late (kept or dropped); an applied one waits for the
 * server's update queue, a dropped one records the worker's next pull at
 * once.  The worker's iteration ends with its last push. */
static void
got_grad (PsPolicy *ps, PsWorker *w, PsServer *srv, PsMsg *m)
{
  gboolean apply = TRUE;
  if (ps->crashes)
    {
      gboolean counted = m->resend;
      if (!m->resend && w->arrived)
        w->arrived[srv->id] = TRUE;
      if (m->iter < srv->applied[m->worker])
        {
          /* resent after a crash, and applied before it in a step that
           * stands: only the pull it carries is recorded */
          hold_pull (ps, srv, m->worker, m->iter + 1, m->epoch);
          msg_done (ps, m);
        }
      else
        {
          double cost = ps->env.update_time (ps->env.compute_ctx, srv->n);
          eng_resource_request (srv->fifo, cost, on_update_done, ps, m);
        }
      if (!counted && --w->pushes_missing == 0)
        end_iteration (ps, w);
      return;
    }
  if (ps->kofn && m->iter == ps->open_round)
    {
      m->accepted = TRUE;
      w->accepted_round = m->iter;
      if (++ps->got == ps->wait_for)
        {
          ps->open_round++;
          ps->got = 0;
        }
    }
  else if (ps->kofn)
    {
      g_assert (m->iter < ps->open_round);
      ps->late++;
      apply = ps->late_keep;
    }
  if (apply && ps->takeover && m->iter < srv->held[m->worker])
    {
      /* resent after a takeover, and held here: on down the chain */
      replicate_push (ps, srv, m);
      msg_done (ps, m);
    }
  else if (apply)
    {
      double cost = ps->env.update_time (ps->env.compute_ctx, srv->n);
      eng_resource_request (srv->fifo, cost, on_update_done, ps, m);
    }
  else
    {
      /* dropped: the worker's next pull is recorded at once */
      hold_pull (ps, srv, m->worker, m->iter + 1, m->epoch);
      msg_done (ps, m);
    }
  if (!ps->rep && --w->pushes_missing == 0)
    end_iteration (ps, w);
}

/* Whether M is lost to a server crash: sent by a server that has crashed
 * since, or sent to one that is down or has crashed since. */
static gboolean
lost_to_crash (PsPolicy *ps, const PsMsg *m)
{
  if (m->src_srv >= 0 && ps->servers[m->src_srv].epoch != m->src_epoch)
    return TRUE;
  if (m->kind != MSG_PULL && m->kind != MSG_GRAD && m->kind != MSG_REPLICA)
    return FALSE;
  const PsServer *dst = &ps->servers[m->server];
  return dst->down || dst->epoch != m->dst_epoch;
}

static void
on_message (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, const NetTransfer *t)
{
  PsPolicy *ps = ctx;
  PsMsg *m = data;
  if (ps->run.finished)
    return;
  PsWorker *w = &ps->workers[m->worker];
  PsServer *srv = &ps->servers[m->server];
  if ((ps->crashes || ps->takeover) && lost_to_crash (ps, m))
    {
      msg_done (ps, m);
      return;
    }
  if (m->kind != MSG_PULL && m->epoch != w->epoch)
    {
      /* sent by or to the worker before it failed: lost */
      msg_done (ps, m);
      return;
    }
  switch (m->kind)
    {
    case MSG_PULL:
      /* the push of m->iter - 1 is held by every replica (counted once: a
       * pull resent after a takeover may say it again) */
      if (m->acked && srv->applied[m->worker] == m->iter - 1)
        applied_inc (ps, srv, m->worker);
      hold_pull (ps, srv, m->worker, m->iter, m->epoch);
      msg_done (ps, m);
      return;
    case MSG_REPLICA:
      got_replica (ps, srv, m);
      return;
    case MSG_ACK:
      got_ack (ps, w, m);
      return;
    case MSG_REPLY:
      got_reply (ps, w, srv, m);
      return;
    case MSG_GRAD:
      got_grad (ps, w, srv, m);
      return;
    }
  (void) t;
}

static void
send_pull (PsPolicy *ps, PsWorker *w)
{
  for (int s = 0; s < ps->env.servers; s++)
    {
      PsMsg *m = msg_new (ps, MSG_PULL, w->id, s, w->iter);
      send_msg (ps, m, w->host, ps->servers[s].host, 0);
    }
}

/* The worker is back: it pulls fresh parameters for the iteration it had
 * not finished and starts that iteration anew. */
static void
on_restart (EngSim *sim, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  PsWorker *w = data;
  w->restart_ev = 0;
  if (ps->run.finished)
    return;
  w->down = FALSE;
  w->phase = PH_RECV;
  w->iter_start = eng_sim_now (sim);
  w->replies_got = 0;
  w->pushes_missing = 0;
  w->acc_staleness = 0;
  w->acc_hold_start = w->acc_hold_end = 0;
  send_pull (ps, w);
}

static void
on_failure (EngSim *sim, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  const PolFailure *f = data;
  PsWorker *w = &ps->workers[f->worker];
  double now = eng_sim_now (sim);
  const char *lost;
  if (ps->run.finished)
    return;
  if (w->down)
    {
      /* already down: the later of the two restarts wins */
      lost = "idle";
      if (now + f->restart > w->up_at)
        {
          eng_cancel (sim, w->restart_ev);
          w->up_at = now + f->restart;
          w->restart_ev = eng_schedule_at (sim, w->up_at, on_restart, ps, w);
        }
    }
  else
    {
      if (w->compute_ev)
        {
          eng_cancel (sim, w->compute_ev);
          w->compute_ev = 0;
          lost = "compute";
        }
      else if (w->pushes_missing > 0)
        lost = "send";
      else
        lost = "recv";
      w->epoch++;
      w->down = TRUE;
      w->pushes_missing = 0;
      w->replies_got = 0;
      w->up_at = now + f->restart;
      w->restart_ev = eng_schedule_at (sim, w->up_at, on_restart, ps, w);
    }
  span (ps, w->name, "idle", now, now + f->restart, w->iter, 0);
  if (ps->env.rec.failure)
    ps->env.rec.failure (ps->env.rec.ctx, w->id, now, now + f->restart, w->iter, lost);
}

/* Server srv is back from a crash (replication = 1): its keys hold the
 * initial model's values (reinit) or its last checkpoint's, with fresh
 * optimizer state and an empty round; its per-worker counts keep what
 * stands (BSP: the rounds it stepped; SSP and async: every gradient it
 * applied, whose effect on the values is lost). */
static void
server_restore (PsPolicy *ps, PsServer *srv)
{
  const PolEnv *env = &ps->env;
  if (env->model)
    {
      const float *src = ps->sf.recover == POL_RECOVER_CHECKPOINT ? ps->ckpt : ps->init;
      if (env->servers == 1)
        {
          /* the workers keep the snapshots they hold */
          PsSnap *n = snap_new (src, srv->n, ps->spare[srv->id]);
          snap_unref (srv->snap);
          srv->snap = n;
          ps->global = n->data;
        }
      for (int j = 0; j < srv->n_ranges; j++)
        {
          gsize lo = srv->range[j].lo, len = srv->range[j].hi - lo;
          if (env->servers != 1)
            memcpy (ps->global + lo, src + lo, len * sizeof (float));
          kern_optimizer_free (srv->opt[j]);
          srv->opt[j] = kern_optimizer_new (&env->opt, len);
        }
      if (srv->round_sum)
        memset (srv->round_sum, 0, srv->n * sizeof (float));
    }
  srv->round_n = 0;
  srv->version++;
  if (env->servers == 1)
    srv->snap_version = srv->version;
  if (ps->consistency == POL_BSP)
    for (int v = 0; v < env->workers; v++)
      srv->applied[v] = srv->rounds;
  srv->min_applied = G_MAXINT64;
  for (int v = 0; v < env->workers; v++)
    srv->min_applied = MIN (srv->min_applied, srv->applied[v]);
  srv->n_at_min = 0;
  for (int v = 0; v < env->workers; v++)
    srv->n_at_min += srv->applied[v] == srv->min_applied;
  srv->released_min = srv->min_applied;
}

/* Server srv is back: every worker sends it again what it lost.  A worker
 * holding srv's reply for its next compute needs nothing; one whose push
 * of its current iteration had not arrived sends it; any other worker
 * that has pushed sends its last push again (srv applies it unless a step
 * that stands holds it, and records the pull that follows it); a worker
 * that has never pushed pulls. */
static void
server_resends (PsPolicy *ps, PsServer *srv)
{
  int s = srv->id;
  for (int v = 0; v < ps->env.workers; v++)
    {
      PsWorker *w = &ps->workers[v];
      if (w->down || w->have[s] || w->phase == PH_COMPUTE)
        continue;
      if (w->phase == PH_SEND)
        push_shard (ps, w, s, FALSE, w->arrived[s]);
      else if (w->iter > 0)
        push_shard (ps, w, s, FALSE, TRUE);
      else
        {
          PsMsg *m = msg_new (ps, MSG_PULL, w->id, s, w->iter);
          send_msg (ps, m, w->host, srv->host, 0);
        }
    }
}

static void
on_server_restart (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  PsServer *srv = data;
  srv->restart_ev = 0;
  if (ps->run.finished)
    return;
  srv->down = FALSE;
  srv->epoch++;
  server_restore (ps, srv);
  server_resends (ps, srv);
}

/* Range r's chain loses partition chain position `pos` (a crashed
 * server's). */
static void
chain_drop (PsPolicy *ps, int r, int pos)
{
  int *c = ps->live_chain + r * ps->replication;
  int n = 0;
  for (int i = 0; i < ps->live_n[r]; i++)
    if (c[i] != pos)
      c[n++] = c[i];
  ps->live_n[r] = n;
}

/* Worker w sends logical server srv again what srv may have lost in a
 * takeover: an unacknowledged push (the primary skips what it holds, so do
 * the copies down the chain); where srv itself moved, also the pull it has
 * no answer to (acknowledged where it follows a push). */
static void
takeover_resends (PsPolicy *ps, PsWorker *w, PsServer *srv, gboolean moved)
{
  int s = srv->id;
  if (w->have[s] || w->phase == PH_COMPUTE)
    return;
  if (w->phase == PH_SEND && w->acks_missing[s] > 0)
    {
      push_shard (ps, w, s, FALSE, TRUE);
      return;
    }
  if (!moved)
    return;
  gint64 iter = w->phase == PH_SEND ? w->iter + 1 : w->iter;
  PsMsg *m = msg_new (ps, MSG_PULL, w->id, s, iter);
  m->acked = iter > 0;
  send_msg (ps, m, w->host, srv->host, 0);
}

/* `detect` seconds after server `dead` crashed (replication >= 2): every
 * chain drops it, and each range it was the primary of moves to the next
 * live server of its chain, whose copy (parameters, optimizer state,
 * round, gradients held) becomes the primary's; the workers then resend
 * what was not acknowledged to every server whose chains changed. */
static void
on_takeover (EngSim *sim, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  int dead = GPOINTER_TO_INT (data);
  if (ps->run.finished)
    return;
  const PolPartition *part = ps->part;
  int S = ps->env.servers, k = ps->replication;
  gboolean *changed = g_new0 (gboolean, S), *moved = g_new0 (gboolean, S);
  for (int r = 0; r < part->n_ranges; r++)
    {
      int *c = ps->live_chain + r * k, pos = -1;
      for (int i = 0; i < ps->live_n[r]; i++)
        if (pol_partition_chain (part, r, c[i]) == dead)
          pos = c[i];
      if (pos < 0)
        continue;
      int owner = part->owner[r];
      gboolean primary = pos == c[0];
      chain_drop (ps, r, pos);
      changed[owner] = TRUE;
      g_assert (ps->live_n[r] > 0); /* validated: a chain keeps a server */
      if (!primary)
        continue;
      /* the next live server takes range r over: logical server `owner`
       * (one range: partition = range) now runs there */
      PsServer *srv = &ps->servers[owner];
      int to = pol_partition_chain (part, r, c[0]);
      gsize lo = part->ranges[r].lo;
      pol_replicas_promote (ps->rep, r, c[0], ps->env.model ? ps->global + lo : NULL,
                            srv->opt ? &srv->opt[0] : NULL, srv->round_sum, &srv->round_n,
                            srv->held);
      if (srv->on == srv->id)
        eng_resource_free (srv->fifo);
      srv->fifo = ps->servers[to].fifo;
      srv->on = to;
      srv->host = ps->servers[to].host;
      srv->actor = ps->servers[to].name;
      srv->down = FALSE;
      srv->epoch++;
      srv->version++;
      moved[owner] = TRUE;
    }
  double now = eng_sim_now (sim);
  if (ps->env.rec.server_failure)
    ps->env.rec.server_failure (ps->env.rec.ctx, dead, ps->servers[dead].up_at, now, now,
                                ps->servers[dead].min_applied, "ranges");
  for (int v = 0; v < ps->env.workers; v++)
    for (int s = 0; s < S; s++)
      if (changed[s])
        takeover_resends (ps, &ps->workers[v], &ps->servers[s], moved[s]);
  g_free (changed);
  g_free (moved);
}

/* Server `p` crashes (replication >= 2): it stays out for the rest of the
 * run.  Every logical server it runs stops (queue, held pulls and
 * messages in flight lost) until the takeover, `detect` seconds later. */
static void
server_out (PsPolicy *ps, int p)
{
  EngSim *sim = ps->env.sim;
  PsServer *phys = &ps->servers[p];
  if (phys->on != p || phys->down)
    return; /* out already */
  EngResource *fifo = phys->fifo;
  for (int s = 0; s < ps->env.servers; s++)
    {
      PsServer *srv = &ps->servers[s];
      if (srv->on != p)
        continue;
      srv->down = TRUE;
      srv->epoch++;
      g_array_set_size (srv->pending, 0);
      srv->fifo = NULL;
    }
  eng_resource_free (fifo);
  EngResource *fresh = eng_resource_new (sim);
  for (int s = 0; s < ps->env.servers; s++)
    if (ps->servers[s].on == p)
      ps->servers[s].fifo = fresh;
  double now = eng_sim_now (sim);
  phys->up_at = now; /* the crash time, for the record */
  span (ps, phys->name, "idle", now, now + ps->sf.detect, phys->min_applied, 0);
  eng_schedule (sim, ps->sf.detect, on_takeover, ps, GINT_TO_POINTER (p));
}

/* A server crashes: it stops at once; its update queue, its held pulls and
 * its messages in flight either way are lost (epochs); replication = 1: its
 * keys too, until its restart. */
static void
on_server_crash (EngSim *sim, gpointer ctx, gpointer data)
{
  PsPolicy *ps = ctx;
  const PolServerFailure *f = data;
  PsServer *srv = &ps->servers[f->server];
  double now = eng_sim_now (sim);
  if (ps->run.finished)
    return;
  if (ps->takeover)
    {
      server_out (ps, f->server);
      return;
    }
  if (srv->down)
    {
      /* already down: the later of the two restarts wins */
      if (now + f->restart > srv->up_at)
        {
          eng_cancel (sim, srv->restart_ev);
          srv->up_at = now + f->restart;
          srv->restart_ev = eng_schedule_at (sim, srv->up_at, on_server_restart, ps, srv);
        }
    }
  else
    {
      srv->down = TRUE;
      srv->epoch++;
      eng_resource_free (srv->fifo);
      srv->fifo = eng_resource_new (sim);
      g_array_set_size (srv->pending, 0);
      srv->up_at = now + f->restart;
      srv->restart_ev = eng_schedule_at (sim, srv->up_at, on_server_restart, ps, srv);
    }
  span (ps, srv->name, "idle", now, now + f->restart, srv->rounds, 0);
  if (ps->env.rec.server_failure)
    ps->env.rec.server_failure (ps->env.rec.ctx, srv->id, now, NAN, now + f->restart,
                                srv->min_applied, "keys");
}

/* PS's workers: names, hosts, and where the math runs their parameters
 * (shared, own, or the server's snapshot), gradient and batch buffers
 * (unless the steps are deferred to the shared scratch), compression memory
 * and random stream. */
static void
workers_new (PsPolicy *ps)
{
  const PolEnv *env = &ps->env;
  int W = env->workers, S = env->servers;
  gsize P = env->n_params;
  ps->workers = g_new0 (PsWorker, W);
  for (int w = 0; w < W; w++)
    {
      PsWorker *wk = &ps->workers[w];
      wk->id = w;
      wk->name = g_strdup_printf ("worker%d", w);
      wk->host = w;
      wk->accepted_round = -1;
      if (ps->rep)
        wk->acks_missing = g_new0 (int, S);
      if (ps->crashes || ps->takeover)
        {
          wk->have = g_new0 (gboolean, S);
          wk->arrived = g_new0 (gboolean, S);
        }
      if (env->model)
        {
          if (ps->shared_global)
            wk->params = ps->global;
          else if (S > 1)
            wk->params = wk->own = g_new0 (float, P);
          if (!ps->deferred)
            {
              wk->grad = g_new0 (float, P);
            }
          else
            wk->idx = g_new (int, ps_max_batch (env));
          if ((ps->cmp && ps->cmp->feedback) || (ps->filter && ps->filter->feedback))
            wk->memory = g_new0 (float, P);
          if (ps->sparse_pull)
            {
              wk->next_idx = g_new (int, env->batch);
              wk->next_keys = g_new0 (gint64, S);
              wk->keys = g_new0 (gint64, S);
            }
          eng_rng_init (&wk->rng, env->seed, POL_COMPRESS_STREAM + (guint64) w);
        }
    }
}

/* PS's servers: each with its shard of the parameters, its update queue and
 * optimizer, and the BSP round's sum; one server alone keeps the parameters
 * in the snapshot its replies share. */
static void
servers_new (PsPolicy *ps)
{
  const PolEnv *env = &ps->env;
  int W = env->workers, S = env->servers;
  gsize P = env->n_params;
  ps->servers = g_new0 (PsServer, S);
  for (int s = 0; s < S; s++)
    {
      PsServer *srv = &ps->servers[s];
      srv->id = s;
      srv->name = g_strdup_printf ("server%d", s);
      srv->actor = srv->name;
      srv->on = s;
      srv->host = W + s;
      if (ps->takeover)
        srv->held = g_new0 (gint64, W);
      int a = ps->part->server_first[s], b = ps->part->server_first[s + 1];
      srv->range = ps->srv_ranges + a;
      srv->n_ranges = b - a;
      srv->n = ps->part->server_keys[s];
      srv->fifo = eng_resource_new (env->sim);
      srv->applied = g_new0 (gint64, W);
      srv->n_at_min = W;
      srv->pending = g_array_new (FALSE, FALSE, sizeof (PsPendingPull));
      if (ps->crashes)
        srv->counted = g_new0 (gint64, W);
      if (env->model)
        {
          srv->opt = g_new (KernOptimizer *, srv->n_ranges);
          for (int j = 0; j < srv->n_ranges; j++)
            srv->opt[j] = kern_optimizer_new (&env->opt, srv->range[j].hi - srv->range[j].lo);
          if (ps->consistency == POL_BSP)
            srv->round_sum = g_new0 (float, srv->n);
        }
    }
  if (env->model && S == 1)
    {
      /* one server: its parameters live in the snapshot replies share */
      PsServer *srv = &ps->servers[0];
      srv->snap = snap_new (ps->global, P, ps->spare[0]);
      srv->snap_version = srv->version;
      g_free (ps->global);
      ps->global = srv->snap->data;
    }
}

/* The placement [policy] partition and virtual_nodes give P keys on S
 * servers (the ring seeded with the scenario's seed). */
static PolPartition *
ps_partition_of (const BaseValues *v, gsize P, int S, guint64 seed)
{
  PolPartitionKind kind = (PolPartitionKind) base_values_int (v, "policy.partition");
  int k = (int) CLAMP (base_values_int (v, "policy.replication"), 1, S);
  return pol_partition_new (kind, P, S, (int) base_values_int (v, "policy.virtual_nodes"), k,
                            seed);
}

/* Where the keys live (the partition, each server's ranges, the
 * imbalance row) and their copies: the replicas and, for a takeover, each
 * range's live chain. */
static void
placement_new (PsPolicy *ps)
{
  const PolEnv *env = &ps->env;
  int W = env->workers, S = env->servers;
  ps->part = ps_partition_of (env->values, env->n_params, S, env->seed);
  ps->srv_ranges = g_new (PolRange, MAX (ps->part->n_ranges, 1));
  for (int j = 0; j < ps->part->n_ranges; j++)
    ps->srv_ranges[j] = ps->part->ranges[ps->part->by_server[j]];
  if (env->rec.param && ps->part->kind == POL_PARTITION_HASH)
    {
      char text[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_dtostr (text, sizeof text, pol_partition_imbalance (ps->part));
      env->rec.param (env->rec.ctx, "policy.imbalance", text);
    }

  ps->replication = (int) base_values_int (env->values, "policy.replication");
  g_assert (ps->replication >= 1 && ps->replication <= MAX (S, 1));
  if (ps->replication > 1)
    ps->rep = pol_replicas_new (ps->part, ps->replication, W, ps->global, &env->opt,
                                ps->consistency == POL_BSP);
  if (ps->takeover)
    {
      int n = MAX (ps->part->n_ranges, 1);
      ps->live_chain = g_new (int, n * ps->replication);
      ps->live_n = g_new (int, n);
      for (int r = 0; r < ps->part->n_ranges; r++)
        {
          ps->live_n[r] = ps->replication;
          for (int h = 0; h < ps->replication; h++)
            ps->live_chain[r * ps->replication + h] = h;
        }
    }
}

/* TRUE, with *error set, where ps_create's settings cannot run together. */
static gboolean
ps_refused (const PsPolicy *ps, GError **error)
{
  int W = ps->env.workers, S = ps->env.servers;

  if (ps->sparse_pull && ps->env.batches)
    g_set_error (error, POL_ERROR, 0,
                 "[policy] balance: speed gives the workers batches of several sizes, which "
                 "pull = sparse cannot fetch keys for; set pull = dense or balance = none");
  else if (ps->kofn && S != 1)
    g_set_error (error, POL_ERROR, 0,
                 "ps: waiting for %" G_GINT64_FORMAT " of %d workers needs one server, not %d",
                 ps->wait_for, W, S);
  else if (ps->env.n_failures > 0 && S != 1)
    g_set_error (error, POL_ERROR, 0,
                 "ps: worker failures need one server, not %d", S);
  else
    return FALSE;
  return TRUE;
}

static PolPolicy *
ps_create (const PolEnv *env, GError **error)
{
  PsPolicy *ps = g_new0 (PsPolicy, 1);
  ps->env = *env;
  pol_run_init (&ps->run, &ps->env);
  int W = env->workers, S = env->servers;
  gsize P = env->n_params;
  ps->total = env->iterations * W;
  ps->consistency = (PolConsistency) base_values_int (env->values, "policy.consistency");
  ps->cmp = pol_compress_of (env->values);
  ps->filter = pol_filter_of (env->values);
  ps->staleness = base_values_int (env->values, "policy.staleness");
  ps->wait_for = base_values_int (env->values, "policy.wait_for");
  ps->late_keep = base_values_int (env->values, "policy.late") != 0;
  /* ps_check_model made sure the model lists its keys */
  ps->sparse_pull = base_values_int (env->values, "policy.pull") == POL_PULL_SPARSE
                    && env->model && env->model->ops->touched;
  ps->kofn = ps->consistency == POL_BSP && ps->wait_for > 0 && ps->wait_for < W;
  ps->sf = env->server_failures;
  gint64 k_rep = base_values_int (env->values, "policy.replication");
  ps->crashes = ps->sf.n > 0 && k_rep == 1;
  ps->takeover = ps->sf.n > 0 && k_rep > 1;
  ps->copy_grads = env->n_failures > 0 || ps->sf.n > 0;
  /* a filter decides a push's bytes from the gradient, so it is computed
   * before the push */
  ps->deferred = env->model && S == 1 && !ps->copy_grads && !env->host_timed && !ps->filter;
  if (ps_refused (ps, error))
    {
      g_free (ps);
      return NULL;
    }
  if (!ps->kofn)
    ps->wait_for = 0;
  ps->shared_global = env->model && S > 1 && ps->consistency == POL_BSP;
  /* the parameters only where the math runs: a timing-only model may be of
   * any size (its messages carry sizes, not floats) */
  if (env->model)
    {
      ps->global = g_new0 (float, P);
      env->model->ops->init (env->model, ps->global, env->seed);
      if (ps->crashes)
        ps->init = g_memdup2 (ps->global, P * sizeof (float));
      if (ps->crashes && ps->sf.recover == POL_RECOVER_CHECKPOINT)
        ps->ckpt = g_memdup2 (ps->global, P * sizeof (float));
    }
  ps->grad_shards = g_new0 (gint64, W);
  ps->live = g_hash_table_new_full (g_direct_hash, g_direct_equal, msg_free, NULL);
  ps->spare = g_new (GPtrArray *, S);
  for (int s = 0; s < S; s++)
    ps->spare[s] = g_ptr_array_new_with_free_func (g_free);

  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? env->workers : 0, .batch = ps_max_batch (env),
                            .batches = env->batches,
                            .slots = 1, .host_timed = env->host_timed,
                            .compute_time = env->compute_time, .ctx = env->compute_ctx,
                            /* pulled over the wire: rounded as
                             * [numerics] communication says */
                            .wire_params = TRUE };
  ps->steps = train_steps_new (&setup);

  placement_new (ps);
  workers_new (ps);
  if (ps->deferred)
    ps->scratch = g_new0 (float, P);
  servers_new (ps);
  if (ps->sparse_pull)
    ps->sparse = pol_sparse_new (env->model, env->train, env->batch, ps->part);
  return (PolPolicy *) ps;
}

static void
ps_start (PolPolicy *p)
{
  PsPolicy *ps = (PsPolicy *) p;
  pol_run_start (&ps->run, ps->global); /* the initial model, at time 0 */
  for (int i = 0; i < ps->env.n_failures; i++)
    {
      const PolFailure *f = &ps->env.failures[i];
      g_assert (f->worker >= 0 && f->worker < ps->env.workers);
      eng_schedule_at (ps->env.sim, f->at, on_failure, ps, (gpointer) f);
    }
  for (int w = 0; w < ps->env.workers; w++)
    send_pull (ps, &ps->workers[w]);
  for (int i = 0; i < ps->sf.n; i++)
    {
      const PolServerFailure *f = &ps->sf.list[i];
      g_assert (f->server >= 0 && f->server < ps->env.servers);
      eng_schedule_at (ps->env.sim, f->at, on_server_crash, ps, (gpointer) f);
    }
}

static void
ps_finish (PolPolicy *p, PolResult *out)
{
  PsPolicy *ps = (PsPolicy *) p;
  pol_run_finish (&ps->run, ps->global, out);
  if (ps->kofn)
    out->rounds = ps->rounds_done;
  if (ps->sparse && ps->env.rec.param)
    {
      /* per worker-iteration, against a dense run's shard floats */
      double n = MAX ((double) ps->run.updates, 1.0);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      ps->env.rec.param (ps->env.rec.ctx, "policy.pull_bytes",
                         g_ascii_formatd (buf, sizeof buf, "%.10g", ps->pull_bytes / n));
      ps->env.rec.param (ps->env.rec.ctx, "policy.push_bytes",
                         g_ascii_formatd (buf, sizeof buf, "%.10g", ps->push_bytes / n));
      ps->env.rec.param (ps->env.rec.ctx, "policy.dense_bytes",
                         g_ascii_formatd (buf, sizeof buf, "%.10g",
                                          (double) ps->env.n_params * sizeof (float)));
    }
  if (ps->filter && ps->env.rec.param)
    {
      char v[G_ASCII_DTOSTR_BUF_SIZE];
      ps->env.rec.param (ps->env.rec.ctx, "policy.filter_bytes",
                         g_ascii_formatd (v, sizeof v, "%.17g", ps->push_bytes));
      ps->env.rec.param (ps->env.rec.ctx, "policy.filter_dense_bytes",
                         g_ascii_formatd (v, sizeof v, "%.17g", ps->dense_bytes));
      ps->env.rec.param (ps->env.rec.ctx, "policy.filter_saved",
                         g_ascii_formatd (v, sizeof v, "%.6g",
                                          ps->dense_bytes > 0
                                          ? 1 - ps->push_bytes / ps->dense_bytes : 0));
      ps->env.rec.param (ps->env.rec.ctx, "policy.filter_kept",
                         g_ascii_formatd (v, sizeof v, "%.6g",
                                          ps->pushed > 0 ? ps->sent / ps->pushed : 1));
    }
}

static void
ps_free (PolPolicy *p)
{
  PsPolicy *ps = (PsPolicy *) p;
  if (!ps)
    return;
  for (int w = 0; w < ps->env.workers; w++)
    {
      PsWorker *wk = &ps->workers[w];
      g_free (wk->name);
      g_free (wk->own);
      snap_unref (wk->snap);
      g_free (wk->grad);
      g_free (wk->memory);
      g_free (wk->idx);
      g_free (wk->next_idx);
      g_free (wk->next_keys);
      g_free (wk->keys);
      g_free (wk->acks_missing);
      g_free (wk->have);
      g_free (wk->arrived);
    }
  for (int s = 0; s < ps->env.servers; s++)
    {
      PsServer *srv = &ps->servers[s];
      g_free (srv->name);
      if (srv->on == s) /* else its host's */
        eng_resource_free (srv->fifo);
      for (int j = 0; srv->opt && j < srv->n_ranges; j++)
        kern_optimizer_free (srv->opt[j]);
      g_free (srv->opt);
      snap_unref (srv->snap);
      g_free (srv->round_sum);
      g_free (srv->applied);
      g_free (srv->counted);
      g_free (srv->held);
      g_array_unref (srv->pending);
    }
  pol_sparse_free (ps->sparse);
  g_free (ps->workers);
  g_free (ps->servers);
  g_free (ps->scratch);
  if (ps->env.servers != 1)  /* else the data of servers[0].snap */
    g_free (ps->global);
  g_free (ps->grad_shards);
  g_free (ps->init);
  g_free (ps->live_chain);
  g_free (ps->live_n);
  g_free (ps->ckpt);
  pol_replicas_free (ps->rep);
  pol_partition_free (ps->part);
  g_free (ps->srv_ranges);
  train_steps_free (ps->steps);
  g_hash_table_unref (ps->live);
  for (int s = 0; ps->spare && s < ps->env.servers; s++)
    g_ptr_array_unref (ps->spare[s]);
  g_free (ps->spare);
  g_free (ps);
}

static const char *const ps_tags[] = { [MSG_PULL] = "pull", [MSG_REPLY] = "params",
                                       [MSG_GRAD] = "grad", [MSG_REPLICA] = "replica",
                                       [MSG_ACK] = "ack" };

/* The bound of [policy] wait_for as it is parsed: the most hosts a run may
 * have (SIM_MAX_HOSTS); ps_validate then holds it to the workers. */
#define PS_MAX_WAIT_FOR 131072

static const BaseChoice consistency_choices[] = {
  { "bsp", POL_BSP, FALSE }, { "ssp", POL_SSP, FALSE }, { "async", POL_ASYNC, FALSE },
  { NULL, 0, FALSE },
};

static const BaseChoice late_choices[] = {
  { "drop", 0, FALSE }, { "keep", 1, FALSE }, { NULL, 0, FALSE },
};

static const BaseChoice partition_choices[] = {
  { "range", POL_PARTITION_RANGE, FALSE }, { "hash", POL_PARTITION_HASH, FALSE },
  { NULL, 0, FALSE },
};

/* Most points one server may put on the ring, and on the ring in all. */
#define PS_MAX_VIRTUAL_NODES 1024
#define PS_MAX_RING_POINTS (1 << 22)
/* Most servers of one replication chain. */
#define PS_MAX_REPLICATION 16

static const BaseChoice pull_choices[] = {
  { "dense", POL_PULL_DENSE, FALSE }, { "sparse", POL_PULL_SPARSE, FALSE },
  { NULL, 0, FALSE },
};

static const BaseKey ps_keys[] = {
  { "policy", "pull", BASE_KEY_ENUM, 0, "dense", 0, 0, 0, pull_choices, 0,
    "Parameter server: dense pulls and pushes whole shards; sparse only the keys of the worker's batch, 8 bytes a key (needs a model whose batches read few parameters, kind = sparse; docs/policies.md).", NULL },
  { "policy", "consistency", BASE_KEY_ENUM, 0, "bsp", 0, 0, 0, consistency_choices, 0,
    "Parameter-server consistency: bsp, ssp (bounded staleness) or async.", NULL },
  { "policy", "staleness", BASE_KEY_INT, 0, "3", 0, 1e9, 0, NULL, 0,
    "SSP bound s: a worker may start iteration i once every worker's iteration i-s-1 gradient has been applied.", NULL },
  { "policy", "wait_for", BASE_KEY_INT, 0, "0", 0, PS_MAX_WAIT_FOR, 0, NULL, 0,
    "BSP parameter server: a round closes when the first K = wait_for of its gradients have arrived (0 or workers = all; 1 <= K <= workers; needs servers = 1 when K < workers; docs/policies.md).", NULL },
  { "policy", "late", BASE_KEY_ENUM, 0, "drop", 0, 0, 0, late_choices, 0,
    "wait_for < workers: a gradient of a closed round is dropped, or kept and applied as a stale update.", NULL },
  { "policy", "partition", BASE_KEY_ENUM, 0, "range", 0, 0, 0, partition_choices, 0,
    "Parameter server: which server holds which keys: range (one contiguous shard each) or hash (consistent hashing: virtual_nodes points per server on a ring; docs/policies.md).", NULL },
  { "policy", "virtual_nodes", BASE_KEY_INT, 0, "16", 1, PS_MAX_VIRTUAL_NODES, 0, NULL, 0,
    "partition = hash: points of each server on the ring; more points, more even loads (at most 4194304 points in all).", NULL },
  { "policy", "replication", BASE_KEY_INT, 0, "1", 1, PS_MAX_REPLICATION, 0, NULL, 0,
    "Parameter server: servers holding each key range (1 = no copy; k <= servers: chain replication along the range's chain, the tail acknowledges each push; docs/policies.md).", NULL },
  { .section = NULL },
};

/* [policy] wait_for = K against the workers, and K of N only where it can
 * run (`bsp`: the parameter server with consistency = bsp). */
static gboolean
wait_for_check (const PolCheck *chk, gboolean bsp, GError **error)
{
  gint64 K = base_values_int (chk->values, "policy.wait_for");
  if (K > chk->workers)
    return pol_key_error (error, "policy", "wait_for",
                          "%" G_GINT64_FORMAT " is more than the %" G_GINT64_FORMAT
                          " workers; use 1 to %" G_GINT64_FORMAT " (0 = all)",
                          K, chk->workers, chk->workers);
  if (K > 0 && K < chk->workers && !bsp) /* K = workers is plain BSP */
    return pol_key_error (error, "policy", "wait_for",
                          "waiting for K of N applies only to kind = ps with consistency = bsp; "
                          "set wait_for = 0 or use consistency = bsp");
  return TRUE;
}

/* [policy] partition and virtual_nodes against the servers. */
static gboolean
ps_placement_check (const PolCheck *chk, GError **error)
{
  gboolean hash = base_values_int (chk->values, "policy.partition") == POL_PARTITION_HASH;
  gint64 v = base_values_int (chk->values, "policy.virtual_nodes");
  if (!hash && v != 16)
    return pol_key_error (error, "policy", "virtual_nodes",
                          "applies only to partition = hash; remove it or set partition = hash");
  if (hash && v * chk->servers > PS_MAX_RING_POINTS)
    return pol_key_error (error, "policy", "virtual_nodes",
                          "%" G_GINT64_FORMAT " points for each of %" G_GINT64_FORMAT
                          " servers is more than %d on the ring; use at most %" G_GINT64_FORMAT,
                          v, chk->servers, PS_MAX_RING_POINTS,
                          MAX (PS_MAX_RING_POINTS / chk->servers, 1));
  return TRUE;
}

/* Server crashes: alone (no worker failure, no K of N); recover and
 * checkpoint_every only without copies, detect only with them. */
static gboolean
ps_crash_check (const PolCheck *chk, gint64 k, GError **error)
{
  gint64 K = base_values_int (chk->values, "policy.wait_for");
  if (chk->n_failures > 0)
    return pol_key_error (error, "failures", "server",
                          "server crashes and worker failures are not simulated in one run; "
                          "keep either [failures] server or worker");
  if (K > 0 && K < chk->workers)
    return pol_key_error (error, "failures", "server",
                          "server crashes are not simulated with waiting for K of N "
                          "([policy] wait_for); set wait_for = 0 or remove [failures] server");
  if (k >= 2 && chk->recover != POL_RECOVER_REINIT)
    return pol_key_error (error, "failures", "recover",
                          "applies only to [policy] replication = 1 (with copies the next "
                          "server of each chain takes over); remove it or set replication = 1");
  if (k >= 2 && base_values_int (chk->values, "policy.partition") != POL_PARTITION_RANGE)
    return pol_key_error (error, "failures", "server",
                          "a takeover under replication is simulated with partition = range "
                          "only; set [policy] partition = range or remove [failures] server");
  if (base_values_int (chk->values, "policy.pull") == POL_PULL_SPARSE
      || pol_filter_of (chk->values))
    return pol_key_error (error, "failures", "server",
                          "server crashes are not simulated with sparse or filtered pushes "
                          "(a resend would have to rebuild them); set pull = dense and "
                          "filter = none, or remove [failures] server");
  if (k == 1 && chk->detect_given)
    return pol_key_error (error, "failures", "detect",
                          "applies only to [policy] replication >= 2 (a takeover); remove it "
                          "or set replication = 2 or more");
  return TRUE;
}

/* K of N applies to BSP with one server; worker failures need one server. */
static gboolean
ps_validate (PolCheck *chk, GError **error)
{
  gint64 K = base_values_int (chk->values, "policy.wait_for");
  if (!wait_for_check (chk, base_values_int (chk->values, "policy.consistency") == POL_BSP,
                       error))
    return FALSE;
  if (K > 0 && K < chk->workers && chk->servers != 1)
    return pol_key_error (error, "policy", "wait_for",
                          "K of N needs one server ([cluster] servers = 1), found %" G_GINT64_FORMAT
                          "; set servers = 1 or wait_for = 0", chk->servers);
  if (!ps_placement_check (chk, error))
    return FALSE;
  if (base_values_int (chk->values, "policy.pull") == POL_PULL_SPARSE
      && pol_compress_of (chk->values))
    return pol_key_error (error, "policy", "pull",
                          "sparse pushes send the gradient's exact non-zero entries and "
                          "cannot be compressed too; set compression = none or pull = dense");
  if (base_values_int (chk->values, "policy.pull") == POL_PULL_SPARSE
      && pol_filter_of (chk->values))
    return pol_key_error (error, "policy", "pull",
                          "sparse pushes already send only the batch's keys, and a filter on "
                          "them is not modelled; set filter = none or pull = dense");
  gint64 k = base_values_int (chk->values, "policy.replication");
  if (k > chk->servers)
    return pol_key_error (error, "policy", "replication",
                          "%" G_GINT64_FORMAT " copies of each key range need as many servers, found %"
                          G_GINT64_FORMAT "; use 1 to %" G_GINT64_FORMAT " or more servers",
                          k, chk->servers, chk->servers);
  if (k > 1 && (base_values_int (chk->values, "policy.pull") == POL_PULL_SPARSE
                || pol_filter_of (chk->values)))
    return pol_key_error (error, "policy", "replication",
                          "the copies forward whole key ranges, and sparse or filtered pushes "
                          "along a chain are not modelled; set replication = 1, or pull = dense "
                          "and filter = none");
  if (chk->n_server_failures > 0 && !ps_crash_check (chk, k, error))
    return FALSE;
  if (chk->n_failures > 0 && chk->servers != 1)
    return pol_key_error (error, "failures", "worker",
                          "worker failures need one server ([cluster] servers = 1), found %" G_GINT64_FORMAT
                          "; set servers = 1 or remove [failures]", chk->servers);
  return TRUE;
}

/* Another policy runs: waiting for K of N and sparse pulls would do
 * nothing there. */
static gboolean
ps_foreign (const PolCheck *chk, GError **error)
{
  static const char *const own[] = { "partition", "virtual_nodes", "replication" };
  gboolean given[] = {
    base_values_int (chk->values, "policy.partition") != POL_PARTITION_RANGE,
    base_values_int (chk->values, "policy.virtual_nodes") != 16,
    base_values_int (chk->values, "policy.replication") != 1,
  };
  for (guint i = 0; i < G_N_ELEMENTS (own); i++)
    if (given[i])
      return pol_key_error (error, "policy", own[i],
                            "applies only to kind = ps; remove it or set kind = ps");
  if (base_values_int (chk->values, "policy.pull") == POL_PULL_SPARSE)
    return pol_key_error (error, "policy", "pull",
                          "sparse pulls apply only to kind = ps; set pull = dense or kind = ps");
  return wait_for_check (chk, FALSE, error);
}

/* dtsim check's lines on replication: each range's chain (the first 8)
 * and the bytes of one push of the whole model along the chains. */
static void
describe_chains (GString *out, const PolPartition *part, const BaseValues *values)
{
  int k = part->depth;
  const PolCompressor *cmp = pol_compress_of (values);
  double bytes = 0;
  g_string_append_printf (out, "replication: %d servers per chain; the primary applies a push, "
                          "forwards it down the chain, the tail acknowledges (%d bytes)\n",
                          k, POL_PS_ACK_BYTES);
  for (int r = 0; r < part->n_ranges; r++)
    {
      gsize len = part->ranges[r].hi - part->ranges[r].lo;
      double b = cmp ? cmp->wire_bytes (values, len) : 4.0 * (double) len;
      bytes += k * b + POL_PS_ACK_BYTES;
      if (r >= 8)
        continue;
      g_string_append_printf (out, "  range [%" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT "): chain",
                              part->ranges[r].lo, part->ranges[r].hi);
      for (int h = 0; h < k; h++)
        g_string_append_printf (out, "%s server%d", h ? " ->" : "", pol_partition_chain (part, r, h));
      g_string_append_c (out, '\n');
    }
  if (part->n_ranges > 8)
    g_string_append_printf (out, "  ... %d more ranges\n", part->n_ranges - 8);
  g_string_append_printf (out, "bytes per push of a worker: %.0f (%d x the gradient, plus %d "
                          "acknowledgement%s)\n", bytes, k, part->n_ranges,
                          part->n_ranges == 1 ? "" : "s");
}

/* dtsim check's lines on server crashes: who fails when and, with
 * replication, who takes which ranges over (the crashes in time order,
 * each chain dropping the servers crashed before); without replication,
 * when each comes back and with what. */
static void
describe_crashes (GString *out, const PolPartition *part, const PolServerFailures *sf)
{
  int S = part->servers, k = part->depth, n = sf->n;
  int *order = g_new (int, n);
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = 1; i < n; i++) /* insertion sort: stable, by time */
    for (int j = i; j > 0 && sf->list[order[j]].at < sf->list[order[j - 1]].at; j--)
      {
        int t = order[j];
        order[j] = order[j - 1];
        order[j - 1] = t;
      }
  gboolean *out_now = g_new0 (gboolean, S);
  int *primary = g_new (int, MAX (part->n_ranges, 1));
  for (int r = 0; r < part->n_ranges; r++)
    primary[r] = part->owner[r];
  g_string_append_printf (out, "server crashes: %d\n", n);
  for (int i = 0; i < n; i++)
    {
      const PolServerFailure *f = &sf->list[order[i]];
      g_string_append_printf (out, "  server%d crashes at %.9g s", f->server, f->at);
      if (k == 1)
        {
          g_string_append_printf (out, ", back at %.9g s with %s; workers resend what it lost\n",
                                  f->at + f->restart,
                                  sf->recover == POL_RECOVER_CHECKPOINT
                                  ? "its last checkpoint" : "its keys reinitialised");
          continue;
        }
      if (out_now[f->server])
        {
          g_string_append (out, ": out already\n");
          continue;
        }
      out_now[f->server] = TRUE;
      g_string_append_printf (out, ", detected at %.9g s; stays out", f->at + sf->detect);
      for (int r = 0; r < part->n_ranges; r++)
        {
          if (primary[r] != f->server)
            continue;
          for (int h = 0; h < k; h++)
            {
              int to = pol_partition_chain (part, r, h);
              if (!out_now[to])
                {
                  primary[r] = to;
                  g_string_append_printf (out, "; range [%" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT
                                          ") -> server%d", part->ranges[r].lo,
                                          part->ranges[r].hi, to);
                  break;
                }
            }
        }
      g_string_append_c (out, '\n');
    }
  if (k == 1 && sf->recover == POL_RECOVER_CHECKPOINT)
    g_string_append_printf (out, "  checkpoints: every %" G_GINT64_FORMAT " iterations, at no cost\n",
                            sf->checkpoint_every);
  g_free (order);
  g_free (out_now);
  g_free (primary);
}

/* dtsim check's lines: where the keys live (the ranges of each server,
 * keys per server and the imbalance). */
static char *
ps_describe (const PolModelInfo *mi)
{
  gsize P = mi->model->ops->n_params (mi->model);
  int S = (int) mi->servers;
  PolPartition *part = ps_partition_of (mi->values, P, S,
                                        mi->seed);
  g_autofree char *lines = pol_partition_describe (part, 8);
  GString *out = g_string_new (NULL);
  g_string_append_printf (out, "placement: partition = %s", part->kind == POL_PARTITION_HASH
                          ? "hash" : "range");
  if (part->kind == POL_PARTITION_HASH)
    g_string_append_printf (out, " (%d virtual nodes per server, ring seeded with [scenario] seed)",
                            part->virtual_nodes);
  g_string_append_printf (out, ", %d key range%s on %d server%s\n%s", part->n_ranges,
                          part->n_ranges == 1 ? "" : "s", S, S == 1 ? "" : "s", lines);
  if (part->depth > 1)
    describe_chains (out, part, mi->values);
  if (mi->server_failures && mi->server_failures->n > 0)
    describe_crashes (out, part, mi->server_failures);
  pol_partition_free (part);
  return g_string_free (out, FALSE);
}

/* A shard holds at least one parameter; sparse pulls need a model that
 * says which keys a batch reads. */
static gboolean
ps_check_model (const PolModelInfo *mi, GError **error)
{
  gsize P = mi->model->ops->n_params (mi->model);
  if (base_values_int (mi->values, "policy.pull") == POL_PULL_SPARSE && !mi->model->ops->touched)
    return pol_key_error (error, "policy", "pull",
                          "sparse needs a model whose batches read few parameters (kind = "
                          "sparse), and this one reads all of them; set pull = dense");
  if (mi->servers > 1 && (gsize) mi->servers > P)
    return pol_key_error (error, "cluster", "servers",
                          "%" G_GINT64_FORMAT " shards for a model of %" G_GSIZE_FORMAT
                          " parameters; use at most one server per parameter", mi->servers, P);
  return TRUE;
}

/* Deferred gradients (one server, no failures, simulated compute time):
 * the servers' model, optimizer state and round sum, the snapshots the
 * workers hold (BSP: the round's, and the one before; SSP and async: up
 * to one version per worker), error feedback per worker where the
 * compressor keeps it.  Otherwise (a filter included: it needs the
 * gradient at the push) every worker and server holds a model, and a
 * filter that keeps a residual adds one per worker. */
static double
ps_host_bytes (const PolModelInfo *mi, double per_model)
{
  double W = (double) mi->workers;
  double shard = 4.0 * (double) mi->model->ops->n_params (mi->model);
  /* each backup copy of the model, spread over the servers */
  double backups = (double) (base_values_int (mi->values, "policy.replication") - 1) * per_model;
  gboolean bsp = base_values_int (mi->values, "policy.consistency") == POL_BSP;
  const PolFilter *filter = pol_filter_of (mi->values);
  double residual = filter && filter->feedback ? W * shard : 0;
  if (mi->servers > 1 && bsp) /* shared_global: no worker copies */
    return (W + (double) mi->servers) * per_model - W * shard + residual + backups;
  if (mi->servers != 1 || mi->failures || mi->host_timed || filter)
    return (W + (double) mi->servers) * per_model + residual + backups;
  const PolCompressor *cmp = pol_compress_of (mi->values);
  return 2 * per_model + (bsp ? 2 : W) * shard + (cmp && cmp->feedback ? W * shard : 0);
}

/* Every worker exchanges a shard with every server in each step: its
 * gradient out and the parameters back; spans: a send and a receive per
 * server, compute, wait and the servers' updates. */
static void
ps_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers, S = (double) mi->servers;
  double k = (double) base_values_int (mi->values, "policy.replication");
  /* replication (range placement): k - 1 forwards, an acknowledgement and
   * a pull per server, and k - 1 more updates */
  double extra = k > 1 ? (k + 1) * W * S : 0;
  *out = (PolWork) { .messages = 2 * W * S + extra, .spans = W * (S + 5) + (k - 1) * W * S,
                     .iteration_rows = W, .in_flight = 2 * W * S + extra };
}

const PolPolicyOps pol_ps_ops = {
  .work = ps_work,
  .name = "ps",
  .wire_numerics = TRUE,
  .balances = TRUE,
  .host_bytes = ps_host_bytes,
  .source = "M. Li et al.: Scaling distributed machine learning with the parameter server, OSDI 2014; SSP: Q. Ho et al.: More effective distributed ML via a stale synchronous parallel parameter server, NIPS 2013",
  .keys = ps_keys,
  .failures = TRUE,
  .server_failures = TRUE,
  .compresses = TRUE,
  .filters = TRUE,
  .validate = ps_validate,
  .foreign = ps_foreign,
  .check_model = ps_check_model,
  .describe = ps_describe,
  .tag_names = ps_tags,
  .n_tags = G_N_ELEMENTS (ps_tags),
  .description = "parameter server: workers pull shards, compute a real gradient, push it; "
                 "servers apply them (BSP: one step per round with the mean; SSP and async: one step per gradient)",
  .host_names = ps_host_names,
  .create = ps_create,
  .start = ps_start,
  .finish = ps_finish,
  .free = ps_free,
};
