/*
 * hogwild.c — Hogwild!: the cores of one machine update one shared model
 * without locks (Niu, Recht, Re and Wright, "Hogwild!: a lock-free approach
 * to parallelizing stochastic gradient descent", NeurIPS 2011), or, for
 * comparison, behind one lock.
 *
 * docs/policies.md ("Hogwild!") is the normative description:
 *
 *   - The W workers are cores sharing the model x (P floats) in memory; no
 *     transfer crosses the network.  Every core has its own batches and its
 *     own optimizer state.
 *   - lock = none: a core's step reads x as it is at its start, computes a
 *     real gradient there (compute_time) and writes its update, taking u =
 *     update_time(P): the write sweeps the components in order, component i
 *     being written at s + u (i + 1) / P (component-wise atomic adds, as
 *     the paper assumes).  A read while other writes are in progress sees
 *     the components they have already written and not the others (a torn
 *     read).  Writes never wait.
 *   - lock = lock: a core copies x under the lock (u seconds) at the start
 *     of its step and writes its update under the lock (u seconds); the
 *     lock serves reads and writes one at a time, in request order.
 *   - The update a core writes is what its optimizer does to its copy
 *     (-lr g for SGD).  The run ends when iterations x W updates have been
 *     written.
 *
 * A core's iteration runs from its read to the end of its write: compute =
 * its gradient and the lock's service (none: its write); wait = time queued
 * for the lock; staleness = updates written by other cores between its read
 * and the start of its write that the read did not see whole.  The run's params record
 * policy.torn_reads: reads that saw a write half done.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "train/step.h"

typedef struct {
  gint64 iter;
  double start;           /* s, the iteration's start (its read request) */
  double compute;         /* s, gradient time */
  double service;         /* s, lock service (read and write) or the write */
  double queued;          /* s, waiting for the lock */
  double requested;       /* s, when its pending lock request was made */
  gint64 read_applied;    /* updates written when it read */
  gint64 staleness;
  gboolean writing;       /* lock = none: its write is in progress */
  gboolean flushed;       /* its write, whole, is already in x */
  double write_start;
} HwCore;

typedef struct {
  PolEnv env;
  int W;
  gboolean lock;
  HwCore *core;
  float *x;               /* the shared model (completed writes) */
  float *view;            /* (P) what a read sees, where writes are in
                           * progress (used at once: one for all cores) */
  float **delta;          /* (W) each core's update */
  int *partial;           /* (W) scratch: writes half done at a read */
  gsize *partial_done;    /* (W) components each has written */
  float *grad;
  KernOptimizer **opt;
  TrainSteps *steps;      /* the cores' steps */
  EngResource *res;       /* lock = lock: the lock */
  double u;               /* s, update_time(P): a write, or a locked read */
  gint64 applied;         /* updates written */
  gint64 total;
  gint64 torn;
  PolRun run;
} HwPolicy;

static void start_step (HwPolicy *hw, int c);

/* What core c reads now: x, or (lock = none) x with the written part of
 * every write in progress, assembled in hw->view.  NULL without math.
 *
 * A write whose last component lands now is whole in memory: it is added
 * to x here (`flushed`; its completion event, due at this instant, then
 * only closes the iteration), so that reads at the instant writes end,
 * the common case, see x itself and copy nothing.  The torn part is
 * assembled block by block (a block of the view stays in cache while
 * every partial write adds to it), each component summing x and the
 * writes in core order. */
enum { HW_VIEW_BLOCK = 4096 };

static const float *
read_model (HwPolicy *hw, int c)
{
  gsize P = hw->env.n_params;
  double now = eng_sim_now (hw->env.sim);
  /* the updates it sees whole: the written ones and those whose last
   * component lands now */
  hw->core[c].read_applied = hw->applied;
  if (hw->lock)
    return hw->x;
  int partial = 0;
  for (int v = 0; v < hw->W; v++)
    {
      HwCore *k = &hw->core[v];
      if (v == c || !k->writing)
        continue;
      /* its last component lands at write_start + u, the instant of its
       * completion event (which may not have run yet at this instant) */
      double f = now >= k->write_start + hw->u ? 1 : (now - k->write_start) / hw->u;
      gsize done = (gsize) CLAMP (floor (f * (double) P), 0, (double) P);
      if (done == P)
        {
          hw->core[c].read_applied++;
          if (hw->x && !k->flushed)
            {
              for (gsize i = 0; i < P; i++)
                hw->x[i] += hw->delta[v][i];
              k->flushed = TRUE;
            }
          continue;
        }
      if (done > 0)
        {
          hw->torn++;
          hw->partial[partial] = v;
          hw->partial_done[partial++] = done;
        }
    }
  if (!hw->x || partial == 0)
    return hw->x;
  for (gsize b = 0; b < P; b += HW_VIEW_BLOCK)
    {
      gsize e = MIN (b + HW_VIEW_BLOCK, P);
      memcpy (hw->view + b, hw->x + b, (e - b) * sizeof (float));
      for (int j = 0; j < partial; j++)
        {
          const float *d = hw->delta[hw->partial[j]];
          gsize upto = MIN (hw->partial_done[j], e);
          for (gsize i = b; i < upto; i++)
            hw->view[i] += d[i];
        }
    }
  return hw->view;
}

/* Core c's update is in x: close its iteration, start the next. */
static void
write_done (HwPolicy *hw, int c)
{
  HwCore *k = &hw->core[c];
  double now = eng_sim_now (hw->env.sim);
  if (hw->x && !k->flushed)
    for (gsize i = 0; i < hw->env.n_params; i++)
      hw->x[i] += hw->delta[c][i];
  k->writing = k->flushed = FALSE;
  hw->applied++;
  pol_run_iteration (&hw->run, c, k->iter, k->start, now, k->compute + k->service, 0,
                     k->queued, k->staleness);
  hw->run.updates++;
  hw->run.samples += hw->env.batch;
  pol_run_progress (&hw->run, now);
  if (!pol_run_round_end (&hw->run, hw->x, hw->run.updates >= hw->total))
    return;
  k->iter++;
  if (k->iter < hw->env.iterations)
    start_step (hw, c);
}

static void
on_write_event (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  HwPolicy *hw = ctx;
  if (!hw->run.finished)
    write_done (hw, GPOINTER_TO_INT (data));
}

static void
on_locked_write (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, double start,
                 double end)
{
  HwPolicy *hw = ctx;
  HwCore *k = &hw->core[GPOINTER_TO_INT (data)];
  k->queued += start - k->requested;
  k->service += end - start;
  if (!hw->run.finished)
    write_done (hw, GPOINTER_TO_INT (data));
}

/* Core c's gradient is done: write. */
static void
on_compute_done (EngSim *sim, gpointer ctx, gpointer data)
{
  HwPolicy *hw = ctx;
  int c = GPOINTER_TO_INT (data);
  HwCore *k = &hw->core[c];
  double now = eng_sim_now (sim);
  if (hw->run.finished)
    return;
  k->staleness = hw->applied - k->read_applied;
  if (hw->lock)
    {
      k->requested = now;
      eng_resource_request (hw->res, hw->u, on_locked_write, hw, data);
      return;
    }
  k->writing = TRUE;
  k->write_start = now;
  k->service = hw->u;
  pol_worker_span (&hw->env, c, "update", now, now + hw->u, k->iter, 0);
  eng_schedule (sim, hw->u, on_write_event, hw, data);
}

/* Core c has read `seen`: compute. */
static void
compute (HwPolicy *hw, int c, const float *seen)
{
  const PolEnv *env = &hw->env;
  HwCore *k = &hw->core[c];
  double now = eng_sim_now (env->sim);
  /* its gradient at what it read, and the update its optimizer makes of
   * it: the optimizers' steps do not depend on the parameters, so applied
   * to zeros a step gives the update itself, with no rounding of x in it
   * (written in the optimizer's pass, kern_optimizer_step_zero) */
  const float *own[1] = { seen };
  float *update[1] = { hw->x ? hw->delta[c] : NULL };
  TrainStep st = { .n = 1, .first = c, .own = own, .grads = &hw->grad,
                   .opt = hw->opt ? hw->opt + c : NULL, .update = update,
                   .update_zero = TRUE, .seconds = &k->compute };
  train_step (hw->steps, &st);
  pol_worker_span (env, c, "compute", now, now + k->compute, k->iter, 0);
  eng_schedule (env->sim, k->compute, on_compute_done, hw, GINT_TO_POINTER (c));
}

static void
on_locked_read (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data, double start,
                double end)
{
  HwPolicy *hw = ctx;
  int c = GPOINTER_TO_INT (data);
  HwCore *k = &hw->core[c];
  if (hw->run.finished)
    return;
  k->queued += start - k->requested;
  k->service += end - start;
  pol_worker_span (&hw->env, c, "wait", k->requested, start, k->iter, 0);
  compute (hw, c, read_model (hw, c));
}

static void
start_step (HwPolicy *hw, int c)
{
  HwCore *k = &hw->core[c];
  double now = eng_sim_now (hw->env.sim);
  k->start = now;
  k->queued = k->service = 0;
  if (hw->lock)
    {
      k->requested = now;
      eng_resource_request (hw->res, hw->u, on_locked_read, hw, GINT_TO_POINTER (c));
      return;
    }
  compute (hw, c, read_model (hw, c));
}

static void
hw_start_event (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  HwPolicy *hw = ctx;
  for (int c = 0; c < hw->W && !hw->run.finished; c++)
    start_step (hw, c);
}

static PolPolicy *
hw_create (const PolEnv *env, GError **error G_GNUC_UNUSED)
{
  HwPolicy *hw = g_new0 (HwPolicy, 1);
  hw->env = *env;
  hw->W = env->workers;
  hw->lock = base_values_int (env->values, "policy.lock") != 0;
  int W = hw->W;
  gsize P = env->n_params;
  pol_run_init (&hw->run, &hw->env);
  hw->core = g_new0 (HwCore, W);
  hw->partial = g_new (int, W);
  hw->partial_done = g_new (gsize, W);
  hw->total = env->iterations * W;
  hw->u = env->update_time (env->compute_ctx, P);
  hw->res = eng_resource_new (env->sim);
  if (env->model)
    {
      hw->x = g_new0 (float, P);
      env->model->ops->init (env->model, hw->x, env->seed);
      hw->view = g_new0 (float, P);
      hw->delta = g_new (float *, W);
      hw->opt = g_new (KernOptimizer *, W);
      for (int c = 0; c < W; c++)
        {
          hw->delta[c] = g_new0 (float, P);
          hw->opt[c] = kern_optimizer_new (&env->opt, P);
        }
      hw->grad = g_new0 (float, P);
    }
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = env->model ? pol_samplers_for_env (env) : NULL,
                            .parts = env->model ? W : 0, .batch = env->batch, .slots = 1,
                            .host_timed = env->host_timed, .compute_time = env->compute_time,
                            .ctx = env->compute_ctx };
  hw->steps = train_steps_new (&setup);
  return (PolPolicy *) hw;
}

static void
hw_start (PolPolicy *p)
{
  HwPolicy *hw = (HwPolicy *) p;
  pol_run_start (&hw->run, hw->x);
  eng_schedule (hw->env.sim, 0, hw_start_event, hw, NULL);
}

static void
hw_finish (PolPolicy *p, PolResult *out)
{
  HwPolicy *hw = (HwPolicy *) p;
  pol_run_finish (&hw->run, hw->x, out);
  if (hw->env.rec.param)
    {
      g_autofree char *n = g_strdup_printf ("%" G_GINT64_FORMAT, hw->torn);
      hw->env.rec.param (hw->env.rec.ctx, "policy.torn_reads", n);
    }
}

static void
hw_free (PolPolicy *p)
{
  HwPolicy *hw = (HwPolicy *) p;
  if (!hw)
    return;
  if (hw->delta)
    for (int c = 0; c < hw->W; c++)
      {
        g_free (hw->delta[c]);
        kern_optimizer_free (hw->opt[c]);
      }
  g_free (hw->view);
  g_free (hw->partial);
  g_free (hw->partial_done);
  g_free (hw->delta);
  g_free (hw->opt);
  g_free (hw->x);
  g_free (hw->grad);
  train_steps_free (hw->steps);
  eng_resource_free (hw->res);
  g_free (hw->core);
  g_free (hw);
}

static const BaseChoice lock_choices[] = {
  { "none", 0, FALSE }, { "lock", 1, FALSE }, { NULL, 0, FALSE },
};

static const BaseKey hw_keys[] = {
  { "policy", "lock", BASE_KEY_ENUM, 0, "none", 0, 0, 0, lock_choices, 0,
    "kind = hogwild: none (lock-free: reads may see writes half done, writes never wait) or lock (reads and writes of the shared model one at a time).", NULL },
  { .section = NULL },
};

/* Its key would do nothing under another policy. */
static gboolean
hw_foreign (const PolCheck *chk, GError **error)
{
  if (base_values_int (chk->values, "policy.lock") != 0)
    return pol_key_error (error, "policy", "lock",
                          "applies only to kind = hogwild; remove it or set kind = hogwild");
  return TRUE;
}

/* Shared memory: no transfer; a compute and an update span per worker. */
static void
hw_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  *out = (PolWork) { .messages = 0, .spans = 2 * W, .iteration_rows = W, .in_flight = 0 };
}

const PolPolicyOps pol_hogwild_ops = {
  .work = hw_work,
  .name = "hogwild",
  .source = "F. Niu, B. Recht, C. Re, S. J. Wright: Hogwild!: a lock-free approach to "
            "parallelizing stochastic gradient descent, NeurIPS 2011",
  .keys = hw_keys,
  .description = "Hogwild!: the workers are the cores of one machine, updating one shared "
                 "model in memory without locks (or behind one lock: [policy] lock)",
  .foreign = hw_foreign,
  .host_names = pol_worker_host_names,
  .create = hw_create,
  .start = hw_start,
  .finish = hw_finish,
  .no_wire = "its cores share one model in memory and nothing crosses a network; round what "
             "the cores read with [numerics] weights instead",
  .free = hw_free,
};
