/*
 * fmath.c — transcendental functions with the same bits on every CPU.
 *
 * Each function reduces its argument with constants split so that the
 * products that matter are exact, then evaluates a Taylor polynomial by
 * Horner's rule: only +, -, *, / of doubles, each rounded once, in an
 * order fixed by the source.  Nothing here calls the C library's exp, log,
 * sin, cos or pow (which the dynamic loader picks by CPU), and scaling by
 * powers of two is done by building the power from its bits.
 *
 * The split constants are the usual ones of Cody and Waite's reduction:
 * ln 2 and pi/2 cut into a head with trailing zero bits (so that k times
 * the head is exact for the k that occur) and a tail.
 */
#include "base/fmath.h"

#include <math.h>
#include <string.h>

/* ln 2 = LN2_HI + LN2_LO; LN2_HI has 32 trailing zero bits. */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define INV_LN2 1.44269504088896338700e+00
/* pi/2 in three 33-bit pieces; 2/pi. */
#define PIO2_1 1.57079632673412561417e+00
#define PIO2_2 6.07710050630396597660e-11
#define PIO2_3 2.02226624871116645580e-21
#define INV_PIO2 6.36619772367581382433e-01

/* 2^k as a double, for -1022 <= k <= 1023, from its bits. */
static double
pow2 (int k)
{
  guint64 bits = (guint64) (k + 1023) << 52;
  double d;
  memcpy (&d, &bits, sizeof d);
  return d;
}

/* p 2^k for any int k: one exact product while the result is normal, and
 * a second, rounded once, when it is not. */
static double
scale2 (double p, int k)
{
  if (k > 1023)
    return p * pow2 (1023) * pow2 (k - 1023 > 1023 ? 1023 : k - 1023);
  if (k < -1022)
    return p * pow2 (-1022) * pow2 (k + 1022 < -1022 ? -1022 : k + 1022);
  return p * pow2 (k);
}

double
base_exp (double x)
{
  if (isnan (x))
    return x;
  if (x > 7.09782712893383973096e+02)
    return HUGE_VAL;
  if (x < -7.45133219101941108420e+02)
    return 0.0;
  /* x = k ln 2 + r, |r| <= ln 2 / 2 (k ln2_hi is exact: |k| < 2^11) */
  double k = floor (x * INV_LN2 + 0.5);
  double r = (x - k * LN2_HI) - k * LN2_LO;
  /* e^r = 1 + r + r^2 (1/2! + r/3! + ... + r^11/13!): the next term,
   * r^14/14!, is below 2^-60 for |r| <= 0.35 */
  static const double c[] = {
    1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
    1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800,
    1.0 / 479001600, 1.0 / 6227020800.0,
  };
  double q = c[G_N_ELEMENTS (c) - 1];
  for (int i = (int) G_N_ELEMENTS (c) - 2; i >= 0; i--)
    q = q * r + c[i];
  double p = 1.0 + (r + r * r * q);
  return scale2 (p, (int) k);
}

float
base_expf (float x)
{
  return (float) base_exp ((double) x);
}

double
base_log (double x)
{
  if (isnan (x) || x == HUGE_VAL)
    return x;
  if (x < 0)
    return NAN;
  if (x == 0)
    return -HUGE_VAL;
  /* x = 2^e m with m in (sqrt(1/2), sqrt(2)] */
  int e = 0;
  if (x < 2.2250738585072014e-308)   /* subnormal: make it normal first */
    {
      x *= pow2 (54);
      e = -54;
    }
  guint64 bits;
  memcpy (&bits, &x, sizeof bits);
  e += (int) ((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;   /* m in [1, 2) */
  double m;
  memcpy (&m, &bits, sizeof m);
  if (m > G_SQRT2)
    {
      m *= 0.5;
      e += 1;
    }
  /* log(1 + f) with f = m - 1 exact and s = f / (2 + f):
   *   log(1 + f) = 2s + 2s^3/3 + 2s^5/5 + ... = f - (f^2/2 - s (f^2/2 + R)),
   * R = 2/3 z + 2/5 z^2 + ..., z = s^2 <= 0.0295; terms to z^11/23 leave
   * under 2^-60 */
  double f = m - 1.0;
  double s = f / (2.0 + f);
  double z = s * s;
  double R = 2.0 / 23;
  for (int n = 21; n >= 3; n -= 2)
    R = R * z + 2.0 / n;
  R *= z;
  double hfsq = 0.5 * f * f;
  double dk = (double) e;
  return dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f);
}

double
base_log1p (double x)
{
  if (isnan (x) || x == HUGE_VAL)
    return x;
  if (x < -1.0)
    return NAN;
  if (x == -1.0)
    return -HUGE_VAL;
  double u = 1.0 + x;
  if (u == 1.0)
    return x;
  /* log(u) carries the rounding of 1 + x; x / (u - 1) corrects it (u - 1
   * is exact for u in [1/2, 2]) */
  return base_log (u) * (x / (u - 1.0));
}

/* r = x - n pi/2 with n the nearest integer to x / (pi/2); returns n mod 4. */
static int
reduce_pio2 (double x, double *r)
{
  double n = floor (x * INV_PIO2 + 0.5);
  *r = ((x - n * PIO2_1) - n * PIO2_2) - n * PIO2_3;
  return (int) (fmod (n, 4.0) + 4.0) & 3;
}

/* sin r for |r| <= pi/4: r + r^3 (-1/3! + r^2/5! - ... + r^16/19!) */
static double
sin_core (double r)
{
  static const double c[] = {
    -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
    1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
    -1.0 / 121645100408832000.0,
  };
  double z = r * r;
  double q = c[G_N_ELEMENTS (c) - 1];
  for (int i = (int) G_N_ELEMENTS (c) - 2; i >= 0; i--)
    q = q * z + c[i];
  return r + r * z * q;
}

/* cos r for |r| <= pi/4: 1 - r^2/2 + r^4 (1/4! - r^2/6! + ... + r^14/18!) */
static double
cos_core (double r)
{
  static const double c[] = {
    1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600,
    -1.0 / 87178291200.0, 1.0 / 20922789888000.0, -1.0 / 6402373705728000.0,
  };
  double z = r * r;
  double q = c[G_N_ELEMENTS (c) - 1];
  for (int i = (int) G_N_ELEMENTS (c) - 2; i >= 0; i--)
    q = q * z + c[i];
  double hz = 0.5 * z;
  double w = 1.0 - hz;
  /* w carries the rounding of 1 - hz; ((1 - w) - hz) is it, exactly */
  return w + (((1.0 - w) - hz) + z * z * q);
}

double
base_sin (double x)
{
  if (!isfinite (x))
    return x - x;   /* NaN for NaN and for +-inf */
  double r;
  switch (reduce_pio2 (x, &r))
    {
    case 0: return sin_core (r);
    case 1: return cos_core (r);
    case 2: return -sin_core (r);
    default: return -cos_core (r);
    }
}

double
base_cos (double x)
{
  if (!isfinite (x))
    return x - x;
  double r;
  switch (reduce_pio2 (x, &r))
    {
    case 0: return cos_core (r);
    case 1: return -sin_core (r);
    case 2: return -cos_core (r);
    default: return sin_core (r);
    }
}

double
base_pow (double x, double y)
{
  if (y == 0.0 || x == 1.0)
    return 1.0;
  if (isnan (x) || isnan (y))
    return NAN;
  if (floor (y) == y && fabs (y) <= 1024 && isfinite (x))
    {
      /* a small whole power by squaring: exact while the result fits,
       * at most 2 log2 |y| roundings otherwise */
      double r = 1.0, b = x;
      for (long e = (long) fabs (y); e > 0; e >>= 1)
        {
          if (e & 1)
            r *= b;
          b *= b;
        }
      return y < 0 ? 1.0 / r : r;
    }
  if (x < 0.0)
    {
      if (isinf (x) || floor (y) != y)
        return isinf (x) ? base_pow (-x, y) * (fmod (y, 2.0) != 0.0 ? -1.0 : 1.0) : NAN;
      double p = base_pow (-x, y);
      return fmod (y, 2.0) != 0.0 ? -p : p;
    }
  if (x == 0.0)
    return y < 0.0 ? HUGE_VAL : 0.0;
  return base_exp (y * base_log (x));
}
