/*
 * backend.c — choosing a kernel backend by name, and releasing one.
 *
 * The backends themselves live in cpu.c (always built) and in the CUDA
 * plugin, which cuda.c loads only when CUDA is asked for (and which exists
 * only when configure found CUDA); each file defines its entry (name,
 * constructor, kernel name) and this file is their registry, with the
 * entry that runs no math, so that adding a backend is adding one file and
 * one line here.
 */
#include "kernels/backend.h"

#include "base/keys.h"

#include <gio/gio.h>
#include <string.h>

static const KernBackendEntry none = {
  .name = "none", .description = "timing only, no math (no loss)", .can_reproduce = TRUE,
};

static const KernBackendEntry *const backends[] = {
  &kern_backend_cpu,
  &kern_backend_cuda,
  &none,
  NULL,
};

const void *const *
kern_backend_entries (void)
{
  return (const void *const *) backends;
}

const KernBackendEntry *
kern_backend_lookup (const char *name)
{
  return base_registry_find ((const void *const *) backends, name);
}

/* The backend called `name`: "cpu" (never fails) or "cuda" (fails when the
 * build has no CUDA, the CUDA plugin cannot be loaded or no device is
 * usable, with the reason in `error`).
 * Any other name is G_IO_ERROR_INVALID_ARGUMENT naming the valid ones.
 * Free with kern_backend_free(). */
KernBackend *
kern_backend_new (const char *name, gboolean reproducible, GError **error)
{
  g_return_val_if_fail (name != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  const KernBackendEntry *e = kern_backend_lookup (name);
  if (e && e->create && reproducible && !e->can_reproduce)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "the %s backend's sums depend on the device; set [kernels] reproducible = false",
                   name);
      return NULL;
    }
  if (e && e->create)
    return e->create (reproducible, error);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "unknown kernel backend '%s': expected 'cpu' or 'cuda'", name);
  return NULL;
}

char *
kern_backend_kernel_name (const char *name, gboolean reproducible)
{
  const KernBackendEntry *e = name ? kern_backend_lookup (name) : &none;
  g_return_val_if_fail (e != NULL, g_strdup (name));
  return e->kernel_name ? e->kernel_name (reproducible) : g_strdup (e->name);
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
