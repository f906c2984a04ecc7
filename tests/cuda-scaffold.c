/*
 * cuda-scaffold.c — TEMPORARY stand-ins so that tests/test-cuda links on the
 * kcuda branch before the real CPU backend exists.  Drop this file (and its
 * entry in tests_test_cuda_SOURCES) when merging with the branch that adds
 * kernels/cpu.c, kernels/backend.c and the kern_backend_cuda_new stub in
 * kernels/cuda_none.c; those are the real versions.
 *
 * What it provides: kern_backend_cpu_new (host memory, cblas_sgemm and
 * plain loops, each written straight from the formula in backend.h),
 * kern_backend_free, and — in a build without CUDA only —
 * kern_backend_cuda_new returning NULL with an error.  It is compiled into
 * the test program alone, never into libdtsim.a.
 */
#include "config.h"

#include "kernels/backend.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

static float *
scaffold_alloc (KernBackend *be, gsize n)
{
  return g_new (float, n);
}

static int *
scaffold_alloc_int (KernBackend *be, gsize n)
{
  return g_new (int, n);
}

static void
scaffold_free (KernBackend *be, void *buf)
{
  g_free (buf);
}

static void
scaffold_upload (KernBackend *be, float *dst, const float *host, gsize n)
{
  if (n > 0)
    memcpy (dst, host, n * sizeof (float));
}

static void
scaffold_upload_int (KernBackend *be, int *dst, const int *host, gsize n)
{
  if (n > 0)
    memcpy (dst, host, n * sizeof (int));
}

static void
scaffold_download (KernBackend *be, float *host, const float *src, gsize n)
{
  if (n > 0)
    memcpy (host, src, n * sizeof (float));
}

static void
scaffold_download_int (KernBackend *be, int *host, const int *src, gsize n)
{
  if (n > 0)
    memcpy (host, src, n * sizeof (int));
}

static void
scaffold_gemm (KernBackend *be, gboolean trans_a, gboolean trans_b, int m,
               int n, int k, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc)
{
  if (m == 0 || n == 0)
    return;
  cblas_sgemm (CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
               trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda,
               B, ldb, beta, C, ldc);
}

static void
scaffold_fill_rows (KernBackend *be, float *Z, const float *bias, int n, int k)
{
  for (int i = 0; i < n; i++)
    memcpy (Z + (gsize) i * k, bias, (gsize) k * sizeof (float));
}

static void
scaffold_col_sum (KernBackend *be, const float *dZ, int n, int k, float *out)
{
  for (int j = 0; j < k; j++)
    out[j] = 0.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < k; j++)
      out[j] += dZ[(gsize) i * k + j];
}

static void
scaffold_relu (KernBackend *be, float *A, gsize len)
{
  for (gsize i = 0; i < len; i++)
    A[i] = A[i] > 0.0f ? A[i] : 0.0f;
}

static void
scaffold_relu_backward (KernBackend *be, float *dA, const float *A, gsize len)
{
  for (gsize i = 0; i < len; i++)
    dA[i] = A[i] > 0.0f ? dA[i] : 0.0f;
}

static int
scaffold_argmax (const float *z, int k)
{
  int arg = 0;
  for (int j = 1; j < k; j++)
    if (z[j] > z[arg])
      arg = j;
  return arg;
}

static void
scaffold_softmax_xent (KernBackend *be, float *Z, const int *y, int n, int k,
                       float scale, float *loss, int *pred)
{
  for (int i = 0; i < n; i++)
    {
      float *z = Z + (gsize) i * k;
      int arg = scaffold_argmax (z, k);
      float zmax = z[arg];
      double s = 0.0;
      for (int j = 0; j < k; j++)
        s += expf (z[j] - zmax);
      if (loss != NULL)
        loss[i] = (float) (log (s) - (double) (z[y[i]] - zmax));
      if (pred != NULL)
        pred[i] = arg;
      if (scale != 0.0f)
        {
          float r = (float) (scale / s);
          for (int j = 0; j < k; j++)
            z[j] = expf (z[j] - zmax) * r;
          z[y[i]] -= scale;
        }
    }
}

static void
scaffold_mse (KernBackend *be, float *Z, const int *y, int n, int k,
              float scale, float *loss, int *pred)
{
  for (int i = 0; i < n; i++)
    {
      float *z = Z + (gsize) i * k;
      double s = 0.0;
      for (int j = 0; j < k; j++)
        {
          double d = (double) (j == y[i] ? z[j] - 1.0f : z[j]);
          s += d * d;
        }
      if (loss != NULL)
        loss[i] = (float) (0.5 * s);
      if (pred != NULL)
        pred[i] = scaffold_argmax (z, k);
      if (scale != 0.0f)
        for (int j = 0; j < k; j++)
          z[j] = scale * (j == y[i] ? z[j] - 1.0f : z[j]);
    }
}

static void
scaffold_sgd (KernBackend *be, float *p, const float *g, gsize len, float lr)
{
  for (gsize i = 0; i < len; i++)
    p[i] -= lr * g[i];
}

static void
scaffold_momentum (KernBackend *be, float *p, float *v, const float *g,
                   gsize len, float lr, float mu)
{
  for (gsize i = 0; i < len; i++)
    {
      v[i] = mu * v[i] + g[i];
      p[i] -= lr * v[i];
    }
}

static void
scaffold_adam (KernBackend *be, float *p, float *m, float *v, const float *g,
               gsize len, float lr, float beta1, float beta2, float eps,
               gint64 t)
{
  float c1 = (float) (1.0 - pow (beta1, (double) t));
  float c2 = (float) (1.0 - pow (beta2, (double) t));
  for (gsize i = 0; i < len; i++)
    {
      m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
      p[i] -= lr * (m[i] / c1) / (sqrtf (v[i] / c2) + eps);
    }
}

static void
scaffold_destroy (KernBackend *be)
{
  g_free (be);
}

static const KernBackendOps scaffold_cpu_ops = {
  .name = "cpu",
  .alloc = scaffold_alloc,
  .alloc_int = scaffold_alloc_int,
  .free = scaffold_free,
  .upload = scaffold_upload,
  .upload_int = scaffold_upload_int,
  .download = scaffold_download,
  .download_int = scaffold_download_int,
  .gemm = scaffold_gemm,
  .fill_rows = scaffold_fill_rows,
  .col_sum = scaffold_col_sum,
  .relu = scaffold_relu,
  .relu_backward = scaffold_relu_backward,
  .softmax_xent = scaffold_softmax_xent,
  .mse = scaffold_mse,
  .sgd = scaffold_sgd,
  .momentum = scaffold_momentum,
  .adam = scaffold_adam,
  .destroy = scaffold_destroy,
};

/* Temporary: the real one is in kernels/cpu.c. */
KernBackend *
kern_backend_cpu_new (void)
{
  KernBackend *be = g_new0 (KernBackend, 1);
  be->ops = &scaffold_cpu_ops;
  return be;
}

/* Temporary: the real one is in kernels/backend.c.  `destroy` frees the
 * whole backend, as kernels/cuda_backend.cu's does. */
void
kern_backend_free (KernBackend *be)
{
  if (be != NULL)
    be->ops->destroy (be);
}

#ifndef HAVE_CUDA
/* Temporary: the real one is in kernels/cuda_none.c. */
KernBackend *
kern_backend_cuda_new (GError **error)
{
  g_set_error_literal (error, g_quark_from_static_string ("kern-cuda-error"),
                       0, "this build has no CUDA (configure found no nvcc "
                       "or cuBLAS; ./configure --with-cuda)");
  return NULL;
}
#endif
