/*
 * test-cuda.c — the CUDA backend against the CPU backend, op by op.
 *
 * Every op of KernBackendOps (kernels/backend.h) runs on seeded random
 * inputs on the CPU backend (the reference) and on the CUDA backend; both
 * results are downloaded and compared element by element.  The rule:
 *
 *   |got - ref| <= 1e-5 max(1, |ref|) + r FLT_EPSILON sum |terms|
 *
 * where the second term exists only for outputs that are sums of r terms
 * whose order differs between the backends: gemm (r = k + 2: k products,
 * then alpha and the beta C term) and col_sum (r = n rows).  A float sum of
 * r terms, in any order, is within about (r/2) FLT_EPSILON sum |terms| of
 * the exact sum (the classic gamma_r bound), so two implementations are
 * within r FLT_EPSILON sum |terms| of each other.  A fixed tolerance would
 * either fail large-k products that are right or pass small ones that are
 * wrong; a wrong transpose, stride or index is off by O(|terms|) and still
 * fails by orders of magnitude.  The row sums of softmax_xent and mse are
 * accumulated in double on both sides and need no extra term.  Integer
 * outputs (pred) must be equal.
 *
 * Every device buffer has a guard tail of TEST_GUARD floats holding the same
 * random values on both backends, compared with the rest, so a kernel that
 * writes past its output (or into the padding between rows of a strided
 * matrix) is caught.
 *
 * Without a CUDA build, or with no visible GPU, each case calls
 * g_test_skip() with the reason: it reports SKIP, never a silent pass.
 * Assertions are non-fatal so that one run on a GPU reports every op.
 *
 * The /cuda-lazy cases need no GPU: the CUDA runtime is a plugin loaded on
 * first use (kernels/cuda.c), so neither this process before it asks for
 * CUDA nor dtsim running on the CPU or timing only may map libcudart,
 * libcublas or the plugin; and a missing plugin is a one-line error naming
 * [kernels] backend.
 */
#include "config.h"

#include "kernels/backend.h"
#include "kernels/cuda.h"
#include "kernels/cuda_plugin.h"
#include "kernels/kernels.h"
#include "kernels/rng.h"

#include "tests/util.h"

#include <float.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

/* Relative tolerance of the rule above. */
#define TEST_RTOL 1e-5
/* Extra floats after every buffer, compared too. */
#define TEST_GUARD 16
/* Mismatches printed per comparison. */
#define TEST_MAX_REPORT 8
/* Stream tag of this test's generators. */
#define TEST_RNG_STREAM G_GUINT64_CONSTANT (0x6375646174657374) /* "cudatest" */

/* --- the two backends ----------------------------------------------------- */

typedef struct {
  KernBackend *cpu;   /* reference */
  KernBackend *gpu;   /* under test */
} Pair;

/* Opens both backends, or marks the case skipped (with the reason) and
 * returns FALSE when the CUDA backend cannot be created. */
static gboolean
pair_open (Pair *p)
{
  g_autoptr (GError) error = NULL;
  p->gpu = kern_backend_cuda_new (&error);
  if (p->gpu == NULL)
    {
      g_autofree char *why = g_strdup_printf (
          "CUDA backend unavailable: %s",
          error != NULL ? error->message : "(no reason given)");
      g_test_skip (why);
      return FALSE;
    }
  p->cpu = kern_backend_cpu_new ();
  g_assert_nonnull (p->cpu);
  g_assert_cmpstr (p->gpu->ops->name, ==, "cuda");
  return TRUE;
}

static void
pair_close (Pair *p)
{
  kern_backend_free (p->gpu);
  kern_backend_free (p->cpu);
}

/* The same n (+ guard) floats on both backends, plus a host copy of the
 * initial contents. */
typedef struct {
  float *cpu, *gpu;  /* (n + TEST_GUARD) each */
  gsize n;
} Twin;

typedef struct {
  int *cpu, *gpu;    /* (n) each */
  gsize n;
} TwinInt;

/* Uploads host (n + TEST_GUARD floats) to both backends. */
static Twin
twin_new (Pair *p, const float *host, gsize n)
{
  Twin t = { NULL, NULL, n };
  t.cpu = p->cpu->ops->alloc (p->cpu, n + TEST_GUARD);
  t.gpu = p->gpu->ops->alloc (p->gpu, n + TEST_GUARD);
  p->cpu->ops->upload (p->cpu, t.cpu, host, n + TEST_GUARD);
  p->gpu->ops->upload (p->gpu, t.gpu, host, n + TEST_GUARD);
  return t;
}

/* Overwrites the first n floats of both copies with host (n). */
static void
twin_set (Pair *p, Twin *t, const float *host)
{
  p->cpu->ops->upload (p->cpu, t->cpu, host, t->n);
  p->gpu->ops->upload (p->gpu, t->gpu, host, t->n);
}

static void
twin_free (Pair *p, Twin *t)
{
  p->cpu->ops->free (p->cpu, t->cpu);
  p->gpu->ops->free (p->gpu, t->gpu);
}

/* Downloads one side, n + TEST_GUARD floats (free with g_free). */
static float *
twin_get (Pair *p, const Twin *t, gboolean gpu)
{
  float *host = g_new (float, t->n + TEST_GUARD);
  if (gpu)
    p->gpu->ops->download (p->gpu, host, t->gpu, t->n + TEST_GUARD);
  else
    p->cpu->ops->download (p->cpu, host, t->cpu, t->n + TEST_GUARD);
  return host;
}

static TwinInt
twin_int_new (Pair *p, const int *host, gsize n)
{
  TwinInt t = { NULL, NULL, n };
  t.cpu = p->cpu->ops->alloc_int (p->cpu, n);
  t.gpu = p->gpu->ops->alloc_int (p->gpu, n);
  p->cpu->ops->upload_int (p->cpu, t.cpu, host, n);
  p->gpu->ops->upload_int (p->gpu, t.gpu, host, n);
  return t;
}

static void
twin_int_free (Pair *p, TwinInt *t)
{
  p->cpu->ops->free (p->cpu, t->cpu);
  p->gpu->ops->free (p->gpu, t->gpu);
}

/* --- comparison ----------------------------------------------------------- */

/* Compares got with ref over n floats under the rule of the file comment;
 * extra (n) or NULL holds each element's summation term.  cols > 0 prints
 * positions as (row, col) of a matrix with that row stride.  Prints the
 * first mismatches, then fails the case (non-fatally) if there are any. */
static void
assert_close (const char *what, const float *ref, const float *got, gsize n,
              int cols, const double *extra)
{
  gsize bad = 0;
  double worst = 0.0;
  for (gsize i = 0; i < n; i++)
    {
      double diff = fabs ((double) got[i] - (double) ref[i]);
      double tol = TEST_RTOL * MAX (1.0, fabs ((double) ref[i]))
                   + (extra != NULL ? extra[i] : 0.0);
      if (!(diff <= tol)) /* NaN on either side fails too */
        {
          if (bad < TEST_MAX_REPORT)
            {
              if (cols > 0)
                g_test_message ("%s: (%" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT
                                ") ref %.9g got %.9g |diff| %.3g tol %.3g",
                                what, i / (gsize) cols, i % (gsize) cols,
                                ref[i], got[i], diff, tol);
              else
                g_test_message ("%s: [%" G_GSIZE_FORMAT "] ref %.9g got %.9g "
                                "|diff| %.3g tol %.3g",
                                what, i, ref[i], got[i], diff, tol);
            }
          bad++;
        }
      else if (tol > 0.0)
        worst = MAX (worst, diff / tol);
    }
  if (bad > 0)
    g_test_message ("%s: %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                    " elements beyond tolerance", what, bad, n);
  else
    g_test_message ("%s: %" G_GSIZE_FORMAT " elements within tolerance "
                    "(largest |diff|/tol %.3g)", what, n, worst);
  g_assert_cmpuint (bad, ==, 0);
}

/* Downloads both sides of t (with the guard) and compares them. */
static void
assert_twin_close (Pair *p, const char *what, const Twin *t, int cols,
                   const double *extra)
{
  g_autofree float *ref = twin_get (p, t, FALSE);
  g_autofree float *got = twin_get (p, t, TRUE);
  assert_close (what, ref, got, t->n + TEST_GUARD, cols, extra);
}

/* Integer outputs (pred) must be equal. */
static void
assert_twin_int_equal (Pair *p, const char *what, const TwinInt *t)
{
  g_autofree int *ref = g_new (int, t->n);
  g_autofree int *got = g_new (int, t->n);
  p->cpu->ops->download_int (p->cpu, ref, t->cpu, t->n);
  p->gpu->ops->download_int (p->gpu, got, t->gpu, t->n);
  gsize bad = 0;
  for (gsize i = 0; i < t->n; i++)
    if (ref[i] != got[i])
      {
        if (bad < TEST_MAX_REPORT)
          g_test_message ("%s: [%" G_GSIZE_FORMAT "] ref %d got %d", what, i,
                          ref[i], got[i]);
        bad++;
      }
  if (bad > 0)
    g_test_message ("%s: %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " differ",
                    what, bad, t->n);
  g_assert_cmpuint (bad, ==, 0);
}

/* --- inputs --------------------------------------------------------------- */

/* n floats uniform in [lo, hi) from rng (free with g_free). */
static float *
random_floats (KernRng *rng, gsize n, double lo, double hi)
{
  float *x = g_new (float, n);
  for (gsize i = 0; i < n; i++)
    x[i] = (float) (lo + (hi - lo) * (kern_rng_uniform_pos (rng) - 0x1.0p-53));
  return x;
}

/* n labels uniform in [0, k). */
static int *
random_labels (KernRng *rng, gsize n, int k)
{
  int *y = g_new (int, n);
  for (gsize i = 0; i < n; i++)
    y[i] = (int) kern_rng_below (rng, (guint64) k);
  return y;
}

/* --- memory --------------------------------------------------------------- */

/* Upload then download is the identity, for floats and ints. */
static void
test_roundtrip (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 1, TEST_RNG_STREAM);
  gsize n = 100003;
  g_autofree float *x = random_floats (&rng, n, -1e6, 1e6);
  g_autofree int *y = random_labels (&rng, n, 1000);
  g_autofree float *x2 = g_new0 (float, n);
  g_autofree int *y2 = g_new0 (int, n);

  float *dx = p.gpu->ops->alloc (p.gpu, n);
  int *dy = p.gpu->ops->alloc_int (p.gpu, n);
  p.gpu->ops->upload (p.gpu, dx, x, n);
  p.gpu->ops->upload_int (p.gpu, dy, y, n);
  p.gpu->ops->download (p.gpu, x2, dx, n);
  p.gpu->ops->download_int (p.gpu, y2, dy, n);
  g_assert_cmpmem (x, n * sizeof (float), x2, n * sizeof (float));
  g_assert_cmpmem (y, n * sizeof (int), y2, n * sizeof (int));
  p.gpu->ops->free (p.gpu, dx);
  p.gpu->ops->free (p.gpu, dy);
  pair_close (&p);
}

/* Zero sizes are no-ops on both backends (col_sum of no rows is 0). */
static void
test_empty (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernBackend *bes[2] = { p.cpu, p.gpu };
  for (int b = 0; b < 2; b++)
    {
      KernBackend *be = bes[b];
      float *z = be->ops->alloc (be, 0);
      int *iz = be->ops->alloc_int (be, 0);
      float host = 1.0f;
      be->ops->upload (be, z, &host, 0);
      be->ops->download (be, &host, z, 0);
      be->ops->relu (be, z, 0);
      be->ops->relu_backward (be, z, z, 0);
      be->ops->sgd (be, z, z, 0, 0.1f);
      be->ops->momentum (be, z, z, z, 0, 0.1f, 0.9f);
      be->ops->adam (be, z, z, z, z, 0, 0.1f, 0.9f, 0.999f, 1e-8f, 1);
      be->ops->fill_rows (be, z, z, 0, 5);
      be->ops->softmax_xent (be, z, iz, 0, 5, 1.0f, z, iz);
      be->ops->mse (be, z, iz, 0, 5, 1.0f, z, iz);
      be->ops->gemm (be, FALSE, FALSE, 0, 4, 3, 1.0f, z, 3, z, 4, 0.0f, z, 4);
      be->ops->free (be, z);
      be->ops->free (be, iz);
      g_assert_cmpfloat (host, ==, 1.0f);
    }
  /* col_sum over n = 0 rows writes k zeros */
  float junk[3 + TEST_GUARD];
  for (int i = 0; i < 3 + TEST_GUARD; i++)
    junk[i] = 7.0f + i;
  Twin out = twin_new (&p, junk, 3);
  p.cpu->ops->col_sum (p.cpu, out.cpu, 0, 3, out.cpu);
  p.gpu->ops->col_sum (p.gpu, out.gpu, 0, 3, out.gpu);
  assert_twin_close (&p, "col_sum n=0", &out, 0, NULL);
  g_autofree float *got = twin_get (&p, &out, TRUE);
  g_assert_cmpfloat (got[0], ==, 0.0f);
  g_assert_cmpfloat (got[2], ==, 0.0f);
  twin_free (&p, &out);
  pair_close (&p);
}

/* --- gemm ----------------------------------------------------------------- */

/* One product C (m, n) = alpha op(A) op(B) + beta C with row strides wider
 * than the rows (lda, ldb, ldc padded by 3, 5, 2), so that a backend
 * mistaking a stride for a width, or writing into the padding, fails. */
static void
check_gemm (Pair *p, gboolean ta, gboolean tb, int m, int n, int k,
            float alpha, float beta, guint64 seed)
{
  KernRng rng;
  kern_rng_init (&rng, seed, TEST_RNG_STREAM);
  int a_rows = ta ? k : m, a_cols = ta ? m : k;  /* A as stored */
  int b_rows = tb ? n : k, b_cols = tb ? k : n;  /* B as stored */
  int lda = a_cols + 3, ldb = b_cols + 5, ldc = n + 2;
  gsize a_len = (gsize) a_rows * lda, b_len = (gsize) b_rows * ldb;
  gsize c_len = (gsize) m * ldc;

  g_autofree float *A = random_floats (&rng, a_len + TEST_GUARD, -1, 1);
  g_autofree float *B = random_floats (&rng, b_len + TEST_GUARD, -1, 1);
  g_autofree float *C = random_floats (&rng, c_len + TEST_GUARD, -1, 1);
  Twin tA = twin_new (p, A, a_len), tB = twin_new (p, B, b_len);
  Twin tC = twin_new (p, C, c_len);

  p->cpu->ops->gemm (p->cpu, ta, tb, m, n, k, alpha, tA.cpu, lda, tB.cpu,
                     ldb, beta, tC.cpu, ldc);
  p->gpu->ops->gemm (p->gpu, ta, tb, m, n, k, alpha, tA.gpu, lda, tB.gpu,
                     ldb, beta, tC.gpu, ldc);

  /* summation term: (k + 2) FLT_EPSILON (|alpha| sum_p |op(A)_ip op(B)_pj|
   * + |beta C_ij|); 0 in the padding and the guard */
  g_autofree double *extra = g_new0 (double, c_len + TEST_GUARD);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      {
        double s = 0.0;
        for (int q = 0; q < k; q++)
          {
            float a = ta ? A[(gsize) q * lda + i] : A[(gsize) i * lda + q];
            float b = tb ? B[(gsize) j * ldb + q] : B[(gsize) q * ldb + j];
            s += fabs ((double) a * b);
          }
        s = fabs (alpha) * s + fabs (beta * C[(gsize) i * ldc + j]);
        extra[(gsize) i * ldc + j] = (k + 2) * FLT_EPSILON * s;
      }

  g_autofree char *what = g_strdup_printf (
      "gemm %c%c m=%d n=%d k=%d alpha=%g beta=%g", ta ? 't' : 'n',
      tb ? 't' : 'n', m, n, k, alpha, beta);
  assert_twin_close (p, what, &tC, ldc, extra);
  /* A and B are inputs: unchanged */
  assert_twin_close (p, "gemm input A", &tA, lda, NULL);
  assert_twin_close (p, "gemm input B", &tB, ldb, NULL);
  twin_free (p, &tA);
  twin_free (p, &tB);
  twin_free (p, &tC);
}

/* Shapes: non-square, a single row, one crossing several cuBLAS tiles; with
 * beta = 0 (C only written), 1 (the bias pattern) and a general pair. */
static void
run_gemm (gboolean ta, gboolean tb)
{
  Pair p;
  if (!pair_open (&p))
    return;
  guint64 seed = 100 + 2 * ta + tb;
  check_gemm (&p, ta, tb, 37, 23, 51, 0.75f, -0.5f, seed);
  check_gemm (&p, ta, tb, 23, 37, 5, 1.0f, 0.0f, seed + 10);
  check_gemm (&p, ta, tb, 1, 17, 9, 1.0f, 1.0f, seed + 20);
  check_gemm (&p, ta, tb, 130, 67, 259, -1.25f, 0.25f, seed + 30);
  pair_close (&p);
}

static void test_gemm_nn (void) { run_gemm (FALSE, FALSE); }
static void test_gemm_nt (void) { run_gemm (FALSE, TRUE); }
static void test_gemm_tn (void) { run_gemm (TRUE, FALSE); }
static void test_gemm_tt (void) { run_gemm (TRUE, TRUE); }

/* --- element-wise and reductions ------------------------------------------ */

static void
test_fill_rows (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 200, TEST_RNG_STREAM);
  int n = 33, k = 19;
  gsize len = (gsize) n * k;
  g_autofree float *Z = random_floats (&rng, len + TEST_GUARD, -5, 5);
  g_autofree float *b = random_floats (&rng, k + TEST_GUARD, -1, 1);
  Twin tZ = twin_new (&p, Z, len), tb = twin_new (&p, b, k);
  p.cpu->ops->fill_rows (p.cpu, tZ.cpu, tb.cpu, n, k);
  p.gpu->ops->fill_rows (p.gpu, tZ.gpu, tb.gpu, n, k);
  assert_twin_close (&p, "fill_rows Z (33, 19)", &tZ, k, NULL);
  twin_free (&p, &tZ);
  twin_free (&p, &tb);
  pair_close (&p);
}

/* dZ (n, k) -> out (k), summation term n FLT_EPSILON sum_i |dZ_ij|. */
static void
check_col_sum (Pair *p, int n, int k, guint64 seed)
{
  KernRng rng;
  kern_rng_init (&rng, seed, TEST_RNG_STREAM);
  gsize len = (gsize) n * k;
  g_autofree float *dZ = random_floats (&rng, len + TEST_GUARD, -1, 1);
  g_autofree float *out = random_floats (&rng, k + TEST_GUARD, -9, 9);
  Twin tdZ = twin_new (p, dZ, len), tout = twin_new (p, out, k);
  p->cpu->ops->col_sum (p->cpu, tdZ.cpu, n, k, tout.cpu);
  p->gpu->ops->col_sum (p->gpu, tdZ.gpu, n, k, tout.gpu);

  g_autofree double *extra = g_new0 (double, k + TEST_GUARD);
  for (int j = 0; j < k; j++)
    {
      double s = 0.0;
      for (int i = 0; i < n; i++)
        s += fabs (dZ[(gsize) i * k + j]);
      extra[j] = n * FLT_EPSILON * s;
    }
  g_autofree char *what = g_strdup_printf ("col_sum n=%d k=%d", n, k);
  assert_twin_close (p, what, &tout, 0, extra);
  twin_free (p, &tdZ);
  twin_free (p, &tout);
}

/* k not a multiple of 32 and above it (several column blocks); n below and
 * above the 8 row lanes. */
static void
test_col_sum (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  check_col_sum (&p, 300, 45, 300);
  check_col_sum (&p, 5, 10, 301);
  check_col_sum (&p, 1000, 1, 302);
  pair_close (&p);
}

static void
test_relu (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 400, TEST_RNG_STREAM);
  gsize len = 10007;
  g_autofree float *A = random_floats (&rng, len + TEST_GUARD, -1, 1);
  for (gsize i = 0; i < len; i += 97)
    A[i] = (i / 97) % 2 ? 0.0f : -0.0f;
  Twin tA = twin_new (&p, A, len);
  p.cpu->ops->relu (p.cpu, tA.cpu, len);
  p.gpu->ops->relu (p.gpu, tA.gpu, len);
  assert_twin_close (&p, "relu", &tA, 0, NULL);
  twin_free (&p, &tA);
  pair_close (&p);
}

static void
test_relu_backward (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 500, TEST_RNG_STREAM);
  gsize len = 10007;
  g_autofree float *A = random_floats (&rng, len + TEST_GUARD, -1, 1);
  g_autofree float *dA = random_floats (&rng, len + TEST_GUARD, -1, 1);
  for (gsize i = 0; i < len; i++)   /* A is a ReLU output */
    A[i] = A[i] > 0.0f ? A[i] : 0.0f;
  Twin tA = twin_new (&p, A, len), tdA = twin_new (&p, dA, len);
  p.cpu->ops->relu_backward (p.cpu, tdA.cpu, tA.cpu, len);
  p.gpu->ops->relu_backward (p.gpu, tdA.gpu, tA.gpu, len);
  assert_twin_close (&p, "relu_backward dA", &tdA, 0, NULL);
  assert_twin_close (&p, "relu_backward A (input)", &tA, 0, NULL);
  twin_free (&p, &tA);
  twin_free (&p, &tdA);
  pair_close (&p);
}

/* --- losses --------------------------------------------------------------- */

typedef enum { LOSS_XENT, LOSS_MSE } LossKind;

/* One loss call on logits (n, k) uniform in [-spread, spread) — or, with
 * ties, on the five values {-1, -0.5, 0, 0.5, 1}, so that rows have several
 * maxima and the first must be chosen — with random labels.  Compares Z
 * (the gradient when scale != 0, else untouched), loss and pred; loss and
 * pred are passed as NULL when `outputs` is FALSE. */
static void
check_loss (LossKind kind, int n, int k, double spread, gboolean ties,
            float scale, gboolean outputs, guint64 seed)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, seed, TEST_RNG_STREAM);
  gsize len = (gsize) n * k;
  g_autofree float *Z = random_floats (&rng, len + TEST_GUARD, -spread, spread);
  if (ties)
    for (gsize i = 0; i < len; i++)
      Z[i] = 0.5f * (float) kern_rng_below (&rng, 5) - 1.0f;
  g_autofree int *y = random_labels (&rng, n, k);
  g_autofree float *loss0 = random_floats (&rng, n + TEST_GUARD, -1, 1);
  g_autofree int *pred0 = random_labels (&rng, n, 1000);

  Twin tZ = twin_new (&p, Z, len), tloss = twin_new (&p, loss0, n);
  TwinInt ty = twin_int_new (&p, y, n), tpred = twin_int_new (&p, pred0, n);
  if (kind == LOSS_XENT)
    {
      p.cpu->ops->softmax_xent (p.cpu, tZ.cpu, ty.cpu, n, k, scale,
                                outputs ? tloss.cpu : NULL,
                                outputs ? tpred.cpu : NULL);
      p.gpu->ops->softmax_xent (p.gpu, tZ.gpu, ty.gpu, n, k, scale,
                                outputs ? tloss.gpu : NULL,
                                outputs ? tpred.gpu : NULL);
    }
  else
    {
      p.cpu->ops->mse (p.cpu, tZ.cpu, ty.cpu, n, k, scale,
                       outputs ? tloss.cpu : NULL, outputs ? tpred.cpu : NULL);
      p.gpu->ops->mse (p.gpu, tZ.gpu, ty.gpu, n, k, scale,
                       outputs ? tloss.gpu : NULL, outputs ? tpred.gpu : NULL);
    }

  const char *name = kind == LOSS_XENT ? "softmax_xent" : "mse";
  g_autofree char *wz = g_strdup_printf ("%s n=%d k=%d scale=%g: Z", name, n,
                                         k, scale);
  g_autofree char *wl = g_strdup_printf ("%s n=%d k=%d: loss", name, n, k);
  g_autofree char *wp = g_strdup_printf ("%s n=%d k=%d: pred", name, n, k);
  assert_twin_close (&p, wz, &tZ, k, NULL);
  assert_twin_close (&p, wl, &tloss, 0, NULL); /* NULL: both untouched */
  assert_twin_int_equal (&p, wp, &tpred);
  if (scale == 0.0f)  /* Z left as is: compare with the input itself */
    {
      g_autofree float *got = twin_get (&p, &tZ, TRUE);
      g_assert_cmpmem (got, len * sizeof (float), Z, len * sizeof (float));
    }
  twin_free (&p, &tZ);
  twin_free (&p, &tloss);
  twin_int_free (&p, &ty);
  twin_int_free (&p, &tpred);
  pair_close (&p);
}

/* The training pattern: gradient of the mean loss, k below a warp. */
static void
test_xent_basic (void)
{
  check_loss (LOSS_XENT, 200, 10, 3.0, FALSE, 1.0f / 200, TRUE, 600);
}

/* k above a warp (lanes loop) and logits near 30: without the max
 * subtraction expf would overflow. */
static void
test_xent_wide (void)
{
  check_loss (LOSS_XENT, 64, 1000, 30.0, FALSE, 0.5f, TRUE, 601);
  check_loss (LOSS_XENT, 9, 33, 80.0, FALSE, 1.0f, TRUE, 602);
}

/* Ties: pred must be the first argmax; scale = 0 leaves Z unchanged. */
static void
test_xent_ties (void)
{
  check_loss (LOSS_XENT, 50, 7, 1.0, TRUE, 0.0f, TRUE, 603);
  check_loss (LOSS_XENT, 40, 70, 1.0, TRUE, 0.25f, TRUE, 604);
}

/* loss and pred NULL with a gradient; k = 1 (loss 0, gradient 0). */
static void
test_xent_edges (void)
{
  check_loss (LOSS_XENT, 40, 12, 2.0, FALSE, 1.0f / 40, FALSE, 605);
  check_loss (LOSS_XENT, 33, 1, 2.0, FALSE, 1.0f, TRUE, 606);
}

static void
test_mse_basic (void)
{
  check_loss (LOSS_MSE, 200, 10, 1.0, FALSE, 1.0f / 200, TRUE, 700);
  check_loss (LOSS_MSE, 64, 300, 4.0, FALSE, 0.5f, TRUE, 701);
}

static void
test_mse_ties (void)
{
  check_loss (LOSS_MSE, 50, 7, 1.0, TRUE, 0.0f, TRUE, 702);
  check_loss (LOSS_MSE, 40, 70, 1.0, TRUE, 0.25f, TRUE, 703);
}

static void
test_mse_edges (void)
{
  check_loss (LOSS_MSE, 40, 12, 2.0, FALSE, 1.0f / 40, FALSE, 704);
  check_loss (LOSS_MSE, 33, 1, 2.0, FALSE, 1.0f, TRUE, 705);
}

/* --- optimizers ----------------------------------------------------------- */

#define TEST_OPT_LEN 10007  /* not a multiple of the block size */

static void
test_sgd (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 800, TEST_RNG_STREAM);
  gsize len = TEST_OPT_LEN;
  g_autofree float *w = random_floats (&rng, len + TEST_GUARD, -1, 1);
  g_autofree float *g = random_floats (&rng, len + TEST_GUARD, -3, 3);
  Twin tw = twin_new (&p, w, len), tg = twin_new (&p, g, len);
  for (int step = 1; step <= 3; step++)
    {
      p.cpu->ops->sgd (p.cpu, tw.cpu, tg.cpu, len, 0.05f);
      p.gpu->ops->sgd (p.gpu, tw.gpu, tg.gpu, len, 0.05f);
    }
  assert_twin_close (&p, "sgd p after 3 steps", &tw, 0, NULL);
  twin_free (&p, &tw);
  twin_free (&p, &tg);
  pair_close (&p);
}

/* Five steps, a new gradient each; p and v compared after every step. */
static void
test_momentum (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 900, TEST_RNG_STREAM);
  gsize len = TEST_OPT_LEN;
  g_autofree float *w = random_floats (&rng, len + TEST_GUARD, -1, 1);
  g_autofree float *v = g_new0 (float, len + TEST_GUARD);
  g_autofree float *g0 = random_floats (&rng, len + TEST_GUARD, -1, 1);
  Twin tw = twin_new (&p, w, len), tv = twin_new (&p, v, len);
  Twin tg = twin_new (&p, g0, len);
  for (int step = 1; step <= 5; step++)
    {
      g_autofree float *g = random_floats (&rng, len, -1, 1);
      twin_set (&p, &tg, g);
      p.cpu->ops->momentum (p.cpu, tw.cpu, tv.cpu, tg.cpu, len, 0.01f, 0.9f);
      p.gpu->ops->momentum (p.gpu, tw.gpu, tv.gpu, tg.gpu, len, 0.01f, 0.9f);
      g_autofree char *wp = g_strdup_printf ("momentum p, step %d", step);
      g_autofree char *wv = g_strdup_printf ("momentum v, step %d", step);
      assert_twin_close (&p, wp, &tw, 0, NULL);
      assert_twin_close (&p, wv, &tv, 0, NULL);
    }
  twin_free (&p, &tw);
  twin_free (&p, &tv);
  twin_free (&p, &tg);
  pair_close (&p);
}

/* Ten steps t = 1..10 (bias correction changes every step), a new gradient
 * each, some of them tiny so that eps matters; p, m, v after every step. */
static void
test_adam (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  KernRng rng;
  kern_rng_init (&rng, 1000, TEST_RNG_STREAM);
  gsize len = TEST_OPT_LEN;
  g_autofree float *w = random_floats (&rng, len + TEST_GUARD, -1, 1);
  g_autofree float *zeros = g_new0 (float, len + TEST_GUARD);
  Twin tw = twin_new (&p, w, len), tm = twin_new (&p, zeros, len);
  Twin tv = twin_new (&p, zeros, len), tg = twin_new (&p, zeros, len);
  for (gint64 t = 1; t <= 10; t++)
    {
      g_autofree float *g = random_floats (&rng, len, -1, 1);
      for (gsize i = 0; i < len; i += 13)
        g[i] *= 1e-7f;
      twin_set (&p, &tg, g);
      p.cpu->ops->adam (p.cpu, tw.cpu, tm.cpu, tv.cpu, tg.cpu, len, 1e-3f,
                        0.9f, 0.999f, 1e-8f, t);
      p.gpu->ops->adam (p.gpu, tw.gpu, tm.gpu, tv.gpu, tg.gpu, len, 1e-3f,
                        0.9f, 0.999f, 1e-8f, t);
      g_autofree char *wp = g_strdup_printf ("adam p, t=%" G_GINT64_FORMAT, t);
      g_autofree char *wm = g_strdup_printf ("adam m, t=%" G_GINT64_FORMAT, t);
      g_autofree char *wv = g_strdup_printf ("adam v, t=%" G_GINT64_FORMAT, t);
      assert_twin_close (&p, wp, &tw, 0, NULL);
      assert_twin_close (&p, wm, &tm, 0, NULL);
      assert_twin_close (&p, wv, &tv, 0, NULL);
    }
  twin_free (&p, &tw);
  twin_free (&p, &tm);
  twin_free (&p, &tv);
  twin_free (&p, &tg);
  pair_close (&p);
}

/* --- a chain -------------------------------------------------------------- */

/* One SGD step of a one-hidden-layer MLP, issued back to back with no
 * download in between, so that the CUDA ops must run in issue order:
 *   H = relu (x W1 + b1)     x (n, d), W1 (d, h), H (n, h)
 *   Z = H W2 + b2            W2 (h, k), Z (n, k)
 *   dZ = softmax_xent (Z, y, scale 1/n)
 *   dW2 = H^T dZ, db2 = col_sum dZ, dH = dZ W2^T, relu_backward (dH, H)
 *   dW1 = x^T dH, db1 = col_sum dH, then sgd on all four.
 * The updated parameters carry the products' rounding times lr = 0.1, well
 * inside the tolerance. */
static void
test_chain_mlp_step (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  enum { N = 64, D = 20, H = 48, K = 10 };
  KernRng rng;
  kern_rng_init (&rng, 1100, TEST_RNG_STREAM);
  g_autofree float *x = random_floats (&rng, N * D + TEST_GUARD, -1, 1);
  g_autofree int *y = random_labels (&rng, N, K);
  g_autofree float *w1 = random_floats (&rng, D * H + TEST_GUARD, -0.3, 0.3);
  g_autofree float *b1 = random_floats (&rng, H + TEST_GUARD, -0.1, 0.1);
  g_autofree float *w2 = random_floats (&rng, H * K + TEST_GUARD, -0.3, 0.3);
  g_autofree float *b2 = random_floats (&rng, K + TEST_GUARD, -0.1, 0.1);
  g_autofree float *scratch = random_floats (&rng, N * H + TEST_GUARD, -1, 1);

  Twin tx = twin_new (&p, x, N * D), tW1 = twin_new (&p, w1, D * H);
  Twin tb1 = twin_new (&p, b1, H), tW2 = twin_new (&p, w2, H * K);
  Twin tb2 = twin_new (&p, b2, K);
  Twin tH = twin_new (&p, scratch, N * H), tZ = twin_new (&p, scratch, N * K);
  Twin tdH = twin_new (&p, scratch, N * H);
  Twin tdW1 = twin_new (&p, scratch, D * H), tdb1 = twin_new (&p, scratch, H);
  Twin tdW2 = twin_new (&p, scratch, H * K), tdb2 = twin_new (&p, scratch, K);
  TwinInt ty = twin_int_new (&p, y, N);

  for (int side = 0; side < 2; side++)
    {
      KernBackend *be = side ? p.gpu : p.cpu;
      const KernBackendOps *o = be->ops;
#define S(t) (side ? (t).gpu : (t).cpu)
      o->fill_rows (be, S (tH), S (tb1), N, H);
      o->gemm (be, FALSE, FALSE, N, H, D, 1.0f, S (tx), D, S (tW1), H, 1.0f,
               S (tH), H);
      o->relu (be, S (tH), N * H);
      o->fill_rows (be, S (tZ), S (tb2), N, K);
      o->gemm (be, FALSE, FALSE, N, K, H, 1.0f, S (tH), H, S (tW2), K, 1.0f,
               S (tZ), K);
      o->softmax_xent (be, S (tZ), S (ty), N, K, 1.0f / N, NULL, NULL);
      o->gemm (be, TRUE, FALSE, H, K, N, 1.0f, S (tH), H, S (tZ), K, 0.0f,
               S (tdW2), K);
      o->col_sum (be, S (tZ), N, K, S (tdb2));
      o->gemm (be, FALSE, TRUE, N, H, K, 1.0f, S (tZ), K, S (tW2), K, 0.0f,
               S (tdH), H);
      o->relu_backward (be, S (tdH), S (tH), N * H);
      o->gemm (be, TRUE, FALSE, D, H, N, 1.0f, S (tx), D, S (tdH), H, 0.0f,
               S (tdW1), H);
      o->col_sum (be, S (tdH), N, H, S (tdb1));
      o->sgd (be, S (tW1), S (tdW1), D * H, 0.1f);
      o->sgd (be, S (tb1), S (tdb1), H, 0.1f);
      o->sgd (be, S (tW2), S (tdW2), H * K, 0.1f);
      o->sgd (be, S (tb2), S (tdb2), K, 0.1f);
#undef S
    }
  assert_twin_close (&p, "mlp step W1", &tW1, H, NULL);
  assert_twin_close (&p, "mlp step b1", &tb1, 0, NULL);
  assert_twin_close (&p, "mlp step W2", &tW2, K, NULL);
  assert_twin_close (&p, "mlp step b2", &tb2, 0, NULL);

  Twin *all[] = { &tx, &tW1, &tb1, &tW2, &tb2, &tH, &tZ, &tdH, &tdW1, &tdb1,
                  &tdW2, &tdb2 };
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    twin_free (&p, all[i]);
  twin_int_free (&p, &ty);
  pair_close (&p);
}

/* The whole MLP (784-64-32-10, loss and gradients of 3 stacked groups, then
 * evaluation) on the CUDA backend against the same model on the CPU: the
 * public model API, with its uploads and downloads, agrees to 1e-4 relative
 * on every gradient element (GEMM sums of up to 784 terms in another order)
 * and exactly on accuracy. */
static void
test_model_mlp (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  int hidden[] = { 64, 32 };
  KernModel *mc = kern_mlp_new (784, hidden, 2, 10, KERN_LOSS_XENT, p.cpu);
  KernModel *mg = kern_mlp_new (784, hidden, 2, 10, KERN_LOSS_XENT, p.gpu);
  gsize P = mc->ops->n_params (mc);
  g_assert_cmpuint (P, ==, mg->ops->n_params (mg));
  g_autofree float *params = g_new (float, P);
  mc->ops->init (mc, params, 11);
  KernDataset *train, *test;
  kern_dataset_blobs (96, 64, 784, 10, 2.0, 5, &train, &test);
  const int n = 32, groups = 3;
  float *gc[3], *gg[3];
  double lc[3], lg[3];
  for (int g = 0; g < groups; g++)
    {
      gc[g] = g_new (float, P);
      gg[g] = g_new (float, P);
    }
  mc->ops->loss_grad_groups (mc, params, train->x, train->y, n, groups, gc, lc);
  mg->ops->loss_grad_groups (mg, params, train->x, train->y, n, groups, gg, lg);
  for (int g = 0; g < groups; g++)
    {
      g_assert_cmpfloat (fabs (lc[g] - lg[g]), <=, 1e-5 * MAX (1.0, fabs (lc[g])));
      double scale = 0;
      for (gsize i = 0; i < P; i++)
        scale = MAX (scale, fabs (gc[g][i]));
      for (gsize i = 0; i < P; i++)
        if (fabs (gc[g][i] - gg[g][i]) > 1e-4 * MAX (fabs (gc[g][i]), 1e-3 * scale))
          g_error ("group %d gradient %" G_GSIZE_FORMAT ": cpu %.9g cuda %.9g", g, i,
                   gc[g][i], gg[g][i]);
    }
  double loss_c, acc_c, loss_g, acc_g;
  mc->ops->evaluate (mc, params, test, &loss_c, &acc_c);
  mg->ops->evaluate (mg, params, test, &loss_g, &acc_g);
  g_assert_cmpfloat (fabs (loss_c - loss_g), <=, 1e-5 * MAX (1.0, loss_c));
  g_assert_cmpfloat (acc_c, ==, acc_g);
  for (int g = 0; g < groups; g++)
    {
      g_free (gc[g]);
      g_free (gg[g]);
    }
  kern_dataset_free (train);
  kern_dataset_free (test);
  kern_model_free (mc);
  kern_model_free (mg);
  pair_close (&p);
}

/* --- loading on demand ------------------------------------------------------ */

/* The first CUDA library or plugin named in `text` (a maps file, a dynamic
 * loader trace), or NULL. */
static const char *
cuda_file_in (const char *text)
{
  static const char *const files[] = { "libcudart", "libcublas", KERN_CUDA_PLUGIN_NAME };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    if (strstr (text, files[i]) != NULL)
      return files[i];
  return NULL;
}

/* This process's memory map, or NULL (the case is then skipped). */
static char *
self_maps (void)
{
  char *maps = NULL;
  if (!g_file_get_contents ("/proc/self/maps", &maps, NULL, NULL))
    g_test_skip ("no /proc/self/maps to read");
  return maps;
}

/* Before anything asks for CUDA (this case runs first), and after real math
 * on the CPU backend and a lookup of "none", no CUDA library is mapped. */
static void
test_lazy_cpu_maps (void)
{
  g_autofree char *before = self_maps ();
  if (before == NULL)
    return;
  const char *found = cuda_file_in (before);
  if (found != NULL)
    g_test_fail_printf ("%s is mapped at start, before anything asked for CUDA", found);

  g_autoptr (GError) error = NULL;
  KernBackend *cpu = kern_backend_new ("cpu", TRUE, &error);
  g_assert_no_error (error);
  float a[4] = { 1, 2, 3, 4 }, c[4] = { 0 };
  float *da = cpu->ops->alloc (cpu, 4), *dc = cpu->ops->alloc (cpu, 4);
  cpu->ops->upload (cpu, da, a, 4);
  cpu->ops->gemm (cpu, FALSE, FALSE, 2, 2, 2, 1.0f, da, 2, da, 2, 0.0f, dc, 2);
  cpu->ops->download (cpu, c, dc, 4);
  g_assert_cmpfloat (c[0], ==, 7.0f);
  cpu->ops->free (cpu, da);
  cpu->ops->free (cpu, dc);
  kern_backend_free (cpu);
  g_assert_nonnull (kern_backend_lookup ("none"));
  g_assert_null (kern_backend_lookup ("none")->create);

  g_autofree char *after = self_maps ();
  if (after == NULL)
    return;
  found = cuda_file_in (after);
  if (found != NULL)
    g_test_fail_printf ("%s is mapped after CPU math, though nothing asked for CUDA", found);
}

/* Asking for CUDA loads the plugin and, with it, the runtime (a CUDA build
 * with the plugin where DTSIM_CUDA_PLUGIN says, as under make check). */
static void
test_lazy_loaded_on_demand (void)
{
#ifndef HAVE_CUDA
  g_test_skip ("this build has no CUDA plugin");
#else
  const char *plugin = g_getenv (KERN_CUDA_PLUGIN_ENV);
  if (plugin == NULL || !g_file_test (plugin, G_FILE_TEST_IS_REGULAR))
    {
      g_test_skip ("DTSIM_CUDA_PLUGIN does not name the built plugin (make check sets it)");
      return;
    }
  int n = kern_cuda_device_count ();
  g_assert_cmpint (n, >=, 0);
  g_autofree char *maps = self_maps ();
  if (maps == NULL)
    return;
  g_assert_nonnull (strstr (maps, KERN_CUDA_PLUGIN_NAME));
  g_assert_nonnull (strstr (maps, "libcudart"));
#endif
}

/* Runs $DTSIM_BIN with `args` in a fresh folder (removed after), with the
 * environment variable `var` set to `value`, or unset when value is NULL
 * (var may be NULL).  Returns the exit status, stderr in *err; or -1, the
 * case skipped, when DTSIM_BIN is not set. */
static int
run_dtsim (const char *const *args, const char *var, const char *value, char **err)
{
  const char *bin = g_getenv ("DTSIM_BIN");
  *err = NULL;
  if (bin == NULL)
    {
      g_test_skip ("DTSIM_BIN is not set (make check sets it)");
      return -1;
    }
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) bin);
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_auto (GStrv) env = g_get_environ ();
  if (var != NULL && value != NULL)
    env = g_environ_setenv (env, var, value, TRUE);
  else if (var != NULL)
    env = g_environ_unsetenv (env, var);
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("dtsim-cuda-XXXXXX", &error);
  g_assert_no_error (error);
  int status = 0;
  g_spawn_sync (dir, (char **) argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, NULL, err,
                &status, &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  sim_remove_tree (dir);
  return WEXITSTATUS (status);
}

/* The scenario file of tests/data called `name`. */
static char *
data_file (const char *name)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  return g_build_filename (d != NULL ? d : "tests/data", name, NULL);
}

/* dtsim's commands that do no CUDA math, traced by the dynamic loader
 * (LD_DEBUG=files lists every object it maps, linked or opened later):
 * none maps a CUDA library or the plugin. */
static void
test_lazy_dtsim_no_cuda (void)
{
  g_autofree char *small = data_file ("small.ini");
  const char *const keys[] = { "keys", NULL };
  const char *const hardware[] = { "hardware", NULL };
  const char *const check[] = { "check", small, NULL };
  const char *const cpu[] = { "run", small, "-q", "-j", "1", NULL };
  const char *const timing[] = { "run", small, "-q", "-j", "1", "--set", "kernels.backend=none",
                                 NULL };
  const char *const *cmds[] = { keys, hardware, check, cpu, timing };
  for (gsize i = 0; i < G_N_ELEMENTS (cmds); i++)
    {
      g_autofree char *err = NULL;
      int rc = run_dtsim (cmds[i], "LD_DEBUG", "files", &err);
      if (rc < 0)
        return;
      g_assert_cmpint (rc, ==, 0);
      if (strstr (err, "file=") == NULL)
        {
          g_test_skip ("the dynamic loader does not trace (LD_DEBUG=files: not glibc)");
          return;
        }
      const char *found = cuda_file_in (err);
      if (found != NULL)
        g_test_fail_printf ("dtsim %s maps %s", cmds[i][0], found);
    }
}

/* Checks that `err` is one line naming [kernels] backend and `want`. */
static void
assert_backend_error (const char *err, const char *want)
{
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "[kernels] backend"));
  g_assert_nonnull (strstr (err, want));
  const char *nl = strchr (err, '\n');
  g_assert_true (nl != NULL && nl[1] == '\0');
}

/* backend = cuda where the plugin cannot be had: bad input (exit 2), one
 * line naming [kernels] backend and the plugin file or the missing build. */
static void
test_lazy_missing_plugin (void)
{
  g_autofree char *small = data_file ("small.ini");
  const char *const args[] = { "check", small, "--set", "kernels.backend=cuda", NULL };
  const char *nowhere = "/nonexistent/dtsim-cuda/" KERN_CUDA_PLUGIN_NAME;
  g_autofree char *err = NULL;
  int rc = run_dtsim (args, KERN_CUDA_PLUGIN_ENV, nowhere, &err);
  if (rc < 0)
    return;
  g_assert_cmpint (rc, ==, 2);
#ifdef HAVE_CUDA
  assert_backend_error (err, nowhere);
  /* a file that is no shared object: the loader's reason */
  g_autofree char *err2 = NULL;
  g_assert_cmpint (run_dtsim (args, KERN_CUDA_PLUGIN_ENV, small, &err2), ==, 2);
  assert_backend_error (err2, "cannot load the CUDA plugin");
#else
  assert_backend_error (err, "built without CUDA");
#endif
}

/* Without DTSIM_CUDA_PLUGIN, dtsim finds the plugin beside itself (the
 * build tree): backend = cuda then fails, if it does, for want of a GPU and
 * not of the plugin. */
static void
test_lazy_beside_dtsim (void)
{
#ifndef HAVE_CUDA
  g_test_skip ("this build has no CUDA plugin");
#else
  g_autofree char *small = data_file ("small.ini");
  const char *const args[] = { "check", small, "--set", "kernels.backend=cuda", NULL };
  g_autofree char *err = NULL;
  int rc = run_dtsim (args, KERN_CUDA_PLUGIN_ENV, NULL, &err);
  if (rc < 0)
    return;
  g_test_message ("exit %d: %s", rc, err);
  if (rc != 0)
    {
      g_assert_cmpint (rc, ==, 2);
      g_assert_null (strstr (err, "plugin"));
      g_assert_nonnull (strstr (err, "CUDA device"));
    }
#endif
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* one run on a GPU reports every mismatching op, not just the first */
  g_test_set_nonfatal_assertions ();

  /* A suite of its own, added first, so that it runs first (GLib runs a
   * suite's cases before its sub-suites): nothing in this process has
   * asked for CUDA yet. */
  g_test_add_func ("/cuda-lazy/cpu-maps", test_lazy_cpu_maps);
  g_test_add_func ("/cuda-lazy/dtsim-no-cuda", test_lazy_dtsim_no_cuda);
  g_test_add_func ("/cuda-lazy/missing-plugin", test_lazy_missing_plugin);
  g_test_add_func ("/cuda-lazy/beside-dtsim", test_lazy_beside_dtsim);
  g_test_add_func ("/cuda-lazy/loaded-on-demand", test_lazy_loaded_on_demand);
  g_test_add_func ("/cuda/roundtrip", test_roundtrip);
  g_test_add_func ("/cuda/empty", test_empty);
  g_test_add_func ("/cuda/gemm/nn", test_gemm_nn);
  g_test_add_func ("/cuda/gemm/nt", test_gemm_nt);
  g_test_add_func ("/cuda/gemm/tn", test_gemm_tn);
  g_test_add_func ("/cuda/gemm/tt", test_gemm_tt);
  g_test_add_func ("/cuda/fill-rows", test_fill_rows);
  g_test_add_func ("/cuda/col-sum", test_col_sum);
  g_test_add_func ("/cuda/relu", test_relu);
  g_test_add_func ("/cuda/relu-backward", test_relu_backward);
  g_test_add_func ("/cuda/softmax-xent/basic", test_xent_basic);
  g_test_add_func ("/cuda/softmax-xent/wide", test_xent_wide);
  g_test_add_func ("/cuda/softmax-xent/ties", test_xent_ties);
  g_test_add_func ("/cuda/softmax-xent/edges", test_xent_edges);
  g_test_add_func ("/cuda/mse/basic", test_mse_basic);
  g_test_add_func ("/cuda/mse/ties", test_mse_ties);
  g_test_add_func ("/cuda/mse/edges", test_mse_edges);
  g_test_add_func ("/cuda/sgd", test_sgd);
  g_test_add_func ("/cuda/momentum", test_momentum);
  g_test_add_func ("/cuda/adam", test_adam);
  g_test_add_func ("/cuda/chain/mlp-step", test_chain_mlp_step);
  g_test_add_func ("/cuda/model/mlp", test_model_mlp);
  return g_test_run ();
}
