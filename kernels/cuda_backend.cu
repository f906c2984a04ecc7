/*
 * cuda_backend.cu — the CUDA implementation of KernBackendOps (backend.h).
 *
 * Buffers are device memory on device 0.  Matrix products go to cuBLAS;
 * everything else is a small kernel written here, each following the
 * formula in backend.h (the CPU backend, cpu.c, is the reference and
 * tests/test-cuda.c compares the two element by element):
 *
 *   gemm            cublasSgemm with the operands swapped: a row-major
 *                   (r, c) matrix with row stride ld is, read column-major,
 *                   its transpose with leading dimension ld, so row-major
 *                   C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T,
 *                   i.e. cublasSgemm (op_b, op_a, n, m, k, B, A, C) with the
 *                   transpose flags passed through unchanged.  Math mode is
 *                   CUBLAS_DEFAULT_MATH: full FP32, never TF32.
 *   fill_rows,      one thread per element (grid-stride loops, so any
 *   relu,           length fits a bounded grid).
 *   relu_backward
 *   col_sum         blocks of 32 columns x 8 row lanes: each lane sums every
 *                   8th row of its column (coalesced across the 32 columns),
 *                   then the 8 partial sums are added in shared memory.
 *   softmax_xent,   one warp per row: lanes scan strided columns, the first
 *   mse             argmax and the row sum (double) are reduced by warp
 *                   shuffles, lane 0 writes loss and pred, then every lane
 *                   rewrites its columns when scale != 0.
 *   sgd, momentum,  one thread per parameter.  Products go through
 *   adam            __fmul_rn/__fadd_rn so that nvcc does not contract them
 *                   into FMAs: the update rounds exactly as the plain C
 *                   formula does, and long runs do not drift from the CPU.
 *
 * All work is issued on one stream owned by the backend (cuBLAS is bound to
 * it), so operations run in issue order.  `upload` returns once the host
 * buffer may be reused and `download` once the data have arrived; both
 * synchronize the stream.
 *
 * Errors: every CUDA and cuBLAS call goes through a checking macro carrying
 * __FILE__ and __LINE__.  While the backend is being created, a failure
 * returns NULL with a GError (domain "kern-cuda-error").  After creation
 * there is no error path in the ops table, so a failure — out of device
 * memory, a kernel fault, a lost device — aborts with g_error naming the
 * call, the CUDA message and a hint, as g_malloc does when the host runs
 * out of memory.  Kernel faults are asynchronous: they surface at the next
 * checked call, usually the next download; run under compute-sanitizer to
 * find the kernel.
 *
 * The file is part of the CUDA plugin, dtsim-cuda.so (cuda_plugin.h): it is
 * compiled with hidden visibility, and only kern_cuda_plugin_entry, at the
 * end, is exported.
 *
 * This file includes glib.h through backend.h; nvcc's front end does not
 * know the gnu_printf format attribute GLib uses (diagnostic 1217), which
 * is harmless and silenced below.  configure passes GLib's -I flags only
 * (GLIB_NVCC_CFLAGS), because nvcc rejects -pthread.
 */
#pragma nv_diag_suppress 1217

#include "kernels/backend.h"
#include "kernels/cuda_plugin.h"

#include <gmodule.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cmath>

/* Threads per block of the element-wise kernels. */
#define KERN_CUDA_BLOCK 256
/* Upper bound on blocks of a grid-stride launch (enough to fill any GPU). */
#define KERN_CUDA_MAX_BLOCKS 65536
/* Rows (warps) per block of the row kernels (softmax_xent, mse). */
#define KERN_CUDA_ROWS_PER_BLOCK 8
/* col_sum block: 32 columns x 8 row lanes. */
#define KERN_CUDA_COLS 32
#define KERN_CUDA_ROW_LANES 8
#define KERN_CUDA_FULL_MASK 0xffffffffu

/* Error codes of the "kern-cuda-error" domain (creation only). */
enum
{
  KERN_CUDA_ERROR_NO_DEVICE, /* kern_cuda_plugin_device_count () == 0 */
  KERN_CUDA_ERROR_FAILED     /* a CUDA or cuBLAS call failed */
};

static GQuark
kern_cuda_error_quark (void)
{
  return g_quark_from_static_string ("kern-cuda-error");
}

typedef struct
{
  int device;            /* CUDA ordinal, 0 */
  cudaStream_t stream;   /* every operation is issued here */
  cublasHandle_t blas;   /* bound to `stream` */
} KernCudaPriv;

/* --- error checking ------------------------------------------------------- */

/* A hint on what to do about common failures, or "" when there is none. */
static const char *
kern_cuda_hint (cudaError_t err)
{
  switch (err)
    {
    case cudaErrorMemoryAllocation:
      return " (hint: the device is out of memory; use smaller batches or "
             "a GPU with more memory)";
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
      return " (hint: no usable GPU; check nvidia-smi and "
             "CUDA_VISIBLE_DEVICES)";
    case cudaErrorInsufficientDriver:
      return " (hint: the NVIDIA driver is older than the CUDA runtime "
             "this was built with; update the driver)";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return " (hint: rebuild for this GPU, e.g. ../configure --with-cuda "
             "and NVCCFLAGS with -arch=native)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return " (hint: a kernel faulted; run under compute-sanitizer to "
             "find which)";
    default:
      return "";
    }
}

/* Aborts with the failing call and its position when err is not success. */
static void
kern_cuda_check (cudaError_t err, const char *call, const char *file, int line)
{
  if (G_LIKELY (err == cudaSuccess))
    return;
  g_error ("%s:%d: %s failed: %s (%s)%s", file, line, call,
           cudaGetErrorString (err), cudaGetErrorName (err),
           kern_cuda_hint (err));
}

static void
kern_cublas_check (cublasStatus_t st, const char *call, const char *file,
                   int line)
{
  if (G_LIKELY (st == CUBLAS_STATUS_SUCCESS))
    return;
  g_error ("%s:%d: %s failed: %s%s", file, line, call,
           cublasGetStatusString (st),
           st == CUBLAS_STATUS_INVALID_VALUE
               ? " (hint: check the shapes and row strides passed to gemm)"
               : "");
}

/* Creation-time variants: record a GError and return FALSE. */
static gboolean
kern_cuda_ok (cudaError_t err, const char *call, const char *file, int line,
              GError **error)
{
  if (err == cudaSuccess)
    return TRUE;
  (void) cudaGetLastError (); /* do not let it resurface later */
  g_set_error (error, kern_cuda_error_quark (), KERN_CUDA_ERROR_FAILED,
               "CUDA backend: %s:%d: %s failed: %s (%s)%s", file, line, call,
               cudaGetErrorString (err), cudaGetErrorName (err),
               kern_cuda_hint (err));
  return FALSE;
}

static gboolean
kern_cublas_ok (cublasStatus_t st, const char *call, const char *file,
                int line, GError **error)
{
  if (st == CUBLAS_STATUS_SUCCESS)
    return TRUE;
  g_set_error (error, kern_cuda_error_quark (), KERN_CUDA_ERROR_FAILED,
               "CUDA backend: %s:%d: %s failed: %s", file, line, call,
               cublasGetStatusString (st));
  return FALSE;
}

#define KERN_CUDA_CHECK(call) kern_cuda_check ((call), #call, __FILE__, __LINE__)
#define KERN_CUBLAS_CHECK(call) \
  kern_cublas_check ((call), #call, __FILE__, __LINE__)
/* After a kernel launch: catches bad launch configurations now (faults
 * inside the kernel surface at a later synchronizing call). */
#define KERN_CUDA_CHECK_LAUNCH(name) \
  kern_cuda_check (cudaGetLastError (), "launch of " name, __FILE__, __LINE__)

static KernCudaPriv *
kern_cuda_priv (KernBackend *be)
{
  return (KernCudaPriv *) be->priv;
}

/* Blocks for a grid-stride launch over len elements (at least 1). */
static unsigned
kern_cuda_blocks (gsize len)
{
  gsize blocks = (len + KERN_CUDA_BLOCK - 1) / KERN_CUDA_BLOCK;
  return (unsigned) CLAMP (blocks, (gsize) 1, (gsize) KERN_CUDA_MAX_BLOCKS);
}

/* --- memory --------------------------------------------------------------- */

static void *
kern_cuda_alloc_bytes (KernBackend *be, gsize n, gsize elem)
{
  if (n == 0)
    return NULL;
  if (n > G_MAXSIZE / elem)
    g_error ("CUDA backend: allocation of %" G_GSIZE_FORMAT
             " elements of %" G_GSIZE_FORMAT " bytes overflows",
             n, elem);
  void *p = NULL;
  KERN_CUDA_CHECK (cudaMalloc (&p, n * elem));
  return p;
}

static float *
kern_cuda_alloc (KernBackend *be, gsize n)
{
  return (float *) kern_cuda_alloc_bytes (be, n, sizeof (float));
}

static int *
kern_cuda_alloc_int (KernBackend *be, gsize n)
{
  return (int *) kern_cuda_alloc_bytes (be, n, sizeof (int));
}

/* cudaFree waits for work still using the buffer (it synchronizes). */
static void
kern_cuda_free (KernBackend *be, void *buf)
{
  if (buf != NULL)
    KERN_CUDA_CHECK (cudaFree (buf));
}

/* Host to device, in stream order; returns when `host` may be reused. */
static void
kern_cuda_copy_in (KernBackend *be, void *dst, const void *host, gsize bytes)
{
  if (bytes == 0)
    return;
  KernCudaPriv *p = kern_cuda_priv (be);
  KERN_CUDA_CHECK (cudaMemcpyAsync (dst, host, bytes, cudaMemcpyHostToDevice,
                                    p->stream));
  KERN_CUDA_CHECK (cudaStreamSynchronize (p->stream));
}

/* Device to host after all work issued before; returns with the data. */
static void
kern_cuda_copy_out (KernBackend *be, void *host, const void *src, gsize bytes)
{
  KernCudaPriv *p = kern_cuda_priv (be);
  if (bytes > 0)
    KERN_CUDA_CHECK (cudaMemcpyAsync (host, src, bytes,
                                      cudaMemcpyDeviceToHost, p->stream));
  /* Also with 0 bytes: a download is the point where earlier kernel faults
   * are reported. */
  KERN_CUDA_CHECK (cudaStreamSynchronize (p->stream));
}

static void
kern_cuda_upload (KernBackend *be, float *dst, const float *host, gsize n)
{
  kern_cuda_copy_in (be, dst, host, n * sizeof (float));
}

static void
kern_cuda_upload_int (KernBackend *be, int *dst, const int *host, gsize n)
{
  kern_cuda_copy_in (be, dst, host, n * sizeof (int));
}

static void
kern_cuda_download (KernBackend *be, float *host, const float *src, gsize n)
{
  kern_cuda_copy_out (be, host, src, n * sizeof (float));
}

static void
kern_cuda_download_int (KernBackend *be, int *host, const int *src, gsize n)
{
  kern_cuda_copy_out (be, host, src, n * sizeof (int));
}

/* --- gemm ----------------------------------------------------------------- */

/* C (m, n) = alpha op(A) op(B) + beta C, all row-major with row strides
 * lda, ldb, ldc.  A is stored (m, k), or (k, m) when trans_a; B is stored
 * (k, n), or (n, k) when trans_b.  See the file comment for the swap. */
static void
kern_cuda_gemm (KernBackend *be, gboolean trans_a, gboolean trans_b, int m,
                int n, int k, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
  g_return_if_fail (m >= 0 && n >= 0 && k >= 0);
  g_return_if_fail (lda >= MAX (1, trans_a ? m : k));
  g_return_if_fail (ldb >= MAX (1, trans_b ? k : n));
  g_return_if_fail (ldc >= MAX (1, n));
  if (m == 0 || n == 0)
    return;

  KernCudaPriv *p = kern_cuda_priv (be);
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  /* column-major C^T (n, m) = op(B)^T (n, k) op(A)^T (k, m) */
  KERN_CUBLAS_CHECK (cublasSgemm (p->blas, op_b, op_a, n, m, k, &alpha, B,
                                  ldb, A, lda, &beta, C, ldc));
}

/* --- element-wise kernels ------------------------------------------------- */

/* Z (n, k): Z[i][j] = bias[j]; total = n k. */
__global__ static void
kern_cuda_fill_rows_kernel (float *Z, const float *bias, gsize total, int k)
{
  for (gsize e = blockIdx.x * (gsize) blockDim.x + threadIdx.x; e < total;
       e += (gsize) gridDim.x * blockDim.x)
    Z[e] = bias[e % (gsize) k];
}

static void
kern_cuda_fill_rows (KernBackend *be, float *Z, const float *bias, int n,
                     int k)
{
  g_return_if_fail (n >= 0 && k >= 0);
  gsize total = (gsize) n * (gsize) k;
  if (total == 0)
    return;
  kern_cuda_fill_rows_kernel<<<kern_cuda_blocks (total), KERN_CUDA_BLOCK, 0,
                               kern_cuda_priv (be)->stream>>> (Z, bias, total,
                                                               k);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_fill_rows_kernel");
}

/* A (len): A[i] = max(A[i], 0), written as a comparison so that -0 and NaN
 * give +0 exactly as the C expression `a > 0 ? a : 0` does. */
__global__ static void
kern_cuda_relu_kernel (float *A, gsize len)
{
  for (gsize i = blockIdx.x * (gsize) blockDim.x + threadIdx.x; i < len;
       i += (gsize) gridDim.x * blockDim.x)
    {
      float a = A[i];
      A[i] = a > 0.0f ? a : 0.0f;
    }
}

static void
kern_cuda_relu (KernBackend *be, float *A, gsize len)
{
  if (len == 0)
    return;
  kern_cuda_relu_kernel<<<kern_cuda_blocks (len), KERN_CUDA_BLOCK, 0,
                          kern_cuda_priv (be)->stream>>> (A, len);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_relu_kernel");
}

/* dA, A (len), A the ReLU output: dA[i] = A[i] > 0 ? dA[i] : 0, a
 * subnormal dA[i] written as 0 (cpu.c's rule). */
__global__ static void
kern_cuda_relu_backward_kernel (float *dA, const float *A, gsize len)
{
  for (gsize i = blockIdx.x * (gsize) blockDim.x + threadIdx.x; i < len;
       i += (gsize) gridDim.x * blockDim.x)
    if (!(A[i] > 0.0f) || fabsf (dA[i]) < FLT_MIN)
      dA[i] = 0.0f;
}

static void
kern_cuda_relu_backward (KernBackend *be, float *dA, const float *A,
                         gsize len)
{
  if (len == 0)
    return;
  kern_cuda_relu_backward_kernel<<<kern_cuda_blocks (len), KERN_CUDA_BLOCK, 0,
                                   kern_cuda_priv (be)->stream>>> (dA, A, len);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_relu_backward_kernel");
}

/* --- col_sum -------------------------------------------------------------- */

/* dZ (n, k) -> out (k): out[j] = sum_i dZ[i][j].  Block (32, 8): thread
 * (x, y) sums rows y, y + 8, ... of column 32 blockIdx.x + x in float; the 8
 * partial sums of a column are then added in shared memory (y order). */
__global__ static void
kern_cuda_col_sum_kernel (const float *dZ, int n, int k, float *out)
{
  __shared__ float part[KERN_CUDA_ROW_LANES][KERN_CUDA_COLS];
  int col = blockIdx.x * KERN_CUDA_COLS + threadIdx.x;
  float s = 0.0f;
  if (col < k)
    for (int i = threadIdx.y; i < n; i += KERN_CUDA_ROW_LANES)
      s += dZ[(gsize) i * k + col];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads ();
  if (threadIdx.y == 0 && col < k)
    {
      float total = part[0][threadIdx.x];
      for (int r = 1; r < KERN_CUDA_ROW_LANES; r++)
        total += part[r][threadIdx.x];
      out[col] = total;
    }
}

static void
kern_cuda_col_sum (KernBackend *be, const float *dZ, int n, int k, float *out)
{
  g_return_if_fail (n >= 0 && k >= 0);
  if (k == 0)
    return;
  dim3 block (KERN_CUDA_COLS, KERN_CUDA_ROW_LANES);
  unsigned blocks = (unsigned) ((k + KERN_CUDA_COLS - 1) / KERN_CUDA_COLS);
  /* n == 0 still runs: the sums of no rows are 0. */
  kern_cuda_col_sum_kernel<<<blocks, block, 0, kern_cuda_priv (be)->stream>>> (
      dZ, n, k, out);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_col_sum_kernel");
}

/* --- row kernels: softmax_xent and mse ------------------------------------ */

/* First argmax of row z (k) over the warp: every lane returns the same
 * (*best_v, *best_j).  Each lane scans columns lane, lane + 32, ... keeping
 * the first strictly greater value, so its candidate is the first maximum of
 * its columns; merging keeps the larger value, and on equal values the
 * smaller column, hence the first argmax of the row as in a left-to-right
 * scan.  Lanes with no column hold (-inf, INT_MAX). */
__device__ static void
kern_cuda_warp_argmax (const float *z, int k, int lane, float *best_v,
                       int *best_j)
{
  float v = -INFINITY;
  int j_best = INT_MAX;
  for (int j = lane; j < k; j += warpSize)
    if (j_best == INT_MAX || z[j] > v)
      {
        v = z[j];
        j_best = j;
      }
  for (int off = warpSize / 2; off > 0; off /= 2)
    {
      float v2 = __shfl_xor_sync (KERN_CUDA_FULL_MASK, v, off);
      int j2 = __shfl_xor_sync (KERN_CUDA_FULL_MASK, j_best, off);
      if (j2 != INT_MAX
          && (j_best == INT_MAX || v2 > v || (v2 == v && j2 < j_best)))
        {
          v = v2;
          j_best = j2;
        }
    }
  *best_v = v;
  *best_j = j_best;
}

/* Sum of x over the warp, returned to every lane. */
__device__ static double
kern_cuda_warp_sum (double x)
{
  for (int off = warpSize / 2; off > 0; off /= 2)
    x += __shfl_xor_sync (KERN_CUDA_FULL_MASK, x, off);
  return x;
}

/* Z (n, k) logits, y (n), loss (n) or NULL, pred (n) or NULL; one warp per
 * row.  m = Z_i,argmax; s = sum_j (double) expf (Z_ij - m);
 * loss = log s - (Z_iy - m); if scale != 0, Z_ij = expf (Z_ij - m) (scale /
 * s) - scale [j == y].  A label outside [0, k) gives a NaN loss and a NaN
 * gradient row, so that it cannot pass unnoticed. */
__global__ static void
kern_cuda_softmax_xent_kernel (float *Z, const int *y, int n, int k,
                               float scale, float *loss, int *pred)
{
  int row = blockIdx.x * KERN_CUDA_ROWS_PER_BLOCK + threadIdx.x / warpSize;
  int lane = threadIdx.x % warpSize;
  if (row >= n) /* the whole warp leaves together */
    return;
  float *z = Z + (gsize) row * k;
  int yi = y[row];
  bool valid = yi >= 0 && yi < k;

  float zmax;
  int arg;
  kern_cuda_warp_argmax (z, k, lane, &zmax, &arg);

  double s = 0.0;
  for (int j = lane; j < k; j += warpSize)
    s += (double) expf (z[j] - zmax);
  s = kern_cuda_warp_sum (s);
  /* read before any lane overwrites the row */
  double zy = valid ? (double) (z[yi] - zmax) : NAN;

  if (lane == 0)
    {
      if (loss != NULL)
        loss[row] = (float) (log (s) - zy);
      if (pred != NULL)
        pred[row] = arg;
    }
  if (scale == 0.0f)
    return;
  __syncwarp ();
  float r = valid ? (float) ((double) scale / s) : NAN;
  for (int j = lane; j < k; j += warpSize)
    {
      float g = __fmul_rn (expf (z[j] - zmax), r);
      g = g < FLT_MIN ? 0.0f : g;  /* subnormal: 0, as cpu.c */
      z[j] = j == yi ? g - scale : g;
    }
}

static void
kern_cuda_softmax_xent (KernBackend *be, float *Z, const int *y, int n, int k,
                        float scale, float *loss, int *pred)
{
  g_return_if_fail (n >= 0 && k >= 1);
  if (n == 0)
    return;
  unsigned blocks
      = (unsigned) ((n + KERN_CUDA_ROWS_PER_BLOCK - 1) / KERN_CUDA_ROWS_PER_BLOCK);
  kern_cuda_softmax_xent_kernel<<<blocks, 32 * KERN_CUDA_ROWS_PER_BLOCK, 0,
                                  kern_cuda_priv (be)->stream>>> (
      Z, y, n, k, scale, loss, pred);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_softmax_xent_kernel");
}

/* Z (n, k), y (n), loss (n) or NULL, pred (n) or NULL; one warp per row.
 * d_ij = Z_ij - [j == y]; loss = 1/2 sum_j d_ij^2 (double); pred = first
 * argmax of Z_i; if scale != 0, Z_ij = scale d_ij.  A label outside [0, k)
 * gives a NaN loss and gradient row. */
__global__ static void
kern_cuda_mse_kernel (float *Z, const int *y, int n, int k, float scale,
                      float *loss, int *pred)
{
  int row = blockIdx.x * KERN_CUDA_ROWS_PER_BLOCK + threadIdx.x / warpSize;
  int lane = threadIdx.x % warpSize;
  if (row >= n)
    return;
  float *z = Z + (gsize) row * k;
  int yi = y[row];
  bool valid = yi >= 0 && yi < k;

  float zmax;
  int arg;
  kern_cuda_warp_argmax (z, k, lane, &zmax, &arg);

  double s = 0.0;
  for (int j = lane; j < k; j += warpSize)
    {
      double d = (double) (j == yi ? z[j] - 1.0f : z[j]);
      s += d * d;
    }
  s = kern_cuda_warp_sum (s);

  if (lane == 0)
    {
      if (loss != NULL)
        loss[row] = valid ? (float) (0.5 * s) : NAN;
      if (pred != NULL)
        pred[row] = arg;
    }
  if (scale == 0.0f)
    return;
  for (int j = lane; j < k; j += warpSize) /* each lane rewrites its own */
    z[j] = valid ? __fmul_rn (scale, j == yi ? z[j] - 1.0f : z[j]) : NAN;
}

static void
kern_cuda_mse (KernBackend *be, float *Z, const int *y, int n, int k,
               float scale, float *loss, int *pred)
{
  g_return_if_fail (n >= 0 && k >= 1);
  if (n == 0)
    return;
  unsigned blocks
      = (unsigned) ((n + KERN_CUDA_ROWS_PER_BLOCK - 1) / KERN_CUDA_ROWS_PER_BLOCK);
  kern_cuda_mse_kernel<<<blocks, 32 * KERN_CUDA_ROWS_PER_BLOCK, 0,
                         kern_cuda_priv (be)->stream>>> (Z, y, n, k, scale,
                                                         loss, pred);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_mse_kernel");
}

/* --- optimizers ----------------------------------------------------------- */

/* p, g (len): p -= lr g. */
__global__ static void
kern_cuda_sgd_kernel (float *p, const float *g, gsize len, float lr)
{
  for (gsize i = blockIdx.x * (gsize) blockDim.x + threadIdx.x; i < len;
       i += (gsize) gridDim.x * blockDim.x)
    p[i] = __fsub_rn (p[i], __fmul_rn (lr, g[i]));
}

static void
kern_cuda_sgd (KernBackend *be, float *p, const float *g, gsize len, float lr)
{
  if (len == 0)
    return;
  kern_cuda_sgd_kernel<<<kern_cuda_blocks (len), KERN_CUDA_BLOCK, 0,
                         kern_cuda_priv (be)->stream>>> (p, g, len, lr);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_sgd_kernel");
}

/* p, v, g (len): v = mu v + g; p -= lr v. */
__global__ static void
kern_cuda_momentum_kernel (float *p, float *v, const float *g, gsize len,
                           float lr, float mu)
{
  for (gsize i = blockIdx.x * (gsize) blockDim.x + threadIdx.x; i < len;
       i += (gsize) gridDim.x * blockDim.x)
    {
      float vi = __fadd_rn (__fmul_rn (mu, v[i]), g[i]);
      v[i] = vi;
      p[i] = __fsub_rn (p[i], __fmul_rn (lr, vi));
    }
}

static void
kern_cuda_momentum (KernBackend *be, float *p, float *v, const float *g,
                    gsize len, float lr, float mu)
{
  if (len == 0)
    return;
  kern_cuda_momentum_kernel<<<kern_cuda_blocks (len), KERN_CUDA_BLOCK, 0,
                              kern_cuda_priv (be)->stream>>> (p, v, g, len, lr,
                                                              mu);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_momentum_kernel");
}

/* p, m, v, g (len): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr (m / c1) / (sqrt(v / c2) + eps).  c1, c2 and the (1 - beta)
 * factors come from the host; sqrtf and division are IEEE-rounded under
 * nvcc's defaults (-prec-sqrt=true, -prec-div=true). */
__global__ static void
kern_cuda_adam_kernel (float *p, float *m, float *v, const float *g,
                       gsize len, float lr, float b1, float one_minus_b1,
                       float b2, float one_minus_b2, float eps, float c1,
                       float c2)
{
  for (gsize i = blockIdx.x * (gsize) blockDim.x + threadIdx.x; i < len;
       i += (gsize) gridDim.x * blockDim.x)
    {
      float gi = g[i];
      float mi = __fadd_rn (__fmul_rn (b1, m[i]), __fmul_rn (one_minus_b1, gi));
      float vi = __fadd_rn (__fmul_rn (b2, v[i]),
                            __fmul_rn (one_minus_b2, __fmul_rn (gi, gi)));
      m[i] = mi;
      v[i] = vi;
      float step = __fmul_rn (lr, mi / c1) / __fadd_rn (sqrtf (vi / c2), eps);
      p[i] = __fsub_rn (p[i], step);
    }
}

/* Bias corrections c = 1 - beta^t are computed in double, then rounded. */
static void
kern_cuda_adam (KernBackend *be, float *p, float *m, float *v, const float *g,
                gsize len, float lr, float beta1, float beta2, float eps,
                gint64 t)
{
  g_return_if_fail (t >= 1);
  if (len == 0)
    return;
  float c1 = (float) (1.0 - pow ((double) beta1, (double) t));
  float c2 = (float) (1.0 - pow ((double) beta2, (double) t));
  kern_cuda_adam_kernel<<<kern_cuda_blocks (len), KERN_CUDA_BLOCK, 0,
                          kern_cuda_priv (be)->stream>>> (
      p, m, v, g, len, lr, beta1, 1.0f - beta1, beta2, 1.0f - beta2, eps, c1,
      c2);
  KERN_CUDA_CHECK_LAUNCH ("kern_cuda_adam_kernel");
}

/* --- life cycle ----------------------------------------------------------- */

/* Releases the cuBLAS handle, the stream and the KernBackend itself (the
 * table's `destroy`, reached through kern_backend_free). */
static void
kern_cuda_destroy (KernBackend *be)
{
  if (be == NULL)
    return;
  KernCudaPriv *p = kern_cuda_priv (be);
  if (p != NULL)
    {
      if (p->blas != NULL)
        KERN_CUBLAS_CHECK (cublasDestroy (p->blas));
      if (p->stream != NULL)
        KERN_CUDA_CHECK (cudaStreamDestroy (p->stream));
      g_free (p);
    }
  g_free (be);
}

/* Positional: C++ (nvcc's default dialect) has no C99 designated
 * initializers, so each entry carries its field name. */
static const KernBackendOps kern_cuda_ops = {
  /* name */ "cuda",
  /* alloc */ kern_cuda_alloc,
  /* alloc_int */ kern_cuda_alloc_int,
  /* free */ kern_cuda_free,
  /* upload */ kern_cuda_upload,
  /* upload_int */ kern_cuda_upload_int,
  /* download */ kern_cuda_download,
  /* download_int */ kern_cuda_download_int,
  /* gemm */ kern_cuda_gemm,
  /* fill_rows */ kern_cuda_fill_rows,
  /* col_sum */ kern_cuda_col_sum,
  /* relu */ kern_cuda_relu,
  /* relu_backward */ kern_cuda_relu_backward,
  /* softmax_xent */ kern_cuda_softmax_xent,
  /* mse */ kern_cuda_mse,
  /* sgd */ kern_cuda_sgd,
  /* momentum */ kern_cuda_momentum,
  /* adam */ kern_cuda_adam,
  /* destroy */ kern_cuda_destroy,
};

#define KERN_CUDA_TRY(call)                                                    \
  G_STMT_START                                                                 \
  {                                                                            \
    if (!kern_cuda_ok ((call), #call, __FILE__, __LINE__, error))              \
      goto fail;                                                               \
  }                                                                            \
  G_STMT_END
#define KERN_CUBLAS_TRY(call)                                                  \
  G_STMT_START                                                                 \
  {                                                                            \
    if (!kern_cublas_ok ((call), #call, __FILE__, __LINE__, error))            \
      goto fail;                                                               \
  }                                                                            \
  G_STMT_END

/* The CUDA backend on device 0: a stream and a cuBLAS handle bound to it.
 * Returns NULL with `error` set (domain "kern-cuda-error") when no device is
 * visible or any CUDA or cuBLAS call fails; never aborts.  Free with
 * kern_backend_free. */
extern "C" KernBackend *
kern_cuda_plugin_backend_new (GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (kern_cuda_plugin_device_count () == 0)
    {
      g_set_error (error, kern_cuda_error_quark (), KERN_CUDA_ERROR_NO_DEVICE,
                   "no CUDA device is visible (nvidia-smi shows none, or "
                   "CUDA_VISIBLE_DEVICES hides them, or the driver is "
                   "missing): the CUDA backend needs a GPU");
      return NULL;
    }

  KernBackend *be = g_new0 (KernBackend, 1);
  KernCudaPriv *p = g_new0 (KernCudaPriv, 1);
  be->ops = &kern_cuda_ops;
  be->priv = p;
  p->device = 0;

  KERN_CUDA_TRY (cudaSetDevice (p->device));
  KERN_CUDA_TRY (cudaStreamCreateWithFlags (&p->stream, cudaStreamNonBlocking));
  KERN_CUBLAS_TRY (cublasCreate (&p->blas));
  KERN_CUBLAS_TRY (cublasSetStream (p->blas, p->stream));
  /* Full FP32 products: TF32 would round inputs to 10-bit mantissas and
   * break the comparison with the CPU reference. */
  KERN_CUBLAS_TRY (cublasSetMathMode (p->blas, CUBLAS_DEFAULT_MATH));
  return be;

fail:
  if (p->blas != NULL)
    cublasDestroy (p->blas);
  if (p->stream != NULL)
    cudaStreamDestroy (p->stream);
  g_free (p);
  g_free (be);
  return NULL;
}

/* --- the plugin's entry point --------------------------------------------- */

static const KernCudaPlugin kern_cuda_plugin = {
  /* abi */ KERN_CUDA_PLUGIN_ABI,
  /* ops_size */ (guint32) sizeof (KernBackendOps),
  /* device_count */ kern_cuda_plugin_device_count,
  /* backend_new */ kern_cuda_plugin_backend_new,
};

/* The one exported symbol (KERN_CUDA_PLUGIN_ENTRY), looked up by cuda.c. */
extern "C" G_MODULE_EXPORT const KernCudaPlugin *
kern_cuda_plugin_entry (void)
{
  return &kern_cuda_plugin;
}
