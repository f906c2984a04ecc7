/*
 * compress-sign.c — 1-bit quantization with error feedback (Seide et al.,
 * "1-bit stochastic gradient descent and its application to data-parallel
 * distributed training of speech DNNs", Interspeech 2014; the scaled sign
 * of Karimireddy et al., "Error feedback fixes SignSGD", ICML 2019): of
 * v = g + e, entry i is sent as its sign, decoded as sign(v_i) mean|v|;
 * e = v - decoded.  On the wire: one bit per entry and the scale (4 bytes).
 */
#include "config.h"

#include <math.h>

#include "policies/compress.h"

static double
sign_bytes (const BaseValues *v G_GNUC_UNUSED, gsize n)
{
  return 4.0 + ceil ((double) n / 8.0);
}

static void
sign_apply (const BaseValues *v G_GNUC_UNUSED, float *g, float *e, gsize n,
            EngRng *rng G_GNUC_UNUSED)
{
  if (n == 0)
    return;
  double sum = 0;
  for (gsize i = 0; i < n; i++)
    {
      g[i] += e[i];
      sum += fabs (g[i]);
    }
  float scale = (float) (sum / (double) n);
  for (gsize i = 0; i < n; i++)
    {
      float q = g[i] < 0 ? -scale : scale;
      e[i] = g[i] - q;
      g[i] = q;
    }
}

const PolCompressor pol_compress_sign = {
  .name = "sign",
  .description = "1-bit SGD: the sign of each entry of gradient + memory, scaled by their mean magnitude; the rest is remembered (error feedback)",
  .source = "F. Seide et al.: 1-bit stochastic gradient descent and its application to data-parallel distributed training of speech DNNs, Interspeech 2014",
  .feedback = TRUE,
  .wire_bytes = sign_bytes,
  .apply = sign_apply,
};
