/*
 * optim.c — the optimizer registry and the state every optimizer keeps.
 *
 * A KernOptimizer owns the per-parameter state of one flat parameter vector
 * (or of one contiguous shard of it, which is how a parameter server uses
 * it) and a step counter.  Each optimizer is an entry (KernOptKind) in a
 * file of its own (sgd.c, momentum.c, adam.c) whose step calls the CPU
 * backend's operation of the same update, reached through a private CPU
 * backend, so
 * an optimizer step on the host and one on a CUDA device are checked
 * against the same reference.  The learning rate of step t follows the
 * linear warm-up of kernels.h before it is handed to those operations.
 *
 * kern_opt_flops and kern_opt_bytes count the per-parameter loops of those
 * operations (cpu.c) under the rules of docs/kernels.md, from the entry's
 * own counts.
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

/* The optimizers: one file each, one line here. */
static const KernOptKind *const kinds[] = {
  &kern_opt_sgd,
  &kern_opt_momentum,
  &kern_opt_adam,
  NULL,
};

const void *const *
kern_opt_entries (void)
{
  return (const void *const *) kinds;
}

const KernOptKind *
kern_opt_lookup (const char *name)
{
  return name ? base_registry_find ((const void *const *) kinds, name) : NULL;
}

const KernOptKind *
kern_opt_default (void)
{
  return kinds[0];
}

/* Floats of state per parameter: the kind's m and v. */
int
kern_opt_state_per_param (const KernOptKind *kind)
{
  g_return_val_if_fail (kind != NULL, 0);
  return kind->state_floats;
}

/* An optimizer for n parameters with the configuration copied from cfg:
 * state zero, step counter 0.  Preconditions: a kind, lr >= 0, warmup >= 0
 * and the kind's own (its `valid`).  Free with kern_optimizer_free(). */
KernOptimizer *
kern_optimizer_new (const KernOptConfig *cfg, gsize n)
{
  g_return_val_if_fail (cfg != NULL, NULL);
  g_return_val_if_fail (cfg->kind != NULL, NULL);
  g_return_val_if_fail (cfg->lr >= 0.0 && cfg->warmup >= 0, NULL);
  g_return_val_if_fail (!cfg->kind->valid || cfg->kind->valid (cfg), NULL);

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
  o->cfg.kind->step (o->cpu, &o->cfg, params, o->m, o->v, grad, o->n, (float) lr, o->t);
}

/* Floats per block of the fused passes: a block of every stream (the
 * parameters, the gradient, the sources, the optimizer state) stays in
 * cache from its first loop to the optimizer's, so that a copy, a mix or
 * a scaling and the step take one pass over memory. */
enum { FUSE_BLOCK = 16384 };

/* The start of a step: t += 1, then lr_t (as kern_optimizer_step). */
static float
opt_begin (KernOptimizer *o)
{
  o->t++;
  double lr = o->cfg.lr;
  if (o->cfg.warmup > 0 && o->t < o->cfg.warmup)
    lr *= (double) o->t / (double) o->cfg.warmup;
  return (float) lr;
}

/* The kind's update of p[lo, hi) with g[lo, hi) at the current step: the
 * update is element by element, so a step cut into blocks gives the floats
 * of one call over the whole vector. */
static void
opt_block (KernOptimizer *o, float *p, const float *g, gsize lo, gsize hi, float lr)
{
  o->cfg.kind->step (o->cpu, &o->cfg, p + lo, o->m ? o->m + lo : NULL, o->v ? o->v + lo : NULL,
                     g + lo, hi - lo, lr, o->t);
}

void
kern_optimizer_step_into (KernOptimizer *o, float *dst, const float *src, const float *grad)
{
  g_return_if_fail (o != NULL);
  g_return_if_fail (o->n == 0 || (dst != NULL && src != NULL && grad != NULL));
  float lr_f = opt_begin (o);
  if (o->cfg.kind->plain)
    {
      /* cpu_sgd's p -= lr g with p read from src */
      for (gsize i = 0; i < o->n; i++)
        dst[i] = src[i] - lr_f * grad[i];
      return;
    }
  for (gsize b = 0; b < o->n; b += FUSE_BLOCK)
    {
      gsize e = MIN (b + FUSE_BLOCK, o->n);
      memcpy (dst + b, src + b, (e - b) * sizeof (float));
      opt_block (o, dst, grad, b, e, lr_f);
    }
}

void
kern_optimizer_step_zero (KernOptimizer *o, float *dst, const float *grad)
{
  g_return_if_fail (o != NULL);
  g_return_if_fail (o->n == 0 || (dst != NULL && grad != NULL));
  float lr_f = opt_begin (o);
  if (o->cfg.kind->plain)
    {
      /* cpu_sgd's p -= lr g with p = 0 */
      for (gsize i = 0; i < o->n; i++)
        dst[i] = 0.0f - lr_f * grad[i];
      return;
    }
  for (gsize b = 0; b < o->n; b += FUSE_BLOCK)
    {
      gsize e = MIN (b + FUSE_BLOCK, o->n);
      memset (dst + b, 0, (e - b) * sizeof (float));
      opt_block (o, dst, grad, b, e, lr_f);
    }
}

void
kern_optimizer_step_scaled (KernOptimizer *o, float *params, float *grad, float scale)
{
  g_return_if_fail (o != NULL);
  g_return_if_fail (o->n == 0 || (params != NULL && grad != NULL));
  float lr_f = opt_begin (o);
  for (gsize b = 0; b < o->n; b += FUSE_BLOCK)
    {
      gsize e = MIN (b + FUSE_BLOCK, o->n);
      for (gsize i = b; i < e; i++)
        grad[i] *= scale;
      opt_block (o, params, grad, b, e, lr_f);
    }
}

void
kern_optimizer_mix_step (KernOptimizer *o, float *dst, int n_srcs, const float *const *srcs,
                         const float *weights, const float *grad, gsize len)
{
  g_return_if_fail (n_srcs >= 1 && srcs != NULL && weights != NULL);
  g_return_if_fail (grad == NULL || (o != NULL && o->n == len));
  gboolean plain = grad && o->cfg.kind->plain;
  float lr_f = grad ? opt_begin (o) : 0;
  for (gsize b = 0; b < len; b += FUSE_BLOCK)
    {
      gsize e = MIN (b + FUSE_BLOCK, len);
      if (n_srcs == 3)  /* a ring: one loop, every stream at once */
        {
          const float *s0 = srcs[0], *s1 = srcs[1], *s2 = srcs[2];
          float w0 = weights[0], w1 = weights[1], w2 = weights[2];
          if (plain)
            for (gsize i = b; i < e; i++)
              {
                float y = w0 * s0[i];
                y += w1 * s1[i];
                y += w2 * s2[i];
                dst[i] = y - lr_f * grad[i];
              }
          else
            for (gsize i = b; i < e; i++)
              {
                float y = w0 * s0[i];
                y += w1 * s1[i];
                dst[i] = y + w2 * s2[i];
              }
        }
      else
        {
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
          if (plain)
            for (gsize i = b; i < e; i++)
              dst[i] -= lr_f * grad[i];
        }
      if (grad && !plain)
        opt_block (o, dst, grad, b, e, lr_f);
    }
}

/* Steps taken so far (the t of the last step; 0 before the first). */
gint64
kern_optimizer_steps (const KernOptimizer *o)
{
  g_return_val_if_fail (o != NULL, 0);
  return o->t;
}

/* FLOPs of one step on n parameters: the kind's count per parameter of
 * the per-parameter loop of cpu.c (each optimizer's file says what it
 * counts).  The few scalar operations per step that do not depend on n
 * (warm-up factor, Adam's 1 - beta and bias corrections) are left out. */
double
kern_opt_flops (const KernOptKind *kind, gsize n)
{
  g_return_val_if_fail (kind != NULL, 0.0);
  return kind->flops * (double) n;
}

/* Memory bytes of one step on n parameters, 4 per float read or written
 * (the kind's floats_moved per parameter). */
double
kern_opt_bytes (const KernOptKind *kind, gsize n)
{
  g_return_val_if_fail (kind != NULL, 0.0);
  return 4.0 * kind->floats_moved * (double) n;
}
