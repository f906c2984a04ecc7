/*
 * cnn-tensor.c — the CNN's real math (cnn.c) split across T tensor-parallel
 * ranks, Megatron style: the CNN's tensor_plan_new (tensor.h gives the
 * contract; docs/kernels.md, "Tensor parallelism of the CNN", the
 * formulas).
 *
 * The layers with weights (the convolutions, then the dense layers) pair
 * up in order, as the dense models' do (tensor.c) and as the timing side
 * cuts them (policies/tensor.c): the first of a pair column-split, the
 * second row-split, a last one left without a partner replicated; with
 * T = 1 every layer is replicated.  A weight's rows are `taps` positions
 * times `cin` input channels, row tap cin + c: a convolution's q q kernel
 * taps, the first dense layer's pooled pixels of the last convolution, one
 * tap for a dense layer after a dense layer.  With c_t = t C / T:
 *
 *   column  rank t holds output channels [c_t, c_{t+1}) of W and b, reads
 *           the whole input, and computes its channels of Z, the ReLU and
 *           the max-pool (both act on each channel alone)
 *   row     rank t holds the rows of input channels [c_t, c_{t+1}) (every
 *           tap of them) and all of b; it reads its own channels of the
 *           column layer before and forms a partial product P_t over them;
 *           Z = b + (P_0 + ... + P_{T-1}) (the pair's one sum, forward)
 *
 * Backward, the row layer's weight gradient and input gradient are each
 * rank's own (the latter on its channels, through col2im for a
 * convolution); the column layer's input gradient is the sum over the
 * ranks of each one's (dZ_t W_t^T, through col2im), the pair's one sum
 * backward, none for the model's first layer.  A column shard is read and
 * written in place (rows `cout` floats apart); a row shard's rows are not
 * consecutive when taps > 1, so each rank gathers them into a matrix of
 * its own (taps part, cout) and scatters its gradient back.  An all-reduce
 * is emulated in place in rank 0's buffer, the other ranks' parts added in
 * rank order (tensor.c's rule); rank 0's buffer then stands for every
 * rank's copy.  A replicated layer is computed once, in cnn.c's order of
 * operations: with T = 1 the plan gives cnn.c's bits.
 *
 * Every group's rows go through each product at once, weight gradients one
 * group at a time (as cnn.c).  Scratch grows to the largest stack of
 * batches seen; a plan is used by one thread at a time.
 */
#include "kernels/cnn-private.h"
#include "kernels/tensor.h"

#include <math.h>
#include <string.h>

/* One layer with weights and every rank's scratch for it. */
typedef struct {
  int layer;               /* its KernLayer index */
  gboolean conv;
  KernTensorSplit split;   /* REPLICATED, COLUMN or ROW */
  int side, pooled;        /* conv: H of its input and output, H after the pool;
                            * dense: 1, 1 */
  int taps, cin, cout;     /* W is (taps cin, cout), row tap cin + c */
  int part;                /* column: cout / T; row: cin / T; replicated: cout */
  int nout;                /* output buffers: T (column) or 1 */
  gsize w, b;              /* offsets of W and b */
  const char *name;        /* the KernLayer's */
  /* row scratch for cap samples */
  float **cols;            /* conv: (T) (cap H H, taps part) for a row layer, else
                            * [0] only: (cap H H, taps cin) */
  float **z;               /* (nout) (cap H H, zc) Z, ReLU'd unless last; zc =
                            * part (column), cout (else) */
  float **pooled_out;      /* conv with a pool: (nout) (cap, O, O, zc) */
  int **arg;               /* its argmax */
  float **dz;              /* (nout) (cap H H, zc) the gradient at Z */
  float **dout;            /* (nout) the gradient at the output the next layer
                            * reads: own buffers after a pool, else dz's */
  float **partial;         /* row: (T) (cap H H, cout) P_t, the sum in [0];
                            * column past the first layer: (T) (cap, in floats)
                            * the ranks' input gradients, [0] unused */
  float **wg, **gg;        /* row: (T) (taps part, cout) W_t gathered; its gradient */
} CnnTpLayer;

typedef struct {
  KernTensorPlan base;
  KernBackend *be;         /* the model's (host memory) */
  KernCnnShape shape;
  int n;                   /* layers with weights */
  CnnTpLayer *ly;          /* (n) in forward order */
  int cap;                 /* samples the scratch holds */
  float *dcols;            /* (cap, the widest H H taps cin) dU */
  float *row_loss;         /* (cap) */
} CnnPlan;

static const KernTensorPlanOps cnn_plan_ops;

/* --- Shapes ------------------------------------------------------------------ */

/* Pixels per sample of layer l's rows: H H (conv) or 1. */
static gsize
pixels (const CnnTpLayer *l)
{
  return (gsize) l->side * l->side;
}

/* Floats per sample of its input and of its Z (the all-reduces' sizes). */
static int
in_floats (const CnnTpLayer *l)
{
  return l->conv ? l->side * l->side * l->cin : l->taps * l->cin;
}

static int
out_floats (const CnnTpLayer *l)
{
  return l->side * l->side * l->cout;
}

/* Columns of one rank's Z: its channels. */
static int
z_cols (const CnnTpLayer *l)
{
  return l->split == KERN_TENSOR_COLUMN ? l->part : l->cout;
}

/* Floats per sample of one rank's output as the next layer reads it. */
static gsize
out_len (const CnnPlan *p, const CnnTpLayer *l)
{
  int side = l->conv && p->shape.pool > 1 ? l->pooled : l->side;
  return (gsize) side * side * z_cols (l);
}

/* The output buffer r of layer l as the next layer reads it. */
static float *
output (const CnnPlan *p, const CnnTpLayer *l, int r)
{
  return l->conv && p->shape.pool > 1 ? l->pooled_out[r] : l->z[r];
}

/* --- Scratch ----------------------------------------------------------------- */

static float **
bufs_new (int count, gsize len)
{
  float **a = g_new0 (float *, count);
  for (int i = 0; i < count; i++)
    a[i] = g_new (float, MAX (len, 1));
  return a;
}

static void
bufs_free (float **a, int count)
{
  if (a == NULL)
    return;
  for (int i = 0; i < count; i++)
    g_free (a[i]);
  g_free (a);
}

static void
free_rows (CnnPlan *p)
{
  int T = p->base.T;
  for (int i = 0; i < p->n; i++)
    {
      CnnTpLayer *l = &p->ly[i];
      bufs_free (l->cols, T);
      bufs_free (l->z, l->nout);
      bufs_free (l->pooled_out, l->nout);
      for (int k = 0; l->arg != NULL && k < l->nout; k++)
        g_free (l->arg[k]);
      g_free (l->arg);
      if (l->dout != l->dz)
        bufs_free (l->dout, l->nout);
      bufs_free (l->dz, l->nout);
      bufs_free (l->partial, T);
      l->cols = l->z = l->pooled_out = l->dz = l->dout = l->partial = NULL;
      l->arg = NULL;
    }
  g_free (p->dcols);
  g_free (p->row_loss);
  p->dcols = p->row_loss = NULL;
  p->cap = 0;
}

/* Grows the row scratch to `rows` samples; contents are not kept. */
static void
reserve_rows (CnnPlan *p, int rows)
{
  if (rows <= p->cap)
    return;
  free_rows (p);
  int T = p->base.T;
  gsize r = (gsize) rows, widest = 1;
  for (int i = 0; i < p->n; i++)
    {
      CnnTpLayer *l = &p->ly[i];
      gsize px = r * pixels (l), zc = (gsize) z_cols (l);
      gboolean row = l->split == KERN_TENSOR_ROW;
      l->cols = g_new0 (float *, T);
      if (l->conv)
        for (int t = 0; t < (row ? T : 1); t++)
          l->cols[t] = g_new (float, px * l->taps * (row ? l->part : l->cin));
      l->z = bufs_new (l->nout, px * zc);
      l->dz = bufs_new (l->nout, px * zc);
      l->dout = l->dz;
      if (l->conv && p->shape.pool > 1)
        {
          l->pooled_out = bufs_new (l->nout, r * out_len (p, l));
          l->arg = g_new0 (int *, l->nout);
          for (int k = 0; k < l->nout; k++)
            l->arg[k] = g_new (int, r * out_len (p, l));
          l->dout = bufs_new (l->nout, r * out_len (p, l));
        }
      if (row)
        l->partial = bufs_new (T, px * l->cout);
      else if (l->split == KERN_TENSOR_COLUMN && i > 0)
        l->partial = bufs_new (T, r * in_floats (l));
      if (l->conv)
        widest = MAX (widest, px * l->taps * l->cin);
    }
  p->dcols = g_new (float, widest);
  p->row_loss = g_new (float, r);
  p->cap = rows;
}

/* --- The plan ---------------------------------------------------------------- */

/* Column, row or replicated for each layer (file header), and each one's
 * cut; FALSE with the error when T does not divide a column layer's
 * outputs. */
static gboolean
assign_splits (CnnPlan *p, GError **error)
{
  int T = p->base.T;
  for (int i = 0; i < p->n; i++)
    {
      CnnTpLayer *l = &p->ly[i];
      if (T == 1 || (i % 2 == 0 && i + 1 == p->n))
        l->split = KERN_TENSOR_REPLICATED;
      else
        l->split = i % 2 == 0 ? KERN_TENSOR_COLUMN : KERN_TENSOR_ROW;
      if (l->split == KERN_TENSOR_COLUMN && l->cout % T != 0)
        {
          const CnnTpLayer *next = &p->ly[i + 1];
          g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
                       "[policy] tensor: %d ranks do not divide the %d output %s of layer %s "
                       "(nor the input %s of %s) that they would share out; fix: use a "
                       "tensor size dividing %d, or change [model] %s", T, l->cout,
                       l->conv ? "channels" : "units", l->name,
                       l->conv ? "channels" : "units", next->name, l->cout,
                       l->conv ? "channels" : "hidden");
          return FALSE;
        }
      l->part = l->split == KERN_TENSOR_COLUMN ? l->cout / T
                : l->split == KERN_TENSOR_ROW ? l->cin / T : l->cout;
      l->nout = l->split == KERN_TENSOR_COLUMN ? T : 1;
      p->base.split[l->layer] = l->split;
    }
  return TRUE;
}

/* The all-reduces: forward after each row layer in layer order, then
 * backward before each column layer but the first, last layer first. */
static void
list_collectives (CnnPlan *p)
{
  KernTensorPlan *b = &p->base;
  for (int i = 0; i < p->n; i++)
    if (p->ly[i].split == KERN_TENSOR_ROW)
      b->ar[b->n_fwd++] = (KernTensorAllReduce) { KERN_TENSOR_FORWARD, p->ly[i].layer,
                                                  out_floats (&p->ly[i]) };
  for (int i = p->n - 1; i > 0; i--)
    if (p->ly[i].split == KERN_TENSOR_COLUMN)
      b->ar[b->n_fwd + b->n_bwd++] = (KernTensorAllReduce) { KERN_TENSOR_BACKWARD,
                                                             p->ly[i].layer,
                                                             in_floats (&p->ly[i]) };
}

/* The layers with weights of m in order, their shapes from `shape`; FALSE
 * when the layer table does not list them as cnn.c builds it. */
static gboolean
find_layers (CnnPlan *p)
{
  const KernModel *m = p->base.m;
  const KernCnnShape *s = &p->shape;
  int i = 0;
  for (int k = 0; k < m->n_layers; k++)
    {
      if (m->layers[k].n_weights == 0)
        continue;
      if (i >= p->n)
        return FALSE;
      CnnTpLayer *l = &p->ly[i];
      if (i < s->n_conv)
        {
          const KernCnnConv *cv = &s->conv[i];
          *l = (CnnTpLayer) { .layer = k, .conv = TRUE, .side = cv->side, .pooled = cv->pooled,
                              .taps = s->q * s->q, .cin = cv->cin, .cout = cv->cout,
                              .w = cv->w_off, .b = cv->w_off + (gsize) cv->kk * cv->cout,
                              .name = m->layers[k].name };
        }
      else
        {
          int d = i - s->n_conv, in = s->width[d], out = s->width[d + 1];
          int taps = 1;
          if (d == 0)                       /* the last convolution's pixels */
            {
              const KernCnnConv *last = &s->conv[s->n_conv - 1];
              taps = last->pooled * last->pooled;
            }
          *l = (CnnTpLayer) { .layer = k, .side = 1, .pooled = 1, .taps = taps,
                              .cin = in / taps, .cout = out, .w = s->d_off[d],
                              .b = s->d_off[d] + (gsize) in * out, .name = m->layers[k].name };
        }
      if (m->layers[k].weight[0].offset != l->w)
        return FALSE;
      i++;
    }
  return i == p->n;
}

/* How T >= 1 ranks split m (file header; tensor.h's contract). */
KernTensorPlan *
kern_cnn_tensor_plan_new (const KernModel *m, KernBackend *be, const KernCnnShape *shape,
                          int T, GError **error)
{
  g_return_val_if_fail (m != NULL && be != NULL && shape != NULL && T >= 1, NULL);
  CnnPlan *p = g_new0 (CnnPlan, 1);
  p->be = be;
  p->shape = *shape;
  p->n = shape->n_conv + shape->n_dense;
  p->ly = g_new0 (CnnTpLayer, p->n);
  kern_tensor_plan_init (&p->base, &cnn_plan_ops, m, T, 2 * p->n);
  g_assert (find_layers (p));
  if (!assign_splits (p, error))
    {
      kern_tensor_plan_free (&p->base);
      return NULL;
    }
  list_collectives (p);
  return &p->base;
}

static void
cnn_plan_free (KernTensorPlan *base)
{
  CnnPlan *p = (CnnPlan *) base;
  free_rows (p);
  for (int i = 0; i < p->n; i++)
    {
      bufs_free (p->ly[i].wg, base->T);
      bufs_free (p->ly[i].gg, base->T);
    }
  g_free (p->ly);
  kern_tensor_plan_clear (&p->base);
  g_free (p);
}

/* Output channels of a column or replicated layer, input channels of a
 * row layer (tensor.h's kern_tensor_cut). */
static void
cnn_plan_cut (const KernTensorPlan *base, int i, int t, int *lo, int *hi)
{
  const CnnPlan *p = (const CnnPlan *) base;
  *lo = *hi = 0;
  for (int k = 0; k < p->n; k++)
    if (p->ly[k].layer == i)
      {
        const CnnTpLayer *l = &p->ly[k];
        *lo = l->split == KERN_TENSOR_REPLICATED ? 0 : t * l->part;
        *hi = *lo + l->part;
      }
}

/* (taps cin + 1) part (column), taps part cout + cout (row), the whole
 * layer (replicated): the same on every rank. */
static gsize
cnn_plan_rank_params (const KernTensorPlan *base, int t G_GNUC_UNUSED)
{
  const CnnPlan *p = (const CnnPlan *) base;
  gsize total = 0;
  for (int i = 0; i < p->n; i++)
    {
      const CnnTpLayer *l = &p->ly[i];
      gsize K = (gsize) l->taps * l->cin;
      if (l->split == KERN_TENSOR_COLUMN)
        total += (K + 1) * l->part;
      else if (l->split == KERN_TENSOR_ROW)
        total += (gsize) l->taps * l->part * l->cout + l->cout;
      else
        total += (K + 1) * l->cout;
    }
  return total;
}

/* --- The math ------------------------------------------------------------------ */

/* Row r of rank t's gathered matrix (taps part, cout) is row
 * (tap cin + t part + c) of W, r = tap part + c. */
static gsize
row_of (const CnnTpLayer *l, int t, int r)
{
  int tap = r / l->part, c = r % l->part;
  return (gsize) tap * l->cin + (gsize) t * l->part + c;
}

/* Rank t's rows of W (at w in src) into dst, or (scatter) back. */
static void
gather_rows (const CnnTpLayer *l, int t, const float *src, float *dst)
{
  for (int r = 0; r < l->taps * l->part; r++)
    memcpy (dst + (gsize) r * l->cout, src + l->w + row_of (l, t, r) * l->cout,
            (gsize) l->cout * sizeof (float));
}

static void
scatter_rows (const CnnTpLayer *l, int t, const float *src, float *dst)
{
  for (int r = 0; r < l->taps * l->part; r++)
    memcpy (dst + l->w + row_of (l, t, r) * l->cout, src + (gsize) r * l->cout,
            (gsize) l->cout * sizeof (float));
}

/* dst += src[1] + ... + src[T-1] in rank order, n floats each, where dst
 * holds rank 0's part: the all-reduce, in place. */
static void
all_reduce (CnnPlan *p, float *dst, float *const *src, gsize n)
{
  for (int t = 1; t < p->base.T; t++)
    p->be->ops->sgd (p->be, dst, src[t], n, -1.0f);
}

/* ReLU (unless the last layer) and the pool (conv) on Z of rank r. */
static void
activate (CnnPlan *p, int i, int r, int rows)
{
  CnnTpLayer *l = &p->ly[i];
  gsize px = (gsize) rows * pixels (l);
  if (i + 1 < p->n)
    p->be->ops->relu (p->be, l->z[r], px * z_cols (l));
  if (l->conv && p->shape.pool > 1)
    kern_cnn_maxpool (p->shape.pool, l->side, z_cols (l), l->z[r], rows, l->pooled_out[r],
                      l->arg[r]);
}

/* Forward of layer i at parameters P on `rows` samples: X (rows, d) for
 * the first, the whole output of the layer before for a column or
 * replicated layer, its ranks' outputs for a row layer. */
static void
forward_layer (CnnPlan *p, int i, const float *P, const float *X, int rows)
{
  KernBackend *be = p->be;
  CnnTpLayer *l = &p->ly[i];
  const CnnTpLayer *prev = i > 0 ? &p->ly[i - 1] : NULL;
  const KernCnnShape *s = &p->shape;
  int px = rows * (int) pixels (l), K = l->taps * l->cin;
  if (l->split != KERN_TENSOR_ROW)
    {
      const float *A = prev ? output (p, prev, 0) : X;
      const float *U = A;                                  /* (px, K) */
      if (l->conv)
        {
          kern_cnn_im2col (s->q, s->pad, l->side, l->cin, A, rows, l->cols[0]);
          U = l->cols[0];
        }
      for (int r = 0; r < l->nout; r++)
        {
          gsize c = (gsize) r * l->part;
          be->ops->fill_rows (be, l->z[r], P + l->b + c, px, l->part);
          be->ops->gemm (be, FALSE, FALSE, px, l->part, K, 1.0f, U, K, P + l->w + c, l->cout,
                         1.0f, l->z[r], l->part);
          activate (p, i, r, rows);
        }
      return;
    }
  int Kt = l->taps * l->part;
  for (int t = 0; t < p->base.T; t++)
    {
      const float *U = output (p, prev, t);                /* (px, Kt) */
      if (l->conv)
        {
          kern_cnn_im2col (s->q, s->pad, l->side, l->part, U, rows, l->cols[t]);
          U = l->cols[t];
        }
      gather_rows (l, t, P, l->wg[t]);
      be->ops->gemm (be, FALSE, FALSE, px, l->cout, Kt, 1.0f, U, Kt, l->wg[t], l->cout, 0.0f,
                     l->partial[t], l->cout);
    }
  gsize len = (gsize) px * l->cout;
  all_reduce (p, l->partial[0], l->partial, len);
  be->ops->fill_rows (be, l->z[0], P + l->b, px, l->cout);
  be->ops->sgd (be, l->z[0], l->partial[0], len, -1.0f);  /* the bias, once */
  activate (p, i, 0, rows);
}

/* The gradient at Z of rank r of layer i, from the gradient at its
 * output: through the pool and the ReLU (the last layer's is where the
 * loss left it, in Z). */
static float *
grad_at_z (CnnPlan *p, int i, int r, int rows)
{
  CnnTpLayer *l = &p->ly[i];
  if (i + 1 == p->n)
    return l->z[0];
  if (l->conv && p->shape.pool > 1)
    kern_cnn_maxpool_backward (p->shape.pool, l->side, z_cols (l), l->dout[r], l->arg[r],
                               rows, l->dz[r]);
  p->be->ops->relu_backward (p->be, l->dz[r], l->z[r],
                             (gsize) rows * pixels (l) * z_cols (l));
  return l->dz[r];
}

/* Backward of layer i at parameters P, n samples a group: each group's
 * weight and bias gradients into G[k] and, unless i = 0, the gradient at
 * its input into the layer before's dout (whole, or each rank's own
 * before a row layer).  X as forward_layer took it. */
static void
backward_layer (CnnPlan *p, int i, const float *P, const float *X, int n, int groups,
                float *const *G)
{
  KernBackend *be = p->be;
  CnnTpLayer *l = &p->ly[i];
  CnnTpLayer *prev = i > 0 ? &p->ly[i - 1] : NULL;
  const KernCnnShape *s = &p->shape;
  int rows = n * groups, px = rows * (int) pixels (l), gpx = n * (int) pixels (l);
  int K = l->taps * l->cin;
  if (l->split != KERN_TENSOR_ROW)
    {
      const float *U = l->conv ? l->cols[0] : prev ? output (p, prev, 0) : X;
      for (int r = 0; r < l->nout; r++)
        {
          gsize c = (gsize) r * l->part;
          const float *g = grad_at_z (p, i, r, rows);      /* (px, part) */
          for (int k = 0; k < groups; k++)
            {
              gsize r0 = (gsize) k * gpx;
              be->ops->gemm (be, TRUE, FALSE, K, l->part, gpx, 1.0f, U + r0 * K, K,
                             g + r0 * l->part, l->part, 0.0f, G[k] + l->w + c, l->cout);
              be->ops->col_sum (be, g + r0 * l->part, gpx, l->part, G[k] + l->b + c);
            }
          if (prev == NULL)
            continue;
          /* rank 0's part straight into the sum's buffer */
          float *dA = r == 0 ? prev->dout[0] : l->partial[r];
          if (l->conv)
            {
              be->ops->gemm (be, FALSE, TRUE, px, K, l->part, 1.0f, g, l->part, P + l->w + c,
                             l->cout, 0.0f, p->dcols, K);
              kern_cnn_col2im (s->q, s->pad, l->side, l->cin, p->dcols, rows, dA);
            }
          else
            be->ops->gemm (be, FALSE, TRUE, rows, K, l->part, 1.0f, g, l->part, P + l->w + c,
                           l->cout, 0.0f, dA, K);
        }
      if (prev != NULL && l->split == KERN_TENSOR_COLUMN)
        all_reduce (p, prev->dout[0], l->partial, (gsize) rows * in_floats (l));
      return;
    }
  const float *g = grad_at_z (p, i, 0, rows);              /* (px, cout) */
  int Kt = l->taps * l->part;
  for (int t = 0; t < p->base.T; t++)
    {
      const float *U = l->conv ? l->cols[t] : output (p, prev, t);  /* (px, Kt) */
      for (int k = 0; k < groups; k++)
        {
          gsize r0 = (gsize) k * gpx;
          be->ops->gemm (be, TRUE, FALSE, Kt, l->cout, gpx, 1.0f, U + r0 * Kt, Kt,
                         g + r0 * l->cout, l->cout, 0.0f, l->gg[t], l->cout);
          scatter_rows (l, t, l->gg[t], G[k]);
          if (t == 0)                                       /* the bias, once */
            be->ops->col_sum (be, g + r0 * l->cout, gpx, l->cout, G[k] + l->b);
        }
      if (l->conv)
        {
          be->ops->gemm (be, FALSE, TRUE, px, Kt, l->cout, 1.0f, g, l->cout, l->wg[t], l->cout,
                         0.0f, p->dcols, Kt);
          kern_cnn_col2im (s->q, s->pad, l->side, l->part, p->dcols, rows, prev->dout[t]);
        }
      else
        be->ops->gemm (be, FALSE, TRUE, rows, Kt, l->cout, 1.0f, g, l->cout, l->wg[t],
                       l->cout, 0.0f, prev->dout[t], Kt);
    }
}

/* Sum of r >= 1 row losses in double: r - 1 adds (as cnn.c). */
static double
row_sum (const float *loss, int r)
{
  double total = loss[0];
  for (int i = 1; i < r; i++)
    total += loss[i];
  return total;
}

/* The groups' losses and gradients as the T ranks compute them
 * (tensor.h), all groups' rows in one stack. */
static void
cnn_plan_loss_grad_groups (KernTensorPlan *base, const float *params, const float *x,
                           const int *y, int n, int groups, float *const *grads,
                           double *losses)
{
  CnnPlan *p = (CnnPlan *) base;
  const KernModel *m = base->m;
  g_return_if_fail ((gint64) n * groups * m->d <= G_MAXINT);
  int rows = n * groups;
  reserve_rows (p, rows);
  for (int i = 0; i < p->n; i++)
    if (p->ly[i].split == KERN_TENSOR_ROW && p->ly[i].wg == NULL)
      {
        gsize len = (gsize) p->ly[i].taps * p->ly[i].part * p->ly[i].cout;
        p->ly[i].wg = bufs_new (base->T, len);
        p->ly[i].gg = bufs_new (base->T, len);
      }

  for (int i = 0; i < p->n; i++)
    forward_layer (p, i, params, x, rows);

  /* the loss on the logits (whole on every rank), dZ over them in place */
  CnnTpLayer *last = &p->ly[p->n - 1];
  float scale = grads != NULL ? 1.0f / (float) n : 0.0f;
  p->be->ops->softmax_xent (p->be, last->z[0], y, rows, m->k, scale, p->row_loss, NULL);
  for (int k = 0; k < groups; k++)
    losses[k] = row_sum (p->row_loss + (gsize) k * n, n) / n;
  if (grads == NULL)
    return;
  for (int i = p->n - 1; i >= 0; i--)
    backward_layer (p, i, params, x, n, groups, grads);
}

static const KernTensorPlanOps cnn_plan_ops = {
  .loss_grad_groups = cnn_plan_loss_grad_groups,
  .cut = cnn_plan_cut,
  .rank_params = cnn_plan_rank_params,
  .free = cnn_plan_free,
};
