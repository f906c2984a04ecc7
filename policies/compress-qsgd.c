/*
 * compress-qsgd.c — QSGD (Alistarh et al., "QSGD: communication-efficient
 * SGD via gradient quantization and encoding", NeurIPS 2017): with s =
 * 2^(bits-1) - 1 levels, entry i becomes |g|_2 sign(g_i) l_i / s, l_i the
 * level below or above s |g_i| / |g|_2, the upper with probability equal to
 * the remainder (unbiased stochastic rounding).  On the wire: the norm (4
 * bytes) and `bits` bits per entry (sign and level; no entropy coding).
 */
#include "config.h"

#include <math.h>

#include "policies/compress.h"

static double
levels (const BaseValues *v)
{
  return ldexp (1.0, (int) base_values_int (v, "policy.bits") - 1) - 1;
}

static double
qsgd_bytes (const BaseValues *v, gsize n)
{
  return 4.0 + (double) n * (double) base_values_int (v, "policy.bits") / 8.0;
}

static void
qsgd_apply (const BaseValues *v, float *g, float *e G_GNUC_UNUSED, gsize n, EngRng *rng)
{
  double norm = 0, s = levels (v);
  for (gsize i = 0; i < n; i++)
    norm += (double) g[i] * g[i];
  norm = sqrt (norm);
  if (norm == 0)
    return;
  for (gsize i = 0; i < n; i++)
    {
      double r = fabs (g[i]) / norm * s;
      double l = floor (r);
      if (eng_rng_uniform (rng) < r - l)
        l += 1;
      g[i] = (float) (copysign (norm * l / s, g[i]));
    }
}

static const BaseKey qsgd_keys[] = {
  { "policy", "bits", BASE_KEY_INT, 0, "4", 2, 16, 0, NULL, 0,
    "compression = qsgd: bits per entry, sign included: 2^(bits-1) - 1 levels.", NULL },
  { .section = NULL },
};

const PolCompressor pol_compress_qsgd = {
  .name = "qsgd",
  .description = "each entry stochastically rounded to one of 2^(bits-1) - 1 levels of the gradient's norm (unbiased), bits per entry plus the norm",
  .source = "D. Alistarh et al.: QSGD: communication-efficient SGD via gradient quantization and encoding, NeurIPS 2017",
  .keys = qsgd_keys,
  .wire_bytes = qsgd_bytes,
  .apply = qsgd_apply,
};
