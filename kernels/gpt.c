/*
 * gpt.c — `kind = gpt`: a small decoder-only transformer with real math on
 * the CPU backend, trained character-level on the synthetic language
 * (language.c).
 *
 * Shape: V symbols (vocabulary), S positions (sequence), width D, H heads
 * of hd = D / H, L blocks, MLP width F = 4 D.  A sample is a row of S + 1
 * symbols x_0 .. x_S (floats holding exact integers); the model predicts
 * x_{t+1} from x_0 .. x_t for t = 0 .. S - 1, so a batch of n samples is T
 * = n S rows of predictions.  Parameters, in the order of the rows of the
 * timing transformer (transformer.c), all row-major:
 *
 *   wte (V, D), wpe (S, D)
 *   per block: ln_1 gamma, beta (D each); W_qkv (D, 3D), b_qkv (3D);
 *     W_o (D, D), b_o (D); ln_2 gamma, beta; W_fc (D, F), b_fc (F);
 *     W_p (F, D), b_p (D)
 *   ln_f gamma, beta; with head = untied, W_head (D, V)
 *
 * Forward, rows r = (sample b, position t):
 *
 *   h_0[r] = wte[x_r] + wpe[t]
 *   a = LN_1(h_l);  [q k v] = a W_qkv + b_qkv                 (T, 3D)
 *   per sample and head: P = causal softmax(q k^T / sqrt(hd))  (S, S)
 *                        c = P v                               (S, hd)
 *   m = h_l + c W_o + b_o
 *   u = LN_2(m) W_fc + b_fc;  h_{l+1} = m + GELU(u) W_p + b_p
 *   z = LN_f(h_L) wte^T (tied) or LN_f(h_L) W_head (untied)    (T, V)
 *   loss = (1 / T) sum_r [log sum_c exp z_rc - z_r,x_{r+1}]
 *
 * with LN(x) = gamma (x - mu) / sqrt(var + 1e-5) + beta over a row's D
 * features, GELU(u) = u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))), tanh
 * written through exp.  Backward is the chain rule by hand, block by block
 * from the last.  Every matrix product is the backend's GEMM (the
 * fixed-order products by default, so the same bits on every CPU); the
 * attention scores and context are full S x S products per sample and head,
 * the causal mask applied in the softmax (probabilities above the diagonal
 * are 0), as the timing transformer counts them.  Layer norm, GELU and
 * the attention softmax are plain loops in gpt-layers.c (shared with the
 * tensor-parallel split, gpt-tensor.c), the embedding here, in double
 * where they accumulate, with exp from base/fmath.c.  The math needs host
 * buffers: another backend is refused.
 *
 * Costs: the layer table has the timing transformer's rows, names,
 * parameter counts and weight shapes for the same shape, and the same
 * forward FLOPs on every GEMM and attention row; its other rows count what
 * the loops here do (docs/kernels.md, "GPT"), and backward rows count this
 * file's backward (not the timing table's 2 x forward).  flops_forward and
 * flops_backward are the layer sums.
 *
 * Scratch grows to the largest batch seen; a model is used by one thread at
 * a time (clone gives another its own).
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"
#include "kernels/gpt-private.h"
#include "kernels/tensor.h"
#include "kernels/rng.h"
#include "base/fmath.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

#define GPT_INIT_STD 0.02
#define GPT_EVAL_CHUNK 64               /* sequences per evaluation pass */
/* Layer rows: embed, GPT_BLOCK_ROWS (gpt-private.h) per block, ln_f,
 * lm_head, lm_loss. */

/* Offsets of one block's parameters. */
typedef struct {
  gsize ln1, qkv, proj, ln2, fc, fc2;   /* W then b; gamma then beta */
} GptOff;

/* One block's activations for `cap` sequences (T = cap S rows). */
typedef struct {
  float *xn1, *mu1, *rs1;   /* LN_1 out (T, D), its mean and 1/sd (T) */
  float *qkv;               /* (T, 3D) */
  float *att;               /* (cap, H, S, S) probabilities */
  float *ctx;               /* (T, D) heads side by side */
  float *mid;               /* (T, D) h + attention */
  float *xn2, *mu2, *rs2;   /* LN_2 */
  float *u, *g;             /* (T, F) GELU's input and output */
} GptAct;

typedef struct {
  KernBackend *be;
  gboolean own_be;
  int V, S, D, H, L, F;
  gboolean untied;
  gsize n_params, wte, wpe, lnf, head;
  GptOff *off;              /* (L) */

  int cap;                  /* sequences the scratch holds */
  float **res;              /* (L + 1) residual stream (T, D) */
  GptAct *act;              /* (L) */
  float *xnf, *muf, *rsf;   /* LN_f */
  float *logits;            /* (T, V), then dZ */
  int *tok, *tgt;           /* (T) inputs and targets */
  float *row_loss;          /* (T) */
  int *pred;                /* (T) */
  float *dres, *dsmall, *dbig, *dqkv;   /* (T, D), (T, D), (T, F), (T, 3D) */
  float *dP;                /* (S, S) */
  double *lnrow;            /* (2 D) layer-norm backward scratch */
  /* [numerics] activations, from the model's KernNumerics at each call:
   * the embedding's and every block's output, the logits, and the
   * gradients at them, are rounded to `fmt` (those at them scaled by
   * `scale` first and unscaled after) */
  KernFormat fmt;
  float scale;
} GptPriv;

static gboolean gpt_unit_start (const GptPriv *p, int i);

/* --- Scratch ------------------------------------------------------------- */

static void
act_free (GptAct *a)
{
  g_free (a->xn1); g_free (a->mu1); g_free (a->rs1); g_free (a->qkv); g_free (a->att);
  g_free (a->ctx); g_free (a->mid); g_free (a->xn2); g_free (a->mu2); g_free (a->rs2);
  g_free (a->u); g_free (a->g);
  memset (a, 0, sizeof *a);
}

static void
scratch_free (GptPriv *p)
{
  for (int l = 0; l <= p->L && p->res; l++)
    g_free (p->res[l]);
  for (int l = 0; l < p->L && p->act; l++)
    act_free (&p->act[l]);
  g_free (p->xnf); g_free (p->muf); g_free (p->rsf); g_free (p->logits);
  g_free (p->tok); g_free (p->tgt); g_free (p->row_loss); g_free (p->pred);
  g_free (p->dres); g_free (p->dsmall); g_free (p->dbig); g_free (p->dqkv);
}

/* A half's activations for n sequences (gpt_reserve's and the stages'). */
static void
act_alloc (const GptPriv *p, GptAct *a, int n)
{
  gsize T = (gsize) n * p->S, D = p->D, F = p->F;
  a->xn1 = g_new (float, T * D);
  a->mu1 = g_new (float, T);
  a->rs1 = g_new (float, T);
  a->qkv = g_new (float, T * 3 * D);
  a->att = g_new (float, (gsize) n * p->H * p->S * p->S);
  a->ctx = g_new (float, T * D);
  a->mid = g_new (float, T * D);
  a->xn2 = g_new (float, T * D);
  a->mu2 = g_new (float, T);
  a->rs2 = g_new (float, T);
  a->u = g_new (float, T * F);
  a->g = g_new (float, T * F);
}

/* Grows the scratch to n sequences; contents are not kept. */
static void
gpt_reserve (GptPriv *p, int n)
{
  if (n <= p->cap)
    return;
  scratch_free (p);
  gsize T = (gsize) n * p->S, D = p->D, F = p->F;
  for (int l = 0; l <= p->L; l++)
    p->res[l] = g_new (float, T * D);
  for (int l = 0; l < p->L; l++)
    act_alloc (p, &p->act[l], n);
  p->xnf = g_new (float, T * D);
  p->muf = g_new (float, T);
  p->rsf = g_new (float, T);
  p->logits = g_new (float, T * p->V);
  p->tok = g_new (int, T);
  p->tgt = g_new (int, T);
  p->row_loss = g_new (float, T);
  p->pred = g_new (int, T);
  p->dres = g_new (float, T * D);
  p->dsmall = g_new (float, T * D);
  p->dbig = g_new (float, T * F);
  p->dqkv = g_new (float, T * 3 * D);
  p->cap = n;
}

/* --- Dense layers and attention ------------------------------------------ */

/* Z (rows, out) = A (rows, in) W (in, out) + b. */
static void
dense_forward (KernBackend *be, const float *A, const float *W, int rows, int in, int out,
               float *Z)
{
  be->ops->fill_rows (be, Z, W + (gsize) in * out, rows, out);
  be->ops->gemm (be, FALSE, FALSE, rows, out, in, 1.0f, A, in, W, out, 1.0f, Z, out);
}

/* dW = A^T dZ, db = column sums of dZ (both written into G at W's offset),
 * and dA = dZ W^T where dA is not NULL. */
static void
dense_backward (KernBackend *be, const float *A, const float *W, const float *dZ, int rows,
                int in, int out, float *dW, float *dA)
{
  be->ops->gemm (be, TRUE, FALSE, in, out, rows, 1.0f, A, in, dZ, out, 0.0f, dW, out);
  be->ops->col_sum (be, dZ, rows, out, dW + (gsize) in * out);
  if (dA)
    be->ops->gemm (be, FALSE, TRUE, rows, in, out, 1.0f, dZ, out, W, out, 0.0f, dA, in);
}

/* Scores, causal softmax and context of every sample and head. */
static void
attn_forward (GptPriv *p, GptAct *a, int n)
{
  KernBackend *be = p->be;
  int S = p->S, D = p->D, hd = D / p->H, q3 = 3 * D;
  double scale = 1.0 / sqrt ((double) hd);
  for (int b = 0; b < n; b++)
    for (int h = 0; h < p->H; h++)
      {
        const float *Q = a->qkv + (gsize) b * S * q3 + h * hd;   /* (S, hd), stride 3D */
        const float *K = Q + D, *Vv = Q + 2 * D;
        float *P = a->att + ((gsize) b * p->H + h) * S * S;      /* (S, S) */
        be->ops->gemm (be, FALSE, TRUE, S, S, hd, 1.0f, Q, q3, K, q3, 0.0f, P, S);
        for (int i = 0; i < S; i++)
          kern_gpt_causal_softmax_row (P + (gsize) i * S, i, S, scale);
        be->ops->gemm (be, FALSE, FALSE, S, hd, S, 1.0f, P, S, Vv, q3, 0.0f,
                       a->ctx + (gsize) b * S * D + h * hd, D);
      }
}

/* From dctx (T, D) to dqkv (T, 3D). */
static void
attn_backward (GptPriv *p, const GptAct *a, const float *dctx, int n)
{
  KernBackend *be = p->be;
  int S = p->S, D = p->D, hd = D / p->H, q3 = 3 * D;
  double scale = 1.0 / sqrt ((double) hd);
  for (int b = 0; b < n; b++)
    for (int h = 0; h < p->H; h++)
      {
        gsize r0 = (gsize) b * S;
        const float *Q = a->qkv + r0 * q3 + h * hd, *K = Q + D, *Vv = Q + 2 * D;
        const float *P = a->att + ((gsize) b * p->H + h) * S * S;
        const float *dC = dctx + r0 * D + h * hd;               /* (S, hd), stride D */
        float *dQ = p->dqkv + r0 * q3 + h * hd, *dK = dQ + D, *dV = dQ + 2 * D;
        be->ops->gemm (be, FALSE, TRUE, S, S, hd, 1.0f, dC, D, Vv, q3, 0.0f, p->dP, S);
        be->ops->gemm (be, TRUE, FALSE, S, hd, S, 1.0f, P, S, dC, D, 0.0f, dV, q3);
        kern_gpt_causal_softmax_backward (P, p->dP, S, scale);
        be->ops->gemm (be, FALSE, FALSE, S, hd, S, 1.0f, p->dP, S, K, q3, 0.0f, dQ, q3);
        be->ops->gemm (be, TRUE, FALSE, S, hd, S, 1.0f, p->dP, S, Q, q3, 0.0f, dK, q3);
      }
}

/* --- The network --------------------------------------------------------- */

/* Pieces of the network, each on the buffers it is given, so that the
 * whole model (gpt_forward, gpt_backward) and a pipeline stage (the
 * stages below) run the same operations.  Gradients go to G at a
 * parameter's offset less `lo` (0 for the whole model's vector, the
 * stage's first parameter for a stage's). */

/* Block l's attention half (rows ln_1 .. attn.add): a->mid = h +
 * attention(LN_1(h)), h (T, D) the block's input. */
static void
attn_half_forward (GptPriv *p, const float *P, int l, GptAct *a, const float *h, int n)
{
  KernBackend *be = p->be;
  const GptOff *o = &p->off[l];
  int D = p->D, T = n * p->S;
  gsize TD = (gsize) T * D;
  kern_gpt_ln_forward (h, P + o->ln1, P + o->ln1 + D, T, D, a->xn1, a->mu1, a->rs1);
  dense_forward (be, a->xn1, P + o->qkv, T, D, 3 * D, a->qkv);
  attn_forward (p, a, n);
  dense_forward (be, a->ctx, P + o->proj, T, D, D, a->mid);
  for (gsize i = 0; i < TD; i++)
    a->mid[i] += h[i];                                           /* attn.add */
}

/* Block l's MLP half (rows ln_2 .. mlp.add): out = a->mid +
 * MLP(LN_2(a->mid)), rounded as the block's output. */
static void
mlp_half_forward (GptPriv *p, const float *P, int l, GptAct *a, float *out, int n)
{
  KernBackend *be = p->be;
  const GptOff *o = &p->off[l];
  int D = p->D, F = p->F, T = n * p->S;
  gsize TD = (gsize) T * D;
  kern_gpt_ln_forward (a->mid, P + o->ln2, P + o->ln2 + D, T, D, a->xn2, a->mu2, a->rs2);
  dense_forward (be, a->xn2, P + o->fc, T, D, F, a->u);
  kern_gpt_gelu_forward (a->u, a->g, (gsize) T * F);
  dense_forward (be, a->g, P + o->fc2, T, F, D, out);
  for (gsize i = 0; i < TD; i++)
    out[i] += a->mid[i];                                         /* mlp.add */
  kern_round_to (p->fmt, out, TD);                               /* the block's output */
}

/* Block l forward: res[l] -> res[l + 1]. */
static void
block_forward (GptPriv *p, const float *P, int l, int n)
{
  attn_half_forward (p, P, l, &p->act[l], p->res[l], n);
  mlp_half_forward (p, P, l, &p->act[l], p->res[l + 1], n);
}

/* The MLP half's backward: dres holds dL/d(the block's output) and
 * becomes dL/d mid. */
static void
mlp_half_backward (GptPriv *p, const float *P, float *G, gsize lo, int l, const GptAct *a,
                   int n)
{
  KernBackend *be = p->be;
  const GptOff *o = &p->off[l];
  int D = p->D, F = p->F, T = n * p->S;
  kern_round_scaled (p->fmt, p->dres, (gsize) T * D, p->scale);  /* at the block's output */
  dense_backward (be, a->g, P + o->fc2, p->dres, T, F, D, G + (o->fc2 - lo), p->dbig);
  kern_gpt_gelu_backward (p->dbig, a->u, (gsize) T * F);
  dense_backward (be, a->xn2, P + o->fc, p->dbig, T, D, F, G + (o->fc - lo), p->dsmall);
  memset (G + (o->ln2 - lo), 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, a->mid, P + o->ln2, a->mu2, a->rs2, T, D, G + (o->ln2 - lo),
                        G + (o->ln2 - lo) + D, p->dres, p->lnrow);  /* dres = dL/d mid */
}

/* The attention half's backward from dres = dL/d mid to dres = dL/d h,
 * h the block's input. */
static void
attn_half_backward (GptPriv *p, const float *P, float *G, gsize lo, int l, const GptAct *a,
                    const float *h, int n)
{
  KernBackend *be = p->be;
  const GptOff *o = &p->off[l];
  int D = p->D, T = n * p->S;
  dense_backward (be, a->ctx, P + o->proj, p->dres, T, D, D, G + (o->proj - lo), p->dsmall);
  attn_backward (p, a, p->dsmall, n);
  dense_backward (be, a->xn1, P + o->qkv, p->dqkv, T, D, 3 * D, G + (o->qkv - lo), p->dsmall);
  memset (G + (o->ln1 - lo), 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, h, P + o->ln1, a->mu1, a->rs1, T, D, G + (o->ln1 - lo),
                        G + (o->ln1 - lo) + D, p->dres, p->lnrow);  /* dres = dL/d h */
}

/* Block l backward: dres holds dL/d res[l + 1] and becomes dL/d res[l];
 * the block's parameter gradients go to G. */
static void
block_backward (GptPriv *p, const float *P, float *G, int l, int n)
{
  mlp_half_backward (p, P, G, 0, l, &p->act[l], n);
  attn_half_backward (p, P, G, 0, l, &p->act[l], p->res[l], n);
}

/* The tokens and targets of x (n, S + 1) into the scratch; FALSE when a
 * value is not a symbol in [0, V). */
static gboolean
gpt_tokens (GptPriv *p, const float *x, int n)
{
  return kern_gpt_read_tokens (x, n, p->S, p->V, p->tok, p->tgt);
}

/* out (T, D) = wte[tok] + wpe[position], rounded as the embedding's output. */
static void
embed_forward (GptPriv *p, const float *P, const int *tok, int n, float *out)
{
  int S = p->S, D = p->D, T = n * S;
  for (int r = 0; r < T; r++)
    {
      const float *e = P + p->wte + (gsize) tok[r] * D;
      const float *q = P + p->wpe + (gsize) (r % S) * D;
      for (int j = 0; j < D; j++)
        out[(gsize) r * D + j] = e[j] + q[j];                    /* S D a sample */
    }
  kern_round_to (p->fmt, out, (gsize) T * D);                    /* the embedding's output */
}

/* The embedding's backward from dres = dL/d its output: adds onto wte's
 * gradient (zeroed first when untied; tied, the head's is there) and
 * writes wpe's. */
static void
embed_backward (GptPriv *p, float *G, gsize lo, const int *tok, int n)
{
  int S = p->S, D = p->D, T = n * S;
  kern_round_scaled (p->fmt, p->dres, (gsize) T * D, p->scale); /* at the embedding's output */
  if (p->untied)
    memset (G + (p->wte - lo), 0, (gsize) p->V * D * sizeof (float));
  memset (G + (p->wpe - lo), 0, (gsize) S * D * sizeof (float));
  for (int r = 0; r < T; r++)
    {
      float *dt = G + (p->wte - lo) + (gsize) tok[r] * D;
      float *dq = G + (p->wpe - lo) + (gsize) (r % S) * D;
      const float *d = p->dres + (gsize) r * D;
      for (int j = 0; j < D; j++)
        {
          dt[j] += d[j];
          dq[j] += d[j];                                           /* 2 S D a sample */
        }
    }
}

/* logits (T, V) = xnf (T, D) wte^T (tied) or xnf W_head, rounded as the
 * head's output. */
static void
head_forward (GptPriv *p, const float *P, const float *xnf, int n, float *logits)
{
  KernBackend *be = p->be;
  int T = n * p->S, D = p->D;
  if (p->untied)
    be->ops->gemm (be, FALSE, FALSE, T, p->V, D, 1.0f, xnf, D, P + p->head, p->V, 0.0f,
                   logits, p->V);
  else
    be->ops->gemm (be, FALSE, TRUE, T, p->V, D, 1.0f, xnf, D, P + p->wte, D, 0.0f,
                   logits, p->V);
  kern_round_to (p->fmt, logits, (gsize) T * p->V);              /* the head's output */
}

/* The head's backward from the loss gradient in dlogits (T, V), rounded
 * in place: its dW (into wte's gradient when tied, which the embedding
 * then adds onto) and dL/d LN_f's output into dsmall. */
static void
head_backward (GptPriv *p, const float *P, float *G, gsize lo, const float *xnf,
               float *dlogits, int n)
{
  KernBackend *be = p->be;
  int D = p->D, V = p->V, T = n * p->S;
  kern_round_scaled (p->fmt, dlogits, (gsize) T * V, p->scale);   /* at the logits */
  if (p->untied)
    {
      be->ops->gemm (be, TRUE, FALSE, D, V, T, 1.0f, xnf, D, dlogits, V, 0.0f,
                     G + (p->head - lo), V);
      be->ops->gemm (be, FALSE, TRUE, T, D, V, 1.0f, dlogits, V, P + p->head, V, 0.0f,
                     p->dsmall, D);
    }
  else
    {
      be->ops->gemm (be, TRUE, FALSE, V, D, T, 1.0f, dlogits, V, xnf, D, 0.0f,
                     G + (p->wte - lo), D);
      be->ops->gemm (be, FALSE, FALSE, T, D, V, 1.0f, dlogits, V, P + p->wte, D, 0.0f,
                     p->dsmall, D);
    }
}

/* LN_f's backward from dsmall = dL/d its output: dres = dL/d h_L (its
 * input h), its gains' and shifts' gradients into G. */
static void
lnf_backward (GptPriv *p, const float *P, float *G, gsize lo, const float *h, const float *mu,
              const float *rs, int n)
{
  int D = p->D, T = n * p->S;
  memset (p->dres, 0, (gsize) T * D * sizeof (float));
  memset (G + (p->lnf - lo), 0, 2 * (gsize) D * sizeof (float));
  kern_gpt_ln_backward (p->dsmall, h, P + p->lnf, mu, rs, T, D, G + (p->lnf - lo),
                        G + (p->lnf - lo) + D, p->dres, p->lnrow);
}

/* Embedding, blocks, LN_f and the logits of n sequences. */
static void
gpt_forward (GptPriv *p, const float *P, int n)
{
  int D = p->D, T = n * p->S;
  embed_forward (p, P, p->tok, n, p->res[0]);
  for (int l = 0; l < p->L; l++)
    block_forward (p, P, l, n);
  kern_gpt_ln_forward (p->res[p->L], P + p->lnf, P + p->lnf + D, T, D, p->xnf, p->muf, p->rsf);
  head_forward (p, P, p->xnf, n, p->logits);
}

/* Backward from the loss gradient in logits to G (n_params). */
static void
gpt_backward (GptPriv *p, const float *P, float *G, int n)
{
  head_backward (p, P, G, 0, p->xnf, p->logits, n);
  lnf_backward (p, P, G, 0, p->res[p->L], p->muf, p->rsf, n);
  for (int l = p->L - 1; l >= 0; l--)
    block_backward (p, P, G, l, n);
  embed_backward (p, G, 0, p->tok, n);
}

/* Sum of r >= 1 row losses in double: r - 1 adds. */
static double
row_sum (const float *loss, gsize r)
{
  double total = loss[0];
  for (gsize i = 1; i < r; i++)
    total += loss[i];
  return total;
}

static double
gpt_loss_grad (KernModel *m, const float *params, const float *x, const int *y G_GNUC_UNUSED,
               int n, float *grad)
{
  g_return_val_if_fail (m != NULL && params != NULL && x != NULL && n >= 1, NAN);
  GptPriv *p = m->priv;
  g_return_val_if_fail (n <= G_MAXINT / p->S, NAN);
  gpt_reserve (p, n);
  g_return_val_if_fail (gpt_tokens (p, x, n), NAN);
  p->fmt = m->num.activations;
  p->scale = kern_numerics_scale (&m->num);
  gpt_forward (p, params, n);
  int T = n * p->S;
  float scale = grad != NULL ? 1.0f / (float) T : 0.0f;         /* 1 */
  p->be->ops->softmax_xent (p->be, p->logits, p->tgt, T, p->V, scale, p->row_loss, NULL);
  double loss = row_sum (p->row_loss, (gsize) T) / T;           /* T - 1, 1 */
  if (grad != NULL)
    gpt_backward (p, params, grad, n);
  return loss;
}

/* loss_grad_groups (kernels.h): one loss_grad per group. */
static void
gpt_loss_grad_groups (KernModel *m, const float *params, const float *x, const int *y, int n,
                      int groups, float *const *grads, double *losses)
{
  g_return_if_fail (m != NULL && x != NULL && n >= 1 && groups >= 1 && losses != NULL);
  for (int g = 0; g < groups; g++)
    losses[g] = gpt_loss_grad (m, params, x + (gsize) g * n * m->d, y ? y + (gsize) g * n : NULL,
                               n, grads ? grads[g] : NULL);
}

/* Loss per predicted token and next-token argmax accuracy over every
 * position of every sequence of ds. */
static void
gpt_evaluate (KernModel *m, const float *params, const KernDataset *ds, double *loss,
              double *accuracy)
{
  g_return_if_fail (m != NULL && params != NULL && ds != NULL);
  g_return_if_fail (ds->d == m->d && ds->k == m->k);
  GptPriv *p = m->priv;
  double total = 0.0;
  gint64 correct = 0, tokens = 0;
  for (int start = 0; start < ds->n; start += GPT_EVAL_CHUNK)
    {
      int rows = MIN (GPT_EVAL_CHUNK, ds->n - start), T = rows * p->S;
      gpt_reserve (p, rows);
      g_return_if_fail (gpt_tokens (p, ds->x + (gsize) start * m->d, rows));
      p->fmt = m->num.activations;
      gpt_forward (p, params, rows);
      p->be->ops->softmax_xent (p->be, p->logits, p->tgt, T, p->V, 0.0f, p->row_loss, p->pred);
      total += row_sum (p->row_loss, (gsize) T);
      for (int r = 0; r < T; r++)
        correct += p->pred[r] == p->tgt[r];
      tokens += T;
    }
  if (loss)
    *loss = tokens > 0 ? total / (double) tokens : NAN;
  if (accuracy)
    *accuracy = tokens > 0 ? (double) correct / (double) tokens : NAN;
}

static gsize
gpt_n_params (const KernModel *m)
{
  return ((const GptPriv *) m->priv)->n_params;
}

/* GPT-2's initialisation from one (seed, stream) generator, in parameter
 * order: every matrix from N(0, 0.02^2), the residual projections W_o and
 * W_p from N(0, (0.02 / sqrt(2 L))^2), biases 0, layer-norm gammas 1 and
 * betas 0. */
static void
gpt_init (const KernModel *m, float *params, guint64 seed)
{
  g_return_if_fail (m != NULL && params != NULL);
  const GptPriv *p = m->priv;
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_GPT);
  memset (params, 0, p->n_params * sizeof (float));
  double proj_std = GPT_INIT_STD / sqrt (2.0 * p->L);
  int D = p->D, F = p->F;
#define FILL(at, count, std) \
  for (gsize i_ = 0; i_ < (gsize) (count); i_++) \
    params[(at) + i_] = (float) ((std) * kern_rng_normal (&rng))
#define ONES(at) \
  for (int j_ = 0; j_ < D; j_++) \
    params[(at) + j_] = 1.0f
  FILL (p->wte, (gsize) p->V * D, GPT_INIT_STD);
  FILL (p->wpe, (gsize) p->S * D, GPT_INIT_STD);
  for (int l = 0; l < p->L; l++)
    {
      const GptOff *o = &p->off[l];
      ONES (o->ln1);
      FILL (o->qkv, (gsize) D * 3 * D, GPT_INIT_STD);
      FILL (o->proj, (gsize) D * D, proj_std);
      ONES (o->ln2);
      FILL (o->fc, (gsize) D * F, GPT_INIT_STD);
      FILL (o->fc2, (gsize) F * D, proj_std);
    }
  ONES (p->lnf);
  if (p->untied)
    FILL (p->head, (gsize) D * p->V, GPT_INIT_STD);
#undef FILL
#undef ONES
}

static double
gpt_flops_forward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].fwd_flops_fixed + m->layers[i].fwd_flops * n;
  return total;
}

static double
gpt_flops_backward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].bwd_flops_fixed + m->layers[i].bwd_flops * n;
  return total;
}

/* --- Pipeline stages (kernels.h, KernStage) ------------------------------
 *
 * A stage holds whole pieces of the network: the embedding (row embed),
 * a block's attention half (ln_1 .. attn.add), its MLP half (ln_2 ..
 * mlp.add), ln_f, lm_head, lm_loss.  Between two pieces the network's
 * state is one tensor ((T, D) after the embedding, a half or ln_f; the
 * logits (T, V) after the head), so a boundary carries exactly the
 * previous row's `outputs`; inside a half the residual stream runs beside
 * the rows' own input, so the layer table marks those rows `joined` and
 * the pipeline cuts before the others only.  Per slot a stage keeps its
 * input, each piece's activations and output, and the embedding's tokens;
 * each piece runs the function the whole model runs (above), on the
 * model's backward scratch, and the loss reads its targets from the
 * micro-batch's input x.  The loss gradient of a token is grad_scale / S
 * (a sample's loss is the mean over its S predictions), rounded once to
 * float; it is the whole model's 1 / (n S) when grad_scale is the inverse
 * of a power of two times 1 / n.  A tied head writes the token
 * embedding's gradient, so a stage holding lm_head holds embed too where
 * the head is tied (the pipeline refuses the cut otherwise). */

typedef enum { GPT_U_EMBED, GPT_U_ATTN, GPT_U_MLP, GPT_U_LNF, GPT_U_HEAD, GPT_U_LOSS } GptUnitKind;

typedef struct {
  GptUnitKind kind;
  int l;                  /* its block (halves) */
  int width;              /* floats per sample of its output */
} GptUnit;

/* One piece's state in one slot. */
typedef struct {
  GptAct a;               /* a half's activations (an MLP half's mid: its input) */
  float *out;             /* its output (an attention half's: a.mid; the loss's: its input) */
  float *mu, *rs;         /* LN_f's (T) */
  int *tok;               /* the embedding's tokens (T) */
} GptSlotUnit;

typedef struct {
  KernStage pub;          /* first member: a KernStage* is a GptStage* */
  KernModel *m;
  GptPriv *p;
  int n_units;
  GptUnit *units;         /* (n_units) */
  GptSlotUnit *su;        /* (slots x n_units) */
  float **in;             /* (slots) the stage's input */
  const float *P;
  float *gacc, *gmb;      /* (hi - lo) */
  float *glog;            /* (n S, V) the head's dout where the stage ends there */
  int *tgt;               /* (n S) */
  float *row_loss;        /* (n S) */
} GptStage;

/* The piece of table row i. */
static GptUnit
gpt_unit (const GptPriv *p, int i)
{
  int S = p->S, D = p->D, blocks_end = 1 + GPT_BLOCK_ROWS * p->L;
  if (i == 0)
    return (GptUnit) { GPT_U_EMBED, 0, S * D };
  if (i < blocks_end)
    {
      int l = (i - 1) / GPT_BLOCK_ROWS, r = (i - 1) % GPT_BLOCK_ROWS;
      return (GptUnit) { r < GPT_ROW_LN2 ? GPT_U_ATTN : GPT_U_MLP, l, S * D };
    }
  if (i == blocks_end)
    return (GptUnit) { GPT_U_LNF, 0, S * D };
  if (i == blocks_end + 1)
    return (GptUnit) { GPT_U_HEAD, 0, S * p->V };
  return (GptUnit) { GPT_U_LOSS, 0, S * p->V };
}

/* Whether table row i begins a piece. */
static gboolean
gpt_unit_start (const GptPriv *p, int i)
{
  int blocks_end = 1 + GPT_BLOCK_ROWS * p->L;
  if (i <= 0 || i >= blocks_end)
    return TRUE;
  int r = (i - 1) % GPT_BLOCK_ROWS;
  return r == GPT_ROW_LN1 || r == GPT_ROW_LN2;
}

static void
gpt_stage_set_params (KernStage *st, const float *params)
{
  ((GptStage *) st)->P = params;
}

/* The model's scratch for the stage's n sequences and its numerics. */
static void
gpt_stage_prepare (GptStage *s)
{
  gpt_reserve (s->p, s->pub.n);
  s->p->fmt = s->m->num.activations;
  s->p->scale = kern_numerics_scale (&s->m->num);
}

static double
gpt_stage_forward (KernStage *st, int slot, const float *in, const float *x,
                   const int *y G_GNUC_UNUSED, float *out)
{
  GptStage *s = (GptStage *) st;
  GptPriv *p = s->p;
  int n = st->n, T = n * p->S, D = p->D;
  g_return_val_if_fail (s->P != NULL, NAN);
  gpt_stage_prepare (s);
  GptSlotUnit *su = s->su + (gsize) slot * s->n_units;
  memcpy (s->in[slot], in, (gsize) n * st->in_width * sizeof (float));
  double loss = NAN;
  for (int j = 0; j < s->n_units; j++)
    {
      const GptUnit *u = &s->units[j];
      const float *A = j == 0 ? s->in[slot] : su[j - 1].out;
      GptSlotUnit *w = &su[j];
      switch (u->kind)
        {
        case GPT_U_EMBED:
          if (!kern_gpt_read_tokens (A, n, p->S, p->V, w->tok, s->tgt))
            g_return_val_if_reached (NAN);
          embed_forward (p, s->P, w->tok, n, w->out);
          break;
        case GPT_U_ATTN:
          attn_half_forward (p, s->P, u->l, &w->a, A, n);
          break;
        case GPT_U_MLP:
          if (w->a.mid != A)
            memcpy (w->a.mid, A, (gsize) T * D * sizeof (float));
          mlp_half_forward (p, s->P, u->l, &w->a, w->out, n);
          break;
        case GPT_U_LNF:
          kern_gpt_ln_forward (A, s->P + p->lnf, s->P + p->lnf + D, T, D, w->out, w->mu, w->rs);
          break;
        case GPT_U_HEAD:
          head_forward (p, s->P, A, n, w->out);
          break;
        case GPT_U_LOSS:
          {
            g_return_val_if_fail (x != NULL, NAN);
            g_autofree int *tok = g_new (int, T);
            if (!kern_gpt_read_tokens (x, n, p->S, p->V, tok, s->tgt))
              g_return_val_if_reached (NAN);
            float scale = (float) ((double) st->grad_scale_f / p->S);
            p->be->ops->softmax_xent (p->be, w->out, s->tgt, T, p->V, scale, s->row_loss, NULL);
            loss = row_sum (s->row_loss, (gsize) T) / T;
            break;
          }
        }
    }
  if (!st->has_loss)
    memcpy (out, su[s->n_units - 1].out, (gsize) n * st->out_width * sizeof (float));
  return loss;
}

static void
gpt_stage_backward (KernStage *st, int slot, const float *dout, float *din)
{
  GptStage *s = (GptStage *) st;
  GptPriv *p = s->p;
  int n = st->n;
  gpt_stage_prepare (s);
  GptSlotUnit *su = s->su + (gsize) slot * s->n_units;
  float *g = NULL;                                     /* the current gradient */
  if (!st->has_loss)
    {
      GptUnitKind last = s->units[s->n_units - 1].kind;
      g = last == GPT_U_HEAD ? s->glog : last == GPT_U_LNF ? p->dsmall : p->dres;
      memcpy (g, dout, (gsize) n * st->out_width * sizeof (float));
    }
  for (int j = s->n_units - 1; j >= 0; j--)
    {
      const GptUnit *u = &s->units[j];
      const float *A = j == 0 ? s->in[slot] : su[j - 1].out;
      GptSlotUnit *w = &su[j];
      switch (u->kind)
        {
        case GPT_U_LOSS:
          g = w->out;                                  /* dZ is in place */
          break;
        case GPT_U_HEAD:
          head_backward (p, s->P, s->gmb, st->lo, A, g, n);
          g = p->dsmall;
          break;
        case GPT_U_LNF:
          lnf_backward (p, s->P, s->gmb, st->lo, A, w->mu, w->rs, n);
          g = p->dres;
          break;
        case GPT_U_MLP:
          mlp_half_backward (p, s->P, s->gmb, st->lo, u->l, &w->a, n);
          break;
        case GPT_U_ATTN:
          attn_half_backward (p, s->P, s->gmb, st->lo, u->l, &w->a, A, n);
          break;
        case GPT_U_EMBED:
          embed_backward (p, s->gmb, st->lo, w->tok, n);
          break;
        }
    }
  gsize len = st->hi - st->lo;
  for (gsize i = 0; i < len; i++)
    s->gacc[i] += s->gmb[i];
  if (st->first > 0)
    memcpy (din, g, (gsize) n * st->in_width * sizeof (float));
}

static void
gpt_stage_take_grad (KernStage *st, float *grad)
{
  kern_stage_take_acc (st, ((GptStage *) st)->gacc, grad);
}

static void
gpt_stage_free (KernStage *st)
{
  GptStage *s = (GptStage *) st;
  for (int slot = 0; slot < st->slots; slot++)
    {
      for (int j = 0; j < s->n_units; j++)
        {
          GptSlotUnit *w = &s->su[(gsize) slot * s->n_units + j];
          GptUnitKind kind = s->units[j].kind;
          if (kind == GPT_U_ATTN || kind == GPT_U_MLP)
            act_free (&w->a);                          /* an attention half's out: a.mid */
          else if (kind != GPT_U_LOSS)
            g_free (w->out);
          if (kind == GPT_U_MLP)
            g_free (w->out);
          g_free (w->mu);
          g_free (w->rs);
          g_free (w->tok);
        }
      g_free (s->in[slot]);
    }
  g_free (s->su);
  g_free (s->in);
  g_free (s->units);
  g_free (s->gacc);
  g_free (s->gmb);
  g_free (s->glog);
  g_free (s->tgt);
  g_free (s->row_loss);
  g_free (s);
}


/* stage_new of the GPT (kernels.h, kern_stage_new): rows [first, last]
 * must be whole pieces (file section above), and with a tied head a
 * stage holding lm_head must hold embed. */
static KernStage *
gpt_stage_new (KernModel *m, int first, int last, int n, int slots, float grad_scale)
{
  GptPriv *p = m->priv;
  g_return_val_if_fail (gpt_unit_start (p, first), NULL);
  g_return_val_if_fail (last + 1 == m->n_layers || gpt_unit_start (p, last + 1), NULL);
  g_return_val_if_fail (p->untied || first == 0 || last < m->n_layers - 2, NULL);
  GptStage *s = g_new0 (GptStage, 1);
  KernStage *st = &s->pub;
  kern_stage_init (st, first, last, n, slots, grad_scale);
  st->in_width = first == 0 ? m->d : gpt_unit (p, first - 1).width;
  st->has_loss = last == m->n_layers - 1;
  st->out_width = st->has_loss ? 0 : gpt_unit (p, last).width;
  st->lo = m->layers[first].param_offset;
  st->hi = last + 1 < m->n_layers ? m->layers[last + 1].param_offset : p->n_params;
  st->set_params = gpt_stage_set_params;
  st->forward = gpt_stage_forward;
  st->backward = gpt_stage_backward;
  st->take_grad = gpt_stage_take_grad;
  st->free = gpt_stage_free;
  s->m = m;
  s->p = p;
  s->units = g_new (GptUnit, last - first + 1);
  for (int i = first; i <= last; i++)
    if (gpt_unit_start (p, i))
      s->units[s->n_units++] = gpt_unit (p, i);
  gsize T = (gsize) n * p->S;
  s->su = g_new0 (GptSlotUnit, (gsize) slots * s->n_units);
  s->in = g_new0 (float *, slots);
  for (int slot = 0; slot < slots; slot++)
    {
      s->in[slot] = g_new (float, (gsize) n * st->in_width);
      for (int j = 0; j < s->n_units; j++)
        {
          GptSlotUnit *w = &s->su[(gsize) slot * s->n_units + j];
          const GptUnit *u = &s->units[j];
          switch (u->kind)
            {
            case GPT_U_EMBED:
              w->out = g_new (float, T * p->D);
              w->tok = g_new (int, T);
              break;
            case GPT_U_ATTN:
              act_alloc (p, &w->a, n);
              w->out = w->a.mid;
              break;
            case GPT_U_MLP:
              act_alloc (p, &w->a, n);
              w->out = g_new (float, T * p->D);
              break;
            case GPT_U_LNF:
              w->out = g_new (float, T * p->D);
              w->mu = g_new (float, T);
              w->rs = g_new (float, T);
              break;
            case GPT_U_HEAD:
              w->out = g_new (float, T * p->V);
              break;
            case GPT_U_LOSS:
              w->out = j > 0 ? s->su[(gsize) slot * s->n_units + j - 1].out : s->in[slot];
              break;
            }
        }
    }
  gsize len = MAX (st->hi - st->lo, 1);
  s->gacc = g_new0 (float, len);
  s->gmb = g_new0 (float, len);
  s->glog = g_new (float, T * p->V);
  s->tgt = g_new (int, T);
  s->row_loss = g_new (float, T);
  return st;
}

static void
gpt_free (KernModel *m)
{
  GptPriv *p = m->priv;
  scratch_free (p);
  if (p->own_be)
    kern_backend_free (p->be);
  g_free (p->res);
  g_free (p->act);
  g_free (p->off);
  g_free (p->lnrow);
  g_free (p->dP);
  g_free (p);
  g_free (m->layers);
  g_free (m);
}

static KernModel *
gpt_clone (const KernModel *m)
{
  const GptPriv *p = m->priv;
  return kern_gpt_new (p->V, p->S, p->D, p->H, p->L, p->untied, NULL, NULL);
}

/* The tensor-parallel plan on the model's backend (gpt-tensor.c). */
static KernTensorPlan *
gpt_tensor_plan_new (const KernModel *m, int T, GError **error)
{
  const GptPriv *p = m->priv;
  KernGptShape shape = { p->V, p->S, p->D, p->H, p->L, p->untied };
  return kern_gpt_tensor_plan_new (m, p->be, &shape, T, error);
}

static const KernModelOps gpt_ops = {
  .name = "gpt",
  .n_params = gpt_n_params,
  .init = gpt_init,
  .loss_grad = gpt_loss_grad,
  .loss_grad_groups = gpt_loss_grad_groups,
  .evaluate = gpt_evaluate,
  .flops_forward = gpt_flops_forward,
  .flops_backward = gpt_flops_backward,
  .stage_new = gpt_stage_new,
  .clone = gpt_clone,
  .free = gpt_free,
  .tensor_plan_new = gpt_tensor_plan_new,
};

/* --- The layer table ----------------------------------------------------- */

/* One row: its name, kind, parameters from `at`, FLOPs and bytes per
 * sample (forward, backward), activations and outputs per sample. */
static KernLayer *
row (KernModel *m, int *i, const char *name, KernLayerKind kind, gsize at, gsize params,
     double fwd, double bwd, double acts, double outputs)
{
  KernLayer *ly = &m->layers[(*i)++];
  g_strlcpy (ly->name, name, sizeof ly->name);
  ly->kind = kind;
  ly->param_offset = at;
  ly->params = params;
  ly->fwd_flops = fwd;
  ly->bwd_flops = bwd;
  /* bytes: every float a pass reads or writes once (activations in and
   * out), the parameters and their gradients once per batch */
  ly->fwd_bytes = 4.0 * (acts + outputs);
  ly->bwd_bytes = 8.0 * (acts + outputs);
  ly->fwd_bytes_fixed = 4.0 * (double) params;
  ly->bwd_bytes_fixed = 8.0 * (double) params;
  ly->activations = acts;
  ly->outputs = outputs;
  return ly;
}

/* A dense row's weight (rows, cols) at `at`, its bias after it when bias. */
static void
weight (KernLayer *ly, gsize at, int rows, int cols, gboolean bias)
{
  ly->weight[ly->n_weights++] = (KernWeight) {
    .offset = at, .rows = rows, .cols = cols, .has_bias = bias,
    .bias = bias ? at + (gsize) rows * cols : 0 };
}

/* A dense row of the batch's T = n S rows, in -> out with a bias: the
 * forward product 2 S in out; backward dW (2 S in out), db ((n S - 1) out:
 * -out fixed) and dA (2 S in out). */
static void
dense_row (KernModel *m, int *i, const char *name, gsize at, double S, int in, int out)
{
  KernLayer *ly = row (m, i, name, KERN_LAYER_GEMM, at, (gsize) in * out + out,
                       2.0 * S * in * out, 4.0 * S * in * out + S * out, S * out, S * out);
  ly->bwd_flops_fixed = -out;
  weight (ly, at, in, out, TRUE);
}

/* Block l's twelve rows (the timing transformer's block, append_block). */
static void
block_rows (KernModel *m, int *i, const GptPriv *p, int l)
{
  double S = p->S, D = p->D, F = p->F, H = p->H;
  const GptOff *o = &p->off[l];
  char name[32];
#define NAME(suffix) (g_snprintf (name, sizeof name, "h.%d." suffix, l), name)
  /* layer norm: 8 D + 4 a row forward, 14 D + 2 backward */
  row (m, i, NAME ("ln_1"), KERN_LAYER_NORM, o->ln1, 2 * p->D, S * (8 * D + 4), S * (14 * D + 2),
       S * D + 2 * S, S * D);
  dense_row (m, i, NAME ("attn.qkv"), o->qkv, S, p->D, 3 * p->D);
  /* per head: Q K^T (2 S S hd) forward; dQ, dK (4 S S hd) backward */
  KernLayer *sc = row (m, i, NAME ("attn.score"), KERN_LAYER_ATTENTION, o->proj, 0,
                       2 * S * S * D, 4 * S * S * D, H * S * S, H * S * S);
  /* per head, row i: 5 (i + 1) forward, 5 (i + 1) - 1 backward */
  KernLayer *sm = row (m, i, NAME ("attn.softmax"), KERN_LAYER_ELEMENTWISE, o->proj, 0,
                       H * 5 * S * (S + 1) / 2, H * (5 * S * (S + 1) / 2 - S), 0, H * S * S);
  /* per head: P V forward; dP, dV backward */
  KernLayer *cx = row (m, i, NAME ("attn.context"), KERN_LAYER_ATTENTION, o->proj, 0,
                       2 * S * S * D, 4 * S * S * D, S * D, S * D);
  sc->heads = sm->heads = cx->heads = sc->kv_heads = sm->kv_heads = cx->kv_heads = p->H;
  dense_row (m, i, NAME ("attn.proj"), o->proj, S, p->D, p->D);
  row (m, i, NAME ("attn.add"), KERN_LAYER_ELEMENTWISE, o->ln2, 0, S * D, 0, S * D, S * D);
  row (m, i, NAME ("ln_2"), KERN_LAYER_NORM, o->ln2, 2 * p->D, S * (8 * D + 4), S * (14 * D + 2),
       S * D + 2 * S, S * D);
  dense_row (m, i, NAME ("mlp.fc"), o->fc, S, p->D, p->F);
  /* 13 FLOPs an element forward, 22 backward */
  row (m, i, NAME ("mlp.gelu"), KERN_LAYER_ELEMENTWISE, o->fc2, 0, S * F * 13, S * F * 22,
       S * F, S * F);
  dense_row (m, i, NAME ("mlp.proj"), o->fc2, S, p->F, p->D);
  gsize next = l + 1 < p->L ? p->off[l + 1].ln1 : p->lnf;
  row (m, i, NAME ("mlp.add"), KERN_LAYER_ELEMENTWISE, next, 0, S * D, 0, S * D, S * D);
#undef NAME
  /* a stage may begin at ln_1 or ln_2 only (the stages' file section) */
  for (int r = *i - GPT_BLOCK_ROWS; r < *i; r++)
    m->layers[r].joined = !gpt_unit_start (p, r);
}

/* The whole table: embed, the blocks, ln_f, lm_head, lm_loss. */
static void
gpt_layers (KernModel *m, const GptPriv *p)
{
  double S = p->S, D = p->D, V = p->V;
  int i = 0;
  /* the lookup-add S D forward; adding into both tables 2 S D backward */
  KernLayer *em = row (m, &i, "embed", KERN_LAYER_EMBEDDING, p->wte,
                       (gsize) (p->V + p->S) * p->D, S * D, 2 * S * D, S * D + S, S * D);
  weight (em, p->wte, p->V, p->D, FALSE);
  weight (em, p->wpe, p->S, p->D, FALSE);
  em->vocabulary = TRUE;
  for (int l = 0; l < p->L; l++)
    block_rows (m, &i, p, l);
  row (m, &i, "ln_f", KERN_LAYER_NORM, p->lnf, 2 * p->D, S * (8 * D + 4), S * (14 * D + 2),
       S * D + 2 * S, S * D);
  /* logits 2 S D V; backward dW and dA, 2 S D V each */
  KernLayer *hd = row (m, &i, "lm_head", KERN_LAYER_GEMM, p->head,
                       p->untied ? (gsize) p->D * p->V : 0, 2 * S * D * V, 4 * S * D * V,
                       S * V, S * V);
  if (p->untied)
    weight (hd, p->head, p->D, p->V, FALSE);
  else
    hd->weight[hd->n_weights++] = (KernWeight) { .offset = 0, .rows = p->D, .cols = p->V };
  hd->vocabulary = TRUE;
  /* softmax_xent (3 V + 1 a row) and the mean (1 a row) forward; V + 2 a
   * row and the scale 1 / T (fixed) backward */
  KernLayer *ls = row (m, &i, "lm_loss", KERN_LAYER_ELEMENTWISE, p->n_params, 0,
                       S * (3 * V + 2), S * (V + 2), 0, 0);
  ls->bwd_flops_fixed = 1.0;
  ls->vocabulary = TRUE;
  g_assert (i == m->n_layers);
}

/* --- Construction -------------------------------------------------------- */

/* Parameter offsets in the header's order. */
static void
gpt_offsets (GptPriv *p)
{
  gsize D = p->D, F = p->F, at = 0;
  p->wte = at;
  at += (gsize) p->V * D;
  p->wpe = at;
  at += (gsize) p->S * D;
  for (int l = 0; l < p->L; l++)
    {
      GptOff *o = &p->off[l];
      o->ln1 = at;
      at += 2 * D;
      o->qkv = at;
      at += D * 3 * D + 3 * D;
      o->proj = at;
      at += D * D + D;
      o->ln2 = at;
      at += 2 * D;
      o->fc = at;
      at += D * F + F;
      o->fc2 = at;
      at += F * D + D;
    }
  p->lnf = at;
  at += 2 * D;
  p->head = at;
  if (p->untied)
    at += D * (gsize) p->V;
  p->n_params = at;
}

/* A GPT of V symbols, S positions, width D, H heads (dividing D) and L
 * blocks, its head tied to the token embedding unless `untied` (kernels.h).
 * Math on `be` (borrowed; NULL = a private CPU backend), which must keep
 * its buffers in host memory: NULL with `error` set otherwise. */
KernModel *
kern_gpt_new (int V, int S, int D, int H, int L, gboolean untied, KernBackend *be,
              GError **error)
{
  g_return_val_if_fail (V >= 1 && S >= 1 && D >= 1 && H >= 1 && L >= 1 && D % H == 0, NULL);
  if (be != NULL && strcmp (be->ops->name, "cpu") != 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "[kernels] backend: kind = gpt runs its math on the cpu backend only; "
                   "set backend = cpu");
      return NULL;
    }
  GptPriv *p = g_new0 (GptPriv, 1);
  p->own_be = be == NULL;
  p->be = be ? be : kern_backend_cpu_new ();
  p->V = V, p->S = S, p->D = D, p->H = H, p->L = L, p->F = 4 * D;
  p->untied = untied;
  p->off = g_new0 (GptOff, L);
  p->res = g_new0 (float *, L + 1);
  p->act = g_new0 (GptAct, L);
  p->lnrow = g_new (double, 2 * (gsize) D);
  p->dP = g_new (float, (gsize) S * S);
  gpt_offsets (p);
  KernModel *m = g_new0 (KernModel, 1);
  m->ops = &gpt_ops;
  m->d = S + 1;
  m->k = V;
  m->priv = p;
  m->n_layers = 1 + GPT_BLOCK_ROWS * L + 3;
  m->layers = g_new0 (KernLayer, m->n_layers);
  gpt_layers (m, p);
  return m;
}

/* The logits (n S, V) of x (n, S + 1) at params into `logits`, row b S + t
 * scoring symbol t + 1 of sample b (kernels.h). */
void
kern_gpt_logits (KernModel *m, const float *params, const float *x, int n, float *logits)
{
  g_return_if_fail (m != NULL && m->ops == &gpt_ops && params && x && logits && n >= 1);
  GptPriv *p = m->priv;
  gpt_reserve (p, n);
  g_return_if_fail (gpt_tokens (p, x, n));
  p->fmt = m->num.activations;
  gpt_forward (p, params, n);
  memcpy (logits, p->logits, (gsize) n * p->S * p->V * sizeof (float));
}

/* The shape of a model of kern_gpt_new: FALSE for any other model. */
gboolean
kern_gpt_shape (const KernModel *m, int *V, int *S, int *D, int *H, int *L, gboolean *untied)
{
  g_return_val_if_fail (m != NULL, FALSE);
  if (m->ops != &gpt_ops)
    return FALSE;
  const GptPriv *p = m->priv;
  *V = p->V, *S = p->S, *D = p->D, *H = p->H, *L = p->L, *untied = p->untied;
  return TRUE;
}

/* --- The kind ------------------------------------------------------------ */

enum { HEAD_TIED, HEAD_UNTIED };
static const BaseChoice head_choices[] = {
  { "tied", HEAD_TIED, FALSE }, { "untied", HEAD_UNTIED, FALSE }, { NULL, 0, FALSE } };

/* The timing transformer's rows for the keys both kinds read (the first
 * declaration is the one `dtsim keys` lists and whose default applies),
 * and the synthetic language's own. */
static const BaseKey gpt_keys[] = {
  { "model", "blocks", BASE_KEY_INT, 0, "12", 1, 1000, 0, NULL, 0, "blocks of the decoder.", NULL },
  { "model", "width", BASE_KEY_INT, 0, "768", 1, 1048576, 0, NULL, 0, "model width.", NULL },
  { "model", "heads", BASE_KEY_INT, 0, "12", 1, 65536, 0, NULL, 0, "attention heads.", NULL },
  { "model", "sequence", BASE_KEY_INT, 0, "1024", 1, 1048576, 0, NULL, 0, "tokens per sample.", NULL },
  { "model", "vocabulary", BASE_KEY_INT, 0, "50257", 1, 100000000, 0, NULL, 0, "symbols.", NULL },
  { "model", "head", BASE_KEY_ENUM, 0, "tied", 0, 0, 0, head_choices, 0, "LM head.", NULL },
  { "model", "branching", BASE_KEY_INT, 0, "3", 1, KERN_LANGUAGE_MAX_SYMBOLS, 0, NULL, 0,
    "kind = gpt: symbols each context of the synthetic language favours (docs/kernels.md, \"Synthetic language\"), at most vocabulary.", NULL },
  { .section = NULL },
};

/* Real-math bounds, so that a run's scratch stays small: the transformer's
 * key bounds are those of timing models. */
#define GPT_MAX_WIDTH 1024
#define GPT_MAX_SEQUENCE 1024
#define GPT_MAX_BLOCKS 48

static gboolean
gpt_bound (const BaseValues *v, const char *key, gint64 lo, gint64 hi, const char *why,
           GError **error)
{
  g_autofree char *dotted = g_strconcat ("model.", key, NULL);
  gint64 x = base_values_int (v, dotted);
  if (x >= lo && x <= hi)
    return TRUE;
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "[model] %s: %" G_GINT64_FORMAT " is out of kind = gpt's range %" G_GINT64_FORMAT
               " to %" G_GINT64_FORMAT " (%s); set %s in that range", key, x, lo, hi, why, key);
  return FALSE;
}

static gboolean
gpt_validate (const BaseValues *v, GError **error)
{
  if (!gpt_bound (v, "vocabulary", 2, KERN_LANGUAGE_MAX_SYMBOLS,
                  "the symbols of its synthetic language", error)
      || !gpt_bound (v, "width", 1, GPT_MAX_WIDTH, "real math on the CPU", error)
      || !gpt_bound (v, "sequence", 1, GPT_MAX_SEQUENCE, "real math on the CPU", error)
      || !gpt_bound (v, "blocks", 1, GPT_MAX_BLOCKS, "real math on the CPU", error)
      || !gpt_bound (v, "branching", 1, base_values_int (v, "model.vocabulary"),
                     "at most vocabulary", error))
    return FALSE;
  gint64 D = base_values_int (v, "model.width"), H = base_values_int (v, "model.heads");
  if (D % H == 0)
    return TRUE;
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "[model] heads: %" G_GINT64_FORMAT " heads do not divide width %" G_GINT64_FORMAT
               "; use a divisor of width", H, D);
  return FALSE;
}

static KernModel *
gpt_kind_new (const KernModelArgs *a, KernBackend *be, GError **error)
{
  const BaseValues *v = a->values;
  if (!gpt_validate (v, error))
    return NULL;
  return kern_gpt_new ((int) base_values_int (v, "model.vocabulary"),
                       (int) base_values_int (v, "model.sequence"),
                       (int) base_values_int (v, "model.width"),
                       (int) base_values_int (v, "model.heads"),
                       (int) base_values_int (v, "model.blocks"),
                       base_values_int (v, "model.head") == HEAD_UNTIED, be, error);
}

static int
gpt_width (const BaseValues *v)
{
  return (int) base_values_int (v, "model.sequence") + 1;
}

static int
gpt_classes (const BaseValues *v)
{
  return (int) base_values_int (v, "model.vocabulary");
}

static void
gpt_draw (const BaseValues *v, int n_train, int n_test, guint64 seed, KernDataset **train,
          KernDataset **test)
{
  kern_dataset_language (n_train, n_test, (int) base_values_int (v, "model.vocabulary"),
                         (int) base_values_int (v, "model.branching"),
                         (int) base_values_int (v, "model.sequence"), seed, train, test);
}

/* The shared keys' values without a scenario's: a GPT that trains in
 * seconds here (the table's defaults are the timing transformer's GPT-2,
 * beyond this kind's ranges). */
static const char *const gpt_defaults[] = {
  "vocabulary", "8", "blocks", "2", "width", "64", "heads", "4", "sequence", "32", NULL,
};

const KernModelKind kern_model_gpt = {
  .name = "gpt",
  .description = "a small decoder-only transformer with real math on the CPU, trained on a "
                 "synthetic language of known entropy ([model] blocks, width, heads, sequence, "
                 "vocabulary, head, branching; docs/kernels.md)",
  .math = TRUE,
  .depth_key = "blocks",
  .keys = gpt_keys,
  .validate = gpt_validate,
  .new = gpt_kind_new,
  .synthetic_width = gpt_width,
  .synthetic_classes = gpt_classes,
  .synthetic_draw = gpt_draw,
  .rounds_activations = TRUE,
  .defaults = gpt_defaults,
};
