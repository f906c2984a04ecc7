/*
 * gossip.c — decentralized SGD: no server and no collective; every worker
 * keeps its own model and averages it with its neighbours' on a graph.
 *
 * docs/policies.md ("Gossip") is the normative description:
 *
 *   - The graph ([policy] graph) is a ring, a 2-D torus, an exponential
 *     graph (w and w +- 2^k) or the complete graph, undirected.  Its mixing
 *     matrix has Metropolis-Hastings weights: M[w][v] = 1 / (1 + max(d_w,
 *     d_v)) for neighbours, M[w][w] = 1 - their sum (symmetric, doubly
 *     stochastic; 1 / (d + 1) everywhere on a regular graph).
 *   - order = d-psgd (Lian et al. 2017): at the start of its iteration k a
 *     worker sends x_w^k to every neighbour and, at the same time, computes
 *     its gradient g_w at x_w^k (compute_time).  Once that is done and every
 *     neighbour's x_v^k has arrived, it applies its optimizer to
 *     sum_v M[w][v] x_v^k with g_w (update_time(P)) and starts k + 1.
 *   - order = atc (adapt then combine): the worker first computes g_w and
 *     applies its optimizer to its own x_w (compute_time + update_time),
 *     then sends the result y_w^k; once every neighbour's y_v^k has arrived
 *     its model is sum_v M[w][v] y_v^k (mixing takes no simulated time) and
 *     it starts k + 1.
 *   - Workers are not synchronised otherwise: a worker runs ahead of its
 *     neighbours by at most one iteration (it needs their models of its
 *     own iteration).  The run ends when every worker has done `iterations`
 *     iterations (iterations x W applied gradients).
 *
 * No payload is copied: every worker keeps its models of the last two
 * iterations, by parity (x_w^k in xs[k & 1][w]), and a combine reads the
 * neighbours' models of its iteration where they are, once their transfers
 * have arrived, writing the next model into the other parity's buffer (for
 * d-psgd with the optimizer step in the same pass: kern_optimizer_mix_step).
 * That is safe because a neighbour can be at most one iteration ahead: v
 * overwrites xs[k & 1][v] only when it combines iteration k + 1, which
 * needs w's model of k + 1, which w has only after its combine of k.  So a
 * transfer carries only its receiver and parity (nothing to free when a
 * run stops with transfers in flight).  With [numerics] communication the
 * model sent is a rounded copy, by parity too (sent[k & 1][w], safe for the
 * same reason), which the neighbours mix; a worker mixes its own x_w^k
 * unrounded, as it never crosses the wire.
 *
 * Unless compute time is measured on the host, a worker's gradient is
 * computed when it is used (at the combine for d-psgd, at the end of its
 * own part for atc) rather than when its iteration starts: its model of
 * the iteration and its batch (drawn at the start) are unchanged until
 * then, so the numbers are the same, and one gradient buffer, still in
 * cache, serves every worker.
 *
 * An iteration's row: compute = compute_time + update_time; wait = the time
 * from the moment the worker could combine until the last neighbour sent
 * (it was late); comm = the rest until the last model arrived.  Evaluations
 * report the loss and accuracy of the average model and the consensus
 * distance (1/W) sum_w |x_w - avg|^2.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "train/step.h"

/* The random stream of init_spread's noise (apart from the samplers' and
 * the stragglers' streams). */
#define GO_SPREAD_STREAM G_GUINT64_CONSTANT (0x6055195)

/* Floats per block of the passes over several models (a send to every
 * neighbour, the consensus distance): a block of each stays in cache. */
enum { GO_BLOCK = 4096 };

typedef enum { GRAPH_RING, GRAPH_TORUS, GRAPH_EXPONENTIAL, GRAPH_COMPLETE } GoGraph;
typedef enum { ORDER_DPSGD, ORDER_ATC } GoOrder;

typedef struct {
  gint64 iter;           /* iteration in progress */
  double start;          /* s, when it began */
  double own_ready;      /* s, when it could combine; < 0 = not yet */
  int got[2];            /* neighbour models arrived, by iteration parity */
  double last_sent[2];   /* s, the latest send to it, by parity */
  double last_arrival[2];
} GoWorker;

typedef struct {
  PolEnv env;
  GoOrder order;
  int W;
  int *deg;              /* (W) */
  int **nbr;             /* (W) its neighbours, ascending */
  float **weight;        /* (W) M[w][nbr[w][i]] */
  float *self_weight;    /* (W) M[w][w] */
  GoWorker *wk;
  float **xs[2];         /* (W) x_w^k in xs[k & 1][w]; NULL without math */
  float **sent[2];       /* (W) x_w^k as its transfers carry it, rounded to
                          * [numerics] communication, by parity as xs;
                          * NULL in fp32 (the neighbours read xs) */
  const float **mix_src; /* (W) scratch: the models a combine sums */
  float *mix_weight;     /* (W) scratch: their weights */
  gboolean deferred;      /* gradients computed when used (see above) */
  float **grad;          /* (W) each worker's gradient; deferred: grad[0]
                          * only, the one being used */
  int *idxs;             /* deferred: (W x batch) each worker's batch */
  KernOptimizer **opt;
  TrainSteps *steps;     /* the workers' steps */
  float *avg;            /* the average model, for evaluations */
  double update_time;    /* s, one optimizer step on P parameters */
  gint64 total;          /* iterations x W */
  PolRun run;
} GoPolicy;

/* Worker w's model now: that of its current iteration (NULL without
 * math). */
static float *
cur (GoPolicy *go, int w)
{
  return go->xs[0] ? go->xs[go->wk[w].iter & 1][w] : NULL;
}

/* --- the graph ------------------------------------------------------------ */

static int
cmp_int (gconstpointer a, gconstpointer b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (x > y) - (x < y);
}

/* Adds v to w's candidate list (duplicates and w itself are removed later). */
static void
cand (GArray *c, int v)
{
  g_array_append_val (c, v);
}

/* The rows and columns of the most nearly square r x c grid with r <= c. */
static void
torus_shape (int W, int *r, int *c)
{
  *r = 1;
  for (int d = 1; d * d <= W; d++)
    if (W % d == 0)
      *r = d;
  *c = W / *r;
}

/* Worker w's neighbours on the graph, ascending, without w. */
static GArray *
neighbours (GoGraph g, int W, int w)
{
  GArray *c = g_array_new (FALSE, FALSE, sizeof (int));
  switch (g)
    {
    case GRAPH_RING:
      cand (c, (w + 1) % W);
      cand (c, (w + W - 1) % W);
      break;
    case GRAPH_TORUS:
      {
        int r, cols;
        torus_shape (W, &r, &cols);
        int a = w / cols, b = w % cols;
        cand (c, ((a + 1) % r) * cols + b);
        cand (c, ((a + r - 1) % r) * cols + b);
        cand (c, a * cols + (b + 1) % cols);
        cand (c, a * cols + (b + cols - 1) % cols);
        break;
      }
    case GRAPH_EXPONENTIAL:
      for (gint64 h = 1; h < W; h *= 2)
        {
          cand (c, (int) ((w + h) % W));
          cand (c, (int) ((w + W - h % W) % W));
        }
      break;
    case GRAPH_COMPLETE:
      for (int v = 0; v < W; v++)
        cand (c, v);
      break;
    }
  g_array_sort (c, cmp_int);
  guint k = 0;
  for (guint i = 0; i < c->len; i++)
    {
      int v = g_array_index (c, int, i);
      if (v != w && (k == 0 || g_array_index (c, int, k - 1) != v))
        g_array_index (c, int, k++) = v;
    }
  g_array_set_size (c, k);
  return c;
}

static void
build_graph (GoPolicy *go, GoGraph g)
{
  int W = go->W;
  go->deg = g_new0 (int, W);
  go->nbr = g_new0 (int *, W);
  go->weight = g_new0 (float *, W);
  go->self_weight = g_new0 (float, W);
  for (int w = 0; w < W; w++)
    {
      GArray *c = neighbours (g, W, w);
      go->deg[w] = (int) c->len;
      go->nbr[w] = (int *) g_array_free (c, FALSE);
    }
  for (int w = 0; w < W; w++)
    {
      double rest = 1;
      go->weight[w] = g_new0 (float, MAX (go->deg[w], 1));
      for (int i = 0; i < go->deg[w]; i++)
        {
          int v = go->nbr[w][i];
          double m = 1.0 / (1 + MAX (go->deg[w], go->deg[v]));
          go->weight[w][i] = (float) m;
          rest -= m;
        }
      go->self_weight[w] = (float) rest;
    }
}

/* --- evaluation ----------------------------------------------------------- */

/* The average of the workers' models into go->avg (NULL without math). */
static const float *
average (GoPolicy *go)
{
  if (!go->xs[0])
    return NULL;
  gsize P = go->env.n_params;
  memset (go->avg, 0, P * sizeof (float));
  for (int w = 0; w < go->W; w++)
    {
      const float *x = cur (go, w);
      for (gsize i = 0; i < P; i++)
        go->avg[i] += x[i];
    }
  float inv = 1.0f / (float) go->W;
  for (gsize i = 0; i < P; i++)
    go->avg[i] *= inv;
  return go->avg;
}

/* (1/W) sum_w |x_w - avg|^2, the average taken in double precision so
 * that equal models give exactly 0; block by block, so that a block of
 * every model stays in cache for both passes. */
static double
consensus (gpointer ctx)
{
  GoPolicy *go = ctx;
  gsize P = go->env.n_params;
  double s = 0, mean[GO_BLOCK];
  for (gsize b = 0; b < P; b += GO_BLOCK)
    {
      gsize n = MIN ((gsize) GO_BLOCK, P - b);
      memset (mean, 0, n * sizeof (double));
      for (int w = 0; w < go->W; w++)
        {
          const float *x = cur (go, w) + b;
          for (gsize i = 0; i < n; i++)
            mean[i] += x[i];
        }
      for (gsize i = 0; i < n; i++)
        mean[i] /= go->W;
      for (int w = 0; w < go->W; w++)
        {
          const float *x = cur (go, w) + b;
          for (gsize i = 0; i < n; i++)
            {
              double d = (double) x[i] - mean[i];
              s += d * d;
            }
        }
    }
  return s / go->W;
}

/* --- the protocol --------------------------------------------------------- */

static void start_iteration (GoPolicy *go, int w);
static void on_arrival (EngSim *sim, gpointer ctx, gpointer data, const NetTransfer *t);

/* Sends x_w^k to every neighbour: a transfer only (see above). */
static void
send_model (GoPolicy *go, int w, gint64 k)
{
  double now = eng_sim_now (go->env.sim);
  int p = (int) (k & 1);
  if (go->sent[0])
    {
      memcpy (go->sent[p][w], go->xs[p][w], go->env.n_params * sizeof (float));
      pol_wire_round (&go->env, go->sent[p][w], go->env.n_params);
    }
  for (int i = 0; i < go->deg[w]; i++)
    {
      int v = go->nbr[w][i];
      GoWorker *to = &go->wk[v];
      to->last_sent[p] = MAX (to->last_sent[p], now);
      net_send (go->env.net, w, v, (double) go->env.n_params * sizeof (float), 0, on_arrival,
                go, GINT_TO_POINTER (2 * v + p));
    }
}

/* x_w^{k+1} = M[w][w] x_w^k + sum_v M[w][v] x_v^k (the neighbours in
 * ascending order), then, with grad (d-psgd), w's optimizer step. */
static void
combine (GoPolicy *go, int w, gint64 k, const float *grad)
{
  if (!go->xs[0])
    return;
  int p = (int) (k & 1), d = go->deg[w];
  go->mix_src[0] = go->xs[p][w];
  go->mix_weight[0] = go->self_weight[w];
  /* M[w][v] = M[v][w]: the Metropolis weights are symmetric */
  for (int i = 0; i < d; i++)
    {
      go->mix_src[i + 1] = (go->sent[0] ? go->sent : go->xs)[p][go->nbr[w][i]];
      go->mix_weight[i + 1] = go->weight[w][i];
    }
  kern_optimizer_mix_step (go->opt[w], go->xs[p ^ 1][w], d + 1, go->mix_src, go->mix_weight,
                           grad, go->env.n_params);
}

/* Worker w's iteration has ended now: its row, the counters, the next. */
static void
end_iteration (GoPolicy *go, int w)
{
  GoWorker *wk = &go->wk[w];
  EngSim *sim = go->env.sim;
  double now = eng_sim_now (sim);
  gint64 k = wk->iter;
  int p = (int) (k & 1);
  double ready = MAX (wk->own_ready, wk->last_arrival[p]);
  double wait = CLAMP (wk->last_sent[p] - wk->own_ready, 0, ready - wk->own_ready);
  double compute = (now - wk->start) - (ready - wk->own_ready);
  pol_run_iteration (&go->run, w, k, wk->start, now, compute, ready - wk->own_ready - wait,
                     wait, 0);
  pol_worker_span (&go->env, w, "wait", wk->own_ready, wk->own_ready + wait, k, 0);
  pol_worker_span (&go->env, w, "recv", wk->own_ready + wait, ready, k, 0);
  if (go->order == ORDER_DPSGD)
    pol_worker_span (&go->env, w, "compute", ready, now, k, 0);
  wk->got[p] = 0;
  wk->last_sent[p] = wk->last_arrival[p] = 0;
  wk->iter++;
  go->run.updates++;
  go->run.samples += go->env.batch;
  pol_run_progress (&go->run, now);
  gboolean last = go->run.updates >= go->total;
  /* the average model is assembled only for an evaluation */
  if (!pol_run_round_end (&go->run, pol_run_eval_due (&go->run, last) ? average (go) : NULL,
                          last))
    return;
  if (wk->iter < go->env.iterations)
    start_iteration (go, w);
}

/* Worker w's gradient at its model of this iteration on the batch it drew
 * (deferred), in grad[0]. */
static const float *
deferred_gradient (GoPolicy *go, int w)
{
  const float *own[1] = { cur (go, w) };
  TrainStep st = { .n = 1, .first = w, .drawn = go->idxs + (gsize) w * go->env.batch,
                   .own = own, .grads = &go->grad[0] };
  train_step (go->steps, &st);
  return go->grad[0];
}

/* The gradient worker w uses now (NULL without math). */
static const float *
gradient (GoPolicy *go, int w)
{
  if (!go->xs[0])
    return NULL;
  return go->deferred ? deferred_gradient (go, w) : go->grad[w];
}

/* d-psgd: the combined model takes the optimizer step; the iteration ends. */
static void
on_update_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  GoPolicy *go = ctx;
  int w = GPOINTER_TO_INT (data);
  if (go->run.finished)
    return;
  combine (go, w, go->wk[w].iter, gradient (go, w));
  end_iteration (go, w);
}

/* Whether worker w can combine now: its own part is done and every
 * neighbour's model of its iteration has arrived. */
static void
try_combine (GoPolicy *go, int w)
{
  GoWorker *wk = &go->wk[w];
  int p = (int) (wk->iter & 1);
  if (wk->own_ready < 0 || wk->got[p] < go->deg[w])
    return;
  if (go->order == ORDER_DPSGD)
    eng_schedule (go->env.sim, go->update_time, on_update_done, go, GINT_TO_POINTER (w));
  else
    {
      combine (go, w, wk->iter, NULL);
      end_iteration (go, w);
    }
}

static void
on_arrival (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, const NetTransfer *t)
{
  GoPolicy *go = ctx;
  int w = GPOINTER_TO_INT (data) / 2, p = GPOINTER_TO_INT (data) % 2;
  GoWorker *wk = &go->wk[w];
  wk->got[p]++;
  wk->last_arrival[p] = MAX (wk->last_arrival[p], t->end);
  /* the other parity is the next iteration's: a neighbour ahead */
  if (!go->run.finished && p == (int) (wk->iter & 1))
    try_combine (go, w);
}

/* Worker w's own part is done: d-psgd, its gradient; atc, its gradient and
 * its optimizer step, after which it sends the result. */
static void
on_own_done (EngSim *sim, gpointer ctx, gpointer data)
{
  GoPolicy *go = ctx;
  int w = GPOINTER_TO_INT (data);
  GoWorker *wk = &go->wk[w];
  if (go->run.finished)
    return;
  wk->own_ready = eng_sim_now (sim);
  if (go->order == ORDER_ATC)
    {
      if (go->xs[0])
        kern_optimizer_step (go->opt[w], cur (go, w), gradient (go, w));
      send_model (go, w, wk->iter);
    }
  try_combine (go, w);
}

static void
start_iteration (GoPolicy *go, int w)
{
  const PolEnv *env = &go->env;
  GoWorker *wk = &go->wk[w];
  double now = eng_sim_now (env->sim);
  wk->start = now;
  wk->own_ready = -1;
  /* deferred: the batch is drawn now, its gradient computed when used */
  const float *at[1] = { go->xs[0] ? cur (go, w) : NULL };
  TrainStep st = { .n = 1, .first = w, .own = at,
                   .grads = go->xs[0] && !go->deferred ? &go->grad[w] : NULL,
                   .drawn_into = go->xs[0] && go->deferred ? go->idxs + (gsize) w * env->batch
                                                           : NULL };
  double host = train_step (go->steps, &st);
  if (go->order == ORDER_DPSGD)
    send_model (go, w, wk->iter);
  double T = env->compute_time (env->compute_ctx, w, host);
  double own = T + (go->order == ORDER_ATC ? go->update_time : 0);
  pol_worker_span (env, w, "compute", now, now + own, wk->iter, 0);
  eng_schedule (env->sim, own, on_own_done, go, GINT_TO_POINTER (w));
}

static void
go_start_event (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  GoPolicy *go = ctx;
  for (int w = 0; w < go->W && !go->run.finished; w++)
    start_iteration (go, w);
}

/* --- the policy ----------------------------------------------------------- */

static PolPolicy *
go_create (const PolEnv *env, GError **error G_GNUC_UNUSED)
{
  GoPolicy *go = g_new0 (GoPolicy, 1);
  go->env = *env;
  go->W = env->workers;
  go->order = (GoOrder) base_values_int (env->values, "policy.order");
  int W = go->W;
  gsize P = env->n_params;
  pol_run_init (&go->run, &go->env);
  build_graph (go, (GoGraph) base_values_int (env->values, "policy.graph"));
  go->wk = g_new0 (GoWorker, W);
  go->total = env->iterations * W;
  if (env->model)
    {
      double spread = base_values_double (env->values, "policy.init_spread");
      EngRng rng;
      eng_rng_init (&rng, env->seed, GO_SPREAD_STREAM);
      go->xs[0] = g_new (float *, W);
      go->xs[1] = g_new (float *, W);
      go->mix_src = g_new (const float *, W);
      go->mix_weight = g_new (float, W);
      go->deferred = !env->host_timed;
      go->grad = g_new0 (float *, W);
      if (go->deferred)
        go->idxs = g_new (int, (gsize) W * env->batch);
      go->opt = g_new (KernOptimizer *, W);
      go->xs[0][0] = g_new0 (float, P);
      env->model->ops->init (env->model, go->xs[0][0], env->seed);
      for (int w = 0; w < W; w++)
        {
          if (w > 0)
            go->xs[0][w] = g_memdup2 (go->xs[0][0], P * sizeof (float));
          go->xs[1][w] = g_new (float, P);
          if (w == 0 || !go->deferred)
            go->grad[w] = g_new0 (float, P);
          go->opt[w] = kern_optimizer_new (&env->opt, P);
        }
      /* different starting models: Gaussian noise on each copy */
      if (spread > 0)
        for (int w = 0; w < W; w++)
          for (gsize i = 0; i < P; i++)
            go->xs[0][w][i] += (float) (spread * eng_rng_normal (&rng));
      if (pol_wire_rounds (env))
        for (int p = 0; p < 2; p++)
          {
            go->sent[p] = g_new (float *, W);
            for (int w = 0; w < W; w++)
              go->sent[p][w] = g_new (float, P);
          }
      go->avg = g_new0 (float, P);
      go->run.consensus = consensus;
      go->run.consensus_ctx = go;
    }
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? W : 0, .batch = env->batch, .slots = 1,
                            .host_timed = env->host_timed };
  go->steps = train_steps_new (&setup);
  go->update_time = env->update_time (env->compute_ctx, P);
  return (PolPolicy *) go;
}

static void
go_start (PolPolicy *p)
{
  GoPolicy *go = (GoPolicy *) p;
  pol_run_start (&go->run, average (go));
  eng_schedule (go->env.sim, 0, go_start_event, go, NULL);
}

static void
go_finish (PolPolicy *p, PolResult *out)
{
  GoPolicy *go = (GoPolicy *) p;
  pol_run_finish (&go->run, average (go), out);
}

static void
go_free (PolPolicy *p)
{
  GoPolicy *go = (GoPolicy *) p;
  if (!go)
    return;
  int W = go->W;
  if (go->xs[0])
    for (int w = 0; w < W; w++)
      {
        g_free (go->xs[0][w]);
        g_free (go->xs[1][w]);
        g_free (go->grad[w]);
        kern_optimizer_free (go->opt[w]);
      }
  for (int w = 0; w < W; w++)
    {
      g_free (go->nbr[w]);
      g_free (go->weight[w]);
    }
  g_free (go->xs[0]);
  g_free (go->xs[1]);
  for (int q = 0; q < 2; q++)
    {
      for (int w = 0; go->sent[q] && w < W; w++)
        g_free (go->sent[q][w]);
      g_free (go->sent[q]);
    }
  g_free (go->mix_src);
  g_free (go->mix_weight);
  g_free (go->grad);
  g_free (go->idxs);
  g_free (go->opt);
  g_free (go->avg);
  train_steps_free (go->steps);
  g_free (go->deg);
  g_free (go->nbr);
  g_free (go->weight);
  g_free (go->self_weight);
  g_free (go->wk);
  g_free (go);
}

static const char *const go_tags[] = { "model" };

static const BaseChoice graph_choices[] = {
  { "ring", GRAPH_RING, FALSE }, { "torus", GRAPH_TORUS, FALSE },
  { "exponential", GRAPH_EXPONENTIAL, FALSE }, { "complete", GRAPH_COMPLETE, FALSE },
  { NULL, 0, FALSE },
};

static const BaseChoice order_choices[] = {
  { "d-psgd", ORDER_DPSGD, FALSE }, { "atc", ORDER_ATC, FALSE }, { NULL, 0, FALSE },
};

static const BaseKey go_keys[] = {
  { "policy", "graph", BASE_KEY_ENUM, 0, "ring", 0, 0, 0, graph_choices, 0,
    "kind = gossip: the graph workers average their models on: ring (w +- 1), torus (2-D, the most nearly square grid, wrapping), exponential (w +- 2^k) or complete; Metropolis-Hastings mixing weights (docs/policies.md).", NULL },
  { "policy", "order", BASE_KEY_ENUM, 0, "d-psgd", 0, 0, 0, order_choices, 0,
    "kind = gossip: d-psgd (send the model and compute the gradient at once, then step from the neighbours' average; Lian et al. 2017) or atc (step first, then send and average: adapt then combine).", NULL },
  { "policy", "init_spread", BASE_KEY_QUANTITY, 0, "0", 0, 1e6, 0, NULL, 0,
    "kind = gossip: standard deviation of Gaussian noise added to each worker's copy of the initial model (0 = every worker starts from the same model).", NULL },
  { .section = NULL },
};

/* The most workers of a complete graph: every worker keeps W - 1
 * neighbours and weights, and an iteration sends W (W - 1) models. */
#define GO_MAX_COMPLETE 4096

static gboolean
go_validate (PolCheck *chk, GError **error)
{
  if (base_values_int (chk->values, "policy.graph") == GRAPH_COMPLETE
      && chk->workers > GO_MAX_COMPLETE)
    return pol_key_error (error, "policy", "graph",
                          "complete with %" G_GINT64_FORMAT " workers would send %.4g models "
                          "an iteration; use at most %d workers, or graph = exponential",
                          chk->workers, (double) chk->workers * (double) (chk->workers - 1),
                          GO_MAX_COMPLETE);
  return TRUE;
}

/* Every worker holds its model, gradient and optimizer state (per_model:
 * an upper bound, a deferred gradient is one buffer for all) and its model
 * of the iteration before. */
static double
go_host_bytes (const PolModelInfo *mi, double per_model)
{
  double P = (double) mi->model->ops->n_params (mi->model);
  return (double) mi->workers * (per_model + 4.0 * P) + 4.0 * P;
}

/* Its keys would do nothing under another policy. */
static gboolean
go_foreign (const PolCheck *chk, GError **error)
{
  if (base_values_double (chk->values, "policy.init_spread") != 0)
    return pol_key_error (error, "policy", "init_spread",
                          "applies only to kind = gossip; remove it or set kind = gossip");
  return TRUE;
}

/* Every worker sends its model to each neighbour once an iteration, all
 * at once: the transfers in flight are the graph's directed edges. */
static void
go_work (const PolModelInfo *mi, PolWork *out)
{
  int W = (int) mi->workers;
  GoGraph g = (GoGraph) base_values_int (mi->values, "policy.graph");
  double edges = 0;
  if (g == GRAPH_COMPLETE)
    edges = (double) W * (double) (W - 1);
  else
    for (int w = 0; w < W; w++)
      {
        GArray *nb = neighbours (g, W, w);
        edges += nb->len;
        g_array_unref (nb);
      }
  *out = (PolWork) { .messages = edges, .spans = 3.0 * W, .iteration_rows = W,
                     .in_flight = edges };
}

const PolPolicyOps pol_gossip_ops = {
  .work = go_work,
  .name = "gossip",
  .source = "X. Lian et al.: Can decentralized algorithms outperform centralized algorithms? "
            "NeurIPS 2017",
  .keys = go_keys,
  .description = "decentralized SGD: every worker keeps its own model, exchanges it with its "
                 "neighbours on [policy] graph and steps from their weighted average",
  .validate = go_validate,
  .host_bytes = go_host_bytes,
  .foreign = go_foreign,
  .tag_names = go_tags,
  .n_tags = G_N_ELEMENTS (go_tags),
  .host_names = pol_worker_host_names,
  .create = go_create,
  .start = go_start,
  .finish = go_finish,
  .wire_numerics = TRUE,
  .free = go_free,
};
