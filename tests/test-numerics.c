/*
 * test-numerics.c — low-precision emulation (kernels/numerics.c) and the
 * [numerics] keys of a run.
 *
 * The rounding of every format is checked against formulations that share
 * nothing with the bit manipulation it uses: a reference in double written
 * with frexp and ldexp; the compiler's own _Float16 conversion; and, for
 * the two FP8 formats, the nearest of the 256 values their codes decode
 * to.  The inputs are a stratified set of floats: every float32 exponent
 * with mantissas at and around each format's ties, zeros, subnormals, the
 * largest values, overflow, infinities and NaN, plus seeded random bits.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "train/lanes.h"
#include "train/step.h"
#include "tests/util.h"

static guint32
bits_of (float x)
{
  guint32 u;
  memcpy (&u, &x, sizeof u);
  return u;
}

static float
float_of (guint32 u)
{
  float x;
  memcpy (&x, &u, sizeof x);
  return x;
}

/* The stratified inputs: for every biased exponent and both signs,
 * mantissas 0, 1, all ones, and for each drop width d (the bits a format
 * drops: 13, 16, 20, 21, plus 1..23 for the subnormal ranges) the tie
 * 2^(d-1) with both parities of the kept part, and one below and above
 * it; then specials and 2^16 random bit patterns (fixed seed). */
static GArray *
inputs (void)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint32 s = 0; s < 2; s++)
    for (guint32 e = 0; e < 256; e++)
      {
        guint32 base = (s << 31) | (e << 23);
        guint32 m[] = { 0, 1, 0x7fffff, 0x400000, 0x2aaaaa, 0x555555 };
        for (guint i = 0; i < G_N_ELEMENTS (m); i++)
          {
            guint32 v = base | m[i];
            g_array_append_val (a, v);
          }
        for (int d = 1; d <= 23; d++)
          {
            guint32 tie = 1u << (d - 1);
            guint32 odd = d < 23 ? 1u << d : 0;
            guint32 c[] = { tie, tie | odd, tie - 1, tie + 1, (tie | odd) - 1, (tie | odd) + 1 };
            for (guint i = 0; i < G_N_ELEMENTS (c); i++)
              {
                guint32 v = base | (c[i] & 0x7fffff);
                g_array_append_val (a, v);
              }
          }
      }
  float sp[] = { 0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 448.0f, 464.0f, 465.0f,
                 480.0f, 57344.0f, 61439.0f, 61440.0f, 3.0e38f, FLT_MAX, INFINITY, -INFINITY,
                 NAN, -NAN, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1.0f / 512 / 8, 1.0f / 512 / 16 };
  for (guint i = 0; i < G_N_ELEMENTS (sp); i++)
    {
      guint32 v = bits_of (sp[i]);
      g_array_append_val (a, v);
    }
  guint64 x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 65536; i++)
    {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      guint32 v = (guint32) (x >> 32);
      g_array_append_val (a, v);
    }
  return a;
}

/* A format's shape for the references: mantissa bits, least normal
 * exponent, largest finite value, infinity or saturation. */
typedef struct {
  KernFormat f;
  int mant, emin;
  double max;
  gboolean has_inf;
} Shape;

static const Shape shapes[] = {
  { KERN_FORMAT_BF16, 7, -126, (2.0 - 1.0 / 128) * 0x1p127, TRUE },
  { KERN_FORMAT_FP16, 10, -14, 65504.0, TRUE },
  { KERN_FORMAT_FP8_E4M3, 3, -6, 448.0, FALSE },
  { KERN_FORMAT_FP8_E5M2, 2, -14, 57344.0, TRUE },
};

/* The reference: |x| = f 2^e with f in [0.5, 1) (frexp), so its exponent
 * as 1.f is e - 1; the quantum there is 2^(max(e - 1, emin) - mant); the
 * value in quanta is exact in double and rint rounds it to even. */
static float
reference (const Shape *sh, float x)
{
  if (isnan (x))
    return x;
  if (isinf (x))
    return sh->has_inf ? x : (float) copysign (sh->max, x);
  double ax = fabs ((double) x);
  if (ax == 0)
    return x;
  int e;
  frexp (ax, &e);
  int q = MAX (e - 1, sh->emin) - sh->mant;
  double r = ldexp (rint (ldexp (ax, -q)), q);
  if (r > sh->max)
    r = sh->has_inf ? INFINITY : sh->max;
  return (float) copysign (r, x);
}

static gboolean
same (float a, float b)
{
  return (isnan (a) && isnan (b)) || bits_of (a) == bits_of (b);
}

static void
check_against (KernFormat f, float (*ref) (gconstpointer, float), gconstpointer ctx)
{
  g_autoptr (GArray) in = inputs ();
  g_autofree float *v = g_new (float, in->len);
  for (guint i = 0; i < in->len; i++)
    v[i] = float_of (g_array_index (in, guint32, i));
  kern_round_to (f, v, in->len);
  guint bad = 0;
  for (guint i = 0; i < in->len; i++)
    {
      float x = float_of (g_array_index (in, guint32, i));
      float want = ref (ctx, x);
      float one = kern_round_one (f, x);
      if (!same (v[i], want) || !same (one, want))
        {
          if (bad++ < 5)
            g_test_message ("%s: x = %a (0x%08x): got %a, want %a", kern_format_name (f),
                            (double) x, g_array_index (in, guint32, i), (double) v[i],
                            (double) want);
        }
    }
  g_assert_cmpuint (bad, ==, 0);
  g_assert_cmpuint (in->len, >, 60000);
}

static float
ref_shape (gconstpointer ctx, float x)
{
  return reference (ctx, x);
}

static void
test_reference (gconstpointer data)
{
  const Shape *sh = data;
  check_against (sh->f, ref_shape, sh);
}

#ifdef __FLT16_MAX__
static float
ref_float16 (gconstpointer ctx G_GNUC_UNUSED, float x)
{
  return (float) (_Float16) x;
}
#endif

/* fp16 against the compiler's conversion to _Float16 (IEEE binary16,
 * round to nearest even, subnormals, overflow to infinity). */
static void
test_fp16_compiler (void)
{
#ifdef __FLT16_MAX__
  check_against (KERN_FORMAT_FP16, ref_float16, NULL);
#else
  g_test_skip ("this compiler has no _Float16");
#endif
}

/* An FP8 code's value decoded from its fields: sign, exponent E (ebits),
 * mantissa M (mbits): (E ? 1 + M/2^mbits : M/2^mbits) 2^(max(E, 1) -
 * bias); e4m3's S.1111.111 is NaN, e5m2's E = 31 is infinity (M = 0) or
 * NaN. */
static double
fp8_decode (guint code, int ebits, int mbits, int bias, gboolean e4m3)
{
  int s = (code >> 7) & 1;
  int E = (code >> mbits) & ((1 << ebits) - 1);
  int M = code & ((1 << mbits) - 1);
  double sign = s ? -1.0 : 1.0;
  if (e4m3 && E == 15 && M == 7)
    return NAN;
  if (!e4m3 && E == 31)
    return M == 0 ? sign * INFINITY : NAN;
  double frac = (E ? 1.0 : 0.0) + (double) M / (1 << mbits);
  return sign * ldexp (frac, MAX (E, 1) - bias);
}

typedef struct {
  double value[256];
  int mbits;
  gboolean has_inf;
  double max;
} Fp8Table;

/* The nearest finite code value to x; of two at the same distance, the
 * one with an even mantissa code; beyond the largest by at least half a
 * step (the tie going to the even, absent next value), infinity or the
 * largest (saturation). */
static float
ref_fp8 (gconstpointer ctx, float x)
{
  const Fp8Table *t = ctx;
  if (isnan (x))
    return x;
  if (isinf (x))
    return t->has_inf ? x : (float) copysign (t->max, x);
  double best = NAN, dist = INFINITY;
  int best_code = -1;
  for (int c = 0; c < 256; c++)
    {
      double v = t->value[c];
      if (!isfinite (v) || (!signbit (v) != !signbit (x) && v != 0))
        continue;
      double d = fabs (v - (double) x);
      gboolean even = (c & 1) == 0;
      if (d < dist || (d == dist && even && (best_code & 1) == 1))
        {
          best = v, dist = d, best_code = c;
        }
    }
  /* overflow: the step above the largest is that of its binade */
  double step = t->max / (1.75 * (1 << t->mbits));   /* 2^(E_top - bias - mbits) */
  if (fabs ((double) x) >= t->max + step / 2)
    return t->has_inf ? (float) copysign (INFINITY, x) : (float) copysign (t->max, x);
  if (best == 0)
    return (float) copysign (0.0, x);
  return (float) best;
}

static void
fp8_table (Fp8Table *t, int ebits, int mbits, int bias, gboolean e4m3)
{
  t->mbits = mbits;
  t->has_inf = !e4m3;
  t->max = 0;
  for (int c = 0; c < 256; c++)
    {
      t->value[c] = fp8_decode ((guint) c, ebits, mbits, bias, e4m3);
      if (isfinite (t->value[c]))
        t->max = MAX (t->max, t->value[c]);
    }
}

static void
test_fp8_tables (void)
{
  Fp8Table t;
  fp8_table (&t, 4, 3, 7, TRUE);
  g_assert_cmpfloat (t.max, ==, 1.75 * 256);
  /* every finite code value is a fixed point */
  for (int c = 0; c < 256; c++)
    if (isfinite (t.value[c]))
      g_assert_cmpfloat (kern_round_one (KERN_FORMAT_FP8_E4M3, (float) t.value[c]), ==,
                         t.value[c]);
  check_against (KERN_FORMAT_FP8_E4M3, ref_fp8, &t);
  fp8_table (&t, 5, 2, 15, FALSE);
  g_assert_cmpfloat (t.max, ==, 1.75 * 32768);
  for (int c = 0; c < 256; c++)
    if (!isnan (t.value[c]))
      g_assert_cmpfloat (kern_round_one (KERN_FORMAT_FP8_E5M2, (float) t.value[c]), ==,
                         t.value[c]);
  check_against (KERN_FORMAT_FP8_E5M2, ref_fp8, &t);
  /* e4m3 saturates; the count of distinct finite values is 2 x 127 - 1
   * (two zeros, one NaN code per sign) */
  g_assert_cmpfloat (kern_round_one (KERN_FORMAT_FP8_E4M3, 1e6f), ==, 448.0f);
  g_assert_cmpfloat (kern_round_one (KERN_FORMAT_FP8_E4M3, -INFINITY), ==, -448.0f);
  g_assert_true (isnan (kern_round_one (KERN_FORMAT_FP8_E4M3, NAN)));
  g_assert_true (isinf (kern_round_one (KERN_FORMAT_FP8_E5M2, 61440.0f)));
  g_assert_cmpfloat (kern_round_one (KERN_FORMAT_FP8_E5M2, 61439.0f), ==, 57344.0f);
}

/* Rounding twice is rounding once; fp32 changes nothing. */
static void
test_idempotent (void)
{
  g_autoptr (GArray) in = inputs ();
  g_autofree float *v = g_new (float, in->len);
  g_autofree float *w = g_new (float, in->len);
  for (int f = 0; f < KERN_N_FORMATS; f++)
    {
      for (guint i = 0; i < in->len; i++)
        v[i] = float_of (g_array_index (in, guint32, i));
      kern_round_to ((KernFormat) f, v, in->len);
      memcpy (w, v, in->len * sizeof (float));
      kern_round_to ((KernFormat) f, w, in->len);
      for (guint i = 0; i < in->len; i++)
        g_assert_true (same (v[i], w[i]));
      if (f == KERN_FORMAT_FP32)
        for (guint i = 0; i < in->len; i++)
          g_assert_true (same (v[i], float_of (g_array_index (in, guint32, i))));
    }
}

/* Loss scaling: a value below fp16's least subnormal 2^-24 is lost
 * unscaled; scaled by 2^16 into fp16's normal range (from 2^-14) it is
 * kept to fp16's relative precision 2^-11. */
static void
test_scaled (void)
{
  float g[2] = { 0x1p-26f * 1.3f, -0x1p-27f };
  float h[2];
  memcpy (h, g, sizeof g);
  kern_round_to (KERN_FORMAT_FP16, h, 2);
  g_assert_cmpfloat (h[0], ==, 0.0f);
  g_assert_cmpfloat (h[1], ==, 0.0f);
  memcpy (h, g, sizeof g);
  kern_round_scaled (KERN_FORMAT_FP16, h, 2, 65536.0f);
  for (int i = 0; i < 2; i++)
    g_assert_cmpfloat (fabsf (h[i] - g[i]), <=, fabsf (g[i]) * 0x1p-11f);
}

static void
test_names (void)
{
  for (int f = 0; f < KERN_N_FORMATS; f++)
    {
      KernFormat out;
      g_assert_true (kern_format_parse (kern_format_name ((KernFormat) f), &out));
      g_assert_cmpint (out, ==, f);
    }
  KernFormat out = KERN_FORMAT_BF16;
  g_assert_false (kern_format_parse ("fp8", &out));
  g_assert_cmpint (out, ==, KERN_FORMAT_BF16);
}

/* --- The worker step ----------------------------------------------------- */

/* Loss scaling, by the formula: a softmax model on inputs scaled by 2^-30
 * has weight gradients X^T (P - Y) / n of order 2^-30, below half of fp16's
 * least subnormal 2^-24, so fp16 gradients lose every one of them (and the
 * update leaves the weights as they were).  With loss_scale S = 2^24 each gradient g comes back
 * within max(|g| 2^-11, 2^-25 / S) of its float32 value: half a unit in
 * the last place of fp16's normal range, or half of its least subnormal
 * scaled back. */
static void
test_loss_scale_recovers (void)
{
  int d = 10, k = 4, B = 16;
  KernModel *m = kern_softmax_new (d, k);
  KernDataset *train, *test;
  kern_dataset_blobs (64, 8, d, k, 3.0, 7, &train, &test);
  for (gsize i = 0; i < (gsize) train->n * d; i++)
    train->x[i] *= 0x1p-30f;
  gsize P = m->ops->n_params (m), nw = (gsize) d * k;
  g_autofree float *params = g_new (float, P);
  m->ops->init (m, params, 3);
  TrainStepsSetup setup = { .model = m, .train = train,
                            .samplers = train_samplers_new (train->n, 1, 3), .parts = 1,
                            .batch = B, .slots = 1 };
  TrainSteps *ts = train_steps_new (&setup);
  int idx[16];
  for (int i = 0; i < B; i++)
    idx[i] = i;
  g_autofree float *g32 = g_new (float, P);
  g_autofree float *g = g_new (float, P);
  const float *own[1] = { params };
  TrainStep st = { .n = 1, .first = 0, .drawn = idx, .own = own, .grads = &g32 };
  train_step (ts, &st);
  gsize nonzero = 0;
  for (gsize i = 0; i < nw; i++)
    {
      nonzero += g32[i] != 0;
      g_assert_cmpfloat (fabsf (g32[i]), <, 0x1p-25f);
    }
  g_assert_cmpuint (nonzero, ==, nw);

  /* fp16, no scale: every weight gradient lost, so is the update */
  m->num.gradients = KERN_FORMAT_FP16;
  KernOptConfig cfg = { .kind = &kern_opt_sgd, .lr = 0.5 };
  KernOptimizer *opt = kern_optimizer_new (&cfg, P);
  g_autofree float *stepped = g_memdup2 (params, P * sizeof (float));
  float *upd[1] = { stepped };
  st.grads = &g;
  st.opt = &opt;
  st.update = upd;
  train_step (ts, &st);
  for (gsize i = 0; i < nw; i++)
    {
      g_assert_cmpfloat (g[i], ==, 0.0f);
      g_assert_cmpfloat (stepped[i], ==, params[i]);
    }
  /* the bias gradients, the batch's mean of P - Y, are rounded as usual */
  for (gsize i = nw; i < P; i++)
    g_assert_cmpfloat (fabs ((double) g[i] - g32[i]), <=, MAX (fabs (g32[i]) * 0x1p-11, 0x1p-25));

  /* fp16 with loss_scale = 2^16: the weight gradients are back */
  const double S = 0x1p16;
  m->num.loss_scale = (float) S;
  gsize kept = 0, recovered = 0;
  st.opt = NULL;
  train_step (ts, &st);
  for (gsize i = 0; i < P; i++)
    {
      double bound = MAX (fabs (g32[i]) * 0x1p-11, 0x1p-25 / S);
      g_assert_cmpfloat (fabs ((double) g[i] - g32[i]), <=, bound);
      /* kept unless below fp16's least subnormal even scaled */
      if (fabs (g32[i]) >= 0x1p-24 / S)
        kept++;
      if (i < nw && g[i] != 0)
        recovered++;
    }
  g_assert_cmpuint (kept, >=, P - 2);
  g_assert_cmpuint (recovered, >=, nw - 2);

  /* a scale too large: the bias gradients, scaled past fp16's largest
   * 65504 (by half a unit: 65520), overflow to infinity */
  m->num.loss_scale = 0x1p24f;
  train_step (ts, &st);
  gsize overflowed = 0;
  for (gsize i = nw; i < P; i++)
    if (fabs (g32[i]) * 0x1p24 >= 65520)
      {
        g_assert_true (isinf (g[i]));
        overflowed++;
      }
  g_assert_cmpuint (overflowed, >=, 1);
  kern_optimizer_free (opt);
  train_steps_free (ts);
  kern_model_free (m);
  kern_dataset_free (train);
  kern_dataset_free (test);
}

/* The scaler alone, by its rule: halve on an overflow, double after
 * `growth_interval` clean gradients in a row. */
static void
test_scaler_rule (void)
{
  KernNumerics num = { .gradients = KERN_FORMAT_FP16, .loss_scale = 0x1p16f,
                       .dynamic_scale = TRUE, .growth_interval = 3 };
  KernScaler s;
  kern_scaler_reset (&s, &num);
  g_assert_cmpfloat (s.scale, ==, 0x1p16f);
  /* two overflows, then three clean: 2^16 / 2^2 x 2 */
  g_assert_false (kern_scaler_update (&s, &num, FALSE));
  g_assert_false (kern_scaler_update (&s, &num, FALSE));
  g_assert_cmpfloat (s.scale, ==, 0x1p16f / 4);
  for (int i = 0; i < 2; i++)
    g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_cmpfloat (s.scale, ==, 0x1p16f / 4);
  g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_cmpfloat (s.scale, ==, 0x1p16f / 2);
  /* an overflow restarts the clean count */
  g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_false (kern_scaler_update (&s, &num, FALSE));
  g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_true (kern_scaler_update (&s, &num, TRUE));
  g_assert_cmpfloat (s.scale, ==, 0x1p16f / 4);
  g_assert_cmpint (s.skipped, ==, 3);
  float ok[3] = { 1, -0.0f, FLT_MAX }, inf[3] = { 1, INFINITY, 2 }, nan[3] = { NAN, 0, 0 };
  g_assert_true (kern_all_finite (ok, 3));
  g_assert_false (kern_all_finite (inf, 3));
  g_assert_false (kern_all_finite (nan, 3));
}

/* Dynamic loss scaling in the worker step, on one batch at fixed
 * parameters, so that every step's float32 gradient g is the same.  fp16
 * overflows where round(S |g|) reaches 65520 (half a unit past 65504), and
 * S is a power of two, so S |g| is exact: from S0 = 2^24 the first k steps
 * are skipped, k the least with 2^(24-k) max|g| < 65520.  With growth
 * interval 3 the scale then doubles back to an overflowing one after every
 * 3 clean steps: of the next 4j steps, j more are skipped, and the scale
 * ends at 2^(24-k).  A skipped step leaves the parameters as they were. */
static void
test_dynamic_scale_skips (void)
{
  int d = 10, k = 4, B = 16;
  KernModel *m = kern_softmax_new (d, k);
  KernDataset *train, *test;
  kern_dataset_blobs (64, 8, d, k, 3.0, 7, &train, &test);
  gsize P = m->ops->n_params (m);
  g_autofree float *params = g_new (float, P);
  m->ops->init (m, params, 3);
  TrainStepsSetup setup = { .model = m, .train = train,
                            .samplers = train_samplers_new (train->n, 1, 3), .parts = 1,
                            .batch = B, .slots = 1 };
  TrainSteps *ts = train_steps_new (&setup);
  int idx[16];
  for (int i = 0; i < B; i++)
    idx[i] = i;
  g_autofree float *g32 = g_new (float, P);
  g_autofree float *g = g_new (float, P);
  const float *own[1] = { params };
  TrainStep st = { .n = 1, .first = 0, .drawn = idx, .own = own, .grads = &g32 };
  train_step (ts, &st);
  double gmax = 0;
  for (gsize i = 0; i < P; i++)
    gmax = MAX (gmax, fabs (g32[i]));
  int skips = 0;
  while (ldexp (gmax, 24 - skips) >= 65520)
    skips++;
  g_assert_cmpint (skips, >=, 2);

  m->num = (KernNumerics) { .gradients = KERN_FORMAT_FP16, .loss_scale = 0x1p24f,
                            .dynamic_scale = TRUE, .growth_interval = 3 };
  kern_scaler_reset (&m->scaler, &m->num);
  /* the first step overflows: zeros leave the worker, no update */
  KernOptConfig cfg = { .kind = &kern_opt_sgd, .lr = 0.5 };
  KernOptimizer *opt = kern_optimizer_new (&cfg, P);
  g_autofree float *stepped = g_memdup2 (params, P * sizeof (float));
  float *upd[1] = { stepped };
  st.grads = &g;
  st.opt = &opt;
  st.update = upd;
  train_step (ts, &st);
  for (gsize i = 0; i < P; i++)
    {
      g_assert_cmpfloat (g[i], ==, 0.0f);
      g_assert_cmpfloat (stepped[i], ==, params[i]);
    }
  st.opt = NULL;
  int j = 5;
  for (int i = 1; i < skips + 4 * j; i++)
    train_step (ts, &st);
  g_assert_cmpint (m->scaler.skipped, ==, skips + j);
  g_assert_cmpfloat (m->scaler.scale, ==, ldexpf (1.0f, 24 - skips));
  /* the last step was skipped; the next is clean, rounded at 2^(24-k):
   * within half a unit of fp16 (or half its least subnormal, scaled back)
   * of float32 */
  g_assert_cmpint (m->scaler.clean, ==, 0);
  train_step (ts, &st);
  g_assert_cmpint (m->scaler.clean, ==, 1);
  for (gsize i = 0; i < P; i++)
    g_assert_cmpfloat (fabs ((double) g[i] - g32[i]), <=,
                       MAX (fabs (g32[i]) * 0x1p-11, ldexp (0x1p-25, skips - 24)));
  kern_optimizer_free (opt);
  train_steps_free (ts);
  kern_model_free (m);
  kern_dataset_free (train);
  kern_dataset_free (test);
}

/* --- Whole runs ---------------------------------------------------------- */

static const char base[] =
  "[scenario]\niterations = 12\nseed = 3\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = mlp\nhidden = 16\nbatch = 16\nlr = 0.2\nsamples = 2048\n"
  "features = 16\nclasses = 4\neval_every = 8\n"
  "[policy]\nkind = allreduce\n";

/* Every key at fp32 (and loss_scale 1) is the run without the section,
 * bit for bit, for both policies that round transfers. */
static void
test_fp32_identity (void)
{
  const char *const policies[] = { "allreduce", "ps" };
  for (guint p = 0; p < G_N_ELEMENTS (policies); p++)
    {
      g_autofree char *kind = g_strdup_printf ("kind = %s\n", policies[p]);
      g_autofree char *plain = test_replaced (base, "kind = allreduce\n", kind);
      g_autofree char *all = g_strconcat (plain, "[numerics]\nweights = fp32\ngradients = fp32\n"
                                          "loss_scale = 1\ncommunication = fp32\n"
                                          "activations = fp32\n", NULL);
      TestRun *a = test_run_collect (plain, NULL);
      TestRun *b = test_run_collect (all, NULL);
      test_assert_same_runs (a, b);
      test_run_free (a);
      test_run_free (b);
    }
}

/* The first and last evaluated losses of a run. */
static void
loss_ends (const TestRun *r, double *first, double *last)
{
  g_assert_cmpuint (r->metrics->len, >=, 2);
  *first = g_array_index (r->metrics, TestMetric, 0).loss;
  *last = g_array_index (r->metrics, TestMetric, r->metrics->len - 1).loss;
}

/* bf16 weights change the run and it still trains; so does each other
 * key, on each policy that honours it. */
static void
test_formats_train (void)
{
  TestRun *ref = test_run_collect (base, NULL);
  double f0, f1;
  loss_ends (ref, &f0, &f1);
  const char *const sets[][2] = {
    { "numerics.weights=bf16", "policy.kind=allreduce" },
    { "numerics.weights=fp8-e4m3", "policy.kind=ps" },
    { "numerics.gradients=fp8-e5m2", "policy.kind=allreduce" },
    { "numerics.communication=fp8-e5m2", "policy.kind=allreduce" },
    { "numerics.communication=bf16", "policy.kind=ps" },
    { "numerics.activations=fp8-e4m3", "policy.kind=allreduce" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (sets); i++)
    {
      const char *const s[] = { sets[i][0], sets[i][1], NULL };
      TestRun *r = test_run_collect (base, s);
      double l0, l1;
      loss_ends (r, &l0, &l1);
      g_test_message ("%s %s: loss %g -> %g (fp32: %g)", s[0], s[1], l0, l1, f1);
      g_assert_cmpfloat (l1, <, 0.8 * l0);
      g_assert_cmpfloat (l1, !=, f1);
      test_run_free (r);
    }
  test_run_free (ref);
}

/* Every key rounding at once gives the same bits on 1 and 2 host
 * threads (the lanes' model clones carry the formats). */
static void
test_threads (void)
{
  g_autofree char *text = g_strconcat (base, "[numerics]\nweights = bf16\ngradients = fp16\n"
                                       "loss_scale = 1024\ncommunication = bf16\n"
                                       "activations = fp8-e5m2\n", NULL);
  train_set_threads (1);
  TestRun *a = test_run_collect (text, NULL);
  train_set_threads (2);
  TestRun *b = test_run_collect (text, NULL);
  train_set_threads (1);
  test_assert_same_runs (a, b);
  test_run_free (a);
  test_run_free (b);
}

/* The GPT rounds its activations: the run changes and still trains. */
static void
test_gpt_activations (void)
{
  static const char gpt[] =
    "[scenario]\niterations = 12\nseed = 5\n[cluster]\nworkers = 2\n"
    "[model]\nkind = gpt\nvocabulary = 8\nbranching = 2\nsequence = 8\nwidth = 16\n"
    "heads = 2\nblocks = 1\nbatch = 8\nsamples = 512\neval_samples = 64\n"
    "test_samples = 64\nlr = 0.3\neval_every = 6\n[policy]\nkind = allreduce\n";
  const char *const s[] = { "numerics.activations=fp8-e4m3", NULL };
  TestRun *ref = test_run_collect (gpt, NULL);
  TestRun *r = test_run_collect (gpt, s);
  double f0, f1, l0, l1;
  loss_ends (ref, &f0, &f1);
  loss_ends (r, &l0, &l1);
  g_assert_cmpfloat (l1, <, l0);
  g_assert_cmpfloat (l1, !=, f1);
  test_run_free (ref);
  test_run_free (r);
}

/* A fixed scale of 2^24 overflows fp16 gradients of this MLP (their
 * largest, about 0.1, times 2^24 is far past 65504): the parameters turn
 * inf and the run diverges.  A dynamic scale from the same 2^24 skips the
 * overflowing gradients, halving each time, and trains; without growth
 * (fewer clean gradients than the interval) its final scale is 2^24 /
 * 2^skipped. */
static void
test_dynamic_run (void)
{
  static const char fixed[] = "[numerics]\ngradients = fp16\nloss_scale = 16777216\n";
  g_autofree char *text = g_strconcat (base, fixed, NULL);
  g_autoptr (GPtrArray) configs = test_load_scenario_text (text, NULL);
  g_autoptr (GError) error = NULL;
  SimRunSummary sum;
  g_assert_false (sim_run_config (g_ptr_array_index (configs, 0), NULL, 0, NULL, &sum,
                                  &error));
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "diverged"));
  g_assert_nonnull (strstr (error->message, "loss_scale = dynamic"));

  g_autofree char *dyn = g_strconcat (base, "[numerics]\ngradients = fp16\n"
                                      "loss_scale = dynamic\ninitial_scale = 16777216\n", NULL);
  TestRun *r = test_run_collect (dyn, NULL);
  double l0, l1;
  loss_ends (r, &l0, &l1);
  g_assert_cmpfloat (l1, <, 0.8 * l0);
  const char *skipped = g_hash_table_lookup (r->params, "numerics.skipped_gradients");
  const char *scale = g_hash_table_lookup (r->params, "numerics.final_loss_scale");
  g_assert_nonnull (skipped);
  g_assert_nonnull (scale);
  gint64 n = g_ascii_strtoll (skipped, NULL, 10);
  g_test_message ("skipped %s, final scale %s, loss %g -> %g", skipped, scale, l0, l1);
  g_assert_cmpint (n, >=, 1);
  /* 12 iterations x 4 workers = 48 gradients, below the interval 2000 */
  g_assert_cmpint (n, <, 48);
  g_assert_cmpfloat (g_ascii_strtod (scale, NULL), ==, ldexp (0x1p24, (int) -n));
  test_run_free (r);
}

/* Policies that round what crosses the wire: every key at fp32 is the run
 * without the section, bit for bit. */
static void
test_wire_identity (void)
{
  const char *const kinds[] = { "kind = local-sgd\nsync_every = 3\n", "kind = gossip\n",
                                "kind = fedavg\n" };
  for (guint p = 0; p < G_N_ELEMENTS (kinds); p++)
    {
      g_autofree char *plain = test_replaced (base, "kind = allreduce\n", kinds[p]);
      g_autofree char *all = g_strconcat (plain, "[numerics]\ncommunication = fp32\n"
                                          "weights = fp32\ngradients = fp32\n", NULL);
      TestRun *a = test_run_collect (plain, NULL);
      TestRun *b = test_run_collect (all, NULL);
      test_assert_same_runs (a, b);
      test_run_free (a);
      test_run_free (b);
    }
}

/* The same policies with bf16 on the wire: the run changes and still
 * trains. */
static void
test_wire_rounds (void)
{
  const char *const kinds[] = { "kind = local-sgd\nsync_every = 3\n", "kind = gossip\n",
                                "kind = fedavg\n" };
  for (guint p = 0; p < G_N_ELEMENTS (kinds); p++)
    {
      g_autofree char *plain = test_replaced (base, "kind = allreduce\n", kinds[p]);
      const char *const s[] = { "numerics.communication=bf16", NULL };
      TestRun *a = test_run_collect (plain, NULL);
      TestRun *b = test_run_collect (plain, s);
      double a0, a1, b0, b1;
      loss_ends (a, &a0, &a1);
      loss_ends (b, &b0, &b1);
      g_test_message ("%.13s: fp32 %g -> %g, bf16 %g -> %g", kinds[p], a0, a1, b0, b1);
      g_assert_cmpfloat (b1, !=, a1);
      g_assert_cmpfloat (b1, <, 0.8 * b0);
      test_run_free (a);
      test_run_free (b);
    }
}

/* A key that would change nothing, or that the run cannot honour, is
 * refused in one line naming it. */
static void
test_refused (void)
{
  g_autofree char *text = g_strconcat (base, "[numerics]\nweights = fp32\n", NULL);
  const TestRefusal cases[] = {
    { "weights = fp32", "weights = bf16\n[kernels]\nbackend = none",
      "[numerics] weights: rounds the real math, but this run does no math" },
    { "kind = allreduce\n[numerics]\nweights = fp32",
      "kind = hogwild\n[numerics]\ncommunication = bf16",
      "[numerics] communication: has nothing to round under kind = hogwild" },
    { "weights = fp32", "gradients = fp16\nloss_scale = dynamics", "[numerics] loss_scale: 'dynamics'" },
    { "weights = fp32", "gradients = fp16\nloss_scale = 1e9", "[numerics] loss_scale: '1e9'" },
    { "weights = fp32", "loss_scale = dynamic", "[numerics] loss_scale: scales only" },
    { "weights = fp32", "activations = bf16\nloss_scale = dynamic",
      "[numerics] loss_scale: dynamic watches the gradients" },
    { "weights = fp32", "activations = bf16\ngradients = fp16\nloss_scale = dynamic",
      "[numerics] loss_scale: dynamic is not applied inside" },
    { "weights = fp32", "gradients = fp16\nloss_scale = 1024\ngrowth_interval = 10",
      "[numerics] growth_interval: applies to loss_scale = dynamic only" },
    { "weights = fp32", "gradients = fp16\ninitial_scale = 1024",
      "[numerics] initial_scale: applies to loss_scale = dynamic only" },
    { "weights = fp32", "gradients = fp16\nloss_scale = dynamic\ngrowth_interval = 0",
      "[numerics] growth_interval" },
    { "weights = fp32", "gradients = fp16\nloss_scale = dynamic\ninitial_scale = 0",
      "[numerics] initial_scale" },
    { "kind = allreduce\n[numerics]\nweights = fp32",
      "kind = pipeline\nstages = 2\n[numerics]\ngradients = bf16",
      "[numerics] gradients: kind = pipeline" },
    { "weights = fp32", "loss_scale = 1024", "[numerics] loss_scale: scales only" },
    { "weights = fp32", "gradients = fp16\nloss_scale = 0", "[numerics] loss_scale" },
    { "weights = fp32", "weights = fp12", "[numerics] weights: unknown value 'fp12'" },
  };
  /* the sparse model has no activation hook */
  const TestRefusal sparse[] = {
    { "weights = fp32", "activations = bf16",
      "[numerics] activations: kind = sparse has no hook" },
  };
  test_refusals (text, cases, G_N_ELEMENTS (cases));
  g_autofree char *sp = test_replaced (text, "kind = mlp\nhidden = 16\n", "kind = sparse\n");
  test_refusals (sp, sparse, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/numerics/round/bf16", &shapes[0], test_reference);
  g_test_add_data_func ("/numerics/round/fp16", &shapes[1], test_reference);
  g_test_add_data_func ("/numerics/round/fp8-e4m3", &shapes[2], test_reference);
  g_test_add_data_func ("/numerics/round/fp8-e5m2", &shapes[3], test_reference);
  g_test_add_func ("/numerics/round/fp16-compiler", test_fp16_compiler);
  g_test_add_func ("/numerics/round/fp8-codes", test_fp8_tables);
  g_test_add_func ("/numerics/round/idempotent", test_idempotent);
  g_test_add_func ("/numerics/round/scaled", test_scaled);
  g_test_add_func ("/numerics/round/names", test_names);
  g_test_add_func ("/numerics/step/loss-scale", test_loss_scale_recovers);
  g_test_add_func ("/numerics/step/scaler-rule", test_scaler_rule);
  g_test_add_func ("/numerics/step/dynamic-skips", test_dynamic_scale_skips);
  g_test_add_func ("/numerics/run/dynamic-overflow", test_dynamic_run);
  g_test_add_func ("/numerics/run/wire-fp32-identity", test_wire_identity);
  g_test_add_func ("/numerics/run/wire-rounds", test_wire_rounds);
  g_test_add_func ("/numerics/run/fp32-identity", test_fp32_identity);
  g_test_add_func ("/numerics/run/formats-train", test_formats_train);
  g_test_add_func ("/numerics/run/threads", test_threads);
  g_test_add_func ("/numerics/run/gpt-activations", test_gpt_activations);
  g_test_add_func ("/numerics/run/refused", test_refused);
  return g_test_run ();
}
