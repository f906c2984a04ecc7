/*
 * cpu.c — the CPU backend: every KernBackendOps operation on host memory.
 *
 * This is the reference implementation of backend.h.  The CUDA backend is
 * tested element by element against it, so each operation below follows the
 * formula written in backend.h literally, in the same floating-point types:
 * float throughout, except where backend.h asks for double (the row sums of
 * softmax_xent and of mse).  Matrix products go through kern_gemm_fixed
 * (gemm.c: one summation order, the same bits on every CPU) or, in the
 * backend kern_backend_cpu_new_full (FALSE) gives, through OpenBLAS's
 * cblas_sgemm (faster; its last bits depend on the kernel OpenBLAS picks
 * for the CPU), which blas.c opens when the first such backend is made;
 * all other operations are plain loops the compiler
 * vectorises, with exp, log and pow from base/fmath.c.
 *
 * Buffers are ordinary g_malloc'd host memory, so upload and download are
 * memcpy and a caller that knows it holds the CPU backend may pass host
 * pointers to the operations directly (the models in mlp.c do).  The
 * backend has no state: operations complete before they return, which
 * trivially satisfies "issue order".
 *
 * The FLOP counts docs/kernels.md gives for each operation are those of the
 * loops here, annotated per line with the counting rule of that document
 * (add, subtract, multiply, divide, exp, log, sqrt, pow: 1 each; compares,
 * copies and conversions: 0; a sum of r terms: r - 1 adds).
 */
#include "config.h"

#include "kernels/backend.h"
#include "kernels/blas.h"
#include "kernels/kernels.h"
#include "base/fmath.h"

#include <gio/gio.h>
#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE__)
#include <immintrin.h>
#endif

static float *
cpu_alloc (KernBackend *be G_GNUC_UNUSED, gsize n)
{
  return g_new (float, n);
}

static int *
cpu_alloc_int (KernBackend *be G_GNUC_UNUSED, gsize n)
{
  return g_new (int, n);
}

static void
cpu_free (KernBackend *be G_GNUC_UNUSED, void *buf)
{
  g_free (buf);
}

/* upload and download are the same copy; a copy onto itself (a caller
 * passing a host pointer that is already the buffer) is skipped, since
 * memcpy of overlapping ranges is undefined. */
static void
cpu_copy (float *dst, const float *src, gsize n)
{
  if (n > 0 && dst != src)
    memcpy (dst, src, n * sizeof (float));
}

static void
cpu_copy_int (int *dst, const int *src, gsize n)
{
  if (n > 0 && dst != src)
    memcpy (dst, src, n * sizeof (int));
}

static void
cpu_upload (KernBackend *be G_GNUC_UNUSED, float *dst, const float *host, gsize n)
{
  cpu_copy (dst, host, n);
}

static void
cpu_upload_int (KernBackend *be G_GNUC_UNUSED, int *dst, const int *host, gsize n)
{
  cpu_copy_int (dst, host, n);
}

static void
cpu_download (KernBackend *be G_GNUC_UNUSED, float *host, const float *src, gsize n)
{
  cpu_copy (host, src, n);
}

static void
cpu_download_int (KernBackend *be G_GNUC_UNUSED, int *host, const int *src, gsize n)
{
  cpu_copy_int (host, src, n);
}

/* C (m, n) = alpha op(A) op(B) + beta C: 2 m n k FLOPs under the rule of
 * docs/kernels.md (k products and k accumulations per output element).
 * k = 0 leaves beta C, done here because BLAS rejects the zero strides such
 * a call may carry. */
static void
cpu_gemm (KernBackend *be, gboolean trans_a, gboolean trans_b, int m, int n,
          int k, float alpha, const float *A, int lda, const float *B, int ldb,
          float beta, float *C, int ldc)
{
  g_return_if_fail (m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    {
      for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
          C[(gsize) i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(gsize) i * ldc + j];
      return;
    }
  if (be->priv == NULL)
    {
      kern_gemm_fixed (trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
  const KernBlas *blas = be->priv;
  blas->sgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

/* Z (n, k): every row a copy of bias (k).  0 FLOPs. */
static void
cpu_fill_rows (KernBackend *be G_GNUC_UNUSED, float *Z, const float *bias, int n, int k)
{
  for (int i = 0; i < n; i++)
    memcpy (Z + (gsize) i * k, bias, (gsize) k * sizeof (float));
}

/* out (k) = column sums of dZ (n, k), accumulated in float row by row:
 * (n - 1) k FLOPs; n = 0 gives zeros. */
static void
cpu_col_sum (KernBackend *be G_GNUC_UNUSED, const float *dZ, int n, int k, float *out)
{
  if (n <= 0)
    {
      memset (out, 0, (gsize) k * sizeof (float));
      return;
    }
  memcpy (out, dZ, (gsize) k * sizeof (float));
  for (int i = 1; i < n; i++)
    {
      const float *row = dZ + (gsize) i * k;
      for (int j = 0; j < k; j++)
        out[j] += row[j];                      /* (n - 1) k */
    }
}

/* A = max(A, 0) element-wise: compares only, 0 FLOPs.  A NaN is left as
 * it is (the comparison is false), so a diverged model stays visibly NaN. */
static void
cpu_relu (KernBackend *be G_GNUC_UNUSED, float *A, gsize len)
{
  /* written as a select, not a conditional store, so that it vectorises */
  for (gsize i = 0; i < len; i++)
    A[i] = A[i] < 0.0f ? 0.0f : A[i];
}

/* dA = A > 0 ? dA : 0 element-wise, and a subnormal dA (|dA| < FLT_MIN,
 * 2^-126) written as 0 (a NaN stays): 0 FLOPs.  The flush is a comparison,
 * the same on every CPU; it keeps subnormals out of the products that read
 * dA, where each would cost the FMA units a microcode assist. */
static void
cpu_relu_backward (KernBackend *be G_GNUC_UNUSED, float *dA, const float *A, gsize len)
{
  for (gsize i = 0; i < len; i++)
    dA[i] = A[i] > 0.0f && !(fabsf (dA[i]) < FLT_MIN) ? dA[i] : 0.0f;
}

/* First index of the largest element of z (k). */
static int
cpu_argmax (const float *z, int k)
{
  int arg = 0;
  for (int j = 1; j < k; j++)
    if (z[j] > z[arg])
      arg = j;
  return arg;
}

/* Softmax cross-entropy of each row of Z (n, k), labels y (n) in [0, k).
 * Per row, with e_j = expf(Z_j - max) in float and s their sum in double:
 *   forward  k (subtract max) + k (exp) + (k - 1) (sum) + 2 (log, subtract)
 *            = 3k + 1 FLOPs;
 *   gradient (scale != 0) 1 (r = scale / s, in double) + k (e_j r)
 *            + 1 (subtract scale at the label) = k + 2 FLOPs.
 * The row loss is computed the same way whether or not the gradient is
 * asked for, so both calls give bit-identical losses. */
static void
cpu_softmax_xent (KernBackend *be G_GNUC_UNUSED, float *Z, const int *y, int n, int k,
                  float scale, float *loss, int *pred)
{
  for (int i = 0; i < n; i++)
    {
      float *z = Z + (gsize) i * k;
      int yi = y[i];
      g_return_if_fail (yi >= 0 && yi < k);

      int arg = cpu_argmax (z, k);
      float zmax = z[arg];
      if (pred != NULL)
        pred[i] = arg;

      float zy = 0.0f;
      double s = 0.0;
      for (int j = 0; j < k; j++)
        {
          float t = z[j] - zmax;               /* k */
          if (j == yi)
            zy = t;
          float e = base_expf (t);             /* k */
          s = j == 0 ? e : s + e;              /* k - 1 */
          if (scale != 0.0f)
            z[j] = e;
        }
      if (loss != NULL)
        loss[i] = (float) (base_log (s) - zy); /* 2 */

      if (scale != 0.0f)
        {
          float r = (float) (scale / s);       /* 1 */
          for (int j = 0; j < k; j++)
            {
              float g = z[j] * r;              /* k */
              z[j] = g < FLT_MIN ? 0.0f : g;   /* subnormal: 0 (a NaN stays) */
            }
          z[yi] -= scale;                      /* 1 */
        }
    }
}

/* Half squared error of each row of Z (n, k) against onehot(y_i).  Per
 * row, with t_j = Z_j - onehot_j in float and the sum of squares in double:
 *   forward  k (subtract) + k (square) + (k - 1) (sum) + 1 (halve) = 3k;
 *   gradient (scale != 0) k (scale t_j). */
static void
cpu_mse (KernBackend *be G_GNUC_UNUSED, float *Z, const int *y, int n, int k, float scale,
         float *loss, int *pred)
{
  for (int i = 0; i < n; i++)
    {
      float *z = Z + (gsize) i * k;
      int yi = y[i];
      g_return_if_fail (yi >= 0 && yi < k);

      if (pred != NULL)
        pred[i] = cpu_argmax (z, k);

      double ss = 0.0;
      for (int j = 0; j < k; j++)
        {
          float t = z[j] - (j == yi ? 1.0f : 0.0f);   /* k */
          float sq = t * t;                           /* k */
          ss = j == 0 ? sq : ss + sq;                 /* k - 1 */
          if (scale != 0.0f)
            z[j] = scale * t;                         /* k (gradient) */
        }
      if (loss != NULL)
        loss[i] = (float) (0.5 * ss);                 /* 1 */
    }
}

/* The optimizer loops below run once per parameter per step: for a
 * worker that steps its own model after a small batch they cost as much as
 * the gradient.  Each element's operations are IEEE single-precision
 * operations in a fixed order, so computing 4, 8 or 16 elements at once
 * gives the scalar loop's bits, provided no multiply is fused into an add
 * (fp-contract=off: a fused multiply-add rounds once, a multiply then an
 * add twice) and sqrt is the correctly rounded instruction (no-math-errno
 * only drops the errno write for a negative input, which v >= 0 never is).
 * Compiled for AVX-512, AVX2 and the baseline; the loader picks by CPU.
 * The pointers are restrict: a parameter vector, its state and its
 * gradient are distinct buffers (kern_optimizer_step's contract).
 * tests/test-kernels.c /kernels/cpu/optimizer-bits checks the clone the
 * CPU picks against a plain scalar loop, to the bit. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_OPT_LOOP                                                          \
  __attribute__ ((target_clones ("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                  optimize ("O2", "tree-vectorize", "fp-contract=off", "no-math-errno", \
                            "vect-cost-model=dynamic")))
#else
#define CPU_OPT_LOOP
#endif

/* p -= lr g: 2 FLOPs per parameter. */
CPU_OPT_LOOP static void
cpu_sgd (KernBackend *be G_GNUC_UNUSED, float *restrict p, const float *restrict g, gsize len,
         float lr)
{
  for (gsize i = 0; i < len; i++)
    p[i] -= lr * g[i];
}

/* v = mu v + g; p -= lr v: 4 FLOPs per parameter. */
CPU_OPT_LOOP static void
cpu_momentum (KernBackend *be G_GNUC_UNUSED, float *restrict p, float *restrict v,
              const float *restrict g, gsize len, float lr, float mu)
{
  for (gsize i = 0; i < len; i++)
    {
      v[i] = mu * v[i] + g[i];                 /* 2 */
      p[i] -= lr * v[i];                       /* 2 */
    }
}

/* Square roots of x[0..n), n a multiple of 4, each correctly rounded (the
 * value sqrtf gives): x86-64's packed sqrt, since the compiler vectorises
 * no call of sqrtf while sqrtf may set errno. */
static void
sqrt_block (float *x, int n)
{
#if defined(__x86_64__) && defined(__SSE__)
  for (int i = 0; i < n; i += 4)
    _mm_storeu_ps (x + i, _mm_sqrt_ps (_mm_loadu_ps (x + i)));
#else
  for (int i = 0; i < n; i++)
    x[i] = sqrtf (x[i]);
#endif
}

/* Elements per block of adam_loop (a multiple of 4). */
enum { ADAM_BLOCK = 512 };

/* Adam at step t >= 1.  The scalars 1 - beta1, 1 - beta2, c1 = 1 - beta1^t
 * and c2 = 1 - beta2^t are formed once per call (pow in double, then
 * rounded to float: 6 FLOPs per call); then 14 FLOPs per parameter.  In
 * blocks: the moments and mhat, vhat (vectorised), the square roots, then
 * the parameters (vectorised); each element's operations are the plain
 * formula's, in its order. */
CPU_OPT_LOOP static void
adam_loop (float *restrict p, float *restrict m, float *restrict v, const float *restrict g,
           gsize len, float lr, float beta1, float beta2, float eps, float omb1, float omb2,
           float c1, float c2)
{
  float mhat[ADAM_BLOCK], root[ADAM_BLOCK];
  for (gsize lo = 0; lo < len; lo += ADAM_BLOCK)
    {
      int n = (int) MIN ((gsize) ADAM_BLOCK, len - lo);
      for (int i = 0; i < n; i++)
        {
          float gi = g[lo + i];
          m[lo + i] = beta1 * m[lo + i] + omb1 * gi;       /* 3 */
          v[lo + i] = beta2 * v[lo + i] + omb2 * (gi * gi);/* 4 */
          mhat[i] = m[lo + i] / c1;                        /* 1 */
          root[i] = v[lo + i] / c2;                        /* 1 (vhat) */
        }
      for (int i = n; i < ((n + 3) & ~3); i++)
        root[i] = 0.0f;
      sqrt_block (root, (n + 3) & ~3);                     /* 1 */
      for (int i = 0; i < n; i++)
        p[lo + i] -= lr * mhat[i] / (root[i] + eps);       /* 4 */
    }
}

static void
cpu_adam (KernBackend *be G_GNUC_UNUSED, float *p, float *m, float *v, const float *g,
          gsize len, float lr, float beta1, float beta2, float eps, gint64 t)
{
  g_return_if_fail (t >= 1);
  float omb1 = 1.0f - beta1;                               /* 1 */
  float omb2 = 1.0f - beta2;                               /* 1 */
  float c1 = (float) (1.0 - base_pow (beta1, (double) t)); /* 2 */
  float c2 = (float) (1.0 - base_pow (beta2, (double) t)); /* 2 */
  adam_loop (p, m, v, g, len, lr, beta1, beta2, eps, omb1, omb2, c1, c2);
}

static void
cpu_destroy (KernBackend *be)
{
  g_free (be);
}

static const KernBackendOps cpu_ops = {
  .name = "cpu",
  .alloc = cpu_alloc,
  .alloc_int = cpu_alloc_int,
  .free = cpu_free,
  .upload = cpu_upload,
  .upload_int = cpu_upload_int,
  .download = cpu_download,
  .download_int = cpu_download_int,
  .gemm = cpu_gemm,
  .fill_rows = cpu_fill_rows,
  .col_sum = cpu_col_sum,
  .relu = cpu_relu,
  .relu_backward = cpu_relu_backward,
  .softmax_xent = cpu_softmax_xent,
  .mse = cpu_mse,
  .sgd = cpu_sgd,
  .momentum = cpu_momentum,
  .adam = cpu_adam,
  .destroy = cpu_destroy,
};

/* A new CPU backend on `blas` (its products through blas->sgemm) or, for
 * NULL, on kern_gemm_fixed.  priv holds that table. */
static KernBackend *
cpu_backend_new (const KernBlas *blas)
{
  KernBackend *be = g_new0 (KernBackend, 1);
  be->ops = &cpu_ops;
  be->priv = (gpointer) blas;
  return be;
}

/* A new CPU backend: reproducible (every product by kern_gemm_fixed) or
 * not (OpenBLAS, opened by the first such call; a caller that must survive
 * its absence goes through kern_backend_new, which reports it, since this
 * aborts the process then).  It holds no resources beyond its own struct
 * and may be shared by any number of models used from one thread.  Free
 * with kern_backend_free(). */
KernBackend *
kern_backend_cpu_new_full (gboolean reproducible)
{
  if (reproducible)
    return cpu_backend_new (NULL);
  g_autoptr (GError) error = NULL;
  const KernBlas *blas = kern_blas_get (&error);
  if (blas == NULL)
    g_error ("%s", error->message);
  return cpu_backend_new (blas);
}

/* The reproducible CPU backend: kern_backend_cpu_new_full (TRUE). */
KernBackend *
kern_backend_cpu_new (void)
{
  return kern_backend_cpu_new_full (TRUE);
}

/* "OpenBLAS <version> <core>", as far as this OpenBLAS says; opens it.
 * Where it cannot be opened, "OpenBLAS (not loadable: <why>)". */
char *
kern_openblas_describe (void)
{
  g_autoptr (GError) error = NULL;
  const KernBlas *blas = kern_blas_get (&error);
  if (blas == NULL)
    return g_strdup_printf ("OpenBLAS (not loadable: %s)", error->message);
  g_autofree char *version = NULL;
  if (blas->get_config != NULL)
    {
      /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64":
       * its second word is the version */
      g_auto (GStrv) words = g_strsplit (blas->get_config (), " ", 3);
      if (words[0] && words[1])
        version = g_strdup (words[1]);
    }
  const char *core = blas->get_corename != NULL ? blas->get_corename () : "unknown core";
  return g_strdup_printf ("OpenBLAS%s%s %s", version ? " " : "", version ? version : "", core);
}

/* The fixed-order backend never fails; the other one fails when OpenBLAS
 * cannot be opened, with blas.c's one-line reason. */
static KernBackend *
cpu_create (gboolean reproducible, GError **error)
{
  if (reproducible)
    return cpu_backend_new (NULL);
  const KernBlas *blas = kern_blas_get (error);
  return blas != NULL ? cpu_backend_new (blas) : NULL;
}

/* "fixed-order", or the OpenBLAS that does the products. */
static char *
cpu_kernel_name (gboolean reproducible)
{
  return reproducible ? g_strdup ("fixed-order") : kern_openblas_describe ();
}

const KernBackendEntry kern_backend_cpu = {
  .name = "cpu",
  .description = "real math on the CPU (the reference): fixed-order products, or OpenBLAS with "
                 "reproducible = false",
  .create = cpu_create,
  .can_reproduce = TRUE,
  .kernel_name = cpu_kernel_name,
};
