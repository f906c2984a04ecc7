/*
 * model.c — what every model has in common, whatever its implementation.
 *
 * Functions here read only a model's ops table and layer table, so they
 * serve the dense models of mlp.c and the timing-only workloads alike.
 */
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

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

/* Pipeline stages (kernels.h): dispatch to the model's implementation. */
KernStage *
kern_stage_new (KernModel *m, int first, int last, int n, int slots, float grad_scale)
{
  g_return_val_if_fail (m != NULL, NULL);
  g_return_val_if_fail (0 <= first && first <= last && last < m->n_layers, NULL);
  g_return_val_if_fail (n >= 1 && slots >= 1, NULL);
  if (!m->ops->stage_new)
    return NULL;
  return m->ops->stage_new (m, first, last, n, slots, grad_scale);
}

void
kern_stage_init (KernStage *st, int first, int last, int n, int slots, float grad_scale)
{
  st->first = first;
  st->last = last;
  st->n = n;
  st->slots = slots;
  st->grad_scale_f = grad_scale;
}

void
kern_stage_take_acc (const KernStage *st, float *acc, float *grad)
{
  gsize len = st->hi - st->lo;
  memcpy (grad + st->lo, acc, len * sizeof (float));
  memset (acc, 0, len * sizeof (float));
}

void
kern_stage_set_params (KernStage *st, const float *params)
{
  g_return_if_fail (st != NULL && params != NULL);
  st->set_params (st, params);
}

double
kern_stage_forward (KernStage *st, int slot, const float *in, const float *x, const int *y,
                    float *out)
{
  g_return_val_if_fail (st != NULL && slot >= 0 && slot < st->slots && in != NULL, NAN);
  g_return_val_if_fail (!st->has_loss || y != NULL, NAN);
  g_return_val_if_fail (st->has_loss || out != NULL, NAN);
  return st->forward (st, slot, in, x, y, out);
}

void
kern_stage_backward (KernStage *st, int slot, const float *dout, float *din)
{
  g_return_if_fail (st != NULL && slot >= 0 && slot < st->slots);
  g_return_if_fail (st->has_loss || dout != NULL);
  g_return_if_fail (st->first == 0 || din != NULL);
  st->backward (st, slot, dout, din);
}

void
kern_stage_take_grad (KernStage *st, float *grad)
{
  g_return_if_fail (st != NULL && grad != NULL);
  st->take_grad (st, grad);
}

void
kern_stage_free (KernStage *st)
{
  if (st)
    st->free (st);
}

gboolean
kern_labels_valid (const int *y, gsize rows, int k)
{
  for (gsize i = 0; i < rows; i++)
    if (y[i] < 0 || y[i] >= k)
      return FALSE;
  return TRUE;
}
