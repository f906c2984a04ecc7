/*
 * step.h — the worker step: a worker's next batch, forward and backward on
 * its model shard, and the optimizer where the schedule updates on the
 * worker.
 *
 * Every schedule (policies/) trains through train_step(): it decides when a
 * worker steps and what happens to the gradient (pushed to a server,
 * all-reduced, averaged with a neighbour's model), never how a gradient is
 * computed.  A step may cover several workers at once: where they read the
 * same parameters (synchronous data parallelism, a pipeline's replicas)
 * their batches go through the model as one product, cut into tasks on the
 * run's host lanes (train/lanes.h), with the same numbers on any number of
 * threads.
 *
 * Which samples: worker w draws its batches from part w of the training
 * set (train/sampler.h).  A schedule that prices a step before it computes
 * it (a deferred gradient) draws the batch at the step's start and hands
 * the indices back when the gradient is due.
 */
#ifndef DTSIM_TRAIN_STEP_H
#define DTSIM_TRAIN_STEP_H

#include <glib.h>

#include "kernels/kernels.h"
#include "kernels/tensor.h"
#include "train/lanes.h"
#include "train/sampler.h"

G_BEGIN_DECLS

/* Simulated seconds of worker w's step on the device model (straggler
 * factor included), given the host seconds its math took (used only when
 * compute time is measured). */
typedef double (*TrainComputeTime) (gpointer ctx, int worker, double host_seconds);

/* What the steps of one run share. */
typedef struct {
  KernModel *model;           /* NULL: timing only, no math */
  const KernDataset *train;   /* NULL with model */
  TrainSampler *samplers;     /* (parts) one per worker; owned from here on */
  int parts;
  int batch;                  /* samples per worker step (with batches:
                               * the largest of them) */
  /* (parts) samples of worker w's steps where they differ ([policy]
   * balance = speed); NULL: batch each.  Steps with batches are not
   * stacked. */
  const int *batches;
  int slots;                  /* most workers one step covers (>= 1) */
  /* The workers of a step read the same parameters: their batches go
   * through the model as one product (the model's loss_grad_groups). */
  gboolean stacked;
  /* A worker is a tensor group: its gradient is computed on the plan's T
   * ranks' shards, a step's groups (which read the same parameters) at
   * once (kern_tensor_loss_grad_groups; borrowed); NULL = the whole model
   * on one device. */
  KernTensorPlan *tensor;
  /* The workers' parameters came over the network (pulled from servers):
   * the step reads them rounded to the model's communication format, then
   * to its weights' format (docs/kernels.md). */
  gboolean wire_params;
  gboolean host_timed;        /* compute time is measured: one lane */
  TrainComputeTime compute_time; /* with ctx; may be NULL if no step asks */
  gpointer ctx;
} TrainStepsSetup;

typedef struct TrainSteps TrainSteps;

TrainSteps *train_steps_new (const TrainStepsSetup *setup);
void train_steps_free (TrainSteps *ts);
/* The run's host lanes (NULL without math): for the sums a schedule makes
 * of its workers' gradients. */
TrainLanes *train_steps_lanes (TrainSteps *ts);
/* Samples in part p of the training set (its worker's share). */
int train_steps_part_samples (const TrainSteps *ts, int part);
/* Slot i's batch of the last step (batch x d floats and batch labels). */
const float *train_steps_x (const TrainSteps *ts, int slot);
const int *train_steps_y (const TrainSteps *ts, int slot);

/* One step of n workers, `first` to first + n - 1. */
typedef struct {
  int n;                      /* 1 to the steps' slots */
  int first;
  /* Their samples: each draws the next batch of its part now, or was
   * given the indices it drew earlier (n x batch). */
  const int *drawn;
  /* Draw only: the indices go to drawn_into (n x batch) and nothing is
   * computed (the gradient comes later, with `drawn`). */
  int *drawn_into;
  /* The parameters: one vector every worker reads (stacked steps), or each
   * worker's own (n). */
  const float *params;
  const float *const *own;
  /* (n) the gradients; NULL: the batches are gathered into the slots
   * (train_steps_x, _y) and nothing more, for a schedule that runs the
   * model itself, layer by layer (a pipeline stage's operations). */
  float *const *grads;
  /* Not NULL: the n workers' gradients are summed into sum (n_params;
   * written, or with sum_add added to what it holds) instead of being
   * handed back one by one, and grads serve as scratch (their contents
   * are then unspecified).  Where the model has loss_grad_sum and the
   * step is stacked (gradients in float32; train_steps_sum_stacked), each
   * task of train_task_groups(batch) workers computes its workers' sum as
   * one product over their stacked batches, and the tasks' sums are added
   * in task order; otherwise the workers' gradients are added in worker
   * order.  Written, the first term is computed in place (sum = t_0 + t_1
   * + ...); added, sum + t_0 + t_1 + ...  No optimizer with a sum. */
  float *sum;
  gboolean sum_add;
  double *losses;             /* (n) their batches' mean losses; may be NULL */
  /* The optimizer, where the schedule updates on the worker: opt[i] steps
   * update[i] in place, or writes update_from[i] stepped into update[i]
   * where update_from and its entry are not NULL.  NULL: the update is
   * the schedule's, elsewhere. */
  KernOptimizer *const *opt;
  float *const *update;
  const float *const *update_from;
  /* TRUE: update[i] gets what the step makes of zeros, the update itself
   * (kern_optimizer_step_zero); update_from is then not read. */
  gboolean update_zero;
  /* (n) the simulated seconds of each worker's step (the setup's
   * compute_time); NULL: the schedule prices its steps itself. */
  double *seconds;
} TrainStep;

/* Whether a step of these steps with `sum` computes each task's sum as one
 * product (TRUE) or sums the workers' gradients one by one (FALSE): the
 * order of the additions, which a schedule documents. */
gboolean train_steps_sum_stacked (const TrainSteps *ts);

/* The worker step; returns the host seconds its forward and backward took
 * (0 without math). */
double train_step (TrainSteps *ts, const TrainStep *st);

G_END_DECLS

#endif /* DTSIM_TRAIN_STEP_H */
