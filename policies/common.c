/*
 * common.c — pieces the policies share: the counters of a run (PolRun) and
 * their evaluation, progress, iteration rows and result; the host names of
 * the worker-only policies (all-reduce, local SGD, pipeline); spans; and the
 * all-reduce those policies start; the evaluation of a model and the cost
 * of summing received bytes; the report of a policy's mesh.  common.h and
 * policy.h state the contracts.
 *
 * Each helper does exactly what the policies did on their own before, so a
 * policy that uses them writes the same trace rows.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"

void
pol_run_init_ranks (PolRun *run, PolEnv *env, gint64 ranks)
{
  if (env->eval_every <= 0)
    {
      gint64 rounds = MAX (1, (env->iterations + POL_DEFAULT_EVALS - 1) / POL_DEFAULT_EVALS);
      env->eval_every = ranks * rounds;
    }
  memset (run, 0, sizeof *run);
  run->env = env;
  run->ranks = ranks;
}

void
pol_run_init (PolRun *run, PolEnv *env)
{
  pol_run_init_ranks (run, env, env->workers);
}

void
pol_run_record_metric (PolRun *run, const float *params)
{
  const PolEnv *env = run->env;
  double now = eng_sim_now (env->sim);

  if (!env->model)
    return;
  double loss, acc;
  pol_evaluate (env, params, &loss, &acc);
  if (env->rec.metric)
    env->rec.metric (env->rec.ctx, now, run->updates, loss, acc,
                     run->consensus ? run->consensus (run->consensus_ctx) : NAN);
  PolTarget hit = env->target_loss > 0 && loss <= env->target_loss ? POL_TARGET_LOSS
                  : env->target_accuracy > 0 && acc >= env->target_accuracy ? POL_TARGET_ACCURACY
                  : POL_TARGET_NONE;
  if (hit != POL_TARGET_NONE)
    {
      run->reached_target = hit;
      run->finished = TRUE;
      run->end_time = now;
      eng_stop (env->sim);
    }
}

void
pol_run_start (PolRun *run, const float *params)
{
  pol_run_record_metric (run, params);
  run->next_eval = run->env->eval_every;
}

void
pol_run_progress (const PolRun *run, double t)
{
  const PolEnv *env = run->env;

  if (env->rec.progress)
    env->rec.progress (env->rec.ctx, t, run->updates, env->iterations * run->ranks);
}

void
pol_run_iteration (PolRun *run, int w, gint64 iteration, double start, double end,
                   double compute, double comm, double wait, gint64 staleness)
{
  const PolRecorder *rec = &run->env->rec;

  run->sum_compute += compute;
  run->sum_comm += comm;
  run->sum_wait += wait;
  if (rec->want_iterations && rec->iteration)
    rec->iteration (rec->ctx, w, iteration, start, end, compute, comm, wait, staleness);
}

gboolean
pol_run_eval_due (const PolRun *run, gboolean last)
{
  return run->updates >= run->next_eval || last;
}

gboolean
pol_run_round_end (PolRun *run, const float *params, gboolean last)
{
  EngSim *sim = run->env->sim;

  if (pol_run_eval_due (run, last))
    {
      while (run->next_eval <= run->updates)
        run->next_eval += run->env->eval_every;
      pol_run_record_metric (run, params);
    }
  if (run->finished)
    return FALSE;
  if (last)
    {
      run->finished = TRUE;
      run->end_time = eng_sim_now (sim);
      eng_stop (sim);
      return FALSE;
    }
  return TRUE;
}

void
pol_run_finish (const PolRun *run, const float *params, PolResult *out)
{
  const PolEnv *env = run->env;

  memset (out, 0, sizeof *out);
  out->updates = run->updates;
  out->samples = run->samples;
  out->rounds = run->updates / run->ranks;
  out->end_time = run->finished ? run->end_time : eng_sim_now (env->sim);
  pol_evaluate (env, params, &out->final_loss, &out->final_accuracy);
  out->reached_target = run->reached_target;
  out->compute = run->sum_compute;
  out->comm = run->sum_comm;
  out->wait = run->sum_wait;
  /* what a dynamic loss scale did (docs/kernels.md) */
  if (env->model && env->model->num.dynamic_scale && env->rec.param)
    {
      char text[G_ASCII_DTOSTR_BUF_SIZE];
      g_snprintf (text, sizeof text, "%" G_GINT64_FORMAT, env->model->scaler.skipped);
      env->rec.param (env->rec.ctx, "numerics.skipped_gradients", text);
      g_ascii_formatd (text, sizeof text, "%.9g", env->model->scaler.scale);
      env->rec.param (env->rec.ctx, "numerics.final_loss_scale", text);
    }
}

GPtrArray *
pol_worker_host_names (int workers, int servers G_GNUC_UNUSED)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (int w = 0; w < workers; w++)
    g_ptr_array_add (names, g_strdup_printf ("worker%d", w));
  return names;
}

void
pol_span (const PolEnv *env, const char *actor, const char *kind, double a, double b,
          gint64 iteration, double bytes)
{
  if (env->rec.want_spans && env->rec.span && b > a)
    env->rec.span (env->rec.ctx, actor, kind, a, b, iteration, bytes, NULL);
}

void
pol_worker_span_detail (const PolEnv *env, int w, const char *kind, double a, double b,
                        gint64 iteration, double bytes, const PolSpanDetail *detail)
{
  if (!env->rec.want_spans || !env->rec.span || !(b > a))
    return;
  char name[32];
  g_snprintf (name, sizeof name, "worker%d", w);
  env->rec.span (env->rec.ctx, name, kind, a, b, iteration, bytes, detail);
}

void
pol_worker_span (const PolEnv *env, int w, const char *kind, double a, double b,
                 gint64 iteration, double bytes)
{
  pol_worker_span_detail (env, w, kind, a, b, iteration, bytes, NULL);
}

const CommAlgorithm *
pol_env_algorithm (const PolEnv *env, GError **error)
{
  const char *name = base_values_string (env->values, "policy.algorithm");
  const CommAlgorithm *alg = name ? comm_lookup (name) : NULL;
  if (!alg)
    g_set_error (error, POL_ERROR, 0, "unknown all-reduce algorithm '%s'",
                 name ? name : "(none)");
  return alg;
}

int
pol_channels (const BaseValues *values)
{
  gint64 c = base_values_int (values, "policy.channels");
  return c == 0 ? COMM_CHANNELS_AUTO : (int) c;
}

const CommProtocol *
pol_protocol (const BaseValues *values)
{
  if (!base_values_declares (values, "policy.protocol")
      || !base_values_has (values, "policy.protocol"))
    return NULL;
  return comm_protocol_lookup (base_values_string (values, "policy.protocol"));
}

CommArgs
pol_comm_args (const PolEnv *env, int p, const int *hosts, float *const *bufs,
               gsize n, int tag)
{
  CommArgs a = {
    .sim = env->sim,
    .net = env->net,
    .p = p,
    .hosts = hosts,
    .bufs = bufs,
    .n = n,
    /* gradients, as [policy] gradient_precision says; a caller moving
     * other values sets its own */
    .elem_bytes = env->grad_bytes > 0 ? env->grad_bytes : sizeof (float),
    .reduce_per_byte = pol_reduce_per_byte (env),
    .root = 0,
    .tag = tag,
    .channels = pol_channels (env->values),
    .protocol = pol_protocol (env->values),
    .hw = (CommHw) env->hw,
    .intra_hw = (CommHw) env->intra_hw,
    .launch_overhead = env->launch_overhead,
    .step_overhead = env->step_overhead,
    .intra_step_overhead = env->intra_step_overhead,
    .net_overhead = env->net_overhead,
    .nic_latency = env->nic_latency,
    .arch = (CommArch) env->arch,
    .amd_host = env->amd_host,
  };
  return a;
}

CommArgs
pol_collective_args (const PolEnv *env, int p, const int *hosts, gsize n, double elem_bytes,
                     int tag)
{
  CommArgs a = pol_comm_args (env, p, hosts, NULL, n, tag);
  if (elem_bytes > 0)
    a.elem_bytes = elem_bytes;
  a.channels = 1;
  return a;
}

void
pol_collective_start (const PolEnv *env, const CommAlgorithm *alg, CommKind kind, int p,
                      const int *hosts, gsize n, double elem_bytes, int tag, CommDone done,
                      gpointer ctx, gpointer data)
{
  CommArgs a = pol_collective_args (env, p, hosts, n, elem_bytes, tag);
  g_autoptr (GError) error = NULL;
  if (!comm_start (alg, &a, kind, done, ctx, data, &error))
    g_error ("%s with %s: %s", comm_kind_name (kind), alg->name, error->message);
}

void
pol_allreduce_start (const PolEnv *env, const CommAlgorithm *alg, int p,
                     const int *hosts, float *const *bufs, gsize n, int tag,
                     CommDone done, gpointer ctx, gpointer data)
{
  CommArgs a = pol_comm_args (env, p, hosts, bufs, n, tag);
  g_autoptr (GError) error = NULL;
  if (!comm_start (alg, &a, COMM_ALLREDUCE, done, ctx, data, &error))
    g_error ("all-reduce with %s: %s", alg->name, error->message); /* validated before */
}

const CommAlgorithm *
pol_allreduce_resolve (const PolEnv *env, const CommAlgorithm *alg, int p,
                       const int *hosts, gsize n)
{
  CommArgs a = pol_comm_args (env, p, hosts, NULL, n, 0);
  const CommAlgorithm *chosen = comm_resolve (alg, &a, COMM_ALLREDUCE);

  g_assert (chosen != NULL);   /* every registry entry does all-reduce */
  return chosen;
}

void
pol_report_algorithm (const PolEnv *env, const CommAlgorithm *alg,
                      const CommAlgorithm *chosen)
{
  if (alg->choose != NULL && env->rec.param != NULL)
    env->rec.param (env->rec.ctx, "policy.algorithm_chosen", chosen->name);
}

void
pol_report_plan (const PolEnv *env, const CommAlgorithm *alg, const CommArgs *a,
                 CommKind kind)
{
  CommPlan plan;

  if (env->rec.param == NULL || !comm_plan (alg, a, kind, &plan))
    return;
  if (a->protocol != NULL && a->protocol->selector && plan.protocol != NULL)
    env->rec.param (env->rec.ctx, "policy.protocol_chosen", plan.protocol->name);
  if (a->channels == COMM_CHANNELS_AUTO && kind == COMM_ALLREDUCE)
    {
      g_autofree char *c = g_strdup_printf ("%d", plan.channels);
      env->rec.param (env->rec.ctx, "policy.channels_chosen", c);
    }
}

double
pol_reduce_per_byte (const PolEnv *env)
{
  return base_values_int (env->values, "policy.reduce") ? 3.0 / env->memory_bandwidth : 0.0;
}

void
pol_evaluate (const PolEnv *env, const float *params, double *loss, double *accuracy)
{
  double unused;
  if (!env->model)
    {
      *loss = *accuracy = NAN;
      return;
    }
  /* the model as the steps run it: its parameters in the weights' format */
  KernFormat f = env->model->num.weights;
  g_autofree float *rounded = f != KERN_FORMAT_FP32 ? g_memdup2 (params, env->n_params
                                                                          * sizeof (float))
                                                    : NULL;
  if (rounded)
    {
      kern_round_to (f, rounded, env->n_params);
      params = rounded;
    }
  env->model->ops->evaluate (env->model, params, env->eval, loss, &unused);
  env->model->ops->evaluate (env->model, params, env->test, &unused, accuracy);
}

void
pol_wire_round (const PolEnv *env, float *x, gsize n)
{
  if (env->model)
    kern_round_to (env->model->num.communication, x, n);
}

gboolean
pol_wire_rounds (const PolEnv *env)
{
  return env->model && env->model->num.communication != KERN_FORMAT_FP32;
}

/* The samplers of env's workers over env->train: iid parts, or by label
 * (the scenario loader has checked the by-label bounds). */
TrainSampler *
pol_samplers_for_env (const PolEnv *env)
{
  if (env->partition == TRAIN_PARTITION_BY_LABEL)
    return train_samplers_new_by_label (env->train->y, env->train->n, env->train->k,
                                      env->workers, env->classes_per_worker, env->seed);
  return train_samplers_new (env->train->n, env->workers, env->seed);
}

void
pol_report_mesh (const PolEnv *env, const TrainMesh *mesh)
{
  if (!env->rec.mesh)
    return;
  for (int r = 0; r < train_mesh_ranks (mesh); r++)
    {
      PolMeshRank m = { .rank = r,
                        .host = net_network_host_name (env->net, train_mesh_host (mesh, r)) };
      for (int a = 0; a < TRAIN_N_AXES; a++)
        m.coord[a] = train_mesh_coord (mesh, r, (TrainAxis) a);
      env->rec.mesh (env->rec.ctx, &m);
    }
}
