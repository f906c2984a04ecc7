/*
 * backend.c — choosing a kernel backend by name, and releasing one.
 *
 * The backends themselves live in cpu.c (always built) and in the CUDA
 * plugin, which cuda.c loads only when "cuda" is asked for (and which
 * exists only when configure found CUDA); this file is their registry: the names a scenario may give
 * ("cpu", "cuda", and "none" for no math) with their constructors, so that
 * adding a backend is adding one file and one line here.
 */
#include "kernels/backend.h"

#include "base/keys.h"

#include <gio/gio.h>
#include <string.h>

static KernBackend *
cpu_new (gboolean reproducible, GError **error G_GNUC_UNUSED)
{
  return kern_backend_cpu_new_full (reproducible);
}

/* Never asked to be reproducible: its entry says it cannot be (cuBLAS
 * picks its algorithms by GPU and may split a sum over threads in any
 * order). */
static KernBackend *
cuda_new (gboolean reproducible G_GNUC_UNUSED, GError **error)
{
  return kern_backend_cuda_new (error);
}

static const KernBackendEntry cpu = {
  "cpu", "real math on the CPU (the reference): fixed-order products, or OpenBLAS with reproducible = false",
  cpu_new, TRUE };
static const KernBackendEntry cuda = {
  "cuda", "real math on cuBLAS and CUDA kernels (needs a GPU and a CUDA build)", cuda_new,
  FALSE };
static const KernBackendEntry none = { "none", "timing only, no math (no loss)", NULL, TRUE };

static const KernBackendEntry *const backends[] = { &cpu, &cuda, &none, NULL };

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
  if (name == NULL)
    return g_strdup (none.name);
  if (strcmp (name, "cpu") != 0)
    return g_strdup (name);
  return reproducible ? g_strdup ("fixed-order") : kern_openblas_describe ();
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
