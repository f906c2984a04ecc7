/*
 * fedavg.c — federated averaging (McMahan et al., "Communication-efficient
 * learning of deep networks from decentralized data", AISTATS 2017): a
 * server samples clients each round, they train on their own data for a
 * few local epochs, and the server averages their models by data size.
 *
 * docs/policies.md ("Federated averaging") is the normative description:
 *
 *   - Hosts: the W workers are the clients, host W is the server.  Every
 *     client's data is its part of the training set ([model] partition);
 *     n_c samples.
 *   - Round r starts at R (0 for the first).  The server draws m =
 *     max(1, round(fraction x W)) distinct clients (its own random stream),
 *     and for each a drop with probability `drop`; it sends the global model
 *     (4P bytes, tag model) to the m clients.
 *   - A client that receives it and is not dropped copies it and takes
 *     H_c = max(1, ceil(local_epochs x n_c / batch)) local steps, each a
 *     real gradient on its next batch and a step of its own optimizer
 *     (compute_time(c) + update_time(P) each), then sends its model back.
 *     A dropped client never answers.
 *   - The round closes when every selected client that is not dropped has
 *     answered, or at R + deadline (deadline > 0) if that comes first: the
 *     clients still training or sending then are cut off (their work of the
 *     round is lost).  The global model becomes the average of the
 *     answers weighted by n_c (unchanged if none came), the round's local
 *     steps count as applied gradients, and round r + 1 starts at once.
 *   - The run ends after `iterations` rounds.
 *
 * A selected, not dropped client's iteration row for round r runs from R to
 * the close: compute = its local steps; wait = from its answer's arrival to
 * the close (waiting for the others); comm = the rest (the model's two
 * transfers).  A client cut off has wait = 0.
 *
 * [numerics] communication rounds both transfers' models: a client trains
 * from the global model rounded to that format (the server keeps its own
 * in fp32), and the server averages the rounded answers.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "train/step.h"

/* The server's random stream (client sampling and drops), apart from the
 * samplers', the stragglers' and the compressors'. */
#define FA_STREAM G_GUINT64_CONSTANT (0xFEDA0000)

typedef struct {
  gboolean selected, dropped;
  gboolean done;          /* its answer of this round has arrived */
  gint64 steps_left;      /* local steps still to take this round */
  gint64 steps;           /* local steps this round */
  double compute;         /* s of local steps this round */
  double answered;        /* s, when its answer arrived */
  EngEventId step_ev;     /* its pending step, 0 = none */
} FaClient;

typedef struct {
  PolEnv env;
  int W;
  int server;             /* host id */
  FaClient *cl;
  float *global;          /* (P) the server's model; NULL without math */
  float **local;          /* (W) each client's model */
  double *sum;            /* (P) weighted sum of this round's answers */
  double sum_n;           /* their weights */
  float *grad;
  KernOptimizer **opt;    /* (W) each client's optimizer state */
  TrainSteps *steps;       /* the clients' local steps */
  int *order;             /* (W) scratch for sampling */
  EngRng rng;
  double fraction, local_epochs, drop, deadline;
  double update_time;
  gint64 round;
  double round_start;
  int pending;            /* selected, not dropped, not yet answered */
  gint64 round_steps;     /* local steps of the answers of this round */
  EngEventId deadline_ev;
  PolRun run;
} FaPolicy;

static void start_round (FaPolicy *fa);

/* An event's or a transfer's data: its client and its round (low 12
 * bits); one of an earlier round (a client cut off at the deadline, a
 * dropped client's model arriving late) is void. */
static gpointer
tag_of (const FaPolicy *fa, int c)
{
  return GSIZE_TO_POINTER (((gsize) (fa->round & 0xFFF) << 20) | (gsize) c);
}

static int
client_of (gpointer data)
{
  return (int) (GPOINTER_TO_SIZE (data) & 0xFFFFF);
}

static gboolean
current (const FaPolicy *fa, gpointer data)
{
  return !fa->run.finished && (GPOINTER_TO_SIZE (data) >> 20) == (gsize) (fa->round & 0xFFF);
}

/* The round closes now: average, rows, evaluation, the next round. */
static void
close_round (FaPolicy *fa)
{
  EngSim *sim = fa->env.sim;
  double now = eng_sim_now (sim);
  gsize P = fa->env.n_params;
  if (fa->deadline_ev)
    eng_cancel (sim, fa->deadline_ev);
  fa->deadline_ev = 0;
  if (fa->global && fa->sum_n > 0)
    for (gsize i = 0; i < P; i++)
      fa->global[i] = (float) (fa->sum[i] / fa->sum_n);
  for (int c = 0; c < fa->W; c++)
    {
      FaClient *k = &fa->cl[c];
      if (!k->selected || k->dropped)
        continue;
      if (!k->done)
        {
          /* cut off: its step and its transfer are void */
          if (k->step_ev)
            eng_cancel (sim, k->step_ev);
          k->step_ev = 0;
          k->answered = now;
        }
      double wait = now - k->answered;
      double comm = MAX (0, (now - fa->round_start) - k->compute - wait);
      pol_run_iteration (&fa->run, c, fa->round, fa->round_start, now, k->compute, comm, wait,
                         0);
      pol_worker_span (&fa->env, c, "wait", k->answered, now, fa->round, 0);
    }
  fa->run.updates += fa->round_steps;
  fa->run.samples += fa->round_steps * fa->env.batch;
  pol_run_progress (&fa->run, now);
  fa->round++;
  if (pol_run_round_end (&fa->run, fa->global, fa->round >= fa->env.iterations))
    start_round (fa);
}

static void
on_deadline (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  FaPolicy *fa = ctx;
  fa->deadline_ev = 0;
  close_round (fa);
}

/* A client's answer has arrived at the server. */
static void
on_answer (EngSim *sim, gpointer ctx, gpointer data, const NetTransfer *t G_GNUC_UNUSED)
{
  FaPolicy *fa = ctx;
  int c = client_of (data);
  FaClient *k = &fa->cl[c];
  if (!current (fa, data) || k->done)
    return;
  k->done = TRUE;
  k->answered = eng_sim_now (sim);
  if (fa->global)
    {
      double n = train_steps_part_samples (fa->steps, c);
      const float *x = fa->local[c];
      for (gsize i = 0; i < fa->env.n_params; i++)
        fa->sum[i] += n * x[i];
      fa->sum_n += n;
    }
  fa->round_steps += k->steps;
  if (--fa->pending == 0)
    close_round (fa);
}

static void take_step (FaPolicy *fa, int c);

static void
on_step_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  FaPolicy *fa = ctx;
  int c = client_of (data);
  FaClient *k = &fa->cl[c];
  k->step_ev = 0;
  if (!current (fa, data))
    return;
  if (--k->steps_left > 0)
    {
      take_step (fa, c);
      return;
    }
  /* its model as the answer carries it (local[c] is rewritten only by the
   * next round's global model) */
  if (fa->global)
    pol_wire_round (&fa->env, fa->local[c], fa->env.n_params);
  net_send (fa->env.net, c, fa->server, (double) fa->env.n_params * sizeof (float), 0,
            on_answer, fa, tag_of (fa, c));
}

/* One local step of client c, starting now. */
static void
take_step (FaPolicy *fa, int c)
{
  const PolEnv *env = &fa->env;
  FaClient *k = &fa->cl[c];
  double now = eng_sim_now (env->sim), T;
  /* the round's first step reads the global model and writes its client's
   * copy in the optimizer's pass (where the model crossed the wire in
   * another format, on_model wrote the rounded copy and the step reads
   * it); later steps update that copy in place */
  gboolean first = k->steps_left == k->steps && !pol_wire_rounds (env);
  const float *own[1] = { fa->global ? (first ? fa->global : fa->local[c]) : NULL };
  float *update[1] = { own[0] ? fa->local[c] : NULL };
  const float *from[1] = { first ? fa->global : NULL };
  TrainStep st = { .n = 1, .first = c, .own = own, .grads = &fa->grad,
                   .opt = fa->opt ? fa->opt + c : NULL, .update = update,
                   .update_from = from, .seconds = &T };
  train_step (fa->steps, &st);
  double dt = T + fa->update_time;
  k->compute += dt;
  pol_worker_span (env, c, "compute", now, now + dt, fa->round, 0);
  k->step_ev = eng_schedule (env->sim, dt, on_step_done, fa, tag_of (fa, c));
}

/* The global model has reached client c. */
static void
on_model (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data,
          const NetTransfer *t G_GNUC_UNUSED)
{
  FaPolicy *fa = ctx;
  int c = client_of (data);
  FaClient *k = &fa->cl[c];
  if (!current (fa, data) || k->dropped)
    return;
  if (fa->global && pol_wire_rounds (&fa->env))
    {
      /* the global model as the transfer carried it, which the first step
       * then reads from the client's copy */
      memcpy (fa->local[c], fa->global, fa->env.n_params * sizeof (float));
      pol_wire_round (&fa->env, fa->local[c], fa->env.n_params);
    }
  take_step (fa, c);   /* else its first step copies the global model */
}

static void
start_round (FaPolicy *fa)
{
  const PolEnv *env = &fa->env;
  double now = eng_sim_now (env->sim);
  int W = fa->W;
  int m = (int) CLAMP (floor (fa->fraction * W + 0.5), 1, W);
  fa->round_start = now;
  fa->pending = 0;
  fa->round_steps = 0;
  fa->sum_n = 0;
  if (fa->sum)
    memset (fa->sum, 0, env->n_params * sizeof (double));
  for (int c = 0; c < W; c++)
    {
      fa->order[c] = c;
      FaClient *k = &fa->cl[c];
      k->selected = k->dropped = k->done = FALSE;
      k->compute = 0;
    }
  if (m < W)
    eng_rng_shuffle (&fa->rng, fa->order, (gsize) W);
  for (int i = 0; i < m; i++)
    fa->cl[fa->order[i]].selected = TRUE;
  for (int c = 0; c < W; c++)
    {
      FaClient *k = &fa->cl[c];
      if (!k->selected)
        continue;
      k->dropped = fa->drop > 0 && eng_rng_uniform (&fa->rng) < fa->drop;
      double n = fa->global ? train_steps_part_samples (fa->steps, c) : (double) env->batch;
      k->steps = (gint64) MAX (1.0, ceil (fa->local_epochs * n / env->batch));
      k->steps_left = k->steps;
      if (!k->dropped)
        fa->pending++;
      net_send (env->net, fa->server, c, (double) env->n_params * sizeof (float), 0, on_model,
                fa, tag_of (fa, c));
    }
  if (fa->pending == 0)
    {
      close_round (fa);
      return;
    }
  if (fa->deadline > 0)
    fa->deadline_ev = eng_schedule (env->sim, fa->deadline, on_deadline, fa, NULL);
}

static void
fa_start_event (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  start_round (ctx);
}

static PolPolicy *
fa_create (const PolEnv *env, GError **error G_GNUC_UNUSED)
{
  FaPolicy *fa = g_new0 (FaPolicy, 1);
  fa->env = *env;
  fa->W = env->workers;
  fa->server = env->workers;
  int W = fa->W;
  gsize P = env->n_params;
  fa->fraction = base_values_double (env->values, "policy.fraction");
  fa->local_epochs = base_values_double (env->values, "policy.local_epochs");
  fa->drop = base_values_double (env->values, "policy.drop");
  fa->deadline = base_values_double (env->values, "policy.deadline");
  eng_rng_init (&fa->rng, env->seed, FA_STREAM);
  pol_run_init (&fa->run, &fa->env);
  fa->cl = g_new0 (FaClient, W);
  fa->order = g_new (int, W);
  if (env->model)
    {
      fa->global = g_new0 (float, P);
      env->model->ops->init (env->model, fa->global, env->seed);
      fa->local = g_new (float *, W);
      fa->opt = g_new (KernOptimizer *, W);
      for (int c = 0; c < W; c++)
        {
          fa->local[c] = g_new0 (float, P);
          fa->opt[c] = kern_optimizer_new (&env->opt, P);
        }
      fa->sum = g_new0 (double, P);
      fa->grad = g_new0 (float, P);
    }
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? W : 0, .batch = env->batch, .slots = 1,
                            .host_timed = env->host_timed, .compute_time = env->compute_time,
                            .ctx = env->compute_ctx };
  fa->steps = train_steps_new (&setup);
  fa->update_time = env->update_time (env->compute_ctx, P);
  return (PolPolicy *) fa;
}

static void
fa_start (PolPolicy *p)
{
  FaPolicy *fa = (FaPolicy *) p;
  pol_run_start (&fa->run, fa->global);
  eng_schedule (fa->env.sim, 0, fa_start_event, fa, NULL);
}

static void
fa_finish (PolPolicy *p, PolResult *out)
{
  FaPolicy *fa = (FaPolicy *) p;
  pol_run_finish (&fa->run, fa->global, out);
  out->rounds = fa->round;
}

static void
fa_free (PolPolicy *p)
{
  FaPolicy *fa = (FaPolicy *) p;
  if (!fa)
    return;
  if (fa->local)
    for (int c = 0; c < fa->W; c++)
      {
        g_free (fa->local[c]);
        kern_optimizer_free (fa->opt[c]);
      }
  g_free (fa->local);
  g_free (fa->opt);
  g_free (fa->global);
  g_free (fa->sum);
  g_free (fa->grad);
  g_free (fa->order);
  train_steps_free (fa->steps);
  g_free (fa->cl);
  g_free (fa);
}

static GPtrArray *
fa_host_names (int workers, int servers G_GNUC_UNUSED)
{
  GPtrArray *names = pol_worker_host_names (workers, 0);
  g_ptr_array_add (names, g_strdup ("server0"));
  return names;
}

static const char *const fa_tags[] = { "model" };

static const BaseKey fa_keys[] = {
  { "policy", "fraction", BASE_KEY_QUANTITY, 0, "0.1", 0, 1, BASE_OPEN_MIN, NULL, 0,
    "kind = fedavg: share C of the clients the server samples each round, m = max(1, round(C x workers)).", NULL },
  { "policy", "local_epochs", BASE_KEY_QUANTITY, 0, "1", 0, 1000, BASE_OPEN_MIN, NULL, 0,
    "kind = fedavg: passes E over its own data a sampled client makes per round: max(1, ceil(E x its samples / batch)) local steps.", NULL },
  { "policy", "drop", BASE_KEY_QUANTITY, 0, "0", 0, 1, 0, NULL, 0,
    "kind = fedavg: probability that a sampled client drops out of the round (it never answers); below 1.", NULL },
  { "policy", "deadline", BASE_KEY_QUANTITY, BASE_UNIT_TIME, "0", 0, BASE_BIG, 0, NULL, 0,
    "kind = fedavg: a round closes this long after it starts even if clients are still training; their work is lost (0 = wait for every client that did not drop).", NULL },
  { .section = NULL },
};

/* The server is the one host after the clients; some client can answer. */
static gboolean
fa_validate (PolCheck *chk, GError **error)
{
  if (chk->servers != 1)
    return pol_key_error (error, "cluster", "servers",
                          "kind = fedavg has one aggregation server, found %" G_GINT64_FORMAT
                          "; set servers = 1", chk->servers);
  if (base_values_double (chk->values, "policy.drop") >= 1)
    return pol_key_error (error, "policy", "drop",
                          "1 drops every sampled client, so no round would ever train; use a "
                          "probability below 1");
  return TRUE;
}

/* Its keys would do nothing under another policy. */
static gboolean
fa_foreign (const PolCheck *chk, GError **error)
{
  return pol_keys_at_default (chk->values, fa_keys, "kind = fedavg", error);
}

/* A round sends the model to m = max(1, round(fraction x W)) clients and
 * their models back. */
static void
fa_work (const PolModelInfo *mi, PolWork *out)
{
  double m = MAX (1.0, round (base_values_double (mi->values, "policy.fraction")
                              * (double) mi->workers));
  *out = (PolWork) { .messages = 2 * m, .spans = 2 * m, .iteration_rows = m,
                     .in_flight = m };
}

const PolPolicyOps pol_fedavg_ops = {
  .work = fa_work,
  .name = "fedavg",
  .source = "H. B. McMahan et al.: Communication-efficient learning of deep networks from "
            "decentralized data, AISTATS 2017",
  .keys = fa_keys,
  .description = "federated averaging: each round the server samples a fraction of the "
                 "clients, they train on their own data for local_epochs and the server "
                 "averages their models by data size",
  .validate = fa_validate,
  .foreign = fa_foreign,
  .no_update_hint = "[policy] deadline: no client answered in any round (each was cut off at "
                    "the deadline or dropped out), so the model never changed; raise [policy] "
                    "deadline above a client's local training time, or lower [policy] drop",
  .tag_names = fa_tags,
  .n_tags = G_N_ELEMENTS (fa_tags),
  .host_names = fa_host_names,
  .create = fa_create,
  .start = fa_start,
  .finish = fa_finish,
  .wire_numerics = TRUE,
  .free = fa_free,
};
