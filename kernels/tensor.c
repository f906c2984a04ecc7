/*
 * tensor.c — the real math of a dense model split across T tensor-parallel
 * ranks (tensor.h gives the split; docs/kernels.md, "Tensor parallelism of
 * the real math", the formulas), and what every family's plan shares: the
 * accessors of tensor.h and kern_tensor_plan_new(), which hands a model to
 * its family's plan (KernModelOps.tensor_plan_new; this file's for the
 * models of kern_mlp_new(), gpt-tensor.c's for the GPT).
 *
 * Every rank reads its shard of W and b in place in the parameter vector
 * (a row shard's rows are consecutive; a column shard's are `out` floats
 * apart, which the products take as their leading dimension) and writes
 * its shard gradient in place in the gradient vector, so a step copies no
 * shard: on the CPU these are the caller's vectors, on another backend one
 * uploaded copy of the parameters and one gradient vector per group in
 * its memory, downloaded whole.  Each rank's activations and partial sums
 * live in buffers of its own; every all-reduce is emulated in place in
 * rank 0's buffer: rank 0's partial result, then rank 1's added, then rank
 * 2's, ..., with the backend's sgd op at lr = -1 (dst += src) — the sum an
 * all-reduce delivers, up to the order of its additions, and the same on
 * every rank.  Rank 0's buffer then stands for every rank's copy.  A
 * replicated layer is computed once: every rank would compute the same
 * bits.
 *
 * Several data-parallel groups at the same parameters go through at once,
 * their batches stacked (rows = groups x n, as mlp.c's loss_grad_groups):
 * each rank's forward and input-gradient products cover every group's
 * rows in one product, larger and so faster than one per group; weight
 * and bias gradients are each group's own, one product per group on its
 * rows.  A row's values depend on that row alone, so each group gets what
 * a call of its own gives, up to how the BLAS rounds products of another
 * shape (bit for bit on the fixed-order backend).
 *
 * With layer l of input A (n, in) and output width out:
 *
 *   replicated  Z = b rows + A W                     (as mlp.c)
 *   column      Z_t = b_t rows + A W_t               (n, out / T) per rank
 *   row         P_t = A_t W_t                        (n, out) per rank, A_t
 *               Z = b rows + (P_0 + P_1 + ... + P_{T-1})   the rank's columns
 *                                                    of the layer before
 *
 * and backward, with g the gradient at the output:
 *
 *   replicated  dW = A^T g, db = sum_i g_i, dA = g W^T (not for layer 0)
 *   row         dW_t = A_t^T g, db = sum_i g_i (once), dA_t = g W_t^T
 *   column      dW_t = A^T g_t, db_t = sum_i g_{t,i},
 *               dA = g_0 W_0^T + ... + g_{T-1} W_{T-1}^T (not for layer 0)
 *
 * each dA masked by the ReLU of the layer before on the rank that holds it.
 * Row scratch grows to the largest stack of batches seen; a warm plan
 * allocates nothing per call but the list of a call's gradient vectors on
 * a backend of its own.
 */
#include "kernels/tensor.h"
#include "kernels/backend.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (kern-tensor-error-quark, kern_tensor_error)

/* Rows (groups x batch) one stack of groups takes on the CPU: enough for
 * products of a good shape, few enough that a stack's activations and
 * partial sums (T ranks' (rows, width) each) stay in a core's cache
 * rather than stream through memory; a batch larger than this goes alone.
 * Other backends take all groups in one stack. */
#define TENSOR_STACK_ROWS 256

/* One dense layer and every rank's scratch for it (backend memory). */
typedef struct {
  int layer;               /* its KernLayer index */
  KernTensorSplit split;   /* REPLICATED, COLUMN or ROW */
  int in, out;             /* W is (in, out) */
  gsize w, b;              /* offsets of W and b in the flat vector */
  int part;                /* split width per rank: out / T (column), in / T
                            * (row), out (replicated) */
  /* row scratch for cap rows */
  float **act;             /* column: (T) (cap, part) Z_t, ReLU'd in place */
  float **dact;            /* column: (T) (cap, part) the gradient at Z_t */
  float *z;                /* row, replicated: (cap, out) Z (ReLU'd unless
                            * last; the loss turns it into dZ) */
  float *dz;               /* row, replicated: (cap, out) gradient at Z */
  float **partial;         /* row: (T) (cap, out) P_t, the sum in [0];
                            * column past layer 0: (T) (cap, in) g_t W_t^T,
                            * [0] unused (rank 0 writes the sum's buffer) */
} TensorDense;

/* The dense models' plan. */
typedef struct {
  KernTensorPlan base;     /* m, T, the splits and all-reduces */
  KernBackend *be;         /* the model's */
  gboolean host;           /* be's buffers are host memory */
  KernLoss loss;
  int n_dense;
  TensorDense *dense;      /* (n_dense) in forward order */
  gsize n_params;
  int cap;                 /* rows the scratch holds */
  float *x_dev;            /* (cap, d) uploaded batches; NULL when host */
  int *y_dev;              /* (cap) uploaded labels; NULL when host */
  float *row_loss;         /* (cap) backend */
  float *h_loss;           /* (cap) host copy; NULL when host */
  float *params_dev;       /* (n_params) uploaded parameters; NULL when host */
  float *grad_dev;         /* (grad_groups, n_params) gradients; NULL when host */
  int grad_groups;
} MlpPlan;

const char *
kern_tensor_split_name (KernTensorSplit s)
{
  static const char *const names[] = { "no-weights", "replicated", "column", "row",
                                          "vocabulary" };
  g_return_val_if_fail ((unsigned) s < G_N_ELEMENTS (names), "?");
  return names[s];
}

static void
buf_free (KernBackend *be, void *buf)
{
  if (buf != NULL)
    be->ops->free (be, buf);
}

/* An array of `count` backend buffers of `len` floats each (count >= 1). */
static float **
bufs_new (KernBackend *be, int count, gsize len)
{
  float **a = g_new0 (float *, count);
  for (int i = 0; i < count; i++)
    a[i] = be->ops->alloc (be, MAX (len, 1));
  return a;
}

static void
bufs_free (KernBackend *be, float **a, int count)
{
  if (a == NULL)
    return;
  for (int i = 0; i < count; i++)
    buf_free (be, a[i]);
  g_free (a);
}

/* --- every plan ------------------------------------------------------------ */

void
kern_tensor_plan_init (KernTensorPlan *p, const KernTensorPlanOps *ops, const KernModel *m,
                       int T, int max_ar)
{
  g_return_if_fail (p != NULL && ops != NULL && m != NULL && T >= 1 && max_ar >= 0);
  p->ops = ops;
  p->m = m;
  p->T = T;
  p->split = g_new0 (KernTensorSplit, MAX (m->n_layers, 1));
  p->ar = g_new0 (KernTensorAllReduce, MAX (max_ar, 1));
  p->n_fwd = p->n_bwd = 0;
}

void
kern_tensor_plan_clear (KernTensorPlan *p)
{
  g_free (p->split);
  g_free (p->ar);
  p->split = NULL;
  p->ar = NULL;
}

/* The model's plan, from its tensor_plan_new; a model without one is
 * refused with what it lacks. */
KernTensorPlan *
kern_tensor_plan_new (const KernModel *m, int T, GError **error)
{
  g_return_val_if_fail (m != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (T < 1)
    {
      g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
                   "[policy] tensor: %d is not a number of ranks; fix: use tensor >= 1 "
                   "(1 = no tensor parallelism)", T);
      return NULL;
    }
  if (m->ops->tensor_plan_new != NULL)
    return m->ops->tensor_plan_new (m, T, error);
  gboolean shapes = FALSE;
  for (int i = 0; i < m->n_layers; i++)
    shapes = shapes || m->layers[i].n_weights > 0;
  const char *lacks = m->ops->loss_grad != NULL ? "real math that is not split across ranks"
                      : shapes ? "no real math (a timing-only model)"
                      : "no weight shapes (a timing-only model)";
  g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_MODEL,
               "[policy] tensor: model '%s' has %s, so its math cannot be split across "
               "ranks; fix: use [model] kind = mlp, softmax, linear, gpt or cnn for real math, or "
               "tensor = 1", m->ops->name, lacks);
  return NULL;
}

void
kern_tensor_plan_free (KernTensorPlan *p)
{
  if (p != NULL)
    p->ops->free (p);
}

int
kern_tensor_ranks (const KernTensorPlan *p)
{
  g_return_val_if_fail (p != NULL, 0);
  return p->T;
}

KernTensorSplit
kern_tensor_split (const KernTensorPlan *p, int i)
{
  g_return_val_if_fail (p != NULL && i >= 0 && i < p->m->n_layers, KERN_TENSOR_NONE);
  return p->split[i];
}

void
kern_tensor_cut (const KernTensorPlan *p, int i, int t, int *lo, int *hi)
{
  g_return_if_fail (p != NULL && i >= 0 && i < p->m->n_layers && t >= 0 && t < p->T);
  g_return_if_fail (lo != NULL && hi != NULL);
  p->ops->cut (p, i, t, lo, hi);
}

gsize
kern_tensor_rank_params (const KernTensorPlan *p, int t)
{
  g_return_val_if_fail (p != NULL && t >= 0 && t < p->T, 0);
  return p->ops->rank_params (p, t);
}

const KernTensorAllReduce *
kern_tensor_collectives (const KernTensorPlan *p, int *n_fwd, int *n_bwd)
{
  g_return_val_if_fail (p != NULL, NULL);
  if (n_fwd != NULL)
    *n_fwd = p->n_fwd;
  if (n_bwd != NULL)
    *n_bwd = p->n_bwd;
  return p->ar;
}

/* The groups' losses and gradients as the T ranks compute them
 * (tensor.h), by the plan's family. */
void
kern_tensor_loss_grad_groups (KernTensorPlan *p, const float *params, const float *x,
                              const int *y, int n, int groups, float *const *grads,
                              double *losses)
{
  g_return_if_fail (p != NULL && params != NULL && x != NULL && y != NULL);
  g_return_if_fail (losses != NULL);
  g_return_if_fail (n >= 1 && groups >= 1 && n <= G_MAXINT / groups);
  g_return_if_fail (kern_labels_valid (y, (gsize) n * groups, p->m->k));
  for (int k = 0; grads != NULL && k < groups; k++)
    g_return_if_fail (grads[k] != NULL);
  p->ops->loss_grad_groups (p, params, x, y, n, groups, grads, losses);
}

/* The loss and gradient of one batch as the T ranks compute them
 * (tensor.h): one group. */
double
kern_tensor_loss_grad (KernTensorPlan *p, const float *params, const float *x,
                       const int *y, int n, float *grad)
{
  g_return_val_if_fail (p != NULL && params != NULL && x != NULL && y != NULL, NAN);
  g_return_val_if_fail (n >= 1, NAN);
  g_return_val_if_fail (kern_labels_valid (y, (gsize) n, p->m->k), NAN);
  double loss;
  kern_tensor_loss_grad_groups (p, params, x, y, n, 1, grad != NULL ? &grad : NULL, &loss);
  return loss;
}

/* --- the plan ------------------------------------------------------------ */

static int
gcd (int a, int b)
{
  while (b != 0)
    {
      int r = a % b;
      a = b;
      b = r;
    }
  return a;
}

/* The dense layers of m (KernLayer indices into idx, at most m->n_layers),
 * checked to chain d -> ... -> k with nothing else holding parameters;
 * their count, or -1 when m is not such a network. */
static int
find_dense (const KernModel *m, int *idx)
{
  int n = 0, width = m->d;
  for (int i = 0; i < m->n_layers; i++)
    {
      const KernLayer *ly = &m->layers[i];
      if (ly->kind == KERN_LAYER_GEMM && ly->n_weights == 1)
        {
          const KernWeight *w = &ly->weight[0];
          if (w->rows != width || !w->has_bias
              || ly->params != (gsize) w->rows * w->cols + w->cols)
            return -1;
          width = w->cols;
          idx[n++] = i;
        }
      else if (ly->params != 0)
        return -1;
    }
  return n > 0 && width == m->k ? n : -1;
}

/* kern_tensor_supports (tensor.h): the model's family gives a tensor
 * plan. */
gboolean
kern_tensor_supports (const KernModel *m)
{
  g_return_val_if_fail (m != NULL, FALSE);
  return m->ops->tensor_plan_new != NULL;
}

/* Refuses T when it does not divide every column-split width. */
static gboolean
check_widths (const MlpPlan *p, GError **error)
{
  int g = 0;
  const TensorDense *bad = NULL;
  for (int l = 0; l < p->n_dense; l++)
    if (p->dense[l].split == KERN_TENSOR_COLUMN)
      {
        g = gcd (g, p->dense[l].out);
        if (bad == NULL && p->dense[l].out % p->base.T != 0)
          bad = &p->dense[l];
      }
  if (bad == NULL)
    return TRUE;
  g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
               "[policy] tensor: %d ranks do not divide the %d outputs of layer %s, which "
               "tensor parallelism splits by columns; fix: set tensor to a divisor of %d "
               "(the greatest common divisor of the widths split by columns: [model] hidden "
               "widths 1, 3, 5, ...), or change those widths",
               p->base.T, bad->out, p->base.m->layers[bad->layer].name, g);
  return FALSE;
}

/* Splits: pairs (column, row) from the first dense layer on, an unpaired
 * last one replicated; all replicated when T = 1. */
static void
assign_splits (MlpPlan *p)
{
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      if (p->base.T == 1 || (l % 2 == 0 && l + 1 == p->n_dense))
        dl->split = KERN_TENSOR_REPLICATED;
      else
        dl->split = l % 2 == 0 ? KERN_TENSOR_COLUMN : KERN_TENSOR_ROW;
      dl->part = dl->split == KERN_TENSOR_COLUMN ? dl->out / p->base.T
                 : dl->split == KERN_TENSOR_ROW ? dl->in / p->base.T : dl->out;
      p->base.split[dl->layer] = dl->split;
    }
}

/* The all-reduces: forward ones after each row-split layer in layer
 * order, then backward ones before each column-split layer but the first,
 * last layer first. */
static void
list_collectives (MlpPlan *p)
{
  for (int l = 0; l < p->n_dense; l++)
    if (p->dense[l].split == KERN_TENSOR_ROW)
      p->base.ar[p->base.n_fwd++] = (KernTensorAllReduce) { KERN_TENSOR_FORWARD, p->dense[l].layer,
                                                  p->dense[l].out };
  for (int l = p->n_dense - 1; l > 0; l--)
    if (p->dense[l].split == KERN_TENSOR_COLUMN)
      p->base.ar[p->base.n_fwd + p->base.n_bwd++] = (KernTensorAllReduce) { KERN_TENSOR_BACKWARD,
                                                             p->dense[l].layer, p->dense[l].in };
}

/* The parameters' and gradients' buffers of a backend whose memory is
 * not the host's (the rows' scratch comes with the first call). */
static void
alloc_params (MlpPlan *p)
{
  if (!p->host)
    p->params_dev = p->be->ops->alloc (p->be, MAX (p->n_params, 1));
}

static const KernTensorPlanOps mlp_plan_ops;

/* How T >= 1 ranks split m, a model of kern_mlp_new() (tensor.h). */
KernTensorPlan *
kern_mlp_tensor_plan_new (const KernModel *m, int T, GError **error)
{
  g_return_val_if_fail (m != NULL && T >= 1 && kern_mlp_backend (m, NULL) != NULL, NULL);
  g_autofree int *idx = g_new (int, MAX (m->n_layers, 1));
  int n_dense = find_dense (m, idx);
  if (n_dense < 0)
    {
      g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_MODEL,
                   "[policy] tensor: the layers of model '%s' do not chain dense layers "
                   "from %d inputs to %d outputs; fix: use [model] kind = mlp, or tensor = 1",
                   m->ops->name, m->d, m->k);
      return NULL;
    }

  MlpPlan *p = g_new0 (MlpPlan, 1);
  kern_tensor_plan_init (&p->base, &mlp_plan_ops, m, T, 2 * n_dense);
  p->be = kern_mlp_backend (m, &p->loss);
  p->host = strcmp (p->be->ops->name, "cpu") == 0;
  p->n_dense = n_dense;
  p->n_params = m->ops->n_params (m);
  p->dense = g_new0 (TensorDense, n_dense);
  for (int l = 0; l < n_dense; l++)
    {
      const KernWeight *w = &m->layers[idx[l]].weight[0];
      p->dense[l] = (TensorDense) { .layer = idx[l], .in = w->rows, .out = w->cols,
                                    .w = w->offset, .b = w->bias };
    }
  assign_splits (p);
  if (!check_widths (p, error))
    {
      kern_tensor_plan_free (&p->base);
      return NULL;
    }
  list_collectives (p);
  alloc_params (p);
  return &p->base;
}

static void
free_rows (MlpPlan *p)
{
  KernBackend *be = p->be;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      bufs_free (be, dl->act, p->base.T);
      bufs_free (be, dl->dact, p->base.T);
      bufs_free (be, dl->partial, p->base.T);
      buf_free (be, dl->z);
      buf_free (be, dl->dz);
      dl->act = dl->dact = dl->partial = NULL;
      dl->z = dl->dz = NULL;
    }
  buf_free (be, p->x_dev);
  buf_free (be, p->y_dev);
  buf_free (be, p->row_loss);
  g_free (p->h_loss);
  p->x_dev = NULL;
  p->y_dev = NULL;
  p->row_loss = NULL;
  p->h_loss = NULL;
  p->cap = 0;
}

static void
mlp_plan_free (KernTensorPlan *base)
{
  MlpPlan *p = (MlpPlan *) base;
  free_rows (p);
  buf_free (p->be, p->params_dev);
  buf_free (p->be, p->grad_dev);
  g_free (p->dense);
  kern_tensor_plan_clear (&p->base);
  g_free (p);
}

static void
mlp_plan_cut (const KernTensorPlan *base, int i, int t, int *lo, int *hi)
{
  const MlpPlan *p = (const MlpPlan *) base;
  *lo = *hi = 0;
  for (int l = 0; l < p->n_dense; l++)
    if (p->dense[l].layer == i)
      {
        const TensorDense *dl = &p->dense[l];
        gboolean split = dl->split != KERN_TENSOR_REPLICATED;
        *lo = split ? t * dl->part : 0;
        *hi = *lo + dl->part;
      }
}

static gsize
mlp_plan_rank_params (const KernTensorPlan *base, int t G_GNUC_UNUSED)
{
  const MlpPlan *p = (const MlpPlan *) base;
  gsize total = 0;
  for (int l = 0; l < p->n_dense; l++)
    {
      const TensorDense *dl = &p->dense[l];
      if (dl->split == KERN_TENSOR_COLUMN)
        total += (gsize) (dl->in + 1) * dl->part;
      else if (dl->split == KERN_TENSOR_ROW)
        total += (gsize) dl->part * dl->out + dl->out;
      else
        total += (gsize) dl->in * dl->out + dl->out;
    }
  return total;
}

/* --- the math --------------------------------------------------------------- */

/* Grows the row scratch to `rows` rows; contents are not kept. */
static void
reserve_rows (MlpPlan *p, int rows)
{
  if (rows <= p->cap)
    return;
  free_rows (p);
  KernBackend *be = p->be;
  gsize r = (gsize) rows;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      if (dl->split == KERN_TENSOR_COLUMN)
        {
          dl->act = bufs_new (be, p->base.T, r * dl->part);
          dl->dact = bufs_new (be, p->base.T, r * dl->part);
          if (l > 0)
            dl->partial = bufs_new (be, p->base.T, r * dl->in);
          continue;
        }
      dl->z = be->ops->alloc (be, r * dl->out);
      dl->dz = be->ops->alloc (be, r * dl->out);
      if (dl->split == KERN_TENSOR_ROW)
        dl->partial = bufs_new (be, p->base.T, r * dl->out);
    }
  if (!p->host)
    {
      p->x_dev = be->ops->alloc (be, r * p->base.m->d);
      p->y_dev = be->ops->alloc_int (be, r);
      p->h_loss = g_new (float, r);
    }
  p->row_loss = be->ops->alloc (be, r);
  p->cap = rows;
}


/* Grows the gradients' buffer of a backend whose memory is not the host's
 * to `groups` full gradient vectors; contents are not kept. */
static void
reserve_grads (MlpPlan *p, int groups)
{
  if (p->host || groups <= p->grad_groups)
    return;
  buf_free (p->be, p->grad_dev);
  p->grad_dev = p->be->ops->alloc (p->be, (gsize) groups * MAX (p->n_params, 1));
  p->grad_groups = groups;
}

/* Where rank t's shard of dense layer dl starts in a vector of the
 * model's layout (parameters or gradient): W_t, whose rows are `out`
 * floats apart in either split, and b_t, `part` floats for a column
 * shard, the whole bias otherwise. */
static gsize
shard_w (const TensorDense *dl, int t)
{
  gsize c = (gsize) t * dl->part;
  if (dl->split == KERN_TENSOR_ROW)       /* rows c .. c + part: one piece */
    return dl->w + c * dl->out;
  if (dl->split == KERN_TENSOR_COLUMN)    /* columns c .. c + part of each row */
    return dl->w + c;
  return dl->w;
}

static gsize
shard_b (const TensorDense *dl, int t)
{
  return dl->b + (dl->split == KERN_TENSOR_COLUMN ? (gsize) t * dl->part : 0);
}

/* dst += src[1] + ... + src[T-1] in rank order, n floats each, where dst
 * holds rank 0's part: the all-reduce, in place. */
static void
all_reduce (MlpPlan *p, float *dst, float *const *src, gsize n)
{
  for (int t = 1; t < p->base.T; t++)
    p->be->ops->sgd (p->be, dst, src[t], n, -1.0f);
}

/* Forward of dense layer l at parameters P (backend memory) on its input
 * A (rows, in), replicated on every rank (for a row-split layer: the
 * column shards of the layer before); rows = groups x n, all groups in
 * one product per rank. */
static void
forward_dense (MlpPlan *p, int l, const float *P, const float *A, int rows)
{
  KernBackend *be = p->be;
  TensorDense *dl = &p->dense[l];
  gboolean hidden = l + 1 < p->n_dense;
  gsize len = (gsize) rows * dl->out;
  switch (dl->split)
    {
    case KERN_TENSOR_COLUMN:             /* always hidden: a row layer follows */
      for (int t = 0; t < p->base.T; t++)
        {
          be->ops->fill_rows (be, dl->act[t], P + shard_b (dl, t), rows, dl->part);
          be->ops->gemm (be, FALSE, FALSE, rows, dl->part, dl->in, 1.0f, A, dl->in,
                         P + shard_w (dl, t), dl->out, 1.0f, dl->act[t], dl->part);
          be->ops->relu (be, dl->act[t], (gsize) rows * dl->part);
        }
      return;
    case KERN_TENSOR_ROW:
      {
        const TensorDense *prev = &p->dense[l - 1];
        for (int t = 0; t < p->base.T; t++)
          be->ops->gemm (be, FALSE, FALSE, rows, dl->out, dl->part, 1.0f, prev->act[t],
                         dl->part, P + shard_w (dl, t), dl->out, 0.0f, dl->partial[t], dl->out);
        all_reduce (p, dl->partial[0], dl->partial, len);
        be->ops->fill_rows (be, dl->z, P + shard_b (dl, 0), rows, dl->out);
        be->ops->sgd (be, dl->z, dl->partial[0], len, -1.0f);   /* the bias, once */
        break;
      }
    default:
      be->ops->fill_rows (be, dl->z, P + shard_b (dl, 0), rows, dl->out);
      be->ops->gemm (be, FALSE, FALSE, rows, dl->out, dl->in, 1.0f, A, dl->in,
                     P + shard_w (dl, 0), dl->out, 1.0f, dl->z, dl->out);
      break;
    }
  if (hidden)
    be->ops->relu (be, dl->z, len);
}

/* Rank t's weight and bias gradients of dense layer l for each of the
 * `groups` groups of n rows: from the group's rows of the layer's input
 * A (rows, a_cols) and of the gradient at its output g (rows, g_cols)
 * into the group's gradient vector G[g] (backend memory), in place. */
static void
shard_grads (MlpPlan *p, int l, int t, const float *A, int a_cols, const float *g,
             int g_cols, int n, int groups, float *const *G, gboolean bias)
{
  KernBackend *be = p->be;
  TensorDense *dl = &p->dense[l];
  for (int k = 0; k < groups; k++)
    {
      gsize r0 = (gsize) k * n;
      be->ops->gemm (be, TRUE, FALSE, a_cols, g_cols, n, 1.0f, A + r0 * a_cols, a_cols,
                     g + r0 * g_cols, g_cols, 0.0f, G[k] + shard_w (dl, t), dl->out);
      if (bias)
        be->ops->col_sum (be, g + r0 * g_cols, n, g_cols, G[k] + shard_b (dl, t));
    }
}

/* Backward of dense layer l at parameters P from the gradient at its
 * output (dz, or dact for a column-split layer; groups x n rows) to each
 * group's shard gradients in G[] and, unless l = 0, the gradient at its
 * input over all rows, masked by the ReLU before it (into the layer
 * before's dz or dact).  A (rows, in) is its input as forward_dense took
 * it. */
static void
backward_dense (MlpPlan *p, int l, const float *P, const float *A, int n, int groups,
                float *const *G)
{
  KernBackend *be = p->be;
  TensorDense *dl = &p->dense[l];
  TensorDense *prev = l > 0 ? &p->dense[l - 1] : NULL;
  int rows = n * groups;
  /* the last layer's gradient is where the loss left it, over its logits */
  const float *g = l + 1 == p->n_dense ? dl->z : dl->dz;     /* (rows, out) */
  switch (dl->split)
    {
    case KERN_TENSOR_COLUMN:
      for (int t = 0; t < p->base.T; t++)
        {
          shard_grads (p, l, t, A, dl->in, dl->dact[t], dl->part, n, groups, G, TRUE);
          if (prev != NULL)          /* rank 0's part straight into the sum's buffer */
            be->ops->gemm (be, FALSE, TRUE, rows, dl->in, dl->part, 1.0f, dl->dact[t],
                           dl->part, P + shard_w (dl, t), dl->out, 0.0f,
                           t == 0 ? prev->dz : dl->partial[t], dl->in);
        }
      if (prev != NULL)
        {
          all_reduce (p, prev->dz, dl->partial, (gsize) rows * dl->in);
          be->ops->relu_backward (be, prev->dz, prev->z, (gsize) rows * dl->in);
        }
      return;
    case KERN_TENSOR_ROW:
      for (int t = 0; t < p->base.T; t++)
        {
          /* the bias once, with rank 0's part */
          shard_grads (p, l, t, prev->act[t], dl->part, g, dl->out, n, groups, G, t == 0);
          be->ops->gemm (be, FALSE, TRUE, rows, dl->part, dl->out, 1.0f, g, dl->out,
                         P + shard_w (dl, t), dl->out, 0.0f, prev->dact[t], dl->part);
          be->ops->relu_backward (be, prev->dact[t], prev->act[t], (gsize) rows * dl->part);
        }
      return;
    default:
      shard_grads (p, l, 0, A, dl->in, g, dl->out, n, groups, G, TRUE);
      if (prev == NULL)
        return;
      /* the layer before is row-split or replicated: its output is whole */
      be->ops->gemm (be, FALSE, TRUE, rows, dl->in, dl->out, 1.0f, g, dl->out,
                     P + shard_w (dl, 0), dl->out, 0.0f, prev->dz, dl->in);
      be->ops->relu_backward (be, prev->dz, prev->z, (gsize) rows * dl->in);
      return;
    }
}

/* The input layer l reads: x, or the whole output of the layer before
 * (unused before a row-split layer, which reads the column shards). */
static const float *
layer_input (const MlpPlan *p, int l, const float *X)
{
  return l == 0 ? X : p->dense[l - 1].z;
}

/* One stack of `groups` groups' batches, x (groups n, d) and y (groups n)
 * in host memory, at parameters P (backend memory): losses[g] and, where
 * grads is not NULL, grads[g] (host memory), as the T ranks compute them.
 * The row scratch must hold groups n rows. */
static void
loss_grad_stack (MlpPlan *p, const float *P, const float *x, const int *y, int n,
                 int groups, float *const *grads, double *losses)
{
  KernBackend *be = p->be;
  int rows = n * groups;
  const float *X = x;
  const int *Y = y;
  if (!p->host)
    {
      be->ops->upload (be, p->x_dev, x, (gsize) rows * p->base.m->d);
      be->ops->upload_int (be, p->y_dev, y, (gsize) rows);
      X = p->x_dev;
      Y = p->y_dev;
    }

  for (int l = 0; l < p->n_dense; l++)
    forward_dense (p, l, P, layer_input (p, l, X), rows);

  /* the loss on the logits (whole on every rank), dZ over them in place */
  TensorDense *last = &p->dense[p->n_dense - 1];
  float scale = grads != NULL ? 1.0f / (float) n : 0.0f;
  if (p->loss == KERN_LOSS_XENT)
    be->ops->softmax_xent (be, last->z, Y, rows, p->base.m->k, scale, p->row_loss, NULL);
  else
    be->ops->mse (be, last->z, Y, rows, p->base.m->k, scale, p->row_loss, NULL);
  const float *rl = p->row_loss;
  if (!p->host)
    {
      be->ops->download (be, p->h_loss, p->row_loss, (gsize) rows);
      rl = p->h_loss;
    }
  for (int k = 0; k < groups; k++)
    {
      const float *r = rl + (gsize) k * n;
      double total = r[0];
      for (int i = 1; i < n; i++)
        total += r[i];
      losses[k] = total / n;
    }
  if (grads == NULL)
    return;

  /* every rank's shard gradients go in place into each group's vector:
   * the caller's on the host, the backend's own otherwise */
  float *const *G = grads;
  g_autofree float **dev = NULL;
  if (!p->host)
    {
      reserve_grads (p, groups);
      dev = g_new (float *, groups);
      for (int k = 0; k < groups; k++)
        dev[k] = p->grad_dev + (gsize) k * p->n_params;
      G = dev;
    }
  for (int l = p->n_dense - 1; l >= 0; l--)
    backward_dense (p, l, P, layer_input (p, l, X), n, groups, G);
  for (int k = 0; !p->host && k < groups; k++)
    be->ops->download (be, grads[k], G[k], p->n_params);
}

/* The groups' losses and gradients as the T ranks compute them
 * (tensor.h), in stacks of TENSOR_STACK_ROWS rows on the CPU. */
static void
mlp_plan_loss_grad_groups (KernTensorPlan *base, const float *params, const float *x,
                           const int *y, int n, int groups, float *const *grads,
                           double *losses)
{
  MlpPlan *p = (MlpPlan *) base;
  /* the backend's view of the parameters, loaded once: every rank reads
   * its shard in place */
  const float *P = params;
  if (!p->host)
    {
      p->be->ops->upload (p->be, p->params_dev, params, p->n_params);
      P = p->params_dev;
    }
  int stack = p->host ? CLAMP (TENSOR_STACK_ROWS / n, 1, groups) : groups;
  reserve_rows (p, n * stack);
  for (int g0 = 0; g0 < groups; g0 += stack)
    {
      int count = MIN (stack, groups - g0);
      loss_grad_stack (p, P, x + (gsize) g0 * n * p->base.m->d, y + (gsize) g0 * n, n, count,
                       grads != NULL ? grads + g0 : NULL, losses + g0);
    }
}

static const KernTensorPlanOps mlp_plan_ops = {
  .loss_grad_groups = mlp_plan_loss_grad_groups,
  .cut = mlp_plan_cut,
  .rank_params = mlp_plan_rank_params,
  .free = mlp_plan_free,
};
