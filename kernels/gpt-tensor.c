/*
 * gpt-tensor.c — the GPT's real math (gpt.c) split across T tensor-parallel
 * ranks, Megatron style (Shoeybi et al. 2019, section 3): the GPT's
 * tensor_plan_new (tensor.h gives the contract; docs/kernels.md, "Tensor
 * parallelism of the GPT", the formulas).
 *
 * With H heads of hd = D / H, F = 4 D, T dividing H, Dr = D / T, Fr = F / T
 * and the vocabulary cut at v_t = t V / T, rank t holds:
 *
 *   embed     wte rows [v_t, v_{t+1}) (vocabulary), all of wpe
 *   ln_*      everything (replicated)
 *   attn.qkv  the columns of its heads t H / T .. (t + 1) H / T - 1 in each
 *             of q, k and v ([t Dr, (t + 1) Dr) of each D-wide third of
 *             W_qkv and b_qkv): column-split
 *   attn.proj rows [t Dr, (t + 1) Dr) of W_o, all of b_o: row-split
 *   mlp.fc    columns [t Fr, (t + 1) Fr) of W_fc and b_fc: column-split
 *   mlp.proj  rows [t Fr, (t + 1) Fr) of W_p, all of b_p: row-split
 *   lm_head   its vocabulary's logits: wte rows [v_t, v_{t+1}) when tied,
 *             W_head columns [v_t, v_{t+1}) when untied
 *   lm_loss   its vocabulary's part of the cross-entropy
 *
 * Forward, on R = n S rows: the embedding is each rank's lookup of the
 * tokens in its vocabulary (zeros for the others) summed over the ranks
 * (an all-reduce), plus wpe; each block's q, k, v, attention and context
 * of rank t's heads are its own; the output projection's partial products
 * are summed (the first all-reduce of a block), as the second MLP layer's
 * (the second); the logits stay cut by vocabulary, and the loss of a row
 * takes three all-reduces: the maximum logit, the sum of the exponentials
 * (in double), the target's logit (Megatron's parallel cross-entropy).
 * Backward: the gradient at LN_f's output is the sum over ranks of their
 * logits' gradients times their head shard (an all-reduce), and so the
 * gradient at LN_2's and LN_1's outputs, from mlp.fc's and attn.qkv's
 * shards; a row-split layer's input gradient and the embedding's rows are
 * each rank's own.  Each rank's products run through the model's backend
 * on its own shard: in place in the parameter and gradient vectors, but
 * for W_qkv, whose three column blocks are gathered into a matrix of the
 * rank's own (D + 1, 3 Dr) with its bias, and its gradient scattered back.
 * An all-reduce is emulated in place in rank 0's buffer, the other ranks'
 * parts added in rank order 0, 1, ..., T - 1 (a bias is added by rank 0,
 * in its part); rank 0's buffer then stands for every rank's copy, and a
 * replicated layer is computed once.  With T = 1 every step is the one of
 * gpt.c in the same order: the same bits.
 *
 * Scratch grows to the largest batch seen; a plan is used by one thread
 * at a time.
 */
#include "kernels/gpt-private.h"
#include "kernels/tensor.h"
#include "base/fmath.h"

#include <math.h>
#include <string.h>

/* One block's activations (R = cap S rows), whole or per rank. */
typedef struct {
  float *xn1, *mu1, *rs1;  /* LN_1 (R, D), its means and 1/sd (R) */
  float **qkv;             /* (T) (R, 3 Dr) rank t's q | k | v */
  float **att;             /* (T) (cap, H / T, S, S) its heads' probabilities */
  float **ctx;             /* (T) (R, Dr) its heads' context side by side */
  float *mid;              /* (R, D) h + attention */
  float *xn2, *mu2, *rs2;  /* LN_2 */
  float **u, **g;          /* (T) (R, Fr) GELU's input and output */
} GptTpAct;

typedef struct {
  KernTensorPlan base;
  KernBackend *be;         /* the model's (host memory) */
  int V, S, D, H, L, F;
  gboolean untied;
  int hd, Hr, Dr, Fr;      /* head width; heads, width and MLP width per rank */
  int *vcut;               /* (T + 1) v_t = t V / T */
  int lnf, head;           /* layer indices (embed is 0) */
  gsize wte, wpe;          /* offsets of the tables */
  float **wqkv;            /* (T) (D + 1, 3 Dr) block l's W_qkv shard, bias last */
  float **gqkv;            /* (T) (D + 1, 3 Dr) its gradient */

  int cap;                 /* sequences the scratch holds */
  float **res;             /* (L + 1) (R, D) the residual stream */
  GptTpAct *act;           /* (L) */
  float **part;            /* (T) (R, D) ranks' parts of an all-reduce, [0]
                            * unused (rank 0 writes the sum's buffer) */
  float *xnf, *muf, *rsf;  /* LN_f */
  float **logits;          /* (T) (R, v_{t+1} - v_t), then their gradient */
  float *zmax;             /* (T, R) each rank's largest logit of a row */
  double *esum;            /* (T, R) its sum of exponentials */
  float *zy;               /* (T, R) the target's logit less the maximum, or 0 */
  int *tok, *tgt;          /* (R) */
  float *row_loss;         /* (R) */
  float *dres, *dsmall;    /* (R, D) */
  float **dbig;            /* (T) (R, Fr) */
  float **dctx;            /* (T) (R, Dr) */
  float **dqkv;            /* (T) (R, 3 Dr) */
  float *dP;               /* (S, S) */
  double *lnrow;           /* (2 D) */
} GptPlan;

/* --- Layers and scratch ---------------------------------------------------- */

/* Block l's row `r` (a GPT_ROW_*) in the layer table. */
static int
block_row (int l, int r)
{
  return 1 + GPT_BLOCK_ROWS * l + r;
}

static const KernWeight *
weight_of (const GptPlan *p, int layer)
{
  return &p->base.m->layers[layer].weight[0];
}

static gsize
params_of (const GptPlan *p, int layer)
{
  return p->base.m->layers[layer].param_offset;
}

/* T buffers of len floats each. */
static float **
ranks_new (int T, gsize len)
{
  float **a = g_new (float *, T);
  for (int t = 0; t < T; t++)
    a[t] = g_new (float, MAX (len, 1));
  return a;
}

static void
ranks_free (float **a, int T)
{
  for (int t = 0; a != NULL && t < T; t++)
    g_free (a[t]);
  g_free (a);
}

static void
scratch_free (GptPlan *p)
{
  int T = p->base.T;
  for (int l = 0; l <= p->L && p->cap > 0; l++)
    g_free (p->res[l]);
  for (int l = 0; l < p->L && p->cap > 0; l++)
    {
      GptTpAct *a = &p->act[l];
      g_free (a->xn1); g_free (a->mu1); g_free (a->rs1); g_free (a->mid);
      g_free (a->xn2); g_free (a->mu2); g_free (a->rs2);
      ranks_free (a->qkv, T); ranks_free (a->att, T); ranks_free (a->ctx, T);
      ranks_free (a->u, T); ranks_free (a->g, T);
      memset (a, 0, sizeof *a);
    }
  if (p->cap > 0)
    {
      ranks_free (p->part, T); ranks_free (p->logits, T);
      ranks_free (p->dbig, T); ranks_free (p->dctx, T); ranks_free (p->dqkv, T);
      g_free (p->xnf); g_free (p->muf); g_free (p->rsf); g_free (p->zmax); g_free (p->esum);
      g_free (p->zy); g_free (p->tok); g_free (p->tgt); g_free (p->row_loss);
      g_free (p->dres); g_free (p->dsmall);
    }
  p->cap = 0;
}

/* Grows the scratch to n sequences; contents are not kept. */
static void
reserve (GptPlan *p, int n)
{
  if (n <= p->cap)
    return;
  scratch_free (p);
  int T = p->base.T;
  gsize R = (gsize) n * p->S, D = p->D, Dr = p->Dr, Fr = p->Fr;
  for (int l = 0; l <= p->L; l++)
    p->res[l] = g_new (float, R * D);
  for (int l = 0; l < p->L; l++)
    {
      GptTpAct *a = &p->act[l];
      a->xn1 = g_new (float, R * D);
      a->mu1 = g_new (float, R);
      a->rs1 = g_new (float, R);
      a->qkv = ranks_new (T, R * 3 * Dr);
      a->att = ranks_new (T, (gsize) n * p->Hr * p->S * p->S);
      a->ctx = ranks_new (T, R * Dr);
      a->mid = g_new (float, R * D);
      a->xn2 = g_new (float, R * D);
      a->mu2 = g_new (float, R);
      a->rs2 = g_new (float, R);
      a->u = ranks_new (T, R * Fr);
      a->g = ranks_new (T, R * Fr);
    }
  p->part = ranks_new (T, R * D);
  p->logits = g_new (float *, T);
  for (int t = 0; t < T; t++)
    p->logits[t] = g_new (float, R * (gsize) (p->vcut[t + 1] - p->vcut[t]));
  p->xnf = g_new (float, R * D);
  p->muf = g_new (float, R);
  p->rsf = g_new (float, R);
  p->zmax = g_new (float, (gsize) T * R);
  p->esum = g_new (double, (gsize) T * R);
  p->zy = g_new (float, (gsize) T * R);
  p->tok = g_new (int, R);
  p->tgt = g_new (int, R);
  p->row_loss = g_new (float, R);
  p->dres = g_new (float, R * D);
  p->dsmall = g_new (float, R * D);
  p->dbig = ranks_new (T, R * Fr);
  p->dctx = ranks_new (T, R * Dr);
  p->dqkv = ranks_new (T, R * 3 * Dr);
  p->cap = n;
}

/* dst += src[1] + ... + src[T - 1] in rank order, len floats each, where
 * dst holds rank 0's part: the all-reduce, in place. */
static void
all_reduce (GptPlan *p, float *dst, gsize len)
{
  for (int t = 1; t < p->base.T; t++)
    p->be->ops->sgd (p->be, dst, p->part[t], len, -1.0f);
}

/* Where rank t's part of a sum goes: rank 0's straight into the sum. */
static float *
part_of (GptPlan *p, int t, float *sum)
{
  return t == 0 ? sum : p->part[t];
}

/* Rank t's shard of block l's W_qkv and b_qkv into wqkv[t]: the columns
 * [t Dr, (t + 1) Dr) of q, k and v side by side, the bias as the last
 * row. */
static void
gather_qkv (GptPlan *p, const float *P, int l, int t)
{
  const KernWeight *w = weight_of (p, block_row (l, GPT_ROW_QKV));
  int D = p->D, Dr = p->Dr;
  for (int i = 0; i <= D; i++)
    {
      const float *src = P + (i < D ? w->offset + (gsize) i * 3 * D : w->bias);
      for (int c = 0; c < 3; c++)
        memcpy (p->wqkv[t] + (gsize) i * 3 * Dr + c * Dr, src + c * D + (gsize) t * Dr,
                (gsize) Dr * sizeof (float));
    }
}

/* Rank t's W_qkv and b_qkv gradient from gqkv[t] into its place in G. */
static void
scatter_qkv (GptPlan *p, float *G, int l, int t)
{
  const KernWeight *w = weight_of (p, block_row (l, GPT_ROW_QKV));
  int D = p->D, Dr = p->Dr;
  for (int i = 0; i <= D; i++)
    {
      float *dst = G + (i < D ? w->offset + (gsize) i * 3 * D : w->bias);
      for (int c = 0; c < 3; c++)
        memcpy (dst + c * D + (gsize) t * Dr, p->gqkv[t] + (gsize) i * 3 * Dr + c * Dr,
                (gsize) Dr * sizeof (float));
    }
}

/* --- Forward ----------------------------------------------------------------- */

/* res[0]: each rank's rows of wte for the tokens in its vocabulary, zeros
 * for the others, summed over the ranks, then wpe (whole everywhere). */
static void
embed_forward (GptPlan *p, const float *P, int R)
{
  int D = p->D;
  for (int t = 0; t < p->base.T; t++)
    {
      float *out = part_of (p, t, p->res[0]);
      for (int r = 0; r < R; r++)
        {
          int s = p->tok[r];
          float *o = out + (gsize) r * D;
          if (s >= p->vcut[t] && s < p->vcut[t + 1])
            memcpy (o, P + p->wte + (gsize) s * D, (gsize) D * sizeof (float));
          else
            memset (o, 0, (gsize) D * sizeof (float));
        }
    }
  all_reduce (p, p->res[0], (gsize) R * D);
  for (int r = 0; r < R; r++)
    {
      const float *q = P + p->wpe + (gsize) (r % p->S) * D;
      for (int j = 0; j < D; j++)
        p->res[0][(gsize) r * D + j] += q[j];
    }
}

/* Rank t's attention over its heads, n sequences: from qkv[t] to ctx[t]. */
static void
attn_forward (GptPlan *p, GptTpAct *a, int t, int n)
{
  KernBackend *be = p->be;
  int S = p->S, hd = p->hd, Dr = p->Dr, q3 = 3 * Dr;
  double scale = 1.0 / sqrt ((double) hd);
  for (int b = 0; b < n; b++)
    for (int h = 0; h < p->Hr; h++)
      {
        const float *Q = a->qkv[t] + (gsize) b * S * q3 + h * hd;   /* (S, hd), stride 3 Dr */
        const float *K = Q + Dr, *Vv = Q + 2 * Dr;
        float *Pm = a->att[t] + ((gsize) b * p->Hr + h) * S * S;
        be->ops->gemm (be, FALSE, TRUE, S, S, hd, 1.0f, Q, q3, K, q3, 0.0f, Pm, S);
        for (int i = 0; i < S; i++)
          kern_gpt_causal_softmax_row (Pm + (gsize) i * S, i, S, scale);
        be->ops->gemm (be, FALSE, FALSE, S, hd, S, 1.0f, Pm, S, Vv, q3, 0.0f,
                       a->ctx[t] + (gsize) b * S * Dr + h * hd, Dr);
      }
}

/* A row-split layer's output Z (R, out) = b + sum_t A_t W_t, A_t (R, part)
 * rank t's activations, W_t rows [t part, (t + 1) part) of W at `w` (in,
 * out), its bias at `bias`: rank 0's part with the bias, then the
 * all-reduce. */
static void
row_forward (GptPlan *p, const float *P, const KernWeight *w, float *const *A, int part,
             int R, float *Z)
{
  KernBackend *be = p->be;
  int out = w->cols;
  be->ops->fill_rows (be, Z, P + w->bias, R, out);
  for (int t = 0; t < p->base.T; t++)
    be->ops->gemm (be, FALSE, FALSE, R, out, part, 1.0f, A[t], part,
                   P + w->offset + (gsize) t * part * out, out, t == 0 ? 1.0f : 0.0f,
                   part_of (p, t, Z), out);
  all_reduce (p, Z, (gsize) R * out);
}

/* Block l forward on n sequences: res[l] -> res[l + 1]. */
static void
block_forward (GptPlan *p, const float *P, int l, int n)
{
  KernBackend *be = p->be;
  GptTpAct *a = &p->act[l];
  int D = p->D, F = p->F, Dr = p->Dr, Fr = p->Fr, R = n * p->S;
  gsize RD = (gsize) R * D;
  const float *h = p->res[l];
  gsize ln1 = params_of (p, block_row (l, GPT_ROW_LN1));
  gsize ln2 = params_of (p, block_row (l, GPT_ROW_LN2));
  const KernWeight *fc = weight_of (p, block_row (l, GPT_ROW_FC));
  kern_gpt_ln_forward (h, P + ln1, P + ln1 + D, R, D, a->xn1, a->mu1, a->rs1);
  for (int t = 0; t < p->base.T; t++)
    {
      gather_qkv (p, P, l, t);
      be->ops->fill_rows (be, a->qkv[t], p->wqkv[t] + (gsize) D * 3 * Dr, R, 3 * Dr);
      be->ops->gemm (be, FALSE, FALSE, R, 3 * Dr, D, 1.0f, a->xn1, D, p->wqkv[t], 3 * Dr,
                     1.0f, a->qkv[t], 3 * Dr);
      attn_forward (p, a, t, n);
    }
  row_forward (p, P, weight_of (p, block_row (l, GPT_ROW_PROJ)), a->ctx, Dr, R, a->mid);
  for (gsize i = 0; i < RD; i++)
    a->mid[i] += h[i];                                           /* attn.add */
  kern_gpt_ln_forward (a->mid, P + ln2, P + ln2 + D, R, D, a->xn2, a->mu2, a->rs2);
  for (int t = 0; t < p->base.T; t++)
    {
      be->ops->fill_rows (be, a->u[t], P + fc->bias + (gsize) t * Fr, R, Fr);
      be->ops->gemm (be, FALSE, FALSE, R, Fr, D, 1.0f, a->xn2, D,
                     P + fc->offset + (gsize) t * Fr, F, 1.0f, a->u[t], Fr);
      kern_gpt_gelu_forward (a->u[t], a->g[t], (gsize) R * Fr);
    }
  float *out = p->res[l + 1];
  row_forward (p, P, weight_of (p, block_row (l, GPT_ROW_FC2)), a->g, Fr, R, out);
  for (gsize i = 0; i < RD; i++)
    out[i] += a->mid[i];                                         /* mlp.add */
}

/* Rank t's logits (R, v_{t+1} - v_t) from LN_f's output. */
static void
head_forward (GptPlan *p, const float *P, int t, int R)
{
  KernBackend *be = p->be;
  int D = p->D, lo = p->vcut[t], w = p->vcut[t + 1] - lo;
  if (p->untied)
    be->ops->gemm (be, FALSE, FALSE, R, w, D, 1.0f, p->xnf, D,
                   P + weight_of (p, p->head)->offset + lo, p->V, 0.0f, p->logits[t], w);
  else
    be->ops->gemm (be, FALSE, TRUE, R, w, D, 1.0f, p->xnf, D, P + p->wte + (gsize) lo * D, D,
                   0.0f, p->logits[t], w);
}

/* The cross-entropy of every row over logits cut by vocabulary, its
 * gradient (times `scale`, 0 = none) in place of the logits: each rank's
 * maximum, then the largest (an all-reduce); each rank's sum of exp(z -
 * max) in double, summed in rank order (an all-reduce); the target's
 * logit less the maximum from the rank that holds it (an all-reduce of
 * one non-zero and zeros).  With T = 1, the CPU backend's softmax_xent
 * step for step. */
static void
loss_forward (GptPlan *p, int R, float scale)
{
  int T = p->base.T;
  for (int t = 0; t < T; t++)
    {
      int lo = p->vcut[t], w = p->vcut[t + 1] - lo;
      for (int r = 0; r < R; r++)
        {
          const float *z = p->logits[t] + (gsize) r * w;
          float mx = z[0];
          for (int j = 1; j < w; j++)
            mx = z[j] > mx ? z[j] : mx;
          p->zmax[(gsize) t * R + r] = mx;
        }
    }
  for (int r = 0; r < R; r++)                                   /* all-reduce: max */
    for (int t = 1; t < T; t++)
      p->zmax[r] = MAX (p->zmax[r], p->zmax[(gsize) t * R + r]);
  for (int t = 0; t < T; t++)
    {
      int lo = p->vcut[t], w = p->vcut[t + 1] - lo;
      for (int r = 0; r < R; r++)
        {
          float *z = p->logits[t] + (gsize) r * w;
          float mx = p->zmax[r], zy = 0.0f;
          double s = 0.0;
          for (int j = 0; j < w; j++)
            {
              float d = z[j] - mx;
              if (lo + j == p->tgt[r])
                zy = d;
              float e = base_expf (d);
              s = j == 0 ? e : s + e;
              if (scale != 0.0f)
                z[j] = e;
            }
          p->esum[(gsize) t * R + r] = s;
          p->zy[(gsize) t * R + r] = zy;
        }
    }
  for (int r = 0; r < R; r++)                                   /* all-reduce: sums */
    for (int t = 1; t < T; t++)
      {
        p->esum[r] += p->esum[(gsize) t * R + r];
        p->zy[r] += p->zy[(gsize) t * R + r];
      }
  for (int r = 0; r < R; r++)
    p->row_loss[r] = (float) (base_log (p->esum[r]) - p->zy[r]);
  if (scale == 0.0f)
    return;
  for (int t = 0; t < T; t++)
    {
      int lo = p->vcut[t], w = p->vcut[t + 1] - lo;
      for (int r = 0; r < R; r++)
        {
          float *z = p->logits[t] + (gsize) r * w;
          float k = (float) (scale / p->esum[r]);
          for (int j = 0; j < w; j++)
            z[j] *= k;
          if (p->tgt[r] >= lo && p->tgt[r] < lo + w)
            z[p->tgt[r] - lo] -= scale;
        }
    }
}

/* --- Backward ---------------------------------------------------------------- */

/* A column-split layer's input gradient dA (R, D) = sum_t dZ_t W_t^T,
 * dZ_t (R, part) at rank t's outputs, W_t (D, part) its shard at Wt[t]
 * with rows `ldw` floats apart (or at W + t part when Wt is NULL): rank
 * 0's part straight into dA, then the all-reduce. */
static void
column_input_grad (GptPlan *p, float *const *dZ, int part, const float *W, int ldw,
                   float *const *Wt, int R, float *dA)
{
  for (int t = 0; t < p->base.T; t++)
    p->be->ops->gemm (p->be, FALSE, TRUE, R, p->D, part, 1.0f, dZ[t], part,
                      Wt != NULL ? Wt[t] : W + (gsize) t * part, ldw, 0.0f,
                      part_of (p, t, dA), p->D);
  all_reduce (p, dA, (gsize) R * p->D);
}

/* A row-split layer's gradients from dZ (R, out), the gradient at its
 * output: rank t's dW_t = A_t^T dZ into G at its rows, the bias once
 * (rank 0), and the gradient at its input dA_t = dZ W_t^T (R, part),
 * each rank's own. */
static void
row_backward (GptPlan *p, const float *P, float *G, const KernWeight *w, float *const *A,
              int part, const float *dZ, int R, float *const *dA)
{
  KernBackend *be = p->be;
  int out = w->cols;
  for (int t = 0; t < p->base.T; t++)
    {
      gsize rows = w->offset + (gsize) t * part * out;
      be->ops->gemm (be, TRUE, FALSE, part, out, R, 1.0f, A[t], part, dZ, out, 0.0f, G + rows,
                     out);
      if (t == 0)
        be->ops->col_sum (be, dZ, R, out, G + w->bias);
      be->ops->gemm (be, FALSE, TRUE, R, part, out, 1.0f, dZ, out, P + rows, out, 0.0f, dA[t],
                     part);
    }
}

/* Rank t's attention backward over its heads: dctx[t] to dqkv[t]. */
static void
attn_backward (GptPlan *p, const GptTpAct *a, int t, int n)
{
  KernBackend *be = p->be;
  int S = p->S, hd = p->hd, Dr = p->Dr, q3 = 3 * Dr;
  double scale = 1.0 / sqrt ((double) hd);
  for (int b = 0; b < n; b++)
    for (int h = 0; h < p->Hr; h++)
      {
        gsize r0 = (gsize) b * S;
        const float *Q = a->qkv[t] + r0 * q3 + h * hd, *K = Q + Dr, *Vv = Q + 2 * Dr;
        const float *Pm = a->att[t] + ((gsize) b * p->Hr + h) * S * S;
        const float *dC = p->dctx[t] + r0 * Dr + h * hd;       /* (S, hd), stride Dr */
        float *dQ = p->dqkv[t] + r0 * q3 + h * hd, *dK = dQ + Dr, *dV = dQ + 2 * Dr;
        be->ops->gemm (be, FALSE, TRUE, S, S, hd, 1.0f, dC, Dr, Vv, q3, 0.0f, p->dP, S);
        be->ops->gemm (be, TRUE, FALSE, S, hd, S, 1.0f, Pm, S, dC, Dr, 0.0f, dV, q3);
        kern_gpt_causal_softmax_backward (Pm, p->dP, S, scale);
        be->ops->gemm (be, FALSE, FALSE, S, hd, S, 1.0f, p->dP, S, K, q3, 0.0f, dQ, q3);
        be->ops->gemm (be, TRUE, FALSE, S, hd, S, 1.0f, p->dP, S, Q, q3, 0.0f, dK, q3);
      }
}

/* Block l backward: dres holds dL/d res[l + 1] and becomes dL/d res[l]. */
static void
block_backward (GptPlan *p, const float *P, float *G, int l, int n)
{
  KernBackend *be = p->be;
  GptTpAct *a = &p->act[l];
  int D = p->D, F = p->F, Dr = p->Dr, Fr = p->Fr, R = n * p->S;
  gsize ln1 = params_of (p, block_row (l, GPT_ROW_LN1));
  gsize ln2 = params_of (p, block_row (l, GPT_ROW_LN2));
  const KernWeight *fc = weight_of (p, block_row (l, GPT_ROW_FC));
  row_backward (p, P, G, weight_of (p, block_row (l, GPT_ROW_FC2)), a->g, Fr, p->dres, R,
                p->dbig);
  for (int t = 0; t < p->base.T; t++)
    {
      kern_gpt_gelu_backward (p->dbig[t], a->u[t], (gsize) R * Fr);
      be->ops->gemm (be, TRUE, FALSE, D, Fr, R, 1.0f, a->xn2, D, p->dbig[t], Fr, 0.0f,
                     G + fc->offset + (gsize) t * Fr, F);
      be->ops->col_sum (be, p->dbig[t], R, Fr, G + fc->bias + (gsize) t * Fr);
    }
  column_input_grad (p, p->dbig, Fr, P + fc->offset, F, NULL, R, p->dsmall);
  memset (G + ln2, 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, a->mid, P + ln2, a->mu2, a->rs2, R, D, G + ln2,
                        G + ln2 + D, p->dres, p->lnrow);        /* dres = dL/d mid */
  row_backward (p, P, G, weight_of (p, block_row (l, GPT_ROW_PROJ)), a->ctx, Dr, p->dres, R,
                p->dctx);
  for (int t = 0; t < p->base.T; t++)
    {
      attn_backward (p, a, t, n);
      gather_qkv (p, P, l, t);
      be->ops->gemm (be, TRUE, FALSE, D, 3 * Dr, R, 1.0f, a->xn1, D, p->dqkv[t], 3 * Dr, 0.0f,
                     p->gqkv[t], 3 * Dr);
      be->ops->col_sum (be, p->dqkv[t], R, 3 * Dr, p->gqkv[t] + (gsize) D * 3 * Dr);
      scatter_qkv (p, G, l, t);
    }
  column_input_grad (p, p->dqkv, 3 * Dr, NULL, 3 * Dr, p->wqkv, R, p->dsmall);
  memset (G + ln1, 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, p->res[l], P + ln1, a->mu1, a->rs1, R, D, G + ln1,
                        G + ln1 + D, p->dres, p->lnrow);        /* dres = dL/d res[l] */
}

/* From the logits' gradient to G (n_params): the head's shards, LN_f, the
 * blocks from the last, the embedding's rows on the ranks that hold them
 * and wpe (whole). */
static void
backward (GptPlan *p, const float *P, float *G, int n)
{
  KernBackend *be = p->be;
  int D = p->D, V = p->V, R = n * p->S, T = p->base.T;
  g_autofree float **dA = g_new (float *, T);
  for (int t = 0; t < T; t++)
    {
      int lo = p->vcut[t], w = p->vcut[t + 1] - lo;
      float *tab = G + p->wte + (gsize) lo * D;                 /* its rows of wte */
      dA[t] = part_of (p, t, p->dsmall);
      if (p->untied)
        {
          gsize head = weight_of (p, p->head)->offset + lo;
          be->ops->gemm (be, TRUE, FALSE, D, w, R, 1.0f, p->xnf, D, p->logits[t], w, 0.0f,
                         G + head, V);
          be->ops->gemm (be, FALSE, TRUE, R, D, w, 1.0f, p->logits[t], w, P + head, V, 0.0f,
                         dA[t], D);
          memset (tab, 0, (gsize) w * D * sizeof (float));
        }
      else
        {
          be->ops->gemm (be, TRUE, FALSE, w, D, R, 1.0f, p->logits[t], w, p->xnf, D, 0.0f, tab,
                         D);
          be->ops->gemm (be, FALSE, FALSE, R, D, w, 1.0f, p->logits[t], w,
                         P + p->wte + (gsize) lo * D, D, 0.0f, dA[t], D);
        }
    }
  all_reduce (p, p->dsmall, (gsize) R * D);
  gsize lnf = params_of (p, p->lnf);
  memset (p->dres, 0, (gsize) R * D * sizeof (float));
  memset (G + lnf, 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, p->res[p->L], P + lnf, p->muf, p->rsf, R, D, G + lnf,
                        G + lnf + D, p->dres, p->lnrow);
  for (int l = p->L - 1; l >= 0; l--)
    block_backward (p, P, G, l, n);
  /* the embedding: wpe whole on every rank, wte's rows on their rank, each
   * row's sum in the order of the batch's rows as gpt.c adds them */
  memset (G + p->wpe, 0, (gsize) p->S * D * sizeof (float));
  for (int r = 0; r < R; r++)
    {
      float *dq = G + p->wpe + (gsize) (r % p->S) * D;
      const float *d = p->dres + (gsize) r * D;
      for (int j = 0; j < D; j++)
        dq[j] += d[j];
    }
  for (int t = 0; t < T; t++)
    for (int r = 0; r < R; r++)
      {
        int s = p->tok[r];
        if (s < p->vcut[t] || s >= p->vcut[t + 1])
          continue;
        float *dt = G + p->wte + (gsize) s * D;
        const float *d = p->dres + (gsize) r * D;
        for (int j = 0; j < D; j++)
          dt[j] += d[j];
      }
}

/* --- The plan's operations ------------------------------------------------------ */

/* One group of n sequences: its mean loss and, where grad is not NULL,
 * its gradient. */
static double
loss_grad_one (GptPlan *p, const float *P, const float *x, int n, float *grad)
{
  int R = n * p->S;
  reserve (p, n);
  g_return_val_if_fail (kern_gpt_read_tokens (x, n, p->S, p->V, p->tok, p->tgt), NAN);
  embed_forward (p, P, R);
  for (int l = 0; l < p->L; l++)
    block_forward (p, P, l, n);
  gsize lnf = params_of (p, p->lnf);
  kern_gpt_ln_forward (p->res[p->L], P + lnf, P + lnf + p->D, R, p->D, p->xnf, p->muf,
                       p->rsf);
  for (int t = 0; t < p->base.T; t++)
    head_forward (p, P, t, R);
  loss_forward (p, R, grad != NULL ? 1.0f / (float) R : 0.0f);
  double total = p->row_loss[0];
  for (int r = 1; r < R; r++)
    total += p->row_loss[r];
  if (grad != NULL)
    backward (p, P, grad, n);
  return total / R;
}

/* Each group on its own, as gpt.c's loss_grad_groups. */
static void
gpt_plan_loss_grad_groups (KernTensorPlan *base, const float *params, const float *x,
                           const int *y G_GNUC_UNUSED, int n, int groups, float *const *grads,
                           double *losses)
{
  GptPlan *p = (GptPlan *) base;
  g_return_if_fail (n <= G_MAXINT / p->S);
  for (int g = 0; g < groups; g++)
    losses[g] = loss_grad_one (p, params, x + (gsize) g * n * base->m->d, n,
                               grads != NULL ? grads[g] : NULL);
}

/* Rank t's part of layer i (tensor.h). */
static void
gpt_plan_cut (const KernTensorPlan *base, int i, int t, int *lo, int *hi)
{
  const GptPlan *p = (const GptPlan *) base;
  const KernLayer *ly = &base->m->layers[i];
  int part = 0;
  *lo = *hi = 0;
  switch (base->split[i])
    {
    case KERN_TENSOR_VOCABULARY:
    case KERN_TENSOR_COLUMN:
      if (i == 0 || i >= p->head)
        {
          *lo = p->vcut[t];
          *hi = p->vcut[t + 1];
          return;
        }
      part = ly->weight[0].cols / (i == block_row ((i - 1) / GPT_BLOCK_ROWS, GPT_ROW_QKV)
                                   ? 3 * base->T : base->T);
      break;
    case KERN_TENSOR_ROW:
      part = ly->weight[0].rows / base->T;
      break;
    case KERN_TENSOR_REPLICATED:
      *hi = p->D;                                /* a layer norm's features */
      return;
    default:
      return;
    }
  *lo = t * part;
  *hi = *lo + part;
}

/* What rank t holds: its vocabulary's rows of wte (and columns of an
 * untied head), wpe and the layer norms whole, 1/T of every block's
 * matrices, the column-split biases' 1/T and the row-split ones whole. */
static gsize
gpt_plan_rank_params (const KernTensorPlan *base, int t)
{
  const GptPlan *p = (const GptPlan *) base;
  gsize D = p->D, Dr = p->Dr, Fr = p->Fr, Vt = p->vcut[t + 1] - p->vcut[t];
  gsize block = 2 * D + (D + 1) * 3 * Dr + Dr * D + D + 2 * D + (D + 1) * Fr + Fr * D + D;
  return Vt * D + (gsize) p->S * D + (gsize) p->L * block + 2 * D + (p->untied ? D * Vt : 0);
}

static void
gpt_plan_free (KernTensorPlan *base)
{
  GptPlan *p = (GptPlan *) base;
  scratch_free (p);
  ranks_free (p->wqkv, base->T);
  ranks_free (p->gqkv, base->T);
  g_free (p->res);
  g_free (p->act);
  g_free (p->vcut);
  g_free (p->dP);
  g_free (p->lnrow);
  kern_tensor_plan_clear (base);
  g_free (p);
}

static const KernTensorPlanOps gpt_plan_ops = {
  .loss_grad_groups = gpt_plan_loss_grad_groups,
  .cut = gpt_plan_cut,
  .rank_params = gpt_plan_rank_params,
  .free = gpt_plan_free,
};

/* --- The plan -------------------------------------------------------------------- */

/* The splits of the layer table and the all-reduces of a step, in the
 * order the ranks issue them, floats per sample: forward, the embedding's
 * sum, each block's two row-split outputs, the loss's maximum, sum and
 * target logit (one value per position each); backward, the head's input
 * gradient, then each block's mlp.fc and attn.qkv input gradients from
 * the last block. */
static void
list_plan (GptPlan *p)
{
  KernTensorPlan *b = &p->base;
  int S = p->S, D = p->D, loss = p->head + 1;
  static const KernTensorSplit block[GPT_BLOCK_ROWS] = {
    [GPT_ROW_LN1] = KERN_TENSOR_REPLICATED, [GPT_ROW_QKV] = KERN_TENSOR_COLUMN,
    [GPT_ROW_PROJ] = KERN_TENSOR_ROW, [GPT_ROW_LN2] = KERN_TENSOR_REPLICATED,
    [GPT_ROW_FC] = KERN_TENSOR_COLUMN, [GPT_ROW_FC2] = KERN_TENSOR_ROW,
  };
  b->split[0] = KERN_TENSOR_VOCABULARY;
  for (int l = 0; l < p->L; l++)
    for (int r = 0; r < GPT_BLOCK_ROWS; r++)
      b->split[block_row (l, r)] = block[r];          /* the rest: NONE */
  b->split[p->lnf] = KERN_TENSOR_REPLICATED;
  b->split[p->head] = KERN_TENSOR_COLUMN;
  b->split[loss] = KERN_TENSOR_VOCABULARY;
  if (b->T == 1)
    return;
#define AR(pass_, layer_, floats_) \
  (b->ar[b->n_fwd + b->n_bwd] = (KernTensorAllReduce) { (pass_), (layer_), (floats_) })
  AR (KERN_TENSOR_FORWARD, 0, S * D), b->n_fwd++;
  for (int l = 0; l < p->L; l++)
    {
      AR (KERN_TENSOR_FORWARD, block_row (l, GPT_ROW_PROJ), S * D), b->n_fwd++;
      AR (KERN_TENSOR_FORWARD, block_row (l, GPT_ROW_FC2), S * D), b->n_fwd++;
    }
  for (int i = 0; i < 3; i++)
    AR (KERN_TENSOR_FORWARD, loss, S), b->n_fwd++;
  AR (KERN_TENSOR_BACKWARD, p->head, S * D), b->n_bwd++;
  for (int l = p->L - 1; l >= 0; l--)
    {
      AR (KERN_TENSOR_BACKWARD, block_row (l, GPT_ROW_FC), S * D), b->n_bwd++;
      AR (KERN_TENSOR_BACKWARD, block_row (l, GPT_ROW_QKV), S * D), b->n_bwd++;
    }
#undef AR
}

/* The GPT's plan of T ranks (gpt-private.h). */
KernTensorPlan *
kern_gpt_tensor_plan_new (const KernModel *m, KernBackend *be, const KernGptShape *shape,
                          int T, GError **error)
{
  g_return_val_if_fail (m != NULL && be != NULL && shape != NULL && T >= 1, NULL);
  int V = shape->V, S = shape->S, D = shape->D, H = shape->H, L = shape->L;
  gboolean untied = shape->untied;
  g_return_val_if_fail (m->n_layers == 1 + GPT_BLOCK_ROWS * L + 3, NULL);
  if (H % T != 0)
    {
      g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
                   "[policy] tensor: %d ranks do not divide the %d attention heads of kind = "
                   "gpt, which tensor parallelism shares out; fix: set tensor to a divisor of "
                   "%d, or change [model] heads", T, H, H);
      return NULL;
    }
  if (T > V)
    {
      g_set_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS,
                   "[policy] tensor: %d ranks exceed the %d symbols of the vocabulary, which "
                   "tensor parallelism shares out; fix: set tensor to at most %d, or raise "
                   "[model] vocabulary", T, V, V);
      return NULL;
    }
  GptPlan *p = g_new0 (GptPlan, 1);
  kern_tensor_plan_init (&p->base, &gpt_plan_ops, m, T, 6 + 4 * L);
  p->be = be;
  p->V = V, p->S = S, p->D = D, p->H = H, p->L = L, p->F = 4 * D;
  p->untied = untied;
  p->hd = D / H;
  p->Hr = H / T;
  p->Dr = D / T;
  p->Fr = p->F / T;
  p->vcut = g_new (int, T + 1);
  for (int t = 0; t <= T; t++)
    p->vcut[t] = (int) ((gint64) t * V / T);
  p->lnf = block_row (L, 0);
  p->head = p->lnf + 1;
  p->wte = m->layers[0].weight[0].offset;
  p->wpe = m->layers[0].weight[1].offset;
  p->wqkv = ranks_new (T, (gsize) (D + 1) * 3 * p->Dr);
  p->gqkv = ranks_new (T, (gsize) (D + 1) * 3 * p->Dr);
  p->res = g_new0 (float *, L + 1);
  p->act = g_new0 (GptTpAct, L);
  p->dP = g_new (float, (gsize) S * S);
  p->lnrow = g_new (double, 2 * (gsize) D);
  list_plan (p);
  return &p->base;
}
