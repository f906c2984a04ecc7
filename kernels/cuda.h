/*
 * cuda.h — what the rest of dtsim may ask of CUDA, callable from C and CUDA.
 *
 * Two implementations exist and exactly one is linked: cuda_info.cu (built
 * by nvcc when configure finds CUDA) and cuda_none.c (built otherwise).
 * Declarations are wrapped in extern "C" so that .cu files, compiled as
 * C++, see the same unmangled names as C callers.
 */
#ifndef DTSIM_KERNELS_CUDA_H
#define DTSIM_KERNELS_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices usable by this process: 0 when the build has no
 * CUDA, when no device or driver is present, or on any CUDA error.  Never
 * negative, never aborts. */
int kern_cuda_device_count (void);

#ifdef __cplusplus
}
#endif

#endif /* DTSIM_KERNELS_CUDA_H */
