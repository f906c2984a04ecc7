/*
 * model.c — what every model has in common, whatever its implementation.
 *
 * Functions here read only a model's ops table and layer table, so they
 * serve the dense models of mlp.c and the timing-only workloads alike.
 */
#include "kernels/kernels.h"

#include <math.h>

/* Bytes a worker's device holds to train m with batch n (kernels.h):
 *   4 (2 P + opt_state_floats) + 4 n sum_layers activations,
 * P = m's parameter count: parameters and gradients, the optimizer's
 * state, and the activations the layers keep from forward for backward. */
double
kern_model_memory_bytes (const KernModel *m, int n, gsize opt_state_floats)
{
  g_return_val_if_fail (m != NULL && n >= 0, NAN);

  double act = 0.0;                 /* floats per sample */
  for (int i = 0; i < m->n_layers; i++)
    act += m->layers[i].activations;
  double P = (double) m->ops->n_params (m);
  return 4.0 * (2.0 * P + (double) opt_state_floats) + 4.0 * (double) n * act;
}
