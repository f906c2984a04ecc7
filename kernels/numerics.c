/*
 * numerics.c — emulation of low-precision number formats in float32 math.
 *
 * The real math runs in float32; a scenario's [numerics] keys make it
 * round, at chosen places of the training step, to a narrower format and
 * carry on in float32 with the rounded value (docs/kernels.md,
 * "Low-precision emulation").  Every format here is a subset of float32,
 * so a rounded value is held exactly.
 *
 * The rounding is written in integer operations on the float's bits, one
 * element at a time with no branch that depends on another element, so
 * that the compiler may vectorise it and every CPU gives the same bits;
 * the only floating-point operations are an integer's conversion and a
 * multiplication by a power of two whose result is representable, both
 * exact.  It assumes the default environment (no flush of subnormals to
 * zero), as the rest of the build does.
 */
#include "config.h"

#include <string.h>

#include "kernels/kernels.h"

/* A format's shape: `mant` stored mantissa bits; `emin` the exponent of
 * its least normal value (2^emin); `max_bits` the float32 bits of its
 * largest finite value; `has_inf` whether overflow gives infinity (else it
 * saturates to the largest finite value). */
typedef struct {
  const char *name;
  int mant;
  int emin;
  guint32 max_bits;
  gboolean has_inf;
} Format;

static const Format formats[KERN_N_FORMATS] = {
  [KERN_FORMAT_FP32] = { "fp32", 23, -126, 0x7f7fffffu, TRUE },
  /* (2 - 2^-7) 2^127 */
  [KERN_FORMAT_BF16] = { "bf16", 7, -126, 0x7f7f0000u, TRUE },
  /* 65504 = (2 - 2^-10) 2^15 */
  [KERN_FORMAT_FP16] = { "fp16", 10, -14, 0x477fe000u, TRUE },
  /* 448 = 1.75 x 2^8: the code S.1111.111 is NaN, so 1.75 is the largest
   * mantissa of the top exponent */
  [KERN_FORMAT_FP8_E4M3] = { "fp8-e4m3", 3, -6, 0x43e00000u, FALSE },
  /* 57344 = 1.75 x 2^15 */
  [KERN_FORMAT_FP8_E5M2] = { "fp8-e5m2", 2, -14, 0x47600000u, TRUE },
};

const char *
kern_format_name (KernFormat f)
{
  g_return_val_if_fail (f >= 0 && f < KERN_N_FORMATS, "?");
  return formats[f].name;
}

gboolean
kern_format_parse (const char *name, KernFormat *out)
{
  for (int f = 0; f < KERN_N_FORMATS; f++)
    if (strcmp (name, formats[f].name) == 0)
      {
        *out = (KernFormat) f;
        return TRUE;
      }
  return FALSE;
}

static inline guint32
bits_of (float x)
{
  guint32 u;
  memcpy (&u, &x, sizeof u);
  return u;
}

static inline float
float_of (guint32 u)
{
  float x;
  memcpy (&x, &u, sizeof x);
  return x;
}

/* x rounded to format fm, to nearest with ties to even (see the file
 * header for the rules on NaN, infinity and overflow). */
static inline float
round_one (const Format *fm, float x, float sub_quantum)
{
  guint32 u = bits_of (x);
  guint32 sign = u & 0x80000000u, a = u & 0x7fffffffu;
  int e = (int) (a >> 23);                      /* biased; 0: subnormal */
  int emin_b = fm->emin + 127;                  /* >= 1 */
  int drop = 23 - fm->mant;                     /* mantissa bits dropped */
  guint32 r;
  if (e >= emin_b || fm->emin == -126)
    {
      /* the target's normal range (bf16: everywhere, its subnormals being
       * float32's): round the low `drop` bits of the encoding; a carry
       * moves into the exponent as it should */
      guint32 half = (1u << drop >> 1) - 1u + ((a >> drop) & 1u);
      r = (a + half) & ~((1u << drop) - 1u);
    }
  else
    {
      /* below the target's least normal value: a multiple of its least
       * subnormal 2^(emin - mant), in a float32 significand M x 2^(e - 150) */
      int eff = e > 0 ? e : 1;
      guint32 M = e > 0 ? (a & 0x7fffffu) | 0x800000u : a;
      int k = drop + (emin_b - eff);            /* > drop */
      k = k > 31 ? 31 : k;                      /* M < 2^24: 0 from k = 25 */
      guint32 q = (M + ((1u << (k - 1)) - 1u) + ((M >> k) & 1u)) >> k;
      r = bits_of ((float) q * sub_quantum);
    }
  if (r > fm->max_bits)
    r = fm->has_inf ? 0x7f800000u : fm->max_bits;
  /* infinity stays infinity where the format has it, saturates where not;
   * NaN stays NaN (quietened) */
  r = a == 0x7f800000u ? (fm->has_inf ? a : fm->max_bits) : r;
  r = a > 0x7f800000u ? a | 0x00400000u : r;
  return float_of (sign | r);
}

float
kern_round_one (KernFormat f, float x)
{
  g_return_val_if_fail (f >= 0 && f < KERN_N_FORMATS, x);
  if (f == KERN_FORMAT_FP32)
    return x;
  const Format *fm = &formats[f];
  /* 2^(emin - mant), a float32 normal for every format but bf16, whose
   * branch never uses it */
  float sub = f == KERN_FORMAT_BF16 ? 0.0f : float_of ((guint32) (fm->emin - fm->mant + 127) << 23);
  return round_one (fm, x, sub);
}

void
kern_round_to (KernFormat f, float *x, gsize n)
{
  g_return_if_fail (f >= 0 && f < KERN_N_FORMATS);
  if (f == KERN_FORMAT_FP32)
    return;
  const Format *fm = &formats[f];
  float sub = f == KERN_FORMAT_BF16 ? 0.0f : float_of ((guint32) (fm->emin - fm->mant + 127) << 23);
  for (gsize i = 0; i < n; i++)
    x[i] = round_one (fm, x[i], sub);
}

void
kern_round_scaled (KernFormat f, float *x, gsize n, float scale)
{
  if (f == KERN_FORMAT_FP32)
    return;
  if (scale == 1.0f || !(scale > 0.0f))
    {
      kern_round_to (f, x, n);
      return;
    }
  for (gsize i = 0; i < n; i++)
    x[i] *= scale;
  kern_round_to (f, x, n);
  for (gsize i = 0; i < n; i++)
    x[i] /= scale;
}

gboolean
kern_numerics_active (const KernNumerics *num)
{
  return num && (num->weights != KERN_FORMAT_FP32 || num->gradients != KERN_FORMAT_FP32
                 || num->communication != KERN_FORMAT_FP32
                 || num->activations != KERN_FORMAT_FP32);
}

float
kern_numerics_scale (const KernNumerics *num)
{
  return num && num->loss_scale > 0.0f ? num->loss_scale : 1.0f;
}

void
kern_scaler_reset (KernScaler *s, const KernNumerics *num)
{
  s->scale = kern_numerics_scale (num);
  s->clean = 0;
  s->skipped = 0;
}

gboolean
kern_all_finite (const float *x, gsize n)
{
  /* an exponent field of all ones is inf or NaN; OR-ing a flag keeps the
   * loop free of an early exit, so that it vectorises */
  guint32 bad = 0;
  for (gsize i = 0; i < n; i++)
    bad |= (bits_of (x[i]) & 0x7f800000u) == 0x7f800000u;
  return bad == 0;
}

gboolean
kern_scaler_update (KernScaler *s, const KernNumerics *num, gboolean finite)
{
  if (!finite)
    {
      if (s->scale > 0x1p-126f)
        s->scale *= 0.5f;
      s->clean = 0;
      s->skipped++;
      return FALSE;
    }
  if (++s->clean >= MAX (num->growth_interval, 1))
    {
      if (s->scale < 0x1p126f)
        s->scale *= 2.0f;
      s->clean = 0;
    }
  return TRUE;
}
