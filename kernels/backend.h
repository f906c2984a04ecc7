/*
 * backend.h — the primitive operations every model is written against.
 *
 * Two implementations share this table: the CPU backend (cpu.c, CBLAS and
 * plain loops: the reference) and the CUDA backend (cuda_backend.cu, cuBLAS
 * plus small kernels, in a plugin loaded on first use: cuda_plugin.h).  Buffers are the backend's own memory: host memory
 * for the CPU, device memory for CUDA; `upload` and `download` move data
 * between the host and a buffer.  Matrices are row-major, (rows, cols).
 *
 * Every operation has the same meaning on both backends, written here as
 * the formula; tests/test-cuda.c compares them element by element.  The
 * operations on one backend run in issue order (CUDA: one stream); a
 * `download` waits for everything issued before it.
 */
#ifndef DTSIM_KERNELS_BACKEND_H
#define DTSIM_KERNELS_BACKEND_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct KernBackend KernBackend;

typedef struct {
  const char *name; /* "cpu" or "cuda" */

  /* Buffers of n floats / n ints (n = 0 gives a valid, unusable pointer or
   * NULL); contents undefined until written. */
  float *(*alloc) (KernBackend *be, gsize n);
  int *(*alloc_int) (KernBackend *be, gsize n);
  void (*free) (KernBackend *be, void *buf);
  void (*upload) (KernBackend *be, float *dst, const float *host, gsize n);
  void (*upload_int) (KernBackend *be, int *dst, const int *host, gsize n);
  void (*download) (KernBackend *be, float *host, const float *src, gsize n);
  void (*download_int) (KernBackend *be, int *host, const int *src, gsize n);

  /* C (m, n) = alpha op(A) op(B) + beta C, op(X) = X or X^T; A is (m, k)
   * after op, B is (k, n) after op; lda, ldb, ldc are row strides. */
  void (*gemm) (KernBackend *be, gboolean trans_a, gboolean trans_b, int m,
                int n, int k, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);
  /* Z[i][j] = bias[j] for i < n, j < k (the GEMM then adds onto it). */
  void (*fill_rows) (KernBackend *be, float *Z, const float *bias, int n, int k);
  /* out[j] = sum_i dZ[i][j] for j < k (bias gradient). */
  void (*col_sum) (KernBackend *be, const float *dZ, int n, int k, float *out);
  /* A[i] = max(A[i], 0) for i < len. */
  void (*relu) (KernBackend *be, float *A, gsize len);
  /* dA[i] = A[i] > 0 ? dA[i] : 0, where A is the ReLU output. */
  void (*relu_backward) (KernBackend *be, float *dA, const float *A, gsize len);
  /* Softmax cross-entropy on logits Z (n, k) with labels y (n):
   * loss[i] = log sum_j exp(Z_ij - max_i) - (Z_iy - max_i) (double
   * accumulation in the row), pred[i] = first argmax of row i; if `scale`
   * is not 0, Z is replaced by scale (softmax(Z_i) - onehot(y_i)), the
   * gradient of scale x sum of losses; otherwise Z is left as is. */
  void (*softmax_xent) (KernBackend *be, float *Z, const int *y, int n, int k,
                        float scale, float *loss, int *pred);
  /* Squared error against one-hot targets: loss[i] = 1/2 sum_j (Z_ij -
   * onehot(y_i)_j)^2 (differences and squares in float, double
   * accumulation in the row), pred[i] = first argmax; if scale is not 0, Z
   * is replaced by scale (Z_i - onehot(y_i)). */
  void (*mse) (KernBackend *be, float *Z, const int *y, int n, int k,
               float scale, float *loss, int *pred);
  /* Optimizer steps on len parameters (kernels.h, KernOptConfig, gives the
   * formulas): p -= lr g; momentum: v = mu v + g, p -= lr v; Adam with
   * bias correction at step t >= 1 (c1 = 1 - beta1^t, c2 = 1 - beta2^t):
   * m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
   * p -= lr (m / c1) / (sqrt(v / c2) + eps). */
  void (*sgd) (KernBackend *be, float *p, const float *g, gsize len, float lr);
  void (*momentum) (KernBackend *be, float *p, float *v, const float *g,
                    gsize len, float lr, float mu);
  void (*adam) (KernBackend *be, float *p, float *m, float *v, const float *g,
                gsize len, float lr, float beta1, float beta2, float eps,
                gint64 t);
  void (*destroy) (KernBackend *be);
} KernBackendOps;

struct KernBackend {
  const KernBackendOps *ops;
  gpointer priv;
};

/* The CPU backend (never fails), its matrix products in the fixed order
 * of kern_gemm_fixed: the same bits on every CPU. */
KernBackend *kern_backend_cpu_new (void);
/* The CPU backend, reproducible as above or (FALSE) on OpenBLAS's sgemm. */
KernBackend *kern_backend_cpu_new_full (gboolean reproducible);
/* "OpenBLAS <version> <core>" for the OpenBLAS this process uses, the
 * core being the kernel family it chose for this CPU (OPENBLAS_CORETYPE
 * overrides the choice); a new string (cpu.c). */
char *kern_openblas_describe (void);
/* What does the math of backend `name` (reproducible or not), as --version
 * and the trace's runs.kernel record it: "fixed-order" for the
 * reproducible CPU backend, kern_openblas_describe() for the other, the
 * backend's name otherwise; for a NULL name (no math ran) the name of the
 * backend that runs none (a new string). */
char *kern_backend_kernel_name (const char *name, gboolean reproducible);
/* The CUDA backend on device 0, or NULL with a message in `error` when the
 * build has no CUDA, the CUDA plugin or runtime cannot be loaded, or no
 * device is usable.  Loads the plugin on the first call (cuda.c). */
KernBackend *kern_backend_cuda_new (GError **error);
/* "cpu" or "cuda"; NULL with an error otherwise or when unavailable.
 * `reproducible` as KernBackendEntry's create; asked of a backend that
 * cannot be, G_IO_ERROR_NOT_SUPPORTED. */
KernBackend *kern_backend_new (const char *name, gboolean reproducible, GError **error);

/* A backend a scenario may name ([kernels] backend). */
typedef struct {
  const char *name;
  const char *description;
  /* The backend, or NULL with `error` set; NULL for the backend none, which runs no
   * math (timing only).  `reproducible`: the products must give the same
   * bits on every CPU ([kernels] reproducible); only asked of a backend
   * that can_reproduce. */
  KernBackend *(*create) (gboolean reproducible, GError **error);
  /* Whether the backend can give the same bits on every machine: it then
   * does unless told not to ([kernels] reproducible = auto), and
   * reproducible = true is refused for one that cannot. */
  gboolean can_reproduce;
  /* What does its math, for runs.kernel and `dtsim --version`, as a new
   * string (NULL: the entry's name). */
  char *(*kernel_name) (gboolean reproducible);
} KernBackendEntry;

/* The entries, each in its backend's own file (backend.c lists them). */
extern const KernBackendEntry kern_backend_cpu;   /* cpu.c */
extern const KernBackendEntry kern_backend_cuda;  /* cuda.c */

/* The entry of that name, or NULL. */
const KernBackendEntry *kern_backend_lookup (const char *name);
/* The backend table (KernBackendEntry *), NULL-terminated. */
const void *const *kern_backend_entries (void);
void kern_backend_free (KernBackend *be);

G_END_DECLS

#endif /* DTSIM_KERNELS_BACKEND_H */
