/*
 * step.c — the worker step (step.h states the contract).
 *
 * Each worker's batch is gathered into its slot of one stacked buffer
 * (slots x batch rows), so that a stacked step hands the model one
 * contiguous batch of n x batch rows.  The forward and backward of a
 * stacked step run as tasks of train_task_groups(batch) workers each, a
 * cut that depends on the problem only; each task writes its own workers'
 * gradients, or, where the schedule asks for their sum, that sum as one
 * product over its rows (the model's loss_grad_sum), added to the others'
 * in task order afterwards.
 *
 * Low-precision emulation (the model's KernNumerics, docs/kernels.md):
 * the forward and backward read a copy of the parameters rounded to the
 * weights' format, never the master copy, and each worker's gradient is
 * rounded (loss scale applied) before anything else sees it: the
 * optimizer here, or the schedule's push or reduction.  With a dynamic
 * loss scale (the model's KernScaler) a gradient that overflows there is
 * skipped: zeroed, and not stepped on where the optimizer is the
 * worker's.
 */
#include "config.h"

#include <string.h>

#include "train/step.h"

struct TrainSteps {
  TrainStepsSetup s;
  TrainLanes *lanes;          /* NULL without math */
  int chunk;                  /* workers per task of a stacked step */
  float *x;                   /* (slots x batch, d) */
  int *y;                     /* (slots x batch) */
  int *idx;                   /* (batch) */
  double *losses;             /* (slots) when the step keeps none */
  gboolean *skip;             /* (slots) the step's gradients that a
                               * dynamic loss scale skipped */
  float *wcopy;               /* (slots, n_params) parameters rounded to
                               * the weights' format; NULL while unused */
  const float **wown;         /* (slots) the rounded copies of `own` */
  /* the step being computed, for the lanes' tasks */
  const TrainStep *st;
  const float *st_params;     /* the parameters it reads (maybe rounded) */
  double *st_losses;
  gboolean st_sum;            /* its tasks sum their workers' gradients */
  float **dst;                /* (slots) where its workers' (or tasks')
                               * gradients go: grads, or sum first */
};

TrainSteps *
train_steps_new (const TrainStepsSetup *setup)
{
  g_return_val_if_fail (setup->slots >= 1, NULL);
  TrainSteps *ts = g_new0 (TrainSteps, 1);
  ts->s = *setup;
  if (!setup->model)
    return ts;
  gsize rows = (gsize) setup->slots * (gsize) setup->batch;
  ts->x = g_new (float, rows * (gsize) setup->model->d);
  ts->y = g_new (int, rows);
  ts->idx = g_new (int, setup->batch);
  ts->losses = g_new (double, setup->slots);
  ts->skip = g_new0 (gboolean, setup->slots);
  ts->dst = g_new (float *, setup->slots);
  ts->lanes = train_lanes_new (setup->model, setup->host_timed);
  ts->chunk = train_task_groups (setup->batch);
  g_return_val_if_fail (!(setup->batches && (setup->stacked || setup->tensor)), ts);
  return ts;
}

void
train_steps_free (TrainSteps *ts)
{
  if (!ts)
    return;
  train_samplers_free (ts->s.samplers, ts->s.parts);
  train_lanes_free (ts->lanes);
  g_free (ts->x);
  g_free (ts->y);
  g_free (ts->idx);
  g_free (ts->losses);
  g_free (ts->skip);
  g_free (ts->dst);
  g_free (ts->wcopy);
  g_free (ts->wown);
  g_free (ts);
}

TrainLanes *
train_steps_lanes (TrainSteps *ts)
{
  return ts->lanes;
}

int
train_steps_part_samples (const TrainSteps *ts, int part)
{
  g_return_val_if_fail (ts->s.samplers && part >= 0 && part < ts->s.parts, 0);
  return ts->s.samplers[part].len;
}

/* Slot i's rows of the stacked batch. */
static float *
slot_x (const TrainSteps *ts, int slot)
{
  return ts->x + (gsize) slot * (gsize) ts->s.batch * (gsize) ts->s.model->d;
}

static int *
slot_y (const TrainSteps *ts, int slot)
{
  return ts->y + (gsize) slot * (gsize) ts->s.batch;
}

const float *
train_steps_x (const TrainSteps *ts, int slot)
{
  return slot_x (ts, slot);
}

const int *
train_steps_y (const TrainSteps *ts, int slot)
{
  return slot_y (ts, slot);
}

/* The parameters st's workers read, rounded to the communication format
 * where they came over the wire, then to the weights' format: one copy for a step whose workers share their parameters,
 * one each otherwise (st is edited through *params and *own). */
static void
round_weights (TrainSteps *ts, const TrainStep *st, const float **params,
               const float *const **own)
{
  const KernNumerics *num = &ts->s.model->num;
  KernFormat wire = ts->s.wire_params ? num->communication : KERN_FORMAT_FP32;
  *params = st->params;
  *own = st->own;
  if (num->weights == KERN_FORMAT_FP32 && wire == KERN_FORMAT_FP32)
    return;
  gsize P = ts->s.model->ops->n_params (ts->s.model);
  if (!ts->wcopy)
    {
      ts->wcopy = g_new (float, (gsize) ts->s.slots * P);
      ts->wown = g_new (const float *, ts->s.slots);
    }
  if (st->own && !(ts->s.tensor || ts->s.stacked))
    {
      for (int i = 0; i < st->n; i++)
        {
          float *c = ts->wcopy + (gsize) i * P;
          memcpy (c, st->own[i], P * sizeof (float));
          kern_round_to (wire, c, P);
          kern_round_to (num->weights, c, P);
          ts->wown[i] = c;
        }
      *own = ts->wown;
      return;
    }
  memcpy (ts->wcopy, st->params, P * sizeof (float));
  kern_round_to (wire, ts->wcopy, P);
  kern_round_to (num->weights, ts->wcopy, P);
  *params = ts->wcopy;
}

/* Task t of a stacked step: its workers' gradients, one product; or, for
 * a summed step, their sum into grads[t]. */
static void
stacked_task (gpointer ctx, int t, KernModel *model)
{
  TrainSteps *ts = ctx;
  const TrainStep *st = ts->st;
  int i0 = t * ts->chunk, n = MIN (ts->chunk, st->n - i0);
  if (ts->st_sum)
    model->ops->loss_grad_sum (model, ts->st_params, slot_x (ts, i0), slot_y (ts, i0),
                               ts->s.batch, n, ts->dst[t], ts->st_losses + i0);
  else
    model->ops->loss_grad_groups (model, ts->st_params, slot_x (ts, i0), slot_y (ts, i0),
                                  ts->s.batch, n, ts->dst + i0, ts->st_losses + i0);
}

gboolean
train_steps_sum_stacked (const TrainSteps *ts)
{
  const KernModel *m = ts->s.model;
  return m && ts->s.stacked && !ts->s.tensor && m->ops->loss_grad_sum
         && m->num.gradients == KERN_FORMAT_FP32;
}

/* Long on purpose: the worker step is read top to bottom, its four stages
 * (batches, forward and backward, optimizer, device time) in order, as
 * docs/architecture.md ("The training step and the mesh") presents it. */
double
train_step (TrainSteps *ts, const TrainStep *st)
{
  const TrainStepsSetup *s = &ts->s;
  int B = s->batch;
  double host = 0;
  g_return_val_if_fail (st->n >= 1 && st->n <= s->slots, 0);
  g_return_val_if_fail (!st->sum || (st->grads && !st->opt), 0);
  if (s->model)
    {
      /* 1. the batches: each worker's next samples from its part, or the
       * ones it drew when its step started */
      for (int i = 0; i < st->n; i++)
        {
          int Bi = s->batches ? s->batches[st->first + i] : B;
          const int *idx = st->drawn ? st->drawn + (gsize) i * B : ts->idx;
          if (!st->drawn)
            train_sampler_next (&s->samplers[st->first + i], Bi,
                                st->drawn_into ? st->drawn_into + (gsize) i * B : ts->idx);
          if (!st->drawn_into)
            kern_dataset_gather (s->train, idx, Bi, slot_x (ts, i), slot_y (ts, i));
        }
      if (st->grads && !st->drawn_into)
        {
          /* 2. forward and backward: workers that share their parameters as
           * one product, on the lanes; others each at its own */
          gint64 t0 = g_get_monotonic_time ();
          int parts = st->n;         /* gradients computed: workers' or tasks' */
          ts->st_losses = st->losses ? st->losses : ts->losses;
          for (int i = 0; i < st->n; i++)
            ts->dst[i] = st->grads[i];
          if (st->sum && !st->sum_add)
            ts->dst[0] = st->sum;    /* the first one written in place */
          const float *const *own;
          round_weights (ts, st, &ts->st_params, &own);
          if (s->tensor)     /* every slot's group at once, stacked on each rank */
            kern_tensor_loss_grad_groups (s->tensor, ts->st_params, slot_x (ts, 0),
                                          slot_y (ts, 0), B, st->n, ts->dst, ts->st_losses);
          else if (s->stacked)
            {
              int tasks = (st->n + ts->chunk - 1) / ts->chunk;
              ts->st = st;
              ts->st_sum = st->sum && train_steps_sum_stacked (ts);
              train_lanes_run (ts->lanes, tasks, stacked_task, ts);
              ts->st = NULL;
              if (ts->st_sum)
                parts = tasks;
            }
          else  /* each at its own parameters, or the shared ones at its own batch */
            for (int i = 0; i < st->n; i++)
              ts->st_losses[i] = s->model->ops->loss_grad (s->model, own ? own[i] : ts->st_params,
                                                           slot_x (ts, i), slot_y (ts, i),
                                                           s->batches ? s->batches[st->first + i] : B,
                                                           ts->dst[i]);
          host = (double) (g_get_monotonic_time () - t0) / 1e6;
          /* the gradients as they leave the workers; with a dynamic scale
           * each in turn, worker order, at the scale the ones before left */
          const KernNumerics *num = &s->model->num;
          gsize P = s->model->ops->n_params (s->model);
          gboolean *skip = ts->skip;
          memset (skip, 0, (gsize) st->n * sizeof *skip);
          for (int i = 0; num->gradients != KERN_FORMAT_FP32 && i < st->n; i++)
            if (num->dynamic_scale)
              {
                KernScaler *sc = &s->model->scaler;
                kern_round_scaled (num->gradients, ts->dst[i], P, sc->scale);
                skip[i] = !kern_scaler_update (sc, num, kern_all_finite (ts->dst[i], P));
                if (skip[i])  /* nothing of it leaves the worker */
                  memset (ts->dst[i], 0, P * sizeof (float));
              }
            else
              kern_round_scaled (num->gradients, ts->dst[i], P, kern_numerics_scale (num));
          /* the sum: the workers' (or tasks') gradients in their order */
          int from = st->sum_add ? 0 : 1;
          if (st->sum && parts > from)
            train_lanes_sum (ts->lanes, st->sum, (const float *const *) ts->dst + from,
                             parts - from, P);
          /* 3. the optimizer, where the schedule updates on the worker
           * (a skipped gradient leaves the parameters as they were) */
          for (int i = 0; st->opt && i < st->n; i++)
            if (skip[i])
              {
                if (st->update_from && st->update_from[i])
                  memcpy (st->update[i], st->update_from[i], P * sizeof (float));
              }
            else if (st->update_zero)
              kern_optimizer_step_zero (st->opt[i], st->update[i], st->grads[i]);
            else if (st->update_from && st->update_from[i])
              kern_optimizer_step_into (st->opt[i], st->update[i], st->update_from[i],
                                        st->grads[i]);
            else
              kern_optimizer_step (st->opt[i], st->update[i], st->grads[i]);
        }
    }
  /* 4. the step's time on the simulated device */
  for (int i = 0; st->seconds && i < st->n; i++)
    st->seconds[i] = s->compute_time (s->ctx, st->first + i, host / st->n);
  return host;
}
