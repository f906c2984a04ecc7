/*
 * cuda_plugin.h — the interface between dtsim and its CUDA plugin.
 *
 * The CUDA backend (cuda_backend.cu, cuda_info.cu) is not linked into dtsim:
 * it is built as a shared object, dtsim-cuda.so, that links the CUDA runtime
 * and cuBLAS, and cuda.c opens it the first time CUDA is asked for (the
 * CUDA backend, or the device count).  A run on the CPU backend or a
 * timing-only run never maps the CUDA libraries.
 *
 * The plugin exports one symbol, KERN_CUDA_PLUGIN_ENTRY, a function that
 * returns the table below; everything else in it has hidden visibility.
 * The table carries the ABI version and the size of KernBackendOps so that
 * a plugin built from another dtsim is refused instead of called.
 */
#ifndef DTSIM_KERNELS_CUDA_PLUGIN_H
#define DTSIM_KERNELS_CUDA_PLUGIN_H

#include "kernels/backend.h"

G_BEGIN_DECLS

/* The file name of the plugin, beside dtsim or in $(pkglibdir). */
#define KERN_CUDA_PLUGIN_NAME "dtsim-cuda.so"
/* The environment variable that names the plugin file, overriding the
 * search. */
#define KERN_CUDA_PLUGIN_ENV "DTSIM_CUDA_PLUGIN"
/* The exported entry point (a KernCudaPluginEntry). */
#define KERN_CUDA_PLUGIN_ENTRY "kern_cuda_plugin_entry"
/* Raised whenever this table or KernBackendOps changes meaning. */
#define KERN_CUDA_PLUGIN_ABI 1

typedef struct {
  guint32 abi;      /* KERN_CUDA_PLUGIN_ABI the plugin was built with */
  guint32 ops_size; /* sizeof (KernBackendOps) in the plugin */
  /* Devices the CUDA runtime reports, 0 on any error (kern_cuda_device_count). */
  int (*device_count) (void);
  /* The CUDA backend on device 0, or NULL with `error` set
   * (kern_backend_cuda_new). */
  KernBackend *(*backend_new) (GError **error);
} KernCudaPlugin;

typedef const KernCudaPlugin *(*KernCudaPluginEntry) (void);

/* Inside the plugin only (hidden): the implementations the table points to. */
int kern_cuda_plugin_device_count (void);
KernBackend *kern_cuda_plugin_backend_new (GError **error);

G_END_DECLS

#endif /* DTSIM_KERNELS_CUDA_PLUGIN_H */
