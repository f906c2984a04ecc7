/*
 * exchange.c — every worker sends its whole gradient to every other: the
 * first strawman of the parameter-server paper (M. Li et al., OSDI 2014),
 * and the worked example of a schedule over the mesh (docs/architecture.md).
 *
 * An iteration starts for every worker at once; worker w's step takes T_w.
 * When the slowest is done, the workers all-gather their gradients (W
 * blocks of 4P bytes, [policy] algorithm), then each applies the mean of
 * the W gradients, taking update_time(P): the math of all-reduce, with
 * every gradient crossing to every worker.  Worker w's row: compute =
 * T_w + update, wait = max T - T_w, comm = the all-gather.
 */
#include "config.h"

#include <string.h>

#include "policies/common.h"
#include "train/mesh.h"
#include "train/step.h"

typedef struct {
  PolEnv env;
  PolRun run;
  const CommAlgorithm *alg;
  TrainMesh *mesh;           /* the workers, one data axis */
  TrainSteps *steps;
  float *params, *grad, *sum; /* (n_params) each; NULL without math */
  KernOptimizer *opt;
  double *T;                 /* (workers) this iteration's step times */
  double start, slowest, update; /* s */
  gint64 iter;
} ExPolicy;

static void start_iteration (EngSim *sim, gpointer ctx, gpointer data);

/* The iteration's rows; the next iteration, or the end of the run. */
static void
on_update_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ExPolicy *ex = ctx;
  double now = eng_sim_now (sim), gather = now - ex->start - ex->slowest - ex->update;
  for (int w = 0; w < ex->env.workers; w++)
    pol_run_iteration (&ex->run, w, ex->iter, ex->start, now, ex->T[w] + ex->update,
                       gather, ex->slowest - ex->T[w], 0);
  ex->run.updates += ex->env.workers;
  ex->run.samples += (gint64) ex->env.workers * ex->env.batch;
  pol_run_progress (&ex->run, now);
  if (pol_run_round_end (&ex->run, ex->params, ++ex->iter >= ex->env.iterations))
    start_iteration (sim, ex, NULL);
}

/* Every worker holds every gradient: each applies their mean. */
static void
on_gathered (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ExPolicy *ex = ctx;
  if (ex->params)
    {
      float inv = 1.0f / (float) ex->env.workers;
      for (gsize i = 0; i < ex->env.n_params; i++)
        ex->sum[i] *= inv;
      kern_optimizer_step (ex->opt, ex->params, ex->sum);
    }
  eng_schedule (sim, ex->update, on_update_done, ex, NULL);
}

/* The slowest worker is done: all-gather the gradients over the data axis. */
static void
exchange (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ExPolicy *ex = ctx;
  TrainGroup g = train_mesh_group (ex->mesh, TRAIN_AXIS_DATA, 0);
  CommArgs a = pol_comm_args (&ex->env, g.n, g.hosts, NULL, (gsize) g.n * ex->env.n_params, 0);
  g_autoptr (GError) error = NULL;
  if (!comm_start (ex->alg, &a, COMM_ALLGATHER, on_gathered, ex, NULL, &error))
    g_error ("all-gather with %s: %s", ex->alg->name, error->message);
}

static void
start_iteration (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ExPolicy *ex = ctx;
  double now = eng_sim_now (sim);
  ex->start = now;
  ex->slowest = 0;
  if (ex->sum)
    memset (ex->sum, 0, ex->env.n_params * sizeof (float));
  for (int w = 0; w < ex->env.workers; w++)
    {
      const float *at[1] = { ex->params };
      TrainStep st = { .n = 1, .first = w, .own = at, .grads = &ex->grad, .seconds = &ex->T[w] };
      train_step (ex->steps, &st);
      for (gsize i = 0; ex->sum && i < ex->env.n_params; i++)
        ex->sum[i] += ex->grad[i];
      ex->slowest = MAX (ex->slowest, ex->T[w]);
      pol_worker_span (&ex->env, w, "compute", now, now + ex->T[w], ex->iter, 0);
    }
  eng_schedule (sim, ex->slowest, exchange, ex, NULL);
}

static PolPolicy *
ex_create (const PolEnv *env, GError **error)
{
  const CommAlgorithm *alg = pol_env_algorithm (env, error);
  if (!alg)
    return NULL;
  ExPolicy *ex = g_new0 (ExPolicy, 1);
  ex->env = *env;
  ex->alg = alg;
  pol_run_init (&ex->run, &ex->env);
  ex->mesh = train_mesh_new_data (env->workers);
  ex->T = g_new0 (double, env->workers);
  ex->update = env->update_time (env->compute_ctx, env->n_params);
  if (env->model)
    {
      ex->params = g_new0 (float, env->n_params);
      env->model->ops->init (env->model, ex->params, env->seed);
      ex->grad = g_new0 (float, env->n_params);
      ex->sum = g_new0 (float, env->n_params);
      ex->opt = kern_optimizer_new (&env->opt, env->n_params);
    }
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? env->workers : 0, .batch = env->batch,
                            .slots = 1, .host_timed = env->host_timed,
                            .compute_time = env->compute_time, .ctx = env->compute_ctx };
  ex->steps = train_steps_new (&setup);
  return (PolPolicy *) ex;
}

static void
ex_start (PolPolicy *p)
{
  ExPolicy *ex = (ExPolicy *) p;
  pol_report_mesh (&ex->env, ex->mesh);
  TrainGroup g = train_mesh_group (ex->mesh, TRAIN_AXIS_DATA, 0);
  CommArgs a = pol_comm_args (&ex->env, g.n, g.hosts, NULL, (gsize) g.n * ex->env.n_params, 0);
  pol_report_algorithm (&ex->env, ex->alg, comm_resolve (ex->alg, &a, COMM_ALLGATHER));
  pol_run_start (&ex->run, ex->params);
  eng_schedule (ex->env.sim, 0, start_iteration, ex, NULL);
}

static void
ex_finish (PolPolicy *p, PolResult *out)
{
  ExPolicy *ex = (ExPolicy *) p;
  pol_run_finish (&ex->run, ex->params, out);
}

static void
ex_free (PolPolicy *p)
{
  ExPolicy *ex = (ExPolicy *) p;
  train_steps_free (ex->steps);
  train_mesh_free (ex->mesh);
  if (ex->opt)
    kern_optimizer_free (ex->opt);
  g_free (ex->params);
  g_free (ex->grad);
  g_free (ex->sum);
  g_free (ex->T);
  g_free (ex);
}

/* [policy] algorithm must do all-gathers (auto picks one that does). */
static gboolean
ex_validate (PolCheck *chk, GError **error)
{
  const CommAlgorithm *alg = comm_lookup (base_values_string (chk->values, "policy.algorithm"));
  if (!alg || comm_does (alg, COMM_ALLGATHER))
    return TRUE;
  return pol_key_error (error, "policy", "algorithm",
                        "%s does no all-gather, which this policy runs; use auto or an "
                        "algorithm that does (docs/collectives.md)", alg->name);
}

/* One all-gather of W blocks an iteration; a compute span per worker. */
static void
ex_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  gsize n = (gsize) mi->workers * mi->model->ops->n_params (mi->model);
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double each = comm_messages (alg, COMM_ALLGATHER, (int) W, n, 1);
  *out = (PolWork) { .messages = each, .spans = W, .iteration_rows = W, .in_flight = W };
}

static const char *const ex_tags[] = { "gradient" };

const PolPolicyOps pol_exchange_ops = {
  .name = "exchange",
  .description = "every worker sends its whole gradient to every other (an all-gather) and "
                 "applies the mean: all-reduce's math, every gradient crossing to every worker",
  .source = "M. Li et al.: Scaling distributed machine learning with the parameter server, "
            "OSDI 2014 (its strawman baselines)",
  .validate = ex_validate,
  .work = ex_work,
  .tag_names = ex_tags,
  .n_tags = G_N_ELEMENTS (ex_tags),
  .host_names = pol_worker_host_names,
  .create = ex_create,
  .start = ex_start,
  .finish = ex_finish,
  .free = ex_free,
};
