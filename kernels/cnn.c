/*
 * cnn.c — a convolutional network with real math: [model] kind = cnn.
 *
 * A sample is a square one-channel image of s x s pixels (d = s^2, as
 * Fashion-MNIST's 28 x 28).  Activations are stored NHWC: (n, H, W, C)
 * row-major, so that a convolution is a dense layer over the rows of its
 * im2col matrix.  With C conv layers of c_1, ..., c_C output channels, a
 * square kernel of q x q (q odd, stride 1, "same" zero padding r = (q-1)/2)
 * and a max-pool of p x p (stride p) after each, then dense ReLU layers of
 * the `hidden` widths and a k-way softmax head, for a batch x (n, s^2):
 *
 *   A_0 = x                                   (n, s, s, 1)
 *   U_l = im2col(A_{l-1})                     (n H H, q q c_{l-1})
 *   Z_l = U_l W_l + b_l,  Z_l = max(Z_l, 0)   (n H H, c_l)   W_l (q q c_{l-1}, c_l)
 *   A_l = maxpool_p(Z_l)                      (n, H/p, H/p, c_l), argmax kept
 *   then A_C flattened to (n, F) and the dense layers of mlp.c, ending in
 *   loss = (1/n) sum_i xent(logits_i, y_i).
 *
 * Backward runs the same steps in reverse: the dense layers as mlp.c's;
 * the pool sends each output's gradient to its argmax (zero elsewhere); the
 * ReLU masks it; dW_l = U_l^T dZ_l, db_l = column sums of dZ_l; for l > 1
 * dU = dZ_l W_l^T and col2im adds dU back onto the input pixels.  Every
 * matrix product goes through the backend's gemm, which by default is the
 * fixed-order product (kern_gemm_fixed): the same bits on every CPU.  The
 * im2col, col2im and pooling loops run on the host in one fixed order, so
 * the model runs on the CPU backend only (the kind says so: cpu_only).
 *
 * Parameters are one flat float vector, layer by layer: W_l then b_l for
 * each conv layer, then W then b for each dense layer.  Initialisation
 * (one generator from the seed and the "cnn" stream): conv and hidden
 * weights from N(0, 2 / fan_in) (He), the head's from N(0, 2 / (in + out))
 * (Glorot), every bias 0.
 *
 * Costs: the layer table (conv, relu, pool per conv layer; fc and relu per
 * dense layer; the loss) counts the FLOPs and bytes of exactly these
 * operations under docs/kernels.md's rules ("Convolutional network").
 * Scratch grows to the largest batch seen; one thread at a time per model
 * (clone gives another thread its own).  Tensor parallelism (cnn-tensor.c)
 * cuts the convolutions by channels and the dense layers as mlp.c's.
 */
#include "kernels/cnn-private.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

#include <math.h>
#include <string.h>

#define CNN_MAX_CONV KERN_CNN_MAX_CONV
#define CNN_MAX_DENSE KERN_CNN_MAX_DENSE
/* Floats of scratch per evaluate chunk: the chunk holds as many samples
 * as fit in this (at least 1, at most CNN_EVAL_ROWS). */
#define CNN_EVAL_FLOATS (16 * 1024 * 1024)
#define CNN_EVAL_ROWS 1024

#define KERN_RNG_STREAM_CNN G_GUINT64_CONSTANT (0x636e6e) /* ASCII of cnn */

typedef KernCnnConv CnnConv;

typedef struct {
  KernBackend *be;      /* borrowed, or owned when own_be */
  gboolean own_be;
  int q, pad, pool;     /* kernel side, padding, pool side */
  int n_conv;
  CnnConv conv[CNN_MAX_CONV];
  int n_dense;          /* hidden layers + 1 */
  int width[CNN_MAX_DENSE + 1]; /* F, hidden..., k */
  gsize d_off[CNN_MAX_DENSE];   /* W (in, out) then b (out) */
  gsize n_params;
  int widest;           /* floats per sample of the widest activation */
  int widest_k;         /* the widest im2col row among conv layers 2.. */

  /* Scratch for `cap` samples (host memory: the CPU backend's). */
  int cap;
  float *cols[CNN_MAX_CONV];   /* (cap H H, K) U_l */
  float *z[CNN_MAX_CONV];      /* (cap H H, cout) Z_l, ReLU in place */
  float *pooled[CNN_MAX_CONV]; /* (cap, H/p, H/p, cout); NULL when p = 1 */
  int *arg[CNN_MAX_CONV];      /* (cap, H/p, H/p, cout) argmax within its sample */
  float *act[CNN_MAX_DENSE];   /* (cap, width[l + 1]) dense outputs */
  float *g[2];                 /* (cap, widest) input gradients */
  float *dcols;                /* (cap, widest_k rows' worth) dU */
  float *row_loss;             /* (cap) */
  int *row_pred;               /* (cap) */
} CnnPriv;

/* The layer order of the table: per conv layer conv, relu, pool (pool
 * left out when p = 1), per dense layer fc, relu (none after the head),
 * then the loss. */

/* Output of conv layer l as the next layer reads it. */
static const float *
conv_out (const CnnPriv *p, int l)
{
  return p->pool > 1 ? p->pooled[l] : p->z[l];
}

static gsize
conv_rows (const CnnConv *cv, int n)
{
  return (gsize) n * (gsize) cv->side * (gsize) cv->side;
}

/* Grows the scratch to `rows` samples; contents are not kept. */
static void
cnn_reserve (CnnPriv *p, int rows)
{
  if (rows <= p->cap)
    return;
  gsize r = (gsize) rows;
  for (int l = 0; l < p->n_conv; l++)
    {
      const CnnConv *cv = &p->conv[l];
      gsize px = conv_rows (cv, rows), po = r * cv->pooled * cv->pooled * cv->cout;
      p->cols[l] = g_renew (float, p->cols[l], px * cv->kk);
      p->z[l] = g_renew (float, p->z[l], px * cv->cout);
      if (p->pool > 1)
        {
          p->pooled[l] = g_renew (float, p->pooled[l], po);
          p->arg[l] = g_renew (int, p->arg[l], po);
        }
    }
  for (int l = 0; l < p->n_dense; l++)
    p->act[l] = g_renew (float, p->act[l], r * p->width[l + 1]);
  for (int i = 0; i < 2; i++)
    p->g[i] = g_renew (float, p->g[i], r * p->widest);
  p->dcols = g_renew (float, p->dcols, MAX (r * p->widest_k, 1));
  p->row_loss = g_renew (float, p->row_loss, r);
  p->row_pred = g_renew (int, p->row_pred, r);
  p->cap = rows;
}

/* Forward over X (rows, s^2) at parameters P: leaves every conv layer's
 * U, Z and pooled output and every dense layer's output (the logits last). */
static void
cnn_forward (CnnPriv *p, const float *P, const float *X, int rows)
{
  KernBackend *be = p->be;
  const float *A = X;
  for (int l = 0; l < p->n_conv; l++)
    {
      const CnnConv *cv = &p->conv[l];
      int px = (int) conv_rows (cv, rows);
      const float *W = P + cv->w_off;                     /* (K, cout) */
      kern_cnn_im2col (p->q, p->pad, cv->side, cv->cin, A, rows, p->cols[l]);
      be->ops->fill_rows (be, p->z[l], W + (gsize) cv->kk * cv->cout, px, cv->cout);
      be->ops->gemm (be, FALSE, FALSE, px, cv->cout, cv->kk, 1.0f, p->cols[l], cv->kk, W,
                     cv->cout, 1.0f, p->z[l], cv->cout);  /* 2 px K cout */
      be->ops->relu (be, p->z[l], (gsize) px * cv->cout);
      if (p->pool > 1)
        kern_cnn_maxpool (p->pool, cv->side, cv->cout, p->z[l], rows, p->pooled[l], p->arg[l]);
      A = conv_out (p, l);
    }
  for (int l = 0; l < p->n_dense; l++)
    {
      int in = p->width[l], out = p->width[l + 1];
      const float *W = P + p->d_off[l];
      float *Z = p->act[l];
      be->ops->fill_rows (be, Z, W + (gsize) in * out, rows, out);
      be->ops->gemm (be, FALSE, FALSE, rows, out, in, 1.0f, A, in, W, out, 1.0f, Z, out);
      if (l < p->n_dense - 1)
        be->ops->relu (be, Z, (gsize) rows * out);
      A = Z;
    }
}

/* Backward of the dense layers for `groups` groups of n rows, from dZ of
 * the logits (in place in the last act): each group's dW and db into
 * G[g]; returns the gradient at the flattened conv output (rows, F), in
 * one of p->g. */
static float *
dense_backward (CnnPriv *p, const float *P, int n, int groups, float *const *G)
{
  KernBackend *be = p->be;
  int rows = n * groups;
  float *dZ = p->act[p->n_dense - 1];
  for (int l = p->n_dense - 1; l >= 0; l--)
    {
      int in = p->width[l], out = p->width[l + 1];
      const float *A = l > 0 ? p->act[l - 1] : conv_out (p, p->n_conv - 1);
      for (int g = 0; g < groups; g++)
        {
          gsize r0 = (gsize) g * n;
          float *dW = G[g] + p->d_off[l];
          be->ops->gemm (be, TRUE, FALSE, in, out, n, 1.0f, A + r0 * in, in, dZ + r0 * out,
                         out, 0.0f, dW, out);               /* 2 n in out */
          be->ops->col_sum (be, dZ + r0 * out, n, out, dW + (gsize) in * out);
        }
      float *dA = dZ == p->g[0] ? p->g[1] : p->g[0];        /* (rows, in) */
      be->ops->gemm (be, FALSE, TRUE, rows, in, out, 1.0f, dZ, out, P + p->d_off[l], out,
                     0.0f, dA, in);                         /* 2 rows in out */
      if (l > 0)
        be->ops->relu_backward (be, dA, p->act[l - 1], (gsize) rows * in);
      dZ = dA;
    }
  return dZ;
}

/* Backward of the conv layers from dA, the gradient at the last conv
 * layer's output (in one of p->g): each group's dW and db into G[g]. */
static void
conv_backward (CnnPriv *p, const float *P, int n, int groups, float *dA, float *const *G)
{
  KernBackend *be = p->be;
  int rows = n * groups;
  for (int l = p->n_conv - 1; l >= 0; l--)
    {
      const CnnConv *cv = &p->conv[l];
      int px = (int) conv_rows (cv, rows), gpx = (int) conv_rows (cv, n);
      float *dZ = dA;                                      /* (px, cout) */
      if (p->pool > 1)
        {
          dZ = dA == p->g[0] ? p->g[1] : p->g[0];
          kern_cnn_maxpool_backward (p->pool, cv->side, cv->cout, dA, p->arg[l], rows, dZ);
        }
      be->ops->relu_backward (be, dZ, p->z[l], (gsize) px * cv->cout);
      for (int g = 0; g < groups; g++)
        {
          gsize r0 = (gsize) g * gpx;
          float *dW = G[g] + cv->w_off;                    /* (K, cout) */
          be->ops->gemm (be, TRUE, FALSE, cv->kk, cv->cout, gpx, 1.0f,
                         p->cols[l] + r0 * cv->kk, cv->kk, dZ + r0 * cv->cout, cv->cout,
                         0.0f, dW, cv->cout);              /* 2 gpx K cout */
          be->ops->col_sum (be, dZ + r0 * cv->cout, gpx, cv->cout,
                            dW + (gsize) cv->kk * cv->cout);
        }
      if (l == 0)
        break;
      be->ops->gemm (be, FALSE, TRUE, px, cv->kk, cv->cout, 1.0f, dZ, cv->cout,
                     P + cv->w_off, cv->cout, 0.0f, p->dcols, cv->kk); /* 2 px K cout */
      dA = dZ == p->g[0] ? p->g[1] : p->g[0];
      kern_cnn_col2im (p->q, p->pad, cv->side, cv->cin, p->dcols, rows, dA);
    }
}

/* Sum of r >= 1 row losses in double: r - 1 adds. */
static double
cnn_sum (const float *loss, int r)
{
  double total = loss[0];
  for (int i = 1; i < r; i++)
    total += loss[i];
  return total;
}

/* losses[g] = mean loss of group g of n rows; with grads, grads[g] = its
 * gradient. */
static void
cnn_compute (KernModel *m, const float *params, const float *x, const int *y, int n,
             int groups, float *const *grads, double *losses)
{
  CnnPriv *p = m->priv;
  int rows = n * groups;
  cnn_reserve (p, rows);
  cnn_forward (p, params, x, rows);
  float scale = grads != NULL ? 1.0f / (float) n : 0.0f;   /* 1 */
  p->be->ops->softmax_xent (p->be, p->act[p->n_dense - 1], y, rows, m->k, scale,
                            p->row_loss, NULL);
  for (int g = 0; g < groups; g++)
    losses[g] = cnn_sum (p->row_loss + (gsize) g * n, n) / n;  /* n - 1, 1 */
  if (grads == NULL)
    return;
  float *dA = dense_backward (p, params, n, groups, grads);
  conv_backward (p, params, n, groups, dA, grads);
}

/* The largest batch one call takes: every conv layer's rows fit an int. */
static gboolean
cnn_rows_ok (const KernModel *m, gint64 rows)
{
  return rows >= 1 && rows * m->d <= G_MAXINT;
}

static double
cnn_loss_grad (KernModel *m, const float *params, const float *x, const int *y, int n,
               float *grad)
{
  g_return_val_if_fail (m != NULL && params != NULL && x != NULL && y != NULL, NAN);
  g_return_val_if_fail (cnn_rows_ok (m, n), NAN);
  g_return_val_if_fail (kern_labels_valid (y, (gsize) n, m->k), NAN);
  double loss;
  cnn_compute (m, params, x, y, n, 1, grad != NULL ? &grad : NULL, &loss);
  return loss;
}

/* loss_grad_groups (kernels.h); grads may be NULL (losses only). */
static void
cnn_loss_grad_groups (KernModel *m, const float *params, const float *x, const int *y,
                      int n, int groups, float *const *grads, double *losses)
{
  g_return_if_fail (m != NULL && params != NULL && x != NULL && y != NULL);
  g_return_if_fail (n >= 1 && groups >= 1 && losses != NULL);
  g_return_if_fail (cnn_rows_ok (m, (gint64) n * groups));
  g_return_if_fail (kern_labels_valid (y, (gsize) n * (gsize) groups, m->k));
  if (grads != NULL)
    for (int g = 0; g < groups; g++)
      g_return_if_fail (grads[g] != NULL);
  cnn_compute (m, params, x, y, n, groups, grads, losses);
}

/* Samples per evaluate chunk: the scratch of a chunk stays near
 * CNN_EVAL_FLOATS. */
static int
eval_rows (const KernModel *m)
{
  double per = 0;
  for (int i = 0; i < m->n_layers; i++)
    per += m->layers[i].activations;
  return (int) CLAMP (CNN_EVAL_FLOATS / MAX (per, 1.0), 1.0, (double) CNN_EVAL_ROWS);
}

static void
cnn_evaluate (KernModel *m, const float *params, const KernDataset *ds, double *loss,
              double *accuracy)
{
  g_return_if_fail (m != NULL && params != NULL && ds != NULL);
  g_return_if_fail (ds->d == m->d && ds->k == m->k);
  g_return_if_fail (kern_labels_valid (ds->y, (gsize) ds->n, m->k));
  CnnPriv *p = m->priv;
  int chunk = eval_rows (m);
  double total = 0.0;
  gint64 correct = 0;
  for (int start = 0; start < ds->n; start += chunk)
    {
      int rows = MIN (chunk, ds->n - start);
      const int *y = ds->y + start;
      cnn_reserve (p, rows);
      cnn_forward (p, params, ds->x + (gsize) start * m->d, rows);
      p->be->ops->softmax_xent (p->be, p->act[p->n_dense - 1], y, rows, m->k, 0.0f,
                                p->row_loss, p->row_pred);
      total += cnn_sum (p->row_loss, rows);
      for (int i = 0; i < rows; i++)
        correct += (p->row_pred[i] == y[i]);
    }
  /* an empty data set has no mean */
  if (loss != NULL)
    *loss = ds->n > 0 ? total / ds->n : NAN;
  if (accuracy != NULL)
    *accuracy = ds->n > 0 ? (double) correct / ds->n : NAN;
}

static gsize
cnn_n_params (const KernModel *m)
{
  const CnnPriv *p = m->priv;
  return p->n_params;
}

/* W from N(0, std^2) element-wise for `nw` weights, then `nb` zeros. */
static void
draw_layer (KernRng *rng, float *W, gsize nw, gsize nb, double std)
{
  for (gsize i = 0; i < nw; i++)
    W[i] = (float) (std * kern_rng_normal (rng));
  memset (W + nw, 0, nb * sizeof (float));
}

/* Layer by layer from one (seed, "cnn") generator (file header). */
static void
cnn_init (const KernModel *m, float *params, guint64 seed)
{
  g_return_if_fail (m != NULL && params != NULL);
  const CnnPriv *p = m->priv;
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_CNN);
  for (int l = 0; l < p->n_conv; l++)
    {
      const CnnConv *cv = &p->conv[l];
      draw_layer (&rng, params + cv->w_off, (gsize) cv->kk * cv->cout, cv->cout,
                  sqrt (2.0 / cv->kk));
    }
  for (int l = 0; l < p->n_dense; l++)
    {
      int in = p->width[l], out = p->width[l + 1];
      double std = l < p->n_dense - 1 ? sqrt (2.0 / in) : sqrt (2.0 / (in + out));
      draw_layer (&rng, params + p->d_off[l], (gsize) in * out, out, std);
    }
}

static double
cnn_flops (const KernModel *m, int n, gboolean forward)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    {
      const KernLayer *ly = &m->layers[i];
      total += forward ? ly->fwd_flops_fixed + ly->fwd_flops * n
                       : ly->bwd_flops_fixed + ly->bwd_flops * n;
    }
  return total;
}

static double
cnn_flops_forward (const KernModel *m, int n)
{
  return cnn_flops (m, n, TRUE);
}

static double
cnn_flops_backward (const KernModel *m, int n)
{
  return cnn_flops (m, n, FALSE);
}

/* --- Pipeline stages (kernels.h, KernStage) ---------------------------------
 *
 * A stage holds rows [first, last] of the layer table (fill_layers below:
 * conv, relu, pool per conv layer; fc, relu per dense layer; xent), and
 * since each row reads the previous row's output alone, any cut is a
 * stage boundary: the boundary carries that output ((n, width) NHWC for
 * the convolutional rows, (n, width) for the dense ones).  A slot keeps
 * one buffer per position j = 0 .. last - first + 1 (j = 0 the stage's
 * input, copied in; j > 0 the output of row first + j - 1), a conv row's
 * U and a pool row's argmax.  A ReLU works in place on the buffer before
 * it and the loss turns the logits into dZ in place, as cnn_forward and
 * cnn_compute do.  Backward walks the rows from last to first with the
 * current gradient g:
 *
 *   xent:   g = the dZ kept in the slot (scale grad_scale)
 *   relu:   g masked by the kept ReLU output
 *   pool:   g routed to the kept argmax (kern_cnn_maxpool_backward)
 *   conv:   dW = U^T g, db = column sums of g, into a micro-batch scratch
 *           added onto the accumulator; unless the row is the table's
 *           first, g = col2im(g W^T)
 *   fc:     dW = A^T g, db likewise; g = g W^T
 *
 * Each operation is the one cnn_forward, dense_backward and conv_backward
 * issue on the same rows, so a stage's micro-batch gradient is, bit for
 * bit, the whole model's on that micro-batch at the same loss scale. */

typedef enum { CNN_ROW_CONV, CNN_ROW_RELU, CNN_ROW_POOL, CNN_ROW_FC, CNN_ROW_LOSS } CnnRowKind;

typedef struct {
  CnnRowKind kind;
  int l;                 /* its conv or dense layer */
  int width;             /* floats per sample of its output */
} CnnRow;

typedef struct {
  KernStage pub;         /* first member: a KernStage* is a CnnStage* */
  CnnPriv *p;            /* the model's shape and backend */
  CnnRow *rows;          /* (last - first + 1) */
  int nbuf;              /* last - first + 2 */
  float **buf;           /* (slots x nbuf) positions; a ReLU's is its input's */
  float **cols;          /* (slots x nbuf) a conv row's U, else NULL */
  int **arg;             /* (slots x nbuf) a pool row's argmax, else NULL */
  const float *P;        /* the parameters (the model's whole layout) */
  float *gacc, *gmb;     /* (hi - lo) accumulated, one micro-batch's */
  float *g[2];           /* (n, widest) gradients between rows */
  float *dcols;          /* (n, widest im2col block) dU */
  float *row_loss;       /* (n) */
} CnnStage;

/* The table's row i: what it is, on which layer, its output width. */
static CnnRow
cnn_row (const CnnPriv *p, int n_layers, int i)
{
  int per = p->pool > 1 ? 3 : 2, conv_rows_n = p->n_conv * per;
  if (i == n_layers - 1)
    return (CnnRow) { CNN_ROW_LOSS, p->n_dense - 1, p->width[p->n_dense] };
  if (i < conv_rows_n)
    {
      int l = i / per, r = i % per;
      const CnnConv *cv = &p->conv[l];
      int full = cv->side * cv->side * cv->cout;
      if (r == 0)
        return (CnnRow) { CNN_ROW_CONV, l, full };
      if (r == 1)
        return (CnnRow) { CNN_ROW_RELU, l, full };
      return (CnnRow) { CNN_ROW_POOL, l, cv->pooled * cv->pooled * cv->cout };
    }
  int l = (i - conv_rows_n) / 2;
  return (CnnRow) { (i - conv_rows_n) % 2 == 0 ? CNN_ROW_FC : CNN_ROW_RELU, l,
                    p->width[l + 1] };
}

/* Whether a row works on the buffer before it (ReLU, the loss). */
static gboolean
cnn_row_in_place (CnnRowKind kind)
{
  return kind == CNN_ROW_RELU || kind == CNN_ROW_LOSS;
}

static void
cnn_stage_set_params (KernStage *st, const float *params)
{
  ((CnnStage *) st)->P = params;
}

static double
cnn_stage_forward (KernStage *st, int slot, const float *in, const float *x G_GNUC_UNUSED,
                   const int *y, float *out)
{
  CnnStage *s = (CnnStage *) st;
  CnnPriv *p = s->p;
  KernBackend *be = p->be;
  int n = st->n;
  float **buf = s->buf + (gsize) slot * s->nbuf;
  g_return_val_if_fail (s->P != NULL, NAN);
  memcpy (buf[0], in, (gsize) n * st->in_width * sizeof (float));
  double loss = NAN;
  for (int i = st->first; i <= st->last; i++)
    {
      int j = i - st->first + 1;
      const CnnRow *rw = &s->rows[j - 1];
      const float *A = buf[j - 1];
      switch (rw->kind)
        {
        case CNN_ROW_CONV:
          {
            const CnnConv *cv = &p->conv[rw->l];
            int px = (int) conv_rows (cv, n);
            const float *W = s->P + cv->w_off;            /* (K, cout) */
            float *U = s->cols[(gsize) slot * s->nbuf + j];
            kern_cnn_im2col (p->q, p->pad, cv->side, cv->cin, A, n, U);
            be->ops->fill_rows (be, buf[j], W + (gsize) cv->kk * cv->cout, px, cv->cout);
            be->ops->gemm (be, FALSE, FALSE, px, cv->cout, cv->kk, 1.0f, U, cv->kk, W,
                           cv->cout, 1.0f, buf[j], cv->cout);
            break;
          }
        case CNN_ROW_RELU:
          be->ops->relu (be, buf[j], (gsize) n * rw->width);
          break;
        case CNN_ROW_POOL:
          {
            const CnnConv *cv = &p->conv[rw->l];
            kern_cnn_maxpool (p->pool, cv->side, cv->cout, A, n, buf[j],
                              s->arg[(gsize) slot * s->nbuf + j]);
            break;
          }
        case CNN_ROW_FC:
          {
            int w_in = p->width[rw->l], w_out = p->width[rw->l + 1];
            const float *W = s->P + p->d_off[rw->l];      /* (w_in, w_out) */
            be->ops->fill_rows (be, buf[j], W + (gsize) w_in * w_out, n, w_out);
            be->ops->gemm (be, FALSE, FALSE, n, w_out, w_in, 1.0f, A, w_in, W, w_out, 1.0f,
                           buf[j], w_out);
            break;
          }
        case CNN_ROW_LOSS:
          g_return_val_if_fail (kern_labels_valid (y, (gsize) n, rw->width), NAN);
          be->ops->softmax_xent (be, buf[j], y, n, rw->width, st->grad_scale_f, s->row_loss,
                                 NULL);
          loss = cnn_sum (s->row_loss, n) / n;
          break;
        }
    }
  if (!st->has_loss)
    memcpy (out, buf[s->nbuf - 1], (gsize) n * st->out_width * sizeof (float));
  return loss;
}

/* acc += dW and db of one micro-batch (len floats). */
static void
cnn_stage_add (float *acc, const float *mb, gsize len)
{
  for (gsize i = 0; i < len; i++)
    acc[i] += mb[i];
}

static void
cnn_stage_backward (KernStage *st, int slot, const float *dout, float *din)
{
  CnnStage *s = (CnnStage *) st;
  CnnPriv *p = s->p;
  KernBackend *be = p->be;
  int n = st->n;
  float **buf = s->buf + (gsize) slot * s->nbuf;
  float *g;                                            /* (n, width) */
  if (st->has_loss)
    g = buf[s->nbuf - 1];
  else
    {
      memcpy (s->g[0], dout, (gsize) n * st->out_width * sizeof (float));
      g = s->g[0];
    }
  for (int i = st->last; i >= st->first; i--)
    {
      int j = i - st->first + 1;
      const CnnRow *rw = &s->rows[j - 1];
      float *next = g == s->g[0] ? s->g[1] : s->g[0];
      switch (rw->kind)
        {
        case CNN_ROW_LOSS:
          break;                                       /* dZ is in place */
        case CNN_ROW_RELU:
          be->ops->relu_backward (be, g, buf[j], (gsize) n * rw->width);
          break;
        case CNN_ROW_POOL:
          {
            const CnnConv *cv = &p->conv[rw->l];
            kern_cnn_maxpool_backward (p->pool, cv->side, cv->cout, g,
                                       s->arg[(gsize) slot * s->nbuf + j], n, next);
            g = next;
            break;
          }
        case CNN_ROW_CONV:
          {
            const CnnConv *cv = &p->conv[rw->l];
            int px = (int) conv_rows (cv, n);
            gsize off = cv->w_off - st->lo, nw = (gsize) cv->kk * cv->cout;
            const float *U = s->cols[(gsize) slot * s->nbuf + j];
            be->ops->gemm (be, TRUE, FALSE, cv->kk, cv->cout, px, 1.0f, U, cv->kk, g,
                           cv->cout, 0.0f, s->gmb + off, cv->cout);
            be->ops->col_sum (be, g, px, cv->cout, s->gmb + off + nw);
            cnn_stage_add (s->gacc + off, s->gmb + off, nw + cv->cout);
            if (i == 0)
              break;
            be->ops->gemm (be, FALSE, TRUE, px, cv->kk, cv->cout, 1.0f, g, cv->cout,
                           s->P + cv->w_off, cv->cout, 0.0f, s->dcols, cv->kk);
            kern_cnn_col2im (p->q, p->pad, cv->side, cv->cin, s->dcols, n, next);
            g = next;
            break;
          }
        case CNN_ROW_FC:
          {
            int w_in = p->width[rw->l], w_out = p->width[rw->l + 1];
            gsize off = p->d_off[rw->l] - st->lo, nw = (gsize) w_in * w_out;
            const float *A = buf[j - 1];               /* (n, w_in) */
            be->ops->gemm (be, TRUE, FALSE, w_in, w_out, n, 1.0f, A, w_in, g, w_out, 0.0f,
                           s->gmb + off, w_out);
            be->ops->col_sum (be, g, n, w_out, s->gmb + off + nw);
            cnn_stage_add (s->gacc + off, s->gmb + off, nw + w_out);
            be->ops->gemm (be, FALSE, TRUE, n, w_in, w_out, 1.0f, g, w_out,
                           s->P + p->d_off[rw->l], w_out, 0.0f, next, w_in);
            g = next;
            break;
          }
        }
    }
  if (st->first > 0)
    memcpy (din, g, (gsize) n * st->in_width * sizeof (float));
}

static void
cnn_stage_take_grad (KernStage *st, float *grad)
{
  kern_stage_take_acc (st, ((CnnStage *) st)->gacc, grad);
}

static void
cnn_stage_free (KernStage *st)
{
  CnnStage *s = (CnnStage *) st;
  for (int slot = 0; slot < st->slots; slot++)
    for (int j = 0; j < s->nbuf; j++)
      {
        gsize at = (gsize) slot * s->nbuf + j;
        if (j == 0 || !cnn_row_in_place (s->rows[j - 1].kind))
          g_free (s->buf[at]);
        g_free (s->cols[at]);
        g_free (s->arg[at]);
      }
  g_free (s->buf);
  g_free (s->cols);
  g_free (s->arg);
  g_free (s->rows);
  g_free (s->gacc);
  g_free (s->gmb);
  g_free (s->g[0]);
  g_free (s->g[1]);
  g_free (s->dcols);
  g_free (s->row_loss);
  g_free (s);
}

/* stage_new of the CNN (kernels.h, kern_stage_new): rows [first, last] of
 * the layer table, any cut. */
static KernStage *
cnn_stage_new (KernModel *m, int first, int last, int n, int slots, float grad_scale)
{
  CnnPriv *p = m->priv;
  CnnStage *s = g_new0 (CnnStage, 1);
  KernStage *st = &s->pub;
  kern_stage_init (st, first, last, n, slots, grad_scale);
  st->in_width = first == 0 ? m->d : cnn_row (p, m->n_layers, first - 1).width;
  st->has_loss = last == m->n_layers - 1;
  st->out_width = st->has_loss ? 0 : cnn_row (p, m->n_layers, last).width;
  st->lo = m->layers[first].param_offset;
  st->hi = last + 1 < m->n_layers ? m->layers[last + 1].param_offset : p->n_params;
  st->set_params = cnn_stage_set_params;
  st->forward = cnn_stage_forward;
  st->backward = cnn_stage_backward;
  st->take_grad = cnn_stage_take_grad;
  st->free = cnn_stage_free;
  s->p = p;
  s->nbuf = last - first + 2;
  s->rows = g_new (CnnRow, s->nbuf - 1);
  gsize rows = (gsize) n, widest = (gsize) st->in_width, widest_u = 1;
  for (int i = first; i <= last; i++)
    {
      CnnRow rw = cnn_row (p, m->n_layers, i);
      s->rows[i - first] = rw;
      widest = MAX (widest, (gsize) rw.width);
      if (rw.kind == CNN_ROW_CONV && i > 0)
        widest_u = MAX (widest_u, conv_rows (&p->conv[rw.l], 1) * p->conv[rw.l].kk);
    }
  gsize nb = (gsize) slots * s->nbuf;
  s->buf = g_new0 (float *, nb);
  s->cols = g_new0 (float *, nb);
  s->arg = g_new0 (int *, nb);
  for (int slot = 0; slot < slots; slot++)
    {
      float **b = s->buf + (gsize) slot * s->nbuf;
      b[0] = g_new (float, rows * st->in_width);
      for (int j = 1; j < s->nbuf; j++)
        {
          const CnnRow *rw = &s->rows[j - 1];
          gsize at = (gsize) slot * s->nbuf + j;
          b[j] = cnn_row_in_place (rw->kind) ? b[j - 1] : g_new (float, rows * rw->width);
          if (rw->kind == CNN_ROW_CONV)
            s->cols[at] = g_new (float, conv_rows (&p->conv[rw->l], n) * p->conv[rw->l].kk);
          if (rw->kind == CNN_ROW_POOL)
            s->arg[at] = g_new (int, rows * rw->width);
        }
    }
  gsize len = MAX (st->hi - st->lo, 1);
  s->gacc = g_new0 (float, len);
  s->gmb = g_new0 (float, len);
  s->g[0] = g_new (float, rows * widest);
  s->g[1] = g_new (float, rows * widest);
  s->dcols = g_new (float, rows * widest_u);
  s->row_loss = g_new (float, rows);
  return st;
}

static void
cnn_free (KernModel *m)
{
  CnnPriv *p = m->priv;
  for (int l = 0; l < p->n_conv; l++)
    {
      g_free (p->cols[l]);
      g_free (p->z[l]);
      g_free (p->pooled[l]);
      g_free (p->arg[l]);
    }
  for (int l = 0; l < p->n_dense; l++)
    g_free (p->act[l]);
  g_free (p->g[0]);
  g_free (p->g[1]);
  g_free (p->dcols);
  g_free (p->row_loss);
  g_free (p->row_pred);
  if (p->own_be)
    kern_backend_free (p->be);
  g_free (p);
  g_free (m->layers);
  g_free (m);
}

static KernModel *cnn_clone (const KernModel *m);

/* tensor_plan_new (kernels.h): cnn-tensor.c's plan on this model's shape. */
static KernTensorPlan *
cnn_tensor_plan_new (const KernModel *m, int T, GError **error)
{
  const CnnPriv *p = m->priv;
  KernCnnShape shape = { .q = p->q, .pad = p->pad, .pool = p->pool, .n_conv = p->n_conv,
                         .n_dense = p->n_dense, .n_params = p->n_params };
  memcpy (shape.conv, p->conv, sizeof p->conv);
  memcpy (shape.width, p->width, sizeof p->width);
  memcpy (shape.d_off, p->d_off, sizeof p->d_off);
  return kern_cnn_tensor_plan_new (m, p->be, &shape, T, error);
}

static const KernModelOps cnn_ops = {
  .name = "cnn",
  .n_params = cnn_n_params,
  .init = cnn_init,
  .loss_grad = cnn_loss_grad,
  .loss_grad_groups = cnn_loss_grad_groups,
  .evaluate = cnn_evaluate,
  .flops_forward = cnn_flops_forward,
  .flops_backward = cnn_flops_backward,
  .stage_new = cnn_stage_new,
  .clone = cnn_clone,
  .free = cnn_free,
  .tensor_plan_new = cnn_tensor_plan_new,
};

/* --- The layer table (docs/kernels.md, "Convolutional network") ------------ */

/* Valid taps along one axis: sum over the H positions of the kernel taps
 * that fall inside the image, H q - r (r + 1) for H >= r. */
static double
valid_taps (int H, int q, int r)
{
  return (double) H * q - (double) r * (r + 1);
}

/* Conv layer l: im2col, bias rows, U W; backward dW, db and (l > 0) dU and
 * col2im. */
static void
conv_layer (KernLayer *ly, const CnnPriv *p, int l)
{
  const CnnConv *cv = &p->conv[l];
  double hw = (double) cv->side * cv->side, K = cv->kk, co = cv->cout, ci = cv->cin;
  double d = l > 0 ? 1.0 : 0.0;
  double v = valid_taps (cv->side, p->q, p->pad);
  g_snprintf (ly->name, sizeof ly->name, "conv%d", l + 1);
  ly->kind = p->q == 3 ? KERN_LAYER_CONV3X3 : KERN_LAYER_CONV;
  ly->param_offset = cv->w_off;
  ly->params = (gsize) cv->kk * cv->cout + cv->cout;
  ly->fwd_flops = 2.0 * hw * K * co;
  /* dW 2 hw K co; db (n hw - 1) co; dU 2 hw K co and col2im ci v^2 (l > 0) */
  ly->bwd_flops_fixed = -co;
  ly->bwd_flops = 2.0 * hw * K * co + hw * co + d * (2.0 * hw * K * co + ci * v * v);
  /* im2col reads A, writes U; bias rows; GEMM reads U, reads and writes Z */
  ly->fwd_bytes_fixed = 4.0 * (K * co + co);
  ly->fwd_bytes = 4.0 * hw * (ci + 2.0 * K + 3.0 * co);
  /* dW reads U and dZ; db reads dZ; dU reads dZ, writes dU; col2im reads
   * dU, reads and writes dA */
  ly->bwd_bytes_fixed = 4.0 * (K * co + co + d * K * co);
  ly->bwd_bytes = 4.0 * hw * (K + 2.0 * co + d * (co + 2.0 * K + 2.0 * ci));
  ly->activations = hw * (K + co);       /* U for dW, Z for the ReLU mask */
  ly->outputs = hw * co;
  ly->n_weights = 1;
  ly->weight[0] = (KernWeight) { .offset = cv->w_off, .rows = cv->kk, .cols = cv->cout,
                                 .has_bias = TRUE,
                                 .bias = cv->w_off + (gsize) cv->kk * cv->cout };
}

/* ReLU in place on w floats per sample. */
static void
relu_layer (KernLayer *ly, const char *name, double w, gsize offset)
{
  g_strlcpy (ly->name, name, sizeof ly->name);
  ly->kind = KERN_LAYER_ELEMENTWISE;
  ly->param_offset = offset;
  ly->fwd_bytes = 4.0 * 2.0 * w;         /* reads and writes Z */
  ly->bwd_bytes = 4.0 * 3.0 * w;         /* reads dZ and Z, writes dZ */
  ly->outputs = w;
}

/* Max-pool after conv layer l: compares and copies only. */
static void
pool_layer (KernLayer *ly, const CnnPriv *p, int l, gsize offset)
{
  const CnnConv *cv = &p->conv[l];
  double in = (double) cv->side * cv->side * cv->cout;
  double out = (double) cv->pooled * cv->pooled * cv->cout;
  double s2 = (double) p->pool * p->pool;
  g_snprintf (ly->name, sizeof ly->name, "pool%d", l + 1);
  ly->kind = KERN_LAYER_ELEMENTWISE;
  ly->param_offset = offset;
  ly->fwd_bytes = 4.0 * (s2 * out + 2.0 * out);  /* windows read; P, arg written */
  ly->bwd_bytes = 4.0 * (in + 2.0 * out);        /* dZ written; dP, arg read */
  ly->activations = 2.0 * out;                   /* P and arg */
  ly->outputs = out;
}

/* Dense layer l (in, out): mlp.c's, its input always needing a gradient. */
static void
dense_layer (KernLayer *ly, const CnnPriv *p, int l)
{
  double in = p->width[l], out = p->width[l + 1];
  g_snprintf (ly->name, sizeof ly->name, "fc%d", l + 1);
  ly->kind = KERN_LAYER_GEMM;
  ly->param_offset = p->d_off[l];
  ly->params = (gsize) p->width[l] * p->width[l + 1] + p->width[l + 1];
  ly->fwd_flops = 2.0 * in * out;
  ly->bwd_flops_fixed = -out;
  ly->bwd_flops = 4.0 * in * out + out;
  ly->fwd_bytes_fixed = 4.0 * (in * out + out);
  ly->fwd_bytes = 4.0 * (in + 3.0 * out);
  ly->bwd_bytes_fixed = 4.0 * (2.0 * in * out + out);
  ly->bwd_bytes = 4.0 * (2.0 * in + 3.0 * out);
  ly->activations = out;
  ly->outputs = out;
  ly->n_weights = 1;
  ly->weight[0] = (KernWeight) { .offset = p->d_off[l], .rows = p->width[l],
                                 .cols = p->width[l + 1], .has_bias = TRUE,
                                 .bias = p->d_off[l] + (gsize) p->width[l] * p->width[l + 1] };
}

/* Softmax cross-entropy on k logits and the mean: as mlp.c's xent. */
static void
loss_layer (KernLayer *ly, const CnnPriv *p, int k)
{
  g_strlcpy (ly->name, "xent", sizeof ly->name);
  ly->kind = KERN_LAYER_ELEMENTWISE;
  ly->param_offset = p->n_params;
  ly->fwd_flops = 3.0 * k + 2.0;
  ly->bwd_flops_fixed = 1.0;
  ly->bwd_flops = k + 2.0;
  ly->fwd_bytes = 4.0 * (k + 3.0);
  ly->bwd_bytes = 4.0 * k;
}

static void
fill_layers (KernModel *m, const CnnPriv *p)
{
  m->n_layers = p->n_conv * (p->pool > 1 ? 3 : 2) + 2 * p->n_dense;
  m->layers = g_new0 (KernLayer, m->n_layers);
  int i = 0;
  for (int l = 0; l < p->n_conv; l++)
    {
      gsize next = l + 1 < p->n_conv ? p->conv[l + 1].w_off : p->d_off[0];
      char name[32];
      conv_layer (&m->layers[i++], p, l);
      g_snprintf (name, sizeof name, "relu%d", l + 1);
      relu_layer (&m->layers[i++], name,
                  (double) p->conv[l].side * p->conv[l].side * p->conv[l].cout, next);
      if (p->pool > 1)
        pool_layer (&m->layers[i++], p, l, next);
    }
  for (int l = 0; l < p->n_dense; l++)
    {
      dense_layer (&m->layers[i++], p, l);
      if (l < p->n_dense - 1)
        {
          char name[32];
          g_snprintf (name, sizeof name, "relu%d", p->n_conv + l + 1);
          relu_layer (&m->layers[i++], name, p->width[l + 1], p->d_off[l + 1]);
        }
    }
  loss_layer (&m->layers[i++], p, m->k);
  g_assert (i == m->n_layers);
}

/* --- Construction ------------------------------------------------------------ */

#define CNN_ERROR g_quark_from_static_string ("kern-cnn")

/* The conv layers' shapes from the image side: FALSE with an error naming
 * the key to change when the image gets smaller than a kernel or a pool. */
static gboolean
plan_convs (CnnPriv *p, int side, const int *channels, GError **error)
{
  int cin = 1;
  for (int l = 0; l < p->n_conv; l++)
    {
      CnnConv *cv = &p->conv[l];
      if (side < p->q || side < p->pool)
        {
          g_set_error (error, CNN_ERROR, 0,
                       "[model] channels: convolution %d sees a %d x %d image, smaller than "
                       "its %d x %d kernel or %d x %d pool; use fewer channels entries, or a "
                       "smaller kernel or pool", l + 1, side, side, p->q, p->q, p->pool,
                       p->pool);
          return FALSE;
        }
      cv->side = side;
      cv->cin = cin;
      cv->cout = channels[l];
      cv->kk = p->q * p->q * cin;
      cv->pooled = side / p->pool;
      cv->w_off = p->n_params;
      p->n_params += (gsize) cv->kk * cv->cout + cv->cout;
      p->widest = MAX (p->widest, side * side * cv->cout);
      if (l > 0)
        p->widest_k = MAX (p->widest_k, side * side * cv->kk);
      side = cv->pooled;
      cin = cv->cout;
    }
  p->width[0] = side * side * cin;
  return TRUE;
}

/* Creates a CNN (file header) for square one-channel images of d = side^2
 * features and k classes: n_conv (1 .. 8) conv layers of channels[l]
 * outputs (>= 1), a q x q kernel (q odd), a p x p max-pool after each (p =
 * 1: none), n_hidden (0 .. 7) dense ReLU layers of hidden[l] units, a k-way
 * softmax head.  Math on `be` (borrowed, a CPU backend; NULL = a private
 * reproducible one).  Returns NULL with `error` set ("[model] key: what is
 * wrong; the fix") when d is not a square or the image shrinks below a
 * kernel or pool; arguments out of those ranges are programming errors.
 * Free with kern_model_free(). */
KernModel *
kern_cnn_new (int d, const int *channels, int n_conv, int q, int pool, const int *hidden,
              int n_hidden, int k, KernBackend *be, GError **error)
{
  g_return_val_if_fail (d >= 1 && k >= 1 && channels != NULL, NULL);
  g_return_val_if_fail (n_conv >= 1 && n_conv <= CNN_MAX_CONV, NULL);
  g_return_val_if_fail (n_hidden >= 0 && n_hidden < CNN_MAX_DENSE, NULL);
  g_return_val_if_fail (n_hidden == 0 || hidden != NULL, NULL);
  g_return_val_if_fail (q >= 1 && q % 2 == 1 && pool >= 1, NULL);
  g_return_val_if_fail (be == NULL || strcmp (be->ops->name, "cpu") == 0, NULL);
  int side = (int) floor (sqrt ((double) d) + 0.5);
  if (side * side != d)
    {
      g_set_error (error, CNN_ERROR, 0,
                   "[model] features: kind = cnn reads a sample as a square one-channel "
                   "image, and %d features are not a square; use dataset = fashion-mnist "
                   "(28 x 28) or a square number of features (e.g. 784)", d);
      return NULL;
    }
  CnnPriv *p = g_new0 (CnnPriv, 1);
  p->q = q;
  p->pad = (q - 1) / 2;
  p->pool = pool;
  p->n_conv = n_conv;
  p->n_dense = n_hidden + 1;
  if (!plan_convs (p, side, channels, error))
    {
      g_free (p);
      return NULL;
    }
  for (int l = 0; l < n_hidden; l++)
    p->width[l + 1] = hidden[l];
  p->width[p->n_dense] = k;
  for (int l = 0; l < p->n_dense; l++)
    {
      p->d_off[l] = p->n_params;
      p->n_params += (gsize) p->width[l] * p->width[l + 1] + p->width[l + 1];
      p->widest = MAX (p->widest, p->width[l]);
    }
  p->own_be = (be == NULL);
  p->be = be != NULL ? be : kern_backend_cpu_new ();
  KernModel *m = g_new0 (KernModel, 1);
  m->ops = &cnn_ops;
  m->d = d;
  m->k = k;
  m->priv = p;
  fill_layers (m, p);
  return m;
}

/* The same network; its own scratch.  A private backend (reproducible) is
 * made anew; a borrowed CPU backend holds no state and is shared. */
static KernModel *
cnn_clone (const KernModel *m)
{
  const CnnPriv *p = m->priv;
  int channels[CNN_MAX_CONV];
  for (int l = 0; l < p->n_conv; l++)
    channels[l] = p->conv[l].cout;
  return kern_cnn_new (m->d, channels, p->n_conv, p->q, p->pool, p->width + 1,
                       p->n_dense - 1, m->k, p->own_be ? NULL : p->be, NULL);
}

/* --- The registry entry ------------------------------------------------------ */

static const BaseKey cnn_keys[] = {
  { "model", "channels", BASE_KEY_INTLIST, 0, "16,32", 1, 1024, 0, NULL, 0,
    "kind = cnn: output channels of each convolution layer, e.g. 16,32 (1 to 8 layers); the dense layers after them are [model] hidden.", NULL },
  { "model", "kernel", BASE_KEY_INT, 0, "3", 1, 9, 0, NULL, 0,
    "kind = cnn: side of the square convolution kernel, odd (stride 1, zero padding keeping the image's size).", NULL },
  { "model", "pool", BASE_KEY_INT, 0, "2", 1, 8, 0, NULL, 0,
    "kind = cnn: side of the max-pool window (and its stride) after each convolution; 1 = no pooling.", NULL },
  { .section = NULL },
};

static gboolean
cnn_validate (const BaseValues *v, GError **error)
{
  const GArray *ch = base_values_list (v, "model.channels");
  if (ch == NULL || ch->len < 1 || ch->len > CNN_MAX_CONV)
    {
      g_set_error (error, CNN_ERROR, 0,
                   "[model] channels: %u convolution layers; give 1 to %d widths, e.g. 16,32",
                   ch ? ch->len : 0, CNN_MAX_CONV);
      return FALSE;
    }
  gint64 q = base_values_int (v, "model.kernel");
  if (q % 2 == 0)
    {
      g_set_error (error, CNN_ERROR, 0,
                   "[model] kernel: %" G_GINT64_FORMAT " is even, and padding that keeps the "
                   "image's size needs an odd kernel; use 1, 3, 5, 7 or 9", q);
      return FALSE;
    }
  return TRUE;
}

static KernModel *
cnn_kind_new (const KernModelArgs *a, KernBackend *be, GError **error)
{
  const GArray *ch = base_values_list (a->values, "model.channels");
  if (a->n_hidden >= CNN_MAX_DENSE)
    {
      g_set_error (error, CNN_ERROR, 0,
                   "[model] hidden: %d dense layers after the convolutions; kind = cnn takes "
                   "at most %d", a->n_hidden, CNN_MAX_DENSE - 1);
      return NULL;
    }
  return kern_cnn_new (a->inputs, (const int *) ch->data, (int) ch->len,
                       (int) base_values_int (a->values, "model.kernel"),
                       (int) base_values_int (a->values, "model.pool"), a->hidden,
                       a->n_hidden, a->classes, be, error);
}

const KernModelKind kern_model_cnn = {
  .name = "cnn",
  .description = "convolutional network: conv, ReLU, max-pool layers, then dense layers and softmax (CPU backend)",
  .math = TRUE,
  .cpu_only = TRUE,
  .depth_key = "channels",
  .keys = cnn_keys,
  .validate = cnn_validate,
  .new = cnn_kind_new,
};
