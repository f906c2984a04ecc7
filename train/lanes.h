/*
 * lanes.h — a run's independent math on several host threads, with
 * results that do not depend on how many.
 *
 * A policy that has several independent computations at one instant (the
 * gradients of an all-reduce round, of a pipeline's replicas) cuts them
 * into tasks whose bounds depend on the problem only (workers, batch,
 * model), never on the host; each task writes its own outputs, and what
 * combines them (a sum) runs afterwards in task order.  The lanes (threads)
 * only decide which task runs where and when, so a run gives the same
 * numbers on one thread or sixteen.  Each lane owns a model clone (its own
 * scratch): KernModelOps.clone.
 */
#ifndef DTSIM_TRAIN_LANES_H
#define DTSIM_TRAIN_LANES_H

#include <glib.h>

#include "kernels/kernels.h"

/* The host threads one run may use for its math: set by `dtsim run` from
 * the cores its sweep leaves each run (--threads); 1 until set.  A run
 * reads it when it starts. */
void train_set_threads (int threads);
int train_threads (void);

/* Rows of stacked batches one task computes at least: enough for GEMMs at
 * full speed, few enough to spread a round's work over the lanes. */
#define TRAIN_TASK_ROWS 256

/* Groups of `batch` samples one task stacks: ceil(TRAIN_TASK_ROWS / batch),
 * at least 1.  A function of the problem only. */
int train_task_groups (int batch);

typedef struct TrainLanes TrainLanes;

/* Lanes for a run of `model`: train_threads() of them, or 1 when
 * the model cannot be cloned or `host_timed` (compute time measured on the
 * host: one kernel at a time, as the time model assumes).  Lane 0 runs on
 * the caller with `model` itself; the others on a shared thread pool, each
 * with its clone. */
TrainLanes *train_lanes_new (KernModel *model, gboolean host_timed);
int train_lanes_count (const TrainLanes *l);
/* Runs fn (ctx, task, model) for every task in [0, tasks), spread over the
 * lanes (`model`: the lane's own), and returns when all have run. */
void train_lanes_run (TrainLanes *l, int tasks,
                    void (*fn) (gpointer ctx, int task, KernModel *model), gpointer ctx);
void train_lanes_free (TrainLanes *l);

/* dst[i] += src[g][i] for g = 0..n-1 in that order, for i in [0, len):
 * each element summed in the same order whatever the lanes, the range cut
 * among them. */
void train_lanes_sum (TrainLanes *l, float *dst, const float *const *src, int n, gsize len);

#endif
