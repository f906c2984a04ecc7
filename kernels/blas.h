/*
 * blas.h — OpenBLAS, opened the first time a product is asked of it.
 *
 * dtsim does not link OpenBLAS.  Loading it costs a run about two
 * milliseconds of dynamic linking (it brings libgfortran and libquadmath)
 * and starts its thread pool, whose threads spin on sched_yield for a while
 * on a machine's other cores; a timing-only run, or a real-math run on the
 * fixed-order products (the default), calls none of it.  So the functions
 * dtsim calls are reached through the table below, filled by dlopen and
 * dlsym the first time one is needed: by the CPU backend with
 * [kernels] reproducible = false, by `dtsim --version` and by `dtsim check`
 * naming the OpenBLAS that would do the math (docs/kernels.md).
 *
 * The library opened is, in this order:
 *   1. the file (or library name) $DTSIM_BLAS_LIBRARY names, when set;
 *   2. DTSIM_BLAS_SONAME, the shared library configure found that
 *      BLAS_LIBS links (libopenblas.so.0 on Debian), from the usual
 *      library path.
 */
#ifndef DTSIM_KERNELS_BLAS_H
#define DTSIM_KERNELS_BLAS_H

#include <glib.h>
#include <cblas.h>

G_BEGIN_DECLS

/* The environment variable that names the BLAS library to open. */
#define KERN_BLAS_LIBRARY_ENV "DTSIM_BLAS_LIBRARY"

typedef struct {
  /* cblas_sgemm, with the prototype of the cblas.h dtsim was built with */
  __typeof__ (cblas_sgemm) *sgemm;
  /* OpenBLAS's own entry points, NULL where the library has none (a CBLAS
   * other than OpenBLAS) */
  void (*set_num_threads) (int n);
  char *(*get_config) (void);
  char *(*get_corename) (void);
  const char *path; /* the library opened, as it was asked for */
} KernBlas;

/* The BLAS table, the library opened on the first call (from any thread)
 * and kept for the life of the process.  NULL with G_IO_ERROR_NOT_FOUND in
 * `error` when the library cannot be opened or lacks cblas_sgemm; the
 * message is one line naming the library and the fix.  Every later call
 * gives the same answer. */
const KernBlas *kern_blas_get (GError **error);

/* TRUE once kern_blas_get has opened the library (for tests and for the
 * start-up measurements of docs/kernels.md). */
gboolean kern_blas_loaded (void);

/* The threads OpenBLAS may use for one product: applied at once when the
 * library is open, else when it is opened (never opens it).  n >= 1. */
void kern_blas_set_threads (int n);

G_END_DECLS

#endif /* DTSIM_KERNELS_BLAS_H */
