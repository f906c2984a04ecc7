/*
 * step.c — the worker step (step.h states the contract).
 *
 * Each worker's batch is gathered into its slot of one stacked buffer
 * (slots x batch rows), so that a stacked step hands the model one
 * contiguous batch of n x batch rows.  The forward and backward of a
 * stacked step run as tasks of train_task_groups(batch) workers each, a
 * cut that depends on the problem only; each task writes its own workers'
 * gradients.
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
  /* the step being computed, for the lanes' tasks */
  const TrainStep *st;
  double *st_losses;
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
  ts->lanes = train_lanes_new (setup->model, setup->host_timed);
  ts->chunk = train_task_groups (setup->batch);
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

/* Task t of a stacked step: its workers' gradients, one product. */
static void
stacked_task (gpointer ctx, int t, KernModel *model)
{
  TrainSteps *ts = ctx;
  const TrainStep *st = ts->st;
  int i0 = t * ts->chunk, n = MIN (ts->chunk, st->n - i0);
  model->ops->loss_grad_groups (model, st->params, slot_x (ts, i0), slot_y (ts, i0),
                                ts->s.batch, n, st->grads + i0,
                                ts->st_losses + i0);
}

double
train_step (TrainSteps *ts, const TrainStep *st)
{
  const TrainStepsSetup *s = &ts->s;
  int B = s->batch;
  double host = 0;
  g_return_val_if_fail (st->n >= 1 && st->n <= s->slots, 0);
  if (s->model)
    {
      /* 1. the batches: each worker's next samples from its part, or the
       * ones it drew when its step started */
      for (int i = 0; i < st->n; i++)
        {
          const int *idx = st->drawn ? st->drawn + (gsize) i * B : ts->idx;
          if (!st->drawn)
            train_sampler_next (&s->samplers[st->first + i], B,
                                st->drawn_into ? st->drawn_into + (gsize) i * B : ts->idx);
          if (!st->drawn_into)
            kern_dataset_gather (s->train, idx, B, slot_x (ts, i), slot_y (ts, i));
        }
      if (st->grads && !st->drawn_into)
        {
          /* 2. forward and backward: workers that share their parameters as
           * one product, on the lanes; others each at its own */
          gint64 t0 = g_get_monotonic_time ();
          ts->st_losses = st->losses ? st->losses : ts->losses;
          if (s->tensor)     /* every slot's group at once, stacked on each rank */
            kern_tensor_loss_grad_groups (s->tensor, st->params, slot_x (ts, 0), slot_y (ts, 0),
                                          B, st->n, st->grads, ts->st_losses);
          else if (s->stacked)
            {
              ts->st = st;
              train_lanes_run (ts->lanes, (st->n + ts->chunk - 1) / ts->chunk, stacked_task, ts);
              ts->st = NULL;
            }
          else
            for (int i = 0; i < st->n; i++)
              ts->st_losses[i] = s->model->ops->loss_grad (s->model, st->own[i], slot_x (ts, i),
                                                           slot_y (ts, i), B, st->grads[i]);
          host = (double) (g_get_monotonic_time () - t0) / 1e6;
          /* 3. the optimizer, where the schedule updates on the worker */
          for (int i = 0; st->opt && i < st->n; i++)
            if (st->update_from && st->update_from[i])
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
