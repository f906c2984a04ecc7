/*
 * cuda_none.c — the CUDA entry points for a build without CUDA.
 *
 * Linked instead of cuda_info.cu and cuda_backend.cu when configure did not
 * find nvcc, so that callers (and tests that skip GPU cases) need no #ifdef:
 * there are no devices, and asking for the CUDA backend is a recoverable
 * error that says how to get one.
 */
#include "kernels/cuda.h"
#include "kernels/backend.h"

#include <gio/gio.h>

/* No CUDA in this build: no devices. */
int
kern_cuda_device_count (void)
{
  return 0;
}

/* No CUDA in this build: always NULL, with G_IO_ERROR_NOT_SUPPORTED. */
KernBackend *
kern_backend_cuda_new (GError **error)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
               "this dtsim was built without CUDA; reconfigure with "
               "--with-cuda on a machine with the CUDA toolkit");
  return NULL;
}
