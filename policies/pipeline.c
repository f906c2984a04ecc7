/*
 * pipeline.c — pipeline parallelism: GPipe and 1F1B (PipeDream-flush).
 *
 * The model's layers are cut into `stages` contiguous groups, one per
 * worker; `replicas` copies of that pipeline train data-parallel: a mesh of
 * replicas (its data axis) x stages (its pipeline axis, train/mesh.h), rank
 * r x stages + s running stage s of replica r.  docs/policies.md
 * ("Pipeline") is the normative description; in short:
 *
 *   - An iteration starts for every worker at once.  Each replica draws
 *     `batch` samples (its own sampler, as a data-parallel worker would) and
 *     cuts them into m micro-batches of batch / m consecutive samples.
 *   - Stage s runs its 2m operations in the order of the schedule
 *     (pol_pipeline_ops_order), one at a time, each as soon as the one
 *     before it has ended and its input is there: a forward of micro-batch
 *     i needs the activations from stage s - 1 (stage 0 has its batch), a
 *     backward needs the gradient from stage s + 1 (the last stage: its own
 *     forward of i).  An operation's time is the stage's layers' device
 *     time on one micro-batch, through scale_time (straggler factor).
 *   - When a forward ends, its output (n x width x 4 bytes) is sent to stage
 *     s + 1; when a backward ends, the gradient at the stage's input is sent
 *     to stage s - 1 (tags "activation" and "gradient").
 *   - After its last backward, a stage's gradient (the sum of the
 *     micro-batches' gradients of the mean loss over the batch) is averaged
 *     among the replicas with the all-reduce algorithm when replicas > 1,
 *     then the stage applies the optimizer to its parameters, taking
 *     update_time(its parameters) seconds.  When every stage of every
 *     replica has done so, the iteration ends (flush) and the next starts.
 *
 * Replicas apply identical updates, so one copy of the parameters is kept.
 * An iteration's math does not depend on when its operations run: every
 * replica's micro-batches see the parameters of the last flush, and a
 * stage's gradient is the sum of its micro-batches'.  So, unless compute
 * time is measured on the host (which needs each operation's own time),
 * the whole iteration's gradients are computed when it starts, all
 * replicas' batches stacked in one pass (loss_grad_groups: the same
 * numbers up to float rounding), and the operations only take their
 * simulated time.  With measured compute, the math of a stage runs when its
 * operation starts (kernels' KernStage); activations and gradients then
 * live in host buffers per boundary and micro-batch, which the simulated
 * transfers stand for.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/collectives.h"
#include "policies/common.h"
#include "train/lanes.h"
#include "train/mesh.h"
#include "train/step.h"

enum { TAG_ACTIVATION, TAG_GRADIENT, TAG_ALLREDUCE };

typedef struct {
  int replica, stage, index;  /* its rank on the mesh (replica, stage) */
  int first, last;            /* layers */
  gsize lo, hi;               /* parameters [lo, hi) */
  double t_fwd, t_bwd;        /* s per micro-batch, device model */
  double out_bytes;           /* bytes sent forward per micro-batch */
  double stash_bytes;         /* bytes stashed per micro-batch */
  double flops;               /* per iteration */
  int slots;                  /* most micro-batches stashed at once */
  int *ops;                   /* (2m) schedule order */
  int pos;                    /* next operation */
  gboolean busy;
  gboolean *in_ready;         /* (m) activations of micro-batch i arrived */
  gboolean *grad_ready;       /* (m) gradient of micro-batch i arrived */
  double *in_sent;            /* (m) s, when they were sent */
  double *grad_sent;          /* (m) */
  double blocked_since;       /* s, < 0 when not blocked */
  double op_start;            /* s, start of the running operation */
  int stash, peak_stash;
  double it_compute, it_comm; /* this iteration, s */
  double sum_compute, sum_idle;
  KernStage *ks;              /* NULL without math */
} PlWorker;

typedef struct {
  PolEnv env;
  int P, R, M, W;             /* stages, replicas, micro-batches, workers */
  int n;                      /* samples per micro-batch */
  PolSchedule schedule;
  double *layer_fwd;          /* (n_layers) s of each layer's forward on one
                               * micro-batch (device model, no straggler) */
  double *layer_bwd;          /* (n_layers) its backward */
  int *count;                 /* (P) layers per stage */
  TrainMesh *mesh;            /* data (replicas) x pipeline (stages) */
  PlWorker *w;                /* (W) by rank */
  const CommAlgorithm *alg;
  float *params;              /* (n_params) the one shared copy */
  float **grad;               /* (R) gradients, (n_params) each */
  KernOptimizer **opt;        /* (P) one per stage; NULL without math */
  gboolean stacked;           /* the iteration's math at its start, all
                               * replicas in one pass (see above) */
  TrainSteps *steps;          /* the replicas' steps: their batches, and
                               * stacked, their gradients */
  float ***act;               /* (R)(P - 1) (m x n, width) stage outputs */
  float ***dact;              /* (R)(P - 1) their gradients */
  float **reduce_bufs;        /* (R) */
  int *backward_done;         /* (P) replicas whose stage s ended backward */
  int stages_updated;         /* stages (all replicas) done this iteration */
  double *update_time;        /* (P) s */
  gint64 iter;
  double iter_start;
  double loss_sum;            /* mean losses of the iteration's micro-batches */
  PolRun run;                 /* counters, evaluation, end of the run */
} PlPolicy;

/* Partition (policy.h): best[k][i] = least largest group over the first i
 * layers in k groups, by dynamic programming over the last cut. */
void
pol_pipeline_partition (const double *cost, int L, int stages, int *count)
{
  g_return_if_fail (cost != NULL && count != NULL && stages >= 1 && stages <= L);
  g_autofree double *prefix = g_new0 (double, L + 1);
  for (int i = 0; i < L; i++)
    prefix[i + 1] = prefix[i] + cost[i];
  gsize cells = (gsize) (stages + 1) * (gsize) (L + 1);
  g_autofree double *best = g_new (double, cells);
  g_autofree int *cut = g_new0 (int, cells);
#define AT(k, i) ((gsize) (k) * (gsize) (L + 1) + (gsize) (i))
  for (gsize c = 0; c < cells; c++)
    best[c] = INFINITY;
  best[AT (0, 0)] = 0;
  for (int k = 1; k <= stages; k++)
    for (int i = k; i <= L; i++)
      for (int j = k - 1; j < i; j++)
        {
          double v = MAX (best[AT (k - 1, j)], prefix[i] - prefix[j]);
          if (v < best[AT (k, i)])
            {
              best[AT (k, i)] = v;
              cut[AT (k, i)] = j;
            }
        }
  int i = L;
  for (int k = stages; k >= 1; k--)
    {
      int j = cut[AT (k, i)];
      count[k - 1] = i - j;
      i = j;
    }
#undef AT
}

void
pol_pipeline_ops_order (PolSchedule schedule, int p, int s, int m, int *ops)
{
  int k = 0;
  if (schedule == POL_SCHEDULE_GPIPE)
    {
      for (int i = 0; i < m; i++)
        ops[k++] = i;
      for (int i = 0; i < m; i++)
        ops[k++] = -(i + 1);
      return;
    }
  int warm = MIN (p - s - 1, m);
  for (int i = 0; i < warm; i++)
    ops[k++] = i;
  for (int j = 0; j < m - warm; j++)
    {
      ops[k++] = warm + j;
      ops[k++] = -(j + 1);
    }
  for (int j = m - warm; j < m; j++)
    ops[k++] = -(j + 1);
}

void
pol_pipeline_stage_counts (const int *stage_layers, const double *layer_fwd,
                           const double *layer_bwd, int L, int p, int *count)
{
  g_return_if_fail (count != NULL && p >= 1 && p <= L);
  if (stage_layers)
    {
      memcpy (count, stage_layers, sizeof (int) * (gsize) p);
      return;
    }
  g_return_if_fail (layer_fwd != NULL && layer_bwd != NULL);
  g_autofree double *cost = g_new (double, L);
  for (int l = 0; l < L; l++)
    cost[l] = layer_fwd[l] + layer_bwd[l];
  pol_pipeline_partition (cost, L, p, count);
}

int
pol_pipeline_slots (PolSchedule schedule, int p, int s, int m)
{
  return schedule == POL_SCHEDULE_GPIPE ? m : MIN (p - s, m);
}

double
pol_pipeline_stash_bytes (const KernLayer *layers, int first, int last, int n)
{
  g_return_val_if_fail (layers != NULL && 0 <= first && first <= last, NAN);
  double stash = first > 0 ? layers[first - 1].outputs : 0.0;  /* floats per sample */
  for (int l = first; l <= last; l++)
    stash += layers[l].activations;
  return 4.0 * (double) n * stash;
}

static void
span (PlPolicy *pl, int w, const char *kind, double a, double b, double bytes)
{
  pol_worker_span (&pl->env, w, kind, a, b, pl->iter, bytes);
}

/* Message data: worker index, micro-batch and kind packed in a pointer. */
static gpointer
pack (int worker, int micro, int kind)
{
  return GSIZE_TO_POINTER (((gsize) worker << 24) | ((gsize) micro << 1) | (gsize) kind);
}

static void try_next (PlPolicy *pl, PlWorker *wk);
static void start_iteration (EngSim *sim, gpointer ctx, gpointer data);

static void
on_arrive (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data,
           const NetTransfer *t G_GNUC_UNUSED)
{
  PlPolicy *pl = ctx;
  gsize v = GPOINTER_TO_SIZE (data);
  PlWorker *wk = &pl->w[v >> 24];
  int micro = (int) ((v >> 1) & 0x7fffff);
  if (v & 1)
    wk->grad_ready[micro] = TRUE;
  else
    wk->in_ready[micro] = TRUE;
  try_next (pl, wk);
}

/* Every stage of every replica has applied its update: the flush. */
static void
end_iteration (PlPolicy *pl)
{
  EngSim *sim = pl->env.sim;
  double now = eng_sim_now (sim);
  double T = now - pl->iter_start;
  for (int k = 0; k < pl->W; k++)
    {
      PlWorker *wk = &pl->w[k];
      double compute = wk->it_compute, comm = MIN (wk->it_comm, T - compute);
      double wait = MAX (0.0, T - compute - comm);
      wk->sum_compute += compute;
      wk->sum_idle += T - compute;
      pol_run_iteration (&pl->run, k, pl->iter, pl->iter_start, now, compute, comm, wait, 0);
    }
  pl->run.updates += pl->W;
  /* each replica's batch went through every stage once: the stages share
   * its samples, which count once */
  pl->run.samples += (gint64) pl->R * pl->env.batch;
  pol_run_progress (&pl->run, now);
  if (!pol_run_round_end (&pl->run, pl->params, pl->iter + 1 >= pl->env.iterations))
    return;
  pl->iter++;
  start_iteration (sim, pl, NULL);
}

/* Stage s (all replicas) has applied its update. */
static void
on_update_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  double now = eng_sim_now (sim);
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, s);
  for (int r = 0; r < g.n; r++)
    {
      PlWorker *wk = &pl->w[g.ranks[r]];
      wk->it_compute += pl->update_time[s];
      span (pl, wk->index, "update", now - pl->update_time[s], now, 0);
    }
  if (++pl->stages_updated == pl->P)
    end_iteration (pl);
}

/* Stage s's gradient is averaged among replicas: apply it. */
static void
apply_update (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  PlWorker *w0 = &pl->w[s];
  if (pl->env.model)
    {
      float *g = pl->grad[0];
      if (pl->R > 1)
        {
          float inv = 1.0f / (float) pl->R;
          for (gsize i = w0->lo; i < w0->hi; i++)
            g[i] *= inv;
        }
      kern_optimizer_step (pl->opt[s], pl->params + w0->lo, g + w0->lo);
    }
  eng_schedule (sim, pl->update_time[s], on_update_done, pl, data);
}

static void
on_reduce_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  double now = eng_sim_now (sim);
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, s);
  for (int r = 0; r < g.n; r++)
    {
      PlWorker *wk = &pl->w[g.ranks[r]];
      wk->it_comm += now - wk->blocked_since;
      span (pl, wk->index, "send", wk->blocked_since, now,
            4.0 * (double) (wk->hi - wk->lo));
      wk->blocked_since = -1;
    }
  apply_update (sim, pl, data);
}

/* Worker wk has ended its last backward of the iteration. */
static void
stage_backward_done (PlPolicy *pl, PlWorker *wk)
{
  int s = wk->stage;
  if (wk->ks)
    kern_stage_take_grad (wk->ks, pl->grad[wk->replica]);
  if (++pl->backward_done[s] < pl->R)
    return;
  double now = eng_sim_now (pl->env.sim);
  if (pl->R == 1)
    {
      apply_update (pl->env.sim, pl, GINT_TO_POINTER (s));
      return;
    }
  /* the all-reduce starts when the last replica's stage s is done; the
   * others waited for it (their wait), the collective is comm */
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, wk->index);
  for (int r = 0; r < g.n; r++)
    {
      PlWorker *o = &pl->w[g.ranks[r]];
      if (pl->env.model && !pl->stacked)
        pl->reduce_bufs[r] = pl->grad[r] + o->lo;
      o->blocked_since = now;
    }
  pol_allreduce_start (&pl->env, pl->alg, g.n, g.hosts,
                       pl->env.model && !pl->stacked ? pl->reduce_bufs : NULL,
                       wk->hi - wk->lo, TAG_ALLREDUCE,
                       on_reduce_done, pl, GINT_TO_POINTER (s));
}

static void
on_op_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  PlWorker *wk = data;
  double now = eng_sim_now (sim);
  int op = wk->ops[wk->pos];
  int micro = op >= 0 ? op : -op - 1;
  int s = wk->stage;
  wk->it_compute += now - wk->op_start;
  if (op >= 0)
    {
      if (s + 1 < pl->P)
        {
          PlWorker *next = &pl->w[train_mesh_rank_at (pl->mesh, wk->index, TRAIN_AXIS_PIPELINE,
                                                       s + 1)];
          next->in_sent[micro] = now;
          net_send (pl->env.net, train_mesh_host (pl->mesh, wk->index),
                    train_mesh_host (pl->mesh, next->index), wk->out_bytes, TAG_ACTIVATION,
                    on_arrive, pl, pack (next->index, micro, 0));
        }
      else
        {
          wk->grad_sent[micro] = now;
          wk->grad_ready[micro] = TRUE;
        }
    }
  else
    {
      wk->stash--;
      if (s > 0)
        {
          PlWorker *prev = &pl->w[train_mesh_rank_at (pl->mesh, wk->index, TRAIN_AXIS_PIPELINE,
                                                       s - 1)];
          prev->grad_sent[micro] = now;
          net_send (pl->env.net, train_mesh_host (pl->mesh, wk->index),
                    train_mesh_host (pl->mesh, prev->index), prev->out_bytes, TAG_GRADIENT,
                    on_arrive, pl, pack (prev->index, micro, 1));
        }
    }
  wk->busy = FALSE;
  wk->pos++;
  if (wk->pos == 2 * pl->M)
    {
      stage_backward_done (pl, wk);
      return;
    }
  try_next (pl, wk);
}

/* Starts wk's next operation if its input is there; otherwise it waits. */
static void
try_next (PlPolicy *pl, PlWorker *wk)
{
  if (wk->busy || wk->pos >= 2 * pl->M)
    return;
  EngSim *sim = pl->env.sim;
  double now = eng_sim_now (sim);
  int op = wk->ops[wk->pos];
  int micro = op >= 0 ? op : -op - 1;
  gboolean fwd = op >= 0;
  gboolean ready = fwd ? (wk->stage == 0 || wk->in_ready[micro]) : wk->grad_ready[micro];
  if (!ready)
    {
      if (wk->blocked_since < 0)
        wk->blocked_since = now;
      return;
    }
  if (wk->blocked_since >= 0)
    {
      /* blocked time after the input was sent is communication (a recv
       * span, as the summary counts it); before, the bubble (idle) */
      double sent = fwd ? wk->in_sent[micro] : wk->grad_sent[micro];
      double from = MAX (wk->blocked_since, sent);
      wk->it_comm += now - from;
      span (pl, wk->index, "idle", wk->blocked_since, from, 0);
      span (pl, wk->index, "recv", from, now, 0);
      wk->blocked_since = -1;
    }
  const PolEnv *env = &pl->env;
  int r = wk->replica, s = wk->stage, n = pl->n;
  double host = 0;
  if (wk->ks)
    {
      int slot = micro % wk->slots;
      gsize in_w = (gsize) wk->ks->in_width, out_w = (gsize) wk->ks->out_width;
      gsize row = (gsize) micro * (gsize) n;
      gint64 t0 = g_get_monotonic_time ();
      if (fwd)
        {
          const float *in = s == 0 ? train_steps_x (pl->steps, r) + row * (gsize) env->model->d
                                   : pl->act[r][s - 1] + row * in_w;
          float *out = s + 1 < pl->P ? pl->act[r][s] + row * out_w : NULL;
          double loss = kern_stage_forward (wk->ks, slot, in, train_steps_y (pl->steps, r) + row, out);
          if (s + 1 == pl->P)
            pl->loss_sum += loss;
        }
      else
        {
          const float *dout = s + 1 < pl->P ? pl->dact[r][s] + row * out_w : NULL;
          float *din = s > 0 ? pl->dact[r][s - 1] + row * in_w : NULL;
          kern_stage_backward (wk->ks, slot, dout, din);
        }
      host = (double) (g_get_monotonic_time () - t0) / 1e6;
    }
  if (fwd)
    {
      wk->stash++;
      wk->peak_stash = MAX (wk->peak_stash, wk->stash);
    }
  double dt = env->scale_time (env->compute_ctx, wk->index, fwd ? wk->t_fwd : wk->t_bwd, host);
  wk->busy = TRUE;
  wk->op_start = now;
  PolSpanDetail d = { fwd ? "forward" : "backward", micro, wk->first, wk->last };
  pol_worker_span_detail (&pl->env, wk->index, "compute", now, now + dt, pl->iter, 0, &d);
  eng_schedule (sim, dt, on_op_done, pl, wk);
}

static void
start_iteration (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  PlPolicy *pl = ctx;
  const PolEnv *env = &pl->env;
  pl->iter_start = eng_sim_now (sim);
  pl->stages_updated = 0;
  pl->loss_sum = 0;
  memset (pl->backward_done, 0, sizeof (int) * (gsize) pl->P);
  if (env->model)
    {
      /* every replica's batch; stacked, its gradient too, summed into
       * grad[0] in replica order: the stages' all-reduces then only take
       * their time */
      TrainStep st = { .n = pl->R, .first = 0, .params = pl->params,
                       .grads = pl->stacked ? pl->grad : NULL };
      train_step (pl->steps, &st);
      if (pl->stacked)
        train_lanes_sum (train_steps_lanes (pl->steps), pl->grad[0],
                         (const float *const *) pl->grad + 1, pl->R - 1, env->n_params);
    }
  for (int k = 0; k < pl->W; k++)
    {
      PlWorker *wk = &pl->w[k];
      wk->pos = 0;
      wk->busy = FALSE;
      wk->stash = 0;
      wk->blocked_since = -1;
      wk->it_compute = wk->it_comm = 0;
      for (int i = 0; i < pl->M; i++)
        {
          wk->in_ready[i] = wk->grad_ready[i] = FALSE;
          wk->in_sent[i] = wk->grad_sent[i] = pl->iter_start;
        }
      if (wk->ks)
        kern_stage_set_params (wk->ks, pl->params);
    }
  for (int k = 0; k < pl->W; k++)
    try_next (pl, &pl->w[k]);
}

/* Replicas draw batches as data-parallel workers do: one part of the
 * training set each. */
static gint64
pl_data_parts (const BaseValues *values, gint64 workers G_GNUC_UNUSED)
{
  return MAX (base_values_int (values, "policy.replicas"), 1);
}

/* The pipeline's shape from its keys: stages, replicas, micro-batches. */
static void
pl_shape (const BaseValues *v, int *P, int *R, int *M)
{
  *P = (int) base_values_int (v, "policy.stages");
  *R = (int) MAX (base_values_int (v, "policy.replicas"), 1);
  *M = (int) base_values_int (v, "policy.microbatches");
}

/* [policy] stage_layers, or NULL when empty (balanced by device time). */
static const int *
pl_stage_layers (const BaseValues *v)
{
  const GArray *a = base_values_list (v, "policy.stage_layers");
  return a && a->len > 0 ? (const int *) a->data : NULL;
}

/* FALSE (and an error) when env's pipeline shape cannot run: stages, replicas
 * and micro-batches against workers, layers and batch, and the layer tables
 * the policy needs. */
static gboolean
pl_check_env (const PolEnv *env, GError **error)
{
  int P, R, M;
  pl_shape (env->values, &P, &R, &M);
  int L = env->n_layers;
  if (P < 1 || P > L || P * R != env->workers || M < 1 || env->batch % M != 0
      || !env->layers || !env->layer_seconds || !env->scale_time)
    {
      g_set_error (error, POL_ERROR, 0,
                   "pipeline: bad stages %d, replicas %d or micro-batches %d for %d "
                   "workers, %d layers and batch %d", P, R, M, env->workers, L, env->batch);
      return FALSE;
    }
  return TRUE;
}

/* Fills pl->count (P entries), the layers of each stage; FALSE (and an error)
 * when they are not P non-empty groups covering the L layers. */
static gboolean
pl_stage_counts (PlPolicy *pl, GError **error)
{
  const PolEnv *env = &pl->env;
  int P = pl->P, L = env->n_layers;
  pl->count = g_new (int, P);
  pol_pipeline_stage_counts (pl_stage_layers (env->values), pl->layer_fwd, pl->layer_bwd, L, P,
                             pl->count);
  int total = 0;
  for (int s = 0; s < P; s++)
    {
      if (pl->count[s] < 1)
        total = -L - 1;
      total += pl->count[s];
    }
  if (total != L)
    {
      g_set_error (error, POL_ERROR, 0,
                   "pipeline: stage layer counts do not cover the %d layers", L);
      return FALSE;
    }
  return TRUE;
}

/* Sets up stage s of replica r, whose layers start at `first`: its layers,
 * parameters, device times, FLOPs, stash, schedule and per-micro-batch
 * state (and its KernStage with math).  Returns the next stage's first
 * layer. */
static int
pl_worker_init (PlPolicy *pl, int r, int s, int first)
{
  const PolEnv *env = &pl->env;
  int P = pl->P, M = pl->M, L = env->n_layers;
  double n = pl->n;
  int rank = train_mesh_rank_at (pl->mesh, train_mesh_rank_at (pl->mesh, 0, TRAIN_AXIS_DATA, r),
                                 TRAIN_AXIS_PIPELINE, s);
  PlWorker *wk = &pl->w[rank];
  wk->replica = r;
  wk->stage = s;
  wk->index = rank;
  wk->first = first;
  wk->last = first + pl->count[s] - 1;
  wk->lo = env->layers[wk->first].param_offset;
  wk->hi = wk->last + 1 < L ? env->layers[wk->last + 1].param_offset : env->n_params;
  for (int l = wk->first; l <= wk->last; l++)
    {
      const KernLayer *ly = &env->layers[l];
      wk->t_fwd += pl->layer_fwd[l];
      wk->t_bwd += pl->layer_bwd[l];
      wk->flops += M * (ly->fwd_flops_fixed + ly->fwd_flops * n + ly->bwd_flops_fixed
                        + ly->bwd_flops * n);
    }
  wk->stash_bytes = pol_pipeline_stash_bytes (env->layers, wk->first, wk->last, pl->n);
  wk->out_bytes = s + 1 < P ? 4.0 * n * env->layers[wk->last].outputs : 0.0;
  wk->slots = pol_pipeline_slots (pl->schedule, P, s, M);
  wk->ops = g_new (int, 2 * M);
  pol_pipeline_ops_order (pl->schedule, P, s, M, wk->ops);
  wk->in_ready = g_new0 (gboolean, M);
  wk->grad_ready = g_new0 (gboolean, M);
  wk->in_sent = g_new0 (double, M);
  wk->grad_sent = g_new0 (double, M);
  wk->blocked_since = -1;
  if (env->model && !pl->stacked)
    wk->ks = kern_stage_new (env->model, wk->first, wk->last, pl->n, wk->slots,
                             1.0f / (float) env->batch);
  if (r == 0)
    pl->update_time[s] = env->update_time (env->compute_ctx, wk->hi - wk->lo);
  return wk->last + 1;
}

/* With math: the replicas' samplers, batches, gradients, the boundary
 * buffers between stages and one optimizer per stage. */
static void
pl_math_new (PlPolicy *pl)
{
  const PolEnv *env = &pl->env;
  int P = pl->P, R = pl->R;
  gsize NP = env->n_params;
  PolEnv senv = *env;
  senv.workers = R; /* replicas draw batches as data-parallel workers do */
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = pol_samplers_for_env (&senv), .parts = R,
                            .batch = env->batch, .slots = R, .stacked = pl->stacked,
                            .host_timed = env->host_timed };
  pl->steps = train_steps_new (&setup);
  pl->grad = g_new (float *, R);
  pl->act = g_new0 (float **, R);
  pl->dact = g_new0 (float **, R);
  for (int r = 0; r < R; r++)
    {
      pl->grad[r] = g_new0 (float, NP);
      pl->act[r] = g_new0 (float *, P);
      pl->dact[r] = g_new0 (float *, P);
      if (pl->stacked)
        continue;
      for (int s = 0; s + 1 < P; s++)
        {
          gsize len = (gsize) env->batch * (gsize) pl->w[s].ks->out_width;
          pl->act[r][s] = g_new (float, len);
          pl->dact[r][s] = g_new (float, len);
        }
    }
  pl->opt = g_new0 (KernOptimizer *, P);
  for (int s = 0; s < P; s++)
    pl->opt[s] = kern_optimizer_new (&env->opt, pl->w[s].hi - pl->w[s].lo);
}

static PolPolicy *
pl_create (const PolEnv *env, GError **error)
{
  if (!pl_check_env (env, error))
    return NULL;
  int P, R, M;
  pl_shape (env->values, &P, &R, &M);
  const CommAlgorithm *alg = NULL;
  if (R > 1 && !(alg = pol_env_algorithm (env, error)))
    return NULL;
  PlPolicy *pl = g_new0 (PlPolicy, 1);
  pl->env = *env;
  pl->alg = alg;
  pl->P = P;
  pl->R = R;
  pl->M = M;
  pl->W = P * R;
  pl->n = env->batch / M;
  pl->schedule = (PolSchedule) base_values_int (env->values, "policy.schedule");
  pl->stacked = env->model && !env->host_timed && env->model->ops->loss_grad_groups;
  pl->layer_fwd = g_new (double, env->n_layers);
  pl->layer_bwd = g_new (double, env->n_layers);
  env->layer_seconds (env->compute_ctx, pl->n, pl->layer_fwd, pl->layer_bwd);
  pol_run_init (&pl->run, &pl->env);
  if (!pl_stage_counts (pl, error))
    {
      g_free (pl->count);
      g_free (pl->layer_fwd);
      g_free (pl->layer_bwd);
      g_free (pl);
      return NULL;
    }

  /* the parameters only where the math runs: a timing-only model may be of
   * any size */
  if (env->model)
    {
      pl->params = g_new0 (float, MAX (env->n_params, 1));
      env->model->ops->init (env->model, pl->params, env->seed);
    }
  pl->update_time = g_new (double, P);
  pl->backward_done = g_new0 (int, P);
  int size[TRAIN_N_AXES] = { [TRAIN_AXIS_DATA] = R, [TRAIN_AXIS_PIPELINE] = P,
                             [TRAIN_AXIS_EXPERT] = 1, [TRAIN_AXIS_CONTEXT] = 1,
                             [TRAIN_AXIS_TENSOR] = 1 };
  pl->mesh = train_mesh_new (size, 0);
  pl->reduce_bufs = g_new0 (float *, R);
  pl->w = g_new0 (PlWorker, pl->W);
  for (int r = 0; r < R; r++)
    {
      int first = 0;
      for (int s = 0; s < P; s++)
        first = pl_worker_init (pl, r, s, first);
    }
  if (env->model)
    pl_math_new (pl);
  return (PolPolicy *) pl;
}

static void
pl_start (PolPolicy *p)
{
  PlPolicy *pl = (PlPolicy *) p;
  pol_report_mesh (&pl->env, pl->mesh);
  if (pl->R > 1)  /* what stage 0's replicas all-reduce with */
    {
      TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, 0);
      pol_report_algorithm (&pl->env, pl->alg,
                            pol_allreduce_resolve (&pl->env, pl->alg, g.n, g.hosts,
                                                   pl->w[0].hi - pl->w[0].lo));
    }
  pol_run_start (&pl->run, pl->params);
  eng_schedule (pl->env.sim, 0, start_iteration, pl, NULL);
}

static void
pl_finish (PolPolicy *p, PolResult *out)
{
  PlPolicy *pl = (PlPolicy *) p;
  pol_run_finish (&pl->run, pl->params, out);
  if (!pl->env.rec.stage)
    return;
  for (int k = 0; k < pl->W; k++)
    {
      const PlWorker *wk = &pl->w[k];
      PolStageStats st = {
        .replica = wk->replica,
        .stage = wk->stage,
        .worker = wk->index,
        .first_layer = wk->first,
        .last_layer = wk->last,
        .params = wk->hi - wk->lo,
        .flops = wk->flops,
        .peak_stash = wk->peak_stash,
        .activation_bytes = wk->peak_stash * wk->stash_bytes,
        .boundary_bytes = wk->out_bytes,
        .compute = wk->sum_compute,
        .idle = wk->sum_idle,
      };
      pl->env.rec.stage (pl->env.rec.ctx, &st);
    }
}

static void
pl_free (PolPolicy *p)
{
  PlPolicy *pl = (PlPolicy *) p;
  if (!pl)
    return;
  for (int k = 0; k < pl->W; k++)
    {
      PlWorker *wk = &pl->w[k];
      g_free (wk->ops);
      g_free (wk->in_ready);
      g_free (wk->grad_ready);
      g_free (wk->in_sent);
      g_free (wk->grad_sent);
      kern_stage_free (wk->ks);
    }
  if (pl->env.model)
    {
      for (int r = 0; r < pl->R; r++)
        {
          g_free (pl->grad[r]);
          for (int s = 0; s + 1 < pl->P; s++)
            {
              g_free (pl->act[r][s]);
              g_free (pl->dact[r][s]);
            }
          g_free (pl->act[r]);
          g_free (pl->dact[r]);
        }
      for (int s = 0; s < pl->P; s++)
        kern_optimizer_free (pl->opt[s]);
    }
  train_steps_free (pl->steps);
  g_free (pl->grad);
  g_free (pl->act);
  g_free (pl->dact);
  g_free (pl->opt);
  g_free (pl->w);
  g_free (pl->count);
  g_free (pl->layer_fwd);
  g_free (pl->layer_bwd);
  g_free (pl->params);
  g_free (pl->update_time);
  g_free (pl->backward_done);
  train_mesh_free (pl->mesh);
  g_free (pl->reduce_bufs);
  g_free (pl);
}

static const char *const pl_tags[] = { "activation", "gradient", pol_allreduce_tag };

static const BaseChoice schedule_choices[] = {
  { "gpipe", POL_SCHEDULE_GPIPE, FALSE }, { "1f1b", POL_SCHEDULE_1F1B, FALSE },
  { NULL, 0, FALSE },
};

static const BaseKey pl_keys[] = {
  { "policy", "schedule", BASE_KEY_ENUM, 0, "1f1b", 0, 0, 0, schedule_choices, 0,
    "Pipeline schedule (kind = pipeline): gpipe (all forwards, then all backwards) or 1f1b (warm-up forwards, then one forward one backward; docs/policies.md).", NULL },
  { "policy", "stages", BASE_KEY_INT, 0, "0", 0, 1e6, 0, NULL, 0,
    "Pipeline stages (kind = pipeline), one worker each; 0 = workers / replicas.  At most the model's layer count.", NULL },
  { "policy", "microbatches", BASE_KEY_INT, 0, "4", 1, 1e9, 0, NULL, 0,
    "Micro-batches per batch (kind = pipeline); must divide [model] batch.", NULL },
  { "policy", "stage_layers", BASE_KEY_INTLIST, 0, "", 1, 1e6, 0, NULL, 0,
    "Layers of each pipeline stage, comma-separated, summing to the model's layer count (kind = pipeline); empty = balanced by device time.", NULL },
  { "policy", "replicas", BASE_KEY_INT, 0, "1", 1, 1e6, 0, NULL, 0,
    "Data-parallel copies of the pipeline (kind = pipeline): workers = stages x replicas; a stage's gradient is all-reduced among its replicas with [policy] algorithm.", NULL },
  { .section = NULL },
};

/* Stages x replicas = workers (stages = 0 resolved so), micro-batches
 * dividing the batch, one layer count per stage. */
static gboolean
pl_validate (PolCheck *chk, GError **error)
{
  gint64 R = base_values_int (chk->values, "policy.replicas");
  gint64 P = base_values_int (chk->values, "policy.stages");
  gint64 M = base_values_int (chk->values, "policy.microbatches");
  const GArray *sl = base_values_list (chk->values, "policy.stage_layers");
  if (chk->workers % R != 0)
    return pol_key_error (error, "policy", "replicas",
                          "%" G_GINT64_FORMAT " replicas do not divide [cluster] workers = %"
                          G_GINT64_FORMAT "; workers must be stages x replicas", R, chk->workers);
  if (P == 0)
    pol_check_resolve_int (chk, "policy.stages", P = chk->workers / R);
  if (P * R != chk->workers)
    return pol_key_error (error, "cluster", "workers",
                          "%" G_GINT64_FORMAT " workers but [policy] stages x replicas = %"
                          G_GINT64_FORMAT " x %" G_GINT64_FORMAT "; set workers = %" G_GINT64_FORMAT
                          " or change stages", chk->workers, P, R, P * R);
  if (chk->batch % M != 0)
    return pol_key_error (error, "policy", "microbatches",
                          "%" G_GINT64_FORMAT " micro-batches do not divide [model] batch = %"
                          G_GINT64_FORMAT "; use a divisor of the batch", M, chk->batch);
  if (sl && sl->len > 0 && (gint64) sl->len != P)
    return pol_key_error (error, "policy", "stage_layers",
                          "%u counts for %" G_GINT64_FORMAT " stages; give one layer count per stage",
                          sl->len, P);
  return TRUE;
}

/* At most one stage per layer; stage_layers covering the model. */
static gboolean
pl_check_model (const PolModelInfo *mi, GError **error)
{
  gint64 P = base_values_int (mi->values, "policy.stages");
  int L = mi->model->n_layers;
  if (P > L)
    return pol_key_error (error, "policy", "stages",
                          "%" G_GINT64_FORMAT " stages for a model of %d layers; "
                          "use at most %d stages (fewer workers, or replicas > 1)", P, L, L);
  const GArray *sl = base_values_list (mi->values, "policy.stage_layers");
  if (!sl || sl->len == 0)
    return TRUE;
  gint64 sum = 0;
  for (guint i = 0; i < sl->len; i++)
    sum += g_array_index (sl, int, i);
  if (sum != L)
    return pol_key_error (error, "policy", "stage_layers",
                          "the counts sum to %" G_GINT64_FORMAT " but the model has %d layers; "
                          "make them sum to %d", sum, L, L);
  return TRUE;
}

/* Each stage on its own device: its layers, cut as pl_create cuts them,
 * and the micro-batches its schedule stashes at its peak. */
static PolShares *
pl_shares (const PolModelInfo *mi)
{
  const KernModel *m = mi->model;
  int P, R, M, L = m->n_layers;
  pl_shape (mi->values, &P, &R, &M);
  M = MAX (M, 1);
  g_return_val_if_fail (P >= 1 && P <= L, NULL);
  int n = (int) (mi->batch / M);
  PolSchedule schedule = (PolSchedule) base_values_int (mi->values, "policy.schedule");
  g_autofree double *fwd = g_new (double, L);
  g_autofree double *bwd = g_new (double, L);
  g_autofree int *count = g_new (int, P);
  mi->layer_seconds (mi->ctx, n, fwd, bwd);
  pol_pipeline_stage_counts (pl_stage_layers (mi->values), fwd, bwd, L, P, count);
  PolShares *out = g_new0 (PolShares, 1);
  out->n = P;
  out->share = g_new0 (PolShare, P);
  out->unit = "stage";
  gboolean gpipe = schedule == POL_SCHEDULE_GPIPE;
  out->note = g_strdup (gpipe ? "gpipe" : "1f1b");
  out->advice = g_strdup_printf ("use more stages ([cluster] workers, [policy] stages), %s",
                                 gpipe ? "schedule = 1f1b (it stashes at most stages - s micro-batches)"
                                       : "more [policy] microbatches (smaller ones)");
  int first = 0;
  for (int s = 0; s < P; s++)
    {
      PolShare *sh = &out->share[s];
      sh->first = first;
      sh->last = first + count[s] - 1;
      first = sh->last + 1;
      sh->microbatch = n;
      sh->slots = pol_pipeline_slots (schedule, P, s, M);
      sh->stash_bytes = pol_pipeline_stash_bytes (m->layers, sh->first, sh->last, n);
    }
  return out;
}

/* Per replica, each micro-batch crosses every stage boundary forward
 * (activations) and backward (gradients); each stage's gradient is then
 * all-reduced among the replicas.  Spans: per worker and micro-batch a
 * forward, a backward and their transfers, and a few per iteration. */
static void
pl_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  double R = (double) MAX (base_values_int (mi->values, "policy.replicas"), 1);
  double P = (double) base_values_int (mi->values, "policy.stages");
  double M = (double) base_values_int (mi->values, "policy.microbatches");
  if (P < 1)
    P = MAX (1.0, floor (W / R));
  gsize n = mi->model->ops->n_params (mi->model);
  int C = (int) base_values_int (mi->values, "policy.channels");
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double each = comm_messages (alg, COMM_ALLREDUCE, (int) R, (gsize) ((double) n / P), C);
  *out = (PolWork) { .messages = R * 2 * (P - 1) * M + P * each, .spans = W * (4 * M + 3),
                     .iteration_rows = W, .in_flight = R * P * (M + C) };
}

const PolPolicyOps pol_pipeline_ops = {
  .work = pl_work,
  .name = "pipeline",
  .updates_not_samples = TRUE,
  .source = "Y. Huang et al.: GPipe, NeurIPS 2019; 1F1B: D. Narayanan et al.: PipeDream, SOSP 2019",
  .keys = pl_keys,
  .validate = pl_validate,
  .check_model = pl_check_model,
  .shares = pl_shares,
  .description = "pipeline parallel: layers cut into stages, one per worker; micro-batches "
                 "flow forward and back under GPipe or 1F1B; each stage applies its update "
                 "at the flush",
  .tag_names = pl_tags,
  .n_tags = G_N_ELEMENTS (pl_tags),
  .data_parts = pl_data_parts,
  .host_names = pol_worker_host_names,
  .create = pl_create,
  .start = pl_start,
  .finish = pl_finish,
  .free = pl_free,
};
