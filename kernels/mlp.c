/*
 * mlp.c — dense networks on a kernel backend: "softmax", "linear", "mlp".
 *
 * One implementation serves softmax regression (no hidden layer, softmax
 * cross-entropy), linear regression onto one-hot targets (no hidden layer,
 * half squared error) and multi-layer perceptrons (hidden layers with ReLU,
 * either loss).  With L dense layers of widths w_0 = d, w_1, ..., w_L = k,
 * parameters are, layer by layer, W_l (w_{l-1}, w_l) row-major then b_l
 * (w_l), and for a batch x (n, d), labels y (n):
 *
 *   A_0 = x
 *   Z_l = A_{l-1} W_l + b_l               (n, w_l)  bias rows, then one GEMM
 *   A_l = max(Z_l, 0) for l < L           in place
 *   loss = (1/n) sum_i loss_i(Z_L, y)     xent or mse (backend.h formulas)
 *
 * and backward, from dZ_L = (1/n) d loss_i / d Z_L (written by the loss op
 * over Z_L in place):
 *
 *   dW_l = A_{l-1}^T dZ_l,  db_l = sum_i dZ_l[i]
 *   dZ_{l-1} = (dZ_l W_l^T) masked by A_{l-1} > 0      (l > 1 only)
 *
 * Every operation goes through the backend's table, so the same code runs
 * on the CPU and on CUDA.  The API takes host memory; a backend whose
 * buffers are not host memory (any but "cpu") gets the parameters, batch
 * and labels uploaded and the gradients downloaded on every call, while on
 * the CPU backend the caller's pointers are handed to the operations as
 * they are and gradients are written straight into the caller's buffers.
 *
 * Scratch (activations, input gradients, row losses) lives in the model and
 * grows to the largest batch seen, so a warm model allocates nothing per
 * call; a model must therefore be used by one thread at a time.
 *
 * Costs: each model describes itself as a KernLayer table (dense "fc1",
 * "fc2", ..., "relu1", ..., then "xent" or "mse") whose FLOP and byte counts
 * are those of the operations issued here, under the rules of
 * docs/kernels.md; flops_forward and flops_backward are the layer sums.
 * For softmax regression they are 2ndk + 3nk + 2n and 2ndk + 2nk - k + 2n
 * + 1, the figures the golden summaries were recorded with.
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"

#include <math.h>
#include <string.h>

/* Rows evaluated per chunk by mlp_evaluate, bounding the scratch size. */
#define MLP_EVAL_CHUNK 1024

/* Standard deviation of the initial weights of the output layer; hidden
 * layers use He's sqrt(2 / fan_in). */
#define MLP_OUT_INIT_STD 0.01

typedef struct {
  KernBackend *be;      /* borrowed, or owned when own_be */
  gboolean own_be;
  gboolean host;        /* be's buffers are host memory: no copies */
  KernLoss loss;
  int n_dense;          /* L: hidden layers + 1 */
  int *width;           /* (L + 1): d, hidden[0], ..., k */
  gsize *w_off;         /* (L) first float of W_l; b_l follows W_l */
  gsize n_params;
  int max_hidden;       /* widest hidden layer, 0 without hidden layers */

  /* Scratch in backend memory for `cap` rows. */
  int cap;
  float **act;          /* (L) act[l]: (cap, w_{l+1}), Z then ReLU, or dZ_L */
  float *delta[2];      /* (cap, max_hidden) each: dZ of hidden layers */
  float *row_loss;      /* (cap) per-row losses */
  int *row_pred;        /* (cap) per-row argmax */
  float *x_dev;         /* (cap, d) uploaded batch; NULL when host */
  int *y_dev;           /* (cap) uploaded labels; NULL when host */
  float *h_loss;        /* (cap) host copy of row_loss; NULL when host */
  int *h_pred;          /* (cap) host copy of row_pred; NULL when host */

  /* Parameters and gradients in backend memory; NULL when host. */
  float *params_dev;    /* (n_params) */
  float *grad_dev;      /* (grad_groups, n_params) */
  int grad_groups;
} MlpPriv;

static void
buf_free (KernBackend *be, void *buf)
{
  if (buf != NULL)
    be->ops->free (be, buf);
}

/* Grows the row scratch to hold `rows` rows; contents are not kept. */
static void
mlp_reserve (KernModel *m, int rows)
{
  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  if (rows <= p->cap)
    return;
  gsize r = (gsize) rows;
  for (int l = 0; l < p->n_dense; l++)
    {
      buf_free (be, p->act[l]);
      p->act[l] = be->ops->alloc (be, r * (gsize) p->width[l + 1]);
    }
  for (int i = 0; i < 2; i++)
    {
      buf_free (be, p->delta[i]);
      p->delta[i] = p->max_hidden > 0 ? be->ops->alloc (be, r * (gsize) p->max_hidden)
                                      : NULL;
    }
  buf_free (be, p->row_loss);
  buf_free (be, p->row_pred);
  p->row_loss = be->ops->alloc (be, r);
  p->row_pred = be->ops->alloc_int (be, r);
  if (!p->host)
    {
      buf_free (be, p->x_dev);
      buf_free (be, p->y_dev);
      p->x_dev = be->ops->alloc (be, r * (gsize) m->d);
      p->y_dev = be->ops->alloc_int (be, r);
      p->h_loss = g_renew (float, p->h_loss, r);
      p->h_pred = g_renew (int, p->h_pred, r);
    }
  p->cap = rows;
}

/* The parameters, batch and labels as backend pointers: the caller's own on
 * the CPU backend, uploaded copies otherwise.  x (rows, d), y (rows). */
static void
mlp_stage (KernModel *m, const float *params, const float *x, const int *y,
           int rows, const float **P, const float **X, const int **Y)
{
  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  if (p->host)
    {
      *P = params;
      *X = x;
      *Y = y;
      return;
    }
  be->ops->upload (be, p->params_dev, params, p->n_params);
  be->ops->upload (be, p->x_dev, x, (gsize) rows * (gsize) m->d);
  be->ops->upload_int (be, p->y_dev, y, (gsize) rows);
  *P = p->params_dev;
  *X = p->x_dev;
  *Y = p->y_dev;
}

/* Forward pass over X (rows, d) at parameters P, both backend pointers:
 * leaves Z_l (ReLU applied for hidden layers) in act[l], each rounded to
 * `fmt` (host buffers only; fp32: untouched).  FLOPs: 2 rows w_{l-1} w_l
 * per dense layer; the bias rows and the ReLU are 0. */
static void
mlp_forward (MlpPriv *p, const float *P, const float *X, int rows, KernFormat fmt)
{
  KernBackend *be = p->be;
  const float *A = X;                                 /* (rows, in) */
  for (int l = 0; l < p->n_dense; l++)
    {
      int in = p->width[l], out = p->width[l + 1];
      const float *W = P + p->w_off[l];               /* (in, out) */
      const float *b = W + (gsize) in * out;          /* (out) */
      float *Z = p->act[l];                           /* (rows, out) */
      be->ops->fill_rows (be, Z, b, rows, out);
      be->ops->gemm (be, FALSE, FALSE, rows, out, in, 1.0f, A, in, W, out,
                     1.0f, Z, out);                   /* 2 rows in out */
      if (l < p->n_dense - 1)
        be->ops->relu (be, Z, (gsize) rows * (gsize) out);
      if (p->host)
        kern_round_to (fmt, Z, (gsize) rows * (gsize) out);   /* the layer's output */
      A = Z;
    }
}

/* The loss op on the logits act[L-1] (rows, k): row losses into row_loss,
 * argmax into row_pred when want_pred, and dZ = scale d loss_i / dZ in
 * place when scale != 0. */
static void
mlp_loss_op (MlpPriv *p, const int *Y, int rows, float scale, gboolean want_pred)
{
  KernBackend *be = p->be;
  int k = p->width[p->n_dense];
  float *Z = p->act[p->n_dense - 1];
  int *pred = want_pred ? p->row_pred : NULL;
  if (p->loss == KERN_LOSS_XENT)
    be->ops->softmax_xent (be, Z, Y, rows, k, scale, p->row_loss, pred);
  else
    be->ops->mse (be, Z, Y, rows, k, scale, p->row_loss, pred);
}

/* Host pointer to the row losses (downloading them where needed). */
static const float *
mlp_row_losses (MlpPriv *p, int rows)
{
  if (p->host)
    return p->row_loss;
  p->be->ops->download (p->be, p->h_loss, p->row_loss, (gsize) rows);
  return p->h_loss;
}

/* Sum of r >= 1 row losses in double: r - 1 adds. */
static double
mlp_sum (const float *loss, int r)
{
  double total = loss[0];
  for (int i = 1; i < r; i++)
    total += loss[i];
  return total;
}

/* Backward pass for `groups` groups of n rows stacked in X (groups n, d)
 * and act[], after the loss op has left dZ_L in act[L-1]: group g's
 * gradient goes to G[g] (n_params each, backend pointers).  The dW and db
 * of each group use that group's row slice; the input-gradient products
 * and ReLU masks run once over all rows. */
static void
mlp_backward (MlpPriv *p, const float *P, const float *X, int n, int groups,
              float *const *G, const KernNumerics *num)
{
  KernBackend *be = p->be;
  int rows = n * groups;
  float *dZ = p->act[p->n_dense - 1];                 /* (rows, out) */
  KernFormat fmt = p->host ? num->activations : KERN_FORMAT_FP32;
  float S = kern_numerics_scale (num);
  /* the gradient at the logits, as at every layer output below */
  kern_round_scaled (fmt, dZ, (gsize) rows * (gsize) p->width[p->n_dense], S);
  for (int l = p->n_dense - 1; l >= 0; l--)
    {
      int in = p->width[l], out = p->width[l + 1];
      const float *A = l == 0 ? X : p->act[l - 1];    /* (rows, in) */
      for (int g = 0; g < groups; g++)
        {
          gsize r0 = (gsize) g * (gsize) n;
          float *dW = G[g] + p->w_off[l];              /* (in, out) */
          float *db = dW + (gsize) in * out;           /* (out) */
          be->ops->gemm (be, TRUE, FALSE, in, out, n, 1.0f, A + r0 * in, in,
                         dZ + r0 * out, out, 0.0f, dW, out);  /* 2 n in out */
          be->ops->col_sum (be, dZ + r0 * out, n, out, db);   /* (n - 1) out */
        }
      if (l == 0)
        break;
      const float *W = P + p->w_off[l];                /* (in, out) */
      float *dA = p->delta[(p->n_dense - 1 - l) % 2];  /* (rows, in) */
      be->ops->gemm (be, FALSE, TRUE, rows, in, out, 1.0f, dZ, out, W, out,
                     0.0f, dA, in);                    /* 2 rows in out */
      kern_round_scaled (fmt, dA, (gsize) rows * (gsize) in, S);
      be->ops->relu_backward (be, dA, p->act[l - 1], (gsize) rows * (gsize) in);
      dZ = dA;
    }
}

/* The work of loss_grad, loss_grad_groups and loss_grad_sum: losses[g] =
 * mean loss of group g; with grads != NULL, grads[g] = its gradient (host
 * pointers), or with `summed` grads[0] = the sum of the groups'
 * gradients, the backward running over all rows as one group. */
static void
mlp_compute (KernModel *m, const float *params, const float *x, const int *y,
             int n, int groups, float *const *grads, double *losses, gboolean summed)
{
  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  int rows = n * groups;
  mlp_reserve (m, rows);

  const float *P, *X;
  const int *Y;
  mlp_stage (m, params, x, y, rows, &P, &X, &Y);
  mlp_forward (p, P, X, rows, m->num.activations);

  float scale = grads != NULL ? 1.0f / (float) n : 0.0f;   /* 1 */
  mlp_loss_op (p, Y, rows, scale, FALSE);

  const float *loss = mlp_row_losses (p, rows);
  for (int g = 0; g < groups; g++)
    losses[g] = mlp_sum (loss + (gsize) g * n, n) / n;      /* n - 1, 1 */

  if (grads == NULL)
    return;

  if (summed)
    {
      n = rows;
      groups = 1;
    }
  if (p->host)
    {
      mlp_backward (p, P, X, n, groups, grads, &m->num);
      return;
    }
  if (groups > p->grad_groups)
    {
      buf_free (be, p->grad_dev);
      p->grad_dev = be->ops->alloc (be, (gsize) groups * p->n_params);
      p->grad_groups = groups;
    }
  g_autofree float **G = g_new (float *, groups);
  for (int g = 0; g < groups; g++)
    G[g] = p->grad_dev + (gsize) g * p->n_params;
  mlp_backward (p, P, X, n, groups, G, &m->num);
  for (int g = 0; g < groups; g++)
    be->ops->download (be, grads[g], G[g], p->n_params);
}

static gsize
mlp_n_params (const KernModel *m)
{
  const MlpPriv *p = m->priv;
  return p->n_params;
}

/* Layer by layer from one (seed, stream) generator: W_l element-wise from
 * N(0, 2 / w_{l-1}) (He) for hidden layers, from N(0, MLP_OUT_INIT_STD^2)
 * for the output layer; b_l = 0.  Without hidden layers this is draw for
 * draw the initialisation softmax regression always had, which is why the
 * stream keeps the name KERN_RNG_STREAM_SOFTMAX. */
static void
mlp_init (const KernModel *m, float *params, guint64 seed)
{
  g_return_if_fail (m != NULL && params != NULL);
  const MlpPriv *p = m->priv;
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_SOFTMAX);
  for (int l = 0; l < p->n_dense; l++)
    {
      int in = p->width[l], out = p->width[l + 1];
      double std = l < p->n_dense - 1 ? sqrt (2.0 / in) : MLP_OUT_INIT_STD;
      float *W = params + p->w_off[l];
      gsize nw = (gsize) in * (gsize) out;
      for (gsize i = 0; i < nw; i++)
        W[i] = (float) (std * kern_rng_normal (&rng));
      memset (W + nw, 0, (gsize) out * sizeof (float));
    }
}

static double
mlp_loss_grad (KernModel *m, const float *params, const float *x,
               const int *y, int n, float *grad)
{
  g_return_val_if_fail (m != NULL && params != NULL, NAN);
  g_return_val_if_fail (n >= 1 && x != NULL && y != NULL, NAN);
  g_return_val_if_fail (kern_labels_valid (y, (gsize) n, m->k), NAN);

  double loss;
  mlp_compute (m, params, x, y, n, 1, grad != NULL ? &grad : NULL, &loss, FALSE);
  return loss;
}

/* loss_grad_sum (kernels.h): the stacked rows as one group of n x groups
 * rows for the backward (mlp_backward's products and column sums then run
 * over all of them at once), each row's loss gradient scaled by 1/n, the
 * losses group by group. */
static void
mlp_loss_grad_sum (KernModel *m, const float *params, const float *x, const int *y, int n,
                   int groups, float *sum, double *losses)
{
  g_return_if_fail (m != NULL && params != NULL && x != NULL && y != NULL);
  g_return_if_fail (n >= 1 && groups >= 1 && n <= G_MAXINT / groups);
  g_return_if_fail (losses != NULL && sum != NULL);
  g_return_if_fail (kern_labels_valid (y, (gsize) n * (gsize) groups, m->k));

  mlp_compute (m, params, x, y, n, groups, &sum, losses, TRUE);
}

/* loss_grad_groups (kernels.h).  grads may be NULL, which computes the
 * groups' losses only. */
static void
mlp_loss_grad_groups (KernModel *m, const float *params, const float *x,
                      const int *y, int n, int groups, float *const *grads,
                      double *losses)
{
  g_return_if_fail (m != NULL && params != NULL && x != NULL && y != NULL);
  g_return_if_fail (n >= 1 && groups >= 1 && n <= G_MAXINT / groups);
  g_return_if_fail (losses != NULL);
  g_return_if_fail (kern_labels_valid (y, (gsize) n * (gsize) groups, m->k));
  if (grads != NULL)
    for (int g = 0; g < groups; g++)
      g_return_if_fail (grads[g] != NULL);

  mlp_compute (m, params, x, y, n, groups, grads, losses, FALSE);
}

static void
mlp_evaluate (KernModel *m, const float *params, const KernDataset *ds,
              double *loss, double *accuracy)
{
  g_return_if_fail (m != NULL && params != NULL && ds != NULL);
  g_return_if_fail (ds->d == m->d && ds->k == m->k);
  g_return_if_fail (kern_labels_valid (ds->y, (gsize) ds->n, m->k));

  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  double total = 0.0;
  gint64 correct = 0;

  for (int start = 0; start < ds->n; start += MLP_EVAL_CHUNK)
    {
      int rows = MIN (MLP_EVAL_CHUNK, ds->n - start);
      const int *y = ds->y + start;
      mlp_reserve (m, rows);
      const float *P, *X;
      const int *Y;
      mlp_stage (m, params, ds->x + (gsize) start * m->d, y, rows, &P, &X, &Y);
      mlp_forward (p, P, X, rows, m->num.activations);
      mlp_loss_op (p, Y, rows, 0.0f, TRUE);

      const int *pred = p->row_pred;
      if (!p->host)
        {
          be->ops->download_int (be, p->h_pred, p->row_pred, (gsize) rows);
          pred = p->h_pred;
        }
      total += mlp_sum (mlp_row_losses (p, rows), rows);
      for (int i = 0; i < rows; i++)
        correct += (pred[i] == y[i]);
    }

  /* An empty data set has no mean: report NaN rather than a fake 0. */
  if (loss != NULL)
    *loss = ds->n > 0 ? total / ds->n : NAN;
  if (accuracy != NULL)
    *accuracy = ds->n > 0 ? (double) correct / ds->n : NAN;
}

static double
mlp_flops_forward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].fwd_flops_fixed + m->layers[i].fwd_flops * n;
  return total;
}

static double
mlp_flops_backward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].bwd_flops_fixed + m->layers[i].bwd_flops * n;
  return total;
}

/* --- Pipeline stages (kernels.h, KernStage) ------------------------------
 *
 * Layer i of the table is, with L dense layers: the loss for i = 2L - 1,
 * else dense layer i / 2 for even i and its ReLU for odd i.  A slot holds
 * one buffer per position j = 0 .. last - first + 1: j = 0 is the stage's
 * input, j > 0 the output of layer first + j - 1.  Dense layers write a
 * buffer of their own; a ReLU works in place on the buffer before it (so
 * it holds the ReLU output its backward masks with), and the loss turns
 * the logits into dZ in place during forward.  Backward walks the layers
 * from last to first with the current gradient g:
 *
 *   loss:    g = the dZ kept in the slot (scale grad_scale)
 *   ReLU l:  g masked by the kept ReLU output
 *   dense l: dW_l = A^T g, db_l = sum_i g[i] (into a micro-batch scratch,
 *            then added to the accumulator with the backend's sgd op at
 *            lr = -1, i.e. acc += scratch); g = g W_l^T unless i = 0
 *
 * and at the end g is the gradient at the stage's input. */

typedef struct {
  KernStage pub;         /* first member: a KernStage* is an MlpStage* */
  MlpPriv *p;            /* the model's (backend, widths, offsets) */
  int nbuf;              /* last - first + 2 */
  float **buf;           /* (slots x nbuf) backend pointers */
  const float *P;        /* parameters, backend pointer (full layout) */
  float *params_dev;     /* (n_params) when not host; else NULL */
  float *gacc;           /* (hi - lo) accumulated gradient */
  float *gmb;            /* (hi - lo) one micro-batch's gradient */
  float *delta[2];       /* (n, widest layer) input gradients */
  float *gout;           /* (n, out_width) the uploaded dout */
  float *row_loss;       /* (n) */
  int *y_dev;            /* (n) */
  float *h_loss;         /* (n) host copy of row_loss */
  float *zeros;          /* (hi - lo) host zeros */
} MlpStage;

static gboolean
stage_is_loss (const MlpPriv *p, int i)
{
  return i == 2 * p->n_dense - 1;
}

/* Output width of table layer i. */
static int
stage_layer_width (const MlpPriv *p, int i)
{
  return stage_is_loss (p, i) ? p->width[p->n_dense] : p->width[i / 2 + 1];
}

static void
mlp_stage_set_params (KernStage *st, const float *params)
{
  MlpStage *s = (MlpStage *) st;
  KernBackend *be = s->p->be;
  if (s->p->host)
    {
      s->P = params;
      return;
    }
  be->ops->upload (be, s->params_dev + st->lo, params + st->lo, st->hi - st->lo);
  s->P = s->params_dev;
}

static double
mlp_stage_forward (KernStage *st, int slot, const float *in, const float *x G_GNUC_UNUSED,
                   const int *y, float *out)
{
  MlpStage *s = (MlpStage *) st;
  MlpPriv *p = s->p;
  KernBackend *be = p->be;
  int n = st->n;
  float **buf = s->buf + (gsize) slot * s->nbuf;
  g_return_val_if_fail (s->P != NULL, NAN);
  be->ops->upload (be, buf[0], in, (gsize) n * st->in_width);
  double loss = NAN;
  for (int i = st->first; i <= st->last; i++)
    {
      int j = i - st->first + 1;
      if (stage_is_loss (p, i))
        {
          int k = p->width[p->n_dense];
          g_return_val_if_fail (kern_labels_valid (y, (gsize) n, k), NAN);
          be->ops->upload_int (be, s->y_dev, y, (gsize) n);
          if (p->loss == KERN_LOSS_XENT)
            be->ops->softmax_xent (be, buf[j], s->y_dev, n, k, st->grad_scale_f, s->row_loss,
                                   NULL);
          else
            be->ops->mse (be, buf[j], s->y_dev, n, k, st->grad_scale_f, s->row_loss, NULL);
          be->ops->download (be, s->h_loss, s->row_loss, (gsize) n);
          loss = mlp_sum (s->h_loss, n) / n;
        }
      else if (i % 2 == 1)
        be->ops->relu (be, buf[j], (gsize) n * (gsize) stage_layer_width (p, i));
      else
        {
          int l = i / 2, w_in = p->width[l], w_out = p->width[l + 1];
          const float *W = s->P + p->w_off[l];            /* (w_in, w_out) */
          const float *b = W + (gsize) w_in * w_out;      /* (w_out) */
          be->ops->fill_rows (be, buf[j], b, n, w_out);
          be->ops->gemm (be, FALSE, FALSE, n, w_out, w_in, 1.0f, buf[j - 1], w_in, W, w_out,
                         1.0f, buf[j], w_out);
        }
    }
  if (!st->has_loss)
    be->ops->download (be, out, buf[s->nbuf - 1], (gsize) n * st->out_width);
  return loss;
}

static void
mlp_stage_backward (KernStage *st, int slot, const float *dout, float *din)
{
  MlpStage *s = (MlpStage *) st;
  MlpPriv *p = s->p;
  KernBackend *be = p->be;
  int n = st->n;
  float **buf = s->buf + (gsize) slot * s->nbuf;
  float *g;                                            /* (n, width) */
  if (st->has_loss)
    g = buf[s->nbuf - 1];
  else
    {
      be->ops->upload (be, s->gout, dout, (gsize) n * st->out_width);
      g = s->gout;
    }
  for (int i = st->last; i >= st->first; i--)
    {
      int j = i - st->first + 1;
      if (stage_is_loss (p, i))
        continue;                                      /* dZ is in place */
      if (i % 2 == 1)
        {
          be->ops->relu_backward (be, g, buf[j], (gsize) n * (gsize) stage_layer_width (p, i));
          continue;
        }
      int l = i / 2, w_in = p->width[l], w_out = p->width[l + 1];
      gsize off = p->w_off[l] - st->lo, nw = (gsize) w_in * w_out;
      float *dW = s->gmb + off;                        /* (w_in, w_out) */
      be->ops->gemm (be, TRUE, FALSE, w_in, w_out, n, 1.0f, buf[j - 1], w_in, g, w_out, 0.0f,
                     dW, w_out);
      be->ops->col_sum (be, g, n, w_out, dW + nw);
      be->ops->sgd (be, s->gacc + off, dW, nw + w_out, -1.0f); /* acc += dW, db */
      if (i == 0)
        break;
      float *dA = g == s->delta[0] ? s->delta[1] : s->delta[0]; /* (n, w_in) */
      be->ops->gemm (be, FALSE, TRUE, n, w_in, w_out, 1.0f, g, w_out, s->P + p->w_off[l], w_out,
                     0.0f, dA, w_in);
      g = dA;
    }
  if (st->first > 0)
    be->ops->download (be, din, g, (gsize) n * st->in_width);
}

static void
mlp_stage_take_grad (KernStage *st, float *grad)
{
  MlpStage *s = (MlpStage *) st;
  KernBackend *be = s->p->be;
  gsize len = st->hi - st->lo;
  be->ops->download (be, grad + st->lo, s->gacc, len);
  be->ops->upload (be, s->gacc, s->zeros, len);
}

static void
mlp_stage_free (KernStage *st)
{
  MlpStage *s = (MlpStage *) st;
  KernBackend *be = s->p->be;
  for (int slot = 0; slot < st->slots; slot++)
    for (int j = 0; j < s->nbuf; j++)
      {
        int i = st->first + j - 1;
        if (j == 0 || (!stage_is_loss (s->p, i) && i % 2 == 0))
          buf_free (be, s->buf[(gsize) slot * s->nbuf + j]);
      }
  g_free (s->buf);
  buf_free (be, s->params_dev);
  buf_free (be, s->gacc);
  buf_free (be, s->gmb);
  buf_free (be, s->delta[0]);
  buf_free (be, s->delta[1]);
  buf_free (be, s->gout);
  buf_free (be, s->row_loss);
  buf_free (be, s->y_dev);
  g_free (s->h_loss);
  g_free (s->zeros);
  g_free (s);
}

/* stage_new of the dense models (kernels.h, kern_stage_new). */
static KernStage *
mlp_stage_new (KernModel *m, int first, int last, int n, int slots, float grad_scale)
{
  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  MlpStage *s = g_new0 (MlpStage, 1);
  KernStage *st = &s->pub;
  kern_stage_init (st, first, last, n, slots, grad_scale);
  st->in_width = first == 0 ? p->width[0] : stage_layer_width (p, first - 1);
  st->has_loss = stage_is_loss (p, last);
  st->out_width = st->has_loss ? 0 : stage_layer_width (p, last);
  st->lo = m->layers[first].param_offset;
  st->hi = last + 1 < m->n_layers ? m->layers[last + 1].param_offset : p->n_params;
  st->set_params = mlp_stage_set_params;
  st->forward = mlp_stage_forward;
  st->backward = mlp_stage_backward;
  st->take_grad = mlp_stage_take_grad;
  st->free = mlp_stage_free;
  s->p = p;
  s->nbuf = last - first + 2;
  s->buf = g_new0 (float *, (gsize) slots * s->nbuf);
  gsize rows = (gsize) n;
  for (int slot = 0; slot < slots; slot++)
    {
      float **b = s->buf + (gsize) slot * s->nbuf;
      b[0] = be->ops->alloc (be, rows * st->in_width);
      for (int j = 1; j < s->nbuf; j++)
        {
          int i = first + j - 1;
          b[j] = (!stage_is_loss (p, i) && i % 2 == 0)
                 ? be->ops->alloc (be, rows * stage_layer_width (p, i)) : b[j - 1];
        }
    }
  int widest = 0;
  for (int l = 0; l <= p->n_dense; l++)
    widest = MAX (widest, p->width[l]);
  gsize len = st->hi - st->lo;
  if (!p->host)
    s->params_dev = be->ops->alloc (be, p->n_params);
  s->zeros = g_new0 (float, MAX (len, 1));
  s->gacc = be->ops->alloc (be, MAX (len, 1));
  s->gmb = be->ops->alloc (be, MAX (len, 1));
  be->ops->upload (be, s->gacc, s->zeros, len);
  s->delta[0] = be->ops->alloc (be, rows * widest);
  s->delta[1] = be->ops->alloc (be, rows * widest);
  s->gout = be->ops->alloc (be, rows * MAX (st->out_width, 1));
  s->row_loss = be->ops->alloc (be, rows);
  s->y_dev = be->ops->alloc_int (be, rows);
  s->h_loss = g_new (float, rows);
  return st;
}

static void
mlp_free (KernModel *m)
{
  MlpPriv *p = m->priv;
  KernBackend *be = p->be;
  for (int l = 0; l < p->n_dense; l++)
    buf_free (be, p->act[l]);
  buf_free (be, p->delta[0]);
  buf_free (be, p->delta[1]);
  buf_free (be, p->row_loss);
  buf_free (be, p->row_pred);
  buf_free (be, p->x_dev);
  buf_free (be, p->y_dev);
  buf_free (be, p->params_dev);
  buf_free (be, p->grad_dev);
  g_free (p->h_loss);
  g_free (p->h_pred);
  if (p->own_be)
    kern_backend_free (be);
  g_free (p->act);
  g_free (p->width);
  g_free (p->w_off);
  g_free (p);
  g_free (m->layers);
  g_free (m);
}

static KernModel *
mlp_clone (const KernModel *m)
{
  const MlpPriv *p = m->priv;
  if (!p->host)
    return NULL;
  return kern_mlp_new (m->d, p->width + 1, p->n_dense - 1, m->k, p->loss, NULL);
}

/* Three names, one implementation: the name says which model a scenario
 * asked for. */
#define MLP_OPS(ident, model_name)                \
  static const KernModelOps ident = {             \
    .name = model_name,                           \
    .n_params = mlp_n_params,                     \
    .init = mlp_init,                             \
    .loss_grad = mlp_loss_grad,                   \
    .loss_grad_groups = mlp_loss_grad_groups,     \
    .loss_grad_sum = mlp_loss_grad_sum,           \
    .evaluate = mlp_evaluate,                     \
    .flops_forward = mlp_flops_forward,           \
    .flops_backward = mlp_flops_backward,         \
    .stage_new = mlp_stage_new,                   \
    .clone = mlp_clone,                           \
    .free = mlp_free,                             \
    .tensor_plan_new = kern_mlp_tensor_plan_new,  \
  }
MLP_OPS (softmax_ops, "softmax");
MLP_OPS (linear_ops, "linear");
MLP_OPS (mlp_ops, "mlp");

static KernModel *
linear_new (const KernModelArgs *a, KernBackend *be, GError **error G_GNUC_UNUSED)
{
  return kern_mlp_new (a->inputs, NULL, 0, a->classes, KERN_LOSS_MSE, be);
}

static KernModel *
softmax_new (const KernModelArgs *a, KernBackend *be, GError **error G_GNUC_UNUSED)
{
  return kern_mlp_new (a->inputs, NULL, 0, a->classes, KERN_LOSS_XENT, be);
}

static KernModel *
mlp_new (const KernModelArgs *a, KernBackend *be, GError **error G_GNUC_UNUSED)
{
  return kern_mlp_new (a->inputs, a->hidden, a->n_hidden, a->classes, KERN_LOSS_XENT, be);
}

const KernModelKind kern_model_linear = {
  .name = "linear", .description = "least squares onto one-hot targets",
  .math = TRUE, .new = linear_new, .rounds_activations = TRUE };
const KernModelKind kern_model_softmax = {
  .name = "softmax", .description = "softmax regression", .math = TRUE, .new = softmax_new,
  .rounds_activations = TRUE };
const KernModelKind kern_model_mlp = {
  .name = "mlp", .description = "ReLU hidden layers, softmax output",
  .math = TRUE, .new = mlp_new, .rounds_activations = TRUE };

/* Dense layer l of the model, (in, out): costs of mlp_forward and
 * mlp_backward's operations on it (docs/kernels.md, "Dense layer"). */
static void
dense_layer (KernLayer *ly, const MlpPriv *p, int l)
{
  double in = p->width[l], out = p->width[l + 1];
  gboolean first = (l == 0);
  g_snprintf (ly->name, sizeof ly->name, "fc%d", l + 1);
  ly->kind = KERN_LAYER_GEMM;
  ly->param_offset = p->w_off[l];
  ly->params = (gsize) p->width[l] * p->width[l + 1] + p->width[l + 1];
  /* Z = b rows (copy) + A W: 2 in out per row */
  ly->fwd_flops_fixed = 0.0;
  ly->fwd_flops = 2.0 * in * out;
  /* dW = A^T dZ: 2 in out per row; db: (n - 1) out; dA = dZ W^T: 2 in out
   * per row, skipped for the first layer (x needs no gradient) */
  ly->bwd_flops_fixed = -out;
  ly->bwd_flops = 2.0 * in * out + out + (first ? 0.0 : 2.0 * in * out);
  /* forward reads b and W once, writes the bias rows, reads A, reads and
   * writes Z (beta = 1) */
  ly->fwd_bytes_fixed = 4.0 * (in * out + out);
  ly->fwd_bytes = 4.0 * (out + in + 2.0 * out);
  /* dW: reads A and dZ, writes dW; db: reads dZ, writes db; dA: reads dZ
   * and W, writes dA */
  ly->bwd_bytes_fixed = 4.0 * (in * out + out + (first ? 0.0 : in * out));
  ly->bwd_bytes = 4.0 * (in + out + out + (first ? 0.0 : out + in));
  /* its output (ReLU'd in place, or the logits that become dZ), and for
   * the first layer the batch x that dW_1 reads */
  ly->activations = out + (first ? in : 0.0);
  ly->outputs = out;
  /* W_l then b_l */
  ly->n_weights = 1;
  ly->weight[0] = (KernWeight) { .offset = p->w_off[l], .rows = p->width[l],
                                 .cols = p->width[l + 1], .has_bias = TRUE,
                                 .bias = p->w_off[l] + (gsize) p->width[l] * p->width[l + 1] };
}

/* ReLU after dense layer l: in place, compares only. */
static void
relu_layer (KernLayer *ly, const MlpPriv *p, int l)
{
  double w = p->width[l + 1];
  g_snprintf (ly->name, sizeof ly->name, "relu%d", l + 1);
  ly->kind = KERN_LAYER_ELEMENTWISE;
  ly->param_offset = p->w_off[l + 1];
  ly->params = 0;
  ly->fwd_bytes = 4.0 * 2.0 * w;       /* reads and writes A */
  ly->bwd_bytes = 4.0 * 3.0 * w;       /* reads dA and A, writes dA */
  ly->activations = 0.0;               /* shares fc's output */
  ly->outputs = w;
}

/* The loss on k outputs: the backend op plus the host's mean of the row
 * losses (n - 1 adds and a divide, so 1 per row and nothing fixed) and
 * scale = 1/n (1, fixed, backward). */
static void
loss_layer (KernLayer *ly, const MlpPriv *p)
{
  double k = p->width[p->n_dense];
  gboolean xent = (p->loss == KERN_LOSS_XENT);
  g_strlcpy (ly->name, xent ? "xent" : "mse", sizeof ly->name);
  ly->kind = KERN_LAYER_ELEMENTWISE;
  ly->param_offset = p->n_params;
  ly->params = 0;
  /* xent: 3k + 1 per row in the op; mse: 3k */
  ly->fwd_flops_fixed = 0.0;
  ly->fwd_flops = (xent ? 3.0 * k + 1.0 : 3.0 * k) + 1.0;
  /* xent: k + 2 per row; mse: k */
  ly->bwd_flops_fixed = 1.0;
  ly->bwd_flops = xent ? k + 2.0 : k;
  /* reads Z and the label, writes the row loss, which the mean reads */
  ly->fwd_bytes = 4.0 * (k + 3.0);
  /* writes dZ over Z */
  ly->bwd_bytes = 4.0 * k;
  ly->activations = 0.0;
  ly->outputs = 0.0;
}

/* Creates a dense network d -> hidden[0] -> ... -> hidden[n_hidden-1] -> k
 * (kernels.h).  d, k and every hidden width >= 1; hidden may be NULL when
 * n_hidden = 0.  `be` is borrowed and must outlive the model; NULL gives
 * the model a private CPU backend.  The model's name is "softmax" or
 * "linear" without hidden layers (XENT or MSE), "mlp" otherwise.  Its
 * layer table is filled here; scratch starts empty and grows with the
 * largest batch.  Free with kern_model_free(). */
KernModel *
kern_mlp_new (int d, const int *hidden, int n_hidden, int k, KernLoss loss,
              KernBackend *be)
{
  g_return_val_if_fail (d >= 1 && k >= 1 && n_hidden >= 0, NULL);
  g_return_val_if_fail (n_hidden == 0 || hidden != NULL, NULL);
  g_return_val_if_fail (loss == KERN_LOSS_XENT || loss == KERN_LOSS_MSE, NULL);
  for (int i = 0; i < n_hidden; i++)
    g_return_val_if_fail (hidden[i] >= 1, NULL);

  MlpPriv *p = g_new0 (MlpPriv, 1);
  p->own_be = (be == NULL);
  p->be = be != NULL ? be : kern_backend_cpu_new ();
  p->host = strcmp (p->be->ops->name, "cpu") == 0;
  p->loss = loss;
  p->n_dense = n_hidden + 1;
  p->width = g_new (int, p->n_dense + 1);
  p->w_off = g_new (gsize, p->n_dense);
  p->act = g_new0 (float *, p->n_dense);
  p->width[0] = d;
  for (int i = 0; i < n_hidden; i++)
    {
      p->width[i + 1] = hidden[i];
      p->max_hidden = MAX (p->max_hidden, hidden[i]);
    }
  p->width[p->n_dense] = k;
  for (int l = 0; l < p->n_dense; l++)
    {
      p->w_off[l] = p->n_params;
      p->n_params += (gsize) p->width[l] * p->width[l + 1] + p->width[l + 1];
    }
  if (!p->host)
    p->params_dev = p->be->ops->alloc (p->be, p->n_params);

  KernModel *m = g_new0 (KernModel, 1);
  m->ops = n_hidden > 0 ? &mlp_ops : loss == KERN_LOSS_XENT ? &softmax_ops
                                                             : &linear_ops;
  m->d = d;
  m->k = k;
  m->priv = p;
  m->n_layers = 2 * n_hidden + 2;
  m->layers = g_new0 (KernLayer, m->n_layers);
  int i = 0;
  for (int l = 0; l < p->n_dense; l++)
    {
      dense_layer (&m->layers[i++], p, l);
      if (l < n_hidden)
        relu_layer (&m->layers[i++], p, l);
    }
  loss_layer (&m->layers[i++], p);
  g_assert (i == m->n_layers);
  return m;
}

/* The backend of a dense model of this file and (loss != NULL) its loss,
 * for code that runs the same math on the model's own buffers' backend
 * (kernels/tensor.c); NULL for any other model (timing-only ones). */
KernBackend *
kern_mlp_backend (const KernModel *m, KernLoss *loss)
{
  g_return_val_if_fail (m != NULL, NULL);
  if (m->ops != &mlp_ops && m->ops != &softmax_ops && m->ops != &linear_ops)
    return NULL;
  const MlpPriv *p = m->priv;
  if (loss != NULL)
    *loss = p->loss;
  return p->be;
}

/* Softmax regression on the CPU: W (d, k) then b (k), cross-entropy.
 * d, k >= 1 (k = 1 is degenerate: loss 0, gradient 0). */
KernModel *
kern_softmax_new (int d, int k)
{
  return kern_mlp_new (d, NULL, 0, k, KERN_LOSS_XENT, NULL);
}

/* Linear regression onto one-hot targets on the CPU: W (d, k) then b (k),
 * loss the mean over samples of 1/2 sum_j (z_j - onehot_j)^2. */
KernModel *
kern_linear_new (int d, int k)
{
  return kern_mlp_new (d, NULL, 0, k, KERN_LOSS_MSE, NULL);
}
