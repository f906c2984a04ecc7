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
 * outputs (pred) must be equal.  The model-level cases (a chain of ops, the
 * MLP through the model API) use instead a bound carried through the whole
 * network, derived in the section "model-level bounds" below and checked
 * there on the CPU alone.
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

/* --- model-level bounds --------------------------------------------------- */

/*
 * The model-level cases (a chain of ops, the MLP through the model API)
 * compare results that went through a dozen stacked operations.  The per-op
 * rule above does not carry over, and no relative tolerance does either: a
 * gradient element is a sum with cancellation, far smaller than its terms,
 * so a fixed relative bound fails right answers (on an H200 an MLP
 * gradient element of 2.5e-4 differed from the CPU's by 3.7e-4 relative,
 * both within their bound) or, loosened, passes wrong ones.  Instead the
 * test carries a running error bound through the network.
 *
 * Notation: u = 2^-24 (float), gamma(n) = n u / (1 - n u).  For every
 * quantity X (pre-activations Z_l, activations A_l, dZ_l, dA_l, dW_l, db_l,
 * the row losses) the test computes in double X' (the exact value of the
 * formulas of backend.h and mlp.c at the float inputs) and an element-wise
 * bound e_X such that each backend's float result X_b obeys
 * |X_b - X'| <= e_X.  M_X = |X'| + e_X then bounds |X'| and |X_b|.  Two
 * backends differ by at most 2 e_X: that is the comparison.  Products of
 * bounds below are matrix products of non-negative matrices (in double).
 *
 * (G) GEMM C = A B (+ c): a float sum of K products, in any order, with or
 *     without FMA, is within gamma(K) sum_q |a_q b_q| of the exact sum of
 *     its float inputs; the bias row added in the same accumulation (beta =
 *     1) makes it K + 1 terms.  The inputs are off by e_A and e_B, so
 *     |A_b B_b - A' B'| <= e_A M_B + M_A e_B, and
 *       e_C = gamma(K) (M_A M_B + |c|) + e_A M_B + M_A e_B.
 *     Forward Z_l = A_{l-1} W_l + b_l: K = w_{l-1} + 1; the parameters are
 *     the same floats on both sides (e_W = 0).  Backward dW_l = A^T dZ_l:
 *     K = n rows of the group; dA_{l-1} = dZ_l W_l^T: K = w_l.
 * (C) col_sum over n rows: e_db = gamma(n) sum_i M_dZ + sum_i e_dZ.
 * (R) ReLU is 1-Lipschitz: e_A = e_Z.
 * (K) ReLU mask in backward: where |Z'| > 2 e_Z, Z has the same sign on
 *     both backends as in the exact network, the masks agree and
 *     e_dZ = mask e_dA.  Elsewhere a backend may keep an element the exact
 *     mask drops, or drop one it keeps: e_dZ = M_dA.
 * (S) softmax_xent on a row with logits off by at most d = max_j e_Z, with
 *     range R = max - min + 2 d: each exp(z_j) and their sum move by a
 *     factor within e^{+-d}, so softmax p_j within e^{+-2d}.  The op's own
 *     rounding (cpu.c, cuda_backend.cu): t_j = z_j - max rounds with
 *     |t_j| <= R (factor e^{+-R u} after exp); expf is within 2 ulp <= 4 u
 *     (CUDA's bound; glibc's is 1 ulp), taken as 5 u to cover the double
 *     row sum; r = scale / s rounds in double then float (2 u); e_j r rounds
 *     (u).  So the computed scale p_j is within a factor e^{+-lambda} of
 *     the exact one, lambda = 2 d + (2 R + 16) u (13 u counted, 3 u spare),
 *     and subtracting scale at the label rounds once more:
 *       e_dZ = scale p_j (e^lambda - 1)(1 + u) + u scale |p_j - onehot_j|
 *              + FLT_MIN (FLT_MIN: an expf that underflows).
 *     The row loss log s - t_y moves by d in log-sum-exp and d in z_y;
 *     rounding adds (R + 5) u in log s and R u in t_y, then the float
 *     result rounds: e_loss = l + u (|loss'| + l), l = 2 d + (2 R + 6) u.
 *     The mean of n row losses, summed in double, adds n 2^-52 mean.
 *     The first argmax can differ only in a row where another logit lies
 *     within 2 (e_Z(top) + e_Z(j)) of the top one.
 * (U) sgd p -= lr g (with or without FMA): e_p = (1 + u)(lr e_g +
 *     u lr M_g) + u |p'|.
 * The double reference is itself off the exact values by gamma(K) with
 * 2^-53 in place of u, 2^-29 of the float bounds: every bound is rounded up
 * by TEST_REF_SLACK to cover that, and the "2" in (K) and in the argmax
 * rule leaves the same room.
 *
 * To first order each gradient bound is sum over the stacked ops of
 * gamma(K_op) times that op's magnitude (the network run on |W|, |x| and
 * |dZ|), i.e. at most about c gamma(K) M with K = w_0 + 1 the longest
 * accumulation chain and c the number of GEMMs between the input and the
 * element; the computed bound is sharper, element by element.
 *
 * A bound loose enough to pass a wrong kernel would be worthless:
 * /cuda/model/bound/catches-bugs feeds the same comparison a CPU result
 * made wrong on purpose (a transposed operand, a misread weight, another
 * group's rows) and requires it to fail by a wide margin, and
 * /cuda/model/bound/cpu-within checks the CPU backend against the double
 * reference with the one-sided bound.  Both run without a GPU.
 */

/* Unit roundoff of float. */
#define TEST_U 0x1.0p-24
/* Bounds derived through the double reference are rounded up by this. */
#define TEST_REF_SLACK (1.0 + 0x1.0p-20)
/* A wrong result must exceed the bound by at least this factor. */
#define TEST_BUG_MARGIN 10.0

static double
gamma_n (int n)
{
  return n * TEST_U / (1.0 - n * TEST_U);
}

/* C (m, n) (+)= op(A) op(B) in double, row-major and dense: A is (m, k)
 * after op (stored (k, m) when ta), B (k, n) after op (stored (n, k) when
 * tb).  acc adds onto C instead of overwriting it. */
static void
dmm (gboolean ta, gboolean tb, int m, int n, int k, const double *A,
     const double *B, gboolean acc, double *C)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++)
      {
        double s = acc ? C[(gsize) i * n + j] : 0.0;
        for (int q = 0; q < k; q++)
          {
            double a = ta ? A[(gsize) q * m + i] : A[(gsize) i * k + q];
            double b = tb ? B[(gsize) j * k + q] : B[(gsize) q * n + j];
            s += a * b;
          }
        C[(gsize) i * n + j] = s;
      }
}

/* n floats as doubles; with `absolute`, their absolute values. */
static double *
to_double (const float *x, gsize n, gboolean absolute)
{
  double *d = g_new (double, n);
  for (gsize i = 0; i < n; i++)
    d[i] = absolute ? fabs ((double) x[i]) : (double) x[i];
  return d;
}

/* M = |X'| + e_X over n elements. */
static double *
magnitude (const double *x, const double *e, gsize n)
{
  double *m = g_new (double, n);
  for (gsize i = 0; i < n; i++)
    m[i] = fabs (x[i]) + (e != NULL ? e[i] : 0.0);
  return m;
}

/* The exact loss and gradients of the dense network of mlp.c (ReLU hidden
 * layers, softmax cross-entropy) and their error bounds (rules above), for
 * `groups` groups of n rows, each group's loss the mean of its rows and its
 * gradient that of the mean (scale 1/n in float). */
typedef struct {
  gsize n_params;
  int groups;
  double *grad;       /* (groups, n_params) exact gradients */
  double *grad_err;   /* (groups, n_params) |backend - exact| <= grad_err */
  double *loss;       /* (groups) exact mean losses */
  double *loss_err;   /* (groups) */
  int pred_unsure;    /* rows whose first argmax a backend may get wrong */
} RefNet;

static void
ref_net_free (RefNet *r)
{
  g_free (r->grad);
  g_free (r->grad_err);
  g_free (r->loss);
  g_free (r->loss_err);
  g_free (r);
}

/* The softmax_xent rows of logits Z (rows, k) with bounds eZ, labels y,
 * scale s: fills r's losses and pred_unsure, and dZ, e_dZ (rows, k). */
static void
ref_net_xent (RefNet *r, const double *Z, const double *eZ, const int *y,
              int n, int k, double s, double *dZ, double *e_dZ)
{
  int rows = n * r->groups;
  for (int i = 0; i < rows; i++)
    {
      const double *z = Z + (gsize) i * k, *ez = eZ + (gsize) i * k;
      int top = 0;
      double d = 0.0, zmin = z[0];
      for (int j = 0; j < k; j++)
        {
          d = MAX (d, ez[j]);
          zmin = MIN (zmin, z[j]);
          if (z[j] > z[top])
            top = j;
        }
      for (int j = 0; j < k; j++)
        if (j != top && z[top] - z[j] <= 2.0 * (ez[top] + ez[j]))
          {
            r->pred_unsure++;
            break;
          }
      double range = z[top] - zmin + 2.0 * d, sum = 0.0;
      for (int j = 0; j < k; j++)
        sum += exp (z[j] - z[top]);
      double loss = log (sum) - (z[y[i]] - z[top]);
      double l = 2.0 * d + (2.0 * range + 6.0) * TEST_U;
      int g = i / n;
      r->loss[g] += loss / n;
      r->loss_err[g] += (l + TEST_U * (fabs (loss) + l)) / n;
      double lambda = 2.0 * d + (2.0 * range + 16.0) * TEST_U;
      for (int j = 0; j < k; j++)
        {
          double pj = exp (z[j] - z[top]) / sum;
          double t = pj - (j == y[i] ? 1.0 : 0.0);
          dZ[(gsize) i * k + j] = s * t;
          e_dZ[(gsize) i * k + j] = s * pj * expm1 (lambda) * (1.0 + TEST_U)
                                    + TEST_U * s * fabs (t) + FLT_MIN;
        }
    }
  for (int g = 0; g < r->groups; g++)
    r->loss_err[g] += n * DBL_EPSILON * r->loss[g];
}

/* Backward rules (G), (C), (K) from dZ_L; see ref_net_new. */
static void
ref_net_backward (RefNet *r, int n_dense, const int *width,
                  const float *params, const gsize *w_off, const double *xd,
                  double **Z, double **eZ, double **act, int n, double *dZ,
                  double *e_dZ)
{
  int rows = n * r->groups;
  for (int l = n_dense - 1; l >= 0; l--)
    {
      int in = width[l], out = width[l + 1];
      const double *A = l == 0 ? xd : act[l - 1];      /* (rows, in) */
      const double *eA = l == 0 ? NULL : eZ[l - 1];    /* (rows, in) */
      g_autofree double *MA = magnitude (A, eA, (gsize) rows * in);
      g_autofree double *MdZ = magnitude (dZ, e_dZ, (gsize) rows * out);
      g_autofree double *t = g_new (double, (gsize) in * out);
      for (int g = 0; g < r->groups; g++)
        {
          gsize r0 = (gsize) g * n;
          double *dW = r->grad + g * r->n_params + w_off[l];
          double *edW = r->grad_err + g * r->n_params + w_off[l];
          double *db = dW + (gsize) in * out, *edb = edW + (gsize) in * out;
          dmm (TRUE, FALSE, in, out, n, A + r0 * in, dZ + r0 * out, FALSE, dW);
          dmm (TRUE, FALSE, in, out, n, MA + r0 * in, MdZ + r0 * out, FALSE, edW);
          for (gsize q = 0; q < (gsize) in * out; q++)
            edW[q] *= gamma_n (n);
          dmm (TRUE, FALSE, in, out, n, MA + r0 * in, e_dZ + r0 * out, TRUE, edW);
          if (eA != NULL)
            dmm (TRUE, FALSE, in, out, n, eA + r0 * in, MdZ + r0 * out, TRUE, edW);
          for (int j = 0; j < out; j++)
            {
              double s = 0.0, ms = 0.0, es = 0.0;
              for (int i = 0; i < n; i++)
                {
                  gsize at = (r0 + i) * out + j;
                  s += dZ[at];
                  ms += MdZ[at];
                  es += e_dZ[at];
                }
              db[j] = s;
              edb[j] = gamma_n (n) * ms + es;
            }
        }
      if (l == 0)
        break;
      g_autofree double *W = to_double (params + w_off[l], (gsize) in * out, FALSE);
      g_autofree double *aW = to_double (params + w_off[l], (gsize) in * out, TRUE);
      g_autofree double *dA = g_new (double, (gsize) rows * in);
      g_autofree double *edA = g_new (double, (gsize) rows * in);
      dmm (FALSE, TRUE, rows, in, out, dZ, W, FALSE, dA);
      dmm (FALSE, TRUE, rows, in, out, MdZ, aW, FALSE, edA);
      for (gsize q = 0; q < (gsize) rows * in; q++)
        edA[q] *= gamma_n (out);
      dmm (FALSE, TRUE, rows, in, out, e_dZ, aW, TRUE, edA);
      /* dZ_{l-1}, overwriting dZ (rows, out): out >= in is not needed, the
       * caller sized both for the widest layer */
      for (gsize q = 0; q < (gsize) rows * in; q++)
        {
          double z = Z[l - 1][q], ez = eZ[l - 1][q];
          if (fabs (z) <= 2.0 * ez)
            {
              dZ[q] = z > 0.0 ? dA[q] : 0.0;
              e_dZ[q] = fabs (dA[q]) + edA[q];
            }
          else
            {
              dZ[q] = z > 0.0 ? dA[q] : 0.0;
              e_dZ[q] = z > 0.0 ? edA[q] : 0.0;
            }
        }
    }
}

/* The reference of a dense network with n_dense layers of widths width
 * (n_dense + 1) at params (mlp.c's layout: W_l (in, out) then b_l), on
 * `groups` groups of n rows of x (groups n, width[0]) and labels y; the
 * gradients only when `grads`.  Free with ref_net_free. */
static RefNet *
ref_net_new (int n_dense, const int *width, const float *params,
             const float *x, const int *y, int n, int groups, gboolean grads)
{
  RefNet *r = g_new0 (RefNet, 1);
  int rows = n * groups, widest = 0;
  g_autofree gsize *w_off = g_new (gsize, n_dense);
  for (int l = 0; l < n_dense; l++)
    {
      w_off[l] = r->n_params;
      r->n_params += (gsize) width[l] * width[l + 1] + width[l + 1];
      widest = MAX (widest, width[l + 1]);
    }
  r->groups = groups;
  r->grad = g_new0 (double, (gsize) groups * r->n_params);
  r->grad_err = g_new0 (double, (gsize) groups * r->n_params);
  r->loss = g_new0 (double, groups);
  r->loss_err = g_new0 (double, groups);

  /* forward, rules (G) and (R): Z[l], eZ[l] (rows, w_{l+1}); act[l] the
   * ReLU of Z[l] for hidden layers, whose bound is eZ[l] */
  g_autofree double *xd = to_double (x, (gsize) rows * width[0], FALSE);
  double **Z = g_new0 (double *, n_dense), **eZ = g_new0 (double *, n_dense);
  double **act = g_new0 (double *, n_dense);
  for (int l = 0; l < n_dense; l++)
    {
      int in = width[l], out = width[l + 1];
      const double *A = l == 0 ? xd : act[l - 1];
      const double *eA = l == 0 ? NULL : eZ[l - 1];
      g_autofree double *MA = magnitude (A, eA, (gsize) rows * in);
      g_autofree double *W = to_double (params + w_off[l], (gsize) in * out, FALSE);
      g_autofree double *aW = to_double (params + w_off[l], (gsize) in * out, TRUE);
      const float *b = params + w_off[l] + (gsize) in * out;
      Z[l] = g_new (double, (gsize) rows * out);
      eZ[l] = g_new (double, (gsize) rows * out);
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < out; j++)
          {
            Z[l][(gsize) i * out + j] = b[j];
            eZ[l][(gsize) i * out + j] = fabs (b[j]);
          }
      dmm (FALSE, FALSE, rows, out, in, A, W, TRUE, Z[l]);
      dmm (FALSE, FALSE, rows, out, in, MA, aW, TRUE, eZ[l]);
      for (gsize q = 0; q < (gsize) rows * out; q++)
        eZ[l][q] *= gamma_n (in + 1);
      if (eA != NULL)
        dmm (FALSE, FALSE, rows, out, in, eA, aW, TRUE, eZ[l]);
      if (l < n_dense - 1)
        {
          act[l] = g_new (double, (gsize) rows * out);
          for (gsize q = 0; q < (gsize) rows * out; q++)
            act[l][q] = MAX (Z[l][q], 0.0);
        }
    }

  /* loss, rule (S), then backward */
  int k = width[n_dense];
  double s = (double) (1.0f / (float) n);
  g_autofree double *dZ = g_new (double, (gsize) rows * MAX (widest, width[0]));
  g_autofree double *e_dZ = g_new (double, (gsize) rows * MAX (widest, width[0]));
  ref_net_xent (r, Z[n_dense - 1], eZ[n_dense - 1], y, n, k, s, dZ, e_dZ);
  if (grads)
    ref_net_backward (r, n_dense, width, params, w_off, xd, Z, eZ, act, n, dZ, e_dZ);

  for (gsize q = 0; q < (gsize) groups * r->n_params; q++)
    r->grad_err[q] *= TEST_REF_SLACK;
  for (int g = 0; g < groups; g++)
    r->loss_err[g] *= TEST_REF_SLACK;
  for (int l = 0; l < n_dense; l++)
    {
      g_free (Z[l]);
      g_free (eZ[l]);
      g_free (act[l]);
    }
  g_free (Z);
  g_free (eZ);
  g_free (act);
  return r;
}

/* The comparison of every model-level case: counts the elements i < len
 * with |got[i] - ref[i]| > tol[i] (a NaN counts), prints the first
 * TEST_MAX_REPORT of them, and sets *worst to the largest
 * |got[i] - ref[i]| / tol[i]. */
static gsize
bound_count (const char *what, const double *ref, const float *got,
             const double *tol, gsize len, double *worst)
{
  gsize bad = 0;
  *worst = 0.0;
  for (gsize i = 0; i < len; i++)
    {
      double diff = fabs ((double) got[i] - ref[i]);
      if (!(diff <= tol[i]))
        {
          if (bad < TEST_MAX_REPORT)
            g_test_message ("%s: [%" G_GSIZE_FORMAT "] ref %.9g got %.9g "
                            "|diff| %.3g bound %.3g", what, i, ref[i], got[i],
                            diff, tol[i]);
          bad++;
        }
      if (tol[i] > 0.0)
        *worst = MAX (*worst, isnan (diff) ? INFINITY : diff / tol[i]);
      else if (diff > 0.0)
        *worst = INFINITY;
    }
  g_test_message ("%s: %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
                  " elements beyond the bound (largest |diff|/bound %.3g)",
                  what, bad, len, *worst);
  return bad;
}

/* Two backends' gradients a[g], b[g] (n_params each) of r's groups against
 * 2 grad_err (each within grad_err of the exact): elements beyond the
 * bound, over all groups; *worst as bound_count's. */
static gsize
grads_beyond (const RefNet *r, const char *what, float *const *a,
              float *const *b, double *worst)
{
  gsize bad = 0;
  *worst = 0.0;
  g_autofree double *tol = g_new (double, r->n_params);
  for (int g = 0; g < r->groups; g++)
    {
      g_autofree double *ad = to_double (a[g], r->n_params, FALSE);
      for (gsize q = 0; q < r->n_params; q++)
        tol[q] = 2.0 * r->grad_err[(gsize) g * r->n_params + q];
      g_autofree char *w = g_strdup_printf ("%s, group %d gradient", what, g);
      double wg;
      bad += bound_count (w, ad, b[g], tol, r->n_params, &wg);
      *worst = MAX (*worst, wg);
    }
  return bad;
}

/* --- the MLP through the model API ----------------------------------------- */

/* 784-64-32-10 with softmax cross-entropy: 3 groups of 32 rows of blobs for
 * loss_grad_groups, 64 more for evaluate. */
enum { MLP_N = 32, MLP_GROUPS = 3, MLP_TEST_ROWS = 64 };
static const int mlp_width[] = { 784, 64, 32, 10 };

typedef struct {
  KernDataset *train, *test;
  gsize n_params;
  float *params;       /* (n_params) */
  RefNet *ref;         /* the loss_grad_groups call */
  RefNet *ref_eval;    /* evaluate on test: one group of MLP_TEST_ROWS */
} MlpCase;

/* The MLP on `be` (NULL: a CPU backend of its own). */
static KernModel *
mlp_case_model (KernBackend *be)
{
  return kern_mlp_new (mlp_width[0], mlp_width + 1, 2, mlp_width[3],
                       KERN_LOSS_XENT, be);
}

static void
mlp_case_init (MlpCase *c)
{
  KernModel *m = mlp_case_model (NULL);
  c->n_params = m->ops->n_params (m);
  c->params = g_new (float, c->n_params);
  m->ops->init (m, c->params, 11);
  kern_model_free (m);
  kern_dataset_blobs (MLP_N * MLP_GROUPS, MLP_TEST_ROWS, mlp_width[0],
                      mlp_width[3], 2.0, 5, &c->train, &c->test);
  c->ref = ref_net_new (3, mlp_width, c->params, c->train->x, c->train->y,
                        MLP_N, MLP_GROUPS, TRUE);
  g_assert_cmpuint (c->ref->n_params, ==, c->n_params);
  c->ref_eval = ref_net_new (3, mlp_width, c->params, c->test->x, c->test->y,
                             MLP_TEST_ROWS, 1, FALSE);
}

static void
mlp_case_clear (MlpCase *c)
{
  g_free (c->params);
  kern_dataset_free (c->train);
  kern_dataset_free (c->test);
  ref_net_free (c->ref);
  ref_net_free (c->ref_eval);
}

/* The model's loss_grad_groups at `params` (c->params or a variant):
 * grads[g] newly allocated (free with g_free), losses[g]. */
static void
mlp_case_run (const MlpCase *c, KernModel *m, const float *params,
              float **grads, double *losses)
{
  for (int g = 0; g < MLP_GROUPS; g++)
    grads[g] = g_new (float, c->n_params);
  m->ops->loss_grad_groups (m, params, c->train->x, c->train->y, MLP_N,
                            MLP_GROUPS, grads, losses);
}

static void
free_groups (float **grads)
{
  for (int g = 0; g < MLP_GROUPS; g++)
    g_free (grads[g]);
}

/* The whole MLP on the CUDA backend against the same model on the CPU: the
 * public model API, with its uploads and downloads.  Every gradient element
 * and every loss within twice its derived bound (rules above); accuracy
 * equal but for rows whose first argmax the bound leaves open. */
static void
test_model_mlp (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  MlpCase c;
  mlp_case_init (&c);
  KernModel *mc = mlp_case_model (p.cpu), *mg = mlp_case_model (p.gpu);
  g_assert_cmpuint (mg->ops->n_params (mg), ==, c.n_params);
  float *gc[MLP_GROUPS], *gg[MLP_GROUPS];
  double lc[MLP_GROUPS], lg[MLP_GROUPS];
  mlp_case_run (&c, mc, c.params, gc, lc);
  mlp_case_run (&c, mg, c.params, gg, lg);
  double worst;
  g_assert_cmpuint (grads_beyond (c.ref, "cpu vs cuda", gc, gg, &worst), ==, 0);
  for (int g = 0; g < MLP_GROUPS; g++)
    {
      g_test_message ("group %d loss: cpu %.9g cuda %.9g bound %.3g", g, lc[g],
                      lg[g], 2.0 * c.ref->loss_err[g]);
      g_assert_cmpfloat (fabs (lc[g] - lg[g]), <=, 2.0 * c.ref->loss_err[g]);
    }

  double loss_c, acc_c, loss_g, acc_g;
  mc->ops->evaluate (mc, c.params, c.test, &loss_c, &acc_c);
  mg->ops->evaluate (mg, c.params, c.test, &loss_g, &acc_g);
  g_assert_cmpfloat (fabs (loss_c - loss_g), <=, 2.0 * c.ref_eval->loss_err[0]);
  g_test_message ("evaluate: %d of %d rows with an argmax the bound leaves open",
                  c.ref_eval->pred_unsure, MLP_TEST_ROWS);
  g_assert_cmpfloat (fabs (acc_c - acc_g) * MLP_TEST_ROWS, <=,
                     c.ref_eval->pred_unsure + 1e-9);

  free_groups (gc);
  free_groups (gg);
  kern_model_free (mc);
  kern_model_free (mg);
  mlp_case_clear (&c);
  pair_close (&p);
}

/* --- a chain -------------------------------------------------------------- */

/* One SGD step of a one-hidden-layer MLP written op by op, x (N, D), W1
 * (D, H), W2 (H, K), y (N); mlp.c's parameter layout W1, b1, W2, b2. */
enum { CHAIN_N = 64, CHAIN_D = 20, CHAIN_H = 48, CHAIN_K = 10 };
enum {
  CHAIN_W1 = 0,
  CHAIN_B1 = CHAIN_W1 + CHAIN_D * CHAIN_H,
  CHAIN_W2 = CHAIN_B1 + CHAIN_H,
  CHAIN_B2 = CHAIN_W2 + CHAIN_H * CHAIN_K,
  CHAIN_PARAMS = CHAIN_B2 + CHAIN_K
};
static const int chain_width[] = { CHAIN_D, CHAIN_H, CHAIN_K };
#define CHAIN_LR 0.1f

typedef struct {
  float *x;          /* (N D + TEST_GUARD) */
  int *y;            /* (N) */
  float *params;     /* (CHAIN_PARAMS + TEST_GUARD) */
  float *scratch;    /* (N H + TEST_GUARD): first contents of every output */
  RefNet *ref;       /* the step's gradients */
  double *p_new;     /* (CHAIN_PARAMS) exact parameters after the step */
  double *p_err;     /* (CHAIN_PARAMS) their bound, rule (U) */
} ChainCase;

static void
chain_case_init (ChainCase *c)
{
  KernRng rng;
  kern_rng_init (&rng, 1100, TEST_RNG_STREAM);
  c->x = random_floats (&rng, CHAIN_N * CHAIN_D + TEST_GUARD, -1, 1);
  c->y = random_labels (&rng, CHAIN_N, CHAIN_K);
  c->params = random_floats (&rng, CHAIN_PARAMS + TEST_GUARD, -0.3, 0.3);
  for (int j = 0; j < CHAIN_H; j++)     /* biases in [-0.1, 0.1) */
    c->params[CHAIN_B1 + j] /= 3.0f;
  for (int j = 0; j < CHAIN_K; j++)
    c->params[CHAIN_B2 + j] /= 3.0f;
  c->scratch = random_floats (&rng, CHAIN_N * CHAIN_H + TEST_GUARD, -1, 1);
  c->ref = ref_net_new (2, chain_width, c->params, c->x, c->y, CHAIN_N, 1, TRUE);
  g_assert_cmpuint (c->ref->n_params, ==, CHAIN_PARAMS);
  c->p_new = g_new (double, CHAIN_PARAMS);
  c->p_err = g_new (double, CHAIN_PARAMS);
  double lr = CHAIN_LR;
  for (gsize q = 0; q < CHAIN_PARAMS; q++)
    {
      double g = c->ref->grad[q], eg = c->ref->grad_err[q];
      c->p_new[q] = c->params[q] - lr * g;
      c->p_err[q] = ((1.0 + TEST_U) * (lr * eg + TEST_U * lr * (fabs (g) + eg))
                     + TEST_U * fabs (c->p_new[q])) * TEST_REF_SLACK;
    }
}

static void
chain_case_clear (ChainCase *c)
{
  g_free (c->x);
  g_free (c->y);
  g_free (c->params);
  g_free (c->scratch);
  ref_net_free (c->ref);
  g_free (c->p_new);
  g_free (c->p_err);
}

/* The step on `be`, all buffers its own, issued back to back:
 *   H = relu (x W1 + b1)     H (N, H)
 *   Z = H W2 + b2            Z (N, K)
 *   dZ = softmax_xent (Z, y, scale 1/N)
 *   dW2 = H^T dZ, db2 = col_sum dZ, dH = dZ W2^T, relu_backward (dH, H)
 *   dW1 = x^T dH, db1 = col_sum dH, then sgd on all four (lr CHAIN_LR). */
static void
chain_step (KernBackend *be, const float *x, const int *y, float *W1,
            float *b1, float *W2, float *b2, float *Hb, float *Z, float *dH,
            float *dW1, float *db1, float *dW2, float *db2)
{
  const KernBackendOps *o = be->ops;
  enum { N = CHAIN_N, D = CHAIN_D, H = CHAIN_H, K = CHAIN_K };
  o->fill_rows (be, Hb, b1, N, H);
  o->gemm (be, FALSE, FALSE, N, H, D, 1.0f, x, D, W1, H, 1.0f, Hb, H);
  o->relu (be, Hb, N * H);
  o->fill_rows (be, Z, b2, N, K);
  o->gemm (be, FALSE, FALSE, N, K, H, 1.0f, Hb, H, W2, K, 1.0f, Z, K);
  o->softmax_xent (be, Z, y, N, K, 1.0f / N, NULL, NULL);
  o->gemm (be, TRUE, FALSE, H, K, N, 1.0f, Hb, H, Z, K, 0.0f, dW2, K);
  o->col_sum (be, Z, N, K, db2);
  o->gemm (be, FALSE, TRUE, N, H, K, 1.0f, Z, K, W2, K, 0.0f, dH, H);
  o->relu_backward (be, dH, Hb, N * H);
  o->gemm (be, TRUE, FALSE, D, H, N, 1.0f, x, D, dH, H, 0.0f, dW1, H);
  o->col_sum (be, dH, N, H, db1);
  o->sgd (be, W1, dW1, D * H, CHAIN_LR);
  o->sgd (be, b1, db1, H, CHAIN_LR);
  o->sgd (be, W2, dW2, H * K, CHAIN_LR);
  o->sgd (be, b2, db2, K, CHAIN_LR);
}

/* Both sides of t: its n elements within tol (n) of each other
 * (bound_count), its guard tail equal on both. */
static void
assert_twin_within (Pair *p, const char *what, const Twin *t, const double *tol)
{
  g_autofree float *ref = twin_get (p, t, FALSE);
  g_autofree float *got = twin_get (p, t, TRUE);
  g_autofree double *refd = to_double (ref, t->n, FALSE);
  double worst;
  g_assert_cmpuint (bound_count (what, refd, got, tol, t->n, &worst), ==, 0);
  g_autofree char *guard = g_strdup_printf ("%s: guard", what);
  assert_close (guard, ref + t->n, got + t->n, TEST_GUARD, 0, NULL);
}

/* 2 err[first..first+n): two backends each within err of the exact. */
static double *
pair_tol (const double *err, gsize first, gsize n)
{
  double *tol = g_new (double, n);
  for (gsize i = 0; i < n; i++)
    tol[i] = 2.0 * err[first + i];
  return tol;
}

/* The step with no download in between, so that the CUDA ops must run in
 * issue order; the four gradients and the four updated parameter blocks
 * within their derived bounds (rules above, (U) for the update). */
static void
test_chain_mlp_step (void)
{
  Pair p;
  if (!pair_open (&p))
    return;
  enum { N = CHAIN_N, D = CHAIN_D, H = CHAIN_H, K = CHAIN_K };
  ChainCase c;
  chain_case_init (&c);
  float *w = c.params;
  Twin tx = twin_new (&p, c.x, N * D), tW1 = twin_new (&p, w + CHAIN_W1, D * H);
  Twin tb1 = twin_new (&p, w + CHAIN_B1, H), tW2 = twin_new (&p, w + CHAIN_W2, H * K);
  Twin tb2 = twin_new (&p, w + CHAIN_B2, K);
  Twin tH = twin_new (&p, c.scratch, N * H), tZ = twin_new (&p, c.scratch, N * K);
  Twin tdH = twin_new (&p, c.scratch, N * H);
  Twin tdW1 = twin_new (&p, c.scratch, D * H), tdb1 = twin_new (&p, c.scratch, H);
  Twin tdW2 = twin_new (&p, c.scratch, H * K), tdb2 = twin_new (&p, c.scratch, K);
  TwinInt ty = twin_int_new (&p, c.y, N);

  for (int side = 0; side < 2; side++)
    {
#define S(t) (side ? (t).gpu : (t).cpu)
      chain_step (side ? p.gpu : p.cpu, S (tx), S (ty), S (tW1), S (tb1),
                  S (tW2), S (tb2), S (tH), S (tZ), S (tdH), S (tdW1),
                  S (tdb1), S (tdW2), S (tdb2));
#undef S
    }
  struct { const char *what; Twin *t; gsize at; } out[] = {
    { "mlp step dW1", &tdW1, CHAIN_W1 }, { "mlp step db1", &tdb1, CHAIN_B1 },
    { "mlp step dW2", &tdW2, CHAIN_W2 }, { "mlp step db2", &tdb2, CHAIN_B2 },
    { "mlp step W1", &tW1, CHAIN_W1 }, { "mlp step b1", &tb1, CHAIN_B1 },
    { "mlp step W2", &tW2, CHAIN_W2 }, { "mlp step b2", &tb2, CHAIN_B2 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (out); i++)
    {
      const double *err = i < 4 ? c.ref->grad_err : c.p_err;
      g_autofree double *tol = pair_tol (err, out[i].at, out[i].t->n);
      assert_twin_within (&p, out[i].what, out[i].t, tol);
    }

  Twin *all[] = { &tx, &tW1, &tb1, &tW2, &tb2, &tH, &tZ, &tdH, &tdW1, &tdb1,
                  &tdW2, &tdb2 };
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    twin_free (&p, all[i]);
  twin_int_free (&p, &ty);
  chain_case_clear (&c);
  pair_close (&p);
}

/* The chain step on the CPU backend against the double reference, with the
 * one-sided bounds (no GPU needed): gradients and updated parameters. */
static void
test_bound_chain_cpu_within (void)
{
  enum { N = CHAIN_N, D = CHAIN_D, H = CHAIN_H, K = CHAIN_K };
  ChainCase c;
  chain_case_init (&c);
  KernBackend *cpu = kern_backend_cpu_new ();
  g_autofree float *w = g_memdup2 (c.params, CHAIN_PARAMS * sizeof (float));
  g_autofree float *grad = g_new (float, CHAIN_PARAMS);
  g_autofree float *Hb = g_new (float, N * H), *Z = g_new (float, N * K);
  g_autofree float *dH = g_new (float, N * H);
  chain_step (cpu, c.x, c.y, w + CHAIN_W1, w + CHAIN_B1, w + CHAIN_W2,
              w + CHAIN_B2, Hb, Z, dH, grad + CHAIN_W1, grad + CHAIN_B1,
              grad + CHAIN_W2, grad + CHAIN_B2);
  double worst;
  g_assert_cmpuint (bound_count ("chain cpu vs exact: gradient", c.ref->grad, grad,
                                 c.ref->grad_err, CHAIN_PARAMS, &worst), ==, 0);
  g_assert_cmpuint (bound_count ("chain cpu vs exact: parameters", c.p_new, w,
                                 c.p_err, CHAIN_PARAMS, &worst), ==, 0);
  kern_backend_free (cpu);
  chain_case_clear (&c);
}

/* The CPU backend against the double reference, with the one-sided bound:
 * a bound too tight for float (a rule missing a term) fails here, without
 * a GPU.  Gradients and group losses of the MLP, and evaluate's loss. */
static void
test_bound_cpu_within (void)
{
  MlpCase c;
  mlp_case_init (&c);
  KernModel *m = mlp_case_model (NULL);
  float *gc[MLP_GROUPS];
  double lc[MLP_GROUPS];
  mlp_case_run (&c, m, c.params, gc, lc);
  for (int g = 0; g < MLP_GROUPS; g++)
    {
      g_autofree char *what = g_strdup_printf ("cpu vs exact, group %d gradient", g);
      double worst;
      gsize off = (gsize) g * c.n_params;
      g_assert_cmpuint (bound_count (what, c.ref->grad + off, gc[g],
                                     c.ref->grad_err + off, c.n_params, &worst),
                        ==, 0);
      g_assert_cmpfloat (fabs (lc[g] - c.ref->loss[g]), <=, c.ref->loss_err[g]);
    }
  double loss, acc;
  m->ops->evaluate (m, c.params, c.test, &loss, &acc);
  g_assert_cmpfloat (fabs (loss - c.ref_eval->loss[0]), <=, c.ref_eval->loss_err[0]);
  free_groups (gc);
  kern_model_free (m);
  mlp_case_clear (&c);
}

/* --- deliberately wrong CPU results ---------------------------------------- */

/* gemm that reads a square A^T operand as A: the MLP's dW of its 32-wide
 * last hidden layer over a group of 32 rows (m = k = lda = 32). */
/* The CPU backend's own table while bug_grads runs (the backend's priv is
 * its own state, which its ops read). */
static const KernBackendOps *bug_cpu_ops;

static void
bug_gemm_transpose (KernBackend *be, gboolean ta, gboolean tb, int m, int n,
                    int k, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc)
{
  if (ta && m == k && lda == m)
    ta = FALSE;
  bug_cpu_ops->gemm (be, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The MLP's gradients on a CPU backend whose gemm is bug_gemm_transpose. */
static void
bug_grads (const MlpCase *c, float **grads, double *losses)
{
  KernBackend *be = kern_backend_cpu_new ();
  KernBackendOps *ops = g_new (KernBackendOps, 1);
  *ops = *be->ops;
  bug_cpu_ops = be->ops;
  ops->gemm = bug_gemm_transpose;
  be->ops = ops;
  KernModel *m = mlp_case_model (be);
  mlp_case_run (c, m, c->params, grads, losses);
  kern_model_free (m);
  be->ops = bug_cpu_ops;
  kern_backend_free (be);
  g_free (ops);
}

/* The comparison of /cuda/model/mlp, fed the CPU reference and a CPU result
 * made wrong on purpose, must fail, and by at least TEST_BUG_MARGIN times
 * the bound somewhere: one transposed operand; one hidden-layer weight read
 * from its neighbour (an index off by one); the gradient of another group
 * (a row slice off by one group).  What it cannot catch: a loss of
 * precision the size of TF32's (2^-11 per operand) stays within the
 * worst-case bound of the 785-term first-layer products and of the
 * errors they carry forward, about 1e-3 of each first-layer output. */
static void
test_bound_catches_bugs (void)
{
  MlpCase c;
  mlp_case_init (&c);
  KernModel *m = mlp_case_model (NULL);
  float *gc[MLP_GROUPS];
  double lc[MLP_GROUPS];
  mlp_case_run (&c, m, c.params, gc, lc);
  double worst;

  float *gt[MLP_GROUPS];
  double lt[MLP_GROUPS];
  bug_grads (&c, gt, lt);
  g_assert_cmpuint (grads_beyond (c.ref, "transposed operand", gc, gt, &worst), >, 0);
  g_assert_cmpfloat (worst, >=, TEST_BUG_MARGIN);
  free_groups (gt);

  /* W_2[5][3] read from W_2[5][4] */
  g_autofree float *moved = g_memdup2 (c.params, c.n_params * sizeof (float));
  gsize at = (gsize) mlp_width[0] * mlp_width[1] + mlp_width[1] + 5 * mlp_width[2] + 3;
  moved[at] = moved[at + 1];
  g_assert_cmpfloat (moved[at], !=, c.params[at]);
  float *gw[MLP_GROUPS];
  double lw[MLP_GROUPS];
  mlp_case_run (&c, m, moved, gw, lw);
  g_assert_cmpuint (grads_beyond (c.ref, "one weight misread", gc, gw, &worst), >, 0);
  g_assert_cmpfloat (worst, >=, TEST_BUG_MARGIN);
  free_groups (gw);

  float *rotated[MLP_GROUPS] = { gc[1], gc[2], gc[0] };
  g_assert_cmpuint (grads_beyond (c.ref, "another group", gc, rotated, &worst), >, 0);
  g_assert_cmpfloat (worst, >=, TEST_BUG_MARGIN);

  free_groups (gc);
  kern_model_free (m);
  mlp_case_clear (&c);
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
  /* the bounds of the two cases above, checked on the CPU alone */
  g_test_add_func ("/cuda/model/bound/cpu-within", test_bound_cpu_within);
  g_test_add_func ("/cuda/model/bound/chain-cpu-within", test_bound_chain_cpu_within);
  g_test_add_func ("/cuda/model/bound/catches-bugs", test_bound_catches_bugs);
  return g_test_run ();
}
