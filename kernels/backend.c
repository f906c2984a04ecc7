/*
 * backend.c — choosing a kernel backend by name, and releasing one.
 *
 * The backends themselves live in cpu.c (always built) and in
 * cuda_backend.cu or cuda_none.c (exactly one is linked, as configure
 * decides); this file only maps the names a scenario may give ("cpu",
 * "cuda") to their constructors, so that adding a backend is adding one
 * file and one line here.
 */
#include "kernels/backend.h"

#include <gio/gio.h>
#include <string.h>

/* The backend called `name`: "cpu" (never fails) or "cuda" (fails when the
 * build has no CUDA or no device is usable, with the reason in `error`).
 * Any other name is G_IO_ERROR_INVALID_ARGUMENT naming the valid ones.
 * Free with kern_backend_free(). */
KernBackend *
kern_backend_new (const char *name, GError **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (strcmp (name, "cpu") == 0)
    return kern_backend_cpu_new ();
  if (strcmp (name, "cuda") == 0)
    return kern_backend_cuda_new (error);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "unknown kernel backend '%s': expected 'cpu' or 'cuda'", name);
  return NULL;
}

/* Releases a backend and everything it holds (but not buffers still
 * allocated from it: free those first).  NULL is allowed. */
void
kern_backend_free (KernBackend *be)
{
  if (be == NULL)
    return;
  be->ops->destroy (be);
}
