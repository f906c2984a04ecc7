/*
 * cuda_none.c — the CUDA queries for a build without CUDA.
 *
 * Linked instead of cuda_info.cu when configure did not find nvcc, so that
 * callers (and tests that skip GPU cases) need no #ifdef.
 */
#include "kernels/cuda.h"

/* No CUDA in this build: no devices. */
int
kern_cuda_device_count (void)
{
  return 0;
}
