/*
 * cuda.h — what the rest of dtsim may ask of CUDA, callable from C and CUDA.
 *
 * Implemented in cuda.c, which loads the CUDA plugin (cuda_plugin.h) on the
 * first call, so that the CUDA runtime is mapped only by a process that
 * asks for CUDA.  Declarations are wrapped in extern "C" so that .cu files,
 * compiled as C++, see the same unmangled names as C callers.
 */
#ifndef DTSIM_KERNELS_CUDA_H
#define DTSIM_KERNELS_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of CUDA devices usable by this process: 0 when the build has no
 * CUDA, when the CUDA plugin or the runtime cannot be loaded, when no device
 * or driver is present, or on any CUDA error.  Never negative, never aborts.
 * Loads the plugin (and with it the CUDA runtime) on the first call. */
int kern_cuda_device_count (void);

#ifdef __cplusplus
}
#endif

#endif /* DTSIM_KERNELS_CUDA_H */
