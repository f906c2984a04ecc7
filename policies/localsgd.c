/*
 * localsgd.c — local SGD: workers train their own copies of the model and
 * average them every H local steps.
 *
 * Every worker w keeps its own parameters x_w and its own optimizer state.
 * A round is H local steps ([policy] sync_every) followed by one model
 * averaging.  docs/policies.md ("Local SGD") is the normative description:
 *
 *   - A round starts for every worker at the same instant R (0 for the
 *     first).  Worker w runs its local steps back to back: a step computes a
 *     real gradient on the worker's next batch at x_w, taking T_w =
 *     compute_time(w) (device model times straggler factor, drawn when the
 *     step starts), then applies the worker's optimizer to x_w, taking
 *     update_time(P).  Workers do not wait for one another inside a round.
 *   - When the last worker has finished its last local step of the round
 *     (time M), the parameter vectors (P floats, one buffer) are summed with
 *     an all-reduce of [policy] algorithm (collectives.h); when it ends (time
 *     E) every worker divides the sum by W (taking no simulated time) and
 *     the next round starts at E.
 *   - The run has `iterations` local steps per worker; a last round shorter
 *     than H (iterations not a multiple of H) is averaged too, so a run
 *     always ends on an averaged model.
 *
 * An iteration is one local step of one worker.  Its row: compute = T_w +
 * update; a step that is not the last of its round has comm = wait = 0; the
 * last one also holds wait = M - (its own end of step) and comm = E - M, so
 * that its row ends at E.  Every local step counts as one applied gradient
 * (eval_every); the model is evaluated only after an averaging, the first
 * one at which eval_every more gradients have been applied since the last
 * evaluation (default: after every averaging, or every few rounds: pol_run_init).
 *
 * The math keeps one averaged model that every worker shares after an
 * averaging (copy on write): a worker's first local step of a round writes
 * its own copy in the same pass as the optimizer step
 * (kern_optimizer_step_into), later steps update that copy in place.  The
 * all-reduce runs for its timing only; the sum it delivers is formed at its
 * end, worker by worker (train_lanes_sum: the same floats on any number of
 * host threads), then divided by W.  [numerics] communication rounds
 * each worker's model as it enters the all-reduce and the sum as it
 * leaves, before the division, as kind = allreduce rounds gradients.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "train/lanes.h"
#include "train/mesh.h"
#include "train/step.h"

typedef struct {
  PolEnv env;
  const CommAlgorithm *alg;
  gint64 H;                /* local steps per round */
  TrainMesh *mesh;         /* the workers on one data axis */
  const int *hosts;        /* (workers) their hosts: the averaging's group */
  float *avg;              /* (n_params) the last averaged model; NULL without math */
  float **own;             /* (workers) x_w once it has diverged, (n_params) each */
  float **cur;             /* (workers) x_w: avg or own[w] */
  float *grad;             /* (n_params) scratch gradient */
  TrainSteps *worker_steps; /* each worker's local steps; their lanes
                              * make the averaging's sum */
  KernOptimizer **opt;     /* (workers) each worker's optimizer state */
  double update_time;      /* s, one optimizer step on P parameters */
  /* the round in progress */
  gint64 round_first;      /* iteration index of the round's first local step */
  gint64 round_steps;      /* local steps in this round, <= H */
  gint64 *steps;           /* (workers) local steps finished in this round */
  double *step_start;      /* (workers) s, start of the step in progress */
  double *step_cost;       /* (workers) s, T_w + update of that step */
  double *phase_end;       /* (workers) s, end of its last local step */
  int n_done;              /* workers done with their local steps */
  double sync_start;       /* s, M: when the averaging all-reduce started */
  gint64 syncs;            /* averagings done */
  PolRun run;              /* counters, evaluation, end of the run */
} LsPolicy;

static void start_round (LsPolicy *ls);

/* The averaged model (every copy holds it after an averaging), or NULL
 * without math. */
static const float *
model_params (LsPolicy *ls)
{
  return ls->avg;
}

/* The averaging all-reduce has ended: divide, close the round. */
static void
on_sync_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  LsPolicy *ls = ctx;
  const PolEnv *env = &ls->env;
  double now = eng_sim_now (sim);
  int W = env->workers;
  if (ls->avg)
    {
      gsize P = env->n_params;
      float inv = 1.0f / (float) W;
      memset (ls->avg, 0, P * sizeof (float));
      /* each model as it goes into the all-reduce, the sum as it comes
       * back ([numerics] communication; nothing in fp32) */
      for (int w = 0; w < W; w++)
        pol_wire_round (env, ls->own[w], P);
      train_lanes_sum (train_steps_lanes (ls->worker_steps), ls->avg, (const float *const *) ls->own, W, P);
      pol_wire_round (env, ls->avg, P);
      for (gsize i = 0; i < P; i++)
        ls->avg[i] *= inv;
      for (int w = 0; w < W; w++)
        ls->cur[w] = ls->avg;
    }
  gint64 iter = ls->round_first + ls->round_steps - 1;
  for (int w = 0; w < W; w++)
    {
      double wait = ls->sync_start - ls->phase_end[w];
      double comm = now - ls->sync_start;
      pol_run_iteration (&ls->run, w, iter, ls->step_start[w], now, ls->step_cost[w], comm,
                         wait, 0);
      pol_worker_span (env, w, "wait", ls->phase_end[w], ls->sync_start, iter, 0);
      pol_worker_span (env, w, "send", ls->sync_start, now, iter, 0);
    }
  ls->syncs++;
  ls->round_first += ls->round_steps;
  if (pol_run_round_end (&ls->run, model_params (ls), ls->round_first >= env->iterations))
    start_round (ls);
}

/* Every worker has finished its local steps: all-reduce the parameters. */
static void
start_sync (LsPolicy *ls)
{
  const PolEnv *env = &ls->env;
  ls->sync_start = eng_sim_now (env->sim);
  pol_allreduce_start (env, ls->alg, env->workers, ls->hosts, NULL, env->n_params, 0,
                       on_sync_done, ls, NULL);
}

static void start_step (LsPolicy *ls, int w);

/* Worker w's local step (gradient and optimizer step) has ended. */
static void
on_step_done (EngSim *sim, gpointer ctx, gpointer data)
{
  LsPolicy *ls = ctx;
  int w = GPOINTER_TO_INT (data);
  double now = eng_sim_now (sim);
  ls->steps[w]++;
  ls->run.updates++;
  ls->run.samples += ls->env.batch;
  pol_run_progress (&ls->run, now);
  if (ls->steps[w] < ls->round_steps)
    {
      pol_run_iteration (&ls->run, w, ls->round_first + ls->steps[w] - 1, ls->step_start[w],
                         now, ls->step_cost[w], 0, 0, 0);
      start_step (ls, w);
      return;
    }
  /* its last local step: the row is written when the averaging ends */
  ls->phase_end[w] = now;
  if (++ls->n_done == ls->env.workers)
    start_sync (ls);
}

static void
start_step (LsPolicy *ls, int w)
{
  const PolEnv *env = &ls->env;
  double now = eng_sim_now (env->sim);
  gint64 iter = ls->round_first + ls->steps[w];
  /* x_w is read by no one before the step ends: update it now, into its
   * own copy (written by this step from avg when it still shares it) */
  double T;
  const float *own[1] = { ls->avg ? ls->cur[w] : NULL };
  float *update[1] = { ls->avg ? ls->own[w] : NULL };
  const float *from[1] = { ls->avg && ls->cur[w] == ls->avg ? ls->avg : NULL };
  TrainStep st = { .n = 1, .first = w, .own = own, .grads = &ls->grad,
                   .opt = ls->opt ? ls->opt + w : NULL, .update = update,
                   .update_from = from, .seconds = &T };
  train_step (ls->worker_steps, &st);
  if (ls->avg)
    ls->cur[w] = ls->own[w];
  ls->step_start[w] = now;
  ls->step_cost[w] = T + ls->update_time;
  pol_worker_span (env, w, "compute", now, now + T + ls->update_time, iter, 0);
  eng_schedule (env->sim, T + ls->update_time, on_step_done, ls, GINT_TO_POINTER (w));
}

static void
start_round (LsPolicy *ls)
{
  ls->round_steps = MIN (ls->H, ls->env.iterations - ls->round_first);
  ls->n_done = 0;
  for (int w = 0; w < ls->env.workers; w++)
    ls->steps[w] = 0;
  for (int w = 0; w < ls->env.workers; w++)
    start_step (ls, w);
}

static void
ls_round_event (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  start_round (ctx);
}

static PolPolicy *
ls_create (const PolEnv *env, GError **error)
{
  const CommAlgorithm *alg = pol_env_algorithm (env, error);
  if (!alg)
    return NULL;
  LsPolicy *ls = g_new0 (LsPolicy, 1);
  ls->env = *env;
  ls->alg = alg;
  ls->H = MAX (base_values_int (env->values, "policy.sync_every"), 1);
  int W = env->workers;
  gsize P = env->n_params;
  pol_run_init (&ls->run, &ls->env);
  ls->mesh = train_mesh_new_data (W);
  ls->hosts = train_mesh_group (ls->mesh, TRAIN_AXIS_DATA, 0).hosts;
  ls->steps = g_new0 (gint64, W);
  ls->step_start = g_new0 (double, W);
  ls->step_cost = g_new0 (double, W);
  ls->phase_end = g_new0 (double, W);
  if (env->model)
    {
      ls->avg = g_new0 (float, P);
      env->model->ops->init (env->model, ls->avg, env->seed);
      ls->own = g_new (float *, W);
      ls->cur = g_new (float *, W);
      ls->opt = g_new (KernOptimizer *, W);
      ls->grad = g_new0 (float, P);
      for (int w = 0; w < W; w++)
        {
          ls->own[w] = g_new (float, P);
          ls->cur[w] = ls->avg;
          ls->opt[w] = kern_optimizer_new (&env->opt, P);
        }
    }
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? W : 0, .batch = env->batch, .slots = 1,
                            .host_timed = env->host_timed, .compute_time = env->compute_time,
                            .ctx = env->compute_ctx };
  ls->worker_steps = train_steps_new (&setup);
  ls->update_time = env->update_time (env->compute_ctx, P);
  return (PolPolicy *) ls;
}

static void
ls_start (PolPolicy *p)
{
  LsPolicy *ls = (LsPolicy *) p;
  pol_report_mesh (&ls->env, ls->mesh);
  pol_report_algorithm (&ls->env, ls->alg,
                        pol_allreduce_resolve (&ls->env, ls->alg, ls->env.workers,
                                               ls->hosts, ls->env.n_params));
  pol_run_start (&ls->run, model_params (ls));
  eng_schedule (ls->env.sim, 0, ls_round_event, ls, NULL);
}

static void
ls_finish (PolPolicy *p, PolResult *out)
{
  LsPolicy *ls = (LsPolicy *) p;
  pol_run_finish (&ls->run, model_params (ls), out);
}

static void
ls_free (PolPolicy *p)
{
  LsPolicy *ls = (LsPolicy *) p;
  if (!ls)
    return;
  int W = ls->env.workers;
  if (ls->avg)
    for (int w = 0; w < W; w++)
      {
        g_free (ls->own[w]);
        kern_optimizer_free (ls->opt[w]);
      }
  g_free (ls->avg);
  g_free (ls->own);
  g_free (ls->cur);
  g_free (ls->grad);
  train_steps_free (ls->worker_steps);
  g_free (ls->opt);
  train_mesh_free (ls->mesh);
  g_free (ls->steps);
  g_free (ls->step_start);
  g_free (ls->step_cost);
  g_free (ls->phase_end);
  g_free (ls);
}

static const char *const ls_tags[] = { "average" };

static const BaseKey ls_keys[] = {
  { "policy", "sync_every", BASE_KEY_INT, 0, "1", 1, 1e12, 0, NULL, 0,
    "kind = local-sgd: local steps H each worker takes on its own model between two averagings of the models (all-reduce with algorithm).", NULL },
  { .section = NULL },
};

/* One all-reduce of the model every sync_every iterations; spans: each
 * step's compute, and the averaging. */
static void
ls_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  double H = (double) MAX (base_values_int (mi->values, "policy.sync_every"), 1);
  gsize P = mi->model->ops->n_params (mi->model);
  /* auto counted as one channel: its count depends on the size */
  int C = (int) MAX (base_values_int (mi->values, "policy.channels"), 1);
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double each = comm_messages (alg, COMM_ALLREDUCE, (int) W, P, C);
  *out = (PolWork) { .messages = each / H, .spans = W * (1 + 1 / H), .iteration_rows = W,
                     .in_flight = W * C };
}

const PolPolicyOps pol_local_sgd_ops = {
  .work = ls_work,
  .name = "local-sgd",
  .source = "S. U. Stich: Local SGD converges fast and communicates little, ICLR 2019",
  .keys = ls_keys,
  .description = "local SGD: every worker takes sync_every steps on its own copy of the model, "
                 "then the copies are averaged with an all-reduce",
  .tag_names = ls_tags,
  .n_tags = G_N_ELEMENTS (ls_tags),
  .host_names = pol_worker_host_names,
  .create = ls_create,
  .start = ls_start,
  .finish = ls_finish,
  .wire_numerics = TRUE,
  .free = ls_free,
};
