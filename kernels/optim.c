/*
 * optim.c — optimizers with state: SGD, heavy-ball momentum, Adam, warm-up.
 *
 * A KernOptimizer owns the per-parameter state of one flat parameter vector
 * (or of one contiguous shard of it, which is how a parameter server uses
 * it) and a step counter.  The arithmetic is the CPU backend's own sgd,
 * momentum and adam operations, reached through a private CPU backend, so
 * an optimizer step on the host and one on a CUDA device are checked
 * against the same reference.  The learning rate of step t follows the
 * linear warm-up of kernels.h before it is handed to those operations.
 *
 * kern_opt_flops and kern_opt_bytes count the per-parameter loops of those
 * operations (cpu.c) under the rules of docs/kernels.md.
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"

#include <math.h>
#include <string.h>

struct KernOptimizer {
  KernOptConfig cfg;
  gsize n;            /* parameters */
  gint64 t;           /* steps taken */
  float *m;           /* (n) momentum velocity v, or Adam's first moment; NULL for SGD */
  float *v;           /* (n) Adam's second moment; NULL otherwise */
  KernBackend *cpu;   /* private CPU backend whose ops do the arithmetic */
};

/* Parses "sgd", "momentum" or "adam" (exact, lower case) into *out; any
 * other name returns FALSE and leaves *out alone. */
gboolean
kern_opt_kind_parse (const char *name, KernOptKind *out)
{
  static const struct { const char *name; KernOptKind kind; } kinds[] = {
    { "sgd", KERN_OPT_SGD },
    { "momentum", KERN_OPT_MOMENTUM },
    { "adam", KERN_OPT_ADAM },
  };
  g_return_val_if_fail (out != NULL, FALSE);
  if (name == NULL)
    return FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS (kinds); i++)
    if (strcmp (name, kinds[i].name) == 0)
      {
        *out = kinds[i].kind;
        return TRUE;
      }
  return FALSE;
}

/* Floats of state per parameter: 0 (SGD), 1 (momentum's v), 2 (Adam's m
 * and v). */
int
kern_opt_state_per_param (KernOptKind kind)
{
  switch (kind)
    {
    case KERN_OPT_SGD:
      return 0;
    case KERN_OPT_MOMENTUM:
      return 1;
    case KERN_OPT_ADAM:
      return 2;
    }
  g_return_val_if_reached (0);
}

/* An optimizer for n parameters with the configuration copied from cfg:
 * state zero, step counter 0.  Preconditions: lr >= 0, warmup >= 0; for
 * momentum 0 <= mu < 1; for Adam 0 <= beta1, beta2 < 1 and eps > 0.  Free
 * with kern_optimizer_free(). */
KernOptimizer *
kern_optimizer_new (const KernOptConfig *cfg, gsize n)
{
  g_return_val_if_fail (cfg != NULL, NULL);
  g_return_val_if_fail (cfg->lr >= 0.0 && cfg->warmup >= 0, NULL);
  g_return_val_if_fail (cfg->kind != KERN_OPT_MOMENTUM
                        || (cfg->momentum >= 0.0 && cfg->momentum < 1.0), NULL);
  g_return_val_if_fail (cfg->kind != KERN_OPT_ADAM
                        || (cfg->beta1 >= 0.0 && cfg->beta1 < 1.0
                            && cfg->beta2 >= 0.0 && cfg->beta2 < 1.0
                            && cfg->eps > 0.0), NULL);

  KernOptimizer *o = g_new0 (KernOptimizer, 1);
  o->cfg = *cfg;
  o->n = n;
  int state = kern_opt_state_per_param (cfg->kind);
  if (state >= 1)
    o->m = g_new0 (float, n);
  if (state >= 2)
    o->v = g_new0 (float, n);
  o->cpu = kern_backend_cpu_new ();
  return o;
}

/* Frees an optimizer and its state; NULL is allowed. */
void
kern_optimizer_free (KernOptimizer *o)
{
  if (o == NULL)
    return;
  g_free (o->m);
  g_free (o->v);
  kern_backend_free (o->cpu);
  g_free (o);
}

/* One step on params (n) with grad (n), which must not overlap: t += 1,
 * lr_t = lr min(1, t / warmup) (lr when warmup = 0, in double, then
 * float), then the kind's update with lr_t (kernels.h). */
void
kern_optimizer_step (KernOptimizer *o, float *params, const float *grad)
{
  g_return_if_fail (o != NULL);
  g_return_if_fail (o->n == 0 || (params != NULL && grad != NULL));

  o->t++;
  double lr = o->cfg.lr;
  if (o->cfg.warmup > 0 && o->t < o->cfg.warmup)
    lr *= (double) o->t / (double) o->cfg.warmup;
  KernBackend *be = o->cpu;
  switch (o->cfg.kind)
    {
    case KERN_OPT_SGD:
      be->ops->sgd (be, params, grad, o->n, (float) lr);
      break;
    case KERN_OPT_MOMENTUM:
      be->ops->momentum (be, params, o->m, grad, o->n, (float) lr,
                         (float) o->cfg.momentum);
      break;
    case KERN_OPT_ADAM:
      be->ops->adam (be, params, o->m, o->v, grad, o->n, (float) lr,
                     (float) o->cfg.beta1, (float) o->cfg.beta2,
                     (float) o->cfg.eps, o->t);
      break;
    }
}

/* Steps taken so far (the t of the last step; 0 before the first). */
void
kern_optimizer_step_into (KernOptimizer *o, float *dst, const float *src, const float *grad)
{
  g_return_if_fail (o != NULL);
  g_return_if_fail (o->n == 0 || (dst != NULL && src != NULL && grad != NULL));
  if (o->cfg.kind != KERN_OPT_SGD)
    {
      memcpy (dst, src, o->n * sizeof (float));
      kern_optimizer_step (o, dst, grad);
      return;
    }
  /* cpu_sgd's p -= lr g with p read from src */
  o->t++;
  double lr = o->cfg.lr;
  if (o->cfg.warmup > 0 && o->t < o->cfg.warmup)
    lr *= (double) o->t / (double) o->cfg.warmup;
  float lr_f = (float) lr;
  for (gsize i = 0; i < o->n; i++)
    dst[i] = src[i] - lr_f * grad[i];
}

/* Floats per block of kern_optimizer_mix_step. */
enum { MIX_BLOCK = 4096 };

void
kern_optimizer_mix_step (KernOptimizer *o, float *dst, int n_srcs, const float *const *srcs,
                         const float *weights, const float *grad, gsize len)
{
  g_return_if_fail (n_srcs >= 1 && srcs != NULL && weights != NULL);
  g_return_if_fail (grad == NULL || (o != NULL && o->n == len));
  gboolean fused = grad && o->cfg.kind == KERN_OPT_SGD;
  float lr_f = 0;
  if (fused)
    {
      o->t++;
      double lr = o->cfg.lr;
      if (o->cfg.warmup > 0 && o->t < o->cfg.warmup)
        lr *= (double) o->t / (double) o->cfg.warmup;
      lr_f = (float) lr;
    }
  if (n_srcs == 3)  /* a ring: one loop, every stream at once */
    {
      const float *s0 = srcs[0], *s1 = srcs[1], *s2 = srcs[2];
      float w0 = weights[0], w1 = weights[1], w2 = weights[2];
      if (fused)
        for (gsize i = 0; i < len; i++)
          {
            float y = w0 * s0[i];
            y += w1 * s1[i];
            y += w2 * s2[i];
            dst[i] = y - lr_f * grad[i];
          }
      else
        for (gsize i = 0; i < len; i++)
          {
            float y = w0 * s0[i];
            y += w1 * s1[i];
            dst[i] = y + w2 * s2[i];
          }
      if (grad && !fused)
        kern_optimizer_step (o, dst, grad);
      return;
    }
  for (gsize b = 0; b < len; b += MIX_BLOCK)
    {
      gsize e = MIN (b + MIX_BLOCK, len);
      const float *s0 = srcs[0];
      float w0 = weights[0];
      for (gsize i = b; i < e; i++)
        dst[i] = w0 * s0[i];
      for (int j = 1; j < n_srcs; j++)
        {
          const float *sj = srcs[j];
          float wj = weights[j];
          for (gsize i = b; i < e; i++)
            dst[i] += wj * sj[i];
        }
      if (fused)
        for (gsize i = b; i < e; i++)
          dst[i] -= lr_f * grad[i];
    }
  if (grad && !fused)
    kern_optimizer_step (o, dst, grad);
}

gint64
kern_optimizer_steps (const KernOptimizer *o)
{
  g_return_val_if_fail (o != NULL, 0);
  return o->t;
}

/* FLOPs of one step on n parameters, the per-parameter loops of cpu.c:
 * SGD 2 (multiply, subtract), momentum 4 (v: multiply, add; p: multiply,
 * subtract), Adam 14 (m 3, v 4, m/c1 and v/c2 2, sqrt, + eps, lr x, divide,
 * subtract 5).  The few scalar operations per step that do not depend on n
 * (warm-up factor, Adam's 1 - beta and bias corrections) are left out. */
double
kern_opt_flops (KernOptKind kind, gsize n)
{
  static const double per_param[] = {
    [KERN_OPT_SGD] = 2.0, [KERN_OPT_MOMENTUM] = 4.0, [KERN_OPT_ADAM] = 14.0,
  };
  g_return_val_if_fail ((int) kind >= 0 && (gsize) kind < G_N_ELEMENTS (per_param), 0.0);
  return per_param[kind] * (double) n;
}

/* Memory bytes of one step on n parameters, 4 per float read or written:
 * SGD reads p and g, writes p (3 floats); momentum reads p, v, g, writes v
 * and p (5); Adam reads p, m, v, g, writes p, m, v (7). */
double
kern_opt_bytes (KernOptKind kind, gsize n)
{
  static const double floats[] = {
    [KERN_OPT_SGD] = 3.0, [KERN_OPT_MOMENTUM] = 5.0, [KERN_OPT_ADAM] = 7.0,
  };
  g_return_val_if_fail ((int) kind >= 0 && (gsize) kind < G_N_ELEMENTS (floats), 0.0);
  return 4.0 * floats[kind] * (double) n;
}
