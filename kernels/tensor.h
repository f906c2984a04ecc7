/*
 * tensor.h — tensor parallelism of a dense model's real math, Megatron
 * style (Shoeybi et al. 2019, "Megatron-LM", section 3).
 *
 * A plan says how T ranks split the dense layers of a model of
 * kern_mlp_new(): consecutive dense layers are paired, the first of a pair
 * split by columns (rank t holds outputs [c_t, c_{t+1}) of W and b), the
 * second by rows (rank t holds inputs [c_t, c_{t+1}) of W, and the whole
 * bias, added once after the sum), with c_t = t w / T for the split width
 * w.  The ReLU between the two is element-wise on each rank's columns and
 * needs no communication; the row-split layer's partial outputs are summed
 * across the ranks (the forward all-reduce), and in backward the
 * column-split layer's input gradient is (the backward all-reduce; none
 * when that layer is the model's first).  A dense layer left without a
 * partner (the classifier after an even number of hidden layers, the only
 * layer of softmax regression) is replicated: every rank computes it
 * whole.  With T = 1 every dense layer is replicated and nothing is
 * summed: the plain model.
 *
 * kern_tensor_loss_grad() computes the loss and gradient as the T ranks
 * would, each rank's products on its own shard of the parameters through
 * the model's backend, so that tests can hold it to the one-device result
 * (docs/kernels.md, "Tensor parallelism of the real math");
 * kern_tensor_loss_grad_groups() does so for several data-parallel groups
 * at the same parameters at once, their batches stacked.
 *
 * That is the dense models' plan (tensor.c).  A model family provides its
 * own through its KernModelOps.tensor_plan_new, which
 * kern_tensor_plan_new() calls: a struct that begins with KernTensorPlan
 * and a table of KernTensorPlanOps.  The GPT's (gpt-tensor.c) splits each
 * block's attention by heads and its MLP as above, and the vocabulary
 * (docs/kernels.md, "Tensor parallelism of the GPT"); the CNN's
 * (cnn-tensor.c) splits the convolutions by channels, column then row as
 * above, and its dense layers as the dense models' (docs/kernels.md,
 * "Tensor parallelism of the CNN").  Everything below
 * holds for every plan; the split rules stated here are the dense
 * models'.
 */
#ifndef DTSIM_KERNELS_TENSOR_H
#define DTSIM_KERNELS_TENSOR_H

#include <glib.h>

#include "kernels/kernels.h"

G_BEGIN_DECLS

/* Errors of kern_tensor_plan_new(): the message reads "[policy] tensor:
 * what is wrong; fix: what to do" (the caller prefixes the file). */
#define KERN_TENSOR_ERROR kern_tensor_error_quark ()
GQuark kern_tensor_error_quark (void);
typedef enum {
  KERN_TENSOR_ERROR_RANKS,    /* T < 1, or T not dividing a column-split width */
  KERN_TENSOR_ERROR_MODEL,    /* a model whose math cannot be split */
} KernTensorError;

/* How one layer of the model (a KernLayer index) is split. */
typedef enum {
  KERN_TENSOR_NONE,           /* no weights (ReLU, loss): runs on what it is given */
  KERN_TENSOR_REPLICATED,     /* every rank holds and computes it whole */
  KERN_TENSOR_COLUMN,         /* outputs split: rank t holds W[:, c_t..c_{t+1}), b[c_t..) */
  KERN_TENSOR_ROW,            /* inputs split: rank t holds W[c_t..c_{t+1}, :], all of b */
  KERN_TENSOR_VOCABULARY,     /* symbols split: rank t holds the rows [v_t, v_{t+1}) of a
                               * token table, or scores those logits of a loss */
} KernTensorSplit;

/* "no-weights", "replicated", "column", "row", "vocabulary". */
const char *kern_tensor_split_name (KernTensorSplit s);

/* Which pass an all-reduce belongs to. */
typedef enum {
  KERN_TENSOR_FORWARD,        /* sums a row-split layer's partial outputs */
  KERN_TENSOR_BACKWARD,       /* sums a column-split layer's partial input gradients */
} KernTensorPass;

/* One all-reduce across the T ranks of a step: `floats` per sample (a
 * batch of n samples sums n x floats floats on every rank). */
typedef struct {
  KernTensorPass pass;
  int layer;                  /* the KernLayer whose output (forward) or
                               * input gradient (backward) is summed */
  int floats;                 /* per sample: that layer's output width
                               * (forward) or input width (backward) */
} KernTensorAllReduce;

typedef struct KernTensorPlan KernTensorPlan;

/* What one family's plans do; the accessors below call them. */
typedef struct {
  /* kern_tensor_loss_grad_groups(), its arguments checked. */
  void (*loss_grad_groups) (KernTensorPlan *p, const float *params, const float *x,
                            const int *y, int n, int groups, float *const *grads,
                            double *losses);
  /* kern_tensor_cut() and kern_tensor_rank_params(), arguments checked. */
  void (*cut) (const KernTensorPlan *p, int i, int t, int *lo, int *hi);
  gsize (*rank_params) (const KernTensorPlan *p, int t);
  /* Frees the plan, the common part with kern_tensor_plan_clear(). */
  void (*free) (KernTensorPlan *p);
} KernTensorPlanOps;

/* The part of a plan every family fills, first in its own struct. */
struct KernTensorPlan {
  const KernTensorPlanOps *ops;
  const KernModel *m;         /* borrowed */
  int T;                      /* ranks */
  KernTensorSplit *split;     /* (m->n_layers) how each layer is split */
  KernTensorAllReduce *ar;    /* (n_fwd + n_bwd) the step's all-reduces */
  int n_fwd, n_bwd;
};

/* Fills the common part of a new plan: ops, m, T, every layer
 * KERN_TENSOR_NONE, room for `max_ar` all-reduces (none listed yet). */
void kern_tensor_plan_init (KernTensorPlan *p, const KernTensorPlanOps *ops,
                            const KernModel *m, int T, int max_ar);
/* Frees what kern_tensor_plan_init() allocated (not p). */
void kern_tensor_plan_clear (KernTensorPlan *p);

/* The plan of T ranks for m (borrowed: it must outlive the plan, and the
 * plan uses its backend, so one thread at a time), from m's
 * tensor_plan_new: for a model of kern_mlp_new() the dense split above,
 * for kern_gpt_new()'s the GPT's, for kern_cnn_new()'s the CNN's.  NULL with a KERN_TENSOR_ERROR when T <
 * 1, when T does not divide what the plan cuts (a column-split width, a
 * GPT's heads), or when m's math is not split (no such op: timing-only
 * models, sparse logistic regression).  Free with kern_tensor_plan_free(). */
KernTensorPlan *kern_tensor_plan_new (const KernModel *m, int T, GError **error);
/* Whether kern_tensor_plan_new() can cut m's real math: TRUE when its
 * family gives a plan (the dense models, the GPT, the CNN), FALSE for any
 * other (sparse logistic regression, timing-only models). */
gboolean kern_tensor_supports (const KernModel *m);
void kern_tensor_plan_free (KernTensorPlan *p);

/* The dense models' plan (tensor.c): kern_mlp_new()'s tensor_plan_new. */
KernTensorPlan *kern_mlp_tensor_plan_new (const KernModel *m, int T, GError **error);

/* T. */
int kern_tensor_ranks (const KernTensorPlan *p);
/* How layer i (0 <= i < m->n_layers) is split. */
KernTensorSplit kern_tensor_split (const KernTensorPlan *p, int i);
/* The part of layer i's split dimension that rank t holds, [*lo, *hi):
 * output columns of a column-split layer, input rows of a row-split one,
 * all outputs [0, out) of a replicated layer, its symbols of a
 * vocabulary-split one, [0, 0) for a layer without weights.  A CNN's
 * layers are cut by channels: output channels of a column-split
 * convolution, input channels of a row-split layer (every kernel tap or
 * pooled pixel of them; cnn-tensor.c).  A GPT's
 * query/key/value projection is cut in three such ranges, one in each of
 * q, k and v: [*lo, *hi) is the one in q (gpt-tensor.c). */
void kern_tensor_cut (const KernTensorPlan *p, int i, int t, int *lo, int *hi);
/* The float32 parameters rank t (0 <= t < T) holds, which its gradient,
 * optimizer state and memory are sized by: for the dense models, per dense
 * layer (in, out),
 * in out + out when replicated, (in + 1) out / T when column-split, and
 * in out / T + out when row-split (the bias is on every rank).  Summed
 * over the ranks this is the model's parameter count plus T - 1 times
 * what every rank holds whole: the replicated layers and the row-split
 * biases. */
gsize kern_tensor_rank_params (const KernTensorPlan *p, int t);
/* The all-reduces of one training step, in the order the ranks issue
 * them: the *n_fwd forward ones in layer order, then the *n_bwd backward
 * ones from the last layer to the first.  The array (n_fwd + n_bwd
 * entries) belongs to the plan.  For the dense models *n_fwd is the
 * number of column/row pairs, *n_bwd that less one when a pair starts at
 * the first layer; both are 0 when T = 1 (every plan lists none then). */
const KernTensorAllReduce *kern_tensor_collectives (const KernTensorPlan *p, int *n_fwd,
                                                    int *n_bwd);

/* The mean loss of the batch x (n, d), labels y (n) in [0, k), at params
 * (the model's flat vector, host memory) and, where grad is not NULL, its
 * gradient (n_params floats, host memory, the model's layout), computed as
 * the T ranks would: each rank's products on its own shard of params (a
 * column shard read in place, its rows `out` floats apart; on a backend
 * whose memory is not the host's, in an uploaded copy of params), through
 * the model's backend; the partial sums of an all-reduce added in rank
 * order 0, 1, ..., T - 1; every rank's shard gradient written to its place
 * in grad, a replicated layer's and a row-split bias's once.  The loss and
 * the softmax or squared error are those of the model (mlp.c).  Same
 * inputs, same bits.  n >= 1.  kern_tensor_loss_grad_groups() with one
 * group. */
double kern_tensor_loss_grad (KernTensorPlan *p, const float *params, const float *x,
                              const int *y, int n, float *grad);

/* The same for `groups` data-parallel groups at the same params, whose
 * batches of n samples each are stacked in x (groups n, d) and y (groups
 * n): losses[g] (groups entries) gets group g's mean loss and, where grads
 * is not NULL, grads[g] (n_params floats, host memory) its gradient, each
 * what kern_tensor_loss_grad() gives for that group's batch alone up to
 * the rounding of its products (docs/kernels.md; the same bits on the
 * fixed-order backend, whose every product element is one fixed sum).
 * Each rank's forward and input-gradient products cover all groups' rows
 * at once, its weight gradients one group at a time; the all-reduces sum
 * in rank order over all rows.  Same inputs, same bits.  n >= 1,
 * groups >= 1. */
void kern_tensor_loss_grad_groups (KernTensorPlan *p, const float *params, const float *x,
                                   const int *y, int n, int groups, float *const *grads,
                                   double *losses);

G_END_DECLS

#endif /* DTSIM_KERNELS_TENSOR_H */
