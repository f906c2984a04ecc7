/*
 * momentum.c — the optimizer "momentum": SGD with a heavy-ball velocity.
 *
 * v = mu v + g; p -= lr v, with v (one float per parameter) zero before
 * the first step; [model] momentum is mu.  The arithmetic is the backend's
 * momentum operation (cpu.c is the reference).
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"

static gboolean
momentum_valid (const KernOptConfig *cfg)
{
  return cfg->momentum >= 0.0 && cfg->momentum < 1.0;
}

static void
momentum_step (KernBackend *be, const KernOptConfig *cfg, float *p, float *m,
               float *v G_GNUC_UNUSED, const float *g, gsize n, float lr,
               gint64 t G_GNUC_UNUSED)
{
  be->ops->momentum (be, p, m, g, n, lr, (float) cfg->momentum);
}

/* 4 FLOPs per parameter (v: multiply, add; p: multiply, subtract); reads
 * p, v and g, writes v and p (5 floats). */
const KernOptKind kern_opt_momentum = {
  .name = "momentum",
  .description = "heavy ball: v = mu v + g, p -= lr v; one float of state per parameter",
  .state_floats = 1,
  .flops = 4.0,
  .floats_moved = 5.0,
  .plain = FALSE,
  .valid = momentum_valid,
  .step = momentum_step,
};
