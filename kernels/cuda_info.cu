/*
 * cuda_info.cu — the CUDA queries, in the CUDA plugin (cuda_plugin.h).
 *
 * Compiled by nvcc when configure finds CUDA.  The process may still run on
 * a machine with no GPU or no driver; every query then reports "nothing
 * usable" instead of failing.  See cuda_backend.cu for nvcc and GLib.
 */
#pragma nv_diag_suppress 1217

#include "kernels/cuda_plugin.h"

#include <cuda_runtime.h>

/* Devices reported by cudaGetDeviceCount, or 0 on any error (no driver, no
 * device, insufficient driver).  The error is cleared so that it does not
 * surface from a later, unrelated CUDA call. */
extern "C" int
kern_cuda_plugin_device_count (void)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);
  if (err != cudaSuccess)
    {
      (void) cudaGetLastError ();
      return 0;
    }
  return count > 0 ? count : 0;
}
