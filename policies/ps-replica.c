/*
 * ps-replica.c — replicas of the parameter server's key ranges: for every
 * range and every chain position after the primary, a copy of the range's
 * parameters, its optimizer and (BSP) the round's gradient sum, stepped
 * exactly as the primary steps its own copy (policies/ps.c server_step and
 * on_update_done: the round's sum in arrival order, scaled by 1/W, then one
 * optimizer step; or one step per gradient).  See ps-replica.h.
 */
#include "config.h"

#include <string.h>

#include "policies/ps-replica.h"

typedef struct {
  float *params;         /* (len) the range's parameters, or NULL */
  KernOptimizer *opt;    /* its optimizer state, or NULL */
  float *round_sum;      /* BSP: (len) the open round's sum, or NULL */
  gint64 round_n;        /* BSP: gradients in round_sum */
  gint64 *applied;       /* (W) gradients applied per worker */
} PolReplica;

struct PolReplicas {
  int k;                 /* servers per chain */
  int W;                 /* workers */
  int n_ranges;
  gsize *len;            /* (n_ranges) keys of each range */
  gboolean bsp;
  PolReplica *rep;       /* (n_ranges x (k - 1)) position h of range r at
                          * r (k - 1) + h - 1 */
};

static PolReplica *
replica_at (const PolReplicas *rp, int r, int h)
{
  g_assert (r >= 0 && r < rp->n_ranges && h >= 1 && h < rp->k);
  return &rp->rep[(gsize) r * (rp->k - 1) + (h - 1)];
}

PolReplicas *
pol_replicas_new (const PolPartition *part, int k, int W, const float *init,
                  const KernOptConfig *opt, gboolean bsp)
{
  g_return_val_if_fail (k >= 2 && k <= part->depth && W >= 1, NULL);
  PolReplicas *rp = g_new0 (PolReplicas, 1);
  rp->k = k;
  rp->W = W;
  rp->bsp = bsp;
  rp->n_ranges = part->n_ranges;
  rp->len = g_new (gsize, MAX (part->n_ranges, 1));
  rp->rep = g_new0 (PolReplica, (gsize) MAX (part->n_ranges, 1) * (k - 1));
  for (int r = 0; r < part->n_ranges; r++)
    {
      gsize lo = part->ranges[r].lo, len = part->ranges[r].hi - lo;
      rp->len[r] = len;
      for (int h = 1; h < k; h++)
        {
          PolReplica *x = replica_at (rp, r, h);
          x->applied = g_new0 (gint64, W);
          if (!init)
            continue;
          x->params = g_memdup2 (init + lo, len * sizeof (float));
          x->opt = kern_optimizer_new (opt, len);
          if (bsp)
            x->round_sum = g_new0 (float, len);
        }
    }
  return rp;
}

void
pol_replicas_free (PolReplicas *rp)
{
  if (!rp)
    return;
  for (gsize i = 0; i < (gsize) rp->n_ranges * (rp->k - 1); i++)
    {
      PolReplica *x = &rp->rep[i];
      g_free (x->params);
      if (x->opt)
        kern_optimizer_free (x->opt);
      g_free (x->round_sum);
      g_free (x->applied);
    }
  g_free (rp->rep);
  g_free (rp->len);
  g_free (rp);
}

int
pol_replicas_k (const PolReplicas *rp)
{
  return rp->k;
}

gboolean
pol_replicas_apply (PolReplicas *rp, int r, int h, int w, gint64 iter, const float *grad)
{
  PolReplica *x = replica_at (rp, r, h);
  g_assert (w >= 0 && w < rp->W);
  if (iter < x->applied[w])
    return FALSE; /* a resent gradient this replica already holds */
  g_assert (iter == x->applied[w]);
  x->applied[w]++;
  gsize len = rp->len[r];
  if (!x->params)
    return TRUE;
  if (!rp->bsp)
    {
      kern_optimizer_step (x->opt, x->params, grad);
      return TRUE;
    }
  /* the primary's round: the sum in arrival order, times 1/W, one step */
  for (gsize i = 0; i < len; i++)
    x->round_sum[i] += grad[i];
  if (++x->round_n == rp->W)
    {
      float inv = 1.0f / (float) x->round_n;
      for (gsize i = 0; i < len; i++)
        x->round_sum[i] *= inv;
      kern_optimizer_step (x->opt, x->params, x->round_sum);
      memset (x->round_sum, 0, len * sizeof (float));
      x->round_n = 0;
    }
  return TRUE;
}

const float *
pol_replicas_params (const PolReplicas *rp, int r, int h)
{
  return replica_at (rp, r, h)->params;
}

gint64
pol_replicas_applied (const PolReplicas *rp, int r, int h, int w)
{
  return replica_at (rp, r, h)->applied[w];
}

void
pol_replicas_promote (PolReplicas *rp, int r, int h, float *params, KernOptimizer **opt,
                      float *round_sum, gint64 *round_n, gint64 *held)
{
  PolReplica *x = replica_at (rp, r, h);
  gsize len = rp->len[r];
  g_assert (x->applied != NULL); /* promoted once */
  memcpy (held, x->applied, rp->W * sizeof (gint64));
  *round_n = x->round_n;
  if (params && x->params)
    memcpy (params, x->params, len * sizeof (float));
  if (round_sum && x->round_sum)
    memcpy (round_sum, x->round_sum, len * sizeof (float));
  if (opt && x->opt)
    {
      kern_optimizer_free (*opt);
      *opt = x->opt;
      x->opt = NULL;
    }
  g_clear_pointer (&x->params, g_free);
  g_clear_pointer (&x->round_sum, g_free);
  g_clear_pointer (&x->applied, g_free);
}
