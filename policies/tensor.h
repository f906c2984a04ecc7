/*
 * tensor.h — tensor (and sequence) parallelism of a training step's
 * timing, Megatron style (policies/tensor.c); private to policies/.
 *
 * A model's layers are cut T ways within: consecutive dense layers that
 * know their weight shapes pair up, the first split by columns (each rank
 * computes some outputs), the second by rows (each rank a partial sum of
 * every output); the layers between them work on split activations; the
 * rest run whole on every rank.  A step of a tensor group is then a chain
 * of compute and collectives on the group's links: an all-reduce of the
 * row layer's output in forward and of the column layer's input gradient
 * in backward (with sequence parallelism, a reduce-scatter and an
 * all-gather instead, and the layers outside the pairs split by sequence).
 * The same chain, cut to one operation of a pipeline stage (a layer
 * range, forward or backward) on one group, is what a 3-D run's stages
 * execute (pol_tensor_op_new).
 * docs/policies.md ("Tensor parallelism") is the normative description.
 * The cut itself (pol_tensor_split) is declared in policy.h, for the
 * memory model.
 */
#ifndef DTSIM_POLICIES_TENSOR_H
#define DTSIM_POLICIES_TENSOR_H

#include <glib.h>

#include "comm/collectives.h"
#include "policies/policy.h"
#include "train/mesh.h"

G_BEGIN_DECLS

typedef struct PolTensorStep PolTensorStep;

/* Called when layer l's backward has ended on every group (its gradient
 * is complete), and once when the step has ended; simulated time now. */
typedef void (*PolTensorReady) (gpointer ctx, int layer);
typedef void (*PolTensorDone) (gpointer ctx);

/* The chain of a step of n samples per group on the groups of `mesh`'s
 * tensor axis (every rank whose tensor coordinate is 0 leads one): fwd
 * and bwd the layers' device seconds at n samples, unsplit, no straggler;
 * collectives with `alg` (or what auto picks) at elem_bytes per value.
 * With ex (NULL = none) of ex->ep > 1 ranks, the mesh's expert axis of
 * that size: the expert layers' all-to-alls on its groups (`alg` where it
 * does all-to-all, else naive), tagged expert_tag, and their compute
 * stretched by ex->load. */
PolTensorStep *pol_tensor_step_new (const PolEnv *env, const TrainMesh *mesh,
                                    const PolTpSplit *split, gboolean sequence, int n,
                                    const double *fwd, const double *bwd,
                                    const CommAlgorithm *alg, double elem_bytes,
                                    const PolExperts *ex, int expert_tag);
/* The chain of one pipeline operation on one tensor group of T ranks on
 * `hosts` (T entries, borrowed): the forward of layers [first, last]
 * (from first up) or their backward (from last down) on n samples, with
 * the collectives of those layers as pol_tensor_collectives lists them
 * (none of layer 0's backward without sequence parallelism), tagged `tag`;
 * seconds[l] the layer's unsplit device seconds at n samples.  It is run
 * with pol_tensor_step_run, `ready` NULL (it calls none). */
PolTensorStep *pol_tensor_op_new (const PolEnv *env, int T, const int *hosts,
                                  const PolTpSplit *split, gboolean sequence, int first,
                                  int last, gboolean forward, int n, const double *seconds,
                                  const CommAlgorithm *alg, double elem_bytes, int tag);
void pol_tensor_step_free (PolTensorStep *ts);

/* The collectives one run of the chain starts on each of its groups. */
int pol_tensor_step_collectives (const PolTensorStep *ts);

/* Device seconds of the step's compute on one rank (cut layers 1/T), no
 * straggler; and of the unsplit step. */
double pol_tensor_step_compute (const PolTensorStep *ts);
double pol_tensor_step_whole (const PolTensorStep *ts);

/* Runs the chain from now, every compute stretched by k (the slowest
 * rank's straggler factor: the groups go in lockstep), calling `ready`
 * (where not NULL) and `done` with ctx.  One run at a time per chain. */
void pol_tensor_step_run (PolTensorStep *ts, double k, PolTensorReady ready, PolTensorDone done,
                          gpointer ctx);

/* The simulated seconds the chain has spent in its experts' all-to-alls
 * (dispatch and combine, forward and backward) over every run so far: the
 * steps wait on them, as on every collective of the chain. */
double pol_tensor_step_alltoall_seconds (const PolTensorStep *ts);

/* The compute stretches of the last run (between two collectives), as
 * the slowest rank ran them: *n of them, the arrays owned by ts. */
void pol_tensor_step_stretches (const PolTensorStep *ts, const double **start,
                                const double **end, int *n);

/* Tensor groups over a run's real math need a model whose math
 * kernels/tensor.c can cut (kern_tensor_supports): FALSE, with an error
 * "[policy] tensor: ..." naming the model, for T > 1 on any other; TRUE
 * for T <= 1 or a run without math. */
gboolean pol_tensor_check_math (const PolModelInfo *mi, int T, GError **error);

G_END_DECLS

#endif /* DTSIM_POLICIES_TENSOR_H */
