/*
 * compress-topk.c — top-k sparsification with error feedback: of g + e,
 * only the k = ceil(ratio x n) entries of largest magnitude are sent, as
 * (4-byte index, 4-byte value) pairs; the rest stays in e and joins the
 * next gradient (Stich, Cordonnier and Jaggi, "Sparsified SGD with memory",
 * NeurIPS 2018; Lin et al., "Deep gradient compression", ICLR 2018).  Ties
 * at the threshold are broken by index, lowest first.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/compress.h"

static gsize
kept (const BaseValues *v, gsize n)
{
  double k = ceil (base_values_double (v, "policy.ratio") * (double) n);
  return (gsize) CLAMP (k, 1.0, (double) n);
}

static double
topk_bytes (const BaseValues *v, gsize n)
{
  return 8.0 * (double) kept (v, n);
}

/* The k-th largest of a[0..n) (1 <= k <= n), reordering a: quickselect
 * with Hoare's partition around the middle element (deterministic). */
static float
kth_largest (float *a, gsize n, gsize k)
{
  gssize lo = 0, hi = (gssize) n - 1, want = (gssize) k - 1;
  while (lo < hi)
    {
      float pivot = a[lo + (hi - lo) / 2];
      gssize i = lo, j = hi;
      while (i <= j)
        {
          while (a[i] > pivot)
            i++;
          while (a[j] < pivot)
            j--;
          if (i <= j)
            {
              float t = a[i];
              a[i++] = a[j];
              a[j--] = t;
            }
        }
      /* now a[lo..j] >= pivot >= a[i..hi], and a[j+1..i-1] == pivot */
      if (want <= j)
        hi = j;
      else if (want >= i)
        lo = i;
      else
        break;
    }
  return a[want];
}

static void
topk_apply (const BaseValues *v, float *g, float *e, gsize n, EngRng *rng G_GNUC_UNUSED)
{
  if (n == 0)
    return;
  gsize k = kept (v, n);
  float *mag = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    {
      g[i] += e[i];
      mag[i] = fabsf (g[i]);
    }
  float thr = kth_largest (mag, n, k);
  gsize above = 0;
  for (gsize i = 0; i < n; i++)
    above += fabsf (g[i]) > thr;
  gsize ties = k - above; /* entries equal to thr still to keep */
  for (gsize i = 0; i < n; i++)
    {
      float a = fabsf (g[i]);
      gboolean keep = a > thr || (a == thr && ties > 0 && ties--);
      e[i] = keep ? 0.0f : g[i];
      if (!keep)
        g[i] = 0.0f;
    }
  g_free (mag);
}

static const BaseKey topk_keys[] = {
  { "policy", "ratio", BASE_KEY_QUANTITY, 0, "0.01", 0, 1, BASE_OPEN_MIN, NULL, 0,
    "compression = top-k: share of a gradient's entries sent, k = ceil(ratio x n).", NULL },
  { .section = NULL },
};

const PolCompressor pol_compress_top_k = {
  .name = "top-k",
  .description = "the k = ceil(ratio x n) largest entries of gradient + memory, as (index, value) pairs of 8 bytes; the rest is remembered (error feedback)",
  .source = "S. U. Stich, J.-B. Cordonnier, M. Jaggi: Sparsified SGD with memory, NeurIPS 2018",
  .keys = topk_keys,
  .feedback = TRUE,
  .wire_bytes = topk_bytes,
  .apply = topk_apply,
};
