/*
 * adam.c — the optimizer "adam": Adam with bias correction.
 *
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) at step t >= 1, with
 * m and v (two floats per parameter) zero before the first step; [model]
 * beta1, beta2 and eps are b1, b2 and eps.  The arithmetic is the backend's
 * adam operation (cpu.c is the reference).
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"

static gboolean
adam_valid (const KernOptConfig *cfg)
{
  return cfg->beta1 >= 0.0 && cfg->beta1 < 1.0 && cfg->beta2 >= 0.0 && cfg->beta2 < 1.0
         && cfg->eps > 0.0;
}

static void
adam_step (KernBackend *be, const KernOptConfig *cfg, float *p, float *m, float *v,
           const float *g, gsize n, float lr, gint64 t)
{
  be->ops->adam (be, p, m, v, g, n, lr, (float) cfg->beta1, (float) cfg->beta2,
                 (float) cfg->eps, t);
}

/* 14 FLOPs per parameter (m 3, v 4, m/c1 and v/c2 2, sqrt, + eps, lr x,
 * divide, subtract 5); reads p, m, v and g, writes p, m and v (7 floats). */
const KernOptKind kern_opt_adam = {
  .name = "adam",
  .description = "Adam: first and second moments with bias correction (beta1, beta2, eps); two floats of state per parameter",
  .state_floats = 2,
  .flops = 14.0,
  .floats_moved = 7.0,
  .plain = FALSE,
  .valid = adam_valid,
  .step = adam_step,
};
