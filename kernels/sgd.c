/*
 * sgd.c — the plain stochastic-gradient-descent update and model disposal.
 *
 * kern_sgd_step() is the optimizer a worker or parameter server applies to a
 * flat parameter vector (or to one contiguous shard of it).  It is a plain
 * loop rather than cblas_saxpy because BLAS lengths are int and a shard is
 * sized in gsize; the compiler vectorises the loop.
 */
#include "kernels/kernels.h"

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
