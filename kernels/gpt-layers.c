/*
 * gpt-layers.c — the GPT's element-wise passes (layer norm, GELU, the
 * causal softmax of attention scores) and its token reader, shared by the
 * one-device math (gpt.c) and its tensor-parallel split (gpt-tensor.c),
 * so that both run the same functions on the same inputs
 * (gpt-private.h states the contracts; docs/kernels.md, "GPT", the
 * formulas and FLOP counts, annotated per line by the counting rule of
 * docs/kernels.md).  Plain loops, in double where they accumulate, with
 * exp from base/fmath.c.
 */
#include "kernels/gpt-private.h"
#include "base/fmath.h"

#include <math.h>

#define GPT_LN_EPS 1e-5
#define GPT_GELU_C 0.7978845608028654   /* sqrt(2 / pi) */
#define GPT_GELU_A 0.044715

/* out = LN(x) over rows of D, keeping each row's mean and 1/sd: 8 D + 4
 * FLOPs a row. */
void
kern_gpt_ln_forward (const float *x, const float *gamma, const float *beta, gsize rows, int D,
            float *out, float *mu, float *rs)
{
  for (gsize r = 0; r < rows; r++)
    {
      const float *xr = x + r * D;
      double s = xr[0];
      for (int j = 1; j < D; j++)
        s += xr[j];                                    /* D - 1 */
      double m = s / D;                                /* 1 */
      double v = 0.0;
      for (int j = 0; j < D; j++)
        {
          double d = xr[j] - m;
          v += d * d;                                  /* 3 D (the first add onto 0) */
        }
      double rstd = 1.0 / sqrt (v / D + GPT_LN_EPS);  /* 1 + 3 */
      for (int j = 0; j < D; j++)
        out[r * D + j] = (float) ((xr[j] - m) * rstd * gamma[j] + beta[j]);   /* 4 D */
      mu[r] = (float) m;
      rs[r] = (float) rstd;
    }
}

/* Backward of ln_forward given dout: adds into dgamma, dbeta (which the
 * caller zeroed) and into dx (the residual stream's gradient): 14 D + 2
 * FLOPs a row.  `tmp` holds 2 D doubles. */
void
kern_gpt_ln_backward (const float *dout, const float *x, const float *gamma, const float *mu,
             const float *rs, gsize rows, int D, float *dgamma, float *dbeta, float *dx,
             double *tmp)
{
  double *dxh = tmp, *xh = tmp + D;
  for (gsize r = 0; r < rows; r++)
    {
      const float *dr = dout + r * D, *xr = x + r * D;
      double m1 = 0.0, m2 = 0.0;
      for (int j = 0; j < D; j++)
        {
          xh[j] = (xr[j] - mu[r]) * (double) rs[r];     /* 2 */
          dxh[j] = (double) dr[j] * gamma[j];           /* 1 */
          dgamma[j] += (float) (dr[j] * xh[j]);        /* 2 */
          dbeta[j] += dr[j];                            /* 1 */
          m1 += dxh[j];                                 /* 1 */
          m2 += dxh[j] * xh[j];                         /* 2 */
        }
      m1 /= D;                                          /* 1 */
      m2 /= D;                                          /* 1 */
      for (int j = 0; j < D; j++)
        dx[r * D + j] += (float) (rs[r] * (dxh[j] - m1 - xh[j] * m2));   /* 5 */
    }
}

/* tanh(z) through exp: 1 - 2 / (exp(2 z) + 1), 5 FLOPs. */
static double
gpt_tanh (double z)
{
  return 1.0 - 2.0 / (base_exp (2.0 * z) + 1.0);
}

/* g = GELU(u), 13 FLOPs an element. */
void
kern_gpt_gelu_forward (const float *u, float *g, gsize len)
{
  for (gsize i = 0; i < len; i++)
    {
      double x = u[i], x3 = x * x * x;                          /* 2 */
      double t = gpt_tanh (GPT_GELU_C * (x + GPT_GELU_A * x3)); /* 3 + 5 */
      g[i] = (float) (0.5 * x * (1.0 + t));                     /* 3 */
    }
}

/* dg *= GELU'(u) in place, 22 FLOPs an element. */
void
kern_gpt_gelu_backward (float *dg, const float *u, gsize len)
{
  for (gsize i = 0; i < len; i++)
    {
      double x = u[i], x2 = x * x, x3 = x2 * x;                 /* 2 */
      double t = gpt_tanh (GPT_GELU_C * (x + GPT_GELU_A * x3)); /* 3 + 5 */
      double a = 0.5 * (1.0 + t);                               /* 2 */
      double sech2 = 1.0 - t * t;                               /* 2 */
      double dz = GPT_GELU_C * (1.0 + 3.0 * GPT_GELU_A * x2);   /* 3 */
      dg[i] = (float) (dg[i] * (a + 0.5 * x * sech2 * dz));     /* 5 */
    }
}

/* Row i of a head's (S, S) scores in place: the causal softmax of the
 * scaled scores j <= i, zeros after: 5 (i + 1) FLOPs. */
void
kern_gpt_causal_softmax_row (float *row, int i, int S, double scale)
{
  double mx = -INFINITY;
  for (int j = 0; j <= i; j++)
    {
      row[j] = (float) (row[j] * scale);              /* i + 1 */
      mx = MAX (mx, row[j]);
    }
  double sum = 0.0;
  for (int j = 0; j <= i; j++)
    {
      double e = base_exp (row[j] - mx);              /* 2 (i + 1) */
      row[j] = (float) e;
      sum = j == 0 ? e : sum + e;                     /* i */
    }
  double inv = 1.0 / sum;                             /* 1 */
  for (int j = 0; j <= i; j++)
    row[j] = (float) (row[j] * inv);                  /* i + 1 */
  for (int j = i + 1; j < S; j++)
    row[j] = 0.0f;
}

/* dP (S, S) into the score gradient in place: dS_ij = scale P_ij (dP_ij -
 * sum_k P_ik dP_ik) for j <= i, 0 after: 5 (i + 1) - 1 FLOPs row i. */
void
kern_gpt_causal_softmax_backward (const float *P, float *dP, int S, double scale)
{
  for (int i = 0; i < S; i++)
    {
      const float *pr = P + (gsize) i * S;
      float *dr = dP + (gsize) i * S;
      double dot = (double) pr[0] * dr[0];
      for (int j = 1; j <= i; j++)
        dot += (double) pr[j] * dr[j];                /* 2 i + 1 */
      for (int j = 0; j <= i; j++)
        dr[j] = (float) (scale * pr[j] * (dr[j] - dot));   /* 3 (i + 1) */
      for (int j = i + 1; j < S; j++)
        dr[j] = 0.0f;
    }
}

/* Reads the tokens and targets of x (n, S + 1) (gpt-private.h). */
gboolean
kern_gpt_read_tokens (const float *x, int n, int S, int V, int *tok, int *tgt)
{
  for (int b = 0; b < n; b++)
    for (int t = 0; t <= S; t++)
      {
        float v = x[(gsize) b * (S + 1) + t];
        if (!(v >= 0.0f && v < (float) V) || v != floorf (v))
          return FALSE;
        if (t < S)
          tok[(gsize) b * S + t] = (int) v;
        if (t > 0)
          tgt[(gsize) b * S + t - 1] = (int) v;
      }
  return TRUE;
}
