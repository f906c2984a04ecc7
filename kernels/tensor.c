/*
 * tensor.c — the real math of a dense model split across T tensor-parallel
 * ranks (tensor.h gives the split; docs/kernels.md, "Tensor parallelism of
 * the real math", the formulas).
 *
 * Every rank's part lives in buffers of its own on the model's backend: the
 * shard of W and b it holds, its activations and its shard gradients.  A
 * step copies each rank's shard out of the flat parameter vector (row by
 * row for a column shard, whose rows are strided in W; in one piece for a
 * row shard, whose rows are consecutive), runs each rank's products on its
 * shards, and emulates every all-reduce in place in rank 0's buffer: rank
 * 0's partial result, then rank 1's added, then rank 2's, ..., with the
 * backend's sgd op at lr = -1 (dst += src) — the sum an all-reduce
 * delivers, up to the order of its additions, and the same on every rank.
 * Rank 0's buffer then stands for every rank's copy.  A replicated layer is
 * computed once: every rank would compute the same bits.
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
 * Row scratch grows to the largest batch seen; a warm plan allocates
 * nothing per call.
 */
#include "kernels/tensor.h"
#include "kernels/backend.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (kern-tensor-error-quark, kern_tensor_error)

/* One dense layer and every rank's buffers for it (backend memory). */
typedef struct {
  int layer;               /* its KernLayer index */
  KernTensorSplit split;   /* REPLICATED, COLUMN or ROW */
  int in, out;             /* W is (in, out) */
  gsize w, b;              /* offsets of W and b in the flat vector */
  int part;                /* split width per rank: out / T (column), in / T
                            * (row), out (replicated) */
  int ranks;               /* buffers per array below: T, or 1 when replicated */
  float **W, **gW;         /* (ranks) column (in, part), row (part, out),
                            * replicated (in, out) */
  float **bias, **gb;      /* column (ranks) of (part); else [0] (out) */
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

struct KernTensorPlan {
  const KernModel *m;      /* borrowed */
  KernBackend *be;         /* the model's */
  gboolean host;           /* be's buffers are host memory */
  KernLoss loss;
  int T;
  int n_dense;
  TensorDense *dense;      /* (n_dense) in forward order */
  KernTensorSplit *split;  /* (m->n_layers) */
  KernTensorAllReduce *ar; /* (n_fwd + n_bwd) */
  int n_fwd, n_bwd;
  gsize n_params;
  int cap;                 /* rows the scratch holds */
  float *x_dev;            /* (cap, d) uploaded batch; NULL when host */
  int *y_dev;              /* (cap) uploaded labels; NULL when host */
  float *row_loss;         /* (cap) backend */
  float *h_loss;           /* (cap) host copy; NULL when host */
  float *stage;            /* host staging of one strided shard; NULL when host */
};

const char *
kern_tensor_split_name (KernTensorSplit s)
{
  static const char *const names[] = { "no-weights", "replicated", "column", "row" };
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

/* Refuses a model the plan cannot split; TRUE when it can. */
static gboolean
check_model (const KernModel *m, GError **error)
{
  gboolean shapes = FALSE;
  for (int i = 0; i < m->n_layers; i++)
    shapes = shapes || m->layers[i].n_weights > 0;
  if (kern_mlp_backend (m, NULL) != NULL)
    return TRUE;
  g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_MODEL,
               "[policy] tensor: model '%s' has %s, so its math cannot be split across "
               "ranks; fix: use [model] kind = mlp (or softmax, linear) for real math, or "
               "tensor = 1", m->ops->name,
               shapes ? "no real math (a timing-only model)"
                      : "no weight shapes (a timing-only model)");
  return FALSE;
}

/* Refuses T when it does not divide every column-split width. */
static gboolean
check_widths (const KernTensorPlan *p, GError **error)
{
  int g = 0;
  const TensorDense *bad = NULL;
  for (int l = 0; l < p->n_dense; l++)
    if (p->dense[l].split == KERN_TENSOR_COLUMN)
      {
        g = gcd (g, p->dense[l].out);
        if (bad == NULL && p->dense[l].out % p->T != 0)
          bad = &p->dense[l];
      }
  if (bad == NULL)
    return TRUE;
  g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
               "[policy] tensor: %d ranks do not divide the %d outputs of layer %s, which "
               "tensor parallelism splits by columns; fix: set tensor to a divisor of %d "
               "(the greatest common divisor of the widths split by columns: [model] hidden "
               "widths 1, 3, 5, ...), or change those widths",
               p->T, bad->out, p->m->layers[bad->layer].name, g);
  return FALSE;
}

/* Splits: pairs (column, row) from the first dense layer on, an unpaired
 * last one replicated; all replicated when T = 1. */
static void
assign_splits (KernTensorPlan *p)
{
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      if (p->T == 1 || (l % 2 == 0 && l + 1 == p->n_dense))
        dl->split = KERN_TENSOR_REPLICATED;
      else
        dl->split = l % 2 == 0 ? KERN_TENSOR_COLUMN : KERN_TENSOR_ROW;
      dl->part = dl->split == KERN_TENSOR_COLUMN ? dl->out / p->T
                 : dl->split == KERN_TENSOR_ROW ? dl->in / p->T : dl->out;
      dl->ranks = dl->split == KERN_TENSOR_REPLICATED ? 1 : p->T;
      p->split[dl->layer] = dl->split;
    }
}

/* The all-reduces: forward ones after each row-split layer in layer
 * order, then backward ones before each column-split layer but the first,
 * last layer first. */
static void
list_collectives (KernTensorPlan *p)
{
  p->ar = g_new0 (KernTensorAllReduce, MAX (2 * p->n_dense, 1));
  for (int l = 0; l < p->n_dense; l++)
    if (p->dense[l].split == KERN_TENSOR_ROW)
      p->ar[p->n_fwd++] = (KernTensorAllReduce) { KERN_TENSOR_FORWARD, p->dense[l].layer,
                                                  p->dense[l].out };
  for (int l = p->n_dense - 1; l > 0; l--)
    if (p->dense[l].split == KERN_TENSOR_COLUMN)
      p->ar[p->n_fwd + p->n_bwd++] = (KernTensorAllReduce) { KERN_TENSOR_BACKWARD,
                                                             p->dense[l].layer, p->dense[l].in };
}

/* The shard buffers of every dense layer (sizes known from the plan). */
static void
alloc_shards (KernTensorPlan *p)
{
  KernBackend *be = p->be;
  gsize stage = 0;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      gsize nw = dl->split == KERN_TENSOR_ROW ? (gsize) dl->part * dl->out
                                              : (gsize) dl->in * dl->part;
      int nb = dl->split == KERN_TENSOR_COLUMN ? dl->ranks : 1;
      gsize lb = dl->split == KERN_TENSOR_COLUMN ? (gsize) dl->part : (gsize) dl->out;
      dl->W = bufs_new (be, dl->ranks, nw);
      dl->gW = bufs_new (be, dl->ranks, nw);
      dl->bias = bufs_new (be, nb, lb);
      dl->gb = bufs_new (be, nb, lb);
      stage = MAX (stage, nw);
    }
  if (!p->host)
    p->stage = g_new (float, MAX (stage, 1));
}

/* How T ranks split m (tensor.h). */
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
  if (!check_model (m, error))
    return NULL;
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

  KernTensorPlan *p = g_new0 (KernTensorPlan, 1);
  p->m = m;
  p->be = kern_mlp_backend (m, &p->loss);
  p->host = strcmp (p->be->ops->name, "cpu") == 0;
  p->T = T;
  p->n_dense = n_dense;
  p->n_params = m->ops->n_params (m);
  p->split = g_new0 (KernTensorSplit, m->n_layers);
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
      kern_tensor_plan_free (p);
      return NULL;
    }
  list_collectives (p);
  alloc_shards (p);
  return p;
}

static void
free_rows (KernTensorPlan *p)
{
  KernBackend *be = p->be;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      bufs_free (be, dl->act, p->T);
      bufs_free (be, dl->dact, p->T);
      bufs_free (be, dl->partial, p->T);
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

void
kern_tensor_plan_free (KernTensorPlan *p)
{
  if (p == NULL)
    return;
  free_rows (p);
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      int nb = dl->split == KERN_TENSOR_COLUMN ? dl->ranks : 1;
      bufs_free (p->be, dl->W, dl->ranks);
      bufs_free (p->be, dl->gW, dl->ranks);
      bufs_free (p->be, dl->bias, nb);
      bufs_free (p->be, dl->gb, nb);
    }
  g_free (p->dense);
  g_free (p->split);
  g_free (p->ar);
  g_free (p->stage);
  g_free (p);
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

gsize
kern_tensor_rank_params (const KernTensorPlan *p, int t)
{
  g_return_val_if_fail (p != NULL && t >= 0 && t < p->T, 0);
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

/* --- the math --------------------------------------------------------------- */

/* Grows the row scratch to `rows` rows; contents are not kept. */
static void
reserve_rows (KernTensorPlan *p, int rows)
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
          dl->act = bufs_new (be, p->T, r * dl->part);
          dl->dact = bufs_new (be, p->T, r * dl->part);
          if (l > 0)
            dl->partial = bufs_new (be, p->T, r * dl->in);
          continue;
        }
      dl->z = be->ops->alloc (be, r * dl->out);
      dl->dz = be->ops->alloc (be, r * dl->out);
      if (dl->split == KERN_TENSOR_ROW)
        dl->partial = bufs_new (be, p->T, r * dl->out);
    }
  if (!p->host)
    {
      p->x_dev = be->ops->alloc (be, r * p->m->d);
      p->y_dev = be->ops->alloc_int (be, r);
      p->h_loss = g_new (float, r);
    }
  p->row_loss = be->ops->alloc (be, r);
  p->cap = rows;
}

/* Copies the shards every rank holds out of params (host memory). */
static void
load_shards (KernTensorPlan *p, const float *params)
{
  KernBackend *be = p->be;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      const float *W = params + dl->w, *b = params + dl->b;
      for (int t = 0; t < dl->ranks; t++)
        {
          int c = t * dl->part;
          if (dl->split == KERN_TENSOR_ROW)      /* rows c.. c + part: one piece */
            be->ops->upload (be, dl->W[t], W + (gsize) c * dl->out,
                             (gsize) dl->part * dl->out);
          else                                   /* columns c .. c + part of each row */
            {
              float *dst = p->host ? dl->W[t] : p->stage;
              for (int i = 0; i < dl->in; i++)
                memcpy (dst + (gsize) i * dl->part, W + (gsize) i * dl->out + c,
                        (gsize) dl->part * sizeof (float));
              if (!p->host)
                be->ops->upload (be, dl->W[t], p->stage, (gsize) dl->in * dl->part);
            }
          if (dl->split == KERN_TENSOR_COLUMN)
            be->ops->upload (be, dl->bias[t], b + c, (gsize) dl->part);
        }
      if (dl->split != KERN_TENSOR_COLUMN)
        be->ops->upload (be, dl->bias[0], b, (gsize) dl->out);
    }
}

/* Writes every rank's shard gradient to its place in grad (host memory),
 * the bias of a row-split layer and a replicated layer's gradient once. */
static void
store_shards (KernTensorPlan *p, float *grad)
{
  KernBackend *be = p->be;
  for (int l = 0; l < p->n_dense; l++)
    {
      TensorDense *dl = &p->dense[l];
      float *gW = grad + dl->w, *gb = grad + dl->b;
      for (int t = 0; t < dl->ranks; t++)
        {
          int c = t * dl->part;
          if (dl->split == KERN_TENSOR_ROW)
            be->ops->download (be, gW + (gsize) c * dl->out, dl->gW[t],
                               (gsize) dl->part * dl->out);
          else
            {
              const float *src = dl->gW[t];
              if (!p->host)
                {
                  be->ops->download (be, p->stage, dl->gW[t], (gsize) dl->in * dl->part);
                  src = p->stage;
                }
              for (int i = 0; i < dl->in; i++)
                memcpy (gW + (gsize) i * dl->out + c, src + (gsize) i * dl->part,
                        (gsize) dl->part * sizeof (float));
            }
          if (dl->split == KERN_TENSOR_COLUMN)
            be->ops->download (be, gb + c, dl->gb[t], (gsize) dl->part);
        }
      if (dl->split != KERN_TENSOR_COLUMN)
        be->ops->download (be, gb, dl->gb[0], (gsize) dl->out);
    }
}

/* dst += src[1] + ... + src[T-1] in rank order, n floats each, where dst
 * holds rank 0's part: the all-reduce, in place. */
static void
all_reduce (KernTensorPlan *p, float *dst, float *const *src, gsize n)
{
  for (int t = 1; t < p->T; t++)
    p->be->ops->sgd (p->be, dst, src[t], n, -1.0f);
}

/* Forward of dense layer l on its input A (n, in), replicated on every
 * rank (for a row-split layer: the column shards of the layer before). */
static void
forward_dense (KernTensorPlan *p, int l, const float *A, int n)
{
  KernBackend *be = p->be;
  TensorDense *dl = &p->dense[l];
  gboolean hidden = l + 1 < p->n_dense;
  gsize len = (gsize) n * dl->out;
  switch (dl->split)
    {
    case KERN_TENSOR_COLUMN:             /* always hidden: a row layer follows */
      for (int t = 0; t < p->T; t++)
        {
          be->ops->fill_rows (be, dl->act[t], dl->bias[t], n, dl->part);
          be->ops->gemm (be, FALSE, FALSE, n, dl->part, dl->in, 1.0f, A, dl->in, dl->W[t],
                         dl->part, 1.0f, dl->act[t], dl->part);
          be->ops->relu (be, dl->act[t], (gsize) n * dl->part);
        }
      return;
    case KERN_TENSOR_ROW:
      {
        const TensorDense *prev = &p->dense[l - 1];
        for (int t = 0; t < p->T; t++)
          be->ops->gemm (be, FALSE, FALSE, n, dl->out, dl->part, 1.0f, prev->act[t], dl->part,
                         dl->W[t], dl->out, 0.0f, dl->partial[t], dl->out);
        all_reduce (p, dl->partial[0], dl->partial, len);
        be->ops->fill_rows (be, dl->z, dl->bias[0], n, dl->out);
        be->ops->sgd (be, dl->z, dl->partial[0], len, -1.0f);   /* the bias, once */
        break;
      }
    default:
      be->ops->fill_rows (be, dl->z, dl->bias[0], n, dl->out);
      be->ops->gemm (be, FALSE, FALSE, n, dl->out, dl->in, 1.0f, A, dl->in, dl->W[0], dl->out,
                     1.0f, dl->z, dl->out);
      break;
    }
  if (hidden)
    be->ops->relu (be, dl->z, len);
}

/* Backward of dense layer l from the gradient at its output (dz, or dact
 * for a column-split layer) to its shard gradients and, unless l = 0, the
 * gradient at its input, masked by the ReLU before it (into the layer
 * before's dz or dact).  A (n, in) is its input as forward_dense took it. */
static void
backward_dense (KernTensorPlan *p, int l, const float *A, int n)
{
  KernBackend *be = p->be;
  TensorDense *dl = &p->dense[l];
  TensorDense *prev = l > 0 ? &p->dense[l - 1] : NULL;
  /* the last layer's gradient is where the loss left it, over its logits */
  const float *g = l + 1 == p->n_dense ? dl->z : dl->dz;     /* (n, out) */
  switch (dl->split)
    {
    case KERN_TENSOR_COLUMN:
      for (int t = 0; t < p->T; t++)
        {
          be->ops->gemm (be, TRUE, FALSE, dl->in, dl->part, n, 1.0f, A, dl->in, dl->dact[t],
                         dl->part, 0.0f, dl->gW[t], dl->part);
          be->ops->col_sum (be, dl->dact[t], n, dl->part, dl->gb[t]);
          if (prev != NULL)          /* rank 0's part straight into the sum's buffer */
            be->ops->gemm (be, FALSE, TRUE, n, dl->in, dl->part, 1.0f, dl->dact[t], dl->part,
                           dl->W[t], dl->part, 0.0f, t == 0 ? prev->dz : dl->partial[t],
                           dl->in);
        }
      if (prev != NULL)
        {
          all_reduce (p, prev->dz, dl->partial, (gsize) n * dl->in);
          be->ops->relu_backward (be, prev->dz, prev->z, (gsize) n * dl->in);
        }
      return;
    case KERN_TENSOR_ROW:
      be->ops->col_sum (be, g, n, dl->out, dl->gb[0]);
      for (int t = 0; t < p->T; t++)
        {
          be->ops->gemm (be, TRUE, FALSE, dl->part, dl->out, n, 1.0f, prev->act[t], dl->part,
                         g, dl->out, 0.0f, dl->gW[t], dl->out);
          be->ops->gemm (be, FALSE, TRUE, n, dl->part, dl->out, 1.0f, g, dl->out,
                         dl->W[t], dl->out, 0.0f, prev->dact[t], dl->part);
          be->ops->relu_backward (be, prev->dact[t], prev->act[t], (gsize) n * dl->part);
        }
      return;
    default:
      be->ops->gemm (be, TRUE, FALSE, dl->in, dl->out, n, 1.0f, A, dl->in, g, dl->out,
                     0.0f, dl->gW[0], dl->out);
      be->ops->col_sum (be, g, n, dl->out, dl->gb[0]);
      if (prev == NULL)
        return;
      /* the layer before is row-split or replicated: its output is whole */
      be->ops->gemm (be, FALSE, TRUE, n, dl->in, dl->out, 1.0f, g, dl->out, dl->W[0],
                     dl->out, 0.0f, prev->dz, dl->in);
      be->ops->relu_backward (be, prev->dz, prev->z, (gsize) n * dl->in);
      return;
    }
}

/* The input layer l reads: x, or the whole output of the layer before
 * (NULL before a row-split layer, which reads the column shards). */
static const float *
layer_input (const KernTensorPlan *p, int l, const float *X)
{
  return l == 0 ? X : p->dense[l - 1].z;
}

static gboolean
labels_valid (const int *y, int n, int k)
{
  for (int i = 0; i < n; i++)
    if (y[i] < 0 || y[i] >= k)
      return FALSE;
  return TRUE;
}

/* The loss and gradient as the T ranks compute them (tensor.h). */
double
kern_tensor_loss_grad (KernTensorPlan *p, const float *params, const float *x,
                       const int *y, int n, float *grad)
{
  g_return_val_if_fail (p != NULL && params != NULL && x != NULL && y != NULL, NAN);
  g_return_val_if_fail (n >= 1, NAN);
  g_return_val_if_fail (labels_valid (y, n, p->m->k), NAN);
  KernBackend *be = p->be;
  reserve_rows (p, n);
  load_shards (p, params);
  const float *X = x;
  const int *Y = y;
  if (!p->host)
    {
      be->ops->upload (be, p->x_dev, x, (gsize) n * p->m->d);
      be->ops->upload_int (be, p->y_dev, y, (gsize) n);
      X = p->x_dev;
      Y = p->y_dev;
    }

  for (int l = 0; l < p->n_dense; l++)
    forward_dense (p, l, layer_input (p, l, X), n);

  /* the loss on the logits (whole on every rank), dZ over them in place */
  TensorDense *last = &p->dense[p->n_dense - 1];
  float scale = grad != NULL ? 1.0f / (float) n : 0.0f;
  if (p->loss == KERN_LOSS_XENT)
    be->ops->softmax_xent (be, last->z, Y, n, p->m->k, scale, p->row_loss, NULL);
  else
    be->ops->mse (be, last->z, Y, n, p->m->k, scale, p->row_loss, NULL);
  const float *rl = p->row_loss;
  if (!p->host)
    {
      be->ops->download (be, p->h_loss, p->row_loss, (gsize) n);
      rl = p->h_loss;
    }
  double total = rl[0];
  for (int i = 1; i < n; i++)
    total += rl[i];
  if (grad == NULL)
    return total / n;

  for (int l = p->n_dense - 1; l >= 0; l--)
    backward_dense (p, l, layer_input (p, l, X), n);
  store_shards (p, grad);
  return total / n;
}
