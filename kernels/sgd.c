/*
 * sgd.c — the plain stochastic-gradient-descent update and model disposal.
 *
 * The optimizer entry "sgd" (p -= lr g, no state) steps through the
 * backend's sgd operation.  kern_sgd_step() is the same update on a flat
 * parameter vector (or on one contiguous shard of it), for callers without
 * an optimizer.  It is a plain
 * loop rather than cblas_saxpy because BLAS lengths are int and a shard is
 * sized in gsize; the compiler vectorises the loop.
 */
#include "kernels/kernels.h"
#include "kernels/backend.h"

static void
sgd_step (KernBackend *be, const KernOptConfig *cfg G_GNUC_UNUSED, float *p,
          float *m G_GNUC_UNUSED, float *v G_GNUC_UNUSED, const float *g, gsize n, float lr,
          gint64 t G_GNUC_UNUSED)
{
  be->ops->sgd (be, p, g, n, lr);
}

/* p -= lr g: 2 FLOPs per parameter (multiply, subtract); reads p and g,
 * writes p (3 floats). */
const KernOptKind kern_opt_sgd = {
  .name = "sgd",
  .description = "plain SGD: p -= lr g, no state",
  .state_floats = 0,
  .flops = 2.0,
  .floats_moved = 3.0,
  .plain = TRUE,
  .valid = NULL,
  .step = sgd_step,
};

/* params[i] -= lr * grad[i] for i in [0, n).  params and grad must not
 * overlap.  n = 0 is a no-op. */
void
kern_sgd_step (float *params, const float *grad, gsize n, float lr)
{
  g_return_if_fail (n == 0 || (params != NULL && grad != NULL));

  for (gsize i = 0; i < n; i++)
    params[i] -= lr * grad[i];
}

/* FLOPs of kern_sgd_step on n parameters: one multiply and one subtract per
 * parameter, 2n. */
double
kern_sgd_flops (gsize n)
{
  return 2.0 * (double) n;
}

/* Frees a model through its ops table; NULL is allowed. */
void
kern_model_free (KernModel *m)
{
  if (m == NULL)
    return;
  m->ops->free (m);
}
